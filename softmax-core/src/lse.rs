//! The online log-sum-exp state: the primitive the softmax family, the losses and attention are
//! built on.

#![forbid(unsafe_code)]

use core::marker::PhantomData;

use crate::backend::Backend;
use crate::error::{check_len, Error};
use crate::float::Float;
use crate::float::{select, two_sum};
use crate::kernel::{self, InPlace, Io, Load, OutOfPlace, Plain, Scale, Unit};

/// Running log-sum-exp of a stream of values.
///
/// Values can arrive one at a time ([`push`](Self::push)), a slice at a time
/// ([`push_slice`](Self::push_slice), which runs the vectorised two-pass kernel on the slice), or
/// as whole partial states computed elsewhere ([`merge`](Self::merge), associative and
/// commutative up to rounding), so a row can be split into blocks that are reduced separately,
/// in any grouping, and combined.
///
/// The state keeps the running maximum, a reference point `r <= max`, the maximum's own term
/// `e^(max − r)`, and the compensated sum (an unevaluated `hi + lo`) of every other term
/// `e^(x − r)`. The reference only moves when a value exceeds it by more than 8 (lazy rescaling,
/// as in FlashAttention-4): every rescale rounds the whole sum once, so rescaling on each new
/// maximum would make the error grow with the number of values in a rising stream; this way it
/// grows at most with `range/8`. Because the maximum's term is kept apart from the rest (through
/// pushes, merges and rescales alike), `ln Σ e^(x − max) = ln(1 + rest/top)` keeps full relative
/// precision when the other terms are tiny.
///
/// Special values follow the softmax family's edge semantics: `-inf` values contribute nothing
/// (a state that has seen only `-inf` finishes to `-inf`); `+inf` values make the result `+inf`
/// and the state counts them, so that the limit distribution (mass shared among the `+inf`
/// entries) can be recovered through [`prob`](Self::prob); a NaN poisons the state.
///
/// Accuracy (f32, `Poly` or `Libm`): [`finish`](Self::finish) is within `4·2⁻²⁴·(1 + |lse|)` of
/// the exact log-sum-exp of the values pushed, for any number of values, in any order (rising
/// streams included), and any merge tree (property tests in `harness/tests/properties.rs`).
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
    /// The running maximum (`-inf` empty, `+inf` counting infinities, NaN poisoned).
    max: F,
    /// The reference point of the sum: `max − 8 <= r <= max` (`r = max` for special states).
    r: F,
    /// `Σ e^(x − r)` over every value but one copy of the maximum, as `hi + lo` (the number of
    /// `+inf` values in the `+inf` state; 0 when empty).
    hi: F,
    lo: F,
    /// `e^(max − r)`: the maximum's own term, kept out of the sum (1 when `r = max`).
    top: F,
    backend: PhantomData<B>,
}

