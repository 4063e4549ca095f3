//! The on-target cases of loss-core: each a `fn(&mut Ctx)` listed in the case table of
//! `lib.rs` (`single:`), fed with the same generators and digested like softmax-core's cases.
//! Every loss in f32 and f64 with the `Poly` backend, over its options, every output (losses,
//! gradients, row statistics) and every error fed into the digest. Buffers on the stack: the
//! largest case holds 5 tensors of 4×37 values (under 6 KiB in f64), each kernel called in a
//! frame of its own.

use core::fmt::Write as _;

use loss_core::softmax_core::backend::{Backend, Poly};
use loss_core::{
    binary_cross_entropy_with_logits, cross_entropy, cross_entropy_probs, info_nce,
    info_nce_scratch_len, info_nce_single, kl_div, linear_cross_entropy, mse_loss,
    mutual_information_lower_bound, nll_loss, nt_xent, siglip_loss, sigmoid_focal_loss,
    softmax_focal_loss, BceOptions, ChunkedCrossEntropy, CrossEntropyOptions, CrossEntropyOutputs,
    Error, InfoNceOptions, InfoNceOutputs, InfoNceSingleOptions, KlDivOptions,
    LinearCrossEntropyOutputs, MseOptions, Negatives, NllOptions, NtXentOptions, NtXentOutputs,
    Outputs, Reduction, SiglipOptions, SiglipOutputs, SigmoidFocalOptions, SoftmaxFocalOptions,
};

use crate::family::own_frame;
use crate::{fill, Ctx, Dist, Elem};

/// Rows and classes of the classification cases (37: two 16-lane chunks and a tail).
const B: usize = 4;
const C: usize = 37;
const BC: usize = B * C;

const REDUCTIONS: [Reduction; 3] = [Reduction::Mean, Reduction::Sum, Reduction::None];

/// A result: 0 and the value, or 1 and the error's text.
fn feed_res<F: Elem>(ctx: &mut Ctx, r: Result<F, Error>) {
    match r {
        Ok(v) => {
            ctx.feed(&0u8);
            ctx.feed(&v);
        }
        Err(e) => {
            ctx.feed(&1u8);
            // Infallible: the digest's `write_str` never fails.
            let _ = write!(ctx.digest, "{e}");
        }
    }
}

fn draw<F: Elem>(ctx: &mut Ctx, lo: f64, hi: f64, out: &mut [F]) {
    for v in out.iter_mut() {
        *v = F::from_f64(ctx.rng.range(lo, hi));
    }
}

fn targets(ctx: &mut Ctx, classes: usize, out: &mut [i64]) {
    for t in out.iter_mut() {
        *t = ctx.rng.below(classes) as i64;
    }
}

