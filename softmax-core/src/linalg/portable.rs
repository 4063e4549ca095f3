//! The portable loops of the products: the definitions of their order of operations (see the
//! [module docs](super)), which every architecture copy reproduces bit for bit. They never panic:
//! shapes were checked by the caller, and where lengths disagree anyway they compute what lies
//! within every buffer.

#![forbid(unsafe_code)]

use super::Operand;
use crate::chunks::{chunks, chunks_mut};
use crate::float::Float;
use crate::kernel::{tree, LANES, LANE_PARALLEL};

/// Combines `LANES` lanes pairwise (lane `l` with `l + LANES/2`, then again): the skeleton's
/// lane tree with `+`.
#[inline(always)]
fn combine<F: Float>(v: [F; LANES]) -> F {
    tree(v, |a, b| a + b)
}

/// The per-lane sums of `a_i·b_i` (lengths already equal), `b_i` read as `F` with the row's
/// scale `s` ([`Operand::load`]: `b_i` itself for a float).
#[inline(always)]
fn lanes<F: Float, U: Operand<F>>(a: &[F], b: &[U], s: U::Scale) -> [F; LANES] {
    let mut part = [F::ZERO; LANES];
    if LANE_PARALLEL {
        let (ac, at) = a.as_chunks::<LANES>();
        let (bc, bt) = b.as_chunks::<LANES>();
        // Whole-array steps (not a loop over lanes that updates `part` in place): LLVM keeps
        // `part` in vector registers this way wherever the kernel is inlined; the in-place
        // form was scalarised with every lane stored to the stack in the single-row case.
        for (a, b) in ac.iter().zip(bc) {
            part = core::array::from_fn(|l| part[l] + a[l] * b[l].load(s));
        }
        for ((p, &a), &b) in part.iter_mut().zip(at).zip(bt) {
            *p += a * b.load(s);
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
                acc += a * b.load(s);
            }
            *p = acc;
        }
    }
    part
}

/// `⟨a, b⟩` (`a` and `b` of equal length; a longer one is cut to the other), `b` read with the
/// scale `s`.
#[inline(always)]
pub(super) fn dot<F: Float, U: Operand<F>>(a: &[F], b: &[U], s: U::Scale) -> F {
    combine(lanes(a, b, s))
}

/// The scale of row `j` of a stored operand (`()` for a float: `scales` is then empty).
#[inline(always)]
pub(super) fn scale<T: Copy + Default>(scales: &[T], j: usize) -> T {
    scales.get(j).copied().unwrap_or_default()
}

/// Rows of `A·Bᵀ` in two-by-two blocks (each element computed as [`dot`] computes it,
/// so the blocking changes no bit). Two rows of `A` share every load of `B`, and the four dot
/// products are independent chains (eight vector accumulators with AVX2). Returns how many
/// elements it wrote: whole rows of `C` from the first (all of `c` for `k = 0`, which zeroes it).
#[inline(always)]
pub(super) fn matmul_nt<F: Float, U: Operand<F>>(
    a: &[F],
    b: &[U],
    scales: &[U::Scale],
    k: usize,
    c: &mut [F],
) -> usize {
    if k == 0 {
        c.fill(F::ZERO);
        return c.len();
    }
    let n = b.len() / k;
    if n == 0 {
        return 0;
    }
    // Two rows of A (of C) at a time, walked with checked splits rather than `chunks_exact`:
    // its chunk-size assertion and length division are panic paths the optimiser does not
    // always remove (the panic-freedom probe caught one at opt-level s).
    let (Some(k2), Some(n2)) = (k.checked_mul(2), n.checked_mul(2)) else {
        return 0;
    };
    let mut a_rest = a;
    let mut c_rest = c;
    let mut written = 0;
    while let Some((a2, a_next)) = a_rest.split_at_checked(k2) {
        let Some((c2, c_next)) = core::mem::take(&mut c_rest).split_at_mut_checked(n2) else {
            return written;
        };
        a_rest = a_next;
        c_rest = c_next;
        let (Some((a0, a1)), Some((c0, c1))) = (a2.split_at_checked(k), c2.split_at_mut_checked(n))
        else {
            return written;
        };
        written += n2;
        let (c0p, c0r) = c0.as_chunks_mut::<2>();
        let (c1p, c1r) = c1.as_chunks_mut::<2>();
        let mut b_rest = b;
        let mut j = 0;
        for (x, y) in c0p.iter_mut().zip(c1p.iter_mut()) {
            let Some((b2, b_next)) = b_rest.split_at_checked(k2) else {
                break;
            };
            b_rest = b_next;
            if let Some((b0, b1)) = b2.split_at_checked(k) {
                let (s0, s1) = (scale(scales, j), scale(scales, j + 1));
                *x = [dot(a0, b0, s0), dot(a0, b1, s1)];
                *y = [dot(a1, b0, s0), dot(a1, b1, s1)];
            }
            j += 2;
        }
        // An odd last row of B.
        if let (Some(x), Some(y)) = (c0r.first_mut(), c1r.first_mut()) {
            let s = scale(scales, j);
            *x = dot(a0, b_rest, s);
            *y = dot(a1, b_rest, s);
        }
    }
    // An odd last row of A.
    if let Some(c0) = c_rest.get_mut(..n) {
        if a_rest.len() == k {
            let mut b_rest = b;
            for (j, c) in c0.iter_mut().enumerate() {
                let Some((b0, b_next)) = b_rest.split_at_checked(k) else {
                    break;
                };
                b_rest = b_next;
                *c = dot(a_rest, b0, scale(scales, j));
            }
            written += n;
        }
    }
    written
}

