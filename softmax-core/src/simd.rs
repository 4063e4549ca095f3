//! Which machine code the kernels run as: chosen once per call, in this one place.
//!
//! Every kernel is plain Rust that LLVM vectorises. On x86_64 the same kernel is also compiled
//! with AVX2 and with AVX-512F enabled, and each call runs the widest copy the CPU (and the
//! operating system, which must save the wider registers) supports; the CPU is asked once, with
//! `CPUID` and `XGETBV` through `core::arch` (no `std`), and the answer is cached. Other targets
//! have one copy, compiled for the target's own features (aarch64's NEON is baseline there).
//!
//! One exception to "plain Rust": the f32 matrix products of [`linalg`](crate::linalg)
//! (`matmul_nt`, `matmul_nn`), the score and value products of attention, also have an AVX2
//! copy written with `core::arch` intrinsics, in this module. LLVM scalarised every portable
//! formulation of four dot products sharing their loads, and it kept the running sums of a
//! column block in memory; the hand-scheduled copy performs exactly the portable loop's
//! roundings in the same order (the same lanes, the same pairwise lane tree, no fused
//! multiply-add), so it too changes no bit: `softmax-core/tests/products.rs` compares it with the
//! definitions in release builds (CI runs it there, and it asserts that the AVX2 copy is the one
//! that ran when the CPU has AVX2), and `cargo test --release -p harness --test dispatch_levels`
//! with the baseline level. It made attention's prefill about 1.25× faster on this crate's test machine.
//!
//! A second exception: the AVX2+FMA kernel of [`fast`](crate::fast), the explicitly chosen fast
//! softmax variant, the one place in the workspace that uses fused multiply-add. Every fused
//! multiply-add there is the hardware's single rounding, and the portable reference computes the
//! same correctly rounded value in software ([`fast::fma`](crate::fast::fma)), so this too
//! changes no bit: `softmax-core/tests/fast.rs` (release, in CI) compares the two, and the
//! on-target suite's `softmax/fast/f32` case gives the same digest on the Cortex-M4F and M0.
//!
//! **The level never changes a result bit.** Only the width of the machine code differs: the
//! reductions have a fixed number of lanes combined in a fixed order, and Rust never contracts a
//! multiply and an add into a fused multiply-add, so every operation rounds exactly as in the
//! portable code. `harness/tests/dispatch_levels.rs` runs every kernel at every level the test
//! machine has and compares bits.
//!
//! Targets without SSE (`x86_64-unknown-none`, whose kernels do not save vector registers)
//! never dispatch, and neither do builds with debug assertions (cargo's `dev` and `test`
//! profiles): they compile the baseline copy only, since the wider copies of every inlined
//! kernel tripled the compile time of test builds. Release builds have all three. [`set_max_level`] caps the choice, e.g. to keep a program off AVX-512.
//!
//! # Examples
//!
//! ```
//! use softmax_core::simd::{self, Level};
//! let chosen = simd::level();
//! assert!(chosen <= simd::detected());
//! simd::set_max_level(Level::Baseline); // every kernel now runs its baseline copy
//! assert_eq!(simd::level(), Level::Baseline);
//! simd::set_max_level(Level::Avx512); // back to the widest the CPU has
//! assert_eq!(simd::level(), chosen);
//! ```

/// A width of machine code, from narrowest to widest.
///
/// # Examples
///
/// ```
/// use softmax_core::simd::Level;
/// assert!(Level::Baseline < Level::Avx2 && Level::Avx2 < Level::Avx512);
/// assert_eq!(Level::Avx2.name(), "avx2");
/// ```
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Level {
    /// The target's own features, as the crate was compiled (SSE2 for a default x86_64 build,
    /// NEON on aarch64, scalar code on microcontrollers).
    Baseline,
    /// x86_64 with AVX2 and FMA (eight f32 lanes per instruction).
    Avx2,
    /// x86_64 with AVX-512F, AVX2 and FMA (sixteen f32 lanes per instruction).
    Avx512,
}

