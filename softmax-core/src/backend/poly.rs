//! The crate's own exp and ln: Cody–Waite range reduction, minimax polynomials (coefficients
//! fitted for this crate by a Remez exchange in 60-digit arithmetic), and error-free
//! transformations in place of fused multiply-add, which stable `no_std` Rust cannot rely on.
//!
//! `exp` is branch-free (clamps are selects, the rounding to an integer is the 1.5·2^p magic-number
//! trick, the scaling is built from integer bits), so a loop of calls over fixed-width chunks
//! auto-vectorises. `ln` is called once per row, not per element, and branches on special
//! values.

#![forbid(unsafe_code)]

use super::Backend;
use crate::float::fast_two_sum;
use crate::soft::{Arith, Soft, SOFT};

/// The crate's own polynomial exp/ln: branch-free, auto-vectorising, accurate.
///
/// Accuracy (measured by `harness/tests/backend_accuracy.rs`; the f32 exp check is exhaustive when
/// `SOFTMAX_EXHAUSTIVE=1`, strided in CI):
///
/// | function | max error |
/// |---|---|
/// | `exp` f32 | <= 1 ULP from the correctly rounded result for every input whose result is normal (real-valued max 0.826 ULP, exhaustive); underflowing results are rounded once into the subnormal range |
/// | `exp_pow2` f32 (the hot loops' exp, `e^(x + tail)·2^s`) | <= 1 ULP for every `x` in [-105.3, 0] (real-valued max 0.942 ULP, exhaustive); with tails up to an ulp of `x`, max 0.921 ULP over 2·10⁶ random pairs |
/// | `exp` f64 | <= 1 ULP against a correctly rounded (mpmath) reference on the committed sample |
/// | `exp_pow2` f64 | <= 1 ULP against the same reference, scaled by 2^60 |
/// | `ln` f32 | <= 1 ULP over every positive float (real-valued max 0.840 ULP, exhaustive) |
/// | `ln` f64 | <= 1 ULP against a correctly rounded (mpmath) reference on the committed sample |
///
/// Method: `x = n·ln2 + r` with `ln2` split in two so `n·ln2_hi` and `x − n·ln2_hi` are exact
/// (f32 joins the two parts of `r` with one rounding, f64 keeps the rounding error by Fast2Sum), `e^r = 1 + r + r²·q(r)` with a degree-4 (f32) or
/// degree-10 (f64) minimax `q`, and the final `1 + r` is formed with its rounding error kept
/// (Fast2Sum), so the result is rounded essentially once. `2^n` is applied as two exact factors
/// so overflow goes to `+inf` and underflow rounds once into the subnormals.
///
/// # Examples
///
/// ```
/// use softmax_core::{softmax, backend::Poly};
/// let mut y = [0.0f32; 3];
/// softmax(Poly, &[1.0, 2.0, 3.0], &mut y).unwrap();
/// assert!((y[2] - 0.665_240_94).abs() < 1e-7);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Poly;

// ---------------------------------------------------------------------------------------------
// f32
// ---------------------------------------------------------------------------------------------

const LOG2E_F32: f32 = core::f32::consts::LOG2_E;
/// 1.5 · 2^23: adding it rounds to an integer (ties to even) and leaves that integer in the low
/// mantissa bits.
const MAGIC_F32: f32 = 12_582_912.0;
/// ln 2 with 15 significant bits (0x3f317200), so `n · LN2_HI_F32` is exact for |n| < 512.
pub(crate) const LN2_HI_F32: f32 = 0.693_145_75;
/// ln 2 − LN2_HI_F32, rounded.
pub(crate) const LN2_LO_F32: f32 = 1.428_606_8e-6;
/// Minimax q(r) for e^r ≈ 1 + r + r²·q(r) on |r| <= 0.3467; max relative error 4.3e-9.
const EXP_Q_F32: [f32; 5] = [
    0.499_999_97,
    0.166_665_06,
    0.041_667_093,
    0.008_370_29,
    0.001_389_340_6,
];
/// Below this e^x < half the smallest subnormal: the result is 0.
const EXP_LO_F32: f32 = -110.0;
/// Above this e^x overflows.
const EXP_HI_F32: f32 = 100.0;

