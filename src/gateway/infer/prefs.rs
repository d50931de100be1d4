//! What the client asked for each output: binary or JSON. Triton's rules
//! (2.51): with an `outputs` list only the listed outputs come back, each
//! binary iff its own `binary_data` is true; without one, every output comes
//! back, binary iff the request-level `binary_data_output` is true. A raw
//! binary request (no JSON header) gets binary outputs.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::codec::v2::Document;

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OutputPrefs {
    /// Listed outputs and whether each wants binary.
    listed: Option<BTreeMap<String, bool>>,
    default_binary: bool,
}

impl OutputPrefs {
    pub fn from_request(doc: &Document) -> OutputPrefs {
        let default_binary = doc
            .parameters()
            .and_then(|p| p.get("binary_data_output"))
            .and_then(Value::as_bool)
            .unwrap_or(false);
        let listed = doc
            .member("outputs")
            .and_then(Value::as_array)
            .map(|outputs| {
                outputs
                    .iter()
                    .filter_map(|o| {
                        let name = o.get("name")?.as_str()?.to_owned();
                        let binary = o
                            .get("parameters")
                            .and_then(|p| p.get("binary_data"))
                            .and_then(Value::as_bool)
                            .unwrap_or(false);
                        Some((name, binary))
                    })
                    .collect()
            });
        OutputPrefs {
            listed,
            default_binary,
        }
    }

    /// Every output binary: raw binary requests.
    pub fn all_binary() -> OutputPrefs {
        OutputPrefs {
            listed: None,
            default_binary: true,
        }
    }

    pub fn wants_binary(&self, output: &str) -> bool {
        match &self.listed {
            Some(listed) => listed.get(output).copied().unwrap_or(false),
            None => self.default_binary,
        }
    }

    /// Whether any output could be wanted as binary.
    pub fn any_binary(&self) -> bool {
        match &self.listed {
            Some(listed) => listed.values().any(|&b| b),
            None => self.default_binary,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::v2::{DocKind, DocLimits, DocParser};

    fn prefs(json: &str) -> OutputPrefs {
        OutputPrefs::from_request(
            &DocParser::parse(DocKind::Request, DocLimits::default(), json.as_bytes()).unwrap(),
        )
    }

    #[test]
    fn triton_semantics() {
        let p = prefs(r#"{"inputs":[]}"#);
        assert!(!p.wants_binary("A") && !p.any_binary());
        let p = prefs(r#"{"inputs":[],"parameters":{"binary_data_output":true}}"#);
        assert!(p.wants_binary("A") && p.any_binary());
        let p = prefs(
            r#"{"inputs":[],"parameters":{"binary_data_output":true},"outputs":[{"name":"A"},{"name":"B","parameters":{"binary_data":true}}]}"#,
        );
        assert!(!p.wants_binary("A"));
        assert!(p.wants_binary("B"));
        assert!(p.any_binary());
    }
}
