use std::collections::BTreeMap;

use serde_json::json;

use super::*;
use crate::codec::grpc::proto::inference::infer_parameter::ParameterChoice;
use crate::codec::grpc::proto::inference::{InferParameter, InferTensorContents};
use crate::codec::v2::DocParser;
use crate::tensor::{DataType, Shape};

fn param(choice: ParameterChoice) -> InferParameter {
    InferParameter {
        parameter_choice: Some(choice),
    }
}

fn input(name: &str, datatype: &str, shape: &[i64]) -> InferInputTensor {
    InferInputTensor {
        name: name.into(),
        datatype: datatype.into(),
        shape: shape.to_vec(),
        ..Default::default()
    }
}

fn i32_bytes(values: &[i32]) -> Bytes {
    values
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect::<Vec<u8>>()
        .into()
}

/// Triton's `simple` request as tritonclient.grpc sends it, plus
/// parameters and requested outputs.
fn simple_request() -> ModelInferRequest {
    let mut out_params = BTreeMap::new();
    out_params.insert(
        "binary_data".into(),
        param(ParameterChoice::BoolParam(true)),
    );
    out_params.insert(
        "classification".into(),
        param(ParameterChoice::Int64Param(2)),
    );
    let mut params = BTreeMap::new();
    params.insert("priority".into(), param(ParameterChoice::Uint64Param(3)));
    params.insert(
        "binary_data_output".into(),
        param(ParameterChoice::BoolParam(true)),
    );
    ModelInferRequest {
        model_name: "simple".into(),
        model_version: "".into(),
        id: "req-1".into(),
        parameters: params,
        inputs: vec![
            input("INPUT0", "INT32", &[1, 4]),
            input("TEXT", "BYTES", &[2]),
        ],
        outputs: vec![
            InferRequestedOutputTensor {
                name: "OUTPUT0".into(),
                parameters: out_params,
            },
            InferRequestedOutputTensor {
                name: "OUTPUT1".into(),
                parameters: BTreeMap::new(),
            },
        ],
        raw_input_contents: vec![
            i32_bytes(&[1, 2, 3, -4]),
            Bytes::from_static(b"\x01\x00\x00\x00a\x02\x00\x00\x00bc"),
        ],
    }
}

#[test]
fn raw_request_to_v2_slices_the_message() {
    let message = Bytes::from(simple_request().encode_to_vec());
    let v2 = decode_request(message.clone(), &DocLimits::default()).unwrap();
    assert_eq!(v2.model_name, "simple");
    assert_eq!(v2.model_version, None);
    let members: Vec<_> = v2
        .header
        .members
        .iter()
        .map(|(k, v)| (k.as_str(), v.clone()))
        .collect();
    assert_eq!(
        members,
        vec![
            ("id", json!("req-1")),
            ("parameters", json!({"priority": 3})),
            (
                "outputs",
                json!([{"name": "OUTPUT0", "parameters": {"classification": 2}}, {"name": "OUTPUT1"}])
            ),
        ]
    );
    assert_eq!(v2.header.tensors_at, 2);
    let t = &v2.header.tensors;
    assert_eq!(
        (t[0].name.as_str(), t[0].datatype, &t[0].shape),
        ("INPUT0", DataType::I32, &Shape::new(vec![1, 4]))
    );
    assert_eq!(t[0].data, EntryData::Binary { size: 16 });
    assert_eq!(
        (t[1].datatype, &t[1].data),
        (DataType::Bytes, &EntryData::Binary { size: 11 })
    );
    assert_eq!(&v2.data[0][0][..], &i32_bytes(&[1, 2, 3, -4])[..]);
    // Zero copy: every piece points into the message.
    let range = message.as_ptr() as usize..message.as_ptr() as usize + message.len();
    for pieces in &v2.data {
        assert!(range.contains(&(pieces[0].as_ptr() as usize)));
    }
}

#[test]
fn v2_back_to_grpc_is_what_prost_writes() {
    let original = simple_request();
    let v2 = request_to_v2(original.clone(), &DocLimits::default()).unwrap();
    let pieces = encode_request("simple", None, &v2.header, &v2.data).unwrap();
    let joined: Vec<u8> = pieces.concat();
    let mut expected = original;
    // What has no meaning over gRPC is gone; the rest is the same message.
    expected.parameters.remove("binary_data_output");
    expected.outputs[0].parameters.remove("binary_data");
    expected
        .parameters
        .insert("priority".into(), param(ParameterChoice::Int64Param(3)));
    assert_eq!(joined, expected.encode_to_vec());
}

