//! Numerically stable softmax family for `no_std`: no allocation, no panics, the same bits on
//! every target, and fast on a desktop CPU.
//!
//! ```
//! use softmax_core::{softmax, log_softmax, logsumexp, backend::Poly};
//! let logits = [2.0f32, 1.0, 0.1];
//! let mut p = [0.0; 3];
//! softmax(Poly, &logits, &mut p)?;
//! let mut logp = [0.0; 3];
//! log_softmax(Poly, &logits, &mut logp)?;
//! assert!((p[0] - 0.659_001_1).abs() < 1e-7);
//! assert!((logp[0] - (p[0]).ln()).abs() < 1e-6);
//! assert!((logsumexp(Poly, &logits)? - 2.417_029_6).abs() < 1e-6);
//! # Ok::<(), softmax_core::Error>(())
//! ```
//!
//! # What is here
//!
//! * softmax, softmax at temperature τ, in place; log_softmax; logsumexp; masked (keep-mask and
//!   additive bias) forms — single rows over slices ([`softmax`], …), row batches with masks and
//!   temperature ([`rows`]), fixed-size arrays ([`mod@array`]); `f32` and `f64`.
//! * The online log-sum-exp state [`LogSumExp`] (`push`, `push_slice`, associative `merge`,
//!   `finish`): the primitive cross-entropy and attention are built on.
//! * [`entropy`] of softmax(x/τ) and [`kl_divergence`] between two softmaxes, from logits.
//! * Backward passes without Jacobians: [`softmax_vjp`], [`log_softmax_vjp`] (from the output)
//!   and [`log_softmax_vjp_from_logits`], [`sparsemax_vjp`].
//! * [`sparsemax`], [`argmax`] / [`hardmax`], [`gumbel_softmax`] (caller-supplied uniform noise),
//!   [`temperature_for_entropy`].
//! * [`fast`]: an explicitly chosen f32 softmax / log_softmax / logsumexp that gives up the exact
//!   shift and the once-rounded exp for speed on CPUs with AVX2 and FMA, with its own measured
//!   accuracy and still the same bits on every target.
//!
//! And what the crates built on it (attention-core, loss-core) share, so that none of them grows
//! its own copy of a max/exp/sum or dot-product loop:
//!
//! * [`softmax_lse`]: softmax and its logsumexp from the same passes (a cross-entropy's forward
//!   and gradient), and [`softmax_lse_scaled`], which also scales the probabilities in its last
//!   pass (a reduced cross-entropy's gradient); [`LogSumExp::probs`] / [`LogSumExp::log_probs`], the second pass of a softmax
//!   computed chunk by chunk.
//! * [`OnlineSoftmax`]: the online-softmax step over blocks of scores (new running max, the
//!   rescale factor of the caller's accumulators, the block's weights) and its merge.
//! * [`linalg`]: dot products and the three small matrix products, in a fixed order.
//! * [`special`]: `log1p`, `expm1`, `tanh` and the logit soft-cap, `sigmoid`, `softplus`,
//!   `log_sigmoid`.
//! * [`simd`]: the one place that chooses machine code at run time (x86_64: AVX2 / AVX-512F),
//!   which the other crates' loops follow through [`simd::dispatch`].
//!
//! Every op comes in three forms: a single row over slices (the functions at the crate root), a
//! batch of rows with the temperature and mask in a [`Rows`] spec ([`rows`]), and a fixed-size
//! array wrapper whose lengths are checked at compile time ([`mod@array`]).
//!
//! # Backends
//!
//! Every function that needs `exp`/`ln` takes a backend value first: [`backend::Poly`] (this
//! crate's branch-free polynomial, auto-vectorised, <= 1 ULP), [`backend::Libm`] (feature
//! `libm`, on by default) or `backend::MicroMath` (feature `micromath`, f32, approximate).
//! See [`backend`] for the measured accuracy of each.
//!
//! # Features
//!
//! * `libm` (default): the [`backend::Libm`] backend.
//! * `micromath`: the `backend::MicroMath` backend.
//!
//! With `default-features = false` the crate has no dependencies at all; [`backend::Poly`] is
//! always available.
//!
//! # Accuracy
//!
//! f32 with `Poly` or `Libm`, against an f64 reference computed from the same inputs (property
//! tests in `harness/tests`): softmax outputs `>= 1e-30` within 2e-6 relative, for rows of any
//! length (16M-element rows included: the sums are compensated, so they do not drift with
//! length); log_softmax and logsumexp within a few ULP plus `2⁻²³·|value|`. With a temperature
//! τ ≠ 1 the only extra rounding is that of `d = (x − max)/τ` (the shift is exact and divided
//! once): at most `2⁻²⁴·(|d_i| + E_p|d|)` relative. Each function states its own figure.
//!
//! # Edge semantics
//!
//! A row with no allowed entry (all `-inf` or masked) is not an error: softmax gives zeros,
//! log_softmax `-inf`, logsumexp `-inf`, entropy 0. `k` entries equal to `+inf` share the mass
//! (`1/k` each, the limit). A NaN poisons its own row only. Finite extremes (±3.4e38,
//! subnormals) give correct results. Structural problems (empty rows, length mismatches,
//! temperature <= 0 or not finite) are [`Error`]s.
//!
//! # Panics
//!
//! None, for any input. Lengths are checked once at the boundary, and the loops are written so the
//! optimiser removes every bounds check: a release build for `thumbv7em-none-eabihf` that calls
//! every public function links with a panic handler that references an undefined symbol
//! (`harness/no-panic`).
//!
//! # Determinism
//!
//! Reductions use a fixed number of lanes ([`LANES`]; 32 in the sums of softmax's and
//! log_softmax's terms) combined in a fixed order, and no operation depends on fused multiply-add
//! contraction or fast-math (the [`fast`] variant's fused multiply-adds are explicit and
//! correctly rounded, in hardware or in software), so the same input gives the same bits on x86_64 (at every [`simd`] level: the
//! runtime dispatch changes only the width of the machine code), Cortex-M4F and soft-float
//! Cortex-M0+ (checked by `harness/firmware` under QEMU and `harness/tests/dispatch_levels.rs`).
//! One exception: a NaN result is NaN everywhere, but its sign and payload bits follow the
//! platform (x86 produces `0xffc00000` where ARM produces `0x7fc00000`, e.g. for `inf − inf`).
//!
//! # Speed
//!
//! The hot loops are plain Rust that LLVM vectorises; on x86_64 every entry point runs its batch
//! in a copy compiled for AVX2 or AVX-512F when the CPU has it ([`simd`]), so a default
//! `cargo build` runs as fast as a `-C target-cpu=native` one. The exp of the hot loops,
//! [`Backend::exp_pow2`](backend::Backend::exp_pow2), takes the exact shift's tail into its
//! argument reduction and a power-of-two scale into its exponent, and evaluates sixteen values
//! side by side. `harness bench` races these kernels against onnxruntime, candle and a memory copy
//! in one run; README.md has the figures. Where the accuracy contract costs more than a caller
//! can spend, [`fast`] is the documented trade.
//!
//! # `no_std` usage
//!
//! ```toml
//! [dependencies]
//! softmax-core = { version = "0.1", default-features = false } # Poly backend only
//! ```
#![no_std]
// `unsafe` is confined to four x86_64 modules: `simd` (CPUID/XGETBV, calling the
// `#[target_feature]` copies after detection), `linalg::avx2` (the loads/stores of the AVX2
// matrix products), `fast::x86` (the AVX2+FMA and AVX-512 fast kernels) and `tree_x86` (the AVX2
// tree of the compensated sums, and the AVX2 and AVX-512 max pass), and to one Arm soft-float
// module, `soft::thumb` (calls of the Thumb f32 add and multiply); every other module forbids
// it.
#![deny(unsafe_code)]
#![deny(missing_docs)]

pub mod array;
pub mod backend;
pub mod chunks;
mod error;
pub mod fast;
mod float;
mod kernel;
pub mod linalg;
mod lse;
mod online;
mod op;
pub mod quant;
pub mod rows;
pub mod simd;
mod slice;
#[doc(hidden)]
pub mod soft;
mod spec;
pub mod special;
pub mod stored;
#[cfg(softmax_dispatch)]
mod tree_x86;

pub use error::Error;
pub use float::Float;
pub use kernel::LANES;
pub use lse::LogSumExp;
pub use online::{OnlineSoftmax, Rescale};
pub use slice::{
    argmax, entropy, gumbel_softmax, hardmax, kl_divergence, log_softmax, log_softmax_in_place,
    log_softmax_vjp, log_softmax_vjp_from_logits, logsumexp, masked_softmax, softmax,
    softmax_in_place, softmax_lse, softmax_lse_in_place, softmax_lse_scaled, softmax_vjp,
    softmax_with_bias, softmax_with_temperature, sparsemax, sparsemax_vjp, temperature_for_entropy,
};
pub use spec::{Mask, Rows};
