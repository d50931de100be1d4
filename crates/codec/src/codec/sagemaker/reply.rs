//! Reply bodies from the backend's outputs for a batch of records.
//!
//! The caller hands over, per batch of N records, each output's name, data
//! type, shape `[N, ...]` and data in the V2 binary layout (BYTES elements
//! as a u32 LE length and the bytes). Each record's reply holds that
//! record's row of every output, in the order given:
//! - JSON: `{"predictions":[{"name":row,...},...]}`, written in pieces
//!   ([`ReplyWriter::open`], one [`ReplyWriter::write_batch`] per batch,
//!   [`ReplyWriter::close`]); a `[N]` output gives a scalar, `[N,K]` a list,
//!   deeper shapes nested lists. Floats as the rest of the crate writes them
//!   (shortest round-trip text of their own type, NaN and infinities as the
//!   strings `"NaN"`, `"Infinity"`, `"-Infinity"`), BOOL as `true`/`false`,
//!   BYTES as strings (UTF-8 only).
//! - JSON Lines: the same objects, one per line, each line ending in `\n`.
//! - CSV: one line per record, `\n`-terminated, the rows of all outputs
//!   flattened into one list of fields. Floats as in JSON but non-finite as
//!   `nan`, `inf`, `-inf` (what Python's `float()` and numpy read back),
//!   BOOL as `1`/`0`, BYTES per RFC 4180 (quoted when they hold a comma, a
//!   quote or a line break, or are empty, so an empty field never makes a
//!   blank line).

mod csv;
mod json;

use crate::tensor::{BytesElements, BytesLayoutError, DataType, Shape};

use super::media::ReplyFormat;

/// One output of a batch, as the backend returned it.
#[derive(Clone, Copy, Debug)]
pub struct OutputRef<'a> {
    pub name: &'a str,
    pub dtype: DataType,
    /// `[N, ...]`: the first dimension is the batch's record count.
    pub shape: &'a [u64],
    pub data: &'a [u8],
}

/// Outputs that cannot be written as the reply.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ReplyError {
    #[error("the backend returned no outputs")]
    NoOutputs,
    #[error(
        "output {name:?} has shape {shape}; a reply needs the record dimension first ({records} records)"
    )]
    Records {
        name: String,
        shape: Shape,
        records: usize,
    },
    #[error("output {name:?}: {dtype} data of shape {shape} needs {expected} bytes, got {actual}")]
    DataSize {
        name: String,
        dtype: DataType,
        shape: Shape,
        expected: u64,
        actual: u64,
    },
    #[error("output {name:?}: {error}")]
    BytesLayout {
        name: String,
        #[source]
        error: BytesLayoutError,
    },
    #[error(
        "output {name:?}, record {record}: a BYTES element is not valid UTF-8 and cannot be written as text"
    )]
    NotUtf8 { name: String, record: u64 },
}

/// An output checked and cut into per-record rows.
#[derive(Debug)]
struct Column<'a> {
    name: &'a str,
    dtype: DataType,
    /// The shape of one record's row.
    dims: &'a [u64],
    data: &'a [u8],
    /// Byte offset of each record's row, and the end.
    bounds: Vec<usize>,
}

impl<'a> Column<'a> {
    fn new(out: &OutputRef<'a>, records: usize) -> Result<Self, ReplyError> {
        let shape = || Shape::new(out.shape.to_vec());
        let Some((&n, dims)) = out
            .shape
            .split_first()
            .filter(|(n, _)| **n == records as u64)
        else {
            return Err(ReplyError::Records {
                name: out.name.to_owned(),
                shape: shape(),
                records,
            });
        };
        let per_row = crate::tensor::element_count(dims);
        let count = per_row.and_then(|k| k.checked_mul(n));
        let bounds = match (out.dtype.fixed_size(), per_row, count) {
            (Some(size), Some(k), Some(count)) => {
                let row = (k as usize).checked_mul(size);
                if count.checked_mul(size as u64) != Some(out.data.len() as u64) || row.is_none() {
                    return Err(size_error(out, shape(), count.saturating_mul(size as u64)));
                }
                let row = row.unwrap_or(0);
                (0..=records).map(|r| r * row).collect()
            }
            (None, Some(k), Some(_)) => bytes_bounds(out, k, records)?,
            _ => return Err(size_error(out, shape(), u64::MAX)),
        };
        Ok(Column {
            name: out.name,
            dtype: out.dtype,
            dims,
            data: out.data,
            bounds,
        })
    }

