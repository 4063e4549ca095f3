//! The claims of `shared/seeds/003_*.txt` (chapter 5.1: scaled dot-product attention — its
//! definition, the `1/√d_k` scale, softmax's Jacobian, masks, complexity, projections).

use super::util::{
    attn_kernel, attn_ref, eye, fd, jacobi_eig, k_softmax, norm2, rel_err, sci_list, to32, to64,
    Rng,
};
use super::{holds_if, sci, Claim, Verdict};
use crate::reference;
use attention_core::backend::Poly;
use attention_core::{
    attention, attention_backward, Causal, Dims, Grads, Options, Output, Qkv, Saved,
};
use softmax_core::linalg::{dot, matmul_nn, matmul_nt, matmul_tn};
use softmax_core::{softmax, softmax_vjp, softmax_with_bias};

/// The softmax Jacobian `diag(p) − ppᵀ`, row-major.
fn jac(p: &[f64]) -> Vec<f64> {
    let n = p.len();
    (0..n * n)
        .map(|ij| {
            let (i, j) = (ij / n, ij % n);
            if i == j {
                p[i] * (1.0 - p[i])
            } else {
                -p[i] * p[j]
            }
        })
        .collect()
}

/// Plain f64 matrix product `a (m × n) · b (n × k)`.
fn mm(a: &[f64], b: &[f64], m: usize, n: usize, k: usize) -> Vec<f64> {
    let mut c = vec![0.0; m * k];
    for i in 0..m {
        for l in 0..n {
            for j in 0..k {
                c[i * k + j] += a[i * n + l] * b[l * k + j];
            }
        }
    }
    c
}

fn transpose(a: &[f64], m: usize, n: usize) -> Vec<f64> {
    (0..n * m).map(|ji| a[(ji % m) * n + ji / m]).collect()
}

/// Thin SVD of `w` (`m × n`, `m >= n`) from the eigen-decomposition of `wᵀw`:
/// (`u` `m × n`, `sigma` `n`, `v` `n × n`), sorted by decreasing singular value.
fn svd(w: &[f64], m: usize, n: usize) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
    let wtw = mm(&transpose(w, m, n), w, n, m, n);
    let (ev, vecs) = jacobi_eig(wtw, n);
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&a, &b| ev[b].total_cmp(&ev[a]));
    let sigma: Vec<f64> = order.iter().map(|&i| ev[i].max(0.0).sqrt()).collect();
    let v: Vec<f64> = (0..n * n)
        .map(|ij| vecs[(ij / n) * n + order[ij % n]])
        .collect();
    let wv = mm(w, &v, m, n, n);
    let u: Vec<f64> = (0..m * n).map(|ij| wv[ij] / sigma[ij % n]).collect();
    (u, sigma, v)
}

/// `max |AᵀA − I|` for `a` (`m × n`).
fn orth_err(a: &[f64], m: usize, n: usize) -> f64 {
    let ata = mm(&transpose(a, m, n), a, n, m, n);
    rel_err(&ata, &eye(n)).max(0.0)
}

/// Exact moments of the dot product of `q, k ∈ ℝᵈ` with i.i.d. components from the two-point
/// law `{−a w.p. 2/3, 2a w.p. 1/3}` (mean 0, variance `σ² = 2a²`), by enumerating all `2^{2d}`
/// outcomes: (E[q·k], Var(q·k)).
fn exact_dot_moments(d: usize, a: f64) -> (f64, f64) {
    let vals = [(-a, 2.0 / 3.0), (2.0 * a, 1.0 / 3.0)];
    let (mut m1, mut m2) = (0.0, 0.0);
    for bits in 0u32..(1 << (2 * d)) {
        let mut prob = 1.0;
        let mut q = vec![0.0; d];
        let mut k = vec![0.0; d];
        for c in 0..d {
            let (qv, qp) = vals[((bits >> c) & 1) as usize];
            let (kv, kp) = vals[((bits >> (d + c)) & 1) as usize];
            prob *= qp * kp;
            q[c] = qv;
            k[c] = kv;
        }
        let s = dot(&q, &k).expect("dot: equal lengths");
        m1 += prob * s;
        m2 += prob * s * s;
    }
    (m1, m2 - m1 * m1)
}

/// Sample variance of `q·k·scale` over `n` draws of Gaussian `q, k ∈ ℝᵈ` (std `sigma`).
fn mc_dot_var(d: usize, sigma: f64, n: usize, scale: f64, seed: u64) -> f64 {
    let mut rng = Rng(seed);
    let xs: Vec<f64> = (0..n)
        .map(|_| {
            let (q, k) = (rng.normals(d, sigma), rng.normals(d, sigma));
            scale * dot(&q, &k).expect("dot: equal lengths")
        })
        .collect();
    let mean = xs.iter().sum::<f64>() / n as f64;
    xs.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / (n - 1) as f64
}

/// The chapter's naive three-stage attention with operation counters:
/// (multiply-adds of `QKᵀ`, exps of the softmax, multiply-adds of `PV`, score entries stored).
fn counted_stages(n: usize, d: usize, dv: usize) -> [u64; 4] {
    let mut rng = Rng(n as u64);
    let (q, k, v) = rng.qkv((n, n, d, dv), 1.0, 1.0);
    let (mut c_qk, mut c_exp, mut c_pv) = (0u64, 0u64, 0u64);
    let mut s = vec![0.0; n * n];
    for i in 0..n {
        for j in 0..n {
            for m in 0..d {
                s[i * n + j] += q[i * d + m] * k[j * d + m];
                c_qk += 1;
            }
        }
    }
    let stored = s.len() as u64;
    for i in 0..n {
        let row = &mut s[i * n..(i + 1) * n];
        let mx = row.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        let mut z = 0.0;
        for x in row.iter_mut() {
            *x = ((*x - mx) / (d as f64).sqrt()).exp();
            c_exp += 1;
            z += *x;
        }
        for x in row.iter_mut() {
            *x /= z;
        }
    }
    let mut o = vec![0.0; n * dv];
    for i in 0..n {
        for j in 0..n {
            for c in 0..dv {
                o[i * dv + c] += s[i * n + j] * v[j * dv + c];
                c_pv += 1;
            }
        }
    }
    debug_assert!(o.iter().all(|x| x.is_finite()));
    [c_qk, c_exp, c_pv, stored]
}

/// `L = Σ dO ⊙ Attention(X W_Q, X W_K, X W_V)` in f64 (naive), as a function of `W_Q`.
struct ProjCase {
    n: usize,
    dm: usize,
    dk: usize,
    dv: usize,
    x: Vec<f64>,
    wk: Vec<f64>,
    wv: Vec<f64>,
    wq: Vec<f64>,
    d_o: Vec<f64>,
}