#[inline(always)]
fn exp_f32(x: f32) -> f32 {
    // Clamp with comparisons that are false for NaN, so NaN flows through to the result.
    let x = if x < EXP_LO_F32 { EXP_LO_F32 } else { x };
    let x = if x > EXP_HI_F32 { EXP_HI_F32 } else { x };
    let kf = x * LOG2E_F32 + MAGIC_F32;
    let n = (kf.to_bits() as i32).wrapping_sub(MAGIC_F32.to_bits() as i32);
    let nf = kf - MAGIC_F32;
    let rh = x - nf * LN2_HI_F32; // exact
    let rl = -(nf * LN2_LO_F32);
    // One rounding joins the two parts (error <= 2^-26, 0.25 ULP at worst); keeping its error
    // term as well would cost two more adds per value for 0.08 ULP.
    let r = rh + rl;
    let q = EXP_Q_F32[0]
        + r * (EXP_Q_F32[1] + r * (EXP_Q_F32[2] + r * (EXP_Q_F32[3] + r * EXP_Q_F32[4])));
    let t = r * r * q;
    let u = 1.0 + r;
    let e1 = r - (u - 1.0); // Fast2Sum: |1| >= |r|
    let p = u + (t + e1);
    // 2^n as two exact factors: n in [-159, 145] after the clamp, each half in the normal range.
    let n1 = n >> 1;
    let n2 = n.wrapping_sub(n1);
    let s1 = f32::from_bits((n1.wrapping_add(127) as u32).wrapping_shl(23));
    let s2 = f32::from_bits((n2.wrapping_add(127) as u32).wrapping_shl(23));
    p * s1 * s2
}

/// `e^(x + tail)` for `x <= 0` (the shifted logits of every kernel): as [`exp_f32`] without the
/// overflow clamp, and with the scale built from one shift. The magic constant is offset by
/// 64 + 127, so the low bits of `kf` hold the biased exponent of `2^(n + 64)` (the 1.5·2^23 part
/// shifts out); `2^(n + 64)` is normal for every `n` in [-159, 0] and the constant factor
/// `2^-64` rounds once into the subnormals.
#[inline(always)]
fn exp_neg_f32(x: f32, tail: f32) -> f32 {
    const MAGIC_BIASED: f32 = MAGIC_F32 + 191.0;
    const TWO_M64: f32 = f32::from_bits((127 - 64) << 23);
    let low = x < EXP_LO_F32;
    let x = if low { EXP_LO_F32 } else { x };
    let tail = if low { 0.0 } else { tail };
    let kf = x * LOG2E_F32 + MAGIC_BIASED;
    let nf = kf - MAGIC_BIASED;
    let rh = x - nf * LN2_HI_F32;
    let rl = tail - nf * LN2_LO_F32;
    let r = rh + rl;
    let q = EXP_Q_F32[0]
        + r * (EXP_Q_F32[1] + r * (EXP_Q_F32[2] + r * (EXP_Q_F32[3] + r * EXP_Q_F32[4])));
    let t = r * r * q;
    let u = 1.0 + r;
    let e1 = r - (u - 1.0);
    let p = u + (t + e1);
    p * f32::from_bits(kf.to_bits().wrapping_shl(23)) * TWO_M64
}

