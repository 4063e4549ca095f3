//! The few scalar constants attention needs that `core` cannot compute without `std`: the
//! default scale `1/√d` and the ALiBi slopes. Both are computed in f64 with plain arithmetic
//! (no backend, no libm), so they are the same on every target and for every backend.

use softmax_core::Float;

use crate::error::Error;

/// `a·b` as an exact pair `(p, e)`, `p + e = a·b` (Dekker's product with Veltkamp splitting; no
/// fused multiply-add needed).
fn two_prod(a: f64, b: f64) -> (f64, f64) {
    fn split(x: f64) -> (f64, f64) {
        let c = 134_217_729.0 * x; // 2^27 + 1
        let hi = c - (c - x);
        (hi, x - hi)
    }
    let p = a * b;
    let (ah, al) = split(a);
    let (bh, bl) = split(b);
    let e = ((ah * bh - p) + ah * bl + al * bh) + al * bl;
    (p, e)
}

/// `1/√d` in f64, within 1 ULP (for `d < 2^53`): Newton's iteration from a bit-level guess,
/// then one correction step with the exact residual `1 − d·r²`.
pub(crate) fn inv_sqrt_f64(d: usize) -> f64 {
    if d == 0 {
        return f64::INFINITY;
    }
    let x = d as f64;
    // x ∈ [2^e, 2^(e+1)); the guess 2^-⌈(e+1)/2⌉ lies within a factor of 2√2 below 1/√x, from
    // where the iteration rises monotonically (it diverges from above √3/√x).
    let e = (x.to_bits() >> 52) as i64 - 1023;
    let mut r = f64::from_bits(((1023 - (e + 2) / 2) as u64) << 52);
    for _ in 0..12 {
        r = r * (1.5 - 0.5 * x * r * r);
    }
    // r² exactly as rr + re, then d·(rr + re) exactly enough: 1 − d·r² to f64 precision.
    let (rr, re) = two_prod(r, r);
    let (p1, e1) = two_prod(x, rr);
    let resid = ((1.0 - p1) - e1) - x * re;
    r + r * (0.5 * resid)
}

/// `1/√d` rounded to `F` (correctly rounded in f32, checked for every `d <= 65536` by the
/// tests; within 1 ULP in f64).
pub(crate) fn inv_sqrt<F: Float>(d: usize) -> F {
    F::from_f64(inv_sqrt_f64(d))
}

/// `2^(−num/den)` in f64 for `den` a power of two: the integer part exactly, the fraction by a
/// Taylor series of `e^y`, `y = −frac·ln 2 ∈ (−0.7, 0]` (within a few ULP of f64).
fn exp2_neg_ratio(num: u64, den: u64) -> f64 {
    let k = num.checked_div(den).unwrap_or(0);
    let frac = num.checked_rem(den).unwrap_or(0) as f64 / den as f64;
    let y = -frac * core::f64::consts::LN_2;
    // Horner form of Σ y^n / n!, n <= 24.
    let mut e = 1.0;
    let mut n = 24u32;
    while n > 0 {
        e = 1.0 + e * y / f64::from(n);
        n -= 1;
    }
    // 2^-k exactly (k <= 8 for every slope; the clamp keeps the exponent in range anyway).
    let k = k.min(1000) as i64;
    e * f64::from_bits(((1023 - k) as u64) << 52)
}

/// The ALiBi slope of head `h` of `heads`, in f64 (the reference code of Press et al., 2022:
/// for a power of two `n`, `m_h = 2^(−8(h+1)/n)`; otherwise the `p = 2^⌊log2 n⌋` slopes of `p`
/// heads, then every other slope of `2p` heads: `2^(−4(2k+1)/p)`, k = 0, 1, …).
pub(crate) fn alibi_slope_f64(heads: usize, h: usize) -> f64 {
    if heads == 0 {
        return 0.0;
    }
    let p = 1usize << (usize::BITS - 1 - heads.leading_zeros());
    let (p, h) = (p as u64, h as u64);
    if h < p {
        exp2_neg_ratio(8 * (h + 1), p)
    } else {
        let k = h - p;
        exp2_neg_ratio(4 * (2 * k + 1), p)
    }
}

/// The ALiBi slope of head `h` (0-based) of `heads` query heads, rounded to `F`: the slopes of
/// the ALiBi paper's reference code (Press et al., 2022, `get_slopes`), including head counts
/// that are not powers of two. For `h >= heads` (or `heads = 0`) the result is unspecified but
/// finite.
///
/// Accuracy: in f32 equal to the reference code's float64 slopes rounded to float32 for every
/// head count up to 256 (`harness/golden/attention_alibi.json`); in f64 within 4 ULP of them.
///
/// # Examples
///
/// ```
/// use attention_core::alibi_slope;
/// assert_eq!(alibi_slope::<f32>(8, 0), 0.5);
/// assert_eq!(alibi_slope::<f32>(8, 7), 1.0 / 256.0);
/// // 6 heads: the 4 slopes of 4 heads, then every other slope of 8 heads.
/// assert_eq!(alibi_slope::<f64>(6, 4), 0.5);
/// assert_eq!(alibi_slope::<f64>(6, 5), 0.125);
/// ```
pub fn alibi_slope<F: Float>(heads: usize, h: usize) -> F {
    F::from_f64(alibi_slope_f64(heads, h))
}

/// The ALiBi slopes of every head: `out[h] = alibi_slope(out.len(), h)`.
///
/// # Errors
///
/// [`Error::ZeroDim`] if `out` is empty.
///
/// # Examples
///
/// ```
/// let mut m = [0.0f32; 4];
/// attention_core::alibi_slopes(&mut m)?;
/// assert_eq!(m, [0.25, 0.0625, 0.015625, 0.00390625]);
/// # Ok::<(), attention_core::Error>(())
/// ```
pub fn alibi_slopes<F: Float>(out: &mut [F]) -> Result<(), Error> {
    let n = out.len();
    if n == 0 {
        return Err(Error::ZeroDim { what: "heads" });
    }
    for (h, m) in out.iter_mut().enumerate() {
        *m = alibi_slope(n, h);
    }
    Ok(())
}

/// The default attention scale `1/√d`, rounded to `F` (correctly rounded in f32 — checked for
/// every `d <= 65536` — and within 1 ULP in f64); `+inf` for `d = 0`.
///
/// # Examples
///
/// ```
/// assert_eq!(attention_core::default_scale::<f32>(64), 0.125);
/// assert_eq!(attention_core::default_scale::<f64>(2), core::f64::consts::FRAC_1_SQRT_2);
/// ```
pub fn default_scale<F: Float>(d: usize) -> F {
    inv_sqrt(d)
}
