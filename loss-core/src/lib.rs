//! Cross-entropy family (PyTorch semantics) and contrastive losses, with gradients, for `no_std`,
//! built on softmax-core's skeleton (its online log-sum-exp state, `softmax_lse`, `chunks` and
//! `linalg::within` products; no second max/exp/sum loop here).
//!
//! # One calling convention
//!
//! Every loss is called the same way:
//!
//! ```text
//! loss(backend, inputs and their shape numbers, &Options, Outputs) -> Result<F, Error>
//! ```
//!
//! * `backend`: a softmax-core backend value (`Poly`, `Libm`, `MicroMath`), first, always (the
//!   losses that take no `exp` or `ln` accept it too).
//! * the inputs and the numbers that give their shape (`classes`, `d`, `k`, `batch`).
//! * `&Options`: one options type per loss ([`CrossEntropyOptions`], [`NllOptions`],
//!   [`BceOptions`], [`SigmoidFocalOptions`], [`KlDivOptions`], [`MseOptions`],
//!   [`SoftmaxFocalOptions`], [`InfoNceOptions`], [`InfoNceSingleOptions`], [`NtXentOptions`],
//!   [`SiglipOptions`]), built with `new()` (PyTorch's defaults) and `with_*` methods; the
//!   reduction is `with_reduction` everywhere it exists.
//! * `Outputs`: the buffers the call writes, built with `new(..)` and `with_*` methods:
//!   [`Outputs`] (per-sample losses and the input gradient), [`CrossEntropyOutputs`] (those and
//!   the per-row log-sum-exp, entropy and argmax), [`InfoNceOutputs`], [`NtXentOutputs`],
//!   [`SiglipOutputs`], [`LinearCrossEntropyOutputs`]. Working memory is part of the outputs:
//!   a loss that needs scratch takes it in its outputs' `new(scratch)` (so it cannot be
//!   forgotten), with its length from [`info_nce_scratch_len`], [`nt_xent_scratch_len`] or
//!   [`linear_cross_entropy_scratch_len`].
//!
//! Every loss returns the scalar whose gradient the call writes: the mean, the sum, or with
//! [`Reduction::None`] the sum of the per-sample values. With `None` the per-sample values are
//! the result, so the outputs' per-sample buffer (`with_losses`) is required then
//! ([`Error::MissingOutput`] without it); with a reducing reduction it is optional and receives
//! the one reduced value.
//!
//! # Features
//!
//! * Classification: [`cross_entropy`] (class-index targets) and [`cross_entropy_probs`]
//!   (probability targets) with PyTorch's `weight`, `ignore_index`, `label_smoothing` and
//!   `reduction`, plus `softcap` and `z_loss` (Gemma 2 / PaLM / Liger-Kernel) and per-row
//!   statistics from the same pass ([`CrossEntropyOutputs`]: log-sum-exp, entropy, argmax);
//!   [`nll_loss`]; [`binary_cross_entropy_with_logits`] (weight, pos_weight); [`kl_div`]
//!   (log_target, batchmean); [`mse_loss`]; torchvision's [`sigmoid_focal_loss`]; a multi-class
//!   [`softmax_focal_loss`]. Every loss writes its gradient into a caller buffer in the same
//!   pass; at most two passes over the logits and no temporary of size `C` beyond the gradient.
//! * Contrastive: [`info_nce_single`] (one query, with the correct gradients for the keys), batched [`info_nce`] with `info-nce-pytorch` semantics (in-batch, unpaired and
//!   paired negatives, L2 normalisation, symmetric CLIP loss, `∂/∂τ`), [`nt_xent`] (SimCLR),
//!   [`siglip_loss`] (O(1) extra memory, gradients for scale and bias), and
//!   [`mutual_information_lower_bound`] (`ln N − L`, ceiling `ln N`).
//! * Large vocabularies: [`ChunkedCrossEntropy`] (a row pushed chunk by chunk, gradient in a
//!   second pass, any chunking) and [`linear_cross_entropy`] (`CE(h·Wᵀ)` with `dH` and `dW`,
//!   block-wise and exact, extra memory `2·min(T, 64)·block` values of scratch).
//! * f32 and f64 everywhere; any softmax-core backend value is accepted first (the kernels run
//!   on softmax-core's skeleton functions).
//!
//! A deliberate difference from PyTorch: a `Mean` over zero total weight is
//! [`Error::NoTargets`], not NaN.
//!
//! # Accuracy
//!
//! Measured against naive f64 references (`harness/tests/loss_*.rs`, `conform_loss.rs`) and
//! golden vectors from onnxruntime / numpy / scipy (`golden_loss.rs`), relative error
//! `max|got − want| / max(max|want|, 1e-3)` over each loss or gradient tensor:
//!
//! * f64: every gradient (temperature, logit-scale and bias gradients included) within `1e-6` of
//!   central finite differences (measured worst `1e-10`: the differences' own error);
//!   losses and gradients within `1e-13` of onnxruntime's / numpy's f64 values (measured
//!   worst `4.6e-15`).
//! * f32 (inputs exact in f32, f64 references): within `1e-6` of the golden vectors (measured
//!   worst `3.7e-7`) and within `5e-6` over the protocol tests (logits up to `1/τ = 10`;
//!   measured worst `1.3e-6`); each function's own docs state its bound.
//!
//! # Panics
//!
//! None: every length, shape product, class index and parameter is checked at the API boundary
//! and reported as an [`Error`]; the panic-freedom probe (`harness/no-panic`) links every public
//! function of this crate at opt-level 3 and `s` with a panic handler that does not exist.
//!
//! # no_std usage
//!
//! `#![no_std]`, no allocation, `#![forbid(unsafe_code)]`: every buffer is the caller's (scratch
//! lengths from [`info_nce_scratch_len`], [`nt_xent_scratch_len`],
//! [`linear_cross_entropy_scratch_len`]). Results are bit-identical on x86_64 (any SIMD level),
//! Cortex-M4F and soft-float Cortex-M0 (checked under QEMU by `harness/firmware`).
//!
//! # Examples
//!
//! ```
//! use loss_core::{cross_entropy, CrossEntropyOptions, CrossEntropyOutputs, Reduction};
//! use loss_core::softmax_core::backend::Poly;
//! // Two samples, three classes; the second sample is ignored (its logits are never read).
//! let logits = [2.0f32, 1.0, 0.1, f32::NEG_INFINITY, f32::NEG_INFINITY, f32::NEG_INFINITY];
//! let mut grad = [0.0f32; 6];
//! let loss = cross_entropy(Poly, &logits, 3, &[0, -100], &CrossEntropyOptions::new(),
//!                          CrossEntropyOutputs::new().with_grad(&mut grad))?;
//! let lse = (2f64.exp() + 1f64.exp() + 0.1f64.exp()).ln();
//! assert!((loss as f64 - (lse - 2.0)).abs() < 1e-6);
//! assert_eq!(&grad[3..], &[0.0; 3]);
//! // `Reduction::None`: the per-sample losses are the result (their buffer is required); the
//! // return value is their sum, the scalar whose gradient `grad` now holds.
//! let none = CrossEntropyOptions::new().with_reduction(Reduction::None);
//! let mut per = [0.0f32; 2];
//! let sum = cross_entropy(Poly, &logits, 3, &[0, -100], &none,
//!                         CrossEntropyOutputs::new().with_losses(&mut per).with_grad(&mut grad))?;
//! assert_eq!((sum, per[1]), (per[0], 0.0));
//! # Ok::<(), loss_core::Error>(())
//! ```
#![no_std]
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub use softmax_core;

mod ce;
mod chunked;
mod contrastive;
mod elementwise;
mod error;
mod focal;
mod linear;
mod math;
mod nll;
mod options;

pub use ce::{cross_entropy, cross_entropy_probs};
pub use chunked::ChunkedCrossEntropy;
pub use contrastive::{
    info_nce, info_nce_scratch_len, info_nce_single, mutual_information_lower_bound, nt_xent,
    nt_xent_scratch_len, siglip_loss, InfoNceOptions, InfoNceOutputs, InfoNceSingleOptions,
    Negatives, NtXentOptions, NtXentOutputs, SiglipOptions, SiglipOutputs,
};
pub use elementwise::{
    binary_cross_entropy_with_logits, kl_div, mse_loss, sigmoid_focal_loss, BceOptions,
    KlDivOptions, MseOptions, SigmoidFocalOptions,
};
pub use error::Error;
pub use focal::{softmax_focal_loss, SoftmaxFocalOptions};
pub use linear::{
    linear_cross_entropy, linear_cross_entropy_scratch_len, LinearCrossEntropyOutputs,
    LINEAR_CE_ROWS,
};
pub use nll::{nll_loss, NllOptions};
pub use options::{CrossEntropyOptions, CrossEntropyOutputs, Outputs, Reduction};
