//! The V2 HTTP API's paths (Triton 2.51 and KServe): which endpoint a
//! request path addresses.
//!
//! A path is percent-decoded **once**, segment by segment, the way backends
//! that decode paths (KServe/uvicorn) read it, and every decision is made on
//! the decoded form: `/v2/models/simple/%69nfer` is an infer call. What
//! would read differently before and after decoding is refused instead of
//! guessed at: an encoded `/` (`%2F`), `.` and `..` segments, and segments
//! that do not decode to UTF-8. Used by the gateway and the demo backend.

use std::borrow::Cow;

/// A path could not be read safely.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PathError {
    #[error("path segment {segment:?} holds an encoded '/'")]
    EncodedSlash { segment: String },
    #[error("path segment {segment:?} is a dot segment")]
    DotSegment { segment: String },
    #[error("path segment {segment:?} is not valid UTF-8 once decoded")]
    NotUtf8 { segment: String },
}

/// Splits an absolute path into percent-decoded segments (borrowed from the
/// path unless a segment holds an escape). `"/"` and `""` give no segments;
/// a trailing `/` gives a last empty segment. Invalid escapes (`%zz`) are
/// kept as they are, as backends do.
pub fn split_path(path: &str) -> Result<Vec<Cow<'_, str>>, PathError> {
    let rest = path.strip_prefix('/').unwrap_or(path);
    if rest.is_empty() {
        return Ok(Vec::new());
    }
    rest.split('/').map(segment).collect()
}

fn segment(raw: &str) -> Result<Cow<'_, str>, PathError> {
    if raw.contains('%') {
        return decode_segment(raw).map(Cow::Owned);
    }
    if raw == "." || raw == ".." {
        return Err(PathError::DotSegment {
            segment: raw.to_owned(),
        });
    }
    Ok(Cow::Borrowed(raw))
}

fn decode_segment(raw: &str) -> Result<String, PathError> {
    let bytes = raw.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && let Some(v) = bytes
                .get(i + 1..i + 3)
                .and_then(|h| std::str::from_utf8(h).ok())
                .and_then(|h| u8::from_str_radix(h, 16).ok())
        {
            if v == b'/' {
                return Err(PathError::EncodedSlash {
                    segment: raw.to_owned(),
                });
            }
            out.push(v);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    if out == b"." || out == b".." {
        return Err(PathError::DotSegment {
            segment: raw.to_owned(),
        });
    }
    String::from_utf8(out).map_err(|_| PathError::NotUtf8 {
        segment: raw.to_owned(),
    })
}

/// `/v2/models/{name}[/versions/{v}]`, each segment percent-encoded, with
/// room for the endpoint its callers append (`/infer`, `/ready`): growing
/// the string for it cost a reallocation and a copy per request.
pub fn model_base(name: &str, version: Option<&str>) -> String {
    const PREFIX: usize = "/v2/models/".len();
    const VERSIONS: usize = "/versions/".len();
    const ENDPOINT: usize = "/infer".len();
    let versioned = version.map_or(0, |v| VERSIONS + v.len());
    let mut p = String::with_capacity(PREFIX + name.len() + versioned + ENDPOINT);
    p.push_str("/v2/models/");
    encode_segment(name, &mut p);
    if let Some(v) = version {
        p.push_str("/versions/");
        encode_segment(v, &mut p);
    }
    p
}

/// Appends `segment` percent-encoded for use as one path segment: every
/// byte but RFC 3986 unreserved characters is escaped.
pub fn encode_segment(segment: &str, out: &mut String) {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    for &b in segment.as_bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b as char);
        } else {
            out.push('%');
            out.push(HEX[(b >> 4) as usize] as char);
            out.push(HEX[(b & 15) as usize] as char);
        }
    }
}

/// What a model endpoint does.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ModelAction {
    /// `GET /v2/models/{m}`: metadata.
    Metadata,
    Ready,
    Config,
    Stats,
    Infer,
    Generate,
    GenerateStream,
    /// `/v2/models/{m}/trace/setting`.
    TraceSetting,
    /// Anything else after the model.
    Other,
}

/// Endpoints that change or expose the server's control plane. Gateways
/// deny them unless a route lists them (`allow_control`, by these names).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Control {
    /// `/v2/repository/...`: `index` (which lists every model of the
    /// repository, loaded or not), `models/{m}/load` and `/unload`.
    Repository,
    /// `/v2/systemsharedmemory/...`, `/v2/cudasharedmemory/...`.
    SharedMemory,
    /// `/v2/logging`.
    Logging,
    /// `/v2/trace/setting`, `/v2/models/{m}/trace/setting`.
    Trace,
}

