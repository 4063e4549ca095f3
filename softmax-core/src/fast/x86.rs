//! The x86_64 kernels of the [`fast`](super) variant, at two vector widths: AVX2+FMA (a chunk of
//! 16 lanes in two 256-bit vectors) and AVX-512 (one 512-bit vector). Both are the portable
//! reference's steps (`passes.rs`) with the same lanes and order, each fused multiply-add the
//! hardware's (which rounds once, as [`fma`](super::fma) does in software), so the same bits at
//! both widths and on every target. The passes and their order are `passes::row`'s, shared; the
//! vector steps are written once here, over [`Wide`] (a chunk of 16 lanes in registers), and
//! instantiated at each width.
//!
//! Rows of one block or less (`n <= 256`) are computed eight at a time ([`eight`]): each row's
//! lane maxima and lane sums come from the same steps as alone, and the two lane trees (of the
//! maximum and of the compensated sums: lane `i` with `i + h` for h = 8, 4, 2, 1, the lower lane
//! first) run over the eight rows together, the rows side by side in the lanes of the vectors.
//! The same operations on the same values, so the same bits, with one tree for eight rows
//! instead of eight short horizontal chains, and one division.
//!
//! `softmax-core/tests/fast.rs` (release, in CI) compares both widths with the portable
//! reference, bit for bit, and `harness/tests/dispatch_levels.rs` (in release builds) the three
//! levels' results.
//!
//! The `unsafe` of the kernels is confined to this file. The vector steps are `unsafe fn`s whose
//! contract is that the CPU supports their width's level (and, for [`Wide::stream`], a 64-byte
//! aligned destination); they are reached only through
//! [`rows`], after [`simd::level`] has reported it (the [`Kernel`] implementation, [`X86`],
//! exists only there). The pointer-taking intrinsics (unaligned, masked and non-temporal loads
//! and stores) carry their own `// SAFETY:` notes.
#![allow(unsafe_code)]

use super::passes::{exp, row, Kernel, Op, BLOCK_CHUNKS, C, CHUNK, LN2_HI, LN2_LO, LOG2E, LOW, MB};
use crate::backend::{Backend, Poly, LN2_HI_F32, LN2_LO_F32, LN_R_F32, SQRT_HALF_BITS_F32};
use crate::chunks::{chunks, chunks_mut};
use crate::linalg::avx2::store8;
use crate::simd::{self, Level};
use core::arch::x86_64::{
    __m128, __m256, __m256i, __m512, __mmask16, _mm256_add_epi32, _mm256_add_ps, _mm256_and_si256,
    _mm256_blendv_ps, _mm256_castpd_ps, _mm256_castps256_ps128, _mm256_castps_si256,
    _mm256_castsi256_ps, _mm256_cmpgt_epi32, _mm256_cvtepi32_ps, _mm256_div_ps,
    _mm256_extractf128_ps, _mm256_fmadd_ps, _mm256_fnmadd_ps, _mm256_loadu_ps, _mm256_maskload_ps,
    _mm256_maskstore_ps, _mm256_max_ps, _mm256_mul_ps, _mm256_permute2f128_ps, _mm256_set1_epi32,
    _mm256_set1_ps, _mm256_setr_epi32, _mm256_shuffle_ps, _mm256_slli_epi32, _mm256_srli_epi32,
    _mm256_storeu_ps, _mm256_stream_ps, _mm256_sub_epi32, _mm256_sub_ps, _mm512_add_ps,
    _mm512_castps512_ps256, _mm512_castps_pd, _mm512_castps_si512, _mm512_castsi512_ps,
    _mm512_extractf64x4_pd, _mm512_fmadd_ps, _mm512_fnmadd_ps, _mm512_loadu_ps,
    _mm512_mask_loadu_ps, _mm512_mask_storeu_ps, _mm512_max_ps, _mm512_mul_ps, _mm512_set1_ps,
    _mm512_slli_epi32, _mm512_storeu_ps, _mm512_stream_ps, _mm512_sub_ps, _mm_add_ps,
    _mm_cvtss_f32, _mm_max_ps, _mm_movehdup_ps, _mm_movehl_ps, _mm_sfence, _mm_sub_ps,
};
use core::marker::PhantomData;

/// `op` over the rows of `n` values with the widest kernel the CPU runs, bit for bit as the
/// portable rows; `false` (nothing done) when the CPU runs below AVX2 or `n = 0`.
#[inline(always)]
pub(super) fn rows(op: Op, x: &[f32], y: &mut [f32], n: usize) -> bool {
    let level = simd::level();
    if n == 0 || level < Level::Avx2 {
        return false;
    }
    if level >= Level::Avx512 {
        // SAFETY: `level` never exceeds what the CPU and the OS support: AVX-512F (with AVX2
        // and FMA) and the ZMM state.
        unsafe { rows512(op, x, y, n) };
    } else {
        // SAFETY: as above: AVX2, FMA and the YMM state.
        unsafe { rows256(op, x, y, n) };
    }
    true
}

/// The AVX2+FMA kernel (chunks of two 256-bit vectors); called only after the level check.
#[target_feature(enable = "avx2,fma")]
fn rows256(op: Op, x: &[f32], y: &mut [f32], n: usize) {
    kernel_rows(X86::<Y2>(PhantomData), op, x, y, n);
}

/// The AVX-512 kernel (chunks of one 512-bit vector); called only after the level check.
#[target_feature(enable = "avx512f,avx2,fma")]
fn rows512(op: Op, x: &[f32], y: &mut [f32], n: usize) {
    kernel_rows(X86::<Z>(PhantomData), op, x, y, n);
}

// The chunk is 16 lanes: two 256-bit or one 512-bit vector (the loads and stores below rely on
// it).
const _: () = assert!(CHUNK == 16, "a chunk is 16 f32 lanes");

