//! The products without a `Result`: the same arithmetic and the same bits as the checked forms
//! of [`linalg`](super), for callers that checked their shapes once at their own boundary
//! and call the products from their inner loops. No shape is checked here and nothing can fail:
//! where the lengths disagree anyway, a product runs its portable loop, which computes the rows
//! and columns that lie within every buffer and leaves the rest of its output alone (never
//! reading or writing out of bounds, never panicking), the same bits at every level (the AVX2
//! copies run only on consistent shapes). They run at the machine-code level of their caller: call them
//! inside [`simd::dispatch`](crate::simd::dispatch) (on x86_64 the f32 `matmul_nt` and
//! `matmul_nn` take their hand-scheduled AVX2 copy whenever the CPU has AVX2, inside or out).
//! In builds without runtime dispatch (microcontrollers, debug builds) each is one out-of-line
//! function per element type, shared by every caller; in x86_64 release builds they are
//! inlined into the caller's dispatched region.
//!
//! # Examples
//!
//! ```
//! use softmax_core::{linalg::within, simd};
//! let q = [1.0f32, 2.0];
//! let k = [3.0f32, 4.0, 5.0, 6.0]; // two keys of 2
//! let mut s = [0.0f32; 2];
//! simd::dispatch(
//!     #[inline(always)]
//!     || within::matmul_nt(&q, &k, 2, &mut s),
//! );
//! assert_eq!(s, [11.0, 17.0]);
//! ```

#![forbid(unsafe_code)]

use super::portable;
use super::Operand;
use crate::float::Float;

/// `Σ a_i·b_i` over the common length of `a` and `b`, as [`linalg::dot`](super::dot).
///
/// # Examples
///
/// ```
/// assert_eq!(softmax_core::linalg::within::dot(&[1.0f64, 2.0], &[3.0, 4.0]), 11.0);
/// ```
#[cfg_attr(softmax_dispatch, inline(always))]
#[cfg_attr(not(softmax_dispatch), inline(never))]
pub fn dot<F: Float>(a: &[F], b: &[F]) -> F {
    let n = a.len().min(b.len());
    portable::dot(a.get(..n).unwrap_or(&[]), b.get(..n).unwrap_or(&[]), ())
}

/// `C = A·Bᵀ` as [`linalg::matmul_nt`](super::matmul_nt): `a` rows of `k`, `b` rows of `k`,
/// `c` one row of `b.len()/k` per row of `a`. `k = 0` zeroes `c`.
///
/// # Examples
///
/// ```
/// let mut c = [0.0f32; 1];
/// softmax_core::linalg::within::matmul_nt(&[1.0, 2.0], &[3.0, 4.0], 2, &mut c);
/// assert_eq!(c, [11.0]);
/// ```
#[cfg_attr(softmax_dispatch, inline(always))]
#[cfg_attr(not(softmax_dispatch), inline(never))]
pub fn matmul_nt<F: Float>(a: &[F], b: &[F], k: usize, c: &mut [F]) {
    matmul_nt_stored(a, b, &[], k, c)
}

/// [`matmul_nt`] with `B` in any [`Operand`] form, read in registers as it is used (no
/// converted copy): row `j` of `b` stands for the values `b[j·k + i].load(scales[j])`
/// ([`Operand::load`]; `scales` is empty for a float or an unscaled format, one scale per row
/// for int8). The result is [`matmul_nt`] over those values, bit for bit; accuracy as stated
/// for [`linalg::matmul_nt`](super::matmul_nt), relative to the values read.
///
/// # Examples
///
/// ```
/// use softmax_core::linalg::within;
/// let k = [2i8, -4, 1, 1]; // two rows of 2, scales 0.5 and 0.25: [1, -2] and [0.25, 0.25]
/// let mut c = [0.0f32; 2];
/// within::matmul_nt_stored(&[3.0, 1.0], &k, &[0.5, 0.25], 2, &mut c);
/// assert_eq!(c, [1.0, 1.0]);
/// ```
#[inline(always)]
pub fn matmul_nt_stored<F: Float, U: Operand<F>>(
    a: &[F],
    b: &[U],
    scales: &[U::Scale],
    k: usize,
    c: &mut [F],
) {
    // The scaled product with a factor of 1, which multiplies nothing: one body for both, so
    // an image that calls both holds one copy.
    matmul_nt_scaled(a, b, scales, k, c, F::ONE);
}

