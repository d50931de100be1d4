//! The demo models and what they compute, on tensors only (no HTTP here).
//!
//! - `simple`: Triton's example; INPUT0, INPUT1 INT32 `[-1,16]` (batch <= 8)
//!   -> OUTPUT0 = INPUT0 + INPUT1, OUTPUT1 = INPUT0 - INPUT1, wrapping.
//! - `identity`: any number of inputs of any type and shape; input `i`
//!   comes back as `OUTPUT<i>`, byte for byte.
//! - `repeat`: decoupled (streaming); served by `generate` /
//!   `generate_stream` only, see [`super::generate`].
//! - `ramp`: COUNT INT64 `[1]` -> OUTPUT0 FP32 `[COUNT]` holding 0, 0.5, 1,
//!   ...: a small request with a reply as large as asked (at most 2^27
//!   elements), for streaming and memory measurements.
//! - `rowsum`: INPUT0 FP32 `[-1,-1]` (records x features, as the SageMaker
//!   frontend sends them) -> `score` FP32 `[-1]`, each row's sum
//!   (accumulated in f64, then narrowed), and OUTPUT0, the input byte for
//!   byte.

use bytes::Bytes;
use serde_json::{Value, json};

use super::catalog::{Io, Kind, MAX_RAMP, Model, Named, VERSION};
use super::checks;
use super::error::DemoError;
use tensorgate_codec::tensor::{DataType, Tensor};

impl Model {
    /// `GET /v2/models/{m}`. `identity` accepts anything, so it lists none.
    pub fn metadata(&self) -> Value {
        let list = |ios: &[Io]| -> Vec<Value> {
            ios.iter()
                .map(|io| json!({"name": io.name, "datatype": io.dtype.v2_name(), "shape": self.full_dims(io)}))
                .collect()
        };
        json!({
            "name": self.name,
            "versions": [VERSION],
            "platform": "tensorgate_demo",
            "inputs": list(self.inputs),
            "outputs": list(self.outputs),
        })
    }

    /// `GET /v2/models/{m}/config`: the fields of Triton's model config JSON
    /// that describe the interface.
    pub fn config(&self) -> Value {
        let list = |ios: &[Io]| -> Vec<Value> {
            ios.iter()
                .map(|io| {
                    let mut v = json!({"name": io.name, "data_type": config_type(io.dtype), "dims": io.dims});
                    if io.optional {
                        v["optional"] = Value::Bool(true);
                    }
                    v
                })
                .collect()
        };
        json!({
            "name": self.name,
            "platform": "tensorgate_demo",
            "max_batch_size": self.max_batch_size,
            "input": list(self.inputs),
            "output": list(self.outputs),
            "model_transaction_policy": {"decoupled": self.decoupled()},
        })
    }

    /// Runs an inference. `id` is the request id, for error messages.
    pub fn run(&self, id: Option<&str>, inputs: Vec<Named>) -> Result<Vec<Named>, DemoError> {
        checks::check_duplicates(id, &inputs)?;
        match self.kind {
            Kind::Simple => {
                self.check_inputs(id, &inputs)?;
                simple(self, inputs)
            }
            Kind::Identity if inputs.is_empty() => Err(DemoError::rejected(
                id,
                "model 'identity' needs at least one input",
            )),
            Kind::Identity => Ok(inputs
                .into_iter()
                .enumerate()
                .map(|(i, (_, t))| (format!("OUTPUT{i}"), t))
                .collect()),
            Kind::Repeat => Err(DemoError::Decoupled),
            Kind::Ramp => {
                self.check_inputs(id, &inputs)?;
                ramp(id, &inputs)
            }
            Kind::RowSum => {
                self.check_inputs(id, &inputs)?;
                rowsum(inputs)
            }
        }
    }

    /// The error for a raw request (no JSON header): Triton deduces the input
    /// only for single-input models, and no demo model has exactly one.
    pub fn raw_request_error(&self) -> DemoError {
        let message = match self.kind {
            Kind::Identity => format!(
                "Raw request must only have 1 input to be deduced but model '{}' accepts any number of inputs; send an inference header",
                self.name
            ),
            _ => format!(
                "Raw request must only have 1 input (found 1) to be deduced but got {} inputs in '{}' model configuration",
                self.inputs.len(),
                self.name
            ),
        };
        DemoError::rejected(None, message)
    }
}

