//! Measured accuracy of every exp/ln backend, the figures the backend docs state.
//!
//! f32 functions are checked against `libm::exp`/`libm::log` in f64 (errors below 1e-16 relative,
//! so the f32 distance to them is the distance to the true value to within 1e-8 ULP). A
//! real-valued error below 1 ULP means the result is one of the two floats around the true
//! value, hence at most 1 ULP from the correctly rounded one.
//!
//! The f32 Poly exp sweep is strided here (every 61st bit pattern, ~37M inputs with a normal
//! result); set `SOFTMAX_EXHAUSTIVE=1` to check every f32 input (2^32 patterns, ~30 s in release
//! on 2 cores: `SOFTMAX_EXHAUSTIVE=1 cargo test --release -p harness --test backend_accuracy`).
//!
//! f64 functions are checked against correctly rounded values computed with mpmath
//! (`harness/reference-data/exp_ln_f64.json`, regenerate with `gen_exp_ln_f64.py`).

use softmax_core::backend::{Backend, Libm, MicroMath, Poly};

/// Distance in units of the f32 ulp at the true value `e`, and whether `y` is a finite normal.
fn ulps_f32(y: f32, e: f64) -> f64 {
    let cr = e as f32;
    let ulp = (f32::from_bits(cr.to_bits() + 1) as f64 - cr as f64).abs();
    (y as f64 - e).abs() / ulp
}

struct Sweep {
    worst: f64,
    at: f32,
    n: u64,
}

/// Sweeps f32 bit patterns `start, start + stride, …` below `end`, over inputs whose reference
/// result is a normal f32, and returns the worst real-valued ULP error of `f` against `reference`.
fn sweep(start: u64, end: u64, stride: u64, f: fn(f32) -> f32, reference: fn(f64) -> f64) -> Sweep {
    let mut s = Sweep {
        worst: 0.0,
        at: 0.0,
        n: 0,
    };
    let mut b = start;
    while b < end {
        let x = f32::from_bits(b as u32);
        b += stride;
        if !x.is_finite() {
            continue;
        }
        let e = reference(x as f64);
        if !(e.abs() >= f32::MIN_POSITIVE as f64 && e.abs() <= f32::MAX as f64) {
            continue;
        }
        s.n += 1;
        let err = ulps_f32(f(x), e);
        if err > s.worst || err.is_nan() {
            s.worst = if err.is_nan() { f64::INFINITY } else { err };
            s.at = x;
        }
    }
    s
}

/// Runs `sweep` over all patterns on two threads when exhaustive, strided otherwise.
fn sweep_all(f: fn(f32) -> f32, reference: fn(f64) -> f64, stride: u64) -> Sweep {
    let exhaustive = std::env::var("SOFTMAX_EXHAUSTIVE").is_ok_and(|v| v == "1");
    let stride = if exhaustive { 1 } else { stride };
    let half = 1u64 << 31;
    let h = std::thread::spawn(move || sweep(0, half, stride, f, reference));
    let a = sweep(half, 1u64 << 32, stride, f, reference);
    let b = h.join().unwrap();
    let (worst, at) = if a.worst >= b.worst {
        (a.worst, a.at)
    } else {
        (b.worst, b.at)
    };
    println!(
        "{} inputs ({}), worst {worst:.4} ULP at {at:e}",
        a.n + b.n,
        if exhaustive { "exhaustive" } else { "strided" }
    );
    Sweep {
        worst,
        at,
        n: a.n + b.n,
    }
}

fn poly_exp(x: f32) -> f32 {
    <Poly as Backend<f32>>::exp(x)
}
fn poly_exp_shifted(x: f32) -> f32 {
    if x <= 0.0 {
        <Poly as Backend<f32>>::exp_shifted(x, 0.0)
    } else {
        // Outside its domain: compare the general exp instead, so the sweep stays meaningful.
        <Poly as Backend<f32>>::exp(x)
    }
}
fn poly_ln(x: f32) -> f32 {
    <Poly as Backend<f32>>::ln(x)
}
fn libm_exp(x: f32) -> f32 {
    <Libm as Backend<f32>>::exp(x)
}
fn libm_ln(x: f32) -> f32 {
    <Libm as Backend<f32>>::ln(x)
}

#[test]
fn poly_exp_f32_within_one_ulp() {
    let s = sweep_all(poly_exp, f64::exp, 61);
    assert!(s.n > 30_000_000 || s.n > 2_000_000_000);
    assert!(
        s.worst < 1.0,
        "Poly exp f32: {:.4} ULP at {:e}",
        s.worst,
        s.at
    );
}

