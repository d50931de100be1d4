//! JSON `data` -> binary for a fuzzer-chosen datatype, whole and in two
//! pieces (keeping the unconsumed tail, as callers do): the outcomes agree.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tensorgate_codec::codec::v2::json_data::{DataError, DataParser, Progress};
use tensorgate_codec::tensor::DataType;

fn parser(dtype: DataType, expected: Option<u64>) -> DataParser {
    DataParser::new(dtype, expected, 1 << 16, 32)
}

/// Runs to completion; returns the end offset and the data.
fn whole(
    dtype: DataType,
    expected: Option<u64>,
    input: &[u8],
) -> Result<(usize, Vec<u8>, u64), DataError> {
    let mut p = parser(dtype, expected);
    match p.parse(input, true)? {
        Progress::Done(n) => {
            let (data, count) = p.into_data();
            Ok((n, data, count))
        }
        Progress::NeedMore(_) => panic!("NeedMore at end of input"),
    }
}

fn split(
    dtype: DataType,
    expected: Option<u64>,
    input: &[u8],
    at: usize,
) -> Result<(usize, Vec<u8>, u64), DataError> {
    let mut p = parser(dtype, expected);
    let (offset, rest) = match p.parse(&input[..at], false)? {
        Progress::Done(n) => {
            let (data, count) = p.into_data();
            return Ok((n, data, count));
        }
        Progress::NeedMore(used) => (used, &input[used..]),
    };
    match p.parse(rest, true)? {
        Progress::Done(n) => {
            let (data, count) = p.into_data();
            Ok((offset + n, data, count))
        }
        Progress::NeedMore(_) => panic!("NeedMore at end of input"),
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&[dt, flags, at], json)) = data.split_first_chunk::<3>() else {
        return;
    };
    let dtype = DataType::ALL[usize::from(dt) % DataType::ALL.len()];
    let expected = (flags & 1 == 1).then_some(u64::from(flags >> 1));
    let at = usize::from(at).min(json.len());
    let a = whole(dtype, expected, json);
    let b = split(dtype, expected, json, at);
    match (&a, &b) {
        (Ok(x), Ok(y)) => assert_eq!(x, y, "split at {at}"),
        (Err(_), Err(_)) => {}
        _ => panic!("whole {a:?} but split at {at} {b:?}"),
    }
    if let Ok((_, bytes, count)) = &a {
        if let Some(size) = dtype.fixed_size() {
            assert_eq!(bytes.len() as u64, count * size as u64);
        }
        if let Some(e) = expected {
            assert!(*count <= e);
        }
    }
});
