//! The gRPC frontend: KServe V2's `inference.GRPCInferenceService` as
//! Triton 2.51 serves it, and `grpc.health.v1.Health` for the gateway
//! itself, on the data port beside HTTP (an HTTP/2 request whose
//! `content-type` starts with `application/grpc`).
//!
//! A call's one request message is read under the route's body limit,
//! checked on its length prefix before it is buffered ([`message`]). Calls
//! that name a model in their message (`ModelInfer`, `ModelReady`,
//! `ModelMetadata`, ...) are bound to their route once the message is read,
//! like a Decthings call; server-wide calls go to the default route; health
//! is the gateway's own ([`health`]). `ModelInfer` goes through the core
//! like every frontend's infer ([`infer`]); the other calls become the
//! backend's V2 endpoints and their JSON is translated ([`meta`]). Errors
//! are gRPC statuses from the error's class ([`status`]).

mod health;
mod infer;
mod message;
mod meta;
pub mod status;
mod stream;

use http::request::Parts;
use http::{Method as HttpMethod, Response, header};

pub use message::GrpcError;
use status::code_of;

use bytes::Bytes;

use super::{BodyPlan, Call, Frontend, Named, Payload, Routing, Target};
use crate::codec::grpc::budget;
use crate::codec::grpc::timeout;
use crate::codec::v2::path::{self, Control, V2Path};
use crate::config::{Config, Route};
use crate::error::Error;
use crate::http::body::Body;
use crate::http::client_body::ClientBody;
use crate::infer::route::{self, RouteError};
use crate::metrics::Kind;
use crate::observe::Observation;

/// The service every inference method is under.
pub const INFERENCE: &str = "inference.GRPCInferenceService";
/// The standard health service.
pub const HEALTH: &str = "grpc.health.v1.Health";

/// The time the client gives the call.
pub const GRPC_TIMEOUT: header::HeaderName = header::HeaderName::from_static("grpc-timeout");

/// Largest health-check request read (a service name).
const HEALTH_BODY_BYTES: u64 = 64 << 10;

/// A gRPC method this gateway knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Method {
    ServerLive,
    ServerReady,
    ModelReady,
    ServerMetadata,
    ModelMetadata,
    ModelInfer,
    ModelStreamInfer,
    ModelConfig,
    ModelStatistics,
    RepositoryIndex,
    RepositoryModelLoad,
    RepositoryModelUnload,
    SystemSharedMemoryStatus,
    SystemSharedMemoryRegister,
    SystemSharedMemoryUnregister,
    CudaSharedMemoryStatus,
    CudaSharedMemoryRegister,
    CudaSharedMemoryUnregister,
    TraceSetting,
    LogSettings,
    HealthCheck,
    HealthWatch,
}

impl Method {
    /// The method a request path names (`/package.Service/Method`).
    pub fn parse(path: &str) -> Option<Method> {
        let (service, method) = path.strip_prefix('/')?.split_once('/')?;
        use Method::*;
        if service == HEALTH {
            return match method {
                "Check" => Some(HealthCheck),
                "Watch" => Some(HealthWatch),
                _ => None,
            };
        }
        if service != INFERENCE {
            return None;
        }
        Some(match method {
            "ServerLive" => ServerLive,
            "ServerReady" => ServerReady,
            "ModelReady" => ModelReady,
            "ServerMetadata" => ServerMetadata,
            "ModelMetadata" => ModelMetadata,
            "ModelInfer" => ModelInfer,
            "ModelStreamInfer" => ModelStreamInfer,
            "ModelConfig" => ModelConfig,
            "ModelStatistics" => ModelStatistics,
            "RepositoryIndex" => RepositoryIndex,
            "RepositoryModelLoad" => RepositoryModelLoad,
            "RepositoryModelUnload" => RepositoryModelUnload,
            "SystemSharedMemoryStatus" => SystemSharedMemoryStatus,
            "SystemSharedMemoryRegister" => SystemSharedMemoryRegister,
            "SystemSharedMemoryUnregister" => SystemSharedMemoryUnregister,
            "CudaSharedMemoryStatus" => CudaSharedMemoryStatus,
            "CudaSharedMemoryRegister" => CudaSharedMemoryRegister,
            "CudaSharedMemoryUnregister" => CudaSharedMemoryUnregister,
            "TraceSetting" => TraceSetting,
            "LogSettings" => LogSettings,
            _ => return None,
        })
    }