/// `cross_entropy` and `cross_entropy_probs` over the option matrix, with the row statistics,
/// an ignored row of `-inf`, and the errors.
pub(crate) fn cross_entropy_case<F: Elem>(ctx: &mut Ctx)
where
    Poly: Backend<F>,
{
    let mut x = [F::ZERO; BC];
    let mut tp = [F::ZERO; BC];
    let mut grad = [F::ZERO; BC];
    let mut w = [F::ZERO; C];
    let mut losses = [F::ZERO; B];
    let (mut lse, mut ent, mut arg) = ([F::ZERO; B], [F::ZERO; B], [0usize; B]);
    let mut t = [0i64; B];
    for (i, dist) in [Dist::Moderate, Dist::Wide, Dist::Ties]
        .into_iter()
        .enumerate()
    {
        fill(&mut ctx.rng, dist, &mut x);
        draw(ctx, 0.25, 2.0, &mut w);
        draw(ctx, 0.0, 1.0, &mut tp);
        targets(ctx, C, &mut t);
        t[1] = -100;
        if i == 0 {
            x[C..2 * C].fill(F::NEG_INFINITY);
        }
        for red in REDUCTIONS {
            for (weighted, eps, cap, z) in [
                (false, 0.0, None, 0.0),
                (true, 0.1, None, 0.0),
                (false, 0.2, Some(30.0), 1e-4),
                (true, 0.0, Some(5.0), 1e-2),
            ] {
                let mut o = CrossEntropyOptions::new()
                    .with_reduction(red)
                    .with_label_smoothing(F::from_f64(eps))
                    .with_z_loss(F::from_f64(z));
                if weighted {
                    o = o.with_weight(&w);
                }
                if let Some(c) = cap {
                    o = o.with_softcap(F::from_f64(c));
                }
                let n = if red == Reduction::None { B } else { 1 };
                let r = own_frame(|| {
                    cross_entropy(
                        Poly,
                        &x,
                        C,
                        &t,
                        &o,
                        CrossEntropyOutputs::new()
                            .with_grad(&mut grad)
                            .with_losses(&mut losses[..n])
                            .with_lse(&mut lse)
                            .with_entropy(&mut ent)
                            .with_argmax(&mut arg),
                    )
                });
                feed_res(ctx, r);
                ctx.feed(&grad);
                ctx.feed(&losses[..n]);
                ctx.feed(&lse);
                ctx.feed(&ent);
                ctx.feed(&arg);
                if i != 0 {
                    // The per-sample buffer is required with `None` (not fed: the digest keeps
                    // the value, gradient and lse it always had; the next call rewrites it).
                    let r = own_frame(|| {
                        cross_entropy_probs(
                            Poly,
                            &x,
                            C,
                            &tp,
                            &o,
                            CrossEntropyOutputs::new()
                                .with_losses(&mut losses[..n])
                                .with_grad(&mut grad)
                                .with_lse(&mut lse),
                        )
                    });
                    feed_res(ctx, r);
                    ctx.feed(&grad);
                    ctx.feed(&lse);
                }
            }
        }
    }
    // Errors: out of range, nothing to average, bad parameters, lengths.
    let o = CrossEntropyOptions::new();
    let call = |t: &[i64], o: &CrossEntropyOptions<'_, F>, ctx: &mut Ctx| {
        let r = own_frame(|| cross_entropy(Poly, &x, C, t, o, CrossEntropyOutputs::new()));
        feed_res(ctx, r);
    };
    call(&[0, 37, 1, 2], &o, ctx);
    call(&[-100; B], &o, ctx);
    call(&[0, 1, 2], &o, ctx);
    call(&t, &o.with_label_smoothing(F::from_f64(1.5)), ctx);
    call(&t, &o.with_softcap(F::ZERO), ctx);
    call(&t, &o.with_z_loss(F::from_f64(-1.0)), ctx);
}

/// `nll_loss` over weights × ignore_index × reduction.
pub(crate) fn nll_case<F: Elem>(ctx: &mut Ctx)
where
    Poly: Backend<F>,
{
    let mut x = [F::ZERO; BC];
    let mut grad = [F::ZERO; BC];
    let mut w = [F::ZERO; C];
    let mut losses = [F::ZERO; B];
    let mut t = [0i64; B];
    draw(ctx, -9.0, 0.0, &mut x);
    draw(ctx, 0.0, 2.0, &mut w);
    targets(ctx, C, &mut t);
    for red in REDUCTIONS {
        for weighted in [false, true] {
            for ignore in [-100, t[0]] {
                let mut o = NllOptions::new()
                    .with_reduction(red)
                    .with_ignore_index(ignore);
                if weighted {
                    o = o.with_weight(&w);
                }
                let n = if red == Reduction::None { B } else { 1 };
                let r = own_frame(|| {
                    nll_loss(
                        Poly,
                        &x,
                        C,
                        &t,
                        &o,
                        Outputs::new()
                            .with_grad(&mut grad)
                            .with_losses(&mut losses[..n]),
                    )
                });
                feed_res(ctx, r);
                ctx.feed(&grad);
                ctx.feed(&losses[..n]);
            }
        }
    }
    let r = own_frame(|| {
        nll_loss(
            Poly,
            &x,
            C,
            &[0, 1, 2, 99],
            &NllOptions::new(),
            Outputs::new(),
        )
    });
    feed_res(ctx, r);
}

