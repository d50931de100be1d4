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
//! whole first (bounded by the route's `max_body_bytes`; AWS's own
//! InvokeEndpoint limit is 6 MB): the signature covers the body's hash, and
//! no batch may reach the backend before it verified.

pub mod error;
pub mod pipeline;
pub mod target;

use std::sync::Arc;
use std::time::Duration;

use http::header::{self, HeaderName, HeaderValue};
use http::{HeaderMap, Request, Response, StatusCode};
use hyper::body::Incoming;

pub use error::SageMakerError;

use crate::codec::sagemaker::{self, DecodeConfig, ReplyWriter, RequestDecoder};
use crate::config::Route;
use crate::frontend::decthings::Routes;
use crate::gateway::body::{Body, ChannelBody, PrefixedBody, empty};
use crate::gateway::client_body::ClientBody;
use crate::gateway::core::ModelRef;
use crate::gateway::error::GatewayError;
use crate::gateway::guard::sigv4::Claim;
use crate::gateway::headers::trace_headers;
use crate::gateway::observe::Observation;
use crate::gateway::upstream::Outgoing;
use pipeline::{Job, Pipeline, Source};

/// Reply chunks buffered between the batch task and the client.
const CHANNEL_CHUNKS: usize = 2;

/// Longest `/ping` waits for the backend's readiness.
const PING_TIMEOUT: Duration = Duration::from_secs(2);

fn sm(e: impl Into<SageMakerError>) -> GatewayError {
    GatewayError::SageMaker(Box::new(e.into()))
}

/// An invocation as the gateway hands it over: its route and model
/// ([`target::resolve`]), bound to the observation, and the caller checked
/// or, for SigV4, a signature to verify over the body.
#[derive(Debug)]
pub struct Call<'a> {
    pub route: &'a Arc<Route>,
    pub model: String,
    pub claim: Option<Claim>,
}

/// Serves one invocation.
pub async fn invoke<R: Routes>(
    routes: &R,
    call: Call<'_>,
    req: Request<Incoming>,
    obs: &Observation,
) -> Result<Response<Body>, GatewayError> {
    let config = routes.config();
    let (parts, body) = req.into_parts();
    let Call {
        route,
        model,
        claim,
    } = call;
    let body = match claim {
        Some(claim) => Pending::Read(read_signed(routes, route, &claim, &parts, body, obs).await?),
        None => Pending::Unread(body),
    };
    let x = routes.exchange(route, obs)?;
    let content_type = header_str(&parts.headers, header::CONTENT_TYPE).unwrap_or("");
    let format = sagemaker::request_format(content_type).map_err(sm)?;
    let reply_type =
        sagemaker::negotiate_accept(header_str(&parts.headers, header::ACCEPT)).map_err(sm)?;
    let model = ModelRef::new(model);
    let input = target::input(x, &model).await?;
    let limits = &route.limits;
    let mut decode = DecodeConfig::new(input.dtype);
    decode.features = input.features;
    decode.batch_records = route.sagemaker.batch_records;
    decode.max_body_bytes = usize::try_from(limits.max_body_bytes).unwrap_or(usize::MAX);
    decode.max_batch_bytes = decode.max_batch_bytes.min(decode.max_body_bytes);
    let decoder = RequestDecoder::new(format, &decode).map_err(|source| {
        sm(SageMakerError::Config {
            route: route.name.clone(),
            source,
        })
    })?;
    let body = match body {
        Pending::Read(source) => source,
        Pending::Unread(body) => Source::from(ClientBody::open(
            &parts.headers,
            body,
            &route.name,
            // Records stream through in batches: the total is not held, so
            // it is bounded only for formats read whole (JSON, in the
            // decoder).
            u64::MAX,
            (&config.server).into(),
        )?),
    };
    let job = Job {
        route: route.clone(),
        upstream: x.upstream.clone(),
        shadow: x.shadow.cloned(),
        obs: obs.clone(),
        model,
        input,
        headers: trace_headers(&parts.headers),
    };
    let mut pipeline = Pipeline::new(job, body, decoder, ReplyWriter::new(reply_type.format));
    // The first batch decides the status: its errors are the client's to
    // see whole. Later ones can only cut the reply off.
    let first = pipeline.next_chunk().await?.unwrap_or_default();
    let (tx, rest) = ChannelBody::new(CHANNEL_CHUNKS);
    let task_obs = obs.clone();
    tokio::spawn(async move {
        loop {
            match pipeline.next_chunk().await {
                Ok(Some(chunk)) => {
                    if tx.send(Ok(chunk)).await.is_err() {
                        break; // the client is gone
                    }
                }
                Ok(None) => break,
                Err(e) => {
                    tracing::warn!(error = %e, "SageMaker reply cut off after its first batch");
                    task_obs.error(&e);
                    let _ = tx.send(Err(Box::new(e))).await;
                    break;
                }
            }
        }
        task_obs.client_in(pipeline.wire_bytes());
    });
    let body = PrefixedBody::new([first], rest);
    let mut resp = Response::new(http_body_util::BodyExt::boxed_unsync(body));
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(reply_type.content_type),
    );
    Ok(resp)
}

/// A request body: read already (signed), or still to stream.
enum Pending {
    Read(Source),
    Unread(Incoming),
}

/// Reads a SigV4-signed body whole (bounded by the route's
/// `max_body_bytes`) and verifies the signature over it; then the caller is
/// known and takes the request's token.
async fn read_signed<R: Routes>(
    routes: &R,
    route: &Route,
    claim: &Claim,
    parts: &http::request::Parts,
    body: Incoming,
    obs: &Observation,
) -> Result<Source, GatewayError> {
    let config = routes.config();
    let mut body = ClientBody::open(
        &parts.headers,
        body,
        &route.name,
        route.limits.max_body_bytes,
        (&config.server).into(),
    )?
    .with_wire_digest();
    let read = body.collect(None).await?;
    let digest = body.wire_digest().unwrap_or_default();
    claim
        .verify(parts, &digest)
        .map_err(|problem| GatewayError::unauthorized(Some(route), problem))?;
    routes.admit_caller(route, Some(claim.key().clone()), obs)?;
    Ok(Source::read(read, body.wire_bytes()))
}

/// `GET /ping`: 200 while the backend of the route SageMaker reports on is
/// ready, 503 otherwise.
pub async fn ping<R: Routes>(
    routes: &R,
    obs: &Observation,
) -> Result<Response<Body>, GatewayError> {
    let route = target::ping_route(routes.config()).ok_or_else(|| GatewayError::NotFound {
        path: "/ping".to_owned(),
    })?;
    obs.bind(
        route,
        route.sagemaker.default_model.as_deref().unwrap_or(""),
    );
    let x = routes.exchange(route, obs)?;
    let req = Outgoing::get("/v2/health/ready");
    let ready = matches!(
        tokio::time::timeout(PING_TIMEOUT, x.upstream.send(req, Some(obs))).await,
        Ok(Ok(resp)) if resp.status().is_success()
    );
    let mut resp = Response::new(empty());
    if !ready {
        *resp.status_mut() = StatusCode::SERVICE_UNAVAILABLE;
    }
    Ok(resp)
}

fn header_str(headers: &HeaderMap, name: HeaderName) -> Option<&str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}
