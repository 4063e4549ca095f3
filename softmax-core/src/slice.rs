//! Single-row functions over slices. Batched versions with masks and temperature are in
//! [`rows`](crate::rows); fixed-size array versions in [`array`](crate::array).

#![forbid(unsafe_code)]

use crate::backend::Backend;
use crate::error::{check_len, check_noise, check_row, check_temperature, Error};
use crate::float::Float;
use crate::kernel::with_scale;
use crate::kernel::{Bias, InPlace, Keep, OutOfPlace, Plain, Unit};
use crate::{op, simd};

/// softmax of one row: `y_i = e^(x_i) / Σ_j e^(x_j)`, computed as `e^(x_i − max)` with the shift
/// exact and the sum compensated.
///
/// Edge semantics: an all-`-inf` row gives zeros; `k` entries equal to `+inf` share the mass
/// (`1/k` each); a NaN anywhere makes the whole row NaN.
///
/// Accuracy (f32, `Poly`): every output `>= 1e-30` is within 2e-6 relative of the exact
/// softmax of the given inputs, for any row length (16M-element rows included); measured max
/// about 3 ULP. With `Libm` the same; with `MicroMath`, within 4.5e-3.
///
/// # Errors
///
/// [`Error::EmptyRow`] for an empty `x`; [`Error::LengthMismatch`] if `y.len() != x.len()`.
///
/// # Examples
///
/// ```
/// use softmax_core::{softmax, backend::Poly};
/// let mut y = [0.0f32; 3];
/// softmax(Poly, &[1000.0, 1001.0, 1002.0], &mut y).unwrap();
/// assert!((y[0] - 0.090_030_57).abs() < 1e-7);
/// assert!((y.iter().sum::<f32>() - 1.0).abs() < 1e-6);
/// ```
pub fn softmax<F: Float, B: Backend<F>>(_backend: B, x: &[F], y: &mut [F]) -> Result<(), Error> {
    check_row(x.len())?;
    check_len(x.len(), y.len())?;
    simd::exec(
        #[inline(always)]
        || {
            op::softmax::<F, B, _>(
                OutOfPlace {
                    src: Plain(x),
                    out: y,
                },
                Unit,
            )
        },
    );
    Ok(())
}

/// softmax of one row into `y`, returning the row's logsumexp: the probabilities and their
/// normaliser from the same passes (what a cross-entropy needs: its loss is `lse − x_target`, its
/// gradient `y − target`).
///
/// Semantics of `y` as [`softmax`] (the bits may differ from [`softmax`]'s in the last place: the
/// sum is split differently); the logsumexp as [`logsumexp`]: `-inf` for an all-`-inf` row,
/// `+inf` with a `+inf` entry, NaN with a NaN.
///
/// Accuracy (f32, `Poly`): `y` as [`softmax`]; the logsumexp within 2 ULP + 2⁻²³·|max|, and
/// `lse − max` to a few units of roundoff relative to itself (also when it is as small as
/// 1e-30: the maxima are counted apart from the other terms).
///
/// # Errors
///
/// [`Error::EmptyRow`] for an empty `x`; [`Error::LengthMismatch`] if `y.len() != x.len()`.
///
/// # Examples
///
/// ```
/// use softmax_core::{softmax_lse, backend::Poly};
/// let mut y = [0.0f32; 3];
/// let lse = softmax_lse(Poly, &[1.0, 2.0, 3.0], &mut y)?;
/// assert!((lse - 3.407_605_9).abs() < 1e-6);
/// assert!((y[2] - 0.665_240_94).abs() < 1e-7);
/// // A confidently classified row: the loss lse − x_max keeps its digits.
/// let lse = softmax_lse(Poly, &[0.0f64, -50.0], &mut [0.0; 2])?;
/// assert!((lse - (-50.0f64).exp()).abs() < 1e-35);
/// # Ok::<(), softmax_core::Error>(())
/// ```
pub fn softmax_lse<F: Float, B: Backend<F>>(_backend: B, x: &[F], y: &mut [F]) -> Result<F, Error> {
    check_row(x.len())?;
    check_len(x.len(), y.len())?;
    Ok(simd::exec(
        #[inline(always)]
        || {
            op::softmax_lse::<F, B>(OutOfPlace {
                src: Plain(x),
                out: y,
            })
        },
    ))
}

