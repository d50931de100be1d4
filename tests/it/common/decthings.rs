//! Helpers for tests that drive the official Decthings Rust client
//! (the Rust crate `decthings-api` 0.1.5): building its tensors and parameters,
//! reading its tensors back as plain comparable values, and a raw loopback
//! HTTP server that records the exact request bytes and answers a scripted
//! reply (so the client's request and reply handling can be checked without
//! a gateway).
//!
//! Test modules name it `dc` (`use crate::common::decthings as dc;`).
#![allow(dead_code)]

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use decthings_api::client::rpc::model::{EvaluateError, EvaluateParams, EvaluateResult};
use decthings_api::client::{
    DecthingsClient, DecthingsClientOptions, DecthingsParameter, DecthingsParameterProvider,
    DecthingsParameterProviderData, DecthingsRpcError,
};
use decthings_api::ndarray::{ArrayD, CowArray, IxDyn};
use decthings_api::tensor::{
    DecthingsElementAudio, DecthingsElementImage, DecthingsElementVideo, DecthingsTensor,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

pub type EvalOutcome = Result<EvaluateResult, DecthingsRpcError<EvaluateError>>;

/// A client aimed at `http://ADDR/v0`, as the frontend contract says.
pub fn client_for(addr: SocketAddr) -> DecthingsClient {
    assert_no_proxy();
    DecthingsClient::new(DecthingsClientOptions {
        http_server_address: format!("http://{addr}/v0"),
        ..Default::default()
    })
}

/// reqwest 0.11 sends plain-HTTP requests through `HTTP_PROXY` /
/// `ALL_PROXY` when set, loopback included, and the client has no option to
/// turn that off: refuse to run rather than send test traffic anywhere but
/// loopback.
pub fn assert_no_proxy() {
    let no_proxy = std::env::var("NO_PROXY")
        .or_else(|_| std::env::var("no_proxy"))
        .unwrap_or_default();
    let bypassed = no_proxy
        .split(',')
        .any(|h| matches!(h.trim(), "*" | "127.0.0.1" | "127.0.0.0/8"));
    for var in ["HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"] {
        let set = std::env::var_os(var).is_some_and(|v| !v.is_empty());
        assert!(
            !set || bypassed,
            "{var} is set: the Decthings client would send loopback test traffic through it; \
             unset it or add 127.0.0.1 to NO_PROXY"
        );
    }
}

/// An ndarray of `shape` holding `values` (row-major).
pub fn arr<T>(shape: &[usize], values: Vec<T>) -> CowArray<'static, T, IxDyn> {
    ArrayD::from_shape_vec(IxDyn(shape), values)
        .expect("values do not fill the shape")
        .into()
}

/// Same as [`arr`] for borrowed elements (strings, binaries, media).
pub fn arr_ref<'a, T>(shape: &[usize], values: Vec<T>) -> CowArray<'a, T, IxDyn> {
    ArrayD::from_shape_vec(IxDyn(shape), values)
        .expect("values do not fill the shape")
        .into()
}

pub fn image<'a>(format: &'a str, data: &'a [u8]) -> DecthingsElementImage<'a> {
    DecthingsElementImage::new(format, data).expect("format over 255 bytes")
}

pub fn audio<'a>(format: &'a str, data: &'a [u8]) -> DecthingsElementAudio<'a> {
    DecthingsElementAudio::new(format, data).expect("format over 255 bytes")
}

pub fn video<'a>(format: &'a str, data: &'a [u8]) -> DecthingsElementVideo<'a> {
    DecthingsElementVideo::new(format, data).expect("format over 255 bytes")
}

/// A parameter carrying tensors (sent as one blob).
pub fn param<'a>(
    name: &'a str,
    tensors: Vec<DecthingsTensor<'a>>,
) -> DecthingsParameterProvider<'a> {
    DecthingsParameterProvider {
        name,
        data: DecthingsParameterProviderData::Data(tensors),
    }
}

