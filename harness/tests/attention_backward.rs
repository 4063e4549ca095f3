//! attention-core's backward pass against (1) central finite differences of the naive f64
//! reference and (2) the reference's analytic gradients, for every combination of masks and
//! modifiers, in f64 and f32; plus its edge cases and errors.
//!
//! The f32 tolerance comes from an error analysis of `g_j = p_j·(dP_j − D)·scale·cap'`: the
//! weight's relative error (a few roundings plus twice the score error, as in the forward pass),
//! the dot products `dP_j` and `D` (their stated bounds; `D` also carries the forward output's
//! error), then the sums of `dq`, `dk`, `dv` (`n` additions).

#[path = "attention_support/reference.rs"]
mod attention_ref;

use attention_core::backend::{Backend, Libm, Poly};
use attention_core::{
    attention, attention_backward, Causal, Dims, Error, Float, Grads, Options, Output, Qkv, Saved,
};
use attention_ref::{backward, forward, objective, Case, Rng};

fn random_case(rng: &mut Rng, causal: u8, combo: u32, max_s: usize) -> Case {
    let (heads, kv_heads) = [(1, 1), (2, 1), (4, 2), (3, 3)][rng.below(4)];
    let t = 1 + rng.below(6);
    let s = 1 + rng.below(max_s);
    let d = [1, 3, 4][rng.below(3)];
    let dv = [1, 2, 3][rng.below(3)];
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
    c.q = (0..heads * t * d).map(|_| rng.val(1.5)).collect();
    c.k = (0..kv_heads * s * d).map(|_| rng.val(1.5)).collect();
    c.v = (0..kv_heads * s * dv).map(|_| rng.val(2.0)).collect();
    if rng.below(2) == 0 {
        c.scale = Some(rng.val(1.2));
    }
    if combo & 1 != 0 {
        c.mask = Some((0..t * s).map(|_| rng.below(4) != 0).collect());
    }
    if combo & 2 != 0 {
        c.bias = Some(
            (0..heads * t * s)
                .map(|_| {
                    if rng.below(15) == 0 {
                        f64::NEG_INFINITY
                    } else {
                        rng.val(1.0)
                    }
                })
                .collect(),
        );
    }
    c.alibi = combo & 4 != 0;
    if combo & 8 != 0 {
        c.window = Some(1 + rng.below(s + 2));
    }
    if combo & 16 != 0 {
        c.sinks = rng.below(4);
    }
    if combo & 32 != 0 {
        c.softcap = Some([0.7, 3.0][rng.below(2)]);
    }
    if combo & 64 != 0 {
        c.sink_logits = Some((0..heads).map(|_| rng.val(2.0)).collect());
    }
    c
}

/// attention-core's forward and backward on a reference case, in type `F`.
#[allow(clippy::type_complexity)]
fn run<F: Float>(
    c: &Case,
    d_o: &[f64],
    libm: bool,
) -> Result<(Vec<f64>, Vec<f64>, Vec<f64>, Vec<f64>), Error>
where
    Poly: Backend<F>,
    Libm: Backend<F>,
{
    let cv = |x: &[f64]| x.iter().map(|&v| F::from_f64(v)).collect::<Vec<F>>();
    let (q, k, v, dov) = (cv(&c.q), cv(&c.k), cv(&c.v), cv(d_o));
    let bias = c.bias.as_ref().map(|b| cv(b));
    let z = c.sink_logits.as_ref().map(|z| cv(z));
    let mut opts = Options::new()
        .with_causal([Causal::None, Causal::BottomRight, Causal::TopLeft][c.causal as usize])
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
    if let Some(z) = &z {
        opts = opts.with_sink_logits(z);
    }
    let dims = Dims::new(c.heads, c.kv_heads, c.t, c.s, c.d, c.dv);
    let x = Qkv::new(&q, &k, &v);
    let mut o = vec![F::ZERO; c.heads * c.t * c.dv];
    let mut lse = vec![F::ZERO; c.heads * c.t];
    let mut dq = vec![F::NAN; q.len()];
    let mut dk = vec![F::NAN; k.len()];
    let mut dvv = vec![F::NAN; v.len()];
    let mut dz = vec![F::NAN; c.heads];
    macro_rules! go {
        ($b:expr) => {{
            attention($b, &dims, x, &opts, Output::new(&mut o).with_lse(&mut lse))?;
            let mut g = Grads::new(&mut dq, &mut dk, &mut dvv);
            if z.is_some() {
                g = g.with_sink_logits(&mut dz);
            }
            attention_backward($b, &dims, x, &opts, Saved::new(&o, &lse), &dov, g)?;
        }};
    }
    if libm {
        go!(Libm);
    } else {
        go!(Poly);
    }
    let w = |x: Vec<F>| x.into_iter().map(F::to_f64).collect::<Vec<f64>>();
    Ok((w(dq), w(dk), w(dvv), w(dz)))
}

