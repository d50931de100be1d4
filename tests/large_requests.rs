//! Large JSON requests through the gateway: their tensor data arrives in
//! chunks big enough to be converted in two halves on two threads
//! (`DocParser::split`). The backend must receive exactly the binary of
//! the whole text, and errors deep in the data must name the element that
//! whole-text parsing names.

mod common;

use common::{TestBackend, gateway, post_json, reply, simple_config};

const N: usize = 300_000;
const INFER: &str = "/v2/models/m/infer";

/// `N` FP32 values in [-1, 1), deterministic.
fn values() -> Vec<f32> {
    let mut s: u64 = 0x9e37_79b9_7f4a_7c15;
    (0..N)
        .map(|_| {
            s = s
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            ((s >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
        })
        .collect()
}

/// The values as Python's `json.dumps(a.tolist())` of a float32 array
/// writes them: the widened double's shortest text, `", "` between.
fn texts(values: &[f32]) -> Vec<String> {
    values
        .iter()
        .map(|&v| format!("{:?}", f64::from(v)))
        .collect()
}

fn request(shape: &str, data: &[String]) -> String {
    format!(
        r#"{{"inputs":[{{"name":"X","shape":{shape},"datatype":"FP32","data":[{}]}}]}}"#,
        data.join(", ")
    )
}

async fn backend() -> TestBackend {
    TestBackend::start(|_| async {
        reply(
            200,
            &[("content-type", "application/json")],
            r#"{"model_name":"m","outputs":[{"name":"Y","datatype":"INT32","shape":[1],"data":[7]}]}"#,
        )
    })
    .await
}

#[tokio::test]
async fn a_large_json_tensor_reaches_the_backend_as_its_exact_binary() {
    let backend = backend().await;
    let gw = gateway(&simple_config(&backend.url(), "")).await;
    let values = values();
    let got = post_json(gw.data_addr, INFER, &request("[300000]", &texts(&values))).await;
    assert_eq!(got.status, 200, "{:?}", got.body);
    assert_eq!(got.json()["outputs"][0]["data"][0], 7);

    let seen = backend.requests();
    assert_eq!(seen.len(), 1);
    let header_len: usize = seen[0].headers["inference-header-content-length"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    let header: serde_json::Value = serde_json::from_slice(&seen[0].body[..header_len]).unwrap();
    assert_eq!(
        header["inputs"][0]["parameters"]["binary_data_size"],
        4 * N as u64
    );
    let binary = &seen[0].body[header_len..];
    assert_eq!(binary.len(), 4 * N);
    for (i, (chunk, want)) in binary.chunks_exact(4).zip(&values).enumerate() {
        let got = f32::from_le_bytes(chunk.try_into().unwrap());
        assert_eq!(got.to_bits(), want.to_bits(), "element {i}");
    }
}

#[tokio::test]
async fn errors_deep_in_large_data_name_their_element() {
    let backend = backend().await;
    let gw = gateway(&simple_config(&backend.url(), "")).await;
    let good = texts(&values());
    let mut string = good.clone();
    string[271_828] = "\"x\"".to_owned();
    let mut broken = good.clone();
    broken[200_001] = "0.5 0.5".to_owned();
    let cases = [
        (
            request("[300000]", &string),
            r#"route "r": input "X": element 271828: expected a FP32 value, found a string"#,
        ),
        (
            request("[300000]", &broken),
            r#"route "r": input "X": malformed JSON at element 200002: expected ',' or ']'"#,
        ),
        (
            request("[299999]", &good),
            r#"route "r": input "X": data has more elements than the 299999 its shape holds"#,
        ),
    ];
    for (body, message) in cases {
        let got = post_json(gw.data_addr, INFER, &body).await;
        assert_eq!(got.status, 400, "{:?}", got.body);
        assert_eq!(got.error(), message);
    }
    assert!(backend.requests().is_empty(), "the backend saw a request");
}
