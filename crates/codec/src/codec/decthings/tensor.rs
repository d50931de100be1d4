//! The Decthings tensor wire format, both media layouts.
//!
//! `type u8 | ndims u8 | dims: varint × ndims | data`. Fixed-size data is
//! little-endian elements back to back (booleans one byte each). Variable-size
//! types (string, binary, image, audio, video) start their data with a varint
//! giving the byte length of the whole element section, then each element as
//! `varint(len) | bytes`. Media elements carry their format inside the
//! element: `u8 fmtlen | format | data` in the [`Layout::Current`] layout,
//! exactly three format bytes in [`Layout::Legacy`].
//!
//! Decoding is incremental in the mini-redis style: `Ok(None)` means "not
//! enough bytes yet", never an error. Fixed-size data is returned as a slice
//! of the input (no copy).

use bytes::{BufMut, Bytes, BytesMut};

use super::varint::{self, VarintError};
use crate::tensor::{DataType, DecthingsType, Semantic, Shape, Tensor, bytes_layout};

/// Which media element layout to read and write.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Layout {
    /// crates.io `decthings-api` 0.1.x / JS 0.5.x: `u8 fmtlen | format | data`.
    #[default]
    Current,
    /// PyPI `decthings-api` 0.0.4 and the format document: a 3-byte format.
    Legacy,
}

/// Bounds checked against lengths read from the wire before anything is
/// allocated or waited for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DecodeLimits {
    /// Largest data section (in bytes, as on the wire) one tensor may declare.
    pub max_tensor_bytes: u64,
}

impl Default for DecodeLimits {
    fn default() -> Self {
        DecodeLimits {
            max_tensor_bytes: 1 << 32,
        }
    }
}

/// A Decthings tensor could not be decoded.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    #[error("unknown Decthings type byte {byte} at offset {offset}")]
    UnknownType { byte: u8, offset: usize },
    #[error("{what} at offset {offset} is an overlong varint ({value} has a shorter form)")]
    OverlongVarint {
        what: &'static str,
        offset: usize,
        value: u64,
    },
    #[error("truncated Decthings tensor: input ends inside the {what} at offset {offset}")]
    Truncated { what: &'static str, offset: usize },
    #[error("shape {shape} has more elements than fit in 64 bits")]
    CountOverflow { shape: Shape },
    #[error(
        "{dtype} tensor of shape {shape} declares {bytes} data bytes, over the limit of {limit}"
    )]
    TooLarge {
        dtype: DecthingsType,
        shape: Shape,
        bytes: u64,
        limit: u64,
    },
    #[error(
        "{dtype} tensor of shape {shape}: element section of {section} bytes cannot hold {count} elements"
    )]
    SectionTooShort {
        dtype: DecthingsType,
        shape: Shape,
        section: u64,
        count: u64,
    },
    #[error(
        "{dtype} element {index} declares {len} bytes, past the end of its {section}-byte section"
    )]
    ElementPastSection {
        dtype: DecthingsType,
        index: u64,
        len: u64,
        section: u64,
    },
    #[error(
        "{dtype} element {index}: its length prefix runs past the end of its {section}-byte section"
    )]
    ElementLengthPastSection {
        dtype: DecthingsType,
        index: u64,
        section: u64,
    },
    #[error("{dtype} element section declares {declared} bytes but its elements use {used}")]
    SectionLengthMismatch {
        dtype: DecthingsType,
        declared: u64,
        used: u64,
    },
    #[error("{dtype} element {index} is {len} bytes, over the 4 GiB a V2 BYTES element can hold")]
    ElementTooLong {
        dtype: DecthingsType,
        index: u64,
        len: u64,
    },
    #[error("string element {index} is not valid UTF-8")]
    InvalidUtf8 { index: u64 },
    #[error("{dtype} element {index}: media format is not valid UTF-8")]
    InvalidFormat { dtype: DecthingsType, index: u64 },
    #[error("{dtype} element {index} is {len} bytes, too short for its media format")]
    MediaTooShort {
        dtype: DecthingsType,
        index: u64,
        len: u64,
    },
}

/// A tensor could not be written in the Decthings format.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum EncodeError {
    #[error("Decthings tensors have at most 255 dimensions, shape {shape} has {rank}")]
    TooManyDims { shape: Shape, rank: usize },
    #[error("string element {index} is not valid UTF-8")]
    InvalidUtf8 { index: u64 },
    #[error("media format {format:?} does not fit the legacy 3-byte layout")]
    LegacyFormat { format: String },
    #[error("media format {format:?} is longer than 255 bytes")]
    FormatTooLong { format: String },
    #[error("media tensor has {formats} formats for {count} elements")]
    FormatCount { formats: usize, count: u64 },
    #[error("tensor data is malformed: {0}")]
    Data(#[from] crate::tensor::TensorError),
}

