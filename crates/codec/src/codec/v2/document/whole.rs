//! A one-pass parser for a small V2 document that is whole in memory (a
//! request body that arrived in one chunk, a binary reply's JSON header):
//! it builds exactly what the streaming parser builds, without its per-token
//! state machine, its captured-value buffers or serde.
//!
//! It accepts only documents it can parse completely and correctly, in the
//! plain forms ([`cursor`]), with tensor `data` converted by the same
//! [`DataParser`] and each tensor checked by the same [`EntryBuilder`].
//! Anything else (an escape, a float outside tensor data, `data` before
//! `datatype`, deep nesting, any error at all) makes it give up with `None`,
//! and the streaming parser reads the document from the start: every error
//! is the streaming parser's. It never fails where the streaming parser
//! would not: the member budget is out of reach for a document smaller than
//! it (see [`fits_budget`]), and every other limit is checked by the
//! streaming parser's own code or taken as a reason to give up.

mod cursor;

use bytes::Bytes;
use serde_json::Value;

use super::EntryBuilder;
use crate::codec::v2::json_data::{DataParser, Progress};
use crate::codec::v2::model::{DocKind, DocLimits, EntryHead, Subject, TensorEntry};
use crate::tensor::{DataType, Shape, element_count};
use cursor::Cursor;

/// Largest input tried: past this, a document that is not whole (a large
/// request's first chunk) or not plain would cost a pass for nothing.
pub(super) const MAX_WHOLE_BYTES: usize = 64 << 10;

/// Deepest nesting of a member value read here (`"outputs": [{...,
/// "parameters": {...}}]` is three); deeper values are left to serde.
const MAX_VALUE_DEPTH: u32 = 4;

/// What the streaming parser holds once it has read the whole document.
#[derive(Debug)]
pub(super) struct Whole {
    pub members: Vec<(String, Value)>,
    pub tensors_at: usize,
    pub tensors: Vec<TensorEntry>,
    pub heads: Vec<EntryHead>,
    /// Tensor `data` values read.
    pub data_values: u64,
}

/// Whether `input` may be a whole document worth trying: small, within the
/// member budget, and ending in `}`.
pub(super) fn worth_trying(input: &[u8], limits: &DocLimits) -> bool {
    let last = input
        .iter()
        .rposition(|b| !matches!(b, b' ' | b'\n' | b'\r' | b'\t'));
    input.len() <= MAX_WHOLE_BYTES
        && fits_budget(input.len(), limits)
        && limits.max_depth >= MAX_VALUE_DEPTH
        && last.is_some_and(|k| input[k] == b'}')
}

/// The member budget charges disjoint bytes of the input (member names and
/// values other than tensor data), and at most one value per byte: a
/// document shorter than both budgets cannot exhaust either.
fn fits_budget(len: usize, limits: &DocLimits) -> bool {
    let len = len as u64;
    len < limits.max_member_bytes && len < limits.max_member_values
}

/// The document in `input`, or `None` to leave it to the streaming parser.
/// With `heads`, the tensor heads are collected for
/// [`DocParser::take_heads`](super::DocParser::take_heads).
pub(super) fn parse(kind: DocKind, limits: &DocLimits, input: &[u8], heads: bool) -> Option<Whole> {
    if !worth_trying(input, limits) {
        return None;
    }
    let mut r = Reader {
        c: Cursor::new(input),
        kind,
        limits,
        heads,
        whole: Whole {
            members: Vec::new(),
            tensors_at: 0,
            // Allocated once at its likely size: growing a vector from
            // nothing costs more than the few bytes this may waste.
            tensors: Vec::with_capacity(4),
            heads: Vec::new(),
            data_values: 0,
        },
    };
    r.document()?;
    Some(r.whole)
}

struct Reader<'a, 'l> {
    c: Cursor<'a>,
    kind: DocKind,
    limits: &'l DocLimits,
    heads: bool,
    whole: Whole,
}

impl Reader<'_, '_> {
    fn document(&mut self) -> Option<()> {
        let mut tensors_seen = false;
        if !self.c.open(b'{', b'}')? {
            return None;
        }
        loop {
            let key = self.c.key()?;
            if key == self.kind.tensors_key().as_bytes() {
                if tensors_seen {
                    return None;
                }
                tensors_seen = true;
                self.whole.tensors_at = self.whole.members.len();
                self.tensor_list()?;
            } else {
                let value = self.c.value(MAX_VALUE_DEPTH)?;
                if self.whole.members.iter().any(|(k, _)| k.as_bytes() == key) {
                    return None;
                }
                let members = &mut self.whole.members;
                if members.capacity() == 0 {
                    *members = Vec::with_capacity(4);
                }
                members.push((Cursor::key_string(key)?, value));
            }
            if !self.c.more(b'}')? {
                break;
            }
        }
        (tensors_seen && self.c.at_end()).then_some(())
    }

    fn tensor_list(&mut self) -> Option<()> {
        if !self.c.open(b'[', b']')? {
            return Some(());
        }
        loop {
            self.tensor(self.whole.tensors.len())?;
            if !self.c.more(b']')? {
                return Some(());
            }
        }
    }

