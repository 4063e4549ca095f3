//! The scalar functions the losses and attention need around the softmax skeleton — `log1p`,
//! `expm1`, `tanh` and the logit soft-cap, the logistic `sigmoid`, `softplus` and `log_sigmoid`
//! — written once here on a backend's `exp` and `ln`, in forms that do not cancel, overflow or
//! lose relative precision anywhere on the real line.
//!
//! Accuracy (f32 and f64 with [`Poly`](crate::backend::Poly) or [`Libm`](crate::backend::Libm),
//! measured by `harness/tests/special.rs` against f64/mpmath-grade references on dense sweeps):
//! `log1p`, `expm1`, `sigmoid`, `softplus`, `log_sigmoid` within 3 ULP, `tanh` and `softcap`
//! within 4 ULP (relative, plus one ULP of the output's magnitude where it is near 0). With
//! [`MicroMath`](crate::backend) the backend's own error dominates (about 3e-3 relative).
//!
//! # Examples
//!
//! ```
//! use softmax_core::{special, backend::Poly};
//! assert_eq!(special::softplus(Poly, 0.0f32), core::f32::consts::LN_2);
//! assert!((special::log_sigmoid(Poly, -100.0f64) + 100.0).abs() < 1e-13);
//! let capped = special::softcap(Poly, 100.0f32, 30.0); // 30·tanh(10/3)
//! assert!((capped - 30.0 * (100.0f32 / 30.0).tanh()).abs() < 1e-5);
//! ```

#![forbid(unsafe_code)]

use crate::backend::Backend;
use crate::float::Float;

/// `ln(1 + t)` for `t >= -1`, accurate also for tiny `t` (Goldberg: `ln(u)·t/(u − 1)` with
/// `u = fl(1 + t)`). `-inf` at `t = -1`, NaN below.
///
/// # Examples
///
/// ```
/// use softmax_core::{special::log1p, backend::Poly};
/// assert_eq!(log1p(Poly, 1e-30f64), 1e-30);
/// assert!((log1p(Poly, 1.0f32) - core::f32::consts::LN_2).abs() < 1e-7);
/// ```
#[inline]
pub fn log1p<F: Float, B: Backend<F>>(_backend: B, t: F) -> F {
    log1p_b::<F, B>(t)
}

#[inline(always)]
pub(crate) fn log1p_b<F: Float, B: Backend<F>>(t: F) -> F {
    let u = F::ONE + t;
    if u == F::ONE {
        t
    } else if u == F::INFINITY || u <= F::ZERO || u.is_nan() {
        B::ln(u)
    } else {
        B::ln(u) * (t / (u - F::ONE))
    }
}

/// `e^x − 1`, accurate also for tiny `x` (Kahan: `(u − 1)·x/ln(u)` with `u = fl(e^x)`).
///
/// # Examples
///
/// ```
/// use softmax_core::{special::expm1, backend::Poly};
/// assert_eq!(expm1(Poly, 1e-30f64), 1e-30);
/// assert_eq!(expm1(Poly, f32::NEG_INFINITY), -1.0);
/// ```
#[inline]
pub fn expm1<F: Float, B: Backend<F>>(_backend: B, x: F) -> F {
    expm1_b::<F, B>(x)
}

#[inline(always)]
pub(crate) fn expm1_b<F: Float, B: Backend<F>>(x: F) -> F {
    let u = B::exp(x);
    if u == F::ONE {
        x
    } else if u <= F::HALF || u >= F::TWO || u.is_nan() {
        // Away from 0 `u − 1` does not cancel (and Kahan's correction would divide by the log
        // of a rounded subnormal); this also covers 0, +inf and NaN.
        u - F::ONE
    } else {
        // Kahan: the rounding of u cancels between u − 1 and ln u.
        let l = B::ln(u);
        if l == F::ZERO {
            x
        } else {
            (u - F::ONE) * (x / l)
        }
    }
}

/// `tanh x`, as `expm1(2|x|)/(expm1(2|x|) + 2)` with the sign of `x` (no cancellation near 0, no
/// overflow: `±1` once `|x| > 22` in f32, `> 40` in f64).
///
/// # Examples
///
/// ```
/// use softmax_core::{special::tanh, backend::Poly};
/// assert_eq!(tanh(Poly, 0.0f32), 0.0);
/// assert_eq!(tanh(Poly, 1e3f64), 1.0);
/// assert!((tanh(Poly, 0.5f64) - 0.462_117_157_260_009_74).abs() < 1e-15);
/// ```
#[inline]
pub fn tanh<F: Float, B: Backend<F>>(_backend: B, x: F) -> F {
    tanh_b::<F, B>(x)
}

#[inline(always)]
pub(crate) fn tanh_b<F: Float, B: Backend<F>>(x: F) -> F {
    let a = x.abs();
    // Beyond this, 1 − tanh is below half an ulp of 1 (e^-44 < 2^-63 > f64's 2^-53 too).
    let big = F::from_f64(if F::EPSILON > F::from_f64(1e-10) {
        22.0
    } else {
        40.0
    });
    let t = if a > big {
        F::ONE
    } else {
        let e = expm1_b::<F, B>(a + a);
        e / (e + F::TWO)
    };
    if x < F::ZERO {
        -t
    } else if x.is_nan() {
        x
    } else {
        t
    }
}

