//! The same 128 dot products as `dot_muladd` (one query row of d = 64 against 128 key rows, the
//! attention tile's q and K; 8192 multiply-adds), each a sequential chain
//! `acc = softmax_core::fast::fma(q_t, k_t, acc)`, t = 0..64, from acc = 0: softmax-core's
//! correctly rounded software fused multiply-add, the same bits on every target. What an order
//! of operations built on FMA costs where it must have the same bits on a core without hardware
//! FMA (the Cortex-M0; the Cortex-M4F too when it runs the software FMA, as `fast::softmax` does).
#![no_std]
#![no_main]

use softmax_cost::{dot_rows, fma_chain_soft};

softmax_cost::dot_probe!(|q, k, d, s| dot_rows(q, k, d, s, fma_chain_soft));