/// Rows of at most this many values (one block of the sums) go eight at a time.
const SHORT: usize = BLOCK_CHUNKS * CHUNK;
/// Rows per group of short rows: the eight lanes of a 256-bit vector.
const GROUP: usize = 8;

/// `op` over the rows of `n` values (`n > 0`; `y` as `fast::run` gives it): short rows in
/// groups of eight, the rest (and every row of a longer `n`) one by one.
#[inline(always)]
fn kernel_rows<W: Wide>(k: X86<W>, op: Op, x: &[f32], y: &mut [f32], n: usize) {
    let per = if op == Op::LogSumExp { 1 } else { n };
    // Whole groups of short rows first (none for longer rows).
    let groups = if n <= SHORT {
        x.len() / n.max(1) / GROUP
    } else {
        0
    };
    let (xcut, ycut) = (groups * GROUP * n, groups * GROUP * per);
    if xcut > x.len() || ycut > y.len() {
        // Never: `fast::batch` checked the lengths (this only removes the splits' panic paths).
        return;
    }
    let ((xg, x), (yg, y)) = (x.split_at(xcut), y.split_at_mut(ycut));
    for (xg, yg) in chunks(xg, GROUP * n).zip(chunks_mut(yg, GROUP * per)) {
        // SAFETY: `k` exists only after the level check.
        unsafe { eight(k, op, xg, yg, n) };
    }
    for (x, y) in chunks(x, n).zip(chunks_mut(y, per)) {
        row(k, op, x, y);
    }
}

/// Eight rows of `n <= SHORT` values (`x` holds `8n`, `y` 8 rows of output), each bit for bit
/// as `passes::row` computes it alone: its lane maxima and its lane sums by the same steps, the
/// lane trees of the eight rows side by side. A group with a row whose maximum is not finite
/// goes row by row (that row to the default kernel).
///
/// # Safety
///
/// The CPU supports `W`'s level.
#[inline(always)]
unsafe fn eight<W: Wide>(k: X86<W>, op: Op, x: &[f32], y: &mut [f32], n: usize) {
    let per = if op == Op::LogSumExp { 1 } else { n };
    let xs: [&[f32]; GROUP] = core::array::from_fn(|r| x.get(r * n..(r + 1) * n).unwrap_or(&[]));
    // The maximum's tree: the first level (lanes i, i + 8) per row, the rest together.
    let m = tree8(xs.map(|x| max_level8(lane_max::<W>(x))), |a, b| {
        _mm256_max_ps(a, b)
    });
    let ms = array8(m);
    if !ms.iter().all(|m| m.is_finite()) {
        for (x, y) in xs.into_iter().zip(chunks_mut(y, per)) {
            row(k, op, x, y);
        }
        return;
    }
    let zero = W::splat(0.0);
    let mut sums = [Sums { s: zero, c: zero }; GROUP];
    for (((s, x), y), &m) in sums.iter_mut().zip(xs).zip(chunks_mut(y, per)).zip(&ms) {
        let y = if op == Op::Softmax { Some(y) } else { None };
        sum_exp(s, x, m, y, &[]);
    }
    // The sums' tree: the first level per row, the rest together; then `s + c` rounded once.
    let (s, c) = tree8(sums.map(|t| sums_level8(t)), |l, u| combine(l, u));
    let totals = _mm256_add_ps(s, c);
    match op {
        Op::Softmax => {
            let inv = array8(_mm256_div_ps(_mm256_set1_ps(1.0), totals));
            for (y, &f) in chunks_mut(y, per).zip(&inv) {
                mul::<W>(y, f);
            }
        }
        // `Poly`'s ln of the eight totals side by side: the bits of eight calls.
        Op::LogSoftmax => {
            let ls = ln8(totals);
            for (((x, y), &m), &l) in xs.into_iter().zip(chunks_mut(y, per)).zip(&ms).zip(&ls) {
                log_out::<W>(x, y, m, l);
            }
        }
        Op::LogSumExp => {
            let ls = ln8(totals);
            for ((o, &m), &l) in y.iter_mut().zip(&ms).zip(&ls) {
                *o = m + l;
            }
        }
    }
}

/// `Poly`'s f32 ln of eight totals, lane by lane the bits of `<Poly as Backend<f32>>::ln`
/// (`backend/poly.rs`): the same reduction to `2^k·m` with `m` in [√½, √2) and the same
/// operations in the same order, on eight lanes. Its range is the positive normal numbers
/// (every total of a row with a finite maximum is at least 1: the maximum's own term is
/// `e^0 = 1`); a lane outside it (none, unless a NaN made the sum NaN) is computed again by the
/// scalar function.
#[target_feature(enable = "avx2")]
#[inline]
fn ln8(x: __m256) -> [f32; 8] {
    let ix = _mm256_castps_si256(x);
    let iy = _mm256_add_epi32(
        ix,
        _mm256_set1_epi32((0x3f80_0000 - SQRT_HALF_BITS_F32) as i32),
    );
    let k = _mm256_sub_epi32(_mm256_srli_epi32::<23>(iy), _mm256_set1_epi32(127));
    let m = _mm256_add_epi32(
        _mm256_and_si256(iy, _mm256_set1_epi32(0x007f_ffff)),
        _mm256_set1_epi32(SQRT_HALF_BITS_F32 as i32),
    );
    let one = _mm256_set1_ps(1.0);
    let f = _mm256_sub_ps(_mm256_castsi256_ps(m), one);
    let s = _mm256_div_ps(f, _mm256_add_ps(_mm256_set1_ps(2.0), f));
    let z = _mm256_mul_ps(s, s);
    let c = |v: f32| _mm256_set1_ps(v);
    let r = _mm256_mul_ps(
        z,
        _mm256_add_ps(
            c(LN_R_F32[0]),
            _mm256_mul_ps(
                z,
                _mm256_add_ps(c(LN_R_F32[1]), _mm256_mul_ps(z, c(LN_R_F32[2]))),
            ),
        ),
    );
    let hfsq = _mm256_mul_ps(_mm256_mul_ps(c(0.5), f), f);
    let dk = _mm256_cvtepi32_ps(k);
    let inner = _mm256_add_ps(
        _mm256_mul_ps(s, _mm256_add_ps(hfsq, r)),
        _mm256_mul_ps(dk, c(LN2_LO_F32)),
    );
    let l = _mm256_add_ps(
        _mm256_mul_ps(dk, c(LN2_HI_F32)),
        _mm256_sub_ps(f, _mm256_sub_ps(hfsq, inner)),
    );
    let mut out = array8(l);
    for (o, &v) in out.iter_mut().zip(&array8(x)) {
        if !(f32::MIN_POSITIVE..f32::INFINITY).contains(&v) {
            *o = <Poly as Backend<f32>>::ln(v);
        }
    }
    out
}

