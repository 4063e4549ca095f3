//! The reduced-precision KV cache (f16, bf16, int8 with a scale per row):
//!
//! * the decoder over a reduced cache equals full attention (`attention` with bottom-right
//!   causality, the same window, sinks, ALiBi, soft-cap, sink logits, GQA) computed over the
//!   read-back keys and values, token by token, bit for bit (proptest);
//! * a row the format cannot hold is refused with `NotStorable` and leaves the cache exactly as
//!   it was (every later output equals a twin cache that never saw the push);
//! * against exact float64 attention over the *original* keys and values, every output is
//!   within a bound derived from the formats' rounding (the stored values' error bounds of
//!   `softmax_core::stored`, propagated through the scores, the softmax and the weighted sum)
//!   plus f32 attention's own rounding: not a tolerance tuned to pass.

#[path = "attention_support/stream_case.rs"]
mod stream_case;

use attention_core::backend::Poly;
use attention_core::softmax_core::stored::{bf16, f16, Operand};
use attention_core::{
    attention, DecodeOptions, Dims, Element, Error, KvCache, KvCacheSlice, Output, Qkv, Window,
};
use proptest::prelude::*;
use stream_case::StreamCase;

const U: f64 = 1.0 / (1u64 << 24) as f64;

/// Values uniform in [-a, a), each row of `row` values scaled by a magnitude from 2^-6 to 2^3
/// (rows of very different sizes: int8's scales differ from row to row, f16 meets small values).
fn values(seed: u64, n: usize, row: usize, a: f32) -> Vec<f32> {
    let mut s = seed | 1;
    (0..n)
        .map(|i| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let mag = 2f32.powi(((i / row.max(1)) as i32 * 5) % 10 - 6);
            ((s >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0) * a * mag
        })
        .collect()
}

/// The read-back values of `x` stored as `E`, row by row.
fn read_back<E: Element<Float = f32>>(x: &[f32], row: usize) -> Vec<f32> {
    let mut out = Vec::with_capacity(x.len());
    let mut units = vec![E::Unit::default(); row];
    for r in x.chunks(row) {
        let s = E::write_row(r, &mut units);
        out.extend(units.iter().map(|u| u.load(s)));
    }
    out
}

/// A cache of `E` over heap buffers (int8 with its scale buffers).
struct Bufs<E: Element> {
    k: Vec<E>,
    v: Vec<E>,
    ks: Vec<f32>,
    vs: Vec<f32>,
}

impl<E: Element + Default> Bufs<E> {
    fn new(hkv: usize, cap: usize, d: usize, dv: usize) -> Self {
        Bufs {
            k: vec![E::default(); hkv * cap * d],
            v: vec![E::default(); hkv * cap * dv],
            ks: vec![0.0; hkv * cap],
            vs: vec![0.0; hkv * cap],
        }
    }
}

fn case() -> impl Strategy<Value = StreamCase> {
    (
        prop::sample::select(vec![(1usize, 1usize), (2, 1), (4, 2), (3, 3)]),
        1usize..300,
        prop::sample::select(vec![1usize, 8, 16, 33, 64]),
        prop::sample::select(vec![1usize, 8, 17]),
        prop::option::of(1usize..90),
        0usize..6,
        any::<bool>(),
        prop::option::of(prop::sample::select(vec![0.5f32, 20.0])),
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
                sink_logits: sl.then(|| values(seed ^ 7, heads, heads, 2.0)),
                seed,
            },
        )
}

impl StreamCase {
    /// q (H×T×D), k (Hkv×T×D), v (Hkv×T×Dv), head-major.
    fn inputs(&self) -> (Vec<f32>, Vec<f32>, Vec<f32>) {
        let (h, hkv, t, d, dv) = (self.heads, self.kv_heads, self.t, self.d, self.dv);
        (
            values(self.seed, h * t * d, d, 1.5),
            values(self.seed ^ 1, hkv * t * d, d, 1.5),
            values(self.seed ^ 2, hkv * t * dv, dv, 2.0),
        )
    }

    /// Token `tok`'s rows: the queries of every head, the keys and values of every kv head.
    fn token(&self, (q, k, v): (&[f32], &[f32], &[f32]), tok: usize) -> [Vec<f32>; 3] {
        let (h, hkv, t, d, dv) = (self.heads, self.kv_heads, self.t, self.d, self.dv);
        let pick = |x: &[f32], heads: usize, w: usize| -> Vec<f32> {
            (0..heads)
                .flat_map(|g| x[(g * t + tok) * w..][..w].to_vec())
                .collect()
        };
        [pick(q, h, d), pick(k, hkv, d), pick(v, hkv, dv)]
    }
}

