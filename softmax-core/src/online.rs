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
use crate::float::{select, two_sum};
use crate::kernel::{self, Scale, TermSum, Unit};
use crate::Float;

/// Running maximum and sum of `e^(s − max)` over the scores seen so far, for the online softmax
/// of attention.
///
/// Special values follow the softmax family: `-inf` scores get weight 0 (masked keys); a state
/// that has seen only `-inf` has sum 0 and [`lse`](Self::lse) `-inf`; `+inf` scores take the
/// limit (every `+inf` score weight 1, every other weight 0, earlier accumulators scaled by 0); a
/// NaN score poisons the state (weights, `α` and results NaN).
///
/// Weights below `2^-92` times the largest weight are returned as 0 (their share of any output is
/// below f32 precision by 2^68). Accuracy (f32): each weight within 1 ULP of `e^(s − m')`; the
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
        let st = *self;
        let (next, alpha) = crate::simd::exec(
            #[inline(always)]
            || st.update_in(scores),
        );
        *self = next;
        alpha
    }

    #[inline(always)]
    fn update_in(self, scores: &mut [F]) -> (Self, F) {
        let sc = kernel::scan(kernel::Plain(scores));
        if sc.nan || self.m.is_nan() {
            scores.fill(F::NAN);
            return (Self::poisoned(), F::NAN);
        }
        let m_new = select(sc.max > self.m, sc.max, self.m);
        if m_new == F::NEG_INFINITY {
            scores.fill(F::ZERO);
            return (self, F::ONE);
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
            );
        }
        // Finite m': α from the exact shift, the weights as in every kernel.
        let alpha = if self.m == F::NEG_INFINITY {
            F::ZERO
        } else if self.m == m_new {
            F::ONE
        } else {
            let (h, l) = Unit.shift(self.m, m_new);
            B::exp_pow2(h, l, 0)
        };
        let mut sum = TermSum::new();
        for block in scores.chunks_mut(kernel::TERM_BLOCK) {
            for s in block.iter_mut() {
                let (h, l) = Unit.shift(*s, m_new);
                *s = B::exp_pow2(h, l, 0);
            }
            sum.add(block);
        }
        let (bh, bl) = sum.finish();
        let (h, e) = two_sum(self.hi * alpha, bh);
        let (hi, lo) = two_sum(h, e + (self.lo * alpha + bl));
        (
            OnlineSoftmax {
                m: m_new,
                hi,
                lo,
                backend: PhantomData,
            },
            alpha,
        )
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
