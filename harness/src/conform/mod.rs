//! `harness conform`: the JSON-lines protocol of `harness/CONFORMANCE.md`.
//!
//! Each input line is one case; each gets exactly one answer line, in order, flushed as soon as
//! it is written (so a driver may send a line and wait for its answer). Nothing a line contains
//! can stop the loop: only an I/O error on the streams ends the run early; end of input ends it
//! with `Ok`.
//!
//! # Layout
//!
//! * this module: the line loop, the error kinds, and the op table [`OPS`];
//! * `wire`: text-level work (raw members of the input object, float formatting, answer lines);
//! * `request`: typed field access (floats parsed from their decimal text into the dtype);
//! * `softmax`: the softmax-family handlers.
//!
//! An op is one handler function, generic over the element type, plus one [`Op`] entry in [`OPS`]
//! naming it, its allowed fields, and whether it supports f64. The generic checks (object, op,
//! id, duplicate and unknown fields, dtype) happen here before the handler runs.
//!
//! # Decisions where CONFORMANCE.md leaves room
//!
//! * Every input line gets an answer line, so answers pair with lines by position. A blank line
//!   (empty or whitespace only) is not JSON: a `parse` error, like any other non-JSON line.
//!   A final line without a newline is a line. Invalid UTF-8 is a `parse` error.
//! * Check order: `parse` (not UTF-8, not JSON, not an object) → duplicate field
//!   (`invalid_param`: JSON leaves duplicates undefined, so they are refused rather than
//!   silently resolved) → `op` missing or not a string (`invalid_param`) → op not in the table
//!   (`unknown_op`, whatever the other fields) → `id` missing (`invalid_param`: every line
//!   carries one) → unknown field (`invalid_param`) → `dtype` (not a string: `invalid_param`;
//!   another string: `unsupported_dtype`; `"f64"` with a field that exists only for f32,
//!   [`F32_ONLY`]: `invalid_param`) → the op's own fields: every field's type first
//!   (`invalid_param`), then the shape and the lengths (`shape`), then the values
//!   (`invalid_param`).
//! * `id` is echoed as its exact input text with insignificant whitespace removed, so numbers
//!   keep their text (`1E+05` stays `1E+05`) and strings their escapes. On a `parse` error it
//!   is `null`; when the line has no `id`, too.
//! * Optional fields given as `null` are wrong types (`invalid_param`), not "absent".
//! * Float inputs: a JSON number is converted from its decimal text straight to the dtype,
//!   correctly rounded; beyond the dtype's range that is ±inf or ±0 (IEEE conversion, as numpy
//!   does), e.g. `1e39` is `inf` in f32. The strings accepted are exactly `"nan"`, `"inf"` and
//!   `"-inf"`. A temperature that rounds to 0 or ±inf in the dtype is refused.
//! * Integers (shape entries) must be written as non-negative integers: `2.0`, `2e0`, `-1`,
//!   `1.5` are `invalid_param`. A well-typed shape that can never match data (dimension or
//!   product beyond `usize`) is a `shape` error, decided before anything is allocated.
//! * Tensors are flat: a nested array inside `x`, `dy` or `mask` is a wrong element type,
//!   `invalid_param` (a `shape` error would suggest the lengths were the problem).
//! * `[0, N]` (zero rows, N >= 1) with empty data is valid and answers empty arrays, as
//!   softmax-core's batched functions do; N = 0 is a `shape` error.
//! * `logsumexp` and `entropy` answer an array of R values also for shape `[N]` (R = 1).
//! * Output floats: shortest round-trip digits for the dtype; plain notation for
//!   1e-5 <= |v| < 1e16 with `.0` on integral values (so `-0.0` keeps its sign in every JSON
//!   parser), exponent notation otherwise; `"nan"`, `"inf"`, `"-inf"` as strings.

mod attention;
mod loss;
mod quant;
mod request;
mod softmax;
mod wire;

use std::collections::HashSet;
use std::io::{BufRead, Write};

use serde_json::{Map, Value};

use request::Request;

/// The protocol's error kinds.
#[allow(dead_code)] // Until every op that raises each kind has landed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// Not UTF-8, not JSON, or not an object.
    Parse,
    /// `op` names no op of the table.
    UnknownOp,
    /// A length that does not match its shape, a shape with other than 1 or 2 dimensions, N = 0.
    Shape,
    /// Missing, unknown or duplicate field, wrong type, value out of its domain.
    InvalidParam,
    /// A dtype other than f32/f64, or f64 for an op without it.
    UnsupportedDtype,
    /// A class index outside [0, C) that is not `ignore_index`.
    TargetOutOfRange,
    /// A `"mean"` over zero total weight.
    NoTargets,
    /// The KV cache would need more than `capacity` tokens.
    CacheFull,
}

impl Kind {
    fn as_str(self) -> &'static str {
        match self {
            Kind::Parse => "parse",
            Kind::UnknownOp => "unknown_op",
            Kind::Shape => "shape",
            Kind::InvalidParam => "invalid_param",
            Kind::UnsupportedDtype => "unsupported_dtype",
            Kind::TargetOutOfRange => "target_out_of_range",
            Kind::NoTargets => "no_targets",
            Kind::CacheFull => "cache_full",
        }
    }
}

