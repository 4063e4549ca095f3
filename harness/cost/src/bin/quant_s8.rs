//! `softmax_core::quant::softmax_s8`: int8 → int8 (zero point −128, scale 1/256), TFLM's kernel,
//! one row of 256 int8 logits uniform over the type's range (input scale 1/16, β = 1), each exp
//! evaluated once into a scratch of 256 i32. The parameters come from `S8Params::from_raw` with the
//! values TFLM's Prepare computes (known at compile time, so Prepare's code is not in the image:
//! the kernel alone).
#![no_std]
#![no_main]

use core::hint::black_box;

use softmax_core::quant::{softmax_s8, S8Params};
use softmax_cost::gen::S8_RAW;
use softmax_cost::rt::fail;
use softmax_cost::N;

softmax_cost::quant_probe!(
    S8Params = match S8Params::from_raw(S8_RAW.0, S8_RAW.1, S8_RAW.2) {
        Ok(p) => p,
        Err(_) => fail("S8Params::from_raw"),
    };
    i8 -> i8;
    |p, x, scratch, y| softmax_s8(p, x, black_box(N), black_box(scratch), y)
);
