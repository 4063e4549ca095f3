//! `softmax_core::softmax` (the slice API), f32, backend `Poly`: one row of 256 N(0, 1)-like
//! logits.
#![no_std]
#![no_main]

use core::hint::black_box;

use softmax_core::backend::Poly;
use softmax_cost::{bytes, probe, Inputs, Probe, N};

struct P {
    x: &'static [f32; N],
    y: [f32; N],
    ok: bool,
}

impl Probe for P {
    fn setup(inputs: &'static Inputs) -> Self {
        P {
            x: &inputs.f32,
            y: [0.0; N],
            ok: false,
        }
    }
    fn run(&mut self) {
        self.ok =
            softmax_core::softmax(Poly, black_box(&self.x[..]), black_box(&mut self.y[..])).is_ok();
    }
    fn ok(&self) -> bool {
        self.ok
    }
    fn result(&self) -> &[u8] {
        bytes(&self.y)
    }
}

probe!(P);
