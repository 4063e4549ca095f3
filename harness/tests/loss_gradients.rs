//! Every gradient loss-core returns, checked in f64 against central finite differences (a
//! fourth-order stencil) of the naive f64 reference in `loss_support` — not of loss-core itself —
//! with relative error `max|g − g_fd| / max|g_fd| <= 1e-6`, over the option matrix of each loss.
//! The temperature, logit-scale and bias gradients included. The largest error of each loss is
//! printed (`-- --nocapture`).
//!
//! The finite differences are accurate to about 1e-9 relative here (step 1e-4·max(1, |x|),
//! error O(h⁴) plus rounding 1e-16/h), three orders below the tolerance.
// Reference math written as index loops over matrices, and finite-difference helpers that
// take every option of the call they check.
#![allow(clippy::needless_range_loop, clippy::too_many_arguments)]

mod loss_support;
/// The seed formulas' verdicts (merged here to save a test binary's link time).
#[path = "loss_support/seeds.rs"]
mod seeds;

use loss_core::softmax_core::backend::{Libm, Poly};
use loss_core::*;
use loss_support as r;
use loss_support::{Red, Rng};

const TOL: f64 = 1e-6;
const H: f64 = 1e-4;

fn check(what: &str, got: &[f64], want: &[f64]) -> f64 {
    let e = r::rel_err(got, want, 1e-300);
    assert!(
        e <= TOL,
        "{what}: relative gradient error {e:.3e} > {TOL:e}\n got  {got:?}\n want {want:?}"
    );
    e
}

fn worst(name: &str, errs: &[f64]) {
    let m = errs.iter().cloned().fold(0.0, f64::max);
    println!(
        "{name:<28} {} checks, max relative error {m:.2e}",
        errs.len()
    );
}

const REDS: [Red; 3] = [Red::None, Red::Sum, Red::Mean];

/// A per-sample buffer for `n` samples: required with `None` (n values), one value otherwise.
fn per(red: Red, n: usize) -> Vec<f64> {
    vec![0.0; if red == Red::None { n } else { 1 }]
}

fn ce_opts<'a>(o: &r::Ce, w: &'a [f64]) -> CrossEntropyOptions<'a, f64> {
    let mut opts = CrossEntropyOptions::new()
        .with_ignore_index(o.ignore)
        .with_label_smoothing(o.eps)
        .with_reduction(o.red.lib())
        .with_z_loss(o.zl);
    if o.weight.is_some() {
        opts = opts.with_weight(w);
    }
    if let Some(c) = o.cap {
        opts = opts.with_softcap(c);
    }
    opts
}

/// Every combination of weight × ignore × smoothing × reduction × soft-cap × z-loss.
fn ce_matrix(c: usize) -> Vec<r::Ce> {
    let mut rng = Rng(7);
    let w: Vec<f64> = rng.vec(c, 0.2, 2.0);
    let mut out = vec![];
    for weight in [None, Some(w.clone())] {
        for ignore in [-100i64, 1] {
            for eps in [0.0, 0.15] {
                for red in REDS {
                    for cap in [None, Some(3.0)] {
                        for zl in [0.0, 0.01] {
                            out.push(r::Ce {
                                weight: weight.clone(),
                                ignore,
                                eps,
                                red,
                                cap,
                                zl,
                            });
                        }
                    }
                }
            }
        }
    }
    out
}

#[test]
fn cross_entropy_index_targets() {
    let (b, c) = (5, 6);
    let mut rng = Rng(1);
    let x = rng.vec(b * c, -4.0, 4.0);
    let t: Vec<i64> = vec![0, 1, 5, 1, 3]; // class 1 is the ignore index in half the matrix
    let mut errs = vec![];
    for o in ce_matrix(c) {
        let w = o.weight.clone().unwrap_or_default();
        let opts = ce_opts(&o, &w);
        let want = r::fd(|x| r::cross_entropy(x, c, &t, &o).0, &x, H);
        for bk in 0..2 {
            let mut g = vec![0.0; b * c];
            let mut per = per(o.red, b);
            let out = CrossEntropyOutputs::new()
                .with_grad(&mut g)
                .with_losses(&mut per);
            let l = if bk == 0 {
                cross_entropy(Poly, &x, c, &t, &opts, out)
            } else {
                cross_entropy(Libm, &x, c, &t, &opts, out)
            }
            .unwrap();
            let (lw, _) = r::cross_entropy(&x, c, &t, &o);
            assert!(
                (l - lw).abs() <= 1e-13 * (1.0 + lw.abs()),
                "{o:?}: {l} vs {lw}"
            );
            errs.push(check(&format!("{o:?}"), &g, &want));
        }
    }
    worst("cross_entropy", &errs);
}

