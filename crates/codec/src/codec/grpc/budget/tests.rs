use bytes::Bytes;
use prost::Message;

use super::*;
use crate::codec::grpc::proto::inference::infer_parameter::ParameterChoice;
use crate::codec::grpc::proto::inference::{
    ModelConfigResponse, ModelInferRequest, ModelInferResponse, ModelStatisticsResponse,
    ModelStreamInferResponse, RepositoryModelLoadRequest,
};

const CAPS: Caps = Caps {
    max_values: 1000,
    max_header_bytes: 64 << 10,
    max_elements: 1 << 20,
    max_dims: 8,
};

fn input(name: &str, shape: Vec<i64>) -> InferInputTensor {
    InferInputTensor {
        name: name.into(),
        datatype: "FP32".into(),
        shape,
        ..Default::default()
    }
}

fn request() -> ModelInferRequest {
    let mut parameters = std::collections::BTreeMap::new();
    parameters.insert(
        "sequence_id".to_owned(),
        InferParameter {
            parameter_choice: Some(ParameterChoice::Int64Param(7)),
        },
    );
    ModelInferRequest {
        model_name: "simple".into(),
        model_version: "2".into(),
        id: "r1".into(),
        parameters,
        inputs: vec![input("INPUT0", vec![1, 16]), input("INPUT1", vec![1, 16])],
        outputs: vec![InferRequestedOutputTensor {
            name: "OUTPUT0".into(),
            ..Default::default()
        }],
        raw_input_contents: vec![Bytes::from(vec![0u8; 64]), Bytes::from(vec![1u8; 64])],
    }
}

#[test]
fn an_honest_request_is_counted_and_passes() {
    let bytes = request().encode_to_vec();
    let t = check(&MODEL_INFER_REQUEST, &bytes, &CAPS).unwrap();
    // Two inputs, one output, one parameter, four dimensions.
    assert_eq!(t.values, 2 + 1 + 1 + 4);
    assert_eq!(t.data_bytes, 128);
    assert!(t.decoded >= 2 * MODEL_INFER_REQUEST_INPUT_SIZE, "{t:?}");
    assert_eq!(model_of_request(&bytes).unwrap(), ("simple", "2"));
}

const MODEL_INFER_REQUEST_INPUT_SIZE: u64 = std::mem::size_of::<InferInputTensor>() as u64;

/// The attack: empty `inputs` entries, 2 bytes each on the wire.
#[test]
fn empty_entries_are_refused_before_decoding() {
    let mut bytes = Vec::new();
    for _ in 0..4096 {
        bytes.extend_from_slice(&[0x2a, 0x00]);
    }
    let caps = Caps {
        max_values: 1 << 20,
        ..CAPS
    };
    match check(&MODEL_INFER_REQUEST, &bytes, &caps) {
        Err(BudgetError::Amplified { len, decoded, .. }) => {
            assert_eq!(len, 8192);
            assert_eq!(
                decoded,
                MODEL_INFER_REQUEST.size + 4096 * MODEL_INFER_REQUEST_INPUT_SIZE
            );
        }
        other => panic!("{other:?}"),
    }
    // Under the route's count of values, the count refuses it first.
    assert_eq!(
        check(&MODEL_INFER_REQUEST, &bytes, &CAPS),
        Err(BudgetError::TooManyValues {
            message: "ModelInferRequest",
            limit: 1000
        })
    );
}

