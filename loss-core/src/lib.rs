//! Cross-entropy family (PyTorch semantics) and InfoNCE, with gradients, for `no_std` targets.
//!
//! This crate is a placeholder in the workspace layout: its losses land with their own issue.
//! Cross-entropy will be computed from [`softmax_core::LogSumExp`] (chunked over huge
//! vocabularies) and InfoNCE as cross-entropy on similarity/τ, calling softmax-core's skeleton
//! rather than a max/exp/sum loop of their own.
#![no_std]
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub use softmax_core;
