//! `harness conform`'s attention ops (harness/CONFORMANCE.md, "Attention") driven as outside
//! checks drive them: the real binary, JSON lines on stdin, answers parsed back from their text.
//!
//! Numbers are checked against the naive f64 reference of `attention_support/reference.rs`
//! (materialised scores, f64 `exp`, written from the specification), run on the same
//! f32-rounded inputs; `attention_stream` must answer bit for bit what `attention` with
//! bottom-right causality answers; the edge rows and every error kind against the exact answers
//! CONFORMANCE.md prescribes.
//!
//! Tolerances (u = 2⁻²⁴, inputs in [-1, 1], d <= 8): a score carries at most a few units of
//! rounding of its `d`-term dot product and each modifier (< 32·u·(1 + |s|)), a weight then at
//! most twice that relative, an output `o` the weighted sum of |v| <= 1: |Δo| <= 256·u·(1 +
//! max|v|); `lse` within 256·u·(1 + |lse|); entropy within 512·u·(1 + E|s|). The gradients sum
//! `s` such terms of size <= max|g|: 1024·u·(1 + max|g|) per tensor. Each bound is a generous
//! multiple of what attention-core's own tests (`attention_reference.rs`,
//! `attention_backward.rs`) establish tightly; here the point is the protocol.

#[path = "attention_support/reference.rs"]
mod attention_ref;

mod conform_support;

use attention_ref::{backward, forward, Case, Rng};
use conform_support::run;
use serde_json::{Map, Value};

const U: f64 = 5.960_464_477_539_063e-8;

// ------------------------------------------------------------------------------------------------
// Driving the binary
// ------------------------------------------------------------------------------------------------

/// The float array `field` of a success answer.
fn floats(a: &Map<String, Value>, field: &str) -> Vec<f32> {
    assert_eq!(a["ok"], Value::Bool(true), "expected success: {a:?}");
    let Some(Value::Array(items)) = a.get(field) else {
        panic!("no array `{field}`: {a:?}")
    };
    items
        .iter()
        .map(|v| match v {
            Value::Number(n) => {
                let t = n.as_str();
                assert!(t.contains('.') || t.contains('e'), "integer notation {t}");
                t.parse::<f32>().expect("f32")
            }
            Value::String(s) if s == "-inf" => f32::NEG_INFINITY,
            Value::String(s) if s == "inf" => f32::INFINITY,
            other => panic!("bad float {other} in {a:?}"),
        })
        .collect()
}

fn kind(a: &Map<String, Value>) -> &str {
    assert_eq!(a["ok"], Value::Bool(false), "expected an error: {a:?}");
    let keys: Vec<&str> = a.keys().map(String::as_str).collect();
    assert_eq!(keys, ["id", "ok", "error", "message"]);
    a["error"].as_str().expect("kind")
}

// ------------------------------------------------------------------------------------------------
// Cases
// ------------------------------------------------------------------------------------------------

/// A random case; `combo` bit i switches on modifier i (mask, bias, alibi, window+sinks,
/// softcap, sink logits, explicit scale); `causal` 0/1/2.
fn random_case(rng: &mut Rng, causal: u8, combo: u32, self_attn: bool) -> Case {
    let kv_heads = 1 + rng.below(2);
    let heads = kv_heads * (1 + rng.below(3));
    let t = 1 + rng.below(9);
    let s = if self_attn { t } else { 1 + rng.below(12) };
    let d = 1 + rng.below(8);
    let dv = 1 + rng.below(6);
    let mut c = Case {
        heads,
        kv_heads,
        t,
        s,
        d,
        dv,
        q: rng.vec(heads * t * d, 1.0),
        k: rng.vec(kv_heads * s * d, 1.0),
        v: rng.vec(kv_heads * s * dv, 1.0),
        causal,
        ..Case::default()
    };
    if combo & 1 != 0 {
        c.mask = Some((0..t * s).map(|_| rng.below(4) != 0).collect());
    }
    if combo & 2 != 0 {
        c.bias = Some(rng.vec(heads * t * s, 1.0));
    }
    c.alibi = combo & 4 != 0;
    if combo & 8 != 0 {
        c.window = Some(1 + rng.below(4));
        c.sinks = rng.below(3);
    }
    if combo & 16 != 0 {
        c.softcap = Some(0.5 + rng.below(4) as f64);
    }
    if combo & 32 != 0 {
        c.sink_logits = Some(rng.vec(heads, 1.0));
    }
    if combo & 64 != 0 {
        c.scale = Some(rng.val(2.0));
    }
    c
}

