//! The SageMaker frontend: what a SageMaker client (the SDK's `Predictor`,
//! boto3's `invoke_endpoint`, a batch-transform job) calls, served from a V2
//! backend. `GET /ping`; `POST /invocations`, `/models/{m}/invoke` and the
//! Runtime API path `/endpoints/{e}/invocations`; request bodies in CSV,
//! JSON (`instances`), JSON Lines or RecordIO-protobuf become one `[N, F]`
//! input, sent in mini-batches; replies in the JSON, JSON Lines or CSV the
//! client's `Accept` asks for, streamed in order as the batches come back.
//! Record formats are `codec::sagemaker`; which model and input in
//! [`target`]; the batching in [`pipeline`]; errors in [`error`].
//!
//! A SigV4 request on the Runtime API path of a route with keys is read
//! whole by the gateway first (bounded by the route's
//! `max_signed_body_bytes`, 6 MiB as AWS's own InvokeEndpoint limit, and
//! without a request slot until verified): the signature covers the body's
//! hash, and no batch may reach the backend before it verified.

pub mod error;
pub mod pipeline;
pub mod target;

use std::time::Duration;

use http::header::{self, HeaderName, HeaderValue};
use http::request::Parts;
use http::{HeaderMap, Response, StatusCode};

pub use error::SageMakerError;
pub use target::Target as SageMakerTarget;

use super::{BodyPlan, Call, Frontend, Routing, Target};
use crate::codec::sagemaker::{self, DecodeConfig, ReplyWriter, RequestDecoder};
use crate::config::{Config, Route};
use crate::error::Error;
use crate::http::body::{Body, empty};
use crate::http::headers::trace_headers;
use crate::http::spool::{SpoolError, SpoolLimits, spool};
use crate::infer::ModelRef;
use crate::infer::route::{self, RouteError};
use crate::metrics::Kind;
use crate::observe::Observation;
use http_body_util::BodyExt;
use pipeline::{Job, Pipeline};

/// Longest `/ping` waits for the backend's readiness.
const PING_TIMEOUT: Duration = Duration::from_secs(2);

/// How long the backend's readiness answers every `/ping` before it is
/// asked again: a ping needs no key and is never shed, so each one must
/// not cost a backend call.
const PING_CACHE: Duration = Duration::from_secs(1);

/// An invocation: `POST /invocations`, `/models/{m}/invoke`, or the Runtime
/// API path `/endpoints/{e}/invocations`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Invoke {
    pub target: SageMakerTarget,
}

impl Invoke {
    /// The Runtime API path (boto3's `invoke_endpoint`): SigV4 is taken
    /// there, and errors take AWS's shape.
    fn runtime(&self) -> bool {
        matches!(self.target, SageMakerTarget::Endpoint(_))
    }
}

impl Frontend for Invoke {
    type Named = ();

    fn kind(&self) -> Kind {
        Kind::SageMaker
    }

    fn route<'c>(&self, config: &'c Config, head: &Parts) -> Result<Routing<'c>, Error> {
        route::require_post(head)?;
        let (route, model) = target::resolve(config, &self.target, &head.headers)?;
        Ok(Routing::Route { route, model })
    }

    fn sigv4(&self) -> bool {
        self.runtime()
    }

    /// Records stream through in mini-batches: the total is not held, so
    /// it is bounded only for formats read whole (JSON, in the decoder),
    /// and for signed bodies (read whole by the gateway to verify them).
    fn body(&self, _route: &Route) -> BodyPlan {
        BodyPlan::Read { limit: u64::MAX }
    }

    async fn serve(&self, call: Call<'_>) -> Result<Response<Body>, Error> {
        let Target::Bound { exchange, model } = call.target else {
            return Err(RouteError::Internal {
                what: "a SageMaker invocation came without its route".into(),
            }
            .into());
        };
        let (head, obs) = (call.head, call.obs);
        let body = call.body.into_read()?;
        let route = exchange.route;
        let content_type = header_str(&head.headers, header::CONTENT_TYPE).unwrap_or("");
        let format = sagemaker::request_format(content_type).map_err(SageMakerError::from)?;
        let reply_type = sagemaker::negotiate_accept(header_str(&head.headers, header::ACCEPT))
            .map_err(SageMakerError::from)?;
        let model = ModelRef::new(model);
        let input = target::input(exchange, &model).await?;
        let limits = &route.limits;
        let mut decode = DecodeConfig::new(input.dtype);
        decode.features = input.features;
        decode.batch_records = route.sagemaker.batch_records;
        decode.max_body_bytes = usize::try_from(limits.max_body_bytes).unwrap_or(usize::MAX);
        decode.max_batch_bytes = decode.max_batch_bytes.min(decode.max_body_bytes);
        // A batch is one backend tensor, held to the route's limits as a
        // V2 client's tensor is; sparse records may densify to at most one
        // such tensor's worth in all (they cost the client almost nothing).
        let max_elements = limits.max_elements_per_tensor;
        decode.max_batch_elements = max_elements;
        decode.max_features = decode
            .max_features
            .min(usize::try_from(max_elements).unwrap_or(usize::MAX));
        decode.max_dense_elements = max_elements;
        decode.max_dense_bytes = limits.max_body_bytes;
        let decoder =
            RequestDecoder::new(format, &decode).map_err(|source| SageMakerError::Config {
                route: route.name.clone(),
                source,
            })?;
        let job = Job {
            route: exchange.route.clone(),
            upstream: exchange.upstream.clone(),
            metadata: exchange.metadata.clone(),
            shadow: exchange.shadow.cloned(),
            obs: obs.clone(),
            model,
            input,
            headers: trace_headers(&head.headers),
        };
        let pipeline = Pipeline::new(job, body, decoder, ReplyWriter::new(reply_type.format));
        let body = reply(pipeline, call.spool, obs).await?;
        let mut resp = Response::new(body);
        resp.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static(reply_type.content_type),
        );
        Ok(resp)
    }

    fn render(&self, e: &Error, _obs: &Observation) -> Response<Body> {
        if self.runtime() {
            error::render_aws(e)
        } else {
            crate::frontend::v2::render(e)
        }
    }
}