/// Central finite differences of the reference objective with respect to every input.
fn finite_differences(c: &Case, d_o: &[f64]) -> (Vec<f64>, Vec<f64>, Vec<f64>, Vec<f64>) {
    let fd = |get: &dyn Fn(&mut Case) -> &mut Vec<f64>, n: usize| -> Vec<f64> {
        (0..n)
            .map(|i| {
                let mut a = c.clone();
                let mut b = c.clone();
                let x = get(&mut a)[i];
                let h = 1e-6 * (1.0 + x.abs());
                get(&mut a)[i] = x + h;
                get(&mut b)[i] = x - h;
                (objective(&a, d_o) - objective(&b, d_o)) / (2.0 * h)
            })
            .collect()
    };
    let dq = fd(&|c: &mut Case| &mut c.q, c.q.len());
    let dk = fd(&|c: &mut Case| &mut c.k, c.k.len());
    let dv = fd(&|c: &mut Case| &mut c.v, c.v.len());
    let dz = match &c.sink_logits {
        Some(z) => fd(&|c: &mut Case| c.sink_logits.as_mut().unwrap(), z.len()),
        None => vec![],
    };
    (dq, dk, dv, dz)
}

fn d_out(rng: &mut Rng, c: &Case) -> Vec<f64> {
    (0..c.heads * c.t * c.dv).map(|_| rng.val(1.0)).collect()
}