/// A dataset-backed parameter (stays in the JSON, no blob).
pub fn dataset_param<'a>(
    name: &'a str,
    id: &'a str,
    key: &'a str,
) -> DecthingsParameterProvider<'a> {
    DecthingsParameterProvider {
        name,
        data: DecthingsParameterProviderData::Dataset {
            dataset_id: id,
            dataset_key: key,
        },
    }
}

/// `client.model.evaluate` with no snapshot.
pub async fn evaluate<'a>(
    client: &DecthingsClient,
    model: &'a str,
    params: Vec<DecthingsParameterProvider<'a>>,
) -> EvalOutcome {
    client
        .model
        .evaluate(EvaluateParams {
            model_id: model,
            params,
            snapshot_id: None,
        })
        .await
}

/// The output parameters of a successful evaluation; panics (with the
/// outcome) on anything else.
pub fn success(outcome: EvalOutcome) -> Vec<DecthingsParameter> {
    match outcome {
        Ok(EvaluateResult::Success { output, .. }) => output,
        other => panic!("expected a successful evaluation, got {other:?}"),
    }
}

/// The one tensor of output parameter `name`, as plain values.
pub fn single(output: &[DecthingsParameter], name: &str) -> Plain {
    let p = output
        .iter()
        .find(|p| p.name == name)
        .unwrap_or_else(|| panic!("no output parameter {name:?} in {output:?}"));
    assert_eq!(
        p.data.len(),
        1,
        "output {name:?} holds {} tensors",
        p.data.len()
    );
    plain(&p.data[0].tensor())
}

/// A tensor's type, shape and elements in a form `assert_eq!` compares
/// exactly (floats as bit patterns, so NaN and -0.0 compare too).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plain {
    pub typ: &'static str,
    pub shape: Vec<usize>,
    pub elems: Elems,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Elems {
    F32(Vec<u32>),
    F64(Vec<u64>),
    I8(Vec<i8>),
    I16(Vec<i16>),
    I32(Vec<i32>),
    I64(Vec<i64>),
    U8(Vec<u8>),
    U16(Vec<u16>),
    U32(Vec<u32>),
    U64(Vec<u64>),
    String(Vec<String>),
    Binary(Vec<Vec<u8>>),
    Boolean(Vec<bool>),
    /// `(format, data)` per element.
    Media(Vec<(String, Vec<u8>)>),
}

pub fn plain(t: &DecthingsTensor<'_>) -> Plain {
    fn v<T: Clone>(a: &CowArray<'_, T, IxDyn>) -> Vec<T> {
        a.iter().cloned().collect()
    }
    let elems = match t {
        DecthingsTensor::F32(a) => Elems::F32(a.iter().map(|x| x.to_bits()).collect()),
        DecthingsTensor::F64(a) => Elems::F64(a.iter().map(|x| x.to_bits()).collect()),
        DecthingsTensor::I8(a) => Elems::I8(v(a)),
        DecthingsTensor::I16(a) => Elems::I16(v(a)),
        DecthingsTensor::I32(a) => Elems::I32(v(a)),
        DecthingsTensor::I64(a) => Elems::I64(v(a)),
        DecthingsTensor::U8(a) => Elems::U8(v(a)),
        DecthingsTensor::U16(a) => Elems::U16(v(a)),
        DecthingsTensor::U32(a) => Elems::U32(v(a)),
        DecthingsTensor::U64(a) => Elems::U64(v(a)),
        DecthingsTensor::String(a) => Elems::String(a.iter().map(|s| s.to_string()).collect()),
        DecthingsTensor::Binary(a) => Elems::Binary(a.iter().map(|b| b.to_vec()).collect()),
        DecthingsTensor::Boolean(a) => Elems::Boolean(v(a)),
        DecthingsTensor::Image(a) => Elems::Media(
            a.iter()
                .map(|e| (e.format().to_owned(), e.data.to_vec()))
                .collect(),
        ),
        DecthingsTensor::Audio(a) => Elems::Media(
            a.iter()
                .map(|e| (e.format().to_owned(), e.data.to_vec()))
                .collect(),
        ),
        DecthingsTensor::Video(a) => Elems::Media(
            a.iter()
                .map(|e| (e.format().to_owned(), e.data.to_vec()))
                .collect(),
        ),
    };
    Plain {
        typ: type_name(t),
        shape: t.shape().to_vec(),
        elems,
    }
}

