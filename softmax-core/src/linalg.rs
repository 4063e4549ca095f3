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
//! * A dot product (and every element of [`matmul_nt`]) sums its products in [`LANES`] lanes:
//!   product `i` goes to lane `i mod LANES`, each lane adds its products in index order, and the
//!   lanes are combined pairwise (lane `l` with lane `l + LANES/2`, and so on). [`matmul_nt`]
//!   computes each element exactly as [`dot`] does: `matmul_nt(a, b)[i][j] == dot(a_i, b_j)`,
//!   bit for bit.
//! * [`matmul_nn`] and [`matmul_tn`] add the products of each output element left to right, in
//!   the order of the shared dimension, starting from 0 or from the output's old value.
//!
//! No fused multiply-add is ever formed, so x86_64 (at every [`simd`] level),
//! Cortex-M4F and soft-float cores give identical results. On x86_64 with AVX2, f32
//! [`matmul_nt`] and [`matmul_nn`] run a hand-scheduled copy of these loops (see
//! [`simd`]): the same operations in the same order, so the same bits.
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

#![forbid(unsafe_code)]

use crate::kernel::LANES;
use crate::spec::{check_len, RowIter, RowIterMut};
use crate::{simd, Error, Float};

/// Whether the target keeps the lanes in vector registers (lane-parallel loops) or sums lane by
/// lane with one scalar accumulator (strided loops): the same additions in the same order, so
/// the same bits, without 16 memory-resident accumulators on a scalar core.
const LANE_PARALLEL: bool = cfg!(any(
    all(target_arch = "x86_64", target_feature = "sse2"),
    target_arch = "aarch64"
));

/// Combines `LANES` lanes pairwise (lane `l` with `l + LANES/2`, then again).
#[inline(always)]
fn combine<F: Float>(mut v: [F; LANES]) -> F {
    let mut n = LANES;
    while n > 1 {
        let h = n / 2;
        if let Some((a, b)) = v.split_at_mut_checked(h) {
            for (a, &b) in a.iter_mut().zip(b.iter()) {
                *a += b;
            }
        }
        n = h;
    }
    v[0]
}

/// The per-lane sums of `a_i·b_i` (lengths already equal).
#[inline(always)]
fn lanes<F: Float>(a: &[F], b: &[F]) -> [F; LANES] {
    let mut part = [F::ZERO; LANES];
    if LANE_PARALLEL {
        let (ac, at) = a.as_chunks::<LANES>();
        let (bc, bt) = b.as_chunks::<LANES>();
        // Whole-array steps (not a loop over lanes that updates `part` in place): LLVM keeps
        // `part` in vector registers this way wherever the kernel is inlined; the in-place
        // form was scalarised with every lane stored to the stack in the single-row case.
        for (a, b) in ac.iter().zip(bc) {
            part = core::array::from_fn(|l| part[l] + a[l] * b[l]);
        }
        for ((p, &a), &b) in part.iter_mut().zip(at).zip(bt) {
            *p += a * b;
        }
    } else {
        for (l, p) in part.iter_mut().enumerate() {
            let mut acc = F::ZERO;
            for (&a, &b) in a
                .iter()
                .skip(l)
                .step_by(LANES)
                .zip(b.iter().skip(l).step_by(LANES))
            {
                acc += a * b;
            }
            *p = acc;
        }
    }
    part
}

/// `⟨a, b⟩` without the length check (`a` and `b` of equal length).
#[inline(always)]
pub(crate) fn dot_unchecked<F: Float>(a: &[F], b: &[F]) -> F {
    combine(lanes(a, b))
}

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
        || dot_unchecked(a, b),
    ))
}

