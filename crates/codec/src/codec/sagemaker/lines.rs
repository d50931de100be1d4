//! Line framing for CSV and JSON Lines bodies arriving in chunks.
//!
//! Lines end with `\n` or `\r\n`; the last may have no line end. A blank
//! line (nothing but spaces, tabs or `\r`) is skipped when only blank lines
//! follow it, and is an error when a record follows. Lines are handed out as
//! ranges of the buffer, so a record is parsed where it lies; consumed bytes
//! are dropped once per [`Lines::compact`].

use std::ops::Range;

use bytes::{Buf, BytesMut};

use super::batch::{Batch, DecodeConfig, Rows};
use super::error::{ConfigError, Location, RecordError};
use super::value::{Elem, Kind, by_kind};

/// What one line holds, and how it is read into a row: CSV fields or one
/// JSON value (the formats implement it; this module only frames lines).
pub(super) trait LineRecord {
    fn read<T: Elem>(line: &[u8], rows: &mut Rows, at: Location) -> Result<(), RecordError>;
}

/// The decoder behind [`super::CsvDecoder`] and
/// [`super::JsonLinesDecoder`]: lines in, batches out, the first error
/// final.
#[derive(Debug)]
pub(super) struct LineDecoder<F> {
    format: std::marker::PhantomData<F>,
    kind: Kind,
    lines: Lines,
    rows: Rows,
    failed: Option<RecordError>,
}

impl<F: LineRecord> LineDecoder<F> {
    pub(super) fn new(config: &DecodeConfig) -> Result<Self, ConfigError> {
        Ok(LineDecoder {
            format: std::marker::PhantomData,
            kind: config.kind()?,
            lines: Lines::new(config.max_record_bytes),
            rows: Rows::new(config),
            failed: None,
        })
    }

    pub(super) fn feed(&mut self, chunk: &[u8]) {
        if self.failed.is_none() {
            self.lines.feed(chunk);
        }
    }

    pub(super) fn step(&mut self, eof: bool) -> Result<Option<Batch>, RecordError> {
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        let result = by_kind!(self.kind, T => self.run::<T>(eof));
        if let Err(e) = &result {
            self.failed = Some(e.clone());
        }
        result
    }

    fn run<T: Elem>(&mut self, eof: bool) -> Result<Option<Batch>, RecordError> {
        while !self.rows.full() {
            let Some((number, range)) = self.lines.next_record(eof)? else {
                break;
            };
            let line = &self.lines.buf()[range];
            let at = Location::Line(number);
            F::read::<T>(line, &mut self.rows, at)?;
        }
        self.lines.compact();
        if self.rows.full() || eof {
            if eof && self.rows.total() == 0 {
                return Err(RecordError::NoRecords);
            }
            return Ok(self.rows.take());
        }
        Ok(None)
    }
}

/// Splits the buffered body into lines.
#[derive(Debug)]
pub(super) struct Lines {
    buf: BytesMut,
    /// Start of the first line not handed out yet.
    pos: usize,
    /// Bytes after `pos` already searched for `\n` in vain.
    searched: usize,
    /// Number of the line at `pos` (1-based).
    line: u64,
    max: usize,
    /// The first of a run of blank lines no record has followed yet.
    blank: Option<u64>,
}

impl Lines {
    pub(super) fn new(max: usize) -> Self {
        Lines {
            buf: BytesMut::new(),
            pos: 0,
            searched: 0,
            line: 1,
            max,
            blank: None,
        }
    }

    pub(super) fn feed(&mut self, chunk: &[u8]) {
        self.buf.extend_from_slice(chunk);
    }

    pub(super) fn buf(&self) -> &[u8] {
        &self.buf
    }

