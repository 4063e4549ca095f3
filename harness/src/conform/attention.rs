//! Attention (CONFORMANCE.md, "Attention"): `attention`, `attention_backward` and
//! `attention_stream`, computed by attention-core with the `Poly` backend, f32 only (f64 answers
//! `unsupported_dtype`).
//!
//! Decisions where CONFORMANCE.md leaves room:
//!
//! * `heads`, `kv_heads`, `t`, `s`, `d` are required non-negative integers; `dv` defaults to `d`.
//!   `heads`, `kv_heads`, `d`, `dv` = 0 and `kv_heads` not dividing `heads` are `shape` errors;
//!   `t` = 0 answers empty arrays, `s` = 0 (no key) answers zeros and `lse` = `-inf`.
//! * `attention_stream` has S = T: `s` may be given and must then equal `t` (`shape`). Its
//!   `causal` must be absent or `"bottom_right"` (else `invalid_param`); `mask` and `bias` are
//!   unknown fields there. `capacity` is a required non-negative integer. The cache the op
//!   allocates holds exactly the tokens the stream needs (min(T, sinks + W) with a window, T
//!   without), after checking that number against `capacity` (`cache_full`), so a huge
//!   `capacity` allocates nothing extra.
//! * `sinks` without `window` changes nothing (sinks are exempt from the window only).
//! * `kv_dtype` (`attention_stream` only): `"f32"` (the default), `"f16"`, `"bf16"` or
//!   `"int8"`, the element type of the cache (`KvCacheSlice<E>`, `E` = `f32`, `f16`, `bf16`,
//!   `i8` with one f32 scale per row); any other string, or another JSON type, is
//!   `invalid_param`. With `"dtype": "f64"` the field is an option combination the op does not
//!   allow: `invalid_param`, decided where the dtype is (`super::F32_ONLY`), in place of f64's
//!   `unsupported_dtype`. A token whose `k` or `v` rows the format cannot store (NaN, ±inf,
//!   an f16/bf16 value that rounds to ±inf: `Error::NotStorable`) is `invalid_param`, found
//!   while decoding, so after `cache_full`. `"f32"` is the cache the op had before the field
//!   existed: the same code, the same bits.
//! * Check order as the other ops: every field's type (`invalid_param`), then dimensions and
//!   lengths (`shape`), then values: `causal` string, `scale` finite, `softcap` finite and > 0,
//!   `window` >= 1, `kv_dtype` a format name (`invalid_param`), then `cache_full`, then a row
//!   the cache cannot store.

use serde_json::Value;
use softmax_core::backend::Poly;

use attention_core::{
    attention, attention_backward, Causal, DecodeOptions, Dims, Element, Error as AttnError, Grads,
    KvCacheSlice, Options, Output, Qkv, Saved, Window,
};
use softmax_core::stored::{bf16, f16, Operand};

use super::request::{describe, Request};
use super::wire::float_array;
use super::{Failure, Kind, Op, Outputs};

/// The ops of this module (see [`Op`]).
pub(super) const OPS: &[Op] = &[
    Op {
        name: "attention",
        fields: FIELDS,
        f32: forward,
        f64: None,
    },
    Op {
        name: "attention_backward",
        fields: BACKWARD_FIELDS,
        f32: backward,
        f64: None,
    },
    Op {
        name: "attention_stream",
        fields: STREAM_FIELDS,
        f32: stream,
        f64: None,
    },
];

/// Fields of `attention` (besides `id`, `op`, `dtype`).
const FIELDS: &[&str] = &[
    "q",
    "k",
    "v",
    "heads",
    "kv_heads",
    "t",
    "s",
    "d",
    "dv",
    "scale",
    "causal",
    "mask",
    "bias",
    "alibi",
    "window",
    "sinks",
    "softcap",
    "sink_logits",
];

/// Fields of `attention_backward`: the forward fields and `do`.
const BACKWARD_FIELDS: &[&str] = &[
    "q",
    "k",
    "v",
    "heads",
    "kv_heads",
    "t",
    "s",
    "d",
    "dv",
    "scale",
    "causal",
    "mask",
    "bias",
    "alibi",
    "window",
    "sinks",
    "softcap",
    "sink_logits",
    "do",
];

/// Fields of `attention_stream`: no `mask`, no `bias`; `capacity`, `kv_dtype`.
const STREAM_FIELDS: &[&str] = &[
    "q",
    "k",
    "v",
    "heads",
    "kv_heads",
    "t",
    "s",
    "d",
    "dv",
    "scale",
    "causal",
    "alibi",
    "window",
    "sinks",
    "softcap",
    "sink_logits",
    "capacity",
    "kv_dtype",
];

