//! The functions the benchmarks race, shared by the criterion bench (`benches/softmax.rs`) and
//! `harness bench`, so both measure exactly the same code. Each takes a batch of rows of `n`
//! values (row-major) and writes the same shape.

use softmax_core::backend::{Backend, Libm, MicroMath, Poly};
use softmax_core::{rows, Rows};

/// The baseline: softmax as anyone would write it with scalar `libm::expf` — max, exp and sum,
/// divide. Numerically stable (it subtracts the max), not vectorisable (libm's expf is branchy
/// scalar code).
pub fn scalar_libm_softmax(x: &[f32], y: &mut [f32], n: usize) {
    for (x, y) in x.chunks_exact(n).zip(y.chunks_exact_mut(n)) {
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
}

/// The same for log_softmax: `x − max − ln Σ e^(x − max)`.
pub fn scalar_libm_log_softmax(x: &[f32], y: &mut [f32], n: usize) {
    for (x, y) in x.chunks_exact(n).zip(y.chunks_exact_mut(n)) {
        let m = x.iter().fold(f32::NEG_INFINITY, |a, &b| a.max(b));
        let s: f32 = x.iter().map(|&v| libm::expf(v - m)).sum();
        let l = m + libm::logf(s);
        for (o, &v) in y.iter_mut().zip(x) {
            *o = v - l;
        }
    }
}

/// softmax-core's batched softmax with backend `B`.
pub fn core_softmax<B: Backend<f32>>(x: &[f32], y: &mut [f32], n: usize) {
    let _ = rows::softmax(B::default(), x, y, &Rows::new(n));
}

/// softmax-core's batched log_softmax with backend `B`.
pub fn core_log_softmax<B: Backend<f32>>(x: &[f32], y: &mut [f32], n: usize) {
    let _ = rows::log_softmax(B::default(), x, y, &Rows::new(n));
}

/// softmax-core's explicitly chosen fast variant ([`softmax_core::fast`]).
pub fn core_fast_softmax(x: &[f32], y: &mut [f32], n: usize) {
    let _ = softmax_core::fast::softmax(x, y, &softmax_core::Rows::new(n));
}

/// The fast variant's log_softmax.
pub fn core_fast_log_softmax(x: &[f32], y: &mut [f32], n: usize) {
    let _ = softmax_core::fast::log_softmax(x, y, &softmax_core::Rows::new(n));
}

/// A batch kernel: `(x, y, n)`.
pub type Kernel = fn(&[f32], &mut [f32], usize);

/// A named contender.
pub type Contender = (&'static str, Kernel);

/// The softmax contenders of softmax-core and the scalar baseline (the peers outside Rust are
/// driven by `harness bench`).
pub const SOFTMAX: &[Contender] = &[
    ("softmax-core Poly", core_softmax::<Poly>),
    ("softmax-core fast", core_fast_softmax),
    ("softmax-core Libm", core_softmax::<Libm>),
    ("softmax-core MicroMath", core_softmax::<MicroMath>),
    ("scalar libm::expf", scalar_libm_softmax),
];

/// The log_softmax contenders, in the same order.
pub const LOG_SOFTMAX: &[Contender] = &[
    ("softmax-core Poly", core_log_softmax::<Poly>),
    ("softmax-core fast", core_fast_log_softmax),
    ("softmax-core Libm", core_log_softmax::<Libm>),
    ("softmax-core MicroMath", core_log_softmax::<MicroMath>),
    ("scalar libm::expf", scalar_libm_log_softmax),
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