#[test]
fn a_v2_json_header_becomes_a_grpc_request() {
    let json = br#"{"id":"7","inputs":[{"name":"A","datatype":"FP32","shape":[2],"parameters":{"binary_data_size":8}},{"name":"S","datatype":"UINT8","shape":[4],"parameters":{"shared_memory_region":"r","shared_memory_byte_size":4}}],"outputs":[{"name":"O","parameters":{"binary_data":true}}],"parameters":{"binary_data_output":true,"sequence_id":"s1"}}"#;
    let header = DocParser::parse(DocKind::Request, DocLimits::default(), json).unwrap();
    let a = Bytes::from(vec![0u8, 0, 0x80, 0x3f, 0, 0, 0, 0x40]);
    let pieces = encode_request(
        "m",
        Some("2"),
        &header,
        &[vec![a.slice(..4), a.slice(4..)], vec![]],
    )
    .unwrap();
    let decoded = ModelInferRequest::decode(Bytes::from(pieces.concat())).unwrap();
    assert_eq!(
        (
            decoded.model_name.as_str(),
            decoded.model_version.as_str(),
            decoded.id.as_str()
        ),
        ("m", "2", "7")
    );
    assert_eq!(decoded.parameters.len(), 1);
    assert_eq!(
        decoded.parameters["sequence_id"],
        param(ParameterChoice::StringParam("s1".into()))
    );
    assert_eq!(decoded.inputs[0].parameters, BTreeMap::new());
    assert_eq!(
        decoded.inputs[1].parameters["shared_memory_region"],
        param(ParameterChoice::StringParam("r".into()))
    );
    assert_eq!(decoded.outputs[0].name, "O");
    assert!(decoded.outputs[0].parameters.is_empty());
    // One raw entry: the shared-memory input takes none.
    assert_eq!(decoded.raw_input_contents, vec![a]);
}

#[test]
fn a_100_mb_tensor_is_never_copied() {
    let big = Bytes::from(vec![1u8; 100 << 20]);
    let json = br#"{"inputs":[{"name":"X","datatype":"UINT8","shape":[104857600],"parameters":{"binary_data_size":104857600}}]}"#;
    let header = DocParser::parse(DocKind::Request, DocLimits::default(), json).unwrap();
    let pieces = encode_request("m", None, &header, &[vec![big.clone()]]).unwrap();
    assert_eq!(
        pieces.len(),
        2,
        "the head with the field key and length, then the tensor"
    );
    assert_eq!(pieces[1].as_ptr(), big.as_ptr());
    assert_eq!(pieces[1].len(), big.len());
    // The head ends with field 7's key and the length varint of 100 MiB.
    assert!(pieces[0].ends_with(&[0x3a, 0x80, 0x80, 0x80, 0x32]));
    // And back: the decoded entry is a slice of the message buffer.
    let framed = super::super::frame::encode(pieces).unwrap();
    let mut decoder = super::super::frame::FrameDecoder::new(super::super::frame::FrameLimits {
        max_message_bytes: 200 << 20,
        compression: false,
    });
    for p in framed {
        decoder.push(p);
    }
    let message = decoder.decode().unwrap().unwrap().message;
    let v2 = decode_request(message.clone(), &DocLimits::default()).unwrap();
    assert_eq!(v2.data[0][0].len(), 100 << 20);
    let offset = v2.data[0][0].as_ptr() as usize - message.as_ptr() as usize;
    assert_eq!(offset, message.len() - (100 << 20));
}

