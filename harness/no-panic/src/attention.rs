//! The panic-freedom probe for attention-core: every public function, called with arguments the
//! optimiser cannot see through (see `main.rs`).

use core::hint::black_box;

use attention_core::backend::{Backend, Libm, Poly};
use attention_core::{
    Cache, Causal, DecodeOptions, Dims, Element, Grads, Inline, KvCache, KvCacheSlice, Options,
    Output, Qkv, QueryState, Saved, Window,
};
use softmax_core::stored::{bf16, f16};
use softmax_core::Float;

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

/// Calls every public function of attention-core.
#[inline(never)]
pub fn probe() {
    with_backend::<f32, Poly>();
    with_backend::<f32, Libm>();
    with_backend::<f64, Poly>();
    reduced::<i8, Poly>();
    reduced::<f16, Poly>();
    reduced::<bf16, Poly>();
    reduced::<i8, Libm>();
    int8_slice::<Poly>();
    element::<f32>();
    element::<f64>();
    element::<f16>();
    element::<bf16>();
    element::<i8>();
    let slope: f32 = attention_core::alibi_slope(black_box(6), black_box(5));
    used(slope);
    let mut slopes = [0.0f32; 12];
    used(attention_core::alibi_slopes(black_box(&mut slopes[..])));
    used(slopes);
    let scale: f32 = attention_core::default_scale(black_box(64));
    used(scale);
    let w = Window::new(black_box(4), black_box(1));
    used(w.tokens());
}

