//! Cross-entropy from logits, with class-index targets ([`cross_entropy`]) and class-probability
//! targets ([`cross_entropy_probs`]): PyTorch's `torch.nn.functional.cross_entropy` with every
//! option, plus the soft-cap and z-loss of large-vocabulary training, the per-row statistics,
//! and the gradient with respect to the logits from the same passes.

#![forbid(unsafe_code)]

use softmax_core::backend::Backend;
use softmax_core::chunks::{chunks, chunks_mut};
use softmax_core::{simd, special, Float};

use crate::error::{check_len, rows_of, Error};
use crate::math::{self, RowZ, CHUNK};
use crate::options::{CrossEntropyOptions, CrossEntropyOutputs, Reduction, Stats};

/// The per-call constants of a cross-entropy row.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Consts<'w, F> {
    pub(crate) weight: Option<&'w [F]>,
    /// ε (label smoothing).
    pub(crate) eps: F,
    /// 1 − ε.
    pub(crate) keep: F,
    /// ε/C.
    pub(crate) eps_c: F,
    /// Σ_c w_c (C without weights).
    pub(crate) w_total: F,
    /// The z-loss coefficient.
    pub(crate) zl: F,
    pub(crate) cap: Option<F>,
    /// Gradient scale of the cross-entropy part (1/Σw for `Mean`, 1 otherwise).
    pub(crate) s_ce: F,
    /// Gradient scale of the z-loss part (1/count for `Mean`, 1 otherwise).
    pub(crate) s_z: F,
}

impl<'w, F: Float> Consts<'w, F> {
    /// Plain cross-entropy (no weights, smoothing, cap or z-loss) with gradient scale `scale`:
    /// what the contrastive losses run on their similarity rows.
    pub(crate) fn plain(classes: usize, scale: F) -> Self {
        Consts {
            weight: None,
            eps: F::ZERO,
            keep: F::ONE,
            eps_c: F::ZERO,
            w_total: F::from_usize(classes),
            zl: F::ZERO,
            cap: None,
            s_ce: scale,
            s_z: scale,
        }
    }

    pub(crate) fn new(o: &CrossEntropyOptions<'w, F>, classes: usize, s_ce: F, s_z: F) -> Self {
        let c = F::from_usize(classes);
        Consts {
            weight: o.weight,
            eps: o.label_smoothing,
            keep: F::ONE - o.label_smoothing,
            eps_c: o.label_smoothing / c,
            w_total: match o.weight {
                Some(w) => math::sum(w),
                None => c,
            },
            zl: o.z_loss,
            cap: o.softcap,
            s_ce,
            s_z,
        }
    }

    /// The z-loss term `z·lse²` of a row (0 without z-loss, also for an infinite `lse`).
    #[inline(always)]
    pub(crate) fn z_loss(&self, lse: F) -> F {
        if self.zl > F::ZERO {
            self.zl * lse * lse
        } else {
            F::ZERO
        }
    }

    /// The weight of class `c` (1 without weights, NaN past the weights' end).
    #[inline(always)]
    pub(crate) fn w(&self, c: usize) -> F {
        match self.weight {
            Some(w) => w.get(c).copied().unwrap_or(F::NAN),
            None => F::ONE,
        }
    }
}

/// What one row contributes.
#[derive(Clone, Copy)]
pub(crate) struct RowLoss<F> {
    /// The (class-weighted, smoothed) cross-entropy of the row, unreduced.
    pub(crate) ce: F,
    /// `z·lse²` (0 without z-loss).
    pub(crate) z: F,
    pub(crate) lse: F,
    pub(crate) entropy: F,
}

/// The gradient of a class-index row's loss in terms of its probabilities `p` (before the
/// soft-cap's derivative): `g_j = p_j·a − b·w_j` off the target and [`target`](Self::target) at
/// it, with `a = s·((1 − ε)·w_t + ε/C·W) + zterm`, `b = s·ε/C`, `zterm = 2·s_z·z·lse` (`s` and
/// `s_z` the scales of the cross-entropy and z-loss parts). The one statement of the formula
/// for [`cross_entropy`], [`linear_cross_entropy`](crate::linear_cross_entropy) and
/// [`ChunkedCrossEntropy`](crate::ChunkedCrossEntropy).
#[derive(Clone, Copy)]
pub(crate) struct RowGrad<F> {
    pub(crate) a: F,
    pub(crate) b: F,
    zterm: F,
    s_ce: F,
    keep: F,
    eps_c: F,
    w_total: F,
    w_t: F,
}

