//! `harness conform` driven as outside checks drive it: the real binary, JSON lines on stdin,
//! answers read back from stdout (harness/CONFORMANCE.md).
//!
//! Every numeric answer is checked against a naive f64 reference written here (nothing from the
//! workspace is reused), gradients against central finite differences of that reference, and the
//! edge rows against the exact values CONFORMANCE.md prescribes. Float answers are parsed back
//! from their text into the answer's dtype, so the checks are on the bits the protocol delivers.
//!

mod conform_support;

use std::fmt::LowerExp;
use std::io::Write as _;
use std::process::{Command, Stdio};
use std::str::FromStr;

use conform_support::{run_bytes, run_lines};
use serde_json::{Map, Value};

// ------------------------------------------------------------------------------------------------
// Driving the binary
// ------------------------------------------------------------------------------------------------

/// Runs the given lines; parses the answers (one per line).
fn run(lines: &[String]) -> Vec<Answer> {
    run_lines(lines)
        .iter()
        .map(|raw| Answer::parse(raw))
        .collect()
}

fn run1(line: &str) -> Answer {
    run(&[line.to_string()]).remove(0)
}

/// One answer line.
#[derive(Debug)]
struct Answer {
    raw: String,
    fields: Map<String, Value>,
}

impl Answer {
    /// Parses and checks the envelope: an object whose first keys are `id` then `ok` (bool).
    fn parse(raw: &str) -> Answer {
        let v: Value =
            serde_json::from_str(raw).unwrap_or_else(|e| panic!("not JSON ({e}): {raw}"));
        let Value::Object(fields) = v else {
            panic!("not an object: {raw}")
        };
        let keys: Vec<&str> = fields.keys().map(String::as_str).collect();
        assert!(
            keys.len() >= 2 && keys[0] == "id" && keys[1] == "ok",
            "envelope: {raw}"
        );
        assert!(fields["ok"].is_boolean(), "ok must be a boolean: {raw}");
        Answer {
            raw: raw.to_string(),
            fields,
        }
    }

    fn ok(&self) -> bool {
        self.fields["ok"] == Value::Bool(true)
    }

    /// The error kind; asserts the error envelope exactly.
    fn kind(&self) -> &str {
        assert!(!self.ok(), "expected an error, got {}", self.raw);
        let keys: Vec<&str> = self.fields.keys().map(String::as_str).collect();
        assert_eq!(keys, ["id", "ok", "error", "message"], "{}", self.raw);
        let msg = self.fields["message"]
            .as_str()
            .expect("message is a string");
        assert!(!msg.is_empty(), "empty message: {}", self.raw);
        self.fields["error"].as_str().expect("error is a string")
    }

    /// Asserts the id was echoed with exactly this JSON text.
    fn assert_id(&self, id: &str) {
        assert!(
            self.raw.starts_with(&format!("{{\"id\":{id},\"ok\":")),
            "id {id} not echoed verbatim: {}",
            self.raw
        );
    }

    /// The float array `field` of a success answer, parsed into `T` from its text.
    fn floats<T: Ty>(&self, field: &str) -> Vec<T> {
        assert!(self.ok(), "expected success, got {}", self.raw);
        let keys: Vec<&str> = self.fields.keys().map(String::as_str).collect();
        assert_eq!(keys, ["id", "ok", field], "{}", self.raw);
        let Value::Array(items) = &self.fields[field] else {
            panic!("`{field}` is not an array: {}", self.raw)
        };
        items.iter().map(|v| parse_out::<T>(v, &self.raw)).collect()
    }
}

/// An output float: a JSON number in float notation (`.` or exponent, so no parser reads it as
/// an integer and `-0` keeps its sign), or `"nan"`, `"inf"`, `"-inf"`.
fn parse_out<T: Ty>(v: &Value, raw: &str) -> T {
    match v {
        Value::Number(n) => {
            let t = n.as_str();
            assert!(
                t.contains('.') || t.contains('e'),
                "float {t} in integer notation: {raw}"
            );
            T::parse(t).unwrap_or_else(|| panic!("bad float {t}: {raw}"))
        }
        Value::String(s) => match s.as_str() {
            "nan" => T::from_f64(f64::NAN),
            "inf" => T::from_f64(f64::INFINITY),
            "-inf" => T::from_f64(f64::NEG_INFINITY),
            _ => panic!("bad float string {s:?}: {raw}"),
        },
        _ => panic!("bad float {v}: {raw}"),
    }
}

// ------------------------------------------------------------------------------------------------
// Element types and request text
// ------------------------------------------------------------------------------------------------

trait Ty: Copy + PartialEq + std::fmt::Debug + FromStr + LowerExp + 'static {
    const NAME: &'static str;
    /// Unit roundoff 2^-p.
    const U: f64;
    /// Below this, softmax outputs lose relative accuracy (softmax-core documents its f32
    /// bound for outputs >= 1e-30; subnormals start at 1.2e-38 / 2.2e-308).
    const TINY: f64;
    fn to_f64(self) -> f64;
    fn from_f64(v: f64) -> Self;
    fn bits(self) -> u64;
    fn parse(s: &str) -> Option<Self> {
        s.parse().ok()
    }
}

impl Ty for f32 {
    const NAME: &'static str = "f32";
    const U: f64 = 5.960_464_477_539_063e-8; // 2^-24
    const TINY: f64 = 1e-30;
    fn to_f64(self) -> f64 {
        self as f64
    }
    fn from_f64(v: f64) -> Self {
        v as f32
    }
    fn bits(self) -> u64 {
        self.to_bits() as u64
    }
}

impl Ty for f64 {
    const NAME: &'static str = "f64";
    const U: f64 = 1.110_223_024_625_156_5e-16; // 2^-53
    const TINY: f64 = 1e-300;
    fn to_f64(self) -> f64 {
        self
    }
    fn from_f64(v: f64) -> Self {
        v
    }
    fn bits(self) -> u64 {
        self.to_bits()
    }
}

/// A float as request text: shortest round-trip digits of its own type, or the special strings.
fn num<T: Ty>(v: T) -> String {
    let f = v.to_f64();
    if f.is_nan() {
        "\"nan\"".into()
    } else if f == f64::INFINITY {
        "\"inf\"".into()
    } else if f == f64::NEG_INFINITY {
        "\"-inf\"".into()
    } else {
        format!("{v:e}")
    }
}

fn arr<T: Ty>(xs: &[T]) -> String {
    let items: Vec<String> = xs.iter().map(|&v| num(v)).collect();
    format!("[{}]", items.join(","))
}

fn bools(m: &[bool]) -> String {
    let items: Vec<&str> = m
        .iter()
        .map(|&b| if b { "true" } else { "false" })
        .collect();
    format!("[{}]", items.join(","))
}

/// One family case.
#[derive(Clone, Debug)]
struct Case<T> {
    rows: usize,
    n: usize,
    /// Write the shape as `[N]` (only with one row).
    flat: bool,
    x: Vec<T>,
    mask: Option<Vec<bool>>,
    tau: Option<T>,
    dy: Option<Vec<T>>,
}

impl<T: Ty> Case<T> {
    fn new(rows: usize, n: usize, x: Vec<T>) -> Self {
        assert_eq!(x.len(), rows * n);
        Case {
            rows,
            n,
            flat: false,
            x,
            mask: None,
            tau: None,
            dy: None,
        }
    }

    fn row(x: Vec<T>) -> Self {
        let n = x.len();
        Case {
            flat: true,
            ..Case::new(1, n, x)
        }
    }

    fn mask(mut self, m: Vec<bool>) -> Self {
        self.mask = Some(m);
        self
    }

    fn tau(mut self, t: T) -> Self {
        self.tau = Some(t);
        self
    }

    fn dy(mut self, dy: Vec<T>) -> Self {
        self.dy = Some(dy);
        self
    }

    fn tau_f64(&self) -> f64 {
        self.tau.map_or(1.0, Ty::to_f64)
    }

    fn keep(&self, i: usize) -> bool {
        self.mask.as_ref().is_none_or(|m| m[i])
    }

    fn line(&self, id: usize, op: &str) -> String {
        let shape = if self.flat {
            format!("[{}]", self.n)
        } else {
            format!("[{},{}]", self.rows, self.n)
        };
        let mut s = format!(
            "{{\"id\":{id},\"op\":\"{op}\",\"dtype\":\"{}\",\"shape\":{shape},\"x\":{}",
            T::NAME,
            arr(&self.x)
        );
        if let Some(t) = self.tau {
            s.push_str(&format!(",\"temperature\":{}", num(t)));
        }
        if let Some(m) = &self.mask {
            s.push_str(&format!(",\"mask\":{}", bools(m)));
        }
        if let Some(dy) = self.dy.as_ref().filter(|_| op.ends_with("_vjp")) {
            s.push_str(&format!(",\"dy\":{}", arr(dy)));
        }
        s.push('}');
        s
    }

    /// The reference of row `r`.
    fn reference(&self, r: usize) -> Ref {
        let range = r * self.n..(r + 1) * self.n;
        let x: Vec<f64> = self.x[range.clone()].iter().map(|v| v.to_f64()).collect();
        let keep: Vec<bool> = range.map(|i| self.keep(i)).collect();
        reference(&x, &keep, self.tau_f64())
    }
}

// ------------------------------------------------------------------------------------------------
// The naive f64 reference
// ------------------------------------------------------------------------------------------------

/// Neumaier's compensated sum, so the reference's sums are good to a few ulp of f64.
fn sum(values: impl IntoIterator<Item = f64>) -> f64 {
    let (mut s, mut c) = (0.0f64, 0.0f64);
    for v in values {
        let t = s + v;
        c += if s.abs() >= v.abs() {
            (s - t) + v
        } else {
            (v - t) + s
        };
        s = t;
    }
    s + c
}

/// Everything the family computes for one row, in f64, from the definitions.
#[derive(Clone, Debug)]
struct Ref {
    /// softmax(x/τ); masked entries 0.
    p: Vec<f64>,
    /// log_softmax(x/τ).
    logp: Vec<f64>,
    lse: f64,
    /// Entropy in nats.
    h: f64,
    sparse: Vec<f64>,
    /// (x − max)/τ for kept finite entries, `-inf` elsewhere (for the error bounds).
    d: Vec<f64>,
    /// max/τ.
    m: f64,
    /// Entries that take part: kept and not `-inf` (the VJPs' non-constants).
    live: Vec<bool>,
}

