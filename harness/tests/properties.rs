//! Property tests for softmax-core: the invariants of shared/DESIGN.md that concern the softmax
//! family, and agreement with the naive f64 reference of `harness::reference`.
//!
//! Tolerances: softmax outputs are compared relatively (2e-6 for f32 outputs >= 1e-30, the
//! crate's stated bound); log-domain outputs absolutely, with `|err| <= 4·2⁻²⁴·(1 + |y|)`:
//! an f32 result carries half an ulp of `|y|` from its own rounding, plus the exp/ln/sum errors
//! (a few 2⁻²⁴) that enter `ln Σ` absolutely.

use harness::reference as r;
use proptest::prelude::*;
use softmax_core::backend::{Backend, Libm, MicroMath, Poly};
use softmax_core::{rows, LogSumExp, Rows};

const U: f64 = 1.0 / 16_777_216.0; // 2^-24, unit roundoff of f32

/// Logit rows: mostly moderate, sometimes wide, with mixed magnitudes (the case where `x − max`
/// is inexact in f32), ties, and large offsets.
fn logits(max_len: usize) -> impl Strategy<Value = Vec<f32>> {
    let scale = prop_oneof![Just(1.0f32), Just(10.0), Just(40.0), Just(1e-3)];
    let offset = prop_oneof![Just(0.0f32), Just(100.0), Just(-1.0e4), Just(3.0e5)];
    (
        scale,
        offset,
        prop::collection::vec(-1.0f32..1.0, 1..max_len),
        any::<u64>(),
    )
        .prop_map(|(s, o, u, seed)| {
            let mut v: Vec<f32> = u.iter().map(|&u| u * s + o).collect();
            // Deterministic ties and magnitude mixes driven by the seed.
            if seed % 5 == 0 && v.len() > 2 {
                let a = v[0];
                let last = v.len() - 1;
                v[last] = a;
            }
            if seed % 7 == 0 {
                for (i, x) in v.iter_mut().enumerate() {
                    if i % 3 == 0 {
                        *x *= 1e-4;
                    }
                }
            }
            v
        })
}

fn widen(x: &[f32]) -> Vec<f64> {
    x.iter().map(|&v| v as f64).collect()
}

fn check_probs(
    got: &[f32],
    want: &[f64],
    extra: impl Fn(usize) -> f64,
) -> Result<(), TestCaseError> {
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        let tol = 2e-6 + extra(i);
        if w >= 1e-30 {
            let rel = ((g as f64) - w).abs() / w;
            prop_assert!(
                rel <= tol,
                "index {i}: got {g:e}, want {w:e}, rel {rel:e} > {tol:e}"
            );
        } else {
            // Below 1e-30 (outside the stated bound) the same relative error plus the spacing of
            // the f32 subnormals (2^-149 = 1.4e-45), which is all an underflowing result can keep.
            let err = ((g as f64) - w).abs();
            prop_assert!(
                err <= tol * w + 1.5e-45,
                "index {i}: got {g:e}, want {w:e}, err {err:e}"
            );
        }
    }
    Ok(())
}

