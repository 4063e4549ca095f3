//! Exp/ln backends: how the kernels evaluate `e^x` and `ln x`.
//!
//! Every kernel takes its backend as a zero-sized value, e.g. `softmax(Poly, &x, &mut y)`, so the
//! choice is explicit, costs nothing at run time, and monomorphises into the inner loops.
//!
//! | backend | types | exp accuracy (measured by this crate's tests) | speed |
//! |---|---|---|---|
//! | [`Poly`] | f32, f64 | f32: <= 1 ULP from the correctly rounded result over every input with a normal result (real-valued max 0.83 ULP, exhaustive); f64: <= 1 ULP | branch-free, auto-vectorises |
//! | [`Libm`] (feature `libm`, default) | f32, f64 | the `libm` crate (musl): < 1 ULP | scalar, branchy |
//! | `MicroMath` (feature `micromath`) | f32 | `micromath`: 2.4e-3 relative (measured) | scalar, short |
//!
//! The ln columns and exact figures are in each backend's documentation.

#![forbid(unsafe_code)]

mod poly;
pub use poly::Poly;
/// The constants of `Poly`'s f32 ln, for the x86_64 fast kernel's copy of it on eight lanes.
#[cfg(softmax_dispatch)]
pub(crate) use poly::{LN2_HI_F32, LN2_LO_F32, LN_R_F32, SQRT_HALF_BITS_F32};

#[cfg(feature = "libm")]
mod libm_backend;
#[cfg(feature = "libm")]
pub use libm_backend::Libm;

#[cfg(feature = "micromath")]
mod micromath_backend;
#[cfg(feature = "micromath")]
pub use micromath_backend::MicroMath;

use crate::float::Float;

/// A source of `exp` and `ln` for element type `F`.
///
/// Implementations must give IEEE-style special values: `exp(-inf) = 0`, `exp(+inf) = +inf`,
/// `exp(NaN) = NaN`, overflow to `+inf`, underflow to 0; `ln(0) = -inf`, `ln(+inf) = +inf`,
/// `ln(x < 0) = NaN`, `ln(NaN) = NaN`. The kernels rely on these instead of branching.
///
/// # Examples
///
/// ```
/// use softmax_core::backend::{Backend, Poly};
/// let e = <Poly as Backend<f32>>::exp(1.0);
/// assert!((e - core::f32::consts::E).abs() <= f32::EPSILON * 3.0);
/// assert_eq!(<Poly as Backend<f64>>::ln(1.0), 0.0);
/// ```
pub trait Backend<F: Float>: Copy + Default + core::fmt::Debug {
    /// Short human-readable name, used in tables and digests.
    const NAME: &'static str;

    /// `e^x`.
    fn exp(x: F) -> F;

    /// `e^(hi + lo)` for a shifted logit: `hi + lo = x − max` exactly, so `hi <= 0` and `lo` is
    /// a tail of at most an ulp or so of `hi`. This is the exp every kernel calls; backends can
    /// specialise it (no overflow is possible, the tail can be folded into the argument
    /// reduction).
    ///
    /// When `hi = -inf` the result is 0 whatever `lo` is (NaN included); `hi = NaN` gives NaN.
    /// For `hi > 0` the result is unspecified (finite or not, but never a panic): call
    /// [`exp`](Self::exp) there.
    ///
    /// The default multiplies the tail in to first order, `e + e·lo`, which is exact to rounding
    /// because `lo` is tiny.
    #[inline(always)]
    fn exp_shifted(hi: F, lo: F) -> F {
        let e = Self::exp(hi);
        // e·(1 + lo) without forming 1 + lo; e = 0 stays 0 (no 0·NaN), e = +inf stays +inf.
        crate::float::select(e == F::ZERO || e == F::INFINITY, e, e + e * lo)
    }

