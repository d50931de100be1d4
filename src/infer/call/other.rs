//! The calls other than infer, through the core: the backend answers the
//! call ([`backend::call`]: as it came when it speaks the call's
//! protocol, translated when it does not), and statistics asked for
//! without a model name are cut down to the caller's route's own models
//! ([`stats`]), whichever form the answer took.

use http::Response;
use http_body_util::BodyExt;

use crate::config::Config;
use crate::error::Error;
use crate::http::body::{Body, full};
use crate::infer::backend;
use crate::infer::calls::{Answer, Call, GrpcAnswer, Reply};
use crate::infer::{Exchange, InferError, stats};

/// Answers `call` from the exchange's backend.
pub async fn other(exchange: Exchange<'_>, config: &Config, call: Call) -> Result<Answer, Error> {
    let all_stats = call.all_stats;
    let answer = backend::call(exchange, call).await?;
    if !all_stats {
        return Ok(answer);
    }
    let route = exchange.route;
    let bad = |e: stats::StatsError| -> Error { e.into() };
    Ok(match answer {
        Answer::Http(resp) if resp.status().is_success() => {
            Answer::Http(retain_http(exchange, config, resp).await?)
        }
        Answer::Grpc(GrpcAnswer::Message(m)) => Answer::Grpc(GrpcAnswer::Message(
            stats::retain_grpc(config, route, &m).map_err(bad)?,
        )),
        Answer::Translated(mut translated) => {
            if let (_, Reply::ModelStatistics(s)) = &mut *translated {
                s.model_stats
                    .retain(|m| stats::serves(config, route, &m.name));
            }
            Answer::Translated(translated)
        }
        other => other,
    })
}

/// A V2 statistics reply, read (bounded by the route's
/// `max_response_bytes`) and cut down.
async fn retain_http(
    exchange: Exchange<'_>,
    config: &Config,
    resp: Response<Body>,
) -> Result<Response<Body>, Error> {
    let resp = exchange.obs.unrelay(resp);
    let (mut parts, mut body) = resp.into_parts();
    let limit = exchange.route.limits.max_response_bytes;
    let mut whole = Vec::new();
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| InferError::from(exchange.upstream.body_error(&*e)))?;
        if let Ok(data) = frame.into_data() {
            whole.extend_from_slice(&data);
            if whole.len() as u64 > limit {
                return Err(InferError::ReplyTooLarge {
                    route: exchange.route.name.clone(),
                    limit,
                }
                .into());
            }
        }
    }
    let kept = stats::retain_json(config, exchange.route, &whole)?;
    parts
        .headers
        .insert(http::header::CONTENT_LENGTH, kept.len().into());
    Ok(Response::from_parts(parts, full(kept)))
}
