//! Hostile gRPC input on the data port, sent as raw HTTP/2 (a tonic client
//! would refuse to send most of it): truncated and oversized
//! length-prefixed messages, a compressed flag with no `grpc-encoding`, an
//! encoding the gateway does not offer, invalid protobuf, raw contents that
//! disagree with the inputs, two messages on a unary call, and floods of
//! streams reset by the client. Each gets a clean status (never a hang or a
//! dropped connection), and the gateway keeps serving afterwards; an
//! oversized message is refused on its 5-byte prefix, before its body is
//! sent, so nothing of it is buffered.

mod common;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use bytes::Bytes;
use common::{gateway, metric, scrape_text, simple_config};
use http::{HeaderMap, Request};
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::Frame;
use hyper_util::rt::{TokioExecutor, TokioIo};
use prost::Message;
use tensorgate::codec::grpc::proto::inference::model_infer_request::InferInputTensor;
use tensorgate::codec::grpc::proto::inference::*;
use tensorgate::server::Running;
use tensorgate_demo as demo;
use tokio_stream::wrappers::ReceiverStream;

const METHOD: &str = "/inference.GRPCInferenceService/ModelInfer";
/// No answer may take longer than this: the calls here are refused on
/// what the gateway has read, never after a wait.
const PROMPT: Duration = Duration::from_secs(5);

struct Setup {
    _demo: demo::DemoServer,
    gw: Running,
}

async fn start(route: &str) -> Setup {
    let demo = demo::spawn().await.unwrap();
    let gw = gateway(&simple_config(&format!("http://{}", demo.addr), route)).await;
    Setup { _demo: demo, gw }
}

fn i32s(values: &[i32]) -> Bytes {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

fn simple_request() -> ModelInferRequest {
    let input = |name: &str| InferInputTensor {
        name: name.into(),
        datatype: "INT32".into(),
        shape: vec![1, 16],
        ..Default::default()
    };
    ModelInferRequest {
        model_name: "simple".into(),
        inputs: vec![input("INPUT0"), input("INPUT1")],
        raw_input_contents: vec![i32s(&[1; 16]), i32s(&[2; 16])],
        ..Default::default()
    }
}

/// A length-prefixed message as the wire has it, with any flag and length.
fn framed(flag: u8, declared: u32, message: &[u8]) -> Vec<u8> {
    let mut out = vec![flag];
    out.extend_from_slice(&declared.to_be_bytes());
    out.extend_from_slice(message);
    out
}

fn whole(message: &[u8]) -> Vec<u8> {
    framed(0, message.len() as u32, message)
}

type Sender = hyper::client::conn::http2::SendRequest<Full<Bytes>>;

async fn connect(addr: SocketAddr) -> Sender {
    let stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let (h2, conn) =
        hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(stream))
            .await
            .unwrap();
    tokio::spawn(conn);
    h2
}

fn grpc_request<B>(addr: SocketAddr, extra: &[(&str, &str)], body: B) -> Request<B> {
    let mut req = Request::post(format!("http://{addr}{METHOD}"))
        .header("content-type", "application/grpc")
        .header("te", "trailers");
    for (k, v) in extra {
        req = req.header(*k, *v);
    }
    req.body(body).unwrap()
}

/// The call's status and message, from the trailers or (for a
/// trailers-only answer) the head; and the decoded reply when OK.
struct Answer {
    code: String,
    message: String,
    reply: Option<ModelInferResponse>,
}

fn status_from(head: &HeaderMap, trailers: Option<&HeaderMap>) -> (String, String) {
    let at = trailers
        .filter(|t| t.contains_key("grpc-status"))
        .unwrap_or(head);
    let get = |name: &str| {
        at.get(name)
            .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
            .unwrap_or_default()
    };
    (get("grpc-status"), get("grpc-message"))
}

async fn read_answer(resp: http::Response<hyper::body::Incoming>) -> Answer {
    assert_eq!(resp.status(), 200, "gRPC answers carry HTTP 200");
    let (head, body) = resp.into_parts();
    let collected = tokio::time::timeout(PROMPT, body.collect())
        .await
        .expect("the answer's body did not end")
        .expect("the answer's body broke");
    let trailers = collected.trailers().cloned();
    let data = collected.to_bytes();
    let (code, message) = status_from(&head.headers, trailers.as_ref());
    let reply = (data.len() >= 5).then(|| ModelInferResponse::decode(&data[5..]).unwrap());
    Answer {
        code,
        message,
        reply,
    }
}

async fn call(h2: &mut Sender, addr: SocketAddr, extra: &[(&str, &str)], body: Vec<u8>) -> Answer {
    let req = grpc_request(addr, extra, Full::new(Bytes::from(body)));
    let resp = tokio::time::timeout(PROMPT, h2.send_request(req))
        .await
        .expect("no answer in time")
        .expect("the stream failed instead of answering");
    read_answer(resp).await
}

