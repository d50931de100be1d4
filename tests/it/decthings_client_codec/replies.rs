//! Reply bodies framed with tensorgate's `rpc::encode_response`, parsed by
//! the official client (its parser is private, so over HTTP from a raw
//! loopback server): what it accepts, how it types it, what it refuses and
//! where it panics.

use std::sync::{Arc, Mutex};

use bytes::{Bytes, BytesMut};
use decthings_api::client::rpc::model::EvaluateResult;
use decthings_api::client::{DecthingsClientError, DecthingsRpcError};
use decthings_api::tensor::DecthingsTensor as T;
use proptest::prelude::*;
use serde_json::{Value, json};
use tensorgate::codec::decthings::{self, Layout, rpc};

use super::dc::*;
use super::tensors::{any_tensor, cases, plain_of};

/// A raw server whose next reply the test sets.
struct Scripted {
    server: RawServer,
    next: Arc<Mutex<Vec<u8>>>,
}

impl Scripted {
    async fn start() -> Scripted {
        let next = Arc::new(Mutex::new(Vec::new()));
        let reply = next.clone();
        let server = RawServer::start(move |_| reply.lock().unwrap().clone()).await;
        Scripted { server, next }
    }

    /// Answers the next call with `status` and `body`, and makes it.
    async fn call(&self, status: u16, body: &[u8]) -> EvalOutcome {
        *self.next.lock().unwrap() = http_reply(status, body);
        let client = client_for(self.server.addr);
        evaluate(
            &client,
            "m",
            vec![param("x", vec![T::U8(arr(&[], vec![1]))])],
        )
        .await
    }

    /// Answers with `json` and `blobs` framed by tensorgate.
    async fn rpc(&self, json: &Value, blobs: &[Bytes]) -> EvalOutcome {
        let body = rpc::encode_response(&serde_json::to_vec(json).unwrap(), blobs);
        self.call(200, &body).await
    }

    /// Same as [`Scripted::call`], on a task: `Err(message)` if the client
    /// panicked.
    async fn call_catching(&self, body: Vec<u8>) -> Result<String, String> {
        *self.next.lock().unwrap() = http_reply(200, &body);
        let client = client_for(self.server.addr);
        let task = tokio::spawn(async move {
            let outcome = evaluate(
                &client,
                "m",
                vec![param("x", vec![T::U8(arr(&[], vec![1]))])],
            )
            .await;
            format!("{outcome:?}")
        });
        task.await.map_err(|e| {
            let panic = e.into_panic();
            panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default()
        })
    }
}

const LAUNCHER: &str = r#"{"type":"temporaryLauncher","spec":{"cpus":0,"memoryMebibytes":0}}"#;

fn launcher() -> Value {
    serde_json::from_str(LAUNCHER).unwrap()
}

/// The smallest success the client accepts, with these outputs.
fn success_json(names: &[&str]) -> Value {
    let output: Vec<Value> = names.iter().map(|n| json!({ "name": n })).collect();
    json!({"result": {"success": {
        "totalDuration": 7,
        "durations": {"evaluate": 5},
        "executedOnLauncher": launcher(),
        "output": output,
    }}})
}

