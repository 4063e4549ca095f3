//! One step of attention-core's streaming causal decoder over an f16 KV cache (IEEE binary16,
//! computed in f32), `Poly`: `Cache::decode` (push the newest token's key and value, rounding
//! each to f16, then attend with its query) on a `KvCacheSlice` of f16 with capacity 256 that
//! already holds 255 tokens, so the step attends over 256 keys; one head,
//! d = dv = 64, the default scale 1/8. The same q, keys and values as the f32 decoder-step
//! probe (`decoder_step.rs`), so the rows compare instruction for instruction per key.
#![no_std]
#![no_main]

use core::hint::black_box;
use core::ptr::addr_of_mut;

use attention_core::{DecodeOptions, KvCacheSlice, Output};
use softmax_core::backend::Poly;
use softmax_core::stored::f16;
use softmax_cost::gen::{Rng, SEED_KV};
use softmax_cost::rt::fail;
use softmax_cost::{bytes, probe, Inputs, Probe, D, N};

static mut K_STORE: [f16; N * D] = [f16::ZERO; N * D];
static mut V_STORE: [f16; N * D] = [f16::ZERO; N * D];

struct P {
    cache: KvCacheSlice<'static, f16>,
    q: [f32; D],
    k: [f32; D],
    v: [f32; D],
    o: [f32; D],
    ok: bool,
}

impl Probe for P {
    fn setup(inputs: &'static Inputs) -> Self {
        // SAFETY: the only references ever made to the stores (setup runs once).
        let (ks, vs) = unsafe { (&mut *addr_of_mut!(K_STORE), &mut *addr_of_mut!(V_STORE)) };
        let mut cache = match KvCacheSlice::new(ks, vs, 1, D, D, None) {
            Ok(c) => c,
            Err(_) => fail("KvCacheSlice::new"),
        };
        let mut kv = Rng::new(SEED_KV);
        let (mut k, mut v) = ([0.0; D], [0.0; D]);
        for _ in 0..N - 1 {
            kv.fill_from(&inputs.f32, &mut k);
            kv.fill_from(&inputs.f32, &mut v);
            if cache.push(&k, &v).is_err() {
                fail("push");
            }
        }
        kv.fill_from(&inputs.f32, &mut k);
        kv.fill_from(&inputs.f32, &mut v);
        let q = inputs.q;
        P {
            cache,
            q,
            k,
            v,
            o: [0.0; D],
            ok: false,
        }
    }
    fn run(&mut self) {
        self.ok = self
            .cache
            .decode(
                Poly,
                black_box(&self.q[..]),
                black_box(&self.k[..]),
                black_box(&self.v[..]),
                &DecodeOptions::new(),
                Output::new(black_box(&mut self.o[..])),
            )
            .is_ok();
    }
    fn ok(&self) -> bool {
        self.ok
    }
    fn result(&self) -> &[u8] {
        bytes(&self.o)
    }
}

probe!(P);
