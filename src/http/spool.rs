//! A reply held for a client that is not taking it yet. Its producer
//! writes into a [`SpoolWriter`] without ever waiting for the client: up to
//! a memory bound the bytes stay in memory, past it they go to an unnamed
//! temporary file (removed by the system when it is closed, even if the
//! process dies), up to a disk bound per reply and a disk budget shared by
//! every reply of the gateway; past those, writing fails. The client's end,
//! [`SpoolBody`], hands the bytes out in order.
//!
//! Why: a client that sends its whole request before reading (Python's
//! http.client, requests, boto3) must not stop the gateway from reading it
//! while a reply is produced from what was read so far — the client's
//! socket buffer fills, the gateway stops reading, neither side moves. And a
//! reply that must be whole before it starts (HTTP/1.0, which cannot signal
//! a cut) is held here until it is.
//!
//! Memory stays at one bound per reply (plus a read piece); file reads and
//! writes run on tokio's blocking pool, never on the runtime's threads.

use std::collections::VecDeque;
use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker, ready};

use bytes::Bytes;
use http_body::{Frame, SizeHint};
use tokio::sync::Notify;
use tokio::task::JoinHandle;

use super::body::BoxError;
use crate::error::{Class, Classified, Classify};

/// The largest piece read back from the file at once.
const READ_PIECE: u64 = 256 << 10;

/// Why a reply could not be held.
#[derive(Debug, thiserror::Error)]
pub enum SpoolError {
    /// The reply outgrew what one reply may hold.
    #[error(
        "the reply is larger than the {limit} bytes the gateway holds for a client that has not taken it yet"
    )]
    Full { limit: u64 },
    /// Every reply together holds the whole disk budget.
    #[error("the gateway is holding too many replies on disk; retry later")]
    DiskBusy,
    /// The temporary file could not be made, written or read.
    #[error("the reply could not be held on disk: {0}")]
    Disk(#[source] io::Error),
    /// The client's end was dropped: nobody will read the reply.
    #[error("the client is gone")]
    Gone,
}

impl Classify for SpoolError {
    fn classify(&self) -> Classified {
        let class = match self {
            SpoolError::Full { .. } => Class::TooLarge,
            SpoolError::DiskBusy => Class::Overloaded { retry_after: 1 },
            // A full disk passes: the same as the shared disk budget spent.
            SpoolError::Disk(e) if e.kind() == io::ErrorKind::StorageFull => {
                Class::Overloaded { retry_after: 1 }
            }
            // `Gone` is never rendered: nobody is left to answer.
            SpoolError::Disk(_) | SpoolError::Gone => Class::Internal,
        };
        class.into()
    }
}

/// The disk every spooled reply of a gateway may use together.
#[derive(Debug)]
pub struct DiskBudget {
    limit: u64,
    used: AtomicU64,
}

impl DiskBudget {
    pub fn new(limit: u64) -> Arc<DiskBudget> {
        Arc::new(DiskBudget {
            limit,
            used: AtomicU64::new(0),
        })
    }

    /// Bytes of temporary files in use now.
    pub fn used(&self) -> u64 {
        self.used.load(Ordering::Relaxed)
    }

    fn reserve(&self, n: u64) -> bool {
        self.used
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |used| {
                used.checked_add(n).filter(|&total| total <= self.limit)
            })
            .is_ok()
    }

    fn release(&self, n: u64) {
        self.used.fetch_sub(n, Ordering::AcqRel);
    }
}

/// How much one reply may hold.
#[derive(Clone, Debug)]
pub struct SpoolLimits {
    /// Bytes held in memory before the rest goes to disk.
    pub memory: u64,
    /// Bytes of this reply's temporary file (0: none is made).
    pub disk: u64,
    /// The disk all replies share.
    pub budget: Arc<DiskBudget>,
}

/// A spool: the producer's end and the client's.
pub fn spool(limits: SpoolLimits) -> (SpoolWriter, SpoolBody) {
    let shared = Arc::new(Shared {
        state: Mutex::new(State::default()),
        room: Notify::new(),
        budget: limits.budget.clone(),
    });
    let writer = SpoolWriter {
        shared: shared.clone(),
        limits,
        ended: false,
    };
    let body = SpoolBody { shared, read: None };
    (writer, body)
}

