//! One-pass scaled dot-product attention, its backward pass and a fixed-capacity streaming
//! decoder for `no_std`: no allocation, no panics, the same bits on every target, built on
//! softmax-core's online softmax ([`softmax_core::OnlineSoftmax`]) and matrix products
//! ([`softmax_core::linalg`]).
//!
//! # Features
//!
//! * [`attention`] (and PyTorch's name [`scaled_dot_product_attention`]): `softmax(scores)·V`
//!   per head, head-major tensors (`q` is `heads × t × d`, `k` is `kv_heads × s × d`, `v` is
//!   `kv_heads × s × dv`), multi-head, grouped-query and multi-query attention (query head `h`
//!   reads key/value head `h / (heads / kv_heads)`), with per-query log-sum-exp and attention
//!   entropy. Every mask and score modifier of [`Options`], alone or combined: causal with both
//!   alignments ([`Causal::BottomRight`]: query `t` sits at position `s − t_total + t`, as a KV
//!   cache and chunked prefill need; [`Causal::TopLeft`]: PyTorch's `is_causal`); a boolean
//!   keep-mask; an additive bias; ALiBi with the paper's slopes ([`alibi_slopes`], head counts
//!   that are not powers of two included); a sliding window with always-visible attention sinks
//!   (StreamingLLM); soft-capping `c·tanh(x/c)` (Gemma 2); learned per-head sink logits that
//!   take part in the normaliser but carry no value (gpt-oss). The exact semantics of each
//!   option are on [`Options`]'s methods.
//! * One pass per query with the online softmax, blocked over 128 keys on a fixed grid; key
//!   blocks that the causal rule or the window removes are skipped (not computed); nothing of
//!   size `t × s` exists anywhere: memory per query is its `dv` accumulator plus a block of
//!   scores on the stack.
//! * Split-K / flash-decoding: [`attention_partial`] over a key range, [`merge_partials`] (or
//!   [`QueryState::merge`]) and [`attention_finish`] give what one pass gives.
//! * [`attention_backward`]: dQ, dK, dV and the sink logits' gradient, FlashAttention-2 style
//!   (scores recomputed from the saved log-sum-exp, `D = rowsum(dO ∘ O)`), every mask and
//!   modifier.
//! * A streaming causal decoder: [`KvCache`] (capacity and dimensions are const generics; the
//!   storage is inside the value) and [`KvCacheSlice`] (over caller-provided buffers); `push`
//!   is fallible ([`Error::CacheFull`]); with a [`Window`] the cache keeps the first `sinks`
//!   tokens plus a ring buffer of the last `W`, with absolute positions, so it runs endless
//!   streams in bounded memory and answers bit for bit what [`attention`] with
//!   [`Causal::BottomRight`] and the same options answers. The cost per token is set by
//!   `sinks + W` only. The cache's element type ([`Element`]) is `f32`/`f64`, or a reduced
//!   format computed in f32: IEEE f16, bf16 (half the bytes) or int8 with one f32 scale per
//!   row (a quarter plus 4 bytes a row); its rows are read back in registers while the products
//!   run, and the decoder equals [`attention`] over the read-back keys and values, bit for bit.
//! * Generic over [`Float`] (f32 is the fast path; f64 for references and gradient checks) and
//!   softmax-core's backends ([`backend::Poly`], [`backend::Libm`], `backend::MicroMath`).
//!   Deterministic: fixed reduction order, no fused multiply-add, the same bits on x86_64 (any
//!   SIMD level), Cortex-M4F and Cortex-M0 (checked by the on-target suite under QEMU).
//!
//! # Accuracy
//!
//! Measured in f32 against a naive float64 reference that materialises the scores
//! (`harness/tests/attention_reference.rs`, `attention_backward.rs`), with per-element bounds
//! derived from the error analysis stated on each function (`u = 2⁻²⁴`):
//!
//! * forward, 288 random combinations of every mask and modifier (GQA, 1–130 keys): the worst
//!   error is 0.15 of the bound `8·u·Σ_j p_j|v_j|` plus the dot products' rounding propagated
//!   through the softmax (rows up to 1,000 keys: 0.46 of it); `lse` and entropy likewise;
//! * against onnxruntime's opset-23 `Attention` (`harness/tests/golden_attention.rs`, 15
//!   cases: causal, GQA/MQA, boolean and float masks, soft-cap, 130 keys): within a per-element
//!   bound derived from the dot products' rounding, `(2δ + (S + 8)·u)·max|v|`, of the float64
//!   result, and within twice that of onnxruntime's;
//! * backward: dQ, dK, dV, d sink logits within 0.09 of their bound (a few `u` times the size
//!   of the terms summed) against the analytic float64 reference, which itself agrees with
//!   central finite differences of the f64 forward pass to 1.3e-9 of the largest gradient;
//! * [`default_scale`] is correctly rounded in f32; the ALiBi slopes equal the reference code's
//!   float64 slopes rounded to `F`.
//!
//! # Panics
//!
//! None, on any input: lengths and shapes are checked once at the API boundary and reported as
//! [`Error`] values, shape products use checked arithmetic, and every loop is written so the
//! optimiser can prove it in bounds (`harness/no-panic` links a release build that calls every
//! public function only if no panic path survives). Non-finite values follow documented edge
//! semantics: a query with no allowed key gives `o = 0`, `lse = -inf` (or its sink logit) and
//! entropy 0, never NaN.
//!
//! # `no_std` usage
//!
//! `#![no_std]`, no allocation, `#![forbid(unsafe_code)]`. Add the crate with
//! `default-features = false` and one of the features `libm` (the accurate backend, default)
//! or `micromath` (the small approximate one); the `Poly` backend needs neither. All buffers are
//! the caller's; the kernels' own scratch is a few blocks of scores on the stack (on 32-bit
//! targets one row of 128 scores per block).
//!
//! # Examples
//!
//! Causal self-attention with grouped-query heads, then the same stream decoded token by token
//! through a fixed-capacity cache with a sliding window and a sink:
//!
//! ```
//! use attention_core::{attention, Causal, DecodeOptions, Dims, KvCache, Options, Output, Qkv,
//!     Window, backend::Poly};
//! const T: usize = 6;
//! // 2 query heads over 1 kv head, d = dv = 2.
//! let q: [f32; 2 * T * 2] = core::array::from_fn(|i| (i as f32 * 0.37).sin());
//! let k: [f32; T * 2] = core::array::from_fn(|i| (i as f32 * 0.71).cos());
//! let v: [f32; T * 2] = core::array::from_fn(|i| i as f32);
//! let opts = Options::new().with_causal(Causal::BottomRight).with_window(3).with_sinks(1);
//! let mut full = [0.0f32; 2 * T * 2];
//! attention(Poly, &Dims::new(2, 1, T, T, 2, 2), Qkv::new(&q, &k, &v), &opts,
//!     Output::new(&mut full))?;
//!
//! // The decoder keeps 1 sink + 3 window tokens: capacity 4. The window is the cache's.
//! let mut cache = KvCache::<f32, 1, 4, 2, 2>::new(Some(Window::new(3, 1)))?;
//! for t in 0..T {
//!     let qt = [q[t * 2], q[t * 2 + 1], q[(T + t) * 2], q[(T + t) * 2 + 1]];
//!     let mut o = [0.0f32; 4];
//!     cache.decode(Poly, &qt, &k[t * 2..t * 2 + 2], &v[t * 2..t * 2 + 2],
//!         &DecodeOptions::new(), Output::new(&mut o))?;
//!     assert_eq!(o[..2], full[t * 2..t * 2 + 2]); // bit for bit
//!     assert_eq!(o[2..], full[(T + t) * 2..(T + t) * 2 + 2]);
//! }
//! assert_eq!(cache.cached(), 4);
//! # Ok::<(), attention_core::Error>(())
//! ```
#![no_std]
#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod backward;
mod error;
mod forward;
mod math;
mod options;
mod plan;
mod state;
mod stream;
mod tile;

pub use backward::attention_backward;
pub use error::Error;
pub use forward::{
    attention, attention_finish, attention_partial, merge_partials, scaled_dot_product_attention,
};
pub use math::{alibi_slope, alibi_slopes, default_scale};
pub use options::{Causal, DecodeOptions, Dims, Grads, Options, Output, Qkv, Saved};
pub use softmax_core;
pub use softmax_core::backend;
pub use softmax_core::Float;
pub use state::QueryState;
pub use stream::{
    Borrowed, Cache, Element, FloatOf, Inline, KvCache, KvCacheSlice, ScaleOf, Storage, Window,
};
