//! The request body sent to the backend, in the route's wire format.
//!
//! Binary: every input becomes binary (`binary_data_size`) — converted JSON
//! data and binary client data alike go as the same `Bytes` slices — and
//! the backend is asked for binary outputs. JSON: every input is written as
//! JSON `data` and binary output flags are removed. A request that uses
//! shared memory keeps its outputs exactly as the client asked.

use bytes::Bytes;
use serde_json::{Map, Value};

use crate::codec::v2::json_write::{DocWriter, TensorForm, ValueWriter};
use crate::codec::v2::{Document, TensorEntry};
use crate::config::WireFormat;
use crate::infer::InferError;
use crate::infer::TensorData;

/// A body for the backend and how to describe it.
#[derive(Debug)]
pub(crate) struct RequestBody {
    pub chunks: Vec<Bytes>,
    /// The JSON header's length, for `Inference-Header-Content-Length`
    /// (binary format only).
    pub header_len: Option<u64>,
    pub content_type: &'static str,
}

impl RequestBody {
    #[allow(clippy::len_without_is_empty)]
    pub(crate) fn len(&self) -> u64 {
        self.chunks.iter().map(|c| c.len() as u64).sum()
    }
}

pub(super) fn build(
    route: &str,
    mut header: Document,
    data: Vec<TensorData>,
    format: WireFormat,
) -> Result<RequestBody, InferError> {
    let shm = data.contains(&TensorData::SharedMemory);
    match format {
        WireFormat::Binary => {
            let append = !shm && ask_for_binary_outputs(&mut header);
            Ok(binary(&header, data, append))
        }
        WireFormat::Json => {
            if !shm {
                drop_binary_flags(&mut header);
            }
            json(route, &header, &data)
        }
    }
}

/// The JSON header of a binary-format request: `sizes` gives each input's
/// data size, `None` for an input in shared memory. With `append`, the
/// member [`ask_for_binary_outputs`] left to the writer goes last.
fn binary_header(
    header: &Document,
    sizes: impl Iterator<Item = Option<u64>>,
    append: bool,
) -> Vec<u8> {
    let mut text = Vec::with_capacity(256 + 96 * header.tensors.len());
    let mut w = DocWriter::new();
    w.open(header, &mut text);
    for (t, size) in header.tensors.iter().zip(sizes) {
        let form = size.map_or(TensorForm::AsIs, TensorForm::Binary);
        w.tensor_open(t, form, &mut text);
    }
    w.close(header, &mut text);
    if append {
        // In place of the closing brace: the member as the document would
        // have it last, had it been pushed onto `members`.
        text.pop();
        text.extend_from_slice(BINARY_OUTPUT_MEMBER);
    }
    text
}

/// `"parameters":{"binary_data_output":true}` as the last member of a
/// document that has no `parameters`, and the document's closing brace.
const BINARY_OUTPUT_MEMBER: &[u8] = br#","parameters":{"binary_data_output":true}}"#;

/// The JSON header of the binary-format request for a document whose
/// inputs all carry their size (data inline or `binary_data_size`) and
/// none is in shared memory: what [`build`] would write first for it.
/// `None` when some input is in shared memory.
pub(crate) fn provisional_header(mut header: Document) -> Option<Vec<u8>> {
    let sizes: Vec<Option<u64>> = header
        .tensors
        .iter()
        .map(TensorEntry::binary_size)
        .collect();
    if sizes.iter().any(Option::is_none) {
        return None;
    }
    let append = ask_for_binary_outputs(&mut header);
    Some(binary_header(&header, sizes.into_iter(), append))
}

fn binary(header: &Document, data: Vec<TensorData>, append: bool) -> RequestBody {
    let sizes = data.iter().map(|d| match d {
        TensorData::SharedMemory => None,
        TensorData::Pieces(_) => Some(d.len()),
    });
    let text = binary_header(header, sizes, append);
    let header_len = text.len() as u64;
    let mut chunks = Vec::with_capacity(1 + data.len());
    chunks.push(Bytes::from(text));
    for bytes in data {
        if let TensorData::Pieces(p) = bytes {
            chunks.extend(p);
        }
    }
    RequestBody {
        chunks,
        header_len: Some(header_len),
        content_type: "application/octet-stream",
    }
}

/// JSON text is handed on in pieces of about this size: the body is built
/// without a reservation sized from the data and without copying it on
/// every reallocation.
const JSON_PIECE: usize = 1 << 20;

/// Binary data is written to JSON this much at a time (at most five bytes
/// of text per byte: `-128,`), so a piece overshoots by at most ~320 KiB.
const WRITE_SLICE: usize = 64 << 10;

