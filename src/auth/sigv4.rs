//! AWS Signature Version 4, verified the way AWS verifies it: the
//! `Authorization: AWS4-HMAC-SHA256 Credential=ID/DATE/REGION/SERVICE/aws4_request,
//! SignedHeaders=..., Signature=...` header is parsed ([`Authorization`]),
//! the canonical request rebuilt from the request as received ([`Signed`]),
//! the string to sign and the signing key chain (HMAC-SHA256) computed with
//! the secret, and the signatures compared in constant time.
//!
//! The canonical request is built exactly as botocore builds it (the client
//! whose requests must verify): the path with dot segments and empty
//! segments removed, then percent-encoded again except `A-Z a-z 0-9 - _ . ~ /`
//! (so `%` becomes `%25`); the query's `key=value` pairs as sent, sorted;
//! each signed header as `name:value` with its values trimmed, runs of
//! spaces collapsed and repeated headers joined by `,`; the signed header
//! names; and the payload's hex SHA-256 (`X-Amz-Content-SHA256` when sent,
//! which must then be that same hash: unsigned payloads are refused).
//! Timestamps more than 15 minutes away from now are refused, as AWS does.

use std::fmt::Write as _;

use hmac::{Hmac, Mac};
use http::HeaderMap;
use sha2::Sha256;
use subtle::ConstantTimeEq;

use super::AuthFailure;
use super::amzdate;
use super::keys::{Digest, digest};

/// The only algorithm AWS signs requests with.
pub const ALGORITHM: &str = "AWS4-HMAC-SHA256";
/// How far a request's timestamp may be from now, either way.
pub const MAX_SKEW_SECS: i64 = 15 * 60;
/// The header carrying the timestamp.
pub const AMZ_DATE: &str = "x-amz-date";
/// The header carrying the payload's hash (optional for most services).
pub const CONTENT_SHA256: &str = "x-amz-content-sha256";
/// Most signed headers accepted.
const MAX_SIGNED_HEADERS: usize = 64;

/// Why a SigV4 request is refused. Messages never hold the secret or the
/// signatures.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SigV4Error {
    #[error(
        "the Authorization header is not \"AWS4-HMAC-SHA256 Credential=..., SignedHeaders=..., Signature=...\": {what}"
    )]
    Malformed { what: &'static str },
    #[error("X-Amz-Date is missing or not of the form YYYYMMDDTHHMMSSZ")]
    NoDate,
    #[error("the credential's date {credential} is not the date of X-Amz-Date {date}")]
    DateMismatch { credential: String, date: String },
    #[error("Signature expired: {signed} is now earlier than {earliest} ({now} - 15 min.)")]
    Expired {
        signed: String,
        earliest: String,
        now: String,
    },
    #[error("Signature not yet current: {signed} is still later than {latest} ({now} + 15 min.)")]
    Early {
        signed: String,
        latest: String,
        now: String,
    },
    #[error("the signed headers must include host and x-amz-date")]
    HostNotSigned,
    #[error("signed header {name:?} is not in the request")]
    MissingSignedHeader { name: String },
    #[error("unsigned payloads are not accepted: sign the payload's SHA-256")]
    UnsignedPayload,
    #[error("the request body does not match X-Amz-Content-SHA256")]
    PayloadMismatch,
    #[error(
        "The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method."
    )]
    Mismatch,
}

impl SigV4Error {
    /// The `reason` label of the failure.
    pub fn failure(&self) -> AuthFailure {
        match self {
            SigV4Error::Malformed { .. } | SigV4Error::NoDate | SigV4Error::HostNotSigned => {
                AuthFailure::Invalid
            }
            SigV4Error::Expired { .. } | SigV4Error::Early { .. } => AuthFailure::Expired,
            _ => AuthFailure::Signature,
        }
    }
}

/// Whether an `Authorization` value claims SigV4.
pub fn is_sigv4(value: &[u8]) -> bool {
    value.len() > ALGORITHM.len()
        && value.starts_with(ALGORITHM.as_bytes())
        && value[ALGORITHM.len()] == b' '
}

