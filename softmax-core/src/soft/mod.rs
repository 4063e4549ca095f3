//! f32 addition and multiplication in integer arithmetic, for Arm cores without a
//! floating-point unit (the Cortex-M0/M0+, `thumbv6m-none-eabi`; any Arm target with the
//! soft-float ABI), where the polynomial exp of [`Poly`](crate::backend::Poly) spends most of
//! its time.
//!
//! There every f32 `+` and `*` is a call into compiler-builtins, whose generic routines take
//! about 60–75 instructions per add and about 105 per multiply (it calls the 64-bit multiply
//! helper and a count-leading-zeros) on the Cortex-M0. The Thumb routines of `thumb` take about
//! 53 and 59 (measured in the softmax probe of `harness/cost`) and give the same bits: IEEE 754
//! round to nearest, ties to even, is one exact answer. They serve the common case only — both
//! operands normal or zero, the result normal — and pass everything else (infinities, NaNs,
//! subnormal operands or results, overflow) to the toolchain's routine, so the special cases
//! keep exactly the semantics they have everywhere else. The multiply forms the 48-bit
//! significand product from four 16×16-bit products (the M0's `MULS` keeps 32 bits); the add
//! aligns with a sticky bit ("jamming") and six guard bits, as Berkeley SoftFloat does.
//!
//! `add_bits` and `mul_bits` are the portable statement of the same steps: the assembly follows
//! them, the unit tests below check them against the host's hardware (every class of operand
//! pair, random pairs, exponent differences 0 to 40, cancellations, ties of both operations),
//! and on every other target [`f32_add`] and [`f32_mul`] run them. The on-target suite's case
//! `soft/ops` digests the three operations over the same classes of pairs on x86_64 (these
//! functions), the Cortex-M4F (these functions) and the Cortex-M0 (the assembly): equal
//! digests mean the assembly gave the hardware's bits on every pair.
//!
//! `Soft` wraps an f32 so that a formula written with operators runs on these routines;
//! `Arith` lets one generic function run on `f32` (the target's own arithmetic) or on `Soft` —
//! the same operations in the same order, so the same bits.
//!
//! Not part of the crate's API (hidden, no semver promise): public only for [`f32_add`],
//! [`f32_sub`] and [`f32_mul`], through which the on-target suite checks the routines.

#![deny(unsafe_code)]

#[cfg(soft_thumb)]
mod thumb;

use core::ops::{Add, Mul, Sub};

/// Whether f32 arithmetic is emulated on this target and [`Soft`]'s routines are the faster
/// choice: bare-metal Arm with the soft-float ABI (measured on the Cortex-M0: see the README's
/// embedded cost table). An Arm target with an operating system and the soft-float ABI may have
/// an FPU behind it (Android's `armv7-linux-androideabi`), and other FPU-less targets (RISC-V
/// without `F`) were not measured: they keep the toolchain's arithmetic. (A bare-metal
/// soft-float build given an FPU with `-C target-feature` still gets these routines: correct,
/// but slower than its hardware.)
pub(crate) const SOFT: bool = cfg!(soft_thumb);

/// The arithmetic a formula is evaluated in: `f32` (the target's own) or [`Soft`].
pub(crate) trait Arith:
    Copy + Add<Output = Self> + Sub<Output = Self> + Mul<Output = Self>
{
    /// Wraps a value.
    fn of(v: f32) -> Self;
    /// The value.
    fn get(self) -> f32;
    /// Whether this is the arithmetic of a core without an FPU (exact steps then pay to do in
    /// integer arithmetic).
    const SOFT: bool;
}

impl Arith for f32 {
    const SOFT: bool = false;
    #[inline(always)]
    fn of(v: f32) -> Self {
        v
    }
    #[inline(always)]
    fn get(self) -> f32 {
        self
    }
}

/// An f32 whose `+`, `-` and `*` run on [`add`] and [`mul`]: the same results as the f32
/// operators, bit for bit.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Soft(pub(crate) f32);

impl Arith for Soft {
    const SOFT: bool = true;
    #[inline(always)]
    fn of(v: f32) -> Self {
        Soft(v)
    }
    #[inline(always)]
    fn get(self) -> f32 {
        self.0
    }
}

impl Add for Soft {
    type Output = Soft;
    #[inline(always)]
    fn add(self, o: Soft) -> Soft {
        Soft(add(self.0, o.0))
    }
}

impl Sub for Soft {
    type Output = Soft;
    #[inline(always)]
    fn sub(self, o: Soft) -> Soft {
        Soft(sub(self.0, o.0))
    }
}

