//! The element-wise losses: binary cross-entropy with logits, torchvision's sigmoid focal loss,
//! KL divergence on log-probabilities, and the mean squared error — each with its gradient with
//! respect to its first input, in the forms that neither cancel nor overflow.

#![forbid(unsafe_code)]

use softmax_core::backend::Backend;
use softmax_core::{simd, special, Float};

use crate::error::{check_len, rows_of, Error};
use crate::math;
use crate::options::{scale_of, Outputs, Reduction};

/// Runs `f(i) -> (loss_i, grad_i)` over `len` elements, writing the gradient (times `scale`) and
/// the per-element losses, returning the reduced loss (sum in index order, times `scale` for
/// the means).
#[inline(always)]
fn reduce<F: Float>(
    len: usize,
    reduction: Reduction,
    scale: F,
    out: &mut Outputs<'_, F>,
    mut f: impl FnMut(usize) -> (F, F),
) -> F {
    let mut total = F::ZERO;
    let none = reduction == Reduction::None;
    let want_grad = out.grad.is_some();
    let mut losses = out.losses.as_deref_mut();
    let mut grad = out.grad.as_deref_mut();
    for i in 0..len {
        let (l, g) = f(i);
        total += l;
        if none {
            if let Some(v) = losses.as_deref_mut().and_then(|v| v.get_mut(i)) {
                *v = l;
            }
        }
        if want_grad {
            if let Some(v) = grad.as_deref_mut().and_then(|v| v.get_mut(i)) {
                *v = g * scale;
            }
        }
    }
    let v = match reduction {
        Reduction::Mean | Reduction::BatchMean => total * scale,
        _ => total,
    };
    if !none {
        if let Some(v0) = losses.and_then(|v| v.first_mut()) {
            *v0 = v;
        }
    }
    v
}

/// The options of [`binary_cross_entropy_with_logits`]: optional element weights (one per
/// element), optional `pos_weight` (one per class, broadcast over the rows), the reduction
/// (`Mean` by default).
///
/// # Examples
///
/// ```
/// use loss_core::{BceOptions, Reduction};
/// let pw = [2.0f32, 1.0];
/// let o = BceOptions::new().with_pos_weight(&pw).with_reduction(Reduction::Sum);
/// # let _ = o;
/// ```
#[derive(Clone, Copy, Debug)]
pub struct BceOptions<'a, F> {
    weight: Option<&'a [F]>,
    pos_weight: Option<&'a [F]>,
    reduction: Reduction,
}

impl<F: Float> Default for BceOptions<'_, F> {
    fn default() -> Self {
        Self::new()
    }
}

impl<'a, F: Float> BceOptions<'a, F> {
    /// No weights, `Mean`.
    ///
    /// # Examples
    ///
    /// ```
    /// let o = loss_core::BceOptions::<f32>::new();
    /// # let _ = o;
    /// ```
    pub fn new() -> Self {
        BceOptions {
            weight: None,
            pos_weight: None,
            reduction: Reduction::Mean,
        }
    }

    /// A weight per element (as many as the logits).
    ///
    /// # Examples
    ///
    /// ```
    /// let w = [1.0f32, 0.0];
    /// let o = loss_core::BceOptions::new().with_weight(&w);
    /// # let _ = o;
    /// ```
    pub fn with_weight(self, weight: &'a [F]) -> Self {
        BceOptions {
            weight: Some(weight),
            ..self
        }
    }

    /// The weight of positive examples, one per class (the last dimension).
    ///
    /// # Examples
    ///
    /// ```
    /// let pw = [3.0f64];
    /// let o = loss_core::BceOptions::new().with_pos_weight(&pw);
    /// # let _ = o;
    /// ```
    pub fn with_pos_weight(self, pos_weight: &'a [F]) -> Self {
        BceOptions {
            pos_weight: Some(pos_weight),
            ..self
        }
    }

    /// The reduction.
    ///
    /// # Examples
    ///
    /// ```
    /// let o = loss_core::BceOptions::<f32>::new().with_reduction(loss_core::Reduction::None);
    /// # let _ = o;
    /// ```
    pub fn with_reduction(self, reduction: Reduction) -> Self {
        BceOptions { reduction, ..self }
    }
}

