//! The floor under issue 25's target 3: the smallest HTTP/1 reverse proxy
//! hyper makes, counted by `scripts/bench/instructions.sh --floor` the way
//! the gateway and nginx are counted.
//!
//! hyper's server on one current-thread runtime, and per client
//! connection one backend connection (hyper's `client::conn::http1`) kept
//! for the next request: no pool, no access log, no metrics, no timeouts,
//! no header rewriting, the reply body streamed through as hyper gives it.
//! Whatever the gateway spends above this is its own features and layers;
//! what this spends is the price of parsing HTTP with hyper on both sides,
//! which issue 25 keeps. A backend that cannot be reached closes the
//! client's connection (a benchmark tool, not a proxy to deploy).
//!
//! `--threads N` (default 1) serves with N such threads, each a
//! current-thread runtime accepting from the one listening socket, as the
//! gateway's workers do: `scripts/bench-proxy.sh --peers ...,floor` runs it
//! with 2 beside nginx's 2 workers, to measure hyper alone's CPU per
//! request the way the peers' is measured.
//!
//! ```sh
//! cargo build --release --example hyper_floor
//! target/release/examples/hyper_floor --backend http://127.0.0.1:8001 --listen 127.0.0.1:8002
//! ```

use std::cell::RefCell;
use std::error::Error;
use std::rc::Rc;

use hyper::body::Incoming;
use hyper::client::conn::http1::SendRequest;
use hyper::{Request, Response, Uri};
use hyper_util::rt::TokioIo;
use tokio::net::{TcpListener, TcpStream};
use tokio::task::{LocalSet, spawn_local};

type BoxError = Box<dyn Error + Send + Sync>;

/// This client connection's backend connection, when it has one.
type Slot = Rc<RefCell<Option<SendRequest<Incoming>>>>;

async fn forward(
    slot: Slot,
    backend: Rc<str>,
    mut req: Request<Incoming>,
) -> Result<Response<Incoming>, BoxError> {
    let kept = slot.borrow_mut().take().filter(|s| !s.is_closed());
    let mut sender = match kept {
        Some(sender) => sender,
        None => {
            let tcp = TcpStream::connect(&*backend).await?;
            tcp.set_nodelay(true)?;
            let (sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tcp)).await?;
            spawn_local(conn);
            sender
        }
    };
    sender.ready().await?;
    let origin_form: Uri = match req.uri().path_and_query() {
        Some(pq) => pq.as_str().parse()?,
        None => Uri::from_static("/"),
    };
    *req.uri_mut() = origin_form;
    let reply = sender.send_request(req).await?;
    *slot.borrow_mut() = Some(sender);
    Ok(reply)
}

fn flag(args: &[String], name: &str) -> Result<String, BoxError> {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .cloned()
        .ok_or_else(|| format!("{name} ADDRESS is required").into())
}

/// The value of `--threads`, 1 when absent.
fn threads(args: &[String]) -> Result<usize, BoxError> {
    match args.iter().position(|a| a == "--threads") {
        None => Ok(1),
        Some(i) => {
            let n: usize = args
                .get(i + 1)
                .ok_or("--threads N needs a number")?
                .parse()?;
            if (1..=64).contains(&n) {
                Ok(n)
            } else {
                Err("--threads takes 1 to 64".into())
            }
        }
    }
}

/// Accepts from `listener` and serves each connection on this thread.
fn serve(listener: std::net::TcpListener, backend: Rc<str>) -> Result<(), BoxError> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    LocalSet::new().block_on(&rt, async move {
        let listener = TcpListener::from_std(listener)?;
        loop {
            let (tcp, _) = listener.accept().await?;
            tcp.set_nodelay(true)?;
            let (backend, slot) = (backend.clone(), Slot::default());
            spawn_local(async move {
                let service = hyper::service::service_fn(move |req| {
                    forward(slot.clone(), backend.clone(), req)
                });
                // A connection's end, clean or not, is only the client's business.
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(tcp), service)
                    .await;
            });
        }
    })
}

fn main() -> Result<(), BoxError> {
    // Other flags (the gateway's, which instructions.sh passes alike) are ignored.
    let args: Vec<String> = std::env::args().collect();
    let backend = flag(&args, "--backend")?;
    let backend = backend
        .trim_start_matches("http://")
        .trim_end_matches('/')
        .to_owned();
    let listen = flag(&args, "--listen")?;
    let listener = std::net::TcpListener::bind(&listen)?;
    listener.set_nonblocking(true)?;
    for _ in 1..threads(&args)? {
        let (listener, backend) = (listener.try_clone()?, backend.clone());
        // A thread that stops ends the process: a tool, not a server.
        std::thread::spawn(move || {
            let stopped = serve(listener, backend.into());
            eprintln!("hyper_floor: a serving thread stopped: {stopped:?}");
            std::process::exit(1);
        });
    }
    serve(listener, backend.into())
}
