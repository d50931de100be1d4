//! A binary-format backend request sent while the client's JSON request it
//! is made from is still being read and converted.
//!
//! The backend request's HTTP head and JSON header must be whole before
//! its first data byte, but a JSON request's members may come in any
//! order: an `"outputs"` list or `"parameters"` after the inputs changes
//! the header. So the header is a guess, made once the data of a large
//! fixed-size tensor starts: the document as if nothing but that data
//! followed (the common single-input request). Tried in each tensor's data
//! until the request's data so far is large enough; the tensors before the
//! one it is made in are whole by then and go first. The data goes out as it is
//! converted, all but its last byte. Once the document is parsed whole the
//! guess is held against the request's real header. The same: the last
//! bytes go, and the backend's answer is the request's. Different, or the
//! exchange ended before that: the body is aborted (the backend never holds
//! a whole request it was not meant to get) and the caller sends the
//! request as usual.
//!
//! What it saves: the backend takes in the data while the client is still
//! sending, instead of after. Triton 2.51 answers a large binary request
//! sooner after its last bytes when it has taken in the rest already than
//! when it gets the whole body at once (see docs/PERFORMANCE.md, "What
//! each decision bought").

use std::future::Future;
use std::pin::Pin;
use std::time::Instant;

use bytes::Bytes;
use http::{HeaderMap, Response};
use http_body_util::BodyExt;
use tokio::sync::{mpsc, oneshot};

use super::charge;
use crate::codec::v2::DocParser;
use crate::codec::v2::EntryData;
use crate::config::WireFormat;
use crate::http::body::{BoxError, SizedChannelBody};
use crate::infer::InferError;
use crate::infer::backend::{self, BodyHead, RequestBody, Sent, answer, outgoing};
use crate::infer::{Exchange, ModelRef};
use crate::upstream::UpstreamError;
use crate::upstream::{OutBody, UpstreamBody};

/// Requests whose binary data is smaller than this are sent once read:
/// the backend takes in less than a megabyte in well under a millisecond.
pub(super) const EARLY_MIN_BYTES: u64 = 1 << 20;

/// Converted data is handed over in pieces of at least this size: each
/// piece wakes the backend's reader, and on cores the client and the
/// conversion keep busy, fewer wake-ups leave more of them to the parse.
const EARLY_PIECE: usize = 1 << 20;

/// The longest wait for a client's next piece before its backend request
/// is abandoned: a client sending at full speed hands over pieces back to
/// back (a 400 KiB piece takes 4 ms even at 100 MB/s).
pub(super) const EARLY_PATIENCE: std::time::Duration = std::time::Duration::from_millis(50);

type Exchanging<'a> =
    Pin<Box<dyn Future<Output = Result<Response<UpstreamBody>, UpstreamError>> + Send + 'a>>;

/// A backend request on its way while the client's is read.
pub(crate) struct EarlySend<'a> {
    exchange: Exchange<'a>,
    /// The guessed JSON header.
    header: Bytes,
    /// The body's length under that guess.
    total: u64,
    /// Bytes of the body handed over so far.
    sent: u64,
    /// The tensor whose data is going out, and how much of it went.
    tensor: usize,
    tensor_sent: usize,
    /// Elements charged to the caller's limits.
    charged: u64,
    /// When the request must be read by (the backend's request timeout
    /// after starting).
    until: Instant,
    tx: Option<mpsc::UnboundedSender<Result<Bytes, BoxError>>>,
    end: Option<oneshot::Sender<()>>,
    /// `None` once the exchange ended before the body did.
    in_flight: Option<Exchanging<'a>>,
}

/// What [`EarlySend::start`] made of a request read so far.
#[derive(Debug)]
pub(crate) enum Attempt<'a> {
    /// The backend request is on its way.
    Started(EarlySend<'a>),
    /// Not with what is read so far; once the data of a later tensor has
    /// begun, it may be (the request's data known so far is too small).
    NotYet,
    /// Not for this request.
    Never,
}