    fn row(&self, record: usize) -> &'a [u8] {
        &self.data[self.bounds[record]..self.bounds[record + 1]]
    }

    fn not_utf8(&self, record: usize) -> ReplyError {
        ReplyError::NotUtf8 {
            name: self.name.to_owned(),
            record: record as u64,
        }
    }
}

fn size_error(out: &OutputRef<'_>, shape: Shape, expected: u64) -> ReplyError {
    ReplyError::DataSize {
        name: out.name.to_owned(),
        dtype: out.dtype,
        shape,
        expected,
        actual: out.data.len() as u64,
    }
}

/// Row boundaries of BYTES data holding `records` rows of `per_row`
/// elements, checking the layout.
fn bytes_bounds(
    out: &OutputRef<'_>,
    per_row: u64,
    records: usize,
) -> Result<Vec<usize>, ReplyError> {
    let layout = |error| ReplyError::BytesLayout {
        name: out.name.to_owned(),
        error,
    };
    let expected = per_row.saturating_mul(records as u64);
    let mut bounds = Vec::with_capacity(records + 1);
    bounds.push(0);
    let mut found = 0u64;
    let mut offset = 0usize;
    for element in BytesElements::new(out.data) {
        let element = element.map_err(layout)?;
        offset += 4 + element.len();
        found += 1;
        if found <= expected && found.is_multiple_of(per_row.max(1)) {
            bounds.push(offset);
        }
    }
    if found != expected {
        return Err(layout(BytesLayoutError::CountMismatch { expected, found }));
    }
    // Rows of no elements all end where they start.
    bounds.resize(records + 1, offset);
    Ok(bounds)
}

/// Writes the reply body in pieces: `open`, one `write_batch` per batch of
/// records, `close` (all three for every format).
#[derive(Debug)]
pub struct ReplyWriter {
    format: ReplyFormat,
    records: u64,
}

impl ReplyWriter {
    pub fn new(format: ReplyFormat) -> Self {
        ReplyWriter { format, records: 0 }
    }

    /// Records written so far.
    pub fn records(&self) -> u64 {
        self.records
    }

    /// The start of the body (`{"predictions":[` for JSON).
    pub fn open(&mut self, out: &mut Vec<u8>) {
        if self.format == ReplyFormat::Json {
            out.extend_from_slice(b"{\"predictions\":[");
        }
    }

    /// Appends the replies of one batch of `records` records. On error
    /// nothing is appended.
    pub fn write_batch(
        &mut self,
        records: usize,
        outputs: &[OutputRef<'_>],
        out: &mut Vec<u8>,
    ) -> Result<(), ReplyError> {
        if outputs.is_empty() {
            return Err(ReplyError::NoOutputs);
        }
        let columns = outputs
            .iter()
            .map(|o| Column::new(o, records))
            .collect::<Result<Vec<_>, _>>()?;
        let mark = out.len();
        let result = match self.format {
            ReplyFormat::Json => json::records(&columns, records, self.records > 0, false, out),
            ReplyFormat::JsonLines => json::records(&columns, records, false, true, out),
            ReplyFormat::Csv => csv::records(&columns, records, out),
        };
        match result {
            Ok(()) => {
                self.records += records as u64;
                Ok(())
            }
            Err(e) => {
                out.truncate(mark);
                Err(e)
            }
        }
    }

    /// The end of the body (`]}` for JSON).
    pub fn close(&mut self, out: &mut Vec<u8>) {
        if self.format == ReplyFormat::Json {
            out.extend_from_slice(b"]}");
        }
    }
}

#[cfg(test)]
mod tests;
