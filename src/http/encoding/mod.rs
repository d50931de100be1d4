//! Content codings: which ones a request uses and a client accepts,
//! decompressing request bodies under a byte limit (`decode`), counting
//! the decompressed size of passthrough bodies (`inflated`), and
//! compressing replies (`compress`). HTTP's `deflate` is the zlib format
//! (RFC 9110 §8.4.1.2), as Triton uses it. Work on large buffers is done a
//! step at a time or off the runtime's threads, never in one go on them.

mod compress;
mod decode;
mod inflated;

use http::HeaderMap;
use http::header;

pub use compress::{CompressBody, compress, compress_all};
pub use decode::{Decoder, InflateError, STEP};
pub use inflated::Inflated;

/// A content coding the gateway reads and writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Coding {
    Identity,
    Gzip,
    Deflate,
}

impl Coding {
    pub fn name(self) -> &'static str {
        match self {
            Coding::Identity => "identity",
            Coding::Gzip => "gzip",
            Coding::Deflate => "deflate",
        }
    }
}

/// A `Content-Encoding` the gateway cannot read (or several stacked).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unsupported Content-Encoding {encoding:?}: use gzip, deflate or identity")]
pub struct UnsupportedCoding {
    pub encoding: String,
}

/// The coding of a request body, from `Content-Encoding`. Anything but
/// gzip, deflate or identity is refused (a 415).
pub fn request_coding(headers: &HeaderMap) -> Result<Coding, UnsupportedCoding> {
    let mut coding = Coding::Identity;
    if crate::http::headers::lacks(headers, &header::CONTENT_ENCODING) {
        return Ok(coding);
    }
    for value in headers.get_all(header::CONTENT_ENCODING) {
        let text = value.to_str().unwrap_or("?");
        for token in text.split(',').map(str::trim).filter(|t| !t.is_empty()) {
            let this = match token.to_ascii_lowercase().as_str() {
                "identity" => continue,
                "gzip" | "x-gzip" => Coding::Gzip,
                "deflate" => Coding::Deflate,
                _ => {
                    return Err(UnsupportedCoding {
                        encoding: text.to_owned(),
                    });
                }
            };
            if coding != Coding::Identity {
                // Stacked codings are legal but nobody sends them.
                return Err(UnsupportedCoding {
                    encoding: text.to_owned(),
                });
            }
            coding = this;
        }
    }
    Ok(coding)
}

/// Picks a reply coding from `Accept-Encoding`: gzip, then deflate, when
/// acceptable (q > 0); identity otherwise.
pub fn negotiate(headers: &HeaderMap) -> Coding {
    // One coding without parameters (`identity`, `gzip`: what most clients
    // send) is decided without splitting the value into items and
    // parameters (measurable with scripts/bench/instructions.sh).
    let mut values = headers.get_all(header::ACCEPT_ENCODING).iter();
    if let (Some(only), None) = (values.next(), values.next())
        && let Ok(text) = only.to_str()
        && !text.bytes().any(|b| b == b',' || b == b';')
    {
        let name = text.trim();
        let is = |coding: &str| name.eq_ignore_ascii_case(coding);
        return if is("gzip") || is("x-gzip") || name == "*" {
            Coding::Gzip
        } else if is("deflate") {
            Coding::Deflate
        } else {
            Coding::Identity
        };
    }
    negotiate_items(headers)
}

/// [`negotiate`] item by item, with each item's `q`.
fn negotiate_items(headers: &HeaderMap) -> Coding {
    let mut gzip = None;
    let mut deflate = None;
    let mut star = None;
    for value in headers.get_all(header::ACCEPT_ENCODING) {
        let Ok(text) = value.to_str() else { continue };
        for item in text.split(',') {
            let mut parts = item.split(';').map(str::trim);
            // Compared without case, not lowercased into a new string.
            let name = parts.next().unwrap_or("");
            let is = |coding: &str| name.eq_ignore_ascii_case(coding);
            let slot = if is("gzip") || is("x-gzip") {
                &mut gzip
            } else if is("deflate") {
                &mut deflate
            } else if name == "*" {
                &mut star
            } else {
                continue;
            };
            let q = parts
                .filter_map(|p| p.strip_prefix("q=").or_else(|| p.strip_prefix("Q=")))
                .find_map(|q| q.trim().parse::<f32>().ok())
                .unwrap_or(1.0);
            *slot = Some(q);
        }
    }
    let ok = |q: Option<f32>| q.or(star).is_some_and(|q| q > 0.0);
    if ok(gzip) {
        Coding::Gzip
    } else if ok(deflate) {
        Coding::Deflate
    } else {
        Coding::Identity
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A single coding is decided as the items are.
    #[test]
    fn single_codings_are_decided_as_items_are() {
        for value in [
            "identity",
            "gzip",
            " GZIP ",
            "x-gzip",
            "deflate",
            "Deflate",
            "*",
            "br",
            "",
            " ",
            "gzip;q=0",
            "*;q=0",
            "deflate, gzip;q=0",
            "gzip,",
            "zstd",
            "gzip\t",
        ] {
            let h = headers("accept-encoding", value);
            assert_eq!(negotiate(&h), negotiate_items(&h), "{value:?}");
        }
        let mut two = headers("accept-encoding", "identity");
        two.append(header::ACCEPT_ENCODING, "gzip".parse().unwrap());
        assert_eq!(negotiate(&two), Coding::Gzip);
        assert_eq!(negotiate(&HeaderMap::new()), Coding::Identity);
        assert_eq!(negotiate(&headers("accept-encoding", "gzip")), Coding::Gzip);
        assert_eq!(negotiate(&headers("accept-encoding", "*")), Coding::Gzip);
        assert_eq!(
            negotiate(&headers("accept-encoding", "deflate")),
            Coding::Deflate
        );
        assert_eq!(
            negotiate(&headers("accept-encoding", "identity")),
            Coding::Identity
        );
    }

    fn headers(name: &str, value: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(
            http::HeaderName::from_bytes(name.as_bytes()).unwrap(),
            value.parse().unwrap(),
        );
        h
    }

    #[test]
    fn request_codings() {
        assert_eq!(request_coding(&HeaderMap::new()).unwrap(), Coding::Identity);
        assert_eq!(
            request_coding(&headers("content-encoding", "GZIP")).unwrap(),
            Coding::Gzip
        );
        assert_eq!(
            request_coding(&headers("content-encoding", "deflate")).unwrap(),
            Coding::Deflate
        );
        assert!(request_coding(&headers("content-encoding", "br")).is_err());
        assert!(request_coding(&headers("content-encoding", "gzip, deflate")).is_err());
    }

    #[test]
    fn negotiation() {
        assert_eq!(negotiate(&HeaderMap::new()), Coding::Identity);
        // Names without case, as before.
        assert_eq!(
            negotiate(&headers("accept-encoding", "X-GZip;Q=0.5")),
            Coding::Gzip
        );
        assert_eq!(
            negotiate(&headers("accept-encoding", "GZIP;q=0, Deflate")),
            Coding::Deflate
        );
        assert_eq!(
            negotiate(&headers("accept-encoding", "gzip, deflate")),
            Coding::Gzip
        );
        assert_eq!(
            negotiate(&headers("accept-encoding", "gzip;q=0, deflate")),
            Coding::Deflate
        );
        assert_eq!(
            negotiate(&headers("accept-encoding", "br")),
            Coding::Identity
        );
        assert_eq!(negotiate(&headers("accept-encoding", "*")), Coding::Gzip);
        assert_eq!(
            negotiate(&headers("accept-encoding", "identity")),
            Coding::Identity
        );
    }
}
