//! What the gateway prints when it starts: the demo's banner (where it
//! listens and a `curl` line that works when pasted) and, for a
//! configuration file or `--backend`, a summary of the listeners, routes
//! and backends in force, one line each.
//!
//! Pure functions from addresses and a [`Config`] to text, so that what a
//! person reads is tested; `main` decides where the lines go. Nothing here
//! opens a socket or reads a file beyond resolving a path.

use std::fmt::Write as _;
use std::net::SocketAddr;
use std::path::Path;

use crate::config::{Backend, Config, Replicas, Route, WireFormat};

/// The demo's V2 request: `simple` adds and subtracts two `[1,16]` INT32
/// inputs.
pub const DEMO_BODY: &str = r#"{"inputs":[{"name":"INPUT0","shape":[1,16],"datatype":"INT32","data":[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16]},{"name":"INPUT1","shape":[1,16],"datatype":"INT32","data":[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1]}]}"#;

/// The demo's banner. With TLS, `tls_cert` is the data port's certificate
/// chain file: curl trusts it with `--cacert` (curl accepts a chain's own
/// leaf as the anchor), so the printed line works when pasted as long as
/// the certificate names the address it prints.
pub fn demo_banner(data: SocketAddr, admin: SocketAddr, tls_cert: Option<&Path>) -> String {
    let scheme = if tls_cert.is_some() { "https" } else { "http" };
    let mut out = format!(
        "tensorgate demo: gateway on {scheme}://{data} (admin http://{admin}) in front of the built-in demo backend\ntry:\n"
    );
    let curl = match tls_cert {
        Some(cert) => {
            let cert = std::fs::canonicalize(cert).unwrap_or_else(|_| cert.to_path_buf());
            format!("curl -s --cacert {}", shell_quote(&cert.to_string_lossy()))
        }
        None => "curl -s".to_owned(),
    };
    let _ = writeln!(
        out,
        "  {curl} {scheme}://{data}/v2/models/simple/infer -d '{DEMO_BODY}'"
    );
    if tls_cert.is_some() {
        let _ = writeln!(
            out,
            "  (the certificate must name {}; for a certificate issued to a host name, add --resolve NAME:{}:{} and use https://NAME:{})",
            data.ip(),
            data.port(),
            data.ip(),
            data.port()
        );
    }
    let _ = writeln!(
        out,
        "  gRPC (inference.GRPCInferenceService, tritonclient.grpc) on the same port: {data}{}",
        if tls_cert.is_some() { " (TLS)" } else { "" }
    );
    out
}

/// `text` quoted for a POSIX shell when it holds anything but plain path
/// characters.
pub fn shell_quote(text: &str) -> String {
    let plain = !text.is_empty()
        && text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"/._-+,:@%".contains(&b));
    if plain {
        text.to_owned()
    } else {
        format!("'{}'", text.replace('\'', r"'\''"))
    }
}

/// The configuration in force, one line per listener, route and backend.
pub fn summary(config: &Config, data: SocketAddr, admin: SocketAddr, tls: bool) -> Vec<String> {
    let scheme = if tls { "https" } else { "http" };
    let mut lines = vec![format!(
        "listening: data {scheme}://{data}, admin http://{admin} (/healthz, /readyz, /metrics)"
    )];
    lines.extend(config.routes.iter().map(|r| route_line(r)));
    lines.extend(config.backends.values().map(|b| backend_line(b)));
    lines
}

fn route_line(r: &Route) -> String {
    let mut line = format!("route {:?}: ", r.name);
    let models = match (r.models.as_slice(), r.default) {
        ([], _) => "every model no other route lists".to_owned(),
        (m, true) => format!("models {} (and the default route)", m.join(", ")),
        (m, false) => format!("models {}", m.join(", ")),
    };
    line.push_str(&models);
    let backends: Vec<String> = match r.split.as_slice() {
        [one] => vec![one.backend.name.clone()],
        split => split
            .iter()
            .map(|w| format!("{} (weight {})", w.backend.name, w.weight))
            .collect(),
    };
    let format = match r.backend_format {
        WireFormat::Binary => "binary",
        WireFormat::Json => "json",
    };
    let _ = write!(line, " -> backend {} ({format})", backends.join(", "));
    if let Some(s) = &r.shadow {
        let _ = write!(line, ", shadow to {}", s.backend.name);
    }
    if !r.rules.inputs.is_empty() {
        let names: Vec<&str> = r.rules.inputs.keys().map(String::as_str).collect();
        let _ = write!(line, "; input rules {}", names.join(", "));
    }
    let mut frontends = vec!["V2".to_owned()];
    if r.decthings.enabled {
        frontends.push(format!("Decthings {}/Model/evaluate", r.decthings.prefix));
    }
    if r.sagemaker.enabled {
        let mut s = "SageMaker".to_owned();
        if let Some(m) = &r.sagemaker.default_model {
            let _ = write!(s, " (/invocations: {m})");
        }
        frontends.push(s);
    }
    let _ = write!(line, "; frontends {}", frontends.join(", "));
    if let Some(auth) = &r.auth {
        let _ = write!(line, "; API keys from {}", auth.keys_file.display());
    }
    if !r.rate_limit.is_empty() {
        line.push_str("; rate limited");
    }
    line
}

