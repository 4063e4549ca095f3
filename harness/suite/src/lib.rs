//! The deterministic on-target suite: one table of cases, run unchanged on the host (x86_64) and
//! on microcontrollers (`harness/firmware`, Cortex-M4F hard-float and Cortex-M0 soft-float under
//! QEMU), each case reduced to a 64-bit digest of its result bits. The host test
//! `harness/tests/on_target.rs` compares the digests case by case: softmax-core promises the same
//! bits on every target, and this is where that promise is checked.
//!
//! ```
//! let mut n = 0;
//! softmax_suite::run_all(|name, digest| {
//!     assert!(!name.is_empty());
//!     let _ = digest;
//!     n += 1;
//! });
//! assert_eq!(n, softmax_suite::cases().len());
//! ```
//!
//! # What a case does
//!
//! A case draws its inputs from a seeded [`SplitMix64`] (rows of lengths 1 to 257 around the
//! 16-lane chunking, moderate, wide-range, tied, huge, tiny and underflowing values; rows with
//! `+inf`, `-inf`, NaN, all `-inf`; see [`ROWS`] and [`Dist`]), calls the kernels, and feeds every
//! output bit, every returned value and every error (structural misuse included) into a
//! [`Digest`] (FNV-1a 64; NaNs canonicalised, see [`Feed`]). Everything lives in fixed-size stack
//! buffers of at most [`CAP`] values: no allocation. The firmware measures every case's stack and
//! fails one that needs more than 14 KiB (the Cortex-M0 machine has 16 KiB of RAM); softmax-core's
//! f64 kernels take up to about 10.5 KiB of that themselves, so a case keeps its own buffers small
//! and calls each kernel in a frame of its own (`own_frame` in `family.rs`).
//!
//! # Adding a kernel (attention-core, loss-core, …)
//!
//! Write the case as a function `fn(&mut Ctx)` in a module of this crate (generic over
//! `<F: Elem, B: Backend<F>>` or `<F: Elem>` if it should run for every element type / backend),
//! drive it with the same generators ([`fill`], [`ROWS`], `ctx.rng`), feed what it computes with
//! `ctx.feed(..)`, bring it into scope here (`mod attention; use attention::*;`) and add **one
//! line** to the table in [`CASES`]: its name under `per_backend` (one case per element type ×
//! backend), `per_float` (one per element type), or `"name" => function` under `single`. Nothing
//! else changes: the firmware prints whatever the table holds and the host test compares it. (If
//! a Cortex-M0 image then outgrows its flash, `harness/firmware/run.sh` says so at link time: raise
//! `SOFTMAX_FW_SHARDS`.)
//!
//! # no_std
//!
//! `#![no_std]`, `#![forbid(unsafe_code)]`, no allocation; panics only if the suite itself is
//! wrong (an out-of-range slice of its own buffers), never because of a kernel's result.
#![no_std]
#![forbid(unsafe_code)]
#![deny(missing_docs)]

#[cfg(test)]
extern crate std;

mod attention;
mod digest;
mod family;
mod gen;
mod loss;
mod quant;
mod rng;
mod soft;
mod stored;
mod twice;

pub use digest::{Digest, Feed};
pub use gen::{fill, fill_bias, fill_keep, Dist, Elem, RowSpec, BATCH_DISTS, CAP, ROWS};
pub use rng::SplitMix64;
pub use twice::softmax_s8_twice;

use family::*;
use softmax_core::backend::{Libm, MicroMath, Poly};

/// What a case works with: its digest and its generator.
#[derive(Clone, Debug)]
pub struct Ctx {
    /// Everything the case computes goes in here.
    pub digest: Digest,
    /// The case's inputs come from here.
    pub rng: SplitMix64,
}

impl Ctx {
    /// A fresh context: the empty digest and a generator seeded with `seed`.
    ///
    /// # Examples
    ///
    /// ```
    /// use softmax_suite::Ctx;
    /// let ctx = Ctx::new(1);
    /// assert_eq!(ctx.digest.finish(), softmax_suite::Digest::new().finish());
    /// ```
    pub fn new(seed: u64) -> Self {
        Ctx {
            digest: Digest::new(),
            rng: SplitMix64::new(seed),
        }
    }

