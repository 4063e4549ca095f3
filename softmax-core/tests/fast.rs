//! The fast variant (`softmax_core::fast`) against independent references: its fused
//! multiply-add against std's `f32::mul_add` (correctly rounded), its exp against f64's, its
//! softmax / log_softmax / logsumexp against an f64 reference within the documented bounds, its
//! edge semantics, and — in release builds on a CPU with AVX2 and FMA, where the hand-written
//! kernel exists — the kernel's bits against the portable reference's (`simd::set_max_level`
//! forces the portable one).
//!
//! Run it in release too (`cargo test --release -p softmax-core --test fast`, as CI does).
//! `SOFTMAX_EXHAUSTIVE=1` makes the exp check exhaustive.

use softmax_core::fast;
use softmax_core::simd::{self, Level};
use softmax_core::Error;

/// SplitMix64.
fn next(seed: &mut u64) -> u64 {
    *seed = seed.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *seed;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Uniform in [-1, 1).
fn unit(seed: &mut u64) -> f32 {
    (next(seed) >> 40) as f32 / (1u64 << 23) as f32 - 1.0
}

fn release() -> bool {
    cfg!(not(debug_assertions))
}

#[test]
fn fma_is_correctly_rounded() {
    let mut seed = 1u64;
    let n = if release() { 4_000_000 } else { 400_000 };
    let mut checked = 0;
    for i in 0..n {
        let (a, b, c) = match i % 4 {
            // Arbitrary bit patterns: every exponent, subnormals, infinities, NaN.
            0 => {
                let r = next(&mut seed);
                (
                    f32::from_bits(r as u32),
                    f32::from_bits((r >> 32) as u32),
                    f32::from_bits(next(&mut seed) as u32),
                )
            }
            // Products near 1 and an addend that cancels most of them (exact in f64: the
            // hard cases are built below).
            1 | 2 => {
                let a = 1.0 + (next(&mut seed) >> 41) as f32 * f32::EPSILON;
                let b = 1.0 + (next(&mut seed) >> 41) as f32 * f32::EPSILON;
                let p = a * b;
                let k = (next(&mut seed) % 64) as i32 - 32;
                (a, b, -(p + k as f32 * f32::EPSILON))
            }
            // Values of moderate range, signs mixed.
            _ => (
                unit(&mut seed) * 1e3,
                unit(&mut seed) * 1e-3,
                unit(&mut seed),
            ),
        };
        let want = a.mul_add(b, c);
        let got = fast::fma(a, b, c);
        if want.is_nan() {
            assert!(got.is_nan(), "fma({a:e}, {b:e}, {c:e}) = {got:e}, want NaN");
        } else {
            assert_eq!(
                got.to_bits(),
                want.to_bits(),
                "fma({a:e}, {b:e}, {c:e}) = {got:e}, want {want:e}"
            );
        }
        checked += 1;
    }
    assert_eq!(checked, n);
    // Sums that an f64 cannot hold and that lie just below an f32 midpoint whose upper
    // neighbour is even: `(1 + k·2⁻²³)(1 − k·2⁻²³) + (2²⁴ + 2) = 2²⁴ + 3 − k²·2⁻⁴⁶`, correctly
    // rounded 2²⁴ + 2; an f64 sum rounds to the midpoint 2²⁴ + 3 first, and then to the even
    // 2²⁴ + 4 (a double rounding). Scaled by powers of two and negated, across the range.
    let mut hard = 0;
    for k in 1..362u32 {
        for e in (-120i32..=100).step_by(11) {
            for sign in [1.0f32, -1.0] {
                let s = 2f32.powi(e);
                let a = sign * (1.0 + k as f32 * f32::EPSILON) * s;
                let b = 1.0 - k as f32 * f32::EPSILON;
                let c = sign * (16_777_218.0 * s);
                let want = a.mul_add(b, c);
                let naive = (a as f64 * b as f64 + c as f64) as f32;
                let got = fast::fma(a, b, c);
                assert_eq!(got.to_bits(), want.to_bits(), "fma({a:e}, {b:e}, {c:e})");
                hard += usize::from(naive != want);
            }
        }
    }
    // The construction does catch a double rounding, in every case.
    assert_eq!(hard, 361 * 21 * 2, "cases where a plain f64 sum goes wrong");
}

/// ULP of `v` as an f32 (the spacing of the f32 grid at `|v|`, subnormal spacing below).
fn ulp(v: f64) -> f64 {
    let e = v.abs().log2().floor().max(-126.0);
    2f64.powf(e - 23.0)
}

#[test]
fn exp_within_three_ulp() {
    let exhaustive = std::env::var("SOFTMAX_EXHAUSTIVE").is_ok_and(|v| v == "1");
    let stride = if exhaustive {
        1
    } else if release() {
        61
    } else {
        997
    };
    // ULP error of `fast::exp(d)` against f64, the worst and the count, over the f32 from
    // `start` by `stride` while `keep(d)`, towards zero (`down`) or away from it.
    let scan = |start: u32, down: bool, keep: &dyn Fn(f32) -> bool| {
        let (mut worst, mut count, mut bits) = ((0.0f64, 0.0f32), 0u64, start);
        while keep(f32::from_bits(bits)) {
            let d = f32::from_bits(bits);
            let want = (d as f64).exp();
            let e = (fast::exp(d) as f64 - want).abs() / ulp(want);
            if e > worst.0 {
                worst = (e, d);
            }
            count += 1;
            bits = if down { bits - stride } else { bits + stride };
        }
        (worst, count)
    };
    // Every f32 in [-87.3, 0] (the results are normal): the shifted logits of softmax.
    let (w, n) = scan((-87.3f32).to_bits(), true, &|d| (-87.3..0.0).contains(&d));
    println!(
        "fast::exp on [-87.3, 0): max {:.3} ULP at d = {:e} over {n} values",
        w.0, w.1
    );
    assert!(w.0 <= 3.0, "max {} ULP at {}", w.0, w.1);
    // (0, 2.5]: the online pass of long rows, whose reference may lie below a block's values.
    let (w, n) = scan(1, false, &|d| d <= 2.5);
    println!(
        "fast::exp on (0, 2.5]: max {:.3} ULP at d = {:e} over {n} values",
        w.0, w.1
    );
    assert!(w.0 <= 3.0, "max {} ULP at {}", w.0, w.1);
    // Below −87.68 (and `-inf`) the result is 0; NaN stays NaN.
    for d in [-87.7f32, -88.0, -100.0, -1e30, f32::NEG_INFINITY] {
        assert_eq!(fast::exp(d), 0.0, "{d}");
    }
    assert!(fast::exp(f32::NAN).is_nan());
    assert_eq!(fast::exp(0.0), 1.0);
    assert_eq!(fast::exp(-0.0), 1.0);
}

/// A row of logits of the given kind.
fn row(seed: &mut u64, n: usize, kind: usize) -> Vec<f32> {
    let scale = [1.0f32, 4.0, 20.0, 200.0, 1e-3, 1e4][kind % 6];
    let mut x: Vec<f32> = (0..n).map(|_| unit(seed) * scale).collect();
    match kind / 6 {
        // An ascending ramp: the online pass of long rows moves its reference many times.
        1 => {
            for (i, v) in x.iter_mut().enumerate() {
                *v += i as f32 * (60.0 / n as f32);
            }
        }
        // `-inf` entries sprinkled in, and a leading run of them.
        2 => {
            for (i, v) in x.iter_mut().enumerate() {
                if i % 7 == 3 || i < n / 3 {
                    *v = f32::NEG_INFINITY;
                }
            }
        }
        _ => {}
    }
    x
}

/// The f64 reference: `(d_i, p_i)` with `d_i = x_i − max` and `p_i = softmax(x)_i`, and
/// `(ln Σ e^d, E_p|d|)`.
fn reference(x: &[f32]) -> (Vec<f64>, Vec<f64>, f64, f64) {
    let m = x.iter().fold(f64::NEG_INFINITY, |a, &b| a.max(b as f64));
    let d: Vec<f64> = x.iter().map(|&v| v as f64 - m).collect();
    let s: f64 = d.iter().map(|d| d.exp()).sum();
    let p: Vec<f64> = d.iter().map(|d| d.exp() / s).collect();
    let mean = p
        .iter()
        .zip(&d)
        .filter(|(p, _)| **p > 0.0)
        .map(|(p, d)| p * d.abs())
        .sum();
    (d, p, s.ln(), mean)
}

const U: f64 = 1.0 / (1u64 << 24) as f64;

#[test]
fn within_the_documented_bounds() {
    let mut seed = 11u64;
    let mut lens: Vec<usize> = (1..=70)
        .chain([255, 256, 257, 511, 512, 513, 1000])
        .collect();
    lens.push(if release() { (1 << 17) + 77 } else { 2000 });
    // Worst measured error over the documented bound's variable part.
    let (mut w_soft, mut w_log, mut w_lse) = (0.0f64, 0.0f64, 0.0f64);
    for &n in &lens {
        for kind in 0..18 {
            let x = row(&mut seed, n, kind);
            let (d, p, ln_s, mean) = reference(&x);
            let mut y = vec![0.0f32; n];
            fast::softmax(&x, &mut y, &softmax_core::Rows::new(n)).unwrap();
            for i in 0..n {
                if p[i] >= 1e-30 {
                    let rel = (y[i] as f64 - p[i]).abs() / p[i];
                    let c = rel - U * (d[i].abs() + mean);
                    w_soft = w_soft.max(c);
                    assert!(
                        c <= 4.2e-7,
                        "softmax n={n} kind={kind} i={i}: rel {rel:e}, d {}, E|d| {mean}",
                        d[i]
                    );
                } else {
                    assert!(y[i] as f64 <= 1.1e-30, "softmax n={n} kind={kind} i={i}");
                }
            }
            let mut y = vec![0.0f32; n];
            fast::log_softmax(&x, &mut y, &softmax_core::Rows::new(n)).unwrap();
            for i in 0..n {
                let want = d[i] - ln_s;
                if want.is_finite() {
                    let err = (y[i] as f64 - want).abs();
                    let c = err - U * (2.0 * d[i].abs() + mean + 2.0 * ln_s.abs());
                    w_log = w_log.max(c);
                    assert!(
                        c <= 2.4e-7,
                        "log_softmax n={n} kind={kind} i={i}: err {err:e}"
                    );
                } else {
                    assert_eq!(y[i], f32::NEG_INFINITY);
                }
            }
            let mut out = [0.0f32];
            fast::logsumexp(&x, &mut out, &softmax_core::Rows::new(n)).unwrap();
            let m = x.iter().fold(f64::NEG_INFINITY, |a, &b| a.max(b as f64));
            let want = m + ln_s;
            let err = (out[0] as f64 - want).abs();
            let c = err - U * (mean + 2.0 * ln_s.abs() + 2.0 * want.abs());
            w_lse = w_lse.max(c);
            assert!(c <= 2.4e-7, "logsumexp n={n} kind={kind}: err {err:e}");
        }
    }
    println!(
        "beyond the argument terms: softmax {w_soft:.3e} relative, log_softmax {w_log:.3e}, \
         logsumexp {w_lse:.3e} absolute"
    );
}

#[test]
fn edge_semantics_are_the_crates() {
    let inf = f32::INFINITY;
    let mut y = [0.0f32; 4];
    fast::softmax(&[1.0, inf, 0.0, inf], &mut y, &softmax_core::Rows::new(4)).unwrap();
    assert_eq!(y, [0.0, 0.5, 0.0, 0.5]);
    fast::softmax(&[-inf; 4], &mut y, &softmax_core::Rows::new(4)).unwrap();
    assert_eq!(y, [0.0; 4]);
    fast::log_softmax(&[-inf; 4], &mut y, &softmax_core::Rows::new(4)).unwrap();
    assert_eq!(y, [-inf; 4]);
    fast::softmax(
        &[1.0, f32::NAN, 0.0, 2.0],
        &mut y,
        &softmax_core::Rows::new(4),
    )
    .unwrap();
    assert!(y.iter().all(|v| v.is_nan()));
    fast::log_softmax(
        &[1.0, f32::NAN, 0.0, 2.0],
        &mut y,
        &softmax_core::Rows::new(4),
    )
    .unwrap();
    assert!(y.iter().all(|v| v.is_nan()));
    let mut out = [0.0f32; 2];
    fast::logsumexp(
        &[-inf, -inf, 0.0, f32::NAN],
        &mut out,
        &softmax_core::Rows::new(2),
    )
    .unwrap();
    assert_eq!(out[0], -inf);
    assert!(out[1].is_nan());
    // Finite extremes.
    fast::softmax(
        &[3.4e38, -3.4e38, 3.4e38, 0.0],
        &mut y,
        &softmax_core::Rows::new(4),
    )
    .unwrap();
    assert_eq!(y, [0.5, 0.0, 0.5, 0.0]);
    fast::softmax(
        &[1e-45, -1e-45, 0.0, 1e-40],
        &mut y,
        &softmax_core::Rows::new(4),
    )
    .unwrap();
    assert_eq!(y, [0.25; 4]);
    // Errors.
    assert_eq!(
        fast::softmax(&[1.0], &mut [0.0], &softmax_core::Rows::new(0)),
        Err(Error::EmptyRow)
    );
    assert_eq!(
        fast::softmax(&[1.0, 2.0, 3.0], &mut [0.0; 3], &softmax_core::Rows::new(2)),
        Err(Error::RaggedBatch { len: 3, n: 2 })
    );
    assert_eq!(
        fast::log_softmax(&[1.0, 2.0], &mut [0.0; 3], &softmax_core::Rows::new(2)),
        Err(Error::LengthMismatch {
            expected: 2,
            found: 3
        })
    );
    assert_eq!(
        fast::logsumexp(&[1.0, 2.0], &mut [0.0; 2], &softmax_core::Rows::new(2)),
        Err(Error::LengthMismatch {
            expected: 1,
            found: 2
        })
    );
    // An empty batch is zero rows.
    assert_eq!(
        fast::softmax(&[], &mut [], &softmax_core::Rows::new(4)),
        Ok(())
    );
    // A mask or a temperature is the default kernels' (rows::), not the fast variant's; the
    // structural checks come first, the output is untouched.
    let keep = [true, false];
    let mut y = [7.0f32; 2];
    let masked = softmax_core::Rows::new(2).with_keep(&keep);
    assert_eq!(
        fast::softmax(&[1.0, 2.0], &mut y, &masked),
        Err(Error::FastSpec)
    );
    let tempered = softmax_core::Rows::new(2).with_temperature(0.5);
    assert_eq!(
        fast::log_softmax(&[1.0, 2.0], &mut y, &tempered),
        Err(Error::FastSpec)
    );
    assert_eq!(
        fast::logsumexp(&[1.0, 2.0], &mut y[..1], &tempered),
        Err(Error::FastSpec)
    );
    assert_eq!(
        fast::softmax(
            &[1.0, 2.0],
            &mut y,
            &softmax_core::Rows::new(2).with_temperature(0.0)
        ),
        Err(Error::InvalidTemperature)
    );
    assert_eq!(
        fast::softmax(&[1.0, 2.0, 3.0], &mut [0.0; 3], &masked),
        Err(Error::RaggedBatch { len: 3, n: 2 })
    );
    assert_eq!(y, [7.0; 2]);
}

/// All three ops on `x` as rows of `n`, concatenated.
fn all_ops(x: &[f32], n: usize) -> Vec<f32> {
    let mut y = vec![0.0f32; x.len()];
    fast::softmax(x, &mut y, &softmax_core::Rows::new(n)).unwrap();
    let mut z = vec![0.0f32; x.len()];
    fast::log_softmax(x, &mut z, &softmax_core::Rows::new(n)).unwrap();
    let mut w = vec![0.0f32; x.len() / n];
    fast::logsumexp(x, &mut w, &softmax_core::Rows::new(n)).unwrap();
    y.extend(z);
    y.extend(w);
    y
}

fn same(a: &[f32], b: &[f32]) -> bool {
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|(x, y)| x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan()))
}

