//! Deterministic input rows: the element types, the distributions, and the table of rows every
//! softmax-family case walks.

use softmax_core::Float;

use crate::{Feed, SplitMix64};

/// Capacity of the single-row buffers: the longest row, 257 values (sixteen full 16-lane chunks,
/// which is one whole block of softmax-core's blocked summation, and a one-value tail). Buffers
/// live on the stack and a case holds at most three, 6 KiB in f64: the Cortex-M0 target has
/// 16 KiB of RAM, and the firmware fails any case that uses more than 10 KiB of stack.
pub const CAP: usize = 257;

/// The element types the suite runs on (`f32`, `f64`), with the constants the generators need.
pub trait Elem: Float + Feed {
    /// `"f32"` or `"f64"`.
    const NAME: &'static str;
    /// Width in bits.
    const BITS: u32;
    /// The smallest positive subnormal.
    const SUBNORMAL: Self;
    /// The smallest positive normal number.
    const MIN_POSITIVE: Self;
    /// Distances below the row maximum whose exponential is subnormal in this type
    /// (`e^-lo` .. `e^-hi`), as `(lo, hi)`.
    const UNDERFLOW: (f64, f64);

    /// The value whose bits are the low [`BITS`](Self::BITS) bits of `bits`.
    ///
    /// # Examples
    ///
    /// ```
    /// use softmax_suite::Elem;
    /// assert_eq!(<f32 as Elem>::from_raw(0x3f80_0000), 1.0);
    /// ```
    fn from_raw(bits: u64) -> Self;

    /// A uniform value on the open interval (0, 1) from 64 random bits; every result is exactly
    /// representable, so it is the same on every target.
    ///
    /// # Examples
    ///
    /// ```
    /// use softmax_suite::Elem;
    /// assert!(<f32 as Elem>::open_unit(0) > 0.0 && <f32 as Elem>::open_unit(u64::MAX) < 1.0);
    /// ```
    fn open_unit(bits: u64) -> Self;
}

impl Elem for f32 {
    const NAME: &'static str = "f32";
    const BITS: u32 = 32;
    const SUBNORMAL: Self = f32::from_bits(1);
    const MIN_POSITIVE: Self = f32::MIN_POSITIVE;
    const UNDERFLOW: (f64, f64) = (87.5, 103.5);
    fn from_raw(bits: u64) -> Self {
        f32::from_bits(bits as u32)
    }
    fn open_unit(bits: u64) -> Self {
        // k < 2^23, so k + 0.5 has at most 24 significant bits: exact in f32.
        ((bits >> 41) as f32 + 0.5) * (1.0 / 8_388_608.0)
    }
}

impl Elem for f64 {
    const NAME: &'static str = "f64";
    const BITS: u32 = 64;
    const SUBNORMAL: Self = f64::from_bits(1);
    const MIN_POSITIVE: Self = f64::MIN_POSITIVE;
    const UNDERFLOW: (f64, f64) = (708.5, 744.5);
    fn from_raw(bits: u64) -> Self {
        f64::from_bits(bits)
    }
    fn open_unit(bits: u64) -> Self {
        // k < 2^52, so k + 0.5 has at most 53 significant bits: exact in f64.
        ((bits >> 12) as f64 + 0.5) * (1.0 / 4_503_599_627_370_496.0)
    }
}

/// How the values of a row are drawn. Special values are injected at positions drawn from the
/// generator, so they are deterministic too.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dist {
    /// Uniform on [−8, 8): ordinary logits.
    Moderate,
    /// Mixed magnitudes: half in [−4, 4), 30 % in [−120, 120), 20 % of size 2^0 .. 2^40 with
    /// either sign.
    Wide,
    /// Drawn from {−3, −1, 0, 0.5, 2}, with the maximum 2 present at least twice when the row
    /// has two entries.
    Ties,
    /// Uniform on (−MAX, MAX) of the element type.
    Huge,
    /// Drawn from {MAX, −MAX, 0, 1, −1}: differences overflow.
    Extremes,
    /// Subnormals, ±0 and the smallest normal.
    Tiny,
    /// One 0 and the rest at distances below 0 whose exponential is subnormal.
    Underflow,
    /// [`Moderate`](Self::Moderate) with `k` entries (positions may coincide) set to `+inf`.
    PosInf(usize),
    /// [`Moderate`](Self::Moderate) with about a third of the entries `-inf`.
    SomeNegInf,
    /// Every entry `-inf`.
    AllNegInf,
    /// [`Moderate`](Self::Moderate) with one NaN.
    Nan,
    /// [`Moderate`](Self::Moderate) with a NaN, a `+inf` and a `-inf`.
    NanInf,
}

/// One row of the suite: its length and distribution.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RowSpec {
    /// Number of values (1 ..= [`CAP`]).
    pub len: usize,
    /// How they are drawn.
    pub dist: Dist,
}

const fn r(len: usize, dist: Dist) -> RowSpec {
    RowSpec { len, dist }
}

