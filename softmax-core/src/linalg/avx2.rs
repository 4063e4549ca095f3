//! The AVX2 copies of the f32 matrix products [`matmul_nt`](super::within::matmul_nt) (the
//! scores of attention, the logits of a linear layer) and [`matmul_nn`](super::within::matmul_nn)
//! (attention's value product). They are not a different algorithm: every element is the
//! portable loop's sequence of roundings (no fused multiply-add; the 16 lanes of a dot product
//! combined in the same pairwise tree), only scheduled by hand, so the same bits. LLVM
//! scalarised every portable formulation of several dot products sharing their loads and kept
//! the running sums of a column block in memory; here several dot products share their loads,
//! the lane trees of four or eight dot products are combined together, and two or four rows of
//! a value product share their loads. `softmax-core/tests/products.rs` (release, in CI)
//! compares their bits with the portable loops, `harness/tests/dispatch_levels.rs` (release)
//! at every level.
//!
//! The kernels are generic over the element type of `B` ([`Lane8`]): f32, or a stored format
//! of [`stored`](crate::stored) (int8 with a scale per row, f16, bf16) whose values are formed
//! in registers, eight at a time, exactly as [`Operand::load`] forms them one at a time (an
//! exact conversion, and for int8 the one f32 product `q·s`); the rest of each kernel is the
//! f32 kernel's, so a product over stored rows has the bits of the portable loop over them.
//!
//! On CPUs with AVX-512F, the score product takes the rows of `A` eight at a time first when
//! `k` is a multiple of 16 (every type but f16) ([`kernel_nt8`]: sixteen 512-bit running sums, eight rows against two
//! rows of `B`, and the sixteen lane trees combined in one transposing tree, [`tree16`]):
//! attention's query tile meets each key once, 66–67 against 52 GFLOP/s on its 8 × 128 × 64 tile
//! on a Zen 4. Rows of up to 128 values are first copied to cache-line-aligned [`Lines`]
//! (0.0162 to 0.0141 ns per multiply-add on that tile on a Zen 5, where the rows were not
//! aligned). f32 rows of up to 128 values go sixteen at a time before that ([`kernel_nt16`]:
//! the sixteen rows transposed once, so a vector holds one value of every row, and each value
//! of `B` broadcast into it; a dot product's lanes are separate vectors, combined by the lane
//! tree with vertical additions, and the empty `asm!` blocks of [`settle`] keep LLVM from
//! computing several lanes' products at once and spilling them). The value product takes the
//! rows of `C` four at a time where it has 64 columns or a multiple ([`row4`], AVX-512 only),
//! each load of `B` serving four rows.
//!
//! The `unsafe` of the products is confined to this file: the loads and stores of the
//! intrinsics, and the calls of the `#[target_feature]` kernels, made only after
//! [`simd::level`] has reported AVX2 (detected with the OS support for its registers).
#![allow(unsafe_code)]

use super::portable::scale;
use super::Operand;
use crate::simd::{self, Level};
use core::arch::x86_64::{
    __m128i, __m256, _mm256_add_ps, _mm256_and_ps, _mm256_castps256_ps128, _mm256_castsi256_ps,
    _mm256_cmpgt_epi32, _mm256_cvtepi32_ps, _mm256_cvtepi8_epi32, _mm256_cvtepu16_epi32,
    _mm256_cvtph_ps, _mm256_extractf128_ps, _mm256_loadu_ps, _mm256_mul_ps, _mm256_permute2f128_ps,
    _mm256_set1_epi32, _mm256_set1_ps, _mm256_setr_epi32, _mm256_setzero_ps, _mm256_shuffle_ps,
    _mm256_slli_epi32, _mm256_storeu_ps, _mm_cvtss_f32, _mm_loadl_epi64, _mm_loadu_si128,
    _mm_movehdup_ps,
};
use core::arch::x86_64::{
    __m256i, __m512, _mm256_castpd_ps, _mm256_loadu_si256, _mm512_add_ps, _mm512_castps512_ps128,
    _mm512_castps512_ps256, _mm512_castps_pd, _mm512_castsi512_ps, _mm512_cvtepi32_ps,
    _mm512_cvtepi8_epi32, _mm512_cvtepu16_epi32, _mm512_cvtph_ps, _mm512_extractf32x4_ps,
    _mm512_extractf64x4_pd, _mm512_loadu_ps, _mm512_maskz_mov_ps, _mm512_mul_ps, _mm512_set1_ps,
    _mm512_setzero_ps, _mm512_shuffle_f32x4, _mm512_shuffle_ps, _mm512_slli_epi32,
    _mm512_storeu_ps, _mm_castps_pd, _mm_cvtsd_f64, _mm_unpackhi_pd,
};
use core::arch::x86_64::{
    __mmask16, _mm512_load_ps, _mm512_mask_storeu_ps, _mm512_store_ps, _mm512_unpackhi_ps,
    _mm512_unpacklo_ps,
};
use core::arch::x86_64::{
    _mm512_castpd_ps, _mm512_loadu_pd, _mm512_permutex2var_pd, _mm512_set1_pd, _mm512_setr_epi64,
    _mm512_setzero_pd, _mm512_shuffle_f64x2, _mm512_store_pd, _mm512_unpackhi_pd,
    _mm512_unpacklo_pd, _mm_prefetch, _mm_storeu_ps, _MM_HINT_T0,
};
use half::{bf16, f16};

/// An element type of `B` the kernels read eight at a time: f32 as it is, a stored format
/// converted in registers ([`Operand::load`] for eight values at once, bit for bit).
pub(crate) trait Lane8: Operand<f32> {
    /// The eight values `x[i].load(s)`.
    ///
    /// # Safety
    ///
    /// The CPU must support AVX2 (callers are `#[target_feature(enable = "avx2,f16c")]` kernels,
    /// into which this is inlined).
    unsafe fn load8(x: &[Self; 8], s: Self::Scale) -> __m256;

    /// Whether the kernels take the AVX-512 copies for this type where the CPU has them: int8
    /// and bf16, whose conversions then take half the instructions (f32 and f16 keep the AVX2
    /// kernels, measured as fast or faster, except for [`ROWS_WIDE`](Self::ROWS_WIDE) and, for
    /// every type but f16, the score product's eight rows at a time, [`kernel_nt8`]).
    const WIDE: bool;

    /// Whether a single row of `A` (a decoding query's two products), and value products of 64
    /// columns or more, take the AVX-512 copies for this type although it is not
    /// [`WIDE`](Self::WIDE): f32 (measured faster there on a Zen 4: 40 against 35 GFLOP/s for
    /// the decoding query's scores, 46 against 41 for its values, 74 against 66 for a prefill
    /// tile's values at dv = 128; on a Zen 5, whose pipes are 512 bits wide, a prefill tile's
    /// values at dv = 64 in one pass of 64 columns took 0.0126 against 0.0243 ns per
    /// multiply-add), not f16 (its single row measured slower there: 16.5 against 14.2 ns per
    /// key for the decoder over an f16 cache).
    const ROWS_WIDE: bool;

    /// The sixteen values `x[i].load(s)`.
    ///
    /// # Safety
    ///
    /// The CPU must support AVX-512F (callers are the AVX-512 copies of the kernels).
    unsafe fn load16(x: &[Self; 16], s: Self::Scale) -> __m512;

    /// The values as f32 if they are f32 (the score product of sixteen rows, [`kernel_nt16`],
    /// takes f32 only).
    #[inline(always)]
    fn as_f32s(_: &[Self]) -> Option<&[f32]> {
        None
    }

    /// Whether the score product of eight rows takes [`block8x2_pairs`] (f32 only: a stored
    /// format would convert each pair of values on its own, measured nowhere).
    const PAIRS: bool = false;

    /// The pair `x[0].load(s), x[1].load(s)` in every 64-bit lane of a vector.
    ///
    /// # Safety
    ///
    /// The CPU must support AVX-512F (callers are the AVX-512 copies of the kernels).
    #[inline(always)]
    unsafe fn pair(x: &[Self; 2], s: Self::Scale) -> __m512 {
        let bits = |v: f32| u64::from(v.to_bits());
        let both = bits(x[0].load(s)) | (bits(x[1].load(s)) << 32);
        _mm512_castpd_ps(_mm512_set1_pd(f64::from_bits(both)))
    }
}

impl Lane8 for f32 {
    const WIDE: bool = false;
    const ROWS_WIDE: bool = true;
    const PAIRS: bool = true;
    #[inline(always)]
    fn as_f32s(x: &[f32]) -> Option<&[f32]> {
        Some(x)
    }
    #[inline(always)]
    unsafe fn pair(x: &[f32; 2], _: ()) -> __m512 {
        // SAFETY: AVX-512F (the caller's contract); `x` is two floats, 8 bytes, read unaligned
        // as the bits of one double (one broadcast load).
        unsafe {
            let d = core::ptr::from_ref(x).cast::<f64>().read_unaligned();
            _mm512_castpd_ps(_mm512_set1_pd(d))
        }
    }
    #[inline(always)]
    unsafe fn load16(x: &[f32; 16], _: ()) -> __m512 {
        // SAFETY: AVX-512F (the caller's contract); `x` is 16 floats, unaligned load.
        unsafe { _mm512_loadu_ps(x.as_ptr()) }
    }
    #[inline(always)]
    unsafe fn load8(x: &[f32; 8], _: ()) -> __m256 {
        // SAFETY: AVX2 (the caller's contract); `x` is 8 floats, `loadu` has no alignment
        // requirement.
        unsafe { _mm256_loadu_ps(x.as_ptr()) }
    }
}

impl Lane8 for i8 {
    const WIDE: bool = true;
    const ROWS_WIDE: bool = false;
    #[inline(always)]
    unsafe fn load16(x: &[i8; 16], s: f32) -> __m512 {
        // SAFETY: AVX-512F (the caller's contract); `x` is 16 bytes, read by one unaligned
        // 128-bit load.
        unsafe {
            let q = _mm512_cvtepi8_epi32(_mm_loadu_si128(x.as_ptr().cast::<__m128i>()));
            _mm512_mul_ps(_mm512_cvtepi32_ps(q), _mm512_set1_ps(s))
        }
    }
    /// Sign-extended to i32, converted (exact: |q| <= 127), times the row's scale: `q·s`.
    #[inline(always)]
    unsafe fn load8(x: &[i8; 8], s: f32) -> __m256 {
        // SAFETY: AVX2 (the caller's contract); `x` is 8 bytes, the 64-bit load reads exactly
        // those, unaligned.
        unsafe {
            let q = _mm256_cvtepi8_epi32(_mm_loadl_epi64(x.as_ptr().cast::<__m128i>()));
            _mm256_mul_ps(_mm256_cvtepi32_ps(q), _mm256_set1_ps(s))
        }
    }
}

/// Eight 16-bit patterns, zero-extended to 32 bits.
#[inline(always)]
unsafe fn widen16<T>(x: &[T; 8]) -> core::arch::x86_64::__m256i {
    const { assert!(core::mem::size_of::<T>() == 2) };
    // SAFETY: AVX2 (the caller's contract); `x` is 8 values of 2 bytes (checked above): the
    // 128-bit unaligned load reads exactly them.
    unsafe { _mm256_cvtepu16_epi32(_mm_loadu_si128(x.as_ptr().cast::<__m128i>())) }
}

impl Lane8 for bf16 {
    const WIDE: bool = true;
    const ROWS_WIDE: bool = false;
    #[inline(always)]
    unsafe fn load16(x: &[bf16; 16], _: ()) -> __m512 {
        // SAFETY: AVX-512F (the caller's contract); `x` is 16 values of 2 bytes, read by one
        // unaligned 256-bit load.
        unsafe {
            let h = _mm512_cvtepu16_epi32(_mm256_loadu_si256(x.as_ptr().cast::<__m256i>()));
            _mm512_castsi512_ps(_mm512_slli_epi32::<16>(h))
        }
    }
    /// The top half of the f32's bits.
    #[inline(always)]
    unsafe fn load8(x: &[bf16; 8], _: ()) -> __m256 {
        // SAFETY: AVX2 (the caller's contract); `widen16` reads the 8 values.
        unsafe { _mm256_castsi256_ps(_mm256_slli_epi32::<16>(widen16(x))) }
    }
}

