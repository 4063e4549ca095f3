//! The online log-sum-exp state: the primitive the softmax family, the losses and attention are
//! built on.

use core::marker::PhantomData;

use crate::backend::Backend;
use crate::float::{select, two_sum};
use crate::kernel::{self, Load, Plain, Scale, Unit};
use crate::Float;

/// Running log-sum-exp of a stream of values: the running maximum `m` and the scaled sum
/// `Σ e^(x − m)`, kept compensated (as an unevaluated `hi + lo`).
///
/// Values can arrive one at a time ([`push`](Self::push)), a slice at a time
/// ([`push_slice`](Self::push_slice), which runs the vectorised two-pass kernel on the slice), or
/// as whole partial states computed elsewhere ([`merge`](Self::merge), associative and
/// commutative up to rounding), so a row can be split into blocks that are reduced separately,
/// in any grouping, and combined.
///
/// Special values follow the softmax family's edge semantics: `-inf` values contribute nothing
/// (a state that has seen only `-inf` finishes to `-inf`); `+inf` values make the result `+inf`
/// and the state counts them, so that the limit distribution (mass shared among the `+inf`
/// entries) can be recovered through [`prob`](Self::prob); a NaN poisons the state.
///
/// Accuracy (f32, `Poly` or `Libm`): [`finish`](Self::finish) is within 2 ULP + 2·2⁻²⁴·|lse|
/// of the exact log-sum-exp of the values pushed, for any number of values and any merge tree
/// (measured by the property tests in `harness/tests`).
///
/// # Examples
///
/// ```
/// use softmax_core::{LogSumExp, backend::Poly};
/// let xs = [1.0f32, 2.0, 3.0, 4.0];
/// let mut a = LogSumExp::new(Poly);
/// a.push_slice(&xs[..2]);
/// let mut b = LogSumExp::new(Poly);
/// b.push(xs[2]);
/// b.push(xs[3]);
/// a.merge(&b);
/// let exact = (1.0f64.exp() + 2.0f64.exp() + 3.0f64.exp() + 4.0f64.exp()).ln();
/// assert!((a.finish() as f64 - exact).abs() < 1e-6);
/// // The probability of a value under this normaliser:
/// assert!((a.prob(4.0) as f64 - (4.0 - exact).exp()).abs() < 1e-7);
/// ```
#[derive(Clone, Copy, Debug)]
pub struct LogSumExp<F, B> {
    max: F,
    hi: F,
    lo: F,
    backend: PhantomData<B>,
}

impl<F: Float, B: Backend<F>> LogSumExp<F, B> {
    /// The empty state: `finish()` is `-inf` (log of an empty sum).
    ///
    /// # Examples
    ///
    /// ```
    /// use softmax_core::{LogSumExp, backend::Poly};
    /// assert_eq!(LogSumExp::<f64, _>::new(Poly).finish(), f64::NEG_INFINITY);
    /// ```
    #[inline]
    pub fn new(_backend: B) -> Self {
        Self::from_parts(F::NEG_INFINITY, F::ZERO, F::ZERO)
    }

    #[inline(always)]
    pub(crate) fn from_parts(max: F, hi: F, lo: F) -> Self {
        LogSumExp {
            max,
            hi,
            lo,
            backend: PhantomData,
        }
    }

    #[inline(always)]
    fn poisoned() -> Self {
        Self::from_parts(F::NAN, F::NAN, F::NAN)
    }

    /// The state of a whole row read through a load and a temperature mode: one max pass and,
    /// if the max is finite, one exp-sum pass. Out of line: several kernels call it.
    #[inline(never)]
    pub(crate) fn of_row<L: Load<F>, S: Scale<F>>(src: L, s: S) -> Self {
        let sc = kernel::scan(src);
        if sc.nan {
            Self::poisoned()
        } else if sc.max == F::NEG_INFINITY {
            Self::from_parts(F::NEG_INFINITY, F::ZERO, F::ZERO)
        } else if sc.max == F::INFINITY {
            let k = kernel::count_pos_inf(src);
            Self::from_parts(F::INFINITY, F::from_usize(k), F::ZERO)
        } else {
            let (hi, lo) = kernel::sum_exp::<F, B, L, S>(src, s, sc.max);
            Self::from_parts(sc.max, hi, lo)
        }
    }

