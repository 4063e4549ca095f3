//! The passes of the fast variant over one row, shared by its two kernels, and the portable
//! kernel: the reference whose bits the x86_64 kernels (`fast/x86.rs`, AVX2+FMA and AVX-512) reproduce.

#![forbid(unsafe_code)]

use crate::backend::{Backend, Poly};
use crate::kernel::{tree, OutOfPlace, Plain, Totals, Unit};
use crate::op;

/// Values per chunk: the lanes of the sums and of the maximum.
pub(crate) const CHUNK: usize = 16;
/// Chunks per block: each lane adds 16 terms plainly before the compensated fold.
pub(crate) const BLOCK_CHUNKS: usize = 16;

pub(crate) const LOG2E: f32 = core::f32::consts::LOG2_E;
/// 1.5·2^23 + 127: `d·log2e + MB` rounds to an integer whose low bits are `n + 127`.
pub(crate) const MB: f32 = 12_582_912.0 + 127.0;
/// ln 2 with 15 significant bits, so `n·LN2_HI` is exact.
pub(crate) const LN2_HI: f32 = 0.693_145_75;
/// ln 2 − LN2_HI.
pub(crate) const LN2_LO: f32 = 1.428_606_8e-6;
/// `d` is raised to this first: `n = round(LOW·log2 e) = −127`, whose `2^n` built from the
/// bits is 0, so every `d` below −87.68 (`-inf` included) gives 0, and `n + 127` stays in
/// [0, 131].
pub(crate) const LOW: f32 = -87.9;
/// Minimax `e^r ≈ 1 + r·(C1 + r·(C2 + r·(C3 + r·(C4 + r·C5))))` on `|r| <= 0.3468`, relative
/// error 7.4e-8 (fitted by linear programming on a dense grid, then rounded to f32).
pub(crate) const C: [f32; 5] = [1.0, 0.499_990_4, 0.166_669_37, 0.041_908_3, 0.008_325_821];

/// Correctly rounded `a·b + c` (one rounding), as IEEE 754 `fusedMultiplyAdd`: the same bits as
/// a hardware fused multiply-add, on every target. Software: the f64 product of two f32 is exact,
/// the f64 sum is rounded to odd (its exact error from TwoSum decides the last bit), and the
/// conversion to f32 then rounds correctly (a 53-bit round-to-odd value rounds to 24 bits as the
/// exact value would). Infinities and NaN propagate as in hardware.
///
/// # Examples
///
/// ```
/// use softmax_core::fast::fma;
/// // a² = 1 + 2⁻²² + 2⁻⁴⁶ rounds to 1 + 2⁻²²; fused, a·a − fl(a·a) keeps the lost 2⁻⁴⁶.
/// let a = 1.0 + f32::EPSILON; // 1 + 2⁻²³
/// assert_eq!(a * a - a * a, 0.0);
/// assert_eq!(fma(a, a, -(a * a)), f32::EPSILON * f32::EPSILON);
/// assert_eq!(fma(2.0, 3.0, 1.0), 7.0);
/// assert!(fma(f32::INFINITY, 0.0, 1.0).is_nan());
/// ```
#[inline]
pub fn fma(a: f32, b: f32, c: f32) -> f32 {
    let p = f64::from(a) * f64::from(b);
    let c = f64::from(c);
    let s = p + c;
    if !s.is_finite() {
        return s as f32;
    }
    // TwoSum: the exact error of the f64 sum.
    let bb = s - p;
    let e = (p - (s - bb)) + (c - bb);
    let bits = s.to_bits();
    let odd = if e == 0.0 || bits & 1 == 1 {
        bits
    } else if (e > 0.0) == (s > 0.0) {
        // The exact sum lies beyond `s`, away from zero: the odd neighbour there.
        bits | 1
    } else {
        // The exact sum lies between `s` and zero: the neighbour towards zero (odd).
        bits - 1
    };
    f64::from_bits(odd) as f32
}

