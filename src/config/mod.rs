//! Configuration: TOML in, a validated [`Config`] out.
//!
//! Loading is staged: the TOML is parsed into a table, then walked key by
//! key, collecting *every* problem with its key path before failing; what
//! comes out is trusted by the rest of the program. Every key is documented
//! in `config/tensorgate.example.toml`.

mod duration;
mod load;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

pub use load::{ConfigError, ConfigErrors, from_str, load_file};

use crate::codec::v2::path::Control;
use crate::rules::RouteRules;

/// The whole, validated configuration.
#[derive(Clone, Debug)]
pub struct Config {
    pub server: ServerConfig,
    pub backends: BTreeMap<String, Arc<Backend>>,
    /// Routes in file order; the first one listing a model wins.
    pub routes: Vec<Arc<Route>>,
}

impl Config {
    /// The route serving `model`: the first route that lists it, else the
    /// default route.
    pub fn route_for_model(&self, model: &str) -> Option<&Arc<Route>> {
        self.routes
            .iter()
            .find(|r| r.models.iter().any(|m| m == model))
            .or_else(|| self.default_route())
    }

    /// The route for requests that name no model (`/v2`, health, repository).
    pub fn default_route(&self) -> Option<&Arc<Route>> {
        self.routes.iter().find(|r| r.default)
    }

    /// One default route with the binary backend format to `url`: what
    /// `tensorgate --backend URL` runs without a configuration file.
    pub fn single_backend(
        url: &str,
        listen: SocketAddr,
        admin: SocketAddr,
    ) -> Result<Config, ConfigErrors> {
        let text = format!(
            "[server]\nlisten = \"{listen}\"\nadmin_listen = \"{admin}\"\n\
             [backends.default]\nurl = {url:?}\n\
             [[routes]]\nname = \"default\"\ndefault = true\nbackend = \"default\"\n"
        );
        from_str(&text)
    }
}

impl Config {
    /// The configuration `tensorgate` runs with no arguments: the gateway in
    /// front of the embedded demo backend at `backend`, with rules on the
    /// demo's `simple` model.
    pub fn demo(
        backend: SocketAddr,
        listen: SocketAddr,
        admin: SocketAddr,
    ) -> Result<Config, ConfigErrors> {
        let text = format!(
            r#"
[server]
listen = "{listen}"
admin_listen = "{admin}"
shutdown_grace = "5s"

[backends.demo]
url = "http://{backend}"

[[routes]]
name = "simple"
models = ["simple"]
backend = "demo"
[routes.inputs.INPUT0]
shape = [-1, 16]
allowed_types = ["INT32"]
[routes.inputs.INPUT1]
shape = [-1, 16]
allowed_types = ["INT32"]

[[routes]]
name = "default"
default = true
backend = "demo"
"#
        );
        from_str(&text)
    }
}

/// `[server]`: listeners and process behaviour.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServerConfig {
    /// Data port: the V2 API.
    pub listen: SocketAddr,
    /// Admin port: `/healthz`, `/readyz`, `/metrics`.
    pub admin_listen: SocketAddr,
    /// After SIGTERM / SIGINT, how long in-flight requests may finish.
    pub shutdown_grace: Duration,
    /// Requests served at once; more wait (tower concurrency limit).
    pub max_concurrent_requests: usize,
    /// Longest pause between two pieces of a client's request body.
    pub body_read_timeout: Duration,
    /// Longest time a client may take to send its request headers.
    pub header_read_timeout: Duration,
}

/// Size and shape limits, per route (with defaults from `[limits]`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Largest request body, after decompression. Without it a client can
    /// make the gateway buffer without bound. Exceeding it is a 413.
    pub max_body_bytes: u64,
    /// Largest JSON header of a binary-extension body (request or
    /// response). Exceeding it is a 413.
    pub max_json_header_bytes: u64,
    /// Most elements in one tensor. Bounds the memory one JSON tensor can
    /// claim before its data is seen. Exceeding it is a 400.
    pub max_elements_per_tensor: u64,
    /// Most dimensions in one shape. Exceeding it is a 400.
    pub max_dims: usize,
    /// Largest backend response the gateway will buffer when a reply must be
    /// assembled whole (mixed JSON/binary replies); streamed replies are not
    /// bounded by it. Exceeding it is a 502.
    pub max_response_bytes: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_body_bytes: 64 << 20,
            max_json_header_bytes: 1 << 20,
            max_elements_per_tensor: 16 << 20,
            max_dims: 8,
            max_response_bytes: 256 << 20,
        }
    }
}

/// `[backends.NAME]`: an upstream V2 server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Backend {
    pub name: String,
    /// `http://host:port` with an optional path prefix.
    pub url: http::Uri,
    pub connect_timeout: Duration,
    /// Time until the backend's response headers (and, for translated
    /// replies, the JSON header) have arrived.
    pub request_timeout: Duration,
    pub pool_idle_timeout: Duration,
    pub pool_max_idle_per_host: usize,
}

/// How the gateway talks to a route's backend.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WireFormat {
    /// The binary tensor data extension (Triton, KServe with binary support).
    Binary,
    /// Plain JSON `data` (servers without the extension).
    Json,
}

/// `[[routes]]`: which models go where, in what format, under which rules.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Route {
    pub name: String,
    pub models: Vec<String>,
    pub default: bool,
    pub backend: Arc<Backend>,
    pub backend_format: WireFormat,
    pub limits: Limits,
    pub rules: RouteRules,
    /// Control-plane endpoints passed through on this route (none by
    /// default: a gateway must not let any client load models or register
    /// shared memory).
    pub allow_control: Vec<Control>,
}

impl Route {
    pub fn allows_control(&self, kind: Control) -> bool {
        self.allow_control.contains(&kind)
    }
}