/// The kernel levels this CPU runs (AVX2+FMA, AVX-512), each compared with the portable
/// reference (`Baseline`); empty where the dispatch is not compiled (debug builds, other
/// targets) or the CPU has neither.
fn kernel_levels() -> Vec<Level> {
    let detected = simd::detected();
    let levels: Vec<Level> = [Level::Avx2, Level::Avx512]
        .into_iter()
        .filter(|&l| l <= detected)
        .collect();
    for l in [Level::Avx2, Level::Avx512] {
        if !levels.contains(&l) {
            println!("{l:?}: not on this CPU or not compiled in this build, not compared here");
        }
    }
    levels
}

/// `ops` at `level` and at the portable reference's level, the same bits.
fn same_at(level: Level, ops: impl Fn() -> Vec<f32>) -> bool {
    simd::set_max_level(level);
    assert_eq!(simd::level(), level, "the level would not run");
    let a = ops();
    simd::set_max_level(Level::Baseline);
    let b = ops();
    simd::set_max_level(Level::Avx512);
    same(&a, &b)
}

#[test]
fn kernel_bits_equal_the_portable_reference() {
    let levels = kernel_levels();
    println!("comparing the kernels at {levels:?} with the portable reference");
    let mut seed = 5u64;
    let mut lens: Vec<usize> = (1..=600).chain([1000, 4095, 4096, 4097, 8191]).collect();
    if release() {
        lens.extend([(1 << 17) - 1, 1 << 17, (1 << 17) + 33, 300_001]);
    }
    let mut cases = 0;
    for &n in &lens {
        for kind in 0..18 {
            let mut x = row(&mut seed, n, kind);
            if kind == 5 && n > 3 {
                x[n / 2] = f32::NAN;
            }
            if kind == 11 && n > 40 {
                x[n - 37] = f32::INFINITY;
            }
            if kind == 4 {
                for v in x.iter_mut().step_by(3) {
                    *v *= 1e-38; // subnormals
                }
            }
            // Two rows of `n`: the batch loop too.
            let mut two = x.clone();
            two.extend(x.iter().map(|v| -v));
            for &level in &levels {
                assert!(
                    same_at(level, || all_ops(&two, n)),
                    "{level:?} n={n} kind={kind}"
                );
            }
            cases += 1;
        }
    }
    assert_eq!(cases, lens.len() * 18);
    // Batches of short rows (the kernels compute rows of up to 256 values eight at a time):
    // 19 rows of every length up to 300, two groups of eight and three rows alone, the rows of
    // every kind; in some batches a group holds a row whose maximum is not finite (a `+inf`
    // entry, or only `-inf`), which the kernels then compute row by row.
    for n in 1..=300 {
        for variant in 0..3 {
            let mut x = Vec::new();
            for r in 0..19 {
                let mut v = row(&mut seed, n, (r * 5 + n + variant) % 18);
                if variant == 1 && r == 3 {
                    v[n / 2] = f32::INFINITY;
                }
                if variant == 2 && r == 12 {
                    v.fill(f32::NEG_INFINITY);
                }
                if variant == 2 && r == 6 {
                    v[n - 1] = f32::NAN;
                }
                x.extend(v);
            }
            for &level in &levels {
                assert!(
                    same_at(level, || all_ops(&x, n)),
                    "{level:?} batch n={n} variant={variant}"
                );
            }
        }
    }
    // Rows long enough for the kernel's non-temporal output stores (2^23 values), at output
    // addresses of every alignment mod 64 bytes that a 4-byte float can have, at every level.
    if release() {
        let n = (1 << 23) + 5;
        let x = row(&mut seed, n, 7);
        let run = |op: usize, y: &mut [f32]| match op {
            0 => fast::softmax(&x, y, &softmax_core::Rows::new(n)).unwrap(),
            _ => fast::log_softmax(&x, y, &softmax_core::Rows::new(n)).unwrap(),
        };
        let mut buf = vec![0.0f32; n + 16];
        for op in 0..2 {
            let mut want = vec![0.0f32; n];
            simd::set_max_level(Level::Baseline);
            run(op, &mut want);
            for &level in &levels {
                simd::set_max_level(level);
                for off in 0..16 {
                    run(op, &mut buf[off..off + n]);
                    assert!(
                        same(&buf[off..off + n], &want),
                        "long row, {level:?}, op {op}, offset {off}"
                    );
                }
            }
            simd::set_max_level(Level::Avx512);
        }
    }
}
