//! The f32 add, subtract and multiply that softmax-core's polynomial exp runs on where there is
//! no FPU (`softmax_core::soft`: Thumb assembly on the Cortex-M0, the portable reference
//! elsewhere, equal bit for bit to the hardware's operations on x86_64 and the Cortex-M4F). So a
//! digest that differs between the targets means the assembly rounds differently from IEEE 754.
//!
//! The operands come in classes that reach every path of the routines: random bits (every
//! class of value, mostly far-apart exponents), exponents a set distance apart (alignment and
//! the sticky bit, 0 to 40 places), near cancellations (normalisation by many places), ties of
//! the add (b half an ulp of a), short significands (exact products, product ties),
//! products at both ends of the exponent range (overflow, results near the subnormals), the
//! specials (zeros, subnormals, infinities, NaN), and the exp's own operands. First, the kernels'
//! exact shift on signed zeros and overflow (`shift_signs`).

use softmax_core::backend::Poly;
use softmax_core::soft::{f32_add, f32_mul, f32_sub};
use softmax_core::LogSumExp;

use crate::Ctx;

const SIGN: u32 = 0x8000_0000;
const FRAC: u32 = 0x007f_ffff;

/// Pairs per class.
const PAIRS: usize = 4096;

fn u32_of(ctx: &mut Ctx) -> u32 {
    (ctx.rng.next_u64() >> 32) as u32
}

fn feed3(ctx: &mut Ctx, a: u32, b: u32) {
    let (a, b) = (f32::from_bits(a), f32::from_bits(b));
    ctx.feed(&f32_add(a, b));
    ctx.feed(&f32_sub(a, b));
    ctx.feed(&f32_mul(a, b));
    ctx.feed(&f32_add(b, a));
}

/// The exact shift `x − max` with signed zeros and overflow (Fast2Sum on soft-float targets,
/// TwoSum elsewhere; the pair must be the same, zero signs included) and the log-probabilities
/// built on it: `log_prob` (the exact shift for values above the state's maximum, `(x − max) −
/// ln Σ` below it) and `log_softmax` (whose terms take the exact shift) on rows whose maximum
/// or difference is a zero of either sign or overflows.
fn shift_signs(ctx: &mut Ctx) {
    const ROWS: [&[f32]; 6] = [
        &[0.0],
        &[-0.0],
        &[0.0, -1.0],
        &[-0.0, -0.0, -2.5],
        &[3.0e38, -3.0e38],
        &[1.0e-45, -1.0e-45, 0.0],
    ];
    const XS: [f32; 7] = [0.0, -0.0, -1.0, 1.0e-45, -1.0e-45, -3.0e38, 3.0e38];
    for row in ROWS {
        let mut s = LogSumExp::new(Poly);
        s.push_slice(row);
        for x in XS {
            ctx.feed(&s.log_prob(x));
        }
        let mut y = [0.0f32; 4];
        if let Some(y) = y.get_mut(..row.len()) {
            let r = softmax_core::log_softmax(Poly, row, y);
            ctx.feed(&u8::from(r.is_ok()));
            for v in y.iter() {
                ctx.feed(v);
            }
        }
    }
}

/// Every class of pairs, all three operations.
pub fn ops(ctx: &mut Ctx) {
    shift_signs(ctx);
    const SPECIALS: [u32; 16] = [
        0,
        SIGN,
        1,
        FRAC,
        0x0080_0000,
        0x0080_0001,
        0x3f80_0000,
        0xbf80_0000,
        0x3f7f_ffff,
        0x3f80_0001,
        0x7f7f_ffff,
        0xff7f_ffff,
        0x7f80_0000,
        0xff80_0000,
        0x7fc0_0000,
        0x4b40_00bf,
    ];
    for &a in &SPECIALS {
        for &b in &SPECIALS {
            feed3(ctx, a, b);
        }
    }
    for _ in 0..PAIRS {
        let (a, b) = (u32_of(ctx), u32_of(ctx));
        feed3(ctx, a, b);
    }
    for d in 0..=40u32 {
        for _ in 0..PAIRS / 16 {
            let ea = 1 + u32_of(ctx) % 254;
            let eb = ea.saturating_sub(d).max(1);
            let a = (u32_of(ctx) & (SIGN | FRAC)) | (ea << 23);
            let b = (u32_of(ctx) & (SIGN | FRAC)) | (eb << 23);
            feed3(ctx, a, b);
        }
    }
    for _ in 0..PAIRS {
        let a = u32_of(ctx) & 0x7f7f_ffff;
        // b within four ulps of a, opposite sign: cancellation.
        let k = (u32_of(ctx) % 9) as i32 - 4;
        let b = (a as i32).wrapping_add(k) as u32 | SIGN;
        feed3(ctx, a, b);
        // b half an ulp of a (and its neighbours), both signs: the add's ties.
        let ea = (a >> 23) & 0xff;
        if ea > 25 {
            let half = ((ea - 24) << 23) | (u32_of(ctx) % 3);
            feed3(ctx, a, half);
            feed3(ctx, a, half | SIGN);
        }
        // Short significands: k1 and k2 leading bits (k1 + k2 from 2 to 26, hidden bits
        // included), so products are exact, or need 25 or 26 bits (ties and their neighbours).
        let k1 = 1 + u32_of(ctx) % 24;
        let k2 = (1 + u32_of(ctx) % 26).saturating_sub(k1).clamp(1, 24);
        let sa = u32_of(ctx) & (0x7fff_ffff << (24 - k1)) & !SIGN;
        let sb = u32_of(ctx) & (0xffff_ffff << (24 - k2));
        feed3(ctx, sa, sb);
        // Exponent sums near the top and the bottom of the normal range.
        let e_hi = (381 - ea.min(254) as i32 + (u32_of(ctx) % 5) as i32 - 2).clamp(1, 254);
        let e_lo = (128 - ea as i32 + (u32_of(ctx) % 5) as i32 - 2).clamp(1, 254);
        let b_hi = (u32_of(ctx) & (SIGN | FRAC)) | ((e_hi as u32) << 23);
        let b_lo = (u32_of(ctx) & (SIGN | FRAC)) | ((e_lo as u32) << 23);
        feed3(ctx, a, b_hi);
        feed3(ctx, a, b_lo);
    }
    // The exp's operands: arguments in [-110, 3] against its constants and small values.
    for _ in 0..PAIRS {
        let x = (-110.0 * ctx.rng.unit() + 3.0) as f32;
        let y = u32_of(ctx) % 0x3f80_0000;
        feed3(ctx, x.to_bits(), core::f32::consts::LOG2_E.to_bits());
        feed3(ctx, x.to_bits(), y);
        feed3(ctx, 0x3f80_0000, y);
    }
}
