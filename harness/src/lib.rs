//! Shared pieces of the harness: the naive f64 reference used by the tests and the demo, and
//! the benchmark contenders.

pub mod contenders;
pub mod reference;
