//! `Location` headers from a backend point at the backend's own address
//! (and path prefix), which clients cannot and should not reach: they are
//! rewritten to a path on the gateway.

use http::header::{self, HeaderValue};
use http::{HeaderMap, Uri};

/// Rewrites `Location` (and `Content-Location`) values that point at
/// `backend` — absolute URLs with its authority, or paths under its prefix —
/// to the same path on the gateway. Values pointing anywhere else are left
/// alone; a value that cannot be parsed is dropped rather than passed on.
pub(crate) fn localize(backend: &Uri, headers: &mut HeaderMap) {
    let found = present(headers);
    for (name, here) in [header::LOCATION, header::CONTENT_LOCATION]
        .into_iter()
        .zip(found)
    {
        if !here {
            continue;
        }
        let Some(value) = headers.get(&name) else {
            continue;
        };
        match rewrite(backend, value) {
            Rewrite::Keep => {}
            Rewrite::Drop => {
                headers.remove(&name);
            }
            Rewrite::To(v) => {
                headers.insert(&name, v);
            }
        }
    }
}

/// Whether `Location` and `Content-Location` are there. Most replies carry
/// neither, and have a few names: one pass over them tells, where a lookup
/// of each hashes its name.
fn present(headers: &HeaderMap) -> [bool; 2] {
    /// Past this many names, the lookups are the cheaper.
    const SCAN: usize = 8;
    if headers.keys_len() > SCAN {
        return [
            headers.contains_key(header::LOCATION),
            headers.contains_key(header::CONTENT_LOCATION),
        ];
    }
    let mut found = [false; 2];
    for name in headers.keys() {
        if name == header::LOCATION {
            found[0] = true;
        } else if name == header::CONTENT_LOCATION {
            found[1] = true;
        }
    }
    found
}

#[derive(Debug, PartialEq)]
enum Rewrite {
    Keep,
    Drop,
    To(HeaderValue),
}

fn rewrite(backend: &Uri, value: &HeaderValue) -> Rewrite {
    let Ok(text) = value.to_str() else {
        return Rewrite::Drop;
    };
    let Ok(uri) = text.parse::<Uri>() else {
        return Rewrite::Drop;
    };
    let path = match uri.authority() {
        Some(a) if Some(a) == backend.authority() => {
            uri.path_and_query().map_or("/", |p| p.as_str())
        }
        Some(_) => return Rewrite::Keep,
        None if text.starts_with('/') => text,
        // Relative references resolve against the request path, which is
        // the same on both sides.
        None => return Rewrite::Keep,
    };
    let prefix = backend.path().trim_end_matches('/');
    let local = match path.strip_prefix(prefix) {
        Some("") => "/",
        Some(rest) if rest.starts_with(['/', '?']) => rest,
        // Not under the prefix: not a gateway path either.
        _ if !prefix.is_empty() => return Rewrite::Drop,
        _ => path,
    };
    let local = if local.starts_with('?') {
        format!("/{local}")
    } else {
        local.to_owned()
    };
    HeaderValue::from_str(&local).map_or(Rewrite::Drop, Rewrite::To)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(backend: &str, location: &str, expected: Option<&str>) {
        let backend: Uri = backend.parse().unwrap();
        let mut h = HeaderMap::new();
        h.insert(header::LOCATION, location.parse().unwrap());
        localize(&backend, &mut h);
        assert_eq!(
            h.get(header::LOCATION).map(|v| v.to_str().unwrap()),
            expected,
            "{location}"
        );
    }

    #[test]
    fn backend_addresses_become_gateway_paths() {
        let b = "http://10.0.0.7:8000";
        check(
            b,
            "http://10.0.0.7:8000/v2/models/m?x=1",
            Some("/v2/models/m?x=1"),
        );
        check(b, "http://10.0.0.7:8000", Some("/"));
        check(b, "/v2/health/ready", Some("/v2/health/ready"));
        check(
            b,
            "https://example.org/docs",
            Some("https://example.org/docs"),
        );
        check(b, "ready", Some("ready"));
        let p = "http://10.0.0.7:8000/triton";
        check(
            p,
            "http://10.0.0.7:8000/triton/v2/models/m",
            Some("/v2/models/m"),
        );
        check(p, "/triton/v2", Some("/v2"));
        check(p, "/triton", Some("/"));
        check(p, "/other/v2", None);
        check(p, "/tritonx", None);
    }

    /// Both names are rewritten, among a few other headers or many.
    #[test]
    fn both_names_are_found_among_few_headers_or_many() {
        let backend: Uri = "http://10.0.0.7:8000".parse().unwrap();
        for others in [0, 3, 12] {
            let mut h = HeaderMap::new();
            for i in 0..others {
                let name = header::HeaderName::from_bytes(format!("x-{i}").as_bytes()).unwrap();
                h.insert(name, HeaderValue::from_static("v"));
            }
            assert_eq!(present(&h), [false, false], "{others}");
            h.insert(
                header::CONTENT_LOCATION,
                HeaderValue::from_static("http://10.0.0.7:8000/v2/a"),
            );
            assert_eq!(present(&h), [false, true], "{others}");
            h.insert(
                header::LOCATION,
                HeaderValue::from_static("http://10.0.0.7:8000/v2/b"),
            );
            assert_eq!(present(&h), [true, true], "{others}");
            localize(&backend, &mut h);
            assert_eq!(h[header::CONTENT_LOCATION], "/v2/a", "{others}");
            assert_eq!(h[header::LOCATION], "/v2/b", "{others}");
            assert_eq!(h.len(), others + 2);
        }
    }
}