/// The eight lanes of `v`.
#[target_feature(enable = "avx2")]
#[inline]
fn array8(v: __m256) -> [f32; 8] {
    let mut a = [0.0; 8];
    store8(&mut a, v);
    a
}

/// A lane tree's step of the compensated sums, at any width: lower lanes `l` and upper lanes
/// `u` (each a sum and its compensation), TwoSum of the sums, its error joining the
/// compensations (`(c_l + c_u) + e`), as `Totals::finish` combines lanes. [`finish`] and
/// [`tree8`] both take their steps from here.
///
/// # Safety
///
/// The CPU supports `T`'s level.
#[inline(always)]
unsafe fn combine<T: Arith>(l: (T, T), u: (T, T)) -> (T, T) {
    let (s, e) = two_sum(l.0, u.0);
    (s, l.1.add(u.1).add(e))
}

/// The first level of the maximum's lane tree (lanes `i` and `i + 8`, the lower first), shared
/// by one row ([`hmax`]) and eight ([`eight`]).
///
/// # Safety
///
/// The CPU supports `W`'s level.
#[inline(always)]
unsafe fn max_level8<W: Wide>(m: W) -> __m256 {
    let (m0, m1) = m.halves();
    _mm256_max_ps(m0, m1)
}

/// The first level of the sums' lane tree (lanes `i` and `i + 8`), shared by one row
/// ([`finish`]) and eight ([`eight`]).
///
/// # Safety
///
/// The CPU supports `W`'s level.
#[inline(always)]
unsafe fn sums_level8<W: Wide>(t: Sums<W>) -> (__m256, __m256) {
    let ((s0, s1), (c0, c1)) = (t.s.halves(), t.c.halves());
    combine((s0, c0), (s1, c1))
}

/// One 8-lane vector of each of eight rows (or a pair of them, sums and compensations), moved
/// between the steps of [`tree8`] by the same lane selections.
trait Lanes8: Copy {
    /// `_mm256_permute2f128_ps::<IMM>` (of each vector of the pair).
    ///
    /// # Safety
    ///
    /// The CPU supports AVX.
    unsafe fn permute<const IMM: i32>(a: Self, b: Self) -> Self;
    /// `_mm256_shuffle_ps::<IMM>` likewise.
    ///
    /// # Safety
    ///
    /// The CPU supports AVX.
    unsafe fn shuffle<const IMM: i32>(a: Self, b: Self) -> Self;
}

impl Lanes8 for __m256 {
    #[target_feature(enable = "avx")]
    #[inline]
    unsafe fn permute<const IMM: i32>(a: Self, b: Self) -> Self {
        _mm256_permute2f128_ps::<IMM>(a, b)
    }
    #[target_feature(enable = "avx")]
    #[inline]
    unsafe fn shuffle<const IMM: i32>(a: Self, b: Self) -> Self {
        _mm256_shuffle_ps::<IMM>(a, b)
    }
}

impl Lanes8 for (__m256, __m256) {
    #[target_feature(enable = "avx")]
    #[inline]
    unsafe fn permute<const IMM: i32>(a: Self, b: Self) -> Self {
        (
            _mm256_permute2f128_ps::<IMM>(a.0, b.0),
            _mm256_permute2f128_ps::<IMM>(a.1, b.1),
        )
    }
    #[target_feature(enable = "avx")]
    #[inline]
    unsafe fn shuffle<const IMM: i32>(a: Self, b: Self) -> Self {
        (
            _mm256_shuffle_ps::<IMM>(a.0, b.0),
            _mm256_shuffle_ps::<IMM>(a.1, b.1),
        )
    }
}

/// The lane tree (lanes `i` and `i + h` for h = 4, 2, 1, `op(lower, upper)`) of eight rows'
/// 8-lane vectors at once: lane `r` of the result is row `r`'s. Each step puts the lower and
/// the upper lanes of its rows side by side in two vectors, so `op` meets the values the
/// one-row tree gives it, in the same order.
///
/// * h = 4: rows `r` and `r + 4` in one vector (their 128-bit halves);
/// * h = 2: rows `r, r + 1 | r + 4, r + 5` (r = 0, 2), two lanes each;
/// * h = 1: rows `0, 1, 2, 3 | 4, 5, 6, 7`, one lane each.
///
/// # Safety
///
/// The CPU supports AVX.
#[inline(always)]
unsafe fn tree8<T: Lanes8>(v: [T; GROUP], op: impl Fn(T, T) -> T) -> T {
    let [v0, v1, v2, v3, v4, v5, v6, v7] = v;
    let h4 = |a: T, b: T| op(T::permute::<0x20>(a, b), T::permute::<0x31>(a, b));
    let (w0, w1, w2, w3) = (h4(v0, v4), h4(v1, v5), h4(v2, v6), h4(v3, v7));
    let h2 = |a: T, b: T| op(T::shuffle::<0x44>(a, b), T::shuffle::<0xEE>(a, b));
    let (x0, x1) = (h2(w0, w1), h2(w2, w3));
    op(T::shuffle::<0x88>(x0, x1), T::shuffle::<0xDD>(x0, x1))
}

