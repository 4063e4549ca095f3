//! Criterion benches of attention-core (the speed rows), next to the peers in the same run.

use criterion::{criterion_group, criterion_main, Criterion};

fn benches(_c: &mut Criterion) {}

criterion_group!(all, benches);
criterion_main!(all);
