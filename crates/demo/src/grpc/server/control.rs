//! The control methods, answered as Triton 2.51 answers them when started
//! the way tests start it (no explicit model control, no GPU; texts
//! captured from it): model load and unload refused `UNAVAILABLE`, no
//! shared-memory region ever registered (registering a system region fails
//! to open it, a CUDA one is refused, unregistering succeeds, asking for a
//! region by name is `NOT_FOUND`), and trace and log settings read and
//! changed, server-wide, with Triton's defaults.

use std::collections::BTreeMap;
use std::sync::Mutex;

use tonic::Status;

use crate::catalog;
use tensorgate_codec::codec::grpc::proto::inference::log_settings_response::SettingValue as LogValue;
use tensorgate_codec::codec::grpc::proto::inference::log_settings_response::setting_value::ParameterChoice as LogChoice;
use tensorgate_codec::codec::grpc::proto::inference::trace_setting_response::SettingValue as TraceValue;
use tensorgate_codec::codec::grpc::proto::inference::{
    LogSettingsRequest, LogSettingsResponse, TraceSettingRequest, TraceSettingResponse,
    log_settings_request,
};

pub fn model_control() -> Status {
    Status::unavailable("explicit model load / unload is not allowed if polling is enabled")
}

pub fn system_region(name: &str) -> Status {
    Status::not_found(format!(
        "Unable to find system shared memory region: '{name}'"
    ))
}

pub fn cuda_region(name: &str) -> Status {
    Status::not_found(format!(
        "Unable to find cuda shared memory region: '{name}'"
    ))
}

pub fn system_register(key: &str) -> Status {
    Status::internal(format!("Unable to open shared memory region: '{key}'"))
}

pub fn cuda_register() -> Status {
    Status::invalid_argument("failed to register shared memory region: invalid args")
}

/// Trace and log settings, changed by their RPCs.
#[derive(Debug)]
pub struct Settings {
    trace: Mutex<BTreeMap<String, Vec<String>>>,
    log: Mutex<BTreeMap<String, LogChoice>>,
}

/// Triton's trace settings when started without trace flags.
fn trace_defaults() -> BTreeMap<String, Vec<String>> {
    [
        ("trace_level", "OFF"),
        ("trace_rate", "1000"),
        ("trace_count", "-1"),
        ("log_frequency", "0"),
        ("trace_file", ""),
        ("trace_mode", "triton"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), vec![v.to_owned()]))
    .collect()
}

fn log_defaults() -> BTreeMap<String, LogChoice> {
    [
        ("log_info", LogChoice::BoolParam(true)),
        ("log_warning", LogChoice::BoolParam(true)),
        ("log_error", LogChoice::BoolParam(true)),
        ("log_verbose_level", LogChoice::Uint32Param(0)),
        ("log_format", LogChoice::StringParam("default".to_owned())),
        ("log_file", LogChoice::StringParam(String::new())),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect()
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            trace: Mutex::new(trace_defaults()),
            log: Mutex::new(log_defaults()),
        }
    }
}

impl Settings {
    /// Applies the given trace settings (a setting with no value goes back
    /// to its default) and answers all of them. A model's settings are the
    /// server's: the demo keeps no per-model trace.
    pub fn trace(&self, request: TraceSettingRequest) -> Result<TraceSettingResponse, Status> {
        if !request.model_name.is_empty() && catalog::find(&request.model_name).is_none() {
            return Err(Status::invalid_argument(format!(
                "Request for unknown model : {}",
                request.model_name
            )));
        }
        let defaults = trace_defaults();
        let mut trace = self.trace.lock().unwrap_or_else(|e| e.into_inner());
        for (key, value) in &request.settings {
            let Some(default) = defaults.get(key) else {
                return Err(Status::invalid_argument(format!(
                    "unknown trace setting '{key}'"
                )));
            };
            let value = if value.value.is_empty() {
                default.clone()
            } else {
                value.value.clone()
            };
            trace.insert(key.clone(), value);
        }
        let settings = trace
            .iter()
            .map(|(k, v)| (k.clone(), TraceValue { value: v.clone() }))
            .collect();
        Ok(TraceSettingResponse { settings })
    }

    /// Applies the given log settings, each of its kind, and answers all.
    pub fn log(&self, request: LogSettingsRequest) -> Result<LogSettingsResponse, Status> {
        use log_settings_request::setting_value::ParameterChoice as In;
        let mut log = self.log.lock().unwrap_or_else(|e| e.into_inner());
        let mut changed = log.clone();
        for (key, value) in &request.settings {
            let choice = match (key.as_str(), &value.parameter_choice) {
                ("log_info" | "log_warning" | "log_error", Some(In::BoolParam(b))) => {
                    LogChoice::BoolParam(*b)
                }
                ("log_info" | "log_warning" | "log_error", _) => {
                    return Err(Status::invalid_argument(format!(
                        "expect boolean for '{key}'"
                    )));
                }
                ("log_verbose_level", Some(In::Uint32Param(n))) => LogChoice::Uint32Param(*n),
                ("log_verbose_level", _) => {
                    return Err(Status::invalid_argument(format!(
                        "expect unsigned integer for '{key}'"
                    )));
                }
                ("log_format" | "log_file", Some(In::StringParam(s))) => {
                    LogChoice::StringParam(s.clone())
                }
                ("log_format" | "log_file", _) => {
                    return Err(Status::invalid_argument(format!(
                        "expect string for '{key}'"
                    )));
                }
                _ => {
                    return Err(Status::invalid_argument(format!(
                        "unknown log setting '{key}'"
                    )));
                }
            };
            changed.insert(key.clone(), choice);
        }
        *log = changed;
        let settings = log
            .iter()
            .map(|(k, v)| {
                (
                    k.clone(),
                    LogValue {
                        parameter_choice: Some(v.clone()),
                    },
                )
            })
            .collect();
        Ok(LogSettingsResponse { settings })
    }
}