#[derive(Debug)]
struct Shared {
    state: Mutex<State>,
    /// Told when the client took bytes or went away.
    room: Notify,
    budget: Arc<DiskBudget>,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock leaves counters only; carry on.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        let reserved = self.lock().reserved;
        self.budget.release(reserved);
    }
}

#[derive(Debug, Default)]
struct State {
    queue: VecDeque<Segment>,
    /// Bytes held in memory segments.
    memory: u64,
    /// Bytes held in file segments.
    in_file: u64,
    file: Option<Arc<File>>,
    /// The file's length in use: where the next spilled bytes go.
    file_end: u64,
    /// Disk taken from the budget: the file's largest length so far.
    reserved: u64,
    /// A read of the file's front is under way.
    reading: bool,
    end: End,
    reader: Option<Waker>,
    reader_gone: bool,
}

impl State {
    fn held(&self) -> u64 {
        self.memory + self.in_file
    }

    fn wake_reader(&mut self) {
        if let Some(w) = self.reader.take() {
            w.wake();
        }
    }
}

#[derive(Debug)]
enum Segment {
    Memory(Bytes),
    File { offset: u64, len: u64 },
}

#[derive(Debug, Default)]
enum End {
    #[default]
    Open,
    Finished,
    /// The reply is cut: the error once, then nothing.
    Failed(Option<BoxError>),
}

/// The producer's end. Dropped without [`SpoolWriter::finish`], the reply
/// is cut (it never looks whole).
#[derive(Debug)]
pub struct SpoolWriter {
    shared: Arc<Shared>,
    limits: SpoolLimits,
    ended: bool,
}

impl SpoolWriter {
    /// Appends `data` without waiting for the client: in memory while
    /// within the memory bound (or when nothing else is held), else on
    /// disk within the disk bounds.
    pub async fn push(&mut self, data: Bytes) -> Result<(), SpoolError> {
        if data.is_empty() {
            return Ok(());
        }
        let len = data.len() as u64;
        let (offset, file) = {
            let mut s = self.shared.lock();
            if s.reader_gone {
                return Err(SpoolError::Gone);
            }
            if s.held() == 0 || s.memory + len <= self.limits.memory {
                s.memory += len;
                s.queue.push_back(Segment::Memory(data));
                s.wake_reader();
                return Ok(());
            }
            // The file is written from its start again once nothing in it
            // is held or being read.
            let offset = if s.in_file == 0 && !s.reading {
                0
            } else {
                s.file_end
            };
            let end = offset + len;
            if end > self.limits.disk {
                return Err(self.full());
            }
            if end > s.reserved {
                if !self.shared.budget.reserve(end - s.reserved) {
                    return Err(SpoolError::DiskBusy);
                }
                s.reserved = end;
            }
            (offset, s.file.clone())
        };
        let file = match file {
            Some(f) => f,
            None => {
                let f = blocking(tempfile::tempfile).await.map(Arc::new)?;
                self.shared.lock().file = Some(f.clone());
                f
            }
        };
        let written = file.clone();
        blocking(move || written.write_all_at(&data, offset)).await?;
        let mut s = self.shared.lock();
        s.file_end = offset + len;
        s.in_file += len;
        s.queue.push_back(Segment::File { offset, len });
        s.wake_reader();
        Ok(())
    }

    /// Waits until the client has taken enough that what is held is under
    /// the memory bound: for a producer that may wait for the client.
    pub async fn room(&self) -> Result<(), SpoolError> {
        loop {
            let notified = self.shared.room.notified();
            {
                let s = self.shared.lock();
                if s.reader_gone {
                    return Err(SpoolError::Gone);
                }
                if s.held() < self.limits.memory.max(1) {
                    return Ok(());
                }
            }
            notified.await;
        }
    }

    /// Bytes held now (not yet taken by the client).
    pub fn held(&self) -> u64 {
        self.shared.lock().held()
    }

    /// The reply is whole: the client's end ends after what is held.
    pub fn finish(mut self) {
        self.end(End::Finished);
    }

