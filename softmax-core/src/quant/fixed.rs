//! The gemmlowp fixed-point primitives that TensorFlow Lite Micro's quantized softmax is made of,
//! on raw `i32` values, bit for bit.
//!
//! A value in format `Qm.n` (`m` integer bits, `n = 31 − m` fractional bits) is the `i32` `r`
//! standing for `r / 2ⁿ`. gemmlowp's `FixedPoint<int32_t, m>` arithmetic maps onto these
//! functions as follows: `a * b` of two fixed-point numbers is
//! [`saturating_rounding_doubling_high_mul`] of the raw values (the result has the sum of the
//! integer bits); `Rescale<dst>` is [`saturating_rounding_multiply_by_pot`] by `src − dst`;
//! `+` and `−` are two's-complement (wrapping) additions, as gemmlowp's `Add`/`Sub` compile.
//!
//! These are exposed so that a port of another TFLM kernel, or a twice-computing reference of the
//! softmax (the one `harness/firmware` measures against), can use exactly the arithmetic of
//! [`softmax_s8`](super::softmax_s8). None of them panics, for any argument.

#![forbid(unsafe_code)]

/// `SaturatingRoundingDoublingHighMul(a, b)`: `⌊(a·b + 2³⁰) / 2³¹⌋` — `a·b/2³¹` rounded to
/// nearest with ties toward +∞ — and `i32::MIN · i32::MIN` saturated to `i32::MAX`: ARM's
/// `VQRDMULH`. The product of two `Q0.31`
/// values in `Q0.31`; in general `Qa·Qb → Q(a+b)`.
///
/// # Examples
///
/// ```
/// use softmax_core::quant::fixed::saturating_rounding_doubling_high_mul as srdhm;
/// let half = 1 << 30; // 0.5 in Q0.31
/// assert_eq!(srdhm(half, half), 1 << 29); // 0.25
/// assert_eq!(srdhm(i32::MIN, i32::MIN), i32::MAX); // −1 · −1 saturates
/// assert_eq!(srdhm(-1, 1 << 30), 0); // −2⁻³² rounds to 0
/// assert_eq!(srdhm(-3, 1 << 30), -1); // −1.5 → −1: ties go up
/// ```
#[inline]
pub const fn saturating_rounding_doubling_high_mul(a: i32, b: i32) -> i32 {
    if a == i32::MIN && b == i32::MIN {
        return i32::MAX;
    }
    // gemmlowp writes `trunc((ab + nudge) / 2³¹)` with `nudge = 2³⁰` for `ab >= 0` and
    // `1 − 2³⁰` below: for integers that is `⌊(ab + 2³⁰) / 2³¹⌋`, one arithmetic shift (for
    // `ab = −m < 0`, `−⌊(m + 2³⁰ − 1)/2³¹⌋ = −⌈(m − 2³⁰)/2³¹⌉ = ⌊(2³⁰ − m)/2³¹⌋`), which is
    // smaller and faster on every core than the division's sign fix-up. `harness/tests/quant.rs`
    // checks it against the floor form on edge and random operands.
    ((a as i64 * b as i64 + (1 << 30)) >> 31) as i32
}

/// [`saturating_rounding_doubling_high_mul`] without its saturation test, for the call sites
/// where one operand can never be `i32::MIN` (a positive constant, a non-negative exp, a
/// half-denominator that is at least −1): the same value there, and a dozen bytes less code per
/// site on a Cortex-M (the int8 kernel's flash budget).
#[inline(always)]
pub(crate) const fn mul_unsaturated(a: i32, b: i32) -> i32 {
    ((a as i64 * b as i64 + (1 << 30)) >> 31) as i32
}

