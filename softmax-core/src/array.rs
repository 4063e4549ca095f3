//! Fixed-size wrappers: lengths are compile-time constants, so the length errors of the slice
//! API cannot happen and these functions return values directly (a zero length is rejected at
//! compile time). They call the same row kernels as the slice functions.

#![forbid(unsafe_code)]

use crate::backend::Backend;
use crate::error::{check_noise, check_temperature, Error};
use crate::float::Float;
use crate::kernel::with_scale;
use crate::kernel::{Bias, InPlace, Keep, OutOfPlace, Plain, Unit};
use crate::{op, simd};

/// Compile-time guard: a row must have at least one entry.
struct NonEmpty<const N: usize>;
impl<const N: usize> NonEmpty<N> {
    const OK: () = assert!(N > 0, "softmax-core: fixed-size rows must have N > 0");
}

/// softmax of a fixed-size row. Semantics and accuracy as [`softmax`](crate::softmax).
///
/// # Examples
///
/// ```
/// use softmax_core::{array, backend::Poly};
/// let y = array::softmax(Poly, &[1.0f32, 2.0, 3.0]);
/// assert!((y[2] - 0.665_240_94).abs() < 1e-7);
/// ```
pub fn softmax<F: Float, B: Backend<F>, const N: usize>(_backend: B, x: &[F; N]) -> [F; N] {
    let () = NonEmpty::<N>::OK;
    let mut y = [F::ZERO; N];
    simd::exec(
        #[inline(always)]
        || {
            op::softmax::<F, B, _>(
                OutOfPlace {
                    src: Plain(x),
                    out: &mut y,
                },
                Unit,
            )
        },
    );
    y
}

/// softmax of a fixed-size row at temperature τ. Semantics and accuracy as
/// [`softmax_with_temperature`](crate::softmax_with_temperature).
///
/// # Errors
///
/// [`Error::InvalidTemperature`] unless τ > 0 and finite.
///
/// # Examples
///
/// ```
/// use softmax_core::{array, backend::Poly};
/// let y = array::softmax_with_temperature(Poly, &[1.0f64, 2.0, 3.0], 0.1).unwrap();
/// assert!((y[2] - 0.999_954_6).abs() < 1e-7);
/// ```
pub fn softmax_with_temperature<F: Float, B: Backend<F>, const N: usize>(
    _backend: B,
    x: &[F; N],
    temperature: F,
) -> Result<[F; N], Error> {
    let () = NonEmpty::<N>::OK;
    check_temperature(temperature)?;
    let mut y = [F::ZERO; N];
    with_scale!(temperature, |s| op::softmax::<F, B, _>(
        OutOfPlace {
            src: Plain(x),
            out: &mut y
        },
        s
    ));
    Ok(y)
}

/// log_softmax of a fixed-size row. Semantics as [`log_softmax`](crate::log_softmax).
///
/// # Examples
///
/// ```
/// use softmax_core::{array, backend::Poly};
/// let y = array::log_softmax(Poly, &[0.0f64; 4]);
/// assert!((y[0] + 4f64.ln()).abs() < 1e-15);
/// ```
pub fn log_softmax<F: Float, B: Backend<F>, const N: usize>(_backend: B, x: &[F; N]) -> [F; N] {
    let () = NonEmpty::<N>::OK;
    let mut y = [F::ZERO; N];
    simd::exec(
        #[inline(always)]
        || {
            op::log_softmax::<F, B, _, _>(
                OutOfPlace {
                    src: Plain(x),
                    out: &mut y,
                },
                Unit,
            )
        },
    );
    y
}

/// logsumexp of a fixed-size row. Semantics as [`logsumexp`](crate::logsumexp).
///
/// # Examples
///
/// ```
/// use softmax_core::{array, backend::Poly};
/// assert_eq!(array::logsumexp(Poly, &[2.0f32]), 2.0);
/// ```
pub fn logsumexp<F: Float, B: Backend<F>, const N: usize>(_backend: B, x: &[F; N]) -> F {
    let () = NonEmpty::<N>::OK;
    simd::exec(
        #[inline(always)]
        || op::logsumexp::<F, B, _, _>(Plain(x), Unit),
    )
}

/// Entropy (nats) of softmax(x/τ) of a fixed-size row. As [`entropy`](crate::entropy).
///
/// # Errors
///
/// [`Error::InvalidTemperature`] unless τ > 0 and finite.
///
/// # Examples
///
/// ```
/// use softmax_core::{array, backend::Poly};
/// let h = array::entropy(Poly, &[1.0f64, 2.0, 3.0], 2.0).unwrap();
/// assert!((h - 1.020_191).abs() < 1e-6);
/// ```
pub fn entropy<F: Float, B: Backend<F>, const N: usize>(
    _backend: B,
    x: &[F; N],
    temperature: F,
) -> Result<F, Error> {
    let () = NonEmpty::<N>::OK;
    check_temperature(temperature)?;
    Ok(with_scale!(temperature, |s| op::entropy::<F, B, _, _>(
        Plain(x),
        s
    )))
}

