//! What decoding a protobuf message would allocate, bounded **before** it
//! is decoded.
//!
//! prost builds a struct for every entry of a repeated message field: an
//! empty `inputs` entry is 2 bytes on the wire (`0x2a 0x00`) and a
//! 300-byte `InferInputTensor` in memory, so one 16 MiB message asked for
//! gigabytes. A pass over the wire format, driven by the message's schema
//! ([`Schema`]), counts what the decode would build and refuses the
//! message before anything is allocated for it:
//!
//! - repeated entries outside tensor data (tensors, map entries, strings,
//!   shape dimensions) at most [`Caps::max_values`];
//! - bytes outside tensor data at most [`Caps::max_header_bytes`];
//! - a shape at most [`Caps::max_dims`] dimensions, a tensor's typed
//!   contents at most [`Caps::max_elements`] elements;
//! - what the decoded message would take at most [`DECODED_SLACK`] plus
//!   [`DECODED_FACTOR`] times the message's own size, whatever it holds
//!   (every honest message is far below: its worst case, a BYTES tensor of
//!   empty strings, is 16 bytes decoded per wire byte).
//!
//! Unknown fields cost nothing (prost skips them); groups, which no
//! message of the protocol has, are refused. Never does I/O.

use std::sync::OnceLock;

use prost_reflect::{Cardinality, Kind as ReflectKind, MessageDescriptor};

use super::proto::inference::model_infer_request::{InferInputTensor, InferRequestedOutputTensor};
use super::proto::inference::model_infer_response::InferOutputTensor;
use super::proto::inference::{InferParameter, InferTensorContents};

/// What the decoded message may take beyond [`DECODED_FACTOR`] times its
/// size: room for the few structs of a small message.
pub const DECODED_SLACK: u64 = 256 << 10;
/// Decoded bytes per wire byte allowed past [`DECODED_SLACK`].
pub const DECODED_FACTOR: u64 = 16;
/// Deepest nesting of messages read.
pub const MAX_DEPTH: u32 = 32;

/// The caps one message is checked against.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Caps {
    /// Most repeated entries outside tensor data: tensors, map entries,
    /// repeated strings, shape dimensions.
    pub max_values: u64,
    /// Most bytes of the message outside tensor data.
    pub max_header_bytes: u64,
    /// Most elements in one tensor's typed contents.
    pub max_elements: u64,
    /// Most dimensions in one shape.
    pub max_dims: u64,
}

impl Caps {
    /// The caps of a message no route's limits apply to (the backend's
    /// answers to calls other than inference): 65,536 values, 1 MiB
    /// outside tensor data.
    pub const DEFAULT: Caps = Caps {
        max_values: 1 << 16,
        max_header_bytes: 1 << 20,
        max_elements: 1 << 28,
        max_dims: 64,
    };
}

/// A message refused before it was decoded.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum BudgetError {
    #[error("invalid {message}: {reason}")]
    Malformed {
        message: &'static str,
        reason: &'static str,
    },
    #[error("{message} holds more than {limit} entries outside tensor data")]
    TooManyValues { message: &'static str, limit: u64 },
    #[error("{message} holds more than {limit} bytes outside tensor data")]
    HeaderTooLarge { message: &'static str, limit: u64 },
    #[error("{message}: a shape has more than {limit} dimensions")]
    TooManyDims { message: &'static str, limit: u64 },
    #[error("{message}: typed contents hold more than {limit} elements")]
    TooManyElements { message: &'static str, limit: u64 },
    #[error(
        "{message} of {len} bytes would take about {decoded} bytes to decode, more than the {limit} allowed for its size"
    )]
    Amplified {
        message: &'static str,
        len: u64,
        decoded: u64,
        limit: u64,
    },
}

impl BudgetError {
    /// Whether the message is not protobuf at all (else: over a cap).
    pub fn is_malformed(&self) -> bool {
        matches!(self, BudgetError::Malformed { .. })
    }
}

/// What a checked message comes to.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tally {
    /// Repeated entries outside tensor data.
    pub values: u64,
    /// Bytes of tensor data (raw contents, typed contents).
    pub data_bytes: u64,
    /// What the decoded message would take, about.
    pub decoded: u64,
}

/// What a field is for, beyond its type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// Anything outside tensor data.
    Header,
    /// Tensor data: raw contents, or one of typed contents' lists.
    Data,
    /// A shape's dimensions.
    Dims,
}

