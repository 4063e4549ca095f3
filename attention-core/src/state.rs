//! The per-query state of the one-pass attention: softmax-core's [`OnlineSoftmax`] plus the
//! entropy accumulator; the output accumulator lives in the caller's buffer.

use softmax_core::backend::Backend;
use softmax_core::chunks::chunks_mut;
use softmax_core::linalg::within;
use softmax_core::{Float, OnlineSoftmax, Rescale};

use crate::error::Error;
use crate::plan::check_len;

/// The running state of one query over the keys seen so far: running maximum `m` and sum
/// `l = Σ e^(s_j − m)` (softmax-core's [`OnlineSoftmax`]), and `E = Σ e^(s_j − m)·(s_j − m)`,
/// from which the attention entropy is `ln l − E/l` (the seeds' `H = ln Z − Σ p_j s_j`, in a
/// shifted frame so that large scores do not cancel). The query's output accumulator
/// `acc = Σ e^(s_j − m)·v_j` (`dv` values) is kept by the caller next to it.
///
/// States over disjoint key ranges [`merge`](Self::merge) into the state over their union
/// (split-K / flash-decoding): [`attention_partial`](crate::attention_partial) computes them,
/// [`merge_partials`](crate::merge_partials) combines whole buffers of them,
/// [`attention_finish`](crate::attention_finish) turns them into outputs.
///
/// # Examples
///
/// ```
/// use attention_core::{QueryState, backend::Poly};
/// let st = QueryState::<f32, _>::new(Poly);
/// assert_eq!(st.lse(), f32::NEG_INFINITY); // no key yet
/// ```
#[derive(Clone, Copy, Debug)]
pub struct QueryState<F, B> {
    pub(crate) sm: OnlineSoftmax<F, B>,
    /// `Σ w_j·(s_j − m)` over the keys seen (0 when none).
    pub(crate) e: F,
}

impl<F: Float, B: Backend<F>> QueryState<F, B> {
    /// The state of a query that has seen no key.
    ///
    /// # Examples
    ///
    /// ```
    /// use attention_core::{QueryState, backend::Poly};
    /// let st = QueryState::<f64, _>::new(Poly);
    /// assert_eq!(st.entropy(), 0.0);
    /// ```
    pub fn new(backend: B) -> Self {
        QueryState {
            sm: OnlineSoftmax::new(backend),
            e: F::ZERO,
        }
    }

    /// Folds in a block of final scores (`-inf` for disallowed keys): replaces them by their
    /// weights `e^(s − m')`, rescales `acc` by `α = e^(m − m')`, updates the entropy accumulator
    /// (with `tmp`, a scratch of the block's length, when `entropy`).
    #[inline(always)]
    pub(crate) fn step(&mut self, s: &mut [F], tmp: &mut [F], acc: &mut [F], entropy: bool) {
        let before = self.begin(s, tmp, entropy);
        let alpha = self.sm.update(s);
        self.end(s, tmp, acc, alpha, before, entropy);
    }

    /// The part of [`step`](Self::step) before the online softmax's update: the maximum and sum
    /// so far, and (for the entropy) the scores kept in `tmp`.
    #[inline(always)]
    pub(crate) fn begin(&self, s: &[F], tmp: &mut [F], entropy: bool) -> (F, F) {
        if entropy {
            for (t, &x) in tmp.iter_mut().zip(s.iter()) {
                *t = x;
            }
        }
        (self.sm.max(), self.sm.sum())
    }