/// A chunk of 16 lanes in registers (lane `i` is value `i` of the chunk), at one vector width.
/// Each method is one or two instructions per vector of the chunk.
///
/// # Safety
///
/// Every method requires that the CPU supports the implementor's level.
trait Wide: Arith {
    /// Every lane `v`.
    unsafe fn splat(v: f32) -> Self;
    /// A whole chunk.
    unsafe fn load(c: &[f32; CHUNK]) -> Self;
    /// The ragged end of a row (`t.len() < CHUNK`), `-inf` beyond its end (as
    /// `passes::padded_chunks` pads it), loaded with masks instead of copied.
    unsafe fn load_tail(t: &[f32]) -> Self;
    /// Stores the chunk.
    unsafe fn store(self, o: &mut [f32; CHUNK]);
    /// Stores the first `o.len()` (< CHUNK) lanes.
    unsafe fn store_tail(self, o: &mut [f32]);
    /// Stores the chunk with non-temporal stores; `o` is 64-byte aligned.
    unsafe fn stream(self, o: &mut [f32; CHUNK]);
    unsafe fn mul(self, b: Self) -> Self;
    /// `self > b ? self : b` per lane (so a NaN `self` gives `b`), as `passes::maxf`.
    unsafe fn max(self, b: Self) -> Self;
    /// `self·b + c`, rounded once.
    unsafe fn fmadd(self, b: Self, c: Self) -> Self;
    /// `c − self·b`, rounded once.
    unsafe fn fnmadd(self, b: Self, c: Self) -> Self;
    /// The bits of each lane shifted left by 23 (the exponent field).
    unsafe fn shl23(self) -> Self;
    /// Lanes 0–7 and 8–15.
    unsafe fn halves(self) -> (__m256, __m256);
}

/// The AVX2 chunk: two 256-bit vectors.
#[derive(Clone, Copy)]
struct Y2([__m256; 2]);

/// Lane masks of the first `len` lanes of the two vectors of a chunk (`len < CHUNK`).
#[target_feature(enable = "avx2")]
#[inline]
fn tail_masks(len: usize) -> [__m256i; 2] {
    let iota = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    core::array::from_fn(|j| {
        let k = len.saturating_sub(8 * j).min(8) as i32;
        _mm256_cmpgt_epi32(_mm256_set1_epi32(k), iota)
    })
}

impl Y2 {
    #[target_feature(enable = "avx2,fma")]
    #[inline]
    fn map2(self, b: Self, f: impl Fn(__m256, __m256) -> __m256) -> Self {
        let ([a0, a1], [b0, b1]) = (self.0, b.0);
        Y2([f(a0, b0), f(a1, b1)])
    }
}

impl Wide for Y2 {
    #[target_feature(enable = "avx2,fma")]
    #[inline]
    unsafe fn splat(v: f32) -> Self {
        Y2([_mm256_set1_ps(v); 2])
    }
    #[target_feature(enable = "avx2,fma")]
    #[inline]
    unsafe fn load(c: &[f32; CHUNK]) -> Self {
        // SAFETY: `c` is 16 floats: 8 at `c` and 8 at `c + 8`; `loadu` has no alignment
        // requirement.
        unsafe {
            Y2([
                _mm256_loadu_ps(c.as_ptr()),
                _mm256_loadu_ps(c.as_ptr().add(8)),
            ])
        }
    }
    #[target_feature(enable = "avx2,fma")]
    #[inline]
    unsafe fn load_tail(t: &[f32]) -> Self {
        let masks = tail_masks(t.len());
        let ninf = _mm256_set1_ps(f32::NEG_INFINITY);
        let mut v = [ninf; 2];
        for (j, (v, m)) in v.iter_mut().zip(masks).enumerate() {
            if let Some(part) = t.get(8 * j..).filter(|p| !p.is_empty()) {
                // SAFETY: the lanes `m` selects are the first `min(8, part.len())`, all inside
                // `part`; `maskload` touches no other lane.
                let x = unsafe { _mm256_maskload_ps(part.as_ptr(), m) };
                *v = _mm256_blendv_ps(ninf, x, _mm256_castsi256_ps(m));
            }
        }
        Y2(v)
    }
    #[target_feature(enable = "avx2,fma")]
    #[inline]
    unsafe fn store(self, o: &mut [f32; CHUNK]) {
        // SAFETY: `o` is 16 floats, as in `load`.
        unsafe {
            _mm256_storeu_ps(o.as_mut_ptr(), self.0[0]);
            _mm256_storeu_ps(o.as_mut_ptr().add(8), self.0[1]);
        }
    }
    #[target_feature(enable = "avx2,fma")]
    #[inline]
    unsafe fn store_tail(self, o: &mut [f32]) {
        let masks = tail_masks(o.len());
        for (j, (e, m)) in self.0.into_iter().zip(masks).enumerate() {
            if let Some(part) = o.get_mut(8 * j..).filter(|p| !p.is_empty()) {
                // SAFETY: as in `load_tail`: `maskstore` writes only the selected lanes, all
                // inside `part`.
                unsafe { _mm256_maskstore_ps(part.as_mut_ptr(), m, e) };
            }
        }
    }
    #[target_feature(enable = "avx2,fma")]
    #[inline]
    unsafe fn stream(self, o: &mut [f32; CHUNK]) {
        // SAFETY: `o` is 16 floats at a 64-byte boundary (the caller's contract): both halves
        // start at a 32-byte boundary, as `stream_ps` requires.
        unsafe {
            _mm256_stream_ps(o.as_mut_ptr(), self.0[0]);
            _mm256_stream_ps(o.as_mut_ptr().add(8), self.0[1]);
        }
    }
    #[target_feature(enable = "avx2,fma")]
    #[inline]
    unsafe fn mul(self, b: Self) -> Self {
        self.map2(b, |a, b| _mm256_mul_ps(a, b))
    }
    #[target_feature(enable = "avx2,fma")]
    #[inline]
    unsafe fn max(self, b: Self) -> Self {
        self.map2(b, |a, b| _mm256_max_ps(a, b))
    }
    #[target_feature(enable = "avx2,fma")]
    #[inline]
    unsafe fn fmadd(self, b: Self, c: Self) -> Self {
        let ([a0, a1], [b0, b1], [c0, c1]) = (self.0, b.0, c.0);
        Y2([_mm256_fmadd_ps(a0, b0, c0), _mm256_fmadd_ps(a1, b1, c1)])
    }
    #[target_feature(enable = "avx2,fma")]
    #[inline]
    unsafe fn fnmadd(self, b: Self, c: Self) -> Self {
        let ([a0, a1], [b0, b1], [c0, c1]) = (self.0, b.0, c.0);
        Y2([_mm256_fnmadd_ps(a0, b0, c0), _mm256_fnmadd_ps(a1, b1, c1)])
    }
    #[target_feature(enable = "avx2,fma")]
    #[inline]
    unsafe fn shl23(self) -> Self {
        Y2(self
            .0
            .map(|v| _mm256_castsi256_ps(_mm256_slli_epi32::<23>(_mm256_castps_si256(v)))))
    }
    #[target_feature(enable = "avx2,fma")]
    #[inline]
    unsafe fn halves(self) -> (__m256, __m256) {
        (self.0[0], self.0[1])
    }
}