/// [`softmax_lse`] with every probability multiplied by `scale`, returning the logsumexp and
/// the probability at index `at` before the scaling: the forward pass and most of the gradient
/// of a reduced cross-entropy in three passes over the row (its gradient is
/// `scale·(p − onehot(at))`, `scale` being `1/N` for a mean over `N` rows; the caller sets the
/// target's entry from the returned `p_at`).
///
/// `y_i = fl(p_i · scale)` with `p_i` the rounded probability [`softmax_lse`] writes: the same
/// bits as [`softmax_lse`] followed by `y_i *= scale`, without the fourth pass over the row.
/// The returned probability is `softmax_lse`'s `y[at]`, bit for bit (NaN if `at` is not an
/// index of the row). The logsumexp is [`softmax_lse`]'s.
///
/// Accuracy: as [`softmax_lse`], plus the product's rounding (half a ULP of `y_i`).
///
/// # Errors
///
/// [`Error::EmptyRow`] for an empty `x`; [`Error::LengthMismatch`] if `y.len() != x.len()`.
///
/// # Examples
///
/// ```
/// use softmax_core::{softmax_lse, softmax_lse_scaled, backend::Poly};
/// let x = [1.0f32, 2.0, 3.0];
/// let (mut p, mut g) = ([0.0f32; 3], [0.0f32; 3]);
/// let lse = softmax_lse(Poly, &x, &mut p)?;
/// // Mean cross-entropy over 4 rows, target class 2: the gradient of this row.
/// let (lse_s, p_t) = softmax_lse_scaled(Poly, &x, &mut g, 0.25, 2)?;
/// g[2] = 0.25 * (p_t - 1.0);
/// assert_eq!((lse_s, p_t), (lse, p[2]));
/// assert_eq!(g[0], p[0] * 0.25);
/// # Ok::<(), softmax_core::Error>(())
/// ```
pub fn softmax_lse_scaled<F: Float, B: Backend<F>>(
    _backend: B,
    x: &[F],
    y: &mut [F],
    scale: F,
    at: usize,
) -> Result<(F, F), Error> {
    check_row(x.len())?;
    check_len(x.len(), y.len())?;
    Ok(simd::exec(
        #[inline(always)]
        || {
            op::softmax_lse_scaled::<F, B>(
                OutOfPlace {
                    src: Plain(x),
                    out: y,
                },
                // A scale of 1 changes no bit: no multiply (a call per value on a Cortex-M0).
                Some(scale).filter(|&s| s != F::ONE),
                at,
            )
        },
    ))
}

/// [`softmax_lse`] overwriting the row: the row becomes its softmax, the logsumexp is returned.
///
/// # Errors
///
/// [`Error::EmptyRow`] for an empty row.
///
/// # Examples
///
/// ```
/// use softmax_core::{softmax_lse_in_place, backend::Poly};
/// let mut z = [5.0f32, 5.0];
/// let lse = softmax_lse_in_place(Poly, &mut z)?;
/// assert_eq!(z, [0.5, 0.5]);
/// assert_eq!(lse, 5.0 + core::f32::consts::LN_2);
/// # Ok::<(), softmax_core::Error>(())
/// ```
pub fn softmax_lse_in_place<F: Float, B: Backend<F>>(
    _backend: B,
    xy: &mut [F],
) -> Result<F, Error> {
    check_row(xy.len())?;
    Ok(simd::exec(
        #[inline(always)]
        || op::softmax_lse::<F, B>(InPlace(xy)),
    ))
}

/// softmax of one row at temperature τ: `softmax(x/τ)`.
///
/// The shift `x − max` is exact and divided once (for τ > 1 both operands are halved first, which
/// is exact), so nothing overflows where the exact `(x − max)/τ` does not, and the only extra
/// rounding is that of the quotient.
///
/// Accuracy: as [`softmax`] plus the rounding of the quotients `d_j = (x_j − max)/τ`, each off by
/// at most `2⁻²⁴·|d_j|` in f32: output `i` gains a relative error of at most
/// `2⁻²⁴·(|d_i| + Σ_j p_j·|d_j|)` (none for τ = 1).
///
/// # Errors
///
/// As [`softmax`], and [`Error::InvalidTemperature`] unless `τ > 0` and finite.
///
/// # Examples
///
/// ```
/// use softmax_core::{softmax_with_temperature, backend::Poly};
/// let mut y = [0.0f64; 3];
/// softmax_with_temperature(Poly, &[1.0, 2.0, 3.0], 10.0, &mut y).unwrap();
/// assert!((y[2] - 0.367_165_4).abs() < 1e-7);
/// assert!(softmax_with_temperature(Poly, &[1.0], 0.0, &mut y[..1]).is_err());
/// ```
pub fn softmax_with_temperature<F: Float, B: Backend<F>>(
    _backend: B,
    x: &[F],
    temperature: F,
    y: &mut [F],
) -> Result<(), Error> {
    check_row(x.len())?;
    check_len(x.len(), y.len())?;
    check_temperature(temperature)?;
    with_scale!(temperature, |s| op::softmax::<F, B, _>(
        OutOfPlace {
            src: Plain(x),
            out: y
        },
        s
    ));
    Ok(())
}