/// The maximum as the AVX2 `max_ps(a, b)` computes it: `a` if `a > b`, else `b` (so a NaN `a`
/// is skipped).
#[inline(always)]
pub(crate) fn maxf(a: f32, b: f32) -> f32 {
    if a > b {
        a
    } else {
        b
    }
}

/// The fast variant's `e^d`, for the shifted logits `d = x − max <= 0` (and the online pass's
/// `d <= 2.5`): `2^n·p(r)` as in the [module documentation](super), the same bits on every
/// target. `d < −87.68` gives 0 (`-inf` included), NaN gives NaN; above 88 the result is
/// unspecified (finite or not, never a panic).
///
/// Accuracy: <= 3 ULP from `e^d` for every `d` in [-87.3, 2.5] (max 2.71 ULP, measured
/// exhaustively by `softmax-core/tests/fast.rs` with `SOFTMAX_EXHAUSTIVE=1`, strided otherwise):
/// the degree-5 polynomial's own 7.4e-8 and the roundings of Horner's rule.
///
/// # Examples
///
/// ```
/// use softmax_core::fast;
/// assert_eq!(fast::exp(0.0), 1.0);
/// assert!((fast::exp(-1.0) - 0.367_879_44).abs() <= 3.0 * 0.25 * f32::EPSILON);
/// assert_eq!(fast::exp(f32::NEG_INFINITY), 0.0);
/// assert_eq!(fast::exp(-100.0), 0.0);
/// ```
#[inline(always)]
pub fn exp(d: f32) -> f32 {
    let d = maxf(LOW, d);
    let kf = fma(d, LOG2E, MB);
    let nf = kf - MB;
    let r = fma(-nf, LN2_HI, d);
    let r = fma(-nf, LN2_LO, r);
    let mut p = C[4];
    p = fma(p, r, C[3]);
    p = fma(p, r, C[2]);
    p = fma(p, r, C[1]);
    p = fma(p, r, C[0]);
    p = fma(p, r, 1.0);
    // kf's low bits are n + 127, in [0, 131]: shifted into the exponent field they make 2^n,
    // or 0 for n = −127 (d < −87.68).
    p * f32::from_bits(kf.to_bits() << 23)
}

/// What a row pass computes.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Op {
    Softmax,
    LogSoftmax,
    LogSumExp,
}

/// The row's chunks, the last one padded with `-inf`.
fn padded_chunks(x: &[f32]) -> impl Iterator<Item = [f32; CHUNK]> + '_ {
    let (whole, tail) = x.as_chunks::<CHUNK>();
    let last = (!tail.is_empty()).then(|| {
        let mut t = [f32::NEG_INFINITY; CHUNK];
        for (t, &v) in t.iter_mut().zip(tail) {
            *t = v;
        }
        t
    });
    whole.iter().copied().chain(last)
}

/// Rows at least this long take two passes instead of three: an online pass that finds a
/// reference near the maximum and the sum together, block by block ([`LONG_BLOCK`]), and the
/// output pass, which recomputes the exps (cheap here) instead of storing and rescaling them.
/// Such rows do not fit in L2 next to their output, and the two passes move 12 to 16 bytes
/// per value instead of 24.
pub(crate) const LONG_ROW: usize = 1 << 17;

/// Values per block of the online pass: 16 KiB, read from memory (by a kernel that finds its
/// maximum while it computes the previous block's exps) and again from L1 by its own exps.
pub(crate) const LONG_BLOCK: usize = 4096;

/// How far a block's maximum may lie above the online pass's reference before the reference
/// moves to it (the terms stay below `e^2.5`; each move rescales the sums once).
const REBASE: f32 = 2.5;

