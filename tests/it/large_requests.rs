//! Large JSON requests through the gateway: their tensor data arrives in
//! chunks big enough to be converted in two halves on two threads
//! (`DocParser::split`). The backend must receive exactly the binary of
//! the whole text, and errors deep in the data must name the element that
//! whole-text parsing names.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::common;
use crate::common::{TestBackend, gateway, post_json, reply, simple_config};

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

/// The exact binary of `values`, checked element by element.
fn assert_binary(body: &[u8], header_len: usize, values: &[f32]) {
    let binary = &body[header_len..];
    assert_eq!(binary.len(), 4 * values.len());
    for (i, (chunk, want)) in binary.chunks_exact(4).zip(values).enumerate() {
        let got = f32::from_le_bytes(chunk.try_into().unwrap());
        assert_eq!(got.to_bits(), want.to_bits(), "element {i}");
    }
}

fn header_len(seen: &common::Seen) -> usize {
    seen.headers["inference-header-content-length"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap()
}

/// A single-input request sent at full speed goes out while it is read and
/// is finished, not sent again: the backend gets each request once, whole,
/// and no aborted one. (A request is abandoned and sent again when the
/// client keeps the gateway waiting 50 ms: on a loaded machine that may
/// happen to one, not to all five.)
#[tokio::test]
async fn a_large_request_read_at_full_speed_is_sent_once() {
    let backend = backend().await;
    let gw = gateway(&simple_config(&backend.url(), "")).await;
    let values = values();
    let body = request(&format!("[{N}]"), &texts(&values));
    for _ in 0..5 {
        let got = post_json(gw.data_addr, INFER, &body).await;
        assert_eq!(got.status, 200, "{:?}", got.body);
    }
    let seen = backend.requests();
    assert_eq!(seen.len(), 5);
    for s in &seen {
        assert_binary(&s.body, header_len(s), &values);
    }
    let aborted = backend.aborted.load(Ordering::SeqCst);
    assert!(aborted < 5, "every request was sent twice");
}

/// Members after the inputs change the backend's header: the request
/// started while the data was read is dropped unfinished, and the backend
/// gets exactly one whole request, the right one.
#[tokio::test]
async fn members_after_the_data_still_reach_the_backend() {
    let backend = backend().await;
    let gw = gateway(&simple_config(&backend.url(), "")).await;
    let values = values();
    let data = texts(&values).join(",");
    let cases = [
        (
            format!(
                r#"{{"inputs":[{{"name":"X","shape":[{N}],"datatype":"FP32","data":[{data}]}}],"outputs":[{{"name":"Y"}}]}}"#
            ),
            r#"{"inputs":[{"name":"X","datatype":"FP32","shape":[300000],"parameters":{"binary_data_size":1200000}}],"outputs":[{"name":"Y","parameters":{"binary_data":true}}]}"#,
        ),
        (
            format!(
                r#"{{"id":"a","inputs":[{{"name":"X","shape":[{N}],"datatype":"FP32","data":[{data}],"parameters":{{"p":1}}}}]}}"#
            ),
            r#"{"id":"a","inputs":[{"name":"X","datatype":"FP32","shape":[300000],"parameters":{"p":1,"binary_data_size":1200000}}],"parameters":{"binary_data_output":true}}"#,
        ),
    ];
    for (i, (body, header)) in cases.iter().enumerate() {
        let got = post_json(gw.data_addr, INFER, body).await;
        assert_eq!(got.status, 200, "{:?}", got.body);
        let seen = backend.requests();
        assert_eq!(seen.len(), i + 1, "whole requests the backend got");
        assert_eq!(
            backend.aborted.load(Ordering::SeqCst),
            i + 1,
            "aborted ones"
        );
        let seen = &seen[i];
        let n = header_len(seen);
        assert_eq!(std::str::from_utf8(&seen.body[..n]).unwrap(), *header);
        assert_binary(&seen.body, n, &values);
    }
}

/// Complete requests (IHCL and body) and aborted ones, as a
/// [`signalling_backend`] saw them.
#[derive(Default)]
struct Seen {
    whole: Vec<(usize, Vec<u8>)>,
    aborted: usize,
}

/// A backend that says (on the receiver) when the first bytes of a body
/// arrive, and records what it got; answers one INT32 output.
async fn signalling_backend() -> (
    String,
    Arc<Mutex<Seen>>,
    tokio::sync::mpsc::Receiver<()>,
    tokio::task::JoinHandle<()>,
) {
    use http_body_util::BodyExt;
    use hyper::service::service_fn;
    use hyper_util::rt::TokioIo;

    let (first_tx, first_rx) = tokio::sync::mpsc::channel::<()>(4);
    let seen = Arc::new(Mutex::new(Seen::default()));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let store = seen.clone();
    let server = tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let (store, signal) = (store.clone(), first_tx.clone());
            let svc = service_fn(move |req: http::Request<hyper::body::Incoming>| {
                let (store, signal) = (store.clone(), signal.clone());
                async move {
                    let ihcl: usize = req.headers()["inference-header-content-length"]
                        .to_str()
                        .unwrap()
                        .parse()
                        .unwrap();
                    let mut body = req.into_body();
                    let mut all = Vec::new();
                    while let Some(frame) = body.frame().await {
                        let Ok(frame) = frame else {
                            store.lock().unwrap().aborted += 1;
                            return Err("aborted");
                        };
                        if let Ok(data) = frame.into_data() {
                            if all.is_empty() {
                                let _ = signal.send(()).await;
                            }
                            all.extend_from_slice(&data);
                        }
                    }
                    store.lock().unwrap().whole.push((ihcl, all));
                    let reply =
                        r#"{"outputs":[{"name":"Y","datatype":"INT32","shape":[1],"data":[7]}]}"#;
                    Ok(http::Response::builder()
                        .header("content-type", "application/json")
                        .body(http_body_util::Full::new(bytes::Bytes::from(reply)))
                        .unwrap())
                }
            });
            tokio::spawn(
                hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), svc),
            );
        }
    });
    (url, seen, first_rx, server)
}

