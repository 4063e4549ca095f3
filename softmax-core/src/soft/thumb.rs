//! The f32 multiply and add of Arm soft-float targets, in Thumb assembly.
//!
//! The multiply forms the 48-bit significand product from four 16×16-bit multiplies (`MULS`
//! keeps only the low 32 bits of a product, so the halves are 16 and 8 bits wide); the add aligns
//! with a sticky bit and six guard bits. Both round and pack in a shared tail
//! (`round_pack_return!`): about 59 and 53 instructions a call where compiler-builtins' generic
//! routines take about 105 and 70. The portable `mul_bits`/`add_bits` of the parent module are
//! the reference they follow step for step (and the ones the host tests check against the
//! hardware); everything but normal operands with a normal result goes to `__aeabi_fmul` /
//! `__aeabi_fadd` with the original operands.
//!
//! Only 16-bit Thumb instructions that ARMv6-M has; the routines are Thumb functions whatever
//! the crate's instruction set and return with `bx` (so an Arm-state caller is returned to in
//! Arm state, ARMv4T included). The symbols are weak and hidden: two copies of the crate in one
//! image link (both definitions compute the same function), and a shared object does not export
//! them.

#![allow(unsafe_code)]

/// The common end of both routines: rounds the significand `$m` (hidden bit at bit 23) to
/// nearest, ties to even, from the flags of the shift that moved the half bit of the remainder
/// into C (Z: nothing below it), adds the exponent field `$e` (the biased exponent minus 1,
/// already checked to be 0..=253; a carry out of rounding moves the exponent, up to `inf`) and
/// the sign in bit 31 of r0, and returns the result in r0. `$t` is a scratch register.
macro_rules! round_pack_return {
    ($m:literal, $e:literal, $t:literal) => {
        concat!(
            "bcc 71f\n",
            "bne 70f\n",
            "lsls ",
            $t,
            ", ",
            $m,
            ", #31\n", // a tie: up when m is odd
            "beq 71f\n",
            "70:\n",
            "adds ",
            $m,
            ", ",
            $m,
            ", #1\n",
            "71:\n",
            "lsls ",
            $e,
            ", ",
            $e,
            ", #23\n",
            "adds ",
            $m,
            ", ",
            $m,
            ", ",
            $e,
            "\n",
            "lsrs r0, r0, #31\n",
            "lsls r0, r0, #31\n",
            "orrs r0, r0, ",
            $m,
            "\n",
            "add sp, sp, #8\n",
            // `bx`, not `pop {pc}`: on ARMv4T only `bx` returns to an Arm-state caller.
            "pop {{r4, r5, r6}}\n",
            "pop {{r1}}\n",
            "bx r1",
        )
    };
}

