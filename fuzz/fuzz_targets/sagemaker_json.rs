//! SageMaker `json` request bodies -> batches: never panics, and the same
//! outcome (batches or error) in any chunking; see `sagemaker_common.rs`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tensorgate_codec::codec::sagemaker::RequestFormat;

#[path = "sagemaker_common.rs"]
mod common;

fuzz_target!(|data: &[u8]| {
    common::run(RequestFormat::Json, data);
});
