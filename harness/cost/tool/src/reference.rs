//! The host's check of each probe's result: the same inputs (regenerated from `gen.rs`), an f64
//! reference, and a tolerance taken from the kernel's documented accuracy (or, for the scalar
//! baseline and the quantized kernels, a few units of its rounding). A probe whose call was
//! optimised away, returned an error or computed garbage fails here.

// `!(error <= tolerance)` on purpose: a NaN error fails.
#![allow(clippy::neg_cmp_op_on_partial_ord)]

use crate::gen::{
    tile_keys, Inputs, Rng, CE_TARGET, D, N, S16_SCALE, S8_SCALE_RECIPROCAL, SEED_KV, TILE_KEYS,
};

/// What a probe's result bytes hold and how they are checked.
#[derive(Clone, Copy, Debug)]
pub enum Check {
    /// f32 softmax of the f32 row: |y − p| <= rel·p + 1e-30.
    Softmax { rel: f64 },
    /// f32 log_softmax of the f32 row: |y − l| <= abs·(1 + |l|).
    LogSoftmax { abs: f64 },
    /// int8 probabilities (zero point −128, scale 1/256) of the int8 row.
    S8,
    /// int16 probabilities (zero point −32768, scale 1/65536) of the int8 row.
    S8S16,
    /// int16 probabilities (scale 1/32768) of the int16 row.
    S16,
    /// Cross-entropy gradient (N f32) then the loss.
    CrossEntropy,
    /// Attention output (d f32) of the query over the first `keys` tokens.
    Attention { keys: usize },
    /// The same over a reduced KV cache: against the keys and values the cache stands for (each
    /// row rounded to the format as `softmax_core::stored` documents it, here by the host's own
    /// implementation), with the same tolerance; the error against the f32 inputs is reported.
    AttentionStored { keys: usize, format: Kv },
    /// The dot-product probes: [`TILE_KEYS`] f32 dot products of the attention query with the
    /// tile's key rows (d = [`D`]), each within `(roundings + 1)·2⁻²⁴·Σ|q_t·k_t|` of the f64 dot
    /// product, `roundings` the most roundings any product passes through on its way to the
    /// output (the classic bound is `γ_r·Σ|q_t·k_t|`, `γ_r = r·u/(1 − r·u) < (r + 1)·u` for
    /// `r·u` this small; the extra unit also covers the f64 reference's own rounding, below
    /// 2⁻⁴⁶·Σ|q_t·k_t|).
    Dot { roundings: u32 },
    /// No output (the empty image).
    Nothing,
}

/// A reduced-precision format of the KV cache.
#[derive(Clone, Copy, Debug)]
pub enum Kv {
    /// int8 with one f32 scale per row: `s = amax/127`, `q = round(x/s)` half away from zero,
    /// read back as `q·s` (f32 arithmetic).
    Int8,
    /// IEEE binary16, rounded to nearest, ties to even.
    F16,
}

impl Kv {
    /// The format's name (attention-core's `Element::NAME`).
    fn name(self) -> &'static str {
        match self {
            Kv::Int8 => "int8",
            Kv::F16 => "f16",
        }
    }

    /// The values a stored row stands for (what the cache reads back).
    fn read_back(self, x: &[f32]) -> Vec<f32> {
        match self {
            Kv::Int8 => {
                let amax = x.iter().fold(0.0f32, |m, &v| m.max(v.abs()));
                let s = amax / 127.0;
                x.iter()
                    .map(|&v| {
                        // f32's `round` is half away from zero; through i8, as stored.
                        let q = if s == 0.0 {
                            0
                        } else {
                            (v / s).round().clamp(-127.0, 127.0) as i8
                        };
                        f32::from(q) * s
                    })
                    .collect()
            }
            Kv::F16 => x.iter().map(|&v| f16_round(v)).collect(),
        }
    }
}