/// sparsemax of a fixed-size row. As [`sparsemax`](crate::sparsemax).
///
/// # Examples
///
/// ```
/// use softmax_core::array;
/// assert_eq!(array::sparsemax(&[0.0f32, 0.0]), [0.5, 0.5]);
/// ```
pub fn sparsemax<F: Float, const N: usize>(x: &[F; N]) -> [F; N] {
    let () = NonEmpty::<N>::OK;
    let mut y = [F::ZERO; N];
    simd::exec(
        #[inline(always)]
        || {
            op::sparsemax(
                OutOfPlace {
                    src: Plain(x),
                    out: &mut y,
                },
                Unit,
            )
        },
    );
    y
}

/// argmax of a fixed-size row (first maximum; NaN counts as largest).
///
/// # Examples
///
/// ```
/// use softmax_core::array;
/// assert_eq!(array::argmax(&[0.0f32, 2.0, 1.0]), 1);
/// ```
pub fn argmax<F: Float, const N: usize>(x: &[F; N]) -> usize {
    let () = NonEmpty::<N>::OK;
    op::argmax(x).unwrap_or(0)
}

/// Hard max (one-hot of argmax) of a fixed-size row. As [`hardmax`](crate::hardmax).
///
/// # Examples
///
/// ```
/// use softmax_core::array;
/// assert_eq!(array::hardmax(&[0.0f64, 2.0, 1.0]), [0.0, 1.0, 0.0]);
/// ```
pub fn hardmax<F: Float, const N: usize>(x: &[F; N]) -> [F; N] {
    let () = NonEmpty::<N>::OK;
    let mut y = [F::ZERO; N];
    op::hardmax_row(x, &mut y);
    y
}

/// softmax VJP of a fixed-size row from its output and the upstream gradient.
/// As [`softmax_vjp`](crate::softmax_vjp).
///
/// # Examples
///
/// ```
/// use softmax_core::array;
/// assert_eq!(array::softmax_vjp(&[0.5f32, 0.5], &[1.0, 0.0]), [0.25, -0.25]);
/// ```
pub fn softmax_vjp<F: Float, const N: usize>(y: &[F; N], dy: &[F; N]) -> [F; N] {
    let () = NonEmpty::<N>::OK;
    let mut dx = [F::ZERO; N];
    simd::exec(
        #[inline(always)]
        || op::softmax_vjp(y, dy, &mut dx, F::ONE),
    );
    dx
}

/// log_softmax VJP of a fixed-size row from its output and the upstream gradient.
/// As [`log_softmax_vjp`](crate::log_softmax_vjp).
///
/// # Examples
///
/// ```
/// use softmax_core::{array, backend::Poly};
/// let y = [-core::f64::consts::LN_2; 2];
/// let dx = array::log_softmax_vjp(Poly, &y, &[0.0, 2.0]);
/// assert!((dx[0] + 1.0).abs() < 1e-15 && (dx[1] - 1.0).abs() < 1e-15);
/// ```
pub fn log_softmax_vjp<F: Float, B: Backend<F>, const N: usize>(
    _backend: B,
    y: &[F; N],
    dy: &[F; N],
) -> [F; N] {
    let () = NonEmpty::<N>::OK;
    let mut dx = [F::ZERO; N];
    simd::exec(
        #[inline(always)]
        || op::log_softmax_vjp::<F, B>(y, dy, &mut dx, F::ONE),
    );
    dx
}

/// softmax of a fixed-size row, overwriting it. As [`softmax_in_place`](crate::softmax_in_place).
///
/// # Examples
///
/// ```
/// use softmax_core::{array, backend::Poly};
/// let mut xy = [3.0f32, 3.0, f32::NEG_INFINITY, 3.0];
/// array::softmax_in_place(Poly, &mut xy);
/// assert_eq!(xy, [1.0 / 3.0, 1.0 / 3.0, 0.0, 1.0 / 3.0]);
/// ```
pub fn softmax_in_place<F: Float, B: Backend<F>, const N: usize>(_backend: B, xy: &mut [F; N]) {
    let () = NonEmpty::<N>::OK;
    simd::exec(
        #[inline(always)]
        || op::softmax::<F, B, _>(InPlace(xy), Unit),
    );
}

