//! `Content-Type` -> request format and `Accept` -> reply format.
//!
//! Media types compare without regard to case; parameters after `;` are
//! ignored (`text/csv; label_size=0`), except that an `Accept` entry with
//! `q=0` is refused. The SageMaker SDK sends `Accept` as
//! `", ".join(types)`: the first type listed that this side writes wins
//! (other q-values do not reorder the list).

use std::fmt;

/// A request body format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RequestFormat {
    Csv,
    Json,
    JsonLines,
    RecordIo,
}

/// A reply body format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReplyFormat {
    Json,
    JsonLines,
    Csv,
}

/// The negotiated reply: its format and the `Content-Type` to send (the
/// spelling the client asked for, `application/jsonl` included).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReplyType {
    pub format: ReplyFormat,
    pub content_type: &'static str,
}

const REQUEST_TYPES: [(&str, RequestFormat); 5] = [
    ("text/csv", RequestFormat::Csv),
    ("application/json", RequestFormat::Json),
    ("application/jsonlines", RequestFormat::JsonLines),
    ("application/jsonl", RequestFormat::JsonLines),
    ("application/x-recordio-protobuf", RequestFormat::RecordIo),
];

const REPLY_TYPES: [(&str, ReplyFormat); 4] = [
    ("application/json", ReplyFormat::Json),
    ("application/jsonlines", ReplyFormat::JsonLines),
    ("application/jsonl", ReplyFormat::JsonLines),
    ("text/csv", ReplyFormat::Csv),
];

const DEFAULT_REPLY: ReplyType = ReplyType {
    format: ReplyFormat::Json,
    content_type: "application/json",
};

/// A media type this side does not speak.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum MediaError {
    #[error("unsupported Content-Type {given:?}; supported: {}", Supported(&REQUEST_TYPES))]
    ContentType { given: String },
    #[error("no supported type in Accept {given:?}; supported: {}", Supported(&REPLY_TYPES))]
    Accept { given: String },
}

/// Lists the types of a table for error messages.
struct Supported<'a, T>(&'a [(&'static str, T)]);

impl<T> fmt::Display for Supported<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, (name, _)) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            f.write_str(name)?;
        }
        Ok(())
    }
}

/// Longest header text quoted back in an error.
const QUOTE_MAX: usize = 200;

fn quoted(header: &str) -> String {
    header.chars().take(QUOTE_MAX).collect()
}

/// The media type of one header entry, trimmed, and its parameters.
fn split(entry: &str) -> (&str, &str) {
    let (media, params) = entry.split_once(';').unwrap_or((entry, ""));
    (media.trim(), params)
}

/// The request format of a `Content-Type` value.
pub fn request_format(content_type: &str) -> Result<RequestFormat, MediaError> {
    let (media, _) = split(content_type);
    REQUEST_TYPES
        .iter()
        .find(|(name, _)| name.eq_ignore_ascii_case(media))
        .map(|&(_, format)| format)
        .ok_or_else(|| MediaError::ContentType {
            given: quoted(content_type),
        })
}

/// Whether an entry's parameters say `q=0` (not acceptable).
fn refused(params: &str) -> bool {
    params.split(';').any(|p| {
        let Some((name, value)) = p.split_once('=') else {
            return false;
        };
        name.trim().eq_ignore_ascii_case("q") && value.trim().parse::<f32>().is_ok_and(|q| q == 0.0)
    })
}

/// The reply type for an `Accept` value (`None`: no header). Absent, empty
/// or `*/*` gives JSON; `application/*` JSON and `text/*` CSV.
pub fn negotiate_accept(accept: Option<&str>) -> Result<ReplyType, MediaError> {
    let Some(header) = accept.filter(|h| !h.trim().is_empty()) else {
        return Ok(DEFAULT_REPLY);
    };
    for entry in header.split(',') {
        let (media, params) = split(entry);
        if media.is_empty() || refused(params) {
            continue;
        }
        if media == "*/*" || media.eq_ignore_ascii_case("application/*") {
            return Ok(DEFAULT_REPLY);
        }
        if media.eq_ignore_ascii_case("text/*") {
            return Ok(ReplyType {
                format: ReplyFormat::Csv,
                content_type: "text/csv",
            });
        }
        if let Some(&(content_type, format)) = REPLY_TYPES
            .iter()
            .find(|(name, _)| name.eq_ignore_ascii_case(media))
        {
            return Ok(ReplyType {
                format,
                content_type,
            });
        }
    }
    Err(MediaError::Accept {
        given: quoted(header),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn accept(header: &str) -> Result<&'static str, String> {
        negotiate_accept(Some(header))
            .map(|r| r.content_type)
            .map_err(|e| e.to_string())
    }

    #[test]
    fn content_types() {
        let check =
            |ct: &str, want: RequestFormat| assert_eq!(request_format(ct), Ok(want), "{ct}");
        check("text/csv", RequestFormat::Csv);
        check("text/csv; label_size=0", RequestFormat::Csv);
        check("Text/CSV;charset=utf-8", RequestFormat::Csv);
        check("application/json", RequestFormat::Json);
        check(" application/jsonlines ", RequestFormat::JsonLines);
        check("application/jsonl", RequestFormat::JsonLines);
        check("application/x-recordio-protobuf", RequestFormat::RecordIo);
        assert_eq!(
            request_format("application/x-npy").unwrap_err().to_string(),
            "unsupported Content-Type \"application/x-npy\"; supported: text/csv, application/json, \
             application/jsonlines, application/jsonl, application/x-recordio-protobuf"
        );
        assert!(request_format("").is_err());
    }

    #[test]
    fn accept_takes_the_first_supported_type() {
        assert_eq!(negotiate_accept(None).unwrap(), DEFAULT_REPLY);
        assert_eq!(accept(""), Ok("application/json"));
        assert_eq!(accept("*/*"), Ok("application/json"));
        // The SDK's ", ".join of a deserializer's ACCEPT tuple.
        assert_eq!(
            accept("application/x-npy, text/csv, application/json"),
            Ok("text/csv")
        );
        assert_eq!(accept("application/jsonlines"), Ok("application/jsonlines"));
        assert_eq!(accept("application/JSONL"), Ok("application/jsonl"));
        assert_eq!(accept("text/csv;q=0.5, application/json"), Ok("text/csv"));
        assert_eq!(
            accept("text/csv;q=0, application/json;q=1"),
            Ok("application/json")
        );
        assert_eq!(accept("text/*"), Ok("text/csv"));
        assert_eq!(
            accept("image/png, application/*;q=0.1"),
            Ok("application/json")
        );
        assert_eq!(
            accept("application/x-npy, image/png").unwrap_err(),
            "no supported type in Accept \"application/x-npy, image/png\"; supported: \
             application/json, application/jsonlines, application/jsonl, text/csv"
        );
    }
}
