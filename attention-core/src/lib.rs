//! One-pass (online-softmax) scaled dot-product attention and a streaming causal decoder with a
//! fixed-capacity KV cache, for `no_std` targets.
//!
//! This crate is a placeholder in the workspace layout: its kernels land with their own issue.
//! They will keep one [`softmax_core::LogSumExp`] state per query and merge partial states across
//! key blocks, calling softmax-core's skeleton rather than a max/exp/sum loop of their own.
#![no_std]
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub use softmax_core;
