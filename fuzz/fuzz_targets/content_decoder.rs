//! Request-body decompression (`tensorgate_codec::codec::coding::Decoder`):
//! arbitrary bytes as gzip (one or more members) or zlib, fed in
//! fuzzer-chosen frames, stepped, under a fuzzer-chosen limit. Never more
//! output than the limit, and the same result however the input is cut.
#![no_main]

use bytes::Bytes;
use libfuzzer_sys::fuzz_target;
use tensorgate_codec::codec::coding::{Coding, Decoder, InflateError, STEP};

fn run(coding: Coding, limit: u64, frame: usize, body: &[u8]) -> Result<Vec<u8>, InflateError> {
    let mut d = Decoder::new(coding, limit).unwrap();
    let mut out = Vec::new();
    for chunk in body.chunks(frame) {
        d.feed(Bytes::copy_from_slice(chunk));
        while d.has_pending() {
            let step = d.step()?;
            assert!(step.len() <= STEP + (64 << 10));
            out.extend_from_slice(&step);
        }
    }
    out.extend_from_slice(&d.finish()?);
    assert!(out.len() as u64 <= limit);
    Ok(out)
}

fuzz_target!(|data: &[u8]| {
    let Some((&[kind, frame, limit], body)) = data.split_first_chunk::<3>() else {
        return;
    };
    let coding = if kind % 2 == 0 { Coding::Gzip } else { Coding::Deflate };
    let limit = u64::from(limit) * 64;
    let frame = usize::from(frame).max(1);
    let whole = run(coding, limit, body.len().max(1), body);
    let split = run(coding, limit, frame, body);
    // Which error comes first may depend on the cut (output still inside
    // the inflater when corrupt input is met); success and its bytes do not.
    match (&whole, &split) {
        (Ok(a), Ok(b)) => assert_eq!(a, b),
        (Err(_), Err(_)) => {}
        _ => panic!("cut differently: {whole:?} vs {split:?}"),
    }
});
