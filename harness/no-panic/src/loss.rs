//! The panic-freedom probe for loss-core: every public function, method and associated function,
//! called for f32 and f64 with arguments the optimiser cannot see through (see `main.rs`):
//! opaque values, slices of opaque lengths, opaque class indices, options and reductions.

use core::hint::black_box;

use loss_core::softmax_core::backend::{Backend, Poly};
use loss_core::softmax_core::Float;
use loss_core::{
    BceOptions, ChunkedCrossEntropy, CrossEntropyOptions, CrossEntropyOutputs, InfoNceOptions,
    InfoNceOutputs, InfoNceSingleOptions, KlDivOptions, LinearCrossEntropyOutputs, MseOptions,
    Negatives, NllOptions, NtXentOptions, NtXentOutputs, Outputs, Reduction, SiglipOptions,
    SiglipOutputs, SigmoidFocalOptions, SoftmaxFocalOptions,
};

fn used<T>(v: T) {
    black_box(v);
}

/// Values the optimiser cannot predict.
fn opaque<F: Float, const N: usize>(seed: f64) -> [F; N] {
    let mut v = [F::ZERO; N];
    let mut s = black_box(seed);
    for x in v.iter_mut() {
        s = s * 1.618_033_988_749_895 - 0.5;
        *x = F::from_f64(black_box(s));
    }
    black_box(v)
}

fn reduction() -> Reduction {
    black_box(Reduction::Mean)
}

