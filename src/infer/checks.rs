//! A request's inputs against its route's rules: each tensor's head as soon
//! as it is known (before its data is read), and the set of names once the
//! request is whole. Every frontend checks through here, so a route's rules
//! hold whichever protocol reached it.

use super::InferError;
use crate::codec::grpc::budget::Caps;
use crate::codec::v2::DocLimits;
use crate::codec::v2::{DocParser, Document};
use crate::config::Route;
use crate::rules::Side;

fn refused(route: &Route) -> impl Fn(crate::rules::Violation) -> InferError + '_ {
    move |violation| InferError::Rule {
        route: route.name.clone(),
        violation,
    }
}

/// Checks the tensor heads (name, datatype, shape) `parser` has made known
/// since the last call against the input rules.
pub(crate) fn check_heads(route: &Route, parser: &mut DocParser) -> Result<(), InferError> {
    parser
        .check_heads(|name, datatype, shape| route.rules.check(Side::Input, name, datatype, shape))
        .map_err(refused(route))
}

/// Checks a whole request header: every input's head, then the rules that
/// need the whole list (required inputs, duplicates).
pub(crate) fn check_request(route: &Route, header: &Document) -> Result<(), InferError> {
    for t in &header.tensors {
        route
            .rules
            .check(Side::Input, &t.name, t.datatype, &t.shape)
            .map_err(refused(route))?;
    }
    route
        .rules
        .check_names(Side::Input, header.tensors.iter().map(|t| t.name.as_str()))
        .map_err(refused(route))
}

/// JSON values outside tensor `data` a request may carry (with the byte
/// budget of `max_json_header_bytes`): about 5 MiB of parsed values at most.
const MAX_MEMBER_VALUES: u64 = 65_536;

/// Limits on a client's request document, from the route's limits: the JSON
/// outside tensor `data` is bounded like a binary request's header.
pub(crate) fn doc_limits(route: &Route) -> DocLimits {
    let l = &route.limits;
    DocLimits::new(l.max_elements_per_tensor, l.max_dims)
        .with_member_budget(l.max_json_header_bytes, MAX_MEMBER_VALUES)
}

/// The same limits for a protobuf message (a gRPC client's request, a
/// gRPC backend's reply), checked on its wire form before it is decoded:
/// what lies outside tensor data is bounded like a JSON header.
pub(crate) fn grpc_caps(route: &Route) -> Caps {
    let l = &route.limits;
    Caps {
        max_values: MAX_MEMBER_VALUES,
        max_header_bytes: l.max_json_header_bytes,
        max_elements: l.max_elements_per_tensor,
        max_dims: l.max_dims as u64,
    }
}
