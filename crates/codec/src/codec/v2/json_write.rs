//! Binary tensor data -> V2 JSON text, written incrementally.
//!
//! [`ValueWriter`] turns the bytes of one tensor, arriving in pieces of any
//! size, into the comma-separated values of its JSON `"data"` array.
//! [`DocWriter`] writes the rest of the document around it: members, tensor
//! heads and parameters. Output is flat (row-major), as Triton writes it.
//!
//! **Non-finite floats**: JSON has no NaN or infinities. They are written as
//! the strings `"NaN"`, `"Infinity"` and `"-Infinity"` (the spelling the JSON
//! -> binary direction accepts back), so a response never becomes invalid
//! JSON and round-trips exactly.

use half::{bf16, f16};
use serde_json::Value;

use super::model::{Document, EntryData, Params, TensorEntry};
use super::strings::{is_plain_ascii, write_json_string};
use batch::{Batch, TextOut};

mod batch;
mod f32_text;
use crate::tensor::DataType;

/// Binary data could not be written as JSON.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum WriteError {
    #[error(
        "BYTES element {index} is not valid UTF-8 and cannot be a JSON string; request this tensor as binary data"
    )]
    NotUtf8 { index: u64 },
    #[error("data ends inside element {index}: {missing} more bytes were expected")]
    Truncated { index: u64, missing: u64 },
}

#[derive(Debug)]
enum BytesState {
    Length { got: usize, buf: [u8; 4] },
    Body { need: usize, buf: Vec<u8> },
}

/// The longest text of one element of `dtype`, its comma included: a
/// float's 24 bytes (and a guess for BYTES), an integer's widest value.
/// Sized per type, a small integer reply's buffer stays within the
/// allocator's small sizes (1 KiB for mimalloc, whose larger blocks take
/// a slower path).
const fn max_element_text(dtype: DataType) -> usize {
    match dtype {
        DataType::Bool => "false,".len(),
        DataType::U8 => "255,".len(),
        DataType::I8 => "-128,".len(),
        DataType::U16 => "65535,".len(),
        DataType::I16 => "-32768,".len(),
        DataType::U32 => "4294967295,".len(),
        DataType::I32 => "-2147483648,".len(),
        DataType::U64 => "18446744073709551615,".len(),
        DataType::I64 => "-9223372036854775808,".len(),
        DataType::F16 | DataType::BF16 | DataType::F32 | DataType::F64 | DataType::Bytes => 25,
    }
}

/// Writes one tensor's binary data as JSON values.
#[derive(Debug)]
pub struct ValueWriter {
    dtype: DataType,
    carry: [u8; 8],
    carry_len: usize,
    count: u64,
    /// Writes for elements after another writer's: a comma before its
    /// first element too (see [`ValueWriter::split`]).
    continued: bool,
    bytes: BytesState,
}

impl ValueWriter {
    pub fn new(dtype: DataType) -> Self {
        ValueWriter {
            dtype,
            carry: [0; 8],
            carry_len: 0,
            count: 0,
            continued: false,
            bytes: BytesState::Length {
                got: 0,
                buf: [0; 4],
            },
        }
    }

    /// Whether an element has been written before the next one (which then
    /// takes a comma).
    #[inline]
    fn started(&self) -> bool {
        self.count > 0 || self.continued
    }

    /// Where to cut `data`, a piece this writer is to write next, so its
    /// halves can be written at the same time: `Some((mid, end))` when the
    /// type has a fixed size and the piece holds at least two whole
    /// elements. This writer writes `data[..mid]` (finishing any element
    /// the previous piece cut, and ending on an element boundary); a
    /// [`continuation`](Self::continuation) writes `data[mid..end]`, whole
    /// elements; its text follows this writer's, and after
    /// [`absorb`](Self::absorb)ing it this writer goes on with
    /// `data[end..]` (at most a partial element). The text is the same as
    /// one `write` of `data`.
    pub fn split(&self, data: &[u8]) -> Option<(usize, usize)> {
        let size = self.dtype.fixed_size()?;
        let first = (size - self.carry_len) % size;
        let whole = data.len().checked_sub(first)? / size;
        if whole < 2 {
            return None;
        }
        // The first half holds at least one element: the continuation's
        // text starts with a comma.
        let mid = first + (whole / 2) * size;
        Some((mid, first + whole * size))
    }