    /// `e^(hi + lo) · 2^s`: the exp of every hot loop. `hi + lo = x − max` exactly (as for
    /// [`exp_shifted`](Self::exp_shifted)), and the kernels pass `s = 60`, so the maximum's term
    /// is exactly `2^60` and every term that can matter is a normal number: the scale is applied
    /// by an integer add to the exponent field, and a sum of up to 2^64 terms cannot overflow.
    ///
    /// * A result below `2^-92` (f32; `2^-1016` in f64) may be returned as 0, and is returned
    ///   as 0 below half of that: relative to a sum of at least `2^59` such a term lies below
    ///   half the smallest subnormal of any normalised output.
    /// * Every other result is a normal number, accurate as [`exp_shifted`](Self::exp_shifted)
    ///   (for [`Poly`]: <= 1 ULP), with the `2^s` applied exactly.
    /// * `hi = -inf` gives 0 whatever `lo` is; NaN gives NaN. `hi` may be positive as long as
    ///   the result stays at most `2^64` (the online pass of long rows uses `hi <= 2.5` with
    ///   `s = 60`); above that the result is unspecified (never a panic).
    ///
    /// The default reduces `hi = n·ln2 + r` (Cody–Waite, `n·ln2_hi` exact), takes
    /// [`exp`](Self::exp) of the small `r` with `lo` and `n·ln2_lo` folded in, and scales by
    /// `2^(n+s)`.
    ///
    /// # Examples
    ///
    /// ```
    /// use softmax_core::backend::{Backend, Libm, Poly};
    /// let e = <Poly as Backend<f32>>::exp_pow2(-100.0, 0.0, 60);
    /// assert!(((e as f64) - (-100f64).exp() * 2f64.powi(60)).abs() <= (e as f64) * 1.2e-7);
    /// assert_eq!(<Libm as Backend<f64>>::exp_pow2(0.0, 0.0, 60), 2f64.powi(60));
    /// assert_eq!(<Poly as Backend<f32>>::exp_pow2(-200.0, 0.0, 60), 0.0);
    /// assert_eq!(<Poly as Backend<f32>>::exp_pow2(f32::NEG_INFINITY, f32::NAN, 60), 0.0);
    /// ```
    #[inline(always)]
    fn exp_pow2(hi: F, lo: F, s: i32) -> F {
        let nf = (hi * F::LOG2E + F::MAGIC) - F::MAGIC;
        let k = nf.to_i32().saturating_add(s);
        if k < F::TINY {
            return F::ZERO;
        }
        // Above the documented domain the scale is clamped (the result is unspecified there).
        let k = if k > F::TOP + 8 { F::TOP + 8 } else { k };
        let rh = hi - nf * F::LN2_HI; // exact: |n| is small and n·LN2_HI has few bits
                                      // r = rh + (lo − n·ln2_lo) rounded, and its rounding error (the second-order term of
                                      // e^rh·(1 + rl) would not be negligible: n·ln2_lo reaches 2e-4 in f32).
        let (r, re) = crate::float::two_sum(rh, lo - nf * F::LN2_LO);
        let e = Self::exp(r);
        (e + e * re) * F::pow2(k)
    }

    /// [`exp_pow2`](Self::exp_pow2) of `W` values: the same result bits value by value. Backends
    /// may evaluate the values side by side (step by step across the chunk), which gives an
    /// out-of-order core several independent dependency chains; the default maps `exp_pow2`.
    ///
    /// # Examples
    ///
    /// ```
    /// use softmax_core::backend::{Backend, Poly};
    /// let hi = [-1.0f32, -2.0, -3.0, 0.0];
    /// let e = <Poly as Backend<f32>>::exp_pow2_chunk(&hi, &[0.0; 4], 0);
    /// for (e, &h) in e.iter().zip(&hi) {
    ///     assert_eq!(*e, <Poly as Backend<f32>>::exp_pow2(h, 0.0, 0));
    /// }
    /// ```
    #[inline(always)]
    fn exp_pow2_chunk<const W: usize>(hi: &[F; W], lo: &[F; W], s: i32) -> [F; W] {
        core::array::from_fn(
            #[inline(always)]
            |i| Self::exp_pow2(hi[i], lo[i], s),
        )
    }

    /// `ln x`.
    fn ln(x: F) -> F;
}
