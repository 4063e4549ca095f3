//! The claims of `shared/seeds/001_*.txt` (§4.4: softmax as the common skeleton of
//! cross-entropy, InfoNCE and attention).
//!
//! Kernels: softmax-core (`softmax`, `softmax_with_temperature`, `log_softmax`, `entropy`,
//! `kl_divergence`, `softmax_vjp`, `sparsemax`), loss-core (`cross_entropy`,
//! `cross_entropy_probs`, `mse_loss`, `info_nce`, `info_nce_single`,
//! `mutual_information_lower_bound`) and attention-core (`attention`), all in f64, with the naive
//! f64 reference of `crate::reference` (or a direct f64 formula) beside. Gradients are checked
//! against central finite differences of an f64 loss (h = 1e-5: truncation ~1e-10, rounding
//! ~1e-11 relative, so 1e-7 is the tolerance). Everything is seeded (SplitMix64) or fixed.

use super::util::{
    dot, fd, k_ce, k_log_softmax, k_softmax, k_softmax_t, rel_err, sci_list, to32, wrong_if, Rng,
};
use super::{holds_if, sci, Claim, Verdict};
use crate::reference as r;
use attention_core::{attention, Dims, Options, Output, Qkv};
use loss_core::{
    cross_entropy, cross_entropy_probs, info_nce, info_nce_scratch_len, info_nce_single, mse_loss,
    mutual_information_lower_bound, CrossEntropyOptions, CrossEntropyOutputs, InfoNceOptions,
    InfoNceOutputs, InfoNceSingleOptions, MseOptions, Negatives, Outputs, Reduction,
};
use softmax_core::backend::Poly;

/// Tolerance of an f64 kernel against the f64 reference (a few hundred ULP of headroom).
const TOL_KERNEL: f64 = 1e-12;
/// Tolerance of central finite differences (h = 1e-5) in f64, relative.
const TOL_FD: f64 = 1e-7;
/// Step of the central finite differences.
const H: f64 = 1e-5;

/// A roundoff-level error (kernel vs f64 reference, exact identities): its digits depend on the
/// platform's `exp`/`ln` in the last place, so below 1e-13 only the bound is printed (stable on
/// every machine); above, three significant digits.
fn tiny(v: f64) -> String {
    if v < 1e-13 {
        "< 1e-13".to_string()
    } else {
        sci(v, 3)
    }
}

/// A finite-difference error (h = 1e-5: truncation ~1e-10 plus roundoff ~3e-11, the latter
/// platform-dependent): below 1e-9 only the bound is printed; above, three significant digits.
fn fd_err(v: f64) -> String {
    if v < 1e-9 {
        "< 1e-9".to_string()
    } else {
        sci(v, 3)
    }
}

impl Rng {
    /// A strictly positive probability vector of length `n`.
    fn probs(&mut self, n: usize) -> Vec<f64> {
        let z = self.vec(n, -1.5, 1.5);
        r::softmax(&z, 1.0, None)
    }
}

fn norm(a: &[f64]) -> f64 {
    dot(a, a).sqrt()
}

/// Entropy (nats) of a probability vector, via softmax-core's entropy of the logits `ln p`.
fn k_entropy_of(p: &[f64]) -> f64 {
    let lp: Vec<f64> = p.iter().map(|v| v.ln()).collect();
    softmax_core::entropy(Poly, &lp, 1.0).expect("non-empty row")
}

/// Entropy (nats) of a probability vector, directly in f64.
fn ref_entropy_of(p: &[f64]) -> f64 {
    -r::sum(p.iter().filter(|&&v| v > 0.0).map(|&v| v * v.ln()))
}

/// One single-query InfoNCE case (eq. 4.4.11): `q`, `k⁺`, `M` negatives (row-major), τ.
struct Nce {
    d: usize,
    tau: f64,
    q: Vec<f64>,
    kp: Vec<f64>,
    kn: Vec<f64>,
}

impl Nce {
    fn random(seed: u64) -> Nce {
        let (d, m) = (6, 5);
        let mut g = Rng(seed);
        Nce {
            d,
            tau: 0.5,
            q: g.vec(d, -1.0, 1.0),
            kp: g.vec(d, -1.0, 1.0),
            kn: g.vec(m * d, -1.0, 1.0),
        }
    }
    fn m(&self) -> usize {
        self.kn.len() / self.d
    }
    /// Logits `[q·k⁺, q·k⁻_1, …]/τ`.
    fn logits(&self, q: &[f64], kp: &[f64], kn: &[f64]) -> Vec<f64> {
        let mut z = vec![dot(q, kp) / self.tau];
        z.extend(kn.chunks(self.d).map(|k| dot(q, k) / self.tau));
        z
    }
    /// The f64 loss of eq. 4.4.11.
    fn loss(&self, q: &[f64], kp: &[f64], kn: &[f64]) -> f64 {
        -r::log_softmax(&self.logits(q, kp, kn), 1.0, None)[0]
    }
    /// P of eq. 4.4.13 (f64 reference).
    fn p(&self) -> Vec<f64> {
        r::softmax(&self.logits(&self.q, &self.kp, &self.kn), 1.0, None)
    }
    /// E_P[k].
    fn ek(&self) -> Vec<f64> {
        let p = self.p();
        (0..self.d)
            .map(|c| {
                r::sum(
                    std::iter::once(p[0] * self.kp[c])
                        .chain(self.kn.chunks(self.d).zip(&p[1..]).map(|(k, pm)| pm * k[c])),
                )
            })
            .collect()
    }
    /// loss-core's loss and gradients (q, k⁺, k⁻).
    fn kernel(&self) -> (f64, Vec<f64>, Vec<f64>, Vec<f64>) {
        let (mut gq, mut gp, mut gn) = (
            vec![0.0; self.d],
            vec![0.0; self.d],
            vec![0.0; self.kn.len()],
        );
        let mut scratch = vec![0.0; 2 * (self.m() + 1)];
        let l = info_nce_single(
            Poly,
            &self.q,
            &self.kp,
            &self.kn,
            &InfoNceSingleOptions::new().with_temperature(self.tau),
            InfoNceOutputs::new(&mut scratch)
                .with_grad_query(&mut gq)
                .with_grad_positive(&mut gp)
                .with_grad_negatives(&mut gn),
        )
        .expect("valid InfoNCE inputs");
        (l, gq, gp, gn)
    }
}

/// The f64 reference of scaled dot-product attention, one head: `o_i = Σ_j softmax(scale·q_i·k_j)
/// v_j` (and the weights).
fn ref_attention(
    q: &[f64],
    k: &[f64],
    v: &[f64],
    d: usize,
    dv: usize,
    scale: f64,
) -> (Vec<f64>, Vec<Vec<f64>>) {
    let mut o = Vec::new();
    let mut a = Vec::new();
    for qi in q.chunks(d) {
        let s: Vec<f64> = k.chunks(d).map(|kj| scale * dot(qi, kj)).collect();
        let p = r::softmax(&s, 1.0, None);
        for c in 0..dv {
            o.push(r::sum(v.chunks(dv).zip(&p).map(|(vj, pj)| pj * vj[c])));
        }
        a.push(p);
    }
    (o, a)
}

/// attention-core's output (and lse) for one head.
#[allow(clippy::too_many_arguments)]
fn k_attention(
    q: &[f64],
    k: &[f64],
    v: &[f64],
    heads: usize,
    d: usize,
    dv: usize,
    scale: Option<f64>,
) -> (Vec<f64>, Vec<f64>) {
    let t = q.len() / (heads * d);
    let s = k.len() / (heads * d);
    let mut o = vec![0.0; heads * t * dv];
    let mut lse = vec![0.0; heads * t];
    let opts = match scale {
        Some(sc) => Options::new().with_scale(sc),
        None => Options::new(),
    };
    attention(
        Poly,
        &Dims::new(heads, heads, t, s, d, dv),
        Qkv::new(q, k, v),
        &opts,
        Output::new(&mut o).with_lse(&mut lse),
    )
    .expect("valid attention dimensions");
    (o, lse)
}

/// This chapter's claims, in the chapter's order.
pub fn claims() -> Vec<Claim> {
    vec![
        nce_posterior(),
        nce_limit_is_ml(),
        nce_needs_k_infinite(),
        infonce_is_ce(),
        infonce_distribution(),
        mi_definition(),
        mi_bound(),
        mi_bound_tighter(),
        infonce_anchor_form(),
        attention_maximises_mi(),
        attention_formula(),
        infonce_single_loss(),
        grad_query(),
        grad_positive(),
        grad_negative(),
        geometry_query(),
        geometry_positive(),
        geometry_negative(),
        mse_ce_gradients(),
        tau_infinite(),
        tau_zero(),
        tau_scale_effect(),
        tau_sharpness(),
        tau_practice(),
        hard_negatives(),
        score_variance(),
        sqrt_d_is_temperature(),
        simplex(),
        order_preserving(),
        projection(),
        logit_ratio(),
        iia(),
        ce_one_hot(),
        attention_weights(),
        unified_table(),
        one_softmax_gradient(),
        infonce_sequence(),
        attention_expectation(),
        total_correlation(),
        total_correlation_sum_mi(),
        shuffle_product(),
        infinite_negatives(),
        autoencoder_mi(),
        multi_head(),
        heads_specialise(),
        lm_is_infonce(),
        ce_kl(),
        dot_cosine(),
        nll_principle(),
    ]
}

// ---------------------------------------------------------------------------------------------
// §4.4.1 NCE

/// The NCE posterior (4.4.1) against Bayes' rule.
fn nce_posterior() -> Claim {
    let mut g = Rng(101);
    let mut worst = 0.0f64;
    for case in 0..20 {
        let n = 6;
        let pt = g.probs(n);
        let pn = g.probs(n);
        let k = [1.0, 5.0, 20.0, 100.0][case % 4];
        for x in 0..n {
            let seed = pt[x] / (pt[x] + k * pn[x]);
            // Bayes: prior 1/(1+k) data, k/(1+k) noise.
            let bayes = (pt[x] / (1.0 + k)) / (pt[x] / (1.0 + k) + pn[x] * k / (1.0 + k));
            let logistic = 1.0 / (1.0 + (-(pt[x].ln() - (k * pn[x]).ln())).exp());
            worst = worst.max((seed - bayes).abs()).max((seed - logistic).abs());
        }
    }
    Claim::new(
        "001 §4.4.1 (4.4.1)",
        "NCE: P(y=1|x) = Pθ(x)/(Pθ(x) + k·P_noise(x)) for k noise samples per data sample",
        "closed form in f64: Bayes' posterior with priors 1/(1+k), k/(1+k) and the logistic \
         form σ(ln Pθ − ln(k·P_noise)), 20 seeded distribution pairs on 6 points, k ∈ {1,5,20,100}",
        "—",
        format!("max abs. diff. {}", tiny(worst)),
        holds_if(worst < 1e-14, ""),
    )
}

/// The population NCE loss (4.4.2) of the log-linear model `ln Pθ(x) = θ·φ(x) + c` against
/// uniform noise, minimised by damped Newton over (θ, c).
fn nce_fit(pd: &[f64], phi: &[f64], k: f64) -> (f64, f64) {
    let n = pd.len();
    let pn = 1.0 / n as f64;
    let sig = |g: f64| 1.0 / (1.0 + (-g).exp());
    let softplus = |g: f64| {
        if g > 0.0 {
            g + (-g).exp().ln_1p()
        } else {
            g.exp().ln_1p()
        }
    };
    let obj = |th: f64, c: f64| {
        r::sum((0..n).map(|x| {
            let gx = th * phi[x] + c - (k * pn).ln();
            pd[x] * softplus(-gx) + k * pn * softplus(gx)
        }))
    };
    let (mut th, mut c) = (0.0, -(n as f64).ln());
    for _ in 0..100 {
        let (mut g0, mut g1, mut h00, mut h01, mut h11) = (0.0, 0.0, 0.0, 0.0, 0.0);
        for x in 0..n {
            let gx = th * phi[x] + c - (k * pn).ln();
            let dg = -pd[x] * sig(-gx) + k * pn * sig(gx);
            let hg = (pd[x] + k * pn) * sig(gx) * sig(-gx);
            g0 += dg * phi[x];
            g1 += dg;
            h00 += hg * phi[x] * phi[x];
            h01 += hg * phi[x];
            h11 += hg;
        }
        let det = h00 * h11 - h01 * h01;
        let (s0, s1) = ((h11 * g0 - h01 * g1) / det, (h00 * g1 - h01 * g0) / det);
        let f0 = obj(th, c);
        let mut step = 1.0;
        while step > 1e-12 && obj(th - step * s0, c - step * s1) > f0 {
            step *= 0.5;
        }
        th -= step * s0;
        c -= step * s1;
        if (s0.abs() + s1.abs()) * step < 1e-15 {
            break;
        }
    }
    (th, c)
}

