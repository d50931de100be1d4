//! `inference.GRPCInferenceService` for the demo models: each method reads
//! its request and answers from the same declarations and model code as
//! the HTTP demo. Metadata and configuration are the HTTP demo's JSON read
//! through the codec's JSON mapping, so both protocols answer the same.

use std::pin::Pin;
use std::sync::Arc;

use tokio::sync::{mpsc, watch};
use tokio_stream::Stream;
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Request, Response, Status, Streaming};

use super::control::{self, Settings};
use super::infer::{self, lookup};
use super::stats::Stats;
use super::status::status;
use super::stream;
use crate::catalog::{MODELS, VERSION};
use crate::grpc::inference::grpc_inference_service_server::GrpcInferenceService;
use crate::routes::server_metadata;
use tensorgate_codec::codec::grpc::json;
use tensorgate_codec::codec::grpc::proto::inference::*;

/// The demo's gRPC inference service; cheap to clone (shared state).
#[derive(Clone, Debug)]
pub struct DemoInference {
    stats: Arc<Stats>,
    settings: Arc<Settings>,
    draining: watch::Receiver<bool>,
}

impl DemoInference {
    /// A service whose streams end when `draining` turns true.
    pub fn new(draining: watch::Receiver<bool>) -> Self {
        DemoInference {
            stats: Arc::default(),
            settings: Arc::default(),
            draining,
        }
    }
}

type Answer<T> = Result<Response<T>, Status>;

fn ok<T>(message: T) -> Answer<T> {
    Ok(Response::new(message))
}

/// A model's JSON (metadata, config) as its gRPC message.
fn from_json<T>(
    value: &serde_json::Value,
    read: fn(&[u8]) -> Result<T, json::JsonError>,
) -> Result<T, Status> {
    let body = serde_json::to_vec(value).map_err(|e| Status::internal(e.to_string()))?;
    read(&body).map_err(|e| Status::internal(e.to_string()))
}

#[tonic::async_trait]
impl GrpcInferenceService for DemoInference {
    async fn server_live(&self, _: Request<ServerLiveRequest>) -> Answer<ServerLiveResponse> {
        ok(ServerLiveResponse { live: true })
    }

    async fn server_ready(&self, _: Request<ServerReadyRequest>) -> Answer<ServerReadyResponse> {
        ok(ServerReadyResponse { ready: true })
    }

    async fn model_ready(&self, request: Request<ModelReadyRequest>) -> Answer<ModelReadyResponse> {
        let r = request.into_inner();
        ok(ModelReadyResponse {
            ready: lookup(&r.name, &r.version).is_ok(),
        })
    }

    async fn server_metadata(
        &self,
        _: Request<ServerMetadataRequest>,
    ) -> Answer<ServerMetadataResponse> {
        ok(from_json(
            &server_metadata(),
            json::server_metadata_from_json,
        )?)
    }

    async fn model_metadata(
        &self,
        request: Request<ModelMetadataRequest>,
    ) -> Answer<ModelMetadataResponse> {
        let r = request.into_inner();
        let model = lookup(&r.name, &r.version).map_err(status)?;
        ok(from_json(
            &model.metadata(),
            json::model_metadata_from_json,
        )?)
    }

    async fn model_infer(&self, request: Request<ModelInferRequest>) -> Answer<ModelInferResponse> {
        let stats = self.stats.clone();
        let request = request.into_inner();
        // Model work (a 2^27-element ramp) off the runtime's threads.
        let result = tokio::task::spawn_blocking(move || infer::infer(&stats, request))
            .await
            .map_err(|e| Status::internal(format!("inference task failed: {e}")))?;
        result.map(Response::new).map_err(status)
    }

    type ModelStreamInferStream =
        Pin<Box<dyn Stream<Item = Result<ModelStreamInferResponse, Status>> + Send>>;