/// Everything generic over the element type and backend, for one pair.
#[inline(never)]
fn with_backend<F: Element<Float = F, Unit = F> + Float, B: Backend<F>>() {
    let b = black_box(B::default());
    // Dimensions the optimiser cannot see: any of them may be wrong for the buffers.
    let dims = Dims::new(
        black_box(2),
        black_box(1),
        black_box(3),
        black_box(5),
        black_box(4),
        black_box(2),
    );
    used(dims.group());
    let (qs, ks, vs) = (
        opaque::<F, 24>(0.25),
        opaque::<F, 20>(0.5),
        opaque::<F, 10>(0.75),
    );
    let q: &[F] = black_box(&qs[..]);
    let k: &[F] = black_box(&ks[..]);
    let v: &[F] = black_box(&vs[..]);
    let keep_buf = black_box([true; 15]);
    let bias_buf = opaque::<F, 30>(0.125);
    let sink_buf = opaque::<F, 2>(0.375);
    let x = Qkv::new(q, k, v);
    let opts = Options::new()
        .with_scale(black_box(F::HALF))
        .with_causal(black_box(Causal::BottomRight))
        .with_mask(black_box(&keep_buf[..]))
        .with_bias(black_box(&bias_buf[..]))
        .with_alibi(black_box(true))
        .with_window(black_box(3))
        .with_sinks(black_box(1))
        .with_softcap(black_box(F::from_f64(5.0)))
        .with_sink_logits(black_box(&sink_buf[..]));
    let opts = black_box(opts);
    used((
        opts.scale(),
        opts.causal(),
        opts.mask(),
        opts.bias(),
        opts.alibi(),
        opts.window(),
        opts.sinks(),
        opts.softcap(),
        opts.sink_logits(),
    ));
    let (mut o, mut lse, mut ent) = ([F::ZERO; 12], [F::ZERO; 6], [F::ZERO; 6]);
    let o_s: &mut [F] = black_box(&mut o[..]);
    let lse_s: &mut [F] = black_box(&mut lse[..]);
    let ent_s: &mut [F] = black_box(&mut ent[..]);
    used(attention_core::attention(
        b,
        &dims,
        x,
        &opts,
        Output::new(o_s).with_lse(lse_s).with_entropy(ent_s),
    ));
    used(attention_core::scaled_dot_product_attention(
        b,
        &dims,
        x,
        &opts,
        black_box(&mut o[..]),
    ));
    used((o, lse, ent));

    // Split-K.
    let mut st_a = [QueryState::new(b); 6];
    let mut st_b = [QueryState::new(b); 6];
    let (mut acc_a, mut acc_b) = ([F::ZERO; 12], [F::ZERO; 12]);
    let range = black_box(1usize)..black_box(4usize);
    used(attention_core::attention_partial(
        b,
        &dims,
        x,
        &opts,
        range,
        black_box(&mut acc_a[..]),
        black_box(&mut st_a[..]),
    ));
    used(attention_core::attention_partial(
        b,
        &dims,
        x,
        &opts,
        black_box(0usize)..black_box(1usize),
        black_box(&mut acc_b[..]),
        black_box(&mut st_b[..]),
    ));
    used(attention_core::merge_partials(
        &dims,
        black_box(&mut acc_a[..]),
        black_box(&mut st_a[..]),
        black_box(&acc_b[..]),
        black_box(&st_b[..]),
    ));
    let (first, rest) = st_a.split_at_mut(1);
    if let (Some(s0), Some(s1)) = (first.first_mut(), rest.first()) {
        let (a0, a1) = acc_a.split_at_mut(2);
        used(s0.merge(black_box(a0), s1, black_box(&a1[..2])));
        used((s0.lse(), s0.entropy()));
    }
    used(attention_core::attention_finish(
        &dims,
        &opts,
        black_box(&mut st_a[..]),
        Output::new(black_box(&mut acc_a[..])).with_lse(black_box(&mut lse[..])),
    ));
    used(acc_a);

    // Backward.
    let d_o = opaque::<F, 12>(0.625);
    let (mut dq, mut dk, mut dv, mut dz) =
        ([F::ZERO; 24], [F::ZERO; 20], [F::ZERO; 10], [F::ZERO; 2]);
    used(attention_core::attention_backward(
        b,
        &dims,
        x,
        &opts,
        Saved::new(black_box(&o[..]), black_box(&lse[..])),
        black_box(&d_o[..]),
        Grads::new(
            black_box(&mut dq[..]),
            black_box(&mut dk[..]),
            black_box(&mut dv[..]),
        )
        .with_sink_logits(black_box(&mut dz[..])),
    ));
    used((dq, dk, dv, dz));

    // The decoders.
    let window = black_box(Some(Window::new(black_box(4), black_box(1))));
    let sink = opaque::<F, 2>(4.0);
    let stream_opts = black_box(
        DecodeOptions::new()
            .with_alibi(black_box(true))
            .with_softcap(black_box(F::from_f64(20.0)))
            .with_sink_logits(black_box(&sink[..])),
    );
    let qt = opaque::<F, 8>(0.3);
    let kt = opaque::<F, 4>(0.6);
    let vt = opaque::<F, 2>(0.9);
    let mut ot = [F::ZERO; 4];
    // The generic cache under its own name (the aliases below are the same type).
    type InlineCache<F> = Cache<Inline<F, 1, 2, 4, 2>>;
    let inline: Result<InlineCache<F>, _> = InlineCache::new(window);
    if let Ok(c) = inline {
        used(c.len());
    }
    if let Ok(mut c) = KvCache::<F, 1, 5, 4, 2>::new(window) {
        for _ in 0..black_box(9) {
            used(c.decode(
                b,
                black_box(&qt[..]),
                black_box(&kt[..]),
                black_box(&vt[..]),
                &stream_opts,
                Output::new(black_box(&mut ot[..])),
            ));
        }
        used(c.push(black_box(&kt[..]), black_box(&vt[..])));
        used(c.attend(
            b,
            black_box(&qt[..]),
            &stream_opts,
            Output::new(&mut ot[..]),
        ));
        used((c.len(), c.is_empty(), c.cached(), c.capacity(), c.window()));
        used(c.token_bytes());
        c.clear();
        used(c.len());
    }
    let (mut k_store, mut v_store) = ([F::ZERO; 20], [F::ZERO; 10]);
    if let Ok(mut c) = KvCacheSlice::new(
        black_box(&mut k_store[..]),
        black_box(&mut v_store[..]),
        black_box(1),
        black_box(4),
        black_box(2),
        window,
    ) {
        for _ in 0..black_box(9) {
            used(c.decode(
                b,
                black_box(&qt[..]),
                black_box(&kt[..]),
                black_box(&vt[..]),
                &stream_opts,
                Output::new(black_box(&mut ot[..])),
            ));
        }
        used(c.push(black_box(&kt[..]), black_box(&vt[..])));
        used(c.attend(
            b,
            black_box(&qt[..]),
            &stream_opts,
            Output::new(&mut ot[..]),
        ));
        used((c.len(), c.is_empty(), c.cached(), c.capacity(), c.window()));
        c.clear();
        used(c.len());
    }
    used(ot);
}

/// The decoder options of the reduced caches' probes: ALiBi, a soft-cap and sink logits, all
/// opaque.
fn reduced_opts(sink: &[f32; 2]) -> DecodeOptions<'_, f32> {
    black_box(
        DecodeOptions::new()
            .with_alibi(black_box(true))
            .with_softcap(black_box(20.0f32))
            .with_sink_logits(black_box(&sink[..])),
    )
}

