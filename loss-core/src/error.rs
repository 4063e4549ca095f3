//! The error type of every loss: structural problems with the arguments, never the values in the
//! tensors (those follow the edge semantics of the crate docs).

#![forbid(unsafe_code)]

/// What can go wrong in a call: a shape or length that does not fit, a class index outside the
/// classes, a `Mean` over zero total weight, a parameter outside its domain, or an output buffer
/// the options require that was not given. Values inside the tensors (NaN, ±inf, huge, tiny) are
/// never errors.
///
/// # Examples
///
/// ```
/// use loss_core::{cross_entropy, CrossEntropyOptions, CrossEntropyOutputs, Error};
/// use loss_core::softmax_core::backend::Poly;
/// let logits = [1.0f32, 2.0, 3.0, 4.0];
/// let r = cross_entropy(Poly, &logits, 2, &[0, 5], &CrossEntropyOptions::new(),
///                       CrossEntropyOutputs::new());
/// assert_eq!(r, Err(Error::TargetOutOfRange { sample: 1, target: 5 }));
/// assert_eq!(r.unwrap_err().to_string(), "target 5 of sample 1 is not a class index (and not ignore_index)");
/// ```
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Error {
    /// A dimension that must be at least 1 is 0 (classes, embedding width, vocabulary, ...).
    Empty {
        /// The argument.
        argument: &'static str,
    },
    /// A buffer's length is not what the other arguments imply.
    LengthMismatch {
        /// The argument whose length is wrong.
        argument: &'static str,
        /// The length required.
        expected: usize,
        /// The length given.
        found: usize,
    },
    /// A buffer is not a whole number of rows.
    RaggedBatch {
        /// The argument.
        argument: &'static str,
        /// Its length.
        len: usize,
        /// The row length.
        row: usize,
    },
    /// A shape whose product does not fit in `usize`.
    ShapeOverflow,
    /// A class index outside `[0, C)` that is not `ignore_index`.
    TargetOutOfRange {
        /// The sample (row) holding it.
        sample: usize,
        /// The index given.
        target: i64,
    },
    /// A `Mean` over zero total weight: every target ignored, the targets' weights summing to 0,
    /// or no samples at all (PyTorch returns NaN here).
    NoTargets,
    /// A parameter outside its domain (label smoothing outside `[0, 1]`, a temperature or soft
    /// cap that is not positive and finite, a negative z-loss or γ, a reduction the loss does not
    /// have, an option the call does not allow).
    InvalidParameter {
        /// The parameter.
        name: &'static str,
    },
    /// An output buffer that the options make necessary was not given: with
    /// [`Reduction::None`](crate::Reduction::None) the per-sample losses are the result, so the
    /// per-sample buffer (`losses`) is required.
    MissingOutput {
        /// The buffer (the outputs' `with_*` method that gives it, without `with_`).
        argument: &'static str,
    },
    /// An error reported by softmax-core (a backstop: the losses check their arguments first).
    Softmax(softmax_core::Error),
}

impl core::fmt::Display for Error {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Error::Empty { argument } => write!(f, "`{argument}` must be at least 1"),
            Error::LengthMismatch {
                argument,
                expected,
                found,
            } => write!(f, "`{argument}` has length {found}, expected {expected}"),
            Error::RaggedBatch { argument, len, row } => write!(
                f,
                "`{argument}` has {len} values, not a whole number of rows of {row}"
            ),
            Error::ShapeOverflow => f.write_str("shape product overflows usize"),
            Error::TargetOutOfRange { sample, target } => write!(
                f,
                "target {target} of sample {sample} is not a class index (and not ignore_index)"
            ),
            Error::NoTargets => {
                f.write_str("mean over zero total weight (every target ignored or weighted 0)")
            }
            Error::InvalidParameter { name } => write!(f, "invalid value of `{name}`"),
            Error::MissingOutput { argument } => write!(
                f,
                "`{argument}` is required: with reduction none the per-sample values are the result"
            ),
            Error::Softmax(e) => write!(f, "softmax-core: {e}"),
        }
    }
}

impl core::error::Error for Error {}

impl From<softmax_core::Error> for Error {
    fn from(e: softmax_core::Error) -> Self {
        Error::Softmax(e)
    }
}

/// `Ok` if `found == expected`, else [`Error::LengthMismatch`] naming `argument`.
#[inline]
pub(crate) fn check_len(
    argument: &'static str,
    expected: usize,
    found: usize,
) -> Result<(), Error> {
    if expected == found {
        Ok(())
    } else {
        Err(Error::LengthMismatch {
            argument,
            expected,
            found,
        })
    }
}

/// The number of rows of `row` values in `len` values.
#[inline]
pub(crate) fn rows_of(argument: &'static str, len: usize, row: usize) -> Result<usize, Error> {
    if row == 0 {
        return Err(Error::Empty { argument });
    }
    if !len.is_multiple_of(row) {
        return Err(Error::RaggedBatch { argument, len, row });
    }
    Ok(len / row)
}

/// `a·b`, or [`Error::ShapeOverflow`].
#[inline]
pub(crate) fn mul(a: usize, b: usize) -> Result<usize, Error> {
    a.checked_mul(b).ok_or(Error::ShapeOverflow)
}
