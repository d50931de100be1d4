//! Walks the TOML table, collecting every error with its key path.

use std::collections::BTreeMap;
use std::fmt;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use toml::{Table, Value};

use super::{Backend, Config, Limits, Route, ServerConfig, WireFormat, duration};
use crate::rules::{RouteRules, ShapeRule, TensorRule};
use crate::tensor::DataType;

/// One problem in the configuration, at a key path like
/// `routes[0].inputs.INPUT0.shape`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigError {
    pub key: String,
    pub message: String,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.key.is_empty() {
            f.write_str(&self.message)
        } else {
            write!(f, "{}: {}", self.key, self.message)
        }
    }
}

/// Every problem found, in file order.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub struct ConfigErrors(pub Vec<ConfigError>);

impl fmt::Display for ConfigErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, e) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str("\n")?;
            }
            write!(f, "{e}")?;
        }
        Ok(())
    }
}

/// Reads and validates a configuration file.
pub fn load_file(path: &std::path::Path) -> Result<Config, ConfigErrors> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        ConfigErrors(vec![ConfigError {
            key: String::new(),
            message: format!("cannot read {}: {e}", path.display()),
        }])
    })?;
    from_str(&text)
}

/// Parses and validates configuration text.
pub fn from_str(text: &str) -> Result<Config, ConfigErrors> {
    let table: Table = text.parse().map_err(|e: toml::de::Error| {
        ConfigErrors(vec![ConfigError {
            key: String::new(),
            message: format!("invalid TOML: {}", e.to_string().trim()),
        }])
    })?;
    let mut w = Walker::default();
    let config = w.config(&table);
    match config {
        Some(c) if w.errors.is_empty() => Ok(c),
        _ => Err(ConfigErrors(w.errors)),
    }
}

#[derive(Default)]
struct Walker {
    errors: Vec<ConfigError>,
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_owned()
    } else {
        format!("{path}.{key}")
    }
}

impl Walker {
    fn error(&mut self, key: impl Into<String>, message: impl Into<String>) {
        self.errors.push(ConfigError {
            key: key.into(),
            message: message.into(),
        });
    }

    fn known_keys(&mut self, table: &Table, path: &str, allowed: &[&str]) {
        for key in table.keys() {
            if !allowed.contains(&key.as_str()) {
                self.error(
                    join(path, key),
                    format!("unknown key (expected one of: {})", allowed.join(", ")),
                );
            }
        }
    }

    fn typed<'a, T>(
        &mut self,
        table: &'a Table,
        path: &str,
        key: &str,
        what: &str,
        f: impl Fn(&'a Value) -> Option<T>,
    ) -> Option<T> {
        let v = table.get(key)?;
        let out = f(v);
        if out.is_none() {
            self.error(
                join(path, key),
                format!("expected {what}, found {}", v.type_str()),
            );
        }
        out
    }

    fn string(&mut self, t: &Table, path: &str, key: &str) -> Option<String> {
        self.typed(t, path, key, "a string", |v| v.as_str().map(str::to_owned))
    }

    fn boolean(&mut self, t: &Table, path: &str, key: &str) -> Option<bool> {
        self.typed(t, path, key, "true or false", Value::as_bool)
    }

    fn positive(&mut self, t: &Table, path: &str, key: &str) -> Option<u64> {
        let n = self.typed(t, path, key, "an integer", Value::as_integer)?;
        if n <= 0 {
            self.error(join(path, key), format!("must be positive, got {n}"));
            return None;
        }
        Some(n as u64)
    }

    fn duration(&mut self, t: &Table, path: &str, key: &str) -> Option<Duration> {
        let s = self.string(t, path, key)?;
        match duration::parse(&s) {
            Ok(d) => Some(d),
            Err(e) => {
                self.error(join(path, key), e);
                None
            }
        }
    }

    fn addr(&mut self, t: &Table, path: &str, key: &str) -> Option<SocketAddr> {
        let s = self.string(t, path, key)?;
        match s.parse() {
            Ok(a) => Some(a),
            Err(_) => {
                self.error(
                    join(path, key),
                    format!("{s:?} is not an address like 127.0.0.1:8000"),
                );
                None
            }
        }
    }

