//! A reply body that writes JSON text as the backend's binary tensor bytes
//! arrive: the client sees its first values before the backend has sent its
//! last byte, and memory stays at one backend frame plus its JSON text.

use std::collections::VecDeque;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use bytes::Bytes;
use http_body::Frame;

use crate::codec::v2::framing::{ChunkSplitter, FramingError, Piece, ShortTensor};
use crate::codec::v2::json_write::{DocWriter, TensorForm, ValueWriter, WriteError};
use crate::codec::v2::{Document, EntryData};
use crate::cpu;
use crate::http::body::BoxError;
use crate::infer::backend::BackendBody;
use crate::observe::{Direction, Observation};
use crate::tensor::Shape;

/// Why a streamed reply was cut off.
#[derive(Debug, thiserror::Error)]
pub(super) enum StreamError {
    #[error("backend body failed: {0}")]
    Upstream(#[source] BoxError),
    #[error("backend sent malformed binary data: {0}")]
    Framing(#[from] FramingError),
    #[error("backend sent malformed binary data: output \"{output}\" is missing {missing} bytes")]
    ShortOutput { output: String, missing: u64 },
    #[error("backend sent malformed binary data: output \"{output}\" has no data")]
    NoData { output: String },
    #[error("output \"{output}\": {source}")]
    NotJson { output: String, source: WriteError },
    #[error(
        "output \"{output}\": shape {shape} holds {expected} elements but the data has {found}"
    )]
    ElementCount {
        output: String,
        shape: Shape,
        expected: u64,
        found: u64,
    },
}

/// Streams a binary V2 response as all-JSON.
#[derive(Debug)]
pub(super) struct JsonReplyBody<B = BackendBody> {
    upstream: B,
    obs: Observation,
    /// Time spent converting, reported when the reply ends.
    busy: std::time::Duration,
    doc: Document,
    writer: DocWriter,
    splitter: ChunkSplitter,
    pieces: Vec<Piece>,
    /// The next tensor not yet opened.
    next: usize,
    current: Option<(usize, ValueWriter)>,
    /// Body bytes already read past the header.
    pending: Option<Bytes>,
    started: bool,
    done: bool,
    /// Text ready to go out before `out`: the halves of a piece written on
    /// two threads, each sent as it is rather than copied together.
    ready: VecDeque<Bytes>,
    out: Vec<u8>,
    /// The helper thread that writes the second halves.
    pair: cpu::Pair,
}

impl<B> JsonReplyBody<B> {
    pub(super) fn new(upstream: B, doc: Document, after_header: Bytes, obs: Observation) -> Self {
        let splitter = ChunkSplitter::new(doc.binary_sizes().collect());
        JsonReplyBody {
            upstream,
            obs,
            busy: std::time::Duration::ZERO,
            doc,
            writer: DocWriter::new(),
            splitter,
            pieces: Vec::new(),
            next: 0,
            current: None,
            pending: Some(after_header),
            started: false,
            done: false,
            ready: VecDeque::new(),
            out: Vec::new(),
            pair: cpu::Pair::new(),
        }
    }

    /// Writes every tensor before `until` that needs no body bytes.
    fn inline_until(&mut self, until: usize) -> Result<(), StreamError> {
        while self.next < until {
            let t = &self.doc.tensors[self.next];
            match &t.data {
                EntryData::Inline { data, .. } => {
                    self.writer.tensor_open(t, TensorForm::Json, &mut self.out);
                    let mut vw = ValueWriter::new(t.datatype);
                    vw.write(data, &mut self.out)
                        .map_err(|e| not_json(&t.name, e))?;
                    self.writer.tensor_close(&mut self.out);
                }
                EntryData::SharedMemory => {
                    self.writer.tensor_open(t, TensorForm::AsIs, &mut self.out)
                }
                // Binary tensors are opened when their first piece arrives.
                EntryData::Binary { .. } => {
                    return Err(StreamError::NoData {
                        output: t.name.clone(),
                    });
                }
            }
            self.next += 1;
        }
        Ok(())
    }

    fn process(&mut self, data: Bytes) -> Result<(), StreamError> {
        let started = std::time::Instant::now();
        let result = self.process_inner(data);
        self.busy += started.elapsed();
        result
    }

    fn process_inner(&mut self, data: Bytes) -> Result<(), StreamError> {
        self.splitter.push(data, &mut self.pieces)?;
        self.drain_pieces()
    }