fn reference(x: &[f64], keep: &[bool], tau: f64) -> Ref {
    let n = x.len();
    let live: Vec<bool> = (0..n)
        .map(|i| keep[i] && x[i] != f64::NEG_INFINITY)
        .collect();
    let nan = (0..n).any(|i| keep[i] && x[i].is_nan());
    let k_inf = (0..n).filter(|&i| keep[i] && x[i] == f64::INFINITY).count();
    let mx = (0..n)
        .filter(|&i| keep[i])
        .map(|i| x[i])
        .fold(f64::NEG_INFINITY, f64::max);
    let neg = vec![f64::NEG_INFINITY; n];
    if nan {
        let v = vec![f64::NAN; n];
        return Ref {
            p: v.clone(),
            logp: v.clone(),
            lse: f64::NAN,
            h: f64::NAN,
            sparse: v,
            d: neg,
            m: f64::NAN,
            live,
        };
    }
    if k_inf > 0 {
        // The limit: mass shared evenly by the +inf entries.
        let k = k_inf as f64;
        let on = |i: usize| keep[i] && x[i] == f64::INFINITY;
        let p: Vec<f64> = (0..n).map(|i| if on(i) { 1.0 / k } else { 0.0 }).collect();
        let logp = (0..n)
            .map(|i| if on(i) { -k.ln() } else { f64::NEG_INFINITY })
            .collect();
        return Ref {
            sparse: p.clone(),
            p,
            logp,
            lse: f64::INFINITY,
            h: k.ln(),
            d: neg,
            m: f64::INFINITY,
            live,
        };
    }
    if mx == f64::NEG_INFINITY {
        // Nothing allowed.
        return Ref {
            p: vec![0.0; n],
            logp: neg.clone(),
            lse: f64::NEG_INFINITY,
            h: 0.0,
            sparse: vec![0.0; n],
            d: neg,
            m: f64::NEG_INFINITY,
            live,
        };
    }
    let d: Vec<f64> = (0..n)
        .map(|i| {
            if live[i] {
                (x[i] - mx) / tau
            } else {
                f64::NEG_INFINITY
            }
        })
        .collect();
    let e: Vec<f64> = d.iter().map(|&v| v.exp()).collect();
    // ln Σ e^d = ln(1 + rest), rest = the sum without one maximal entry.
    let first_max = (0..n).find(|&i| d[i] == 0.0).expect("a maximal entry");
    let rest = sum((0..n).filter(|&i| i != first_max).map(|i| e[i]));
    let ls = rest.ln_1p();
    let s = 1.0 + rest;
    let p: Vec<f64> = e.iter().map(|&v| v / s).collect();
    let logp: Vec<f64> = d.iter().map(|&v| v - ls).collect();
    let h = sum((0..n).filter(|&i| p[i] > 0.0).map(|i| -p[i] * logp[i]));
    Ref {
        sparse: sparsemax_ref(&d),
        p,
        logp,
        lse: mx / tau + ls,
        h,
        d,
        m: mx / tau,
        live,
    }
}

/// Sparsemax by sorting (Martins & Astudillo 2016, Algorithm 1), on the shifted logits.
fn sparsemax_ref(d: &[f64]) -> Vec<f64> {
    let mut z: Vec<f64> = d.iter().copied().filter(|v| v.is_finite()).collect();
    z.sort_by(|a, b| b.total_cmp(a));
    let (mut cum, mut support_sum, mut k) = (0.0, 0.0, 0usize);
    for (j, &zj) in z.iter().enumerate() {
        cum += zj;
        if 1.0 + (j as f64 + 1.0) * zj > cum {
            k = j + 1;
            support_sum = cum;
        }
    }
    let thr = (support_sum - 1.0) / k as f64;
    d.iter()
        .map(|&v| {
            if v.is_finite() {
                (v - thr).max(0.0)
            } else {
                0.0
            }
        })
        .collect()
}

/// Σ dy ⊙ g(x) over the live entries, g = softmax or log_softmax: the function the VJPs
/// differentiate.
fn objective(x: &[f64], keep: &[bool], tau: f64, dy: &[f64], log: bool) -> f64 {
    let r = reference(x, keep, tau);
    sum((0..x.len())
        .filter(|&i| r.live[i])
        .map(|i| dy[i] * if log { r.logp[i] } else { r.p[i] }))
}

/// Central finite differences of [`objective`] in f64 for the live entries; 0 for the others.
fn finite_difference(
    x: &[f64],
    keep: &[bool],
    tau: f64,
    dy: &[f64],
    log: bool,
    rel_step: f64,
) -> Vec<f64> {
    let r = reference(x, keep, tau);
    (0..x.len())
        .map(|j| {
            if !r.live[j] {
                return 0.0;
            }
            let h = rel_step * tau;
            let (mut xp, mut xm) = (x.to_vec(), x.to_vec());
            xp[j] += h;
            xm[j] -= h;
            let step = xp[j] - xm[j];
            (objective(&xp, keep, tau, dy, log) - objective(&xm, keep, tau, dy, log)) / step
        })
        .collect()
}

// ------------------------------------------------------------------------------------------------
// Comparison with error bounds
// ------------------------------------------------------------------------------------------------

/// `got` against `want` within `tol`; NaN must be NaN, infinities exact.
fn close(what: &str, got: f64, want: f64, tol: f64) {
    if want.is_nan() {
        assert!(got.is_nan(), "{what}: got {got:e}, want NaN");
    } else if want.is_infinite() {
        assert_eq!(got, want, "{what}");
    } else {
        assert!(
            (got - want).abs() <= tol,
            "{what}: got {got:e}, want {want:e}, |error| {:e} > tol {tol:e}",
            (got - want).abs()
        );
    }
}

/// τ = 1 or a power of two: `(x − max)/τ` is exact (the shift is exact in softmax-core and
/// dividing by a power of two only moves the exponent), so no temperature term applies.
fn tau_exact(tau: f64) -> bool {
    tau > 0.0 && tau.is_finite() && tau.to_bits() & ((1u64 << 52) - 1) == 0
}

/// Extra relative error of `e^{d_i}` from rounding the quotient `d_i = (x_i − max)/τ` once in
/// the dtype (softmax-core divides the exact shift once): `U·|d_i|`.
fn tau_term<T: Ty>(r: &Ref, tau: f64, i: usize) -> f64 {
    if tau_exact(tau) || !r.d[i].is_finite() {
        0.0
    } else {
        T::U * r.d[i].abs()
    }
}

/// Σ_j p_j·U·|d_j|: how far the rounded quotients move the normaliser, relative.
fn tau_norm_term<T: Ty>(r: &Ref, tau: f64) -> f64 {
    sum((0..r.d.len()).map(|j| r.p[j] * tau_term::<T>(r, tau, j)))
}

/// Relative error bounds (documented by softmax-core for f32 and used here as they stand;
/// for f64 the same number of units of roundoff, with a margin for the reference's own error).
struct Bounds {
    /// softmax outputs >= 1e-30: 2e-6 relative (f32).
    softmax_rel: f64,
    /// entropy: 1e-5 relative (f32).
    entropy_rel: f64,
}

fn bounds<T: Ty>() -> Bounds {
    if T::NAME == "f32" {
        Bounds {
            softmax_rel: 2e-6,
            entropy_rel: 1e-5,
        }
    } else {
        // f64: the reference itself (std exp/ln, compensated sums) is good to a few 1e-16;
        // 1e-13 is 10^7 times tighter than any f32 computation could meet, so an f32 detour
        // anywhere in the f64 path fails it.
        Bounds {
            softmax_rel: 1e-13,
            entropy_rel: 1e-13,
        }
    }
}

/// Checks one forward op's answer for a case against the reference, row by row.
fn check_forward<T: Ty>(op: &str, case: &Case<T>, ans: &Answer) {
    let tau = case.tau_f64();
    let b = bounds::<T>();
    let u = T::U;
    let per_row = matches!(op, "logsumexp" | "entropy");
    let got: Vec<f64> = ans.floats::<T>("y").iter().map(|v| v.to_f64()).collect();
    assert_eq!(
        got.len(),
        if per_row {
            case.rows
        } else {
            case.rows * case.n
        },
        "{op}: {}",
        ans.raw
    );
    for r in 0..case.rows {
        let rf = case.reference(r);
        let norm = tau_norm_term::<T>(&rf, tau);
        let what = |i: usize| format!("{op} {} row {r} entry {i} (case {case:?})", T::NAME);
        match op {
            "softmax" => {
                for i in 0..case.n {
                    let p = rf.p[i];
                    // softmax-core: outputs >= 1e-30 within 2e-6 relative (f32); below, the
                    // same bound at 1e-30 (relative accuracy fades into the subnormals).
                    let rel = b.softmax_rel + tau_term::<T>(&rf, tau, i) + norm;
                    close(&what(i), got[r * case.n + i], p, rel * p.max(T::TINY));
                }
            }
            "log_softmax" => {
                for i in 0..case.n {
                    let y = rf.logp[i];
                    // y = d − ln Σ with d exact: one rounding of the difference (U·|y|) plus
                    // the error of ln Σ (Σ compensated, ln <= 1 ulp: a few U absolute), so
                    // 4U·(|y| + 1), which is softmax-core's documented 2⁻²³·(|y| + 1)·2 for
                    // f32. A rounded quotient d_i moves y_i by U·|d_i| and ln Σ by the
                    // normaliser term.
                    let tol = 4.0 * u * (y.abs() + 1.0)
                        + (tau_term::<T>(&rf, tau, i) + norm)
                        + if T::NAME == "f64" {
                            1e-13 * (y.abs() + 1.0)
                        } else {
                            0.0
                        };
                    close(&what(i), got[r * case.n + i], y, tol);
                }
            }
            "logsumexp" => {
                // lse = max/τ + ln Σ: documented 2 ULP + 2⁻²³·|max| for f32, i.e. the
                // rounding of max/τ and of the sum (U·|lse| each) and ln Σ's few U absolute.
                let tol = 4.0 * u * (rf.lse.abs() + rf.m.abs() + 1.0)
                    + norm
                    + if T::NAME == "f64" {
                        1e-13 * (rf.lse.abs() + 1.0)
                    } else {
                        0.0
                    };
                close(&what(0), got[r], rf.lse, tol);
            }
            "entropy" => {
                // Documented: relative error <= 1e-5 (f32). H = ln Σ + E[-d] is a sum of two
                // non-negative terms, so rounding errors stay relative to H. Rounded
                // quotients move H by at most Σ p_j·|d_j − E d|·U·|d_j|. Entries with
                // p_j < TINY (exp underflowing, or subnormal with little precision) may be lost
                // entirely: at most p_j·(1 + |log p_j|) each.
                let lost = sum((0..case.n)
                    .filter(|&j| rf.p[j] > 0.0 && rf.p[j] < T::TINY)
                    .map(|j| rf.p[j] * (1.0 + rf.logp[j].abs())));
                let ed = sum((0..case.n)
                    .filter(|&j| rf.p[j] > 0.0)
                    .map(|j| rf.p[j] * rf.d[j]));
                let t = sum((0..case.n)
                    .filter(|&j| rf.p[j] > 0.0)
                    .map(|j| rf.p[j] * (rf.d[j] - ed).abs() * tau_term::<T>(&rf, tau, j)));
                close(
                    &what(0),
                    got[r],
                    rf.h,
                    b.entropy_rel * rf.h.abs() + t + lost,
                );
            }
            "sparsemax" => {
                // Documented: absolute error about 2⁻²³·(1 + |x_i − max|) (f32): the threshold
                // is a compensated sum of support entries over k, each output one difference.
                let dmax = (0..case.n)
                    .filter(|&j| rf.sparse[j] > 0.0)
                    .map(|j| rf.d[j].abs())
                    .fold(0.0, f64::max);
                for i in 0..case.n {
                    let di = if rf.d[i].is_finite() {
                        rf.d[i].abs()
                    } else {
                        0.0
                    };
                    let mut tol = 4.0 * u * (1.0 + di.max(dmax));
                    if !tau_exact(tau) {
                        tol += u * (di + dmax) * 2.0;
                    }
                    close(&what(i), got[r * case.n + i], rf.sparse[i], tol);
                }
            }
            _ => unreachable!("{op}"),
        }
    }
}