#[test]
fn poly_exp_shifted_f32_within_one_ulp() {
    let s = sweep_all(poly_exp_shifted, f64::exp, 61);
    assert!(
        s.worst < 1.0,
        "Poly exp_shifted f32: {:.4} ULP at {:e}",
        s.worst,
        s.at
    );
    // With a tail: e^(hi + lo) for lo up to an ulp of hi, against the exact sum in f64.
    let mut worst = 0.0f64;
    let mut state = 1u64;
    for _ in 0..2_000_000 {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let hi = -((state >> 40) as f32 / (1u64 << 24) as f32) * 87.0;
        let lo = hi * f32::EPSILON * (((state >> 8) & 0xffff) as f32 / 65536.0 - 0.5);
        let e = (hi as f64 + lo as f64).exp();
        if e < f32::MIN_POSITIVE as f64 {
            continue;
        }
        worst = worst.max(ulps_f32(<Poly as Backend<f32>>::exp_shifted(hi, lo), e));
    }
    println!("exp_shifted with tails: worst {worst:.4} ULP");
    assert!(worst < 1.0, "Poly exp_shifted with tail: {worst}");
}

/// `exp_pow2(x, 0, 60)` (the hot loops' exp) against `e^x·2^60`, over the f32 `x` in
/// [-105.3, 0] whose result is kept (at least 2^-92) and in (0, 2.5] (the online pass of long
/// rows); every 61st bit pattern, or every one with `SOFTMAX_EXHAUSTIVE=1`. Then with tails, as
/// for `exp_shifted`, and its chunk form bit for bit.
#[test]
fn poly_exp_pow2_f32_within_one_ulp() {
    let exhaustive = std::env::var("SOFTMAX_EXHAUSTIVE").is_ok_and(|v| v == "1");
    let stride = if exhaustive { 1 } else { 61 };
    let scale = 2f64.powi(60);
    let (start, end) = (0x8000_0000u64, (-105.3f32).to_bits() as u64);
    // The positive arguments the online pass of long rows uses: (0, 2.5].
    let pos = |stride: u64| {
        let mut worst = 0.0f64;
        let mut b = 1u64;
        while b <= 2.5f32.to_bits() as u64 {
            let x = f32::from_bits(b as u32);
            b += stride;
            let got = <Poly as Backend<f32>>::exp_pow2(x, 0.0, 60);
            worst = worst.max(ulps_f32(got, (x as f64).exp() * 2f64.powi(60)));
        }
        worst
    };
    let wp = pos(stride);
    println!("exp_pow2 on (0, 2.5]: worst {wp:.4} ULP");
    assert!(wp < 1.0, "Poly exp_pow2 f32 on (0, 2.5]: {wp:.4} ULP");
    let run = move |lo: u64, hi: u64| {
        let (mut worst, mut at, mut n) = (0.0f64, 0.0f32, 0u64);
        let mut b = lo;
        while b < hi {
            let x = f32::from_bits(b as u32);
            b += stride;
            let want = (x as f64).exp() * scale;
            let got = <Poly as Backend<f32>>::exp_pow2(x, 0.0, 60);
            n += 1;
            let err = ulps_f32(got, want);
            if err > worst || err.is_nan() {
                worst = if err.is_nan() { f64::INFINITY } else { err };
                at = x;
            }
        }
        (worst, at, n)
    };
    let mid = start + (end - start) / 2;
    let h = std::thread::spawn(move || run(start, mid));
    let a = run(mid, end);
    let b = h.join().unwrap();
    let (worst, at) = if a.0 >= b.0 { (a.0, a.1) } else { (b.0, b.1) };
    println!(
        "exp_pow2: {} inputs ({}), worst {worst:.4} ULP at {at:e}",
        a.2 + b.2,
        if exhaustive { "exhaustive" } else { "strided" }
    );
    assert!(worst < 1.0, "Poly exp_pow2 f32: {worst:.4} ULP at {at:e}");
    // Below the kept range: exactly 0. Every NaN stays NaN, whatever its sign and payload (the
    // scale must not be added to a NaN's bits).
    assert_eq!(<Poly as Backend<f32>>::exp_pow2(-106.0, 0.0, 60), 0.0);
    for bits in [
        0x7fc0_0000u32,
        0xffc0_0000,
        0x7fc0_01ff,
        0xffff_ffff,
        0x7f80_0001,
    ] {
        let nan = f32::from_bits(bits);
        assert!(
            <Poly as Backend<f32>>::exp_pow2(nan, 0.0, 60).is_nan(),
            "{bits:#x}"
        );
        assert!(
            <Poly as Backend<f32>>::exp_pow2_chunk(&[nan; 16], &[0.0; 16], 60)
                .iter()
                .all(|v| v.is_nan())
        );
        assert!(<Poly as Backend<f64>>::exp_pow2(nan as f64, 0.0, 60).is_nan());
    }

    let mut worst = 0.0f64;
    let mut state = 3u64;
    let mut chunk_hi = [0.0f32; 16];
    let mut chunk_lo = [0.0f32; 16];
    for i in 0..2_000_000usize {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let hi = -((state >> 40) as f32 / (1u64 << 24) as f32) * 105.0;
        let lo = hi * f32::EPSILON * (((state >> 8) & 0xffff) as f32 / 65536.0 - 0.5);
        let got = <Poly as Backend<f32>>::exp_pow2(hi, lo, 60);
        chunk_hi[i % 16] = hi;
        chunk_lo[i % 16] = lo;
        if i % 16 == 15 {
            let c = <Poly as Backend<f32>>::exp_pow2_chunk(&chunk_hi, &chunk_lo, 60);
            for j in 0..16 {
                let one = <Poly as Backend<f32>>::exp_pow2(chunk_hi[j], chunk_lo[j], 60);
                assert_eq!(c[j].to_bits(), one.to_bits(), "chunk form differs");
            }
        }
        let want = (hi as f64 + lo as f64).exp() * scale;
        if want < 2f64.powi(-92) {
            continue;
        }
        worst = worst.max(ulps_f32(got, want));
    }
    println!("exp_pow2 with tails: worst {worst:.4} ULP");
    assert!(worst < 1.0, "Poly exp_pow2 with tail: {worst}");
}