/// The decoder over a cache of `E` (built by `make`) against full attention over the read-back
/// keys and values: `o`, `lse` and entropy bit for bit at every token.
fn stream_equals_attention_over_read_back<E: Element<Float = f32>>(
    c: &StreamCase,
    mut decode: impl FnMut(
        &[f32],
        &[f32],
        &[f32],
        &mut [f32],
        &mut [f32],
        &mut [f32],
    ) -> Result<(), Error>,
) -> Result<(), TestCaseError> {
    let (h, hkv, t, d, dv) = (c.heads, c.kv_heads, c.t, c.d, c.dv);
    let (q, k, v) = c.inputs();
    let (kb, vb) = (read_back::<E>(&k, d), read_back::<E>(&v, dv));
    let dims = Dims::new(h, hkv, t, t, d, dv);
    let (mut o, mut lse, mut ent) = (
        vec![0.0f32; h * t * dv],
        vec![0.0f32; h * t],
        vec![0.0f32; h * t],
    );
    attention(
        Poly,
        &dims,
        Qkv::new(&q, &kb, &vb),
        &c.opts(),
        Output::new(&mut o)
            .with_lse(&mut lse)
            .with_entropy(&mut ent),
    )
    .unwrap();
    let (mut ot, mut lt, mut et) = (vec![0.0f32; h * dv], vec![0.0f32; h], vec![0.0f32; h]);
    for tok in 0..t {
        let [qt, kt, vt] = c.token((&q, &k, &v), tok);
        decode(&qt, &kt, &vt, &mut ot, &mut lt, &mut et).unwrap();
        for hh in 0..h {
            for i in 0..dv {
                prop_assert_eq!(
                    ot[hh * dv + i].to_bits(),
                    o[(hh * t + tok) * dv + i].to_bits(),
                    "{} token {} head {} o[{}]",
                    E::NAME,
                    tok,
                    hh,
                    i
                );
            }
            prop_assert_eq!(lt[hh].to_bits(), lse[hh * t + tok].to_bits(), "lse {}", tok);
            prop_assert_eq!(
                et[hh].to_bits(),
                ent[hh * t + tok].to_bits(),
                "entropy {}",
                tok
            );
        }
    }
    Ok(())
}

fn unscaled<E: Element<Float = f32, Unit = E> + Operand<f32, Scale = ()>>(
    c: &StreamCase,
) -> Result<(), TestCaseError> {
    let mut b = Bufs::<E>::new(c.kv_heads, c.needed(), c.d, c.dv);
    let mut cache =
        KvCacheSlice::new(&mut b.k, &mut b.v, c.kv_heads, c.d, c.dv, c.evict()).unwrap();
    let opts = c.decode_opts();
    stream_equals_attention_over_read_back::<E>(c, |q, k, v, o, l, e| {
        cache.decode(
            Poly,
            q,
            k,
            v,
            &opts,
            Output::new(o).with_lse(l).with_entropy(e),
        )
    })
}