impl Level {
    /// Short lower-case name, for tables.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(softmax_core::simd::Level::Baseline.name(), "baseline");
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            Level::Baseline => "baseline",
            Level::Avx2 => "avx2",
            Level::Avx512 => "avx512f",
        }
    }
}

/// The widest level this CPU and operating system support (asked once, then cached).
///
/// # Examples
///
/// ```
/// let d = softmax_core::simd::detected();
/// assert!(d >= softmax_core::simd::Level::Baseline);
/// ```
pub fn detected() -> Level {
    imp::detected()
}

/// The level the kernels run at: [`detected`], capped by [`set_max_level`].
///
/// # Examples
///
/// ```
/// assert!(softmax_core::simd::level() <= softmax_core::simd::detected());
/// ```
pub fn level() -> Level {
    imp::level()
}

/// Caps the level the kernels may use (for the whole program, from the next call on). A cap
/// above what the CPU has is harmless: [`level`] is the smaller of the two. Results do not
/// depend on the level, only speed does.
///
/// # Examples
///
/// ```
/// use softmax_core::simd::{self, Level};
/// simd::set_max_level(Level::Avx2);
/// assert!(simd::level() <= Level::Avx2);
/// simd::set_max_level(Level::Avx512);
/// ```
pub fn set_max_level(cap: Level) {
    imp::set_cap(cap)
}

/// Runs `f` compiled at the current [`level`]: the one place that picks machine code, for
/// softmax-core's kernels and for crates built on them (attention-core and loss-core run their
/// own loops through it too, so they follow the same choice).
///
/// Only code inlined into `f` is compiled with the level's features: mark the closure
/// `#[inline(always)]` and keep its hot code `#[inline(always)]` (generic functions called from
/// it are instantiated inside it). Safe to call anywhere: the level never exceeds what the CPU
/// and operating system support, and the result bits do not depend on it (no operation in this
/// workspace contracts a multiply and an add).
///
/// # Examples
///
/// ```
/// use softmax_core::simd;
/// let x = [1.0f32, 2.0, 3.0];
/// let s = simd::dispatch(
///     #[inline(always)]
///     || x.iter().map(|v| v * v).sum::<f32>(),
/// );
/// assert_eq!(s, 14.0);
/// ```
#[inline(always)]
pub fn dispatch<R>(f: impl FnOnce() -> R) -> R {
    imp::exec(f)
}

/// [`dispatch`], under the name the crate's kernels use.
#[inline(always)]
pub(crate) fn exec<R>(f: impl FnOnce() -> R) -> R {
    imp::exec(f)
}

// The f32 matrix products with hand-scheduled AVX2 code, for `linalg`: `matmul_nt_f32(a, b, k,
// c)` is `C = A·Bᵀ` and `matmul_nn_f32(a, b, n, k, c, accumulate)` is `C (+)= A·B`, each bit for
// bit the portable loop's result (`linalg::matmul_nt_unchecked` / `matmul_nn_unchecked`, same
// shapes). They return `false` when not taken (a level below AVX2, another target, a debug
// build), and the caller runs the portable loop.
pub(crate) use imp::{matmul_nn_f32, matmul_nt_f32};

// `fast`'s rows with the AVX2+FMA kernel: `fast_rows(op, x, y, n)` runs `op` over the rows of `n`
// values, bit for bit as `fast::run` does with the portable kernel, and returns `false` when not taken (a level
// below AVX2, another target, a debug build), and the caller runs the portable rows.
pub(crate) use imp::fast_rows;

#[cfg(all(target_arch = "x86_64", target_feature = "sse2", not(debug_assertions)))]
#[allow(unsafe_code)]
mod imp {
    use super::Level;
    use crate::fast::Op;
    use core::sync::atomic::{AtomicU8, Ordering};

    fn from_u8(v: u8) -> Level {
        match v {
            2 => Level::Avx2,
            3 => Level::Avx512,
            _ => Level::Baseline,
        }
    }