/// `x` rounded to the nearest f16 (ties to even), as an f32; `x` finite and below 65,520 in
/// magnitude. The f16 spacing is `2^(e − 10)` for `|x|` in `[2^e, 2^(e+1))`, `e >= −14`, and
/// `2^-24` below (the subnormals); the scaling by powers of two is exact in f64.
fn f16_round(x: f32) -> f32 {
    let e = ((x.to_bits() >> 23) & 0xff) as i32 - 127;
    let ulp = 2f64.powi(e.max(-14) - 10);
    ((x as f64 / ulp).round_ties_even() * ulp) as f32
}

/// The inputs every image generates.
pub fn inputs() -> Inputs {
    let mut i = Inputs::ZERO;
    i.fill();
    i
}

fn f32s(b: &[u8]) -> Vec<f64> {
    b.chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]) as f64)
        .collect()
}

fn i16s(b: &[u8]) -> Vec<i32> {
    b.chunks_exact(2)
        .map(|c| i16::from_le_bytes([c[0], c[1]]) as i32)
        .collect()
}

fn softmax(x: &[f64]) -> Vec<f64> {
    let m = x.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    let e: Vec<f64> = x.iter().map(|v| (v - m).exp()).collect();
    let s: f64 = e.iter().sum();
    e.iter().map(|v| v / s).collect()
}

fn expect_len(what: &str, got: usize, want: usize) -> Result<(), String> {
    if got == want {
        Ok(())
    } else {
        Err(format!("{what}: {got} result bytes, expected {want}"))
    }
}

