//! The Decthings tensor format and the framing of its `Model.evaluate` RPC.
//!
//! Sans-I/O: functions take byte buffers and return tensors or frames.

pub mod rpc;
pub mod tensor;
pub mod varint;

pub use tensor::{
    DecodeError, DecodeLimits, EncodeError, Layout, decode, decode_all, encode, encode_parts, head,
};
