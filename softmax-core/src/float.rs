//! The sealed float trait every kernel is generic over, and the error-free transformations the
//! kernels use to keep shifts and sums exact.

#![forbid(unsafe_code)]

use core::fmt::{Debug, Display};
use core::ops::{Add, AddAssign, Div, Mul, MulAssign, Neg, Sub, SubAssign};

pub(crate) mod private {
    /// Seals [`Float`](super::Float); also carries the crate-internal per-type constants and
    /// helpers. It knows nothing of the layers above (backends, dispatch, products).
    pub trait Sealed: Sized + Copy {
        /// The slice itself when `Self` is `f32` (`None` for `f64`): how generic code reaches a
        /// kernel written for f32 only (the hand-scheduled AVX2 products) without a bound of
        /// its own.
        #[inline(always)]
        fn as_f32(_x: &[Self]) -> Option<&[f32]> {
            None
        }
        /// [`as_f32`](Self::as_f32), mutable.
        #[inline(always)]
        fn as_f32_mut(_x: &mut [Self]) -> Option<&mut [f32]> {
            None
        }

        /// 1.5·2^(p−1) (p the significand precision): adding it rounds to an integer and leaves
        /// that integer in the low significand bits.
        const MAGIC: Self;
        /// log2(e), rounded.
        const LOG2E: Self;
        /// ln 2 with few enough significant bits that `n·LN2_HI` is exact for every `n` the
        /// reference-point exp meets (|n| < 512 in f32, < 2^21 in f64).
        const LN2_HI: Self;
        /// ln 2 − LN2_HI, rounded.
        const LN2_LO: Self;
        /// The binary exponent the reference-point exps give the row maximum: its term is
        /// `2^TOP·e^δ` with |δ| <= ln2/2, so a sum of up to 2^64 terms cannot overflow.
        const TOP: i32;
        /// Terms below `2^TINY` are returned as 0 by the backends' `exp_pow2`:
        /// relative to a sum of at least `2^(TOP−1)` they lie below half the smallest subnormal
        /// output, and above it every term is a normal number.
        const TINY: i32;
        /// Distance below the maximum beyond which a term is below `2^TINY` (in natural-log
        /// units, rounded up): the reference point only has to make `x − c` exact within it.
        const REACH: Self;
        /// `2^k` for `k` in the normal exponent range (callers guarantee it).
        fn pow2(k: i32) -> Self;
        /// The exponent of the smallest normal number (−126, −1022).
        const NORMAL_EXP_MIN: i32;
        /// The exponent of the largest finite number (127, 1023).
        const FINITE_EXP_MAX: i32;
        /// Significand precision in bits (24, 53).
        const SIGNIFICAND_BITS: i32;
        /// `self` rounded to an `i32` (saturating; NaN gives 0).
        fn to_i32(self) -> i32;
    }
    impl Sealed for f32 {
        #[inline(always)]
        fn as_f32(x: &[f32]) -> Option<&[f32]> {
            Some(x)
        }
        #[inline(always)]
        fn as_f32_mut(x: &mut [f32]) -> Option<&mut [f32]> {
            Some(x)
        }
        const MAGIC: f32 = 12_582_912.0;
        const LOG2E: f32 = core::f32::consts::LOG2_E;
        /// 15 significant bits (0x3f317200).
        const LN2_HI: f32 = 0.693_145_75;
        const LN2_LO: f32 = 1.428_606_8e-6;
        const TOP: i32 = 60;
        const TINY: i32 = -92;
        const REACH: f32 = 106.0;
        const NORMAL_EXP_MIN: i32 = -126;
        const FINITE_EXP_MAX: i32 = 127;
        const SIGNIFICAND_BITS: i32 = 24;
        #[inline(always)]
        fn pow2(k: i32) -> f32 {
            f32::from_bits(((k + 127) as u32) << 23)
        }
        #[inline(always)]
        fn to_i32(self) -> i32 {
            self as i32
        }
    }
    impl Sealed for f64 {
        const MAGIC: f64 = 6_755_399_441_055_744.0;
        const LOG2E: f64 = core::f64::consts::LOG2_E;
        /// 32 significant bits (0x3fe62e42fee00000).
        const LN2_HI: f64 = 0.693_147_180_369_123_8;
        const LN2_LO: f64 = 1.908_214_929_270_587_7e-10;
        const TOP: i32 = 60;
        const TINY: i32 = -1016;
        const REACH: f64 = 746.0;
        const NORMAL_EXP_MIN: i32 = -1022;
        const FINITE_EXP_MAX: i32 = 1023;
        const SIGNIFICAND_BITS: i32 = 53;
        #[inline(always)]
        fn pow2(k: i32) -> f64 {
            f64::from_bits(((k + 1023) as u64) << 52)
        }
        #[inline(always)]
        fn to_i32(self) -> i32 {
            self as i32
        }
    }
}

