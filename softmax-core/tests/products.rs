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
    // `detected()` is the Baseline level wherever the dispatch is not compiled (debug builds,
    // other targets), so it says both whether the build has the AVX2 copies and the CPU runs
    // them.
    if simd::detected() >= Level::Avx2 {
        assert!(
            simd::level() >= Level::Avx2,
            "the AVX2 products were not used"
        );
        // Where the CPU has AVX-512F, its copies (the eight-row score kernel among them) must
        // be the ones under test.
        assert_eq!(
            simd::level(),
            simd::detected(),
            "the widest products were not used"
        );
    } else {
        println!(
            "no AVX2 level (a build without the dispatch, or a CPU without AVX2): only the \
             portable products were compared"
        );
    }
}

#[test]
fn matrix_products_equal_their_definitions_bit_for_bit() {
    level_under_test();
    let mut seed = 7u64;
    let mut cases = 0;
    for m in [0usize, 1, 2, 3, 4, 5, 6, 7, 8, 12, 16, 19, 35] {
        for n in [1usize, 2, 3, 4, 5, 7, 11, 15, 64, 65, 71, 130] {
            // 16 to 128 in steps of 16: the AVX-512 score kernel with lane pairs (f32); 144: eight
            // rows of `A` read in place.
            for k in [
                1usize, 5, 8, 15, 16, 17, 24, 32, 33, 48, 56, 64, 80, 96, 100, 112, 120, 128, 129,
                144, 200,
            ] {
                // C = A·Bᵀ: a is m × k, b is n × k.
                let (a, b) = (values(&mut seed, m * k), values(&mut seed, n * k));
                let mut c = vec![f32::NAN; m * n];
                linalg::matmul_nt(&a, &b, k, &mut c).unwrap();
                let want: Vec<f32> = a
                    .chunks(k)
                    .flat_map(|ai| b.chunks(k).map(move |bj| linalg::dot(ai, bj).unwrap()))
                    .collect();
                assert!(same(&c, &want), "matmul_nt m={m} n={n} k={k}");
                // C = alpha·(A·Bᵀ): the product, then each element times alpha (attention's
                // scale: 1/8 exact, 1/√128 rounded, and −(1 + 2⁻²³), which rounds almost every
                // product).
                for alpha in [0.125f32, 0.088_388_35, -1.000_000_1] {
                    let mut c = vec![f32::NAN; m * n];
                    linalg::within::matmul_nt_scaled(&a, &b, &[], k, &mut c, alpha);
                    let scaled: Vec<f32> = want.iter().map(|&x| x * alpha).collect();
                    assert!(
                        same(&c, &scaled),
                        "matmul_nt_scaled m={m} n={n} k={k} {alpha}"
                    );
                }
                // C (+)= A·B: a is m × n, b is n × k.
                let a = values(&mut seed, m * n);
                for acc in [false, true] {
                    let old = values(&mut seed, m * k);
                    let mut c = old.clone();
                    linalg::matmul_nn(&a, &b, n, k, &mut c, acc).unwrap();
                    let want =
                        nn_definition(&a, &b, n, k, if acc { old } else { vec![0.0; m * k] });
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
    assert_eq!(cases, 13 * 12 * 21);
}

/// Dot products whose every product is −0 sum to +0 (lanes start from +0 in the definition);
/// the AVX-512 score kernel starts its lanes from the first products instead and turns the
/// −0 this gives back into +0. Rows of −0 in `A` against rows of +0 in `B` and the other way
/// round (every product −0), rows of 1.5 against them (±0 products), and a row of `B` whose
/// products with the rows of −0 are all −0 but one +0, at every head dimension the kernel takes
/// and one it does not (144); six rows of `B`, so the kernel (not the odd-row path) computes
/// every column; eight rows of `A` (the eight-row kernel), sixteen and twenty-four (the
/// sixteen-row kernel, then the eight-row one).
#[test]
fn products_of_negative_zeros_sum_as_in_the_definition() {
    level_under_test();
    for (k, m) in [16usize, 32, 48, 64, 80, 96, 112, 128, 144]
        .into_iter()
        .flat_map(|k| [(k, 8), (k, 16), (k, 24)])
    {
        let n = 6;
        let a: Vec<f32> = (0..m * k)
            .map(|i| match (i / k) % 3 {
                0 => -0.0,
                1 => 0.0,
                _ => 1.5,
            })
            .collect();
        let mut b: Vec<f32> = (0..n * k)
            .map(|i| if (i / k) % 2 == 0 { 0.0 } else { -0.0 })
            .collect();
        // Row 4 of B: −0 everywhere but one +0.
        b[4 * k..5 * k].fill(-0.0);
        b[4 * k + k / 2] = 0.0;
        let mut c = vec![f32::NAN; m * n];
        linalg::matmul_nt(&a, &b, k, &mut c).unwrap();
        let want = dots(&a, &b, k);
        assert!(same(&c, &want), "k={k} m={m}: {c:?} against {want:?}");
        assert!(
            c.iter().all(|x| x.to_bits() == 0),
            "k={k} m={m}: every sum is +0: {c:?}"
        );
    }
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
    assert!(same(&c, &dots(&a, &b, 40)));
    assert!(c[1].is_nan() && c[0] == f32::INFINITY);
    // A·B with the infinity in row 0 of A and the NaN and −inf in rows 5 and 10 of B.
    let (a, b) = (&a[..3 * 15], &b[..15 * 9]);
    let mut c = vec![0.0f32; 3 * 9];
    linalg::matmul_nn(a, b, 15, 9, &mut c, false).unwrap();
    let want = nn_definition(a, b, 15, 9, vec![0.0f32; 3 * 9]);
    let equal = |x: &f32, y: &f32| x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan());
    assert!(c.iter().zip(&want).all(|(x, y)| equal(x, y)));
    assert!(c.iter().any(|x| x.is_nan()) && c.iter().any(|x| x.is_infinite()));
    // A·Bᵀ again through the AVX-512 copy's eight-row blocks (nine rows of A, k a multiple of
    // 16, an odd number of rows of B): infinities and a NaN in A and in B.
    let (mut a, mut b) = (values(&mut seed, 9 * 32), values(&mut seed, 5 * 32));
    a[3] = f32::INFINITY;
    a[5 * 32 + 17] = f32::NEG_INFINITY;
    a[8 * 32 + 1] = f32::NAN;
    b[32 + 3] = f32::NAN;
    b[4 * 32 + 30] = f32::INFINITY;
    let mut c = vec![0.0f32; 9 * 5];
    linalg::matmul_nt(&a, &b, 32, &mut c).unwrap();
    assert!(same(&c, &dots(&a, &b, 32)));
    // Row 8 of A and row 1 of B hold a NaN: their scores are NaN; the infinities make some
    // other score infinite.
    assert!(
        c[8 * 5..].iter().all(|x| x.is_nan()) && c.iter().skip(1).step_by(5).all(|x| x.is_nan())
    );
    assert!(c.iter().any(|x| x.is_infinite()));
    // The same through the sixteen-row kernel (seventeen rows of A, six of B: rows 0..16 go
    // through it, row 16 through the single-row kernel): a NaN in row 7 and in row 16 of A,
    // an infinity in row 2 and one in row 11, the NaN and the infinity of B.
    let (mut a, mut b) = (values(&mut seed, 17 * 64), values(&mut seed, 6 * 64));
    a[2 * 64 + 5] = f32::INFINITY;
    a[7 * 64 + 33] = f32::NAN;
    a[11 * 64 + 63] = f32::NEG_INFINITY;
    a[16 * 64 + 40] = f32::NAN;
    b[64 + 9] = f32::NAN;
    b[4 * 64 + 47] = f32::INFINITY;
    let mut c = vec![0.0f32; 17 * 6];
    linalg::matmul_nt(&a, &b, 64, &mut c).unwrap();
    assert!(same(&c, &dots(&a, &b, 64)));
    assert!(c[7 * 6..8 * 6].iter().all(|x| x.is_nan()));
    assert!(
        c[16 * 6..].iter().all(|x| x.is_nan()) && c.iter().skip(1).step_by(6).all(|x| x.is_nan())
    );
    assert!(c.iter().any(|x| x.is_infinite()));
    // A·B through the four-row value pass (five rows of A, 64 columns: one quad, then a single
    // row): infinities and NaNs in A and in B.
    let (mut a, mut b) = (values(&mut seed, 5 * 15), values(&mut seed, 15 * 64));
    a[2 * 15 + 3] = f32::INFINITY;
    a[4 * 15 + 7] = f32::NAN;
    b[5 * 64 + 10] = f32::NAN;
    b[9 * 64 + 40] = f32::NEG_INFINITY;
    let mut c = vec![0.0f32; 5 * 64];
    linalg::matmul_nn(&a, &b, 15, 64, &mut c, false).unwrap();
    let want = nn_definition(&a, &b, 15, 64, vec![0.0f32; 5 * 64]);
    assert!(c.iter().zip(&want).all(|(x, y)| equal(x, y)));
    assert!(c.iter().any(|x| x.is_nan()) && c.iter().any(|x| x.is_infinite()));
}

/// `C (+)= A·B` by its definition (`a` `m × n`, `b` `n × k`, `c` the old `m × k` values or
/// zeros): each element adds its products to its old value left to right, in the order of the
/// shared dimension.
fn nn_definition(a: &[f32], b: &[f32], n: usize, k: usize, mut c: Vec<f32>) -> Vec<f32> {
    let m = c.len() / k;
    for i in 0..m {
        for l in 0..k {
            for j in 0..n {
                c[i * k + l] += a[i * n + j] * b[j * k + l];
            }
        }
    }
    c
}

/// Every row of `a` with every row of `b` (rows of `k`), each by `linalg::dot`.
fn dots(a: &[f32], b: &[f32], k: usize) -> Vec<f32> {
    a.chunks(k)
        .flat_map(|ai| b.chunks(k).map(move |bj| linalg::dot(ai, bj).unwrap()))
        .collect()
}

/// `linalg::within` on shapes that do not fit together: the portable loop's partial product at
/// every level (the AVX2 copies run only on consistent shapes). Small integers keep every sum
/// exact in f32 and f64, and f64 always runs the portable loop, so the f32 results must equal
/// the f64 ones whatever level runs the f32 product.
#[test]
fn within_products_on_inconsistent_shapes_are_the_portable_loops() {
    use softmax_core::linalg::within;
    let ints = |n: usize, s: u64| -> Vec<f64> {
        (0..n as u64)
            .map(|i| ((i * 7 + s) % 9) as f64 - 4.0)
            .collect()
    };
    let narrow = |x: &[f64]| x.iter().map(|&v| v as f32).collect::<Vec<f32>>();
    let wide = |x: &[f32]| x.iter().map(|&v| v as f64).collect::<Vec<f64>>();
    // (a length, b length, n, k, c length) for C (+)= A·B with something that does not fit.
    for &(la, lb, n, k, lc) in &[
        (64usize, 40usize, 8usize, 16usize, 128usize), // b shorter than n·k
        (64, 128, 8, 16, 100),                         // c shorter than m·k
        (70, 128, 8, 16, 128),                         // a not whole rows
        (2 * 130, 130 * 24 + 5, 130, 24, 48),          // b longer
    ] {
        let (a, b) = (ints(la, 1), ints(lb, 2));
        let mut c64 = ints(lc, 3);
        let mut c32 = narrow(&c64);
        within::matmul_nn(&a, &b, n, k, &mut c64, true);
        within::matmul_nn(&narrow(&a), &narrow(&b), n, k, &mut c32, true);
        assert_eq!(wide(&c32), c64, "matmul_nn {la} {lb} {n} {k} {lc}");
    }
    // C = A·Bᵀ with rows of k: a ragged a or b, or a c of the wrong size.
    for &(la, lb, k, lc) in &[
        (48usize, 64usize, 16usize, 10usize), // c shorter
        (50, 64, 16, 12),                     // a ragged
        (48, 70, 16, 12),                     // b ragged
        (48, 64, 16, 20),                     // c longer
    ] {
        let (a, b) = (ints(la, 4), ints(lb, 5));
        let mut c64 = ints(lc, 6);
        let mut c32 = narrow(&c64);
        within::matmul_nt(&a, &b, k, &mut c64);
        within::matmul_nt(&narrow(&a), &narrow(&b), k, &mut c32);
        assert_eq!(wide(&c32), c64, "matmul_nt {la} {lb} {k} {lc}");
        // Scaled by 1/4 (exact): the elements the product writes, times the factor; the
        // others left as they were.
        let old = ints(lc, 6);
        let mut s64 = old.clone();
        within::matmul_nt_scaled(&a, &b, &[], k, &mut s64, 0.25);
        let want: Vec<f64> = c64
            .iter()
            .zip(&old)
            .map(|(&c, &o)| if c == o { o } else { c * 0.25 })
            .collect();
        assert_eq!(s64, want, "matmul_nt_scaled {la} {lb} {k} {lc}");
        let mut s32 = narrow(&old);
        within::matmul_nt_scaled(&narrow(&a), &narrow(&b), &[], k, &mut s32, 0.25);
        assert_eq!(wide(&s32), s64, "matmul_nt_scaled f32 {la} {lb} {k} {lc}");
    }
}

/// Shapes whose products overflow `usize` are an error, not a panic (debug) or a wrapped length
/// that some buffer could match (release: `2^63 · 2` wraps to 0, the length of an empty `c`).
#[test]
fn overflowing_shapes_are_errors() {
    use softmax_core::Error;
    let big = 1usize << (usize::BITS - 1);
    let (a, b) = ([0.0f32; 2], [0.0f32; 4]);
    let mut empty: [f32; 0] = [];
    // `a` is one row of n = 2, so b must hold n·k = 2·2^63 values: that overflows.
    assert_eq!(
        linalg::matmul_nn(&a, &[], 2, big, &mut empty, false),
        Err(Error::ShapeOverflow)
    );
    assert_eq!(
        linalg::matmul_nn::<f32>(&[], &[], usize::MAX, 2, &mut empty, false),
        Err(Error::ShapeOverflow)
    );
    // `a` holds n = 0 rows of m = usize::MAX; c must hold m·k = 2·usize::MAX.
    assert_eq!(
        linalg::matmul_tn::<f32>(&[], &[], usize::MAX, 2, &mut empty, false),
        Err(Error::ShapeOverflow)
    );
    // b's check comes first: n = 1 row of m = 2, b must hold n·k = 2^63 (no overflow).
    assert_eq!(
        linalg::matmul_tn(&a, &b, 2, big, &mut empty, false),
        Err(Error::LengthMismatch {
            expected: big,
            found: 4
        })
    );
    // Consistent small shapes still pass and compute.
    let mut c = [0.0f32; 4];
    assert_eq!(linalg::matmul_nn(&a, &b, 2, 2, &mut c[..2], false), Ok(()));
    assert_eq!(linalg::matmul_tn(&a, &b[..2], 2, 2, &mut c, false), Ok(()));
}

/// The products over stored rows (`within::matmul_nt_stored`, `matmul_nn_stored`: int8 with a
/// scale per row, f16, bf16, read in registers) equal the f32 products over the read-back values
/// (`Operand::load`), bit for bit, at the level this machine runs (in release: the AVX2 copies
/// with their eight-at-a-time conversions). The rows mix magnitudes, so that f16 meets its
/// subnormals and int8 rows have scales of very different sizes.
#[test]
fn stored_products_equal_the_f32_products_over_the_read_back_values() {
    use softmax_core::linalg::within;
    use softmax_core::stored::{bf16, f16, Stored};
    level_under_test();

    fn check<U: Stored>(seed: &mut u64, m: usize, n: usize, k: usize) {
        // Rows of B: values in [-4, 4) times a per-row magnitude from 2^-20 to 2^6.
        let raw = values(seed, n * k);
        let mut b = vec![U::default(); n * k];
        let mut scales = Vec::new();
        let mut back = vec![0.0f32; n * k];
        for (j, (row, (dst, rb))) in raw
            .chunks(k)
            .zip(b.chunks_mut(k).zip(back.chunks_mut(k)))
            .enumerate()
        {
            let mag = 2f32.powi((j as i32 * 7) % 27 - 20);
            let x: Vec<f32> = row.iter().map(|v| v * mag).collect();
            let s = U::store_row(&x, dst).unwrap();
            scales.push(s);
            for (r, &u) in rb.iter_mut().zip(dst.iter()) {
                *r = u.load(s);
            }
        }
        let scales: Vec<U::Scale> = if core::mem::size_of::<U::Scale>() == 0 {
            Vec::new()
        } else {
            scales
        };
        let a = values(seed, m * k);
        let mut c = vec![f32::NAN; m * n];
        let mut want = vec![0.0f32; m * n];
        within::matmul_nt_stored(&a, &b, &scales, k, &mut c);
        within::matmul_nt(&a, &back, k, &mut want);
        assert!(same(&c, &want), "{} matmul_nt m={m} n={n} k={k}", U::NAME);
        let alpha = 0.088_388_35f32;
        within::matmul_nt_scaled(&a, &b, &scales, k, &mut c, alpha);
        let scaled: Vec<f32> = want.iter().map(|&x| x * alpha).collect();
        assert!(
            same(&c, &scaled),
            "{} matmul_nt_scaled m={m} n={n} k={k}",
            U::NAME
        );
        let a = values(seed, m * n);
        for acc in [false, true] {
            let old = values(seed, m * k);
            let (mut c, mut want) = (old.clone(), old);
            within::matmul_nn_stored(&a, &b, &scales, n, k, &mut c, acc);
            within::matmul_nn(&a, &back, n, k, &mut want, acc);
            assert!(same(&c, &want), "{} matmul_nn m={m} n={n} k={k}", U::NAME);
        }
    }

    let mut seed = 23u64;
    for m in [1usize, 2, 3, 5, 6, 8, 17] {
        for n in [1usize, 3, 4, 7, 8, 9, 64, 65, 130] {
            for k in [1usize, 7, 8, 16, 17, 33, 64, 128, 129] {
                check::<i8>(&mut seed, m, n, k);
                check::<f16>(&mut seed, m, n, k);
                check::<bf16>(&mut seed, m, n, k);
            }
        }
    }
}

/// Stored operands outside what a cache holds (f16 infinities and NaNs, int8 rows with an
/// infinite or NaN scale, tails of every length) against the definitions: each element of
/// `matmul_nt_stored` is `dot` over the read-back values (`Operand::load`, the portable
/// conversion), `matmul_nn_stored` a scalar loop over them — so the AVX2 copies (F16C's
/// conversion, the padded tails) are held to the portable semantics here too.
#[test]
fn stored_products_on_non_finite_operands_equal_their_definitions() {
    use softmax_core::linalg::within;
    use softmax_core::stored::{f16, Operand};
    level_under_test();
    let equal = |x: f32, y: f32| x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan());
    let mut seed = 31u64;
    for k in [1usize, 3, 8, 15, 16, 17, 33] {
        let (m, n) = (3usize, 9usize);
        let a = values(&mut seed, m * k);
        // f16 rows: random bit patterns, a third of them infinities or NaNs.
        let raw = values(&mut seed, n * k);
        let h: Vec<f16> = raw
            .iter()
            .enumerate()
            .map(|(i, &x)| match i % 7 {
                0 => f16::from_bits(0x7c00 | ((i as u16 * 37) & 0x83ff)),
                3 => f16::from_bits(0xfc00),
                _ => f16::from_f32(x),
            })
            .collect();
        // int8 rows with scales finite, infinite and NaN.
        let q: Vec<i8> = raw.iter().map(|&x| (x * 30.0) as i8).collect();
        let sc: Vec<f32> = (0..n)
            .map(|j| match j % 3 {
                0 => f32::INFINITY,
                1 => f32::NAN,
                _ => 0.5,
            })
            .collect();
        let hb: Vec<f32> = h.iter().map(|u| u.load(())).collect();
        let qb: Vec<f32> = q
            .chunks(k)
            .zip(&sc)
            .flat_map(|(r, &s)| r.iter().map(move |u| u.load(s)))
            .collect();
        let check_nt = |c: &[f32], back: &[f32], what: &str| {
            for i in 0..m {
                for j in 0..n {
                    let want = linalg::dot(&a[i * k..][..k], &back[j * k..][..k]).unwrap();
                    assert!(equal(c[i * n + j], want), "{what} nt k={k} [{i}][{j}]");
                }
            }
        };
        let mut c = vec![0.0f32; m * n];
        within::matmul_nt_stored(&a, &h, &[], k, &mut c);
        check_nt(&c, &hb, "f16");
        within::matmul_nt_stored(&a, &q, &sc, k, &mut c);
        check_nt(&c, &qb, "int8");
        let w = values(&mut seed, m * n);
        let check_nn = |c: &[f32], back: &[f32], what: &str| {
            for i in 0..m {
                for l in 0..k {
                    let mut want = 0.0f32;
                    for j in 0..n {
                        want += w[i * n + j] * back[j * k + l];
                    }
                    assert!(equal(c[i * k + l], want), "{what} nn k={k} [{i}][{l}]");
                }
            }
        };
        let mut c = vec![0.0f32; m * k];
        within::matmul_nn_stored(&w, &h, &[], n, k, &mut c, false);
        check_nn(&c, &hb, "f16");
        within::matmul_nn_stored(&w, &q, &sc, n, k, &mut c, false);
        check_nn(&c, &qb, "int8");
    }
}