/// Decodes one tensor from the front of `input`.
///
/// `Ok(Some((tensor, used)))` consumed `used` bytes; `Ok(None)` means the
/// input ends before the tensor does.
pub fn decode(
    input: &Bytes,
    layout: Layout,
    limits: &DecodeLimits,
) -> Result<Option<(Tensor, usize)>, DecodeError> {
    let mut r = Reader { input, pos: 0 };
    match r.tensor(layout, limits) {
        Ok(t) => Ok(Some((t, r.pos))),
        Err(Stop::Incomplete(_)) => Ok(None),
        Err(Stop::Invalid(e)) => Err(e),
    }
}

/// Decodes every tensor in a complete buffer, back to back. Running out of
/// input inside a tensor is an error here.
pub fn decode_all(
    input: &Bytes,
    layout: Layout,
    limits: &DecodeLimits,
) -> Result<Vec<Tensor>, DecodeError> {
    let mut tensors = Vec::new();
    let mut r = Reader { input, pos: 0 };
    while r.pos < input.len() {
        let start = r.pos;
        match r.tensor(layout, limits) {
            Ok(t) => tensors.push(t),
            Err(Stop::Incomplete(what)) => {
                let offset = if r.pos > start { r.pos } else { start };
                return Err(DecodeError::Truncated { what, offset });
            }
            Err(Stop::Invalid(e)) => return Err(e),
        }
    }
    Ok(tensors)
}

enum Stop {
    Incomplete(&'static str),
    Invalid(DecodeError),
}

impl From<DecodeError> for Stop {
    fn from(e: DecodeError) -> Self {
        Stop::Invalid(e)
    }
}

struct Reader<'a> {
    input: &'a Bytes,
    pos: usize,
}

impl Reader<'_> {
    fn rest(&self) -> &[u8] {
        &self.input[self.pos..]
    }

    fn u8(&mut self, what: &'static str) -> Result<u8, Stop> {
        let b = *self.rest().first().ok_or(Stop::Incomplete(what))?;
        self.pos += 1;
        Ok(b)
    }

    fn varint(&mut self, what: &'static str) -> Result<u64, Stop> {
        match varint::read(self.rest()) {
            Ok((v, n)) => {
                self.pos += n;
                Ok(v)
            }
            Err(VarintError::Incomplete) => Err(Stop::Incomplete(what)),
            Err(VarintError::Overlong { value }) => {
                Err(Stop::Invalid(DecodeError::OverlongVarint {
                    what,
                    offset: self.pos,
                    value,
                }))
            }
        }
    }

    /// Takes `n` bytes as a slice of the input, or reports incompleteness.
    fn take(&mut self, n: u64, what: &'static str) -> Result<Bytes, Stop> {
        if (self.rest().len() as u64) < n {
            return Err(Stop::Incomplete(what));
        }
        let n = n as usize;
        let b = self.input.slice(self.pos..self.pos + n);
        self.pos += n;
        Ok(b)
    }

    fn tensor(&mut self, layout: Layout, limits: &DecodeLimits) -> Result<Tensor, Stop> {
        let type_offset = self.pos;
        let byte = self.u8("type byte")?;
        let dtype = DecthingsType::from_type_byte(byte).ok_or(DecodeError::UnknownType {
            byte,
            offset: type_offset,
        })?;
        let rank = self.u8("dimension count")?;
        let mut dims = Vec::with_capacity(rank as usize);
        for _ in 0..rank {
            dims.push(self.varint("dimension")?);
        }
        let shape = Shape::new(dims);
        let count = shape
            .element_count()
            .map_err(|_| DecodeError::CountOverflow {
                shape: shape.clone(),
            })?;
        if dtype.is_variable() {
            self.variable(dtype, shape, count, layout, limits)
        } else {
            self.fixed(dtype, shape, count, limits)
        }
    }

    fn fixed(
        &mut self,
        dtype: DecthingsType,
        shape: Shape,
        count: u64,
        limits: &DecodeLimits,
    ) -> Result<Tensor, Stop> {
        let v2 = dtype.to_v2();
        let size = v2.fixed_size().unwrap_or(1) as u64;
        let bytes = count.checked_mul(size).ok_or(DecodeError::CountOverflow {
            shape: shape.clone(),
        })?;
        if bytes > limits.max_tensor_bytes {
            return Err(DecodeError::TooLarge {
                dtype,
                shape,
                bytes,
                limit: limits.max_tensor_bytes,
            }
            .into());
        }
        let mut data = self.take(bytes, "tensor data")?;
        if v2 == DataType::Bool && data.iter().any(|&b| b > 1) {
            // The official readers take any non-zero byte as true; V2 wants 0/1.
            data = data
                .iter()
                .map(|&b| u8::from(b != 0))
                .collect::<Vec<_>>()
                .into();
        }
        Ok(Tensor {
            dtype: v2,
            shape,
            data,
            semantic: Semantic::Plain,
        })
    }

    fn variable(
        &mut self,
        dtype: DecthingsType,
        shape: Shape,
        count: u64,
        layout: Layout,
        limits: &DecodeLimits,
    ) -> Result<Tensor, Stop> {
        let section = self.varint("element section length")?;
        if section > limits.max_tensor_bytes {
            return Err(DecodeError::TooLarge {
                dtype,
                shape,
                bytes: section,
                limit: limits.max_tensor_bytes,
            }
            .into());
        }
        // Every element takes at least its one-byte length prefix.
        if count > section {
            return Err(DecodeError::SectionTooShort {
                dtype,
                shape,
                section,
                count,
            }
            .into());
        }
        let body = self.take(section, "element section")?;
        let elements = split_elements(dtype, &body, count, section)?;
        let mut data = BytesMut::with_capacity(body.len() + 3 * elements.len());
        let mut formats = Vec::new();
        for (index, element) in (0u64..).zip(elements) {
            let payload = match dtype {
                DecthingsType::String => {
                    if std::str::from_utf8(element).is_err() {
                        return Err(DecodeError::InvalidUtf8 { index }.into());
                    }
                    element
                }
                DecthingsType::Binary => element,
                _ => {
                    let (format, payload) = split_media(dtype, index, element, layout)?;
                    formats.push(format);
                    payload
                }
            };
            bytes_layout::push(&mut data, payload);
        }
        let semantic = match dtype {
            DecthingsType::String => Semantic::String,
            DecthingsType::Binary => Semantic::Binary,
            kind => Semantic::Media { kind, formats },
        };
        Ok(Tensor {
            dtype: DataType::Bytes,
            shape,
            data: data.freeze(),
            semantic,
        })
    }
}