/// Columns of `C` kept in registers while the shared dimension is walked: [`matmul_nn`] uses
/// four AVX2 vectors of f32 (attention's calls walk at most 128 rows of `B`, where wider
/// blocks were slower), [`matmul_tn`] eight (enough independent chains of additions to hide
/// their latency over long walks). Each element of `C` still receives its products in the
/// order of the shared dimension, so the blocking changes no bit; it only keeps the running
/// sums out of memory (a row of `C` stored and reloaded per product chained every product to a
/// store-to-load forwarding delay).
const NN_COLS: usize = 2 * LANES;
/// See [`NN_COLS`].
const TN_COLS: usize = 4 * LANES;

/// Rows of `B` that [`matmul_nn`] takes through all column blocks before the next rows.
pub(super) const GROUP: usize = 64;

/// `c[l] += Σ_j a_j·b_j[l]` over the triples `(a_j, b_j, scale of b_j)` in order, for the
/// columns `off .. off + c.len()` of each `b_j` (`c.len() <= W`); the running sums live in a
/// local array for the whole walk.
#[inline(always)]
fn column_block<'a, F: Float, U: Operand<F> + 'a, const W: usize>(
    c: &mut [F],
    off: usize,
    pairs: impl Iterator<Item = (F, &'a [U], U::Scale)>,
) {
    if let Ok(cb) = <&mut [F; W]>::try_from(&mut *c) {
        let mut acc = *cb;
        for (x, b_row, sc) in pairs {
            if let Some(bb) = b_row.get(off..).and_then(|b| b.first_chunk::<W>()) {
                for (s, &b) in acc.iter_mut().zip(bb) {
                    *s += x * b.load(sc);
                }
            }
        }
        *cb = acc;
    } else {
        let n = c.len().min(W);
        let mut acc = [F::ZERO; W];
        let (acc, _) = acc.split_at_mut(n);
        acc.copy_from_slice(c.get(..n).unwrap_or(&[]));
        for (x, b_row, sc) in pairs {
            let bb = b_row.get(off..).unwrap_or(&[]);
            for (s, &b) in acc.iter_mut().zip(bb) {
                *s += x * b.load(sc);
            }
        }
        if let Some(c) = c.get_mut(..n) {
            c.copy_from_slice(acc);
        }
    }
}

/// `C (+)= A·B` without checks: `a` is `m × n`, `b` is `n × k` (row `j` read with
/// `scales[j]`), `c` is `m × k`.
#[inline(always)]
pub(super) fn matmul_nn<F: Float, U: Operand<F>>(
    a: &[F],
    b: &[U],
    scales: &[U::Scale],
    n: usize,
    k: usize,
    c: &mut [F],
    accumulate: bool,
) {
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
        for (a_row, c_row) in chunks(a, n).zip(chunks_mut(&mut *c, k)) {
            let a_grp = a_row.get(j0..).unwrap_or(&[]);
            let a_grp = a_grp.get(..rows).unwrap_or(a_grp);
            let mut off = 0;
            for cb in c_row.chunks_mut(NN_COLS) {
                let pairs = a_grp
                    .iter()
                    .copied()
                    .zip(chunks(b_grp, k))
                    .enumerate()
                    .map(|(j, (x, row))| (x, row, scale(scales, j0 + j)));
                column_block::<F, U, NN_COLS>(cb, off, pairs);
                off += NN_COLS;
            }
        }
        j0 += rows;
    }
}

/// `C (+)= Aᵀ·B` without checks: `a` is `n × m`, `b` is `n × k`, `c` is `m × k`.
#[inline(always)]
pub(super) fn matmul_tn<F: Float>(
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
    for (i, c_row) in chunks_mut(c, k).enumerate() {
        let mut off = 0;
        for cb in c_row.chunks_mut(TN_COLS) {
            let pairs = chunks(a, m)
                .zip(chunks(b, k))
                .map(|(a_row, b_row)| (a_row.get(i).copied().unwrap_or(F::ZERO), b_row, ()));
            column_block::<F, F, TN_COLS>(cb, off, pairs);
            off += TN_COLS;
        }
    }
}
