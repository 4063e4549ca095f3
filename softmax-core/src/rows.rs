//! Row-batched versions: the input holds `R` rows of `n` values back to back (row-major `[R, n]`),
//! described by a [`Rows`] spec with the temperature and mask. Each function validates the whole
//! batch once, then runs the same row kernels as the single-row functions.
//!
//! A batch with zero rows (empty input) is valid and does nothing; `n = 0` is an error.

#![forbid(unsafe_code)]

use crate::backend::Backend;
use crate::chunks::{chunks, chunks3, chunks_mut};
use crate::error::{check_len, check_noise, Error};
use crate::float::Float;
use crate::kernel::{self, with_scale, InPlace, Load, OutOfPlace};
use crate::op;
use crate::simd;
use crate::spec::{dispatch, Mask, RowMask, Rows};

/// softmax over each row of `x` into `y`, with the spec's temperature and mask.
/// Per-row semantics and accuracy as [`softmax`](crate::softmax) /
/// [`softmax_with_temperature`](crate::softmax_with_temperature) /
/// [`masked_softmax`](crate::masked_softmax).
///
/// # Errors
///
/// [`Error::EmptyRow`] (n = 0), [`Error::RaggedBatch`] (input not a multiple of n),
/// [`Error::LengthMismatch`] (`y` or the mask of another length), [`Error::InvalidTemperature`].
///
/// # Examples
///
/// ```
/// use softmax_core::{rows, Rows, backend::Poly};
/// let x = [1.0f32, 2.0, 3.0, 1.0, 1.0, 1.0];
/// let mut y = [0.0; 6];
/// rows::softmax(Poly, &x, &mut y, &Rows::new(3)).unwrap();
/// assert!((y[2] - 0.665_240_94).abs() < 1e-7);
/// assert_eq!(y[3..], [1.0 / 3.0; 3]);
/// ```
pub fn softmax<F: Float, B: Backend<F>>(
    _backend: B,
    x: &[F],
    y: &mut [F],
    spec: &Rows<'_, F>,
) -> Result<(), Error> {
    spec.check(x.len())?;
    check_len(x.len(), y.len())?;
    let n = spec.n();
    dispatch!(spec, |masks, s| {
        // Pairs up to one block (Zen 5, scratch timing of 1024 rows: 256 values 0.307 → 0.277 ns
        // per value, 64 values 0.56 → 0.43; 512 the same; docs/speed-history.md has `harness bench`'s);
        // masked rows one at a time ([`pair_limit`]).
        by_pairs(
            n,
            pair_limit(spec, kernel::TERM_BLOCK),
            out_rows(x, y, n, masks),
            #[inline(always)]
            |a, b| op::softmax_pair::<F, B, _, _>(a, b, s),
            #[inline(always)]
            |a| op::softmax::<F, B, _>(a, s),
        );
    });
    Ok(())
}

/// log_softmax over each row of `x` into `y`, with the spec's temperature and mask.
/// Per-row semantics as [`log_softmax`](crate::log_softmax).
///
/// # Errors
///
/// As [`softmax`].
///
/// # Examples
///
/// ```
/// use softmax_core::{rows, Rows, backend::Poly};
/// let keep = [true, false];
/// let mut y = [0.0f64; 2];
/// rows::log_softmax(Poly, &[3.0, 4.0], &mut y, &Rows::new(2).with_keep(&keep)).unwrap();
/// assert_eq!(y, [0.0, f64::NEG_INFINITY]);
/// ```
pub fn log_softmax<F: Float, B: Backend<F>>(
    _backend: B,
    x: &[F],
    y: &mut [F],
    spec: &Rows<'_, F>,
) -> Result<(), Error> {
    spec.check(x.len())?;
    check_len(x.len(), y.len())?;
    let n = spec.n();
    dispatch!(spec, |masks, s| {
        // Pairs up to 128 values (Zen 5, scratch timing of 1024 rows: 32 values 1.61 → 1.22 ns
        // per value, 64 0.89 → 0.73, 128 0.60 → 0.53; 256 the same, 512 slower: the pair's
        // second normaliser kept its lane sums in memory); masked rows one at a time
        // ([`pair_limit`]).
        by_pairs(
            n,
            pair_limit(spec, 128),
            out_rows(x, y, n, masks),
            #[inline(always)]
            |a, b| op::log_softmax_pair::<F, B, _, _>(a, b, s),
            #[inline(always)]
            |a| op::log_softmax::<F, B, _, _>(a, s),
        );
    });
    Ok(())
}

