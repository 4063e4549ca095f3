//! The on-target cases of softmax-core's quantized softmax (`quant`): TFLM's Prepare (f64
//! arithmetic: soft-float on both Cortex-M cores), the three kernels over rows of every shape
//! class and distribution the host tests use, their errors, and the fixed-point primitives. All
//! integer results are fed as they are; a digest that differs between x86_64, the M4F and the M0
//! means a kernel's bits differ.

use softmax_core::quant::{
    fixed, lut_lookup, quantize_multiplier, softmax_s16, softmax_s8, softmax_s8_s16, S16Params,
    S8Params, EXP_LUT, ONE_OVER_ONE_PLUS_X_LUT,
};
use softmax_core::Error;

use crate::family::own_frame;
use crate::Ctx;

/// The longest row of the kernel cases; 512 values for the int8-output sum limit.
const MAX_N: usize = 512;

/// An integer for the digest (two's complement, 64 bits).
fn feed_i(ctx: &mut Ctx, v: i64) {
    ctx.feed(&(v as u64));
}

fn feed_result(ctx: &mut Ctx, r: Result<(), Error>) {
    match r {
        Ok(()) => ctx.feed(&0u8),
        Err(e) => {
            ctx.feed(&1u8);
            ctx.feed(&e);
        }
    }
}

/// `(input scale, beta)` pairs of the int8 cases, the last one beyond what Prepare accepts.
const S8_PARAMS: [(f32, f32); 6] = [
    (1.0 / 255.0, 1.0),
    (0.1, 1.0),
    (0.05, 0.5),
    (0.0078125, 2.0),
    (0.7, 3.0),
    (1e-9, 1.0),
];

/// `(input scale, beta)` pairs of the int16 cases, the last one's shift 16 or more.
const S16_PARAMS: [(f32, f32); 6] = [
    (1.0 / 32768.0, 1.0),
    (10.0 / 32768.0, 1.0),
    (1.0 / 4096.0, 2.0),
    (0.01, 0.5),
    (1e-30, 1.0),
    (6.0, 1.0),
];

/// Row lengths of the kernel cases.
const LENS: [usize; 5] = [1, 5, 16, 37, 200];

/// Fills `x` with values in `[lo, hi]` by one of four patterns: uniform, near the top, all
/// equal, one maximum over a floor.
fn fill_ints(ctx: &mut Ctx, pattern: usize, lo: i32, hi: i32, x: &mut [i32]) {
    let span = (hi - lo + 1) as usize;
    let top = lo + ctx.rng.below(span) as i32;
    for (i, v) in x.iter_mut().enumerate() {
        *v = match pattern {
            0 => lo + ctx.rng.below(span) as i32,
            1 => (top - ctx.rng.below(span / 16 + 1) as i32).max(lo),
            2 => top,
            _ => {
                if i == 0 {
                    hi
                } else {
                    lo
                }
            }
        };
    }
}

/// int8 → int8 and int8 → int16 over every parameter set, length and pattern, and the sum limits.
pub(crate) fn s8(ctx: &mut Ctx) {
    let mut raw = [0i32; MAX_N];
    let mut x = [0i8; MAX_N];
    let mut scratch = [0i32; MAX_N];
    let mut y8 = [0i8; MAX_N];
    let mut y16 = [0i16; MAX_N];
    for (scale, beta) in S8_PARAMS {
        let params = match S8Params::prepare(scale, beta) {
            Ok(p) => p,
            Err(e) => {
                ctx.feed(&e);
                continue;
            }
        };
        feed_i(ctx, params.input_multiplier() as i64);
        feed_i(ctx, params.input_left_shift() as i64);
        feed_i(ctx, params.diff_min() as i64);
        for n in LENS {
            for pattern in 0..4 {
                fill_ints(ctx, pattern, -128, 127, &mut raw[..n]);
                for (q, &r) in x.iter_mut().zip(&raw[..n]) {
                    *q = r as i8;
                }
                let r = own_frame(|| softmax_s8(&params, &x[..n], n, &mut scratch, &mut y8[..n]));
                feed_result(ctx, r);
                for &v in &y8[..n] {
                    feed_i(ctx, v as i64);
                }
                let r =
                    own_frame(|| softmax_s8_s16(&params, &x[..n], n, &mut scratch, &mut y16[..n]));
                feed_result(ctx, r);
                for &v in &y16[..n] {
                    feed_i(ctx, v as i64);
                }
            }
        }
        // Two rows at once: the same bits as one at a time.
        let r = own_frame(|| softmax_s8(&params, &x[..10], 5, &mut scratch, &mut y8[..10]));
        feed_result(ctx, r);
        for &v in &y8[..10] {
            feed_i(ctx, v as i64);
        }
    }
    // The int8-output sum limit: 511 values at the maximum have an answer, 512 do not.
    let Ok(params) = S8Params::prepare(0.1, 1.0) else {
        ctx.feed(&0xbadu32);
        return;
    };
    let x = [3i8; MAX_N];
    for n in [511, 512] {
        let r = own_frame(|| softmax_s8(&params, &x[..n], n, &mut scratch, &mut y8[..n]));
        feed_result(ctx, r);
        feed_i(ctx, y8[0] as i64);
    }
    // Structural errors.
    feed_result(
        ctx,
        softmax_s8(&params, &x[..3], 2, &mut scratch, &mut y8[..3]),
    );
    feed_result(
        ctx,
        softmax_s8(&params, &x[..4], 4, &mut scratch[..3], &mut y8[..4]),
    );
    feed_result(
        ctx,
        softmax_s8_s16(&params, &x[..4], 0, &mut scratch, &mut y16[..4]),
    );
    feed_result(
        ctx,
        softmax_s8_s16(&params, &x[..4], 4, &mut scratch, &mut y16[..5]),
    );
}