/// How a field is stored once decoded.
#[derive(Clone, Copy, Debug)]
pub enum Kind {
    /// A number or bool, `width` bytes in memory; `fixed` when its wire
    /// form is fixed-size too (float, double, fixed32/64), else a varint.
    Scalar { width: u64, fixed: bool },
    /// A string or `bytes`.
    Text,
    /// A message.
    Message(&'static Schema),
    /// A map entry (key 1, value 2), stored in a map.
    MapEntry(&'static Schema),
}

/// One field of a [`Schema`].
#[derive(Clone, Copy, Debug)]
pub struct Field {
    pub number: u32,
    pub kind: Kind,
    pub repeated: bool,
    pub role: Role,
}

/// A message type as the budget sees it.
#[derive(Debug)]
pub struct Schema {
    pub name: &'static str,
    /// The size of its decoded struct.
    pub size: u64,
    pub fields: &'static [Field],
}

impl Schema {
    fn field(&self, number: u32) -> Option<&Field> {
        self.fields.iter().find(|f| f.number == number)
    }
}

/// What a map entry costs beyond its key and value (a B-tree node's
/// share per entry).
const MAP_SLOT: u64 = 16;
/// A `String`, `Vec` or `Bytes` in its parent.
const SLOT: u64 = 32;

const fn field(number: u32, kind: Kind, repeated: bool, role: Role) -> Field {
    Field {
        number,
        kind,
        repeated,
        role,
    }
}

const fn size<T>() -> u64 {
    std::mem::size_of::<T>() as u64
}

const SCALAR8: Kind = Kind::Scalar {
    width: 8,
    fixed: false,
};
const BOOL: Kind = Kind::Scalar {
    width: 1,
    fixed: false,
};
const INT4: Kind = Kind::Scalar {
    width: 4,
    fixed: false,
};

/// `inference.InferParameter`.
pub static INFER_PARAMETER: Schema = Schema {
    name: "InferParameter",
    size: size::<InferParameter>(),
    fields: &[
        field(1, BOOL, false, Role::Header),
        field(2, SCALAR8, false, Role::Header),
        field(3, Kind::Text, false, Role::Header),
        field(
            4,
            Kind::Scalar {
                width: 8,
                fixed: true,
            },
            false,
            Role::Header,
        ),
        field(5, SCALAR8, false, Role::Header),
    ],
};

static PARAMETER_ENTRY: Schema = Schema {
    name: "parameters entry",
    size: size::<(String, InferParameter)>() + MAP_SLOT,
    fields: &[
        field(1, Kind::Text, false, Role::Header),
        field(2, Kind::Message(&INFER_PARAMETER), false, Role::Header),
    ],
};

static CONTENTS: Schema = Schema {
    name: "InferTensorContents",
    size: size::<InferTensorContents>(),
    fields: &[
        field(1, BOOL, true, Role::Data),
        field(2, INT4, true, Role::Data),
        field(3, SCALAR8, true, Role::Data),
        field(4, INT4, true, Role::Data),
        field(5, SCALAR8, true, Role::Data),
        field(
            6,
            Kind::Scalar {
                width: 4,
                fixed: true,
            },
            true,
            Role::Data,
        ),
        field(
            7,
            Kind::Scalar {
                width: 8,
                fixed: true,
            },
            true,
            Role::Data,
        ),
        field(8, Kind::Text, true, Role::Data),
    ],
};

static INPUT: Schema = Schema {
    name: "InferInputTensor",
    size: size::<InferInputTensor>(),
    fields: &[
        field(1, Kind::Text, false, Role::Header),
        field(2, Kind::Text, false, Role::Header),
        field(3, SCALAR8, true, Role::Dims),
        field(4, Kind::MapEntry(&PARAMETER_ENTRY), true, Role::Header),
        field(5, Kind::Message(&CONTENTS), false, Role::Header),
    ],
};

static REQUESTED_OUTPUT: Schema = Schema {
    name: "InferRequestedOutputTensor",
    size: size::<InferRequestedOutputTensor>(),
    fields: &[
        field(1, Kind::Text, false, Role::Header),
        field(2, Kind::MapEntry(&PARAMETER_ENTRY), true, Role::Header),
    ],
};

/// `inference.ModelInferRequest`.
pub static MODEL_INFER_REQUEST: Schema = Schema {
    name: "ModelInferRequest",
    size: size::<super::proto::inference::ModelInferRequest>(),
    fields: &[
        field(1, Kind::Text, false, Role::Header),
        field(2, Kind::Text, false, Role::Header),
        field(3, Kind::Text, false, Role::Header),
        field(4, Kind::MapEntry(&PARAMETER_ENTRY), true, Role::Header),
        field(5, Kind::Message(&INPUT), true, Role::Header),
        field(6, Kind::Message(&REQUESTED_OUTPUT), true, Role::Header),
        field(7, Kind::Text, true, Role::Data),
    ],
};

static OUTPUT: Schema = Schema {
    name: "InferOutputTensor",
    size: size::<InferOutputTensor>(),
    fields: &[
        field(1, Kind::Text, false, Role::Header),
        field(2, Kind::Text, false, Role::Header),
        field(3, SCALAR8, true, Role::Dims),
        field(4, Kind::MapEntry(&PARAMETER_ENTRY), true, Role::Header),
        field(5, Kind::Message(&CONTENTS), false, Role::Header),
    ],
};

/// `inference.ModelInferResponse`.
pub static MODEL_INFER_RESPONSE: Schema = Schema {
    name: "ModelInferResponse",
    size: size::<super::proto::inference::ModelInferResponse>(),
    fields: &[
        field(1, Kind::Text, false, Role::Header),
        field(2, Kind::Text, false, Role::Header),
        field(3, Kind::Text, false, Role::Header),
        field(4, Kind::MapEntry(&PARAMETER_ENTRY), true, Role::Header),
        field(5, Kind::Message(&OUTPUT), true, Role::Header),
        field(6, Kind::Text, true, Role::Data),
    ],
};

/// `inference.ModelStreamInferResponse`.
pub static MODEL_STREAM_INFER_RESPONSE: Schema = Schema {
    name: "ModelStreamInferResponse",
    size: size::<super::proto::inference::ModelStreamInferResponse>(),
    fields: &[
        field(1, Kind::Text, false, Role::Header),
        field(2, Kind::Message(&MODEL_INFER_RESPONSE), false, Role::Header),
    ],
};

/// The schema of any message of `proto/` by its full name
/// (`inference.ModelConfigResponse`), made once from the descriptors:
/// for the messages off the inference path, with every field
/// [`Role::Header`].
pub fn schema(full_name: &str) -> Option<&'static Schema> {
    static ALL: OnceLock<Vec<&'static Schema>> = OnceLock::new();
    let all = ALL.get_or_init(|| {
        let Ok(pool) = super::json::descriptors() else {
            return Vec::new();
        };
        let mut made = Vec::new();
        for m in pool.all_messages() {
            from_descriptor(&m, &mut made, 0);
        }
        made.into_iter().map(|(_, s)| s).collect()
    });
    all.iter().copied().find(|s| s.name == full_name)
}

/// The schema of `m` (and of the messages it holds), each made once and
/// kept for the life of the process.
fn from_descriptor(
    m: &MessageDescriptor,
    made: &mut Vec<(String, &'static Schema)>,
    depth: u32,
) -> &'static Schema {
    if let Some((_, s)) = made.iter().find(|(n, _)| n == m.full_name()) {
        return s;
    }
    // A message that holds itself, or nests past any real one, costs a
    // box and is not looked into further.
    if depth > MAX_DEPTH {
        return &OPAQUE;
    }
    let mut fields = Vec::new();
    let mut size = 0;
    for f in m.fields() {
        let repeated = f.cardinality() == Cardinality::Repeated;
        let kind = match f.kind() {
            ReflectKind::String | ReflectKind::Bytes => Kind::Text,
            ReflectKind::Message(inner) if inner.is_map_entry() => {
                Kind::MapEntry(from_descriptor(&inner, made, depth + 1))
            }
            ReflectKind::Message(inner) => Kind::Message(from_descriptor(&inner, made, depth + 1)),
            ReflectKind::Bool => BOOL,
            ReflectKind::Int32
            | ReflectKind::Sint32
            | ReflectKind::Uint32
            | ReflectKind::Enum(_) => INT4,
            ReflectKind::Fixed32 | ReflectKind::Sfixed32 | ReflectKind::Float => Kind::Scalar {
                width: 4,
                fixed: true,
            },
            ReflectKind::Fixed64 | ReflectKind::Sfixed64 | ReflectKind::Double => Kind::Scalar {
                width: 8,
                fixed: true,
            },
            _ => SCALAR8,
        };
        size += match (&kind, repeated || f.is_map()) {
            (_, true) => SLOT + 16,
            (Kind::Message(inner), false) => inner.size.max(8),
            (Kind::Text, false) => SLOT,
            (Kind::Scalar { width, .. }, false) => *width,
            (Kind::MapEntry(_), false) => SLOT + 16,
        };
        fields.push(field(
            f.number(),
            kind,
            repeated || f.is_map(),
            Role::Header,
        ));
    }
    let name: &'static str = Box::leak(m.full_name().to_owned().into_boxed_str());
    let schema: &'static Schema = Box::leak(Box::new(Schema {
        name,
        size: size + if m.is_map_entry() { MAP_SLOT } else { 0 },
        fields: Box::leak(fields.into_boxed_slice()),
    }));
    made.push((name.to_owned(), schema));
    schema
}

