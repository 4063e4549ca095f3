//! Criterion benches of loss-core (the issue's speed rows), next to the peers in the same run.
//!
//! ```text
//! cargo bench -p harness --bench loss
//! ```
//!
//! * `ce_f32_8x131072`: cross-entropy forward + gradient (mean, class-index targets) over 8 rows
//!   of 131072 classes, against softmax-core's own `rows::softmax` over the same logits (the
//!   issue's target: at most 1.3× the softmax). onnxruntime's SoftmaxCrossEntropyLoss is measured
//!   by `gen_loss.bench_ort()` in `harness/golden/gen_loss.py` (Python, outside criterion).
//! * `linear_ce_f32_T64_K256_V32768`: `linear_cross_entropy` (loss + dH + dW, blocks of 256
//!   vocabulary rows, 2·64·256 scratch values) against materialising the 64×32768 logits with
//!   `linalg::matmul_nt`, then `cross_entropy` (loss + gradient) and the two gradient products
//!   with `matmul_nn` / `matmul_tn` (the issue's target: at most 1.15×).

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use harness::contenders::bench_input;
use loss_core::softmax_core::backend::Poly;
use loss_core::softmax_core::{linalg, rows, Rows};
use loss_core::{
    cross_entropy, linear_cross_entropy, linear_cross_entropy_scratch_len, CrossEntropyOptions,
    CrossEntropyOutputs, LinearCrossEntropyOutputs,
};

fn ce(c: &mut Criterion) {
    let (r, n) = (8usize, 131_072usize);
    let x = bench_input(r * n);
    let target: Vec<i64> = (0..r as i64).map(|i| i * 1000 + 7).collect();
    let mut g = c.benchmark_group("ce_f32_8x131072");
    g.throughput(Throughput::Elements((r * n) as u64));
    let mut y = vec![0.0f32; r * n];
    let spec = Rows::new(n);
    let opts = CrossEntropyOptions::new();
    g.bench_function(
        BenchmarkId::from_parameter("softmax-core rows::softmax"),
        |b| b.iter(|| rows::softmax(Poly, black_box(&x), black_box(&mut y), &spec)),
    );
    g.bench_function(
        BenchmarkId::from_parameter("loss-core cross_entropy+grad"),
        |b| {
            b.iter(|| {
                cross_entropy(
                    Poly,
                    black_box(&x),
                    n,
                    &target,
                    &opts,
                    CrossEntropyOutputs::new().with_grad(black_box(&mut y)),
                )
            })
        },
    );
    g.finish();
}

fn linear(c: &mut Criterion) {
    let (t, k, v) = (64usize, 256usize, 32_768usize);
    let block = 256usize;
    let h: Vec<f32> = bench_input(t * k).iter().map(|x| x * 0.05).collect();
    let w: Vec<f32> = bench_input(v * k).iter().map(|x| x * 0.05).collect();
    let target: Vec<i64> = (0..t as i64).map(|i| (i * 509) % v as i64).collect();
    let opts = CrossEntropyOptions::new();
    let mut g = c.benchmark_group("linear_ce_f32_T64_K256_V32768");
    g.sample_size(10);
    // Multiply-adds of the materialised version: logits, dH, dW (3·T·V·K), as FLOP 2×.
    g.throughput(Throughput::Elements((2 * 3 * t * v * k) as u64));
    let (mut gh, mut gw) = (vec![0.0f32; t * k], vec![0.0f32; v * k]);
    let mut scratch = vec![0.0f32; linear_cross_entropy_scratch_len(t, block)];
    g.bench_function(
        BenchmarkId::from_parameter("loss-core linear_cross_entropy"),
        |b| {
            b.iter(|| {
                linear_cross_entropy(
                    Poly,
                    black_box(&h),
                    black_box(&w),
                    k,
                    &target,
                    &opts,
                    LinearCrossEntropyOutputs::new(&mut scratch)
                        .with_grad_h(&mut gh)
                        .with_grad_w(&mut gw),
                )
            })
        },
    );
    let mut logits = vec![0.0f32; t * v];
    let mut dlogits = vec![0.0f32; t * v];
    g.bench_function(
        BenchmarkId::from_parameter("materialised matmul_nt+cross_entropy+matmul_nn/tn"),
        |b| {
            b.iter(|| {
                linalg::matmul_nt(black_box(&h), black_box(&w), k, &mut logits).ok();
                let l = cross_entropy(
                    Poly,
                    &logits,
                    v,
                    &target,
                    &opts,
                    CrossEntropyOutputs::new().with_grad(&mut dlogits),
                );
                linalg::matmul_nn(&dlogits, &w, v, k, &mut gh, false).ok();
                linalg::matmul_tn(&dlogits, &h, v, k, &mut gw, false).ok();
                l
            })
        },
    );
    g.finish();
}

criterion_group!(benches, ce, linear);
criterion_main!(benches);