/// The maximum-likelihood θ of the normalised log-linear model (E_θ[φ] = E_data[φ]), by Newton.
fn ml_fit(pd: &[f64], phi: &[f64]) -> f64 {
    let target = r::sum(pd.iter().zip(phi).map(|(p, f)| p * f));
    let mut th = 0.0;
    for _ in 0..100 {
        let z: Vec<f64> = phi.iter().map(|f| th * f).collect();
        let p = r::softmax(&z, 1.0, None);
        let m = r::sum(p.iter().zip(phi).map(|(p, f)| p * f));
        let v = r::sum(p.iter().zip(phi).map(|(p, f)| p * (f - m) * (f - m)));
        let step = (m - target) / v;
        th -= step;
        if step.abs() < 1e-16 {
            break;
        }
    }
    th
}

/// `φ(x) = x/7` on 8 points.
fn phi8() -> Vec<f64> {
    (0..8).map(|x| x as f64 / 7.0).collect()
}

fn nce_limit_is_ml() -> Claim {
    let phi = phi8();
    // Not log-linear in φ: the model family is misspecified.
    let pd = [0.05, 0.2, 0.1, 0.25, 0.05, 0.15, 0.1, 0.1];
    let th_ml = ml_fit(&pd, &phi);
    let ks = [1.0, 10.0, 100.0, 1e3, 1e4];
    let errs: Vec<f64> = ks
        .iter()
        .map(|&k| (nce_fit(&pd, &phi, k).0 - th_ml).abs())
        .collect();
    let (_, c4) = nce_fit(&pd, &phi, 1e4);
    let z_ml = r::logsumexp(
        &phi.iter().map(|f| th_ml * f).collect::<Vec<_>>(),
        1.0,
        None,
    );
    let mass_err = (c4 + z_ml).abs();
    let decreasing = errs.windows(2).all(|w| w[1] < w[0]);
    let ok = decreasing && errs[4] < 1e-3 * errs[0].max(1e-3) && mass_err < 1e-3;
    Claim::new(
        "001 §4.4.1 (4.4.2)",
        "as k → ∞, minimising L_NCE is equivalent to minimising KL(P_data ‖ Pθ) (maximum likelihood)",
        "population NCE minimiser (damped Newton in f64) of a misspecified log-linear model \
         ln Pθ(x) = θ·x/7 + c on 8 points, uniform noise, k = 1 … 1e4, against the ML \
         (KL-minimising) θ; and the learned c against −ln Z(θ_ML)",
        "—",
        format!(
            "|θ_NCE − θ_ML|: k=1 {}, k=10 {}, k=100 {}, k=1e3 {}, k=1e4 {}; |c + ln Z| at k=1e4 {}",
            sci(errs[0], 3),
            sci(errs[1], 3),
            sci(errs[2], 3),
            sci(errs[3], 3),
            sci(errs[4], 3),
            sci(mass_err, 3)
        ),
        holds_if(ok, "the NCE minimiser does not approach the ML one"),
    )
}

fn nce_needs_k_infinite() -> Claim {
    let phi = phi8();
    let (th_star, c_star) = (1.3, 0.0);
    let z: Vec<f64> = phi.iter().map(|f| th_star * f + c_star).collect();
    let pd = r::softmax(&z, 1.0, None);
    let c_true = -r::logsumexp(&z, 1.0, None);
    let mut worst = 0.0f64;
    for k in [1.0, 2.0, 5.0] {
        let (th, c) = nce_fit(&pd, &phi, k);
        worst = worst.max((th - th_star).abs()).max((c - c_true).abs());
    }
    Claim::new(
        "001 §4.4.1",
        "NCE's theoretical guarantee requires k → ∞ (unreachable in practice)",
        "counter-example: well-specified log-linear model (P_data = P_θ*, θ* = 1.3, 8 points), \
         population NCE minimiser by damped Newton in f64 at k = 1, 2, 5; the corrected form is \
         this same computation",
        "needs k → ∞",
        format!(
            "max |θ̂ − θ*|, |ĉ − (−ln Z)| over k ∈ {{1,2,5}}: {}",
            tiny(worst)
        ),
        wrong_if(
            worst < 1e-9,
            "NCE is consistent for every finite k ≥ 1 (Gutmann & Hyvärinen 2010, \
             Thm. 2): when the family contains P_data the minimiser is the true θ, \
             normaliser included; larger k only lowers the variance (and under \
             misspecification moves the fit toward ML)",
        ),
    )
}

// ---------------------------------------------------------------------------------------------
// §4.4.1 InfoNCE

fn infonce_is_ce() -> Claim {
    let (n, d, tau) = (5, 4, 0.2);
    let mut g = Rng(202);
    let (mut e_kernel, mut e_ce) = (0.0f64, 0.0f64);
    let mut shown = 0.0;
    for case in 0..10 {
        let q = g.vec(n * d, -1.0, 1.0);
        let k = g.vec(n * d, -1.0, 1.0);
        let opts = InfoNceOptions::new()
            .with_temperature(tau)
            .with_normalize(false)
            .with_reduction(Reduction::Mean);
        let mut scratch = vec![0.0; info_nce_scratch_len(n, 0, &opts)];
        let l = info_nce(
            Poly,
            &q,
            &k,
            d,
            Negatives::InBatch,
            &opts,
            InfoNceOutputs::new(&mut scratch),
        )
        .expect("valid InfoNCE inputs");
        let logits: Vec<f64> = q
            .chunks(d)
            .flat_map(|qi| k.chunks(d).map(move |kj| dot(qi, kj) / tau))
            .collect();
        let targets: Vec<i64> = (0..n as i64).collect();
        let lce = cross_entropy(
            Poly,
            &logits,
            n,
            &targets,
            &CrossEntropyOptions::new(),
            CrossEntropyOutputs::new(),
        )
        .expect("valid cross-entropy inputs");
        let lref = r::sum(
            logits
                .chunks(n)
                .enumerate()
                .map(|(i, z)| -r::log_softmax(z, 1.0, None)[i]),
        ) / n as f64;
        e_kernel = e_kernel.max((l - lref).abs() / lref);
        e_ce = e_ce.max((lce - lref).abs() / lref);
        if case == 0 {
            shown = l;
        }
    }
    Claim::new(
        "001 §4.4.1 (4.4.3), (4.4.6)",
        "L_InfoNCE = −log(exp(s_ij/τ)/Σ_k exp(s_ik/τ)) is the cross-entropy of the logits z_k = s_ik/τ with label j",
        "loss_core::info_nce (in-batch, no normalisation) vs loss_core::cross_entropy on the \
         materialised logits Q·Kᵀ/τ vs f64 −log_softmax, 10 seeded batches (N = 5, d = 4, τ = 0.2)",
        "—",
        format!(
            "case 0 loss {}; max rel. err info_nce {} / cross_entropy {} vs f64",
            sci(shown, 3),
            tiny(e_kernel),
            tiny(e_ce)
        ),
        holds_if(e_kernel < TOL_KERNEL && e_ce < TOL_KERNEL, ""),
    )
}

fn infonce_distribution() -> Claim {
    let mut g = Rng(303);
    let (mut sum_err, mut e_ref, mut lit) = (0.0f64, 0.0f64, f64::INFINITY);
    for _ in 0..20 {
        let n = 6;
        let s = g.vec(n, -1.0, 1.0);
        let tau = 0.1;
        let p = k_softmax_t(&s, tau);
        let pr = r::softmax(&s, tau, None);
        sum_err = sum_err.max((r::sum(p.iter().copied()) - 1.0).abs());
        e_ref = e_ref.max(rel_err(&p, &pr));
        // Literal reading of 4.4.4: the right side does not depend on c = i, summing it over the
        // N values of c gives N·p_j.
        lit = lit.min((n as f64 * pr[0] - 1.0).abs());
    }
    Claim::new(
        "001 §4.4.1 (4.4.4), (4.4.22)",
        "P(c=j|q) = exp(s_ij/τ)/Σ_k exp(s_ik/τ) is a distribution over the N candidates and L = −log P(c=j|q) (4.4.4 writes c=i on the left: a typo for c=j, as 4.4.5 uses)",
        "softmax_core::softmax_with_temperature vs reference::softmax, 20 seeded rows (N = 6, \
         τ = 0.1): sums to 1; the literal c=i reading summed over c gives N·p_j ≠ 1",
        "—",
        format!(
            "max |Σp − 1| {}, rel. err vs f64 {}; literal reading min |N·p_j − 1| {}",
            tiny(sum_err),
            tiny(e_ref),
            sci(lit, 3)
        ),
        holds_if(sum_err < TOL_KERNEL && e_ref < TOL_KERNEL, ""),
    )
}

/// A random 3×4 joint distribution (row-major).
fn joint(g: &mut Rng, a: usize, b: usize, spread: f64) -> Vec<f64> {
    let z = g.vec(a * b, -spread, spread);
    r::softmax(&z, 1.0, None)
}

fn marginals(p: &[f64], a: usize, b: usize) -> (Vec<f64>, Vec<f64>) {
    let px = (0..a)
        .map(|x| r::sum((0..b).map(|y| p[x * b + y])))
        .collect();
    let py = (0..b)
        .map(|y| r::sum((0..a).map(|x| p[x * b + y])))
        .collect();
    (px, py)
}

fn mi_definition() -> Claim {
    let mut g = Rng(404);
    let (a, b) = (3, 4);
    let (mut e1, mut e2, mut e3) = (0.0f64, 0.0f64, 0.0f64);
    let mut shown = 0.0;
    for case in 0..10 {
        let p = joint(&mut g, a, b, 2.0);
        let (px, py) = marginals(&p, a, b);
        let lp: Vec<f64> = p.iter().map(|v| v.ln()).collect();
        let lprod: Vec<f64> = (0..a * b).map(|i| (px[i / b] * py[i % b]).ln()).collect();
        let kl = softmax_core::kl_divergence(Poly, &lp, &lprod).expect("equal rows");
        let kl_ref = r::kl(&lp, &lprod);
        let e_log = r::sum((0..a * b).map(|i| p[i] * (p[i] / (px[i / b] * py[i % b])).ln()));
        let hh = k_entropy_of(&px) + k_entropy_of(&py) - k_entropy_of(&p);
        e1 = e1.max((kl - e_log).abs());
        e2 = e2.max((kl_ref - e_log).abs());
        e3 = e3.max((hh - e_log).abs());
        if case == 0 {
            shown = kl;
        }
    }
    Claim::new(
        "001 §4.4.1 (4.4.7)",
        "I(X;Y) = KL(P_XY ‖ P_X⊗P_Y) = E[log P(x,y)/(P(x)P(y))]",
        "softmax_core::kl_divergence of the logits ln P_XY, ln(P_X·P_Y) vs reference::kl vs the \
         expectation in f64, and H(X)+H(Y)−H(X,Y) with softmax_core::entropy; 10 seeded 3×4 joints",
        "—",
        format!(
            "case 0 I = {}; max abs. diff. kernel {}, f64 ref {}, entropies {}",
            sci(shown, 3),
            tiny(e1),
            tiny(e2),
            tiny(e3)
        ),
        holds_if(e1 < TOL_KERNEL && e2 < TOL_KERNEL && e3 < 1e-10, ""),
    )
}