/// The vector steps of a row, in implementations with the same bits: [`Portable`] (the
/// reference) and the x86_64 kernels (`fast/x86.rs`). The passes and their order live once,
/// in [`row`].
pub(crate) trait Kernel: Copy {
    /// Per-lane compensated totals.
    type Sums: Copy;
    /// Totals of zero.
    fn zero(self) -> Self::Sums;
    /// The maximum of `x`: lane-wise over its chunks (the last padded with `-inf`), then the
    /// lanes pairwise (`i` with `i + h` for h = 8, 4, 2, 1, the lower lane first). NaN
    /// entries are skipped.
    fn max(self, x: &[f32]) -> f32;
    /// Adds `e^(x_i − r)` into the totals: blocks of [`BLOCK_CHUNKS`] chunks from `x[0]` summed
    /// plainly per lane and folded (TwoSum) into the totals, the padded ragged end in the last
    /// block when it has room, else alone. Stores the terms into `y` when given (same length).
    /// Returns [`max`](Self::max) of `next` (at most as long as `x`; `-inf` when empty), which
    /// a kernel may read while it computes the exps of `x` (the online pass reads the next
    /// block from memory under the arithmetic of this one).
    fn sum_exp(
        self,
        sums: &mut Self::Sums,
        x: &[f32],
        r: f32,
        y: Option<&mut [f32]>,
        next: &[f32],
    ) -> f32;
    /// Multiplies every lane's total and compensation by `f`.
    fn scale(self, sums: &mut Self::Sums, f: f32);
    /// The lanes combined pairwise (each step a TwoSum whose error joins the compensation),
    /// then `total + compensation` rounded once.
    fn finish(self, sums: Self::Sums) -> f32;
    /// `y_i ·= f`.
    fn mul(self, y: &mut [f32], f: f32);
    /// `y_i = e^(x_i − r) · f`.
    fn exp_mul(self, x: &[f32], y: &mut [f32], r: f32, f: f32);
    /// `y_i = (x_i − r) − l`.
    fn log_out(self, x: &[f32], y: &mut [f32], r: f32, l: f32);
}

/// One row: `y` has the row's length (softmax, log_softmax) or one element (logsumexp).
#[inline(always)]
pub(crate) fn row<K: Kernel>(k: K, op: Op, x: &[f32], y: &mut [f32]) {
    let (r, total) = if x.len() >= LONG_ROW {
        match online(k, x) {
            Some(v) => v,
            None => return fallback(op, x, y),
        }
    } else {
        let m = k.max(x);
        if !m.is_finite() {
            return fallback(op, x, y);
        }
        let mut sums = k.zero();
        if op == Op::Softmax {
            k.sum_exp(&mut sums, x, m, Some(&mut *y), &[]);
            k.mul(y, 1.0 / k.finish(sums));
            return;
        }
        k.sum_exp(&mut sums, x, m, None, &[]);
        (m, k.finish(sums))
    };
    match op {
        Op::Softmax => k.exp_mul(x, y, r, 1.0 / total),
        Op::LogSoftmax => k.log_out(x, y, r, <Poly as Backend<f32>>::ln(total)),
        Op::LogSumExp => {
            if let Some(o) = y.first_mut() {
                *o = r + <Poly as Backend<f32>>::ln(total);
            }
        }
    }
}

/// The online pass over a long row: the reference `r` (a block maximum, moved only when a later
/// block's maximum exceeds it by more than [`REBASE`]) and `Σ e^(x_i − r)`. `None` when the row
/// holds `+inf` or nothing above `-inf`: the default kernel handles those.
#[inline(always)]
fn online<K: Kernel>(k: K, x: &[f32]) -> Option<(f32, f32)> {
    let mut r = f32::NEG_INFINITY;
    let mut sums = k.zero();
    let mut blocks = x.chunks(LONG_BLOCK).peekable();
    // A `match`, not `map_or` with a closure: the closure could stay out of line, without the
    // kernel's target features.
    let mut bm = match blocks.peek() {
        Some(b) => k.max(b),
        None => f32::NEG_INFINITY,
    };
    while let Some(blk) = blocks.next() {
        if bm == f32::INFINITY {
            return None;
        }
        if bm > f32::NEG_INFINITY && (r == f32::NEG_INFINITY || bm - r > REBASE) {
            if r > f32::NEG_INFINITY {
                k.scale(&mut sums, exp(r - bm));
            }
            r = bm;
        }
        // A block of `-inf` and NaN before any finite value: its terms are 0 or NaN against
        // any finite reference.
        let rr = if r == f32::NEG_INFINITY { 0.0 } else { r };
        let next = blocks.peek().copied().unwrap_or(&[]);
        bm = k.sum_exp(&mut sums, blk, rr, None, next);
    }
    if r == f32::NEG_INFINITY {
        return None;
    }
    Some((r, k.finish(sums)))
}

