//! The `code` label of a request's status.

/// Status recorded for requests the client abandoned before the response.
pub const CLIENT_CLOSED: u16 = 499;

/// The `code` label: exact for the statuses the gateway and V2 backends
/// produce, the class (`"5xx"`) for anything else a backend may send, so
/// a backend cannot create label values.
pub fn status_label(status: u16) -> &'static str {
    status_code(status).1
}

/// The `code` label of `status` and its index, below
/// [`crate::metrics::CODES`]: the series of a route are kept by it.
pub(super) fn status_code(status: u16) -> (usize, &'static str) {
    const KNOWN: [(u16, &str); 26] = [
        (200, "200"),
        (201, "201"),
        (204, "204"),
        (206, "206"),
        (304, "304"),
        (400, "400"),
        (401, "401"),
        (403, "403"),
        (404, "404"),
        (405, "405"),
        (406, "406"),
        (408, "408"),
        (409, "409"),
        (413, "413"),
        (415, "415"),
        (422, "422"),
        (424, "424"),
        (429, "429"),
        (499, "499"),
        (500, "500"),
        (501, "501"),
        (502, "502"),
        (503, "503"),
        (504, "504"),
        (507, "507"),
        (511, "511"),
    ];
    const CLASSES: [&str; 5] = ["1xx", "2xx", "3xx", "4xx", "5xx"];
    const _: () = assert!(KNOWN.len() + CLASSES.len() == crate::metrics::CODES);
    if let Ok(i) = KNOWN.binary_search_by_key(&status, |k| k.0) {
        return (i, KNOWN[i].1);
    }
    let class = match status / 100 {
        1 => 0,
        2 => 1,
        3 => 2,
        4 => 3,
        _ => 4,
    };
    (KNOWN.len() + class, CLASSES[class])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each `code` label has one index below `CODES`, and each index one
    /// label: the per-route series are kept by the index.
    #[test]
    fn code_indexes_are_one_per_label() {
        let mut by_index: Vec<Option<&str>> = vec![None; crate::metrics::CODES];
        for status in 100..=599 {
            let (i, label) = status_code(status);
            assert_eq!(label, status_label(status));
            let seen = by_index[i].get_or_insert(label);
            assert_eq!(*seen, label, "index {i} of {status}");
        }
        assert!(by_index.iter().all(Option::is_some), "{by_index:?}");
        assert_eq!(status_code(200), (0, "200"));
        assert_eq!(status_code(299).1, "2xx");
        assert_eq!(status_code(600).1, "5xx");
    }
}
