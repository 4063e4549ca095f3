//! Reduced-precision storage of f32 rows: IEEE binary16 ([`f16`](struct@f16)), bfloat16 ([`bf16`]) and
//! int8 with one f32 scale per row (`i8`), with exact, documented rounding, and the read-back
//! that the products of [`linalg::within`](crate::linalg::within) apply in registers while they
//! compute (no dequantized copy is ever made).
//!
//! The element types the products read are the [`Operand`]s: a float type itself (`f32`,
//! `f64`: read as they are) and the three [`Stored`] formats (read as f32). A stored row is
//! its elements plus, for int8, its scale; [`Operand::load`] defines the value an element
//! stands for, and every product over stored rows computes exactly what the f32 product
//! computes over those values, bit for bit.
//!
//! # The formats (the semantics of `kv_dtype` in the conformance protocol)
//!
//! * [`f16`](struct@f16), [`bf16`]: each value rounded to nearest, ties to even (the `half` crate's
//!   conversions); read back exactly. A row holding NaN or ±inf, or a finite value that would
//!   round to ±inf (|x| ≥ 65520 for f16, |x| ≥ 2¹²⁸ − 2¹¹⁹ ≈ 3.3961775e38 for bf16), cannot be
//!   stored: [`Error::NotStorable`].
//! * `i8`: per row, `amax = max |x_i|`, scale `s = amax / 127` (one f32 division; `s = 0` when
//!   `amax = 0`), `q_i = round(x_i / s)` (the division in f32, round half away from zero),
//!   clamped to `[−127, 127]` (`q_i = 0` when `s = 0`); read back as `q_i · s` (one f32
//!   product). A row holding NaN or ±inf cannot be stored.
//!
//! Rounding error of a stored value against the value pushed (finite rows):
//!
//! * f16 (11 significant bits): within `2⁻¹¹·|x|` for `|x| ≥ 2⁻¹⁴`, `2⁻²⁵` absolute below
//!   (its subnormals);
//! * bf16 (8 significant bits): within `2⁻⁸·|x|` (f32 subnormals stay bf16 subnormals:
//!   `2⁻¹³⁴` absolute);
//! * int8: within `s/2·(1 + 2⁻²²) + 2⁻²³·|x|` of `x`, with `s = amax/127`: half a step of the
//!   row's grid, i.e. `amax/254` relative to the row's largest value (for rows with
//!   `amax ≥ 2⁻¹¹⁹`, where `s` is a normal number, and `amax < f32::MAX`: a row holding ±`f32::MAX`
//!   itself is stored, as the protocol says, but reads back as ±inf there, since
//!   `127·fl(MAX/127)` rounds past `MAX`).
//!
//! # Examples
//!
//! ```
//! use softmax_core::stored::{Operand, Stored};
//! let row = [0.5f32, -1.0, 0.25, 0.0];
//! let mut q = [0i8; 4];
//! let s = i8::store_row(&row, &mut q)?;
//! assert_eq!((q, s), ([64, -127, 32, 0], 1.0 / 127.0));
//! assert_eq!(q[1].load(s), -1.0);
//! let mut h = [softmax_core::stored::f16::ZERO; 4];
//! softmax_core::stored::f16::store_row(&row, &mut h)?;
//! assert_eq!(h[0].load(()), 0.5);
//! # Ok::<(), softmax_core::Error>(())
//! ```

#![forbid(unsafe_code)]

use crate::error::Error;

pub use crate::linalg::Operand;
pub use half::{bf16, f16};

/// A reduced-precision format an f32 row can be stored in: [`f16`](struct@f16), [`bf16`] or `i8` (with a
/// per-row scale). See the [module](self) docs for the exact rounding of each.
///
/// # Examples
///
/// ```
/// use softmax_core::stored::{bf16, Stored};
/// let mut out = [bf16::ZERO; 2];
/// bf16::store_row(&[1.0, 3.0e-3], &mut out)?;
/// assert_eq!(out[1].to_f32(), 0.0030059814); // 8 significant bits
/// assert!(bf16::store_row(&[f32::NAN, 0.0], &mut out).is_err());
/// assert_eq!(<i8 as Stored>::NAME, "int8");
/// # Ok::<(), softmax_core::Error>(())
/// ```
pub trait Stored: Operand<f32> {
    /// The format's name in the conformance protocol's `kv_dtype`: `"f16"`, `"bf16"`, `"int8"`.
    const NAME: &'static str;