/// Splits a complete element section into its `count` elements.
fn split_elements(
    dtype: DecthingsType,
    body: &[u8],
    count: u64,
    section: u64,
) -> Result<Vec<&[u8]>, DecodeError> {
    let mut elements = Vec::with_capacity(count as usize);
    let mut pos = 0usize;
    for index in 0..count {
        let (len, n) = match varint::read(&body[pos..]) {
            Ok(v) => v,
            Err(VarintError::Incomplete) => {
                return Err(DecodeError::ElementLengthPastSection {
                    dtype,
                    index,
                    section,
                });
            }
            Err(VarintError::Overlong { value }) => {
                return Err(DecodeError::OverlongVarint {
                    what: "element length",
                    offset: pos,
                    value,
                });
            }
        };
        pos += n;
        if len > (body.len() - pos) as u64 {
            return Err(DecodeError::ElementPastSection {
                dtype,
                index,
                len,
                section,
            });
        }
        if len > u64::from(u32::MAX) {
            return Err(DecodeError::ElementTooLong { dtype, index, len });
        }
        elements.push(&body[pos..pos + len as usize]);
        pos += len as usize;
    }
    if pos != body.len() {
        return Err(DecodeError::SectionLengthMismatch {
            dtype,
            declared: section,
            used: pos as u64,
        });
    }
    Ok(elements)
}

fn split_media(
    dtype: DecthingsType,
    index: u64,
    element: &[u8],
    layout: Layout,
) -> Result<(String, &[u8]), DecodeError> {
    let too_short = || DecodeError::MediaTooShort {
        dtype,
        index,
        len: element.len() as u64,
    };
    let (format, payload) = match layout {
        Layout::Current => {
            let (&fmt_len, rest) = element.split_first().ok_or_else(too_short)?;
            if rest.len() < fmt_len as usize {
                return Err(too_short());
            }
            rest.split_at(fmt_len as usize)
        }
        Layout::Legacy => {
            if element.len() < 3 {
                return Err(too_short());
            }
            element.split_at(3)
        }
    };
    let format = std::str::from_utf8(format)
        .map_err(|_| DecodeError::InvalidFormat { dtype, index })?
        .to_owned();
    Ok((format, payload))
}

