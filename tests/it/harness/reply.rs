//! A reply decoded for comparison: status, the headers that matter, and for
//! inference replies every output with its typed values, whether it came as
//! JSON `data` or as binary data after the JSON header.

use serde_json::Value;

use super::lenient;
use super::values::{self, Values};
use crate::common::Got;

#[derive(Clone, Debug)]
pub struct Output {
    pub name: String,
    pub datatype: String,
    pub shape: Vec<i64>,
    /// Sent as binary data (`binary_data_size`) rather than JSON `data`.
    pub binary: bool,
    /// The output's `parameters`, if any.
    pub parameters: Option<Value>,
    /// The output's keys, in order.
    pub keys: Vec<String>,
    pub values: Values,
}

#[derive(Clone, Debug)]
pub enum Kind {
    /// A V2 inference reply.
    Infer {
        /// Every top-level member but `outputs`, in order.
        top: Vec<(String, Value)>,
        outputs: Vec<Output>,
    },
    /// `{"error": "..."}`.
    Error(String),
    /// Anything else (metadata, empty bodies, ...).
    Other,
}

#[derive(Clone, Debug)]
pub struct Reply {
    pub status: u16,
    pub content_type: Option<String>,
    pub content_encoding: Option<String>,
    /// `Inference-Header-Content-Length`, or SageMaker's `json-header-size`.
    pub header_len: Option<usize>,
    pub has_ihcl: bool,
    /// The body, decompressed.
    pub body: Vec<u8>,
    pub kind: Kind,
}

fn header(got: &Got, name: &str) -> Option<String> {
    got.headers
        .get(name)
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
}

/// `json-header-size=N` of the SageMaker binary+json content type.
pub fn sagemaker_size(content_type: &str) -> Option<usize> {
    let (essence, params) = content_type.split_once(';')?;
    if !essence
        .trim()
        .eq_ignore_ascii_case("application/vnd.sagemaker-triton.binary+json")
    {
        return None;
    }
    params
        .split(';')
        .filter_map(|p| p.split_once('='))
        .find(|(k, _)| k.trim() == "json-header-size")
        .and_then(|(_, v)| v.trim().parse().ok())
}

impl Reply {
    pub fn decode(got: &Got) -> Result<Reply, String> {
        let content_type = header(got, "content-type");
        let content_encoding = header(got, "content-encoding");
        let ihcl = header(got, "inference-header-content-length");
        let has_ihcl = ihcl.is_some();
        let header_len = match &ihcl {
            Some(v) => Some(v.parse().map_err(|_| format!("IHCL {v:?}"))?),
            None => content_type.as_deref().and_then(sagemaker_size),
        };
        let body = match &content_encoding {
            Some(c) => super::decompress(c, &got.body)?,
            None => got.body.to_vec(),
        };
        let mut reply = Reply {
            status: got.status.as_u16(),
            content_type,
            content_encoding,
            header_len,
            has_ihcl,
            body,
            kind: Kind::Other,
        };
        reply.kind = reply.decode_kind()?;
        Ok(reply)
    }

    fn decode_kind(&self) -> Result<Kind, String> {
        if !(200..300).contains(&self.status) {
            let v = lenient::parse(&self.body).ok();
            return Ok(match v.as_ref().and_then(|v| v.get("error")) {
                Some(Value::String(e)) if v.as_ref().unwrap().as_object().unwrap().len() == 1 => {
                    Kind::Error(e.clone())
                }
                _ => Kind::Other,
            });
        }
        let (json, mut tail) = match self.header_len {
            Some(n) if n <= self.body.len() => (&self.body[..n], &self.body[n..]),
            Some(n) => return Err(format!("header length {n} > body {}", self.body.len())),
            None => (&self.body[..], &[][..]),
        };
        let doc = match lenient::parse(json) {
            Ok(v) => v,
            Err(_) if self.header_len.is_none() => return Ok(Kind::Other),
            Err(e) => return Err(e),
        };
        let Some(obj) = doc.as_object() else {
            return Ok(Kind::Other);
        };
        let Some(outputs) = obj.get("outputs").and_then(Value::as_array) else {
            return Ok(Kind::Other);
        };
        let top = obj
            .iter()
            .filter(|(k, _)| *k != "outputs")
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let mut outs = Vec::new();
        for o in outputs {
            let name = o["name"].as_str().ok_or("output without name")?.to_owned();
            let datatype = o["datatype"]
                .as_str()
                .ok_or("output without datatype")?
                .to_owned();
            let shape: Vec<i64> = o["shape"]
                .as_array()
                .ok_or("output without shape")?
                .iter()
                .map(|d| d.as_i64().ok_or("bad dim"))
                .collect::<Result<_, _>>()?;
            let parameters = o.get("parameters").cloned();
            let size = parameters
                .as_ref()
                .and_then(|p| p.get("binary_data_size"))
                .and_then(Value::as_u64);
            let (binary, values) = match (o.get("data"), size) {
                (Some(data), None) => (false, values::from_json(&datatype, data)?),
                (None, Some(n)) => {
                    let n = n as usize;
                    if tail.len() < n {
                        return Err(format!(
                            "output {name}: {n} bytes wanted, {} left",
                            tail.len()
                        ));
                    }
                    let v = values::from_binary(&datatype, &tail[..n])?;
                    tail = &tail[n..];
                    (true, v)
                }
                _ => return Err(format!("output {name}: neither data nor binary_data_size")),
            };
            let keys = o
                .as_object()
                .map(|m| m.keys().cloned().collect())
                .unwrap_or_default();
            outs.push(Output {
                name,
                datatype,
                shape,
                binary,
                parameters,
                keys,
                values,
            });
        }
        if !tail.is_empty() {
            return Err(format!("{} bytes after the last output", tail.len()));
        }
        Ok(Kind::Infer { top, outputs: outs })
    }