#[test]
fn cross_entropy_probability_targets() {
    let (b, c) = (4, 5);
    let mut rng = Rng(2);
    let x = rng.vec(b * c, -3.0, 3.0);
    let tp: Vec<f64> = (0..b)
        .flat_map(|_| {
            let v = rng.vec(c, 0.0, 1.0);
            let s: f64 = v.iter().sum();
            v.into_iter().map(move |a| a / s)
        })
        .collect();
    let mut errs = vec![];
    for o in ce_matrix(c).into_iter().filter(|o| o.ignore < 0) {
        let w = o.weight.clone().unwrap_or_default();
        let opts = ce_opts(&o, &w);
        let want = r::fd(|x| r::cross_entropy_probs(x, c, &tp, &o).0, &x, H);
        let mut g = vec![0.0; b * c];
        let mut per = per(o.red, b);
        let l = cross_entropy_probs(
            Poly,
            &x,
            c,
            &tp,
            &opts,
            CrossEntropyOutputs::new()
                .with_grad(&mut g)
                .with_losses(&mut per),
        )
        .unwrap();
        let (lw, _) = r::cross_entropy_probs(&x, c, &tp, &o);
        assert!(
            (l - lw).abs() <= 1e-13 * (1.0 + lw.abs()),
            "{o:?}: {l} vs {lw}"
        );
        errs.push(check(&format!("{o:?}"), &g, &want));
        // The gradient with respect to the targets is not part of the API; the loss is linear
        // in them, so nothing more to check there.
    }
    worst("cross_entropy_probs", &errs);
}

#[test]
fn nll_loss_gradient() {
    let (b, c) = (5, 4);
    let mut rng = Rng(3);
    let x = rng.vec(b * c, -5.0, 0.0);
    let w = rng.vec(c, 0.5, 2.0);
    let t = vec![0i64, 3, -100, 2, 3];
    let mut errs = vec![];
    for red in REDS {
        for weighted in [false, true] {
            let wr = weighted.then_some(&w[..]);
            let want = r::fd(|x| r::nll(x, c, &t, wr, -100, red).0, &x, H);
            let mut opts = NllOptions::new().with_reduction(red.lib());
            if weighted {
                opts = opts.with_weight(&w);
            }
            let mut g = vec![0.0; b * c];
            let mut per = per(red, b);
            let out = Outputs::new().with_grad(&mut g).with_losses(&mut per);
            nll_loss(Poly, &x, c, &t, &opts, out).unwrap();
            errs.push(check("nll", &g, &want));
        }
    }
    worst("nll_loss", &errs);
}

#[test]
fn bce_with_logits_gradient() {
    let (b, c) = (3, 4);
    let mut rng = Rng(4);
    let x = rng.vec(b * c, -6.0, 6.0);
    let y = rng.vec(b * c, 0.0, 1.0);
    let w = rng.vec(b * c, 0.1, 2.0);
    let pw = rng.vec(c, 0.5, 3.0);
    let mut errs = vec![];
    for red in REDS {
        for (wi, pwi) in [(false, false), (true, false), (false, true), (true, true)] {
            let (wr, pr) = (wi.then_some(&w[..]), pwi.then_some(&pw[..]));
            let want = r::fd(|x| r::bce(x, &y, c, wr, pr, red).0, &x, H);
            let mut opts = BceOptions::new().with_reduction(red.lib());
            if wi {
                opts = opts.with_weight(&w);
            }
            if pwi {
                opts = opts.with_pos_weight(&pw);
            }
            let mut g = vec![0.0; b * c];
            let mut per = per(red, b * c);
            let l = binary_cross_entropy_with_logits(
                Poly,
                &x,
                &y,
                c,
                &opts,
                Outputs::new().with_grad(&mut g).with_losses(&mut per),
            )
            .unwrap();
            let lw = r::bce(&x, &y, c, wr, pr, red).0;
            assert!((l - lw).abs() <= 1e-14 * (1.0 + lw.abs()));
            errs.push(check("bce", &g, &want));
        }
    }
    worst("bce_with_logits", &errs);
}

