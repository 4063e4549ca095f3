//! `harness conform`'s attention ops (harness/CONFORMANCE.md, "Attention") driven as outside
//! checks drive them: the real binary, JSON lines on stdin, answers parsed back from their text.
//!
//! Numbers are checked against the naive f64 reference of `attention_support/reference.rs`
//! (materialised scores, f64 `exp`, written from the specification), run on the same
//! f32-rounded inputs; `attention_stream` must answer bit for bit what `attention` with
//! bottom-right causality answers — with a reduced-precision cache (`kv_dtype`), what attention-core's
//! `attention` answers on K and V replaced by their read-back values; the edge rows and every
//! error kind against the exact answers CONFORMANCE.md prescribes.
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

use attention_core::backend::Poly;
use attention_core::softmax_core::stored::{bf16, f16, Stored};
use attention_core::{attention, Causal, Dims, Options, Output, Qkv};
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

/// The values a cache of format `E` reads back for `x`, stored row by row (rows of `w` values:
/// one token's keys or values of one kv head), by softmax-core's `store_row` and `load`.
fn read_back<E: Stored>(x: &[f64], w: usize) -> Vec<f32> {
    let x: Vec<f32> = x.iter().map(|&v| v as f32).collect();
    let mut out = vec![E::default(); w];
    let mut read = Vec::with_capacity(x.len());
    for row in x.chunks_exact(w) {
        let s = E::store_row(row, &mut out).expect("storable");
        read.extend(out.iter().map(|e| e.load(s)));
    }
    read
}

/// attention-core's `attention` (bottom-right, `Poly`) of the case's queries and options over
/// keys `k` and values `v`.
fn bottom_right_attention(c: &Case, k: &[f32], v: &[f32]) -> Vec<f32> {
    let f = |x: &[f64]| x.iter().map(|&v| v as f32).collect::<Vec<f32>>();
    let q = f(&c.q);
    let sink_logits = c.sink_logits.as_deref().map(f);
    let mut opts = Options::new()
        .with_causal(Causal::BottomRight)
        .with_alibi(c.alibi)
        .with_sinks(c.sinks);
    if let Some(w) = c.window {
        opts = opts.with_window(w);
    }
    if let Some(x) = c.softcap {
        opts = opts.with_softcap(x as f32);
    }
    if let Some(x) = c.scale {
        opts = opts.with_scale(x as f32);
    }
    if let Some(z) = &sink_logits {
        opts = opts.with_sink_logits(z);
    }
    let mut o = vec![0.0f32; c.heads * c.t * c.dv];
    attention(
        Poly,
        &Dims::new(c.heads, c.kv_heads, c.t, c.s, c.d, c.dv),
        Qkv::new(&q, k, v),
        &opts,
        Output::new(&mut o),
    )
    .expect("attention");
    o
}