impl Lane8 for f16 {
    // Measured slower than the AVX2 copy on Zen 4 (16.5 against 14.2 ns per key at n = 4096,
    // d = 128: its 16-value `vcvtph2ps` is split in two there).
    const WIDE: bool = false;
    const ROWS_WIDE: bool = false;
    #[inline(always)]
    unsafe fn load16(x: &[f16; 16], _: ()) -> __m512 {
        // SAFETY: AVX-512F (the caller's contract; its `vcvtph2ps` on 16 values is AVX-512F);
        // `x` is 16 values of 2 bytes, read by one unaligned 256-bit load.
        unsafe { _mm512_cvtph_ps(_mm256_loadu_si256(x.as_ptr().cast::<__m256i>())) }
    }
    /// F16C's conversion: exact for every f16 (the same value as `Operand::load`).
    #[inline(always)]
    unsafe fn load8(x: &[f16; 8], _: ()) -> __m256 {
        // SAFETY: AVX2 and F16C (the caller's contract: the level that runs these kernels
        // requires both); `x` is 8 values of 2 bytes, read by one unaligned 128-bit load.
        unsafe { _mm256_cvtph_ps(_mm_loadu_si128(x.as_ptr().cast::<__m128i>())) }
    }
}
/// `C = alpha·(A·Bᵀ)` with the AVX2 kernel, as `portable::matmul_nt` computes the product (row
/// `j` of `B` read with `s[j]`), each element then multiplied by `alpha` (rounded once more;
/// in [`kernel_nt16`]'s registers, or over the rows the other kernels wrote); `false` (nothing
/// done) when the CPU runs below AVX2 or `k = 0`.
#[inline(always)]
pub(super) fn matmul_nt<U: Lane8>(
    a: &[f32],
    b: &[U],
    s: &[U::Scale],
    k: usize,
    c: &mut [f32],
    alpha: f32,
) -> bool {
    if simd::level() < Level::Avx2 || k == 0 {
        return false;
    }
    let (mut a, mut c) = (a, c);
    // Sixteen f32 rows of `A` at a time first (attention's query tiles of sixteen), then
    // eight at a time ...
    if let Some(bf) = U::as_f32s(b).filter(|_| simd::level() >= Level::Avx512) {
        // SAFETY: the level reports AVX-512F, AVX2 and F16C and the ZMM state.
        let done = unsafe { kernel_nt16(a, bf, k, c, alpha) };
        if !skip_rows(&mut a, &mut c, done, k, b.len() / k) {
            return false;
        }
        if a.is_empty() {
            return true;
        }
    }
    let done = matmul_nt_rest(a, b, s, k, c);
    if done && alpha != 1.0 {
        for x in c.iter_mut() {
            *x *= alpha;
        }
    }
    done
}

/// [`matmul_nt`]'s product after its rows of sixteen (unscaled).
#[inline(always)]
fn matmul_nt_rest<U: Lane8>(a: &[f32], b: &[U], s: &[U::Scale], k: usize, c: &mut [f32]) -> bool {
    let (mut a, mut c) = (a, c);
    // ... then eight rows of `A` at a time (attention's query tiles), then the rest below; for
    // every type but f16, whose 16-value conversion is slow on AVX-512 (see `WIDE`): its eight-row
    // block measured 21–28 GFLOP/s in some runs against 38–58 for the AVX2 kernel (8 × 128 keys,
    // d = 64 and 128; bf16 51–67 against 35–53).
    if (U::WIDE || U::ROWS_WIDE) && simd::level() >= Level::Avx512 {
        // SAFETY: the level reports AVX-512F, AVX2 and F16C and the ZMM state.
        let done = unsafe { kernel_nt8(a, b, s, k, c) };
        if !skip_rows(&mut a, &mut c, done, k, b.len() / k) {
            return false;
        }
        if a.is_empty() {
            return true;
        }
    }
    // A single f32 row (a decoding query's scores) takes the AVX-512 copy too: sixteen values
    // per load from a key stream that comes from L3.
    if (U::WIDE || (U::ROWS_WIDE && a.len() == k)) && simd::level() >= Level::Avx512 {
        // SAFETY: the level reports AVX-512F, AVX2 and F16C and the ZMM state.
        unsafe { kernel_nt_wide(a, b, s, k, c) };
    } else {
        // SAFETY: `level` never exceeds what the CPU and the OS support: AVX2 (with F16C,
        // which the level requires) and the YMM state.
        unsafe { kernel_nt(a, b, s, k, c) };
    }
    true
}

/// Moves `a` (rows of `k`) and `c` (rows of `n`) past their first `done` rows; `false` (never:
/// a kernel's `done` rows exist in both) if they are shorter, and the caller's portable loop
/// then redoes every row, with the same bits.
#[inline(always)]
fn skip_rows(a: &mut &[f32], c: &mut &mut [f32], done: usize, k: usize, n: usize) -> bool {
    match (
        done.checked_mul(k).and_then(|x| a.split_at_checked(x)),
        done.checked_mul(n)
            .and_then(|x| core::mem::take(c).split_at_mut_checked(x)),
    ) {
        (Some((_, a_rest)), Some((_, c_rest))) => {
            *a = a_rest;
            *c = c_rest;
            true
        }
        _ => false,
    }
}

/// `C (+)= A·B` with the AVX2 kernel, as `portable::matmul_nn` computes it; `false` (nothing
/// done) when the CPU runs below AVX2 or a dimension is 0.
#[inline(always)]
pub(super) fn matmul_nn<U: Lane8>(
    a: &[f32],
    b: &[U],
    s: &[U::Scale],
    (n, k): (usize, usize),
    c: &mut [f32],
    accumulate: bool,
) -> bool {
    if simd::level() < Level::Avx2 || n == 0 || k == 0 {
        return false;
    }
    // A single f32 row (a decoding query's weighted values) and f32 rows of 64 columns or more
    // take the AVX-512 copy too ([`Lane8::ROWS_WIDE`]): a single row keeps its 128 running sums
    // in eight registers there, where the AVX2 copy spills two, and pairs of rows take 64
    // columns per pass (eight 512-bit running sums) instead of 32. At dv = 64 the AVX2 copy
    // measured as fast on a Zen 4, whose AVX-512 operations run in two 256-bit halves, when
    // the AVX-512 copy's passes were 32 columns; a Zen 5 runs them whole, twice as fast.
    if (U::WIDE || (U::ROWS_WIDE && (a.len() == n || k >= 64))) && simd::level() >= Level::Avx512 {
        // SAFETY: as in `matmul_nt`.
        unsafe { kernel_nn_wide(a, b, s, n, k, c, accumulate) };
    } else {
        // SAFETY: as in `matmul_nt`.
        unsafe { kernel_nn(a, b, s, n, k, c, accumulate) };
    }
    true
}

/// Lanes of a dot product (`kernel::LANES`): two AVX2 vectors, `lo` = lanes 0..8.
const L: usize = crate::kernel::LANES;
const _: () = assert!(
    L == 16,
    "the kernels below hold a dot product in two vectors"
);
/// Rows of `B` per group in `matmul_nn` (the portable loop's: the same walk).
const GROUP: usize = super::portable::GROUP;

/// How far ahead a single row of `A` (a decoding query; also the odd last row of a product) asks
/// for the rows of `B` it is about to read from memory: `AHEAD` groups of four keys in the score product, `AHEAD` value rows in the
/// value product. A query over a 4096-key cache at d = 128 on a Zen 5: 11.6–12.7 ns per key
/// without, 11.2–11.4 with (interleaved runs; asking for the keys alone gave 11.2–12.3, and two
/// or eight groups ahead were within the noise of four).
const AHEAD: usize = 4;

/// Asks for the cache lines at every 64th byte of the `size_of_val(x)` bytes starting `dist`
/// bytes past `x` (`prefetcht0`: a hint; nothing is read, and an address past the end of a
/// buffer is harmless). Where the span does not start on a line, its last line is not asked
/// for (the next call's first is that line): rounding down to the line and asking for one line
/// more measured 12.3 against 11.2–11.4 ns per key for the decoder.
#[inline(always)]
fn prefetch_ahead<T>(x: &[T], dist: usize) {
    let p = x.as_ptr().cast::<i8>().wrapping_add(dist);
    for off in (0..core::mem::size_of_val(x)).step_by(64) {
        // SAFETY: SSE is part of x86_64's baseline; a prefetch reads nothing and cannot fault.
        unsafe { _mm_prefetch::<_MM_HINT_T0>(p.wrapping_add(off)) };
    }
}

#[target_feature(enable = "avx2")]
#[inline]
pub(crate) fn load8(x: &[f32; 8]) -> __m256 {
    // SAFETY: `x` is 8 floats; `loadu` has no alignment requirement.
    unsafe { _mm256_loadu_ps(x.as_ptr()) }
}

#[target_feature(enable = "avx2")]
#[inline]
pub(crate) fn store8(x: &mut [f32; 8], v: __m256) {
    // SAFETY: `x` is 8 floats; `storeu` has no alignment requirement.
    unsafe { _mm256_storeu_ps(x.as_mut_ptr(), v) }
}

/// The two halves of a chunk of 16, eight values each, read as f32 (row scale `s`).
#[target_feature(enable = "avx2,f16c")]
#[inline]
fn halves<U: Lane8>(x: &[U; L], s: U::Scale) -> (__m256, __m256) {
    match x.split_first_chunk::<8>() {
        Some((lo, rest)) => match rest.first_chunk::<8>() {
            // SAFETY: this function runs with AVX2 and F16C.
            Some(hi) => unsafe { (U::load8(lo, s), U::load8(hi, s)) },
            None => (_mm256_setzero_ps(), _mm256_setzero_ps()),
        },
        // Never: a chunk is 16 values.
        None => (_mm256_setzero_ps(), _mm256_setzero_ps()),
    }
}

/// The last `len mod 16` values of a row, padded with zeros to a whole chunk. A padding lane
/// adds `+0·+0 = +0` to its running sum, which changes nothing: a lane's sum starts at `+0`
/// and round-to-nearest never makes it `−0` (`lanes` sets B's padding lanes to `+0` after
/// their conversion, whatever the row's scale).
#[inline(always)]
fn padded<U: Copy + Default>(tail: &[U]) -> [U; L] {
    let mut p = [U::default(); L];
    for (d, &s) in p.iter_mut().zip(tail) {
        *d = s;
    }
    p
}

/// The pairwise lane tree of `portable::combine` for four dot products at once, from their
/// lanes after its first level (`x[i]` = lanes `l + l+8`, `l < 8`): then `l + l+4` (the two
/// 128-bit halves), `l + l+2`, `l + l+1`.
#[target_feature(enable = "avx2,f16c")]
#[inline]
fn combine4(x: [__m256; 4]) -> [f32; 4] {
    let y01 = _mm256_add_ps(
        _mm256_permute2f128_ps::<0x20>(x[0], x[1]),
        _mm256_permute2f128_ps::<0x31>(x[0], x[1]),
    );
    let y23 = _mm256_add_ps(
        _mm256_permute2f128_ps::<0x20>(x[2], x[3]),
        _mm256_permute2f128_ps::<0x31>(x[2], x[3]),
    );
    // y01 = [x0 (4 lanes) | x1 (4 lanes)], y23 likewise.
    let z = _mm256_add_ps(
        _mm256_shuffle_ps::<0x44>(y01, y23),
        _mm256_shuffle_ps::<0xEE>(y01, y23),
    );
    // z = [x0 (2), x2 (2) | x1 (2), x3 (2)].
    let w = _mm256_add_ps(
        _mm256_shuffle_ps::<0x88>(z, z),
        _mm256_shuffle_ps::<0xDD>(z, z),
    );
    // w = [r0, r2, r0, r2 | r1, r3, r1, r3].
    let lo = _mm256_castps256_ps128(w);
    let hi = _mm256_extractf128_ps::<1>(w);
    [
        _mm_cvtss_f32(lo),
        _mm_cvtss_f32(hi),
        _mm_cvtss_f32(_mm_movehdup_ps(lo)),
        _mm_cvtss_f32(_mm_movehdup_ps(hi)),
    ]
}

