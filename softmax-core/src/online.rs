//! The online softmax step over blocks of scores: what attention (and any consumer that
//! accumulates weighted values) keeps per query.
//!
//! For each block of scores the running maximum moves to `m' = max(m, max block)`, the scores
//! are replaced by their weights `e^(s − m')` (computed as every kernel computes them: the shift
//! exact, the exp within 1 ULP), and the running sum becomes `α·sum + Σ weights` with
//! `α = e^(m − m')`. The caller rescales its own accumulators by the same `α` before adding the
//! block's weighted values; at the end it divides by [`OnlineSoftmax::sum`] (or multiplies by
//! [`OnlineSoftmax::inv_sum`]). States over disjoint ranges [`merge`](OnlineSoftmax::merge)
//! (split-K / flash-decoding).

#![forbid(unsafe_code)]

use core::marker::PhantomData;

use crate::backend::Backend;
use crate::float::Float;
use crate::float::{ldexp, select, two_sum};
use crate::kernel::{self, Scale, TermSum, Unit};

/// Running maximum and sum of `e^(s − max)` over the scores seen so far, for the online softmax
/// of attention.
///
/// Special values follow the softmax family: `-inf` scores get weight 0 (masked keys); a state
/// that has seen only `-inf` has sum 0 and [`lse`](Self::lse) `-inf`; `+inf` scores take the
/// limit (every `+inf` score weight 1, every other weight 0, earlier accumulators scaled by 0); a
/// NaN score poisons the state (weights, `α` and results NaN).
///
/// Weights below `2^-92` times the largest weight (f32; `2^-1016` in f64) are returned as 0, and
/// so is an `α` below that: their share of an output is below f32 precision by `2^68` unless
/// their values exceed the others' by as much. [`update_sink`](Self::update_sink) keeps the
/// `α` of a sink logit (which carries no value, so the whole output is rescaled by it). Accuracy (f32): each weight within 1 ULP of `e^(s − m')`; the
/// sum compensated within a block and rounded once per rescale (a few units of roundoff in all
/// for any realistic number of blocks).
///
/// # Examples
///
/// ```
/// use softmax_core::{OnlineSoftmax, backend::Poly};
/// let v = [10.0f32, 20.0, 30.0]; // one value per key
/// let mut st = OnlineSoftmax::new(Poly);
/// let mut acc = 0.0f32;
/// let mut block = [1.0f32, 2.0];
/// let a = st.update(&mut block);
/// acc = acc * a + block[0] * v[0] + block[1] * v[1];
/// let mut block = [3.0f32];
/// let a = st.update(&mut block);
/// acc = acc * a + block[0] * v[2];
/// let out = acc * st.inv_sum(); // Σ softmax([1, 2, 3])_j · v_j
/// assert!((out - 25.752_103).abs() < 1e-4);
/// ```
#[derive(Clone, Copy, Debug)]
pub struct OnlineSoftmax<F, B> {
    /// Running maximum (`-inf` empty, `+inf` in the limit state, NaN poisoned).
    m: F,
    /// `Σ e^(s − m)` as `hi + lo` (the number of `+inf` scores in the limit state).
    hi: F,
    lo: F,
    backend: PhantomData<B>,
}

impl<F: Float, B: Backend<F>> OnlineSoftmax<F, B> {
    /// The empty state.
    ///
    /// # Examples
    ///
    /// ```
    /// use softmax_core::{OnlineSoftmax, backend::Poly};
    /// let st = OnlineSoftmax::<f32, _>::new(Poly);
    /// assert_eq!(st.lse(), f32::NEG_INFINITY);
    /// assert_eq!(st.sum(), 0.0);
    /// ```
    #[inline]
    pub fn new(_backend: B) -> Self {
        OnlineSoftmax {
            m: F::NEG_INFINITY,
            hi: F::ZERO,
            lo: F::ZERO,
            backend: PhantomData,
        }
    }

    fn poisoned() -> Self {
        OnlineSoftmax {
            m: F::NAN,
            hi: F::NAN,
            lo: F::NAN,
            backend: PhantomData,
        }
    }

    /// Folds in a block of scores: replaces each score by its weight `e^(s − m')` relative to the
    /// new running maximum `m'`, adds the weights to the sum, and returns `α = e^(m − m')`, the
    /// factor by which the caller must scale what it accumulated so far (1 when the maximum did
    /// not move, 0 for an empty state).
    ///
    /// # Examples
    ///
    /// ```
    /// use softmax_core::{OnlineSoftmax, backend::Poly};
    /// let mut st = OnlineSoftmax::new(Poly);
    /// let mut b = [0.0f64, f64::NEG_INFINITY];
    /// assert_eq!(st.update(&mut b), 0.0);
    /// assert_eq!(b, [1.0, 0.0]);
    /// let mut b = [2.0f64];
    /// let a = st.update(&mut b);
    /// assert!((a - (-2.0f64).exp()).abs() < 1e-16);
    /// assert_eq!(b, [1.0]);
    /// ```
    #[inline]
    pub fn update(&mut self, scores: &mut [F]) -> F {
        self.step(scores).0
    }

