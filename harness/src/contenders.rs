//! The functions the benchmarks race, shared by the criterion bench (`benches/softmax.rs`) and
//! `harness bench`, so both measure exactly the same code.

use softmax_core::backend::{Libm, MicroMath, Poly};

/// The baseline: softmax as anyone would write it with scalar `libm::expf` — max, exp and sum,
/// divide. Numerically stable (it subtracts the max), not vectorisable (libm's expf is branchy
/// scalar code).
pub fn scalar_libm_softmax(x: &[f32], y: &mut [f32]) {
    let m = x.iter().fold(f32::NEG_INFINITY, |a, &b| a.max(b));
    let mut s = 0.0f32;
    for (o, &v) in y.iter_mut().zip(x) {
        *o = libm::expf(v - m);
        s += *o;
    }
    for o in y.iter_mut() {
        *o /= s;
    }
}

/// softmax-core with its own vectorised polynomial exp (the default fast path).
pub fn core_poly(x: &[f32], y: &mut [f32]) {
    let _ = softmax_core::softmax(Poly, x, y);
}

/// softmax-core with the scalar libm backend (same skeleton, scalar exp).
pub fn core_libm(x: &[f32], y: &mut [f32]) {
    let _ = softmax_core::softmax(Libm, x, y);
}

/// softmax-core with the micromath backend.
pub fn core_micromath(x: &[f32], y: &mut [f32]) {
    let _ = softmax_core::softmax(MicroMath, x, y);
}

/// log_softmax with softmax-core's polynomial backend.
pub fn core_log_softmax(x: &[f32], y: &mut [f32]) {
    let _ = softmax_core::log_softmax(Poly, x, y);
}

/// A named contender.
pub type Contender = (&'static str, fn(&[f32], &mut [f32]));

/// Every softmax contender, the baseline first.
pub const SOFTMAX: &[Contender] = &[
    ("scalar libm::expf", scalar_libm_softmax),
    ("softmax-core Poly", core_poly),
    ("softmax-core Libm", core_libm),
    ("softmax-core MicroMath", core_micromath),
];

/// Deterministic logits in [-10, 10): the benchmark input.
pub fn bench_input(n: usize) -> Vec<f32> {
    let mut state = 0x2545_f491_4f6c_dd1du64;
    (0..n)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            ((state >> 40) as f32 / (1u64 << 24) as f32) * 20.0 - 10.0
        })
        .collect()
}
