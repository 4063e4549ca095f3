//! Typed access to the fields of one input object: floats parsed straight from their decimal
//! text into the target type, booleans, shapes. Every failure is an `invalid_param` (missing
//! field, wrong type) or a `shape` error, with the field named in the message.

use std::fmt::LowerExp;
use std::str::FromStr;

use serde_json::{Map, Value};
use softmax_core::Float;

use super::Failure;

/// An element type the protocol computes in: `f32` or `f64`.
pub(crate) trait Real: Float + FromStr + LowerExp {
    /// The protocol's name for it (`"dtype"`).
    const DTYPE: &'static str;
}

impl Real for f32 {
    const DTYPE: &'static str = "f32";
}

impl Real for f64 {
    const DTYPE: &'static str = "f64";
}

/// A float field value: a JSON number, parsed from its decimal text directly to `F` (correctly
/// rounded, no detour through f64; values beyond the range of `F` round to ±inf or ±0 as IEEE
/// conversion does), or one of the strings `"nan"`, `"inf"`, `"-inf"`.
pub(super) fn parse_float<F: Real>(v: &Value) -> Option<F> {
    match v {
        Value::Number(n) => n.as_str().parse::<F>().ok(),
        Value::String(s) => match s.as_str() {
            "nan" => Some(F::NAN),
            "inf" => Some(F::INFINITY),
            "-inf" => Some(F::NEG_INFINITY),
            _ => None,
        },
        _ => None,
    }
}

/// What kind of JSON value `v` is, for messages.
pub(super) fn describe(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(b) => format!("the boolean {b}"),
        Value::Number(n) => format!("the number {}", n.as_str()),
        Value::String(s) => {
            let mut short: String = s.chars().take(40).collect();
            if short.len() < s.len() {
                short.push('…');
            }
            format!("the string {}", Value::String(short))
        }
        Value::Array(a) => format!("an array of length {}", a.len()),
        Value::Object(_) => "an object".into(),
    }
}

/// The shape of a row batch, `[N]` (one row) or `[R, N]`, validated: N >= 1 and `R·N`
/// addressable.
#[derive(Clone, Debug)]
pub(super) struct RowShape {
    /// R (1 for `[N]`).
    pub rows: usize,
    /// N, the row length (>= 1).
    pub n: usize,
    /// R·N.
    pub len: usize,
    /// The shape as written, for messages.
    text: String,
}

impl RowShape {
    /// `field` must hold exactly `len` values.
    pub(super) fn check_len(&self, field: &str, len: usize) -> Result<(), Failure> {
        if len == self.len {
            Ok(())
        } else {
            Err(Failure::shape(format!(
                "`{field}` has {len} values but shape {} needs {}",
                self.text, self.len
            )))
        }
    }
}

/// The fields of one input object, for one op.
pub(super) struct Request<'a> {
    op: &'static str,
    fields: &'a Map<String, Value>,
}

impl<'a> Request<'a> {
    pub(super) fn new(op: &'static str, fields: &'a Map<String, Value>) -> Self {
        Request { op, fields }
    }

    fn required(&self, name: &str) -> Result<&'a Value, Failure> {
        self.fields.get(name).ok_or_else(|| {
            Failure::invalid_param(format!(
                "missing required field `{name}` for op `{}`",
                self.op
            ))
        })
    }

    /// The raw value of a field, if present: for op modules whose fields are not floats,
    /// booleans or row shapes (integers, strings; see `loss.rs`).
    pub(super) fn raw(&self, name: &str) -> Option<&'a Value> {
        self.fields.get(name)
    }

    /// A required flat array of floats.
    pub(super) fn floats<F: Real>(&self, name: &str) -> Result<Vec<F>, Failure> {
        let v = self.required(name)?;
        let Value::Array(items) = v else {
            return Err(Failure::invalid_param(format!(
                "`{name}` must be a flat array of floats, found {}",
                describe(v)
            )));
        };
        items
            .iter()
            .enumerate()
            .map(|(i, item)| {
                parse_float(item).ok_or_else(|| {
                    Failure::invalid_param(format!(
                        "`{name}[{i}]` must be a number or one of \"nan\", \"inf\", \"-inf\", found {}",
                        describe(item)
                    ))
                })
            })
            .collect()
    }

    /// An optional float (`default` when absent).
    pub(super) fn float_or<F: Real>(&self, name: &str, default: F) -> Result<F, Failure> {
        match self.fields.get(name) {
            None => Ok(default),
            Some(v) => parse_float(v).ok_or_else(|| {
                Failure::invalid_param(format!(
                    "`{name}` must be a number or one of \"nan\", \"inf\", \"-inf\", found {}",
                    describe(v)
                ))
            }),
        }
    }

    /// An optional flat array of booleans.
    pub(super) fn opt_bools(&self, name: &str) -> Result<Option<Vec<bool>>, Failure> {
        let Some(v) = self.fields.get(name) else {
            return Ok(None);
        };
        let Value::Array(items) = v else {
            return Err(Failure::invalid_param(format!(
                "`{name}` must be a flat array of booleans, found {}",
                describe(v)
            )));
        };
        items
            .iter()
            .enumerate()
            .map(|(i, item)| match item {
                Value::Bool(b) => Ok(*b),
                other => Err(Failure::invalid_param(format!(
                    "`{name}[{i}]` must be a boolean, found {}",
                    describe(other)
                ))),
            })
            .collect::<Result<Vec<bool>, Failure>>()
            .map(Some)
    }

    /// A required row shape, `[N]` or `[R, N]`.
    ///
    /// An entry that is not a non-negative integer written as one (`2`, not `2.0`, `2e0` or
    /// `-2`) is a wrong type: `invalid_param`. With well-typed entries, everything else is a
    /// `shape` error: other than 1 or 2 dimensions, N = 0, a dimension or a product too large
    /// to address (such a shape can never match the data).
    pub(super) fn row_shape(&self, name: &str) -> Result<RowShape, Failure> {
        let v = self.required(name)?;
        let Value::Array(items) = v else {
            return Err(Failure::invalid_param(format!(
                "`{name}` must be an array of non-negative integers ([N] or [R, N]), found {}",
                describe(v)
            )));
        };
        let mut dims: Vec<Option<usize>> = Vec::with_capacity(items.len().min(4));
        for (i, item) in items.iter().enumerate() {
            match item {
                Value::Number(num) if num.as_str().bytes().all(|c| c.is_ascii_digit()) => {
                    // Digits only: a non-negative integer; `None` if it does not fit a usize.
                    dims.push(num.as_str().parse::<usize>().ok());
                }
                other => {
                    return Err(Failure::invalid_param(format!(
                        "`{name}[{i}]` must be a non-negative integer, found {}",
                        describe(other)
                    )))
                }
            }
        }
        let (rows, n) = match dims.as_slice() {
            [n] => (Some(1), *n),
            [r, n] => (*r, *n),
            _ => {
                return Err(Failure::shape(format!(
                    "`{name}` must have 1 or 2 dimensions ([N] or [R, N]), found {}",
                    dims.len()
                )))
            }
        };
        // One or two entries: short.
        let text = v.to_string();
        let too_large = || Failure::shape(format!("`{name}` {text} is too large to address"));
        let (rows, n) = (rows.ok_or_else(too_large)?, n.ok_or_else(too_large)?);
        if n == 0 {
            return Err(Failure::shape(format!(
                "`{name}` {text} has rows of length N = 0"
            )));
        }
        let len = rows.checked_mul(n).ok_or_else(too_large)?;
        Ok(RowShape { rows, n, len, text })
    }
}