/// The element-wise losses: BCE with logits, KL divergence, MSE, torchvision's sigmoid focal.
pub(crate) fn elementwise_case<F: Elem>(ctx: &mut Ctx)
where
    Poly: Backend<F>,
{
    let mut x = [F::ZERO; BC];
    let mut y = [F::ZERO; BC];
    let mut w = [F::ZERO; BC];
    let mut pw = [F::ZERO; C];
    let mut grad = [F::ZERO; BC];
    let mut losses = [F::ZERO; BC];
    fill(&mut ctx.rng, Dist::Wide, &mut x);
    draw(ctx, 0.0, 1.0, &mut y);
    draw(ctx, 0.0, 2.0, &mut w);
    draw(ctx, 0.5, 3.0, &mut pw);
    for red in REDUCTIONS {
        let n = if red == Reduction::None { BC } else { 1 };
        for (weighted, pos) in [(false, false), (true, false), (true, true)] {
            let mut o = BceOptions::new().with_reduction(red);
            if weighted {
                o = o.with_weight(&w);
            }
            if pos {
                o = o.with_pos_weight(&pw);
            }
            let r = own_frame(|| {
                binary_cross_entropy_with_logits(
                    Poly,
                    &x,
                    &y,
                    C,
                    &o,
                    Outputs::new()
                        .with_grad(&mut grad)
                        .with_losses(&mut losses[..n]),
                )
            });
            feed_res(ctx, r);
            ctx.feed(&grad);
            ctx.feed(&losses[..n]);
        }
        for (alpha, gamma) in [(0.25, 2.0), (-1.0, 0.0), (0.5, 1.5)] {
            let o = SigmoidFocalOptions::new()
                .with_alpha(F::from_f64(alpha))
                .with_gamma(F::from_f64(gamma))
                .with_reduction(red);
            let r = own_frame(|| {
                sigmoid_focal_loss(
                    Poly,
                    &x,
                    &y,
                    &o,
                    Outputs::new()
                        .with_grad(&mut grad)
                        .with_losses(&mut losses[..n]),
                )
            });
            feed_res(ctx, r);
            ctx.feed(&grad);
            ctx.feed(&losses[..n]);
        }
        let r = own_frame(|| {
            mse_loss(
                Poly,
                &x,
                &y,
                &MseOptions::new().with_reduction(red),
                Outputs::new()
                    .with_grad(&mut grad)
                    .with_losses(&mut losses[..n]),
            )
        });
        feed_res(ctx, r);
        ctx.feed(&grad);
        ctx.feed(&losses[..n]);
    }
    // kl_div: input log-probabilities, target probabilities (some 0) or log-probabilities.
    draw(ctx, -6.0, 0.0, &mut x);
    draw(ctx, 0.0, 1.0, &mut y);
    y[3] = F::ZERO;
    for red in [
        Reduction::Mean,
        Reduction::Sum,
        Reduction::None,
        Reduction::BatchMean,
    ] {
        let n = if red == Reduction::None { BC } else { 1 };
        for log_target in [false, true] {
            let o = KlDivOptions::new()
                .with_reduction(red)
                .with_log_target(log_target);
            let r = own_frame(|| {
                kl_div(
                    Poly,
                    &x,
                    &y,
                    B,
                    &o,
                    Outputs::new()
                        .with_grad(&mut grad)
                        .with_losses(&mut losses[..n]),
                )
            });
            feed_res(ctx, r);
            ctx.feed(&grad);
            ctx.feed(&losses[..n]);
        }
    }
    let r = own_frame(|| mse_loss(Poly, &x, &y[..3], &MseOptions::new(), Outputs::new()));
    feed_res(ctx, r);
}

/// The multi-class softmax focal loss over γ × α × reduction.
pub(crate) fn softmax_focal_case<F: Elem>(ctx: &mut Ctx)
where
    Poly: Backend<F>,
{
    let mut x = [F::ZERO; BC];
    let mut grad = [F::ZERO; BC];
    let mut a = [F::ZERO; C];
    let mut losses = [F::ZERO; B];
    let mut t = [0i64; B];
    fill(&mut ctx.rng, Dist::Moderate, &mut x);
    draw(ctx, 0.1, 1.0, &mut a);
    targets(ctx, C, &mut t);
    t[2] = -100;
    for red in REDUCTIONS {
        let n = if red == Reduction::None { B } else { 1 };
        for (gamma, alpha) in [(0.0, false), (2.0, false), (0.5, true)] {
            let mut o = SoftmaxFocalOptions::new()
                .with_gamma(F::from_f64(gamma))
                .with_reduction(red);
            if alpha {
                o = o.with_alpha(&a);
            }
            let r = own_frame(|| {
                softmax_focal_loss(
                    Poly,
                    &x,
                    C,
                    &t,
                    &o,
                    Outputs::new()
                        .with_grad(&mut grad)
                        .with_losses(&mut losses[..n]),
                )
            });
            feed_res(ctx, r);
            ctx.feed(&grad);
            ctx.feed(&losses[..n]);
        }
    }
}

