//! The on-target cases of attention-core: each a `fn(&mut Ctx)` listed in the case table of
//! `lib.rs` (`single:`), fed with the suite's generator and digested like softmax-core's cases.
//! f32 with the `Poly` backend (attention-core's fast path); every buffer on the stack, well
//! under the 14 KiB a case may use on the Cortex-M0 (the largest case, `masks`, holds about
//! 9 KiB of tensors and states; the kernels add a few hundred bytes of score blocks).

use attention_core::backend::Poly;
use attention_core::{
    attention, attention_backward, attention_finish, attention_partial, merge_partials, Causal,
    DecodeOptions, Dims, Error, Grads, KvCache, Options, Output, Qkv, QueryState, Saved, Window,
};

use crate::family::own_frame;
use crate::Ctx;

/// Values in [-r, r] from the case's generator.
fn draw(ctx: &mut Ctx, r: f64, out: &mut [f32]) {
    for v in out.iter_mut() {
        *v = ctx.rng.range(-r, r) as f32;
    }
}

/// An error as a number for the digest (which variant, and its fields where they are numbers).
fn code(e: Error) -> u64 {
    match e {
        Error::LengthMismatch {
            expected, found, ..
        } => 1 ^ ((expected as u64) << 8) ^ ((found as u64) << 32),
        Error::ShapeOverflow => 2,
        Error::ZeroDim { .. } => 3,
        Error::KvHeads { heads, kv_heads } => 4 ^ ((heads as u64) << 8) ^ ((kv_heads as u64) << 32),
        Error::InvalidScale => 5,
        Error::InvalidSoftcap => 6,
        Error::InvalidWindow => 7,
        Error::UnsupportedOption { .. } => 8,
        Error::KeyRange { start, end, .. } => 9 ^ ((start as u64) << 8) ^ ((end as u64) << 32),
        Error::CacheFull { capacity } => 10 ^ ((capacity as u64) << 8),
        Error::EmptyCache => 11,
        Error::Core(_) => 12,
        _ => 13,
    }
}

fn feed_result(ctx: &mut Ctx, r: Result<(), Error>) {
    match r {
        Ok(()) => ctx.feed(&0u64),
        Err(e) => ctx.feed(&code(e)),
    }
}

// Dimensions shared by the cases: 4 query heads over 2 kv heads (GQA), 3 queries, d = 4,
// dv = 3 (each case may narrow the heads to keep its buffers within the M0's stack).
const H: usize = 4;
const HKV: usize = 2;
const T: usize = 3;
const D: usize = 4;
const DV: usize = 3;

/// The option sets the mask cases run: each mask kind and modifier alone, then combined.
fn option_sets<'a>(
    i: usize,
    keep: &'a [bool],
    bias: &'a [f32],
    sinks: &'a [f32],
) -> Option<Options<'a, f32>> {
    let o = Options::new();
    Some(match i {
        0 => o,
        1 => o.with_causal(Causal::BottomRight),
        2 => o.with_causal(Causal::TopLeft),
        3 => o.with_mask(keep),
        4 => o.with_bias(bias),
        5 => o.with_alibi(true),
        6 => o.with_window(9).with_sinks(3),
        7 => o.with_softcap(2.5),
        8 => o.with_sink_logits(sinks),
        9 => o.with_scale(0.75),
        10 => o
            .with_causal(Causal::BottomRight)
            .with_window(6)
            .with_sinks(2)
            .with_alibi(true)
            .with_softcap(3.0)
            .with_sink_logits(sinks),
        11 => o
            .with_causal(Causal::TopLeft)
            .with_mask(keep)
            .with_bias(bias)
            .with_window(20),
        _ => return None,
    })
}