/// Per-element bounds of the f32 gradients (see the module docs), from the f64 reference.
fn bounds(c: &Case, d_o: &[f64], u: f64) -> (Vec<f64>, Vec<f64>, Vec<f64>, Vec<f64>) {
    let f = forward(c);
    let (t_n, s_n, d, dv) = (c.t, c.s, c.d, c.dv);
    let slopes = attention_ref::alibi_slopes(c.heads);
    let mut bq = vec![0.0; c.q.len()];
    let mut bk = vec![0.0; c.k.len()];
    let mut bv = vec![0.0; c.v.len()];
    let mut bz = vec![0.0; c.heads];
    let scale = c.scale().abs();
    // The smallest subnormal: a weight `p` or a product `g` below the normal range is rounded
    // to a multiple of it (half of it absolute error), which the later factors then carry.
    let quantum = if u > 1e-10 {
        2f64.powi(-149)
    } else {
        2f64.powi(-1074)
    };
    let half_q = 0.5 * quantum;
    for h in 0..c.heads {
        let g = h / (c.heads / c.kv_heads);
        for t in 0..t_n {
            let row = h * t_n + t;
            let rs = c.row_scores(h, t);
            let qr = &c.q[row * d..][..d];
            let dor = &d_o[row * dv..][..dv];
            let or = &f.o[row * dv..][..dv];
            let dd: f64 = dor.iter().zip(or).map(|(a, b)| a * b).sum();
            // The score error of each key, and its largest value.
            let mut ds_max: f64 = 0.0;
            let mut dz_of = vec![0.0; s_n];
            for j in 0..s_n {
                let Some(sj) = rs.s[j].filter(|x| x.is_finite()) else {
                    continue;
                };
                let kr = c.k_row(g, j);
                let qk: f64 = qr.iter().zip(kr).map(|(a, b)| (a * b).abs()).sum();
                let dz =
                    ((d as f64 / 16.0).ceil() + 4.0) * u * qk * scale + 2.0 * u * rs.z[j].abs();
                dz_of[j] = dz;
                let bias = c.bias.as_ref().map_or(0.0, |b| b[row * s_n + j].abs());
                let ali = if c.alibi {
                    slopes[h] * (c.qpos(t) - j as i64).abs() as f64
                } else {
                    0.0
                };
                ds_max = ds_max.max(dz + 8.0 * u * (bias + ali + sj.abs()));
            }
            // D's error: the output's (forward analysis) and its own dot product.
            let mag_o: Vec<f64> = (0..dv)
                .map(|i| {
                    (0..s_n)
                        .map(|j| f.p[row * s_n + j] * c.v_row(g, j)[i].abs())
                        .sum()
                })
                .collect();
            let n_keys = (0..s_n).filter(|&j| f.p[row * s_n + j] > 0.0).count() as f64;
            let d_err: f64 = (0..dv)
                .map(|i| dor[i].abs() * ((n_keys + 16.0) * u + 4.0 * ds_max) * mag_o[i])
                .sum::<f64>()
                + ((dv as f64 / 16.0).ceil() + 4.0)
                    * u
                    * dor.iter().zip(or).map(|(a, b)| (a * b).abs()).sum::<f64>()
                // Below the normal range: each output element (rounded absolutely in the
                // forward pass) times its dO, and each product and sum of D itself.
                + half_q * (dor.iter().map(|a| a.abs()).sum::<f64>() + 2.0 * dv as f64 + 2.0);
            for j in 0..s_n {
                let pj = f.p[row * s_n + j];
                if pj == 0.0 || rs.s[j].is_none() {
                    continue;
                }
                let vr = c.v_row(g, j);
                let dp: f64 = dor.iter().zip(vr).map(|(a, b)| a * b).sum();
                let dp_err = ((dv as f64 / 16.0).ceil() + 4.0)
                    * u
                    * dor.iter().zip(vr).map(|(a, b)| (a * b).abs()).sum::<f64>();
                let (fac, fac_rel) = match c.softcap {
                    Some(cap) => {
                        // sech²(z/c): relative error a few ULP, plus its change over the
                        // input's error (|d ln sech²/dz| <= 2/c).
                        (
                            scale / (rs.z[j] / cap).cosh().powi(2),
                            8.0 * u + 2.0 * dz_of[j] / cap,
                        )
                    }
                    None => (scale, u),
                };
                let gj = pj * (dp - dd).abs() * fac;
                let g_err = fac
                    * (pj * ((dp.abs() + dd.abs()) * (24.0 * u + 4.0 * ds_max) + d_err + dp_err)
                        + half_q * (dp.abs() + dd.abs()))
                    + gj * fac_rel
                    + half_q;
                let kr = c.k_row(g, j);
                for i in 0..d {
                    // Each product term may also round absolutely (half a quantum) where it
                    // is subnormal.
                    bq[row * d + i] +=
                        g_err * kr[i].abs() + (s_n as f64 + 4.0) * u * gj * kr[i].abs() + half_q;
                    bk[(g * s_n + j) * d + i] += g_err * qr[i].abs()
                        + (c.heads * t_n + 4) as f64 * u * gj * qr[i].abs()
                        + half_q;
                }
                let p_err = pj * (24.0 * u + 4.0 * ds_max) + half_q;
                for i in 0..dv {
                    bv[(g * s_n + j) * dv + i] += p_err * dor[i].abs()
                        + (c.heads * t_n + 4) as f64 * u * pj * dor[i].abs()
                        + half_q;
                }
            }
            bz[h] += f.p_sink[row] * ((24.0 * u + 4.0 * ds_max) * dd.abs() + d_err)
                + 4.0 * u * f.p_sink[row] * dd.abs()
                + 2.0 * half_q;
        }
    }
    // An absolute floor: two half-quanta of the subnormal range (a gradient below the smallest
    // normal number is rounded absolutely), never below 1e-300.
    let floor = quantum.max(1e-300);
    let tiny = |v: Vec<f64>| v.into_iter().map(|x| x + floor).collect::<Vec<f64>>();
    (tiny(bq), tiny(bk), tiny(bv), tiny(bz))
}

