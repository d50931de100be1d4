//! Binary -> JSON values for every datatype on arbitrary bytes, written in
//! two pieces split at a fuzzer-chosen point. When it succeeds the output,
//! wrapped in `[` `]`, is valid JSON with one value per element, and the
//! same as writing the bytes whole.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tensorgate_codec::codec::v2::json_write::ValueWriter;
use tensorgate_codec::tensor::DataType;

fuzz_target!(|data: &[u8]| {
    let Some((&at, bytes)) = data.split_first() else {
        return;
    };
    let at = usize::from(at).min(bytes.len());
    for dtype in DataType::ALL {
        let mut whole = Vec::new();
        let mut w = ValueWriter::new(dtype);
        let r1 = w.write(bytes, &mut whole).and_then(|()| w.finish());

        let mut split = Vec::new();
        let mut w = ValueWriter::new(dtype);
        let r2 = w
            .write(&bytes[..at], &mut split)
            .and_then(|()| w.write(&bytes[at..], &mut split))
            .and_then(|()| w.finish());
        assert_eq!(r1, r2, "{dtype}");
        let Ok(count) = r1 else {
            continue;
        };
        assert_eq!(split, whole, "{dtype}");
        let json = [&b"["[..], &whole, b"]"].concat();
        let value: serde_json::Value = serde_json::from_slice(&json).unwrap_or_else(|e| {
            panic!(
                "{dtype}: invalid JSON ({e}): {}",
                String::from_utf8_lossy(&json)
            )
        });
        assert_eq!(
            value.as_array().map(Vec::len),
            Some(count as usize),
            "{dtype}"
        );
    }
});