    pub fn outputs(&self) -> &[Output] {
        match &self.kind {
            Kind::Infer { outputs, .. } => outputs,
            _ => &[],
        }
    }

    pub fn error(&self) -> Option<&str> {
        match &self.kind {
            Kind::Error(e) => Some(e),
            _ => None,
        }
    }

    pub fn text(&self) -> String {
        lenient::preview(&String::from_utf8_lossy(&self.body))
    }
}

/// Decodes both replies, with context in the error.
pub fn decode_pair(direct: &Got, via: &Got) -> Result<(Reply, Reply), String> {
    let d = Reply::decode(direct).map_err(|e| format!("direct reply: {e}"))?;
    let v = Reply::decode(via).map_err(|e| format!("gateway reply: {e}"))?;
    Ok((d, v))
}

/// What must match between the backend's own reply and the gateway's.
#[derive(Clone, Copy, Debug)]
pub struct Strict {
    /// Content-Type, Content-Encoding and IHCL presence.
    pub headers: bool,
    /// Top-level members (id, model_name, model_version, parameters) and
    /// each output's keys and parameters.
    pub members: bool,
}

pub const EXACT: Strict = Strict {
    headers: true,
    members: true,
};

/// Everything a client can see of an inference exchange must be the same:
/// status, headers that matter, members in order, outputs in order with the
/// same form (JSON or binary) and values. Errors: status, Content-Type and
/// body byte for byte.
pub fn same(direct: &Reply, via: &Reply, strict: Strict) -> Result<(), String> {
    let ctx = || {
        format!(
            "\n    direct: {}\n    gateway: {}",
            direct.text(),
            via.text()
        )
    };
    if direct.status != via.status {
        return Err(format!(
            "status {} != {}{}",
            direct.status,
            via.status,
            ctx()
        ));
    }
    if strict.headers {
        if direct.content_type != via.content_type {
            return Err(format!(
                "content-type {:?} != {:?}",
                direct.content_type, via.content_type
            ));
        }
        if direct.content_encoding != via.content_encoding {
            return Err(format!(
                "content-encoding {:?} != {:?}",
                direct.content_encoding, via.content_encoding
            ));
        }
        if direct.has_ihcl != via.has_ihcl {
            return Err(format!(
                "IHCL present {} != {}",
                direct.has_ihcl, via.has_ihcl
            ));
        }
    }
    match (&direct.kind, &via.kind) {
        (Kind::Infer { top: dt, .. }, Kind::Infer { top: vt, .. }) => {
            if strict.members && dt != vt {
                return Err(format!("top-level members {dt:?} != {vt:?}"));
            }
            same_outputs(direct.outputs(), via.outputs(), strict.members)
                .map_err(|e| format!("{e}{}", ctx()))
        }
        (Kind::Infer { .. }, _) | (_, Kind::Infer { .. }) => Err(format!(
            "one reply is an inference reply, one is not{}",
            ctx()
        )),
        _ => {
            if direct.body != via.body {
                return Err(format!("bodies differ{}", ctx()));
            }
            Ok(())
        }
    }
}

/// Outputs in the same order with the same name, datatype, shape, form and
/// values (and keys/parameters when `members`).
pub fn same_outputs(direct: &[Output], via: &[Output], members: bool) -> Result<(), String> {
    let names = |o: &[Output]| o.iter().map(|o| o.name.clone()).collect::<Vec<_>>();
    if names(direct) != names(via) {
        return Err(format!("outputs {:?} != {:?}", names(direct), names(via)));
    }
    for (d, v) in direct.iter().zip(via) {
        let n = &d.name;
        if d.datatype != v.datatype || d.shape != v.shape {
            return Err(format!(
                "output {n}: {} {:?} != {} {:?}",
                d.datatype, d.shape, v.datatype, v.shape
            ));
        }
        if d.binary != v.binary {
            return Err(format!("output {n}: binary {} != {}", d.binary, v.binary));
        }
        if members && (d.keys != v.keys || d.parameters != v.parameters) {
            return Err(format!(
                "output {n}: keys/parameters {:?} {:?} != {:?} {:?}",
                d.keys, d.parameters, v.keys, v.parameters
            ));
        }
        if d.values != v.values {
            return Err(format!(
                "output {n}: values {:?} != {:?}",
                d.values, v.values
            ));
        }
    }
    Ok(())
}

/// Only what the outputs hold: name, datatype, shape and values.
pub fn same_values(reference: &Reply, via: &Reply) -> Result<(), String> {
    if !(200..300).contains(&via.status) {
        return Err(format!("gateway status {}: {}", via.status, via.text()));
    }
    let strip = |o: &[Output]| {
        o.iter()
            .map(|o| Output {
                binary: false,
                ..o.clone()
            })
            .collect::<Vec<_>>()
    };
    same_outputs(&strip(reference.outputs()), &strip(via.outputs()), false)
}
