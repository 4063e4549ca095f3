//! softmax-core's reduced-precision storage (`softmax_core::stored`: f16, bf16, int8 with one
//! f32 scale per row) and the products that read it (`linalg::within::matmul_nt_stored`,
//! `matmul_nn_stored`). The f16 and bf16 conversions are the `half` crate's (software on both
//! Cortex-M cores); int8's are one f32 division per value and one f32 product per read-back. So
//! a digest that differs between the targets means a conversion rounds differently somewhere.
//!
//! `rows`: every row of the suite's table ([`ROWS`]: NaN, infinities, huge, subnormal, ties)
//! and the formats' rounding edges, through `check_row`, `store_row` and `write_row` (which
//! stores even the values `check_row` rejects) of each format, and each stored value read back
//! (`Operand::load`). `products`: both products over rows stored in each format (and f32, the
//! identity read), for shapes around the 16-lane chunking.

use softmax_core::linalg::within::{matmul_nn_stored, matmul_nt_stored};
use softmax_core::stored::{bf16, f16, row_bytes, Operand, Stored};

use crate::gen::fill;
use crate::{Ctx, Feed, ROWS};

/// A stored element's bits for the digest; a NaN (which `write_row` makes of a NaN, as the
/// format's conversion gives it, never a value a cache holds) as one canonical pattern, as the
/// digest does for f32 (the payload is not specified).
trait Bits: Stored {
    fn bits(self) -> u32;
}

impl Bits for f16 {
    fn bits(self) -> u32 {
        if self.is_nan() {
            0x7e00
        } else {
            u32::from(self.to_bits())
        }
    }
}

impl Bits for bf16 {
    fn bits(self) -> u32 {
        if self.is_nan() {
            0x7fc0
        } else {
            u32::from(self.to_bits())
        }
    }
}

impl Bits for i8 {
    fn bits(self) -> u32 {
        u32::from(self as u8)
    }
}

/// Longest row stored (the table's longest, 257 values).
const LEN: usize = crate::CAP;

/// The rounding edges of the formats: f16's largest value and the tie above it, its smallest
/// normal and subnormal and the ties around them, a tie to even in the middle of its range;
/// bf16's largest value and the tie above it, its ties to even, f32 subnormals; int8 rows whose
/// quotients fall exactly on halves (`x/s = k + 1/2`, rounded away from zero), at ±127, and all
/// zero.
const EDGES: &[&[f32]] = &[
    // f16: 65504, 65519.996 (rounds down to 65504), then 65520 (the tie: to +inf).
    &[65504.0, b(0x477f_efff), -b(0x477f_efff), 1.0],
    &[65520.0, 1.0],
    &[-65520.0, 1.0],
    // f16: 2⁻¹⁴ (smallest normal), 2⁻²⁴ (smallest subnormal), 2⁻²⁵ (the tie: to 0), just
    // above it (to 2⁻²⁴), −1.5·2⁻²⁴ (the tie: to −2·2⁻²⁴).
    &[
        b(0x3880_0000),
        b(0x3380_0000),
        b(0x3300_0000),
        b(0x3300_0001),
        -b(0x33c0_0000),
    ],
    // f16: 1 + 2⁻¹¹ (tie: to 1), 1 + 3·2⁻¹¹ (tie: up to even), 2049 and 2051 (ties), 1e-10 (0).
    &[
        b(0x3f80_1000),
        b(0x3f80_3000),
        2049.0,
        2051.0,
        -2049.0,
        1.0e-10,
    ],
    // bf16: below the tie above its largest value; ties to even at 1 + 2⁻⁸ and 1 + 3·2⁻⁸;
    // f32 subnormals (kept as bf16 subnormals, rounded).
    &[
        b(0x7f7f_7fff),
        b(0x3f80_8000),
        b(0x3f81_8000),
        b(0x0000_0001),
        b(0x8000_8000),
        b(0x0001_8000),
    ],
    // bf16: the tie above its largest value (to +inf).
    &[b(0x7f7f_8000), 1.0],
    // int8: f32's extremes.
    &[f32::MAX, -f32::MAX],
    // int8: s = 1, the quotients' halves.
    &[127.0, 0.5, -0.5, 1.5, -2.5, 126.5, -63.5],
    &[2.0, -1.0, 0.01, -0.0, 0.0],
    &[0.0, -0.0, 0.0],
    &[b(0x0001_1c6a), -b(0x0000_5391), b(0x0000_0001)],
];

/// The f32 with bits `x`.
const fn b(x: u32) -> f32 {
    f32::from_bits(x)
}

