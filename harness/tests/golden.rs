//! Golden vectors: softmax-core against float64 references from independent libraries.
//!
//! The vectors live in `harness/golden/*.json`, written by `harness/golden/gen.py` (scipy,
//! mpmath, onnxruntime; see its README); this test needs no Python. Every case runs through the
//! batched API (`rows::*`) and, where the case fits them, the single-row, in-place, fixed-size
//! and online ([`LogSumExp`]) entry points, for f32 and f64 and every backend (`Poly`, `Libm`;
//! `MicroMath` for f32 with its own, looser, documented accuracy).
//!
//! # Tolerances
//!
//! Each one is derived from the accuracy softmax-core states for the function, plus the error of
//! the float64 reference itself (gen.py asserts each scipy value against a 60-digit mpmath value
//! within the allowance used here), and is computed per element. `u` is the unit roundoff of the
//! dtype (2⁻²⁴ for f32, 2⁻⁵³ for f64), `eps = 2u`, `d_i = (x_i − max)/τ`.
//!
//! * softmax: relative `2e-6` for outputs `>= 1e-30` (f32, stated), absolute `2e-6·1e-30` below.
//!   f64: the same algorithm, so the same multiple of the unit roundoff (2e-6 is 33.5 eps32, i.e.
//!   7.5e-15 in f64) plus the reference's own error, asserted `<= 5e-14` relative by gen.py
//!   (scipy rounds `d` and calls exp: about `u64·(|d| + 4)`): 5.4e-14 in all, under the 1e-13
//!   asked for; floor 1e-300. With τ ≠ 1 the stated extra `u·|d_i|` relative, per element.
//! * log_softmax: absolute `2·eps·(1 + |y|)` (stated) + `u·|d_i|` for τ ≠ 1; the reference adds
//!   `eps64·(1 + |y|)` (asserted by gen.py), so f64 is `3·eps·(1 + |y|)` in effect.
//! * logsumexp: `2 ULP + eps·|max|` (stated; `max` = the row maximum of `x/τ`) + `u·Σ p_j|d_j|` for
//!   τ ≠ 1 (the rounded `d_j` enter the sum weighted by `p_j`); reference `eps64·(1 + |y| + |max|)`.
//!   [`LogSumExp`] (pushed one by one / merged): its own `2 ULP + eps·|lse|`.
//! * entropy: relative `1e-5` (stated, f32) for `H >= 1e-30`; f64 the same multiple of eps
//!   (1.9e-14) + the reference's `1e-14` (gen.py uses scipy only where it agrees with mpmath to
//!   that, mpmath otherwise); for τ ≠ 1 `u·Σ p_i·|d_i − E_p d|·|d_i|` (first-order effect of the
//!   rounded `d_i` on `H`, since `∂H/∂d_i = −p_i (d_i − E_p d)`).
//! * KL: absolute `eps·(1 + Σ p_i|log p_i − log q_i|)` (stated) + the τ ≠ 1 rounding of both
//!   rows' `d`; reference `1e-14·(1 + Σ p_i|log p_i − log q_i|)`.
//! * softmax VJP (`y` from softmax-core, then `rows::softmax_vjp`): with `e_j` the softmax
//!   tolerance of `y_j`, `D = Σ p_j dy_j`, `A = Σ p_j |dy_j|`:
//!   `(e_i·p_i·|dy_i − D| + p_i·Σ_j e_j p_j |dy_j| + 4u·p_i·(A + |dy_i|))/τ + 3u·|dx_i|`.
//! * log_softmax VJP, from the logits (`rows::log_softmax_vjp_from_logits`, CONFORMANCE.md's
//!   semantics) and from the output `y` (`rows::log_softmax` then `log_softmax_vjp`; where its
//!   documented semantics differ, frozen `y = -inf` entries, the case carries
//!   `expected_from_output`): with `a_i` the log_softmax tolerance and `S = Σ dy` over live entries,
//!   `(p_i|S|·(a_i + exp error + 5e-14 + 2u) + 2u|dy_i|)/τ + 2u·|dx_i|`.
//! * sparsemax: absolute `3·eps·(1 + |d_i|)` (stated as "about eps·(1 + |x_i − max|)"; the
//!   derivation: `d_i` rounded `u|d_i|`, the threshold from support values `|d| <= 1` within
//!   `4u`, the final subtraction `u`) + `u·(|d_i| + 1)` for τ ≠ 1; reference `eps64·(1 + |d_i|)`.
//! * gumbel-softmax: the softmax tolerance, plus the logit error
//!   `e_j = u|x_j − m| + 3u(1 + |g_j|) + u|z_j|` (the shift `x − max` rounded, the crate's 1-ULP
//!   `ln` twice and, for τ > 1, `g/τ`, then `z = (x − m) + g` rounded) entering as
//!   `(e_i + Σ p_j e_j)/τ`. The noise uses
//!   the crate's own `ln` with every backend, so MicroMath needs no extra term here.
//! * temperature_for_entropy: `tol_H/|H'(τ*)| + 2 ULP(τ*)` (the bisection stops at adjacent
//!   floats, each side's computed `H` within `tol_H`).
//! * MicroMath (f32): from its documented `exp` relative error 2.4e-3 and `ln` absolute error
//!   7e-5: softmax `2·2.4e-3/(1 − 2.4e-3)` relative; log-domain results `+2.4e-3 + 7e-5`
//!   absolute; entropy `7e-5 + 2.4e-3·(1 + 2H)` absolute.
//! * Exact: every NaN, infinity and spec-given value of the edge-semantics cases (zeros, `1/k`,
//!   one-hot), hardmax, and results outside the dtype's range (which must be that infinity).
//!
//! `cargo test -p harness --test golden -- --nocapture` prints, per op, dtype and backend, the
//! largest observed error (relative, in ULP, and as a fraction of the tolerance), and
//! onnxruntime's float32 error on the same cases.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::str::FromStr;

use serde_json::Value;
use softmax_core::backend::{Backend, Libm, MicroMath, Poly};
use softmax_core::{array, rows, Error, Float, LogSumExp, Rows};

// ------------------------------------------------------------------------------------------------
// Element types and backends
// ------------------------------------------------------------------------------------------------

/// The reference's own allowances (asserted by gen.py against mpmath).
const REF_SOFTMAX_REL: f64 = 5e-14;
const REF_ENTROPY_REL: f64 = 1e-14;
const REF_KL: f64 = 1e-14;
const EPS64: f64 = f64::EPSILON;

/// MicroMath's documented accuracy (softmax-core `backend::MicroMath`).
const MM_EXP_REL: f64 = 2.4e-3;
const MM_LN_ABS: f64 = 7e-5;

trait Dt: Float + FromStr {
    const NAME: &'static str;
    /// Significand bits, implicit bit included.
    const MANT: i32;
    /// Exponent of the smallest normal number.
    const MIN_EXP: i32;
    /// softmax outputs at least this large are checked relatively.
    const FLOOR: f64;
    /// softmax-core's stated relative accuracy of a softmax output, in this type.
    const SOFTMAX_REL: f64;
    /// softmax-core's stated relative accuracy of entropy, in this type.
    const ENTROPY_REL: f64;
    /// Calls `r.run::<B>` for every backend that supports this type.
    fn each_backend<R: PerBackend<Self>>(r: &mut R);
}

trait PerBackend<F: Float> {
    fn run<B: Backend<F>>(&mut self, bk: Bk);
}

/// f32 figures scaled to f64 by the ratio of the epsilons (same algorithm, same rounding count).
const F32_TO_F64: f64 = EPS64 / f32::EPSILON as f64;

impl Dt for f32 {
    const NAME: &'static str = "f32";
    const MANT: i32 = 24;
    const MIN_EXP: i32 = -126;
    const FLOOR: f64 = 1e-30;
    const SOFTMAX_REL: f64 = 2e-6;
    const ENTROPY_REL: f64 = 1e-5;
    fn each_backend<R: PerBackend<Self>>(r: &mut R) {
        r.run::<Poly>(Bk::Poly);
        r.run::<Libm>(Bk::Libm);
        r.run::<MicroMath>(Bk::MicroMath);
    }
}

