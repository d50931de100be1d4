//! The official client through the gateway to a real Triton 2.51 serving
//! `tests/models/`. Needs `TENSORGATE_TRITON_URL`
//! (`eval "$(scripts/triton-backend.sh start)"`); without it each test prints
//! SKIPPED and passes, except under `CI`, where it fails (same switch as
//! tests/it/conformance_triton.rs, `TENSORGATE_CONFORMANCE_SKIP=1` included).

use decthings_api::tensor::DecthingsTensor as T;
use tensorgate::server::Running;

use super::dc::*;

/// A gateway whose default route sends `binary` to Triton, plus `extra`
/// TOML (more routes).
async fn triton_gateway(extra: &str) -> Option<Running> {
    let url = crate::harness::backend_url("TENSORGATE_TRITON_URL", "scripts/triton-backend.sh")?;
    Some(
        crate::common::gateway(&format!(
            r#"
[server]
shutdown_grace = "1s"
[backends.triton]
url = "{url}"
request_timeout = "30s"
{extra}
[[routes]]
name = "triton"
default = true
backend = "triton"
backend_format = "binary"
"#
        ))
        .await,
    )
}

async fn echo<'a>(gw: &Running, model: &'a str, tensor: T<'a>) -> Plain {
    let client = client_for(gw.data_addr);
    let outcome = evaluate(&client, model, vec![param("INPUT0", vec![tensor])]).await;
    super::assert_success_shape(&outcome);
    single(&success(outcome), "OUTPUT0")
}

#[tokio::test]
async fn triton_identity_bytes_keeps_strings_and_binaries() {
    let Some(gw) = triton_gateway("").await else {
        return;
    };
    let strings = T::String(arr_ref(&[3], vec!["hé", "", "\u{1F600}"]));
    let sent = plain(&strings);
    assert_eq!(echo(&gw, "identity_bytes", strings).await, sent);
    let bad: &[u8] = &[0xff, 0xfe, 0x00];
    let binary = T::Binary(arr_ref(&[1], vec![bad]));
    let sent = plain(&binary);
    assert_eq!(echo(&gw, "identity_bytes", binary).await, sent);
}

#[tokio::test]
async fn triton_identity_bool() {
    let Some(gw) = triton_gateway("").await else {
        return;
    };
    let t = T::Boolean(arr(&[4], vec![true, false, true, true]));
    let sent = plain(&t);
    assert_eq!(echo(&gw, "identity_bool", t).await, sent);
}

/// Decthings has no f16: the client sends f32 values that FP16 holds
/// exactly, the route's rule admits only FP16 for `INPUT0` (ASSUMPTION: the
/// frontend narrows f32 to the one type the rule allows), and Triton's FP16
/// output must come back as f32 with the same values, bit for bit.
#[tokio::test]
async fn triton_identity_fp16_widens_to_f32_exactly() {
    let Some(gw) = triton_gateway(
        r#"
[[routes]]
name = "fp16"
models = ["identity_fp16"]
backend = "triton"
backend_format = "binary"
[routes.inputs.INPUT0]
allowed_types = ["FP16"]
"#,
    )
    .await
    else {
        return;
    };
    let values = vec![
        1.5f32,
        -0.0,
        65504.0,
        2f32.powi(-24),
        f32::NEG_INFINITY,
        0.1f32,
    ];
    // 0.1 is not exact in FP16: it comes back as the nearest FP16, widened.
    let expected: Vec<f32> = values
        .iter()
        .map(|&v| half::f16::from_f32(v).to_f32())
        .collect();
    let got = echo(&gw, "identity_fp16", T::F32(arr(&[6], values))).await;
    assert_eq!(got, plain(&T::F32(arr(&[6], expected))));
}

#[tokio::test]
async fn triton_simple_adds_and_subtracts() {
    let Some(gw) = triton_gateway("").await else {
        return;
    };
    let x: Vec<i32> = (0..16).map(|i| i * 3).collect();
    let y: Vec<i32> = (0..16).map(|i| 100 - i).collect();
    let client = client_for(gw.data_addr);
    let outcome = evaluate(
        &client,
        "simple",
        vec![
            param("INPUT0", vec![T::I32(arr(&[1, 16], x.clone()))]),
            param("INPUT1", vec![T::I32(arr(&[1, 16], y.clone()))]),
        ],
    )
    .await;
    super::assert_success_shape(&outcome);
    let output = success(outcome);
    let sum: Vec<i32> = x.iter().zip(&y).map(|(a, b)| a + b).collect();
    let diff: Vec<i32> = x.iter().zip(&y).map(|(a, b)| a - b).collect();
    assert_eq!(
        single(&output, "OUTPUT0"),
        plain(&T::I32(arr(&[1, 16], sum)))
    );
    assert_eq!(
        single(&output, "OUTPUT1"),
        plain(&T::I32(arr(&[1, 16], diff)))
    );
}
