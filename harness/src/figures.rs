//! `harness figures`: the README's pictures, computed by the workspace's kernels when they are
//! drawn. Each figure is two files in `docs/figures/`: `NAME.json`, the numbers plotted (rounded
//! to six significant digits), and `NAME.svg`, drawn from exactly those numbers with `plotters`'
//! SVG backend. `harness/tests/figures.rs` recomputes the numbers and compares them with the
//! committed JSON (the numbers, not the pixels).
//!
//! * `attention` — attention weights of a causal pattern with a sliding window of 8 keys and 2
//!   attention sinks (32 queries, d = 16, q and k ~ N(0, 1)) at two temperatures, with each
//!   query row's entropy beside its row (the seeds' `fig_attention_heatmap`);
//! * `temperature` — softmax of eight logits as τ varies, and its entropy `H(τ)`, with the τ that
//!   `temperature_for_entropy` finds for `H = 1` nat marked;
//! * `infonce` — the InfoNCE gradient's geometry in 2-D: a query, its positive, five negatives,
//!   and the descent directions `−∂L/∂·` the (corrected) gradients give;
//! * `exp_ulp` — the error of each exp backend in f32 ULPs over the input range;
//! * `speed` — onnxruntime's time over each contender's, per row of a `harness bench` run
//!   (`docs/figures/bench.json`, a committed copy of the run's `target/bench/bench.json`: a
//!   speed figure is a measurement, so it is redrawn from that file, not re-measured).

use std::path::Path;

use attention_core::{attention, Causal, Dims, Options, Output, Qkv};
use loss_core::{info_nce_single, InfoNceOutputs, InfoNceSingleOptions};
use plotters::prelude::*;
use serde_json::{json, Value};

use crate::reproduce::util::Rng;
use softmax_core::backend::{Backend, Libm, MicroMath, Poly};

/// The figures' names, in the order they are written.
pub const NAMES: [&str; 5] = ["attention", "temperature", "infonce", "exp_ulp", "speed"];

/// `v` rounded to six significant digits (so the committed numbers do not depend on the last
/// bits of the platform's f64 `exp`/`ln`).
fn r6(v: f64) -> f64 {
    if v == 0.0 || !v.is_finite() {
        return v;
    }
    format!("{v:.5e}").parse().unwrap_or(v)
}

fn r6v(v: &[f64]) -> Vec<f64> {
    v.iter().map(|&x| r6(x)).collect()
}

/// The numbers of one figure.
pub fn data(name: &str) -> Option<Value> {
    match name {
        "attention" => Some(attention_data()),
        "temperature" => Some(temperature_data()),
        "infonce" => Some(infonce_data()),
        "exp_ulp" => Some(exp_ulp_data()),
        "speed" => speed_data().ok(),
        _ => None,
    }
}

// ---------------------------------------------------------------------------------------------
// attention
// ---------------------------------------------------------------------------------------------

const ATT_T: usize = 32;
const ATT_D: usize = 16;
const ATT_WINDOW: usize = 8;
const ATT_SINKS: usize = 2;
const ATT_TEMPS: [f64; 2] = [1.0, 0.5];

