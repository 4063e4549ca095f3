//! Helpers shared by the chapter modules: the seeded generator, f64 vector helpers, central
//! finite differences, a symmetric eigensolver, thin wrappers of the workspace kernels
//! (softmax-core rows, loss-core's cross-entropy, attention-core's f32 attention) with the naive
//! f64 attention beside, and two small table helpers.

use super::{holds_if, sci, Verdict};
use crate::reference as r;
use attention_core::{attention, Dims, Options, Output, Qkv};
use loss_core::{cross_entropy, CrossEntropyOptions, CrossEntropyOutputs};
use softmax_core::backend::Poly;

/// SplitMix64: a small deterministic generator (the same stream on every machine). The two
/// normal samplers ([`Rng::normal`], [`Rng::open_normal`]) are different streams; each chapter
/// keeps the one its table values were computed with.
pub(crate) struct Rng(pub(crate) u64);

impl Rng {
    /// The next 64-bit output.
    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `[0, 1)` (53 bits).
    pub(crate) fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Uniform in `(0, 1)`: the midpoints of the 2⁵³ cells.
    pub(crate) fn open_unit(&mut self) -> f64 {
        ((self.next_u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }

    /// Uniform in `[lo, hi)`.
    pub(crate) fn uniform(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * self.unit()
    }

    /// `n` draws of [`Rng::uniform`].
    pub(crate) fn vec(&mut self, n: usize, lo: f64, hi: f64) -> Vec<f64> {
        (0..n).map(|_| self.uniform(lo, hi)).collect()
    }

    /// Attention inputs: `Q` (`t × d`), then `K` (`s × d`), both uniform in `[−qk, qk)`, then
    /// `V` (`s × dv`) uniform in `[−v, v)`.
    pub(crate) fn qkv(
        &mut self,
        (t, s, d, dv): (usize, usize, usize, usize),
        qk: f64,
        v: f64,
    ) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
        let q = self.vec(t * d, -qk, qk);
        let k = self.vec(s * d, -qk, qk);
        (q, k, self.vec(s * dv, -v, v))
    }

    /// Uniform in `[lo, hi)`, rounded to f32 (so f32 and f64 kernels see the same inputs).
    pub(crate) fn uniform32(&mut self, lo: f64, hi: f64) -> f64 {
        f64::from(self.uniform(lo, hi) as f32)
    }

    /// `n` draws of [`Rng::uniform32`].
    pub(crate) fn vec32(&mut self, n: usize, lo: f64, hi: f64) -> Vec<f64> {
        (0..n).map(|_| self.uniform32(lo, hi)).collect()
    }

    /// An index in `0..n` (by modulo; the bias is irrelevant for the small `n` used here).
    pub(crate) fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }

    /// Standard normal (Box–Muller on `1 − unit` and `unit`, one value per call).
    pub(crate) fn normal(&mut self) -> f64 {
        let u1 = 1.0 - self.unit();
        let u2 = self.unit();
        (-2.0 * u1.ln()).sqrt() * (core::f64::consts::TAU * u2).cos()
    }

    /// `n` normal draws with standard deviation `sd`.
    pub(crate) fn normals(&mut self, n: usize, sd: f64) -> Vec<f64> {
        (0..n).map(|_| sd * self.normal()).collect()
    }

    /// Standard normal (Box–Muller on two [`Rng::open_unit`] draws, one value per call): a
    /// different stream from [`Rng::normal`].
    pub(crate) fn open_normal(&mut self) -> f64 {
        let (u, v) = (self.open_unit(), self.open_unit());
        (-2.0 * u.ln()).sqrt() * (core::f64::consts::TAU * v).cos()
    }

    /// `n` draws of [`Rng::open_normal`] with standard deviation `sd`.
    pub(crate) fn open_normals(&mut self, n: usize, sd: f64) -> Vec<f64> {
        (0..n).map(|_| sd * self.open_normal()).collect()
    }
}

/// `Verdict::Wrong` with `corrected` if `wrong` (the check refuted the claim), else
/// `Verdict::Holds`.
pub(crate) fn wrong_if(wrong: bool, corrected: &str) -> Verdict {
    holds_if(!wrong, corrected)
}