/// The exact expected InfoNCE loss with `n` candidates (anchor x, positive y₁ ~ P(y|x),
/// negatives y₂…y_n ~ P(y)) of the critic `f` (a×b table), by enumeration: (kernel, f64 ref).
fn expected_infonce(p: &[f64], a: usize, b: usize, f: &[f64], n: usize) -> (f64, f64) {
    let (_, py) = marginals(p, a, b);
    let (mut lk, mut lr) = (Vec::new(), Vec::new());
    let negs = b.pow((n - 1) as u32);
    for x in 0..a {
        for y1 in 0..b {
            let w1 = p[x * b + y1]; // P(x)·P(y1|x)
            for code in 0..negs {
                let mut w = w1;
                let mut row = vec![f[x * b + y1]];
                let mut c = code;
                for _ in 1..n {
                    let y = c % b;
                    c /= b;
                    w *= py[y];
                    row.push(f[x * b + y]);
                }
                lk.push(-w * k_log_softmax(&row)[0]);
                lr.push(-w * r::log_softmax(&row, 1.0, None)[0]);
            }
        }
    }
    (r::sum(lk), r::sum(lr))
}

fn mi_of(p: &[f64], a: usize, b: usize) -> f64 {
    let (px, py) = marginals(p, a, b);
    r::sum((0..a * b).map(|i| p[i] * (p[i] / (px[i / b] * py[i % b])).ln()))
}

fn optimal_critic(p: &[f64], a: usize, b: usize) -> Vec<f64> {
    let (px, py) = marginals(p, a, b);
    (0..a * b)
        .map(|i| (p[i] / (px[i / b] * py[i % b])).ln())
        .collect()
}

fn mi_bound() -> Claim {
    let (a, b) = (3, 3);
    let mut g = Rng(505);
    let (mut min_gap, mut e_k) = (f64::INFINITY, 0.0f64);
    let mut cases = 0;
    for spread in [1.0, 2.0, 3.0] {
        let p = joint(&mut g, a, b, spread);
        let i = mi_of(&p, a, b);
        let mut critics = vec![optimal_critic(&p, a, b)];
        for _ in 0..3 {
            critics.push(g.vec(a * b, -2.0, 2.0));
        }
        for f in &critics {
            for n in 2..=6 {
                let (lk, lr) = expected_infonce(&p, a, b, f, n);
                let bound = mutual_information_lower_bound(Poly, lk, n).expect("n candidates > 0");
                min_gap = min_gap.min(i - bound);
                e_k = e_k.max((lk - lr).abs());
                cases += 1;
            }
        }
    }
    Claim::new(
        "001 §4.4.1 (4.4.8)",
        "I(X;Y) ≥ log N − L_InfoNCE (N = all candidates, the positive included; L its expectation)",
        format!(
            "exact expectation by enumeration of all candidate tuples, 3 seeded 3×3 joints × \
             (optimal critic ln P(y|x)/P(y) + 3 random critics) × N = 2…6 ({cases} cases); \
             per-tuple loss by softmax_core::log_softmax beside reference::log_softmax, bound by \
             loss_core::mutual_information_lower_bound"
        ),
        "I − (log N − L) ≥ 0",
        format!(
            "min I − (log N − E L) {}; max |E L kernel − f64| {}",
            sci(min_gap, 3),
            tiny(e_k)
        ),
        holds_if(min_gap >= -1e-12 && e_k < TOL_KERNEL, ""),
    )
}

fn mi_bound_tighter() -> Claim {
    let (a, b) = (3, 3);
    let mut g = Rng(606);
    let p = joint(&mut g, a, b, 2.0);
    let i = mi_of(&p, a, b);
    let f = optimal_critic(&p, a, b);
    let gaps: Vec<f64> = (2..=7)
        .map(|n| {
            let (lk, _) = expected_infonce(&p, a, b, &f, n);
            i - mutual_information_lower_bound(Poly, lk, n).expect("n > 0")
        })
        .collect();
    let ok = gaps.windows(2).all(|w| w[1] < w[0]) && gaps.iter().all(|&v| v >= -1e-12);
    Claim::new(
        "001 §4.4.1 (4.4.8)",
        "as N grows the bound log N − L_InfoNCE gets tighter",
        "exact expected loss (enumeration) with the optimal critic ln P(y|x)/P(y), seeded 3×3 \
         joint, N = 2…7; kernels as above. (For a fixed critic; the bound can never exceed its \
         ceiling log N, so large I needs many candidates)",
        "gap decreasing in N",
        format!(
            "I = {}; gap I − bound: N=2 {}, N=4 {}, N=7 {}",
            sci(i, 3),
            sci(gaps[0], 3),
            sci(gaps[2], 3),
            sci(gaps[5], 3)
        ),
        holds_if(ok, "the gap does not shrink with N"),
    )
}

fn infonce_anchor_form() -> Claim {
    // Anchor y, positive x, negatives x̃_k: p = e^{s(x,y)/τ}/(e^{s(x,y)/τ} + Σ e^{s(x̃_k,y)/τ}).
    let mut worst = (0.0f64, 0.0f64);
    let mut shown = 0.0;
    for seed in 1..=10 {
        let c = Nce::random(700 + seed);
        // q = f(y), k⁺ = f(x), k⁻ = f(x̃_k).
        let (l, ..) = c.kernel();
        let s_pos = dot(&c.kp, &c.q) / c.tau;
        let denom = s_pos.exp() + r::sum(c.kn.chunks(c.d).map(|k| (dot(k, &c.q) / c.tau).exp()));
        let p = s_pos.exp() / denom;
        let lr = c.loss(&c.q, &c.kp, &c.kn);
        worst.0 = worst.0.max((l - (-p.ln())).abs() / l);
        worst.1 = worst.1.max((lr - (-p.ln())).abs() / lr);
        if seed == 1 {
            shown = p;
        }
    }
    Claim::new(
        "001 §4.4.1 (4.4.9)",
        "with p = exp(s(x,y)/τ)/(exp(s(x,y)/τ) + Σ_k exp(s(x̃_k,y)/τ)), L_InfoNCE = −log p",
        "loss_core::info_nce_single (query f(y), positive f(x), negatives f(x̃_k)) and the f64 \
         log-softmax form vs −ln p computed literally, 10 seeded cases (d = 6, 5 negatives, τ = 0.5)",
        "—",
        format!(
            "case 1 p = {}; max rel. err kernel {}, f64 {}",
            sci(shown, 3),
            tiny(worst.0),
            tiny(worst.1)
        ),
        holds_if(worst.0 < 1e-12 && worst.1 < 1e-12, ""),
    )
}

fn attention_maximises_mi() -> Claim {
    Claim::new(
        "001 §4.4.1",
        "self-attention, by computing token similarities, maximises the mutual information between sequence positions",
        "—",
        "—",
        "—",
        Verdict::NotCheckable {
            why: "an interpretation of what trained attention does: attention has no InfoNCE \
                  objective or MI estimate to evaluate; needs trained models and data"
                .into(),
        },
    )
}

fn attention_formula() -> Claim {
    let (t, s, d, dv) = (4, 5, 8, 3);
    let mut g = Rng(808);
    let (mut e, mut shown) = (0.0f64, 0.0);
    for case in 0..5 {
        let (q, k, v) = g.qkv((t, s, d, dv), 1.0, 1.0);
        let (o, _) = k_attention(&q, &k, &v, 1, d, dv, None);
        let (or, _) = ref_attention(&q, &k, &v, d, dv, 1.0 / (d as f64).sqrt());
        e = e.max(rel_err(&o, &or));
        if case == 0 {
            shown = o[0];
        }
    }
    Claim::new(
        "001 §4.4.1 (4.4.10)",
        "Attention(q_i, K, V) = Σ_j softmax_j(q_iᵀk_j/√d)·v_j",
        "attention_core::attention with its default scale vs the f64 formula (reference::softmax \
         of q·k/√d, weighted sum), 5 seeded cases (t = 4, s = 5, d = 8, dv = 3)",
        "—",
        format!(
            "o[0] = {}; max rel. err kernel vs f64 {}",
            sci(shown, 3),
            tiny(e)
        ),
        holds_if(e < TOL_KERNEL, ""),
    )
}

// ---------------------------------------------------------------------------------------------
// §4.4.2 gradients

fn infonce_single_loss() -> Claim {
    let (mut e, mut shown) = (0.0f64, 0.0);
    for seed in 1..=20 {
        let c = Nce::random(seed);
        let (l, ..) = c.kernel();
        let lr = c.loss(&c.q, &c.kp, &c.kn);
        e = e.max((l - lr).abs() / lr);
        if seed == 1 {
            shown = l;
        }
    }
    Claim::new(
        "001 §4.4.2 (4.4.11)",
        "L = −log(exp(qᵀk⁺/τ)/(exp(qᵀk⁺/τ) + Σ_m exp(qᵀk⁻_m/τ))) = −log softmax([s⁺, s⁻_1, …])₀",
        "loss_core::info_nce_single vs reference::log_softmax of the logits, 20 seeded cases \
         (d = 6, 5 negatives, τ = 0.5)",
        "—",
        format!(
            "case 1: kernel {}, max rel. err vs f64 {}",
            sci(shown, 3),
            tiny(e)
        ),
        holds_if(e < TOL_KERNEL, ""),
    )
}

fn grad_query() -> Claim {
    let (mut e_seed, mut e_line3, mut e_kernel, mut psum) = (0.0f64, 0.0f64, 0.0f64, 0.0f64);
    for seed in 1..=20 {
        let c = Nce::random(seed);
        let f = fd(|q| c.loss(q, &c.kp, &c.kn), &c.q, H);
        let ek = c.ek();
        let form: Vec<f64> = (0..c.d).map(|i| (ek[i] - c.kp[i]) / c.tau).collect();
        // Third line of (4.4.12): −(k⁺/τ − (k⁺e^{s⁺} + Σ k⁻e^{s⁻})/(Z·τ)).
        let z = c.logits(&c.q, &c.kp, &c.kn);
        let zsum = r::sum(z.iter().map(|v| v.exp()));
        let line3: Vec<f64> = (0..c.d)
            .map(|i| {
                let num = c.kp[i] * z[0].exp()
                    + r::sum(c.kn.chunks(c.d).zip(&z[1..]).map(|(k, s)| k[i] * s.exp()));
                -(c.kp[i] / c.tau - num / (zsum * c.tau))
            })
            .collect();
        let (_, gq, _, _) = c.kernel();
        e_seed = e_seed.max(rel_err(&form, &f));
        e_line3 = e_line3.max(rel_err(&line3, &f));
        e_kernel = e_kernel.max(rel_err(&gq, &form));
        psum = psum.max((r::sum(c.p()) - 1.0).abs());
    }
    Claim::new(
        "001 §4.4.2 (4.4.12)–(4.4.14)",
        "∂L/∂q = (1/τ)(E_{k∼P(·|q)}[k] − k⁺), P of (4.4.13) the softmax over [k⁺, k⁻_m]",
        "central finite differences of the f64 loss vs the chapter's form and vs the third line of \
         the derivation (4.4.12); loss_core::info_nce_single's grad_query vs the form; 20 seeded cases",
        "(E_P[k] − k⁺)/τ",
        format!(
            "max rel. err vs FD: form {}, derivation line {}; kernel vs form {}; max |ΣP − 1| {}",
            fd_err(e_seed),
            fd_err(e_line3),
            tiny(e_kernel),
            tiny(psum)
        ),
        holds_if(e_seed < TOL_FD && e_line3 < TOL_FD && e_kernel < TOL_KERNEL, ""),
    )
}

/// Over the 20 seeded [`Nce`] cases, from `case` giving (FD gradient, the chapter's form, the
/// corrected form, the kernel's gradient): (min rel. err of the chapter's form vs FD, max rel.
/// err of the corrected form vs FD, max rel. err of the kernel vs FD).
fn form_sweep(case: impl Fn(&Nce) -> [Vec<f64>; 4]) -> (f64, f64, f64) {
    let (mut best_seed, mut e_ok, mut e_kernel) = (f64::INFINITY, 0.0f64, 0.0f64);
    for seed in 1..=20 {
        let [f, form, correct, kernel] = case(&Nce::random(seed));
        best_seed = best_seed.min(rel_err(&form, &f));
        e_ok = e_ok.max(rel_err(&correct, &f));
        e_kernel = e_kernel.max(rel_err(&kernel, &f));
    }
    (best_seed, e_ok, e_kernel)
}

