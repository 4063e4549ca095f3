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
use attention_core::softmax_core::stored::{bf16, f16, Operand};
use attention_core::{
    alibi_slope, attention, Causal, DecodeOptions, Dims, Element, KvCache, Options, Output, Qkv,
    Window,
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

/// One reduced-precision cache run beside the f32 cache on the same tokens: its decode time and
/// its outputs' error against the f32 cache's.
struct Reduced<E: Element<Float = f32>> {
    cache: Box<KvCache<E, HKV, CAP, D, D>>,
    o: [f32; H * D],
    secs: f64,
    /// Largest and sum of squared relative errors of the output rows (‖õ − o‖ / ‖o‖).
    max_rel: f64,
    sum_sq_rel: f64,
    rows: u64,
    /// Sum of KL(p_f32 ‖ p_E) over the sampled attention distributions, and their count.
    kl: f64,
    kl_n: u64,
    /// Every cached token's read-back keys (`Element::write_row` + `load`, the cache's own
    /// semantics), by slot, for the sampled distributions.
    keys: Vec<[f32; D]>,
}

impl<E: Element<Float = f32>> Reduced<E> {
    fn new() -> Result<Self, attention_core::Error> {
        Ok(Reduced {
            cache: Box::new(KvCache::new(Some(Window::new(W, SINKS)))?),
            o: [0.0; H * D],
            secs: 0.0,
            max_rel: 0.0,
            sum_sq_rel: 0.0,
            rows: 0,
            kl: 0.0,
            kl_n: 0,
            keys: vec![[0.0; D]; HKV * CAP],
        })
    }

    fn decode(
        &mut self,
        (q, k, v): (&[f32], &[f32], &[f32]),
        opts: &DecodeOptions<'_, f32>,
        slot: usize,
    ) -> Result<(), attention_core::Error> {
        let t = Instant::now();
        self.cache
            .decode(Poly, q, k, v, opts, Output::new(&mut self.o))?;
        self.secs += t.elapsed().as_secs_f64();
        let mut units = [E::Unit::default(); D];
        for g in 0..HKV {
            let s = E::write_row(&k[g * D..(g + 1) * D], &mut units);
            for (dst, u) in self.keys[g * CAP + slot].iter_mut().zip(units) {
                *dst = u.load(s);
            }
        }
        Ok(())
    }

    /// Accumulates the output rows' relative errors against the f32 cache's outputs.
    fn compare(&mut self, reference: &[f32]) {
        for (a, b) in self.o.chunks(D).zip(reference.chunks(D)) {
            let num: f64 = a
                .iter()
                .zip(b)
                .map(|(&x, &y)| (f64::from(x) - f64::from(y)).powi(2))
                .sum();
            let den: f64 = b.iter().map(|&y| f64::from(y).powi(2)).sum();
            let rel = (num / den.max(f64::MIN_POSITIVE)).sqrt();
            self.max_rel = self.max_rel.max(rel);
            self.sum_sq_rel += rel * rel;
            self.rows += 1;
        }
    }

    fn rms_rel(&self) -> f64 {
        (self.sum_sq_rel / self.rows.max(1) as f64).sqrt()
    }
}

/// The scores (attention logits) of query head `h` (query `q`, at position `pos`) over the
/// cached slots `slots` (slot, position), in float64: `q·k/√D − slope·distance`.
fn scores(
    q: &[f32],
    keys: &[[f32; D]],
    h: usize,
    pos: usize,
    slots: &[(usize, usize)],
) -> Vec<f64> {
    let g = h / (H / HKV);
    let slope = alibi_slope::<f64>(H, h);
    let scale = 1.0 / (D as f64).sqrt();
    slots
        .iter()
        .map(|&(slot, p)| {
            let k = &keys[g * CAP + slot];
            let dot: f64 = q
                .iter()
                .zip(k)
                .map(|(&a, &b)| f64::from(a) * f64::from(b))
                .sum();
            scale * dot - slope * (pos - p) as f64
        })
        .collect()
}

/// KL(softmax(p) ‖ softmax(r)) in nats, by softmax-core's `kl_divergence` in float64 (which
/// keeps the digits of near-identical rows).
fn kl(p: &[f64], r: &[f64]) -> f64 {
    softmax_core::kl_divergence(Poly, p, r).unwrap_or(f64::NAN)
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
    // The same stream through reduced-precision caches, side by side (the same tokens).
    let (mut r16, mut rb16, mut r8) = match (
        Reduced::<f16>::new(),
        Reduced::<bf16>::new(),
        Reduced::<i8>::new(),
    ) {
        (Ok(a), Ok(b), Ok(c)) => (a, b, c),
        _ => return writeln!(out, "  cannot build the reduced caches"),
    };
    // The f32 cache's keys by slot (for the sampled attention distributions), and each slot's
    // position.
    let mut keys32 = vec![[0.0f32; D]; HKV * CAP];
    let mut slot_pos = [usize::MAX; CAP];
    let mut secs32 = 0.0f64;

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
    for tok in 0..total {
        gen.fill(&mut q);
        gen.fill(&mut k);
        gen.fill(&mut v);
        let t_dec = Instant::now();
        if let Err(e) = cache.decode(Poly, &q, &k, &v, &opts, Output::new(&mut o)) {
            eprintln!();
            return writeln!(out, "  decode failed at token {tok}: {e}");
        }
        let dt = t_dec.elapsed().as_secs_f64();
        secs32 += dt;
        if early.contains(&tok) {
            t_early += dt;
        }
        if late.contains(&tok) {
            t_late += dt;
        }
        // The slot the token went to: sinks first, then the ring of the window.
        let slot = if tok < SINKS {
            tok
        } else {
            SINKS + (tok - SINKS) % W
        };
        slot_pos[slot] = tok;
        for g in 0..HKV {
            keys32[g * CAP + slot].copy_from_slice(&k[g * D..(g + 1) * D]);
        }
        let step = (&q[..], &k[..], &v[..]);
        let reduced = r16
            .decode(step, &opts, slot)
            .and_then(|_| rb16.decode(step, &opts, slot))
            .and_then(|_| r8.decode(step, &opts, slot));
        if let Err(e) = reduced {
            eprintln!();
            return writeln!(out, "  reduced-precision decode failed at token {tok}: {e}");
        }
        r16.compare(&o);
        rb16.compare(&o);
        r8.compare(&o);
        // Every 16th token: the attention distributions of all heads, f32 cache against each
        // reduced one (float64 scores over the cached keys and their read-back values).
        if tok % 16 == 0 {
            let slots: Vec<(usize, usize)> = (0..CAP)
                .filter(|&s| slot_pos[s] != usize::MAX)
                .map(|s| (s, slot_pos[s]))
                .collect();
            for h in 0..H {
                let qh = &q[h * D..(h + 1) * D];
                let p = scores(qh, &keys32, h, tok, &slots);
                let p16 = scores(qh, &r16.keys, h, tok, &slots);
                let pb16 = scores(qh, &rb16.keys, h, tok, &slots);
                let p8 = scores(qh, &r8.keys, h, tok, &slots);
                r16.kl += kl(&p, &p16);
                rb16.kl += kl(&p, &pb16);
                r8.kl += kl(&p, &p8);
            }
            r16.kl_n += H as u64;
            rb16.kl_n += H as u64;
            r8.kl_n += H as u64;
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
    let wall = start.elapsed().as_secs_f64();
    eprintln!();
    let secs = secs32;
    writeln!(
        out,
        "  {total} tokens decoded in {secs:.2} s: {:.0} tokens/s ({:.1} µs per token, all {H} heads; \
         the f32 cache's decode calls alone — {wall:.1} s of wall time with the reduced caches \
         and the sampled distributions below)",
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

    writeln!(
        out,
        "  the same stream through reduced-precision caches (the same tokens; queries, scores and \
         outputs in f32; errors against the f32 cache; KL over the attention distributions of \
         every 16th token, all heads):"
    )?;
    writeln!(
        out,
        "    {:<6} {:>11} {:>12} {:>10} {:>9} {:>12} {:>12} {:>14}",
        "cache",
        "bytes/token",
        "cache bytes",
        "tokens/s",
        "vs f32",
        "max rel err",
        "RMS rel err",
        "mean KL (nats)"
    )?;
    writeln!(
        out,
        "    {:<6} {:>11} {:>12} {:>10.0} {:>8.2}× {:>12} {:>12} {:>14}",
        "f32",
        cache.token_bytes(),
        bytes,
        total as f64 / secs32,
        1.0,
        "—",
        "—",
        "—"
    )?;
    fn row<E: Element<Float = f32>>(
        out: &mut impl Write,
        r: &Reduced<E>,
        total: usize,
        secs32: f64,
    ) -> std::io::Result<()> {
        writeln!(
            out,
            "    {:<6} {:>11} {:>12} {:>10.0} {:>8.2}× {:>12.2e} {:>12.2e} {:>14.2e}",
            E::NAME,
            r.cache.token_bytes(),
            std::mem::size_of::<KvCache<E, HKV, CAP, D, D>>(),
            total as f64 / r.secs,
            secs32 / r.secs,
            r.max_rel,
            r.rms_rel(),
            r.kl / r.kl_n.max(1) as f64
        )
    }
    row(out, &r16, total, secs32)?;
    row(out, &rb16, total, secs32)?;
    row(out, &r8, total, secs32)?;
    writeln!(
        out,
        "  (llama.cpp reports KL 0.00098 for its q8_0 K+V cache, over a model's next-token \
         distributions: not the same quantity, for scale only)"
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
