//! The twice-computing int8 reference: TFLM's `reference_ops::Softmax<int8_t, int8_t>` loop (and
//! CMSIS-NN's `arm_nn_softmax_common_s8`) written with `softmax_core::quant::fixed`'s public
//! primitives, which evaluates every exp twice — once for the sum, once for the output — exactly as
//! `softmax_suite::softmax_s8_twice` (the same source file) states it. Same
//! inputs and parameters as `quant_s8`; the host requires the same output bytes.
#![no_std]
#![no_main]

use core::hint::black_box;

use softmax_core::quant::S8Params;
use softmax_cost::gen::S8_RAW;
use softmax_cost::rt::fail;
use softmax_cost::{bytes, probe, Inputs, Probe, N};

// The one statement of TFLM's twice-computing loop (also `softmax_suite::softmax_s8_twice`,
// which the host tests check against `softmax_s8`), included as source: it depends on
// softmax-core alone, so the image carries nothing of the suite.
#[path = "../../../suite/src/twice.rs"]
#[allow(dead_code)]
mod twice;

struct P {
    params: S8Params,
    x: &'static [i8; N],
    wide: [i32; N],
    y: [i8; N],
    ok: bool,
}

impl Probe for P {
    fn setup(inputs: &'static Inputs) -> Self {
        let params = match S8Params::from_raw(S8_RAW.0, S8_RAW.1, S8_RAW.2) {
            Ok(p) => p,
            Err(_) => fail("S8Params::from_raw"),
        };
        P {
            params,
            x: &inputs.i8,
            wide: [0; N],
            y: [0; N],
            ok: false,
        }
    }
    fn run(&mut self) {
        self.ok = twice::softmax_s8_twice(
            &self.params,
            black_box(&self.x[..]),
            black_box(N),
            8,
            black_box(&mut self.wide[..]),
        )
        .is_ok();
    }
    fn ok(&self) -> bool {
        self.ok
    }
    fn result(&self) -> &[u8] {
        bytes(&self.y)
    }
    fn after(&mut self) {
        // The reference writes i32 outputs already clamped to int8's range: narrow them for the
        // host's comparison with softmax_s8's bytes (outside the measured call).
        for (y, &w) in self.y.iter_mut().zip(&self.wide) {
            *y = w as i8;
        }
    }
}

probe!(P);
