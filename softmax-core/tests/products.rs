//! The matrix products against their definitions, bit for bit, at the `simd` level this
//! machine runs: `matmul_nt(a, b)[i][j] == dot(a_i, b_j)` (`dot` is always the portable lane
//! loop) and `matmul_nn` / `matmul_tn` equal to a plain scalar loop adding the products in the
//! order of the shared dimension.
//!
//! Run it in release too (`cargo test --release -p softmax-core --test products`, as CI does):
//! only builds without debug assertions compile the wider copies, among them the hand-scheduled
//! AVX2 products (`softmax-core/src/linalg/avx2.rs`), so that is where this compares them with
//! the portable code. The checked functions run `linalg::within`'s products, the forms attention-core
//! and loss-core call.

use softmax_core::linalg;

/// SplitMix64 values in [-4, 4), with zeros of both signs sprinkled in.
fn values(seed: &mut u64, n: usize) -> Vec<f32> {
    (0..n)
        .map(|i| {
            *seed = seed.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = *seed;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^= z >> 31;
            match i % 97 {
                13 => -0.0,
                29 => 0.0,
                _ => (z >> 40) as f32 / (1u64 << 24) as f32 * 8.0 - 4.0,
            }
        })
        .collect()
}

fn same(a: &[f32], b: &[f32]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits())
}

/// Which code ran: on x86_64 release builds with AVX2 the hand-scheduled copies must be the
/// ones under test (otherwise this would compare the portable loops with themselves).
fn level_under_test() {
    use softmax_core::simd::{self, Level};
    println!(
        "simd level: {} (detected {})",
        simd::level().name(),
        simd::detected().name()
    );
    if cfg!(all(target_arch = "x86_64", not(debug_assertions))) {
        if simd::detected() >= Level::Avx2 {
            assert!(
                simd::level() >= Level::Avx2,
                "the AVX2 products were not used"
            );
        } else {
            println!("this CPU has no AVX2: only the portable products were compared");
        }
    }
}

#[test]
fn matrix_products_equal_their_definitions_bit_for_bit() {
    level_under_test();
    let mut seed = 7u64;
    let mut cases = 0;
    for m in [0usize, 1, 2, 3, 5, 8] {
        for n in [1usize, 2, 3, 4, 5, 7, 11, 15, 64, 65, 71, 130] {
            for k in [1usize, 5, 8, 15, 16, 17, 24, 33, 56, 64, 100, 120, 129, 200] {
                // C = A·Bᵀ: a is m × k, b is n × k.
                let (a, b) = (values(&mut seed, m * k), values(&mut seed, n * k));
                let mut c = vec![f32::NAN; m * n];
                linalg::matmul_nt(&a, &b, k, &mut c).unwrap();
                let want: Vec<f32> = a
                    .chunks(k)
                    .flat_map(|ai| b.chunks(k).map(move |bj| linalg::dot(ai, bj).unwrap()))
                    .collect();
                assert!(same(&c, &want), "matmul_nt m={m} n={n} k={k}");
                // C (+)= A·B: a is m × n, b is n × k.
                let a = values(&mut seed, m * n);
                for acc in [false, true] {
                    let old = values(&mut seed, m * k);
                    let mut c = old.clone();
                    linalg::matmul_nn(&a, &b, n, k, &mut c, acc).unwrap();
                    let mut want = if acc { old } else { vec![0.0; m * k] };
                    for i in 0..m {
                        for l in 0..k {
                            for j in 0..n {
                                want[i * k + l] += a[i * n + j] * b[j * k + l];
                            }
                        }
                    }
                    assert!(same(&c, &want), "matmul_nn m={m} n={n} k={k} acc={acc}");
                }
                cases += 1;
                if m == 0 {
                    // Aᵀ·B has no rows of Aᵀ to speak of (m = 0 is its `EmptyRow`).
                    continue;
                }
                // C += Aᵀ·B: a is n × m.
                let at = values(&mut seed, n * m);
                let old = values(&mut seed, m * k);
                let mut c = old.clone();
                linalg::matmul_tn(&at, &b, m, k, &mut c, true).unwrap();
                let mut want = old;
                for i in 0..m {
                    for l in 0..k {
                        for j in 0..n {
                            want[i * k + l] += at[j * m + i] * b[j * k + l];
                        }
                    }
                }
                assert!(same(&c, &want), "matmul_tn m={m} n={n} k={k}");
            }
        }
    }
    assert_eq!(cases, 6 * 12 * 14);
}

#[test]
fn non_finite_inputs_propagate_as_in_the_definition() {
    level_under_test();
    let mut seed = 11u64;
    let (mut a, mut b) = (values(&mut seed, 3 * 40), values(&mut seed, 5 * 40));
    a[7] = f32::INFINITY;
    b[45] = f32::NAN;
    b[90] = f32::NEG_INFINITY;
    let mut c = vec![0.0f32; 15];
    linalg::matmul_nt(&a, &b, 40, &mut c).unwrap();
    let want: Vec<f32> = a
        .chunks(40)
        .flat_map(|ai| b.chunks(40).map(move |bj| linalg::dot(ai, bj).unwrap()))
        .collect();
    assert!(same(&c, &want));
    assert!(c[1].is_nan() && c[0] == f32::INFINITY);
    // A·B with the infinity in row 0 of A and the NaN and −inf in rows 5 and 10 of B.
    let (a, b) = (&a[..3 * 15], &b[..15 * 9]);
    let mut c = vec![0.0f32; 3 * 9];
    linalg::matmul_nn(a, b, 15, 9, &mut c, false).unwrap();
    let mut want = vec![0.0f32; 3 * 9];
    for i in 0..3 {
        for l in 0..9 {
            for j in 0..15 {
                want[i * 9 + l] += a[i * 15 + j] * b[j * 9 + l];
            }
        }
    }
    let equal = |x: &f32, y: &f32| x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan());
    assert!(c.iter().zip(&want).all(|(x, y)| equal(x, y)));
    assert!(c.iter().any(|x| x.is_nan()) && c.iter().any(|x| x.is_infinite()));
}