/// Binary cross-entropy with logits, as PyTorch's
/// `binary_cross_entropy_with_logits(logits, target, weight, reduction, pos_weight)`:
/// per element `ℓ = w·[p_w·y·softplus(−x) + (1 − y)·softplus(x)]` — PyTorch's
/// `(1 − y)·x − (1 + (p_w − 1)·y)·log σ(x)` rewritten so that neither term cancels for targets in
/// `[0, 1]` (`softplus(x) = x + softplus(−x)`). Gradient
/// `w·[(1 − y)·σ(x) − p_w·y·σ(−x)]`. `logits` and `target` hold `B` rows of `classes` values
/// (`pos_weight` has `classes` values); `Mean` is over all elements.
///
/// Returns the scalar whose gradient the call writes: the mean, the sum, or with `None` the sum
/// of the per-element values (written to the outputs' `losses`, required then).
///
/// Accuracy: a few ULP per element (softplus and sigmoid of softmax-core's `special`, within
/// 3 ULP), the sum of the elements in order.
///
/// # Errors
///
/// [`Error::Empty`], [`Error::RaggedBatch`], [`Error::LengthMismatch`];
/// [`Error::MissingOutput`] for `None` without `losses`; [`Error::NoTargets`] for `Mean` over
/// no elements; [`Error::InvalidParameter`] for `BatchMean`.
///
/// # Examples
///
/// ```
/// use loss_core::{binary_cross_entropy_with_logits, BceOptions, Outputs};
/// use loss_core::softmax_core::backend::Poly;
/// let mut g = [0.0f64; 2];
/// let l = binary_cross_entropy_with_logits(Poly, &[0.0, 0.0], &[1.0, 0.0], 2,
///                                          &BceOptions::new(), Outputs::new().with_grad(&mut g))?;
/// assert!((l - core::f64::consts::LN_2).abs() < 1e-15);
/// assert_eq!(g, [-0.25, 0.25]);
/// # Ok::<(), loss_core::Error>(())
/// ```
pub fn binary_cross_entropy_with_logits<F: Float, B: Backend<F>>(
    _backend: B,
    logits: &[F],
    target: &[F],
    classes: usize,
    options: &BceOptions<'_, F>,
    mut out: Outputs<'_, F>,
) -> Result<F, Error> {
    let len = logits.len();
    let rows = rows_of("logits", len, classes)?;
    check_len("target", len, target.len())?;
    if let Some(w) = options.weight {
        check_len("weight", len, w.len())?;
    }
    if let Some(pw) = options.pos_weight {
        check_len("pos_weight", classes, pw.len())?;
    }
    let scale = scale_of(options.reduction, len, rows, false)?;
    out.check(options.reduction, len, len)?;
    Ok(simd::dispatch(
        #[inline(always)]
        || {
            reduce(len, options.reduction, scale, &mut out, |i| {
                let x = logits.get(i).copied().unwrap_or(F::NAN);
                let y = target.get(i).copied().unwrap_or(F::NAN);
                let w = options
                    .weight
                    .map_or(F::ONE, |w| w.get(i).copied().unwrap_or(F::NAN));
                let pw = options.pos_weight.map_or(F::ONE, |p| {
                    p.get(i.checked_rem(classes).unwrap_or(0))
                        .copied()
                        .unwrap_or(F::NAN)
                });
                let b = B::default();
                let l = pw * y * special::softplus(b, -x) + (F::ONE - y) * special::softplus(b, x);
                let g = (F::ONE - y) * special::sigmoid(b, x) - pw * y * special::sigmoid(b, -x);
                (w * l, w * g)
            })
        },
    ))
}

