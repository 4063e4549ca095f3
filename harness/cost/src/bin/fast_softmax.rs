//! `softmax_core::fast::softmax` (f32; its own exp, software fused multiply-add on these targets):
//! one row of 256 N(0, 1)-like logits.
#![no_std]
#![no_main]

use core::hint::black_box;

use softmax_core::Rows;
use softmax_cost::N;

softmax_cost::row_probe!(|x, y| softmax_core::fast::softmax(x, y, &Rows::new(black_box(N))));