/// Checks a VJP answer against central finite differences of the reference (and masked / `-inf`
/// entries against exactly 0).
fn check_vjp<T: Ty>(op: &str, case: &Case<T>, ans: &Answer) {
    let log = op == "log_softmax_vjp";
    let tau = case.tau_f64();
    let u = T::U;
    let b = bounds::<T>();
    let dy_all: Vec<f64> = case
        .dy
        .as_ref()
        .expect("dy")
        .iter()
        .map(|v| v.to_f64())
        .collect();
    let got: Vec<f64> = ans.floats::<T>("dx").iter().map(|v| v.to_f64()).collect();
    assert_eq!(got.len(), case.rows * case.n);
    for r in 0..case.rows {
        let range = r * case.n..(r + 1) * case.n;
        let x: Vec<f64> = case.x[range.clone()].iter().map(|v| v.to_f64()).collect();
        let keep: Vec<bool> = range.clone().map(|i| case.keep(i)).collect();
        let dy = &dy_all[range];
        let rf = reference(&x, &keep, tau);
        assert!(rf.p.iter().all(|p| p.is_finite()), "FD needs finite rows");
        let fd = finite_difference(
            &x,
            &keep,
            tau,
            dy,
            log,
            if T::NAME == "f32" { 1e-4 } else { 1e-5 },
        );
        let abs_dy = sum((0..case.n).filter(|&j| rf.live[j]).map(|j| dy[j].abs()));
        let lmax = (0..case.n)
            .filter(|&j| rf.live[j])
            .map(|j| rf.logp[j].abs())
            .fold(0.0, f64::max);
        // Central differences: truncation h²/6·|f'''| with h = 1e-4·τ (f32) or 1e-5·τ (f64)
        // and |f'''| <= a few Σ|dy|/τ³, plus cancellation 2⁻⁵³·|f|/h; 2e-8 and 2e-9 of
        // Σ|dy|·(1 + max|log p|)/τ bound both with a wide margin.
        let fd_tol = if T::NAME == "f32" { 2e-8 } else { 2e-9 } * abs_dy * (1.0 + lmax) / tau;
        let norm = tau_norm_term::<T>(&rf, tau);
        let dot = sum((0..case.n).filter(|&j| rf.live[j]).map(|j| rf.p[j] * dy[j]));
        for i in 0..case.n {
            let what = format!("{op} {} row {r} entry {i} (case {case:?})", T::NAME);
            let g = got[r * case.n + i];
            if !rf.live[i] {
                assert_eq!(g, 0.0, "{what}: masked / -inf entries are constants");
                continue;
            }
            let p = rf.p[i];
            let tol = if log {
                // dx = (dy − e^y·Σdy)/τ: e^y carries y's absolute error (4U·(|y| + 1) plus
                // the temperature terms) as a relative error, plus one ulp of exp; Σ dy is
                // compensated; a few roundings of the result.
                let ay = 4.0 * u * (rf.logp[i].abs() + 1.0) + tau_term::<T>(&rf, tau, i) + norm;
                (p * abs_dy * (ay + 4.0 * u) + 4.0 * u * dy[i].abs()) / tau
                    + if T::NAME == "f64" {
                        1e-13 * abs_dy / tau
                    } else {
                        0.0
                    }
            } else {
                // dx = y·(dy − ⟨y, dy⟩)/τ: y has the softmax bound (relative), the dot
                // product inherits it, a few roundings of the result.
                let ry = b.softmax_rel + tau_term::<T>(&rf, tau, i) + norm;
                (ry * p * (dy[i].abs() + dot.abs())
                    + p * (b.softmax_rel + norm) * abs_dy
                    + 4.0 * u * p * (dy[i].abs() + dot.abs()))
                    / tau
            };
            close(&what, g, fd[i], tol + fd_tol);
        }
    }
}

/// Runs every forward op on every case in one process and checks the answers.
fn check_forward_ops<T: Ty>(cases: &[Case<T>]) {
    let ops = [
        "softmax",
        "log_softmax",
        "logsumexp",
        "entropy",
        "sparsemax",
    ];
    let mut lines = Vec::new();
    for (c, case) in cases.iter().enumerate() {
        for (o, op) in ops.iter().enumerate() {
            lines.push(case.line(c * ops.len() + o, op));
        }
    }
    let answers = run(&lines);
    for (c, case) in cases.iter().enumerate() {
        for (o, op) in ops.iter().enumerate() {
            let a = &answers[c * ops.len() + o];
            a.assert_id(&(c * ops.len() + o).to_string());
            check_forward(op, case, a);
        }
    }
}

fn check_vjp_ops<T: Ty>(cases: &[Case<T>]) {
    let ops = ["softmax_vjp", "log_softmax_vjp"];
    let mut lines = Vec::new();
    for (c, case) in cases.iter().enumerate() {
        for (o, op) in ops.iter().enumerate() {
            lines.push(case.line(c * 2 + o, op));
        }
    }
    let answers = run(&lines);
    for (c, case) in cases.iter().enumerate() {
        for (o, op) in ops.iter().enumerate() {
            check_vjp(op, case, &answers[c * 2 + o]);
        }
    }
}

// ------------------------------------------------------------------------------------------------
// Random cases
// ------------------------------------------------------------------------------------------------

/// SplitMix64: a small deterministic generator, so failures reproduce.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1).
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    /// Roughly normal (sum of uniforms), scaled.
    fn normal(&mut self, scale: f64) -> f64 {
        let s: f64 = (0..4).map(|_| self.unit()).sum::<f64>() - 2.0;
        s * 1.7 * scale
    }
}

const TAUS: [f64; 7] = [1.0, 0.5, 0.25, 2.0, 4.0, 0.3, 3.7];

/// Random finite cases: several row lengths (around the 16-lane chunking), one or more rows,
/// logits at several scales, masks with some rows fully masked, `-inf` entries, temperatures
/// below and above 1 (powers of two and not).
fn random_cases<T: Ty>(seed: u64, count: usize, with_dy: bool) -> Vec<Case<T>> {
    let mut rng = Rng(seed);
    let ns = [1usize, 2, 3, 7, 15, 16, 17, 31, 33, 64, 100, 257];
    (0..count)
        .map(|c| {
            let n = ns[c % ns.len()];
            let rows = 1 + rng.below(4);
            let scale = [0.5, 3.0, 20.0][rng.below(3)];
            let offset = [0.0, 50.0, -1000.0][rng.below(3)];
            let x: Vec<T> = (0..rows * n)
                .map(|_| {
                    if rng.below(40) == 0 {
                        T::from_f64(f64::NEG_INFINITY)
                    } else {
                        T::from_f64(offset + rng.normal(scale))
                    }
                })
                .collect();
            let mut case = Case::new(rows, n, x);
            if rows == 1 && rng.below(2) == 0 {
                case.flat = true;
            }
            if rng.below(2) == 0 {
                let masked_row = if rows > 1 {
                    rng.below(rows)
                } else {
                    usize::MAX
                };
                let m = (0..rows * n)
                    .map(|i| i / n != masked_row && rng.below(5) != 0)
                    .collect();
                case = case.mask(m);
            }
            let tau = TAUS[c % TAUS.len()];
            if tau != 1.0 || rng.below(2) == 0 {
                case = case.tau(T::from_f64(tau));
            }
            if with_dy {
                let dy = (0..rows * n)
                    .map(|_| T::from_f64(rng.normal(1.0)))
                    .collect();
                case = case.dy(dy);
            }
            case
        })
        .collect()
}

// ------------------------------------------------------------------------------------------------
// Accuracy against the reference
// ------------------------------------------------------------------------------------------------

#[test]
fn forward_ops_match_reference_f32() {
    check_forward_ops(&random_cases::<f32>(1, 120, false));
}

#[test]
fn forward_ops_match_reference_f64() {
    check_forward_ops(&random_cases::<f64>(2, 120, false));
}

#[test]
fn vjps_match_finite_differences_f32() {
    check_vjp_ops(&random_cases::<f32>(3, 100, true));
}

#[test]
fn vjps_match_finite_differences_f64() {
    check_vjp_ops(&random_cases::<f64>(4, 100, true));
}

#[test]
fn multi_row_masks_and_temperatures() {
    // Two rows of 5, one mask, τ below and above 1, with values checked against the reference
    // (and the masked entries' NaN / huge values must not matter).
    for tau in [0.25f32, 0.7, 3.0] {
        let x = vec![
            1.0f32,
            f32::NAN,
            3.0,
            -2.0,
            0.5, //
            1e30,
            7.0,
            7.0,
            f32::INFINITY,
            -7.0,
        ];
        let mask = vec![
            true, false, true, true, true, //
            false, true, true, false, true,
        ];
        let case = Case::new(2, 5, x).mask(mask).tau(tau);
        check_forward_ops(std::slice::from_ref(&case));
        let dy = vec![
            0.5f32,
            f32::NAN,
            -1.0,
            2.0,
            0.25,
            1e30,
            1.0,
            -3.0,
            f32::NAN,
            0.5,
        ];
        check_vjp_ops(&[case.dy(dy)]);
    }
}

