//! attention-core benchmarks (criterion, single thread, f32, `Poly` backend):
//!
//! * forward at H = 8, T = S = 1024, d = 64: no mask, causal (bottom-right), window 256, causal +
//!   window 256: the speed-up from skipping the key blocks the mask removes;
//! * single-query decode over n = 4096 keys, d = 128, next to a plain read loop over the same K
//!   and V bytes (the bandwidth fraction);
//! * the streaming decoder (`KvCache`, 8 query heads over 2 kv heads, d = 64, 4 sinks + a window
//!   of 1020) per token at stream positions 1k, 10k and 100k: flat.
//!
//! Before the criterion groups, an interleaved summary (the machine is noisy: the contenders
//! alternate, medians of several rounds) prints the ratios. Run:
//! `cargo bench -p harness --bench attention -- --warm-up-time 1 --measurement-time 3`.

use std::hint::black_box;
use std::time::Instant;

use attention_core::backend::Poly;
use attention_core::{
    attention, Causal, DecodeOptions, Dims, KvCache, Options, Output, Qkv, Window,
};
use criterion::{criterion_group, criterion_main, Criterion};

fn vals(n: usize, seed: u64) -> Vec<f32> {
    let mut s = seed;
    (0..n)
        .map(|_| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((s >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
        })
        .collect()
}

const H: usize = 8;
const T: usize = 1024;
const D: usize = 64;

struct Prefill {
    q: Vec<f32>,
    k: Vec<f32>,
    v: Vec<f32>,
    o: Vec<f32>,
}

impl Prefill {
    fn new() -> Self {
        Prefill {
            q: vals(H * T * D, 1),
            k: vals(H * T * D, 2),
            v: vals(H * T * D, 3),
            o: vec![0.0; H * T * D],
        }
    }
    fn run(&mut self, opts: &Options<'_, f32>) {
        let dims = Dims::new(H, H, T, T, D, D);
        attention(
            Poly,
            &dims,
            Qkv::new(&self.q, &self.k, &self.v),
            opts,
            Output::new(&mut self.o),
        )
        .expect("valid");
        black_box(&self.o);
    }
}

fn prefill_opts() -> [(&'static str, Options<'static, f32>); 4] {
    [
        ("none", Options::new()),
        ("causal", Options::new().with_causal(Causal::BottomRight)),
        ("window256", Options::new().with_window(256)),
        (
            "causal_window256",
            Options::new()
                .with_causal(Causal::BottomRight)
                .with_window(256),
        ),
    ]
}

struct Decode {
    q: Vec<f32>,
    k: Vec<f32>,
    v: Vec<f32>,
    o: Vec<f32>,
}

const N_DEC: usize = 4096;
const D_DEC: usize = 128;

impl Decode {
    fn new() -> Self {
        Decode {
            q: vals(D_DEC, 4),
            k: vals(N_DEC * D_DEC, 5),
            v: vals(N_DEC * D_DEC, 6),
            o: vec![0.0; D_DEC],
        }
    }
    fn run(&mut self) {
        let dims = Dims::new(1, 1, 1, N_DEC, D_DEC, D_DEC);
        attention(
            Poly,
            &dims,
            Qkv::new(&self.q, &self.k, &self.v),
            &Options::new(),
            Output::new(&mut self.o),
        )
        .expect("valid");
        black_box(&self.o);
    }
    /// A plain read of the same K and V bytes (16 independent f32 sums, vectorised).
    fn read(&self) -> f32 {
        let mut a = [0.0f32; 16];
        for c in black_box(&self.k)
            .chunks_exact(16)
            .chain(black_box(&self.v).chunks_exact(16))
        {
            for (x, y) in a.iter_mut().zip(c) {
                *x += y;
            }
        }
        a.iter().sum()
    }
}

const HKV_S: usize = 2;
const SINKS: usize = 4;
const W: usize = 1020;
type Cache = KvCache<f32, HKV_S, 1024, D, D>;

fn stream_opts() -> DecodeOptions<'static, f32> {
    DecodeOptions::new()
}

/// A decoder that has seen `n` tokens (pushed without attending, which is cheap).
fn stream_at(n: usize) -> Box<Cache> {
    let mut c = Box::new(Cache::new(Some(Window::new(W, SINKS))).expect("valid"));
    let (k, v) = (vals(HKV_S * D, 7), vals(HKV_S * D, 8));
    for _ in 0..n {
        c.push(&k, &v).expect("evicts");
    }
    c
}

