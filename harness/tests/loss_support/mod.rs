//! Shared by loss-core's test files (`harness/tests/loss_*.rs`, `conform_loss.rs`,
//! `golden_loss.rs`): a naive f64 reference of every loss, written from the formulas of PyTorch,
//! torchvision, `info-nce-pytorch` and the SigLIP paper (nothing from the workspace is used), and
//! central finite differences.
#![allow(dead_code)]

/// PyTorch's reduction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Red {
    None,
    Sum,
    Mean,
    BatchMean,
}

impl Red {
    pub fn name(self) -> &'static str {
        match self {
            Red::None => "none",
            Red::Sum => "sum",
            Red::Mean => "mean",
            Red::BatchMean => "batchmean",
        }
    }
    pub fn lib(self) -> loss_core::Reduction {
        match self {
            Red::None => loss_core::Reduction::None,
            Red::Sum => loss_core::Reduction::Sum,
            Red::Mean => loss_core::Reduction::Mean,
            Red::BatchMean => loss_core::Reduction::BatchMean,
        }
    }
}

/// Exactly summed (Neumaier) — the reference's sums should not be the weak point.
pub fn fsum(v: impl IntoIterator<Item = f64>) -> f64 {
    let (mut s, mut c) = (0.0f64, 0.0f64);
    for x in v {
        let t = s + x;
        if s.abs() >= x.abs() {
            c += (s - t) + x;
        } else {
            c += (x - t) + s;
        }
        s = t;
    }
    s + c
}

/// log-sum-exp of a row (`-inf` for an all-`-inf` row).
pub fn lse(z: &[f64]) -> f64 {
    let m = z.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    if m.is_infinite() {
        return m;
    }
    m + fsum(z.iter().map(|&v| (v - m).exp())).ln()
}

pub fn log_softmax(z: &[f64]) -> Vec<f64> {
    let l = lse(z);
    z.iter().map(|&v| v - l).collect()
}

pub fn softmax(z: &[f64]) -> Vec<f64> {
    let l = lse(z);
    z.iter().map(|&v| (v - l).exp()).collect()
}

pub fn softcap(z: f64, c: f64) -> f64 {
    c * (z / c).tanh()
}

/// The options of `torch.nn.functional.cross_entropy` and the two extras.
#[derive(Clone, Debug)]
pub struct Ce {
    pub weight: Option<Vec<f64>>,
    pub ignore: i64,
    pub eps: f64,
    pub red: Red,
    pub cap: Option<f64>,
    pub zl: f64,
}

impl Default for Ce {
    fn default() -> Self {
        Ce {
            weight: None,
            ignore: -100,
            eps: 0.0,
            red: Red::Mean,
            cap: None,
            zl: 0.0,
        }
    }
}

impl Ce {
    fn w(&self, c: usize) -> f64 {
        self.weight.as_ref().map_or(1.0, |w| w[c])
    }
    fn z(&self, row: &[f64]) -> Vec<f64> {
        match self.cap {
            Some(c) => row.iter().map(|&v| softcap(v, c)).collect(),
            None => row.to_vec(),
        }
    }
}

/// `(reduced loss, per-sample losses)` of cross-entropy with class-index targets, following
/// ATen's `cross_entropy_loss_label_smoothing` (nll part reduced as `nll_loss`, smoothing part
/// divided by the same weight sum) plus z-loss per non-ignored sample (mean: divided by their
/// count).
pub fn cross_entropy(x: &[f64], c: usize, t: &[i64], o: &Ce) -> (f64, Vec<f64>) {
    let mut per = vec![0.0; t.len()];
    let (mut nll, mut smooth, mut zsum, mut wsum, mut count) = (vec![], vec![], vec![], vec![], 0);
    for (n, row) in x.chunks(c).enumerate() {
        if t[n] == o.ignore {
            continue;
        }
        let z = o.z(row);
        let lp = log_softmax(&z);
        let y = t[n] as usize;
        let wn = o.w(y);
        let l_nll = -wn * lp[y];
        let l_s = -fsum((0..c).map(|k| o.w(k) * lp[k]));
        let l = lse(&z);
        let l_z = if o.zl > 0.0 { o.zl * l * l } else { 0.0 };
        let mut v = (1.0 - o.eps) * l_nll + l_z;
        if o.eps > 0.0 {
            v += o.eps / c as f64 * l_s;
        }
        per[n] = v;
        nll.push(l_nll);
        smooth.push(l_s);
        zsum.push(l_z);
        wsum.push(wn);
        count += 1;
    }
    let total = match o.red {
        Red::Mean => {
            let ws = fsum(wsum);
            let mut v = (1.0 - o.eps) * fsum(nll.clone()) / ws;
            if o.eps > 0.0 {
                v += o.eps / c as f64 * fsum(smooth) / ws;
            }
            if o.zl > 0.0 {
                v += fsum(zsum) / count as f64;
            }
            v
        }
        _ => fsum(per.clone()),
    };
    (total, per)
}