/// `ramp`: FP32 values 0, 0.5, 1, ... of the requested length.
fn ramp(id: Option<&str>, inputs: &[Named]) -> Result<Vec<Named>, DemoError> {
    let count = inputs
        .iter()
        .find(|(n, _)| n == "COUNT")
        .and_then(|(_, t)| t.data.first_chunk::<8>().map(|b| i64::from_le_bytes(*b)))
        .unwrap_or(0);
    if !(0..=MAX_RAMP).contains(&count) {
        return Err(DemoError::rejected(
            id,
            format!("COUNT must be between 0 and {MAX_RAMP}, got {count}"),
        ));
    }
    let data: Vec<u8> = (0..count)
        .flat_map(|i| (i as f32 * 0.5).to_le_bytes())
        .collect();
    let t = Tensor::new(
        DataType::F32,
        tensorgate_codec::tensor::Shape::new(vec![count as u64]),
        Bytes::from(data),
    )
    .map_err(|e| DemoError::Invalid(format!("output 'OUTPUT0': {e}")))?;
    Ok(vec![("OUTPUT0".to_owned(), t)])
}

/// `rowsum`: each row's sum of an FP32 `[rows, cols]` input (already
/// checked), added up from +0.0 in f64, left to right, and narrowed once; the input comes back as
/// OUTPUT0, the same bytes.
fn rowsum(inputs: Vec<Named>) -> Result<Vec<Named>, DemoError> {
    let Some((_, input)) = inputs.into_iter().find(|(n, _)| n == "INPUT0") else {
        return Err(DemoError::Invalid("model 'rowsum' needs INPUT0".to_owned()));
    };
    let &[rows, cols] = input.shape.dims() else {
        return Err(DemoError::Invalid(
            "INPUT0 of 'rowsum' must have rank 2".to_owned(),
        ));
    };
    let row_bytes = (cols as usize).saturating_mul(4);
    let score: Vec<u8> = (0..rows as usize)
        .flat_map(|r| {
            let row = input
                .data
                .get(r * row_bytes..(r + 1) * row_bytes)
                .unwrap_or(&[]);
            let sum: f64 = row
                .chunks_exact(4)
                .map(|c| f64::from(f32::from_le_bytes([c[0], c[1], c[2], c[3]])))
                // From +0.0 as Python's sum(): an empty row is 0, not -0.
                .fold(0.0, |acc, v| acc + v);
            (sum as f32).to_le_bytes()
        })
        .collect();
    let score = Tensor::new(
        DataType::F32,
        tensorgate_codec::tensor::Shape::new(vec![rows]),
        Bytes::from(score),
    )
    .map_err(|e| DemoError::Invalid(format!("output 'score': {e}")))?;
    Ok(vec![
        ("score".to_owned(), score),
        ("OUTPUT0".to_owned(), input),
    ])
}

/// Triton's model-config spelling of a datatype.
fn config_type(dtype: DataType) -> String {
    match dtype {
        DataType::Bytes => "TYPE_STRING".to_owned(),
        other => format!("TYPE_{}", other.v2_name()),
    }
}

