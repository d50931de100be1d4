//! Records in, replies out, in mini-batches: the body is decoded as it
//! arrives; each batch is checked against the route's rules and charged to
//! the caller's element limits as soon as it is complete, then goes to the
//! backend (up to `max_batches_in_flight` at once), and the replies are
//! written back in order as they come. Memory holds the batches in flight
//! and one reply chunk, whatever the number of records.

use std::collections::VecDeque;
use std::sync::Arc;

use bytes::Bytes;
use http::HeaderMap;
use tokio::task::JoinHandle;

use super::error::SageMakerError;
use super::target::InputSpec;
use crate::codec::sagemaker::{Batch, OutputRef, ReplyWriter, RequestDecoder};
use crate::codec::v2::{EntryData, TensorEntry};
use crate::config::Route;
use crate::error::Error;
use crate::http::client_body::ClientBody;
use crate::infer::call::{self, InferCall};
use crate::infer::checks::check_request;
use crate::infer::metadata::MetadataCache;
use crate::infer::route::RouteError;
use crate::infer::shadow::Mirror;
use crate::infer::{Exchange, InferReply, InferRequest, ModelRef, TensorData};
use crate::observe::Observation;
use crate::upstream::Upstream;
use std::time::Instant;

/// What every batch of one invocation shares, owned so batches can run on
/// their own tasks.
#[derive(Debug)]
pub struct Job {
    pub route: Arc<Route>,
    pub upstream: Upstream,
    pub metadata: Arc<MetadataCache>,
    pub shadow: Option<Mirror>,
    pub obs: Observation,
    pub model: ModelRef,
    pub input: InputSpec,
    /// Headers passed to the backend with every batch.
    pub headers: HeaderMap,
}

impl Job {
    fn exchange(&self) -> Exchange<'_> {
        Exchange {
            route: &self.route,
            upstream: &self.upstream,
            metadata: &self.metadata,
            shadow: self.shadow.as_ref(),
            obs: &self.obs,
        }
    }
}

type InFlight = JoinHandle<Result<(usize, InferReply), Error>>;

/// One invocation's batches, driven chunk by chunk.
#[derive(Debug)]
pub struct Pipeline {
    job: Arc<Job>,
    body: ClientBody,
    decoder: RequestDecoder,
    writer: ReplyWriter,
    in_flight: VecDeque<InFlight>,
    max_in_flight: usize,
    /// The client's body has ended.
    ended: bool,
    /// Every batch has been handed out.
    exhausted: bool,
    opened: bool,
    closed: bool,
}

impl Pipeline {
    pub fn new(job: Job, body: ClientBody, decoder: RequestDecoder, writer: ReplyWriter) -> Self {
        let max_in_flight = job.route.sagemaker.max_batches_in_flight.max(1);
        Pipeline {
            job: Arc::new(job),
            body,
            decoder,
            writer,
            in_flight: VecDeque::new(),
            max_in_flight,
            ended: false,
            exhausted: false,
            opened: false,
            closed: false,
        }
    }

    /// The next piece of the reply: the opening and the first batch's
    /// records, then one batch's records at a time, then the closing;
    /// `None` when all is written.
    pub async fn next_chunk(&mut self) -> Result<Option<Bytes>, Error> {
        self.fill().await?;
        self.write_next().await
    }

    /// Whether the body has been read to its end and every batch started
    /// (checked and charged): what is left cannot be refused by a rule or
    /// a rate limit, only fail at the backend.
    pub fn started_all(&self) -> bool {
        self.exhausted
    }

    /// The next piece of the reply from the batches already started.
    async fn write_next(&mut self) -> Result<Option<Bytes>, Error> {
        let mut out = Vec::new();
        if !self.opened {
            self.opened = true;
            self.writer.open(&mut out);
        }
        if let Some(pending) = self.in_flight.pop_front() {
            let (records, reply) = pending.await.map_err(|e| RouteError::Internal {
                what: format!("a batch task ended: {e}"),
            })??;
            write_reply(&self.job.route, &mut self.writer, records, &reply, &mut out)?;
        } else if !self.closed {
            self.closed = true;
            self.writer.close(&mut out);
        } else {
            return Ok(None);
        }
        Ok(Some(Bytes::from(out)))
    }

