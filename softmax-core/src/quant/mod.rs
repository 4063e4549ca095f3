//! Quantized softmax, bit for bit TensorFlow Lite Micro's reference kernels (and so CMSIS-NN's
//! `arm_softmax_s8`, `arm_softmax_s8_s16`): int8 → int8, int8 → int16 and int16 → int16, with
//! TFLM's Prepare step. Integer arithmetic only in the kernels; no allocation, no panics.
//!
//! # Use it as in TFLM: Prepare once, then Eval per inference
//!
//! ```
//! use softmax_core::quant::{softmax_s8, S8Params};
//! // Prepare: from the input tensor's scale and the op's beta (both float32 in the model).
//! let params = S8Params::prepare(1.0 / 255.0, 1.0)?;
//! assert_eq!((params.input_multiplier(), params.input_left_shift(), params.diff_min()),
//!            (1_077_952_640, 19, -3968)); // TFLM's and CMSIS-NN's values
//! // Eval: two rows of five logits; one i32 of scratch per value of a row.
//! let x: [i8; 10] = [101, 49, 6, -34, -75, -79, -38, 120, -55, 115];
//! let mut scratch = [0i32; 5];
//! let mut y = [0i8; 10];
//! softmax_s8(&params, &x, 5, &mut scratch, &mut y)?;
//! // Output scale 1/256, zero point −128: p = (y + 128) / 256.
//! assert_eq!(y, [-57, -70, -79, -86, -92, -94, -88, -54, -91, -56]); // CMSIS-NN's reference
//! # Ok::<(), softmax_core::Error>(())
//! ```
//!
//! | kernel | input | output | TFLM / CMSIS-NN |
//! |---|---|---|---|
//! | [`softmax_s8`] | int8, any zero point | int8, zero point −128, scale 1/256 | `reference_ops::Softmax<int8_t, int8_t>` / `arm_softmax_s8` |
//! | [`softmax_s8_s16`] | int8, any zero point | int16, zero point −32768, scale 1/65536 | `reference_ops::Softmax<int8_t, int16_t>` / `arm_softmax_s8_s16` |
//! | [`softmax_s16`] | int16, zero point 0 | int16, zero point 0, scale 1/32768 | `reference_ops::SoftmaxInt16` / `arm_softmax_s16` (see below) |
//!
//! The input zero point never enters: the kernels work on `x − max(row)`. Rows are the last axis:
//! a tensor of shape `[.., n]` is a slice of `len/n` rows of `n`.
//!
//! # Reading the parameters out of a `.tflite` model
//!
//! The SOFTMAX operator's `builtin_options` is a `SoftmaxOptions` table whose one field is
//! `beta` (float32, default 1.0). The input tensor's `quantization` table holds `scale[0]` (float32)
//! and `zero_point[0]`; pass `scale[0]` and `beta` to [`S8Params::prepare`] or
//! [`S16Params::prepare`] as they are stored — as `f32`, not rounded through a decimal string.
//! The output tensor's quantization must be the fixed one of the table above (TFLM's Prepare
//! checks it; so does the TFLite converter). If instead you have CMSIS-NN's three integers
//! (`mult`, `shift`, `diff_min` from a generated header, or from an Ethos-U/Vela log), use
//! [`S8Params::from_raw`] / [`S16Params::from_raw`].
//!
//! # Semantics, exactly
//!
//! * int8 input: `input_multiplier`, `input_left_shift` from `PreprocessSoftmaxScaling(β, s, 5)`
//!   — [`quantize_multiplier`] of `min(β·s·2²⁶, 2³¹ − 1)` computed in f64 — and
//!   `diff_min = −⌊31·2²⁶ / 2^input_left_shift⌋` (`CalculateInputRadius(5, shift, 31)`). Per
//!   value with `d = x − max ≥ diff_min`: `e = exp_on_negative_values(SRDHM(d·2^shift,
//!   multiplier))` in Q0.31 (Q5.26 argument), summed in Q12.19; the sum's reciprocal by
//!   `GetReciprocal`; the output `RoundingDivideByPOT(SRDHM(reciprocal, e), exponent) + zero
//!   point`, clamped. Values below `diff_min` give the output type's minimum. The double-rounding
//!   arithmetic (`TFLITE_SINGLE_ROUNDING` undefined, TFLM's default) — see [`fixed`].
//! * int16 input: the multiplier from [`quantize_multiplier`]`(s·β / (10/65535))` in f64; per
//!   value `exp` from [`EXP_LUT`] at `clamp(MultiplyByQuantizedMultiplier(d) + 32767)`, the
//!   Q16.15 sum's reciprocal from [`ONE_OVER_ONE_PLUS_X_LUT`] after normalisation, the product
//!   rounded and clamped to [0, 32767].
//!
//! # Where TFLM has no answer: errors
//!
//! [`Error::InvalidQuantization`] from Prepare: a scale or β that is not a positive finite
//! number (the conformance protocol's domain; TFLM would turn β = 0 into a uniform output);
//! int8 input with `β·s·2²⁶ <= 1` (TFLM's `QuantizeMultiplierGreaterThanOne` aborts); int16
//! input whose left shift would be 16 or more (`s·β` of 5.00008 and up). From that shift on,
//! TFLM's int32 `diff · 2^shift` overflows for every row that spans more than `2^(31 − shift)`
//! input steps, so whether a row has an answer would depend on its contents; this crate (and
//! `harness conform`, as `shared/CONFORMANCE.md` specifies) refuses the parameters instead.
//! From `from_raw`: values TFLM's Prepare cannot produce and that would overflow or change the
//! kernel's meaning (int8: a multiplier that is not positive; shifts out of range).
//! [`Error::QuantizedSumOverflow`] from a kernel: a row whose sum of exps does not
//! fit the int32 accumulator (int8 input: Q12.19, possible only with rows of 4096 values or more;
//! int16: Q16.15, 65549 or more), or — int8 output only — whose Q12.19 sum reaches 2²⁸, about
//! 512 values at the row's maximum, where TFLM's reference aborts (`TFLITE_CHECK(exponent <=
//! 31)`). On an error the rows before the failing one are written and the rest of `out` is
//! unspecified.
//!
//! # Each exp once
//!
//! TFLM's reference (and CMSIS-NN's `arm_nn_softmax_common_s8`) evaluates every
//! `exp_on_negative_values` twice: once for the sum, once for the output (tflite-micro#3055). The
//! int8-input kernels here evaluate it once and keep the Q0.31 value in a caller-provided scratch
//! of one `i32` per value of a row — the same bits (the second use reads what the first computed),
//! about half the instructions per value (the cost table in README.md measures both on a
//! Cortex-M4F and M0), and `4·n` bytes of RAM, which the caller owns (TFLM's idiom: a scratch
//! buffer from the arena). The int16 kernel, like TFLM's, keeps its exps in `out`.
//!
//! # CMSIS-NN's `arm_softmax_s16`
//!
//! It omits two of TFLM's clamps: the reciprocal's table argument and the output are not clamped,
//! so a one-value int16 row gives −32768 there (the wrapped 32768) and 32767 in TFLM. This crate
//! follows TFLM.
//!
//! # Accuracy
//!
//! These kernels define their answer (TFLM's bits), checked by `harness/tests/quant.rs` against
//! CMSIS-NN's committed test vectors and against LiteRT's reference interpreter on random models.
//! Against the exact softmax of the dequantized input the int8 → int8 output is within about one
//! quantum (1/256) plus the input's quantization; `harness demo` shows the comparison for a
//! classifier head.

