//! Header handling shared by every proxied exchange: hop-by-hop headers
//! (RFC 9110 §7.6.1) never cross the gateway.

use http::HeaderMap;
use http::header::{self, HeaderName};

/// The request id header, taken from the client or generated, sent to the
/// backend and back to the client.
pub const REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

/// Headers that describe one connection, not the message.
const HOP_BY_HOP: [HeaderName; 8] = [
    header::CONNECTION,
    HeaderName::from_static("keep-alive"),
    header::PROXY_AUTHENTICATE,
    header::PROXY_AUTHORIZATION,
    header::TE,
    header::TRAILER,
    header::TRANSFER_ENCODING,
    header::UPGRADE,
];

/// Past this many names, a hash lookup is cheaper than comparing them.
const SCAN: usize = 8;

/// Whether `headers` has no `name`, known without hashing it when they
/// are few: a lookup hashes a custom name byte by byte and probes, even
/// for a name the message does not carry (most requests carry none of the
/// gateway's own headers), where comparing a few names is cheaper.
/// Inlined, the lookup kept out of line: it is asked several times per
/// request, and as a call of its own (with the lookup's registers saved
/// and restored) it cost about as much as the comparisons (see
/// docs/PERFORMANCE.md, "What each decision bought").
#[inline(always)]
pub fn lacks(headers: &HeaderMap, name: &HeaderName) -> bool {
    if headers.keys_len() <= SCAN {
        !headers.keys().any(|k| k == name)
    } else {
        lacks_among_many(headers, name)
    }
}

#[inline(never)]
fn lacks_among_many(headers: &HeaderMap, name: &HeaderName) -> bool {
    !headers.contains_key(name)
}

/// The `Content-Length` a head declares, when it declares a usable one.
/// Most requests without a body declare none: known without a lookup.
pub fn declared_length(headers: &HeaderMap) -> Option<u64> {
    if lacks(headers, &header::CONTENT_LENGTH) {
        return None;
    }
    headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok())
}

