//! attention-core's forward pass against the naive f64 reference (`attention_ref.rs`), for
//! every combination of masks and score modifiers, grouped-query attention, key counts across
//! the 128-key blocks, f32 and f64; the edge semantics of CONFORMANCE.md; the errors; the default
//! scale and the ALiBi slopes.
//!
//! Tolerances come from an error analysis, not from observation: a score carries the dot
//! product's stated bound plus a few roundings of each modifier (`δs`); a weight's relative
//! error is then at most `2·δs_max` plus a few roundings, and each output adds its accumulation
//! (`n` additions of `u·Σ p|v|` at most). Each check also prints its worst ratio to the bound.

#[path = "attention_support/reference.rs"]
mod attention_ref;

use attention_core::backend::{Libm, Poly};
use attention_core::{
    alibi_slope, alibi_slopes, attention, attention_finish, attention_partial, default_scale,
    merge_partials, Causal, DecodeOptions, Dims, Error, Float, KvCacheSlice, Options, Output, Qkv,
    QueryState, Window,
};
use attention_ref::{
    alibi_slopes as ref_alibi_slopes, backward as ref_backward, forward, Case, Rng,
};

/// The precision of a type.
fn unit<F: Float>() -> f64 {
    F::EPSILON.to_f64() / 2.0
}

/// The absolute floor of every bound: two half-quanta of `F`'s subnormal range (at least
/// 1e-300).
fn floor<F: Float>() -> f64 {
    let smallest = if unit::<F>() > 1e-10 {
        2f64.powi(-149)
    } else {
        2f64.powi(-1074)
    };
    smallest.max(1e-300)
}

/// `(o, lse, entropy)`, widened to f64.
type Outs = (Vec<f64>, Vec<f64>, Vec<f64>);

/// Runs attention-core on a reference case in type `F`; returns (o, lse, entropy) widened.
fn run<F: Float>(c: &Case, backend_libm: bool) -> Result<Outs, Error>
where
    Poly: attention_core::backend::Backend<F>,
    Libm: attention_core::backend::Backend<F>,
{
    let cv = |x: &[f64]| x.iter().map(|&v| F::from_f64(v)).collect::<Vec<F>>();
    let (q, k, v) = (cv(&c.q), cv(&c.k), cv(&c.v));
    let bias = c.bias.as_ref().map(|b| cv(b));
    let sinks = c.sink_logits.as_ref().map(|z| cv(z));
    let mut opts = Options::new()
        .with_causal(match c.causal {
            0 => Causal::None,
            1 => Causal::BottomRight,
            _ => Causal::TopLeft,
        })
        .with_alibi(c.alibi)
        .with_sinks(c.sinks);
    if let Some(s) = c.scale {
        opts = opts.with_scale(F::from_f64(s));
    }
    if let Some(m) = &c.mask {
        opts = opts.with_mask(m);
    }
    if let Some(b) = &bias {
        opts = opts.with_bias(b);
    }
    if let Some(w) = c.window {
        opts = opts.with_window(w);
    }
    if let Some(cap) = c.softcap {
        opts = opts.with_softcap(F::from_f64(cap));
    }
    if let Some(z) = &sinks {
        opts = opts.with_sink_logits(z);
    }
    let dims = Dims::new(c.heads, c.kv_heads, c.t, c.s, c.d, c.dv);
    let mut o = vec![F::NAN; c.heads * c.t * c.dv];
    let mut lse = vec![F::NAN; c.heads * c.t];
    let mut ent = vec![F::NAN; c.heads * c.t];
    let out = Output::new(&mut o)
        .with_lse(&mut lse)
        .with_entropy(&mut ent);
    let x = Qkv::new(&q, &k, &v);
    if backend_libm {
        attention(Libm, &dims, x, &opts, out)?;
    } else {
        attention(Poly, &dims, x, &opts, out)?;
    }
    let w = |x: Vec<F>| x.into_iter().map(F::to_f64).collect::<Vec<f64>>();
    Ok((w(o), w(lse), w(ent)))
}

/// A random case with the given option combination (`combo` bits: mask, bias, alibi, window,
/// sinks, softcap, sink logits; `causal` 0..3).
fn random_case(rng: &mut Rng, causal: u8, combo: u32) -> Case {
    let (heads, kv_heads) = [(1, 1), (2, 1), (2, 2), (4, 2), (6, 3), (3, 1)][rng.below(6)];
    let t = [1, 2, 3, 7, 9, 16, 17][rng.below(7)];
    let s = [1, 5, 40, 64, 65, 100, 130, 150][rng.below(8)];
    let d = [1, 3, 8, 17][rng.below(4)];
    let dv = [1, 5, 16][rng.below(3)];
    let mut c = Case {
        heads,
        kv_heads,
        t,
        s,
        d,
        dv,
        causal,
        ..Case::default()
    };
    c.q = (0..heads * t * d).map(|_| rng.val(2.0)).collect();
    c.k = (0..kv_heads * s * d).map(|_| rng.val(2.0)).collect();
    c.v = (0..kv_heads * s * dv).map(|_| rng.val(3.0)).collect();
    if rng.below(3) == 0 {
        c.scale = Some(rng.val(1.5));
    }
    if combo & 1 != 0 {
        c.mask = Some((0..t * s).map(|_| rng.below(5) != 0).collect());
    }
    if combo & 2 != 0 {
        c.bias = Some(
            (0..heads * t * s)
                .map(|_| {
                    if rng.below(20) == 0 {
                        f64::NEG_INFINITY
                    } else {
                        rng.val(2.0)
                    }
                })
                .collect(),
        );
    }
    c.alibi = combo & 4 != 0;
    if combo & 8 != 0 {
        c.window = Some(1 + rng.below(s + 3));
    }
    if combo & 16 != 0 {
        c.sinks = rng.below(6);
    }
    if combo & 32 != 0 {
        c.softcap = Some([0.5, 2.0, 10.0][rng.below(3)]);
    }
    if combo & 64 != 0 {
        c.sink_logits = Some((0..heads).map(|_| rng.val(3.0)).collect());
    }
    c
}