fn int8(c: &StreamCase) -> Result<(), TestCaseError> {
    let mut b = Bufs::<i8>::new(c.kv_heads, c.needed(), c.d, c.dv);
    let mut cache = KvCacheSlice::new_int8(
        &mut b.k,
        &mut b.v,
        &mut b.ks,
        &mut b.vs,
        c.kv_heads,
        c.d,
        c.dv,
        c.evict(),
    )
    .unwrap();
    let opts = c.decode_opts();
    stream_equals_attention_over_read_back::<i8>(c, |q, k, v, o, l, e| {
        cache.decode(
            Poly,
            q,
            k,
            v,
            &opts,
            Output::new(o).with_lse(l).with_entropy(e),
        )
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn int8_stream_equals_attention_over_read_back_bit_for_bit(c in case()) {
        int8(&c)?;
    }

    #[test]
    fn f16_stream_equals_attention_over_read_back_bit_for_bit(c in case()) {
        unscaled::<f16>(&c)?;
    }

    #[test]
    fn bf16_stream_equals_attention_over_read_back_bit_for_bit(c in case()) {
        unscaled::<bf16>(&c)?;
    }
}

/// A refused push changes nothing: the length, what is cached, and every later output (with a
/// full window, the refused token would have overwritten the oldest window slot).
#[test]
fn refused_rows_leave_the_cache_unchanged() {
    const D: usize = 8;
    let good = |t: usize| -> ([f32; 2 * D], [f32; 2 * D], [f32; 4 * D]) {
        let x = values(t as u64 + 1, 8 * D, D, 1.0);
        (
            x[..2 * D].try_into().unwrap(),
            x[2 * D..4 * D].try_into().unwrap(),
            x[4 * D..].try_into().unwrap(),
        )
    };
    let bad_rows: Vec<(&'static str, usize, f32)> = vec![
        ("k", 3, f32::NAN),
        ("v", D + 2, f32::INFINITY),
        ("k", D, f32::NEG_INFINITY),
        ("v", 0, 70_000.0), // f16: rounds to +inf; int8 and bf16 store it
    ];
    fn run<E: Element<Float = f32>>(
        mut a: KvCache<E, 2, 6, D, D>,
        mut b: KvCache<E, 2, 6, D, D>,
        good: impl Fn(usize) -> ([f32; 2 * D], [f32; 2 * D], [f32; 4 * D]),
        bad_rows: &[(&'static str, usize, f32)],
    ) {
        let opts = DecodeOptions::new().with_alibi(true);
        let (mut oa, mut ob) = ([0.0f32; 4 * D], [0.0f32; 4 * D]);
        for t in 0..20 {
            let (k, v, q) = good(t);
            a.decode(Poly, &q, &k, &v, &opts, Output::new(&mut oa))
                .unwrap();
            b.decode(Poly, &q, &k, &v, &opts, Output::new(&mut ob))
                .unwrap();
            if t % 3 == 1 {
                for &(what, i, x) in bad_rows {
                    let (mut k, mut v, _) = good(1000 + t);
                    let row = if what == "k" { &mut k } else { &mut v };
                    row[i] = x;
                    let storable = E::storable(&k) && E::storable(&v);
                    let r = a.push(&k, &v);
                    if storable {
                        // Only f16 refuses 70,000; the others store it: use a fresh twin step.
                        assert!(r.is_ok(), "{} {what}[{i}] = {x}", E::NAME);
                        b.push(&k, &v).unwrap();
                    } else {
                        assert_eq!(
                            r,
                            Err(Error::NotStorable { what }),
                            "{} {what}[{i}] = {x}",
                            E::NAME
                        );
                    }
                }
                assert_eq!((a.len(), a.cached()), (b.len(), b.cached()));
            }
            assert_eq!(
                oa.map(f32::to_bits),
                ob.map(f32::to_bits),
                "{} token {t}",
                E::NAME
            );
        }
    }
    let w = Some(Window::new(4, 2));
    run::<i8>(
        KvCache::new(w).unwrap(),
        KvCache::new(w).unwrap(),
        good,
        &bad_rows,
    );
    run::<f16>(
        KvCache::new(w).unwrap(),
        KvCache::new(w).unwrap(),
        good,
        &bad_rows,
    );
    run::<bf16>(
        KvCache::new(w).unwrap(),
        KvCache::new(w).unwrap(),
        good,
        &bad_rows,
    );
    // bf16 refuses what rounds past its largest finite value.
    let mut c = KvCache::<bf16, 1, 2, 1, 1>::new(None).unwrap();
    assert_eq!(
        c.push(&[3.4e38], &[0.0]),
        Err(Error::NotStorable { what: "k" })
    );
    assert_eq!(c.push(&[3.38e38], &[-3.38e38]), Ok(()));
    assert_eq!(c.len(), 1);
}

/// The a-priori bound of a stored value's error (the module docs of `softmax_core::stored`),
/// given the row's largest magnitude `amax` (int8's grid).
fn stored_error(name: &str, x: f64, amax: f64) -> f64 {
    match name {
        "f32" => 0.0,
        "f16" => (x.abs() * 2f64.powi(-11)).max(2f64.powi(-25)),
        "bf16" => x.abs() * 2f64.powi(-8) + 2f64.powi(-134),
        "int8" => {
            let s = amax / 127.0 * (1.0 + U);
            s / 2.0 * (1.0 + 2f64.powi(-22)) + 2f64.powi(-23) * x.abs()
        }
        _ => unreachable!(),
    }
}

/// Every output of the decoder over a cache of `E` against exact float64 attention over the
/// original keys and values (one kv head, `group` query heads, a window of `w` plus `sinks`),
/// within the bound derived from the stored values' rounding and f32 attention's own; returns
/// the largest error / bound ratio.
fn within_derived_bound<E: Element<Float = f32>>(
    mut decode: impl FnMut(&[f32], &[f32], &[f32], &mut [f32]),
    (t, d, group, w, sinks): (usize, usize, usize, usize, usize),
    seed: u64,
) -> f64 {
    let dv = d;
    let q = values(seed, t * group * d, d, 1.0);
    let k = values(seed ^ 11, t * d, d, 1.5);
    let v = values(seed ^ 12, t * dv, dv, 1.0);
    let scale = 1.0 / (d as f64).sqrt();
    let mut o = vec![0.0f32; group * dv];
    let mut worst = 0.0f64;
    let amax = |r: &[f32]| r.iter().fold(0.0f64, |m, &x| m.max(f64::from(x).abs()));
    for tok in 0..t {
        let qt = &q[tok * group * d..][..group * d];
        decode(qt, &k[tok * d..][..d], &v[tok * dv..][..dv], &mut o);
        let allowed: Vec<usize> = (0..=tok).filter(|&j| j < sinks || tok - j < w).collect();
        for hh in 0..group {
            let qh = &qt[hh * d..][..d];
            // Exact scores and the score error bound Δ_j: the stored keys' rounding plus the f32
            // dot product's ((⌈d/16⌉ + 4)·u, documented) and the scaling's.
            let mut s = Vec::new();
            let mut delta = 0.0f64;
            for &j in &allowed {
                let kr = &k[j * d..][..d];
                let am = amax(kr);
                let (mut dot, mut dk, mut mag) = (0.0f64, 0.0f64, 0.0f64);
                for (&a, &b) in qh.iter().zip(kr) {
                    let (a, b) = (f64::from(a), f64::from(b));
                    dot += a * b;
                    let e = stored_error(E::NAME, b, am);
                    dk += a.abs() * e;
                    mag += a.abs() * (b.abs() + e);
                }
                let gamma = ((d as f64 / 16.0).ceil() + 6.0) * U;
                delta = delta.max(scale * (dk + gamma * mag));
                s.push(scale * dot);
            }
            let m = s.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
            let z: f64 = s.iter().map(|x| (x - m).exp()).sum();
            let p: Vec<f64> = s.iter().map(|x| (x - m).exp() / z).collect();
            // Relative change of any weight: within e^{2Δ} (the scores), times the kernel's exp
            // and normalisation rounding (16u).
            let rel = (2.0 * delta).exp() * (1.0 + 16.0 * U);
            for i in 0..dv {
                let (mut exact, mut pv, mut pdv) = (0.0f64, 0.0f64, 0.0f64);
                for (&j, &pj) in allowed.iter().zip(&p) {
                    let vr = &v[j * dv..][..dv];
                    let x = f64::from(vr[i]);
                    exact += pj * x;
                    pv += pj * x.abs();
                    pdv += pj * stored_error(E::NAME, x, amax(vr));
                }
                let bound = rel * pdv + (rel - 1.0) * pv + 8.0 * U * rel * (pv + pdv) + 1e-300;
                let err = (f64::from(o[hh * dv + i]) - exact).abs();
                assert!(
                    err <= bound,
                    "{} token {tok} head {hh} o[{i}]: error {err:e} above the bound {bound:e}",
                    E::NAME
                );
                worst = worst.max(err / bound);
            }
        }
    }
    worst
}

#[test]
fn outputs_are_within_the_bound_derived_from_the_formats_rounding() {
    const D: usize = 64;
    const G: usize = 4;
    const W: usize = 60;
    const S: usize = 4;
    let shape = (400usize, D, G, W, S);
    let opts = DecodeOptions::new();
    let win = Some(Window::new(W, S));
    let mut report = Vec::new();
    macro_rules! measure {
        ($e:ty) => {{
            let mut c = Box::new(KvCache::<$e, 1, 64, D, D>::new(win).unwrap());
            let worst = within_derived_bound::<$e>(
                |q, k, v, o| c.decode(Poly, q, k, v, &opts, Output::new(o)).unwrap(),
                shape,
                0x5eed,
            );
            report.push((<$e as Element>::NAME, worst));
        }};
    }
    measure!(f32);
    measure!(f16);
    measure!(bf16);
    measure!(i8);
    for (name, worst) in &report {
        println!("{name}: largest error / derived bound = {worst:.3}");
    }
}
