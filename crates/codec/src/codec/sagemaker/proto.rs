//! The `aialgs.data` messages of `record.proto` (beside this file), written
//! out with prost's derive macros so that no `protoc` is needed to build.
//! Tags, types and packing must match `record.proto` exactly.

use std::collections::HashMap;

#[derive(Clone, PartialEq, prost::Message)]
pub struct Float32Tensor {
    #[prost(float, repeated, packed = "true", tag = "1")]
    pub values: Vec<f32>,
    #[prost(uint64, repeated, packed = "true", tag = "2")]
    pub keys: Vec<u64>,
    #[prost(uint64, repeated, packed = "true", tag = "3")]
    pub shape: Vec<u64>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Float64Tensor {
    #[prost(double, repeated, packed = "true", tag = "1")]
    pub values: Vec<f64>,
    #[prost(uint64, repeated, packed = "true", tag = "2")]
    pub keys: Vec<u64>,
    #[prost(uint64, repeated, packed = "true", tag = "3")]
    pub shape: Vec<u64>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Int32Tensor {
    #[prost(int32, repeated, packed = "true", tag = "1")]
    pub values: Vec<i32>,
    #[prost(uint64, repeated, packed = "true", tag = "2")]
    pub keys: Vec<u64>,
    #[prost(uint64, repeated, packed = "true", tag = "3")]
    pub shape: Vec<u64>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Bytes {
    #[prost(bytes = "vec", repeated, tag = "1")]
    pub value: Vec<Vec<u8>>,
    #[prost(string, optional, tag = "2")]
    pub content_type: Option<String>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Value {
    #[prost(oneof = "value::Value", tags = "2, 3, 7, 9")]
    pub value: Option<value::Value>,
}

/// The `oneof value` of [`Value`].
pub mod value {
    #[derive(Clone, PartialEq, prost::Oneof)]
    pub enum Value {
        #[prost(message, tag = "2")]
        Float32Tensor(super::Float32Tensor),
        #[prost(message, tag = "3")]
        Float64Tensor(super::Float64Tensor),
        #[prost(message, tag = "7")]
        Int32Tensor(super::Int32Tensor),
        #[prost(message, tag = "9")]
        Bytes(super::Bytes),
    }
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Record {
    #[prost(map = "string, message", tag = "1")]
    pub features: HashMap<String, Value>,
    #[prost(map = "string, message", tag = "2")]
    pub label: HashMap<String, Value>,
    #[prost(string, optional, tag = "3")]
    pub uid: Option<String>,
    #[prost(string, optional, tag = "4")]
    pub metadata: Option<String>,
    #[prost(string, optional, tag = "5")]
    pub configuration: Option<String>,
}
