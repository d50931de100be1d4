//! Every error class of the frontend contract, as the official client types
//! it. All of them are HTTP 200 replies: the client turns any 4xx/5xx into
//! `DecthingsClientError::Http` without reading the body.

use decthings_api::client::DecthingsRpcError;
use decthings_api::client::rpc::model::{EvaluateError, EvaluateResult, FailedEvaluationError};
use decthings_api::tensor::DecthingsTensor as T;

use crate::dc::*;
use crate::demo_gateway;

/// The `invalid_parameter` error of `outcome`: `(parameterName, reason)`.
fn invalid_parameter(outcome: EvalOutcome) -> (String, String) {
    match outcome {
        Err(DecthingsRpcError::Rpc(EvaluateError::InvalidParameter {
            parameter_name,
            reason,
        })) => (parameter_name, reason),
        other => panic!("expected invalid_parameter, got {other:?}"),
    }
}

fn i32s(shape: &[usize]) -> T<'static> {
    T::I32(arr(shape, vec![1; shape.iter().product()]))
}

/// `simple` with its two inputs as given.
async fn simple(
    addr: std::net::SocketAddr,
    params: Vec<decthings_api::client::DecthingsParameterProvider<'_>>,
) -> EvalOutcome {
    evaluate(&client_for(addr), "simple", params).await
}

#[tokio::test]
async fn unknown_model_is_model_not_found() {
    let (_backend, gw) = demo_gateway().await;
    let outcome = evaluate(
        &client_for(gw.data_addr),
        "no_such_model",
        vec![param("INPUT0", vec![i32s(&[1])])],
    )
    .await;
    assert!(
        matches!(
            outcome,
            Err(DecthingsRpcError::Rpc(EvaluateError::ModelNotFound))
        ),
        "{outcome:?}"
    );
}

#[tokio::test]
async fn shape_against_the_rule_is_invalid_parameter() {
    let (_backend, gw) = demo_gateway().await;
    let outcome = simple(
        gw.data_addr,
        vec![
            param("INPUT0", vec![i32s(&[16])]),
            param("INPUT1", vec![i32s(&[1, 16])]),
        ],
    )
    .await;
    let (name, reason) = invalid_parameter(outcome);
    assert_eq!(name, "INPUT0");
    assert!(
        reason.contains("[-1,16]"),
        "reason does not name the rule: {reason}"
    );
}

#[tokio::test]
async fn wrong_type_is_invalid_parameter() {
    let (_backend, gw) = demo_gateway().await;
    let outcome = simple(
        gw.data_addr,
        vec![
            param("INPUT0", vec![i32s(&[1, 16])]),
            param("INPUT1", vec![T::F32(arr(&[1, 16], vec![1.0; 16]))]),
        ],
    )
    .await;
    let (name, reason) = invalid_parameter(outcome);
    assert_eq!(name, "INPUT1");
    assert!(
        reason.contains("INT32"),
        "reason does not name the rule: {reason}"
    );
}

#[tokio::test]
async fn missing_parameter_is_invalid_parameter() {
    let (_backend, gw) = demo_gateway().await;
    let outcome = simple(gw.data_addr, vec![param("INPUT0", vec![i32s(&[1, 16])])]).await;
    let (name, reason) = invalid_parameter(outcome);
    assert_eq!(name, "INPUT1");
    assert!(reason.contains("missing"), "{reason}");
}

#[tokio::test]
async fn unknown_parameter_is_invalid_parameter() {
    let (_backend, gw) = demo_gateway().await;
    let outcome = simple(
        gw.data_addr,
        vec![
            param("INPUT0", vec![i32s(&[1, 16])]),
            param("INPUT1", vec![i32s(&[1, 16])]),
            param("INPUT9", vec![i32s(&[1, 16])]),
        ],
    )
    .await;
    let (name, reason) = invalid_parameter(outcome);
    assert_eq!(name, "INPUT9");
    assert!(reason.contains("not one of"), "{reason}");
}

#[tokio::test]
async fn duplicate_parameter_is_invalid_parameter() {
    let (_backend, gw) = demo_gateway().await;
    let outcome = simple(
        gw.data_addr,
        vec![
            param("INPUT0", vec![i32s(&[1, 16])]),
            param("INPUT1", vec![i32s(&[1, 16])]),
            param("INPUT0", vec![i32s(&[1, 16])]),
        ],
    )
    .await;
    let (name, reason) = invalid_parameter(outcome);
    assert_eq!(name, "INPUT0");
    assert!(reason.contains("more than once"), "{reason}");
}

#[tokio::test]
async fn tensors_that_cannot_stack_are_invalid_parameter() {
    let (_backend, gw) = demo_gateway().await;
    let outcome = evaluate(
        &client_for(gw.data_addr),
        "identity",
        vec![param(
            "INPUT0",
            vec![
                T::F32(arr(&[2], vec![1.0, 2.0])),
                T::F32(arr(&[3], vec![1.0; 3])),
            ],
        )],
    )
    .await;
    let (name, _reason) = invalid_parameter(outcome);
    assert_eq!(name, "INPUT0");
}

#[tokio::test]
async fn dataset_parameter_is_invalid_parameter() {
    let (_backend, gw) = demo_gateway().await;
    // The Rust client writes this as {"name":"ds","data":{"type":"dataset",
    // "dataset_id":"d1","dataset_key":"k"}} (snake_case; the Python client
    // writes datasetId/datasetKey): the frontend must refuse both.
    let outcome = evaluate(
        &client_for(gw.data_addr),
        "identity",
        vec![dataset_param("ds", "d1", "k")],
    )
    .await;
    let (name, _reason) = invalid_parameter(outcome);
    assert_eq!(name, "ds");
}