/// [`combine4`] for eight dot products, with the same lane tree for each. `x` holds them
/// in the order `[0, 4, 1, 5, 2, 6, 3, 7]` ([`spread`]), so that the result holds them in
/// order, ready to be stored as one vector.
#[target_feature(enable = "avx2,f16c")]
#[inline]
fn combine8(x: [__m256; 8]) -> __m256 {
    let half = |a: __m256, b: __m256| {
        _mm256_add_ps(
            _mm256_permute2f128_ps::<0x20>(a, b),
            _mm256_permute2f128_ps::<0x31>(a, b),
        )
    };
    let [x0, x1, x2, x3, x4, x5, x6, x7] = x;
    // y01 = [x0 (4 lanes) | x1 (4 lanes)], and so on.
    let (y01, y23, y45, y67) = (half(x0, x1), half(x2, x3), half(x4, x5), half(x6, x7));
    // z0 = [x0 (2), x2 (2) | x1 (2), x3 (2)]; z1 likewise for x4..x7.
    let z0 = _mm256_add_ps(
        _mm256_shuffle_ps::<0x44>(y01, y23),
        _mm256_shuffle_ps::<0xEE>(y01, y23),
    );
    let z1 = _mm256_add_ps(
        _mm256_shuffle_ps::<0x44>(y45, y67),
        _mm256_shuffle_ps::<0xEE>(y45, y67),
    );
    // [x0, x2, x4, x6 | x1, x3, x5, x7] = dot products 0..8 in order.
    _mm256_add_ps(
        _mm256_shuffle_ps::<0x88>(z0, z1),
        _mm256_shuffle_ps::<0xDD>(z0, z1),
    )
}

/// Dot products `0..8` reordered for [`combine8`].
#[inline(always)]
fn spread(x: [__m256; 8]) -> [__m256; 8] {
    let [x0, x1, x2, x3, x4, x5, x6, x7] = x;
    [x0, x4, x1, x5, x2, x6, x3, x7]
}

/// The `R × C = 4` dot products of rows `a[r]` with rows `b[c]` (all of one length), in the
/// order `r·C + c`. Each is `portable::dot` to the bit. Called only from the kernels (AVX2
/// and F16C; with `W`, AVX-512F too).
#[inline(always)]
fn dots<U: Lane8, const R: usize, const C: usize, const W: bool>(
    a: [&[f32]; R],
    b: [&[U]; C],
    s: [U::Scale; C],
) -> [f32; 4] {
    // SAFETY: the kernels this is inlined into run with AVX2 and F16C.
    unsafe { combine4(lanes_w::<U, R, C, W>(a, b, s)) }
}

/// [`lanes`], or with `W` its AVX-512 copy [`lanes512`] (the same bits). Called only from the
/// kernels (AVX2 and F16C; with `W`, AVX-512F too).
#[inline(always)]
fn lanes_w<U: Lane8, const R: usize, const C: usize, const W: bool>(
    a: [&[f32]; R],
    b: [&[U]; C],
    s: [U::Scale; C],
) -> [__m256; 4] {
    if W {
        // SAFETY: `W` only in the AVX-512 copies of the kernels.
        unsafe { lanes512::<U, R, C>(a, b, s) }
    } else {
        // SAFETY: the kernels run with AVX2 and F16C.
        unsafe { lanes::<U, R, C>(a, b, s) }
    }
}

/// [`lanes`] with one 16-lane vector per dot product: lanes `0..8` are `lanes`' `lo`, lanes
/// `8..16` its `hi`, each the same sequence of roundings, and the first level of the lane
/// tree adds the two halves as `lanes` does. Sixteen stored values converted per instruction.
#[target_feature(enable = "avx512f,avx2,f16c")]
#[inline]
fn lanes512<U: Lane8, const R: usize, const C: usize>(
    a: [&[f32]; R],
    b: [&[U]; C],
    s: [U::Scale; C],
) -> [__m256; 4] {
    let mut acc = [[_mm512_setzero_ps(); C]; R];
    let mut step = |xa: [&[f32; L]; R], xb: [&[U; L]; C], keep: u16| {
        // SAFETY: this function runs with AVX-512F.
        let va = xa.map(|x| unsafe { f32::load16(x, ()) });
        for (c, (xb, &sc)) in xb.iter().zip(s.iter()).enumerate() {
            // SAFETY: as above. Padding lanes (beyond `keep`) are set to +0 after conversion.
            let vb = _mm512_maskz_mov_ps(keep, unsafe { U::load16(xb, sc) });
            for (r, &av) in va.iter().enumerate() {
                acc[r][c] = _mm512_add_ps(acc[r][c], _mm512_mul_ps(av, vb));
            }
        }
    };
    let ac = a.map(|x| x.as_chunks::<L>());
    let bc = b.map(|x| x.as_chunks::<L>());
    let n = ac
        .iter()
        .map(|x| x.0.len())
        .chain(bc.iter().map(|x| x.0.len()))
        .min();
    for i in 0..n.unwrap_or(0) {
        let xa = ac.map(|x| x.0.get(i));
        let xb = bc.map(|x| x.0.get(i));
        if let (Some(xa), Some(xb)) = (all(xa), all(xb)) {
            step(xa, xb, u16::MAX);
        }
    }
    if ac.iter().any(|x| !x.1.is_empty()) {
        let pa = ac.map(|x| padded(x.1));
        let pb = bc.map(|x| padded(x.1));
        let kept = bc.first().map_or(0, |x| x.1.len()).min(16) as u32;
        let keep = ((1u32 << kept) - 1) as u16;
        step(pa.each_ref(), pb.each_ref(), keep);
    }
    let mut x = [_mm256_setzero_ps(); 4];
    for (r, acc) in acc.iter().enumerate() {
        for (c, &v) in acc.iter().enumerate() {
            if let Some(x) = x.get_mut(r * C + c) {
                let hi = _mm256_castpd_ps(_mm512_extractf64x4_pd::<1>(_mm512_castps_pd(v)));
                *x = _mm256_add_ps(_mm512_castps512_ps256(v), hi);
            }
        }
    }
    x
}

/// The lanes of the dot products of [`dots`] after the first level of their lane tree
/// (`l + l+8`), in the same order.
#[target_feature(enable = "avx2,f16c")]
#[inline]
fn lanes<U: Lane8, const R: usize, const C: usize>(
    a: [&[f32]; R],
    b: [&[U]; C],
    s: [U::Scale; C],
) -> [__m256; 4] {
    let zero = _mm256_setzero_ps();
    let mut lo = [[zero; C]; R];
    let mut hi = [[zero; C]; R];
    // `keep`: in the padded last chunk, the lanes that hold values; the others of B are set to
    // +0 after the conversion (a padding element read with a non-finite int8 scale would be
    // NaN, where the portable loop has no such lane at all).
    let mut step = |xa: [&[f32; L]; R], xb: [&[U; L]; C], keep: Option<(__m256, __m256)>| {
        let va = xa.map(|x| halves(x, ()));
        for (c, (xb, &sc)) in xb.iter().zip(s.iter()).enumerate() {
            let (mut bl, mut bh) = halves(xb, sc);
            if let Some((ml, mh)) = keep {
                bl = _mm256_and_ps(bl, ml);
                bh = _mm256_and_ps(bh, mh);
            }
            for (r, &(al, ah)) in va.iter().enumerate() {
                lo[r][c] = _mm256_add_ps(lo[r][c], _mm256_mul_ps(al, bl));
                hi[r][c] = _mm256_add_ps(hi[r][c], _mm256_mul_ps(ah, bh));
            }
        }
    };
    let ac = a.map(|x| x.as_chunks::<L>());
    let bc = b.map(|x| x.as_chunks::<L>());
    let n = ac
        .iter()
        .map(|x| x.0.len())
        .chain(bc.iter().map(|x| x.0.len()))
        .min();
    for i in 0..n.unwrap_or(0) {
        let xa = ac.map(|x| x.0.get(i));
        let xb = bc.map(|x| x.0.get(i));
        if let (Some(xa), Some(xb)) = (all(xa), all(xb)) {
            step(xa, xb, None);
        }
    }
    if ac.iter().any(|x| !x.1.is_empty()) {
        let pa = ac.map(|x| padded(x.1));
        let pb = bc.map(|x| padded(x.1));
        let kept = bc.first().map_or(0, |x| x.1.len()) as i32;
        let lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
        let mask = |m: i32| _mm256_castsi256_ps(_mm256_cmpgt_epi32(_mm256_set1_epi32(m), lane));
        step(
            pa.each_ref(),
            pb.each_ref(),
            Some((mask(kept), mask(kept - 8))),
        );
    }
    let mut x = [zero; 4];
    for (r, (lo, hi)) in lo.iter().zip(hi.iter()).enumerate() {
        for (c, (&l, &h)) in lo.iter().zip(hi.iter()).enumerate() {
            if let Some(x) = x.get_mut(r * C + c) {
                *x = _mm256_add_ps(l, h);
            }
        }
    }
    x
}

/// Rows of `A` per block of [`kernel_nt8`].
const QB: usize = 8;

/// The longest rows of `A` [`kernel_nt8`] copies to [`Lines`] (attention's head dimensions up
/// to 128: 4 KiB of stack).
const ALIGNED_K: usize = 128;

/// Eight rows of up to [`ALIGNED_K`] values, aligned to a 64-byte cache line. Where the rows of
/// `A` were not, the score product of attention's 8 × 128 × 64 tile took 0.0162 against
/// 0.0141 ns per multiply-add on a Zen 5 (each unaligned 512-bit load touches two lines).
#[repr(align(64))]
struct Lines([[f32; L]; QB * ALIGNED_K / L]);

/// `C = A·Bᵀ` for the first `8·⌊m/8⌋` rows of `A` (`a` `m × k`, `b` `n × k`, `c` `m × n`,
/// `k > 0`), on CPUs with AVX-512F; returns the number of rows done (none unless `k` is a
/// multiple of 16: a padded last chunk would cost the loop its bounds-free loads). Eight rows
/// of `A` take the rows of `B` two at a time ([`scores8`]: sixteen dot products in sixteen
/// 512-bit running sums, each chunk of `B` loaded and converted once for the eight rows), so
/// `B` streams through once per eight rows (attention's key block once per query tile, from
/// L2). f32 rows of up to 128 values go with their lane pairs interleaved
/// ([`block8x2_pairs`], [`tree_pairs`]: no lane moves before the lane tree's last level), the
/// others chunk by chunk ([`block8x2`], whose sixteen lane trees [`tree16`] combines with 30
/// shuffles per pair of rows of `B`: on a Zen 5, 0.0138–0.0141 ns per multiply-add on the 8 ×
/// 128 tile at d = 64 against 0.0121–0.0124 by pairs). An odd last row of `B` goes with
/// [`dots`]. Every element is `portable::dot` to the bit.
#[target_feature(enable = "avx512f,avx2,f16c")]
fn kernel_nt8<U: Lane8>(a: &[f32], b: &[U], sc: &[U::Scale], k: usize, c: &mut [f32]) -> usize {
    let Some(n) = b.len().checked_div(k) else {
        return 0;
    };
    let (Some(ma), Some(mc)) = (a.len().checked_div(k), c.len().checked_div(n)) else {
        return 0;
    };
    let groups = ma.min(mc) / QB;
    let (Some(ak), Some(cn)) = (k.checked_mul(QB), n.checked_mul(QB)) else {
        return 0;
    };
    if groups == 0 {
        // Fewer than eight rows (a decoding query): nothing here, and no 4 KiB of aligned lines
        // to clear.
        return 0;
    }
    if !k.is_multiple_of(L) {
        // Rows with a partial last chunk go to the other kernels (attention's head
        // dimensions are multiples of 16).
        return 0;
    }
    // Eight rows of up to `ALIGNED_K` values are read from a copy aligned to the cache lines:
    // the sixteen-value loads of `A` (eight of every ten loads of the inner loop) then never
    // straddle two lines.
    let mut lines = Lines([[0.0; L]; QB * ALIGNED_K / L]);
    let kc = k / L;
    for (a8, c8) in a.chunks_exact(ak).zip(c.chunks_exact_mut(cn)).take(groups) {
        // f32 rows with their lane pairs interleaved ([`pack_pairs`], [`block8x2_pairs`]): the
        // chunk count (1 to 8) fixed at compile time, so the loops unroll.
        let by_pairs = U::PAIRS && k <= ALIGNED_K && pack_pairs(a8, k, &mut lines) && {
            let lines = lines.0.as_chunks::<P>().0;
            macro_rules! by_pairs {
                ($($kc:literal)*) => {
                    match kc {
                        $($kc => match lines.first_chunk::<$kc>() {
                            Some(x) => {
                                scores8(b, sc, k, n, c8, &ByPairs(x));
                                true
                            }
                            None => false,
                        },)*
                        _ => false,
                    }
                };
            }
            by_pairs!(1 2 3 4 5 6 7 8)
        };
        if !by_pairs {
            // (Also where the packing could not run: never for the shapes checked above.)
            if k <= ALIGNED_K {
                for (line, x) in lines.0.iter_mut().zip(a8.as_chunks::<L>().0) {
                    *line = *x;
                }
            }
            let chunks: [&[[f32; L]]; QB] = if k <= ALIGNED_K {
                core::array::from_fn(|i| lines.0.get(i * kc..(i + 1) * kc).unwrap_or(&[]))
            } else {
                core::array::from_fn(|i| row(a8, i, k).as_chunks::<L>().0)
            };
            scores8(b, sc, k, n, c8, &ByChunks(chunks));
        }
        if n % 2 == 1 {
            let (b_last, j) = (row(b, n - 1, k), n - 1);
            let s = scale(sc, j);
            for (i, ap) in a8.chunks_exact(2 * k).enumerate() {
                let (a0, a1) = ap.split_at(k);
                let r = dots::<U, 2, 2, true>([a0, a1], [b_last, b_last], [s, s]);
                if let Some(x) = c8.get_mut(2 * i * n + j) {
                    *x = r[0];
                }
                if let Some(y) = c8.get_mut((2 * i + 1) * n + j) {
                    *y = r[2];
                }
            }
        }
    }
    groups * QB
}

