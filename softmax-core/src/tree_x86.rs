//! The AVX2 copy of the last step of every compensated sum: the tree that combines the lanes of
//! [`Totals`](crate::kernel) (each lane a sum `s` and its compensation `c`) into one pair, for
//! f32 totals of 16 or 32 lanes.
//!
//! Not a different algorithm: each level adds lane `i` and lane `i + h` by TwoSum (lower lane
//! first) and its error joins the sum of the two compensations, in the portable loop's order, so
//! the same bits. LLVM compiled every portable formulation of this tree into two-lane pieces with
//! the sums of each level spilled and reloaded, about 220 instructions for 32 lanes; here it is
//! about 50 (five levels of eight vector operations and two shuffles). It runs once per row of
//! every softmax-family kernel and once per block of attention's online softmax, where it was
//! the largest fixed cost (`harness/tests/dispatch_levels.rs` compares the bits at every level,
//! the `bits` fixture pins them).
//!
//! The max pass of the same kernels ([`scan`]: `kernel::scan`'s sixteen lane maxima and NaN flags
//! and their pairwise tree) has its AVX2 and AVX-512 copies here too, for the same reason: LLVM
//! compiled the portable loop into two-lane `vmaxps` on 64-bit loads, eight instructions per
//! chunk of sixteen where two do (one with AVX-512).
//!
//! The `unsafe` of the tree and the scan is confined to this file: the calls of the
//! `#[target_feature]` copies, made only after the dispatch has found AVX2 (AVX-512 for the
//! 512-bit scan; [`simd::known`]), and the scan's loads.
#![allow(unsafe_code)]

use crate::simd::{self, Level};
use core::arch::x86_64::{
    __m128, __m256, _mm256_add_ps, _mm256_castps256_ps128, _mm256_cmp_ps, _mm256_extractf128_ps,
    _mm256_loadu_ps, _mm256_max_ps, _mm256_movemask_ps, _mm256_or_ps, _mm256_set1_ps,
    _mm256_setzero_ps, _mm256_sub_ps, _mm_add_ps, _mm_cvtss_f32, _mm_max_ps, _mm_max_ss,
    _mm_movehdup_ps, _mm_movehl_ps, _mm_sub_ps, _CMP_UNORD_Q,
};
use core::arch::x86_64::{
    __mmask16, _mm256_castpd_ps, _mm512_castps512_ps256, _mm512_castps_pd, _mm512_cmp_ps_mask,
    _mm512_extractf64x4_pd, _mm512_loadu_ps, _mm512_max_ps, _mm512_set1_ps,
};

/// `(s[0], c[0])` after the tree of [`Totals::finish`](crate::kernel) over `s` and `c` (16 or 32
/// lanes each), or `None` when the CPU lacks AVX2 or the width is another.
#[inline(always)]
pub(crate) fn tree(s: &[f32], c: &[f32]) -> Option<(f32, f32)> {
    if simd::known() < Level::Avx2 {
        return None;
    }
    // SAFETY (both calls): the known level is AVX2 or above: the CPU was found to support
    // AVX2, and the OS to save the YMM registers.
    if let (Ok(s), Ok(c)) = (<&[f32; 32]>::try_from(s), <&[f32; 32]>::try_from(c)) {
        return Some(unsafe { tree32(s, c) });
    }
    if let (Ok(s), Ok(c)) = (<&[f32; 16]>::try_from(s), <&[f32; 16]>::try_from(c)) {
        return Some(unsafe { tree16(s, c) });
    }
    None
}

/// Eight lanes of one level: `(a + b, (ca + cb) + e)` with `e` the TwoSum error of `a + b`.
#[target_feature(enable = "avx2")]
#[inline]
fn level8(a: __m256, b: __m256, ca: __m256, cb: __m256) -> (__m256, __m256) {
    let s = _mm256_add_ps(a, b);
    let bb = _mm256_sub_ps(s, a);
    let e = _mm256_add_ps(_mm256_sub_ps(a, _mm256_sub_ps(s, bb)), _mm256_sub_ps(b, bb));
    (s, _mm256_add_ps(_mm256_add_ps(ca, cb), e))
}