    /// The method's name on the wire.
    pub fn name(self) -> &'static str {
        use Method::*;
        match self {
            ServerLive => "ServerLive",
            ServerReady => "ServerReady",
            ModelReady => "ModelReady",
            ServerMetadata => "ServerMetadata",
            ModelMetadata => "ModelMetadata",
            ModelInfer => "ModelInfer",
            ModelStreamInfer => "ModelStreamInfer",
            ModelConfig => "ModelConfig",
            ModelStatistics => "ModelStatistics",
            RepositoryIndex => "RepositoryIndex",
            RepositoryModelLoad => "RepositoryModelLoad",
            RepositoryModelUnload => "RepositoryModelUnload",
            SystemSharedMemoryStatus => "SystemSharedMemoryStatus",
            SystemSharedMemoryRegister => "SystemSharedMemoryRegister",
            SystemSharedMemoryUnregister => "SystemSharedMemoryUnregister",
            CudaSharedMemoryStatus => "CudaSharedMemoryStatus",
            CudaSharedMemoryRegister => "CudaSharedMemoryRegister",
            CudaSharedMemoryUnregister => "CudaSharedMemoryUnregister",
            TraceSetting => "TraceSetting",
            LogSettings => "LogSettings",
            HealthCheck => "Check",
            HealthWatch => "Watch",
        }
    }

    /// Whether its request message names the model (so the route is known
    /// once the message is read).
    fn names_model(self) -> bool {
        use Method::*;
        matches!(
            self,
            ModelReady
                | ModelMetadata
                | ModelInfer
                | ModelStreamInfer
                | ModelConfig
                | ModelStatistics
                | RepositoryModelLoad
                | RepositoryModelUnload
        )
    }

    /// The control endpoints it stands for, as its HTTP twin is classified
    /// (so both need the same `allow_control`).
    pub fn control(self) -> Option<Control> {
        use Method::*;
        let twin = match self {
            RepositoryIndex => "/v2/repository/index",
            RepositoryModelLoad => "/v2/repository/models/m/load",
            RepositoryModelUnload => "/v2/repository/models/m/unload",
            SystemSharedMemoryStatus
            | SystemSharedMemoryRegister
            | SystemSharedMemoryUnregister => "/v2/systemsharedmemory/status",
            CudaSharedMemoryStatus | CudaSharedMemoryRegister | CudaSharedMemoryUnregister => {
                "/v2/cudasharedmemory/status"
            }
            TraceSetting => "/v2/trace/setting",
            LogSettings => "/v2/logging",
            _ => return None,
        };
        let segments = path::split_path(twin).ok()?;
        match V2Path::parse(&segments) {
            V2Path::Control { kind, .. } => Some(kind),
            _ => None,
        }
    }
}

/// Whether a request is a gRPC call: its `content-type` is
/// `application/grpc` or one of its variants (`+proto`).
pub fn is_grpc(headers: &http::HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|ct| {
            ct.strip_prefix("application/grpc")
                .is_some_and(|rest| rest.is_empty() || rest.starts_with(['+', ';']))
        })
}

/// One gRPC call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rpc {
    /// `None`: a method this gateway does not know (UNIMPLEMENTED).
    pub method: Option<Method>,
    /// The path as it came, for the error naming an unknown method.
    pub path: String,
}

impl Rpc {
    pub fn new(path: &str) -> Rpc {
        Rpc {
            method: Method::parse(path),
            path: path.to_owned(),
        }
    }

    fn method(&self) -> Result<Method, GrpcError> {
        self.method
            .ok_or_else(|| GrpcError::UnknownMethod(self.path.clone()))
    }
}

/// A call read far enough to name its route: a unary call's one message
/// (with the body it came in, counted under the route once bound), or a
/// stream's first message and the rest of the stream.
#[derive(Debug)]
pub enum Read {
    Message(Bytes, ClientBody),
    Stream(Bytes, stream::Reader),
}

impl Frontend for Rpc {
    type Named = Read;

    fn kind(&self) -> Kind {
        Kind::Grpc
    }

    fn status_in_trailers(&self) -> bool {
        true
    }