/// `e^(x + tail) · 2^s` ([`Backend::exp_pow2`]): the reduction as in [`exp_f32`] with the tail
/// folded into its low part, the scale `2^(n+s)` built from the rounding constant's low bits in
/// one shift (every kept result is normal, so the multiply is exact), results below `2^-92` set
/// to 0 by a select (so `-inf`, whose tail is NaN, and the garbage of far-out arguments never
/// leak).
///
/// The final sum keeps the exact `r_hi` apart: `1 + (r_hi + ((r_lo + r²·a) + r⁴·c))`, with
/// `q = a + r²·c` in Estrin's form, rounds almost only once (max 0.943 ULP, exhaustive over every
/// f32 `x` in [-106, 212]; the plain `1 + (r + r²·q)` reaches 1.03 ULP), for one add more than
/// the plain form and two less than a full compensation, and a short dependency chain.
///
/// `T` is the arithmetic: `f32` (the target's own) or, on Arm cores without an FPU,
/// [`Soft`] (the Thumb add and multiply of `crate::soft`, same bits), where the exact steps are
/// also done in integer arithmetic ([`exp_pow2_f32_int`]).
#[inline(always)]
fn exp_pow2_f32<T: Arith>(x: f32, tail: f32, s: i32) -> f32 {
    /// `kf` for `n + s = -92`: everything below is set to 0. (A float comparison, false for
    /// NaN: testing `kf`'s bits instead would make the answer for a NaN depend on the sign bit
    /// the platform gives NaNs.)
    const KMIN: f32 = MAGIC_F32 + 127.0 - 92.0;
    let c = T::of;
    // The exponent bias rides in the magic constant: kf's low bits are n + s + 127.
    let mb = MAGIC_F32 + (s + 127) as f32;
    let kf = (c(x) * c(LOG2E_F32) + c(mb)).get();
    if T::SOFT {
        if let Some(e) = exp_pow2_f32_int::<T>(x, tail, kf, mb) {
            return e;
        }
    }
    let nf = c(kf) - c(mb);
    let rh = c(x) - nf * c(LN2_HI_F32); // exact
    let rl = c(tail) - nf * c(LN2_LO_F32);
    let p = exp_pow2_f32_poly(rh, rl).get();
    // kf's low 9 bits are n + s (mod 512); shifted into the exponent field they add 2^(n+s).
    // 2^(n+s) from kf's low bits; a multiply (not an integer add to p's exponent) so that a
    // NaN stays NaN whatever payload it carries.
    let e = (c(p) * c(f32::from_bits(kf.to_bits().wrapping_shl(23)))).get();
    if kf < KMIN {
        0.0
    } else {
        e
    }
}

/// `1 + (r_hi + ((r_lo + r²·a) + r⁴·c))` of [`exp_pow2_f32`], `r = r_hi + r_lo` rounded.
#[inline(always)]
fn exp_pow2_f32_poly<T: Arith>(rh: T, rl: T) -> T {
    let c = T::of;
    let r = rh + rl;
    let r2 = r * r;
    let r4 = r2 * r2;
    let a = c(EXP_Q_F32[0]) + r * c(EXP_Q_F32[1]);
    let q = (c(EXP_Q_F32[2]) + r * c(EXP_Q_F32[3])) + r2 * c(EXP_Q_F32[4]);
    c(1.0) + (rh + ((rl + r2 * a) + r4 * q))
}

/// [`exp_pow2_f32`] after `kf` on a core without an FPU, where each float operation is a call:
/// the steps that are exact — `n = kf − mb`, `n·LN2_HI`, the scaling by `2^(n+s)` — done in
/// integer arithmetic (the same values, so the same bits), and the zeros returned before the
/// polynomial. `None` where that does not apply (NaN, arguments far outside the domain): the
/// float steps then run as everywhere else.
#[inline(always)]
fn exp_pow2_f32_int<T: Arith>(x: f32, tail: f32, kf: f32, mb: f32) -> Option<f32> {
    const KMIN_BITS: u32 = (MAGIC_F32 + 127.0 - 92.0).to_bits();
    /// ln 2's 16 leading bits as an integer: `LN2_HI_F32 = 45426 · 2^-16`.
    const LN2_HI_INT: i32 = 45_426;
    let c = T::of;
    let kb = kf.to_bits();
    // kf < KMIN (false for a NaN of either sign): the term is 0.
    let below = if kb >> 31 != 0 {
        kb << 1 <= 0xff00_0000
    } else {
        kb < KMIN_BITS
    };
    if below {
        return Some(0.0);
    }
    // kf and mb both in [2^23, 2^24), where the spacing is 1: their difference is the bits'
    // (outside that binade — a scale s beyond ±2^22 — the float steps run).
    const BINADE: core::ops::Range<u32> = 0x4b00_0000..0x4b80_0000;
    if !BINADE.contains(&kb) || !BINADE.contains(&mb.to_bits()) {
        return None;
    }
    let n = kb.wrapping_sub(mb.to_bits()) as i32;
    if !(-256..=256).contains(&n) {
        return None;
    }
    let nf = n as f32;
    // n·LN2_HI is exact (|n·45426| < 2^24), so it is (n·45426)·2^-16.
    let nh = if n == 0 {
        0.0
    } else {
        f32::from_bits(((n * LN2_HI_INT) as f32).to_bits() - (16 << 23))
    };
    let p = exp_pow2_f32_poly(c(x) - c(nh), c(tail) - c(nf) * c(LN2_LO_F32)).get();
    // p·2^(n+s) by adding n + s to p's exponent, where the scale and the product are normal.
    let pb = p.to_bits();
    let ks = kb & 0x1ff; // the scale's biased exponent n + s + 127 (see exp_pow2_f32)
    let pe = (pb >> 23) & 0xff;
    let re = (pe + ks).wrapping_sub(127);
    if pe == 0 || pe == 0xff || !(1..=254).contains(&ks) || !(1..=254).contains(&re) {
        return Some((c(p) * c(f32::from_bits(kb << 23))).get());
    }
    Some(f32::from_bits(
        pb.wrapping_add(ks << 23).wrapping_sub(127 << 23),
    ))
}

