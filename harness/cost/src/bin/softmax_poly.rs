//! `softmax_core::softmax` (the slice API), f32, backend `Poly`: one row of 256 N(0, 1)-like
//! logits.
#![no_std]
#![no_main]

use softmax_core::backend::Poly;

softmax_cost::row_probe!(|x, y| softmax_core::softmax(Poly, x, y));