impl Mul for Soft {
    type Output = Soft;
    #[inline(always)]
    fn mul(self, o: Soft) -> Soft {
        Soft(mul(self.0, o.0))
    }
}

/// `a + b` as the crate's kernels compute it on this target: on Arm soft-float targets the
/// routine of this module, elsewhere the portable reference (the same bits as `a + b`).
///
/// # Examples
///
/// ```
/// assert_eq!(softmax_core::soft::f32_add(0.1, 0.2), 0.1f32 + 0.2);
/// ```
pub fn f32_add(a: f32, b: f32) -> f32 {
    add(a, b)
}

/// `a − b` as the crate's kernels compute it (see [`f32_add`]).
///
/// # Examples
///
/// ```
/// assert_eq!(softmax_core::soft::f32_sub(0.1, 0.2), 0.1f32 - 0.2);
/// ```
pub fn f32_sub(a: f32, b: f32) -> f32 {
    sub(a, b)
}

/// `a · b` as the crate's kernels compute it (see [`f32_add`]).
///
/// # Examples
///
/// ```
/// assert_eq!(softmax_core::soft::f32_mul(0.1, 0.2), 0.1f32 * 0.2);
/// ```
pub fn f32_mul(a: f32, b: f32) -> f32 {
    mul(a, b)
}

const SIGN: u32 = 0x8000_0000;
const FRAC: u32 = 0x007f_ffff;
const HIDDEN: u32 = 0x0080_0000;

/// The biased exponent field.
#[inline(always)]
fn exp_field(bits: u32) -> u32 {
    (bits >> 23) & 0xff
}

#[cfg(soft_thumb)]
pub(crate) use thumb::{add, sub};

/// `a + b`, correctly rounded (ties to even): the same bits as the f32 operator.
#[cfg(not(soft_thumb))]
#[inline(never)]
pub(crate) fn add(a: f32, b: f32) -> f32 {
    add_bits(a.to_bits(), b.to_bits()).unwrap_or(a + b)
}

/// `a − b` = `a + (−b)` (IEEE defines subtraction so; the sign flip is exact): the same bits as
/// the f32 operator.
#[cfg(not(soft_thumb))]
#[inline(never)]
pub(crate) fn sub(a: f32, b: f32) -> f32 {
    add_bits(a.to_bits(), b.to_bits() ^ SIGN).unwrap_or(a - b)
}

/// The sum's bits when both operands are zero or normal and the sum is zero or normal; `None`
/// otherwise (the caller then uses the toolchain's operation). The reference the assembly
/// follows (on its targets only the tests call it).
#[cfg_attr(soft_thumb, allow(dead_code))]
#[inline(always)]
fn add_bits(a: u32, b: u32) -> Option<f32> {
    // |a| >= |b| from here on.
    let (a, b) = if (a & !SIGN) < (b & !SIGN) {
        (b, a)
    } else {
        (a, b)
    };
    if b & !SIGN == 0 {
        // x + 0 = x for x ≠ 0; for two zeros the sum is -0 only when both are -0.
        return Some(f32::from_bits(if a & !SIGN == 0 { a & b } else { a }));
    }
    let (ea, eb) = (exp_field(a), exp_field(b));
    // a finite (and, being larger, normal if b is); b normal.
    if ea >= 0xff || eb == 0 {
        return None;
    }
    let d = ea - eb;
    // Significands with the hidden bit at bit 29: six guard bits below the last place.
    let ma = ((a & FRAC) | HIDDEN) << 6;
    let mut mb = ((b & FRAC) | HIDDEN) << 6;
    if d != 0 {
        // Shift right, jamming every bit shifted out into bit 0.
        mb = if d < 30 {
            (mb >> d) | u32::from(mb << (32 - d) != 0)
        } else {
            1
        };
    }
    let mut e = ea;
    let s = if (a ^ b) & SIGN == 0 {
        let s = ma + mb;
        if s >= 1 << 30 {
            e += 1;
            (s >> 1) | (s & 1)
        } else {
            s
        }
    } else {
        // |a| >= |b|, so no borrow; d <= 1 when more than one place cancels, and then the
        // shifted `mb` was exact.
        let mut s = ma - mb;
        if s == 0 {
            return Some(0.0);
        }
        while s < 1 << 29 {
            s <<= 1;
            e = e.wrapping_sub(1);
        }
        s
    };
    round_pack(a & SIGN, e, s >> 6, s & 0x3f, 0x20)
}