#[test]
fn typed_contents_for_every_datatype() {
    let mut request = ModelInferRequest::default();
    let cases: Vec<(&str, InferTensorContents, Vec<u8>)> = vec![
        (
            "BOOL",
            InferTensorContents {
                bool_contents: vec![true, false],
                ..Default::default()
            },
            vec![1, 0],
        ),
        (
            "INT8",
            InferTensorContents {
                int_contents: vec![-128, 1],
                ..Default::default()
            },
            vec![0x80, 1],
        ),
        (
            "INT16",
            InferTensorContents {
                int_contents: vec![-1, 2],
                ..Default::default()
            },
            vec![0xff, 0xff, 2, 0],
        ),
        (
            "INT32",
            InferTensorContents {
                int_contents: vec![5, 6],
                ..Default::default()
            },
            [5i32.to_le_bytes(), 6i32.to_le_bytes()].concat(),
        ),
        (
            "INT64",
            InferTensorContents {
                int64_contents: vec![-1, 1],
                ..Default::default()
            },
            [(-1i64).to_le_bytes(), 1i64.to_le_bytes()].concat(),
        ),
        (
            "UINT8",
            InferTensorContents {
                uint_contents: vec![255, 0],
                ..Default::default()
            },
            vec![255, 0],
        ),
        (
            "UINT16",
            InferTensorContents {
                uint_contents: vec![1, 65535],
                ..Default::default()
            },
            vec![1, 0, 255, 255],
        ),
        (
            "UINT32",
            InferTensorContents {
                uint_contents: vec![7, 8],
                ..Default::default()
            },
            [7u32.to_le_bytes(), 8u32.to_le_bytes()].concat(),
        ),
        (
            "UINT64",
            InferTensorContents {
                uint64_contents: vec![u64::MAX, 0],
                ..Default::default()
            },
            [u64::MAX.to_le_bytes(), 0u64.to_le_bytes()].concat(),
        ),
        (
            "FP32",
            InferTensorContents {
                fp32_contents: vec![0.5, -2.0],
                ..Default::default()
            },
            [0.5f32.to_le_bytes(), (-2f32).to_le_bytes()].concat(),
        ),
        (
            "FP64",
            InferTensorContents {
                fp64_contents: vec![0.25, 1e300],
                ..Default::default()
            },
            [0.25f64.to_le_bytes(), 1e300f64.to_le_bytes()].concat(),
        ),
        (
            "BYTES",
            InferTensorContents {
                bytes_contents: vec![Bytes::from_static(b"x"), Bytes::new()],
                ..Default::default()
            },
            b"\x01\x00\x00\x00x\x00\x00\x00\x00".to_vec(),
        ),
    ];
    for (name, contents, _) in &cases {
        request.inputs.push(InferInputTensor {
            contents: Some(contents.clone()),
            ..input(name, name, &[2])
        });
    }
    let v2 = request_to_v2(request, &DocLimits::default()).unwrap();
    for (i, (name, _, expected)) in cases.iter().enumerate() {
        assert_eq!(&v2.data[i].concat(), expected, "{name}");
        assert_eq!(
            v2.header.tensors[i].data,
            EntryData::Binary {
                size: expected.len() as u64
            }
        );
    }
}

fn error(request: ModelInferRequest) -> String {
    request_to_v2(request, &DocLimits::new(1000, 4))
        .unwrap_err()
        .to_string()
}

fn raw_request(inputs: Vec<InferInputTensor>, raw: Vec<Bytes>) -> ModelInferRequest {
    ModelInferRequest {
        inputs,
        raw_input_contents: raw,
        ..Default::default()
    }
}

