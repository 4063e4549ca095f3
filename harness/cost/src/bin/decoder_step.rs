//! One step of attention-core's streaming causal decoder, f32, `Poly`: `Cache::decode` (push the
//! newest token's key and value, then attend with its query) on a `KvCacheSlice` of capacity 256
//! that already holds 255 tokens, so the step attends over 256 keys; one head, d = dv = 64, the
//! default scale 1/8. N(0, 1)-like q, keys and values (the keys and values of the first 128 tokens
//! are the attention-tile probe's K and V).
#![no_std]
#![no_main]

use core::ptr::addr_of_mut;

use attention_core::KvCacheSlice;
use softmax_cost::{D, N};

static mut K_STORE: [f32; N * D] = [0.0; N * D];
static mut V_STORE: [f32; N * D] = [0.0; N * D];

softmax_cost::decoder_probe!(f32, "KvCacheSlice::new", {
    // SAFETY: the only references ever made to the stores (setup runs once).
    let (ks, vs) = unsafe { (&mut *addr_of_mut!(K_STORE), &mut *addr_of_mut!(V_STORE)) };
    KvCacheSlice::new(ks, vs, 1, D, D, None)
});
