//! One step of attention-core's streaming causal decoder over an int8 KV cache (one f32 scale
//! per stored row; computed in f32), `Poly`: `Cache::decode` (push the newest token's key and
//! value, quantizing each row, then attend with its query) on a `KvCacheSlice::new_int8` of
//! capacity 256 that already holds 255 tokens, so the step attends over 256 keys; one head,
//! d = dv = 64, the default scale 1/8. The same q, keys and values as the f32 decoder-step
//! probe (`decoder_step.rs`), so the rows compare instruction for instruction per key.
#![no_std]
#![no_main]

use core::hint::black_box;
use core::ptr::addr_of_mut;

use attention_core::{DecodeOptions, KvCacheSlice, Output};
use softmax_core::backend::Poly;
use softmax_cost::gen::{Rng, SEED_KV};
use softmax_cost::rt::fail;
use softmax_cost::{bytes, probe, Inputs, Probe, D, N};

static mut K_STORE: [i8; N * D] = [0; N * D];
static mut V_STORE: [i8; N * D] = [0; N * D];
static mut K_SCALES: [f32; N] = [0.0; N];
static mut V_SCALES: [f32; N] = [0.0; N];

struct P {
    cache: KvCacheSlice<'static, i8>,
    q: [f32; D],
    k: [f32; D],
    v: [f32; D],
    o: [f32; D],
    ok: bool,
}

impl Probe for P {
    fn setup(inputs: &'static Inputs) -> Self {
        // SAFETY: the only references ever made to the stores (setup runs once).
        let (ks, vs, kss, vss) = unsafe {
            (
                &mut *addr_of_mut!(K_STORE),
                &mut *addr_of_mut!(V_STORE),
                &mut *addr_of_mut!(K_SCALES),
                &mut *addr_of_mut!(V_SCALES),
            )
        };
        let mut cache = match KvCacheSlice::new_int8(ks, vs, kss, vss, 1, D, D, None) {
            Ok(c) => c,
            Err(_) => fail("KvCacheSlice::new_int8"),
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
