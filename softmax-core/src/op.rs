//! One row of each op, generic over how the row is loaded (mask), how the temperature enters and
//! where the output goes. The public functions (single row, batched rows, arrays) are thin
//! wrappers that validate lengths once and call these.
//!
//! Each row function is the unit of code. On targets with one level of machine code it is
//! `#[inline(never)]`, so it is instantiated once per (element type, backend, mask kind,
//! temperature mode) and shared by every entry point that uses that combination, while
//! everything below it (the skeleton's loops and the exp) is inlined into it; inlining these
//! instead multiplied code size by the number of call sites and stacked the frames of all
//! variants of a `rows::` function. On x86_64 release builds, which dispatch at run time
//! ([`simd`](crate::simd)), it is `#[inline(always)]` instead: each entry point runs its whole
//! batch inside one dispatched closure, and only code inlined into that closure is compiled for
//! the chosen level.

#![forbid(unsafe_code)]

use crate::backend::{Backend, Poly};
use crate::error::Error;
use crate::float::Float;
use crate::float::{select, two_sum};
use crate::kernel::with_scale;
use crate::kernel::{self, InPlace, Io, Load, OutOfPlace, Scale, LANES};
use crate::lse::LogSumExp;

/// softmax: max pass, one exp pass that stores `e^d` and sums it, one scaling pass.
#[cfg_attr(softmax_dispatch, inline(always))]
#[cfg_attr(not(softmax_dispatch), inline(never))]
pub(crate) fn softmax<F: Float, B: Backend<F>, S: Scale<F>>(mut io: impl Io<F>, s: S) {
    let sc = kernel::scan(io.src());
    if !sc.max.is_finite() || sc.nan {
        fill_limit(&mut io, sc);
        return;
    }
    let m = sc.max;
    // Σ of the terms e^d·2^TOP: its inverse scales them straight to probabilities.
    let mut sum = kernel::TermSum::new();
    io.map_sum(
        #[inline(always)]
        |c| kernel::term_chunk::<F, B, S, { kernel::EXP_W }>(s, m, c),
        #[inline(always)]
        |x| kernel::term::<F, B, S>(s, m, x),
        #[inline(always)]
        |block| sum.add(block),
    );
    let (hi, lo) = sum.finish();
    let inv = kernel::inv_pair(hi, lo);
    io.update(|y| y * inv);
}

/// The first passes of two rows at once, for [`softmax_pair`] and [`log_softmax_pair`] (which
/// `rows` calls for unmasked rows only: through a mask's load the pairs ran slower than single
/// rows, `rows::pair_limit`; the kernels stay generic over the load): both max
/// passes, then the terms `e^d·2^TOP` of both rows stored chunk by chunk, interleaved. Returns
/// the two maxima, or `None` (nothing stored) unless both rows have a finite maximum, no NaN,
/// and the same length, a multiple of [`kernel::TERM_LANES`] up to [`kernel::TERM_BLOCK`] (one
/// block, no ragged end), on a target whose exp chunks are half a lane row (vector targets).
///
/// Each row's terms are those of its single-row pass (the same operations on the same chunks),
/// so the pair kernels give the single-row kernels' bits; the interleaving only gives the core
/// two independent chains where a short row's passes are mostly latency (its lane trees, the
/// exp's dependency chain, a division or a logarithm).
#[inline(always)]
fn pair_terms<F: Float, B: Backend<F>, S: Scale<F>, L: Load<F>>(
    a: &mut OutOfPlace<'_, F, L>,
    b: &mut OutOfPlace<'_, F, L>,
    s: S,
) -> Option<(F, F)> {
    /// Whether the row has a finite maximum and no NaN (the exp passes' case).
    #[inline(always)]
    fn finite<F: Float>(sc: &kernel::Scan<F>) -> bool {
        sc.max.is_finite() && !sc.nan
    }
    const W: usize = kernel::EXP_W;
    const T: usize = kernel::TERM_LANES;
    let n = a.out.len();
    if 2 * W != T || !n.is_multiple_of(T) || n > kernel::TERM_BLOCK || b.out.len() != n {
        return None;
    }
    let (sa, sb) = (kernel::scan(a.src), kernel::scan(b.src));
    if !finite(&sa) || !finite(&sb) {
        return None;
    }
    let (ma, mb) = (sa.max, sb.max);
    let rows_a = a
        .out
        .as_chunks_mut::<T>()
        .0
        .iter_mut()
        .zip(a.src.chunks_of::<T>());
    let rows_b = b
        .out
        .as_chunks_mut::<T>()
        .0
        .iter_mut()
        .zip(b.src.chunks_of::<T>());
    for ((oa, xa), (ob, xb)) in rows_a.zip(rows_b) {
        let halves_a = oa
            .as_chunks_mut::<W>()
            .0
            .iter_mut()
            .zip(xa.as_chunks::<W>().0);
        let halves_b = ob
            .as_chunks_mut::<W>()
            .0
            .iter_mut()
            .zip(xb.as_chunks::<W>().0);
        for ((oa, xa), (ob, xb)) in halves_a.zip(halves_b) {
            *oa = kernel::term_chunk::<F, B, S, W>(s, ma, xa);
            *ob = kernel::term_chunk::<F, B, S, W>(s, mb, xb);
        }
    }
    Some((ma, mb))
}

