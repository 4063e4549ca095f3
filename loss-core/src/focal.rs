//! The multi-class (softmax) focal loss.

#![forbid(unsafe_code)]

use softmax_core::backend::Backend;
use softmax_core::chunks::{chunks, chunks_mut};
use softmax_core::{simd, special, Float};

use crate::ce::{class_of, nll_of, Tally};
use crate::error::{check_len, rows_of, Error};
use crate::math::{self, RowZ};
use crate::options::{Outputs, Reduction};

/// The options of [`softmax_focal_loss`]: `gamma` (2 by default; finite and `>= 0`), optional
/// per-class `alpha` weights (length C), `ignore_index` (-100), the reduction (`Mean`).
///
/// # Examples
///
/// ```
/// use loss_core::{Reduction, SoftmaxFocalOptions};
/// let a = [0.25f32, 0.75];
/// let o = SoftmaxFocalOptions::new().with_gamma(1.5).with_alpha(&a).with_ignore_index(-1)
///     .with_reduction(Reduction::Sum);
/// # let _ = o;
/// ```
#[derive(Clone, Copy, Debug)]
pub struct SoftmaxFocalOptions<'a, F> {
    gamma: F,
    alpha: Option<&'a [F]>,
    ignore_index: i64,
    reduction: Reduction,
}

impl<F: Float> Default for SoftmaxFocalOptions<'_, F> {
    fn default() -> Self {
        Self::new()
    }
}

impl<'a, F: Float> SoftmaxFocalOptions<'a, F> {
    /// `γ = 2`, no `α`, `ignore_index = -100`, `Mean`.
    ///
    /// # Examples
    ///
    /// ```
    /// let o = loss_core::SoftmaxFocalOptions::<f32>::new();
    /// # let _ = o;
    /// ```
    pub fn new() -> Self {
        SoftmaxFocalOptions {
            gamma: F::TWO,
            alpha: None,
            ignore_index: -100,
            reduction: Reduction::Mean,
        }
    }

    /// The focusing exponent γ (finite, `>= 0`; 0 gives the cross-entropy).
    ///
    /// # Examples
    ///
    /// ```
    /// let o = loss_core::SoftmaxFocalOptions::new().with_gamma(0.5f64);
    /// # let _ = o;
    /// ```
    pub fn with_gamma(self, gamma: F) -> Self {
        SoftmaxFocalOptions { gamma, ..self }
    }

    /// Per-class weights `α_c` (length C).
    ///
    /// # Examples
    ///
    /// ```
    /// let a = [1.0f32, 2.0, 3.0];
    /// let o = loss_core::SoftmaxFocalOptions::new().with_alpha(&a);
    /// # let _ = o;
    /// ```
    pub fn with_alpha(self, alpha: &'a [F]) -> Self {
        SoftmaxFocalOptions {
            alpha: Some(alpha),
            ..self
        }
    }

    /// The target value whose samples are ignored.
    ///
    /// # Examples
    ///
    /// ```
    /// let o = loss_core::SoftmaxFocalOptions::<f32>::new().with_ignore_index(255);
    /// # let _ = o;
    /// ```
    pub fn with_ignore_index(self, ignore_index: i64) -> Self {
        SoftmaxFocalOptions {
            ignore_index,
            ..self
        }
    }

    /// The reduction (`None`, `Sum`, `Mean`).
    ///
    /// # Examples
    ///
    /// ```
    /// use loss_core::{Reduction, SoftmaxFocalOptions};
    /// let o = SoftmaxFocalOptions::<f32>::new().with_reduction(Reduction::Sum);
    /// # let _ = o;
    /// ```
    pub fn with_reduction(self, reduction: Reduction) -> Self {
        SoftmaxFocalOptions { reduction, ..self }
    }
}