/// [`exp_pow2_f32`] on `W` values, step by step across the chunk (each line of the scalar
/// version once for every value before the next line), so the values form independent chains in
/// the instruction stream. The same operations in the same order per value: the same bits.
#[inline(always)]
fn exp_pow2_f32_chunk<const W: usize>(x: &[f32; W], tail: &[f32; W], s: i32) -> [f32; W] {
    const KMIN: f32 = MAGIC_F32 + 127.0 - 92.0;
    let mb = MAGIC_F32 + (s + 127) as f32;
    let mut kf = [0.0f32; W];
    for (k, &x) in kf.iter_mut().zip(x) {
        *k = x * LOG2E_F32 + mb;
    }
    let mut rh = [0.0f32; W];
    let mut rl = [0.0f32; W];
    for (((rh, rl), (&x, &t)), &k) in rh
        .iter_mut()
        .zip(rl.iter_mut())
        .zip(x.iter().zip(tail))
        .zip(&kf)
    {
        let nf = k - mb;
        *rh = x - nf * LN2_HI_F32;
        *rl = t - nf * LN2_LO_F32;
    }
    let mut p = [0.0f32; W];
    for ((p, &rh), &rl) in p.iter_mut().zip(&rh).zip(&rl) {
        let r = rh + rl;
        let r2 = r * r;
        let r4 = r2 * r2;
        let a = EXP_Q_F32[0] + r * EXP_Q_F32[1];
        let c = (EXP_Q_F32[2] + r * EXP_Q_F32[3]) + r2 * EXP_Q_F32[4];
        *p = 1.0 + (rh + ((rl + r2 * a) + r4 * c));
    }
    let mut e = [0.0f32; W];
    for ((e, &p), &k) in e.iter_mut().zip(&p).zip(&kf) {
        let v = p * f32::from_bits(k.to_bits().wrapping_shl(23));
        *e = if k < KMIN { 0.0 } else { v };
    }
    e
}

pub(crate) const SQRT_HALF_BITS_F32: u32 = 0x3f35_04f3;
/// Minimax R(z) = z·(c0 + z·(c1 + z·c2)) for 2·atanh(s) = 2s + s·R(s²), |s| <= 0.1716;
/// relative error of the log 1.4e-9.
pub(crate) const LN_R_F32: [f32; 3] = [0.666_667_76, 0.399_760_84, 0.299_254_54];

fn ln_f32(x: f32) -> f32 {
    if x.is_nan() || x < 0.0 {
        return f32::NAN;
    }
    if x == 0.0 {
        return f32::NEG_INFINITY;
    }
    if x == f32::INFINITY {
        return x;
    }
    let mut ix = x.to_bits();
    let mut k: i32 = 0;
    if ix < 0x0080_0000 {
        // Subnormal: scale into the normal range.
        ix = (x * 33_554_432.0).to_bits(); // 2^25
        k = -25;
    }
    // Reduce to m in [sqrt(1/2), sqrt(2)).
    let iy = ix.wrapping_add(0x3f80_0000 - SQRT_HALF_BITS_F32);
    k += (iy >> 23) as i32 - 127;
    let m = f32::from_bits((iy & 0x007f_ffff).wrapping_add(SQRT_HALF_BITS_F32));
    let f = m - 1.0; // exact
    let s = f / (2.0 + f);
    let z = s * s;
    let r = z * (LN_R_F32[0] + z * (LN_R_F32[1] + z * LN_R_F32[2]));
    let hfsq = 0.5 * f * f;
    let dk = k as f32;
    dk * LN2_HI_F32 + (f - (hfsq - (s * (hfsq + r) + dk * LN2_LO_F32)))
}

