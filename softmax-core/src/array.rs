//! Fixed-size wrappers: lengths are compile-time constants, so the length errors of the slice
//! API cannot happen and these functions return values directly (a zero length is rejected at
//! compile time). They call the same row kernels as the slice functions.

use crate::backend::Backend;
use crate::kernel::{OutOfPlace, Plain, Unit};
use crate::spec::{check_temperature, with_scale};
use crate::{row, Error, Float};

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
    row::softmax::<F, B, _>(
        OutOfPlace {
            src: Plain(x),
            out: &mut y,
        },
        Unit,
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
    with_scale!(temperature, |s| row::softmax::<F, B, _>(
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
    row::log_softmax::<F, B, _>(
        OutOfPlace {
            src: Plain(x),
            out: &mut y,
        },
        Unit,
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
    row::logsumexp::<F, B, _, _>(Plain(x), Unit)
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
    Ok(with_scale!(temperature, |s| row::entropy::<F, B, _, _>(
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
    row::sparsemax(
        OutOfPlace {
            src: Plain(x),
            out: &mut y,
        },
        Unit,
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
    row::argmax(x).unwrap_or(0)
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
    crate::ops::hardmax_row(x, &mut y);
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
    row::softmax_vjp(y, dy, &mut dx, F::ONE);
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
    row::log_softmax_vjp::<F, B>(y, dy, &mut dx, F::ONE);
    dx
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