#[test]
fn sigmoid_focal_gradient() {
    let mut rng = Rng(5);
    let x = rng.vec(12, -5.0, 5.0);
    let mut y = rng.vec(12, 0.0, 1.0);
    y[0] = 1.0;
    y[1] = 0.0;
    let mut errs = vec![];
    for red in REDS {
        for alpha in [0.25, -1.0] {
            for gamma in [0.0, 0.5, 1.0, 2.0, 2.5] {
                let want = r::fd(|x| r::sigmoid_focal(x, &y, alpha, gamma, red).0, &x, H);
                let mut g = vec![0.0; 12];
                let mut per = per(red, 12);
                let opts = SigmoidFocalOptions::new()
                    .with_alpha(alpha)
                    .with_gamma(gamma)
                    .with_reduction(red.lib());
                let l = sigmoid_focal_loss(
                    Poly,
                    &x,
                    &y,
                    &opts,
                    Outputs::new().with_grad(&mut g).with_losses(&mut per),
                )
                .unwrap();
                let lw = r::sigmoid_focal(&x, &y, alpha, gamma, red).0;
                assert!((l - lw).abs() <= 1e-13 * (1.0 + lw.abs()), "{l} {lw}");
                errs.push(check(&format!("focal a={alpha} g={gamma}"), &g, &want));
            }
        }
    }
    worst("sigmoid_focal_loss", &errs);
}

#[test]
fn kl_div_gradient() {
    let (b, c) = (3, 5);
    let mut rng = Rng(6);
    let x: Vec<f64> = (0..b)
        .flat_map(|_| r::log_softmax(&rng.vec(c, -2.0, 2.0)))
        .collect();
    let tp: Vec<f64> = (0..b)
        .flat_map(|_| r::softmax(&rng.vec(c, -2.0, 2.0)))
        .collect();
    let tl: Vec<f64> = tp.iter().map(|v| v.ln()).collect();
    let mut errs = vec![];
    for red in [Red::None, Red::Sum, Red::Mean, Red::BatchMean] {
        for log_target in [false, true] {
            let t = if log_target { &tl } else { &tp };
            let want = r::fd(|x| r::kl(x, t, log_target, b, red).0, &x, H);
            let mut g = vec![0.0; b * c];
            let mut per = per(red, b * c);
            let opts = KlDivOptions::new()
                .with_reduction(red.lib())
                .with_log_target(log_target);
            let l = kl_div(
                Poly,
                &x,
                t,
                b,
                &opts,
                Outputs::new().with_grad(&mut g).with_losses(&mut per),
            )
            .unwrap();
            let lw = r::kl(&x, t, log_target, b, red).0;
            assert!((l - lw).abs() <= 1e-14 * (1.0 + lw.abs()));
            errs.push(check("kl", &g, &want));
        }
    }
    worst("kl_div", &errs);
}

#[test]
fn mse_gradient() {
    let mut rng = Rng(8);
    let x = rng.vec(9, -3.0, 3.0);
    let y = rng.vec(9, -3.0, 3.0);
    let mut errs = vec![];
    for red in REDS {
        let want = r::fd(|x| r::mse(x, &y, red).0, &x, H);
        let mut g = vec![0.0; 9];
        let mut per = per(red, 9);
        let opts = MseOptions::new().with_reduction(red.lib());
        let out = Outputs::new().with_grad(&mut g).with_losses(&mut per);
        mse_loss(Poly, &x, &y, &opts, out).unwrap();
        errs.push(check("mse", &g, &want));
    }
    worst("mse_loss", &errs);
}

#[test]
fn softmax_focal_gradient() {
    let (b, c) = (4, 5);
    let mut rng = Rng(9);
    let x = rng.vec(b * c, -3.0, 3.0);
    let a = rng.vec(c, 0.2, 1.0);
    let t = vec![0i64, 4, -100, 2];
    let mut errs = vec![];
    for red in REDS {
        for gamma in [0.0, 0.7, 1.0, 2.0, 3.5] {
            for alpha in [false, true] {
                let ar = alpha.then_some(&a[..]);
                let want = r::fd(
                    |x| r::softmax_focal(x, c, &t, gamma, ar, -100, red).0,
                    &x,
                    H,
                );
                let mut opts = SoftmaxFocalOptions::new()
                    .with_gamma(gamma)
                    .with_reduction(red.lib());
                if alpha {
                    opts = opts.with_alpha(&a);
                }
                let mut g = vec![0.0; b * c];
                let mut per = per(red, b);
                let out = Outputs::new().with_grad(&mut g).with_losses(&mut per);
                let l = softmax_focal_loss(Poly, &x, c, &t, &opts, out).unwrap();
                let lw = r::softmax_focal(&x, c, &t, gamma, ar, -100, red).0;
                assert!((l - lw).abs() <= 1e-13 * (1.0 + lw.abs()));
                errs.push(check("softmax_focal", &g, &want));
            }
        }
    }
    worst("softmax_focal_loss", &errs);
}