/// Rows of `A` per block of [`kernel_nt16`].
const QT: usize = 16;

/// Rows of `B` per step of [`kernel_nt16`]: four keys' sixteen lanes at a time keep at most
/// 21 vectors live (four running sums, four pending values per level of the lane tree, one
/// line of `A`); two keys took 0.0122–0.0125 ns per multiply-add where four took 0.0108–0.0110,
/// six 0.0148 (spilled), on the 16 × 128 × 64 tile on a Zen 5.
const NK: usize = 4;

/// `KC` chunks of sixteen rows of `A`, transposed and aligned to cache lines: `x[t][l]` holds
/// value `16t + l` of each of the sixteen rows (vector lane `i` = row `i`).
#[repr(align(64))]
struct Columns<const KC: usize>([[[f32; L]; L]; KC]);

/// Sixteen result vectors of [`kernel_nt16`] (one per row of `B`), aligned to cache lines, on
/// their way to be transposed into rows of `C`.
#[repr(align(64))]
struct Held([[f32; L]; L]);

/// The 16×16 transpose of sixteen vectors: lane `j` of result `i` is lane `i` of `r[j]`. Four
/// rounds of sixteen shuffles (pairs of lanes, pairs of pairs, then 128-bit quarters twice).
#[target_feature(enable = "avx512f")]
#[inline]
fn transpose16(r: [__m512; L]) -> [__m512; L] {
    let pd = _mm512_castps_pd;
    let ps = _mm512_castpd_ps;
    // Lanes 4q + {0, 1} of rows 2i, 2i + 1 interleaved (`t[2i]`), and lanes 4q + {2, 3}.
    let mut t = [_mm512_setzero_ps(); L];
    for (t, r) in t
        .as_chunks_mut::<2>()
        .0
        .iter_mut()
        .zip(r.as_chunks::<2>().0)
    {
        *t = [
            _mm512_unpacklo_ps(r[0], r[1]),
            _mm512_unpackhi_ps(r[0], r[1]),
        ];
    }
    // `u[4i + c]`: in each quarter q, rows 4i..4i + 4 at lane 4q + c.
    let mut u = [_mm512_setzero_ps(); L];
    for (u, t) in u
        .as_chunks_mut::<4>()
        .0
        .iter_mut()
        .zip(t.as_chunks::<4>().0)
    {
        *u = [
            ps(_mm512_unpacklo_pd(pd(t[0]), pd(t[2]))),
            ps(_mm512_unpackhi_pd(pd(t[0]), pd(t[2]))),
            ps(_mm512_unpacklo_pd(pd(t[1]), pd(t[3]))),
            ps(_mm512_unpackhi_pd(pd(t[1]), pd(t[3]))),
        ];
    }
    // Lane `4q + c` of every row: quarter q of u[c], u[4 + c], u[8 + c], u[12 + c].
    let mut v = [_mm512_setzero_ps(); L];
    for c in 0..4 {
        let [x0, x1, x2, x3] = [u[c], u[4 + c], u[8 + c], u[12 + c]];
        let (y0, y1) = (
            _mm512_shuffle_f32x4::<0x88>(x0, x1),
            _mm512_shuffle_f32x4::<0xDD>(x0, x1),
        );
        let (y2, y3) = (
            _mm512_shuffle_f32x4::<0x88>(x2, x3),
            _mm512_shuffle_f32x4::<0xDD>(x2, x3),
        );
        v[c] = _mm512_shuffle_f32x4::<0x88>(y0, y2);
        v[8 + c] = _mm512_shuffle_f32x4::<0xDD>(y0, y2);
        v[4 + c] = _mm512_shuffle_f32x4::<0x88>(y1, y3);
        v[12 + c] = _mm512_shuffle_f32x4::<0xDD>(y1, y3);
    }
    v
}

/// An optimisation barrier between the lanes of [`four_keys`]: the vectors `v` pass through
/// empty `asm!` blocks, which LLVM may neither move across each other or across a memory access
/// (they may read and write memory, for all LLVM knows) nor look through. Without them LLVM
/// computed the products of several lanes first and kept them (spilling 130–190 vectors per
/// step) where one lane at a time needs 21 registers: 0.0157 against 0.0108 ns per
/// multiply-add on the 16 × 128 × 64 tile on a Zen 5.
#[target_feature(enable = "avx512f")]
#[inline]
fn settle<const N: usize>(v: &mut [__m512; N]) {
    // SAFETY (both blocks): no instructions (at most a comment naming the operand): they read
    // and write no memory (LLVM is not told so, which keeps the next lane's loads after them),
    // leave the stack and the flags alone, and every register keeps the value it came in with.
    unsafe { core::arch::asm!("", options(nostack, preserves_flags)) };
    for v in v.iter_mut() {
        // SAFETY: as above.
        unsafe {
            core::arch::asm!(
                "/* {0} */",
                inout(zmm_reg) * v,
                options(nostack, preserves_flags)
            );
        }
    }
}

/// Lane `l` of the four dot products of the sixteen rows (`cols`) with four rows of `B`
/// (`keys`), sixteen rows per vector: `Σ_t a[16t + l]·b[16t + l]`, the products added in the
/// order of `t`, starting from the first (as [`block8x2_pairs`]).
///
/// # Safety
///
/// The CPU must support AVX-512F (callers are the AVX-512 kernels, into which this and the
/// lane tree's other steps are inlined: as `#[target_feature]` functions LLVM called some of
/// them, passing their vectors through memory).
#[inline(always)]
unsafe fn lane<const KC: usize>(
    cols: &Columns<KC>,
    keys: [&[[f32; L]; KC]; NK],
    l: usize,
) -> [__m512; NK] {
    // SAFETY (every intrinsic and `settle` here): AVX-512F, the caller's contract.
    let mut s = [unsafe { _mm512_setzero_ps() }; NK];
    unsafe { settle(&mut []) };
    for (t, x) in cols.0.iter().enumerate() {
        let Some(x) = x.get(l) else {
            break;
        };
        // SAFETY: AVX-512F; `x` is 16 floats aligned to 64 bytes (`Columns`).
        let va = unsafe { _mm512_load_ps(x.as_ptr()) };
        for (s, key) in s.iter_mut().zip(keys) {
            let Some(&b) = key.get(t).and_then(|c| c.get(l)) else {
                continue;
            };
            // SAFETY: AVX-512F.
            unsafe {
                let p = _mm512_mul_ps(va, _mm512_set1_ps(b));
                *s = if t == 0 { p } else { _mm512_add_ps(*s, p) };
            }
        }
    }
    // SAFETY: AVX-512F.
    unsafe { settle(&mut s) };
    s
}

/// `x + y`, vector by vector.
///
/// # Safety
///
/// The CPU must support AVX-512F (see [`lane`]).
#[inline(always)]
unsafe fn add4(x: [__m512; NK], y: [__m512; NK]) -> [__m512; NK] {
    let mut r = x;
    for (r, y) in r.iter_mut().zip(y) {
        // SAFETY: AVX-512F, the caller's contract.
        *r = unsafe { _mm512_add_ps(*r, y) };
    }
    // SAFETY: AVX-512F, the caller's contract.
    unsafe { settle(&mut r) };
    r
}

/// The four dot products of the sixteen rows with four rows of `B`, sixteen rows per vector:
/// the lanes of [`lane`] combined by the pairwise tree (`l + l+8`, then `l + l+4`, `l + l+2`,
/// `l + l+1`, as `portable::combine`), depth first, plus 0 (the −0 of a sum whose every
/// product is −0 made +0, as [`scores8`] does).
#[target_feature(enable = "avx512f")]
#[inline]
fn four_keys<const KC: usize>(cols: &Columns<KC>, keys: [&[[f32; L]; KC]; NK]) -> [__m512; NK] {
    /// Lanes `l + l+8` (`a`), `a(l) + a(l+4)` (`b`), `b(l) + b(l+2)` (`c`). Safety: AVX-512F.
    /// (Three functions rather than three closures: as closures, LLVM scheduled them into
    /// 0.0133–0.0134 ns per multiply-add on the 16 × 128 × 64 tile against 0.0106.)
    #[inline(always)]
    unsafe fn a<const KC: usize>(
        x: &Columns<KC>,
        k: [&[[f32; L]; KC]; NK],
        l: usize,
    ) -> [__m512; NK] {
        // SAFETY: AVX-512F, the caller's contract.
        unsafe { add4(lane(x, k, l), lane(x, k, l + 8)) }
    }
    #[inline(always)]
    unsafe fn b<const KC: usize>(
        x: &Columns<KC>,
        k: [&[[f32; L]; KC]; NK],
        l: usize,
    ) -> [__m512; NK] {
        // SAFETY: AVX-512F, the caller's contract.
        unsafe { add4(a(x, k, l), a(x, k, l + 4)) }
    }
    #[inline(always)]
    unsafe fn c<const KC: usize>(
        x: &Columns<KC>,
        k: [&[[f32; L]; KC]; NK],
        l: usize,
    ) -> [__m512; NK] {
        // SAFETY: AVX-512F, the caller's contract.
        unsafe { add4(b(x, k, l), b(x, k, l + 2)) }
    }
    // SAFETY: AVX-512F (this function's features).
    let mut r = unsafe { add4(c(cols, keys, 0), c(cols, keys, 1)) };
    for r in r.iter_mut() {
        *r = _mm512_add_ps(*r, _mm512_setzero_ps());
    }
    r
}

/// `C = A·Bᵀ` for the first `16·⌊m/16⌋` rows of `A` (`a` `m × k`, `b` `n × k`, `c` `m × n`),
/// f32, `k` a multiple of 16 up to [`ALIGNED_K`] (none done otherwise), on CPUs with
/// AVX-512F; returns the number of rows done. Attention's query tiles of sixteen rows: each
/// group of sixteen rows is transposed once ([`Columns`]; once per call for a tile), so one
/// vector holds one value of all sixteen rows, and each value of a row of `B` is broadcast and
/// multiplied into it, four rows of `B` at a time ([`four_keys`]); a dot product's sixteen
/// lanes are then sixteen separate vectors, combined by the lane tree with vertical additions
/// only. No vector moves its lanes but the transposes of `A` and of each sixteen results (into
/// rows of `C`). On the 16 × 128 tile of a Zen 5: 0.0105–0.0110 ns per multiply-add at d = 64
/// (67–70% of the FMA peak), 0.0103–0.0104 at d = 128, 0.0109–0.0110 at d = 32, where
/// [`kernel_nt8`] took 0.0121–0.0129. Every element is `portable::dot` to the bit.
/// Each result is multiplied by `alpha` before it is stored (rounded once more: the same bits
/// as multiplying the stored product).
#[target_feature(enable = "avx512f,avx2,f16c")]
fn kernel_nt16(a: &[f32], b: &[f32], k: usize, c: &mut [f32], alpha: f32) -> usize {
    macro_rules! by_chunks {
        ($($kc:literal)*) => {
            match k / L {
                $($kc => nt16::<$kc>(a, b, k, c, alpha),)*
                _ => 0,
            }
        };
    }
    if !k.is_multiple_of(L) {
        return 0;
    }
    by_chunks!(1 2 3 4 5 6 7 8)
}