/// Posts `body` on a raw connection in two parts: nine tenths, then, once
/// the backend has the first bytes of its request (`first` says so within
/// 5 s, or the test fails) and `stall` has passed, the rest. Returns the
/// reply's start.
async fn post_in_two_parts(
    addr: std::net::SocketAddr,
    body: &str,
    first: Option<&mut tokio::sync::mpsc::Receiver<()>>,
    stall: Duration,
) -> String {
    let cut = body.len() * 9 / 10;
    let mut client = tokio::net::TcpStream::connect(addr).await.unwrap();
    let head = format!(
        "POST {INFER} HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
        body.len()
    );
    client.write_all(head.as_bytes()).await.unwrap();
    client.write_all(&body.as_bytes()[..cut]).await.unwrap();
    if let Some(first) = first {
        tokio::time::timeout(Duration::from_secs(5), first.recv())
            .await
            .expect("the backend got nothing while the client was still sending");
    }
    tokio::time::sleep(stall).await;
    client.write_all(&body.as_bytes()[cut..]).await.unwrap();
    let mut reply = vec![0u8; 4096];
    let n = tokio::time::timeout(Duration::from_secs(5), client.read(&mut reply))
        .await
        .expect("no answer")
        .unwrap();
    String::from_utf8_lossy(&reply[..n]).into_owned()
}

/// A large request goes to the backend while the client is still sending
/// it. A client that then stalls gets that backend request abandoned (it
/// must not hold a backend connection), and the request goes whole once
/// read: the backend handles exactly one complete request.
#[tokio::test]
async fn a_large_request_goes_out_while_the_client_sends_it() {
    let (url, seen, mut first, server) = signalling_backend().await;
    let gw = gateway(&simple_config(&url, "")).await;
    let values = values();
    let body = request(&format!("[{N}]"), &texts(&values));
    // Stalls (the gateway waits 50 ms), then sends the rest.
    let text = post_in_two_parts(
        gw.data_addr,
        &body,
        Some(&mut first),
        Duration::from_millis(300),
    )
    .await;
    assert!(text.starts_with("HTTP/1.1 200"), "{text}");
    let seen = std::mem::take(&mut *seen.lock().unwrap());
    assert_eq!(seen.aborted, 1, "the abandoned request");
    assert_eq!(seen.whole.len(), 1, "complete requests");
    let (n, body) = &seen.whole[0];
    assert_eq!(
        std::str::from_utf8(&body[..*n]).unwrap(),
        r#"{"inputs":[{"name":"X","datatype":"FP32","shape":[300000],"parameters":{"binary_data_size":1200000}}],"parameters":{"binary_data_output":true}}"#
    );
    assert_binary(body, *n, &values);
    server.abort();
}