/// A parsed SigV4 `Authorization` header.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Authorization {
    /// The access key id: for tensorgate, the key's name.
    pub access_key: String,
    /// `YYYYMMDD`.
    pub date: String,
    pub region: String,
    pub service: String,
    pub signed_headers: Vec<String>,
    pub signature: [u8; 32],
}

fn malformed(what: &'static str) -> SigV4Error {
    SigV4Error::Malformed { what }
}

impl Authorization {
    /// Parses `AWS4-HMAC-SHA256 Credential=..., SignedHeaders=..., Signature=...`.
    pub fn parse(value: &str) -> Result<Authorization, SigV4Error> {
        let rest = value
            .strip_prefix(ALGORITHM)
            .filter(|r| r.starts_with(' '))
            .ok_or(malformed("not AWS4-HMAC-SHA256"))?;
        let (mut credential, mut signed, mut signature) = (None, None, None);
        for part in rest.split(',') {
            let (name, v) = part
                .trim()
                .split_once('=')
                .ok_or(malformed("a part without '='"))?;
            let slot = match name {
                "Credential" => &mut credential,
                "SignedHeaders" => &mut signed,
                "Signature" => &mut signature,
                _ => return Err(malformed("an unknown part")),
            };
            if slot.replace(v).is_some() {
                return Err(malformed("a part given twice"));
            }
        }
        let credential = credential.ok_or(malformed("no Credential"))?;
        let scope: Vec<&str> = credential.split('/').collect();
        let [access_key, date, region, service, "aws4_request"] = scope.as_slice() else {
            return Err(malformed(
                "Credential is not ID/DATE/REGION/SERVICE/aws4_request",
            ));
        };
        let nonempty = [access_key, region, service].iter().all(|s| !s.is_empty());
        if !nonempty || date.len() != 8 || !date.bytes().all(|b| b.is_ascii_digit()) {
            return Err(malformed(
                "Credential is not ID/DATE/REGION/SERVICE/aws4_request",
            ));
        }
        let signed_headers: Vec<String> = signed
            .ok_or(malformed("no SignedHeaders"))?
            .split(';')
            .map(str::to_owned)
            .collect();
        let header_name = |h: &String| {
            !h.is_empty()
                && h.bytes()
                    .all(|b| b.is_ascii_graphic() && !b.is_ascii_uppercase())
        };
        if signed_headers.len() > MAX_SIGNED_HEADERS || !signed_headers.iter().all(header_name) {
            return Err(malformed(
                "SignedHeaders is not a list of lowercase header names",
            ));
        }
        let signature = signature
            .and_then(unhex32)
            .ok_or(malformed("Signature is not 64 hex digits"))?;
        Ok(Authorization {
            access_key: (*access_key).to_owned(),
            date: (*date).to_owned(),
            region: (*region).to_owned(),
            service: (*service).to_owned(),
            signed_headers,
            signature,
        })
    }

    /// `DATE/REGION/SERVICE/aws4_request`.
    pub fn scope(&self) -> String {
        format!(
            "{}/{}/{}/aws4_request",
            self.date, self.region, self.service
        )
    }

    /// The checks that need no body and no secret: the timestamp is there,
    /// matches the credential's date and is within 15 minutes of `now`
    /// (seconds since the epoch); `host` and `x-amz-date` are signed.
    /// Returns the timestamp.
    pub fn check_time<'h>(&self, headers: &'h HeaderMap, now: i64) -> Result<&'h str, SigV4Error> {
        let stamp = headers
            .get(AMZ_DATE)
            .and_then(|v| v.to_str().ok())
            .ok_or(SigV4Error::NoDate)?;
        let signed_at = amzdate::parse(stamp).ok_or(SigV4Error::NoDate)?;
        let signs = |h: &str| self.signed_headers.iter().any(|s| s == h);
        if !signs("host") || !signs(AMZ_DATE) {
            return Err(SigV4Error::HostNotSigned);
        }
        if stamp[..8] != self.date {
            return Err(SigV4Error::DateMismatch {
                credential: self.date.clone(),
                date: stamp.to_owned(),
            });
        }
        if signed_at < now - MAX_SKEW_SECS {
            return Err(SigV4Error::Expired {
                signed: stamp.to_owned(),
                earliest: amzdate::format(now - MAX_SKEW_SECS),
                now: amzdate::format(now),
            });
        }
        if signed_at > now + MAX_SKEW_SECS {
            return Err(SigV4Error::Early {
                signed: stamp.to_owned(),
                latest: amzdate::format(now + MAX_SKEW_SECS),
                now: amzdate::format(now),
            });
        }
        Ok(stamp)
    }
}