#[test]
fn linear_cross_entropy_gradients() {
    let (t_rows, k, v) = (5, 4, 9);
    let mut rng = Rng(10);
    let h = rng.vec(t_rows * k, -1.5, 1.5);
    let w = rng.vec(v * k, -1.5, 1.5);
    let t = vec![0i64, 8, 1, 3, 5];
    let mut errs = vec![];
    for o in ce_matrix(v).into_iter().step_by(3) {
        let wt = o.weight.clone().unwrap_or_default();
        let opts = ce_opts(&o, &wt);
        let logits = |h: &[f64], w: &[f64]| -> Vec<f64> {
            (0..t_rows)
                .flat_map(|i| {
                    (0..v).map(move |j| r::dot(&h[i * k..(i + 1) * k], &w[j * k..(j + 1) * k]))
                })
                .collect()
        };
        let want_h = r::fd(|hh| r::cross_entropy(&logits(hh, &w), v, &t, &o).0, &h, H);
        let want_w = r::fd(|ww| r::cross_entropy(&logits(&h, ww), v, &t, &o).0, &w, H);
        for block in [1, 2, 4, 9] {
            let mut scratch = vec![0.0; linear_cross_entropy_scratch_len(t_rows, block)];
            let (mut gh, mut gw) = (vec![0.0; h.len()], vec![0.0; w.len()]);
            let mut per = per(o.red, t_rows);
            let l = linear_cross_entropy(
                Poly,
                &h,
                &w,
                k,
                &t,
                &opts,
                LinearCrossEntropyOutputs::new(&mut scratch)
                    .with_losses(&mut per)
                    .with_grad_h(&mut gh)
                    .with_grad_w(&mut gw),
            )
            .unwrap();
            let lw = r::cross_entropy(&logits(&h, &w), v, &t, &o).0;
            assert!(
                (l - lw).abs() <= 1e-13 * (1.0 + lw.abs()),
                "{o:?} block {block}: {l} {lw}"
            );
            errs.push(check(&format!("dh {o:?} block {block}"), &gh, &want_h));
            errs.push(check(&format!("dW {o:?} block {block}"), &gw, &want_w));
        }
    }
    worst("linear_cross_entropy", &errs);
}

#[test]
fn chunked_cross_entropy_gradient() {
    let c = 11;
    let mut rng = Rng(11);
    let x = rng.vec(c, -4.0, 4.0);
    let mut errs = vec![];
    for o in ce_matrix(c)
        .into_iter()
        .filter(|o| o.red == Red::None && o.ignore < 0)
    {
        let wt = o.weight.clone().unwrap_or_default();
        let opts = ce_opts(&o, &wt);
        let want = r::fd(|x| r::cross_entropy(x, c, &[7], &o).0, &x, H);
        let mut st = ChunkedCrossEntropy::new(Poly, c, 7, &opts).unwrap();
        for part in x.chunks(4) {
            st.push(part).unwrap();
        }
        let lw = r::cross_entropy(&x, c, &[7], &o).0;
        assert!((st.loss().unwrap() - lw).abs() <= 1e-13 * (1.0 + lw.abs()));
        let mut g = vec![0.0; c];
        // Presented again in another grouping.
        let (a, b) = x.split_at(5);
        let (ga, gb) = g.split_at_mut(5);
        st.gradient(5, b, 1.0, gb).unwrap();
        st.gradient(0, a, 1.0, ga).unwrap();
        errs.push(check(&format!("{o:?}"), &g, &want));
    }
    worst("ChunkedCrossEntropy", &errs);
}

