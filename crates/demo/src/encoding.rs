//! Request `Content-Encoding`: `gzip` and `deflate` (zlib-wrapped, as Triton
//! reads it) are decompressed, up to the body limit; anything else is
//! Triton's 501.

use bytes::Bytes;
use http::header::CONTENT_ENCODING;
use http::{HeaderMap, HeaderValue};

use super::error::DemoError;
use tensorgate_codec::codec::coding::{Coding, Decoder, InflateError};
use tensorgate_codec::codec::pieces::concat;

/// The body, decompressed (bounded by `limit`) as its `Content-Encoding`
/// says, with the codec's decoder (the gateway's too).
pub fn decode_body(headers: &HeaderMap, body: Bytes, limit: usize) -> Result<Bytes, DemoError> {
    let values = headers.get_all(CONTENT_ENCODING).iter();
    let coding = Coding::of_content_encoding(values.map(HeaderValue::as_bytes))
        .map_err(|_| DemoError::UnsupportedEncoding)?;
    let Some(mut decoder) = Decoder::new(coding, limit as u64) else {
        return Ok(body);
    };
    let error = |e: InflateError| match e {
        InflateError::TooLarge => DemoError::TooLarge { limit },
        InflateError::Corrupt(detail) => DemoError::Invalid(format!(
            "request body is not valid {}: {detail}",
            coding.name()
        )),
    };
    let head = decoder.push(&body).map_err(error)?;
    let tail = decoder.finish().map_err(error)?;
    Ok(concat(vec![head, tail]))
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use flate2::Compression;
    use flate2::write::{GzEncoder, ZlibEncoder};
    use http::HeaderValue;
    use http::header::CONTENT_ENCODING;

    use super::*;

    fn headers(encoding: &'static str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(CONTENT_ENCODING, HeaderValue::from_static(encoding));
        h
    }

    #[test]
    fn gzip_and_zlib_deflate() {
        let mut gz = GzEncoder::new(Vec::new(), Compression::default());
        gz.write_all(b"hello").unwrap();
        let gz = Bytes::from(gz.finish().unwrap());
        assert_eq!(
            decode_body(&headers("gzip"), gz.clone(), 100).unwrap(),
            "hello"
        );
        assert!(matches!(
            decode_body(&headers("gzip"), gz, 4),
            Err(DemoError::TooLarge { limit: 4 })
        ));
        let mut z = ZlibEncoder::new(Vec::new(), Compression::default());
        z.write_all(b"hi").unwrap();
        let z = Bytes::from(z.finish().unwrap());
        assert_eq!(decode_body(&headers("deflate"), z, 100).unwrap(), "hi");
        assert!(matches!(
            decode_body(&headers("br"), Bytes::new(), 100),
            Err(DemoError::UnsupportedEncoding)
        ));
        assert!(decode_body(&headers("gzip"), Bytes::from_static(b"nope"), 100).is_err());
    }
}
