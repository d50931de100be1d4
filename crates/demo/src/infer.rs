//! `POST /v2/models/{m}/infer`: reads a JSON, binary-extension or raw
//! request with the crate's V2 codecs, runs the model, selects the outputs
//! as Triton does (docs/TRITON-FACTS.md §2) and writes the response with
//! [`write_document`].

use bytes::Bytes;
use http::{HeaderMap, Response};
use serde_json::Value;

use super::catalog::{Model, Named, VERSION};
use super::error::DemoError;
use super::respond::{self, Body};
use tensorgate_codec::codec::pieces::concat;
use tensorgate_codec::codec::v2::framing::{self, HeaderReader, IHCL_HEADER};
use tensorgate_codec::codec::v2::json_write::{TensorForm, write_document};
use tensorgate_codec::codec::v2::{
    BinaryCollector, DocKind, DocLimits, DocParser, Document, EntryData, OutputSelection, Params,
    TensorEntry, collect,
};
use tensorgate_codec::tensor::Tensor;

#[derive(Debug)]
struct InferRequest {
    id: Option<String>,
    inputs: Vec<Named>,
    wanted: OutputSelection,
}

/// Serves one inference on a whole (decompressed) body.
pub fn infer(
    model: &'static Model,
    headers: &HeaderMap,
    body: Bytes,
) -> Result<Response<Body>, DemoError> {
    let Some(header_len) = header_length(headers, body.len())? else {
        return Err(model.raw_request_error());
    };
    let request = read_request(model, header_len, body)?;
    let id = request.id.as_deref();
    let outputs = model.run(id, request.inputs)?;
    let selected = select(model, &request.wanted, outputs)?;
    write_response(model, request.id, selected)
}

/// The JSON header's length, or `None` for a raw request (IHCL `0`, a
/// non-numeric IHCL, or an empty body without IHCL), as Triton reads it.
fn header_length(headers: &HeaderMap, body_len: usize) -> Result<Option<usize>, DemoError> {
    let Some(value) = headers.get(IHCL_HEADER) else {
        return Ok((body_len > 0).then_some(body_len));
    };
    match framing::parse_ihcl(value.as_bytes()) {
        Ok(0) => Ok(None),
        Ok(n) => {
            framing::check_header_length(n, Some(body_len as u64), u64::MAX)
                .map_err(|e| DemoError::Framing(e.to_string()))?;
            Ok(Some(n as usize))
        }
        Err(_) => match value.to_str().ok().map(|v| v.trim().parse::<i64>()) {
            Some(Ok(n)) if n < 0 => Err(DemoError::Framing(format!(
                "inference header size should be in range (0, {body_len}), got: {n}"
            ))),
            _ => Ok(None),
        },
    }
}

fn read_request(
    model: &Model,
    header_len: usize,
    mut body: Bytes,
) -> Result<InferRequest, DemoError> {
    let header = HeaderReader::new(header_len)
        .push(&mut body)
        .ok_or_else(|| DemoError::Invalid("inference header is cut short".to_owned()))?;
    let doc = DocParser::parse(DocKind::Request, DocLimits::default(), &header)
        .map_err(|e| DemoError::Invalid(format!("failed to parse the request JSON: {e}")))?;
    let id = match doc.member("id") {
        None => None,
        Some(Value::String(id)) => Some(id.clone()),
        Some(_) => {
            return Err(DemoError::Invalid(
                "Unable to parse 'id': attempt to access JSON non-string as string".to_owned(),
            ));
        }
    };
    if doc.uses_shared_memory() {
        return Err(DemoError::Invalid(
            "shared memory inputs are not supported by the demo server".to_owned(),
        ));
    }
    let data = collect::tensor_data(&doc, binary_data(model, &doc, body)?);
    let mut inputs = Vec::with_capacity(doc.tensors.len());
    for (entry, pieces) in doc.tensors.iter().zip(data) {
        let data = concat(pieces.unwrap_or_default());
        let tensor = Tensor::new(entry.datatype, entry.shape.clone(), data)
            .map_err(|e| DemoError::Framing(format!("input '{}': {e}", entry.name)))?;
        inputs.push((entry.name.clone(), tensor));
    }
    Ok(InferRequest {
        id,
        inputs,
        wanted: wanted_outputs(&doc)?,
    })
}

/// Splits what follows the header into each binary input's bytes.
fn binary_data(model: &Model, doc: &Document, rest: Bytes) -> Result<Vec<Vec<Bytes>>, DemoError> {
    let mut collector = BinaryCollector::new(doc);
    collector.push(rest).map_err(|_| {
        DemoError::Invalid(format!(
            "unexpected additional input data for model '{}'",
            model.name
        ))
    })?;
    collector.finish().map_err(|short| {
        DemoError::Invalid(format!(
            "unexpected size for input '{}', expecting {} additional bytes for model '{}'",
            doc.tensors[short.tensor].name, short.missing, model.name
        ))
    })
}