/// Removes hop-by-hop headers, including any the `Connection` header names.
/// Most messages carry none: one pass over the names decides, without a
/// hash lookup per hop-by-hop name.
pub fn strip_hop_by_hop(headers: &mut HeaderMap) {
    let any = headers.keys().any(is_hop_by_hop);
    if !any {
        return;
    }
    let named: Vec<HeaderName> = headers
        .get_all(header::CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .filter_map(|name| HeaderName::from_bytes(name.trim().as_bytes()).ok())
        .collect();
    for name in named.iter().chain(HOP_BY_HOP.iter()) {
        headers.remove(name);
    }
    // `proxy-connection` is not standard but some clients still send it.
    headers.remove("proxy-connection");
}

/// Whether `name` is one of [`HOP_BY_HOP`] or `proxy-connection`: most
/// names are ruled out by their length alone (2, 7, 10 or 16-19 bytes
/// for these), without comparing them with nine names (every name, twice
/// per proxied request; measurable with scripts/bench/instructions.sh).
fn is_hop_by_hop(name: &HeaderName) -> bool {
    matches!(name.as_str().len(), 2 | 7 | 10 | 16..=19)
        && (HOP_BY_HOP.contains(name) || name.as_str() == "proxy-connection")
}

/// What frontends that speak to the backend on the client's behalf (not
/// V2, whose headers pass through) forward: the request id and trace
/// context, never the client's credentials or signatures.
pub fn trace_headers(client: &HeaderMap) -> HeaderMap {
    const PASSED: [HeaderName; 3] = [
        REQUEST_ID,
        HeaderName::from_static("traceparent"),
        HeaderName::from_static("tracestate"),
    ];
    let mut out = HeaderMap::new();
    for name in PASSED {
        if let Some(v) = client.get(&name) {
            out.insert(name, v.clone());
        }
    }
    out
}

/// Removes the credentials a client presented to the gateway (on a route
/// with keys the gateway consumed them: the backend never sees them).
pub fn strip_credentials(headers: &mut HeaderMap) {
    headers.remove(header::AUTHORIZATION);
    headers.remove(crate::auth::API_KEY_HEADER);
}

/// Removes the headers that describe a body the gateway rewrites. One pass
/// over the names finds those present: a removal hashes its name and
/// probes even for a name the message does not carry, four per message.
/// A map of nothing else (a backend's reply, often) is emptied whole
/// instead, keeping its allocation, which costs less than its removals
/// (measurable with scripts/bench/instructions.sh).
pub fn strip_body_headers(headers: &mut HeaderMap) {
    const BODY: [HeaderName; 4] = [
        header::CONTENT_LENGTH,
        header::CONTENT_ENCODING,
        header::CONTENT_TYPE,
        HeaderName::from_static(crate::codec::v2::framing::IHCL_HEADER),
    ];
    let mut present = [false; 4];
    let mut found = 0;
    for name in headers.keys() {
        if let Some(i) = BODY.iter().position(|b| b == name) {
            present[i] = true;
            found += 1;
        }
    }
    if found == headers.keys_len() {
        headers.clear();
        return;
    }
    for (name, present) in BODY.iter().zip(present) {
        if present {
            headers.remove(name);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strips_body_headers_and_keeps_the_rest() {
        let mut h = HeaderMap::new();
        h.insert("content-length", "12".parse().unwrap());
        h.insert("content-type", "application/json".parse().unwrap());
        h.insert("inference-header-content-length", "10".parse().unwrap());
        h.insert("x-request-id", "abc".parse().unwrap());
        h.append("accept", "a".parse().unwrap());
        h.append("accept", "b".parse().unwrap());
        strip_body_headers(&mut h);
        assert_eq!(h.len(), 3, "{h:?}");
        assert_eq!(h["x-request-id"], "abc");
        assert_eq!(h.get_all("accept").iter().count(), 2);
        h.append("content-encoding", "gzip".parse().unwrap());
        h.append("content-encoding", "br".parse().unwrap());
        strip_body_headers(&mut h);
        assert_eq!(h.len(), 3, "{h:?}");
        assert!(!h.contains_key("content-encoding"));
        let mut none = HeaderMap::new();
        strip_body_headers(&mut none);
        assert!(none.is_empty());
    }

    /// Whether the map is emptied (nothing else in it) or has the body's
    /// names removed, it ends with every other value and none of the
    /// body's.
    #[test]
    fn strips_body_headers_among_few_and_many_others() {
        for others in 0..8 {
            let mut h = HeaderMap::new();
            h.append("content-type", "application/json".parse().unwrap());
            for i in 0..others {
                let name = HeaderName::try_from(format!("x-other-{}", i % 3)).unwrap();
                h.append(name, http::HeaderValue::from(i));
                if i == 1 {
                    h.append("content-length", "7".parse().unwrap());
                    h.append("inference-header-content-length", "3".parse().unwrap());
                    h.append("content-encoding", "gzip".parse().unwrap());
                    h.append("content-encoding", "br".parse().unwrap());
                }
            }
            let expected: Vec<(String, String)> = (0..others)
                .map(|i| (format!("x-other-{}", i % 3), i.to_string()))
                .collect();
            strip_body_headers(&mut h);
            assert_eq!(h.len(), others, "{h:?}");
            for name in ["content-type", "content-length", "content-encoding"] {
                assert!(!h.contains_key(name), "{others}: {h:?}");
            }
            assert!(!h.contains_key("inference-header-content-length"));
            for i in 0..3 {
                let name = format!("x-other-{i}");
                let want: Vec<&str> = expected
                    .iter()
                    .filter(|(n, _)| *n == name)
                    .map(|(_, v)| v.as_str())
                    .collect();
                let got: Vec<&str> = h
                    .get_all(&name)
                    .iter()
                    .map(|v| v.to_str().unwrap())
                    .collect();
                assert_eq!(got, want, "{others}: {name}");
            }
        }
    }

    #[test]
    fn lacks_answers_as_a_lookup_for_few_and_many_names() {
        let hint = HeaderName::from_static("x-tensorgate-backend");
        let mut h = HeaderMap::new();
        assert!(lacks(&h, &hint));
        h.insert("host", "gw".parse().unwrap());
        h.insert("x-tensorgate-backen", "near miss".parse().unwrap());
        assert!(lacks(&h, &hint));
        assert!(!lacks(&h, &header::HOST));
        h.insert(hint.clone(), "canary".parse().unwrap());
        assert!(!lacks(&h, &hint));
        // Past the names it scans, the map is asked.
        for i in 0..12 {
            h.insert(
                HeaderName::try_from(format!("x-filler-{i}")).unwrap(),
                "1".parse().unwrap(),
            );
        }
        assert!(h.keys_len() > 8);
        assert!(!lacks(&h, &hint));
        h.remove(&hint);
        assert!(lacks(&h, &hint));
        assert!(!lacks(&h, &HeaderName::from_static("x-filler-11")));
    }

    /// The length filter lets every hop-by-hop name through, and only
    /// those are found.
    #[test]
    fn hop_by_hop_names_are_found_by_length_and_name() {
        for name in HOP_BY_HOP
            .iter()
            .chain([&HeaderName::from_static("proxy-connection")])
        {
            assert!(is_hop_by_hop(name), "{name}");
            let upper = HeaderName::from_bytes(name.as_str().to_uppercase().as_bytes()).unwrap();
            assert!(is_hop_by_hop(&upper), "{upper}");
        }
        for name in [
            "host",
            "user-agent",
            "content-location",
            "x-request-id",
            "accept-encoding",
            "tf",
            "x-keep-alive",
            "proxy-authorizatio",
            "transfer-encodings",
        ] {
            let name = HeaderName::from_bytes(name.as_bytes()).unwrap();
            assert!(!is_hop_by_hop(&name), "{name}");
        }
        let mut h = HeaderMap::new();
        h.insert("proxy-connection", "close".parse().unwrap());
        h.insert("te", "trailers".parse().unwrap());
        h.insert("user-agent", "x".parse().unwrap());
        strip_hop_by_hop(&mut h);
        assert_eq!(h.len(), 1, "{h:?}");
        assert_eq!(h["user-agent"], "x");
    }

    #[test]
    fn strips_listed_and_standard_hop_headers() {
        let mut h = HeaderMap::new();
        h.insert("connection", "keep-alive, X-Secret".parse().unwrap());
        h.insert("x-secret", "1".parse().unwrap());
        h.insert("keep-alive", "timeout=5".parse().unwrap());
        h.insert("transfer-encoding", "chunked".parse().unwrap());
        h.insert("x-request-id", "abc".parse().unwrap());
        strip_hop_by_hop(&mut h);
        assert_eq!(h.len(), 1);
        assert_eq!(h["x-request-id"], "abc");
    }
}
