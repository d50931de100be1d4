//! The demo models as declarations: names, kinds, inputs and outputs,
//! batching. What the models compute is in `models.rs`, Triton's checks of
//! a request against these declarations in `checks.rs`; both read this
//! file and neither reads the other's.

use tensorgate_codec::tensor::{DataType, Tensor};

/// A named tensor, as inputs and outputs travel.
pub type Named = (String, Tensor);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Simple,
    Identity,
    Repeat,
    Ramp,
    RowSum,
}

/// One declared input or output (dims without the batch dimension).
#[derive(Debug)]
pub struct Io {
    pub name: &'static str,
    pub dtype: DataType,
    pub dims: &'static [i64],
    pub optional: bool,
}

const fn io(name: &'static str, dtype: DataType, dims: &'static [i64]) -> Io {
    Io {
        name,
        dtype,
        dims,
        optional: false,
    }
}

const fn optional(io: Io) -> Io {
    Io {
        optional: true,
        ..io
    }
}

#[derive(Debug)]
pub struct Model {
    pub name: &'static str,
    pub kind: Kind,
    pub max_batch_size: u64,
    pub inputs: &'static [Io],
    pub outputs: &'static [Io],
}

/// Largest `ramp` output, in elements (512 MiB of FP32).
pub const MAX_RAMP: i64 = 1 << 27;

pub static MODELS: [Model; 5] = [
    Model {
        name: "simple",
        kind: Kind::Simple,
        max_batch_size: 8,
        inputs: &[
            io("INPUT0", DataType::I32, &[16]),
            io("INPUT1", DataType::I32, &[16]),
        ],
        outputs: &[
            io("OUTPUT0", DataType::I32, &[16]),
            io("OUTPUT1", DataType::I32, &[16]),
        ],
    },
    Model {
        name: "identity",
        kind: Kind::Identity,
        max_batch_size: 0,
        inputs: &[],
        outputs: &[],
    },
    Model {
        name: "repeat",
        kind: Kind::Repeat,
        max_batch_size: 0,
        inputs: &[
            io("text_input", DataType::Bytes, &[1]),
            optional(io("count", DataType::I32, &[1])),
            optional(io("delay_ms", DataType::I32, &[1])),
        ],
        outputs: &[
            io("text_output", DataType::Bytes, &[1]),
            io("index", DataType::I32, &[1]),
        ],
    },
    Model {
        name: "ramp",
        kind: Kind::Ramp,
        max_batch_size: 0,
        inputs: &[io("COUNT", DataType::I64, &[1])],
        outputs: &[io("OUTPUT0", DataType::F32, &[-1])],
    },
    Model {
        name: "rowsum",
        kind: Kind::RowSum,
        max_batch_size: 0,
        inputs: &[io("INPUT0", DataType::F32, &[-1, -1])],
        outputs: &[
            io("score", DataType::F32, &[-1]),
            io("OUTPUT0", DataType::F32, &[-1, -1]),
        ],
    },
];

pub fn find(name: &str) -> Option<&'static Model> {
    MODELS.iter().find(|m| m.name == name)
}

/// Only version "1" of every model exists.
pub const VERSION: &str = "1";

impl Model {
    pub fn decoupled(&self) -> bool {
        self.kind == Kind::Repeat
    }

    /// Full shape as clients see it: the batch dimension (`-1`) first when
    /// the model batches.
    pub fn full_dims(&self, io: &Io) -> Vec<i64> {
        let batch = (self.max_batch_size > 0).then_some(-1);
        batch.into_iter().chain(io.dims.iter().copied()).collect()
    }
}