/// The claim of a gradient form the sweep of [`form_sweep`] refutes (`corrected` when the
/// chapter's form misses by > 10 % and the corrected form and the kernel agree with FD).
fn form_claim(
    source: &str,
    claim: &str,
    method: &str,
    claimed: &str,
    corrected: &str,
    (best_seed, e_ok, e_kernel): (f64, f64, f64),
) -> Claim {
    Claim::new(
        source,
        claim,
        method,
        claimed,
        format!(
            "chapter's form: min rel. err {}; corrected: max rel. err {}; kernel vs FD {}",
            sci(best_seed, 3),
            fd_err(e_ok),
            fd_err(e_kernel)
        ),
        wrong_if(
            best_seed > 0.1 && e_ok < TOL_FD && e_kernel < TOL_FD,
            corrected,
        ),
    )
}

fn grad_positive() -> Claim {
    let errs = form_sweep(|c| {
        let f = fd(|kp| c.loss(&c.q, kp, &c.kn), &c.kp, H);
        let (p, ek) = (c.p(), c.ek());
        let form: Vec<f64> = (0..c.d).map(|i| (c.q[i] - ek[i]) * p[0] / c.tau).collect();
        let correct: Vec<f64> = (0..c.d).map(|i| (p[0] - 1.0) * c.q[i] / c.tau).collect();
        let (_, _, gp, _) = c.kernel();
        [f, form, correct, gp]
    });
    form_claim(
        "001 §4.4.2 (4.4.15)",
        "∂L/∂k⁺ = (1/τ)(q − E_P[k])·P(k⁺|q)",
        "central finite differences of the f64 loss vs the chapter's form and vs the corrected \
         form, 20 seeded cases (d = 6, 5 negatives, τ = 0.5); loss_core::info_nce_single's \
         grad_positive vs FD",
        "(q − E_P[k])·P(k⁺|q)/τ",
        "∂L/∂k⁺ = (P(k⁺|q) − 1)·q/τ (along q, not along q − E_P[k])",
        errs,
    )
}

fn grad_negative() -> Claim {
    let errs = form_sweep(|c| {
        let f = fd(|kn| c.loss(&c.q, &c.kp, kn), &c.kn, H);
        let (p, ek) = (c.p(), c.ek());
        let m = c.m();
        let form: Vec<f64> = (0..m * c.d)
            .map(|ji| (ek[ji % c.d] - c.q[ji % c.d]) * p[1 + ji / c.d] / c.tau)
            .collect();
        let correct: Vec<f64> = (0..m * c.d)
            .map(|ji| p[1 + ji / c.d] * c.q[ji % c.d] / c.tau)
            .collect();
        let (_, _, _, gn) = c.kernel();
        [f, form, correct, gn]
    });
    form_claim(
        "001 §4.4.2 (4.4.16)",
        "∂L/∂k⁻_m = (1/τ)(E_P[k] − q)·P(k⁻_m|q)",
        "central finite differences of the f64 loss vs the chapter's form and vs the corrected \
         form, 20 seeded cases; loss_core::info_nce_single's grad_negatives vs FD",
        "(E_P[k] − q)·P(k⁻_m|q)/τ",
        "∂L/∂k⁻_m = P(k⁻_m|q)·q/τ",
        errs,
    )
}

fn geometry_query() -> Claim {
    let (mut e_id, mut min_drop) = (0.0f64, f64::INFINITY);
    for seed in 1..=20 {
        let c = Nce::random(seed);
        let (p, ek) = (c.p(), c.ek());
        let pn = 1.0 - p[0];
        // Weighted centre of the negatives (weights P(k⁻_m|q)/(1 − P(k⁺|q))).
        let centre: Vec<f64> = (0..c.d)
            .map(|i| r::sum(c.kn.chunks(c.d).zip(&p[1..]).map(|(k, pm)| pm * k[i])) / pn)
            .collect();
        let descent: Vec<f64> = (0..c.d).map(|i| (c.kp[i] - ek[i]) / c.tau).collect();
        let pull_push: Vec<f64> = (0..c.d)
            .map(|i| pn * (c.kp[i] - centre[i]) / c.tau)
            .collect();
        e_id = e_id.max(rel_err(&pull_push, &descent));
        // A small step along it lowers the loss.
        let q2: Vec<f64> = (0..c.d).map(|i| c.q[i] + 1e-3 * descent[i]).collect();
        min_drop = min_drop.min(c.loss(&c.q, &c.kp, &c.kn) - c.loss(&q2, &c.kp, &c.kn));
    }
    Claim::new(
        "001 §4.4.2 (4.4.17)",
        "descent on q pulls q toward k⁺ and pushes it away from the P-weighted centre of the negatives",
        "identity −∂L/∂q = (1 − P(k⁺|q))·(k⁺ − k̄⁻)/τ, k̄⁻ the P-weighted mean of the negatives, \
         in f64 over 20 seeded cases; and a step of 1e-3 along it lowers the f64 loss",
        "—",
        format!(
            "identity max rel. err {}; min loss decrease {}",
            tiny(e_id),
            sci(min_drop, 3)
        ),
        holds_if(e_id < 1e-12 && min_drop > 0.0, ""),
    )
}

fn geometry_positive() -> Claim {
    // Ratio ‖∂L/∂k⁺‖ / (‖q‖/τ): the chapter says P(k⁺|q); FD gives 1 − P(k⁺|q).
    let (mut e_one_minus, mut min_e_p) = (0.0f64, f64::INFINITY);
    let mut high = (0.0, 0.0);
    for seed in 1..=20 {
        let mut c = Nce::random(seed);
        if seed == 20 {
            // A converged pair: k⁺ aligned with q, P(k⁺|q) ≈ 1.
            c.kp = c.q.iter().map(|v| 3.0 * v).collect();
        }
        let f = fd(|kp| c.loss(&c.q, kp, &c.kn), &c.kp, H);
        let p = c.p();
        // 1 − P(k⁺|q) as the negatives' mass (no cancellation near P = 1).
        let one_minus = r::sum(p[1..].iter().copied());
        let ratio = norm(&f) / (norm(&c.q) / c.tau);
        e_one_minus = e_one_minus.max((ratio - one_minus).abs() / one_minus);
        min_e_p = min_e_p.min((ratio - p[0]).abs());
        if seed == 20 {
            high = (one_minus, ratio);
        }
    }
    Claim::new(
        "001 §4.4.2",
        "the pull on k⁺ toward q is weighted by P(k⁺|q), and is small once P(k⁺|q) ≈ 1",
        "‖∂L/∂k⁺‖/(‖q‖/τ) from central finite differences of the f64 loss vs P(k⁺|q) and vs \
         1 − P(k⁺|q) (= Σ_m P(k⁻_m|q)), 20 seeded cases (the last one near convergence: k⁺ = 3q)",
        "weight P(k⁺|q)",
        format!(
            "FD weight vs 1 − P: max rel. err {}; min |FD weight − P| {}; near-converged case 1 − P = {}, FD weight {}",
            fd_err(e_one_minus),
            sci(min_e_p, 3),
            sci(high.0, 3),
            sci(high.1, 3)
        ),
        wrong_if(
            e_one_minus < TOL_FD && min_e_p > 1e-3,
            "−∂L/∂k⁺ = (1 − P(k⁺|q))·q/τ: the pull is along q with weight \
             1 − P(k⁺|q), which is why it vanishes as P(k⁺|q) → 1",
        ),
    )
}

fn geometry_negative() -> Claim {
    let (mut e, mut min_cos) = (0.0f64, f64::INFINITY);
    for seed in 1..=20 {
        let c = Nce::random(seed);
        let f = fd(|kn| c.loss(&c.q, &c.kp, kn), &c.kn, H);
        let p = c.p();
        // ∂L/∂k⁻_m = P(k⁻_m|q)·q/τ: magnitude ∝ P(k⁻_m|q) (factor ‖q‖/τ), direction +q.
        let want: Vec<f64> = (0..c.kn.len())
            .map(|ji| p[1 + ji / c.d] * c.q[ji % c.d] / c.tau)
            .collect();
        e = e.max(rel_err(&f, &want));
        for g in f.chunks(c.d) {
            // Gradient along +q: descent pushes k⁻ along −q, away from q.
            min_cos = min_cos.min(dot(g, &c.q) / (norm(g) * norm(&c.q)));
        }
    }
    Claim::new(
        "001 §4.4.2",
        "each negative key is pushed away from q with a force proportional to P(k⁻_m|q)",
        "central finite differences of the f64 loss, 20 seeded cases × 5 negatives: \
         the FD gradients vs P(k⁻_m|q)·q/τ (relative to the largest entry), and the cosine of \
         ∂L/∂k⁻_m with q (descent = −gradient)",
        "∝ P(k⁻_m|q)",
        format!(
            "max rel. err of the proportionality {}; min cos(∂L/∂k⁻_m, q) {}",
            fd_err(e),
            sci(min_cos, 3)
        ),
        holds_if(e < TOL_FD && min_cos > 1.0 - 1e-9, ""),
    )
}

fn mse_ce_gradients() -> Claim {
    let mut g = Rng(909);
    let (mut e_mse, mut e_ce) = (0.0f64, 0.0f64);
    for case in 0..10 {
        let n = 5;
        let yh = g.vec(n, -2.0, 2.0);
        let y = g.vec(n, -2.0, 2.0);
        let mut gm = vec![0.0; n];
        mse_loss(
            Poly,
            &yh,
            &y,
            &MseOptions::new().with_reduction(Reduction::Sum),
            Outputs::new().with_grad(&mut gm),
        )
        .expect("valid MSE inputs");
        let fm = fd(
            |x| r::sum(x.iter().zip(&y).map(|(a, b)| (a - b) * (a - b))),
            &yh,
            H,
        );
        let want: Vec<f64> = yh.iter().zip(&y).map(|(a, b)| 2.0 * (a - b)).collect();
        e_mse = e_mse.max(rel_err(&gm, &want)).max(rel_err(&fm, &want));
        let z = g.vec(n, -2.0, 2.0);
        let t = case % n;
        let (_, gc) = k_ce(&z, t);
        let fc = fd(|z| -r::log_softmax(z, 1.0, None)[t], &z, H);
        let ph = r::softmax(&z, 1.0, None);
        let want: Vec<f64> = (0..n)
            .map(|i| ph[i] - if i == t { 1.0 } else { 0.0 })
            .collect();
        e_ce = e_ce.max(rel_err(&gc, &want)).max(rel_err(&fc, &want));
    }
    Claim::new(
        "001 §4.4.2",
        "the MSE gradient is ∝ (ŷ − y); the cross-entropy gradient w.r.t. the logits is p̂ − p",
        "loss_core::mse_loss (sum: 2(ŷ − y)) and loss_core::cross_entropy gradients and central \
         finite differences of f64 losses vs the closed forms, 10 seeded cases of 5",
        "—",
        format!(
            "max rel. err MSE {}, cross-entropy {}",
            fd_err(e_mse),
            fd_err(e_ce)
        ),
        holds_if(e_mse < TOL_FD && e_ce < TOL_FD, ""),
    )
}

// ---------------------------------------------------------------------------------------------
// §4.4.2 temperature

fn tau_infinite() -> Claim {
    let s = [0.9, -0.3, 0.4, -1.2, 0.1];
    let n = s.len() as f64;
    let mean = r::sum(s.iter().copied()) / n;
    let mut dev = Vec::new();
    let mut lin = Vec::new();
    let mut e_ref = 0.0f64;
    for tau in [10.0, 100.0, 1000.0] {
        let p = k_softmax_t(&s, tau);
        let pr = r::softmax(&s, tau, None);
        e_ref = e_ref.max(rel_err(&p, &pr));
        dev.push(p.iter().map(|v| (v - 1.0 / n).abs()).fold(0.0, f64::max));
        lin.push(
            p.iter()
                .zip(&s)
                .map(|(v, si)| (v - (1.0 + (si - mean) / tau) / n).abs())
                .fold(0.0, f64::max),
        );
    }
    let ok = dev[1] < dev[0] / 5.0 && dev[2] < dev[1] / 5.0 && lin[2] < 1e-6 && e_ref < TOL_KERNEL;
    Claim::new(
        "001 §4.4.2 (4.4.18)",
        "τ → ∞: exp(s_i/τ) ≈ 1 + s_i/τ and softmax(s/τ) → uniform, p_i ≈ 1/N",
        "softmax_core::softmax_with_temperature (beside reference::softmax) at \
         τ = 10, 100, 1000 for s = [0.9, −0.3, 0.4, −1.2, 0.1]: max |p_i − 1/N| (O(1/τ)) and the \
         first-order form (1 + (s_i − s̄)/τ)/N (O(1/τ²))",
        "p_i → 1/N",
        format!(
            "max |p − 1/N|: {}; first-order error: {}; kernel vs f64 {}",
            sci_list(&dev[..3], 3),
            sci_list(&lin[..3], 3),
            tiny(e_ref)
        ),
        holds_if(ok, ""),
    )
}

