//! Golden vectors for attention-core: onnxruntime's opset-23 `Attention` operator
//! (`harness/golden/attention_ort.json`, written by `harness/golden/gen_attention.py`: float32,
//! one thread, causal (top-left, as ONNX's `is_causal`) and not, multi-head, grouped- and
//! multi-query, boolean and float masks, soft-capping without a mask, T != S, 130 keys across
//! two 128-key blocks), each case also carrying a float64 numpy computation of the same formula
//! from the same f32 inputs (`o_ref`). attention-core (f32, `Poly` and `Libm`) is checked
//! against both.
//!
//! # Tolerance (per output element, derived, not fitted)
//!
//! With `u = 2⁻²⁴`, `A` the largest `scale·Σ_k |q_k·k_k|` of the row and `B` its largest |bias|:
//! a score's rounding is at most `δ = (d + 8)·u·(A + B)` (the `d`-term dot product, the scale,
//! the soft-cap's tanh and the bias addition); a weight's relative error is then at most
//! `2δ + 6u` (exp and normalisation), and the output adds its accumulation over at most S
//! blocks: `|Δo| <= (2δ + (S + 8)·u)·max|v|` against `o_ref`. Against onnxruntime, whose own
//! error is of the same kind (it scales Q and K by √scale each), twice that.
//!
//! `cargo test -p harness --test golden_attention -- --nocapture` prints the largest error as a
//! fraction of the bound and in absolute terms, for attention-core and for onnxruntime itself
//! (against `o_ref`).

use attention_core::backend::{Libm, Poly};
use attention_core::{attention, Causal, Dims, Options, Output, Qkv};
use serde_json::Value;

const U: f64 = 5.960_464_477_539_063e-8;

fn floats(c: &Value, key: &str) -> Vec<f64> {
    c[key]
        .as_array()
        .unwrap_or_else(|| panic!("`{key}`"))
        .iter()
        .map(|v| match v {
            Value::Number(n) => n.as_str().parse::<f64>().expect("number"),
            Value::String(s) if s == "-inf" => f64::NEG_INFINITY,
            other => panic!("bad float {other}"),
        })
        .collect()
}

fn size(c: &Value, key: &str) -> usize {
    c[key].as_u64().unwrap_or_else(|| panic!("`{key}`")) as usize
}