/// The values by [`sci`] with `d` significant digits, joined by `", "`.
pub(crate) fn sci_list(v: &[f64], d: usize) -> String {
    v.iter().map(|&x| sci(x, d)).collect::<Vec<_>>().join(", ")
}

/// `Σ a_i b_i`, summed with the reference's compensated [`r::sum`].
pub(crate) fn dot(a: &[f64], b: &[f64]) -> f64 {
    r::sum(a.iter().zip(b).map(|(x, y)| x * y))
}

/// The Euclidean norm, plainly summed.
pub(crate) fn norm2(x: &[f64]) -> f64 {
    x.iter().map(|v| v * v).sum::<f64>().sqrt()
}

/// `max |a_i − b_i|`.
pub(crate) fn max_abs_diff(a: &[f64], b: &[f64]) -> f64 {
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f64::max)
}

/// `max |a − b| / max |b|`, the denominator floored at `1e-300` (0 when `a = b`).
pub(crate) fn rel_err(a: &[f64], b: &[f64]) -> f64 {
    let den = b.iter().map(|y| y.abs()).fold(1e-300, f64::max);
    max_abs_diff(a, b) / den
}

/// Central finite differences of `f` at `x`, step `h`.
pub(crate) fn fd(f: impl Fn(&[f64]) -> f64, x: &[f64], h: f64) -> Vec<f64> {
    let mut xp = x.to_vec();
    (0..x.len())
        .map(|i| {
            xp[i] = x[i] + h;
            let a = f(&xp);
            xp[i] = x[i] - h;
            let b = f(&xp);
            xp[i] = x[i];
            (a - b) / (2.0 * h)
        })
        .collect()
}

/// The row narrowed to f32.
pub(crate) fn to32(v: &[f64]) -> Vec<f32> {
    v.iter().map(|&x| x as f32).collect()
}

/// The row widened to f64.
pub(crate) fn to64(v: &[f32]) -> Vec<f64> {
    v.iter().map(|&x| f64::from(x)).collect()
}

/// softmax-core's f64 softmax of a row.
pub(crate) fn k_softmax(x: &[f64]) -> Vec<f64> {
    let mut y = vec![0.0; x.len()];
    softmax_core::softmax(Poly, x, &mut y).expect("non-empty row");
    y
}

/// softmax-core's f32 softmax of a row (narrowed first), widened.
pub(crate) fn k_softmax32(x: &[f64]) -> Vec<f64> {
    let x = to32(x);
    let mut y = vec![0.0f32; x.len()];
    softmax_core::softmax(Poly, &x, &mut y).expect("non-empty row");
    to64(&y)
}

/// softmax-core's f64 log_softmax of a row.
pub(crate) fn k_log_softmax(x: &[f64]) -> Vec<f64> {
    let mut y = vec![0.0; x.len()];
    softmax_core::log_softmax(Poly, x, &mut y).expect("non-empty row");
    y
}

/// softmax-core's f64 softmax at temperature τ.
pub(crate) fn k_softmax_t(x: &[f64], tau: f64) -> Vec<f64> {
    let mut y = vec![0.0; x.len()];
    softmax_core::softmax_with_temperature(Poly, x, tau, &mut y).expect("valid row and τ");
    y
}

/// The identity `n × n`, row-major (as value rows, attention with `V = I` returns the weights).
pub(crate) fn eye(n: usize) -> Vec<f64> {
    (0..n * n)
        .map(|i| if i / n == i % n { 1.0 } else { 0.0 })
        .collect()
}

