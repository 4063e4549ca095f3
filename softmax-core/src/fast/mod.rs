//! The fast f32 softmax family: an explicitly chosen variant that trades the default kernels'
//! accuracy contract for speed, and keeps the same bits on every target.
//!
//! The default kernels ([`crate::softmax`], [`crate::rows`]) keep the shift `x − max` exact (its
//! rounding error rides along into the exp), use a compensated polynomial without fused
//! multiply-add, and round essentially once per term. That costs about four floating-point
//! instructions per value on AVX2, and onnxruntime's kernels need about half of that. The
//! functions here make the same passes (maximum; exp and compensated sum, the exps stored by
//! softmax; the output) with a cheaper exp. Rows of 2^17 values and more take two passes
//! instead: an online pass over 4096-value blocks that finds a reference near the maximum and the
//! sum together (reading the next block under the arithmetic of this one), then the output pass,
//! which recomputes the exps, with non-temporal stores from 2^23 values on: 12 bytes of memory
//! traffic per value (16 for rows too short to stream, whose output lines are read before they
//! are written) instead of the 24 of three passes. The exp:
//!
//! * the shift `d = x − max` is rounded once (an error of up to `2⁻²⁴·|d|` in the exp's
//!   argument, so up to `2⁻²⁴·|d|` relative in its result: 4e-6 for an output of 1e-30);
//! * `e^d = 2^n · p(r)` with `n = round(d·log2 e)`, `r = d − n·ln2` (two fused multiply-adds),
//!   `p` a degree-5 minimax polynomial evaluated by Horner's rule in fused multiply-adds (its own
//!   error 7.4e-8 relative), and `2^n` built from the bits of the rounding;
//! * terms with `d < −87.68` (below about 8e-39) are 0.
//!
//! Every fused multiply-add is correctly rounded ([`fma`]): on x86_64 CPUs with AVX2 and FMA the
//! hardware instruction (hand-written kernels at the AVX2 and the AVX-512 [`simd`](crate::simd)
//! levels; rows of up to 256 values are computed eight at a time there, the rows side by side in
//! the lanes of the final reductions), everywhere else a
//! software emulation that gives the same bits (an f64 product, which is exact, and an f64 sum
//! rounded to odd, then rounded to f32). The sums are laid out as the default kernels' are, with
//! 16 lanes (element `i` in lane `i mod 16`; with 32, four accumulators would leave too few AVX2
//! registers for the exp): blocks of 256 values added plainly and
//! folded into per-lane compensated totals, the lanes combined pairwise. So the result bits do not depend on the
//! target or the [`simd`](crate::simd) level, as for the rest of the crate (a NaN result is NaN
//! everywhere, its sign and payload bits excepted; `softmax-core/tests/fast.rs` and the
//! on-target digests check it). The emulation is slow, though, and every build but an x86_64
//! release build on a CPU with AVX2 and FMA runs it (aarch64 too, and debug builds): there the
//! default kernels are the faster choice.
//!
//! Accuracy (f32, against an f64 reference from the same inputs; `softmax-core/tests/fast.rs`,
//! which asserts the bounds and prints the measured figures):
//!
//! | function | bound | measured |
//! |---|---|---|
//! | [`exp`] on [-87.3, 0] and on (0, 2.5] | <= 3 ULP | 2.71 and 2.69 ULP, exhaustive |
//! | [`softmax`], outputs >= 1e-30 | relative `2⁻²⁴·(|d_i| + E_p|d|) + 4.2e-7` | the constant part: 2.1e-7 |
//! | [`log_softmax`] | absolute `2⁻²⁴·(2|d_i| + E_p|d| + 2 ln Σ) + 2.4e-7` | the constant part: 1.0e-7 |
//! | [`logsumexp`] | absolute `2⁻²⁴·(E_p|d| + 2 ln Σ + 2|lse|) + 2.4e-7` | within the variable part alone |
//!
//! where `d_i = x_i − max` and `E_p|d|` is the softmax-weighted mean of `|d|` (the default
//! kernels: 2e-6 relative flat). The edge semantics are the crate's: a row whose maximum is not
//! finite (an entry `+inf`, or no entry above `-inf`) is computed by the default kernel, so
//! `k` entries `+inf` share the mass and an all-`-inf` row gives zeros; a NaN makes its row NaN.
//!
//! The functions take a row batch as [`rows`](crate::rows) does (the values, the output, a
//! [`Rows`] spec), without the backend argument: this variant has its own exp. It computes
//! unmasked rows at τ = 1: a spec with a mask or another temperature is
//! [`Error::FastSpec`] (the default kernels of [`rows`](crate::rows) take those; falling back to
//! them here would link every masked and tempered variant into a firmware image that calls the
//! fast kernels). attention-core and loss-core do not use this variant.
//!
//! # Examples
//!
//! ```
//! use softmax_core::{fast, Rows};
//! let x = [1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0]; // two rows of 3
//! let mut y = [0.0; 6];
//! fast::softmax(&x, &mut y, &Rows::new(3))?;
//! assert!((y[2] - 0.665_240_94).abs() < 3e-7 && (y[5] - 0.665_240_94).abs() < 3e-7);
//! # Ok::<(), softmax_core::Error>(())
//! ```