/// log_softmax of a fixed-size row, overwriting it. As
/// [`log_softmax_in_place`](crate::log_softmax_in_place).
///
/// # Examples
///
/// ```
/// use softmax_core::{array, backend::Poly};
/// let mut xy = [7.0f64, 7.0];
/// array::log_softmax_in_place(Poly, &mut xy);
/// assert_eq!(xy, [-core::f64::consts::LN_2; 2]);
/// ```
pub fn log_softmax_in_place<F: Float, B: Backend<F>, const N: usize>(_backend: B, xy: &mut [F; N]) {
    let () = NonEmpty::<N>::OK;
    simd::exec(
        #[inline(always)]
        || op::log_softmax::<F, B, _, _>(InPlace(xy), Unit),
    );
}

/// KL(softmax(p) ‖ softmax(q)) from the logits of two fixed-size rows. As
/// [`kl_divergence`](crate::kl_divergence).
///
/// # Examples
///
/// ```
/// use softmax_core::{array, backend::Poly};
/// let kl = array::kl_divergence(Poly, &[0.0f64, 3f64.ln()], &[0.0, 0.0]);
/// assert!((kl - (0.25 * 0.5f64.ln() + 0.75 * 1.5f64.ln())).abs() < 1e-15);
/// ```
pub fn kl_divergence<F: Float, B: Backend<F>, const N: usize>(
    _backend: B,
    p_logits: &[F; N],
    q_logits: &[F; N],
) -> F {
    let () = NonEmpty::<N>::OK;
    simd::exec(
        #[inline(always)]
        || op::kl::<F, B, _, _>(Plain(p_logits), Plain(q_logits), Unit),
    )
}

/// softmax of a fixed-size row with a boolean keep-mask. As
/// [`masked_softmax`](crate::masked_softmax).
///
/// # Examples
///
/// ```
/// use softmax_core::{array, backend::Poly};
/// let y = array::masked_softmax(Poly, &[1.0f32, f32::NAN, 1.0], &[true, false, true]);
/// assert_eq!(y, [0.5, 0.0, 0.5]);
/// ```
pub fn masked_softmax<F: Float, B: Backend<F>, const N: usize>(
    _backend: B,
    x: &[F; N],
    keep: &[bool; N],
) -> [F; N] {
    let () = NonEmpty::<N>::OK;
    let mut y = [F::ZERO; N];
    simd::exec(
        #[inline(always)]
        || {
            op::softmax::<F, B, _>(
                OutOfPlace {
                    src: Keep(x, keep),
                    out: &mut y,
                },
                Unit,
            )
        },
    );
    y
}

/// softmax of a fixed-size row plus an additive mask, `softmax(x + bias)`. As
/// [`softmax_with_bias`](crate::softmax_with_bias).
///
/// # Examples
///
/// ```
/// use softmax_core::{array, backend::Poly};
/// let y = array::softmax_with_bias(Poly, &[5.0f64, 5.0, 5.0], &[0.0, f64::NEG_INFINITY, 0.0]);
/// assert_eq!(y, [0.5, 0.0, 0.5]);
/// ```
pub fn softmax_with_bias<F: Float, B: Backend<F>, const N: usize>(
    _backend: B,
    x: &[F; N],
    bias: &[F; N],
) -> [F; N] {
    let () = NonEmpty::<N>::OK;
    let mut y = [F::ZERO; N];
    simd::exec(
        #[inline(always)]
        || {
            op::softmax::<F, B, _>(
                OutOfPlace {
                    src: Bias(x, bias),
                    out: &mut y,
                },
                Unit,
            )
        },
    );
    y
}

/// sparsemax VJP of a fixed-size row from its output and the upstream gradient. As
/// [`sparsemax_vjp`](crate::sparsemax_vjp).
///
/// # Examples
///
/// ```
/// use softmax_core::array;
/// assert_eq!(array::sparsemax_vjp(&[0.0f32, 0.25, 0.75], &[1.0, 1.0, 0.0]), [0.0, 0.5, -0.5]);
/// ```
pub fn sparsemax_vjp<F: Float, const N: usize>(y: &[F; N], dy: &[F; N]) -> [F; N] {
    let () = NonEmpty::<N>::OK;
    let mut dx = [F::ZERO; N];
    simd::exec(
        #[inline(always)]
        || op::sparsemax_vjp(y, dy, &mut dx, F::ONE),
    );
    dx
}

/// log_softmax VJP of a fixed-size row from its logits and the upstream gradient. As
/// [`log_softmax_vjp_from_logits`](crate::log_softmax_vjp_from_logits).
///
/// # Examples
///
/// ```
/// use softmax_core::{array, backend::Poly};
/// let dx = array::log_softmax_vjp_from_logits(Poly, &[0.0f64, 0.0], &[1.0, 0.0]);
/// assert!((dx[0] - 0.5).abs() < 1e-15 && (dx[1] + 0.5).abs() < 1e-15);
/// ```
pub fn log_softmax_vjp_from_logits<F: Float, B: Backend<F>, const N: usize>(
    _backend: B,
    x: &[F; N],
    dy: &[F; N],
) -> [F; N] {
    let () = NonEmpty::<N>::OK;
    let mut dx = [F::ZERO; N];
    simd::exec(
        #[inline(always)]
        || op::log_softmax_vjp_logits::<F, B, _, _>(Plain(x), Unit, dy, &mut dx, F::ONE),
    );
    dx
}