fn json(route: &str, header: &Document, data: &[TensorData]) -> Result<RequestBody, InferError> {
    let estimate = 256 + data.iter().map(|d| d.len() as usize).sum::<usize>();
    let mut pieces = JsonPieces {
        done: Vec::new(),
        out: Vec::with_capacity(estimate.min(JSON_PIECE)),
    };
    let mut w = DocWriter::new();
    w.open(header, &mut pieces.out);
    for (t, bytes) in header.tensors.iter().zip(data) {
        match bytes {
            TensorData::SharedMemory => w.tensor_open(t, TensorForm::AsIs, &mut pieces.out),
            TensorData::Pieces(data) => {
                w.tensor_open(t, TensorForm::Json, &mut pieces.out);
                let mut vw = ValueWriter::new(t.datatype);
                let not_json = |source| InferError::InputNotJson {
                    route: route.to_owned(),
                    input: t.name.clone(),
                    source,
                };
                for slice in data.iter().flat_map(|p| p.chunks(WRITE_SLICE)) {
                    vw.write(slice, &mut pieces.out).map_err(not_json)?;
                    pieces.cut();
                }
                vw.finish().map_err(not_json)?;
                w.tensor_close(&mut pieces.out);
            }
        }
    }
    w.close(header, &mut pieces.out);
    pieces.cut_last();
    Ok(RequestBody {
        chunks: pieces.done,
        header_len: None,
        content_type: "application/json",
    })
}

/// JSON text written so far: full pieces, and the one being written.
struct JsonPieces {
    done: Vec<Bytes>,
    out: Vec<u8>,
}

impl JsonPieces {
    fn cut(&mut self) {
        if self.out.len() >= JSON_PIECE {
            self.cut_last();
            self.out = Vec::with_capacity(JSON_PIECE + 2 * WRITE_SLICE);
        }
    }

    fn cut_last(&mut self) {
        let out = std::mem::take(&mut self.out);
        if !out.is_empty() {
            self.done.push(Bytes::from(out));
        }
    }
}

/// Sets a request-level parameter, creating `"parameters"` if needed.
fn set_parameter(doc: &mut Document, key: &str, value: Value) {
    let members = &mut doc.members;
    match members.iter_mut().find(|(k, _)| k == "parameters") {
        Some((_, Value::Object(p))) => {
            p.insert(key.to_owned(), value);
        }
        Some((_, other)) => {
            let mut p = Map::new();
            p.insert(key.to_owned(), value);
            *other = Value::Object(p);
        }
        None => {
            let mut p = Map::new();
            p.insert(key.to_owned(), value);
            members.push(("parameters".to_owned(), Value::Object(p)));
        }
    }
}

/// Asks for every output in binary: the listed outputs each get
/// `binary_data: true`; without a list (or with an empty one, which Triton
/// reads as no list), `binary_data_output: true`. Returns `true` when that
/// parameter is left for [`binary_header`] to write: the document has no
/// `parameters`, and building a map for one member cost more than the rest
/// of the header.
fn ask_for_binary_outputs(doc: &mut Document) -> bool {
    if let Some((_, Value::Array(outputs))) = doc.members.iter_mut().find(|(k, _)| k == "outputs")
        && !outputs.is_empty()
    {
        for o in outputs.iter_mut().filter_map(Value::as_object_mut) {
            let params = o
                .entry("parameters")
                .or_insert_with(|| Value::Object(Map::new()));
            if let Some(p) = params.as_object_mut() {
                p.insert("binary_data".to_owned(), Value::Bool(true));
            }
        }
        return false;
    }
    if doc.members.iter().all(|(k, _)| k != "parameters") {
        return true;
    }
    set_parameter(doc, "binary_data_output", Value::Bool(true));
    false
}