/// The AVX-512 chunk: one 512-bit vector.
#[derive(Clone, Copy)]
struct Z(__m512);

/// The mask of the first `len` lanes (`len < CHUNK`).
#[inline(always)]
fn mask16(len: usize) -> __mmask16 {
    ((1u32 << len.min(CHUNK)) - 1) as __mmask16
}

impl Wide for Z {
    #[target_feature(enable = "avx512f,avx2,fma")]
    #[inline]
    unsafe fn splat(v: f32) -> Self {
        Z(_mm512_set1_ps(v))
    }
    #[target_feature(enable = "avx512f,avx2,fma")]
    #[inline]
    unsafe fn load(c: &[f32; CHUNK]) -> Self {
        // SAFETY: `c` is 16 floats; `loadu` has no alignment requirement.
        Z(unsafe { _mm512_loadu_ps(c.as_ptr()) })
    }
    #[target_feature(enable = "avx512f,avx2,fma")]
    #[inline]
    unsafe fn load_tail(t: &[f32]) -> Self {
        let ninf = _mm512_set1_ps(f32::NEG_INFINITY);
        // SAFETY: the mask selects the first `t.len()` lanes, all inside `t`; a masked load
        // reads (and faults on) no other lane, which keep `-inf`.
        Z(unsafe { _mm512_mask_loadu_ps(ninf, mask16(t.len()), t.as_ptr()) })
    }
    #[target_feature(enable = "avx512f,avx2,fma")]
    #[inline]
    unsafe fn store(self, o: &mut [f32; CHUNK]) {
        // SAFETY: `o` is 16 floats; `storeu` has no alignment requirement.
        unsafe { _mm512_storeu_ps(o.as_mut_ptr(), self.0) }
    }
    #[target_feature(enable = "avx512f,avx2,fma")]
    #[inline]
    unsafe fn store_tail(self, o: &mut [f32]) {
        // SAFETY: as in `load_tail`: a masked store writes only the first `o.len()` lanes.
        unsafe { _mm512_mask_storeu_ps(o.as_mut_ptr(), mask16(o.len()), self.0) }
    }
    #[target_feature(enable = "avx512f,avx2,fma")]
    #[inline]
    unsafe fn stream(self, o: &mut [f32; CHUNK]) {
        // SAFETY: `o` is 16 floats at a 64-byte boundary (the caller's contract), as
        // `stream_ps` requires.
        unsafe { _mm512_stream_ps(o.as_mut_ptr(), self.0) }
    }
    #[target_feature(enable = "avx512f,avx2,fma")]
    #[inline]
    unsafe fn mul(self, b: Self) -> Self {
        Z(_mm512_mul_ps(self.0, b.0))
    }
    #[target_feature(enable = "avx512f,avx2,fma")]
    #[inline]
    unsafe fn max(self, b: Self) -> Self {
        Z(_mm512_max_ps(self.0, b.0))
    }
    #[target_feature(enable = "avx512f,avx2,fma")]
    #[inline]
    unsafe fn fmadd(self, b: Self, c: Self) -> Self {
        Z(_mm512_fmadd_ps(self.0, b.0, c.0))
    }
    #[target_feature(enable = "avx512f,avx2,fma")]
    #[inline]
    unsafe fn fnmadd(self, b: Self, c: Self) -> Self {
        Z(_mm512_fnmadd_ps(self.0, b.0, c.0))
    }
    #[target_feature(enable = "avx512f,avx2,fma")]
    #[inline]
    unsafe fn shl23(self) -> Self {
        Z(_mm512_castsi512_ps(_mm512_slli_epi32::<23>(
            _mm512_castps_si512(self.0),
        )))
    }
    #[target_feature(enable = "avx512f,avx2,fma")]
    #[inline]
    unsafe fn halves(self) -> (__m256, __m256) {
        let hi = _mm256_castpd_ps(_mm512_extractf64x4_pd::<1>(_mm512_castps_pd(self.0)));
        (_mm512_castps512_ps256(self.0), hi)
    }
}

impl Arith for Y2 {
    #[target_feature(enable = "avx2,fma")]
    #[inline]
    unsafe fn add(self, b: Self) -> Self {
        self.map2(b, |a, b| _mm256_add_ps(a, b))
    }
    #[target_feature(enable = "avx2,fma")]
    #[inline]
    unsafe fn sub(self, b: Self) -> Self {
        self.map2(b, |a, b| _mm256_sub_ps(a, b))
    }
}