impl Backend<f32> for Poly {
    const NAME: &'static str = "poly";
    #[inline(always)]
    fn exp(x: f32) -> f32 {
        exp_f32(x)
    }
    #[inline(always)]
    fn exp_shifted(hi: f32, lo: f32) -> f32 {
        exp_neg_f32(hi, lo)
    }
    #[inline(always)]
    fn exp_pow2(hi: f32, lo: f32, s: i32) -> f32 {
        if SOFT {
            exp_pow2_f32::<Soft>(hi, lo, s)
        } else {
            exp_pow2_f32::<f32>(hi, lo, s)
        }
    }
    #[inline(always)]
    fn exp_pow2_chunk<const W: usize>(hi: &[f32; W], lo: &[f32; W], s: i32) -> [f32; W] {
        if SOFT {
            core::array::from_fn(|i| exp_pow2_f32::<Soft>(hi[i], lo[i], s))
        } else {
            exp_pow2_f32_chunk(hi, lo, s)
        }
    }
    #[inline]
    fn ln(x: f32) -> f32 {
        ln_f32(x)
    }
}

// ---------------------------------------------------------------------------------------------
// f64
// ---------------------------------------------------------------------------------------------

const LOG2E_F64: f64 = core::f64::consts::LOG2_E;
/// 1.5 · 2^52.
const MAGIC_F64: f64 = 6_755_399_441_055_744.0;
/// ln 2 with 32 significant bits (0x3fe62e42fee00000): `n · LN2_HI_F64` exact for |n| < 2^21.
const LN2_HI_F64: f64 = 0.693_147_180_369_123_8;
/// ln 2 − LN2_HI_F64, rounded.
const LN2_LO_F64: f64 = 1.908_214_929_270_587_7e-10;
/// Minimax q(r), degree 10, |r| <= 0.3467; max relative error of e^r 1.0e-19.
const EXP_Q_F64: [f64; 11] = [
    0.5,
    0.166_666_666_666_666_82,
    0.041_666_666_666_666_6,
    0.008_333_333_333_316_725,
    0.001_388_888_888_891_114,
    0.000_198_412_698_983_239_64,
    2.480_158_727_738_394_5e-5,
    2.755_723_221_040_286e-6,
    2.755_731_116_770_666e-7,
    2.511_311_463_110_768_7e-8,
    2.090_395_225_357_419_2e-9,
];
const EXP_LO_F64: f64 = -760.0;

#[inline(always)]
fn exp_q_f64(r: f64) -> f64 {
    let c = &EXP_Q_F64;
    c[0] + r
        * (c[1]
            + r * (c[2]
                + r * (c[3]
                    + r * (c[4]
                        + r * (c[5]
                            + r * (c[6] + r * (c[7] + r * (c[8] + r * (c[9] + r * c[10])))))))))
}
const EXP_HI_F64: f64 = 720.0;

#[inline(always)]
fn exp_f64(x: f64) -> f64 {
    let x = if x < EXP_LO_F64 { EXP_LO_F64 } else { x };
    let x = if x > EXP_HI_F64 { EXP_HI_F64 } else { x };
    let kf = x * LOG2E_F64 + MAGIC_F64;
    let n = (kf.to_bits() as i64).wrapping_sub(MAGIC_F64.to_bits() as i64);
    let nf = kf - MAGIC_F64;
    let rh = x - nf * LN2_HI_F64;
    let rl = -(nf * LN2_LO_F64);
    let (r, rlo) = fast_two_sum(rh, rl);
    let t = r * r * exp_q_f64(r) + rlo;
    let u = 1.0 + r;
    let e1 = r - (u - 1.0);
    let p = u + (t + e1);
    let n1 = n >> 1;
    let n2 = n.wrapping_sub(n1);
    let s1 = f64::from_bits((n1.wrapping_add(1023) as u64).wrapping_shl(52));
    let s2 = f64::from_bits((n2.wrapping_add(1023) as u64).wrapping_shl(52));
    p * s1 * s2
}