/// `attention_stream` with `kv_dtype` f16, bf16 and int8 answers bit for bit what `attention`
/// (bottom-right, the same options) answers on K and V replaced by their read-back values
/// (softmax-core's `store_row` + `load`, row by row), over windows that evict, sinks, GQA,
/// ALiBi, soft-caps, sink logits and explicit scales, with K and V of unit size, large (100)
/// and tiny (2⁻¹⁷: f16 subnormals); that answer is within the f64 reference's tolerance on the
/// same read-back values; and it differs from the f32 cache's (the field is not ignored).
/// `"kv_dtype": "f32"` is the cache without the field, bit for bit.
#[test]
fn stream_with_a_reduced_cache_equals_attention_on_the_read_back_values() {
    const KINDS: [&str; 3] = ["f16", "bf16", "int8"];
    let mut rng = Rng(0x6b76_d7e5);
    let mut lines = Vec::new();
    let mut cases = Vec::new();
    for i in 0..48u32 {
        // Modifiers the stream takes: alibi, window+sinks, softcap, sink logits, scale.
        let combo = (i << 2) & 0b111_1100;
        let mut c = random_case(&mut rng, 1, combo, true);
        c.t += 8; // longer than any window: eviction happens
        c.s = c.t;
        let ka = [1.0, 2f64.powi(-17)][rng.below(2)];
        let va = [1.0, 100.0, 2f64.powi(-17)][rng.below(3)];
        c.q = rng.vec(c.heads * c.t * c.d, 1.0);
        c.k = rng.vec(c.kv_heads * c.s * c.d, ka);
        c.v = rng.vec(c.kv_heads * c.s * c.dv, va);
        let cap = match c.window {
            Some(w) => c.t.min(w + c.sinks),
            None => c.t,
        };
        let id = 6 * i as usize;
        let mut sc = c.clone();
        sc.causal = 0;
        lines.push(line("attention", id, &c, ""));
        lines.push(line(
            "attention_stream",
            id + 1,
            &sc,
            &format!(",\"capacity\":{cap}"),
        ));
        for (j, kv) in ["f32"].iter().chain(&KINDS).enumerate() {
            lines.push(line(
                "attention_stream",
                id + 2 + j,
                &sc,
                &format!(",\"capacity\":{cap},\"kv_dtype\":\"{kv}\""),
            ));
        }
        cases.push(c);
    }
    let answers = run(&lines);
    let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    let mut differs = [0usize; 3];
    let mut worst = 0.0;
    for (c, a) in cases.iter().zip(answers.chunks_exact(6)) {
        let full = floats(&a[0], "o");
        assert_eq!(bits(&floats(&a[1], "o")), bits(&full), "{c:?}");
        assert_eq!(
            bits(&floats(&a[2], "o")),
            bits(&full),
            "kv_dtype f32: {c:?}"
        );
        for (j, kv) in KINDS.iter().enumerate() {
            let ans = &a[3 + j];
            let keys: Vec<&str> = ans.keys().map(String::as_str).collect();
            assert_eq!(keys, ["id", "ok", "o"]);
            let got = floats(ans, "o");
            let (k, v) = match *kv {
                "f16" => (read_back::<f16>(&c.k, c.d), read_back::<f16>(&c.v, c.dv)),
                "bf16" => (read_back::<bf16>(&c.k, c.d), read_back::<bf16>(&c.v, c.dv)),
                _ => (read_back::<i8>(&c.k, c.d), read_back::<i8>(&c.v, c.dv)),
            };
            let want = bottom_right_attention(c, &k, &v);
            assert_eq!(bits(&got), bits(&want), "kv_dtype {kv}: {c:?}");
            differs[j] += usize::from(bits(&got) != bits(&full));
            let mut rc = c.clone();
            rc.k = k.iter().map(|&x| f64::from(x)).collect();
            rc.v = v.iter().map(|&x| f64::from(x)).collect();
            let vmax = max_abs(&rc.v);
            close(
                "o",
                &got,
                &forward(&rc).o,
                |_| 256.0 * U * (1.0 + vmax),
                &mut worst,
            );
        }
    }
    let count = |f: fn(&Case) -> bool| cases.iter().filter(|c| f(c)).count();
    assert!(count(|c| c.heads > c.kv_heads && c.window.is_some() && c.sinks > 0) > 0);
    assert!(count(|c| c.alibi && c.heads > c.kv_heads) > 0);
    assert!(count(|c| c.sink_logits.is_some() && c.softcap.is_some()) > 0);
    eprintln!("reduced caches: outputs unlike the f32 cache's {differs:?} of {}; worst error / bound {worst:.3}", cases.len());
    for (kv, n) in KINDS.iter().zip(differs) {
        assert!(
            2 * n >= cases.len(),
            "kv_dtype {kv} changed only {n} outputs"
        );
    }
}