/// Eigen-decomposition of a symmetric `n × n` matrix (cyclic Jacobi): eigenvalues and the
/// eigenvectors as the columns of a row-major `n × n` matrix.
pub(crate) fn jacobi_eig(mut a: Vec<f64>, n: usize) -> (Vec<f64>, Vec<f64>) {
    let mut v = eye(n);
    for _ in 0..100 {
        let off: f64 = (0..n * n)
            .filter(|ij| ij / n != ij % n)
            .map(|ij| a[ij] * a[ij])
            .sum();
        if off < 1e-30 {
            break;
        }
        for p in 0..n {
            for q in p + 1..n {
                let apq = a[p * n + q];
                if apq.abs() < 1e-300 {
                    continue;
                }
                let theta = (a[q * n + q] - a[p * n + p]) / (2.0 * apq);
                let t = if theta == 0.0 {
                    1.0
                } else {
                    theta.signum() / (theta.abs() + (theta * theta + 1.0).sqrt())
                };
                let c = 1.0 / (t * t + 1.0).sqrt();
                let s = t * c;
                for k in 0..n {
                    let (akp, akq) = (a[k * n + p], a[k * n + q]);
                    a[k * n + p] = c * akp - s * akq;
                    a[k * n + q] = s * akp + c * akq;
                }
                for k in 0..n {
                    let (apk, aqk) = (a[p * n + k], a[q * n + k]);
                    a[p * n + k] = c * apk - s * aqk;
                    a[q * n + k] = s * apk + c * aqk;
                }
                for k in 0..n {
                    let (vkp, vkq) = (v[k * n + p], v[k * n + q]);
                    v[k * n + p] = c * vkp - s * vkq;
                    v[k * n + q] = s * vkp + c * vkq;
                }
            }
        }
    }
    ((0..n).map(|i| a[i * n + i]).collect(), v)
}

/// Naive f64 attention that materialises the scores: `q` is `t × d`, `k` is `s × d`, `v` is
/// `s × dv`; `allowed(i, j)` says whether query `i` may see key `j` (the mask adds `-inf`).
/// Returns (output `t × dv`, weights `t × s`).
pub(crate) fn attn_ref(
    q: &[f64],
    k: &[f64],
    v: &[f64],
    (t, s, d, dv): (usize, usize, usize, usize),
    allowed: &dyn Fn(usize, usize) -> bool,
) -> (Vec<f64>, Vec<f64>) {
    let scale = 1.0 / (d as f64).sqrt();
    let mut o = vec![0.0; t * dv];
    let mut p = vec![0.0; t * s];
    for i in 0..t {
        let row: Vec<f64> = (0..s)
            .map(|j| {
                let sc: f64 = (0..d).map(|m| q[i * d + m] * k[j * d + m]).sum();
                if allowed(i, j) {
                    sc * scale
                } else {
                    f64::NEG_INFINITY
                }
            })
            .collect();
        let pr = r::softmax(&row, 1.0, None);
        for j in 0..s {
            p[i * s + j] = pr[j];
            for c in 0..dv {
                o[i * dv + c] += pr[j] * v[j * dv + c];
            }
        }
    }
    (o, p)
}

/// f32 attention_core::attention of one head (`t × d`, `s × d`, `s × dv`), output `t × dv`.
pub(crate) fn attn_kernel(
    q: &[f64],
    k: &[f64],
    v: &[f64],
    (t, s, d, dv): (usize, usize, usize, usize),
    opts: &Options<'_, f32>,
) -> Vec<f64> {
    let (q, k, v) = (to32(q), to32(k), to32(v));
    let mut o = vec![0.0f32; t * dv];
    attention(
        Poly,
        &Dims::new(1, 1, t, s, d, dv),
        Qkv::new(&q, &k, &v),
        opts,
        Output::new(&mut o),
    )
    .expect("attention: valid dimensions");
    to64(&o)
}

/// loss-core's cross-entropy (one row, mean = the row's loss) and its gradient.
pub(crate) fn k_ce(z: &[f64], target: usize) -> (f64, Vec<f64>) {
    let mut g = vec![0.0; z.len()];
    let l = cross_entropy(
        Poly,
        z,
        z.len(),
        &[target as i64],
        &CrossEntropyOptions::new(),
        CrossEntropyOutputs::new().with_grad(&mut g),
    )
    .expect("valid cross-entropy inputs");
    (l, g)
}

/// The f64 reference cross-entropy `−Σ_i p_i·log softmax(z)_i` of probabilities `p` against
/// logits `z` (`reference::log_softmax`, compensated sum).
pub(crate) fn ce_probs_ref(p: &[f64], z: &[f64]) -> f64 {
    let lq = crate::reference::log_softmax(z, 1.0, None);
    -crate::reference::sum(p.iter().zip(&lq).map(|(p, l)| p * l))
}