core::arch::global_asm!(
    ".section .text.softmax_core_0_1_fmul,\"ax\",%progbits",
    ".p2align 1",
    ".weak softmax_core_0_1_fmul",
    ".hidden softmax_core_0_1_fmul",
    ".type softmax_core_0_1_fmul,%function",
    ".syntax unified",
    ".thumb",
    ".thumb_func",
    "softmax_core_0_1_fmul:",
    // a in r0, b in r1 (soft-float AAPCS); both saved for the fallback, 24 bytes: the stack
    // stays 8-byte aligned at the fallback's call.
    "push {{r0, r1, r4, r5, r6, lr}}",
    "lsls r2, r0, #1",
    "lsrs r2, r2, #24", // ea
    "beq 9f",           // zero or subnormal
    "cmp r2, #255",
    "beq 9f", // inf or NaN
    "lsls r3, r1, #1",
    "lsrs r3, r3, #24", // eb
    "beq 9f",
    "cmp r3, #255",
    "beq 9f",
    "adds r2, r2, r3", // ea + eb
    "movs r3, #1",
    "lsls r3, r3, #23", // the hidden bit
    "lsls r4, r0, #9",
    "lsrs r4, r4, #9",
    "orrs r4, r4, r3", // ma, 24 bits
    "lsls r5, r1, #9",
    "lsrs r5, r5, #9",
    "orrs r5, r5, r3",  // mb
    "eors r0, r0, r1",  // the product's sign in bit 31
    "lsrs r3, r4, #16", // ah (8 bits)
    "lsls r4, r4, #16",
    "lsrs r4, r4, #16", // al (16 bits)
    "lsrs r6, r5, #16", // bh
    "lsls r5, r5, #16",
    "lsrs r5, r5, #16", // bl
    "movs r1, r4",
    "muls r1, r5, r1", // al·bl
    "muls r4, r6, r4", // al·bh
    "muls r6, r3, r6", // ah·bh
    "muls r5, r3, r5", // ah·bl
    "adds r4, r4, r5", // the middle sum, < 2^25
    "lsls r5, r4, #16",
    "lsrs r4, r4, #16",
    "adds r1, r1, r5", // lo = P mod 2^32, with its carry
    "adcs r4, r4, r6", // hi = P div 2^32, in [2^14, 2^16)
    "lsrs r3, r4, #15",
    "beq 2f",
    // P >= 2^47: m = P >> 24, the exponent one higher.
    "adds r2, r2, #1",
    "lsls r4, r4, #8",
    "lsrs r3, r1, #24",
    "orrs r4, r4, r3",
    "lsls r1, r1, #8", // the bits below m, top-aligned
    "b 3f",
    "2:",
    // P < 2^47: m = P >> 23.
    "lsls r4, r4, #9",
    "lsrs r3, r1, #23",
    "orrs r4, r4, r3",
    "lsls r1, r1, #9",
    "3:",
    "subs r2, r2, #128", // the biased exponent minus 1
    "cmp r2, #253",
    "bhi 9f",          // not a normal result: subnormal, zero or overflow
    "lsls r1, r1, #1", // C: the half bit; Z: nothing below it
    round_pack_return!("r4", "r2", "r3"),
    "9:",
    "pop {{r0, r1}}",
    "bl __aeabi_fmul",
    "pop {{r4, r5, r6}}",
    "pop {{r1}}",
    "bx r1",
    ".size softmax_core_0_1_fmul, . - softmax_core_0_1_fmul",
    ".text",
);

