//! `[server]` and `[limits]`: the typed values and their defaults. Each
//! default lives here once; the loader, the built-in configurations and
//! `main` all read it from here.

use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::time::Duration;

/// Data port when neither the file nor the command line names one.
pub const DEFAULT_LISTEN: SocketAddr = SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::LOCALHOST, 8000));
/// Admin port when neither the file nor the command line names one.
pub const DEFAULT_ADMIN_LISTEN: SocketAddr =
    SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::LOCALHOST, 9000));

/// `[server]`: listeners and process behaviour.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServerConfig {
    /// Data port: the V2 API and the frontends.
    pub listen: SocketAddr,
    /// Admin port: `/healthz`, `/readyz`, `/metrics`.
    pub admin_listen: SocketAddr,
    /// After SIGTERM / SIGINT, how long in-flight requests may finish.
    /// Without it a stuck request holds the process up forever.
    pub shutdown_grace: Duration,
    /// Requests served at once; more wait up to `queue_timeout` (see
    /// [`crate::guard::admission`]).
    /// Without it a burst makes every request slow and memory unbounded.
    pub max_concurrent_requests: usize,
    /// Longest pause between two pieces of a client's request body. Without
    /// it a client that stops sending holds a request slot forever.
    pub body_read_timeout: Duration,
    /// Longest time a client may take to send its request headers. Without
    /// it slow-header clients hold connections forever.
    pub header_read_timeout: Duration,
    /// Open client connections at once; more are not accepted until one
    /// closes. Without it idle connections exhaust file descriptors.
    pub max_connections: usize,
    /// Time a new connection has to send its first request head (HTTP/1) or
    /// preface (HTTP/2). Without it connections that never speak pile up.
    pub handshake_timeout: Duration,
    /// Longest wait for a request slot before a 503 with `Retry-After`.
    /// Without it queued requests wait beyond any client's patience.
    pub queue_timeout: Duration,
    /// The whole request body must arrive within this (else 408), however
    /// steadily it trickles; `body_read_timeout` is the idle limit. Without
    /// it a client sending a byte a second holds a slot for hours.
    pub body_total_timeout: Duration,
    /// Longest wait for a client to take more reply bytes (nginx's
    /// `send_timeout`): a connection whose client takes nothing for this
    /// long is closed, and its requests' slots freed. Without it a client
    /// that never reads a large reply holds its connection and its slot
    /// forever. Applies to connections opened after it is set.
    pub send_timeout: Duration,
    /// Reply bytes held in memory for one request whose client is not
    /// taking them yet (a SageMaker client still sending its records, an
    /// HTTP/1.0 client whose reply must be whole before it starts); past
    /// it they go to a temporary file. Without it a client that sends
    /// before it reads would stall the gateway, or make it hold the reply
    /// in memory without bound.
    pub reply_memory_bytes: u64,
    /// Reply bytes one request may hold in its temporary file past
    /// `reply_memory_bytes` (0: no file; past memory the request is
    /// refused). Past it: 413 before the status line.
    pub reply_disk_bytes: u64,
    /// Bytes of temporary files every held reply together may use; past
    /// it: 503 with `Retry-After`. Bounds the disk a crowd of clients that
    /// do not read can take.
    pub reply_disk_total_bytes: u64,
    /// After SIGTERM `/readyz` turns 503 at once; the listener closes after
    /// this delay, so load balancers stop sending first. Zero closes at
    /// once. Shorter than `shutdown_grace`.
    pub drain_delay: Duration,
    /// What `/readyz` reports besides draining.
    pub readyz: Readyz,
    /// Threads serving client connections, each with its own
    /// single-threaded runtime and backend connection pools (see
    /// [`crate::server`]); one per core by default, at most
    /// [`ServerConfig::MAX_WORKERS`]. 0 serves connections on the main
    /// runtime (tokio's work-stealing scheduler). Read at start only.
    pub workers: usize,
    /// `[server.tls]`: TLS on the data port (the admin port stays plain
    /// HTTP). Without it the data port speaks cleartext HTTP/1 and h2c.
    pub tls: Option<super::ServerTls>,
    /// Requests in flight on one HTTP/2 connection (its
    /// `SETTINGS_MAX_CONCURRENT_STREAMS`); an HTTP/1 connection has one at
    /// a time. Without it six connections of 200 streams each took every
    /// request slot. Read at start only.
    pub max_streams_per_connection: u32,
    /// Requests in flight from one client address at once (an IPv6
    /// client by its /64); past it a request is refused at once with 503
    /// and `Retry-After`, before it takes anything. Unset: no bound (the
    /// default, as behind a load balancer or ingress every request comes
    /// from its few addresses). Without it one client can hold every
    /// request slot of an open route.
    pub max_requests_per_client: Option<usize>,
    /// Bytes of request bodies held before their signature is verified
    /// (SigV4 bodies, read whole to check the signature over them), all
    /// requests together; a signed request that does not fit is refused
    /// at once with 503 and `Retry-After`. Such a request takes no request
    /// slot until its signature is verified. Without it 32 requests with
    /// a known key name and any signature held 1.92 GB.
    pub max_unverified_body_bytes: u64,
}