/// softmax of one row, overwriting the row. Same semantics and accuracy as [`softmax`].
///
/// # Errors
///
/// [`Error::EmptyRow`] for an empty row.
///
/// # Examples
///
/// ```
/// use softmax_core::{softmax_in_place, backend::Poly};
/// let mut x = [0.0f32, 0.0, f32::NEG_INFINITY, 0.0];
/// softmax_in_place(Poly, &mut x).unwrap();
/// assert_eq!(x, [1.0 / 3.0, 1.0 / 3.0, 0.0, 1.0 / 3.0]);
/// ```
pub fn softmax_in_place<F: Float, B: Backend<F>>(_backend: B, xy: &mut [F]) -> Result<(), Error> {
    check_row(xy.len())?;
    simd::exec(
        #[inline(always)]
        || op::softmax::<F, B, _>(InPlace(xy), Unit),
    );
    Ok(())
}

/// log_softmax of one row: `y_i = x_i − logsumexp(x)`, computed as `(x_i − max) − ln Σ e^(x − max)`
/// (two roundings that cannot cancel: `x_i − max <= 0 <= ln Σ`), the sum's terms from the exact
/// shift and an accurate `ln` of the compensated sum. Rows of 2¹⁷ values or more sum in one
/// online pass against a reference up to 2.5 below the maximum, and subtract from the exact
/// difference with that reference (`(d − ln Σ) + d_lo`), which can be positive.
///
/// Edge semantics: an all-`-inf` row gives all `-inf`; with `k` entries `+inf`, those get
/// `−ln k` and the others `-inf`; NaN poisons the row. Where the exact result is outside the
/// range (`[3.4e38, −3.4e38]` in f32), the answer is that infinity.
///
/// Accuracy (f32, `Poly`): absolute error <= 2⁻²³·(|y_i| + 1)·2, measured max well under that.
///
/// # Errors
///
/// [`Error::EmptyRow`]; [`Error::LengthMismatch`] if `y.len() != x.len()`.
///
/// # Examples
///
/// ```
/// use softmax_core::{log_softmax, backend::Poly};
/// let mut y = [0.0f64; 3];
/// log_softmax(Poly, &[1.0, 2.0, 3.0], &mut y).unwrap();
/// assert!((y[2] + 0.407_605_964_444_380_1).abs() < 1e-15);
/// ```
pub fn log_softmax<F: Float, B: Backend<F>>(
    _backend: B,
    x: &[F],
    y: &mut [F],
) -> Result<(), Error> {
    check_row(x.len())?;
    check_len(x.len(), y.len())?;
    simd::exec(
        #[inline(always)]
        || {
            op::log_softmax::<F, B, _, _>(
                OutOfPlace {
                    src: Plain(x),
                    out: y,
                },
                Unit,
            )
        },
    );
    Ok(())
}

/// log_softmax of one row, overwriting the row. Same semantics as [`log_softmax`].
///
/// # Errors
///
/// [`Error::EmptyRow`] for an empty row.
///
/// # Examples
///
/// ```
/// use softmax_core::{log_softmax_in_place, backend::Poly};
/// let mut x = [7.0f32, 7.0];
/// log_softmax_in_place(Poly, &mut x).unwrap();
/// assert_eq!(x, [-core::f32::consts::LN_2; 2]);
/// ```
pub fn log_softmax_in_place<F: Float, B: Backend<F>>(
    _backend: B,
    xy: &mut [F],
) -> Result<(), Error> {
    check_row(xy.len())?;
    simd::exec(
        #[inline(always)]
        || op::log_softmax::<F, B, _, _>(InPlace(xy), Unit),
    );
    Ok(())
}

/// `ln Σ e^(x_i)` of one row (PyTorch `logsumexp`), via the online state [`LogSumExp`](crate::LogSumExp).
///
/// `-inf` for an all-`-inf` row, `+inf` if any entry is `+inf`, NaN if any is NaN.
///
/// Accuracy (f32, `Poly`): within 2 ULP + 2⁻²³·|max| of the exact value.
///
/// # Errors
///
/// [`Error::EmptyRow`] for an empty row (PyTorch returns `-inf` there; an empty row is a shape
/// bug in every use we know of).
///
/// # Examples
///
/// ```
/// use softmax_core::{logsumexp, backend::Poly};
/// let v = logsumexp(Poly, &[1000.0f32, 1000.0]).unwrap();
/// assert_eq!(v, 1000.0 + core::f32::consts::LN_2);
/// ```
pub fn logsumexp<F: Float, B: Backend<F>>(_backend: B, x: &[F]) -> Result<F, Error> {
    check_row(x.len())?;
    Ok(simd::exec(
        #[inline(always)]
        || op::logsumexp::<F, B, _, _>(Plain(x), Unit),
    ))
}