/// The options of [`sigmoid_focal_loss`], with torchvision's defaults: `alpha = 0.25`,
/// `gamma = 2`, reduction `None` (so the per-element buffer, the outputs' `losses`, is required
/// unless another reduction is chosen).
///
/// The setters do not validate; the loss does (and returns [`Error::InvalidParameter`]): `gamma`
/// finite and `>= 0`, `alpha` finite (a negative `alpha` turns the `α_t` factor off, as in
/// torchvision).
///
/// # Examples
///
/// ```
/// use loss_core::{Reduction, SigmoidFocalOptions};
/// let o = SigmoidFocalOptions::new().with_alpha(0.5f32).with_gamma(1.5)
///     .with_reduction(Reduction::Mean);
/// assert_eq!(o.reduction(), Reduction::Mean);
/// ```
#[derive(Clone, Copy, Debug)]
pub struct SigmoidFocalOptions<F> {
    alpha: F,
    gamma: F,
    reduction: Reduction,
}

impl<F: Float> Default for SigmoidFocalOptions<F> {
    fn default() -> Self {
        Self::new()
    }
}

impl<F: Float> SigmoidFocalOptions<F> {
    /// torchvision's defaults: `α = 0.25`, `γ = 2`, `Reduction::None`.
    ///
    /// # Examples
    ///
    /// ```
    /// let o = loss_core::SigmoidFocalOptions::<f32>::new();
    /// assert_eq!(o.reduction(), loss_core::Reduction::None);
    /// ```
    pub fn new() -> Self {
        SigmoidFocalOptions {
            alpha: F::from_f64(0.25),
            gamma: F::TWO,
            reduction: Reduction::None,
        }
    }

    /// The weight `α` of the positive class (`1 − α` for the negative one); negative: no
    /// weighting (torchvision's `alpha=-1`).
    ///
    /// # Examples
    ///
    /// ```
    /// let o = loss_core::SigmoidFocalOptions::new().with_alpha(-1.0f64);
    /// # let _ = o;
    /// ```
    pub fn with_alpha(self, alpha: F) -> Self {
        SigmoidFocalOptions { alpha, ..self }
    }

    /// The focusing exponent γ (finite, `>= 0`; 0 gives the α-weighted BCE).
    ///
    /// # Examples
    ///
    /// ```
    /// let o = loss_core::SigmoidFocalOptions::new().with_gamma(0.5f32);
    /// # let _ = o;
    /// ```
    pub fn with_gamma(self, gamma: F) -> Self {
        SigmoidFocalOptions { gamma, ..self }
    }

    /// The reduction (`None` by default, `Sum`, `Mean`).
    ///
    /// # Examples
    ///
    /// ```
    /// use loss_core::{Reduction, SigmoidFocalOptions};
    /// let o = SigmoidFocalOptions::<f32>::new().with_reduction(Reduction::Sum);
    /// # let _ = o;
    /// ```
    pub fn with_reduction(self, reduction: Reduction) -> Self {
        SigmoidFocalOptions { reduction, ..self }
    }

    /// The reduction in effect.
    ///
    /// # Examples
    ///
    /// ```
    /// use loss_core::{Reduction, SigmoidFocalOptions};
    /// assert_eq!(SigmoidFocalOptions::<f64>::new().reduction(), Reduction::None);
    /// ```
    pub fn reduction(&self) -> Reduction {
        self.reduction
    }
}