fn attention_data() -> Value {
    // SplitMix64 and Box–Muller, the generator of `harness reproduce`.
    let mut g = Rng(11);
    let q: Vec<f32> = (0..ATT_T * ATT_D).map(|_| g.open_normal() as f32).collect();
    let k: Vec<f32> = (0..ATT_T * ATT_D).map(|_| g.open_normal() as f32).collect();
    // V = the identity: each output row is its query's attention weights.
    let mut v = vec![0.0f32; ATT_T * ATT_T];
    for i in 0..ATT_T {
        v[i * ATT_T + i] = 1.0;
    }
    let mut panels = Vec::new();
    for &tau in &ATT_TEMPS {
        let mut o = vec![0.0f32; ATT_T * ATT_T];
        let mut h = vec![0.0f32; ATT_T];
        let scale = (1.0 / (tau * (ATT_D as f64).sqrt())) as f32;
        let opts = Options::new()
            .with_scale(scale)
            .with_causal(Causal::TopLeft)
            .with_window(ATT_WINDOW)
            .with_sinks(ATT_SINKS);
        attention(
            Poly,
            &Dims::new(1, 1, ATT_T, ATT_T, ATT_D, ATT_T),
            Qkv::new(&q, &k, &v),
            &opts,
            Output::new(&mut o).with_entropy(&mut h),
        )
        .expect("attention: valid shapes");
        let weights: Vec<Vec<f64>> = o
            .chunks(ATT_T)
            .map(|r| r6v(&r.iter().map(|&x| f64::from(x)).collect::<Vec<_>>()))
            .collect();
        panels.push(json!({
            "tau": tau,
            "scale": f64::from(scale),
            "weights": weights,
            "entropy": r6v(&h.iter().map(|&x| f64::from(x)).collect::<Vec<_>>()),
        }));
    }
    json!({
        "t": ATT_T, "d": ATT_D, "window": ATT_WINDOW, "sinks": ATT_SINKS,
        "inputs": "q, k ~ N(0, 1) (SplitMix64 seed 11, Box–Muller), V = identity",
        "kernel": "attention_core::attention, f32, Poly, causal top-left, window 8, sinks 2",
        "panels": panels,
    })
}

/// White → dark blue.
fn blue(w: f64) -> RGBColor {
    let w = w.clamp(0.0, 1.0).powf(0.5);
    let lerp = |a: f64, b: f64| (a + (b - a) * w).round() as u8;
    RGBColor(lerp(255.0, 8.0), lerp(255.0, 48.0), lerp(255.0, 107.0))
}