/// The gateway still answers a good call on `h2` (the connection lives).
async fn still_serves(h2: &mut Sender, addr: SocketAddr) {
    let a = call(h2, addr, &[], whole(&simple_request().encode_to_vec())).await;
    assert_eq!(a.code, "0", "{}", a.message);
    let reply = a.reply.expect("an OK answer carries a message");
    assert_eq!(
        reply.raw_output_contents[0],
        i32s(&[3; 16]),
        "OUTPUT0 = 1 + 2"
    );
}

#[tokio::test]
async fn malformed_messages_get_clean_statuses_on_a_connection_that_lives() {
    let s = start("").await;
    let addr = s.gw.data_addr;
    let mut h2 = connect(addr).await;
    let good = simple_request().encode_to_vec();

    // A message whose body ends before the length its prefix declares.
    let a = call(&mut h2, addr, &[], framed(0, 100, &good[..10])).await;
    assert_eq!(a.code, "3", "truncated message: {}", a.message);
    // A body ending inside the 5-byte prefix.
    let a = call(&mut h2, addr, &[], vec![0, 0, 0]).await;
    assert_eq!(a.code, "3", "truncated prefix: {}", a.message);
    // No message at all.
    let a = call(&mut h2, addr, &[], Vec::new()).await;
    assert_eq!(a.code, "3", "empty body: {}", a.message);
    assert!(a.message.contains("without a message"), "{}", a.message);
    // The compressed flag with no grpc-encoding: nothing says how to read it.
    let a = call(&mut h2, addr, &[], framed(1, good.len() as u32, &good)).await;
    assert_eq!(a.code, "12", "compressed without encoding: {}", a.message);
    assert!(a.message.contains("compressed"), "{}", a.message);
    // A flag that does not exist.
    let a = call(&mut h2, addr, &[], framed(7, good.len() as u32, &good)).await;
    assert_eq!(a.code, "3", "flag 7: {}", a.message);
    // An encoding the gateway does not offer.
    let a = call(&mut h2, addr, &[("grpc-encoding", "gzip")], whole(&good)).await;
    assert_eq!(a.code, "12", "gzip: {}", a.message);
    assert!(a.message.contains("gzip"), "{}", a.message);
    // Bytes that are no protobuf: a field number 0 and a truncated varint.
    let a = call(&mut h2, addr, &[], whole(&[0x00, 0xff, 0xff, 0xff])).await;
    assert_eq!(a.code, "3", "invalid protobuf: {}", a.message);
    assert!(a.message.contains("ModelInferRequest"), "{}", a.message);
    // A length-delimited field whose length runs past the message.
    let a = call(&mut h2, addr, &[], whole(&[0x0a, 0x7f, b's'])).await;
    assert_eq!(a.code, "3", "field past the end: {}", a.message);
    // Two messages on a unary call.
    let mut two = whole(&good);
    two.extend(whole(&good));
    let a = call(&mut h2, addr, &[], two).await;
    assert_eq!(a.code, "3", "two messages: {}", a.message);
    assert!(a.message.contains("more"), "{}", a.message);

    still_serves(&mut h2, addr).await;
}

#[tokio::test]
async fn raw_contents_that_disagree_with_the_inputs_are_refused_naming_them() {
    let s = start("").await;
    let addr = s.gw.data_addr;
    let mut h2 = connect(addr).await;

    // Sizes that disagree with the shapes.
    let mut short = simple_request();
    short.raw_input_contents[1] = i32s(&[0; 15]);
    let a = call(&mut h2, addr, &[], whole(&short.encode_to_vec())).await;
    assert_eq!(a.code, "3", "{}", a.message);
    assert!(a.message.contains("INPUT1"), "{}", a.message);
    // More raw entries than inputs.
    let mut extra = simple_request();
    extra.raw_input_contents.push(i32s(&[0; 16]));
    let a = call(&mut h2, addr, &[], whole(&extra.encode_to_vec())).await;
    assert_eq!(a.code, "3", "{}", a.message);
    assert!(a.message.contains("raw"), "{}", a.message);
    // Fewer raw entries than inputs, with no typed contents either.
    let mut fewer = simple_request();
    fewer.raw_input_contents.pop();
    let a = call(&mut h2, addr, &[], whole(&fewer.encode_to_vec())).await;
    assert_eq!(a.code, "3", "{}", a.message);
    // A shape whose element count overflows.
    let mut huge = simple_request();
    huge.inputs[0].shape = vec![i64::MAX, i64::MAX];
    let a = call(&mut h2, addr, &[], whole(&huge.encode_to_vec())).await;
    assert_eq!(a.code, "3", "{}", a.message);
    assert!(a.message.contains("INPUT0"), "{}", a.message);
    // A negative dimension.
    let mut negative = simple_request();
    negative.inputs[1].shape = vec![1, -16];
    let a = call(&mut h2, addr, &[], whole(&negative.encode_to_vec())).await;
    assert_eq!(a.code, "3", "{}", a.message);
    assert!(a.message.contains("INPUT1"), "{}", a.message);

    still_serves(&mut h2, addr).await;
}