    fn table<'a>(&mut self, t: &'a Table, path: &str, key: &str) -> Option<&'a Table> {
        self.typed(t, path, key, "a table", Value::as_table)
    }

    fn config(&mut self, root: &Table) -> Option<Config> {
        self.known_keys(root, "", &["server", "limits", "backends", "routes"]);
        let empty = Table::new();
        let server_table = self.table(root, "", "server").unwrap_or(&empty);
        let server = self.server(server_table);
        let defaults = self.limits(
            root.get("limits").and_then(Value::as_table),
            "limits",
            Limits::default(),
        );
        if let Some(v) = root.get("limits")
            && !v.is_table()
        {
            self.error(
                "limits",
                format!("expected a table, found {}", v.type_str()),
            );
        }
        let mut backends = BTreeMap::new();
        if let Some(table) = self.table(root, "", "backends") {
            for (name, value) in table {
                let path = format!("backends.{name}");
                match value.as_table() {
                    Some(t) => {
                        if let Some(b) = self.backend(name, t, &path) {
                            backends.insert(name.clone(), Arc::new(b));
                        }
                    }
                    None => self.error(path, "expected a table"),
                }
            }
        }
        if backends.is_empty() && !root.contains_key("backends") {
            self.error("backends", "at least one backend is required");
        }
        let mut routes = Vec::new();
        match root.get("routes") {
            None => self.error("routes", "at least one [[routes]] entry is required"),
            Some(Value::Array(items)) => {
                for (i, item) in items.iter().enumerate() {
                    let path = format!("routes[{i}]");
                    match item.as_table() {
                        Some(t) => {
                            if let Some(r) = self.route(t, &path, &backends, defaults) {
                                routes.push(Arc::new(r));
                            }
                        }
                        None => self.error(path, "expected a table"),
                    }
                }
            }
            Some(v) => self.error(
                "routes",
                format!("expected an array of tables, found {}", v.type_str()),
            ),
        }
        self.check_routes(&routes);
        Some(Config {
            server: server?,
            backends,
            routes,
        })
    }

    fn check_routes(&mut self, routes: &[Arc<Route>]) {
        let mut names = BTreeMap::new();
        let mut models: BTreeMap<&str, &str> = BTreeMap::new();
        let mut default: Option<&str> = None;
        for (i, r) in routes.iter().enumerate() {
            if let Some(prev) = names.insert(r.name.as_str(), i) {
                self.error(
                    format!("routes[{i}].name"),
                    format!("route name {:?} is already used by routes[{prev}]", r.name),
                );
            }
            for m in &r.models {
                if let Some(prev) = models.insert(m, &r.name) {
                    self.error(
                        format!("routes[{i}].models"),
                        format!("model {m:?} is already routed by route {prev:?}"),
                    );
                }
            }
            if r.default {
                if let Some(prev) = default {
                    self.error(
                        format!("routes[{i}].default"),
                        format!("route {prev:?} is already the default route"),
                    );
                }
                default = Some(&r.name);
            }
        }
    }

    fn server(&mut self, t: &Table) -> Option<ServerConfig> {
        let p = "server";
        self.known_keys(
            t,
            p,
            &[
                "listen",
                "admin_listen",
                "shutdown_grace",
                "max_concurrent_requests",
                "body_read_timeout",
                "header_read_timeout",
            ],
        );
        let listen = self
            .addr(t, p, "listen")
            .unwrap_or(([127, 0, 0, 1], 8000).into());
        let admin_listen = self
            .addr(t, p, "admin_listen")
            .unwrap_or(([127, 0, 0, 1], 9000).into());
        if listen == admin_listen {
            self.error("server.admin_listen", "must differ from server.listen");
        }
        Some(ServerConfig {
            listen,
            admin_listen,
            shutdown_grace: self
                .duration(t, p, "shutdown_grace")
                .unwrap_or(Duration::from_secs(30)),
            max_concurrent_requests: self
                .positive(t, p, "max_concurrent_requests")
                .unwrap_or(1024) as usize,
            body_read_timeout: self
                .duration(t, p, "body_read_timeout")
                .unwrap_or(Duration::from_secs(60)),
            header_read_timeout: self
                .duration(t, p, "header_read_timeout")
                .unwrap_or(Duration::from_secs(30)),
        })
    }

    fn limits(&mut self, t: Option<&Table>, p: &str, base: Limits) -> Limits {
        let Some(t) = t else {
            return base;
        };
        self.known_keys(
            t,
            p,
            &[
                "max_body_bytes",
                "max_json_header_bytes",
                "max_elements_per_tensor",
                "max_dims",
                "max_response_bytes",
            ],
        );
        let limits = Limits {
            max_body_bytes: self
                .positive(t, p, "max_body_bytes")
                .unwrap_or(base.max_body_bytes),
            max_json_header_bytes: self
                .positive(t, p, "max_json_header_bytes")
                .unwrap_or(base.max_json_header_bytes),
            max_elements_per_tensor: self
                .positive(t, p, "max_elements_per_tensor")
                .unwrap_or(base.max_elements_per_tensor),
            max_dims: self
                .positive(t, p, "max_dims")
                .unwrap_or(base.max_dims as u64) as usize,
            max_response_bytes: self
                .positive(t, p, "max_response_bytes")
                .unwrap_or(base.max_response_bytes),
        };
        if limits.max_dims > 64 {
            self.error(
                join(p, "max_dims"),
                format!("at most 64, got {}", limits.max_dims),
            );
        }
        limits
    }

    fn backend(&mut self, name: &str, t: &Table, p: &str) -> Option<Backend> {
        self.known_keys(
            t,
            p,
            &[
                "url",
                "connect_timeout",
                "request_timeout",
                "pool_idle_timeout",
                "pool_max_idle_per_host",
            ],
        );
        let url = match self.string(t, p, "url") {
            None => {
                if !t.contains_key("url") {
                    self.error(join(p, "url"), "required");
                }
                None
            }
            Some(s) => match s.parse::<http::Uri>() {
                Ok(u)
                    if u.scheme_str() == Some("http")
                        && u.authority().is_some()
                        && u.query().is_none() =>
                {
                    Some(u)
                }
                Ok(u) if u.scheme_str() == Some("https") => {
                    self.error(join(p, "url"), format!("{s:?}: https backends are not supported; use http:// (a sidecar or mesh terminates TLS)"));
                    let _ = u;
                    None
                }
                _ => {
                    self.error(
                        join(p, "url"),
                        format!("{s:?} is not an http://host:port URL"),
                    );
                    None
                }
            },
        };
        let connect_timeout = self.duration(t, p, "connect_timeout");
        let request_timeout = self.duration(t, p, "request_timeout");
        let pool_idle_timeout = self.duration(t, p, "pool_idle_timeout");
        let pool_max_idle_per_host = self.positive(t, p, "pool_max_idle_per_host");
        Some(Backend {
            name: name.to_owned(),
            url: url?,
            connect_timeout: connect_timeout.unwrap_or(Duration::from_secs(2)),
            request_timeout: request_timeout.unwrap_or(Duration::from_secs(60)),
            pool_idle_timeout: pool_idle_timeout.unwrap_or(Duration::from_secs(90)),
            pool_max_idle_per_host: pool_max_idle_per_host.unwrap_or(64) as usize,
        })
    }

    fn route(
        &mut self,
        t: &Table,
        p: &str,
        backends: &BTreeMap<String, Arc<Backend>>,
        defaults: Limits,
    ) -> Option<Route> {
        self.known_keys(
            t,
            p,
            &[
                "name",
                "models",
                "default",
                "backend",
                "backend_format",
                "limits",
                "inputs",
                "outputs",
                "allow_unknown_inputs",
            ],
        );
        let name = self.string(t, p, "name");
        if name.is_none() && !t.contains_key("name") {
            self.error(join(p, "name"), "required");
        }
        let models: Vec<String> = match t.get("models") {
            None => Vec::new(),
            Some(Value::Array(items)) => items
                .iter()
                .enumerate()
                .filter_map(|(i, v)| match v.as_str() {
                    Some(s) if !s.is_empty() => Some(s.to_owned()),
                    _ => {
                        self.error(format!("{p}.models[{i}]"), "expected a model name");
                        None
                    }
                })
                .collect(),
            Some(v) => {
                self.error(
                    join(p, "models"),
                    format!("expected an array of model names, found {}", v.type_str()),
                );
                Vec::new()
            }
        };
        let default = self.boolean(t, p, "default").unwrap_or(false);
        if models.is_empty() && !default {
            self.error(
                join(p, "models"),
                "a route needs `models` or `default = true`",
            );
        }
        let backend = match self.string(t, p, "backend") {
            Some(b) => match backends.get(&b) {
                Some(b) => Some(b.clone()),
                None => {
                    self.error(
                        join(p, "backend"),
                        format!(
                            "unknown backend {b:?} (defined: {})",
                            backends.keys().cloned().collect::<Vec<_>>().join(", ")
                        ),
                    );
                    None
                }
            },
            None => {
                if !t.contains_key("backend") {
                    self.error(join(p, "backend"), "required");
                }
                None
            }
        };
        let backend_format = match self.string(t, p, "backend_format").as_deref() {
            None | Some("binary") => WireFormat::Binary,
            Some("json") => WireFormat::Json,
            Some(other) => {
                self.error(
                    join(p, "backend_format"),
                    format!("{other:?} is not \"binary\" or \"json\""),
                );
                WireFormat::Binary
            }
        };
        let limits_path = join(p, "limits");
        let limits_table = self.table(t, p, "limits");
        let limits = self.limits(limits_table, &limits_path, defaults);
        let inputs = self.tensor_rules(t, p, "inputs");
        let outputs = self.tensor_rules(t, p, "outputs");
        let allow_unknown_inputs = self
            .boolean(t, p, "allow_unknown_inputs")
            .unwrap_or(inputs.is_empty());
        Some(Route {
            name: name?,
            models,
            default,
            backend: backend?,
            backend_format,
            limits,
            rules: RouteRules {
                inputs,
                outputs,
                allow_unknown_inputs,
            },
            allow_control: Vec::new(),
        })
    }

    fn tensor_rules(&mut self, t: &Table, p: &str, key: &str) -> BTreeMap<String, TensorRule> {
        let mut out = BTreeMap::new();
        let Some(table) = self.table(t, p, key) else {
            return out;
        };
        let base = join(p, key);
        for (name, value) in table {
            let path = join(&base, name);
            let Some(rt) = value.as_table() else {
                self.error(path, "expected a table");
                continue;
            };
            self.known_keys(rt, &path, &["shape", "allowed_types", "required"]);
            let shape = match rt.get("shape") {
                None => None,
                Some(Value::Array(dims)) => {
                    let mut ok = true;
                    let dims: Vec<i64> = dims
                        .iter()
                        .enumerate()
                        .map(|(i, d)| match d.as_integer() {
                            Some(n) if n >= -1 => n,
                            _ => {
                                self.error(format!("{path}.shape[{i}]"), "expected a size or -1");
                                ok = false;
                                0
                            }
                        })
                        .collect();
                    ok.then_some(ShapeRule(dims))
                }
                Some(v) => {
                    self.error(
                        join(&path, "shape"),
                        format!("expected an array, found {}", v.type_str()),
                    );
                    None
                }
            };
            let allowed_types = match rt.get("allowed_types") {
                None => None,
                Some(Value::Array(items)) => {
                    let mut types = Vec::new();
                    for (i, item) in items.iter().enumerate() {
                        match item.as_str().and_then(DataType::from_any_name) {
                            Some(d) if !types.contains(&d) => types.push(d),
                            Some(_) => {}
                            None => self.error(
                                format!("{path}.allowed_types[{i}]"),
                                format!("unknown data type {item} (use V2 names like FP32 or Decthings names like f32)"),
                            ),
                        }
                    }
                    if types.is_empty() {
                        self.error(join(&path, "allowed_types"), "lists no valid data type");
                    }
                    Some(types)
                }
                Some(v) => {
                    self.error(
                        join(&path, "allowed_types"),
                        format!("expected an array, found {}", v.type_str()),
                    );
                    None
                }
            };
            let required = self.boolean(rt, &path, "required").unwrap_or(true);
            out.insert(
                name.clone(),
                TensorRule {
                    shape,
                    allowed_types,
                    required,
                },
            );
        }
        out
    }
}

#[cfg(test)]
mod tests;