/// A message not looked into.
static OPAQUE: Schema = Schema {
    name: "message",
    size: 8,
    fields: &[],
};

/// Checks `message`, a message of `schema`, against `caps`; what it
/// comes to.
pub fn check(schema: &'static Schema, message: &[u8], caps: &Caps) -> Result<Tally, BudgetError> {
    let mut walk = Walk {
        caps,
        top: schema.name,
        tally: Tally {
            decoded: schema.size,
            ..Tally::default()
        },
    };
    walk.message(schema, message, 0)?;
    let len = message.len() as u64;
    let header = len.saturating_sub(walk.tally.data_bytes);
    if header > caps.max_header_bytes {
        return Err(BudgetError::HeaderTooLarge {
            message: schema.name,
            limit: caps.max_header_bytes,
        });
    }
    let limit = DECODED_SLACK.saturating_add(DECODED_FACTOR.saturating_mul(len));
    if walk.tally.decoded > limit {
        return Err(BudgetError::Amplified {
            message: schema.name,
            len,
            decoded: walk.tally.decoded,
            limit,
        });
    }
    Ok(walk.tally)
}

/// The wire types of protobuf.
const VARINT: u8 = 0;
const FIXED64: u8 = 1;
const LEN: u8 = 2;
const FIXED32: u8 = 5;

