//! `softmax_core::quant::softmax_s8`: int8 → int8 (zero point −128, scale 1/256), TFLM's kernel,
//! one row of 256 int8 logits uniform over the type's range (input scale 1/16, β = 1), each exp
//! evaluated once into a scratch of 256 i32. Prepare included: the parameters come from
//! `S8Params::prepare` on opaque scale and β, so the image minus `quant_s8`'s is Prepare's flash
//! (the table's footnote); the output must equal `quant_s8`'s.
#![no_std]
#![no_main]

use core::hint::black_box;

use softmax_core::quant::{softmax_s8, S8Params};
use softmax_cost::gen::S8_SCALE_RECIPROCAL;
use softmax_cost::rt::fail;
use softmax_cost::N;

softmax_cost::quant_probe!(
    S8Params = match S8Params::prepare(black_box(1.0 / S8_SCALE_RECIPROCAL as f32), black_box(1.0)) {
        Ok(p) => p,
        Err(_) => fail("S8Params::prepare"),
    };
    i8 -> i8;
    |p, x, scratch, y| softmax_s8(p, x, black_box(N), black_box(scratch), y)
);