impl ProjCase {
    fn new(n: usize, dm: usize, dk: usize, dv: usize, seed: u64) -> ProjCase {
        let mut rng = Rng(seed);
        ProjCase {
            n,
            dm,
            dk,
            dv,
            x: rng.vec(n * dm, -1.0, 1.0),
            wk: rng.vec(dm * dk, -1.0, 1.0),
            wv: rng.vec(dm * dv, -1.0, 1.0),
            wq: rng.vec(dm * dk, -1.0, 1.0),
            d_o: rng.vec(n * dv, -1.0, 1.0),
        }
    }
    fn loss(&self, wq: &[f64]) -> f64 {
        let (n, dm, dk, dv) = (self.n, self.dm, self.dk, self.dv);
        let q = mm(&self.x, wq, n, dm, dk);
        let k = mm(&self.x, &self.wk, n, dm, dk);
        let v = mm(&self.x, &self.wv, n, dm, dv);
        let (o, _) = attn_ref(&q, &k, &v, (n, n, dk, dv), &|_, _| true);
        o.iter().zip(&self.d_o).map(|(a, b)| a * b).sum()
    }
    /// `∂L/∂Q` by the closed form `dS·K/√d_k`, `dS = P∘(dP − rowsum(dP∘P))`, `dP = dO·Vᵀ`
    /// (naive f64).
    fn dq_formula(&self) -> Vec<f64> {
        let (n, dm, dk, dv) = (self.n, self.dm, self.dk, self.dv);
        let q = mm(&self.x, &self.wq, n, dm, dk);
        let k = mm(&self.x, &self.wk, n, dm, dk);
        let v = mm(&self.x, &self.wv, n, dm, dv);
        let (_, p) = attn_ref(&q, &k, &v, (n, n, dk, dv), &|_, _| true);
        let dp = mm(&self.d_o, &transpose(&v, n, dv), n, dv, n);
        let mut ds = vec![0.0; n * n];
        for i in 0..n {
            let r: f64 = (0..n).map(|j| dp[i * n + j] * p[i * n + j]).sum();
            for j in 0..n {
                ds[i * n + j] = p[i * n + j] * (dp[i * n + j] - r);
            }
        }
        mm(&ds, &k, n, n, dk)
            .iter()
            .map(|g| g / (dk as f64).sqrt())
            .collect()
    }
    /// `∂L/∂Q` from attention_core::attention_backward (f64).
    fn dq(&self) -> Vec<f64> {
        let (n, dm, dk, dv) = (self.n, self.dm, self.dk, self.dv);
        let q = mm(&self.x, &self.wq, n, dm, dk);
        let k = mm(&self.x, &self.wk, n, dm, dk);
        let v = mm(&self.x, &self.wv, n, dm, dv);
        let dims = Dims::new(1, 1, n, n, dk, dv);
        let x = Qkv::new(&q, &k, &v);
        let opts = Options::new();
        let (mut o, mut lse) = (vec![0.0; n * dv], vec![0.0; n]);
        attention(
            Poly,
            &dims,
            x,
            &opts,
            Output::new(&mut o).with_lse(&mut lse),
        )
        .expect("attention: valid dimensions");
        let (mut dq, mut dk_, mut dv_) = (vec![0.0; n * dk], vec![0.0; n * dk], vec![0.0; n * dv]);
        attention_backward(
            Poly,
            &dims,
            x,
            &opts,
            Saved::new(&o, &lse),
            &self.d_o,
            Grads::new(&mut dq, &mut dk_, &mut dv_),
        )
        .expect("attention_backward: valid dimensions");
        dq
    }
}