fn check_log(got: f32, want: f64, what: &str) -> Result<(), TestCaseError> {
    let err = ((got as f64) - want).abs();
    let tol = 4.0 * U * (1.0 + want.abs());
    prop_assert!(
        err <= tol,
        "{what}: got {got:e}, want {want:e}, err {err:e} > {tol:e}"
    );
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn softmax_matches_f64_reference(x in logits(300)) {
        let want = r::softmax(&widen(&x), 1.0, None);
        for backend in 0..2 {
            let mut y = vec![0.0f32; x.len()];
            if backend == 0 {
                softmax_core::softmax(Poly, &x, &mut y).unwrap();
            } else {
                softmax_core::softmax(Libm, &x, &mut y).unwrap();
            }
            check_probs(&y, &want, |_| 0.0)?;
        }
    }

    #[test]
    fn softmax_with_temperature_matches_reference(x in logits(200), t in prop_oneof![Just(0.05f32), Just(0.5), Just(2.0), Just(10.0)]) {
        let want = r::softmax(&widen(&x), t as f64, None);
        let mut y = vec![0.0f32; x.len()];
        softmax_core::softmax_with_temperature(Poly, &x, t, &mut y).unwrap();
        // The documented extra error: each quotient d_j = (x_j − max)/τ is rounded once
        // (|error| <= 2^-24·|d_j|), which moves output i by 2^-24·(|d_i| + Σ_j p_j·|d_j|).
        let m = x.iter().cloned().fold(f32::NEG_INFINITY, f32::max) as f64;
        let d: Vec<f64> = x.iter().map(|&v| (v as f64 - m).abs() / t as f64).collect();
        let mean_d: f64 = want.iter().zip(&d).map(|(p, d)| p * d).sum();
        check_probs(&y, &want, |i| U * (d[i] + mean_d))?;
    }

    #[test]
    fn log_softmax_and_logsumexp_match_reference(x in logits(300)) {
        let xd = widen(&x);
        let want = r::log_softmax(&xd, 1.0, None);
        let mut y = vec![0.0f32; x.len()];
        softmax_core::log_softmax(Poly, &x, &mut y).unwrap();
        for (i, (&g, &w)) in y.iter().zip(&want).enumerate() {
            check_log(g, w, &format!("log_softmax[{i}]"))?;
        }
        check_log(softmax_core::logsumexp(Poly, &x).unwrap(), r::logsumexp(&xd, 1.0, None), "logsumexp")?;
    }

    #[test]
    fn entropy_matches_reference(x in logits(200), t in prop_oneof![Just(0.25f32), Just(1.0), Just(4.0)]) {
        let want = r::entropy(&widen(&x), t as f64, None);
        let got = softmax_core::entropy(Poly, &x, t).unwrap() as f64;
        // Relative for H >= 1e-30; the x/τ rounding enters as in the softmax test.
        let m = x.iter().cloned().fold(f32::NEG_INFINITY, f32::max) as f64;
        let spread = x.iter().map(|&v| (v as f64 - m).abs()).fold(0.0, f64::max) / t as f64;
        let tol = 1e-5 * want + 8.0 * U * (1.0 + spread) * want.max(1e-30) + 1e-37;
        prop_assert!((got - want).abs() <= tol.max(4.0 * U * want), "H got {got:e} want {want:e}");
        let ln_n = (x.len() as f64).ln();
        prop_assert!(got >= 0.0 && got <= ln_n * (1.0 + 4.0 * U), "H = {got} outside [0, ln n = {ln_n}]");
    }

    /// Tiny terms in the same lane and block as the maximum (indices 0, 16, 32, …): the entropy
    /// and the log-probability of the max are ~e^d and must keep their relative precision.
    #[test]
    fn peaked_rows_keep_relative_precision(gap in 20.0f32..80.0, n in 2usize..5, jitter in prop::collection::vec(0.0f32..1.0, 5)) {
        let mut x = vec![-1000.0f32; 16 * n];
        x[0] = 0.0;
        for j in 1..n {
            x[16 * j] = -gap - jitter[j];
        }
        let xd = widen(&x);
        let h = softmax_core::entropy(Poly, &x, 1.0).unwrap() as f64;
        let want = r::entropy(&xd, 1.0, None);
        prop_assert!(((h - want) / want).abs() <= 1e-5, "H {h:e} want {want:e}");
        let mut y = vec![0.0f32; x.len()];
        softmax_core::log_softmax(Poly, &x, &mut y).unwrap();
        let want0 = r::log_softmax(&xd, 1.0, None)[0];
        prop_assert!(((y[0] as f64 - want0) / want0).abs() <= 1e-5, "log p_max {:e} want {want0:e}", y[0]);
    }

    #[test]
    fn rows_sum_to_one_and_preserve_order(x in logits(300)) {
        let mut y = vec![0.0f32; x.len()];
        softmax_core::softmax(Poly, &x, &mut y).unwrap();
        let s: f64 = y.iter().map(|&v| v as f64).sum();
        prop_assert!((s - 1.0).abs() <= 4e-6, "sum {s}");
        for i in 0..x.len() {
            for j in 0..x.len() {
                if x[i] < x[j] {
                    prop_assert!(y[i] <= y[j], "order: x[{i}]={} < x[{j}]={} but y {} > {}", x[i], x[j], y[i], y[j]);
                }
            }
        }
    }

    /// The shift x − max is computed exactly, so an exact shift of the input changes no bit.
    #[test]
    fn shift_invariance_is_bitwise(k in prop::collection::vec(-8000i32..8000, 1..200), c in -100_000i32..100_000) {
        let x: Vec<f32> = k.iter().map(|&k| k as f32 / 8.0).collect();
        let xs: Vec<f32> = k.iter().map(|&k| (k + c * 8) as f32 / 8.0).collect(); // exact in f32
        let (mut a, mut b) = (vec![0.0f32; x.len()], vec![0.0f32; x.len()]);
        softmax_core::softmax(Poly, &x, &mut a).unwrap();
        softmax_core::softmax(Poly, &xs, &mut b).unwrap();
        prop_assert_eq!(a.iter().map(|v| v.to_bits()).collect::<Vec<_>>(), b.iter().map(|v| v.to_bits()).collect::<Vec<_>>());
        softmax_core::log_softmax(Poly, &x, &mut a).unwrap();
        softmax_core::log_softmax(Poly, &xs, &mut b).unwrap();
        prop_assert_eq!(a.iter().map(|v| v.to_bits()).collect::<Vec<_>>(), b.iter().map(|v| v.to_bits()).collect::<Vec<_>>());
    }

    #[test]
    fn logsumexp_bounds(x in logits(300)) {
        let lse = softmax_core::logsumexp(Poly, &x).unwrap();
        let m = x.iter().cloned().fold(f32::NEG_INFINITY, f32::max);
        prop_assert!(lse >= m, "lse {lse} < max {m}");
        let upper = m as f64 + (x.len() as f64).ln();
        prop_assert!(lse as f64 <= upper + 2.0 * U * upper.abs().max(1.0), "lse {lse} > max + ln n = {upper}");
    }

    /// ‖softmax(x + ε) − softmax(x)‖₁ <= ‖ε‖∞ (the bound is tight; the seeds' eq. 22).
    #[test]
    fn softmax_is_1_lipschitz_l1_linf(x in prop::collection::vec(-5.0f64..5.0, 1..64), e in prop::collection::vec(-0.5f64..0.5, 64)) {
        let xe: Vec<f64> = x.iter().zip(&e).map(|(a, b)| a + b).collect();
        let (mut a, mut b) = (vec![0.0f64; x.len()], vec![0.0f64; x.len()]);
        softmax_core::softmax(Poly, &x, &mut a).unwrap();
        softmax_core::softmax(Poly, &xe, &mut b).unwrap();
        let l1: f64 = a.iter().zip(&b).map(|(p, q)| (p - q).abs()).sum();
        let linf = x.iter().zip(&xe).map(|(p, q)| (p - q).abs()).fold(0.0, f64::max);
        prop_assert!(l1 <= linf + 1e-14, "l1 {l1} > linf {linf}");
    }

    #[test]
    fn temperature_limits(x in prop::collection::vec(-10.0f32..10.0, 2..50)) {
        let mut y = vec![0.0f32; x.len()];
        // τ → ∞: uniform.
        softmax_core::softmax_with_temperature(Poly, &x, 1e7, &mut y).unwrap();
        let u = 1.0 / x.len() as f32;
        prop_assert!(y.iter().all(|&v| (v - u).abs() <= 4e-6 * u.max(1.0)), "not uniform: {y:?}");
        // τ → 0: all mass on the maxima, shared evenly.
        softmax_core::softmax_with_temperature(Poly, &x, 1e-30, &mut y).unwrap();
        let m = x.iter().cloned().fold(f32::NEG_INFINITY, f32::max);
        let k = x.iter().filter(|&&v| v == m).count() as f32;
        for (&xi, &yi) in x.iter().zip(&y) {
            if xi == m { prop_assert!((yi - 1.0 / k).abs() <= 1e-6); } else { prop_assert_eq!(yi, 0.0); }
        }
    }

    /// Merging partial states in any grouping gives the same log-sum-exp as one pass.
    #[test]
    fn lse_merge_is_associative(x in logits(400), cuts in prop::collection::vec(0usize..400, 0..6)) {
        let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c.min(x.len())).collect();
        cuts.sort();
        let mut parts = Vec::new();
        let mut start = 0;
        for &c in cuts.iter().chain(std::iter::once(&x.len())) {
            let mut s = LogSumExp::new(Poly);
            s.push_slice(&x[start..c.max(start)]);
            parts.push(s);
            start = c.max(start);
        }
        // Left fold and right fold of the same parts, and element-by-element pushes.
        let mut left = LogSumExp::new(Poly);
        for p in &parts { left.merge(p); }
        let mut right = LogSumExp::new(Poly);
        for p in parts.iter().rev() { let mut q = *p; q.merge(&right); right = q; }
        let mut one = LogSumExp::new(Poly);
        for &v in &x { one.push(v); }
        let whole = softmax_core::logsumexp(Poly, &x).unwrap();
        let want = r::logsumexp(&widen(&x), 1.0, None);
        for (name, got) in [("left", left.finish()), ("right", right.finish()), ("push", one.finish()), ("slice", whole)] {
            check_log(got, want, name)?;
        }
    }

    /// A keep-mask gives the softmax of the kept entries (zeros elsewhere). Not bitwise equal to
    /// softmax of the compacted row: kept entries sit in other lanes, so the sums round differently.
    #[test]
    fn masked_softmax_equals_softmax_of_kept(x in logits(100), keep in prop::collection::vec(any::<bool>(), 100)) {
        let keep = &keep[..x.len()];
        let mut y = vec![0.0f32; x.len()];
        softmax_core::masked_softmax(Poly, &x, keep, &mut y).unwrap();
        let kept: Vec<f64> = x.iter().zip(keep).filter(|(_, &k)| k).map(|(&v, _)| v as f64).collect();
        let want = r::softmax(&kept, 1.0, None);
        let got: Vec<f32> = y.iter().zip(keep).filter(|(_, &k)| k).map(|(&v, _)| v).collect();
        check_probs(&got, &want, |_| 0.0)?;
        prop_assert!(y.iter().zip(keep).all(|(&v, &k)| k || v == 0.0));
        // The reference agrees with the mask form of the reference itself.
        let full = r::softmax(&widen(&x), 1.0, Some(keep));
        let full_kept: Vec<f64> = full.iter().zip(keep).filter(|(_, &k)| k).map(|(&v, _)| v).collect();
        prop_assert_eq!(full_kept, want);
        // The bias form with 0 / -inf is the same computation: bitwise equal.
        let bias: Vec<f32> = keep.iter().map(|&k| if k { 0.0 } else { f32::NEG_INFINITY }).collect();
        let mut yb = vec![0.0f32; x.len()];
        softmax_core::softmax_with_bias(Poly, &x, &bias, &mut yb).unwrap();
        prop_assert_eq!(y, yb);
    }

    #[test]
    fn kl_matches_reference_and_is_nonnegative(a in prop::collection::vec(-8.0f64..8.0, 1..100), b in prop::collection::vec(-8.0f64..8.0, 100)) {
        let b = &b[..a.len()];
        let got = softmax_core::kl_divergence(Poly, &a, b).unwrap();
        let want = r::kl(&a, b);
        prop_assert!((got - want).abs() <= 1e-13 * (1.0 + want), "kl {got} want {want}");
        prop_assert!(got >= -1e-15);
        prop_assert_eq!(softmax_core::kl_divergence(Poly, &a, &a).unwrap(), 0.0);
    }

    /// KL between near-identical f32 rows stays within its stated absolute bound
    /// 2^-23·(1 + Σ p|log p − log q|) of the f64 value (the log-normalisers are not rounded
    /// separately at magnitude ln n), and an entry q_i = 0 under p_i > 0 gives +inf.
    #[test]
    fn kl_near_identical_rows_f32(p in prop::collection::vec(-2.0f32..2.0, 2..2000), eps in prop::collection::vec(-1e-3f32..1e-3, 2000)) {
        let q: Vec<f32> = p.iter().zip(&eps).map(|(a, e)| a + e).collect();
        let got = softmax_core::kl_divergence(Poly, &p, &q).unwrap() as f64;
        let (pd, qd) = (widen(&p), widen(&q));
        let want = r::kl(&pd, &qd);
        let (lp, lq) = (r::log_softmax(&pd, 1.0, None), r::log_softmax(&qd, 1.0, None));
        let scale: f64 = lp.iter().zip(&lq).map(|(a, b)| a.exp() * (a - b).abs()).sum();
        let tol = 2.0 * U * (1.0 + scale);
        prop_assert!((got - want).abs() <= tol, "KL {got:e} want {want:e} (tol {tol:e})");
        let mut q0 = q.clone();
        q0[0] = f32::NEG_INFINITY;
        prop_assert_eq!(softmax_core::kl_divergence(Poly, &p, &q0).unwrap(), f32::INFINITY);
    }

    /// VJPs against central finite differences in f64.
    #[test]
    fn vjps_match_finite_differences(x in prop::collection::vec(-4.0f64..4.0, 1..24), dy in prop::collection::vec(-1.0f64..1.0, 24), t in prop_oneof![Just(0.5f64), Just(1.0), Just(3.0)]) {
        let n = x.len();
        let dy = &dy[..n];
        let spec = Rows::new(n).with_temperature(t);
        let f = |x: &[f64], log: bool| -> f64 {
            let mut y = vec![0.0; n];
            if log { rows::log_softmax(Poly, x, &mut y, &spec).unwrap(); } else { rows::softmax(Poly, x, &mut y, &spec).unwrap(); }
            y.iter().zip(dy).map(|(a, b)| a * b).sum()
        };
        for log in [false, true] {
            let mut y = vec![0.0; n];
            let mut dx = vec![0.0; n];
            if log {
                rows::log_softmax(Poly, &x, &mut y, &spec).unwrap();
                rows::log_softmax_vjp(Poly, &y, dy, &mut dx, &Rows::new(n).with_temperature(t)).unwrap();
            } else {
                rows::softmax(Poly, &x, &mut y, &spec).unwrap();
                rows::softmax_vjp(&y, dy, &mut dx, &Rows::new(n).with_temperature(t)).unwrap();
            }
            for i in 0..n {
                let h = 1e-6;
                let (mut xp, mut xm) = (x.clone(), x.clone());
                xp[i] += h;
                xm[i] -= h;
                let fd = (f(&xp, log) - f(&xm, log)) / (2.0 * h);
                prop_assert!((dx[i] - fd).abs() <= 1e-7, "log={log} i={i}: vjp {} fd {fd}", dx[i]);
            }
        }
    }

    #[test]
    fn sparsemax_matches_sort_reference(x in prop::collection::vec(-3.0f64..3.0, 1..64), t in prop_oneof![Just(0.5f64), Just(1.0), Just(2.0)]) {
        let mut y = vec![0.0; x.len()];
        rows::sparsemax(&x, &mut y, &Rows::new(x.len()).with_temperature(t)).unwrap();
        let want = r::sparsemax(&x, t);
        for (g, w) in y.iter().zip(&want) {
            prop_assert!((g - w).abs() <= 1e-14, "got {g} want {w}");
        }
        prop_assert!((y.iter().sum::<f64>() - 1.0).abs() <= 1e-14);
        prop_assert!(y.iter().all(|&v| v >= 0.0));
    }

    /// sparsemax(x/τ) VJP against central differences, through the single-row function (τ = 1)
    /// and the batched one (any τ: the 1/τ factor of the chain rule is checked too).
    #[test]
    fn sparsemax_vjp_matches_finite_differences(x in prop::collection::vec(-2.0f64..2.0, 1..24), dy in prop::collection::vec(-1.0f64..1.0, 24), t in prop_oneof![Just(0.5f64), Just(1.0), Just(3.0)]) {
        let n = x.len();
        let dy = &dy[..n];
        let spec = Rows::new(n).with_temperature(t);
        let fwd = |x: &[f64], y: &mut [f64]| {
            if t == 1.0 {
                softmax_core::sparsemax(x, y).unwrap();
            } else {
                rows::sparsemax(x, y, &spec).unwrap();
            }
        };
        let f = |x: &[f64]| -> f64 { let mut y = vec![0.0; n]; fwd(x, &mut y); y.iter().zip(dy).map(|(a, b)| a * b).sum() };
        let mut y = vec![0.0; n];
        fwd(&x, &mut y);
        let mut dx = vec![0.0; n];
        if t == 1.0 {
            softmax_core::sparsemax_vjp(&y, dy, &mut dx).unwrap();
        } else {
            rows::sparsemax_vjp(&y, dy, &mut dx, &spec).unwrap();
        }
        for i in 0..n {
            let h = 1e-7;
            let (mut xp, mut xm) = (x.clone(), x.clone());
            xp[i] += h;
            xm[i] -= h;
            // sparsemax is piecewise linear: away from a kink the difference quotient is exact.
            let (mut yp, mut ym) = (vec![0.0; n], vec![0.0; n]);
            fwd(&xp, &mut yp);
            fwd(&xm, &mut ym);
            let support_same = yp.iter().zip(&ym).all(|(a, b)| (*a > 0.0) == (*b > 0.0));
            if support_same {
                let fd = (f(&xp) - f(&xm)) / (2.0 * h);
                prop_assert!((dx[i] - fd).abs() <= 1e-7, "i={i}: vjp {} fd {fd}", dx[i]);
            }
        }
    }

    #[test]
    fn temperature_for_entropy_hits_target(x in prop::collection::vec(-5.0f64..5.0, 2..40), frac in 0.05f64..0.95) {
        let m = x.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        let k = x.iter().filter(|&&v| v == m).count() as f64;
        let n = x.len() as f64;
        prop_assume!(x.iter().any(|&v| v != m));
        let target = k.ln() + frac * (n.ln() - k.ln());
        let tau = softmax_core::temperature_for_entropy(Poly, &x, target).unwrap();
        let h = r::entropy(&x, tau, None);
        prop_assert!((h - target).abs() <= 1e-9 * (1.0 + target), "H(τ={tau}) = {h}, target {target}");
    }

    #[test]
    fn f64_softmax_matches_reference(x in prop::collection::vec(-50.0f64..50.0, 1..200)) {
        let want = r::softmax(&x, 1.0, None);
        let mut y = vec![0.0; x.len()];
        softmax_core::softmax(Poly, &x, &mut y).unwrap();
        for (g, w) in y.iter().zip(&want) {
            prop_assert!((g - w).abs() <= 1e-14 * w, "got {g:e} want {w:e}");
        }
    }
}