/// An error answer: its kind and a human-readable message.
#[derive(Clone, Debug)]
pub(crate) struct Failure {
    kind: Kind,
    message: String,
}

impl Failure {
    pub(crate) fn new(kind: Kind, message: impl Into<String>) -> Self {
        Failure {
            kind,
            message: message.into(),
        }
    }

    pub(crate) fn shape(message: impl Into<String>) -> Self {
        Failure::new(Kind::Shape, message)
    }

    pub(crate) fn invalid_param(message: impl Into<String>) -> Self {
        Failure::new(Kind::InvalidParam, message)
    }
}

/// softmax-core's structural errors in protocol terms. The handlers validate lengths and the
/// temperature themselves first (to name the field), so these are the backstop.
impl From<softmax_core::Error> for Failure {
    fn from(e: softmax_core::Error) -> Self {
        use softmax_core::Error as E;
        let kind = match e {
            E::EmptyRow | E::LengthMismatch { .. } | E::RaggedBatch { .. } | E::ShapeOverflow => {
                Kind::Shape
            }
            E::InvalidTemperature | E::InvalidNoise | E::EntropyOutOfRange => Kind::InvalidParam,
            _ => Kind::InvalidParam,
        };
        Failure::new(kind, e.to_string())
    }
}

/// A successful answer's output fields: name and JSON text of the value.
pub(crate) type Outputs = Vec<(&'static str, String)>;

/// Computes one op for one element type.
type Handler = fn(&Request<'_>) -> Result<Outputs, Failure>;

/// One entry of the op table.
pub(crate) struct Op {
    /// The `op` string.
    name: &'static str,
    /// Fields the op accepts besides [`COMMON_FIELDS`]; any other field is `invalid_param`.
    fields: &'static [&'static str],
    /// The handler for `"dtype": "f32"` (the default).
    f32: Handler,
    /// The handler for `"dtype": "f64"`, or `None`: `unsupported_dtype`.
    f64: Option<Handler>,
}

/// Fields every op accepts.
const COMMON_FIELDS: &[&str] = &["id", "op", "dtype"];

/// The op tables: the softmax family here, the losses in `loss`, attention in `attention`. An op
/// of CONFORMANCE.md in none of them answers `unknown_op`.
const TABLES: &[&[Op]] = &[OPS, loss::OPS, attention::OPS];

/// The softmax family's ops.
const OPS: &[Op] = &[
    Op {
        name: "softmax",
        fields: softmax::FIELDS,
        f32: softmax::softmax::<f32>,
        f64: Some(softmax::softmax::<f64>),
    },
    Op {
        name: "log_softmax",
        fields: softmax::FIELDS,
        f32: softmax::log_softmax::<f32>,
        f64: Some(softmax::log_softmax::<f64>),
    },
    Op {
        name: "logsumexp",
        fields: softmax::FIELDS,
        f32: softmax::logsumexp::<f32>,
        f64: Some(softmax::logsumexp::<f64>),
    },
    Op {
        name: "entropy",
        fields: softmax::FIELDS,
        f32: softmax::entropy::<f32>,
        f64: Some(softmax::entropy::<f64>),
    },
    Op {
        name: "softmax_vjp",
        fields: softmax::VJP_FIELDS,
        f32: softmax::softmax_vjp::<f32>,
        f64: Some(softmax::softmax_vjp::<f64>),
    },
    Op {
        name: "log_softmax_vjp",
        fields: softmax::VJP_FIELDS,
        f32: softmax::log_softmax_vjp::<f32>,
        f64: Some(softmax::log_softmax_vjp::<f64>),
    },
    Op {
        name: "sparsemax",
        fields: softmax::FIELDS,
        f32: softmax::sparsemax::<f32>,
        f64: Some(softmax::sparsemax::<f64>),
    },
    // Integer in, integer out: no dtype (see NO_DTYPE).
    Op {
        name: "softmax_quantized",
        fields: quant::FIELDS,
        f32: quant::softmax_quantized,
        f64: None,
    },
];

/// Ops whose types come from their own fields: a `dtype` field is `invalid_param` for them.
const NO_DTYPE: &[&str] = &["softmax_quantized"];

/// `(op, field)`: fields that exist only with `"dtype": "f32"`. Given with `"f64"`, the
/// combination is `invalid_param` (checked in place of the op's missing f64 form,
/// `unsupported_dtype`): `kv_dtype` names how an f32 computation stores its cache.
const F32_ONLY: &[(&str, &str)] = &[("attention_stream", "kv_dtype")];

/// Reads cases from `input`, writes one answer line per case to `out`.
///
/// # Errors
///
/// Only I/O errors of `input` or `out`; nothing in the data is an error here.
pub fn run(mut input: impl BufRead, out: &mut impl Write) -> std::io::Result<()> {
    let mut line = Vec::new();
    loop {
        line.clear();
        if input.read_until(b'\n', &mut line)? == 0 {
            return Ok(());
        }
        if line.last() == Some(&b'\n') {
            line.pop();
        }
        let mut answer = answer(&line);
        answer.push('\n');
        out.write_all(answer.as_bytes())?;
        out.flush()?;
    }
}

/// The answer line (without newline) for one input line.
fn answer(line: &[u8]) -> String {
    let text = match std::str::from_utf8(line) {
        Ok(text) => text,
        Err(e) => {
            let f = Failure::new(
                Kind::Parse,
                format!(
                    "line is not valid UTF-8 (bad byte at offset {})",
                    e.valid_up_to()
                ),
            );
            return wire::failure_line("null", &f);
        }
    };
    let fields = match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(fields)) => fields,
        Ok(other) => {
            let f = Failure::new(
                Kind::Parse,
                format!(
                    "a case must be a JSON object, found {}",
                    request::describe(&other)
                ),
            );
            return wire::failure_line("null", &f);
        }
        Err(e) => {
            let what = if text.trim().is_empty() {
                "blank line".to_string()
            } else {
                format!("not JSON: {e}")
            };
            return wire::failure_line("null", &Failure::new(Kind::Parse, what));
        }
    };
    let members = wire::members(text);
    let id = echo_id(&fields, members.as_deref());
    match respond(&fields, members.as_deref()) {
        Ok(outputs) => wire::success_line(&id, &outputs),
        Err(f) => wire::failure_line(&id, &f),
    }
}

