//! HTTP plumbing every floor above shares: the body type the gateway serves
//! and sends ([`body`]), hop-by-hop and credential headers ([`headers`]),
//! content codings over HTTP ([`encoding`]), and reading a client's request
//! body within its limits and deadlines ([`client_body`]; off the
//! connection, [`wire`]), and replies held for clients not taking them yet
//! ([`spool`]). Knows nothing of routes, backends or tensors.

pub mod body;
pub mod client_body;
pub mod encoding;
pub mod headers;
pub mod idle;
pub mod spool;
pub mod wire;