    fn to_u8(l: Level) -> u8 {
        match l {
            Level::Baseline => 1,
            Level::Avx2 => 2,
            Level::Avx512 => 3,
        }
    }

    /// 0: not asked yet; otherwise `to_u8` of the level.
    static DETECTED: AtomicU8 = AtomicU8::new(0);
    /// The cap (`to_u8` of a level); starts uncapped.
    static CAP: AtomicU8 = AtomicU8::new(u8::MAX);

    fn ask_cpu() -> Level {
        use core::arch::x86_64::{__cpuid, __cpuid_count, _xgetbv};
        let max_leaf = __cpuid(0).eax;
        let l1 = __cpuid(1);
        let osxsave = l1.ecx & (1 << 27) != 0;
        let avx = l1.ecx & (1 << 28) != 0;
        // Every AVX2 CPU so far has FMA too; the level requires both, so that `fast`'s kernel
        // (the one user of fused multiply-add) can rely on it.
        let fma = l1.ecx & (1 << 12) != 0;
        if !(osxsave && avx) || max_leaf < 7 {
            return Level::Baseline;
        }
        // SAFETY: CPUID reports OSXSAVE, so the OS has enabled XGETBV and XCR0 can be read.
        let xcr0 = unsafe { _xgetbv(0) };
        // XMM and YMM state saved by the OS; for AVX-512 also opmask, ZMM0-15 upper, ZMM16-31.
        let ymm = xcr0 & 0b0000_0110 == 0b0000_0110;
        let zmm = xcr0 & 0b1110_0110 == 0b1110_0110;
        let l7 = __cpuid_count(7, 0);
        let avx2 = l7.ebx & (1 << 5) != 0;
        let avx512f = l7.ebx & (1 << 16) != 0;
        if avx512f && avx2 && fma && zmm {
            Level::Avx512
        } else if avx2 && fma && ymm {
            Level::Avx2
        } else {
            Level::Baseline
        }
    }

    pub(super) fn detected() -> Level {
        let v = DETECTED.load(Ordering::Relaxed);
        if v != 0 {
            return from_u8(v);
        }
        let l = ask_cpu();
        // Racing threads store the same answer.
        DETECTED.store(to_u8(l), Ordering::Relaxed);
        l
    }

    #[inline]
    pub(super) fn level() -> Level {
        let d = detected();
        let cap = from_u8(CAP.load(Ordering::Relaxed).min(to_u8(Level::Avx512)));
        d.min(cap)
    }

    pub(super) fn set_cap(cap: Level) {
        CAP.store(to_u8(cap), Ordering::Relaxed);
    }

    #[inline(always)]
    pub(super) fn exec<R>(f: impl FnOnce() -> R) -> R {
        match level() {
            // SAFETY: `level` never exceeds what `ask_cpu` found: the CPU executes AVX-512F and
            // AVX2 instructions and the OS saves the ZMM state.
            Level::Avx512 => unsafe { avx512(f) },
            // SAFETY: as above, for AVX2 and the YMM state.
            Level::Avx2 => unsafe { avx2(f) },
            Level::Baseline => f(),
        }
    }

    #[inline(always)]
    pub(crate) fn matmul_nt_f32(a: &[f32], b: &[f32], k: usize, c: &mut [f32]) -> bool {
        if level() < Level::Avx2 || k == 0 {
            return false;
        }
        // SAFETY: `level` never exceeds what `ask_cpu` found: AVX2 and the YMM state.
        unsafe { avx2_kernels::matmul_nt(a, b, k, c) };
        true
    }

    #[inline(always)]
    pub(crate) fn matmul_nn_f32(
        a: &[f32],
        b: &[f32],
        n: usize,
        k: usize,
        c: &mut [f32],
        accumulate: bool,
    ) -> bool {
        if level() < Level::Avx2 || n == 0 || k == 0 {
            return false;
        }
        // SAFETY: as in `matmul_nt_f32`.
        unsafe { avx2_kernels::matmul_nn(a, b, n, k, c, accumulate) };
        true
    }

