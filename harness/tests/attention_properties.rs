//! Invariants of attention-core (proptest):
//!
//! * the streaming decoder equals full attention with bottom-right causality, token by token,
//!   bit for bit (window, sinks, ALiBi, soft-cap, sink logits, GQA; the ring buffer wrapping
//!   many times), and its cache holds exactly what CONFORMANCE.md says;
//! * partial passes over any split of the keys, merged in any order, equal the one pass;
//! * grouped-query attention equals attention with the kv heads repeated, bit for bit;
//! * outputs are convex combinations of the allowed value rows (sub-convex with sink logits:
//!   the key weights sum to `1 − p_sink`).
#![allow(clippy::needless_range_loop)] // heads × queries × keys index loops, as the formulas

/// One key range's partial result: output accumulators and per-query states.
type Partial = (
    Vec<f32>,
    Vec<attention_core::QueryState<f32, attention_core::backend::Poly>>,
);

#[path = "attention_support/reference.rs"]
mod attention_ref;

#[path = "attention_support/stream_case.rs"]
mod stream_case;

use attention_core::backend::Poly;
use attention_core::{
    attention, attention_finish, attention_partial, merge_partials, Causal, DecodeOptions, Dims,
    Error, KvCache, KvCacheSlice, Options, Output, Qkv, QueryState, Window,
};
use proptest::prelude::*;
use stream_case::StreamCase;

const U: f64 = 1.0 / (1u64 << 24) as f64;

fn values(seed: u64, n: usize, a: f32) -> Vec<f32> {
    let mut s = seed;
    (0..n)
        .map(|_| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((s >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0) * a
        })
        .collect()
}