/// The logit soft-cap of Gemma 2 and Grok: `c·tanh(z/c)` (`±inf` become `±c`), for a finite
/// `c > 0` (the caller checks it).
///
/// # Examples
///
/// ```
/// use softmax_core::{special::softcap, backend::Poly};
/// assert_eq!(softcap(Poly, f32::INFINITY, 30.0), 30.0);
/// assert!((softcap(Poly, 1.0f64, 30.0) - 30.0 * (1.0f64 / 30.0).tanh()).abs() < 1e-15);
/// ```
#[inline]
pub fn softcap<F: Float, B: Backend<F>>(_backend: B, z: F, c: F) -> F {
    softcap_b::<F, B>(z, c)
}

#[inline(always)]
pub(crate) fn softcap_b<F: Float, B: Backend<F>>(z: F, c: F) -> F {
    c * tanh_b::<F, B>(z / c)
}

/// The derivative of [`softcap`] with respect to `z`, from its value `y = c·tanh(z/c)`:
/// `1 − (y/c)²` (0 for infinite `z`).
///
/// # Examples
///
/// ```
/// use softmax_core::{special::{softcap, softcap_grad}, backend::Poly};
/// let y = softcap(Poly, 3.0f64, 30.0);
/// let d = softcap_grad(y, 30.0f64);
/// assert!((d - (1.0 - (0.1f64.tanh()).powi(2))).abs() < 1e-15);
/// ```
#[inline]
pub fn softcap_grad<F: Float>(y: F, c: F) -> F {
    let t = y / c;
    (F::ONE - t) * (F::ONE + t)
}

/// The derivative of [`softcap`] with respect to `z`, from `z` itself: `sech²(z/c)`, computed as
/// `4e/(1 + e)²` with `e = e^(−2|z/c|)`. Unlike [`softcap_grad`] (`1 − t²` from the rounded
/// capped value, which cancels where the cap saturates: `1 − t` loses `log2(1/(1 − |t|))` bits),
/// it keeps its relative precision for every `z`. 0 for infinite `z`, NaN for NaN.
///
/// Accuracy: within 4 ULP of `sech²` of the rounded `z/c` (f32, `Poly` and `Libm`: 3.7 ULP
/// at worst over `|z/c| <= 4`, `harness/tests/skeleton.rs`); the rounding of `z/c` itself moves
/// the result by up to `2·|z/c|·2⁻²⁴` relative in f32.
///
/// # Examples
///
/// ```
/// use softmax_core::{special::softcap_slope, backend::Poly};
/// let d = softcap_slope(Poly, 3.0f64, 30.0);
/// assert!((d - 1.0 / 0.1f64.cosh().powi(2)).abs() < 1e-15);
/// // Far into the saturation, still relative precision: sech²(20) ≈ 1.7e-17.
/// let far = softcap_slope(Poly, 600.0f64, 30.0);
/// assert!((far / (4.0 * (-40.0f64).exp()) - 1.0).abs() < 1e-14);
/// ```
#[inline]
pub fn softcap_slope<F: Float, B: Backend<F>>(_backend: B, z: F, c: F) -> F {
    let x = (z / c).abs();
    let e = B::exp(-(x + x));
    let d = F::ONE + e;
    let four = F::TWO + F::TWO;
    four * e / (d * d)
}

/// The logistic function `1/(1 + e^-z)`, evaluated as `e^z/(1 + e^z)` for `z < 0` (no
/// overflow, full relative precision in both tails).
///
/// # Examples
///
/// ```
/// use softmax_core::{special::sigmoid, backend::Poly};
/// assert_eq!(sigmoid(Poly, 0.0f32), 0.5);
/// assert!((sigmoid(Poly, -50.0f64) - (-50.0f64).exp()).abs() < 1e-35);
/// ```
#[inline]
pub fn sigmoid<F: Float, B: Backend<F>>(_backend: B, z: F) -> F {
    sigmoid_b::<F, B>(z)
}

#[inline(always)]
pub(crate) fn sigmoid_b<F: Float, B: Backend<F>>(z: F) -> F {
    let e = B::exp(-z.abs());
    let s = F::ONE / (F::ONE + e);
    if z < F::ZERO {
        e * s
    } else {
        s
    }
}

/// `softplus(z) = ln(1 + e^z)`, as `max(z, 0) + log1p(e^-|z|)`.
///
/// # Examples
///
/// ```
/// use softmax_core::{special::softplus, backend::Poly};
/// assert_eq!(softplus(Poly, 1e4f32), 1e4);
/// assert!((softplus(Poly, -40.0f64) - (-40.0f64).exp()).abs() < 1e-30);
/// ```
#[inline]
pub fn softplus<F: Float, B: Backend<F>>(_backend: B, z: F) -> F {
    softplus_b::<F, B>(z)
}

#[inline(always)]
pub(crate) fn softplus_b<F: Float, B: Backend<F>>(z: F) -> F {
    let l = log1p_b::<F, B>(B::exp(-z.abs()));
    if z > F::ZERO {
        z + l
    } else if z.is_nan() {
        z
    } else {
        l
    }
}

/// `ln σ(z) = −softplus(−z)`, the log-likelihood term of the binary losses.
///
/// # Examples
///
/// ```
/// use softmax_core::{special::log_sigmoid, backend::Poly};
/// assert_eq!(log_sigmoid(Poly, -1e4f32), -1e4);
/// assert!((log_sigmoid(Poly, 0.0f64) + core::f64::consts::LN_2).abs() < 1e-16);
/// ```
#[inline]
pub fn log_sigmoid<F: Float, B: Backend<F>>(_backend: B, z: F) -> F {
    -softplus_b::<F, B>(-z)
}