/// One row through one format: `check_row`, `store_row` (and the elements it wrote, or did
/// not), `write_row`, every value read back, and the row's size.
fn format<S: Bits>(ctx: &mut Ctx, x: &[f32])
where
    S::Scale: Feed,
{
    let mut out = [S::default(); LEN];
    let Some(out) = out.get_mut(..x.len()) else {
        return;
    };
    ctx.feed(&S::check_row(x));
    ctx.feed(&S::store_row(x, out));
    for &e in out.iter() {
        ctx.feed(&e.bits());
    }
    let s = S::write_row(x, out);
    ctx.feed(&s);
    for &e in out.iter() {
        ctx.feed(&e.bits());
        ctx.feed(&e.load(s));
    }
    ctx.feed(&row_bytes::<S>(x.len()));
    // A shorter output: `store_row` refuses it, `write_row` writes what fits.
    if let Some((_, short)) = out.split_last_mut() {
        ctx.feed(&S::store_row(x, short));
        ctx.feed(&S::write_row(x, short));
    }
}

fn all_formats(ctx: &mut Ctx, x: &[f32]) {
    format::<f16>(ctx, x);
    format::<bf16>(ctx, x);
    format::<i8>(ctx, x);
}

/// Every row of [`ROWS`] (f32) and every row of [`EDGES`] (and its values scaled by a drawn
/// power of two and sign) through each format.
pub(crate) fn rows(ctx: &mut Ctx) {
    let mut x = [0.0f32; LEN];
    for spec in ROWS {
        let Some(x) = x.get_mut(..spec.len) else {
            continue;
        };
        fill(&mut ctx.rng, spec.dist, x);
        all_formats(ctx, x);
    }
    for edge in EDGES {
        all_formats(ctx, edge);
        let Some(x) = x.get_mut(..edge.len()) else {
            continue;
        };
        // 2^(k − 4) with k in 0..9, and a sign: exact for the normal values.
        let k = ctx.rng.below(9) as u32;
        let sign = if ctx.rng.below(2) == 0 { 1.0 } else { -1.0 };
        let scale = sign * f32::from_bits((123 + k) << 23);
        for (y, &e) in x.iter_mut().zip(*edge) {
            *y = e * scale;
        }
        all_formats(ctx, x);
    }
}

/// `(m, n, k)`: `A` is `m × k` for the NT product (`m × n` for NN), `B` is `n × k`.
const SHAPES: &[(usize, usize, usize)] = &[
    (1, 1, 1),
    (2, 3, 4),
    (3, 5, 16),
    (1, 8, 17),
    (2, 4, 33),
    (3, 2, 40),
];
const MAX_A: usize = 3 * 40;
const MAX_B: usize = 8 * 40;

/// Both products with `B` stored as `U` (rows stored by `store`), `A` and the rows of `B`
/// drawn: ordinary values, rows with an outlier, rows of tiny values.
fn products_of<U: Operand<f32>>(ctx: &mut Ctx, store: impl Fn(&[f32], &mut [U]) -> U::Scale)
where
    U::Scale: Feed,
{
    for &(m, n, k) in SHAPES {
        let mut a = [0.0f32; MAX_A];
        let mut x = [0.0f32; MAX_B];
        let mut b = [U::default(); MAX_B];
        let mut s = [U::Scale::default(); 8];
        let (Some(a_nt), Some(x), Some(b), Some(s)) = (
            a.get_mut(..m * k),
            x.get_mut(..n * k),
            b.get_mut(..n * k),
            s.get_mut(..n),
        ) else {
            continue;
        };
        for v in a_nt.iter_mut() {
            *v = ctx.rng.range(-4.0, 4.0) as f32;
        }
        for ((row, out), sc) in x.chunks_mut(k).zip(b.chunks_mut(k)).zip(s.iter_mut()) {
            let r = match ctx.rng.below(4) {
                0 => 1.0e-6,
                1 => 300.0,
                _ => 2.0,
            };
            for v in row.iter_mut() {
                *v = ctx.rng.range(-r, r) as f32;
            }
            if let Some(v) = row.get_mut(ctx.rng.below(k)) {
                *v *= 20.0;
            }
            *sc = store(row, out);
        }
        ctx.feed(&*s);
        // C = A·Bᵀ: m × n.
        let mut c = [0.0f32; 3 * 8];
        if let Some(c) = c.get_mut(..m * n) {
            matmul_nt_stored(a_nt, b, s, k, c);
            ctx.feed(&*c);
        }
        // C = A·B, then C += A·B: A is m × n, C is m × k.
        let mut c = [0.0f32; MAX_A];
        if let (Some(a_nn), Some(c)) = (a.get(..m * n), c.get_mut(..m * k)) {
            matmul_nn_stored(a_nn, b, s, n, k, c, false);
            ctx.feed(&*c);
            matmul_nn_stored(a_nn, b, s, n, k, c, true);
            ctx.feed(&*c);
        }
    }
}

/// [`matmul_nt_stored`] and [`matmul_nn_stored`] over f16, bf16, int8 and f32 rows.
pub(crate) fn products(ctx: &mut Ctx) {
    products_of::<f16>(ctx, f16::write_row);
    products_of::<bf16>(ctx, bf16::write_row);
    products_of::<i8>(ctx, i8::write_row);
    products_of::<f32>(ctx, |x, out| out.copy_from_slice(x));
}
