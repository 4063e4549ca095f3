//! The negative log-likelihood loss on log-probabilities, as PyTorch's `nll_loss`.

#![forbid(unsafe_code)]

use softmax_core::backend::Backend;
use softmax_core::chunks::{chunks, chunks_mut};
use softmax_core::Float;

use crate::ce::{class_of, Tally};
use crate::error::{check_len, rows_of, Error};
use crate::options::{Outputs, Reduction};

/// The options of [`nll_loss`], with PyTorch's defaults: no class weights,
/// `ignore_index = -100`, `Mean`.
///
/// # Examples
///
/// ```
/// use loss_core::{NllOptions, Reduction};
/// let w = [1.0f32, 2.0];
/// let o = NllOptions::new().with_weight(&w).with_ignore_index(1).with_reduction(Reduction::Sum);
/// # let _ = o;
/// ```
#[derive(Clone, Copy, Debug)]
pub struct NllOptions<'a, F> {
    weight: Option<&'a [F]>,
    ignore_index: i64,
    reduction: Reduction,
}

impl<F: Float> Default for NllOptions<'_, F> {
    fn default() -> Self {
        Self::new()
    }
}

impl<'a, F: Float> NllOptions<'a, F> {
    /// PyTorch's defaults.
    ///
    /// # Examples
    ///
    /// ```
    /// let o = loss_core::NllOptions::<f64>::new();
    /// # let _ = o;
    /// ```
    pub fn new() -> Self {
        NllOptions {
            weight: None,
            ignore_index: -100,
            reduction: Reduction::Mean,
        }
    }

    /// Per-class weights (length C).
    ///
    /// # Examples
    ///
    /// ```
    /// let w = [0.5f32, 1.5];
    /// let o = loss_core::NllOptions::new().with_weight(&w);
    /// # let _ = o;
    /// ```
    pub fn with_weight(self, weight: &'a [F]) -> Self {
        NllOptions {
            weight: Some(weight),
            ..self
        }
    }

    /// The target value whose samples are ignored.
    ///
    /// # Examples
    ///
    /// ```
    /// let o = loss_core::NllOptions::<f32>::new().with_ignore_index(-1);
    /// # let _ = o;
    /// ```
    pub fn with_ignore_index(self, ignore_index: i64) -> Self {
        NllOptions {
            ignore_index,
            ..self
        }
    }

    /// The reduction (`None`, `Sum`, `Mean`).
    ///
    /// # Examples
    ///
    /// ```
    /// let o = loss_core::NllOptions::<f32>::new().with_reduction(loss_core::Reduction::None);
    /// # let _ = o;
    /// ```
    pub fn with_reduction(self, reduction: Reduction) -> Self {
        NllOptions { reduction, ..self }
    }
}

/// The negative log-likelihood loss, as PyTorch's `torch.nn.functional.nll_loss(log_probs,
/// target, weight, ignore_index=-100, reduction="mean")`: per sample not ignored
/// `ℓ_n = −w_{t_n}·x_{n, t_n}`; `Mean` divides by `Σ_n w_{t_n}` over the samples not ignored
/// (zero total weight: [`Error::NoTargets`], where PyTorch gives NaN).
///
/// `log_probs` holds `B` rows of `classes` values (any values: they are not checked to be
/// log-probabilities). Gradient: `−w_{t_n}·s` at each target (s the reduction's scale), 0
/// elsewhere and on ignored rows. Only the target entries are read. The backend is not used
/// (no `exp` or `ln` is taken); it is there so that every loss is called the same way.
///
/// Returns the scalar whose gradient the call writes: the mean, the sum, or with `None` the sum
/// of the per-sample values (written to the outputs' `losses`, required then; 0 for ignored
/// samples).
///
/// Accuracy: one product per sample and the sum of `B` terms in order (exact for `None`).
///
/// # Errors
///
/// [`Error::Empty`], [`Error::RaggedBatch`], [`Error::LengthMismatch`],
/// [`Error::MissingOutput`] (`None` without `losses`), [`Error::TargetOutOfRange`],
/// [`Error::NoTargets`], [`Error::InvalidParameter`] (`BatchMean`).
///
/// # Examples
///
/// ```
/// use loss_core::{nll_loss, NllOptions, Outputs};
/// use loss_core::softmax_core::backend::Poly;
/// let lp = [-0.5f32, -1.0, -2.0, -0.25];
/// let mut g = [0.0f32; 4];
/// let l = nll_loss(Poly, &lp, 2, &[1, 0], &NllOptions::new(), Outputs::new().with_grad(&mut g))?;
/// assert_eq!(l, 1.5); // (1.0 + 2.0) / 2
/// assert_eq!(g, [0.0, -0.5, -0.5, 0.0]);
/// # Ok::<(), loss_core::Error>(())
/// ```
pub fn nll_loss<F: Float, B: Backend<F>>(
    _backend: B,
    log_probs: &[F],
    classes: usize,
    target: &[i64],
    options: &NllOptions<'_, F>,
    mut out: Outputs<'_, F>,
) -> Result<F, Error> {
    let rows = rows_of("log_probs", log_probs.len(), classes)?;
    check_len("target", rows, target.len())?;
    if let Some(w) = options.weight {
        check_len("weight", classes, w.len())?;
    }
    if options.reduction == Reduction::BatchMean {
        return Err(Error::InvalidParameter { name: "reduction" });
    }
    out.check(options.reduction, rows, log_probs.len())?;
    let tally = Tally::of(target, classes, options.ignore_index, options.weight)?;
    let (scale, _) = tally.scales(options.reduction)?;
    let none = options.reduction == Reduction::None;
    let mut total = F::ZERO;
    let mut grad_rows = out.grad.as_deref_mut().map(|g| chunks_mut(g, classes));
    let mut losses = out.losses.as_deref_mut();
    for (n, (x, &t)) in chunks(log_probs, classes).zip(target).enumerate() {
        let g = grad_rows.as_mut().and_then(|it| it.next());
        let c = (t != options.ignore_index)
            .then(|| class_of(t, classes))
            .flatten();
        let (l, wt) = match c {
            Some(c) => {
                let w = match options.weight {
                    Some(w) => w.get(c).copied().unwrap_or(F::NAN),
                    None => F::ONE,
                };
                (-(w * x.get(c).copied().unwrap_or(F::NAN)), w)
            }
            None => (F::ZERO, F::ZERO),
        };
        if let Some(g) = g {
            g.fill(F::ZERO);
            if let Some(gc) = c.and_then(|c| g.get_mut(c)) {
                *gc = -(wt * scale);
            }
        }
        if c.is_some() {
            total += l;
        }
        if none {
            if let Some(v) = losses.as_deref_mut().and_then(|v| v.get_mut(n)) {
                *v = l;
            }
        }
    }
    let v = if options.reduction == Reduction::Mean {
        total / tally.total
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