#[test]
fn clear_errors_naming_the_tensor() {
    let four = || i32_bytes(&[1, 2, 3, 4]);
    assert_eq!(
        error(raw_request(
            vec![input("A", "INT32", &[4])],
            vec![four(), four()]
        )),
        "2 raw_input_contents entries for 1 inputs that take raw data"
    );
    assert_eq!(
        error(raw_request(
            vec![input("A", "INT32", &[4]), input("B", "INT32", &[4])],
            vec![four()]
        )),
        "input \"B\": no data: no contents, no raw_input_contents entry (1 for 2 inputs) and no shared memory"
    );
    assert_eq!(
        error(raw_request(
            vec![input("A", "INT32", &[1, 8])],
            vec![four()]
        )),
        "input \"A\": raw data holds 16 bytes but INT32 [1,8] needs 32"
    );
    assert_eq!(
        error(raw_request(
            vec![input("S", "BYTES", &[2])],
            vec![Bytes::from_static(b"\x01\x00\x00\x00a")]
        )),
        "input \"S\": raw BYTES data: BYTES data holds 1 elements, expected 2"
    );
    assert_eq!(
        error(raw_request(
            vec![input("S", "BYTES", &[1])],
            vec![Bytes::from_static(b"\x09\x00\x00\x00a")]
        )),
        "input \"S\": raw BYTES data: BYTES element 0 declares 9 bytes but only 1 remain at byte 0"
    );
    let typed = InferInputTensor {
        contents: Some(InferTensorContents {
            int_contents: vec![1, 2, 3, 4],
            ..Default::default()
        }),
        ..input("A", "INT32", &[4])
    };
    assert_eq!(
        error(raw_request(
            vec![typed.clone(), input("B", "INT32", &[4])],
            vec![four()]
        )),
        "input \"A\": contents must not be given when raw_input_contents is used"
    );
    assert_eq!(
        error(raw_request(
            vec![InferInputTensor {
                shape: vec![5],
                ..typed.clone()
            }],
            vec![]
        )),
        "input \"A\": int_contents holds 4 elements but the shape has 5"
    );
    assert_eq!(
        error(raw_request(
            vec![InferInputTensor {
                datatype: "FP32".into(),
                ..typed.clone()
            }],
            vec![]
        )),
        "input \"A\": FP32 data must be in fp32_contents, not int_contents"
    );
    assert_eq!(
        error(raw_request(
            vec![InferInputTensor {
                datatype: "FP16".into(),
                ..typed
            }],
            vec![]
        )),
        "input \"A\": FP16 has no typed contents; send its data in raw_input_contents"
    );
    assert_eq!(
        error(raw_request(vec![input("A", "INT32", &[-1, 4])], vec![])),
        "input \"A\": shape [-1, 4] has a negative dimension"
    );
    assert_eq!(
        error(raw_request(vec![input("A", "FP33", &[1])], vec![])),
        "input \"A\": datatype \"FP33\" is unknown"
    );
    assert_eq!(
        error(raw_request(
            vec![input("A", "INT8", &[1 << 32, 1 << 32, 2])],
            vec![]
        )),
        "input \"A\": shape [4294967296,4294967296,2] has more elements than fit in 64 bits"
    );
    assert_eq!(
        error(raw_request(vec![input("A", "INT8", &[1001])], vec![])),
        "input \"A\": shape [1001] has 1001 elements, more than the limit of 1000"
    );
    assert_eq!(
        error(raw_request(
            vec![input("A", "INT8", &[1, 1, 1, 1, 1])],
            vec![]
        )),
        "input \"A\": shape has 5 dimensions, more than the limit of 4"
    );
    assert_eq!(
        error(raw_request(vec![input("A", "INT8", &[1])], vec![])),
        "input \"A\": no data: no contents, no raw contents and no shared memory"
    );
    let mut nan = BTreeMap::new();
    nan.insert(
        "p".to_owned(),
        param(ParameterChoice::DoubleParam(f64::INFINITY)),
    );
    let with_param = InferInputTensor {
        parameters: nan.clone(),
        ..input("A", "INT8", &[1])
    };
    assert_eq!(
        error(raw_request(
            vec![with_param],
            vec![Bytes::from_static(b"\x01")]
        )),
        "input \"A\": parameter \"p\" is a double that JSON cannot hold (NaN or infinite)"
    );
    let garbage =
        decode_request(Bytes::from_static(b"\x2a\xff\xff"), &DocLimits::default()).unwrap_err();
    assert!(
        garbage
            .to_string()
            .starts_with("invalid ModelInferRequest: "),
        "{garbage}"
    );
}

#[test]
fn shared_memory_inputs_take_no_raw_entry() {
    let mut shm = BTreeMap::new();
    shm.insert(
        "shared_memory_region".into(),
        param(ParameterChoice::StringParam("r".into())),
    );
    let a = InferInputTensor {
        parameters: shm,
        ..input("A", "INT32", &[4])
    };
    let request = raw_request(vec![a, input("B", "INT32", &[1])], vec![i32_bytes(&[9])]);
    let v2 = request_to_v2(request, &DocLimits::default()).unwrap();
    assert_eq!(v2.header.tensors[0].data, EntryData::SharedMemory);
    assert!(v2.data[0].is_empty());
    assert_eq!(v2.data[1], vec![i32_bytes(&[9])]);
}