/// Checks `result`; on success, a short statement of the largest error found.
pub fn check(kind: Check, inputs: &Inputs, result: &[u8]) -> Result<String, String> {
    let x: Vec<f64> = inputs.f32.iter().map(|&v| v as f64).collect();
    match kind {
        Check::Nothing => {
            expect_len("empty", result.len(), 0)?;
            Ok(String::new())
        }
        Check::Softmax { rel } => {
            expect_len("softmax", result.len(), 4 * N)?;
            let (y, p) = (f32s(result), softmax(&x));
            let mut worst = 0.0f64;
            for (i, (&y, &p)) in y.iter().zip(&p).enumerate() {
                let e = (y - p).abs() / p;
                if !(e <= rel) {
                    return Err(format!("softmax[{i}] = {y:e}, f64 reference {p:e}: relative error {e:.2e} > {rel:.1e}"));
                }
                worst = worst.max(e);
            }
            Ok(format!(
                "max relative error {worst:.2e} (tolerance {rel:.1e})"
            ))
        }
        Check::LogSoftmax { abs } => {
            expect_len("log_softmax", result.len(), 4 * N)?;
            let y = f32s(result);
            let m = x.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
            let lse = m + x.iter().map(|v| (v - m).exp()).sum::<f64>().ln();
            let mut worst = 0.0f64;
            for (i, (&y, &v)) in y.iter().zip(&x).enumerate() {
                let l = v - lse;
                let e = (y - l).abs() / (1.0 + l.abs());
                if !(e <= abs) {
                    return Err(format!("log_softmax[{i}] = {y}, f64 reference {l}: error {e:.2e}·(1 + |l|) > {abs:.1e}"));
                }
                worst = worst.max(e);
            }
            Ok(format!(
                "max error {worst:.2e}·(1 + |y|) (tolerance {abs:.1e})"
            ))
        }
        Check::S8 | Check::S8S16 => {
            let s = 1.0 / S8_SCALE_RECIPROCAL as f64;
            let xq: Vec<f64> = inputs.i8.iter().map(|&v| v as f64 * s).collect();
            let p = softmax(&xq);
            let (q, zero, quantum): (Vec<i32>, f64, f64) = if matches!(kind, Check::S8) {
                expect_len("softmax_s8", result.len(), N)?;
                (
                    result.iter().map(|&b| b as i8 as i32).collect(),
                    128.0,
                    1.0 / 256.0,
                )
            } else {
                expect_len("softmax_s8_s16", result.len(), 2 * N)?;
                (i16s(result), 32768.0, 1.0 / 65536.0)
            };
            // TFLM's fixed-point exp and reciprocal, then one rounding to the output: within
            // one output quantum of the exact softmax of the dequantized input.
            let tol = quantum;
            let mut worst = 0.0f64;
            for (i, (&q, &p)) in q.iter().zip(&p).enumerate() {
                let e = ((q as f64 + zero) * quantum - p).abs();
                if !(e <= tol) {
                    return Err(format!("output[{i}] = {q}: probability {}, f64 reference {p}: error {:.2} quanta > 1", (q as f64 + zero) * quantum, e / quantum));
                }
                worst = worst.max(e);
            }
            Ok(format!(
                "max error {:.2} output quanta (tolerance 1)",
                worst / quantum
            ))
        }
        Check::S16 => {
            expect_len("softmax_s16", result.len(), 2 * N)?;
            let s = S16_SCALE as f64;
            let xq: Vec<f64> = inputs.i16.iter().map(|&v| v as f64 * s).collect();
            let p = softmax(&xq);
            let q = i16s(result);
            let quantum = 1.0 / 32768.0;
            // Table interpolation (exp over [−10, 0] and 1/(1+x), 513 entries each) and the
            // output rounding.
            let tol = quantum;
            let mut worst = 0.0f64;
            for (i, (&q, &p)) in q.iter().zip(&p).enumerate() {
                let e = (q as f64 * quantum - p).abs();
                if !(e <= tol) {
                    return Err(format!("output[{i}] = {q}: probability {}, f64 reference {p}: error {:.2} quanta > 1", q as f64 * quantum, e / quantum));
                }
                worst = worst.max(e);
            }
            Ok(format!(
                "max error {:.2} output quanta (tolerance 1)",
                worst / quantum
            ))
        }
        Check::CrossEntropy => {
            expect_len("cross_entropy", result.len(), 4 * (N + 1))?;
            let v = f32s(result);
            let (grad, loss) = (&v[..N], v[N]);
            let p = softmax(&x);
            let ref_loss = -p[CE_TARGET].ln();
            let el = (loss - ref_loss).abs() / (1.0 + ref_loss.abs());
            if !(el <= 4e-7) {
                return Err(format!(
                    "loss {loss}, f64 reference {ref_loss}: error {el:.2e}·(1 + |loss|) > 4e-7"
                ));
            }
            let mut worst = 0.0f64;
            for (i, (&g, &p)) in grad.iter().zip(&p).enumerate() {
                // p − onehot: the softmax's relative error in p (the crate's 2e-6 contract,
                // doubled), plus the rounding of p − 1 to f32.
                let r = p - if i == CE_TARGET { 1.0 } else { 0.0 };
                let e = (g - r).abs() / (4e-6 * p + r.abs() / 8_388_608.0);
                if !(e <= 1.0) {
                    return Err(format!(
                        "grad[{i}] = {g}, f64 reference {r}: error {:.2e} > 4e-6·p + 2⁻²³·|g|",
                        (g - r).abs()
                    ));
                }
                worst = worst.max(e);
            }
            Ok(format!(
                "loss error {el:.2e}·(1 + |loss|) (tolerance 4e-7); max gradient error {worst:.2} of the tolerance 4e-6·p + 2⁻²³·|g|"
            ))
        }
        Check::Dot { roundings } => dot(inputs, result, roundings),
        Check::Attention { keys } => attention(inputs, result, keys, None),
        Check::AttentionStored { keys, format } => {
            let exact = attention(inputs, result, keys, Some(format))?;
            // The storage's rounding: the same output against the f32 inputs (not checked).
            let (err, ..) = attention_error(inputs, result, keys, None);
            Ok(format!(
                "{exact} against the keys and values read back from {}; {err:.2e}·max|v| against the f32 inputs",
                format.name()
            ))
        }
    }
}

