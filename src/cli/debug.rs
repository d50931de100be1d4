//! Debugging commands that run the crate's codecs on files:
//!
//! - `tensorgate tensor decode|encode`: Decthings tensor bytes <-> the JSON
//!   description used by the golden vectors (`{"type","shape","values"}`,
//!   see [`crate::codec::describe`]);
//! - `tensorgate request to-binary|to-json`: a V2 JSON request or response
//!   <-> the binary tensor data extension.
//!
//! The conversions are the pure `*_bytes` functions (no I/O, testable on
//! buffers); [`run_tensor`] and [`run_request`] only read and write files.
//! Nothing here opens a socket.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use bytes::{Bytes, BytesMut};
use serde_json::Value;

use crate::codec::decthings::{self, DecodeError, DecodeLimits, EncodeError, Layout};
use crate::codec::describe::{self, DescribeError};
use crate::codec::pieces::concat;
use crate::codec::v2::framing::{self, FramingError, HeaderReader};
use crate::codec::v2::json_write::{TensorForm, inline_data, write_document};
use crate::codec::v2::{
    BinaryCollector, DocError, DocKind, DocLimits, DocParser, EntryData, Subject,
};
use crate::tensor::{DecthingsType, check_data};

/// A debugging command failed; `main` prints it and exits with status 1.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    #[error("{path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error("invalid JSON: {0}")]
    Json(#[from] serde_json::Error),
    #[error(transparent)]
    Decode(#[from] DecodeError),
    #[error("tensor {index}: {source}")]
    Describe { index: usize, source: DescribeError },
    /// A `type` that is no Decthings type, with the names that are.
    #[error(
        "tensor {index}: unknown tensor type {name:?}{}; the Decthings types are {}",
        hint(name),
        type_names()
    )]
    UnknownType { index: usize, name: String },
    #[error("tensor {index}: {source}")]
    Encode { index: usize, source: EncodeError },
    #[error(transparent)]
    Document(#[from] DocError),
    #[error(transparent)]
    Framing(#[from] FramingError),
    /// A problem with one tensor: `input "INPUT0": ...`.
    #[error("{subject}: {problem}")]
    Tensor { subject: String, problem: String },
    #[error("invalid header length {0:?}: expected a non-negative integer")]
    HeaderLength(String),
}

/// Tensor wire formats.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum TensorFormat {
    /// Decthings, media elements as `u8 fmtlen | format | data` (decthings-api 0.1.x).
    Decthings,
    /// Decthings, media elements with a 3-byte format (PyPI decthings-api 0.0.4).
    DecthingsLegacy,
}

impl TensorFormat {
    fn layout(self) -> Layout {
        match self {
            TensorFormat::Decthings => Layout::Current,
            TensorFormat::DecthingsLegacy => Layout::Legacy,
        }
    }
}

/// `tensorgate tensor ...`
#[derive(Debug, clap::Subcommand)]
pub enum TensorCommand {
    /// Decode tensors stored back to back and print each as one JSON line
    /// (`{"type","shape","values"}`; NaN/Infinity as strings, binary as
    /// base64, media as {"format","data_b64"}).
    Decode {
        #[arg(long, value_enum, default_value_t = TensorFormat::Decthings)]
        format: TensorFormat,
        /// Tensor file, or `-` for stdin.
        file: PathBuf,
        /// Write the JSON lines to this file instead of stdout.
        #[arg(short, long, value_name = "OUT")]
        output: Option<PathBuf>,
    },
    /// Encode tensor descriptions (one JSON object, JSON lines of them, or
    /// an array of them; keys other than type/shape/values are ignored).
    Encode {
        #[arg(long, value_enum, default_value_t = TensorFormat::Decthings)]
        format: TensorFormat,
        /// JSON file, or `-` for stdin.
        file: PathBuf,
        /// Write the tensor bytes to this file instead of stdout.
        #[arg(short, long, value_name = "OUT")]
        output: Option<PathBuf>,
    },
}