#[inline(never)]
fn with_float<F: Float>()
where
    Poly: Backend<F>,
{
    let b = black_box(Poly);
    let (xs, ys, ws) = (
        opaque::<F, 64>(0.25),
        opaque::<F, 64>(0.75),
        opaque::<F, 64>(0.5),
    );
    let (mut gs, mut hs, mut ks, mut ls) =
        ([F::ZERO; 64], [F::ZERO; 64], [F::ZERO; 64], [F::ZERO; 64]);
    let mut ss = [F::ZERO; 96];
    let ts = black_box([1i64, 0, 3, -100, 2, 7, 1, 0]);
    let mut args = black_box([0usize; 8]);
    // Slices and sizes of lengths unknown to the optimiser.
    let x: &[F] = black_box(&xs[..]);
    let y: &[F] = black_box(&ys[..]);
    let w: &[F] = black_box(&ws[..]);
    let t: &[i64] = black_box(&ts[..]);
    let c: usize = black_box(8);
    let d: usize = black_box(4);
    let m: usize = black_box(3);
    let s: F = black_box(F::HALF);
    let flag: bool = black_box(true);

    used(Reduction::name(reduction()));
    used(reduction().name());

    // Cross-entropy, with every option and every output.
    let ce = black_box(
        CrossEntropyOptions::new()
            .with_weight(w)
            .with_ignore_index(black_box(-100))
            .with_label_smoothing(s)
            .with_reduction(reduction())
            .with_softcap(black_box(F::TWO))
            .with_z_loss(s),
    );
    used(ce.ignore_index());
    used(loss_core::cross_entropy(
        b,
        x,
        c,
        t,
        &ce,
        CrossEntropyOutputs::new()
            .with_grad(black_box(&mut gs[..]))
            .with_losses(black_box(&mut hs[..]))
            .with_lse(black_box(&mut ks[..]))
            .with_entropy(black_box(&mut ls[..]))
            .with_argmax(black_box(&mut args[..])),
    ));
    used(loss_core::cross_entropy_probs(
        b,
        x,
        c,
        y,
        &ce,
        CrossEntropyOutputs::new()
            .with_grad(black_box(&mut gs[..]))
            .with_lse(black_box(&mut ks[..])),
    ));

    // The chunked form.
    if let Ok(mut st) = ChunkedCrossEntropy::new(b, black_box(64), black_box(5), &ce) {
        used(st.push(x));
        used(st.pushed());
        used(st.lse());
        used(st.loss());
        used(st.gradient(black_box(8), y, s, black_box(&mut gs[..])));
    }

    // nll_loss.
    let nll = black_box(
        NllOptions::new()
            .with_weight(w)
            .with_ignore_index(black_box(2))
            .with_reduction(reduction()),
    );
    used(loss_core::nll_loss(
        b,
        x,
        c,
        t,
        &nll,
        Outputs::new().with_grad(black_box(&mut gs[..])),
    ));

    // Element-wise losses.
    let bce = black_box(
        BceOptions::new()
            .with_weight(w)
            .with_pos_weight(y)
            .with_reduction(reduction()),
    );
    used(loss_core::binary_cross_entropy_with_logits(
        b,
        x,
        y,
        c,
        &bce,
        Outputs::new().with_grad(black_box(&mut gs[..])),
    ));
    let sfocal = black_box(
        SigmoidFocalOptions::new()
            .with_alpha(s)
            .with_gamma(black_box(F::TWO))
            .with_reduction(reduction()),
    );
    used(sfocal.reduction());
    used(loss_core::sigmoid_focal_loss(
        b,
        x,
        y,
        &sfocal,
        Outputs::new().with_losses(black_box(&mut hs[..])),
    ));
    let kl = black_box(
        KlDivOptions::new()
            .with_reduction(reduction())
            .with_log_target(flag),
    );
    used(kl.log_target());
    used(loss_core::kl_div(
        b,
        x,
        y,
        c,
        &kl,
        Outputs::new().with_grad(black_box(&mut gs[..])),
    ));
    let mse = black_box(MseOptions::new().with_reduction(reduction()));
    used(mse.reduction());
    used(loss_core::mse_loss(
        b,
        x,
        y,
        &mse,
        Outputs::new().with_grad(black_box(&mut gs[..])),
    ));

    // Softmax focal.
    let focal = black_box(
        SoftmaxFocalOptions::new()
            .with_gamma(F::TWO)
            .with_alpha(w)
            .with_ignore_index(black_box(-1))
            .with_reduction(reduction()),
    );
    used(loss_core::softmax_focal_loss(
        b,
        x,
        c,
        t,
        &focal,
        Outputs::new().with_grad(black_box(&mut gs[..])),
    ));

    // Contrastive losses.
    let nce = black_box(
        InfoNceOptions::new()
            .with_temperature(s)
            .with_normalize(flag)
            .with_reduction(reduction())
            .with_symmetric(black_box(false)),
    );
    used(loss_core::info_nce_scratch_len(c, m, &nce));
    let mut gt = F::ZERO;
    let negatives = if black_box(flag) {
        Negatives::Unpaired { keys: w, m }
    } else {
        Negatives::Paired { keys: w, m }
    };
    used(loss_core::info_nce(
        b,
        x,
        y,
        d,
        black_box(negatives),
        &nce,
        InfoNceOutputs::new(black_box(&mut ss[..]))
            .with_losses(black_box(&mut hs[..]))
            .with_grad_query(black_box(&mut gs[..]))
            .with_grad_positive(black_box(&mut ks[..]))
            .with_grad_negatives(black_box(&mut ls[..]))
            .with_grad_temperature(&mut gt),
    ));
    used(loss_core::info_nce(
        b,
        x,
        y,
        d,
        black_box(Negatives::InBatch),
        &nce,
        InfoNceOutputs::new(black_box(&mut ss[..])),
    ));
    let single = black_box(InfoNceSingleOptions::new().with_temperature(s));
    used(single.temperature());
    used(loss_core::info_nce_single(
        b,
        black_box(&xs[..4]),
        black_box(&ys[..4]),
        w,
        &single,
        InfoNceOutputs::new(black_box(&mut ss[..])).with_grad_query(black_box(&mut gs[..])),
    ));
    used(gt);
    used(loss_core::nt_xent_scratch_len(c));
    let mut gt2 = F::ZERO;
    let ntx = black_box(
        NtXentOptions::new()
            .with_temperature(s)
            .with_normalize(flag),
    );
    used(ntx.temperature());
    used(loss_core::nt_xent(
        b,
        x,
        d,
        &ntx,
        NtXentOutputs::new(black_box(&mut ss[..]))
            .with_grad(black_box(&mut gs[..]))
            .with_grad_temperature(&mut gt2),
    ));
    used(gt2);
    let sig = black_box(
        SiglipOptions::new()
            .with_logit_scale(s)
            .with_logit_bias(black_box(F::ONE))
            .with_normalize(flag),
    );
    let (mut g1, mut g2) = (F::ZERO, F::ZERO);
    used(loss_core::siglip_loss(
        b,
        x,
        y,
        d,
        &sig,
        SiglipOutputs::new()
            .with_grad_x(black_box(&mut gs[..]))
            .with_grad_y(black_box(&mut ks[..]))
            .with_grad_logit_scale(&mut g1)
            .with_grad_logit_bias(&mut g2),
    ));
    used((g1, g2));
    used(loss_core::mutual_information_lower_bound(b, s, c));

    // The fused linear cross-entropy.
    used(loss_core::linear_cross_entropy_scratch_len(c, m));
    used(loss_core::linear_cross_entropy(
        b,
        black_box(&xs[..16]),
        y,
        d,
        black_box(&ts[..4]),
        &ce,
        LinearCrossEntropyOutputs::new(black_box(&mut ss[..]))
            .with_losses(black_box(&mut hs[..]))
            .with_grad_h(black_box(&mut gs[..]))
            .with_grad_w(black_box(&mut ks[..]))
            .with_lse(black_box(&mut ls[..])),
    ));
    used((gs, hs, ks, ls, ss, args));
}

/// Calls every public function of loss-core.
#[inline(never)]
pub fn probe() {
    with_float::<f32>();
    with_float::<f64>();
}