/// Cross-entropy with probability targets (PyTorch: smoothed target, weighted, mean over B).
pub fn cross_entropy_probs(x: &[f64], c: usize, tp: &[f64], o: &Ce) -> (f64, Vec<f64>) {
    let b = x.len() / c;
    let mut per = vec![0.0; b];
    for (n, row) in x.chunks(c).enumerate() {
        let z = o.z(row);
        let lp = log_softmax(&z);
        let l = lse(&z);
        let ce = -fsum((0..c).map(|k| {
            let t = tp[n * c + k] * (1.0 - o.eps) + o.eps / c as f64;
            o.w(k) * t * lp[k]
        }));
        per[n] = ce + if o.zl > 0.0 { o.zl * l * l } else { 0.0 };
    }
    let total = match o.red {
        Red::Mean => fsum(per.clone()) / b as f64,
        _ => fsum(per.clone()),
    };
    (total, per)
}

pub fn nll(
    x: &[f64],
    c: usize,
    t: &[i64],
    w: Option<&[f64]>,
    ignore: i64,
    red: Red,
) -> (f64, Vec<f64>) {
    let mut per = vec![0.0; t.len()];
    let mut ws = vec![];
    for (n, row) in x.chunks(c).enumerate() {
        if t[n] == ignore {
            continue;
        }
        let y = t[n] as usize;
        let wy = w.map_or(1.0, |w| w[y]);
        per[n] = -wy * row[y];
        ws.push(wy);
    }
    let s = fsum(per.clone());
    (if red == Red::Mean { s / fsum(ws) } else { s }, per)
}

fn reduce(per: &[f64], red: Red, batch: usize) -> f64 {
    let s = fsum(per.iter().cloned());
    match red {
        Red::Mean => s / per.len() as f64,
        Red::BatchMean => s / batch as f64,
        _ => s,
    }
}

fn softplus(x: f64) -> f64 {
    x.max(0.0) + (-x.abs()).exp().ln_1p()
}

fn sigmoid(x: f64) -> f64 {
    if x >= 0.0 {
        1.0 / (1.0 + (-x).exp())
    } else {
        x.exp() / (1.0 + x.exp())
    }
}

/// PyTorch: `(1 − y)·x − (1 + (p_w − 1)·y)·log σ(x)`, times the weight.
pub fn bce(
    x: &[f64],
    y: &[f64],
    c: usize,
    w: Option<&[f64]>,
    pw: Option<&[f64]>,
    red: Red,
) -> (f64, Vec<f64>) {
    let per: Vec<f64> = (0..x.len())
        .map(|i| {
            let p = pw.map_or(1.0, |p| p[i % c]);
            let lw = 1.0 + (p - 1.0) * y[i];
            let l = (1.0 - y[i]) * x[i] + lw * softplus(-x[i]);
            l * w.map_or(1.0, |w| w[i])
        })
        .collect();
    (reduce(&per, red, 0), per)
}

/// torchvision's sigmoid_focal_loss, literally.
pub fn sigmoid_focal(x: &[f64], y: &[f64], alpha: f64, gamma: f64, red: Red) -> (f64, Vec<f64>) {
    let per: Vec<f64> = (0..x.len())
        .map(|i| {
            let p = sigmoid(x[i]);
            let ce = (1.0 - y[i]) * x[i] + softplus(-x[i]);
            let pt = p * y[i] + (1.0 - p) * (1.0 - y[i]);
            let mut l = ce * (1.0 - pt).powf(gamma);
            if alpha >= 0.0 {
                l *= alpha * y[i] + (1.0 - alpha) * (1.0 - y[i]);
            }
            l
        })
        .collect();
    (reduce(&per, red, 0), per)
}