/// The multi-class focal loss on logits (Lin et al.'s focal loss with a softmax, asked for in
/// torchvision, detectron2 and mmdet): per sample not ignored, with `p = softmax(x_n)`,
/// `ℓ_n = −α_{t}·(1 − p_t)^γ·ln p_t` (`α = 1` without `alpha`); `Mean` divides by the number
/// of samples not ignored (none: [`Error::NoTargets`]). With `γ = 0` and no `alpha` it is
/// [`cross_entropy`](crate::cross_entropy).
///
/// Returns the scalar whose gradient the call writes: the mean, the sum, or with `None` the sum
/// of the per-sample values (written to the outputs' `losses`, required then; 0 for ignored
/// samples).
///
/// Gradient with respect to the logits: `α_t·F·(p − e_t)·s` with
/// `F = (1 − p_t)^γ − γ·(1 − p_t)^(γ−1)·p_t·ln p_t` (the second term taken as 0 where
/// `p_t = 1`), `s` the reduction's scale. `1 − p_t` is computed as `−expm1(ln p_t)`, so it keeps
/// its digits for confident predictions. Passes and memory as
/// [`cross_entropy`](crate::cross_entropy) (`softmax_lse` into the gradient row, then one pass;
/// without a gradient buffer, the online state and no buffer). Ignored rows: zero gradient.
///
/// Accuracy: `ln p_t` as the cross-entropy's; `(1 − p_t)^γ` within a few ULP for integer
/// `γ <= 16`, within the backend's `exp`/`ln` error times `γ·|ln(1 − p_t)|` otherwise.
///
/// # Errors
///
/// As [`cross_entropy`](crate::cross_entropy) ([`Error::MissingOutput`] for `None` without
/// `losses`); [`Error::InvalidParameter`] for `gamma`.
///
/// # Examples
///
/// ```
/// use loss_core::{softmax_focal_loss, SoftmaxFocalOptions, Outputs};
/// use loss_core::softmax_core::backend::Poly;
/// let logits = [2.0f64, 1.0, 0.1];
/// let o = SoftmaxFocalOptions::new();
/// let l = softmax_focal_loss(Poly, &logits, 3, &[0], &o, Outputs::new())?;
/// let p0 = 0.659_001_138_885_968f64;
/// assert!((l - (1.0 - p0).powi(2) * -p0.ln()).abs() < 1e-14);
/// # Ok::<(), loss_core::Error>(())
/// ```
pub fn softmax_focal_loss<F: Float, B: Backend<F>>(
    _backend: B,
    logits: &[F],
    classes: usize,
    target: &[i64],
    options: &SoftmaxFocalOptions<'_, F>,
    mut out: Outputs<'_, F>,
) -> Result<F, Error> {
    let rows = rows_of("logits", logits.len(), classes)?;
    check_len("target", rows, target.len())?;
    if let Some(a) = options.alpha {
        check_len("alpha", classes, a.len())?;
    }
    let gamma = options.gamma;
    if !(gamma >= F::ZERO && gamma.is_finite()) {
        return Err(Error::InvalidParameter { name: "gamma" });
    }
    if options.reduction == Reduction::BatchMean {
        return Err(Error::InvalidParameter { name: "reduction" });
    }
    out.check(options.reduction, rows, logits.len())?;
    // Mean over the samples not ignored (unweighted count).
    let tally = Tally::<F>::of(target, classes, options.ignore_index, None)?;
    let (scale, _) = tally.scales(options.reduction)?;
    let none = options.reduction == Reduction::None;
    let mut total = F::ZERO;
    let mut losses = out.losses.take();
    simd::dispatch(
        #[inline(always)]
        || {
            let mut grad_rows = out.grad.as_deref_mut().map(|g| chunks_mut(g, classes));
            for (n, (x, &t)) in chunks(logits, classes).zip(target).enumerate() {
                let g = grad_rows.as_mut().and_then(|it| it.next());
                let c = (t != options.ignore_index)
                    .then(|| class_of(t, classes))
                    .flatten();
                let l = match c {
                    None => {
                        if let Some(g) = g {
                            g.fill(F::ZERO);
                        }
                        F::ZERO
                    }
                    Some(c) => {
                        let a = options
                            .alpha
                            .map_or(F::ONE, |a| a.get(c).copied().unwrap_or(F::NAN));
                        focal_row::<F, B>(x, g, c, a, gamma, scale)
                    }
                };
                total += l;
                if none {
                    if let Some(v) = losses.as_deref_mut().and_then(|v| v.get_mut(n)) {
                        *v = l;
                    }
                }
            }
        },
    );
    let v = if options.reduction == Reduction::Mean {
        total * scale
    } else {
        total
    };
    if !none {
        if let Some(v0) = losses.and_then(|v| v.first_mut()) {
            *v0 = v;
        }
    }
    Ok(v)
}

/// One row: its loss, and its gradient into `g` if given.
#[inline(always)]
fn focal_row<F: Float, B: Backend<F>>(
    x: &[F],
    g: Option<&mut [F]>,
    t: usize,
    alpha: F,
    gamma: F,
    scale: F,
) -> F {
    let x_t = x.get(t).copied().unwrap_or(F::NAN);
    let (nll, g) = match g {
        Some(g) => {
            let lse = softmax_core::softmax_lse(B::default(), x, g).unwrap_or(F::NAN);
            let p_t = g.get(t).copied().unwrap_or(F::NAN);
            (nll_of::<F, B>(p_t, lse, x_t), Some(g))
        }
        None => {
            let st = RowZ { x, cap: None }.state::<B>();
            (-st.log_prob(x_t), None)
        }
    };
    let lp = -nll; // ln p_t
    let om = -special::expm1(B::default(), lp); // 1 − p_t
    let mg = math::pow::<F, B>(om, gamma);
    let loss = alpha * mg * nll;
    if let Some(g) = g {
        // F = (1 − p_t)^γ − γ·(1 − p_t)^(γ−1)·p_t·ln p_t.
        let p_t = g.get(t).copied().unwrap_or(F::NAN);
        let second = if gamma == F::ZERO || om == F::ZERO || p_t == F::ZERO {
            F::ZERO // the limits: no γ term; p·ln p → 0
        } else {
            gamma * math::pow::<F, B>(om, gamma - F::ONE) * p_t * lp
        };
        let f = alpha * (mg - second) * scale;
        for g in g.iter_mut() {
            *g *= f;
        }
        if let Some(gt) = g.get_mut(t) {
            *gt = -(om * f);
        }
    }
    loss
}