    /// Feeds a value into the digest.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut ctx = softmax_suite::Ctx::new(1);
    /// ctx.feed(&[0.5f32, 0.5][..]);
    /// assert_ne!(ctx.digest.finish(), softmax_suite::Digest::new().finish());
    /// ```
    pub fn feed<T: Feed + ?Sized>(&mut self, value: &T) {
        self.digest.feed(value);
    }
}

/// One named case of the suite.
#[derive(Clone, Copy, Debug)]
pub struct Case {
    /// Unique, without whitespace: `op/element type/backend`, e.g. `softmax/f32/poly`.
    pub name: &'static str,
    /// Runs the case, feeding its results into the context's digest.
    pub run: fn(&mut Ctx),
}

/// The seed [`run_all`] uses.
pub const DEFAULT_SEED: u64 = 0x5eed_50f7_3a11_2024;

/// Builds the case table. `per_backend` entries are functions (in scope here) generic over
/// `<F, B>` and expand to the five supported (element type, backend) pairs; `per_float` entries
/// are generic over `<F>` and expand to f32 and f64; `single` entries are `"name" => function`
/// and are taken as they are.
macro_rules! case_table {
    (
        per_backend: [$($pb:ident),* $(,)?],
        per_float: [$($pf:ident),* $(,)?],
        single: [$($name:literal => $run:path),* $(,)?] $(,)?
    ) => {
        &[
            $(
                Case { name: concat!(stringify!($pb), "/f32/poly"), run: $pb::<f32, Poly> },
                Case { name: concat!(stringify!($pb), "/f32/libm"), run: $pb::<f32, Libm> },
                Case {
                    name: concat!(stringify!($pb), "/f32/micromath"),
                    run: $pb::<f32, MicroMath>,
                },
                Case { name: concat!(stringify!($pb), "/f64/poly"), run: $pb::<f64, Poly> },
                Case { name: concat!(stringify!($pb), "/f64/libm"), run: $pb::<f64, Libm> },
            )*
            $(
                Case { name: concat!(stringify!($pf), "/f32"), run: $pf::<f32> },
                Case { name: concat!(stringify!($pf), "/f64"), run: $pf::<f64> },
            )*
            $( Case { name: $name, run: $run }, )*
        ]
    };
}

/// Every case, in the order the firmware prints them.
pub const CASES: &[Case] = case_table! {
    per_backend: [
        backend_exp,
        backend_exp_shifted,
        backend_exp_pow2,
        backend_ln,
        softmax,
        softmax_with_temperature,
        in_place,
        log_softmax,
        logsumexp,
        entropy,
        kl_divergence,
        softmax_vjp,
        log_softmax_vjp,
        masked_softmax,
        softmax_with_bias,
        gumbel_softmax,
        temperature_for_entropy,
        lse_state,
        rows_softmax,
        rows_log_softmax,
        rows_in_place,
        rows_logsumexp,
        rows_entropy,
        rows_kl_divergence,
        rows_softmax_vjp,
        rows_log_softmax_vjp,
        rows_log_softmax_vjp_from_logits,
        rows_gumbel_softmax,
        rows_temperature_for_entropy,
        arrays,
        long_rows,
    ],
    per_float: [
        inputs,
        sparsemax,
        sparsemax_vjp,
        argmax_hardmax,
        rows_sparsemax,
        rows_sparsemax_vjp,
        rows_argmax_hardmax,
    ],
    // The crates built on softmax-core: one `"crate/kernel" => module::function,` line each.
    single: [
        // softmax-core's fast variant (f32 only):
        "softmax/fast/f32" => family::fast,
        // loss-core (harness/suite/src/loss.rs):
        "loss/cross_entropy/f32" => loss::cross_entropy_case::<f32>,
        "loss/cross_entropy/f64" => loss::cross_entropy_case::<f64>,
        "loss/nll_loss/f32" => loss::nll_case::<f32>,
        "loss/nll_loss/f64" => loss::nll_case::<f64>,
        "loss/elementwise/f32" => loss::elementwise_case::<f32>,
        "loss/elementwise/f64" => loss::elementwise_case::<f64>,
        "loss/softmax_focal/f32" => loss::softmax_focal_case::<f32>,
        "loss/softmax_focal/f64" => loss::softmax_focal_case::<f64>,
        "loss/contrastive/f32" => loss::contrastive_case::<f32>,
        "loss/contrastive/f64" => loss::contrastive_case::<f64>,
        "loss/chunked/f32" => loss::chunked_case::<f32>,
        "loss/chunked/f64" => loss::chunked_case::<f64>,
        "loss/linear_cross_entropy/f32" => loss::linear_case::<f32>,
        "loss/linear_cross_entropy/f64" => loss::linear_case::<f64>,
        // attention-core (harness/suite/src/attention.rs):
        "attention/masks/f32" => attention::masks,
        "attention/stream/f32" => attention::stream,
        "attention/backward/f32" => attention::backward,
        // attention-core's decoder over the reduced KV caches (int8 with a scale per row, f16,
        // bf16; computed in f32):
        "attention/stream/int8" => attention::stream_stored::<i8>,
        "attention/stream/f16" => attention::stream_stored::<softmax_core::stored::f16>,
        "attention/stream/bf16" => attention::stream_stored::<softmax_core::stored::bf16>,
        "attention/not_storable/int8" => attention::not_storable::<i8>,
        "attention/not_storable/f16" => attention::not_storable::<softmax_core::stored::f16>,
        "attention/not_storable/bf16" => attention::not_storable::<softmax_core::stored::bf16>,
        // softmax-core's reduced-precision storage and its products (harness/suite/src/stored.rs):
        "stored/rows" => stored::rows,
        "stored/products" => stored::products,
        // softmax-core's quantized softmax (harness/suite/src/quant.rs):
        "quant/s8" => quant::s8,
        "quant/s16" => quant::s16,
        "quant/primitives" => quant::primitives,
        // softmax-core's soft-float add and multiply (harness/suite/src/soft.rs):
        "soft/ops" => soft::ops,
    ],
};