#![forbid(unsafe_code)]

pub mod fixed;
mod lut;

pub use lut::{lut_lookup, EXP_LUT, ONE_OVER_ONE_PLUS_X_LUT};

use crate::error::{check_len, check_rows, Error};
use crate::simd;
use fixed::{
    exp_on_negative_values_q5_26, get_reciprocal, multiply_by_quantized_multiplier,
    rounding_divide_by_pot,
};

/// TFLM's `QuantizeMultiplier(real)` (float version): `real ≈ multiplier · 2^(shift − 31)` with
/// `multiplier` in `[2³⁰, 2³¹)` (or its negation), from `frexp` and a rounding of the fraction ·2³¹
/// half away from zero in f64; a fraction that rounds up to 2³¹ is halved (shift + 1), and a shift
/// below −31 gives `(0, 0)`. Returns `(multiplier, shift)`; `(0, 0)` for `real = 0`.
///
/// # Errors
///
/// [`Error::InvalidQuantization`] if `real` is not finite.
///
/// # Examples
///
/// ```
/// use softmax_core::quant::quantize_multiplier;
/// assert_eq!(quantize_multiplier(0.5)?, (1 << 30, 0));
/// assert_eq!(quantize_multiplier(3.0)?, (3 << 29, 2));
/// assert_eq!(quantize_multiplier(1e-12)?, (0, 0)); // below 2⁻³²: flushed
/// # Ok::<(), softmax_core::Error>(())
/// ```
pub fn quantize_multiplier(real: f64) -> Result<(i32, i32), Error> {
    if !real.is_finite() {
        return Err(Error::InvalidQuantization);
    }
    if real == 0.0 {
        return Ok((0, 0));
    }
    let (q, mut shift) = frexp(real.abs());
    // |q| ∈ [1/2, 1): |q|·2³¹ has an ulp of 2⁻²², so adding 1/2 is exact and `as` truncates:
    // TfLiteRound (half away from zero) of the magnitude, then the sign.
    let magnitude = (q * 2_147_483_648.0 + 0.5) as i64;
    let mut q_fixed = if real < 0.0 { -magnitude } else { magnitude };
    // Only +2³¹ is halved (TFLM compares the signed value): −2³¹ is i32::MIN and stays.
    if q_fixed == 1 << 31 {
        q_fixed /= 2;
        shift += 1;
    }
    if shift < -31 {
        return Ok((0, 0));
    }
    Ok((q_fixed as i32, shift))
}

