//! `attention_core::attention`, f32, `Poly`, over exactly one tile: on 32-bit targets a tile is one
//! query (`TQ = 1`) against one block of 128 keys (`BK`), so one head, t = 1, s = 128, d = dv = 64,
//! no mask, the default scale 1/8: 128 scores. N(0, 1)-like q, K and V.
#![no_std]
#![no_main]

use core::hint::black_box;
use core::ptr::addr_of_mut;

use attention_core::{attention, Dims, Options, Output, Qkv};
use softmax_core::backend::Poly;
use softmax_cost::gen::{Rng, SEED_KV};
use softmax_cost::{bytes, probe, Inputs, Probe, D, TILE_KEYS};

static mut K: [f32; TILE_KEYS * D] = [0.0; TILE_KEYS * D];
static mut V: [f32; TILE_KEYS * D] = [0.0; TILE_KEYS * D];

struct P {
    dims: Dims,
    q: [f32; D],
    k: &'static [f32],
    v: &'static [f32],
    o: [f32; D],
    ok: bool,
}

impl Probe for P {
    fn setup(inputs: &'static Inputs) -> Self {
        // SAFETY: the only references ever made to K and V (setup runs once).
        let (k, v) = unsafe { (&mut *addr_of_mut!(K), &mut *addr_of_mut!(V)) };
        let q = inputs.q;
        let mut kv = Rng::new(SEED_KV);
        for (k, v) in k.chunks_exact_mut(D).zip(v.chunks_exact_mut(D)) {
            kv.fill_from(&inputs.f32, k);
            kv.fill_from(&inputs.f32, v);
        }
        P {
            dims: Dims::new(1, 1, 1, TILE_KEYS, D, D),
            q,
            k,
            v,
            o: [0.0; D],
            ok: false,
        }
    }
    fn run(&mut self) {
        self.ok = attention(
            Poly,
            &self.dims,
            Qkv::new(black_box(&self.q[..]), black_box(self.k), black_box(self.v)),
            &Options::new(),
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
