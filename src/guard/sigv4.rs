//! SigV4 on the SageMaker Runtime API path. The head is checked first
//! ([`Claim::new`]: the access key id names one of the route's keys, the
//! timestamp is within 15 minutes), so a stale or unknown signature is
//! refused before the body is read; the signature itself covers the body's
//! SHA-256, so it is verified once the whole body is in
//! ([`Claim::verify`]). The key is held whole for this (HMAC signs with
//! it), and only on routes where SigV4 is on.

use std::sync::Arc;

use http::request::Parts;

use super::AuthProblem;
use crate::auth::KeySet;
use crate::auth::keys::Digest;
use crate::auth::sigv4::{self, Authorization, Signed};

/// A SigV4 signature whose head checked out, to verify over the body.
#[derive(Debug)]
pub struct Claim {
    auth: Authorization,
    key: Arc<str>,
    keys: Arc<KeySet>,
    /// When the head was checked: the timestamp is judged as of then, not
    /// after a long upload.
    at: i64,
}

impl Claim {
    /// Checks the `Authorization` `value` of a request with `headers`
    /// against `keys` at `now`.
    pub fn new(
        keys: &Arc<KeySet>,
        value: &str,
        headers: &http::HeaderMap,
        now: i64,
    ) -> Result<Claim, AuthProblem> {
        let auth = Authorization::parse(value).map_err(AuthProblem::SigV4)?;
        let (name, _) = keys
            .secret(&auth.access_key)
            .ok_or(AuthProblem::UnknownAccessKey)?;
        let key = name.clone();
        auth.check_time(headers, now).map_err(AuthProblem::SigV4)?;
        Ok(Claim {
            auth,
            key,
            keys: keys.clone(),
            at: now,
        })
    }

    /// The name of the key that signed.
    pub fn key(&self) -> &Arc<str> {
        &self.key
    }

    /// Verifies the signature over the request head `parts` and the SHA-256
    /// of its body as received.
    pub fn verify(&self, parts: &Parts, payload: &Digest) -> Result<(), AuthProblem> {
        let (_, secret) = self
            .keys
            .secret(&self.auth.access_key)
            .ok_or(AuthProblem::UnknownAccessKey)?;
        let signed = Signed {
            method: parts.method.as_str(),
            path: parts.uri.path(),
            query: parts.uri.query().unwrap_or(""),
            headers: &parts.headers,
            authority: parts.uri.authority().map(|a| a.as_str()),
            payload,
        };
        sigv4::verify(&self.auth, &signed, secret, self.at).map_err(AuthProblem::SigV4)
    }
}