impl<F: Float> RowGrad<F> {
    /// The coefficients for target class `t` and log-sum-exp `lse`, with the scales of `k`.
    #[inline(always)]
    pub(crate) fn new(k: &Consts<'_, F>, t: usize, lse: F) -> Self {
        let w_t = k.w(t);
        let zterm = if k.zl > F::ZERO {
            (k.s_z + k.s_z) * k.zl * lse
        } else {
            F::ZERO
        };
        RowGrad {
            a: k.s_ce * (k.keep * w_t + k.eps_c * k.w_total) + zterm,
            b: k.s_ce * k.eps_c,
            zterm,
            s_ce: k.s_ce,
            keep: k.keep,
            eps_c: k.eps_c,
            w_total: k.w_total,
            w_t,
        }
    }

    /// `g_j = p_j·a − b·w_j`, off the target.
    #[inline(always)]
    pub(crate) fn at(&self, p: F, w_j: F) -> F {
        p * self.a - self.b * w_j
    }

    /// The target's entry `s·((1 − ε)·w_t·(p_t − 1) + ε/C·(W·p_t − w_t)) + zterm·p_t` (`p_t − 1`
    /// is exact).
    #[inline(always)]
    pub(crate) fn target(&self, p_t: F) -> F {
        self.s_ce
            * (self.keep * self.w_t * (p_t - F::ONE) + self.eps_c * (self.w_total * p_t - self.w_t))
            + self.zterm * p_t
    }
}

/// The loss terms of a class-index row from its finished normaliser `st`, for the callers that
/// never hold the whole row ([`ChunkedCrossEntropy`](crate::ChunkedCrossEntropy),
/// [`linear_cross_entropy`](crate::linear_cross_entropy)): `−ln p_t` from the state (`z_t` the
/// target's, capped, logit), the smoothing term from `wz = Σ_c w_c z_c` (its limit when the
/// log-sum-exp is not finite: `W·ln C` when every one of the `classes` logits is `+inf`, else
/// `+inf`, NaN for NaN), the z-loss.
#[inline]
pub(crate) fn streamed_row<F: Float, B: Backend<F>>(
    k: &Consts<'_, F>,
    st: &softmax_core::LogSumExp<F, B>,
    t: usize,
    z_t: F,
    wz: F,
    classes: usize,
) -> RowLoss<F> {
    let lse = st.finish();
    let mut ce = k.keep * k.w(t) * -st.log_prob(z_t);
    if k.eps > F::ZERO {
        let smooth = if lse.is_finite() {
            k.w_total * lse - wz
        } else if lse == F::INFINITY && st.scaled_sum() == F::from_usize(classes) {
            // Every logit +inf: each −ln p_c = ln C.
            k.w_total * B::ln(F::from_usize(classes))
        } else if lse.is_nan() {
            lse
        } else {
            F::INFINITY
        };
        ce += k.eps_c * smooth;
    }
    let z = k.z_loss(lse);
    RowLoss {
        ce,
        z,
        lse,
        entropy: F::ZERO,
    }
}

/// The targets' total weight and count (samples not ignored), after checking every target.
pub(crate) struct Tally<F> {
    pub(crate) total: F,
    pub(crate) count: usize,
}

impl<F: Float> Tally<F> {
    pub(crate) fn of(
        target: &[i64],
        classes: usize,
        ignore_index: i64,
        weight: Option<&[F]>,
    ) -> Result<Self, Error> {
        let mut total = F::ZERO;
        let mut count = 0usize;
        for (sample, &t) in target.iter().enumerate() {
            if t == ignore_index {
                continue;
            }
            let c = class_of(t, classes).ok_or(Error::TargetOutOfRange { sample, target: t })?;
            total += match weight {
                Some(w) => w.get(c).copied().unwrap_or(F::NAN),
                None => F::ONE,
            };
            count += 1;
        }
        Ok(Tally { total, count })
    }

    /// `(s_ce, s_z)`: the gradient scales of the reduction; `Mean` over zero total weight is
    /// [`Error::NoTargets`].
    pub(crate) fn scales(&self, reduction: Reduction) -> Result<(F, F), Error> {
        if reduction == Reduction::Mean {
            if self.total == F::ZERO || self.count == 0 {
                return Err(Error::NoTargets);
            }
            Ok((F::ONE / self.total, F::ONE / F::from_usize(self.count)))
        } else {
            Ok((F::ONE, F::ONE))
        }
    }
}

/// The class index of a target, if it is one.
#[inline]
pub(crate) fn class_of(t: i64, classes: usize) -> Option<usize> {
    usize::try_from(t).ok().filter(|&c| c < classes)
}

