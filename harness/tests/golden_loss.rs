//! loss-core against the golden vectors of `harness/golden/gen_loss.py`: onnxruntime's
//! SoftmaxCrossEntropyLoss / NegativeLogLikelihoodLoss (run in the case's dtype) and the
//! numpy/scipy formulas of PyTorch and torchvision, gradients by complex-step differentiation.
//!
//! Tolerance on every `loss` and `grad` tensor, as relative error
//! `max|got − want| / max(max|want|, 1e-3)`: f64 `1e-13` (against the f64 numpy/onnxruntime
//! values), f32 `1e-6` (against f64 references, or onnxruntime's own f32 result). The worst
//! errors are printed with `-- --nocapture`.

mod loss_support;

use loss_core::softmax_core::backend::{Backend, Poly};
use loss_core::softmax_core::Float;
use loss_core::*;
use loss_support::rel_err;
use serde_json::Value;

fn load(file: &str) -> Vec<Value> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("golden")
        .join(file);
    let text = std::fs::read_to_string(&path).expect("golden file");
    let v: Value = serde_json::from_str(&text).expect("golden JSON");
    v["cases"].as_array().expect("cases").clone()
}

fn fl(v: &Value) -> f64 {
    match v {
        Value::Number(n) => n.as_f64().expect("number"),
        Value::String(s) if s == "inf" => f64::INFINITY,
        Value::String(s) if s == "-inf" => f64::NEG_INFINITY,
        Value::String(s) if s == "nan" => f64::NAN,
        other => panic!("not a float: {other}"),
    }
}

fn arr<F: Float>(c: &Value, k: &str) -> Option<Vec<F>> {
    c.get(k).map(|a| {
        a.as_array()
            .expect("array")
            .iter()
            .map(|v| F::from_f64(fl(v)))
            .collect()
    })
}

fn arr64(c: &Value, k: &str) -> Vec<f64> {
    c[k].as_array().expect(k).iter().map(fl).collect()
}

fn ints(c: &Value, k: &str) -> Vec<i64> {
    c[k].as_array()
        .expect(k)
        .iter()
        .map(|v| v.as_i64().expect("int"))
        .collect()
}

fn red(c: &Value) -> Reduction {
    match c["reduction"].as_str().expect("reduction") {
        "none" => Reduction::None,
        "sum" => Reduction::Sum,
        "mean" => Reduction::Mean,
        "batchmean" => Reduction::BatchMean,
        r => panic!("reduction {r}"),
    }
}

fn shape(c: &Value) -> (usize, usize) {
    let s = c["shape"].as_array().expect("shape");
    (
        s[0].as_u64().expect("rows") as usize,
        s[1].as_u64().expect("cols") as usize,
    )
}

