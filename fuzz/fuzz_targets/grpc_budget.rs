//! The wire-form budget of a `ModelInferRequest` (`codec::grpc::budget`):
//! it never panics; the model it reads off the top level is the one prost
//! decodes; and a message it lets through decodes into no more entries
//! than its caps allow.
#![no_main]

use libfuzzer_sys::fuzz_target;
use prost::Message;
use tensorgate_codec::codec::grpc::budget::{self, Caps};
use tensorgate_codec::codec::grpc::proto::inference::ModelInferRequest;

const CAPS: Caps = Caps {
    max_values: 64,
    max_header_bytes: 1 << 16,
    max_elements: 1 << 12,
    max_dims: 4,
};

fuzz_target!(|data: &[u8]| {
    let decoded = ModelInferRequest::decode(data);
    if let (Ok(model), Ok(d)) = (budget::model_of_request(data), &decoded) {
        assert_eq!(model, (d.model_name.as_str(), d.model_version.as_str()));
    }
    let Ok(tally) = budget::check(&budget::MODEL_INFER_REQUEST, data, &CAPS) else {
        return;
    };
    assert!(tally.decoded <= budget::DECODED_SLACK + budget::DECODED_FACTOR * data.len() as u64);
    let Ok(d) = decoded else {
        return;
    };
    let params = |p: usize| p as u64;
    let mut values = params(d.parameters.len()) + d.inputs.len() as u64 + d.outputs.len() as u64;
    for i in &d.inputs {
        assert!(i.shape.len() as u64 <= CAPS.max_dims);
        values += i.shape.len() as u64 + params(i.parameters.len());
    }
    for o in &d.outputs {
        values += params(o.parameters.len());
    }
    assert!(values <= CAPS.max_values, "{values} values let through");
    if let Some(schema) = budget::schema("inference.RepositoryModelLoadRequest") {
        let _ = budget::check(schema, data, &Caps::DEFAULT);
    }
});