/// `−ln p_t` of the target, from the row's softmax value `p_t` and log-sum-exp: `−ln p_t` where
/// that is the more accurate of the two (a normal probability and `|lse| > 4`, where
/// `lse − z_t` would carry the rounding of a large `lse`), `lse − z_t` otherwise (small `lse`:
/// exact to a few units of roundoff, also for losses near 0; tiny probabilities: a large loss).
/// An all-`-inf` row gives `+inf` (the target is impossible); `+inf` logits give the limit
/// (`ln k` for a target among the `k` infinite logits, `+inf` otherwise); NaN gives NaN.
#[inline]
pub(crate) fn nll_of<F: Float, B: Backend<F>>(p_t: F, lse: F, z_t: F) -> F {
    let floor = F::from_f64(if math::is_f32::<F>() { 1e-30 } else { 1e-300 });
    if lse == F::NEG_INFINITY {
        F::INFINITY
    } else if p_t >= floor && (lse.abs() > F::from_f64(4.0) || lse.is_nan()) {
        -B::ln(p_t)
    } else {
        lse - z_t
    }
}

/// `−ln softmax(z)_c` at one value, for rows whose log-sum-exp is not finite (`k` the number of
/// `+inf` logits): the limits of the edge semantics.
#[inline]
fn nlp_limit<F: Float, B: Backend<F>>(z: F, lse: F, k: usize) -> F {
    if lse.is_nan() || z.is_nan() {
        F::NAN
    } else if lse == F::INFINITY && z == F::INFINITY {
        B::ln(F::from_usize(k))
    } else {
        F::INFINITY
    }
}

/// `Σ_c u_c·(−ln p_c)` over a row whose log-sum-exp is not finite (`u` the per-class factors
/// of the smoothing term or of the probability targets).
fn sum_limit<F: Float, B: Backend<F>>(z: RowZ<'_, F>, lse: F, u: impl Fn(usize) -> F) -> F {
    let k = z.x.iter().filter(|&&v| v == F::INFINITY).count();
    let mut s = F::ZERO;
    for (c, _) in z.x.iter().enumerate() {
        s += u(c) * nlp_limit::<F, B>(z.at::<B>(c), lse, k);
    }
    s
}

/// One row with a class-index target, gradient included: the softmax and its log-sum-exp in
/// `g` (softmax-core's `softmax_lse`, two reads of the logits), then one pass turning the
/// probabilities into the gradient, or, when that pass is a plain scaling (no cap, smoothing
/// or z-loss), `softmax_lse_scaled`, which does it in the softmax's last pass with the same
/// bits. `t` must be a class index.
#[inline(always)]
pub(crate) fn row_grad<F: Float, B: Backend<F>>(
    x: &[F],
    g: &mut [F],
    t: usize,
    k: &Consts<'_, F>,
    want_entropy: bool,
) -> RowLoss<F> {
    let mut entropy = F::ZERO;
    let mut wz = F::ZERO;
    // Without a cap, smoothing or z-loss the gradient off the target is `p_j·a`, with `a` known
    // before the row: softmax-core multiplies it in its last pass (the same bits as the pass
    // below, one pass over the row fewer) and hands back the target's `p_t`.
    let rg0 = RowGrad::new(k, t, F::ZERO);
    let scaled = k.cap.is_none() && k.zl <= F::ZERO && rg0.b == F::ZERO;
    let mut p_scaled = F::NAN;
    let lse = match k.cap {
        Some(c) => {
            for (g, &x) in g.iter_mut().zip(x) {
                *g = special::softcap(B::default(), x, c);
            }
            if want_entropy {
                entropy = softmax_core::entropy(B::default(), g, F::ONE).unwrap_or(F::NAN);
            }
            if k.eps > F::ZERO {
                wz = weighted(k.weight, g);
            }
            softmax_core::softmax_lse_in_place(B::default(), g).unwrap_or(F::NAN)
        }
        None => {
            if want_entropy {
                entropy = softmax_core::entropy(B::default(), x, F::ONE).unwrap_or(F::NAN);
            }
            if k.eps > F::ZERO {
                wz = weighted(k.weight, x);
            }
            if scaled {
                let (lse, p) = softmax_core::softmax_lse_scaled(B::default(), x, g, rg0.a, t)
                    .unwrap_or((F::NAN, F::NAN));
                p_scaled = p;
                lse
            } else {
                softmax_core::softmax_lse(B::default(), x, g).unwrap_or(F::NAN)
            }
        }
    };
    let rz = RowZ { x, cap: k.cap };
    let z_t = rz.at::<B>(t);
    let p_t = if scaled {
        p_scaled
    } else {
        g.get(t).copied().unwrap_or(F::NAN)
    };
    let w_t = k.w(t);
    let nll = nll_of::<F, B>(p_t, lse, z_t);
    let mut ce = k.keep * w_t * nll;
    if k.eps > F::ZERO {
        let smooth = if lse.is_finite() {
            k.w_total * lse - wz
        } else {
            sum_limit::<F, B>(rz, lse, |c| k.w(c))
        };
        ce += k.eps_c * smooth;
    }
    let z = k.z_loss(lse);

    // The gradient (RowGrad's formula), times the soft-cap's derivative.
    let rg = RowGrad::new(k, t, lse);
    let g_t = rg.target(p_t);
    match (k.cap, k.weight) {
        _ if scaled => {}
        (None, _) if rg.b == F::ZERO => {
            if rg.a != F::ONE {
                for g in g.iter_mut() {
                    *g *= rg.a;
                }
            }
        }
        (None, None) => {
            for g in g.iter_mut() {
                *g = rg.at(*g, F::ONE);
            }
        }
        (None, Some(w)) => {
            for (g, &w) in g.iter_mut().zip(w) {
                *g = rg.at(*g, w);
            }
        }
        (Some(c), _) => {
            for (j, (g, &x)) in g.iter_mut().zip(x).enumerate() {
                let d = special::softcap_slope(B::default(), x, c);
                *g = rg.at(*g, k.w(j)) * d;
            }
        }
    }
    if let Some(gt) = g.get_mut(t) {
        *gt = match k.cap {
            Some(c) => {
                g_t * special::softcap_slope(B::default(), x.get(t).copied().unwrap_or(F::NAN), c)
            }
            None => g_t,
        };
    }
    RowLoss {
        ce,
        z,
        lse,
        entropy,
    }
}