impl Dt for f64 {
    const NAME: &'static str = "f64";
    const MANT: i32 = 53;
    const MIN_EXP: i32 = -1022;
    const FLOOR: f64 = 1e-300;
    const SOFTMAX_REL: f64 = 2e-6 * F32_TO_F64;
    const ENTROPY_REL: f64 = 1e-5 * F32_TO_F64;
    fn each_backend<R: PerBackend<Self>>(r: &mut R) {
        r.run::<Poly>(Bk::Poly);
        r.run::<Libm>(Bk::Libm);
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Bk {
    Poly,
    Libm,
    MicroMath,
    /// Ops that take no backend.
    NoBackend,
}

impl Bk {
    fn name(self) -> &'static str {
        match self {
            Bk::Poly => "poly",
            Bk::Libm => "libm",
            Bk::MicroMath => "micromath",
            Bk::NoBackend => "-",
        }
    }
}

/// Accuracy figures for one dtype and backend.
#[derive(Clone, Copy)]
struct Acc {
    /// Unit roundoff of the dtype.
    u: f64,
    eps: f64,
    floor: f64,
    /// Relative tolerance of a softmax output (ours + the reference's).
    softmax_rel: f64,
    /// Extra absolute error of log-domain results (approximate backends).
    log_extra: f64,
    /// Relative error of the backend's exp.
    exp_rel: f64,
    micromath: bool,
}

fn acc<F: Dt>(bk: Bk) -> Acc {
    let eps = F::EPSILON.to_f64();
    let (softmax_rel, log_extra, exp_rel, micromath) = if bk == Bk::MicroMath {
        (
            2.0 * MM_EXP_REL / (1.0 - MM_EXP_REL) + F::SOFTMAX_REL,
            MM_EXP_REL + MM_LN_ABS,
            MM_EXP_REL,
            true,
        )
    } else {
        (F::SOFTMAX_REL, 0.0, eps, false)
    };
    Acc {
        u: eps / 2.0,
        eps,
        floor: F::FLOOR,
        softmax_rel: softmax_rel + REF_SOFTMAX_REL,
        log_extra,
        exp_rel,
        micromath,
    }
}

/// `2^k` exactly, for any `k` whose power is a positive f64 (subnormals included).
fn pow2(k: i32) -> f64 {
    if k >= -1022 {
        f64::from_bits(((k + 1023) as u64) << 52)
    } else {
        f64::from_bits(1u64 << (k + 1074))
    }
}

/// One unit in the last place of `v` in type `F` (the subnormal spacing below the normals).
fn ulp<F: Dt>(v: f64) -> f64 {
    let a = v.abs();
    let e = if a == 0.0 || !a.is_finite() {
        F::MIN_EXP
    } else {
        // The exponent of a, read from its bits (log2 can round up just below a power of 2).
        let bits_exp = ((a.to_bits() >> 52) & 0x7ff) as i32 - 1023;
        bits_exp.max(F::MIN_EXP)
    };
    pow2(e - (F::MANT - 1))
}

// ------------------------------------------------------------------------------------------------
// Cases
// ------------------------------------------------------------------------------------------------

fn golden_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("golden")
}

fn load(file: &str) -> Vec<Value> {
    let path = golden_dir().join(file);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e} (regenerate with gen.py)", path.display()));
    let v: Value =
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    match v.get("cases").and_then(Value::as_array) {
        Some(c) if !c.is_empty() => c.clone(),
        _ => panic!("{}: no cases", path.display()),
    }
}

/// A string field of a file's "meta" object (generator and library versions).
fn meta(file: &str, key: &str) -> String {
    let path = golden_dir().join(file);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let v: Value =
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    v["meta"][key].as_str().unwrap_or("?").to_string()
}

/// A float token: a JSON number (parsed directly in the target type, so the bits are exact) or
/// one of the strings "nan", "inf", "-inf".
fn num<T: FromStr>(v: &Value) -> T {
    let s = match v {
        Value::String(s) => match s.as_str() {
            "nan" => "NaN".to_string(),
            "inf" => "inf".to_string(),
            "-inf" => "-inf".to_string(),
            other => panic!("bad float string {other:?}"),
        },
        Value::Number(n) => n.to_string(),
        other => panic!("not a float: {other}"),
    };
    s.parse()
        .unwrap_or_else(|_| panic!("cannot parse {s:?} as a float"))
}

fn nums<T: FromStr>(v: &Value) -> Vec<T> {
    v.as_array()
        .unwrap_or_else(|| panic!("not an array: {v}"))
        .iter()
        .map(num)
        .collect()
}

struct Case<F> {
    file: String,
    name: String,
    op: String,
    r: usize,
    n: usize,
    x: Vec<F>,
    tau: F,
    keep: Option<Vec<bool>>,
    bias: Option<Vec<F>>,
    edge: bool,
    expected: Vec<f64>,
    /// log_softmax VJP computed from the output `y` alone, where its documented semantics differ
    /// from CONFORMANCE.md's (entries with `y = -inf` frozen).
    expected_from_output: Option<Vec<f64>>,
    ort: Option<Vec<f32>>,
    q: Option<Vec<F>>,
    dy: Option<Vec<F>>,
    p: Option<Vec<f64>>,
    uniform: Option<Vec<F>>,
    hard: bool,
    target: Option<F>,
    dh_dtau: Option<f64>,
    error: Option<String>,
}

impl<F: Dt> Case<F> {
    fn parse(file: &str, v: &Value) -> Self {
        let shape: Vec<usize> = v["shape"]
            .as_array()
            .expect("shape")
            .iter()
            .map(|s| s.as_u64().expect("shape entry") as usize)
            .collect();
        let opt = |k: &str| v.get(k).map(nums::<F>);
        Case {
            file: file.to_string(),
            name: v["name"].as_str().expect("name").to_string(),
            op: v["op"].as_str().expect("op").to_string(),
            r: shape[0],
            n: shape[1],
            x: nums(&v["x"]),
            tau: v.get("temperature").map_or(F::ONE, num),
            keep: v.get("keep").map(|k| {
                k.as_array()
                    .expect("keep")
                    .iter()
                    .map(|b| b.as_bool().expect("keep entry"))
                    .collect()
            }),
            bias: opt("bias"),
            edge: v.get("edge").and_then(Value::as_bool).unwrap_or(false),
            expected: v.get("expected").map(nums).unwrap_or_default(),
            expected_from_output: v.get("expected_from_output").map(nums),
            ort: v.get("ort").map(nums),
            q: opt("q"),
            dy: opt("dy"),
            p: v.get("p").map(nums),
            uniform: opt("uniform"),
            hard: v.get("hard").and_then(Value::as_bool).unwrap_or(false),
            target: v.get("target").map(num),
            dh_dtau: v.get("dh_dtau").map(|a| nums::<f64>(a)[0]),
            error: v.get("error").and_then(Value::as_str).map(str::to_string),
        }
    }

    fn spec(&self) -> Rows<'_, F> {
        let s = Rows::new(self.n).with_temperature(self.tau);
        match (&self.keep, &self.bias) {
            (Some(k), _) => s.with_keep(k),
            (None, Some(b)) => s.with_bias(b),
            (None, None) => s,
        }
    }

    fn plain(&self) -> bool {
        self.keep.is_none() && self.bias.is_none()
    }

    fn unit_tau(&self) -> bool {
        self.tau == F::ONE
    }

    /// Row `i` of `v` (a flat R×N array).
    fn row<'v, T>(&self, v: &'v [T], i: usize) -> &'v [T] {
        &v[i * self.n..(i + 1) * self.n]
    }

    /// Row `i` as the kernels see it, widened: bias added, masked entries `-inf`.
    fn eff_row(&self, x: &[F], i: usize) -> Vec<f64> {
        (0..self.n)
            .map(|j| {
                let k = i * self.n + j;
                if self.keep.as_ref().is_some_and(|m| !m[k]) {
                    f64::NEG_INFINITY
                } else {
                    x[k].to_f64() + self.bias.as_ref().map_or(0.0, |b| b[k].to_f64())
                }
            })
            .collect()
    }
}

/// Naive f64 quantities of a regular row (finite max, no NaN), used only to size tolerances.
struct Terms {
    /// `(z_i − max)/τ`.
    d: Vec<f64>,
    /// softmax.
    p: Vec<f64>,
    /// `ln p_i`.
    logp: Vec<f64>,
    /// Row maximum of `z/τ`.
    max_scaled: f64,
    /// `Σ p_j |d_j|`.
    sum_pd: f64,
    /// `Σ p_i |d_i − E_p d| |d_i|`.
    h_sens: f64,
}