/// int16 → int16 over every parameter set, length and pattern, with TFLM's tables and with
/// TensorFlow Lite's reciprocal table (two entries one less).
pub(crate) fn s16(ctx: &mut Ctx) {
    let mut raw = [0i32; MAX_N];
    let mut x = [0i16; MAX_N];
    let mut y = [0i16; MAX_N];
    let mut recip = ONE_OVER_ONE_PLUS_X_LUT;
    recip[160] -= 1;
    recip[294] -= 1;
    for (scale, beta) in S16_PARAMS {
        let params = match S16Params::prepare(scale, beta) {
            Ok(p) => p,
            Err(e) => {
                ctx.feed(&e);
                continue;
            }
        };
        feed_i(ctx, params.input_multiplier() as i64);
        feed_i(ctx, params.input_left_shift() as i64);
        let litert = params.with_tables(&EXP_LUT, &recip);
        for n in LENS {
            for pattern in 0..4 {
                fill_ints(ctx, pattern, -32768, 32767, &mut raw[..n]);
                for (q, &r) in x.iter_mut().zip(&raw[..n]) {
                    *q = r as i16;
                }
                for p in [&params, &litert] {
                    let r = own_frame(|| softmax_s16(p, &x[..n], n, &mut y[..n]));
                    feed_result(ctx, r);
                    for &v in &y[..n] {
                        feed_i(ctx, v as i64);
                    }
                }
            }
        }
    }
    if let Ok(p) = S16Params::from_raw(1 << 30, 0) {
        feed_result(ctx, softmax_s16(&p, &x[..3], 2, &mut y[..3]));
        feed_result(ctx, softmax_s16(&p, &x[..3], 3, &mut y[..2]));
    }
    feed_result(ctx, S16Params::from_raw(1, 16).map(|_| ()));
    feed_result(ctx, S8Params::from_raw(1, 19, -4096).map(|_| ()));
}

/// The fixed-point primitives and `quantize_multiplier` on random and edge arguments.
pub(crate) fn primitives(ctx: &mut Ctx) {
    const EDGES: [i32; 8] = [
        i32::MIN,
        i32::MIN + 1,
        -(1 << 30),
        -1,
        0,
        1,
        1 << 30,
        i32::MAX,
    ];
    for i in 0..400 {
        let (a, b) = if i < 64 {
            (EDGES[i % 8], EDGES[i / 8])
        } else {
            (ctx.rng.next_u64() as i32, ctx.rng.next_u64() as i32)
        };
        let e = (ctx.rng.below(32)) as u32;
        feed_i(
            ctx,
            fixed::saturating_rounding_doubling_high_mul(a, b) as i64,
        );
        feed_i(ctx, fixed::rounding_divide_by_pot(a, e) as i64);
        feed_i(
            ctx,
            fixed::saturating_rounding_multiply_by_pot(a, e as i32 - 16) as i64,
        );
        feed_i(ctx, fixed::rounding_half_sum(a, b) as i64);
        feed_i(
            ctx,
            fixed::exp_on_negative_values_q5_26(-(a & i32::MAX)) as i64,
        );
        feed_i(
            ctx,
            fixed::one_over_one_plus_x_for_x_in_0_1(a & i32::MAX) as i64,
        );
        let (r, bits) = fixed::get_reciprocal(a & i32::MAX, 12);
        feed_i(ctx, r as i64);
        feed_i(ctx, bits as i64);
        feed_i(
            ctx,
            fixed::multiply_by_quantized_multiplier(a >> 12, b & i32::MAX, e as i32 - 20) as i64,
        );
        feed_i(ctx, lut_lookup(a as i16, &EXP_LUT) as i64);
        feed_i(ctx, lut_lookup(b as i16, &ONE_OVER_ONE_PLUS_X_LUT) as i64);
        // (1 + u)·2^k, k ∈ [−40, 40], built from its bits (no `exp2` in core).
        let k = ctx.rng.below(81) as u64;
        let real = (1.0 + ctx.rng.unit()) * f64::from_bits((983 + k) << 52);
        match quantize_multiplier(real) {
            Ok((m, s)) => {
                feed_i(ctx, m as i64);
                feed_i(ctx, s as i64);
            }
            Err(e) => ctx.feed(&e),
        }
    }
}