/// `frexp` for finite `x > 0`: `(q, e)` with `x = q·2^e`, `q ∈ [1/2, 1)`.
fn frexp(x: f64) -> (f64, i32) {
    let bits = x.to_bits();
    let biased = ((bits >> 52) & 0x7ff) as i32;
    if biased == 0 {
        // Subnormal: scale into the normal range first (exact).
        let (q, e) = frexp_normal(x * 18_446_744_073_709_551_616.0);
        return (q, e - 64);
    }
    frexp_normal(x)
}

fn frexp_normal(x: f64) -> (f64, i32) {
    let bits = x.to_bits();
    let biased = ((bits >> 52) & 0x7ff) as i32;
    let q = f64::from_bits((bits & !(0x7ff << 52)) | (1022 << 52));
    (q, biased - 1022)
}

/// A positive finite f32, or [`Error::InvalidQuantization`].
fn positive(v: f32) -> Result<f64, Error> {
    if v > 0.0 && v.is_finite() {
        Ok(v as f64)
    } else {
        Err(Error::InvalidQuantization)
    }
}

/// The parameters of the int8-input kernels ([`softmax_s8`], [`softmax_s8_s16`]): TFLM's
/// `SoftmaxParams` fields `input_multiplier`, `input_left_shift`, `diff_min`.
///
/// # Examples
///
/// ```
/// use softmax_core::quant::S8Params;
/// let p = S8Params::prepare(0.1, 1.0)?;
/// assert_eq!(p, S8Params::from_raw(p.input_multiplier(), p.input_left_shift(), p.diff_min())?);
/// # Ok::<(), softmax_core::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct S8Params {
    multiplier: i32,
    left_shift: i32,
    diff_min: i32,
}

impl S8Params {
    /// TFLM's Prepare for int8 input: `PreprocessSoftmaxScaling(beta, input_scale, 5)` and
    /// `diff_min = −CalculateInputRadius(5, input_left_shift, 31)`, in f64 as TFLM computes them.
    /// `input_scale` and `beta` are the model's float32 values.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidQuantization`] if either is not positive and finite, or if
    /// `β·s·2²⁶ <= 1` (TFLM aborts).
    ///
    /// # Examples
    ///
    /// ```
    /// use softmax_core::{quant::S8Params, Error};
    /// let p = S8Params::prepare(1.0 / 255.0, 1.0)?;
    /// assert_eq!((p.input_multiplier(), p.input_left_shift(), p.diff_min()), (1_077_952_640, 19, -3968));
    /// assert_eq!(S8Params::prepare(1e-9, 1.0), Err(Error::InvalidQuantization));
    /// # Ok::<(), softmax_core::Error>(())
    /// ```
    pub fn prepare(input_scale: f32, beta: f32) -> Result<Self, Error> {
        let (s, b) = (positive(input_scale)?, positive(beta)?);
        const SCALED_DIFF_INTEGER_BITS: i32 = 5;
        let real = (b * s * (1u32 << (31 - SCALED_DIFF_INTEGER_BITS)) as f64).min(2_147_483_647.0);
        if real <= 1.0 {
            return Err(Error::InvalidQuantization);
        }
        let (multiplier, left_shift) = quantize_multiplier(real)?;
        // CalculateInputRadius: ⌊(2⁵ − 1)·2²⁶ / 2^shift⌋, exact in integers (shift ∈ 1..=31).
        let radius = ((31i64 << 26) >> (left_shift & 63)) as i32;
        Self::from_raw(multiplier, left_shift, -radius)
    }