fn terms(z: &[f64], tau: f64) -> Option<Terms> {
    if z.iter().any(|v| v.is_nan()) {
        return None;
    }
    let m = z.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if !m.is_finite() {
        return None;
    }
    let d: Vec<f64> = z.iter().map(|&v| (v - m) / tau).collect();
    let s: f64 = d.iter().map(|v| v.exp()).sum();
    let ls = s.ln();
    let p: Vec<f64> = d.iter().map(|v| v.exp() / s).collect();
    let logp = d.iter().map(|v| v - ls).collect();
    let fin = |v: f64| if v.is_finite() { v } else { 0.0 };
    let sum_pd = p.iter().zip(&d).map(|(p, d)| p * fin(d.abs())).sum();
    let ed: f64 = p.iter().zip(&d).map(|(p, d)| p * fin(*d)).sum();
    let h_sens = p
        .iter()
        .zip(&d)
        .map(|(p, d)| p * fin((d - ed).abs() * d.abs()))
        .sum();
    Some(Terms {
        d,
        p,
        logp,
        max_scaled: m / tau,
        sum_pd,
        h_sens,
    })
}

/// `u·|d|` when τ ≠ 1 (the rounding of the scaled shift), 0 when τ = 1 or `d` is infinite.
fn tau_term(unit_tau: bool, u: f64, d: f64) -> f64 {
    if unit_tau || !d.is_finite() {
        0.0
    } else {
        u * d.abs()
    }
}

// ------------------------------------------------------------------------------------------------
// Comparison and reporting
// ------------------------------------------------------------------------------------------------

#[derive(Clone, Copy, Debug)]
enum Tol {
    Exact,
    Abs(f64),
}

/// How the summary measures an op's errors.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Metric {
    /// `|err|/|y|` and ULP of `y`, for `|y| >= floor` (probabilities, entropy, τ).
    Rel,
    /// `|err|/(1 + |y|)` and ULP of `max(|y|, 1)` (log-domain values, KL, sparsemax, VJPs:
    /// results with absolute tolerances).
    Abs,
}

/// (relative-style error, error in ULP) of one value under a metric.
fn metric_err<F: Dt>(m: Metric, floor: f64, err: f64, want: f64) -> (f64, f64) {
    match m {
        Metric::Rel if want.abs() >= floor && want != 0.0 => {
            (err / want.abs(), err / ulp::<F>(want))
        }
        Metric::Rel => (0.0, 0.0),
        Metric::Abs => (
            err / (1.0 + want.abs()),
            err / ulp::<F>(want.abs().max(1.0)),
        ),
    }
}

#[derive(Clone, Default)]
struct Stats {
    cases: usize,
    values: usize,
    exact: usize,
    max_rel: f64,
    max_ulp: f64,
    max_ratio: f64,
    /// Where `max_rel` was seen.
    worst: String,
}

impl Stats {
    fn add_err(&mut self, rel: f64, ulps: f64, ratio: f64, at: impl FnOnce() -> String) {
        self.values += 1;
        if rel > self.max_rel {
            self.max_rel = rel;
            self.worst = at();
        }
        self.max_ulp = self.max_ulp.max(ulps);
        self.max_ratio = self.max_ratio.max(ratio);
    }

    fn absorb(&mut self, v: &Stats) {
        self.cases += v.cases;
        self.values += v.values;
        self.exact += v.exact;
        if v.max_rel > self.max_rel {
            self.max_rel = v.max_rel;
            self.worst = v.worst.clone();
        }
        self.max_ulp = self.max_ulp.max(v.max_ulp);
        self.max_ratio = self.max_ratio.max(v.max_ratio);
    }
}

#[derive(Default)]
struct Report {
    /// (op, dtype, backend) -> stats over every entry point.
    stats: BTreeMap<(String, &'static str, &'static str), Stats>,
    /// (op, τ = 1?, backend) -> ours on the f32 non-edge cases that carry ORT outputs (batched
    /// API).
    ours_vs_ort: BTreeMap<(String, bool, &'static str), Stats>,
    /// (op, τ = 1?) -> onnxruntime on the same cases.
    ort: BTreeMap<(String, bool), Stats>,
    /// op -> ORT values that are NaN/inf where the truth is finite (non-edge cases).
    ort_nonfinite: BTreeMap<String, usize>,
    /// op -> ORT values that differ from the spec in edge-semantics cases.
    ort_edge_mismatch: BTreeMap<String, (usize, usize)>,
    failures: Vec<String>,
    /// (op, dtype) -> number of cases.
    cases: BTreeMap<(String, &'static str), usize>,
    skipped: Vec<String>,
}

struct Ctx<'a> {
    op: &'a str,
    case: &'a str,
    file: &'a str,
    dtype: &'static str,
    bk: Bk,
    entry: &'a str,
    metric: Metric,
    floor: f64,
    /// Record the batched entry point's errors for the ORT comparison.
    vs_ort: bool,
    unit_tau: bool,
}

impl Report {
    fn fail(&mut self, msg: String) {
        self.failures.push(msg);
    }

    /// Compares one value; `got` is in the case's dtype, `want` the float64 truth.
    fn check<F: Dt>(&mut self, cx: &Ctx<'_>, idx: usize, got: F, want: f64, tol: Tol) {
        let g = got.to_f64();
        let want_dt = F::from_f64(want).to_f64();
        let key = (cx.op.to_string(), cx.dtype, cx.bk.name());
        let (ok, err, exact) = if want.is_nan() {
            (g.is_nan(), 0.0, true)
        } else if g.is_nan() {
            (false, f64::NAN, false)
        } else if want_dt.is_infinite() {
            // The exact result is outside the dtype's range: the answer is that infinity.
            (g == want_dt, (g - want).abs(), true)
        } else {
            match tol {
                Tol::Exact => (g == want_dt, (g - want_dt).abs(), true),
                Tol::Abs(t) => {
                    let err = (g - want).abs();
                    (t.is_finite() && err <= t, err, false)
                }
            }
        };
        let st = self.stats.entry(key).or_default();
        if exact {
            st.exact += 1;
        } else if err.is_finite() {
            let (rel, ulps) = metric_err::<F>(cx.metric, cx.floor, err, want);
            let t = match tol {
                Tol::Abs(t) => t,
                Tol::Exact => 0.0,
            };
            let ratio = if t > 0.0 { err / t } else { 0.0 };
            let at = || format!("{} {} [{idx}]", cx.case, cx.entry);
            st.add_err(rel, ulps, ratio, at);
            if cx.vs_ort {
                self.ours_vs_ort
                    .entry((cx.op.to_string(), cx.unit_tau, cx.bk.name()))
                    .or_default()
                    .add_err(rel, ulps, ratio, at);
            }
        }
        if !ok {
            let tol_s = match tol {
                _ if exact => "exact".to_string(),
                Tol::Exact => "exact".to_string(),
                Tol::Abs(t) => format!("{t:.3e}"),
            };
            self.fail(format!(
                "{}: case {} [{} {} {}] index {idx}: got {g:e}, expected {want:e}, error {err:.3e}, tolerance {tol_s}",
                cx.file, cx.case, cx.dtype, cx.bk.name(), cx.entry
            ));
        }
    }

