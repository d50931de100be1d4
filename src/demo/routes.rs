//! Method and path -> handler. Paths are Triton's HTTP endpoints; only
//! version "1" of a model exists.

use http::{Method, Request, Response};
use http_body::Body as HttpBody;
use http_body_util::{BodyExt, LengthLimitError, Limited};
use serde_json::{Value, json};

use super::error::{DemoError, MAX_BODY_BYTES};
use super::models::{self, VERSION};
use super::respond::{self, Body};
use super::{encoding, generate, infer};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Action {
    Metadata,
    Ready,
    Config,
    Infer,
    Generate,
    GenerateStream,
}

#[derive(Debug, PartialEq, Eq)]
enum Route<'a> {
    Server,
    Live,
    Ready,
    Model {
        name: &'a str,
        version: Option<&'a str>,
        action: Action,
    },
}

impl Route<'_> {
    fn method(&self) -> Method {
        match self {
            Route::Model {
                action: Action::Infer | Action::Generate | Action::GenerateStream,
                ..
            } => Method::POST,
            _ => Method::GET,
        }
    }
}

fn parse(path: &str) -> Option<Route<'_>> {
    let rest = path.strip_prefix("/v2")?;
    if rest.is_empty() || rest == "/" {
        return Some(Route::Server);
    }
    let segments: Vec<&str> = rest.strip_prefix('/')?.split('/').collect();
    match segments.as_slice() {
        ["health", "live"] => Some(Route::Live),
        ["health", "ready"] => Some(Route::Ready),
        ["models", name, tail @ ..] if !name.is_empty() => {
            let (version, tail) = match tail {
                ["versions", v, tail @ ..] => (Some(*v), tail),
                tail => (None, tail),
            };
            let action = match tail {
                [] => Action::Metadata,
                ["ready"] => Action::Ready,
                ["config"] => Action::Config,
                ["infer"] => Action::Infer,
                ["generate"] => Action::Generate,
                ["generate_stream"] => Action::GenerateStream,
                _ => return None,
            };
            Some(Route::Model {
                name,
                version,
                action,
            })
        }
        _ => None,
    }
}

/// Answers one request; every error becomes its response here.
pub async fn handle<B>(req: Request<B>) -> Response<Body>
where
    B: HttpBody,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    route(req).await.unwrap_or_else(DemoError::into_response)
}

async fn route<B>(req: Request<B>) -> Result<Response<Body>, DemoError>
where
    B: HttpBody,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let (parts, body) = req.into_parts();
    let route = parse(parts.uri.path()).ok_or(DemoError::NotFound)?;
    if parts.method != route.method() {
        return Err(DemoError::MethodNotAllowed);
    }
    let (name, version, action) = match route {
        Route::Server => return Ok(json_value(&server_metadata())),
        Route::Live | Route::Ready => return Ok(respond::empty_ok()),
        Route::Model {
            name,
            version,
            action,
        } => (name, version, action),
    };
    let model = match models::find(name) {
        Some(model) => model,
        None if action == Action::Ready => return Err(DemoError::NotReady),
        None => return Err(DemoError::UnknownModel(name.to_owned())),
    };
    if let Some(version) = version.filter(|v| *v != VERSION) {
        return Err(match action {
            Action::Ready => DemoError::NotReady,
            _ => DemoError::UnknownVersion {
                model: name.to_owned(),
                version: version.to_owned(),
            },
        });
    }
    match action {
        Action::Metadata => Ok(json_value(&model.metadata())),
        Action::Ready => Ok(respond::empty_ok()),
        Action::Config => Ok(json_value(&model.config())),
        Action::Infer => {
            if model.decoupled() {
                return Err(DemoError::Decoupled);
            }
            let body = read_body(&parts.headers, body).await?;
            infer::infer(model, &parts.headers, body)
        }
        Action::Generate | Action::GenerateStream => {
            let body = read_body(&parts.headers, body).await?;
            generate::generate(model, &body, action == Action::GenerateStream)
        }
    }
}

fn server_metadata() -> Value {
    json!({
        "name": "tensorgate-demo",
        "version": env!("CARGO_PKG_VERSION"),
        "extensions": ["binary_tensor_data", "model_configuration", "parameters"],
    })
}

fn json_value(value: &Value) -> Response<Body> {
    respond::json(serde_json::to_vec(value).unwrap_or_default())
}

/// The whole body, decompressed, within [`MAX_BODY_BYTES`].
async fn read_body<B>(headers: &http::HeaderMap, body: B) -> Result<bytes::Bytes, DemoError>
where
    B: HttpBody,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let collected = Limited::new(body, MAX_BODY_BYTES)
        .collect()
        .await
        .map_err(|e| {
            if e.is::<LengthLimitError>() {
                DemoError::TooLarge {
                    limit: MAX_BODY_BYTES,
                }
            } else {
                DemoError::Invalid(format!("failed to read the request body: {e}"))
            }
        })?;
    encoding::decode_body(headers, collected.to_bytes(), MAX_BODY_BYTES)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths() {
        assert_eq!(parse("/v2"), Some(Route::Server));
        assert_eq!(parse("/v2/"), Some(Route::Server));
        assert_eq!(parse("/v2/health/live"), Some(Route::Live));
        assert_eq!(
            parse("/v2/models/simple/versions/1/infer"),
            Some(Route::Model {
                name: "simple",
                version: Some("1"),
                action: Action::Infer
            })
        );
        assert_eq!(
            parse("/v2/models/repeat/generate_stream"),
            Some(Route::Model {
                name: "repeat",
                version: None,
                action: Action::GenerateStream
            })
        );
        for bad in [
            "/",
            "/v2/nope",
            "/v2x",
            "/invocations",
            "/v2/models//infer",
            "/v2/models/a/b",
        ] {
            assert_eq!(parse(bad), None, "{bad}");
        }
    }
}