/// [`softmax`] of two rows at once ([`pair_terms`]; the same bits as two calls of [`softmax`],
/// which is what a pair outside `pair_terms`' case runs).
#[inline(always)]
pub(crate) fn softmax_pair<F: Float, B: Backend<F>, S: Scale<F>, L: Load<F>>(
    mut a: OutOfPlace<'_, F, L>,
    mut b: OutOfPlace<'_, F, L>,
    s: S,
) {
    if pair_terms::<F, B, S, L>(&mut a, &mut b, s).is_none() {
        softmax::<F, B, S>(a, s);
        softmax::<F, B, S>(b, s);
        return;
    }
    /// The row's `1/Σ` from its stored terms, as [`softmax`] sums them (one block).
    #[inline(always)]
    fn inv<F: Float>(out: &[F]) -> F {
        let mut sum = kernel::TermSum::new();
        sum.add(out);
        let (hi, lo) = sum.finish();
        kernel::inv_pair(hi, lo)
    }
    let (ia, ib) = (inv(a.out), inv(b.out));
    for (ya, yb) in a.out.iter_mut().zip(b.out.iter_mut()) {
        *ya *= ia;
        *yb *= ib;
    }
}

/// [`log_softmax`] of two rows at once ([`pair_terms`]; the same bits as two calls of
/// [`log_softmax`], which is what a pair outside `pair_terms`' case runs).
#[inline(always)]
pub(crate) fn log_softmax_pair<F: Float, B: Backend<F>, S: Scale<F>, L: Load<F>>(
    mut a: OutOfPlace<'_, F, L>,
    mut b: OutOfPlace<'_, F, L>,
    s: S,
) {
    let Some((ma, mb)) = pair_terms::<F, B, S, L>(&mut a, &mut b, s) else {
        log_softmax::<F, B, S, _>(a, s);
        log_softmax::<F, B, S, _>(b, s);
        return;
    };
    /// The row's normaliser from its stored terms, as [`log_softmax`] sums them (one block,
    /// the maxima apart).
    #[inline(always)]
    fn lse<F: Float, B: Backend<F>>(out: &[F], m: F) -> LogSumExp<F, B> {
        let mut sum = kernel::SplitSum::new();
        sum.add(out);
        let (hi, lo) = sum.finish();
        LogSumExp::<F, B>::from_parts(m, hi, lo)
    }
    let (sta, stb) = (lse::<F, B>(a.out, ma), lse::<F, B>(b.out, mb));
    let (la, lb) = (sta.ln_sum(), stb.ln_sum());
    let rows = a.out.iter_mut().zip(a.src.iter());
    for ((ya, xa), (yb, xb)) in rows.zip(b.out.iter_mut().zip(b.src.iter())) {
        *ya = sta.log_prob_scaled(s, xa, la);
        *yb = stb.log_prob_scaled(s, xb, lb);
    }
}

/// softmax (τ = 1) that also returns the row's logsumexp: the same passes as [`softmax`], with
/// the maxima counted apart in the sum ([`kernel::SplitSum`]) so the logsumexp keeps the relative
/// precision of `ln(1 + rest)` when the other terms are tiny (a confidently classified row).
#[inline(always)]
pub(crate) fn softmax_lse<F: Float, B: Backend<F>>(io: impl Io<F>) -> F {
    softmax_lse_scaled::<F, B>(io, None, usize::MAX).0
}