fn nums(v: &[f64]) -> String {
    let items: Vec<String> = v
        .iter()
        .map(|x| {
            if x.is_infinite() {
                format!("\"{}inf\"", if *x < 0.0 { "-" } else { "" })
            } else {
                format!("{:e}", *x as f32)
            }
        })
        .collect();
    format!("[{}]", items.join(","))
}

/// The request line of `op` for a case (plus `extra` fields, e.g. `"do": [...]`).
fn line(op: &str, id: usize, c: &Case, extra: &str) -> String {
    let mut s = format!(
        "{{\"op\":\"{op}\",\"id\":{id},\"heads\":{},\"kv_heads\":{},\"t\":{},\"s\":{},\"d\":{},\"dv\":{},\"q\":{},\"k\":{},\"v\":{}",
        c.heads,
        c.kv_heads,
        c.t,
        c.s,
        c.d,
        c.dv,
        nums(&c.q),
        nums(&c.k),
        nums(&c.v)
    );
    match c.causal {
        1 => s.push_str(",\"causal\":\"bottom_right\""),
        2 => s.push_str(",\"causal\":\"top_left\""),
        _ => {}
    }
    if let Some(m) = &c.mask {
        s.push_str(&format!(",\"mask\":{}", serde_json::to_string(m).unwrap()));
    }
    if let Some(b) = &c.bias {
        s.push_str(&format!(",\"bias\":{}", nums(b)));
    }
    if c.alibi {
        s.push_str(",\"alibi\":true");
    }
    if let Some(w) = c.window {
        s.push_str(&format!(",\"window\":{w},\"sinks\":{}", c.sinks));
    }
    if let Some(x) = c.softcap {
        s.push_str(&format!(",\"softcap\":{x:e}"));
    }
    if let Some(z) = &c.sink_logits {
        s.push_str(&format!(",\"sink_logits\":{}", nums(z)));
    }
    if let Some(x) = c.scale {
        s.push_str(&format!(",\"scale\":{:e}", x as f32));
    }
    s.push_str(extra);
    s.push('}');
    s
}

fn max_abs(v: &[f64]) -> f64 {
    v.iter().fold(0.0, |m, x| m.max(x.abs()))
}

/// `got` within `bound(i)` of `want`, exact for infinities.
fn close(what: &str, got: &[f32], want: &[f64], bound: impl Fn(usize) -> f64, worst: &mut f64) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        if w.is_infinite() {
            assert_eq!(g as f64, w, "{what}[{i}]");
            continue;
        }
        let err = (g as f64 - w).abs();
        *worst = worst.max(err / bound(i));
        assert!(
            err <= bound(i),
            "{what}[{i}]: got {g}, want {w} (err {err:e} > {:e})",
            bound(i)
        );
    }
}

// ------------------------------------------------------------------------------------------------
// Tests
// ------------------------------------------------------------------------------------------------