/// Shannon entropy (nats) of `softmax(x/τ)`, straight from the logits:
/// `H = lse(x/τ) − E_p[x/τ]`, evaluated as `ln Σ e^d − Σ e^d·d / Σ e^d` with `d = x/τ − max`, a
/// sum of two non-negative terms, so peaked rows keep full relative precision (e.g. `[1, 50, 100]`
/// gives 9.84e-21, where the unshifted formula gives 0).
///
/// 0 for an all-`-inf` row, `ln k` with `k` entries `+inf`, NaN with a NaN.
///
/// Accuracy (f32, `Poly`): relative error <= 1e-5 (measured; the worst cases are rows where
/// H is tiny and computed from a few large terms).
///
/// # Errors
///
/// [`Error::EmptyRow`]; [`Error::InvalidTemperature`] unless τ > 0 and finite.
///
/// # Examples
///
/// ```
/// use softmax_core::{entropy, backend::Poly};
/// let h = entropy(Poly, &[1.0f64, 2.0, 3.0], 1.0).unwrap();
/// assert!((h - 0.832_395_581_839_938_9).abs() < 1e-14);
/// assert!((entropy(Poly, &[5.0f64; 4], 1.0).unwrap() - 4f64.ln()).abs() < 1e-15);
/// ```
pub fn entropy<F: Float, B: Backend<F>>(_backend: B, x: &[F], temperature: F) -> Result<F, Error> {
    check_row(x.len())?;
    check_temperature(temperature)?;
    Ok(with_scale!(temperature, |s| op::entropy::<F, B, _, _>(
        Plain(x),
        s
    )))
}

/// KL divergence `KL(softmax(p) ‖ softmax(q))` between the distributions of two logit rows,
/// without forming either distribution: `Σ_i p_i·(log p_i − log q_i)` over `p_i > 0`.
///
/// `+inf` if some `q_i` is 0 (a `-inf` logit) where `p_i > 0`; 0 for identical rows; NaN if
/// either row has a NaN. With `+inf` logits, the limit distributions are used.
///
/// Argument order: the first row is the reference distribution `p`. PyTorch's
/// `kl_div(input, target)` computes `KL(target ‖ input)`, with the reference second.
///
/// Computed as `Σ p_i (d_p,i − d_q,i) − ln(s_p/s_q)` (shifted logits, the ratio of the two
/// compensated sums through log1p), so near-identical rows keep their digits. Accuracy: absolute
/// error at most about `2⁻²²·(1 + Σ p_i·|log p_i − log q_i|)` in f32 (measured), so a result
/// within that of 0 can come out slightly negative.
///
/// # Errors
///
/// [`Error::EmptyRow`]; [`Error::LengthMismatch`] if the rows differ in length.
///
/// # Examples
///
/// ```
/// use softmax_core::{kl_divergence, backend::Poly};
/// // KL between softmax([0, ln 3]) = [1/4, 3/4] and the uniform [1/2, 1/2].
/// let kl = kl_divergence(Poly, &[0.0f64, 3f64.ln()], &[0.0, 0.0]).unwrap();
/// let exact = 0.25 * (0.5f64).ln() + 0.75 * (1.5f64).ln();
/// assert!((kl - exact).abs() < 1e-15);
/// ```
pub fn kl_divergence<F: Float, B: Backend<F>>(
    _backend: B,
    p_logits: &[F],
    q_logits: &[F],
) -> Result<F, Error> {
    check_row(p_logits.len())?;
    check_len(p_logits.len(), q_logits.len())?;
    Ok(simd::exec(
        #[inline(always)]
        || op::kl::<F, B, _, _>(Plain(p_logits), Plain(q_logits), Unit),
    ))
}

