//! The `micromath` backend: small, fast, approximate f32 exp/ln.

#![forbid(unsafe_code)]

use super::Backend;
use micromath::F32Ext;

/// Fast approximate f32 exp/ln from the [`micromath`](https://docs.rs/micromath) crate.
///
/// f32 only. Accuracy (measured by `harness/tests/backend_accuracy.rs` over a strided sweep of
/// all f32): `exp` max relative error 2.4e-3; `ln` max absolute error 7e-5. A softmax computed with it is within about 4.5e-3 relative of the exact
/// one. Use it where code size and speed on a soft-float core matter more than the last digits.
///
/// This wrapper adds what micromath leaves to the caller: `exp` maps arguments below −104
/// (where e^x rounds to 0 in f32) to 0, arguments above ln(MAX) = 88.72283 to `+inf`, keeps NaN, and scales
/// arguments with subnormal results into micromath's range (it asserts on them); `ln` maps
/// 0 to `-inf`, `+inf` to `+inf`, negative or NaN arguments to NaN, and works around micromath
/// 2.1's `ln` being wrong below 1 and for subnormals (see the source).
///
/// # Examples
///
/// ```
/// use softmax_core::{softmax, backend::MicroMath};
/// let mut y = [0.0f32; 2];
/// softmax(MicroMath, &[0.0, 0.0], &mut y).unwrap();
/// assert!((y[0] - 0.5).abs() < 1e-4);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct MicroMath;

impl Backend<f32> for MicroMath {
    const NAME: &'static str = "micromath";
    #[inline]
    fn exp(x: f32) -> f32 {
        if x.is_nan() {
            x
        } else if x < -104.0 {
            0.0
        } else if x > 88.722_83 {
            f32::INFINITY
        } else if x < -86.0 {
            // micromath builds the result's exponent directly: below the normal range it hits a
            // debug assertion (and wraps to garbage in release). Evaluate at x + 64·ln2 and scale
            // by 2^-64, which rounds once into the subnormals.
            F32Ext::exp(x + 64.0 * core::f32::consts::LN_2) * f32::from_bits((127 - 64) << 23)
        } else {
            F32Ext::exp(x)
        }
    }
    #[inline]
    fn ln(x: f32) -> f32 {
        if x.is_nan() || x < 0.0 {
            f32::NAN
        } else if x == 0.0 {
            f32::NEG_INFINITY
        } else if x == f32::INFINITY {
            x
        } else {
            // micromath 2.1's ln is only right for x >= 1 (ln 0.75 gives -0.405, ln of a
            // subnormal is off by up to 10): scale subnormals up by 2^64 and use
            // ln x = -ln(1/x) below 1 (1/x costs 2^-24 relative, far below micromath's error).
            let (x, k) = if x < f32::MIN_POSITIVE {
                (x * 18_446_744_073_709_551_616.0, 64.0)
            } else {
                (x, 0.0)
            };
            let l = if x < 1.0 {
                -F32Ext::ln(1.0 / x)
            } else {
                F32Ext::ln(x)
            };
            l - k * core::f32::consts::LN_2
        }
    }
}
