//! Stage 1: the TOML file as serde structs, one field per key. Every key is
//! spelled here once; unknown keys are refused by serde with the list of
//! expected ones, leaf values check themselves (`values`), and `shape`
//! makes tables and enum words insist on their TOML type. `collect`
//! runs the deserialization so that *every* such error is reported with
//! its key path, not only the first. Nothing here knows about other keys.

mod collect;
mod shape;
mod values;

use std::collections::BTreeMap;

use serde::Deserialize;

pub(super) use collect::{Stage1, parse};
pub(super) use shape::{Table, Word};
pub(super) use values::*;

use super::{ClientAuth, Control, MultipleTensors, OnStoreError, Readyz, WireFormat};

/// The file. Absent tables deserialize with every key absent. Sub-tables
/// are [`Table`]s and enum values [`Word`]s, for their error messages.
#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub(super) struct RawConfig {
    pub server: Table<RawServer>,
    pub limits: Table<RawLimits>,
    pub backends: BTreeMap<String, Table<RawBackend>>,
    pub routes: Vec<Table<RawRoute>>,
    pub tracing: Option<Table<RawTracing>>,
    pub rate_limit_store: Option<Table<RawStore>>,
}

/// `[tracing]`.
#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub(super) struct RawTracing {
    pub enabled: Option<bool>,
    pub endpoint: Option<OtlpEndpoint>,
    pub sample_ratio: Option<Ratio>,
    pub parent_based: Option<bool>,
    pub service_name: Option<Name>,
    pub max_queue_spans: Option<Positive<usize>>,
    pub max_batch_spans: Option<Positive<usize>>,
    pub batch_delay: Option<Timeout>,
    pub export_timeout: Option<Timeout>,
    pub headers: BTreeMap<String, String>,
}

/// `[rate_limit_store]`.
#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub(super) struct RawStore {
    pub url: Option<StoreUrlValue>,
    pub on_store_error: Option<Word<OnStoreError>>,
    pub timeout: Option<Timeout>,
    pub probe_interval: Option<Timeout>,
    pub key_prefix: Option<Name>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub(super) struct RawServer {
    pub listen: Option<Addr>,
    pub admin_listen: Option<Addr>,
    pub shutdown_grace: Option<Timeout>,
    pub max_concurrent_requests: Option<Positive<usize>>,
    pub body_read_timeout: Option<Timeout>,
    pub header_read_timeout: Option<Timeout>,
    pub max_connections: Option<Positive<usize>>,
    pub handshake_timeout: Option<Timeout>,
    pub queue_timeout: Option<Timeout>,
    pub body_total_timeout: Option<Timeout>,
    pub send_timeout: Option<Timeout>,
    pub reply_memory_bytes: Option<Positive<u64>>,
    pub reply_disk_bytes: Option<Count<u64>>,
    pub reply_disk_total_bytes: Option<Count<u64>>,
    pub drain_delay: Option<Delay>,
    pub readyz: Option<Word<Readyz>>,
    pub workers: Option<Count<usize>>,
    pub tls: Option<Table<RawServerTls>>,
    pub max_streams_per_connection: Option<Positive<u32>>,
    pub max_requests_per_client: Option<Positive<usize>>,
    pub max_unverified_body_bytes: Option<Positive<u64>>,
}

/// `[server.tls]`.
#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub(super) struct RawServerTls {
    pub cert_file: Option<Name>,
    pub key_file: Option<Name>,
    pub client_ca_file: Option<Name>,
    pub client_auth: Option<Word<ClientAuth>>,
}

/// `[limits]` and `[routes.limits]`.
#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub(super) struct RawLimits {
    pub max_body_bytes: Option<Positive<u64>>,
    pub max_json_header_bytes: Option<Positive<u64>>,
    pub max_elements_per_tensor: Option<Positive<u64>>,
    pub max_dims: Option<Positive<usize>>,
    pub max_response_bytes: Option<Positive<u64>>,
    pub max_signed_body_bytes: Option<Positive<u64>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub(super) struct RawBackend {
    pub url: Option<BackendUrl>,
    pub urls: Option<Vec<BackendUrl>>,
    pub dns: Option<DnsHost>,
    pub dns_interval: Option<Timeout>,
    pub max_replicas: Option<Positive<usize>>,
    pub connect_timeout: Option<Timeout>,
    pub request_timeout: Option<Timeout>,
    pub pool_idle_timeout: Option<Timeout>,
    pub pool_max_idle_per_host: Option<Positive<usize>>,
    pub max_connections: Option<Positive<usize>>,
    pub stream_idle_timeout: Option<Timeout>,
    pub metadata_ttl: Option<Timeout>,
    pub tls_ca_file: Option<Name>,
    pub tls_cert_file: Option<Name>,
    pub tls_key_file: Option<Name>,
    pub tls_server_name: Option<ServerName>,
    pub health_checks: Option<bool>,
    pub health_interval: Option<Timeout>,
    pub health_timeout: Option<Timeout>,
    pub healthy_threshold: Option<Positive<u32>>,
    pub unhealthy_threshold: Option<Positive<u32>>,
    pub max_checked_models: Option<Positive<usize>>,
    pub eject_after: Option<Positive<u32>>,
    pub eject_time: Option<Timeout>,
    pub max_eject_time: Option<Timeout>,
    pub max_retries: Option<Count<u32>>,
    pub retry_budget: Option<Fraction>,
    pub min_retries_per_second: Option<Count<u32>>,
    pub metrics_url: Option<MetricsUrl>,
    pub metrics_interval: Option<Timeout>,
    pub metrics_timeout: Option<Timeout>,
    pub metrics_stale_after: Option<Timeout>,
}