/// This chapter's claims, in the chapter's order.
pub fn claims() -> Vec<Claim> {
    let mut c = Vec::new();
    let src = |s: &str| format!("003 {s}");

    // ---------------------------------------------------------------- 5.1.2 (5.1.1)
    {
        let (t, d, dv) = (8, 16, 8);
        let mut worst = 0.0f64;
        for seed in 1..=10 {
            let mut rng = Rng(100 + seed);
            let (q, k, v) = rng.qkv((t, t, d, dv), 1.0, 1.0);
            let o = attn_kernel(&q, &k, &v, (t, t, d, dv), &Options::new());
            let (r, _) = attn_ref(&q, &k, &v, (t, t, d, dv), &|_, _| true);
            worst = worst.max(rel_err(&o, &r));
        }
        c.push(Claim::new(
            src("§5.1.2 (5.1.1)"),
            "Attention(Q,K,V) = softmax(QKᵀ/√d_k)·V (row-wise softmax), Q,K ∈ ℝ^{n×d_k}, V ∈ ℝ^{n×d_v}",
            "attention_core::attention (f32, default scale 1/√d) vs a naive f64 materialising \
             reference (QKᵀ/√d_k, reference::softmax per row, times V); n = 8, d_k = 16, d_v = 8, \
             10 seeded cases; tolerance 1e-5 (f32 dot products and softmax)",
            "—",
            format!("max rel. err {}", sci(worst, 3)),
            holds_if(worst < 1e-5, "—"),
        ));
    }

    // ---------------------------------------------------------------- 5.1.2 unit vectors
    {
        let mut worst = 0.0f64;
        for seed in 1..=20 {
            let mut rng = Rng(200 + seed);
            let mut q = rng.normals(7, 1.0);
            let mut k = rng.normals(7, 1.0);
            for v in [&mut q, &mut k] {
                let nrm = dot(v, v).expect("dot").sqrt();
                v.iter_mut().for_each(|x| *x /= nrm);
            }
            let qk = dot(&q, &k).expect("dot");
            // Law of cosines: |q − k|² = 2 − 2cos θ for unit vectors.
            let diff: Vec<f64> = q.iter().zip(&k).map(|(a, b)| a - b).collect();
            let cos = 1.0 - dot(&diff, &diff).expect("dot") / 2.0;
            worst = worst.max((qk - cos).abs());
        }
        c.push(Claim::new(
            src("§5.1.2"),
            "For unit vectors the dot product equals the cosine of the angle between them",
            "softmax_core::linalg::dot of 20 seeded unit vectors in ℝ⁷ vs cos θ from the law of \
             cosines (1 − |q−k|²/2), f64",
            "—",
            format!("max abs. diff {}", sci(worst, 3)),
            holds_if(worst < 1e-12, "—"),
        ));
    }

    // ---------------------------------------------------------------- 5.1.3 (5.1.2)
    {
        let (n, dm, dk) = (5, 8, 4);
        let mut rng = Rng(300);
        let (x, w) = (rng.vec(n * dm, -1.0, 1.0), rng.vec(dm * dk, -1.0, 1.0));
        let mut qm = vec![0.0; n * dk];
        matmul_nn(&x, &w, dm, dk, &mut qm, false).expect("matmul_nn: shapes");
        let mut worst = 0.0f64;
        for i in 0..n {
            for j in 0..dk {
                let col: Vec<f64> = (0..dm).map(|m| w[m * dk + j]).collect();
                let qi = dot(&x[i * dm..(i + 1) * dm], &col).expect("dot");
                worst = worst.max((qm[i * dk + j] - qi).abs());
            }
        }
        c.push(Claim::new(
            src("§5.1.3 (5.1.2)"),
            "Q = X·W_Q (X ∈ ℝ^{n×d_model}, W_Q ∈ ℝ^{d_model×d_k}), row by row q_i = x_i·W_Q (likewise K, V)",
            "softmax_core::linalg::matmul_nn (X·W, f64) vs each row x_i times W's columns by \
             linalg::dot; n = 5, d_model = 8, d_k = 4",
            "—",
            format!("max abs. diff {}", sci(worst, 3)),
            holds_if(worst < 1e-14, "—"),
        ));
    }

    // ---------------------------------------------------------------- 5.1.3 3d²
    {
        let d = 512usize;
        let params = 3 * (d * d) as u64;
        c.push(Claim::new(
            src("§5.1.3"),
            "With d_k = d_v = d_model = d the three projections are d×d and hold 3d² parameters",
            "counted the entries of W_Q, W_K, W_V (d_model×d_k + d_model×d_k + d_model×d_v, no \
             biases) at d = 512",
            "3d² = 786432",
            format!("{params}"),
            holds_if(params == 786_432, "—"),
        ));
    }

    // ---------------------------------------------------------------- 5.1.4 (5.1.3)
    {
        let (n, d) = (6, 5);
        let mut rng = Rng(400);
        let (q, k) = (rng.vec(n * d, -2.0, 2.0), rng.vec(n * d, -2.0, 2.0));
        let mut s = vec![0.0; n * n];
        matmul_nt(&q, &k, d, &mut s).expect("matmul_nt: shapes");
        let mut worst = 0.0f64;
        for i in 0..n {
            for j in 0..n {
                let mut acc = 0.0;
                for m in 0..d {
                    acc += q[i * d + m] * k[j * d + m];
                }
                worst = worst.max((s[i * n + j] - acc).abs());
            }
        }
        c.push(Claim::new(
            src("§5.1.4 (5.1.3)"),
            "(QKᵀ)_ij = q_i·k_j = Σ_{m=1}^{d_k} q_{i,m}·k_{j,m}",
            "softmax_core::linalg::matmul_nt (Q·Kᵀ, f64) vs the explicit double loop; n = 6, d_k = 5",
            "—",
            format!("max abs. diff {}", sci(worst, 3)),
            holds_if(worst < 1e-14, "—"),
        ));
    }

    // ---------------------------------------------------------------- 5.1.4 moments
    // Two-point law {−a, 2a} with probabilities {2/3, 1/3}: mean 0, σ² = 2a² (a = 0.5: σ² = 0.5).
    let a = 0.5f64;
    let sigma2 = 2.0 * a * a;
    let sigma4 = sigma2 * sigma2;
    let exact: Vec<(usize, f64, f64)> = (1..=6)
        .map(|d| {
            let (m, v) = exact_dot_moments(d, a);
            (d, m, v)
        })
        .collect();
    {
        let (_, m1, _) = exact[0];
        let mc_mean = {
            let mut rng = Rng(500);
            let n = 20_000;
            (0..n).map(|_| rng.normal() * rng.normal()).sum::<f64>() / n as f64
        };
        c.push(Claim::new(
            src("§5.1.4 (5.1.4)"),
            "For independent zero-mean q_m, k_m: E[q_m·k_m] = E[q_m]·E[k_m] = 0",
            "exact expectation by enumerating a zero-mean two-point law ({−a, 2a} w.p. {2/3, 1/3}, \
             not symmetric); also the sample mean of 20000 seeded Gaussian products (std. error \
             7e-3)",
            "0",
            format!("exact {}, Monte Carlo {}", sci(m1, 3), sci(mc_mean, 3)),
            holds_if(m1.abs() < 1e-15 && mc_mean.abs() < 0.05, "—"),
        ));
    }
    {
        let (_, _, v1) = exact[0];
        c.push(Claim::new(
            src("§5.1.4"),
            "For independent q_m, k_m with mean 0 and variance σ²: Var(q_m·k_m) = σ⁴",
            "exact variance of q_m·k_m under the two-point law with σ² = 0.5 (enumeration); \
             (holds because the means are 0: in general Var = σ⁴ + μ²·2σ² terms)",
            format!("σ⁴ = {}", sci(sigma4, 3)),
            format!("exact {}", sci(v1, 3)),
            holds_if((v1 - sigma4).abs() < 1e-14, "—"),
        ));
    }
    let mc_dims = [16usize, 64, 256];
    let n_mc = 8000usize;
    let sigma = 0.7f64;
    let mc_raw: Vec<f64> = mc_dims
        .iter()
        .map(|&d| mc_dot_var(d, sigma, n_mc, 1.0, 600 + d as u64))
        .collect();
    let mc_scaled: Vec<f64> = mc_dims
        .iter()
        .map(|&d| mc_dot_var(d, sigma, n_mc, 1.0 / (d as f64).sqrt(), 600 + d as u64))
        .collect();
    let s4 = sigma.powi(4);
    // Relative standard error of a sample variance here is about sqrt(2/n) (≈ 1.6%) plus a
    // kurtosis term that shrinks with d; 8% is five standard errors.
    let mc_tol = 0.08;
    {
        let worst_exact = exact
            .iter()
            .map(|&(d, _, v)| (v - d as f64 * sigma4).abs() / (d as f64 * sigma4))
            .fold(0.0, f64::max);
        let worst_mc = mc_dims
            .iter()
            .zip(&mc_raw)
            .map(|(&d, &v)| (v / (d as f64 * s4) - 1.0).abs())
            .fold(0.0, f64::max);
        c.push(Claim::new(
            src("§5.1.4 (5.1.5)"),
            "Var(q·k) = Σ_m Var(q_m k_m) = d_k·σ⁴ (i.i.d. zero-mean components)",
            "exact variance by enumeration (two-point law, σ² = 0.5, d_k = 1…6, dot products by \
             linalg::dot); sample variance of 8000 seeded Gaussian pairs (σ = 0.7) at d_k = 16, \
             64, 256, tolerance 8% (5 standard errors)",
            "d_k·σ⁴",
            format!(
                "exact: max rel. dev. {}; MC Var/(d_k σ⁴) at d_k=16,64,256: {}, {}, {}",
                sci(worst_exact, 3),
                sci(mc_raw[0] / (16.0 * s4), 3),
                sci(mc_raw[1] / (64.0 * s4), 3),
                sci(mc_raw[2] / (256.0 * s4), 3)
            ),
            holds_if(worst_exact < 1e-12 && worst_mc < mc_tol, "—"),
        ));
        let worst_sd = exact
            .iter()
            .map(|&(d, _, v)| (v.sqrt() - (d as f64).sqrt() * sigma2).abs())
            .fold(0.0, f64::max);
        let (d256, sd256) = (256.0f64, mc_raw[2].sqrt());
        c.push(Claim::new(
            src("§5.1.4"),
            "The standard deviation of q·k is √d_k·σ², i.e. the dot product's magnitude grows like √d_k",
            "square root of the exact variances above (d_k = 1…6) vs √d_k·σ²; Monte Carlo at \
             d_k = 256, σ = 0.7",
            format!("√256·0.49 = {}", sci(d256.sqrt() * sigma * sigma, 3)),
            format!(
                "exact: max abs. dev. {}; MC sd at d_k=256: {}",
                sci(worst_sd, 3),
                sci(sd256, 3)
            ),
            holds_if(
                worst_sd < 1e-12 && (sd256 / (16.0 * sigma * sigma) - 1.0).abs() < mc_tol / 2.0,
                "—",
            ),
        ));
        let worst_scaled_exact = exact
            .iter()
            .map(|&(d, _, v)| (v / d as f64 - sigma4).abs() / sigma4)
            .fold(0.0, f64::max);
        let worst_scaled_mc = mc_scaled
            .iter()
            .map(|&v| (v / s4 - 1.0).abs())
            .fold(0.0, f64::max);
        c.push(Claim::new(
            src("§5.1.4"),
            "After scaling, Var(q·k/√d_k) = σ⁴, independent of d_k",
            "exact variance of the scaled dot product (enumeration, d_k = 1…6); sample variance \
             at d_k = 16, 64, 256 (σ = 0.7, 8000 draws, tolerance 8%)",
            format!("σ⁴ (= {} at σ = 0.7)", sci(s4, 3)),
            format!(
                "exact max rel. dev. {}; MC at d_k=16,64,256: {}",
                sci(worst_scaled_exact, 3),
                sci_list(&mc_scaled[..3], 3)
            ),
            holds_if(worst_scaled_exact < 1e-12 && worst_scaled_mc < mc_tol, "—"),
        ));
    }

    // ---------------------------------------------------------------- 5.1.5 (5.1.6)
    {
        let (mut worst, mut worst_sum) = (0.0f64, 0.0f64);
        for seed in 1..=20 {
            let mut rng = Rng(700 + seed);
            let x = rng.vec(10, -5.0, 5.0);
            let x32 = to32(&x);
            let mut y = vec![0.0f32; 10];
            softmax(Poly, &x32, &mut y).expect("softmax: non-empty row");
            let y = to64(&y);
            let r = reference::softmax(&to64(&x32), 1.0, None);
            worst = worst.max(
                rel_err(&y, &r).max(
                    y.iter()
                        .zip(&r)
                        .map(|(a, b)| ((a - b) / b).abs())
                        .fold(0.0, f64::max),
                ),
            );
            worst_sum = worst_sum.max((y.iter().sum::<f64>() - 1.0).abs());
        }
        c.push(Claim::new(
            src("§5.1.5 (5.1.6)"),
            "Softmax(x)_i = e^{x_i} / Σ_j e^{x_j}",
            "softmax_core::softmax (f32, Poly) vs reference::softmax (f64) on 20 seeded rows of 10 \
             in [−5, 5]; per-entry relative error, documented bound 2e-6",
            "—",
            format!(
                "max rel. err {}, max |Σ − 1| {}",
                sci(worst, 3),
                sci(worst_sum, 3)
            ),
            holds_if(worst < 2e-6 && worst_sum < 1e-6, "—"),
        ));
    }

    // ---------------------------------------------------------------- 5.1.5 shift by C
    {
        let x = [1.0f64, 2.0, 3.0, 0.5];
        let p = k_softmax(&x);
        let mut worst = 0.0f64;
        for cst in [10.0, 1e3, 1e6] {
            let xs: Vec<f64> = x.iter().map(|v| v + cst).collect();
            worst = worst.max(rel_err(&k_softmax(&xs), &p));
        }
        let pmax = p.iter().cloned().fold(0.0, f64::max);
        let xc: Vec<f64> = x.iter().map(|v| v * 20.0).collect();
        let pc = k_softmax(&xc);
        let pcmax = pc.iter().cloned().fold(0.0, f64::max);
        c.push(Claim::new(
            src("§5.1.5"),
            "If a large constant C is added to every input x_i, softmax tends to a one-hot distribution",
            "softmax_core::softmax (f64) of x = (1, 2, 3, 0.5) and of x + C for C = 10, 1e3, 1e6; \
             corrected form checked on softmax(c·x), c = 20",
            "max p → 1",
            format!(
                "max |softmax(x+C) − softmax(x)|/max p = {} (max p stays {}); max p of softmax(20x) = 1 − {}",
                sci(worst, 3),
                sci(pmax, 3),
                sci(1.0 - pcmax, 3)
            ),
            holds_if(
                worst > 0.1,
                "softmax is shift-invariant, softmax(x + C·1) = softmax(x); it is scaling, \
                 softmax(c·x) with c → ∞, that tends to one-hot (for a unique maximum)",
            ),
        ));
        // Guard the corrected form's own check.
        assert!(
            worst < 1e-12 && 1.0 - pcmax < 1e-6,
            "the corrected form (shift invariance, scaling to one-hot) must check out"
        );
    }

    // ---------------------------------------------------------------- 5.1.5 saturation
    {
        let x = [0.3f64, -0.4, 0.9, 0.1, -1.2];
        let norms: Vec<f64> = [1.0, 10.0, 100.0]
            .iter()
            .map(|&cs| {
                let z: Vec<f64> = x.iter().map(|v| v * cs).collect();
                norm2(&jac(&k_softmax(&z)))
            })
            .collect();
        let ok = norms[0] > norms[1] && norms[1] > norms[2] && norms[2] < 1e-10;
        c.push(Claim::new(
            src("§5.1.5"),
            "When the softmax inputs are large in magnitude the output is near one-hot and its gradient becomes very small",
            "‖diag(p) − ppᵀ‖_F (the Jacobian, p from softmax_core::softmax f64) at logits c·x, \
             x = (0.3, −0.4, 0.9, 0.1, −1.2), c = 1, 10, 100",
            "→ 0",
            format!("‖J‖_F = {}", sci_list(&norms[..3], 3)),
            holds_if(ok, "—"),
        ));
    }

    // ---------------------------------------------------------------- 5.1.5 (5.1.7)
    {
        let (t, d, dv) = (6, 8, 4);
        let (mut worst, mut hull) = (0.0f64, true);
        for seed in 1..=10 {
            let mut rng = Rng(800 + seed);
            let (q, k, v) = rng.qkv((t, t, d, dv), 1.0, 3.0);
            let o = attn_kernel(&q, &k, &v, (t, t, d, dv), &Options::new());
            let mut e = vec![0.0; t * dv];
            for i in 0..t {
                let row: Vec<f32> = (0..t)
                    .map(|j| {
                        (dot(&q[i * d..(i + 1) * d], &k[j * d..(j + 1) * d]).expect("dot")
                            / (d as f64).sqrt()) as f32
                    })
                    .collect();
                let mut p = vec![0.0f32; t];
                softmax(Poly, &row, &mut p).expect("softmax");
                for j in 0..t {
                    for c2 in 0..dv {
                        e[i * dv + c2] += f64::from(p[j]) * v[j * dv + c2];
                    }
                }
                for c2 in 0..dv {
                    let col = (0..t).map(|j| v[j * dv + c2]);
                    let (lo, hi) = col.fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), x| {
                        (l.min(x), h.max(x))
                    });
                    let oi = o[i * dv + c2];
                    hull &= oi >= lo - 1e-5 && oi <= hi + 1e-5;
                }
            }
            worst = worst.max(rel_err(&o, &e));
        }
        c.push(Claim::new(
            src("§5.1.5 (5.1.7)"),
            "output_i = E_{j∼p(·|q_i)}[v_j] = Σ_j p(j|q_i)·v_j (a convex combination of the values)",
            "attention_core::attention (f32) vs Σ_j p_j v_j with p from softmax_core::softmax of \
             the scaled scores (f32); and each output coordinate within [min_j v_j, max_j v_j]; \
             10 seeded cases n = 6, d_k = 8, d_v = 4, tolerance 1e-5",
            "—",
            format!(
                "max rel. err {}; inside the values' range: {}",
                sci(worst, 3),
                hull
            ),
            holds_if(worst < 1e-5 && hull, "—"),
        ));
    }

    // ---------------------------------------------------------------- 5.1.5 (5.1.8)
    {
        let (mut worst_fd, mut worst_vjp) = (0.0f64, 0.0f64);
        for seed in 1..=20 {
            let mut rng = Rng(900 + seed);
            let x = rng.vec(6, -3.0, 3.0);
            let y = k_softmax(&x);
            let j = jac(&y);
            for i in 0..6 {
                let f = |z: &[f64]| reference::softmax(z, 1.0, None)[i];
                let g = fd(f, &x, 1e-5);
                worst_fd = worst_fd.max(rel_err(&j[i * 6..(i + 1) * 6], &g));
                let mut e = vec![0.0; 6];
                e[i] = 1.0;
                let mut dx = vec![0.0; 6];
                softmax_vjp(&y, &e, &mut dx).expect("softmax_vjp: lengths");
                worst_vjp = worst_vjp.max(rel_err(&dx, &j[i * 6..(i + 1) * 6]));
            }
        }
        c.push(Claim::new(
            src("§5.1.5 (5.1.8)"),
            "∂y_i/∂x_j = y_i(1 − y_i) if i = j, −y_i·y_j if i ≠ j (y = softmax(x))",
            "the formula (y from softmax_core::softmax f64) vs central differences (h = 1e-5) of \
             reference::softmax, and vs softmax_core::softmax_vjp rows; 20 seeded rows of 6; \
             tolerance 1e-7",
            "—",
            format!(
                "max rel. err vs FD {}, vs softmax_vjp {}",
                sci(worst_fd, 3),
                sci(worst_vjp, 3)
            ),
            holds_if(worst_fd < 1e-7 && worst_vjp < 1e-12, "—"),
        ));
    }

    // ---------------------------------------------------------------- 5.1.5 saturated Jacobian
    {
        let mut ok = true;
        let mut cells = Vec::new();
        for gap in [5.0f64, 10.0, 15.0] {
            let x = [gap, 0.0, 0.3, -0.2];
            let y = k_softmax(&x);
            let eps = 1.0 - y[0];
            let m = jac(&y).iter().map(|v| v.abs()).fold(0.0, f64::max);
            ok &= m <= eps * (1.0 + 1e-9);
            cells.push(format!("ε {} → max|J| {}", sci(eps, 3), sci(m, 3)));
        }
        c.push(Claim::new(
            src("§5.1.5"),
            "When some y_i → 1, both y_i(1 − y_i) and every −y_i·y_j → 0: the whole Jacobian vanishes",
            "max |J_ab| of diag(y) − yyᵀ (y from softmax_core::softmax f64) vs ε = 1 − y_max, for \
             logits (g, 0, 0.3, −0.2), g = 5, 10, 15 (each entry is bounded by ε)",
            "→ 0",
            cells.join("; "),
            holds_if(ok, "—"),
        ));
    }

    // ---------------------------------------------------------------- 5.1.5 scale helps gradients
    {
        let (n, d, cases) = (16usize, 512usize, 30u64);
        let (mut j_scaled, mut j_raw, mut pmax_scaled, mut pmax_raw) = (0.0, 0.0, 0.0, 0.0);
        for seed in 1..=cases {
            let mut rng = Rng(1000 + seed);
            let q = rng.normals(d, 1.0);
            let k = rng.normals(n * d, 1.0);
            let s: Vec<f64> = (0..n)
                .map(|j| dot(&q, &k[j * d..(j + 1) * d]).expect("dot"))
                .collect();
            let ss: Vec<f64> = s.iter().map(|v| v / (d as f64).sqrt()).collect();
            let (pr, ps) = (k_softmax(&s), k_softmax(&ss));
            j_raw += norm2(&jac(&pr)) / cases as f64;
            j_scaled += norm2(&jac(&ps)) / cases as f64;
            pmax_raw += pr.iter().cloned().fold(0.0, f64::max) / cases as f64;
            pmax_scaled += ps.iter().cloned().fold(0.0, f64::max) / cases as f64;
        }
        c.push(Claim::new(
            src("§5.1.5"),
            "Scaling by 1/√d_k keeps softmax away from saturation, so its gradient is not vanishingly small",
            "mean over 30 seeded cases (q, k_j ~ N(0, I), d_k = 512, n = 16) of ‖diag(p) − ppᵀ‖_F and \
             max p, p = softmax_core::softmax (f64) of the unscaled and the scaled scores; \
             holds if the scaled norm is more than twice the unscaled",
            "scaled ‖J‖ > unscaled",
            format!(
                "unscaled: ‖J‖_F {}, max p {}; scaled: ‖J‖_F {}, max p {}",
                sci(j_raw, 3),
                sci(pmax_raw, 3),
                sci(j_scaled, 3),
                sci(pmax_scaled, 3)
            ),
            // "Clearly larger": a factor above 2, far outside the ~10% spread of a 30-case mean.
            holds_if(j_scaled > 2.0 * j_raw, "—"),
        ));
    }

    // ---------------------------------------------------------------- 5.1.6 rows of P
    {
        let (n, d) = (9, 8);
        let (mut worst_sum, mut min_p) = (0.0f64, f64::INFINITY);
        for seed in 1..=10 {
            let mut rng = Rng(1100 + seed);
            let (q, k) = (rng.vec(n * d, -2.0, 2.0), rng.vec(n * d, -2.0, 2.0));
            // V = I: the output rows are the weight rows P_i.
            let p = attn_kernel(&q, &k, &eye(n), (n, n, d, n), &Options::new());
            for i in 0..n {
                let row = &p[i * n..(i + 1) * n];
                worst_sum = worst_sum.max((row.iter().sum::<f64>() - 1.0).abs());
                min_p = min_p.min(row.iter().cloned().fold(f64::INFINITY, f64::min));
            }
        }
        c.push(Claim::new(
            src("§5.1.6"),
            "Each row of P = softmax(S/√d_k) is a valid probability distribution (P_ij ≥ 0, Σ_j P_ij = 1)",
            "attention_core::attention (f32) with V = I (its output is P), 10 seeded 9×9 cases; \
             tolerance 1e-6 on the row sums",
            "—",
            format!("max |Σ_j P_ij − 1| {}, min P_ij {}", sci(worst_sum, 3), sci(min_p, 3)),
            holds_if(worst_sum < 1e-6 && min_p >= 0.0, "—"),
        ));
    }

    // ---------------------------------------------------------------- 5.1.6 complexity
    {
        let (d, dv) = (16usize, 8usize);
        let counts: Vec<[u64; 4]> = [8usize, 16, 32]
            .iter()
            .map(|&n| counted_stages(n, d, dv))
            .collect();
        let ok_stage = [8u64, 16, 32].iter().zip(&counts).all(|(&n, c4)| {
            c4[0] == n * n * d as u64 && c4[1] == n * n && c4[2] == n * n * dv as u64
        });
        let c32 = counts[2];
        c.push(Claim::new(
            src("§5.1.6"),
            "Costs per stage: QKᵀ is O(n²·d), the row softmax O(n²), PV O(n²·d_v)",
            "counted the multiply-adds and exps of the chapter's three-stage f64 algorithm at \
             n = 8, 16, 32, d = 16, d_v = 8",
            "n²d, n², n²d_v",
            format!(
                "n = 32: QKᵀ {} mult-adds, {} exps, PV {} mult-adds",
                c32[0], c32[1], c32[2]
            ),
            holds_if(ok_stage, "—"),
        ));
        let total = |c4: &[u64; 4]| (c4[0] + c4[1] + c4[2]) as f64;
        let r1 = total(&counts[1]) / total(&counts[0]);
        let r2 = total(&counts[2]) / total(&counts[1]);
        let dd = counted_stages(16, 2 * d, 2 * dv);
        let rd = total(&dd) / total(&counts[1]);
        c.push(Claim::new(
            src("§5.1.6"),
            "Total time O(n²·d): quadratic in the sequence length n (linear in d)",
            "ratio of the total operation counts above when n doubles (8→16→32) and when d, d_v \
             double at n = 16",
            "×4 per doubling of n",
            format!(
                "n doubling: ×{}, ×{}; d doubling: ×{}",
                sci(r1, 3),
                sci(r2, 3),
                sci(rd, 3)
            ),
            holds_if(r1 == 4.0 && r2 == 4.0 && rd > 1.9 && rd < 2.0, "—"),
        ));
        // Space: the three-stage form stores n² scores; attention_core's one-pass kernel gives
        // the same output without them.
        let n = 256usize;
        let dk = 16;
        let mut rng = Rng(1200);
        let (q, k, v) = rng.qkv((n, n, dk, dk), 1.0, 1.0);
        let o = attn_kernel(&q, &k, &v, (n, n, dk, dk), &Options::new());
        let (r, _) = attn_ref(&q, &k, &v, (n, n, dk, dk), &|_, _| true);
        let e = rel_err(&o, &r);
        c.push(Claim::new(
            src("§5.1.6"),
            "Space: the score matrix S and the weight matrix P each need O(n²) storage",
            "counted the score entries the three-stage algorithm stores (n = 32); note: \
             attention_core::attention (one pass, online softmax, a fixed block of scores) \
             computes the same output without an n×n matrix (n = 256 vs the materialising f64 \
             reference)",
            "n² = 1024 at n = 32",
            format!(
                "stored {} entries; one-pass kernel vs materialising ref at n = 256: rel. err {}",
                c32[3],
                sci(e, 3)
            ),
            holds_if(c32[3] == 1024 && e < 1e-5, "—"),
        ));
    }

    // ---------------------------------------------------------------- 5.1.7 causal mask
    let n = 7usize;
    let d = 4usize;
    let mut rng = Rng(1300);
    let (q, k) = (rng.vec(n * d, -2.0, 2.0), rng.vec(n * d, -2.0, 2.0));
    let causal = Options::new().with_causal(Causal::TopLeft);
    let p_causal = attn_kernel(&q, &k, &eye(n), (n, n, d, n), &causal);
    {
        let (_, pr) = attn_ref(&q, &k, &eye(n), (n, n, d, n), &|i, j| j <= i);
        let above_zero = (0..n).all(|i| (i + 1..n).all(|j| p_causal[i * n + j] == 0.0));
        let diag_pos = (0..n).all(|i| p_causal[i * n + i] > 0.0);
        let e = rel_err(&p_causal, &pr);
        c.push(Claim::new(
            src("§5.1.7 (5.1.9)–(5.1.10)"),
            "S_masked = S + M with M_ij = 0 (j ≤ i), −∞ (j > i) gives P_ij = 0 for all j > i: position i attends to 1…i",
            "attention_core::attention (f32, Causal::TopLeft) with V = I (output = P) vs the f64 \
             reference with M added; n = 7; zeros checked exactly",
            "P_ij = 0 for j > i",
            format!(
                "P_ij = 0 exactly above the diagonal: {above_zero}; P_ii > 0: {diag_pos}; rel. err vs f64 {}",
                sci(e, 3)
            ),
            holds_if(above_zero && diag_pos && e < 1e-5, "—"),
        ));
    }
    {
        let m_above = (0..n)
            .flat_map(|i| (0..n).map(move |j| (i, j)))
            .filter(|&(i, j)| j > i)
            .count();
        let m_below_nonzero = 0usize; // M_ij = 0 for every j ≤ i by (5.1.10)
        let p_lower = (0..n).all(|i| (i + 1..n).all(|j| p_causal[i * n + j] == 0.0));
        c.push(Claim::new(
            src("§5.1.7 (5.1.10)"),
            "The causal mask M is a lower-triangular n×n matrix",
            "counted M's nonzero (−∞) entries by position for n = 7; the zero pattern of P from the \
             causal kernel run above",
            "lower-triangular",
            format!(
                "M: {m_above} nonzero entries above the diagonal, {m_below_nonzero} on/below; P lower-triangular: {p_lower}"
            ),
            holds_if(
                m_above == 0,
                "M is strictly upper-triangular (−∞ for j > i, 0 on and below the diagonal); it is \
                 the kept pattern, and hence P, that is lower-triangular",
            ),
        ));
    }
    {
        let (mut same, mut worst) = (true, 0.0f64);
        for seed in 1..=20 {
            let mut rng = Rng(1400 + seed);
            let x = to32(&rng.vec(8, -10.0, 10.0));
            let i0 = (seed as usize) % 8;
            let bias_inf: Vec<f32> = (0..8)
                .map(|j| if j > i0 { f32::NEG_INFINITY } else { 0.0 })
                .collect();
            let bias_big: Vec<f32> = (0..8).map(|j| if j > i0 { -1e9 } else { 0.0 }).collect();
            let (mut a32, mut b32) = (vec![0.0f32; 8], vec![0.0f32; 8]);
            softmax_with_bias(Poly, &x, &bias_inf, &mut a32).expect("softmax_with_bias");
            softmax_with_bias(Poly, &x, &bias_big, &mut b32).expect("softmax_with_bias");
            same &= a32 == b32;
            worst = worst.max(rel_err(&to64(&b32), &to64(&a32)));
        }
        let mut all_masked = [0.0f32; 4];
        softmax_with_bias(Poly, &[1.0f32, 2.0, 3.0, 4.0], &[-1e9; 4], &mut all_masked)
            .expect("softmax_with_bias");
        c.push(Claim::new(
            src("§5.1.7"),
            "In practice a large negative number (−1e9) replaces −∞ in the mask",
            "softmax_core::softmax_with_bias (f32) with −1e9 vs −∞ on the masked entries, 20 \
             seeded rows of 8 with scores in [−10, 10] and at least one kept key; note: a fully \
             masked row gets uniform weights with −1e9 (shown), weights 0 with −∞ in this kernel",
            "same weights",
            format!(
                "bitwise identical: {same} (max rel. diff {}); all-masked row with −1e9: {}",
                sci(worst, 3),
                sci(f64::from(all_masked[0]), 3)
            ),
            holds_if(same, "—"),
        ));
    }
    {
        let (n, d, dv, pad) = (8usize, 4usize, 3usize, 3usize);
        let mut rng = Rng(1500);
        let (q, k, mut v) = (
            rng.vec(n * d, -2.0, 2.0),
            rng.vec(n * d, -2.0, 2.0),
            rng.vec(n * dv, -2.0, 2.0),
        );
        let keep: Vec<bool> = (0..n * n).map(|ij| ij % n < n - pad).collect();
        let opts = Options::new().with_causal(Causal::TopLeft).with_mask(&keep);
        let o = attn_kernel(&q, &k, &v, (n, n, d, dv), &opts);
        let (r, _) = attn_ref(&q, &k, &v, (n, n, d, dv), &|i, j| j <= i && j < n - pad);
        let e = rel_err(&o, &r);
        for j in n - pad..n {
            for c2 in 0..dv {
                v[j * dv + c2] = 1e3;
            }
        }
        let o2 = attn_kernel(&q, &k, &v, (n, n, d, dv), &opts);
        let invariant = o == o2;
        c.push(Claim::new(
            src("§5.1.7 (5.1.11)"),
            "S_padded = S + P_mask (−∞ at padding keys) removes padding; it stacks with the causal mask",
            "attention_core::attention (f32, Causal::TopLeft + keep-mask hiding the last 3 of 8 \
             keys) vs the f64 reference with M + P_mask added; then the padded keys' values set to \
             1e3: the output must not change",
            "—",
            format!("rel. err vs f64 {}; output unchanged by padded values: {invariant}", sci(e, 3)),
            holds_if(e < 1e-5 && invariant, "—"),
        ));
    }

    // ---------------------------------------------------------------- 5.1.8 SVD
    let (dm, dk) = (6usize, 3usize);
    let mut rng = Rng(1600);
    let w = rng.vec(dm * dk, -1.0, 1.0);
    let (u, sg, vv) = svd(&w, dm, dk);
    {
        let us = mm(
            &u,
            &(0..dk * dk)
                .map(|ij| if ij / dk == ij % dk { sg[ij / dk] } else { 0.0 })
                .collect::<Vec<_>>(),
            dm,
            dk,
            dk,
        );
        let rec = mm(&us, &transpose(&vv, dk, dk), dm, dk, dk);
        let e = rel_err(&rec, &w);
        let (eu, ev) = (orth_err(&u, dm, dk), orth_err(&vv, dk, dk));
        c.push(Claim::new(
            src("§5.1.8"),
            "Any W ∈ ℝ^{m×n} factors as W = UΣVᵀ, U and V orthogonal, Σ diagonal (singular values)",
            "thin SVD of a seeded 6×3 matrix (Jacobi eigen-decomposition of WᵀW in f64): \
             reconstruction error and ‖UᵀU − I‖, ‖VᵀV − I‖ (full form: U 6×6 with Σ a rectangular \
             diagonal)",
            "—",
            format!(
                "σ = {}; ‖W − UΣVᵀ‖ rel. {}; orthogonality {} / {}",
                sci_list(&sg[..3], 3),
                sci(e, 3),
                sci(eu, 3),
                sci(ev, 3)
            ),
            holds_if(e < 1e-12 && eu < 1e-12 && ev < 1e-12, "—"),
        ));
    }
    {
        // Row-vector convention of the chapter: q = x·W_Q = ((x·U)·Σ)·Vᵀ.
        let x = rng.vec(dm, -1.0, 1.0);
        let q = mm(&x, &w, 1, dm, dk);
        let xu = mm(&x, &u, 1, dm, dk);
        let xus: Vec<f64> = xu.iter().zip(&sg).map(|(a, s)| a * s).collect();
        let q_order = mm(&xus, &transpose(&vv, dk, dk), 1, dk, dk);
        let e_ok = rel_err(&q_order, &q);
        // Square case d_model = d_k = 4: the chapter's order x·Vᵀ·Σ·U.
        let n4 = 4usize;
        let w4 = rng.vec(n4 * n4, -1.0, 1.0);
        let (u4, s4v, v4) = svd(&w4, n4, n4);
        let x4 = rng.vec(n4, -1.0, 1.0);
        let q4 = mm(&x4, &w4, 1, n4, n4);
        let xvt = mm(&x4, &transpose(&v4, n4, n4), 1, n4, n4);
        let xvts: Vec<f64> = xvt.iter().zip(&s4v).map(|(a, s)| a * s).collect();
        let chap = mm(&xvts, &u4, 1, n4, n4);
        let e_chap = rel_err(&chap, &q4);
        let xu4 = mm(&x4, &u4, 1, n4, n4);
        let xu4s: Vec<f64> = xu4.iter().zip(&s4v).map(|(a, s)| a * s).collect();
        let e_ok4 = rel_err(&mm(&xu4s, &transpose(&v4, n4, n4), 1, n4, n4), &q4);
        c.push(Claim::new(
            src("§5.1.8"),
            "With W_Q = UΣVᵀ, Query generation first rotates/reflects in the input space by Vᵀ, then scales by Σ, then rotates by U",
            "chapter's row-vector form q = x·W_Q: W_Q 6×3 (d_model = 6, d_k = 3) — Vᵀ is 3×3 and \
             cannot act on x ∈ ℝ⁶; square 4×4 counter-example of the order x·Vᵀ·Σ·U; corrected \
             order ((x·U)·Σ)·Vᵀ checked on both (f64)",
            "x ↦ Vᵀ, Σ, U",
            format!(
                "4×4: chapter's order rel. err {}; ((xU)Σ)Vᵀ rel. err {} (6×3: {})",
                sci(e_chap, 3),
                sci(e_ok4, 3),
                sci(e_ok, 3)
            ),
            holds_if(
                e_chap < 1e-9,
                "for row vectors q = x·W_Q = ((x·U)·Σ)·Vᵀ: first U (orthogonal, d_model×d_model, \
                 input space), then Σ, then Vᵀ (d_k×d_k, output space); the order Vᵀ→Σ→U is that \
                 of the column-vector map y = W·x",
            ),
        ));
        assert!(
            e_ok < 1e-12 && e_ok4 < 1e-12,
            "the corrected SVD order must reproduce x·W_Q"
        );
    }

    // ---------------------------------------------------------------- 5.1.8 Xavier
    {
        let (din, dout) = (512usize, 64usize);
        let var = 2.0 / (din + dout) as f64;
        let mut rng = Rng(1700);
        let lim = (3.0 * var).sqrt();
        let w = rng.vec(din * dout, -lim, lim);
        let w_var = w.iter().map(|x| x * x).sum::<f64>() / w.len() as f64;
        let trials = 200usize;
        let (mut fwd, mut bwd) = (0.0, 0.0);
        for _ in 0..trials {
            let x = rng.normals(din, 1.0);
            let y = mm(&x, &w, 1, din, dout);
            fwd += y.iter().map(|v| v * v).sum::<f64>() / (dout * trials) as f64;
            let g = rng.normals(dout, 1.0);
            let gx = mm(&w, &g, din, dout, 1);
            bwd += gx.iter().map(|v| v * v).sum::<f64>() / (din * trials) as f64;
        }
        let (fwd_th, bwd_th) = (din as f64 * var, dout as f64 * var);
        c.push(Claim::new(
            src("§5.1.8"),
            "Xavier initialisation: Var(W) = 2/(d_in + d_out); for W_Q, W_K, W_V: 2/(d_model + d_k)",
            "Glorot's definition: the variance whose forward gain d_in·Var and backward gain \
             d_out·Var average to 1; d_model = 512, d_k = 64; a seeded uniform(±√(3·Var)) matrix \
             and 200 Gaussian inputs / upstream gradients (Monte Carlo, tolerance 5%)",
            format!("2/576 = {}", sci(var, 3)),
            format!(
                "sample Var(W) {}; mean of measured gains ({} + {})/2 = {}",
                sci(w_var, 3),
                sci(fwd, 3),
                sci(bwd, 3),
                sci((fwd + bwd) / 2.0, 3)
            ),
            holds_if(
                (w_var / var - 1.0).abs() < 0.05 && ((fwd + bwd) / 2.0 - 1.0).abs() < 0.05,
                "—",
            ),
        ));
        let both_one = (fwd - 1.0).abs() < 0.2 && (bwd - 1.0).abs() < 0.2;
        c.push(Claim::new(
            src("§5.1.8"),
            "Xavier initialisation keeps the variance of signals (forward) and of gradients (backward) from growing or shrinking",
            "same Monte Carlo: Var(x·W)/Var(x) and Var(W·g)/Var(g) at d_in = d_model = 512, \
             d_out = d_k = 64 (e.g. 8 heads); closed forms 2d_in/(d_in+d_out), 2d_out/(d_in+d_out)",
            "gains ≈ 1",
            format!(
                "forward gain {} (closed form {}), backward gain {} (closed form {})",
                sci(fwd, 3),
                sci(fwd_th, 3),
                sci(bwd, 3),
                sci(bwd_th, 3)
            ),
            holds_if(
                both_one,
                "Xavier is a compromise: the forward variance gain is 2d_in/(d_in+d_out) and the \
                 backward 2d_out/(d_in+d_out); both are 1 only when d_in = d_out (here 1.78 and \
                 0.222)",
            ),
        ));
    }

    // ---------------------------------------------------------------- 5.1.8 ∂L/∂W_Q
    {
        let (mut worst_ok, mut worst_formula) = (0.0f64, 0.0f64);
        for seed in 1..=5 {
            let pc = ProjCase::new(4, 5, 3, 2, 1800 + seed);
            let dq = pc.dq();
            worst_formula = worst_formula.max(rel_err(&pc.dq_formula(), &dq));
            let mut g = vec![0.0; pc.dm * pc.dk];
            matmul_tn(&pc.x, &dq, pc.dm, pc.dk, &mut g, false).expect("matmul_tn: shapes");
            let f = fd(|wq| pc.loss(wq), &pc.wq, 1e-5);
            worst_ok = worst_ok.max(rel_err(&g, &f));
        }
        // Square case (n = d_model = d_k = 4) where the chapter's product dQ·Xᵀ has a shape.
        let pc = ProjCase::new(4, 4, 4, 2, 1900);
        let dq = pc.dq();
        let chap = mm(&dq, &transpose(&pc.x, 4, 4), 4, 4, 4);
        let f = fd(|wq| pc.loss(wq), &pc.wq, 1e-5);
        let e_chap = rel_err(&chap, &f);
        c.push(Claim::new(
            src("§5.1.8"),
            "∂L/∂W_Q = ∂L/∂O · ∂O/∂Q · ∂Q/∂W_Q with ∂Q/∂W_Q = Xᵀ (Xᵀ as the right-most factor)",
            "∂L/∂Q from attention_core::attention_backward (f64, L = Σ dO ⊙ O), then Xᵀ·∂L/∂Q by \
             linalg::matmul_tn vs central differences (h = 1e-5) of a naive f64 L(W_Q); 5 seeded \
             cases n = 4, d_model = 5, d_k = 3 (there the chapter's (∂L/∂Q)·Xᵀ, 4×3 times 5×4, has \
             no shape); square case n = d_model = d_k = 4 for the chapter's order; the corrected ∂L/∂Q \
             closed form (naive f64) vs the kernel's; tolerance 1e-7",
            "(∂L/∂Q)·Xᵀ",
            format!(
                "Xᵀ·∂L/∂Q vs FD max rel. err {}; closed-form ∂L/∂Q vs kernel {}; chapter's (∂L/∂Q)·Xᵀ (square case) rel. err {}",
                sci(worst_ok, 3),
                sci(worst_formula, 3),
                sci(e_chap, 3)
            ),
            if worst_ok < 1e-7 && worst_formula < 1e-12 && e_chap > 1e-3 {
                Verdict::Wrong {
                    corrected:
                        "∂L/∂W_Q = Xᵀ·(∂L/∂Q) (Xᵀ on the left; d_model×n times n×d_k), with \
                                ∂L/∂Q = dS·K/√d_k, dS = P∘(dP − rowsum(dP∘P)), dP = (∂L/∂O)·Vᵀ"
                            .to_string(),
                }
            } else {
                holds_if(e_chap < 1e-7, "—")
            },
        ));
    }

    // ---------------------------------------------------------------- 5.1.8 length independence
    {
        let mut cells = Vec::new();
        let mut norms = Vec::new();
        for (n, cases) in [(16usize, 40u64), (256, 10), (4096, 3)] {
            let mut acc = 0.0;
            for seed in 1..=cases {
                let mut rng = Rng(2000 + seed + n as u64);
                // Scaled scores with unit variance (σ⁴ = 1), as the scale guarantees.
                let s = rng.normals(n, 1.0);
                acc += norm2(&jac(&k_softmax(&s))) / cases as f64;
            }
            norms.push(acc);
            cells.push(format!("n={n}: {}", sci(acc, 3)));
        }
        let stable = norms[2] > 0.5 * norms[0];
        c.push(Claim::new(
            src("§5.1.8"),
            "With the scale, gradients flow stably whatever the model depth or the sequence length",
            "mean ‖diag(p) − ppᵀ‖_F (softmax_core::softmax f64) for rows of n i.i.d. N(0,1) scaled \
             scores (the variance the scale guarantees), n = 16, 256, 4096 (40/10/3 seeded rows); \
             depth is not modelled by the chapter and not checked",
            "independent of n",
            cells.join(", "),
            holds_if(
                stable,
                "the scale fixes the score variance (σ⁴) for every d_k, but the softmax Jacobian \
                 still shrinks with the sequence length (‖J‖_F ≈ c/√n for i.i.d. scores); nothing \
                 in the scale addresses depth",
            ),
        ));
    }

    c
}