#[tokio::test]
async fn an_oversized_message_is_refused_on_its_prefix_before_its_body_is_sent() {
    let s = start("[routes.limits]\nmax_body_bytes = 65536\n").await;
    let addr = s.gw.data_addr;
    let mut h2s = {
        let stream = tokio::net::TcpStream::connect(addr).await.unwrap();
        let (h2, conn) = hyper::client::conn::http2::handshake::<_, _, StreamBody<_>>(
            TokioExecutor::new(),
            TokioIo::new(stream),
        )
        .await
        .unwrap();
        tokio::spawn(conn);
        h2
    };
    for declared in [65_537u32, 1 << 30, u32::MAX] {
        // Only the prefix is sent; the stream stays open, as a client
        // about to send a gigabyte would leave it.
        let (tx, rx) = tokio::sync::mpsc::channel::<Result<Frame<Bytes>, std::io::Error>>(1);
        tx.send(Ok(Frame::data(Bytes::from(framed(0, declared, &[])))))
            .await
            .unwrap();
        let body = StreamBody::new(ReceiverStream::new(rx));
        let started = Instant::now();
        let resp = tokio::time::timeout(PROMPT, h2s.send_request(grpc_request(addr, &[], body)))
            .await
            .expect("the gateway waited for the body of a message it must refuse")
            .unwrap();
        let a = read_answer(resp).await;
        assert_eq!(a.code, "8", "declared {declared}: {}", a.message);
        assert!(started.elapsed() < PROMPT);
        drop(tx);
    }
    let text = scrape_text(&s.gw).await;
    assert_eq!(
        metric(
            &text,
            // The model is named in the message, never read: no route.
            // RESOURCE_EXHAUSTED is counted as the HTTP code it stands for.
            r#"tensorgate_requests_total{code="429",kind="grpc",route="_none"}"#
        ),
        Some(3.0),
        "{text}"
    );
    let mut h2 = connect(addr).await;
    still_serves(&mut h2, addr).await;
}

#[tokio::test]
async fn floods_of_reset_streams_leave_the_gateway_serving_with_nothing_in_flight() {
    let s = start("").await;
    let addr = s.gw.data_addr;
    let good = whole(&simple_request().encode_to_vec());
    // Rapid reset: each round opens streams with a body that never ends and
    // resets them at once (dropping the response future sends RST_STREAM).
    // A connection the gateway closes for abuse is fine; the process must
    // not hold anything for the streams, and must serve the next client.
    let started = Instant::now();
    let mut resets = 0;
    for _ in 0..10 {
        let stream = tokio::net::TcpStream::connect(addr).await.unwrap();
        let Ok((mut h2, conn)) = hyper::client::conn::http2::handshake::<_, _, StreamBody<_>>(
            TokioExecutor::new(),
            TokioIo::new(stream),
        )
        .await
        else {
            continue;
        };
        tokio::spawn(conn);
        let mut senders = Vec::new();
        for _ in 0..100 {
            if h2.ready().await.is_err() {
                break;
            }
            let (tx, rx) = tokio::sync::mpsc::channel::<Result<Frame<Bytes>, std::io::Error>>(1);
            let _ = tx.try_send(Ok(Frame::data(Bytes::copy_from_slice(&good[..20]))));
            let body = StreamBody::new(ReceiverStream::new(rx));
            let fut = h2.send_request(grpc_request(addr, &[], body));
            // Polled once so the HEADERS go out, then dropped: RST_STREAM.
            let _ = tokio::time::timeout(Duration::from_millis(1), fut).await;
            senders.push(tx);
            resets += 1;
        }
        drop(senders);
    }
    assert!(resets >= 100, "only {resets} streams opened");
    assert!(started.elapsed() < Duration::from_secs(60));

    // Nothing stays in flight once the reset streams are gone.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let text = scrape_text(&s.gw).await;
        let in_flight = metric(&text, r#"tensorgate_in_flight_requests{route="r"}"#).unwrap_or(0.0);
        if in_flight == 0.0 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "{in_flight} requests still in flight after the flood"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let mut h2 = connect(addr).await;
    still_serves(&mut h2, addr).await;
}
