//! The demo's errors as gRPC statuses, with the codes and messages Triton
//! 2.51 answers on its gRPC port (captured in
//! tests/fixtures/grpc/triton-2.51/errors.json): unknown model or version
//! `NOT_FOUND`, a request that does not fit the model `INVALID_ARGUMENT`
//! (the same texts as over HTTP), `ModelInfer` on a decoupled model
//! `UNIMPLEMENTED`.

use tonic::{Code, Status};

use crate::catalog::Model;
use crate::error::DemoError;
use tensorgate_codec::codec::grpc::{InferError, TensorProblem};

/// The status for `e`.
pub fn status(e: DemoError) -> Status {
    let code = match &e {
        DemoError::NotFound | DemoError::UnknownModel(_) | DemoError::UnknownVersion { .. } => {
            Code::NotFound
        }
        DemoError::Decoupled => {
            return Status::unimplemented(
                "ModelInfer RPC doesn't support models with decoupled transaction policy",
            );
        }
        DemoError::TooLarge { .. } => Code::ResourceExhausted,
        DemoError::MethodNotAllowed | DemoError::UnsupportedEncoding => Code::Unimplemented,
        DemoError::NotReady
        | DemoError::Framing(_)
        | DemoError::Invalid(_)
        | DemoError::Rejected { .. } => Code::InvalidArgument,
    };
    tracing::debug!(code = ?code, error = %e, "demo gRPC request failed");
    Status::new(code, e.to_string())
}

/// A request the gRPC codec refused, in Triton's words where Triton checks
/// the same thing (data missing, raw and typed both, byte size); the
/// codec's own message otherwise (Triton ignores extra raw entries and
/// truncates out-of-range typed values; the demo refuses both).
pub fn refused(model: &Model, id: Option<&str>, e: InferError) -> DemoError {
    let m = model.name;
    let InferError::Tensor { subject, problem } = &e else {
        return DemoError::Invalid(e.to_string());
    };
    let name = subject.name.as_deref().unwrap_or_default();
    match problem {
        TensorProblem::RawSize {
            expected, actual, ..
        } => DemoError::rejected(
            id,
            format!(
                "input byte size mismatch for input '{name}' for model '{m}'. Expected {expected}, got {actual}"
            ),
        ),
        TensorProblem::NoData | TensorProblem::MissingRaw { .. } => DemoError::Invalid(format!(
            "unable to find data for input tensor '{name}' for model '{m}' in request."
        )),
        TensorProblem::RawAndTyped { .. } => DemoError::Invalid(format!(
            "contents field must not be specified when using raw_input_contents for '{name}' for model '{m}'"
        )),
        _ => DemoError::Invalid(e.to_string()),
    }
}