/// torchvision's `sigmoid_focal_loss(inputs, targets, alpha=0.25, gamma=2, reduction="none")`:
/// per element `ℓ = α_t·BCE(x, y)·(1 − p_t)^γ` with `p = σ(x)`,
/// `p_t = p·y + (1 − p)·(1 − y)`, `α_t = α·y + (1 − α)·(1 − y)` (no `α_t` factor when
/// `α < 0`). Computed without cancellation: `1 − p_t = σ(x)·(1 − y) + σ(−x)·y`, the BCE as in
/// [`binary_cross_entropy_with_logits`]. `γ` must be finite and `>= 0` (integer `γ <= 16` by
/// repeated multiplication, as `pow` does; other `γ` through the backend's `exp`/`ln`). The
/// options ([`SigmoidFocalOptions`]) default to torchvision's.
///
/// Returns the scalar whose gradient the call writes: the mean, the sum, or with `None` (the
/// default) the sum of the per-element values (written to the outputs' `losses`, required
/// then).
///
/// Gradient with respect to `x`:
/// `α_t·[(p − y)·m^γ + BCE·γ·m^(γ−1)·p(1 − p)·(1 − 2y)]`, `m = 1 − p_t` (the second term taken
/// as 0 where `m = 0`: its limit, where autograd would form `0·∞` for `γ < 1`).
///
/// Accuracy: a few ULP per element plus, for non-integer `γ`, the backend's `exp`/`ln` error
/// times `γ·|ln m|`.
///
/// # Errors
///
/// [`Error::LengthMismatch`] unless `target` is as long as `logits`; [`Error::MissingOutput`]
/// for `None` without `losses`; [`Error::NoTargets`] for `Mean` over no elements;
/// [`Error::InvalidParameter`] for `gamma` (negative, not finite), `alpha` (NaN or infinite) or
/// `BatchMean`.
///
/// # Examples
///
/// ```
/// use loss_core::{sigmoid_focal_loss, Outputs, SigmoidFocalOptions};
/// use loss_core::softmax_core::backend::Poly;
/// let mut per = [0.0f32; 2];
/// sigmoid_focal_loss(Poly, &[0.0, 3.0], &[1.0, 1.0], &SigmoidFocalOptions::new(),
///                    Outputs::new().with_losses(&mut per))?;
/// // x = 0: 0.25 · ln 2 · 0.5² = 0.0433217
/// assert!((per[0] - 0.043_321_7).abs() < 1e-7);
/// assert!(per[1] < 1e-4); // an easy example is down-weighted
/// # Ok::<(), loss_core::Error>(())
/// ```
pub fn sigmoid_focal_loss<F: Float, B: Backend<F>>(
    _backend: B,
    logits: &[F],
    target: &[F],
    options: &SigmoidFocalOptions<F>,
    mut out: Outputs<'_, F>,
) -> Result<F, Error> {
    let (alpha, gamma, reduction) = (options.alpha, options.gamma, options.reduction);
    let len = logits.len();
    check_len("target", len, target.len())?;
    if !(gamma >= F::ZERO && gamma.is_finite()) {
        return Err(Error::InvalidParameter { name: "gamma" });
    }
    if !alpha.is_finite() {
        return Err(Error::InvalidParameter { name: "alpha" });
    }
    let scale = scale_of(reduction, len, len, false)?;
    out.check(reduction, len, len)?;
    Ok(simd::dispatch(
        #[inline(always)]
        || {
            reduce(len, reduction, scale, &mut out, |i| {
                let x = logits.get(i).copied().unwrap_or(F::NAN);
                let y = target.get(i).copied().unwrap_or(F::NAN);
                let b = B::default();
                let (p, q) = (special::sigmoid(b, x), special::sigmoid(b, -x)); // σ(x), 1 − σ(x)
                let bce = y * special::softplus(b, -x) + (F::ONE - y) * special::softplus(b, x);
                let m = p * (F::ONE - y) + q * y; // 1 − p_t
                let mg = math::pow::<F, B>(m, gamma);
                let at = if alpha >= F::ZERO {
                    alpha * y + (F::ONE - alpha) * (F::ONE - y)
                } else {
                    F::ONE
                };
                let dbce = (F::ONE - y) * p - y * q; // σ(x) − y
                let dm = if gamma == F::ZERO || m == F::ZERO {
                    F::ZERO
                } else {
                    bce * gamma * math::pow::<F, B>(m, gamma - F::ONE) * (p * q) * (F::ONE - y - y)
                };
                (at * (bce * mg), at * (dbce * mg + dm))
            })
        },
    ))
}

/// The options of [`kl_div`], with PyTorch's defaults: reduction `Mean`, `log_target = false`.
///
/// # Examples
///
/// ```
/// use loss_core::{KlDivOptions, Reduction};
/// let o = KlDivOptions::new().with_reduction(Reduction::BatchMean).with_log_target(true);
/// assert!(o.log_target());
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct KlDivOptions {
    reduction: Reduction,
    log_target: bool,
}

