//! The option and output types the losses share: [`Reduction`], the caller's output buffers of
//! the losses with one input gradient ([`Outputs`]) and of the cross-entropy family
//! ([`CrossEntropyOutputs`]), and the options of the cross-entropy family
//! ([`CrossEntropyOptions`]).

#![forbid(unsafe_code)]

use softmax_core::Float;

use crate::error::{check_len, Error};

/// How per-sample (or per-element) losses are combined, as PyTorch's `reduction`.
///
/// Whatever the reduction, a loss returns the scalar whose gradient the call writes: the mean
/// (`Mean`, `BatchMean`), the sum (`Sum`), or with `None` the sum of the per-sample values. With
/// `None` the per-sample values are the result: the outputs' per-sample buffer (`with_losses`) is
/// required, and a call without it is [`Error::MissingOutput`].
///
/// # Examples
///
/// ```
/// use loss_core::Reduction;
/// assert_eq!(Reduction::default(), Reduction::Mean);
/// assert_eq!(Reduction::BatchMean.name(), "batchmean");
/// ```
#[non_exhaustive]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Reduction {
    /// No reduction: one loss per sample (or element), written into the outputs' per-sample
    /// buffer, which is then required ([`Error::MissingOutput`] without it). The function returns
    /// their sum: the scalar whose gradient it writes, not a loss to report.
    None,
    /// The sum.
    Sum,
    /// The mean: the sum divided by the summed weights of the targets not ignored (cross-entropy,
    /// NLL), by the batch size (probability targets), or by the number of elements
    /// (element-wise losses). The PyTorch default.
    #[default]
    Mean,
    /// `kl_div` only: the sum divided by the batch size (PyTorch's `"batchmean"`).
    BatchMean,
}

/// The reduction's scale for `len` elements: `1/len` for `Mean`, `1/batch` for `BatchMean`
/// (only when `batch_mean_ok`), 1 otherwise. `Mean` over zero elements is
/// [`Error::NoTargets`].
pub(crate) fn scale_of<F: Float>(
    reduction: Reduction,
    len: usize,
    batch: usize,
    batch_mean_ok: bool,
) -> Result<F, Error> {
    match reduction {
        Reduction::None | Reduction::Sum => Ok(F::ONE),
        Reduction::Mean if len > 0 => Ok(F::ONE / F::from_usize(len)),
        Reduction::BatchMean if batch_mean_ok && batch > 0 => Ok(F::ONE / F::from_usize(batch)),
        Reduction::BatchMean if !batch_mean_ok => {
            Err(Error::InvalidParameter { name: "reduction" })
        }
        _ => Err(Error::NoTargets),
    }
}

impl Reduction {
    /// PyTorch's name: `"none"`, `"sum"`, `"mean"`, `"batchmean"`.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(loss_core::Reduction::Sum.name(), "sum");
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            Reduction::None => "none",
            Reduction::Sum => "sum",
            Reduction::Mean => "mean",
            Reduction::BatchMean => "batchmean",
        }
    }
}

/// Checks the per-sample buffer: `n` values with [`Reduction::None`] (where it is required), one
/// value otherwise (where it is optional).
pub(crate) fn check_losses<F>(
    losses: Option<&[F]>,
    reduction: Reduction,
    n: usize,
) -> Result<(), Error> {
    match (losses, reduction) {
        (Some(l), Reduction::None) => check_len("losses", n, l.len()),
        (Some(l), _) => check_len("losses", 1, l.len()),
        (None, Reduction::None) => Err(Error::MissingOutput { argument: "losses" }),
        (None, _) => Ok(()),
    }
}