impl Arith for Z {
    #[target_feature(enable = "avx512f,avx2,fma")]
    #[inline]
    unsafe fn add(self, b: Self) -> Self {
        Z(_mm512_add_ps(self.0, b.0))
    }
    #[target_feature(enable = "avx512f,avx2,fma")]
    #[inline]
    unsafe fn sub(self, b: Self) -> Self {
        Z(_mm512_sub_ps(self.0, b.0))
    }
}

impl Arith for __m256 {
    #[target_feature(enable = "avx")]
    #[inline]
    unsafe fn add(self, b: Self) -> Self {
        _mm256_add_ps(self, b)
    }
    #[target_feature(enable = "avx")]
    #[inline]
    unsafe fn sub(self, b: Self) -> Self {
        _mm256_sub_ps(self, b)
    }
}

impl Arith for __m128 {
    #[target_feature(enable = "avx")]
    #[inline]
    unsafe fn add(self, b: Self) -> Self {
        _mm_add_ps(self, b)
    }
    #[target_feature(enable = "avx")]
    #[inline]
    unsafe fn sub(self, b: Self) -> Self {
        _mm_sub_ps(self, b)
    }
}

/// The additions of TwoSum, at every width.
///
/// # Safety
///
/// Both methods require that the CPU supports the implementor's level (AVX for the 128- and
/// 256-bit vectors).
trait Arith: Copy {
    unsafe fn add(self, b: Self) -> Self;
    unsafe fn sub(self, b: Self) -> Self;
}

/// TwoSum: `a + b` rounded, and its exact error.
///
/// # Safety
///
/// The CPU supports `T`'s level.
#[inline(always)]
unsafe fn two_sum<T: Arith>(a: T, b: T) -> (T, T) {
    let s = a.add(b);
    let bb = s.sub(a);
    (s, a.sub(s.sub(bb)).add(b.sub(bb)))
}

/// `fast::exp` on a chunk.
///
/// # Safety
///
/// The CPU supports `W`'s level.
#[inline(always)]
unsafe fn exp16<W: Wide>(d: W) -> W {
    let d = W::splat(LOW).max(d);
    let mb = W::splat(MB);
    let kf = d.fmadd(W::splat(LOG2E), mb);
    let nf = kf.sub(mb);
    let r = nf.fnmadd(W::splat(LN2_HI), d);
    let r = nf.fnmadd(W::splat(LN2_LO), r);
    let mut p = W::splat(C[4]);
    p = p.fmadd(r, W::splat(C[3]));
    p = p.fmadd(r, W::splat(C[2]));
    p = p.fmadd(r, W::splat(C[1]));
    p = p.fmadd(r, W::splat(C[0]));
    p = p.fmadd(r, W::splat(1.0));
    // kf's low bits are n + 127, in [0, 131]: shifted into the exponent field they make 2^n,
    // or 0 for n = −127.
    p.mul(kf.shl23())
}

/// The lane maxima of `x`'s chunks, the last padded with `-inf` (NaN entries skipped).
///
/// # Safety
///
/// The CPU supports `W`'s level.
#[inline(always)]
unsafe fn lane_max<W: Wide>(x: &[f32]) -> W {
    let (whole, tail) = x.as_chunks::<CHUNK>();
    let mut m = W::splat(f32::NEG_INFINITY);
    for c in whole {
        m = W::load(c).max(m);
    }
    if !tail.is_empty() {
        m = W::load_tail(tail).max(m);
    }
    m
}

/// `fast`'s lane tree of the maximum of one row: lanes `i` and `i + h` for h = 8, 4 (the
/// 128-bit halves), 2, 1; the lower lane first.
///
/// # Safety
///
/// The CPU supports `W`'s level.
#[inline(always)]
unsafe fn hmax<W: Wide>(m: W) -> f32 {
    let a = max_level8(m);
    let h = _mm_max_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps::<1>(a));
    let h = _mm_max_ps(h, _mm_movehl_ps(h, h));
    _mm_cvtss_f32(_mm_max_ps(h, _mm_movehdup_ps(h)))
}

/// Per-lane compensated totals.
#[derive(Clone, Copy)]
struct Sums<W> {
    s: W,
    c: W,
}

/// `Kernel::finish` of one row as the portable reference computes it: the same tree, each step
/// a TwoSum whose error joins the compensation, then `s + c` rounded once.
///
/// # Safety
///
/// The CPU supports `W`'s level.
#[inline(always)]
unsafe fn finish<W: Wide>(t: Sums<W>) -> f32 {
    let (s, c) = sums_level8(t);
    let lo = (_mm256_castps256_ps128(s), _mm256_castps256_ps128(c));
    let hi = (_mm256_extractf128_ps::<1>(s), _mm256_extractf128_ps::<1>(c));
    let (s, c) = combine(lo, hi);
    let (s, c) = combine((s, c), (_mm_movehl_ps(s, s), _mm_movehl_ps(c, c)));
    let (s, c) = combine((s, c), (_mm_movehdup_ps(s), _mm_movehdup_ps(c)));
    _mm_cvtss_f32(s) + _mm_cvtss_f32(c)
}

/// Folds a block's plain lane sums into the totals.
///
/// # Safety
///
/// The CPU supports `W`'s level.
#[inline(always)]
unsafe fn fold<W: Wide>(t: &mut Sums<W>, part: W) {
    let (s, e) = two_sum(t.s, part);
    t.s = s;
    t.c = t.c.add(e);
}

/// Maxima of `next`'s chunks, one chunk per call of `step` (so that the loads of the next
/// block interleave with the exps of this one), the rest at the end.
struct NextMax<'a, W> {
    chunks: core::slice::Iter<'a, [f32; CHUNK]>,
    tail: &'a [f32],
    mx: W,
}