    /// [`update`](Self::update), also returning the exact shift `m − m'` (as `hi + lo`) when
    /// `α` was computed from it, i.e. when both maxima are finite and differ. One copy for
    /// [`update`](Self::update) and [`update_sink`](Self::update_sink) on microcontrollers.
    #[cfg_attr(softmax_dispatch, inline)]
    #[cfg_attr(not(softmax_dispatch), inline(never))]
    fn step(&mut self, scores: &mut [F]) -> (F, Option<(F, F)>) {
        let st = *self;
        let (next, alpha, shift) = crate::simd::exec(
            #[inline(always)]
            || st.update_in(scores),
        );
        *self = next;
        (alpha, shift)
    }

    /// Folds in one more candidate score `z` that carries no value: a sink logit (gpt-oss,
    /// learned attention sinks), which takes part in the normaliser but adds nothing to the
    /// caller's accumulators. Returns the sink's own weight `e^(z − m')` and the rescale `α` of
    /// the accumulators as a [`Rescale`].
    ///
    /// Unlike [`update`](Self::update), whose `α` is 0 below `2^-92` (the keys it drops are
    /// outweighed by the new maximum's own key), this `α` never underflows: when the sink lies
    /// far above every score, the accumulated output is tiny but representable, and
    /// [`Rescale::scale`] applies `α` and the final `1/sum` to it with the power of two last.
    /// Wherever `update(&mut [z])`'s `α` is not 0, this is that `α` (the same bits).
    ///
    /// # Examples
    ///
    /// ```
    /// use softmax_core::{OnlineSoftmax, backend::Poly};
    /// let mut st = OnlineSoftmax::new(Poly);
    /// let mut block = [0.0f32];
    /// st.update(&mut block);
    /// let acc = 3.0f32 * block[0]; // one key, value 3
    /// let (w, r) = st.update_sink(100.0); // a sink 100 above the key
    /// assert_eq!(w, 1.0);
    /// let o = r.scale(acc, st.inv_sum()); // 3·e^-100: far below f32's normal range, not 0
    /// assert!(((o as f64) - 3.0 * (-100f64).exp()).abs() <= 2f64.powi(-149));
    /// assert!(o > 0.0);
    /// ```
    #[inline]
    pub fn update_sink(&mut self, z: F) -> (F, Rescale<F>) {
        let mut s = [z];
        let (alpha, shift) = self.step(&mut s);
        // `update`'s α is exact to rounding unless the backend flushed it to 0 (below 2^-92,
        // where `α·sum` is far below the sink's own term 1, so the sum is right either way);
        // only then do the accumulators need it apart from its power of two.
        let rescale = match shift {
            Some((h, l)) if alpha == F::ZERO => Rescale::exp::<B>(h, l),
            _ => Rescale::of(alpha),
        };
        (s[0], rescale)
    }

    /// The body of [`step`](Self::step).
    #[inline(always)]
    fn update_in(self, scores: &mut [F]) -> (Self, F, Option<(F, F)>) {
        let sc = kernel::scan(kernel::Plain(scores));
        if sc.nan || self.m.is_nan() {
            scores.fill(F::NAN);
            return (Self::poisoned(), F::NAN, None);
        }
        let m_new = select(sc.max > self.m, sc.max, self.m);
        if m_new == F::NEG_INFINITY {
            scores.fill(F::ZERO);
            return (self, F::ONE, None);
        }
        if m_new == F::INFINITY {
            let mut k = 0usize;
            for s in scores.iter_mut() {
                let inf = *s == F::INFINITY;
                k += usize::from(inf);
                *s = select(inf, F::ONE, F::ZERO);
            }
            let (alpha, hi) = if self.m == F::INFINITY {
                (F::ONE, self.hi + F::from_usize(k))
            } else {
                (F::ZERO, F::from_usize(k))
            };
            let next = OnlineSoftmax {
                hi,
                lo: F::ZERO,
                ..self
            };
            return (
                OnlineSoftmax {
                    m: F::INFINITY,
                    ..next
                },
                alpha,
                None,
            );
        }
        // Finite m': α from the exact shift, the weights as in every kernel.
        let (alpha, shift) = self.alpha(m_new);
        let sum = weigh::<F, B>(scores, m_new);
        (self.combine(m_new, alpha, sum.finish()), alpha, shift)
    }