/// `RoundingDivideByPOT(x, exponent)`: `x / 2^exponent` rounded to nearest, ties away from zero
/// (a rounding arithmetic right shift). `exponent` is taken modulo 32 (the C++ asserts
/// `0 <= exponent <= 31` and is undefined beyond).
///
/// # Examples
///
/// ```
/// use softmax_core::quant::fixed::rounding_divide_by_pot;
/// assert_eq!(rounding_divide_by_pot(5, 1), 3); // 2.5 → 3
/// assert_eq!(rounding_divide_by_pot(-5, 1), -3); // −2.5 → −3
/// assert_eq!(rounding_divide_by_pot(-4, 1), -2);
/// assert_eq!(rounding_divide_by_pot(i32::MAX, 12), 1 << 19);
/// ```
#[inline]
pub const fn rounding_divide_by_pot(x: i32, exponent: u32) -> i32 {
    let e = exponent & 31;
    let mask = ((1i64 << e) - 1) as i32;
    let remainder = x & mask;
    let threshold = (mask >> 1) + (x < 0) as i32;
    (x >> e) + (remainder > threshold) as i32
}

/// `SaturatingRoundingMultiplyByPOT<exponent>(x)`: `x·2^exponent`, saturating to `i32::MIN` /
/// `i32::MAX` for `exponent > 0` and rounding as [`rounding_divide_by_pot`] for `exponent < 0`.
/// This is gemmlowp's `Rescale` from `Qa` to `Qb` with `exponent = a − b`. `|exponent|` is taken
/// modulo 32.
///
/// # Examples
///
/// ```
/// use softmax_core::quant::fixed::saturating_rounding_multiply_by_pot as mul_pot;
/// assert_eq!(mul_pot(3, 2), 12);
/// assert_eq!(mul_pot(1 << 29, 2), i32::MAX); // saturates
/// assert_eq!(mul_pot(-(1 << 29), 2), i32::MIN);
/// assert_eq!(mul_pot(6, -2), 2); // 1.5 → 2
/// ```
#[inline]
pub const fn saturating_rounding_multiply_by_pot(x: i32, exponent: i32) -> i32 {
    if exponent == 0 {
        x
    } else if exponent > 0 {
        let e = (exponent as u32) & 31;
        let threshold = ((1i64 << (31 - e)) - 1) as i32;
        if x > threshold {
            i32::MAX
        } else if x < -threshold {
            i32::MIN
        } else {
            x << e
        }
    } else {
        rounding_divide_by_pot(x, exponent.unsigned_abs())
    }
}

/// `RoundingHalfSum(a, b)`: `(a + b) / 2` rounded to nearest, ties away from zero (`VRHADD`).
///
/// # Examples
///
/// ```
/// use softmax_core::quant::fixed::rounding_half_sum;
/// assert_eq!(rounding_half_sum(1, 2), 2);
/// assert_eq!(rounding_half_sum(-1, -2), -2);
/// assert_eq!(rounding_half_sum(i32::MAX, i32::MAX), i32::MAX);
/// ```
#[inline]
pub const fn rounding_half_sum(a: i32, b: i32) -> i32 {
    let sum = a as i64 + b as i64;
    let sign = if sum >= 0 { 1 } else { -1 };
    ((sum + sign) / 2) as i32
}

/// `exp_on_interval_between_negative_one_quarter_and_0_excl`: `exp(a)` for `a ∈ [−1/4, 0)` in
/// `Q0.31`, by the fourth-order Taylor polynomial around `−1/8`.
const fn exp_on_interval_between_negative_one_quarter_and_0_excl(a: i32) -> i32 {
    // `a ∈ [−2²⁹, 0)` (its one caller), so `x ∈ [−2²⁸, 2²⁸)` and its powers are small: no
    // operand is ever i32::MIN.
    use mul_unsaturated as mul;
    const CONSTANT_TERM: i32 = 1_895_147_668; // exp(−1/8)
    const CONSTANT_1_OVER_3: i32 = 715_827_883; // 1/3
    let x = a.wrapping_add(1 << 28); // a + 1/8
    let x2 = mul(x, x);
    let x3 = mul(x2, x);
    let x4 = mul(x2, x2);
    let x4_over_4 = rounding_divide_by_pot(x4, 2);
    let poly = rounding_divide_by_pot(
        mul(x4_over_4.wrapping_add(x3), CONSTANT_1_OVER_3).wrapping_add(x2),
        1,
    );
    CONSTANT_TERM.wrapping_add(mul(CONSTANT_TERM, x.wrapping_add(poly)))
}

