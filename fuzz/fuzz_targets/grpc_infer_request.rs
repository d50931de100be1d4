//! `ModelInferRequest` bytes to the V2 form and back: any input either is
//! refused with an error or converts, and what converts writes a message
//! (as pieces) that converts again to the same V2 form.
#![no_main]

use bytes::Bytes;
use libfuzzer_sys::fuzz_target;
use tensorgate_codec::codec::grpc::{decode_request, encode_request};
use tensorgate_codec::codec::v2::DocLimits;

fuzz_target!(|data: &[u8]| {
    let limits = DocLimits::new(1 << 16, 8);
    let Ok(v2) = decode_request(Bytes::copy_from_slice(data), &limits) else {
        return;
    };
    for (entry, pieces) in v2.header.tensors.iter().zip(&v2.data) {
        let len: u64 = pieces.iter().map(|p| p.len() as u64).sum();
        assert!(entry.binary_size().is_none_or(|s| s == len));
    }
    let Ok(pieces) = encode_request(&v2.model_name, v2.model_version.as_deref(), &v2.header, &v2.data) else {
        return;
    };
    let again = decode_request(Bytes::from(pieces.concat()), &limits).expect("our own message converts");
    assert_eq!(again, v2);
});
