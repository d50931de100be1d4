//! Every Decthings type through the demo `identity` model (parameter
//! `INPUTi` comes back as `OUTPUTi`), scalars, stacking, a large tensor, and
//! `simple` with real values.

use decthings_api::tensor::DecthingsTensor as T;

use super::dc::*;
use super::{assert_success_shape, demo_gateway, media_gateway};

/// Sends `tensor` as the only tensor of `INPUT0` to `identity` and returns
/// `OUTPUT0` as plain values.
async fn echo(addr: std::net::SocketAddr, tensor: T<'_>) -> Plain {
    let client = client_for(addr);
    let outcome = evaluate(&client, "identity", vec![param("INPUT0", vec![tensor])]).await;
    assert_success_shape(&outcome);
    single(&success(outcome), "OUTPUT0")
}

/// `tensor` must come back as itself: same type, shape and elements.
async fn round_trip(addr: std::net::SocketAddr, tensor: T<'_>) {
    let sent = plain(&tensor);
    assert_eq!(echo(addr, tensor).await, sent);
}

#[tokio::test]
async fn every_numeric_type_round_trips_through_identity() {
    let (_backend, gw) = demo_gateway().await;
    let a = gw.data_addr;
    round_trip(
        a,
        T::F32(arr(
            &[2, 3],
            vec![
                1.5,
                -0.0,
                f32::INFINITY,
                f32::NAN,
                f32::MIN_POSITIVE / 2.0,
                f32::MAX,
            ],
        )),
    )
    .await;
    round_trip(
        a,
        T::F64(arr(&[4], vec![0.1, -0.0, f64::NEG_INFINITY, f64::MIN])),
    )
    .await;
    round_trip(a, T::I8(arr(&[3], vec![i8::MIN, -1, i8::MAX]))).await;
    round_trip(a, T::I16(arr(&[3], vec![i16::MIN, -1, i16::MAX]))).await;
    round_trip(a, T::I32(arr(&[3], vec![i32::MIN, -1, i32::MAX]))).await;
    round_trip(a, T::I64(arr(&[3], vec![i64::MIN, -1, i64::MAX]))).await;
    round_trip(a, T::U8(arr(&[3], vec![0, 7, u8::MAX]))).await;
    round_trip(a, T::U16(arr(&[3], vec![0, 7, u16::MAX]))).await;
    round_trip(a, T::U32(arr(&[3], vec![0, 7, u32::MAX]))).await;
    round_trip(a, T::U64(arr(&[1, 3], vec![0, 7, u64::MAX]))).await;
    // An empty tensor keeps its shape.
    round_trip(a, T::F32(arr(&[2, 0], vec![]))).await;
}

#[tokio::test]
async fn boolean_round_trips() {
    let (_backend, gw) = demo_gateway().await;
    round_trip(
        gw.data_addr,
        T::Boolean(arr(&[2, 2], vec![true, false, false, true])),
    )
    .await;
}

#[tokio::test]
async fn string_round_trips_with_multibyte_utf8() {
    let (_backend, gw) = demo_gateway().await;
    let long = "\u{1F600}".repeat(20_000); // 80,000 bytes: a 5-byte varint length
    let values = vec!["hé", "", "sn\u{2603}w \"q\"\n\u{0}", long.as_str()];
    round_trip(gw.data_addr, T::String(arr_ref(&[2, 2], values))).await;
}

#[tokio::test]
async fn binary_round_trips_and_utf8_binary_comes_back_as_string() {
    let (_backend, gw) = demo_gateway().await;
    let a = gw.data_addr;
    let bad: &[u8] = &[0xff, 0x00, 0xc3];
    let empty: &[u8] = &[];
    round_trip(a, T::Binary(arr_ref(&[2], vec![bad, empty]))).await;
    // The contract: BYTES come back as `string` when every element is valid
    // UTF-8. A binary that happens to be UTF-8 therefore changes type.
    let text: &[u8] = b"abc";
    let got = echo(a, T::Binary(arr_ref(&[1], vec![text]))).await;
    assert_eq!(
        got,
        Plain {
            typ: "string",
            shape: vec![1],
            elems: Elems::String(vec!["abc".into()]),
        }
    );
}

#[tokio::test]
async fn image_with_format_round_trips_through_a_media_rule() {
    let (_backend, gw) = media_gateway("image").await;
    let png: &[u8] = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR";
    let jpg: &[u8] = b"\xff\xd8\xff\xe0";
    round_trip(
        gw.data_addr,
        T::Image(arr_ref(&[2], vec![image("png", png), image("jpeg", jpg)])),
    )
    .await;
}

#[tokio::test]
async fn scalar_stays_a_scalar() {
    let (_backend, gw) = demo_gateway().await;
    round_trip(gw.data_addr, T::F32(arr(&[], vec![2.5]))).await;
    round_trip(gw.data_addr, T::I64(arr(&[], vec![-9]))).await;
}

#[tokio::test]
async fn tensors_of_one_parameter_stack_along_a_new_dimension() {
    let (_backend, gw) = demo_gateway().await;
    let client = client_for(gw.data_addr);
    let outcome = evaluate(
        &client,
        "identity",
        vec![param(
            "INPUT0",
            vec![
                T::F32(arr(&[3], vec![1.0, 2.0, 3.0])),
                T::F32(arr(&[3], vec![-4.0, 5.5, 0.25])),
            ],
        )],
    )
    .await;
    let got = single(&success(outcome), "OUTPUT0");
    let sent = plain(&T::F32(arr(&[2, 3], vec![1.0, 2.0, 3.0, -4.0, 5.5, 0.25])));
    assert_eq!(got, sent);
}

#[tokio::test]
async fn a_million_f32_values_come_back_exactly() {
    let (_backend, gw) = demo_gateway().await;
    let n = 1 << 20;
    let values: Vec<f32> = (0..n).map(|i| i as f32 * 0.5 - 1000.0).collect();
    let got = echo(gw.data_addr, T::F32(arr(&[n], values.clone()))).await;
    assert_eq!(got.typ, "f32");
    assert_eq!(got.shape, vec![n]);
    let bits: Vec<u32> = values.iter().map(|v| v.to_bits()).collect();
    assert!(got.elems == Elems::F32(bits), "values differ");
}

#[tokio::test]
async fn simple_adds_and_subtracts() {
    let (_backend, gw) = demo_gateway().await;
    let client = client_for(gw.data_addr);
    let x: Vec<i32> = (0..32).collect();
    let y: Vec<i32> = (0..32).map(|i| i * 10 - 7).collect();
    let outcome = evaluate(
        &client,
        "simple",
        vec![
            param("INPUT0", vec![T::I32(arr(&[2, 16], x.clone()))]),
            param("INPUT1", vec![T::I32(arr(&[2, 16], y.clone()))]),
        ],
    )
    .await;
    assert_success_shape(&outcome);
    let output = success(outcome);
    assert_eq!(output.len(), 2, "{output:?}");
    let sum: Vec<i32> = x.iter().zip(&y).map(|(a, b)| a + b).collect();
    let diff: Vec<i32> = x.iter().zip(&y).map(|(a, b)| a - b).collect();
    assert_eq!(
        single(&output, "OUTPUT0"),
        plain(&T::I32(arr(&[2, 16], sum)))
    );
    assert_eq!(
        single(&output, "OUTPUT1"),
        plain(&T::I32(arr(&[2, 16], diff)))
    );
}
