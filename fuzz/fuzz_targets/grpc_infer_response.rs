//! `ModelInferResponse` bytes to the V2 form and back, like
//! `grpc_infer_request`; also as the payload of a `ModelStreamInfer`
//! message.
#![no_main]

use bytes::Bytes;
use libfuzzer_sys::fuzz_target;
use prost::Message;
use tensorgate_codec::codec::grpc::proto::inference::ModelStreamInferResponse;
use tensorgate_codec::codec::grpc::{
    decode_response, encode_response, encode_stream_response, response_to_v2,
};
use tensorgate_codec::codec::v2::DocLimits;

fuzz_target!(|data: &[u8]| {
    let limits = DocLimits::new(1 << 16, 8);
    if let Ok(stream) = ModelStreamInferResponse::decode(data) {
        if let Some(r) = stream.infer_response {
            let _ = response_to_v2(r, &limits);
        }
    }
    let Ok(v2) = decode_response(Bytes::copy_from_slice(data), &limits) else {
        return;
    };
    let Ok(pieces) = encode_response(&v2.header, &v2.data) else {
        return;
    };
    let again = decode_response(Bytes::from(pieces.concat()), &limits).expect("our own message converts");
    assert_eq!(again, v2);
    let stream = encode_stream_response(&v2.header, &v2.data).expect("converted once");
    let decoded = ModelStreamInferResponse::decode(Bytes::from(stream.concat())).expect("our own message");
    let inner = response_to_v2(decoded.infer_response.expect("set"), &limits).expect("converts");
    assert_eq!(inner, v2);
});