    fn merge(&mut self, other: Report) {
        for (k, v) in other.stats {
            self.stats.entry(k).or_default().absorb(&v);
        }
        for (k, v) in other.ours_vs_ort {
            self.ours_vs_ort.entry(k).or_default().absorb(&v);
        }
        for (k, v) in other.ort {
            self.ort.entry(k).or_default().absorb(&v);
        }
        for (k, v) in other.ort_nonfinite {
            *self.ort_nonfinite.entry(k).or_default() += v;
        }
        for (k, (a, b)) in other.ort_edge_mismatch {
            let e = self.ort_edge_mismatch.entry(k).or_default();
            e.0 += a;
            e.1 += b;
        }
        for (k, v) in other.cases {
            *self.cases.entry(k).or_default() += v;
        }
        self.failures.extend(other.failures);
        self.skipped.extend(other.skipped);
    }
}

// ------------------------------------------------------------------------------------------------
// Running softmax-core
// ------------------------------------------------------------------------------------------------

type Outs<F> = Vec<(&'static str, Vec<F>)>;

fn zeros<F: Float>(n: usize) -> Vec<F> {
    vec![F::ZERO; n]
}

fn softmax_out<F: Dt, B: Backend<F>>(c: &Case<F>) -> Result<Outs<F>, Error> {
    let b = B::default();
    let mut out = Vec::new();
    let mut y = zeros(c.x.len());
    rows::softmax(b, &c.x, &mut y, &c.spec())?;
    out.push(("rows::softmax", y));
    if c.plain() {
        let mut xy = c.x.clone();
        rows::softmax_in_place(b, &mut xy, &Rows::new(c.n).with_temperature(c.tau))?;
        out.push(("rows::softmax_in_place", xy));
    }
    if c.r == 1 {
        let mut y = zeros(c.n);
        match (&c.keep, &c.bias) {
            (None, None) if c.unit_tau() => {
                softmax_core::softmax(b, &c.x, &mut y)?;
                out.push(("softmax", y));
                let mut xy = c.x.clone();
                softmax_core::softmax_in_place(b, &mut xy)?;
                out.push(("softmax_in_place", xy));
            }
            (None, None) => {
                softmax_core::softmax_with_temperature(b, &c.x, c.tau, &mut y)?;
                out.push(("softmax_with_temperature", y));
            }
            (Some(k), None) if c.unit_tau() => {
                softmax_core::masked_softmax(b, &c.x, k, &mut y)?;
                out.push(("masked_softmax", y));
                if let (Ok(a), Ok(k)) =
                    (<[F; 3]>::try_from(&c.x[..]), <[bool; 3]>::try_from(&k[..]))
                {
                    out.push((
                        "array::masked_softmax",
                        array::masked_softmax(b, &a, &k).to_vec(),
                    ));
                }
            }
            (None, Some(bias)) if c.unit_tau() => {
                softmax_core::softmax_with_bias(b, &c.x, bias, &mut y)?;
                out.push(("softmax_with_bias", y));
                if let (Ok(a), Ok(m)) =
                    (<[F; 3]>::try_from(&c.x[..]), <[F; 3]>::try_from(&bias[..]))
                {
                    out.push((
                        "array::softmax_with_bias",
                        array::softmax_with_bias(b, &a, &m).to_vec(),
                    ));
                }
            }
            _ => {}
        }
        if c.n == 3 && c.plain() {
            let a = [c.x[0], c.x[1], c.x[2]];
            let y = array::softmax_with_temperature(b, &a, c.tau)?;
            out.push(("array::softmax_with_temperature", y.to_vec()));
            if c.unit_tau() {
                out.push(("array::softmax", array::softmax(b, &a).to_vec()));
                let mut xy = a;
                array::softmax_in_place(b, &mut xy);
                out.push(("array::softmax_in_place", xy.to_vec()));
            }
        }
    }
    Ok(out)
}

fn log_softmax_out<F: Dt, B: Backend<F>>(c: &Case<F>) -> Result<Outs<F>, Error> {
    let b = B::default();
    let mut out = Vec::new();
    let mut y = zeros(c.x.len());
    rows::log_softmax(b, &c.x, &mut y, &c.spec())?;
    out.push(("rows::log_softmax", y));
    if c.plain() {
        let mut xy = c.x.clone();
        rows::log_softmax_in_place(b, &mut xy, &Rows::new(c.n).with_temperature(c.tau))?;
        out.push(("rows::log_softmax_in_place", xy));
    }
    if c.r == 1 && c.plain() && c.unit_tau() {
        let mut y = zeros(c.n);
        softmax_core::log_softmax(b, &c.x, &mut y)?;
        out.push(("log_softmax", y));
        let mut xy = c.x.clone();
        softmax_core::log_softmax_in_place(b, &mut xy)?;
        out.push(("log_softmax_in_place", xy));
        if c.n == 3 {
            let a = [c.x[0], c.x[1], c.x[2]];
            out.push(("array::log_softmax", array::log_softmax(b, &a).to_vec()));
            let mut xy = a;
            array::log_softmax_in_place(b, &mut xy);
            out.push(("array::log_softmax_in_place", xy.to_vec()));
        }
    }
    Ok(out)
}

/// logsumexp; the second element holds the online-state results, checked against the
/// [`LogSumExp`] accuracy statement.
fn logsumexp_out<F: Dt, B: Backend<F>>(c: &Case<F>) -> Result<(Outs<F>, Outs<F>), Error> {
    let b = B::default();
    let mut out = Vec::new();
    let mut online = Vec::new();
    let mut y = zeros(c.r);
    rows::logsumexp(b, &c.x, &mut y, &c.spec())?;
    out.push(("rows::logsumexp", y));
    if c.plain() && c.unit_tau() {
        let rows_x: Vec<&[F]> = (0..c.r).map(|i| c.row(&c.x, i)).collect();
        let single = rows_x
            .iter()
            .map(|r| softmax_core::logsumexp(b, r))
            .collect::<Result<Vec<F>, Error>>()?;
        out.push(("logsumexp", single));
        let pushed = rows_x
            .iter()
            .map(|r| {
                let mut s = LogSumExp::new(b);
                r.iter().for_each(|&v| s.push(v));
                s.finish()
            })
            .collect();
        online.push(("LogSumExp::push", pushed));
        let merged = rows_x
            .iter()
            .map(|r| {
                let (l, h) = r.split_at(r.len() / 3);
                let (mut a, mut s) = (LogSumExp::new(b), LogSumExp::new(b));
                a.push_slice(l);
                s.push_slice(h);
                s.merge(&a);
                s.finish()
            })
            .collect();
        online.push(("LogSumExp::push_slice+merge", merged));
        if c.r == 1 && c.n == 3 {
            let a = [c.x[0], c.x[1], c.x[2]];
            out.push(("array::logsumexp", vec![array::logsumexp(b, &a)]));
        }
    }
    Ok((out, online))
}

fn entropy_out<F: Dt, B: Backend<F>>(c: &Case<F>) -> Result<Outs<F>, Error> {
    let b = B::default();
    let mut out = Vec::new();
    let mut y = zeros(c.r);
    rows::entropy(b, &c.x, &mut y, &c.spec())?;
    out.push(("rows::entropy", y));
    if c.plain() {
        let single = (0..c.r)
            .map(|i| softmax_core::entropy(b, c.row(&c.x, i), c.tau))
            .collect::<Result<Vec<F>, Error>>()?;
        out.push(("entropy", single));
        if c.r == 1 && c.n == 3 {
            let a = [c.x[0], c.x[1], c.x[2]];
            out.push(("array::entropy", vec![array::entropy(b, &a, c.tau)?]));
        }
    }
    Ok(out)
}

fn kl_out<F: Dt, B: Backend<F>>(c: &Case<F>) -> Result<Outs<F>, Error> {
    let b = B::default();
    let q = c.q.as_ref().expect("kl case without q");
    let mut out = Vec::new();
    let mut y = zeros(c.r);
    rows::kl_divergence(b, &c.x, q, &mut y, &c.spec())?;
    out.push(("rows::kl_divergence", y));
    if c.plain() && c.unit_tau() {
        let single = (0..c.r)
            .map(|i| softmax_core::kl_divergence(b, c.row(&c.x, i), c.row(q, i)))
            .collect::<Result<Vec<F>, Error>>()?;
        out.push(("kl_divergence", single));
        if let (Ok(p), Ok(q)) = (<[F; 3]>::try_from(&c.x[..]), <[F; 3]>::try_from(&q[..])) {
            out.push((
                "array::kl_divergence",
                vec![array::kl_divergence(b, &p, &q)],
            ));
        }
    }
    Ok(out)
}

fn softmax_vjp_out<F: Dt, B: Backend<F>>(c: &Case<F>) -> Result<Outs<F>, Error> {
    let b = B::default();
    let dy = c.dy.as_ref().expect("vjp case without dy");
    let mut y = zeros(c.x.len());
    rows::softmax(b, &c.x, &mut y, &c.spec())?;
    let mut dx = zeros(c.x.len());
    rows::softmax_vjp(&y, dy, &mut dx, &Rows::new(c.n).with_temperature(c.tau))?;
    let mut out = vec![("rows::softmax + rows::softmax_vjp", dx)];
    if c.r == 1 && c.unit_tau() {
        let mut dx = zeros(c.n);
        softmax_core::softmax_vjp(&y, dy, &mut dx)?;
        out.push(("rows::softmax + softmax_vjp", dx));
    }
    Ok(out)
}

/// log_softmax VJP: (from the logits, as CONFORMANCE.md specifies; from the output `y`).
fn log_softmax_vjp_out<F: Dt, B: Backend<F>>(c: &Case<F>) -> Result<(Outs<F>, Outs<F>), Error> {
    let b = B::default();
    let dy = c.dy.as_ref().expect("vjp case without dy");
    let mut dx = zeros(c.x.len());
    rows::log_softmax_vjp_from_logits(b, &c.x, dy, &mut dx, &c.spec())?;
    let mut from_logits = vec![("rows::log_softmax_vjp_from_logits", dx)];
    if c.r == 1 && c.plain() && c.unit_tau() {
        let mut dx = zeros(c.n);
        softmax_core::log_softmax_vjp_from_logits(b, &c.x, dy, &mut dx)?;
        from_logits.push(("log_softmax_vjp_from_logits", dx));
        if let (Ok(x), Ok(g)) = (<[F; 3]>::try_from(&c.x[..]), <[F; 3]>::try_from(&dy[..])) {
            let dx = array::log_softmax_vjp_from_logits(b, &x, &g);
            from_logits.push(("array::log_softmax_vjp_from_logits", dx.to_vec()));
        }
    }
    let mut y = zeros(c.x.len());
    rows::log_softmax(b, &c.x, &mut y, &c.spec())?;
    let mut dx = zeros(c.x.len());
    rows::log_softmax_vjp(b, &y, dy, &mut dx, &Rows::new(c.n).with_temperature(c.tau))?;
    let mut from_output = vec![("rows::log_softmax + rows::log_softmax_vjp", dx)];
    if c.r == 1 && c.unit_tau() {
        let mut dx = zeros(c.n);
        softmax_core::log_softmax_vjp(b, &y, dy, &mut dx)?;
        from_output.push(("rows::log_softmax + log_softmax_vjp", dx));
    }
    Ok((from_logits, from_output))
}

fn sparsemax_out<F: Dt>(c: &Case<F>) -> Result<Outs<F>, Error> {
    let mut y = zeros(c.x.len());
    rows::sparsemax(&c.x, &mut y, &c.spec())?;
    let mut out = vec![("rows::sparsemax", y)];
    if c.r == 1 && c.plain() && c.unit_tau() {
        let mut y = zeros(c.n);
        softmax_core::sparsemax(&c.x, &mut y)?;
        out.push(("sparsemax", y));
        if c.n == 3 {
            let a = [c.x[0], c.x[1], c.x[2]];
            out.push(("array::sparsemax", array::sparsemax(&a).to_vec()));
        }
    }
    Ok(out)
}

fn hardmax_out<F: Dt>(c: &Case<F>) -> Result<Outs<F>, Error> {
    let mut y = zeros(c.x.len());
    rows::hardmax(&c.x, &mut y, &Rows::new(c.n))?;
    let mut out = vec![("rows::hardmax", y)];
    let mut single = Vec::new();
    for i in 0..c.r {
        let mut y = zeros(c.n);
        softmax_core::hardmax(c.row(&c.x, i), &mut y)?;
        single.extend(y);
    }
    out.push(("hardmax", single));
    if c.r == 1 && c.n == 3 {
        let a = [c.x[0], c.x[1], c.x[2]];
        out.push(("array::hardmax", array::hardmax(&a).to_vec()));
    }
    Ok(out)
}

fn gumbel_out<F: Dt, B: Backend<F>>(c: &Case<F>) -> Result<Outs<F>, Error> {
    let b = B::default();
    let u = c.uniform.as_ref().expect("gumbel case without uniform");
    let mut y = zeros(c.n);
    softmax_core::gumbel_softmax(b, &c.x, u, c.tau, c.hard, &mut y)?;
    let mut out = vec![("gumbel_softmax", y)];
    let mut y = zeros(c.x.len());
    rows::gumbel_softmax(b, &c.x, u, c.hard, &mut y, &c.spec())?;
    out.push(("rows::gumbel_softmax", y));
    if let (Ok(x), Ok(u)) = (<[F; 3]>::try_from(&c.x[..]), <[F; 3]>::try_from(&u[..])) {
        let y = array::gumbel_softmax(b, &x, &u, c.tau, c.hard)?;
        out.push(("array::gumbel_softmax", y.to_vec()));
    }
    Ok(out)
}

fn tfe_out<F: Dt, B: Backend<F>>(c: &Case<F>) -> Result<Outs<F>, Error> {
    let target = c
        .target
        .expect("temperature_for_entropy case without target");
    let b = B::default();
    let t = softmax_core::temperature_for_entropy(b, &c.x, target)?;
    let mut out = vec![("temperature_for_entropy", vec![t])];
    let mut t = zeros(c.r);
    rows::temperature_for_entropy(b, &c.x, target, &mut t, &Rows::new(c.n))?;
    out.push(("rows::temperature_for_entropy", t));
    if let Ok(x) = <[F; 3]>::try_from(&c.x[..]) {
        let t = array::temperature_for_entropy(b, &x, target)?;
        out.push(("array::temperature_for_entropy", vec![t]));
    }
    Ok(out)
}

/// The single-row and batched forms of an op must agree on a failure.
fn same_error(single: Result<(), Error>, batched: Result<(), Error>) -> Result<(), Error> {
    assert_eq!(single, batched, "single-row and rows:: forms disagree");
    single
}

/// Runs an error case; `Ok` if it did not fail.
fn error_run<F: Dt, B: Backend<F>>(c: &Case<F>) -> Result<(), Error> {
    let b = B::default();
    let len = c.x.len();
    let r = len.checked_div(c.n).unwrap_or(0);
    match c.op.as_str() {
        "softmax" => rows::softmax(b, &c.x, &mut zeros(len), &c.spec()),
        "log_softmax" => rows::log_softmax(b, &c.x, &mut zeros(len), &c.spec()),
        "logsumexp" => rows::logsumexp(b, &c.x, &mut zeros(r), &c.spec()),
        "entropy" => rows::entropy(b, &c.x, &mut zeros(r), &c.spec()),
        "sparsemax" => rows::sparsemax(&c.x, &mut zeros(len), &c.spec()),
        "gumbel_softmax" => {
            let u = c.uniform.as_ref().expect("uniform");
            let single = softmax_core::gumbel_softmax(b, &c.x, u, c.tau, c.hard, &mut zeros(len));
            let spec = Rows::new(c.x.len().max(1)).with_temperature(c.tau);
            let batched = rows::gumbel_softmax(b, &c.x, u, c.hard, &mut zeros(len), &spec);
            same_error(single, batched)
        }
        "temperature_for_entropy" => {
            let target = c.target.expect("target");
            let single = softmax_core::temperature_for_entropy(b, &c.x, target).map(|_| ());
            let spec = Rows::new(c.x.len().max(1));
            let batched =
                rows::temperature_for_entropy(b, &c.x, target, &mut zeros(r.max(1)), &spec);
            same_error(single, batched)
        }
        other => panic!("error case with unknown op {other}"),
    }
}

// ------------------------------------------------------------------------------------------------
// Tolerances per op
// ------------------------------------------------------------------------------------------------

/// Per-row naive terms of a case (None for irregular rows).
fn case_terms<F: Dt>(c: &Case<F>, x: &[F]) -> Vec<Option<Terms>> {
    let tau = c.tau.to_f64();
    (0..c.r).map(|i| terms(&c.eff_row(x, i), tau)).collect()
}

fn softmax_tol(a: &Acc, unit_tau: bool, t: Option<&Terms>, j: usize) -> f64 {
    let dj = t.map_or(0.0, |t| t.d[j]);
    a.softmax_rel + tau_term(unit_tau, a.u, dj)
}

fn log_softmax_tol(a: &Acc, unit_tau: bool, t: Option<&Terms>, j: usize, y: f64) -> f64 {
    let dj = t.map_or(0.0, |t| t.d[j]);
    2.0 * a.eps * (1.0 + y.abs())
        + EPS64 * (1.0 + y.abs())
        + a.log_extra
        + tau_term(unit_tau, a.u, dj)
}

fn entropy_tol(a: &Acc, rel: f64, unit_tau: bool, t: Option<&Terms>, h: f64) -> f64 {
    let sens = if unit_tau {
        0.0
    } else {
        t.map_or(0.0, |t| a.u * t.h_sens)
    };
    let base = if a.micromath {
        MM_LN_ABS + MM_EXP_REL * (1.0 + 2.0 * h.abs())
    } else {
        0.0
    };
    rel * h.abs().max(a.floor) + REF_ENTROPY_REL * h.abs() + sens + base
}

// ------------------------------------------------------------------------------------------------
// Per-case driver
// ------------------------------------------------------------------------------------------------

struct Run<'a, F> {
    c: &'a Case<F>,
    rep: &'a mut Report,
}

impl<F: Dt> Run<'_, F> {
    fn count_case(&mut self, bk: Bk) {
        self.rep
            .stats
            .entry((self.c.op.clone(), F::NAME, bk.name()))
            .or_default()
            .cases += 1;
    }