pub fn kl(x: &[f64], t: &[f64], log_target: bool, batch: usize, red: Red) -> (f64, Vec<f64>) {
    let per: Vec<f64> = (0..x.len())
        .map(|i| {
            if log_target {
                t[i].exp() * (t[i] - x[i])
            } else if t[i] == 0.0 {
                -t[i] * x[i]
            } else {
                t[i] * (t[i].ln() - x[i])
            }
        })
        .collect();
    (reduce(&per, red, batch), per)
}

pub fn mse(x: &[f64], y: &[f64], red: Red) -> (f64, Vec<f64>) {
    let per: Vec<f64> = x.iter().zip(y).map(|(a, b)| (a - b) * (a - b)).collect();
    (reduce(&per, red, 0), per)
}

pub fn softmax_focal(
    x: &[f64],
    c: usize,
    t: &[i64],
    gamma: f64,
    alpha: Option<&[f64]>,
    ignore: i64,
    red: Red,
) -> (f64, Vec<f64>) {
    let mut per = vec![0.0; t.len()];
    let mut count = 0;
    for (n, row) in x.chunks(c).enumerate() {
        if t[n] == ignore {
            continue;
        }
        let y = t[n] as usize;
        let lp = log_softmax(row)[y];
        let p = lp.exp();
        per[n] = -alpha.map_or(1.0, |a| a[y]) * (1.0 - p).powf(gamma) * lp;
        count += 1;
    }
    let s = fsum(per.clone());
    (
        if red == Red::Mean {
            s / count as f64
        } else {
            s
        },
        per,
    )
}

pub fn normalize(v: &[f64], d: usize) -> Vec<f64> {
    v.chunks(d)
        .flat_map(|r| {
            let n = fsum(r.iter().map(|x| x * x)).sqrt().max(1e-12);
            r.iter().map(move |x| x / n).collect::<Vec<_>>()
        })
        .collect()
}

pub fn dot(a: &[f64], b: &[f64]) -> f64 {
    fsum(a.iter().zip(b).map(|(x, y)| x * y))
}

/// Negative keys, as in `info-nce-pytorch`.
#[derive(Clone, Debug)]
pub enum Neg {
    InBatch,
    Unpaired(Vec<f64>, usize),
    Paired(Vec<f64>, usize),
}

/// `info-nce-pytorch`'s `info_nce`, plus the symmetric (CLIP) form: `(total, per-query)`.
#[allow(clippy::too_many_arguments)] // the reference mirrors the library call's parameters
pub fn info_nce(
    q: &[f64],
    k: &[f64],
    d: usize,
    neg: &Neg,
    tau: f64,
    normalize_: bool,
    red: Red,
    symmetric: bool,
) -> (f64, Vec<f64>) {
    let n = q.len() / d;
    let nz = |v: &[f64]| {
        if normalize_ {
            normalize(v, d)
        } else {
            v.to_vec()
        }
    };
    let (qn, kn) = (nz(q), nz(k));
    let dir = |a: &[f64], b: &[f64]| -> Vec<f64> {
        (0..n)
            .map(|i| {
                let ai = &a[i * d..(i + 1) * d];
                let (logits, label): (Vec<f64>, usize) = match neg {
                    Neg::InBatch => (
                        (0..n)
                            .map(|j| dot(ai, &b[j * d..(j + 1) * d]) / tau)
                            .collect(),
                        i,
                    ),
                    Neg::Unpaired(nk, m) => {
                        let nk = nz(nk);
                        let mut l = vec![dot(ai, &b[i * d..(i + 1) * d]) / tau];
                        l.extend((0..*m).map(|j| dot(ai, &nk[j * d..(j + 1) * d]) / tau));
                        (l, 0)
                    }
                    Neg::Paired(nk, m) => {
                        let nk = nz(nk);
                        let mut l = vec![dot(ai, &b[i * d..(i + 1) * d]) / tau];
                        l.extend(
                            (0..*m)
                                .map(|j| dot(ai, &nk[(i * m + j) * d..(i * m + j + 1) * d]) / tau),
                        );
                        (l, 0)
                    }
                };
                -log_softmax(&logits)[label]
            })
            .collect()
    };
    let mut per = dir(&qn, &kn);
    if symmetric {
        let back = dir(&kn, &qn);
        for (p, b) in per.iter_mut().zip(back) {
            *p = (*p + b) / 2.0;
        }
    }
    let total = match red {
        Red::Mean => fsum(per.clone()) / n as f64,
        _ => fsum(per.clone()),
    };
    (total, per)
}

