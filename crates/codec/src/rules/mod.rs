//! Tensor rules per route: allowed data types, shapes with `-1` wildcards,
//! required and unknown inputs. Checked on a tensor's head (name, datatype,
//! shape) before any of its data is read or forwarded.
//!
//! Pure functions over the tensor model: no I/O, no HTTP.

use std::collections::BTreeMap;
use std::fmt;

use crate::tensor::{DataType, DecthingsType, Shape};

/// A shape pattern: each dimension a size or `-1` (any size).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShapeRule(pub Vec<i64>);

impl ShapeRule {
    pub fn matches(&self, shape: &Shape) -> bool {
        self.0.len() == shape.rank()
            && self
                .0
                .iter()
                .zip(shape.dims())
                .all(|(&rule, &dim)| rule == -1 || rule as u64 == dim)
    }

    /// Number of `-1` dimensions.
    pub fn wildcards(&self) -> usize {
        self.0.iter().filter(|&&d| d == -1).count()
    }
}

impl fmt::Display for ShapeRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        crate::tensor::write_dims(f, &self.0)
    }
}

/// What one named tensor must look like.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TensorRule {
    pub shape: Option<ShapeRule>,
    /// `None`: any data type. Decthings names are mapped to their V2 type
    /// (`string`, `image`, ... all to BYTES).
    pub allowed_types: Option<Vec<DataType>>,
    /// The Decthings-only names (`string`, `binary`, `image`, `audio`,
    /// `video`) written in `allowed_types`, which BYTES alone cannot tell
    /// apart; `None` when none were written.
    pub decthings_types: Option<Vec<DecthingsType>>,
    pub required: bool,
}

/// The rules of one route.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RouteRules {
    pub inputs: BTreeMap<String, TensorRule>,
    pub outputs: BTreeMap<String, TensorRule>,
    pub allow_unknown_inputs: bool,
}

/// Whether a rule is about a request input or a response output.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    Input,
    Output,
}

impl Side {
    fn noun(self) -> &'static str {
        match self {
            Side::Input => "input",
            Side::Output => "output",
        }
    }
}

/// A tensor broke a rule. Messages name the tensor and the rule.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Violation {
    #[error("{} \"{name}\": shape {shape} does not match rule {rule}", side.noun())]
    Shape {
        side: Side,
        name: String,
        shape: Shape,
        rule: ShapeRule,
    },
    #[error("{} \"{name}\": datatype {dtype} is not allowed (allowed: {})", side.noun(), list(allowed))]
    DataType {
        side: Side,
        name: String,
        dtype: DataType,
        allowed: Vec<DataType>,
    },
    #[error("{} \"{name}\": Decthings type {dtype} is not allowed (allowed: {})", side.noun(), decthings_list(allowed))]
    DecthingsType {
        side: Side,
        name: String,
        dtype: DecthingsType,
        allowed: Vec<DecthingsType>,
    },
    #[error("{} \"{name}\" is required but missing", side.noun())]
    Missing { side: Side, name: String },
    #[error("input \"{name}\" is not one of this route's inputs ({known})")]
    Unknown { name: String, known: String },
    #[error("{} \"{name}\" appears more than once", side.noun())]
    Duplicate { side: Side, name: String },
    #[error(
        "raw binary body of {size} bytes cannot be input \"{name}\" ({dtype} with shape rule {rule})"
    )]
    RawSize {
        name: String,
        size: u64,
        dtype: DataType,
        rule: ShapeRule,
    },
}

fn decthings_list(types: &[DecthingsType]) -> String {
    types
        .iter()
        .map(|t| t.name())
        .collect::<Vec<_>>()
        .join(", ")
}

fn list(types: &[DataType]) -> String {
    types
        .iter()
        .map(|t| t.v2_name())
        .collect::<Vec<_>>()
        .join(", ")
}

impl Violation {
    /// The `rule` label for metrics: a fixed set.
    pub fn rule_label(&self) -> &'static str {
        match self {
            Violation::Shape { .. } | Violation::RawSize { .. } => "shape",
            Violation::DataType { .. } | Violation::DecthingsType { .. } => "datatype",
            Violation::Missing { .. } => "required",
            Violation::Unknown { .. } => "unknown_input",
            Violation::Duplicate { .. } => "duplicate",
        }
    }

    /// The tensor the violation is about.
    pub fn tensor_name(&self) -> &str {
        match self {
            Violation::Shape { name, .. }
            | Violation::DataType { name, .. }
            | Violation::DecthingsType { name, .. }
            | Violation::Missing { name, .. }
            | Violation::Unknown { name, .. }
            | Violation::Duplicate { name, .. }
            | Violation::RawSize { name, .. } => name,
        }
    }

    /// The tensor name as configured, for metrics labels; tensors the
    /// configuration does not name (unknown inputs) share one label so
    /// request data never creates label values.
    pub fn tensor_label<'a>(&'a self, rules: &RouteRules) -> &'a str {
        let name = match self {
            Violation::Shape { name, .. }
            | Violation::DataType { name, .. }
            | Violation::DecthingsType { name, .. }
            | Violation::Missing { name, .. }
            | Violation::Duplicate { name, .. }
            | Violation::RawSize { name, .. } => name.as_str(),
            Violation::Unknown { .. } => return "_unknown",
        };
        if rules.inputs.contains_key(name) || rules.outputs.contains_key(name) {
            name
        } else {
            "_unknown"
        }
    }
}

