//! The dot-product and small matrix-product loops that attention, InfoNCE, SigLIP and the fused
//! linear cross-entropy share — once, here, so every crate of the workspace gets the same
//! vectorised code and the same bits.
//!
//! Layout: row-major slices. `A·Bᵀ` ([`matmul_nt`]) multiplies rows by rows (scores = Q·Kᵀ,
//! logits = H·Wᵀ); `A·B` ([`matmul_nn`]) and `Aᵀ·B` ([`matmul_tn`]) are the two products of the
//! backward passes (dQ = dS·K, dK = dSᵀ·Q), and can add into their output.
//!
//! # Order of operations (the same bits on every target)
//!
//! * A dot product (and every element of [`matmul_nt`]) sums its products in [`LANES`](crate::LANES) lanes:
//!   product `i` goes to lane `i mod LANES`, each lane adds its products in index order, and the
//!   lanes are combined pairwise (lane `l` with lane `l + LANES/2`, and so on). [`matmul_nt`]
//!   computes each element exactly as [`dot`] does: `matmul_nt(a, b)[i][j] == dot(a_i, b_j)`,
//!   bit for bit.
//! * [`matmul_nn`] and [`matmul_tn`] add the products of each output element left to right, in
//!   the order of the shared dimension, starting from 0 or from the output's old value.
//!
//! No fused multiply-add is ever formed, so x86_64 (at every [`simd`] level),
//! Cortex-M4F and soft-float cores give identical results. On x86_64 with AVX2, f32
//! [`matmul_nt`] and [`matmul_nn`] run a hand-scheduled copy of these loops: the same operations
//! in the same order, so the same bits (the AVX-512 score kernel starts each lane at its first
//! product rather than at `0 + product`, and adds +0 to each result: the same value bit for bit,
//! −0 included).
//!
//! # Two forms
//!
//! The functions here check their shapes and return a [`Result`], and run at the widest
//! [`simd`] level. The same products without a `Result` are in [`within`]: for
//! callers that checked their shapes once at their own boundary and call the products from
//! their inner loops (attention-core's blocks, loss-core's samples), at the level of the
//! [`simd::dispatch`] region they run in.
//!
//! # Accuracy
//!
//! Plain floating-point sums, stated bounds (u = 2⁻²⁴ in f32, 2⁻⁵³ in f64): a dot product of
//! length `k` is within `(⌈k/LANES⌉ + log2 LANES)·u·Σ|a_i·b_i|` of the exact value; an element of
//! [`matmul_nn`]/[`matmul_tn`] over a shared dimension `n` within `n·u·Σ|terms|` from zero, and
//! `(n + 1)·u·(|old| + Σ|terms|)` when adding to an old value (one more rounded addition).
//!
//! # Examples
//!
//! ```
//! use softmax_core::linalg;
//! let q = [1.0f32, 2.0, 3.0];
//! let k = [1.0f32, 0.0, 0.0, 0.0, 1.0, 1.0]; // two rows of 3
//! let mut s = [0.0f32; 2];
//! linalg::matmul_nt(&q, &k, 3, &mut s)?;
//! assert_eq!(s, [1.0, 5.0]);
//! assert_eq!(linalg::dot(&q, &q)?, 14.0);
//! # Ok::<(), softmax_core::Error>(())
//! ```

// No `unsafe` here (the crate denies it); only the `avx2` child module allows it.

#[cfg(softmax_dispatch)]
pub(crate) mod avx2;
mod operand;
mod portable;
pub mod within;

pub use operand::Operand;

#[cfg(softmax_dispatch)]
use avx2::Lane8;

/// The element types the architecture copies of the products read (f32 and the stored
/// formats); without runtime dispatch there are none, and this only names them.
#[cfg(not(softmax_dispatch))]
pub(crate) trait Lane8: Operand<f32> {}
#[cfg(not(softmax_dispatch))]
impl<T: Operand<f32>> Lane8 for T {}

/// `C = alpha·(A·Bᵀ)` by the AVX2 kernel when `F` is f32, the shapes are consistent and the
/// CPU has AVX2 (`false`: nothing done, the caller runs the portable loop).
#[inline(always)]
pub(crate) fn fast_nt<F: Float>(a: &[F], b: &[F], k: usize, c: &mut [F], alpha: F) -> bool {
    match (F::as_f32(a), F::as_f32(b), F::as_f32_mut(c)) {
        // `alpha` is an f32 here (`F` is): the conversion is exact.
        (Some(a), Some(b), Some(c)) => {
            fast_nt_stored::<f32>(a, b, &[], k, c, alpha.to_f64() as f32)
        }
        _ => false,
    }
}