    async fn model_stream_infer(
        &self,
        request: Request<Streaming<ModelInferRequest>>,
    ) -> Answer<Self::ModelStreamInferStream> {
        let (tx, rx) = mpsc::channel(16);
        tokio::spawn(stream::serve(
            self.stats.clone(),
            request.into_inner(),
            tx,
            self.draining.clone(),
        ));
        ok(Box::pin(ReceiverStream::new(rx)) as Self::ModelStreamInferStream)
    }

    async fn model_config(
        &self,
        request: Request<ModelConfigRequest>,
    ) -> Answer<ModelConfigResponse> {
        let r = request.into_inner();
        let model = lookup(&r.name, &r.version).map_err(status)?;
        ok(from_json(&model.config(), json::model_config_from_json)?)
    }

    async fn model_statistics(
        &self,
        request: Request<ModelStatisticsRequest>,
    ) -> Answer<ModelStatisticsResponse> {
        let r = request.into_inner();
        self.stats
            .response(&r.name, &r.version)
            .map(Response::new)
            .map_err(status)
    }

    async fn repository_index(
        &self,
        _: Request<RepositoryIndexRequest>,
    ) -> Answer<RepositoryIndexResponse> {
        let models = MODELS
            .iter()
            .map(|m| repository_index_response::ModelIndex {
                name: m.name.to_owned(),
                version: VERSION.to_owned(),
                state: "READY".to_owned(),
                reason: String::new(),
            })
            .collect();
        ok(RepositoryIndexResponse { models })
    }

    async fn repository_model_load(
        &self,
        _: Request<RepositoryModelLoadRequest>,
    ) -> Answer<RepositoryModelLoadResponse> {
        Err(control::model_control())
    }

    async fn repository_model_unload(
        &self,
        _: Request<RepositoryModelUnloadRequest>,
    ) -> Answer<RepositoryModelUnloadResponse> {
        Err(control::model_control())
    }

    async fn system_shared_memory_status(
        &self,
        request: Request<SystemSharedMemoryStatusRequest>,
    ) -> Answer<SystemSharedMemoryStatusResponse> {
        let name = request.into_inner().name;
        if !name.is_empty() {
            return Err(control::system_region(&name));
        }
        ok(SystemSharedMemoryStatusResponse::default())
    }

    async fn system_shared_memory_register(
        &self,
        request: Request<SystemSharedMemoryRegisterRequest>,
    ) -> Answer<SystemSharedMemoryRegisterResponse> {
        Err(control::system_register(&request.into_inner().key))
    }

    async fn system_shared_memory_unregister(
        &self,
        _: Request<SystemSharedMemoryUnregisterRequest>,
    ) -> Answer<SystemSharedMemoryUnregisterResponse> {
        ok(SystemSharedMemoryUnregisterResponse {})
    }

    async fn cuda_shared_memory_status(
        &self,
        request: Request<CudaSharedMemoryStatusRequest>,
    ) -> Answer<CudaSharedMemoryStatusResponse> {
        let name = request.into_inner().name;
        if !name.is_empty() {
            return Err(control::cuda_region(&name));
        }
        ok(CudaSharedMemoryStatusResponse::default())
    }

    async fn cuda_shared_memory_register(
        &self,
        _: Request<CudaSharedMemoryRegisterRequest>,
    ) -> Answer<CudaSharedMemoryRegisterResponse> {
        Err(control::cuda_register())
    }

    async fn cuda_shared_memory_unregister(
        &self,
        _: Request<CudaSharedMemoryUnregisterRequest>,
    ) -> Answer<CudaSharedMemoryUnregisterResponse> {
        ok(CudaSharedMemoryUnregisterResponse {})
    }

    async fn trace_setting(
        &self,
        request: Request<TraceSettingRequest>,
    ) -> Answer<TraceSettingResponse> {
        self.settings.trace(request.into_inner()).map(Response::new)
    }

    async fn log_settings(
        &self,
        request: Request<LogSettingsRequest>,
    ) -> Answer<LogSettingsResponse> {
        self.settings.log(request.into_inner()).map(Response::new)
    }
}