/// [`softmax_lse`] whose last pass also multiplies each probability by `scale` if given (rounded,
/// then multiplied: the bits of `softmax_lse` followed by `y_i *= scale`, in one pass instead of
/// two), returning the logsumexp and the probability at `at` before the scaling (NaN if `at` is
/// out of range). One function for both, so that a caller of both (cross-entropy) holds one copy
/// of the kernel on a microcontroller.
#[cfg_attr(softmax_dispatch, inline(always))]
#[cfg_attr(not(softmax_dispatch), inline(never))]
pub(crate) fn softmax_lse_scaled<F: Float, B: Backend<F>>(
    mut io: impl Io<F>,
    scale: Option<F>,
    at: usize,
) -> (F, F) {
    let sc = kernel::scan(io.src());
    if !sc.max.is_finite() || sc.nan {
        fill_limit(&mut io, sc);
        let p = io.out_at(at);
        if let Some(s) = scale {
            io.update(|y| y * s);
        }
        return (select(sc.nan, F::NAN, sc.max), p);
    }
    let st = stored_lse::<F, B, _>(&mut io, kernel::Unit, sc.max);
    let inv = st.inv_sum() * kernel::untop::<F>();
    let p = io.out_at(at) * inv;
    match scale {
        Some(s) => io.update(|y| (y * inv) * s),
        None => io.update(|y| y * inv),
    }
    (st.finish(), p)
}

/// The terms `e^(d)·2^TOP` of a row with the finite maximum `m`, stored in the output and summed
/// there with the maxima apart ([`kernel::SplitSum`]): the row's normaliser, as a state.
#[inline(always)]
fn stored_lse<F: Float, B: Backend<F>, S: Scale<F>>(
    io: &mut impl Io<F>,
    s: S,
    m: F,
) -> LogSumExp<F, B> {
    let mut sum = kernel::SplitSum::new();
    io.map_sum(
        #[inline(always)]
        |c| kernel::term_chunk::<F, B, S, { kernel::EXP_W }>(s, m, c),
        #[inline(always)]
        |x| kernel::term::<F, B, S>(s, m, x),
        #[inline(always)]
        |block| sum.add(block),
    );
    let (hi, lo) = sum.finish();
    LogSumExp::<F, B>::from_parts(m, hi, lo)
}

/// The distribution of a row without a finite maximum, which needs no exp: NaN everywhere if
/// the row has a NaN, zeros if every entry is `-inf`, else the limit that shares the mass
/// evenly among the `+inf` entries.
#[cfg_attr(softmax_dispatch, inline(always))]
#[cfg_attr(not(softmax_dispatch), inline(never))]
fn fill_limit<F: Float>(io: &mut impl Io<F>, sc: kernel::Scan<F>) {
    let fill = select(sc.nan, F::NAN, F::ZERO);
    if sc.nan || sc.max == F::NEG_INFINITY {
        io.map(|_| fill);
    } else {
        let inv = F::ONE / F::from_usize(kernel::count_pos_inf(io.src()));
        io.map(|x| select(x == F::INFINITY, inv, F::ZERO));
    }
}

/// log_softmax: the normaliser (two passes), then `(x − max) − ln Σ` per entry
/// ([`Scale::log_prob`]; with a temperature, and on the long-row path against its reference,
/// `(d − ln Σ) + d_lo` from the exact difference).
///
/// Out of place, the terms of the normaliser are stored in the output first and summed from
/// there (the same vectorised pass as softmax's), the maxima counted apart; in place, and for
/// rows without a finite maximum, [`LogSumExp::of_row`] sums them without storing, in the same
/// lanes and order (the same bits).
#[cfg_attr(softmax_dispatch, inline(always))]
#[cfg_attr(not(softmax_dispatch), inline(never))]
pub(crate) fn log_softmax<F: Float, B: Backend<F>, S: Scale<F>, I: Io<F>>(mut io: I, s: S) {
    if io.src().len() >= kernel::LONG_ROW {
        // Two passes: the online max-and-sum, then `(d − ln Σ) + d_lo` against its reference.
        if let Some((r, hi, lo)) = kernel::online_sum::<F, B, _, S>(io.src(), s) {
            let u = kernel::untop::<F>();
            let st = LogSumExp::<F, B>::from_parts(r, hi * u, lo * u);
            let l = st.ln_sum();
            // The reference `r` may lie below values of the row: the exact difference.
            io.map(|x| st.log_prob_exact(s, x, l));
            return;
        }
    }
    if I::SCRATCH_OUT {
        let sc = kernel::scan(io.src());
        if sc.max.is_finite() && !sc.nan {
            let st = stored_lse::<F, B, S>(&mut io, s, sc.max);
            let l = st.ln_sum();
            io.map(|x| st.log_prob_scaled(s, x, l));
            return;
        }
    }
    let st = LogSumExp::<F, B>::of_row(io.src(), s);
    let l = st.ln_sum();
    io.map(|x| st.log_prob_scaled(s, x, l));
}

/// logsumexp of the row.
#[cfg_attr(softmax_dispatch, inline(always))]
#[cfg_attr(not(softmax_dispatch), inline(never))]
pub(crate) fn logsumexp<F: Float, B: Backend<F>, L: Load<F>, S: Scale<F>>(src: L, s: S) -> F {
    let st = LogSumExp::<F, B>::of_row(src, s);
    if st.max().is_finite() {
        s.lse(st.max(), st.ln_sum())
    } else {
        st.max()
    }
}

