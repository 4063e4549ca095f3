//! `softmax_core::log_softmax` (the slice API), f32, backend `MicroMath`: one row of 256 N(0,
//! 1)-like logits.
#![no_std]
#![no_main]

use softmax_core::backend::MicroMath;

softmax_cost::row_probe!(|x, y| softmax_core::log_softmax(MicroMath, x, y));
