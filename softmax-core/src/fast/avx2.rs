//! The AVX2+FMA kernel of the [`fast`](super) variant: the portable reference's steps
//! (`passes.rs`) with the same lanes and order, each fused multiply-add the hardware's (which
//! rounds once, as [`fma`](super::fma) does in software), so the same bits; the passes
//! themselves are `passes::row`'s, shared. `softmax-core/tests/fast.rs` (release, in CI) and
//! `harness/tests/dispatch_levels.rs` compare the two.
//!
//! The `unsafe` of the kernel is confined to this file: the masked and non-temporal loads and
//! stores, and the calls of the `#[target_feature]` functions, made only after
//! [`simd::level`] has reported AVX2 (which the crate requires with FMA).
#![allow(unsafe_code)]

use super::passes::{exp, row, Kernel, Op, BLOCK_CHUNKS, C, CHUNK, LN2_HI, LN2_LO, LOG2E, LOW, MB};
use crate::chunks::{chunks, chunks_mut};
use crate::linalg::avx2::{load8, store8};
use crate::simd::{self, Level};
use core::arch::x86_64::{
    __m128, __m256, __m256i, _mm256_add_ps, _mm256_blendv_ps, _mm256_castps256_ps128,
    _mm256_castps_si256, _mm256_castsi256_ps, _mm256_cmpgt_epi32, _mm256_extractf128_ps,
    _mm256_fmadd_ps, _mm256_fnmadd_ps, _mm256_maskload_ps, _mm256_maskstore_ps, _mm256_max_ps,
    _mm256_mul_ps, _mm256_set1_epi32, _mm256_set1_ps, _mm256_setr_epi32, _mm256_setzero_ps,
    _mm256_slli_epi32, _mm256_stream_ps, _mm256_sub_ps, _mm_add_ps, _mm_cvtss_f32, _mm_max_ps,
    _mm_movehdup_ps, _mm_movehl_ps, _mm_sfence, _mm_sub_ps,
};

/// `op` over the rows of `n` values with the AVX2+FMA kernel, bit for bit as the portable
/// rows; `false` (nothing done) when the CPU runs below AVX2 or `n = 0`.
#[inline(always)]
pub(super) fn rows(op: Op, x: &[f32], y: &mut [f32], n: usize) -> bool {
    if simd::level() < Level::Avx2 || n == 0 {
        return false;
    }
    // SAFETY: `level` never exceeds what the CPU and the OS support: AVX2, FMA and the YMM
    // state.
    unsafe { kernel_rows(op, x, y, n) };
    true
}

/// Vectors per chunk.
const V: usize = CHUNK / 8;
const _: () = assert!(V == 2, "a chunk is two AVX2 vectors");

/// The two vectors of a chunk.
#[target_feature(enable = "avx2")]
#[inline]
fn load(c: &[f32; CHUNK]) -> [__m256; V] {
    let (q, _) = c.as_chunks::<8>();
    let mut v = [_mm256_setzero_ps(); V];
    for (v, q) in v.iter_mut().zip(q) {
        *v = load8(q);
    }
    v
}

/// Lane masks of the ragged end (`len < CHUNK` values): all ones in the lanes it fills.
#[target_feature(enable = "avx2")]
#[inline]
fn tail_masks(len: usize) -> [__m256i; V] {
    let iota = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    core::array::from_fn(|j| {
        let k = len.saturating_sub(8 * j).min(8) as i32;
        _mm256_cmpgt_epi32(_mm256_set1_epi32(k), iota)
    })
}

/// The ragged end of a row (`tail.len() < CHUNK`) as a chunk's two vectors, `-inf`
/// beyond its end (as `fast::chunks` pads it), loaded with masks instead of copied.
#[target_feature(enable = "avx2")]
#[inline]
fn load_tail(tail: &[f32]) -> [__m256; V] {
    let masks = tail_masks(tail.len());
    let ninf = _mm256_set1_ps(f32::NEG_INFINITY);
    let mut v = [ninf; V];
    for (j, (v, m)) in v.iter_mut().zip(masks).enumerate() {
        if let Some(part) = tail.get(8 * j..).filter(|p| !p.is_empty()) {
            // SAFETY: the lanes `m` selects are the first `min(8, part.len())`, all
            // inside `part`; `maskload` touches no other lane.
            let x = unsafe { _mm256_maskload_ps(part.as_ptr(), m) };
            *v = _mm256_blendv_ps(ninf, x, _mm256_castsi256_ps(m));
        }
    }
    v
}

