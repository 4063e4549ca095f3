//! The sealed float trait every kernel is generic over, and the error-free transformations the
//! kernels use to keep shifts and sums exact.

use core::fmt::{Debug, Display};
use core::ops::{Add, AddAssign, Div, Mul, MulAssign, Neg, Sub, SubAssign};

pub(crate) mod private {
    use crate::backend::{Backend, Poly};

    /// Seals [`Float`](super::Float); also carries the crate-internal per-type helpers.
    pub trait Sealed: Sized {
        /// Standard Gumbel noise `−ln(−ln u)` from `u` in (0, 1), always with this crate's own
        /// `ln` (<= 1 ULP), whatever backend the caller picked: near `u → 1` the inner
        /// `ln u ≈ u − 1` must be accurate relative to itself, which an approximate `ln` with an
        /// absolute error bound is not (it would bias the sampled distribution).
        fn gumbel_noise(u: Self) -> Self;
    }
    impl Sealed for f32 {
        #[inline(always)]
        fn gumbel_noise(u: f32) -> f32 {
            -<Poly as Backend<f32>>::ln(-<Poly as Backend<f32>>::ln(u))
        }
    }
    impl Sealed for f64 {
        #[inline(always)]
        fn gumbel_noise(u: f64) -> f64 {
            -<Poly as Backend<f64>>::ln(-<Poly as Backend<f64>>::ln(u))
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

/// `if c { a } else { b }` written as a select, which LLVM turns into a blend inside vector loops.
#[inline(always)]
pub(crate) fn select<F: Float>(c: bool, a: F, b: F) -> F {
    if c {
        a
    } else {
        b
    }
}
