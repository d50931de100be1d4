//! Request `Content-Encoding`: `gzip` and `deflate` (zlib-wrapped, as Triton
//! reads it) are decompressed, up to the body limit; anything else is
//! Triton's 501.

use std::io::Read;

use bytes::Bytes;
use flate2::read::{GzDecoder, ZlibDecoder};
use http::HeaderMap;
use http::header::CONTENT_ENCODING;

use super::error::DemoError;

pub fn decode_body(headers: &HeaderMap, body: Bytes, limit: usize) -> Result<Bytes, DemoError> {
    let Some(encoding) = headers.get(CONTENT_ENCODING) else {
        return Ok(body);
    };
    let encoding = encoding.to_str().unwrap_or("").trim().to_ascii_lowercase();
    let reader: Box<dyn Read + '_> = match encoding.as_str() {
        "" | "identity" => return Ok(body),
        "gzip" | "x-gzip" => Box::new(GzDecoder::new(&body[..])),
        "deflate" => Box::new(ZlibDecoder::new(&body[..])),
        _ => return Err(DemoError::UnsupportedEncoding),
    };
    let mut out = Vec::new();
    reader
        .take(limit as u64 + 1)
        .read_to_end(&mut out)
        .map_err(|e| DemoError::Invalid(format!("request body is not valid {encoding}: {e}")))?;
    if out.len() > limit {
        return Err(DemoError::TooLarge { limit });
    }
    Ok(Bytes::from(out))
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use flate2::Compression;
    use flate2::write::{GzEncoder, ZlibEncoder};
    use http::HeaderValue;

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
