//! The attribute keys of the gateway's spans: OpenTelemetry's semantic
//! conventions where one fits (HTTP, server, error), `tensorgate.*` for
//! what only the gateway knows. Spelled once, here.

/// The server span of a request (renamed `METHOD route` when it ends).
pub(crate) const SPAN_REQUEST: &str = "request";
/// One attempt to send a request to a replica.
pub(crate) const SPAN_ATTEMPT: &str = "upstream";
/// A copy of a request sent to the route's shadow backend.
pub(crate) const SPAN_SHADOW: &str = "shadow";
/// Converting a request into the backend's format.
pub(crate) const SPAN_CONVERT_REQUEST: &str = "convert request";
/// Converting a backend's reply into the client's format.
pub(crate) const SPAN_CONVERT_RESPONSE: &str = "convert response";

pub(crate) const HTTP_METHOD: &str = "http.request.method";
pub(crate) const HTTP_STATUS: &str = "http.response.status_code";
pub(crate) const URL_PATH: &str = "url.path";
pub(crate) const URL_FULL: &str = "url.full";
pub(crate) const SERVER_ADDRESS: &str = "server.address";
pub(crate) const ERROR_TYPE: &str = "error.type";
pub(crate) const RETRY_COUNT: &str = "http.request.resend_count";

pub(crate) const ROUTE: &str = "tensorgate.route";
pub(crate) const MODEL: &str = "tensorgate.model";
pub(crate) const FRONTEND: &str = "tensorgate.frontend";
pub(crate) const BACKEND: &str = "tensorgate.backend";
pub(crate) const REPLICA: &str = "tensorgate.replica";
pub(crate) const ATTEMPT: &str = "tensorgate.attempt";
pub(crate) const CLIENT_REQUEST_ID: &str = "tensorgate.client_request_id";
pub(crate) const COMPLETED: &str = "tensorgate.completed";
pub(crate) const KEY: &str = "tensorgate.key";
pub(crate) const SHADOW_OUTCOME: &str = "tensorgate.shadow.outcome";
pub(crate) const CLIENT_BYTES_IN: &str = "tensorgate.client.bytes_in";
pub(crate) const CLIENT_BYTES_OUT: &str = "tensorgate.client.bytes_out";
pub(crate) const BACKEND_BYTES_OUT: &str = "tensorgate.backend.bytes_out";
pub(crate) const BACKEND_BYTES_IN: &str = "tensorgate.backend.bytes_in";
pub(crate) const ELEMENTS_IN: &str = "tensorgate.elements.request";
pub(crate) const ELEMENTS_OUT: &str = "tensorgate.elements.response";
pub(crate) const DIRECTION: &str = "tensorgate.direction";
pub(crate) const ELEMENTS: &str = "tensorgate.elements";
