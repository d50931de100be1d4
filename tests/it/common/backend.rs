//! Scripted backends: an HTTP/1.1 server on 127.0.0.1:0 that records every
//! request it gets and answers what the test's handler says, and the
//! replies a handler builds (whole, or streamed frame by frame).

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use http::{HeaderMap, Request, Response, StatusCode};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use tensorgate::http::body::{Body, full};
use tokio::net::TcpListener;

/// A request as the backend received it.
#[derive(Clone, Debug)]
pub struct Seen {
    pub method: http::Method,
    pub path: String,
    pub headers: HeaderMap,
    pub body: Bytes,
}

type Handler =
    Arc<dyn Fn(Seen) -> Pin<Box<dyn Future<Output = Response<Body>> + Send>> + Send + Sync>;

/// A backend whose replies the test scripts, and which records requests.
pub struct TestBackend {
    pub addr: SocketAddr,
    pub seen: Arc<Mutex<Vec<Seen>>>,
    /// Requests whose body ended in an error (never handled).
    pub aborted: Arc<std::sync::atomic::AtomicUsize>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for TestBackend {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl TestBackend {
    pub async fn start<F, Fut>(handler: F) -> TestBackend
    where
        F: Fn(Seen) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Response<Body>> + Send + 'static,
    {
        let handler: Handler = Arc::new(move |s| Box::pin(handler(s)));
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let seen2 = seen.clone();
        let aborted = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let aborted2 = aborted.clone();
        let task = tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    return;
                };
                let handler = handler.clone();
                let seen = seen2.clone();
                let aborted = aborted2.clone();
                tokio::spawn(async move {
                    let svc = service_fn(move |req: Request<Incoming>| {
                        let handler = handler.clone();
                        let seen = seen.clone();
                        let aborted = aborted.clone();
                        async move {
                            let (parts, body) = req.into_parts();
                            // A request whose body never completes (the
                            // gateway aborted it) is never handled: what a
                            // real backend does.
                            let body = match body.collect().await {
                                Ok(b) => b.to_bytes(),
                                Err(e) => {
                                    aborted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                                    return Err(e);
                                }
                            };
                            let s = Seen {
                                method: parts.method,
                                path: parts
                                    .uri
                                    .path_and_query()
                                    .map(|p| p.to_string())
                                    .unwrap_or_default(),
                                headers: parts.headers,
                                body,
                            };
                            seen.lock().unwrap().push(s.clone());
                            Ok::<_, hyper::Error>(handler(s).await)
                        }
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), svc)
                        .await;
                });
            }
        });
        TestBackend {
            addr,
            seen,
            aborted,
            task,
        }
    }

    pub fn requests(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }
}

/// A response with a body and headers.
pub fn reply(status: u16, headers: &[(&str, &str)], body: impl Into<Bytes>) -> Response<Body> {
    let mut r = Response::new(full(body.into()));
    *r.status_mut() = StatusCode::from_u16(status).unwrap();
    for (k, v) in headers {
        r.headers_mut().append(
            http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
            v.parse().unwrap(),
        );
    }
    r
}

/// A body fed from a channel: the test decides when each frame goes out.
pub struct ChannelBody(pub tokio::sync::mpsc::Receiver<Bytes>);

impl http_body::Body for ChannelBody {
    type Data = Bytes;
    type Error = tensorgate::http::body::BoxError;
    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<hyper::body::Frame<Bytes>, Self::Error>>> {
        self.0
            .poll_recv(cx)
            .map(|o| o.map(|b| Ok(hyper::body::Frame::data(b))))
    }
}

/// A streaming response whose frames the test sends through the returned
/// sender.
pub fn channel_reply(
    status: u16,
    headers: &[(&str, &str)],
) -> (tokio::sync::mpsc::Sender<Bytes>, Response<Body>) {
    let (tx, rx) = tokio::sync::mpsc::channel(16);
    let mut r = Response::new(ChannelBody(rx).boxed_unsync());
    *r.status_mut() = StatusCode::from_u16(status).unwrap();
    for (k, v) in headers {
        r.headers_mut().append(
            http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
            v.parse().unwrap(),
        );
    }
    (tx, r)
}