/// Streams whose maximum keeps rising (sorted, or rising by an ulp at a time) through `push`,
/// through chains of single-value merges, and through a balanced merge tree: the state must not
/// round the accumulated sum once per new maximum (that made the error grow with n: 450x the
/// bound at n = 100k before the lazy rebasing).
#[test]
fn lse_rising_streams_stay_within_bound() {
    let mut streams: Vec<(&str, Vec<f32>)> = Vec::new();
    let step = 2f32.powi(-25);
    streams.push((
        "rising by 2^-25",
        (0..100_000).map(|i| 0.25 + step * i as f32).collect(),
    ));
    let mut state = 7u64;
    let mut uni: Vec<f32> = (0..32_768)
        .map(|_| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((state >> 40) as f32 / (1u64 << 24) as f32) * 2.0
        })
        .collect();
    streams.push(("uniform[0,2) random order", uni.clone()));
    uni.sort_by(f32::total_cmp);
    streams.push(("uniform[0,2) ascending", uni.clone()));
    streams.push((
        "ascending -50..50",
        (0..50_000).map(|i| -50.0 + 0.002 * i as f32).collect(),
    ));
    uni.reverse();
    streams.push(("uniform[0,2) descending", uni));
    for (name, xs) in &streams {
        let want = r::logsumexp(&widen(xs), 1.0, None);
        let tol = 4.0 * U * (1.0 + want.abs());
        let mut push = LogSumExp::new(Poly);
        xs.iter().for_each(|&v| push.push(v));
        let mut chain = LogSumExp::new(Poly);
        for &v in xs {
            let mut one = LogSumExp::new(Poly);
            one.push(v);
            chain.merge(&one);
        }
        let mut level: Vec<LogSumExp<f32, Poly>> = xs
            .iter()
            .map(|&v| {
                let mut s = LogSumExp::new(Poly);
                s.push(v);
                s
            })
            .collect();
        while level.len() > 1 {
            level = level
                .chunks(2)
                .map(|c| {
                    let mut a = c[0];
                    if let Some(b) = c.get(1) {
                        a.merge(b);
                    }
                    a
                })
                .collect();
        }
        for (how, got) in [
            ("push", push.finish()),
            ("merge chain", chain.finish()),
            ("merge tree", level[0].finish()),
        ] {
            let err = (got as f64 - want).abs();
            println!("{name:28} {how:12} error {err:.2e} (bound {tol:.2e})");
            assert!(
                err <= tol,
                "{name} via {how}: {got} vs {want} (error {err:e} > {tol:e})"
            );
        }
        // The maximum's log-probability keeps its precision relative to the true max.
        let lp = push.log_prob(push.max()) as f64;
        let m = xs.iter().cloned().fold(f32::NEG_INFINITY, f32::max) as f64;
        assert!(
            (lp - (m - want)).abs() <= tol,
            "{name}: log p(max) {lp} vs {}",
            m - want
        );
    }
}

