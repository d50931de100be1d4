//! Content codings over HTTP: which one a request uses (`Content-Encoding`)
//! and a client accepts (`Accept-Encoding`), counting the decompressed
//! size of passthrough bodies (`inflated`), and compressing streamed
//! replies (`compress`). The codings themselves (decompressing under a
//! byte limit, compressing whole buffers) are the codec crate's
//! [`crate::codec::coding`], re-exported here beside the header and body
//! parts. Work on large buffers is done a step at a time or off the
//! runtime's threads, never in one go on them.

mod compress;
mod inflated;

use http::HeaderMap;
use http::header;

pub use crate::codec::coding::{
    Coding, Decoder, InflateError, STEP, UnsupportedCoding, compress, compress_all,
};
pub use compress::CompressBody;
pub use inflated::Inflated;

/// The coding of a request body, from `Content-Encoding`. Anything but
/// gzip, deflate or identity is refused (a 415).
pub fn request_coding(headers: &HeaderMap) -> Result<Coding, UnsupportedCoding> {
    if crate::http::headers::lacks(headers, &header::CONTENT_ENCODING) {
        return Ok(Coding::Identity);
    }
    let values = headers.get_all(header::CONTENT_ENCODING).iter();
    Coding::of_content_encoding(values.map(http::HeaderValue::as_bytes))
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