#[test]
fn poly_ln_f32_within_one_ulp() {
    let s = sweep_all(poly_ln, f64::ln, 61);
    assert!(
        s.worst < 1.0,
        "Poly ln f32: {:.4} ULP at {:e}",
        s.worst,
        s.at
    );
}

#[test]
fn libm_f32_within_one_ulp() {
    let e = sweep_all(libm_exp, f64::exp, 211);
    let l = sweep_all(libm_ln, f64::ln, 211);
    assert!(
        e.worst < 1.0 && l.worst < 1.0,
        "libm exp {} ln {}",
        e.worst,
        l.worst
    );
}

#[test]
fn special_values_every_backend() {
    fn check<B: Backend<f32>>() {
        assert_eq!(B::exp(f32::NEG_INFINITY), 0.0, "{}", B::NAME);
        assert_eq!(B::exp(f32::INFINITY), f32::INFINITY, "{}", B::NAME);
        assert!(B::exp(f32::NAN).is_nan(), "{}", B::NAME);
        assert_eq!(B::exp(0.0), 1.0, "{}", B::NAME);
        assert_eq!(B::exp(100.0), f32::INFINITY, "{}", B::NAME);
        assert_eq!(B::exp(-200.0), 0.0, "{}", B::NAME);
        assert_eq!(
            B::exp_shifted(f32::NEG_INFINITY, f32::NAN),
            0.0,
            "{}",
            B::NAME
        );
        assert_eq!(B::exp_shifted(0.0, 0.0), 1.0, "{}", B::NAME);
        assert!(B::exp_shifted(f32::NAN, 0.0).is_nan(), "{}", B::NAME);
        assert_eq!(B::ln(0.0), f32::NEG_INFINITY, "{}", B::NAME);
        assert_eq!(B::ln(f32::INFINITY), f32::INFINITY, "{}", B::NAME);
        assert!(
            B::ln(-1.0).is_nan() && B::ln(f32::NAN).is_nan(),
            "{}",
            B::NAME
        );
        assert_eq!(B::ln(1.0), 0.0, "{}", B::NAME);
    }
    fn check64<B: Backend<f64>>() {
        assert_eq!(B::exp(f64::NEG_INFINITY), 0.0);
        assert_eq!(B::exp(f64::INFINITY), f64::INFINITY);
        assert!(B::exp(f64::NAN).is_nan());
        assert_eq!(B::exp(0.0), 1.0);
        assert_eq!(B::exp(710.0), f64::INFINITY);
        assert_eq!(B::exp(-800.0), 0.0);
        assert_eq!(B::exp_shifted(f64::NEG_INFINITY, f64::NAN), 0.0);
        assert_eq!(B::ln(0.0), f64::NEG_INFINITY);
        assert!(B::ln(-1.0).is_nan());
        assert_eq!(B::ln(1.0), 0.0);
    }
    check::<Poly>();
    check::<Libm>();
    check::<MicroMath>();
    check64::<Poly>();
    check64::<Libm>();
    // Subnormal results round once: e^-100 = 3.72e-44 (26 subnormal ulps).
    let want = (-100.0f64).exp();
    let got = <Poly as Backend<f32>>::exp(-100.0) as f64;
    assert!(
        (got - want).abs() <= 0.5 * f32::from_bits(1) as f64 * 1.01,
        "{got:e} vs {want:e}"
    );
    assert_eq!(<Poly as Backend<f32>>::exp_shifted(-100.0, 0.0) as f64, got);
    // Subnormal arguments of ln.
    let x = f32::from_bits(5);
    let l = <Poly as Backend<f32>>::ln(x) as f64;
    assert!(ulps_f32(l as f32, (x as f64).ln()) < 1.0);
}

