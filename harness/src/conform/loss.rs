//! The losses (CONFORMANCE.md, "Losses"), computed by loss-core with the `Poly` backend, in the
//! request's dtype (every loss op takes f32 and f64).
//!
//! # Decisions where CONFORMANCE.md leaves room
//!
//! * Check order, as for the softmax family: every field's type (`invalid_param`), then the
//!   shapes and lengths (`shape`), then the parameter values (`invalid_param`), then what the
//!   computation finds (`target_out_of_range`, `no_targets`).
//! * Integer fields (`n`, `d`, `m`, `t`, `k`, `v`) are non-negative integers written as such;
//!   class indices (`target`, `ignore_index`) are integers written as such, possibly negative
//!   (`2.0` is `invalid_param`). A class index beyond the 64-bit range is
//!   `target_out_of_range`.
//! * `reduction` is one of `"none"`, `"sum"`, `"mean"` (and `"batchmean"` for `kl_div` only);
//!   anything else is `invalid_param`.
//! * Every output tensor is a flat array, one-value results included (`grad_temperature`,
//!   `grad_logit_scale`, `grad_logit_bias`, a reduced `loss` are arrays of one value).
//! * `cross_entropy` with `target_probs` and a non-negative `ignore_index` is `invalid_param`
//!   (PyTorch refuses it too); a `"mean"` over no sample is `no_targets` for every op (PyTorch:
//!   NaN), including the element-wise losses over zero elements.
//! * `kl_div`'s `"batchmean"` divides by the first dimension as PyTorch does: `R` for `[R, N]`,
//!   `N` for a 1-D `[N]`.
//! * `info_nce`: `m` and `negatives` come together (one without the other: `invalid_param`);
//!   `negative_mode` without negatives is accepted and unused, as in `info-nce-pytorch`.

use loss_core::softmax_core::backend::{Backend, Poly};
use loss_core::{self as lc, Reduction};
use serde_json::Value;

use super::request::{describe, Real, Request, RowShape};
use super::wire::float_array;
use super::{Failure, Kind, Op, Outputs};

/// loss-core's errors in protocol terms.
impl From<lc::Error> for Failure {
    fn from(e: lc::Error) -> Self {
        use lc::Error as E;
        match e {
            E::Softmax(s) => Failure::from(s),
            E::TargetOutOfRange { .. } => Failure::new(Kind::TargetOutOfRange, e.to_string()),
            E::NoTargets => Failure::new(Kind::NoTargets, e.to_string()),
            E::InvalidParameter { .. } => Failure::invalid_param(e.to_string()),
            _ => Failure::shape(e.to_string()),
        }
    }
}

macro_rules! op {
    ($name:literal, $fields:expr, $handler:ident) => {
        Op {
            name: $name,
            fields: $fields,
            f32: $handler::<f32>,
            f64: Some($handler::<f64>),
        }
    };
}

/// The ops of this module (see [`Op`]).
pub(super) const OPS: &[Op] = &[
    op!(
        "cross_entropy",
        &[
            "logits",
            "shape",
            "target",
            "target_probs",
            "weight",
            "ignore_index",
            "label_smoothing",
            "reduction",
            "softcap",
            "z_loss"
        ],
        cross_entropy
    ),
    op!(
        "nll_loss",
        &[
            "log_probs",
            "shape",
            "target",
            "weight",
            "ignore_index",
            "reduction"
        ],
        nll_loss
    ),
    op!(
        "bce_with_logits",
        &[
            "logits",
            "target",
            "shape",
            "weight",
            "pos_weight",
            "reduction"
        ],
        bce_with_logits
    ),
    op!(
        "kl_div",
        &["input", "target", "shape", "log_target", "reduction"],
        kl_div
    ),
    op!("mse", &["input", "target", "reduction"], mse),
    op!(
        "sigmoid_focal",
        &["logits", "target", "alpha", "gamma", "reduction"],
        sigmoid_focal
    ),
    op!(
        "info_nce",
        &[
            "query",
            "positive",
            "n",
            "d",
            "negatives",
            "m",
            "negative_mode",
            "temperature",
            "normalize",
            "reduction",
            "symmetric"
        ],
        info_nce
    ),
    op!(
        "nt_xent",
        &["z", "n", "d", "temperature", "normalize"],
        nt_xent
    ),
    op!(
        "siglip",
        &["x", "y", "n", "d", "logit_scale", "logit_bias", "normalize"],
        siglip
    ),
    op!(
        "softmax_focal",
        &[
            "logits",
            "shape",
            "target",
            "gamma",
            "alpha",
            "ignore_index",
            "reduction"
        ],
        softmax_focal
    ),
    op!(
        "linear_cross_entropy",
        &[
            "h",
            "w",
            "t",
            "k",
            "v",
            "target",
            "ignore_index",
            "label_smoothing",
            "reduction",
            "softcap",
            "z_loss"
        ],
        linear_cross_entropy
    ),
];