/// Per-row error bounds for type `F`: (per output element, lse, entropy).
fn bounds<F: Float>(c: &Case, r: &attention_ref::Out) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
    let u = unit::<F>();
    let slopes = attention_ref::alibi_slopes(c.heads);
    let mut bo = vec![0.0; r.o.len()];
    let mut bl = vec![0.0; r.lse.len()];
    let mut be = vec![0.0; r.entropy.len()];
    for h in 0..c.heads {
        let g = h / (c.heads / c.kv_heads);
        for t in 0..c.t {
            let row = h * c.t + t;
            let rs = c.row_scores(h, t);
            // δs_j: the dot product's bound (scaled), plus a few roundings of each term.
            let mut ds_max: f64 = 0.0;
            let mut n_allowed = 0.0;
            let mut mean = 0.0;
            for j in 0..c.s {
                let Some(sj) = rs.s[j].filter(|&x| x > f64::NEG_INFINITY) else {
                    continue;
                };
                n_allowed += 1.0;
                mean += r.p[row * c.s + j] * sj;
                let qk: f64 = (0..c.d)
                    .map(|i| (c.q[row * c.d + i] * c.k[(g * c.s + j) * c.d + i]).abs())
                    .sum();
                let dot_err = ((c.d as f64 / 16.0).ceil() + 4.0) * u * qk * c.scale().abs();
                let bias = c.bias.as_ref().map_or(0.0, |b| b[row * c.s + j].abs());
                let ali = if c.alibi {
                    slopes[h] * (c.qpos(t) - j as i64).abs() as f64
                } else {
                    0.0
                };
                let e = dot_err + 8.0 * u * (rs.z[j].abs() + bias + ali + sj.abs());
                ds_max = ds_max.max(e);
            }
            let mean = mean + c.sink_logits.as_ref().map_or(0.0, |z| r.p_sink[row] * z[h]);
            for i in 0..c.dv {
                let mag: f64 = (0..c.s)
                    .map(|j| r.p[row * c.s + j] * c.v[(g * c.s + j) * c.dv + i].abs())
                    .sum();
                bo[row * c.dv + i] = ((n_allowed + 16.0) * u + 4.0 * ds_max) * mag + floor::<F>();
            }
            bl[row] = ds_max + 8.0 * u * (1.0 + r.lse[row].abs());
            let spread: f64 = (0..c.s)
                .filter_map(|j| {
                    rs.s[j]
                        .filter(|&x| x > f64::NEG_INFINITY)
                        .map(|s| r.p[row * c.s + j] * (s - mean).abs())
                })
                .sum::<f64>()
                + c.sink_logits
                    .as_ref()
                    .map_or(0.0, |z| r.p_sink[row] * (z[h] - mean).abs());
            be[row] = 2.0 * ds_max * (1.0 + spread) + 16.0 * u * (1.0 + spread + r.entropy[row]);
        }
    }
    (bo, bl, be)
}

/// The shape and options of a case, for messages.
fn describe(c: &Case) -> String {
    format!(
        "H {} Hkv {} T {} S {} d {} dv {} scale {:?} causal {} mask {} bias {} alibi {} window {:?} sinks {} softcap {:?} sink_logits {:?}",
        c.heads, c.kv_heads, c.t, c.s, c.d, c.dv, c.scale, c.causal, c.mask.is_some(),
        c.bias.is_some(), c.alibi, c.window, c.sinks, c.softcap, c.sink_logits
    )
}

/// Compares one case in type `F` with the reference; returns the worst ratio of error to bound.
fn check<F: Float>(c: &Case, libm: bool, what: &str) -> f64
where
    Poly: attention_core::backend::Backend<F>,
    Libm: attention_core::backend::Backend<F>,
{
    let r = forward(c);
    let (o, lse, ent) = run::<F>(c, libm).expect("valid case");
    let (bo, bl, be) = bounds::<F>(c, &r);
    let mut worst: f64 = 0.0;
    let mut cmp = |name: &str, got: &[f64], want: &[f64], b: &[f64]| {
        for i in 0..got.len() {
            if want[i].is_infinite() || got[i].is_infinite() {
                assert_eq!(got[i], want[i], "{what} {name}[{i}] {}", describe(c));
                continue;
            }
            let err = (got[i] - want[i]).abs();
            assert!(
                err <= b[i],
                "{what}: {name}[{i}] = {} want {} (err {err:e} > bound {:e})\n{}",
                got[i],
                want[i],
                b[i],
                describe(c)
            );
            worst = worst.max(err / b[i]);
        }
    };
    cmp("o", &o, &r.o, &bo);
    cmp("lse", &lse, &r.lse, &bl);
    cmp("entropy", &ent, &r.entropy, &be);
    worst
}

#[test]
fn every_mask_and_modifier_combination_matches_the_reference() {
    let mut rng = Rng(0xa77e_4710);
    let (mut w32, mut w64) = (0.0f64, 0.0f64);
    let mut n = 0;
    for causal in 0..3u8 {
        for combo in 0..128u32 {
            // `sinks` only matters with a window.
            if combo & 16 != 0 && combo & 8 == 0 {
                continue;
            }
            let c = random_case(&mut rng, causal, combo);
            w32 = w32.max(check::<f32>(&c, combo % 3 == 0, "f32"));
            w64 = w64.max(check::<f64>(&c, combo % 3 == 1, "f64"));
            n += 1;
        }
    }
    eprintln!("{n} combinations; worst error / bound: f32 {w32:.3}, f64 {w64:.3}");
}