/// micromath is approximate by design; this measures the figures its docs state.
#[test]
fn micromath_measured_error() {
    let (mut exp_rel, mut ln_abs, mut ln_rel) = (0.0f64, 0.0f64, 0.0f64);
    let mut b = 0u64;
    while b < 1u64 << 32 {
        let x = f32::from_bits(b as u32);
        b += 977;
        if x.is_finite() && x > -87.0 && x < 88.0 {
            let e = (x as f64).exp();
            exp_rel = exp_rel.max(((<MicroMath as Backend<f32>>::exp(x) as f64) - e).abs() / e);
        } else if x.is_finite() && x > -104.0 && x <= -87.0 {
            // Subnormal results: the relative error plus one subnormal spacing.
            let e = (x as f64).exp();
            let got = <MicroMath as Backend<f32>>::exp(x) as f64;
            assert!(
                (got - e).abs() <= 2.4e-3 * e + 1.5e-45,
                "micromath exp({x:e}) = {got:e}, want {e:e}"
            );
        }
        if x.is_finite() && x > 0.0 {
            let l = (x as f64).ln();
            let err = ((<MicroMath as Backend<f32>>::ln(x) as f64) - l).abs();
            ln_abs = ln_abs.max(err);
            if l.abs() > 1e-3 {
                ln_rel = ln_rel.max(err / l.abs());
            }
        }
    }
    println!("micromath: exp max rel {exp_rel:e}, ln max abs {ln_abs:e}, ln max rel (|ln x| > 1e-3) {ln_rel:e}");
    // The bounds the MicroMath docs state.
    assert!(exp_rel <= 2.4e-3, "micromath exp rel {exp_rel:e}");
    assert!(ln_abs <= 1.0e-4, "micromath ln abs {ln_abs:e}");
}

/// f64 exp and ln against correctly rounded mpmath values.
#[test]
fn f64_backends_against_mpmath() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/reference-data/exp_ln_f64.json"
    );
    let text = std::fs::read_to_string(path).expect("reference data");
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    let bits = |s: &serde_json::Value| {
        f64::from_bits(u64::from_str_radix(s.as_str().unwrap(), 16).unwrap())
    };
    let ulp = |y: f64| (f64::from_bits(y.abs().to_bits() + 1) - y.abs()).abs();
    for (name, f_poly, f_libm) in [
        (
            "exp",
            <Poly as Backend<f64>>::exp as fn(f64) -> f64,
            <Libm as Backend<f64>>::exp as fn(f64) -> f64,
        ),
        ("ln", <Poly as Backend<f64>>::ln, <Libm as Backend<f64>>::ln),
    ] {
        let cases = v[name].as_array().unwrap();
        assert!(cases.len() >= 5000);
        let (mut wp, mut wl) = (0u64, 0u64);
        for c in cases {
            let (x, want) = (bits(&c[0]), bits(&c[1]));
            for (f, w) in [(f_poly, &mut wp), (f_libm, &mut wl)] {
                let got = f(x);
                let d = (got.to_bits() as i64 - want.to_bits() as i64).unsigned_abs();
                assert!(
                    d <= 1,
                    "{name}({x:e}) = {got:e}, correctly rounded {want:e} ({d} ulp, ulp {:e})",
                    ulp(want)
                );
                *w = (*w).max(d);
            }
        }
        println!(
            "f64 {name}: Poly max {wp} ULP, Libm max {wl} ULP over {} correctly rounded cases",
            cases.len()
        );
    }
    // exp_pow2(x, 0, 60) = e^x·2^60: the correctly rounded e^x times 2^60 (exact while e^x is
    // normal), for the x <= 0 whose result is kept.
    let (mut wp, mut wl, mut n) = (0u64, 0u64, 0);
    for c in v["exp"].as_array().unwrap() {
        let (x, want) = (bits(&c[0]), bits(&c[1]));
        if x > 0.0 || want < f64::MIN_POSITIVE || want * 2f64.powi(60) < 2f64.powi(-1016) {
            continue;
        }
        let want = want * 2f64.powi(60);
        n += 1;
        for (got, w) in [
            (<Poly as Backend<f64>>::exp_pow2(x, 0.0, 60), &mut wp),
            (<Libm as Backend<f64>>::exp_pow2(x, 0.0, 60), &mut wl),
        ] {
            let d = (got.to_bits() as i64 - want.to_bits() as i64).unsigned_abs();
            assert!(
                d <= 1,
                "exp_pow2({x:e}, 0, 60) = {got:e}, want {want:e} ({d} ulp)"
            );
            *w = (*w).max(d);
        }
    }
    assert!(n > 1000);
    println!("f64 exp_pow2: Poly max {wp} ULP, Libm max {wl} ULP over {n} cases");
}
