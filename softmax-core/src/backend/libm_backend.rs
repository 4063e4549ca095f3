//! The `libm` backend: the pure-Rust port of musl's math library.

#![forbid(unsafe_code)]

use super::Backend;

/// Accurate scalar exp/ln from the [`libm`](https://docs.rs/libm) crate (a port of musl).
///
/// Accuracy (measured by `harness/tests/backend_accuracy.rs` against a correctly rounded
/// reference): `expf`, `logf` < 1 ULP; `exp`, `log` < 1 ULP. Branchy scalar code: it does not
/// vectorise, so on a desktop CPU it is several times slower than [`Poly`](super::Poly) inside
/// the softmax loops; on a soft-float microcontroller the difference is small.
///
/// # Examples
///
/// ```
/// use softmax_core::{logsumexp, backend::Libm};
/// let lse = logsumexp(Libm, &[0.0f64, 0.0]).unwrap();
/// assert!((lse - core::f64::consts::LN_2).abs() < 1e-16);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Libm;

impl Backend<f32> for Libm {
    const NAME: &'static str = "libm";
    #[inline]
    fn exp(x: f32) -> f32 {
        libm::expf(x)
    }
    #[inline]
    fn ln(x: f32) -> f32 {
        libm::logf(x)
    }
}

impl Backend<f64> for Libm {
    const NAME: &'static str = "libm";
    #[inline]
    fn exp(x: f64) -> f64 {
        libm::exp(x)
    }
    #[inline]
    fn ln(x: f64) -> f64 {
        libm::log(x)
    }
}