/// Triton's output selection; the demo cannot classify.
pub(super) fn wanted_outputs(doc: &Document) -> Result<OutputSelection, DemoError> {
    let wanted =
        OutputSelection::from_request(doc).map_err(|e| DemoError::Invalid(e.to_string()))?;
    if let OutputSelection::Listed(listed) = &wanted
        && let Some(o) = listed.iter().find(|o| o.classification)
    {
        return Err(DemoError::Invalid(format!(
            "output '{}': classification is not supported by the demo server",
            o.name
        )));
    }
    Ok(wanted)
}

/// The outputs to send, in the model's order, each with "binary?".
pub(super) fn select(
    model: &Model,
    wanted: &OutputSelection,
    outputs: Vec<Named>,
) -> Result<Vec<(String, Tensor, bool)>, DemoError> {
    if let OutputSelection::Listed(listed) = wanted
        && let Some(unknown) = listed
            .iter()
            .find(|l| !outputs.iter().any(|(o, _)| *o == l.name))
    {
        return Err(DemoError::Invalid(format!(
            "unexpected inference output '{}' for model '{}'",
            unknown.name, model.name
        )));
    }
    Ok(outputs
        .into_iter()
        .filter(|(name, _)| wanted.includes(name))
        .map(|(name, t)| {
            let binary = wanted.wants_binary(&name);
            (name, t, binary)
        })
        .collect())
}

fn write_response(
    model: &Model,
    id: Option<String>,
    outputs: Vec<(String, Tensor, bool)>,
) -> Result<Response<Body>, DemoError> {
    let mut members = Vec::with_capacity(3);
    if let Some(id) = id {
        members.push(("id".to_owned(), Value::String(id)));
    }
    members.push(("model_name".to_owned(), Value::from(model.name)));
    members.push(("model_version".to_owned(), Value::from(VERSION)));
    let tensors = outputs
        .iter()
        .map(|(name, t, _)| TensorEntry {
            name: name.clone(),
            datatype: t.dtype,
            shape: t.shape.clone(),
            parameters: Params::new(),
            extra: Vec::new(),
            data: EntryData::Inline {
                data: t.data.clone(),
                elements: t.element_count(),
            },
        })
        .collect();
    let doc = Document {
        kind: DocKind::Response,
        tensors_at: members.len(),
        members,
        tensors,
    };
    let mut out = Vec::new();
    write_document(
        &doc,
        |i, _| match &outputs[i] {
            (_, t, true) => TensorForm::Binary(t.data.len() as u64),
            _ => TensorForm::Json,
        },
        |i, _| Some(outputs[i].1.data.clone()),
        &mut out,
    )
    .map_err(|(i, e)| DemoError::Invalid(format!("output '{}': {e}", outputs[i].0)))?;
    if !outputs.iter().any(|o| o.2) {
        return Ok(respond::json(out));
    }
    let header_len = out.len();
    for (_, t, _) in outputs.iter().filter(|o| o.2) {
        out.extend_from_slice(&t.data);
    }
    Ok(respond::binary(out, header_len))
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    fn ihcl(value: Option<&'static str>, body_len: usize) -> Result<Option<usize>, String> {
        let mut h = HeaderMap::new();
        if let Some(v) = value {
            h.insert(IHCL_HEADER, HeaderValue::from_static(v));
        }
        header_length(&h, body_len).map_err(|e| e.to_string())
    }

    #[test]
    fn header_length_like_triton() {
        assert_eq!(ihcl(None, 10), Ok(Some(10)));
        assert_eq!(ihcl(None, 0), Ok(None));
        assert_eq!(ihcl(Some("0"), 10), Ok(None));
        assert_eq!(ihcl(Some("abc"), 10), Ok(None));
        assert_eq!(ihcl(Some("4"), 10), Ok(Some(4)));
        assert_eq!(ihcl(Some("10"), 10), Ok(Some(10)));
        assert_eq!(
            ihcl(Some("11"), 10),
            Err("inference header size should be in range (0, 10), got: 11".into())
        );
        assert_eq!(
            ihcl(Some("-1"), 10),
            Err("inference header size should be in range (0, 10), got: -1".into())
        );
    }

    fn wanted(json: &str) -> Result<OutputSelection, String> {
        let doc =
            DocParser::parse(DocKind::Request, DocLimits::default(), json.as_bytes()).unwrap();
        wanted_outputs(&doc).map_err(|e| e.to_string())
    }

    #[test]
    fn classification_is_refused() {
        assert!(
            wanted(r#"{"inputs":[],"outputs":[{"name":"A","parameters":{"classification":2}}]}"#)
                .unwrap_err()
                .contains("classification")
        );
        assert_eq!(
            wanted(r#"{"inputs":[],"outputs":[]}"#),
            Ok(OutputSelection::All { binary: false })
        );
    }
}