fn blob(ts: &[T<'_>]) -> Bytes {
    let mut out = Vec::new();
    for t in ts {
        out.extend_from_slice(&t.serialize());
    }
    out.into()
}

fn is_invalid_message(o: &EvalOutcome) -> bool {
    matches!(
        o,
        Err(DecthingsRpcError::Request(
            DecthingsClientError::InvalidMessage
        ))
    )
}

fn is_parse_failure(o: &EvalOutcome) -> bool {
    matches!(
        o,
        Err(DecthingsRpcError::Request(
            DecthingsClientError::ParseResponseFailed(_)
        ))
    )
}

#[tokio::test]
async fn every_error_code_is_typed() {
    let s = Scripted::start().await;
    let cases = [
        (json!({"code": "model_not_found"}), "ModelNotFound"),
        (json!({"code": "snapshot_not_found"}), "SnapshotNotFound"),
        (json!({"code": "quota_exceeded"}), "QuotaExceeded"),
        (
            json!({"code": "dataset_not_found", "datasetId": "d1"}),
            r#"DatasetNotFound { dataset_id: "d1" }"#,
        ),
        (
            json!({"code": "dataset_key_not_found", "datasetId": "d1", "datasetKey": "k"}),
            r#"DatasetKeyNotFound { dataset_id: "d1", dataset_key: "k" }"#,
        ),
        (
            json!({"code": "model_to_mount_no_longer_exists"}),
            "ModelToMountNoLongerExists",
        ),
        (json!({"code": "bad_credentials"}), "BadCredentials"),
        (json!({"code": "too_many_requests"}), "TooManyRequests"),
        (json!({"code": "payment_required"}), "PaymentRequired"),
        (json!({"code": "unknown"}), "Unknown"),
        (
            json!({"code": "invalid_parameter", "parameterName": "INPUT0", "reason": "r"}),
            r#"InvalidParameter { parameter_name: "INPUT0", reason: "r" }"#,
        ),
        // Extra members are ignored.
        (
            json!({"code": "model_not_found", "message": "no model 'x'"}),
            "ModelNotFound",
        ),
    ];
    for (error, expected) in cases {
        let outcome = s.rpc(&json!({ "error": error }), &[]).await;
        assert_eq!(
            format!("{outcome:?}"),
            format!("Err(Rpc({expected}))"),
            "{error}"
        );
    }
}

#[tokio::test]
async fn malformed_errors_fail_to_parse() {
    let s = Scripted::start().await;
    for error in [
        json!({"code": "no_such_code"}),
        json!({"code": "invalid_parameter", "parameterName": "x"}),
        json!({"code": "invalid_parameter", "parameter_name": "x", "reason": "r"}),
        json!({"code": "dataset_not_found"}),
        json!({"message": "no code"}),
        json!("model_not_found"),
    ] {
        let outcome = s.rpc(&json!({ "error": error }), &[]).await;
        assert!(is_parse_failure(&outcome), "{error}: {outcome:?}");
    }
}

#[tokio::test]
async fn every_failure_is_typed() {
    let s = Scripted::start().await;
    let cases = [
        (json!({"code": "launcher_terminated"}), "LauncherTerminated"),
        (json!({"code": "cancelled"}), "Cancelled"),
        (json!({"code": "server_overloaded"}), "ServerOverloaded"),
        (
            json!({"code": "invalid_executable_file"}),
            "InvalidExecutableFile",
        ),
        (
            json!({"code": "read_executable_file_failed"}),
            "ReadExecutableFileFailed",
        ),
        (json!({"code": "unknown"}), "Unknown"),
        (
            json!({"code": "max_duration_exceeded", "at": "evaluate"}),
            "MaxDurationExceeded { at: Evaluate }",
        ),
        (
            json!({"code": "code_terminated", "oom": false}),
            "CodeTerminated { exit_code: None, signal: None, oom: false }",
        ),
        (
            json!({"code": "code_terminated", "exitCode": -1, "signal": "SIGKILL", "oom": true}),
            r#"CodeTerminated { exit_code: Some(-1), signal: Some("SIGKILL"), oom: true }"#,
        ),
        (
            json!({"code": "exception", "at": "evaluate", "exceptionDetails": "boom"}),
            r#"Exception { at: Evaluate, exception_details: Some("boom") }"#,
        ),
        (
            json!({"code": "exception", "at": "codeStartup"}),
            "Exception { at: CodeStartup, exception_details: None }",
        ),
        (
            json!({"code": "exception", "at": "instantiateModel", "exceptionDetails": null}),
            "Exception { at: InstantiateModel, exception_details: None }",
        ),
        (
            json!({"code": "invalid_output", "reason": "invalid", "details": "d"}),
            r#"InvalidOutput { reason: Invalid, details: "d" }"#,
        ),
        (
            json!({"code": "invalid_output", "reason": "not_applicable_to_parameter_definitions", "details": ""}),
            r#"InvalidOutput { reason: NotApplicableToParameterDefinitions, details: "" }"#,
        ),
    ];
    for (error, expected) in cases {
        let reply = json!({"result": {"failed": {
            "totalDuration": 3,
            "durations": {},
            "executedOnLauncher": launcher(),
            "error": error,
        }}});
        // Blobs after a failure are ignored.
        let outcome = s.rpc(&reply, &[Bytes::from_static(b"junk")]).await;
        let expected = format!(
            "Ok(Failed {{ total_duration: 3, durations: FailedEvaluationDurations {{ \
             create_launcher: None, code_startup: None, create_instantiated_model: None, \
             evaluate: None }}, executed_on_launcher: TemporaryLauncher {{ spec: LauncherSpec \
             {{ cpus: 0.0, memory_mebibytes: 0, disk_mebibytes: None, swap_mebibytes: None, \
             gpus: None }} }}, error: {expected} }})"
        );
        assert_eq!(format!("{outcome:?}"), expected, "{error}");
    }
    // The code sits in `failed.error`, beside required `totalDuration`,
    // `durations` and `executedOnLauncher`: a bare `{"failed":{"code":...}}`
    // does not parse.
    let bare = json!({"result": {"failed": {"code": "exception", "at": "evaluate", "exceptionDetails": "boom"}}});
    assert!(is_parse_failure(&s.rpc(&bare, &[]).await));
    // `at` is required; `exception` without it does not parse.
    let reply = json!({"result": {"failed": {
        "totalDuration": 3, "durations": {}, "executedOnLauncher": launcher(),
        "error": {"code": "exception", "exceptionDetails": "boom"},
    }}});
    assert!(is_parse_failure(&s.rpc(&reply, &[]).await));
}

#[tokio::test]
async fn success_pairs_blobs_with_outputs() {
    let s = Scripted::start().await;
    let b0 = blob(&[T::F32(arr(&[2], vec![1.5, -2.0]))]);
    let b1 = blob(&[
        T::I32(arr(&[], vec![4])),
        T::String(arr_ref(&[1], vec!["hé"])),
    ]);
    let outcome = s
        .rpc(
            &success_json(&["OUTPUT0", "OUTPUT1", "EMPTY"]),
            &[b0, b1, Bytes::new()],
        )
        .await;
    let Ok(EvaluateResult::Success {
        total_duration,
        durations,
        executed_on_launcher,
        output,
    }) = outcome
    else {
        panic!("{outcome:?}");
    };
    assert_eq!(total_duration, 7);
    assert_eq!(durations.evaluate, 5);
    assert_eq!(
        format!("{executed_on_launcher:?}"),
        "TemporaryLauncher { spec: LauncherSpec { cpus: 0.0, memory_mebibytes: 0, \
         disk_mebibytes: None, swap_mebibytes: None, gpus: None } }"
    );
    let names: Vec<&str> = output.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["OUTPUT0", "OUTPUT1", "EMPTY"]);
    assert_eq!(
        single(&output, "OUTPUT0"),
        plain(&T::F32(arr(&[2], vec![1.5, -2.0])))
    );
    let second: Vec<Plain> = output[1].data.iter().map(|t| plain(&t.tensor())).collect();
    assert_eq!(
        second,
        [
            plain(&T::I32(arr(&[], vec![4]))),
            plain(&T::String(arr_ref(&[1], vec!["hé"])))
        ]
    );
    // An empty blob is an output with no tensors.
    assert!(output[2].data.is_empty());
}