    /// A writer for the whole elements that follow this writer's (see
    /// [`split`](Self::split)).
    pub fn continuation(&self) -> ValueWriter {
        ValueWriter {
            continued: true,
            ..ValueWriter::new(self.dtype)
        }
    }

    /// Counts the elements a [`continuation`](Self::continuation) of this
    /// writer wrote, whose text has been appended after this writer's.
    pub fn absorb(&mut self, later: &ValueWriter) {
        debug_assert!(later.continued && self.carry_len == 0 && later.carry_len == 0);
        self.count += later.count;
    }

    pub fn datatype(&self) -> DataType {
        self.dtype
    }

    /// Elements written so far.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// Writes the values encoded in `data` (continuing any element cut by the
    /// previous piece).
    pub fn write(&mut self, data: &[u8], out: &mut Vec<u8>) -> Result<(), WriteError> {
        match self.dtype {
            DataType::Bool => self.fixed::<1, _>(data, out, |b, o| {
                o.extend_from_slice(if b[0] != 0 { b"true" } else { b"false" })
            }),
            DataType::U8 => self.fixed::<1, _>(data, out, |b, o| int_text(o, b[0])),
            DataType::I8 => self.fixed::<1, _>(data, out, |b, o| int_text(o, b[0] as i8)),
            DataType::U16 => {
                self.fixed::<2, _>(data, out, |b, o| int_text(o, u16::from_le_bytes(b)))
            }
            DataType::I16 => {
                self.fixed::<2, _>(data, out, |b, o| int_text(o, i16::from_le_bytes(b)))
            }
            DataType::U32 => {
                self.fixed::<4, _>(data, out, |b, o| int_text(o, u32::from_le_bytes(b)))
            }
            DataType::I32 => {
                self.fixed::<4, _>(data, out, |b, o| int_text(o, i32::from_le_bytes(b)))
            }
            DataType::U64 => {
                self.fixed::<8, _>(data, out, |b, o| int_text(o, u64::from_le_bytes(b)))
            }
            DataType::I64 => {
                self.fixed::<8, _>(data, out, |b, o| int_text(o, i64::from_le_bytes(b)))
            }
            // Float texts are gathered in a batch: see `batch`.
            DataType::F16 => self.fixed::<2, _>(data, &mut Batch::new(out), |b, o| {
                widened_half(o, f16::from_le_bytes(b).to_f32())
            }),
            DataType::BF16 => self.fixed::<2, _>(data, &mut Batch::new(out), |b, o| {
                widened_half(o, bf16::from_le_bytes(b).to_f32())
            }),
            DataType::F32 => self.fixed::<4, _>(data, &mut Batch::new(out), |b, o| {
                float32(o, f32::from_le_bytes(b))
            }),
            DataType::F64 => self.fixed::<8, _>(data, &mut Batch::new(out), |b, o| {
                float(o, f64::from_le_bytes(b))
            }),
            DataType::Bytes => return self.bytes(data, out),
        }
        Ok(())
    }

    /// Checks that the data ended on an element boundary; returns the count.
    pub fn finish(&self) -> Result<u64, WriteError> {
        let missing = match (&self.bytes, self.dtype.fixed_size()) {
            (_, Some(size)) if self.carry_len > 0 => (size - self.carry_len) as u64,
            (BytesState::Length { got, .. }, None) if *got > 0 => (4 - got) as u64,
            (BytesState::Body { need, buf }, None) => (need - buf.len()) as u64,
            _ => return Ok(self.count),
        };
        Err(WriteError::Truncated {
            index: self.count,
            missing,
        })
    }

    #[inline]
    fn sep(&mut self, out: &mut Vec<u8>) {
        if self.started() {
            out.push(b',');
        }
        self.count += 1;
    }

    #[inline]
    /// The most text [`write`](Self::write) appends for `len` bytes of a
    /// fixed-size type (BYTES: unbounded, so only a guess). No output
    /// buffer of that capacity is reallocated by `write`.
    pub fn max_text_len(dtype: DataType, len: usize) -> usize {
        // Plus one element carried in from the previous piece.
        (len / dtype.fixed_size().unwrap_or(4) + 1) * max_element_text(dtype)
    }

