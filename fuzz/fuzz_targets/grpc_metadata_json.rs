//! The metadata JSON mappings (Triton's HTTP bodies to gRPC messages): any
//! body is refused or converts, and a converted message writes JSON that
//! reads back to the same message.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tensorgate_codec::codec::grpc::json;

macro_rules! round_trip {
    ($body:expr, $read:path, $write:path) => {
        if let Ok(m) = $read($body) {
            let written = $write(&m).expect("a read message writes");
            assert_eq!($read(&written).expect("written JSON reads"), m);
        }
    };
}

fuzz_target!(|data: &[u8]| {
    let Some((&which, body)) = data.split_first() else {
        return;
    };
    match which % 5 {
        0 => round_trip!(body, json::server_metadata_from_json, json::server_metadata_to_json),
        1 => round_trip!(body, json::model_metadata_from_json, json::model_metadata_to_json),
        2 => round_trip!(body, json::model_config_from_json, json::model_config_to_json),
        3 => round_trip!(body, json::model_statistics_from_json, json::model_statistics_to_json),
        _ => round_trip!(body, json::repository_index_from_json, json::repository_index_to_json),
    }
});