/// Splits a flat parameter vector back into (q, k, negatives, τ).
fn info_nce_case(
    n: usize,
    d: usize,
    neg: &r::Neg,
    tau: f64,
    normalize: bool,
    red: Red,
    symmetric: bool,
    seed: u64,
) -> Vec<f64> {
    let mut rng = Rng(seed);
    let q = rng.vec(n * d, -1.0, 1.0);
    let k = rng.vec(n * d, -1.0, 1.0);
    let (neg_keys, lib_neg) = match neg {
        r::Neg::InBatch => (vec![], Negatives::InBatch),
        r::Neg::Unpaired(v, m) => (v.clone(), Negatives::Unpaired { keys: v, m: *m }),
        r::Neg::Paired(v, m) => (v.clone(), Negatives::Paired { keys: v, m: *m }),
    };
    let m = match neg {
        r::Neg::InBatch => 0,
        r::Neg::Unpaired(_, m) | r::Neg::Paired(_, m) => *m,
    };
    let opts = InfoNceOptions::new()
        .with_temperature(tau)
        .with_normalize(normalize)
        .with_reduction(red.lib())
        .with_symmetric(symmetric);
    let mut scratch = vec![0.0; info_nce_scratch_len(n, m, &opts)];
    let (mut gq, mut gk, mut gn, mut gt) = (
        vec![0.0; q.len()],
        vec![0.0; k.len()],
        vec![0.0; neg_keys.len()],
        0.0,
    );
    let mut per = per(red, n);
    let mut out = InfoNceOutputs::new(&mut scratch)
        .with_losses(&mut per)
        .with_grad_query(&mut gq)
        .with_grad_positive(&mut gk)
        .with_grad_temperature(&mut gt);
    if m > 0 {
        out = out.with_grad_negatives(&mut gn);
    }
    let l = info_nce(Poly, &q, &k, d, lib_neg, &opts, out).unwrap();
    let reference = |q: &[f64], k: &[f64], nk: &[f64], tau: f64| {
        let neg = match neg {
            r::Neg::InBatch => r::Neg::InBatch,
            r::Neg::Unpaired(_, m) => r::Neg::Unpaired(nk.to_vec(), *m),
            r::Neg::Paired(_, m) => r::Neg::Paired(nk.to_vec(), *m),
        };
        r::info_nce(q, k, d, &neg, tau, normalize, red, symmetric).0
    };
    let lw = reference(&q, &k, &neg_keys, tau);
    assert!((l - lw).abs() <= 1e-13 * (1.0 + lw.abs()), "{l} vs {lw}");
    let mut errs = vec![];
    errs.push(check(
        "dq",
        &gq,
        &r::fd(|q| reference(q, &k, &neg_keys, tau), &q, H),
    ));
    errs.push(check(
        "dk",
        &gk,
        &r::fd(|k| reference(&q, k, &neg_keys, tau), &k, H),
    ));
    if m > 0 {
        errs.push(check(
            "dneg",
            &gn,
            &r::fd(|nk| reference(&q, &k, nk, tau), &neg_keys, H),
        ));
    }
    errs.push(check(
        "dtau",
        &[gt],
        &r::fd(|t| reference(&q, &k, &neg_keys, t[0]), &[tau], H),
    ));
    errs
}

#[test]
fn info_nce_gradients() {
    let (n, d, m) = (4, 3, 3);
    let mut rng = Rng(12);
    let unpaired = r::Neg::Unpaired(rng.vec(m * d, -1.0, 1.0), m);
    let paired = r::Neg::Paired(rng.vec(n * m * d, -1.0, 1.0), m);
    let mut errs = vec![];
    let mut seed = 100;
    for neg in [r::Neg::InBatch, unpaired, paired] {
        for normalize in [true, false] {
            for red in REDS {
                for tau in [0.1, 0.7] {
                    let symmetric_options: &[bool] = if matches!(neg, r::Neg::InBatch) {
                        &[false, true]
                    } else {
                        &[false]
                    };
                    for &symmetric in symmetric_options {
                        seed += 1;
                        errs.extend(info_nce_case(
                            n, d, &neg, tau, normalize, red, symmetric, seed,
                        ));
                    }
                }
            }
        }
    }
    worst("info_nce", &errs);
}

