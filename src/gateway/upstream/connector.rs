//! How connections to a backend's replicas are made: the one place that
//! builds the connector every replica's pool uses (TLS to backends would
//! change only this file).

use hyper_util::client::legacy::connect::HttpConnector;

use crate::config::Backend;

/// The connector type of every replica's pool.
pub type Connector = HttpConnector;

/// The connector for `backend`'s replicas: plain TCP with the backend's
/// connect timeout, no Nagle delay, `http://` only.
pub fn connector(backend: &Backend) -> Connector {
    let mut connector = HttpConnector::new();
    connector.set_connect_timeout(Some(backend.connect_timeout));
    connector.set_nodelay(true);
    connector.enforce_http(true);
    connector
}