#[tokio::test]
async fn full_success_with_every_optional_member() {
    let s = Scripted::start().await;
    let reply = json!({"result": {"success": {
        "totalDuration": 12,
        "durations": {"createLauncher": 1, "codeStartup": 2, "createInstantiatedModel": 3, "evaluate": 4},
        "executedOnLauncher": {"type": "persistentLauncher", "persistentLauncherId": "p1",
            "spec": {"cpus": 0.5, "memoryMebibytes": 256, "diskMebibytes": 1, "swapMebibytes": 0,
                     "gpus": {"model": "L4", "count": 1}}},
        "output": [{"name": "OUTPUT0", "data": "ignored", "extra": 1}],
        "extra": true,
    }}});
    let outcome = s.rpc(&reply, &[blob(&[T::U8(arr(&[1], vec![9]))])]).await;
    assert_eq!(
        format!("{outcome:?}"),
        "Ok(Success { total_duration: 12, durations: EvaluationDurations { create_launcher: \
         Some(1), code_startup: Some(2), create_instantiated_model: Some(3), evaluate: 4 }, \
         executed_on_launcher: PersistentLauncher { persistent_launcher_id: \"p1\", spec: \
         LauncherSpec { cpus: 0.5, memory_mebibytes: 256, disk_mebibytes: Some(1), \
         swap_mebibytes: Some(0), gpus: Some(LauncherSpecGpus { model: \"L4\", count: 1 }) } }, \
         output: [DecthingsParameter { name: \"OUTPUT0\", data: [OwnedDecthingsTensor(U8([9], \
         shape=[1], strides=[1], layout=CFcf (0xf), dynamic ndim=1))] }] })"
    );
}