/// SimCLR's NT-Xent over 2N views: the mean over anchors of the cross-entropy against the other
/// 2N − 1 views, the partner as label.
pub fn nt_xent(z: &[f64], d: usize, tau: f64, normalize_: bool) -> f64 {
    let r = z.len() / d;
    let n = r / 2;
    let zn = if normalize_ {
        normalize(z, d)
    } else {
        z.to_vec()
    };
    let mut ls = vec![];
    for i in 0..r {
        let zi = &zn[i * d..(i + 1) * d];
        let partner = if i < n { i + n } else { i - n };
        let mut logits = vec![];
        let mut label = 0;
        for j in 0..r {
            if j == i {
                continue;
            }
            if j == partner {
                label = logits.len();
            }
            logits.push(dot(zi, &zn[j * d..(j + 1) * d]) / tau);
        }
        ls.push(-log_softmax(&logits)[label]);
    }
    fsum(ls) / r as f64
}

/// SigLIP: −(1/N) Σ_ij log σ(z_ij (e^t x̂_i·ŷ_j + b)).
pub fn siglip(x: &[f64], y: &[f64], d: usize, t: f64, b: f64, normalize_: bool) -> f64 {
    let n = x.len() / d;
    let (xn, yn) = if normalize_ {
        (normalize(x, d), normalize(y, d))
    } else {
        (x.to_vec(), y.to_vec())
    };
    let s = t.exp();
    let mut terms = vec![];
    for i in 0..n {
        for j in 0..n {
            let a = s * dot(&xn[i * d..(i + 1) * d], &yn[j * d..(j + 1) * d]) + b;
            let z = if i == j { 1.0 } else { -1.0 };
            terms.push(softplus(-z * a));
        }
    }
    fsum(terms) / n as f64
}

/// Central finite differences (fourth-order stencil) of `f` at `x`, step `h·max(1, |x_i|)`.
pub fn fd(f: impl Fn(&[f64]) -> f64, x: &[f64], h: f64) -> Vec<f64> {
    let mut g = vec![0.0; x.len()];
    let mut xp = x.to_vec();
    for i in 0..x.len() {
        let hi = h * x[i].abs().max(1.0);
        let at = |xp: &mut Vec<f64>, v: f64| {
            xp[i] = v;
            f(xp)
        };
        let f2 = at(&mut xp, x[i] + 2.0 * hi);
        let f1 = at(&mut xp, x[i] + hi);
        let m1 = at(&mut xp, x[i] - hi);
        let m2 = at(&mut xp, x[i] - 2.0 * hi);
        xp[i] = x[i];
        g[i] = (-f2 + 8.0 * f1 - 8.0 * m1 + m2) / (12.0 * hi);
    }
    g
}

/// `max|a − b| / max(max|b|, floor)`: the relative error of a gradient tensor.
pub fn rel_err(a: &[f64], b: &[f64], floor: f64) -> f64 {
    assert_eq!(a.len(), b.len());
    let num = a
        .iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f64::max);
    let den = b.iter().map(|y| y.abs()).fold(floor, f64::max);
    num / den
}

/// A small deterministic generator (SplitMix64) for test inputs.
pub struct Rng(pub u64);

impl Rng {
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    /// Uniform on [lo, hi).
    pub fn uniform(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * ((self.next_u64() >> 11) as f64 / (1u64 << 53) as f64)
    }
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }
    pub fn vec(&mut self, n: usize, lo: f64, hi: f64) -> Vec<f64> {
        (0..n).map(|_| self.uniform(lo, hi)).collect()
    }
    /// Values exactly representable in f32 (so f32 and f64 runs see the same inputs).
    pub fn vec32(&mut self, n: usize, lo: f64, hi: f64) -> Vec<f64> {
        (0..n).map(|_| self.uniform(lo, hi) as f32 as f64).collect()
    }
}