/// How far above the reference a value may be before the reference moves (e^8 ≈ 2981, so the
/// sum stays far from overflow and the rescales stay few).
const REBASE: f64 = 8.0;

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

    /// A state with the reference at the maximum, from `hi + lo = Σ e^(x − max)` (the maximum's
    /// own 1 included; for a non-finite max, the special-state count).
    #[inline(always)]
    pub(crate) fn from_parts(max: F, hi: F, lo: F) -> Self {
        let (hi, lo) = if max.is_finite() {
            // The rest: hi + lo − 1, exactly (as an unevaluated pair).
            let (h, e) = two_sum(hi, -F::ONE);
            two_sum(h, lo + e)
        } else {
            (hi, lo)
        };
        LogSumExp {
            max,
            r: max,
            hi,
            lo,
            top: F::ONE,
            backend: PhantomData,
        }
    }

    #[inline(always)]
    fn poisoned() -> Self {
        Self::from_parts(F::NAN, F::NAN, F::NAN)
    }

    /// The state of a whole row read through a load and a temperature mode: one max pass and,
    /// if the max is finite, one exp-sum pass. Out of line: several kernels call it.
    #[cfg_attr(softmax_dispatch, inline(always))]
    #[cfg_attr(not(softmax_dispatch), inline(never))]
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
        } else if x == F::NEG_INFINITY {
            // Contributes nothing.
        } else if self.max == F::INFINITY {
            if x == F::INFINITY {
                self.add(F::ONE);
            }
        } else if x == F::INFINITY || self.max == F::NEG_INFINITY {
            // The first +inf (earlier finite mass vanishes next to it), or the first value.
            *self = Self::from_parts(x, F::ONE, F::ZERO);
        } else if x > self.r + F::from_f64(REBASE) {
            // Far above the reference: move the reference to x (one rounding of the sum); the old
            // maximum's term joins the rest.
            let f = Self::factor(self.r, x);
            let old_top = self.top * f;
            self.hi *= f;
            self.lo *= f;
            self.add(old_top);
            self.r = x;
            self.max = x;
            self.top = F::ONE;
        } else {
            let v = Self::exp_rel(x, self.r);
            if x > self.max {
                let old_top = self.top;
                self.max = x;
                self.top = v;
                self.add(old_top);
            } else {
                self.add(v);
            }
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
        let other = crate::simd::exec(
            #[inline(always)]
            || Self::of_row(Plain(xs), Unit),
        );
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
        } else if self.max == F::NEG_INFINITY
            || (other.max == F::INFINITY && self.max != F::INFINITY)
        {
            *self = *other;
        } else if self.max == F::INFINITY {
            if other.max == F::INFINITY {
                self.add(other.hi); // both count their infinities
            }
        } else if other.r > self.r + F::from_f64(REBASE) {
            // Keep the higher reference: rescale this state (the rarer, larger jump) into it.
            let mut o = *other;
            o.absorb(self);
            *self = o;
        } else {
            self.absorb(other);
        }
    }

    /// Adds a finite state into this one's frame, then moves the reference up if the maximum
    /// has run more than [`REBASE`] above it.
    #[inline]
    fn absorb(&mut self, o: &Self) {
        let f = Self::exp_rel(o.r, self.r);
        let o_top = o.top * f;
        // The larger maximum's term stays apart; the other joins the rest.
        if o.max > self.max {
            let old_top = self.top;
            self.max = o.max;
            self.top = o_top;
            self.add(old_top);
        } else {
            self.add(o_top);
        }
        self.add(o.hi * f);
        self.add(o.lo * f);
        if self.max > self.r + F::from_f64(REBASE) {
            // Move the reference to the maximum: the rest relative to it is rest/top (one
            // rounding each), and the maximum's term becomes exactly 1.
            self.hi = self.hi / self.top;
            self.lo = self.lo / self.top;
            self.top = F::ONE;
            self.r = self.max;
        }
    }

    /// `e^(from − to)` for finite `from <= to`.
    #[inline(always)]
    fn factor(from: F, to: F) -> F {
        let (hi, lo) = kernel::exact_diff(from, to);
        B::exp_shifted(hi, lo)
    }

    /// `e^(x − r)` for finite `x`, `r` with `x − r <= 8` (either sign).
    #[inline(always)]
    fn exp_rel(x: F, r: F) -> F {
        let (hi, lo) = kernel::exact_diff(x, r);
        if hi <= F::ZERO {
            B::exp_shifted(hi, lo)
        } else {
            let e = B::exp(hi);
            e + e * lo
        }
    }

    #[inline(always)]
    fn add(&mut self, v: F) {
        // Renormalise every time, so the low word never accumulates roundings of its own.
        let (s, e) = two_sum(self.hi, v);
        let (hi, lo) = two_sum(s, self.lo + e);
        self.hi = hi;
        self.lo = lo;
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

    /// The scaled sum `Σ e^(x − max)`: at least 1 once a finite value was pushed, the number of
    /// `+inf` values when the max is `+inf`, 0 when empty.
    ///
    /// # Examples
    ///
    /// ```
    /// use softmax_core::{LogSumExp, backend::Poly};
    /// let mut s = LogSumExp::new(Poly);
    /// s.push_slice(&[2.0f64, 2.0, 2.0]);
    /// assert_eq!(s.scaled_sum(), 3.0);
    /// ```
    #[inline]
    pub fn scaled_sum(&self) -> F {
        if self.max.is_finite() {
            F::ONE + (self.hi + self.lo) / self.top
        } else {
            self.hi
        }
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
    #[cfg_attr(softmax_dispatch, inline(always))]
    #[cfg_attr(not(softmax_dispatch), inline)]
    pub fn ln_sum(&self) -> F {
        if self.max.is_nan() {
            F::NAN
        } else if self.max == F::NEG_INFINITY {
            F::NEG_INFINITY
        } else if self.max == F::INFINITY {
            B::ln(self.hi) // ln k
        } else {
            // ln((top + rest)/top) = log1p(rest/top), the rest kept apart from the max's term.
            // (A state made from a row's parts has top = 1: the quotients are the parts
            // themselves, without two divisions on the row's critical path.)
            let (hi, lo) = if self.top == F::ONE {
                (self.hi, self.lo)
            } else {
                (self.hi / self.top, self.lo / self.top)
            };
            let (s, e) = two_sum(F::ONE, hi);
            kernel::ln_sum::<F, B>(s, e + lo)
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
        if self.max.is_finite() && x == F::INFINITY {
            return x; // above everything pushed: e^(x − lse) = +inf
        }
        if x > self.max {
            return self.log_prob_exact(Unit, x, self.ln_sum());
        }
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
            // A value larger than any pushed: not part of the distribution, but well defined
            // (+inf for x = +inf).
            if x == F::INFINITY {
                return x;
            }
            let (hi, lo) = kernel::exact_diff(x, self.max);
            B::exp(hi + lo) * self.inv_sum()
        } else {
            self.prob_scaled(Unit, x, self.inv_sum())
        }
    }

    /// `softmax` of every value of a slice under this normaliser, into `out`: [`prob`](Self::prob)
    /// value by value, vectorised (the second pass of a chunked softmax or cross-entropy: the
    /// state was built from the chunks with [`push_slice`](Self::push_slice), this turns each
    /// chunk into its probabilities).
    ///
    /// Accuracy: as [`prob`](Self::prob): each output within 1 ULP of exp, the shift exact, times
    /// the compensated `1/Σ` (outputs >= 1e-30 within 2e-6 relative in f32).
    ///
    /// # Errors
    ///
    /// [`Error::LengthMismatch`](crate::Error::LengthMismatch) if `out.len() != x.len()`.
    ///
    /// # Examples
    ///
    /// ```
    /// use softmax_core::{LogSumExp, backend::Poly};
    /// let chunks = [[1.0f32, 2.0], [3.0, 4.0]];
    /// let mut st = LogSumExp::new(Poly);
    /// for c in &chunks {
    ///     st.push_slice(c);
    /// }
    /// let mut p = [0.0f32; 2];
    /// st.probs(&chunks[1], &mut p)?;
    /// assert!((p[1] - 0.643_914_2).abs() < 1e-6);
    /// # Ok::<(), softmax_core::Error>(())
    /// ```
    pub fn probs(&self, x: &[F], out: &mut [F]) -> Result<(), Error> {
        check_len(x.len(), out.len())?;
        self.probs_io(OutOfPlace { src: Plain(x), out });
        Ok(())
    }

    /// [`probs`](Self::probs) in place: every value of `x` replaced by its probability under
    /// this normaliser (the same bits), with no length to check.
    ///
    /// # Examples
    ///
    /// ```
    /// use softmax_core::{LogSumExp, backend::Poly};
    /// let mut st = LogSumExp::new(Poly);
    /// st.push_slice(&[0.0f64, 0.0]);
    /// let mut x = [0.0f64, f64::NEG_INFINITY];
    /// st.probs_in_place(&mut x);
    /// assert_eq!(x, [0.5, 0.0]);
    /// ```
    pub fn probs_in_place(&self, x: &mut [F]) {
        self.probs_io(InPlace(x));
    }

    /// The body of [`probs`](Self::probs) and [`probs_in_place`](Self::probs_in_place).
    #[inline(always)]
    fn probs_io(&self, mut io: impl Io<F>) {
        let st = *self;
        crate::simd::exec(
            #[inline(always)]
            || {
                if st.max.is_finite() && !io.src().iter().any(|v| v > st.max) {
                    // The terms carry 2^TOP; fold its inverse into 1/Σ.
                    let inv = st.inv_sum() * kernel::untop::<F>();
                    io.map(|v| kernel::term::<F, B, Unit>(Unit, st.max, v) * inv);
                } else {
                    io.map(|v| st.prob(v));
                }
            },
        );
    }

    /// `ln softmax` of every value of a slice under this normaliser, into `out`:
    /// [`log_prob`](Self::log_prob) value by value, vectorised.
    ///
    /// # Errors
    ///
    /// [`Error::LengthMismatch`](crate::Error::LengthMismatch) if `out.len() != x.len()`.
    ///
    /// # Examples
    ///
    /// ```
    /// use softmax_core::{LogSumExp, backend::Poly};
    /// let mut st = LogSumExp::new(Poly);
    /// st.push_slice(&[0.0f64, 0.0]);
    /// let mut lp = [0.0f64; 2];
    /// st.log_probs(&[0.0, f64::NEG_INFINITY], &mut lp)?;
    /// assert_eq!(lp, [-core::f64::consts::LN_2, f64::NEG_INFINITY]);
    /// # Ok::<(), softmax_core::Error>(())
    /// ```
    pub fn log_probs(&self, x: &[F], out: &mut [F]) -> Result<(), Error> {
        check_len(x.len(), out.len())?;
        let st = *self;
        crate::simd::exec(
            #[inline(always)]
            || {
                let l = st.ln_sum();
                for (o, &v) in out.iter_mut().zip(x) {
                    *o = if st.max.is_finite() && v > st.max {
                        st.log_prob(v)
                    } else {
                        st.log_prob_scaled(Unit, v, l)
                    };
                }
            },
        );
        Ok(())
    }

    /// The compensated scaled sum `Σ e^(x − max)` as its two parts.
    #[inline(always)]
    pub(crate) fn sum_parts(&self) -> (F, F) {
        if self.max.is_finite() {
            let (s, e) = two_sum(F::ONE, self.hi / self.top);
            (s, e + self.lo / self.top)
        } else {
            (self.hi, self.lo)
        }
    }

    /// `1/Σ e^(x − max)`, with the compensation folded in (`1/k` in the `+inf` state).
    #[inline(always)]
    pub(crate) fn inv_sum(&self) -> F {
        let (hi, lo) = self.sum_parts();
        let r = F::ONE / hi;
        r - r * (lo / hi)
    }

    /// [`log_prob`](Self::log_prob) of a raw value `x <= max` read through a temperature mode,
    /// given `ln_sum` (hoisted out of the loops by the callers): [`Scale::log_prob`].
    #[inline(always)]
    pub(crate) fn log_prob_scaled<S: Scale<F>>(&self, s: S, x: F, ln_sum: F) -> F {
        self.log_prob_with::<S, false>(s, x, ln_sum)
    }

    /// [`log_prob_scaled`](Self::log_prob_scaled) of any value, also above the state's maximum
    /// (a value the state did not see, or a state whose `max` is a reference below the row's
    /// maximum): from the exact difference, [`kernel::log_prob_exact`].
    #[inline(always)]
    pub(crate) fn log_prob_exact<S: Scale<F>>(&self, s: S, x: F, ln_sum: F) -> F {
        self.log_prob_with::<S, true>(s, x, ln_sum)
    }

    /// The two above: `EXACT` picks [`kernel::log_prob_exact`] over [`Scale::log_prob`] for a
    /// finite maximum; the states without one share their limits.
    #[inline(always)]
    fn log_prob_with<S: Scale<F>, const EXACT: bool>(&self, s: S, x: F, ln_sum: F) -> F {
        let p = x;
        if self.max.is_finite() {
            if EXACT {
                kernel::log_prob_exact(s, p, self.max, ln_sum)
            } else {
                s.log_prob(p, self.max, ln_sum)
            }
        } else if self.max == F::INFINITY {
            // ln_sum = ln k here (0 − ln k, so a single +inf gets +0 as the finite max does).
            select(p == F::INFINITY, F::ZERO - ln_sum, F::NEG_INFINITY)
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