/// The contrastive losses: batched InfoNCE (in-batch, unpaired, paired, symmetric), the
/// single-query form, NT-Xent, SigLIP and the mutual-information bound.
pub(crate) fn contrastive_case<F: Elem>(ctx: &mut Ctx)
where
    Poly: Backend<F>,
{
    const N: usize = 4;
    const D: usize = 9;
    const M: usize = 3;
    let mut q = [F::ZERO; N * D];
    let mut k = [F::ZERO; N * D];
    let mut neg = [F::ZERO; N * M * D];
    let (mut gq, mut gk, mut gn) = ([F::ZERO; N * D], [F::ZERO; N * D], [F::ZERO; N * M * D]);
    let mut losses = [F::ZERO; N];
    let mut scratch = [F::ZERO; 32];
    draw(ctx, -2.0, 2.0, &mut q);
    draw(ctx, -2.0, 2.0, &mut k);
    draw(ctx, -2.0, 2.0, &mut neg);
    for red in REDUCTIONS {
        let n = if red == Reduction::None { N } else { 1 };
        for (mode, normalize, symmetric, tau) in [
            (0, true, false, 0.1),
            (0, false, true, 0.7),
            (1, true, false, 0.2),
            (2, false, false, 1.5),
        ] {
            let negatives = match mode {
                0 => Negatives::InBatch,
                1 => Negatives::Unpaired {
                    keys: &neg[..M * D],
                    m: M,
                },
                _ => Negatives::Paired { keys: &neg, m: M },
            };
            let gn_len = match mode {
                0 => 0,
                1 => M * D,
                _ => N * M * D,
            };
            let m = if mode == 0 { 0 } else { M };
            let o = InfoNceOptions::new()
                .with_temperature(F::from_f64(tau))
                .with_normalize(normalize)
                .with_reduction(red)
                .with_symmetric(symmetric);
            let len = info_nce_scratch_len(N, m, &o);
            let mut gt = F::ZERO;
            let r = own_frame(|| {
                let mut out = InfoNceOutputs::new(&mut scratch[..len])
                    .with_losses(&mut losses[..n])
                    .with_grad_query(&mut gq)
                    .with_grad_positive(&mut gk)
                    .with_grad_temperature(&mut gt);
                if mode != 0 {
                    out = out.with_grad_negatives(&mut gn[..gn_len]);
                }
                info_nce(Poly, &q, &k, D, negatives, &o, out)
            });
            feed_res(ctx, r);
            ctx.feed(&losses[..n]);
            ctx.feed(&gq);
            ctx.feed(&gk);
            ctx.feed(&gn[..gn_len]);
            ctx.feed(&gt);
        }
    }
    // The single-query form (eq. 4.4.11 with the corrected gradients).
    let mut gt = F::ZERO;
    let r = own_frame(|| {
        info_nce_single(
            Poly,
            &q[..D],
            &k[..D],
            &neg[..M * D],
            &InfoNceSingleOptions::new().with_temperature(F::from_f64(0.3)),
            InfoNceOutputs::new(&mut scratch[..2 * (M + 1)])
                .with_grad_query(&mut gq[..D])
                .with_grad_positive(&mut gk[..D])
                .with_grad_negatives(&mut gn[..M * D])
                .with_grad_temperature(&mut gt),
        )
    });
    feed_res(ctx, r);
    ctx.feed(&gq[..D]);
    ctx.feed(&gk[..D]);
    ctx.feed(&gn[..M * D]);
    ctx.feed(&gt);
    if let Ok(l) = r {
        feed_res(
            ctx,
            mutual_information_lower_bound(Poly, l, M + 1).map(|b| b - l),
        );
    }
    // NT-Xent over 2N views (the query rows then the key rows, as one buffer).
    let mut z = [F::ZERO; 2 * N * D];
    z[..N * D].copy_from_slice(&q);
    z[N * D..].copy_from_slice(&k);
    let mut gz = [F::ZERO; 2 * N * D];
    for (normalize, tau) in [(true, 0.1), (false, 0.9)] {
        let mut gt = F::ZERO;
        let o = NtXentOptions::new()
            .with_temperature(F::from_f64(tau))
            .with_normalize(normalize);
        let r = own_frame(|| {
            nt_xent(
                Poly,
                &z,
                D,
                &o,
                NtXentOutputs::new(&mut scratch[..6 * N])
                    .with_grad(&mut gz)
                    .with_grad_temperature(&mut gt),
            )
        });
        feed_res(ctx, r);
        ctx.feed(&gz);
        ctx.feed(&gt);
    }
    // SigLIP (default scale and bias, then others without normalisation).
    for (normalize, t, b) in [(true, core::f64::consts::LN_10, -10.0), (false, 0.2, -1.0)] {
        let (mut gt, mut gb) = (F::ZERO, F::ZERO);
        let o = SiglipOptions::new()
            .with_logit_scale(F::from_f64(t))
            .with_logit_bias(F::from_f64(b))
            .with_normalize(normalize);
        let r = own_frame(|| {
            siglip_loss(
                Poly,
                &q,
                &k,
                D,
                &o,
                SiglipOutputs::new()
                    .with_grad_x(&mut gq)
                    .with_grad_y(&mut gk)
                    .with_grad_logit_scale(&mut gt)
                    .with_grad_logit_bias(&mut gb),
            )
        });
        feed_res(ctx, r);
        ctx.feed(&gq);
        ctx.feed(&gk);
        ctx.feed(&gt);
        ctx.feed(&gb);
    }
}