/// The JSON text to echo as `id`: its raw input text, minified; `null` when absent.
fn echo_id(fields: &Map<String, Value>, members: Option<&[(&str, &str)]>) -> String {
    let raw = members.and_then(|m| {
        m.iter()
            .rev()
            .find(|(key, _)| serde_json::from_str::<String>(key).is_ok_and(|k| k == "id"))
            .map(|(_, value)| wire::minify(value))
    });
    match (raw, fields.get("id")) {
        (Some(raw), _) => raw,
        // The scanner cannot fail on text serde_json accepted; the parsed value is the fallback.
        (None, Some(v)) => v.to_string(),
        (None, None) => "null".to_string(),
    }
}

/// Runs the generic checks, then the op's handler.
fn respond(
    fields: &Map<String, Value>,
    members: Option<&[(&str, &str)]>,
) -> Result<Outputs, Failure> {
    if let Some(members) = members {
        let mut seen = HashSet::with_capacity(members.len());
        for (key, _) in members {
            let key = serde_json::from_str::<String>(key).unwrap_or_default();
            if !seen.insert(key.clone()) {
                return Err(Failure::invalid_param(format!(
                    "field {} appears more than once",
                    Value::String(key)
                )));
            }
        }
    }
    let name = match fields.get("op") {
        Some(Value::String(name)) => name,
        Some(other) => {
            return Err(Failure::invalid_param(format!(
                "`op` must be a string, found {}",
                request::describe(other)
            )))
        }
        None => return Err(Failure::invalid_param("missing required field `op`")),
    };
    let Some(op) = TABLES
        .iter()
        .flat_map(|t| t.iter())
        .find(|op| op.name == name)
    else {
        return Err(Failure::new(
            Kind::UnknownOp,
            format!("unknown op {}", Value::String(name.clone())),
        ));
    };
    if !fields.contains_key("id") {
        return Err(Failure::invalid_param("missing required field `id`"));
    }
    if let Some(unknown) = fields
        .keys()
        .find(|k| !COMMON_FIELDS.contains(&k.as_str()) && !op.fields.contains(&k.as_str()))
    {
        let allowed: Vec<&str> = COMMON_FIELDS.iter().chain(op.fields).copied().collect();
        return Err(Failure::invalid_param(format!(
            "unknown field {} for op `{}` (allowed: {})",
            Value::String(unknown.clone()),
            op.name,
            allowed.join(", ")
        )));
    }
    if NO_DTYPE.contains(&op.name) && fields.contains_key("dtype") {
        return Err(Failure::invalid_param(format!(
            "op `{}` takes no `dtype` (its integer types are `input_type` and `output_type`)",
            op.name
        )));
    }
    let handler = match fields.get("dtype") {
        None => op.f32,
        Some(Value::String(d)) if d == "f32" => op.f32,
        Some(Value::String(d)) if d == "f64" => {
            if let Some((_, field)) = F32_ONLY
                .iter()
                .find(|(name, field)| *name == op.name && fields.contains_key(*field))
            {
                return Err(Failure::invalid_param(format!(
                    "`{field}` is only for \"dtype\": \"f32\" (op `{}` computes in f32)",
                    op.name
                )));
            }
            op.f64.ok_or_else(|| {
                Failure::new(
                    Kind::UnsupportedDtype,
                    format!("op `{}` supports only f32", op.name),
                )
            })?
        }
        Some(Value::String(d)) => {
            return Err(Failure::new(
                Kind::UnsupportedDtype,
                format!(
                    "unsupported dtype {} (f32 or f64)",
                    Value::String(d.clone())
                ),
            ))
        }
        Some(other) => {
            return Err(Failure::invalid_param(format!(
                "`dtype` must be the string \"f32\" or \"f64\", found {}",
                request::describe(other)
            )))
        }
    };
    handler(&Request::new(op.name, fields))
}