/// attention-core's errors in protocol terms (a backstop: the handlers check lengths and values
/// first, to follow the check order and name the field).
impl From<AttnError> for Failure {
    fn from(e: AttnError) -> Self {
        let kind = match e {
            AttnError::LengthMismatch { .. }
            | AttnError::ShapeOverflow
            | AttnError::ZeroDim { .. }
            | AttnError::KvHeads { .. } => Kind::Shape,
            AttnError::CacheFull { .. } => Kind::CacheFull,
            _ => Kind::InvalidParam,
        };
        Failure::new(kind, e.to_string())
    }
}

fn missing(name: &str) -> Failure {
    Failure::invalid_param(format!("missing required field `{name}`"))
}

/// A non-negative integer written as one (digits only): `Ok(None)` when absent; one too large
/// for `usize` is a `shape` error (no data can match it).
fn opt_size(req: &Request<'_>, name: &str) -> Result<Option<usize>, Failure> {
    let Some(v) = req.raw(name) else {
        return Ok(None);
    };
    match v {
        Value::Number(n) if n.as_str().bytes().all(|c| c.is_ascii_digit()) => n
            .as_str()
            .parse::<usize>()
            .map(Some)
            .map_err(|_| Failure::shape(format!("`{name}` = {} is too large to address", n))),
        _ => Err(Failure::invalid_param(format!(
            "`{name}` must be a non-negative integer, found {}",
            describe(v)
        ))),
    }
}

fn size(req: &Request<'_>, name: &str) -> Result<usize, Failure> {
    opt_size(req, name)?.ok_or_else(|| missing(name))
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

fn opt_str<'a>(req: &Request<'a>, name: &str) -> Result<Option<&'a str>, Failure> {
    match req.raw(name) {
        None => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.as_str())),
        Some(v) => Err(Failure::invalid_param(format!(
            "`{name}` must be a string, found {}",
            describe(v)
        ))),
    }
}

fn opt_floats(req: &Request<'_>, name: &str) -> Result<Option<Vec<f32>>, Failure> {
    match req.raw(name) {
        None => Ok(None),
        Some(_) => req.floats::<f32>(name).map(Some),
    }
}

fn opt_float(req: &Request<'_>, name: &str) -> Result<Option<f32>, Failure> {
    match req.raw(name) {
        None => Ok(None),
        Some(_) => req.float_or::<f32>(name, 0.0).map(Some),
    }
}