    /// The part of [`step`](Self::step) after the update that turned the scores into the
    /// weights `w` and returned `alpha`: the rescale of `acc` and the entropy accumulator
    /// (`before` from [`begin`](Self::begin)).
    #[inline(always)]
    pub(crate) fn end(
        &mut self,
        w: &[F],
        tmp: &mut [F],
        acc: &mut [F],
        alpha: F,
        (m_old, l_old): (F, F),
        entropy: bool,
    ) {
        if alpha != F::ONE {
            for a in acc.iter_mut() {
                *a *= alpha;
            }
        }
        if entropy {
            let m = self.sm.max();
            // d_j = s_j − m' for keys with a weight; 0 for the others (their weight is 0, and
            // s_j − m' may be NaN or -inf there).
            for (t, &w) in tmp.iter_mut().zip(w.iter()) {
                *t = if w == F::ZERO { F::ZERO } else { *t - m };
            }
            let blk = within::dot(w, tmp);
            self.e = shifted(self.e, m_old, l_old, alpha, m) + blk;
        }
    }

    /// Folds in the sink logit `z` (a candidate without a value) and returns the rescale of the
    /// output accumulator, which [`finish_row`](Self::finish_row) applies together with `1/l`:
    /// when the sink lies far above every score the rescale is far below the smallest float,
    /// but the output it makes is not (it may be any tiny representable value).
    #[inline(always)]
    fn fold_sink(&mut self, z: F) -> Rescale<F> {
        let (m_old, l_old) = (self.sm.max(), self.sm.sum());
        let (w, alpha) = self.sm.update_sink(z);
        let m = self.sm.max();
        // The sink's own entropy term w·(z − m') (0 when its weight is 0).
        let d = if w == F::ZERO { F::ZERO } else { z - m };
        self.e = shifted(self.e, m_old, l_old, alpha.value(), m) + w * d;
        alpha
    }

    /// Folds in the sink logit `z`, if any, then writes the output row `o = acc / l` in place;
    /// returns `(lse, entropy)`.
    #[inline(always)]
    pub(crate) fn finish_row(&mut self, acc: &mut [F], sink: Option<F>) -> (F, F) {
        match sink {
            Some(z) => {
                let alpha = self.fold_sink(z);
                let inv = self.sm.inv_sum();
                for a in acc.iter_mut() {
                    *a = alpha.scale(*a, inv);
                }
            }
            None => {
                let inv = self.sm.inv_sum();
                for a in acc.iter_mut() {
                    *a *= inv;
                }
            }
        }
        (self.lse(), self.entropy())
    }

    /// [`finish_row`](Self::finish_row) for consecutive rows: `states[r]` with the `r`-th row of
    /// `dv` values of `acc`, the sink logit `sink(first + r)`, its lse and entropy written at
    /// `first + r` of `lse` and `entropy` (when given).
    #[inline(always)]
    pub(crate) fn finish_rows(
        states: &mut [Self],
        acc: &mut [F],
        dv: usize,
        first: usize,
        sink: impl Fn(usize) -> Option<F>,
        mut lse: Option<&mut [F]>,
        mut entropy: Option<&mut [F]>,
    ) {
        for (r, (st, acc_r)) in states
            .iter_mut()
            .zip(chunks_mut(acc, dv.max(1)))
            .enumerate()
        {
            let i = first + r;
            let (l, e) = st.finish_row(acc_r, sink(i));
            if let Some(v) = lse.as_deref_mut().and_then(|x| x.get_mut(i)) {
                *v = l;
            }
            if let Some(v) = entropy.as_deref_mut().and_then(|x| x.get_mut(i)) {
                *v = e;
            }
        }
    }