/// `Σ_c w_c·z_c`, or `Σ_c z_c`.
#[inline]
fn weighted<F: Float>(w: Option<&[F]>, z: &[F]) -> F {
    match w {
        Some(w) => math::dot(w, z),
        None => math::sum(z),
    }
}

/// One row with a class-index target, loss only: the online state of the (capped) row (two
/// reads of the logits, no buffer), `ln p_t` from it.
fn row_loss<F: Float, B: Backend<F>>(
    x: &[F],
    t: usize,
    k: &Consts<'_, F>,
    want_entropy: bool,
) -> RowLoss<F> {
    let rz = RowZ { x, cap: k.cap };
    let st = rz.state::<B>();
    let lse = st.finish();
    let z_t = rz.at::<B>(t);
    let nll = -st.log_prob(z_t);
    let mut ce = k.keep * k.w(t) * nll;
    if k.eps > F::ZERO {
        let smooth = if lse.is_finite() {
            k.w_total * lse - rz.weighted_sum::<B>(k.weight)
        } else {
            sum_limit::<F, B>(rz, lse, |c| k.w(c))
        };
        ce += k.eps_c * smooth;
    }
    let z = k.z_loss(lse);
    let entropy = if want_entropy {
        rz.entropy(&st)
    } else {
        F::ZERO
    };
    RowLoss {
        ce,
        z,
        lse,
        entropy,
    }
}

/// The statistics of an ignored row (its logits take no part in the loss).
fn row_stats_only<F: Float, B: Backend<F>>(
    x: &[F],
    cap: Option<F>,
    want_lse: bool,
    want_entropy: bool,
) -> (F, F) {
    if !(want_lse || want_entropy) {
        return (F::ZERO, F::ZERO);
    }
    let rz = RowZ { x, cap };
    let st = rz.state::<B>();
    let h = if want_entropy {
        rz.entropy(&st)
    } else {
        F::ZERO
    };
    (st.finish(), h)
}

/// Writes one row's statistics.
#[inline]
fn put_stats<F: Float>(stats: &mut Stats<'_, F>, n: usize, x: &[F], lse: F, entropy: F) {
    if let Some(v) = stats.lse.as_deref_mut().and_then(|v| v.get_mut(n)) {
        *v = lse;
    }
    if let Some(v) = stats.entropy.as_deref_mut().and_then(|v| v.get_mut(n)) {
        *v = entropy;
    }
    if let Some(v) = stats.argmax.as_deref_mut().and_then(|v| v.get_mut(n)) {
        *v = softmax_core::argmax(x).unwrap_or(0);
    }
}

