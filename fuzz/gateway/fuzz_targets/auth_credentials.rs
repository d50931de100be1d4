//! Credentials as the gateway reads them, without the network: a key file
//! (mode byte 0), or request headers (`name: value` lines, then a blank
//! line and the body) read as presented credentials, a presented key
//! looked up, a SigV4 `Authorization` parsed and verified over the body.
//! Nothing may panic; every refusal is an error value.
#![no_main]

use std::path::Path;
use std::sync::OnceLock;

use http::{HeaderMap, HeaderName, HeaderValue};
use libfuzzer_sys::fuzz_target;
use tensorgate::auth::keys::digest;
use tensorgate::auth::sigv4::{self, Authorization, Signed};
use tensorgate::auth::{KeySet, Presented, presented};

fn keys() -> &'static KeySet {
    static KEYS: OnceLock<KeySet> = OnceLock::new();
    KEYS.get_or_init(|| {
        KeySet::parse(b"alice:aaaaaaaaaaaaaaaa\n", Path::new("fuzz"), true).unwrap()
    })
}

fn headers(head: &[u8]) -> HeaderMap {
    let mut map = HeaderMap::new();
    for line in head.split(|&b| b == b'\n') {
        let Some(colon) = line.iter().position(|&b| b == b':') else {
            continue;
        };
        let (name, value) = (&line[..colon], line[colon + 1..].trim_ascii());
        if let (Ok(n), Ok(v)) = (HeaderName::from_bytes(name), HeaderValue::from_bytes(value)) {
            map.append(n, v);
        }
    }
    map
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    if mode == 0 {
        let _ = KeySet::parse(rest, Path::new("fuzz"), true);
        return;
    }
    let split = rest.windows(2).position(|w| w == b"\n\n");
    let (head, body) = match split {
        Some(i) => (&rest[..i], &rest[i + 2..]),
        None => (rest, &[][..]),
    };
    let headers = headers(head);
    match presented(&headers) {
        Presented::Key(k) => {
            let _ = keys().find(k);
        }
        Presented::SigV4(value) => {
            let Ok(auth) = Authorization::parse(value) else {
                return;
            };
            let payload = digest(body);
            let signed = Signed {
                method: "POST",
                path: "/endpoints/e/invocations",
                query: "b=2&a",
                headers: &headers,
                authority: Some("127.0.0.1:8000"),
                payload: &payload,
            };
            let secret = keys().secret(&auth.access_key).map_or(&b"x"[..], |(_, s)| s);
            let _ = sigv4::verify(&auth, &signed, secret, 1_768_469_400);
        }
        Presented::Nothing | Presented::Unreadable(_) => {}
    }
});
