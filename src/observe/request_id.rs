//! The request id: the trace id of a request whose trace is recorded (so
//! the access log, the backend and the client all name the trace);
//! otherwise the client's `x-request-id` when it sends a usable one, else
//! a new one, unique per process run and not guessable across runs.

use std::sync::atomic::{AtomicU64, Ordering};

use http::{HeaderMap, HeaderValue};

use crate::http::headers::{REQUEST_ID, lacks};
use crate::trace::{Attribute, CLIENT_REQUEST_ID, Trace};

/// Returns the client's request id, or sets a new one.
pub fn ensure_request_id(headers: &mut HeaderMap) -> HeaderValue {
    ensure_request_id_made(headers).0
}

/// [`ensure_request_id`], and whether the id is a new one (32 hex digits:
/// written in the access log as it is, without a scan).
pub fn ensure_request_id_made(headers: &mut HeaderMap) -> (HeaderValue, bool) {
    if !lacks(headers, &REQUEST_ID)
        && let Some(v) = headers.get(&REQUEST_ID)
        && !v.is_empty()
        && v.len() <= 200
    {
        return (v.clone(), false);
    }
    let id = new_request_id();
    headers.insert(REQUEST_ID, id.clone());
    (id, true)
}

/// The request id of a request whose trace is recorded: its trace id,
/// set as `x-request-id` for the backend. A different id the client sent
/// goes on the request's span (`tensorgate.client_request_id`).
pub fn traced_request_id(headers: &mut HeaderMap, trace: &Trace) -> HeaderValue {
    let id = trace.request_id();
    if let Some(own) = headers.get(&REQUEST_ID).filter(|v| **v != id)
        && let Ok(text) = own.to_str()
    {
        let text: String = text.chars().take(200).collect();
        trace.set_attributes([Attribute::new(CLIENT_REQUEST_ID, text)]);
    }
    headers.insert(REQUEST_ID, id.clone());
    id
}

/// 32 hex digits, unique per process run and not guessable across runs: a
/// counter mixed (a bijection, so no two ids of a run collide) with two
/// per-process random keys.
fn new_request_id() -> HeaderValue {
    use std::hash::{BuildHasher, Hasher};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    static KEYS: std::sync::OnceLock<(u64, u64)> = std::sync::OnceLock::new();
    let (k1, k2) = *KEYS.get_or_init(|| {
        let random = std::collections::hash_map::RandomState::new();
        let mut h = random.build_hasher();
        h.write_u32(std::process::id());
        let a = h.finish();
        h.write_u64(a);
        (a, h.finish())
    });
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let mut text = [0u8; 32];
    hex(&mut text[..16], mix(n ^ k1));
    hex(&mut text[16..], mix(n.wrapping_add(k2)));
    // Owned by its `Bytes` (one allocation, shared by reference count): a
    // copied slice is a second allocation the first time it is cloned,
    // and the id is cloned for the request's head, its observation and
    // the reply.
    HeaderValue::from_maybe_shared(bytes::Bytes::from_owner(text))
        .unwrap_or(HeaderValue::from_static("0"))
}

/// splitmix64's finaliser: a bijection on u64 that scrambles every bit.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// `v` as 16 lowercase hex digits into `out`, a byte (two digits) at a
/// time.
fn hex(out: &mut [u8], v: u64) {
    const PAIRS: [[u8; 2]; 256] = {
        const DIGITS: &[u8; 16] = b"0123456789abcdef";
        let mut t = [[0u8; 2]; 256];
        let mut i = 0;
        while i < 256 {
            t[i] = [DIGITS[i >> 4], DIGITS[i & 15]];
            i += 1;
        }
        t
    };
    for (pair, byte) in out.chunks_exact_mut(2).zip(v.to_be_bytes()) {
        pair.copy_from_slice(&PAIRS[usize::from(byte)]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_digits() {
        for v in [
            0,
            1,
            0xff,
            0x0123_4567_89ab_cdef,
            u64::MAX,
            0xfedc_ba98_7654_3210,
        ] {
            let mut out = [0u8; 16];
            hex(&mut out, v);
            assert_eq!(std::str::from_utf8(&out).unwrap(), format!("{v:016x}"));
        }
    }

    #[test]
    fn request_ids_are_distinct_hex() {
        let mut seen = std::collections::HashSet::new();
        for _ in 0..100_000 {
            let id = new_request_id();
            let text = id.to_str().unwrap().to_owned();
            assert_eq!(text.len(), 32);
            assert!(
                text.bytes()
                    .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
            );
            assert!(seen.insert(text), "duplicate id");
        }
        let mut h = HeaderMap::new();
        h.insert("x-request-id", HeaderValue::from_static("client-id"));
        assert_eq!(ensure_request_id(&mut h), "client-id");
        // Only a made id is said to be made (a client's is scanned).
        assert_eq!(
            ensure_request_id_made(&mut h),
            ("client-id".parse().unwrap(), false)
        );
        let mut h = HeaderMap::new();
        let (id, made) = ensure_request_id_made(&mut h);
        assert!(made);
        assert_eq!(h.get("x-request-id"), Some(&id));
    }
}