/// Sums per-row contributions and writes the reduced loss / per-sample losses.
pub(crate) struct Acc<F> {
    ce: F,
    z: F,
}

impl<F: Float> Acc<F> {
    pub(crate) fn new() -> Self {
        Acc {
            ce: F::ZERO,
            z: F::ZERO,
        }
    }

    #[inline]
    pub(crate) fn add(
        &mut self,
        losses: &mut Option<&mut [F]>,
        n: usize,
        reduction: Reduction,
        r: &RowLoss<F>,
    ) {
        self.ce += r.ce;
        self.z += r.z;
        if reduction == Reduction::None {
            if let Some(l) = losses.as_deref_mut().and_then(|l| l.get_mut(n)) {
                *l = r.ce + r.z;
            }
        }
    }

    /// The reduced loss: `Σ ce/Σw + Σ z/count` for `Mean`, the sum otherwise.
    pub(crate) fn finish(
        &self,
        losses: &mut Option<&mut [F]>,
        reduction: Reduction,
        total: F,
        count: usize,
    ) -> F {
        let v = match reduction {
            Reduction::Mean => {
                let ce = self.ce / total;
                if self.z == F::ZERO {
                    ce
                } else {
                    ce + self.z / F::from_usize(count)
                }
            }
            _ => self.ce + self.z,
        };
        if reduction != Reduction::None {
            if let Some(l) = losses.as_deref_mut().and_then(|l| l.first_mut()) {
                *l = v;
            }
        }
        v
    }
}