impl<'a, W: Wide> NextMax<'a, W> {
    /// # Safety
    ///
    /// The CPU supports `W`'s level (as for every method).
    #[inline(always)]
    unsafe fn new(next: &'a [f32]) -> Self {
        let (whole, tail) = next.as_chunks::<CHUNK>();
        NextMax {
            chunks: whole.iter(),
            tail,
            mx: W::splat(f32::NEG_INFINITY),
        }
    }

    #[inline(always)]
    unsafe fn step(&mut self) {
        if let Some(c) = self.chunks.next() {
            self.mx = W::load(c).max(self.mx);
        }
    }

    #[inline(always)]
    unsafe fn finish(mut self) -> f32 {
        for c in self.chunks.by_ref() {
            self.mx = W::load(c).max(self.mx);
        }
        if !self.tail.is_empty() {
            self.mx = W::load_tail(self.tail).max(self.mx);
        }
        hmax(self.mx)
    }
}

/// `Kernel::sum_exp`: the exps of `x − r` in blocks of [`BLOCK_CHUNKS`] chunks, each chunk's
/// added to its lanes' block sums as it is made (and stored when `y` is given), the block sums
/// folded into the totals; the ragged end in the last block when it has room, else alone.
///
/// # Safety
///
/// The CPU supports `W`'s level.
#[inline(always)]
unsafe fn sum_exp<W: Wide>(
    sums: &mut Sums<W>,
    x: &[f32],
    r: f32,
    mut y: Option<&mut [f32]>,
    next: &[f32],
) -> f32 {
    let mv = W::splat(r);
    let (whole, tail) = x.as_chunks::<CHUNK>();
    let mut nm = NextMax::<W>::new(next);
    let mut acc = *sums;
    let mut blocks = whole.chunks(BLOCK_CHUNKS).peekable();
    let mut done = 0;
    while let Some(blk) = blocks.next() {
        let mut part = W::splat(0.0);
        match y.as_deref_mut().and_then(|y| y.get_mut(done * CHUNK..)) {
            Some(out) => {
                let (oc, _) = out.as_chunks_mut::<CHUNK>();
                for (c, o) in blk.iter().zip(oc) {
                    let e = exp16(W::load(c).sub(mv));
                    e.store(o);
                    part = part.add(e);
                }
            }
            // Without a next block (every row but the online pass's) the loop keeps no state
            // for it.
            None if next.is_empty() => {
                for c in blk {
                    part = part.add(exp16(W::load(c).sub(mv)));
                }
            }
            None => {
                for c in blk {
                    part = part.add(exp16(W::load(c).sub(mv)));
                    nm.step();
                }
            }
        }
        done += blk.len();
        // The ragged end joins the last block when that block has room.
        if blocks.peek().is_none() && blk.len() < BLOCK_CHUNKS && !tail.is_empty() {
            part = part.add(tail_exps(tail, mv, y.as_deref_mut(), done));
            fold(&mut acc, part);
            *sums = acc;
            return nm.finish();
        }
        fold(&mut acc, part);
    }
    if !tail.is_empty() {
        fold(&mut acc, tail_exps(tail, mv, y, done));
    }
    *sums = acc;
    nm.finish()
}

/// The exps of the ragged end (padded with `-inf`: their terms are 0), stored into `y` from
/// chunk `at` on when given.
///
/// # Safety
///
/// The CPU supports `W`'s level.
#[inline(always)]
unsafe fn tail_exps<W: Wide>(tail: &[f32], mv: W, y: Option<&mut [f32]>, at: usize) -> W {
    let e = exp16(W::load_tail(tail).sub(mv));
    if let Some(out) = y.and_then(|y| y.get_mut(at * CHUNK..)) {
        let n = out.len().min(tail.len());
        if let Some(o) = out.get_mut(..n) {
            e.store_tail(o);
        }
    }
    e
}

/// Rows at least this long (32 MiB of f32) write their output with non-temporal stores: it
/// cannot stay in the caches, and streaming it saves the read of every output line before its
/// write (4 of the 12 bytes per value of the online path's output pass).
const STREAM: usize = 1 << 23;

/// An output pass's function of each value, on a chunk and on one value (the ends of a row):
/// the same bits value by value. A trait rather than closures: its `#[inline(always)]` methods
/// are sure to be inlined into the kernel, where the vector steps' target features are on.
trait Pointwise<W> {
    /// # Safety
    ///
    /// The CPU supports `W`'s level.
    unsafe fn chunk(&self, v: W) -> W;
    fn one(&self, v: f32) -> f32;
}

/// `e^(x − r) · f`.
struct ExpMul<W> {
    r: f32,
    f: f32,
    rv: W,
    fv: W,
}

impl<W: Wide> Pointwise<W> for ExpMul<W> {
    #[inline(always)]
    unsafe fn chunk(&self, v: W) -> W {
        exp16(v.sub(self.rv)).mul(self.fv)
    }
    #[inline(always)]
    fn one(&self, v: f32) -> f32 {
        exp(v - self.r) * self.f
    }
}

/// `(x − r) − l`.
struct LogOut<W> {
    r: f32,
    l: f32,
    rv: W,
    lv: W,
}

impl<W: Wide> Pointwise<W> for LogOut<W> {
    #[inline(always)]
    unsafe fn chunk(&self, v: W) -> W {
        v.sub(self.rv).sub(self.lv)
    }
    #[inline(always)]
    fn one(&self, v: f32) -> f32 {
        (v - self.r) - self.l
    }
}