/// `C (+)= A·B` likewise.
#[inline(always)]
pub(crate) fn fast_nn<F: Float>(
    a: &[F],
    b: &[F],
    nk: (usize, usize),
    c: &mut [F],
    accumulate: bool,
) -> bool {
    match (F::as_f32(a), F::as_f32(b), F::as_f32_mut(c)) {
        (Some(a), Some(b), Some(c)) => fast_nn_stored::<f32>(a, b, &[], nk, c, accumulate),
        _ => false,
    }
}

/// Whether a scaled operand has a scale for each of its `n` rows (an unscaled one has none).
#[cfg(softmax_dispatch)]
#[inline(always)]
fn scaled_rows<T>(scales: &[T], n: usize) -> bool {
    core::mem::size_of::<T>() == 0 || scales.len() >= n
}

/// `C = alpha·(A·Bᵀ)` over stored rows by the AVX2 kernel, when the shapes are consistent (and
/// every row has its scale) and the CPU has AVX2; `false`: nothing done.
#[inline(always)]
#[allow(unused_variables)]
pub(crate) fn fast_nt_stored<U: Lane8>(
    a: &[f32],
    b: &[U],
    s: &[U::Scale],
    k: usize,
    c: &mut [f32],
    alpha: f32,
) -> bool {
    #[cfg(softmax_dispatch)]
    if let (Some(m), Some(n)) = (a.len().checked_div(k), b.len().checked_div(k)) {
        if m * k == a.len()
            && n * k == b.len()
            && m.checked_mul(n) == Some(c.len())
            && scaled_rows(s, n)
        {
            return avx2::matmul_nt(a, b, s, k, c, alpha);
        }
    }
    false
}

/// `C (+)= A·B` over stored rows likewise.
#[inline(always)]
#[allow(unused_variables)]
pub(crate) fn fast_nn_stored<U: Lane8>(
    a: &[f32],
    b: &[U],
    s: &[U::Scale],
    (n, k): (usize, usize),
    c: &mut [f32],
    accumulate: bool,
) -> bool {
    #[cfg(softmax_dispatch)]
    if let Some(m) = a.len().checked_div(n) {
        if m * n == a.len()
            && n.checked_mul(k) == Some(b.len())
            && m.checked_mul(k) == Some(c.len())
            && scaled_rows(s, n)
        {
            return avx2::matmul_nn(a, b, s, (n, k), c, accumulate);
        }
    }
    false
}

use crate::error::{check_len, check_rows, mul, Error};
use crate::float::Float;
use crate::simd;

/// The dot product `Σ a_i·b_i`, in the fixed lane order of the [module](self) docs.
///
/// Accuracy: within `(⌈n/16⌉ + 4)·u·Σ|a_i·b_i|` of the exact value (u the unit roundoff).
///
/// # Errors
///
/// [`Error::LengthMismatch`] if the lengths differ.
///
/// # Examples
///
/// ```
/// use softmax_core::linalg::dot;
/// assert_eq!(dot(&[1.0f64, 2.0], &[3.0, 4.0]), Ok(11.0));
/// assert!(dot(&[1.0f32], &[]).is_err());
/// ```
pub fn dot<F: Float>(a: &[F], b: &[F]) -> Result<F, Error> {
    check_len(a.len(), b.len())?;
    Ok(simd::dispatch(
        #[inline(always)]
        || within::dot(a, b),
    ))
}

/// `C = A·Bᵀ`: `a` holds `m` rows of `k`, `b` holds `n` rows of `k`, `c` gets `m` rows of `n`
/// with `c[i][j] = dot(a_i, b_j)` (bit for bit). The scores of attention (`Q·Kᵀ`) and the logits
/// of a linear layer (`H·Wᵀ`).
///
/// Accuracy: each element as [`dot`].
///
/// # Errors
///
/// [`Error::EmptyRow`] if `k = 0`; [`Error::RaggedBatch`] if `a` or `b` is not a whole number of
/// rows of `k`; [`Error::LengthMismatch`] if `c.len() != m·n`; [`Error::ShapeOverflow`] if
/// `m·n` overflows `usize`.
///
/// # Examples
///
/// ```
/// use softmax_core::linalg::{dot, matmul_nt};
/// let a = [1.0f32, 2.0, 3.0, 4.0]; // 2 × 2
/// let b = [5.0f32, 6.0, 7.0, 8.0, 9.0, 10.0]; // 3 × 2
/// let mut c = [0.0f32; 6];
/// matmul_nt(&a, &b, 2, &mut c).unwrap();
/// assert_eq!(c, [17.0, 23.0, 29.0, 39.0, 53.0, 67.0]);
/// assert_eq!(c[4], dot(&a[2..], &b[2..4]).unwrap());
/// ```
pub fn matmul_nt<F: Float>(a: &[F], b: &[F], k: usize, c: &mut [F]) -> Result<(), Error> {
    let (m, n) = (check_rows(a.len(), k)?, check_rows(b.len(), k)?);
    check_len(mul(m, n)?, c.len())?;
    simd::dispatch(
        #[inline(always)]
        || within::matmul_nt(a, b, k, c),
    );
    Ok(())
}