#[test]
fn the_same_holds_for_responses_and_stream_responses() {
    let mut outputs = Vec::new();
    for _ in 0..4096 {
        outputs.extend_from_slice(&[0x2a, 0x00]);
    }
    let caps = Caps {
        max_values: 1 << 20,
        ..CAPS
    };
    assert!(matches!(
        check(&MODEL_INFER_RESPONSE, &outputs, &caps),
        Err(BudgetError::Amplified { .. })
    ));
    // The same response inside a stream message (field 2).
    let mut stream = vec![0x12];
    let mut len = Vec::new();
    prost::encoding::encode_varint(outputs.len() as u64, &mut len);
    stream.extend_from_slice(&len);
    stream.extend_from_slice(&outputs);
    assert!(matches!(
        check(&MODEL_STREAM_INFER_RESPONSE, &stream, &caps),
        Err(BudgetError::Amplified { .. })
    ));
    // An honest one passes.
    let honest = ModelStreamInferResponse {
        error_message: String::new(),
        infer_response: Some(ModelInferResponse {
            model_name: "m".into(),
            outputs: vec![InferOutputTensor {
                name: "o".into(),
                datatype: "INT32".into(),
                shape: vec![4],
                ..Default::default()
            }],
            raw_output_contents: vec![Bytes::from(vec![0u8; 16])],
            ..Default::default()
        }),
    }
    .encode_to_vec();
    let t = check(&MODEL_STREAM_INFER_RESPONSE, &honest, &CAPS).unwrap();
    assert_eq!((t.values, t.data_bytes), (2, 16));
}

#[test]
fn shapes_and_typed_contents_are_capped_per_tensor() {
    let mut r = request();
    r.inputs[0].shape = vec![1; 9];
    assert_eq!(
        check(&MODEL_INFER_REQUEST, &r.encode_to_vec(), &CAPS),
        Err(BudgetError::TooManyDims {
            message: "ModelInferRequest",
            limit: 8
        })
    );
    // Eight dimensions each are fine, however many tensors.
    let mut r = request();
    r.inputs[0].shape = vec![1; 8];
    r.inputs[1].shape = vec![1; 8];
    check(&MODEL_INFER_REQUEST, &r.encode_to_vec(), &CAPS).unwrap();
    // Typed contents: packed (how prost and tritonclient write them).
    let mut r = request();
    r.raw_input_contents.clear();
    r.inputs[0].contents = Some(InferTensorContents {
        fp32_contents: vec![1.5; 100],
        ..Default::default()
    });
    r.inputs[1].contents = Some(InferTensorContents {
        int64_contents: vec![1; 100],
        ..Default::default()
    });
    let bytes = r.encode_to_vec();
    let t = check(&MODEL_INFER_REQUEST, &bytes, &CAPS).unwrap();
    assert_eq!(t.data_bytes, 400 + 100);
    let few = Caps {
        max_elements: 99,
        ..CAPS
    };
    assert!(matches!(
        check(&MODEL_INFER_REQUEST, &bytes, &few),
        Err(BudgetError::TooManyElements { limit: 99, .. })
    ));
}

/// Every honest extreme fits: a BYTES tensor of empty strings (the most
/// decoded bytes per wire byte an honest message has), and int64 values
/// of one byte each.
#[test]
fn honest_extremes_fit_the_decoded_bound() {
    let mut r = request();
    r.raw_input_contents.clear();
    r.inputs[0].contents = Some(InferTensorContents {
        bytes_contents: vec![Bytes::new(); 200_000],
        ..Default::default()
    });
    r.inputs[1].contents = Some(InferTensorContents {
        int64_contents: vec![1; 200_000],
        ..Default::default()
    });
    let bytes = r.encode_to_vec();
    let caps = Caps {
        max_values: 1 << 16,
        max_header_bytes: 1 << 20,
        max_elements: 1 << 24,
        max_dims: 8,
    };
    let t = check(&MODEL_INFER_REQUEST, &bytes, &caps).unwrap();
    assert!(t.decoded <= DECODED_FACTOR * bytes.len() as u64, "{t:?}");
    // Prost agrees on what it is.
    let decoded = ModelInferRequest::decode(&bytes[..]).unwrap();
    assert_eq!(
        decoded.inputs[0]
            .contents
            .as_ref()
            .unwrap()
            .bytes_contents
            .len(),
        200_000
    );
}