/// Shannon entropy (nats) of softmax(x/τ): `H = ln Σ e^d − (Σ e^d·d)/(Σ e^d)`, i.e.
/// lse − E_p[x/τ] with both terms shifted by the max so neither cancels (both are >= 0).
#[cfg_attr(softmax_dispatch, inline(always))]
#[cfg_attr(not(softmax_dispatch), inline(never))]
pub(crate) fn entropy<F: Float, B: Backend<F>, L: Load<F>, S: Scale<F>>(src: L, s: S) -> F {
    let sc = kernel::scan(src);
    if !sc.max.is_finite() || sc.nan {
        let st = LogSumExp::<F, B>::of_row(src, s);
        return if st.max() == F::INFINITY {
            st.ln_sum() // ln k
        } else if st.max() == F::NEG_INFINITY {
            F::ZERO
        } else {
            F::NAN
        };
    }
    let m = sc.max;
    let [(e_hi, e_lo), (k, _), (ed_hi, ed_lo)] = kernel::sums(
        src.chunks(),
        src.tail(),
        #[inline(always)]
        |c| {
            let [e, k] = kernel::exp_chunk_split::<F, B, S>(s, m, c);
            let mut ed = [F::ZERO; LANES];
            for ((ed, &e), &x) in ed.iter_mut().zip(&e).zip(c) {
                // -d·e^d >= 0; entries with e^d = 0 (d = -inf included) and the maxima (d = 0)
                // contribute 0.
                let d = s.shift(x, m).0;
                *ed = select(e == F::ZERO, F::ZERO, -(d * e));
            }
            [e, k, ed]
        },
    );
    // The terms carry 2^TOP (exact to remove); the maxima were counted apart.
    let u = kernel::untop::<F>();
    let (hi, lo) = two_sum(k, e_hi * u);
    let st = LogSumExp::<F, B>::from_parts(m, hi, lo + e_lo * u);
    st.ln_sum() + ((ed_hi + ed_lo) * u) * st.inv_sum()
}

/// KL(softmax(p/τ) ‖ softmax(q/τ)) = Σ p_i (log p_i − log q_i) over p_i > 0.
///
/// With `log p_i = d_p,i − ln s_p` (shifted logits, each row's own max) this is
/// `Σ p_i (d_p,i − d_q,i) − ln(s_p/s_q)`: the shifts are exact pairs and `ln(s_p/s_q)` is a log1p
/// of the difference of the two compensated sums, so near-identical rows do not suffer the
/// rounding of `ln s_p` and `ln s_q` at magnitude `ln n`. Rows with `+inf` logits or no allowed
/// entry use the limit distributions term by term.
#[cfg_attr(softmax_dispatch, inline(always))]
#[cfg_attr(not(softmax_dispatch), inline(never))]
pub(crate) fn kl<F: Float, B: Backend<F>, L: Load<F>, S: Scale<F>>(p: L, q: L, s: S) -> F {
    let sp = LogSumExp::<F, B>::of_row(p, s);
    let sq = LogSumExp::<F, B>::of_row(q, s);
    if sp.max().is_nan() || sq.max().is_nan() {
        return F::NAN;
    }
    let inv_p = sp.inv_sum();
    let mq = sq.max();
    // `−w·d_q/2` for a weight `w` and a finite q logit `y` whose shifted value
    // `d_q = (y − m_q)/τ` overflowed (a row spanning more than the float range): `1/τ` goes on
    // the weight and the difference is halved, so neither overflows unless the product does.
    let wide = |w: F, y: F, mq: F| s.scale(w) * (mq * F::HALF - y * F::HALF);
    if sp.max().is_finite() && mq.is_finite() {
        let mp = sp.max();
        // Each term is summed at half scale (`e/2`), so terms near MAX do not overflow before
        // the normalisation by 1/s_p.
        let terms = sum_pairs(p, q, |x, y| {
            let (hp, lp) = s.shift(x, mp);
            let (hq, lq) = s.shift(y, mq);
            let e = B::exp_shifted(hp, lp);
            let e2 = e * F::HALF;
            let t = select(
                hq == F::NEG_INFINITY,
                e2 * hp + wide(e, y, mq),
                e2 * ((hp - hq) + (lp - lq)),
            );
            // p_i > 0 exactly when its logit is not -inf (even if e^d underflows); q_i = 0
            // exactly when its logit is -inf.
            let t = select(y == F::NEG_INFINITY, F::INFINITY, t);
            select(
                x == F::NEG_INFINITY || e == F::ZERO && t != F::INFINITY,
                F::ZERO,
                t,
            )
        });
        let (sp_hi, sp_lo) = sp.sum_parts();
        let (sq_hi, sq_lo) = sq.sum_parts();
        // ln(s_p/s_q) = log1p((s_p − s_q)/s_q), the difference taken on the compensated sums.
        let diff = (sp_hi - sq_hi) + (sp_lo - sq_lo);
        let ln_ratio = kernel::ln_sum::<F, B>(F::ONE, diff / (sq_hi + sq_lo));
        return F::TWO * (terms * inv_p) - ln_ratio;
    }
    let (lp_sum, lq_sum) = (sp.ln_sum(), sq.ln_sum());
    let q_finite = sq.max().is_finite();
    let half = sum_pairs(p, q, |x, y| {
        let lp = sp.log_prob_scaled(s, x, lp_sum);
        let lq = sq.log_prob_scaled(s, y, lq_sum);
        let pr = sp.prob_scaled(s, x, inv_p);
        let pr2 = pr * F::HALF;
        // log q_i = (y − m_q)/τ − ln s_q overflowed for a finite logit: take it apart.
        let overflowed = lq == F::NEG_INFINITY && q_finite && y.is_finite();
        let t = select(
            overflowed,
            pr2 * lp + wide(pr, y, mq) + pr2 * lq_sum,
            pr2 * (lp - lq),
        );
        let t = select(lq == F::NEG_INFINITY && !overflowed, F::INFINITY, t);
        select(lp == F::NEG_INFINITY, F::ZERO, t)
    });
    F::TWO * half
}