/// A request with a first input ahead of its large one: two inputs of
/// 600 KB each (the first alone below the early-send size, both together
/// above it: the guess is tried again in the second one's data), and a
/// small input before a 1.2 MB one. Either way the backend request starts
/// in the second input's data, with the first one's whole data sent ahead
/// of it, and the guess holds. The backend gets each request exactly once
/// whole; one is dropped and sent again only when a loaded machine kept
/// the gateway waiting 50 ms for the rest, which does not happen three
/// times in a row (a guess that never holds, such as one whose length
/// leaves out the first input's data, drops all three).
#[tokio::test]
async fn an_input_after_the_first_starts_the_early_request() {
    const TRIES: usize = 3;
    let values = values();
    for first_len in [N / 2, 16] {
        let (url, seen, mut first, server) = signalling_backend().await;
        let gw = gateway(&simple_config(&url, "")).await;
        let (a, b) = values.split_at(first_len);
        let body = format!(
            r#"{{"inputs":[{{"name":"A","shape":[{}],"datatype":"FP32","data":[{}]}},{{"name":"B","shape":[{}],"datatype":"FP32","data":[{}]}}]}}"#,
            a.len(),
            texts(a).join(", "),
            b.len(),
            texts(b).join(", ")
        );
        for _ in 0..TRIES {
            // A request sent again after an abandoned one signals too.
            while first.try_recv().is_ok() {}
            let text =
                post_in_two_parts(gw.data_addr, &body, Some(&mut first), Duration::ZERO).await;
            assert!(text.starts_with("HTTP/1.1 200"), "{text}");
        }
        let seen = std::mem::take(&mut *seen.lock().unwrap());
        assert!(
            seen.aborted < TRIES,
            "{first_len}: every early request was dropped"
        );
        assert_eq!(seen.whole.len(), TRIES, "{first_len}: complete requests");
        let header = format!(
            r#"{{"inputs":[{{"name":"A","datatype":"FP32","shape":[{}],"parameters":{{"binary_data_size":{}}}}},{{"name":"B","datatype":"FP32","shape":[{}],"parameters":{{"binary_data_size":{}}}}}],"parameters":{{"binary_data_output":true}}}}"#,
            a.len(),
            4 * a.len(),
            b.len(),
            4 * b.len()
        );
        for (n, body) in &seen.whole {
            assert_eq!(std::str::from_utf8(&body[..*n]).unwrap(), header);
            assert_binary(body, *n, &values);
        }
        server.abort();
    }
}

/// A backend that answers before reading the body (503 at once, as an
/// overloaded server may) ends the request sent while the client's was
/// read: the request goes again, and that one alone counts against the
/// replica (the backend sees two, the replica's errors say one).
#[tokio::test]
async fn an_answer_before_the_body_ends_counts_once() {
    use hyper::service::service_fn;
    use hyper_util::rt::TokioIo;
    use std::sync::atomic::AtomicUsize;

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let hits = Arc::new(AtomicUsize::new(0));
    let counter = hits.clone();
    let server = tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let counter = counter.clone();
            let svc = service_fn(move |_req: http::Request<hyper::body::Incoming>| {
                counter.fetch_add(1, Ordering::SeqCst);
                async {
                    http::Response::builder()
                        .status(503)
                        .header("content-type", "application/json")
                        .body(http_body_util::Full::new(bytes::Bytes::from_static(
                            br#"{"error":"busy"}"#,
                        )))
                }
            });
            tokio::spawn(
                hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), svc),
            );
        }
    });
    let gw = gateway(&simple_config(&url, "")).await;
    let body = request(&format!("[{N}]"), &texts(&values()));
    let text = post_in_two_parts(gw.data_addr, &body, None, Duration::from_millis(200)).await;
    assert!(text.starts_with("HTTP/1.1 503"), "{text}");
    assert_eq!(hits.load(Ordering::SeqCst), 2, "requests the backend saw");
    let m = common::scrape_text(&gw).await;
    let series =
        format!(r#"tensorgate_replica_errors_total{{backend="b",kind="5xx",replica="{url}"}}"#);
    assert_eq!(common::metric(&m, &series), Some(1.0), "{series}");
    server.abort();
}