    /// The parameters as CMSIS-NN's `arm_softmax_s8(…, mult, shift, diff_min, …)` takes them.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidQuantization`] unless `multiplier > 0`, `0 <= left_shift <= 31`,
    /// `diff_min <= 0`, and every difference the kernel scales, `d·2^left_shift` for
    /// `max(diff_min, −255) <= d <= 0`, fits an i32 (as with every `diff_min` TFLM's Prepare
    /// produces; a `diff_min` below −255 only means no cut-off for int8 input).
    ///
    /// # Examples
    ///
    /// ```
    /// use softmax_core::{quant::S8Params, Error};
    /// assert!(S8Params::from_raw(1_077_952_640, 19, -3968).is_ok());
    /// assert!(S8Params::from_raw(1 << 30, 20, -5000).is_ok()); // no cut-off
    /// // At shift 24 only differences down to −128 fit an i32 (−128·2²⁴ = −2³¹):
    /// assert!(S8Params::from_raw(1 << 30, 24, -128).is_ok());
    /// assert_eq!(S8Params::from_raw(1 << 30, 24, -129), Err(Error::InvalidQuantization));
    /// ```
    pub fn from_raw(
        input_multiplier: i32,
        input_left_shift: i32,
        diff_min: i32,
    ) -> Result<Self, Error> {
        let deepest = i64::from(diff_min).max(-255).unsigned_abs();
        let fits = diff_min <= 0
            && (0..=31).contains(&input_left_shift)
            && (deepest << input_left_shift) <= 1 << 31;
        if input_multiplier > 0 && fits {
            Ok(S8Params {
                multiplier: input_multiplier,
                left_shift: input_left_shift,
                diff_min,
            })
        } else {
            Err(Error::InvalidQuantization)
        }
    }

    /// TFLM's `input_multiplier` (Q0.31, in `[2³⁰, 2³¹)` from Prepare).
    ///
    /// # Examples
    ///
    /// ```
    /// # use softmax_core::quant::S8Params;
    /// assert_eq!(S8Params::prepare(1.0 / 256.0, 1.0)?.input_multiplier(), 1 << 30);
    /// # Ok::<(), softmax_core::Error>(())
    /// ```
    pub fn input_multiplier(&self) -> i32 {
        self.multiplier
    }

    /// TFLM's `input_left_shift` (`0..=31`).
    ///
    /// # Examples
    ///
    /// ```
    /// # use softmax_core::quant::S8Params;
    /// assert_eq!(S8Params::prepare(1.0 / 256.0, 1.0)?.input_left_shift(), 19);
    /// # Ok::<(), softmax_core::Error>(())
    /// ```
    pub fn input_left_shift(&self) -> i32 {
        self.left_shift
    }

    /// TFLM's `diff_min`: differences `x − max` below it contribute nothing and output the type's
    /// minimum.
    ///
    /// # Examples
    ///
    /// ```
    /// # use softmax_core::quant::S8Params;
    /// assert_eq!(S8Params::prepare(1.0 / 256.0, 1.0)?.diff_min(), -3968);
    /// # Ok::<(), softmax_core::Error>(())
    /// ```
    pub fn diff_min(&self) -> i32 {
        self.diff_min
    }

    /// `exp(β·s·(x − max))` in Q0.31 for `d = x − max >= diff_min`: TFLM's
    /// `MultiplyByQuantizedMultiplierGreaterThanOne(d, multiplier, shift)` (`d·2^shift` fits an
    /// i32 by `from_raw`'s check, and `multiplier > 0` cannot saturate), then the exp.
    #[inline]
    fn exp(&self, d: i32) -> i32 {
        exp_on_negative_values_q5_26(fixed::mul_unsaturated(
            d.wrapping_shl(self.left_shift as u32),
            self.multiplier,
        ))
    }
}