fn stream_case() -> impl Strategy<Value = StreamCase> {
    (
        prop::sample::select(vec![(1usize, 1usize), (2, 1), (4, 2), (3, 3), (6, 2)]),
        1usize..400,
        prop::sample::select(vec![1usize, 4, 16, 33]),
        prop::sample::select(vec![1usize, 3, 8]),
        prop::option::of(1usize..90),
        0usize..9,
        any::<bool>(),
        prop::option::of(prop::sample::select(vec![0.5f32, 3.0, 20.0])),
        any::<bool>(),
        any::<u64>(),
    )
        .prop_map(
            |((heads, kv_heads), t, d, dv, window, sinks, alibi, softcap, sl, seed)| StreamCase {
                heads,
                kv_heads,
                t,
                d,
                dv,
                window,
                sinks,
                alibi,
                softcap,
                sink_logits: sl.then(|| values(seed ^ 7, heads, 2.0)),
                seed,
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// The decoder, token by token, equals full bottom-right causal attention bit for bit.
    #[test]
    fn stream_equals_full_attention_bit_for_bit(c in stream_case()) {
        let (h, hkv, t, d, dv) = (c.heads, c.kv_heads, c.t, c.d, c.dv);
        let q = values(c.seed, h * t * d, 1.5);
        let k = values(c.seed ^ 1, hkv * t * d, 1.5);
        let v = values(c.seed ^ 2, hkv * t * dv, 2.0);
        let opts = c.opts();
        let dims = Dims::new(h, hkv, t, t, d, dv);
        let (mut o, mut lse, mut ent) = (vec![0.0f32; h * t * dv], vec![0.0f32; h * t], vec![0.0f32; h * t]);
        attention(Poly, &dims, Qkv::new(&q, &k, &v), &opts,
            Output::new(&mut o).with_lse(&mut lse).with_entropy(&mut ent)).unwrap();

        let cap = c.needed();
        let mut ks = vec![0.0f32; hkv * cap * d];
        let mut vs = vec![0.0f32; hkv * cap * dv];
        let mut cache = KvCacheSlice::new(&mut ks, &mut vs, hkv, d, dv, c.evict()).unwrap();
        let (mut qt, mut kt, mut vt) = (vec![0.0f32; h * d], vec![0.0f32; hkv * d], vec![0.0f32; hkv * dv]);
        let (mut ot, mut lt, mut et) = (vec![0.0f32; h * dv], vec![0.0f32; h], vec![0.0f32; h]);
        for tok in 0..t {
            for hh in 0..h {
                qt[hh * d..][..d].copy_from_slice(&q[(hh * t + tok) * d..][..d]);
            }
            for g in 0..hkv {
                kt[g * d..][..d].copy_from_slice(&k[(g * t + tok) * d..][..d]);
                vt[g * dv..][..dv].copy_from_slice(&v[(g * t + tok) * dv..][..dv]);
            }
            cache.decode(Poly, &qt, &kt, &vt, &c.decode_opts(),
                Output::new(&mut ot).with_lse(&mut lt).with_entropy(&mut et)).unwrap();
            prop_assert!(cache.cached() <= cap);
            for hh in 0..h {
                for i in 0..dv {
                    prop_assert_eq!(ot[hh * dv + i].to_bits(), o[(hh * t + tok) * dv + i].to_bits(),
                        "token {} head {} o[{}]", tok, hh, i);
                }
                prop_assert_eq!(lt[hh].to_bits(), lse[hh * t + tok].to_bits(), "lse token {}", tok);
                prop_assert_eq!(et[hh].to_bits(), ent[hh * t + tok].to_bits(), "entropy token {}", tok);
            }
        }
        prop_assert_eq!(cache.cached(), cap);
        // One slot fewer: the push that needs it fails, and nothing before it.
        if cap > 0 {
            let (mut ks, mut vs) = (vec![0.0f32; hkv * (cap - 1) * d], vec![0.0f32; hkv * (cap - 1) * dv]);
            let mut small = KvCacheSlice::new(&mut ks, &mut vs, hkv, d, dv, c.evict()).unwrap();
            let mut failed_at = None;
            for tok in 0..t {
                if let Err(e) = small.push(&kt, &vt) {
                    prop_assert_eq!(e, Error::CacheFull { capacity: cap - 1 });
                    failed_at = Some(tok);
                    break;
                }
            }
            prop_assert_eq!(failed_at, Some(cap - 1));
        }
    }

    /// Partial passes over a random split of the keys, merged in a random order, equal the one
    /// pass (every option on).
    #[test]
    fn chunked_and_merged_equals_one_pass(
        seed in any::<u64>(),
        t in 1usize..12, s in 1usize..400,
        cuts in prop::collection::vec(0usize..400, 0..6),
        causal in 0u8..3, window in prop::option::of(1usize..80), sinks in 0usize..5,
        alibi in any::<bool>(), softcap in any::<bool>(), sink in any::<bool>(), masked in any::<bool>(),
        reverse in any::<bool>(),
    ) {
        let (h, hkv, d, dv) = (4, 2, 8, 3);
        let q = values(seed, h * t * d, 1.5);
        let k = values(seed ^ 1, hkv * s * d, 1.5);
        let v = values(seed ^ 2, hkv * s * dv, 2.0);
        let keep: Vec<bool> = values(seed ^ 3, t * s, 1.0).iter().map(|&x| x > -0.8).collect();
        let z = values(seed ^ 4, h, 2.0);
        let mut opts = Options::new()
            .with_causal([Causal::None, Causal::BottomRight, Causal::TopLeft][causal as usize])
            .with_alibi(alibi).with_sinks(sinks);
        if let Some(w) = window { opts = opts.with_window(w); }
        if softcap { opts = opts.with_softcap(4.0); }
        if sink { opts = opts.with_sink_logits(&z); }
        if masked { opts = opts.with_mask(&keep); }
        let dims = Dims::new(h, hkv, t, s, d, dv);
        let x = Qkv::new(&q, &k, &v);
        let (mut o, mut lse, mut ent) = (vec![0.0f32; h * t * dv], vec![0.0f32; h * t], vec![0.0f32; h * t]);
        attention(Poly, &dims, x, &opts, Output::new(&mut o).with_lse(&mut lse).with_entropy(&mut ent)).unwrap();

        let mut bounds: Vec<usize> = cuts.iter().map(|c| c % (s + 1)).collect();
        bounds.push(0);
        bounds.push(s);
        bounds.sort();
        let ranges: Vec<(usize, usize)> = bounds.windows(2).map(|w| (w[0], w[1])).collect();
        let mut parts: Vec<Partial> = ranges
            .iter()
            .map(|&(a, b)| {
                let mut acc = vec![0.0f32; h * t * dv];
                let mut st = vec![QueryState::new(Poly); h * t];
                attention_partial(Poly, &dims, x, &opts, a..b, &mut acc, &mut st).unwrap();
                (acc, st)
            })
            .collect();
        if reverse { parts.reverse(); }
        let (mut acc, mut st) = parts.remove(0);
        for (a2, s2) in &parts {
            merge_partials(&dims, &mut acc, &mut st, a2, s2).unwrap();
        }
        let (mut lse2, mut ent2) = (vec![0.0f32; h * t], vec![0.0f32; h * t]);
        attention_finish(&dims, &opts, &mut st,
            Output::new(&mut acc).with_lse(&mut lse2).with_entropy(&mut ent2)).unwrap();
        let n = ranges.len() as f64;
        let vmax = v.iter().fold(0.0f64, |m, &x| m.max(x.abs() as f64));
        for i in 0..o.len() {
            let tol = (4.0 * n + 32.0) * U * vmax;
            prop_assert!(((acc[i] - o[i]) as f64).abs() <= tol, "o[{}] {} vs {}", i, acc[i], o[i]);
        }
        for i in 0..lse.len() {
            if lse[i].is_infinite() {
                prop_assert_eq!(lse2[i], lse[i]);
                continue;
            }
            let tol = (4.0 * n + 8.0) * U * (1.0 + lse[i].abs() as f64);
            prop_assert!(((lse2[i] - lse[i]) as f64).abs() <= tol, "lse[{}] {} vs {}", i, lse2[i], lse[i]);
            // Scores here are within ±40 of each other: the entropy's terms are that large.
            let tol = (4.0 * n + 16.0) * U * 64.0;
            prop_assert!(((ent2[i] - ent[i]) as f64).abs() <= tol, "entropy[{}] {} vs {}", i, ent2[i], ent[i]);
        }
    }

    /// Grouped-query attention equals plain multi-head attention with each kv head repeated for
    /// its group, bit for bit; and the outputs are convex combinations of the allowed values
    /// (sub-convex with sink logits).
    #[test]
    fn gqa_equals_repeated_kv_heads_and_outputs_are_convex(
        seed in any::<u64>(),
        (h, hkv) in prop::sample::select(vec![(2usize, 1usize), (4, 2), (6, 3), (8, 2), (3, 1)]),
        t in 1usize..10, s in 1usize..280,
        causal in 0u8..3, window in prop::option::of(1usize..60), alibi in any::<bool>(),
        sink in any::<bool>(),
    ) {
        let (d, dv) = (5, 4);
        let q = values(seed, h * t * d, 2.0);
        let k = values(seed ^ 1, hkv * s * d, 2.0);
        let v = values(seed ^ 2, hkv * s * dv, 3.0);
        let z = values(seed ^ 4, h, 3.0);
        let mut opts = Options::new()
            .with_causal([Causal::None, Causal::BottomRight, Causal::TopLeft][causal as usize])
            .with_alibi(alibi).with_sinks(2);
        if let Some(w) = window { opts = opts.with_window(w); }
        if sink { opts = opts.with_sink_logits(&z); }
        let mut o = vec![0.0f32; h * t * dv];
        attention(Poly, &Dims::new(h, hkv, t, s, d, dv), Qkv::new(&q, &k, &v), &opts, Output::new(&mut o)).unwrap();
        let g = h / hkv;
        let rep = |x: &[f32], w: usize| -> Vec<f32> {
            (0..h).flat_map(|hh| x[(hh / g) * s * w..][..s * w].to_vec()).collect()
        };
        let (k2, v2) = (rep(&k, d), rep(&v, dv));
        let mut o2 = vec![0.0f32; h * t * dv];
        attention(Poly, &Dims::new(h, h, t, s, d, dv), Qkv::new(&q, &k2, &v2), &opts, Output::new(&mut o2)).unwrap();
        for i in 0..o.len() {
            prop_assert_eq!(o[i].to_bits(), o2[i].to_bits());
        }
        // Convexity: each output lies within the allowed values' range (widened to include 0
        // with a sink logit), up to rounding.
        let case = attention_ref::Case {
            heads: h, kv_heads: hkv, t, s, d, dv, causal, window, sinks: 2, alibi,
            ..Default::default()
        };
        for hh in 0..h {
            for tt in 0..t {
                for i in 0..dv {
                    let vals: Vec<f64> = (0..s)
                        .filter(|&j| case.allowed(tt, j))
                        .map(|j| v[((hh / g) * s + j) * dv + i] as f64)
                        .collect();
                    let got = o[(hh * t + tt) * dv + i] as f64;
                    if vals.is_empty() {
                        prop_assert_eq!(got, 0.0);
                        continue;
                    }
                    let mut lo = vals.iter().copied().fold(f64::INFINITY, f64::min);
                    let mut hi = vals.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                    if sink { lo = lo.min(0.0); hi = hi.max(0.0); }
                    let slack = 64.0 * U * 3.0;
                    prop_assert!(got >= lo - slack && got <= hi + slack, "{} not in [{}, {}]", got, lo, hi);
                }
            }
        }
        // The weights sum to 1 − p_sink: with all-ones values the output is that sum.
        let ones = vec![1.0f32; hkv * s];
        let mut o1 = vec![0.0f32; h * t];
        let mut lse = vec![0.0f32; h * t];
        attention(Poly, &Dims::new(h, hkv, t, s, d, 1), Qkv::new(&q, &k, &ones), &opts,
            Output::new(&mut o1).with_lse(&mut lse)).unwrap();
        for hh in 0..h {
            for tt in 0..t {
                let r = hh * t + tt;
                let any = (0..s).any(|j| case.allowed(tt, j));
                let want = match (any, sink) {
                    (false, _) => 0.0,
                    (true, false) => 1.0,
                    (true, true) => 1.0 - ((z[hh] - lse[r]) as f64).exp(),
                };
                prop_assert!((o1[r] as f64 - want).abs() <= 16.0 * U, "row {}: {} vs {}", r, o1[r], want);
            }
        }
    }
}

#[test]
fn the_const_generic_cache_equals_the_slice_cache_over_a_long_stream() {
    // 2 kv heads, 4 query heads, d = 8, dv = 4, window 40 + 4 sinks in 44 slots: 1000 tokens
    // (the ring wraps 24 times), ALiBi and sink logits on.
    const D: usize = 8;
    const DV: usize = 4;
    let z = [0.5f32, -1.0, 0.0, 2.0];
    let opts = DecodeOptions::new().with_alibi(true).with_sink_logits(&z);
    let mut fixed = KvCache::<f32, 2, 44, D, DV>::new(Some(Window::new(40, 4))).unwrap();
    let (mut ks, mut vs) = (vec![0.0f32; 2 * 44 * D], vec![0.0f32; 2 * 44 * DV]);
    let mut slice =
        KvCacheSlice::new(&mut ks, &mut vs, 2, D, DV, Some(Window::new(40, 4))).unwrap();
    let bytes = std::mem::size_of_val(&fixed);
    let (mut a, mut b) = ([0.0f32; 4 * DV], [0.0f32; 4 * DV]);
    for tok in 0..1000u64 {
        let q = values(tok, 4 * D, 1.0);
        let k = values(tok ^ 0xff, 2 * D, 1.0);
        let v = values(tok ^ 0xfff, 2 * DV, 1.0);
        fixed
            .decode(Poly, &q, &k, &v, &opts, Output::new(&mut a))
            .unwrap();
        slice
            .decode(Poly, &q, &k, &v, &opts, Output::new(&mut b))
            .unwrap();
        assert_eq!(a.map(f32::to_bits), b.map(f32::to_bits), "token {tok}");
        assert_eq!(std::mem::size_of_val(&fixed), bytes);
    }
    assert_eq!(
        (fixed.len(), fixed.cached(), fixed.capacity()),
        (1000, 44, 44)
    );
    assert_eq!(
        fixed.attend(Poly, &[0.0; 3 * D], &opts, Output::new(&mut a)),
        Err(Error::KvHeads {
            heads: 3,
            kv_heads: 2
        })
    );
    fixed.clear();
    assert_eq!(
        fixed.attend(Poly, &[0.0; 4 * D], &opts, Output::new(&mut a)),
        Err(Error::EmptyCache)
    );
    assert_eq!(
        KvCache::<f32, 1, 4, 1, 1>::new(Some(Window::new(0, 1))).err(),
        Some(Error::InvalidWindow)
    );
}
