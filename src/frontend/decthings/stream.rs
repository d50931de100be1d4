//! A Decthings reply written while the backend's binary reply arrives, for
//! the common case where every output is a fixed-size tensor whose bytes
//! are the same in both formats: the JSON and each output's blob head go
//! first (every size is known from the backend's header), then the
//! backend's frames themselves. Nothing is collected, nothing copied; a
//! backend that fails mid-reply cuts the client's reply off (it never looks
//! whole: the length was announced).

use std::pin::Pin;
use std::task::{Context, Poll, ready};

use bytes::{BufMut, Bytes, BytesMut};
use http_body::{Body as HttpBody, Frame, SizeHint};

use super::error::OutputError;
use super::reply::{self, Durations};
use crate::codec::decthings::{self, varint};
use crate::codec::v2::framing::{ChunkSplitter, FramingError, Piece, ShortTensor};
use crate::codec::v2::{Document, EntryData};
use crate::config::Route;
use crate::http::body::BoxError;
use crate::infer::backend::BackendBody;
use crate::tensor::DataType;

/// Whether a reply can stream: every output binary, of a fixed-size type
/// that needs no conversion, not unstacked, and indexable by the client.
pub(super) fn streamable(route: &Route, doc: &Document) -> bool {
    doc.tensors.iter().all(|t| {
        matches!(t.data, EntryData::Binary { .. })
            && !matches!(
                t.datatype,
                DataType::Bytes | DataType::F16 | DataType::BF16 | DataType::Bool
            )
            && !route.decthings.unstack_outputs.contains(&t.name)
            && reply::indexable(&t.shape)
    })
}

/// The streamed reply body.
#[derive(Debug)]
pub(super) struct StreamBody {
    upstream: BackendBody,
    splitter: ChunkSplitter,
    pieces: Vec<Piece>,
    /// Each output's `varint blob_len | tensor head`, sent before its data.
    heads: Vec<Option<Bytes>>,
    /// Frames ready to go, in order.
    ready: std::collections::VecDeque<Bytes>,
    /// The backend bytes already read past the header.
    after: Option<Bytes>,
    remaining: u64,
    done: bool,
}

/// Builds the streamed reply for `doc` (checked [`streamable`]); returns the
/// body and its exact length.
pub(super) fn body(
    doc: &Document,
    after: Bytes,
    upstream: BackendBody,
    durations: Durations,
) -> Result<StreamBody, OutputError> {
    let names: Vec<&str> = doc.tensors.iter().map(|t| t.name.as_str()).collect();
    let json = reply::framed_json(&reply::success_json(&names, durations));
    let mut heads = Vec::with_capacity(doc.tensors.len());
    let mut total = json.len() as u64;
    for t in &doc.tensors {
        let size = t.binary_size().unwrap_or(0);
        let head = decthings::head(t.datatype.to_decthings(), &t.shape).map_err(|source| {
            OutputError::Encode {
                output: t.name.clone(),
                source,
            }
        })?;
        let blob = head.len() as u64 + size;
        let mut prefix = BytesMut::with_capacity(9 + head.len());
        varint::write(&mut prefix, blob);
        prefix.put_slice(&head);
        total += prefix.len() as u64 + size;
        heads.push(Some(prefix.freeze()));
    }
    Ok(StreamBody {
        upstream,
        splitter: ChunkSplitter::new(doc.binary_sizes().collect()),
        pieces: Vec::new(),
        heads,
        ready: std::collections::VecDeque::from([json]),
        after: Some(after),
        remaining: total,
        done: false,
    })
}

/// Why a streamed reply was cut off.
#[derive(Debug, thiserror::Error)]
enum CutOff {
    #[error("backend body failed: {0}")]
    Upstream(#[source] BoxError),
    #[error("backend sent malformed binary data: {0}")]
    Framing(#[from] FramingError),
    #[error("backend reply ended early: {0:?}")]
    Short(ShortTensor),
}

impl StreamBody {
    fn take(&mut self, data: Bytes) -> Result<(), CutOff> {
        self.splitter.push(data, &mut self.pieces)?;
        self.queue_pieces();
        Ok(())
    }

    fn queue_pieces(&mut self) {
        for p in self.pieces.drain(..) {
            if let Some(head) = self.heads.get_mut(p.tensor).and_then(Option::take) {
                self.ready.push_back(head);
            }
            if !p.data.is_empty() {
                self.ready.push_back(p.data);
            }
        }
    }

    fn end(&mut self) -> Result<(), CutOff> {
        self.splitter
            .finish(&mut self.pieces)
            .map_err(CutOff::Short)?;
        self.queue_pieces();
        Ok(())
    }
}

impl HttpBody for StreamBody {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let this = &mut *self;
        loop {
            if let Some(b) = this.ready.pop_front() {
                this.remaining = this.remaining.saturating_sub(b.len() as u64);
                return Poll::Ready(Some(Ok(Frame::data(b))));
            }
            if this.done {
                return Poll::Ready(None);
            }
            let step = match this.after.take() {
                Some(after) => this.take(after),
                None => match ready!(Pin::new(&mut this.upstream).poll_frame(cx)) {
                    Some(Ok(frame)) => match frame.into_data() {
                        Ok(data) => this.take(data),
                        Err(_) => Ok(()),
                    },
                    Some(Err(e)) => Err(CutOff::Upstream(e)),
                    None => {
                        this.done = true;
                        this.end()
                    }
                },
            };
            if let Err(e) = step {
                this.done = true;
                this.ready.clear();
                tracing::warn!(error = %e, "streamed Decthings reply cut off");
                return Poll::Ready(Some(Err(Box::new(e))));
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.done && self.ready.is_empty()
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::with_exact(self.remaining)
    }
}
