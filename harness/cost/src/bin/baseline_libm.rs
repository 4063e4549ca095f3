//! The baseline: a plain scalar three-pass softmax with `libm::expf` (maximum; exp and sum;
//! multiply by 1/sum), as one would write it without this crate. One row of 256 N(0, 1)-like
//! logits.
#![no_std]
#![no_main]

use core::hint::black_box;

use softmax_cost::{bytes, probe, Inputs, Probe, N};

struct P {
    x: &'static [f32; N],
    y: [f32; N],
}

fn softmax(x: &[f32], y: &mut [f32]) {
    let mut max = f32::NEG_INFINITY;
    for &v in x {
        if v > max {
            max = v;
        }
    }
    let mut sum = 0.0f32;
    for (y, &v) in y.iter_mut().zip(x) {
        let e = libm::expf(v - max);
        *y = e;
        sum += e;
    }
    let inv = 1.0 / sum;
    for y in y.iter_mut() {
        *y *= inv;
    }
}

impl Probe for P {
    fn setup(inputs: &'static Inputs) -> Self {
        P {
            x: &inputs.f32,
            y: [0.0; N],
        }
    }
    fn run(&mut self) {
        softmax(black_box(&self.x[..]), black_box(&mut self.y[..]));
    }
    fn ok(&self) -> bool {
        true
    }
    fn result(&self) -> &[u8] {
        bytes(&self.y)
    }
}

probe!(P);