/// gemmlowp's `exp_on_negative_values` for a `Q5.26` argument (TFLM's `kScaledDiffIntegerBits =
/// 5`): `exp(a)` in `Q0.31` for `a <= 0`, `i32::MAX` (one) at `a = 0`.
///
/// The argument is split into a multiple of 1/4 and a remainder in `[−1/4, 0)`: the remainder goes
/// through a Taylor polynomial, and each set bit of the multiple multiplies by a constant
/// `exp(−2^k)`, `k = −2 … 4` (the "barrel shifter"). Positive arguments give gemmlowp's (wrong but
/// defined) answer; the softmax never passes one.
///
/// # Accuracy
///
/// That of gemmlowp: absolute error at most 2.3·10⁻⁷ (about 490·2⁻³¹) over `[−31, 0]`, measured
/// by `harness/tests/quant.rs` against an f64 `exp` at every 997th `Q5.26` step and at every
/// multiple of 1/4 (the barrel shifter's joints); results below 2⁻³¹ round to 0.
///
/// # Examples
///
/// ```
/// use softmax_core::quant::fixed::exp_on_negative_values_q5_26 as exp;
/// assert_eq!(exp(0), i32::MAX);
/// let e = exp(-(1 << 26)) as f64 / 2f64.powi(31); // exp(−1)
/// assert!((e - (-1f64).exp()).abs() < 2e-7);
/// ```
#[inline]
pub const fn exp_on_negative_values_q5_26(a: i32) -> i32 {
    // The barrel multipliers are positive constants.
    use mul_unsaturated as mul;
    const FRACTIONAL_BITS: u32 = 26;
    const ONE_QUARTER: i32 = 1 << (FRACTIONAL_BITS - 2);
    let a_mod_quarter_minus_one_quarter = (a & (ONE_QUARTER - 1)).wrapping_sub(ONE_QUARTER);
    // Rescale<0> from Q5.26: a saturating left shift by 5.
    let mut result = exp_on_interval_between_negative_one_quarter_and_0_excl(
        saturating_rounding_multiply_by_pot(a_mod_quarter_minus_one_quarter, 5),
    );
    let remainder = a_mod_quarter_minus_one_quarter.wrapping_sub(a);
    // The barrel shifter: bit 26 + k of the remainder (k = −2 … 4) multiplies by exp(−2^k).
    const BARREL: [i32; 7] = [
        1_672_461_947, // exp(−1/4)
        1_302_514_674, // exp(−1/2)
        790_015_084,   // exp(−1)
        290_630_308,   // exp(−2)
        39_332_535,    // exp(−4)
        720_401,       // exp(−8)
        242,           // exp(−16)
    ];
    let mut k = 0;
    while k < BARREL.len() {
        if remainder & (1 << (FRACTIONAL_BITS - 2 + k as u32)) != 0 {
            result = mul(result, BARREL[k]);
        }
        k += 1;
    }
    // With 5 integer bits gemmlowp has no clamp below −32 (kIntegerBits > 5 is false).
    if a == 0 {
        i32::MAX
    } else {
        result
    }
}

