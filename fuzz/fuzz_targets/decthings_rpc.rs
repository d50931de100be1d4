//! Decthings `Model.evaluate` framing: requests (HTTP and WebSocket) and
//! responses. Whatever splits must frame back to the same bytes (every
//! length is a shortest-form varint, so framing is canonical).
#![no_main]

use bytes::Bytes;
use libfuzzer_sys::fuzz_target;
use tensorgate_codec::codec::decthings::rpc;

fuzz_target!(|data: &[u8]| {
    let input = Bytes::copy_from_slice(data);
    if let Ok(f) = rpc::decode_request(&input) {
        assert_eq!(rpc::encode_request(&f.json, &f.blobs).unwrap(), input);
    }
    if let Ok(f) = rpc::decode_response(&input) {
        assert_eq!(rpc::encode_response(&f.json, &f.blobs), input);
    }
    if let Ok(ws) = rpc::decode_ws_request(&input) {
        let again = rpc::encode_ws_request(ws.id, &ws.frame.json, &ws.frame.blobs).unwrap();
        assert_eq!(again, input);
    }
});