/// Regressions from the code review: the hard Gumbel sample is argmax(x + g) itself (the soft
/// output ties at large τ), with hardmax's edge semantics; values above a state's maximum;
/// the log-probability of a sole +inf entry is +0 like that of a finite maximum.
#[test]
fn review_regressions() {
    let mut y = [0.0f32; 2];
    softmax_core::gumbel_softmax(Poly, &[0.0, 1.0], &[0.5, 0.5], 1e9, true, &mut y).unwrap();
    assert_eq!(y, [0.0, 1.0]);
    softmax_core::gumbel_softmax(
        Poly,
        &[f32::NEG_INFINITY; 2],
        &[0.5, 0.5],
        1.0,
        true,
        &mut y,
    )
    .unwrap();
    assert_eq!(y, [0.0, 0.0]);
    softmax_core::gumbel_softmax(Poly, &[f32::NAN, 0.0], &[0.5, 0.5], 1.0, true, &mut y).unwrap();
    assert!(y.iter().all(|v| v.is_nan()));

    let mut s = LogSumExp::new(Poly);
    s.push_slice(&[1.0f32, 2.0]);
    assert_eq!(s.prob(f32::INFINITY), f32::INFINITY);
    assert_eq!(s.log_prob(f32::INFINITY), f32::INFINITY);
    let want = (3.0f64 - r::logsumexp(&[1.0, 2.0], 1.0, None)).exp();
    assert!((s.prob(3.0) as f64 - want).abs() <= 4.0 * U * want);

    let mut ls = [0.0f32; 2];
    softmax_core::log_softmax(Poly, &[f32::INFINITY, 1.0], &mut ls).unwrap();
    assert_eq!(ls[0].to_bits(), 0.0f32.to_bits());
    assert_eq!(ls[1], f32::NEG_INFINITY);
}

/// The micromath backend is approximate: check it against its documented bound, not the tight one.
#[test]
fn micromath_softmax_within_documented_bound() {
    let x: Vec<f32> = (0..1000)
        .map(|i| ((i * 7919 % 1000) as f32 / 1000.0 - 0.5) * 30.0)
        .collect();
    let want = r::softmax(&widen(&x), 1.0, None);
    let mut y = vec![0.0f32; x.len()];
    softmax_core::softmax(MicroMath, &x, &mut y).unwrap();
    let worst = y
        .iter()
        .zip(&want)
        .filter(|(_, &w)| w >= 1e-30)
        .map(|(&g, &w)| ((g as f64) - w).abs() / w)
        .fold(0.0, f64::max);
    println!("micromath softmax max relative error {worst:e}");
    // micromath's exp is within 2.1e-3 relative (backend_accuracy.rs); a softmax output carries
    // that error from its own exp and from the sum.
    assert!(worst <= 4.5e-3, "micromath softmax rel error {worst:e}");
    assert!(<MicroMath as Backend<f32>>::exp(f32::NEG_INFINITY) == 0.0);
}

/// Single rows of 16M elements: the sums must not drift with length (a plain f32 running sum,
/// or lane sums alone, would; onnxruntime's LogSoftmax is off by 7.9e-4 on such a row).
#[test]
fn sixteen_million_element_rows() {
    const N: usize = 1 << 24;
    // Deterministic pseudo-random logits in [-8, 8) (SplitMix64).
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let x: Vec<f32> = (0..N)
        .map(|_| {
            state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^= z >> 31;
            ((z >> 40) as f32 / (1u64 << 24) as f32) * 16.0 - 8.0
        })
        .collect();
    let xd = widen(&x);
    let want_lse = r::logsumexp(&xd, 1.0, None);
    let m = x.iter().cloned().fold(f32::NEG_INFINITY, f32::max) as f64;

    let mut y = vec![0.0f32; N];
    softmax_core::softmax(Poly, &x, &mut y).unwrap();
    let mut worst = 0.0f64;
    for (&g, &xi) in y.iter().zip(&xd) {
        let w = (xi - want_lse).exp();
        worst = worst.max(((g as f64) - w).abs() / w);
    }
    println!("16M softmax: max relative error {worst:e}");
    assert!(worst <= 2e-6, "16M softmax max rel error {worst:e}");

    softmax_core::log_softmax(Poly, &x, &mut y).unwrap();
    let mut worst_ls = 0.0f64;
    for (&g, &xi) in y.iter().zip(&xd) {
        let w = (xi - m) - (want_lse - m);
        worst_ls = worst_ls.max(((g as f64) - w).abs() / (1.0 + w.abs()));
    }
    println!("16M log_softmax: max error/(1+|y|) {worst_ls:e}");
    assert!(worst_ls <= 4.0 * U, "16M log_softmax error {worst_ls:e}");

    let lse = softmax_core::logsumexp(Poly, &x).unwrap() as f64;
    println!(
        "16M logsumexp: {lse} vs {want_lse} (error {:e})",
        (lse - want_lse).abs()
    );
    assert!((lse - want_lse).abs() <= 4.0 * U * (1.0 + want_lse.abs()));

    // The same row streamed through the online state in 1000-element blocks.
    let mut st = LogSumExp::new(Poly);
    for c in x.chunks(1000) {
        st.push_slice(c);
    }
    assert!((st.finish() as f64 - want_lse).abs() <= 4.0 * U * (1.0 + want_lse.abs()));
}

/// The Gumbel-max trick: with uniform noise, the hard Gumbel-softmax sample is an exact draw from
/// softmax(x). 200,000 draws from a fixed-seed generator; every class count must lie within 5σ
/// of `N·p` (a wrong transform, e.g. `g = −ln u`, misses by hundreds of σ). The same through the
/// batched form with a keep-mask: a masked class is never drawn, the others follow the softmax of
/// the kept logits.
#[test]
fn hard_gumbel_samples_follow_softmax() {
    use softmax_core::backend::Libm;
    use suite::{Elem, SplitMix64};
    let x = [0.0f64, 1.0, -1.0, 2.0, 0.5];
    let keep = [true, true, false, true, true];
    const DRAWS: usize = 200_000;
    let mut rng = SplitMix64::new(0x6a6e_6721);
    let (mut counts, mut masked_counts) = ([0usize; 5], [0usize; 5]);
    let (mut u, mut y) = ([0.0f64; 5], [0.0f64; 5]);
    for _ in 0..DRAWS {
        u.iter_mut()
            .for_each(|v| *v = f64::open_unit(rng.next_u64()));
        softmax_core::gumbel_softmax(Libm, &x, &u, 1.0, true, &mut y).unwrap();
        assert_eq!(
            y.iter().sum::<f64>(),
            1.0,
            "hard sample is not one-hot: {y:?}"
        );
        counts[y.iter().position(|&v| v == 1.0).unwrap()] += 1;
        rows::gumbel_softmax(Libm, &x, &u, true, &mut y, &Rows::new(5).with_keep(&keep)).unwrap();
        masked_counts[y.iter().position(|&v| v == 1.0).unwrap()] += 1;
    }
    for (counts, mask) in [(counts, None), (masked_counts, Some(&keep[..]))] {
        let p = r::softmax(&x, 1.0, mask);
        for (i, (&c, &p)) in counts.iter().zip(&p).enumerate() {
            let (mean, sd) = (DRAWS as f64 * p, (DRAWS as f64 * p * (1.0 - p)).sqrt());
            assert!(
                (c as f64 - mean).abs() <= 5.0 * sd,
                "class {i} (mask {mask:?}): {c} draws, expected {mean:.0} ± {sd:.0}"
            );
        }
    }
    assert_eq!(masked_counts[2], 0);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Batched Gumbel-softmax with a keep-mask is, row by row, the single-row function on the row
    /// with the dropped entries set to `-inf` (the same arithmetic: bitwise equal).
    #[test]
    fn rows_gumbel_equals_single_rows(
        x in prop::collection::vec(-20.0f32..20.0, 1..60),
        n in 1usize..7,
        keep in prop::collection::vec(any::<bool>(), 60),
        bits in prop::collection::vec(any::<u64>(), 60),
        t in prop_oneof![Just(0.5f32), Just(1.0), Just(3.0)],
        hard in any::<bool>(),
    ) {
        use suite::Elem;
        let len = x.len() / n * n;
        let (x, keep) = (&x[..len], &keep[..len]);
        let u: Vec<f32> = bits[..len].iter().map(|&b| f32::open_unit(b)).collect();
        let mut y = vec![0.0f32; len];
        rows::gumbel_softmax(Poly, x, &u, hard, &mut y, &Rows::new(n).with_temperature(t).with_keep(keep)).unwrap();
        for i in 0..len / n {
            let row: Vec<f32> = (i * n..(i + 1) * n)
                .map(|j| if keep[j] { x[j] } else { f32::NEG_INFINITY })
                .collect();
            let mut want = vec![0.0f32; n];
            softmax_core::gumbel_softmax(Poly, &row, &u[i * n..(i + 1) * n], t, hard, &mut want).unwrap();
            prop_assert_eq!(&y[i * n..(i + 1) * n], &want[..], "row {}", i);
        }
    }

    /// Batched `temperature_for_entropy` with a keep-mask: every row that can reach the target
    /// (strictly between ln(ties at the max) and ln(kept entries)) gets a τ whose entropy under the
    /// masked f64 reference hits it; every other row gets NaN, and then the call is an error.
    #[test]
    fn rows_temperature_for_entropy_per_row(
        x in prop::collection::vec(-5.0f64..5.0, 1..48),
        n in 1usize..9,
        keep in prop::collection::vec(any::<bool>(), 48),
        target in 0.05f64..2.0,
    ) {
        let len = x.len() / n * n;
        let (x, keep) = (&x[..len], &keep[..len]);
        let mut tau = vec![0.0f64; len / n];
        let res = rows::temperature_for_entropy(Poly, x, target, &mut tau, &Rows::new(n).with_keep(keep));
        let mut any_out = false;
        for (i, &t) in tau.iter().enumerate() {
            let (xr, kr) = (&x[i * n..(i + 1) * n], &keep[i * n..(i + 1) * n]);
            let kept: Vec<f64> = xr.iter().zip(kr).filter(|(_, &k)| k).map(|(&v, _)| v).collect();
            let m = kept.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
            let ties = kept.iter().filter(|&&v| v == m).count() as f64;
            let reachable = !kept.is_empty() && target > ties.ln() && target < (kept.len() as f64).ln();
            if reachable {
                let h = r::entropy(xr, t, Some(kr));
                prop_assert!((h - target).abs() <= 1e-9 * (1.0 + target), "row {i}: H(τ={t}) = {h}, target {target}");
            } else {
                prop_assert!(t.is_nan(), "row {i} cannot reach {target} but got τ = {t}");
                any_out = true;
            }
        }
        prop_assert_eq!(res.is_err(), any_out);
    }
}