impl KlDivOptions {
    /// PyTorch's defaults: `Mean`, the target holds probabilities.
    ///
    /// # Examples
    ///
    /// ```
    /// let o = loss_core::KlDivOptions::new();
    /// assert!(!o.log_target());
    /// ```
    pub fn new() -> Self {
        KlDivOptions {
            reduction: Reduction::Mean,
            log_target: false,
        }
    }

    /// The reduction (`None`, `Sum`, `Mean`, `BatchMean`; PyTorch recommends `BatchMean` for the
    /// true KL divergence).
    ///
    /// # Examples
    ///
    /// ```
    /// let o = loss_core::KlDivOptions::new().with_reduction(loss_core::Reduction::BatchMean);
    /// # let _ = o;
    /// ```
    pub fn with_reduction(self, reduction: Reduction) -> Self {
        KlDivOptions { reduction, ..self }
    }

    /// Whether the target holds log-probabilities (PyTorch's `log_target`).
    ///
    /// # Examples
    ///
    /// ```
    /// let o = loss_core::KlDivOptions::new().with_log_target(true);
    /// assert!(o.log_target());
    /// ```
    pub fn with_log_target(self, log_target: bool) -> Self {
        KlDivOptions { log_target, ..self }
    }

    /// Whether the target holds log-probabilities.
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(!loss_core::KlDivOptions::new().log_target());
    /// ```
    pub fn log_target(&self) -> bool {
        self.log_target
    }
}

/// The Kullback–Leibler divergence loss, as PyTorch's
/// `kl_div(input, target, reduction="mean", log_target=False)`, `input` holding
/// log-probabilities: per element `ℓ = t·(ln t − x)` (`0` where `t = 0`, as `xlogy`), or with
/// `log_target` `ℓ = e^t·(t − x)`. `Mean` divides by the number of elements, `BatchMean` by
/// `batch` (PyTorch's `input.size(0)`: the number of rows, or the length of a 1-D input), as
/// PyTorch recommends for the true KL. Gradient with respect to `input`: `−t` (or `−e^t`) times
/// the reduction's scale.
///
/// Returns the scalar whose gradient the call writes: the mean (`Mean`, or with `BatchMean` the
/// sum over `batch`), the sum, or with `None` the sum of the per-element values (written to the
/// outputs' `losses`, required then).
///
/// Accuracy: `t·ln t` and `e^t` within the backend's error (<= 1 ULP for `Poly`) plus two
/// roundings per element; the sum in order.
///
/// # Errors
///
/// [`Error::LengthMismatch`] unless `target` is as long as `input`; [`Error::Empty`] /
/// [`Error::RaggedBatch`] unless `batch` divides the length (`batch = 0` is allowed only for an
/// empty input); [`Error::MissingOutput`] for `None` without `losses`; [`Error::NoTargets`] for
/// a mean over nothing.
///
/// # Examples
///
/// ```
/// use loss_core::{kl_div, KlDivOptions, Outputs, Reduction};
/// use loss_core::softmax_core::backend::Poly;
/// let lp = [(0.5f64).ln(), (0.5f64).ln()];
/// let t = [0.25, 0.75];
/// let o = KlDivOptions::new().with_reduction(Reduction::BatchMean);
/// let kl = kl_div(Poly, &lp, &t, 1, &o, Outputs::new())?;
/// let want = 0.25 * (0.25f64 / 0.5).ln() + 0.75 * (0.75f64 / 0.5).ln();
/// assert!((kl - want).abs() < 1e-15);
/// # Ok::<(), loss_core::Error>(())
/// ```
pub fn kl_div<F: Float, B: Backend<F>>(
    _backend: B,
    input: &[F],
    target: &[F],
    batch: usize,
    options: &KlDivOptions,
    mut out: Outputs<'_, F>,
) -> Result<F, Error> {
    let (reduction, log_target) = (options.reduction, options.log_target);
    let len = input.len();
    check_len("target", len, target.len())?;
    if !(batch == 0 && len == 0) {
        rows_of("input", len, batch)?;
    }
    let scale = scale_of(reduction, len, batch, true)?;
    out.check(reduction, len, len)?;
    Ok(simd::dispatch(
        #[inline(always)]
        || {
            reduce(len, reduction, scale, &mut out, |i| {
                let x = input.get(i).copied().unwrap_or(F::NAN);
                let t = target.get(i).copied().unwrap_or(F::NAN);
                if log_target {
                    let e = B::exp(t);
                    (e * (t - x), -e)
                } else {
                    // xlogy(t, t) − t·x: 0·ln 0 = 0, NaN stays NaN.
                    let tlt = if t == F::ZERO { F::ZERO } else { t * B::ln(t) };
                    (tlt - t * x, -t)
                }
            })
        },
    ))
}

