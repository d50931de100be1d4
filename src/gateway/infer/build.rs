//! The request sent to the backend, in the route's backend format.
//!
//! Binary: every input becomes binary (`binary_data_size`), JSON inputs
//! converted, binary inputs passed through as the same slices, and the
//! backend is asked for binary outputs. JSON: every input is written as
//! JSON `data` and binary output flags are removed. A request that uses
//! shared memory keeps its outputs exactly as the client asked.

use bytes::Bytes;
use serde_json::{Map, Value};

use super::read::{ParsedRequest, TensorBytes};
use crate::codec::v2::Document;
use crate::codec::v2::json_write::{DocWriter, TensorForm, ValueWriter};
use crate::config::WireFormat;
use crate::proxy::error::GatewayError;

/// A body for the backend and how to describe it.
#[derive(Debug)]
pub struct BackendBody {
    pub chunks: Vec<Bytes>,
    /// The JSON header's length, for `Inference-Header-Content-Length`
    /// (binary format only).
    pub header_len: Option<u64>,
    pub content_type: &'static str,
}

impl BackendBody {
    #[allow(clippy::len_without_is_empty)]
    pub fn len(&self) -> u64 {
        self.chunks.iter().map(|c| c.len() as u64).sum()
    }
}

pub fn build(
    route: &str,
    req: &ParsedRequest,
    format: WireFormat,
) -> Result<BackendBody, GatewayError> {
    let shm = req.doc.uses_shared_memory();
    let mut doc = req.doc.clone();
    match format {
        WireFormat::Binary => {
            if !shm {
                ask_for_binary_outputs(&mut doc);
            }
            Ok(binary(&doc, &req.data))
        }
        WireFormat::Json => {
            if !shm {
                drop_binary_flags(&mut doc);
            }
            json(route, &doc, &req.data)
        }
    }
}

fn binary(doc: &Document, data: &[TensorBytes]) -> BackendBody {
    let mut header = Vec::with_capacity(256 + 96 * doc.tensors.len());
    let mut w = DocWriter::new();
    w.open(doc, &mut header);
    for (t, bytes) in doc.tensors.iter().zip(data) {
        let form = match bytes {
            TensorBytes::SharedMemory => TensorForm::AsIs,
            TensorBytes::Pieces(_) => TensorForm::Binary(bytes.len()),
        };
        w.tensor_open(t, form, &mut header);
    }
    w.close(doc, &mut header);
    let header_len = header.len() as u64;
    let mut chunks = vec![Bytes::from(header)];
    for bytes in data {
        if let TensorBytes::Pieces(p) = bytes {
            chunks.extend(p.iter().cloned());
        }
    }
    BackendBody {
        chunks,
        header_len: Some(header_len),
        content_type: "application/octet-stream",
    }
}

fn json(route: &str, doc: &Document, data: &[TensorBytes]) -> Result<BackendBody, GatewayError> {
    let mut out =
        Vec::with_capacity(256 + data.iter().map(|d| d.len() as usize * 3).sum::<usize>());
    let mut w = DocWriter::new();
    w.open(doc, &mut out);
    for (t, bytes) in doc.tensors.iter().zip(data) {
        match bytes {
            TensorBytes::SharedMemory => w.tensor_open(t, TensorForm::AsIs, &mut out),
            TensorBytes::Pieces(pieces) => {
                w.tensor_open(t, TensorForm::Json, &mut out);
                let mut vw = ValueWriter::new(t.datatype);
                let not_json = |source| GatewayError::InputNotJson {
                    route: route.to_owned(),
                    input: t.name.clone(),
                    source,
                };
                for p in pieces {
                    vw.write(p, &mut out).map_err(not_json)?;
                }
                vw.finish().map_err(not_json)?;
                w.tensor_close(&mut out);
            }
        }
    }
    w.close(doc, &mut out);
    Ok(BackendBody {
        chunks: vec![Bytes::from(out)],
        header_len: None,
        content_type: "application/json",
    })
}

/// Sets a request-level parameter, creating `"parameters"` if needed.
fn set_parameter(members: &mut Vec<(String, Value)>, key: &str, value: Value) {
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
/// `binary_data: true`; without a list, `binary_data_output: true`.
fn ask_for_binary_outputs(doc: &mut Document) {
    if let Some((_, Value::Array(outputs))) = doc.members.iter_mut().find(|(k, _)| k == "outputs") {
        for o in outputs.iter_mut().filter_map(Value::as_object_mut) {
            let params = o
                .entry("parameters")
                .or_insert_with(|| Value::Object(Map::new()));
            if let Some(p) = params.as_object_mut() {
                p.insert("binary_data".to_owned(), Value::Bool(true));
            }
        }
        return;
    }
    set_parameter(&mut doc.members, "binary_data_output", Value::Bool(true));
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