/// Compensated `Σ f(p_i, q_i)` over two rows read through loads of equal length.
#[inline(always)]
fn sum_pairs<F: Float, L: Load<F>>(p: L, q: L, f: impl Fn(F, F) -> F) -> F {
    let [(hi, lo)] = kernel::sums(
        p.chunks().zip(q.chunks()),
        p.tail().zip(q.tail()),
        #[inline(always)]
        |(pc, qc)| [core::array::from_fn(|i| f(pc[i], qc[i]))],
    );
    hi + lo
}

/// sparsemax: Michelot's fixed point for the threshold (no sort, no scratch), then
/// `max(d − thr, 0)`.
#[cfg_attr(softmax_dispatch, inline(always))]
#[cfg_attr(not(softmax_dispatch), inline(never))]
pub(crate) fn sparsemax<F: Float, S: Scale<F>>(mut io: impl Io<F>, s: S) {
    let sc = kernel::scan(io.src());
    if sc.nan || !sc.max.is_finite() {
        fill_limit(&mut io, sc);
        return;
    }
    let m = sc.max;
    let thr = sparsemax_threshold(io.src(), s, m);
    io.map(|x| {
        let d = s.shift(x, m).0;
        select(d > thr, d - thr, F::ZERO)
    });
}

/// The sparsemax threshold τ* (in shifted units, so τ* ∈ [−1, 0)): the support is
/// `{d > τ*}` and `τ* = (Σ_support d − 1)/|support|`. Michelot (1986): starting from a superset
/// of the support, recomputing τ* and the set {d > τ*} shrinks the set monotonically to the
/// support, so at most `n` rounds; in practice a handful.
#[inline(always)]
fn sparsemax_threshold<F: Float, L: Load<F>, S: Scale<F>>(src: L, s: S, m: F) -> F {
    // The max entry has d = 0 and τ* >= −1, so {d > −1} contains the support.
    let mut thr = -F::ONE;
    let mut prev = usize::MAX;
    // Rounds are bounded by the row length: the support shrinks strictly or the loop stops.
    loop {
        let [(s_hi, s_lo), (k_hi, k_lo)] = kernel::sums(
            src.chunks(),
            src.tail(),
            #[inline(always)]
            |c| {
                let mut v = [F::ZERO; LANES];
                let mut n = [F::ZERO; LANES];
                for ((v, n), &x) in v.iter_mut().zip(n.iter_mut()).zip(c) {
                    let d = s.shift(x, m).0;
                    let inside = d > thr;
                    *v = select(inside, d, F::ZERO);
                    *n = select(inside, F::ONE, F::ZERO);
                }
                [v, n]
            },
        );
        // The count is an exact integer in hi + lo (exact again in f64); k >= 1 always (the
        // max entry). The float-to-int cast saturates, so no overflow is possible.
        let k = (k_hi.to_f64() + k_lo.to_f64()) as usize;
        if k >= prev || k == 0 {
            return thr;
        }
        prev = k;
        thr = ((s_hi - F::ONE) + s_lo) / (k_hi + k_lo);
    }
}