    /// The reply is cut: the client's end fails with `error` after what is
    /// held (a client never sees it as whole).
    pub fn fail(mut self, error: BoxError) {
        self.end(End::Failed(Some(error)));
    }

    fn end(&mut self, end: End) {
        self.ended = true;
        let mut s = self.shared.lock();
        s.end = end;
        s.wake_reader();
    }

    fn full(&self) -> SpoolError {
        SpoolError::Full {
            limit: self.limits.memory.saturating_add(self.limits.disk),
        }
    }
}

impl Drop for SpoolWriter {
    fn drop(&mut self) {
        if !self.ended {
            let cut: BoxError = "the reply ended before it was whole".into();
            self.end(End::Failed(Some(cut)));
        }
    }
}

/// The client's end: the bytes in the order they were written.
#[derive(Debug)]
pub struct SpoolBody {
    shared: Arc<Shared>,
    /// A piece being read back from the file.
    read: Option<JoinHandle<io::Result<Bytes>>>,
}

impl SpoolBody {
    /// The piece read back from the file's front segment, taken off it.
    fn took_from_file(&mut self, piece: io::Result<Bytes>) -> Result<Bytes, BoxError> {
        let mut s = self.shared.lock();
        s.reading = false;
        let bytes = piece?;
        let n = bytes.len() as u64;
        if let Some(Segment::File { offset, len }) = s.queue.front_mut() {
            *offset += n;
            *len -= n;
            if *len == 0 {
                s.queue.pop_front();
            }
        }
        s.in_file -= n;
        drop(s);
        self.shared.room.notify_one();
        Ok(bytes)
    }
}

impl http_body::Body for SpoolBody {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        loop {
            if let Some(read) = self.read.as_mut() {
                let joined = ready!(Pin::new(read).poll(cx));
                self.read = None;
                let piece = joined.unwrap_or_else(|e| Err(io::Error::other(e)));
                return Poll::Ready(Some(self.took_from_file(piece).map(Frame::data)));
            }
            let mut s = self.shared.lock();
            match s.queue.pop_front() {
                Some(Segment::Memory(data)) => {
                    s.memory -= data.len() as u64;
                    drop(s);
                    self.shared.room.notify_one();
                    return Poll::Ready(Some(Ok(Frame::data(data))));
                }
                Some(Segment::File { offset, len }) => {
                    // Taken off the segment once it has been read.
                    s.queue.push_front(Segment::File { offset, len });
                    let Some(file) = s.file.clone() else {
                        return Poll::Ready(Some(Err("spooled reply lost its file".into())));
                    };
                    s.reading = true;
                    drop(s);
                    let n = len.min(READ_PIECE) as usize;
                    self.read = Some(tokio::task::spawn_blocking(move || {
                        let mut buf = vec![0; n];
                        file.read_exact_at(&mut buf, offset)?;
                        Ok(Bytes::from(buf))
                    }));
                }
                None => {
                    return match &mut s.end {
                        End::Open => {
                            s.reader = Some(cx.waker().clone());
                            Poll::Pending
                        }
                        End::Finished => Poll::Ready(None),
                        End::Failed(e) => Poll::Ready(e.take().map(Err)),
                    };
                }
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        let s = self.shared.lock();
        s.held() == 0 && matches!(s.end, End::Finished)
    }

    fn size_hint(&self) -> SizeHint {
        let s = self.shared.lock();
        match s.end {
            End::Finished => SizeHint::with_exact(s.held()),
            _ => {
                let mut hint = SizeHint::new();
                hint.set_lower(s.held());
                hint
            }
        }
    }
}

impl Drop for SpoolBody {
    fn drop(&mut self) {
        if let Some(read) = self.read.take() {
            read.abort();
        }
        self.shared.lock().reader_gone = true;
        self.shared.room.notify_one();
    }
}

/// Runs blocking file work on tokio's blocking pool.
async fn blocking<T, F>(f: F) -> Result<T, SpoolError>
where
    F: FnOnce() -> io::Result<T> + Send + 'static,
    T: Send + 'static,
{
    match tokio::task::spawn_blocking(f).await {
        Ok(r) => r.map_err(SpoolError::Disk),
        Err(e) => Err(SpoolError::Disk(io::Error::other(e))),
    }
}

#[cfg(test)]
mod tests;