core::arch::global_asm!(
    ".section .text.softmax_core_0_1_fadd,\"ax\",%progbits",
    ".p2align 1",
    ".weak softmax_core_0_1_fadd",
    ".hidden softmax_core_0_1_fadd",
    ".type softmax_core_0_1_fadd,%function",
    ".syntax unified",
    ".thumb",
    ".thumb_func",
    "softmax_core_0_1_fadd:",
    "push {{r0, r1, r4, r5, r6, lr}}",
    "lsls r2, r0, #1", // |a| << 1
    "lsls r3, r1, #1", // |b| << 1
    "cmp r2, r3",
    "bhs 2f",
    // Order the operands so that |a| >= |b|.
    "movs r4, r0",
    "movs r0, r1",
    "movs r1, r4",
    "movs r4, r2",
    "movs r2, r3",
    "movs r3, r4",
    "2:",
    "lsrs r4, r3, #24", // eb
    "beq 7f",           // b is zero or subnormal
    "lsrs r5, r2, #24", // ea >= eb >= 1
    "cmp r5, #255",
    "beq 9f",          // a is inf or NaN
    "subs r6, r5, r4", // d = ea - eb
    // Significands with the hidden bit at bit 29: six guard bits below the last place.
    "movs r4, #1",
    "lsls r4, r4, #29",
    "lsls r2, r0, #9",
    "lsrs r2, r2, #3",
    "orrs r2, r2, r4", // ma
    "lsls r3, r1, #9",
    "lsrs r3, r3, #3",
    "orrs r3, r3, r4", // mb
    "eors r1, r1, r0", // bit 31: the signs differ
    "cmp r6, #0",
    "beq 3f",
    "cmp r6, #30",
    "bhs 8f",
    // mb >> d, jamming the bits shifted out into bit 0.
    "movs r4, r3",
    "lsrs r3, r3, r6",
    "negs r6, r6",
    "adds r6, r6, #32",
    "lsls r4, r4, r6", // the bits shifted out, at the top (Z: none)
    "beq 3f",
    "movs r4, #1",
    "orrs r3, r3, r4",
    "3:",
    "cmp r1, #0",
    "bmi 4f",
    // Same signs: at most one carry into bit 30.
    "adds r2, r2, r3",
    "lsrs r4, r2, #30",
    "beq 5f",
    "movs r4, #1",
    "ands r4, r4, r2",
    "lsrs r2, r2, #1",
    "orrs r2, r2, r4",
    "adds r5, r5, #1",
    "b 5f",
    "4:",
    // Different signs: |a| >= |b|, so no borrow; more than one place cancels only when d <= 1,
    // and then mb was shifted exactly.
    "subs r2, r2, r3",
    "beq 6f",
    "lsrs r4, r2, #29",
    "bne 5f",
    "42:",
    "lsls r2, r2, #1",
    "subs r5, r5, #1",
    "lsrs r4, r2, #29",
    "beq 42b",
    "5:",
    "subs r5, r5, #1", // the biased exponent minus 1
    "cmp r5, #253",
    "bhi 9f",           // subnormal or overflow: the toolchain's routine
    "lsrs r3, r2, #6",  // m
    "lsls r4, r2, #27", // C: the half bit; Z: nothing below it
    round_pack_return!("r3", "r5", "r4"),
    "6:",
    // An exact cancellation: +0.
    "movs r0, #0",
    "add sp, sp, #8",
    "pop {{r4, r5, r6}}",
    "pop {{r1}}",
    "bx r1",
    "7:",
    // b is zero (else subnormal: the toolchain's routine).
    "cmp r3, #0",
    "bne 9f",
    "movs r4, #255",
    "lsls r4, r4, #24",
    "cmp r2, r4",
    "bhi 9f", // a is NaN
    "cmp r2, #0",
    "bne 72f",
    "ands r0, r0, r1", // two zeros: -0 only when both are -0
    "72:",
    "add sp, sp, #8",
    "pop {{r4, r5, r6}}",
    "pop {{r1}}",
    "bx r1",
    "8:",
    // d >= 30: all of mb lies below the guard bits.
    "movs r3, #1",
    "b 3b",
    "9:",
    "pop {{r0, r1}}",
    "bl __aeabi_fadd",
    "pop {{r4, r5, r6}}",
    "pop {{r1}}",
    "bx r1",
    ".size softmax_core_0_1_fadd, . - softmax_core_0_1_fadd",
    ".text",
);

unsafe extern "C" {
    /// The routine above: `a · b` rounded to nearest, ties to even.
    fn softmax_core_0_1_fmul(a: f32, b: f32) -> f32;
    /// The routine above: `a + b` rounded to nearest, ties to even.
    fn softmax_core_0_1_fadd(a: f32, b: f32) -> f32;
}

/// `a · b` with the same bits as the f32 operator.
#[inline(always)]
pub(crate) fn mul(a: f32, b: f32) -> f32 {
    // SAFETY: the routine follows the soft-float AAPCS: arguments in r0 and r1, the result in
    // r0; r4–r6 saved and restored; r1–r3 (and, in the fallback's compiler-builtins call, r12
    // and the flags) used only as caller-saved scratch; the return address saved with them and
    // returned to with `bx`; the stack 8-byte aligned at its one call. It reads and writes no
    // memory but the 24 bytes it pushes.
    unsafe { softmax_core_0_1_fmul(a, b) }
}

/// `a + b` with the same bits as the f32 operator.
#[inline(always)]
pub(crate) fn add(a: f32, b: f32) -> f32 {
    // SAFETY: as for `mul`.
    unsafe { softmax_core_0_1_fadd(a, b) }
}

/// `a − b` = `a + (−b)` with the same bits as the f32 operator (IEEE defines subtraction so;
/// compiler-builtins' `__aeabi_fsub` is the same sign flip and add).
#[inline(always)]
pub(crate) fn sub(a: f32, b: f32) -> f32 {
    add(a, f32::from_bits(b.to_bits() ^ 0x8000_0000))
}