fn draw_attention(d: &Value, path: &Path) -> Result<(), Box<dyn std::error::Error>> {
    let root = SVGBackend::new(path, (1100, 560)).into_drawing_area();
    root.fill(&WHITE)?;
    let panels = d["panels"].as_array().ok_or("panels")?;
    let t = d["t"].as_u64().ok_or("t")? as usize;
    let areas = root.split_evenly((1, panels.len()));
    for (area, p) in areas.iter().zip(panels) {
        let (map, bars) = area.split_horizontally(400);
        let tau = p["tau"].as_f64().ok_or("tau")?;
        let mut c = ChartBuilder::on(&map)
            .caption(
                format!("attention weights, τ = {tau} (window 8, 2 sinks)"),
                ("sans-serif", 16),
            )
            .margin(8)
            .x_label_area_size(30)
            .y_label_area_size(34)
            .build_cartesian_2d(0.0..t as f64, 0.0..t as f64)?;
        c.configure_mesh()
            .disable_mesh()
            .x_desc("key")
            .y_desc("query (0 at the top)")
            .x_label_formatter(&|v| format!("{}", *v as usize))
            .y_label_formatter(&|v| format!("{}", t - *v as usize))
            .draw()?;
        let w = p["weights"].as_array().ok_or("weights")?;
        for (i, row) in w.iter().enumerate() {
            for (j, x) in row.as_array().ok_or("row")?.iter().enumerate() {
                let x = x.as_f64().unwrap_or(0.0);
                // Query 0 at the top.
                let (x0, y0) = (j as f64, (t - 1 - i) as f64);
                c.draw_series(std::iter::once(Rectangle::new(
                    [(x0, y0), (x0 + 1.0, y0 + 1.0)],
                    blue(x).filled(),
                )))?;
            }
        }
        let h: Vec<f64> = p["entropy"]
            .as_array()
            .ok_or("entropy")?
            .iter()
            .filter_map(Value::as_f64)
            .collect();
        let hmax = (ATT_WINDOW + ATT_SINKS) as f64;
        let mut e = ChartBuilder::on(&bars)
            .caption("entropy (nats)", ("sans-serif", 14))
            .margin(8)
            .x_label_area_size(30)
            .y_label_area_size(4)
            .build_cartesian_2d(0.0..hmax.ln() * 1.05, 0.0..t as f64)?;
        e.configure_mesh()
            .disable_mesh()
            .y_labels(0)
            .x_labels(3)
            .draw()?;
        e.draw_series(h.iter().enumerate().map(|(i, &v)| {
            let y = (t - 1 - i) as f64;
            Rectangle::new(
                [(0.0, y + 0.1), (v, y + 0.9)],
                RGBColor(200, 90, 40).filled(),
            )
        }))?;
    }
    root.present()?;
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// temperature
// ---------------------------------------------------------------------------------------------

const TEMP_LOGITS: [f64; 8] = [2.0, 1.0, 0.5, 0.0, -0.5, -1.0, -1.5, -3.0];
const TEMP_TARGET: f64 = 1.0;

fn temperature_data() -> Value {
    let taus: Vec<f64> = (0..=60)
        .map(|i| 10f64.powf(-1.5 + 3.0 * f64::from(i) / 60.0))
        .collect();
    let mut probs = Vec::new();
    let mut ent = Vec::new();
    for &tau in &taus {
        let x: Vec<f64> = TEMP_LOGITS.iter().map(|&v| v / tau).collect();
        let mut y = [0.0f64; 8];
        softmax_core::softmax(Poly, &x, &mut y).expect("softmax");
        probs.push(r6v(&y));
        ent.push(r6(
            softmax_core::entropy(Poly, &TEMP_LOGITS, tau).expect("entropy")
        ));
    }
    let tau_star =
        softmax_core::temperature_for_entropy(Poly, &TEMP_LOGITS, TEMP_TARGET).expect("target");
    json!({
        "logits": TEMP_LOGITS,
        "kernel": "softmax_core::{softmax, entropy, temperature_for_entropy}, f64, Poly",
        "tau": r6v(&taus),
        "probs": probs,
        "entropy": ent,
        "target_entropy": TEMP_TARGET,
        "tau_for_target": r6(tau_star),
        "entropy_at_tau_for_target": r6(softmax_core::entropy(Poly, &TEMP_LOGITS, tau_star).expect("entropy")),
        "ln_n": r6((TEMP_LOGITS.len() as f64).ln()),
    })
}

fn palette(i: usize) -> RGBColor {
    const C: [RGBColor; 8] = [
        RGBColor(31, 119, 180),
        RGBColor(255, 127, 14),
        RGBColor(44, 160, 44),
        RGBColor(214, 39, 40),
        RGBColor(148, 103, 189),
        RGBColor(140, 86, 75),
        RGBColor(227, 119, 194),
        RGBColor(127, 127, 127),
    ];
    C[i % C.len()]
}

fn floats(v: &Value) -> Vec<f64> {
    v.as_array()
        .map(|a| a.iter().filter_map(Value::as_f64).collect())
        .unwrap_or_default()
}

fn draw_temperature(d: &Value, path: &Path) -> Result<(), Box<dyn std::error::Error>> {
    let root = SVGBackend::new(path, (1000, 420)).into_drawing_area();
    root.fill(&WHITE)?;
    let (left, right) = root.split_horizontally(500);
    let taus = floats(&d["tau"]);
    let probs: Vec<Vec<f64>> = d["probs"]
        .as_array()
        .ok_or("probs")?
        .iter()
        .map(floats)
        .collect();
    let (lo, hi) = (taus[0], taus[taus.len() - 1]);
    let tau_star = d["tau_for_target"].as_f64().ok_or("tau*")?;
    let mut c = ChartBuilder::on(&left)
        .caption("softmax(x/τ) of 8 logits", ("sans-serif", 16))
        .margin(10)
        .x_label_area_size(34)
        .y_label_area_size(44)
        .build_cartesian_2d((lo..hi).log_scale(), 0.0..1.0)?;
    c.configure_mesh()
        .x_desc("τ")
        .y_desc("probability")
        .draw()?;
    let logits = floats(&d["logits"]);
    for (i, &x) in logits.iter().enumerate() {
        c.draw_series(LineSeries::new(
            taus.iter().zip(&probs).map(|(&t, p)| (t, p[i])),
            palette(i).stroke_width(2),
        ))?
        .label(format!("x = {x}"))
        .legend(move |(a, b)| PathElement::new([(a, b), (a + 16, b)], palette(i)));
    }
    c.draw_series(LineSeries::new(
        [(tau_star, 0.0), (tau_star, 1.0)],
        BLACK.stroke_width(1),
    ))?;
    c.configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .position(SeriesLabelPosition::UpperRight)
        .draw()?;
    let ent = floats(&d["entropy"]);
    let ln_n = d["ln_n"].as_f64().ok_or("ln n")?;
    let target = d["target_entropy"].as_f64().ok_or("target")?;
    let mut e = ChartBuilder::on(&right)
        .caption(
            format!("entropy H(τ); τ = {tau_star:.4} gives H = {target} nat"),
            ("sans-serif", 16),
        )
        .margin(10)
        .x_label_area_size(34)
        .y_label_area_size(44)
        .build_cartesian_2d((lo..hi).log_scale(), 0.0..ln_n * 1.05)?;
    e.configure_mesh().x_desc("τ").y_desc("H (nats)").draw()?;
    e.draw_series(LineSeries::new(
        taus.iter().zip(&ent).map(|(&t, &h)| (t, h)),
        palette(0).stroke_width(2),
    ))?;
    e.draw_series(LineSeries::new(
        [(lo, ln_n), (hi, ln_n)],
        RGBColor(150, 150, 150),
    ))?;
    e.draw_series(LineSeries::new(
        [(lo, target), (hi, target)],
        RGBColor(214, 39, 40),
    ))?;
    e.draw_series(LineSeries::new([(tau_star, 0.0), (tau_star, ln_n)], BLACK))?;
    e.draw_series(std::iter::once(Circle::new(
        (tau_star, target),
        5,
        RGBColor(214, 39, 40).filled(),
    )))?;
    root.present()?;
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// infonce
// ---------------------------------------------------------------------------------------------

const NCE_TAU: f64 = 0.5;
const NCE_Q: [f64; 2] = [1.0, 0.3];
const NCE_POS: [f64; 2] = [0.7, 0.8];
const NCE_NEG: [f64; 10] = [1.1, -0.2, -0.6, 0.9, -0.9, -0.5, 0.2, -1.0, 0.9, 0.5];

fn infonce_data() -> Value {
    let mut gq = [0.0f64; 2];
    let mut gp = [0.0f64; 2];
    let mut gn = [0.0f64; 10];
    let mut scratch = [0.0f64; 12];
    let o = InfoNceSingleOptions::new().with_temperature(NCE_TAU);
    let loss = info_nce_single(
        Poly,
        &NCE_Q,
        &NCE_POS,
        &NCE_NEG,
        &o,
        InfoNceOutputs::new(&mut scratch)
            .with_grad_query(&mut gq)
            .with_grad_positive(&mut gp)
            .with_grad_negatives(&mut gn),
    )
    .expect("info_nce_single");
    // p = softmax([q·k⁺, q·k⁻…]/τ), for the labels.
    let dot = |k: &[f64]| NCE_Q[0] * k[0] + NCE_Q[1] * k[1];
    let mut z = vec![dot(&NCE_POS) / NCE_TAU];
    z.extend(NCE_NEG.chunks(2).map(|k| dot(k) / NCE_TAU));
    let mut p = vec![0.0; z.len()];
    softmax_core::softmax(Poly, &z, &mut p).expect("softmax");
    json!({
        "kernel": "loss_core::info_nce_single, f64, Poly; gradients ∂L/∂q = (E_p[k] − k⁺)/τ, ∂L/∂k⁺ = (p⁺ − 1)·q/τ, ∂L/∂k⁻_m = p_m·q/τ",
        "tau": NCE_TAU,
        "q": NCE_Q, "positive": NCE_POS,
        "negatives": NCE_NEG.chunks(2).map(|c| vec![c[0], c[1]]).collect::<Vec<_>>(),
        "loss": r6(loss),
        "p": r6v(&p),
        "grad_q": r6v(&gq),
        "grad_positive": r6v(&gp),
        "grad_negatives": gn.chunks(2).map(r6v).collect::<Vec<_>>(),
    })
}

fn draw_infonce(d: &Value, path: &Path) -> Result<(), Box<dyn std::error::Error>> {
    let root = SVGBackend::new(path, (620, 560)).into_drawing_area();
    root.fill(&WHITE)?;
    let loss = d["loss"].as_f64().ok_or("loss")?;
    let tau = d["tau"].as_f64().ok_or("tau")?;
    let mut c = ChartBuilder::on(&root)
        .caption(
            format!("InfoNCE gradient in 2-D (τ = {tau}, L = {loss:.3}): arrows are −∂L/∂·"),
            ("sans-serif", 16),
        )
        .margin(10)
        .x_label_area_size(30)
        .y_label_area_size(36)
        .build_cartesian_2d(-1.6..1.9, -1.6..1.6)?;
    c.configure_mesh().draw()?;
    let pt = |v: &Value| -> (f64, f64) {
        let f = floats(v);
        (f[0], f[1])
    };
    let arrow = |from: (f64, f64), g: (f64, f64), color: RGBColor| {
        // Descent direction, at a fixed 0.25 scale so all arrows share one unit.
        let to = (from.0 - 0.25 * g.0, from.1 - 0.25 * g.1);
        PathElement::new([from, to], color.stroke_width(2))
    };
    let q = pt(&d["q"]);
    let kp = pt(&d["positive"]);
    let p = floats(&d["p"]);
    let blue = RGBColor(31, 119, 180);
    let green = RGBColor(44, 160, 44);
    let red = RGBColor(214, 39, 40);
    c.draw_series(std::iter::once(Circle::new(q, 7, blue.filled())))?
        .label("query q, arrow −∂L/∂q = (k⁺ − E_p[k])/τ")
        .legend(move |(a, b)| Circle::new((a + 8, b), 5, blue.filled()));
    c.draw_series(std::iter::once(arrow(q, pt(&d["grad_q"]), blue)))?;
    c.draw_series(std::iter::once(Circle::new(kp, 7, green.filled())))?
        .label(format!("positive k⁺ (p = {:.3}), arrow (1 − p⁺)·q/τ", p[0]))
        .legend(move |(a, b)| Circle::new((a + 8, b), 5, green.filled()));
    c.draw_series(std::iter::once(arrow(kp, pt(&d["grad_positive"]), green)))?;
    let negs = d["negatives"].as_array().ok_or("negatives")?;
    let gns = d["grad_negatives"].as_array().ok_or("grad_negatives")?;
    for (i, (k, g)) in negs.iter().zip(gns).enumerate() {
        let k = pt(k);
        let s = c.draw_series(std::iter::once(Circle::new(k, 6, red.filled())))?;
        if i == 0 {
            s.label("negatives k⁻_m, arrows −p_m·q/τ")
                .legend(move |(a, b)| Circle::new((a + 8, b), 5, red.filled()));
        }
        c.draw_series(std::iter::once(arrow(k, pt(g), red)))?;
        c.draw_series(std::iter::once(Text::new(
            format!("p={:.2}", p[i + 1]),
            (k.0 + 0.05, k.1 - 0.08),
            ("sans-serif", 12),
        )))?;
    }
    c.configure_series_labels()
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .position(SeriesLabelPosition::LowerLeft)
        .draw()?;
    root.present()?;
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// exp_ulp
// ---------------------------------------------------------------------------------------------

const ULP_LO: f32 = -87.0;
const ULP_HI: f32 = 88.0;
const ULP_BINS: usize = 175;
const ULP_PER_BIN: usize = 512;

/// |y − e^x| in units of the last place of the correctly rounded f32 result (`e^x` in f64).
fn ulp_err(y: f32, x: f32) -> f64 {
    let exact = f64::from(x).exp();
    let r = exact as f32;
    let ulp = f64::from(f32::from_bits(r.to_bits() + 1)) - f64::from(r);
    (f64::from(y) - exact).abs() / ulp
}

fn exp_ulp_data() -> Value {
    let width = (ULP_HI - ULP_LO) / ULP_BINS as f32;
    let mut centers = Vec::new();
    let mut series = [Vec::new(), Vec::new(), Vec::new()];
    for b in 0..ULP_BINS {
        let a = ULP_LO + width * b as f32;
        let mut m = [0.0f64; 3];
        for i in 0..ULP_PER_BIN {
            let x = a + width * (i as f32 + 0.5) / ULP_PER_BIN as f32;
            m[0] = m[0].max(ulp_err(<Poly as Backend<f32>>::exp(x), x));
            m[1] = m[1].max(ulp_err(<Libm as Backend<f32>>::exp(x), x));
            m[2] = m[2].max(ulp_err(<MicroMath as Backend<f32>>::exp(x), x));
        }
        centers.push(r6(f64::from(a + width / 2.0)));
        for (s, v) in series.iter_mut().zip(m) {
            s.push(r6(v));
        }
    }
    json!({
        "method": "max over 512 evenly spaced f32 x per bin of |exp(x) − e^x| / ulp, e^x in f64",
        "x": centers,
        "backends": [
            {"name": "Poly", "max_ulp": series[0]},
            {"name": "Libm", "max_ulp": series[1]},
            {"name": "MicroMath", "max_ulp": series[2]},
        ],
    })
}

fn draw_exp_ulp(d: &Value, path: &Path) -> Result<(), Box<dyn std::error::Error>> {
    let root = SVGBackend::new(path, (900, 420)).into_drawing_area();
    root.fill(&WHITE)?;
    let x = floats(&d["x"]);
    let mut c = ChartBuilder::on(&root)
        .caption(
            "f32 exp: max error per bin, in ULPs (log scale)",
            ("sans-serif", 16),
        )
        .margin(10)
        .x_label_area_size(34)
        .y_label_area_size(54)
        .build_cartesian_2d(
            f64::from(ULP_LO)..f64::from(ULP_HI),
            (0.01f64..100_000.0).log_scale(),
        )?;
    c.configure_mesh()
        .x_desc("x")
        .y_desc("max |error| (ULP)")
        .draw()?;
    for (i, b) in d["backends"]
        .as_array()
        .ok_or("backends")?
        .iter()
        .enumerate()
    {
        let name = b["name"].as_str().unwrap_or("?").to_string();
        let y = floats(&b["max_ulp"]);
        c.draw_series(LineSeries::new(
            x.iter().zip(&y).map(|(&a, &v)| (a, v.max(0.011))),
            palette(i).stroke_width(2),
        ))?
        .label(name)
        .legend(move |(a, b)| PathElement::new([(a, b), (a + 16, b)], palette(i)));
    }
    c.draw_series(LineSeries::new(
        [(f64::from(ULP_LO), 1.0), (f64::from(ULP_HI), 1.0)],
        BLACK.stroke_width(1),
    ))?;
    c.configure_series_labels()
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .position(SeriesLabelPosition::UpperRight)
        .draw()?;
    root.present()?;
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// speed
// ---------------------------------------------------------------------------------------------

/// The committed bench run the speed figure is drawn from.
pub fn bench_json_path() -> std::path::PathBuf {
    std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../docs/figures/bench.json")
}

/// The committed bench run's rows for softmax-core's default (`Poly`) and `fast` kernels at the
/// dispatched level, loss-core's cross-entropy and attention-core's decode step, with their
/// onnxruntime ratio (onnxruntime's time over ours), attention's prefill rows included (on
/// inputs with standard deviation 1). Left out: the other backends and the reference contenders
/// (they are in `bench.json` and the README's tables), and the labelled extra attention row on
/// peaked inputs (not a headline).
fn speed_data() -> Result<Value, Box<dyn std::error::Error>> {
    let bench: Value = serde_json::from_str(&std::fs::read_to_string(bench_json_path())?)?;
    let mut rows = Vec::new();
    for r in bench["results"].as_array().ok_or("results")? {
        let (Some(op), Some(who), Some(ratio)) = (
            r["op"].as_str(),
            r["contender"].as_str(),
            r["onnxruntime_time_over_this"].as_f64(),
        ) else {
            continue;
        };
        let ours = who.starts_with("softmax-core Poly [")
            || who.starts_with("softmax-core fast [")
            || who.starts_with("loss-core")
            || who.starts_with("attention-core");
        if op.contains("peaked") || who.contains("forced") || !ours {
            continue;
        }
        let op = op.split(" (").next().unwrap_or(op);
        let shape = match (r["rows"].as_u64(), r["n"].as_u64()) {
            (Some(m), Some(n)) if !op.contains('×') && !op.contains('=') => format!(" {m}×{n}"),
            _ => String::new(),
        };
        rows.push(json!({"op": format!("{op}{shape}"), "contender": who, "ratio": r6(ratio)}));
    }
    Ok(json!({
        "cpu": bench["cpu"], "dispatch_level": bench["dispatch_level"],
        "onnxruntime": bench["onnxruntime"]["version"],
        "source": "docs/figures/bench.json (harness bench, one thread)",
        "rows": rows,
    }))
}

fn draw_speed(d: &Value, path: &Path) -> Result<(), Box<dyn std::error::Error>> {
    let rows = d["rows"].as_array().ok_or("rows")?;
    let n = rows.len().max(1);
    let root = SVGBackend::new(path, (1000, 60 + 22 * n as u32)).into_drawing_area();
    root.fill(&WHITE)?;
    let (labels, chart) = root.split_horizontally(560);
    let max = rows
        .iter()
        .filter_map(|r| r["ratio"].as_f64())
        .fold(1.0f64, f64::max);
    let mut c = ChartBuilder::on(&chart)
        .caption(
            format!(
                "onnxruntime {} time / ours ({}, {})",
                d["onnxruntime"].as_str().unwrap_or("?"),
                d["cpu"].as_str().unwrap_or("?"),
                d["dispatch_level"].as_str().unwrap_or("?")
            ),
            ("sans-serif", 14),
        )
        .margin(8)
        .x_label_area_size(28)
        .y_label_area_size(4)
        .build_cartesian_2d(0.0..max * 1.1, 0.0..n as f64)?;
    c.configure_mesh().disable_y_mesh().y_labels(0).draw()?;
    let area_h = labels.dim_in_pixel().1 as f64;
    // The plotting area spans the caption-less rows: place each label at its bar's centre.
    let top = 8.0 + 22.0;
    let step = (area_h - top - 8.0 - 28.0) / n as f64;
    for (i, r) in rows.iter().enumerate() {
        let ratio = r["ratio"].as_f64().unwrap_or(0.0);
        let y = (n - 1 - i) as f64;
        let color = if ratio >= 1.0 {
            RGBColor(44, 160, 44)
        } else {
            RGBColor(214, 39, 40)
        };
        c.draw_series(std::iter::once(Rectangle::new(
            [(0.0, y + 0.15), (ratio, y + 0.85)],
            color.filled(),
        )))?;
        c.draw_series(std::iter::once(Text::new(
            format!("{ratio:.2}×"),
            (ratio, y + 0.75),
            ("sans-serif", 11),
        )))?;
        let op = r["op"].as_str().unwrap_or("");
        labels.draw(&Text::new(
            format!("{op} — {}", r["contender"].as_str().unwrap_or("")),
            (4, (top + step * (i as f64 + 0.35)) as i32),
            ("sans-serif", 11),
        ))?;
    }
    c.draw_series(LineSeries::new([(1.0, 0.0), (1.0, n as f64)], BLACK))?;
    root.present()?;
    Ok(())
}

/// The JSON text of a figure's numbers, as committed.
pub fn json_text(v: &Value) -> String {
    let mut s = serde_json::to_string_pretty(v).unwrap_or_default();
    s.push('\n');
    s
}

/// Writes every figure's JSON and SVG into `dir`.
pub fn write_all(dir: &Path) -> Result<(), Box<dyn std::error::Error>> {
    std::fs::create_dir_all(dir)?;
    for name in NAMES {
        let d = data(name).ok_or("unknown figure")?;
        std::fs::write(dir.join(format!("{name}.json")), json_text(&d))?;
        let svg = dir.join(format!("{name}.svg"));
        match name {
            "attention" => draw_attention(&d, &svg)?,
            "temperature" => draw_temperature(&d, &svg)?,
            "infonce" => draw_infonce(&d, &svg)?,
            "exp_ulp" => draw_exp_ulp(&d, &svg)?,
            _ => draw_speed(&d, &svg)?,
        }
    }
    Ok(())
}