/// Cross-entropy of logits with class-index targets, as PyTorch's
/// `torch.nn.functional.cross_entropy(logits, target, weight, ignore_index=-100,
/// reduction="mean", label_smoothing=0.0)`, with its gradient with respect to the logits, and
/// the soft-cap and z-loss options of large-vocabulary training.
///
/// `logits` holds `B` rows of `classes` values; `target` one class index per row (or
/// `ignore_index`). Per sample `n` not ignored, with `p = softmax(z_n)`, `z_n` the (soft-capped)
/// logits, `w` the class weights (1 without), ε the label smoothing:
///
/// `ℓ_n = (1 − ε)·w_{t_n}·(−ln p_{t_n}) + ε/C·Σ_c w_c·(−ln p_c) + z_loss·lse_n²`
///
/// `Mean` divides the cross-entropy part by `Σ_n w_{t_n}` over the samples not ignored (as
/// PyTorch does, smoothing included) and the z-loss part by their number; a `Mean` over zero
/// total weight is [`Error::NoTargets`] (PyTorch: NaN). `None` writes `ℓ_n` per sample into
/// the outputs' `losses` (required then; 0 for ignored samples).
///
/// Returns the scalar whose gradient the call writes: the mean, the sum, or with `None` the sum
/// of the per-sample values. The outputs ([`CrossEntropyOutputs`]) receive, each if given: the
/// per-sample losses, the gradient with respect to the raw logits (`B·C`), and the per-row
/// log-sum-exp, entropy and argmax (ignored rows included).
///
/// # Passes and memory
///
/// With a gradient buffer, per row: softmax-core's `softmax_lse` writes the probabilities into
/// the gradient row and returns the log-sum-exp (two reads of the logits), then one pass turns
/// them into the gradient; without label smoothing, soft-cap or z-loss that pass is folded into
/// the softmax's own last one (`softmax_lse_scaled`: the same bits, one pass fewer; the
/// default options). With soft-cap, the capped logits are written to the gradient row
/// first, the softmax runs in place, and the gradient pass recomputes the cap's derivative from
/// the raw logit. Label smoothing adds one `dot` over the row. No buffer beyond the gradient.
/// Without a gradient buffer: softmax-core's online `LogSumExp` state over the row (two reads,
/// no buffer; soft-capped values pass through a 64-value stack buffer).
///
/// Ignored rows get an all-zero gradient row and never enter the loss, so a row of `-inf` (or
/// NaN) with `ignore_index` gives no NaN anywhere.
///
/// # Edge semantics
///
/// A row whose logits are all `-inf` (not ignored) has loss `+inf` (its target is impossible;
/// PyTorch gives NaN); `+inf` logits take the limit distribution (loss `ln k` for a target among
/// `k` infinite logits, `+inf` otherwise); a NaN logit makes its row's loss and gradient NaN.
/// A `-inf` logit at the target gives `+inf`, its gradient stays finite (`p − 1`).
///
/// # Accuracy
///
/// f32, `Poly` or `Libm`, measured against an f64 reference (`harness/tests/loss_*.rs`,
/// golden vectors): each `−ln p_t` within `8·2⁻²⁴·(1 + ℓ)` absolute (computed as `−ln p_t` or
/// `lse − z_t`, whichever is exact to a few units of roundoff for the row); the smoothing term
/// `W·lse − Σ w_c z_c` within `(⌈C/16⌉ + 6)·2⁻²⁴·Σ_c |w_c|·(|lse| + |z_c|)`; the gradient within
/// the softmax's `2e-6` relative per entry plus `2⁻²³·|g|`. The value without a gradient buffer
/// (from the online state) may differ from the value with one in the last bits.
///
/// # Errors
///
/// [`Error::Empty`] for `classes = 0`; [`Error::RaggedBatch`], [`Error::LengthMismatch`] for
/// buffers that do not fit; [`Error::MissingOutput`] for `None` without `losses`;
/// [`Error::TargetOutOfRange`]; [`Error::NoTargets`]; [`Error::InvalidParameter`] (smoothing
/// outside `[0, 1]`, soft-cap not finite and positive, z-loss negative or not finite,
/// `BatchMean`).
///
/// # Examples
///
/// ```
/// use loss_core::{cross_entropy, CrossEntropyOptions, CrossEntropyOutputs, Error, Reduction};
/// use loss_core::softmax_core::backend::Poly;
/// // Two samples of three classes; the second is ignored.
/// let logits = [2.0f32, 1.0, 0.1, f32::NEG_INFINITY, f32::NEG_INFINITY, f32::NEG_INFINITY];
/// let mut grad = [0.0f32; 6];
/// let loss = cross_entropy(Poly, &logits, 3, &[0, -100], &CrossEntropyOptions::new(),
///                          CrossEntropyOutputs::new().with_grad(&mut grad))?;
/// assert!((loss - 0.417_030_1).abs() < 1e-6); // −ln softmax([2, 1, 0.1])₀
/// assert!((grad[0] - (0.659_001_1 - 1.0)).abs() < 1e-6);
/// assert_eq!(&grad[3..], &[0.0, 0.0, 0.0]);
/// // With `None` the per-sample losses are the result: their buffer is required.
/// let none = CrossEntropyOptions::new().with_reduction(Reduction::None);
/// let r = cross_entropy(Poly, &logits, 3, &[0, -100], &none, CrossEntropyOutputs::new());
/// assert_eq!(r, Err(Error::MissingOutput { argument: "losses" }));
/// let mut per = [0.0f32; 2];
/// let sum = cross_entropy(Poly, &logits, 3, &[0, -100], &none,
///                         CrossEntropyOutputs::new().with_losses(&mut per))?;
/// assert_eq!(per[1], 0.0);
/// assert_eq!(sum, per[0] + per[1]);
/// # Ok::<(), loss_core::Error>(())
/// ```
pub fn cross_entropy<F: Float, B: Backend<F>>(
    _backend: B,
    logits: &[F],
    classes: usize,
    target: &[i64],
    options: &CrossEntropyOptions<'_, F>,
    out: CrossEntropyOutputs<'_, F>,
) -> Result<F, Error> {
    let rows = rows_of("logits", logits.len(), classes)?;
    check_len("target", rows, target.len())?;
    options.validate(classes)?;
    out.check(options.reduction, rows, logits.len())?;
    let CrossEntropyOutputs {
        mut losses,
        grad,
        mut stats,
    } = out;
    let tally = Tally::of(target, classes, options.ignore_index, options.weight)?;
    let (s_ce, s_z) = tally.scales(options.reduction)?;
    let k = Consts::new(options, classes, s_ce, s_z);
    let reduction = options.reduction;
    let want_lse = stats.lse.is_some();
    let want_entropy = stats.entropy.is_some();
    let want_stats = !stats.is_empty();
    let mut acc = Acc::new();
    simd::dispatch(
        #[inline(always)]
        || {
            let mut grad_rows = grad.map(|g| chunks_mut(g, classes));
            for (n, (x, &t)) in chunks(logits, classes).zip(target).enumerate() {
                let g = grad_rows.as_mut().and_then(|it| it.next());
                let Some(c) = (t != options.ignore_index)
                    .then(|| class_of(t, classes))
                    .flatten()
                else {
                    // Ignored: zero gradient, no loss; statistics only if asked for.
                    if let Some(g) = g {
                        g.fill(F::ZERO);
                    }
                    if want_stats {
                        let (lse, h) = row_stats_only::<F, B>(x, k.cap, want_lse, want_entropy);
                        put_stats(&mut stats, n, x, lse, h);
                    }
                    if reduction == Reduction::None {
                        if let Some(l) = losses.as_deref_mut().and_then(|l| l.get_mut(n)) {
                            *l = F::ZERO;
                        }
                    }
                    continue;
                };
                let r = match g {
                    Some(g) => row_grad::<F, B>(x, g, c, &k, want_entropy),
                    None => row_loss::<F, B>(x, c, &k, want_entropy),
                };
                if want_stats {
                    put_stats(&mut stats, n, x, r.lse, r.entropy);
                }
                acc.add(&mut losses, n, reduction, &r);
            }
        },
    );
    Ok(acc.finish(&mut losses, reduction, tally.total, tally.count))
}

