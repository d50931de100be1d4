//! Triton's checks of a request's inputs against a model's declared
//! inputs, with Triton's error texts (docs/TRITON-FACTS.md §7).

use super::catalog::{Io, Model, Named};
use super::error::DemoError;
use tensorgate_codec::tensor::Shape;

impl Model {
    /// Triton's checks, in Triton's order: input set, datatype, batch size,
    /// shape.
    pub fn check_inputs(&self, id: Option<&str>, inputs: &[Named]) -> Result<(), DemoError> {
        let got: Vec<&str> = inputs.iter().map(|(n, _)| n.as_str()).collect();
        let missing: Vec<&str> = self
            .inputs
            .iter()
            .filter(|io| !io.optional && !got.contains(&io.name))
            .map(|io| io.name)
            .collect();
        let unknown = got
            .iter()
            .any(|n| !self.inputs.iter().any(|io| io.name == *n));
        if !missing.is_empty() || unknown {
            return Err(DemoError::rejected(
                id,
                format!(
                    "expected {} inputs but got {} inputs for model '{}'. Got input(s) {}, but missing required input(s) {}. Please provide all required input(s).",
                    self.inputs.len(),
                    got.len(),
                    self.name,
                    quoted_list(&got),
                    quoted_list(&missing)
                ),
            ));
        }
        let mut batch = None;
        for (name, t) in inputs {
            let Some(io) = self.inputs.iter().find(|io| io.name == name) else {
                continue;
            };
            if t.dtype != io.dtype {
                return Err(DemoError::rejected(
                    id,
                    format!(
                        "inference input '{name}' data-type is '{}', but model '{}' expects '{}'",
                        t.dtype, self.name, io.dtype
                    ),
                ));
            }
            let mut dims = t.shape.dims();
            if self.max_batch_size > 0 {
                let Some((&b, rest)) = dims
                    .split_first()
                    .filter(|(b, rest)| **b <= self.max_batch_size && rest.len() == io.dims.len())
                else {
                    return Err(DemoError::rejected(
                        id,
                        format!(
                            "inference request batch-size must be <= {} for '{}'",
                            self.max_batch_size, self.name
                        ),
                    ));
                };
                if *batch.get_or_insert(b) != b {
                    return Err(DemoError::rejected(
                        id,
                        format!(
                            "input '{name}' batch size does not match other inputs for '{}'",
                            self.name
                        ),
                    ));
                }
                dims = rest;
            }
            let fits = dims.len() == io.dims.len()
                && dims
                    .iter()
                    .zip(io.dims)
                    .all(|(&d, &w)| w < 0 || d == w as u64);
            if !fits {
                return Err(DemoError::rejected(
                    id,
                    self.shape_error(name, io, &t.shape),
                ));
            }
        }
        Ok(())
    }

    fn shape_error(&self, name: &str, io: &Io, got: &Shape) -> String {
        let expected = self
            .full_dims(io)
            .iter()
            .map(i64::to_string)
            .collect::<Vec<_>>()
            .join(",");
        let got = got
            .dims()
            .iter()
            .map(u64::to_string)
            .collect::<Vec<_>>()
            .join(",");
        let note = if self.max_batch_size > 0 {
            BATCH_NOTE
        } else {
            ""
        };
        format!(
            "unexpected shape for input '{name}' for model '{}'. Expected [{expected}], got [{got}]. {note}",
            self.name
        )
    }
}

const BATCH_NOTE: &str = "NOTE: Setting a non-zero max_batch_size in the model config requires a batch dimension to be prepended to each input shape. If you want to specify the full shape including the batch dim in your input dims config, try setting max_batch_size to zero. See the model configuration docs for more info on max_batch_size.";

pub fn check_duplicates(id: Option<&str>, inputs: &[Named]) -> Result<(), DemoError> {
    for (i, (name, _)) in inputs.iter().enumerate() {
        if inputs[..i].iter().any(|(n, _)| n == name) {
            return Err(DemoError::rejected(
                id,
                format!("input '{name}' already exists in request"),
            ));
        }
    }
    Ok(())
}

/// `['A','B']`, as Triton lists input names.
fn quoted_list(names: &[&str]) -> String {
    let quoted: Vec<String> = names.iter().map(|n| format!("'{n}'")).collect();
    format!("[{}]", quoted.join(","))
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;

    use super::*;
    use crate::catalog::find;
    use tensorgate_codec::tensor::{DataType, Tensor};

    fn i32s(shape: &[u64], values: &[i32]) -> Tensor {
        let data: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        Tensor::new(DataType::I32, Shape::new(shape.to_vec()), Bytes::from(data)).unwrap()
    }

    fn simple_inputs(a: Tensor, b: Tensor) -> Vec<Named> {
        vec![("INPUT0".into(), a), ("INPUT1".into(), b)]
    }

    fn simple_error(a: Tensor, b: Tensor) -> String {
        let m = find("simple").unwrap();
        m.run(None, simple_inputs(a, b)).unwrap_err().to_string()
    }

    #[test]
    fn simple_checks_like_triton() {
        let ok = || i32s(&[1, 16], &[0; 16]);
        let e = simple_error(ok(), i32s(&[1, 8], &[0; 8]));
        assert!(
            e.starts_with("[request id: <id_unknown>] unexpected shape for input 'INPUT1' for model 'simple'. Expected [-1,16], got [1,8]. NOTE: Setting"),
            "{e}"
        );
        let e = simple_error(ok(), i32s(&[16], &[0; 16]));
        assert_eq!(
            e,
            "[request id: <id_unknown>] inference request batch-size must be <= 8 for 'simple'"
        );
        let e = simple_error(ok(), i32s(&[9, 16], &[0; 144]));
        assert!(e.ends_with("batch-size must be <= 8 for 'simple'"), "{e}");
        let e = simple_error(ok(), i32s(&[2, 16], &[0; 32]));
        assert!(e.ends_with("batch size does not match other inputs for 'simple'"));
        let m = find("simple").unwrap();
        let e = m.run(Some("r"), vec![("INPUT0".into(), ok())]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "[request id: r] expected 2 inputs but got 1 inputs for model 'simple'. Got input(s) ['INPUT0'], but missing required input(s) ['INPUT1']. Please provide all required input(s)."
        );
        let e = m
            .run(None, vec![("INPUT0".into(), ok()), ("INPUT0".into(), ok())])
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "[request id: <id_unknown>] input 'INPUT0' already exists in request"
        );
    }
}
