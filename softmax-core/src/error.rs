//! What can go wrong ([`Error`]), and the checks of the API boundary that report it.

#![forbid(unsafe_code)]

use crate::float::Float;

/// What can go wrong: structural problems with the arguments, never the values in them (those
/// follow the crate's edge semantics: NaN poisons its row, `±inf` and all-masked rows have
/// defined results).
///
/// # Examples
///
/// ```
/// use softmax_core::{softmax, Error, backend::Poly};
/// let mut y = [0.0f32; 2];
/// assert_eq!(softmax(Poly, &[1.0, 2.0, 3.0], &mut y), Err(Error::LengthMismatch { expected: 3, found: 2 }));
/// assert_eq!(softmax::<f32, _>(Poly, &[], &mut []), Err(Error::EmptyRow));
/// ```
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Error {
    /// A row has no entries (`n = 0`, or an empty single row).
    EmptyRow,
    /// A buffer's length is not what the other arguments imply.
    LengthMismatch {
        /// The length required.
        expected: usize,
        /// The length given.
        found: usize,
    },
    /// A batch's length is not a whole number of rows.
    RaggedBatch {
        /// The length given.
        len: usize,
        /// The row length.
        n: usize,
    },
    /// The temperature is not a positive finite number.
    InvalidTemperature,
    /// Gumbel noise outside the open interval (0, 1).
    InvalidNoise,
    /// [`temperature_for_entropy`](crate::temperature_for_entropy): the target entropy is not strictly between `ln k` and `ln n`
    /// (or the row's entropy does not depend on τ: NaN or `+inf` entries).
    EntropyOutOfRange,
    /// [`fast`](crate::fast): a spec with a mask or a temperature other than 1 (the fast
    /// kernels compute neither; [`rows`](crate::rows) does).
    FastSpec,
    /// A shape's product of dimensions (e.g. `n·k` in [`linalg`](crate::linalg)) overflows
    /// `usize`: no buffer can have that length.
    ShapeOverflow,
    /// [`quant`](crate::quant): quantization parameters TensorFlow Lite Micro's Prepare has no
    /// answer for (a scale or β that is not positive and finite, int8 input with
    /// `β·s·2²⁶ <= 1`, an int16 left shift of 16 or more), or raw parameters that would overflow.
    InvalidQuantization,
    /// [`quant`](crate::quant): a row whose fixed-point sum of exps overflows its int32
    /// accumulator, or (int8 output) reaches 2²⁸, where TFLM's reference aborts.
    QuantizedSumOverflow,
    /// [`stored`](crate::stored): a row that a reduced-precision format cannot hold (NaN, ±inf,
    /// or a finite value the format would round to ±inf).
    NotStorable,
}

impl core::fmt::Display for Error {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Error::EmptyRow => f.write_str("row has no entries"),
            Error::LengthMismatch { expected, found } => {
                write!(f, "length mismatch: expected {expected}, found {found}")
            }
            Error::RaggedBatch { len, n } => {
                write!(
                    f,
                    "batch of {len} values is not a whole number of rows of {n}"
                )
            }
            Error::InvalidTemperature => f.write_str("temperature must be positive and finite"),
            Error::InvalidNoise => {
                f.write_str("uniform noise must lie in the open interval (0, 1)")
            }
            Error::FastSpec => f.write_str(
                "the fast variant computes unmasked rows at temperature 1 only (rows:: takes masks and temperatures)",
            ),
            Error::EntropyOutOfRange => {
                f.write_str("target entropy is outside the range softmax(x/τ) can reach")
            }
            Error::ShapeOverflow => f.write_str("the dimensions' product overflows usize"),
            Error::InvalidQuantization => f.write_str(
                "quantization parameters outside what TensorFlow Lite Micro's Prepare accepts",
            ),
            Error::QuantizedSumOverflow => f.write_str(
                "the row's fixed-point sum of exps overflows (TensorFlow Lite Micro has no answer)",
            ),
            Error::NotStorable => f.write_str(
                "the row holds NaN, an infinity or a value the storage format rounds to infinity",
            ),
        }
    }
}

impl core::error::Error for Error {}

/// `found == expected`, else [`Error::LengthMismatch`].
#[inline]
pub(crate) fn check_len(expected: usize, found: usize) -> Result<(), Error> {
    if expected == found {
        Ok(())
    } else {
        Err(Error::LengthMismatch { expected, found })
    }
}

/// `a·b`, or [`Error::ShapeOverflow`].
#[inline]
pub(crate) fn mul(a: usize, b: usize) -> Result<usize, Error> {
    a.checked_mul(b).ok_or(Error::ShapeOverflow)
}

/// The number of rows of `n` in `len` values: [`Error::EmptyRow`] if `n = 0`,
/// [`Error::RaggedBatch`] unless `n` divides `len`.
#[inline]
pub(crate) fn check_rows(len: usize, n: usize) -> Result<usize, Error> {
    if n == 0 {
        return Err(Error::EmptyRow);
    }
    if !len.is_multiple_of(n) {
        return Err(Error::RaggedBatch { len, n });
    }
    Ok(len / n)
}

/// A single row must not be empty.
#[inline]
pub(crate) fn check_row(len: usize) -> Result<(), Error> {
    if len == 0 {
        Err(Error::EmptyRow)
    } else {
        Ok(())
    }
}

/// τ must be positive and finite.
#[inline]
pub(crate) fn check_temperature<F: Float>(t: F) -> Result<(), Error> {
    if t > F::ZERO && t.is_finite() {
        Ok(())
    } else {
        Err(Error::InvalidTemperature)
    }
}

/// Gumbel noise must lie in the open interval (0, 1).
#[inline]
pub(crate) fn check_noise<F: Float>(uniform: &[F]) -> Result<(), Error> {
    if uniform.iter().all(|&u| u > F::ZERO && u < F::ONE) {
        Ok(())
    } else {
        Err(Error::InvalidNoise)
    }
}