struct Walk<'c> {
    caps: &'c Caps,
    top: &'static str,
    tally: Tally,
}

impl Walk<'_> {
    fn malformed(&self, reason: &'static str) -> BudgetError {
        BudgetError::Malformed {
            message: self.top,
            reason,
        }
    }

    fn value(&mut self, n: u64) -> Result<(), BudgetError> {
        self.tally.values += n;
        if self.tally.values > self.caps.max_values {
            return Err(BudgetError::TooManyValues {
                message: self.top,
                limit: self.caps.max_values,
            });
        }
        Ok(())
    }

    fn message(&mut self, schema: &Schema, mut b: &[u8], depth: u32) -> Result<(), BudgetError> {
        if depth > MAX_DEPTH {
            return Err(self.malformed("messages nested too deep"));
        }
        // Per instance: the dimensions of its shape, the elements of its
        // typed contents.
        let (mut dims, mut elements) = (0u64, 0u64);
        while !b.is_empty() {
            let key = varint(&mut b).ok_or_else(|| self.malformed("a field key is cut"))?;
            let (number, wire) = ((key >> 3) as u32, (key & 7) as u8);
            if number == 0 {
                return Err(self.malformed("field number 0"));
            }
            let payload = match wire {
                VARINT => {
                    varint(&mut b).ok_or_else(|| self.malformed("a varint is cut"))?;
                    Payload::Scalar
                }
                FIXED64 | FIXED32 => {
                    let n = if wire == FIXED64 { 8 } else { 4 };
                    if b.len() < n {
                        return Err(self.malformed("a fixed-size field is cut"));
                    }
                    b = &b[n..];
                    Payload::Scalar
                }
                LEN => {
                    let len = varint(&mut b).ok_or_else(|| self.malformed("a length is cut"))?;
                    let len = usize::try_from(len)
                        .ok()
                        .filter(|&l| l <= b.len())
                        .ok_or_else(|| self.malformed("a length runs past the message"))?;
                    let (body, rest) = b.split_at(len);
                    b = rest;
                    Payload::Len(body)
                }
                _ => return Err(self.malformed("groups and unknown wire types are not accepted")),
            };
            let Some(f) = schema.field(number) else {
                continue; // unknown: prost skips it
            };
            let counted = self.field(f, payload, depth)?;
            match f.role {
                Role::Dims => {
                    dims += counted;
                    if dims > self.caps.max_dims {
                        return Err(BudgetError::TooManyDims {
                            message: self.top,
                            limit: self.caps.max_dims,
                        });
                    }
                    self.value(counted)?;
                }
                Role::Data => {
                    elements += counted;
                    if elements > self.caps.max_elements {
                        return Err(BudgetError::TooManyElements {
                            message: self.top,
                            limit: self.caps.max_elements,
                        });
                    }
                }
                Role::Header if f.repeated => self.value(counted)?,
                Role::Header => {}
            }
        }
        Ok(())
    }

    /// Counts one occurrence of field `f`: what it adds to the decoded
    /// size; how many entries it holds (elements of a packed list).
    fn field(&mut self, f: &Field, payload: Payload<'_>, depth: u32) -> Result<u64, BudgetError> {
        let t = &mut self.tally;
        match (f.kind, payload) {
            (Kind::Scalar { width, .. }, Payload::Scalar) => {
                if f.repeated {
                    t.decoded += width;
                }
                Ok(1)
            }
            (Kind::Scalar { width, fixed }, Payload::Len(body)) if f.repeated => {
                // A packed list: fixed-size values, or varints (each ends
                // with a byte below 0x80).
                let n = if fixed {
                    body.len() as u64 / width
                } else {
                    body.iter().filter(|&&byte| byte < 0x80).count() as u64
                };
                t.decoded += n * width;
                if f.role == Role::Data {
                    t.data_bytes += body.len() as u64;
                }
                Ok(n)
            }
            (Kind::Text, Payload::Len(body)) => {
                let len = body.len() as u64;
                t.decoded += len + if f.repeated { SLOT } else { 0 };
                if f.role == Role::Data {
                    t.data_bytes += len;
                }
                Ok(1)
            }
            (Kind::Message(inner), Payload::Len(body)) => {
                if f.repeated {
                    t.decoded += inner.size;
                }
                self.message(inner, body, depth + 1)?;
                Ok(1)
            }
            (Kind::MapEntry(entry), Payload::Len(body)) => {
                t.decoded += entry.size;
                self.message(entry, body, depth + 1)?;
                Ok(1)
            }
            _ => Err(self.malformed("a field of the wrong wire type")),
        }
    }
}