/// Compensated reduction of `f(a_i, b_i)` over two equal-length rows.
#[inline(always)]
pub(crate) fn sum2<F: Float>(a: &[F], b: &[F], f: impl Fn(F, F) -> F) -> F {
    let (hi, lo) = sum2_parts(a, b, f);
    hi + lo
}

/// [`sum2`] as the unrounded pair `hi + lo`.
#[inline(always)]
pub(crate) fn sum2_parts<F: Float>(a: &[F], b: &[F], f: impl Fn(F, F) -> F) -> (F, F) {
    let (ac, at) = a.as_chunks::<LANES>();
    let (bc, bt) = b.as_chunks::<LANES>();
    let tail = (!at.is_empty()).then(|| {
        let mut t = [F::ZERO; LANES];
        for ((t, &a), &b) in t.iter_mut().zip(at).zip(bt) {
            *t = f(a, b);
        }
        t
    });
    let mapped = ac
        .iter()
        .zip(bc)
        .map(|(a, b)| core::array::from_fn(|i| f(a[i], b[i])));
    let [pair] = kernel::sums(
        mapped,
        tail,
        #[inline(always)]
        |v: &[F; LANES]| [*v],
    );
    pair
}

/// Elementwise `dx_i = f(a_i, b_i)` over three equal-length rows.
#[inline(always)]
pub(crate) fn map2<F: Float>(a: &[F], b: &[F], out: &mut [F], f: impl Fn(F, F) -> F) {
    for ((o, &a), &b) in out.iter_mut().zip(a).zip(b) {
        *o = f(a, b);
    }
}

/// softmax VJP from the output `y`: `dx = y ⊙ (dy − ⟨y, dy⟩) / τ`. Entries with `y = 0`
/// (masked, `-inf`, or underflowed) are constants: `dx = 0` and their `dy` is not read.
#[cfg_attr(softmax_dispatch, inline(always))]
#[cfg_attr(not(softmax_dispatch), inline(never))]
pub(crate) fn softmax_vjp<F: Float>(y: &[F], dy: &[F], dx: &mut [F], tau: F) {
    let (hi, lo) = sum2_parts(y, dy, |y, g| select(y == F::ZERO, F::ZERO, y * g));
    // `(g − hi) − lo`: when `g` nearly cancels the dot product, `g − hi` is exact and the tail
    // still counts (collapsing `hi + lo` first would lose it).
    map2(y, dy, dx, |y, g| {
        select(y == F::ZERO, F::ZERO, y * ((g - hi) - lo) / tau)
    });
}

/// log_softmax VJP from the output `y`: `dx = (dy − e^y·Σdy) / τ`, with `-inf` entries
/// (masked or `-inf` logits) constants: `dx = 0` and their `dy` not in the sum.
#[cfg_attr(softmax_dispatch, inline(always))]
#[cfg_attr(not(softmax_dispatch), inline(never))]
pub(crate) fn log_softmax_vjp<F: Float, B: Backend<F>>(y: &[F], dy: &[F], dx: &mut [F], tau: F) {
    let total = sum2(y, dy, |y, g| select(y == F::NEG_INFINITY, F::ZERO, g));
    map2(y, dy, dx, |y, g| {
        select(y == F::NEG_INFINITY, F::ZERO, (g - B::exp(y) * total) / tau)
    });
}

/// log_softmax VJP from the logits: entries that are masked or
/// `-inf` are constants (`dx = 0`, their `dy` not summed); every other entry takes part, also one
/// whose log-probability overflowed to `-inf` (a row spanning more than the float range) and the
/// finite entries of a row with `+inf` ones (limit distribution): `dx = (dy − p·Σdy)/τ`. A NaN
/// row gives NaN everywhere.
#[cfg_attr(softmax_dispatch, inline(always))]
#[cfg_attr(not(softmax_dispatch), inline(never))]
pub(crate) fn log_softmax_vjp_logits<F: Float, B: Backend<F>, L: Load<F>, S: Scale<F>>(
    src: L,
    s: S,
    dy: &[F],
    dx: &mut [F],
    tau: F,
) {
    let st = LogSumExp::<F, B>::of_row(src, s);
    if st.max().is_nan() {
        dx.fill(F::NAN);
        return;
    }
    let inv = st.inv_sum();
    let (dc, dt) = dy.as_chunks::<LANES>();
    let live = |x: F, g: F| select(x == F::NEG_INFINITY, F::ZERO, g);
    let mapped = src
        .chunks()
        .zip(dc)
        .map(|(x, g)| core::array::from_fn(|i| live(x[i], g[i])));
    let tail = src.tail().map(|x| {
        let mut t = [F::ZERO; LANES];
        for ((t, &x), &g) in t.iter_mut().zip(&x).zip(dt) {
            *t = live(x, g);
        }
        t
    });
    let [(hi, lo)] = kernel::sums(
        mapped,
        tail,
        #[inline(always)]
        |v: &[F; LANES]| [*v],
    );
    let total = hi + lo;
    for ((o, x), &g) in dx.iter_mut().zip(src.iter()).zip(dy) {
        let p = st.prob_scaled(s, x, inv);
        *o = select(x == F::NEG_INFINITY, F::ZERO, (g - p * total) / tau);
    }
}

