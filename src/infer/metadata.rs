//! Backend model metadata (`GET /v2/models/{name}[/versions/{v}]`), fetched
//! on demand for frontends that need an input's name or datatype the client
//! does not send (SageMaker records, raw binary requests), and cached per
//! backend for a short time with a bound on entries.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use http::StatusCode;
use serde::Deserialize;

use super::ModelRef;
use crate::tensor::DataType;

/// One declared input or output.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TensorSpec {
    pub name: String,
    pub datatype: DataType,
    /// `-1` for variable dimensions.
    pub shape: Vec<i64>,
}

/// What a backend says about a model.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModelMetadata {
    pub name: String,
    pub inputs: Vec<TensorSpec>,
    pub outputs: Vec<TensorSpec>,
}

#[derive(Deserialize)]
struct RawMetadata {
    name: String,
    #[serde(default)]
    inputs: Vec<RawSpec>,
    #[serde(default)]
    outputs: Vec<RawSpec>,
}

#[derive(Deserialize)]
struct RawSpec {
    name: String,
    datatype: String,
    shape: Vec<i64>,
}

/// Why metadata could not be had.
#[derive(Debug, thiserror::Error)]
pub enum MetadataError {
    #[error("backend \"{backend}\" has no model \"{model}\" (status {status})")]
    NotFound {
        backend: String,
        model: String,
        status: StatusCode,
    },
    #[error("backend \"{backend}\" sent unusable metadata for model \"{model}\": {detail}")]
    Invalid {
        backend: String,
        model: String,
        detail: String,
    },
    #[error(transparent)]
    Upstream(#[from] crate::upstream::UpstreamError),
}

impl ModelMetadata {
    /// Parses a metadata document.
    pub fn parse(body: &[u8]) -> Result<ModelMetadata, String> {
        let raw: RawMetadata = serde_json::from_slice(body).map_err(|e| e.to_string())?;
        let specs = |list: Vec<RawSpec>| -> Result<Vec<TensorSpec>, String> {
            list.into_iter()
                .map(|s| {
                    let datatype = DataType::from_v2_name(&s.datatype)
                        .ok_or_else(|| format!("unknown datatype {:?}", s.datatype))?;
                    Ok(TensorSpec {
                        name: s.name,
                        datatype,
                        shape: s.shape,
                    })
                })
                .collect()
        };
        Ok(ModelMetadata {
            name: raw.name,
            inputs: specs(raw.inputs)?,
            outputs: specs(raw.outputs)?,
        })
    }
}

/// Cached metadata of one backend's models.
#[derive(Debug)]
pub struct MetadataCache {
    ttl: Duration,
    max_entries: usize,
    entries: Mutex<HashMap<ModelRef, (Instant, Arc<ModelMetadata>)>>,
}

impl MetadataCache {
    pub fn new(ttl: Duration, max_entries: usize) -> MetadataCache {
        MetadataCache {
            ttl,
            max_entries: max_entries.max(1),
            entries: Mutex::new(HashMap::new()),
        }
    }

    fn cached(&self, model: &ModelRef) -> Option<Arc<ModelMetadata>> {
        let entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        entries
            .get(model)
            .filter(|(at, _)| at.elapsed() < self.ttl)
            .map(|(_, m)| m.clone())
    }

    fn insert(&self, model: ModelRef, meta: Arc<ModelMetadata>) {
        let mut entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        if entries.len() >= self.max_entries && !entries.contains_key(&model) {
            entries.retain(|_, (at, _)| at.elapsed() < self.ttl);
            if entries.len() >= self.max_entries
                && let Some(oldest) = entries
                    .iter()
                    .min_by_key(|(_, (at, _))| *at)
                    .map(|(k, _)| k.clone())
            {
                entries.remove(&oldest);
            }
        }
        entries.insert(model, (Instant::now(), meta));
    }

    /// The model's metadata, from the cache or, when it has none fresh,
    /// `fetch` (the backend's answer: [`backend::metadata`](super::backend::metadata)).
    pub async fn get(
        &self,
        model: &ModelRef,
        fetch: impl Future<Output = Result<ModelMetadata, MetadataError>>,
    ) -> Result<Arc<ModelMetadata>, MetadataError> {
        if let Some(m) = self.cached(model) {
            return Ok(m);
        }
        let meta = Arc::new(fetch.await?);
        self.insert(model.clone(), meta.clone());
        Ok(meta)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(name: &str) -> Arc<ModelMetadata> {
        Arc::new(ModelMetadata {
            name: name.into(),
            inputs: vec![],
            outputs: vec![],
        })
    }

    #[test]
    fn parses_triton_metadata() {
        let m = ModelMetadata::parse(
            br#"{"name":"simple","versions":["1"],"platform":"python","inputs":[{"name":"INPUT0","datatype":"INT32","shape":[-1,16]}],"outputs":[{"name":"OUTPUT0","datatype":"INT32","shape":[-1,16]}]}"#,
        )
        .unwrap();
        assert_eq!(
            m.inputs,
            vec![TensorSpec {
                name: "INPUT0".into(),
                datatype: DataType::I32,
                shape: vec![-1, 16]
            }]
        );
        assert_eq!(m.outputs[0].name, "OUTPUT0");
        assert!(
            ModelMetadata::parse(
                br#"{"name":"m","inputs":[{"name":"A","datatype":"F32","shape":[1]}]}"#
            )
            .unwrap_err()
            .contains("unknown datatype")
        );
    }

    #[test]
    fn bounded_and_expiring() {
        let c = MetadataCache::new(Duration::from_secs(60), 2);
        for name in ["a", "b", "c"] {
            c.insert(ModelRef::new(name), meta(name));
        }
        let entries = c.entries.lock().unwrap();
        assert_eq!(entries.len(), 2);
        assert!(
            !entries.contains_key(&ModelRef::new("a")),
            "the oldest goes first"
        );
        drop(entries);
        assert_eq!(c.cached(&ModelRef::new("c")).unwrap().name, "c");
        let c = MetadataCache::new(Duration::ZERO, 2);
        c.insert(ModelRef::new("a"), meta("a"));
        assert!(c.cached(&ModelRef::new("a")).is_none(), "expired");
    }
}