#[test]
fn long_rows_and_tiles_match_the_reference() {
    // Key counts well past several blocks, queries past several tiles, T > S and T < S.
    let mut rng = Rng(7);
    let mut worst: f64 = 0.0;
    for &(t, s, causal, window, sinks) in &[
        (40usize, 300usize, 1u8, None, 0usize),
        (40, 300, 0, Some(70), 3),
        (300, 40, 1, None, 0),
        (300, 40, 2, Some(9), 2),
        (129, 129, 2, Some(64), 1),
        (20, 257, 1, Some(128), 70),
    ] {
        let mut c = random_case(&mut rng, causal, 0);
        c.t = t;
        c.s = s;
        c.heads = 2;
        c.kv_heads = 1;
        c.d = 16;
        c.dv = 8;
        c.window = window;
        c.sinks = sinks;
        c.alibi = true;
        c.q = (0..2 * t * 16).map(|_| rng.val(1.0)).collect();
        c.k = (0..s * 16).map(|_| rng.val(1.0)).collect();
        c.v = (0..s * 8).map(|_| rng.val(1.0)).collect();
        c.mask = None;
        worst = worst.max(check::<f32>(&c, false, "long f32"));
        worst = worst.max(check::<f64>(&c, false, "long f64"));
    }
    eprintln!("long rows: worst error / bound {worst:.3}");
}

/// The sink-logit underflow (regression): a sink logit 60, 80, 100 or 200 above every score
/// leaves the keys a tiny total weight, `e^-60` .. `e^-200`, whose outputs are still
/// representable (f32 down to `e^-103`, f64 always). The full pass, the partial passes with their
/// merge and finish, and the streaming decoder must keep them: each output within the forward
/// bound of the float64 reference, the decoder equal to the full pass bit for bit.
#[test]
fn sink_logits_far_above_every_score_keep_the_keys_part() {
    let mut rng = Rng(0x5_1a4);
    let mut worst: f64 = 0.0;
    let mut tiny_outputs = [0usize; 2];
    for gap in [60.0, 80.0, 100.0, 200.0] {
        for (causal, combo, window, sinks) in [
            (0u8, 0u32, None, 0usize),
            (1, 4, Some(5), 2),
            (2, 1 | 32, None, 0),
            (1, 0, None, 0),
        ] {
            let mut c = random_case(&mut rng, causal, combo);
            c.s = c.s.max(c.t) + 130; // several key blocks, and the stream below needs s >= t
            c.k = (0..c.kv_heads * c.s * c.d).map(|_| rng.val(2.0)).collect();
            c.v = (0..c.kv_heads * c.s * c.dv).map(|_| rng.val(3.0)).collect();
            if c.mask.is_some() {
                c.mask = Some((0..c.t * c.s).map(|_| rng.below(5) != 0).collect());
            }
            c.window = window;
            c.sinks = sinks;
            c.set_sinks_above_scores(gap);
            let r = forward(&c);
            let what = format!("gap {gap}");
            worst = worst.max(check::<f32>(&c, false, &what));
            worst = worst.max(check::<f64>(&c, true, &what));
            for o in &r.o {
                if *o != 0.0 && o.abs() < 1e-20 {
                    tiny_outputs[usize::from(o.abs() < 1e-38)] += 1;
                }
            }
            check_split::<f32>(&c, &r, &what);
            check_split::<f64>(&c, &r, &what);
            if causal == 1 {
                check_stream(&c, gap, &what);
            }
        }
    }
    // A guard on the cases, not on the crate: the reference outputs checked above must include
    // tiny ones (below 1e-20, and below f32's normal range), where the old flush showed.
    assert!(
        tiny_outputs[0] > 0 && tiny_outputs[1] > 0,
        "the cases no longer reach tiny outputs: {tiny_outputs:?}"
    );
    eprintln!(
        "sink far above the scores: worst error / bound {worst:.3}; tiny outputs {tiny_outputs:?}"
    );
}

/// Values near the largest float with a sink logit above the scores: the rescale of the
/// accumulator is applied before the final `1/sum`, so it must not overflow where the output
/// does not (a factor above 1 there turned `3e38·0.33` into `inf`). Each output within the
/// forward bound of the reference, the decoder equal to the full pass.
#[test]
fn sink_logits_with_values_near_the_largest_float() {
    for &v in &[2e38f64, 3e38, 3.4e38, -3.4e38] {
        for &gap in &[0.3f64, 0.7, 1.0, 5.0, 70.0, 100.0] {
            let mut c = tiny(3, 3);
            c.heads = 1;
            c.q = vec![0.0; 3 * 2];
            // One large value per column, so that no accumulator overflows by itself (a sum of
            // several values near MAX overflows with or without a sink: the limit of f32).
            c.v = vec![v, v / 4.0, 0.0, -v / 4.0, 0.0, 0.0];
            c.causal = 1;
            c.set_sinks_above_scores(gap);
            check::<f32>(&c, false, &format!("v {v:e} gap {gap}"));
            check::<f64>(&c, true, &format!("v {v:e} gap {gap}"));
            let (o, _, _) = run::<f32>(&c, false).unwrap();
            assert!(o.iter().all(|x| x.is_finite()), "v {v:e} gap {gap}: {o:?}");
        }
    }
}

