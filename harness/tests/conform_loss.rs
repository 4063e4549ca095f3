//! `harness conform`'s loss ops (CONFORMANCE.md, "Losses") driven as outside checks drive them:
//! the real binary, JSON lines on stdin, answers read back from stdout.
//!
//! Every op, in f32 and f64, over its option matrix: the returned `loss` against the naive f64
//! reference of `loss_support` (written from PyTorch's / torchvision's / `info-nce-pytorch`'s
//! formulas, nothing from the workspace), every returned gradient against central finite
//! differences of that reference, `lse` against the reference's logsumexp. Tolerance: relative
//! error `max|got − want| / max(max|want|, 1e-3)` <= 1e-6 in f64 (the finite differences are good
//! to ~1e-9) and <= 5e-6 in f32 (inputs exact in f32; the f32 kernels' documented accuracy is a few
//! ulp per element, logits up to 10 = 1/τ). Then the edge semantics (ignored `-inf` rows) and
//! every error kind of the loss ops with its id.

mod conform_support;
mod loss_support;

use conform_support::run;
use loss_support as r;
use loss_support::{Neg, Red, Rng};
use serde_json::{Map, Value};

fn num(v: f64) -> String {
    if v.is_nan() {
        "\"nan\"".into()
    } else if v.is_infinite() {
        if v > 0.0 { "\"inf\"" } else { "\"-inf\"" }.into()
    } else {
        format!("{v:?}")
    }
}

fn arr(v: &[f64]) -> String {
    let items: Vec<String> = v.iter().map(|&x| num(x)).collect();
    format!("[{}]", items.join(","))
}

fn ints<T: std::fmt::Display>(v: &[T]) -> String {
    let items: Vec<String> = v.iter().map(|x| x.to_string()).collect();
    format!("[{}]", items.join(","))
}

fn floats(a: &Map<String, Value>, field: &str) -> Vec<f64> {
    let Some(Value::Array(items)) = a.get(field) else {
        panic!("no array `{field}` in {a:?}")
    };
    items
        .iter()
        .map(|v| match v {
            Value::Number(n) => n.as_f64().expect("f64"),
            Value::String(s) if s == "nan" => f64::NAN,
            Value::String(s) if s == "inf" => f64::INFINITY,
            Value::String(s) if s == "-inf" => f64::NEG_INFINITY,
            other => panic!("`{field}`: not a float: {other}"),
        })
        .collect()
}