/// Stores the first `tail.len()` lanes of `e` into `tail` (`tail.len() < CHUNK`).
#[target_feature(enable = "avx2")]
#[inline]
fn store_tail(tail: &mut [f32], e: [__m256; V]) {
    let masks = tail_masks(tail.len());
    for (j, (e, m)) in e.into_iter().zip(masks).enumerate() {
        if let Some(part) = tail.get_mut(8 * j..).filter(|p| !p.is_empty()) {
            // SAFETY: as in `load_tail`: `maskstore` writes only the selected lanes,
            // all inside `part`.
            unsafe { _mm256_maskstore_ps(part.as_mut_ptr(), m, e) };
        }
    }
}

/// `fast::exp` on eight values.
#[target_feature(enable = "avx2,fma")]
#[inline]
fn exp8(d: __m256) -> __m256 {
    let d = _mm256_max_ps(_mm256_set1_ps(LOW), d);
    let mb = _mm256_set1_ps(MB);
    let kf = _mm256_fmadd_ps(d, _mm256_set1_ps(LOG2E), mb);
    let nf = _mm256_sub_ps(kf, mb);
    let r = _mm256_fnmadd_ps(nf, _mm256_set1_ps(LN2_HI), d);
    let r = _mm256_fnmadd_ps(nf, _mm256_set1_ps(LN2_LO), r);
    let mut p = _mm256_set1_ps(C[4]);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(C[3]));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(C[2]));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(C[1]));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(C[0]));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0));
    let scale = _mm256_slli_epi32::<23>(_mm256_castps_si256(kf));
    _mm256_mul_ps(p, _mm256_castsi256_ps(scale))
}

/// The exps of a chunk's `x − m`.
#[target_feature(enable = "avx2,fma")]
#[inline]
fn exps(v: [__m256; V], m: __m256) -> [__m256; V] {
    v.map(|x| exp8(_mm256_sub_ps(x, m)))
}

/// The exps of a chunk's `x − m`, each vector added to its lanes' block sums as it is
/// made (and stored when `o` is given): one vector's temporaries live at a time.
#[target_feature(enable = "avx2,fma")]
#[inline]
fn exps_add(c: &[f32; CHUNK], m: __m256, part: &mut [__m256; V], o: Option<&mut [f32; CHUNK]>) {
    let (q, _) = c.as_chunks::<8>();
    match o {
        Some(o) => {
            let (oq, _) = o.as_chunks_mut::<8>();
            for ((p, q), o) in part.iter_mut().zip(q).zip(oq) {
                let e = exp8(_mm256_sub_ps(load8(q), m));
                store8(o, e);
                *p = _mm256_add_ps(*p, e);
            }
        }
        None => {
            for (p, q) in part.iter_mut().zip(q) {
                *p = _mm256_add_ps(*p, exp8(_mm256_sub_ps(load8(q), m)));
            }
        }
    }
}

#[target_feature(enable = "avx2")]
#[inline]
fn two_sum(a: __m256, b: __m256) -> (__m256, __m256) {
    let s = _mm256_add_ps(a, b);
    let bb = _mm256_sub_ps(s, a);
    let e = _mm256_add_ps(_mm256_sub_ps(a, _mm256_sub_ps(s, bb)), _mm256_sub_ps(b, bb));
    (s, e)
}

#[target_feature(enable = "avx2")]
#[inline]
fn two_sum4(a: __m128, b: __m128) -> (__m128, __m128) {
    let s = _mm_add_ps(a, b);
    let bb = _mm_sub_ps(s, a);
    let e = _mm_add_ps(_mm_sub_ps(a, _mm_sub_ps(s, bb)), _mm_sub_ps(b, bb));
    (s, e)
}