/// `kv_dtype` errors name the token and the format; the rows a format cannot store.
#[test]
fn reduced_cache_refusals() {
    let case = |k: &str, v: &str, kv: &str| {
        format!("{{\"op\":\"attention_stream\",\"id\":0,\"heads\":1,\"kv_heads\":1,\"t\":3,\"d\":1,\"q\":[1,2,3],\"k\":{k},\"v\":{v},\"capacity\":3,\"kv_dtype\":\"{kv}\"}}")
    };
    let a = run(&[
        case("[1,\"nan\",3]", "[1,2,3]", "f16"),
        case("[1,2,3]", "[1,2,\"-inf\"]", "int8"),
        case("[1,2,3]", "[1,70000,3]", "f16"),
    ]);
    for (ans, token, what, kv) in [
        (&a[0], 1, "k", "f16"),
        (&a[1], 2, "v", "int8"),
        (&a[2], 1, "v", "f16"),
    ] {
        assert_eq!(kind(ans), "invalid_param");
        let m = ans["message"].as_str().expect("message");
        assert!(
            m.contains(&format!("token {token}"))
                && m.contains(&format!("`{what}`"))
                && m.contains(&format!("\"{kv}\"")),
            "{m}"
        );
    }
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
    // `kv_dtype`: the names, the dtype, the rows each format cannot store, the check order.
    let kv = |extra: &str, kv: &str| {
        format!("{{\"op\":\"attention_stream\",\"id\":0,{stream},\"capacity\":3{extra},\"kv_dtype\":{kv}}}")
    };
    let kv_rows = |k: &str, v: &str, kv: &str| {
        format!("{{\"op\":\"attention_stream\",\"id\":0,\"heads\":1,\"kv_heads\":1,\"t\":3,\"d\":1,\"q\":[1,2,3],\"k\":{k},\"v\":{v},\"capacity\":3,\"kv_dtype\":\"{kv}\"}}")
    };
    let mut cases = cases;
    cases.extend([
        (kv("", "\"f32\""), "ok"),
        (kv("", "\"f16\""), "ok"),
        (kv("", "\"bf16\""), "ok"),
        (kv("", "\"int8\""), "ok"),
        (kv(",\"dtype\":\"f32\"", "\"int8\""), "ok"),
        (kv("", "\"F16\""), "invalid_param"),
        (kv("", "\"fp16\""), "invalid_param"),
        (kv("", "\"float16\""), "invalid_param"),
        (kv("", "\"f64\""), "invalid_param"),
        (kv("", "\"int4\""), "invalid_param"),
        (kv("", "\"\""), "invalid_param"),
        (kv("", "16"), "invalid_param"),
        (kv("", "null"), "invalid_param"),
        (kv("", "[\"f16\"]"), "invalid_param"),
        (kv("", "true"), "invalid_param"),
        // Only with dtype f32: with f64 the combination is invalid_param, whatever the format.
        (kv(",\"dtype\":\"f64\"", "\"f16\""), "invalid_param"),
        (kv(",\"dtype\":\"f64\"", "\"f32\""), "invalid_param"),
        (kv(",\"dtype\":\"f64\"", "\"int8\""), "invalid_param"),
        (kv(",\"dtype\":\"f64\"", "\"fp8\""), "invalid_param"),
        // A dtype that is no dtype at all stays unsupported_dtype.
        (kv(",\"dtype\":\"f16\"", "\"f16\""), "unsupported_dtype"),
        // The other attention ops have no such field.
        (format!("{{\"op\":\"attention\",\"id\":0,{ok},\"kv_dtype\":\"f16\"}}"), "invalid_param"),
        (format!("{{\"op\":\"attention_backward\",\"id\":0,{ok},\"do\":[1,1],\"kv_dtype\":\"f32\"}}"), "invalid_param"),
        // Rows: NaN and ±inf in keys or values, in every reduced format (the f32 cache holds them).
        (kv_rows("[1,\"nan\",3]", "[1,2,3]", "f32"), "ok"),
        (kv_rows("[1,\"nan\",3]", "[1,2,3]", "f16"), "invalid_param"),
        (kv_rows("[1,\"nan\",3]", "[1,2,3]", "bf16"), "invalid_param"),
        (kv_rows("[1,\"nan\",3]", "[1,2,3]", "int8"), "invalid_param"),
        (kv_rows("[1,2,3]", "[\"nan\",2,3]", "int8"), "invalid_param"),
        (kv_rows("[1,2,3]", "[1,2,\"inf\"]", "f16"), "invalid_param"),
        (kv_rows("[\"-inf\",2,3]", "[1,2,3]", "bf16"), "invalid_param"),
        (kv_rows("[1,2,\"-inf\"]", "[1,2,3]", "int8"), "invalid_param"),
        // A NaN query is not stored: computed with.
        ("{\"op\":\"attention_stream\",\"id\":0,\"heads\":1,\"kv_heads\":1,\"t\":3,\"d\":1,\"q\":[1,\"nan\",3],\"k\":[1,2,3],\"v\":[1,2,3],\"capacity\":3,\"kv_dtype\":\"f16\"}".to_string(), "ok"),
        // Finite values that round to ±inf: f16 from 65520 on, bf16 from 2^128 − 2^119.
        (kv_rows("[1,70000.0,3]", "[1,2,3]", "f16"), "invalid_param"),
        (kv_rows("[1,2,3]", "[1,-70000.0,3]", "f16"), "invalid_param"),
        (kv_rows("[1,70000.0,3]", "[1,2,3]", "bf16"), "ok"),
        (kv_rows("[1,70000.0,3]", "[1,-70000.0,3]", "int8"), "ok"),
        (kv_rows("[1,2,3]", "[65519.996,2,3]", "f16"), "ok"),
        (kv_rows("[1,2,3]", "[65520,2,3]", "f16"), "invalid_param"),
        (kv_rows("[1,2,3]", "[3.3961514e38,2,3]", "bf16"), "ok"),
        (kv_rows("[1,2,3]", "[3.3961776e38,2,3]", "bf16"), "invalid_param"),
        (kv_rows("[1,3.4e38,3]", "[1,2,3]", "bf16"), "invalid_param"),
        (kv_rows("[1,3.4028235e38,3]", "[1,2,3]", "int8"), "ok"),
        // Check order: a type error of kv_dtype before a shape error; a shape error before a
        // bad name; cache_full before a row the cache cannot store.
        (kv(",\"s\":2", "7"), "invalid_param"),
        (kv(",\"s\":2", "\"fp8\""), "shape"),
        ("{\"op\":\"attention_stream\",\"id\":0,\"heads\":1,\"kv_heads\":1,\"t\":3,\"d\":1,\"q\":[1,2,3],\"k\":[1,\"nan\",3],\"v\":[1,2,3],\"capacity\":2,\"kv_dtype\":\"f16\"}".to_string(), "cache_full"),
    ]);
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