/// Backward pass of softmax for one row, from its output `y` and the upstream gradient `dy`:
/// `dx = y ⊙ (dy − ⟨y, dy⟩)` (the Jacobian `diag(y) − y yᵀ` applied without forming it).
///
/// Entries with `y_i = 0` (masked, `-inf` or underflowed) are treated as constants: `dx_i = 0`
/// and `dy_i` does not enter the dot product. For softmax at temperature τ use
/// [`rows::softmax_vjp`](crate::rows::softmax_vjp), which multiplies by 1/τ.
///
/// Accuracy: the dot product `⟨y, dy⟩` is summed in blocks of 16 per lane with compensated
/// totals (each product rounded once) and kept unrounded for the subtraction; each `dx_i` is
/// within 4 ULP of `y_i·(dy_i − ⟨y, dy⟩)` evaluated exactly from the given `y`, `dy`, plus
/// `17u·y_i·Σ_j |y_j·dy_j|` absolute (`u` = 2⁻²⁴ in f32, 2⁻⁵³ in f64: the products' and the
/// blocks' roundings, which matter only where `dy_i` nearly cancels `⟨y, dy⟩`).
///
/// # Errors
///
/// [`Error::EmptyRow`]; [`Error::LengthMismatch`] unless `y`, `dy`, `dx` have equal lengths.
///
/// # Examples
///
/// ```
/// use softmax_core::{softmax, softmax_vjp, backend::Poly};
/// let mut y = [0.0f64; 3];
/// softmax(Poly, &[1.0, 2.0, 3.0], &mut y).unwrap();
/// let mut dx = [0.0; 3];
/// // Gradient of y[2] with respect to x: y2·(e2 − y).
/// softmax_vjp(&y, &[0.0, 0.0, 1.0], &mut dx).unwrap();
/// assert!((dx[2] - y[2] * (1.0 - y[2])).abs() < 1e-15);
/// assert!(dx.iter().sum::<f64>().abs() < 1e-15);
/// ```
pub fn softmax_vjp<F: Float>(y: &[F], dy: &[F], dx: &mut [F]) -> Result<(), Error> {
    check_row(y.len())?;
    check_len(y.len(), dy.len())?;
    check_len(y.len(), dx.len())?;
    simd::exec(
        #[inline(always)]
        || op::softmax_vjp(y, dy, dx, F::ONE),
    );
    Ok(())
}

/// Backward pass of log_softmax for one row, from its output `y` and upstream `dy`:
/// `dx = dy − softmax·Σ dy` with `softmax = e^y`.
///
/// Entries with `y_i = -inf` (masked or `-inf` logits) are constants: `dx_i = 0` and `dy_i` does
/// not enter the sum. From `y` alone that also freezes a finite logit whose log-probability
/// overflowed to `-inf` (only in rows spanning more than the float range) and the finite entries
/// of a row with `+inf` logits; [`rows::log_softmax_vjp_from_logits`](crate::rows::log_softmax_vjp_from_logits)
/// and [`log_softmax_vjp_from_logits`] take the logits and let those take part, as the
/// gradient of the limit distribution requires.
///
/// Accuracy: `Σ dy` is compensated; `e^y` carries the backend's exp error.
///
/// # Errors
///
/// [`Error::EmptyRow`]; [`Error::LengthMismatch`] unless `y`, `dy`, `dx` have equal lengths.
///
/// # Examples
///
/// ```
/// use softmax_core::{log_softmax, log_softmax_vjp, backend::Poly};
/// let mut y = [0.0f64; 2];
/// log_softmax(Poly, &[0.0, 0.0], &mut y).unwrap();
/// let mut dx = [0.0; 2];
/// // d/dx of log p_0: [1 − p0, −p1] = [0.5, −0.5].
/// log_softmax_vjp(Poly, &y, &[1.0, 0.0], &mut dx).unwrap();
/// assert!((dx[0] - 0.5).abs() < 1e-15 && (dx[1] + 0.5).abs() < 1e-15);
/// ```
pub fn log_softmax_vjp<F: Float, B: Backend<F>>(
    _backend: B,
    y: &[F],
    dy: &[F],
    dx: &mut [F],
) -> Result<(), Error> {
    check_row(y.len())?;
    check_len(y.len(), dy.len())?;
    check_len(y.len(), dx.len())?;
    simd::exec(
        #[inline(always)]
        || op::log_softmax_vjp::<F, B>(y, dy, dx, F::ONE),
    );
    Ok(())
}