/// Removing any one of these from the minimal success makes the client
/// fail with `ParseResponseFailed`.
#[tokio::test]
async fn required_success_members() {
    let s = Scripted::start().await;
    let required: [&[&str]; 8] = [
        &["totalDuration"],
        &["durations"],
        &["durations", "evaluate"],
        &["executedOnLauncher"],
        &["executedOnLauncher", "type"],
        &["executedOnLauncher", "spec"],
        &["executedOnLauncher", "spec", "cpus"],
        &["executedOnLauncher", "spec", "memoryMebibytes"],
    ];
    for path in required {
        let mut reply = success_json(&["OUTPUT0"]);
        let (last, parents) = path.split_last().unwrap();
        let mut v = &mut reply["result"]["success"];
        for p in parents {
            v = &mut v[*p];
        }
        v.as_object_mut().unwrap().remove(*last);
        let outcome = s.rpc(&reply, &[Bytes::new()]).await;
        assert!(is_parse_failure(&outcome), "without {path:?}: {outcome:?}");
    }
    let mut reply = success_json(&["OUTPUT0"]);
    reply["result"]["success"]
        .as_object_mut()
        .unwrap()
        .remove("output");
    assert!(is_parse_failure(&s.rpc(&reply, &[]).await));
    let reply = json!({"result": {"success": {"totalDuration": 1, "durations": {"evaluate": 1},
        "executedOnLauncher": launcher(), "output": [{}]}}});
    assert!(is_parse_failure(&s.rpc(&reply, &[Bytes::new()]).await));
}

/// Numbers must fit their Rust types: durations are u64 integers.
#[tokio::test]
async fn durations_must_be_unsigned_integers() {
    let s = Scripted::start().await;
    for bad in [json!(1.5), json!(-1), json!("7"), Value::Null] {
        let mut reply = success_json(&[]);
        reply["result"]["success"]["totalDuration"] = bad.clone();
        assert!(is_parse_failure(&s.rpc(&reply, &[]).await), "{bad}");
    }
    let mut reply = success_json(&[]);
    reply["result"]["success"]["totalDuration"] = json!(u64::MAX);
    assert!(s.rpc(&reply, &[]).await.is_ok());
}

#[tokio::test]
async fn top_level_shape_is_strict() {
    let s = Scripted::start().await;
    let mut two_keys = success_json(&[]);
    two_keys["id"] = json!(1);
    for reply in [
        two_keys,
        json!({}),
        json!({"Result": success_json(&[])["result"].clone()}),
        json!({"result": {"succeeded": {}}}),
        json!([]),
    ] {
        let outcome = s.rpc(&reply, &[]).await;
        assert!(is_parse_failure(&outcome), "{reply}: {outcome:?}");
    }
}