    /// `α = e^(m − m')` for a finite new maximum `m'`, with the exact shift `m − m'` when `α`
    /// was computed from it.
    #[inline(always)]
    fn alpha(&self, m_new: F) -> (F, Option<(F, F)>) {
        if self.m == F::NEG_INFINITY {
            (F::ZERO, None)
        } else if self.m == m_new {
            (F::ONE, None)
        } else {
            let (h, l) = Unit.shift(self.m, m_new);
            (B::exp_pow2(h, l, 0), Some((h, l)))
        }
    }

    /// The state after a block with the finite maximum `m'`, the rescale `alpha` and weights
    /// summing to `bh + bl`.
    #[inline(always)]
    fn combine(self, m_new: F, alpha: F, (bh, bl): (F, F)) -> Self {
        let (h, e) = two_sum(self.hi * alpha, bh);
        let (hi, lo) = two_sum(h, e + (self.lo * alpha + bl));
        OnlineSoftmax {
            m: m_new,
            hi,
            lo,
            backend: PhantomData,
        }
    }

    /// [`update`](Self::update) of up to `R` independent states, each with its own block of
    /// scores (`None` skips a slot); returns each slot's `α` (1 for a skipped slot). The same
    /// bits as [`update`](Self::update) on each in turn, so the same accuracy.
    ///
    /// Faster for several rows (attention's tiles of query rows): the rows go through each step
    /// together (the maxima, then the `α`s, then the weights, then the sums), so that the
    /// dependent chain at the end of one row's update (the sum's lane tree and the rescale of
    /// the running sum) runs beside the next row's instead of after it. On a Zen 4, eight rows
    /// of 128 scores took 0.69–0.70 ns per score against 0.81–0.82 for eight `update`s.
    ///
    /// # Examples
    ///
    /// ```
    /// use softmax_core::{OnlineSoftmax, backend::Poly};
    /// let (mut a, mut b) = (OnlineSoftmax::new(Poly), OnlineSoftmax::new(Poly));
    /// let (mut x, mut y) = ([1.0f32, 2.0], [0.5f32]);
    /// let alphas =
    ///     OnlineSoftmax::update_rows([Some((&mut a, &mut x[..])), None, Some((&mut b, &mut y[..]))]);
    /// assert_eq!(alphas, [0.0, 1.0, 0.0]); // empty states: nothing to rescale
    /// let mut c = OnlineSoftmax::new(Poly);
    /// let mut x2 = [1.0f32, 2.0];
    /// c.update(&mut x2);
    /// assert_eq!((x, a.sum(), a.max()), (x2, c.sum(), c.max()));
    /// ```
    #[inline]
    pub fn update_rows<const R: usize>(rows: [Option<(&mut Self, &mut [F])>; R]) -> [F; R] {
        crate::simd::exec(
            #[inline(always)]
            || Self::update_rows_in(rows),
        )
    }

    /// The body of [`update_rows`](Self::update_rows): [`update_in`](Self::update_in) step by
    /// step across the rows.
    #[inline(always)]
    fn update_rows_in<const R: usize>(rows: [Option<(&mut Self, &mut [F])>; R]) -> [F; R] {
        let mut alphas = [F::ONE; R];
        // The maxima. A row whose block or state holds a NaN or an infinity, or that has seen
        // nothing but `-inf`, takes `update_in` whole (such rows are rare; it scans again).
        let mut live: [Option<(&mut Self, &mut [F], F)>; R] = core::array::from_fn(|_| None);
        for ((row, a), slot) in rows.into_iter().zip(alphas.iter_mut()).zip(live.iter_mut()) {
            let Some((st, s)) = row else {
                continue;
            };
            let sc = kernel::scan(kernel::Plain(&*s));
            let m_new = select(sc.max > st.m, sc.max, st.m);
            if sc.nan || st.m.is_nan() || !m_new.is_finite() {
                let (next, alpha, _) = st.update_in(s);
                *st = next;
                *a = alpha;
            } else {
                *slot = Some((st, s, m_new));
            }
        }
        for (a, slot) in alphas.iter_mut().zip(live.iter()) {
            if let Some((st, _, m_new)) = slot {
                *a = st.alpha(*m_new).0;
            }
        }
        // (`None` for the other slots: zeroing eight sums of 32 lanes each was a measurable
        // part of a one-row call.)
        let mut sums: [Option<TermSum<F>>; R] = core::array::from_fn(|_| None);
        for (sum, slot) in sums.iter_mut().zip(live.iter_mut()) {
            if let Some((_, s, m_new)) = slot {
                *sum = Some(weigh::<F, B>(s, *m_new));
            }
        }
        for ((slot, &a), sum) in live.into_iter().zip(alphas.iter()).zip(sums) {
            if let (Some((st, _, m_new)), Some(sum)) = (slot, sum) {
                *st = st.combine(m_new, a, sum.finish());
            }
        }
        alphas
    }