/// softmax of each row of `xy` (temperature and mask from the spec), overwriting the rows.
/// Semantics and accuracy as [`softmax`].
///
/// # Errors
///
/// As [`softmax`].
///
/// # Examples
///
/// ```
/// use softmax_core::{rows, Rows, backend::Poly};
/// let mut xy = [0.0f32, 0.0, 5.0, 5.0];
/// let keep = [true, true, true, false];
/// rows::softmax_in_place(Poly, &mut xy, &Rows::new(2).with_temperature(0.5).with_keep(&keep)).unwrap();
/// assert_eq!(xy, [0.5, 0.5, 1.0, 0.0]);
/// ```
pub fn softmax_in_place<F: Float, B: Backend<F>>(
    _backend: B,
    xy: &mut [F],
    spec: &Rows<'_, F>,
) -> Result<(), Error> {
    spec.check(xy.len())?;
    apply_mask_in_place(xy, spec);
    let n = spec.n();
    with_scale!(spec.temperature(), |s| {
        for r in chunks_mut(xy, n) {
            op::softmax::<F, B, _>(InPlace(r), s);
        }
    });
    Ok(())
}

/// log_softmax of each row of `xy` (temperature and mask from the spec), overwriting the rows.
/// Semantics and accuracy as [`log_softmax`].
///
/// # Errors
///
/// As [`softmax`].
///
/// # Examples
///
/// ```
/// use softmax_core::{rows, Rows, backend::Poly};
/// let mut xy = [1.0f64, 1.0];
/// rows::log_softmax_in_place(Poly, &mut xy, &Rows::new(1).with_temperature(3.0)).unwrap();
/// assert_eq!(xy, [0.0, 0.0]);
/// ```
pub fn log_softmax_in_place<F: Float, B: Backend<F>>(
    _backend: B,
    xy: &mut [F],
    spec: &Rows<'_, F>,
) -> Result<(), Error> {
    spec.check(xy.len())?;
    apply_mask_in_place(xy, spec);
    let n = spec.n();
    with_scale!(spec.temperature(), |s| {
        for r in chunks_mut(xy, n) {
            op::log_softmax::<F, B, _, _>(InPlace(r), s);
        }
    });
    Ok(())
}

/// The rows of `x` and `y` (`n` values each) with their masks, as the out-of-place kernels take
/// them.
#[inline(always)]
fn out_rows<'a, F: Float, M: RowMask<F> + 'a>(
    x: &'a [F],
    y: &'a mut [F],
    n: usize,
    masks: impl Iterator<Item = M> + 'a,
) -> impl Iterator<Item = OutOfPlace<'a, F, M::L<'a>>> {
    chunks(x, n).zip(chunks_mut(y, n)).zip(masks).map(
        #[inline(always)]
        |((xr, yr), m)| OutOfPlace {
            src: m.load(xr),
            out: yr,
        },
    )
}

/// The longest rows [`by_pairs`] takes in pairs: `max` for unmasked rows, 0 (none) for rows
/// read through a keep or bias mask. Through a mask's load the pair kernels kept each chunk of
/// masked logits in memory between its computation and its use, and ran slower than one row at
/// a time (Zen 5, 1024 rows, scratch timing in ns per value: softmax with a bias mask 0.55 →
/// 0.36 at 256 values and 0.75 → 0.62 at 64, with a keep mask 0.60 → 0.40 and 0.79 → 0.67;
/// log_softmax with a bias mask 0.80 → 0.60 at 128 and 1.01 → 0.91 at 64, level at 32).
/// Copying a pair's masked rows to the stack and running the plain pair kernel on the copies
/// measured 0.43 at 256 values and 0.79 at 64 (softmax, bias mask): not kept.
#[inline(always)]
fn pair_limit<F: Float>(spec: &Rows<'_, F>, max: usize) -> usize {
    if matches!(spec.mask(), Mask::None) {
        max
    } else {
        0
    }
}