#[tokio::test]
async fn backend_failure_on_valid_input_is_a_failed_evaluation() {
    let (_backend, gw) = demo_gateway().await;
    // Batch 9 passes the route's rule ([-1,16]) but the backend allows <= 8.
    let outcome = simple(
        gw.data_addr,
        vec![
            param("INPUT0", vec![i32s(&[9, 16])]),
            param("INPUT1", vec![i32s(&[9, 16])]),
        ],
    )
    .await;
    match outcome {
        Ok(EvaluateResult::Failed {
            error:
                FailedEvaluationError::Exception {
                    at: _,
                    exception_details: Some(details),
                },
            ..
        }) => assert!(
            details.contains("batch-size must be <= 8"),
            "details do not carry the backend's message: {details}"
        ),
        other => panic!("expected failed/exception, got {other:?}"),
    }
}

#[tokio::test]
async fn unknown_snapshot_is_snapshot_not_found() {
    let (_backend, gw) = demo_gateway().await;
    let outcome = client_for(gw.data_addr)
        .model
        .evaluate(decthings_api::client::rpc::model::EvaluateParams {
            model_id: "identity",
            params: vec![param("INPUT0", vec![i32s(&[1])])],
            snapshot_id: Some("7"),
        })
        .await;
    assert!(
        matches!(
            outcome,
            Err(DecthingsRpcError::Rpc(EvaluateError::SnapshotNotFound))
        ),
        "{outcome:?}"
    );
}

/// A gateway whose route for `identity` has small limits and an output
/// rule, in front of the demo backend.
async fn strict_gateway(backend_url: &str) -> tensorgate::server::Running {
    crate::common::gateway(&format!(
        r#"
[server]
shutdown_grace = "2s"
[backends.demo]
url = "{backend_url}"
request_timeout = "300ms"
[[routes]]
name = "strict"
models = ["identity"]
backend = "demo"
[routes.limits]
max_body_bytes = 4096
[routes.outputs.OUTPUT0]
shape = [2]
[[routes]]
name = "default"
default = true
backend = "demo"
"#
    ))
    .await
}

#[tokio::test]
async fn a_parameter_over_the_body_limit_is_invalid_parameter() {
    let backend = tensorgate_demo::spawn().await.unwrap();
    let gw = strict_gateway(&backend.url()).await;
    let outcome = evaluate(
        &client_for(gw.data_addr),
        "identity",
        vec![param("INPUT0", vec![T::F32(arr(&[2000], vec![0.5; 2000]))])],
    )
    .await;
    let (name, reason) = invalid_parameter(outcome);
    assert_eq!(name, "INPUT0");
    assert!(reason.contains("limit of 4096"), "{reason}");
}

#[tokio::test]
async fn a_body_over_the_limit_in_total_is_quota_exceeded() {
    let backend = tensorgate_demo::spawn().await.unwrap();
    let gw = strict_gateway(&backend.url()).await;
    let outcome = evaluate(
        &client_for(gw.data_addr),
        "identity",
        vec![
            param("A", vec![T::F32(arr(&[400], vec![0.5; 400]))]),
            param("B", vec![T::F32(arr(&[400], vec![0.5; 400]))]),
            param("C", vec![T::F32(arr(&[400], vec![0.5; 400]))]),
        ],
    )
    .await;
    assert!(
        matches!(
            outcome,
            Err(DecthingsRpcError::Rpc(EvaluateError::QuotaExceeded))
        ),
        "{outcome:?}"
    );
}

#[tokio::test]
async fn an_output_against_the_rule_is_an_invalid_output() {
    let backend = tensorgate_demo::spawn().await.unwrap();
    let gw = strict_gateway(&backend.url()).await;
    let outcome = evaluate(
        &client_for(gw.data_addr),
        "identity",
        vec![param(
            "INPUT0",
            vec![T::F32(arr(&[3], vec![1.0, 2.0, 3.0]))],
        )],
    )
    .await;
    match outcome {
        Ok(EvaluateResult::Failed {
            error: FailedEvaluationError::InvalidOutput { details, .. },
            ..
        }) => assert!(details.contains("[3] does not match rule [2]"), "{details}"),
        other => panic!("expected failed/invalid_output, got {other:?}"),
    }
}

#[tokio::test]
async fn a_backend_timeout_is_server_overloaded() {
    let slow = crate::common::TestBackend::start(|_| async {
        tokio::time::sleep(std::time::Duration::from_secs(2)).await;
        crate::common::reply(200, &[], "")
    })
    .await;
    let gw = strict_gateway(&slow.url()).await;
    let outcome = evaluate(
        &client_for(gw.data_addr),
        "identity",
        vec![param("INPUT0", vec![T::F32(arr(&[2], vec![1.0, 2.0]))])],
    )
    .await;
    assert!(
        matches!(
            outcome,
            Ok(EvaluateResult::Failed {
                error: FailedEvaluationError::ServerOverloaded,
                ..
            })
        ),
        "{outcome:?}"
    );
}

#[tokio::test]
async fn an_unreachable_backend_is_unknown() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let gw = strict_gateway(&format!("http://127.0.0.1:{port}")).await;
    let outcome = evaluate(
        &client_for(gw.data_addr),
        "identity",
        vec![param("INPUT0", vec![T::F32(arr(&[2], vec![1.0, 2.0]))])],
    )
    .await;
    assert!(
        matches!(outcome, Err(DecthingsRpcError::Rpc(EvaluateError::Unknown))),
        "{outcome:?}"
    );
}