fn tau_zero() -> Claim {
    let s = [0.9, -0.3, 0.4, -1.2, 0.85];
    let gaps: Vec<(f64, f64)> = [0.1, 0.01, 0.001]
        .iter()
        .map(|&tau| {
            let p = k_softmax_t(&s, tau);
            let pr = r::softmax(&s, tau, None);
            (1.0 - p[0], 1.0 - pr[0])
        })
        .collect();
    let e_ref = gaps.iter().map(|(a, b)| (a - b).abs()).fold(0.0, f64::max);
    let gaps: Vec<f64> = gaps.iter().map(|g| g.0).collect();
    let tie = k_softmax_t(&[1.0, 1.0, 0.0], 1e-3);
    Claim::new(
        "001 §4.4.2 (4.4.18)",
        "τ → 0: softmax(s/τ) → one-hot at the largest s_i",
        "softmax_core::softmax_with_temperature at τ = 0.1, 0.01, 0.001 for s = [0.9, −0.3, 0.4, \
         −1.2, 0.85] (max 0.9, runner-up 0.85): 1 − p_max; (with a tied maximum the limit splits \
         the mass evenly, checked on [1, 1, 0])",
        "p_max → 1",
        format!(
            "1 − p_max: {} (|kernel − f64| {}); tie [1,1,0] at τ=1e-3: p = {}, {}",
            sci_list(&gaps[..3], 3),
            tiny(e_ref),
            sci(tie[0], 3),
            sci(tie[1], 3)
        ),
        holds_if(gaps[2] < 1e-15 && gaps[1] < gaps[0] && e_ref < 1e-12, ""),
    )
}

fn tau_scale_effect() -> Claim {
    // k⁺ has the top score: the gradient vanishes as τ → 0.
    let d = 2;
    let q = vec![1.0, 0.0];
    let kp = vec![1.0, 0.0];
    let kn = vec![0.0, 1.0, -1.0, 0.0, 0.5, 0.5];
    let taus = [2.0, 1.0, 0.5, 0.2, 0.1, 0.05, 0.02];
    let norms = |kp: &[f64], kn: &[f64]| -> Vec<(f64, f64, f64)> {
        taus.iter()
            .map(|&tau| {
                let c = Nce {
                    d,
                    tau,
                    q: q.clone(),
                    kp: kp.to_vec(),
                    kn: kn.to_vec(),
                };
                let (_, gq, _, _) = c.kernel();
                // E_P[k] − k⁺ = Σ_m P_m (k⁻_m − k⁺): no cancellation when P(k⁺|q) ≈ 1.
                let p = c.p();
                let form: Vec<f64> = (0..d)
                    .map(|i| {
                        r::sum(
                            c.kn.chunks(d)
                                .zip(&p[1..])
                                .map(|(k, pm)| pm * (k[i] - c.kp[i])),
                        ) / tau
                    })
                    .collect();
                // The kernel's error is absolute, a few units of roundoff of ‖k‖/τ.
                let err = gq
                    .iter()
                    .zip(&form)
                    .map(|(a, b)| (a - b).abs())
                    .fold(0.0, f64::max)
                    * tau;
                (norm(&gq), norm(&form), err)
            })
            .collect()
    };
    let top = norms(&kp, &kn);
    // A negative outscores k⁺: the gradient grows like 1/τ.
    let kn_hard = vec![0.0, 1.0, -1.0, 0.0, 1.5, 0.0];
    let hard = norms(&kp, &kn_hard);
    let e = top
        .iter()
        .chain(&hard)
        .map(|&(_, _, err)| err)
        .fold(0.0, f64::max);
    let peak = top.iter().enumerate().fold(
        (0, 0.0),
        |acc, (i, &(v, _, _))| if v > acc.1 { (i, v) } else { acc },
    );
    let non_monotone = top[taus.len() - 1].0 < top[0].0 && peak.0 > 0 && peak.0 < taus.len() - 1;
    Claim::new(
        "001 §4.4.2",
        "scale effect: τ divides the gradient, so a smaller τ gives a larger gradient ∂L/∂q (faster learning)",
        "counter-example: ‖∂L/∂q‖ from loss_core::info_nce_single beside the f64 form \
         ‖Σ_m P_m(k⁻_m − k⁺)‖/τ (= ‖E_P[k] − k⁺‖/τ without cancellation), q = k⁺ = (1,0), negatives (0,1), (−1,0), (0.5,0.5), τ = 2 … 0.02; \
         and with a negative (1.5,0) that outscores k⁺ (the corrected form's two regimes)",
        "‖∂L/∂q‖ grows as τ ↓",
        format!(
            "k⁺ on top: ‖∂L/∂q‖ = {} (τ=2), peak {} (τ={}), {} (τ=0.02); negative on top: {} (τ=2), {} (τ=0.02); kernel vs f64: max abs. err × τ {}",
            sci(top[0].0, 3),
            sci(peak.1, 3),
            taus[peak.0],
            sci(top[taus.len() - 1].0, 3),
            sci(hard[0].0, 3),
            sci(hard[taus.len() - 1].0, 3),
            tiny(e)
        ),
        wrong_if(
            non_monotone && e < TOL_KERNEL,
            "only the prefactor is 1/τ (at fixed P); the gradient ‖E_P[k] − k⁺‖/τ \
             is not monotone in τ: it → 0 as τ → 0 when k⁺ has the top score and \
             grows like 1/τ only when a negative outscores k⁺",
        ),
    )
}

fn tau_sharpness() -> Claim {
    let mut g = Rng(1010);
    let taus = [0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0];
    let (mut mono, mut e) = (true, 0.0f64);
    let mut shown = (0.0, 0.0);
    for case in 0..20 {
        let s = g.vec(6, -1.0, 1.0);
        let mut prev_h = -1.0;
        let mut prev_max = 2.0;
        for &tau in &taus {
            let h = softmax_core::entropy(Poly, &s, tau).expect("valid row and τ");
            let hr = r::entropy(&s, tau, None);
            e = e.max((h - hr).abs() / hr);
            let pmax = k_softmax_t(&s, tau).iter().cloned().fold(0.0, f64::max);
            mono &= h > prev_h && pmax < prev_max;
            prev_h = h;
            prev_max = pmax;
            if case == 0 && tau == 0.05 {
                shown.0 = h;
            }
            if case == 0 && tau == 5.0 {
                shown.1 = h;
            }
        }
    }
    Claim::new(
        "001 §4.4.2",
        "sharpness effect: smaller τ makes P(k|q) sharper (top key → 1), larger τ flatter",
        "softmax_core::entropy (beside reference::entropy) and the largest probability of \
         softmax_core::softmax_with_temperature over τ = 0.05 … 5, 20 seeded score rows of 6: \
         entropy strictly increasing and max p strictly decreasing in τ",
        "entropy ↑ with τ",
        format!(
            "monotone in all 20: {}; case 0 H: {} (τ=0.05) → {} (τ=5), ln 6 = {}; kernel vs f64 {}",
            mono,
            sci(shown.0, 3),
            sci(shown.1, 3),
            sci(6f64.ln(), 3),
            tiny(e)
        ),
        holds_if(mono && e < 1e-12, ""),
    )
}

fn tau_practice() -> Claim {
    Claim::new(
        "001 §4.4.2",
        "in practice τ is set to 0.07–0.2; too high a τ risks representation collapse; a low τ sharpens decision boundaries",
        "—",
        "0.07–0.2",
        "—",
        Verdict::NotCheckable {
            why: "empirical statements about training practice and learned representations; \
                  need training runs and data"
                .into(),
        },
    )
}

fn hard_negatives() -> Claim {
    let taus = [1.0, 0.5, 0.2, 0.1, 0.07, 0.05];
    let mut mono = true;
    let mut shown = (0.0, 0.0);
    for seed in 1..=20 {
        let c0 = Nce::random(1100 + seed);
        let mut prev = 0.0;
        for &tau in &taus {
            let c = Nce {
                tau,
                ..c0.clone_with()
            };
            let (_, _, _, gn) = c.kernel();
            // Share of the hardest negative (top score) in the negatives' gradient mass.
            let z = c.logits(&c.q, &c.kp, &c.kn);
            let hard = (1..z.len())
                .max_by(|&a, &b| z[a].total_cmp(&z[b]))
                .expect("negatives")
                - 1;
            let mags: Vec<f64> = gn.chunks(c.d).map(norm).collect();
            let share = mags[hard] / r::sum(mags.iter().copied());
            mono &= share > prev;
            prev = share;
            if seed == 1 && tau == 1.0 {
                shown.0 = share;
            }
            if seed == 1 && tau == 0.05 {
                shown.1 = share;
            }
        }
    }
    Claim::new(
        "001 §4.4.2",
        "a low τ gives a hard negative (high qᵀk⁻) more probability and so a stronger push",
        "loss_core::info_nce_single's grad_negatives over τ = 1 … 0.05, 20 seeded cases: share of \
         the hardest negative in Σ_m ‖∂L/∂k⁻_m‖ (= its probability among the negatives), \
         strictly increasing as τ decreases",
        "—",
        format!(
            "increasing in all 20: {mono}; case 1 share {} (τ=1) → {} (τ=0.05)",
            sci(shown.0, 3),
            sci(shown.1, 3)
        ),
        holds_if(mono, ""),
    )
}

impl Nce {
    fn clone_with(&self) -> Nce {
        Nce {
            d: self.d,
            tau: self.tau,
            q: self.q.clone(),
            kp: self.kp.clone(),
            kn: self.kn.clone(),
        }
    }
}

fn score_variance() -> Claim {
    let mut g = Rng(1212);
    let a = 3f64.sqrt(); // uniform on [−√3, √3]: unit variance
    let samples = 4000;
    let mut ratios = Vec::new();
    for d in [16usize, 64, 256] {
        let dots: Vec<f64> = (0..samples)
            .map(|_| {
                let q = g.vec(d, -a, a);
                let k = g.vec(d, -a, a);
                dot(&q, &k)
            })
            .collect();
        let mean = r::sum(dots.iter().copied()) / samples as f64;
        let var = r::sum(dots.iter().map(|x| (x - mean) * (x - mean))) / (samples - 1) as f64;
        ratios.push(var / d as f64);
    }
    // Sample variance of 4000 draws: relative standard error ≈ √(2/4000) ≈ 2.2%; 10% is 4.5σ.
    let ok = ratios.iter().all(|r| (r - 1.0).abs() < 0.1);
    Claim::new(
        "001 §4.4.2",
        "when d_k is large, qᵀk has a large variance (d_k for unit-variance components); dividing by √d_k brings it back to 1",
        "closed form Var(qᵀk) = d_k·E[q²]E[k²] = d_k, and a seeded Monte Carlo in f64 (4000 pairs, \
         components uniform on [−√3, √3]) for d_k = 16, 64, 256: Var(qᵀk)/d_k = Var(qᵀk/√d_k) \
         (tolerance 10% ≈ 4.5 standard errors)",
        "Var = d_k",
        format!(
            "Var(qᵀk/√d_k): {} (16), {} (64), {} (256)",
            sci(ratios[0], 3),
            sci(ratios[1], 3),
            sci(ratios[2], 3)
        ),
        holds_if(ok, ""),
    )
}