    /// Adds one value.
    ///
    /// # Examples
    ///
    /// ```
    /// use softmax_core::{LogSumExp, backend::Poly};
    /// let mut s = LogSumExp::new(Poly);
    /// s.push(0.0f32);
    /// s.push(0.0);
    /// assert!((s.finish() - core::f32::consts::LN_2).abs() < 1e-7);
    /// s.push(f32::INFINITY);
    /// assert_eq!(s.finish(), f32::INFINITY);
    /// ```
    #[inline]
    pub fn push(&mut self, x: F) {
        if x.is_nan() || self.max.is_nan() {
            *self = Self::poisoned();
        } else if x > self.max {
            // Rescale what we have to the new maximum, then add e^0 = 1.
            let f = self.factor(self.max, x);
            self.hi *= f;
            self.lo *= f;
            self.max = x;
            self.add(F::ONE);
        } else if x == self.max {
            if x != F::NEG_INFINITY {
                self.add(F::ONE);
            }
        } else if self.max != F::INFINITY {
            let (hi, lo) = kernel::exact_diff(x, self.max);
            self.add(B::exp_shifted(hi, lo));
        }
    }

    /// Adds every value of a slice (an empty slice changes nothing).
    ///
    /// The slice is reduced with the crate's vectorised two-pass kernel and merged in, so this is
    /// much faster than pushing the values one by one, and as accurate.
    ///
    /// # Examples
    ///
    /// ```
    /// use softmax_core::{LogSumExp, backend::Poly};
    /// let mut s = LogSumExp::new(Poly);
    /// s.push_slice(&[1000.0f64, 1000.0]);
    /// assert!((s.finish() - (1000.0 + core::f64::consts::LN_2)).abs() < 1e-12);
    /// ```
    #[inline]
    pub fn push_slice(&mut self, xs: &[F]) {
        let other = Self::of_row(Plain(xs), Unit);
        self.merge(&other);
    }

    /// Combines with a state computed over other values, as if all had been pushed here.
    ///
    /// # Examples
    ///
    /// ```
    /// use softmax_core::{LogSumExp, backend::Poly};
    /// let (mut a, mut b) = (LogSumExp::new(Poly), LogSumExp::new(Poly));
    /// a.push(1.0f32);
    /// b.push(-1.0);
    /// a.merge(&b);
    /// let exact = (1.0f64.exp() + (-1.0f64).exp()).ln();
    /// assert!((a.finish() as f64 - exact).abs() < 1e-6);
    /// ```
    #[inline]
    pub fn merge(&mut self, other: &Self) {
        if self.max.is_nan() || other.max.is_nan() {
            *self = Self::poisoned();
        } else if other.max == F::NEG_INFINITY {
            // `other` holds no mass.
        } else if self.max == F::NEG_INFINITY {
            *self = *other;
        } else {
            let m = select(other.max > self.max, other.max, self.max);
            let fa = self.factor(self.max, m);
            let fb = self.factor(other.max, m);
            let (hi, e) = two_sum(self.hi * fa, other.hi * fb);
            let lo = self.lo * fa + other.lo * fb + e;
            let (hi, lo) = two_sum(hi, lo);
            *self = Self::from_parts(m, hi, lo);
        }
    }

    /// `e^(from − to)` for `from <= to`, exactly 1 when equal (also for two `+inf`), 0 when `to`
    /// is `+inf` and `from` is not.
    #[inline(always)]
    fn factor(&self, from: F, to: F) -> F {
        if from == to {
            F::ONE
        } else if to == F::INFINITY || from == F::NEG_INFINITY {
            F::ZERO
        } else {
            let (hi, lo) = kernel::exact_diff(from, to);
            B::exp_shifted(hi, lo)
        }
    }

    #[inline(always)]
    fn add(&mut self, v: F) {
        let (hi, e) = two_sum(self.hi, v);
        self.hi = hi;
        self.lo += e;
    }

    /// The running maximum (`-inf` when empty, NaN when poisoned).
    ///
    /// # Examples
    ///
    /// ```
    /// use softmax_core::{LogSumExp, backend::Poly};
    /// let mut s = LogSumExp::new(Poly);
    /// s.push_slice(&[3.0f32, 7.0, 5.0]);
    /// assert_eq!(s.max(), 7.0);
    /// ```
    #[inline]
    pub fn max(&self) -> F {
        self.max
    }

    /// The scaled sum `Σ e^(x − max)` (at least 1 once a finite value was pushed; the number of
    /// `+inf` values when the max is `+inf`; 0 when empty).
    ///
    /// # Examples
    ///
    /// ```
    /// use softmax_core::{LogSumExp, backend::Poly};
    /// let mut s = LogSumExp::new(Poly);
    /// s.push_slice(&[2.0f64, 2.0, 2.0]);
    /// assert_eq!(s.sum(), 3.0);
    /// ```
    #[inline]
    pub fn sum(&self) -> F {
        self.hi + self.lo
    }

    /// `ln Σ e^(x − max)`, computed from the compensated sum (accurate even when the sum is
    /// `1 + tiny`).
    ///
    /// # Examples
    ///
    /// ```
    /// use softmax_core::{LogSumExp, backend::Poly};
    /// let mut s = LogSumExp::new(Poly);
    /// s.push_slice(&[0.0f64, -40.0]);
    /// let exact = (-40.0f64).exp(); // ln(1 + e^-40) ≈ e^-40
    /// assert!((s.ln_sum() - exact).abs() <= exact * 1e-15);
    /// ```
    #[inline]
    pub fn ln_sum(&self) -> F {
        if self.max.is_nan() {
            F::NAN
        } else if self.max == F::NEG_INFINITY {
            F::NEG_INFINITY
        } else {
            kernel::ln_sum::<F, B>(self.hi, self.lo)
        }
    }

