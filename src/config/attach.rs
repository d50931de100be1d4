//! The last step of building a [`Config`]: each backend learns the models
//! the routes sending to it (as part of a split or as a shadow) list, so
//! its health checks can follow them, and the routes point at those
//! backends.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::{Backend, Config, Route, ServerConfig};

/// Builds the configuration from backends and routes.
pub(super) fn config(
    server: ServerConfig,
    mut backends: BTreeMap<String, Arc<Backend>>,
    mut routes: Vec<Route>,
) -> Config {
    for (name, backend) in &mut backends {
        let mut models: Vec<String> = Vec::new();
        for r in &routes {
            let serves = r.split.iter().any(|w| &w.backend.name == name)
                || r.shadow.as_ref().is_some_and(|s| &s.backend.name == name);
            if serves {
                for m in &r.models {
                    if !models.contains(m) {
                        models.push(m.clone());
                    }
                }
            }
        }
        if models != backend.models {
            Arc::make_mut(backend).models = models;
        }
    }
    let find = |b: &Arc<Backend>| backends.get(&b.name).cloned().unwrap_or_else(|| b.clone());
    for r in &mut routes {
        r.backend = find(&r.backend);
        for w in &mut r.split {
            w.backend = find(&w.backend);
        }
        if let Some(s) = &mut r.shadow {
            s.backend = find(&s.backend);
        }
    }
    Config {
        server,
        backends,
        routes: routes.into_iter().map(Arc::new).collect(),
        tracing: None,
        rate_limit_store: None,
    }
}