/// Gumbel-softmax of a fixed-size row with caller-supplied uniform noise. As
/// [`gumbel_softmax`](crate::gumbel_softmax).
///
/// # Errors
///
/// [`Error::InvalidTemperature`]; [`Error::InvalidNoise`] if some `u` is not in (0, 1).
///
/// # Examples
///
/// ```
/// use softmax_core::{array, backend::Poly};
/// let y = array::gumbel_softmax(Poly, &[1.0f32, 2.0, 3.0], &[0.5, 0.9, 0.1], 1.0, true).unwrap();
/// assert_eq!(y, [0.0, 1.0, 0.0]);
/// ```
pub fn gumbel_softmax<F: Float, B: Backend<F>, const N: usize>(
    _backend: B,
    x: &[F; N],
    uniform: &[F; N],
    temperature: F,
    hard: bool,
) -> Result<[F; N], Error> {
    let () = NonEmpty::<N>::OK;
    check_temperature(temperature)?;
    check_noise(uniform)?;
    let mut y = [F::ZERO; N];
    with_scale!(temperature, |s| op::gumbel::<F, B, _, _>(
        Plain(x),
        uniform,
        hard,
        &mut y,
        s
    ));
    Ok(y)
}

/// The temperature at which softmax of a fixed-size row has entropy `target` nats. As
/// [`temperature_for_entropy`](crate::temperature_for_entropy).
///
/// # Errors
///
/// [`Error::EntropyOutOfRange`] under the same conditions.
///
/// # Examples
///
/// ```
/// use softmax_core::{array, backend::Poly};
/// let tau = array::temperature_for_entropy(Poly, &[1.0f64, 2.0, 3.0], 0.5).unwrap();
/// assert!((tau - 0.548_514).abs() < 1e-6);
/// ```
pub fn temperature_for_entropy<F: Float, B: Backend<F>, const N: usize>(
    _backend: B,
    x: &[F; N],
    target: F,
) -> Result<F, Error> {
    let () = NonEmpty::<N>::OK;
    simd::exec(
        #[inline(always)]
        || op::temperature_for_entropy::<F, B, _>(Plain(x), target),
    )
}

/// softmax of each row of an `R × N` array.
///
/// # Examples
///
/// ```
/// use softmax_core::{array, backend::Poly};
/// let y = array::softmax_rows(Poly, &[[0.0f32, 0.0], [1.0, f32::NEG_INFINITY]]);
/// assert_eq!(y, [[0.5, 0.5], [1.0, 0.0]]);
/// ```
pub fn softmax_rows<F: Float, B: Backend<F>, const R: usize, const N: usize>(
    backend: B,
    x: &[[F; N]; R],
) -> [[F; N]; R] {
    let mut y = [[F::ZERO; N]; R];
    for (xr, yr) in x.iter().zip(y.iter_mut()) {
        *yr = softmax(backend, xr);
    }
    y
}

/// log_softmax of each row of an `R × N` array.
///
/// # Examples
///
/// ```
/// use softmax_core::{array, backend::Poly};
/// let y = array::log_softmax_rows(Poly, &[[0.0f64, 0.0], [3.0, 3.0]]);
/// assert_eq!(y[1], [-core::f64::consts::LN_2; 2]);
/// ```
pub fn log_softmax_rows<F: Float, B: Backend<F>, const R: usize, const N: usize>(
    backend: B,
    x: &[[F; N]; R],
) -> [[F; N]; R] {
    let mut y = [[F::ZERO; N]; R];
    for (xr, yr) in x.iter().zip(y.iter_mut()) {
        *yr = log_softmax(backend, xr);
    }
    y
}

/// logsumexp of each row of an `R × N` array.
///
/// # Examples
///
/// ```
/// use softmax_core::{array, backend::Poly};
/// assert_eq!(array::logsumexp_rows(Poly, &[[1.0f32], [2.0]]), [1.0, 2.0]);
/// ```
pub fn logsumexp_rows<F: Float, B: Backend<F>, const R: usize, const N: usize>(
    backend: B,
    x: &[[F; N]; R],
) -> [F; R] {
    let mut out = [F::ZERO; R];
    for (xr, o) in x.iter().zip(out.iter_mut()) {
        *o = logsumexp(backend, xr);
    }
    out
}