/// Packs `sign`, biased exponent `e` and the 24-bit significand `m` (hidden bit set) rounded by
/// the remainder `rem` below it (`half` is one half of the last place); `None` unless `e` is a
/// normal exponent. Rounding up may carry into the exponent, up to `+inf`, which is then the
/// correctly rounded result.
#[inline(always)]
fn round_pack(sign: u32, e: u32, m: u32, rem: u32, half: u32) -> Option<f32> {
    if e.wrapping_sub(1) >= 0xfe {
        return None;
    }
    let up = u32::from(rem > half || (rem == half && m & 1 != 0));
    Some(f32::from_bits(sign | (((e - 1) << 23) + m + up)))
}

/// `a · b`, correctly rounded (ties to even): the same bits as the f32 operator. On Arm
/// soft-float targets, the assembly routine of [`thumb`] (which follows [`mul_bits`]).
#[cfg(soft_thumb)]
pub(crate) use thumb::mul;

/// `a · b`, correctly rounded (ties to even): the same bits as the f32 operator.
#[cfg(not(soft_thumb))]
#[inline(never)]
pub(crate) fn mul(a: f32, b: f32) -> f32 {
    mul_bits(a.to_bits(), b.to_bits()).unwrap_or(a * b)
}

/// The product's bits when both operands are normal, or one is zero and the other finite, and
/// the product is zero or normal; `None` otherwise. The reference the assembly follows.
#[cfg_attr(soft_thumb, allow(dead_code))]
#[inline(always)]
fn mul_bits(a: u32, b: u32) -> Option<f32> {
    let sign = (a ^ b) & SIGN;
    let (ea, eb) = (exp_field(a), exp_field(b));
    if ea.wrapping_sub(1) >= 0xfe || eb.wrapping_sub(1) >= 0xfe {
        // A zero times a finite value is a zero with the sign of the product.
        let zero = (a & !SIGN == 0 && eb != 0xff) || (b & !SIGN == 0 && ea != 0xff);
        return if zero {
            Some(f32::from_bits(sign))
        } else {
            None
        };
    }
    let ma = (a & FRAC) | HIDDEN;
    let mb = (b & FRAC) | HIDDEN;
    // The 48-bit product P = hi·2^24 + lo from 12-bit halves (each partial product fits 24
    // bits, the middle sum 25).
    let (a1, a0) = (ma >> 12, ma & 0xfff);
    let (b1, b0) = (mb >> 12, mb & 0xfff);
    let mid = a1 * b0 + a0 * b1;
    let low = a0 * b0 + ((mid & 0xfff) << 12);
    let mut hi = a1 * b1 + (mid >> 12) + (low >> 24);
    let mut lo = low & 0xff_ffff;
    // P in [2^46, 2^48): hi in [2^22, 2^24). Normalise to hi in [2^23, 2^24).
    let mut e = ea + eb;
    if hi < 1 << 23 {
        hi = (hi << 1) | (lo >> 23);
        lo = (lo << 1) & 0xff_ffff;
    } else {
        e += 1;
    }
    // value = hi·2^(ea + eb − 276 + 24·[normalised]) ... as a biased exponent: e − 127.
    round_pack(sign, e.wrapping_sub(127), hi, lo, 0x80_0000)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small deterministic generator (Knuth's MMIX LCG, high half).
    struct Rng(u64);
    impl Rng {
        fn u32(&mut self) -> u32 {
            self.0 = self
                .0
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (self.0 >> 32) as u32
        }
    }

    fn same(got: f32, want: f32) -> bool {
        got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan())
    }

    /// Zero or normal.
    fn plain(v: f32) -> bool {
        v == 0.0 || v.is_normal()
    }

    fn check(a: f32, b: f32) {
        assert!(same(add(a, b), a + b), "{a:e} + {b:e}: {:e}", add(a, b));
        assert!(same(sub(a, b), a - b), "{a:e} - {b:e}: {:e}", sub(a, b));
        assert!(same(mul(a, b), a * b), "{a:e} * {b:e}: {:e}", mul(a, b));
        // The integer paths answer every case they claim (not the toolchain's fallback).
        let (ia, ib) = (a.to_bits(), b.to_bits());
        if plain(a) && plain(b) {
            if plain(a + b) {
                assert!(add_bits(ia, ib).is_some(), "{a:e} + {b:e} fell back");
            }
            if plain(a - b) {
                assert!(add_bits(ia, ib ^ SIGN).is_some(), "{a:e} - {b:e} fell back");
            }
            // (A product that rounds up to the smallest normal was below it: that falls back.)
            let p = a * b;
            if plain(p) && p.abs() != f32::MIN_POSITIVE && (p != 0.0 || a == 0.0 || b == 0.0) {
                assert!(mul_bits(ia, ib).is_some(), "{a:e} * {b:e} fell back");
            }
        }
    }

    /// Values of every class: zeros, subnormals, the normal range's ends, powers of two and
    /// their neighbours, infinities, NaN.
    fn specials() -> [f32; 22] {
        [
            0.0,
            -0.0,
            f32::from_bits(1),
            f32::from_bits(FRAC),
            f32::MIN_POSITIVE,
            f32::from_bits(HIDDEN + 1),
            -f32::MIN_POSITIVE,
            1.0,
            -1.0,
            f32::from_bits(0x3f7f_ffff),
            f32::from_bits(0x3f80_0001),
            2.0,
            0.5,
            f32::MAX,
            -f32::MAX,
            f32::from_bits(0x7f7f_fffe),
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::NAN,
            1.5e-38,
            3.0e38,
            -7.5,
        ]
    }

    #[test]
    fn every_class_pair() {
        for a in specials() {
            for b in specials() {
                check(a, b);
            }
        }
    }

    #[test]
    fn random_bits() {
        let mut r = Rng(1);
        let n = option_env!("SOFTMAX_SOFT_PAIRS").map_or(Ok(2_000_000), str::parse::<u64>);
        for _ in 0..n.unwrap_or(2_000_000) {
            check(f32::from_bits(r.u32()), f32::from_bits(r.u32()));
        }
    }

    /// Operands with exponents a given distance apart (0 to 40), both signs, random
    /// significands: the alignment, the sticky bit and cancellation; exponents near both ends
    /// of the range: overflow and results near the subnormals.
    #[test]
    fn exponent_differences() {
        let mut r = Rng(2);
        for d in 0..=40u32 {
            for _ in 0..20_000 {
                let ea = 1 + r.u32() % 254;
                let eb = ea.saturating_sub(d).max(1);
                let a = (r.u32() & (SIGN | FRAC)) | (ea << 23);
                let b = (r.u32() & (SIGN | FRAC)) | (eb << 23);
                check(f32::from_bits(a), f32::from_bits(b));
                check(f32::from_bits(b), f32::from_bits(a));
            }
        }
    }

    /// Near cancellations (b within a few ulps of −a), ties of the add (b half an ulp of a),
    /// significands with few bits (exact products, product ties), and products near the ends of
    /// the exponent range.
    #[test]
    fn cancellations_ties_and_short_significands() {
        let mut r = Rng(3);
        for _ in 0..500_000 {
            let a = f32::from_bits(r.u32() & 0x7fff_ffff);
            if !a.is_finite() {
                continue;
            }
            let k = (r.u32() % 9) as i32 - 4;
            let b = f32::from_bits((a.to_bits() as i32 + k) as u32);
            check(a, -b);
            check(-a, b);
            // b = ulp(a)/2 · (1 + small): ties and their neighbours.
            let ea = exp_field(a.to_bits());
            if ea > 25 {
                let half = ((ea - 24) << 23) | (r.u32() % 3);
                check(a, f32::from_bits(half));
                check(a, -f32::from_bits(half));
            }
            // Short significands (k1 and k2 leading bits, hidden bits included): products
            // exact, or of 25 or 26 bits (ties and their neighbours).
            let k1 = 1 + r.u32() % 24;
            let k2 = (1 + r.u32() % 26).saturating_sub(k1).clamp(1, 24);
            let sa = r.u32() & (0x7fff_ffff << (24 - k1));
            let sb = r.u32() & (0xffff_ffff << (24 - k2));
            check(f32::from_bits(sa), f32::from_bits(sb));
            // Exponent sums at the edges of the normal range.
            let eb = (254 + 127 - ea.min(254)).clamp(1, 254) as i32 + (r.u32() % 5) as i32 - 2;
            let eb = eb.clamp(1, 254) as u32;
            let b = (r.u32() & (SIGN | FRAC)) | (eb << 23);
            check(a, f32::from_bits(b));
            let eb = (127 + 1 - ea as i32 + (r.u32() % 5) as i32 - 2).clamp(1, 254) as u32;
            let b = (r.u32() & (SIGN | FRAC)) | (eb << 23);
            check(a, f32::from_bits(b));
        }
    }

    /// The operands the polynomial exp meets: values in [-110, 3] against its constants.
    #[test]
    fn exp_operands() {
        let mut r = Rng(4);
        for _ in 0..1_000_000 {
            let x = -110.0 * (r.u32() as f32 / u32::MAX as f32) + 3.0;
            let y = f32::from_bits(r.u32() % 0x3f80_0000);
            check(x, core::f32::consts::LOG2_E);
            check(x, 12_582_912.0 + 191.0);
            check(x, y);
            check(1.0, y);
            check(y, -y * 0.75);
        }
    }
}