#[test]
fn onnxruntime_attention_op() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/golden/attention_ort.json");
    let text = std::fs::read_to_string(path).expect("attention_ort.json");
    let doc: Value = serde_json::from_str(&text).expect("JSON");
    let cases = doc["cases"].as_array().expect("cases");
    assert!(cases.len() >= 15);
    let (mut worst_ref, mut worst_ort, mut ort_self) = (0.0f64, 0.0f64, 0.0f64);
    let (mut abs_ref, mut abs_ort_self) = (0.0f64, 0.0f64);
    for c in cases {
        let name = c["name"].as_str().expect("name");
        let (h, hkv, t, s, d, dv) = (
            size(c, "heads"),
            size(c, "kv_heads"),
            size(c, "t"),
            size(c, "s"),
            size(c, "d"),
            size(c, "dv"),
        );
        let to32 = |v: Vec<f64>| v.into_iter().map(|x| x as f32).collect::<Vec<f32>>();
        let (q, k, v) = (
            to32(floats(c, "q")),
            to32(floats(c, "k")),
            to32(floats(c, "v")),
        );
        let scale = c.get("scale").map(|_| floats_one(c, "scale") as f32);
        let softcap = c.get("softcap").map(|_| floats_one(c, "softcap") as f32);
        let mask: Option<Vec<bool>> = c.get("mask").map(|m| {
            m.as_array()
                .expect("mask")
                .iter()
                .map(|b| b.as_bool().expect("bool"))
                .collect()
        });
        let bias = c.get("bias").map(|_| to32(floats(c, "bias")));
        let causal = match c["causal"].as_str().expect("causal") {
            "top_left" => Causal::TopLeft,
            "none" => Causal::None,
            other => panic!("{other}"),
        };
        let o_ort = floats(c, "o_ort");
        let o_ref = floats(c, "o_ref");

        let mut opts = Options::new().with_causal(causal);
        if let Some(x) = scale {
            opts = opts.with_scale(x);
        }
        if let Some(x) = softcap {
            opts = opts.with_softcap(x);
        }
        if let Some(m) = &mask {
            opts = opts.with_mask(m);
        }
        if let Some(b) = &bias {
            opts = opts.with_bias(b);
        }
        let sc = scale.map_or(1.0 / (d as f64).sqrt(), f64::from);
        // The bound of each output row (h, t).
        let bound = |hh: usize, i: usize| {
            let g = hh / (h / hkv);
            let qr = &q[(hh * t + i) * d..][..d];
            let a = (0..s)
                .map(|j| {
                    let kr = &k[(g * s + j) * d..][..d];
                    sc * qr
                        .iter()
                        .zip(kr)
                        .map(|(x, y)| (*x as f64 * *y as f64).abs())
                        .sum::<f64>()
                })
                .fold(0.0, f64::max);
            let b = bias.as_ref().map_or(0.0, |b| {
                b[(hh * t + i) * s..][..s]
                    .iter()
                    .fold(0.0f64, |m, x| m.max(x.abs() as f64))
            });
            let vmax = v[g * s * dv..][..s * dv]
                .iter()
                .fold(0.0f64, |m, x| m.max(x.abs() as f64));
            let delta = (d as f64 + 8.0) * U * (a + b);
            (2.0 * delta + (s as f64 + 8.0) * U) * vmax
        };
        for libm in [false, true] {
            let dims = Dims::new(h, hkv, t, s, d, dv);
            let mut o = vec![0.0f32; h * t * dv];
            let x = Qkv::new(&q, &k, &v);
            let r = if libm {
                attention(Libm, &dims, x, &opts, Output::new(&mut o))
            } else {
                attention(Poly, &dims, x, &opts, Output::new(&mut o))
            };
            r.unwrap_or_else(|e| panic!("{name}: {e}"));
            for (idx, &got) in o.iter().enumerate() {
                let (row, hh) = (idx / dv, idx / dv / t);
                let tol = bound(hh, row % t);
                let got = got as f64;
                let e_ref = (got - o_ref[idx]).abs();
                let e_ort = (got - o_ort[idx]).abs();
                assert!(
                    e_ref <= tol,
                    "{name} (libm {libm}) o[{idx}] = {got}, reference {} (err {e_ref:e} > {tol:e})",
                    o_ref[idx]
                );
                assert!(
                    e_ort <= 2.0 * tol,
                    "{name} (libm {libm}) o[{idx}] = {got}, onnxruntime {} (err {e_ort:e} > {:e})",
                    o_ort[idx],
                    2.0 * tol
                );
                worst_ref = worst_ref.max(e_ref / tol);
                worst_ort = worst_ort.max(e_ort / (2.0 * tol));
                abs_ref = abs_ref.max(e_ref);
                let ort_err = (o_ort[idx] - o_ref[idx]).abs();
                ort_self = ort_self.max(ort_err / tol);
                abs_ort_self = abs_ort_self.max(ort_err);
            }
        }
    }
    eprintln!(
        "attention-core vs float64: max |err| {abs_ref:.3e} ({worst_ref:.3} of the bound); \
         vs onnxruntime: {worst_ort:.3} of the bound; onnxruntime vs float64: max |err| \
         {abs_ort_self:.3e} ({ort_self:.3} of the bound)"
    );
}

fn floats_one(c: &Value, key: &str) -> f64 {
    match &c[key] {
        Value::Number(n) => n.as_str().parse().expect("number"),
        other => panic!("`{key}` = {other}"),
    }
}
