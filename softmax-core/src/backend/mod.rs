//! Exp/ln backends: how the kernels evaluate `e^x` and `ln x`.
//!
//! Every kernel takes its backend as a zero-sized value, e.g. `softmax(Poly, &x, &mut y)`, so the
//! choice is explicit, costs nothing at run time, and monomorphises into the inner loops.
//!
//! | backend | types | exp accuracy (measured by this crate's tests) | speed |
//! |---|---|---|---|
//! | [`Poly`] | f32, f64 | f32: <= 1 ULP from the correctly rounded result over every input with a normal result (real-valued max 0.83 ULP, exhaustive); f64: <= 1 ULP | branch-free, auto-vectorises |
//! | [`Libm`] (feature `libm`, default) | f32, f64 | the `libm` crate (musl): < 1 ULP | scalar, branchy |
//! | [`MicroMath`] (feature `micromath`) | f32 | `micromath`: 2.4e-3 relative (measured) | scalar, short |
//!
//! The ln columns and exact figures are in each backend's documentation.

mod poly;
pub use poly::Poly;

#[cfg(feature = "libm")]
mod libm_backend;
#[cfg(feature = "libm")]
pub use libm_backend::Libm;

#[cfg(feature = "micromath")]
mod micromath_backend;
#[cfg(feature = "micromath")]
pub use micromath_backend::MicroMath;

use crate::Float;

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

    /// `ln x`.
    fn ln(x: F) -> F;
}