/// Removes binary output requests for a backend that only speaks JSON.
fn drop_binary_flags(doc: &mut Document) {
    for (key, value) in doc.members.iter_mut() {
        match (key.as_str(), value) {
            ("outputs", Value::Array(outputs)) => {
                for p in outputs
                    .iter_mut()
                    .filter_map(|o| o.get_mut("parameters"))
                    .filter_map(Value::as_object_mut)
                {
                    p.remove("binary_data");
                }
            }
            ("parameters", Value::Object(p)) => {
                p.remove("binary_data_output");
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::v2::{DocKind, DocLimits, DocParser};

    #[test]
    fn json_bodies_come_in_bounded_pieces() {
        let doc = DocParser::parse(
            DocKind::Request,
            DocLimits::default(),
            br#"{"inputs":[{"name":"A","datatype":"INT8","shape":[3000000],"parameters":{"binary_data_size":3000000}}]}"#,
        )
        .unwrap();
        let data = vec![TensorData::Pieces(vec![Bytes::from(vec![
            0x80u8;
            3_000_000
        ])])];
        let body = build("r", doc, data, WireFormat::Json).unwrap();
        // "-128," is five bytes per element.
        assert_eq!(body.len(), 15_000_000 - 1 + 71);
        assert!(body.chunks.len() >= 11, "{}", body.chunks.len());
        assert!(
            body.chunks
                .iter()
                .all(|c| c.len() < JSON_PIECE + 5 * WRITE_SLICE)
        );
        let text: Vec<u8> = body.chunks.iter().flat_map(|c| c.to_vec()).collect();
        assert!(text.starts_with(
            br#"{"inputs":[{"name":"A","datatype":"INT8","shape":[3000000],"data":[-128,-128"#
        ));
        assert!(text.ends_with(b"-128]}]}"));
    }

    fn header_of(json: &str) -> String {
        let doc =
            DocParser::parse(DocKind::Request, DocLimits::default(), json.as_bytes()).unwrap();
        let data = vec![TensorData::Pieces(vec![Bytes::from_static(&[0; 4])]); doc.tensors.len()];
        let body = build("r", doc, data, WireFormat::Binary).unwrap();
        let n = body.header_len.unwrap() as usize;
        String::from_utf8(body.chunks[0][..n].to_vec()).unwrap()
    }

    #[test]
    fn binary_outputs_requested() {
        let input = r#"{"name":"A","datatype":"FP32","shape":[1],"data":[1]}"#;
        assert_eq!(
            header_of(&format!(r#"{{"inputs":[{input}]}}"#)),
            r#"{"inputs":[{"name":"A","datatype":"FP32","shape":[1],"parameters":{"binary_data_size":4}}],"parameters":{"binary_data_output":true}}"#
        );
        // An empty list means every output to Triton: ask for all in binary.
        assert_eq!(
            header_of(&format!(r#"{{"inputs":[{input}],"outputs":[]}}"#)),
            r#"{"inputs":[{"name":"A","datatype":"FP32","shape":[1],"parameters":{"binary_data_size":4}}],"outputs":[],"parameters":{"binary_data_output":true}}"#
        );
        assert_eq!(
            header_of(&format!(
                r#"{{"inputs":[{input}],"outputs":[{{"name":"O"}}]}}"#
            )),
            r#"{"inputs":[{"name":"A","datatype":"FP32","shape":[1],"parameters":{"binary_data_size":4}}],"outputs":[{"name":"O","parameters":{"binary_data":true}}]}"#
        );
        // Members after the inputs stay before the parameter added last.
        assert_eq!(
            header_of(&format!(r#"{{"id":"7","inputs":[{input}],"x":1}}"#)),
            r#"{"id":"7","inputs":[{"name":"A","datatype":"FP32","shape":[1],"parameters":{"binary_data_size":4}}],"x":1,"parameters":{"binary_data_output":true}}"#
        );
        // Request parameters of its own: the flag joins them, in place if
        // it was there already.
        assert_eq!(
            header_of(&format!(
                r#"{{"parameters":{{"binary_data_output":false,"p":1}},"inputs":[{input}]}}"#
            )),
            r#"{"parameters":{"binary_data_output":true,"p":1},"inputs":[{"name":"A","datatype":"FP32","shape":[1],"parameters":{"binary_data_size":4}}]}"#
        );
        assert_eq!(
            header_of(&format!(r#"{{"inputs":[{input}],"parameters":{{"p":1}}}}"#)),
            r#"{"inputs":[{"name":"A","datatype":"FP32","shape":[1],"parameters":{"binary_data_size":4}}],"parameters":{"p":1,"binary_data_output":true}}"#
        );
    }

    /// The header written before the request is whole says what the
    /// complete request's header says.
    #[test]
    fn provisional_header_is_the_final_one() {
        for json in [
            r#"{"inputs":[{"name":"A","datatype":"FP32","shape":[1],"data":[1]}]}"#,
            r#"{"id":"x","inputs":[{"name":"A","datatype":"FP32","shape":[1],"data":[1]}],"parameters":{"p":1}}"#,
        ] {
            let doc =
                DocParser::parse(DocKind::Request, DocLimits::default(), json.as_bytes()).unwrap();
            let provisional = provisional_header(doc).unwrap();
            assert_eq!(String::from_utf8(provisional).unwrap(), header_of(json));
        }
    }
}