/// `attention_partial` over two key ranges (in reverse order, in separate buffers),
/// `merge_partials`, `attention_finish`: within the forward bound of the reference.
fn check_split<F: Float>(c: &Case, r: &attention_ref::Out, what: &str)
where
    Poly: attention_core::backend::Backend<F>,
{
    let cv = |x: &[f64]| x.iter().map(|&v| F::from_f64(v)).collect::<Vec<F>>();
    let (q, k, v) = (cv(&c.q), cv(&c.k), cv(&c.v));
    let z = cv(c.sink_logits.as_deref().unwrap_or(&[]));
    let mask = c.mask.clone();
    let mut opts = Options::new()
        .with_causal([Causal::None, Causal::BottomRight, Causal::TopLeft][c.causal as usize])
        .with_alibi(c.alibi)
        .with_sinks(c.sinks)
        .with_sink_logits(&z);
    if let Some(s) = c.scale {
        opts = opts.with_scale(F::from_f64(s));
    }
    if let Some(m) = &mask {
        opts = opts.with_mask(m);
    }
    if let Some(w) = c.window {
        opts = opts.with_window(w);
    }
    if let Some(cap) = c.softcap {
        opts = opts.with_softcap(F::from_f64(cap));
    }
    let bias = c.bias.as_ref().map(|b| cv(b));
    if let Some(b) = &bias {
        opts = opts.with_bias(b);
    }
    let dims = Dims::new(c.heads, c.kv_heads, c.t, c.s, c.d, c.dv);
    let x = Qkv::new(&q, &k, &v);
    let ht = c.heads * c.t;
    let mid = c.s / 3;
    let (mut sa, mut sb) = (
        vec![QueryState::new(Poly); ht],
        vec![QueryState::new(Poly); ht],
    );
    let (mut a, mut b) = (vec![F::ZERO; ht * c.dv], vec![F::ZERO; ht * c.dv]);
    attention_partial(Poly, &dims, x, &opts, mid..c.s, &mut b, &mut sb).unwrap();
    attention_partial(Poly, &dims, x, &opts, 0..mid, &mut a, &mut sa).unwrap();
    merge_partials(&dims, &mut a, &mut sa, &b, &sb).unwrap();
    let mut lse = vec![F::ZERO; ht];
    attention_finish(
        &dims,
        &opts,
        &mut sa,
        Output::new(&mut a).with_lse(&mut lse),
    )
    .unwrap();
    let (bo, bl, _) = bounds::<F>(c, r);
    for (i, (&got, &want)) in a.iter().zip(&r.o).enumerate() {
        let err = (got.to_f64() - want).abs();
        assert!(
            err <= bo[i],
            "{what} split o[{i}] = {got} want {want}\n{}",
            describe(c)
        );
    }
    for (i, (&got, &want)) in lse.iter().zip(&r.lse).enumerate() {
        let err = (got.to_f64() - want).abs();
        assert!(
            err <= bl[i],
            "{what} split lse[{i}] = {got} want {want}\n{}",
            describe(c)
        );
    }
}

/// The streaming decoder over the same stream (T = S, bottom-right) equals the full pass bit for
/// bit, sink logits included (`gap` above the new queries' scores).
fn check_stream(c: &Case, gap: f64, what: &str) {
    let mut c = c.clone();
    c.t = c.s;
    c.causal = 1;
    c.mask = None;
    c.bias = None;
    let mut rng = Rng(c.s as u64);
    c.q = (0..c.heads * c.t * c.d).map(|_| rng.val(2.0)).collect();
    c.set_sinks_above_scores(gap);
    let (full, _, _) = run::<f32>(&c, false).unwrap();
    let cv = |x: &[f64]| x.iter().map(|&v| v as f32).collect::<Vec<f32>>();
    let (q, k, v) = (cv(&c.q), cv(&c.k), cv(&c.v));
    let z = cv(c.sink_logits.as_deref().unwrap_or(&[]));
    let window = c.window.map(|w| Window::new(w, c.sinks));
    let cap = window.map_or(c.s, |w| w.tokens().min(c.s));
    let (mut ks, mut vs) = (
        vec![0.0f32; c.kv_heads * cap * c.d],
        vec![0.0f32; c.kv_heads * cap * c.dv],
    );
    let mut cache = KvCacheSlice::new(&mut ks, &mut vs, c.kv_heads, c.d, c.dv, window).unwrap();
    let mut opts = DecodeOptions::new()
        .with_alibi(c.alibi)
        .with_sink_logits(&z);
    if let Some(s) = c.scale {
        opts = opts.with_scale(s as f32);
    }
    if let Some(cap) = c.softcap {
        opts = opts.with_softcap(cap as f32);
    }
    let mut tiny = 0;
    for t in 0..c.t {
        let qt: Vec<f32> = (0..c.heads)
            .flat_map(|h| q[(h * c.t + t) * c.d..][..c.d].to_vec())
            .collect();
        let kt: Vec<f32> = (0..c.kv_heads)
            .flat_map(|g| k[(g * c.s + t) * c.d..][..c.d].to_vec())
            .collect();
        let vt: Vec<f32> = (0..c.kv_heads)
            .flat_map(|g| v[(g * c.s + t) * c.dv..][..c.dv].to_vec())
            .collect();
        let mut o = vec![0.0f32; c.heads * c.dv];
        cache
            .decode(Poly, &qt, &kt, &vt, &opts, Output::new(&mut o))
            .unwrap();
        for h in 0..c.heads {
            for i in 0..c.dv {
                let want = full[(h * c.t + t) * c.dv + i] as f32;
                let got = o[h * c.dv + i];
                assert_eq!(
                    got.to_bits(),
                    want.to_bits(),
                    "{what} stream t {t} h {h} i {i}"
                );
                tiny += usize::from(got != 0.0 && got.abs() < 1e-30);
            }
        }
    }
    // Gaps of 80 and 100 put the outputs below 1e-30 yet inside f32's range (where the old
    // flush showed); at 60 they are larger, at 200 below the range (0 in both passes).
    if (70.0..=110.0).contains(&gap) {
        assert!(tiny > 0, "{what}: the stream produced no tiny output");
    }
}

fn tiny(t: usize, s: usize) -> Case {
    Case {
        heads: 2,
        kv_heads: 1,
        t,
        s,
        d: 2,
        dv: 2,
        q: (0..2 * t * 2)
            .map(|i| (i % 5) as f64 * 0.25 - 0.5)
            .collect(),
        k: (0..s * 2).map(|i| (i % 7) as f64 * 0.25 - 0.75).collect(),
        v: (0..s * 2).map(|i| (i % 3) as f64 - 1.0).collect(),
        ..Case::default()
    }
}

