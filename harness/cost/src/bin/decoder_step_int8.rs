//! One step of attention-core's streaming causal decoder over an int8 KV cache (one f32 scale
//! per stored row; computed in f32), `Poly`: `Cache::decode` (push the newest token's key and
//! value, quantizing each row, then attend with its query) on a `KvCacheSlice::new_int8` of
//! capacity 256 that already holds 255 tokens, so the step attends over 256 keys; one head,
//! d = dv = 64, the default scale 1/8. The same q, keys and values as the f32 decoder-step
//! probe (`decoder_step.rs`), so the rows compare instruction for instruction per key.
#![no_std]
#![no_main]

use core::ptr::addr_of_mut;

use attention_core::KvCacheSlice;
use softmax_cost::{D, N};

static mut K_STORE: [i8; N * D] = [0; N * D];
static mut V_STORE: [i8; N * D] = [0; N * D];
static mut K_SCALES: [f32; N] = [0.0; N];
static mut V_SCALES: [f32; N] = [0.0; N];

softmax_cost::decoder_probe!(i8, "KvCacheSlice::new_int8", {
    // SAFETY: the only references ever made to the stores (setup runs once).
    let (ks, vs, kss, vss) = unsafe {
        (
            &mut *addr_of_mut!(K_STORE),
            &mut *addr_of_mut!(V_STORE),
            &mut *addr_of_mut!(K_SCALES),
            &mut *addr_of_mut!(V_SCALES),
        )
    };
    KvCacheSlice::new_int8(ks, vs, kss, vss, 1, D, D, None)
});
