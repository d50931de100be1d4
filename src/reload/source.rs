//! Where a configuration comes from, every time it is loaded: a file, or a
//! value built once (the demo, `--backend`); then the command line's
//! overrides (`--listen`, `--admin-listen`, `--tls-cert`, `--tls-key`,
//! `--otel-endpoint`),
//! applied to every load alike, so that a reload compares like with like.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::config::{self, ClientAuth, Config, ConfigError, ConfigErrors, ServerTlsFiles, Tracing};

/// The configuration's origin.
#[derive(Clone, Debug)]
pub enum Source {
    /// A TOML file, read again on every load.
    File(PathBuf),
    /// A configuration built without a file; a load re-reads only its key
    /// files and the TLS files the overrides name.
    Fixed(Box<Config>),
}

/// What the command line sets over the configuration.
#[derive(Clone, Debug, Default)]
pub struct Overrides {
    pub listen: Option<SocketAddr>,
    pub admin_listen: Option<SocketAddr>,
    /// `--tls-cert` and `--tls-key`: TLS on the data port with these files
    /// (client-certificate settings, if any, stay the file's).
    pub tls: Option<(PathBuf, PathBuf)>,
    /// `--otel-endpoint`: traces on, to this OTLP receiver (the file's
    /// other `[tracing]` keys, if any, stay).
    pub otel_endpoint: Option<http::Uri>,
    /// `--otel-sample-ratio`: the ratio of new traces recorded, while
    /// tracing is on.
    pub otel_sample_ratio: Option<f64>,
}

/// How to load the configuration.
#[derive(Clone, Debug)]
pub struct Loader {
    pub source: Source,
    pub overrides: Overrides,
}

/// One load's result.
#[derive(Clone, Debug)]
pub struct Loaded {
    pub config: Config,
    /// [`file_hash`] of the configuration file; 0 without one.
    pub hash: u64,
    /// Every file the configuration was read from: what to watch.
    pub files: Vec<WatchedFile>,
}

/// A file the configuration was read from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WatchedFile {
    pub path: PathBuf,
    /// [`file_hash`] of the contents the configuration was loaded from
    /// (`None`: unreadable right after the load): a change made after the
    /// load is a change, however soon after it comes.
    pub loaded: Option<u64>,
}

impl Loader {
    /// Reads, validates and overrides the configuration.
    pub fn load(&self) -> Result<Loaded, ConfigErrors> {
        let (mut config, hash, file) = match &self.source {
            Source::File(path) => {
                let (config, hash) = load_file(path)?;
                (config, hash, Some(path.clone()))
            }
            // Its key files (none in the demo and `--backend` ones today)
            // are read again, as a file's are.
            Source::Fixed(config) => (config.reload_keys()?, 0, None),
        };
        self.apply(&mut config)?;
        let mut files: Vec<WatchedFile> = config
            .files_read()
            .into_iter()
            .map(|(path, bytes)| {
                // Files whose bytes the configuration does not keep (key
                // files) are read again now, right after the load: a
                // change made after this is seen as one, whenever the
                // watcher starts.
                let bytes = bytes.or_else(|| crate::file::read(&path).ok().map(Arc::from));
                WatchedFile {
                    loaded: bytes.map(|b| file_hash(&b)),
                    path,
                }
            })
            .collect();
        files.extend(file.map(|path| WatchedFile {
            path,
            loaded: Some(hash),
        }));
        Ok(Loaded {
            config,
            hash,
            files,
        })
    }

    fn apply(&self, config: &mut Config) -> Result<(), ConfigErrors> {
        let o = &self.overrides;
        if let Some(listen) = o.listen {
            config.server.listen = listen;
        }
        if let Some(admin) = o.admin_listen {
            config.server.admin_listen = admin;
        }
        if let Some(endpoint) = &o.otel_endpoint {
            let mut t = config
                .tracing
                .take()
                .unwrap_or_else(|| Tracing::new(endpoint.clone()));
            t.endpoint = endpoint.clone();
            config.tracing = Some(t);
        }
        if let (Some(ratio), Some(t)) = (o.otel_sample_ratio, &mut config.tracing) {
            t.sample_ratio = ratio;
        }
        if let Some((cert, key)) = &o.tls {
            let client = config
                .server
                .tls
                .as_ref()
                .and_then(|t| t.client_ca.as_ref());
            let files = ServerTlsFiles {
                cert_file: cert.clone(),
                key_file: key.clone(),
                client_ca_file: client.map(|c| c.path.clone()),
                client_auth: config
                    .server
                    .tls
                    .as_ref()
                    .map_or(ClientAuth::default(), |t| t.client_auth),
            };
            config.server.tls = Some(files.load().map_err(ConfigErrors)?);
        }
        Ok(())
    }
}

/// Reads and validates a configuration file; its [`file_hash`] too.
pub fn load_file(path: &Path) -> Result<(Config, u64), ConfigErrors> {
    let one = |message: String| ConfigErrors(vec![ConfigError::new("", message)]);
    let bytes =
        crate::file::read(path).map_err(|e| one(format!("cannot read {}: {e}", path.display())))?;
    let hash = file_hash(&bytes);
    let text = String::from_utf8(bytes)
        .map_err(|e| one(format!("{} is not UTF-8: {e}", path.display())))?;
    let dir = path.parent().unwrap_or(Path::new(""));
    Ok((config::from_str_in(&text, Some(dir))?, hash))
}

/// A stable hash of a configuration file's bytes: 64-bit FNV-1a cut to 53
/// bits, so that a float64 gauge holds it exactly.
pub fn file_hash(bytes: &[u8]) -> u64 {
    const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    let h = bytes
        .iter()
        .fold(OFFSET, |h, &b| (h ^ u64::from(b)).wrapping_mul(PRIME));
    h & ((1 << 53) - 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hashes_are_fnv1a_cut_to_53_bits() {
        // FNV-1a 64 of "" and "a" (published test vectors), masked.
        assert_eq!(file_hash(b""), 0xcbf2_9ce4_8422_2325 & ((1 << 53) - 1));
        assert_eq!(file_hash(b"a"), 0xaf63_dc4c_8601_ec8c & ((1 << 53) - 1));
        assert!(file_hash(b"x = 1\n") < 1 << 53);
        assert_ne!(file_hash(b"x = 1\n"), file_hash(b"x = 2\n"));
    }
}