fn product(a: usize, b: usize) -> Result<usize, Failure> {
    a.checked_mul(b)
        .ok_or_else(|| Failure::shape("the dimensions' product is too large to address"))
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

/// A buffer of `len` copies of `value`; a length the allocator refuses is a `shape` error, not
/// an abort.
fn filled<T: Clone>(len: usize, value: T, what: &str) -> Result<Vec<T>, Failure> {
    let mut v = Vec::new();
    v.try_reserve_exact(len).map_err(|_| {
        Failure::shape(format!(
            "`{what}` would need {len} values: too large to allocate"
        ))
    })?;
    v.resize(len, value);
    Ok(v)
}

/// A zeroed output buffer (see [`filled`]).
fn zeros(len: usize, what: &str) -> Result<Vec<f32>, Failure> {
    filled(len, 0.0, what)
}

/// `kv_dtype`: what the `attention_stream` cache stores its rows as.
#[derive(Clone, Copy, PartialEq, Eq)]
enum KvDtype {
    F32,
    F16,
    Bf16,
    Int8,
}

/// One validated request of the family.
struct Case {
    dims: Dims,
    q: Vec<f32>,
    k: Vec<f32>,
    v: Vec<f32>,
    scale: Option<f32>,
    causal: Causal,
    mask: Option<Vec<bool>>,
    bias: Option<Vec<f32>>,
    alibi: bool,
    window: Option<usize>,
    sinks: usize,
    softcap: Option<f32>,
    sink_logits: Option<Vec<f32>>,
    /// `do` (backward) — empty otherwise.
    d_o: Vec<f32>,
    /// `capacity` (stream) — 0 otherwise.
    capacity: usize,
    /// `kv_dtype` (stream) — f32 otherwise.
    kv_dtype: KvDtype,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Which {
    Forward,
    Backward,
    Stream,
}

/// What the forward pass returns: `o`, `lse`, `entropy`.
type Forward = (Vec<f32>, Vec<f32>, Vec<f32>);

impl Case {
    fn parse(req: &Request<'_>, which: Which) -> Result<Self, Failure> {
        // 1. Types.
        let q = req.floats::<f32>("q")?;
        let k = req.floats::<f32>("k")?;
        let v = req.floats::<f32>("v")?;
        let heads = size(req, "heads")?;
        let kv_heads = size(req, "kv_heads")?;
        let t = size(req, "t")?;
        let s = if which == Which::Stream {
            opt_size(req, "s")?
        } else {
            Some(size(req, "s")?)
        };
        let d = size(req, "d")?;
        let dv = opt_size(req, "dv")?.unwrap_or(d);
        let scale = opt_float(req, "scale")?;
        let causal = opt_str(req, "causal")?;
        let mask = req.opt_bools("mask")?;
        let bias = opt_floats(req, "bias")?;
        let alibi = bool_or(req, "alibi", false)?;
        let window = opt_size(req, "window")?;
        let sinks = opt_size(req, "sinks")?.unwrap_or(0);
        let softcap = opt_float(req, "softcap")?;
        let sink_logits = opt_floats(req, "sink_logits")?;
        let d_o = if which == Which::Backward {
            req.floats::<f32>("do")?
        } else {
            Vec::new()
        };
        let capacity = if which == Which::Stream {
            size(req, "capacity")?
        } else {
            0
        };
        // Another op has no such field (an unknown field, refused before the handler runs).
        let kv_dtype = if which == Which::Stream {
            opt_str(req, "kv_dtype")?
        } else {
            None
        };
        // 2. Dimensions and lengths.
        let s = match s {
            Some(s) if which == Which::Stream && s != t => {
                return Err(Failure::shape(format!(
                    "`attention_stream` needs s = t, found s = {s}, t = {t}"
                )))
            }
            Some(s) => s,
            None => t,
        };
        for (what, n) in [
            ("heads", heads),
            ("kv_heads", kv_heads),
            ("d", d),
            ("dv", dv),
        ] {
            if n == 0 {
                return Err(Failure::shape(format!("`{what}` must be at least 1")));
            }
        }
        if !heads.is_multiple_of(kv_heads) {
            return Err(Failure::shape(format!(
                "kv_heads = {kv_heads} does not divide heads = {heads}"
            )));
        }
        let ht = product(heads, t)?;
        let kv_s = product(kv_heads, s)?;
        check_len("q", product(ht, d)?, q.len())?;
        check_len("k", product(kv_s, d)?, k.len())?;
        check_len("v", product(kv_s, dv)?, v.len())?;
        if let Some(m) = &mask {
            check_len("mask", product(t, s)?, m.len())?;
        }
        if let Some(b) = &bias {
            check_len("bias", product(ht, s)?, b.len())?;
        }
        if let Some(z) = &sink_logits {
            check_len("sink_logits", heads, z.len())?;
        }
        if which == Which::Backward {
            check_len("do", product(ht, dv)?, d_o.len())?;
        }
        // 3. Values.
        let causal = match causal {
            None | Some("none") if which != Which::Stream => Causal::None,
            None | Some("bottom_right") => Causal::BottomRight,
            Some("top_left") if which != Which::Stream => Causal::TopLeft,
            Some(other) => {
                let allowed = if which == Which::Stream {
                    "\"bottom_right\" (the only rule of a decoder)"
                } else {
                    "\"none\", \"bottom_right\" or \"top_left\""
                };
                return Err(Failure::invalid_param(format!(
                    "`causal` must be {allowed}, found {}",
                    Value::String(other.to_string())
                )));
            }
        };
        if let Some(c) = scale.filter(|c| !c.is_finite()) {
            return Err(Failure::invalid_param(format!(
                "`scale` must be finite, got {c} (as f32)"
            )));
        }
        if let Some(c) = softcap.filter(|c| !(c.is_finite() && *c > 0.0)) {
            return Err(Failure::invalid_param(format!(
                "`softcap` must be finite and > 0, got {c} (as f32)"
            )));
        }
        if window == Some(0) {
            return Err(Failure::invalid_param("`window` must be at least 1"));
        }
        let kv_dtype = match kv_dtype {
            None | Some("f32") => KvDtype::F32,
            Some("f16") => KvDtype::F16,
            Some("bf16") => KvDtype::Bf16,
            Some("int8") => KvDtype::Int8,
            Some(other) => {
                return Err(Failure::invalid_param(format!(
                    "`kv_dtype` must be \"f32\", \"f16\", \"bf16\" or \"int8\", found {}",
                    Value::String(other.to_string())
                )))
            }
        };
        Ok(Case {
            dims: Dims::new(heads, kv_heads, t, s, d, dv),
            q,
            k,
            v,
            scale,
            causal,
            mask,
            bias,
            alibi,
            window,
            sinks,
            softcap,
            sink_logits,
            d_o,
            capacity,
            kv_dtype,
        })
    }

    fn options(&self) -> Options<'_, f32> {
        let mut o = Options::new()
            .with_causal(self.causal)
            .with_alibi(self.alibi)
            .with_sinks(self.sinks);
        if let Some(c) = self.scale {
            o = o.with_scale(c);
        }
        if let Some(m) = &self.mask {
            o = o.with_mask(m);
        }
        if let Some(b) = &self.bias {
            o = o.with_bias(b);
        }
        if let Some(w) = self.window {
            o = o.with_window(w);
        }
        if let Some(c) = self.softcap {
            o = o.with_softcap(c);
        }
        if let Some(z) = &self.sink_logits {
            o = o.with_sink_logits(z);
        }
        o
    }

    /// The score options for the decoder (its window and sinks are the cache's).
    fn decode_options(&self) -> DecodeOptions<'_, f32> {
        let mut o = DecodeOptions::new().with_alibi(self.alibi);
        if let Some(c) = self.scale {
            o = o.with_scale(c);
        }
        if let Some(c) = self.softcap {
            o = o.with_softcap(c);
        }
        if let Some(z) = &self.sink_logits {
            o = o.with_sink_logits(z);
        }
        o
    }

    fn qkv(&self) -> Qkv<'_, f32> {
        Qkv::new(&self.q, &self.k, &self.v)
    }

    /// The forward pass: `o`, `lse`, `entropy`.
    fn forward(&self) -> Result<Forward, Failure> {
        let ht = product(self.dims.heads, self.dims.t)?;
        let mut o = zeros(product(ht, self.dims.dv)?, "o")?;
        let mut lse = zeros(ht, "lse")?;
        let mut entropy = zeros(ht, "entropy")?;
        attention(
            Poly,
            &self.dims,
            self.qkv(),
            &self.options(),
            Output::new(&mut o)
                .with_lse(&mut lse)
                .with_entropy(&mut entropy),
        )?;
        Ok((o, lse, entropy))
    }
}