#[test]
fn a_query_with_no_allowed_key_gives_zeros_and_minus_infinity() {
    for (label, c) in [
        ("mask all false", {
            let mut c = tiny(3, 4);
            c.mask = Some(vec![false; 12]);
            c
        }),
        ("causal, T > S", {
            let mut c = tiny(6, 2);
            c.causal = 1;
            c
        }),
        ("no keys at all", tiny(3, 0)),
        ("bias -inf everywhere", {
            let mut c = tiny(2, 3);
            c.bias = Some(vec![f64::NEG_INFINITY; 2 * 2 * 3]);
            c
        }),
    ] {
        for sinks in [None, Some(vec![0.5, -2.0])] {
            let c = Case {
                sink_logits: sinks.clone(),
                ..c.clone()
            };
            let base = forward(&Case {
                sink_logits: None,
                ..c.clone()
            });
            let mut empty_rows = 0;
            for (o, lse, ent) in [
                run::<f32>(&c, false).unwrap(),
                run::<f64>(&c, true).unwrap(),
            ] {
                for row in 0..c.heads * c.t {
                    if base.lse[row] != f64::NEG_INFINITY {
                        continue;
                    }
                    empty_rows += 1;
                    for i in 0..c.dv {
                        assert_eq!(o[row * c.dv + i].to_bits(), 0.0f64.to_bits(), "{label}");
                    }
                    let want = sinks.as_ref().map_or(f64::NEG_INFINITY, |z| z[row / c.t]);
                    assert_eq!(lse[row] as f32, want as f32, "{label}");
                    assert_eq!(ent[row], 0.0, "{label}");
                }
                assert!(
                    o.iter().chain(&lse).chain(&ent).all(|x| !x.is_nan()),
                    "{label}"
                );
            }
            assert!(empty_rows > 0, "{label}: no empty row tested");
        }
    }
}

#[test]
fn positive_infinite_scores_share_the_mass() {
    // Keys 1 and 3 get a +inf bias: the output is the mean of their values, lse +inf,
    // entropy ln 2; another query row is untouched.
    let mut c = tiny(2, 5);
    c.heads = 1;
    c.q.truncate(4);
    let mut b = vec![0.0; 10];
    b[1] = f64::INFINITY;
    b[3] = f64::INFINITY;
    c.bias = Some(b);
    let (o, lse, ent) = run::<f32>(&c, false).unwrap();
    let want: Vec<f64> = (0..2).map(|i| (c.v[2 + i] + c.v[6 + i]) / 2.0).collect();
    assert_eq!(&o[..2], &want[..]);
    assert_eq!(lse[0], f64::INFINITY);
    assert!((ent[0] - 2f64.ln()).abs() < 1e-7);
    let r = forward(&Case {
        bias: Some(vec![0.0; 10]),
        ..c.clone()
    });
    assert!((o[2] - r.o[2]).abs() < 1e-6 && lse[1].is_finite());
}

#[test]
fn nan_poisons_only_its_query_and_masked_keys_are_never_scores() {
    let mut c = tiny(3, 70);
    c.heads = 1;
    c.q.truncate(6);
    c.q[2] = f64::NAN; // query 1
                       // A NaN key that every query masks out: its score is never used.
    c.k[2 * 66] = f64::NAN;
    let mut m = vec![true; 3 * 70];
    for t in 0..3 {
        m[t * 70 + 66] = false;
    }
    c.mask = Some(m);
    let (o, lse, ent) = run::<f32>(&c, false).unwrap();
    assert!(o[2].is_nan() && o[3].is_nan() && lse[1].is_nan() && ent[1].is_nan());
    for row in [0, 2] {
        assert!(!o[row * 2].is_nan() && !lse[row].is_nan() && !ent[row].is_nan());
    }
}

#[test]
fn extreme_scores_do_not_overflow() {
    // q·k of ±1e38·1e1 overflows to ±inf in f32: with a soft-cap it becomes ±c, without it +inf
    // keys share the mass.
    let mut c = tiny(1, 3);
    c.heads = 1;
    c.q = vec![1e38, 0.0];
    c.k = vec![10.0, 0.0, -10.0, 0.0, 1.0, 0.0];
    c.scale = Some(1.0);
    c.softcap = Some(5.0);
    let (o, lse, _) = run::<f32>(&c, false).unwrap();
    let r = forward(&Case {
        q: vec![1e39, 0.0],
        ..c.clone()
    });
    assert!((lse[0] - r.lse[0]).abs() < 1e-5, "{} {}", lse[0], r.lse[0]);
    assert!((o[0] - r.o[0]).abs() < 1e-5);
    c.softcap = None;
    let (o, lse, _) = run::<f32>(&c, false).unwrap();
    assert_eq!(lse[0], f64::INFINITY);
    assert_eq!(o[0], c.v[0]);
}