impl RouteRules {
    /// Checks one tensor's head against its rule.
    pub fn check(
        &self,
        side: Side,
        name: &str,
        dtype: DataType,
        shape: &Shape,
    ) -> Result<(), Violation> {
        let rules = match side {
            Side::Input => &self.inputs,
            Side::Output => &self.outputs,
        };
        let Some(rule) = rules.get(name) else {
            if side == Side::Input && !self.allow_unknown_inputs && !self.inputs.is_empty() {
                return Err(Violation::Unknown {
                    name: name.to_owned(),
                    known: self.inputs.keys().cloned().collect::<Vec<_>>().join(", "),
                });
            }
            return Ok(());
        };
        if let Some(allowed) = &rule.allowed_types
            && !allowed.contains(&dtype)
        {
            return Err(Violation::DataType {
                side,
                name: name.to_owned(),
                dtype,
                allowed: allowed.clone(),
            });
        }
        if let Some(pattern) = &rule.shape
            && !pattern.matches(shape)
        {
            return Err(Violation::Shape {
                side,
                name: name.to_owned(),
                shape: shape.clone(),
                rule: pattern.clone(),
            });
        }
        Ok(())
    }

    /// Checks a tensor's Decthings type against a rule that names
    /// Decthings-only types (`string`, `binary`, `image`, `audio`, `video`):
    /// only BYTES tensors are concerned, since V2 types already say the rest.
    pub fn check_decthings(
        &self,
        side: Side,
        name: &str,
        dtype: DecthingsType,
    ) -> Result<(), Violation> {
        let rules = match side {
            Side::Input => &self.inputs,
            Side::Output => &self.outputs,
        };
        let Some(allowed) = rules.get(name).and_then(|r| r.decthings_types.as_ref()) else {
            return Ok(());
        };
        if dtype.to_v2() != DataType::Bytes || allowed.contains(&dtype) {
            return Ok(());
        }
        Err(Violation::DecthingsType {
            side,
            name: name.to_owned(),
            dtype,
            allowed: allowed.clone(),
        })
    }

    /// The one Decthings type a BYTES output's rule pins, if it names
    /// exactly one of `string`, `binary`, `image`, `audio`, `video`.
    pub fn pinned_decthings_type(&self, output: &str) -> Option<DecthingsType> {
        match self.outputs.get(output)?.decthings_types.as_deref()? {
            [one] => Some(*one),
            _ => None,
        }
    }

    /// Checks the set of tensor names: no duplicates, every required one
    /// present.
    pub fn check_names<'a, I>(&self, side: Side, names: I) -> Result<(), Violation>
    where
        I: IntoIterator<Item = &'a str>,
        I::IntoIter: Clone,
    {
        /// Most names compared pairwise: a set of a request's few names
        /// cost an allocation per request and more than the comparisons.
        const PAIRWISE: usize = 16;
        let names = names.into_iter();
        let duplicate = |name: &str| Violation::Duplicate {
            side,
            name: name.to_owned(),
        };
        if names.size_hint().1.is_some_and(|n| n <= PAIRWISE) {
            for (i, name) in names.clone().enumerate() {
                if names.clone().take(i).any(|n| n == name) {
                    return Err(duplicate(name));
                }
            }
            return self.check_required(side, |r| names.clone().any(|n| n == r));
        }
        let mut seen = std::collections::BTreeSet::new();
        for name in names {
            if !seen.insert(name) {
                return Err(duplicate(name));
            }
        }
        self.check_required(side, |r| seen.contains(r))
    }

    /// Every required tensor of `side` is among those `present` says are.
    fn check_required(&self, side: Side, present: impl Fn(&str) -> bool) -> Result<(), Violation> {
        let rules = match side {
            Side::Input => &self.inputs,
            Side::Output => &self.outputs,
        };
        for (name, rule) in rules {
            if rule.required && !present(name) {
                return Err(Violation::Missing {
                    side,
                    name: name.clone(),
                });
            }
        }
        Ok(())
    }

