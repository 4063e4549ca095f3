//! Which machine code the kernels run as: chosen once per call, in this one place.
//!
//! Every kernel is plain Rust that LLVM vectorises. On x86_64 the same kernel is also compiled
//! with AVX2 and with AVX-512F enabled, and each call runs the widest copy the CPU (and the
//! operating system, which must save the wider registers) supports; the CPU is asked once, with
//! `CPUID` and `XGETBV` through `core::arch` (no `std`), and the answer is cached. Other targets
//! have one copy, compiled for the target's own features (aarch64's NEON is baseline there).
//!
//! This module knows no kernel: it detects the level, caps it, and runs closures compiled for
//! it. The three pieces written with `core::arch` intrinsics instead of plain Rust live next to
//! the portable code they accelerate, and ask the level before they run: the matrix products
//! of [`linalg`](crate::linalg) (an AVX2 copy, over f32 rows and over the stored rows of
//! [`stored`](crate::stored), converted with AVX2 and F16C exactly as the portable code
//! converts them), the [`fast`](crate::fast) variant's kernels (AVX2+FMA and AVX-512), and the
//! last tree of the f32 compensated sums (once per row of every softmax-family kernel and once
//! per block of [`OnlineSoftmax`](crate::OnlineSoftmax), an AVX2 copy) with the f32 max pass
//! beside it (AVX2 and AVX-512 copies). All three perform the portable code's roundings (and
//! comparisons) in the same order, so they too change no bit.
//!
//! **The level never changes a result bit.** Only the width of the machine code differs: the
//! reductions have a fixed number of lanes combined in a fixed order, and Rust never contracts a
//! multiply and an add into a fused multiply-add, so every operation rounds exactly as in the
//! portable code. `harness/tests/dispatch_levels.rs` runs every kernel at every level the test
//! machine has and compares bits.
//!
//! Targets without SSE (`x86_64-unknown-none`, whose kernels do not save vector registers)
//! never dispatch, and neither do builds of a `dev`-based profile or with debug assertions
//! (cargo's `dev` and `test` profiles): they compile the baseline copy only, since the wider
//! copies of every inlined kernel tripled the compile time of test builds. Release-based builds
//! without debug assertions have all three (the build script sets the cfg `softmax_dispatch`
//! for exactly these builds). [`set_max_level`] caps the choice, e.g. to keep a program off
//! AVX-512.
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
    /// x86_64 with AVX2, FMA and F16C (eight f32 lanes per instruction).
    Avx2,
    /// x86_64 with AVX-512F, AVX2, FMA and F16C (sixteen f32 lanes per instruction).
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

/// The widest level this CPU and operating system support (asked once, then cached), among the
/// levels this build compiled: [`Level::Baseline`] on targets other than x86_64 and in builds
/// without the dispatch (debug builds; see the [module](self) docs).
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

/// [`level`] as far as it is known without asking the CPU ([`Level::Baseline`] before the first
/// question): for code inside the kernels, where [`exec`] has asked already, at the cost of two
/// loads.
#[cfg(softmax_dispatch)]
#[inline(always)]
pub(crate) fn known() -> Level {
    imp::known()
}

/// [`dispatch`], under the name the crate's kernels use.
#[inline(always)]
pub(crate) fn exec<R>(f: impl FnOnce() -> R) -> R {
    imp::exec(f)
}

#[cfg(softmax_dispatch)]
#[allow(unsafe_code)]
mod imp {
    use super::Level;
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
        // Likewise F16C (the f16 → f32 conversion the products over an f16 KV cache use).
        let f16c = l1.ecx & (1 << 29) != 0;
        if !(osxsave && avx && f16c) || max_leaf < 7 {
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

    /// [`level`] without asking the CPU (`Baseline` until something has): two loads, for code
    /// inside the kernels, which [`exec`] has already asked.
    #[inline(always)]
    pub(super) fn known() -> Level {
        let d = DETECTED.load(Ordering::Relaxed);
        from_u8(d.min(CAP.load(Ordering::Relaxed)))
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
}

#[cfg(not(softmax_dispatch))]
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
    pub(super) fn exec<R>(f: impl FnOnce() -> R) -> R {
        f()
    }
}