/// The portable reference [`Kernel`]: plain loops over `[f32; 16]` chunks, with [`fma`] in
/// software.
#[derive(Clone, Copy)]
pub(crate) struct Portable;

impl Kernel for Portable {
    type Sums = Totals<f32, CHUNK>;

    fn zero(self) -> Self::Sums {
        Totals::ZERO
    }

    fn max(self, x: &[f32]) -> f32 {
        let mut m = [f32::NEG_INFINITY; CHUNK];
        for c in padded_chunks(x) {
            for (m, &v) in m.iter_mut().zip(&c) {
                *m = maxf(v, *m);
            }
        }
        tree(m, maxf)
    }

    fn sum_exp(
        self,
        sums: &mut Self::Sums,
        x: &[f32],
        r: f32,
        mut y: Option<&mut [f32]>,
        next: &[f32],
    ) -> f32 {
        let mut part = [0.0f32; CHUNK];
        let mut k = 0;
        let total = x.len().div_ceil(CHUNK);
        for (i, ch) in padded_chunks(x).enumerate() {
            let e: [f32; CHUNK] = core::array::from_fn(|j| exp(ch[j] - r));
            if let Some(out) = y.as_deref_mut().and_then(|y| y.get_mut(i * CHUNK..)) {
                for (o, &e) in out.iter_mut().zip(&e) {
                    *o = e;
                }
            }
            for (p, &e) in part.iter_mut().zip(&e) {
                *p += e;
            }
            k += 1;
            if k == BLOCK_CHUNKS || i + 1 == total {
                sums.fold(&part);
                part = [0.0; CHUNK];
                k = 0;
            }
        }
        self.max(next)
    }

    fn scale(self, sums: &mut Self::Sums, f: f32) {
        sums.scale(f);
    }

    fn finish(self, sums: Self::Sums) -> f32 {
        // `Totals::finish` gives `hi = fl(total + compensation)` (and `hi` alone when it is not
        // finite, the same value): the rounding once of the kernels.
        sums.finish().0
    }

    fn mul(self, y: &mut [f32], f: f32) {
        for o in y.iter_mut() {
            *o *= f;
        }
    }

    fn exp_mul(self, x: &[f32], y: &mut [f32], r: f32, f: f32) {
        for (o, &v) in y.iter_mut().zip(x) {
            *o = exp(v - r) * f;
        }
    }

    fn log_out(self, x: &[f32], y: &mut [f32], r: f32, l: f32) {
        for (o, &v) in y.iter_mut().zip(x) {
            *o = (v - r) - l;
        }
    }
}

/// A row whose maximum is `+inf` or `-inf`: the default kernels give the crate's edge
/// semantics.
pub(crate) fn fallback(op: Op, x: &[f32], y: &mut [f32]) {
    let src = Plain(x);
    match op {
        Op::Softmax => op::softmax::<f32, Poly, _>(OutOfPlace { src, out: y }, Unit),
        Op::LogSoftmax => op::log_softmax::<f32, Poly, _, _>(OutOfPlace { src, out: y }, Unit),
        Op::LogSumExp => {
            if let Some(o) = y.first_mut() {
                *o = op::logsumexp::<f32, Poly, _, _>(src, Unit);
            }
        }
    }
}