    /// For a raw binary request (the whole body is the single input): when
    /// the route declares exactly one input with one fixed-size data type,
    /// checks the body size against it.
    pub fn check_raw(&self, size: u64) -> Result<(), Violation> {
        let mut inputs = self.inputs.iter();
        let (Some((name, rule)), None) = (inputs.next(), inputs.next()) else {
            return Ok(());
        };
        let (Some([dtype]), Some(shape)) = (rule.allowed_types.as_deref(), &rule.shape) else {
            return Ok(());
        };
        let Some(elem) = dtype.fixed_size() else {
            return Ok(());
        };
        let fixed: u64 = shape
            .0
            .iter()
            .filter(|&&d| d >= 0)
            .map(|&d| d as u64)
            .product();
        let unit = fixed.saturating_mul(elem as u64);
        let ok = match shape.wildcards() {
            0 => size == unit,
            1 => unit != 0 && size.is_multiple_of(unit),
            _ => size.is_multiple_of(elem as u64),
        };
        if ok {
            return Ok(());
        }
        Err(Violation::RawSize {
            name: name.clone(),
            size,
            dtype: *dtype,
            rule: shape.clone(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules() -> RouteRules {
        let mut inputs = BTreeMap::new();
        inputs.insert(
            "INPUT0".to_owned(),
            TensorRule {
                shape: Some(ShapeRule(vec![-1, 4])),
                allowed_types: Some(vec![DataType::F32, DataType::F16]),
                decthings_types: None,
                required: true,
            },
        );
        inputs.insert(
            "OPT".to_owned(),
            TensorRule {
                shape: None,
                allowed_types: None,
                decthings_types: None,
                required: false,
            },
        );
        RouteRules {
            inputs,
            outputs: BTreeMap::new(),
            allow_unknown_inputs: false,
        }
    }

    #[test]
    fn shapes_and_types() {
        let r = rules();
        let s = |d: &[u64]| Shape::new(d.to_vec());
        assert_eq!(
            r.check(Side::Input, "INPUT0", DataType::F32, &s(&[7, 4])),
            Ok(())
        );
        assert_eq!(
            r.check(Side::Input, "INPUT0", DataType::F32, &s(&[2, 3]))
                .unwrap_err()
                .to_string(),
            r#"input "INPUT0": shape [2,3] does not match rule [-1,4]"#
        );
        assert_eq!(
            r.check(Side::Input, "INPUT0", DataType::I32, &s(&[2, 4]))
                .unwrap_err()
                .to_string(),
            r#"input "INPUT0": datatype INT32 is not allowed (allowed: FP32, FP16)"#
        );
        assert_eq!(
            r.check(Side::Input, "INPUT0", DataType::F32, &s(&[4]))
                .unwrap_err()
                .rule_label(),
            "shape"
        );
        assert_eq!(
            r.check(Side::Input, "OPT", DataType::Bytes, &s(&[])),
            Ok(())
        );
        let unknown = r
            .check(Side::Input, "X", DataType::F32, &s(&[1]))
            .unwrap_err();
        assert_eq!(
            unknown.to_string(),
            r#"input "X" is not one of this route's inputs (INPUT0, OPT)"#
        );
        assert_eq!(unknown.tensor_label(&r), "_unknown");
    }

    #[test]
    fn names() {
        let r = rules();
        assert_eq!(r.check_names(Side::Input, ["INPUT0", "OPT"]), Ok(()));
        assert_eq!(
            r.check_names(Side::Input, ["OPT"]).unwrap_err().to_string(),
            r#"input "INPUT0" is required but missing"#
        );
        assert_eq!(
            r.check_names(Side::Input, ["INPUT0", "INPUT0"])
                .unwrap_err()
                .to_string(),
            r#"input "INPUT0" appears more than once"#
        );
    }

    /// Few names are compared pairwise, many go through a set: the same
    /// answers either way, the first repeated name reported.
    #[test]
    fn names_few_and_many() {
        let r = rules();
        for count in [2, 16, 17, 40] {
            let mut names: Vec<String> = (2..count).map(|i| format!("T{i}")).collect();
            names.insert(0, "INPUT0".to_owned());
            names.insert(1, "OPT".to_owned());
            let refs: Vec<&str> = names.iter().map(String::as_str).collect();
            assert_eq!(r.check_names(Side::Input, refs.iter().copied()), Ok(()));
            let mut twice = refs.clone();
            twice.push("T9");
            twice.push("OPT");
            let want = if count > 9 { "T9" } else { "OPT" };
            assert_eq!(
                r.check_names(Side::Input, twice.iter().copied()),
                Err(Violation::Duplicate {
                    side: Side::Input,
                    name: want.to_owned(),
                }),
                "{count} names"
            );
            let without: Vec<&str> = refs.iter().copied().filter(|&n| n != "INPUT0").collect();
            assert_eq!(
                r.check_names(Side::Input, without.iter().copied())
                    .unwrap_err()
                    .to_string(),
                r#"input "INPUT0" is required but missing"#,
                "{count} names"
            );
        }
    }

    #[test]
    fn raw_sizes() {
        let mut r = rules();
        r.inputs.remove("OPT");
        r.inputs.get_mut("INPUT0").unwrap().allowed_types = Some(vec![DataType::F32]);
        assert_eq!(r.check_raw(32), Ok(()));
        assert_eq!(
            r.check_raw(20).unwrap_err().to_string(),
            r#"raw binary body of 20 bytes cannot be input "INPUT0" (FP32 with shape rule [-1,4])"#
        );
        // Undeclared or multi-type inputs are not checked.
        assert_eq!(RouteRules::default().check_raw(3), Ok(()));
    }
}
