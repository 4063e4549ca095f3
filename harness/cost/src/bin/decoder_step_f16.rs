//! One step of attention-core's streaming causal decoder over an f16 KV cache (IEEE binary16,
//! computed in f32), `Poly`: `Cache::decode` (push the newest token's key and value, rounding
//! each to f16, then attend with its query) on a `KvCacheSlice` of f16 with capacity 256 that
//! already holds 255 tokens, so the step attends over 256 keys; one head,
//! d = dv = 64, the default scale 1/8. The same q, keys and values as the f32 decoder-step
//! probe (`decoder_step.rs`), so the rows compare instruction for instruction per key.
#![no_std]
#![no_main]

use core::ptr::addr_of_mut;

use attention_core::KvCacheSlice;
use softmax_core::stored::f16;
use softmax_cost::{D, N};

static mut K_STORE: [f16; N * D] = [f16::ZERO; N * D];
static mut V_STORE: [f16; N * D] = [f16::ZERO; N * D];

softmax_cost::decoder_probe!(f16, "KvCacheSlice::new", {
    // SAFETY: the only references ever made to the stores (setup runs once).
    let (ks, vs) = unsafe { (&mut *addr_of_mut!(K_STORE), &mut *addr_of_mut!(V_STORE)) };
    KvCacheSlice::new(ks, vs, 1, D, D, None)
});
