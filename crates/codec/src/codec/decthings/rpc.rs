//! Framing of a Decthings `Model.evaluate` call (HTTP and WebSocket).
//!
//! Request: `u8 blob_count | varint json_len | varint blob_len × blob_count |
//! JSON | blobs`; over WebSocket the same, after a `u32` big-endian request id.
//! Response: `varint json_len | JSON | (varint blob_len | blob)*`.
//! Each blob is a run of tensors back to back (see [`super::tensor`]); blobs
//! pair with the parameters that carry tensors, in order. This module only
//! frames: it never looks inside the JSON or the blobs.

use bytes::{BufMut, Bytes, BytesMut};

use super::varint::{self, VarintError};

/// A framed `Model.evaluate` request or response: its JSON and its blobs,
/// each a slice of the input.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Frame {
    pub json: Bytes,
    pub blobs: Vec<Bytes>,
}

/// A WebSocket request frame: the request id and the framed request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WsFrame {
    pub id: u32,
    pub frame: Frame,
}

/// A framed message could not be split.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RpcError {
    #[error("truncated Decthings RPC message: input ends inside the {what} at offset {offset}")]
    Truncated { what: &'static str, offset: usize },
    #[error("{what} at offset {offset} is an overlong varint ({value} has a shorter form)")]
    OverlongVarint {
        what: &'static str,
        offset: usize,
        value: u64,
    },
    #[error("Decthings RPC message declares {declared} bytes, over the limit of {limit}")]
    TooLarge { declared: u64, limit: u64 },
    #[error("{extra} unexpected bytes after the last blob of the Decthings RPC message")]
    TrailingBytes { extra: usize },
    #[error("a Decthings RPC request carries at most 255 blobs, got {count}")]
    TooManyBlobs { count: usize },
}

struct Cursor<'a> {
    input: &'a Bytes,
    pos: usize,
}

impl Cursor<'_> {
    fn varint(&mut self, what: &'static str) -> Result<u64, RpcError> {
        match varint::read(&self.input[self.pos..]) {
            Ok((v, n)) => {
                self.pos += n;
                Ok(v)
            }
            Err(VarintError::Incomplete) => Err(RpcError::Truncated {
                what,
                offset: self.pos,
            }),
            Err(VarintError::Overlong { value }) => Err(RpcError::OverlongVarint {
                what,
                offset: self.pos,
                value,
            }),
        }
    }

    fn take(&mut self, n: u64, what: &'static str) -> Result<Bytes, RpcError> {
        let available = (self.input.len() - self.pos) as u64;
        if n > available {
            return Err(RpcError::Truncated {
                what,
                offset: self.pos,
            });
        }
        let b = self.input.slice(self.pos..self.pos + n as usize);
        self.pos += n as usize;
        Ok(b)
    }
}

/// Splits an HTTP `Model.evaluate` request body. Every declared length is
/// checked against the body before anything is sliced.
pub fn decode_request(body: &Bytes) -> Result<Frame, RpcError> {
    let mut c = Cursor {
        input: body,
        pos: 0,
    };
    let count = *body.first().ok_or(RpcError::Truncated {
        what: "blob count",
        offset: 0,
    })?;
    c.pos = 1;
    request_after_count(&mut c, count)
}

fn request_after_count(c: &mut Cursor<'_>, count: u8) -> Result<Frame, RpcError> {
    let json_len = c.varint("JSON length")?;
    let mut lens = Vec::with_capacity(count as usize);
    let mut total = json_len;
    for _ in 0..count {
        let len = c.varint("blob length")?;
        total = total.saturating_add(len);
        lens.push(len);
    }
    let available = (c.input.len() - c.pos) as u64;
    if total > available {
        return Err(RpcError::Truncated {
            what: if json_len > available {
                "JSON"
            } else {
                "blobs"
            },
            offset: c.pos,
        });
    }
    let json = c.take(json_len, "JSON")?;
    let blobs = lens
        .into_iter()
        .map(|len| c.take(len, "blob"))
        .collect::<Result<Vec<_>, _>>()?;
    let extra = c.input.len() - c.pos;
    if extra > 0 {
        return Err(RpcError::TrailingBytes { extra });
    }
    Ok(Frame { json, blobs })
}