/// `tensorgate request ...`
#[derive(Debug, clap::Subcommand)]
pub enum RequestCommand {
    /// Convert a V2 JSON request (or response) so that every tensor's JSON
    /// "data" becomes binary tensor data: the JSON header, then the bytes.
    ///
    /// The JSON header length, the value to send as
    /// Inference-Header-Content-Length, is printed on stderr as a bare
    /// number, or written to the file given with --header-length-to.
    ToBinary {
        /// The document is a response ("outputs") rather than a request ("inputs").
        #[arg(long)]
        response: bool,
        /// JSON file, or `-` for stdin.
        file: PathBuf,
        /// Write the binary body to this file instead of stdout.
        #[arg(short, long, value_name = "OUT")]
        output: Option<PathBuf>,
        /// Where to report the JSON header length: `stderr` (the default) or
        /// a file to write the bare number to.
        #[arg(long, value_name = "stderr|FILE", default_value = "stderr")]
        header_length_to: PathBuf,
    },
    /// Convert a binary tensor data body back to one JSON document with
    /// every tensor's data inline.
    ToJson {
        /// The document is a response ("outputs") rather than a request ("inputs").
        #[arg(long)]
        response: bool,
        /// Body file, or `-` for stdin.
        file: PathBuf,
        /// Length of the JSON header (the Inference-Header-Content-Length value).
        #[arg(
            long,
            value_name = "N",
            required_unless_present = "header_length_from",
            conflicts_with = "header_length_from"
        )]
        header_length: Option<u64>,
        /// Read the header length from this file (as written by to-binary).
        #[arg(long, value_name = "FILE")]
        header_length_from: Option<PathBuf>,
        /// Write the JSON to this file instead of stdout.
        #[arg(short, long, value_name = "OUT")]
        output: Option<PathBuf>,
    },
}

pub fn run_tensor(cmd: TensorCommand) -> Result<(), CliError> {
    match cmd {
        TensorCommand::Decode {
            format,
            file,
            output,
        } => {
            let input = Bytes::from(read_input(&file)?);
            let lines = decode_bytes(&input, format)?;
            write_output(output.as_deref(), lines.as_bytes())
        }
        TensorCommand::Encode {
            format,
            file,
            output,
        } => {
            let bytes = encode_bytes(&read_input(&file)?, format)?;
            write_output(output.as_deref(), &bytes)
        }
    }
}

pub fn run_request(cmd: RequestCommand) -> Result<(), CliError> {
    match cmd {
        RequestCommand::ToBinary {
            response,
            file,
            output,
            header_length_to,
        } => {
            let (body, header_len) = to_binary_bytes(&read_input(&file)?, kind(response))?;
            write_output(output.as_deref(), &body)?;
            if header_length_to == Path::new("stderr") {
                eprintln!("{header_len}");
                Ok(())
            } else {
                write_file(&header_length_to, format!("{header_len}\n").as_bytes())
            }
        }
        RequestCommand::ToJson {
            response,
            file,
            header_length,
            header_length_from,
            output,
        } => {
            let header_len = match (header_length, header_length_from) {
                (Some(n), _) => n,
                (None, Some(path)) => {
                    let text = String::from_utf8_lossy(&read_input(&path)?).into_owned();
                    text.trim()
                        .parse()
                        .map_err(|_| CliError::HeaderLength(text.trim().to_owned()))?
                }
                (None, None) => return Err(CliError::HeaderLength(String::new())),
            };
            let body = Bytes::from(read_input(&file)?);
            let json = to_json_bytes(body, header_len, kind(response))?;
            write_output(output.as_deref(), &json)
        }
    }
}

fn kind(response: bool) -> DocKind {
    if response {
        DocKind::Response
    } else {
        DocKind::Request
    }
}

/// Every tensor in `input`, one description per line.
pub fn decode_bytes(input: &Bytes, format: TensorFormat) -> Result<String, CliError> {
    let tensors = decthings::decode_all(input, format.layout(), &DecodeLimits::default())?;
    let mut out = String::new();
    for t in &tensors {
        out.push_str(&describe::describe(t));
        out.push('\n');
    }
    Ok(out)
}

/// The tensors described in `json`, encoded back to back.
pub fn encode_bytes(json: &[u8], format: TensorFormat) -> Result<Vec<u8>, CliError> {
    let mut out = BytesMut::new();
    let mut index = 0;
    for value in serde_json::Deserializer::from_slice(json).into_iter::<Value>() {
        let value = value?;
        let descriptions = match value {
            Value::Array(items) => items,
            one => vec![one],
        };
        for d in descriptions {
            let tensor = describe::parse_description(&d).map_err(|source| match source {
                DescribeError::UnknownType(name) => CliError::UnknownType { index, name },
                source => CliError::Describe { index, source },
            })?;
            decthings::encode(&tensor, format.layout(), &mut out)
                .map_err(|source| CliError::Encode { index, source })?;
            index += 1;
        }
    }
    Ok(out.to_vec())
}

/// Every Decthings type name, comma-separated.
fn type_names() -> String {
    DecthingsType::ALL.map(DecthingsType::name).join(", ")
}