/// The element types the kernels accept: `f32` (the fast path) and `f64` (reference use).
///
/// The trait is sealed: it exists so that one generic implementation serves both widths, not as
/// an extension point.
///
/// # Examples
///
/// ```
/// use softmax_core::Float;
/// fn halve<F: Float>(x: F) -> F { x * F::HALF }
/// assert_eq!(halve(3.0f32), 1.5);
/// assert_eq!(f64::from_usize(7), 7.0);
/// ```
pub trait Float:
    private::Sealed
    + Copy
    + Default
    + Debug
    + Display
    + PartialEq
    + PartialOrd
    + Add<Output = Self>
    + Sub<Output = Self>
    + Mul<Output = Self>
    + Div<Output = Self>
    + Neg<Output = Self>
    + AddAssign
    + SubAssign
    + MulAssign
    + Send
    + Sync
    + 'static
{
    /// 0.
    const ZERO: Self;
    /// 1.
    const ONE: Self;
    /// 0.5.
    const HALF: Self;
    /// 2.
    const TWO: Self;
    /// +∞.
    const INFINITY: Self;
    /// −∞.
    const NEG_INFINITY: Self;
    /// A quiet NaN.
    const NAN: Self;
    /// The largest finite value.
    const MAX: Self;
    /// The machine epsilon, 2^(1 − p) with p the significand precision.
    const EPSILON: Self;
    /// ln 2, rounded to this type.
    const LN_2: Self;
    /// The unsigned integer of the same width, for bit-level work and digests.
    type Bits: Copy + Eq + Debug + Into<u64>;
    /// The raw IEEE 754 bits.
    fn to_bits(self) -> Self::Bits;
    /// The value with these raw bits.
    fn from_bits(bits: Self::Bits) -> Self;
    /// `true` for NaN.
    fn is_nan(self) -> bool;
    /// `true` for anything but ±∞ and NaN.
    fn is_finite(self) -> bool;
    /// |x|.
    fn abs(self) -> Self;
    /// `n` rounded to this type.
    fn from_usize(n: usize) -> Self;
    /// `v` rounded to this type.
    fn from_f64(v: f64) -> Self;
    /// This value widened (or kept) as `f64`.
    fn to_f64(self) -> f64;
}

macro_rules! impl_float {
    ($t:ident, $bits:ty) => {
        impl Float for $t {
            const ZERO: Self = 0.0;
            const ONE: Self = 1.0;
            const HALF: Self = 0.5;
            const TWO: Self = 2.0;
            const INFINITY: Self = $t::INFINITY;
            const NEG_INFINITY: Self = $t::NEG_INFINITY;
            const NAN: Self = $t::NAN;
            const MAX: Self = $t::MAX;
            const EPSILON: Self = $t::EPSILON;
            const LN_2: Self = core::$t::consts::LN_2;
            type Bits = $bits;
            #[inline(always)]
            fn to_bits(self) -> $bits {
                $t::to_bits(self)
            }
            #[inline(always)]
            fn from_bits(bits: $bits) -> Self {
                $t::from_bits(bits)
            }
            #[inline(always)]
            fn is_nan(self) -> bool {
                $t::is_nan(self)
            }
            #[inline(always)]
            fn is_finite(self) -> bool {
                $t::is_finite(self)
            }
            #[inline(always)]
            fn abs(self) -> Self {
                $t::abs(self)
            }
            #[inline(always)]
            fn from_usize(n: usize) -> Self {
                n as $t
            }
            #[inline(always)]
            fn from_f64(v: f64) -> Self {
                v as $t
            }
            #[inline(always)]
            fn to_f64(self) -> f64 {
                self as f64
            }
        }
    };
}
impl_float!(f32, u32);
impl_float!(f64, u64);

/// Knuth's TwoSum: `s = fl(a + b)` and the exact rounding error `e`, so `a + b = s + e` exactly
/// (barring overflow). Branch-free, six operations, no precondition on magnitudes.
#[inline(always)]
pub(crate) fn two_sum<F: Float>(a: F, b: F) -> (F, F) {
    let s = a + b;
    let bb = s - a;
    let e = (a - (s - bb)) + (b - bb);
    (s, e)
}

/// Dekker's Fast2Sum: `s = fl(a + b)` and its exact rounding error, valid when `|a| >= |b|`
/// (or when both are so small that the error term does not matter to the caller).
#[inline(always)]
pub(crate) fn fast_two_sum<F: Float>(a: F, b: F) -> (F, F) {
    let s = a + b;
    (s, b - (s - a))
}