    #[inline(always)]
    pub(crate) fn fast_rows(op: Op, x: &[f32], y: &mut [f32], n: usize) -> bool {
        if level() < Level::Avx2 || n == 0 {
            return false;
        }
        // SAFETY: `level` never exceeds what `ask_cpu` found: AVX2, FMA and the YMM state.
        unsafe { fast_kernels::rows(op, x, y, n) };
        true
    }

    #[target_feature(enable = "avx512f,avx2")]
    #[inline(never)]
    fn avx512<R>(f: impl FnOnce() -> R) -> R {
        f()
    }

    #[target_feature(enable = "avx2")]
    #[inline(never)]
    fn avx2<R>(f: impl FnOnce() -> R) -> R {
        f()
    }

    /// The AVX2 copies of `linalg`'s f32 matrix products. They are not a different algorithm:
    /// every element is the portable loop's sequence of roundings (no fused multiply-add; the
    /// 16 lanes of a dot product combined in the same pairwise tree), only scheduled by hand so
    /// that several dot products share their loads and the lane trees of four or eight dot
    /// products are combined together, and two rows of a value product share their loads. `softmax-core/tests/products.rs` (release, in CI) compares their bits
    /// with the definitions, `harness/tests/dispatch_levels.rs` (release) with the portable
    /// loop's.
    mod avx2_kernels {
        use core::arch::x86_64::{
            __m256, _mm256_add_ps, _mm256_castps256_ps128, _mm256_extractf128_ps, _mm256_loadu_ps,
            _mm256_mul_ps, _mm256_permute2f128_ps, _mm256_set1_ps, _mm256_setzero_ps,
            _mm256_shuffle_ps, _mm256_storeu_ps, _mm_cvtss_f32, _mm_movehdup_ps,
        };

        /// Lanes of a dot product (`kernel::LANES`): two AVX2 vectors, `lo` = lanes 0..8.
        const L: usize = crate::kernel::LANES;
        const _: () = assert!(
            L == 16,
            "the kernels below hold a dot product in two vectors"
        );
        /// Rows of `B` per group in `matmul_nn` (the portable loop's: the same walk).
        const GROUP: usize = crate::linalg::GROUP;

        #[target_feature(enable = "avx2")]
        #[inline]
        pub(super) fn load8(x: &[f32; 8]) -> __m256 {
            // SAFETY: `x` is 8 floats; `loadu` has no alignment requirement.
            unsafe { _mm256_loadu_ps(x.as_ptr()) }
        }

        #[target_feature(enable = "avx2")]
        #[inline]
        pub(super) fn store8(x: &mut [f32; 8], v: __m256) {
            // SAFETY: `x` is 8 floats; `storeu` has no alignment requirement.
            unsafe { _mm256_storeu_ps(x.as_mut_ptr(), v) }
        }

        /// Lanes `0..8` and `8..16` of a chunk of 16.
        #[inline(always)]
        fn halves(x: &[f32; L]) -> (&[f32; 8], &[f32; 8]) {
            let (lo, hi) = x.split_at(8);
            (
                <&[f32; 8]>::try_from(lo).unwrap_or(&[0.0; 8]),
                <&[f32; 8]>::try_from(hi).unwrap_or(&[0.0; 8]),
            )
        }

        /// The last `len mod 16` values of a row, padded with zeros to a whole chunk. A padding lane
        /// adds `+0·+0 = +0` to its running sum, which changes nothing: a lane's sum starts at `+0`
        /// and round-to-nearest never makes it `−0`.
        #[inline(always)]
        fn padded(tail: &[f32]) -> [f32; L] {
            let mut p = [0.0; L];
            for (d, &s) in p.iter_mut().zip(tail) {
                *d = s;
            }
            p
        }