/// Runs `pair` on the rows two at a time, `single` on the rest (either gives the same bits): rows
/// of at most `max` values whose length is a multiple of the sums' lanes (32, 64, …), the rows
/// `op::pair_terms` takes (one block, no ragged end; ragged lengths 16, 24, 48 also measured
/// slower in pairs in a first version that took them). Targets that sum lane by lane (all but
/// x86_64 and aarch64: `kernel::LANE_PARALLEL`) keep one row at a time, and the code size of
/// one kernel.
#[inline(always)]
fn by_pairs<T>(
    n: usize,
    max: usize,
    mut rows: impl Iterator<Item = T>,
    mut pair: impl FnMut(T, T),
    mut single: impl FnMut(T),
) {
    if kernel::LANE_PARALLEL && n.is_multiple_of(kernel::TERM_LANES) && n <= max {
        while let Some(a) = rows.next() {
            match rows.next() {
                Some(b) => pair(a, b),
                None => single(a),
            }
        }
    } else {
        for a in rows {
            single(a);
        }
    }
}

/// Writes a validated spec's mask into the buffer: `-inf` where a keep-mask drops an entry,
/// `x + bias` for a bias mask (exactly what the loads of the out-of-place functions compute).
fn apply_mask_in_place<F: Float>(xy: &mut [F], spec: &Rows<'_, F>) {
    match spec.mask() {
        Mask::None => {}
        Mask::Keep(k) => xy.iter_mut().zip(k).for_each(|(v, &k)| {
            if !k {
                *v = F::NEG_INFINITY;
            }
        }),
        Mask::Bias(b) => xy.iter_mut().zip(b).for_each(|(v, &b)| *v += b),
    }
}

/// Zeroes `dx` where a keep-mask drops an entry (those entries are constants).
fn zero_masked<F: Float>(dx: &mut [F], spec: &Rows<'_, F>) {
    if let Mask::Keep(k) = spec.mask() {
        dx.iter_mut()
            .zip(k)
            .filter(|(_, &k)| !k)
            .for_each(|(d, _)| *d = F::ZERO);
    }
}

/// logsumexp of each row of `x/τ` (masked entries excluded) into `out` (one value per row).
///
/// # Errors
///
/// As [`softmax`], with `out.len()` = number of rows.
///
/// # Examples
///
/// ```
/// use softmax_core::{rows, Rows, backend::Poly};
/// let mut out = [0.0f32; 2];
/// rows::logsumexp(Poly, &[0.0, 0.0, 5.0, f32::NEG_INFINITY], &mut out, &Rows::new(2)).unwrap();
/// assert_eq!(out, [core::f32::consts::LN_2, 5.0]);
/// ```
pub fn logsumexp<F: Float, B: Backend<F>>(
    _backend: B,
    x: &[F],
    out: &mut [F],
    spec: &Rows<'_, F>,
) -> Result<(), Error> {
    let r = spec.check(x.len())?;
    check_len(r, out.len())?;
    let n = spec.n();
    dispatch!(spec, |masks, s| {
        for ((xr, o), m) in chunks(x, n).zip(out.iter_mut()).zip(masks) {
            *o = op::logsumexp::<F, B, _, _>(m.load(xr), s);
        }
    });
    Ok(())
}

/// Entropy (nats) of softmax of each row (temperature and mask from the spec) into `out`.
/// Per-row semantics as [`entropy`](crate::entropy).
///
/// # Errors
///
/// As [`logsumexp`].
///
/// # Examples
///
/// ```
/// use softmax_core::{rows, Rows, backend::Poly};
/// let keep = [true, true, false, false];
/// let mut h = [0.0f64; 1];
/// rows::entropy(Poly, &[1.0, 1.0, 9.0, 9.0], &mut h, &Rows::new(4).with_keep(&keep)).unwrap();
/// assert!((h[0] - 2f64.ln()).abs() < 1e-15);
/// ```
pub fn entropy<F: Float, B: Backend<F>>(
    _backend: B,
    x: &[F],
    out: &mut [F],
    spec: &Rows<'_, F>,
) -> Result<(), Error> {
    let r = spec.check(x.len())?;
    check_len(r, out.len())?;
    let n = spec.n();
    dispatch!(spec, |masks, s| {
        for ((xr, o), m) in chunks(x, n).zip(out.iter_mut()).zip(masks) {
            *o = op::entropy::<F, B, _, _>(m.load(xr), s);
        }
    });
    Ok(())
}