/// Runs one case in `F`; returns `(loss, grad)` widened.
fn run_case<F: Float>(c: &Value) -> (Vec<f64>, Vec<f64>)
where
    Poly: Backend<F>,
{
    let (b, n) = shape(c);
    let r = red(c);
    let name = c["name"].as_str().expect("name");
    let op = c
        .get("op")
        .and_then(Value::as_str)
        .unwrap_or(if name.starts_with("nll") {
            "nll_loss"
        } else {
            "cross_entropy"
        });
    let input_key = match op {
        "nll_loss" => "log_probs",
        "mse" | "kl_div" => "input",
        _ => "logits",
    };
    let x: Vec<F> = arr(c, input_key).expect("input");
    let mut grad = vec![F::ZERO; x.len()];
    let per = if op == "bce_with_logits" || op == "mse" || op == "sigmoid_focal" || op == "kl_div" {
        b * n
    } else {
        b
    };
    let mut loss = vec![F::ZERO; if r == Reduction::None { per } else { 1 }];
    // The outputs of each op (every op writes the per-sample losses and the input gradient).
    macro_rules! out {
        ($t:ident) => {
            $t::new().with_grad(&mut grad).with_losses(&mut loss)
        };
    }
    let weight: Option<Vec<F>> = arr(c, "weight");
    let f = |k: &str| F::from_f64(fl(&c[k]));
    let res = match op {
        "cross_entropy" => {
            let mut o = CrossEntropyOptions::new()
                .with_reduction(r)
                .with_ignore_index(c["ignore_index"].as_i64().expect("ignore"))
                .with_label_smoothing(f("label_smoothing"));
            if let Some(w) = &weight {
                o = o.with_weight(w);
            }
            match arr::<F>(c, "target_probs") {
                Some(p) => cross_entropy_probs(Poly, &x, n, &p, &o, out!(CrossEntropyOutputs)),
                None => cross_entropy(
                    Poly,
                    &x,
                    n,
                    &ints(c, "target"),
                    &o,
                    out!(CrossEntropyOutputs),
                ),
            }
        }
        "nll_loss" => {
            let mut o = NllOptions::new()
                .with_reduction(r)
                .with_ignore_index(c["ignore_index"].as_i64().expect("ignore"));
            if let Some(w) = &weight {
                o = o.with_weight(w);
            }
            nll_loss(Poly, &x, n, &ints(c, "target"), &o, out!(Outputs))
        }
        "bce_with_logits" => {
            let pw: Option<Vec<F>> = arr(c, "pos_weight");
            let mut o = BceOptions::new().with_reduction(r);
            if let Some(w) = &weight {
                o = o.with_weight(w);
            }
            if let Some(p) = &pw {
                o = o.with_pos_weight(p);
            }
            let y: Vec<F> = arr(c, "target").expect("target");
            binary_cross_entropy_with_logits(Poly, &x, &y, n, &o, out!(Outputs))
        }
        "mse" => mse_loss(
            Poly,
            &x,
            &arr::<F>(c, "target").expect("target"),
            &MseOptions::new().with_reduction(r),
            out!(Outputs),
        ),
        "sigmoid_focal" => sigmoid_focal_loss(
            Poly,
            &x,
            &arr::<F>(c, "target").expect("target"),
            &SigmoidFocalOptions::new()
                .with_alpha(f("alpha"))
                .with_gamma(f("gamma"))
                .with_reduction(r),
            out!(Outputs),
        ),
        "kl_div" => kl_div(
            Poly,
            &x,
            &arr::<F>(c, "target").expect("target"),
            b,
            &KlDivOptions::new()
                .with_reduction(r)
                .with_log_target(c["log_target"].as_bool().expect("log_target")),
            out!(Outputs),
        ),
        "softmax_focal" => {
            let al: Option<Vec<F>> = arr(c, "alpha");
            let mut o = SoftmaxFocalOptions::new()
                .with_gamma(f("gamma"))
                .with_reduction(r);
            if let Some(a) = &al {
                o = o.with_alpha(a);
            }
            softmax_focal_loss(Poly, &x, n, &ints(c, "target"), &o, out!(Outputs))
        }
        other => panic!("unknown op {other}"),
    };
    let total = res.unwrap_or_else(|e| panic!("{name}: {e}"));
    if r != Reduction::None {
        assert_eq!(total, loss[0], "{name}: returned and written loss");
    }
    (
        loss.iter().map(|v| v.to_f64()).collect(),
        grad.iter().map(|v| v.to_f64()).collect(),
    )
}

fn check_file(file: &str) {
    let mut worst = [0.0f64; 4];
    let cases = load(file);
    assert!(cases.len() > 20, "{file}: too few cases");
    for c in &cases {
        let name = c["name"].as_str().expect("name");
        let f32_case = c["dtype"] == "f32";
        let (loss, grad) = if f32_case {
            run_case::<f32>(c)
        } else {
            run_case::<f64>(c)
        };
        let tol = if f32_case { 1e-6 } else { 1e-13 };
        let want_loss = arr64(c, "loss");
        let want_grad = arr64(c, "grad");
        let el = rel_err(&loss, &want_loss, 1e-3);
        let eg = rel_err(&grad, &want_grad, 1e-3);
        let slot = usize::from(f32_case) * 2;
        worst[slot] = worst[slot].max(el);
        worst[slot + 1] = worst[slot + 1].max(eg);
        assert!(
            el <= tol,
            "{file} {name}: loss rel err {el:e}\n got {loss:?}\nwant {want_loss:?}"
        );
        assert!(
            eg <= tol,
            "{file} {name}: grad rel err {eg:e}\n got {grad:?}\nwant {want_grad:?}"
        );
        assert!(
            grad.iter().all(|g| g.is_finite()),
            "{name}: non-finite grad"
        );
    }
    println!(
        "{file}: {} cases; worst rel err f64 loss {:e} grad {:e}; f32 loss {:e} grad {:e}",
        cases.len(),
        worst[0],
        worst[1],
        worst[2],
        worst[3]
    );
}

#[test]
fn cross_entropy_and_nll_match_onnxruntime_and_numpy() {
    check_file("loss_ce.json");
}

#[test]
fn elementwise_and_focal_losses_match_scipy_numpy() {
    check_file("loss_elementwise.json");
}
