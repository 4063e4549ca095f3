//! The claims of `shared/seeds/002_*.txt` (attention and softmax: robustness to i.i.d. score
//! noise, and entropy as the "information" an optimiser can extract; the appended derivation
//! sections 1–25).
//!
//! Kernels: softmax-core's slice `softmax`, `entropy`, `logsumexp`, `kl_divergence`,
//! `softmax_vjp`, `gumbel_softmax` (f32, `Poly` backend) and attention-core's `attention` (f32;
//! scores are fed in as `q = 1`, `k_j = s_j`, `d = 1`, scale 1 so that the kernel's score is
//! exactly `s_j`), each with the naive f64 reference of `crate::reference` beside.

// Index loops mirror the formulas' subscripts (α_i, v_{i,c}, g_ij).
#![allow(clippy::needless_range_loop)]

use attention_core::{attention, Dims, Options, Output, Qkv};
use softmax_core::backend::Poly;

use super::util::{k_softmax32, max_abs_diff, norm2, sci_list, to32, Rng};
use super::{holds_if, sci, Claim, Verdict};
use crate::reference as r;

/// A residual for the table: its value when above `tol`, else `≤ tol` (rounding-level residuals
/// differ in their last bits between machines and SIMD levels; the bound does not).
fn le(v: f64, tol: f64) -> String {
    if v <= tol {
        format!("≤ {tol:.0e}")
    } else {
        sci(v, 3)
    }
}

/// softmax-core's f32 entropy of softmax(x/τ).
fn k_entropy(x: &[f64], tau: f64) -> f64 {
    softmax_core::entropy(Poly, &to32(x), tau as f32).expect("non-empty row, τ > 0") as f64
}

/// softmax-core's f32 logsumexp.
fn k_lse(x: &[f64]) -> f64 {
    softmax_core::logsumexp(Poly, &to32(x)).expect("non-empty row") as f64
}

/// attention-core's f32 attention for one query over scores `s` (fed as `q = 1`, `k_j = s_j`,
/// `d = 1`, scale 1) and values `v` (`n × dv`, row-major): the output and the entropy.
fn k_attn(s: &[f64], v: &[f64], dv: usize) -> (Vec<f64>, f64) {
    let n = s.len();
    let dims = Dims::new(1, 1, 1, n, 1, dv);
    let (q, k, vv) = ([1.0f32], to32(s), to32(v));
    let mut o = vec![0.0f32; dv];
    let mut e = [0.0f32];
    let opts = Options::new().with_scale(1.0f32);
    attention(
        Poly,
        &dims,
        Qkv::new(&q, &k, &vv),
        &opts,
        Output::new(&mut o).with_entropy(&mut e),
    )
    .expect("valid dimensions");
    (o.iter().map(|&x| x as f64).collect(), e[0] as f64)
}

/// f64 reference: `Σ α_i v_i` with α = softmax(s).
fn attn64(s: &[f64], v: &[f64], dv: usize) -> Vec<f64> {
    let a = r::softmax(s, 1.0, None);
    (0..dv)
        .map(|c| r::sum(a.iter().enumerate().map(|(i, &ai)| ai * v[i * dv + c])))
        .collect()
}

fn diff(a: &[f64], b: &[f64]) -> Vec<f64> {
    a.iter().zip(b).map(|(x, y)| x - y).collect()
}

/// Simpson's rule on [a, b] with `m` (even) panels.
fn simpson(f: impl Fn(f64) -> f64, a: f64, b: f64, m: usize) -> f64 {
    let h = (b - a) / m as f64;
    let mut s = f(a) + f(b);
    for i in 1..m {
        s += f(a + i as f64 * h) * if i % 2 == 1 { 4.0 } else { 2.0 };
    }
    s * h / 3.0
}

/// Entropy of the limit distribution (n → ∞) where a fraction `f` of the logits sit at `hi` and
/// the rest at `lo`, minus `ln n`: `−KL(p‖u)`.
fn two_level_gap(f: f64, hi: f64, lo: f64) -> f64 {
    let (a, b) = (hi.exp(), lo.exp());
    let m = f * a + (1.0 - f) * b;
    (f * a * (a / m).ln() + (1.0 - f) * b * (b / m).ln()) / m
}

/// max over f ∈ (0, 1) of [`two_level_gap`] (grid then golden-section refinement).
fn max_gap(hi: f64, lo: f64) -> (f64, f64) {
    let (mut lo_f, mut hi_f) = (1e-9, 1.0 - 1e-9);
    for _ in 0..200 {
        let m1 = lo_f + (hi_f - lo_f) / 3.0;
        let m2 = hi_f - (hi_f - lo_f) / 3.0;
        if two_level_gap(m1, hi, lo) < two_level_gap(m2, hi, lo) {
            lo_f = m1;
        } else {
            hi_f = m2;
        }
    }
    let f = 0.5 * (lo_f + hi_f);
    (f, two_level_gap(f, hi, lo))
}

/// Entropy (f64 reference) of `n` logits with `k` at `hi` and `n − k` at `lo`, closed form.
fn two_level_entropy(n: usize, k: usize, hi: f64, lo: f64) -> f64 {
    let (a, b) = (1.0, (lo - hi).exp());
    let z = k as f64 * a + (n - k) as f64 * b;
    let (pa, pb) = (a / z, b / z);
    let mut h = -(k as f64) * pa * pa.ln();
    if pb > 0.0 {
        h -= (n - k) as f64 * pb * pb.ln();
    }
    h
}

/// Exact expectation over `ε_i = ±a` (each with probability ½, i.i.d.) of the noisy attention
/// output (scalar values): returns (E[õ], Var(Σ α_i e^{ε_i}), o).
fn exact_noise(s: &[f64], v: &[f64], a: f64) -> (f64, f64, f64) {
    let n = s.len();
    let al = r::softmax(s, 1.0, None);
    let o = r::sum(al.iter().zip(v).map(|(x, y)| x * y));
    let (ep, em) = (a.exp(), (-a).exp());
    let (mut mean, mut m1, mut m2) = (0.0, 0.0, 0.0);
    let w = 1.0 / (1u64 << n) as f64;
    for mask in 0u64..(1u64 << n) {
        let (mut num, mut den) = (0.0, 0.0);
        for i in 0..n {
            let z = if mask >> i & 1 == 1 { ep } else { em };
            num += al[i] * z * v[i];
            den += al[i] * z;
        }
        mean += w * num / den;
        m1 += w * den;
        m2 += w * den * den;
    }
    (mean, m2 - m1 * m1, o)
}