/// The caller's buffers for the results of a loss with one input gradient
/// ([`nll_loss`](crate::nll_loss),
/// [`binary_cross_entropy_with_logits`](crate::binary_cross_entropy_with_logits),
/// [`sigmoid_focal_loss`](crate::sigmoid_focal_loss), [`kl_div`](crate::kl_div),
/// [`mse_loss`](crate::mse_loss), [`softmax_focal_loss`](crate::softmax_focal_loss)): the
/// per-sample losses and the gradient with respect to the loss's first input. A loss computes
/// only what is asked for.
///
/// * `losses`: with [`Reduction::None`] one value per sample (or element), and required; with
///   the other reductions optional, one value, the reduced loss (the return value, once more).
/// * `grad`: the gradient of the returned value, as long as the first input (optional).
///
/// # Examples
///
/// ```
/// use loss_core::{mse_loss, MseOptions, Outputs, Reduction};
/// use loss_core::softmax_core::backend::Poly;
/// let mut per = [0.0f32; 2];
/// let mut g = [0.0f32; 2];
/// let opts = MseOptions::new().with_reduction(Reduction::None);
/// let sum = mse_loss(Poly, &[1.0, 2.0], &[0.0, 0.0], &opts,
///                    Outputs::new().with_losses(&mut per).with_grad(&mut g))?;
/// assert_eq!((sum, per, g), (5.0, [1.0, 4.0], [2.0, 4.0]));
/// # Ok::<(), loss_core::Error>(())
/// ```
#[derive(Debug, Default)]
pub struct Outputs<'a, F> {
    pub(crate) losses: Option<&'a mut [F]>,
    pub(crate) grad: Option<&'a mut [F]>,
}

impl<'a, F: Float> Outputs<'a, F> {
    /// No outputs: only the return value (enough for every reduction but `None`).
    ///
    /// # Examples
    ///
    /// ```
    /// let o = loss_core::Outputs::<f32>::new();
    /// # let _ = o;
    /// ```
    pub fn new() -> Self {
        Outputs {
            losses: None,
            grad: None,
        }
    }

    /// Write the per-sample losses (required with [`Reduction::None`]) or, with a reducing
    /// [`Reduction`], the one reduced value into `losses`.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut l = [0.0f64; 3];
    /// let o = loss_core::Outputs::new().with_losses(&mut l);
    /// # let _ = o;
    /// ```
    pub fn with_losses(self, losses: &'a mut [F]) -> Self {
        Outputs {
            losses: Some(losses),
            ..self
        }
    }

    /// Write the gradient of the returned value into `grad`.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut g = [0.0f32; 4];
    /// let o = loss_core::Outputs::new().with_grad(&mut g);
    /// # let _ = o;
    /// ```
    pub fn with_grad(self, grad: &'a mut [F]) -> Self {
        Outputs {
            grad: Some(grad),
            ..self
        }
    }

    /// Checks the buffers: `losses` (see [`check_losses`]), `grad` of `n_grad` values.
    pub(crate) fn check(
        &self,
        reduction: Reduction,
        n_losses: usize,
        n_grad: usize,
    ) -> Result<(), Error> {
        check_losses(self.losses.as_deref(), reduction, n_losses)?;
        if let Some(g) = &self.grad {
            check_len("grad", n_grad, g.len())?;
        }
        Ok(())
    }
}

/// The caller's buffers for the results of [`cross_entropy`](crate::cross_entropy) and
/// [`cross_entropy_probs`](crate::cross_entropy_probs): the per-sample losses, the gradient with
/// respect to the logits, and per-row statistics from the same pass.
///
/// * `losses`: with [`Reduction::None`] one value per row (0 for an ignored row), and required;
///   with the other reductions optional, one value, the reduced loss.
/// * `grad`: the gradient of the returned value with respect to the raw logits (`B·C`).
/// * `lse`, `entropy`, `argmax` (one per row, ignored rows included): the log-sum-exp of the
///   row's (soft-capped) logits, the Shannon entropy (nats) of its softmax, and the index of its
///   largest logit (first on ties, NaN counts as largest, as PyTorch's `argmax`; taken over the
///   raw logits, which the monotone soft-cap does not reorder).
///
/// Every buffer is optional except `losses` with `None`; a call computes only what is asked for
/// (without a gradient buffer the cross-entropy needs no buffer at all).
///
/// # Examples
///
/// ```
/// use loss_core::{cross_entropy, CrossEntropyOptions, CrossEntropyOutputs};
/// use loss_core::softmax_core::backend::Poly;
/// let (mut lse, mut h, mut am) = ([0.0f32; 1], [0.0f32; 1], [0usize; 1]);
/// cross_entropy(Poly, &[0.0f32, 0.0, 5.0], 3, &[2], &CrossEntropyOptions::new(),
///               CrossEntropyOutputs::new().with_lse(&mut lse).with_entropy(&mut h)
///                   .with_argmax(&mut am))?;
/// assert_eq!(am, [2]);
/// assert!((lse[0] - 5.013_385_9).abs() < 1e-6);
/// assert!((h[0] - 0.079_869_45).abs() < 1e-6);
/// # Ok::<(), loss_core::Error>(())
/// ```
#[derive(Debug, Default)]
pub struct CrossEntropyOutputs<'a, F> {
    pub(crate) losses: Option<&'a mut [F]>,
    pub(crate) grad: Option<&'a mut [F]>,
    pub(crate) stats: Stats<'a, F>,
}

