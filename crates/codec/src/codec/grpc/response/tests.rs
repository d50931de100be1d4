use std::collections::BTreeMap;

use serde_json::json;

use super::*;
use crate::codec::grpc::proto::inference::InferParameter;
use crate::codec::grpc::proto::inference::InferTensorContents;
use crate::codec::grpc::proto::inference::infer_parameter::ParameterChoice;
use crate::tensor::DataType;

fn output(name: &str, datatype: &str, shape: &[i64]) -> InferOutputTensor {
    InferOutputTensor {
        name: name.into(),
        datatype: datatype.into(),
        shape: shape.to_vec(),
        ..Default::default()
    }
}

fn triton_response() -> ModelInferResponse {
    ModelInferResponse {
        model_name: "simple".into(),
        model_version: "1".into(),
        id: "".into(),
        parameters: BTreeMap::new(),
        outputs: vec![
            output("OUTPUT0", "INT32", &[1, 2]),
            output("OUTPUT1", "FP16", &[1]),
        ],
        raw_output_contents: vec![
            Bytes::from_static(&[1, 0, 0, 0, 2, 0, 0, 0]),
            Bytes::from_static(&[0, 0x3c]),
        ],
    }
}

#[test]
fn triton_raw_response_to_v2_and_back() {
    let message = Bytes::from(triton_response().encode_to_vec());
    let v2 = decode_response(message.clone(), &DocLimits::default()).unwrap();
    let members: Vec<_> = v2
        .header
        .members
        .iter()
        .map(|(k, v)| (k.as_str(), v.clone()))
        .collect();
    assert_eq!(
        members,
        vec![
            ("model_name", json!("simple")),
            ("model_version", json!("1"))
        ]
    );
    assert_eq!(v2.header.tensors[1].datatype, DataType::F16);
    assert_eq!(v2.header.tensors[1].data, EntryData::Binary { size: 2 });
    let range = message.as_ptr() as usize..message.as_ptr() as usize + message.len();
    assert!(range.contains(&(v2.data[0][0].as_ptr() as usize)));
    let pieces = encode_response(&v2.header, &v2.data).unwrap();
    assert_eq!(pieces.concat(), triton_response().encode_to_vec());
}

#[test]
fn typed_outputs_as_kserve_answers() {
    let mut r = triton_response();
    r.raw_output_contents.clear();
    r.outputs.truncate(1);
    r.outputs[0].contents = Some(InferTensorContents {
        int_contents: vec![7, -1],
        ..Default::default()
    });
    r.id = "x".into();
    r.parameters.insert(
        "p".into(),
        InferParameter {
            parameter_choice: Some(ParameterChoice::BoolParam(true)),
        },
    );
    let v2 = response_to_v2(r, &DocLimits::default()).unwrap();
    assert_eq!(v2.header.member("id"), Some(&json!("x")));
    assert_eq!(v2.header.member("parameters"), Some(&json!({"p": true})));
    assert_eq!(
        v2.data[0].concat(),
        [7i32.to_le_bytes(), (-1i32).to_le_bytes()].concat()
    );
}

#[test]
fn large_outputs_are_not_copied() {
    let big = Bytes::from(vec![0u8; 8 << 20]);
    let mut r = triton_response();
    r.outputs = vec![output("O", "UINT8", &[8 << 20])];
    r.raw_output_contents = vec![];
    let mut v2 = response_to_v2(
        ModelInferResponse {
            raw_output_contents: vec![big.clone()],
            ..r
        },
        &DocLimits::default(),
    )
    .unwrap();
    assert_eq!(v2.data[0][0].as_ptr(), big.as_ptr());
    v2.data[0] = vec![big.slice(..1 << 20), big.slice(1 << 20..)];
    let pieces = encode_response(&v2.header, &v2.data).unwrap();
    assert_eq!(pieces[1].as_ptr(), big.as_ptr());
    assert_eq!(pieces[2].as_ptr(), big[1 << 20..].as_ptr());
    // In a stream message: one key and length before the same pieces.
    let stream = encode_stream_response(&v2.header, &v2.data).unwrap();
    assert_eq!(stream[2].as_ptr(), big.as_ptr());
    let decoded = ModelStreamInferResponse::decode(Bytes::from(stream.concat())).unwrap();
    assert_eq!(
        decoded.infer_response.unwrap().raw_output_contents[0].len(),
        8 << 20
    );
    let error = ModelStreamInferResponse::decode(encode_stream_error("boom")).unwrap();
    assert_eq!(error.error_message, "boom");
}

#[test]
fn errors() {
    let mut r = triton_response();
    r.raw_output_contents.push(Bytes::new());
    assert_eq!(
        response_to_v2(r, &DocLimits::default())
            .unwrap_err()
            .to_string(),
        "3 raw_output_contents entries for 2 outputs that take raw data"
    );
    let mut r = triton_response();
    r.raw_output_contents[1] = Bytes::from_static(&[1]);
    assert_eq!(
        response_to_v2(r, &DocLimits::default())
            .unwrap_err()
            .to_string(),
        "output \"OUTPUT1\": raw data holds 1 bytes but FP16 [1] needs 2"
    );
    let mut r = triton_response();
    r.raw_output_contents.pop();
    assert_eq!(
        response_to_v2(r, &DocLimits::default())
            .unwrap_err()
            .to_string(),
        "output \"OUTPUT1\": no data: no contents, no raw_output_contents entry (1 for 2 outputs) and no shared memory"
    );
}

#[test]
fn null_members_as_kserve_writes_them_are_absent() {
    // KServe 0.21's V2 HTTP answer, as its binary header has it.
    let header = br#"{"model_name":"kserve_simple","model_version":null,"id":"a","parameters":null,"outputs":[{"name":"OUTPUT0","datatype":"INT32","shape":[1,2],"parameters":{"binary_data_size":8}}]}"#;
    let doc = crate::codec::v2::DocParser::parse(DocKind::Response, DocLimits::default(), header)
        .unwrap();
    let data = vec![vec![Bytes::from_static(&[1, 0, 0, 0, 2, 0, 0, 0])]];
    let pieces = encode_response(&doc, &data).unwrap();
    let message = ModelInferResponse::decode(Bytes::from(pieces.concat())).unwrap();
    assert_eq!(message.model_name, "kserve_simple");
    assert_eq!(message.model_version, "");
    assert_eq!(message.id, "a");
    assert!(message.parameters.is_empty());
    assert_eq!(
        message.raw_output_contents[0].as_ref(),
        &[1, 0, 0, 0, 2, 0, 0, 0]
    );
    // A member of another type is still refused, naming it.
    let header = br#"{"model_name":"m","model_version":1,"outputs":[]}"#;
    let doc = crate::codec::v2::DocParser::parse(DocKind::Response, DocLimits::default(), header)
        .unwrap();
    assert_eq!(
        encode_response(&doc, &[]).unwrap_err().to_string(),
        "member \"model_version\" must be a string, not 1"
    );
}
