//! The V2 document parser on arbitrary bytes, as a request or a response,
//! fed whole and in two chunks split at a fuzzer-chosen point: both must give
//! the same document or the same error.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tensorgate::codec::v2::{DocKind, DocLimits, DocParser};

fuzz_target!(|data: &[u8]| {
    let Some((&[flags, at_hi, at_lo], doc)) = data.split_first_chunk::<3>() else {
        return;
    };
    let kind = if flags & 1 == 0 {
        DocKind::Request
    } else {
        DocKind::Response
    };
    // Small enough that a declared shape's buffer is cheap under ASan.
    let limits = DocLimits {
        max_elements: 1 << 16,
        ..DocLimits::default()
    };
    let at = usize::from(u16::from_be_bytes([at_hi, at_lo])).min(doc.len());
    let whole = DocParser::parse(kind, limits, doc);
    let mut p = DocParser::new(kind, limits);
    let chunked = p
        .feed(&doc[..at])
        .and_then(|()| p.feed(&doc[at..]))
        .and_then(|()| p.finish());
    assert_eq!(chunked, whole, "split at {at}");
});
