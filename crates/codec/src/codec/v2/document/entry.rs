//! One tensor entry of a document, built as its members arrive and checked
//! when its object closes.

use bytes::Bytes;
use serde_json::Value;

use super::DocError;
use crate::codec::v2::json_data::DataParser;
use crate::codec::v2::model::{DocLimits, EntryData, EntryHead, Params, Subject, TensorEntry};
use crate::tensor::{DataType, Shape};

/// Builds one tensor entry as its members arrive.
#[derive(Debug, Default)]
pub(super) struct EntryBuilder {
    pub index: usize,
    pub name: Option<String>,
    pub datatype: Option<DataType>,
    pub shape: Option<Shape>,
    parameters: Option<Params>,
    extra: Vec<(String, Value)>,
    pub data: Option<(Bytes, u64)>,
    /// Raw `data` text captured before the datatype was known.
    pub deferred: Option<Bytes>,
    head_sent: bool,
}

fn duplicate(set: bool, key: &str) -> Result<(), DocError> {
    if set {
        return Err(DocError::Duplicate {
            key: key.to_owned(),
        });
    }
    Ok(())
}

impl EntryBuilder {
    pub fn new(index: usize) -> Self {
        EntryBuilder {
            index,
            ..EntryBuilder::default()
        }
    }

    /// Whether `data` was already given.
    pub fn has_data(&self) -> bool {
        self.data.is_some() || self.deferred.is_some()
    }

    /// Takes a member other than `data`, parsed.
    pub fn set(
        &mut self,
        key: String,
        value: Value,
        subject: &Subject,
        limits: &DocLimits,
    ) -> Result<(), DocError> {
        let bad = |field: &'static str, problem: &str| DocError::BadField {
            subject: subject.clone(),
            field,
            problem: problem.to_owned(),
        };
        match key.as_str() {
            "name" => {
                duplicate(self.name.is_some(), &key)?;
                let Value::String(name) = value else {
                    return Err(bad("name", "must be a string"));
                };
                self.name = Some(name);
            }
            "datatype" => {
                duplicate(self.datatype.is_some(), &key)?;
                let Value::String(name) = value else {
                    return Err(bad("datatype", "must be a string"));
                };
                let Some(dt) = DataType::from_v2_name(&name) else {
                    return Err(DocError::UnknownDatatype {
                        subject: subject.clone(),
                        datatype: name,
                    });
                };
                self.datatype = Some(dt);
            }
            "shape" => {
                duplicate(self.shape.is_some(), &key)?;
                self.shape = Some(parse_shape(&value, subject, limits)?);
            }
            "parameters" => {
                let Value::Object(map) = value else {
                    duplicate(self.parameters.is_some(), &key)?;
                    return Err(bad("parameters", "must be an object"));
                };
                self.set_parameters(Params::from(map))?;
            }
            _ => {
                duplicate(self.extra.iter().any(|(k, _)| *k == key), &key)?;
                self.extra.push((key, value));
            }
        }
        Ok(())
    }

    /// Takes the `"parameters"` object, already read as one (the one-pass
    /// reader's way past [`EntryBuilder::set`], which takes the member's
    /// name as a `String`).
    pub fn set_parameters(&mut self, map: Params) -> Result<(), DocError> {
        duplicate(self.parameters.is_some(), "parameters")?;
        self.parameters = Some(map);
        Ok(())
    }

    /// Announces no head for this entry: for a caller that does not take
    /// them.
    pub fn skip_head(&mut self) {
        self.head_sent = true;
    }

    /// The head, the first time name, datatype and shape are all known.
    pub fn new_head(&mut self) -> Option<EntryHead> {
        if self.head_sent {
            return None;
        }
        let (Some(name), Some(datatype), Some(shape)) = (&self.name, self.datatype, &self.shape)
        else {
            return None;
        };
        self.head_sent = true;
        Some(EntryHead {
            index: self.index,
            name: name.clone(),
            datatype,
            shape: shape.clone(),
        })
    }

    /// The entry as it would be if it ended now with its data given as
    /// `binary_data_size` (the size its shape takes): `None` unless name, a
    /// fixed-size datatype and shape are known and nothing in it so far
    /// would make it an error or put its data elsewhere.
    pub fn provisional(&self) -> Option<TensorEntry> {
        let (name, datatype, shape) = (self.name.as_ref()?, self.datatype?, self.shape.as_ref()?);
        let size = shape
            .element_count()
            .ok()?
            .checked_mul(datatype.fixed_size()? as u64)?;
        let parameters = self.parameters.clone().unwrap_or_default();
        if ["binary_data_size", "shared_memory_region"]
            .iter()
            .any(|k| parameters.contains_key(k))
        {
            return None;
        }
        Some(TensorEntry {
            name: name.clone(),
            datatype,
            shape: shape.clone(),
            parameters,
            extra: self.extra.clone(),
            data: EntryData::Binary { size },
        })
    }

    /// Checks the complete entry and appends it to `tensors`; its head
    /// goes to `heads` if it was not announced yet. `subject` names the
    /// tensor as far as it is known. The builder is left emptied.
    ///
    /// Borrowed and appending, not consuming and returning: both the
    /// builder and the entry are larger than a copy the compiler writes
    /// inline, so each move by value was a call to `memcpy` (two to four a
    /// tensor).
    pub fn finish_into(
        &mut self,
        subject: Subject,
        limits: &DocLimits,
        heads: &mut Vec<EntryHead>,
        tensors: &mut Vec<TensorEntry>,
    ) -> Result<(), DocError> {
        let missing = |field| DocError::MissingField {
            subject: subject.clone(),
            field,
        };
        // Announced first: it needs all three, as this does.
        heads.extend(self.new_head());
        let name = self.name.take().ok_or_else(|| missing("name"))?;
        let datatype = self.datatype.ok_or_else(|| missing("datatype"))?;
        let shape = self.shape.take().ok_or_else(|| missing("shape"))?;
        // Errors from here on name the tensor; its name is copied into one
        // only when there is an error to report.
        let head = Head {
            subject,
            name: &name,
            datatype,
            shape,
            expected: 0,
        };
        let expected = head
            .shape
            .element_count()
            .map_err(|_| DocError::TooManyElements {
                subject: head.subject(),
                shape: head.shape.clone(),
                count: "more than 2^64".to_owned(),
                max: limits.max_elements,
            })?;
        let head = Head { expected, ..head };
        if self.deferred.is_some() {
            self.convert_deferred(datatype, expected, limits, &head.subject())?;
        }
        let parameters = self.parameters.take().unwrap_or_default();
        let data = head.locate_data(self.data.take(), &parameters)?;
        let shape = head.shape;
        tensors.push(TensorEntry {
            name,
            datatype,
            shape,
            parameters,
            extra: std::mem::take(&mut self.extra),
            data,
        });
        Ok(())
    }

    /// Converts `data` that came before `datatype`, now that both are known.
    fn convert_deferred(
        &mut self,
        datatype: DataType,
        expected: u64,
        limits: &DocLimits,
        subject: &Subject,
    ) -> Result<(), DocError> {
        let Some(raw) = self.deferred.take() else {
            return Ok(());
        };
        let mut parser = DataParser::new(
            datatype,
            Some(expected),
            limits.max_elements,
            limits.max_depth,
        );
        parser.parse(&raw, true).map_err(|source| DocError::Data {
            subject: subject.clone(),
            source,
        })?;
        let (data, count) = parser.into_data();
        self.data = Some((Bytes::from(data), count));
        Ok(())
    }
}