/// Splits a WebSocket request frame.
pub fn decode_ws_request(frame: &Bytes) -> Result<WsFrame, RpcError> {
    let id_bytes = frame.first_chunk::<4>().ok_or(RpcError::Truncated {
        what: "request id",
        offset: 0,
    })?;
    let count = *frame.get(4).ok_or(RpcError::Truncated {
        what: "blob count",
        offset: 4,
    })?;
    let mut c = Cursor {
        input: frame,
        pos: 5,
    };
    let request = request_after_count(&mut c, count)?;
    Ok(WsFrame {
        id: u32::from_be_bytes(*id_bytes),
        frame: request,
    })
}

/// Frames an HTTP request body.
pub fn encode_request(json: &[u8], blobs: &[Bytes]) -> Result<Bytes, RpcError> {
    let count =
        u8::try_from(blobs.len()).map_err(|_| RpcError::TooManyBlobs { count: blobs.len() })?;
    let mut out = BytesMut::new();
    out.put_u8(count);
    put_request_body(&mut out, json, blobs);
    Ok(out.freeze())
}

/// Frames a WebSocket request.
pub fn encode_ws_request(id: u32, json: &[u8], blobs: &[Bytes]) -> Result<Bytes, RpcError> {
    let count =
        u8::try_from(blobs.len()).map_err(|_| RpcError::TooManyBlobs { count: blobs.len() })?;
    let mut out = BytesMut::new();
    out.put_u32(id);
    out.put_u8(count);
    put_request_body(&mut out, json, blobs);
    Ok(out.freeze())
}

fn put_request_body(out: &mut BytesMut, json: &[u8], blobs: &[Bytes]) {
    varint::write(out, json.len() as u64);
    for b in blobs {
        varint::write(out, b.len() as u64);
    }
    out.put_slice(json);
    for b in blobs {
        out.put_slice(b);
    }
}

/// Splits an HTTP `Model.evaluate` response body.
pub fn decode_response(body: &Bytes) -> Result<Frame, RpcError> {
    let mut c = Cursor {
        input: body,
        pos: 0,
    };
    let json_len = c.varint("JSON length")?;
    let json = c.take(json_len, "JSON")?;
    let mut blobs = Vec::new();
    while c.pos < body.len() {
        let len = c.varint("blob length")?;
        blobs.push(c.take(len, "blob")?);
    }
    Ok(Frame { json, blobs })
}

/// Frames an HTTP response body.
pub fn encode_response(json: &[u8], blobs: &[Bytes]) -> Bytes {
    let mut out = BytesMut::new();
    varint::write(&mut out, json.len() as u64);
    out.put_slice(json);
    for b in blobs {
        varint::write(&mut out, b.len() as u64);
        out.put_slice(b);
    }
    out.freeze()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_round_trip() {
        let blobs = [Bytes::from_static(b"\x07\x00\x07"), Bytes::new()];
        let body = encode_request(b"{}", &blobs).unwrap();
        assert_eq!(&body[..], b"\x02\x02\x03\x00{}\x07\x00\x07");
        let frame = decode_request(&body).unwrap();
        assert_eq!(&frame.json[..], b"{}");
        assert_eq!(frame.blobs, blobs);
    }

    #[test]
    fn response_round_trip() {
        let body = encode_response(b"{\"result\":1}", &[Bytes::from_static(b"ab")]);
        let frame = decode_response(&body).unwrap();
        assert_eq!(&frame.json[..], b"{\"result\":1}");
        assert_eq!(frame.blobs, vec![Bytes::from_static(b"ab")]);
    }

    #[test]
    fn malformed() {
        let cases: &[(&[u8], &str)] = &[
            (
                b"",
                "truncated Decthings RPC message: input ends inside the blob count at offset 0",
            ),
            (
                b"\x01\x02",
                "truncated Decthings RPC message: input ends inside the blob length at offset 2",
            ),
            (
                b"\x01\x02\x05{}",
                "truncated Decthings RPC message: input ends inside the blobs at offset 3",
            ),
            (
                b"\x00\x02{}x",
                "1 unexpected bytes after the last blob of the Decthings RPC message",
            ),
            (
                b"\x00\xfd\x00\x02{}",
                "JSON length at offset 1 is an overlong varint (2 has a shorter form)",
            ),
            (
                b"\x00\xff\xff\xff\xff\xff\xff\xff\xff\xff",
                "truncated Decthings RPC message: input ends inside the JSON at offset 10",
            ),
        ];
        for (input, message) in cases {
            let err = decode_request(&Bytes::copy_from_slice(input)).unwrap_err();
            assert_eq!(&err.to_string(), message, "input {input:?}");
        }
    }
}
