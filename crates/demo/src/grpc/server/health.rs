//! `grpc.health.v1.Health` for the demo: the server as a whole (`""`) and
//! `inference.GRPCInferenceService` are `SERVING`; any other service is
//! unknown (`NOT_FOUND` for Check, `SERVICE_UNKNOWN` for Watch), as the
//! health protocol says. (Triton 2.51 answers `SERVING` whatever the
//! name.) Watch sends the status once and holds the stream open, as the
//! status never changes, until the client goes or the server drains.

use std::pin::Pin;

use tokio::sync::{mpsc, watch};
use tokio_stream::Stream;
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Request, Response, Status};

use crate::grpc::health::health_server::Health;
use tensorgate_codec::codec::grpc::proto::health::health_check_response::ServingStatus;
use tensorgate_codec::codec::grpc::proto::health::{HealthCheckRequest, HealthCheckResponse};

/// The services the demo answers for.
pub const SERVICES: [&str; 2] = ["", "inference.GRPCInferenceService"];

#[derive(Debug)]
pub struct DemoHealth {
    pub draining: watch::Receiver<bool>,
}

fn status(service: &str) -> Option<ServingStatus> {
    SERVICES
        .contains(&service)
        .then_some(ServingStatus::Serving)
}

#[tonic::async_trait]
impl Health for DemoHealth {
    async fn check(
        &self,
        request: Request<HealthCheckRequest>,
    ) -> Result<Response<HealthCheckResponse>, Status> {
        let service = request.into_inner().service;
        let status = status(&service)
            .ok_or_else(|| Status::not_found(format!("unknown service '{service}'")))?;
        Ok(Response::new(HealthCheckResponse {
            status: status as i32,
        }))
    }

    type WatchStream = Pin<Box<dyn Stream<Item = Result<HealthCheckResponse, Status>> + Send>>;

    async fn watch(
        &self,
        request: Request<HealthCheckRequest>,
    ) -> Result<Response<Self::WatchStream>, Status> {
        let service = request.into_inner().service;
        let status = status(&service).unwrap_or(ServingStatus::ServiceUnknown);
        let (tx, rx) = mpsc::channel(1);
        let mut draining = self.draining.clone();
        tokio::spawn(async move {
            if tx
                .send(Ok(HealthCheckResponse {
                    status: status as i32,
                }))
                .await
                .is_err()
            {
                return;
            }
            tokio::select! {
                () = tx.closed() => {}
                _ = draining.wait_for(|d| *d) => {}
            }
        });
        Ok(Response::new(Box::pin(ReceiverStream::new(rx))))
    }
}