/// [`kernel_nt16`] for `k = 16·KC`.
#[target_feature(enable = "avx512f,avx2,f16c")]
fn nt16<const KC: usize>(a: &[f32], b: &[f32], k: usize, c: &mut [f32], alpha: f32) -> usize {
    let (Some(n), Some(ma)) = (b.len().checked_div(k), a.len().checked_div(k)) else {
        return 0;
    };
    let Some(mc) = c.len().checked_div(n) else {
        return 0;
    };
    let groups = ma.min(mc) / QT;
    let (Some(ak), Some(cn)) = (k.checked_mul(QT), n.checked_mul(QT)) else {
        return 0;
    };
    if groups == 0 || k != KC * L {
        return 0;
    }
    let keys: &[[[f32; L]; KC]] = b.as_chunks::<L>().0.as_chunks::<KC>().0;
    let Some(last) = keys.last() else {
        return 0;
    };
    let mut cols = Columns([[[0.0; L]; L]; KC]);
    let mut held = Held([[0.0; L]; L]);
    for (a16, c16) in a.chunks_exact(ak).zip(c.chunks_exact_mut(cn)).take(groups) {
        // The sixteen rows, transposed chunk by chunk.
        for (t, out) in cols.0.iter_mut().enumerate() {
            let mut r = [_mm512_setzero_ps(); L];
            for (i, x) in r.iter_mut().enumerate() {
                if let Some(v) = a16.get(i * k + t * L..).and_then(|v| v.first_chunk::<L>()) {
                    // SAFETY: AVX-512F (this function's features); `v` is 16 floats, read
                    // unaligned.
                    *x = unsafe { _mm512_loadu_ps(v.as_ptr()) };
                }
            }
            for (y, v) in out.iter_mut().zip(transpose16(r)) {
                // SAFETY: AVX-512F; `y` is 16 floats aligned to 64 bytes (`Columns`).
                unsafe { _mm512_store_ps(y.as_mut_ptr(), v) };
            }
        }
        // Sixteen rows of `B` at a time (fewer in the last block), four per step; a step past
        // the last row of `B` recomputes the last row, whose extra results are not stored.
        for j0 in (0..n).step_by(L) {
            let w = (n - j0).min(L);
            for (g, out) in held.0.as_chunks_mut::<NK>().0.iter_mut().enumerate() {
                if g * NK >= w {
                    break;
                }
                let four: [&[[f32; L]; KC]; NK] =
                    core::array::from_fn(|i| keys.get(j0 + g * NK + i).unwrap_or(last));
                for (y, v) in out.iter_mut().zip(four_keys(&cols, four)) {
                    let v = _mm512_mul_ps(v, _mm512_set1_ps(alpha));
                    // SAFETY: AVX-512F; `y` is 16 floats aligned to 64 bytes (`Held`).
                    unsafe { _mm512_store_ps(y.as_mut_ptr(), v) };
                }
            }
            let mut r = [_mm512_setzero_ps(); L];
            for (r, y) in r.iter_mut().zip(&held.0) {
                // SAFETY: AVX-512F; `y` is 16 floats aligned to 64 bytes (`Held`).
                *r = unsafe { _mm512_load_ps(y.as_ptr()) };
            }
            let mask: __mmask16 = ((1u32 << w) - 1) as u16;
            for (i, v) in transpose16(r).into_iter().enumerate() {
                if let Some(y) = c16.get_mut(i * n + j0..i * n + j0 + w) {
                    // SAFETY: AVX-512F; the mask writes the first `w` lanes, and `y` holds `w`
                    // floats.
                    unsafe { _mm512_mask_storeu_ps(y.as_mut_ptr(), mask, v) };
                }
            }
        }
    }
    groups * QT
}

/// The columns of eight rows of `C` (`c8`, `8 × n`) from the rows of `B` two at a time:
/// `block`'s sixteen dot products (eight rows of `A` against two rows of `B`), stored four
/// columns per row at a time. An odd last row of `B` is left to the caller.
#[target_feature(enable = "avx512f,avx2,f16c")]
#[inline]
fn scores8<U: Lane8, B: Block<U>>(
    b: &[U],
    sc: &[U::Scale],
    k: usize,
    n: usize,
    c8: &mut [f32],
    block: &B,
) {
    let Some(bk) = k.checked_mul(2) else {
        return;
    };
    // Rows j and j + 1 of `B` (`bp`) against the eight rows: `block`'s result plus 0, which
    // turns a −0 (a sum whose every product is −0, from lanes that started at their first
    // product: [`block8x2_pairs`]) into the +0 of lanes started at +0 and leaves every other
    // value as it is.
    macro_rules! two {
        ($bp:expr, $j:expr) => {{
            let (b0, b1) = $bp.split_at(k);
            let s2 = [scale(sc, $j), scale(sc, $j + 1)];
            // SAFETY: this function runs with AVX-512F, AVX2 and F16C.
            _mm512_add_ps(unsafe { block.two(&[b0, b1], s2) }, _mm512_setzero_ps())
        }};
    }
    // One call of `block` (a second copy is not inlined): pairs of columns are computed one
    // at a time, and stored two at a time.
    let mut held = None;
    let mut j = 0;
    for (i, bp) in b.chunks_exact(bk).enumerate() {
        let y = two!(bp, 2 * i);
        let Some(x) = held.take() else {
            held = Some(y);
            continue;
        };
        // Quarter q of `x` (of `y`): rows 2q and 2q + 1 with columns j, j + 1 (j + 2, j + 3);
        // as doubles, `unpacklo` gathers row 2q's four columns in quarter q, `unpackhi` row
        // 2q + 1's.
        let (xd, yd) = (_mm512_castps_pd(x), _mm512_castps_pd(y));
        let (ev, od) = (_mm512_unpacklo_pd(xd, yd), _mm512_unpackhi_pd(xd, yd));
        let quarters = [
            _mm512_castps512_ps128(_mm512_castpd_ps(ev)),
            _mm512_castps512_ps128(_mm512_castpd_ps(od)),
            _mm512_extractf32x4_ps::<1>(_mm512_castpd_ps(ev)),
            _mm512_extractf32x4_ps::<1>(_mm512_castpd_ps(od)),
            _mm512_extractf32x4_ps::<2>(_mm512_castpd_ps(ev)),
            _mm512_extractf32x4_ps::<2>(_mm512_castpd_ps(od)),
            _mm512_extractf32x4_ps::<3>(_mm512_castpd_ps(ev)),
            _mm512_extractf32x4_ps::<3>(_mm512_castpd_ps(od)),
        ];
        for (r, &v) in quarters.iter().enumerate() {
            if let Some(dst) = c8
                .get_mut(r * n + j..)
                .and_then(|x| x.first_chunk_mut::<4>())
            {
                // SAFETY: `dst` is four floats, written unaligned (SSE, part of AVX2).
                unsafe { _mm_storeu_ps(dst.as_mut_ptr(), v) };
            }
        }
        j += 4;
    }
    if let Some(r) = held {
        // Quarter q of `r` holds rows 2q and 2q + 1 (two results each), stored straight from
        // the registers (a copy through the stack measured slower: the narrow reloads
        // waited on the wide store).
        let quarters = [
            _mm512_castps512_ps128(r),
            _mm512_extractf32x4_ps::<1>(r),
            _mm512_extractf32x4_ps::<2>(r),
            _mm512_extractf32x4_ps::<3>(r),
        ];
        for (q, &x) in quarters.iter().enumerate() {
            // Row 2q's two scores, then row 2q + 1's, n values further.
            let at = 2 * q * n + j;
            let Some((r0, r1)) = c8
                .get_mut(at..at + n + 2)
                .and_then(|span| span.split_at_mut_checked(n))
            else {
                continue;
            };
            if let (Some(y0), Some(y1)) = (r0.first_chunk_mut::<2>(), r1.first_chunk_mut::<2>()) {
                // The two pairs as the two halves of a double (bits moved, not converted).
                let xd = _mm_castps_pd(x);
                let (lo, hi) = (_mm_cvtsd_f64(xd), _mm_cvtsd_f64(_mm_unpackhi_pd(xd, xd)));
                // SAFETY: `y0` and `y1` are two floats each, 8 bytes, written unaligned.
                unsafe {
                    core::ptr::from_mut(y0).cast::<f64>().write_unaligned(lo);
                    core::ptr::from_mut(y1).cast::<f64>().write_unaligned(hi);
                }
            }
        }
    }
}

/// A way to compute the sixteen dot products of eight rows of `A` with two rows of `B`, as
/// [`tree16`]'s result vector (quarter `q`: rows `2q` and `2q + 1`, each with both rows of
/// `B`).
trait Block<U: Lane8> {
    /// The sixteen dot products.
    ///
    /// # Safety
    ///
    /// The CPU must support AVX-512F, AVX2 and F16C (callers are the AVX-512 kernels).
    unsafe fn two(&self, b: &[&[U]; 2], s: [U::Scale; 2]) -> __m512;
}

/// Rows of `A` read chunk by chunk ([`block8x2`], [`tree16`]).
struct ByChunks<'a>([&'a [[f32; L]]; QB]);

impl<U: Lane8> Block<U> for ByChunks<'_> {
    #[inline(always)]
    unsafe fn two(&self, b: &[&[U]; 2], s: [U::Scale; 2]) -> __m512 {
        // SAFETY: the caller's contract.
        unsafe { tree16(block8x2::<U>(self.0, b, s)) }
    }
}

/// Rows of `KC` chunks with their lane pairs interleaved ([`block8x2_pairs`], [`tree_pairs`]).
struct ByPairs<'a, const KC: usize>(&'a [[[f32; L]; P]; KC]);

impl<U: Lane8, const KC: usize> Block<U> for ByPairs<'_, KC> {
    #[inline(always)]
    unsafe fn two(&self, b: &[&[U]; 2], s: [U::Scale; 2]) -> __m512 {
        // SAFETY: the caller's contract.
        unsafe { tree_pairs(block8x2_pairs::<U, KC>(self.0, b, s)) }
    }
}

/// Lane pairs per chunk: the 16 lanes of a chunk as 8 pairs of neighbours.
const P: usize = L / 2;

/// Eight rows of `A` (`a8`, `8 × k`, `k` a multiple of 16, at most [`ALIGNED_K`]) into `lines`
/// with their lane pairs interleaved: line `8t + m` holds, for rows `0..8` in turn, the two
/// values `16t + 2m` and `16t + 2m + 1` (lanes `2m` and `2m + 1` of chunk `t`). An 8×8
/// transpose of 64-bit pairs per chunk, in three rounds of 8 shuffles. `false` (nothing
/// written) if `a8` is shorter than eight rows or `k` is not such a length.
#[target_feature(enable = "avx512f,avx2,f16c")]
#[inline]
fn pack_pairs(a8: &[f32], k: usize, lines: &mut Lines) -> bool {
    let Some(rows) = a8
        .get(..QB * k)
        .filter(|_| k.is_multiple_of(L) && k <= ALIGNED_K)
    else {
        return false;
    };
    let lo = _mm512_setr_epi64(0, 8, 1, 9, 2, 10, 3, 11);
    let hi = _mm512_setr_epi64(4, 12, 5, 13, 6, 14, 7, 15);
    let lo2 = _mm512_setr_epi64(0, 1, 8, 9, 2, 3, 10, 11);
    let hi2 = _mm512_setr_epi64(4, 5, 12, 13, 6, 7, 14, 15);
    for (t, out) in lines.0.chunks_exact_mut(P).enumerate().take(k / L) {
        // Chunk `t` of each row, as 8 doubles (pairs).
        let mut r = [_mm512_setzero_pd(); QB];
        for (i, x) in r.iter_mut().enumerate() {
            if let Some(c) = rows.get(i * k + t * L..).and_then(|c| c.first_chunk::<L>()) {
                // SAFETY: AVX-512F (this function's features); `c` is 16 floats, read
                // unaligned as 8 doubles.
                *x = unsafe { _mm512_loadu_pd(c.as_ptr().cast()) };
            }
        }
        // Rows 2i and 2i + 1: their pairs 0..4 (`a[i][0]`) and 4..8 (`a[i][1]`) side by side.
        let mut a = [[_mm512_setzero_pd(); 2]; 4];
        for (x, y) in a.iter_mut().zip(r.as_chunks::<2>().0) {
            *x = [
                _mm512_permutex2var_pd(y[0], lo, y[1]),
                _mm512_permutex2var_pd(y[0], hi, y[1]),
            ];
        }
        for h in 0..4 {
            // Rows 0..4 (`u`) and 4..8 (`v`) of pairs 2h and 2h + 1.
            let idx = if h % 2 == 0 { lo2 } else { hi2 };
            let u = _mm512_permutex2var_pd(a[0][h / 2], idx, a[1][h / 2]);
            let v = _mm512_permutex2var_pd(a[2][h / 2], idx, a[3][h / 2]);
            // Pair 2h: the low halves of `u` and `v`; pair 2h + 1: the high halves.
            let (m0, m1) = (
                _mm512_shuffle_f64x2::<0x44>(u, v),
                _mm512_shuffle_f64x2::<0xEE>(u, v),
            );
            if let Some([y0, y1]) = out.get_mut(2 * h..2 * h + 2) {
                // SAFETY: AVX-512F; each line is 16 floats aligned to 64 bytes (`Lines`).
                unsafe {
                    _mm512_store_pd(y0.as_mut_ptr().cast(), m0);
                    _mm512_store_pd(y1.as_mut_ptr().cast(), m1);
                }
            }
        }
    }
    true
}