fn compare(what: &str, got: &[f64], want: &[f64], bound: impl Fn(usize) -> f64) -> f64 {
    assert_eq!(got.len(), want.len(), "{what}");
    let mut worst: f64 = 0.0;
    for i in 0..got.len() {
        let err = (got[i] - want[i]).abs();
        let b = bound(i);
        assert!(
            err <= b,
            "{what}[{i}]: {} vs {} (err {err:e} > {b:e})",
            got[i],
            want[i]
        );
        worst = worst.max(err / b);
    }
    worst
}

fn describe(c: &Case) -> String {
    format!(
        "H {} Hkv {} T {} S {} d {} dv {} causal {} mask {} bias {} alibi {} window {:?} sinks {} softcap {:?} sink {}",
        c.heads, c.kv_heads, c.t, c.s, c.d, c.dv, c.causal, c.mask.is_some(), c.bias.is_some(),
        c.alibi, c.window, c.sinks, c.softcap, c.sink_logits.is_some()
    )
}

#[test]
fn reference_gradients_match_finite_differences() {
    // Validates the analytic reference the other tests use: every combination, small sizes.
    let mut rng = Rng(11);
    let mut worst: f64 = 0.0;
    for causal in 0..3u8 {
        for combo in (0..128u32).step_by(3) {
            let c = random_case(&mut rng, causal, combo, 20);
            let d_o = d_out(&mut rng, &c);
            let g = backward(&c, &d_o);
            let (fq, fk, fv, fz) = finite_differences(&c, &d_o);
            let what = describe(&c);
            let tol = |x: &[f64]| {
                let m = x.iter().fold(1.0f64, |m, v| m.max(v.abs()));
                move |_| 1e-7 * m
            };
            worst = worst.max(compare(&format!("dq {what}"), &g.dq, &fq, tol(&fq)));
            worst = worst.max(compare(&format!("dk {what}"), &g.dk, &fk, tol(&fk)));
            worst = worst.max(compare(&format!("dv {what}"), &g.dv, &fv, tol(&fv)));
            if !fz.is_empty() {
                worst = worst.max(compare(&format!("dz {what}"), &g.d_sink, &fz, tol(&fz)));
            }
        }
    }
    eprintln!("reference vs finite differences: worst {worst:.3} of 1e-7·max|g|");
}

#[test]
fn f64_backward_matches_finite_differences_directly() {
    let mut rng = Rng(12);
    for causal in 0..3u8 {
        for combo in [0u32, 9, 27, 46, 63, 72, 127] {
            let c = random_case(&mut rng, causal, combo, 70);
            let d_o = d_out(&mut rng, &c);
            let (dq, dk, dv, dz) = run::<f64>(&c, &d_o, combo % 2 == 0).unwrap();
            let (fq, fk, fv, fz) = finite_differences(&c, &d_o);
            let what = describe(&c);
            let tol = |x: &[f64]| {
                let m = x.iter().fold(1.0f64, |m, v| m.max(v.abs()));
                move |_| 1e-7 * m
            };
            compare(&format!("dq {what}"), &dq, &fq, tol(&fq));
            compare(&format!("dk {what}"), &dk, &fk, tol(&fk));
            compare(&format!("dv {what}"), &dv, &fv, tol(&fv));
            if !fz.is_empty() {
                compare(&format!("dz {what}"), &dz, &fz, tol(&fz));
            }
        }
    }
}

