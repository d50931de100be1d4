//! The demo backend over gRPC: `inference.GRPCInferenceService` (every
//! method Triton 2.51 serves) and `grpc.health.v1.Health`, served with
//! tonic on a listener of its own (`demo-backend --grpc-listen`, or
//! [`spawn_grpc`] in-process). The models, their checks and output
//! selection are the HTTP demo's; errors carry Triton's gRPC status codes
//! and messages. Like the HTTP demo it is a fixture, never a model server.

mod control;
mod health;
mod infer;
mod service;
mod stats;
mod status;
mod stream;

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio_stream::StreamExt;
use tokio_stream::wrappers::TcpListenerStream;

pub use health::DemoHealth;
pub use service::DemoInference;

use crate::error::MAX_BODY_BYTES;
use crate::grpc::health::health_server::HealthServer;
use crate::grpc::inference::grpc_inference_service_server::GrpcInferenceServiceServer;

/// How long open streams may finish after shutdown before they are cut.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(5);

/// The demo's gRPC server, running; it stops when dropped.
pub type DemoGrpcServer = crate::running::Running;

/// Binds `addr` (`127.0.0.1:0` for any free port) and serves gRPC on a task
/// of the current runtime.
pub async fn spawn_grpc(addr: SocketAddr) -> io::Result<DemoGrpcServer> {
    let listener = TcpListener::bind(addr).await?;
    DemoGrpcServer::spawn(listener, serve_grpc)
}

/// The demo's two gRPC services, their message limits raised from tonic's
/// 4 MiB to the demo's body limit; their streams end when `draining` turns
/// true. For callers that serve them on a server of their own.
pub fn services(
    draining: watch::Receiver<bool>,
) -> (
    GrpcInferenceServiceServer<DemoInference>,
    HealthServer<DemoHealth>,
) {
    let inference = GrpcInferenceServiceServer::new(DemoInference::new(draining.clone()))
        .max_decoding_message_size(MAX_BODY_BYTES)
        .max_encoding_message_size(MAX_BODY_BYTES);
    let health = HealthServer::new(DemoHealth { draining });
    (inference, health)
}

/// Serves gRPC (h2c) on `listener` until `shutdown` resolves, then ends
/// open streams and waits up to [`DRAIN_TIMEOUT`] for calls to finish.
pub async fn serve_grpc(
    listener: TcpListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> io::Result<()> {
    let (drain, draining) = watch::channel(false);
    let (inference, health) = services(draining);
    let incoming = TcpListenerStream::new(listener).map(|stream| {
        stream.inspect(|s| {
            let _ = s.set_nodelay(true);
        })
    });
    let (stopped_tx, mut stopped) = watch::channel(false);
    let signal = async move {
        shutdown.await;
        let _ = drain.send(true);
        let _ = stopped_tx.send(true);
    };
    let server = tonic::transport::Server::builder()
        .add_service(inference)
        .add_service(health)
        .serve_with_incoming_shutdown(incoming, signal);
    tokio::select! {
        result = server => result.map_err(io::Error::other),
        () = async {
            let _ = stopped.wait_for(|s| *s).await;
            tokio::time::sleep(DRAIN_TIMEOUT).await;
        } => {
            tracing::debug!("demo gRPC server: calls still open after the drain timeout");
            Ok(())
        }
    }
}
