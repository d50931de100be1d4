//! Per-route settings of the Decthings and SageMaker frontends. Carried in
//! the typed configuration; what they do is the frontends' business.

use std::collections::BTreeMap;

use serde::Deserialize;

use crate::tensor::DataType;

/// `[routes.decthings]`: `POST {prefix}/Model/evaluate`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DecthingsRoute {
    pub enabled: bool,
    /// Path prefix: starts with `/`, no trailing `/`, no `?`, `#` or
    /// whitespace.
    pub prefix: String,
    /// What to do when a parameter carries several tensors.
    pub multiple_tensors: MultipleTensors,
    /// Outputs to split back into one tensor per input tensor.
    pub unstack_outputs: Vec<String>,
    /// Decthings modelId → model name (one of the route's models, or any on
    /// the default route). A modelId belongs to one route only.
    pub model_ids: BTreeMap<String, String>,
}

impl Default for DecthingsRoute {
    fn default() -> Self {
        DecthingsRoute {
            enabled: true,
            prefix: "/v0".to_owned(),
            multiple_tensors: MultipleTensors::default(),
            unstack_outputs: Vec::new(),
            model_ids: BTreeMap::new(),
        }
    }
}

/// `multiple_tensors`: a Decthings parameter carrying several tensors.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MultipleTensors {
    /// Stack them along a new first dimension into one V2 tensor.
    #[default]
    Stack,
    /// Answer 400.
    Reject,
}

/// `[routes.sagemaker]`: `/invocations`, `/endpoints/{e}/invocations`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SageMakerRoute {
    pub enabled: bool,
    /// The model a bare `POST /invocations` goes to. At most one route in
    /// the configuration sets it.
    pub default_model: Option<String>,
    /// Input tensor name for record formats (CSV, JSON lines, ...).
    pub input: Option<String>,
    /// Input data type for record formats: a numeric fixed-size type.
    pub datatype: Option<DataType>,
    /// Records per backend request. Without a bound one large CSV body
    /// becomes one unbounded tensor.
    pub batch_records: usize,
    /// Batches of one request sent to the backend at once. Without a bound
    /// one request can occupy every backend connection.
    pub max_batches_in_flight: usize,
    /// SageMaker endpoint name → model (same rule as `model_ids`).
    pub endpoints: BTreeMap<String, String>,
    /// Outputs record formats answer with, in this order; empty: all.
    pub outputs: Vec<SageMakerOutput>,
}

impl SageMakerRoute {
    /// The data types `datatype` accepts.
    pub const DATATYPES: [DataType; 10] = [
        DataType::F32,
        DataType::F64,
        DataType::I8,
        DataType::I16,
        DataType::I32,
        DataType::I64,
        DataType::U8,
        DataType::U16,
        DataType::U32,
        DataType::U64,
    ];
}

impl Default for SageMakerRoute {
    fn default() -> Self {
        SageMakerRoute {
            enabled: true,
            default_model: None,
            input: None,
            datatype: None,
            batch_records: 1024,
            max_batches_in_flight: 2,
            endpoints: BTreeMap::new(),
            outputs: Vec::new(),
        }
    }
}

/// `[[routes.sagemaker.outputs]]`: one output a record reply carries.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SageMakerOutput {
    /// The backend's output tensor name.
    pub name: String,
    /// The name the reply uses instead, if any.
    pub rename: Option<String>,
}

impl SageMakerOutput {
    /// The name the reply uses.
    pub fn reply_name(&self) -> &str {
        self.rename.as_deref().unwrap_or(&self.name)
    }
}
