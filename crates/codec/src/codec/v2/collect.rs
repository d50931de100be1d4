//! Gathers the binary part of a body (everything after the JSON header) into
//! each tensor's pieces: slices of the frames as they arrived, never copies.
//! The one place that turns a [`ChunkSplitter`]'s stream of pieces into data
//! per tensor; requests, replies, the demo backend and the CLI all use it.

use bytes::Bytes;

use super::framing::{ChunkSplitter, FramingError, Piece, ShortTensor};
use super::model::{Document, EntryData};

/// A binary tensor's data ended early.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("tensor #{tensor} is missing {missing} bytes")]
pub struct ShortData {
    /// Index of the first incomplete tensor in the document.
    pub tensor: usize,
    /// Bytes still expected for that tensor.
    pub missing: u64,
    /// Bytes still expected for it and every binary tensor after it.
    pub missing_total: u64,
}

/// Collects binary tensor data per tensor.
#[derive(Debug)]
pub struct BinaryCollector {
    splitter: ChunkSplitter,
    /// Per tensor of the document, in order (empty for non-binary tensors).
    data: Vec<Vec<Bytes>>,
    scratch: Vec<Piece>,
}

impl BinaryCollector {
    /// Expects the `binary_data_size` of every binary tensor of `doc`.
    pub fn new(doc: &Document) -> Self {
        // Room for one piece per binary tensor, and for the pieces of one
        // frame: what a reply that arrives in one frame needs. Growing them
        // from nothing cost a reallocation per tensor.
        let data = doc
            .tensors
            .iter()
            .map(|t| match t.data {
                EntryData::Binary { size } if size > 0 => Vec::with_capacity(1),
                _ => Vec::new(),
            })
            .collect();
        let splitter = ChunkSplitter::new(doc.binary_sizes().collect());
        BinaryCollector {
            scratch: Vec::with_capacity(splitter.tensors()),
            splitter,
            data,
        }
    }

    /// Takes the next frame of the body; bytes past the last tensor are an
    /// error.
    pub fn push(&mut self, frame: Bytes) -> Result<(), FramingError> {
        self.splitter.push(frame, &mut self.scratch)?;
        self.drain();
        Ok(())
    }

    fn drain(&mut self) {
        for p in self.scratch.drain(..) {
            if !p.data.is_empty() {
                self.data[p.tensor].push(p.data);
            }
        }
    }

    /// Ends the body: every binary tensor must be complete. Returns the
    /// pieces per tensor of the document.
    pub fn finish(mut self) -> Result<Vec<Vec<Bytes>>, ShortData> {
        let done = self.splitter.finish(&mut self.scratch);
        self.drain();
        match done {
            Ok(()) => Ok(self.data),
            Err(ShortTensor {
                tensor,
                missing: missing_total,
            }) => {
                let got: u64 = self.data[tensor].iter().map(|b| b.len() as u64).sum();
                Err(ShortData {
                    tensor,
                    missing: self.splitter.size_of(tensor).saturating_sub(got),
                    missing_total,
                })
            }
        }
    }
}

/// Every tensor's data once the binary part is complete: inline data for
/// tensors given as JSON `data`, the collected pieces for binary ones,
/// `None` for shared memory.
pub fn tensor_data(doc: &Document, mut binary: Vec<Vec<Bytes>>) -> Vec<Option<Vec<Bytes>>> {
    doc.tensors
        .iter()
        .zip(binary.iter_mut())
        .map(|(t, bin)| match &t.data {
            EntryData::Inline { data, .. } => Some(vec![data.clone()]),
            EntryData::Binary { .. } => Some(std::mem::take(bin)),
            EntryData::SharedMemory => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::v2::{DocKind, DocLimits, DocParser};

    fn doc(json: &str) -> Document {
        DocParser::parse(DocKind::Response, DocLimits::default(), json.as_bytes()).unwrap()
    }

    #[test]
    fn pieces_per_tensor_without_copies() {
        let d = doc(
            r#"{"outputs":[{"name":"A","datatype":"UINT8","shape":[3],"parameters":{"binary_data_size":3}},{"name":"J","datatype":"UINT8","shape":[1],"data":[9]},{"name":"B","datatype":"UINT8","shape":[2],"parameters":{"binary_data_size":2}}]}"#,
        );
        let frame = Bytes::from_static(b"abcde");
        let mut c = BinaryCollector::new(&d);
        c.push(frame.slice(..2)).unwrap();
        c.push(frame.slice(2..)).unwrap();
        let binary = c.finish().unwrap();
        assert_eq!(binary[0], vec![frame.slice(..2), frame.slice(2..3)]);
        assert_eq!(binary[2], vec![frame.slice(3..)]);
        // Slices of the frame, not copies.
        assert_eq!(binary[2][0].as_ptr(), frame[3..].as_ptr());
        let all = tensor_data(&d, binary);
        assert_eq!(all[1], Some(vec![Bytes::from_static(&[9])]));
    }

    /// A reply in one frame fills the collector without growing it: room
    /// for one piece per binary tensor and for one frame's pieces.
    #[test]
    fn sized_for_one_frame() {
        let d = doc(
            r#"{"outputs":[{"name":"A","datatype":"UINT8","shape":[3],"parameters":{"binary_data_size":3}},{"name":"J","datatype":"UINT8","shape":[1],"data":[9]},{"name":"B","datatype":"UINT8","shape":[2],"parameters":{"binary_data_size":2}}]}"#,
        );
        let mut c = BinaryCollector::new(&d);
        let room: Vec<usize> = c.data.iter().map(Vec::capacity).collect();
        assert_eq!(room, [1, 0, 1]);
        let scratch = c.scratch.as_ptr();
        c.push(Bytes::from_static(b"abcde")).unwrap();
        assert_eq!(c.scratch.as_ptr(), scratch, "the scratch list grew");
        let room: Vec<usize> = c.data.iter().map(Vec::capacity).collect();
        assert_eq!(room, [1, 0, 1]);
        assert_eq!(c.finish().unwrap()[2], vec![Bytes::from_static(b"de")]);
    }

    #[test]
    fn short_and_trailing() {
        let d = doc(
            r#"{"outputs":[{"name":"A","datatype":"UINT8","shape":[3],"parameters":{"binary_data_size":3}}]}"#,
        );
        let mut c = BinaryCollector::new(&d);
        c.push(Bytes::from_static(b"a")).unwrap();
        assert_eq!(
            c.finish().unwrap_err(),
            ShortData {
                tensor: 0,
                missing: 2,
                missing_total: 2
            }
        );
        let mut c = BinaryCollector::new(&d);
        assert!(c.push(Bytes::from_static(b"abcd")).is_err());
    }
}