/// Backward pass of log_softmax for one row, from the logits `x` and upstream `dy`:
/// `dx = dy − softmax(x)·Σ dy`, where `-inf` logits are constants (`dx = 0`, their `dy` not
/// summed) and every other entry takes part. Prefer it to
/// [`log_softmax_vjp`] when the logits are at hand: from the output alone a finite logit whose
/// log-probability overflowed to `-inf` cannot be told from a masked one, nor can the finite
/// entries of a row with `+inf` logits (they take part in the limit distribution's gradient).
/// A NaN row gives NaN.
///
/// Accuracy: `Σ dy` is compensated; the probabilities as [`softmax`].
///
/// # Errors
///
/// [`Error::EmptyRow`]; [`Error::LengthMismatch`] unless `x`, `dy`, `dx` have equal lengths.
///
/// # Examples
///
/// ```
/// use softmax_core::{log_softmax_vjp_from_logits, backend::Poly};
/// let mut dx = [0.0f32; 2];
/// // log_softmax([3.4e38, -3.4e38]) = [0, -inf]; the second entry is still live.
/// log_softmax_vjp_from_logits(Poly, &[3.4e38, -3.4e38], &[0.0, 1.0], &mut dx).unwrap();
/// assert_eq!(dx, [-1.0, 1.0]);
/// ```
pub fn log_softmax_vjp_from_logits<F: Float, B: Backend<F>>(
    _backend: B,
    x: &[F],
    dy: &[F],
    dx: &mut [F],
) -> Result<(), Error> {
    check_row(x.len())?;
    check_len(x.len(), dy.len())?;
    check_len(x.len(), dx.len())?;
    simd::exec(
        #[inline(always)]
        || op::log_softmax_vjp_logits::<F, B, _, _>(Plain(x), Unit, dy, dx, F::ONE),
    );
    Ok(())
}

/// softmax of one row with a boolean keep-mask: entries with `keep[i] == false` behave as
/// `-inf` whatever their value (NaN included) and get probability 0. A row with nothing kept
/// gives zeros.
///
/// Accuracy: as [`softmax`] of the kept entries (the mask is applied exactly).
///
/// # Errors
///
/// [`Error::EmptyRow`]; [`Error::LengthMismatch`] unless `x`, `keep`, `y` have equal lengths.
///
/// # Examples
///
/// ```
/// use softmax_core::{masked_softmax, backend::Poly};
/// let mut y = [0.0f32; 4];
/// masked_softmax(Poly, &[1.0, 2.0, 3.0, f32::NAN], &[true, true, true, false], &mut y).unwrap();
/// assert!((y[2] - 0.665_240_94).abs() < 1e-7);
/// assert_eq!(y[3], 0.0);
/// ```
pub fn masked_softmax<F: Float, B: Backend<F>>(
    _backend: B,
    x: &[F],
    keep: &[bool],
    y: &mut [F],
) -> Result<(), Error> {
    check_row(x.len())?;
    check_len(x.len(), keep.len())?;
    check_len(x.len(), y.len())?;
    simd::exec(
        #[inline(always)]
        || {
            op::softmax::<F, B, _>(
                OutOfPlace {
                    src: Keep(x, keep),
                    out: y,
                },
                Unit,
            )
        },
    );
    Ok(())
}

/// softmax of one row with an additive mask: `softmax(x + bias)`; a `-inf` bias drops a finite
/// logit (attention-style masks, ALiBi-style position terms).
///
/// Accuracy: as [`softmax`] of the rounded sums `fl(x_i + bias_i)`; that rounding is an input
/// perturbation of at most `2⁻²⁴·|x_i + bias_i|` per entry in f32 (none when the sum is exact,
/// as with a 0 / `-inf` mask).
///
/// # Errors
///
/// [`Error::EmptyRow`]; [`Error::LengthMismatch`] unless `x`, `bias`, `y` have equal lengths.
///
/// # Examples
///
/// ```
/// use softmax_core::{softmax_with_bias, backend::Poly};
/// let mut y = [0.0f64; 3];
/// softmax_with_bias(Poly, &[5.0, 5.0, 5.0], &[0.0, f64::NEG_INFINITY, 0.0], &mut y).unwrap();
/// assert_eq!(y, [0.5, 0.0, 0.5]);
/// ```
pub fn softmax_with_bias<F: Float, B: Backend<F>>(
    _backend: B,
    x: &[F],
    bias: &[F],
    y: &mut [F],
) -> Result<(), Error> {
    check_row(x.len())?;
    check_len(x.len(), bias.len())?;
    check_len(x.len(), y.len())?;
    simd::exec(
        #[inline(always)]
        || {
            op::softmax::<F, B, _>(
                OutOfPlace {
                    src: Bias(x, bias),
                    out: y,
                },
                Unit,
            )
        },
    );
    Ok(())
}