/// The reply body of an invocation. While the request is read, its replies
/// are held (in memory, then on disk) and never wait for the client: a
/// client that sends every record before it reads (http.client, requests,
/// boto3) would otherwise fill its socket, stop the gateway reading, and
/// neither would move. The status waits too, until the body has ended and
/// every batch is checked and charged: whatever a rule, a record or a rate
/// limit refuses is answered whole, with its status, and the held reply
/// outgrowing its bounds is a 413 before any status line. Once the request
/// is read, the rest streams at the client's pace; a batch failing then
/// cuts the reply (it never looks whole).
async fn reply(
    mut pipeline: Pipeline,
    limits: &SpoolLimits,
    obs: &Observation,
) -> Result<Body, Error> {
    let (mut held, body) = spool(limits.clone());
    loop {
        if pipeline.started_all() {
            break;
        }
        match pipeline.next_chunk().await? {
            Some(chunk) => held.push(chunk).await?,
            None => {
                held.finish();
                return Ok(body.boxed_unsync());
            }
        }
    }
    let obs = obs.clone();
    tokio::spawn(async move {
        loop {
            if held.room().await.is_err() {
                return; // the client is gone
            }
            let cut = match pipeline.next_chunk().await {
                Ok(Some(chunk)) => match held.push(chunk).await {
                    Ok(()) => continue,
                    Err(SpoolError::Gone) => return,
                    Err(e) => Error::from(e),
                },
                Ok(None) => return held.finish(),
                Err(e) => e,
            };
            tracing::warn!(error = %cut, "SageMaker reply cut off after its status");
            obs.error(&cut);
            return held.fail(Box::new(cut));
        }
    });
    Ok(body.boxed_unsync())
}

/// `GET /ping`: 200 while the backend of the route SageMaker reports on is
/// ready, 503 otherwise; the backend's answer serves every ping for
/// [`PING_CACHE`]. Never shed nor authenticated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ping;

impl Frontend for Ping {
    type Named = ();

    fn kind(&self) -> Kind {
        Kind::SageMaker
    }

    fn route<'c>(&self, config: &'c Config, _head: &Parts) -> Result<Routing<'c>, Error> {
        let route = target::ping_route(config).ok_or_else(|| RouteError::NotFound {
            path: "/ping".to_owned(),
        })?;
        let model = route.sagemaker.default_model.clone().unwrap_or_default();
        Ok(Routing::Route { route, model })
    }

    fn guarded(&self) -> bool {
        false
    }

    fn body(&self, _route: &Route) -> BodyPlan {
        BodyPlan::Ignore
    }

    async fn serve(&self, call: Call<'_>) -> Result<Response<Body>, Error> {
        let Target::Bound { exchange, .. } = call.target else {
            return Err(RouteError::Internal {
                what: "a ping came without its route".into(),
            }
            .into());
        };
        let ready = exchange
            .upstream
            .ready_cached(PING_CACHE, PING_TIMEOUT)
            .await;
        let mut resp = Response::new(empty());
        if !ready {
            *resp.status_mut() = StatusCode::SERVICE_UNAVAILABLE;
        }
        Ok(resp)
    }

    fn render(&self, e: &Error, _obs: &Observation) -> Response<Body> {
        crate::frontend::v2::render(e)
    }
}

fn header_str(headers: &HeaderMap, name: HeaderName) -> Option<&str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}
