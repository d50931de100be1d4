//! The origin-form request targets of HTTP/1 replicas (`/prefix/path?query`),
//! kept per thread for reuse. Making a target parses the client's path and
//! query and copies it into a new buffer, for every request (see
//! docs/PERFORMANCE.md, "What each decision bought"); the same few paths
//! come again and again (a model's `infer`, the health and metadata
//! paths), so each thread keeps the last targets it made and hands out a
//! copy of one whose text is the one asked for — which shares its buffer.
//! A kept target is the parse of exactly that text, so what is sent is
//! what a new parse would have made, byte for byte; a text not kept is
//! parsed as before.

use std::cell::RefCell;

use http::Uri;

/// Targets kept per thread: a worker serving several models or paths
/// finds each of its last few.
const KEPT: usize = 4;

thread_local! {
    static RECENT: RefCell<Recent> = const { RefCell::new(Recent::new()) };
}

/// The targets a thread made last, replaced in turn.
struct Recent {
    uris: [Option<Uri>; KEPT],
    next: usize,
}

impl Recent {
    const fn new() -> Recent {
        Recent {
            uris: [None, None, None, None],
            next: 0,
        }
    }

    fn find(&self, prefix: &str, path: &str) -> Option<Uri> {
        self.uris
            .iter()
            .flatten()
            .find(|u| is_text(u, prefix, path))
            .cloned()
    }

    fn keep(&mut self, uri: &Uri) {
        let i = self.next % KEPT;
        self.uris[i] = Some(uri.clone());
        self.next = (i + 1) % KEPT;
    }
}

/// The origin-form target for `prefix` (a replica's base path, without its
/// trailing `/`) and a client's `path` (with its query): the one this
/// thread made last for that text, else `make`'s (none when the text is
/// not an origin-form target), kept.
pub(super) fn origin_form(
    prefix: &str,
    path: &str,
    make: impl FnOnce() -> Option<Uri>,
) -> Option<Uri> {
    // A thread being torn down has no kept targets: it makes its own.
    let found = RECENT
        .try_with(|r| r.try_borrow().ok().and_then(|r| r.find(prefix, path)))
        .ok()
        .flatten();
    if found.is_some() {
        return found;
    }
    let made = make();
    if let Some(uri) = &made {
        let _ = RECENT.try_with(|r| {
            if let Ok(mut r) = r.try_borrow_mut() {
                r.keep(uri);
            }
        });
    }
    made
}

/// Whether `uri`'s target is the text `prefix` followed by `path`.
fn is_text(uri: &Uri, prefix: &str, path: &str) -> bool {
    let Some(text) = uri.path_and_query().map(|pq| pq.as_str().as_bytes()) else {
        return false;
    };
    text.len() == prefix.len() + path.len()
        && text.starts_with(prefix.as_bytes())
        && text.ends_with(path.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(prefix: &str, path: &str) -> Option<Uri> {
        http::uri::PathAndQuery::try_from(format!("{prefix}{path}"))
            .ok()
            .map(Uri::from)
    }

    /// Whatever was kept before, each target is the text asked for: the
    /// prefix counts (two replicas on one thread), the query counts, and
    /// more paths than are kept alternate without mixing up.
    #[test]
    fn a_kept_target_is_the_one_asked_for() {
        let paths = [
            "/v2/models/m/infer",
            "/v2/models/m/infer?x=1",
            "/v2/models/m%2Fn/infer",
            "/v2/health/ready",
            "/v2/models/other/infer",
            "/v2",
        ];
        for round in 0..3 {
            for prefix in ["", "/triton", "/triton/v2"] {
                for path in paths {
                    let got = origin_form(prefix, path, || parse(prefix, path)).unwrap();
                    assert_eq!(
                        got.path_and_query().unwrap().as_str(),
                        format!("{prefix}{path}"),
                        "round {round}"
                    );
                    assert_eq!(Some(got), parse(prefix, path));
                }
            }
        }
    }

    /// A target asked for again is the kept one: `make` is not called.
    #[test]
    fn a_target_asked_for_again_is_not_made_again() {
        let first = origin_form("/p", "/v2/models/m/infer", || {
            parse("/p", "/v2/models/m/infer")
        });
        let again = origin_form("/p", "/v2/models/m/infer", || {
            panic!("made again though kept")
        });
        assert_eq!(first, again);
        assert!(first.is_some());
        // Same length, other text: made.
        let mut made = false;
        let other = origin_form("/p", "/v2/models/n/infer", || {
            made = true;
            parse("/p", "/v2/models/n/infer")
        });
        assert!(made);
        assert_eq!(other.unwrap(), "/p/v2/models/n/infer");
        // Not a target: nothing kept, nothing found.
        assert_eq!(origin_form("", "*", || None), None);
        assert_eq!(origin_form("", "*", || None), None);
    }

    #[test]
    fn the_text_is_prefix_then_path() {
        let uri = parse("/ab", "/cd").unwrap();
        assert!(is_text(&uri, "/ab", "/cd"));
        assert!(is_text(&uri, "", "/ab/cd"));
        assert!(!is_text(&uri, "/a", "/cd"));
        assert!(!is_text(&uri, "/ab", "/c"));
        assert!(!is_text(&uri, "/ab", "/ce"));
    }
}
