//! Gateways in this process: started on 127.0.0.1:0 from TOML or a
//! configuration, and the small configurations most tests start from.

use tensorgate::config::{self, Config};
use tensorgate::server::{self, Running};
use tensorgate_demo::DemoServer;
use tokio::net::TcpListener;

/// Starts a gateway on loopback ports chosen by the OS. `toml` may use
/// `{backend}` for a backend URL.
pub async fn gateway(toml: &str) -> Running {
    let config = config::from_str(toml).unwrap_or_else(|e| panic!("config:\n{e}"));
    serve(config).await
}

/// Starts a gateway serving `config` on loopback data and admin ports
/// chosen by the OS (whatever addresses `config` names).
pub async fn serve(config: Config) -> Running {
    let data = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let admin = TcpListener::bind("127.0.0.1:0").await.unwrap();
    server::start_on(config, data, admin).unwrap()
}

/// The embedded demo backend, and a gateway in front of it with the demo
/// configuration (`Config::demo`: the one `tensorgate` serves with no
/// arguments).
pub async fn demo_gateway() -> (DemoServer, Running) {
    let backend = tensorgate_demo::spawn().await.unwrap();
    let data = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let admin = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let config = Config::demo(
        backend.addr,
        data.local_addr().unwrap(),
        admin.local_addr().unwrap(),
    )
    .unwrap();
    let gw = server::start_on(config, data, admin).unwrap();
    (backend, gw)
}

/// A config with one default route (and optional extra TOML) to `backend`.
pub fn simple_config(backend: &str, extra_route: &str) -> String {
    format!(
        r#"
[server]
shutdown_grace = "2s"
[backends.b]
url = "{backend}"
request_timeout = "2s"
connect_timeout = "1s"
[[routes]]
name = "r"
default = true
backend = "b"
{extra_route}
"#
    )
}

/// A config with one default route to `backend` and these `[server]`
/// keys (TOML lines).
pub fn server_config(backend: &str, server_keys: &str) -> String {
    format!(
        r#"
[server]
{server_keys}
[backends.b]
url = "{backend}"
request_timeout = "20s"
connect_timeout = "1s"
[[routes]]
name = "r"
default = true
backend = "b"
"#
    )
}