fn decode_token(c: &mut Cache, q: &[f32], k: &[f32], v: &[f32], o: &mut [f32]) {
    c.decode(Poly, q, k, v, &stream_opts(), Output::new(o))
        .expect("valid");
    black_box(o);
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Interleaved rounds; prints medians and the ratios the issue asks for.
fn summary() {
    let mut p = Prefill::new();
    let opts = prefill_opts();
    let mut times = vec![Vec::new(); opts.len()];
    for _ in 0..5 {
        for (i, (_, o)) in opts.iter().enumerate() {
            let t0 = Instant::now();
            p.run(o);
            times[i].push(t0.elapsed().as_secs_f64());
        }
    }
    let med: Vec<f64> = times.into_iter().map(median).collect();
    for ((name, _), m) in opts.iter().zip(&med) {
        let flops = 4.0 * (H * T * T * D) as f64; // QKᵀ and PV, no mask
        println!(
            "summary forward H=8 T=S=1024 d=64 {name:>17}: median {:7.2} ms ({:.1} GFLOP/s of unmasked work)",
            m * 1e3,
            flops / m / 1e9
        );
    }
    println!(
        "summary mask speed-up: causal {:.2}x, window256 {:.2}x, causal+window256 {:.2}x faster than unmasked",
        med[0] / med[1],
        med[0] / med[2],
        med[0] / med[3]
    );

    let mut d = Decode::new();
    let (mut ta, mut tr) = (Vec::new(), Vec::new());
    let mut sink = 0.0f32;
    for _ in 0..201 {
        let t0 = Instant::now();
        d.run();
        ta.push(t0.elapsed().as_secs_f64());
        let t0 = Instant::now();
        sink += d.read();
        tr.push(t0.elapsed().as_secs_f64());
    }
    black_box(sink);
    let (a, r) = (median(ta), median(tr));
    let bytes = (2 * N_DEC * D_DEC * 4) as f64;
    println!(
        "summary decode n=4096 d=128: attention {:.1} µs ({:.1} GB/s), read loop {:.1} µs ({:.1} GB/s): {:.0}% of the read loop's bandwidth",
        a * 1e6,
        bytes / a / 1e9,
        r * 1e6,
        bytes / r / 1e9,
        100.0 * r / a
    );

    let (q, k, v) = (vals(H * D, 9), vals(HKV_S * D, 10), vals(HKV_S * D, 11));
    let mut o = vec![0.0f32; H * D];
    let mut per = Vec::new();
    for n in [1_000usize, 10_000, 100_000] {
        let mut c = stream_at(n);
        // Rounds of 200 tokens: the median round's cost per token.
        let mut rounds = Vec::new();
        for _ in 0..9 {
            let t0 = Instant::now();
            for _ in 0..200 {
                decode_token(&mut c, &q, &k, &v, &mut o);
            }
            rounds.push(t0.elapsed().as_secs_f64() / 200.0);
        }
        per.push(median(rounds));
    }
    println!(
        "summary stream decoder (8 heads / 2 kv, d=64, 4 sinks + window 1020) per token: 1k {:.1} µs, 10k {:.1} µs, 100k {:.1} µs (100k / 1k = {:.3})",
        per[0] * 1e6,
        per[1] * 1e6,
        per[2] * 1e6,
        per[2] / per[0]
    );
}

fn benches(c: &mut Criterion) {
    summary();
    let mut p = Prefill::new();
    let mut g = c.benchmark_group("attention_forward_h8_t1024_d64");
    g.sample_size(10);
    for (name, opts) in prefill_opts() {
        g.bench_function(name, |b| b.iter(|| p.run(&opts)));
    }
    g.finish();

    let mut d = Decode::new();
    let mut g = c.benchmark_group("decode_n4096_d128");
    g.bench_function("attention", |b| b.iter(|| d.run()));
    g.bench_function("read_loop_same_bytes", |b| b.iter(|| black_box(d.read())));
    g.finish();

    let (q, k, v) = (vals(H * D, 9), vals(HKV_S * D, 10), vals(HKV_S * D, 11));
    let mut o = vec![0.0f32; H * D];
    let mut g = c.benchmark_group("stream_decoder_per_token");
    for n in [1_000usize, 10_000, 100_000] {
        let mut cache = stream_at(n);
        g.bench_function(format!("at_{n}"), |b| {
            b.iter(|| decode_token(&mut cache, &q, &k, &v, &mut o))
        });
    }
    g.finish();
}

criterion_group!(attention_benches, benches);
criterion_main!(attention_benches);