        /// The pairwise lane tree of `linalg::combine` for four dot products at once, from their
        /// lanes after its first level (`x[i]` = lanes `l + l+8`, `l < 8`): then `l + l+4` (the two
        /// 128-bit halves), `l + l+2`, `l + l+1`.
        #[target_feature(enable = "avx2")]
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
        #[target_feature(enable = "avx2")]
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
        /// order `r·C + c`. Each is `linalg::dot_unchecked` to the bit.
        #[target_feature(enable = "avx2")]
        #[inline]
        fn dots<const R: usize, const C: usize>(a: [&[f32]; R], b: [&[f32]; C]) -> [f32; 4] {
            combine4(lanes::<R, C>(a, b))
        }

        /// The lanes of the dot products of [`dots`] after the first level of their lane tree
        /// (`l + l+8`), in the same order.
        #[target_feature(enable = "avx2")]
        #[inline]
        fn lanes<const R: usize, const C: usize>(a: [&[f32]; R], b: [&[f32]; C]) -> [__m256; 4] {
            let zero = _mm256_setzero_ps();
            let mut lo = [[zero; C]; R];
            let mut hi = [[zero; C]; R];
            let mut step = |xa: [&[f32; L]; R], xb: [&[f32; L]; C]| {
                let va = xa.map(|x| {
                    let (l, h) = halves(x);
                    (load8(l), load8(h))
                });
                for (c, xb) in xb.iter().enumerate() {
                    let (l, h) = halves(xb);
                    let (bl, bh) = (load8(l), load8(h));
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
                    step(xa, xb);
                }
            }
            if ac.iter().any(|x| !x.1.is_empty()) {
                let pa = ac.map(|x| padded(x.1));
                let pb = bc.map(|x| padded(x.1));
                step(pa.each_ref(), pb.each_ref());
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
        fn row(x: &[f32], i: usize, k: usize) -> &[f32] {
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

        /// `C = A·Bᵀ` (`a` `m × k`, `b` `n × k`, `c` `m × n`, `k > 0`). Pairs of rows of `A` take
        /// the rows of `B` in groups of eight: four 2 × 2 blocks (four dot products sharing their
        /// loads each), whose eight lane trees per row are then combined together
        /// ([`combine8`]) and stored as one vector; each group meets every pair of rows while it
        /// is in L1. Combining each block's four trees as soon as its products were summed left
        /// the core waiting on that dependency chain, and taking the pairs of rows outermost
        /// read attention's 32 KiB key block from L2 once per pair: together 2.4 times slower
        /// in isolation, 5% of attention's time. The last `n mod 8` rows of `B` go two at a
        /// time; an odd last row of `A` (a single query's scores, whose keys stream from
        /// memory) takes the rows of `B` four at a time.
        #[target_feature(enable = "avx2")]
        pub(super) fn matmul_nt(a: &[f32], b: &[f32], k: usize, c: &mut [f32]) {
            if k == 0 {
                return;
            }
            let n = b.len() / k;
            let Some(last) = n.checked_sub(1) else {
                return;
            };
            let b_last = row(b, last, k);
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
                    for ((u, v), bp) in r0p
                        .iter_mut()
                        .zip(r1p.iter_mut())
                        .zip(bg.chunks_exact(2 * k))
                    {
                        let (b0, b1) = bp.split_at(k);
                        let [l00, l01, l10, l11] = lanes::<2, 2>([a0, a1], [b0, b1]);
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
                        for ((x, y), bp) in c0p.iter_mut().zip(c1p.iter_mut()).zip(&mut b_pairs) {
                            let (b0, b1) = bp.split_at(k);
                            let r = dots::<2, 2>([a0, a1], [b0, b1]);
                            *x = [r[0], r[1]];
                            *y = [r[2], r[3]];
                        }
                        if let (Some(x), Some(y)) = (c0r.first_mut(), c1r.first_mut()) {
                            let r = dots::<2, 2>([a0, a1], [b_last, b_last]);
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
                        for (x, bq) in cq.iter_mut().zip(&mut b_quads) {
                            let (b01, b23) = bq.split_at(2 * k);
                            let (b0, b1) = b01.split_at(k);
                            let (b2, b3) = b23.split_at(k);
                            *x = dots::<1, 4>([a0], [b0, b1, b2, b3]);
                        }
                        if !cr.is_empty() {
                            let mut rest = b_quads.remainder().chunks_exact(k);
                            let bs = [(); 4].map(|_| rest.next().unwrap_or(b_last));
                            let r = dots::<1, 4>([a0], bs);
                            for (x, &v) in cr.iter_mut().zip(r.iter()) {
                                *x = v;
                            }
                        }
                    }
                }
            }
        }

        /// `c[off .. off + 8·V] += Σ_j x_j·b_j[off ..]` over the pairs in order, `V` vectors of
        /// running sums in registers for the whole walk.
        #[target_feature(enable = "avx2")]
        #[inline]
        fn columns<'a, const V: usize>(
            c: &mut [f32],
            off: usize,
            pairs: impl Iterator<Item = (f32, &'a [f32])>,
        ) {
            // Arrays of `V` vectors throughout (`first_chunk`), so that the loops over them
            // unroll and the running sums stay in registers.
            let Some(cv) = c
                .get_mut(off..)
                .and_then(|c| c.as_chunks_mut::<8>().0.first_chunk_mut::<V>())
            else {
                return;
            };
            let mut acc = [_mm256_setzero_ps(); V];
            for v in 0..V {
                acc[v] = load8(&cv[v]);
            }
            for (x, b_row) in pairs {
                let Some(bv) = b_row
                    .get(off..)
                    .and_then(|b| b.as_chunks::<8>().0.first_chunk::<V>())
                else {
                    continue;
                };
                let xv = _mm256_set1_ps(x);
                for v in 0..V {
                    acc[v] = _mm256_add_ps(acc[v], _mm256_mul_ps(xv, load8(&bv[v])));
                }
            }
            for v in 0..V {
                store8(&mut cv[v], acc[v]);
            }
        }

        /// [`columns`] for two rows of `C` at once (`c0`, `c1`, weights `x0`, `x1` per row of
        /// `B`): each load of `B` serves both rows. The same operations per element.
        #[target_feature(enable = "avx2")]
        #[inline]
        fn columns2<'a, const V: usize>(
            c0: &mut [f32],
            c1: &mut [f32],
            off: usize,
            pairs: impl Iterator<Item = (f32, f32, &'a [f32])>,
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
            for (x0, x1, b_row) in pairs {
                let Some(bv) = b_row
                    .get(off..)
                    .and_then(|b| b.as_chunks::<8>().0.first_chunk::<V>())
                else {
                    continue;
                };
                let (xv0, xv1) = (_mm256_set1_ps(x0), _mm256_set1_ps(x1));
                for v in 0..V {
                    let b = load8(&bv[v]);
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

        /// The triples `(a0_grp[j], a1_grp[j], row j of b_grp)` ([`group`] for two rows).
        #[inline(always)]
        fn group2<'x>(
            a0_grp: &'x [f32],
            a1_grp: &'x [f32],
            b_grp: &'x [f32],
            k: usize,
        ) -> impl Iterator<Item = (f32, f32, &'x [f32])> + 'x {
            group(a0_grp, b_grp, k)
                .zip(a1_grp.iter().copied())
                .map(|((x0, row), x1)| (x0, x1, row))
        }

        /// One row of `C` over one group of rows of `B`: 128, 64, 32, 16 or 8 columns in
        /// registers, the last `k mod 8` one at a time. 128 columns take all sixteen vector
        /// registers as running sums (LLVM spills two): a single query's value product at
        /// dv = 128 then reads each value row once instead of in two halves, measured 8% faster
        /// on decode (n = 4096, d = 128).
        #[target_feature(enable = "avx2")]
        #[inline]
        fn row1(c_row: &mut [f32], a_grp: &[f32], b_grp: &[f32], k: usize) {
            let mut off = 0;
            while off + 128 <= k {
                columns::<16>(c_row, off, group(a_grp, b_grp, k));
                off += 128;
            }
            while off + 64 <= k {
                columns::<8>(c_row, off, group(a_grp, b_grp, k));
                off += 64;
            }
            if off + 32 <= k {
                columns::<4>(c_row, off, group(a_grp, b_grp, k));
                off += 32;
            }
            if off + 16 <= k {
                columns::<2>(c_row, off, group(a_grp, b_grp, k));
                off += 16;
            }
            if off + 8 <= k {
                columns::<1>(c_row, off, group(a_grp, b_grp, k));
                off += 8;
            }
            rest(c_row, off, a_grp, b_grp, k);
        }

        /// Columns `off..` of a row of `C` (fewer than 8), one at a time.
        #[inline(always)]
        fn rest(c_row: &mut [f32], off: usize, a_grp: &[f32], b_grp: &[f32], k: usize) {
            let Some(rest) = c_row.get_mut(off..).filter(|r| !r.is_empty()) else {
                return;
            };
            for (x, b_row) in group(a_grp, b_grp, k) {
                for (s, &bv) in rest.iter_mut().zip(b_row.get(off..).unwrap_or(&[])) {
                    *s += x * bv;
                }
            }
        }

        /// Two rows of `C` over one group of rows of `B`: 32, 16 or 8 columns of each in
        /// registers ([`columns2`]), the last `k mod 8` one at a time.
        #[target_feature(enable = "avx2")]
        #[inline]
        fn row2(
            c0: &mut [f32],
            c1: &mut [f32],
            a0_grp: &[f32],
            a1_grp: &[f32],
            b_grp: &[f32],
            k: usize,
        ) {
            let mut off = 0;
            while off + 32 <= k {
                columns2::<4>(c0, c1, off, group2(a0_grp, a1_grp, b_grp, k));
                off += 32;
            }
            if off + 16 <= k {
                columns2::<2>(c0, c1, off, group2(a0_grp, a1_grp, b_grp, k));
                off += 16;
            }
            if off + 8 <= k {
                columns2::<1>(c0, c1, off, group2(a0_grp, a1_grp, b_grp, k));
                off += 8;
            }
            rest(c0, off, a0_grp, b_grp, k);
            rest(c1, off, a1_grp, b_grp, k);
        }

        /// The pairs `(a_grp[j], row j of b_grp)` (rows of `k` values; `k > 0`). Walked with
        /// checked splits: no division, which would cost more than a short walk of attention's
        /// (one row of a key block per call).
        #[inline(always)]
        fn group<'x>(
            a_grp: &'x [f32],
            b_grp: &'x [f32],
            k: usize,
        ) -> impl Iterator<Item = (f32, &'x [f32])> + 'x {
            let mut rest = b_grp;
            a_grp.iter().copied().map_while(move |x| {
                let (row, next) = rest.split_at_checked(k)?;
                rest = next;
                Some((x, row))
            })
        }

        /// `C (+)= A·B` (`a` `m × n`, `b` `n × k`, `c` `m × k`, `n, k > 0`): `linalg::matmul_nn`'s
        /// walk (groups of 64 rows of `B` outermost), two rows of `C` at a time with 32, 16 or 8
        /// columns of each in registers ([`row2`]), an odd last row with 128, 64, 32, 16 or 8
        /// ([`row1`]), and the last `k mod 8` columns one at a time.
        #[target_feature(enable = "avx2")]
        pub(super) fn matmul_nn(
            a: &[f32],
            b: &[f32],
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
                // Two rows of `C` at a time (each load of `B` serves both), then an odd last one;
                // walked with checked splits (no division).
                let (mut a_rest, mut c_rest) = (a, &mut *c);
                while let (Some((a0, a_next)), Some((c0, c_next))) = (
                    a_rest.split_at_checked(n),
                    core::mem::take(&mut c_rest).split_at_mut_checked(k),
                ) {
                    let a0 = a0.get(j0..j0 + rows).unwrap_or(&[]);
                    match (a_next.split_at_checked(n), c_next.split_at_mut_checked(k)) {
                        (Some((a1, a_after)), Some((c1, c_after))) => {
                            let a1 = a1.get(j0..j0 + rows).unwrap_or(&[]);
                            row2(c0, c1, a0, a1, b_grp, k);
                            a_rest = a_after;
                            c_rest = c_after;
                        }
                        _ => {
                            row1(c0, a0, b_grp, k);
                            a_rest = &[];
                        }
                    }
                }
                j0 += rows;
            }
        }
    }

    /// The AVX2+FMA [`Kernel`](crate::fast::Kernel) of [`fast`](crate::fast): the portable
    /// reference's steps with the same lanes and order, each fused multiply-add the hardware's
    /// (which rounds once, as `fast::fma` does in software), so the same bits; the passes
    /// themselves are `fast::row`'s, shared. `softmax-core/tests/fast.rs` (release, in CI) and
    /// `harness/tests/dispatch_levels.rs` compare the two.
    mod fast_kernels {
        use super::avx2_kernels::{load8, store8};
        use crate::fast::{
            row, Kernel, Op, BLOCK_CHUNKS, C, CHUNK, LN2_HI, LN2_LO, LOG2E, LOW, MB,
        };
        use core::arch::x86_64::{
            __m128, __m256, __m256i, _mm256_add_ps, _mm256_blendv_ps, _mm256_castps256_ps128,
            _mm256_castps_si256, _mm256_castsi256_ps, _mm256_cmpgt_epi32, _mm256_extractf128_ps,
            _mm256_fmadd_ps, _mm256_fnmadd_ps, _mm256_maskload_ps, _mm256_maskstore_ps,
            _mm256_max_ps, _mm256_mul_ps, _mm256_set1_epi32, _mm256_set1_ps, _mm256_setr_epi32,
            _mm256_setzero_ps, _mm256_slli_epi32, _mm256_stream_ps, _mm256_sub_ps, _mm_add_ps,
            _mm_cvtss_f32, _mm_max_ps, _mm_movehdup_ps, _mm_movehl_ps, _mm_sfence, _mm_sub_ps,
        };

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
        fn exps_add(
            c: &[f32; CHUNK],
            m: __m256,
            part: &mut [__m256; V],
            o: Option<&mut [f32; CHUNK]>,
        ) {
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
        fn sum_exp(
            sums: &mut Sums,
            x: &[f32],
            r: f32,
            mut y: Option<&mut [f32]>,
            next: &[f32],
        ) -> f32 {
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
                |v| crate::fast::exp(v - r) * f,
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

        /// The AVX2+FMA [`Kernel`]. A value exists only inside [`rows`], which runs only after
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
        pub(super) fn rows(op: Op, x: &[f32], y: &mut [f32], n: usize) {
            let per = if op == Op::LogSumExp { 1 } else { n };
            for (x, y) in x.chunks_exact(n).zip(y.chunks_exact_mut(per)) {
                row(Avx2Fma(()), op, x, y);
            }
        }
    }
}

#[cfg(not(all(target_arch = "x86_64", target_feature = "sse2", not(debug_assertions))))]
mod imp {
    use super::Level;

    pub(super) fn detected() -> Level {
        Level::Baseline
    }

    #[inline]
    pub(super) fn level() -> Level {
        Level::Baseline
    }

    pub(super) fn set_cap(_cap: Level) {}

    #[inline(always)]
    pub(crate) fn fast_rows(_op: crate::fast::Op, _x: &[f32], _y: &mut [f32], _n: usize) -> bool {
        false
    }

    #[inline(always)]
    pub(crate) fn matmul_nt_f32(_a: &[f32], _b: &[f32], _k: usize, _c: &mut [f32]) -> bool {
        false
    }

    #[inline(always)]
    pub(crate) fn matmul_nn_f32(
        _a: &[f32],
        _b: &[f32],
        _n: usize,
        _k: usize,
        _c: &mut [f32],
        _accumulate: bool,
    ) -> bool {
        false
    }

    #[inline(always)]
    pub(super) fn exec<R>(f: impl FnOnce() -> R) -> R {
        f()
    }
}