    /// Checks every entry point's output against the case's `expected` with `tol(index, want)`.
    fn check_all(
        &mut self,
        bk: Bk,
        outs: Result<Outs<F>, Error>,
        metric: Metric,
        floor: f64,
        tol: impl Fn(usize, f64) -> Tol,
    ) {
        let c = self.c;
        if outs.is_ok() {
            self.count_case(bk);
        }
        self.check_against(bk, outs, &c.expected, metric, floor, tol);
    }

    /// Checks every entry point's output against `expected` with `tol(index, want)`.
    fn check_against(
        &mut self,
        bk: Bk,
        outs: Result<Outs<F>, Error>,
        expected: &[f64],
        metric: Metric,
        floor: f64,
        tol: impl Fn(usize, f64) -> Tol,
    ) {
        let c = self.c;
        let outs = match outs {
            Ok(o) => o,
            Err(e) => {
                self.rep.fail(format!(
                    "{}: case {} [{} {}]: unexpected error {e:?}",
                    c.file,
                    c.name,
                    F::NAME,
                    bk.name()
                ));
                return;
            }
        };
        for (entry, got) in &outs {
            if got.len() != expected.len() {
                self.rep.fail(format!(
                    "{}: case {} [{} {} {entry}]: {} outputs, expected {}",
                    c.file,
                    c.name,
                    F::NAME,
                    bk.name(),
                    got.len(),
                    expected.len()
                ));
                continue;
            }
            let cx = Ctx {
                op: &c.op,
                case: &c.name,
                file: &c.file,
                dtype: F::NAME,
                bk,
                entry,
                metric,
                floor,
                vs_ort: c.ort.is_some() && !c.edge && entry.starts_with("rows::"),
                unit_tau: c.unit_tau(),
            };
            for (i, (&g, &w)) in got.iter().zip(expected).enumerate() {
                let t = tol(i, w);
                self.rep.check(&cx, i, g, w, t);
            }
        }
    }
}