/// This chapter's claims, in the chapter's order.
pub fn claims() -> Vec<Claim> {
    let mut c = Vec::new();
    let mut rng = Rng(0x0002_5EED);

    // ---- §鲁棒性 (1): the attention formula. ----
    {
        let mut worst = 0.0f64;
        let mut worst_rel = 0.0f64;
        for _ in 0..20 {
            let n = 7;
            let s = rng.open_normals(n, 2.0);
            let v = rng.open_normals(n * 3, 1.0);
            let (ok, _) = k_attn(&s, &v, 3);
            let o64 = attn64(&s, &v, 3);
            // The textbook ratio Σ e^{s_i} v_i / Σ e^{s_i}, unshifted, in f64.
            let z: f64 = s.iter().map(|x| x.exp()).sum();
            let ratio: Vec<f64> = (0..3)
                .map(|c| (0..n).map(|i| s[i].exp() * v[i * 3 + c]).sum::<f64>() / z)
                .collect();
            worst = worst.max(max_abs_diff(&ok, &o64));
            worst_rel = worst_rel.max(max_abs_diff(&ratio, &o64));
        }
        c.push(Claim::new(
            "002 §鲁棒性 Robustness (1); §1 (1)",
            "Softmax attention o = Σ e^{s_i} v_i / Σ e^{s_i} = Σ α_i v_i with α = softmax(s)",
            "attention_core::attention (f32; q=1, k_j=s_j, d=1, scale 1) vs f64 softmax-weighted \
             sum and vs the unshifted ratio in f64, 20 seeded cases (n=7, dv=3, s~N(0,4))",
            "—",
            format!(
                "max |kernel − f64| {}, max |ratio − Σα v| {}",
                le(worst, 1e-6),
                le(worst_rel, 1e-12)
            ),
            holds_if(worst < 1e-5 && worst_rel < 1e-12, "—"),
        ));
    }

    // ---- §鲁棒性 (2)/(3); §2 (5)-(9): õ ≈ o for i.i.d. noise, improving with n. ----
    let noise_err = |rng: &mut Rng, n: usize, reps: usize| -> (f64, f64) {
        // mean ‖õ − o‖ and mean ‖ratio of the sample means (6)/(7) − 1‖ over reps.
        let (mut e_o, mut e_r) = (0.0, 0.0);
        for _ in 0..reps {
            let s = rng.open_normals(n, 1.0);
            let v: Vec<f64> = (0..n).map(|_| 1.0 + rng.open_normal()).collect();
            let eps = rng.open_normals(n, 0.5);
            let se: Vec<f64> = s.iter().zip(&eps).map(|(a, b)| a + b).collect();
            let o = attn64(&s, &v, 1)[0];
            let (ko, _) = k_attn(&se, &v, 1);
            e_o += (ko[0] - o).abs();
            let num: f64 = (0..n).map(|i| se[i].exp() * v[i]).sum::<f64>() / n as f64;
            let num0: f64 = (0..n).map(|i| s[i].exp() * v[i]).sum::<f64>() / n as f64;
            let me = (0.125f64).exp(); // E[e^ε] = e^{σ²/2}, σ = 0.5
            e_r += (num / (num0 * me) - 1.0).abs();
        }
        (e_o / reps as f64, e_r / reps as f64)
    };
    {
        let (a1, r1) = noise_err(&mut rng, 64, 8);
        let (a2, r2) = noise_err(&mut rng, 1024, 8);
        let (a3, r3) = noise_err(&mut rng, 16384, 8);
        let ok = a3 < a2 && a2 < a1 && a3 < 0.05 && r3 < r1;
        c.push(Claim::new(
            "002 §鲁棒性 Robustness (2)-(3); §2 (4)-(9), (18)",
            "Adding i.i.d. noise ε_i to the scores leaves attention almost unchanged: õ ≈ o, since \
             E_i[e^{s_i+ε_i} v_i] ≈ E_i[e^{s_i} v_i]·E[e^ε] (the factor cancels); the sample \
             mean converges (LLN, called CLT in (18)) as n → ∞",
            "attention_core::attention (f32) on s+ε vs f64 attention on s; s~N(0,1), v~1+N(0,1), \
             ε~N(0,0.25); mean |õ−o| and mean |E_i[e^{s+ε}v]/(E_i[e^s v]·e^{σ²/2}) − 1| over 8 \
             seeded cases at n = 64, 1024, 16384: the approximation holds in the large-n limit only",
            "õ ≈ o",
            format!(
                "|õ−o|: {}, {}, {}; ratio err: {}, {}, {}",
                sci(a1, 3),
                sci(a2, 3),
                sci(a3, 3),
                sci(r1, 3),
                sci(r2, 3),
                sci(r3, 3)
            ),
            holds_if(
                ok,
                "õ → o only as n → ∞ (error ~ 1/√n); not at small n",
            ),
        ));
    }

    // ---- §信息量 (4); §6: H ∈ [0, log n], max at uniform, 0 at one-hot. ----
    {
        let mut lo = f64::INFINITY;
        let mut hi_gap = f64::INFINITY;
        let mut worst = 0.0f64;
        let n = 10;
        for k in 0..40 {
            let s = rng.open_normals(n, 0.1 * (k + 1) as f64);
            let h = k_entropy(&s, 1.0);
            let h64 = r::entropy(&s, 1.0, None);
            worst = worst.max((h - h64).abs());
            lo = lo.min(h64);
            hi_gap = hi_gap.min((n as f64).ln() - h64);
        }
        let hu = k_entropy(&[0.0; 10], 1.0);
        let mut onehot = vec![-1.0e4; 10];
        onehot[3] = 0.0;
        let h1 = k_entropy(&onehot, 1.0);
        let ok = lo >= 0.0
            && hi_gap >= 0.0
            && worst < 1e-5
            && (hu - 10f64.ln()).abs() < 1e-6
            && h1.abs() < 1e-6;
        c.push(Claim::new(
            "002 §信息量 Information (4); §6 (28)",
            "Entropy H = −Σ p_i log p_i of a softmax lies in [0, log n]: H ≥ 0, H = log n at the \
             uniform p, H = 0 at a one-hot p",
            "softmax_core::entropy (f32) vs reference::entropy (f64), 40 seeded rows (n=10, \
             s~N(0,σ²), σ=0.1…4), plus the uniform and a one-hot row",
            "[0, log n]",
            format!(
                "min H {}, min (log n − H) {}, H(uniform) {} (ln 10 = {}), H(one-hot) {}, \
                 max |kernel − f64| {}",
                sci(lo, 3),
                sci(hi_gap, 3),
                sci(hu, 3),
                sci(10f64.ln(), 3),
                sci(h1, 3),
                le(worst, 1e-6)
            ),
            holds_if(ok, "—"),
        ));
    }

    // ---- §信息量: τ = 1, s = cos θ ∈ [−1, 1]: lower bound ≈ log n − 0.4745. ----
    let (f_star, gap_star) = max_gap(1.0, -1.0);
    {
        // Finite n: best vertex (k entries at +1, n−k at −1), and a random sweep of the box
        // that never beats it.
        let n = 1000;
        let best_vertex = (1..n)
            .map(|k| (n as f64).ln() - two_level_entropy(n, k, 1.0, -1.0))
            .fold(0.0, f64::max);
        let mut rand_best = 0.0f64;
        let nn = 12;
        let mut vert_small = 0.0f64;
        for k in 1..nn {
            vert_small = vert_small.max((nn as f64).ln() - two_level_entropy(nn, k, 1.0, -1.0));
        }
        for _ in 0..3000 {
            let x: Vec<f64> = (0..nn)
                .map(|_| {
                    let u = 2.0 * rng.open_unit() - 1.0;
                    u.signum() * u.abs().powf(0.3)
                })
                .collect();
            rand_best = rand_best.max((nn as f64).ln() - k_entropy(&x, 1.0));
        }
        let ok = (gap_star - 0.4745).abs() < 5e-4 && rand_best <= vert_small + 1e-5;
        c.push(Claim::new(
            "002 §信息量 Information (5)",
            "With p_i ∝ e^{cos θ_i/τ} and τ = 1 the entropy lies in [log n − 0.4745, log n] (lower \
             bound ≈ log n − 0.4745 for large n)",
            "max over the fraction f of logits at +1 (rest at −1) of KL(p‖u) as n → ∞ (ternary \
             search, f64); finite n = 1000 by the closed form over k; optimality of the vertices \
             checked by 3000 seeded random points of [−1,1]^12 with softmax_core::entropy (f32)",
            "log n − 0.4745",
            format!(
                "n→∞: log n − H_min = {} at f = {}; n = 1000: {}; n = 12: vertices {}, random \
                 points ≤ {}",
                sci(gap_star, 4),
                sci(f_star, 3),
                sci(best_vertex, 4),
                sci(vert_small, 4),
                sci(rand_best, 4)
            ),
            holds_if(ok, "see computed"),
        ));
    }

    // ---- §1 (2): o = E_i[e^s v]/E_i[e^s] · n. ----
    {
        let n = 5;
        let s = rng.open_normals(n, 1.0);
        let v = rng.open_normals(n, 1.0);
        let o = attn64(&s, &v, 1)[0];
        let (ko, _) = k_attn(&s, &v, 1);
        let en: f64 = (0..n).map(|i| s[i].exp() * v[i]).sum::<f64>() / n as f64;
        let ed: f64 = s.iter().map(|x| x.exp()).sum::<f64>() / n as f64;
        let claimed = en / ed * n as f64;
        let corrected = en / ed;
        c.push(Claim::new(
            "002 §1 (2)",
            "o = E_i[e^{s_i} v_i] / E_i[e^{s_i}] · n (empirical means)",
            "f64 evaluation of both sides for seeded s, v (n=5); attention_core::attention (f32) \
             for o; the corrected form (without ·n) evaluated the same way",
            "ratio · n",
            format!(
                "kernel o {}, f64 o {}; ratio·n {}; ratio {}",
                sci(ko[0], 3),
                sci(o, 3),
                sci(claimed, 3),
                sci(corrected, 3)
            ),
            holds_if(
                (claimed - o).abs() < 1e-9 * o.abs().max(1.0),
                if (corrected - o).abs() < 1e-12 {
                    "o = E_i[e^{s_i} v_i] / E_i[e^{s_i}] (the 1/n of both means cancels; no ·n)"
                } else {
                    "(corrected form also fails)"
                },
            ),
        ));
    }

    // ---- §3 (10), (16), (17): theorem 1 by exact enumeration. ----
    {
        let a = 0.1f64;
        let c_mom = a.cosh(); // E[e^ε]
        let var_z = ((2.0 * a).cosh() - a.cosh() * a.cosh()).max(0.0); // Var(e^ε)
        let mut rows = Vec::new();
        let mut worst_var = 0.0f64;
        let (mut dev_ok, mut dev_chap) = (0.0f64, 0.0f64);
        for &n in &[4usize, 8, 12, 16] {
            let s = rng.open_normals(n, 1.0);
            let v: Vec<f64> = (0..n).map(|_| rng.open_normal()).collect();
            let (mean, var, o) = exact_noise(&s, &v, a);
            let al = r::softmax(&s, 1.0, None);
            let sa2: f64 = al.iter().map(|x| x * x).sum();
            let sa2v: f64 = al.iter().zip(&v).map(|(x, y)| x * x * y).sum();
            // (17): Var(Σ α_i Z_i) = Var(Z) Σ α_i² (the e^{s_i} normalised by Σ e^{s})
            worst_var = worst_var.max((var - var_z * sa2).abs() / (var_z * sa2));
            let bias = mean - o;
            // Correct second order: −Cov/μY² + Var(Y) μX / μY³, μX = c·o, μY = c.
            let good = var_z * (sa2 * o - sa2v) / (c_mom * c_mom);
            // Chapter's (16): (Cov·E[X] − Var(Y)·E[X]) / E[Y]³.
            let chap = (var_z * sa2v * c_mom * o - var_z * sa2 * c_mom * o) / c_mom.powi(3);
            dev_ok = dev_ok.max((bias - good).abs() / bias.abs());
            dev_chap = dev_chap.max((bias - chap).abs() / bias.abs());
            rows.push((n, bias, sa2));
        }
        let scal: Vec<String> = rows
            .iter()
            .map(|(n, b, sa2)| format!("n={n}: bias {}, Σα² {}", sci(*b, 3), sci(*sa2, 3)))
            .collect();
        let scal = format!(
            "{}; bias vs the second-order term Var(e^ε)Σα_i²(o − v_i)/c²: max rel. dev. {}",
            scal.join("; "),
            sci(dev_ok, 3)
        );
        c.push(Claim::new(
            "002 §3 (10)",
            "Theorem 1: E[õ] = o + O(1/√n) for i.i.d. noise with finite E[e^ε], Var(e^ε)",
            "exact expectation over all 2^n sign patterns of ε_i = ±0.1 (f64), seeded s~N(0,1), \
             v~N(0,1), n = 4, 8, 12, 16; the bias is Var(e^ε)Σα_i²(o − v_i)/c² = O(Σα_i²) = O(1/n) \
             for spread-out α, so O(1/√n) holds but is loose (it is the fluctuation that is \
             O(1/√n))",
            "O(1/√n)",
            scal,
            // The bias must follow its second-order term (which is O(Σα²) <= O(1/√n)); where it
            // does not, these n cannot decide the order.
            if dev_ok < 0.05 {
                Verdict::Holds
            } else {
                Verdict::NotCheckable {
                    why: "the exact bias does not follow its second-order term at n <= 16".into(),
                }
            },
        ));
        c.push(Claim::new(
            "002 §3 (16)",
            "Delta method: E[X/Y] ≈ E[X]/E[Y] + (Cov(X,Y)E[X] − Var(Y)E[X]) / E[Y]³",
            "X = Σα_i Z_i v_i, Y = Σα_i Z_i with Z_i = e^{±0.1}; exact E[X/Y] − E[X]/E[Y] by \
             enumeration (n = 4…16) vs the chapter's correction and vs the second-order delta \
             method −Cov(X,Y)/E[Y]² + Var(Y)E[X]/E[Y]³ (same enumeration)",
            "(Cov·E[X] − Var(Y)·E[X]) / E[Y]³",
            format!(
                "max rel. dev. from exact bias: chapter {}, corrected {}",
                sci(dev_chap, 3),
                sci(dev_ok, 3)
            ),
            holds_if(
                dev_chap < 0.1,
                "E[X/Y] ≈ E[X]/E[Y] − Cov(X,Y)/E[Y]² + Var(Y)E[X]/E[Y]³ = E[X]/E[Y] + \
                 (Var(Y)E[X] − Cov(X,Y)E[Y])/E[Y]³ (second-order, not first-order, expansion)",
            ),
        ));
        c.push(Claim::new(
            "002 §3 (17)",
            "Var(Σ_i Y_i Z_i) = Σ_i Var(Y_i Z_i) = σ² Σ_i e^{2 s_i} (σ² = Var(e^ε), s fixed)",
            "exact variance by enumeration over 2^n sign patterns (ε = ±0.1, n = 4…16, weights \
             normalised to α_i) vs Var(e^ε)·Σα_i², f64",
            "σ² Σ e^{2s_i}",
            format!("max rel. err {}", le(worst_var, 1e-9)),
            holds_if(worst_var < 1e-9, "—"),
        ));
    }

    // ---- §4 (21)-(23): Lipschitz bounds. ----
    {
        let (mut r21, mut r22, mut r23) = (0.0f64, 0.0f64, 0.0f64);
        let mut kworst = 0.0f64;
        let mut skipped = 0usize;
        for k in 0..200 {
            let n = 6;
            let s = rng.open_normals(n, 2.0);
            let t = 0.01 * (1 + k % 50) as f64 * if k % 3 == 0 { 30.0 } else { 1.0 };
            let eps: Vec<f64> = (0..n)
                .map(|_| {
                    if k % 2 == 0 {
                        t * (2.0 * rng.open_unit() - 1.0)
                    } else if rng.open_unit() < 0.5 {
                        t
                    } else {
                        -t
                    }
                })
                .collect();
            let v = rng.open_normals(n * 2, 1.0);
            let se: Vec<f64> = s.iter().zip(&eps).map(|(a, b)| a + b).collect();
            let (a0, a1) = (r::softmax(&s, 1.0, None), r::softmax(&se, 1.0, None));
            let ka1 = k_softmax32(&se);
            kworst = kworst.max(max_abs_diff(&ka1, &a1));
            let l1: f64 = a0.iter().zip(&a1).map(|(x, y)| (x - y).abs()).sum();
            let einf = eps.iter().fold(0.0f64, |m, x| m.max(x.abs()));
            let vmax = (0..n)
                .map(|i| norm2(&v[i * 2..i * 2 + 2]))
                .fold(0.0, f64::max);
            let dout = norm2(&diff(&attn64(&se, &v, 2), &attn64(&s, &v, 2)));
            let mid: f64 = (0..n)
                .map(|i| (a1[i] - a0[i]).abs() * norm2(&v[i * 2..i * 2 + 2]))
                .sum();
            // Below 1e-12 the differences are f64 rounding of the two softmaxes, not signal.
            if l1 > 1e-12 {
                r21 = r21.max(dout / mid).max(mid / (vmax * l1));
            } else {
                skipped += 1;
            }
            r22 = r22.max(l1 / einf);
            r23 = r23.max(dout / (vmax * einf));
        }
        c.push(Claim::new(
            "002 §4 (21)",
            "‖õ − o‖ ≤ Σ|α̃_i − α_i|·‖v_i‖ ≤ max‖v_i‖·Σ|α̃_i − α_i|",
            "f64 sweep: 200 seeded (s, ε, v), n=6, dv=2, ‖ε‖∞ from 0.01 to 15; largest ratio \
             of each side to the next (cases with Σ|Δα| < 1e-12, where both sides are f64 \
             rounding, excluded)",
            "ratios ≤ 1",
            format!(
                "max ratio {} ({skipped} rounding-level cases excluded)",
                sci(r21, 3)
            ),
            holds_if(r21 <= 1.0 + 1e-12, "—"),
        ));
        c.push(Claim::new(
            "002 §4 (22)",
            "‖softmax(s+ε) − softmax(s)‖₁ ≤ ‖ε‖∞",
            "same 200-case sweep (uniform and ±t sign patterns); softmax_core::softmax (f32) vs \
             reference::softmax (f64); the local constant is the α-mean absolute deviation of ε, \
             ≤ (max ε − min ε)/2",
            "ratio ≤ 1",
            format!(
                "max ‖Δα‖₁/‖ε‖∞ {}; max |kernel − f64| {}",
                sci(r22, 3),
                le(kworst, 1e-6)
            ),
            holds_if(r22 <= 1.0 + 1e-12, "—"),
        ));
        c.push(Claim::new(
            "002 §4 (23)",
            "‖õ − o‖ ≤ max_i‖v_i‖·‖ε‖∞ (softmax attention is Lipschitz in the scores)",
            "same 200-case sweep, f64 attention",
            "ratio ≤ 1",
            format!("max ratio {}", sci(r23, 3)),
            holds_if(r23 <= 1.0 + 1e-12, "—"),
        ));
    }

    // ---- §5 (24), (26), (27): exponential moments. ----
    {
        let mut worst = 0.0f64;
        for &sg in &[0.3f64, 1.0, 2.0] {
            let q = simpson(
                |t| (t - t * t / (2.0 * sg * sg)).exp() / (sg * (core::f64::consts::TAU).sqrt()),
                -40.0 * sg - 10.0,
                40.0 * sg + 10.0,
                20000,
            );
            worst = worst.max((q / (sg * sg / 2.0).exp() - 1.0).abs());
        }
        c.push(Claim::new(
            "002 §5 (24)",
            "ε ~ N(0, σ²): E[e^ε] = e^{σ²/2}",
            "Simpson quadrature (f64, 20000 panels) at σ = 0.3, 1, 2",
            "e^{σ²/2}",
            format!("max rel. err {}", le(worst, 1e-9)),
            holds_if(worst < 1e-9, "—"),
        ));
        let mut worst = 0.0f64;
        for &a in &[0.1f64, 1.0, 3.0] {
            let q = simpson(|t| t.exp() / (2.0 * a), -a, a, 2000);
            let f1 = (a.exp() - (-a).exp()) / (2.0 * a);
            worst = worst
                .max((q / f1 - 1.0).abs())
                .max((a.sinh() / a / f1 - 1.0).abs());
        }
        c.push(Claim::new(
            "002 §5 (26)",
            "ε ~ U(−a, a): E[e^ε] = (e^a − e^{−a})/(2a) = sinh(a)/a",
            "Simpson quadrature (f64) at a = 0.1, 1, 3, and both closed forms",
            "sinh(a)/a",
            format!("max rel. err {}", le(worst, 1e-9)),
            holds_if(worst < 1e-9, "—"),
        ));
        let lap =
            |b: f64, l: f64| simpson(|t| (-t.abs() / b + t).exp() / (2.0 * b), -l, l, 200_000);
        let q05 = lap(0.5, 60.0);
        let (q1a, q1b) = (lap(1.0, 50.0), lap(1.0, 100.0));
        let (q2a, q2b) = (lap(2.0, 20.0), lap(2.0, 40.0));
        let ok =
            (q05 / (1.0 / (1.0 - 0.25)) - 1.0).abs() < 1e-8 && q1b > 1.9 * q1a && q2b > 100.0 * q2a;
        c.push(Claim::new(
            "002 §5 (27)",
            "ε ~ Laplace(0, b): E[e^ε] = ∫ e^{−|t|/b} e^t/(2b) dt diverges when b > 1",
            "Simpson quadrature (f64) truncated to [−L, L]: b = 0.5 vs the closed form \
             1/(1−b²); b = 1 and b = 2 grow without bound as L doubles",
            "diverges for b > 1",
            format!(
                "b=0.5: {} (1/(1−b²) = {}); b=1: L=50 {}, L=100 {}; b=2: L=20 {}, L=40 {} \
                 (finite exactly for b < 1; the chapter's b > 1 is true, b = 1 also diverges)",
                sci(q05, 4),
                sci(1.0 / 0.75, 4),
                sci(q1a, 3),
                sci(q1b, 3),
                sci(q2a, 3),
                sci(q2b, 3)
            ),
            holds_if(ok, "—"),
        ));
    }

    // ---- §6 (30)/(31): H = log Z − Σ s_i e^{s_i}/Z. ----
    {
        let mut worst = 0.0f64;
        let mut kw = 0.0f64;
        for _ in 0..20 {
            let s = rng.open_normals(8, 2.0);
            let z: f64 = s.iter().map(|x| x.exp()).sum();
            let h = z.ln() - s.iter().map(|x| x * x.exp()).sum::<f64>() / z;
            let h64 = r::entropy(&s, 1.0, None);
            worst = worst.max((h - h64).abs());
            kw = kw.max((k_entropy(&s, 1.0) - h64).abs());
        }
        c.push(Claim::new(
            "002 §6 (29)-(31)",
            "H(s) = log Z − Σ_i s_i e^{s_i}/Z with Z = Σ_j e^{s_j}",
            "closed form in f64 vs reference::entropy (f64) and softmax_core::entropy (f32), 20 \
             seeded rows (n=8, s~N(0,4))",
            "—",
            format!(
                "max |closed − f64| {}, max |kernel − f64| {}",
                le(worst, 1e-12),
                le(kw, 1e-6)
            ),
            holds_if(worst < 1e-12 && kw < 1e-5, "—"),
        ));
    }

    // ---- §7 (32)/(33): σ → ∞ gives one-hot, H → 0. ----
    {
        let n = 16;
        let mut hs = Vec::new();
        let mut kdev = 0.0f64;
        for &sg in &[1.0f64, 10.0, 100.0, 1000.0] {
            let mut m = 0.0;
            for _ in 0..50 {
                let x = rng.open_normals(n, sg);
                let h64 = r::entropy(&x, 1.0, None);
                kdev = kdev.max((k_entropy(&x, 1.0) - h64).abs());
                m += h64;
            }
            hs.push(m / 50.0);
        }
        c.push(Claim::new(
            "002 §7 (32)-(33)",
            "s_i ~ N(0, σ²), σ → ∞: α → one-hot at argmax s, H → 0",
            "reference::entropy (f64), mean over 50 seeded rows, n = 16, σ = 1, 10, 100, 1000; \
             softmax_core::entropy (f32) beside (absolute error bound ~16u(1 + E_p|s − max s|))",
            "H → 0",
            format!(
                "mean H: {}; max |kernel − f64| {}",
                sci_list(&hs[..4], 3),
                le(kdev, 1e-3)
            ),
            holds_if(hs[3] < 1e-2 && hs[3] < hs[1] && hs[1] < hs[0], "—"),
        ));
    }

    // ---- §7 (34) and §13 (60): softmax Jacobian. ----
    let jac_fd = |s: &[f64]| -> Vec<Vec<f64>> {
        let h = 1e-5;
        (0..s.len())
            .map(|i| {
                let (mut p, mut m) = (s.to_vec(), s.to_vec());
                p[i] += h;
                m[i] -= h;
                let (ap, am) = (r::softmax(&p, 1.0, None), r::softmax(&m, 1.0, None));
                ap.iter()
                    .zip(&am)
                    .map(|(x, y)| (x - y) / (2.0 * h))
                    .collect()
            })
            .collect()
    };
    {
        let mut worst = 0.0f64;
        let mut kworst = 0.0f64;
        for _ in 0..20 {
            let s = rng.open_normals(6, 1.5);
            let a = r::softmax(&s, 1.0, None);
            let j = jac_fd(&s); // j[i][k] = ∂α_k/∂s_i
            for (i, row) in j.iter().enumerate() {
                for (k, &d) in row.iter().enumerate() {
                    let f = if i == k {
                        a[i] * (1.0 - a[i])
                    } else {
                        -a[i] * a[k]
                    };
                    worst = worst.max((d - f).abs());
                }
            }
            // softmax_vjp kernel: dx = J^T dy; compare with the formula.
            let dy = rng.open_normals(6, 1.0);
            let ay = to32(&a);
            let mut dx = vec![0.0f32; 6];
            softmax_core::softmax_vjp(&ay, &to32(&dy), &mut dx).expect("equal lengths");
            let dot: f64 = a.iter().zip(&dy).map(|(x, y)| x * y).sum();
            for i in 0..6 {
                kworst = kworst.max((dx[i] as f64 - a[i] * (dy[i] - dot)).abs());
            }
        }
        let mut s = vec![0.0; 6];
        s[2] = 20.0;
        let jn = jac_fd(&s);
        let jmax = jn.iter().flatten().fold(0.0f64, |m, x| m.max(x.abs()));
        c.push(Claim::new(
            "002 §7 (34); §13 (60)",
            "∂α_j/∂s_i = α_i(1 − α_i) for i = j and −α_iα_j for i ≠ j; near one-hot all entries → 0 \
             (vanishing gradient)",
            "central differences (h = 1e-5, f64 reference softmax) on 20 seeded rows (n = 6); \
             softmax_core::softmax_vjp (f32) vs α⊙(dy − α·dy); Jacobian at s = 20·e_3",
            "—",
            format!(
                "max |FD − formula| {}, max |vjp kernel − formula| {}, max |J| near one-hot {}",
                le(worst, 1e-8),
                le(kworst, 1e-6),
                le(jmax, 1e-7)
            ),
            holds_if(worst < 1e-8 && kworst < 1e-5 && jmax < 1e-7, "—"),
        ));
    }

    // ---- §8 (35): Gaussian scores, C ≈ 0.4745 at σ = 1. ----
    {
        let n = 1usize << 16;
        let mut gaps = 0.0;
        let mut kw = 0.0f64;
        let reps = 8;
        for _ in 0..reps {
            let s = rng.open_normals(n, 1.0);
            let h64 = r::entropy(&s, 1.0, None);
            kw = kw.max((k_entropy(&s, 1.0) - h64).abs());
            gaps += (n as f64).ln() - h64;
        }
        let gap = gaps / reps as f64;
        c.push(Claim::new(
            "002 §8 (35)",
            "s_i ~ N(μ, σ²): H ≈ log n − C with C ≈ 0.4745 at σ = 1",
            "large-n limit in closed form: log n − H → E[s e^s]/E[e^s] − log E[e^s] = σ² − σ²/2 = \
             σ²/2; Monte Carlo: 8 seeded rows of n = 2^16, reference::entropy (f64) with \
             softmax_core::entropy (f32) beside",
            "C ≈ 0.4745",
            format!(
                "MC mean log n − H = {} (closed form 0.5); max |kernel − f64| {}",
                sci(gap, 3),
                le(kw, 1e-5)
            ),
            holds_if(
                (gap - 0.4745).abs() < (gap - 0.5).abs(),
                "C = σ²/2, i.e. 0.5 at σ = 1 (0.4745 is the τ = 1 cosine-score bound of §信息量, \
                 not the Gaussian value)",
            ),
        ));
    }

    // ---- §8 (36), (37) and §9 (43): range of H at τ = 1. ----
    {
        let n = 1000;
        let ln_n = (n as f64).ln();
        let hmin = (1..n)
            .map(|k| two_level_entropy(n, k, 1.0, -1.0))
            .fold(f64::INFINITY, f64::min);
        c.push(Claim::new(
            "002 §8 (36)",
            "The entropy range is approximately [0.4745, log n] rather than [0, log n] (H_min ≈ \
             log n − 0.4745 even for standard normal scores)",
            "the minimum over vertices of [−1,1]^n (claim of §信息量, n = 1000, f64 closed form); \
             Gaussian scores are unbounded (H → 0 as the gap grows, see §7), so they have no \
             such lower bound",
            "[0.4745, log n]",
            format!(
                "n = 1000: H_min {} = log n − {}, log n = {}",
                sci(hmin, 4),
                sci(ln_n - hmin, 4),
                sci(ln_n, 4)
            ),
            holds_if(
                (hmin - 0.4745).abs() < 0.01,
                "for cosine scores at τ = 1: H ∈ [log n − 0.4745, log n] (large n); bounded below \
                 by log n − 0.4745, not by 0.4745",
            ),
        ));
        c.push(Claim::new(
            "002 §8 (37)",
            "Learnable information ΔH = H_max − H_min ≈ log n − 0.4745",
            "same closed form: H_max − H_min with H_max = log n, n = 1000",
            "log n − 0.4745",
            format!(
                "ΔH = {} (log n − 0.4745 = {})",
                sci(ln_n - hmin, 4),
                sci(ln_n - 0.4745, 4)
            ),
            holds_if(
                ((ln_n - hmin) - (ln_n - 0.4745)).abs() < 0.01,
                "ΔH ≈ 0.4745 nats for τ = 1 (too small, which is why τ must be lowered)",
            ),
        ));
        c.push(Claim::new(
            "002 §9 (43)",
            "For cosine scores and τ = 1: H ∈ [0, log n − 0.4745]",
            "same closed form (n = 1000): H_min and H_max = log n (all scores equal)",
            "[0, log n − 0.4745]",
            format!("[{}, {}]", sci(hmin, 4), sci(ln_n, 4)),
            // The claimed interval starts at 0; the computed minimum is log n − 0.4745.
            holds_if(
                hmin < 0.01,
                "H ∈ [log n − 0.4745, log n] (approximately, for large n)",
            ),
        ));
    }

    // ---- §9 (39), (40): τ limits. ----
    {
        let s = [0.3, -1.2, 0.9, 0.1, -0.4];
        let h0 = k_entropy(&s, 1e-3);
        let hi = k_entropy(&s, 1e3);
        let (r0, ri) = (r::entropy(&s, 1e-3, None), r::entropy(&s, 1e3, None));
        let a0 = k_softmax32(&s.iter().map(|x| x / 1e-3).collect::<Vec<_>>());
        let ln5 = 5f64.ln();
        c.push(Claim::new(
            "002 §9 (39)-(40); §22 (80)",
            "τ → 0: softmax(s/τ) → one-hot at argmax s, H → 0; τ → ∞: α → 1/n, H → log n",
            "softmax_core::entropy (f32) at τ = 1e-3 and 1e3 with reference::entropy (f64) beside, \
             s = (0.3, −1.2, 0.9, 0.1, −0.4); softmax_core::softmax of s/1e-3",
            "0 and log n",
            format!(
                "τ=1e-3: H kernel {}, f64 {}, α_argmax {}; τ=1e3: H kernel {}, f64 {}, log 5 − H {}",
                le(h0, 1e-6),
                sci(r0, 3),
                sci(a0[2], 3),
                sci(hi, 4),
                sci(ri, 4),
                sci(ln5 - ri, 3)
            ),
            holds_if(h0 < 1e-6 && (a0[2] - 1.0).abs() < 1e-6 && ln5 - ri < 1e-3, "—"),
        ));
    }

    // ---- §9 (42): H(τ) closed form. ----
    {
        let mut worst = 0.0f64;
        let mut kw = 0.0f64;
        for k in 0..20 {
            let tau = [0.07, 0.3, 1.0, 5.0][k % 4];
            let s: Vec<f64> = (0..8).map(|_| 2.0 * rng.open_unit() - 1.0).collect();
            let z: f64 = s.iter().map(|x| (x / tau).exp()).sum();
            let h = z.ln() - s.iter().map(|x| x * (x / tau).exp()).sum::<f64>() / (tau * z);
            let h64 = r::entropy(&s, tau, None);
            worst = worst.max((h - h64).abs());
            kw = kw.max((k_entropy(&s, tau) - h64).abs());
        }
        c.push(Claim::new(
            "002 §9 (41)-(42)",
            "H(τ) = log Σ_j e^{s_j/τ} − (1/τ)·Σ_i s_i e^{s_i/τ} / Σ_j e^{s_j/τ}",
            "closed form in f64 vs reference::entropy (f64) and softmax_core::entropy (f32, \
             temperature argument), 20 seeded rows s ∈ [−1,1]^8, τ ∈ {0.07, 0.3, 1, 5}",
            "—",
            format!(
                "max |closed − f64| {}, max |kernel − f64| {}",
                le(worst, 1e-12),
                le(kw, 1e-6)
            ),
            holds_if(worst < 1e-10 && kw < 1e-5, "—"),
        ));
    }

    // ---- §9 (44), (45): τ = 0.07. ----
    {
        let inv = 1.0 / 0.07;
        c.push(Claim::new(
            "002 §9 (44)",
            "τ = 0.07 maps cos θ ∈ [−1, 1] to [−1/τ, 1/τ] = [−14.3, 14.3]",
            "direct f64 evaluation",
            "14.3",
            sci(inv, 3),
            holds_if(format!("{inv:.1}") == "14.3", "—"),
        ));
        let hmin = |n: usize| {
            (1..n.min(50))
                .map(|k| two_level_entropy(n, k, inv, -inv))
                .fold(f64::INFINITY, f64::min)
        };
        let (h3, h6) = (hmin(1000), hmin(1_000_000));
        let mut x = vec![-1.0; 1000];
        x[0] = 1.0;
        let hk = k_entropy(&x, 0.07);
        c.push(Claim::new(
            "002 §9 (45); §信息量 Information",
            "With τ = 0.07 the entropy's lower bound is close to 0: H ∈ [0, log n] (approximately)",
            "closed form over vertices of [−1,1]^n (k entries at +1), n = 1000 and 10^6, f64; \
             softmax_core::entropy (f32) with τ = 0.07 for one +1 among 999 −1",
            "H_min ≈ 0",
            format!(
                "H_min: n=1e3 {} (|kernel − f64| {}), n=1e6 {}",
                sci(h3, 3),
                le((hk - h3).abs(), 1e-6),
                sci(h6, 3)
            ),
            holds_if(h3 < 0.01 && h6 < 0.1, "—"),
        ));
    }

    // ---- §10 (47): H = log n − KL(α‖u). ----
    {
        let (mut worst, mut kw) = (0.0f64, 0.0f64);
        for _ in 0..20 {
            let s = rng.open_normals(7, 1.5);
            let h64 = r::entropy(&s, 1.0, None);
            let kl = softmax_core::kl_divergence(Poly, &to32(&s), &[0.0f32; 7])
                .expect("equal lengths") as f64;
            let kl64 = r::kl(&s, &[0.0; 7]);
            worst = worst.max((7f64.ln() - kl64 - h64).abs());
            kw = kw.max((7f64.ln() - kl - h64).abs());
        }
        c.push(Claim::new(
            "002 §10 (47)",
            "H(α) = log n − KL(α ‖ u), u uniform",
            "reference::kl and softmax_core::kl_divergence (f32, against zero logits) vs \
             reference::entropy, 20 seeded rows (n = 7)",
            "—",
            format!(
                "max |log n − KL − H|: f64 {}, kernel KL {}",
                le(worst, 1e-12),
                le(kw, 1e-6)
            ),
            holds_if(worst < 1e-12 && kw < 1e-5, "—"),
        ));
    }

    // ---- §10 (48)/(49): Fisher metric. ----
    {
        let al = r::softmax(&rng.open_normals(4, 1.0), 1.0, None);
        let n = 4;
        // (48) with p(x|α) = α_x: score_i(x) = δ_{xi}/α_i; exact expectation over x.
        let mut g = vec![vec![0.0; n]; n];
        for x in 0..n {
            for i in 0..n {
                for j in 0..n {
                    let si = if x == i { 1.0 / al[i] } else { 0.0 };
                    let sj = if x == j { 1.0 / al[j] } else { 0.0 };
                    g[i][j] += al[x] * si * sj;
                }
            }
        }
        let mut dev_chap = 0.0f64;
        let mut dev_ok = 0.0f64;
        for i in 0..n {
            for j in 0..n {
                let d = if i == j { 1.0 / al[i] } else { 0.0 };
                dev_chap = dev_chap.max((g[i][j] - (d - 1.0)).abs());
                dev_ok = dev_ok.max((g[i][j] - d).abs());
            }
        }
        // Tangent vectors (Σu = 0): the two forms give the same quadratic form.
        let u = [0.3, -0.5, 0.1, 0.1];
        let qa: f64 = (0..n).map(|i| u[i] * u[i] / al[i]).sum();
        let qb = qa - u.iter().sum::<f64>().powi(2);
        c.push(Claim::new(
            "002 §10 (48)-(49)",
            "Fisher information of the categorical distribution: g_ij = δ_ij/α_i − 1",
            "exact expectation over x of (48) with p(x|α) = α_x (f64, seeded α, n = 4); the \
             corrected form checked the same way; quadratic forms on a tangent vector (Σu = 0)",
            "δ_ij/α_i − 1",
            format!(
                "max |E[∂ᵢ∂ⱼ] − chapter| {}, vs δ_ij/α_i {}; on Σu=0: {} vs {}",
                sci(dev_chap, 3),
                sci(dev_ok, 3),
                sci(qa, 4),
                sci(qb, 4)
            ),
            holds_if(
                dev_chap < 1e-12,
                "(48) gives g_ij = δ_ij/α_i (in n−1 free coordinates δ_ij/α_i + 1/α_n); \
                 δ_ij/α_i − 1 is the score covariance, equal to g only on tangent vectors Σu_i = 0",
            ),
        ));
    }

    // ---- §10 (50): gradient of entropy. ----
    {
        let al = r::softmax(&rng.open_normals(5, 1.0), 1.0, None);
        let h = |a: &[f64]| -a.iter().map(|x| x * x.ln()).sum::<f64>();
        let hh = h(&al);
        let fd: Vec<f64> = (0..5)
            .map(|i| {
                let (mut p, mut m) = (al.clone(), al.clone());
                p[i] += 1e-6;
                m[i] -= 1e-6;
                (h(&p) - h(&m)) / 2e-6
            })
            .collect();
        let eu: Vec<f64> = al.iter().map(|x| -x.ln() - 1.0).collect();
        let e_fd = max_abs_diff(&fd, &eu);
        // Riemannian gradient under the Fisher metric on the simplex: grad = −α⊙(log α + H).
        let rg: Vec<f64> = al.iter().map(|x| -x * (x.ln() + hh)).collect();
        // Defining property on tangent u: Σ grad_i u_i / α_i = Σ (∂H/∂α_i) u_i.
        let u = [0.2, -0.1, 0.05, -0.3, 0.15];
        let lhs = |g: &[f64]| (0..5).map(|i| g[i] * u[i] / al[i]).sum::<f64>();
        let rhs: f64 = (0..5).map(|i| eu[i] * u[i]).sum();
        let (res_chap, res_ok) = ((lhs(&eu) - rhs).abs(), (lhs(&rg) - rhs).abs());
        let tang_chap: f64 = eu.iter().sum();
        // Does the ascent direction point toward uniform? ⟨grad, u − α⟩ > 0.
        let toward: f64 = (0..5).map(|i| eu[i] * (0.2 - al[i])).sum();
        c.push(Claim::new(
            "002 §10 (50)",
            "Under the Fisher metric the gradient of entropy is ∇_α H = −log α − 1, pointing toward \
             the uniform distribution",
            "central differences (f64, h = 1e-6) of H(α) in the ambient coordinates; the \
             Riemannian gradient checked by its defining identity ⟨grad, u⟩_g = dH(u) on a tangent \
             u (f64); ⟨−log α − 1, u_unif − α⟩",
            "−log α − 1",
            format!(
                "|FD − (−log α − 1)| {}; metric identity residual: chapter {}, corrected {}; Σ \
                 components {} (not tangent); ⟨∇H, u−α⟩ {}",
                le(e_fd, 1e-7),
                sci(res_chap, 3),
                le(res_ok, 1e-12),
                sci(tang_chap, 3),
                sci(toward, 3)
            ),
            holds_if(
                res_chap < 1e-9,
                "−log α − 1 is the Euclidean gradient (FD-checked, and it does point toward \
                 uniform); the Fisher-metric gradient on the simplex is −α⊙(log α + H)",
            ),
        ));
    }

    c.push(Claim::new(
        "002 §11 (51); §19",
        "Training dynamics of attention entropy (log n → intermediate → H_final; layer and task \
         differences)",
        "—",
        "—",
        "—",
        Verdict::NotCheckable {
            why: "empirical statement about trained Transformers; needs training runs and data \
                  we do not have"
                .to_string(),
        },
    ));

    // ---- §12 (52)-(53): LSE bounds. ----
    {
        let (mut lo, mut hi) = (f64::INFINITY, f64::INFINITY);
        let mut kw = 0.0f64;
        for k in 0..50 {
            let n = 2 + k % 9;
            let s = rng.open_normals(n, 0.2 + 0.2 * k as f64);
            let m = s.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
            let l64 = r::logsumexp(&s, 1.0, None);
            kw = kw.max((k_lse(&s) - l64).abs() / (1.0 + l64.abs()));
            lo = lo.min(l64 - m);
            hi = hi.min(m + (n as f64).ln() - l64);
        }
        let eq = k_lse(&[2.0; 8]) - (2.0 + 8f64.ln());
        let mut s = vec![0.0; 6];
        s[1] = 15.0;
        let gap = r::logsumexp(&s, 1.0, None) - 15.0;
        c.push(Claim::new(
            "002 §12 (52)-(53)",
            "max s ≤ log Σ e^{s_i} ≤ max s + log n; ≈ max s when one s_j dominates",
            "softmax_core::logsumexp (f32) with reference::logsumexp (f64) beside, 50 seeded rows \
             (n = 2…10); equality at equal scores; gap 15 vs (n−1)e^{−15}",
            "—",
            format!(
                "min (LSE − max) {}, min (max + log n − LSE) {}, equal scores {}, dominated {} \
                 (5e^{{−15}} = {}); kernel rel. err {}",
                sci(lo, 3),
                sci(hi, 3),
                le(eq.abs(), 1e-6),
                sci(gap, 3),
                sci(5.0 * (-15f64).exp(), 3),
                le(kw, 1e-6)
            ),
            holds_if(lo >= 0.0 && hi >= 0.0 && eq.abs() < 1e-5 && kw < 1e-6, "—"),
        ));
    }

    // ---- §12 (54)-(56): soft → hard attention. ----
    {
        let v = [1.0, 0.0, -2.0, 0.5, 0.3, -1.0, 0.2, 0.8];
        let mut errs = Vec::new();
        let mut ok = true;
        for &g in &[2.0f64, 5.0, 10.0] {
            let s = [0.0, g, 0.0, -0.5];
            let (o, _) = k_attn(&s, &v, 2);
            let a = r::softmax(&s, 1.0, None);
            let e = norm2(&diff(&o, &v[2..4]));
            let vmax = (0..4)
                .map(|i| norm2(&v[2 * i..2 * i + 2]))
                .fold(0.0, f64::max);
            ok &= e <= 2.0 * vmax * (1.0 - a[1]) + 1e-5;
            errs.push(e);
        }
        c.push(Claim::new(
            "002 §12 (54)-(56)",
            "When one score dominates, α ≈ one-hot and softmax attention ≈ hard attention v_{i*}",
            "attention_core::attention (f32) with score gaps 2, 5, 10; ‖o − v_{i*}‖ vs the bound \
             2·max‖v‖·(1 − α_{i*})",
            "o ≈ v_{i*}",
            format!("‖o − v*‖: {}", sci_list(&errs[..3], 3)),
            holds_if(ok && errs[2] < 1e-3, "—"),
        ));
    }

    // ---- §13 (61): ∂o/∂s_i = α_i(v_i − o). ----
    {
        let mut worst = 0.0f64;
        let mut kw = 0.0f64;
        for _ in 0..20 {
            let n = 5;
            let dv = 3;
            let s = rng.open_normals(n, 1.0);
            let v = rng.open_normals(n * dv, 1.0);
            let a = r::softmax(&s, 1.0, None);
            let o = attn64(&s, &v, dv);
            for i in 0..n {
                let (mut p, mut m) = (s.clone(), s.clone());
                p[i] += 1e-5;
                m[i] -= 1e-5;
                let (op, om) = (attn64(&p, &v, dv), attn64(&m, &v, dv));
                for cc in 0..dv {
                    let fd = (op[cc] - om[cc]) / 2e-5;
                    worst = worst.max((fd - a[i] * (v[i * dv + cc] - o[cc])).abs());
                }
            }
            // softmax_vjp kernel with dy_j = ⟨v_j, w⟩ gives α_i⟨v_i − o, w⟩.
            let w = rng.open_normals(dv, 1.0);
            let dy: Vec<f64> = (0..n)
                .map(|j| (0..dv).map(|cc| v[j * dv + cc] * w[cc]).sum())
                .collect();
            let mut dx = vec![0.0f32; n];
            softmax_core::softmax_vjp(&to32(&a), &to32(&dy), &mut dx).expect("equal lengths");
            for i in 0..n {
                let f: f64 = (0..dv)
                    .map(|cc| a[i] * (v[i * dv + cc] - o[cc]) * w[cc])
                    .sum();
                kw = kw.max((dx[i] as f64 - f).abs());
            }
        }
        c.push(Claim::new(
            "002 §13 (59), (61)",
            "∂o/∂s_i = α_i(1−α_i)v_i − α_iΣ_{j≠i}α_j v_j = α_i(v_i − o)",
            "central differences (f64, h = 1e-5) of the reference attention, 20 seeded cases \
             (n = 5, dv = 3); softmax_core::softmax_vjp (f32) with dy_j = ⟨v_j, w⟩ vs α_i⟨v_i − o, w⟩",
            "—",
            format!("max |FD − formula| {}, max |vjp kernel − formula| {}", le(worst, 1e-8), le(kw, 1e-6)),
            holds_if(worst < 1e-8 && kw < 1e-5, "—"),
        ));
    }

    // ---- §13 (62): the adversarial sign direction. ----
    {
        let n = 6;
        let s = rng.open_normals(n, 1.0);
        let v = rng.open_normals(n * 2, 1.0);
        let dir = [0.6, 0.8];
        let a = r::softmax(&s, 1.0, None);
        let o = attn64(&s, &v, 2);
        let g: Vec<f64> = (0..n)
            .map(|i| a[i] * ((v[2 * i] - o[0]) * dir[0] + (v[2 * i + 1] - o[1]) * dir[1]))
            .collect();
        let lin = |d: &[f64]| g.iter().zip(d).map(|(x, y)| x * y).sum::<f64>();
        let eps = 0.01;
        let star: Vec<f64> = g.iter().map(|x| eps * x.signum()).collect();
        let best = lin(&star);
        let mut rand_best = f64::NEG_INFINITY;
        for _ in 0..2000 {
            let d: Vec<f64> = (0..n)
                .map(|_| eps * (2.0 * rng.open_unit() - 1.0))
                .collect();
            rand_best = rand_best.max(lin(&d));
        }
        // Actual (nonlinear) change along dir.
        let se: Vec<f64> = s.iter().zip(&star).map(|(a, b)| a + b).collect();
        let oe = attn64(&se, &v, 2);
        let actual = (oe[0] - o[0]) * dir[0] + (oe[1] - o[1]) * dir[1];
        c.push(Claim::new(
            "002 §13 (62)",
            "δ*_i = ε·sign(⟨∂o/∂s_i, v⟩) maximises the (first-order) change of o along a target \
             direction v",
            "linearised objective Σ_i δ_i⟨∂o/∂s_i, v⟩ over the ℓ∞ ball ‖δ‖∞ ≤ ε = 0.01 (the \
             chapter leaves the norm in (57) unspecified; under ℓ2 the maximiser would be \
             ε·g/‖g‖): δ* vs 2000 seeded random δ, and the true change of the f64 attention",
            "—",
            format!(
                "linear gain δ*: {}, best random {}, true change {}",
                sci(best, 3),
                sci(rand_best, 3),
                sci(actual, 3)
            ),
            holds_if(
                best >= rand_best && (actual - best).abs() < 0.05 * best.abs(),
                "—",
            ),
        ));
    }

    // ---- §13: robustness analysis (factor α_i(1−α_i); uniform most attackable). ----
    {
        // First-order ℓ∞ sensitivity of scalar o: max_{‖δ‖∞≤1} |Σ α_i(v_i − o)δ_i| = Σ α_i|v_i − o|.
        let v = [1.0, -1.0, 0.0, 0.0];
        let sens = |s: &[f64]| {
            let a = r::softmax(s, 1.0, None);
            let o: f64 = a.iter().zip(&v).map(|(x, y)| x * y).sum();
            a.iter()
                .zip(&v)
                .map(|(x, y)| x * (y - o).abs())
                .sum::<f64>()
        };
        let su = sens(&[0.0; 4]);
        let sc = sens(&[0.0, 0.0, -30.0, -30.0]);
        let hu = k_entropy(&[0.0; 4], 1.0);
        let hc = k_entropy(&[0.0, 0.0, -30.0, -30.0], 1.0);
        c.push(Claim::new(
            "002 §13",
            "Sensitivity to adversarial score perturbations is largest for the uniform (maximum \
             entropy) attention; the factor α_i(1−α_i) in (61) peaks at α_i = 0.5",
            "counter-example in f64: scalar values v = (1, −1, 0, 0); first-order ℓ∞ sensitivity \
             Σα_i|v_i − o| (exact maximum of the linearisation) at uniform α vs α = (½, ½, 0, 0); \
             entropies by softmax_core::entropy (f32)",
            "uniform is worst",
            format!(
                "uniform: sensitivity {}, H {}; (½,½,0,0): sensitivity {}, H {}",
                sci(su, 3),
                sci(hu, 3),
                sci(sc, 3),
                sci(hc, 3)
            ),
            holds_if(
                su >= sc,
                "the first-order ℓ∞ sensitivity is Σα_i|v_i − o| (the α-mean absolute deviation \
                 of v), largest when α splits between extreme values, not at the uniform α; (61) \
                 has the factor α_i(v_i − o), not α_i(1−α_i)",
            ),
        ));
    }

    // ---- §14 (63): scaled dot-product attention. ----
    {
        let (n, d, dv) = (6usize, 8usize, 3usize);
        let q = rng.open_normals(d, 1.0);
        let k = rng.open_normals(n * d, 1.0);
        let v = rng.open_normals(n * dv, 1.0);
        let dims = Dims::new(1, 1, 1, n, d, dv);
        let mut o = vec![0.0f32; dv];
        let (qf, kf, vf) = (to32(&q), to32(&k), to32(&v));
        attention(
            Poly,
            &dims,
            Qkv::new(&qf, &kf, &vf),
            &Options::new(),
            Output::new(&mut o),
        )
        .expect("valid dimensions");
        let s: Vec<f64> = (0..n)
            .map(|j| (0..d).map(|t| q[t] * k[j * d + t]).sum::<f64>() / (d as f64).sqrt())
            .collect();
        let o64 = attn64(&s, &v, dv);
        let o32: Vec<f64> = o.iter().map(|&x| x as f64).collect();
        let e = max_abs_diff(&o32, &o64);
        c.push(Claim::new(
            "002 §14 (63)",
            "Scaled dot-product attention o = softmax(QKᵀ/√d)·V",
            "attention_core::attention (f32, default scale) vs f64 softmax(q·k_j/√d)-weighted sum, \
             seeded n = 6, d = 8, dv = 3",
            "—",
            format!("max |kernel − f64| {}", le(e, 1e-6)),
            holds_if(e < 1e-5, "—"),
        ));
    }

    // ---- §14 (64)-(66): variance of q·k. ----
    {
        let (d, m, sg) = (64usize, 20000usize, 0.7f64);
        let (mut s1, mut s2) = (0.0, 0.0);
        for _ in 0..m {
            let dot: f64 = (0..d)
                .map(|_| sg * rng.open_normal() * sg * rng.open_normal())
                .sum();
            s1 += dot;
            s2 += dot * dot;
        }
        let mean = s1 / m as f64;
        let var = s2 / m as f64 - mean * mean;
        let want = d as f64 * sg.powi(4);
        // Standard error of a sample variance ≈ var·√(2/m) (Gaussian-like): ~1%.
        let ok = (var / want - 1.0).abs() < 4.0 * (2.0 / m as f64).sqrt() * 1.5;
        c.push(Claim::new(
            "002 §14 (64)-(66)",
            "q, k with i.i.d. zero-mean entries of variance σ²: E[q·k] = 0, Var(q·k) = dσ⁴, and \
             Var(q·k/√d) = σ⁴",
            "Monte Carlo in f64: 20000 seeded pairs, d = 64, σ = 0.7 (tolerance 4 standard \
             errors of a sample variance, ×1.5 for the heavier tail of products)",
            "dσ⁴",
            format!(
                "mean {}, Var {} (dσ⁴ = {}), Var/d {} (σ⁴ = {})",
                sci(mean, 3),
                sci(var, 3),
                sci(want, 3),
                sci(var / d as f64, 3),
                sci(sg.powi(4), 3)
            ),
            holds_if(ok, "—"),
        ));
    }

    // ---- §14 (67): unscaled scores → H → 0 as d grows. ----
    {
        let n = 16;
        let mut hu = Vec::new();
        let mut kdev = 0.0f64;
        let mut hsc = Vec::new();
        for &d in &[16usize, 256, 4096] {
            let (mut a, mut b) = (0.0, 0.0);
            let reps = 6;
            for _ in 0..reps {
                let q = rng.open_normals(d, 1.0);
                let k = rng.open_normals(n * d, 1.0);
                let v = vec![0.0f64; n];
                let (qf, kf, vf) = (to32(&q), to32(&k), to32(&v));
                let dims = Dims::new(1, 1, 1, n, d, 1);
                for (scale, acc) in [(1.0f32, &mut a), (1.0 / (d as f32).sqrt(), &mut b)] {
                    let sc: Vec<f64> = (0..n)
                        .map(|j| {
                            scale as f64
                                * (0..d)
                                    .map(|t| qf[t] as f64 * kf[j * d + t] as f64)
                                    .sum::<f64>()
                        })
                        .collect();
                    let h64 = r::entropy(&sc, 1.0, None);
                    let mut o = [0.0f32];
                    let mut e = [0.0f32];
                    attention(
                        Poly,
                        &dims,
                        Qkv::new(&qf, &kf, &vf),
                        &Options::new().with_scale(scale),
                        Output::new(&mut o).with_entropy(&mut e),
                    )
                    .expect("valid dimensions");
                    kdev = kdev.max((e[0] as f64 - h64).abs());
                    *acc += h64 / reps as f64;
                }
            }
            hu.push(a);
            hsc.push(b);
        }
        c.push(Claim::new(
            "002 §14 (67)",
            "Without the 1/√d scale, as d → ∞ the attention becomes one-hot (H → 0); with it the \
             entropy stays in a reasonable range",
            "reference::entropy (f64) of the scores scale·q·k_j, n = 16 keys, q, k ~ N(0, I_d), \
             mean over 6 seeded cases, d = 16, 256, 4096, scale 1 vs 1/√d; the entropy output \
             of attention_core::attention (f32) beside",
            "H → 0 unscaled",
            format!(
                "unscaled H: {}; scaled H: {} (log 16 = {}); max |kernel − f64| {}",
                sci_list(&hu[..3], 3),
                sci_list(&hsc[..3], 3),
                sci(16f64.ln(), 3),
                le(kdev, 1e-3)
            ),
            holds_if(hu[2] < hu[0] && hu[2] < 0.1 && hsc[2] > 1.0, "—"),
        ));
    }

    c.push(Claim::new(
        "002 §15 (68)",
        "Information bottleneck L_IB = I(Z;X) − βI(Z;Y); high attention entropy keeps more \
         information; an optimal entropy H* exists",
        "—",
        "—",
        "—",
        Verdict::NotCheckable {
            why: "definition plus qualitative statements about learned representations; no \
                  computable quantity is specified"
                .to_string(),
        },
    ));

    // ---- §16 (71): entropy of independent heads adds. ----
    {
        let (a, b) = (rng.open_normals(5, 1.0), rng.open_normals(4, 1.5));
        let joint: Vec<f64> = a
            .iter()
            .flat_map(|x| b.iter().map(move |y| x + y))
            .collect();
        let (ha, hb, hj) = (
            k_entropy(&a, 1.0),
            k_entropy(&b, 1.0),
            k_entropy(&joint, 1.0),
        );
        let (ra, rb, rj) = (
            r::entropy(&a, 1.0, None),
            r::entropy(&b, 1.0, None),
            r::entropy(&joint, 1.0, None),
        );
        c.push(Claim::new(
            "002 §16 (71)",
            "For independent heads the total entropy is Σ_i H_i",
            "entropy of the product distribution softmax(a) ⊗ softmax(b) (logits a_i + b_j) vs \
             H(a) + H(b): softmax_core::entropy (f32) with reference::entropy (f64) beside",
            "H₁ + H₂",
            format!(
                "kernel: H joint {}, sum {}; f64: |H joint − sum| {}",
                sci(hj, 4),
                sci(ha + hb, 4),
                le((rj - ra - rb).abs(), 1e-12)
            ),
            holds_if((rj - ra - rb).abs() < 1e-12, "—"),
        ));
    }

    // ---- §17: spectral claims. ----
    let attn_matrix = |rng: &mut Rng, n: usize| -> Vec<Vec<f64>> {
        let d = 4;
        let q = rng.open_normals(n * d, 1.0);
        let k = rng.open_normals(n * d, 1.0);
        (0..n)
            .map(|i| {
                let s: Vec<f64> = (0..n)
                    .map(|j| (0..d).map(|t| q[i * d + t] * k[j * d + t]).sum::<f64>() / 2.0)
                    .collect();
                r::softmax(&s, 1.0, None)
            })
            .collect()
    };
    {
        let mut worst_row = 0.0f64;
        let mut worst_dob = 0.0f64;
        for _ in 0..20 {
            let a = attn_matrix(&mut rng, 6);
            for row in &a {
                worst_row = worst_row.max((row.iter().sum::<f64>() - 1.0).abs());
            }
            // Dobrushin coefficient: bounds every non-Perron eigenvalue's modulus.
            let mut dob = 0.0f64;
            for i in 0..6 {
                for j in 0..6 {
                    let ov: f64 = (0..6).map(|t| a[i][t].min(a[j][t])).sum();
                    dob = dob.max(1.0 - ov);
                }
            }
            worst_dob = worst_dob.max(dob);
        }
        c.push(Claim::new(
            "002 §17",
            "A = softmax(QKᵀ/√d) is row-stochastic: λ₁ = 1 with eigenvector 1; every other \
             eigenvalue has |λ| < 1",
            "f64, 20 seeded 6×6 matrices (d = 4): A·1 = 1 (row sums), and the Dobrushin \
             coefficient δ(A) = 1 − min_{i,j} Σ_k min(A_ik, A_jk), which bounds |λ| of every \
             other eigenvalue, is < 1 (A is entrywise positive); a causal mask breaks this (not \
             claimed)",
            "|λ_i| < 1",
            format!(
                "max |row sum − 1| {}, max δ(A) {}",
                le(worst_row, 1e-12),
                sci(worst_dob, 3)
            ),
            holds_if(worst_row < 1e-12 && worst_dob < 1.0, "—"),
        ));
        // (72): uniform A: eigenvalues (1, 0, …, 0) but each row has H = log n.
        let n = 4;
        let h_row = k_entropy(&[0.0; 4], 1.0);
        // Eigenvalues of J/n: 1 (eigenvector 1) and 0 (kernel of J: vectors with Σ = 0).
        let a = vec![vec![0.25; n]; n];
        let apply = |x: &[f64]| -> Vec<f64> {
            (0..n)
                .map(|i| (0..n).map(|j| a[i][j] * x[j]).sum())
                .collect()
        };
        let e1 = max_abs_diff(&apply(&[1.0; 4]), &[1.0; 4]);
        let e0 = norm2(&apply(&[1.0, -1.0, 0.0, 0.0]))
            + norm2(&apply(&[0.0, 1.0, -1.0, 0.0]))
            + norm2(&apply(&[0.0, 0.0, 1.0, -1.0]));
        c.push(Claim::new(
            "002 §17 (72)",
            "Attention entropy relates to the eigenvalues: H ≈ −Σ_i λ_i log λ_i",
            "counter-example: uniform 4×4 A (all scores equal); eigenpairs verified exactly (A1 = \
             1, A u = 0 for three independent u with Σu = 0), so −Σλ log λ = 0, while each row's \
             entropy (softmax_core::entropy, f32) is log 4",
            "H ≈ −Σλ log λ",
            format!(
                "−Σλ log λ = 0 (|A1−1| {}, |Au| {}); row H {} (log 4 = {})",
                le(e1, 1e-12),
                le(e0, 1e-12),
                sci(h_row, 3),
                sci(4f64.ln(), 3)
            ),
            holds_if(
                h_row.abs() < 0.1,
                "no such relation: eigenvalues of a stochastic matrix can be negative or complex; \
                 the uniform A has spectrum (1, 0, 0, 0) → 0 while every row has H = log n",
            ),
        ));
        c.push(Claim::new(
            "002 §17 (73)",
            "The effective rank of the attention matrix is rank_eff(A) = exp(H)",
            "counter-example: uniform n×n A (n = 4) has rank 1 (one non-zero singular value, the \
             three Σu=0 directions are its kernel, verified above), while exp(H_row) \
             (softmax_core::entropy, f32) = n",
            "exp(H)",
            format!("rank 1, exp(H) {}", sci(h_row.exp(), 3)),
            holds_if(
                (h_row.exp() - 1.0).abs() < 0.1,
                "exp(H) of a row is its perplexity (effective number of attended keys), not the \
                 matrix's effective rank (Roy–Vetterli: exp of the entropy of the normalised \
                 singular values; 1 for the uniform A)",
            ),
        ));
    }

    // ---- §18 (74)/(75): position encodings and entropy. ----
    {
        let n = 1024;
        let (mut h0, mut h1) = (0.0, 0.0);
        let reps = 6;
        for _ in 0..reps {
            let s = rng.open_normals(n, 1.0);
            let b = rng.open_normals(n, 1.0);
            let sb: Vec<f64> = s.iter().zip(&b).map(|(x, y)| x + y).collect();
            h0 += k_entropy(&s, 1.0) / reps as f64;
            h1 += k_entropy(&sb, 1.0) / reps as f64;
        }
        let ln_n = (n as f64).ln();
        c.push(Claim::new(
            "002 §18 (74)",
            "A random (absolute) position encoding adds diversity to s_ij and usually increases the \
             entropy H",
            "softmax_core::entropy (f32), n = 1024, s ~ N(0,1) with and without an independent \
             random term b ~ N(0,1) (the random PE's contribution), mean over 6 seeded rows; \
             large-n theory log n − H ≈ Var(s)/2",
            "H increases",
            format!(
                "log n − H: without {} (theory 0.5), with {} (theory 1)",
                sci(ln_n - h0, 3),
                sci(ln_n - h1, 3)
            ),
            holds_if(
                h1 > h0,
                "independent random score terms raise Var(s) and lower the entropy (log n − H ≈ \
                 Var(s)/2 for Gaussian scores)",
            ),
        ));
        // (75): a locality bias b_{i−j} = −m|i−j| lowers entropy.
        let n = 64;
        let (mut e0, mut e1) = (0.0, 0.0);
        for _ in 0..reps {
            let s = rng.open_normals(n, 0.5);
            let sb: Vec<f64> = s
                .iter()
                .enumerate()
                .map(|(j, x)| x - 0.25 * (j as f64 - 32.0).abs())
                .collect();
            e0 += k_entropy(&s, 1.0) / reps as f64;
            e1 += k_entropy(&sb, 1.0) / reps as f64;
        }
        c.push(Claim::new(
            "002 §18 (75)",
            "A relative position bias s_ij = ⟨q_i, k_j⟩ + b_{i−j} favouring nearby tokens lowers \
             the entropy",
            "softmax_core::entropy (f32), n = 64, s ~ N(0, 0.25) with and without the ALiBi-style \
             bias −0.25·|i − j| (query at position 32), mean over 6 seeded rows",
            "H decreases",
            format!("H without {}, with {}", sci(e0, 3), sci(e1, 3)),
            holds_if(e1 < e0, "—"),
        ));
    }

    c.push(Claim::new(
        "002 §19; §23",
        "Empirical entropy patterns (per layer, per task) and visual diagnosis of heat maps",
        "—",
        "—",
        "—",
        Verdict::NotCheckable {
            why: "empirical observations about trained models; no data or models available"
                .to_string(),
        },
    ));

    // ---- §20 (76): entropy regularisation sign. ----
    {
        let lam = 0.5;
        let mut s = rng.open_normals(6, 1.0);
        let h_start = r::entropy(&s, 1.0, None);
        for _ in 0..200 {
            let g: Vec<f64> = (0..6)
                .map(|i| {
                    let (mut p, mut m) = (s.clone(), s.clone());
                    p[i] += 1e-5;
                    m[i] -= 1e-5;
                    (r::entropy(&p, 1.0, None) - r::entropy(&m, 1.0, None)) / 2e-5
                })
                .collect();
            for i in 0..6 {
                s[i] -= 0.5 * lam * g[i];
            }
        }
        let h_end = k_entropy(&s, 1.0);
        let h_end64 = r::entropy(&s, 1.0, None);
        c.push(Claim::new(
            "002 §20 (76)",
            "L_total = L_task + λH(α): λ > 0 encourages high entropy (smooth attention), λ < 0 low \
             entropy",
            "gradient descent (200 steps, lr 0.5, central-difference gradients in f64) on the \
             λH term alone with λ = 0.5 from seeded logits (n = 6); final entropy by \
             softmax_core::entropy (f32) and reference::entropy (f64)",
            "λ > 0 → higher H",
            format!(
                "H start {}, after minimising: kernel {}, f64 {}",
                sci(h_start, 3),
                sci(h_end, 3),
                sci(h_end64, 3)
            ),
            holds_if(
                h_end64 > h_start,
                "minimising L_task + λH with λ > 0 lowers the entropy; high entropy needs \
                 L_task − λH (λ > 0), as in Pereyra et al.'s confidence penalty",
            ),
        ));
    }

    // ---- §20: label smoothing as entropy regularisation. ----
    {
        let (cls, t, e) = (5usize, 2usize, 0.1f64);
        let p: Vec<f64> = (0..cls)
            .map(|c| {
                if c == t {
                    1.0 - e + e / cls as f64
                } else {
                    e / cls as f64
                }
            })
            .collect();
        let z: Vec<f64> = p.iter().map(|x| x.ln()).collect();
        let zf = to32(&z);
        let grad_at = |eps: f32| -> f64 {
            let mut g = vec![0.0f32; cls];
            loss_core::cross_entropy(
                Poly,
                &zf,
                cls,
                &[t as i64],
                &loss_core::CrossEntropyOptions::new().with_label_smoothing(eps),
                loss_core::CrossEntropyOutputs::new().with_grad(&mut g),
            )
            .expect("valid target and smoothing");
            g.iter().fold(0.0f64, |m, &x| m.max((x as f64).abs()))
        };
        let (g_ls, g_plain) = (grad_at(e as f32), grad_at(0.0));
        let (hk, h64) = (k_entropy(&z, 1.0), r::entropy(&z, 1.0, None));
        c.push(Claim::new(
            "002 §20",
            "Label smoothing is a form of entropy regularisation: it pushes the output \
             distribution to higher entropy",
            "the stationary point of the smoothed cross-entropy is p* = (1−ε)y + ε/C (C = 5, ε = \
             0.1): loss_core::cross_entropy (f32) gradient at logits ln p* with smoothing ε \
             (≈ 0) and without (≠ 0, plain CE drives p to one-hot, H = 0); H(p*) by \
             softmax_core::entropy (f32) with reference::entropy (f64) beside",
            "higher H",
            format!(
                "max |grad| with smoothing {}, without {}; H(p*) kernel {}, f64 {}",
                le(g_ls, 1e-6),
                sci(g_plain, 3),
                sci(hk, 3),
                sci(h64, 3)
            ),
            holds_if(g_ls < 1e-6 && g_plain > 1e-2 && h64 > 0.1, "—"),
        ));
    }

    // ---- §21 (77)-(78): sparse attention max entropy. ----
    {
        let n = 16;
        let keep: Vec<bool> = (0..n).map(|j| (4..9).contains(&j)).collect();
        let mut hmax = 0.0f64;
        for _ in 0..200 {
            let s = rng.open_normals(n, 0.3);
            hmax = hmax.max(r::entropy(&s, 1.0, Some(&keep)));
        }
        let heq = r::entropy(&[0.0; 16], 1.0, Some(&keep));
        c.push(Claim::new(
            "002 §21 (77)-(78)",
            "Sparse attention over a neighbourhood N(i): H_max = log|N(i)| < log n",
            "reference::entropy (f64) with a keep-mask of |N| = 5 out of n = 16: equal scores \
             and 200 seeded rows",
            "log|N|",
            format!(
                "equal scores {}, max over rows {} (log 5 = {}, log 16 = {})",
                sci(heq, 4),
                sci(hmax, 4),
                sci(5f64.ln(), 4),
                sci(16f64.ln(), 4)
            ),
            holds_if(
                (heq - 5f64.ln()).abs() < 1e-12 && hmax <= 5f64.ln() + 1e-12,
                "—",
            ),
        ));
    }

    // ---- §22 (80): Gumbel-softmax. ----
    {
        let s = [0.5, -0.3, 1.2, 0.0];
        let p = r::softmax(&s, 1.0, None);
        let sf = to32(&s);
        let m = 20000;
        let mut cnt = [0usize; 4];
        let mut y = [0.0f32; 4];
        let (mut h_lo, mut h_hi) = (0.0, 0.0);
        for t in 0..m {
            let u: Vec<f32> = (0..4).map(|_| rng.open_unit() as f32).collect();
            let u: Vec<f32> = u.iter().map(|&x| x.clamp(1e-7, 1.0 - 1e-7)).collect();
            softmax_core::gumbel_softmax(Poly, &sf, &u, 1.0, true, &mut y).expect("valid noise");
            let i = y.iter().position(|&x| x == 1.0).expect("one-hot");
            cnt[i] += 1;
            if t < 200 {
                // Mean entropy of the soft output at temperature τ (one draw's share).
                let mut soft_entropy = |tau: f32| {
                    softmax_core::gumbel_softmax(Poly, &sf, &u, tau, false, &mut y)
                        .expect("valid noise");
                    r::entropy(
                        &y.iter()
                            .map(|&x| (x as f64).max(1e-300).ln())
                            .collect::<Vec<_>>(),
                        1.0,
                        None,
                    ) / 200.0
                };
                h_lo += soft_entropy(0.01);
                h_hi += soft_entropy(100.0);
            }
        }
        let mut z = 0.0f64;
        for i in 0..4 {
            let f = cnt[i] as f64 / m as f64;
            z = z.max((f - p[i]).abs() / (p[i] * (1.0 - p[i]) / m as f64).sqrt());
        }
        c.push(Claim::new(
            "002 §22 (80)",
            "Gumbel-softmax samples from the softmax distribution (argmax of s + g, g ~ Gumbel(0,1)) \
             and its temperature controls the entropy: τ → 0 near-discrete, large τ near-uniform",
            "softmax_core::gumbel_softmax (f32, hard) on 20000 seeded uniforms: frequencies vs \
             softmax(s) (largest z-score, 4 allowed); soft outputs at τ = 0.01 and 100, mean \
             entropy over 200 draws (reference::entropy of their logs, f64)",
            "—",
            format!(
                "max z {}; mean H τ=0.01 {}, τ=100 {} (log 4 = {})",
                sci(z, 3),
                sci(h_lo, 3),
                sci(h_hi, 3),
                sci(4f64.ln(), 3)
            ),
            holds_if(z < 4.0 && h_lo < 0.05 && 4f64.ln() - h_hi < 0.01, "—"),
        ));
    }

    c
}
