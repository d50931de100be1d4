//! The KServe / Triton "V2" HTTP protocol: JSON documents, the binary tensor
//! data extension, and conversion between JSON `data` and binary data.
//!
//! Sans-I/O: nothing here knows about sockets, hyper or tokio. Callers feed
//! bytes and receive tensors, frames or output bytes. Every size read from
//! the wire is bounded by a limit before anything is allocated or buffered
//! for it, and added up with checked arithmetic.

pub mod collect;
pub mod document;
pub mod framing;
pub mod json_data;
pub mod json_write;
pub mod model;
pub mod number;
pub mod outputs;
pub mod path;
pub mod scan;
pub mod strings;

pub use collect::{BinaryCollector, ShortData};
pub use document::{DataTail, DocError, DocParser, MemberRef};
pub use model::{
    DocKind, DocLimits, Document, EntryData, EntryHead, MAX_JSON_DEPTH, Params, Subject,
    TensorEntry,
};
pub use outputs::{OutputSelection, OutputsError, RequestedOutput};
