//! The same 128 sequential FMA chains as `dot_fma_soft` (one query row of d = 64 against 128 key
//! rows, the attention tile's q and K; 8192 multiply-adds), with the Cortex-M4F's hardware fused
//! multiply-add `vfma.f32` on thumbv7em-none-eabihf, and `softmax_core::fast::fma` (software) on
//! the Cortex-M0, which has no FPU. Both round each `q_t·k_t + acc` once, to nearest, so the
//! output has the same bits as `dot_fma_soft`'s in every build (the host checks it).
//!
//! Stable Rust has no fused multiply-add in `core` (`f32::mul_add` is std's; `core::f32::math::
//! mul_add` is unstable, rust-lang/rust#137578), and rustc 1.95's `asm!` cannot name the FPU's
//! registers on thumbv7em-none-eabihf: its `sreg` classes require the `vfp2` feature, which
//! includes f64, and this target has the single-precision `vfp4d16sp` (rust-lang/rust#159976,
//! #161826); `clobber_abi("C")` works but makes LLVM warn about the absent d16–d31 in every
//! build. So the chain is one `naked_asm!` function, which the AAPCS-VFP lets use s0–s15 (the
//! caller saves them). Its loop is the one LLVM emits for this chain at opt-level s when allowed
//! to fuse (`-C llvm-args=-fp-contract=fast`): two post-incrementing `vldmia`, `subs`,
//! `vfma.f32`, `bne`, five instructions per multiply-add, the same loop as LLVM's for the unfused
//! chain `acc + q_t·k_t` with `vmla.f32` in place of `vfma.f32`; plus a call per key row. It is
//! the same code at both opt-levels (at opt-level 3 LLVM unrolls such a loop by four, which this
//! row does not show).
#![no_std]
#![no_main]

use softmax_cost::dot_rows;

/// `acc = fma(q[t], k[t], acc)` for `t = 0..n` from `acc = 0` by `vfma.f32`, returning `acc`.
///
/// # Safety
///
/// `q` and `k` are valid for reads of `n` values each.
#[cfg(target_abi = "eabihf")]
#[unsafe(naked)]
unsafe extern "C" fn vfma_chain(q: *const f32, k: *const f32, n: usize) -> f32 {
    // SAFETY: a whole function under the AAPCS-VFP (`extern "C"` on this hard-float target): q in
    // r0, k in r1, n in r2, the result in s0. It reads the n values at q and at k (valid, the
    // caller promises), writes only r0–r3, s0, s4, s6 and the flags, all caller-saved, uses no
    // stack and returns with `bx lr`. Nothing in the image writes FPSCR: it rounds to nearest,
    // so each `vfma.f32` rounds `q_t·k_t + acc` once, as `fast::fma` does (the host requires the
    // same output bits as `dot_fma_soft`'s).
    core::arch::naked_asm!(
        "movs r3, #0",
        "vmov s0, r3",
        "cbz r2, 2f",
        "1:",
        "vldmia r1!, {{s4}}",
        "subs r2, #1",
        "vldmia r0!, {{s6}}",
        "vfma.f32 s0, s6, s4",
        "bne 1b",
        "2:",
        "bx lr",
    )
}

/// One chain: [`vfma_chain`] over the common length.
#[cfg(target_abi = "eabihf")]
#[inline(always)]
fn fma_chain_hw(q: &[f32], k: &[f32]) -> f32 {
    let n = q.len().min(k.len());
    // SAFETY: both slices hold at least n values.
    unsafe { vfma_chain(q.as_ptr(), k.as_ptr(), n) }
}

/// No FPU: softmax-core's software FMA (the same bits).
#[cfg(not(target_abi = "eabihf"))]
use softmax_cost::fma_chain_soft as fma_chain_hw;

softmax_cost::dot_probe!(|q, k, d, s| dot_rows(q, k, d, s, fma_chain_hw));