    /// Starts batches until `max_in_flight` run or none is left, reading
    /// the body as needed.
    async fn fill(&mut self) -> Result<(), Error> {
        while self.in_flight.len() < self.max_in_flight && !self.exhausted {
            let next = if self.ended {
                self.decoder.finish()
            } else {
                self.decoder.next_batch()
            };
            if let Some(batch) = next.map_err(record_error)? {
                self.start(batch).await?;
                continue;
            }
            if self.ended {
                self.exhausted = true;
                break;
            }
            match self.body.next().await? {
                Some(chunk) => self.decoder.feed(&chunk).map_err(record_error)?,
                None => self.ended = true,
            }
        }
        Ok(())
    }

    /// Checks `batch` against the route's rules and charges its elements
    /// here, in order, so that a refusal comes before any later batch is
    /// sent; then sends it on its own task.
    async fn start(&mut self, batch: Batch) -> Result<(), Error> {
        // A batch's records were decoded as the body arrived: what is
        // timed as its translation is building the backend request.
        let started = Instant::now();
        let job = self.job.clone();
        let records = batch.records;
        let req = request(&job, batch);
        check_request(&job.route, &req.header)?;
        let elements = req.element_count();
        call::charge(&job.obs, elements).await?;
        self.in_flight.push_back(tokio::spawn(async move {
            let reply = run_batch(&job, req, elements, started).await?;
            Ok((records, reply))
        }));
        Ok(())
    }
}

impl Drop for Pipeline {
    /// A client gone mid-reply takes its batches in flight with it.
    fn drop(&mut self) {
        for pending in &self.in_flight {
            pending.abort();
        }
    }
}

fn record_error(e: crate::codec::sagemaker::RecordError) -> SageMakerError {
    SageMakerError::Record(e)
}

/// A batch as the core's request: one `[N, F]` input.
fn request(job: &Job, batch: Batch) -> InferRequest {
    let entry = TensorEntry {
        name: job.input.name.clone(),
        datatype: batch.dtype,
        shape: batch.shape(),
        parameters: Default::default(),
        extra: Vec::new(),
        data: EntryData::Binary {
            size: batch.data.len() as u64,
        },
    };
    InferRequest::new(
        job.model.clone(),
        vec![(entry, TensorData::Pieces(vec![batch.data]))],
    )
}

/// One batch through the backend (checked, its `charged` elements charged
/// already): sent, and its reply collected.
async fn run_batch(
    job: &Job,
    req: InferRequest,
    charged: u64,
    started: Instant,
) -> Result<InferReply, Error> {
    let reply = InferCall::new(job.exchange(), job.headers.clone(), started)
        .charged(charged)
        .collect(req)
        .await?;
    Ok(reply)
}

/// Writes one batch's records: the outputs the route selects (all, in the
/// backend's order, by default), under their reply names.
fn write_reply(
    route: &Route,
    writer: &mut ReplyWriter,
    records: usize,
    reply: &InferReply,
    out: &mut Vec<u8>,
) -> Result<(), SageMakerError> {
    let joined: Vec<(&TensorEntry, Bytes)> =
        reply.outputs().map(|(t, d)| (t, d.joined())).collect();
    let selected: Vec<OutputRef<'_>> = if route.sagemaker.outputs.is_empty() {
        joined
            .iter()
            .map(|(t, d)| output_ref(&t.name, t, d))
            .collect()
    } else {
        route
            .sagemaker
            .outputs
            .iter()
            .map(|o| {
                let (t, d) = joined
                    .iter()
                    .find(|(t, _)| t.name == o.name)
                    .ok_or_else(|| SageMakerError::MissingOutput {
                        name: o.name.clone(),
                    })?;
                Ok(output_ref(o.reply_name(), t, d))
            })
            .collect::<Result<_, SageMakerError>>()?
    };
    writer
        .write_batch(records, &selected, out)
        .map_err(SageMakerError::Reply)
}

fn output_ref<'a>(name: &'a str, t: &'a TensorEntry, data: &'a Bytes) -> OutputRef<'a> {
    OutputRef {
        name,
        dtype: t.datatype,
        shape: t.shape.dims(),
        data,
    }
}
