//! Naive f64 references: the textbook formulas, written for clarity and independence from
//! softmax-core (no shared code, no compensated tricks beyond f64 itself). The tests compare the
//! kernels against these.
//!
//! Inputs are `f64` (f32 inputs widen exactly). The edge semantics are those of
//! `harness/CONFORMANCE.md`, spelled out here directly from the spec.

/// How a row looks once masking is applied.
enum RowKind {
    Nan,
    Empty,
    /// `k` entries are `+inf`.
    PosInf(usize),
    Finite,
}

fn kind(z: &[f64]) -> RowKind {
    if z.iter().any(|v| v.is_nan()) {
        RowKind::Nan
    } else if z.iter().all(|&v| v == f64::NEG_INFINITY) {
        RowKind::Empty
    } else {
        let k = z.iter().filter(|&&v| v == f64::INFINITY).count();
        if k > 0 {
            RowKind::PosInf(k)
        } else {
            RowKind::Finite
        }
    }
}

/// The row with masked entries replaced by `-inf` (whatever their value).
fn masked(x: &[f64], keep: Option<&[bool]>) -> Vec<f64> {
    let kept = |i: usize| keep.is_none_or(|k| k[i]);
    x.iter()
        .enumerate()
        .map(|(i, &v)| if kept(i) { v } else { f64::NEG_INFINITY })
        .collect()
}

/// `z_i = x_i / τ`, masked entries `-inf` (whatever their value). Computed in f64 from the
/// shifted form `(x − max)/τ` so no overflow occurs where the exact value does not.
fn shifted(x: &[f64], tau: f64, keep: Option<&[bool]>) -> (Vec<f64>, RowKind) {
    let z = masked(x, keep);
    let k = kind(&z);
    if !matches!(k, RowKind::Finite) {
        return (z, k);
    }
    let m = z.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    // x − m is exact in f64 for f32 inputs (and correctly rounded for f64 inputs).
    (z.iter().map(|&v| (v - m) / tau).collect(), k)
}

/// Naive sum with Neumaier compensation (f64 plain summation of 16M terms would drift by ~1e-9,
/// which is fine, but the compensation costs nothing here).
pub fn sum(v: impl IntoIterator<Item = f64>) -> f64 {
    let (mut s, mut c) = (0.0f64, 0.0f64);
    for x in v {
        let t = s + x;
        c += if s.abs() >= x.abs() {
            (s - t) + x
        } else {
            (x - t) + s
        };
        s = t;
    }
    s + c
}

/// `ln Σ e^d` for shifted values (max 0), as `ln_1p` of the sum without one of the maxima's 1s,
/// so a peaked row (`Σ e^d = 1 + 1e-25`) does not lose the tiny part to `1 + tiny = 1`.
fn ln_sum_exp_shifted(d: &[f64]) -> f64 {
    let k = d.iter().filter(|&&v| v == 0.0).count() as f64;
    let rest = sum(d.iter().filter(|&&v| v != 0.0).map(|&v| v.exp()));
    ((k - 1.0) + rest).ln_1p()
}

/// The limit distribution of a row with `k` entries at `+inf`: `1/k` each, 0 elsewhere.
fn pos_inf_limit(z: &[f64], k: usize) -> Vec<f64> {
    z.iter()
        .map(|&v| {
            if v == f64::INFINITY {
                1.0 / k as f64
            } else {
                0.0
            }
        })
        .collect()
}

/// softmax(x/τ) with a keep-mask.
pub fn softmax(x: &[f64], tau: f64, keep: Option<&[bool]>) -> Vec<f64> {
    let (d, k) = shifted(x, tau, keep);
    match k {
        RowKind::Nan => vec![f64::NAN; x.len()],
        RowKind::Empty => vec![0.0; x.len()],
        RowKind::PosInf(k) => pos_inf_limit(&d, k),
        RowKind::Finite => {
            let e: Vec<f64> = d.iter().map(|&v| v.exp()).collect();
            let s = sum(e.iter().copied());
            e.iter().map(|&v| v / s).collect()
        }
    }
}