fn sqrt_d_is_temperature() -> Claim {
    let (t, s, d, dv) = (3, 6, 16, 2);
    let mut g = Rng(1313);
    let (q, k, v) = g.qkv((t, s, d, dv), 1.0, 1.0);
    let (o, _) = k_attention(&q, &k, &v, 1, d, dv, None);
    let mut o_t = Vec::new();
    let mut o_r = Vec::new();
    for qi in q.chunks(d) {
        let sc: Vec<f64> = k.chunks(d).map(|kj| dot(qi, kj)).collect();
        let p = k_softmax_t(&sc, (d as f64).sqrt());
        let pr = r::softmax(&sc, (d as f64).sqrt(), None);
        for c in 0..dv {
            o_t.push(r::sum(v.chunks(dv).zip(&p).map(|(vj, pj)| pj * vj[c])));
            o_r.push(r::sum(v.chunks(dv).zip(&pr).map(|(vj, pj)| pj * vj[c])));
        }
    }
    let (e1, e2) = (rel_err(&o, &o_t), rel_err(&o_t, &o_r));
    Claim::new(
        "001 §4.4.2",
        "the 1/√d_k scaling of attention is mathematically the InfoNCE temperature τ = √d_k",
        "attention_core::attention (default scale 1/√d) vs weights from \
         softmax_core::softmax_with_temperature(qᵀk, τ = √d) vs reference::softmax, seeded \
         (t = 3, s = 6, d = 16, dv = 2)",
        "τ = √d_k",
        format!(
            "max rel. err attention vs temperature softmax {}, temperature softmax vs f64 {}",
            tiny(e1),
            tiny(e2)
        ),
        holds_if(e1 < TOL_KERNEL && e2 < TOL_KERNEL, ""),
    )
}

// ---------------------------------------------------------------------------------------------
// §4.4.3 softmax

fn simplex() -> Claim {
    let mut g = Rng(1414);
    let (mut sum_err, mut min_p, mut e) = (0.0f64, f64::INFINITY, 0.0f64);
    let mut sum_err32 = 0.0f64;
    for case in 0..20 {
        let spread = [1.0, 10.0, 30.0, 50.0][case % 4];
        let z = g.vec(8, -spread, spread);
        let p = k_softmax(&z);
        sum_err = sum_err.max((r::sum(p.iter().copied()) - 1.0).abs());
        min_p = min_p.min(p.iter().cloned().fold(f64::INFINITY, f64::min));
        e = e.max(rel_err(&p, &r::softmax(&z, 1.0, None)));
        let z32 = to32(&z);
        let mut p32 = vec![0.0f32; z.len()];
        softmax_core::softmax(Poly, &z32, &mut p32).expect("non-empty row");
        sum_err32 = sum_err32.max((r::sum(p32.iter().map(|&v| v as f64)) - 1.0).abs());
    }
    Claim::new(
        "001 §4.4.3 (4.4.19)",
        "softmax maps any z ∈ ℝⁿ into the probability simplex Δⁿ⁻¹ (p_i > 0, Σ p_i = 1)",
        "softmax_core::softmax in f64 and f32 beside reference::softmax, 20 seeded rows of 8 with \
         entries up to ±50",
        "—",
        format!(
            "max |Σp − 1| f64 {}, f32 {}; min p_i {}; max rel. err vs f64 ref {}",
            tiny(sum_err),
            sci(sum_err32, 3),
            sci(min_p, 3),
            tiny(e)
        ),
        holds_if(
            sum_err < TOL_KERNEL && sum_err32 < 1e-6 && min_p > 0.0 && e < TOL_KERNEL,
            "",
        ),
    )
}

fn order_preserving() -> Claim {
    let mut g = Rng(1515);
    let mut ok = true;
    for _ in 0..50 {
        let z = g.vec(7, -3.0, 3.0);
        let p = k_softmax(&z);
        for i in 0..z.len() {
            for j in 0..z.len() {
                if z[i] > z[j] {
                    ok &= p[i] > p[j];
                }
            }
        }
    }
    Claim::new(
        "001 §4.4.3",
        "softmax preserves the order of its inputs (z_i > z_j ⇒ p_i > p_j)",
        "softmax_core::softmax in f64 over all ordered pairs of 50 seeded rows of 7",
        "—",
        format!("order kept in every pair: {ok}"),
        holds_if(ok, ""),
    )
}

fn projection() -> Claim {
    let mut g = Rng(1616);
    let (mut min_move, mut sp_move, mut shift) = (f64::INFINITY, 0.0f64, 0.0f64);
    for _ in 0..20 {
        let z = g.vec(5, -2.0, 2.0);
        let p = k_softmax(&z);
        let pp = k_softmax(&p);
        min_move = min_move.min(
            p.iter()
                .zip(&pp)
                .map(|(a, b)| (a - b).abs())
                .fold(0.0, f64::max),
        );
        // sparsemax (the Euclidean projection onto Δ) is idempotent.
        let mut s = vec![0.0; 5];
        softmax_core::sparsemax(&z, &mut s).expect("non-empty row");
        let mut ss = vec![0.0; 5];
        softmax_core::sparsemax(&s, &mut ss).expect("non-empty row");
        let sr = r::sparsemax(&s, 1.0);
        sp_move = sp_move.max(rel_err(&ss, &s)).max(rel_err(&sr, &s));
        let zs: Vec<f64> = z.iter().map(|v| v + 3.7).collect();
        shift = shift.max(rel_err(&k_softmax(&zs), &p));
    }
    Claim::new(
        "001 §4.4.3",
        "softmax is a (parametrised, non-linear) projection onto the probability simplex",
        "idempotence test (a projection P has P(P(z)) = P(z)): softmax_core::softmax applied to its \
         own output, 20 seeded rows of 5; beside it softmax_core::sparsemax and \
         reference::sparsemax (the Euclidean projection onto Δ) and the shift invariance \
         softmax(z + 3.7) = softmax(z)",
        "projection",
        format!(
            "min over rows of max |softmax(p) − p| {}; sparsemax(sparsemax(z)) vs sparsemax(z) {}; shift {}",
            sci(min_move, 3),
            tiny(sp_move),
            tiny(shift)
        ),
        wrong_if(
            min_move > 1e-2 && sp_move < 1e-12,
            "softmax maps ℝⁿ onto the open simplex but is not a projection: \
             softmax(p) ≠ p for p ∈ Δ (it is many-to-one, invariant to z + c·1); \
             the Euclidean projection onto Δ is sparsemax",
        ),
    )
}

fn logit_ratio() -> Claim {
    let mut g = Rng(1717);
    let (c, d) = (4, 3);
    let mut e = 0.0f64;
    for _ in 0..10 {
        let w = g.vec(c * d, -1.0, 1.0);
        let b = g.vec(c, -1.0, 1.0);
        let x = g.vec(d, -2.0, 2.0);
        let z: Vec<f64> = (0..c)
            .map(|i| dot(&w[i * d..(i + 1) * d], &x) + b[i])
            .collect();
        let lp = k_log_softmax(&z);
        for i in 0..c {
            for j in 0..c {
                let wx = dot(
                    &(0..d)
                        .map(|a| w[i * d + a] - w[j * d + a])
                        .collect::<Vec<_>>(),
                    &x,
                ) + b[i]
                    - b[j];
                e = e.max((lp[i] - lp[j] - wx).abs());
            }
        }
    }
    Claim::new(
        "001 §4.4.3 (4.4.20)",
        "log(P(y=i|x)/P(y=j|x)) = z_i − z_j = (w_i − w_j)ᵀx + (b_i − b_j) for z = Wx + b",
        "softmax_core::log_softmax in f64, 10 seeded (W, b, x) with 4 classes × 3 features, all pairs",
        "—",
        format!("max abs. diff. {}", tiny(e)),
        holds_if(e < 1e-13, ""),
    )
}

fn iia() -> Claim {
    let mut g = Rng(1818);
    let mut e = 0.0f64;
    for _ in 0..20 {
        let z = g.vec(5, -2.0, 2.0);
        let p = k_softmax(&z);
        // Change the other options: perturb z[2..], and drop them entirely.
        let mut z2 = z.clone();
        for v in z2.iter_mut().skip(2) {
            *v += g.uniform(-3.0, 3.0);
        }
        let p2 = k_softmax(&z2);
        let p3 = k_softmax(&z[..2]);
        let r0 = p[0] / p[1];
        e = e
            .max((p2[0] / p2[1] - r0).abs() / r0)
            .max((p3[0] / p3[1] - r0).abs() / r0);
    }
    Claim::new(
        "001 §4.4.3",
        "IIA: P(i)/P(j) depends only on z_i, z_j, not on the other options",
        "softmax_core::softmax in f64, 20 seeded rows of 5: p_0/p_1 with the other three logits \
         perturbed by up to ±3 and with them removed",
        "—",
        format!("max rel. change of p_0/p_1 {}", tiny(e)),
        holds_if(e < 1e-13, ""),
    )
}

fn ce_one_hot() -> Claim {
    let mut g = Rng(1919);
    let (mut e1, mut e2) = (0.0f64, 0.0f64);
    let mut shown = 0.0;
    for case in 0..10 {
        let n = 6;
        let z = g.vec(n, -2.0, 2.0);
        let t = case % n;
        let onehot: Vec<f64> = (0..n).map(|i| if i == t { 1.0 } else { 0.0 }).collect();
        let (l, _) = k_ce(&z, t);
        let lp = cross_entropy_probs(
            Poly,
            &z,
            n,
            &onehot,
            &CrossEntropyOptions::new(),
            CrossEntropyOutputs::new(),
        )
        .expect("valid cross-entropy inputs");
        let lr = -r::log_softmax(&z, 1.0, None)[t];
        e1 = e1.max((l - lr).abs() / lr);
        e2 = e2.max((lp - lr).abs() / lr);
        if case == 0 {
            shown = l;
        }
    }
    Claim::new(
        "001 §4.4.3 (4.4.21)",
        "L_CE = −Σ_i p_i log p̂_i = −log p̂_{c*} for a one-hot p",
        "loss_core::cross_entropy_probs with the one-hot target and loss_core::cross_entropy with \
         the class index vs f64 −log_softmax, 10 seeded rows of 6",
        "—",
        format!(
            "case 0 loss {}; max rel. err probs-form {}, index-form {}",
            sci(shown, 3),
            tiny(e2),
            tiny(e1)
        ),
        holds_if(e1 < TOL_KERNEL && e2 < TOL_KERNEL, ""),
    )
}

fn attention_weights() -> Claim {
    let (t, s, d, dv) = (5, 7, 4, 3);
    let mut g = Rng(2020);
    let (q, k, v) = g.qkv((t, s, d, dv), 1.5, 1.0);
    let (o, lse) = k_attention(&q, &k, &v, 1, d, dv, None);
    let scale = 1.0 / (d as f64).sqrt();
    let (or, a) = ref_attention(&q, &k, &v, d, dv, scale);
    // The kernel's weights, rebuilt from its lse: A_ij = exp(scale·q_i·k_j − lse_i).
    let mut row_err = 0.0f64;
    for (i, qi) in q.chunks(d).enumerate() {
        let ak: Vec<f64> = k
            .chunks(d)
            .map(|kj| (scale * dot(qi, kj) - lse[i]).exp())
            .collect();
        row_err = row_err
            .max((r::sum(ak.iter().copied()) - 1.0).abs())
            .max(rel_err(&ak, &a[i]));
    }
    let e = rel_err(&o, &or);
    Claim::new(
        "001 §4.4.3 (4.4.23), (4.4.24)",
        "A_ij = softmax_j(q_iᵀk_j/√d_k) (rows sum to 1), o_i = Σ_j A_ij v_j",
        "attention_core::attention (output and lse; weights rebuilt as exp(q·k/√d − lse)) vs the \
         f64 reference, seeded (t = 5, s = 7, d_k = 4, dv = 3)",
        "—",
        format!(
            "weights: max |row sum − 1| / rel. err vs f64 {}; o rel. err {}",
            tiny(row_err),
            tiny(e)
        ),
        holds_if(row_err < 1e-12 && e < TOL_KERNEL, ""),
    )
}

