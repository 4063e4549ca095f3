//! The demo's attention-core section (see `demo.rs`), its centrepiece: an endless-stream decoder
//! in bounded memory. A synthetic stream of 100,000 tokens goes through a multi-head
//! grouped-query decoder (8 query heads over 2 key/value heads, d = 64) with 4 attention sinks
//! and a sliding window of 252 positions plus ALiBi, in a `KvCache` whose capacity (256 tokens)
//! is fixed at compile time: the cache is one value of constant size, allocated once, and the
//! ring buffer overwrites the oldest window token in place. Reported: tokens per second, the
//! cost per token early and late in the stream (flat: set by sinks + window only), the cache's
//! bytes, and a bit-for-bit check of the streamed outputs on a 2,048-token prefix against full
//! attention (`attention_core::attention` with bottom-right causality, the same window, sinks
//! and ALiBi) computed over the whole prefix at once. `SOFTMAX_DEMO_TOKENS` shortens the stream
//! (for debug builds).

use std::io::Write;
use std::time::Instant;

use attention_core::backend::Poly;
use attention_core::{
    attention, Causal, DecodeOptions, Dims, KvCache, Options, Output, Qkv, Window,
};

const H: usize = 8;
const HKV: usize = 2;
const D: usize = 64;
const SINKS: usize = 4;
const W: usize = 252;
const CAP: usize = SINKS + W;
const PREFIX: usize = 2048;

type Cache = KvCache<f32, HKV, CAP, D, D>;

/// A cheap deterministic token generator (xorshift; values in [-1, 1)).
struct Tokens(u64);

impl Tokens {
    fn fill(&mut self, out: &mut [f32]) {
        for v in out {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            *v = ((self.0 >> 40) as f32) * (2.0 / (1u64 << 24) as f32) - 1.0;
        }
    }
}

fn progress(done: usize, total: usize, secs: f64) {
    let width = 40;
    let filled = done * width / total.max(1);
    eprint!(
        "\r  [{}{}] {done:>7}/{total} tokens  {:>6.0} tok/s",
        "#".repeat(filled),
        "-".repeat(width - filled),
        done as f64 / secs.max(1e-9)
    );
}

