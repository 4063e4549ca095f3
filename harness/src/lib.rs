//! Shared pieces of the harness: the naive f64 reference used by the tests and the demo, and
//! the benchmark contenders.

pub mod contenders;
pub mod figures;
pub mod reference;
pub mod reproduce;

/// The README's Rust examples, compiled and run as doctests so they cannot drift from the API.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
pub struct ReadmeDoctests;

/// The core crates' own READMEs (their crates.io pages), compiled and run as doctests too.
#[cfg(doctest)]
#[doc = include_str!("../../softmax-core/README.md")]
pub struct SoftmaxCoreReadme;

/// See [`SoftmaxCoreReadme`].
#[cfg(doctest)]
#[doc = include_str!("../../attention-core/README.md")]
pub struct AttentionCoreReadme;

/// See [`SoftmaxCoreReadme`].
#[cfg(doctest)]
#[doc = include_str!("../../loss-core/README.md")]
pub struct LossCoreReadme;
