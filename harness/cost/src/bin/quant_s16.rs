//! `softmax_core::quant::softmax_s16`: int16 → int16, TFLM's `SoftmaxInt16` (exp and 1/(1+x) lookup
//! tables), one row of 256 int16 logits uniform over the type's range (input scale 10/65536, β = 1:
//! the row spans the exp table's [−10, 0]). The parameters come from `S16Params::from_raw` with the
//! values TFLM's Prepare computes (the kernel alone); its flash includes the two 1,026-byte tables.
#![no_std]
#![no_main]

use core::hint::black_box;

use softmax_core::quant::{softmax_s16, S16Params};
use softmax_cost::gen::S16_RAW;
use softmax_cost::rt::fail;
use softmax_cost::N;

softmax_cost::quant_probe!(
    S16Params<'static> = match S16Params::from_raw(S16_RAW.0, S16_RAW.1) {
        Ok(p) => p,
        Err(_) => fail("S16Params::from_raw"),
    };
    i16 -> i16;
    |p, x, _scratch, y| softmax_s16(p, x, black_box(N), y)
);
