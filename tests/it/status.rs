//! The admin port's status: `/status` names every route and backend, each
//! replica by its configured URL with its state (a dead one ejected, the
//! live one ready), counts the last minute's requests, shows the last
//! reload (a refused one with its problem) and the data port certificate's
//! expiry; `/` is the page, with nothing loaded from elsewhere.

use std::time::{Duration, Instant};

use crate::common::{TempDir, TestBackend, reply, send};
use serde_json::Value;
use tensorgate::reload::{self, Loader, Overrides, Source};
use tensorgate::server;
use tokio::net::TcpListener;

use crate::common;

async fn status(admin: std::net::SocketAddr) -> Value {
    let got = send(admin, "GET", "/status", &[], "").await;
    assert_eq!(got.status, 200);
    assert_eq!(got.header("content-type"), Some("application/json"));
    got.json()
}

fn replica<'a>(s: &'a Value, backend: &str, url: &str) -> &'a Value {
    s["backends"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["name"] == backend)
        .and_then(|b| {
            b["replicas"]
                .as_array()
                .unwrap()
                .iter()
                .find(|r| r["url"] == url)
        })
        .unwrap_or_else(|| panic!("no replica {url} of {backend} in {s:#}"))
}

#[tokio::test]
async fn replicas_show_their_state_and_routes_their_last_minute() {
    let live = TestBackend::start(|_| async { reply(200, &[], "{}") }).await;
    let dead = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let dead_url = format!("http://{}", dead.local_addr().unwrap());
    drop(dead);
    let toml = format!(
        r#"
[backends.pair]
urls = ["{}", "{dead_url}"]
health_interval = "100ms"
health_timeout = "100ms"
unhealthy_threshold = 1
connect_timeout = "200ms"
[[routes]]
name = "main"
models = ["m"]
default = true
backend = "pair"
"#,
        live.url()
    );
    let gw = common::gateway(&toml).await;
    let deadline = Instant::now() + Duration::from_secs(10);
    let s = loop {
        let s = status(gw.admin_addr).await;
        if replica(&s, "pair", &dead_url)["state"] == "ejected" {
            break s;
        }
        assert!(Instant::now() < deadline, "never ejected: {s:#}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(replica(&s, "pair", &live.url())["state"], "ready");
    assert_eq!(replica(&s, "pair", &dead_url)["health"], "unhealthy");
    let routes = s["routes"].as_array().unwrap();
    assert_eq!(routes.len(), 1);
    assert_eq!(routes[0]["name"], "main");
    assert_eq!(routes[0]["models"], serde_json::json!(["m"]));
    assert_eq!(s["listeners"][0]["address"], gw.data_addr.to_string());
    assert_eq!(s["listeners"][1]["address"], gw.admin_addr.to_string());
    assert_eq!(s["listeners"][0]["tls"], Value::Null);
    assert_eq!(s["config"]["reload"]["last"], Value::Null);

    for _ in 0..5 {
        let got = send(gw.data_addr, "GET", "/v2/models/m", &[], "").await;
        assert_eq!(got.status, 200);
    }
    let s = status(gw.admin_addr).await;
    let route = &s["routes"][0];
    assert_eq!(route["requests_last_minute"], 5);
    assert_eq!(route["error_ratio"], 0.0);
    assert_eq!(route["in_flight"], 0);
    assert!(route["p50_ms"].as_f64().unwrap() > 0.0, "{route}");
    assert!(route["p99_ms"].as_f64().unwrap() >= route["p50_ms"].as_f64().unwrap());
    assert!(route["requests_per_second"].as_f64().unwrap() > 0.0);
    // Every request went to the live replica: its window has them all.
    assert_eq!(replica(&s, "pair", &live.url())["requests_last_minute"], 5);
    gw.shutdown().await;
}

#[tokio::test]
async fn the_page_is_embedded_and_reads_the_status() {
    let live = TestBackend::start(|_| async { reply(200, &[], "{}") }).await;
    let gw = common::gateway(&common::simple_config(&live.url(), "")).await;
    let got = send(gw.admin_addr, "GET", "/", &[], "").await;
    assert_eq!(got.status, 200);
    assert_eq!(got.header("content-type"), Some("text/html; charset=utf-8"));
    assert_eq!(got.header("cache-control"), Some("no-store"));
    let page = String::from_utf8(got.body.to_vec()).unwrap();
    assert!(
        page.contains("fetch(\"status\""),
        "the page refreshes from /status"
    );
    for external in ["src=\"http", "href=\"http", "@import", "//cdn"] {
        assert!(!page.contains(external), "external asset {external}");
    }
    assert!(
        page.len() < 16 << 10,
        "small enough to embed: {}",
        page.len()
    );
    gw.shutdown().await;
}

#[tokio::test]
async fn a_refused_reload_and_the_certificate_expiry_are_shown() {
    let live = TestBackend::start(|_| async { reply(200, &[], "{}") }).await;
    let dir = TempDir::new("status-reload");
    let mut params = rcgen::CertificateParams::new(vec!["localhost".into()]).unwrap();
    params.not_after = rcgen::date_time_ymd(2031, 5, 6);
    let key = rcgen::KeyPair::generate().unwrap();
    let cert = params.self_signed(&key).unwrap();
    dir.write("cert.pem", cert.pem());
    dir.write("key.pem", key.serialize_pem());
    let good = format!(
        "[server.tls]\ncert_file = \"cert.pem\"\nkey_file = \"key.pem\"\n{}",
        common::simple_config(&live.url(), "")
    );
    let file = dir.write("tensorgate.toml", &good);
    let loader = Loader {
        source: Source::File(file),
        overrides: Overrides::default(),
    };
    let loaded = loader.load().unwrap();
    let data = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let admin = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let gw = server::start_on(loaded.config, data, admin).unwrap();
    let reloader = reload::Reloader::new(loader, &gw, loaded.hash);

    let s = status(gw.admin_addr).await;
    let tls = &s["listeners"][0]["tls"];
    // 2031-05-06T00:00:00Z
    assert_eq!(tls["not_after"], 1_935_792_000);
    assert_eq!(s["listeners"][0]["scheme"], "https");
    assert!(tls["expires_in_seconds"].as_i64().unwrap() > 0);
    assert_eq!(
        s["config"]["hash"],
        format!("{:014x}", reload::file_hash(good.as_bytes()))
    );

    dir.write(
        "tensorgate.toml",
        good.replace("backend = \"b\"", "backend = \"nope\""),
    );
    assert!(reloader.reload("test").is_err());
    let s = status(gw.admin_addr).await;
    let last = &s["config"]["reload"]["last"];
    assert_eq!(last["result"], "refused");
    assert_eq!(last["cause"], "test");
    let problems = last["problems"].as_array().unwrap();
    assert!(
        problems[0]
            .as_str()
            .unwrap()
            .contains("unknown backend \"nope\""),
        "{problems:?}"
    );
    assert_eq!(s["config"]["reload"]["refused_total"], 1);

    dir.write("tensorgate.toml", &good);
    assert!(reloader.reload("test").is_ok());
    let s = status(gw.admin_addr).await;
    assert_eq!(s["config"]["reload"]["last"]["result"], "ok");
    assert_eq!(s["config"]["reload"]["applied_total"], 1);
    gw.shutdown().await;
}