/// The parameters of [`softmax_s16`]: TFLM's `input_multiplier` and (signed) `input_left_shift`,
/// and the two lookup tables — TFLM's ([`EXP_LUT`], [`ONE_OVER_ONE_PLUS_X_LUT`]) unless replaced
/// with [`S16Params::with_tables`].
///
/// # Examples
///
/// ```
/// use softmax_core::quant::S16Params;
/// let p = S16Params::prepare(10.0 / 32768.0, 1.0)?;
/// assert_eq!((p.input_multiplier(), p.input_left_shift()), (2_147_450_880, 1));
/// # Ok::<(), softmax_core::Error>(())
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct S16Params<'t> {
    multiplier: i32,
    left_shift: i32,
    exp_lut: &'t [i16; 513],
    one_over_one_plus_x_lut: &'t [i16; 513],
}

impl S16Params<'static> {
    /// TFLM's Prepare for int16 input: [`quantize_multiplier`]`(s·β / (10/65535))` in f64, so that
    /// a difference of `−10/(s·β)` input steps maps to the exp table's end (`−10`).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidQuantization`] if `input_scale` or `beta` is not positive and finite, or if
    /// the left shift would be 16 or more (`s·β >= 5.00008`; see the module docs).
    ///
    /// # Examples
    ///
    /// ```
    /// use softmax_core::{quant::S16Params, Error};
    /// assert!(S16Params::prepare(1.0 / 4096.0, 1.0).is_ok());
    /// assert_eq!(S16Params::prepare(8.0, 1.0), Err(Error::InvalidQuantization));
    /// # Ok::<(), softmax_core::Error>(())
    /// ```
    pub fn prepare(input_scale: f32, beta: f32) -> Result<Self, Error> {
        let real = positive(input_scale)? * positive(beta)? / (10.0 / 65535.0);
        let (multiplier, left_shift) = quantize_multiplier(real)?;
        Self::from_raw(multiplier, left_shift)
    }

    /// The parameters as CMSIS-NN's `arm_softmax_s16(…, mult, shift, …)` takes them, with TFLM's
    /// tables.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidQuantization`] unless `multiplier >= 0` and `−31 <= left_shift <= 15`.
    ///
    /// # Examples
    ///
    /// ```
    /// use softmax_core::{quant::S16Params, Error};
    /// assert!(S16Params::from_raw(1_718_013_132, -2).is_ok());
    /// assert_eq!(S16Params::from_raw(1 << 30, 16), Err(Error::InvalidQuantization));
    /// ```
    pub fn from_raw(input_multiplier: i32, input_left_shift: i32) -> Result<Self, Error> {
        if input_multiplier >= 0 && (-31..=15).contains(&input_left_shift) {
            Ok(S16Params {
                multiplier: input_multiplier,
                left_shift: input_left_shift,
                exp_lut: &EXP_LUT,
                one_over_one_plus_x_lut: &ONE_OVER_ONE_PLUS_X_LUT,
            })
        } else {
            Err(Error::InvalidQuantization)
        }
    }
}