/// `simple`: element-wise wrapping sum and difference of two INT32 tensors
/// already checked to have the same shape.
fn simple(model: &Model, inputs: Vec<Named>) -> Result<Vec<Named>, DemoError> {
    let get = |name: &str| inputs.iter().find(|(n, _)| n == name).map(|(_, t)| t);
    let (Some(a), Some(b)) = (get("INPUT0"), get("INPUT1")) else {
        return Err(DemoError::Invalid(format!(
            "model '{}' needs INPUT0 and INPUT1",
            model.name
        )));
    };
    let mut sum = Vec::with_capacity(a.data.len());
    let mut diff = Vec::with_capacity(a.data.len());
    for (x, y) in a.data.chunks_exact(4).zip(b.data.chunks_exact(4)) {
        let x = i32::from_le_bytes([x[0], x[1], x[2], x[3]]);
        let y = i32::from_le_bytes([y[0], y[1], y[2], y[3]]);
        sum.extend_from_slice(&x.wrapping_add(y).to_le_bytes());
        diff.extend_from_slice(&x.wrapping_sub(y).to_le_bytes());
    }
    let out = |name: &str, data: Vec<u8>| -> Result<Named, DemoError> {
        let t = Tensor::new(DataType::I32, a.shape.clone(), Bytes::from(data))
            .map_err(|e| DemoError::Invalid(format!("output '{name}': {e}")))?;
        Ok((name.to_owned(), t))
    };
    Ok(vec![out("OUTPUT0", sum)?, out("OUTPUT1", diff)?])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::find;
    use tensorgate_codec::tensor::Shape;

    fn i32s(shape: &[u64], values: &[i32]) -> Tensor {
        let data: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        Tensor::new(DataType::I32, Shape::new(shape.to_vec()), Bytes::from(data)).unwrap()
    }

    fn values(t: &Tensor) -> Vec<i32> {
        t.data
            .chunks_exact(4)
            .map(|c| i32::from_le_bytes(c.try_into().unwrap()))
            .collect()
    }

    fn simple_inputs(a: Tensor, b: Tensor) -> Vec<Named> {
        vec![("INPUT0".into(), a), ("INPUT1".into(), b)]
    }

    #[test]
    fn simple_adds_and_subtracts_wrapping() {
        let mut a = vec![0; 16];
        let mut b = vec![1; 16];
        a[0] = i32::MAX;
        b[1] = i32::MIN;
        let out = find("simple")
            .unwrap()
            .run(None, simple_inputs(i32s(&[1, 16], &a), i32s(&[1, 16], &b)))
            .unwrap();
        assert_eq!(out[0].0, "OUTPUT0");
        assert_eq!(values(&out[0].1)[..2], [i32::MIN, i32::MIN]);
        assert_eq!(values(&out[1].1)[..2], [i32::MAX - 1, i32::MIN]);
        assert_eq!(out[1].1.shape, Shape::new(vec![1, 16]));
    }

    #[test]
    fn identity_renames_and_keeps_bytes() {
        let t = i32s(&[2], &[7, 8]);
        let out = find("identity")
            .unwrap()
            .run(None, vec![("x".into(), t.clone()), ("y".into(), t.clone())])
            .unwrap();
        assert_eq!(
            out,
            vec![("OUTPUT0".into(), t.clone()), ("OUTPUT1".into(), t)]
        );
    }

    #[test]
    fn ramp_makes_the_asked_length() {
        let count = Tensor::new(
            DataType::I64,
            Shape::new(vec![1]),
            Bytes::copy_from_slice(&3i64.to_le_bytes()),
        )
        .unwrap();
        let out = find("ramp")
            .unwrap()
            .run(None, vec![("COUNT".into(), count)])
            .unwrap();
        assert_eq!(out[0].1.shape, Shape::new(vec![3]));
        let v: Vec<f32> = out[0]
            .1
            .data
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
            .collect();
        assert_eq!(v, vec![0.0, 0.5, 1.0]);
    }

    fn f32s(shape: &[u64], values: &[f32]) -> Tensor {
        let data: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        Tensor::new(DataType::F32, Shape::new(shape.to_vec()), Bytes::from(data)).unwrap()
    }

    #[test]
    fn rowsum_sums_rows_in_f64_and_echoes_the_input() {
        // 2^24 + 1 + 1 is exact in f64; f32 accumulation would lose both 1s.
        let input = f32s(
            &[3, 3],
            &[16777216.0, 1.0, 1.0, 1.5, -0.5, 0.25, f32::NAN, 1.0, 2.0],
        );
        let m = find("rowsum").unwrap();
        let out = m.run(None, vec![("INPUT0".into(), input.clone())]).unwrap();
        assert_eq!(out[0].0, "score");
        assert_eq!(out[0].1.shape, Shape::new(vec![3]));
        let score: Vec<f32> = out[0]
            .1
            .data
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
            .collect();
        assert_eq!(score[..2], [16777218.0, 1.25]);
        assert!(score[2].is_nan());
        assert_eq!(out[1], ("OUTPUT0".into(), input));
        // Zero features: every row sums to 0.
        let out = m
            .run(None, vec![("INPUT0".into(), f32s(&[2, 0], &[]))])
            .unwrap();
        assert_eq!(&out[0].1.data[..], &[0u8; 8]);
        let err = m.run(None, vec![("INPUT0".into(), f32s(&[4], &[0.0; 4]))]);
        assert!(err.is_err());
        assert_eq!(
            m.metadata()["outputs"],
            json!([
                {"name":"score","datatype":"FP32","shape":[-1]},
                {"name":"OUTPUT0","datatype":"FP32","shape":[-1,-1]}
            ])
        );
        assert_eq!(
            m.config()["input"][0],
            json!({"name":"INPUT0","data_type":"TYPE_FP32","dims":[-1,-1]})
        );
        assert_eq!(m.config()["max_batch_size"], json!(0));
    }

    #[test]
    fn metadata_and_config() {
        let m = find("simple").unwrap();
        assert_eq!(
            m.metadata()["inputs"][0],
            json!({"name":"INPUT0","datatype":"INT32","shape":[-1,16]})
        );
        let c = find("repeat").unwrap().config();
        assert_eq!(
            c["input"][0],
            json!({"name":"text_input","data_type":"TYPE_STRING","dims":[1]})
        );
        assert_eq!(c["input"][1]["optional"], json!(true));
        assert_eq!(c["model_transaction_policy"]["decoupled"], json!(true));
    }
}
