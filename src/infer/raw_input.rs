//! A raw binary request (`Inference-Header-Content-Length: 0`) names no
//! input: the whole body is the model's single input. To hold a route's
//! input rules for it, the input's name and datatype come from the model's
//! metadata and its shape is deduced from the body size the way Triton
//! deduces it (a batch dimension of 1, the one variable dimension from the
//! size), and the result is checked like any input. When that cannot be
//! done (no metadata, more than one input) and the route has input rules,
//! the request is refused with what to send instead: a route's rules are
//! never skipped silently.

pub(crate) use super::error::RawError;

use super::InferError;
use crate::infer::metadata::{MetadataError, TensorSpec};
use crate::infer::{Exchange, ModelRef};
use crate::rules::Side;
use crate::tensor::Shape;

/// Checks a raw request of `size` bytes for `model` against the route's
/// input rules. Routes without input rules are not asked about (nothing
/// to hold); the backend still checks the body itself.
pub(crate) async fn check(
    exchange: Exchange<'_>,
    model: &ModelRef,
    size: u64,
) -> Result<(), InferError> {
    let rules = &exchange.route.rules;
    if rules.inputs.is_empty() {
        return Ok(());
    }
    let refused = |source| InferError::Raw {
        route: exchange.route.name.clone(),
        source: Box::new(source),
    };
    let fetch = super::backend::metadata(exchange.upstream, model);
    let meta = match exchange.metadata.get(model, fetch).await {
        Ok(m) => m,
        // The backend is unreachable: say that, not that metadata is missing.
        Err(MetadataError::Upstream(e)) => return Err(e.into()),
        Err(e) => {
            return Err(refused(RawError::NoMetadata {
                model: model.name.clone(),
                reason: e.to_string(),
            }));
        }
    };
    let [input] = meta.inputs.as_slice() else {
        return Err(refused(RawError::Inputs {
            model: model.name.clone(),
            count: meta.inputs.len(),
        }));
    };
    let shape = deduce(input, size).map_err(|reason| {
        refused(RawError::Size {
            model: model.name.clone(),
            name: input.name.clone(),
            size,
            dtype: input.datatype,
            shape: format!("{:?}", input.shape).replace(' ', ""),
            reason,
        })
    })?;
    let rule = |violation| InferError::Rule {
        route: exchange.route.name.clone(),
        violation,
    };
    rules
        .check(Side::Input, &input.name, input.datatype, &shape)
        .map_err(rule)?;
    rules
        .check_names(Side::Input, [input.name.as_str()])
        .map_err(rule)
}

/// The shape Triton gives a raw input of `size` bytes. Metadata shows a
/// batching model's batch dimension as `-1` like any variable one: every
/// `-1` but the last becomes 1 (Triton sends a raw request as a batch of
/// one), and the last holds what the body's size leaves.
pub(crate) fn deduce(spec: &TensorSpec, size: u64) -> Result<Shape, &'static str> {
    let wildcards = spec.shape.iter().filter(|&&d| d < 0).count();
    let fixed = spec
        .shape
        .iter()
        .filter(|&&d| d >= 0)
        .try_fold(1u64, |n, &d| n.checked_mul(d as u64))
        .ok_or("the model's shape overflows")?;
    let Some(elem) = spec.datatype.fixed_size() else {
        // BYTES: the body is one element.
        let dims = spec.shape.iter().map(|&d| if d < 0 { 1 } else { d as u64 });
        let shape = Shape::new(dims.collect());
        return match shape.element_count() {
            Ok(1) => Ok(shape),
            _ => Err("a raw BYTES input must have exactly one element"),
        };
    };
    let unit = fixed
        .checked_mul(elem as u64)
        .ok_or("the model's shape overflows")?;
    let last = if wildcards == 0 {
        if size != unit {
            return Err("the body must be exactly the input's size");
        }
        0
    } else if unit == 0 || !size.is_multiple_of(unit) {
        return Err("the body is not a whole number of the input's rows");
    } else {
        size / unit
    };
    let mut seen = 0;
    let dims = spec.shape.iter().map(|&d| {
        if d >= 0 {
            return d as u64;
        }
        seen += 1;
        if seen == wildcards { last } else { 1 }
    });
    Ok(Shape::new(dims.collect()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tensor::DataType;

    fn check(dtype: DataType, shape: &[i64], size: u64, expected: Result<&[u64], &str>) {
        let spec = TensorSpec {
            name: "X".into(),
            datatype: dtype,
            shape: shape.to_vec(),
        };
        let got = deduce(&spec, size);
        match expected {
            Ok(dims) => assert_eq!(got, Ok(Shape::new(dims.to_vec())), "{shape:?} {size}"),
            Err(e) => assert_eq!(got, Err(e), "{shape:?} {size}"),
        }
    }

    #[test]
    fn shapes_are_deduced_as_triton_does() {
        // identity_fp32: dims [-1], no batching.
        check(DataType::F32, &[-1], 12, Ok(&[3]));
        check(
            DataType::F32,
            &[-1],
            10,
            Err("the body is not a whole number of the input's rows"),
        );
        // simple with max_batch_size 8: metadata [-1, 16].
        check(DataType::I32, &[-1, 16], 64, Ok(&[1, 16]));
        check(DataType::I32, &[-1, 16], 128, Ok(&[2, 16]));
        // A batching model with a variable dimension: [-1, -1, 4].
        check(DataType::F32, &[-1, -1, 4], 48, Ok(&[1, 3, 4]));
        check(DataType::U8, &[2, 3], 6, Ok(&[2, 3]));
        check(
            DataType::U8,
            &[2, 3],
            7,
            Err("the body must be exactly the input's size"),
        );
        check(DataType::Bytes, &[1], 100, Ok(&[1]));
        check(DataType::Bytes, &[-1, 1], 100, Ok(&[1, 1]));
        check(
            DataType::Bytes,
            &[4],
            100,
            Err("a raw BYTES input must have exactly one element"),
        );
    }
}