/// An inline cache stored as `E` (int8, f16, bf16; computed in f32): decode steps past the
/// capacity (the window ring wraps), pushes of rows the optimiser cannot see (NaN, ±inf and
/// values the format cannot hold included: a refused push is an error value), attend.
#[inline(never)]
fn reduced<E: Element<Float = f32>, B: Backend<f32>>() {
    let b = black_box(B::default());
    let window = black_box(Some(Window::new(black_box(4), black_box(1))));
    let sink = opaque::<f32, 2>(4.0);
    let opts = reduced_opts(&sink);
    let qt = opaque::<f32, 8>(0.3);
    let kt = opaque::<f32, 4>(0.6);
    let vt = opaque::<f32, 2>(0.9);
    let mut ot = [0.0f32; 4];
    let (mut lse, mut ent) = ([0.0f32; 2], [0.0f32; 2]);
    if let Ok(mut c) = KvCache::<E, 1, 5, 4, 2>::new(window) {
        for _ in 0..black_box(9) {
            used(
                c.decode(
                    b,
                    black_box(&qt[..]),
                    black_box(&kt[..]),
                    black_box(&vt[..]),
                    &opts,
                    Output::new(black_box(&mut ot[..]))
                        .with_lse(black_box(&mut lse[..]))
                        .with_entropy(black_box(&mut ent[..])),
                ),
            );
        }
        used(c.push(black_box(&kt[..]), black_box(&vt[..])));
        used(c.attend(b, black_box(&qt[..]), &opts, Output::new(&mut ot[..])));
        used((c.len(), c.cached(), c.capacity(), c.token_bytes()));
    }
    used((ot, lse, ent));
}

/// A [`KvCacheSlice`] over int8 buffers and their scales (`new_int8`), of lengths the optimiser
/// cannot see: push, decode, attend.
#[inline(never)]
fn int8_slice<B: Backend<f32>>() {
    // The int8 slice cache under a name of its own (the same type as `KvCacheSlice<'_, i8>`).
    type Int8Cache<'a> = KvCacheSlice<'a, i8>;
    let b = black_box(B::default());
    let window = black_box(Some(Window::new(black_box(4), black_box(1))));
    let sink = opaque::<f32, 2>(4.0);
    let opts = reduced_opts(&sink);
    let qt = opaque::<f32, 8>(0.3);
    let kt = opaque::<f32, 4>(0.6);
    let vt = opaque::<f32, 2>(0.9);
    let mut ot = [0.0f32; 4];
    let (mut k_store, mut v_store) = ([0i8; 20], [0i8; 10]);
    let (mut k_scales, mut v_scales) = ([0.0f32; 5], [0.0f32; 5]);
    if let Ok(mut c) = Int8Cache::new_int8(
        black_box(&mut k_store[..]),
        black_box(&mut v_store[..]),
        black_box(&mut k_scales[..]),
        black_box(&mut v_scales[..]),
        black_box(1),
        black_box(4),
        black_box(2),
        window,
    ) {
        for _ in 0..black_box(9) {
            used(c.decode(
                b,
                black_box(&qt[..]),
                black_box(&kt[..]),
                black_box(&vt[..]),
                &opts,
                Output::new(black_box(&mut ot[..])),
            ));
        }
        used(c.push(black_box(&kt[..]), black_box(&vt[..])));
        used(c.attend(b, black_box(&qt[..]), &opts, Output::new(&mut ot[..])));
        used((c.len(), c.cached(), c.capacity(), c.token_bytes()));
    }
    // The f16 slice cache (`KvCacheSlice::new`, no scales).
    let (mut kh, mut vh) = ([f16::ZERO; 20], [f16::ZERO; 10]);
    if let Ok(mut c) = KvCacheSlice::new(
        black_box(&mut kh[..]),
        black_box(&mut vh[..]),
        black_box(1),
        black_box(4),
        black_box(2),
        window,
    ) {
        used(c.decode(
            b,
            black_box(&qt[..]),
            black_box(&kt[..]),
            black_box(&vt[..]),
            &opts,
            Output::new(black_box(&mut ot[..])),
        ));
        used(c.token_bytes());
    }
    used(ot);
}

/// The element trait's own functions: whether a row is storable, and a row written (into an
/// output of a length the optimiser cannot see).
#[inline(never)]
fn element<E: Element>() {
    let xs = opaque::<E::Float, 12>(0.45);
    let x: &[E::Float] = black_box(&xs[..]);
    used(E::storable(x));
    let mut buf = black_box([E::Unit::default(); 12]);
    used(E::write_row(x, black_box(&mut buf[..])));
    used((buf, E::NAME));
}