/// Findings of the second review, each a concrete input that used to give a wrong answer.
#[test]
fn second_review_regressions() {
    use softmax_core::backend::Libm;
    use suite::{Elem, SplitMix64};

    // Gumbel: the noise is added after the shift, so the sample does not depend on the offset
    // of the row: equal logits at 1e8 are sampled uniformly (adding g to 1e8 in f32 rounded it
    // to a multiple of 8 and picked class 0 95% of the time), and so are the +inf entries of a
    // row. The outputs for integer logits are bitwise shift-invariant.
    const DRAWS: usize = 100_000;
    let mut rng = SplitMix64::new(0x0ff5e7);
    let mut counts = [[0usize; 4]; 2];
    let rows_x = [
        [1e8f32; 4],
        [f32::INFINITY, f32::INFINITY, f32::INFINITY, 0.0],
    ];
    let (mut u, mut y) = ([0.0f32; 4], [0.0f32; 4]);
    for _ in 0..DRAWS {
        u.iter_mut()
            .for_each(|v| *v = f32::open_unit(rng.next_u64()));
        for (x, c) in rows_x.iter().zip(counts.iter_mut()) {
            softmax_core::gumbel_softmax(Poly, x, &u, 1.0, true, &mut y).unwrap();
            c[y.iter().position(|&v| v == 1.0).unwrap()] += 1;
        }
        let (a, b) = (
            [3.0f32, -2.0, 7.0, 0.0],
            [
                3.0f32 + 1048576.0,
                -2.0 + 1048576.0,
                7.0 + 1048576.0,
                1048576.0,
            ],
        );
        let (mut ya, mut yb) = ([0.0f32; 4], [0.0f32; 4]);
        softmax_core::gumbel_softmax(Poly, &a, &u, 0.7, false, &mut ya).unwrap();
        softmax_core::gumbel_softmax(Poly, &b, &u, 0.7, false, &mut yb).unwrap();
        assert_eq!(ya, yb, "gumbel-softmax is not shift-invariant");
    }
    let sd = |p: f64| (DRAWS as f64 * p * (1.0 - p)).sqrt();
    for (c, p) in counts[0].iter().zip([0.25; 4]) {
        assert!(
            (*c as f64 - DRAWS as f64 * p).abs() <= 5.0 * sd(p),
            "1e8 row: {:?}",
            counts[0]
        );
    }
    for (c, p) in counts[1].iter().zip([1.0 / 3.0, 1.0 / 3.0, 1.0 / 3.0, 0.0]) {
        assert!(
            (*c as f64 - DRAWS as f64 * p).abs() <= 5.0 * sd(p).max(0.5),
            "+inf row: {:?}",
            counts[1]
        );
    }

    // τ > 1 on a row spanning more than the float range: the quotients (x − max)/τ are finite,
    // so the soft output matches softmax_with_temperature's where the noise is equal (u = e^-1
    // gives g = 0 in the real numbers; within an ULP here). τ tiny: still one-hot.
    let (big, e1) = ([-f32::MAX, f32::MAX], [(-1.0f64).exp() as f32; 2]);
    let (mut a, mut b) = ([0.0f32; 2], [0.0f32; 2]);
    softmax_core::gumbel_softmax(Poly, &big, &e1, 1e38, false, &mut a).unwrap();
    softmax_core::softmax_with_temperature(Poly, &big, 1e38, &mut b).unwrap();
    assert!(
        (a[0] - b[0]).abs() <= 1e-6 * b[0] && b[0] > 1e-3,
        "{a:?} vs {b:?}"
    );
    let big64 = [-f64::MAX, f64::MAX];
    let (mut a, mut b) = ([0.0f64; 2], [0.0f64; 2]);
    softmax_core::gumbel_softmax(Poly, &big64, &[(-1.0f64).exp(); 2], 1e308, false, &mut a)
        .unwrap();
    softmax_core::softmax_with_temperature(Poly, &big64, 1e308, &mut b).unwrap();
    assert!(
        (a[0] - b[0]).abs() <= 1e-14 * b[0] && b[0] > 1e-2,
        "{a:?} vs {b:?}"
    );
    let mut y3 = [0.0f32; 3];
    softmax_core::gumbel_softmax(
        Poly,
        &[0.0, 0.5, 0.25],
        &[0.5, 0.6, 0.7],
        1e-45,
        false,
        &mut y3,
    )
    .unwrap();
    assert_eq!(
        y3.iter().filter(|&&v| v == 1.0).count(),
        1,
        "tiny τ is not one-hot: {y3:?}"
    );

    // Gumbel with MicroMath: the noise no longer carries its ln error (at u = 1 − 2⁻²⁴ the
    // approximate ln gave g = 9.7 instead of 16.6): the same noise as with Poly.
    {
        let (x, u) = ([0.0f32, 0.0], [0.999_999_94f32, 0.5]);
        let (mut a, mut b) = ([0.0f32; 2], [0.0f32; 2]);
        softmax_core::gumbel_softmax(MicroMath, &x, &u, 1.0, true, &mut a).unwrap();
        softmax_core::gumbel_softmax(Poly, &x, &u, 1.0, true, &mut b).unwrap();
        assert_eq!(a, b);
        // g_0 = 16.6 beats x_1 + g_1 = 12 + 0.37; the approximate ln's 9.7 would not.
        softmax_core::gumbel_softmax(MicroMath, &[0.0, 12.0], &u, 1.0, true, &mut a).unwrap();
        assert_eq!(a, [1.0, 0.0]);
    }

    // temperature_for_entropy: the bracket reaches MAX (doubling from 1 jumps from 2^127 to inf).
    for target in [0.3f32, 0.4] {
        let x = [3e38f32, -3e38];
        let tau = softmax_core::temperature_for_entropy(Poly, &x, target).unwrap();
        let h = r::entropy(&[3e38, -3e38], tau as f64, None);
        assert!(
            (h - target as f64).abs() < 1e-5,
            "f32 target {target}: τ {tau}, H {h}"
        );
    }
    let tau = softmax_core::temperature_for_entropy(Poly, &[1.5e308f64, -1.5e308], 0.3).unwrap();
    // The span 3e308 is beyond f64 (so is the reference's x − max): two entries, by hand.
    let d = -2.0 * (1.5e308 / tau);
    let q = d.exp() / (1.0 + d.exp());
    let h = -(1.0 - q) * (1.0 - q).ln() - q * q.ln();
    assert!((h - 0.3).abs() < 1e-12, "f64: τ {tau}, H {h}");
    assert!(softmax_core::temperature_for_entropy(Poly, &[3e38f32, -3e38], 0.6).is_err()); // H(MAX) = 0.416

    // KL with shifted logits that overflow: a finite logit is not a zero probability.
    let p1 = (-69.0f64).exp() / (1.0 + (-69.0f64).exp());
    let want = (1.0 - p1) * (1.0 - p1).ln() + p1 * (p1.ln() + 6.8e38);
    let got = softmax_core::kl_divergence(Poly, &[0.0f32, -69.0], &[3.4e38, -3.4e38]).unwrap();
    assert!(
        (got as f64 - want).abs() <= 1e-5 * want,
        "kl {got} want {want:e}"
    );
    let got64 = softmax_core::kl_divergence(Libm, &[0.0f64, -69.0], &[1.7e308, -1.7e308]).unwrap();
    // p_1·(ln p_1 + 3.4e308), at half scale (3.4e308 is beyond f64).
    let want64 = (1.0 - p1) * (1.0 - p1).ln() + 2.0 * p1 * (p1.ln() / 2.0 + 1.7e308);
    assert!(
        (got64 - want64).abs() <= 1e-12 * want64,
        "kl {got64} want {want64:e}"
    );
    // p_1 > 0 (finite logit, even if e^(x − max) overflows away) against q_1 = 0: +inf, as for
    // a merely underflowing p_1.
    let kl = |p: [f32; 2], q: [f32; 2]| softmax_core::kl_divergence(Poly, &p, &q).unwrap();
    assert_eq!(
        kl([3.4e38, -3.4e38], [0.0, f32::NEG_INFINITY]),
        f32::INFINITY
    );
    assert_eq!(kl([0.0, -200.0], [0.0, f32::NEG_INFINITY]), f32::INFINITY);
    assert_eq!(kl([0.0, f32::NEG_INFINITY], [0.0, f32::NEG_INFINITY]), 0.0);

    // ... also with τ < 1 (the division overflows, not just the difference), with terms near
    // MAX before the normalisation, and in the limit branch (p with +inf logits).
    let mut out = [0.0f32];
    rows::kl_divergence(
        Poly,
        &[0.0f32, -0.069],
        &[0.0, -1e38],
        &mut out,
        &Rows::new(2).with_temperature(1e-3),
    )
    .unwrap();
    let p1 = (-69.0f64).exp() / (1.0 + (-69.0f64).exp());
    let want = (1.0 - p1) * (1.0 - p1).ln() + p1 * (p1.ln() + 1e41);
    assert!(
        (out[0] as f64 - want).abs() <= 1e-5 * want,
        "τ<1: {} want {want:e}",
        out[0]
    );
    let max = f32::MAX as f64;
    let want = 0.95 * max - 2f64.ln();
    let got = kl([0.0, 0.0], [f32::MAX, -0.9 * f32::MAX]) as f64;
    assert!(
        (got - want).abs() <= 1e-6 * want,
        "near MAX: {got:e} want {want:e}"
    );
    let want = 0.75 * max - 2f64.ln();
    let got = kl([f32::INFINITY; 2], [f32::MAX, -0.5 * f32::MAX]) as f64;
    assert!(
        (got - want).abs() <= 1e-6 * want,
        "+inf p: {got:e} want {want:e}"
    );

    // softmax VJP under cancellation: the dot product's tail is not rounded away.
    let mut dx = [0.0f32; 2];
    softmax_core::softmax_vjp(&[0.5, 0.5], &[1.0, 1.0 + f32::EPSILON], &mut dx).unwrap();
    assert_eq!(dx, [-f32::EPSILON / 4.0, f32::EPSILON / 4.0]);
}