/// The options of [`mse_loss`], with PyTorch's default: reduction `Mean`.
///
/// # Examples
///
/// ```
/// use loss_core::{MseOptions, Reduction};
/// let o = MseOptions::new().with_reduction(Reduction::Sum);
/// assert_eq!(o.reduction(), Reduction::Sum);
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct MseOptions {
    reduction: Reduction,
}

impl MseOptions {
    /// PyTorch's default: `Mean`.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(loss_core::MseOptions::new().reduction(), loss_core::Reduction::Mean);
    /// ```
    pub fn new() -> Self {
        MseOptions {
            reduction: Reduction::Mean,
        }
    }

    /// The reduction (`None`, `Sum`, `Mean`).
    ///
    /// # Examples
    ///
    /// ```
    /// let o = loss_core::MseOptions::new().with_reduction(loss_core::Reduction::None);
    /// # let _ = o;
    /// ```
    pub fn with_reduction(self, reduction: Reduction) -> Self {
        MseOptions { reduction }
    }

    /// The reduction in effect.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(loss_core::MseOptions::new().reduction(), loss_core::Reduction::Mean);
    /// ```
    pub fn reduction(&self) -> Reduction {
        self.reduction
    }
}

/// The mean squared error, as PyTorch's `mse_loss(input, target, reduction="mean")`: per element
/// `(x − y)²`, gradient `2·(x − y)` times the reduction's scale. Exact to one rounding per
/// element operation; the sum in order. The backend is not used (no `exp` or `ln` is taken); it
/// is there so that every loss is called the same way.
///
/// Returns the scalar whose gradient the call writes: the mean, the sum, or with `None` the sum
/// of the per-element values (written to the outputs' `losses`, required then).
///
/// # Errors
///
/// [`Error::LengthMismatch`] unless the lengths match; [`Error::MissingOutput`] for `None`
/// without `losses`; [`Error::NoTargets`] for `Mean` over no elements;
/// [`Error::InvalidParameter`] for `BatchMean`.
///
/// # Examples
///
/// ```
/// use loss_core::{mse_loss, MseOptions, Outputs};
/// use loss_core::softmax_core::backend::Poly;
/// let mut g = [0.0f32; 2];
/// let l = mse_loss(Poly, &[1.0, 3.0], &[0.0, 1.0], &MseOptions::new(),
///                  Outputs::new().with_grad(&mut g))?;
/// assert_eq!((l, g), (2.5, [1.0, 2.0]));
/// # Ok::<(), loss_core::Error>(())
/// ```
pub fn mse_loss<F: Float, B: Backend<F>>(
    _backend: B,
    input: &[F],
    target: &[F],
    options: &MseOptions,
    mut out: Outputs<'_, F>,
) -> Result<F, Error> {
    let reduction = options.reduction;
    let len = input.len();
    check_len("target", len, target.len())?;
    let scale = scale_of(reduction, len, len, false)?;
    out.check(reduction, len, len)?;
    Ok(simd::dispatch(
        #[inline(always)]
        || {
            reduce(len, reduction, scale, &mut out, |i| {
                let d = input.get(i).copied().unwrap_or(F::NAN)
                    - target.get(i).copied().unwrap_or(F::NAN);
                (d * d, d + d)
            })
        },
    ))
}