#[test]
fn f64_is_computed_in_f64() {
    // A logit gap of 1e-10 vanishes in f32 (e^(−1e-10) rounds to 1) but not in f64.
    let f64_line = Case::<f64>::row(vec![0.0, 1e-10]).line(1, "softmax");
    let f32_line = Case::<f32>::row(vec![0.0, 1e-10]).line(2, "softmax");
    let a = run(&[f64_line, f32_line]);
    let y64 = a[0].floats::<f64>("y");
    let want = 1.0 / (1.0 + 1e-10f64.exp());
    assert!((y64[0] - want).abs() <= 1e-16, "{y64:?}");
    assert!(y64[0] < 0.5 && y64[1] > 0.5);
    assert_eq!(a[1].floats::<f32>("y"), [0.5, 0.5]);
    // 0.1 round-trips in each dtype, parsed from the text straight into it.
    let a = run(&[
        r#"{"id":1,"op":"logsumexp","x":[0.1],"shape":[1],"dtype":"f64"}"#.into(),
        r#"{"id":2,"op":"logsumexp","x":[0.1],"shape":[1]}"#.into(),
    ]);
    assert_eq!(a[0].floats::<f64>("y")[0].to_bits(), 0.1f64.to_bits());
    assert_eq!(a[1].floats::<f32>("y")[0].to_bits(), 0.1f32.to_bits());
}

// ------------------------------------------------------------------------------------------------
// Number text: parsing and formatting
// ------------------------------------------------------------------------------------------------