/// What an unknown type name probably meant: the Decthings spelling of a
/// V2 or numpy name (`FP32`, `float32` -> `f32`, `INT64` -> `i64`, `BOOL`
/// -> `boolean`), or why there is none (16-bit floats).
fn hint(name: &str) -> String {
    let lower = name.to_ascii_lowercase();
    let guess = [("float", "f"), ("fp", "f"), ("uint", "u"), ("int", "i")]
        .iter()
        .find_map(|(from, to)| lower.strip_prefix(from).map(|rest| format!("{to}{rest}")))
        .unwrap_or_else(|| match lower.as_str() {
            "bool" => "boolean".to_owned(),
            "bytes" | "str" => "string".to_owned(),
            _ => lower.clone(),
        });
    if matches!(guess.as_str(), "f16" | "bf16" | "half") {
        return " (Decthings has no 16-bit float type)".to_owned();
    }
    match DecthingsType::from_name(&guess) {
        Some(t) if t.name() != name => format!(" (did you mean {:?}?)", t.name()),
        _ => String::new(),
    }
}

fn subject(kind: DocKind, index: usize, name: &str) -> String {
    Subject {
        kind,
        name: Some(name.to_owned()),
        index,
    }
    .to_string()
}

/// A JSON document -> header + binary data; returns the body and the
/// header's length.
pub fn to_binary_bytes(json: &[u8], kind: DocKind) -> Result<(Vec<u8>, usize), CliError> {
    let doc = DocParser::parse(kind, DocLimits::default(), json)?;
    if let Some((i, t)) = doc
        .tensors
        .iter()
        .enumerate()
        .find(|(_, t)| matches!(t.data, EntryData::Binary { .. }))
    {
        return Err(CliError::Tensor {
            subject: subject(kind, i, &t.name),
            problem: "has \"binary_data_size\", but a JSON file carries no binary data".into(),
        });
    }
    let mut out = Vec::new();
    write_document(
        &doc,
        |_, t| match &t.data {
            EntryData::Inline { data, .. } => TensorForm::Binary(data.len() as u64),
            _ => TensorForm::AsIs,
        },
        |_, _| None,
        &mut out,
    )
    .map_err(|(i, e)| CliError::Tensor {
        subject: subject(kind, i, &doc.tensors[i].name),
        problem: e.to_string(),
    })?;
    let header_len = out.len();
    for t in &doc.tensors {
        if let Some(data) = inline_data(t) {
            out.extend_from_slice(&data);
        }
    }
    Ok((out, header_len))
}

/// A binary-extension body -> one JSON document with all data inline.
pub fn to_json_bytes(mut body: Bytes, header_len: u64, kind: DocKind) -> Result<Vec<u8>, CliError> {
    framing::check_header_length(header_len, Some(body.len() as u64), u64::MAX)?;
    let header = HeaderReader::new(header_len as usize)
        .push(&mut body)
        .unwrap_or_default();
    let doc = DocParser::parse(kind, DocLimits::default(), &header)?;
    let mut collector = BinaryCollector::new(&doc);
    collector.push(body)?;
    let binary: Vec<Bytes> = collector
        .finish()
        .map_err(|short| CliError::Tensor {
            subject: subject(kind, short.tensor, &doc.tensors[short.tensor].name),
            problem: format!(
                "binary data ends early: {} more bytes were expected",
                short.missing_total
            ),
        })?
        .into_iter()
        .map(concat)
        .collect();
    for (i, t) in doc.tensors.iter().enumerate() {
        if matches!(t.data, EntryData::Binary { .. }) {
            check_data(t.datatype, &t.shape, &binary[i]).map_err(|e| CliError::Tensor {
                subject: subject(kind, i, &t.name),
                problem: e.to_string(),
            })?;
        }
    }
    let mut out = Vec::new();
    write_document(
        &doc,
        |_, t| match t.data {
            EntryData::SharedMemory => TensorForm::AsIs,
            _ => TensorForm::Json,
        },
        |i, t| inline_data(t).or_else(|| Some(binary[i].clone())),
        &mut out,
    )
    .map_err(|(i, e)| CliError::Tensor {
        subject: subject(kind, i, &doc.tensors[i].name),
        problem: e.to_string(),
    })?;
    out.push(b'\n');
    Ok(out)
}

fn read_input(path: &Path) -> Result<Vec<u8>, CliError> {
    let io = |source| CliError::Io {
        path: path.display().to_string(),
        source,
    };
    if path == Path::new("-") {
        let mut buf = Vec::new();
        std::io::stdin().lock().read_to_end(&mut buf).map_err(io)?;
        return Ok(buf);
    }
    std::fs::read(path).map_err(io)
}

fn write_output(path: Option<&Path>, bytes: &[u8]) -> Result<(), CliError> {
    match path {
        Some(path) if path != Path::new("-") => write_file(path, bytes),
        _ => {
            let mut out = std::io::stdout().lock();
            out.write_all(bytes)
                .and_then(|()| out.flush())
                .map_err(|source| CliError::Io {
                    path: "<stdout>".into(),
                    source,
                })
        }
    }
}

fn write_file(path: &Path, bytes: &[u8]) -> Result<(), CliError> {
    std::fs::write(path, bytes).map_err(|source| CliError::Io {
        path: path.display().to_string(),
        source,
    })
}