fn unified_table() -> Claim {
    let (mut e_ce, mut e_att) = (0.0f64, 0.0f64);
    for seed in 1..=10 {
        let c = Nce::random(1300 + seed);
        let (l, ..) = c.kernel();
        let z = c.logits(&c.q, &c.kp, &c.kn);
        let (lce, _) = k_ce(&z, 0);
        // Attention with scale 1/τ over the keys [k⁺, k⁻…]: loss = lse − q·k⁺/τ.
        let mut keys = c.kp.clone();
        keys.extend(&c.kn);
        let vals = vec![0.0; keys.len() / c.d];
        let (_, lse) = k_attention(&c.q, &keys, &vals, 1, c.d, 1, Some(1.0 / c.tau));
        let latt = lse[0] - dot(&c.q, &c.kp) / c.tau;
        let lr = c.loss(&c.q, &c.kp, &c.kn);
        e_ce = e_ce.max((lce - lr).abs() / lr).max((l - lr).abs() / lr);
        e_att = e_att.max((latt - lr).abs() / lr);
    }
    Claim::new(
        "001 §4.4.3 (table)",
        "classification, InfoNCE and attention share one structure: softmax(score/scale), scale 1, τ or √d_k",
        "one InfoNCE loss computed three ways — loss_core::info_nce_single, loss_core::cross_entropy \
         of the logits s/τ, attention_core::attention's lse with scale 1/τ over [k⁺, k⁻] \
         (lse − qᵀk⁺/τ) — vs the f64 loss, 10 seeded cases",
        "—",
        format!(
            "max rel. err info_nce / cross_entropy {}, attention lse {}",
            tiny(e_ce),
            tiny(e_att)
        ),
        holds_if(e_ce < TOL_KERNEL && e_att < TOL_KERNEL, ""),
    )
}

fn one_softmax_gradient() -> Claim {
    let mut g = Rng(2121);
    let mut e = 0.0f64;
    for _ in 0..10 {
        let n = 6;
        let z = g.vec(n, -2.0, 2.0);
        let p_hat = k_softmax(&z);
        // A soft target p; upstream gradient of −Σ p log p̂ w.r.t. p̂ is −p/p̂.
        let p = g.probs(n);
        let dy: Vec<f64> = p.iter().zip(&p_hat).map(|(a, b)| -a / b).collect();
        let mut dx = vec![0.0; n];
        softmax_core::softmax_vjp(&p_hat, &dy, &mut dx).expect("equal lengths");
        let want: Vec<f64> = p_hat.iter().zip(&p).map(|(a, b)| a - b).collect();
        let mut gk = vec![0.0; n];
        cross_entropy_probs(
            Poly,
            &z,
            n,
            &p,
            &CrossEntropyOptions::new(),
            CrossEntropyOutputs::new().with_grad(&mut gk),
        )
        .expect("valid cross-entropy inputs");
        e = e.max(rel_err(&dx, &want)).max(rel_err(&gk, &want));
    }
    Claim::new(
        "001 §4.4.3",
        "one softmax gradient serves all: the cross-entropy gradient p̂ − p is softmax's backward pass applied to ∂L/∂p̂",
        "softmax_core::softmax_vjp(p̂, −p/p̂) and loss_core::cross_entropy_probs' gradient vs \
         p̂ − p in f64, 10 seeded rows of 6 with soft targets",
        "p̂ − p",
        format!("max rel. err {}", tiny(e)),
        holds_if(e < 1e-12, ""),
    )
}

// ---------------------------------------------------------------------------------------------
// §4.4.4

fn infonce_sequence() -> Claim {
    let (t, d, tau) = (6, 4, 0.3);
    let mut g = Rng(2222);
    let q = g.vec(t * d, -1.0, 1.0);
    let k = g.vec(t * d, -1.0, 1.0);
    let v = vec![0.0; t];
    let (_, lse) = k_attention(&q, &k, &v, 1, d, 1, Some(1.0 / tau));
    let (mut e_att, mut e_ce) = (0.0f64, 0.0f64);
    for i in 0..t {
        let j = (i * 5 + 2) % t; // an arbitrary "positive" position
        let qi = &q[i * d..(i + 1) * d];
        let z: Vec<f64> = k.chunks(d).map(|kj| dot(qi, kj) / tau).collect();
        let lr = -r::log_softmax(&z, 1.0, None)[j];
        let (lce, _) = k_ce(&z, j);
        e_att = e_att.max((lse[i] - z[j] - lr).abs() / lr);
        e_ce = e_ce.max((lce - lr).abs() / lr);
    }
    Claim::new(
        "001 §4.4.4 (4.4.25)",
        "L^(i) = −log(exp(q_iᵀk_j/τ)/Σ_j' exp(q_iᵀk_j'/τ)) over the positions of a sequence",
        "per position: loss_core::cross_entropy of q_iᵀK/τ and attention_core::attention's lse \
         (scale 1/τ) minus q_iᵀk_j/τ vs f64 −log_softmax, seeded (T = 6, d = 4, τ = 0.3)",
        "—",
        format!(
            "max rel. err cross_entropy {}, attention lse {}",
            tiny(e_ce),
            tiny(e_att)
        ),
        holds_if(e_ce < TOL_KERNEL && e_att < TOL_KERNEL, ""),
    )
}

fn attention_expectation() -> Claim {
    let (t, s, d, dv) = (6, 9, 4, 3);
    let mut g = Rng(2323);
    let mut inside = true;
    let mut e = 0.0f64;
    for _ in 0..10 {
        let (q, k, v) = g.qkv((t, s, d, dv), 2.0, 1.0);
        let (o, _) = k_attention(&q, &k, &v, 1, d, dv, None);
        let (or, _) = ref_attention(&q, &k, &v, d, dv, 1.0 / (d as f64).sqrt());
        e = e.max(rel_err(&o, &or));
        for oi in o.chunks(dv) {
            for c in 0..dv {
                let lo = v.chunks(dv).map(|vj| vj[c]).fold(f64::INFINITY, f64::min);
                let hi = v
                    .chunks(dv)
                    .map(|vj| vj[c])
                    .fold(f64::NEG_INFINITY, f64::max);
                inside &= oi[c] >= lo && oi[c] <= hi;
            }
        }
    }
    Claim::new(
        "001 §4.4.4 (4.4.26)",
        "o_i = Σ_j A_ij v_j = E_{j∼A_i·}[v_j] (a convex combination of the values)",
        "attention_core::attention vs the f64 expectation, 10 seeded cases (t = 6, s = 9, d = 4, \
         dv = 3), and every output coordinate within [min_j v_j, max_j v_j]",
        "—",
        format!(
            "max rel. err {}; inside the values' hull: {inside}",
            tiny(e)
        ),
        holds_if(e < TOL_KERNEL && inside, ""),
    )
}

/// Entropy of the marginal of a joint over `t` binary variables on the set `vars` (bit masks).
fn h_marg(p: &[f64], t: usize, vars: &[usize]) -> f64 {
    let mut m = vec![0.0; 1 << vars.len()];
    for (x, &px) in p.iter().enumerate().take(1 << t) {
        let idx = vars
            .iter()
            .enumerate()
            .fold(0, |acc, (b, &v)| acc | (((x >> v) & 1) << b));
        m[idx] += px;
    }
    k_entropy_of(&m)
}

/// Total correlation by the kernel: KL(P ‖ Π P_t), with the f64 reference.
fn total_corr(p: &[f64], t: usize) -> (f64, f64) {
    let margs: Vec<f64> = (0..t)
        .map(|v| {
            r::sum(
                p.iter()
                    .enumerate()
                    .filter(|(x, _)| (x >> v) & 1 == 1)
                    .map(|(_, &q)| q),
            )
        })
        .collect();
    let prod: Vec<f64> = (0..1usize << t)
        .map(|x| {
            (0..t)
                .map(|v| {
                    if (x >> v) & 1 == 1 {
                        margs[v]
                    } else {
                        1.0 - margs[v]
                    }
                })
                .product::<f64>()
                .ln()
        })
        .collect();
    let lp: Vec<f64> = p.iter().map(|v| v.ln()).collect();
    (
        softmax_core::kl_divergence(Poly, &lp, &prod).expect("equal lengths"),
        r::kl(&lp, &prod),
    )
}

fn total_correlation() -> Claim {
    let mut g = Rng(2424);
    let t = 3;
    let (mut e, mut e_ref) = (0.0f64, 0.0f64);
    for _ in 0..10 {
        let p = joint(&mut g, 1, 8, 1.5);
        let (tc, tc_ref) = total_corr(&p, t);
        let all: Vec<usize> = (0..t).collect();
        let hs = r::sum((0..t).map(|v| h_marg(&p, t, &[v]))) - h_marg(&p, t, &all);
        e = e.max((tc - hs).abs());
        e_ref = e_ref.max((tc_ref - hs).abs());
    }
    Claim::new(
        "001 §4.4.4 (4.4.27)",
        "D_KL(P(x_1:T) ‖ Π_t P(x_t)) = Σ_t H(x_t) − H(x_1:T)",
        "softmax_core::kl_divergence of the log-probabilities (beside reference::kl) vs entropies \
         from softmax_core::entropy, 10 seeded joints of T = 3 binary variables",
        "—",
        format!("max abs. diff. kernel {}, f64 ref {}", tiny(e), tiny(e_ref)),
        holds_if(e < 1e-12 && e_ref < 1e-12, ""),
    )
}

fn total_correlation_sum_mi() -> Claim {
    let mut g = Rng(2525);
    let t = 3;
    let (mut min_rel, mut e_chain) = (f64::INFINITY, 0.0f64);
    let mut shown = (0.0, 0.0);
    for case in 0..10 {
        let p = joint(&mut g, 1, 8, 1.5);
        let (tc, _) = total_corr(&p, t);
        let all: Vec<usize> = (0..t).collect();
        let h_all = h_marg(&p, t, &all);
        let sum_mi = r::sum((0..t).map(|v| {
            let rest: Vec<usize> = (0..t).filter(|&u| u != v).collect();
            h_marg(&p, t, &[v]) + h_marg(&p, t, &rest) - h_all
        }));
        // Chain rule: Σ_{t≥2} I(x_t; x_<t).
        let chain = r::sum((1..t).map(|v| {
            let before: Vec<usize> = (0..v).collect();
            let upto: Vec<usize> = (0..=v).collect();
            h_marg(&p, t, &[v]) + h_marg(&p, t, &before) - h_marg(&p, t, &upto)
        }));
        min_rel = min_rel.min((sum_mi - tc).abs() / tc);
        e_chain = e_chain.max((chain - tc).abs());
        if case == 0 {
            shown = (tc, sum_mi);
        }
    }
    // T = 2: Σ_t I(x_t; x_−t) = 2·I(x1; x2) while the KL is I(x1; x2).
    Claim::new(
        "001 §4.4.4 (4.4.27)",
        "Σ_t H(x_t) − H(x_1:T) = Σ_t I(x_t; x_−t)",
        "entropies from softmax_core::entropy, KL from softmax_core::kl_divergence, 10 seeded \
         joints of T = 3 binary variables; the corrected (chain-rule) form checked the same way \
         (for T = 2 the chapter's sum is 2·I(x1;x2), twice the KL)",
        "= Σ_t I(x_t; x_−t)",
        format!(
            "case 0: KL {} vs Σ_t I(x_t;x_−t) {}; min rel. diff. {}; chain rule max abs. diff. {}",
            sci(shown.0, 3),
            sci(shown.1, 3),
            sci(min_rel, 3),
            tiny(e_chain)
        ),
        wrong_if(
            min_rel > 0.05 && e_chain < 1e-12,
            "Σ_t H(x_t) − H(x_1:T) = Σ_{t=2}^T I(x_t; x_<t) (chain rule); \
             Σ_t I(x_t; x_−t) over-counts (it is 2·I(x1;x2) for T = 2)",
        ),
    )
}