#[tokio::test]
async fn blob_count_must_match_outputs() {
    let s = Scripted::start().await;
    let one = blob(&[T::U8(arr(&[], vec![1]))]);
    for blobs in [vec![], vec![one.clone(), one.clone()]] {
        let outcome = s.rpc(&success_json(&["OUTPUT0"]), &blobs).await;
        assert!(
            is_invalid_message(&outcome),
            "{} blobs: {outcome:?}",
            blobs.len()
        );
    }
}

#[tokio::test]
async fn framing_errors_are_invalid_message() {
    let s = Scripted::start().await;
    let json = serde_json::to_vec(&success_json(&["OUTPUT0"])).unwrap();
    let good = rpc::encode_response(&json, &[blob(&[T::U8(arr(&[], vec![1]))])]);
    let bodies: Vec<Vec<u8>> = vec![
        vec![],                          // empty body
        vec![0xfd, 0x01],                // JSON length cut off
        good[..good.len() - 1].to_vec(), // last blob cut short
        [&good[..], &[0x05]].concat(),   // a blob length with no blob
    ];
    for body in bodies {
        let outcome = s.call(200, &body).await;
        assert!(is_invalid_message(&outcome), "{body:?}: {outcome:?}");
    }
    // An overlong varint is accepted (253, 0x0005 = 5).
    let mut overlong = vec![0xfd];
    overlong.extend_from_slice(&(json.len() as u16).to_be_bytes());
    overlong.extend_from_slice(&json);
    overlong.extend_from_slice(&[0xfd, 0x00, 0x03, 7, 0, 1]);
    assert!(s.call(200, &overlong).await.is_ok());
}

#[tokio::test]
async fn invalid_tensors_are_invalid_message() {
    let s = Scripted::start().await;
    for bad in [
        &b"\x00\x00"[..],                // type byte 0
        b"\x11\x00\x00",                 // type byte 17
        b"\x01\x01\x02\x00\x00\x00",     // f32 [2] with 4 of 8 bytes
        b"\x0b\x01\x01\x02\x01\xff",     // string that is not UTF-8
        b"\x0e\x01\x01\x01\x00",         // image element of length 0 (no format byte)
        b"\x0e\x01\x01\x02\x01\x01",     // image format length 1 > element length 1 - 1
        b"\x0e\x01\x01\x03\x02\x01\xff", // image format that is not UTF-8
    ] {
        let outcome = s
            .rpc(&success_json(&["OUTPUT0"]), &[Bytes::copy_from_slice(bad)])
            .await;
        assert!(is_invalid_message(&outcome), "{bad:?}: {outcome:?}");
    }
}

/// Lenient spots: the element-section length of a variable-size tensor is
/// skipped, never compared (0 here instead of 4), and any non-zero boolean
/// byte is `true`.
#[tokio::test]
async fn what_the_client_does_not_check() {
    let s = Scripted::start().await;
    let string = Bytes::from_static(b"\x0b\x01\x01\x00\x03h\xc3\xa9");
    let boolean = Bytes::from_static(b"\x0d\x01\x03\x00\x07\xff");
    let output = success(s.rpc(&success_json(&["S", "B"]), &[string, boolean]).await);
    assert_eq!(
        single(&output, "S"),
        plain(&T::String(arr_ref(&[1], vec!["hé"])))
    );
    assert_eq!(
        single(&output, "B"),
        plain(&T::Boolean(arr(&[3], vec![false, true, true])))
    );
}