/// One request and the values its answer must hold.
struct Spec {
    what: String,
    op: &'static str,
    fields: Vec<(&'static str, String)>,
    expect: Vec<(&'static str, Vec<f64>)>,
}

impl Spec {
    fn line(&self, id: usize, dtype: &str) -> String {
        let mut s = format!(r#"{{"id":{id},"op":"{}","dtype":"{dtype}""#, self.op);
        for (k, v) in &self.fields {
            s.push_str(&format!(r#","{k}":{v}"#));
        }
        s.push('}');
        s
    }
}

const H: f64 = 1e-4;

fn red_fields(red: Red) -> (&'static str, String) {
    ("reduction", format!("\"{}\"", red.name()))
}

fn loss_out(red: Red, total: f64, per: Vec<f64>) -> Vec<f64> {
    if red == Red::None {
        per
    } else {
        vec![total]
    }
}

fn ce_specs(rng: &mut Rng, out: &mut Vec<Spec>) {
    let (b, c) = (5usize, 7usize);
    for red in [Red::Mean, Red::Sum, Red::None] {
        for (weighted, eps, cap, zl, probs) in [
            (false, 0.0, None, 0.0, false),
            (true, 0.0, None, 0.0, false),
            (true, 0.2, None, 0.0, false),
            (false, 0.1, Some(2.5), 1e-2, false),
            (true, 0.3, Some(4.0), 1e-3, false),
            (false, 0.0, None, 0.0, true),
            (true, 0.25, Some(3.0), 1e-2, true),
        ] {
            let x = rng.vec32(b * c, -4.0, 4.0);
            let w = weighted.then(|| rng.vec32(c, 0.2, 2.0));
            let o = r::Ce {
                weight: w.clone(),
                ignore: -100,
                eps,
                red,
                cap,
                zl,
            };
            let mut fields = vec![
                ("logits", arr(&x)),
                ("shape", format!("[{b},{c}]")),
                ("label_smoothing", num(eps)),
                ("z_loss", num(zl)),
                red_fields(red),
            ];
            if let Some(w) = &w {
                fields.push(("weight", arr(w)));
            }
            if let Some(cap) = cap {
                fields.push(("softcap", num(cap)));
            }
            let (total, per, grad) = if probs {
                let mut tp = rng.vec32(b * c, 0.0, 1.0);
                for row in tp.chunks_mut(c) {
                    let s: f64 = row.iter().sum();
                    row.iter_mut().for_each(|v| *v = (*v / s) as f32 as f64);
                }
                fields.push(("target_probs", arr(&tp)));
                let (t, p) = r::cross_entropy_probs(&x, c, &tp, &o);
                let g = r::fd(|x| r::cross_entropy_probs(x, c, &tp, &o).0, &x, H);
                (t, p, g)
            } else {
                // Row 2 ignored (index -1 as ignore_index half of the time).
                let ignore = if rng.below(2) == 0 { -100 } else { -1 };
                let mut t: Vec<i64> = (0..b).map(|_| rng.below(c) as i64).collect();
                t[2] = ignore;
                let o = r::Ce {
                    ignore,
                    ..o.clone()
                };
                fields.push(("target", ints(&t)));
                fields.push(("ignore_index", ignore.to_string()));
                let (tt, p) = r::cross_entropy(&x, c, &t, &o);
                let g = r::fd(|x| r::cross_entropy(x, c, &t, &o).0, &x, H);
                (tt, p, g)
            };
            let lse: Vec<f64> = x
                .chunks(c)
                .map(|row| {
                    let z: Vec<f64> = row
                        .iter()
                        .map(|&v| cap.map_or(v, |cc| r::softcap(v, cc)))
                        .collect();
                    r::lse(&z)
                })
                .collect();
            out.push(Spec {
                what: format!("ce {red:?} w {weighted} eps {eps} cap {cap:?} z {zl} probs {probs}"),
                op: "cross_entropy",
                fields,
                expect: vec![
                    ("loss", loss_out(red, total, per)),
                    ("grad", grad),
                    ("lse", lse),
                ],
            });
        }
    }
}

fn nll_specs(rng: &mut Rng, out: &mut Vec<Spec>) {
    let (b, c) = (6usize, 5usize);
    for red in [Red::Mean, Red::Sum, Red::None] {
        for weighted in [false, true] {
            let x = rng.vec32(b * c, -5.0, 0.0);
            let w = weighted.then(|| rng.vec32(c, 0.2, 2.0));
            let mut t: Vec<i64> = (0..b).map(|_| rng.below(c) as i64).collect();
            t[1] = 3; // ignore_index 3 is a class index here: those rows are ignored.
            let (total, per) = r::nll(&x, c, &t, w.as_deref(), 3, red);
            let grad = r::fd(|x| r::nll(x, c, &t, w.as_deref(), 3, red).0, &x, H);
            let mut fields = vec![
                ("log_probs", arr(&x)),
                ("shape", format!("[{b},{c}]")),
                ("target", ints(&t)),
                ("ignore_index", "3".into()),
                red_fields(red),
            ];
            if let Some(w) = &w {
                fields.push(("weight", arr(w)));
            }
            out.push(Spec {
                what: format!("nll {red:?} w {weighted}"),
                op: "nll_loss",
                fields,
                expect: vec![("loss", loss_out(red, total, per)), ("grad", grad)],
            });
        }
    }
}

fn elementwise_specs(rng: &mut Rng, out: &mut Vec<Spec>) {
    let (b, c) = (3usize, 4usize);
    for red in [Red::Mean, Red::Sum, Red::None] {
        // bce_with_logits.
        for (weighted, pos) in [(false, false), (true, true)] {
            let x = rng.vec32(b * c, -6.0, 6.0);
            let y = rng.vec32(b * c, 0.0, 1.0);
            let w = weighted.then(|| rng.vec32(b * c, 0.1, 2.0));
            let pw = pos.then(|| rng.vec32(c, 0.5, 3.0));
            let (total, per) = r::bce(&x, &y, c, w.as_deref(), pw.as_deref(), red);
            let grad = r::fd(
                |x| r::bce(x, &y, c, w.as_deref(), pw.as_deref(), red).0,
                &x,
                H,
            );
            let mut fields = vec![
                ("logits", arr(&x)),
                ("target", arr(&y)),
                ("shape", format!("[{b},{c}]")),
                red_fields(red),
            ];
            if let Some(w) = &w {
                fields.push(("weight", arr(w)));
            }
            if let Some(p) = &pw {
                fields.push(("pos_weight", arr(p)));
            }
            out.push(Spec {
                what: format!("bce {red:?} w {weighted} pos {pos}"),
                op: "bce_with_logits",
                fields,
                expect: vec![("loss", loss_out(red, total, per)), ("grad", grad)],
            });
        }
        // mse.
        let x = rng.vec32(b * c, -2.0, 2.0);
        let y = rng.vec32(b * c, -2.0, 2.0);
        let (total, per) = r::mse(&x, &y, red);
        let grad = r::fd(|x| r::mse(x, &y, red).0, &x, H);
        out.push(Spec {
            what: format!("mse {red:?}"),
            op: "mse",
            fields: vec![("input", arr(&x)), ("target", arr(&y)), red_fields(red)],
            expect: vec![("loss", loss_out(red, total, per)), ("grad", grad)],
        });
        // sigmoid_focal.
        for (alpha, gamma) in [(0.25, 2.0), (-1.0, 0.0), (0.6, 1.5)] {
            let x = rng.vec32(b * c, -4.0, 4.0);
            let y: Vec<f64> = (0..b * c).map(|_| rng.below(2) as f64).collect();
            let (total, per) = r::sigmoid_focal(&x, &y, alpha, gamma, red);
            let grad = r::fd(|x| r::sigmoid_focal(x, &y, alpha, gamma, red).0, &x, H);
            out.push(Spec {
                what: format!("sigmoid_focal {red:?} α {alpha} γ {gamma}"),
                op: "sigmoid_focal",
                fields: vec![
                    ("logits", arr(&x)),
                    ("target", arr(&y)),
                    ("alpha", num(alpha)),
                    ("gamma", num(gamma)),
                    red_fields(red),
                ],
                expect: vec![("loss", loss_out(red, total, per)), ("grad", grad)],
            });
        }
    }
    // kl_div, every reduction, both target forms, 1-D and 2-D shapes.
    for red in [Red::Mean, Red::Sum, Red::None, Red::BatchMean] {
        for log_target in [false, true] {
            for one_dim in [false, true] {
                let x: Vec<f64> = r::log_softmax(&rng.vec32(b * c, -2.0, 2.0))
                    .iter()
                    .map(|&v| v as f32 as f64)
                    .collect();
                let mut t = rng.vec32(b * c, 0.0, 1.0);
                t[0] = 0.0;
                if log_target {
                    t.iter_mut()
                        .for_each(|v| *v = (v.max(1e-3)).ln() as f32 as f64);
                }
                let batch = if one_dim { b * c } else { b };
                let (total, per) = r::kl(&x, &t, log_target, batch, red);
                let grad = r::fd(|x| r::kl(x, &t, log_target, batch, red).0, &x, H);
                let shape = if one_dim {
                    format!("[{}]", b * c)
                } else {
                    format!("[{b},{c}]")
                };
                out.push(Spec {
                    what: format!("kl {red:?} log_target {log_target} 1-D {one_dim}"),
                    op: "kl_div",
                    fields: vec![
                        ("input", arr(&x)),
                        ("target", arr(&t)),
                        ("shape", shape),
                        ("log_target", log_target.to_string()),
                        red_fields(red),
                    ],
                    expect: vec![("loss", loss_out(red, total, per)), ("grad", grad)],
                });
            }
        }
    }
}

fn focal_specs(rng: &mut Rng, out: &mut Vec<Spec>) {
    let (b, c) = (5usize, 6usize);
    for red in [Red::Mean, Red::Sum, Red::None] {
        for (gamma, alpha) in [(0.0, false), (2.0, false), (1.5, true)] {
            let x = rng.vec32(b * c, -3.0, 3.0);
            let a = alpha.then(|| rng.vec32(c, 0.1, 1.0));
            let mut t: Vec<i64> = (0..b).map(|_| rng.below(c) as i64).collect();
            t[4] = -100;
            let (total, per) = r::softmax_focal(&x, c, &t, gamma, a.as_deref(), -100, red);
            let grad = r::fd(
                |x| r::softmax_focal(x, c, &t, gamma, a.as_deref(), -100, red).0,
                &x,
                H,
            );
            let mut fields = vec![
                ("logits", arr(&x)),
                ("shape", format!("[{b},{c}]")),
                ("target", ints(&t)),
                ("gamma", num(gamma)),
                red_fields(red),
            ];
            if let Some(a) = &a {
                fields.push(("alpha", arr(a)));
            }
            out.push(Spec {
                what: format!("softmax_focal {red:?} γ {gamma} α {alpha}"),
                op: "softmax_focal",
                fields,
                expect: vec![("loss", loss_out(red, total, per)), ("grad", grad)],
            });
        }
    }
}

/// A gradient w.r.t. the temperature by finite differences in τ itself.
fn fd_scalar(f: impl Fn(f64) -> f64, x: f64) -> f64 {
    r::fd(|v| f(v[0]), &[x], H)[0]
}

fn contrastive_specs(rng: &mut Rng, out: &mut Vec<Spec>) {
    let (n, d, m) = (4usize, 5usize, 3usize);
    for (mode, red, normalize, tau, symmetric) in [
        ("inbatch", Red::Mean, true, 0.1, false),
        ("inbatch", Red::None, false, 0.7, false),
        ("inbatch", Red::Mean, true, 0.2, true),
        ("inbatch", Red::None, true, 0.5, true),
        ("unpaired", Red::Sum, true, 0.1, false),
        ("unpaired", Red::Mean, false, 1.3, false),
        ("paired", Red::None, true, 0.3, false),
        ("paired", Red::Mean, false, 0.9, false),
    ] {
        let scale = if normalize { 3.0 } else { 0.6 };
        let q = rng.vec32(n * d, -scale, scale);
        let k = rng.vec32(n * d, -scale, scale);
        let negs = match mode {
            "unpaired" => rng.vec32(m * d, -scale, scale),
            "paired" => rng.vec32(n * m * d, -scale, scale),
            _ => vec![],
        };
        let neg_of = |v: &[f64]| match mode {
            "unpaired" => Neg::Unpaired(v.to_vec(), m),
            "paired" => Neg::Paired(v.to_vec(), m),
            _ => Neg::InBatch,
        };
        let f = |q: &[f64], k: &[f64], nv: &[f64], tau: f64| {
            r::info_nce(q, k, d, &neg_of(nv), tau, normalize, red, symmetric)
        };
        let (total, per) = f(&q, &k, &negs, tau);
        let mut expect = vec![
            ("loss", loss_out(red, total, per)),
            ("grad_query", r::fd(|x| f(x, &k, &negs, tau).0, &q, H)),
            ("grad_positive", r::fd(|x| f(&q, x, &negs, tau).0, &k, H)),
        ];
        let mut fields = vec![
            ("query", arr(&q)),
            ("positive", arr(&k)),
            ("n", n.to_string()),
            ("d", d.to_string()),
            ("temperature", num(tau)),
            ("normalize", normalize.to_string()),
            ("symmetric", symmetric.to_string()),
            red_fields(red),
        ];
        if mode != "inbatch" {
            expect.push(("grad_negatives", r::fd(|x| f(&q, &k, x, tau).0, &negs, H)));
            fields.push(("negatives", arr(&negs)));
            fields.push(("m", m.to_string()));
            fields.push(("negative_mode", format!("\"{mode}\"")));
        }
        expect.push((
            "grad_temperature",
            vec![fd_scalar(|t| f(&q, &k, &negs, t).0, tau)],
        ));
        out.push(Spec {
            what: format!("info_nce {mode} {red:?} norm {normalize} τ {tau} sym {symmetric}"),
            op: "info_nce",
            fields,
            expect,
        });
    }
    for (normalize, tau) in [(true, 0.1), (false, 0.8)] {
        let scale = if normalize { 3.0 } else { 0.6 };
        let z = rng.vec32(2 * n * d, -scale, scale);
        let loss = r::nt_xent(&z, d, tau, normalize);
        out.push(Spec {
            what: format!("nt_xent norm {normalize} τ {tau}"),
            op: "nt_xent",
            fields: vec![
                ("z", arr(&z)),
                ("n", n.to_string()),
                ("d", d.to_string()),
                ("temperature", num(tau)),
                ("normalize", normalize.to_string()),
            ],
            expect: vec![
                ("loss", vec![loss]),
                ("grad", r::fd(|x| r::nt_xent(x, d, tau, normalize), &z, H)),
                (
                    "grad_temperature",
                    vec![fd_scalar(|t| r::nt_xent(&z, d, t, normalize), tau)],
                ),
            ],
        });
    }
    for (normalize, t, b) in [(true, 10f64.ln(), -10.0), (false, 0.3, -1.5)] {
        let scale = if normalize { 3.0 } else { 0.8 };
        let x = rng.vec32(n * d, -scale, scale);
        let y = rng.vec32(n * d, -scale, scale);
        let s = |x: &[f64], y: &[f64], t: f64, b: f64| r::siglip(x, y, d, t, b, normalize);
        out.push(Spec {
            what: format!("siglip norm {normalize}"),
            op: "siglip",
            fields: vec![
                ("x", arr(&x)),
                ("y", arr(&y)),
                ("n", n.to_string()),
                ("d", d.to_string()),
                ("logit_scale", num(t)),
                ("logit_bias", num(b)),
                ("normalize", normalize.to_string()),
            ],
            expect: vec![
                ("loss", vec![s(&x, &y, t, b)]),
                ("grad_x", r::fd(|v| s(v, &y, t, b), &x, H)),
                ("grad_y", r::fd(|v| s(&x, v, t, b), &y, H)),
                ("grad_logit_scale", vec![fd_scalar(|v| s(&x, &y, v, b), t)]),
                ("grad_logit_bias", vec![fd_scalar(|v| s(&x, &y, t, v), b)]),
            ],
        });
    }
}

fn linear_specs(rng: &mut Rng, out: &mut Vec<Spec>) {
    // V = 300 spans two of the handler's 256-row vocabulary blocks.
    let (t, k, v) = (3usize, 4usize, 300usize);
    for (red, eps, cap, zl) in [
        (Red::Mean, 0.0, None, 0.0),
        (Red::Sum, 0.1, Some(3.0), 1e-2),
        (Red::None, 0.2, None, 1e-3),
    ] {
        let h = rng.vec32(t * k, -1.0, 1.0);
        let w = rng.vec32(v * k, -1.0, 1.0);
        let mut target: Vec<i64> = (0..t).map(|_| rng.below(v) as i64).collect();
        target[1] = -100;
        let o = r::Ce {
            eps,
            red,
            cap,
            zl,
            ..r::Ce::default()
        };
        let logits = |h: &[f64], w: &[f64]| -> Vec<f64> {
            (0..t)
                .flat_map(|i| (0..v).map(move |j| (i, j)))
                .map(|(i, j)| r::dot(&h[i * k..(i + 1) * k], &w[j * k..(j + 1) * k]))
                .collect()
        };
        let f = |h: &[f64], w: &[f64]| r::cross_entropy(&logits(h, w), v, &target, &o);
        let (total, per) = f(&h, &w);
        let lse: Vec<f64> = logits(&h, &w)
            .chunks(v)
            .map(|row| {
                let z: Vec<f64> = row
                    .iter()
                    .map(|&x| cap.map_or(x, |c| r::softcap(x, c)))
                    .collect();
                r::lse(&z)
            })
            .collect();
        let mut fields = vec![
            ("h", arr(&h)),
            ("w", arr(&w)),
            ("t", t.to_string()),
            ("k", k.to_string()),
            ("v", v.to_string()),
            ("target", ints(&target)),
            ("label_smoothing", num(eps)),
            ("z_loss", num(zl)),
            red_fields(red),
        ];
        if let Some(c) = cap {
            fields.push(("softcap", num(c)));
        }
        out.push(Spec {
            what: format!("linear_ce {red:?} eps {eps} cap {cap:?} z {zl}"),
            op: "linear_cross_entropy",
            fields,
            expect: vec![
                ("loss", loss_out(red, total, per)),
                ("grad_h", r::fd(|x| f(x, &w).0, &h, H)),
                ("grad_w", r::fd(|x| f(&h, x).0, &w, H)),
                ("lse", lse),
            ],
        });
    }
}

fn all_specs() -> Vec<Spec> {
    let mut rng = Rng(0x10c0_5eed);
    let mut v = vec![];
    ce_specs(&mut rng, &mut v);
    nll_specs(&mut rng, &mut v);
    elementwise_specs(&mut rng, &mut v);
    focal_specs(&mut rng, &mut v);
    contrastive_specs(&mut rng, &mut v);
    linear_specs(&mut rng, &mut v);
    v
}

#[test]
fn every_loss_op_matches_the_reference_in_f32_and_f64() {
    let specs = all_specs();
    for (dtype, tol) in [("f64", 1e-6), ("f32", 5e-6)] {
        let lines: Vec<String> = specs
            .iter()
            .enumerate()
            .map(|(i, s)| s.line(i, dtype))
            .collect();
        let answers = run(&lines);
        let mut worst = 0.0f64;
        for (s, a) in specs.iter().zip(&answers) {
            assert_eq!(a["ok"], Value::Bool(true), "{dtype} {}: {a:?}", s.what);
            let expected: Vec<&str> = ["id", "ok"]
                .into_iter()
                .chain(s.expect.iter().map(|(k, _)| *k))
                .collect();
            let got_keys: Vec<&str> = a.keys().map(String::as_str).collect();
            assert_eq!(got_keys, expected, "{dtype} {}: output fields", s.what);
            for (field, want) in &s.expect {
                let got = floats(a, field);
                assert_eq!(got.len(), want.len(), "{dtype} {} `{field}`", s.what);
                let e = r::rel_err(&got, want, 1e-3);
                worst = worst.max(e);
                assert!(
                    e <= tol,
                    "{dtype} {} `{field}`: rel err {e:e}\n got {got:?}\nwant {want:?}",
                    s.what
                );
            }
        }
        println!("{dtype}: {} cases, worst rel err {worst:e}", specs.len());
    }
}

#[test]
fn ignored_rows_of_minus_inf_give_zero_gradient_rows() {
    let lines = [
        // Row 1 is ignored and all -inf; row 2 has -inf at a class that is not the target.
        r#"{"id":1,"op":"cross_entropy","logits":[1,2,3,"-inf","-inf","-inf",0,"-inf",1],"shape":[3,3],"target":[2,-100,0],"label_smoothing":0,"dtype":"f64"}"#,
        r#"{"id":2,"op":"cross_entropy","logits":[1,2,3,"-inf","-inf","-inf"],"shape":[2,3],"target":[0,7],"ignore_index":7,"weight":[1,2,3],"reduction":"none"}"#,
        r#"{"id":3,"op":"cross_entropy","logits":[1,2,3,"-inf","-inf","-inf"],"shape":[2,3],"target":[0,-100],"softcap":5,"z_loss":0.1}"#,
        r#"{"id":4,"op":"softmax_focal","logits":[1,2,3,"-inf","-inf","-inf"],"shape":[2,3],"target":[0,-100]}"#,
    ];
    let answers = run(&lines.map(String::from));
    for a in &answers {
        assert_eq!(a["ok"], Value::Bool(true), "{a:?}");
        let g = floats(a, "grad");
        assert!(g[3..6].iter().all(|&v| v == 0.0), "{a:?}");
        assert!(g.iter().all(|v| v.is_finite()), "{a:?}");
        assert!(floats(a, "loss").iter().all(|v| v.is_finite()), "{a:?}");
    }
    // Row 2 of the first: p = (1/(1+e), 0, e/(1+e)), target 0: grad row p − onehot, -inf class 0.
    let g = floats(&answers[0], "grad");
    let e = 1f64.exp();
    let want_row2 = [1.0 / (1.0 + e) - 1.0, 0.0, e / (1.0 + e)];
    for (got, want) in g[6..9].iter().zip(want_row2) {
        assert!((got - want / 2.0).abs() < 1e-15, "{g:?}");
    }
    // lse of the ignored -inf row is -inf (ignored rows included, CONFORMANCE.md).
    assert_eq!(floats(&answers[0], "lse")[1], f64::NEG_INFINITY);
    assert_eq!(floats(&answers[1], "loss")[1], 0.0);
}

#[test]
fn every_loss_error_kind_with_its_id() {
    let ce = r#""op":"cross_entropy","logits":[1,2,3,4],"shape":[2,2]"#;
    let cases: Vec<(String, &str)> = [
        // target_out_of_range / no_targets.
        (format!(r#"{{"id":1,{ce},"target":[0,2]}}"#), "target_out_of_range"),
        (format!(r#"{{"id":1,{ce},"target":[-1,0]}}"#), "target_out_of_range"),
        (
            format!(r#"{{"id":1,{ce},"target":[0,99999999999999999999999]}}"#),
            "target_out_of_range",
        ),
        (format!(r#"{{"id":1,{ce},"target":[-100,-100]}}"#), "no_targets"),
        (
            format!(r#"{{"id":1,{ce},"target":[1,1],"weight":[1,0]}}"#),
            "no_targets",
        ),
        (
            r#"{"id":1,"op":"nll_loss","log_probs":[0,0],"shape":[1,2],"target":[5]}"#.into(),
            "target_out_of_range",
        ),
        (
            r#"{"id":1,"op":"nll_loss","log_probs":[0,0],"shape":[1,2],"target":[0],"ignore_index":0}"#.into(),
            "no_targets",
        ),
        (
            r#"{"id":1,"op":"softmax_focal","logits":[0,0],"shape":[1,2],"target":[-100]}"#.into(),
            "no_targets",
        ),
        (
            r#"{"id":1,"op":"linear_cross_entropy","h":[1],"w":[1,2],"t":1,"k":1,"v":2,"target":[2]}"#.into(),
            "target_out_of_range",
        ),
        // invalid_param.
        (format!(r#"{{"id":1,{ce},"target":[0,1],"label_smoothing":1.5}}"#), "invalid_param"),
        (format!(r#"{{"id":1,{ce},"target":[0,1],"label_smoothing":-0.1}}"#), "invalid_param"),
        (format!(r#"{{"id":1,{ce},"target":[0,1],"z_loss":-1}}"#), "invalid_param"),
        (format!(r#"{{"id":1,{ce},"target":[0,1],"softcap":0}}"#), "invalid_param"),
        (format!(r#"{{"id":1,{ce},"target":[0,1],"softcap":"inf"}}"#), "invalid_param"),
        (format!(r#"{{"id":1,{ce},"target":[0,1],"reduction":"batchmean"}}"#), "invalid_param"),
        (format!(r#"{{"id":1,{ce},"target":[0,1.0]}}"#), "invalid_param"),
        (format!(r#"{{"id":1,{ce}}}"#), "invalid_param"),
        (
            format!(r#"{{"id":1,{ce},"target":[0,1],"target_probs":[1,0,0,1]}}"#),
            "invalid_param",
        ),
        (format!(r#"{{"id":1,{ce},"target":[0,1],"x":[1]}}"#), "invalid_param"),
        (
            r#"{"id":1,"op":"softmax_focal","logits":[0,0],"shape":[1,2],"target":[0],"gamma":-1}"#.into(),
            "invalid_param",
        ),
        (
            r#"{"id":1,"op":"info_nce","query":[1,0],"positive":[0,1],"n":1,"d":2,"temperature":0}"#.into(),
            "invalid_param",
        ),
        (
            r#"{"id":1,"op":"info_nce","query":[1,0],"positive":[0,1],"n":1,"d":2,"negatives":[1,1],"m":1,"symmetric":true}"#.into(),
            "invalid_param",
        ),
        (
            r#"{"id":1,"op":"info_nce","query":[1,0],"positive":[0,1],"n":1,"d":2,"negatives":[1,1]}"#.into(),
            "invalid_param",
        ),
        (
            r#"{"id":1,"op":"info_nce","query":[1,0],"positive":[0,1],"n":1,"d":2,"negative_mode":"both"}"#.into(),
            "invalid_param",
        ),
        (
            r#"{"id":1,"op":"nt_xent","z":[1,0,0,1],"n":1,"d":2,"temperature":-1}"#.into(),
            "invalid_param",
        ),
        (
            r#"{"id":1,"op":"kl_div","input":[0],"target":[1],"shape":[1],"log_target":1}"#.into(),
            "invalid_param",
        ),
        // shape.
        (format!(r#"{{"id":1,{ce},"target":[0]}}"#), "shape"),
        (format!(r#"{{"id":1,{ce},"target":[0,1],"weight":[1]}}"#), "shape"),
        (format!(r#"{{"id":1,{ce},"target_probs":[1,0,0]}}"#), "shape"),
        (
            r#"{"id":1,"op":"bce_with_logits","logits":[0,0],"target":[1],"shape":[1,2]}"#.into(),
            "shape",
        ),
        (
            r#"{"id":1,"op":"bce_with_logits","logits":[0,0],"target":[1,0],"shape":[1,2],"pos_weight":[1]}"#.into(),
            "shape",
        ),
        (r#"{"id":1,"op":"mse","input":[0,0],"target":[1]}"#.into(), "shape"),
        (
            r#"{"id":1,"op":"sigmoid_focal","logits":[0,0],"target":[1]}"#.into(),
            "shape",
        ),
        (
            r#"{"id":1,"op":"info_nce","query":[1,0,1],"positive":[0,1],"n":1,"d":2}"#.into(),
            "shape",
        ),
        (
            r#"{"id":1,"op":"info_nce","query":[1,0],"positive":[0,1],"n":1,"d":2,"negatives":[1,1,1],"m":1}"#.into(),
            "shape",
        ),
        (r#"{"id":1,"op":"nt_xent","z":[1,0,0],"n":1,"d":2}"#.into(), "shape"),
        (
            r#"{"id":1,"op":"siglip","x":[1,0],"y":[0,1,1],"n":1,"d":2}"#.into(),
            "shape",
        ),
        (
            r#"{"id":1,"op":"linear_cross_entropy","h":[1,2],"w":[1,2],"t":1,"k":1,"v":2,"target":[0]}"#.into(),
            "shape",
        ),
        (
            r#"{"id":1,"op":"linear_cross_entropy","h":[1],"w":[1,2],"t":1,"k":1,"v":2,"target":[0,0]}"#.into(),
            "shape",
        ),
        // unsupported_dtype.
        (format!(r#"{{"id":1,{ce},"target":[0,1],"dtype":"f16"}}"#), "unsupported_dtype"),
        (
            r#"{"id":1,"op":"siglip","x":[1,0],"y":[0,1],"n":1,"d":2,"dtype":"bf16"}"#.into(),
            "unsupported_dtype",
        ),
    ]
    .into_iter()
    .enumerate()
    .map(|(i, (l, k))| (l.replacen(r#""id":1,"#, &format!(r#""id":"e{i}","#), 1), k))
    .collect();
    let lines: Vec<String> = cases.iter().map(|(l, _)| l.clone()).collect();
    let answers = run(&lines);
    for (i, ((line, kind), a)) in cases.iter().zip(&answers).enumerate() {
        let keys: Vec<&str> = a.keys().map(String::as_str).collect();
        assert_eq!(keys, ["id", "ok", "error", "message"], "{line}: {a:?}");
        assert_eq!(a["id"], Value::String(format!("e{i}")), "{line}");
        assert_eq!(a["ok"], Value::Bool(false), "{line}");
        assert_eq!(a["error"], Value::String(kind.to_string()), "{line}: {a:?}");
        assert!(!a["message"].as_str().unwrap_or("").is_empty(), "{line}");
    }
}