/// Encodes `tensor` and returns the wire bytes as a header and a data part.
/// For fixed-size types (other than FP16/BF16, which widen to f32) the data
/// part is the tensor's own buffer: nothing is copied.
pub fn encode_parts(tensor: &Tensor, layout: Layout) -> Result<(Bytes, Bytes), EncodeError> {
    crate::tensor::check_data(tensor.dtype, &tensor.shape, &tensor.data)?;
    let dtype = tensor.decthings_type();
    let mut header = head(dtype, &tensor.shape)?;
    let data = match tensor.dtype {
        DataType::F16 => widen(&tensor.data, |b| half::f16::from_le_bytes(b).to_f32()),
        DataType::BF16 => widen(&tensor.data, |b| half::bf16::from_le_bytes(b).to_f32()),
        DataType::Bool if tensor.data.iter().any(|&b| b > 1) => tensor
            .data
            .iter()
            .map(|&b| u8::from(b != 0))
            .collect::<Vec<_>>()
            .into(),
        DataType::Bytes => {
            let section = encode_variable(tensor, dtype, layout)?;
            varint::write(&mut header, section.len() as u64);
            section
        }
        _ => tensor.data.clone(),
    };
    Ok((header.freeze(), data))
}

/// `type | ndims | dims`: the start of every tensor. A fixed-size tensor is
/// this followed by its little-endian data, the same bytes as in V2, so a
/// writer can send this head and the data it already holds, uncopied.
pub fn head(dtype: DecthingsType, shape: &Shape) -> Result<BytesMut, EncodeError> {
    let rank = shape.rank();
    if rank > 255 {
        return Err(EncodeError::TooManyDims {
            shape: shape.clone(),
            rank,
        });
    }
    let mut header = BytesMut::with_capacity(2 + 9 * rank + 9);
    header.put_u8(dtype.type_byte());
    header.put_u8(rank as u8);
    for &d in shape.dims() {
        varint::write(&mut header, d);
    }
    Ok(header)
}

/// Encodes `tensor` onto the end of `out`.
pub fn encode(tensor: &Tensor, layout: Layout, out: &mut BytesMut) -> Result<(), EncodeError> {
    let (header, data) = encode_parts(tensor, layout)?;
    out.reserve(header.len() + data.len());
    out.put_slice(&header);
    out.put_slice(&data);
    Ok(())
}

fn widen(data: &[u8], f: impl Fn([u8; 2]) -> f32) -> Bytes {
    let mut out = Vec::with_capacity(data.len() * 2);
    for pair in data.chunks_exact(2) {
        out.extend_from_slice(&f([pair[0], pair[1]]).to_le_bytes());
    }
    out.into()
}

fn encode_variable(
    tensor: &Tensor,
    dtype: DecthingsType,
    layout: Layout,
) -> Result<Bytes, EncodeError> {
    let formats: &[String] = match &tensor.semantic {
        Semantic::Media { formats, .. } => formats,
        _ => &[],
    };
    let count = tensor.element_count();
    if dtype.is_media() && formats.len() as u64 != count {
        return Err(EncodeError::FormatCount {
            formats: formats.len(),
            count,
        });
    }
    let mut out = BytesMut::with_capacity(tensor.data.len());
    for (index, element) in (0u64..).zip(crate::tensor::BytesElements::new(&tensor.data)) {
        // check_data above proved the layout well formed.
        let element = element.map_err(crate::tensor::TensorError::from)?;
        if dtype.is_media() {
            let format = &formats[index as usize];
            match layout {
                Layout::Current => {
                    let fmt_len =
                        u8::try_from(format.len()).map_err(|_| EncodeError::FormatTooLong {
                            format: format.clone(),
                        })?;
                    varint::write(&mut out, 1 + format.len() as u64 + element.len() as u64);
                    out.put_u8(fmt_len);
                }
                Layout::Legacy => {
                    if format.len() != 3 {
                        return Err(EncodeError::LegacyFormat {
                            format: format.clone(),
                        });
                    }
                    varint::write(&mut out, 3 + element.len() as u64);
                }
            }
            out.put_slice(format.as_bytes());
        } else {
            if dtype == DecthingsType::String && std::str::from_utf8(element).is_err() {
                return Err(EncodeError::InvalidUtf8 { index });
            }
            varint::write(&mut out, element.len() as u64);
        }
        out.put_slice(element);
    }
    Ok(out.freeze())
}

#[cfg(test)]
mod tests;