/// The f64 reference of the attention probes: the query over the first `keys` tokens, their
/// keys and values as the cache reads them back (`format`) or as generated (`None`). Returns the
/// largest error of `result` against it, relative to `max|v|` (NaN if any is NaN), with its
/// index, the output value and the reference value there.
fn attention_error(
    inputs: &Inputs,
    result: &[u8],
    keys: usize,
    format: Option<Kv>,
) -> (f64, usize, f64, f64) {
    let o = f32s(result);
    let q: Vec<f64> = inputs.q.iter().map(|&v| v as f64).collect();
    let mut kv = Rng::new(SEED_KV);
    let (mut k, mut v) = ([0.0f32; D], [0.0f32; D]);
    let mut scores = Vec::with_capacity(keys);
    let mut vs = Vec::with_capacity(keys);
    for _ in 0..keys {
        kv.fill_from(&inputs.f32, &mut k);
        kv.fill_from(&inputs.f32, &mut v);
        let (k, v) = match format {
            Some(f) => (f.read_back(&k), f.read_back(&v)),
            None => (k.to_vec(), v.to_vec()),
        };
        let dot: f64 = q.iter().zip(&k).map(|(a, &b)| a * b as f64).sum();
        scores.push(dot / (D as f64).sqrt());
        vs.push(v.iter().map(|&x| x as f64).collect::<Vec<f64>>());
    }
    let p = softmax(&scores);
    let max_v = vs.iter().flatten().fold(0.0f64, |m, v| m.max(v.abs()));
    let mut worst = (0.0f64, 0, 0.0, 0.0);
    for (i, &o) in o.iter().enumerate() {
        let r: f64 = p.iter().zip(&vs).map(|(p, v)| p * v[i]).sum();
        let e = (o - r).abs() / max_v;
        // `!(e <= worst)`: a NaN error is kept.
        if !(e <= worst.0) && !worst.0.is_nan() {
            worst = (e, i, o, r);
        }
    }
    worst
}

/// [`Check::Attention`] (and the exact part of [`Check::AttentionStored`]): within 1e-6·max|v|
/// of the f64 reference.
fn attention(
    inputs: &Inputs,
    result: &[u8],
    keys: usize,
    format: Option<Kv>,
) -> Result<String, String> {
    expect_len("attention", result.len(), 4 * D)?;
    let (worst, i, o, r) = attention_error(inputs, result, keys, format);
    if !(worst <= 1e-6) {
        return Err(format!(
            "o[{i}] = {o}, f64 reference {r}: error {worst:.2e}·max|v| > 1e-6"
        ));
    }
    Ok(format!("max error {worst:.2e}·max|v| (tolerance 1e-6)"))
}

/// [`Check::Dot`]: the f64 dot products of the query with the tile's keys (`gen::tile_keys`,
/// the products exact in f64), and the error of each output in units of `2⁻²⁴·Σ|q_t·k_t|`.
fn dot(inputs: &Inputs, result: &[u8], roundings: u32) -> Result<String, String> {
    expect_len("dot products", result.len(), 4 * TILE_KEYS)?;
    let s = f32s(result);
    let mut k = vec![0.0f32; TILE_KEYS * D];
    tile_keys(&inputs.f32, &mut k);
    let tol = f64::from(roundings + 1);
    let u = 2f64.powi(-24);
    let mut worst = 0.0f64;
    for (j, (&s, kj)) in s.iter().zip(k.chunks_exact(D)).enumerate() {
        let products = inputs.q.iter().zip(kj).map(|(&a, &b)| a as f64 * b as f64);
        let exact: f64 = products.clone().sum();
        let scale: f64 = products.map(f64::abs).sum();
        let e = (s - exact).abs() / (u * scale);
        if !(e <= tol) {
            return Err(format!(
                "s[{j}] = {s:e}, f64 reference {exact:e}: error {e:.2}·2⁻²⁴·Σ|q_t·k_t| > {tol}"
            ));
        }
        worst = worst.max(e);
    }
    Ok(format!(
        "max error {worst:.2}·2⁻²⁴·Σ|q_t·k_t| (tolerance {tol}, {roundings} roundings + 1)"
    ))
}

/// The element counts the probes are built for (`gen.rs`'s constants).
pub const ROW: u32 = N as u32;
/// See [`ROW`].
pub const TILE: u32 = TILE_KEYS as u32;
/// The multiply-adds of the dot-product probes: 128 dot products of d = 64, 128 × 64 = 8192.
pub const MULADDS: u32 = (TILE_KEYS * D) as u32;
