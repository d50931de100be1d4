//! Decthings tensor decoding, both layouts. On success the tensors re-encode,
//! decode back to themselves, and the streaming `decode` agrees with
//! `decode_all` on the first tensor.
#![no_main]

use bytes::{Bytes, BytesMut};
use libfuzzer_sys::fuzz_target;
use tensorgate_codec::codec::decthings::{Layout, DecodeLimits, decode, decode_all, encode};

fuzz_target!(|data: &[u8]| {
    let Some((&flags, rest)) = data.split_first() else {
        return;
    };
    let layout = if flags & 1 == 0 {
        Layout::Current
    } else {
        Layout::Legacy
    };
    let limits = DecodeLimits {
        max_tensor_bytes: 1 << 20,
    };
    let input = Bytes::copy_from_slice(rest);
    let streamed = decode(&input, layout, &limits);
    let Ok(tensors) = decode_all(&input, layout, &limits) else {
        return;
    };
    if let Some(first) = tensors.first() {
        let (t, _) = streamed.expect("decode_all succeeded").expect("complete");
        assert_eq!(&t, first);
    }
    let mut wire = BytesMut::new();
    for t in &tensors {
        encode(t, layout, &mut wire).expect("a decoded tensor re-encodes");
    }
    let wire = wire.freeze();
    let again = decode_all(&wire, layout, &limits).expect("re-encoded tensors decode");
    assert_eq!(again, tensors);
    let mut wire2 = BytesMut::new();
    for t in &again {
        encode(t, layout, &mut wire2).unwrap();
    }
    assert_eq!(wire2.freeze(), wire);
});