/// The lanes of the sixteen dot products of eight rows of `A` (their lane pairs interleaved by
/// [`pack_pairs`]: `a[t][m]`) with two rows of `B`: `acc[j][m]` holds, for each row `i`, lanes
/// `2m` and `2m + 1` of its dot product with row `j` of `B` (values `2i`, `2i + 1`). Each line
/// of `A` meets a pair of `B`'s values broadcast to every 64-bit lane, so no lane is moved
/// until the lane tree's last level ([`tree_pairs`]). The lanes start from their first
/// products, not from +0 as in the definition: `0 + p` is `p` for every `p` but −0 (LLVM keeps
/// that addition, which is not `p` for −0), so where every product of a dot product is −0 the
/// tree gives −0 instead of +0, and [`scores8`] adds +0 to every result, which turns it back
/// and changes nothing else. At d = 64 that is 16 additions fewer and one more per pair of rows
/// of `B` (64 of 79 left).
#[target_feature(enable = "avx512f,avx2,f16c")]
#[inline]
fn block8x2_pairs<U: Lane8, const KC: usize>(
    a: &[[[f32; L]; P]; KC],
    b: &[&[U]; 2],
    s: [U::Scale; 2],
) -> [[__m512; P]; 2] {
    let (mut acc0, mut acc1) = ([_mm512_setzero_ps(); P], [_mm512_setzero_ps(); P]);
    let (Some(b0), Some(b1)) = (
        b[0].as_chunks::<L>().0.first_chunk::<KC>(),
        b[1].as_chunks::<L>().0.first_chunk::<KC>(),
    ) else {
        return [acc0, acc1];
    };
    for (t, (at, (c0, c1))) in a.iter().zip(b0.iter().zip(b1)).enumerate() {
        let (p0, p1) = (c0.as_chunks::<2>().0, c1.as_chunks::<2>().0);
        for (m, ((line, x0), x1)) in at.iter().zip(p0).zip(p1).enumerate() {
            // SAFETY: this function runs with AVX-512F.
            let (va, v0, v1) =
                unsafe { (f32::load16(line, ()), U::pair(x0, s[0]), U::pair(x1, s[1])) };
            let (q0, q1) = (_mm512_mul_ps(va, v0), _mm512_mul_ps(va, v1));
            if let (Some(y0), Some(y1)) = (acc0.get_mut(m), acc1.get_mut(m)) {
                (*y0, *y1) = if t == 0 {
                    (q0, q1)
                } else {
                    (_mm512_add_ps(*y0, q0), _mm512_add_ps(*y1, q1))
                };
            }
        }
    }
    [acc0, acc1]
}

/// The lane trees of [`block8x2_pairs`]' sixteen dot products, in [`tree16`]'s result layout
/// (quarter `q`: rows `2q` and `2q + 1`, each with rows 0 and 1 of `B`): lane `l + l+8` is line
/// `m + m+4`, `l + l+4` is `m + m+2`, `l + l+2` is `m + m+1` (vertical additions), and the last
/// level adds the two values of each pair.
#[target_feature(enable = "avx512f")]
#[inline]
fn tree_pairs(acc: [[__m512; P]; 2]) -> __m512 {
    let [[a0, a1, a2, a3, a4, a5, a6, a7], [b0, b1, b2, b3, b4, b5, b6, b7]] = acc;
    let (x1, y1) = (
        [
            _mm512_add_ps(a0, a4),
            _mm512_add_ps(a1, a5),
            _mm512_add_ps(a2, a6),
            _mm512_add_ps(a3, a7),
        ],
        [
            _mm512_add_ps(b0, b4),
            _mm512_add_ps(b1, b5),
            _mm512_add_ps(b2, b6),
            _mm512_add_ps(b3, b7),
        ],
    );
    let (x2, y2) = (
        [_mm512_add_ps(x1[0], x1[2]), _mm512_add_ps(x1[1], x1[3])],
        [_mm512_add_ps(y1[0], y1[2]), _mm512_add_ps(y1[1], y1[3])],
    );
    let (x, y) = (
        _mm512_castps_pd(_mm512_add_ps(x2[0], x2[1])),
        _mm512_castps_pd(_mm512_add_ps(y2[0], y2[1])),
    );
    // Per quarter: [x_2q's pair, y_2q's pair], [x_2q+1's, y_2q+1's].
    let (u, v) = (
        _mm512_castpd_ps(_mm512_unpacklo_pd(x, y)),
        _mm512_castpd_ps(_mm512_unpackhi_pd(x, y)),
    );
    _mm512_add_ps(
        _mm512_shuffle_ps::<0x88>(u, v),
        _mm512_shuffle_ps::<0xDD>(u, v),
    )
}

/// The lanes of the sixteen dot products of eight rows of `A` (their chunks `a[i]`; `k` a
/// multiple of 16) with two rows of `B`, `acc[i][j]` for row `i` of `A` and row `j` of `B`:
/// [`lanes512`]'s operations, each chunk of `B` loaded and converted once for all eight rows.
#[target_feature(enable = "avx512f,avx2,f16c")]
#[inline]
fn block8x2<U: Lane8>(a: [&[[f32; L]]; QB], b: &[&[U]; 2], s: [U::Scale; 2]) -> [[__m512; 2]; QB] {
    let mut acc = [[_mm512_setzero_ps(); 2]; QB];
    let (b0c, b1c) = (b[0].as_chunks::<L>().0, b[1].as_chunks::<L>().0);
    // Every row of `A` has the chunks of `B` (all have `k / 16`), checked once here.
    let nch = b0c.len().min(b1c.len());
    for r in a {
        if r.len() < nch {
            return acc;
        }
    }
    let rows = a.map(|r| r.as_ptr());
    for (t, (x0, x1)) in b0c.iter().zip(b1c).enumerate().take(nch) {
        // SAFETY: this function runs with AVX-512F.
        let (vb0, vb1) = unsafe { (U::load16(x0, s[0]), U::load16(x1, s[1])) };
        for (acc, &p) in acc.iter_mut().zip(rows.iter()) {
            // SAFETY: AVX-512F, as above; `t < nch`, and every row of `A` has `nch` chunks
            // (checked above), so chunk `t` is in it.
            let va = unsafe { _mm512_loadu_ps(p.add(t).cast()) };
            acc[0] = _mm512_add_ps(acc[0], _mm512_mul_ps(va, vb0));
            acc[1] = _mm512_add_ps(acc[1], _mm512_mul_ps(va, vb1));
        }
    }
    acc
}

/// The pairwise lane trees (`l + l+8`, `l + l+4`, `l + l+2`, `l + l+1`, as
/// `portable::combine`) of the sixteen dot products `acc[i][j]` of [`block8x2`], all at once:
/// result lane `2i + j`. Each level adds pairs of vectors whose lanes were moved so that every
/// lane adds the two values its own tree adds: `shuffle_f32x4` pairs the 256-bit halves, then
/// the 128-bit quarters; `shuffle_ps` the pairs, then the single lanes of each quarter. The
/// order of the operands is chosen so that the last level leaves row `i`'s two results side by
/// side.
#[target_feature(enable = "avx512f")]
#[inline]
fn tree16(acc: [[__m512; 2]; QB]) -> __m512 {
    // Each output vector: [x's lanes l + l+8 (8) | y's (8)].
    let l1 = |x: __m512, y: __m512| {
        _mm512_add_ps(
            _mm512_shuffle_f32x4::<0x44>(x, y),
            _mm512_shuffle_f32x4::<0xEE>(x, y),
        )
    };
    // Quarters [X0 X1 Y0 Y1], [Z0 Z1 W0 W1] -> [X Y Z W], four lanes (l + l+4) each.
    let l2 = |u: __m512, v: __m512| {
        _mm512_add_ps(
            _mm512_shuffle_f32x4::<0x88>(u, v),
            _mm512_shuffle_f32x4::<0xDD>(u, v),
        )
    };
    // Quarter q of s and of t -> [s_q (2 lanes, l + l+2) | t_q (2)].
    let l3 = |s: __m512, t: __m512| {
        _mm512_add_ps(
            _mm512_shuffle_ps::<0x44>(s, t),
            _mm512_shuffle_ps::<0xEE>(s, t),
        )
    };
    // Quarter q -> [g_q's two results | h_q's two] (l + l+1).
    let l4 = |g: __m512, h: __m512| {
        _mm512_add_ps(
            _mm512_shuffle_ps::<0x88>(g, h),
            _mm512_shuffle_ps::<0xDD>(g, h),
        )
    };
    let [a0, a1, a2, a3, a4, a5, a6, a7] = acc;
    // s1: rows 0, 2, 4, 6 with B's row 0 (one per quarter); t1 the same with row 1; s2 and t2
    // rows 1, 3, 5, 7. Quarter q of the result: rows 2q and 2q + 1, each with rows 0 and 1.
    let s1 = l2(l1(a0[0], a2[0]), l1(a4[0], a6[0]));
    let t1 = l2(l1(a0[1], a2[1]), l1(a4[1], a6[1]));
    let s2 = l2(l1(a1[0], a3[0]), l1(a5[0], a7[0]));
    let t2 = l2(l1(a1[1], a3[1]), l1(a5[1], a7[1]));
    l4(l3(s1, t1), l3(s2, t2))
}

/// All present, or `None`.
#[inline(always)]
fn all<T: Copy, const N: usize>(x: [Option<T>; N]) -> Option<[T; N]> {
    let first = x.first().copied().flatten()?;
    let mut out = [first; N];
    for (o, v) in out.iter_mut().zip(x) {
        *o = v?;
    }
    Some(out)
}

/// Row `i` of `k` values (empty if out of range).
#[inline(always)]
fn row<U>(x: &[U], i: usize, k: usize) -> &[U] {
    match (
        i.checked_mul(k),
        i.checked_add(1).and_then(|j| j.checked_mul(k)),
    ) {
        (Some(s), Some(e)) => x.get(s..e).unwrap_or(&[]),
        _ => &[],
    }
}

/// `c[i..i + 8]`, if in range.
#[inline(always)]
fn out8(c: &mut [f32], i: usize) -> Option<&mut [f32; 8]> {
    c.get_mut(i..i.checked_add(8)?)?.try_into().ok()
}

