//! Property tests for the gRPC codec: framing in any chunking, and
//! `ModelInferRequest` / `ModelInferResponse` through the V2 form and back.
//!
//! What is asserted:
//! - any list of messages, framed and cut into chunks anywhere, comes out of
//!   `FrameDecoder` whole and in order, and a stream cut short is reported
//!   as truncated by `finish`;
//! - a raw `ModelInferRequest` of random tensors (every datatype, shapes
//!   with zero dimensions, BYTES elements) converts to the V2 form and
//!   `encode_request` writes the same bytes prost writes for it, with the
//!   data in any split into pieces; the response likewise;
//! - typed contents convert to the same bytes as the raw form of the same
//!   values.

use std::collections::BTreeMap;

use bytes::Bytes;
use proptest::prelude::*;
use prost::Message;
use tensorgate::codec::grpc::proto::inference::model_infer_request::InferInputTensor;
use tensorgate::codec::grpc::proto::inference::model_infer_response::InferOutputTensor;
use tensorgate::codec::grpc::proto::inference::{
    InferParameter, InferTensorContents, ModelInferRequest, ModelInferResponse,
    infer_parameter::ParameterChoice,
};
use tensorgate::codec::grpc::{self, FrameDecoder, FrameError, FrameLimits, frame};
use tensorgate::codec::v2::DocLimits;
use tensorgate::tensor::{DataType, bytes_layout};

/// A tensor: datatype, shape, and its data in the V2 binary layout.
#[derive(Clone, Debug)]
struct Tensor {
    dtype: DataType,
    shape: Vec<i64>,
    data: Bytes,
}

fn tensor() -> impl Strategy<Value = Tensor> {
    (
        prop::sample::select(DataType::ALL.to_vec()),
        prop::collection::vec(0i64..=3, 0..=3),
    )
        .prop_flat_map(|(dtype, shape)| {
            let count = shape.iter().product::<i64>() as usize;
            let data = match dtype.fixed_size() {
                Some(size) => prop::collection::vec(any::<u8>(), count * size)
                    .prop_map(Bytes::from)
                    .boxed(),
                None => prop::collection::vec(prop::collection::vec(any::<u8>(), 0..6), count)
                    .prop_map(bytes_layout::build)
                    .boxed(),
            };
            data.prop_map(move |data| Tensor {
                dtype,
                shape: shape.clone(),
                data,
            })
        })
}

fn parameter() -> impl Strategy<Value = InferParameter> {
    prop_oneof![
        any::<bool>().prop_map(ParameterChoice::BoolParam),
        any::<i64>().prop_map(ParameterChoice::Int64Param),
        ((i64::MAX as u64 + 1)..=u64::MAX).prop_map(ParameterChoice::Uint64Param),
        "[a-z]{0,4}".prop_map(ParameterChoice::StringParam),
        (-1e9f64..1e9).prop_map(|d| ParameterChoice::DoubleParam(d + 0.5)),
    ]
    .prop_map(|c| InferParameter {
        parameter_choice: Some(c),
    })
}

fn parameters() -> impl Strategy<Value = BTreeMap<String, InferParameter>> {
    prop::collection::btree_map("[a-z]{1,3}", parameter(), 0..3)
}

/// Cuts `data` into pieces at the given fractions.
fn pieces(data: &Bytes, cuts: &[prop::sample::Index]) -> Vec<Bytes> {
    let mut at: Vec<usize> = cuts.iter().map(|c| c.index(data.len() + 1)).collect();
    at.sort_unstable();
    let mut out = Vec::new();
    let mut start = 0;
    for end in at.into_iter().chain([data.len()]) {
        if end > start {
            out.push(data.slice(start..end));
            start = end;
        }
    }
    out
}