    /// Combines with a state over other scores, as if this state had seen them too. Returns
    /// `(α_self, α_other)`: the factors for this state's accumulators and for the other's, after
    /// which the caller adds them (`acc = α_self·acc + α_other·acc_other`).
    ///
    /// # Examples
    ///
    /// ```
    /// use softmax_core::{OnlineSoftmax, backend::Poly};
    /// let (mut a, mut b) = (OnlineSoftmax::new(Poly), OnlineSoftmax::new(Poly));
    /// a.update(&mut [1.0f32]);
    /// b.update(&mut [3.0f32]);
    /// let (fa, fb) = a.merge(&b);
    /// assert_eq!(fb, 1.0);
    /// assert!((fa - (-2.0f32).exp()).abs() < 1e-7);
    /// assert!((a.lse() - (1.0f32.exp() + 3.0f32.exp()).ln()).abs() < 1e-6);
    /// ```
    pub fn merge(&mut self, other: &Self) -> (F, F) {
        if self.m.is_nan() || other.m.is_nan() {
            *self = Self::poisoned();
            return (F::NAN, F::NAN);
        }
        let m = select(other.m > self.m, other.m, self.m);
        let factor = |from: F| -> F {
            if from == m {
                F::ONE
            } else if from == F::NEG_INFINITY || m == F::INFINITY {
                F::ZERO
            } else {
                let (h, l) = Unit.shift(from, m);
                B::exp_pow2(h, l, 0)
            }
        };
        let (fa, fb) = if m == F::NEG_INFINITY {
            (F::ONE, F::ONE)
        } else {
            (factor(self.m), factor(other.m))
        };
        let (h, e) = two_sum(self.hi * fa, other.hi * fb);
        let (hi, lo) = two_sum(h, e + (self.lo * fa + other.lo * fb));
        *self = OnlineSoftmax {
            m,
            hi,
            lo,
            backend: PhantomData,
        };
        (fa, fb)
    }

    /// The running maximum (`-inf` when empty, NaN when poisoned).
    ///
    /// # Examples
    ///
    /// ```
    /// use softmax_core::{OnlineSoftmax, backend::Poly};
    /// let mut st = OnlineSoftmax::new(Poly);
    /// st.update(&mut [4.0f32, 9.0]);
    /// assert_eq!(st.max(), 9.0);
    /// ```
    pub fn max(&self) -> F {
        self.m
    }

    /// `Σ e^(s − max)` over every score seen (the number of `+inf` scores in the limit state, 0
    /// when empty).
    ///
    /// # Examples
    ///
    /// ```
    /// use softmax_core::{OnlineSoftmax, backend::Poly};
    /// let mut st = OnlineSoftmax::new(Poly);
    /// st.update(&mut [5.0f64, 5.0]);
    /// assert_eq!(st.sum(), 2.0);
    /// ```
    pub fn sum(&self) -> F {
        self.hi + self.lo
    }

    /// `1/sum` with the compensation folded in; 0 for an empty state (so that an output with no
    /// allowed key comes out as zeros).
    ///
    /// # Examples
    ///
    /// ```
    /// use softmax_core::{OnlineSoftmax, backend::Poly};
    /// let st = OnlineSoftmax::<f32, _>::new(Poly);
    /// assert_eq!(st.inv_sum(), 0.0);
    /// ```
    pub fn inv_sum(&self) -> F {
        if self.hi == F::ZERO {
            F::ZERO
        } else {
            kernel::inv_pair(self.hi, self.lo)
        }
    }

    /// The log-sum-exp of every score seen: `max + ln sum` (`-inf` empty, `+inf` in the limit,
    /// NaN poisoned).
    ///
    /// # Examples
    ///
    /// ```
    /// use softmax_core::{OnlineSoftmax, backend::Poly};
    /// let mut st = OnlineSoftmax::new(Poly);
    /// st.update(&mut [0.0f64, 0.0]);
    /// assert!((st.lse() - core::f64::consts::LN_2).abs() < 1e-16);
    /// ```
    pub fn lse(&self) -> F {
        if self.m.is_finite() {
            self.m + kernel::ln_sum::<F, B>(self.hi, self.lo)
        } else {
            self.m
        }
    }
}