/// `x·2^n` rounded once (C's `scalbn`, as musl computes it): the scale is applied in steps of
/// normal powers of two, each exact, and when the result lies below the normal range the last
/// step is the only one that rounds (the one before it leaves at least `SIGNIFICAND_BITS` bits of
/// headroom).
#[inline]
pub(crate) fn ldexp<F: Float>(x: F, n: i32) -> F {
    let (mut y, mut n) = (x, n);
    let (lo, hi) = (F::NORMAL_EXP_MIN, F::FINITE_EXP_MAX);
    if n > hi {
        y *= F::pow2(hi);
        n -= hi;
        if n > hi {
            y *= F::pow2(hi);
            n = (n - hi).min(hi);
        }
    } else if n < lo {
        let step = lo + F::SIGNIFICAND_BITS;
        y *= F::pow2(step);
        n -= step;
        if n < lo {
            y *= F::pow2(step);
            n = (n - step).max(lo);
        }
    }
    y * F::pow2(n)
}

/// `if c { a } else { b }` written as a select, which LLVM turns into a blend inside vector loops.
#[inline(always)]
pub(crate) fn select<F: Float>(c: bool, a: F, b: F) -> F {
    if c {
        a
    } else {
        b
    }
}

#[cfg(test)]
mod tests {
    use super::ldexp;

    /// `ldexp` in f32 against the exact product in f64 rounded once to f32 (the cast rounds to
    /// nearest even, into the subnormals too), over scales that cross both ends of the range.
    #[test]
    fn ldexp_rounds_once() {
        let mut s = 0x1234_5678_9abc_def0u64;
        for _ in 0..200_000 {
            s = s
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            let x = f32::from_bits((s >> 32) as u32);
            if !x.is_finite() {
                continue;
            }
            let n = ((s >> 8) % 600) as i32 - 300;
            // Exact in f64 for every f32 x and |n| <= 300.
            let want = (x as f64 * 2f64.powi(n)) as f32;
            let got = ldexp(x, n);
            assert_eq!(got.to_bits(), want.to_bits(), "{x:e} · 2^{n}");
        }
    }

    /// `x·2^n` in f64, rounded once to nearest even, from the integers: `|x| = m·2^e` exactly,
    /// the result `m·2^(e+n)` exact where `e + n >= −1074`, else `m` shifted right with the
    /// bits below `2^−1074` rounded half to even; `±inf` above the range.
    fn ldexp_f64_reference(x: f64, n: i32) -> f64 {
        if x == 0.0 || !x.is_finite() {
            return x;
        }
        let bits = x.to_bits();
        let (field, frac) = ((bits >> 52) & 0x7ff, bits & ((1u64 << 52) - 1));
        let (m, e) = if field == 0 {
            (frac, -1074i64)
        } else {
            (frac | (1u64 << 52), field as i64 - 1075)
        };
        let top = e + i64::from(n) + i64::from(64 - m.leading_zeros()) - 1;
        let mag = if top > 1023 {
            f64::INFINITY
        } else if e + i64::from(n) >= -1074 {
            // Exact: two exact power-of-two steps (each factor a normal number).
            let big = e + i64::from(n);
            let (a, b) = (big / 2, big - big / 2);
            (m as f64) * 2f64.powi(a as i32) * 2f64.powi(b as i32)
        } else {
            let s = (-1074 - (e + i64::from(n))) as u32;
            let (mut q, rem, half) = if s >= 64 {
                (0u64, u128::from(m), 1u128 << (s.min(127) - 1))
            } else {
                (m >> s, u128::from(m & ((1u64 << s) - 1)), 1u128 << (s - 1))
            };
            if rem > half || (rem == half && q & 1 == 1) {
                q += 1;
            }
            f64::from_bits(q)
        };
        if x < 0.0 {
            -mag
        } else {
            mag
        }
    }

    /// `ldexp` in f64 against the integer reference above, over random finite `x` (subnormals
    /// included) and scales that cross both ends of the range.
    #[test]
    fn ldexp_f64_rounds_once() {
        // The reference itself on hand-checked values.
        assert_eq!(ldexp_f64_reference(1.5, -1074), f64::from_bits(2)); // 1.5 ulp → 2 (even)
        assert_eq!(ldexp_f64_reference(2.5, -1074), f64::from_bits(2)); // 2.5 ulp → 2 (even)
        assert_eq!(ldexp_f64_reference(1.0, 1024), f64::INFINITY);
        assert_eq!(ldexp_f64_reference(-3.0, 2), -12.0);
        let mut s = 0x0fed_cba9_8765_4321u64;
        let mut subnormal = 0;
        for _ in 0..200_000 {
            s = s
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            let x = f64::from_bits(s.rotate_left(17));
            if !x.is_finite() {
                continue;
            }
            let n = ((s >> 7) % 4400) as i32 - 2200;
            let want = ldexp_f64_reference(x, n);
            let got = ldexp(x, n);
            subnormal += usize::from(want != 0.0 && want.abs() < f64::MIN_POSITIVE);
            assert_eq!(got.to_bits(), want.to_bits(), "{x:e} · 2^{n}");
        }
        assert!(subnormal > 1000, "only {subnormal} subnormal results");
    }
}