fn shuffle_product() -> Claim {
    // x1 = x2, uniform bit: P(00) = P(11) = 1/2 (index = x1 + 2·x2).
    let p = [0.5, 0.0, 0.0, 0.5];
    // Shuffling the two positions: (1/2)(P(x1,x2) + P(x2,x1)).
    let shuf: Vec<f64> = (0..4)
        .map(|x| 0.5 * (p[x] + p[((x & 1) << 1) | (x >> 1)]))
        .collect();
    let prod = [0.25; 4];
    let ls: Vec<f64> = shuf.iter().map(|v| v.ln()).collect();
    let lq: Vec<f64> = prod.iter().map(|v: &f64| v.ln()).collect();
    let kl = softmax_core::kl_divergence(Poly, &ls, &lq).expect("equal lengths");
    let kl_ref = r::kl(&ls, &lq);
    Claim::new(
        "001 §4.4.4",
        "randomly shuffling the order of a sequence gives the product of marginals Π_t P(x_t)",
        "counter-example: T = 2, x1 = x2 a fair bit; the shuffled law (1/2)(P(x1,x2) + P(x2,x1)) vs \
         Π P(x_t), KL by softmax_core::kl_divergence beside reference::kl (f64)",
        "shuffled = Π P(x_t)",
        format!(
            "shuffled P(x1≠x2) = {}; KL(shuffled ‖ Π P) kernel {}, f64 {} (= ln 2)",
            sci(shuf[1] + shuf[2], 3),
            sci(kl, 3),
            sci(kl_ref, 3)
        ),
        wrong_if(
            (kl - std::f64::consts::LN_2).abs() < 1e-12,
            "Π_t P(x_t) is the law with each position drawn independently (e.g. \
             from different sequences); shuffling one sequence gives \
             (1/T!)·Σ_π P(x_π(1…T)), which keeps the dependence",
        ),
    )
}

fn infinite_negatives() -> Claim {
    let t = 16;
    let cap = mutual_information_lower_bound(Poly, 0.0f64, t).expect("t > 0");
    Claim::new(
        "001 §4.4.4",
        "attention's soft contrast is an InfoNCE with infinitely many negatives (all other positions take part)",
        "count: a query contrasts T keys, i.e. T − 1 negatives; the InfoNCE bound over T \
         candidates is capped at ln T (loss_core::mutual_information_lower_bound at loss 0)",
        "∞ negatives",
        format!("T − 1 = {} negatives for T = {t}; bound ceiling ln T = {}", t - 1, sci(cap, 3)),
        Verdict::NotCheckable {
            why: "an analogy (the chapter quotes 'infinitely many negatives'); taken literally it \
                  is wrong: all T positions take part, T − 1 negatives, finite, and as an InfoNCE \
                  its MI bound is capped at ln T"
                .into(),
        },
    )
}

fn autoencoder_mi() -> Claim {
    Claim::new(
        "001 §4.4.4",
        "training an attention autoencoder on reconstruction tends to maximise the MI between each position and the others",
        "—",
        "—",
        "—",
        Verdict::NotCheckable {
            why: "a claim about training dynamics of an unspecified model; needs training runs \
                  and data"
                .into(),
        },
    )
}

fn multi_head() -> Claim {
    let (t, dm, h, dk, dv, dout) = (4, 6, 2, 3, 2, 5);
    let mut g = Rng(2626);
    let x_owned = g.vec(t * dm, -1.0, 1.0);
    let x: &[f64] = &x_owned;
    let proj = |g: &mut Rng, cols: usize| g.vec(h * dm * cols, -0.8, 0.8);
    let (wq, wk, wv) = (proj(&mut g, dk), proj(&mut g, dk), proj(&mut g, dv));
    let wo_owned = g.vec(h * dv * dout, -0.8, 0.8);
    let wo: &[f64] = &wo_owned;
    // X·W^(h), head-major.
    let mul = |w: &[f64], cols: usize| -> Vec<f64> {
        (0..h)
            .flat_map(|hh| {
                let w = &w[hh * dm * cols..(hh + 1) * dm * cols];
                (0..t).flat_map(move |i| {
                    (0..cols).map(move |c| r::sum((0..dm).map(|a| x[i * dm + a] * w[a * cols + c])))
                })
            })
            .collect()
    };
    let (q, k, v) = (mul(&wq, dk), mul(&wk, dk), mul(&wv, dv));
    let (o_heads, _) = k_attention(&q, &k, &v, h, dk, dv, None);
    let mut o_ref_heads = Vec::new();
    for hh in 0..h {
        let (o, _) = ref_attention(
            &q[hh * t * dk..(hh + 1) * t * dk],
            &k[hh * t * dk..(hh + 1) * t * dk],
            &v[hh * t * dv..(hh + 1) * t * dv],
            dk,
            dv,
            1.0 / (dk as f64).sqrt(),
        );
        o_ref_heads.extend(o);
    }
    // Concat(O^(1), …, O^(h))·W_O.
    let project = |oh: &[f64]| -> Vec<f64> {
        (0..t)
            .flat_map(|i| {
                (0..dout).map(move |c| {
                    r::sum((0..h).flat_map(|hh| {
                        (0..dv).map(move |a| {
                            oh[hh * t * dv + i * dv + a] * wo[(hh * dv + a) * dout + c]
                        })
                    }))
                })
            })
            .collect()
    };
    let (o, o_ref) = (project(&o_heads), project(&o_ref_heads));
    let e = rel_err(&o, &o_ref);
    Claim::new(
        "001 §4.4.4 (4.4.28)–(4.4.30)",
        "multi-head attention: Q^(h) = XW_Q^(h) etc., O^(h) = softmax(Q^(h)K^(h)ᵀ/√d_k^(h))V^(h), O = Concat(O^(h))·W_O",
        "attention_core::attention with 2 heads (default scale 1/√d_k) on the projected X, then \
         concat·W_O, vs the same in f64 with reference::softmax; seeded (T = 4, d_model = 6, \
         d_k = 3, d_v = 2, 5 outputs)",
        "—",
        format!("O[0] = {}; max rel. err {}", sci(o[0], 3), tiny(e)),
        holds_if(e < TOL_KERNEL, ""),
    )
}

fn heads_specialise() -> Claim {
    Claim::new(
        "001 §4.4.4",
        "different heads learn syntax, semantics and positional proximity; each head acts as a different negative set",
        "—",
        "—",
        "—",
        Verdict::NotCheckable {
            why: "an empirical claim about trained models (head specialisation); needs trained \
                  weights and data"
                .into(),
        },
    )
}

fn lm_is_infonce() -> Claim {
    let (vocab, dh) = (7, 4);
    let mut g = Rng(2727);
    let (mut e1, mut e2) = (0.0f64, 0.0f64);
    for case in 0..10 {
        let w = g.vec(vocab * dh, -1.0, 1.0);
        let ht = g.vec(dh, -1.5, 1.5);
        let target = case % vocab;
        let z: Vec<f64> = w.chunks(dh).map(|wr| dot(wr, &ht)).collect();
        let (lce, _) = k_ce(&z, target);
        let kp = w[target * dh..(target + 1) * dh].to_vec();
        let kn: Vec<f64> = w
            .chunks(dh)
            .enumerate()
            .filter(|(i, _)| *i != target)
            .flat_map(|(_, r)| r.to_vec())
            .collect();
        let c = Nce {
            d: dh,
            tau: 1.0,
            q: ht.clone(),
            kp,
            kn,
        };
        let (l, ..) = c.kernel();
        let lr = -r::log_softmax(&z, 1.0, None)[target];
        e1 = e1.max((lce - lr).abs() / lr);
        e2 = e2.max((l - lr).abs() / lr);
    }
    Claim::new(
        "001 §4.4.4 (4.4.31), (4.4.32)",
        "next-token (and masked-token) prediction softmax(W h_t) is an InfoNCE: query h_t, keys the rows of W, positive the true token, τ = 1",
        "loss_core::cross_entropy of W·h_t vs loss_core::info_nce_single(q = h_t, k⁺ = W[target], \
         k⁻ = the other rows, τ = 1) vs f64 −log_softmax, 10 seeded cases (vocabulary 7, width 4)",
        "—",
        format!(
            "max rel. err cross_entropy {}, info_nce_single {}",
            tiny(e1),
            tiny(e2)
        ),
        holds_if(e1 < TOL_KERNEL && e2 < TOL_KERNEL, ""),
    )
}

// ---------------------------------------------------------------------------------------------
// §4.4.5

fn ce_kl() -> Claim {
    let mut g = Rng(2828);
    let mut e = 0.0f64;
    for _ in 0..10 {
        let n = 6;
        let z = g.vec(n, -2.0, 2.0);
        let p = g.probs(n);
        let ce = cross_entropy_probs(
            Poly,
            &z,
            n,
            &p,
            &CrossEntropyOptions::new(),
            CrossEntropyOutputs::new(),
        )
        .expect("valid cross-entropy inputs");
        let lp: Vec<f64> = p.iter().map(|v| v.ln()).collect();
        let kl = softmax_core::kl_divergence(Poly, &lp, &z).expect("equal lengths");
        let kl_ref = r::kl(&lp, &z);
        let h = ref_entropy_of(&p);
        e = e
            .max((ce - (h + kl)).abs() / ce)
            .max((ce - (h + kl_ref)).abs() / ce);
    }
    Claim::new(
        "001 §4.4.5",
        "the softmax–cross-entropy pair is a differentiable approximation of the KL divergence",
        "loss_core::cross_entropy_probs vs H(p) + softmax_core::kl_divergence(p ‖ softmax(z)) \
         (beside reference::kl), 10 seeded rows of 6 with soft targets; it is exact, not an \
         approximation: CE = H(p) + KL(p ‖ p̂), H(p) constant in the logits (same gradient)",
        "CE ≈ KL",
        format!("max rel. diff. CE vs H(p) + KL {}", tiny(e)),
        holds_if(e < 1e-12, ""),
    )
}

fn dot_cosine() -> Claim {
    let mut g = Rng(2929);
    let mut e = 0.0f64;
    for _ in 0..20 {
        let a = g.vec(5, -1.0, 1.0);
        let b = g.vec(5, -1.0, 1.0);
        let (na, nb) = (norm(&a), norm(&b));
        let cos = dot(&a, &b) / (na * nb);
        let au: Vec<f64> = a.iter().map(|v| v / na).collect();
        let bu: Vec<f64> = b.iter().map(|v| v / nb).collect();
        e = e
            .max((dot(&a, &b) - na * nb * cos).abs())
            .max((dot(&au, &bu) - cos).abs());
    }
    Claim::new(
        "001 §4.4.5",
        "the dot product is the unnormalised cosine similarity: qᵀk = ‖q‖‖k‖cos θ, = cos θ for unit vectors",
        "f64, 20 seeded pairs of width 5",
        "—",
        format!("max abs. diff. {}", tiny(e)),
        holds_if(e < 1e-14, ""),
    )
}

fn nll_principle() -> Claim {
    let mut g = Rng(3030);
    let sigma = 0.7f64;
    let (mut spread, mut e_ce) = (0.0f64, 0.0f64);
    let y = 0.4;
    let consts: Vec<f64> = (0..20)
        .map(|_| {
            let yh = g.uniform(-2.0, 2.0);
            let mut gm = [0.0];
            let mse = mse_loss(
                Poly,
                &[yh],
                &[y],
                &MseOptions::new(),
                Outputs::new().with_grad(&mut gm),
            )
            .expect("valid MSE inputs");
            let nll = 0.5 * ((y - yh) / sigma).powi(2)
                + sigma.ln()
                + 0.5 * (2.0 * std::f64::consts::PI).ln();
            nll - mse / (2.0 * sigma * sigma)
        })
        .collect();
    for c in &consts {
        spread = spread.max((c - consts[0]).abs());
    }
    for case in 0..10 {
        let z = g.vec(5, -2.0, 2.0);
        let t = case % 5;
        let (l, _) = k_ce(&z, t);
        let nll = -k_softmax(&z)[t].ln();
        e_ce = e_ce.max((l - nll).abs() / l);
    }
    Claim::new(
        "001 §4.4.5",
        "MSE is the negative log-likelihood under a Gaussian model, cross-entropy under a categorical (multinomial) model",
        "Gaussian NLL −ln N(y; ŷ, σ²) minus loss_core::mse_loss/(2σ²) over 20 seeded ŷ (σ = 0.7) \
         must be a constant (ln σ + ln(2π)/2); loss_core::cross_entropy vs −ln softmax(z)_t \
         (softmax_core::softmax), 10 seeded rows",
        "—",
        format!(
            "spread of NLL − MSE/(2σ²) {} (constant {}); CE vs categorical NLL max rel. err {}",
            tiny(spread),
            sci(consts[0], 3),
            tiny(e_ce)
        ),
        holds_if(spread < 1e-14 && e_ce < 1e-12, ""),
    )
}
