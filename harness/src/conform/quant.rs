//! `softmax_quantized` (CONFORMANCE.md, "Quantized softmax"): TensorFlow Lite Micro's int8 /
//! int16 softmax through softmax-core's `quant` kernels, with the parameters of TFLM's Prepare
//! in the answer. The op takes no `dtype`.

use serde_json::Value;
use softmax_core::quant::{softmax_s16, softmax_s8, softmax_s8_s16, S16Params, S8Params};

use super::request::{describe, parse_float, Request};
use super::{Failure, Outputs};

/// Fields besides `id` and `op`.
pub(super) const FIELDS: &[&str] = &[
    "x",
    "shape",
    "input_type",
    "output_type",
    "input_scale",
    "beta",
];

/// `"int8"` or `"int16"`.
#[derive(Clone, Copy, PartialEq, Eq)]
enum IntType {
    I8,
    I16,
}

impl IntType {
    fn range(self) -> (i64, i64) {
        match self {
            IntType::I8 => (i8::MIN as i64, i8::MAX as i64),
            IntType::I16 => (i16::MIN as i64, i16::MAX as i64),
        }
    }
}

fn int_type(req: &Request<'_>, name: &str) -> Result<IntType, Failure> {
    match req.raw(name) {
        Some(Value::String(s)) if s == "int8" => Ok(IntType::I8),
        Some(Value::String(s)) if s == "int16" => Ok(IntType::I16),
        Some(other) => Err(Failure::invalid_param(format!(
            "`{name}` must be \"int8\" or \"int16\", found {}",
            describe(other)
        ))),
        None => Err(Failure::invalid_param(format!(
            "missing required field `{name}` for op `softmax_quantized`"
        ))),
    }
}

/// A float32 parameter (`input_scale`, `beta`), read as the model stores it.
fn f32_param(req: &Request<'_>, name: &str, default: Option<f32>) -> Result<f32, Failure> {
    let v = match (req.raw(name), default) {
        (Some(v), _) => v,
        (None, Some(d)) => return Ok(d),
        (None, None) => {
            return Err(Failure::invalid_param(format!(
                "missing required field `{name}` for op `softmax_quantized`"
            )))
        }
    };
    parse_float::<f32>(v).ok_or_else(|| {
        Failure::invalid_param(format!("`{name}` must be a number, found {}", describe(v)))
    })
}

/// `x`: JSON integer literals (digits with an optional minus sign) within the input type's range.
fn integers(req: &Request<'_>, ty: IntType) -> Result<Vec<i64>, Failure> {
    let v = req.raw("x").ok_or_else(|| {
        Failure::invalid_param("missing required field `x` for op `softmax_quantized`")
    })?;
    let Value::Array(items) = v else {
        return Err(Failure::invalid_param(format!(
            "`x` must be a flat array of integers, found {}",
            describe(v)
        )));
    };
    let (lo, hi) = ty.range();
    items
        .iter()
        .enumerate()
        .map(|(i, item)| {
            let value = match item {
                Value::Number(n) => {
                    let text = n.as_str();
                    let digits = text.strip_prefix('-').unwrap_or(text);
                    if !digits.is_empty() && digits.bytes().all(|c| c.is_ascii_digit()) {
                        text.parse::<i64>().ok()
                    } else {
                        None
                    }
                }
                _ => None,
            };
            match value {
                Some(q) if (lo..=hi).contains(&q) => Ok(q),
                _ => Err(Failure::invalid_param(format!(
                    "`x[{i}]` must be an integer in [{lo}, {hi}], found {}",
                    describe(item)
                ))),
            }
        })
        .collect()
}

fn int_array(values: impl Iterator<Item = i64>) -> String {
    let items: Vec<String> = values.map(|v| v.to_string()).collect();
    format!("[{}]", items.join(","))
}

/// `softmax_quantized`: validates the types, then the shape, then the parameters (Prepare), then
/// runs the kernel; a row TFLM has no answer for is `invalid_param`.
pub(super) fn softmax_quantized(req: &Request<'_>) -> Result<Outputs, Failure> {
    let input = int_type(req, "input_type")?;
    let output = int_type(req, "output_type")?;
    let x = integers(req, input)?;
    let shape = req.row_shape("shape")?;
    let scale = f32_param(req, "input_scale", None)?;
    let beta = f32_param(req, "beta", Some(1.0))?;
    shape.check_len("x", x.len())?;
    let n = shape.n;
    let prepare_failed = |e: softmax_core::Error| {
        Failure::invalid_param(format!(
            "input_scale {scale:e} and beta {beta:e}: TensorFlow Lite Micro's Prepare has no parameters for them ({e})"
        ))
    };
    let no_answer = |e: softmax_core::Error| match e {
        softmax_core::Error::QuantizedSumOverflow => Failure::invalid_param(e.to_string()),
        other => Failure::from(other),
    };
    match (input, output) {
        (IntType::I8, out) => {
            let p = S8Params::prepare(scale, beta).map_err(prepare_failed)?;
            let x: Vec<i8> = x.iter().map(|&v| v as i8).collect();
            let mut scratch = vec![0i32; n];
            let y = if out == IntType::I8 {
                let mut y = vec![0i8; x.len()];
                softmax_s8(&p, &x, n, &mut scratch, &mut y).map_err(no_answer)?;
                int_array(y.iter().map(|&v| v as i64))
            } else {
                let mut y = vec![0i16; x.len()];
                softmax_s8_s16(&p, &x, n, &mut scratch, &mut y).map_err(no_answer)?;
                int_array(y.iter().map(|&v| v as i64))
            };
            Ok(vec![
                ("y", y),
                ("input_multiplier", p.input_multiplier().to_string()),
                ("input_left_shift", p.input_left_shift().to_string()),
                ("diff_min", p.diff_min().to_string()),
            ])
        }
        (IntType::I16, IntType::I16) => {
            let p = S16Params::prepare(scale, beta).map_err(prepare_failed)?;
            let x: Vec<i16> = x.iter().map(|&v| v as i16).collect();
            let mut y = vec![0i16; x.len()];
            softmax_s16(&p, &x, n, &mut y).map_err(no_answer)?;
            Ok(vec![
                ("y", int_array(y.iter().map(|&v| v as i64))),
                ("input_multiplier", p.input_multiplier().to_string()),
                ("input_left_shift", p.input_left_shift().to_string()),
            ])
        }
        (IntType::I16, IntType::I8) => Err(Failure::invalid_param(
            "int16 input needs int16 output (TensorFlow Lite Micro has no int16 → int8 softmax)",
        )),
    }
}