/// `y_i = f(x_i)` by chunks (the ends of the row one by one), with non-temporal stores when `y`
/// is at least [`STREAM`] long.
///
/// # Safety
///
/// The CPU supports `W`'s level.
#[inline(always)]
unsafe fn map<W: Wide>(x: &[f32], y: &mut [f32], f: impl Pointwise<W>) {
    // Values before the first 64-byte aligned one (none when not streaming).
    let head = if y.len() >= STREAM {
        y.as_ptr().align_offset(64).min(y.len())
    } else {
        0
    };
    let (yh, yb) = y.split_at_mut(head);
    let (xh, xb) = (x.get(..head).unwrap_or(&[]), x.get(head..).unwrap_or(&[]));
    for (o, &v) in yh.iter_mut().zip(xh) {
        *o = f.one(v);
    }
    let stream = head > 0 || yb.as_ptr().align_offset(64) == 0 && yb.len() >= STREAM;
    let (yc, yt) = yb.as_chunks_mut::<CHUNK>();
    let (xc, xt) = xb.as_chunks::<CHUNK>();
    if stream {
        // `yb` starts at a 64-byte boundary and its chunks are 64 bytes, as `stream` requires.
        for (o, v) in yc.iter_mut().zip(xc) {
            f.chunk(W::load(v)).stream(o);
        }
        // Orders the non-temporal stores before any later store of this thread.
        _mm_sfence();
    } else {
        for (o, v) in yc.iter_mut().zip(xc) {
            f.chunk(W::load(v)).store(o);
        }
    }
    for (o, &v) in yt.iter_mut().zip(xt) {
        *o = f.one(v);
    }
}

/// `y_i ·= f` (the ragged end one by one: the same products).
///
/// # Safety
///
/// The CPU supports `W`'s level.
#[inline(always)]
unsafe fn mul<W: Wide>(y: &mut [f32], f: f32) {
    let fv = W::splat(f);
    let (yc, yt) = y.as_chunks_mut::<CHUNK>();
    for o in yc {
        W::load(o).mul(fv).store(o);
    }
    for o in yt {
        *o *= f;
    }
}

/// `y_i = (x_i − r) − l`.
///
/// # Safety
///
/// The CPU supports `W`'s level.
#[inline(always)]
unsafe fn log_out<W: Wide>(x: &[f32], y: &mut [f32], r: f32, l: f32) {
    let (rv, lv) = (W::splat(r), W::splat(l));
    map(x, y, LogOut { r, l, rv, lv });
}

/// The [`Kernel`] at width `W`. A value exists only inside [`rows256`] and [`rows512`], which
/// run only after `level` reported the width's level: holding one is the proof that calling
/// the vector steps is sound.
struct X86<W>(PhantomData<W>);

impl<W> Clone for X86<W> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<W> Copy for X86<W> {}

// SAFETY (every method): an `X86<W>` exists only after detection (see the type).
impl<W: Wide> Kernel for X86<W> {
    type Sums = Sums<W>;
    #[inline(always)]
    fn zero(self) -> Sums<W> {
        let z = unsafe { W::splat(0.0) };
        Sums { s: z, c: z }
    }
    #[inline(always)]
    fn max(self, x: &[f32]) -> f32 {
        unsafe { hmax(lane_max::<W>(x)) }
    }
    #[inline(always)]
    fn sum_exp(
        self,
        sums: &mut Sums<W>,
        x: &[f32],
        r: f32,
        y: Option<&mut [f32]>,
        next: &[f32],
    ) -> f32 {
        unsafe { sum_exp(sums, x, r, y, next) }
    }
    #[inline(always)]
    fn scale(self, sums: &mut Sums<W>, f: f32) {
        unsafe {
            let fv = W::splat(f);
            sums.s = sums.s.mul(fv);
            sums.c = sums.c.mul(fv);
        }
    }
    #[inline(always)]
    fn finish(self, sums: Sums<W>) -> f32 {
        unsafe { finish(sums) }
    }
    #[inline(always)]
    fn mul(self, y: &mut [f32], f: f32) {
        unsafe { mul::<W>(y, f) }
    }
    #[inline(always)]
    fn exp_mul(self, x: &[f32], y: &mut [f32], r: f32, f: f32) {
        unsafe {
            let (rv, fv) = (W::splat(r), W::splat(f));
            map(x, y, ExpMul { r, f, rv, fv });
        }
    }
    #[inline(always)]
    fn log_out(self, x: &[f32], y: &mut [f32], r: f32, l: f32) {
        unsafe { log_out::<W>(x, y, r, l) }
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::{ln8, Backend, Poly};
    use crate::simd::{self, Level};
    use core::arch::x86_64::_mm256_loadu_ps;

    /// `ln8` gives `Poly`'s scalar ln bit for bit on every lane: every f32 in [1, 512) (the
    /// totals of rows of up to 256 values lie in [1, 257)), and every 61st f32 bit pattern
    /// (zeros, subnormals, normals, infinities, NaNs of both signs), eight at a time.
    #[test]
    fn ln8_equals_poly_ln_lane_by_lane() {
        if simd::detected() < Level::Avx2 {
            std::println!("no AVX2 on this CPU: ln8 not compared");
            return;
        }
        let specials = [
            0u32,
            0x8000_0000,
            1,
            0x007f_ffff,
            0x0080_0000,
            0x7f80_0000,
            0x3f80_0000,
        ];
        let totals = 1.0f32.to_bits()..512.0f32.to_bits();
        let mut it = totals
            .chain((0..=u32::MAX).step_by(61))
            .chain(specials)
            .peekable();
        let mut checked = 0u64;
        while it.peek().is_some() {
            let x: [f32; 8] = core::array::from_fn(|_| f32::from_bits(it.next().unwrap_or(0)));
            // SAFETY: the CPU has AVX2 (checked above); `x` is 8 floats.
            let got = unsafe { ln8(_mm256_loadu_ps(x.as_ptr())) };
            for (&v, &g) in x.iter().zip(&got) {
                let want = <Poly as Backend<f32>>::ln(v);
                assert!(
                    g.to_bits() == want.to_bits() || (g.is_nan() && want.is_nan()),
                    "ln({v:e}): {g:e} on eight lanes, {want:e} alone"
                );
                checked += 1;
            }
        }
        assert!(checked > 145_000_000);
    }
}