impl<'t> S16Params<'t> {
    /// The same multiplier with other tables: for example TensorFlow Lite's (not Micro's), which
    /// builds the reciprocal table in f64, or tables kept in a particular memory section.
    ///
    /// # Examples
    ///
    /// ```
    /// use softmax_core::quant::{S16Params, EXP_LUT, ONE_OVER_ONE_PLUS_X_LUT};
    /// let mut recip = ONE_OVER_ONE_PLUS_X_LUT;
    /// recip[160] -= 1;
    /// recip[294] -= 1; // TensorFlow Lite's f64-built table
    /// let p = S16Params::prepare(1.0 / 4096.0, 1.0)?.with_tables(&EXP_LUT, &recip);
    /// assert_eq!(p.one_over_one_plus_x_lut()[160], ONE_OVER_ONE_PLUS_X_LUT[160] - 1);
    /// # Ok::<(), softmax_core::Error>(())
    /// ```
    pub fn with_tables<'u>(
        self,
        exp_lut: &'u [i16; 513],
        one_over_one_plus_x_lut: &'u [i16; 513],
    ) -> S16Params<'u> {
        S16Params {
            multiplier: self.multiplier,
            left_shift: self.left_shift,
            exp_lut,
            one_over_one_plus_x_lut,
        }
    }

    /// TFLM's `input_multiplier` (0 when `s·β` is below about 2⁻³² ·10/65535).
    ///
    /// # Examples
    ///
    /// ```
    /// # use softmax_core::quant::S16Params;
    /// assert_eq!(S16Params::prepare(1e-30, 1.0)?.input_multiplier(), 0);
    /// # Ok::<(), softmax_core::Error>(())
    /// ```
    pub fn input_multiplier(&self) -> i32 {
        self.multiplier
    }

    /// TFLM's `input_left_shift`, signed (negative: a right shift).
    ///
    /// # Examples
    ///
    /// ```
    /// # use softmax_core::quant::S16Params;
    /// assert_eq!(S16Params::prepare(1.0 / 32768.0, 1.0)?.input_left_shift(), -2);
    /// # Ok::<(), softmax_core::Error>(())
    /// ```
    pub fn input_left_shift(&self) -> i32 {
        self.left_shift
    }

    /// The exp table in use.
    ///
    /// # Examples
    ///
    /// ```
    /// # use softmax_core::quant::{S16Params, EXP_LUT};
    /// assert_eq!(S16Params::from_raw(1 << 30, 0)?.exp_lut(), &EXP_LUT);
    /// # Ok::<(), softmax_core::Error>(())
    /// ```
    pub fn exp_lut(&self) -> &'t [i16; 513] {
        self.exp_lut
    }

    /// The reciprocal table in use.
    ///
    /// # Examples
    ///
    /// ```
    /// # use softmax_core::quant::{S16Params, ONE_OVER_ONE_PLUS_X_LUT};
    /// assert_eq!(S16Params::from_raw(1 << 30, 0)?.one_over_one_plus_x_lut(), &ONE_OVER_ONE_PLUS_X_LUT);
    /// # Ok::<(), softmax_core::Error>(())
    /// ```
    pub fn one_over_one_plus_x_lut(&self) -> &'t [i16; 513] {
        self.one_over_one_plus_x_lut
    }
}

impl core::fmt::Debug for S16Params<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let tflm =
            *self.exp_lut == EXP_LUT && *self.one_over_one_plus_x_lut == ONE_OVER_ONE_PLUS_X_LUT;
        f.debug_struct("S16Params")
            .field("input_multiplier", &self.multiplier)
            .field("input_left_shift", &self.left_shift)
            .field("tables", &if tflm { "TFLM's" } else { "custom" })
            .finish()
    }
}

/// An integer output type of the int8-input kernels.
trait QuantOut: Copy {
    const BITS: i32;
    const MIN: i32;
    const MAX: i32;
    fn from_clamped(v: i32) -> Self;
}

impl QuantOut for i8 {
    const BITS: i32 = 8;
    const MIN: i32 = i8::MIN as i32;
    const MAX: i32 = i8::MAX as i32;
    fn from_clamped(v: i32) -> i8 {
        v as i8
    }
}

impl QuantOut for i16 {
    const BITS: i32 = 16;
    const MIN: i32 = i16::MIN as i32;
    const MAX: i32 = i16::MAX as i32;
    fn from_clamped(v: i32) -> i16 {
        v as i16
    }
}

/// The shared boundary checks: `n` divides `x.len()`, `out` as long as `x`; the row count.
fn check_batch(x_len: usize, n: usize, out_len: usize) -> Result<usize, Error> {
    let rows = check_rows(x_len, n)?;
    check_len(x_len, out_len)?;
    Ok(rows)
}

/// `reference_ops::Softmax<int8_t, O>` over rows of `n`, each exp evaluated once into `scratch`.
fn softmax_s8_rows<O: QuantOut>(
    params: &S8Params,
    x: &[i8],
    n: usize,
    scratch: &mut [i32],
    out: &mut [O],
) -> Result<(), Error> {
    check_batch(x.len(), n, out.len())?;
    let found = scratch.len();
    let scratch = scratch
        .get_mut(..n)
        .ok_or(Error::LengthMismatch { expected: n, found })?;
    // Integer arithmetic only: the same results at every level, so the loops run at the
    // dispatched one like the float kernels (the SSE2 baseline took 1.2 times as long on a Zen 4).
    simd::exec(
        #[inline(always)]
        || softmax_s8_loop(params, x, n, scratch, out),
    )
}

