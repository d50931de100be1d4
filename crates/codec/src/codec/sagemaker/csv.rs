//! `text/csv` requests: one record per line, features separated by commas.
//!
//! A field is a number in any spelling [`super::value`] reads, optionally
//! surrounded by blanks and by RFC 4180 double quotes (`"1.5"`). There is
//! no header line. Numbers are read straight from the line; only a field the
//! fast number path does not take is delimited and read again.

use super::batch::{Batch, DecodeConfig, Rows};
use super::error::{ConfigError, Location, RecordError};
use super::lines::{LineDecoder, LineRecord};
use super::value::{Elem, value_error};

/// Decodes a CSV body fed in chunks into batches.
///
/// Feed each chunk with [`CsvDecoder::feed`], then call
/// [`CsvDecoder::next_batch`] until it returns `Ok(None)`; after the last
/// chunk call [`CsvDecoder::finish`] until it returns `Ok(None)`. The
/// first error is final: every later call returns it again.
#[derive(Debug)]
pub struct CsvDecoder(LineDecoder<Csv>);

/// A CSV line: one record of comma-separated fields.
#[derive(Debug)]
pub(super) struct Csv;

impl LineRecord for Csv {
    fn read<T: Elem>(line: &[u8], rows: &mut Rows, at: Location) -> Result<(), RecordError> {
        row::<T>(line, rows, at)
    }
}

impl CsvDecoder {
    pub fn new(config: &DecodeConfig) -> Result<Self, ConfigError> {
        LineDecoder::new(config).map(CsvDecoder)
    }

    /// Appends a chunk of the body. Call [`CsvDecoder::next_batch`] until
    /// it returns `Ok(None)` before the next chunk: the decoder buffers what
    /// it is fed.
    pub fn feed(&mut self, chunk: &[u8]) {
        self.0.feed(chunk);
    }

    /// The next complete batch, or `Ok(None)` when more input is needed.
    pub fn next_batch(&mut self) -> Result<Option<Batch>, RecordError> {
        self.0.step(false)
    }

    /// After the last chunk: the remaining batches, one per call, then
    /// `Ok(None)`. A body without records is [`RecordError::NoRecords`].
    pub fn finish(&mut self) -> Result<Option<Batch>, RecordError> {
        self.0.step(true)
    }
}

/// Parses one line into `rows`.
pub(super) fn row<T: Elem>(line: &[u8], rows: &mut Rows, at: Location) -> Result<(), RecordError> {
    let start = rows.buf.len();
    rows.reserve_row(line.len() / 2 + 1);
    let max = rows.max_features;
    let mut i = 0;
    let mut feature = 0;
    loop {
        if feature == max {
            return Err(RecordError::TooManyFeatures { at, max });
        }
        let v = match T::fast(&line[i..]) {
            Some((v, n)) if matches!(line.get(i + n), None | Some(b',')) => {
                i += n;
                v
            }
            _ => {
                let (text, end) =
                    field(line, i).ok_or(RecordError::UnterminatedQuote { at, feature })?;
                i = end;
                T::slow(text).map_err(|fail| value_error::<T>(fail, at, feature, text))?
            }
        };
        v.put(&mut rows.buf);
        feature += 1;
        if i == line.len() {
            break;
        }
        // `field` and the fast path both stop at a comma or the end.
        i += 1;
    }
    rows.end_row(at, start)
}

/// The value text of the field at `line[i..]` and where the field ends (at
/// its comma or the end of the line); `None` for an unterminated quote. A
/// quoted field's text is what is between the quotes; anything else after
/// the closing quote is kept in the text, which then is not a number.
fn field(line: &[u8], i: usize) -> Option<(&[u8], usize)> {
    let end = |from: usize| memchr::memchr(b',', &line[from..]).map_or(line.len(), |k| from + k);
    let lead = line[i..]
        .iter()
        .take_while(|&&c| c == b' ' || c == b'\t')
        .count();
    let j = i + lead;
    if line.get(j) == Some(&b'"') {
        let close = j + 1 + memchr::memchr(b'"', &line[j + 1..])?;
        let stop = end(close + 1);
        if trim(&line[close + 1..stop]).is_empty() {
            return Some((&line[j + 1..close], stop));
        }
        return Some((trim(&line[i..stop]), stop));
    }
    let stop = end(j);
    Some((trim(&line[j..stop]), stop))
}

fn trim(s: &[u8]) -> &[u8] {
    let is_blank = |c: &u8| *c == b' ' || *c == b'\t';
    let start = s.iter().position(|c| !is_blank(c)).unwrap_or(s.len());
    let end = s
        .iter()
        .rposition(|c| !is_blank(c))
        .map_or(start, |k| k + 1);
    &s[start..end]
}

#[cfg(test)]
mod tests;