    fn drain_pieces(&mut self) -> Result<(), StreamError> {
        let pieces = std::mem::take(&mut self.pieces);
        for piece in &pieces {
            if self.current.as_ref().map(|c| c.0) != Some(piece.tensor) {
                self.inline_until(piece.tensor)?;
                let t = &self.doc.tensors[piece.tensor];
                self.writer.tensor_open(t, TensorForm::Json, &mut self.out);
                self.current = Some((piece.tensor, ValueWriter::new(t.datatype)));
                self.next = piece.tensor + 1;
            }
            if let Some((index, vw)) = self.current.as_mut() {
                let t = &self.doc.tensors[*index];
                write_values(
                    &mut self.pair,
                    vw,
                    &piece.data,
                    &mut self.out,
                    &mut self.ready,
                )
                .map_err(|e| not_json(&t.name, e))?;
                if piece.last {
                    let count = vw.finish().map_err(|e| not_json(&t.name, e))?;
                    let expected = t.shape.element_count().unwrap_or(0);
                    if count != expected {
                        return Err(StreamError::ElementCount {
                            output: t.name.clone(),
                            shape: t.shape.clone(),
                            expected,
                            found: count,
                        });
                    }
                    self.writer.tensor_close(&mut self.out);
                    self.current = None;
                }
            }
        }
        self.pieces = pieces;
        self.pieces.clear();
        Ok(())
    }

    fn finish(&mut self) -> Result<(), StreamError> {
        if let Err(ShortTensor { tensor, missing }) = self.splitter.finish(&mut self.pieces) {
            return Err(StreamError::ShortOutput {
                output: self.doc.tensors[tensor].name.clone(),
                missing,
            });
        }
        self.drain_pieces()?;
        self.inline_until(self.doc.tensors.len())?;
        self.writer.close(&self.doc, &mut self.out);
        self.obs.translation(Direction::Response, self.busy);
        Ok(())
    }

    fn take_out(&mut self) -> Option<Frame<Bytes>> {
        if let Some(text) = self.ready.pop_front() {
            return Some(Frame::data(text));
        }
        (!self.out.is_empty()).then(|| Frame::data(Bytes::from(std::mem::take(&mut self.out))))
    }
}

/// Pieces with at least this many fixed-size elements are written in two
/// halves at once (see [`cpu::Pair`]): writing 8192 FP32 values takes
/// many times what handing half of them to another thread does (the
/// writing's speed: `cargo bench --bench codecs`, `binary_to_json`).
pub(super) const PARALLEL_MIN_ELEMENTS: usize = 8192;

/// Writes `data` with `vw`, a large piece of fixed-size values in two
/// halves, the second on `pair`'s helper thread: the text so far and the second half's then go
/// to `ready`, in that order, and `out` goes on after them. Public for
/// `benches/two_threads.rs`, which times exactly this step.
pub fn write_values(
    pair: &mut cpu::Pair,
    vw: &mut ValueWriter,
    data: &Bytes,
    out: &mut Vec<u8>,
    ready: &mut VecDeque<Bytes>,
) -> Result<(), WriteError> {
    let split = vw.split(data).filter(|&(_, end)| {
        let size = vw.datatype().fixed_size().unwrap_or(usize::MAX);
        end / size >= PARALLEL_MIN_ELEMENTS
    });
    let Some((mid, end)) = split else {
        return vw.write(data, out);
    };
    let mut later = vw.continuation();
    let whole = data.slice(mid..end);
    // Allocated here, with room for the longest text, so the other thread
    // never reallocates it: memory is freed by the thread that allocated
    // it (mimalloc keeps blocks freed from another thread until their own
    // thread collects, and the pool's threads mostly sleep: a streamed
    // 715 MB reply peaked at 892 MB that way, against 32 MB).
    let mut text = Vec::with_capacity(ValueWriter::max_text_len(vw.datatype(), whole.len()));
    let (first, second) = pair.join(
        || vw.write(&data[..mid], out),
        move || later.write(&whole, &mut text).map(|()| (later, text)),
    );
    first?;
    let (later, text) = second?;
    if !out.is_empty() {
        ready.push_back(Bytes::from(std::mem::take(out)));
    }
    ready.push_back(Bytes::from(text));
    vw.absorb(&later);
    vw.write(&data[end..], out)
}

fn not_json(name: &str, source: WriteError) -> StreamError {
    StreamError::NotJson {
        output: name.to_owned(),
        source,
    }
}

