//! Which outputs a V2 request asks for, and in which form, with Triton
//! 2.51's rules (measured, docs/TRITON-FACTS.md §2):
//!
//! - no `"outputs"` member, **or an empty list**: every output comes back,
//!   binary iff the request-level `binary_data_output` is true;
//! - a non-empty list: only the listed outputs, each binary iff its own
//!   `binary_data` is true (`binary_data_output` is then irrelevant).
//!
//! Both the gateway (to render a reply the way the client asked) and the
//! demo backend (to select outputs as Triton does) read requests through
//! this one function.

use serde_json::{Map, Value};

use super::model::Document;

/// The outputs a request asks for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OutputSelection {
    /// Every output; binary iff `binary_data_output`.
    All { binary: bool },
    /// Only these outputs, in the order listed.
    Listed(Vec<RequestedOutput>),
}

impl Default for OutputSelection {
    fn default() -> Self {
        OutputSelection::All { binary: false }
    }
}

/// One entry of a request's `"outputs"` list.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RequestedOutput {
    pub name: String,
    /// Its `parameters.binary_data`.
    pub binary: bool,
    /// Its `parameters.classification` is present (Triton then returns the
    /// top classes as BYTES instead of the tensor).
    pub classification: bool,
}

/// The `"outputs"` member or a binary flag is malformed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum OutputsError {
    #[error("\"outputs\" must be an array of objects")]
    NotAnArray,
    #[error("each requested output needs a string \"name\"")]
    MissingName,
    #[error("output '{output}': \"parameters\" must be an object")]
    Parameters { output: String },
    #[error("parameter '{key}' must be a boolean")]
    NotABoolean { key: &'static str },
}

impl OutputSelection {
    /// Reads a request document's output selection.
    pub fn from_request(doc: &Document) -> Result<OutputSelection, OutputsError> {
        let listed = match doc.member("outputs") {
            None => Vec::new(),
            Some(Value::Array(items)) => items
                .iter()
                .map(requested_output)
                .collect::<Result<Vec<_>, _>>()?,
            Some(_) => return Err(OutputsError::NotAnArray),
        };
        if listed.is_empty() {
            let binary = bool_parameter(doc.parameters(), "binary_data_output")?;
            return Ok(OutputSelection::All { binary });
        }
        Ok(OutputSelection::Listed(listed))
    }

    /// Every output binary: what a raw binary request (no JSON header) gets.
    pub fn all_binary() -> OutputSelection {
        OutputSelection::All { binary: true }
    }

    /// Whether `output` is returned at all.
    pub fn includes(&self, output: &str) -> bool {
        match self {
            OutputSelection::All { .. } => true,
            OutputSelection::Listed(listed) => listed.iter().any(|o| o.name == output),
        }
    }

    /// Whether `output` is wanted as binary data.
    pub fn wants_binary(&self, output: &str) -> bool {
        match self {
            OutputSelection::All { binary } => *binary,
            OutputSelection::Listed(listed) => listed.iter().any(|o| o.name == output && o.binary),
        }
    }

    /// Whether any output could be wanted as binary data.
    pub fn any_binary(&self) -> bool {
        match self {
            OutputSelection::All { binary } => *binary,
            OutputSelection::Listed(listed) => listed.iter().any(|o| o.binary),
        }
    }
}

fn requested_output(value: &Value) -> Result<RequestedOutput, OutputsError> {
    let name = value
        .get("name")
        .and_then(Value::as_str)
        .ok_or(OutputsError::MissingName)?;
    let params = match value.get("parameters") {
        None => None,
        Some(Value::Object(map)) => Some(map),
        Some(_) => {
            return Err(OutputsError::Parameters {
                output: name.to_owned(),
            });
        }
    };
    Ok(RequestedOutput {
        name: name.to_owned(),
        binary: bool_parameter(params, "binary_data")?,
        classification: params.is_some_and(|p| p.contains_key("classification")),
    })
}

fn bool_parameter(
    params: Option<&Map<String, Value>>,
    key: &'static str,
) -> Result<bool, OutputsError> {
    match params.and_then(|p| p.get(key)) {
        None => Ok(false),
        Some(Value::Bool(b)) => Ok(*b),
        Some(_) => Err(OutputsError::NotABoolean { key }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::v2::{DocKind, DocLimits, DocParser};

    fn selection(json: &str) -> Result<OutputSelection, String> {
        let doc =
            DocParser::parse(DocKind::Request, DocLimits::default(), json.as_bytes()).unwrap();
        OutputSelection::from_request(&doc).map_err(|e| e.to_string())
    }

    fn listed(items: &[(&str, bool)]) -> OutputSelection {
        OutputSelection::Listed(
            items
                .iter()
                .map(|(n, b)| RequestedOutput {
                    name: (*n).into(),
                    binary: *b,
                    classification: false,
                })
                .collect(),
        )
    }

    #[test]
    fn triton_rules() {
        assert_eq!(
            selection(r#"{"inputs":[]}"#),
            Ok(OutputSelection::All { binary: false })
        );
        assert_eq!(
            selection(r#"{"inputs":[],"parameters":{"binary_data_output":true}}"#),
            Ok(OutputSelection::All { binary: true })
        );
        let s = selection(
            r#"{"inputs":[],"parameters":{"binary_data_output":true},"outputs":[{"name":"A"},{"name":"B","parameters":{"binary_data":true}}]}"#,
        )
        .unwrap();
        assert_eq!(s, listed(&[("A", false), ("B", true)]));
        assert!(!s.wants_binary("A") && s.wants_binary("B") && s.any_binary());
        assert!(s.includes("A") && !s.includes("C"));
    }

    /// Measured on Triton 2.51: `"outputs": []` is the same as no list,
    /// so `binary_data_output` still applies.
    #[test]
    fn an_empty_list_means_every_output() {
        let s = selection(r#"{"inputs":[],"outputs":[],"parameters":{"binary_data_output":true}}"#)
            .unwrap();
        assert_eq!(s, OutputSelection::All { binary: true });
        assert!(s.wants_binary("ANY") && s.includes("ANY"));
        assert_eq!(
            selection(r#"{"inputs":[],"outputs":[]}"#),
            Ok(OutputSelection::All { binary: false })
        );
    }

    #[test]
    fn malformed() {
        assert_eq!(
            selection(r#"{"inputs":[],"outputs":{}}"#).unwrap_err(),
            "\"outputs\" must be an array of objects"
        );
        assert_eq!(
            selection(r#"{"inputs":[],"outputs":[{"nom":"A"}]}"#).unwrap_err(),
            "each requested output needs a string \"name\""
        );
        assert_eq!(
            selection(r#"{"inputs":[],"outputs":[{"name":"A","parameters":{"binary_data":1}}]}"#)
                .unwrap_err(),
            "parameter 'binary_data' must be a boolean"
        );
        let s = selection(
            r#"{"inputs":[],"outputs":[{"name":"A","parameters":{"classification":2}}]}"#,
        )
        .unwrap();
        assert!(matches!(&s, OutputSelection::Listed(l) if l[0].classification));
    }
}