/// `C = alpha·(A·Bᵀ)`: each element of [`matmul_nt_stored`] multiplied by `alpha` (rounded once
/// more), the same bits as that product followed by multiplying each element it writes by
/// `alpha` (attention's scores times the softmax scale; on inconsistent shapes the elements it
/// does not write are left alone, as the module says). The sixteen-row f32 kernel of AVX-512
/// multiplies each result before storing it; the other kernels and the portable loop store the
/// product and multiply the elements they wrote afterwards. `alpha = 1` multiplies nothing.
///
/// # Examples
///
/// ```
/// use softmax_core::linalg::within;
/// let mut c = [0.0f32; 2];
/// within::matmul_nt_scaled(&[3.0, 1.0], &[1.0, 2.0, 0.5, 0.5], &[], 2, &mut c, 0.125);
/// assert_eq!(c, [0.625, 0.25]);
/// ```
#[cfg_attr(softmax_dispatch, inline(always))]
#[cfg_attr(not(softmax_dispatch), inline(never))]
pub fn matmul_nt_scaled<F: Float, U: Operand<F>>(
    a: &[F],
    b: &[U],
    scales: &[U::Scale],
    k: usize,
    c: &mut [F],
    alpha: F,
) {
    if U::nt_fast(a, b, scales, k, c, alpha) {
        return;
    }
    let done = portable::matmul_nt(a, b, scales, k, c);
    if alpha != F::ONE {
        for x in c.iter_mut().take(done) {
            *x *= alpha;
        }
    }
}

/// `C = A·B`, or `C += A·B` with `accumulate`, as [`linalg::matmul_nn`](super::matmul_nn):
/// `a` rows of `n`, `b` `n` rows of `k`, `c` rows of `k`.
///
/// # Examples
///
/// ```
/// let mut c = [1.0f32, 1.0];
/// softmax_core::linalg::within::matmul_nn(&[2.0], &[3.0, 4.0], 1, 2, &mut c, true);
/// assert_eq!(c, [7.0, 9.0]);
/// ```
#[cfg_attr(softmax_dispatch, inline(always))]
#[cfg_attr(not(softmax_dispatch), inline(never))]
pub fn matmul_nn<F: Float>(a: &[F], b: &[F], n: usize, k: usize, c: &mut [F], accumulate: bool) {
    matmul_nn_stored(a, b, &[], n, k, c, accumulate)
}

/// [`matmul_nn`] with `B` in any [`Operand`] form (see [`matmul_nt_stored`]): row `j` of `b`
/// stands for `b[j·k + i].load(scales[j])`. Bit for bit [`matmul_nn`] over those values.
///
/// # Examples
///
/// ```
/// use softmax_core::linalg::within;
/// use softmax_core::stored::f16;
/// let v = [f16::from_f32(0.5), f16::from_f32(2.0)]; // one row of 2
/// let mut c = [1.0f32, 1.0];
/// within::matmul_nn_stored(&[4.0], &v, &[], 1, 2, &mut c, true);
/// assert_eq!(c, [3.0, 9.0]);
/// ```
#[cfg_attr(softmax_dispatch, inline(always))]
#[cfg_attr(not(softmax_dispatch), inline(never))]
pub fn matmul_nn_stored<F: Float, U: Operand<F>>(
    a: &[F],
    b: &[U],
    scales: &[U::Scale],
    n: usize,
    k: usize,
    c: &mut [F],
    accumulate: bool,
) {
    if U::nn_fast(a, b, scales, (n, k), c, accumulate) {
        return;
    }
    portable::matmul_nn(a, b, scales, n, k, c, accumulate)
}

/// `C = Aᵀ·B`, or `C += Aᵀ·B` with `accumulate`, as [`linalg::matmul_tn`](super::matmul_tn):
/// `a` rows of `m`, `b` as many rows of `k`, `c` `m` rows of `k`.
///
/// # Examples
///
/// ```
/// let mut c = [0.0f64; 2];
/// softmax_core::linalg::within::matmul_tn(&[1.0, 2.0], &[3.0, 4.0], 2, 1, &mut c, false);
/// assert_eq!(c, [3.0, 6.0]);
/// ```
#[cfg_attr(softmax_dispatch, inline(always))]
#[cfg_attr(not(softmax_dispatch), inline(never))]
pub fn matmul_tn<F: Float>(a: &[F], b: &[F], m: usize, k: usize, c: &mut [F], accumulate: bool) {
    portable::matmul_tn(a, b, m, k, c, accumulate)
}