/// gemmlowp's `one_over_one_plus_x_for_x_in_0_1`: `1/(1 + a)` in `Q0.31` for `a ∈ [0, 1)` in
/// `Q0.31`, by three Newton–Raphson steps from the 48/17 − 32/17·d estimate.
///
/// # Examples
///
/// ```
/// use softmax_core::quant::fixed::one_over_one_plus_x_for_x_in_0_1 as recip;
/// let r = recip(1 << 30) as f64 / 2f64.powi(31); // 1/(1 + 0.5)
/// assert!((r - 2.0 / 3.0).abs() < 1e-8);
/// ```
#[inline]
pub const fn one_over_one_plus_x_for_x_in_0_1(a: i32) -> i32 {
    // `half_denominator >= −1` for every `a` (and constants are not i32::MIN): those products
    // cannot saturate; `x · one_minus` keeps the saturating form.
    use mul_unsaturated as mul;
    const ONE_Q2_29: i32 = 1 << 29;
    const CONSTANT_48_OVER_17: i32 = 1_515_870_810; // Q2.29
    const CONSTANT_NEG_32_OVER_17: i32 = -1_010_580_540; // Q2.29
    let half_denominator = rounding_half_sum(a, i32::MAX); // Q0.31
    let mut x = CONSTANT_48_OVER_17.wrapping_add(mul(half_denominator, CONSTANT_NEG_32_OVER_17));
    let mut i = 0;
    while i < 3 {
        let half_denominator_times_x = mul(half_denominator, x); // Q2.29
        let one_minus = ONE_Q2_29.wrapping_sub(half_denominator_times_x);
        // Q2.29 · Q2.29 = Q4.27, Rescale<2>: a saturating left shift by 2.
        x = x.wrapping_add(saturating_rounding_multiply_by_pot(
            saturating_rounding_doubling_high_mul(x, one_minus),
            2,
        ));
        i += 1;
    }
    // ExactMulByPot<−1> (Q2.29 read as Q1.30), then Rescale<0>: a saturating left shift by 1.
    saturating_rounding_multiply_by_pot(x, 1)
}

/// TFLM's `GetReciprocal(x, x_integer_digits)`: for `x > 0` in `Q(x_integer_digits)`, returns
/// `(scale, num_bits_over_unit)` with `scale` in `Q0.31` such that
/// `1/x ≈ scale · 2^−num_bits_over_unit` (`scale ∈ (1/2, 1]`).
///
/// # Examples
///
/// ```
/// use softmax_core::quant::fixed::get_reciprocal;
/// // 3.0 in Q12.19.
/// let (scale, bits) = get_reciprocal(3 << 19, 12);
/// let r = scale as f64 / 2f64.powi(31) / 2f64.powi(bits);
/// assert!((r - 1.0 / 3.0).abs() < 1e-8);
/// ```
#[inline]
pub const fn get_reciprocal(x: i32, x_integer_digits: i32) -> (i32, i32) {
    let headroom_plus_one = (x as u32).leading_zeros();
    let num_bits_over_unit = x_integer_digits.wrapping_sub(headroom_plus_one as i32);
    // `headroom_plus_one` is 32 only for x = 0 (the C++ would be undefined there): a wrapping
    // shift by 0 then leaves the 0 that any shift of 0 gives.
    let shifted = (x as u32).wrapping_shl(headroom_plus_one);
    let shifted_sum_minus_one = shifted.wrapping_sub(1 << 31) as i32;
    (
        one_over_one_plus_x_for_x_in_0_1(shifted_sum_minus_one),
        num_bits_over_unit,
    )
}

/// TFLM's double-rounding `MultiplyByQuantizedMultiplier(x, multiplier, shift)`: `x·2^max(shift,
/// 0)` (two's complement, as the C++ compiles), then [`saturating_rounding_doubling_high_mul`] by
/// `multiplier`, then [`rounding_divide_by_pot`] by `max(−shift, 0)`. Approximates
/// `x · multiplier · 2^(shift − 31)`. Shifts are taken modulo 32.
///
/// # Examples
///
/// ```
/// use softmax_core::quant::fixed::multiply_by_quantized_multiplier;
/// // 1 << 30 is 0.5: 100 · 0.5 · 2^1 = 100, and · 2^−2 = 12.5 → 13.
/// assert_eq!(multiply_by_quantized_multiplier(100, 1 << 30, 1), 100);
/// assert_eq!(multiply_by_quantized_multiplier(100, 1 << 30, -2), 13);
/// ```
#[inline]
pub const fn multiply_by_quantized_multiplier(x: i32, multiplier: i32, shift: i32) -> i32 {
    let left = if shift > 0 { shift as u32 } else { 0 };
    let right = if shift > 0 { 0 } else { shift.unsigned_abs() };
    rounding_divide_by_pot(
        saturating_rounding_doubling_high_mul(x.wrapping_mul(1i32.wrapping_shl(left)), multiplier),
        right,
    )
}