/// [`level8`] on four lanes (the upper lanes of the result are not used).
#[target_feature(enable = "avx2")]
#[inline]
fn level4(a: __m128, b: __m128, ca: __m128, cb: __m128) -> (__m128, __m128) {
    let s = _mm_add_ps(a, b);
    let bb = _mm_sub_ps(s, a);
    let e = _mm_add_ps(_mm_sub_ps(a, _mm_sub_ps(s, bb)), _mm_sub_ps(b, bb));
    (s, _mm_add_ps(_mm_add_ps(ca, cb), e))
}

/// The 8-lane sums `s`, `c` down to lane 0: lanes `i, i + 4`, then `i, i + 2`, then `i, i + 1`.
#[target_feature(enable = "avx2")]
#[inline]
fn tree8(s: __m256, c: __m256) -> (f32, f32) {
    let (s, c) = level4(
        _mm256_castps256_ps128(s),
        _mm256_extractf128_ps::<1>(s),
        _mm256_castps256_ps128(c),
        _mm256_extractf128_ps::<1>(c),
    );
    // Lanes 2, 3 moved down to 0, 1.
    let (s, c) = level4(s, _mm_movehl_ps(s, s), c, _mm_movehl_ps(c, c));
    // Lane 1 moved down to 0.
    let (s, c) = level4(s, _mm_movehdup_ps(s), c, _mm_movehdup_ps(c));
    (_mm_cvtss_f32(s), _mm_cvtss_f32(c))
}

/// Lanes `i .. i + 8` of `x` (zeros if out of range, which no caller asks for: the checks are
/// on constants and compile away).
#[target_feature(enable = "avx2")]
#[inline]
fn load<const N: usize>(x: &[f32; N], i: usize) -> __m256 {
    if i + 8 <= N {
        // SAFETY: lanes `i .. i + 8` lie in `x`; `loadu` has no alignment requirement.
        unsafe { _mm256_loadu_ps(x.as_ptr().add(i)) }
    } else {
        _mm256_setzero_ps()
    }
}

#[target_feature(enable = "avx2")]
#[inline]
fn tree16(s: &[f32; 16], c: &[f32; 16]) -> (f32, f32) {
    let (s, c) = level8(load(s, 0), load(s, 8), load(c, 0), load(c, 8));
    tree8(s, c)
}

#[target_feature(enable = "avx2")]
#[inline]
fn tree32(s: &[f32; 32], c: &[f32; 32]) -> (f32, f32) {
    // Lanes i, i + 16 (two registers of eight each), then i, i + 8.
    let (s0, c0) = level8(load(s, 0), load(s, 16), load(c, 0), load(c, 16));
    let (s1, c1) = level8(load(s, 8), load(s, 24), load(c, 8), load(c, 24));
    let (s, c) = level8(s0, s1, c0, c1);
    tree8(s, c)
}

/// `(max, nan)` of `kernel::scan_lanes` over an f32 row given as its chunks of sixteen and its
/// padded tail, or `None` when the CPU lacks AVX2. Lane `l` keeps `select(x > m, x, m)` over the
/// values `x` at `l mod 16` in order (`maxps(x, m)`: its first operand where greater, else the
/// second, NaN and equal zeros included), the lanes are combined pairwise as `tree` combines them
/// (lane `i` with `i + h`: `select(b > a, b, a)` = `maxps(b, a)`), and `nan` is whether any value
/// is NaN: the same bits as the portable loop.
#[inline(always)]
pub(crate) fn scan(
    chunks: impl Iterator<Item = [f32; 16]>,
    tail: Option<[f32; 16]>,
) -> Option<(f32, bool)> {
    let level = simd::known();
    if level >= Level::Avx512 {
        // SAFETY: the known level is AVX-512: the CPU supports AVX-512F (and AVX2), the OS
        // saves the ZMM and opmask state.
        return Some(unsafe { scan512(chunks, tail) });
    }
    if level < Level::Avx2 {
        return None;
    }
    // SAFETY: the known level is AVX2 or above (the CPU supports AVX2, the OS the YMM state).
    Some(unsafe { scan16(chunks, tail) })
}

