//! `softmax_core::linalg::matmul_nt`, f32: the 128 dot products of one query row (d = 64) with
//! 128 key rows, the shape of one attention score tile (the attention-tile probe's q and K), as
//! the crates compute every matrix product today: separate multiply and add (no fused
//! multiply-add is ever formed), 16 lanes combined pairwise. 128 × 64 = 8192 multiply-adds.
#![no_std]
#![no_main]

softmax_cost::dot_probe!(|q, k, d, s| softmax_core::linalg::matmul_nt(q, k, d, s).is_ok());