/// `attention` and `attention_backward` against the f64 reference over every modifier
/// combination and both causal alignments; `grad_sink_logits` exactly when `sink_logits` is
/// given.
#[test]
fn forward_and_backward_match_the_reference() {
    let mut rng = Rng(0xc0f0_a77e);
    let mut cases = Vec::new();
    let mut lines = Vec::new();
    for combo in 0..128u32 {
        let causal = (combo % 3) as u8;
        let c = random_case(&mut rng, causal, combo, false);
        let d_o = rng.vec(c.heads * c.t * c.dv, 1.0);
        lines.push(line("attention", 2 * combo as usize, &c, ""));
        lines.push(line(
            "attention_backward",
            2 * combo as usize + 1,
            &c,
            &format!(",\"do\":{}", nums(&d_o)),
        ));
        cases.push((c, d_o));
    }
    let answers = run(&lines);
    let (mut wo, mut wl, mut we, mut wg) = (0.0f64, 0.0f64, 0.0f64, 0.0f64);
    for ((c, d_o), pair) in cases.iter().zip(answers.chunks_exact(2)) {
        let r = forward(c);
        let fwd = &pair[0];
        let keys: Vec<&str> = fwd.keys().map(String::as_str).collect();
        assert_eq!(keys, ["id", "ok", "o", "lse", "entropy"]);
        let vmax = max_abs(&c.v);
        close(
            "o",
            &floats(fwd, "o"),
            &r.o,
            |_| 256.0 * U * (1.0 + vmax),
            &mut wo,
        );
        close(
            "lse",
            &floats(fwd, "lse"),
            &r.lse,
            |i| 256.0 * U * (1.0 + r.lse[i].abs()),
            &mut wl,
        );
        // E|s| of the row: bounded by |lse| + entropy + 1 for these small scores.
        close(
            "entropy",
            &floats(fwd, "entropy"),
            &r.entropy,
            |i| 512.0 * U * (2.0 + r.lse[i].abs().min(1e3) + r.entropy[i]),
            &mut we,
        );
        let g = backward(c, d_o);
        let bwd = &pair[1];
        let mut keys: Vec<&str> = bwd.keys().map(String::as_str).collect();
        keys.sort_unstable();
        let mut want = vec!["grad_k", "grad_q", "grad_v", "id", "ok"];
        if c.sink_logits.is_some() {
            want.insert(0, "grad_sink_logits");
        }
        want.sort_unstable();
        assert_eq!(keys, want, "{bwd:?}");
        let mut grads = vec![("grad_q", &g.dq), ("grad_k", &g.dk), ("grad_v", &g.dv)];
        if c.sink_logits.is_some() {
            grads.push(("grad_sink_logits", &g.d_sink));
        }
        for (name, want) in grads {
            let m = max_abs(want);
            let got = floats(bwd, name);
            close(name, &got, want, |_| 1024.0 * U * (1.0 + m), &mut wg);
        }
    }
    eprintln!("worst error / bound: o {wo:.3}, lse {wl:.3}, entropy {we:.3}, gradients {wg:.3}");
}

/// `attention_stream` answers bit for bit what `attention` with `causal: "bottom_right"`
/// answers (and that is the reference), with every modifier it takes, windows and sinks that
/// evict, and a capacity exactly min(T, sinks + W).
#[test]
fn stream_equals_bottom_right_attention() {
    let mut rng = Rng(0x5717_ea11);
    let mut lines = Vec::new();
    let mut cases = Vec::new();
    for i in 0..64u32 {
        // Modifiers the stream takes: alibi, window+sinks, softcap, sink logits, scale.
        let combo = (i << 2) & 0b111_1100;
        let mut c = random_case(&mut rng, 1, combo, true);
        c.t += 8; // longer than any window: eviction happens
        c.s = c.t;
        c.q = rng.vec(c.heads * c.t * c.d, 1.0);
        c.k = rng.vec(c.kv_heads * c.s * c.d, 1.0);
        c.v = rng.vec(c.kv_heads * c.s * c.dv, 1.0);
        let cap = match c.window {
            Some(w) => c.t.min(w + c.sinks),
            None => c.t,
        };
        lines.push(line("attention", 2 * i as usize, &c, ""));
        // The stream op without `causal` (its only rule is bottom-right; the default).
        let mut sc = c.clone();
        sc.causal = 0;
        lines.push(line(
            "attention_stream",
            2 * i as usize + 1,
            &sc,
            &format!(",\"capacity\":{cap}"),
        ));
        cases.push(c);
    }
    let answers = run(&lines);
    let mut worst = 0.0;
    for (c, pair) in cases.iter().zip(answers.chunks_exact(2)) {
        let full = floats(&pair[0], "o");
        let keys: Vec<&str> = pair[1].keys().map(String::as_str).collect();
        assert_eq!(keys, ["id", "ok", "o"]);
        let streamed = floats(&pair[1], "o");
        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&streamed), bits(&full), "{c:?}");
        let vmax = max_abs(&c.v);
        close(
            "o",
            &streamed,
            &forward(c).o,
            |_| 256.0 * U * (1.0 + vmax),
            &mut worst,
        );
    }
    eprintln!("stream: worst error / bound {worst:.3}");
}