/// The chunked cross-entropy: one row of 300 classes pushed in uneven chunks, loss, lse and the
/// gradient regrouped differently.
pub(crate) fn chunked_case<F: Elem>(ctx: &mut Ctx)
where
    Poly: Backend<F>,
{
    const V: usize = 300;
    let mut row = [F::ZERO; V];
    let mut grad = [F::ZERO; V];
    let mut w = [F::ZERO; V];
    for dist in [Dist::Moderate, Dist::Wide] {
        fill(&mut ctx.rng, dist, &mut row);
        draw(ctx, 0.5, 1.5, &mut w);
        let target = ctx.rng.below(V) as i64;
        for (eps, cap, weighted) in [(0.0, None, false), (0.1, Some(20.0), true)] {
            let mut o = CrossEntropyOptions::new().with_label_smoothing(F::from_f64(eps));
            if let Some(c) = cap {
                o = o.with_softcap(F::from_f64(c));
            }
            if weighted {
                o = o.with_weight(&w);
            }
            let r = own_frame(|| {
                let mut st = ChunkedCrossEntropy::new(Poly, V, target, &o)?;
                for c in row.chunks(70) {
                    st.push(c)?;
                }
                let pushed = st.pushed();
                for (i, (c, g)) in row.chunks(45).zip(grad.chunks_mut(45)).enumerate() {
                    st.gradient(i * 45, c, F::ONE, g)?;
                }
                let l = st.loss()?;
                Ok((l, st.lse(), pushed))
            });
            match r {
                Ok((l, lse, pushed)) => {
                    ctx.feed(&0u8);
                    ctx.feed(&l);
                    ctx.feed(&lse);
                    ctx.feed(&pushed);
                }
                Err(e) => feed_res::<F>(ctx, Err(e)),
            }
            ctx.feed(&grad);
        }
    }
}

/// `linear_cross_entropy`: T = 3 rows of K = 8 against V = 24 vocabulary rows in blocks of 16 (one full, one partial).
pub(crate) fn linear_case<F: Elem>(ctx: &mut Ctx)
where
    Poly: Backend<F>,
{
    const T: usize = 3;
    const K: usize = 8;
    const V: usize = 24;
    let mut h = [F::ZERO; T * K];
    let mut w = [F::ZERO; V * K];
    let (mut gh, mut gw) = ([F::ZERO; T * K], [F::ZERO; V * K]);
    let mut lse = [F::ZERO; T];
    let mut losses = [F::ZERO; T];
    let mut scratch = [F::ZERO; 2 * T * 16];
    draw(ctx, -1.0, 1.0, &mut h);
    draw(ctx, -1.0, 1.0, &mut w);
    let mut t = [0i64; T];
    targets(ctx, V, &mut t);
    t[1] = -100;
    for red in REDUCTIONS {
        let n = if red == Reduction::None { T } else { 1 };
        for (eps, cap, z) in [(0.0, None, 0.0), (0.1, Some(2.0), 1e-3)] {
            let mut o = CrossEntropyOptions::new()
                .with_reduction(red)
                .with_label_smoothing(F::from_f64(eps))
                .with_z_loss(F::from_f64(z));
            if let Some(c) = cap {
                o = o.with_softcap(F::from_f64(c));
            }
            let r = own_frame(|| {
                linear_cross_entropy(
                    Poly,
                    &h,
                    &w,
                    K,
                    &t,
                    &o,
                    LinearCrossEntropyOutputs::new(&mut scratch)
                        .with_losses(&mut losses[..n])
                        .with_grad_h(&mut gh)
                        .with_grad_w(&mut gw)
                        .with_lse(&mut lse),
                )
            });
            feed_res(ctx, r);
            ctx.feed(&losses[..n]);
            ctx.feed(&gh);
            ctx.feed(&gw);
            ctx.feed(&lse);
        }
    }
}