/// One row with probability targets `t` (length C), gradient optional.
fn row_probs<F: Float, B: Backend<F>>(
    x: &[F],
    tp: &[F],
    g: Option<&mut [F]>,
    k: &Consts<'_, F>,
    want_entropy: bool,
) -> RowLoss<F> {
    // S = Σ_c w_c·t'_c with t' = (1 − ε)·t + ε/C.
    let wt = match k.weight {
        Some(w) => math::dot(w, tp),
        None => math::sum(tp),
    };
    let s = k.keep * wt + k.eps_c * k.w_total;
    // D = Σ_c w_c·t'_c·z_c, accumulated over (chunks of) the (capped) row.
    let mut d_wtz = F::ZERO;
    let mut d_wz = F::ZERO;
    let mut sums = |off: usize, z: &[F]| {
        let t = tp.get(off..off + z.len()).unwrap_or(&[]);
        match k.weight {
            None => d_wtz += math::dot(t, z),
            Some(w) => {
                let w = w.get(off..off + z.len()).unwrap_or(&[]);
                let mut buf = [F::ZERO; CHUNK];
                let parts = math::pieces(z, CHUNK).zip(math::pieces(t, CHUNK));
                for ((zc, tc), wc) in parts.zip(math::pieces(w, CHUNK)) {
                    let b = &mut buf[..zc.len().min(CHUNK)];
                    for ((b, &t), &w) in b.iter_mut().zip(tc).zip(wc) {
                        *b = w * t;
                    }
                    d_wtz += math::dot(b, zc);
                }
            }
        }
        if k.eps > F::ZERO {
            d_wz += weighted(k.weight, z);
        }
    };
    let rz = RowZ { x, cap: k.cap };
    let mut entropy = F::ZERO;
    let lse = match g {
        Some(g) => {
            let lse = match k.cap {
                Some(c) => {
                    for (g, &x) in g.iter_mut().zip(x) {
                        *g = special::softcap(B::default(), x, c);
                    }
                    if want_entropy {
                        entropy = softmax_core::entropy(B::default(), g, F::ONE).unwrap_or(F::NAN);
                    }
                    sums(0, g);
                    softmax_core::softmax_lse_in_place(B::default(), g).unwrap_or(F::NAN)
                }
                None => {
                    if want_entropy {
                        entropy = softmax_core::entropy(B::default(), x, F::ONE).unwrap_or(F::NAN);
                    }
                    sums(0, x);
                    softmax_core::softmax_lse(B::default(), x, g).unwrap_or(F::NAN)
                }
            };
            // g_j = s·(p_j·S − w_j·t'_j) + 2·s_z·z·lse·p_j, times the cap's derivative.
            let zterm = if k.zl > F::ZERO {
                (k.s_z + k.s_z) * k.zl * lse
            } else {
                F::ZERO
            };
            let a = k.s_ce * s + zterm;
            for (j, ((g, &t), &x)) in g.iter_mut().zip(tp).zip(x).enumerate() {
                let tj = k.keep * t + k.eps_c;
                let mut v = *g * a - k.s_ce * (k.w(j) * tj);
                if let Some(c) = k.cap {
                    v *= special::softcap_slope(B::default(), x, c);
                }
                *g = v;
            }
            lse
        }
        None => {
            let st = rz.state::<B>();
            rz.for_chunks::<B>(&mut sums);
            if want_entropy {
                entropy = rz.entropy(&st);
            }
            st.finish()
        }
    };
    let ce = if lse.is_finite() {
        s * lse - (k.keep * d_wtz + k.eps_c * d_wz)
    } else {
        sum_limit::<F, B>(rz, lse, |c| {
            k.w(c) * (k.keep * tp.get(c).copied().unwrap_or(F::NAN) + k.eps_c)
        })
    };
    let z = k.z_loss(lse);
    RowLoss {
        ce,
        z,
        lse,
        entropy,
    }
}