/// `C = A·B`, or `C += A·B` with `accumulate`: `a` holds `m` rows of `n`, `b` holds `n` rows of
/// `k`, `c` holds `m` rows of `k`; each element's products are added left to right in the order
/// of the shared dimension (to 0, or to the old value). The gradient `dQ = dS·K` of attention.
///
/// Accuracy: within `n·u·Σ|a_ij·b_jl|` per element from zero, `(n + 1)·u·(|c_old| +
/// Σ|a_ij·b_jl|)` when accumulating.
///
/// # Errors
///
/// [`Error::EmptyRow`] if `n = 0` or `k = 0`; [`Error::RaggedBatch`] if `a` is not a whole
/// number of rows of `n`; [`Error::LengthMismatch`] if `b.len() != n·k` or `c.len() != m·k`;
/// [`Error::ShapeOverflow`] if one of those products overflows `usize`.
///
/// # Examples
///
/// ```
/// use softmax_core::linalg::matmul_nn;
/// let a = [1.0f64, 2.0]; // 1 × 2
/// let b = [1.0, 0.0, 0.0, 1.0, 1.0, 1.0]; // 2 × 3
/// let mut c = [10.0; 3];
/// matmul_nn(&a, &b, 2, 3, &mut c, true).unwrap();
/// assert_eq!(c, [13.0, 12.0, 12.0]); // [10, 10, 10] + [1 + 2, 2, 2]
/// ```
pub fn matmul_nn<F: Float>(
    a: &[F],
    b: &[F],
    n: usize,
    k: usize,
    c: &mut [F],
    accumulate: bool,
) -> Result<(), Error> {
    let m = check_rows(a.len(), n)?;
    check_b_c(n, m, k, b.len(), c.len())?;
    simd::dispatch(
        #[inline(always)]
        || within::matmul_nn(a, b, n, k, c, accumulate),
    );
    Ok(())
}

/// `C = Aᵀ·B`, or `C += Aᵀ·B` with `accumulate`: `a` holds `n` rows of `m`, `b` holds `n` rows
/// of `k`, `c` holds `m` rows of `k`; each element's products are added left to right in the
/// order of the shared dimension (`n`). The gradient `dK = dSᵀ·Q` of attention and `dW = dZᵀ·H`
/// of a linear layer.
///
/// Accuracy: as [`matmul_nn`].
///
/// # Errors
///
/// [`Error::EmptyRow`] if `m = 0` or `k = 0`; [`Error::RaggedBatch`] if `a` is not a whole
/// number of rows of `m`; [`Error::LengthMismatch`] if `b.len() != n·k` or `c.len() != m·k`;
/// [`Error::ShapeOverflow`] if one of those products overflows `usize`.
///
/// # Examples
///
/// ```
/// use softmax_core::linalg::matmul_tn;
/// let a = [1.0f32, 2.0, 3.0, 4.0]; // 2 × 2, so Aᵀ = [[1, 3], [2, 4]]
/// let b = [1.0f32, 1.0]; // 2 × 1
/// let mut c = [0.0f32; 2];
/// matmul_tn(&a, &b, 2, 1, &mut c, false).unwrap();
/// assert_eq!(c, [4.0, 6.0]);
/// ```
pub fn matmul_tn<F: Float>(
    a: &[F],
    b: &[F],
    m: usize,
    k: usize,
    c: &mut [F],
    accumulate: bool,
) -> Result<(), Error> {
    let n = check_rows(a.len(), m)?;
    check_b_c(n, m, k, b.len(), c.len())?;
    simd::dispatch(
        #[inline(always)]
        || within::matmul_tn(a, b, m, k, c, accumulate),
    );
    Ok(())
}

/// The shared checks of [`matmul_nn`] and [`matmul_tn`]: `b` holds `n` rows of `k` (`k > 0`),
/// `c` holds `m` rows of `k`.
fn check_b_c(n: usize, m: usize, k: usize, b: usize, c: usize) -> Result<(), Error> {
    if k == 0 {
        return Err(Error::EmptyRow);
    }
    check_len(mul(n, k)?, b)?;
    check_len(mul(m, k)?, c)
}
