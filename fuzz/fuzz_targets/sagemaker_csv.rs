//! SageMaker `csv` request bodies -> batches: never panics, and the same
//! outcome (batches or error) in any chunking; see `sagemaker_common.rs`.
//! Also `Content-Type` and `Accept` parsing of the same bytes as text.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tensorgate_codec::codec::sagemaker::{RequestFormat, negotiate_accept, request_format};

#[path = "sagemaker_common.rs"]
mod common;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let _ = request_format(&text);
    let _ = negotiate_accept(Some(&text));
    common::run(RequestFormat::Csv, data);
});