/// The edge rows of CONFORMANCE.md: no allowed key gives zeros, `lse` = `-inf` (or the sink
/// logit), entropy 0, zero gradients; S = 0 and T = 0.
#[test]
fn edge_rows() {
    let base = "\"heads\":1,\"kv_heads\":1,\"d\":1,\"dv\":1";
    let lines = vec![
        // Query 0 with an all-false mask row; query 1 sees key 1 only.
        format!("{{\"op\":\"attention\",\"id\":1,{base},\"t\":2,\"s\":2,\"q\":[1,2],\"k\":[3,4],\"v\":[5,6],\"mask\":[false,false,false,true]}}"),
        format!("{{\"op\":\"attention\",\"id\":2,{base},\"t\":1,\"s\":2,\"q\":[1],\"k\":[3,4],\"v\":[5,6],\"mask\":[false,false],\"sink_logits\":[0.5]}}"),
        format!("{{\"op\":\"attention_backward\",\"id\":3,{base},\"t\":1,\"s\":2,\"q\":[1],\"k\":[3,4],\"v\":[5,6],\"mask\":[false,false],\"sink_logits\":[0.5],\"do\":[1]}}"),
        format!("{{\"op\":\"attention\",\"id\":4,{base},\"t\":1,\"s\":0,\"q\":[1],\"k\":[],\"v\":[]}}"),
        format!("{{\"op\":\"attention\",\"id\":5,{base},\"t\":0,\"s\":3,\"q\":[],\"k\":[1,2,3],\"v\":[1,2,3]}}"),
        format!("{{\"op\":\"attention_stream\",\"id\":6,{base},\"t\":0,\"q\":[],\"k\":[],\"v\":[],\"capacity\":0}}"),
        // Top-left with T > S: query 2 at position 2 sees keys 0, 1 (all keys).
        format!("{{\"op\":\"attention\",\"id\":7,{base},\"t\":3,\"s\":2,\"q\":[0,0,0],\"k\":[0,0],\"v\":[2,4],\"causal\":\"top_left\"}}"),
        // Bottom-right with T > S: query 0 sits at position -1 and sees nothing.
        format!("{{\"op\":\"attention\",\"id\":8,{base},\"t\":3,\"s\":2,\"q\":[0,0,0],\"k\":[0,0],\"v\":[2,4],\"causal\":\"bottom_right\"}}"),
    ];
    let a = run(&lines);
    assert_eq!(floats(&a[0], "o"), [0.0, 6.0]);
    assert_eq!(floats(&a[0], "lse"), [f32::NEG_INFINITY, 4.0 * 2.0 / 1.0]);
    assert_eq!(floats(&a[0], "entropy"), [0.0, 0.0]);
    assert_eq!(floats(&a[1], "o"), [0.0]);
    assert_eq!(floats(&a[1], "lse"), [0.5]);
    assert_eq!(floats(&a[1], "entropy"), [0.0]);
    for g in ["grad_q", "grad_k", "grad_v", "grad_sink_logits"] {
        assert!(
            floats(&a[2], g).iter().all(|&x| x == 0.0),
            "{g}: {:?}",
            a[2]
        );
    }
    assert_eq!(floats(&a[3], "o"), [0.0]);
    assert_eq!(floats(&a[3], "lse"), [f32::NEG_INFINITY]);
    assert!(floats(&a[4], "o").is_empty() && floats(&a[4], "lse").is_empty());
    assert!(floats(&a[5], "o").is_empty());
    assert_eq!(floats(&a[6], "o"), [2.0, 3.0, 3.0]);
    assert_eq!(floats(&a[7], "o"), [0.0, 2.0, 3.0]);
    assert_eq!(floats(&a[7], "lse")[0], f32::NEG_INFINITY);
}