/// `KL(softmax(p_r/τ) ‖ softmax(q_r/τ))` for each row pair, the spec's mask applied to both,
/// into `out`. Per-row semantics as [`kl_divergence`](crate::kl_divergence).
///
/// # Errors
///
/// As [`logsumexp`], and [`Error::LengthMismatch`] if `q.len() != p.len()`.
///
/// # Examples
///
/// ```
/// use softmax_core::{rows, Rows, backend::Poly};
/// let mut out = [1.0f32; 2];
/// rows::kl_divergence(Poly, &[1.0, 2.0, 0.0, 0.0], &[1.0, 2.0, 0.0, 0.0], &mut out, &Rows::new(2)).unwrap();
/// assert_eq!(out, [0.0, 0.0]);
/// ```
pub fn kl_divergence<F: Float, B: Backend<F>>(
    _backend: B,
    p: &[F],
    q: &[F],
    out: &mut [F],
    spec: &Rows<'_, F>,
) -> Result<(), Error> {
    let r = spec.check(p.len())?;
    check_len(p.len(), q.len())?;
    check_len(r, out.len())?;
    let n = spec.n();
    dispatch!(spec, |masks, s| {
        let pairs = chunks(p, n).zip(chunks(q, n));
        for (((pr, qr), o), m) in pairs.zip(out.iter_mut()).zip(masks) {
            *o = op::kl::<F, B, _, _>(m.load(pr), m.load(qr), s);
        }
    });
    Ok(())
}

/// softmax VJP for each row, from outputs `y` of `softmax(x/τ)` and upstream `dy`:
/// `dx = y ⊙ (dy − ⟨y, dy⟩)/τ`. Per-row semantics as [`softmax_vjp`](crate::softmax_vjp).
///
/// The spec gives the row length and τ. Its mask needs no work here (masked entries are
/// already constants in `y`), but a keep-mask is honoured anyway: `dx = 0` where it drops an
/// entry. `y` must come from the forward pass with the same spec.
///
/// # Errors
///
/// As [`softmax`], and [`Error::LengthMismatch`] if `dy` or `dx` differ in length from `y`.
///
/// # Examples
///
/// ```
/// use softmax_core::{rows, Rows};
/// let y = [0.5f32, 0.5];
/// let mut dx = [0.0; 2];
/// rows::softmax_vjp(&y, &[1.0, 0.0], &mut dx, &Rows::new(2).with_temperature(0.5)).unwrap();
/// assert_eq!(dx, [0.5, -0.5]); // (1/τ)·y·(dy − ⟨y,dy⟩)
/// ```
pub fn softmax_vjp<F: Float>(
    y: &[F],
    dy: &[F],
    dx: &mut [F],
    spec: &Rows<'_, F>,
) -> Result<(), Error> {
    check_vjp(y, dy, dx, spec)?;
    let n = spec.n();
    simd::exec(
        #[inline(always)]
        || {
            for ((y, dy), dx) in chunks3(y, dy, dx, n) {
                op::softmax_vjp(y, dy, dx, spec.temperature());
            }
        },
    );
    zero_masked(dx, spec);
    Ok(())
}