/// The rows every single-row case walks. Lengths straddle the 16-lane chunking (15, 16, 17, 33)
/// and the 256-value block fold (257), and include the degenerate length 1.
pub const ROWS: &[RowSpec] = &[
    r(1, Dist::Moderate),
    r(3, Dist::Moderate),
    r(15, Dist::Moderate),
    r(16, Dist::Moderate),
    r(17, Dist::Moderate),
    r(33, Dist::Moderate),
    r(100, Dist::Moderate),
    r(257, Dist::Moderate),
    r(1, Dist::Wide),
    r(3, Dist::Wide),
    r(15, Dist::Wide),
    r(16, Dist::Wide),
    r(17, Dist::Wide),
    r(33, Dist::Wide),
    r(100, Dist::Wide),
    r(257, Dist::Wide),
    r(3, Dist::Ties),
    r(16, Dist::Ties),
    r(33, Dist::Ties),
    r(3, Dist::Huge),
    r(17, Dist::Huge),
    r(2, Dist::Extremes),
    r(5, Dist::Extremes),
    r(17, Dist::Extremes),
    r(4, Dist::Tiny),
    r(17, Dist::Tiny),
    r(3, Dist::Underflow),
    r(33, Dist::Underflow),
    r(1, Dist::PosInf(1)),
    r(17, Dist::PosInf(1)),
    r(5, Dist::PosInf(3)),
    r(33, Dist::PosInf(3)),
    r(17, Dist::SomeNegInf),
    r(40, Dist::SomeNegInf),
    r(1, Dist::AllNegInf),
    r(17, Dist::AllNegInf),
    r(1, Dist::Nan),
    r(17, Dist::Nan),
    r(16, Dist::NanInf),
];

/// The distributions of the rows of a batch, cycled row by row, so one batch mixes ordinary rows
/// with rows that are NaN, all `-inf`, `+inf` or underflowing (each must affect only itself).
pub const BATCH_DISTS: &[Dist] = &[
    Dist::Moderate,
    Dist::Nan,
    Dist::Wide,
    Dist::AllNegInf,
    Dist::PosInf(1),
    Dist::Ties,
    Dist::SomeNegInf,
    Dist::Underflow,
    Dist::Extremes,
];

fn pick<F: Float>(rng: &mut SplitMix64, set: &[F]) -> F {
    set.get(rng.below(set.len())).copied().unwrap_or(F::ZERO)
}

fn set_at<F: Float>(rng: &mut SplitMix64, out: &mut [F], v: F) {
    let i = rng.below(out.len());
    if let Some(o) = out.get_mut(i) {
        *o = v;
    }
}

/// Fills `out` with values drawn from `dist`.
///
/// # Examples
///
/// ```
/// use softmax_suite::{fill, Dist, SplitMix64};
/// let mut row = [0.0f32; 17];
/// fill(&mut SplitMix64::new(1), Dist::Nan, &mut row);
/// assert_eq!(row.iter().filter(|v| v.is_nan()).count(), 1);
/// ```
pub fn fill<F: Elem>(rng: &mut SplitMix64, dist: Dist, out: &mut [F]) {
    match dist {
        Dist::Moderate => {
            for v in out.iter_mut() {
                *v = F::from_f64(rng.range(-8.0, 8.0));
            }
        }
        Dist::Wide => {
            for v in out.iter_mut() {
                let c = rng.below(10);
                *v = F::from_f64(if c < 5 {
                    rng.range(-4.0, 4.0)
                } else if c < 8 {
                    rng.range(-120.0, 120.0)
                } else {
                    let k = rng.below(40) as u64;
                    let scale = f64::from_bits((1023 + k) << 52);
                    let sign = if rng.below(2) == 0 { 1.0 } else { -1.0 };
                    sign * scale * (1.0 + rng.unit())
                });
            }
        }
        Dist::Ties => {
            let set = [-3.0, -1.0, 0.0, 0.5, 2.0].map(F::from_f64);
            for v in out.iter_mut() {
                *v = pick(rng, &set);
            }
            if let [first, .., last] = out {
                *first = F::TWO;
                *last = F::TWO;
            }
        }
        Dist::Huge => {
            for v in out.iter_mut() {
                *v = F::MAX * F::from_f64(rng.range(-1.0, 1.0));
            }
        }
        Dist::Extremes => {
            let set = [F::MAX, -F::MAX, F::ZERO, F::ONE, -F::ONE];
            for v in out.iter_mut() {
                *v = pick(rng, &set);
            }
        }
        Dist::Tiny => {
            for v in out.iter_mut() {
                *v = match rng.below(5) {
                    0 => F::MIN_POSITIVE,
                    1 => -F::ZERO,
                    2 => F::ZERO,
                    3 => -(F::SUBNORMAL * F::from_usize(rng.below(1000) + 1)),
                    _ => F::SUBNORMAL * F::from_usize(rng.below(1000) + 1),
                };
            }
        }
        Dist::Underflow => {
            let (lo, hi) = F::UNDERFLOW;
            for v in out.iter_mut() {
                *v = F::from_f64(-rng.range(lo, hi));
            }
            set_at(rng, out, F::ZERO);
        }
        Dist::PosInf(k) => {
            fill(rng, Dist::Moderate, out);
            for _ in 0..k {
                set_at(rng, out, F::INFINITY);
            }
        }
        Dist::SomeNegInf => {
            fill(rng, Dist::Moderate, out);
            for v in out.iter_mut() {
                if rng.below(3) == 0 {
                    *v = F::NEG_INFINITY;
                }
            }
        }
        Dist::AllNegInf => {
            for v in out.iter_mut() {
                *v = F::NEG_INFINITY;
            }
        }
        Dist::Nan => {
            fill(rng, Dist::Moderate, out);
            set_at(rng, out, F::NAN);
        }
        Dist::NanInf => {
            fill(rng, Dist::Moderate, out);
            set_at(rng, out, F::INFINITY);
            set_at(rng, out, F::NEG_INFINITY);
            set_at(rng, out, F::NAN);
        }
    }
}