impl<F: Dt> PerBackend<F> for Run<'_, F> {
    fn run<B: Backend<F>>(&mut self, bk: Bk) {
        let c = self.c;
        let a = acc::<F>(bk);
        let unit = c.unit_tau();
        let tau = c.tau.to_f64();
        let n = c.n;
        match c.op.as_str() {
            "softmax" => {
                let ts = case_terms(c, &c.x);
                let edge = c.edge;
                self.check_all(bk, softmax_out::<F, B>(c), Metric::Rel, a.floor, |i, w| {
                    if edge {
                        return Tol::Exact;
                    }
                    let rel = softmax_tol(&a, unit, ts[i / n].as_ref(), i % n);
                    Tol::Abs(rel * w.abs().max(a.floor))
                });
            }
            "log_softmax" => {
                let ts = case_terms(c, &c.x);
                let edge = c.edge;
                self.check_all(bk, log_softmax_out::<F, B>(c), Metric::Abs, 0.0, |i, w| {
                    if edge && (w == 0.0 || !w.is_finite()) {
                        return Tol::Exact;
                    }
                    Tol::Abs(log_softmax_tol(&a, unit, ts[i / n].as_ref(), i % n, w))
                });
            }
            "logsumexp" => {
                let ts = case_terms(c, &c.x);
                let edge = c.edge;
                let (outs, online) = match logsumexp_out::<F, B>(c) {
                    Ok((o, l)) => (Ok(o), l),
                    Err(e) => (Err(e), Vec::new()),
                };
                let tol = |i: usize, w: f64, stated_max: f64| {
                    if edge && (w == 0.0 || !w.is_finite()) {
                        return Tol::Exact;
                    }
                    let t = ts[i].as_ref();
                    let m = t.map_or(0.0, |t| t.max_scaled.abs());
                    let sens = if unit {
                        0.0
                    } else {
                        t.map_or(0.0, |t| a.u * t.sum_pd)
                    };
                    Tol::Abs(
                        2.0 * ulp::<F>(w)
                            + a.eps * stated_max.min(f64::MAX)
                            + EPS64 * (1.0 + w.abs())
                            + EPS64 * m
                            + sens
                            + a.log_extra,
                    )
                };
                self.check_all(bk, outs, Metric::Abs, 0.0, |i, w| {
                    let m = ts[i].as_ref().map_or(0.0, |t| t.max_scaled.abs());
                    tol(i, w, m)
                });
                // LogSumExp states 2 ULP + 2·2⁻²⁴·|lse| for f32 (eps·|lse|).
                self.check_against(bk, Ok(online), &c.expected, Metric::Abs, 0.0, |i, w| {
                    tol(i, w, w.abs())
                });
            }
            "entropy" => {
                let ts = case_terms(c, &c.x);
                let edge = c.edge;
                self.check_all(bk, entropy_out::<F, B>(c), Metric::Rel, a.floor, |i, w| {
                    if edge && (w == 0.0 || !w.is_finite()) {
                        return Tol::Exact;
                    }
                    Tol::Abs(entropy_tol(&a, F::ENTROPY_REL, unit, ts[i].as_ref(), w))
                });
            }
            "kl" => {
                let q = c.q.as_ref().expect("q");
                let tp = case_terms(c, &c.x);
                let tq = case_terms(c, q);
                let edge = c.edge;
                self.check_all(bk, kl_out::<F, B>(c), Metric::Abs, 0.0, |i, w| {
                    if edge && (w == 0.0 || !w.is_finite()) {
                        return Tol::Exact;
                    }
                    let (Some(p), Some(q)) = (tp[i].as_ref(), tq[i].as_ref()) else {
                        return Tol::Abs(a.eps * (1.0 + w.abs()) + a.log_extra);
                    };
                    // Σ p|log p − log q| (the stated scale), and the τ ≠ 1 rounding of both
                    // rows' shifts.
                    let mut scale = 0.0;
                    let mut sens = 0.0;
                    for j in 0..n {
                        if p.p[j] > 0.0 && q.p[j] > 0.0 {
                            let diff = (p.logp[j] - q.logp[j]).abs();
                            scale += p.p[j] * diff;
                            if !unit {
                                let dd = p.d[j].abs() + q.d[j].abs();
                                sens += a.u * (p.p[j] + q.p[j]) * dd * (1.0 + diff);
                            }
                        }
                    }
                    let mm = if a.micromath {
                        2.0 * a.log_extra + 2.0 * MM_EXP_REL * scale
                    } else {
                        0.0
                    };
                    Tol::Abs(a.eps * (1.0 + scale) + REF_KL * (1.0 + scale) + sens + mm)
                });
            }
            "softmax_vjp" => {
                let ts = case_terms(c, &c.x);
                let p = c.p.as_ref().expect("p");
                let dy: Vec<f64> =
                    c.dy.as_ref()
                        .expect("dy")
                        .iter()
                        .map(|v| v.to_f64())
                        .collect();
                // Per element softmax tolerance e_j, and the row sums of the formula.
                let e: Vec<f64> = (0..c.x.len())
                    .map(|k| softmax_tol(&a, unit, ts[k / n].as_ref(), k % n))
                    .collect();
                let row_sums: Vec<(f64, f64, f64)> = (0..c.r)
                    .map(|r| {
                        let (mut dd, mut aa, mut ee) = (0.0, 0.0, 0.0);
                        for k in r * n..(r + 1) * n {
                            if p[k] > 0.0 {
                                dd += p[k] * dy[k];
                                aa += p[k] * dy[k].abs();
                                ee += e[k] * p[k] * dy[k].abs();
                            }
                        }
                        (dd, aa, ee)
                    })
                    .collect();
                self.check_all(bk, softmax_vjp_out::<F, B>(c), Metric::Abs, 0.0, |k, w| {
                    if p[k] == 0.0 || p[k].is_nan() || (c.edge && !w.is_finite()) {
                        return Tol::Exact;
                    }
                    let (dd, aa, ee) = row_sums[k / n];
                    let t = (e[k] * p[k].max(a.floor) * (dy[k] - dd).abs()
                        + p[k] * (ee + 4.0 * a.u * (aa + dy[k].abs())))
                        / tau
                        + 3.0 * a.u * w.abs();
                    Tol::Abs(t)
                });
            }
            "log_softmax_vjp" => {
                let ts = case_terms(c, &c.x);
                let p = c.p.as_ref().expect("p");
                let dy: Vec<f64> =
                    c.dy.as_ref()
                        .expect("dy")
                        .iter()
                        .map(|v| v.to_f64())
                        .collect();
                let z: Vec<Vec<f64>> = (0..c.r).map(|r| c.eff_row(&c.x, r)).collect();
                let sums: Vec<f64> = (0..c.r)
                    .map(|r| {
                        (0..n)
                            .filter(|&j| z[r][j] != f64::NEG_INFINITY)
                            .map(|j| dy[r * n + j])
                            .sum()
                    })
                    .collect();
                let exp_err = if a.micromath { a.exp_rel } else { 2.0 * a.u };
                let (from_logits, from_output) = match log_softmax_vjp_out::<F, B>(c) {
                    Ok((l, o)) => (Ok(l), Ok(o)),
                    Err(e) => (Err(e), Err(e)),
                };
                let tol = |k: usize, w: f64| {
                    if (p[k] == 0.0 && w == 0.0) || p[k].is_nan() || (c.edge && !w.is_finite()) {
                        return Tol::Exact;
                    }
                    let s = sums[k / n].abs();
                    let y = p[k].ln();
                    let ai = if p[k] > 0.0 {
                        log_softmax_tol(&a, unit, ts[k / n].as_ref(), k % n, y)
                    } else {
                        0.0
                    };
                    let t = (p[k] * s * (ai + exp_err + REF_SOFTMAX_REL + 2.0 * a.u)
                        + 2.0 * a.u * dy[k].abs())
                        / tau
                        + 2.0 * a.u * w.abs();
                    Tol::Abs(t)
                };
                self.check_all(bk, from_logits, Metric::Abs, 0.0, tol);
                // From the output alone: the same truth, except where softmax-core documents
                // that entries with y = -inf are frozen (the case then says what that gives).
                let want = c.expected_from_output.as_ref().unwrap_or(&c.expected);
                self.check_against(bk, from_output, want, Metric::Abs, 0.0, tol);
            }
            "gumbel_softmax" => {
                let u = c.uniform.as_ref().expect("uniform");
                let uu: Vec<f64> = u.iter().map(|v| v.to_f64()).collect();
                let g: Vec<f64> = uu.iter().map(|&v| -(-v.ln()).ln()).collect();
                let xw: Vec<f64> = c.x.iter().map(|v| v.to_f64()).collect();
                let m = xw.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
                // The logits as the kernel sees them: shifted by the max first.
                let shifted: Vec<f64> = xw.iter().map(|&x| x - m).collect();
                let zrow: Vec<f64> = shifted.iter().zip(&g).map(|(d, g)| d + g).collect();
                let Some(t) = terms(&zrow, tau) else {
                    self.rep.fail(format!("{}: irregular gumbel row", c.name));
                    return;
                };
                let err: Vec<f64> = (0..n)
                    .map(|j| {
                        a.u * shifted[j].abs()
                            + 3.0 * a.u * (1.0 + g[j].abs())
                            + a.u * zrow[j].abs()
                    })
                    .collect();
                let mean_err: f64 = t.p.iter().zip(&err).map(|(p, e)| p * e).sum();
                let hard = c.hard;
                self.check_all(bk, gumbel_out::<F, B>(c), Metric::Rel, a.floor, |j, w| {
                    if hard {
                        return Tol::Exact;
                    }
                    let rel =
                        a.softmax_rel + (err[j] + mean_err) / tau + tau_term(unit, a.u, t.d[j]);
                    Tol::Abs(rel * w.abs().max(a.floor))
                });
            }
            "temperature_for_entropy" => {
                let dh = c.dh_dtau.expect("dh_dtau");
                let xw: Vec<f64> = c.x.iter().map(|v| v.to_f64()).collect();
                let star = c.expected[0];
                let t = terms(&xw, star);
                let h = c.target.expect("target").to_f64();
                let tol_h = entropy_tol(&a, F::ENTROPY_REL, false, t.as_ref(), h);
                self.check_all(bk, tfe_out::<F, B>(c), Metric::Rel, a.floor, |_, w| {
                    Tol::Abs(tol_h / dh.abs() + 2.0 * ulp::<F>(w))
                });
            }
            other => self.rep.fail(format!("{}: unknown op {other}", c.name)),
        }
    }
}