/// `attention`: `o`, `lse`, `entropy`.
fn forward(req: &Request<'_>) -> Result<Outputs, Failure> {
    let c = Case::parse(req, Which::Forward)?;
    let (o, lse, entropy) = c.forward()?;
    Ok(vec![
        ("o", float_array(&o)),
        ("lse", float_array(&lse)),
        ("entropy", float_array(&entropy)),
    ])
}

/// `attention_backward`: `grad_q`, `grad_k`, `grad_v` (and `grad_sink_logits`) of Σ do ⊙ o,
/// from the forward pass's `o` and `lse`.
fn backward(req: &Request<'_>) -> Result<Outputs, Failure> {
    let c = Case::parse(req, Which::Backward)?;
    let (o, lse, _) = c.forward()?;
    let mut dq = zeros(c.q.len(), "grad_q")?;
    let mut dk = zeros(c.k.len(), "grad_k")?;
    let mut dv = zeros(c.v.len(), "grad_v")?;
    let mut dz = zeros(c.dims.heads, "grad_sink_logits")?;
    let mut grads = Grads::new(&mut dq, &mut dk, &mut dv);
    if c.sink_logits.is_some() {
        grads = grads.with_sink_logits(&mut dz);
    }
    attention_backward(
        Poly,
        &c.dims,
        c.qkv(),
        &c.options(),
        Saved::new(&o, &lse),
        &c.d_o,
        grads,
    )?;
    let mut out = vec![
        ("grad_q", float_array(&dq)),
        ("grad_k", float_array(&dk)),
        ("grad_v", float_array(&dv)),
    ];
    if c.sink_logits.is_some() {
        out.push(("grad_sink_logits", float_array(&dz)));
    }
    Ok(out)
}