/// `server.readyz`: what the admin port's `/readyz` answers 200 for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Readyz {
    /// Ready unless draining, whatever the backends (the default: every
    /// gateway instance sees the same backends, so taking one out of a
    /// Service helps no client, and taking all out turns a 503 that names
    /// the model into refused connections).
    #[default]
    Process,
    /// Also needs at least one route with a ready replica.
    AnyRoute,
    /// Also needs a ready replica for every route.
    AllRoutes,
}

impl ServerConfig {
    /// `drain_delay` when the file does not set it.
    pub const DEFAULT_DRAIN_DELAY: Duration = Duration::from_secs(5);

    /// The most `workers` a configuration may ask for.
    pub const MAX_WORKERS: usize = 64;

    /// `workers` when the file does not set it: one per core the process
    /// may use.
    pub fn default_workers() -> usize {
        std::thread::available_parallelism()
            .map_or(1, usize::from)
            .min(Self::MAX_WORKERS)
    }

    /// The drain delay for a grace period when none is configured: the
    /// default, but at most half the grace period so requests still get
    /// time to finish.
    pub fn default_drain_delay(shutdown_grace: Duration) -> Duration {
        Self::DEFAULT_DRAIN_DELAY.min(shutdown_grace / 2)
    }
}

impl Default for ServerConfig {
    fn default() -> Self {
        let shutdown_grace = Duration::from_secs(30);
        ServerConfig {
            listen: DEFAULT_LISTEN,
            admin_listen: DEFAULT_ADMIN_LISTEN,
            shutdown_grace,
            max_concurrent_requests: 1024,
            body_read_timeout: Duration::from_secs(60),
            header_read_timeout: Duration::from_secs(30),
            max_connections: 10_000,
            handshake_timeout: Duration::from_secs(10),
            queue_timeout: Duration::from_secs(5),
            body_total_timeout: Duration::from_secs(300),
            send_timeout: Duration::from_secs(60),
            reply_memory_bytes: 1 << 20,
            reply_disk_bytes: 1 << 30,
            reply_disk_total_bytes: 8 << 30,
            drain_delay: Self::default_drain_delay(shutdown_grace),
            tls: None,
            readyz: Readyz::default(),
            workers: Self::default_workers(),
            max_streams_per_connection: 128,
            max_requests_per_client: None,
            max_unverified_body_bytes: 64 << 20,
        }
    }
}

/// Size and shape limits, per route (with defaults from `[limits]`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Largest request body, after decompression. Without it a client can
    /// make the gateway buffer without bound. Exceeding it is a 413.
    pub max_body_bytes: u64,
    /// Largest JSON header of a binary-extension body (request or
    /// response). Exceeding it is a 413.
    pub max_json_header_bytes: u64,
    /// Most elements in one tensor. Bounds the memory one JSON tensor can
    /// claim before its data is seen. Exceeding it is a 400.
    pub max_elements_per_tensor: u64,
    /// Most dimensions in one shape, at most [`Limits::MAX_DIMS`].
    /// Exceeding it is a 400.
    pub max_dims: usize,
    /// Largest backend response the gateway will buffer when a reply must be
    /// assembled whole (mixed JSON/binary replies); streamed replies are not
    /// bounded by it. Exceeding it is a 502.
    pub max_response_bytes: u64,
    /// Largest SigV4-signed request body (never more than
    /// `max_body_bytes`): it is read whole before its signature can be
    /// checked, so anyone who knows a key's name can make the gateway
    /// hold this much. AWS's own InvokeEndpoint takes at most 6 MB, so no
    /// client that works against AWS is refused. Exceeding it is a 413.
    pub max_signed_body_bytes: u64,
}

impl Limits {
    /// The highest `max_dims` a configuration may set.
    pub const MAX_DIMS: usize = 64;
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_body_bytes: 64 << 20,
            max_json_header_bytes: 1 << 20,
            max_elements_per_tensor: 16 << 20,
            max_dims: 8,
            max_response_bytes: 256 << 20,
            max_signed_body_bytes: 6 << 20,
        }
    }
}
