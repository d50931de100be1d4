//! A `Model.evaluate` request body → the model it names and the core's
//! inputs.
//!
//! Framing and JSON first ([`parse`]): what the official client could never
//! send (bad framing, bad varints, a JSON part that is not an evaluate call,
//! blobs that do not pair with parameters) is a [`RequestError`]. Then each
//! parameter becomes the V2 input of the same name ([`to_inputs`]): numeric
//! data stays a slice of the request buffer, several tensors in a parameter
//! are stacked along a new leading dimension (still slices), media formats
//! travel in the tensor's parameters, and the route's rules are checked —
//! violations are the client's `invalid_parameter`.

use bytes::Bytes;
use serde::Deserialize;
use serde_json::Value;

use super::error::RequestError;
use super::error::{DecthingsError, InputProblem};
use crate::codec::decthings::rpc;
use crate::codec::decthings::{self, DecodeLimits, Layout};
use crate::codec::v2::{EntryData, Params, TensorEntry};
use crate::config::{MultipleTensors, Route};
use crate::error::Error;
use crate::infer::InferError;
use crate::infer::TensorData;
use crate::rules::Side;
use crate::tensor::{DataType, DecthingsType, Semantic, Shape, Tensor};

/// Tensor parameter naming the Decthings type of a BYTES input that was a
/// Decthings `image`, `audio` or `video` (V2 has only BYTES).
pub const TYPE_PARAMETER: &str = "decthings_type";
/// Tensor parameter holding the media formats of such an input, one per
/// element, as a JSON array in a string (V2 parameters are scalars).
pub const FORMATS_PARAMETER: &str = "decthings_formats";

#[derive(Deserialize)]
struct RawCall {
    #[serde(rename = "modelId")]
    model_id: String,
    params: Vec<RawParam>,
    #[serde(rename = "snapshotId", default)]
    snapshot_id: Option<String>,
}

#[derive(Deserialize)]
struct RawParam {
    name: String,
    /// Present for dataset-backed parameters (no blob); tensors travel in
    /// blobs.
    #[serde(default)]
    data: Option<serde::de::IgnoredAny>,
}

/// One parameter of the call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Param {
    /// Tensors, back to back in a blob (a slice of the request body).
    Tensors { name: String, blob: Bytes },
    /// Read from a dataset: tensorgate has none.
    Dataset { name: String },
}

impl Param {
    pub fn name(&self) -> &str {
        match self {
            Param::Tensors { name, .. } | Param::Dataset { name } => name,
        }
    }
}

/// A framed `Model.evaluate` call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Parsed {
    pub model_id: String,
    pub snapshot_id: Option<String>,
    pub params: Vec<Param>,
}

/// Splits and reads a request body. Blobs pair with the parameters that
/// carry no `data` member, in order.
pub fn parse(body: &Bytes) -> Result<Parsed, RequestError> {
    let frame = rpc::decode_request(body)?;
    let raw: RawCall = serde_json::from_slice(&frame.json).map_err(RequestError::Json)?;
    let with_blobs = raw.params.iter().filter(|p| p.data.is_none()).count();
    if with_blobs != frame.blobs.len() {
        return Err(RequestError::BlobCount {
            blobs: frame.blobs.len(),
            params: with_blobs,
        });
    }
    let mut blobs = frame.blobs.into_iter();
    let params = raw
        .params
        .into_iter()
        .map(|p| match (p.data, blobs.next()) {
            (Some(_), _) | (None, None) => Param::Dataset { name: p.name },
            (None, Some(blob)) => Param::Tensors { name: p.name, blob },
        })
        .collect();
    Ok(Parsed {
        model_id: raw.model_id,
        snapshot_id: raw.snapshot_id,
        params,
    })
}

/// Checks the call's parameters against the route's `max_body_bytes`: one
/// over it on its own is named (`invalid_parameter`). (A body over it in
/// total is the gateway's `quota_exceeded`, checked after this.)
pub fn check_params(route: &Route, params: &[Param]) -> Result<(), Error> {
    let limit = route.limits.max_body_bytes;
    for p in params {
        if let Param::Tensors { name, blob } = p
            && blob.len() as u64 > limit
        {
            let problem = InputProblem::TooLarge {
                bytes: blob.len() as u64,
                limit,
            };
            return Err(bad_input(route, name.clone(), problem).into());
        }
    }
    Ok(())
}

/// Turns each parameter into the V2 input of the same name, checked
/// against the route's rules.
pub fn to_inputs(
    route: &Route,
    params: Vec<Param>,
) -> Result<Vec<(TensorEntry, TensorData)>, Error> {
    let mut inputs = Vec::with_capacity(params.len());
    for param in params {
        let (name, blob) = match param {
            Param::Dataset { name } => {
                return Err(bad_input(route, name, InputProblem::Dataset).into());
            }
            Param::Tensors { name, blob } => (name, blob),
        };
        let limits = DecodeLimits {
            max_tensor_bytes: route.limits.max_body_bytes,
        };
        let tensors = decthings::decode_all(&blob, Layout::Current, &limits).map_err(|source| {
            DecthingsError::Request(RequestError::Tensor {
                name: name.clone(),
                source,
            })
        })?;
        let tensor = combine(route, &name, tensors)?;
        check_limits(route, &name, &tensor.shape)?;
        inputs.push(input(route, name, tensor)?);
    }
    let header = crate::codec::v2::Document {
        kind: crate::codec::v2::DocKind::Request,
        members: Vec::new(),
        tensors_at: 0,
        tensors: inputs.iter().map(|(t, _)| t.clone()).collect(),
    };
    crate::infer::checks::check_request(route, &header)?;
    Ok(inputs)
}