/// sparsemax of one row (Martins & Astudillo 2016): the Euclidean projection of `x` onto the
/// probability simplex, `y_i = max(x_i − τ*, 0)` with `τ*` such that `Σ y = 1`. Unlike softmax
/// it gives exact zeros.
///
/// The threshold is found by Michelot's fixed-point iteration (no sort, no scratch buffer):
/// each round is one pass over the row, the number of rounds is small in practice and at most
/// the row length. Edge semantics as softmax (all `-inf` → zeros, `+inf` entries share the mass,
/// NaN poisons the row).
///
/// Accuracy: absolute error of each `y_i` about 2⁻²³·(1 + |x_i − max|) in f32.
///
/// # Errors
///
/// [`Error::EmptyRow`]; [`Error::LengthMismatch`] if `y.len() != x.len()`.
///
/// # Examples
///
/// ```
/// use softmax_core::sparsemax;
/// let mut y = [0.0f32; 3];
/// sparsemax(&[1.0, 2.0, 3.0], &mut y).unwrap();
/// assert_eq!(y, [0.0, 0.0, 1.0]);
/// sparsemax(&[0.5, 1.0, 1.5], &mut y).unwrap();
/// assert_eq!(y, [0.0, 0.25, 0.75]);
/// ```
pub fn sparsemax<F: Float>(x: &[F], y: &mut [F]) -> Result<(), Error> {
    check_row(x.len())?;
    check_len(x.len(), y.len())?;
    simd::exec(
        #[inline(always)]
        || {
            op::sparsemax(
                OutOfPlace {
                    src: Plain(x),
                    out: y,
                },
                Unit,
            )
        },
    );
    Ok(())
}

/// Backward pass of sparsemax from its output `y` and upstream `dy`: on the support
/// `S = {y > 0}`, `dx_i = dy_i − mean_S dy`; 0 off the support. A NaN row gives NaN.
///
/// Accuracy: the support sum is blocked and compensated like every reduction here;
/// `|dx_i − exact| <= 2u·|dx_i| + 18u·mean_S |dy|` (`u` = 2⁻²⁴ in f32, 2⁻⁵³ in f64), one more
/// `u·|dx_i|` for the 1/τ of the batched form.
///
/// # Errors
///
/// [`Error::EmptyRow`]; [`Error::LengthMismatch`] unless `y`, `dy`, `dx` have equal lengths.
///
/// # Examples
///
/// ```
/// use softmax_core::sparsemax_vjp;
/// let y = [0.0f32, 0.25, 0.75];
/// let mut dx = [0.0; 3];
/// sparsemax_vjp(&y, &[1.0, 1.0, 0.0], &mut dx).unwrap();
/// assert_eq!(dx, [0.0, 0.5, -0.5]);
/// ```
pub fn sparsemax_vjp<F: Float>(y: &[F], dy: &[F], dx: &mut [F]) -> Result<(), Error> {
    check_row(y.len())?;
    check_len(y.len(), dy.len())?;
    check_len(y.len(), dx.len())?;
    simd::exec(
        #[inline(always)]
        || op::sparsemax_vjp(y, dy, dx, F::ONE),
    );
    Ok(())
}

/// Index of the largest entry; the first one on ties; a NaN counts as the largest (PyTorch
/// `argmax` semantics).
///
/// # Errors
///
/// [`Error::EmptyRow`] for an empty row.
///
/// # Examples
///
/// ```
/// use softmax_core::argmax;
/// assert_eq!(argmax(&[1.0f32, 3.0, 3.0, 2.0]), Ok(1));
/// assert_eq!(argmax(&[1.0f32, f32::NAN, 9.0]), Ok(1));
/// ```
pub fn argmax<F: Float>(x: &[F]) -> Result<usize, Error> {
    op::argmax(x).ok_or(Error::EmptyRow)
}

/// Hard max: the one-hot vector of [`argmax`] (ONNX `Hardmax`), the τ → 0 limit of softmax
/// with ties broken towards the first index.
///
/// Family edge semantics: a NaN row gives all NaN, an all-`-inf` row gives zeros (no allowed
/// entry; ONNX would return a one-hot at index 0).
///
/// # Errors
///
/// [`Error::EmptyRow`]; [`Error::LengthMismatch`] if `y.len() != x.len()`.
///
/// # Examples
///
/// ```
/// use softmax_core::hardmax;
/// let mut y = [0.0f64; 4];
/// hardmax(&[1.0, 3.0, 3.0, 2.0], &mut y).unwrap();
/// assert_eq!(y, [0.0, 1.0, 0.0, 0.0]);
/// ```
pub fn hardmax<F: Float>(x: &[F], y: &mut [F]) -> Result<(), Error> {
    check_row(x.len())?;
    check_len(x.len(), y.len())?;
    op::hardmax_row(x, y);
    Ok(())
}