    fn fixed<const N: usize, T: TextOut>(
        &mut self,
        mut data: &[u8],
        batch: &mut T,
        f: impl Fn([u8; N], &mut T),
    ) {
        batch.reserve((data.len() / N) * max_element_text(self.dtype));
        if self.carry_len > 0 {
            let take = (N - self.carry_len).min(data.len());
            self.carry[self.carry_len..self.carry_len + take].copy_from_slice(&data[..take]);
            self.carry_len += take;
            data = &data[take..];
            if self.carry_len < N {
                return;
            }
            let mut b = [0u8; N];
            b.copy_from_slice(&self.carry[..N]);
            self.carry_len = 0;
            if self.started() {
                batch.byte(b',');
            }
            self.count += 1;
            f(b, batch);
        }
        if !self.started()
            && let Some((first, _)) = data.split_first_chunk::<N>()
        {
            self.count = 1;
            f(*first, batch);
            data = &data[N..];
        }
        let chunks = data.chunks_exact(N);
        let rest = chunks.remainder();
        self.count += chunks.len() as u64;
        for c in chunks {
            batch.byte(b',');
            let mut b = [0u8; N];
            b.copy_from_slice(c);
            f(b, batch);
        }
        self.carry[..rest.len()].copy_from_slice(rest);
        self.carry_len = rest.len();
    }

    fn bytes(&mut self, mut data: &[u8], out: &mut Vec<u8>) -> Result<(), WriteError> {
        // Fast path: whole elements at an element boundary, no state kept.
        if let BytesState::Length { got: 0, .. } = self.bytes {
            out.reserve(data.len() + data.len() / 4);
            while let Some((len, rest)) = data.split_first_chunk::<4>() {
                let len = u32::from_le_bytes(*len) as usize;
                let Some((element, rest)) = rest.split_at_checked(len) else {
                    break;
                };
                if is_plain_ascii(element) {
                    // Most text: quoted as it is.
                    if self.started() {
                        out.push(b',');
                    }
                    self.count += 1;
                    out.push(b'"');
                    out.extend_from_slice(element);
                    out.push(b'"');
                } else {
                    self.string_element(element, out)?;
                }
                data = rest;
            }
        }
        while !data.is_empty() {
            match &mut self.bytes {
                BytesState::Length { got, buf } => {
                    let take = (4 - *got).min(data.len());
                    buf[*got..*got + take].copy_from_slice(&data[..take]);
                    *got += take;
                    data = &data[take..];
                    if *got == 4 {
                        let need = u32::from_le_bytes(*buf) as usize;
                        self.bytes = BytesState::Body {
                            need,
                            buf: Vec::new(),
                        };
                        self.flush_bytes_element(&[], out)?;
                    }
                }
                BytesState::Body { need, buf } => {
                    let missing = *need - buf.len();
                    if buf.is_empty() && data.len() >= missing {
                        // The whole element is in this piece: no copy.
                        let (element, rest) = data.split_at(missing);
                        data = rest;
                        self.flush_bytes_element(element, out)?;
                    } else {
                        let take = missing.min(data.len());
                        buf.extend_from_slice(&data[..take]);
                        data = &data[take..];
                        let element = std::mem::take(buf);
                        if element.len() == *need {
                            self.flush_bytes_element(&element, out)?;
                        } else {
                            *buf = element;
                        }
                    }
                }
            }
        }
        Ok(())
    }

    /// Writes the element once complete (`element` is all of it, or empty
    /// while the state still has bytes to collect).
    fn flush_bytes_element(&mut self, element: &[u8], out: &mut Vec<u8>) -> Result<(), WriteError> {
        let BytesState::Body { need, .. } = self.bytes else {
            return Ok(());
        };
        if element.len() != need {
            return Ok(());
        }
        self.string_element(element, out)?;
        self.bytes = BytesState::Length {
            got: 0,
            buf: [0; 4],
        };
        Ok(())
    }