#[tokio::test]
async fn status_4xx_and_5xx_are_http_errors_and_the_body_is_not_read() {
    let s = Scripted::start().await;
    let body = rpc::encode_response(br#"{"error":{"code":"model_not_found"}}"#, &[]);
    for status in [400u16, 404, 429, 500, 503] {
        match s.call(status, &body).await {
            Err(DecthingsRpcError::Request(DecthingsClientError::Http(e))) => {
                assert_eq!(e.status().map(|s| s.as_u16()), Some(status));
            }
            other => panic!("{status}: {other:?}"),
        }
    }
    // Any other status is read like 200.
    // (300 with no Location is not followed as a redirect.)
    for status in [200u16, 201, 203, 299, 300] {
        let outcome = s.call(status, &body).await;
        assert_eq!(
            format!("{outcome:?}"),
            "Err(Rpc(ModelNotFound))",
            "{status}"
        );
    }
    assert!(is_invalid_message(&s.call(204, b"").await));
}

/// Inputs on which the client panics instead of returning an error. A
/// frontend must never produce them; they are listed here so that a change
/// in the client shows.
#[tokio::test]
async fn inputs_that_make_the_client_panic() {
    let s = Scripted::start().await;
    let json = serde_json::to_vec(&success_json(&["OUTPUT0"])).unwrap();
    let cases: [(&str, &[u8]); 5] = [
        // string [1], section 4, element of 3 bytes with 1 present
        ("truncated string element", b"\x0b\x01\x01\x04\x03h"),
        // binary [1], element of 3 bytes with 1 present
        ("truncated binary element", b"\x0c\x01\x01\x04\x03h"),
        // image [1], element of length 1 with no bytes left for its format
        ("truncated media element", b"\x0e\x01\x01\x02\x01"),
        // u8 [2^32, 2^32, 0]: the element count overflows before the 0
        (
            "shape product overflow",
            b"\x07\x03\xff\x00\x00\x00\x01\x00\x00\x00\x00\xff\x00\x00\x00\x01\x00\x00\x00\x00\x00",
        ),
        // u8 [0, 2^32, 2^32]: 0 elements, but ndarray refuses the shape
        (
            "empty shape too large for ndarray",
            b"\x07\x03\x00\xff\x00\x00\x00\x01\x00\x00\x00\x00\xff\x00\x00\x00\x01\x00\x00\x00\x00",
        ),
    ];
    for (what, bad) in cases {
        let body = rpc::encode_response(&json, &[Bytes::copy_from_slice(bad)]);
        let result = s.call_catching(body.to_vec()).await;
        assert!(result.is_err(), "{what}: no panic, got {result:?}");
    }
}

proptest! {
    #![proptest_config(cases(48))]

    /// Any outputs tensorgate frames (`encode` per tensor, one blob per
    /// output, `rpc::encode_response`) come out of the client as the same
    /// parameters holding the same tensors.
    #[test]
    fn client_reads_replies_tensorgate_frames(
        outputs in prop::collection::vec(prop::collection::vec(any_tensor(), 0..=3), 0..=3)
    ) {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let names: Vec<String> = (0..outputs.len()).map(|i| format!("OUTPUT{i}")).collect();
        let name_refs: Vec<&str> = names.iter().map(String::as_str).collect();
        let blobs: Vec<Bytes> = outputs
            .iter()
            .map(|ts| {
                let mut b = BytesMut::new();
                for t in ts {
                    decthings::encode(t, Layout::Current, &mut b).unwrap();
                }
                b.freeze()
            })
            .collect();
        let outcome = rt.block_on(async {
            let s = Scripted::start().await;
            s.rpc(&success_json(&name_refs), &blobs).await
        });
        let output = success(outcome);
        prop_assert_eq!(output.len(), outputs.len());
        for ((p, ts), name) in output.iter().zip(&outputs).zip(&names) {
            prop_assert_eq!(&p.name, name);
            let got: Vec<Plain> = p.data.iter().map(|t| plain(&t.tensor())).collect();
            let want: Vec<Plain> = ts.iter().map(plain_of).collect();
            prop_assert_eq!(got, want);
        }
    }
}
