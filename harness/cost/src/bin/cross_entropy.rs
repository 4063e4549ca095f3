//! `loss_core::cross_entropy` forward and gradient, f32, `Poly`: one row of 256 classes (N(0,
//! 1)-like logits, target class 17), PyTorch's default options (mean reduction).
#![no_std]
#![no_main]

use core::hint::black_box;

use loss_core::{cross_entropy, CrossEntropyOptions, CrossEntropyOutputs};
use softmax_core::backend::Poly;
use softmax_cost::gen::CE_TARGET;
use softmax_cost::{bytes, probe, Inputs, Probe, N};

struct P {
    x: &'static [f32; N],
    target: [i64; 1],
    /// The gradient (`N` values), then the loss.
    out: [f32; N + 1],
    ok: bool,
}

impl Probe for P {
    fn setup(inputs: &'static Inputs) -> Self {
        P {
            x: &inputs.f32,
            target: [CE_TARGET as i64],
            out: [0.0; N + 1],
            ok: false,
        }
    }
    fn run(&mut self) {
        let (grad, loss) = self.out.split_at_mut(N);
        match cross_entropy(
            Poly,
            black_box(&self.x[..]),
            black_box(N),
            black_box(&self.target[..]),
            &CrossEntropyOptions::new(),
            CrossEntropyOutputs::new().with_grad(black_box(grad)),
        ) {
            Ok(l) => {
                loss[0] = l;
                self.ok = true;
            }
            Err(_) => self.ok = false,
        }
    }
    fn ok(&self) -> bool {
        self.ok
    }
    fn result(&self) -> &[u8] {
        bytes(&self.out)
    }
}

probe!(P);
