//! `InferParameter` (a oneof of bool, int64, string, double and uint64)
//! and the V2 JSON `parameters` object, both ways.
//!
//! gRPC to JSON keeps every value; JSON to gRPC writes an integer as
//! `int64_param` (or `uint64_param` past `i64::MAX`), any other number as
//! `double_param`. A `uint64_param` below 2^63 so comes back as
//! `int64_param`, which Triton reads the same way wherever it takes
//! either (`priority`).

use std::collections::BTreeMap;

use serde_json::{Number, Value};

use super::proto::inference::InferParameter;
use super::proto::inference::infer_parameter::ParameterChoice;

/// A parameter with no value in the other protocol.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ParamError {
    #[error("parameter \"{0}\" has no value")]
    Empty(String),
    #[error("parameter \"{0}\" is a double that JSON cannot hold (NaN or infinite)")]
    NotFinite(String),
    #[error("parameter \"{name}\" is a JSON {kind}; gRPC parameters are bools, numbers or strings")]
    Kind { name: String, kind: &'static str },
}

/// One gRPC parameter as a JSON value.
pub fn value(name: &str, p: &InferParameter) -> Result<Value, ParamError> {
    Ok(match &p.parameter_choice {
        None => return Err(ParamError::Empty(name.to_owned())),
        Some(ParameterChoice::BoolParam(b)) => Value::Bool(*b),
        Some(ParameterChoice::Int64Param(i)) => Value::from(*i),
        Some(ParameterChoice::Uint64Param(u)) => Value::from(*u),
        Some(ParameterChoice::StringParam(s)) => Value::String(s.clone()),
        Some(ParameterChoice::DoubleParam(d)) => Number::from_f64(*d)
            .map(Value::Number)
            .ok_or_else(|| ParamError::NotFinite(name.to_owned()))?,
    })
}

/// gRPC parameters as a JSON object, leaving out the names in `skip`.
pub fn to_json<M: FromIterator<(String, Value)>>(
    params: &BTreeMap<String, InferParameter>,
    skip: &[&str],
) -> Result<M, ParamError> {
    params
        .iter()
        .filter(|(k, _)| !skip.contains(&k.as_str()))
        .map(|(k, p)| Ok((k.clone(), value(k, p)?)))
        .collect()
}

/// One JSON value as a gRPC parameter.
pub fn parameter(name: &str, v: &Value) -> Result<InferParameter, ParamError> {
    let choice = match v {
        Value::Bool(b) => ParameterChoice::BoolParam(*b),
        Value::String(s) => ParameterChoice::StringParam(s.clone()),
        Value::Number(n) => match (n.as_i64(), n.as_u64(), n.as_f64()) {
            (Some(i), _, _) => ParameterChoice::Int64Param(i),
            (None, Some(u), _) => ParameterChoice::Uint64Param(u),
            (None, None, Some(d)) => ParameterChoice::DoubleParam(d),
            (None, None, None) => return Err(ParamError::NotFinite(name.to_owned())),
        },
        other => {
            return Err(ParamError::Kind {
                name: name.to_owned(),
                kind: kind(other),
            });
        }
    };
    Ok(InferParameter {
        parameter_choice: Some(choice),
    })
}

/// A JSON object as gRPC parameters, leaving out the names in `skip`.
pub fn from_json<'a>(
    params: impl IntoIterator<Item = (&'a String, &'a Value)>,
    skip: &[&str],
) -> Result<BTreeMap<String, InferParameter>, ParamError> {
    params
        .into_iter()
        .filter(|(k, _)| !skip.contains(&k.as_str()))
        .map(|(k, v)| Ok((k.clone(), parameter(k, v)?)))
        .collect()
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn p(choice: ParameterChoice) -> InferParameter {
        InferParameter {
            parameter_choice: Some(choice),
        }
    }

    #[test]
    fn every_kind_both_ways() {
        let mut grpc = BTreeMap::new();
        grpc.insert("b".to_owned(), p(ParameterChoice::BoolParam(true)));
        grpc.insert("i".to_owned(), p(ParameterChoice::Int64Param(-3)));
        grpc.insert("u".to_owned(), p(ParameterChoice::Uint64Param(u64::MAX)));
        grpc.insert("s".to_owned(), p(ParameterChoice::StringParam("x".into())));
        grpc.insert("d".to_owned(), p(ParameterChoice::DoubleParam(0.5)));
        grpc.insert(
            "binary_data".to_owned(),
            p(ParameterChoice::BoolParam(true)),
        );
        let json: serde_json::Map<_, _> = to_json(&grpc, &["binary_data"]).unwrap();
        assert_eq!(
            Value::Object(json.clone()),
            json!({"b": true, "d": 0.5, "i": -3, "s": "x", "u": 18446744073709551615u64})
        );
        let back = from_json(&json, &[]).unwrap();
        grpc.remove("binary_data");
        assert_eq!(back, grpc);
        // A small uint64 comes back as int64.
        let small = parameter("n", &json!(7)).unwrap();
        assert_eq!(small, p(ParameterChoice::Int64Param(7)));
    }

    #[test]
    fn what_has_no_counterpart() {
        let empty = InferParameter {
            parameter_choice: None,
        };
        assert_eq!(
            value("x", &empty).unwrap_err().to_string(),
            "parameter \"x\" has no value"
        );
        assert_eq!(
            value("x", &p(ParameterChoice::DoubleParam(f64::NAN))),
            Err(ParamError::NotFinite("x".into()))
        );
        assert_eq!(
            parameter("o", &json!({"a": 1})).unwrap_err().to_string(),
            "parameter \"o\" is a JSON object; gRPC parameters are bools, numbers or strings"
        );
        assert!(parameter("n", &Value::Null).is_err());
    }
}