#[test]
fn every_combination_matches_the_analytic_reference_in_f64_and_f32() {
    let mut rng = Rng(13);
    let (mut w64, mut w32) = (0.0f64, 0.0f64);
    for causal in 0..3u8 {
        for combo in 0..128u32 {
            if combo & 16 != 0 && combo & 8 == 0 {
                continue;
            }
            let c = random_case(&mut rng, causal, combo, 140);
            let d_o = d_out(&mut rng, &c);
            let r = backward(&c, &d_o);
            let what = describe(&c);
            for (ty, u) in [
                ("f64", 0.5 * f64::EPSILON),
                ("f32", 0.5 * f32::EPSILON as f64),
            ] {
                let (dq, dk, dv, dz) = if ty == "f64" {
                    run::<f64>(&c, &d_o, combo % 3 == 0).unwrap()
                } else {
                    run::<f32>(&c, &d_o, combo % 3 == 1).unwrap()
                };
                // In f64 the reference's own rounding is of the same order: twice the bound.
                let k = if ty == "f64" { 2.0 } else { 1.0 };
                let (bq, bk, bv, bz) = bounds(&c, &d_o, u);
                let mut w = 0.0f64;
                w = w.max(compare(&format!("{ty} dq {what}"), &dq, &r.dq, |i| {
                    k * bq[i]
                }));
                w = w.max(compare(&format!("{ty} dk {what}"), &dk, &r.dk, |i| {
                    k * bk[i]
                }));
                w = w.max(compare(&format!("{ty} dv {what}"), &dv, &r.dv, |i| {
                    k * bv[i]
                }));
                if c.sink_logits.is_some() {
                    w = w.max(compare(&format!("{ty} dz {what}"), &dz, &r.d_sink, |i| {
                        k * bz[i]
                    }));
                }
                if ty == "f64" {
                    w64 = w64.max(w);
                } else {
                    w32 = w32.max(w);
                }
            }
        }
    }
    eprintln!("backward vs analytic reference: worst error / bound f64 {w64:.3}, f32 {w32:.3}");
}

/// The sink-logit underflow (regression): with each head's sink logit 60, 80, 100 or 200 above
/// every score, the keys' weights are `e^-60` .. `e^-200` and their gradients tiny; the forward
/// output (whose rowsum with `dO` enters every gradient) and the gradients must still match the
/// analytic float64 reference within the bounds above, f32 and f64.
#[test]
fn sink_logits_far_above_every_score_keep_their_gradients() {
    let mut rng = Rng(0x5_1a5);
    let mut worst: f64 = 0.0;
    let mut tiny = 0usize;
    for gap in [60.0, 80.0, 100.0, 200.0] {
        for (causal, combo) in [(0u8, 0u32), (1, 4 | 8 | 16), (2, 32), (1, 1)] {
            let mut c = random_case(&mut rng, causal, combo, 140);
            c.set_sinks_above_scores(gap);
            let d_o = d_out(&mut rng, &c);
            let r = backward(&c, &d_o);
            tiny +=
                r.dv.iter()
                    .filter(|x| **x != 0.0 && x.abs() < 1e-25)
                    .count();
            let what = format!("gap {gap} {}", describe(&c));
            for (ty, u) in [
                ("f64", 0.5 * f64::EPSILON),
                ("f32", 0.5 * f32::EPSILON as f64),
            ] {
                let (dq, dk, dv, dz) = if ty == "f64" {
                    run::<f64>(&c, &d_o, false).unwrap()
                } else {
                    run::<f32>(&c, &d_o, true).unwrap()
                };
                let k = if ty == "f64" { 2.0 } else { 1.0 };
                let (bq, bk, bv, bz) = bounds(&c, &d_o, u);
                worst = worst.max(compare(&format!("{ty} dq {what}"), &dq, &r.dq, |i| {
                    k * bq[i]
                }));
                worst = worst.max(compare(&format!("{ty} dk {what}"), &dk, &r.dk, |i| {
                    k * bk[i]
                }));
                worst = worst.max(compare(&format!("{ty} dv {what}"), &dv, &r.dv, |i| {
                    k * bv[i]
                }));
                worst = worst.max(compare(&format!("{ty} dz {what}"), &dz, &r.d_sink, |i| {
                    k * bz[i]
                }));
            }
        }
    }
    // A guard on the cases (the reference must have tiny gradients for the bounds above to
    // test the sink path), not on the crate.
    assert!(tiny > 0, "no tiny gradient was tested");
    eprintln!("sink far above the scores: worst error / bound {worst:.3}");
}