    /// The next line holding a record: its number and its range in
    /// [`Lines::buf`] (without the line end). `Ok(None)`: no complete line
    /// yet, or (with `eof`) none left.
    pub(super) fn next_record(
        &mut self,
        eof: bool,
    ) -> Result<Option<(u64, Range<usize>)>, RecordError> {
        loop {
            let rest = &self.buf[self.pos..];
            let (end, next) = match memchr::memchr(b'\n', &rest[self.searched..]) {
                Some(k) => {
                    let end = self.pos + self.searched + k;
                    (end, end + 1)
                }
                None => {
                    self.searched = rest.len();
                    // Room for a `\r` before a `\n` still to come.
                    if rest.len() > self.max.saturating_add(1) {
                        return Err(self.too_long());
                    }
                    if !eof || rest.is_empty() {
                        return Ok(None);
                    }
                    (self.buf.len(), self.buf.len())
                }
            };
            let start = self.pos;
            let end = if end > start && self.buf[end - 1] == b'\r' {
                end - 1
            } else {
                end
            };
            if end - start > self.max {
                return Err(self.too_long());
            }
            let number = self.line;
            self.pos = next;
            self.searched = 0;
            self.line += 1;
            if self.buf[start..end]
                .iter()
                .all(|&c| matches!(c, b' ' | b'\t' | b'\r'))
            {
                self.blank.get_or_insert(number);
                continue;
            }
            if let Some(blank) = self.blank {
                return Err(RecordError::BlankLine {
                    at: Location::Line(blank),
                });
            }
            return Ok(Some((number, start..end)));
        }
    }

    fn too_long(&self) -> RecordError {
        RecordError::TooLong {
            at: Location::Line(self.line),
            max: self.max,
        }
    }

    /// Drops the lines handed out.
    pub(super) fn compact(&mut self) {
        self.buf.advance(self.pos);
        self.pos = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every record line of `body` fed in `size`-byte chunks.
    fn lines(body: &[u8], size: usize, max: usize) -> Result<Vec<(u64, String)>, RecordError> {
        let mut l = Lines::new(max);
        let mut out = Vec::new();
        let mut take = |l: &mut Lines, eof| -> Result<(), RecordError> {
            while let Some((n, r)) = l.next_record(eof)? {
                out.push((n, String::from_utf8(l.buf()[r].to_vec()).unwrap()));
            }
            l.compact();
            Ok(())
        };
        for chunk in body.chunks(size.max(1)) {
            l.feed(chunk);
            take(&mut l, false)?;
        }
        take(&mut l, true)?;
        Ok(out)
    }

    fn check(body: &str, want: &[(u64, &str)]) {
        for size in [1, 2, 3, 7, body.len().max(1)] {
            let got = lines(body.as_bytes(), size, 100).unwrap();
            let got: Vec<(u64, &str)> = got.iter().map(|(n, s)| (*n, s.as_str())).collect();
            assert_eq!(got, want, "{body:?} in {size}-byte chunks");
        }
    }

    #[test]
    fn line_ends() {
        check("a\nb", &[(1, "a"), (2, "b")]);
        check("a\r\nb\r\n", &[(1, "a"), (2, "b")]);
        check("a\n\n\r\n  \n", &[(1, "a")]);
        check("", &[]);
        check("a\rb\n", &[(1, "a\rb")]);
    }

    #[test]
    fn blank_line_inside_is_an_error() {
        for size in [1, 4, 100] {
            let err = lines(b"a\n\n \nb\n", size, 100).unwrap_err();
            assert_eq!(err.to_string(), "line 2: blank line between records");
        }
    }

    #[test]
    fn long_lines_are_refused_before_they_end() {
        assert_eq!(
            lines(b"1234\r\n12345\n", 100, 4).unwrap_err().to_string(),
            "line 2: longer than 4 bytes, the record size limit"
        );
        // Never buffered past the limit, even without a line end.
        let mut l = Lines::new(4);
        l.feed(b"123456");
        assert!(l.next_record(false).is_err());
        assert_eq!(lines(b"1234\r\n", 1, 4).unwrap(), vec![(1, "1234".into())]);
    }
}