    /// Reads the call's (first) message: the model it names (off its top
    /// level only, for an infer: nothing of it is decoded before its
    /// caller is checked), else the default route.
    async fn name<'c>(
        &self,
        config: &'c Config,
        head: &Parts,
        body: Payload,
    ) -> Result<Named<'c, Read>, Error> {
        let method = self.method()?;
        let mut body = body.into_read()?;
        let limits = message::limits(&head.headers, body.limit())?;
        let (first, rest) = match method {
            Method::ModelStreamInfer => {
                let mut reader = stream::Reader::new(body, limits);
                let first = reader.next().await?.ok_or(GrpcError::NoMessage)?;
                (first.clone(), Read::Stream(first, reader))
            }
            _ => {
                let bytes = message::read_one(&mut body, limits).await?;
                (bytes.clone(), Read::Message(bytes, body))
            }
        };
        let model = match method {
            Method::ModelInfer | Method::ModelStreamInfer => {
                let (model, _) = budget::model_of_request(&first).map_err(GrpcError::from)?;
                Some(model.to_owned())
            }
            _ => meta::model_named(method, &first)?,
        };
        let model = model.unwrap_or_default();
        let route = match model.as_str() {
            "" => route::for_path(config, None, &self.path)?,
            name => route::for_model(config, name, |_| true)?,
        };
        let tokens = match method {
            Method::ModelStreamInfer => 0,
            _ => 1,
        };
        Ok(Named {
            route,
            model,
            read: first.len() as u64,
            tokens,
            rest,
        })
    }

    fn route<'c>(&self, config: &'c Config, head: &Parts) -> Result<Routing<'c>, Error> {
        if head.method != HttpMethod::POST || !is_grpc(&head.headers) {
            return Err(GrpcError::NotGrpc.into());
        }
        let method = self.method()?;
        if matches!(method, Method::HealthCheck | Method::HealthWatch) {
            return Ok(Routing::Gateway {
                body_limit: HEALTH_BODY_BYTES,
                watch: method == Method::HealthWatch,
            });
        }
        if method.names_model() {
            return Ok(Routing::Body {
                routes: config.routes.iter().collect(),
            });
        }
        let route = route::for_path(config, None, &self.path)?;
        Ok(Routing::Route {
            route,
            model: String::new(),
        })
    }

    fn allowed(&self, route: &Route) -> Result<(), Error> {
        allowed(self.method, route)
    }

    fn deadline(&self, head: &http::HeaderMap) -> Result<Option<std::time::Duration>, Error> {
        let Some(value) = head.get(GRPC_TIMEOUT) else {
            return Ok(None);
        };
        let after = timeout::parse(value.as_bytes()).map_err(GrpcError::from)?;
        Ok(Some(after))
    }

    fn body(&self, route: &Route) -> BodyPlan {
        BodyPlan::Read {
            limit: route.limits.max_body_bytes,
        }
    }

    async fn serve(&self, call: Call<'_, Read>) -> Result<Response<Body>, Error> {
        let method = self.method()?;
        match method {
            Method::HealthCheck | Method::HealthWatch => health::serve(method, call).await,
            Method::ModelInfer => infer::serve(call).await,
            Method::ModelStreamInfer => stream::serve(call).await,
            _ => meta::serve(method, call).await,
        }
    }

    fn render(&self, e: &Error, obs: &Observation) -> Response<Body> {
        // A gRPC backend's own status passes as it is (its class keeps it).
        let code = code_of(&e.class());
        obs.set_status(code.http());
        status::status_only(code, &e.to_string())
    }
}

/// Refuses a control method on a route that does not allow it.
fn allowed(method: Option<Method>, route: &Route) -> Result<(), Error> {
    match method.and_then(Method::control) {
        Some(kind) if !route.allows_control(kind) => Err(RouteError::ControlDenied {
            route: route.name.clone(),
            kind,
        }
        .into()),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn methods_and_content_types() {
        assert_eq!(
            Method::parse("/inference.GRPCInferenceService/ModelInfer"),
            Some(Method::ModelInfer)
        );
        assert_eq!(
            Method::parse("/grpc.health.v1.Health/Check"),
            Some(Method::HealthCheck)
        );
        assert_eq!(Method::parse("/inference.GRPCInferenceService/Nope"), None);
        assert_eq!(Method::parse("/other.Service/ModelInfer"), None);
        let ct = |v: &'static str| {
            let mut h = http::HeaderMap::new();
            h.insert(header::CONTENT_TYPE, http::HeaderValue::from_static(v));
            is_grpc(&h)
        };
        assert!(ct("application/grpc"));
        assert!(ct("application/grpc+proto"));
        assert!(!ct("application/grpc-web"));
        assert!(!ct("application/json"));
    }

    #[test]
    fn control_methods_need_what_their_http_twins_need() {
        assert_eq!(
            Method::RepositoryModelLoad.control(),
            Some(Control::Repository)
        );
        assert_eq!(
            Method::SystemSharedMemoryRegister.control(),
            Some(Control::SharedMemory)
        );
        assert_eq!(Method::LogSettings.control(), Some(Control::Logging));
        assert_eq!(Method::TraceSetting.control(), Some(Control::Trace));
        assert_eq!(Method::ModelInfer.control(), None);
        assert_eq!(Method::ServerMetadata.control(), None);
    }
}