/// `fast`'s lane tree of the maximum: lanes `i` and `i + h` for h = 8 (vector 0 with
/// 1), 4 (the 128-bit halves), 2, 1; the lower lane first.
#[target_feature(enable = "avx2")]
#[inline]
fn hmax(m: [__m256; V]) -> f32 {
    let [m0, m1] = m;
    let a = _mm256_max_ps(m0, m1);
    let h = _mm_max_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps::<1>(a));
    let h = _mm_max_ps(h, _mm_movehl_ps(h, h));
    _mm_cvtss_f32(_mm_max_ps(h, _mm_movehdup_ps(h)))
}

/// `Kernel::finish` as the portable reference computes it: the same tree, each step a
/// TwoSum whose error joins the compensation, then `s + c` rounded once.
#[target_feature(enable = "avx2")]
#[inline]
fn finish(s: [__m256; V], c: [__m256; V]) -> f32 {
    let ([s0, s1], [c0, c1]) = (s, c);
    let (s0, e) = two_sum(s0, s1);
    let c0 = _mm256_add_ps(_mm256_add_ps(c0, c1), e);
    let (s, c) = (s0, c0);
    let (sh, ch) = (_mm256_extractf128_ps::<1>(s), _mm256_extractf128_ps::<1>(c));
    let (s, e) = two_sum4(_mm256_castps256_ps128(s), sh);
    let c = _mm_add_ps(_mm_add_ps(_mm256_castps256_ps128(c), ch), e);
    let (s, e) = two_sum4(s, _mm_movehl_ps(s, s));
    let c = _mm_add_ps(_mm_add_ps(c, _mm_movehl_ps(c, c)), e);
    let (s, e) = two_sum4(s, _mm_movehdup_ps(s));
    let c = _mm_add_ps(_mm_add_ps(c, _mm_movehdup_ps(c)), e);
    _mm_cvtss_f32(s) + _mm_cvtss_f32(c)
}

/// Per-lane compensated totals: lane `8j + l` is lane `l` of vector `j`.
#[derive(Clone, Copy)]
pub(super) struct Sums {
    s: [__m256; V],
    c: [__m256; V],
}

#[target_feature(enable = "avx2")]
#[inline]
fn fold(sums: &mut Sums, part: [__m256; V]) {
    for ((s, c), p) in sums.s.iter_mut().zip(sums.c.iter_mut()).zip(part) {
        let (v, e) = two_sum(*s, p);
        *s = v;
        *c = _mm256_add_ps(*c, e);
    }
}

#[target_feature(enable = "avx2")]
#[inline]
fn add(part: &mut [__m256; V], e: [__m256; V]) {
    for (p, e) in part.iter_mut().zip(e) {
        *p = _mm256_add_ps(*p, e);
    }
}

#[target_feature(enable = "avx2")]
#[inline]
fn max(x: &[f32]) -> f32 {
    let (whole, tail) = x.as_chunks::<CHUNK>();
    let mut mx = [_mm256_set1_ps(f32::NEG_INFINITY); V];
    for c in whole {
        for (m, v) in mx.iter_mut().zip(load(c)) {
            *m = _mm256_max_ps(v, *m);
        }
    }
    if !tail.is_empty() {
        for (m, v) in mx.iter_mut().zip(load_tail(tail)) {
            *m = _mm256_max_ps(v, *m);
        }
    }
    hmax(mx)
}

/// Maxima of `next`'s chunks into `mx`, one chunk per call of `step` (so that the loads
/// of the next block interleave with the exps of this one), the rest at the end.
struct NextMax<'a> {
    chunks: core::slice::Iter<'a, [f32; CHUNK]>,
    tail: &'a [f32],
    mx: [__m256; V],
}

impl<'a> NextMax<'a> {
    #[target_feature(enable = "avx2")]
    #[inline]
    fn new(next: &'a [f32]) -> Self {
        let (whole, tail) = next.as_chunks::<CHUNK>();
        NextMax {
            chunks: whole.iter(),
            tail,
            mx: [_mm256_set1_ps(f32::NEG_INFINITY); V],
        }
    }

    #[target_feature(enable = "avx2")]
    #[inline]
    fn step(&mut self) {
        if let Some(c) = self.chunks.next() {
            for (m, v) in self.mx.iter_mut().zip(load(c)) {
                *m = _mm256_max_ps(v, *m);
            }
        }
    }