/// Every `array::` wrapper is the slice function on the same data: bitwise equal results, at a
/// length with a ragged tail (N = 19) and at one whole chunk (N = 16).
fn array_wrappers_match_slices<const N: usize>(
    x: [f32; N],
    q: [f32; N],
    u: [f32; N],
    keep: [bool; N],
    t: f32,
) {
    use softmax_core::array;
    let b = Poly;
    let slice_out = |f: &dyn Fn(&mut [f32])| {
        let mut y = [0.0f32; N];
        f(&mut y);
        y
    };
    let same = |a: &[f32], s: &[f32], what: &str| {
        assert!(
            a.iter()
                .zip(s)
                .all(|(a, s)| a.to_bits() == s.to_bits() || a.is_nan() && s.is_nan()),
            "array::{what} differs from the slice function: {a:?} vs {s:?}"
        )
    };
    same(
        &array::softmax(b, &x),
        &slice_out(&|y| softmax_core::softmax(b, &x, y).unwrap()),
        "softmax",
    );
    same(
        &array::softmax_with_temperature(b, &x, t).unwrap(),
        &slice_out(&|y| softmax_core::softmax_with_temperature(b, &x, t, y).unwrap()),
        "softmax_with_temperature",
    );
    let mut xy = x;
    array::softmax_in_place(b, &mut xy);
    same(&xy, &array::softmax(b, &x), "softmax_in_place");
    let ly = array::log_softmax(b, &x);
    same(
        &ly,
        &slice_out(&|y| softmax_core::log_softmax(b, &x, y).unwrap()),
        "log_softmax",
    );
    xy = x;
    array::log_softmax_in_place(b, &mut xy);
    same(&xy, &ly, "log_softmax_in_place");
    same(
        &[array::logsumexp(b, &x)],
        &[softmax_core::logsumexp(b, &x).unwrap()],
        "logsumexp",
    );
    same(
        &[array::entropy(b, &x, t).unwrap()],
        &[softmax_core::entropy(b, &x, t).unwrap()],
        "entropy",
    );
    same(
        &[array::kl_divergence(b, &x, &q)],
        &[softmax_core::kl_divergence(b, &x, &q).unwrap()],
        "kl_divergence",
    );
    same(
        &array::masked_softmax(b, &x, &keep),
        &slice_out(&|y| softmax_core::masked_softmax(b, &x, &keep, y).unwrap()),
        "masked_softmax",
    );
    same(
        &array::softmax_with_bias(b, &x, &q),
        &slice_out(&|y| softmax_core::softmax_with_bias(b, &x, &q, y).unwrap()),
        "softmax_with_bias",
    );
    let y = array::softmax(b, &x);
    same(
        &array::softmax_vjp(&y, &q),
        &slice_out(&|d| softmax_core::softmax_vjp(&y, &q, d).unwrap()),
        "softmax_vjp",
    );
    same(
        &array::log_softmax_vjp(b, &ly, &q),
        &slice_out(&|d| softmax_core::log_softmax_vjp(b, &ly, &q, d).unwrap()),
        "log_softmax_vjp",
    );
    same(
        &array::log_softmax_vjp_from_logits(b, &x, &q),
        &slice_out(&|d| softmax_core::log_softmax_vjp_from_logits(b, &x, &q, d).unwrap()),
        "log_softmax_vjp_from_logits",
    );
    let sy = array::sparsemax(&x);
    same(
        &sy,
        &slice_out(&|y| softmax_core::sparsemax(&x, y).unwrap()),
        "sparsemax",
    );
    same(
        &array::sparsemax_vjp(&sy, &q),
        &slice_out(&|d| softmax_core::sparsemax_vjp(&sy, &q, d).unwrap()),
        "sparsemax_vjp",
    );
    assert_eq!(array::argmax(&x), softmax_core::argmax(&x).unwrap());
    same(
        &array::hardmax(&x),
        &slice_out(&|y| softmax_core::hardmax(&x, y).unwrap()),
        "hardmax",
    );
    for hard in [false, true] {
        same(
            &array::gumbel_softmax(b, &x, &u, t, hard).unwrap(),
            &slice_out(&|y| softmax_core::gumbel_softmax(b, &x, &u, t, hard, y).unwrap()),
            "gumbel_softmax",
        );
    }
    let target = (N as f32).ln() * 0.5;
    assert_eq!(
        array::temperature_for_entropy(b, &x, target).map(f32::to_bits),
        softmax_core::temperature_for_entropy(b, &x, target).map(f32::to_bits)
    );
    // The `_rows` forms are the single-row wrappers applied row by row.
    let two = [x, q];
    let rows_sm = array::softmax_rows(b, &two);
    let rows_ls = array::log_softmax_rows(b, &two);
    let rows_lse = array::logsumexp_rows(b, &two);
    for (i, r) in two.iter().enumerate() {
        same(&rows_sm[i], &array::softmax(b, r), "softmax_rows");
        same(&rows_ls[i], &array::log_softmax(b, r), "log_softmax_rows");
        same(&[rows_lse[i]], &[array::logsumexp(b, r)], "logsumexp_rows");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn array_wrappers_equal_slice_functions(
        x in prop::collection::vec(-30.0f32..30.0, 19),
        q in prop::collection::vec(-3.0f32..3.0, 19),
        bits in prop::collection::vec(any::<u64>(), 19),
        keep in prop::collection::vec(any::<bool>(), 19),
        t in prop_oneof![Just(0.3f32), Just(1.0), Just(2.5)],
    ) {
        use suite::Elem;
        let u: Vec<f32> = bits.iter().map(|&b| f32::open_unit(b)).collect();
        let arr = |v: &[f32]| -> [f32; 19] { v.try_into().unwrap() };
        let k: [bool; 19] = keep[..].try_into().unwrap();
        array_wrappers_match_slices(arr(&x), arr(&q), arr(&u), k, t);
        let a16 = |v: &[f32]| -> [f32; 16] { v[..16].try_into().unwrap() };
        let k16: [bool; 16] = keep[..16].try_into().unwrap();
        array_wrappers_match_slices(a16(&x), a16(&q), a16(&u), k16, t);
    }
}

/// The stated accuracy of the two output-based VJPs (op.rs): softmax_vjp within 4 ULP plus
/// `17u·y_i·Σ|y_j dy_j|`, sparsemax_vjp within `2u|dx_i| + 18u·mean_S|dy|`, against f64
/// evaluations from the same f32 inputs. Random rows, rows built so that `dy_i` cancels the dot
/// product, and the block-sum worst case found in review (512 equal weights, terms 2⁻²⁵ apart).
fn check_vjp_bounds(y: &[f32], sy: &[f32], dy: &[f32]) {
    const UF: f64 = U;
    let ulp = |v: f64| (v.abs() * 2.0 * UF).max(1.4e-45);
    let mut dx = vec![0.0f32; y.len()];
    softmax_core::softmax_vjp(y, dy, &mut dx).unwrap();
    let dot: f64 = y.iter().zip(dy).map(|(&a, &b)| a as f64 * b as f64).sum();
    let abs: f64 = y
        .iter()
        .zip(dy)
        .map(|(&a, &b)| (a as f64 * b as f64).abs())
        .sum();
    for i in 0..y.len() {
        let want = y[i] as f64 * (dy[i] as f64 - dot);
        let tol = 4.0 * ulp(want) + 17.0 * UF * y[i] as f64 * abs;
        assert!(
            (dx[i] as f64 - want).abs() <= tol,
            "softmax_vjp [{i}]: {} want {want:e} tol {tol:e}",
            dx[i]
        );
    }
    softmax_core::sparsemax_vjp(sy, dy, &mut dx).unwrap();
    let support: Vec<usize> = (0..sy.len()).filter(|&i| sy[i] > 0.0).collect();
    let k = support.len() as f64;
    let mean: f64 = support.iter().map(|&i| dy[i] as f64).sum::<f64>() / k;
    let mean_abs: f64 = support.iter().map(|&i| (dy[i] as f64).abs()).sum::<f64>() / k;
    for i in 0..sy.len() {
        let want = if sy[i] > 0.0 {
            dy[i] as f64 - mean
        } else {
            0.0
        };
        let tol = 2.0 * UF * want.abs() + 18.0 * UF * mean_abs;
        assert!(
            (dx[i] as f64 - want).abs() <= tol,
            "sparsemax_vjp [{i}]: {} want {want:e} tol {tol:e}",
            dx[i]
        );
    }
}

#[test]
fn vjp_accuracy_statements_hold() {
    // The review's case: y = 1/512, dy[0] = 512, dy[16k] = 512·2⁻²⁵, dy[256] = −512.
    let n = 512;
    let y = vec![1.0f32 / 512.0; n];
    for scale in [512.0f32, 1.0] {
        let mut dy = vec![0.0f32; n];
        dy[0] = scale;
        for k in 1..16 {
            dy[16 * k] = scale * 2f32.powi(-25);
        }
        dy[256] = -scale;
        check_vjp_bounds(&y, &y, &dy);
    }
    let mut rng = suite::SplitMix64::new(0x007e_5701);
    for trial in 0..400 {
        let n = 1 + (rng.next_u64() % 700) as usize;
        let x: Vec<f32> = (0..n).map(|_| rng.range(-4.0, 4.0) as f32).collect();
        let mut y = vec![0.0f32; n];
        softmax_core::softmax(Poly, &x, &mut y).unwrap();
        let mut sy = vec![0.0f32; n];
        softmax_core::sparsemax(&x, &mut sy).unwrap();
        let mut dy: Vec<f32> = (0..n).map(|_| rng.range(-1.0, 1.0) as f32).collect();
        if trial % 2 == 1 {
            // Make dy nearly constant, so dy_i − ⟨y, dy⟩ and dy_i − mean cancel.
            let c = rng.range(-100.0, 100.0) as f32;
            dy.iter_mut().for_each(|g| *g = c + *g * 1e-5);
        }
        check_vjp_bounds(&y, &sy, &dy);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// `ln Σ e^(x − max)` keeps full relative precision when the other terms are tiny, whatever
    /// the order of the values and however the state was built: pushes (with rising values that
    /// move the reference), slices and merges in both directions. Values: the maximum plus others
    /// 5..40 below it, spread over a range wider than the rescale threshold (8).
    #[test]
    fn lse_ln_sum_relative_precision(
        gaps in prop::collection::vec(5.0f64..40.0, 1..60),
        top in -50.0f64..50.0,
        perm in prop::collection::vec(any::<u64>(), 61),
        how in prop::collection::vec(0u8..4, 61),
    ) {
        let mut xs: Vec<f32> = std::iter::once(top as f32).chain(gaps.iter().map(|g| (top - g) as f32)).collect();
        // A fixed-seed shuffle driven by `perm`.
        for i in (1..xs.len()).rev() {
            xs.swap(i, (perm[i] % (i as u64 + 1)) as usize);
        }
        let m = xs.iter().cloned().fold(f32::NEG_INFINITY, f32::max) as f64;
        // The reference sums the rest directly (1 + rest − 1 in f64 would lose its digits).
        let imax = xs.iter().position(|&v| v as f64 == m).unwrap();
        let rest: f64 = xs.iter().enumerate().filter(|&(i, _)| i != imax).map(|(_, &v)| ((v as f64) - m).exp()).sum();
        let want = rest.ln_1p();
        // Build the state: each value is pushed, pushed as a one-value slice, merged into the
        // state, or the state is merged into a state of that value.
        let mut s = LogSumExp::new(Poly);
        for (&v, &h) in xs.iter().zip(&how) {
            match h {
                0 => s.push(v),
                1 => s.push_slice(&[v]),
                2 => { let mut o = LogSumExp::new(Poly); o.push(v); s.merge(&o); }
                _ => { let mut o = LogSumExp::new(Poly); o.push(v); o.merge(&s); s = o; }
            }
        }
        let got = s.ln_sum() as f64;
        prop_assert!((got - want).abs() <= 8.0 * U * want, "ln_sum {got:e} want {want:e} ({:.1} u)", (got - want).abs() / (U * want));
        let lp = s.log_prob(m as f32) as f64;
        prop_assert!((lp + want).abs() <= 8.0 * U * want, "log_prob(max) {lp:e} want {:e}", -want);
    }
}

/// The review's case: merging {5.333, 13.333} (pushed) into {0} lost the rest's digits (9800 u).
#[test]
fn lse_merge_keeps_tiny_rest() {
    let (mut a, mut b) = (LogSumExp::new(Poly), LogSumExp::new(Poly));
    a.push(0.0f32);
    b.push(5.333);
    b.push(13.333); // moves b's reference (13.333 > 5.333 + 8)
    let want = (((0.0f64 - 13.333f32 as f64).exp()) + ((5.333f32 as f64 - 13.333f32 as f64).exp()))
        .ln_1p();
    for (x, y) in [(a, b), (b, a)] {
        let mut s = x;
        s.merge(&y);
        let got = s.ln_sum() as f64;
        assert!((got - want).abs() <= 4.0 * U * want, "{got:e} vs {want:e}");
    }
}

/// Rows of at least 2^17 values take the two-pass online path (max and sum together over
/// blocks, with a reference that moves up in steps): rising rows (hundreds of moves), falling
/// rows, blocks of `-inf`, temperatures, and keep-masks, against the f64 reference with the
/// contract's bounds — the moves must not make the sum drift.
#[test]
fn long_rows_take_the_online_path_without_drift() {
    let n = (1usize << 17) + 1000;
    let rising: Vec<f32> = (0..n).map(|i| i as f32 * 2e-3 - 100.0).collect();
    let falling: Vec<f32> = rising.iter().rev().copied().collect();
    let mut holes = rising.clone();
    for (i, v) in holes.iter_mut().enumerate() {
        if (i / 4096) % 3 == 1 || i % 7 == 0 {
            *v = f32::NEG_INFINITY;
        }
    }
    let keep: Vec<bool> = (0..n).map(|i| i % 5 != 2).collect();
    for (name, x) in [
        ("rising", &rising),
        ("falling", &falling),
        ("holes", &holes),
    ] {
        let xd = widen(x);
        for tau in [1.0f32, 0.5, 3.0] {
            for masked in [false, true] {
                let mask = masked.then_some(&keep[..]);
                let spec = if masked {
                    Rows::new(n).with_temperature(tau).with_keep(&keep)
                } else {
                    Rows::new(n).with_temperature(tau)
                };
                let want = r::softmax(&xd, tau as f64, mask);
                let mut y = vec![0.0f32; n];
                rows::softmax(Poly, x, &mut y, &spec).unwrap();
                let mut worst = 0.0f64;
                for (&g, &w) in y.iter().zip(&want) {
                    if w >= 1e-30 {
                        worst = worst.max((g as f64 - w).abs() / w);
                    } else {
                        assert!((g as f64) <= 1e-30 * (1.0 + 4e-6), "{name}: {g} for {w}");
                    }
                }
                // With τ ≠ 1 the quotient's rounding adds 2⁻²⁴·(|d_i| + E_p|d|) (stated).
                let allowance = if tau == 1.0 {
                    2e-6
                } else {
                    2e-6 + U * 2.0 * 300.0 / tau as f64
                };
                assert!(
                    worst <= allowance,
                    "{name} τ {tau} mask {masked}: softmax rel {worst:e}"
                );
                let want = r::log_softmax(&xd, tau as f64, mask);
                rows::log_softmax(Poly, x, &mut y, &spec).unwrap();
                let mut worst = 0.0f64;
                for (&g, &w) in y.iter().zip(&want) {
                    if w == f64::NEG_INFINITY {
                        assert_eq!(g, f32::NEG_INFINITY);
                    } else {
                        worst = worst.max((g as f64 - w).abs() / (1.0 + w.abs()));
                    }
                }
                let allowance = if tau == 1.0 {
                    4.0 * U
                } else {
                    4.0 * U + U * 300.0 / tau as f64
                };
                assert!(
                    worst <= allowance,
                    "{name} τ {tau} mask {masked}: log_softmax {worst:e}"
                );
            }
        }
    }
    // NaN and +inf rows fall back to the general path's semantics.
    let mut x = rising.clone();
    x[n / 2] = f32::INFINITY;
    x[n - 3] = f32::INFINITY;
    let mut y = vec![0.0f32; n];
    softmax_core::softmax(Poly, &x, &mut y).unwrap();
    assert_eq!((y[n / 2], y[n - 3], y[0]), (0.5, 0.5, 0.0));
    x[7] = f32::NAN;
    softmax_core::softmax(Poly, &x, &mut y).unwrap();
    assert!(y.iter().all(|v| v.is_nan()));
    softmax_core::softmax(Poly, &vec![f32::NEG_INFINITY; n], &mut y).unwrap();
    assert!(y.iter().all(|&v| v == 0.0));
}

/// Rows of `n` values for the batched kernels: random logits in [-8, 8), with some rows made
/// special by `kinds` (0: as drawn, 1: every entry `-inf`, 2: one `+inf`, 3: one NaN, 4: a few
/// `-inf` entries, 5: all equal) so that pairs mix the exp passes' case with the limits.
fn batch_rows<F: softmax_core::Float>(n: usize, vals: &[f64], kinds: &[u8]) -> Vec<F> {
    let mut x: Vec<F> = vals[..n * kinds.len()]
        .iter()
        .map(|&v| F::from_f64(16.0 * v - 8.0))
        .collect();
    for (row, &k) in x.chunks_mut(n).zip(kinds) {
        match k % 6 {
            1 => row.fill(F::NEG_INFINITY),
            2 => row[n / 3] = F::INFINITY,
            3 => row[n - 1] = F::NAN,
            4 => {
                row[0] = F::NEG_INFINITY;
                row[n / 2] = F::NEG_INFINITY;
            }
            5 => row.fill(F::from_f64(0.25)),
            _ => {}
        }
    }
    x
}

/// `rows::softmax` and `rows::log_softmax` over a batch give, bit for bit, what they give for
/// each row on its own (a batch of one row): the pair kernels that take short unmasked rows two
/// at a time (`op::softmax_pair`, `op::log_softmax_pair`) change no bit, with temperatures, rows
/// without a finite maximum beside ordinary ones, an odd last row, and lengths on both sides of
/// the pairs' rule (multiples of 32 up to 512, and others); masked batches (which the pairs do
/// not take, `rows::pair_limit`) give each row's own bits too.
fn batch_equals_rows_one_by_one<F: softmax_core::Float>(
    n: usize,
    vals: &[f64],
    kinds: &[u8],
    mask: u8,
    t: f64,
) where
    Poly: Backend<F>,
{
    let x = batch_rows::<F>(n, vals, kinds);
    let keep: Vec<bool> = (0..x.len()).map(|i| (i * 7 + 3) % 5 != 0).collect();
    let bias: Vec<F> = (0..x.len())
        .map(|i| F::from_f64(((i * 13) % 9) as f64 * 0.5 - 2.0))
        .collect();
    let t = F::from_f64(t);
    let spec_of = |lo: usize, hi: usize| {
        let s = Rows::new(n).with_temperature(t);
        match mask % 3 {
            1 => s.with_keep(&keep[lo..hi]),
            2 => s.with_bias(&bias[lo..hi]),
            _ => s,
        }
    };
    let bits = |v: &[F]| v.iter().map(|y| y.to_f64().to_bits()).collect::<Vec<_>>();
    for log in [false, true] {
        let run = |x: &[F], spec: &Rows<'_, F>| {
            let mut y = vec![F::ZERO; x.len()];
            if log {
                rows::log_softmax(Poly, x, &mut y, spec).unwrap();
            } else {
                rows::softmax(Poly, x, &mut y, spec).unwrap();
            }
            y
        };
        let batch = run(&x, &spec_of(0, x.len()));
        for (i, row) in x.chunks(n).enumerate() {
            let one = run(row, &spec_of(i * n, (i + 1) * n));
            assert_eq!(
                bits(&batch[i * n..(i + 1) * n]),
                bits(&one),
                "log {log} n {n} row {i} of {} kinds {kinds:?} mask {mask}",
                kinds.len()
            );
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(40))]

    #[test]
    fn batched_rows_equal_single_rows(
        n in prop_oneof![
            Just(32usize), Just(64), Just(96), Just(128), Just(160), Just(256), Just(512),
            Just(16), Just(48), Just(544), 1usize..40
        ],
        vals in prop::collection::vec(0.0f64..1.0, 7 * 544),
        kinds in prop::collection::vec(prop_oneof![4 => Just(0u8), 1 => 1u8..6], 1..8),
        mask in 0u8..3,
        t in prop_oneof![Just(1.0f64), Just(0.5), Just(3.0)],
    ) {
        batch_equals_rows_one_by_one::<f32>(n, &vals, &kinds, mask, t);
        batch_equals_rows_one_by_one::<f64>(n, &vals, &kinds, mask, t);
    }
}
