//! Numeric tensors cross the frontend without their bytes being copied:
//! request data are slices of the request body, reply data slices of the
//! backend's frames.

use std::sync::Arc;
use std::time::Duration;

use bytes::{Bytes, BytesMut};

use super::reply::{self, Durations};
use super::request::{self, Param};
use crate::codec::decthings::{self, Layout, rpc};
use crate::codec::v2::{DocKind, Document, EntryData, TensorEntry};
use crate::config::{Backend, Route};
use crate::infer::{InferReply, TensorData};
use crate::tensor::{DataType, Shape, Tensor};

fn route() -> Route {
    let backend = Backend::new("b", "http://127.0.0.1:1".parse().unwrap());
    Route::new("r", Arc::new(backend))
}

fn f32_tensor(shape: &[u64], values: &[f32]) -> Tensor {
    let data: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
    Tensor::new(DataType::F32, Shape::new(shape.to_vec()), Bytes::from(data)).unwrap()
}

fn within(outer: &[u8], inner: &[u8]) -> bool {
    let (o, i) = (outer.as_ptr() as usize, inner.as_ptr() as usize);
    i >= o && i + inner.len() <= o + outer.len()
}

/// A request body with one parameter holding `tensors`.
fn body(tensors: &[Tensor]) -> Bytes {
    let mut blob = BytesMut::new();
    for t in tensors {
        decthings::encode(t, Layout::Current, &mut blob).unwrap();
    }
    rpc::encode_request(
        br#"{"modelId":"m","params":[{"name":"X"}]}"#,
        &[blob.freeze()],
    )
    .unwrap()
}

#[test]
fn request_tensors_are_slices_of_the_body() {
    let body = body(&[
        f32_tensor(&[3], &[1.0, 2.0, 3.0]),
        f32_tensor(&[3], &[4.0, 5.0, 6.0]),
    ]);
    let call = request::parse(&body).unwrap();
    assert_eq!(call.model_id, "m");
    assert!(matches!(&call.params[0], Param::Tensors { name, .. } if name == "X"));
    let inputs = request::to_inputs(&route(), call.params).unwrap();
    let (head, data) = &inputs[0];
    assert_eq!(head.shape, Shape::new(vec![2, 3]), "stacked");
    let TensorData::Pieces(pieces) = data else {
        panic!("no data")
    };
    assert_eq!(pieces.len(), 2);
    for p in pieces {
        assert_eq!(p.len(), 12);
        assert!(within(&body, p), "a piece was copied out of the body");
    }
}

#[test]
fn reply_tensors_are_slices_of_the_backend_frames() {
    let frame = Bytes::from(vec![7u8; 4096]);
    let reply = InferReply {
        header: Document {
            kind: DocKind::Response,
            members: Vec::new(),
            tensors_at: 0,
            tensors: vec![TensorEntry {
                name: "OUTPUT0".into(),
                datatype: DataType::F32,
                shape: Shape::new(vec![1024]),
                parameters: Default::default(),
                extra: Vec::new(),
                data: EntryData::Binary { size: 4096 },
            }],
        },
        data: vec![TensorData::Pieces(vec![
            frame.slice(..1000),
            frame.slice(1000..),
        ])],
    };
    let durations = Durations {
        total: Duration::from_millis(3),
        evaluate: Duration::from_millis(2),
    };
    let chunks = reply::success(&route(), &reply, durations).unwrap();
    let data_chunks: Vec<&Bytes> = chunks.iter().filter(|c| c.len() >= 1000).collect();
    assert_eq!(data_chunks.len(), 2);
    assert!(
        data_chunks.iter().all(|c| within(&frame, c)),
        "output data was copied"
    );
    // And the whole reply is what the official framing says.
    let whole: Vec<u8> = chunks.iter().flat_map(|c| c.iter().copied()).collect();
    let framed = rpc::decode_response(&Bytes::from(whole)).unwrap();
    assert_eq!(framed.blobs.len(), 1);
    let t = decthings::decode_all(&framed.blobs[0], Layout::Current, &Default::default()).unwrap();
    assert_eq!(t[0].shape, Shape::new(vec![1024]));
    assert_eq!(&t[0].data[..], &frame[..]);
    let json: serde_json::Value = serde_json::from_slice(&framed.json).unwrap();
    assert_eq!(json["result"]["success"]["durations"]["evaluate"], 2);
    assert_eq!(json["result"]["success"]["output"][0]["name"], "OUTPUT0");
}

#[test]
fn framing_the_client_could_never_send_is_a_request_error() {
    let err = request::parse(&Bytes::from_static(b"\x01\x02")).unwrap_err();
    assert!(err.to_string().contains("truncated"), "{err}");
    let bad_json = rpc::encode_request(b"{\"params\":[]}", &[]).unwrap();
    assert!(matches!(
        request::parse(&bad_json).unwrap_err(),
        super::error::RequestError::Json(_)
    ));
    let too_many = rpc::encode_request(br#"{"modelId":"m","params":[]}"#, &[Bytes::new()]).unwrap();
    assert_eq!(
        request::parse(&too_many).unwrap_err().to_string(),
        "1 blobs for 0 parameters that carry tensors"
    );
}