#[test]
fn errors_for_every_structural_problem() {
    let q = [0.0f32; 8];
    let k = [0.0f32; 8];
    let v = [0.0f32; 8];
    let mut o = [0.0f32; 8];
    let x = Qkv::new(&q[..], &k[..], &v[..]);
    let call = |dims: Dims, opts: Options<'_, f32>, o: &mut [f32]| {
        attention(Poly, &dims, x, &opts, Output::new(o))
    };
    let ok = Dims::new(2, 1, 2, 4, 2, 2);
    assert_eq!(call(ok, Options::new(), &mut o), Ok(()));
    assert_eq!(
        call(Dims::new(2, 0, 2, 4, 2, 2), Options::new(), &mut o),
        Err(Error::ZeroDim { what: "kv_heads" })
    );
    assert_eq!(
        call(Dims::new(3, 2, 2, 4, 2, 2), Options::new(), &mut o),
        Err(Error::KvHeads {
            heads: 3,
            kv_heads: 2
        })
    );
    assert_eq!(
        call(Dims::new(2, 1, 2, 4, 0, 2), Options::new(), &mut o),
        Err(Error::ZeroDim { what: "d" })
    );
    assert_eq!(
        call(Dims::new(2, 1, 2, 3, 2, 2), Options::new(), &mut o),
        Err(Error::LengthMismatch {
            what: "k",
            expected: 6,
            found: 8
        })
    );
    assert_eq!(
        call(ok, Options::new(), &mut o[..7]),
        Err(Error::LengthMismatch {
            what: "o",
            expected: 8,
            found: 7
        })
    );
    assert_eq!(
        call(Dims::new(usize::MAX, 1, 2, 4, 2, 2), Options::new(), &mut o),
        Err(Error::ShapeOverflow)
    );
    let keep = [true; 7];
    assert_eq!(
        call(ok, Options::new().with_mask(&keep), &mut o),
        Err(Error::LengthMismatch {
            what: "mask",
            expected: 8,
            found: 7
        })
    );
    let bias = [0.0f32; 8];
    assert_eq!(
        call(ok, Options::new().with_bias(&bias), &mut o),
        Err(Error::LengthMismatch {
            what: "bias",
            expected: 16,
            found: 8
        })
    );
    let z = [0.0f32; 3];
    assert_eq!(
        call(ok, Options::new().with_sink_logits(&z), &mut o),
        Err(Error::LengthMismatch {
            what: "sink_logits",
            expected: 2,
            found: 3
        })
    );
    for s in [f32::NAN, f32::INFINITY] {
        assert_eq!(
            call(ok, Options::new().with_scale(s), &mut o),
            Err(Error::InvalidScale)
        );
    }
    for c in [0.0, -1.0, f32::NAN, f32::INFINITY] {
        assert_eq!(
            call(ok, Options::new().with_softcap(c), &mut o),
            Err(Error::InvalidSoftcap)
        );
    }
    assert_eq!(
        call(ok, Options::new().with_window(0), &mut o),
        Err(Error::InvalidWindow)
    );
    // lse / entropy buffers.
    let mut l = [0.0f32; 3];
    assert_eq!(
        attention(
            Poly,
            &ok,
            x,
            &Options::new(),
            Output::new(&mut o).with_lse(&mut l)
        ),
        Err(Error::LengthMismatch {
            what: "lse",
            expected: 4,
            found: 3
        })
    );
    // Every error displays a message.
    for e in [
        Error::ShapeOverflow,
        Error::InvalidScale,
        Error::CacheFull { capacity: 3 },
        Error::EmptyCache,
        Error::KeyRange {
            start: 1,
            end: 9,
            s: 4,
        },
        Error::from(softmax_core::Error::EmptyRow),
    ] {
        assert!(!e.to_string().is_empty());
    }
}

/// Whether `c` (positive) is the correctly rounded value of `1/√d`, checked exactly in
/// integers: the midpoints between `c` and its neighbours bracket `1/√d`.
fn is_correctly_rounded_inv_sqrt(bits: u64, mant_bits: u32, d: u128) -> bool {
    // c = m·2^e with m < 2^(mant_bits+1); midpoints m ± 1/2 (the lower one m − 1/4 when m is a
    // power of two, whose lower neighbour is half as far).
    let exp_bits = if mant_bits == 52 { 11 } else { 8 };
    let bias = (1i64 << (exp_bits - 1)) - 1;
    let frac = bits & ((1u64 << mant_bits) - 1);
    let ebits = (bits >> mant_bits) as i64;
    let m = (frac | (1u64 << mant_bits)) as u128;
    let e = ebits - bias - mant_bits as i64; // c = m·2^e
                                             // (m ± δ)²·2^(2e)·d vs 1, with 4m ± 4δ integers: (4m ± k)²·d vs 2^(4 − 2e).
    let p = (4 - 2 * e) as u32;
    let hi = (4 * m + 2) * (4 * m + 2) * d;
    let lo_off = if frac == 0 { 1 } else { 2 };
    let lo = (4 * m - lo_off) * (4 * m - lo_off) * d;
    let one = 1u128 << p;
    hi >= one && lo <= one
}

#[test]
fn default_scale_is_correctly_rounded() {
    let mut f64_cr = 0;
    for d in 1..=65536usize {
        let s32: f32 = default_scale(d);
        assert!(
            is_correctly_rounded_inv_sqrt(s32.to_bits() as u64, 23, d as u128),
            "f32 d = {d}: {s32}"
        );
        let s64: f64 = default_scale(d);
        let cr = is_correctly_rounded_inv_sqrt(s64.to_bits(), 52, d as u128);
        f64_cr += usize::from(cr);
        if !cr {
            // Within one ulp: one of the neighbours is.
            let up = f64::from_bits(s64.to_bits() + 1);
            let down = f64::from_bits(s64.to_bits() - 1);
            assert!(
                is_correctly_rounded_inv_sqrt(up.to_bits(), 52, d as u128)
                    || is_correctly_rounded_inv_sqrt(down.to_bits(), 52, d as u128),
                "f64 d = {d}"
            );
        }
    }
    eprintln!("default_scale f64: {f64_cr} of 65536 correctly rounded, the rest within 1 ulp");
    assert_eq!(default_scale::<f32>(64), 0.125);
    assert_eq!(default_scale::<f32>(0), f32::INFINITY);
}

#[test]
fn alibi_slopes_are_the_reference_codes() {
    let mut ref_ulps: f64 = 0.0;
    for n in 1..=256usize {
        let want = attention_ref::alibi_slopes(n);
        let mut got32 = vec![0.0f32; n];
        alibi_slopes(&mut got32).unwrap();
        for h in 0..n {
            assert_eq!(got32[h], want[h] as f32, "n {n} h {h}");
            // In f64: the exact 2^(−a/p) (std's powf of an exact exponent, < 1 ULP), within
            // 1 ULP; the reference code's own f64 arithmetic (start·ratio^i) strays further.
            let p = 1usize << (usize::BITS - 1 - n.leading_zeros());
            let x = if h < p {
                -8.0 * (h + 1) as f64 / p as f64
            } else {
                -4.0 * (2 * (h - p) + 1) as f64 / p as f64
            };
            let exact = 2f64.powf(x);
            let g64: f64 = alibi_slope(n, h);
            let ulp = f64::EPSILON * exact;
            assert!((g64 - exact).abs() <= ulp, "n {n} h {h}: {g64} {exact}");
            ref_ulps = ref_ulps.max((want[h] - exact).abs() / ulp);
        }
    }
    eprintln!("the reference code's own f64 slopes stray up to {ref_ulps:.0} ULP from 2^x");
    assert_eq!(
        alibi_slopes::<f32>(&mut []),
        Err(Error::ZeroDim { what: "heads" })
    );
}