#[test]
fn f32_inputs_are_rounded_once_from_the_decimal_text() {
    // Just above the midpoint between 1 and the next f32: correct rounding gives 1 + 2^-23;
    // going through f64 first lands exactly on the midpoint and then rounds to even, 1.0.
    let text = "1.00000005960464477539062500000001";
    let via_f64 = text.parse::<f64>().unwrap() as f32;
    assert_eq!(via_f64, 1.0, "the test input must expose double rounding");
    let a = run1(&format!(
        r#"{{"id":1,"op":"logsumexp","x":[{text}],"shape":[1]}}"#
    ));
    // logsumexp of one entry is that entry, exactly (ln 1 = 0).
    assert_eq!(a.floats::<f32>("y")[0].to_bits(), 0x3f80_0001);
    // Beyond the range of the dtype a number rounds to infinity, as IEEE conversion does.
    let a = run1(r#"{"id":1,"op":"softmax","x":[1e39,0,-1e39],"shape":[3]}"#);
    assert_eq!(a.floats::<f32>("y"), [1.0, 0.0, 0.0]);
}

/// The shortest decimal: no decimal with fewer significant digits parses to the same value.
fn assert_shortest<T: Ty>(text: &str, v: T) {
    let mantissa = text.trim_start_matches('-').split('e').next().unwrap();
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let digits = digits.trim_start_matches('0').trim_end_matches('0');
    let k = digits.len().max(1);
    if k == 1 {
        return;
    }
    // The closest (k−1)-digit decimals to v are the correctly rounded one and its neighbours.
    let shorter = format!("{:.*e}", k - 2, v.to_f64());
    let (m, e) = shorter.split_once('e').unwrap();
    let m: f64 = m.parse().unwrap();
    let unit = 10f64.powi(-(k as i32 - 2));
    for c in [m - unit, m, m + unit] {
        let cand = format!("{c:.*}e{e}", k - 2);
        if let Some(p) = T::parse(&cand) {
            assert_ne!(
                p.bits(),
                v.bits(),
                "{text} is not shortest: {cand} parses to the same value"
            );
        }
    }
}

fn identity_round_trip<T: Ty>(values: &[T]) {
    // logsumexp of a single entry is that entry exactly, so the answer must carry its bits.
    let lines: Vec<String> = values
        .iter()
        .enumerate()
        .map(|(i, &v)| Case::row(vec![v]).line(i, "logsumexp"))
        .collect();
    let answers = run(&lines);
    for (a, &v) in answers.iter().zip(values) {
        let got = a.floats::<T>("y")[0];
        if v.to_f64() == 0.0 {
            assert_eq!(got.to_f64(), 0.0);
        } else {
            assert_eq!(got.bits(), v.bits(), "{} for {v:e}", a.raw);
        }
        if got.to_f64().is_finite() {
            let text = a.fields["y"][0].as_number().unwrap().as_str().to_string();
            assert_shortest(&text, got);
        }
    }
}

#[test]
fn output_floats_round_trip_and_are_shortest() {
    let mut rng = Rng(7);
    let mut f32s: Vec<f32> = vec![
        1e-45,
        -1e-45,
        1.1754942e-38,
        1.1754944e-38,
        f32::MAX,
        -f32::MAX,
        3.4e38,
        0.1,
        1.0,
        -1.0,
        1e-5,
        9.999999e-6,
        1e16,
        9.999999e15,
        123456.79,
        16777216.0,
        16777218.0,
        0.0,
        f32::INFINITY,
        f32::NEG_INFINITY,
    ];
    while f32s.len() < 1500 {
        let v = f32::from_bits(rng.next() as u32);
        if !v.is_nan() {
            f32s.push(v);
        }
    }
    identity_round_trip(&f32s);
    let mut f64s: Vec<f64> = vec![
        5e-324,
        -5e-324,
        2.2250738585072014e-308,
        f64::MAX,
        -f64::MAX,
        0.1,
        1.0,
        1e16,
        1e-5,
        0.0,
    ];
    while f64s.len() < 1500 {
        let v = f64::from_bits(rng.next());
        if !v.is_nan() {
            f64s.push(v);
        }
    }
    identity_round_trip(&f64s);
}

#[test]
fn nan_inputs_and_outputs_use_strings() {
    let a = run1(r#"{"id":1,"op":"softmax","x":["nan",1],"shape":[2]}"#);
    assert!(a.raw.ends_with(r#""y":["nan","nan"]}"#), "{}", a.raw);
    let a = run1(r#"{"id":1,"op":"log_softmax","x":["-inf","inf",0],"shape":[3]}"#);
    let y = a.floats::<f32>("y");
    assert_eq!(y[0], f32::NEG_INFINITY);
    assert_eq!(y[1], 0.0); // −ln 1
    assert_eq!(y[2], f32::NEG_INFINITY);
    assert!(a.raw.contains(r#"["-inf","#), "{}", a.raw);
}

// ------------------------------------------------------------------------------------------------
// Edge rows with the exact answers CONFORMANCE.md prescribes
// ------------------------------------------------------------------------------------------------

/// `ln k` rounded to the dtype, allowing the 1 ulp softmax-core's ln may be off by.
fn assert_ln<T: Ty>(what: &str, got: T, k: f64, sign: f64) {
    let want = T::from_f64(sign * k.ln());
    let diff = (got.bits() as i64 - want.bits() as i64).abs();
    assert!(diff <= 1, "{what}: got {got:e}, want {want:e} (±1 ulp)");
}

/// One expected output: a value (compared after rounding to the dtype, NaN as NaN), or ±ln k
/// (to 1 ulp).
#[derive(Clone, Copy, Debug)]
enum E {
    /// Exactly this value rounded to the dtype.
    V(f64),
    /// A computed value: within 40 U relative + 4 U absolute (f32: 2.4e-6 relative, the
    /// softmax bound with a margin for the rounding of the expected value itself).
    A(f64),
    /// −ln k.
    NegLn(f64),
    /// +ln k.
    Ln(f64),
}

fn check_exact<T: Ty>(what: &str, got: &[T], want: &[E]) {
    assert_eq!(got.len(), want.len(), "{what}");
    for (i, (&g, w)) in got.iter().zip(want).enumerate() {
        let what = format!("{what} [{i}]");
        match *w {
            E::V(v) if v.is_nan() => assert!(g.to_f64().is_nan(), "{what}: got {g:e}, want NaN"),
            E::V(v) => assert_eq!(g.to_f64(), T::from_f64(v).to_f64(), "{what}"),
            E::A(v) => close(&what, g.to_f64(), v, 40.0 * T::U * v.abs() + 4.0 * T::U),
            E::NegLn(k) => assert_ln(&what, g, k, -1.0),
            E::Ln(k) => assert_ln(&what, g, k, 1.0),
        }
    }
}

/// Expected answers of the forward ops and VJPs for one row.
struct Edge<T> {
    case: Case<T>,
    softmax: Vec<E>,
    log_softmax: Vec<E>,
    logsumexp: E,
    entropy: E,
    sparsemax: Vec<E>,
    /// With `case.dy`.
    softmax_vjp: Vec<E>,
    log_softmax_vjp: Vec<E>,
}

fn run_edges<T: Ty>(edges: &[Edge<T>]) {
    let ops = [
        "softmax",
        "log_softmax",
        "logsumexp",
        "entropy",
        "sparsemax",
        "softmax_vjp",
        "log_softmax_vjp",
    ];
    let mut lines = Vec::new();
    for (e, edge) in edges.iter().enumerate() {
        for op in ops {
            lines.push(edge.case.line(e, op));
        }
    }
    let answers = run(&lines);
    for (e, edge) in edges.iter().enumerate() {
        let a = &answers[e * ops.len()..(e + 1) * ops.len()];
        let what = |op: &str| format!("{op} {} on {:?}", T::NAME, edge.case);
        check_exact(&what("softmax"), &a[0].floats::<T>("y"), &edge.softmax);
        check_exact(
            &what("log_softmax"),
            &a[1].floats::<T>("y"),
            &edge.log_softmax,
        );
        check_exact(
            &what("logsumexp"),
            &a[2].floats::<T>("y"),
            &[edge.logsumexp],
        );
        check_exact(&what("entropy"), &a[3].floats::<T>("y"), &[edge.entropy]);
        check_exact(&what("sparsemax"), &a[4].floats::<T>("y"), &edge.sparsemax);
        check_exact(
            &what("softmax_vjp"),
            &a[5].floats::<T>("dx"),
            &edge.softmax_vjp,
        );
        check_exact(
            &what("log_softmax_vjp"),
            &a[6].floats::<T>("dx"),
            &edge.log_softmax_vjp,
        );
    }
}

fn v(xs: &[f64]) -> Vec<E> {
    xs.iter().map(|&x| E::V(x)).collect()
}

fn a(xs: &[f64]) -> Vec<E> {
    xs.iter().map(|&x| E::A(x)).collect()
}

const INF: f64 = f64::INFINITY;
const NAN: f64 = f64::NAN;

/// Rows with nothing allowed, NaN, and +inf entries: the same for both dtypes.
fn special_edges<T: Ty>() -> Vec<Edge<T>> {
    let t = T::from_f64;
    let ln2 = std::f64::consts::LN_2;
    vec![
        // All -inf: zeros / -inf / -inf / 0; VJPs zeros.
        Edge {
            case: Case::row(vec![t(-INF); 3]).dy(vec![t(1.0), t(2.0), t(3.0)]),
            softmax: v(&[0.0; 3]),
            log_softmax: v(&[-INF; 3]),
            logsumexp: E::V(-INF),
            entropy: E::V(0.0),
            sparsemax: v(&[0.0; 3]),
            softmax_vjp: v(&[0.0; 3]),
            log_softmax_vjp: v(&[0.0; 3]),
        },
        // Everything masked, whatever the values (NaN and +inf included).
        Edge {
            case: Case::row(vec![t(1.0), t(NAN), t(INF)])
                .mask(vec![false; 3])
                .dy(vec![t(1.0), t(NAN), t(3.0)]),
            softmax: v(&[0.0; 3]),
            log_softmax: v(&[-INF; 3]),
            logsumexp: E::V(-INF),
            entropy: E::V(0.0),
            sparsemax: v(&[0.0; 3]),
            softmax_vjp: v(&[0.0; 3]),
            log_softmax_vjp: v(&[0.0; 3]),
        },
        // A masked NaN is -inf: this row is [1, -inf, 1] in effect.
        Edge {
            case: Case::row(vec![t(1.0), t(NAN), t(1.0)])
                .mask(vec![true, false, true])
                .dy(vec![t(1.0), t(NAN), t(3.0)]),
            softmax: v(&[0.5, 0.0, 0.5]),
            log_softmax: vec![E::NegLn(2.0), E::V(-INF), E::NegLn(2.0)],
            logsumexp: E::V(1.0 + ln2),
            entropy: E::Ln(2.0),
            sparsemax: v(&[0.5, 0.0, 0.5]),
            // p = [½, 0, ½], ⟨p, dy⟩ = 2: dx = p·(dy − 2) = [−½, 0, ½].
            softmax_vjp: v(&[-0.5, 0.0, 0.5]),
            // dx = dy − p·Σdy = [1 − 2, 0, 3 − 2].
            log_softmax_vjp: v(&[-1.0, 0.0, 1.0]),
        },
        // NaN poisons its row: every output NaN, the -inf entry's included.
        Edge {
            case: Case::row(vec![t(1.0), t(NAN), t(-INF), t(2.0)]).dy(vec![t(1.0); 4]),
            softmax: v(&[NAN; 4]),
            log_softmax: v(&[NAN; 4]),
            logsumexp: E::V(NAN),
            entropy: E::V(NAN),
            sparsemax: v(&[NAN; 4]),
            softmax_vjp: v(&[NAN; 4]),
            log_softmax_vjp: v(&[NAN; 4]),
        },
        // NaN beats +inf.
        Edge {
            case: Case::row(vec![t(INF), t(NAN)]).dy(vec![t(1.0); 2]),
            softmax: v(&[NAN; 2]),
            log_softmax: v(&[NAN; 2]),
            logsumexp: E::V(NAN),
            entropy: E::V(NAN),
            sparsemax: v(&[NAN; 2]),
            softmax_vjp: v(&[NAN; 2]),
            log_softmax_vjp: v(&[NAN; 2]),
        },
        // k = 3 entries +inf (one of them masked out, one -inf present): mass 1/2 each on the
        // two kept +inf; logsumexp +inf; entropy ln 2; log_softmax −ln 2 there, -inf elsewhere.
        Edge {
            case: Case::row(vec![t(INF), t(5.0), t(INF), t(-INF), t(INF)])
                .mask(vec![true, true, true, true, false])
                .dy(vec![t(1.0), t(0.0), t(3.0), t(7.0), t(9.0)]),
            softmax: v(&[0.5, 0.0, 0.5, 0.0, 0.0]),
            log_softmax: vec![
                E::NegLn(2.0),
                E::V(-INF),
                E::NegLn(2.0),
                E::V(-INF),
                E::V(-INF),
            ],
            logsumexp: E::V(INF),
            entropy: E::Ln(2.0),
            sparsemax: v(&[0.5, 0.0, 0.5, 0.0, 0.0]),
            // Limit p = [½, 0, ½, 0, 0]; ⟨p, dy⟩ = 2: dx = p·(dy − 2).
            softmax_vjp: v(&[-0.5, 0.0, 0.5, 0.0, 0.0]),
            // dy of the finite entry is 0, so the limit and a "finite entries are constant"
            // reading agree here: dx = dy − p·Σdy = [1 − 2, 0, 3 − 2, 0, 0].
            log_softmax_vjp: v(&[-1.0, 0.0, 1.0, 0.0, 0.0]),
        },
        // Three +inf: ln 3.
        Edge {
            case: Case::row(vec![t(INF), t(INF), t(INF), t(-1.0)]).dy(vec![t(0.0); 4]),
            softmax: v(&[1.0 / 3.0, 1.0 / 3.0, 1.0 / 3.0, 0.0]),
            log_softmax: vec![E::NegLn(3.0), E::NegLn(3.0), E::NegLn(3.0), E::V(-INF)],
            logsumexp: E::V(INF),
            entropy: E::Ln(3.0),
            sparsemax: v(&[1.0 / 3.0, 1.0 / 3.0, 1.0 / 3.0, 0.0]),
            softmax_vjp: v(&[0.0; 4]),
            log_softmax_vjp: v(&[0.0; 4]),
        },
    ]
}

#[test]
fn edge_rows_special_values() {
    run_edges(&special_edges::<f32>());
    run_edges(&special_edges::<f64>());
}

/// Rows spanning more than the float range, `[big, −big]` with `big` just below half of MAX's
/// double (3.4e38 in f32, 1.7e308 in f64): the same expectations for both dtypes.
fn span_edges<T: Ty>(big: f64) -> Vec<Edge<T>> {
    let t = T::from_f64;
    vec![
        // The spec's example: log_softmax([3.4e38, -3.4e38]) = [0, -6.8e38] → [0, -inf].
        Edge {
            case: Case::row(vec![t(big), t(-big)]).dy(vec![t(1.0), t(0.0)]),
            softmax: v(&[1.0, 0.0]),
            log_softmax: v(&[0.0, -INF]),
            logsumexp: E::V(big),
            entropy: E::V(0.0),
            sparsemax: v(&[1.0, 0.0]),
            // p = [1, 0] (e^-6.8e38 is 0 to every precision): dx = 0 for either dy entry.
            softmax_vjp: v(&[0.0, 0.0]),
            // dy = [1, 0]: dx = dy − p·Σdy = [0, 0].
            log_softmax_vjp: v(&[0.0, 0.0]),
        },
        // −big + ln 2 rounds back to −big.
        Edge {
            case: Case::row(vec![t(-big), t(-big)]).dy(vec![t(0.0); 2]),
            softmax: v(&[0.5, 0.5]),
            log_softmax: vec![E::NegLn(2.0), E::NegLn(2.0)],
            logsumexp: E::V(-big),
            entropy: E::Ln(2.0),
            sparsemax: v(&[0.5, 0.5]),
            softmax_vjp: v(&[0.0; 2]),
            log_softmax_vjp: v(&[0.0; 2]),
        },
        // τ = 2: (x − max)/τ = −big is representable, so log_softmax is finite.
        Edge {
            case: Case::row(vec![t(big), t(-big)])
                .tau(t(2.0))
                .dy(vec![t(0.0); 2]),
            softmax: v(&[1.0, 0.0]),
            log_softmax: v(&[0.0, -big]),
            logsumexp: E::V(big / 2.0),
            entropy: E::V(0.0),
            sparsemax: v(&[1.0, 0.0]),
            softmax_vjp: v(&[0.0; 2]),
            log_softmax_vjp: v(&[0.0; 2]),
        },
        // τ = 0.5: max/τ = 2·big is beyond the type, so logsumexp is +inf (that infinity).
        Edge {
            case: Case::row(vec![t(big), t(-big)])
                .tau(t(0.5))
                .dy(vec![t(0.0); 2]),
            softmax: v(&[1.0, 0.0]),
            log_softmax: v(&[0.0, -INF]),
            logsumexp: E::V(INF),
            entropy: E::V(0.0),
            sparsemax: v(&[1.0, 0.0]),
            softmax_vjp: v(&[0.0; 2]),
            log_softmax_vjp: v(&[0.0; 2]),
        },
    ]
}

/// Finite extremes in f32 beyond [`span_edges`]: ±3.4e38 ties, ±MAX, huge τ, subnormals.
fn finite_extremes_f32() -> Vec<Edge<f32>> {
    let big = 3.4e38f32;
    let b = big as f64;
    vec![
        Edge {
            case: Case::row(vec![big, big]).dy(vec![1.0, 3.0]),
            softmax: v(&[0.5, 0.5]),
            log_softmax: vec![E::NegLn(2.0), E::NegLn(2.0)],
            // 3.4e38 + ln 2 rounds back to 3.4e38.
            logsumexp: E::V(b),
            entropy: E::Ln(2.0),
            sparsemax: v(&[0.5, 0.5]),
            softmax_vjp: v(&[-0.5, 0.5]),
            log_softmax_vjp: v(&[-1.0, 1.0]),
        },
        Edge {
            case: Case::row(vec![f32::MAX, f32::MAX, -f32::MAX]).dy(vec![0.0; 3]),
            softmax: v(&[0.5, 0.5, 0.0]),
            log_softmax: vec![E::NegLn(2.0), E::NegLn(2.0), E::V(-INF)],
            logsumexp: E::V(f32::MAX as f64),
            entropy: E::Ln(2.0),
            sparsemax: v(&[0.5, 0.5, 0.0]),
            softmax_vjp: v(&[0.0; 3]),
            log_softmax_vjp: v(&[0.0; 3]),
        },
        // Huge τ: (3e38 − (−3e38))/3e38 = 2, no overflow on the way.
        Edge {
            case: Case::row(vec![3e38f32, -3e38]).tau(3e38).dy(vec![0.0; 2]),
            softmax: a(&[1.0 / (1.0 + (-2f64).exp()), 1.0 / (1.0 + 2f64.exp())]),
            log_softmax: a(&[-(-2f64).exp().ln_1p(), -2.0 - (-2f64).exp().ln_1p()]),
            logsumexp: E::A(1.0 + (-2f64).exp().ln_1p()),
            entropy: E::A({
                let p = 1.0 / (1.0 + (-2f64).exp());
                -(p * p.ln() + (1.0 - p) * (1.0 - p).ln())
            }),
            sparsemax: v(&[1.0, 0.0]),
            softmax_vjp: v(&[0.0; 2]),
            log_softmax_vjp: v(&[0.0; 2]),
        },
        // Subnormals: differences far below an ulp of the result.
        Edge {
            case: Case::row(vec![1e-45f32, 0.0]).dy(vec![0.0; 2]),
            softmax: v(&[0.5, 0.5]),
            log_softmax: vec![E::NegLn(2.0), E::NegLn(2.0)],
            logsumexp: E::Ln(2.0),
            entropy: E::Ln(2.0),
            sparsemax: v(&[0.5, 0.5]),
            softmax_vjp: v(&[0.0; 2]),
            log_softmax_vjp: v(&[0.0; 2]),
        },
        Edge {
            case: Case::row(vec![1e-40f32, 2e-40, -3e-40]).dy(vec![1.0, 1.0, 1.0]),
            softmax: v(&[1.0 / 3.0; 3]),
            log_softmax: vec![E::NegLn(3.0); 3],
            logsumexp: E::Ln(3.0),
            entropy: E::Ln(3.0),
            sparsemax: v(&[1.0 / 3.0; 3]),
            // dx = dy − p·Σdy = 1 − 3·(1/3) = 0 exactly, computed as 1 − 3·e^(−ln 3): a few
            // roundings, hence approximate.
            softmax_vjp: a(&[0.0; 3]),
            log_softmax_vjp: a(&[0.0; 3]),
        },
    ]
}

/// Subnormal temperatures (valid: positive and finite) in f32.
fn subnormal_temperature_f32() -> Vec<Edge<f32>> {
    vec![
        // A subnormal temperature on subnormal logits: (x − max)/τ = −1 exactly.
        Edge {
            case: Case::row(vec![1e-45f32, 0.0]).tau(1e-45).dy(vec![0.0; 2]),
            softmax: a(&[1.0 / (1.0 + (-1f64).exp()), 1.0 / (1.0 + 1f64.exp())]),
            log_softmax: a(&[-(-1f64).exp().ln_1p(), -1.0 - (-1f64).exp().ln_1p()]),
            logsumexp: E::A(1.0 + (-1f64).exp().ln_1p()),
            entropy: E::A({
                let p = 1.0 / (1.0 + (-1f64).exp());
                -(p * p.ln() + (1.0 - p) * (1.0 - p).ln())
            }),
            sparsemax: v(&[1.0, 0.0]),
            softmax_vjp: v(&[0.0; 2]),
            log_softmax_vjp: v(&[0.0; 2]),
        },
        // A subnormal temperature on ordinary logits: the τ → 0 limit, no NaN.
        Edge {
            case: Case::row(vec![1.0f32, 0.0]).tau(1e-45).dy(vec![0.0; 2]),
            softmax: v(&[1.0, 0.0]),
            log_softmax: v(&[0.0, -INF]),
            logsumexp: E::V(INF),
            entropy: E::V(0.0),
            sparsemax: v(&[1.0, 0.0]),
            softmax_vjp: v(&[0.0; 2]),
            log_softmax_vjp: v(&[0.0; 2]),
        },
    ]
}

/// Finite extremes in f64 beyond [`span_edges`]: ±MAX ties, subnormals.
fn finite_extremes_f64() -> Vec<Edge<f64>> {
    vec![
        Edge {
            case: Case::row(vec![f64::MAX, f64::MAX]).dy(vec![1.0, 3.0]),
            softmax: v(&[0.5, 0.5]),
            log_softmax: vec![E::NegLn(2.0), E::NegLn(2.0)],
            logsumexp: E::V(f64::MAX),
            entropy: E::Ln(2.0),
            sparsemax: v(&[0.5, 0.5]),
            softmax_vjp: v(&[-0.5, 0.5]),
            log_softmax_vjp: v(&[-1.0, 1.0]),
        },
        Edge {
            case: Case::row(vec![5e-324, 0.0, -5e-324]).dy(vec![0.0; 3]),
            softmax: v(&[1.0 / 3.0; 3]),
            log_softmax: vec![E::NegLn(3.0); 3],
            logsumexp: E::Ln(3.0),
            entropy: E::Ln(3.0),
            sparsemax: v(&[1.0 / 3.0; 3]),
            softmax_vjp: v(&[0.0; 3]),
            log_softmax_vjp: v(&[0.0; 3]),
        },
    ]
}

fn subnormal_temperature_f64() -> Vec<Edge<f64>> {
    vec![Edge {
        case: Case::row(vec![1.0f64, 0.0]).tau(5e-324).dy(vec![0.0; 2]),
        softmax: v(&[1.0, 0.0]),
        log_softmax: v(&[0.0, -INF]),
        logsumexp: E::V(INF),
        entropy: E::V(0.0),
        sparsemax: v(&[1.0, 0.0]),
        softmax_vjp: v(&[0.0; 2]),
        log_softmax_vjp: v(&[0.0; 2]),
    }]
}

#[test]
fn edge_rows_finite_extremes() {
    run_edges(&span_edges::<f32>(3.4e38));
    run_edges(&span_edges::<f64>(1.7e308));
    run_edges(&finite_extremes_f32());
    run_edges(&finite_extremes_f64());
}

#[test]
fn edge_rows_subnormal_temperature() {
    run_edges(&subnormal_temperature_f32());
    run_edges(&subnormal_temperature_f64());
}

#[test]
fn log_softmax_vjp_finite_extremes() {
    // d/dx of Σ dy ⊙ log_softmax(x) = dy − p·Σdy with p = [1, e^(−6.8e38)] = [1, 0]:
    // for dy = [0, 1], dx = [−1, 1]. The second entry is finite, so it is no constant.
    let a = run1(r#"{"id":1,"op":"log_softmax_vjp","x":[3.4e38,-3.4e38],"dy":[0,1],"shape":[2]}"#);
    assert_eq!(a.floats::<f32>("dx"), [-1.0, 1.0], "{}", a.raw);
    let a = run1(
        r#"{"id":1,"op":"log_softmax_vjp","x":[1.7e308,-1.7e308],"dy":[0,1],"shape":[2],"dtype":"f64"}"#,
    );
    assert_eq!(a.floats::<f64>("dx"), [-1.0, 1.0], "{}", a.raw);
}

#[test]
fn log_softmax_vjp_limit_with_pos_inf() {
    // Limit distribution p = [1, 0]; only masked and -inf entries are constants, so
    // dx = dy − p·Σdy = [0 − 1, 1 − 0] for dy = [0, 1].
    let a = run1(r#"{"id":1,"op":"log_softmax_vjp","x":["inf",1],"dy":[0,1],"shape":[2]}"#);
    assert_eq!(a.floats::<f32>("dx"), [-1.0, 1.0], "{}", a.raw);
}

#[test]
fn zero_rows_are_an_empty_batch() {
    let a = run(&[
        r#"{"id":1,"op":"softmax","x":[],"shape":[0,3]}"#.into(),
        r#"{"id":2,"op":"logsumexp","x":[],"shape":[0,3],"mask":[]}"#.into(),
        r#"{"id":3,"op":"log_softmax_vjp","x":[],"dy":[],"shape":[0,3],"dtype":"f64"}"#.into(),
    ]);
    assert!(a[0].floats::<f32>("y").is_empty());
    assert!(a[1].floats::<f32>("y").is_empty());
    assert!(a[2].floats::<f64>("dx").is_empty());
}

// ------------------------------------------------------------------------------------------------
// Errors
// ------------------------------------------------------------------------------------------------

/// Lines that must fail, with the kind and the echoed id text.
fn bad_lines() -> Vec<(String, &'static str, &'static str)> {
    let mut v: Vec<(String, &str, &str)> = Vec::new();
    let mut add =
        |line: &str, kind: &'static str, id: &'static str| v.push((line.to_string(), kind, id));
    // parse: not JSON, not an object, blank; id null.
    add("", "parse", "null");
    add("   \t", "parse", "null");
    add("not json", "parse", "null");
    add(
        r#"{"id":1,"op":"softmax","x":[1],"shape":[1]"#,
        "parse",
        "null",
    );
    add(
        r#"{"id":1,"op":"softmax","x":[1,],"shape":[1]}"#,
        "parse",
        "null",
    );
    add(
        r#"{"id":1,"op":"softmax","x":[1],"shape":[1]} {}"#,
        "parse",
        "null",
    );
    add(
        r#"{"id":1,"op":"softmax","x":[NaN],"shape":[1]}"#,
        "parse",
        "null",
    );
    add(
        r#"{"id":1,"op":"softmax","x":[01],"shape":[1]}"#,
        "parse",
        "null",
    );
    add(
        r#"{"id":"\ud800","op":"softmax","x":[1],"shape":[1]}"#,
        "parse",
        "null",
    );
    add(
        r#"[{"id":1,"op":"softmax","x":[1],"shape":[1]}]"#,
        "parse",
        "null",
    );
    add("42", "parse", "null");
    add(r#""softmax""#, "parse", "null");
    add("null", "parse", "null");
    // unknown_op: near misses of the ops (every op of CONFORMANCE.md exists now).
    for op in [
        "CrossEntropyLoss",
        "scaled_dot_product_attention",
        "Attention",
        "attention_forward",
        "Softmax",
        "softmax ",
        "",
        "hardmax",
    ] {
        v.push((
            format!(
                r#"{{"id":"u","op":{},"x":[1],"shape":[1]}}"#,
                Value::String(op.into())
            ),
            "unknown_op",
            "\"u\"",
        ));
    }
    let mut add =
        |line: &str, kind: &'static str, id: &'static str| v.push((line.to_string(), kind, id));
    // shape.
    add(
        r#"{"id":2,"op":"softmax","x":[1,2],"shape":[3]}"#,
        "shape",
        "2",
    );
    add(
        r#"{"id":2,"op":"softmax","x":[1,2,3],"shape":[2,2]}"#,
        "shape",
        "2",
    );
    add(
        r#"{"id":2,"op":"softmax","x":[1,2],"shape":[2],"mask":[true]}"#,
        "shape",
        "2",
    );
    add(
        r#"{"id":2,"op":"softmax_vjp","x":[1,2],"dy":[1],"shape":[2]}"#,
        "shape",
        "2",
    );
    add(
        r#"{"id":2,"op":"log_softmax_vjp","x":[1,2],"dy":[1,2,3],"shape":[1,2]}"#,
        "shape",
        "2",
    );
    add(
        r#"{"id":2,"op":"softmax","x":[1,2],"shape":[]}"#,
        "shape",
        "2",
    );
    add(
        r#"{"id":2,"op":"softmax","x":[1,2],"shape":[1,1,2]}"#,
        "shape",
        "2",
    );
    add(
        r#"{"id":2,"op":"softmax","x":[],"shape":[0]}"#,
        "shape",
        "2",
    );
    add(
        r#"{"id":2,"op":"entropy","x":[],"shape":[3,0]}"#,
        "shape",
        "2",
    );
    add(
        r#"{"id":2,"op":"entropy","x":[],"shape":[0,0]}"#,
        "shape",
        "2",
    );
    add(
        r#"{"id":2,"op":"logsumexp","x":[1,2,3],"shape":[1000000000]}"#,
        "shape",
        "2",
    );
    add(
        r#"{"id":2,"op":"logsumexp","x":[1,2,3],"shape":[1000000000,1000000000]}"#,
        "shape",
        "2",
    );
    add(
        r#"{"id":2,"op":"sparsemax","x":[1],"shape":[4294967296,4294967296]}"#,
        "shape",
        "2",
    );
    add(
        r#"{"id":2,"op":"sparsemax","x":[1],"shape":[18446744073709551615,2]}"#,
        "shape",
        "2",
    );
    add(
        r#"{"id":2,"op":"sparsemax","x":[1],"shape":[99999999999999999999999999999]}"#,
        "shape",
        "2",
    );
    // invalid_param: unknown, duplicate and missing fields.
    add(
        r#"{"id":3,"op":"softmax","x":[1],"shape":[1],"tempreature":2}"#,
        "invalid_param",
        "3",
    );
    add(
        r#"{"id":3,"op":"softmax","x":[1],"shape":[1],"dy":[1]}"#,
        "invalid_param",
        "3",
    );
    add(
        r#"{"id":3,"op":"logsumexp","x":[1],"shape":[1],"axis":0}"#,
        "invalid_param",
        "3",
    );
    add(
        r#"{"id":3,"op":"softmax","x":[1],"shape":[1],"x":[2]}"#,
        "invalid_param",
        "3",
    );
    add(
        r#"{"id":3,"op":"softmax","shape":[1]}"#,
        "invalid_param",
        "3",
    );
    add(r#"{"id":3,"op":"softmax","x":[1]}"#, "invalid_param", "3");
    add(
        r#"{"id":3,"op":"softmax_vjp","x":[1],"shape":[1]}"#,
        "invalid_param",
        "3",
    );
    add(r#"{"id":3,"x":[1],"shape":[1]}"#, "invalid_param", "3");
    add(
        r#"{"op":"softmax","x":[1],"shape":[1]}"#,
        "invalid_param",
        "null",
    );
    // invalid_param: wrong types.
    add(
        r#"{"id":3,"op":7,"x":[1],"shape":[1]}"#,
        "invalid_param",
        "3",
    );
    add(
        r#"{"id":3,"op":"softmax","x":1,"shape":[1]}"#,
        "invalid_param",
        "3",
    );
    add(
        r#"{"id":3,"op":"softmax","x":"1,2","shape":[2]}"#,
        "invalid_param",
        "3",
    );
    add(
        r#"{"id":3,"op":"softmax","x":[1,"2"],"shape":[2]}"#,
        "invalid_param",
        "3",
    );
    add(
        r#"{"id":3,"op":"softmax","x":[1,"NaN"],"shape":[2]}"#,
        "invalid_param",
        "3",
    );
    add(
        r#"{"id":3,"op":"softmax","x":[1,"Infinity"],"shape":[2]}"#,
        "invalid_param",
        "3",
    );
    add(
        r#"{"id":3,"op":"softmax","x":[1,"+inf"],"shape":[2]}"#,
        "invalid_param",
        "3",
    );
    add(
        r#"{"id":3,"op":"softmax","x":[1,null],"shape":[2]}"#,
        "invalid_param",
        "3",
    );
    add(
        r#"{"id":3,"op":"softmax","x":[1,true],"shape":[2]}"#,
        "invalid_param",
        "3",
    );
    add(
        r#"{"id":3,"op":"softmax","x":[[1,2],[3,4]],"shape":[2,2]}"#,
        "invalid_param",
        "3",
    );
    add(
        r#"{"id":3,"op":"softmax","x":[1,{}],"shape":[2]}"#,
        "invalid_param",
        "3",
    );
    add(
        r#"{"id":3,"op":"softmax","x":[1],"shape":1}"#,
        "invalid_param",
        "3",
    );
    add(
        r#"{"id":3,"op":"softmax","x":[1],"shape":[1.5]}"#,
        "invalid_param",
        "3",
    );
    add(
        r#"{"id":3,"op":"softmax","x":[1],"shape":[1.0]}"#,
        "invalid_param",
        "3",
    );
    add(
        r#"{"id":3,"op":"softmax","x":[1],"shape":[1e0]}"#,
        "invalid_param",
        "3",
    );
    add(
        r#"{"id":3,"op":"softmax","x":[1],"shape":[-1]}"#,
        "invalid_param",
        "3",
    );
    add(
        r#"{"id":3,"op":"softmax","x":[1],"shape":[1,-1]}"#,
        "invalid_param",
        "3",
    );
    add(
        r#"{"id":3,"op":"softmax","x":[1],"shape":["1"]}"#,
        "invalid_param",
        "3",
    );
    add(
        r#"{"id":3,"op":"softmax","x":[1],"shape":null}"#,
        "invalid_param",
        "3",
    );
    add(
        r#"{"id":3,"op":"softmax","x":[1],"shape":[1],"mask":[1]}"#,
        "invalid_param",
        "3",
    );
    add(
        r#"{"id":3,"op":"softmax","x":[1],"shape":[1],"mask":true}"#,
        "invalid_param",
        "3",
    );
    add(
        r#"{"id":3,"op":"softmax","x":[1],"shape":[1],"mask":null}"#,
        "invalid_param",
        "3",
    );
    add(
        r#"{"id":3,"op":"softmax_vjp","x":[1],"shape":[1],"dy":[[1]]}"#,
        "invalid_param",
        "3",
    );
    add(
        r#"{"id":3,"op":"softmax","x":[1],"shape":[1],"temperature":"2"}"#,
        "invalid_param",
        "3",
    );
    add(
        r#"{"id":3,"op":"softmax","x":[1],"shape":[1],"temperature":[2]}"#,
        "invalid_param",
        "3",
    );
    add(
        r#"{"id":3,"op":"softmax","x":[1],"shape":[1],"temperature":null}"#,
        "invalid_param",
        "3",
    );
    add(
        r#"{"id":3,"op":"softmax","x":[1],"shape":[1],"dtype":32}"#,
        "invalid_param",
        "3",
    );
    add(
        r#"{"id":3,"op":"softmax","x":[1],"shape":[1],"dtype":null}"#,
        "invalid_param",
        "3",
    );
    // invalid_param: temperature <= 0 or not finite (also after rounding to the dtype).
    for t in [
        "0", "-0", "-1", "\"inf\"", "\"-inf\"", "\"nan\"", "1e-50", "1e39", "-1e-45",
    ] {
        v.push((
            format!(r#"{{"id":4,"op":"entropy","x":[1,2],"shape":[2],"temperature":{t}}}"#),
            "invalid_param",
            "4",
        ));
    }
    v.push((
        r#"{"id":4,"op":"entropy","x":[1,2],"shape":[2],"temperature":1e-400,"dtype":"f64"}"#
            .into(),
        "invalid_param",
        "4",
    ));
    let mut add =
        |line: &str, kind: &'static str, id: &'static str| v.push((line.to_string(), kind, id));
    // unsupported_dtype.
    add(
        r#"{"id":5,"op":"softmax","x":[1],"shape":[1],"dtype":"f16"}"#,
        "unsupported_dtype",
        "5",
    );
    add(
        r#"{"id":5,"op":"softmax","x":[1],"shape":[1],"dtype":"bf16"}"#,
        "unsupported_dtype",
        "5",
    );
    add(
        r#"{"id":5,"op":"softmax","x":[1],"shape":[1],"dtype":"float32"}"#,
        "unsupported_dtype",
        "5",
    );
    add(
        r#"{"id":5,"op":"softmax","x":[1],"shape":[1],"dtype":"F64"}"#,
        "unsupported_dtype",
        "5",
    );
    add(
        r#"{"id":5,"op":"sparsemax","x":[1],"shape":[1],"dtype":""}"#,
        "unsupported_dtype",
        "5",
    );
    v
}

#[test]
fn every_error_kind_with_its_id() {
    let cases = bad_lines();
    let lines: Vec<String> = cases.iter().map(|(l, _, _)| l.clone()).collect();
    let answers = run(&lines);
    for ((line, kind, id), a) in cases.iter().zip(&answers) {
        assert_eq!(a.kind(), *kind, "line {line}: {}", a.raw);
        a.assert_id(id);
    }
}

#[test]
fn program_keeps_going_after_every_bad_line() {
    // Each bad line is followed by the same good line, whose answer must be unaffected.
    let good = r#"{"id":"g","op":"softmax","x":[0,0,0,0],"shape":[2,2],"temperature":2}"#;
    let mut input: Vec<u8> = Vec::new();
    let mut expected: Vec<&str> = Vec::new();
    let mut raw_bad: Vec<Vec<u8>> = bad_lines()
        .into_iter()
        .map(|(l, _, _)| l.into_bytes())
        .collect();
    raw_bad.extend([
        b"\xff\xfe{}".to_vec(),
        b"{\"id\":1,\"op\":\"softmax\",\"x\":[1],\"shape\":[1],\"s\":\"\xc3\"}".to_vec(),
        b"\x00\x00".to_vec(),
        "[".repeat(100_000).into_bytes(),
        b"{\"id\":1,\"op\":\"softmax\",\"x\":[1],\"shape\":[1]}\r".to_vec(),
    ]);
    for bad in &raw_bad {
        input.extend_from_slice(bad);
        input.push(b'\n');
        expected.push("bad");
        input.extend_from_slice(good.as_bytes());
        input.push(b'\n');
        expected.push("good");
    }
    let out = run_bytes(&input);
    assert_eq!(out.len(), expected.len());
    for (line, e) in out.iter().zip(&expected) {
        let a = Answer::parse(line);
        if *e == "good" {
            a.assert_id("\"g\"");
            assert_eq!(a.floats::<f32>("y"), [0.5; 4], "{line}");
        }
    }
}

#[test]
fn ids_of_every_json_type_are_echoed_unchanged() {
    let ids = [
        r#""abc""#,
        r#""é \"quoted\" \u00e9 \n \\ \/""#,
        r#""""#,
        "0",
        "-0",
        "17",
        "-3.25",
        "1E+05",
        "1.5e-300",
        "2e400",
        "123456789012345678901234567890",
        "0.10000000000000000000000000001",
        r#"{"a":[1,{"b":null}],"c":"x y","d":{}}"#,
        r#"[1,"two",3.0e0,true,null,[],{}]"#,
        "null",
        "true",
        "false",
    ];
    let mut lines = Vec::new();
    for id in ids {
        lines.push(format!(
            r#"{{"id":{id},"op":"softmax","x":[1],"shape":[1]}}"#
        ));
        lines.push(format!(
            r#"{{"op":"softmax","id":{id},"x":[1],"shape":[2]}}"#
        ));
        lines.push(format!(r#"{{"op":"Attention","id":{id}}}"#));
    }
    // Whitespace inside the id is dropped (the answer stays one compact line), nothing else.
    lines.push(
        r#"{ "id" : { "k" : [ 1 , "a b" ] } , "op" : "softmax" , "x" : [ 1 ] , "shape" : [ 1 ] }"#
            .into(),
    );
    // Deep but within the parser's nesting limit.
    let deep = format!("{}7{}", "[".repeat(100), "]".repeat(100));
    lines.push(format!(
        r#"{{"id":{deep},"op":"softmax","x":[1],"shape":[1]}}"#
    ));
    let answers = run(&lines);
    for (i, id) in ids.iter().enumerate() {
        let a = &answers[3 * i];
        assert!(a.ok(), "{}", a.raw);
        a.assert_id(id);
        assert_eq!(answers[3 * i + 1].kind(), "shape");
        answers[3 * i + 1].assert_id(id);
        assert_eq!(answers[3 * i + 2].kind(), "unknown_op");
        answers[3 * i + 2].assert_id(id);
    }
    answers[3 * ids.len()].assert_id(r#"{"k":[1,"a b"]}"#);
    answers[3 * ids.len() + 1].assert_id(&deep);
}

// ------------------------------------------------------------------------------------------------
// Robustness
// ------------------------------------------------------------------------------------------------

#[test]
fn invalid_utf8_and_truncated_lines_are_parse_errors() {
    let lines: [&[u8]; 7] = [
        b"\xff",
        b"{\"id\":1,\"op\":\"softmax\",\"x\":[1],\"shape\":[1],\"s\":\"\xe9\"}",
        b"{\"id\":\"\xc0\xaf\",\"op\":\"softmax\",\"x\":[1],\"shape\":[1]}",
        b"{\"id\":\"\xed\xa0\x80\",\"op\":\"softmax\",\"x\":[1],\"shape\":[1]}",
        b"{\"id\":1,\"op\":\"softm",
        b"{\"id\":1,\"op\":\"softmax\",\"x\":[1,2",
        b"{\"id\":1,",
    ];
    let mut input = Vec::new();
    for l in lines {
        input.extend_from_slice(l);
        input.push(b'\n');
    }
    let out = run_bytes(&input);
    assert_eq!(out.len(), lines.len());
    for line in &out {
        let a = Answer::parse(line);
        assert_eq!(a.kind(), "parse", "{line}");
        a.assert_id("null");
    }
}

#[test]
fn huge_shapes_and_deep_nesting_answer_without_allocating() {
    // A 1e9-element shape with a short x is a shape error decided from the lengths alone (were
    // it allocated, 4 GB per line would exhaust the test machine); deep nesting hits the
    // parser's limit, not the stack.
    let mut lines = vec![
        r#"{"id":1,"op":"softmax","x":[1,2,3],"shape":[1000000000]}"#.to_string(),
        r#"{"id":2,"op":"softmax_vjp","x":[1,2,3],"dy":[1,2,3],"shape":[1000000000,3]}"#
            .to_string(),
        format!(
            "{{\"id\":3,\"op\":\"softmax\",\"x\":{}1{},\"shape\":[1]}}",
            "[".repeat(5000),
            "]".repeat(5000)
        ),
        "{".repeat(200_000),
    ];
    for _ in 0..50 {
        lines.push(r#"{"id":4,"op":"log_softmax","x":[1],"shape":[4000000000000000000]}"#.into());
    }
    let answers = run(&lines);
    assert_eq!(answers[0].kind(), "shape");
    assert_eq!(answers[1].kind(), "shape");
    assert_eq!(answers[2].kind(), "parse");
    assert_eq!(answers[3].kind(), "parse");
    for a in &answers[4..] {
        assert_eq!(a.kind(), "shape");
    }
}

#[test]
fn extreme_number_texts() {
    let a = run(&[
        // Exponents far beyond any type: ±inf and 0 after correct rounding.
        r#"{"id":1,"op":"softmax","x":[1e999999999999999999,0],"shape":[2]}"#.into(),
        r#"{"id":2,"op":"logsumexp","x":[-1e-999999999999999999],"shape":[1]}"#.into(),
        // A very long mantissa.
        format!(
            r#"{{"id":3,"op":"logsumexp","x":[0.{}1],"shape":[1],"dtype":"f64"}}"#,
            "0".repeat(5000)
        ),
        format!(
            r#"{{"id":4,"op":"logsumexp","x":[{}],"shape":[1]}}"#,
            "9".repeat(3000)
        ),
    ]);
    assert_eq!(a[0].floats::<f32>("y"), [1.0, 0.0]);
    assert_eq!(a[1].floats::<f32>("y")[0], 0.0);
    assert_eq!(a[2].floats::<f64>("y")[0], 1e-5001f64); // underflows to 0
    assert_eq!(a[3].floats::<f32>("y")[0], f32::INFINITY);
}

#[test]
fn line_endings_and_end_of_input() {
    // CRLF, a last line without a newline, and empty input.
    let out = run_bytes(
        b"{\"id\":1,\"op\":\"softmax\",\"x\":[0,0],\"shape\":[2]}\r\n{\"id\":2,\"op\":\"softmax\",\"x\":[0],\"shape\":[1]}",
    );
    assert_eq!(out.len(), 2);
    assert_eq!(Answer::parse(&out[0]).floats::<f32>("y"), [0.5, 0.5]);
    assert_eq!(Answer::parse(&out[1]).floats::<f32>("y"), [1.0]);
    assert!(run_bytes(b"").is_empty());
    // Blank lines are answered (a parse error each), so answers stay paired with lines.
    let out = run_bytes(b"\n\n{\"id\":1,\"op\":\"softmax\",\"x\":[0],\"shape\":[1]}\n\n");
    assert_eq!(out.len(), 4);
    let kinds: Vec<bool> = out.iter().map(|l| Answer::parse(l).ok()).collect();
    assert_eq!(kinds, [false, false, true, false]);
}

#[test]
fn answers_are_flushed_line_by_line() {
    // A driver may send one line and wait for its answer before sending the next. If answers
    // were buffered until end of input this would wait forever, so it waits 60 s at most.
    use std::io::{BufRead, BufReader};
    use std::sync::mpsc;
    use std::time::Duration;
    let mut child = Command::new(env!("CARGO_BIN_EXE_harness"))
        .arg("conform")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn");
    let mut stdin = child.stdin.take().unwrap();
    let stdout = BufReader::new(child.stdout.take().unwrap());
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in stdout.lines() {
            if tx.send(line.expect("read answer")).is_err() {
                return;
            }
        }
    });
    for i in 0..3 {
        writeln!(
            stdin,
            r#"{{"id":{i},"op":"softmax","x":[0,0],"shape":[2]}}"#
        )
        .unwrap();
        stdin.flush().unwrap();
        match rx.recv_timeout(Duration::from_secs(60)) {
            Ok(line) => Answer::parse(&line).assert_id(&i.to_string()),
            Err(e) => {
                let _ = child.kill();
                panic!("no answer to line {i} while the input stays open: {e}");
            }
        }
    }
    drop(stdin);
    assert!(child.wait().unwrap().success());
}

#[test]
fn random_mutations_never_break_the_protocol() {
    // Valid lines mutated at random (bytes dropped, inserted, replaced, segments repeated): every
    // line gets one well-formed answer, ok or one of the protocol's error kinds.
    let templates = [
        r#"{"id":1,"op":"softmax","x":[1,2,3,4],"shape":[2,2],"temperature":0.5,"mask":[true,false,true,true]}"#,
        r#"{"id":"s","op":"softmax_vjp","x":[1,"inf",3],"dy":[1,2,3],"shape":[3],"dtype":"f64"}"#,
        r#"{"id":[1],"op":"entropy","x":[1e30,-1e30,"nan",0],"shape":[1,4]}"#,
        r#"{"id":null,"op":"sparsemax","x":[0.5,1,1.5],"shape":[3],"temperature":3}"#,
        r#"{"id":{"k":2},"op":"log_softmax_vjp","x":[1,2],"dy":[3,4],"shape":[2],"mask":[true,true]}"#,
        r#"{"id":9,"op":"logsumexp","x":[-3.4e38,3.4e38,1e-45],"shape":[3,1]}"#,
    ];
    let alphabet: &[u8] = b"{}[]\":,0123456789-+.eE \\truefalsnil\xff\xc3";
    let mut rng = Rng(99);
    let mut lines: Vec<Vec<u8>> = Vec::new();
    for _ in 0..3000 {
        let mut l = templates[rng.below(templates.len())].as_bytes().to_vec();
        for _ in 0..1 + rng.below(4) {
            let at = rng.below(l.len() + 1);
            match rng.below(4) {
                0 if at < l.len() => {
                    l.remove(at);
                }
                1 => l.insert(at, alphabet[rng.below(alphabet.len())]),
                2 if at < l.len() => l[at] = alphabet[rng.below(alphabet.len())],
                _ => {
                    let end = (at + rng.below(12)).min(l.len());
                    let seg = l[at..end].to_vec();
                    l.splice(at..at, seg);
                }
            }
        }
        l.retain(|&b| b != b'\n');
        lines.push(l);
    }
    let mut input = Vec::new();
    for l in &lines {
        input.extend_from_slice(l);
        input.push(b'\n');
    }
    let out = run_bytes(&input);
    assert_eq!(out.len(), lines.len());
    let kinds = [
        "parse",
        "unknown_op",
        "shape",
        "invalid_param",
        "unsupported_dtype",
    ];
    let mut ok = 0;
    for (line, l) in out.iter().zip(&lines) {
        let a = Answer::parse(line);
        if a.ok() {
            ok += 1;
        } else {
            let kind = a.kind();
            assert!(
                kinds.contains(&kind),
                "{kind}: {}",
                String::from_utf8_lossy(l)
            );
            if kind == "parse" {
                a.assert_id("null");
            }
        }
    }
    assert!(ok > 0, "some mutations should stay valid");
}