/// `attention` with every mask kind and modifier, alone and combined (GQA, two key blocks):
/// `o`, `lse`, entropy; the same through `attention_partial` over two key ranges, merged
/// (`merge_partials`) and finished; and the errors of misuse.
pub(crate) fn masks(ctx: &mut Ctx) {
    // 2 query heads over 1 kv head, 140 keys: two 128-key blocks, the second partial (the
    // buffers as large as with 4 heads over 2 and 70 keys).
    const H: usize = 2;
    const HKV: usize = 1;
    const S: usize = 140;
    let mut q = [0.0f32; H * T * D];
    let mut k = [0.0f32; HKV * S * D];
    let mut v = [0.0f32; HKV * S * DV];
    let mut keep = [false; T * S];
    let mut bias = [0.0f32; H * T * S];
    let mut sinks = [0.0f32; H];
    draw(ctx, 1.5, &mut q);
    draw(ctx, 1.5, &mut k);
    draw(ctx, 1.0, &mut v);
    draw(ctx, 1.0, &mut bias);
    draw(ctx, 2.0, &mut sinks);
    for m in keep.iter_mut() {
        *m = ctx.rng.below(4) != 0;
    }
    // A fully masked query row (o = 0, lse = -inf).
    for m in keep[..S].iter_mut() {
        *m = false;
    }
    let dims = Dims::new(H, HKV, T, S, D, DV);
    let x = Qkv::new(&q[..], &k[..], &v[..]);
    let mut i = 0;
    while let Some(opts) = option_sets(i, &keep, &bias, &sinks) {
        let mut o = [0.0f32; H * T * DV];
        let mut lse = [0.0f32; H * T];
        let mut ent = [0.0f32; H * T];
        let r = own_frame(|| {
            attention(
                Poly,
                &dims,
                x,
                &opts,
                Output::new(&mut o)
                    .with_lse(&mut lse)
                    .with_entropy(&mut ent),
            )
        });
        feed_result(ctx, r);
        ctx.feed(&o);
        ctx.feed(&lse);
        ctx.feed(&ent);
        // Split-K: keys 0..90 and 90..140 (across the block boundary), merged and finished.
        let mut acc_a = [0.0f32; H * T * DV];
        let mut acc_b = [0.0f32; H * T * DV];
        let mut st_a = [QueryState::new(Poly); H * T];
        let mut st_b = [QueryState::new(Poly); H * T];
        let r = own_frame(|| {
            attention_partial(Poly, &dims, x, &opts, 0..90, &mut acc_a, &mut st_a)?;
            attention_partial(Poly, &dims, x, &opts, 90..S, &mut acc_b, &mut st_b)?;
            merge_partials(&dims, &mut acc_a, &mut st_a, &acc_b, &st_b)?;
            attention_finish(
                &dims,
                &opts,
                &mut st_a,
                Output::new(&mut acc_a).with_lse(&mut lse),
            )
        });
        feed_result(ctx, r);
        ctx.feed(&acc_a);
        ctx.feed(&lse);
        i += 1;
    }
    // Misuse: every call below is an error value.
    let mut o = [0.0f32; H * T * DV];
    let opts = Options::new();
    let bad: [Result<(), Error>; 6] = [
        attention(
            Poly,
            &Dims::new(3, 2, T, S, D, DV),
            x,
            &opts,
            Output::new(&mut o),
        ),
        attention(Poly, &dims, x, &opts, Output::new(&mut o[1..])),
        attention(Poly, &dims, x, &opts.with_window(0), Output::new(&mut o)),
        attention(Poly, &dims, x, &opts.with_softcap(0.0), Output::new(&mut o)),
        attention(
            Poly,
            &dims,
            x,
            &opts.with_scale(f32::INFINITY),
            Output::new(&mut o),
        ),
        attention(
            Poly,
            &Dims::new(H, HKV, T, usize::MAX, D, DV),
            x,
            &opts,
            Output::new(&mut o),
        ),
    ];
    for r in bad {
        feed_result(ctx, r);
    }
}