/// The reference itself, against values worked out by hand.
#[test]
fn reference_against_hand_computed_values() {
    // One head, one query, keys at scores 0 and ln 3 (q·k with scale 1): weights 1/4, 3/4.
    let c = Case {
        heads: 1,
        kv_heads: 1,
        t: 1,
        s: 2,
        d: 1,
        dv: 1,
        q: vec![1.0],
        k: vec![0.0, 3f64.ln()],
        v: vec![4.0, 8.0],
        scale: Some(1.0),
        ..Case::default()
    };
    let f = forward(&c);
    assert!((f.o[0] - 7.0).abs() < 1e-15);
    assert!((f.lse[0] - 4f64.ln()).abs() < 1e-15);
    let h = -(0.25f64 * 0.25f64.ln() + 0.75 * 0.75f64.ln());
    assert!((f.entropy[0] - h).abs() < 1e-15);
    // With a sink logit ln 4: weights 1/8, 3/8 and the sink 1/2.
    let c2 = Case {
        sink_logits: Some(vec![4f64.ln()]),
        ..c.clone()
    };
    let f2 = forward(&c2);
    assert!((f2.o[0] - 3.5).abs() < 1e-15);
    assert!((f2.p_sink[0] - 0.5).abs() < 1e-15);
    // Bottom-right vs top-left with T = 1, S = 2: the query sits at position 1 (sees both) or
    // 0 (sees key 0 only).
    let br = forward(&Case {
        causal: 1,
        ..c.clone()
    });
    let tl = forward(&Case {
        causal: 2,
        ..c.clone()
    });
    assert!((br.o[0] - 7.0).abs() < 1e-15);
    assert_eq!(tl.o[0], 4.0);
    // ALiBi slopes of the paper for 8 heads: 1/2, 1/4, ..., 1/256; 6 heads: the 4-head slopes,
    // then 2^-1, 2^-3 (every other 8-head slope).
    assert_eq!(ref_alibi_slopes(8)[0], 0.5);
    assert_eq!(ref_alibi_slopes(8)[7], 1.0 / 256.0);
    let s6 = ref_alibi_slopes(6);
    assert_eq!(&s6[..], &[0.25, 0.0625, 0.015625, 0.00390625, 0.5, 0.125]);
    // Gradient: dv = p.
    let g = ref_backward(&c, &[1.0]);
    assert!((g.dv[0] - 0.25).abs() < 1e-15 && (g.dv[1] - 0.75).abs() < 1e-15);
}

/// Row `r` of a causal computation (`t` queries over `s` keys, bottom-right aligned, `d = dv = 1`)
/// and the same query alone over the keys it sees (one query: no tile, no padding), bit for
/// bit; every output of the full computation is returned.
fn causal_rows_equal_single_queries(q: &[f32], k: &[f32], v: &[f32]) -> Vec<f32> {
    let (t, s) = (q.len(), k.len());
    let mut o = vec![f32::NAN; t];
    let opts = Options::new().with_causal(Causal::BottomRight);
    attention(
        Poly,
        &Dims::new(1, 1, t, s, 1, 1),
        Qkv::new(q, k, v),
        &opts,
        Output::new(&mut o),
    )
    .unwrap();
    for (r, &got) in o.iter().enumerate() {
        let n = s - t + r + 1;
        let mut one = [f32::NAN];
        attention(
            Poly,
            &Dims::new(1, 1, 1, n, 1, 1),
            Qkv::new(&q[r..=r], &k[..n], &v[..n]),
            &Options::new(),
            Output::new(&mut one),
        )
        .unwrap();
        assert_eq!(
            got.to_bits(),
            one[0].to_bits(),
            "row {r}: {got} vs {}",
            one[0]
        );
    }
    o
}

#[test]
fn the_causal_diagonal_reads_no_future_value_and_keeps_negative_zeros() {
    // The diagonal block of a causal tile runs as a whole-width product with weights of +0 for
    // each row's future keys, but only where those zeros add nothing (tile.rs,
    // `zeros_add_nothing`). Sixteen queries over 144 keys: the rows' last keys are 128..=143,
    // in the block [128, 144).
    let (t, s) = (16usize, 144usize);
    let q = vec![1.0f32; t];
    // Plain data: the padded product runs (every check holds) and each row equals the query
    // alone.
    let mut rng = 0x5eed_u64;
    let mut next = || {
        rng = rng.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
        ((rng >> 40) as f32 / (1u64 << 24) as f32) * 4.0 - 2.0
    };
    let (qs, ks, vs): (Vec<f32>, Vec<f32>, Vec<f32>) = (
        (0..t).map(|_| next()).collect(),
        (0..s).map(|_| next()).collect(),
        (0..s).map(|_| next()).collect(),
    );
    causal_rows_equal_single_queries(&qs, &ks, &vs);
    // An infinite and a NaN value among the future keys of the first rows: only the rows that
    // see those keys may be affected.
    let mut k = vec![0.0f32; s];
    let mut v: Vec<f32> = (0..s).map(|j| (j % 7) as f32 - 3.0).collect();
    v[138] = f32::INFINITY;
    v[141] = f32::NAN;
    let o = causal_rows_equal_single_queries(&q, &k, &v);
    for (r, x) in o.iter().enumerate() {
        // Row r sees keys 0..=128 + r.
        assert_eq!(x.is_finite(), 128 + r < 138, "row {r}: {x}");
    }
    // A −0 output: keys 0..128 have score 0 and value −1 (the accumulator goes negative), key
    // 128 has score 100 (the rescale e^−100 flushes to 0, leaving −0) and value −0, and every
    // later key has weight 0 (score 0, 100 below the maximum) and value +1. Row 0 (keys up to
    // 128) is −0; a +0 weight times a later value +1 added to it would make it +0.
    k.fill(0.0);
    k[128] = 100.0;
    let mut v = vec![-1.0f32; s];
    v[128] = -0.0;
    v[129..].fill(1.0);
    let o = causal_rows_equal_single_queries(&q, &k, &v);
    assert_eq!(o[0].to_bits(), (-0.0f32).to_bits(), "row 0: {}", o[0]);
    assert_eq!(o[1].to_bits(), 0.0f32.to_bits(), "row 1: {}", o[1]);
}