impl<B> http_body::Body for JsonReplyBody<B>
where
    B: http_body::Body<Data = Bytes, Error = BoxError> + Unpin,
{
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let this = &mut *self;
        loop {
            if this.done {
                return Poll::Ready(this.take_out().map(Ok));
            }
            // What is written goes out before more is read: the client's
            // pace bounds what is held.
            if !this.ready.is_empty() {
                return Poll::Ready(this.take_out().map(Ok));
            }
            if !this.started {
                this.started = true;
                this.writer.open(&this.doc, &mut this.out);
            }
            let step = if let Some(data) = this.pending.take() {
                this.process(data)
            } else {
                match ready!(Pin::new(&mut this.upstream).poll_frame(cx)) {
                    Some(Ok(frame)) => match frame.into_data() {
                        Ok(data) => this.process(data),
                        Err(_) => Ok(()),
                    },
                    Some(Err(e)) => Err(StreamError::Upstream(e)),
                    None => {
                        this.done = true;
                        this.finish()
                    }
                }
            };
            if let Err(e) = step {
                this.done = true;
                this.out.clear();
                this.ready.clear();
                tracing::warn!(error = %e, "streamed JSON reply cut off");
                return Poll::Ready(Some(Err(Box::new(e))));
            }
            if let Some(frame) = this.take_out() {
                return Poll::Ready(Some(Ok(frame)));
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.done && self.out.is_empty() && self.ready.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::v2::document::DocParser;
    use crate::codec::v2::model::{DocKind, DocLimits};
    use crate::metrics::Metrics;
    use crate::observe::Start;
    use std::collections::VecDeque as Queue;

    /// A backend body handing out the frames it was given, counting how
    /// many were taken.
    struct Frames {
        left: Queue<Bytes>,
        taken: usize,
    }

    impl http_body::Body for Frames {
        type Data = Bytes;
        type Error = BoxError;
        fn poll_frame(
            mut self: Pin<&mut Self>,
            _: &mut Context<'_>,
        ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
            let next = self.left.pop_front();
            self.taken += usize::from(next.is_some());
            Poll::Ready(next.map(|b| Ok(Frame::data(b))))
        }
    }

    fn poll_once<B: http_body::Body + Unpin>(
        b: &mut B,
    ) -> Option<Result<Frame<B::Data>, B::Error>> {
        let waker = std::task::Waker::noop();
        match Pin::new(b).poll_frame(&mut Context::from_waker(waker)) {
            Poll::Ready(f) => f,
            Poll::Pending => panic!("the test body is always ready"),
        }
    }

    /// Pieces written in two halves go out as two frames each, and are
    /// handed out before the next backend frame is read: what is held
    /// stays at one piece however long the reply (a version that read on
    /// held a growing queue: 887 MB for a 715 MB reply).
    #[test]
    fn halves_go_out_before_more_is_read() {
        const PER_PIECE: usize = 2 * PARALLEL_MIN_ELEMENTS;
        const PIECES: usize = 6;
        let n = PER_PIECE * PIECES;
        let header = format!(
            r#"{{"outputs":[{{"name":"OUT","datatype":"FP32","shape":[{n}],"parameters":{{"binary_data_size":{}}}}}]}}"#,
            n * 4
        );
        let doc =
            DocParser::parse(DocKind::Response, DocLimits::default(), header.as_bytes()).unwrap();
        let values: Vec<f32> = (0..n).map(|i| i as f32 * 0.25).collect();
        let data: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        let frames = Frames {
            left: data
                .chunks(PER_PIECE * 4)
                .map(Bytes::copy_from_slice)
                .collect(),
            taken: 0,
        };
        let metrics = Metrics::new().unwrap();
        let obs = Observation::start(Start {
            metrics: &metrics,
            kind: crate::metrics::Kind::V2,
            request_id: http::HeaderValue::from_static("t"),
            method: http::Method::POST,
            path: "/v2/models/m/infer",
            backend_hint: None,
            trace: None,
        });
        let mut body = JsonReplyBody::new(frames, doc, Bytes::new(), obs);
        let mut text = Vec::new();
        let mut out_frames = 0;
        while let Some(frame) = poll_once(&mut body) {
            let data = frame.unwrap().into_data().unwrap();
            text.extend_from_slice(&data);
            out_frames += 1;
            // Two frames out per piece read, at most one piece ahead.
            assert!(
                body.upstream.taken <= out_frames / 2 + 1,
                "{} pieces read for {out_frames} frames out",
                body.upstream.taken
            );
        }
        assert_eq!(body.upstream.taken, PIECES);
        assert!(out_frames >= 2 * PIECES, "{out_frames} frames");
        let json: serde_json::Value = serde_json::from_slice(&text).unwrap();
        let out: Vec<f32> = json["outputs"][0]["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_f64().unwrap() as f32)
            .collect();
        assert_eq!(out, values);
    }
}