    /// Whether `x` can be stored: [`Error::NotStorable`] for a row with NaN or ±inf, or a
    /// value the format would round to ±inf.
    ///
    /// # Errors
    ///
    /// [`Error::NotStorable`].
    ///
    /// # Examples
    ///
    /// ```
    /// use softmax_core::stored::{f16, Stored};
    /// assert!(f16::check_row(&[65504.0]).is_ok());
    /// assert!(f16::check_row(&[65520.0]).is_err()); // rounds to +inf in f16
    /// assert!(<i8 as Stored>::check_row(&[1e38, -3e38]).is_ok());
    /// ```
    fn check_row(x: &[f32]) -> Result<(), Error>;

    /// Stores the row `x` into `out` (of the same length) and returns its scale (`()` for the
    /// float formats). Nothing is written when it fails.
    ///
    /// # Errors
    ///
    /// [`Error::LengthMismatch`] if `out` is not as long as `x`; [`Error::NotStorable`] as
    /// [`check_row`](Self::check_row).
    ///
    /// # Examples
    ///
    /// ```
    /// use softmax_core::stored::Stored;
    /// let mut q = [0i8; 3];
    /// let s = i8::store_row(&[2.0, -1.0, 0.01], &mut q)?;
    /// assert_eq!(q, [127, -64, 1]); // -63.5 rounds away from zero; s = 2/127
    /// assert_eq!(s, 2.0 / 127.0);
    /// # Ok::<(), softmax_core::Error>(())
    /// ```
    fn store_row(x: &[f32], out: &mut [Self]) -> Result<Self::Scale, Error> {
        crate::error::check_len(x.len(), out.len())?;
        Self::check_row(x)?;
        Ok(Self::write_row(x, out))
    }

    /// Stores a row already checked by [`check_row`](Self::check_row). A row it would reject
    /// is stored as the conversions give it: ±inf or NaN in f16 and bf16; in int8 a NaN gives
    /// `q = 0` and an infinity makes the scale infinite and every `q` 0.
    /// Writes `min(x.len(), out.len())` values.
    ///
    /// # Examples
    ///
    /// ```
    /// use softmax_core::stored::{f16, Stored};
    /// let mut h = [f16::ZERO; 2];
    /// f16::write_row(&[1.0, 1.0 + 1.0 / 4096.0], &mut h);
    /// assert_eq!(h[1].to_f32(), 1.0); // the tie goes to even
    /// ```
    fn write_row(x: &[f32], out: &mut [Self]) -> Self::Scale;
}

/// Whether every value of `x` is finite and `ok` accepts it.
#[inline]
fn all_storable(x: &[f32], ok: impl Fn(f32) -> bool) -> Result<(), Error> {
    if x.iter().all(|&v| v.is_finite() && ok(v)) {
        Ok(())
    } else {
        Err(Error::NotStorable)
    }
}

impl Stored for f16 {
    const NAME: &'static str = "f16";
    fn check_row(x: &[f32]) -> Result<(), Error> {
        all_storable(x, |v| f16::from_f32(v).is_finite())
    }
    fn write_row(x: &[f32], out: &mut [f16]) {
        for (o, &v) in out.iter_mut().zip(x) {
            *o = f16::from_f32(v);
        }
    }
}

impl Stored for bf16 {
    const NAME: &'static str = "bf16";
    fn check_row(x: &[f32]) -> Result<(), Error> {
        all_storable(x, |v| bf16::from_f32(v).is_finite())
    }
    fn write_row(x: &[f32], out: &mut [bf16]) {
        for (o, &v) in out.iter_mut().zip(x) {
            *o = bf16::from_f32(v);
        }
    }
}