/// Runs an error case with every backend and checks the error variant.
struct ErrRun<'a, F> {
    c: &'a Case<F>,
    rep: &'a mut Report,
}

impl<F: Dt> PerBackend<F> for ErrRun<'_, F> {
    fn run<B: Backend<F>>(&mut self, bk: Bk) {
        let c = self.c;
        let kind = c.error.as_deref().unwrap_or("");
        let got = match error_run::<F, B>(c) {
            Ok(()) => "Ok".to_string(),
            Err(e) => format!("{e:?}"),
        };
        let variant = got.split([' ', '{', '(']).next().unwrap_or("");
        let st = self
            .rep
            .stats
            .entry((c.op.clone() + " (error)", F::NAME, bk.name()))
            .or_default();
        st.cases += 1;
        if variant == kind {
            st.exact += 1;
        } else {
            self.rep.fail(format!(
                "{}: case {} [{} {}]: expected error {kind}, got {got}",
                c.file,
                c.name,
                F::NAME,
                bk.name()
            ));
        }
    }
}

fn run_case<F: Dt>(file: &str, v: &Value, rep: &mut Report) {
    let c = Case::<F>::parse(file, v);
    *rep.cases.entry((c.op.clone(), F::NAME)).or_default() += 1;
    if c.error.is_some() {
        F::each_backend(&mut ErrRun { c: &c, rep });
        return;
    }
    match c.op.as_str() {
        "sparsemax" => {
            let a = acc::<F>(Bk::NoBackend);
            let ts = case_terms(&c, &c.x);
            let (n, unit, edge) = (c.n, c.unit_tau(), c.edge);
            let mut run = Run { c: &c, rep };
            run.check_all(
                Bk::NoBackend,
                sparsemax_out(&c),
                Metric::Abs,
                0.0,
                |i, _| {
                    if edge {
                        return Tol::Exact;
                    }
                    let d = ts[i / n].as_ref().map_or(0.0, |t| t.d[i % n]);
                    let d = if d.is_finite() { d.abs() } else { 0.0 };
                    let temp = if unit { 0.0 } else { a.u * (d + 1.0) };
                    Tol::Abs(3.0 * a.eps * (1.0 + d) + EPS64 * (1.0 + d) + temp)
                },
            );
        }
        "hardmax" => {
            let mut run = Run { c: &c, rep };
            run.check_all(Bk::NoBackend, hardmax_out(&c), Metric::Rel, 0.0, |_, _| {
                Tol::Exact
            });
        }
        _ => F::each_backend(&mut Run { c: &c, rep }),
    }
    if let Some(o) = &c.ort {
        ort_stats(&c, o, rep);
    }
}

/// onnxruntime's float32 results against the same truth, with the metric of the op.
fn ort_stats<F: Dt>(c: &Case<F>, o: &[f32], rep: &mut Report) {
    if c.edge {
        let e = rep.ort_edge_mismatch.entry(c.op.clone()).or_default();
        for (&g, &w) in o.iter().zip(&c.expected) {
            let g = g as f64;
            let same = if w.is_nan() {
                g.is_nan()
            } else if w == 0.0 || !w.is_finite() || c.op == "softmax" {
                g == w
            } else {
                // -ln k on the +inf entries: within the log_softmax tolerance.
                let a = acc::<f32>(Bk::Poly);
                (g - w).abs() <= log_softmax_tol(&a, true, None, 0, w)
            };
            e.1 += 1;
            if !same {
                e.0 += 1;
            }
        }
        return;
    }
    let a = acc::<f32>(Bk::Poly);
    let ts = case_terms(c, &c.x);
    let unit = c.unit_tau();
    let st = rep.ort.entry((c.op.clone(), unit)).or_default();
    st.cases += 1;
    for (i, (&g, &w)) in o.iter().zip(&c.expected).enumerate() {
        let g = g as f64;
        let want_dt = w as f32 as f64;
        if want_dt.is_infinite() || w.is_nan() {
            continue;
        }
        if !g.is_finite() {
            *rep.ort_nonfinite.entry(c.op.clone()).or_default() += 1;
            continue;
        }
        let err = (g - w).abs();
        let t = ts[i / c.n].as_ref();
        let (metric, floor, tol) = if c.op == "softmax" {
            (
                Metric::Rel,
                a.floor,
                softmax_tol(&a, unit, t, i % c.n) * w.abs().max(a.floor),
            )
        } else {
            (Metric::Abs, 0.0, log_softmax_tol(&a, unit, t, i % c.n, w))
        };
        let (rel, ulps) = metric_err::<f32>(metric, floor, err, w);
        st.add_err(rel, ulps, err / tol, || format!("{} [{i}]", c.name));
    }
}