/// The per-row statistics of a cross-entropy pass (see [`CrossEntropyOutputs`]).
#[derive(Debug, Default)]
pub(crate) struct Stats<'a, F> {
    pub(crate) lse: Option<&'a mut [F]>,
    pub(crate) entropy: Option<&'a mut [F]>,
    pub(crate) argmax: Option<&'a mut [usize]>,
}

impl<F: Float> Stats<'_, F> {
    pub(crate) fn check(&self, rows: usize) -> Result<(), Error> {
        if let Some(v) = &self.lse {
            check_len("lse", rows, v.len())?;
        }
        if let Some(v) = &self.entropy {
            check_len("entropy", rows, v.len())?;
        }
        if let Some(v) = &self.argmax {
            check_len("argmax", rows, v.len())?;
        }
        Ok(())
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.lse.is_none() && self.entropy.is_none() && self.argmax.is_none()
    }
}

impl<'a, F: Float> CrossEntropyOutputs<'a, F> {
    /// No outputs: only the return value (enough for every reduction but `None`).
    ///
    /// # Examples
    ///
    /// ```
    /// let o = loss_core::CrossEntropyOutputs::<f32>::new();
    /// # let _ = o;
    /// ```
    pub fn new() -> Self {
        CrossEntropyOutputs {
            losses: None,
            grad: None,
            stats: Stats {
                lse: None,
                entropy: None,
                argmax: None,
            },
        }
    }

    /// Write the per-row losses (required with [`Reduction::None`]) or, with a reducing
    /// [`Reduction`], the one reduced value into `losses`.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut l = [0.0f64; 3];
    /// let o = loss_core::CrossEntropyOutputs::new().with_losses(&mut l);
    /// # let _ = o;
    /// ```
    pub fn with_losses(self, losses: &'a mut [F]) -> Self {
        CrossEntropyOutputs {
            losses: Some(losses),
            ..self
        }
    }

    /// Write the gradient of the returned value with respect to the raw logits into `grad`
    /// (`B·C`).
    ///
    /// # Examples
    ///
    /// ```
    /// let mut g = [0.0f32; 4];
    /// let o = loss_core::CrossEntropyOutputs::new().with_grad(&mut g);
    /// # let _ = o;
    /// ```
    pub fn with_grad(self, grad: &'a mut [F]) -> Self {
        CrossEntropyOutputs {
            grad: Some(grad),
            ..self
        }
    }

    /// Write each row's log-sum-exp into `lse` (one per row).
    ///
    /// # Examples
    ///
    /// ```
    /// let mut l = [0.0f32; 2];
    /// let o = loss_core::CrossEntropyOutputs::new().with_lse(&mut l);
    /// # let _ = o;
    /// ```
    pub fn with_lse(self, lse: &'a mut [F]) -> Self {
        CrossEntropyOutputs {
            stats: Stats {
                lse: Some(lse),
                ..self.stats
            },
            ..self
        }
    }