impl Stored for i8 {
    const NAME: &'static str = "int8";
    fn check_row(x: &[f32]) -> Result<(), Error> {
        all_storable(x, |_| true)
    }
    fn write_row(x: &[f32], out: &mut [i8]) -> f32 {
        let amax = x.iter().fold(0.0f32, |m, &v| m.max(v.abs()));
        let s = amax / 127.0;
        for (o, &v) in out.iter_mut().zip(x) {
            *o = if s == 0.0 { 0 } else { round_i8(v / s) };
        }
        s
    }
}

/// `y` rounded half away from zero and clamped to `[−127, 127]` (NaN gives 0). The fraction
/// `|y| − trunc|y|` is exact below 2²³, so the comparison with one half is exact (adding 0.5
/// first would round `0.49999997 + 0.5` up to 1).
#[inline(always)]
fn round_i8(y: f32) -> i8 {
    let a = if y.is_nan() { 0.0 } else { y.abs().min(127.0) };
    let t = a as i32; // truncation
    let r = if a - t as f32 >= 0.5 { t + 1 } else { t };
    let r = r.min(127) as i8;
    if y < 0.0 {
        -r
    } else {
        r
    }
}

/// Bytes of one stored row of `n` values, its scale included.
///
/// # Examples
///
/// ```
/// use softmax_core::stored::{f16, row_bytes};
/// assert_eq!(row_bytes::<i8>(64), 68);
/// assert_eq!(row_bytes::<f16>(64), 128);
/// ```
pub const fn row_bytes<E: Stored>(n: usize) -> usize {
    // Saturating: no input panics (a row that large cannot exist anyway).
    n.saturating_mul(core::mem::size_of::<E>())
        .saturating_add(core::mem::size_of::<E::Scale>())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_i8_is_half_away_from_zero() {
        let cases = [
            (0.49999997f32, 0i8),
            (0.5, 1),
            (-0.5, -1),
            (1.5, 2),
            (2.5, 3),
            (-2.5, -3),
            (126.5, 127),
            (127.4, 127),
            (300.0, 127),
            (-300.0, -127),
            (f32::NAN, 0),
        ];
        for (y, q) in cases {
            assert_eq!(round_i8(y), q, "{y}");
        }
    }

    #[test]
    fn int8_rows_read_back_within_half_a_step() {
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut q = [0i8; 37];
        for _ in 0..2000 {
            let x: [f32; 37] = core::array::from_fn(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                ((state >> 40) as f32 / (1u64 << 24) as f32 - 0.5) * 8.0
            });
            let s = i8::store_row(&x, &mut q).unwrap();
            let amax = x.iter().fold(0.0f32, |m, v| m.max(v.abs()));
            assert_eq!(s, amax / 127.0);
            for (&v, &qi) in x.iter().zip(&q) {
                let err = (f64::from(qi.load(s)) - f64::from(v)).abs();
                let bound = f64::from(s) / 2.0 * (1.0 + 2f64.powi(-22))
                    + 2f64.powi(-23) * f64::from(v.abs());
                assert!(err <= bound, "{v} {qi} {s}");
            }
        }
    }

    #[test]
    fn zero_and_non_finite_rows() {
        let mut q = [5i8; 3];
        assert_eq!(i8::store_row(&[0.0, -0.0, 0.0], &mut q), Ok(0.0));
        assert_eq!(q, [0, 0, 0]);
        let mut q = [5i8; 2];
        assert_eq!(
            i8::store_row(&[1.0, f32::INFINITY], &mut q),
            Err(Error::NotStorable)
        );
        assert_eq!(q, [5, 5]);
        let mut h = [bf16::ZERO; 1];
        assert_eq!(bf16::store_row(&[3.4e38], &mut h), Err(Error::NotStorable));
        assert_eq!(bf16::store_row(&[3.3e38], &mut h), Ok(()));
    }
}