/// Fills a keep-mask: each entry kept with probability 7/10.
///
/// # Examples
///
/// ```
/// use softmax_suite::{fill_keep, SplitMix64};
/// let mut keep = [false; 100];
/// fill_keep(&mut SplitMix64::new(2), &mut keep);
/// assert!(keep.iter().any(|&k| k) && keep.iter().any(|&k| !k));
/// ```
pub fn fill_keep(rng: &mut SplitMix64, out: &mut [bool]) {
    for k in out.iter_mut() {
        *k = rng.below(10) < 7;
    }
}

/// Fills an additive mask: 0 (half), uniform on [−2, 2) (30 %), `-inf` (15 %), `+inf` (5 %).
///
/// # Examples
///
/// ```
/// use softmax_suite::{fill_bias, SplitMix64};
/// let mut bias = [0.0f64; 100];
/// fill_bias(&mut SplitMix64::new(2), &mut bias);
/// assert!(bias.iter().any(|&b| b == f64::NEG_INFINITY));
/// ```
pub fn fill_bias<F: Elem>(rng: &mut SplitMix64, out: &mut [F]) {
    for b in out.iter_mut() {
        let c = rng.below(20);
        *b = if c < 10 {
            F::ZERO
        } else if c < 16 {
            F::from_f64(rng.range(-2.0, 2.0))
        } else if c < 19 {
            F::NEG_INFINITY
        } else {
            F::INFINITY
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_fit_the_buffers() {
        assert!(ROWS.iter().all(|r| r.len >= 1 && r.len <= CAP));
        assert!(ROWS.iter().any(|r| r.len == CAP));
    }

    #[test]
    fn open_unit_is_open_and_exact() {
        for bits in [0, 1 << 41, u64::MAX, u64::MAX >> 1] {
            let u = <f32 as Elem>::open_unit(bits);
            assert!(u > 0.0 && u < 1.0);
            let u = <f64 as Elem>::open_unit(bits);
            assert!(u > 0.0 && u < 1.0);
        }
        // The extremes are the exact values (k + 1/2)·2^-23 and (k + 1/2)·2^-52.
        assert_eq!(<f32 as Elem>::open_unit(u64::MAX), 1.0 - 0.5 / 8_388_608.0);
        assert_eq!(
            <f64 as Elem>::open_unit(u64::MAX),
            1.0 - 0.5 / 4_503_599_627_370_496.0
        );
    }

    #[test]
    fn distributions_contain_what_they_promise() {
        let mut rng = SplitMix64::new(7);
        let mut row = [0.0f32; 40];
        fill(&mut rng, Dist::Underflow, &mut row);
        assert!(row.contains(&0.0));
        // Every other entry's exponential is a nonzero subnormal in f32.
        for &v in row.iter().filter(|&&v| v != 0.0) {
            let e = (v as f64).exp() as f32;
            assert!(e > 0.0 && e < f32::MIN_POSITIVE, "{v} -> {e}");
        }
        let mut row = [0.0f64; 40];
        fill(&mut rng, Dist::Underflow, &mut row);
        for &v in row.iter().filter(|&&v| v != 0.0) {
            let e = v.exp();
            assert!(e > 0.0 && e < f64::MIN_POSITIVE, "{v} -> {e}");
        }
        fill(&mut rng, Dist::Tiny, &mut row);
        assert!(row.iter().any(|v| v.is_subnormal()));
        fill(&mut rng, Dist::Ties, &mut row[..2]);
        assert_eq!(row[..2], [2.0, 2.0]);
        fill(&mut rng, Dist::AllNegInf, &mut row);
        assert!(row.iter().all(|&v| v == f64::NEG_INFINITY));
        fill(&mut rng, Dist::NanInf, &mut row);
        assert!(row.iter().any(|v| v.is_nan()));
    }
}