    /// Write each row's softmax entropy (nats) into `entropy` (one per row).
    ///
    /// # Examples
    ///
    /// ```
    /// let mut h = [0.0f64; 2];
    /// let o = loss_core::CrossEntropyOutputs::new().with_entropy(&mut h);
    /// # let _ = o;
    /// ```
    pub fn with_entropy(self, entropy: &'a mut [F]) -> Self {
        CrossEntropyOutputs {
            stats: Stats {
                entropy: Some(entropy),
                ..self.stats
            },
            ..self
        }
    }

    /// Write each row's argmax into `argmax` (one per row).
    ///
    /// # Examples
    ///
    /// ```
    /// let mut a = [0usize; 2];
    /// let o = loss_core::CrossEntropyOutputs::<f32>::new().with_argmax(&mut a);
    /// # let _ = o;
    /// ```
    pub fn with_argmax(self, argmax: &'a mut [usize]) -> Self {
        CrossEntropyOutputs {
            stats: Stats {
                argmax: Some(argmax),
                ..self.stats
            },
            ..self
        }
    }

    /// Checks the buffers: `losses` (see [`check_losses`]), `grad` of `n_grad` values, then the
    /// statistics (`rows` each).
    pub(crate) fn check(
        &self,
        reduction: Reduction,
        rows: usize,
        n_grad: usize,
    ) -> Result<(), Error> {
        check_losses(self.losses.as_deref(), reduction, rows)?;
        if let Some(g) = &self.grad {
            check_len("grad", n_grad, g.len())?;
        }
        self.stats.check(rows)
    }
}

/// The options of [`cross_entropy`](crate::cross_entropy) (and of the other cross-entropy
/// forms: [`cross_entropy_probs`](crate::cross_entropy_probs),
/// [`linear_cross_entropy`](crate::linear_cross_entropy),
/// [`ChunkedCrossEntropy`](crate::ChunkedCrossEntropy)), with PyTorch's defaults: no class
/// weights, `ignore_index = -100`, no label smoothing, `Mean`; and the two options beyond PyTorch
/// (Gemma 2, PaLM, Liger-Kernel): no soft-cap, `z_loss = 0`.
///
/// The setters do not validate; the loss functions do (and return
/// [`Error::InvalidParameter`]): `label_smoothing` in `[0, 1]`, `softcap` finite and `> 0`,
/// `z_loss` finite and `>= 0`, a weight vector of length C.
///
/// # Examples
///
/// ```
/// use loss_core::{CrossEntropyOptions, Reduction};
/// let w = [1.0f32, 2.0, 0.5];
/// let opts = CrossEntropyOptions::new()
///     .with_weight(&w)
///     .with_ignore_index(0)
///     .with_label_smoothing(0.1)
///     .with_reduction(Reduction::Sum)
///     .with_softcap(30.0)
///     .with_z_loss(1e-4);
/// assert_eq!(opts.ignore_index(), 0);
/// ```
#[derive(Clone, Copy, Debug)]
pub struct CrossEntropyOptions<'a, F> {
    pub(crate) weight: Option<&'a [F]>,
    pub(crate) ignore_index: i64,
    pub(crate) label_smoothing: F,
    pub(crate) reduction: Reduction,
    pub(crate) softcap: Option<F>,
    pub(crate) z_loss: F,
}

impl<F: Float> Default for CrossEntropyOptions<'_, F> {
    fn default() -> Self {
        Self::new()
    }
}

impl<'a, F: Float> CrossEntropyOptions<'a, F> {
    /// PyTorch's defaults (see the type's docs).
    ///
    /// # Examples
    ///
    /// ```
    /// let o = loss_core::CrossEntropyOptions::<f32>::new();
    /// assert_eq!(o.ignore_index(), -100);
    /// ```
    pub fn new() -> Self {
        CrossEntropyOptions {
            weight: None,
            ignore_index: -100,
            label_smoothing: F::ZERO,
            reduction: Reduction::Mean,
            softcap: None,
            z_loss: F::ZERO,
        }
    }

