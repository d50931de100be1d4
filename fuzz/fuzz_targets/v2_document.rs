//! The V2 document parser on arbitrary bytes, as a request or a response,
//! fed whole and in fuzzer-chosen chunkings, sometimes with a tight budget
//! for JSON outside tensor data. Every chunking must give what the whole
//! input gives, and after the first error every later `feed` and the
//! `finish` must return that same error: never a document after an error.
//! The chunkings are fed again with each chunk cut by `DocParser::split`
//! where it offers a cut, the tail run before the head is fed (as another
//! thread might): that must change nothing either.
//!
//! Layout: `flags`, two bytes seeding the chunk sizes (0: one chunk), then
//! the document. `flags` bit 0: response; bit 1: budget of `flags >> 2`
//! values and 16 bytes per value.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tensorgate_codec::codec::v2::{DocError, DocKind, DocLimits, DocParser, Document, EntryData};

/// Chunk sizes from 1 to 64 bytes (sometimes up to 4 KiB), from `seed`.
fn chunk_sizes(seed: u16, len: usize) -> Vec<usize> {
    if seed == 0 {
        return vec![len.max(1)];
    }
    let mut x = u32::from(seed) | 1 << 16;
    (0..16)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            if x % 8 == 0 {
                1 + (x >> 3) as usize % 4096
            } else {
                1 + (x >> 3) as usize % 64
            }
        })
        .collect()
}

/// Feeds `piece`, cut in two where `split` offers (if `cut`): the tail run
/// first (`DocParser::feed_cut`).
fn feed(p: &mut DocParser, piece: &[u8], cut: bool) -> Result<(), DocError> {
    if cut {
        p.feed_cut(piece)
    } else {
        p.feed(piece)
    }
}

fn chunked(
    kind: DocKind,
    limits: DocLimits,
    doc: &[u8],
    sizes: &[usize],
    cut: bool,
) -> Result<Document, DocError> {
    let mut p = DocParser::new(kind, limits);
    let mut first: Option<DocError> = None;
    let mut at = 0;
    // What an early sender saw: data converted so far, and guesses.
    let mut converted: Vec<(usize, Vec<u8>)> = Vec::new();
    let mut guesses: Vec<Document> = Vec::new();
    for &size in sizes.iter().cycle() {
        if at >= doc.len() {
            break;
        }
        let end = (at + size).min(doc.len());
        let result = feed(&mut p, &doc[at..end], cut);
        match &first {
            Some(e) => assert_eq!(result.as_ref(), Err(e), "feed after an error"),
            None => first = result.err(),
        }
        if first.is_none() {
            converted.extend(p.converted().map(|(i, c)| (i, c.to_vec())));
            guesses.extend(p.provisional());
        }
        at = end;
    }
    let done = p.finish();
    if let Some(e) = first {
        assert_eq!(done.as_ref().err(), Some(&e), "finish after an error");
    }
    if let Ok(d) = &done {
        // Data handed out early is the start of the tensor's final data.
        for (i, c) in &converted {
            match &d.tensors[*i].data {
                EntryData::Inline { data, .. } => assert!(data.starts_with(c), "tensor {i}"),
                other => panic!("tensor {i} was converted but is {other:?}"),
            }
        }
        // A guess keeps the members and whole tensors before the current.
        for g in &guesses {
            let whole = g.tensors.len() - 1;
            assert_eq!(g.tensors[..whole], d.tensors[..whole]);
            assert_eq!(g.members[..], d.members[..g.members.len()]);
        }
    }
    done
}

fuzz_target!(|data: &[u8]| {
    let Some((&[flags, seed_hi, seed_lo], doc)) = data.split_first_chunk::<3>() else {
        return;
    };
    let kind = if flags & 1 == 0 {
        DocKind::Request
    } else {
        DocKind::Response
    };
    // Small enough that a declared shape's buffer is cheap under ASan.
    let mut limits = DocLimits::new(1 << 16, DocLimits::DEFAULT.max_dims);
    if flags & 2 != 0 {
        let values = u64::from(flags >> 2);
        limits = limits.with_member_budget(values * 16, values);
    }
    let whole = DocParser::parse(kind, limits, doc);
    let sizes = chunk_sizes(u16::from_be_bytes([seed_hi, seed_lo]), doc.len());
    for cut in [false, true] {
        assert_eq!(
            chunked(kind, limits, doc, &sizes, cut),
            whole,
            "chunks {sizes:?}, cut: {cut}"
        );
    }
});