/// [`scan16`] with the sixteen lanes in one 512-bit register and the NaN flags in an opmask:
/// half the instructions per chunk (one max, one compare and one mask OR), the same lanes and
/// the same tree, so the same bits.
#[target_feature(enable = "avx512f,avx2")]
#[inline]
fn scan512(chunks: impl Iterator<Item = [f32; 16]>, tail: Option<[f32; 16]>) -> (f32, bool) {
    let mut m = _mm512_set1_ps(f32::NEG_INFINITY);
    let mut nan: __mmask16 = 0;
    let mut step = |c: &[f32; 16]| {
        // SAFETY: `c` is sixteen floats; an unaligned load.
        let x = unsafe { _mm512_loadu_ps(c.as_ptr()) };
        m = _mm512_max_ps(x, m);
        nan |= _mm512_cmp_ps_mask::<_CMP_UNORD_Q>(x, x);
    };
    for c in chunks {
        step(&c);
    }
    if let Some(t) = tail {
        step(&t);
    }
    // Lanes 0–7 and 8–15 as two halves, then [`scan16`]'s tree from its first level on.
    let lo = _mm512_castps512_ps256(m);
    let hi = _mm256_castpd_ps(_mm512_extractf64x4_pd::<1>(_mm512_castps_pd(m)));
    let v = _mm256_max_ps(hi, lo);
    let w = _mm_max_ps(_mm256_extractf128_ps::<1>(v), _mm256_castps256_ps128(v));
    let x = _mm_max_ps(_mm_movehl_ps(w, w), w);
    let y = _mm_max_ss(_mm_movehdup_ps(x), x);
    (_mm_cvtss_f32(y), nan != 0)
}

#[target_feature(enable = "avx2")]
#[inline]
fn scan16(chunks: impl Iterator<Item = [f32; 16]>, tail: Option<[f32; 16]>) -> (f32, bool) {
    let mut lo = _mm256_set1_ps(f32::NEG_INFINITY);
    let mut hi = lo;
    let mut nan = _mm256_setzero_ps();
    let mut step = |c: &[f32; 16]| {
        let (a, b) = c.split_at(8);
        // SAFETY: `a` and `b` are eight floats each; unaligned loads.
        let (a, b) = unsafe { (_mm256_loadu_ps(a.as_ptr()), _mm256_loadu_ps(b.as_ptr())) };
        lo = _mm256_max_ps(a, lo);
        hi = _mm256_max_ps(b, hi);
        let unordered = _mm256_or_ps(
            _mm256_cmp_ps::<_CMP_UNORD_Q>(a, a),
            _mm256_cmp_ps::<_CMP_UNORD_Q>(b, b),
        );
        nan = _mm256_or_ps(nan, unordered);
    };
    for c in chunks {
        step(&c);
    }
    if let Some(t) = tail {
        step(&t);
    }
    // Lanes l and l + 8, then l and l + 4, l + 2, l + 1 (the higher lane first, as `tree`'s
    // `select(b > a, b, a)` with `b` the higher lane).
    let v = _mm256_max_ps(hi, lo);
    let w = _mm_max_ps(_mm256_extractf128_ps::<1>(v), _mm256_castps256_ps128(v));
    let x = _mm_max_ps(_mm_movehl_ps(w, w), w);
    let y = _mm_max_ss(_mm_movehdup_ps(x), x);
    (_mm_cvtss_f32(y), _mm256_movemask_ps(nan) != 0)
}