proptest! {
    #[test]
    fn framing_in_any_chunking(
        messages in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..40), 0..5),
        cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..8),
        short in any::<prop::sample::Index>(),
    ) {
        let mut stream = Vec::new();
        for m in &messages {
            stream.extend(frame::encode(vec![Bytes::from(m.clone())]).unwrap().concat());
        }
        let stream = Bytes::from(stream);
        let limits = FrameLimits { max_message_bytes: 64, compression: false };
        let mut d = FrameDecoder::new(limits);
        let mut out = Vec::new();
        for chunk in pieces(&stream, &cuts) {
            d.push(chunk);
            while let Some(f) = d.decode().unwrap() {
                out.push(f.message.to_vec());
            }
        }
        prop_assert_eq!(&out, &messages);
        prop_assert_eq!(d.finish(), Ok(()));
        // Cut short anywhere: the whole messages before the cut come out,
        // and the end is truncated unless the cut is between messages.
        if !stream.is_empty() {
            let cut = short.index(stream.len());
            let ends: Vec<usize> = messages
                .iter()
                .scan(0, |at, m| { *at += frame::PREFIX_LEN + m.len(); Some(*at) })
                .collect();
            let mut d = FrameDecoder::new(limits);
            d.push(stream.slice(..cut));
            let mut n = 0;
            while d.decode().unwrap().is_some() {
                n += 1;
            }
            prop_assert_eq!(n, ends.iter().filter(|&&e| e <= cut).count());
            if cut == 0 || ends.contains(&cut) {
                prop_assert_eq!(d.finish(), Ok(()));
            } else {
                let truncated = matches!(d.finish(), Err(FrameError::Truncated { .. }));
                prop_assert!(truncated);
            }
        }
    }

    #[test]
    fn raw_requests_round_trip(
        tensors in prop::collection::vec(tensor(), 0..4),
        params in parameters(),
        id in "[a-z0-9]{0,5}",
        cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..3),
    ) {
        let request = ModelInferRequest {
            model_name: "m".into(),
            model_version: "".into(),
            id,
            parameters: params,
            inputs: tensors.iter().enumerate().map(|(i, t)| InferInputTensor {
                name: format!("IN{i}"),
                datatype: t.dtype.v2_name().into(),
                shape: t.shape.clone(),
                ..Default::default()
            }).collect(),
            outputs: vec![],
            raw_input_contents: tensors.iter().map(|t| t.data.clone()).collect(),
        };
        let encoded = request.encode_to_vec();
        let v2 = grpc::decode_request(Bytes::from(encoded.clone()), &DocLimits::default()).unwrap();
        for (t, data) in tensors.iter().zip(&v2.data) {
            prop_assert_eq!(data.concat(), t.data.to_vec());
        }
        let split: Vec<Vec<Bytes>> = v2.data.iter().map(|d| pieces(&Bytes::from(d.concat()), &cuts)).collect();
        let again = grpc::encode_request("m", None, &v2.header, &split).unwrap();
        prop_assert_eq!(again.concat(), encoded);
    }

    #[test]
    fn raw_responses_round_trip(
        tensors in prop::collection::vec(tensor(), 0..4),
        params in parameters(),
        cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..3),
    ) {
        let response = ModelInferResponse {
            model_name: "m".into(),
            model_version: "1".into(),
            id: "".into(),
            parameters: params,
            outputs: tensors.iter().enumerate().map(|(i, t)| InferOutputTensor {
                name: format!("OUT{i}"),
                datatype: t.dtype.v2_name().into(),
                shape: t.shape.clone(),
                ..Default::default()
            }).collect(),
            raw_output_contents: tensors.iter().map(|t| t.data.clone()).collect(),
        };
        let encoded = response.encode_to_vec();
        let v2 = grpc::decode_response(Bytes::from(encoded.clone()), &DocLimits::default()).unwrap();
        let split: Vec<Vec<Bytes>> = v2.data.iter().map(|d| pieces(&Bytes::from(d.concat()), &cuts)).collect();
        let again = grpc::encode_response(&v2.header, &split).unwrap();
        prop_assert_eq!(again.concat(), encoded);
    }

    #[test]
    fn typed_contents_match_their_raw_form(t in tensor().prop_filter("typed form exists", |t| {
        !matches!(t.dtype, DataType::F16 | DataType::BF16)
    })) {
        let c = typed(&t);
        let input = InferInputTensor {
            name: "X".into(),
            datatype: t.dtype.v2_name().into(),
            shape: t.shape.clone(),
            parameters: BTreeMap::new(),
            contents: Some(c),
        };
        let request = ModelInferRequest { inputs: vec![input], ..Default::default() };
        let v2 = grpc::request_to_v2(request, &DocLimits::default()).unwrap();
        let expected = if t.dtype == DataType::Bool {
            t.data.iter().map(|&b| u8::from(b != 0)).collect::<Vec<u8>>()
        } else {
            t.data.to_vec()
        };
        prop_assert_eq!(v2.data[0].concat(), expected);
    }
}

/// The typed contents holding `t`'s values.
fn typed(t: &Tensor) -> InferTensorContents {
    let d = &t.data;
    let mut c = InferTensorContents::default();
    match t.dtype {
        DataType::Bool => c.bool_contents = d.iter().map(|&b| b != 0).collect(),
        DataType::I8 => c.int_contents = d.iter().map(|&b| i32::from(b as i8)).collect(),
        DataType::I16 => {
            c.int_contents = d
                .chunks(2)
                .map(|b| i32::from(i16::from_le_bytes([b[0], b[1]])))
                .collect()
        }
        DataType::I32 => {
            c.int_contents = d
                .chunks(4)
                .map(|b| i32::from_le_bytes(b.try_into().unwrap()))
                .collect()
        }
        DataType::I64 => {
            c.int64_contents = d
                .chunks(8)
                .map(|b| i64::from_le_bytes(b.try_into().unwrap()))
                .collect()
        }
        DataType::U8 => c.uint_contents = d.iter().map(|&b| u32::from(b)).collect(),
        DataType::U16 => {
            c.uint_contents = d
                .chunks(2)
                .map(|b| u32::from(u16::from_le_bytes([b[0], b[1]])))
                .collect()
        }
        DataType::U32 => {
            c.uint_contents = d
                .chunks(4)
                .map(|b| u32::from_le_bytes(b.try_into().unwrap()))
                .collect()
        }
        DataType::U64 => {
            c.uint64_contents = d
                .chunks(8)
                .map(|b| u64::from_le_bytes(b.try_into().unwrap()))
                .collect()
        }
        DataType::F32 => {
            c.fp32_contents = d
                .chunks(4)
                .map(|b| f32::from_le_bytes(b.try_into().unwrap()))
                .collect()
        }
        DataType::F64 => {
            c.fp64_contents = d
                .chunks(8)
                .map(|b| f64::from_le_bytes(b.try_into().unwrap()))
                .collect()
        }
        DataType::Bytes => {
            c.bytes_contents = tensorgate::tensor::BytesElements::new(d)
                .map(|e| Bytes::copy_from_slice(e.unwrap()))
                .collect()
        }
        DataType::F16 | DataType::BF16 => {}
    }
    c
}