/// Every error kind the attention ops raise, and the check order (types, then shapes, then
/// values).
#[test]
fn errors() {
    let ok =
        "\"heads\":2,\"kv_heads\":1,\"t\":1,\"s\":2,\"d\":1,\"q\":[1,2],\"k\":[1,2],\"v\":[1,2]";
    let stream =
        "\"heads\":1,\"kv_heads\":1,\"t\":3,\"d\":1,\"q\":[1,2,3],\"k\":[1,2,3],\"v\":[1,2,3]";
    let cases: Vec<(String, &str)> = vec![
        (format!("{{\"op\":\"attention\",\"id\":0,{ok}}}"), "ok"),
        (format!("{{\"op\":\"attention\",\"id\":0,{ok},\"dtype\":\"f64\"}}"), "unsupported_dtype"),
        (format!("{{\"op\":\"attention_backward\",\"id\":0,{ok},\"do\":[1,1],\"dtype\":\"f64\"}}"), "unsupported_dtype"),
        (format!("{{\"op\":\"attention_stream\",\"id\":0,{stream},\"capacity\":3,\"dtype\":\"f64\"}}"), "unsupported_dtype"),
        // Types.
        ("{\"op\":\"attention\",\"id\":0,\"heads\":1}".to_string(), "invalid_param"),
        (format!("{{\"op\":\"attention\",\"id\":0,{ok},\"window\":2.0}}"), "invalid_param"),
        (format!("{{\"op\":\"attention\",\"id\":0,{ok},\"window\":-1}}"), "invalid_param"),
        (format!("{{\"op\":\"attention\",\"id\":0,{ok},\"alibi\":1}}"), "invalid_param"),
        (format!("{{\"op\":\"attention\",\"id\":0,{ok},\"causal\":true}}"), "invalid_param"),
        (format!("{{\"op\":\"attention\",\"id\":0,{ok},\"mask\":[1,0]}}"), "invalid_param"),
        (format!("{{\"op\":\"attention\",\"id\":0,{ok},\"capacity\":4}}"), "invalid_param"),
        (format!("{{\"op\":\"attention_backward\",\"id\":0,{ok}}}"), "invalid_param"),
        (format!("{{\"op\":\"attention_stream\",\"id\":0,{stream}}}"), "invalid_param"),
        (format!("{{\"op\":\"attention_stream\",\"id\":0,{stream},\"capacity\":3,\"mask\":[true]}}"), "invalid_param"),
        (format!("{{\"op\":\"attention_stream\",\"id\":0,{stream},\"capacity\":3,\"bias\":[0]}}"), "invalid_param"),
        // A type error wins over a shape error.
        ("{\"op\":\"attention\",\"id\":0,\"heads\":2,\"kv_heads\":3,\"t\":1,\"s\":1,\"d\":1,\"q\":[1],\"k\":[1],\"v\":[1],\"sinks\":\"2\"}".to_string(), "invalid_param"),
        // Shapes.
        ("{\"op\":\"attention\",\"id\":0,\"heads\":3,\"kv_heads\":2,\"t\":1,\"s\":1,\"d\":1,\"q\":[1,2,3],\"k\":[1,2],\"v\":[1,2]}".to_string(), "shape"),
        ("{\"op\":\"attention\",\"id\":0,\"heads\":0,\"kv_heads\":1,\"t\":1,\"s\":1,\"d\":1,\"q\":[],\"k\":[1],\"v\":[1]}".to_string(), "shape"),
        ("{\"op\":\"attention\",\"id\":0,\"heads\":1,\"kv_heads\":1,\"t\":1,\"s\":1,\"d\":0,\"q\":[],\"k\":[],\"v\":[1]}".to_string(), "shape"),
        (format!("{{\"op\":\"attention\",\"id\":0,{ok},\"dv\":2}}"), "shape"),
        ("{\"op\":\"attention\",\"id\":0,\"heads\":1,\"kv_heads\":1,\"t\":1,\"s\":2,\"d\":1,\"q\":[1],\"k\":[1],\"v\":[1,2]}".to_string(), "shape"),
        (format!("{{\"op\":\"attention\",\"id\":0,{ok},\"mask\":[true]}}"), "shape"),
        (format!("{{\"op\":\"attention\",\"id\":0,{ok},\"bias\":[0,0,0]}}"), "shape"),
        (format!("{{\"op\":\"attention\",\"id\":0,{ok},\"sink_logits\":[0]}}"), "shape"),
        (format!("{{\"op\":\"attention_backward\",\"id\":0,{ok},\"do\":[1]}}"), "shape"),
        ("{\"op\":\"attention\",\"id\":0,\"heads\":99999999999999999999999,\"kv_heads\":1,\"t\":1,\"s\":1,\"d\":1,\"q\":[1],\"k\":[1],\"v\":[1]}".to_string(), "shape"),
        (format!("{{\"op\":\"attention_stream\",\"id\":0,{stream},\"s\":2,\"capacity\":3}}"), "shape"),
        // A shape error wins over a value error.
        ("{\"op\":\"attention\",\"id\":0,\"heads\":3,\"kv_heads\":2,\"t\":1,\"s\":1,\"d\":1,\"q\":[1,2,3],\"k\":[1,2],\"v\":[1,2],\"window\":0}".to_string(), "shape"),
        // Values.
        (format!("{{\"op\":\"attention\",\"id\":0,{ok},\"window\":0}}"), "invalid_param"),
        (format!("{{\"op\":\"attention\",\"id\":0,{ok},\"softcap\":0}}"), "invalid_param"),
        (format!("{{\"op\":\"attention\",\"id\":0,{ok},\"softcap\":-1}}"), "invalid_param"),
        (format!("{{\"op\":\"attention\",\"id\":0,{ok},\"softcap\":\"inf\"}}"), "invalid_param"),
        (format!("{{\"op\":\"attention\",\"id\":0,{ok},\"scale\":\"nan\"}}"), "invalid_param"),
        (format!("{{\"op\":\"attention\",\"id\":0,{ok},\"scale\":1e39}}"), "invalid_param"),
        (format!("{{\"op\":\"attention\",\"id\":0,{ok},\"causal\":\"upper\"}}"), "invalid_param"),
        (format!("{{\"op\":\"attention_stream\",\"id\":0,{stream},\"capacity\":3,\"causal\":\"top_left\"}}"), "invalid_param"),
        (format!("{{\"op\":\"attention_stream\",\"id\":0,{stream},\"capacity\":3,\"causal\":\"none\"}}"), "invalid_param"),
        // The cache: T = 3 tokens without a window; sinks 1 + window 1 = 2 with one.
        (format!("{{\"op\":\"attention_stream\",\"id\":0,{stream},\"capacity\":3}}"), "ok"),
        (format!("{{\"op\":\"attention_stream\",\"id\":0,{stream},\"capacity\":3,\"causal\":\"bottom_right\"}}"), "ok"),
        (format!("{{\"op\":\"attention_stream\",\"id\":0,{stream},\"capacity\":2}}"), "cache_full"),
        (format!("{{\"op\":\"attention_stream\",\"id\":0,{stream},\"capacity\":2,\"window\":1,\"sinks\":1}}"), "ok"),
        (format!("{{\"op\":\"attention_stream\",\"id\":0,{stream},\"capacity\":1,\"window\":1,\"sinks\":1}}"), "cache_full"),
        (format!("{{\"op\":\"attention_stream\",\"id\":0,{stream},\"capacity\":18446744073709551615,\"window\":1}}"), "ok"),
    ];
    let lines: Vec<String> = cases.iter().map(|(l, _)| l.clone()).collect();
    let answers = run(&lines);
    for ((l, want), a) in cases.iter().zip(&answers) {
        let got = if a["ok"] == Value::Bool(true) {
            "ok"
        } else {
            kind(a)
        };
        assert_eq!(got, *want, "{l}\n-> {a:?}");
    }
}
