//! The attribute keys of the gateway's spans: OpenTelemetry's semantic
//! conventions where one fits (HTTP, server, error), `tensorgate.*` for
//! what only the gateway knows. Spelled once, here.

/// The server span of a request (renamed `METHOD route` when it ends).
pub const SPAN_REQUEST: &str = "request";
/// One attempt to send a request to a replica.
pub const SPAN_ATTEMPT: &str = "upstream";
/// A copy of a request sent to the route's shadow backend.
pub const SPAN_SHADOW: &str = "shadow";
/// Converting a request into the backend's format.
pub const SPAN_CONVERT_REQUEST: &str = "convert request";
/// Converting a backend's reply into the client's format.
pub const SPAN_CONVERT_RESPONSE: &str = "convert response";

pub const HTTP_METHOD: &str = "http.request.method";
pub const HTTP_STATUS: &str = "http.response.status_code";
pub const URL_PATH: &str = "url.path";
pub const URL_FULL: &str = "url.full";
pub const SERVER_ADDRESS: &str = "server.address";
pub const ERROR_TYPE: &str = "error.type";
pub const RETRY_COUNT: &str = "http.request.resend_count";

pub const ROUTE: &str = "tensorgate.route";
pub const MODEL: &str = "tensorgate.model";
pub const FRONTEND: &str = "tensorgate.frontend";
pub const BACKEND: &str = "tensorgate.backend";
pub const REPLICA: &str = "tensorgate.replica";
pub const ATTEMPT: &str = "tensorgate.attempt";
pub const REQUEST_ID: &str = "tensorgate.request_id";
pub const CLIENT_REQUEST_ID: &str = "tensorgate.client_request_id";
pub const COMPLETED: &str = "tensorgate.completed";
pub const KEY: &str = "tensorgate.key";
pub const SHADOW_OUTCOME: &str = "tensorgate.shadow.outcome";
pub const CLIENT_BYTES_IN: &str = "tensorgate.client.bytes_in";
pub const CLIENT_BYTES_OUT: &str = "tensorgate.client.bytes_out";
pub const BACKEND_BYTES_OUT: &str = "tensorgate.backend.bytes_out";
pub const BACKEND_BYTES_IN: &str = "tensorgate.backend.bytes_in";
pub const ELEMENTS_IN: &str = "tensorgate.elements.request";
pub const ELEMENTS_OUT: &str = "tensorgate.elements.response";
pub const DIRECTION: &str = "tensorgate.direction";
pub const ELEMENTS: &str = "tensorgate.elements";