enum Payload<'a> {
    Scalar,
    Len(&'a [u8]),
}

/// Reads a varint off the front of `b`.
fn varint(b: &mut &[u8]) -> Option<u64> {
    let mut value = 0u64;
    for (i, &byte) in b.iter().enumerate().take(10) {
        value |= u64::from(byte & 0x7f) << (7 * i);
        if byte < 0x80 {
            *b = &b[i + 1..];
            return Some(value);
        }
    }
    None
}

/// The model a `ModelInferRequest` names, and its version (empty when
/// none), read off its top-level fields without decoding the rest: what
/// its route is bound from before anything else of it is looked at. As
/// prost does, the last occurrence of a field wins.
pub fn model_of_request(message: &[u8]) -> Result<(&str, &str), BudgetError> {
    let bad = |reason| BudgetError::Malformed {
        message: MODEL_INFER_REQUEST.name,
        reason,
    };
    let (mut name, mut version) = ("", "");
    let mut b = message;
    while !b.is_empty() {
        let key = varint(&mut b).ok_or(bad("a field key is cut"))?;
        let (number, wire) = (key >> 3, (key & 7) as u8);
        match wire {
            VARINT => {
                varint(&mut b).ok_or(bad("a varint is cut"))?;
            }
            FIXED64 | FIXED32 => {
                let n = if wire == FIXED64 { 8 } else { 4 };
                b = b.get(n..).ok_or(bad("a fixed-size field is cut"))?;
            }
            LEN => {
                let len = varint(&mut b).ok_or(bad("a length is cut"))?;
                let len = usize::try_from(len)
                    .ok()
                    .filter(|&l| l <= b.len())
                    .ok_or(bad("a length runs past the message"))?;
                let (body, rest) = b.split_at(len);
                b = rest;
                let text = || std::str::from_utf8(body).map_err(|_| bad("a name is not UTF-8"));
                match number {
                    1 => name = text()?,
                    2 => version = text()?,
                    _ => {}
                }
            }
            _ => return Err(bad("groups and unknown wire types are not accepted")),
        }
    }
    Ok((name, version))
}

#[cfg(test)]
mod tests;