/// `c[off .. off + 8·V] += Σ_j x_j·b_j[off ..]` over the triples `(x_j, b_j, scale of b_j)` in
/// order, `V` vectors of running sums in registers for the whole walk.
#[target_feature(enable = "avx2,f16c")]
#[inline]
fn columns<'a, U: Lane8 + 'a, const V: usize>(
    c: &mut [f32],
    off: usize,
    pairs: impl Iterator<Item = (f32, &'a [U], U::Scale)>,
) {
    // Arrays of `V` vectors throughout (`first_chunk`), so that the loops over them
    // unroll and the running sums stay in registers.
    let Some(cv) = vectors::<V>(c, off) else {
        return;
    };
    let mut acc = [_mm256_setzero_ps(); V];
    for v in 0..V {
        acc[v] = load8(&cv[v]);
    }
    for (x, b_row, sc) in pairs {
        let Some(bv) = b_row
            .get(off..)
            .and_then(|b| b.as_chunks::<8>().0.first_chunk::<V>())
        else {
            continue;
        };
        prefetch_ahead(bv, AHEAD.wrapping_mul(core::mem::size_of_val(b_row)));
        let xv = _mm256_set1_ps(x);
        for v in 0..V {
            // SAFETY: this function runs with AVX2 and F16C.
            let b = unsafe { U::load8(&bv[v], sc) };
            acc[v] = _mm256_add_ps(acc[v], _mm256_mul_ps(xv, b));
        }
    }
    for v in 0..V {
        store8(&mut cv[v], acc[v]);
    }
}

/// [`columns`] for two rows of `C` at once (`c0`, `c1`, weights `x0`, `x1` per row of
/// `B`): each load of `B` serves both rows. The same operations per element.
#[target_feature(enable = "avx2,f16c")]
#[inline]
fn columns2<'a, U: Lane8 + 'a, const V: usize>(
    c0: &mut [f32],
    c1: &mut [f32],
    off: usize,
    pairs: impl Iterator<Item = ((f32, &'a [U], U::Scale), f32)>,
) {
    let (Some(cv0), Some(cv1)) = (vectors::<V>(c0, off), vectors::<V>(c1, off)) else {
        return;
    };
    let mut acc0 = [_mm256_setzero_ps(); V];
    let mut acc1 = [_mm256_setzero_ps(); V];
    for v in 0..V {
        acc0[v] = load8(&cv0[v]);
        acc1[v] = load8(&cv1[v]);
    }
    for ((x0, b_row, sc), x1) in pairs {
        let Some(bv) = b_row
            .get(off..)
            .and_then(|b| b.as_chunks::<8>().0.first_chunk::<V>())
        else {
            continue;
        };
        let (xv0, xv1) = (_mm256_set1_ps(x0), _mm256_set1_ps(x1));
        for v in 0..V {
            // SAFETY: this function runs with AVX2 and F16C.
            let b = unsafe { U::load8(&bv[v], sc) };
            acc0[v] = _mm256_add_ps(acc0[v], _mm256_mul_ps(xv0, b));
            acc1[v] = _mm256_add_ps(acc1[v], _mm256_mul_ps(xv1, b));
        }
    }
    for v in 0..V {
        store8(&mut cv0[v], acc0[v]);
        store8(&mut cv1[v], acc1[v]);
    }
}

/// `V` vectors of `c` from `off`, if in range.
#[inline(always)]
fn vectors<const V: usize>(c: &mut [f32], off: usize) -> Option<&mut [[f32; 8]; V]> {
    c.get_mut(off..)?
        .as_chunks_mut::<8>()
        .0
        .first_chunk_mut::<V>()
}

/// A group of rows of `B` with the weights of one or two rows of `A`: `b_grp` (rows of `k`
/// values, `k > 0`) and their scales `s_grp` (empty for f32 and the unscaled formats).
#[derive(Clone, Copy)]
struct Group<'x, U: Lane8> {
    b: &'x [U],
    s: &'x [U::Scale],
    k: usize,
}

/// One row of `C` over one group of rows of `B`: 128, 64, 32, 16 or 8 columns in
/// registers, the last `k mod 8` one at a time. 128 columns take all sixteen vector
/// registers as running sums (LLVM spills two): a single query's value product at
/// dv = 128 then reads each value row once instead of in two halves. Called only from the
/// kernels (with `W`, the AVX-512 copies).
#[inline(always)]
fn row1<U: Lane8, const W: bool>(c_row: &mut [f32], a_grp: &[f32], g: Group<'_, U>) {
    let k = g.k;
    let mut off = 0;
    while off + 128 <= k {
        cols::<U, 16, 8, W>(c_row, off, a_grp, g);
        off += 128;
    }
    while off + 64 <= k {
        cols::<U, 8, 4, W>(c_row, off, a_grp, g);
        off += 64;
    }
    if off + 32 <= k {
        cols::<U, 4, 2, W>(c_row, off, a_grp, g);
        off += 32;
    }
    if off + 16 <= k {
        cols::<U, 2, 1, W>(c_row, off, a_grp, g);
        off += 16;
    }
    if off + 8 <= k {
        cols::<U, 1, 0, W>(c_row, off, a_grp, g);
        off += 8;
    }
    rest(c_row, off, a_grp, g);
}

/// [`columns`] over `V` vectors of eight, or with `W` (and `V2 = V/2 > 0`) its AVX-512 copy
/// [`columns512`] over `V2` vectors of sixteen: the same operations per element.
#[inline(always)]
fn cols<U: Lane8, const V: usize, const V2: usize, const W: bool>(
    c_row: &mut [f32],
    off: usize,
    a_grp: &[f32],
    g: Group<'_, U>,
) {
    if W && V2 > 0 {
        // SAFETY: `W` only in the AVX-512 copies of the kernels.
        unsafe { columns512::<U, V2>(c_row, off, group(a_grp, g)) }
    } else {
        // SAFETY: the kernels run with AVX2 and F16C.
        unsafe { columns::<U, V>(c_row, off, group(a_grp, g)) }
    }
}

/// `V2` vectors of sixteen of `c` from `off`, if in range.
#[inline(always)]
fn vectors16<const V2: usize>(c: &mut [f32], off: usize) -> Option<&mut [[f32; 16]; V2]> {
    c.get_mut(off..)?
        .as_chunks_mut::<16>()
        .0
        .first_chunk_mut::<V2>()
}

/// [`columns`] with `V2` vectors of sixteen running sums.
#[target_feature(enable = "avx512f,avx2,f16c")]
#[inline]
fn columns512<'a, U: Lane8 + 'a, const V2: usize>(
    c: &mut [f32],
    off: usize,
    pairs: impl Iterator<Item = (f32, &'a [U], U::Scale)>,
) {
    let Some(cv) = c
        .get_mut(off..)
        .and_then(|c| c.as_chunks_mut::<16>().0.first_chunk_mut::<V2>())
    else {
        return;
    };
    let mut acc = [_mm512_setzero_ps(); V2];
    for v in 0..V2 {
        // SAFETY: this function runs with AVX-512F.
        acc[v] = unsafe { f32::load16(&cv[v], ()) };
    }
    for (x, b_row, sc) in pairs {
        let Some(bv) = b_row
            .get(off..)
            .and_then(|b| b.as_chunks::<16>().0.first_chunk::<V2>())
        else {
            continue;
        };
        prefetch_ahead(bv, AHEAD.wrapping_mul(core::mem::size_of_val(b_row)));
        let xv = _mm512_set1_ps(x);
        for v in 0..V2 {
            // SAFETY: as above.
            let b = unsafe { U::load16(&bv[v], sc) };
            acc[v] = _mm512_add_ps(acc[v], _mm512_mul_ps(xv, b));
        }
    }
    for v in 0..V2 {
        // SAFETY: `cv[v]` is 16 floats; unaligned store.
        unsafe { _mm512_storeu_ps(cv[v].as_mut_ptr(), acc[v]) };
    }
}

/// [`columns2`] with `V2` vectors of sixteen running sums per row.
#[target_feature(enable = "avx512f,avx2,f16c")]
#[inline]
fn columns2_512<'a, U: Lane8 + 'a, const V2: usize>(
    c0: &mut [f32],
    c1: &mut [f32],
    off: usize,
    pairs: impl Iterator<Item = ((f32, &'a [U], U::Scale), f32)>,
) {
    let (Some(cv0), Some(cv1)) = (vectors16::<V2>(c0, off), vectors16::<V2>(c1, off)) else {
        return;
    };
    let mut acc0 = [_mm512_setzero_ps(); V2];
    let mut acc1 = [_mm512_setzero_ps(); V2];
    for v in 0..V2 {
        // SAFETY: this function runs with AVX-512F.
        unsafe {
            acc0[v] = f32::load16(&cv0[v], ());
            acc1[v] = f32::load16(&cv1[v], ());
        }
    }
    for ((x0, b_row, sc), x1) in pairs {
        let Some(bv) = b_row
            .get(off..)
            .and_then(|b| b.as_chunks::<16>().0.first_chunk::<V2>())
        else {
            continue;
        };
        let (xv0, xv1) = (_mm512_set1_ps(x0), _mm512_set1_ps(x1));
        for v in 0..V2 {
            // SAFETY: as above.
            let b = unsafe { U::load16(&bv[v], sc) };
            acc0[v] = _mm512_add_ps(acc0[v], _mm512_mul_ps(xv0, b));
            acc1[v] = _mm512_add_ps(acc1[v], _mm512_mul_ps(xv1, b));
        }
    }
    for v in 0..V2 {
        // SAFETY: `cv0[v]`, `cv1[v]` are 16 floats each; unaligned stores.
        unsafe {
            _mm512_storeu_ps(cv0[v].as_mut_ptr(), acc0[v]);
            _mm512_storeu_ps(cv1[v].as_mut_ptr(), acc1[v]);
        }
    }
}

/// [`columns2_512`] for four rows of `C` (`c[r]`, their values of `A` `x[r]` per row of the
/// group): sixteen running sums of 64 columns, each load of `B` serving four rows.
#[target_feature(enable = "avx512f,avx2,f16c")]
#[inline]
fn columns4_512<'a, U: Lane8 + 'a>(
    c: [&mut [f32]; 4],
    off: usize,
    quads: impl Iterator<Item = ((f32, &'a [U], U::Scale), [f32; 3])>,
) {
    let [c0, c1, c2, c3] = c;
    let (Some(cv0), Some(cv1), Some(cv2), Some(cv3)) = (
        vectors16::<4>(c0, off),
        vectors16::<4>(c1, off),
        vectors16::<4>(c2, off),
        vectors16::<4>(c3, off),
    ) else {
        return;
    };
    let mut acc = [[_mm512_setzero_ps(); 4]; 4];
    for (acc, cv) in acc.iter_mut().zip([&*cv0, &*cv1, &*cv2, &*cv3]) {
        for (a, c) in acc.iter_mut().zip(cv) {
            // SAFETY: this function runs with AVX-512F.
            *a = unsafe { f32::load16(c, ()) };
        }
    }
    for ((x0, b_row, sc), [x1, x2, x3]) in quads {
        let Some(bv) = b_row
            .get(off..)
            .and_then(|b| b.as_chunks::<16>().0.first_chunk::<4>())
        else {
            continue;
        };
        let xv = [x0, x1, x2, x3].map(|x| _mm512_set1_ps(x));
        for (v, bv) in bv.iter().enumerate() {
            // SAFETY: as above.
            let b = unsafe { U::load16(bv, sc) };
            for (acc, &x) in acc.iter_mut().zip(&xv) {
                if let Some(a) = acc.get_mut(v) {
                    *a = _mm512_add_ps(*a, _mm512_mul_ps(x, b));
                }
            }
        }
    }
    for (acc, cv) in acc.iter().zip([cv0, cv1, cv2, cv3]) {
        for (a, c) in acc.iter().zip(cv.iter_mut()) {
            // SAFETY: `c` is 16 floats; unaligned store.
            unsafe { _mm512_storeu_ps(c.as_mut_ptr(), *a) };
        }
    }
}

/// Columns `off..` of a row of `C` (fewer than 8), one at a time.
#[inline(always)]
fn rest<U: Lane8>(c_row: &mut [f32], off: usize, a_grp: &[f32], g: Group<'_, U>) {
    let Some(rest) = c_row.get_mut(off..).filter(|r| !r.is_empty()) else {
        return;
    };
    for (x, b_row, sc) in group(a_grp, g) {
        for (s, &bv) in rest.iter_mut().zip(b_row.get(off..).unwrap_or(&[])) {
            *s += x * bv.load(sc);
        }
    }
}

/// Two rows of `C` over one group of rows of `B`: with `W` 64 columns of each in registers
/// ([`columns2_512`]), then 32, 16 or 8 ([`columns2`], or with `W` [`columns2_512`]), the last
/// `k mod 8` one at a time.
/// Called only from the kernels.
#[inline(always)]
fn row2<U: Lane8, const W: bool>(
    (c0, c1): (&mut [f32], &mut [f32]),
    a0_grp: &[f32],
    a1_grp: &[f32],
    g: Group<'_, U>,
) {
    let k = g.k;
    let pairs = || group(a0_grp, g).zip(a1_grp.iter().copied());
    let mut off = 0;
    // SAFETY (each block): the kernels run with AVX2 and F16C, and with `W` AVX-512F.
    while W && off + 64 <= k {
        unsafe { columns2_512::<U, 4>(c0, c1, off, pairs()) };
        off += 64;
    }
    while off + 32 <= k {
        if W {
            unsafe { columns2_512::<U, 2>(c0, c1, off, pairs()) };
        } else {
            unsafe { columns2::<U, 4>(c0, c1, off, pairs()) };
        }
        off += 32;
    }
    if off + 16 <= k {
        if W {
            unsafe { columns2_512::<U, 1>(c0, c1, off, pairs()) };
        } else {
            unsafe { columns2::<U, 2>(c0, c1, off, pairs()) };
        }
        off += 16;
    }
    if off + 8 <= k {
        unsafe { columns2::<U, 1>(c0, c1, off, pairs()) };
        off += 8;
    }
    rest(c0, off, a0_grp, g);
    rest(c1, off, a1_grp, g);
}

/// Four rows of `C` (`c4`, `4 × k`; `a4` their rows of `A`, `4 × n`) over one group of rows of
/// `B` (rows `j0..j0 + rows`), 64 columns at a time ([`columns4_512`]; `k` a multiple of 64).
///
/// # Safety
///
/// The CPU must support AVX-512F, AVX2 and F16C (the AVX-512 kernel calls it; the AVX2 kernel's
/// copy of the loop never does).
#[inline(always)]
unsafe fn row4<U: Lane8>(c4: &mut [f32], a4: &[f32], j0: usize, rows: usize, g: Group<'_, U>) {
    let (k, n) = (g.k, a4.len() / 4);
    let grp = |r: usize| a4.get(r * n + j0..r * n + j0 + rows).unwrap_or(&[]);
    let (a0, a1, a2, a3) = (grp(0), grp(1), grp(2), grp(3));
    let (c01, c23) = c4.split_at_mut(c4.len().min(2 * k));
    let (c0, c1) = c01.split_at_mut(c01.len().min(k));
    let (c2, c3) = c23.split_at_mut(c23.len().min(k));
    let quads = || {
        group(a0, g)
            .zip(a1.iter().zip(a2).zip(a3))
            .map(|(t, ((&x1, &x2), &x3))| (t, [x1, x2, x3]))
    };
    for off in (0..k).step_by(64) {
        // SAFETY: AVX-512F, AVX2 and F16C, this function's contract.
        unsafe { columns4_512::<U>([&mut *c0, &mut *c1, &mut *c2, &mut *c3], off, quads()) };
    }
}

/// The triples `(a_grp[j], row j of the group, its scale)`. Walked with checked splits: no
/// division, which would cost more than a short walk of attention's (one row of a key block
/// per call).
#[inline(always)]
fn group<'x, U: Lane8>(
    a_grp: &'x [f32],
    g: Group<'x, U>,
) -> impl Iterator<Item = (f32, &'x [U], U::Scale)> + 'x {
    let mut rest = g.b;
    let mut j = 0;
    a_grp.iter().copied().map_while(move |x| {
        let (row, next) = rest.split_at_checked(g.k)?;
        rest = next;
        let s = scale(g.s, j);
        j += 1;
        Some((x, row, s))
    })
}

/// `C (+)= A·B` (`a` `m × n`, `b` `n × k` with row `j` read with `sc[j]`, `c` `m × k`,
/// `n, k > 0`): `linalg::matmul_nn`'s walk (groups of 64 rows of `B` outermost), in the
/// AVX-512 copy four rows of `C` at a time where `k` is a multiple of 64 ([`row4`]), then two
/// rows at a time with (in the AVX-512 copy 64,) 32, 16 or 8 columns of each in registers
/// ([`row2`]), an odd last row with 128, 64, 32, 16 or 8 ([`row1`]), and the last `k mod 8`
/// columns one at a time.
/// The two products as two copies each: `avx2,f16c` (every element type) and, on CPUs with
/// AVX-512F, `avx512f,avx2,f16c` (int8 and bf16, and f32's single rows and wide value rows:
/// [`Lane8::WIDE`], [`Lane8::ROWS_WIDE`]), whose inner loops convert and multiply sixteen values
/// per instruction ([`lanes512`], [`columns512`]): the same operations per element in the same
/// order, so the same bits.
macro_rules! kernels {
    ($feat:literal, $nt:ident, $nn:ident, $w:literal) => {
        /// `C = A·Bᵀ` (`a` `m × k`, `b` `n × k`, `c` `m × n`, `k > 0`). Pairs of rows of `A` take
        /// the rows of `B` in groups of eight: four 2 × 2 blocks (four dot products sharing their
        /// loads each), whose eight lane trees per row are then combined together
        /// ([`combine8`]) and stored as one vector; each group meets every pair of rows while it
        /// is in L1. Combining each block's four trees as soon as its products were summed left
        /// the core waiting on that dependency chain, and taking the pairs of rows outermost
        /// read attention's 32 KiB key block from L2 once per pair (`docs/speed-history.md` has the
        /// figures). The last `n mod 8` rows of `B` go two at a
        /// time; an odd last row of `A` (a single query's scores, whose keys stream from
        /// memory) takes the rows of `B` four at a time.
        #[target_feature(enable = $feat)]
        fn $nt<U: Lane8>(a: &[f32], b: &[U], sc: &[U::Scale], k: usize, c: &mut [f32]) {
            if k == 0 {
                return;
            }
            let n = b.len() / k;
            let Some(last) = n.checked_sub(1) else {
                return;
            };
            let b_last = row(b, last, k);
            let s_last = scale(sc, last);
            let m = (a.len() / k).min(c.len() / n);
            // Whole groups of eight rows of `B`, each against every row of `A` while it is in L1
            // (attention's key block is 32 KiB at d = 64: it would not stay there for the
            // next pair of rows).
            let mut b_groups = b.chunks_exact(8 * k);
            for (g, bg) in (&mut b_groups).enumerate() {
                let col = 8 * g;
                for (p, ap) in a.chunks_exact(2 * k).take(m / 2).enumerate() {
                    let (a0, a1) = ap.split_at(k);
                    let mut r0 = [_mm256_setzero_ps(); 8];
                    let mut r1 = [_mm256_setzero_ps(); 8];
                    let (r0p, _) = r0.as_chunks_mut::<2>();
                    let (r1p, _) = r1.as_chunks_mut::<2>();
                    for (i, ((u, v), bp)) in r0p
                        .iter_mut()
                        .zip(r1p.iter_mut())
                        .zip(bg.chunks_exact(2 * k))
                        .enumerate()
                    {
                        let (b0, b1) = bp.split_at(k);
                        let j = col + 2 * i;
                        let s2 = [scale(sc, j), scale(sc, j + 1)];
                        let [l00, l01, l10, l11] = lanes_w::<U, 2, 2, $w>([a0, a1], [b0, b1], s2);
                        *u = [l00, l01];
                        *v = [l10, l11];
                    }
                    let i = 2 * p * n + col;
                    if let Some(x) = out8(c, i) {
                        store8(x, combine8(spread(r0)));
                    }
                    if let Some(y) = out8(c, i + n) {
                        store8(y, combine8(spread(r1)));
                    }
                }
            }
            // The last `n mod 8` rows of `B` for the pairs of rows of `A`.
            let done = n - n % 8;
            let b_rest = b_groups.remainder();
            let mut a_rows = a.chunks_exact(k).take(m);
            let mut c_rows = c.chunks_exact_mut(n).take(m);
            while let (Some(a0), Some(c0)) = (a_rows.next(), c_rows.next()) {
                match (a_rows.next(), c_rows.next()) {
                    (Some(a1), Some(c1)) => {
                        let c0 = c0.get_mut(done..).unwrap_or(&mut []);
                        let c1 = c1.get_mut(done..).unwrap_or(&mut []);
                        let (c0p, c0r) = c0.as_chunks_mut::<2>();
                        let (c1p, c1r) = c1.as_chunks_mut::<2>();
                        let mut b_pairs = b_rest.chunks_exact(2 * k);
                        for (i, ((x, y), bp)) in c0p
                            .iter_mut()
                            .zip(c1p.iter_mut())
                            .zip(&mut b_pairs)
                            .enumerate()
                        {
                            let (b0, b1) = bp.split_at(k);
                            let j = done + 2 * i;
                            let s2 = [scale(sc, j), scale(sc, j + 1)];
                            let r = dots::<U, 2, 2, $w>([a0, a1], [b0, b1], s2);
                            *x = [r[0], r[1]];
                            *y = [r[2], r[3]];
                        }
                        if let (Some(x), Some(y)) = (c0r.first_mut(), c1r.first_mut()) {
                            let r = dots::<U, 2, 2, $w>([a0, a1], [b_last, b_last], [s_last; 2]);
                            *x = r[0];
                            *y = r[2];
                        }
                    }
                    _ => {
                        // An odd last row of `A`, with every row of `B`, four at a time (a
                        // single query's scores: the keys stream from memory, and measured
                        // faster in quads than in the groups above).
                        let (cq, cr) = c0.as_chunks_mut::<4>();
                        let mut b_quads = b.chunks_exact(4 * k);
                        for (i, (x, bq)) in cq.iter_mut().zip(&mut b_quads).enumerate() {
                            prefetch_ahead(bq, AHEAD.wrapping_mul(core::mem::size_of_val(bq)));
                            let (b01, b23) = bq.split_at(2 * k);
                            let (b0, b1) = b01.split_at(k);
                            let (b2, b3) = b23.split_at(k);
                            let j = 4 * i;
                            let s4 = [0, 1, 2, 3].map(|d| scale(sc, j + d));
                            *x = dots::<U, 1, 4, $w>([a0], [b0, b1, b2, b3], s4);
                        }
                        if !cr.is_empty() {
                            let j = n - cr.len();
                            let mut rest = b_quads.remainder().chunks_exact(k);
                            let bs = [(); 4].map(|_| rest.next().unwrap_or(b_last));
                            let s4 =
                                [0, 1, 2, 3]
                                    .map(|d| if j + d < n { scale(sc, j + d) } else { s_last });
                            let r = dots::<U, 1, 4, $w>([a0], bs, s4);
                            for (x, &v) in cr.iter_mut().zip(r.iter()) {
                                *x = v;
                            }
                        }
                    }
                }
            }
        }

        #[target_feature(enable = $feat)]
        fn $nn<U: Lane8>(
            a: &[f32],
            b: &[U],
            sc: &[U::Scale],
            n: usize,
            k: usize,
            c: &mut [f32],
            accumulate: bool,
        ) {
            if !accumulate {
                c.fill(0.0);
            }
            if n == 0 || k == 0 {
                return;
            }
            let mut b_rest = b;
            let mut j0 = 0;
            while j0 < n {
                let rows = GROUP.min(n - j0);
                let Some((b_grp, b_next)) = rows
                    .checked_mul(k)
                    .and_then(|len| b_rest.split_at_checked(len))
                else {
                    return;
                };
                b_rest = b_next;
                let g = Group {
                    b: b_grp,
                    s: sc.get(j0..).unwrap_or(&[]),
                    k,
                };
                // Two rows of `C` at a time (each load of `B` serves both), then an odd last one;
                // walked with checked splits (no division).
                let (mut a_rest, mut c_rest) = (a, &mut *c);
                // With AVX-512, four rows of 64 columns or more at a time first.
                while $w && k.is_multiple_of(64) {
                    let Some((a4, a_next)) =
                        n.checked_mul(4).and_then(|x| a_rest.split_at_checked(x))
                    else {
                        break;
                    };
                    let Some(ck) = k.checked_mul(4).filter(|&x| x <= c_rest.len()) else {
                        break;
                    };
                    let Some((c4, c_next)) = core::mem::take(&mut c_rest).split_at_mut_checked(ck)
                    else {
                        // Never (`ck` values are there).
                        break;
                    };
                    // SAFETY: only with `$w`, in the AVX-512 kernel: the CPU has AVX-512F, AVX2
                    // and F16C.
                    unsafe { row4::<U>(c4, a4, j0, rows, g) };
                    a_rest = a_next;
                    c_rest = c_next;
                }
                while let (Some((a0, a_next)), Some((c0, c_next))) = (
                    a_rest.split_at_checked(n),
                    core::mem::take(&mut c_rest).split_at_mut_checked(k),
                ) {
                    let a0 = a0.get(j0..j0 + rows).unwrap_or(&[]);
                    match (a_next.split_at_checked(n), c_next.split_at_mut_checked(k)) {
                        (Some((a1, a_after)), Some((c1, c_after))) => {
                            let a1 = a1.get(j0..j0 + rows).unwrap_or(&[]);
                            row2::<U, $w>((c0, c1), a0, a1, g);
                            a_rest = a_after;
                            c_rest = c_after;
                        }
                        _ => {
                            row1::<U, $w>(c0, a0, g);
                            a_rest = &[];
                        }
                    }
                }
                j0 += rows;
            }
        }
    };
}

kernels!("avx2,f16c", kernel_nt, kernel_nn, false);
kernels!("avx512f,avx2,f16c", kernel_nt_wide, kernel_nn_wide, true);