impl<'a> EarlySend<'a> {
    /// Starts the backend request for what `parser` has read so far, when
    /// that is possible and worth it: a binary-format route without a
    /// shadow, a parser inside a fixed-size tensor's data (see
    /// [`DocParser::provisional`]), no input in shared memory, at least
    /// [`EARLY_MIN_BYTES`] of data. The guessed request's elements are
    /// charged to the caller's limits first (an error if that refuses).
    pub(crate) async fn start(
        exchange: Exchange<'a>,
        model: &ModelRef,
        headers: &HeaderMap,
        parser: &DocParser,
    ) -> Result<Attempt<'a>, InferError> {
        if exchange.route.backend_format != WireFormat::Binary
            || exchange.shadow.is_some()
            || !backend::sends_early(exchange.upstream)
        {
            return Ok(Attempt::Never);
        }
        let (Some(doc), Some((tensor, converted))) = (parser.provisional(), parser.converted())
        else {
            return Ok(Attempt::NotYet);
        };
        // All of the body's data: the tensors before this one are whole,
        // their data inline (`binary_total` counts only what follows).
        let data_len = doc
            .tensors
            .iter()
            .map(|t| t.binary_size().unwrap_or(0))
            .sum::<u64>();
        if data_len < EARLY_MIN_BYTES || tensor + 1 != doc.tensors.len() {
            return Ok(Attempt::NotYet);
        }
        if !exchange.upstream.early_allowed() {
            return Ok(Attempt::Never);
        }
        // The tensors before this one, whole (their data inline).
        let before: Vec<Bytes> = doc.tensors[..tensor]
            .iter()
            .filter_map(|t| match &t.data {
                EntryData::Inline { data, .. } => Some(data.clone()),
                _ => None,
            })
            .collect();
        if before.len() != tensor {
            return Ok(Attempt::Never);
        }
        let elements = doc.element_count();
        let Some(header) = backend::provisional_header(doc) else {
            return Ok(Attempt::Never);
        };
        charge(exchange.obs, elements).await?;
        let header = Bytes::from(header);
        let total = header.len() as u64 + data_len;
        let (tx, body) = SizedChannelBody::new(total);
        let (end, ended) = oneshot::channel();
        let head = BodyHead {
            len: total,
            header_len: Some(header.len() as u64),
            content_type: "application/octet-stream",
        };
        let out = outgoing(
            exchange,
            model,
            head,
            OutBody::Early(body.boxed_unsync(), Some(ended)),
            headers.clone(),
        );
        let mut early = EarlySend {
            exchange,
            header: header.clone(),
            total,
            sent: 0,
            tensor,
            tensor_sent: 0,
            charged: elements,
            until: Instant::now() + exchange.upstream.backend.request_timeout,
            tx: Some(tx),
            end: Some(end),
            in_flight: Some(Box::pin(
                exchange.upstream.send(out, Some(exchange.obs.watch())),
            )),
        };
        for piece in std::iter::once(header).chain(before) {
            early.hand_over(piece);
        }
        early.push(converted);
        Ok(Attempt::Started(early))
    }

    /// Elements charged to the caller's limits for the guessed request.
    pub(crate) fn charged(&self) -> u64 {
        self.charged
    }

    fn hand_over(&mut self, piece: Bytes) {
        if piece.is_empty() {
            return;
        }
        self.sent += piece.len() as u64;
        if let Some(tx) = &self.tx {
            // A closed channel: the exchange is over, and `finish` knows.
            let _ = tx.send(Ok(piece));
        }
    }

    /// Hands over the data converted since the last call, never the body's
    /// last byte.
    fn push(&mut self, converted: &[u8]) {
        let room = self.total.saturating_sub(self.sent + 1);
        let new = converted.len().saturating_sub(self.tensor_sent);
        let n = new.min(usize::try_from(room).unwrap_or(usize::MAX));
        if n < EARLY_PIECE || self.in_flight.is_none() {
            return;
        }
        let from = self.tensor_sent;
        self.tensor_sent += n;
        self.hand_over(Bytes::copy_from_slice(&converted[from..from + n]));
    }

    /// Hands over what `parser` converted of the tensor since the last call.
    pub(crate) fn push_from(&mut self, parser: &DocParser) {
        if let Some((tensor, converted)) = parser.converted()
            && tensor == self.tensor
        {
            self.push(converted);
        }
    }

    /// Awaits `f` (the client's next piece) while the exchange goes on (it
    /// must be polled to make progress: the connection slot, the request
    /// head). A client that keeps the gateway waiting longer than
    /// [`EARLY_PATIENCE`] for a piece, or whose request is not read within
    /// the backend's request timeout of starting, gets its backend request
    /// abandoned: a slow client must not hold a backend connection.
    pub(crate) async fn drive<T>(&mut self, f: impl Future<Output = T>) -> T {
        let Some(exchange) = self.in_flight.as_mut() else {
            return f.await;
        };
        let left = self.until.saturating_duration_since(Instant::now());
        tokio::pin!(f);
        let ended = tokio::select! {
            biased;
            out = &mut f => return out,
            ended = exchange => Some(ended),
            () = tokio::time::sleep(EARLY_PATIENCE.min(left)) => None,
        };
        match ended {
            // Answered or failed before the body ended: `finish` sends the
            // request again as usual.
            Some(ended) => {
                let status = ended.as_ref().map(|r| r.status().as_u16()).ok();
                tracing::debug!(
                    request_id = ?self.exchange.obs.request_id(),
                    ?status,
                    "early backend request ended before its body"
                );
            }
            None => tracing::debug!(
                request_id = ?self.exchange.obs.request_id(),
                "early backend request abandoned: the client is slow"
            ),
        }
        self.abandon();
        f.await
    }

    /// Aborts the backend request (see `Drop`); `finish` then says so.
    fn abandon(&mut self) {
        if let Some(tx) = self.tx.take() {
            let _ = tx.send(Err("the request was not sent as guessed".into()));
        }
        self.in_flight = None;
    }

    /// With the request read whole and built as `body`: when the guess
    /// holds and the exchange is still on, the rest of the body goes and
    /// this is the backend's answer. `None` otherwise (the body is aborted:
    /// send `body` as usual).
    pub(crate) async fn finish(mut self, body: &RequestBody) -> Option<Result<Sent, InferError>> {
        let holds = body.header_len == Some(self.header.len() as u64)
            && body.chunks.first() == Some(&self.header)
            && body.len() == self.total;
        self.exchange.upstream.early_outcome(holds);
        if !holds {
            tracing::debug!(
                request_id = ?self.exchange.obs.request_id(),
                "early backend request aborted: the request's header is not the one guessed"
            );
            return None;
        }
        let exchange = self.in_flight.take()?;
        let mut skip = self.sent;
        for chunk in &body.chunks {
            let n = chunk.len() as u64;
            if skip >= n {
                skip -= n;
                continue;
            }
            let rest = chunk.slice(skip as usize..);
            skip = 0;
            self.hand_over(rest);
        }
        self.tx = None;
        if let Some(end) = self.end.take() {
            let _ = end.send(());
        }
        self.exchange.obs.backend_out(self.total);
        let sent = Instant::now();
        let resp = exchange.await;
        Some(answer(self.exchange, resp, sent).await)
    }
}

impl std::fmt::Debug for EarlySend<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EarlySend")
            .field("total", &self.total)
            .field("sent", &self.sent)
            .field("tensor", &self.tensor)
            .field("exchanging", &self.in_flight.is_some())
            .finish_non_exhaustive()
    }
}

impl Drop for EarlySend<'_> {
    /// Not finished: the body ends in an error, so the backend connection
    /// is closed and the request never completes there.
    fn drop(&mut self) {
        self.abandon();
    }
}