/// What is known of a complete entry while its data is located.
struct Head<'a> {
    /// The tensor's kind and index; its name is `name`.
    subject: Subject,
    name: &'a str,
    datatype: DataType,
    shape: Shape,
    /// Elements the shape holds.
    expected: u64,
}

impl Head<'_> {
    /// The tensor, named, for an error.
    #[cold]
    fn subject(&self) -> Subject {
        Subject {
            name: Some(self.name.to_owned()),
            ..self.subject.clone()
        }
    }

    /// Where the data is: exactly one of JSON `data`, `binary_data_size` and
    /// a shared-memory region, with its size checked against the shape.
    fn locate_data(
        &self,
        json: Option<(Bytes, u64)>,
        parameters: &Params,
    ) -> Result<EntryData, DocError> {
        let binary_size = self.binary_data_size(parameters)?;
        let shm = parameters.contains_key("shared_memory_region");
        let sources =
            usize::from(json.is_some()) + usize::from(binary_size.is_some()) + usize::from(shm);
        if sources != 1 {
            return Err(DocError::DataSource {
                subject: self.subject(),
            });
        }
        if let Some((data, elements)) = json {
            self.check_elements(elements)?;
            return Ok(EntryData::Inline { data, elements });
        }
        if let Some(size) = binary_size {
            self.check_binary_size(size)?;
            return Ok(EntryData::Binary { size });
        }
        Ok(EntryData::SharedMemory)
    }

    fn binary_data_size(&self, parameters: &Params) -> Result<Option<u64>, DocError> {
        let Some(v) = parameters.get("binary_data_size") else {
            return Ok(None);
        };
        v.as_u64().map(Some).ok_or_else(|| DocError::BadField {
            subject: self.subject(),
            field: "binary_data_size",
            problem: "must be a non-negative integer".to_owned(),
        })
    }

    fn check_elements(&self, found: u64) -> Result<(), DocError> {
        if found == self.expected {
            return Ok(());
        }
        Err(DocError::ElementCount {
            subject: self.subject(),
            shape: self.shape.clone(),
            expected: self.expected,
            found,
        })
    }

    /// A fixed-size datatype's binary data is exactly shape x element size.
    fn check_binary_size(&self, declared: u64) -> Result<(), DocError> {
        let Some(elem) = self.datatype.fixed_size() else {
            return Ok(());
        };
        match self.expected.checked_mul(elem as u64) {
            Some(want) if want == declared => Ok(()),
            Some(want) => Err(DocError::BinarySize {
                subject: self.subject(),
                datatype: self.datatype,
                shape: self.shape.clone(),
                expected: want,
                declared,
            }),
            None => Err(DocError::BinarySizeOverflow {
                subject: self.subject(),
                datatype: self.datatype,
                shape: self.shape.clone(),
                declared,
            }),
        }
    }
}

fn parse_shape(value: &Value, subject: &Subject, limits: &DocLimits) -> Result<Shape, DocError> {
    let bad = || DocError::BadField {
        subject: subject.clone(),
        field: "shape",
        problem: "must be an array of non-negative integers".to_owned(),
    };
    let dims = value.as_array().ok_or_else(bad)?;
    if dims.len() > limits.max_dims {
        return Err(DocError::TooManyDims {
            subject: subject.clone(),
            shape: value.to_string(),
            rank: dims.len(),
            max: limits.max_dims,
        });
    }
    let dims = dims
        .iter()
        .map(|d| d.as_u64().filter(|&d| d <= i64::MAX as u64).ok_or_else(bad))
        .collect::<Result<Vec<u64>, _>>()?;
    let shape = Shape::new(dims);
    let count = match shape.element_count() {
        Ok(n) if n <= limits.max_elements => return Ok(shape),
        Ok(n) => n.to_string(),
        Err(_) => "more than 2^64".to_owned(),
    };
    Err(DocError::TooManyElements {
        subject: subject.clone(),
        count,
        shape,
        max: limits.max_elements,
    })
}