/// log_softmax VJP for each row, from outputs `y` of `log_softmax(x/τ)` and upstream `dy`:
/// `dx = (dy − e^y·Σ dy)/τ`, with `-inf` (masked) entries constant. Per-row semantics as
/// [`log_softmax_vjp`](crate::log_softmax_vjp); prefer [`log_softmax_vjp_from_logits`] when
/// the logits are at hand.
///
/// The spec gives the row length and τ. Its mask needs no work here (masked entries are
/// already constants in `y`), but a keep-mask is honoured anyway: `dx = 0` where it drops an
/// entry. `y` must come from the forward pass with the same spec.
///
/// # Errors
///
/// As [`softmax_vjp`].
///
/// # Examples
///
/// ```
/// use softmax_core::{rows, Rows, backend::Poly};
/// let y = [-core::f64::consts::LN_2; 2];
/// let mut dx = [0.0; 2];
/// rows::log_softmax_vjp(Poly, &y, &[1.0, 0.0], &mut dx, &Rows::new(2)).unwrap();
/// assert!((dx[0] - 0.5).abs() < 1e-15 && (dx[1] + 0.5).abs() < 1e-15);
/// ```
pub fn log_softmax_vjp<F: Float, B: Backend<F>>(
    _backend: B,
    y: &[F],
    dy: &[F],
    dx: &mut [F],
    spec: &Rows<'_, F>,
) -> Result<(), Error> {
    check_vjp(y, dy, dx, spec)?;
    let n = spec.n();
    simd::exec(
        #[inline(always)]
        || {
            for ((y, dy), dx) in chunks3(y, dy, dx, n) {
                op::log_softmax_vjp::<F, B>(y, dy, dx, spec.temperature());
            }
        },
    );
    zero_masked(dx, spec);
    Ok(())
}

/// log_softmax VJP for each row, from the logits `x` (with the spec's temperature and mask) and
/// upstream `dy`: `dx = (dy − softmax·Σdy)/τ`, where masked and `-inf` logits are constants
/// (`dx = 0`, their `dy` not summed), and every other entry takes part.
///
/// Prefer this to [`log_softmax_vjp`] when the logits are at hand: from the output alone a masked
/// entry cannot be told from a finite logit whose log-probability overflowed to `-inf` (a row
/// spanning more than the float range), nor the finite entries of a row with `+inf` logits,
/// which take part in the limit distribution's gradient.
///
/// # Errors
///
/// As [`softmax`], and [`Error::LengthMismatch`] if `dy` or `dx` differ in length from `x`.
///
/// # Examples
///
/// ```
/// use softmax_core::{rows, Rows, backend::Poly};
/// let mut dx = [0.0f32; 2];
/// // log_softmax([3.4e38, -3.4e38]) = [0, -6.8e38 → -inf]; the second entry is still live.
/// rows::log_softmax_vjp_from_logits(Poly, &[3.4e38, -3.4e38], &[0.0, 1.0], &mut dx, &Rows::new(2)).unwrap();
/// assert_eq!(dx, [-1.0, 1.0]);
/// ```
pub fn log_softmax_vjp_from_logits<F: Float, B: Backend<F>>(
    _backend: B,
    x: &[F],
    dy: &[F],
    dx: &mut [F],
    spec: &Rows<'_, F>,
) -> Result<(), Error> {
    spec.check(x.len())?;
    check_len(x.len(), dy.len())?;
    check_len(x.len(), dx.len())?;
    let n = spec.n();
    dispatch!(spec, |masks, s| {
        let rows = chunks3(x, dy, dx, n);
        for (((xr, dyr), dxr), m) in rows.zip(masks) {
            op::log_softmax_vjp_logits::<F, B, _, _>(m.load(xr), s, dyr, dxr, spec.temperature());
        }
    });
    Ok(())
}

/// sparsemax of each row of `x/τ` (mask from the spec) into `y`.
/// Per-row semantics as [`sparsemax`](crate::sparsemax).
///
/// # Errors
///
/// As [`softmax`].
///
/// # Examples
///
/// ```
/// use softmax_core::{rows, Rows};
/// let mut y = [0.0f32; 3];
/// rows::sparsemax(&[1.0, 2.0, 3.0], &mut y, &Rows::new(3).with_temperature(5.0)).unwrap();
/// assert!((y[0] - 0.133_333_33).abs() < 1e-7);
/// ```
pub fn sparsemax<F: Float>(x: &[F], y: &mut [F], spec: &Rows<'_, F>) -> Result<(), Error> {
    spec.check(x.len())?;
    check_len(x.len(), y.len())?;
    let n = spec.n();
    dispatch!(spec, |masks, s| {
        for ((xr, yr), m) in chunks(x, n).zip(chunks_mut(y, n)).zip(masks) {
            op::sparsemax(
                OutOfPlace {
                    src: m.load(xr),
                    out: yr,
                },
                s,
            );
        }
    });
    Ok(())
}

