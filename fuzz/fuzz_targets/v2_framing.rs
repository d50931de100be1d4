//! Binary-extension framing: header-length parsing, the SageMaker content
//! type, and `HeaderReader` + `ChunkSplitter` over fuzzer-chosen frame and
//! tensor sizes. Pieces must reassemble exactly into the body, and totals of
//! sizes near `u64::MAX` are checked, never wrapped.
#![no_main]

use bytes::Bytes;
use libfuzzer_sys::fuzz_target;
use tensorgate_codec::codec::v2::framing::{
    ChunkSplitter, FramingError, HeaderReader, parse_ihcl, sagemaker_header_size,
};

fuzz_target!(|data: &[u8]| {
    // Header values and content types are arbitrary text.
    if let Ok(v) = parse_ihcl(data) {
        let text = std::str::from_utf8(data).unwrap().trim();
        assert_eq!(text.parse::<u64>().ok(), Some(v));
    }
    let _ = sagemaker_header_size(&String::from_utf8_lossy(data));

    // Layout: header length, frame size, tensor count, sizes, then the body.
    let Some((&[hlen, frame, n], rest)) = data.split_first_chunk::<3>() else {
        return;
    };
    let n = usize::from(n % 8).min(rest.len());
    let (sizes, body) = rest.split_at(n);
    let sizes: Vec<(usize, u64)> = sizes
        .iter()
        .enumerate()
        .map(|(i, &s)| (i * 2, u64::from(s % 32)))
        .collect();
    // The same sizes near u64::MAX: totals are checked, never wrapped.
    let huge: Vec<(usize, u64)> = sizes.iter().map(|&(i, s)| (i, u64::MAX - s)).collect();
    let huge_total = huge.iter().try_fold(0u64, |t, s| t.checked_add(s.1));
    let mut huge_splitter = ChunkSplitter::new(huge);
    assert_eq!(huge_splitter.remaining_total(), huge_total);
    if let Err(short) = huge_splitter.finish(&mut Vec::new()) {
        assert_eq!(short.missing, huge_total.unwrap_or(u64::MAX));
    }
    let frame = usize::from(frame).max(1);
    let hlen = usize::from(hlen).min(body.len());

    let mut reader = HeaderReader::new(hlen);
    let mut splitter = ChunkSplitter::new(sizes.clone());
    let total: u64 = sizes.iter().map(|s| s.1).sum();
    assert_eq!(splitter.remaining_total(), Some(total));
    let mut header = None;
    let mut pieces = Vec::new();
    let mut trailing = None;
    for chunk in body.chunks(frame) {
        let mut chunk = Bytes::copy_from_slice(chunk);
        if header.is_none() {
            header = reader.push(&mut chunk);
            if header.is_none() {
                assert!(chunk.is_empty());
                continue;
            }
        }
        if let Err(e) = splitter.push(chunk, &mut pieces) {
            trailing = Some(e);
            break;
        }
    }
    if hlen == 0 && header.is_none() {
        header = reader.push(&mut Bytes::new());
    }
    let Some(header) = header else {
        assert!(body.len() < hlen || hlen == 0);
        return;
    };
    assert_eq!(&header[..], &body[..hlen]);
    let after = &body[hlen..];
    if let Some(FramingError::TrailingBytes { .. }) = trailing {
        assert!(after.len() as u64 > total);
        return;
    }
    assert!(trailing.is_none(), "{trailing:?}");
    let finished = splitter.finish(&mut pieces);
    let joined: Vec<u8> = pieces.iter().flat_map(|p| p.data.iter().copied()).collect();
    assert_eq!(&joined[..], after);
    match finished {
        Ok(()) => {
            assert_eq!(after.len() as u64, total);
            // Each tensor's pieces are its slice of the body, last one marked.
            let mut at = 0;
            for &(tensor, size) in &sizes {
                let mine: Vec<_> = pieces.iter().filter(|p| p.tensor == tensor).collect();
                assert!(mine.last().is_some_and(|p| p.last));
                let got: Vec<u8> = mine.iter().flat_map(|p| p.data.iter().copied()).collect();
                assert_eq!(&got[..], &after[at..at + size as usize]);
                at += size as usize;
            }
        }
        Err(short) => assert_eq!(short.missing, total - after.len() as u64),
    }
});