/// The Decthings type name (`"f32"`, `"image"`, ...).
pub fn type_name(t: &DecthingsTensor<'_>) -> &'static str {
    match t {
        DecthingsTensor::F32(_) => "f32",
        DecthingsTensor::F64(_) => "f64",
        DecthingsTensor::I8(_) => "i8",
        DecthingsTensor::I16(_) => "i16",
        DecthingsTensor::I32(_) => "i32",
        DecthingsTensor::I64(_) => "i64",
        DecthingsTensor::U8(_) => "u8",
        DecthingsTensor::U16(_) => "u16",
        DecthingsTensor::U32(_) => "u32",
        DecthingsTensor::U64(_) => "u64",
        DecthingsTensor::String(_) => "string",
        DecthingsTensor::Binary(_) => "binary",
        DecthingsTensor::Boolean(_) => "boolean",
        DecthingsTensor::Image(_) => "image",
        DecthingsTensor::Audio(_) => "audio",
        DecthingsTensor::Video(_) => "video",
    }
}

// ------------------------------------------------------------ raw server

/// A loopback HTTP/1.1 server that records every request byte for byte
/// (head and body) and answers each with `reply(body)`: a full HTTP
/// response, status line to body. One request per connection.
pub struct RawServer {
    pub addr: SocketAddr,
    requests: Arc<Mutex<Vec<Vec<u8>>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for RawServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl RawServer {
    pub async fn start(reply: impl Fn(&[u8]) -> Vec<u8> + Send + Sync + 'static) -> RawServer {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let requests = Arc::new(Mutex::new(Vec::new()));
        let seen = requests.clone();
        let reply = Arc::new(reply);
        let task = tokio::spawn(async move {
            while let Ok((mut stream, _)) = listener.accept().await {
                let seen = seen.clone();
                let reply = reply.clone();
                tokio::spawn(async move {
                    let Some((raw, body_at)) = read_request(&mut stream).await else {
                        return;
                    };
                    let answer = reply(&raw[body_at..]);
                    seen.lock().unwrap().push(raw);
                    let _ = stream.write_all(&answer).await;
                    let _ = stream.shutdown().await;
                });
            }
        });
        RawServer {
            addr,
            requests,
            task,
        }
    }

    /// Every request received so far, raw.
    pub fn requests(&self) -> Vec<Vec<u8>> {
        self.requests.lock().unwrap().clone()
    }
}

/// Reads one request with a `Content-Length` body; returns the raw bytes and
/// where the body starts.
async fn read_request(stream: &mut tokio::net::TcpStream) -> Option<(Vec<u8>, usize)> {
    let mut raw = Vec::new();
    let mut buf = [0u8; 64 * 1024];
    let head_end = loop {
        if let Some(i) = raw.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        let n = stream.read(&mut buf).await.ok()?;
        if n == 0 {
            return None;
        }
        raw.extend_from_slice(&buf[..n]);
    };
    let head = String::from_utf8_lossy(&raw[..head_end]).to_ascii_lowercase();
    let len: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .map(|v| v.trim().parse().expect("bad content-length"))
        .unwrap_or(0);
    while raw.len() < head_end + len {
        let n = stream.read(&mut buf).await.ok()?;
        if n == 0 {
            return None;
        }
        raw.extend_from_slice(&buf[..n]);
    }
    Some((raw, head_end))
}

/// A complete HTTP/1.1 response with an `application/octet-stream` body.
pub fn http_reply(status: u16, body: &[u8]) -> Vec<u8> {
    let mut out = format!(
        "HTTP/1.1 {status} X\r\ncontent-type: application/octet-stream\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
        body.len()
    )
    .into_bytes();
    out.extend_from_slice(body);
    out
}