/// log_softmax(x/τ) with a keep-mask.
pub fn log_softmax(x: &[f64], tau: f64, keep: Option<&[bool]>) -> Vec<f64> {
    let (d, k) = shifted(x, tau, keep);
    match k {
        RowKind::Nan => vec![f64::NAN; x.len()],
        RowKind::Empty => vec![f64::NEG_INFINITY; x.len()],
        RowKind::PosInf(k) => d
            .iter()
            .map(|&v| {
                if v == f64::INFINITY {
                    -(k as f64).ln()
                } else {
                    f64::NEG_INFINITY
                }
            })
            .collect(),
        RowKind::Finite => {
            let l = ln_sum_exp_shifted(&d);
            d.iter().map(|&v| v - l).collect()
        }
    }
}

/// logsumexp(x/τ) with a keep-mask.
pub fn logsumexp(x: &[f64], tau: f64, keep: Option<&[bool]>) -> f64 {
    let z = masked(x, keep);
    match kind(&z) {
        RowKind::Nan => f64::NAN,
        RowKind::Empty => f64::NEG_INFINITY,
        RowKind::PosInf(_) => f64::INFINITY,
        RowKind::Finite => {
            let m = z.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
            let d: Vec<f64> = z.iter().map(|&v| (v - m) / tau).collect();
            m / tau + ln_sum_exp_shifted(&d)
        }
    }
}

/// Shannon entropy (nats) of softmax(x/τ): −Σ p log p, using log p from [`log_softmax`] (so
/// peaked rows keep their digits).
pub fn entropy(x: &[f64], tau: f64, keep: Option<&[bool]>) -> f64 {
    let p = softmax(x, tau, keep);
    let lp = log_softmax(x, tau, keep);
    if p.iter().any(|v| v.is_nan()) {
        return f64::NAN;
    }
    -sum(p
        .iter()
        .zip(&lp)
        .map(|(&p, &l)| if p > 0.0 { p * l } else { 0.0 }))
}

/// KL(softmax(a) ‖ softmax(b)).
pub fn kl(a: &[f64], b: &[f64]) -> f64 {
    let (pa, la, lb) = (
        softmax(a, 1.0, None),
        log_softmax(a, 1.0, None),
        log_softmax(b, 1.0, None),
    );
    if pa.iter().chain(&la).chain(&lb).any(|v| v.is_nan()) {
        return f64::NAN;
    }
    sum(pa.iter().zip(la.iter().zip(&lb)).map(|(&p, (&la, &lb))| {
        if p == 0.0 && la == f64::NEG_INFINITY {
            0.0
        } else if lb == f64::NEG_INFINITY {
            f64::INFINITY
        } else {
            p * (la - lb)
        }
    }))
}

/// sparsemax(x/τ) by the sort-based algorithm of Martins & Astudillo (2016).
pub fn sparsemax(x: &[f64], tau: f64) -> Vec<f64> {
    let z: Vec<f64> = x.iter().map(|&v| v / tau).collect();
    match kind(&z) {
        RowKind::Nan => return vec![f64::NAN; x.len()],
        RowKind::Empty => return vec![0.0; x.len()],
        RowKind::PosInf(k) => return pos_inf_limit(&z, k),
        RowKind::Finite => {}
    }
    let mut s: Vec<f64> = z.iter().copied().filter(|v| v.is_finite()).collect();
    s.sort_by(|a, b| b.total_cmp(a));
    let (mut cum, mut thr) = (0.0, 0.0);
    for (k, &v) in s.iter().enumerate() {
        cum += v;
        let t = (cum - 1.0) / (k + 1) as f64;
        if v > t {
            thr = t;
        }
    }
    z.iter().map(|&v| (v - thr).max(0.0)).collect()
}