/// Gumbel-softmax (Jang et al. 2017; PyTorch `gumbel_softmax`) with caller-supplied uniform
/// noise, so the crate needs no RNG: `y = softmax((x + g)/τ)`, `g_i = −ln(−ln u_i)`. With
/// `hard = true` the output is the one-hot of its argmax (the forward value of PyTorch's
/// straight-through estimator).
///
/// Draw `u` from any uniform source on the open interval (0, 1); by the Gumbel-max trick,
/// `argmax(x + g)` is then an exact sample from `softmax(x)`. `hard = true` returns exactly that
/// one-hot (edge semantics as [`hardmax`]; `k` entries at `+inf` are sampled uniformly, the
/// limit of equal large logits).
///
/// The noise is added to the shifted logits `x − max(x)`, so the sample does not depend on where
/// the row sits (adding `g` to `x = 1e8` in f32 would round it to a multiple of 8). `g` is always
/// computed with this crate's own `ln` (<= 1 ULP), also when the backend is approximate: an `ln`
/// with an absolute error bound (MicroMath) gets `ln u` for `u` near 1 wrong by orders of
/// magnitude, which would bias the sample. The backend evaluates the softmax.
///
/// Accuracy: as [`softmax_with_temperature`] of the logits `(x − max) + g`, each perturbed by
/// about `u·(|x − max| + 3(1 + |g|) + |x − max + g|)` (`u` = 2⁻²⁴ in f32: the shift, `g`'s own
/// few-ULP error, `g/τ` for τ > 1, the sum). For τ > 1 the shift is taken as the other kernels
/// take it, so rows spanning more than the float range keep their finite quotients.
///
/// # Errors
///
/// [`Error::EmptyRow`]; [`Error::LengthMismatch`] unless `x`, `uniform`, `y` have equal lengths;
/// [`Error::InvalidTemperature`]; [`Error::InvalidNoise`] if some `u_i` is not in (0, 1).
///
/// # Examples
///
/// ```
/// use softmax_core::{gumbel_softmax, backend::Poly};
/// let mut y = [0.0f32; 3];
/// gumbel_softmax(Poly, &[1.0, 2.0, 3.0], &[0.5, 0.9, 0.1], 1.0, false, &mut y).unwrap();
/// assert!((y.iter().sum::<f32>() - 1.0).abs() < 1e-6);
/// gumbel_softmax(Poly, &[1.0, 2.0, 3.0], &[0.5, 0.9, 0.1], 1.0, true, &mut y).unwrap();
/// assert_eq!(y, [0.0, 1.0, 0.0]); // the noise favoured class 1
/// ```
pub fn gumbel_softmax<F: Float, B: Backend<F>>(
    _backend: B,
    x: &[F],
    uniform: &[F],
    temperature: F,
    hard: bool,
    y: &mut [F],
) -> Result<(), Error> {
    check_row(x.len())?;
    check_len(x.len(), uniform.len())?;
    check_len(x.len(), y.len())?;
    check_temperature(temperature)?;
    check_noise(uniform)?;
    with_scale!(temperature, |s| op::gumbel::<F, B, _, _>(
        Plain(x),
        uniform,
        hard,
        y,
        s
    ));
    Ok(())
}

/// The temperature τ at which `softmax(x/τ)` has entropy `target` (nats): the adaptive
/// temperature the seeds of this project pose as an open question, solved by bisection on the
/// monotone `H(τ)` (`dH/dτ = Var_p(x)/τ³ >= 0`).
///
/// `H` runs from `ln k` (τ → 0, `k` = number of entries tied at the max) to `ln n` (τ → ∞,
/// `n` = number of finite entries), so `target` must lie strictly inside that interval.
/// The bracket is found by doubling/halving τ, then bisected to the last bit; the returned τ is
/// the end of the final bracket whose entropy is closer to `target`.
///
/// Accuracy: `|H(τ) − target|` within the accuracy of [`entropy`] plus the change of `H` over
/// one ULP of τ.
///
/// # Errors
///
/// [`Error::EmptyRow`]; [`Error::EntropyOutOfRange`] if `target` is not strictly between
/// `ln k` and `ln n`, if the row holds NaN or `+inf` (then H does not depend on τ), or if the τ
/// that reaches `target` is not a positive finite float (e.g. a row spanning 6e38 needs
/// τ > f32::MAX to come close to uniform).
///
/// # Examples
///
/// ```
/// use softmax_core::{entropy, temperature_for_entropy, backend::Poly};
/// let x = [1.0f64, 2.0, 3.0];
/// let tau = temperature_for_entropy(Poly, &x, 0.5).unwrap();
/// assert!((tau - 0.548_514).abs() < 1e-6);
/// assert!((entropy(Poly, &x, tau).unwrap() - 0.5).abs() < 1e-12);
/// assert!(temperature_for_entropy(Poly, &x, 1.2).is_err()); // > ln 3
/// ```
pub fn temperature_for_entropy<F: Float, B: Backend<F>>(
    _backend: B,
    x: &[F],
    target: F,
) -> Result<F, Error> {
    check_row(x.len())?;
    simd::exec(
        #[inline(always)]
        || op::temperature_for_entropy::<F, B, _>(Plain(x), target),
    )
}
