//! The configurations tensorgate runs without a file, built as values (not
//! as TOML text) and checked with the loader's own checks.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use super::{
    Backend, Config, ConfigError, ConfigErrors, Replicas, Route, ServerConfig, backend, validate,
};
use crate::rules::{RouteRules, ShapeRule, TensorRule};
use crate::tensor::DataType;

impl Config {
    /// One default route with the binary backend format to the replicas
    /// at `urls`: what `tensorgate --backend URL [--backend URL ...]` runs
    /// without a configuration file (health checks on with several). A bad
    /// URL is reported at `backends.default.url` (one) or
    /// `backends.default.urls[i]`.
    pub fn single_backend<S: AsRef<str>>(
        urls: &[S],
        listen: SocketAddr,
        admin: SocketAddr,
    ) -> Result<Config, ConfigErrors> {
        let key = |i: usize| match urls.len() {
            1 => "backends.default.url".to_owned(),
            _ => format!("backends.default.urls[{i}]"),
        };
        let mut parsed = Vec::new();
        let mut errors = Vec::new();
        for (i, url) in urls.iter().enumerate() {
            match backend::parse_url(url.as_ref()) {
                Ok(u) if parsed.contains(&u) => {
                    errors.push(ConfigError::new(key(i), format!("\"{u}\" is listed twice")));
                }
                Ok(u) => parsed.push(u),
                Err(m) => errors.push(ConfigError::new(key(i), m)),
            }
        }
        if urls.is_empty() {
            errors.push(ConfigError::new("backends.default.url", "required"));
        }
        if parsed.len() > Backend::MAX_REPLICAS {
            let message = format!("at most {} replicas", Backend::MAX_REPLICAS);
            errors.push(ConfigError::new("backends.default.urls", message));
        }
        if !errors.is_empty() {
            return Err(ConfigErrors(errors));
        }
        let backend = Arc::new(Backend::with_replicas("default", Replicas::Urls(parsed)));
        let mut route = Route::new("default", backend.clone());
        route.default = true;
        let server = ServerConfig {
            listen,
            admin_listen: admin,
            ..ServerConfig::default()
        };
        Config::checked(server, backend, vec![route])
    }

    /// The configuration `tensorgate` runs with no arguments: the gateway in
    /// front of the embedded demo backend at `backend`, with rules on the
    /// demo's `simple` model and `rowsum` as the SageMaker default model.
    pub fn demo(
        backend: SocketAddr,
        listen: SocketAddr,
        admin: SocketAddr,
    ) -> Result<Config, ConfigErrors> {
        let url = backend::parse_url(&format!("http://{backend}"))
            .map_err(|m| ConfigErrors(vec![ConfigError::new("backends.demo.url", m)]))?;
        let backend = Arc::new(Backend::new("demo", url));
        let rows_of_16 = TensorRule {
            shape: Some(ShapeRule(vec![-1, 16])),
            allowed_types: Some(vec![DataType::I32]),
            decthings_types: None,
            required: true,
        };
        let mut simple = Route::new("simple", backend.clone());
        simple.models = vec!["simple".to_owned()];
        simple.rules = RouteRules {
            inputs: BTreeMap::from([
                ("INPUT0".to_owned(), rows_of_16.clone()),
                ("INPUT1".to_owned(), rows_of_16),
            ]),
            outputs: BTreeMap::new(),
            allow_unknown_inputs: false,
        };
        let mut default = Route::new("default", backend.clone());
        default.default = true;
        // A 64 MiB tensor with its framing (a Decthings call, a binary
        // request header) fits the demo.
        default.limits.max_body_bytes = 128 << 20;
        default.sagemaker.default_model = Some("rowsum".to_owned());
        let server = ServerConfig {
            listen,
            admin_listen: admin,
            shutdown_grace: Duration::from_secs(5),
            // Interactive: Ctrl-C stops at once, no load balancer to drain.
            drain_delay: Duration::ZERO,
            ..ServerConfig::default()
        };
        Config::checked(server, backend, vec![simple, default])
    }

    /// A one-backend configuration, if its server settings are sound.
    fn checked(
        server: ServerConfig,
        backend: Arc<Backend>,
        routes: Vec<Route>,
    ) -> Result<Config, ConfigErrors> {
        let errors = validate::server_problems(&server);
        if !errors.is_empty() {
            return Err(ConfigErrors(errors));
        }
        let backends = BTreeMap::from([(backend.name.clone(), backend)]);
        Ok(super::attach::config(server, backends, routes))
    }
}