    #[target_feature(enable = "avx2")]
    #[inline]
    fn finish(mut self) -> f32 {
        for c in self.chunks.by_ref() {
            for (m, v) in self.mx.iter_mut().zip(load(c)) {
                *m = _mm256_max_ps(v, *m);
            }
        }
        if !self.tail.is_empty() {
            for (m, v) in self.mx.iter_mut().zip(load_tail(self.tail)) {
                *m = _mm256_max_ps(v, *m);
            }
        }
        hmax(self.mx)
    }
}

#[target_feature(enable = "avx2,fma")]
#[inline]
fn sum_exp(sums: &mut Sums, x: &[f32], r: f32, mut y: Option<&mut [f32]>, next: &[f32]) -> f32 {
    let mv = _mm256_set1_ps(r);
    let (whole, tail) = x.as_chunks::<CHUNK>();
    let mut nm = NextMax::new(next);
    let mut acc = *sums;
    let mut blocks = whole.chunks(BLOCK_CHUNKS).peekable();
    let mut done = 0;
    while let Some(blk) = blocks.next() {
        let mut part = [_mm256_setzero_ps(); V];
        match y.as_deref_mut().and_then(|y| y.get_mut(done * CHUNK..)) {
            Some(out) => {
                let (oc, _) = out.as_chunks_mut::<CHUNK>();
                for (c, o) in blk.iter().zip(oc) {
                    exps_add(c, mv, &mut part, Some(o));
                }
            }
            // Without a next block (every row but the online pass's) the loop keeps
            // no state for it.
            None if next.is_empty() => {
                for c in blk {
                    exps_add(c, mv, &mut part, None);
                }
            }
            None => {
                for c in blk {
                    exps_add(c, mv, &mut part, None);
                    nm.step();
                }
            }
        }
        done += blk.len();
        // The ragged end joins the last block when that block has room.
        if blocks.peek().is_none() && blk.len() < BLOCK_CHUNKS && !tail.is_empty() {
            add(&mut part, tail_exps(tail, mv, y.as_deref_mut(), done));
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

/// The exps of the ragged end (padded with `-inf`: their terms are 0), stored into `y`
/// from chunk `at` on when given.
#[target_feature(enable = "avx2,fma")]
#[inline]
fn tail_exps(tail: &[f32], mv: __m256, y: Option<&mut [f32]>, at: usize) -> [__m256; V] {
    let e = exps(load_tail(tail), mv);
    if let Some(out) = y.and_then(|y| y.get_mut(at * CHUNK..)) {
        let n = out.len().min(tail.len());
        if let Some(o) = out.get_mut(..n) {
            store_tail(o, e);
        }
    }
    e
}

#[target_feature(enable = "avx2")]
#[inline]
fn scale(sums: &mut Sums, f: f32) {
    let fv = _mm256_set1_ps(f);
    for (s, c) in sums.s.iter_mut().zip(sums.c.iter_mut()) {
        *s = _mm256_mul_ps(*s, fv);
        *c = _mm256_mul_ps(*c, fv);
    }
}

#[target_feature(enable = "avx2")]
#[inline]
fn mul(y: &mut [f32], f: f32) {
    let fv = _mm256_set1_ps(f);
    let (yc, yt) = y.as_chunks_mut::<8>();
    for o in yc {
        store8(o, _mm256_mul_ps(load8(o), fv));
    }
    for o in yt {
        *o *= f;
    }
}

/// Rows at least this long (32 MiB of f32) write their output with non-temporal stores:
/// it cannot stay in the caches, and streaming it saves the read of every output line
/// before its write (4 of the 12 bytes per value of the online path's output pass).
const STREAM: usize = 1 << 23;

/// `y_i = fs(x_i)`, vectors by `fv` (the same bits value by value), with non-temporal
/// stores when `y` is at least [`STREAM`] long.
#[target_feature(enable = "avx2")]
#[inline]
fn map(x: &[f32], y: &mut [f32], fv: impl Fn(__m256) -> __m256, fs: impl Fn(f32) -> f32) {
    // Values before the first 32-byte aligned one (none when not streaming).
    let head = if y.len() >= STREAM {
        y.as_ptr().align_offset(32).min(y.len())
    } else {
        0
    };
    let (yh, yb) = y.split_at_mut(head);
    let (xh, xb) = (x.get(..head).unwrap_or(&[]), x.get(head..).unwrap_or(&[]));
    for (o, &v) in yh.iter_mut().zip(xh) {
        *o = fs(v);
    }
    let stream = head > 0 || yb.as_ptr().align_offset(32) == 0 && yb.len() >= STREAM;
    let (yc, yt) = yb.as_chunks_mut::<8>();
    let (xc, xt) = xb.as_chunks::<8>();
    if stream {
        for (o, v) in yc.iter_mut().zip(xc) {
            // SAFETY: `o` is 8 floats starting at a 32-byte boundary (`yb` starts at
            // one, and its chunks are 32 bytes), as `stream_ps` requires.
            unsafe { _mm256_stream_ps(o.as_mut_ptr(), fv(load8(v))) };
        }
        // Orders the non-temporal stores before any later store of this thread.
        _mm_sfence();
    } else {
        for (o, v) in yc.iter_mut().zip(xc) {
            store8(o, fv(load8(v)));
        }
    }
    for (o, &v) in yt.iter_mut().zip(xt) {
        *o = fs(v);
    }
}

#[target_feature(enable = "avx2,fma")]
#[inline]
fn exp_mul(x: &[f32], y: &mut [f32], r: f32, f: f32) {
    let (rv, fv) = (_mm256_set1_ps(r), _mm256_set1_ps(f));
    map(
        x,
        y,
        |v| _mm256_mul_ps(exp8(_mm256_sub_ps(v, rv)), fv),
        |v| exp(v - r) * f,
    );
}

#[target_feature(enable = "avx2")]
#[inline]
fn log_out(x: &[f32], y: &mut [f32], r: f32, l: f32) {
    let (rv, lv) = (_mm256_set1_ps(r), _mm256_set1_ps(l));
    map(
        x,
        y,
        |v| _mm256_sub_ps(_mm256_sub_ps(v, rv), lv),
        |v| (v - r) - l,
    );
}

/// The AVX2+FMA [`Kernel`]. A value exists only inside [`kernel_rows`], which runs only after
/// `level` reported AVX2 and FMA: holding one is the proof that calling the
/// `#[target_feature]` functions is sound.
#[derive(Clone, Copy)]
struct Avx2Fma(());

// SAFETY (every method): an `Avx2Fma` exists only after detection (see the type).
impl Kernel for Avx2Fma {
    type Sums = Sums;
    #[inline(always)]
    fn zero(self) -> Sums {
        Sums {
            s: [unsafe { _mm256_setzero_ps() }; V],
            c: [unsafe { _mm256_setzero_ps() }; V],
        }
    }
    #[inline(always)]
    fn max(self, x: &[f32]) -> f32 {
        unsafe { max(x) }
    }
    #[inline(always)]
    fn sum_exp(
        self,
        sums: &mut Sums,
        x: &[f32],
        r: f32,
        y: Option<&mut [f32]>,
        next: &[f32],
    ) -> f32 {
        unsafe { sum_exp(sums, x, r, y, next) }
    }
    #[inline(always)]
    fn scale(self, sums: &mut Sums, f: f32) {
        unsafe { scale(sums, f) }
    }
    #[inline(always)]
    fn finish(self, sums: Sums) -> f32 {
        unsafe { finish(sums.s, sums.c) }
    }
    #[inline(always)]
    fn mul(self, y: &mut [f32], f: f32) {
        unsafe { mul(y, f) }
    }
    #[inline(always)]
    fn exp_mul(self, x: &[f32], y: &mut [f32], r: f32, f: f32) {
        unsafe { exp_mul(x, y, r, f) }
    }
    #[inline(always)]
    fn log_out(self, x: &[f32], y: &mut [f32], r: f32, l: f32) {
        unsafe { log_out(x, y, r, l) }
    }
}

/// `op` over the rows of `n` values (`n > 0`; `y` as `fast::run` gives it).
#[target_feature(enable = "avx2,fma")]
fn kernel_rows(op: Op, x: &[f32], y: &mut [f32], n: usize) {
    let per = if op == Op::LogSumExp { 1 } else { n };
    for (x, y) in chunks(x, n).zip(chunks_mut(y, per)) {
        row(Avx2Fma(()), op, x, y);
    }
}