    /// Per-class weights (length C), as PyTorch's `weight`.
    ///
    /// # Examples
    ///
    /// ```
    /// let w = [1.0f64, 3.0];
    /// let o = loss_core::CrossEntropyOptions::new().with_weight(&w);
    /// # let _ = o;
    /// ```
    pub fn with_weight(self, weight: &'a [F]) -> Self {
        CrossEntropyOptions {
            weight: Some(weight),
            ..self
        }
    }

    /// The target value whose samples are ignored (no loss, zero gradient row, not counted by
    /// `Mean`); PyTorch's default is -100.
    ///
    /// # Examples
    ///
    /// ```
    /// let o = loss_core::CrossEntropyOptions::<f32>::new().with_ignore_index(-1);
    /// assert_eq!(o.ignore_index(), -1);
    /// ```
    pub fn with_ignore_index(self, ignore_index: i64) -> Self {
        CrossEntropyOptions {
            ignore_index,
            ..self
        }
    }

    /// Label smoothing ε in `[0, 1]`: the target becomes `(1 − ε)·target + ε/C`.
    ///
    /// # Examples
    ///
    /// ```
    /// let o = loss_core::CrossEntropyOptions::new().with_label_smoothing(0.1f32);
    /// # let _ = o;
    /// ```
    pub fn with_label_smoothing(self, label_smoothing: F) -> Self {
        CrossEntropyOptions {
            label_smoothing,
            ..self
        }
    }

    /// The reduction (`Mean` by default; `BatchMean` is refused).
    ///
    /// # Examples
    ///
    /// ```
    /// use loss_core::{CrossEntropyOptions, Reduction};
    /// let o = CrossEntropyOptions::<f32>::new().with_reduction(Reduction::None);
    /// # let _ = o;
    /// ```
    pub fn with_reduction(self, reduction: Reduction) -> Self {
        CrossEntropyOptions { reduction, ..self }
    }

    /// Logit soft-capping (Gemma 2): every logit `z` becomes `c·tanh(z/c)` before the softmax;
    /// gradients stay with respect to the raw logits. `c` must be finite and `> 0`.
    ///
    /// # Examples
    ///
    /// ```
    /// let o = loss_core::CrossEntropyOptions::new().with_softcap(30.0f32);
    /// # let _ = o;
    /// ```
    pub fn with_softcap(self, cap: F) -> Self {
        CrossEntropyOptions {
            softcap: Some(cap),
            ..self
        }
    }

    /// The z-loss coefficient (PaLM): adds `z·lse²` for every sample not ignored (not
    /// class-weighted; `Mean` divides it by the number of samples not ignored).
    ///
    /// # Examples
    ///
    /// ```
    /// let o = loss_core::CrossEntropyOptions::new().with_z_loss(1e-4f64);
    /// # let _ = o;
    /// ```
    pub fn with_z_loss(self, z_loss: F) -> Self {
        CrossEntropyOptions { z_loss, ..self }
    }

    /// The ignore index in effect.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(loss_core::CrossEntropyOptions::<f32>::new().ignore_index(), -100);
    /// ```
    pub fn ignore_index(&self) -> i64 {
        self.ignore_index
    }

    /// Checks the parameter values and the weight length against `classes`.
    pub(crate) fn validate(&self, classes: usize) -> Result<(), Error> {
        if let Some(w) = self.weight {
            check_len("weight", classes, w.len())?;
        }
        let e = self.label_smoothing;
        if !(e >= F::ZERO && e <= F::ONE) {
            return Err(Error::InvalidParameter {
                name: "label_smoothing",
            });
        }
        if let Some(c) = self.softcap {
            if !(c > F::ZERO && c.is_finite()) {
                return Err(Error::InvalidParameter { name: "softcap" });
            }
        }
        if !(self.z_loss >= F::ZERO && self.z_loss.is_finite()) {
            return Err(Error::InvalidParameter { name: "z_loss" });
        }
        if self.reduction == Reduction::BatchMean {
            return Err(Error::InvalidParameter { name: "reduction" });
        }
        Ok(())
    }
}