#[test]
fn info_nce_single_gradients() {
    let (d, m) = (5, 4);
    let mut rng = Rng(13);
    let (q, kp, kn) = (
        rng.vec(d, -1.0, 1.0),
        rng.vec(d, -1.0, 1.0),
        rng.vec(m * d, -1.0, 1.0),
    );
    let tau = 0.3;
    let f = |q: &[f64], kp: &[f64], kn: &[f64], tau: f64| {
        let mut z = vec![r::dot(q, kp) / tau];
        z.extend(kn.chunks(d).map(|k| r::dot(q, k) / tau));
        -r::log_softmax(&z)[0]
    };
    let (mut gq, mut gp, mut gn, mut gt) = (vec![0.0; d], vec![0.0; d], vec![0.0; m * d], 0.0);
    let mut scratch = vec![0.0; 2 * (m + 1)];
    let l = info_nce_single(
        Poly,
        &q,
        &kp,
        &kn,
        &InfoNceSingleOptions::new().with_temperature(tau),
        InfoNceOutputs::new(&mut scratch)
            .with_grad_query(&mut gq)
            .with_grad_positive(&mut gp)
            .with_grad_negatives(&mut gn)
            .with_grad_temperature(&mut gt),
    )
    .unwrap();
    assert!((l - f(&q, &kp, &kn, tau)).abs() < 1e-14);
    let errs = vec![
        check("dq", &gq, &r::fd(|q| f(q, &kp, &kn, tau), &q, H)),
        check("dk+", &gp, &r::fd(|kp| f(&q, kp, &kn, tau), &kp, H)),
        check("dk-", &gn, &r::fd(|kn| f(&q, &kp, kn, tau), &kn, H)),
        check("dtau", &[gt], &r::fd(|t| f(&q, &kp, &kn, t[0]), &[tau], H)),
    ];
    worst("info_nce_single", &errs);
}

#[test]
fn nt_xent_gradients() {
    let (n, d) = (3, 4);
    let mut rng = Rng(14);
    let z = rng.vec(2 * n * d, -1.0, 1.0);
    let mut errs = vec![];
    for normalize in [true, false] {
        for tau in [0.2, 1.0] {
            let mut g = vec![0.0; z.len()];
            let mut gt = 0.0;
            let mut scratch = vec![0.0; nt_xent_scratch_len(n)];
            let opts = NtXentOptions::new()
                .with_temperature(tau)
                .with_normalize(normalize);
            let l = nt_xent(
                Poly,
                &z,
                d,
                &opts,
                NtXentOutputs::new(&mut scratch)
                    .with_grad(&mut g)
                    .with_grad_temperature(&mut gt),
            )
            .unwrap();
            let lw = r::nt_xent(&z, d, tau, normalize);
            assert!((l - lw).abs() <= 1e-13 * (1.0 + lw.abs()));
            errs.push(check(
                "dz",
                &g,
                &r::fd(|z| r::nt_xent(z, d, tau, normalize), &z, H),
            ));
            errs.push(check(
                "dtau",
                &[gt],
                &r::fd(|t| r::nt_xent(&z, d, t[0], normalize), &[tau], H),
            ));
        }
    }
    worst("nt_xent", &errs);
}

#[test]
fn siglip_gradients() {
    let (n, d) = (4, 3);
    let mut rng = Rng(15);
    let x = rng.vec(n * d, -1.0, 1.0);
    let y = rng.vec(n * d, -1.0, 1.0);
    let mut errs = vec![];
    for normalize in [true, false] {
        for (t, b) in [(10f64.ln(), -10.0), (0.5, -1.0), (0.0, 0.0)] {
            let opts = SiglipOptions::new()
                .with_logit_scale(t)
                .with_logit_bias(b)
                .with_normalize(normalize);
            let (mut gx, mut gy, mut gt, mut gb) =
                (vec![0.0; x.len()], vec![0.0; y.len()], 0.0, 0.0);
            let l = siglip_loss(
                Poly,
                &x,
                &y,
                d,
                &opts,
                SiglipOutputs::new()
                    .with_grad_x(&mut gx)
                    .with_grad_y(&mut gy)
                    .with_grad_logit_scale(&mut gt)
                    .with_grad_logit_bias(&mut gb),
            )
            .unwrap();
            let lw = r::siglip(&x, &y, d, t, b, normalize);
            assert!((l - lw).abs() <= 1e-13 * (1.0 + lw.abs()));
            errs.push(check(
                "dx",
                &gx,
                &r::fd(|x| r::siglip(x, &y, d, t, b, normalize), &x, H),
            ));
            errs.push(check(
                "dy",
                &gy,
                &r::fd(|y| r::siglip(&x, y, d, t, b, normalize), &y, H),
            ));
            errs.push(check(
                "dt",
                &[gt],
                &r::fd(|v| r::siglip(&x, &y, d, v[0], b, normalize), &[t], H),
            ));
            errs.push(check(
                "db",
                &[gb],
                &r::fd(|v| r::siglip(&x, &y, d, t, v[0], normalize), &[b], H),
            ));
        }
    }
    worst("siglip_loss", &errs);
}
