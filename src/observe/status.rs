//! The `code` label of a request's status.

/// Status recorded for requests the client abandoned before the response.
pub const CLIENT_CLOSED: u16 = 499;

/// The `code` label: exact for the statuses the gateway and V2 backends
/// produce, the class (`"5xx"`) for anything else a backend may send, so
/// a backend cannot create label values.
pub fn status_label(status: u16) -> &'static str {
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
    if let Ok(i) = KNOWN.binary_search_by_key(&status, |k| k.0) {
        return KNOWN[i].1;
    }
    match status / 100 {
        1 => "1xx",
        2 => "2xx",
        3 => "3xx",
        4 => "4xx",
        _ => "5xx",
    }
}