fn run_file(file: &str) -> Report {
    let mut rep = Report::default();
    for v in load(file) {
        match v["dtype"].as_str() {
            Some("f32") => run_case::<f32>(file, &v, &mut rep),
            Some("f64") => run_case::<f64>(file, &v, &mut rep),
            other => rep.fail(format!("{file}: unsupported dtype {other:?}")),
        }
    }
    rep
}

const FILES: [&str; 12] = [
    "softmax.json",
    "log_softmax.json",
    "logsumexp.json",
    "entropy.json",
    "kl.json",
    "softmax_vjp.json",
    "log_softmax_vjp.json",
    "sparsemax.json",
    "hardmax.json",
    "gumbel_softmax.json",
    "temperature_for_entropy.json",
    "errors.json",
];

fn assert_clean(file: &str) {
    let rep = run_file(file);
    if !rep.failures.is_empty() {
        let mut msg = format!("{file}: {} failed comparisons\n", rep.failures.len());
        for f in rep.failures.iter().take(40) {
            let _ = writeln!(msg, "  {f}");
        }
        if rep.failures.len() > 40 {
            let _ = writeln!(msg, "  ... and {} more", rep.failures.len() - 40);
        }
        let mut by_case: BTreeMap<&str, usize> = BTreeMap::new();
        for f in &rep.failures {
            let key = f.split(" index ").next().unwrap_or(f);
            let key = key.split(": case ").nth(1).unwrap_or(key);
            *by_case.entry(key).or_default() += 1;
        }
        let _ = writeln!(msg, "failures per case and entry point:");
        for (k, v) in by_case {
            let _ = writeln!(msg, "  {v:>4}  {k}");
        }
        panic!("{msg}");
    }
    // Every case must have been compared (no silent skips beyond the documented ones).
    assert!(
        rep.cases.values().sum::<usize>() > 0,
        "{file}: no cases were run"
    );
}

#[test]
fn golden_softmax() {
    assert_clean("softmax.json");
}

#[test]
fn golden_log_softmax() {
    assert_clean("log_softmax.json");
}

#[test]
fn golden_logsumexp() {
    assert_clean("logsumexp.json");
}

#[test]
fn golden_entropy() {
    assert_clean("entropy.json");
}

#[test]
fn golden_kl() {
    assert_clean("kl.json");
}

#[test]
fn golden_softmax_vjp() {
    assert_clean("softmax_vjp.json");
}

#[test]
fn golden_log_softmax_vjp() {
    assert_clean("log_softmax_vjp.json");
}

#[test]
fn golden_sparsemax() {
    assert_clean("sparsemax.json");
}

#[test]
fn golden_hardmax() {
    assert_clean("hardmax.json");
}

#[test]
fn golden_gumbel_softmax() {
    assert_clean("gumbel_softmax.json");
}

#[test]
fn golden_temperature_for_entropy() {
    assert_clean("temperature_for_entropy.json");
}

#[test]
fn golden_errors() {
    assert_clean("errors.json");
}

/// The summary table, and the comparison with onnxruntime: on the float32 Softmax and
/// LogSoftmax cases, our largest error (Poly and Libm) must not exceed onnxruntime's.
#[test]
fn golden_summary() {
    let mut all = Report::default();
    for f in FILES {
        let rep = run_file(f);
        assert!(!rep.cases.is_empty(), "{f}: no cases were run");
        all.merge(rep);
    }
    let ort_version = meta("softmax.json", "onnxruntime");
    let mut out = String::new();
    let _ = writeln!(out, "\ngolden vectors: cases per op");
    for ((op, dt), n) in &all.cases {
        let _ = writeln!(out, "  {op:<24} {dt}  {n:>4}");
    }
    let rel_ops = [
        "softmax",
        "gumbel_softmax",
        "entropy",
        "temperature_for_entropy",
    ];
    let _ = writeln!(
        out,
        "\n{:<24} {:<4} {:<10} {:>6} {:>7} {:>6} {:>4} {:>10} {:>9} {:>8}",
        "op", "type", "backend", "cases", "values", "exact", "err", "max err", "max ULP", "err/tol"
    );
    for ((op, dt, bk), s) in &all.stats {
        if s.values == 0 && s.exact == 0 {
            continue;
        }
        let m = if s.values == 0 {
            "-"
        } else if rel_ops.contains(&op.as_str()) {
            "rel"
        } else {
            "abs"
        };
        let _ = writeln!(
            out,
            "{op:<24} {dt:<4} {bk:<10} {:>6} {:>7} {:>6} {m:>4} {:>10.3e} {:>9.2} {:>8.3}",
            s.cases, s.values, s.exact, s.max_rel, s.max_ulp, s.max_ratio
        );
    }
    let _ = writeln!(
        out,
        "err: rel = |err|/|y| over |y| >= 1e-30 (f32) / 1e-300 (f64), ULP of y; \
         abs = |err|/(1+|y|), ULP of max(|y|, 1). err/tol: the largest error as a fraction of its \
         tolerance. exact: values compared bit-for-bit (NaN, infinities, spec values, hardmax, errors)."
    );
    let _ = writeln!(out, "\nwhere the largest errors are:");
    for ((op, dt, bk), s) in &all.stats {
        if !s.worst.is_empty() {
            let _ = writeln!(
                out,
                "  {op:<24} {dt} {bk:<10} {:.3e} at {}",
                s.max_rel, s.worst
            );
        }
    }
    let _ = writeln!(
        out,
        "\nf32, the same non-edge cases: softmax-core (batched API) vs onnxruntime {ort_version} \
         (temperature as a Div node before the op):"
    );
    let _ = writeln!(
        out,
        "{:<12} {:<5} {:<12} {:>7} {:>10} {:>9} {:>8}  worst at",
        "op", "tau", "impl", "values", "max err", "max ULP", "err/tol"
    );
    for op in ["softmax", "log_softmax"] {
        for unit in [true, false] {
            let tau = if unit { "1" } else { "!= 1" };
            for bk in ["poly", "libm", "micromath"] {
                if let Some(s) = all.ours_vs_ort.get(&(op.to_string(), unit, bk)) {
                    let _ = writeln!(
                        out,
                        "{op:<12} {tau:<5} {bk:<12} {:>7} {:>10.3e} {:>9.2} {:>8.3}  {}",
                        s.values, s.max_rel, s.max_ulp, s.max_ratio, s.worst
                    );
                }
            }
            if let Some(s) = all.ort.get(&(op.to_string(), unit)) {
                let _ = writeln!(
                    out,
                    "{op:<12} {tau:<5} {:<12} {:>7} {:>10.3e} {:>9.2} {:>8.3}  {}",
                    "onnxruntime", s.values, s.max_rel, s.max_ulp, s.max_ratio, s.worst
                );
            }
        }
        let _ = writeln!(
            out,
            "{op:<12} onnxruntime: {} values NaN/inf where the truth is finite (not in the table)",
            all.ort_nonfinite.get(op).copied().unwrap_or(0)
        );
        if let Some((bad, total)) = all.ort_edge_mismatch.get(op) {
            let _ = writeln!(
                out,
                "{op:<12} onnxruntime on the edge-semantics cases: {bad} of {total} values differ from CONFORMANCE.md"
            );
        }
    }
    if !all.skipped.is_empty() {
        let _ = writeln!(
            out,
            "\nskipped (micromath's ln error leaves g = -ln(-ln u) undetermined): {}",
            all.skipped.join(", ")
        );
    }
    let _ = writeln!(out, "\nfailed comparisons: {}", all.failures.len());
    println!("{out}");

    // Ours (Poly, Libm) must be at least as accurate as onnxruntime on the same f32 cases, with
    // and without a temperature.
    for op in ["softmax", "log_softmax"] {
        for unit in [true, false] {
            let ort = all
                .ort
                .get(&(op.to_string(), unit))
                .unwrap_or_else(|| panic!("no onnxruntime results for {op} (tau = 1: {unit})"));
            assert!(ort.values > 0, "no onnxruntime values for {op}");
            for bk in ["poly", "libm"] {
                let ours = all
                    .ours_vs_ort
                    .get(&(op.to_string(), unit, bk))
                    .unwrap_or_else(|| panic!("no {bk} results for {op}"));
                assert!(
                    ours.values >= ort.values && ours.max_rel <= ort.max_rel,
                    "{op} {bk} (tau = 1: {unit}): max error {:e} at {} exceeds onnxruntime's {:e} at {}",
                    ours.max_rel,
                    ours.worst,
                    ort.max_rel,
                    ort.worst
                );
            }
        }
    }
}
