//! HTTP content codings, both ways, sans I/O: which coding a
//! `Content-Encoding` names, request bodies inflated under a byte limit a
//! bounded step at a time (`decode`), and buffers compressed whole
//! (`compress`). HTTP's `deflate` is the zlib format (RFC 9110 §8.4.1.2),
//! as Triton uses it.
//!
//! Header maps and bodies are the caller's (the gateway's `http::encoding`,
//! the demo backend): this module takes header values and bytes and returns
//! values, so the gateway and the demo inflate with the same code.

mod compress;
mod decode;

pub use compress::{compress, compress_all};
pub use decode::{Decoder, InflateError, STEP};

/// A content coding the gateway reads and writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Coding {
    Identity,
    Gzip,
    Deflate,
}

impl Coding {
    pub fn name(self) -> &'static str {
        match self {
            Coding::Identity => "identity",
            Coding::Gzip => "gzip",
            Coding::Deflate => "deflate",
        }
    }

    /// The coding of a request body from its `Content-Encoding` values (each
    /// a comma-separated list, as the header's raw bytes). Anything but
    /// gzip, deflate or identity is refused, and so are several codings
    /// stacked; no value at all is identity.
    pub fn of_content_encoding<'a>(
        values: impl IntoIterator<Item = &'a [u8]>,
    ) -> Result<Coding, UnsupportedCoding> {
        let mut coding = Coding::Identity;
        for value in values {
            let text = visible_text(value).unwrap_or("?");
            for token in text.split(',').map(str::trim).filter(|t| !t.is_empty()) {
                let this = match token.to_ascii_lowercase().as_str() {
                    "identity" => continue,
                    "gzip" | "x-gzip" => Coding::Gzip,
                    "deflate" => Coding::Deflate,
                    _ => {
                        return Err(UnsupportedCoding {
                            encoding: text.to_owned(),
                        });
                    }
                };
                if coding != Coding::Identity {
                    // Stacked codings are legal but nobody sends them.
                    return Err(UnsupportedCoding {
                        encoding: text.to_owned(),
                    });
                }
                coding = this;
            }
        }
        Ok(coding)
    }
}

/// A header value as text when it is visible ASCII (and tabs), as
/// `http::HeaderValue::to_str` reads it.
fn visible_text(value: &[u8]) -> Option<&str> {
    let visible = value
        .iter()
        .all(|&b| b == b'\t' || (b' '..=b'~').contains(&b));
    visible.then(|| std::str::from_utf8(value).ok()).flatten()
}

/// A `Content-Encoding` the gateway cannot read (or several stacked).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unsupported Content-Encoding {encoding:?}: use gzip, deflate or identity")]
pub struct UnsupportedCoding {
    pub encoding: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn coding(values: &[&str]) -> Result<Coding, UnsupportedCoding> {
        Coding::of_content_encoding(values.iter().map(|v| v.as_bytes()))
    }

    #[test]
    fn content_encodings() {
        assert_eq!(coding(&[]).unwrap(), Coding::Identity);
        assert_eq!(coding(&["identity"]).unwrap(), Coding::Identity);
        assert_eq!(coding(&["GZIP"]).unwrap(), Coding::Gzip);
        assert_eq!(coding(&["x-gzip"]).unwrap(), Coding::Gzip);
        assert_eq!(coding(&[" deflate ,identity"]).unwrap(), Coding::Deflate);
        assert_eq!(coding(&["identity", "gzip"]).unwrap(), Coding::Gzip);
        assert_eq!(
            coding(&["br"]),
            Err(UnsupportedCoding {
                encoding: "br".into()
            })
        );
        // Stacked, in one value or over two.
        assert!(coding(&["gzip, deflate"]).is_err());
        assert!(coding(&["gzip", "gzip"]).is_err());
        // Not visible ASCII: named as `?`.
        let odd = Coding::of_content_encoding([&b"gz\xffip"[..]]);
        assert_eq!(
            odd,
            Err(UnsupportedCoding {
                encoding: "?".into()
            })
        );
    }
}