#[test]
fn edge_rows_get_zero_or_limit_gradients() {
    // Query 0 sees nothing (mask), query 1 has two +inf scores (bias), query 2 is ordinary.
    let mut c = Case {
        heads: 1,
        kv_heads: 1,
        t: 3,
        s: 4,
        d: 2,
        dv: 2,
        q: vec![0.5, -1.0, 1.0, 0.25, -0.5, 0.75],
        k: vec![1.0, 0.0, 0.0, 1.0, 1.0, 1.0, -1.0, 0.5],
        v: vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0],
        ..Case::default()
    };
    let mut keep = vec![true; 12];
    keep[..4].fill(false);
    c.mask = Some(keep);
    let mut bias = vec![0.0; 12];
    bias[4 + 1] = f64::INFINITY;
    bias[4 + 3] = f64::INFINITY;
    c.bias = Some(bias);
    let d_o = vec![1.0, -1.0, 0.5, 2.0, -0.25, 1.5];
    for libm in [false, true] {
        let (dq, dk, dv, _) = run::<f32>(&c, &d_o, libm).unwrap();
        assert!(dq.iter().chain(&dk).chain(&dv).all(|x| x.is_finite()));
        // Query 0: no key, no gradient.
        assert_eq!(&dq[..2], &[0.0, 0.0]);
        // Query 1: the limit (weights 1/2 on keys 1 and 3) gives dv and nothing else.
        assert_eq!(&dq[2..4], &[0.0, 0.0]);
        // Query 2 alone (the reference without queries 0 and 1) gives every other gradient.
        let only2 = Case {
            t: 1,
            s: 4,
            q: c.q[4..].to_vec(),
            mask: None,
            bias: None,
            causal: 0,
            ..c.clone()
        };
        // Positions: with T = 1 the query sits where query 2 of T = 3 sat (S − T + t = 3).
        let r = backward(&only2, &d_o[4..]);
        for i in 0..2 {
            assert!((dq[4 + i] - r.dq[i]).abs() < 1e-5);
        }
        for j in 0..4 {
            for i in 0..2 {
                let limit = if j == 1 || j == 3 {
                    0.5 * d_o[2 + i]
                } else {
                    0.0
                };
                assert!(
                    (dv[j * 2 + i] - (r.dv[j * 2 + i] + limit)).abs() < 1e-5,
                    "dv {j} {i}"
                );
                assert!((dk[j * 2 + i] - r.dk[j * 2 + i]).abs() < 1e-5, "dk {j} {i}");
            }
        }
    }
}

#[test]
fn backward_errors() {
    let (q, k, v) = ([0.0f32; 4], [0.0f32; 4], [0.0f32; 4]);
    let dims = Dims::new(1, 1, 2, 2, 2, 2);
    let x = Qkv::new(&q[..], &k[..], &v[..]);
    let (o, lse, d_o) = ([0.0f32; 4], [0.0f32; 2], [0.0f32; 4]);
    let (mut dq, mut dk, mut dv, mut dz) = ([0.0f32; 4], [0.0f32; 4], [0.0f32; 4], [0.0f32; 1]);
    let opts = Options::new();
    assert_eq!(
        attention_backward(
            Poly,
            &dims,
            x,
            &opts,
            Saved::new(&o, &lse),
            &d_o,
            Grads::new(&mut dq, &mut dk, &mut dv).with_sink_logits(&mut dz)
        ),
        Err(Error::UnsupportedOption {
            what: "d_sink_logits"
        })
    );
    assert_eq!(
        attention_backward(
            Poly,
            &dims,
            x,
            &opts,
            Saved::new(&o, &lse[..1]),
            &d_o,
            Grads::new(&mut dq, &mut dk, &mut dv)
        ),
        Err(Error::LengthMismatch {
            what: "lse",
            expected: 2,
            found: 1
        })
    );
    assert_eq!(
        attention_backward(
            Poly,
            &dims,
            x,
            &opts,
            Saved::new(&o, &lse),
            &d_o[..3],
            Grads::new(&mut dq, &mut dk, &mut dv)
        ),
        Err(Error::LengthMismatch {
            what: "do",
            expected: 4,
            found: 3
        })
    );
    assert_eq!(
        attention_backward(
            Poly,
            &dims,
            x,
            &opts,
            Saved::new(&o, &lse),
            &d_o,
            Grads::new(&mut dq, &mut dk[..3], &mut dv)
        ),
        Err(Error::LengthMismatch {
            what: "dk",
            expected: 4,
            found: 3
        })
    );
}
