//! TensorFlow Lite Micro's int8-input softmax loop as TFLM writes it, each exp evaluated twice:
//! the baseline of the exp-once figures. One file, used by this crate (tests, `harness bench`)
//! and included by `harness/cost` (`#[path]`, so that its probe image carries no suite code):
//! it depends on softmax-core alone.

use softmax_core::quant::{fixed, S8Params};
use softmax_core::Error;

/// TensorFlow Lite Micro's int8-input softmax loop as TFLM writes it — every exp evaluated twice,
/// once for the sum and once for the output (tflite-micro#3055) — from softmax-core's public
/// fixed-point primitives: the baseline of the exp-once speed-up (`harness bench`, the cost
/// table) and a second statement of the kernel for the tests. `out` receives the outputs as
/// `i32`, offset by the output type's minimum and clamped to its range (`out_bits` = 8 or 16).
///
/// # Errors
///
/// As [`softmax_core::quant::softmax_s8`]: a row TFLM has no answer for, and the shapes.
///
/// # Examples
///
/// ```
/// use softmax_core::quant::{softmax_s8, S8Params};
/// use softmax_suite::softmax_s8_twice;
/// let p = S8Params::prepare(0.05, 1.0)?;
/// let x = [40i8, 20, 0, -128];
/// let (mut scratch, mut once) = ([0i32; 4], [0i8; 4]);
/// softmax_s8(&p, &x, 4, &mut scratch, &mut once)?;
/// let mut twice = [0i32; 4];
/// softmax_s8_twice(&p, &x, 4, 8, &mut twice)?;
/// assert_eq!(once.map(i32::from), twice);
/// # Ok::<(), softmax_core::Error>(())
/// ```
pub fn softmax_s8_twice(
    params: &S8Params,
    x: &[i8],
    n: usize,
    out_bits: i32,
    out: &mut [i32],
) -> Result<(), Error> {
    if n == 0 {
        return Err(Error::EmptyRow);
    }
    if !x.len().is_multiple_of(n) {
        return Err(Error::RaggedBatch { len: x.len(), n });
    }
    if out.len() != x.len() {
        return Err(Error::LengthMismatch {
            expected: x.len(),
            found: out.len(),
        });
    }
    let (lo, hi) = if out_bits == 8 {
        (-128, 127)
    } else {
        (-32768, 32767)
    };
    let exp = |d: i32| {
        fixed::exp_on_negative_values_q5_26(fixed::multiply_by_quantized_multiplier(
            d,
            params.input_multiplier(),
            params.input_left_shift(),
        ))
    };
    for (row, out) in x.chunks_exact(n).zip(out.chunks_exact_mut(n)) {
        let max = row.iter().fold(i8::MIN, |m, &v| m.max(v)) as i32;
        let mut sum: i64 = 0;
        for &v in row {
            let d = v as i32 - max;
            if d >= params.diff_min() {
                sum += fixed::rounding_divide_by_pot(exp(d), 12) as i64;
            }
        }
        let sum = i32::try_from(sum).map_err(|_| Error::QuantizedSumOverflow)?;
        let (reciprocal, bits_over_unit) = fixed::get_reciprocal(sum, 12);
        let exponent = bits_over_unit + 31 - out_bits;
        if !(0..=31).contains(&exponent) {
            return Err(Error::QuantizedSumOverflow);
        }
        for (&v, y) in row.iter().zip(out.iter_mut()) {
            let d = v as i32 - max;
            *y = if d >= params.diff_min() {
                let e = exp(d);
                let unsat = fixed::rounding_divide_by_pot(
                    fixed::saturating_rounding_doubling_high_mul(reciprocal, e),
                    exponent as u32,
                );
                unsat.wrapping_add(lo).clamp(lo, hi)
            } else {
                lo
            };
        }
    }
    Ok(())
}