/// Replaces a block's scores by their weights `e^(s − m')` (the shift exact, the exp the
/// backend's), and returns their compensated sum.
#[inline(always)]
fn weigh<F: Float, B: Backend<F>>(scores: &mut [F], m_new: F) -> TermSum<F> {
    let mut sum = TermSum::new();
    for block in scores.chunks_mut(kernel::TERM_BLOCK) {
        for s in block.iter_mut() {
            let (h, l) = Unit.shift(*s, m_new);
            *s = B::exp_pow2(h, l, 0);
        }
        sum.add(block);
    }
    sum
}

/// A rescale factor of an accumulator, `α = factor·2^exp`, kept in two parts so that an `α`
/// below the smallest float (a sink logit far above every score) still scales an accumulator
/// whose product with it is representable: [`scale`](Self::scale) applies the power of two last.
///
/// # Examples
///
/// ```
/// use softmax_core::{OnlineSoftmax, backend::Poly};
/// let mut st = OnlineSoftmax::<f64, _>::new(Poly);
/// st.update(&mut [0.0]);
/// let (_, r) = st.update_sink(1.0);
/// assert!((r.value() - (-1.0f64).exp()).abs() < 1e-16);
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Rescale<F> {
    factor: F,
    exp: i32,
}

impl<F: Float> Rescale<F> {
    /// `α = a` (no separate power of two).
    #[inline(always)]
    fn of(a: F) -> Self {
        Rescale { factor: a, exp: 0 }
    }

    /// `e^(hi + lo)` for the exact shift `hi + lo < 0`, as `factor·2^n`: `n` the even number 1
    /// or 2 above `round(hi·log2 e)`, so that `factor = e^(hi+lo)·2^−n` lies in
    /// `[2^−2.5, 2^−0.5] ≈ [0.18, 0.71]` (a normal number below 1: a product with it cannot
    /// overflow), however the backend rounds internally. `factor` is the backend's
    /// `exp_pow2(hi, lo, −n)`, within its exp error (`hi` down to the floor below keeps the
    /// Cody–Waite reduction exact, `|n| < 512` in f32). Used only where `update`'s `α` was
    /// flushed to 0. `α` is 0 when `hi` is so far below zero that `α` times any finite value
    /// underflows.
    #[inline(always)]
    fn exp<B: Backend<F>>(hi: F, lo: F) -> Self {
        // Below this, α·MAX < half the smallest subnormal.
        let floor = -(F::FINITE_EXP_MAX - F::NORMAL_EXP_MIN + F::SIGNIFICAND_BITS + 2);
        let n = ((hi * F::LOG2E + F::MAGIC) - F::MAGIC).to_i32();
        if n < floor {
            return Rescale::of(F::ZERO);
        }
        // n − even ∈ {−2, −1}: e^(hi+lo)·2^−even = e^r·2^(n−even) with e^r < 1.42.
        let even = (n & !1) + 2;
        Rescale {
            factor: B::exp_pow2(hi, lo, -even),
            exp: even,
        }
    }

    /// `α` as one number, rounded once (subnormal or 0 where it is that small).
    ///
    /// # Examples
    ///
    /// ```
    /// use softmax_core::{OnlineSoftmax, backend::Poly};
    /// let mut st = OnlineSoftmax::<f32, _>::new(Poly);
    /// st.update(&mut [0.0]);
    /// assert_eq!(st.update_sink(-1.0).1.value(), 1.0); // the maximum did not move
    /// ```
    #[inline(always)]
    pub fn value(self) -> F {
        ldexp(self.factor, self.exp)
    }

    /// `x·α·by` (`by` typically the final `1/sum`): `(x·factor)·by`, then the power of two,
    /// so that a result far below the range of `α` alone is still correctly rounded. Accuracy:
    /// two roundings (relative `2⁻²⁴` each in f32), plus half a subnormal quantum when the
    /// result is subnormal.
    ///
    /// # Examples
    ///
    /// ```
    /// use softmax_core::{OnlineSoftmax, backend::Poly};
    /// let mut st = OnlineSoftmax::<f32, _>::new(Poly);
    /// st.update(&mut [0.0]);
    /// let (_, r) = st.update_sink(0.0); // two equal candidates: α = 1, sum 2
    /// assert_eq!(r.scale(5.0, st.inv_sum()), 2.5);
    /// ```
    #[inline(always)]
    pub fn scale(self, x: F, by: F) -> F {
        ldexp((x * self.factor) * by, self.exp)
    }
}
