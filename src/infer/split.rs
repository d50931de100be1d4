//! Which of a route's backends serves a request: the one the client named
//! in `x-tensorgate-backend` when the route allows it (testing a canary by
//! hand), else one drawn by weight. Never reads the body.

use http::HeaderMap;
use http::header::HeaderName;

use super::route::RouteError;
use crate::config::Route;
use crate::upstream::weighted;

/// The header naming a backend of the route.
pub(crate) const BACKEND_HEADER: HeaderName = HeaderName::from_static("x-tensorgate-backend");

/// Longest backend name taken from the header (longer ones are ignored).
const MAX_HINT: usize = 128;

/// Takes `x-tensorgate-backend` out of the request headers (it never
/// reaches a backend).
pub(crate) fn take_hint(headers: &mut HeaderMap) -> Option<String> {
    if crate::http::headers::lacks(headers, &BACKEND_HEADER) {
        return None;
    }
    let value = headers.remove(BACKEND_HEADER)?;
    let text = value.to_str().ok()?.trim();
    (!text.is_empty() && text.len() <= MAX_HINT).then(|| text.to_owned())
}

/// The index in `route.split` of the backend for this request.
pub(crate) fn choose(route: &Route, hint: Option<&str>) -> Result<usize, RouteError> {
    if let Some(name) = hint.filter(|_| route.allow_backend_header) {
        return route
            .split
            .iter()
            .position(|w| w.backend.name == name)
            .ok_or_else(|| RouteError::UnknownBackend {
                route: route.name.clone(),
                backend: name.to_owned(),
                choices: route
                    .split
                    .iter()
                    .map(|w| w.backend.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
            });
    }
    if route.split.len() == 1 {
        return Ok(0);
    }
    Ok(weighted(route.split.iter().map(|w| w.weight)).unwrap_or(0))
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::config::{Backend, Weighted};

    fn route(allow: bool) -> Route {
        let b = |n: &str| Arc::new(Backend::new(n, "http://127.0.0.1:1".parse().unwrap()));
        let mut r = Route::new("r", b("stable"));
        r.split = vec![
            Weighted {
                backend: b("stable"),
                weight: 9,
            },
            Weighted {
                backend: b("canary"),
                weight: 1,
            },
        ];
        r.allow_backend_header = allow;
        r
    }

    #[test]
    fn the_header_picks_a_backend_only_where_allowed() {
        assert_eq!(choose(&route(true), Some("canary")).unwrap(), 1);
        let e = choose(&route(true), Some("other")).unwrap_err();
        assert_eq!(
            crate::error::Classify::class(&e).status(),
            http::StatusCode::BAD_REQUEST
        );
        assert_eq!(
            e.to_string(),
            r#"route "r": x-tensorgate-backend names "other", which is not one of its backends (stable, canary)"#
        );
        let picks: usize = (0..1000)
            .map(|_| choose(&route(false), Some("canary")).unwrap())
            .sum();
        assert!(
            (50..150).contains(&picks),
            "ignored, weights apply: {picks}"
        );
    }

    #[test]
    fn the_header_is_taken_out() {
        let mut h = HeaderMap::new();
        h.insert(BACKEND_HEADER, " canary ".parse().unwrap());
        assert_eq!(take_hint(&mut h).as_deref(), Some("canary"));
        assert!(h.is_empty());
        h.insert(BACKEND_HEADER, "x".repeat(200).parse().unwrap());
        assert_eq!(take_hint(&mut h), None);
        assert!(h.is_empty());
    }
}
