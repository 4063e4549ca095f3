//! The dispatch promise: whichever machine-code level runs a kernel (`softmax_core::simd`), the
//! result bits are those of the baseline (portable) code.
//!
//! Every level this machine supports is forced in turn with `simd::set_max_level`, and the whole
//! on-target suite (every op × backend × type, the same cases the firmware runs) plus long rows
//! (many summation blocks, masks, temperatures, both element types) are compared bit for bit
//! with the baseline level. Levels the CPU lacks are reported as skipped (they cannot run here).
//!
//! One test function only: the level cap is global to the process, and the test harness runs the
//! functions of a file in parallel.
//!
//! The wider copies exist in builds without debug assertions only (see `softmax_core::simd`):
//! run `cargo test --release -p harness --test dispatch_levels` for the comparison. Under
//! `cargo test` (debug assertions on) the test checks that the dispatcher stays at the baseline.

use softmax_core::backend::{Backend, Libm, Poly};
use softmax_core::simd::{self, Level};
use softmax_core::{rows, Float, LogSumExp, Rows};

/// Every suite case's digest for a few seeds.
fn suite_digests() -> Vec<(String, u64)> {
    let mut out = Vec::new();
    for seed in [suite::DEFAULT_SEED, 1, 0x5eed] {
        suite::run_all_seeded(seed, |name, d| out.push((format!("{seed}/{name}"), d)));
    }
    out
}