/// Rows of `A·Bᵀ` in two-by-two blocks (each element computed as [`dot_unchecked`] computes it,
/// so the blocking changes no bit). Two rows of `A` share every load of `B`, and the four dot
/// products are independent chains (eight vector accumulators with AVX2).
#[inline(always)]
pub(crate) fn matmul_nt_unchecked<F: Float>(a: &[F], b: &[F], k: usize, c: &mut [F]) {
    if k == 0 {
        c.fill(F::ZERO);
        return;
    }
    if F::matmul_nt_fast(a, b, k, c) {
        return;
    }
    let n = b.len() / k;
    if n == 0 {
        return;
    }
    // Two rows of A (of C) at a time, walked with checked splits rather than `chunks_exact`:
    // its chunk-size assertion and length division are panic paths the optimiser does not
    // always remove (the panic-freedom probe caught one at opt-level s).
    let (Some(k2), Some(n2)) = (k.checked_mul(2), n.checked_mul(2)) else {
        return;
    };
    let mut a_rest = a;
    let mut c_rest = c;
    while let Some((a2, a_next)) = a_rest.split_at_checked(k2) {
        let Some((c2, c_next)) = core::mem::take(&mut c_rest).split_at_mut_checked(n2) else {
            return;
        };
        a_rest = a_next;
        c_rest = c_next;
        let (Some((a0, a1)), Some((c0, c1))) = (a2.split_at_checked(k), c2.split_at_mut_checked(n))
        else {
            return;
        };
        let (c0p, c0r) = c0.as_chunks_mut::<2>();
        let (c1p, c1r) = c1.as_chunks_mut::<2>();
        let mut b_rest = b;
        for (x, y) in c0p.iter_mut().zip(c1p.iter_mut()) {
            let Some((b2, b_next)) = b_rest.split_at_checked(k2) else {
                break;
            };
            b_rest = b_next;
            if let Some((b0, b1)) = b2.split_at_checked(k) {
                *x = [dot_unchecked(a0, b0), dot_unchecked(a0, b1)];
                *y = [dot_unchecked(a1, b0), dot_unchecked(a1, b1)];
            }
        }
        // An odd last row of B.
        if let (Some(x), Some(y)) = (c0r.first_mut(), c1r.first_mut()) {
            *x = dot_unchecked(a0, b_rest);
            *y = dot_unchecked(a1, b_rest);
        }
    }
    // An odd last row of A.
    if let Some(c0) = c_rest.get_mut(..n) {
        if a_rest.len() == k {
            let mut b_rest = b;
            for c in c0.iter_mut() {
                let Some((b0, b_next)) = b_rest.split_at_checked(k) else {
                    break;
                };
                b_rest = b_next;
                *c = dot_unchecked(a_rest, b0);
            }
        }
    }
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
/// rows of `k`; [`Error::LengthMismatch`] if `c.len() != m·n`.
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
    let (m, n) = (rows_of(a.len(), k)?, rows_of(b.len(), k)?);
    check_len(m * n, c.len())?;
    simd::dispatch(
        #[inline(always)]
        || matmul_nt_unchecked(a, b, k, c),
    );
    Ok(())
}

/// Columns of `C` kept in registers while the shared dimension is walked: [`matmul_nn`] uses
/// four AVX2 vectors of f32 (its calls from attention walk at most 128 rows of `B`, where
/// wider blocks measured 20% slower; measured with 64-row walks), [`matmul_tn`] eight (enough independent chains of additions to
/// hide their latency over long walks). Each element of `C` still receives its products in the
/// order of the shared dimension, so the blocking changes no bit; it only keeps the running
/// sums out of memory (a row of `C` stored and reloaded per product chained every product to a
/// store-to-load forwarding delay).
const NN_COLS: usize = 2 * LANES;
/// See [`NN_COLS`].
const TN_COLS: usize = 4 * LANES;

/// Rows of `B` that [`matmul_nn`] takes through all column blocks before the next rows.
pub(crate) const GROUP: usize = 64;