/// `metrics_url`: one URL (a template with `{host}`) or one per `urls`.
#[derive(Debug, Deserialize)]
#[serde(
    untagged,
    expecting = "a URL like \"http://{host}:8002/metrics\" or a list of URLs, one per entry of urls"
)]
pub(super) enum MetricsUrl {
    One(String),
    Many(Vec<String>),
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub(super) struct RawRoute {
    pub name: Option<Name>,
    pub models: Vec<Name>,
    pub default: bool,
    pub backend: Option<Name>,
    pub backends: Option<Vec<Table<RawWeighted>>>,
    pub allow_backend_header: bool,
    pub shadow: Option<Table<RawShadow>>,
    pub retry_infer: bool,
    pub backend_format: Word<WireFormat>,
    pub limits: Table<RawLimits>,
    pub inputs: BTreeMap<String, Table<RawTensorRule>>,
    pub outputs: BTreeMap<String, Table<RawTensorRule>>,
    pub allow_unknown_inputs: Option<bool>,
    pub allow_control: Vec<Word<Control>>,
    pub decthings: Table<RawDecthings>,
    pub sagemaker: Table<RawSageMaker>,
    pub auth: Option<Table<RawAuth>>,
    pub rate_limit: Option<Table<RawRateLimit>>,
}

/// `[routes.auth]`.
#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub(super) struct RawAuth {
    pub keys_file: Option<Name>,
    pub sigv4: Option<bool>,
}

/// `[routes.rate_limit]`: the route's limits and the per-key ones.
#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub(super) struct RawRateLimit {
    pub requests_per_second: Option<PerSecond>,
    pub burst: Option<Positive<u64>>,
    pub elements_per_second: Option<PerSecond>,
    pub elements_burst: Option<Positive<u64>>,
    pub per_key: Option<Table<RawRates>>,
}

/// `[routes.rate_limit.per_key]`.
#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub(super) struct RawRates {
    pub requests_per_second: Option<PerSecond>,
    pub burst: Option<Positive<u64>>,
    pub elements_per_second: Option<PerSecond>,
    pub elements_burst: Option<Positive<u64>>,
}

/// One of `backends = [{ name = "stable", weight = 90 }, ...]`.
#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub(super) struct RawWeighted {
    pub name: Option<Name>,
    pub weight: Option<Count<u32>>,
}

/// `shadow = { backend = "next", max_in_flight = 8 }`.
#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub(super) struct RawShadow {
    pub backend: Option<Name>,
    pub max_in_flight: Option<Positive<usize>>,
}

/// `[routes.inputs.NAME]` and `[routes.outputs.NAME]`.
#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub(super) struct RawTensorRule {
    pub shape: Option<Vec<Dim>>,
    pub allowed_types: Option<Vec<TypeName>>,
    pub required: Option<bool>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub(super) struct RawDecthings {
    pub enabled: Option<bool>,
    pub prefix: Option<Prefix>,
    pub multiple_tensors: Option<Word<MultipleTensors>>,
    pub unstack_outputs: Vec<Name>,
    pub model_ids: BTreeMap<Name, Name>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub(super) struct RawSageMaker {
    pub enabled: Option<bool>,
    pub default_model: Option<Name>,
    pub input: Option<Name>,
    pub datatype: Option<RecordType>,
    pub batch_records: Option<Positive<usize>>,
    pub max_batches_in_flight: Option<Positive<usize>>,
    pub endpoints: BTreeMap<EndpointName, Name>,
    pub outputs: Vec<Table<RawOutput>>,
}

/// `[[routes.sagemaker.outputs]]`.
#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub(super) struct RawOutput {
    pub name: Option<Name>,
    pub rename: Option<Name>,
}