/// A request as the client signed it.
#[derive(Clone, Copy, Debug)]
pub struct Signed<'a> {
    pub method: &'a str,
    /// The path as received (still percent-encoded).
    pub path: &'a str,
    /// The query as received, without `?` (empty when none).
    pub query: &'a str,
    pub headers: &'a HeaderMap,
    /// The host when there is no `Host` header (HTTP/2's `:authority`).
    pub authority: Option<&'a str>,
    /// SHA-256 of the body as received.
    pub payload: &'a Digest,
}

/// Verifies `auth` over `req` with `secret`, at `now` (seconds since the
/// epoch).
pub fn verify(
    auth: &Authorization,
    req: &Signed<'_>,
    secret: &[u8],
    now: i64,
) -> Result<(), SigV4Error> {
    let stamp = auth.check_time(req.headers, now)?;
    let canonical = canonical_request(req, &auth.signed_headers)?;
    let to_sign = string_to_sign(stamp, &auth.scope(), &canonical);
    // HMAC takes keys of any length, so these are never `None`; if they
    // were, the request would be refused, never let through.
    let expected = signing_key(secret, &auth.date, &auth.region, &auth.service)
        .and_then(|key| signature(&key, &to_sign))
        .ok_or(SigV4Error::Mismatch)?;
    if bool::from(expected.ct_eq(&auth.signature)) {
        Ok(())
    } else {
        Err(SigV4Error::Mismatch)
    }
}

/// The canonical request of `req` over `signed` headers.
pub fn canonical_request(req: &Signed<'_>, signed: &[String]) -> Result<String, SigV4Error> {
    let mut out = String::with_capacity(256);
    out.push_str(&req.method.to_ascii_uppercase());
    out.push('\n');
    encode_path(&normalize_path(req.path), &mut out);
    out.push('\n');
    out.push_str(&canonical_query(req.query));
    out.push('\n');
    for name in signed {
        out.push_str(name);
        out.push(':');
        canonical_value(req, name, &mut out)?;
        out.push('\n');
    }
    out.push('\n');
    out.push_str(&signed.join(";"));
    out.push('\n');
    out.push_str(&payload_hash(req)?);
    Ok(out)
}

/// `name`'s values trimmed, inner runs of spaces collapsed, joined by `,`.
fn canonical_value(req: &Signed<'_>, name: &str, out: &mut String) -> Result<(), SigV4Error> {
    let mut values = req
        .headers
        .get_all(name)
        .iter()
        .map(|v| v.as_bytes())
        .peekable();
    let authority = req.authority.map(str::as_bytes);
    let fallback = (name == "host" && values.peek().is_none())
        .then_some(authority)
        .flatten();
    let mut any = false;
    for value in values.chain(fallback) {
        if any {
            out.push(',');
        }
        any = true;
        let text = String::from_utf8_lossy(value);
        let mut words = text.split_ascii_whitespace();
        if let Some(first) = words.next() {
            out.push_str(first);
            for w in words {
                out.push(' ');
                out.push_str(w);
            }
        }
    }
    if !any {
        return Err(SigV4Error::MissingSignedHeader {
            name: name.to_owned(),
        });
    }
    Ok(())
}

