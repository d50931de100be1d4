//! Method and path -> handler. Paths are Triton's HTTP endpoints; only
//! version "1" of a model exists.

use http::{Method, Request, Response};
use http_body::Body as HttpBody;
use http_body_util::{BodyExt, LengthLimitError, Limited};
use serde_json::{Value, json};

use super::catalog::{self, VERSION};
use super::error::{DemoError, MAX_BODY_BYTES};
use super::respond::{self, Body};
use super::{encoding, generate, infer};
use tensorgate_codec::codec::v2::path::{ModelAction, V2Path, split_path};

/// The method each endpoint the demo serves takes; `None` for endpoints it
/// does not serve.
fn method(path: &V2Path) -> Option<Method> {
    match path {
        V2Path::Model {
            action: ModelAction::Infer | ModelAction::Generate | ModelAction::GenerateStream,
            ..
        } => Some(Method::POST),
        V2Path::Model {
            action: ModelAction::Stats | ModelAction::TraceSetting | ModelAction::Other,
            ..
        }
        | V2Path::Control { .. }
        | V2Path::AllStats
        | V2Path::Other => None,
        _ => Some(Method::GET),
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
    let segments = split_path(parts.uri.path()).map_err(|_| DemoError::NotFound)?;
    let path = V2Path::parse(&segments);
    if parts.method != method(&path).ok_or(DemoError::NotFound)? {
        return Err(DemoError::MethodNotAllowed);
    }
    let (name, version, action) = match path {
        V2Path::Server => return Ok(json_value(&server_metadata())),
        V2Path::Live | V2Path::Ready => return Ok(respond::empty_ok()),
        V2Path::Model {
            name,
            version,
            action,
        } => (name, version, action),
        V2Path::Control { .. } | V2Path::AllStats | V2Path::Other => {
            return Err(DemoError::NotFound);
        }
    };
    let model = match catalog::find(&name) {
        Some(model) => model,
        None if action == ModelAction::Ready => return Err(DemoError::NotReady),
        None => return Err(DemoError::UnknownModel(name)),
    };
    if let Some(version) = version.filter(|v| v != VERSION) {
        return Err(match action {
            ModelAction::Ready => DemoError::NotReady,
            _ => DemoError::UnknownVersion {
                model: name,
                version,
            },
        });
    }
    match action {
        ModelAction::Metadata => Ok(json_value(&model.metadata())),
        ModelAction::Ready => Ok(respond::empty_ok()),
        ModelAction::Config => Ok(json_value(&model.config())),
        ModelAction::Infer => {
            if model.decoupled() {
                return Err(DemoError::Decoupled);
            }
            let body = read_body(&parts.headers, body).await?;
            infer::infer(model, &parts.headers, body)
        }
        ModelAction::Generate | ModelAction::GenerateStream => {
            let body = read_body(&parts.headers, body).await?;
            generate::generate(model, &body, action == ModelAction::GenerateStream)
        }
        ModelAction::Stats | ModelAction::TraceSetting | ModelAction::Other => {
            Err(DemoError::NotFound)
        }
    }
}

pub(super) fn server_metadata() -> Value {
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

    fn endpoint(path: &str) -> Option<(V2Path, Method)> {
        let p = V2Path::parse(&split_path(path).ok()?);
        let m = method(&p)?;
        Some((p, m))
    }

    #[test]
    fn methods_follow_triton() {
        assert_eq!(endpoint("/v2").unwrap(), (V2Path::Server, Method::GET));
        let (p, m) = endpoint("/v2/models/simple/versions/1/infer").unwrap();
        assert!(p.is_infer());
        assert_eq!(m, Method::POST);
        let (_, m) = endpoint("/v2/models/repeat/generate_stream").unwrap();
        assert_eq!(m, Method::POST);
        let (_, m) = endpoint("/v2/models/repeat/ready").unwrap();
        assert_eq!(m, Method::GET);
        for unserved in [
            "/",
            "/v2/nope",
            "/v2x",
            "/invocations",
            "/v2/models//infer",
            "/v2/models/a/b",
            "/v2/models/a%2Fb/infer",
        ] {
            assert_eq!(endpoint(unserved), None, "{unserved}");
        }
    }
}
