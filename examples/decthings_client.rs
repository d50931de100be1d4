//! Getting started: the official Decthings Rust client (`decthings-api`)
//! calling `Model.evaluate` on the gateway. The gateway turns each input
//! parameter into the V2 input of the same name, and each backend output
//! into an output parameter.
//!
//!     cargo run --release                        # the gateway and its demo backend
//!     cargo run --example decthings_client       # another terminal
//!     cargo run --example decthings_client -- http://127.0.0.1:8000/v0 simple
//!     cargo run --example decthings_client -- http://127.0.0.1:8000/v0 simple KEY   # a route with API keys
//!
//! Against the demo's `simple` model it sends two `[1, 16]` i32 tensors and
//! prints the sum and difference the model returns; it exits 1 if they are
//! not what `simple` computes (scripts/test.sh runs it through
//! examples/run.sh). The README's Decthings fragment is the part between
//! the `README` markers below, word for word (tests/it/readme.rs checks it).
//!
//! Loopback only, one request: it never sends anywhere but the address
//! given. reqwest honours HTTP_PROXY even for 127.0.0.1, so unset it (or
//! add 127.0.0.1 to NO_PROXY) first.

use std::process::ExitCode;

use decthings_api::client::rpc::model::{EvaluateParams, EvaluateResult};
use decthings_api::client::{
    DecthingsClient, DecthingsClientOptions, DecthingsParameterProvider,
    DecthingsParameterProviderData,
};
use decthings_api::ndarray::{ArrayD, IxDyn};
use decthings_api::tensor::DecthingsTensor;

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let address = args
        .next()
        .unwrap_or_else(|| "http://127.0.0.1:8000/v0".to_owned());
    let model = args.next().unwrap_or_else(|| "simple".to_owned());
    let key = args.next();
    let a: Vec<i32> = (1..=16).collect();
    let b: Vec<i32> = vec![1; 16];
    let tensor = |v: &Vec<i32>| {
        let array = ArrayD::from_shape_vec(IxDyn(&[1, 16]), v.clone()).expect("16 values");
        DecthingsTensor::I32(array.into())
    };
    let (input0, input1) = (tensor(&a), tensor(&b));

    // README: begin
    let client = DecthingsClient::new(DecthingsClientOptions {
        http_server_address: address.clone(), // e.g. "http://127.0.0.1:8000/v0"
        ..Default::default()
    });
    // A route with [routes.auth] takes the key as `Authorization: Bearer`.
    if let Some(key) = key {
        client.set_api_key(key).await;
    }
    // One parameter per V2 input, each holding its tensor(s).
    let params = vec![
        DecthingsParameterProvider {
            name: "INPUT0",
            data: DecthingsParameterProviderData::Data(vec![input0]),
        },
        DecthingsParameterProvider {
            name: "INPUT1",
            data: DecthingsParameterProviderData::Data(vec![input1]),
        },
    ];
    // modelId is the backend model's name (or mapped by
    // [routes.decthings.model_ids]); snapshotId, when given, is its version.
    let outcome = client
        .model
        .evaluate(EvaluateParams {
            model_id: &model,
            params,
            snapshot_id: None,
        })
        .await;
    // README: end

    let output = match outcome {
        Ok(EvaluateResult::Success { output, .. }) => output,
        other => {
            eprintln!("{address}: evaluate did not succeed: {other:?}");
            return ExitCode::FAILURE;
        }
    };
    let mut failed = false;
    for (name, want) in [
        (
            "OUTPUT0",
            a.iter().zip(&b).map(|(x, y)| x + y).collect::<Vec<i32>>(),
        ),
        ("OUTPUT1", a.iter().zip(&b).map(|(x, y)| x - y).collect()),
    ] {
        let got: Vec<i32> = output
            .iter()
            .find(|p| p.name == name)
            .and_then(|p| p.data.first())
            .and_then(|t| match t.tensor() {
                DecthingsTensor::I32(values) => Some(values.iter().copied().collect()),
                _ => None,
            })
            .unwrap_or_default();
        println!("{name}: {got:?}");
        if got != want {
            eprintln!("{name}: expected {want:?}");
            failed = true;
        }
    }
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