/// SplitMix64, for long inputs.
fn rng(seed: u64) -> impl FnMut() -> f64 {
    let mut s = seed;
    move || {
        s = s.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = s;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// Bits of long-row results of one element type, as `u64`s.
fn long_rows<F: Float>() -> Vec<u64>
where
    Poly: Backend<F>,
    Libm: Backend<F>,
{
    let mut bits = Vec::new();
    let mut push = |v: &[F]| bits.extend(v.iter().map(|x| x.to_bits().into()));
    let mut r = rng(7);
    for &(rows_n, n) in &[
        (1usize, 140_000usize), // at least 2^17: the two-pass online path
        (1, 40_000),
        (3, 4097),
        (17, 513),
        (64, 100),
        (5, 7),
        // Batches the pair kernels take (rows of a multiple of 32 up to 512, two at a time,
        // an odd last row alone).
        (5, 64),
        (3, 512),
    ] {
        let len = rows_n * n;
        let x: Vec<F> = (0..len)
            .map(|i| {
                let u = r();
                if i % 97 == 3 {
                    F::NEG_INFINITY
                } else {
                    F::from_f64((u - 0.5) * 60.0)
                }
            })
            .collect();
        let keep: Vec<bool> = (0..len).map(|i| i % 5 != 1).collect();
        let bias: Vec<F> = (0..len)
            .map(|i| F::from_f64((i % 7) as f64 - 3.0))
            .collect();
        let dy: Vec<F> = (0..len).map(|_| F::from_f64(r() - 0.5)).collect();
        let mut y = vec![F::ZERO; len];
        let mut z = vec![F::ZERO; len];
        let mut per_row = vec![F::ZERO; rows_n];
        for tau in [1.0, 0.37, 2.5] {
            let t = F::from_f64(tau);
            for spec in [
                Rows::new(n).with_temperature(t),
                Rows::new(n).with_temperature(t).with_keep(&keep),
                Rows::new(n).with_temperature(t).with_bias(&bias),
            ] {
                rows::softmax(Poly, &x, &mut y, &spec).unwrap();
                push(&y);
                rows::log_softmax(Poly, &x, &mut y, &spec).unwrap();
                push(&y);
                rows::logsumexp(Poly, &x, &mut per_row, &spec).unwrap();
                push(&per_row);
                rows::entropy(Poly, &x, &mut per_row, &spec).unwrap();
                push(&per_row);
                rows::softmax(Libm, &x, &mut y, &spec).unwrap();
                push(&y);
                rows::log_softmax_vjp_from_logits(Poly, &x, &dy, &mut z, &spec).unwrap();
                push(&z);
            }
            let mut xy = x.clone();
            rows::softmax_in_place(Poly, &mut xy, &Rows::new(n).with_temperature(t)).unwrap();
            push(&xy);
            let mut xy = x.clone();
            rows::log_softmax_in_place(Poly, &mut xy, &Rows::new(n).with_temperature(t)).unwrap();
            push(&xy);
        }
        rows::softmax_vjp(&y, &dy, &mut z, &Rows::new(n)).unwrap();
        push(&z);
        let mut st = LogSumExp::new(Poly);
        for c in x.chunks(1000) {
            st.push_slice(c);
        }
        push(&[st.finish()]);
    }
    bits
}

/// Bits of the fast variant over batches of every kind it computes apart: rows of up to 256
/// values eight at a time (whole groups of finite rows, the rows left over, and a second group
/// holding a row with `+inf` and a row of only `-inf`, which goes row by row), one by one, and
/// in the online pass (2^17 values and more): at the AVX2 and AVX-512 levels, its two kernels.
fn fast_rows() -> Vec<u64> {
    let mut bits = Vec::new();
    let mut push = |v: &[f32]| bits.extend(v.iter().map(|x| u64::from(x.to_bits())));
    let mut r = rng(11);
    for &(rows_n, n) in &[
        (27usize, 16usize),
        (19, 256),
        (11, 1),
        (17, 200),
        (9, 33),
        (5, 257),
        (1, 140_000),
    ] {
        let len = rows_n * n;
        // `-inf` sprinkled inside rows (never a whole row of one value).
        let mut x: Vec<f32> = (0..len)
            .map(|i| {
                if n > 1 && i % 97 == 3 {
                    f32::NEG_INFINITY
                } else {
                    ((r() - 0.5) * 60.0) as f32
                }
            })
            .collect();
        // The first group of eight stays finite; the second gets the non-finite rows.
        if rows_n >= 16 {
            x[11 * n + n / 2] = f32::INFINITY;
            x[13 * n..14 * n].fill(f32::NEG_INFINITY);
        }
        let spec = Rows::new(n);
        let mut y = vec![0.0f32; len];
        let mut per_row = vec![0.0f32; rows_n];
        softmax_core::fast::softmax(&x, &mut y, &spec).unwrap();
        push(&y);
        softmax_core::fast::log_softmax(&x, &mut y, &spec).unwrap();
        push(&y);
        softmax_core::fast::logsumexp(&x, &mut per_row, &spec).unwrap();
        push(&per_row);
    }
    bits
}

/// Prefill-sized attention (GQA, causal and not, head sizes on and off the 16 lanes), whose
/// score and value products run the hand-scheduled AVX2 copies at the AVX2 and AVX-512 levels.
/// (The products alone are checked against their definitions, shape by shape, by
/// `softmax-core/tests/products.rs`.)
fn attention_bits() -> Vec<u64> {
    use attention_core::{attention, Causal, Dims, Options, Output, Qkv};
    let mut r = rng(0xd07);
    let mut vals = |n: usize| -> Vec<f32> { (0..n).map(|_| (r() * 8.0 - 4.0) as f32).collect() };
    let mut bits = Vec::new();
    let mut push = |x: &[f32]| bits.extend(x.iter().map(|v| u64::from(v.to_bits())));
    for (d, causal) in [(64usize, true), (80, false), (37, true)] {
        let (h, kvh, t, s) = (4, 2, 70, 90);
        let dims = Dims::new(h, kvh, t, s, d, d);
        let (q, k, v) = (vals(h * t * d), vals(kvh * s * d), vals(kvh * s * d));
        let mut o = vec![0.0f32; h * t * d];
        let mut lse = vec![0.0f32; h * t];
        let opts = if causal {
            Options::new().with_causal(Causal::BottomRight)
        } else {
            Options::new()
        };
        attention(
            Poly,
            &dims,
            Qkv::new(&q, &k, &v),
            &opts,
            Output::new(&mut o).with_lse(&mut lse),
        )
        .unwrap();
        push(&o);
        push(&lse);
    }
    // The decoder over each reduced-precision cache (GQA: tiles of several rows; head sizes on
    // and off the 8-value conversions; a window that wraps), whose products run the stored-row
    // copies of the AVX2 kernels (int8, f16 with F16C, bf16) at the AVX2 and AVX-512 levels.
    fn stream<E: attention_core::Element<Float = f32>, const D: usize>(
        vals: &mut impl FnMut(usize) -> Vec<f32>,
        push: &mut impl FnMut(&[f32]),
    ) {
        use attention_core::{DecodeOptions, KvCache, Output, Window};
        let mut c = Box::new(KvCache::<E, 2, 40, D, D>::new(Some(Window::new(37, 3))).unwrap());
        let mut o = vec![0.0f32; 6 * D];
        let opts = DecodeOptions::new().with_alibi(true);
        for _ in 0..150 {
            let (q, k, v) = (vals(6 * D), vals(2 * D), vals(2 * D));
            c.decode(Poly, &q, &k, &v, &opts, Output::new(&mut o))
                .unwrap();
            push(&o);
        }
    }
    stream::<i8, 64>(&mut vals, &mut push);
    stream::<i8, 37>(&mut vals, &mut push);
    stream::<softmax_core::stored::f16, 64>(&mut vals, &mut push);
    stream::<softmax_core::stored::f16, 37>(&mut vals, &mut push);
    stream::<softmax_core::stored::bf16, 64>(&mut vals, &mut push);
    stream::<softmax_core::stored::bf16, 37>(&mut vals, &mut push);
    bits
}

type Everything = (Vec<(String, u64)>, Vec<u64>, Vec<u64>, Vec<u64>, Vec<u64>);

fn everything() -> Everything {
    (
        suite_digests(),
        long_rows::<f32>(),
        long_rows::<f64>(),
        attention_bits(),
        fast_rows(),
    )
}

#[test]
fn every_level_gives_the_baseline_bits() {
    let detected = simd::detected();
    if cfg!(debug_assertions) {
        assert_eq!(
            detected,
            Level::Baseline,
            "debug builds compile one level only"
        );
        println!(
            "debug build: one level compiled; compare the levels with \
             `cargo test --release -p harness --test dispatch_levels`"
        );
    }
    simd::set_max_level(Level::Baseline);
    assert_eq!(simd::level(), Level::Baseline);
    let base = everything();
    let mut tested = vec![Level::Baseline];
    let mut skipped = Vec::new();
    for level in [Level::Avx2, Level::Avx512] {
        if level > detected {
            skipped.push(level);
            continue;
        }
        simd::set_max_level(level);
        assert_eq!(simd::level(), level);
        let got = everything();
        let differing: Vec<&str> = base
            .0
            .iter()
            .zip(&got.0)
            .filter(|(a, b)| a != b)
            .map(|(a, _)| a.0.as_str())
            .collect();
        assert!(
            differing.is_empty(),
            "level {}: suite cases differ from the baseline: {differing:?}",
            level.name()
        );
        assert!(base.3 == got.3, "level {}: attention differs", level.name());
        assert!(
            base.4 == got.4,
            "level {}: fast batches differ",
            level.name()
        );
        assert!(
            base.1 == got.1,
            "level {}: f32 long rows differ",
            level.name()
        );
        assert!(
            base.2 == got.2,
            "level {}: f64 long rows differ",
            level.name()
        );
        tested.push(level);
    }
    simd::set_max_level(Level::Avx512);
    println!(
        "levels compared bit for bit with the baseline: {:?}; not supported by this CPU (skipped): {:?}; \
         {} suite digests, {} + {} long-row values, {} fast values",
        tested.iter().map(|l| l.name()).collect::<Vec<_>>(),
        skipped.iter().map(|l| l.name()).collect::<Vec<_>>(),
        base.0.len(),
        base.1.len(),
        base.2.len(),
        base.4.len()
    );
    assert!(tested.len() >= 2 || detected == Level::Baseline);
}