impl Control {
    pub const ALL: [Control; 4] = [
        Control::Repository,
        Control::SharedMemory,
        Control::Logging,
        Control::Trace,
    ];

    /// The name configuration uses (`allow_control`).
    pub const fn name(self) -> &'static str {
        match self {
            Control::Repository => "repository",
            Control::SharedMemory => "shared_memory",
            Control::Logging => "logging",
            Control::Trace => "trace",
        }
    }

    pub fn from_name(name: &str) -> Option<Control> {
        Control::ALL.into_iter().find(|c| c.name() == name)
    }
}

/// What a request path addresses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum V2Path {
    /// `/v2`: server metadata.
    Server,
    /// `/v2/health/live`.
    Live,
    /// `/v2/health/ready`.
    Ready,
    /// `/v2/models/{name}[/versions/{v}][/{action}]`.
    Model {
        name: String,
        version: Option<String>,
        action: ModelAction,
    },
    /// A control-plane endpoint; `model` when it names one.
    Control {
        kind: Control,
        model: Option<String>,
    },
    /// `/v2/models/stats`: every model's statistics.
    AllStats,
    /// Anything else (unknown).
    Other,
}

impl V2Path {
    /// Reads decoded segments (see [`split_path`]).
    pub fn parse<S: AsRef<str>>(segments: &[S]) -> V2Path {
        let segs: Vec<&str> = segments.iter().map(AsRef::as_ref).collect();
        V2Path::parse_strs(&segs)
    }

    /// [`V2Path::parse`] of segments already borrowed as `&str` (the
    /// gateway's dispatch splits most paths in place): no list is copied.
    pub fn parse_strs(segs: &[&str]) -> V2Path {
        let ["v2", rest @ ..] = segs else {
            return V2Path::Other;
        };
        match rest {
            [] | [""] => V2Path::Server,
            ["health", "live"] => V2Path::Live,
            ["health", "ready"] => V2Path::Ready,
            ["repository", "models", m, "load" | "unload"] => V2Path::Control {
                kind: Control::Repository,
                model: Some((*m).to_owned()),
            },
            ["repository", ..] => V2Path::Control {
                kind: Control::Repository,
                model: None,
            },
            ["systemsharedmemory" | "cudasharedmemory", ..] => V2Path::Control {
                kind: Control::SharedMemory,
                model: None,
            },
            ["logging", ..] => V2Path::Control {
                kind: Control::Logging,
                model: None,
            },
            ["trace", ..] => V2Path::Control {
                kind: Control::Trace,
                model: None,
            },
            ["models", "stats"] => V2Path::AllStats,
            ["models", name, tail @ ..] if !name.is_empty() => model_path(name, tail),
            _ => V2Path::Other,
        }
    }

    /// The model named, if any.
    pub fn model(&self) -> Option<&str> {
        match self {
            V2Path::Model { name, .. } => Some(name),
            V2Path::Control { model, .. } => model.as_deref(),
            _ => None,
        }
    }

    pub fn is_infer(&self) -> bool {
        matches!(
            self,
            V2Path::Model {
                action: ModelAction::Infer,
                ..
            }
        )
    }
}

