//! End-to-end throughput of a large f32 tensor through the Decthings
//! frontend, beside baselines measured in the same run:
//!
//! - `decthings`: the official client (`decthings-api` 0.1.5) →
//!   `POST /v0/Model/evaluate` on the gateway → the demo backend's
//!   `identity` → back;
//! - `decthings raw body`: the same call as pre-built request bytes over a
//!   plain HTTP client (the gateway's share, without the official client's
//!   serialising and parsing);
//! - `v2-binary via gateway`: the same tensor as a V2 binary-extension
//!   request through the gateway;
//! - `v2-binary direct`: the same request straight to the demo backend.
//!
//! Gateway and demo backend run in this process (the embedded demo
//! configuration), on a multi-thread runtime; clients run on the same
//! machine. Reports the median of `--runs` calls per path, alternating.
//!
//! ```sh
//! cargo run --release --example decthings_throughput -- --mib 64 --runs 7
//! ```

use std::time::{Duration, Instant};

use bytes::Bytes;
use decthings_api::client::rpc::model::{EvaluateParams, EvaluateResult};
use decthings_api::client::{
    DecthingsClient, DecthingsClientOptions, DecthingsParameterProvider,
    DecthingsParameterProviderData,
};
use decthings_api::ndarray::{ArrayD, IxDyn};
use decthings_api::tensor::DecthingsTensor;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;

fn arg(name: &str, default: usize) -> usize {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let mib = arg("--mib", 64);
    let runs = arg("--runs", 7);
    let n = mib << 18; // f32 elements
    let values: Vec<f32> = (0..n).map(|i| i as f32 * 0.25).collect();

    let backend = tensorgate_demo::spawn().await.expect("demo backend");
    let data = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let admin = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let config = tensorgate::config::Config::demo(
        backend.addr,
        data.local_addr().unwrap(),
        admin.local_addr().unwrap(),
    )
    .unwrap();
    let gw = tensorgate::server::start_on(config, data, admin).unwrap();

    let client = DecthingsClient::new(DecthingsClientOptions {
        http_server_address: format!("http://{}/v0", gw.data_addr),
        ..Default::default()
    });
    let array = ArrayD::from_shape_vec(IxDyn(&[n]), values.clone()).unwrap();
    let v2 = v2_body(&values);
    let http = Client::builder(TokioExecutor::new()).build_http::<Full<Bytes>>();

    let raw = decthings_body(&values);
    let evaluate_url = format!("http://{}/v0/Model/evaluate", gw.data_addr);
    let (mut dt, mut via, mut direct, mut rawt) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for _ in 0..runs {
        let started = Instant::now();
        let params = vec![DecthingsParameterProvider {
            name: "INPUT0",
            data: DecthingsParameterProviderData::Data(vec![DecthingsTensor::F32(
                array.view().into(),
            )]),
        }];
        let outcome = client
            .model
            .evaluate(EvaluateParams {
                model_id: "identity",
                params,
                snapshot_id: None,
            })
            .await;
        match outcome {
            Ok(EvaluateResult::Success { output, .. }) => {
                assert_eq!(output[0].data[0].tensor().shape(), &[n], "reply shape");
            }
            other => panic!("evaluate failed: {other:?}"),
        }
        dt.push(started.elapsed());
        rawt.push(post(&http, &evaluate_url, &raw, &[], n).await);
        via.push(post_v2(&http, &format!("http://{}", gw.data_addr), &v2, n).await);
        direct.push(post_v2(&http, &backend.url(), &v2, n).await);
    }
    let mb = (n * 4) as f64 / 1e6;
    let report = |name: &str, d: Duration| {
        println!(
            "{name:<24} median {:>8.1} ms  {:>7.0} MB/s (tensor bytes each way)",
            d.as_secs_f64() * 1e3,
            mb / d.as_secs_f64()
        );
    };
    let (dt, via, direct, rawt) = (median(dt), median(via), median(direct), median(rawt));
    println!("{mib} MiB f32 ({n} elements), {runs} runs each, alternating");
    report("decthings via gateway", dt);
    report("decthings raw body", rawt);
    report("v2-binary via gateway", via);
    report("v2-binary direct", direct);
    println!(
        "decthings / v2-binary via gateway: {:.2}x the time; decthings / direct: {:.2}x",
        dt.as_secs_f64() / via.as_secs_f64(),
        dt.as_secs_f64() / direct.as_secs_f64()
    );
    gw.shutdown().await;
}

/// A V2 binary-extension request for `identity` with binary outputs.
fn v2_body(values: &[f32]) -> (Bytes, usize) {
    let header = format!(
        r#"{{"inputs":[{{"name":"INPUT0","datatype":"FP32","shape":[{}],"parameters":{{"binary_data_size":{}}}}}],"parameters":{{"binary_data_output":true}}}}"#,
        values.len(),
        values.len() * 4
    );
    let mut body = header.clone().into_bytes();
    for v in values {
        body.extend_from_slice(&v.to_le_bytes());
    }
    (Bytes::from(body), header.len())
}

/// A `Model.evaluate` call for `identity` with one f32 parameter.
fn decthings_body(values: &[f32]) -> Bytes {
    let data: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
    let t = tensorgate::tensor::Tensor::new(
        tensorgate::tensor::DataType::F32,
        tensorgate::tensor::Shape::new(vec![values.len() as u64]),
        Bytes::from(data),
    )
    .unwrap();
    let mut blob = bytes::BytesMut::new();
    tensorgate::codec::decthings::encode(&t, Default::default(), &mut blob).unwrap();
    tensorgate::codec::decthings::rpc::encode_request(
        br#"{"modelId":"identity","params":[{"name":"INPUT0"}]}"#,
        &[blob.freeze()],
    )
    .unwrap()
}

type Http = Client<hyper_util::client::legacy::connect::HttpConnector, Full<Bytes>>;

async fn post_v2(
    http: &Http,
    base: &str,
    (body, header_len): &(Bytes, usize),
    n: usize,
) -> Duration {
    let ihcl = header_len.to_string();
    let url = format!("{base}/v2/models/identity/infer");
    post(
        http,
        &url,
        body,
        &[("inference-header-content-length", &ihcl)],
        n,
    )
    .await
}

async fn post(
    http: &Http,
    url: &str,
    body: &Bytes,
    headers: &[(&str, &str)],
    n: usize,
) -> Duration {
    let started = Instant::now();
    let mut req = http::Request::post(url);
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let req = req.body(Full::new(body.clone())).unwrap();
    let resp = http.request(req).await.expect("request");
    assert_eq!(resp.status(), 200);
    let got = resp.into_body().collect().await.unwrap().to_bytes();
    assert!(got.len() > n * 4, "reply size");
    started.elapsed()
}