/// sparsemax VJP from the output `y`: on the support `S = {y > 0}`,
/// `dx = (dy − mean_S dy) / τ`; 0 elsewhere. A NaN row gives NaN.
#[cfg_attr(softmax_dispatch, inline(always))]
#[cfg_attr(not(softmax_dispatch), inline(never))]
pub(crate) fn sparsemax_vjp<F: Float>(y: &[F], dy: &[F], dx: &mut [F], tau: F) {
    if y.iter().any(|v| v.is_nan()) {
        dx.iter_mut().for_each(|d| *d = F::NAN);
        return;
    }
    let total = sum2(y, dy, |y, g| select(y > F::ZERO, g, F::ZERO));
    let k = y.iter().filter(|&&v| v > F::ZERO).count();
    let mean = total / F::from_usize(k);
    map2(y, dy, dx, |y, g| {
        select(y > F::ZERO, (g - mean) / tau, F::ZERO)
    });
}

/// Index of the first maximum; a NaN counts as larger than everything (PyTorch `argmax`).
/// `None` for an empty row.
#[inline]
pub(crate) fn argmax<F: Float>(x: &[F]) -> Option<usize> {
    argmax_iter(x.iter().copied())
}

/// [`argmax`] over values from an iterator.
#[inline]
pub(crate) fn argmax_iter<F: Float>(x: impl Iterator<Item = F>) -> Option<usize> {
    let mut best: Option<(usize, F)> = None;
    for (i, v) in x.enumerate() {
        if v.is_nan() {
            return Some(i);
        }
        match best {
            Some((_, b)) if v <= b => {}
            _ => best = Some((i, v)),
        }
    }
    best.map(|(i, _)| i)
}

/// Hard max of a row, overwriting it: the one-hot of [`argmax`]; a NaN row gives all NaN, an
/// all-`-inf` row zeros.
#[cfg_attr(softmax_dispatch, inline(always))]
#[cfg_attr(not(softmax_dispatch), inline(never))]
pub(crate) fn hardmax_in_place<F: Float>(y: &mut [F]) {
    let idx = argmax(y);
    let nan = idx.and_then(|i| y.get(i)).is_some_and(|v| v.is_nan());
    let empty = y.iter().all(|&v| v == F::NEG_INFINITY);
    for (i, o) in y.iter_mut().enumerate() {
        *o = if nan {
            F::NAN
        } else if Some(i) == idx && !empty {
            F::ONE
        } else {
            F::ZERO
        };
    }
}

/// One row of `hardmax`: `y` gets the one-hot of `x`'s [`argmax`] (lengths already checked).
#[inline]
pub(crate) fn hardmax_row<F: Float>(x: &[F], y: &mut [F]) {
    for (o, &v) in y.iter_mut().zip(x) {
        *o = v;
    }
    hardmax_in_place(y);
}

/// Gumbel-softmax of a row: `y = softmax((x + g)/τ)`, `g_i = −ln(−ln u_i)`, or with `hard` the
/// one-hot of `argmax(x + g)` itself (the exact Gumbel-max sample, not the one-hot of the
/// rounded soft output, which can tie at large τ). The noise was validated by the caller.
///
/// The noise is added to the shifted logits, not to `x`: `x + g` would round `g` at the
/// magnitude of `x` (at `x = 1e8` in f32 to a multiple of 8), biasing the sample, and the result
/// would change when the row is shifted. For τ <= 1 the logits are `(x − max) + g`, then softmax
/// at τ (which shifts by their max exactly before dividing; an `x − max` that overflows has an
/// overflowing quotient too). For τ > 1 they are `(x − max)/τ + g/τ`, the shift taken as every
/// kernel takes it, so a row spanning more than the float range keeps its finite quotients.
/// With `k` entries at `+inf` the limit is taken: those entries have shifted logit 0, the others
/// `-inf`, so the sample is uniform among them. A NaN row gives NaN; a row with no allowed entry
/// zeros.
#[cfg_attr(softmax_dispatch, inline(always))]
#[cfg_attr(not(softmax_dispatch), inline(never))]
pub(crate) fn gumbel<F: Float, B: Backend<F>, L: Load<F>, S: Scale<F>>(
    src: L,
    uniform: &[F],
    hard: bool,
    y: &mut [F],
    s: S,
) {
    let sc = kernel::scan(src);
    if sc.nan {
        y.fill(F::NAN);
        return;
    }
    let m = sc.max;
    let pre = s.above_one();
    for ((o, x), &u) in y.iter_mut().zip(src.iter()).zip(uniform) {
        let g = gumbel_noise(u);
        *o = if !m.is_finite() {
            // +inf: the +inf entries share the mass; -inf: nothing is allowed.
            select(m == F::INFINITY && x == F::INFINITY, g, F::NEG_INFINITY)
        } else if pre {
            let (hi, lo) = s.shift(x, m);
            select(hi == F::NEG_INFINITY, hi, hi + (s.scale(g) + lo))
        } else {
            (x - m) + g
        };
    }
    if hard {
        hardmax_in_place(y);
    } else if pre && m.is_finite() {
        softmax::<F, B, _>(InPlace(y), kernel::Unit);
    } else {
        softmax::<F, B, S>(InPlace(y), s);
    }
}