    /// The log-sum-exp of everything pushed: `max + ln Σ e^(x − max)`; `-inf` when empty or all
    /// `-inf`, `+inf` when a `+inf` was pushed, NaN when a NaN was.
    ///
    /// # Examples
    ///
    /// ```
    /// use softmax_core::{LogSumExp, backend::Poly};
    /// let mut s = LogSumExp::new(Poly);
    /// s.push_slice(&[f32::NEG_INFINITY, f32::NEG_INFINITY]);
    /// assert_eq!(s.finish(), f32::NEG_INFINITY);
    /// ```
    #[inline]
    pub fn finish(&self) -> F {
        if self.max.is_finite() {
            self.max + self.ln_sum()
        } else {
            self.max
        }
    }

    /// `ln softmax` of a value `x` under this normaliser: `x − lse`, computed as
    /// `(x − max) − ln_sum` so that it is exact-to-rounding also when `x` and the max are huge.
    /// With a `+inf` max, the limit: `−ln k` for `x = +inf` (k the number of `+inf` values),
    /// `-inf` otherwise.
    ///
    /// # Examples
    ///
    /// ```
    /// use softmax_core::{LogSumExp, backend::Poly};
    /// let mut s = LogSumExp::new(Poly);
    /// s.push_slice(&[1.0e30f32, 1.0e30]);
    /// assert!((s.log_prob(1.0e30) + core::f32::consts::LN_2).abs() < 1e-7);
    /// ```
    #[inline]
    pub fn log_prob(&self, x: F) -> F {
        self.log_prob_scaled(Unit, x, self.ln_sum())
    }

    /// `softmax` of a value `x` under this normaliser: `e^(x − lse)`; with a `+inf` max, `1/k`
    /// for `x = +inf` and 0 otherwise.
    ///
    /// # Examples
    ///
    /// ```
    /// use softmax_core::{LogSumExp, backend::Poly};
    /// let mut s = LogSumExp::new(Poly);
    /// s.push_slice(&[0.0f32, 0.0, 0.0, 0.0]);
    /// assert_eq!(s.prob(0.0), 0.25);
    /// ```
    #[inline]
    pub fn prob(&self, x: F) -> F {
        if self.max.is_finite() && x > self.max {
            // A value larger than any pushed: not part of the distribution, but well defined.
            let (hi, lo) = kernel::exact_diff(x, self.max);
            B::exp(hi + lo) * self.inv_sum()
        } else {
            self.prob_scaled(Unit, x, self.inv_sum())
        }
    }

    /// The compensated scaled sum as its two parts.
    #[inline(always)]
    pub(crate) fn sum_parts(&self) -> (F, F) {
        (self.hi, self.lo)
    }

    /// `1/sum`, with the compensation folded in.
    #[inline(always)]
    pub(crate) fn inv_sum(&self) -> F {
        let r = F::ONE / self.hi;
        r - r * (self.lo / self.hi)
    }

    /// [`log_prob`](Self::log_prob) of a raw value read through a temperature mode, given
    /// `ln_sum` (hoisted out of the loops by the callers).
    #[inline(always)]
    pub(crate) fn log_prob_scaled<S: Scale<F>>(&self, s: S, x: F, ln_sum: F) -> F {
        let p = x;
        if self.max.is_finite() {
            let (hi, lo) = s.shift(p, self.max);
            // lo is NaN when hi = -inf.
            select(hi == F::NEG_INFINITY, hi, (hi - ln_sum) + lo)
        } else if self.max == F::INFINITY {
            // ln_sum = ln k here.
            select(p == F::INFINITY, -ln_sum, F::NEG_INFINITY)
        } else {
            // Empty: -inf everywhere; poisoned: NaN everywhere.
            self.max
        }
    }

    /// [`prob`](Self::prob) of a raw value read through a temperature mode, given `1/sum`;
    /// `x` must not exceed the max (true for every value of the row the state came from).
    #[inline(always)]
    pub(crate) fn prob_scaled<S: Scale<F>>(&self, s: S, x: F, inv_sum: F) -> F {
        let p = x;
        if self.max.is_finite() {
            let (hi, lo) = s.shift(p, self.max);
            B::exp_shifted(hi, lo) * inv_sum
        } else if self.max == F::INFINITY {
            select(p == F::INFINITY, inv_sum, F::ZERO)
        } else if self.max == F::NEG_INFINITY {
            F::ZERO
        } else {
            F::NAN
        }
    }
}