    /// One tensor object, checked as the streaming parser checks it and
    /// appended to the tensors.
    fn tensor(&mut self, index: usize) -> Option<()> {
        let mut entry = EntryBuilder::new(index);
        // Errors are not reported from here, so the subject is never
        // quoted: no need to keep its name up to date.
        let subject = Subject {
            kind: self.kind,
            name: None,
            index,
        };
        if self.c.open(b'{', b'}')? {
            loop {
                let key = self.c.key()?;
                match key {
                    b"name" if entry.name.is_none() => entry.name = Some(self.c.str()?.to_owned()),
                    b"datatype" if entry.datatype.is_none() => {
                        entry.datatype = Some(datatype(self.c.raw_str()?)?);
                    }
                    b"shape" if entry.shape.is_none() => entry.shape = Some(self.shape()?),
                    b"data" => self.data(&mut entry)?,
                    // Every binary reply's outputs carry one: read without
                    // making its name a `String` to match and drop.
                    b"parameters" => {
                        let params = self.c.params(MAX_VALUE_DEPTH)?;
                        entry.set_parameters(params).ok()?;
                    }
                    b"name" | b"datatype" | b"shape" => return None,
                    _ => {
                        let key = Cursor::key_string(key)?;
                        let value = self.c.value(MAX_VALUE_DEPTH)?;
                        entry.set(key, value, &subject, self.limits).ok()?;
                    }
                }
                if !self.c.more(b'}')? {
                    break;
                }
            }
        }
        if !self.heads {
            entry.skip_head();
        }
        let whole = &mut self.whole;
        entry
            .finish_into(subject, self.limits, &mut whole.heads, &mut whole.tensors)
            .ok()
    }

    /// A shape of non-negative dimensions within the limits.
    fn shape(&mut self) -> Option<Shape> {
        let mut dims = Vec::with_capacity(4);
        if self.c.open(b'[', b']')? {
            loop {
                dims.push(u64::try_from(self.c.int()?).ok()?);
                if !self.c.more(b']')? {
                    break;
                }
            }
        }
        let count = element_count(&dims)?;
        (dims.len() <= self.limits.max_dims && count <= self.limits.max_elements)
            .then(|| Shape::new(dims))
    }

    /// A tensor's `data`, once its datatype is known: a flat array of
    /// integers read here, anything else by the streaming parser's
    /// converter.
    fn data(&mut self, entry: &mut EntryBuilder) -> Option<()> {
        let datatype = entry.datatype?;
        if entry.has_data() {
            return None;
        }
        let expected = entry.shape.as_ref().and_then(|s| s.element_count().ok());
        let max = expected.map_or(self.limits.max_elements, |e| {
            e.min(self.limits.max_elements)
        });
        let start = self.c.i;
        let converted = match self.int_array(datatype, max) {
            Some(data) => data,
            None => {
                self.c.i = start;
                self.converted(datatype, expected)?
            }
        };
        self.whole.data_values += 1;
        entry.data = Some((Bytes::from(converted.0), converted.1));
        Some(())
    }

    /// `data` as the streaming parser converts it.
    fn converted(&mut self, datatype: DataType, expected: Option<u64>) -> Option<(Vec<u8>, u64)> {
        let mut parser = DataParser::new(
            datatype,
            expected,
            self.limits.max_elements,
            self.limits.max_depth,
        );
        self.c.ws();
        let Ok(Progress::Done(used)) = parser.parse(self.c.rest(), false) else {
            return None;
        };
        self.c.i += used;
        Some(parser.into_data())
    }

    /// A flat array of at most `max` integers, each in the range of an
    /// integer `datatype`, in the V2 binary layout: what [`DataParser`]
    /// makes of it, element for element (the tests hold it to that).
    fn int_array(&mut self, datatype: DataType, max: u64) -> Option<(Vec<u8>, u64)> {
        match datatype {
            DataType::I8 => self.ints(max, |v| i8::try_from(v).ok().map(i8::to_le_bytes)),
            DataType::I16 => self.ints(max, |v| i16::try_from(v).ok().map(i16::to_le_bytes)),
            DataType::I32 => self.ints(max, |v| i32::try_from(v).ok().map(i32::to_le_bytes)),
            DataType::I64 => self.ints(max, |v| Some(v.to_le_bytes())),
            DataType::U8 => self.ints(max, |v| u8::try_from(v).ok().map(u8::to_le_bytes)),
            DataType::U16 => self.ints(max, |v| u16::try_from(v).ok().map(u16::to_le_bytes)),
            DataType::U32 => self.ints(max, |v| u32::try_from(v).ok().map(u32::to_le_bytes)),
            DataType::U64 => self.ints(max, |v| u64::try_from(v).ok().map(u64::to_le_bytes)),
            _ => None,
        }
    }

    #[inline]
    fn ints<const N: usize>(
        &mut self,
        max: u64,
        element: impl Fn(i64) -> Option<[u8; N]>,
    ) -> Option<(Vec<u8>, u64)> {
        // Every element takes two bytes of the input at least.
        let room = (self.c.rest().len() as u64 / 2).min(max);
        let mut out = Vec::with_capacity(room as usize * N);
        let mut count = 0;
        if self.c.open(b'[', b']')? {
            loop {
                if count == room {
                    return None;
                }
                out.extend_from_slice(&element(self.c.int()?)?);
                count += 1;
                if !self.c.more(b']')? {
                    break;
                }
            }
        }
        Some((out, count))
    }
}

/// The datatype a V2 name (`"INT32"`) names.
fn datatype(name: &[u8]) -> Option<DataType> {
    Some(match name {
        b"BOOL" => DataType::Bool,
        b"UINT8" => DataType::U8,
        b"UINT16" => DataType::U16,
        b"UINT32" => DataType::U32,
        b"UINT64" => DataType::U64,
        b"INT8" => DataType::I8,
        b"INT16" => DataType::I16,
        b"INT32" => DataType::I32,
        b"INT64" => DataType::I64,
        b"FP16" => DataType::F16,
        b"BF16" => DataType::BF16,
        b"FP32" => DataType::F32,
        b"FP64" => DataType::F64,
        b"BYTES" => DataType::Bytes,
        _ => return None,
    })
}

#[cfg(test)]
mod tests;