/// Standard Gumbel noise `−ln(−ln u)` from `u` in (0, 1), always with this crate's own `ln`
/// ([`Poly`], <= 1 ULP) whatever backend the caller picked: near `u → 1` the inner
/// `ln u ≈ u − 1` must be accurate relative to itself, which an approximate `ln` with an
/// absolute error bound is not (it would bias the sampled distribution). The conversions through
/// f64 are exact both ways for an `f32` value.
#[inline(always)]
fn gumbel_noise<F: Float>(u: F) -> F {
    if core::mem::size_of::<F>() == 4 {
        let u = u.to_f64() as f32;
        let g = -<Poly as Backend<f32>>::ln(-<Poly as Backend<f32>>::ln(u));
        F::from_f64(f64::from(g))
    } else {
        let u = u.to_f64();
        F::from_f64(-<Poly as Backend<f64>>::ln(-<Poly as Backend<f64>>::ln(u)))
    }
}

/// The τ at which the entropy of `softmax(src/τ)` is `target`: bracket by doubling / halving τ
/// from 1, then bisect to adjacent floats; the end of the final bracket whose entropy is closer
/// to `target` is returned. `H` is monotone in τ (`dH/dτ = Var_p(x)/τ³`) and runs from `ln k`
/// (`k` entries tied at the max) to `ln n` (`n` entries not `-inf`).
#[cfg_attr(softmax_dispatch, inline(always))]
#[cfg_attr(not(softmax_dispatch), inline(never))]
pub(crate) fn temperature_for_entropy<F: Float, B: Backend<F>, L: Load<F>>(
    src: L,
    target: F,
) -> Result<F, Error> {
    let sc = kernel::scan(src);
    if sc.nan || !sc.max.is_finite() || !target.is_finite() {
        return Err(Error::EntropyOutOfRange);
    }
    let ties = src.iter().filter(|&v| v == sc.max).count();
    let finite = src.iter().filter(|&v| v != F::NEG_INFINITY).count();
    let (h_min, h_max) = (B::ln(F::from_usize(ties)), B::ln(F::from_usize(finite)));
    if !(target > h_min && target < h_max) {
        return Err(Error::EntropyOutOfRange);
    }
    let h = |tau: F| with_scale!(tau, |s| entropy::<F, B, L, _>(src, s));
    // Bracket: H(lo) < target <= H(hi).
    let (mut lo, mut hi) = (F::ONE, F::ONE);
    if h(F::ONE) < target {
        loop {
            // Doubling from 1 skips (2^127, MAX] in f32; try MAX itself before giving up.
            hi = if hi == F::MAX {
                return Err(Error::EntropyOutOfRange);
            } else if (hi * F::TWO).is_finite() {
                hi * F::TWO
            } else {
                F::MAX
            };
            if h(hi) >= target {
                break;
            }
            lo = hi;
        }
    } else {
        loop {
            lo *= F::HALF;
            if lo == F::ZERO {
                return Err(Error::EntropyOutOfRange);
            }
            if h(lo) < target {
                break;
            }
            hi = lo;
        }
    }
    // Bisect until the bracket is two adjacent floats (at most ~mantissa bits rounds).
    for _ in 0..200 {
        let mid = lo + (hi - lo) * F::HALF;
        if mid <= lo || mid >= hi {
            break;
        }
        if h(mid) < target {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    Ok(if (h(lo) - target).abs() < (h(hi) - target).abs() {
        lo
    } else {
        hi
    })
}