    /// Writes one complete BYTES element as a JSON string.
    #[inline]
    fn string_element(&mut self, element: &[u8], out: &mut Vec<u8>) -> Result<(), WriteError> {
        // ASCII (checked a word at a time) is UTF-8 without the full check.
        if !element.is_ascii() && std::str::from_utf8(element).is_err() {
            return Err(WriteError::NotUtf8 { index: self.count });
        }
        self.sep(out);
        write_json_string(element, out);
        Ok(())
    }
}

#[inline(always)]
fn int_text<I: itoa::Integer + TryInto<u8>>(out: &mut Vec<u8>, v: I) {
    int(out, v);
}

/// The decimal text of `v`. Values below 100 (most of a small integer
/// tensor's: labels, masks, counts, and most shape dimensions) are written
/// as one or two bytes of a known length; the rest by `itoa`, whose text
/// is copied out of its buffer with a `memcpy` call, more than the
/// formatting of a small value costs.
#[inline]
fn int<I: itoa::Integer + TryInto<u8>>(out: &mut Vec<u8>, v: I) {
    match v.try_into() {
        Ok(small @ 0..=9) => out.push(b'0' + small),
        Ok(small @ 10..=99) => out.extend_from_slice(&[b'0' + small / 10, b'0' + small % 10]),
        _ => out.extend_from_slice(itoa::Buffer::new().format(v).as_bytes()),
    }
}

trait JsonFloat: zmij::Float + Copy {
    fn is_finite_(self) -> bool;
    fn is_nan_(self) -> bool;
    fn is_positive_(self) -> bool;
}

impl JsonFloat for f32 {
    fn is_finite_(self) -> bool {
        self.is_finite()
    }
    fn is_nan_(self) -> bool {
        self.is_nan()
    }
    fn is_positive_(self) -> bool {
        self.is_sign_positive()
    }
}

impl JsonFloat for f64 {
    fn is_finite_(self) -> bool {
        self.is_finite()
    }
    fn is_nan_(self) -> bool {
        self.is_nan()
    }
    fn is_positive_(self) -> bool {
        self.is_sign_positive()
    }
}

/// FP32 text that every JSON reader of FP32 turns back into `v`. Readers
/// round twice (nearest double, then nearest float: Triton, numpy and
/// [`super::number::parse_f32`]), and a float's shortest digits can lie so
/// close to the midpoint with its neighbour that their nearest double *is*
/// that midpoint, which then rounds to the neighbour. Over all 2^32 floats
/// this happens for one magnitude only, 7.038531e-26 (bits `0x15ae43fd`):
/// so values outside [1e-3, 1e9) are read back, and one that does not come
/// back is written as its widened double's shortest text, exact by
/// construction (what Triton writes for every FP32 value).
#[inline(always)]
fn float32(out: &mut Batch<'_>, v: f32) {
    if f32_text::covers(v) {
        return out.put(|room| f32_text::write(v, room));
    }
    if !v.is_finite() {
        return float(out, v);
    }
    finite_f32_text(v, |text| out.push(text));
}

/// An FP16 or BF16 value, written as the shortest text of its FP32
/// widening (no FP16 or BF16 value is the one magnitude `float32` reads
/// back, so that check is not needed).
#[inline(always)]
fn widened_half(out: &mut Batch<'_>, v: f32) {
    if f32_text::covers(v) {
        return out.put(|room| f32_text::write(v, room));
    }
    float(out, v)
}

/// Calls `f` with the text [`ValueWriter`] writes for the finite FP32 value
/// `v`: its shortest round-trip digits, or (for the one magnitude whose
/// shortest digits FP32 readers round to the neighbour, see `float32`) its
/// widened double's. Shared with writers of other text formats (SageMaker
/// CSV), which spell non-finite values their own way.
#[inline(always)]
pub fn finite_f32_text<R>(v: f32, f: impl FnOnce(&[u8]) -> R) -> R {
    if f32_text::covers(v) {
        let mut room = [0u8; f32_text::ROOM];
        let n = f32_text::write(v, &mut room);
        return f(&room[..n]);
    }
    let mut buf = zmij::Buffer::new();
    let text = buf.format_finite(v).as_bytes();
    if (1e-3..1e9).contains(&v.abs()) {
        return f(text);
    }
    let back = super::number::parse_f32(text, true);
    if matches!(back, Ok(Some((g, _))) if g.to_bits() == v.to_bits()) {
        f(text)
    } else {
        f(zmij::Buffer::new().format_finite(f64::from(v)).as_bytes())
    }
}

