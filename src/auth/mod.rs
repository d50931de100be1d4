//! Who a request is: API keys read from key files and held as digests,
//! what a request presents (`Authorization: Bearer KEY`, `x-api-key: KEY`
//! or an AWS SigV4 signature), and SigV4 verification.
//!
//! Plain functions over bytes, strings and header maps: no sockets, no
//! tokio, no hyper (key files are the only I/O). Nothing here logs,
//! formats or returns a key, a digest or a signature; errors name files,
//! lines and (once a key matched) key names only.

pub mod amzdate;
pub mod keys;
pub mod sigv4;

use http::HeaderMap;
use http::header::AUTHORIZATION;

pub use keys::{KeyFileError, KeySet};

/// The header API keys may come in besides `Authorization: Bearer`.
pub const API_KEY_HEADER: &str = "x-api-key";

/// Why a request was refused, as the `reason` label of
/// `tensorgate_auth_failures_total`: a fixed set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AuthFailure {
    /// No credentials at all.
    Missing,
    /// Credentials that match no key, or that cannot be read.
    Invalid,
    /// A SigV4 signature that does not verify.
    Signature,
    /// A SigV4 timestamp more than 15 minutes from now.
    Expired,
}

impl AuthFailure {
    pub const ALL: [AuthFailure; 4] = [
        AuthFailure::Missing,
        AuthFailure::Invalid,
        AuthFailure::Signature,
        AuthFailure::Expired,
    ];

    pub const fn label(self) -> &'static str {
        match self {
            AuthFailure::Missing => "missing",
            AuthFailure::Invalid => "invalid",
            AuthFailure::Signature => "signature",
            AuthFailure::Expired => "expired",
        }
    }
}

/// The credentials a request carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Presented<'a> {
    /// None at all.
    Nothing,
    /// An API key (`x-api-key`, else `Authorization: Bearer`).
    Key(&'a [u8]),
    /// An `Authorization: AWS4-HMAC-SHA256 ...` value.
    SigV4(&'a str),
    /// Headers that cannot be read as one credential.
    Unreadable(&'static str),
}

/// Reads the credentials of `headers`: `x-api-key` wins over
/// `Authorization` (unless both hold keys, and different ones);
/// `Authorization` is read as `Bearer KEY` (scheme in any case) or SigV4.
pub fn presented(headers: &HeaderMap) -> Presented<'_> {
    let one = |name| {
        let mut all = headers.get_all(name).iter();
        match (all.next(), all.next()) {
            (first, None) => Ok(first.map(|v| v.as_bytes())),
            _ => Err(()),
        }
    };
    let Ok(authorization) = one(AUTHORIZATION.as_str()) else {
        return Presented::Unreadable("several Authorization headers");
    };
    let Ok(api_key) = one(API_KEY_HEADER) else {
        return Presented::Unreadable("several x-api-key headers");
    };
    let bearer = authorization.and_then(bearer_token);
    match (authorization, bearer, api_key) {
        (_, Some(b), Some(k)) if b != k.trim_ascii() => {
            Presented::Unreadable("Authorization and x-api-key hold different keys")
        }
        (_, _, Some(k)) => Presented::Key(k.trim_ascii()),
        (_, Some(b), None) => Presented::Key(b),
        (Some(v), None, None) if sigv4::is_sigv4(v) => match std::str::from_utf8(v) {
            Ok(text) => Presented::SigV4(text),
            Err(_) => Presented::Unreadable("an Authorization header that is not text"),
        },
        (Some(_), None, None) => {
            Presented::Unreadable("an Authorization scheme other than Bearer (or AWS4-HMAC-SHA256)")
        }
        (None, None, None) => Presented::Nothing,
    }
}

/// The token of `Bearer TOKEN` (scheme case-insensitive, spaces around the
/// token ignored); `None` for other schemes or an empty token.
fn bearer_token(value: &[u8]) -> Option<&[u8]> {
    const SCHEME: &[u8] = b"bearer ";
    let head = value.get(..SCHEME.len())?;
    if !head.eq_ignore_ascii_case(SCHEME) {
        return None;
    }
    let token = value[SCHEME.len()..].trim_ascii();
    (!token.is_empty()).then_some(token)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(headers: &[(&str, &str)], expected: Presented<'_>) {
        let mut map = HeaderMap::new();
        for (k, v) in headers {
            map.append(
                http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                v.parse().unwrap(),
            );
        }
        assert_eq!(presented(&map), expected, "{headers:?}");
    }

    #[test]
    fn what_requests_present() {
        check(&[], Presented::Nothing);
        check(&[("authorization", "Bearer k1")], Presented::Key(b"k1"));
        check(&[("authorization", "bearer   k1 ")], Presented::Key(b"k1"));
        check(&[("x-api-key", " k2 ")], Presented::Key(b"k2"));
        check(
            &[("authorization", "Bearer k2"), ("x-api-key", "k2")],
            Presented::Key(b"k2"),
        );
        check(
            &[("authorization", "Bearer k1"), ("x-api-key", "k2")],
            Presented::Unreadable("Authorization and x-api-key hold different keys"),
        );
        // x-api-key beside a signature or another scheme: the key counts.
        check(
            &[("authorization", "Basic dTpw"), ("x-api-key", "k2")],
            Presented::Key(b"k2"),
        );
        let sig = "AWS4-HMAC-SHA256 Credential=a/20260101/r/s/aws4_request, SignedHeaders=host, Signature=00";
        check(&[("authorization", sig)], Presented::SigV4(sig));
        check(
            &[("authorization", sig), ("x-api-key", "k2")],
            Presented::Key(b"k2"),
        );
        check(
            &[("authorization", "Basic dTpw")],
            Presented::Unreadable(
                "an Authorization scheme other than Bearer (or AWS4-HMAC-SHA256)",
            ),
        );
        check(
            &[("authorization", "Bearer ")],
            Presented::Unreadable(
                "an Authorization scheme other than Bearer (or AWS4-HMAC-SHA256)",
            ),
        );
        check(
            &[("authorization", "Bearer a"), ("authorization", "Bearer a")],
            Presented::Unreadable("several Authorization headers"),
        );
        check(
            &[("x-api-key", "a"), ("x-api-key", "b")],
            Presented::Unreadable("several x-api-key headers"),
        );
    }

    #[test]
    fn failure_labels_are_a_fixed_set() {
        let labels: Vec<&str> = AuthFailure::ALL.iter().map(|f| f.label()).collect();
        assert_eq!(labels, ["missing", "invalid", "signature", "expired"]);
    }
}