/// sparsemax VJP for each row, from outputs `y` of `sparsemax(x/τ)` and upstream `dy`.
/// Per-row semantics as [`sparsemax_vjp`](crate::sparsemax_vjp).
///
/// The spec gives the row length and τ. Its mask needs no work here (masked entries are
/// already constants in `y`), but a keep-mask is honoured anyway: `dx = 0` where it drops an
/// entry. `y` must come from the forward pass with the same spec.
///
/// # Errors
///
/// As [`softmax_vjp`].
///
/// # Examples
///
/// ```
/// use softmax_core::{rows, Rows};
/// let mut dx = [0.0f32; 2];
/// rows::sparsemax_vjp(&[0.0, 1.0], &[3.0, 2.0], &mut dx, &Rows::new(2).with_temperature(2.0)).unwrap();
/// assert_eq!(dx, [0.0, 0.0]);
/// ```
pub fn sparsemax_vjp<F: Float>(
    y: &[F],
    dy: &[F],
    dx: &mut [F],
    spec: &Rows<'_, F>,
) -> Result<(), Error> {
    check_vjp(y, dy, dx, spec)?;
    let n = spec.n();
    simd::exec(
        #[inline(always)]
        || {
            for ((y, dy), dx) in chunks3(y, dy, dx, n) {
                op::sparsemax_vjp(y, dy, dx, spec.temperature());
            }
        },
    );
    zero_masked(dx, spec);
    Ok(())
}

/// argmax of each row (first maximum; NaN counts as largest) into `out`, over the entries the
/// spec's mask keeps (a bias mask is added first). The temperature does not change an argmax;
/// it is only validated. A row with nothing kept answers 0.
///
/// # Errors
///
/// As [`logsumexp`].
///
/// # Examples
///
/// ```
/// use softmax_core::{rows, Rows};
/// let mut idx = [0usize; 2];
/// let keep = [true, false, true, true];
/// rows::argmax(&[1.0f32, 5.0, 7.0, 2.0], &mut idx, &Rows::new(2).with_keep(&keep)).unwrap();
/// assert_eq!(idx, [0, 0]);
/// ```
pub fn argmax<F: Float>(x: &[F], out: &mut [usize], spec: &Rows<'_, F>) -> Result<(), Error> {
    let r = spec.check(x.len())?;
    check_len(r, out.len())?;
    let n = spec.n();
    dispatch!(spec, |masks, _s| {
        for ((xr, o), m) in chunks(x, n).zip(out.iter_mut()).zip(masks) {
            *o = op::argmax_iter(m.load(xr).iter()).unwrap_or(0);
        }
    });
    Ok(())
}

/// Hard max (one-hot of argmax) of each row, over the entries the spec's mask keeps. Per-row
/// semantics as [`hardmax`](crate::hardmax); the temperature is only validated.
///
/// # Errors
///
/// As [`softmax`].
///
/// # Examples
///
/// ```
/// use softmax_core::{rows, Rows};
/// let mut y = [0.0f32; 4];
/// rows::hardmax(&[1.0, 5.0, 7.0, 2.0], &mut y, &Rows::new(2)).unwrap();
/// assert_eq!(y, [0.0, 1.0, 1.0, 0.0]);
/// ```
pub fn hardmax<F: Float>(x: &[F], y: &mut [F], spec: &Rows<'_, F>) -> Result<(), Error> {
    spec.check(x.len())?;
    check_len(x.len(), y.len())?;
    let n = spec.n();
    dispatch!(spec, |masks, _s| {
        for ((xr, yr), m) in chunks(x, n).zip(chunks_mut(y, n)).zip(masks) {
            for (o, v) in yr.iter_mut().zip(m.load(xr).iter()) {
                *o = v;
            }
            op::hardmax_in_place(yr);
        }
    });
    Ok(())
}

