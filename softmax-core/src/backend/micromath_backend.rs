//! The `micromath` backend: small, fast, approximate f32 exp/ln.

use super::Backend;
use micromath::F32Ext;

/// Fast approximate f32 exp/ln from the [`micromath`](https://docs.rs/micromath) crate.
///
/// f32 only. Accuracy (measured by `harness/tests/backend_accuracy.rs`): `exp` max relative
/// error about 3e-4 over the range the kernels use (arguments <= 0), `ln` max absolute error
/// about 1e-4; the exact figures are in the README's accuracy table. Use it where code size and
/// speed on a soft-float core matter more than the last digits; a softmax computed with it sums
/// to 1 to about 1e-4.
///
/// micromath leaves some special values to the caller, so this wrapper adds them: `exp` maps
/// arguments below −104 (where e^x rounds to 0 in f32) to 0, arguments above 88.73 to `+inf`,
/// and keeps NaN; `ln` maps 0 to `-inf`, `+inf` to `+inf` and negative or NaN arguments to NaN.
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
        } else if x > 88.73 {
            f32::INFINITY
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
            F32Ext::ln(x)
        }
    }
}
