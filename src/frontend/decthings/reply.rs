//! The backend's outputs → a `Model.evaluate` success reply: one output
//! parameter per backend output, of the same name, each holding one tensor
//! (or one per row, for outputs the route unstacks), in
//! `varint json_len | JSON | (varint blob_len | blob)*` framing.
//!
//! Numeric data goes out as the backend's own frames (a Decthings tensor is
//! a small head and the same little-endian bytes); FP16/BF16 widen exactly
//! to f32; BYTES become `string` when every element is UTF-8, else
//! `binary`, unless the route's output rule pins the type (a media type
//! restores each element's format from the output's parameters, else from
//! the element's magic bytes).

use std::time::Duration;

use bytes::{BufMut, Bytes, BytesMut};
use serde_json::Value;

use super::error::OutputError;
use super::media;
use super::request::FORMATS_PARAMETER;
use crate::codec::decthings::{self, EncodeError, Layout, varint};
use crate::codec::v2::TensorEntry;
use crate::config::Route;
use crate::infer::{InferReply, TensorData};
use crate::tensor::{BytesElements, DataType, DecthingsType, Semantic, Shape, Tensor};

/// Times reported to the client, in milliseconds.
#[derive(Clone, Copy, Debug)]
pub struct Durations {
    pub total: Duration,
    pub evaluate: Duration,
}

/// The encoded reply: chunks to send back to back.
pub fn success(
    route: &Route,
    reply: &InferReply,
    durations: Durations,
) -> Result<Vec<Bytes>, OutputError> {
    let mut names = Vec::with_capacity(reply.header.tensors.len());
    let mut blobs: Vec<Vec<Bytes>> = Vec::with_capacity(names.capacity());
    for (entry, data) in reply.outputs() {
        let pieces = match data {
            TensorData::Pieces(p) => p,
            TensorData::SharedMemory => {
                return Err(OutputError::SharedMemory {
                    output: entry.name.clone(),
                });
            }
        };
        names.push(entry.name.as_str());
        blobs.push(output_blob(route, entry, pieces)?);
    }
    let json = success_json(&names, durations);
    let mut out = Vec::with_capacity(1 + blobs.iter().map(|b| b.len() + 1).sum::<usize>());
    out.push(framed_json(&json));
    for blob in blobs {
        let len: usize = blob.iter().map(Bytes::len).sum();
        let mut prefix = BytesMut::with_capacity(9);
        varint::write(&mut prefix, len as u64);
        out.push(prefix.freeze());
        out.extend(blob);
    }
    Ok(out)
}

/// `varint json_len | json`.
pub fn framed_json(json: &[u8]) -> Bytes {
    let mut out = BytesMut::with_capacity(json.len() + 9);
    varint::write(&mut out, json.len() as u64);
    out.put_slice(json);
    out.freeze()
}