/// `e^(x + tail)` for `x <= 0`, as [`exp_neg_f32`]: `2^(n + 600)` is normal for every `n` in
/// [-1097, 0] and `2^-600` rounds once into the subnormals.
#[inline(always)]
fn exp_neg_f64(x: f64, tail: f64) -> f64 {
    const MAGIC_BIASED: f64 = MAGIC_F64 + 1623.0;
    const TWO_M600: f64 = f64::from_bits((1023 - 600) << 52);
    let low = x < EXP_LO_F64;
    let x = if low { EXP_LO_F64 } else { x };
    let tail = if low { 0.0 } else { tail };
    let kf = x * LOG2E_F64 + MAGIC_BIASED;
    let nf = kf - MAGIC_BIASED;
    let rh = x - nf * LN2_HI_F64;
    let rl = tail - nf * LN2_LO_F64;
    let (r, rlo) = fast_two_sum(rh, rl);
    let t = r * r * exp_q_f64(r) + rlo;
    let u = 1.0 + r;
    let e1 = r - (u - 1.0);
    let p = u + (t + e1);
    p * f64::from_bits(kf.to_bits().wrapping_shl(52)) * TWO_M600
}

/// `e^(x + tail) · 2^s` in f64: as [`exp_pow2_f32`] with [`exp_f64`]'s compensated
/// evaluation (results below `2^-1016` set to 0).
#[inline(always)]
fn exp_pow2_f64(x: f64, tail: f64, s: i32) -> f64 {
    const KMIN: f64 = MAGIC_F64 + 1023.0 - 1016.0;
    let mb = MAGIC_F64 + (s + 1023) as f64;
    let kf = x * LOG2E_F64 + mb;
    let nf = kf - mb;
    let rh = x - nf * LN2_HI_F64;
    let rl = tail - nf * LN2_LO_F64;
    let (r, rlo) = fast_two_sum(rh, rl);
    let t = r * r * exp_q_f64(r) + rlo;
    let u = 1.0 + r;
    let e1 = r - (u - 1.0);
    let p = u + (t + e1);
    let e = p * f64::from_bits(kf.to_bits().wrapping_shl(52));
    if kf < KMIN {
        0.0
    } else {
        e
    }
}

const SQRT_HALF_HI_BITS_F64: u64 = 0x3fe6_a09e_667f_3bcd;
/// Minimax R(z) = z·P(z), P of degree 6, |s| <= 0.1716; relative error of the log 2.3e-18.
const LN_R_F64: [f64; 7] = [
    0.666_666_666_666_671,
    0.399_999_999_995_201_14,
    0.285_714_287_292_042_3,
    0.222_221_991_003_786_2,
    0.181_835_709_984_445_93,
    0.153_131_792_773_929_16,
    0.148_103_626_398_194_22,
];

fn ln_f64(x: f64) -> f64 {
    if x.is_nan() || x < 0.0 {
        return f64::NAN;
    }
    if x == 0.0 {
        return f64::NEG_INFINITY;
    }
    if x == f64::INFINITY {
        return x;
    }
    let mut ix = x.to_bits();
    let mut k: i64 = 0;
    if ix < 0x0010_0000_0000_0000 {
        ix = (x * 18_014_398_509_481_984.0).to_bits(); // 2^54
        k = -54;
    }
    let iy = ix.wrapping_add(0x3ff0_0000_0000_0000 - SQRT_HALF_HI_BITS_F64);
    k += (iy >> 52) as i64 - 1023;
    let m = f64::from_bits((iy & 0x000f_ffff_ffff_ffff).wrapping_add(SQRT_HALF_HI_BITS_F64));
    let f = m - 1.0;
    let s = f / (2.0 + f);
    let z = s * s;
    let c = &LN_R_F64;
    let r = z * (c[0] + z * (c[1] + z * (c[2] + z * (c[3] + z * (c[4] + z * (c[5] + z * c[6]))))));
    let hfsq = 0.5 * f * f;
    let dk = k as f64;
    dk * LN2_HI_F64 + (f - (hfsq - (s * (hfsq + r) + dk * LN2_LO_F64)))
}

impl Backend<f64> for Poly {
    const NAME: &'static str = "poly";
    #[inline(always)]
    fn exp(x: f64) -> f64 {
        exp_f64(x)
    }
    #[inline(always)]
    fn exp_shifted(hi: f64, lo: f64) -> f64 {
        exp_neg_f64(hi, lo)
    }
    #[inline(always)]
    fn exp_pow2(hi: f64, lo: f64, s: i32) -> f64 {
        exp_pow2_f64(hi, lo, s)
    }
    #[inline]
    fn ln(x: f64) -> f64 {
        ln_f64(x)
    }
}