/// Gumbel-softmax of each row with caller-supplied uniform noise (one value per entry):
/// `softmax((x + g)/τ)` with the spec's temperature and mask, or with `hard` the one-hot of
/// `argmax(x + g)` over the kept entries. Per-row semantics as
/// [`gumbel_softmax`](crate::gumbel_softmax); masked entries get 0 whatever their noise.
///
/// # Errors
///
/// As [`softmax`], [`Error::LengthMismatch`] if `uniform` differs in length from `x`, and
/// [`Error::InvalidNoise`] if some `u` is not in (0, 1) (masked entries included, so one noise
/// buffer serves every mask).
///
/// # Examples
///
/// ```
/// use softmax_core::{rows, Rows, backend::Poly};
/// let x = [1.0f32, 2.0, 3.0, 1.0, 2.0, 3.0];
/// let u = [0.5, 0.9, 0.1, 0.5, 0.1, 0.9];
/// let mut y = [0.0; 6];
/// rows::gumbel_softmax(Poly, &x, &u, true, &mut y, &Rows::new(3)).unwrap();
/// assert_eq!(y, [0.0, 1.0, 0.0, 0.0, 0.0, 1.0]);
/// ```
pub fn gumbel_softmax<F: Float, B: Backend<F>>(
    _backend: B,
    x: &[F],
    uniform: &[F],
    hard: bool,
    y: &mut [F],
    spec: &Rows<'_, F>,
) -> Result<(), Error> {
    spec.check(x.len())?;
    check_len(x.len(), uniform.len())?;
    check_len(x.len(), y.len())?;
    check_noise(uniform)?;
    let n = spec.n();
    dispatch!(spec, |masks, s| {
        let rows = chunks3(x, uniform, y, n);
        for (((xr, ur), yr), m) in rows.zip(masks) {
            op::gumbel::<F, B, _, _>(m.load(xr), ur, hard, yr, s);
        }
    });
    Ok(())
}

/// For each row, the temperature τ at which softmax of the row (mask from the spec) divided by
/// τ has entropy `target` nats, into `out` (one τ per row). Per-row semantics and accuracy as
/// [`temperature_for_entropy`](crate::temperature_for_entropy); the spec's temperature is only
/// validated (it is what is being solved for).
///
/// Every row is solved. A row whose entropy cannot reach `target` gets NaN, and the call then
/// returns [`Error::EntropyOutOfRange`] with all rows written, so the NaN rows tell which failed.
///
/// # Errors
///
/// As [`logsumexp`]; [`Error::EntropyOutOfRange`] as above.
///
/// # Examples
///
/// ```
/// use softmax_core::{rows, Rows, backend::Poly};
/// let x = [1.0f64, 2.0, 3.0, 0.0, 0.0, 9.0];
/// let mut tau = [0.0; 2];
/// rows::temperature_for_entropy(Poly, &x, 0.5, &mut tau, &Rows::new(3)).unwrap();
/// assert!((tau[0] - 0.548_514).abs() < 1e-6);
/// let keep = [true, true, false, true, true, true];
/// let r = rows::temperature_for_entropy(Poly, &x, 0.8, &mut tau, &Rows::new(3).with_keep(&keep));
/// assert!(r.is_err() && tau[0].is_nan()); // two kept entries: H <= ln 2 < 0.8
/// assert!(tau[1] > 0.0);
/// ```
pub fn temperature_for_entropy<F: Float, B: Backend<F>>(
    _backend: B,
    x: &[F],
    target: F,
    out: &mut [F],
    spec: &Rows<'_, F>,
) -> Result<(), Error> {
    let r = spec.check(x.len())?;
    check_len(r, out.len())?;
    let n = spec.n();
    let mut result = Ok(());
    dispatch!(spec, |masks, _s| {
        for ((xr, o), m) in chunks(x, n).zip(out.iter_mut()).zip(masks) {
            *o = match op::temperature_for_entropy::<F, B, _>(m.load(xr), target) {
                Ok(tau) => tau,
                Err(e) => {
                    result = Err(e);
                    F::NAN
                }
            };
        }
    });
    result
}

fn check_vjp<F: Float>(y: &[F], dy: &[F], dx: &[F], spec: &Rows<'_, F>) -> Result<(), Error> {
    spec.check(y.len())?;
    check_len(y.len(), dy.len())?;
    check_len(y.len(), dx.len())
}