fn payload_hash(req: &Signed<'_>) -> Result<String, SigV4Error> {
    let computed = hex(req.payload);
    match req.headers.get(CONTENT_SHA256).map(|v| v.as_bytes()) {
        None => Ok(computed),
        Some(v) if v.eq_ignore_ascii_case(computed.as_bytes()) => {
            Ok(String::from_utf8_lossy(v).into_owned())
        }
        Some(v) if v.starts_with(b"UNSIGNED-PAYLOAD") || v.starts_with(b"STREAMING-") => {
            Err(SigV4Error::UnsignedPayload)
        }
        Some(_) => Err(SigV4Error::PayloadMismatch),
    }
}

/// RFC 3986 dot-segment removal, empty segments dropped too (botocore's
/// `normalize_url_path`).
fn normalize_path(path: &str) -> String {
    if path.is_empty() {
        return "/".to_owned();
    }
    let mut kept: Vec<&str> = Vec::new();
    for seg in path.split('/') {
        match seg {
            "" | "." => {}
            ".." => {
                kept.pop();
            }
            s => kept.push(s),
        }
    }
    let mut out = String::with_capacity(path.len());
    if path.starts_with('/') {
        out.push('/');
    }
    out.push_str(&kept.join("/"));
    if path.ends_with('/') && !kept.is_empty() {
        out.push('/');
    }
    out
}

fn unreserved(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~')
}

/// Percent-encodes every byte but unreserved ones and `/`.
fn encode_path(path: &str, out: &mut String) {
    for b in path.bytes() {
        if unreserved(b) || b == b'/' {
            out.push(b as char);
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
}

/// The query's `key=value` pairs as sent, sorted by key then value.
fn canonical_query(query: &str) -> String {
    if query.is_empty() {
        return String::new();
    }
    let mut pairs: Vec<(&str, &str)> = query
        .split('&')
        .map(|p| p.split_once('=').unwrap_or((p, "")))
        .collect();
    pairs.sort_unstable();
    let joined: Vec<String> = pairs.iter().map(|(k, v)| format!("{k}={v}")).collect();
    joined.join("&")
}

/// `AWS4-HMAC-SHA256`, the timestamp, the scope and the canonical
/// request's hash, one per line.
pub fn string_to_sign(stamp: &str, scope: &str, canonical: &str) -> String {
    format!(
        "{ALGORITHM}\n{stamp}\n{scope}\n{}",
        hex(&digest(canonical.as_bytes()))
    )
}

/// The signing key: HMAC-SHA256 chained over the date, region, service and
/// `aws4_request`, starting from `AWS4` + the secret.
pub fn signing_key(secret: &[u8], date: &str, region: &str, service: &str) -> Option<[u8; 32]> {
    let mut k = Vec::with_capacity(secret.len() + 4);
    k.extend_from_slice(b"AWS4");
    k.extend_from_slice(secret);
    let mut key = hmac(&k, date.as_bytes())?;
    for part in [region, service, "aws4_request"] {
        key = hmac(&key, part.as_bytes())?;
    }
    Some(key)
}

/// The signature of `to_sign` with a signing key.
pub fn signature(key: &[u8; 32], to_sign: &str) -> Option<[u8; 32]> {
    hmac(key, to_sign.as_bytes())
}

fn hmac(key: &[u8], msg: &[u8]) -> Option<[u8; 32]> {
    let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(key).ok()?;
    mac.update(msg);
    Some(mac.finalize().into_bytes().into())
}

/// Lowercase hex.
pub fn hex(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(out, "{b:02x}");
    }
    out
}

fn unhex32(text: &str) -> Option<[u8; 32]> {
    let b = text.as_bytes();
    if b.len() != 64 {
        return None;
    }
    let nibble = |c: u8| (c as char).to_digit(16).map(|d| d as u8);
    let mut out = [0u8; 32];
    for (i, pair) in b.chunks_exact(2).enumerate() {
        out[i] = nibble(pair[0])? << 4 | nibble(pair[1])?;
    }
    Some(out)
}

#[cfg(test)]
mod tests;