fn model_path(name: &str, tail: &[&str]) -> V2Path {
    let (version, tail) = match tail {
        ["versions", v, tail @ ..] if !v.is_empty() => (Some((*v).to_owned()), tail),
        tail => (None, tail),
    };
    let action = match tail {
        [] => ModelAction::Metadata,
        ["ready"] => ModelAction::Ready,
        ["config"] => ModelAction::Config,
        ["stats"] => ModelAction::Stats,
        ["infer"] => ModelAction::Infer,
        ["generate"] => ModelAction::Generate,
        ["generate_stream"] => ModelAction::GenerateStream,
        ["trace", "setting"] => {
            return V2Path::Control {
                kind: Control::Trace,
                model: Some(name.to_owned()),
            };
        }
        _ => ModelAction::Other,
    };
    V2Path::Model {
        name: name.to_owned(),
        version,
        action,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(path: &str) -> V2Path {
        V2Path::parse(&split_path(path).unwrap())
    }

    fn model(name: &str, version: Option<&str>, action: ModelAction) -> V2Path {
        V2Path::Model {
            name: name.into(),
            version: version.map(Into::into),
            action,
        }
    }

    #[test]
    fn endpoints() {
        use ModelAction::*;
        assert_eq!(parse("/v2"), V2Path::Server);
        assert_eq!(parse("/v2/"), V2Path::Server);
        assert_eq!(parse("/v2/health/live"), V2Path::Live);
        assert_eq!(parse("/v2/health/ready"), V2Path::Ready);
        assert_eq!(
            parse("/v2/models/simple/infer"),
            model("simple", None, Infer)
        );
        assert_eq!(
            parse("/v2/models/simple/versions/3/infer"),
            model("simple", Some("3"), Infer)
        );
        assert_eq!(parse("/v2/models/simple"), model("simple", None, Metadata));
        assert_eq!(
            parse("/v2/models/simple/versions/2"),
            model("simple", Some("2"), Metadata)
        );
        assert_eq!(parse("/v2/models/a%20b/ready"), model("a b", None, Ready));
        assert_eq!(
            parse("/v2/models/m/generate_stream"),
            model("m", None, GenerateStream)
        );
        assert_eq!(parse("/v2/models/m/infer/extra"), model("m", None, Other));
        assert_eq!(parse("/v2/models/"), V2Path::Other);
        assert_eq!(parse("/v2/models/stats"), V2Path::AllStats);
        assert_eq!(parse("/invocations"), V2Path::Other);
        assert_eq!(parse("/v2x"), V2Path::Other);
        assert!(parse("/v2/models/m/infer").is_infer());
    }

    /// Decisions are made on the decoded path, as a decoding backend reads it.
    #[test]
    fn decoded_once() {
        assert!(parse("/v2/models/simple/%69nfer").is_infer());
        assert_eq!(parse("/v2/%6Dodels/x/infer").model(), Some("x"));
        assert_eq!(
            parse("/v2/models/a%zzb"),
            model("a%zzb", None, ModelAction::Metadata)
        );
    }

    #[test]
    fn ambiguous_paths_are_refused() {
        for bad in [
            "/v2/models/a%2Fb/infer",
            "/v2/models/a%2fb/infer",
            "/v2/models/simple/../../v2/logging",
            "/v2/models/./infer",
            "/v2/models/%2E%2E/infer",
            "/v2/models/%ff/infer",
        ] {
            assert!(split_path(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn control_endpoints() {
        let c = |kind, model: Option<&str>| V2Path::Control {
            kind,
            model: model.map(Into::into),
        };
        assert_eq!(
            parse("/v2/repository/models/simple/load"),
            c(Control::Repository, Some("simple"))
        );
        assert_eq!(
            parse("/v2/repository/models/simple/unload"),
            c(Control::Repository, Some("simple"))
        );
        assert_eq!(
            parse("/v2/systemsharedmemory/region/r/register"),
            c(Control::SharedMemory, None)
        );
        assert_eq!(
            parse("/v2/cudasharedmemory/status"),
            c(Control::SharedMemory, None)
        );
        // The index lists every model of the repository, loaded or not.
        assert_eq!(parse("/v2/repository/index"), c(Control::Repository, None));
        assert_eq!(parse("/v2/repository"), c(Control::Repository, None));
        assert_eq!(parse("/v2/logging"), c(Control::Logging, None));
        assert_eq!(parse("/v2/trace/setting"), c(Control::Trace, None));
        assert_eq!(
            parse("/v2/models/m/trace/setting"),
            c(Control::Trace, Some("m"))
        );
        assert_eq!(
            Control::from_name("shared_memory"),
            Some(Control::SharedMemory)
        );
    }

    #[test]
    fn segment_encoding() {
        let mut s = String::new();
        encode_segment("a b/c~d.é", &mut s);
        assert_eq!(s, "a%20b%2Fc~d.%C3%A9");
    }

    /// The base has room for the endpoint appended to it: the infer path
    /// is built in one allocation.
    #[test]
    fn model_base_has_room_for_the_endpoint() {
        for (name, version, want) in [
            ("simple", None, "/v2/models/simple/infer"),
            ("m", Some("12"), "/v2/models/m/versions/12/infer"),
        ] {
            let mut p = model_base(name, version);
            let capacity = p.capacity();
            p.push_str("/infer");
            assert_eq!(p, want);
            assert_eq!(p.capacity(), capacity, "{want} grew");
        }
    }
}