    /// Combines with the state over another, disjoint range of keys: afterwards this state
    /// (and `acc`, its output accumulator) is the state over both ranges (and `other_acc` has
    /// been added in). The merge of the states of any partition of the keys equals the one-pass
    /// state up to rounding (a few units of roundoff in the outputs; property tests in
    /// `harness/tests/attention_properties.rs`).
    ///
    /// # Errors
    ///
    /// [`Error::LengthMismatch`] if `acc` and `other_acc` differ in length.
    ///
    /// # Examples
    ///
    /// ```
    /// use attention_core::{attention_finish, attention_partial, Dims, Options, Output, Qkv,
    ///     QueryState, backend::Poly};
    /// // One query, four keys: the state over keys 0..2 merged with the state over 2..4.
    /// let dims = Dims::new(1, 1, 1, 4, 2, 1);
    /// let (q, k, v) = ([1.0f32, 0.5], [1.0, 0.0, 0.0, 1.0, 1.0, 1.0, -1.0, 0.0], [1.0, 2.0, 3.0, 4.0]);
    /// let x = Qkv::new(&q, &k, &v);
    /// let opts = Options::new();
    /// let (mut a, mut b) = ([QueryState::new(Poly)], [QueryState::new(Poly)]);
    /// let (mut acc_a, mut acc_b) = ([0.0f32], [0.0f32]);
    /// attention_partial(Poly, &dims, x, &opts, 0..2, &mut acc_a, &mut a)?;
    /// attention_partial(Poly, &dims, x, &opts, 2..4, &mut acc_b, &mut b)?;
    /// a[0].merge(&mut acc_a, &b[0], &acc_b)?;
    /// attention_finish(&dims, &opts, &mut a, Output::new(&mut acc_a))?;
    /// // The same as the one pass:
    /// let mut o = [0.0f32];
    /// attention_core::attention(Poly, &dims, x, &opts, Output::new(&mut o))?;
    /// assert!((acc_a[0] - o[0]).abs() < 1e-6);
    /// # Ok::<(), attention_core::Error>(())
    /// ```
    pub fn merge(&mut self, acc: &mut [F], other: &Self, other_acc: &[F]) -> Result<(), Error> {
        check_len("other_acc", acc.len(), other_acc.len())?;
        let (ma, la) = (self.sm.max(), self.sm.sum());
        let (mb, lb) = (other.sm.max(), other.sm.sum());
        let (fa, fb) = self.sm.merge(&other.sm);
        let m = self.sm.max();
        for (a, &b) in acc.iter_mut().zip(other_acc) {
            *a = fa * *a + fb * b;
        }
        self.e = shifted(self.e, ma, la, fa, m) + shifted(other.e, mb, lb, fb, m);
        Ok(())
    }

    /// The log-sum-exp of the scores seen so far (`-inf` with none; the sink logit is
    /// included only after [`attention_finish`](crate::attention_finish)).
    ///
    /// # Examples
    ///
    /// ```
    /// use attention_core::{QueryState, backend::Poly};
    /// assert_eq!(QueryState::<f32, _>::new(Poly).lse(), f32::NEG_INFINITY);
    /// ```
    pub fn lse(&self) -> F {
        self.sm.lse()
    }

    /// The entropy (nats) of the attention distribution over the scores seen so far: 0 with no
    /// score, `ln k` in the limit of `k` scores equal to `+inf`, NaN if a score was NaN.
    ///
    /// # Examples
    ///
    /// ```
    /// use attention_core::{QueryState, backend::Poly};
    /// assert_eq!(QueryState::<f32, _>::new(Poly).entropy(), 0.0);
    /// ```
    pub fn entropy(&self) -> F {
        let m = self.sm.max();
        if m.is_nan() {
            F::NAN
        } else if m == F::NEG_INFINITY {
            F::ZERO
        } else if m == F::INFINITY {
            B::ln(self.sm.sum())
        } else {
            // Both terms are >= 0: l >= 1 (the maximum's own term is 1) and E <= 0.
            B::ln(self.sm.sum()) - self.e * self.sm.inv_sum()
        }
    }
}

/// The entropy accumulator `e` of a state with maximum `m_old` and sum `l_old`, moved to the new
/// maximum `m` (`f = e^(m_old − m)`): `f·(e + (m_old − m)·l_old)`; 0 for an empty state.
#[inline(always)]
fn shifted<F: Float>(e: F, m_old: F, l_old: F, f: F, m: F) -> F {
    if l_old == F::ZERO || f == F::ZERO {
        F::ZERO
    } else if m_old == m {
        f * e
    } else {
        f * (e + (m_old - m) * l_old)
    }
}
