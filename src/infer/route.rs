//! Which route serves a request: the one listing its model, else the
//! default route, among the routes a frontend is switched on for. Each
//! frontend first turns what its client names (a V2 path's model, a
//! Decthings `modelId` and its route mapping, a SageMaker endpoint or target
//! model) into a model name; the route is chosen here, in one place.
//! Also the refusals of a request's head that no route serves: an unknown
//! path or method, a control endpoint the route does not allow, an unknown
//! backend named in a header.

use std::sync::Arc;

use crate::codec::v2::path::{Control, PathError};
use crate::config::{Config, Route};
use crate::error::{Class, Classified, Classify};

/// What a request's head asks for that nothing serves.
#[derive(Debug, thiserror::Error)]
pub enum RouteError {
    #[error("no route for model \"{model}\" and no default route")]
    NoRoute { model: String },
    #[error("not found: {path}")]
    NotFound { path: String },
    #[error("invalid request path: {source}")]
    BadPath { source: PathError },
    #[error("method {method} is not allowed on {path}")]
    MethodNotAllowed { method: http::Method, path: String },
    #[error("{} endpoints are not allowed through this gateway (route \"{route}\" does not list \"{}\" in allow_control)", kind.name(), kind.name())]
    ControlDenied { route: String, kind: Control },
    #[error(
        "route \"{route}\": x-tensorgate-backend names \"{backend}\", which is not one of its backends ({choices})"
    )]
    UnknownBackend {
        route: String,
        backend: String,
        choices: String,
    },
    /// A route's backend without a client: configuration checks make this
    /// impossible.
    #[error("internal error: {what}")]
    Internal { what: String },
}

impl Classify for RouteError {
    fn classify(&self) -> Classified {
        let class = match self {
            RouteError::NoRoute { .. } | RouteError::NotFound { .. } => {
                Class::NotFound { version: false }
            }
            RouteError::BadPath { .. } | RouteError::UnknownBackend { .. } => Class::Malformed,
            RouteError::MethodNotAllowed { .. } => Class::MethodNotAllowed,
            RouteError::ControlDenied { .. } => Class::Forbidden,
            RouteError::Internal { .. } => Class::Internal,
        };
        class.into()
    }
}

/// The route serving `model` among those `serves` accepts: the one listing
/// it, else the default route.
pub(crate) fn for_model<'c>(
    config: &'c Config,
    model: &str,
    serves: impl Fn(&Route) -> bool,
) -> Result<&'c Arc<Route>, RouteError> {
    config
        .route_for_model(model)
        .filter(|r| serves(r))
        .ok_or_else(|| RouteError::NoRoute {
            model: model.to_owned(),
        })
}

/// The route for a V2 request: the one serving the model its path names,
/// else (no model named) the default route.
pub(crate) fn for_path<'c>(
    config: &'c Config,
    model: Option<&str>,
    path: &str,
) -> Result<&'c Arc<Route>, RouteError> {
    match model {
        Some(name) => for_model(config, name, |_| true),
        None => config.default_route().ok_or_else(|| RouteError::NotFound {
            path: path.to_owned(),
        }),
    }
}

/// Refuses anything but POST (the inference endpoints of the Decthings and
/// SageMaker frontends).
pub(crate) fn require_post(head: &http::request::Parts) -> Result<(), RouteError> {
    if head.method == http::Method::POST {
        return Ok(());
    }
    Err(RouteError::MethodNotAllowed {
        method: head.method.clone(),
        path: head.uri.path().to_owned(),
    })
}