/// One query's outputs (`o`, its logsumexp and entropy when asked) alone (`t = 1`: a tile of
/// one row, whose key blocks run in groups: all their scores, then the updates, then the
/// values) and as the last row of a two-query computation (a tile of two rows, block by block),
/// which sees the same keys at the same position: bit for bit equal, for key counts around the
/// block (128) and group (2,048 keys on 64-bit hosts) boundaries, a block of two runs of keys
/// (sinks, then a window that starts inside the first block), and the score modifiers a single
/// query can share with a row of a larger computation: scale, causal window with sinks, ALiBi,
/// softcap, an additive bias, a keep-mask; infinite scores and NaN values; with no statistics,
/// with the logsumexp alone, and with the logsumexp and the entropy.
#[test]
fn a_query_alone_equals_its_row_in_a_tile() {
    let (d, dv) = (16usize, 8usize);
    let mut rng = Rng(11);
    let mut cases = 0;
    for &s in &[1usize, 127, 128, 129, 760, 2047, 2048, 2049, 4396] {
        for variant in 0..8 {
            let q: Vec<f32> = (0..2 * d).map(|_| rng.val(1.0) as f32).collect();
            let mut k: Vec<f32> = (0..s * d).map(|_| rng.val(1.0) as f32).collect();
            let mut v: Vec<f32> = (0..s * dv).map(|_| rng.val(1.0) as f32).collect();
            // Two rows of bias and keep flags; the single query takes the second.
            let bias: Vec<f32> = (0..2 * s)
                .map(|j| {
                    if j % 11 == 4 {
                        f32::NEG_INFINITY
                    } else {
                        rng.val(2.0) as f32
                    }
                })
                .collect();
            let keep: Vec<bool> = (0..2 * s).map(|j| j % 7 != 2 || j % s == 0).collect();
            let (mut opts2, mut opts1) = (Options::new(), Options::new());
            match variant {
                // Scores that rise from block to block: every block rescales the state.
                1 => {
                    for (j, kr) in k.chunks_mut(d).enumerate() {
                        for (x, &qx) in kr.iter_mut().zip(&q[d..]) {
                            *x = qx * (j as f32 / s as f32) * 8.0;
                        }
                    }
                }
                // At 760 keys the window (60..760) and the sinks (0..3) share the first block.
                2 => {
                    for o in [&mut opts2, &mut opts1] {
                        *o = o
                            .with_causal(Causal::BottomRight)
                            .with_window(700)
                            .with_sinks(3)
                            .with_scale(0.3);
                    }
                }
                3 => {
                    for o in [&mut opts2, &mut opts1] {
                        *o = o.with_alibi(true).with_softcap(4.0);
                    }
                }
                // An infinite score in the last block, and a NaN value in the first.
                4 => {
                    k[(s - 1) * d] = f32::INFINITY;
                    k[(s - 1) * d + 1..s * d].fill(0.0);
                }
                5 => v[0] = f32::NAN,
                6 => {
                    opts2 = opts2.with_bias(&bias);
                    opts1 = opts1.with_bias(&bias[s..]);
                }
                7 => {
                    opts2 = opts2.with_mask(&keep);
                    opts1 = opts1.with_mask(&keep[s..]);
                }
                _ => {}
            }
            for stats in 0..3 {
                let (mut o2, mut o1) = (vec![f32::NAN; 2 * dv], vec![f32::NAN; dv]);
                let (mut l2, mut l1, mut e2, mut e1) =
                    ([0.0f32; 2], [0.0f32], [0.0f32; 2], [0.0f32]);
                let run = |t: usize,
                           q: &[f32],
                           opts: &Options<'_, f32>,
                           o: &mut [f32],
                           l: &mut [f32],
                           e: &mut [f32]| {
                    let out = match stats {
                        0 => Output::new(o),
                        1 => Output::new(o).with_lse(l),
                        _ => Output::new(o).with_lse(l).with_entropy(e),
                    };
                    attention(
                        Poly,
                        &Dims::new(1, 1, t, s, d, dv),
                        Qkv::new(q, &k, &v),
                        opts,
                        out,
                    )
                    .unwrap();
                };
                run(2, &q, &opts2, &mut o2, &mut l2, &mut e2);
                run(1, &q[d..], &opts1, &mut o1, &mut l1, &mut e1);
                let bits = |x: &[f32]| x.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
                let what = format!("s = {s}, variant {variant}, stats {stats}");
                assert_eq!(
                    bits(&o2[dv..]),
                    bits(&o1),
                    "{what}: {:?} vs {:?}",
                    &o2[dv..],
                    o1
                );
                assert_eq!(l2[1].to_bits(), l1[0].to_bits(), "{what}: lse");
                assert_eq!(e2[1].to_bits(), e1[0].to_bits(), "{what}: entropy");
                cases += 1;
            }
        }
    }
    eprintln!("{cases} cases");
}