/// The rows of [`softmax_s8_rows`], after its checks.
#[inline(always)]
fn softmax_s8_loop<O: QuantOut>(
    params: &S8Params,
    x: &[i8],
    n: usize,
    scratch: &mut [i32],
    out: &mut [O],
) -> Result<(), Error> {
    for (row, out) in x.chunks_exact(n).zip(out.chunks_exact_mut(n)) {
        let max = row.iter().fold(i8::MIN, |m, &v| m.max(v)) as i32;
        // Q12.19 sum of the exps; an overflow is an error, not a wrapped sum.
        let mut sum: i32 = 0;
        for (&v, e) in row.iter().zip(scratch.iter_mut()) {
            let d = v as i32 - max;
            if d >= params.diff_min {
                *e = params.exp(d);
                // Rescale<12> from Q0.31 to Q12.19.
                sum = sum
                    .checked_add(rounding_divide_by_pot(*e, 12))
                    .ok_or(Error::QuantizedSumOverflow)?;
            }
        }
        let (reciprocal, num_bits_over_unit) = get_reciprocal(sum, 12);
        let exponent = num_bits_over_unit + 31 - O::BITS;
        if !(0..=31).contains(&exponent) {
            return Err(Error::QuantizedSumOverflow);
        }
        for ((&v, &e), y) in row.iter().zip(scratch.iter()).zip(out.iter_mut()) {
            let d = v as i32 - max;
            *y = O::from_clamped(if d >= params.diff_min {
                // e >= 0: the product cannot saturate.
                let unsat =
                    rounding_divide_by_pot(fixed::mul_unsaturated(reciprocal, e), exponent as u32);
                unsat.wrapping_add(O::MIN).clamp(O::MIN, O::MAX)
            } else {
                O::MIN
            });
        }
    }
    Ok(())
}

/// Softmax of int8 rows into int8 probabilities (zero point −128, scale 1/256): TFLM's
/// `reference_ops::Softmax<int8_t, int8_t>`, CMSIS-NN's `arm_softmax_s8`, bit for bit.
///
/// `x` holds rows of `n` values (the last axis); `out` has `x`'s length; `scratch` holds at least
/// `n` values (one Q0.31 exp per value of a row, so that each is computed once).
///
/// # Errors
///
/// [`Error::EmptyRow`] (`n = 0`), [`Error::RaggedBatch`], [`Error::LengthMismatch`] (`out`, or
/// `scratch` shorter than `n`); [`Error::QuantizedSumOverflow`] for a row TFLM has no answer for
/// (its Q12.19 sum reaches 2²⁸: about 512 values at the row's maximum).
///
/// # Examples
///
/// ```
/// use softmax_core::quant::{softmax_s8, S8Params};
/// let params = S8Params::prepare(0.05, 1.0)?;
/// let logits: [i8; 4] = [40, 20, 0, -128];
/// let (mut scratch, mut y) = ([0i32; 4], [0i8; 4]);
/// softmax_s8(&params, &logits, 4, &mut scratch, &mut y)?;
/// let p: Vec<f32> = y.iter().map(|&q| (q as f32 + 128.0) / 256.0).collect();
/// // softmax([2, 1, 0, −8.4]) = [0.665, 0.245, 0.090, 0.00002]
/// assert!((p[0] - 0.665).abs() <= 1.0 / 256.0 && (p[1] - 0.245).abs() <= 1.0 / 256.0);
/// # Ok::<(), softmax_core::Error>(())
/// ```
pub fn softmax_s8(
    params: &S8Params,
    x: &[i8],
    n: usize,
    scratch: &mut [i32],
    out: &mut [i8],
) -> Result<(), Error> {
    softmax_s8_rows(params, x, n, scratch, out)
}

/// Softmax of int8 rows into int16 probabilities (zero point −32768, scale 1/65536): TFLM's
/// `reference_ops::Softmax<int8_t, int16_t>`, CMSIS-NN's `arm_softmax_s8_s16`, bit for bit.
/// Arguments as [`softmax_s8`].
///
/// # Errors
///
/// As [`softmax_s8`], except that int16 output has an answer for every row whose sum fits Q12.19
/// ([`Error::QuantizedSumOverflow`] only for rows of 4096 values or more).
///
/// # Examples
///
/// ```
/// use softmax_core::quant::{softmax_s8_s16, S8Params};
/// let params = S8Params::prepare(1.0 / 16.0, 1.0)?;
/// let (mut scratch, mut y) = ([0i32; 2], [0i16; 2]);
/// softmax_s8_s16(&params, &[16, 0], 2, &mut scratch, &mut y)?; // logits 1 and 0
/// let p0 = (y[0] as f64 + 32768.0) / 65536.0;
/// assert!((p0 - 1.0 / (1.0 + (-1f64).exp())).abs() < 2.0 / 65536.0);
/// # Ok::<(), softmax_core::Error>(())
/// ```
pub fn softmax_s8_s16(
    params: &S8Params,
    x: &[i8],
    n: usize,
    scratch: &mut [i32],
    out: &mut [i16],
) -> Result<(), Error> {
    softmax_s8_rows(params, x, n, scratch, out)
}