/// The launcher the client is told about: tensorgate does not know the
/// backend's resources, so it reports none.
pub fn launcher() -> Value {
    serde_json::json!({"type": "temporaryLauncher", "spec": {"cpus": 0, "memoryMebibytes": 0}})
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

pub(super) fn success_json(names: &[&str], d: Durations) -> Vec<u8> {
    let output: Vec<Value> = names
        .iter()
        .map(|n| serde_json::json!({ "name": n }))
        .collect();
    let v = serde_json::json!({"result": {"success": {
        "totalDuration": millis(d.total),
        "durations": {"evaluate": millis(d.evaluate)},
        "executedOnLauncher": launcher(),
        "output": output,
    }}});
    serde_json::to_vec(&v).unwrap_or_default()
}

/// The client's tensor library cannot index a shape whose non-zero
/// dimensions multiply past `isize::MAX` (it panics), even with no
/// elements: refuse such shapes here.
pub(super) fn indexable(shape: &Shape) -> bool {
    shape
        .dims()
        .iter()
        .filter(|&&d| d != 0)
        .try_fold(1u64, |acc, &d| acc.checked_mul(d))
        .is_some_and(|n| n <= isize::MAX as u64)
}

/// One output's blob: its tensor, or one tensor per row when unstacked.
fn output_blob(
    route: &Route,
    entry: &TensorEntry,
    pieces: &[Bytes],
) -> Result<Vec<Bytes>, OutputError> {
    let name = &entry.name;
    if !indexable(&entry.shape) {
        return Err(OutputError::Unindexable {
            output: name.clone(),
            shape: entry.shape.clone(),
        });
    }
    let encode = |shape: &Shape, data: Vec<Bytes>| -> Result<Vec<Bytes>, OutputError> {
        tensor(route, entry, shape, data).map_err(|source| OutputError::Encode {
            output: name.clone(),
            source,
        })
    };
    if !route.decthings.unstack_outputs.contains(name) {
        return encode(&entry.shape, pieces.to_vec());
    }
    let Some((&rows, rest)) = entry.shape.dims().split_first() else {
        return Err(OutputError::Unstack {
            output: name.clone(),
            shape: entry.shape.clone(),
        });
    };
    let row_shape = Shape::new(rest.to_vec());
    let mut out = Vec::new();
    for row in split_rows(entry.datatype, rows, pieces) {
        out.extend(encode(&row_shape, row)?);
    }
    Ok(out)
}

/// Splits data into `rows` equal runs of elements (slices, not copies, for
/// fixed-size types).
fn split_rows(dtype: DataType, rows: u64, pieces: &[Bytes]) -> Vec<Vec<Bytes>> {
    if rows == 0 {
        return Vec::new();
    }
    let joined;
    let data: &Bytes = match pieces {
        [one] => one,
        _ => {
            joined = TensorData::Pieces(pieces.to_vec()).joined();
            &joined
        }
    };
    match dtype.fixed_size() {
        Some(_) => {
            let row = data.len() / rows as usize;
            (0..rows as usize)
                .map(|i| vec![data.slice(i * row..(i + 1) * row)])
                .collect()
        }
        None => {
            // BYTES: equal element counts per row, at element boundaries.
            let count = BytesElements::new(data).count() as u64;
            let per_row = count / rows;
            let mut out = Vec::with_capacity(rows as usize);
            let mut at = 0usize;
            let mut elems = BytesElements::new(data);
            for _ in 0..rows {
                let start = at;
                for e in elems.by_ref().take(per_row as usize).flatten() {
                    at += 4 + e.len();
                }
                out.push(vec![data.slice(start..at)]);
            }
            out
        }
    }
}

/// Encodes one tensor: a head and the data (the same slices for fixed-size
/// types that need no widening).
fn tensor(
    route: &Route,
    entry: &TensorEntry,
    shape: &Shape,
    data: Vec<Bytes>,
) -> Result<Vec<Bytes>, EncodeError> {
    let dtype = entry.datatype;
    let same_bytes = !matches!(
        dtype,
        DataType::F16 | DataType::BF16 | DataType::Bool | DataType::Bytes
    );
    if same_bytes {
        let head = decthings::head(dtype.to_decthings(), shape)?.freeze();
        return Ok(std::iter::once(head).chain(data).collect());
    }
    let data = TensorData::Pieces(data).joined();
    let t = Tensor::new(dtype, shape.clone(), data)?;
    let t = match dtype {
        DataType::Bytes => {
            let semantic = bytes_semantic(route, entry, &t);
            t.with_semantic(semantic)
        }
        _ => t,
    };
    let (head, data) = decthings::encode_parts(&t, Layout::Current)?;
    Ok(vec![head, data])
}

/// What a BYTES output is to a Decthings client.
fn bytes_semantic(route: &Route, entry: &TensorEntry, t: &Tensor) -> Semantic {
    let utf8 =
        || BytesElements::new(&t.data).all(|e| e.is_ok_and(|e| std::str::from_utf8(e).is_ok()));
    match route.rules.pinned_decthings_type(&entry.name) {
        Some(DecthingsType::String) if utf8() => Semantic::String,
        Some(DecthingsType::Binary) => Semantic::Binary,
        Some(kind) if kind.is_media() => Semantic::Media {
            kind,
            formats: formats(entry, t),
        },
        _ if utf8() => Semantic::String,
        _ => Semantic::Binary,
    }
}

/// Each element's media format: from the output's `decthings_formats`
/// parameter when the backend sets one with the right count, else from the
/// element's magic bytes (empty when unknown).
fn formats(entry: &TensorEntry, t: &Tensor) -> Vec<String> {
    let count = t.element_count() as usize;
    let given: Option<Vec<String>> = entry
        .parameters
        .get(FORMATS_PARAMETER)
        .and_then(Value::as_str)
        .and_then(|s| serde_json::from_str(s).ok())
        .filter(|f: &Vec<String>| f.len() == count);
    given.unwrap_or_else(|| {
        BytesElements::new(&t.data)
            .map(|e| {
                media::sniff(e.unwrap_or_default())
                    .unwrap_or_default()
                    .to_owned()
            })
            .collect()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn client_indexable_shapes() {
        assert!(indexable(&Shape::new(vec![2, 3])));
        assert!(indexable(&Shape::new(vec![0, 1 << 40])));
        assert!(!indexable(&Shape::new(vec![1 << 32, 1 << 32, 0])));
        assert!(!indexable(&Shape::new(vec![0, 1 << 32, 1 << 32])));
    }

    #[test]
    fn rows_split_at_element_boundaries() {
        let data = Bytes::from_static(&[1, 2, 3, 4, 5, 6]);
        let rows = split_rows(DataType::U8, 3, std::slice::from_ref(&data));
        assert_eq!(rows.len(), 3);
        assert_eq!(&rows[1][0][..], &[3, 4]);
        assert_eq!(
            rows[2][0].as_ptr(),
            data[4..].as_ptr(),
            "a slice, not a copy"
        );
        let mut b = Vec::new();
        for s in ["a", "bc", "", "d"] {
            crate::tensor::bytes_layout::push(&mut b, s.as_bytes());
        }
        let rows = split_rows(DataType::Bytes, 2, &[Bytes::from(b)]);
        let names: Vec<Vec<&[u8]>> = rows
            .iter()
            .map(|r| BytesElements::new(&r[0]).map(Result::unwrap).collect())
            .collect();
        assert_eq!(names, vec![vec![&b"a"[..], b"bc"], vec![&b""[..], b"d"]]);
    }
}