fn backend_line(b: &Backend) -> String {
    let replicas = match &b.replicas {
        Replicas::Urls(urls) => {
            let urls: Vec<String> = urls.iter().map(ToString::to_string).collect();
            let noun = if urls.len() == 1 {
                "replica"
            } else {
                "replicas"
            };
            format!("{} {noun} {}", urls.len(), urls.join(", "))
        }
        Replicas::Dns { name, interval, .. } => {
            format!("replicas from DNS {name} every {interval:?}")
        }
    };
    let checks = if b.health.enabled {
        format!("health checks every {:?}", b.health.interval)
    } else {
        "health checks off".to_owned()
    };
    format!("backend {:?}: {replicas}; {checks}", b.name)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr(s: &str) -> SocketAddr {
        s.parse().unwrap()
    }

    #[test]
    fn plain_banner_is_a_curl_line_that_runs() {
        let text = demo_banner(addr("127.0.0.1:8000"), addr("127.0.0.1:9000"), None);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0],
            "tensorgate demo: gateway on http://127.0.0.1:8000 (admin http://127.0.0.1:9000) in front of the built-in demo backend"
        );
        assert_eq!(
            lines[2],
            format!("  curl -s http://127.0.0.1:8000/v2/models/simple/infer -d '{DEMO_BODY}'")
        );
        assert_eq!(
            lines[3],
            "  gRPC (inference.GRPCInferenceService, tritonclient.grpc) on the same port: 127.0.0.1:8000"
        );
        assert_eq!(lines.len(), 4);
    }

    #[test]
    fn tls_banner_names_the_real_certificate_file() {
        let dir = std::env::temp_dir().join(format!("tensorgate-banner-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let cert = dir.join("my cert.pem");
        std::fs::write(&cert, "x").unwrap();
        let text = demo_banner(addr("127.0.0.1:8443"), addr("127.0.0.1:9000"), Some(&cert));
        let real = std::fs::canonicalize(&cert).unwrap();
        let _ = std::fs::remove_dir_all(&dir);
        assert!(!text.contains("CA.pem"), "{text}");
        let line = text.lines().nth(2).unwrap();
        assert_eq!(
            line,
            format!(
                "  curl -s --cacert '{}' https://127.0.0.1:8443/v2/models/simple/infer -d '{DEMO_BODY}'",
                real.display()
            )
        );
        assert!(text.contains("--resolve NAME:8443:127.0.0.1"), "{text}");
    }

    #[test]
    fn quoting() {
        assert_eq!(shell_quote("/tmp/a.pem"), "/tmp/a.pem");
        assert_eq!(shell_quote("/tmp/a b.pem"), "'/tmp/a b.pem'");
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
        assert_eq!(shell_quote(""), "''");
    }

    #[test]
    fn summary_names_listeners_routes_and_backends() {
        let toml = r#"
[server]
listen = "127.0.0.1:8080"
admin_listen = "127.0.0.1:9090"
[backends.triton]
urls = ["http://127.0.0.1:8001", "http://127.0.0.1:8002"]
health_interval = "2s"
[backends.next]
url = "http://127.0.0.1:8003"
[[routes]]
name = "simple"
models = ["simple"]
backend = "triton"
shadow = { backend = "next" }
[routes.inputs.INPUT0]
shape = [-1, 16]
[routes.sagemaker]
default_model = "simple"
[[routes]]
name = "default"
default = true
backend = "next"
backend_format = "json"
[routes.decthings]
enabled = false
[routes.sagemaker]
enabled = false
"#;
        let config = crate::config::from_str(toml).unwrap();
        let lines = summary(
            &config,
            addr("127.0.0.1:8080"),
            addr("127.0.0.1:9090"),
            false,
        );
        assert_eq!(
            lines,
            [
                "listening: data http://127.0.0.1:8080, admin http://127.0.0.1:9090 (/healthz, /readyz, /metrics)",
                "route \"simple\": models simple -> backend triton (binary), shadow to next; input rules INPUT0; frontends V2, Decthings /v0/Model/evaluate, SageMaker (/invocations: simple)",
                "route \"default\": every model no other route lists -> backend next (json); frontends V2",
                "backend \"next\": 1 replica http://127.0.0.1:8003/; health checks off",
                "backend \"triton\": 2 replicas http://127.0.0.1:8001/, http://127.0.0.1:8002/; health checks every 2s",
            ]
        );
    }
}