/// Prints the attention-core section of the demo.
pub fn run(out: &mut impl Write) -> std::io::Result<()> {
    let total: usize = std::env::var("SOFTMAX_DEMO_TOKENS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(100_000)
        .max(PREFIX + 1);
    writeln!(
        out,
        "\n== attention-core: an endless stream in a fixed-size KV cache  [f32, Poly backend, one thread]"
    )?;
    writeln!(
        out,
        "  {total} tokens, {H} query heads over {HKV} kv heads (GQA), d = {D}; StreamingLLM eviction: \
         {SINKS} sinks + a window of {W}, ALiBi"
    )?;
    let opts = DecodeOptions::<f32>::new().with_alibi(true);
    let mut cache: Box<Cache> = match Cache::new(Some(Window::new(W, SINKS))) {
        Ok(c) => Box::new(c),
        Err(e) => return writeln!(out, "  cannot build the cache: {e}"),
    };
    let bytes = std::mem::size_of::<Cache>();

    // The prefix, kept head-major for the full computation: q H×T×D, k and v Hkv×T×D.
    let mut pq = vec![0.0f32; H * PREFIX * D];
    let mut pk = vec![0.0f32; HKV * PREFIX * D];
    let mut pv = vec![0.0f32; HKV * PREFIX * D];
    let mut po = vec![0.0f32; H * PREFIX * D];

    let mut gen = Tokens(0x9e37_79b9_7f4a_7c15);
    let (mut q, mut k, mut v) = ([0.0f32; H * D], [0.0f32; HKV * D], [0.0f32; HKV * D]);
    let mut o = [0.0f32; H * D];
    let mut checksum = 0.0f64;
    let mut cached_at = Vec::new();
    // Cost per token over two stretches of 1,000 tokens: just after the cache fills, and at the
    // end of the stream.
    let early = 1_000..2_000;
    let late = total - 1_000..total;
    let (mut t_early, mut t_late) = (0.0f64, 0.0f64);
    let start = Instant::now();
    let mut stretch = Instant::now();
    for tok in 0..total {
        gen.fill(&mut q);
        gen.fill(&mut k);
        gen.fill(&mut v);
        if tok == early.start || tok == late.start {
            stretch = Instant::now();
        }
        if let Err(e) = cache.decode(Poly, &q, &k, &v, &opts, Output::new(&mut o)) {
            eprintln!();
            return writeln!(out, "  decode failed at token {tok}: {e}");
        }
        if tok + 1 == early.end {
            t_early = stretch.elapsed().as_secs_f64();
        }
        if tok + 1 == late.end {
            t_late = stretch.elapsed().as_secs_f64();
        }
        if tok < PREFIX {
            for h in 0..H {
                let row = (h * PREFIX + tok) * D;
                pq[row..row + D].copy_from_slice(&q[h * D..(h + 1) * D]);
                po[row..row + D].copy_from_slice(&o[h * D..(h + 1) * D]);
            }
            for g in 0..HKV {
                let row = (g * PREFIX + tok) * D;
                pk[row..row + D].copy_from_slice(&k[g * D..(g + 1) * D]);
                pv[row..row + D].copy_from_slice(&v[g * D..(g + 1) * D]);
            }
        }
        checksum += o[0] as f64;
        if tok == 0 || tok + 1 == CAP || tok + 1 == total {
            cached_at.push((tok + 1, cache.cached()));
        }
        if tok % 2_000 == 0 || tok + 1 == total {
            progress(tok + 1, total, start.elapsed().as_secs_f64());
        }
    }
    let secs = start.elapsed().as_secs_f64();
    eprintln!();
    writeln!(
        out,
        "  {total} tokens in {secs:.2} s: {:.0} tokens/s ({:.1} µs per token, all {H} heads)",
        total as f64 / secs,
        secs * 1e6 / total as f64
    )?;
    writeln!(
        out,
        "  cost per token: {:.1} µs at tokens 1k–2k, {:.1} µs at the last 1k (ratio {:.2}: flat, set by sinks + window)",
        t_early * 1e3,
        t_late * 1e3,
        t_late / t_early
    )?;
    let held: Vec<String> = cached_at
        .iter()
        .map(|(n, c)| format!("{c} after {n}"))
        .collect();
    writeln!(
        out,
        "  KV cache: {bytes} bytes ({} KiB), one fixed-size value from the first token to the last; \
         tokens held: {}",
        bytes / 1024,
        held.join(", ")
    )?;

    // Full attention over the prefix, all at once.
    let dims = Dims::new(H, HKV, PREFIX, PREFIX, D, D);
    let mut full = vec![0.0f32; H * PREFIX * D];
    let t0 = Instant::now();
    if let Err(e) = attention(
        Poly,
        &dims,
        Qkv::new(&pq, &pk, &pv),
        &Options::new()
            .with_causal(Causal::BottomRight)
            .with_window(W)
            .with_sinks(SINKS)
            .with_alibi(true),
        Output::new(&mut full),
    ) {
        return writeln!(out, "  full attention failed: {e}");
    }
    let full_secs = t0.elapsed().as_secs_f64();
    let differ = full
        .iter()
        .zip(&po)
        .filter(|(a, b)| a.to_bits() != b.to_bits())
        .count();
    let max_diff = full
        .iter()
        .zip(&po)
        .map(|(a, b)| (a - b).abs())
        .fold(0.0f32, f32::max);
    writeln!(
        out,
        "  prefix check: the first {PREFIX} tokens' outputs ({} values) against full attention \
         (bottom-right causal, same window/sinks/ALiBi, {:.0} ms): {}",
        full.len(),
        full_secs * 1e3,
        if differ == 0 {
            "bit-identical".to_string()
        } else {
            format!("{differ} values differ (max |Δ| {max_diff:e})")
        }
    )?;
    writeln!(out, "  (checksum of o[0] over the stream: {checksum:.6})")?;
    Ok(())
}
