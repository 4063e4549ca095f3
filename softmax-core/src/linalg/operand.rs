//! The element types the products read ([`Operand`]): a float type itself, or a
//! reduced-precision format of [`stored`](crate::stored) read back as f32 with its row's scale,
//! and the one place that says how each is read (`load`, and the hooks to the architecture
//! copies of the products). [`stored`](crate::stored) says how rows are stored; this module
//! does not need it.

#![forbid(unsafe_code)]

use core::fmt::Debug;

use crate::float::Float;
use half::{bf16, f16};

pub(crate) mod sealed {
    /// Seals [`Operand`](super::Operand): the operands are the float types and the three
    /// formats of this module.
    pub trait Sealed<F> {}
    impl<F: crate::Float> Sealed<F> for F {}
    impl Sealed<f32> for half::f16 {}
    impl Sealed<f32> for half::bf16 {}
    impl Sealed<f32> for i8 {}
}

/// An element type the products of [`linalg::within`](crate::linalg::within) read as `F`: a
/// float type itself (`F = Self`, scale `()`), or a reduced-precision [`Stored`](crate::stored::Stored) format read
/// as f32. Sealed: these are the operands there are.
///
/// # Examples
///
/// ```
/// use softmax_core::stored::{bf16, Operand};
/// assert_eq!(2.5f64.load(()), 2.5);
/// assert_eq!(bf16::from_f32(1.5).load(()), 1.5f32);
/// assert_eq!(3i8.load(0.5), 1.5f32);
/// ```
pub trait Operand<F: Float>:
    sealed::Sealed<F> + Copy + Default + Debug + Send + Sync + 'static
{
    /// What a row stores besides its elements: `()`, or the f32 scale of an int8 row.
    type Scale: Copy + Default + Debug + PartialEq + Send + Sync + 'static;

    /// The value the element stands for, given its row's scale: itself for a float, the
    /// exact conversion to f32 for f16 and bf16, `q·s` (one f32 product) for int8.
    ///
    /// # Examples
    ///
    /// ```
    /// use softmax_core::stored::Operand;
    /// assert_eq!((-127i8).load(0.25), -31.75f32);
    /// ```
    fn load(self, scale: Self::Scale) -> F;

    /// Crate-internal: `C = alpha·(A·Bᵀ)` with an architecture copy of the product, if there is
    /// one for this element type and the CPU runs it (`false`: nothing done). Same bits as the
    /// portable loop followed by a multiplication of each element by `alpha`.
    #[doc(hidden)]
    #[inline(always)]
    fn nt_fast(
        _a: &[F],
        _b: &[Self],
        _s: &[Self::Scale],
        _k: usize,
        _c: &mut [F],
        _alpha: F,
    ) -> bool {
        false
    }

    /// Crate-internal: `C (+)= A·B` likewise.
    #[doc(hidden)]
    #[inline(always)]
    fn nn_fast(
        _a: &[F],
        _b: &[Self],
        _s: &[Self::Scale],
        _nk: (usize, usize),
        _c: &mut [F],
        _accumulate: bool,
    ) -> bool {
        false
    }
}

impl<F: Float> Operand<F> for F {
    type Scale = ();
    #[inline(always)]
    fn load(self, _: ()) -> F {
        self
    }
    #[inline(always)]
    fn nt_fast(a: &[F], b: &[F], _s: &[()], k: usize, c: &mut [F], alpha: F) -> bool {
        super::fast_nt(a, b, k, c, alpha)
    }
    #[inline(always)]
    fn nn_fast(a: &[F], b: &[F], _s: &[()], nk: (usize, usize), c: &mut [F], acc: bool) -> bool {
        super::fast_nn(a, b, nk, c, acc)
    }
}

/// The hooks of a stored format: the architecture copies of the products over its rows.
macro_rules! stored_hooks {
    ($t:ty) => {
        #[inline(always)]
        fn nt_fast(
            a: &[f32],
            b: &[$t],
            s: &[Self::Scale],
            k: usize,
            c: &mut [f32],
            alpha: f32,
        ) -> bool {
            super::fast_nt_stored(a, b, s, k, c, alpha)
        }
        #[inline(always)]
        fn nn_fast(
            a: &[f32],
            b: &[$t],
            s: &[Self::Scale],
            nk: (usize, usize),
            c: &mut [f32],
            acc: bool,
        ) -> bool {
            super::fast_nn_stored(a, b, s, nk, c, acc)
        }
    };
}

impl Operand<f32> for f16 {
    type Scale = ();
    /// Exact for every f16: normal values by re-biasing the exponent, subnormals as
    /// `(2⁻¹⁴ + m·2⁻²⁴) − 2⁻¹⁴` (an exact subtraction of normal numbers: no subnormal f32
    /// arithmetic, which x86 cores execute slowly), ±inf as ±inf, a NaN as a quiet NaN with
    /// its payload (what F16C's conversion gives on x86_64: the same bits at every level).
    #[inline(always)]
    fn load(self, _: ()) -> f32 {
        f16_bits_to_f32(self.to_bits())
    }
    stored_hooks!(f16);
}

/// The f32 value of the f16 with bits `h` (see `f16`'s `load`): IEEE's exact
/// conversion, ±inf for the infinities and a quiet NaN with the payload kept for a NaN (as
/// F16C's `vcvtph2ps` and `half`'s `to_f32` give).
#[inline(always)]
pub(crate) fn f16_bits_to_f32(h: u16) -> f32 {
    let h = h as u32;
    let sign = (h & 0x8000) << 16;
    let o = (h & 0x7fff) << 13;
    let normal = o + (112 << 23);
    // A subnormal (exponent field 0): 2⁻¹⁴ + m·2⁻²⁴, less 2⁻¹⁴.
    let sub = f32::from_bits(o + (113 << 23)) - f32::from_bits(113 << 23);
    // Exponent field 31: infinity, or a NaN made quiet.
    let special = 0x7f80_0000 | o | if o & 0x007f_e000 != 0 { 0x0040_0000 } else { 0 };
    let mag = match o & 0x0f80_0000 {
        0 => sub.to_bits(),
        0x0f80_0000 => special,
        _ => normal,
    };
    f32::from_bits(mag | sign)
}

impl Operand<f32> for bf16 {
    type Scale = ();
    /// Exact: the bfloat16 bits are the top half of the f32's.
    #[inline(always)]
    fn load(self, _: ()) -> f32 {
        f32::from_bits((self.to_bits() as u32) << 16)
    }
    stored_hooks!(bf16);
}

impl Operand<f32> for i8 {
    type Scale = f32;
    #[inline(always)]
    fn load(self, scale: f32) -> f32 {
        self as f32 * scale
    }
    stored_hooks!(i8);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn f16_read_matches_half_for_every_pattern() {
        // `half`'s software conversion (this test build has no F16C target feature): exact,
        // infinities kept, NaNs made quiet with their payload.
        for h in 0..=u16::MAX {
            let x = f16::from_bits(h);
            assert_eq!(x.load(()).to_bits(), x.to_f32().to_bits(), "{h:#06x}");
        }
    }
}