/// Softmax of int16 rows (zero point 0) into int16 probabilities (zero point 0, scale 1/32768):
/// TFLM's `reference_ops::SoftmaxInt16`, bit for bit (CMSIS-NN's `arm_softmax_s16` except for
/// the two clamps it omits: see the [module docs](self)). The exps are kept in `out` between the
/// two passes, as TFLM does.
///
/// # Errors
///
/// [`Error::EmptyRow`] (`n = 0`), [`Error::RaggedBatch`], [`Error::LengthMismatch`];
/// [`Error::QuantizedSumOverflow`] for a row whose Q16.15 sum of exps overflows int32 (65549
/// values or more: the row maximum's exp is 32762).
///
/// # Examples
///
/// ```
/// use softmax_core::quant::{softmax_s16, S16Params};
/// let params = S16Params::prepare(1.0 / 4096.0, 1.0)?; // logits in steps of 1/4096
/// let x: [i16; 3] = [8192, 4096, 0]; // 2, 1, 0
/// let mut y = [0i16; 3];
/// softmax_s16(&params, &x, 3, &mut y)?;
/// let p: Vec<f64> = y.iter().map(|&q| q as f64 / 32768.0).collect();
/// assert!((p[0] - 0.665241).abs() < 1e-3 && (p[2] - 0.090031).abs() < 1e-3);
/// # Ok::<(), softmax_core::Error>(())
/// ```
pub fn softmax_s16(
    params: &S16Params<'_>,
    x: &[i16],
    n: usize,
    out: &mut [i16],
) -> Result<(), Error> {
    check_batch(x.len(), n, out.len())?;
    // As the int8 kernels: the loops at the dispatched level (the SSE2 baseline took 2.6 times
    // as long on a Zen 4: AVX-512 gathers the table lookups).
    simd::exec(
        #[inline(always)]
        || softmax_s16_loop(params, x, n, out),
    )
}

/// The rows of [`softmax_s16`], after its checks.
#[inline(always)]
fn softmax_s16_loop(
    params: &S16Params<'_>,
    x: &[i16],
    n: usize,
    out: &mut [i16],
) -> Result<(), Error> {
    for (row, out) in x.chunks_exact(n).zip(out.chunks_exact_mut(n)) {
        let max = row.iter().fold(i16::MIN, |m, &v| m.max(v)) as i32;
        let mut sum: i64 = 0; // Q16.15
        for (&v, e) in row.iter().zip(out.iter_mut()) {
            // Scale x − max so that [−65535, 0] stands for [−10, 0], recentre to the table's
            // symmetric input range.
            let scaled = multiply_by_quantized_multiplier(
                v as i32 - max,
                params.multiplier,
                params.left_shift,
            );
            let sym = scaled.wrapping_add(32767).clamp(-32768, 32767) as i16;
            *e = lut_lookup(sym, params.exp_lut);
            sum += *e as i64;
        }
        let sum = i32::try_from(sum).map_err(|_| Error::QuantizedSumOverflow)?;
        // sum >= 1 (the row's maximum looks up exp(0)), so 1 <= headroom_plus_one <= 31.
        let headroom_plus_one = (sum as u32).leading_zeros().clamp(1, 31);
        let shifted_sum = (((sum as i64) << (headroom_plus_one - 1)) + (1 << 13)) >> 14;
        // 1/(1 + x) needs x = sum − 1, recentred from [0, 65535] to [−32768, 32767].
        let sym_shifted_sum = (shifted_sum - ((1 << 15) + (1 << 16))).clamp(-32768, 32767) as i16;
        let reciprocal = lut_lookup(sym_shifted_sum, params.one_over_one_plus_x_lut) as i64;
        let right_shift = 31 - headroom_plus_one;
        let round = (1i64 << right_shift) >> 1;
        for y in out.iter_mut() {
            let result = ((*y as i64 * reciprocal + round) >> right_shift) as i32;
            *y = result.clamp(0, 32767) as i16;
        }
    }
    Ok(())
}
