//! Wire codecs: every format decodes into and encodes from the tensor model
//! in [`crate::tensor`]. **Codecs never do I/O**: they take byte slices or
//! [`bytes::Bytes`] and return values, with "not enough bytes yet" as a value
//! rather than an error.

pub mod coding;
pub mod decthings;
pub mod describe;
pub mod grpc;
pub mod pieces;
pub mod sagemaker;
pub mod v2;