/// Every case, as [`CASES`], through a function compiled once, in this crate (feature `host`,
/// on by default). A crate that names the constant itself compiles every case again, at every
/// dispatch level of softmax-core; host programs and tests take this instead. The firmware
/// (`default-features = false`) takes the constant, from which each shard keeps only its own
/// cases.
///
/// # Examples
///
/// ```
/// assert!(softmax_suite::cases().iter().any(|c| c.name == "softmax/f32/poly"));
/// ```
#[cfg(feature = "host")]
#[inline(never)]
pub fn cases() -> &'static [Case] {
    CASES
}

/// Runs one case from a fresh [`Ctx`] seeded with `seed`; returns its digest.
///
/// # Examples
///
/// ```
/// use softmax_suite::{cases, run_case, DEFAULT_SEED};
/// let case = &cases()[0];
/// assert_eq!(run_case(case, DEFAULT_SEED), run_case(case, DEFAULT_SEED));
/// ```
pub fn run_case(case: &Case, seed: u64) -> u64 {
    let mut ctx = Ctx::new(seed);
    (case.run)(&mut ctx);
    ctx.digest.finish()
}

/// Runs every case of [`CASES`] in order with [`DEFAULT_SEED`], reporting `(name, digest)`.
///
/// # Examples
///
/// ```
/// let mut first = None;
/// softmax_suite::run_all(|name, d| {
///     first.get_or_insert((name.len(), d));
/// });
/// assert!(first.is_some());
/// ```
pub fn run_all(report: impl FnMut(&str, u64)) {
    run_all_seeded(DEFAULT_SEED, report);
}

/// [`run_all`] with another seed (every case's inputs change; used to check that the digests
/// depend on them).
///
/// # Examples
///
/// ```
/// let (mut a, mut b) = (0u64, 0u64);
/// softmax_suite::run_all_seeded(1, |_, d| a ^= d);
/// softmax_suite::run_all_seeded(2, |_, d| b ^= d);
/// assert_ne!(a, b);
/// ```
pub fn run_all_seeded(seed: u64, mut report: impl FnMut(&str, u64)) {
    #[cfg(feature = "host")]
    let table = cases();
    #[cfg(not(feature = "host"))]
    let table = CASES;
    for case in table {
        report(case.name, run_case(case, seed));
    }
}