// No `unsafe` here (the crate denies it); only the `x86` child module allows it.

mod passes;
#[cfg(softmax_dispatch)]
mod x86;

pub use passes::{exp, fma};

use crate::chunks::{chunks, chunks_mut};
use crate::error::{check_len, Error};
use crate::spec::{Mask, Rows};
use passes::{row, Op, Portable};

/// Runs `op` over the rows of `n` values (`n > 0`, checked): the AVX-512 or AVX2+FMA kernel
/// when the CPU has it, else the portable one.
fn run(op: Op, x: &[f32], y: &mut [f32], n: usize) {
    #[cfg(softmax_dispatch)]
    if x86::rows(op, x, y, n) {
        return;
    }
    let per = if op == Op::LogSumExp { 1 } else { n };
    for (x, y) in chunks(x, n).zip(chunks_mut(y, per)) {
        row(Portable, op, x, y);
    }
}

/// `op` over the batch `spec` describes, after the checks of the default kernels (the spec
/// against `x`, then `out`, as long as `x` or one value per row) and the fast variant's own: no
/// mask, τ = 1.
fn batch(op: Op, x: &[f32], out: &mut [f32], spec: &Rows<'_, f32>) -> Result<(), Error> {
    let rows = spec.check(x.len())?;
    check_len(if op == Op::LogSumExp { rows } else { x.len() }, out.len())?;
    if !(matches!(spec.mask(), Mask::None) && spec.temperature() == 1.0) {
        return Err(Error::FastSpec);
    }
    run(op, x, out, spec.n());
    Ok(())
}

/// softmax over each row of `x` into `y`, the rows as `spec` gives them (rows of
/// [`spec.n()`](Rows::n) values). Accuracy and semantics in the [module documentation](self).
///
/// # Errors
///
/// As [`rows::softmax`](crate::rows::softmax): [`Error::EmptyRow`] if `n = 0`,
/// [`Error::RaggedBatch`] if `x.len()` is not a multiple of `n`, [`Error::LengthMismatch`]
/// unless `y` (and a mask) have the length of `x`, [`Error::InvalidTemperature`]; then
/// [`Error::FastSpec`] for a mask or a temperature other than 1.
///
/// # Examples
///
/// ```
/// use softmax_core::{fast, softmax, Rows, backend::Poly};
/// let x = [0.5f32, -1.0, 3.0, 2.0];
/// let (mut fast_y, mut y) = ([0.0; 4], [0.0; 4]);
/// fast::softmax(&x, &mut fast_y, &Rows::new(4))?;
/// softmax(Poly, &x, &mut y)?;
/// // d = x − max reaches −4 here: the bound is 2⁻²⁴·(4 + E_p|d|) + 4.2e-7 < 8e-7 relative.
/// for (a, b) in fast_y.iter().zip(&y) {
///     assert!((a - b).abs() <= 8e-7 * b);
/// }
/// # Ok::<(), softmax_core::Error>(())
/// ```
pub fn softmax(x: &[f32], y: &mut [f32], spec: &Rows<'_, f32>) -> Result<(), Error> {
    batch(Op::Softmax, x, y, spec)
}

/// log_softmax over each row of `x` into `y`: `(x − max) − ln Σ e^(x − max)`. Accuracy and
/// semantics in the [module documentation](self).
///
/// # Errors
///
/// As [`softmax`].
///
/// # Examples
///
/// ```
/// use softmax_core::{fast, Rows};
/// let mut y = [0.0f32; 3];
/// fast::log_softmax(&[1.0, 2.0, 3.0], &mut y, &Rows::new(3))?;
/// assert!((y[2] + 0.407_605_96).abs() < 2e-7);
/// # Ok::<(), softmax_core::Error>(())
/// ```
pub fn log_softmax(x: &[f32], y: &mut [f32], spec: &Rows<'_, f32>) -> Result<(), Error> {
    batch(Op::LogSoftmax, x, y, spec)
}

/// logsumexp of each row of `x` into `out` (one value per row): `max + ln Σ e^(x − max)`.
/// Accuracy and semantics in the [module documentation](self).
///
/// # Errors
///
/// As [`rows::logsumexp`](crate::rows::logsumexp): as [`softmax`], with `out` holding one
/// value per row.
///
/// # Examples
///
/// ```
/// use softmax_core::{fast, Rows};
/// let mut out = [0.0f32; 2];
/// fast::logsumexp(&[1000.0, 1000.0, 0.0, f32::NEG_INFINITY], &mut out, &Rows::new(2))?;
/// assert_eq!(out, [1000.0 + core::f32::consts::LN_2, 0.0]);
/// # Ok::<(), softmax_core::Error>(())
/// ```
pub fn logsumexp(x: &[f32], out: &mut [f32], spec: &Rows<'_, f32>) -> Result<(), Error> {
    batch(Op::LogSumExp, x, out, spec)
}
