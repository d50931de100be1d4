//! The admin port's Prometheus scrape, and its series read back: one
//! series exactly as written ([`metric`]), or the sum of a family's series
//! carrying some labels ([`metric_sum`]).

use std::net::SocketAddr;

use tensorgate::server::Running;

use super::send;

/// The `/metrics` text of the admin port at `admin` (an in-process gateway's
/// `admin_addr`, or a gateway process's).
pub async fn scrape(admin: SocketAddr) -> String {
    let got = send(admin, "GET", "/metrics", &[], "").await;
    String::from_utf8(got.body.to_vec()).unwrap()
}

/// The admin port's `/metrics` text.
pub async fn scrape_text(gw: &Running) -> String {
    scrape(gw.admin_addr).await
}

/// One series of a Prometheus text scrape (`name{labels}` exactly as
/// written by the exposition, labels in registration order).
pub fn metric(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.trim().parse().ok())
}

/// The sum of the series of family `name` in a scrape whose labels include
/// every one of `labels` (`key="value"` each); 0 if there is none.
pub fn metric_sum(text: &str, name: &str, labels: &[&str]) -> f64 {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| {
            let (series, value) = l.rsplit_once(' ')?;
            let rest = series.strip_prefix(name)?;
            (rest.is_empty() || rest.starts_with('{')).then_some(())?;
            labels
                .iter()
                .all(|want| rest.contains(want))
                .then_some(())?;
            value.parse::<f64>().ok()
        })
        .sum()
}

/// Asserts each `(series, value)` of a scrape; a missing series fails
/// naming it.
pub fn assert_series(text: &str, expected: &[(&str, f64)]) {
    for (series, want) in expected {
        let got = metric(text, series).unwrap_or_else(|| panic!("no series {series}"));
        assert_eq!(got, *want, "{series}");
    }
}