/// The route's `max_dims` and `max_elements_per_tensor` on a parameter's
/// tensor as it goes to the backend (stacked: with its leading
/// dimension), as V2 holds a tensor's head to them.
fn check_limits(route: &Route, name: &str, shape: &Shape) -> Result<(), DecthingsError> {
    let limits = &route.limits;
    let problem = if shape.rank() > limits.max_dims {
        InputProblem::TooManyDims {
            shape: shape.clone(),
            rank: shape.rank(),
            max: limits.max_dims,
        }
    } else {
        let count = match shape.element_count() {
            Ok(n) if n <= limits.max_elements_per_tensor => return Ok(()),
            Ok(n) => n.to_string(),
            Err(_) => "more than 2^64".to_owned(),
        };
        InputProblem::TooManyElements {
            shape: shape.clone(),
            count,
            max: limits.max_elements_per_tensor,
        }
    };
    Err(bad_input(route, name.to_owned(), problem))
}

fn bad_input(route: &Route, input: String, problem: InputProblem) -> DecthingsError {
    DecthingsError::Input {
        route: route.name.clone(),
        input,
        problem,
    }
}

/// One tensor per parameter: the only one, or several stacked along a new
/// leading dimension (their data stays in separate slices).
struct Combined {
    dtype: DataType,
    decthings: DecthingsType,
    shape: Shape,
    pieces: Vec<Bytes>,
    formats: Vec<String>,
}

fn combine(route: &Route, name: &str, tensors: Vec<Tensor>) -> Result<Combined, DecthingsError> {
    let count = tensors.len();
    let Some(first) = tensors.first() else {
        return Err(bad_input(route, name.to_owned(), InputProblem::Empty));
    };
    if count > 1 && route.decthings.multiple_tensors == MultipleTensors::Reject {
        return Err(bad_input(
            route,
            name.to_owned(),
            InputProblem::Several { count },
        ));
    }
    let describe = |t: &Tensor| format!("{} {}", t.decthings_type(), t.shape);
    if let Some(other) = tensors
        .iter()
        .find(|t| t.decthings_type() != first.decthings_type() || t.shape != first.shape)
    {
        let problem = InputProblem::CannotStack {
            first: describe(first),
            other: describe(other),
        };
        return Err(bad_input(route, name.to_owned(), problem));
    }
    let shape = if count == 1 {
        first.shape.clone()
    } else {
        let mut dims = Vec::with_capacity(first.shape.rank() + 1);
        dims.push(count as u64);
        dims.extend_from_slice(first.shape.dims());
        Shape::new(dims)
    };
    let (dtype, decthings) = (first.dtype, first.decthings_type());
    let mut pieces = Vec::with_capacity(count);
    let mut formats = Vec::new();
    for t in tensors {
        if let Semantic::Media { formats: f, .. } = t.semantic {
            formats.extend(f);
        }
        pieces.push(t.data);
    }
    Ok(Combined {
        dtype,
        decthings,
        shape,
        pieces,
        formats,
    })
}

/// The V2 input for a parameter: its head (media formats in its
/// parameters), its data, Decthings type rules checked, and f32 narrowed to
/// FP16/BF16 when that is the one type the route's rule allows (Decthings
/// has neither).
fn input(route: &Route, name: String, t: Combined) -> Result<(TensorEntry, TensorData), Error> {
    route
        .rules
        .check_decthings(Side::Input, &name, t.decthings)
        .map_err(|violation| InferError::Rule {
            route: route.name.clone(),
            violation,
        })?;
    let (dtype, pieces) = match narrowed_type(route, &name, t.dtype) {
        Some(to) => (to, vec![narrow(&t.pieces, to)]),
        None => (t.dtype, t.pieces),
    };
    let mut parameters = Params::new();
    if t.decthings.is_media() {
        parameters.insert(TYPE_PARAMETER.into(), Value::from(t.decthings.name()));
        let formats = serde_json::to_string(&t.formats).unwrap_or_default();
        parameters.insert(FORMATS_PARAMETER.into(), Value::from(formats));
    }
    let size = pieces.iter().map(|p| p.len() as u64).sum();
    let entry = TensorEntry {
        name,
        datatype: dtype,
        shape: t.shape,
        parameters,
        extra: Vec::new(),
        data: EntryData::Binary { size },
    };
    Ok((entry, TensorData::Pieces(pieces)))
}

fn narrowed_type(route: &Route, name: &str, dtype: DataType) -> Option<DataType> {
    let allowed = route.rules.inputs.get(name)?.allowed_types.as_deref()?;
    match (dtype, allowed) {
        (DataType::F32, [to @ (DataType::F16 | DataType::BF16)]) => Some(*to),
        _ => None,
    }
}

/// f32 → FP16 or BF16, rounding to nearest even.
fn narrow(pieces: &[Bytes], to: DataType) -> Bytes {
    let total: usize = pieces.iter().map(Bytes::len).sum();
    let mut out = Vec::with_capacity(total / 2);
    for p in pieces {
        for v in p.chunks_exact(4) {
            let v = f32::from_le_bytes([v[0], v[1], v[2], v[3]]);
            let bits = match to {
                DataType::BF16 => half::bf16::from_f32(v).to_bits(),
                _ => half::f16::from_f32(v).to_bits(),
            };
            out.extend_from_slice(&bits.to_le_bytes());
        }
    }
    Bytes::from(out)
}
