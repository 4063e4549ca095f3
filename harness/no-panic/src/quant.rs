//! The panic-freedom probe for softmax-core's quantized softmax (`quant`): Prepare from opaque
//! scales and betas (including invalid ones), the raw constructors, the three kernels over
//! slices and row lengths the optimiser cannot see (ragged, empty, short scratch), custom tables,
//! the fixed-point primitives on opaque arguments (shifts of any size) and the table lookup.

use core::hint::black_box;

use softmax_core::quant::{self, fixed, S16Params, S8Params};

fn used<T>(v: T) {
    black_box(v);
}

#[inline(never)]
pub fn probe() {
    let n = black_box(7usize);
    let len = black_box(21usize);
    let mut x8 = black_box([0i8; 64]);
    let mut x16 = black_box([0i16; 64]);
    for (i, (a, b)) in x8.iter_mut().zip(x16.iter_mut()).enumerate() {
        *a = black_box(i as i8).wrapping_mul(37);
        *b = black_box(i as i16).wrapping_mul(1021);
    }
    let mut scratch = black_box([0i32; 64]);
    let mut y8 = [0i8; 64];
    let mut y16 = [0i16; 64];
    let scratch_len = black_box(5usize);

    let p8 = S8Params::prepare(black_box(0.05), black_box(1.0));
    let raw8 = S8Params::from_raw(black_box(1 << 30), black_box(19), black_box(-3968));
    for p in [p8, raw8].into_iter().flatten() {
        used(p.input_multiplier());
        used(p.input_left_shift());
        used(p.diff_min());
        used(quant::softmax_s8(
            &p,
            &x8[..len.min(64)],
            n,
            &mut scratch[..scratch_len.min(64)],
            &mut y8[..len.min(64)],
        ));
        used(quant::softmax_s8_s16(
            &p,
            &x8[..len.min(64)],
            n,
            &mut scratch,
            &mut y16[..len.min(64)],
        ));
        used(quant::softmax_s8(&p, &x8, black_box(0), &mut scratch, &mut y8));
    }
    let p16 = S16Params::prepare(black_box(0.001), black_box(2.0));
    let raw16 = S16Params::from_raw(black_box(1 << 30), black_box(-3));
    let mut recip: [i16; 513] = quant::ONE_OVER_ONE_PLUS_X_LUT;
    recip[black_box(160usize) % 513] -= 1;
    for p in [p16, raw16].into_iter().flatten() {
        used(p.input_multiplier());
        used(p.input_left_shift());
        used(p.exp_lut());
        used(p.one_over_one_plus_x_lut());
        let custom = p.with_tables(&quant::EXP_LUT, &recip);
        used(quant::softmax_s16(&p, &x16[..len.min(64)], n, &mut y16[..len.min(64)]));
        used(quant::softmax_s16(&custom, &x16, black_box(64), &mut y16));
    }
    used(y8);
    used(y16);

    let a = black_box(-123_456_789i32);
    let b = black_box(i32::MIN);
    let e = black_box(40u32);
    let s = black_box(-45i32);
    used(fixed::saturating_rounding_doubling_high_mul(a, b));
    used(fixed::rounding_divide_by_pot(a, e));
    used(fixed::saturating_rounding_multiply_by_pot(a, s));
    used(fixed::saturating_rounding_multiply_by_pot(a, -s));
    used(fixed::rounding_half_sum(a, b));
    used(fixed::exp_on_negative_values_q5_26(a));
    used(fixed::one_over_one_plus_x_for_x_in_0_1(b));
    used(fixed::get_reciprocal(black_box(0), black_box(i32::MIN)));
    used(fixed::multiply_by_quantized_multiplier(a, b, s));
    used(fixed::multiply_by_quantized_multiplier(a, b, -s));

    // The f32 add and multiply of the soft-float exp (assembly on the Cortex-M0 build).
    let (fa, fb) = (black_box(1.5f32), black_box(-3.25e-3f32));
    used(softmax_core::soft::f32_add(fa, fb));
    used(softmax_core::soft::f32_sub(fa, fb));
    used(softmax_core::soft::f32_mul(fa, fb));
    used(quant::lut_lookup(black_box(-32768), &quant::EXP_LUT));
    used(quant::quantize_multiplier(black_box(1e-300)));
    used(quant::quantize_multiplier(black_box(f64::NAN)));
}
