//! Recognising a media element's format from its first bytes, for BYTES
//! outputs a route declares as `image`, `audio` or `video` when the backend
//! does not say which format each element is.

/// The format name Decthings clients use (the file extension), if the
/// element starts with a known signature.
pub(super) fn sniff(data: &[u8]) -> Option<&'static str> {
    const SIGNATURES: &[(&[u8], &str)] = &[
        (b"\x89PNG\r\n\x1a\n", "png"),
        (b"\xff\xd8\xff", "jpeg"),
        (b"GIF87a", "gif"),
        (b"GIF89a", "gif"),
        (b"BM", "bmp"),
        (b"II*\x00", "tiff"),
        (b"MM\x00*", "tiff"),
        (b"fLaC", "flac"),
        (b"OggS", "ogg"),
        (b"ID3", "mp3"),
        (b"\xff\xfb", "mp3"),
        (b"\xff\xf3", "mp3"),
        (b"\x1a\x45\xdf\xa3", "webm"),
    ];
    if let Some((_, name)) = SIGNATURES.iter().find(|(sig, _)| data.starts_with(sig)) {
        return Some(name);
    }
    // RIFF containers and ISO base media files name their kind a few bytes in.
    match (data.get(0..4), data.get(8..12), data.get(4..8)) {
        (Some(b"RIFF"), Some(b"WEBP"), _) => Some("webp"),
        (Some(b"RIFF"), Some(b"WAVE"), _) => Some("wav"),
        (Some(b"RIFF"), Some(b"AVI "), _) => Some("avi"),
        (_, Some(b"qt  "), Some(b"ftyp")) => Some("mov"),
        (_, _, Some(b"ftyp")) => Some("mp4"),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::sniff;

    #[test]
    fn signatures() {
        assert_eq!(sniff(b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR"), Some("png"));
        assert_eq!(sniff(b"\xff\xd8\xff\xe0"), Some("jpeg"));
        assert_eq!(sniff(b"RIFF\0\0\0\0WAVEfmt "), Some("wav"));
        assert_eq!(sniff(b"RIFF\0\0\0\0WEBPVP8 "), Some("webp"));
        assert_eq!(sniff(b"\0\0\0\x18ftypmp42"), Some("mp4"));
        assert_eq!(sniff(b"ID3\x04"), Some("mp3"));
        assert_eq!(sniff(b"hello"), None);
        assert_eq!(sniff(b""), None);
    }
}
