//! What the Decthings frontend refuses or cannot answer: a body the
//! official client could never send ([`RequestError`]), a parameter that
//! cannot become the input the route needs ([`InputProblem`]), an output
//! the client cannot take ([`OutputError`]); how each is classified. How
//! any error is shown to the client is in [`super::render`].

use crate::codec::decthings::rpc::RpcError;
use crate::codec::decthings::{DecodeError, EncodeError};
use crate::error::{Class, Classified, Classify, TensorLabel};
use crate::tensor::Shape;

/// What the Decthings frontend itself refuses or cannot answer.
#[derive(Debug, thiserror::Error)]
pub enum DecthingsError {
    /// A body the official client could never send.
    #[error("invalid Decthings request: {0}")]
    Request(#[from] RequestError),
    /// A parameter that cannot become the input the route needs.
    #[error("route \"{route}\": input \"{input}\" {problem}")]
    Input {
        route: String,
        input: String,
        problem: InputProblem,
    },
    /// A backend output the client cannot take.
    #[error("the Decthings client cannot take the backend's reply: {0}")]
    Output(#[from] OutputError),
}

/// A body the official client could never send.
#[derive(Debug, thiserror::Error)]
pub enum RequestError {
    #[error(transparent)]
    Framing(#[from] RpcError),
    #[error("the JSON part is not a Model.evaluate call: {0}")]
    Json(#[source] serde_json::Error),
    #[error("{blobs} blobs for {params} parameters that carry tensors")]
    BlobCount { blobs: usize, params: usize },
    #[error("parameter \"{name}\": {source}")]
    Tensor { name: String, source: DecodeError },
}

/// An output the client could not take.
#[derive(Debug, thiserror::Error)]
pub enum OutputError {
    #[error("output \"{output}\" lives in shared memory")]
    SharedMemory { output: String },
    #[error("output \"{output}\": {source}")]
    Encode { output: String, source: EncodeError },
    #[error(
        "output \"{output}\": shape {shape} has dimensions whose product is past what the client can index"
    )]
    Unindexable { output: String, shape: Shape },
    #[error("output \"{output}\": rows of shape {shape} cannot be unstacked from a scalar")]
    Unstack { output: String, shape: Shape },
}

/// What is wrong with one parameter, beyond the route's rules.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum InputProblem {
    #[error("holds no tensor")]
    Empty,
    #[error("is read from a dataset, and tensorgate has no datasets: send its tensors instead")]
    Dataset,
    #[error("holds {count} tensors, and this route takes one tensor per parameter")]
    Several { count: usize },
    #[error("holds tensors that cannot be stacked: {first} and {other}")]
    CannotStack { first: String, other: String },
    #[error("is {bytes} bytes, over the route's limit of {limit} bytes")]
    TooLarge { bytes: u64, limit: u64 },
    /// The route's `max_dims`, as V2 holds its requests to it.
    #[error("has shape {shape} of {rank} dimensions, over the route's max_dims of {max}")]
    TooManyDims {
        shape: Shape,
        rank: usize,
        max: usize,
    },
    /// The route's `max_elements_per_tensor` (`count` is text: it may be
    /// past 2^64).
    #[error(
        "has shape {shape} of {count} elements, over the route's max_elements_per_tensor of {max}"
    )]
    TooManyElements {
        shape: Shape,
        count: String,
        max: u64,
    },
}

impl Classify for DecthingsError {
    fn classify(&self) -> Classified {
        match self {
            DecthingsError::Request(_) => Class::Malformed.into(),
            DecthingsError::Input { input, problem, .. } => {
                let class = Class::BadTensor {
                    tensor: input.clone(),
                };
                match problem {
                    InputProblem::TooLarge { .. }
                    | InputProblem::TooManyDims { .. }
                    | InputProblem::TooManyElements { .. } => {
                        class.violating(TensorLabel::Named(input.clone()), "limit")
                    }
                    _ => class.into(),
                }
            }
            DecthingsError::Output(_) => Class::BadOutput {
                backend_fault: false,
            }
            .into(),
        }
    }
}
