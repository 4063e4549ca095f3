//! Sets the one cfg that separates the builds with runtime dispatch from the others, so that the
//! predicate is written once: `softmax_dispatch` holds for x86_64 targets with SSE2 compiled
//! without debug assertions. Those builds compile every kernel at three levels (baseline, AVX2,
//! AVX-512F) and carry the hand-written AVX2 kernels; the others (debug and test builds, targets
//! without SSE such as `x86_64-unknown-none`, every other architecture) compile the baseline
//! copy only.
//!
//! It also sets `soft_thumb` for bare-metal Arm targets with the soft-float ABI (the Cortex-M0
//! and the like, no FPU): there `Poly`'s exp runs on the Thumb add and multiply of
//! `src/soft/thumb.rs`.

fn main() {
    println!("cargo::rustc-check-cfg=cfg(softmax_dispatch)");
    println!("cargo::rustc-check-cfg=cfg(soft_thumb)");
    println!("cargo::rerun-if-changed=build.rs");
    let arch = std::env::var("CARGO_CFG_TARGET_ARCH").unwrap_or_default();
    let features = std::env::var("CARGO_CFG_TARGET_FEATURE").unwrap_or_default();
    let sse2 = features.split(',').any(|f| f == "sse2");
    // Cargo gives build scripts the package's `debug_assertions` only since 1.93 (before, it
    // left the variable out); the profile's base tells the rest: `dev` and `test` have debug
    // assertions, `release` and `bench` not. (A release-based profile that turns debug
    // assertions on with an older cargo gets the dispatch: longer to compile, the same bits.)
    let debug_assertions = std::env::var_os("CARGO_CFG_DEBUG_ASSERTIONS").is_some();
    let release = std::env::var("PROFILE").is_ok_and(|p| p == "release");
    if arch == "x86_64" && sse2 && release && !debug_assertions {
        println!("cargo::rustc-cfg=softmax_dispatch");
    }
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let abi = std::env::var("CARGO_CFG_TARGET_ABI").unwrap_or_default();
    if arch == "arm" && os == "none" && abi != "eabihf" {
        println!("cargo::rustc-cfg=soft_thumb");
    }
}