// ------------------------------------------------------------------------------------------------
// Typed fields
// ------------------------------------------------------------------------------------------------

fn missing(name: &str) -> Failure {
    Failure::invalid_param(format!("missing required field `{name}`"))
}

/// A JSON number written as an integer (optional minus sign, digits only).
fn int_text(v: &Value) -> Option<&str> {
    match v {
        Value::Number(n) => {
            let s = n.as_str();
            let digits = s.strip_prefix('-').unwrap_or(s);
            (!digits.is_empty() && digits.bytes().all(|c| c.is_ascii_digit())).then_some(s)
        }
        _ => None,
    }
}

/// An integer class index, saturated to the `i64` range (beyond it, it is no class anyway).
fn class_index(v: &Value) -> Option<i64> {
    let s = int_text(v)?;
    Some(match s.parse::<i64>() {
        Ok(i) => i,
        Err(_) if s.starts_with('-') => i64::MIN,
        Err(_) => i64::MAX,
    })
}

/// A required non-negative integer; one too large for `usize` is a `shape` error.
fn size(req: &Request<'_>, name: &str) -> Result<usize, Failure> {
    let v = req.raw(name).ok_or_else(|| missing(name))?;
    match int_text(v) {
        Some(s) if !s.starts_with('-') => s
            .parse::<usize>()
            .map_err(|_| Failure::shape(format!("`{name}` = {s} is too large to address"))),
        _ => Err(Failure::invalid_param(format!(
            "`{name}` must be a non-negative integer, found {}",
            describe(v)
        ))),
    }
}

/// A required array of integer class indices.
fn targets(req: &Request<'_>, name: &str) -> Result<Vec<i64>, Failure> {
    let v = req.raw(name).ok_or_else(|| missing(name))?;
    let Value::Array(items) = v else {
        return Err(Failure::invalid_param(format!(
            "`{name}` must be an array of integers, found {}",
            describe(v)
        )));
    };
    items
        .iter()
        .enumerate()
        .map(|(i, item)| {
            class_index(item).ok_or_else(|| {
                Failure::invalid_param(format!(
                    "`{name}[{i}]` must be an integer, found {}",
                    describe(item)
                ))
            })
        })
        .collect()
}

/// An optional integer (`ignore_index`).
fn int_or(req: &Request<'_>, name: &str, default: i64) -> Result<i64, Failure> {
    match req.raw(name) {
        None => Ok(default),
        Some(v) => class_index(v).ok_or_else(|| {
            Failure::invalid_param(format!(
                "`{name}` must be an integer, found {}",
                describe(v)
            ))
        }),
    }
}

fn bool_or(req: &Request<'_>, name: &str, default: bool) -> Result<bool, Failure> {
    match req.raw(name) {
        None => Ok(default),
        Some(Value::Bool(b)) => Ok(*b),
        Some(v) => Err(Failure::invalid_param(format!(
            "`{name}` must be a boolean, found {}",
            describe(v)
        ))),
    }
}

fn str_or<'a>(req: &Request<'a>, name: &str, default: &'a str) -> Result<&'a str, Failure> {
    match req.raw(name) {
        None => Ok(default),
        Some(Value::String(s)) => Ok(s.as_str()),
        Some(v) => Err(Failure::invalid_param(format!(
            "`{name}` must be a string, found {}",
            describe(v)
        ))),
    }
}

fn opt_floats<F: Real>(req: &Request<'_>, name: &str) -> Result<Option<Vec<F>>, Failure> {
    match req.raw(name) {
        None => Ok(None),
        Some(_) => req.floats(name).map(Some),
    }
}