/// Cross-entropy of logits with class-probability targets (soft labels), as PyTorch's
/// `torch.nn.functional.cross_entropy` with a floating-point target of the logits' shape:
/// per sample `ℓ_n = Σ_c w_c·t'_{n,c}·(−ln p_{n,c}) + z_loss·lse_n²` with
/// `t' = (1 − ε)·t + ε/C`. `Mean` divides by the batch size `B` (PyTorch's semantics, whatever
/// the weights), `B = 0` with `Mean` is [`Error::NoTargets`]. The targets are used as given
/// (rows need not sum to 1). `ignore_index` does not apply: it must be negative (PyTorch refuses
/// a non-negative one with probability targets), else [`Error::InvalidParameter`].
///
/// Returns the scalar whose gradient the call writes: the mean, the sum, or with `None` the sum
/// of the per-sample values (written to the outputs' `losses`, required then). Gradient:
/// `g_{n,j} = s·(p_j·Σ_c w_c t'_c − w_j t'_j)` (+ the z-loss and soft-cap terms as in
/// [`cross_entropy`]). Outputs, passes, memory, statistics and edge semantics as
/// [`cross_entropy`]; a zero target at a `-inf` logit gives NaN, as in PyTorch (`0·∞`).
///
/// # Accuracy
///
/// The loss is `S·lse − Σ w_c t'_c z_c` (`S = Σ w_c t'_c`), so its absolute error is about
/// `(⌈C/16⌉ + 6)·2⁻²⁴·Σ_c |w_c t'_c|·(|lse| + |z_c|)` in f32 (cancellation grows with a large
/// common offset of the logits); the gradient as [`cross_entropy`]'s.
///
/// # Errors
///
/// As [`cross_entropy`]; `target_probs` must hold `B·C` values.
///
/// # Examples
///
/// ```
/// use loss_core::{cross_entropy_probs, CrossEntropyOptions, CrossEntropyOutputs};
/// use loss_core::softmax_core::backend::Poly;
/// let logits = [0.0f64, 0.0];
/// let target = [0.25, 0.75];
/// let mut g = [0.0f64; 2];
/// let l = cross_entropy_probs(Poly, &logits, 2, &target, &CrossEntropyOptions::new(),
///                             CrossEntropyOutputs::new().with_grad(&mut g))?;
/// assert!((l - core::f64::consts::LN_2).abs() < 1e-15);
/// assert_eq!(g, [0.25, -0.25]);
/// # Ok::<(), loss_core::Error>(())
/// ```
pub fn cross_entropy_probs<F: Float, B: Backend<F>>(
    _backend: B,
    logits: &[F],
    classes: usize,
    target_probs: &[F],
    options: &CrossEntropyOptions<'_, F>,
    out: CrossEntropyOutputs<'_, F>,
) -> Result<F, Error> {
    let rows = rows_of("logits", logits.len(), classes)?;
    check_len("target_probs", logits.len(), target_probs.len())?;
    options.validate(classes)?;
    if options.ignore_index >= 0 {
        return Err(Error::InvalidParameter {
            name: "ignore_index",
        });
    }
    out.check(options.reduction, rows, logits.len())?;
    let CrossEntropyOutputs {
        mut losses,
        grad,
        mut stats,
    } = out;
    let reduction = options.reduction;
    let (s_ce, s_z) = if reduction == Reduction::Mean {
        if rows == 0 {
            return Err(Error::NoTargets);
        }
        let s = F::ONE / F::from_usize(rows);
        (s, s)
    } else {
        (F::ONE, F::ONE)
    };
    let k = Consts::new(options, classes, s_ce, s_z);
    let want_entropy = stats.entropy.is_some();
    let want_stats = !stats.is_empty();
    let mut acc = Acc::new();
    simd::dispatch(
        #[inline(always)]
        || {
            let mut grad_rows = grad.map(|g| chunks_mut(g, classes));
            for (n, (x, tp)) in chunks(logits, classes)
                .zip(chunks(target_probs, classes))
                .enumerate()
            {
                let g = grad_rows.as_mut().and_then(|it| it.next());
                let r = row_probs::<F, B>(x, tp, g, &k, want_entropy);
                if want_stats {
                    put_stats(&mut stats, n, x, r.lse, r.entropy);
                }
                acc.add(&mut losses, n, reduction, &r);
            }
        },
    );
    Ok(acc.finish(&mut losses, reduction, F::from_usize(rows), rows))
}