/// `c[l] += Σ_j a_j·b_j[l]` over the pairs `(a_j, b_j)` in order, for the columns
/// `off .. off + c.len()` of each `b_j` (`c.len() <= W`); the running sums live in a local
/// array for the whole walk.
#[inline(always)]
fn column_block<'a, F: Float + 'a, const W: usize>(
    c: &mut [F],
    off: usize,
    pairs: impl Iterator<Item = (F, &'a [F])>,
) {
    if let Ok(cb) = <&mut [F; W]>::try_from(&mut *c) {
        let mut acc = *cb;
        for (x, b_row) in pairs {
            if let Some(bb) = b_row.get(off..).and_then(|b| b.first_chunk::<W>()) {
                for (s, &b) in acc.iter_mut().zip(bb) {
                    *s += x * b;
                }
            }
        }
        *cb = acc;
    } else {
        let n = c.len().min(W);
        let mut acc = [F::ZERO; W];
        let (acc, _) = acc.split_at_mut(n);
        acc.copy_from_slice(c.get(..n).unwrap_or(&[]));
        for (x, b_row) in pairs {
            let bb = b_row.get(off..).unwrap_or(&[]);
            for (s, &b) in acc.iter_mut().zip(bb) {
                *s += x * b;
            }
        }
        if let Some(c) = c.get_mut(..n) {
            c.copy_from_slice(acc);
        }
    }
}

/// `C (+)= A·B` without checks: `a` is `m × n`, `b` is `n × k`, `c` is `m × k`.
#[inline(always)]
pub(crate) fn matmul_nn_unchecked<F: Float>(
    a: &[F],
    b: &[F],
    n: usize,
    k: usize,
    c: &mut [F],
    accumulate: bool,
) {
    if F::matmul_nn_fast(a, b, n, k, c, accumulate) {
        return;
    }
    if !accumulate {
        c.fill(F::ZERO);
    }
    if n == 0 || k == 0 {
        return;
    }
    // The shared dimension in groups of `GROUP` rows of B, outermost: each group is read from
    // memory once and used from cache by every row and column block of C (B walked once per
    // row of A and per column block was memory-bound: dH = dZ·W over a 32768-row W).
    let mut b_rest = b;
    let mut j0 = 0;
    while !b_rest.is_empty() {
        let rows = GROUP.min(b_rest.len().checked_div(k).unwrap_or(0));
        if rows == 0 {
            break;
        }
        let (b_grp, b_next) = b_rest
            .split_at_checked(rows.saturating_mul(k))
            .unwrap_or((b_rest, &[]));
        b_rest = b_next;
        for (a_row, c_row) in RowIter::new(a, n).zip(RowIterMut::new(&mut *c, k)) {
            let a_grp = a_row.get(j0..).unwrap_or(&[]);
            let a_grp = a_grp.get(..rows).unwrap_or(a_grp);
            let mut off = 0;
            for cb in c_row.chunks_mut(NN_COLS) {
                let pairs = a_grp.iter().copied().zip(RowIter::new(b_grp, k));
                column_block::<F, NN_COLS>(cb, off, pairs);
                off += NN_COLS;
            }
        }
        j0 += rows;
    }
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
/// number of rows of `n`; [`Error::LengthMismatch`] if `b.len() != n·k` or `c.len() != m·k`.
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
    let m = rows_of(a.len(), n)?;
    if k == 0 {
        return Err(Error::EmptyRow);
    }
    check_len(n * k, b.len())?;
    check_len(m * k, c.len())?;
    simd::dispatch(
        #[inline(always)]
        || matmul_nn_unchecked(a, b, n, k, c, accumulate),
    );
    Ok(())
}

/// `C (+)= Aᵀ·B` without checks: `a` is `n × m`, `b` is `n × k`, `c` is `m × k`.
#[inline(always)]
pub(crate) fn matmul_tn_unchecked<F: Float>(
    a: &[F],
    b: &[F],
    m: usize,
    k: usize,
    c: &mut [F],
    accumulate: bool,
) {
    if !accumulate {
        c.fill(F::ZERO);
    }
    if m == 0 || k == 0 {
        return;
    }
    // Row i of C gets a_ji·b_j for j ascending (column i of A against the rows of B): each
    // element's products are added in the order of the shared dimension.
    for (i, c_row) in RowIterMut::new(c, k).enumerate() {
        let mut off = 0;
        for cb in c_row.chunks_mut(TN_COLS) {
            let pairs = RowIter::new(a, m)
                .zip(RowIter::new(b, k))
                .map(|(a_row, b_row)| (a_row.get(i).copied().unwrap_or(F::ZERO), b_row));
            column_block::<F, TN_COLS>(cb, off, pairs);
            off += TN_COLS;
        }
    }
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
/// number of rows of `m`; [`Error::LengthMismatch`] if `b.len() != n·k` or `c.len() != m·k`.
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
    let n = rows_of(a.len(), m)?;
    if k == 0 {
        return Err(Error::EmptyRow);
    }
    check_len(n * k, b.len())?;
    check_len(m * k, c.len())?;
    simd::dispatch(
        #[inline(always)]
        || matmul_tn_unchecked(a, b, m, k, c, accumulate),
    );
    Ok(())
}

/// The number of rows of `k` in `len` values.
fn rows_of(len: usize, k: usize) -> Result<usize, Error> {
    if k == 0 {
        return Err(Error::EmptyRow);
    }
    if !len.is_multiple_of(k) {
        return Err(Error::RaggedBatch { len, n: k });
    }
    Ok(len / k)
}
