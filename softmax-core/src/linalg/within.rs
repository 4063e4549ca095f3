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
    portable::dot(a.get(..n).unwrap_or(&[]), b.get(..n).unwrap_or(&[]))
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
    #[cfg(softmax_dispatch)]
    if let (Some(a), Some(b), Some(c)) = (F::as_f32(a), F::as_f32(b), F::as_f32_mut(c)) {
        if consistent_nt(a.len(), b.len(), k, c.len()) && super::avx2::matmul_nt(a, b, k, c) {
            return;
        }
    }
    portable::matmul_nt(a, b, k, c)
}

/// Whether `a` and `b` are whole rows of `k` and `c` holds their `m × n` products.
#[cfg(softmax_dispatch)]
#[inline(always)]
fn consistent_nt(a: usize, b: usize, k: usize, c: usize) -> bool {
    match (a.checked_div(k), b.checked_div(k)) {
        (Some(m), Some(n)) => m * k == a && n * k == b && m.checked_mul(n) == Some(c),
        _ => false,
    }
}

/// Whether `a` is whole rows of `n`, `b` is `n × k` and `c` holds the `m × k` result.
#[cfg(softmax_dispatch)]
#[inline(always)]
fn consistent_nn(a: usize, b: usize, n: usize, k: usize, c: usize) -> bool {
    match a.checked_div(n) {
        Some(m) => m * n == a && n.checked_mul(k) == Some(b) && m.checked_mul(k) == Some(c),
        None => false,
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
    #[cfg(softmax_dispatch)]
    if let (Some(a), Some(b), Some(c)) = (F::as_f32(a), F::as_f32(b), F::as_f32_mut(c)) {
        if consistent_nn(a.len(), b.len(), n, k, c.len())
            && super::avx2::matmul_nn(a, b, n, k, c, accumulate)
        {
            return;
        }
    }
    portable::matmul_nn(a, b, n, k, c, accumulate)
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
