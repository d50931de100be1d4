//! `grpc-timeout` values: `parse` never panics, accepts exactly 1 to 8
//! digits and one known unit, and what `encode` writes for any duration
//! reads back as no shorter than it.
#![no_main]

use std::time::Duration;

use libfuzzer_sys::fuzz_target;
use tensorgate_codec::codec::grpc::timeout::{encode, parse};

fuzz_target!(|data: &[u8]| {
    let ok = parse(data).is_ok();
    let well_formed = data.len() >= 2
        && data.len() <= 9
        && data[..data.len() - 1].iter().all(u8::is_ascii_digit)
        && b"HMSmun".contains(&data[data.len() - 1]);
    assert_eq!(ok, well_formed, "{data:?}");
    if let Some(n) = data.first_chunk::<8>() {
        let d = Duration::from_nanos(u64::from_le_bytes(*n));
        let back = parse(encode(d).as_bytes()).expect("encode wrote a malformed value");
        assert!(back >= d, "{d:?} -> {back:?}");
    }
});