/// Calls `f` with the shortest round-trip text of the finite FP64 value
/// `v`, as [`ValueWriter`] writes it.
#[inline(always)]
pub fn finite_f64_text<R>(v: f64, f: impl FnOnce(&[u8]) -> R) -> R {
    f(zmij::Buffer::new().format_finite(v).as_bytes())
}

/// Shortest round-trip text of `v` (as its own type), or the string form of
/// a non-finite value.
#[inline(always)]
fn float<F: JsonFloat>(out: &mut Batch<'_>, v: F) {
    if v.is_finite_() {
        out.push(zmij::Buffer::new().format_finite(v).as_bytes());
    } else if v.is_nan_() {
        out.push(b"\"NaN\"");
    } else if v.is_positive_() {
        out.push(b"\"Infinity\"");
    } else {
        out.push(b"\"-Infinity\"");
    }
}

/// How a tensor appears in the document being written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TensorForm {
    /// Head and parameters only; `binary_data_size` is set to this size and
    /// the data follows the header.
    Binary(u64),
    /// A `"data"` array follows the head; the caller writes the values
    /// between [`DocWriter::tensor_open`] and [`DocWriter::tensor_close`].
    Json,
    /// Passed through as it came (shared memory).
    AsIs,
}

/// Writes a [`Document`] as JSON, piece by piece, so that tensor values can
/// be streamed in between. It holds no borrow of the document, so it can live
/// in a streaming body beside the document it writes.
#[derive(Debug, Default)]
pub struct DocWriter {
    written: usize,
}

impl DocWriter {
    pub fn new() -> Self {
        DocWriter { written: 0 }
    }

    /// `{`, the members before the tensor list, and the list's opening.
    pub fn open(&self, doc: &Document, out: &mut Vec<u8>) {
        out.push(b'{');
        for (i, (k, v)) in doc.members[..doc.tensors_at].iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            member(out, k, v);
        }
        if doc.tensors_at > 0 {
            out.push(b',');
        }
        write_json_string(doc.kind.tensors_key().as_bytes(), out);
        out.extend_from_slice(b":[");
    }

    /// A tensor's head, and `"data":[` for [`TensorForm::Json`].
    pub fn tensor_open(&mut self, entry: &TensorEntry, form: TensorForm, out: &mut Vec<u8>) {
        if self.written > 0 {
            out.push(b',');
        }
        self.written += 1;
        out.extend_from_slice(b"{\"name\":");
        write_json_string(entry.name.as_bytes(), out);
        out.extend_from_slice(b",\"datatype\":\"");
        out.extend_from_slice(entry.datatype.v2_name().as_bytes());
        out.extend_from_slice(b"\",\"shape\":[");
        for (i, d) in entry.shape.dims().iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            int(out, *d);
        }
        out.push(b']');
        for (k, v) in &entry.extra {
            out.push(b',');
            member(out, k, v);
        }
        write_parameters(&entry.parameters, form, out);
        match form {
            TensorForm::Json => out.extend_from_slice(b",\"data\":["),
            TensorForm::Binary(_) | TensorForm::AsIs => out.push(b'}'),
        }
    }

    /// Closes a [`TensorForm::Json`] tensor.
    pub fn tensor_close(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(b"]}");
    }

    /// Closes the tensor list, writes the remaining members and `}`.
    pub fn close(&self, doc: &Document, out: &mut Vec<u8>) {
        out.push(b']');
        for (k, v) in &doc.members[doc.tensors_at..] {
            out.push(b',');
            member(out, k, v);
        }
        out.push(b'}');
    }
}

/// The parameter `binary_data_size`, which says where a tensor's data is.
const BINARY_DATA_SIZE: &str = "binary_data_size";