#[test]
fn bytes_outside_tensor_data_are_capped() {
    let mut r = request();
    r.id = "x".repeat(70_000);
    assert_eq!(
        check(&MODEL_INFER_REQUEST, &r.encode_to_vec(), &CAPS),
        Err(BudgetError::HeaderTooLarge {
            message: "ModelInferRequest",
            limit: 64 << 10
        })
    );
    // Tensor data is not header: a large raw input passes.
    let mut r = request();
    r.raw_input_contents[0] = Bytes::from(vec![0u8; 1 << 20]);
    check(&MODEL_INFER_REQUEST, &r.encode_to_vec(), &CAPS).unwrap();
}

#[test]
fn malformed_messages_are_refused_as_such() {
    for (bytes, reason) in [
        (&[0x0a, 0x05, b'a'][..], "a length runs past the message"),
        (&[0x2a][..], "a length is cut"),
        (&[0xff][..], "a field key is cut"),
        (
            &[0x0b][..],
            "groups and unknown wire types are not accepted",
        ),
        (&[0x00, 0x01][..], "field number 0"),
        // inputs (5) as a varint.
        (&[0x28, 0x01][..], "a field of the wrong wire type"),
    ] {
        let e = check(&MODEL_INFER_REQUEST, bytes, &CAPS).unwrap_err();
        assert_eq!(
            e,
            BudgetError::Malformed {
                message: "ModelInferRequest",
                reason
            },
            "{bytes:?}"
        );
        assert!(e.is_malformed());
    }
    // Unknown fields cost nothing and pass, as prost skips them.
    let mut bytes = request().encode_to_vec();
    bytes.extend_from_slice(&[0xf8, 0x01, 0x05]); // field 31, varint
    check(&MODEL_INFER_REQUEST, &bytes, &CAPS).unwrap();
    assert_eq!(
        model_of_request(&[0x0a, 0x02, 0xff, 0xfe]),
        Err(BudgetError::Malformed {
            message: "ModelInferRequest",
            reason: "a name is not UTF-8"
        })
    );
}

#[test]
fn the_model_is_read_off_the_top_level_as_prost_would() {
    let mut bytes = request().encode_to_vec();
    // A second model_name later in the message wins.
    bytes.extend_from_slice(&[0x0a, 0x03, b'a', b'b', b'c']);
    assert_eq!(model_of_request(&bytes).unwrap(), ("abc", "2"));
    let decoded = ModelInferRequest::decode(&bytes[..]).unwrap();
    assert_eq!(decoded.model_name, "abc");
    assert_eq!(model_of_request(&[]).unwrap(), ("", ""));
}

#[test]
fn descriptor_schemas_bound_the_other_messages() {
    let load = schema("inference.RepositoryModelLoadRequest").unwrap();
    let honest = RepositoryModelLoadRequest {
        model_name: "m".into(),
        ..Default::default()
    }
    .encode_to_vec();
    check(load, &honest, &Caps::DEFAULT).unwrap();
    // 100,000 empty parameters entries (field 3, 2 bytes each).
    let mut flood = Vec::new();
    for _ in 0..100_000 {
        flood.extend_from_slice(&[0x1a, 0x00]);
    }
    assert!(matches!(
        check(load, &flood, &Caps::DEFAULT),
        Err(BudgetError::TooManyValues { .. } | BudgetError::Amplified { .. })
    ));
    // The backend's answers: empty model_stats entries (field 1).
    let stats = schema("inference.ModelStatisticsResponse").unwrap();
    let mut flood = Vec::new();
    for _ in 0..30_000 {
        flood.extend_from_slice(&[0x0a, 0x00]);
    }
    assert!(check(stats, &flood, &Caps::DEFAULT).is_err());
    let honest = ModelStatisticsResponse::default().encode_to_vec();
    check(stats, &honest, &Caps::DEFAULT).unwrap();
    let config = schema("inference.ModelConfigResponse").unwrap();
    check(
        config,
        &ModelConfigResponse::default().encode_to_vec(),
        &Caps::DEFAULT,
    )
    .unwrap();
    assert!(schema("inference.NoSuchMessage").is_none());
}