/// The streaming decoder over 300 tokens: 4 query heads over 2 kv heads, a window of 16 and 4
/// sinks in a `KvCache` of exactly 20 slots (so the ring wraps many times), with ALiBi, a
/// soft-cap and sink logits; every token's output, `lse` and entropy. Then a cache without a
/// window running full, and the errors (cache full, empty cache).
pub(crate) fn stream(ctx: &mut Ctx) {
    const D: usize = 8;
    const DV: usize = 4;
    let window = Window::new(16, 4);
    let mut cache = match KvCache::<f32, HKV, 20, D, DV>::new(Some(window)) {
        Ok(c) => c,
        Err(e) => {
            ctx.feed(&code(e));
            return;
        }
    };
    let mut sinks = [0.0f32; H];
    draw(ctx, 1.0, &mut sinks);
    let opts = DecodeOptions::new()
        .with_alibi(true)
        .with_softcap(4.0)
        .with_sink_logits(&sinks);
    for _ in 0..300 {
        let mut q = [0.0f32; H * D];
        let mut k = [0.0f32; HKV * D];
        let mut v = [0.0f32; HKV * DV];
        draw(ctx, 1.5, &mut q);
        draw(ctx, 1.5, &mut k);
        draw(ctx, 1.0, &mut v);
        let mut o = [0.0f32; H * DV];
        let mut lse = [0.0f32; H];
        let mut ent = [0.0f32; H];
        let r = own_frame(|| {
            cache.decode(
                Poly,
                &q,
                &k,
                &v,
                &opts,
                Output::new(&mut o)
                    .with_lse(&mut lse)
                    .with_entropy(&mut ent),
            )
        });
        feed_result(ctx, r);
        ctx.feed(&o);
        ctx.feed(&lse);
        ctx.feed(&ent);
    }
    ctx.feed(&cache.len());
    ctx.feed(&cache.cached());
    // Without a window: 6 slots take 6 tokens, the 7th is refused.
    let mut full = match KvCache::<f32, 1, 6, 2, 2>::new(None) {
        Ok(c) => c,
        Err(e) => {
            ctx.feed(&code(e));
            return;
        }
    };
    for _ in 0..7 {
        let mut q = [0.0f32; 2];
        let mut kv = [0.0f32; 2];
        draw(ctx, 1.0, &mut q);
        draw(ctx, 1.0, &mut kv);
        let mut o = [0.0f32; 2];
        let r = full.decode(
            Poly,
            &q,
            &kv,
            &kv,
            &DecodeOptions::new(),
            Output::new(&mut o),
        );
        feed_result(ctx, r);
        ctx.feed(&o);
    }
    let mut o = [0.0f32; 2];
    full.clear();
    feed_result(
        ctx,
        full.attend(
            Poly,
            &[1.0, 1.0],
            &DecodeOptions::new(),
            Output::new(&mut o),
        ),
    );
}

/// The backward pass (GQA, two key blocks) for several option sets: dQ, dK, dV and the sink
/// logits' gradient.
pub(crate) fn backward(ctx: &mut Ctx) {
    // 2 query heads over 1 kv head, 130 keys (two 128-key blocks), d = dv = 2: about 7 KiB of
    // tensors and gradients.
    const H: usize = 2;
    const HKV: usize = 1;
    const S: usize = 130;
    const D: usize = 2;
    const DV: usize = 2;
    let mut q = [0.0f32; H * T * D];
    let mut k = [0.0f32; HKV * S * D];
    let mut v = [0.0f32; HKV * S * DV];
    let mut d_o = [0.0f32; H * T * DV];
    let mut keep = [false; T * S];
    let mut bias = [0.0f32; H * T * S];
    let mut sinks = [0.0f32; H];
    draw(ctx, 1.5, &mut q);
    draw(ctx, 1.5, &mut k);
    draw(ctx, 1.0, &mut v);
    draw(ctx, 1.0, &mut d_o);
    draw(ctx, 1.0, &mut bias);
    draw(ctx, 2.0, &mut sinks);
    for m in keep.iter_mut() {
        *m = ctx.rng.below(3) != 0;
    }
    let dims = Dims::new(H, HKV, T, S, D, DV);
    let x = Qkv::new(&q[..], &k[..], &v[..]);
    for i in [0, 1, 3, 4, 6, 7, 8, 10, 11] {
        let Some(opts) = option_sets(i, &keep, &bias, &sinks) else {
            continue;
        };
        let mut o = [0.0f32; H * T * DV];
        let mut lse = [0.0f32; H * T];
        let r = own_frame(|| {
            attention(
                Poly,
                &dims,
                x,
                &opts,
                Output::new(&mut o).with_lse(&mut lse),
            )
        });
        feed_result(ctx, r);
        let mut dq = [0.0f32; H * T * D];
        let mut dk = [0.0f32; HKV * S * D];
        let mut dv = [0.0f32; HKV * S * DV];
        let mut dz = [0.0f32; H];
        let with_sinks = opts.sink_logits().is_some();
        let r = own_frame(|| {
            let grads = Grads::new(&mut dq, &mut dk, &mut dv);
            let grads = if with_sinks {
                grads.with_sink_logits(&mut dz)
            } else {
                grads
            };
            attention_backward(Poly, &dims, x, &opts, Saved::new(&o, &lse), &d_o, grads)
        });
        feed_result(ctx, r);
        ctx.feed(&dq);
        ctx.feed(&dk);
        ctx.feed(&dv);
        ctx.feed(&dz);
    }
}
