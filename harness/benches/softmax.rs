//! softmax-core against the same function written with scalar `libm::expf`, in one run, so the
//! ratio is visible in criterion's report.
//!
//! ```text
//! RUSTFLAGS="-C target-cpu=native" cargo bench -p harness --bench softmax
//! ```
//!
//! The issue's yardstick is the 4096-float row in cache on x86_64 Zen 4 (AVX-512) with
//! `-C target-cpu=native`; without it the build targets baseline x86-64 (SSE2, 4 lanes).

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use harness::contenders::{bench_input, core_log_softmax, scalar_libm_softmax, SOFTMAX};

fn softmax_rows(c: &mut Criterion) {
    for n in [64usize, 4096, 65536] {
        let mut g = c.benchmark_group(format!("softmax_f32_{n}"));
        g.throughput(Throughput::Elements(n as u64));
        let x = bench_input(n);
        let mut y = vec![0.0f32; n];
        for &(name, f) in SOFTMAX {
            g.bench_with_input(BenchmarkId::from_parameter(name), &x, |b, x| {
                b.iter(|| f(black_box(x), black_box(&mut y)))
            });
        }
        g.finish();
    }
    let n = 4096;
    let x = bench_input(n);
    let mut y = vec![0.0f32; n];
    let mut g = c.benchmark_group("log_softmax_f32_4096");
    g.throughput(Throughput::Elements(n as u64));
    g.bench_function("softmax-core Poly", |b| {
        b.iter(|| core_log_softmax(black_box(&x), black_box(&mut y)))
    });
    g.bench_function("scalar libm::expf softmax (reference point)", |b| {
        b.iter(|| scalar_libm_softmax(black_box(&x), black_box(&mut y)))
    });
    g.finish();
}

criterion_group!(benches, softmax_rows);
criterion_main!(benches);
