//! softmax-core against the same functions written with scalar `libm::expf`, in one run, so the
//! ratio is visible in criterion's report; careful single-op numbers next to `harness bench`'s
//! peer table (which adds onnxruntime, candle and the memory yardsticks).
//!
//! ```text
//! cargo bench -p harness --bench softmax
//! ```
//!
//! softmax-core dispatches at run time (AVX2 / AVX-512F on x86_64), so the default build is the
//! one to measure; `RUSTFLAGS="-C target-cpu=native"` changes little.

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use harness::contenders::{bench_input, LOG_SOFTMAX, SOFTMAX};

fn rows(c: &mut Criterion) {
    for (op, contenders) in [("softmax", SOFTMAX), ("log_softmax", LOG_SOFTMAX)] {
        for (r, n) in [(1usize, 64usize), (1, 4096), (1024, 256), (256, 4096)] {
            let mut g = c.benchmark_group(format!("{op}_f32_{r}x{n}"));
            g.throughput(Throughput::Elements((r * n) as u64));
            let x = bench_input(r * n);
            let mut y = vec![0.0f32; r * n];
            for &(name, f) in contenders {
                // The scalar contenders are an order of magnitude slower: skip them on the
                // large shapes, where the ratio is already clear from the small ones.
                if r * n > 65_536 && !name.contains("Poly") {
                    continue;
                }
                g.bench_with_input(BenchmarkId::from_parameter(name), &x, |b, x| {
                    b.iter(|| f(black_box(x), black_box(&mut y), n))
                });
            }
            g.finish();
        }
    }
}

criterion_group!(benches, rows);
criterion_main!(benches);