/// `reduction` (default `default`); `"batchmean"` only where allowed.
fn reduction(req: &Request<'_>, default: &str, batchmean: bool) -> Result<Reduction, Failure> {
    let s = str_or(req, "reduction", default)?;
    match s {
        "none" => Ok(Reduction::None),
        "sum" => Ok(Reduction::Sum),
        "mean" => Ok(Reduction::Mean),
        "batchmean" if batchmean => Ok(Reduction::BatchMean),
        other => Err(Failure::invalid_param(format!(
            "`reduction` must be \"none\", \"sum\" or \"mean\"{}, found {}",
            if batchmean { " or \"batchmean\"" } else { "" },
            Value::String(other.to_string())
        ))),
    }
}

fn check_len(field: &str, want: usize, got: usize) -> Result<(), Failure> {
    if want == got {
        Ok(())
    } else {
        Err(Failure::shape(format!(
            "`{field}` has {got} values, expected {want}"
        )))
    }
}

fn product(a: usize, b: usize) -> Result<usize, Failure> {
    a.checked_mul(b)
        .ok_or_else(|| Failure::shape("shape product too large to address"))
}

/// The loss output: one value, or one per sample for `"none"`.
fn loss_len(red: Reduction, n: usize) -> usize {
    if red == Reduction::None {
        n
    } else {
        1
    }
}

fn one<F: Real>(v: F) -> String {
    float_array(&[v])
}

// ------------------------------------------------------------------------------------------------
// Handlers
// ------------------------------------------------------------------------------------------------

/// The options of the cross-entropy ops, read and (after the shapes) validated.
struct CeFields<F> {
    ignore_index: i64,
    label_smoothing: F,
    reduction: Reduction,
    softcap: Option<F>,
    z_loss: F,
}

impl<F: Real> CeFields<F> {
    fn parse(req: &Request<'_>) -> Result<Self, Failure> {
        Ok(CeFields {
            ignore_index: int_or(req, "ignore_index", -100)?,
            label_smoothing: req.float_or("label_smoothing", F::ZERO)?,
            reduction: reduction(req, "mean", false)?,
            softcap: match req.raw("softcap") {
                None => None,
                Some(_) => Some(req.float_or("softcap", F::ONE)?),
            },
            z_loss: req.float_or("z_loss", F::ZERO)?,
        })
    }

    fn options<'a>(&self, weight: Option<&'a [F]>) -> lc::CrossEntropyOptions<'a, F> {
        let mut o = lc::CrossEntropyOptions::new()
            .with_ignore_index(self.ignore_index)
            .with_label_smoothing(self.label_smoothing)
            .with_reduction(self.reduction)
            .with_z_loss(self.z_loss);
        if let Some(w) = weight {
            o = o.with_weight(w);
        }
        if let Some(c) = self.softcap {
            o = o.with_softcap(c);
        }
        o
    }
}