/// A tensor's `"parameters"` member as `form` has it (nothing when none is
/// left): for [`TensorForm::Binary`], `binary_data_size` set to the size
/// (in its place, or last); for [`TensorForm::Json`], removed the way
/// `serde_json::Map::remove` removes (the last parameter takes its place).
/// Written from the tensor's own map: copying the map to change one entry
/// cost more than the rest of the tensor's head.
fn write_parameters(params: &Params, form: TensorForm, out: &mut Vec<u8>) {
    let mut w = ParamWriter { out, any: false };
    let at = params.keys().position(|k| k == BINARY_DATA_SIZE);
    match (form, at) {
        (TensorForm::Binary(size), _) => {
            for (k, v) in params {
                match k.as_str() {
                    BINARY_DATA_SIZE => w.size(k, size),
                    _ => w.value(k, v),
                }
            }
            if at.is_none() {
                w.size(BINARY_DATA_SIZE, size);
            }
        }
        (TensorForm::Json, Some(at)) => {
            let last = params.len() - 1;
            let moved = params.iter().next_back();
            for (i, (k, v)) in params.iter().enumerate().take(last) {
                match moved {
                    Some((mk, mv)) if i == at => w.value(mk, mv),
                    _ => w.value(k, v),
                }
            }
        }
        (TensorForm::Json | TensorForm::AsIs, _) => {
            for (k, v) in params {
                w.value(k, v);
            }
        }
    }
    if w.any {
        w.out.push(b'}');
    }
}

/// Writes the entries of a `"parameters"` object, opening it before the
/// first.
struct ParamWriter<'a> {
    out: &'a mut Vec<u8>,
    any: bool,
}

impl ParamWriter<'_> {
    fn key(&mut self, key: &str) {
        let out = &mut *self.out;
        if self.any {
            out.push(b',');
        } else {
            out.extend_from_slice(b",\"parameters\":{");
            self.any = true;
        }
        if is_plain_ascii(key.as_bytes()) {
            out.push(b'"');
            out.extend_from_slice(key.as_bytes());
            out.push(b'"');
        } else {
            let _ = serde_json::to_writer(&mut *out, key);
        }
        out.push(b':');
    }

    fn value(&mut self, key: &str, value: &Value) {
        self.key(key);
        let _ = serde_json::to_writer(&mut *self.out, value);
    }

    fn size(&mut self, key: &str, size: u64) {
        self.key(key);
        int(self.out, size);
    }
}

fn member(out: &mut Vec<u8>, key: &str, value: &Value) {
    write_json_string(key.as_bytes(), out);
    out.push(b':');
    match value {
        // The same text as serde's (the string tests hold it to that),
        // without its serializer: most members are strings
        // (`model_name`, `model_version`, `id`).
        Value::String(s) => write_json_string(s.as_bytes(), out),
        _ => {
            let _ = serde_json::to_writer(&mut *out, value);
        }
    }
}

/// Writes a whole document whose tensor data is all at hand: `data` gives
/// each tensor's binary bytes (JSON-converted or read from the body) and
/// `form` how to write it. For JSON tensors the values are written inline;
/// binary tensors' bytes are the caller's to append after the header.
pub fn write_document(
    doc: &Document,
    mut form: impl FnMut(usize, &TensorEntry) -> TensorForm,
    mut data: impl FnMut(usize, &TensorEntry) -> Option<bytes::Bytes>,
    out: &mut Vec<u8>,
) -> Result<(), (usize, WriteError)> {
    let mut w = DocWriter::new();
    w.open(doc, out);
    for (i, entry) in doc.tensors.iter().enumerate() {
        let f = form(i, entry);
        w.tensor_open(entry, f, out);
        if f == TensorForm::Json {
            let mut vw = ValueWriter::new(entry.datatype);
            if let Some(bytes) = data(i, entry) {
                vw.write(&bytes, out).map_err(|e| (i, e))?;
            }
            vw.finish().map_err(|e| (i, e))?;
            w.tensor_close(out);
        }
    }
    w.close(doc, out);
    Ok(())
}

/// The data of an entry when it is already in hand (converted JSON data).
pub fn inline_data(entry: &TensorEntry) -> Option<bytes::Bytes> {
    match &entry.data {
        EntryData::Inline { data, .. } => Some(data.clone()),
        _ => None,
    }
}

#[cfg(test)]
mod tests;