/// `attention_stream`: token by token through a fixed-capacity cache whose element type is
/// `kv_dtype`'s.
fn stream(req: &Request<'_>) -> Result<Outputs, Failure> {
    let c = Case::parse(req, Which::Stream)?;
    let t = c.dims.t;
    let window = c.window.map(|w| Window::new(w, c.sinks));
    let needed = match window {
        Some(w) => t.min(w.tokens()),
        None => t,
    };
    if needed > c.capacity {
        return Err(Failure::new(
            Kind::CacheFull,
            format!(
                "the stream needs {needed} cached tokens, more than `capacity` = {}",
                c.capacity
            ),
        ));
    }
    if t == 0 {
        return Ok(vec![("o", float_array::<f32>(&[]))]);
    }
    let o = match c.kv_dtype {
        KvDtype::F32 => stream_float::<f32>(&c, needed, window)?,
        KvDtype::F16 => stream_float::<f16>(&c, needed, window)?,
        KvDtype::Bf16 => stream_float::<bf16>(&c, needed, window)?,
        KvDtype::Int8 => {
            let (kv_heads, d, dv) = (c.dims.kv_heads, c.dims.d, c.dims.dv);
            let rows = product(needed, kv_heads)?;
            let mut k_store = filled(product(rows, d)?, 0i8, "cache")?;
            let mut v_store = filled(product(rows, dv)?, 0i8, "cache")?;
            let mut k_scales = zeros(rows, "cache")?;
            let mut v_scales = zeros(rows, "cache")?;
            let mut cache = KvCacheSlice::new_int8(
                &mut k_store,
                &mut v_store,
                &mut k_scales,
                &mut v_scales,
                kv_heads,
                d,
                dv,
                window,
            )?;
            decode_all(&c, &mut cache)?
        }
    };
    Ok(vec![("o", float_array(&o))])
}

/// The stream over a cache of `needed` tokens stored as the float format `E` (f32, f16, bf16:
/// no scale).
fn stream_float<E>(c: &Case, needed: usize, window: Option<Window>) -> Result<Vec<f32>, Failure>
where
    E: Element<Float = f32, Unit = E> + Operand<f32, Scale = ()>,
{
    let (kv_heads, d, dv) = (c.dims.kv_heads, c.dims.d, c.dims.dv);
    let rows = product(needed, kv_heads)?;
    let mut k_store = filled(product(rows, d)?, E::default(), "cache")?;
    let mut v_store = filled(product(rows, dv)?, E::default(), "cache")?;
    let mut cache = KvCacheSlice::new(&mut k_store, &mut v_store, kv_heads, d, dv, window)?;
    decode_all(c, &mut cache)
}

/// Pushes token after token into `cache` and attends with its queries: `o` (H·T·Dv).
fn decode_all<E: Element<Float = f32>>(
    c: &Case,
    cache: &mut KvCacheSlice<'_, E>,
) -> Result<Vec<f32>, Failure> {
    let Dims {
        heads,
        kv_heads,
        t,
        d,
        dv,
        ..
    } = c.dims;
    let opts = c.decode_options();
    let mut o = zeros(product(product(heads, t)?, dv)?, "o")?;
    let (mut q_tok, mut k_tok, mut v_tok) = (
        zeros(product(heads, d)?, "q")?,
        zeros(product(kv_heads, d)?, "k")?,
        zeros(product(kv_heads, dv)?, "v")?,
    );
    let mut o_tok = zeros(product(heads, dv)?, "o")?;
    // Head-major tensors: token `i` of head `h` is row `h·t + i`.
    let gather = |src: &[f32], dst: &mut [f32], w: usize, i: usize| {
        for (h, row) in dst.chunks_exact_mut(w).enumerate() {
            if let Some(s) = src.get((h * t + i) * w..(h * t + i + 1) * w) {
                row.copy_from_slice(s);
            }
        }
    };
    for i in 0..t {
        gather(&c.q, &mut q_tok, d, i);
        gather(&c.k, &mut k_tok, d, i);
        gather(&c.v, &mut v_tok, dv, i);
        cache
            .decode(Poly, &q_tok, &k_tok, &v_tok, &opts, Output::new(&mut o_tok))
            .map_err(|e| match e {
                AttnError::NotStorable { what } => Failure::invalid_param(format!(
                    "token {i}: its `{what}` rows hold NaN, ±inf or a value that rounds to ±inf \
                     in kv_dtype {}: the cache cannot store them",
                    Value::String(E::NAME.to_string())
                )),
                e => e.into(),
            })?;
        for (h, row) in o_tok.chunks_exact(dv).enumerate() {
            if let Some(dst) = o.get_mut((h * t + i) * dv..(h * t + i + 1) * dv) {
                dst.copy_from_slice(row);
            }
        }
    }
    Ok(o)
}