/// `cross_entropy`: `loss`, `grad` (w.r.t. the raw logits), `lse`.
fn cross_entropy<F: Real>(req: &Request<'_>) -> Result<Outputs, Failure>
where
    Poly: Backend<F>,
{
    let logits = req.floats::<F>("logits")?;
    let shape = req.row_shape("shape")?;
    let target = match req.raw("target") {
        Some(_) => Some(targets(req, "target")?),
        None => None,
    };
    let target_probs = opt_floats::<F>(req, "target_probs")?;
    let weight = opt_floats::<F>(req, "weight")?;
    let f = CeFields::<F>::parse(req)?;
    if target.is_some() == target_probs.is_some() {
        return Err(Failure::invalid_param(
            "exactly one of `target` and `target_probs` is required",
        ));
    }
    let RowShape { rows, n: c, .. } = shape;
    shape.check_len("logits", logits.len())?;
    if let Some(t) = &target {
        check_len("target", rows, t.len())?;
    }
    if let Some(p) = &target_probs {
        shape.check_len("target_probs", p.len())?;
    }
    if let Some(w) = &weight {
        check_len("weight", c, w.len())?;
    }
    let opts = f.options(weight.as_deref());
    let mut grad = vec![F::ZERO; logits.len()];
    let mut lse = vec![F::ZERO; rows];
    let mut loss = vec![F::ZERO; loss_len(f.reduction, rows)];
    let out = lc::CrossEntropyOutputs::new()
        .with_grad(&mut grad)
        .with_losses(&mut loss)
        .with_lse(&mut lse);
    match (target, target_probs) {
        (Some(t), _) => lc::cross_entropy(Poly, &logits, c, &t, &opts, out)?,
        (_, p) => {
            let p = p.unwrap_or_default();
            lc::cross_entropy_probs(Poly, &logits, c, &p, &opts, out)?
        }
    };
    Ok(vec![
        ("loss", float_array(&loss)),
        ("grad", float_array(&grad)),
        ("lse", float_array(&lse)),
    ])
}

/// `nll_loss`: `loss`, `grad`.
fn nll_loss<F: Real>(req: &Request<'_>) -> Result<Outputs, Failure>
where
    Poly: Backend<F>,
{
    let x = req.floats::<F>("log_probs")?;
    let shape = req.row_shape("shape")?;
    let t = targets(req, "target")?;
    let weight = opt_floats::<F>(req, "weight")?;
    let ignore = int_or(req, "ignore_index", -100)?;
    let red = reduction(req, "mean", false)?;
    shape.check_len("log_probs", x.len())?;
    check_len("target", shape.rows, t.len())?;
    if let Some(w) = &weight {
        check_len("weight", shape.n, w.len())?;
    }
    let mut o = lc::NllOptions::new()
        .with_ignore_index(ignore)
        .with_reduction(red);
    if let Some(w) = &weight {
        o = o.with_weight(w);
    }
    let mut grad = vec![F::ZERO; x.len()];
    let mut loss = vec![F::ZERO; loss_len(red, shape.rows)];
    lc::nll_loss(
        Poly,
        &x,
        shape.n,
        &t,
        &o,
        lc::Outputs::new()
            .with_grad(&mut grad)
            .with_losses(&mut loss),
    )?;
    Ok(vec![
        ("loss", float_array(&loss)),
        ("grad", float_array(&grad)),
    ])
}

/// `bce_with_logits`: `loss`, `grad`.
fn bce_with_logits<F: Real>(req: &Request<'_>) -> Result<Outputs, Failure>
where
    Poly: Backend<F>,
{
    let x = req.floats::<F>("logits")?;
    let y = req.floats::<F>("target")?;
    let shape = req.row_shape("shape")?;
    let weight = opt_floats::<F>(req, "weight")?;
    let pos_weight = opt_floats::<F>(req, "pos_weight")?;
    let red = reduction(req, "mean", false)?;
    shape.check_len("logits", x.len())?;
    shape.check_len("target", y.len())?;
    if let Some(w) = &weight {
        shape.check_len("weight", w.len())?;
    }
    if let Some(p) = &pos_weight {
        check_len("pos_weight", shape.n, p.len())?;
    }
    let mut o = lc::BceOptions::new().with_reduction(red);
    if let Some(w) = &weight {
        o = o.with_weight(w);
    }
    if let Some(p) = &pos_weight {
        o = o.with_pos_weight(p);
    }
    let mut grad = vec![F::ZERO; x.len()];
    let mut loss = vec![F::ZERO; loss_len(red, x.len())];
    lc::binary_cross_entropy_with_logits(
        Poly,
        &x,
        &y,
        shape.n,
        &o,
        lc::Outputs::new()
            .with_grad(&mut grad)
            .with_losses(&mut loss),
    )?;
    Ok(vec![
        ("loss", float_array(&loss)),
        ("grad", float_array(&grad)),
    ])
}

/// `kl_div`: `loss`, `grad` (w.r.t. `input`).
fn kl_div<F: Real>(req: &Request<'_>) -> Result<Outputs, Failure>
where
    Poly: Backend<F>,
{
    let x = req.floats::<F>("input")?;
    let t = req.floats::<F>("target")?;
    let shape = req.row_shape("shape")?;
    let log_target = bool_or(req, "log_target", false)?;
    let red = reduction(req, "mean", true)?;
    shape.check_len("input", x.len())?;
    shape.check_len("target", t.len())?;
    // PyTorch's input.size(0): the rows of [R, N], the length of a 1-D [N].
    let one_dim = matches!(req.raw("shape"), Some(Value::Array(a)) if a.len() == 1);
    let batch = if one_dim { shape.n } else { shape.rows };
    let mut grad = vec![F::ZERO; x.len()];
    let mut loss = vec![F::ZERO; loss_len(red, x.len())];
    let opts = lc::KlDivOptions::new()
        .with_reduction(red)
        .with_log_target(log_target);
    lc::kl_div(
        Poly,
        &x,
        &t,
        batch,
        &opts,
        lc::Outputs::new()
            .with_grad(&mut grad)
            .with_losses(&mut loss),
    )?;
    Ok(vec![
        ("loss", float_array(&loss)),
        ("grad", float_array(&grad)),
    ])
}

/// `mse`: `loss`, `grad`.
fn mse<F: Real>(req: &Request<'_>) -> Result<Outputs, Failure>
where
    Poly: Backend<F>,
{
    let x = req.floats::<F>("input")?;
    let y = req.floats::<F>("target")?;
    let red = reduction(req, "mean", false)?;
    check_len("target", x.len(), y.len())?;
    let mut grad = vec![F::ZERO; x.len()];
    let mut loss = vec![F::ZERO; loss_len(red, x.len())];
    lc::mse_loss(
        Poly,
        &x,
        &y,
        &lc::MseOptions::new().with_reduction(red),
        lc::Outputs::new()
            .with_grad(&mut grad)
            .with_losses(&mut loss),
    )?;
    Ok(vec![
        ("loss", float_array(&loss)),
        ("grad", float_array(&grad)),
    ])
}

/// `sigmoid_focal`: `loss`, `grad`.
fn sigmoid_focal<F: Real>(req: &Request<'_>) -> Result<Outputs, Failure>
where
    Poly: Backend<F>,
{
    let x = req.floats::<F>("logits")?;
    let y = req.floats::<F>("target")?;
    let alpha = req.float_or("alpha", F::from_f64(0.25))?;
    let gamma = req.float_or("gamma", F::TWO)?;
    let red = reduction(req, "none", false)?;
    check_len("target", x.len(), y.len())?;
    let mut grad = vec![F::ZERO; x.len()];
    let mut loss = vec![F::ZERO; loss_len(red, x.len())];
    let opts = lc::SigmoidFocalOptions::new()
        .with_alpha(alpha)
        .with_gamma(gamma)
        .with_reduction(red);
    lc::sigmoid_focal_loss(
        Poly,
        &x,
        &y,
        &opts,
        lc::Outputs::new()
            .with_grad(&mut grad)
            .with_losses(&mut loss),
    )?;
    Ok(vec![
        ("loss", float_array(&loss)),
        ("grad", float_array(&grad)),
    ])
}

/// `info_nce`: `loss`, `grad_query`, `grad_positive`, `grad_negatives` (with negatives),
/// `grad_temperature`.
fn info_nce<F: Real>(req: &Request<'_>) -> Result<Outputs, Failure>
where
    Poly: Backend<F>,
{
    let q = req.floats::<F>("query")?;
    let k = req.floats::<F>("positive")?;
    let n = size(req, "n")?;
    let d = size(req, "d")?;
    let neg = opt_floats::<F>(req, "negatives")?;
    let m = match req.raw("m") {
        Some(_) => Some(size(req, "m")?),
        None => None,
    };
    let mode = str_or(req, "negative_mode", "unpaired")?;
    let tau = req.float_or("temperature", F::from_f64(0.1))?;
    let normalize = bool_or(req, "normalize", true)?;
    let red = reduction(req, "mean", false)?;
    let symmetric = bool_or(req, "symmetric", false)?;
    let paired = match mode {
        "unpaired" => false,
        "paired" => true,
        other => {
            return Err(Failure::invalid_param(format!(
                "`negative_mode` must be \"unpaired\" or \"paired\", found {}",
                Value::String(other.to_string())
            )))
        }
    };
    if neg.is_some() != m.is_some() {
        return Err(Failure::invalid_param(
            "`negatives` and `m` must be given together",
        ));
    }
    if d == 0 {
        return Err(Failure::shape("`d` must be at least 1"));
    }
    let nd = product(n, d)?;
    check_len("query", nd, q.len())?;
    check_len("positive", nd, k.len())?;
    let m = m.unwrap_or(0);
    if let Some(v) = &neg {
        let want = if paired {
            product(nd, m)?
        } else {
            product(m, d)?
        };
        check_len("negatives", want, v.len())?;
        if m == 0 {
            return Err(Failure::shape("`m` must be at least 1"));
        }
    }
    if !(tau > F::ZERO && tau.is_finite()) {
        return Err(Failure::invalid_param(format!(
            "`temperature` must be positive and finite, got {tau} (as {})",
            F::DTYPE
        )));
    }
    if symmetric && neg.is_some() {
        return Err(Failure::invalid_param(
            "`symmetric` is only allowed without negatives",
        ));
    }
    let negatives = match &neg {
        None => lc::Negatives::InBatch,
        Some(v) if paired => lc::Negatives::Paired { keys: v, m },
        Some(v) => lc::Negatives::Unpaired { keys: v, m },
    };
    let opts = lc::InfoNceOptions::new()
        .with_temperature(tau)
        .with_normalize(normalize)
        .with_reduction(red)
        .with_symmetric(symmetric);
    let mut scratch = vec![F::ZERO; lc::info_nce_scratch_len(n, m, &opts)];
    let (mut gq, mut gk) = (vec![F::ZERO; q.len()], vec![F::ZERO; k.len()]);
    let mut gn = vec![F::ZERO; neg.as_ref().map_or(0, Vec::len)];
    let mut gt = F::ZERO;
    let mut loss = vec![F::ZERO; loss_len(red, n)];
    let mut out = lc::InfoNceOutputs::new(&mut scratch)
        .with_losses(&mut loss)
        .with_grad_query(&mut gq)
        .with_grad_positive(&mut gk)
        .with_grad_temperature(&mut gt);
    if neg.is_some() {
        out = out.with_grad_negatives(&mut gn);
    }
    lc::info_nce(Poly, &q, &k, d, negatives, &opts, out)?;
    let mut outs = vec![
        ("loss", float_array(&loss)),
        ("grad_query", float_array(&gq)),
        ("grad_positive", float_array(&gk)),
    ];
    if neg.is_some() {
        outs.push(("grad_negatives", float_array(&gn)));
    }
    outs.push(("grad_temperature", one(gt)));
    Ok(outs)
}

/// `nt_xent`: `loss`, `grad`, `grad_temperature`.
fn nt_xent<F: Real>(req: &Request<'_>) -> Result<Outputs, Failure>
where
    Poly: Backend<F>,
{
    let z = req.floats::<F>("z")?;
    let n = size(req, "n")?;
    let d = size(req, "d")?;
    let tau = req.float_or("temperature", F::from_f64(0.1))?;
    let normalize = bool_or(req, "normalize", true)?;
    if d == 0 {
        return Err(Failure::shape("`d` must be at least 1"));
    }
    check_len("z", product(product(2, n)?, d)?, z.len())?;
    if !(tau > F::ZERO && tau.is_finite()) {
        return Err(Failure::invalid_param(format!(
            "`temperature` must be positive and finite, got {tau} (as {})",
            F::DTYPE
        )));
    }
    let mut grad = vec![F::ZERO; z.len()];
    let mut gt = F::ZERO;
    let mut scratch = vec![F::ZERO; lc::nt_xent_scratch_len(n)];
    let opts = lc::NtXentOptions::new()
        .with_temperature(tau)
        .with_normalize(normalize);
    let l = lc::nt_xent(
        Poly,
        &z,
        d,
        &opts,
        lc::NtXentOutputs::new(&mut scratch)
            .with_grad(&mut grad)
            .with_grad_temperature(&mut gt),
    )?;
    Ok(vec![
        ("loss", one(l)),
        ("grad", float_array(&grad)),
        ("grad_temperature", one(gt)),
    ])
}

/// `siglip`: `loss`, `grad_x`, `grad_y`, `grad_logit_scale`, `grad_logit_bias`.
fn siglip<F: Real>(req: &Request<'_>) -> Result<Outputs, Failure>
where
    Poly: Backend<F>,
{
    let x = req.floats::<F>("x")?;
    let y = req.floats::<F>("y")?;
    let n = size(req, "n")?;
    let d = size(req, "d")?;
    let t = req.float_or("logit_scale", F::from_f64(core::f64::consts::LN_10))?;
    let b = req.float_or("logit_bias", F::from_f64(-10.0))?;
    let normalize = bool_or(req, "normalize", true)?;
    if d == 0 {
        return Err(Failure::shape("`d` must be at least 1"));
    }
    let nd = product(n, d)?;
    check_len("x", nd, x.len())?;
    check_len("y", nd, y.len())?;
    let opts = lc::SiglipOptions::new()
        .with_logit_scale(t)
        .with_logit_bias(b)
        .with_normalize(normalize);
    let (mut gx, mut gy, mut gt, mut gb) = (
        vec![F::ZERO; x.len()],
        vec![F::ZERO; y.len()],
        F::ZERO,
        F::ZERO,
    );
    let l = lc::siglip_loss(
        Poly,
        &x,
        &y,
        d,
        &opts,
        lc::SiglipOutputs::new()
            .with_grad_x(&mut gx)
            .with_grad_y(&mut gy)
            .with_grad_logit_scale(&mut gt)
            .with_grad_logit_bias(&mut gb),
    )?;
    Ok(vec![
        ("loss", one(l)),
        ("grad_x", float_array(&gx)),
        ("grad_y", float_array(&gy)),
        ("grad_logit_scale", one(gt)),
        ("grad_logit_bias", one(gb)),
    ])
}

/// `softmax_focal`: `loss`, `grad`.
fn softmax_focal<F: Real>(req: &Request<'_>) -> Result<Outputs, Failure>
where
    Poly: Backend<F>,
{
    let x = req.floats::<F>("logits")?;
    let shape = req.row_shape("shape")?;
    let t = targets(req, "target")?;
    let gamma = req.float_or("gamma", F::TWO)?;
    let alpha = opt_floats::<F>(req, "alpha")?;
    let ignore = int_or(req, "ignore_index", -100)?;
    let red = reduction(req, "mean", false)?;
    shape.check_len("logits", x.len())?;
    check_len("target", shape.rows, t.len())?;
    if let Some(a) = &alpha {
        check_len("alpha", shape.n, a.len())?;
    }
    let mut o = lc::SoftmaxFocalOptions::new()
        .with_gamma(gamma)
        .with_ignore_index(ignore)
        .with_reduction(red);
    if let Some(a) = &alpha {
        o = o.with_alpha(a);
    }
    let mut grad = vec![F::ZERO; x.len()];
    let mut loss = vec![F::ZERO; loss_len(red, shape.rows)];
    lc::softmax_focal_loss(
        Poly,
        &x,
        shape.n,
        &t,
        &o,
        lc::Outputs::new()
            .with_grad(&mut grad)
            .with_losses(&mut loss),
    )?;
    Ok(vec![
        ("loss", float_array(&loss)),
        ("grad", float_array(&grad)),
    ])
}

/// `linear_cross_entropy`: `loss`, `grad_h`, `grad_w`, `lse` (blocks of 256 vocabulary rows).
fn linear_cross_entropy<F: Real>(req: &Request<'_>) -> Result<Outputs, Failure>
where
    Poly: Backend<F>,
{
    let h = req.floats::<F>("h")?;
    let w = req.floats::<F>("w")?;
    let t_rows = size(req, "t")?;
    let k = size(req, "k")?;
    let v = size(req, "v")?;
    let target = targets(req, "target")?;
    let f = CeFields::<F>::parse(req)?;
    if k == 0 || v == 0 {
        return Err(Failure::shape("`k` and `v` must be at least 1"));
    }
    check_len("h", product(t_rows, k)?, h.len())?;
    check_len("w", product(v, k)?, w.len())?;
    check_len("target", t_rows, target.len())?;
    let opts = f.options(None);
    let (mut gh, mut gw) = (vec![F::ZERO; h.len()], vec![F::ZERO; w.len()]);
    let mut lse = vec![F::ZERO; t_rows];
    let mut loss = vec![F::ZERO; loss_len(f.reduction, t_rows)];
    let mut scratch = vec![F::ZERO; lc::linear_cross_entropy_scratch_len(t_rows.max(1), 256)];
    lc::linear_cross_entropy(
        Poly,
        &h,
        &w,
        k,
        &target,
        &opts,
        lc::LinearCrossEntropyOutputs::new(&mut scratch)
            .with_losses(&mut loss)
            .with_grad_h(&mut gh)
            .with_grad_w(&mut gw)
            .with_lse(&mut lse),
    )?;
    Ok(vec![
        ("loss", float_array(&loss)),
        ("grad_h", float_array(&gh)),
        ("grad_w", float_array(&gw)),
        ("lse", float_array(&lse)),
    ])
}
