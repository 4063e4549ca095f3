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

use core::fmt::Debug;

use crate::error::Error;
use crate::float::Float;

pub use half::{bf16, f16};

pub(crate) mod sealed {
    /// Seals [`Operand`](super::Operand): the operands are the float types and the three
    /// formats of this module.
    pub trait Sealed<F> {}
    impl<F: crate::Float> Sealed<F> for F {}
    impl Sealed<f32> for super::f16 {}
    impl Sealed<f32> for super::bf16 {}
    impl Sealed<f32> for i8 {}
}

/// An element type the products of [`linalg::within`](crate::linalg::within) read as `F`: a
/// float type itself (`F = Self`, scale `()`), or a reduced-precision [`Stored`] format read
/// as f32. Sealed: these are the operands there are.
///
/// # Examples
///
/// ```
/// use softmax_core::stored::{bf16, Operand};
/// assert_eq!(2.5f64.load(()), 2.5);
/// assert_eq!(bf16::from_f32(1.5).load(()), 1.5f32);
/// assert_eq!(3i8.load(0.5), 1.5f32);
/// ```
pub trait Operand<F: Float>:
    sealed::Sealed<F> + Copy + Default + Debug + Send + Sync + 'static
{
    /// What a row stores besides its elements: `()`, or the f32 scale of an int8 row.
    type Scale: Copy + Default + Debug + PartialEq + Send + Sync + 'static;

    /// The value the element stands for, given its row's scale: itself for a float, the
    /// exact conversion to f32 for f16 and bf16, `q·s` (one f32 product) for int8.
    ///
    /// # Examples
    ///
    /// ```
    /// use softmax_core::stored::Operand;
    /// assert_eq!((-127i8).load(0.25), -31.75f32);
    /// ```
    fn load(self, scale: Self::Scale) -> F;

    /// Crate-internal: `C = A·Bᵀ` with an architecture copy of the product, if there is one
    /// for this element type and the CPU runs it (`false`: nothing done). Same bits as the
    /// portable loop.
    #[doc(hidden)]
    #[inline(always)]
    fn nt_fast(_a: &[F], _b: &[Self], _s: &[Self::Scale], _k: usize, _c: &mut [F]) -> bool {
        false
    }

    /// Crate-internal: `C (+)= A·B` likewise.
    #[doc(hidden)]
    #[inline(always)]
    fn nn_fast(
        _a: &[F],
        _b: &[Self],
        _s: &[Self::Scale],
        _nk: (usize, usize),
        _c: &mut [F],
        _accumulate: bool,
    ) -> bool {
        false
    }
}

impl<F: Float> Operand<F> for F {
    type Scale = ();
    #[inline(always)]
    fn load(self, _: ()) -> F {
        self
    }
    #[inline(always)]
    fn nt_fast(a: &[F], b: &[F], _s: &[()], k: usize, c: &mut [F]) -> bool {
        crate::linalg::fast_nt(a, b, k, c)
    }
    #[inline(always)]
    fn nn_fast(a: &[F], b: &[F], _s: &[()], nk: (usize, usize), c: &mut [F], acc: bool) -> bool {
        crate::linalg::fast_nn(a, b, nk, c, acc)
    }
}

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

impl Operand<f32> for f16 {
    type Scale = ();
    /// Exact for every f16: normal values by re-biasing the exponent, subnormals as
    /// `(2⁻¹⁴ + m·2⁻²⁴) − 2⁻¹⁴` (an exact subtraction of normal numbers: no subnormal f32
    /// arithmetic, which x86 cores execute slowly), ±inf as ±inf, a NaN as a quiet NaN with
    /// its payload (what F16C's conversion gives on x86_64: the same bits at every level).
    #[inline(always)]
    fn load(self, _: ()) -> f32 {
        f16_bits_to_f32(self.to_bits())
    }
    #[inline(always)]
    fn nt_fast(a: &[f32], b: &[f16], _s: &[()], k: usize, c: &mut [f32]) -> bool {
        crate::linalg::fast_nt_stored(a, b, &[], k, c)
    }
    #[inline(always)]
    fn nn_fast(
        a: &[f32],
        b: &[f16],
        _s: &[()],
        nk: (usize, usize),
        c: &mut [f32],
        acc: bool,
    ) -> bool {
        crate::linalg::fast_nn_stored(a, b, &[], nk, c, acc)
    }
}

/// The f32 value of the f16 with bits `h` (see [`f16`](struct@f16)'s `load`): IEEE's exact
/// conversion, ±inf for the infinities and a quiet NaN with the payload kept for a NaN (as
/// F16C's `vcvtph2ps` and `half`'s `to_f32` give).
#[inline(always)]
pub(crate) fn f16_bits_to_f32(h: u16) -> f32 {
    let h = h as u32;
    let sign = (h & 0x8000) << 16;
    let o = (h & 0x7fff) << 13;
    let normal = o + (112 << 23);
    // A subnormal (exponent field 0): 2⁻¹⁴ + m·2⁻²⁴, less 2⁻¹⁴.
    let sub = f32::from_bits(o + (113 << 23)) - f32::from_bits(113 << 23);
    // Exponent field 31: infinity, or a NaN made quiet.
    let special = 0x7f80_0000 | o | if o & 0x007f_e000 != 0 { 0x0040_0000 } else { 0 };
    let mag = match o & 0x0f80_0000 {
        0 => sub.to_bits(),
        0x0f80_0000 => special,
        _ => normal,
    };
    f32::from_bits(mag | sign)
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

impl Operand<f32> for bf16 {
    type Scale = ();
    /// Exact: the bfloat16 bits are the top half of the f32's.
    #[inline(always)]
    fn load(self, _: ()) -> f32 {
        f32::from_bits((self.to_bits() as u32) << 16)
    }
    #[inline(always)]
    fn nt_fast(a: &[f32], b: &[bf16], _s: &[()], k: usize, c: &mut [f32]) -> bool {
        crate::linalg::fast_nt_stored(a, b, &[], k, c)
    }
    #[inline(always)]
    fn nn_fast(
        a: &[f32],
        b: &[bf16],
        _s: &[()],
        nk: (usize, usize),
        c: &mut [f32],
        acc: bool,
    ) -> bool {
        crate::linalg::fast_nn_stored(a, b, &[], nk, c, acc)
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

impl Operand<f32> for i8 {
    type Scale = f32;
    #[inline(always)]
    fn load(self, scale: f32) -> f32 {
        self as f32 * scale
    }
    #[inline(always)]
    fn nt_fast(a: &[f32], b: &[i8], s: &[f32], k: usize, c: &mut [f32]) -> bool {
        crate::linalg::fast_nt_stored(a, b, s, k, c)
    }
    #[inline(always)]
    fn nn_fast(
        a: &[f32],
        b: &[i8],
        s: &[f32],
        nk: (usize, usize),
        c: &mut [f32],
        acc: bool,
    ) -> bool {
        crate::linalg::fast_nn_stored(a, b, s, nk, c, acc)
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
    fn f16_read_matches_half_for_every_pattern() {
        // `half`'s software conversion (this test build has no F16C target feature): exact,
        // infinities kept, NaNs made quiet with their payload.
        for h in 0..=u16::MAX {
            let x = f16::from_bits(h);
            assert_eq!(x.load(()).to_bits(), x.to_f32().to_bits(), "{h:#06x}");
        }
    }

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
