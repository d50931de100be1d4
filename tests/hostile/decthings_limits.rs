//! Finding 9: a Decthings call is held to the route's `max_dims` and
//! `max_elements_per_tensor` as a V2 request is (a 9-dimension tensor and
//! a `u8[17000000]` tensor used to be served; V2 refuses both with 400),
//! and refused in the Decthings shape (`invalid_parameter` naming the
//! parameter) before the backend sees a byte.

use bytes::{Bytes, BytesMut};
use tensorgate::codec::decthings::{Layout, rpc, tensor as dtensor};
use tensorgate::tensor::{DataType, Shape, Tensor};

use super::{config, recorder};
use crate::common::{gateway, send};

/// A `Model.evaluate` body for `model` with one parameter `name` holding
/// `tensors`.
fn evaluate_body(model: &str, name: &str, tensors: &[Tensor]) -> Vec<u8> {
    let mut blob = BytesMut::new();
    for t in tensors {
        dtensor::encode(t, Layout::Current, &mut blob).unwrap();
    }
    let json = serde_json::json!({"modelId": model, "params": [{"name": name}]});
    let json = serde_json::to_vec(&json).unwrap();
    rpc::encode_request(&json, &[blob.freeze()])
        .unwrap()
        .to_vec()
}

fn zeros(dtype: DataType, dims: Vec<u64>) -> Tensor {
    let shape = Shape::new(dims);
    let n = shape.element_count().unwrap() as usize * dtype.fixed_size().unwrap();
    Tensor::new(dtype, shape, Bytes::from(vec![0u8; n])).unwrap()
}

/// The JSON part of a Decthings RPC reply.
fn reply_json(body: &Bytes) -> serde_json::Value {
    let frame = rpc::decode_response(body).expect("not a Decthings reply");
    serde_json::from_slice(&frame.json).unwrap()
}

#[tokio::test]
async fn decthings_tensors_are_held_to_max_dims_and_max_elements() {
    let backend = recorder().await;
    let gw = gateway(&config(&backend, "")).await;
    let path = "/v0/Model/evaluate";
    let cases = [
        // Nine dimensions, with the default max_dims of 8.
        (
            vec![zeros(DataType::U8, vec![1; 9])],
            "has shape [1,1,1,1,1,1,1,1,1] of 9 dimensions, over the route's max_dims of 8",
        ),
        // 17,000,000 elements, over the default 16,777,216.
        (
            vec![zeros(DataType::U8, vec![17_000_000])],
            "has shape [17000000] of 17000000 elements, over the route's max_elements_per_tensor of 16777216",
        ),
        // Eight dimensions each, stacked into nine.
        (
            vec![
                zeros(DataType::U8, vec![1; 8]),
                zeros(DataType::U8, vec![1; 8]),
            ],
            "has shape [2,1,1,1,1,1,1,1,1] of 9 dimensions, over the route's max_dims of 8",
        ),
        // Two tensors of 9,000,000 each: fine alone, over the limit stacked.
        (
            vec![
                zeros(DataType::U8, vec![9_000_000]),
                zeros(DataType::U8, vec![9_000_000]),
            ],
            "has shape [2,9000000] of 18000000 elements, over the route's max_elements_per_tensor of 16777216",
        ),
    ];
    for (tensors, want) in cases {
        let body = evaluate_body("other", "X", &tensors);
        let got = send(gw.data_addr, "POST", path, &[], body).await;
        // Decthings RPC errors are HTTP 200 with the error in the body.
        assert_eq!(got.status, 200);
        let json = reply_json(&got.body);
        let error = &json["error"];
        assert_eq!(error["code"], "invalid_parameter", "{json}");
        assert_eq!(error["parameterName"], "X", "{json}");
        let message = error["reason"].as_str().unwrap_or_default();
        assert!(message.contains(want), "{message}");
    }
    assert!(backend.requests().is_empty(), "the backend saw a request");
    // Within the limits it is served.
    let body = evaluate_body("other", "X", &[zeros(DataType::U8, vec![1; 8])]);
    let got = send(gw.data_addr, "POST", path, &[], body).await;
    assert_eq!(got.status, 200);
    assert_eq!(backend.requests().len(), 1);
}
