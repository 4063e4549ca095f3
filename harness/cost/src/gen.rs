//! The probes' deterministic inputs. Compiled into every probe image (the runtime calls it) and,
//! through `#[path]`, into the host tool, which regenerates the same values to check the
//! results: integer arithmetic only, and every float it makes is exact (a small integer times a
//! power of two), so target and host agree bit for bit.

/// Values per row of the softmax-family probes (and keys of the streaming-decoder probe).
pub const N: usize = 256;

/// Head width of the attention probes (`d = dv`).
pub const D: usize = 64;

/// Keys of the attention-tile probe: attention-core's block on 32-bit targets (`BK`, one query
/// per tile there: `TQ = 1`), so one call is exactly one tile.
pub const TILE_KEYS: usize = 128;

/// Seeds of the independent streams.
pub const SEED_F32: u32 = 0x1234_5678;
/// int8 row.
pub const SEED_I8: u32 = 0x2545_f491;
/// int16 row.
pub const SEED_I16: u32 = 0x9e37_79b9;
/// Queries of the attention probes (drawn from the f32 row).
pub const SEED_Q: u32 = 0x0bad_cafe;
/// Keys and values of the attention probes, token by token (`k_0, v_0, k_1, v_1, …`; drawn from
/// the f32 row).
pub const SEED_KV: u32 = 0x7f4a_7c15;

/// The cross-entropy probe's target class.
pub const CE_TARGET: usize = 17;

/// xorshift32 (Marsaglia): a tiny generator that is cheap on a Cortex-M0 too.
#[derive(Clone, Debug)]
pub struct Rng(u32);

impl Rng {
    /// A generator started at `seed` (not 0).
    pub const fn new(seed: u32) -> Self {
        Rng(seed)
    }

    /// The next 32 random bits.
    #[inline(always)]
    pub fn next_u32(&mut self) -> u32 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        self.0 = x;
        x
    }

    /// N(0, 1)-like values: the Irwin–Hall sum of twelve uniform 16-bit draws minus its mean,
    /// times 2⁻¹⁶ (mean 0, standard deviation 1, range ±6). Exact in f32.
    #[inline(never)]
    pub fn fill_normal(&mut self, out: &mut [f32]) {
        for o in out {
            let mut s: i32 = 0;
            for _ in 0..6 {
                let u = self.next_u32();
                s += (u & 0xffff) as i32 + (u >> 16) as i32;
            }
            *o = (s - 6 * 65536) as f32 * (1.0 / 65536.0);
        }
    }

    /// N(0, 1)-like values drawn from `pool` (with replacement, a random sign each): what the
    /// attention probes' q, K and V are made of, from the f32 row of [`Inputs`]. A draw costs a
    /// few integer instructions (a Cortex-M0 converts and scales a fresh float in software,
    /// about ten times slower, and the streaming-decoder probe needs 33k of them).
    #[inline(never)]
    pub fn fill_from(&mut self, pool: &[f32; N], out: &mut [f32]) {
        for o in out {
            let u = self.next_u32();
            *o = f32::from_bits(pool[(u >> 24) as usize].to_bits() ^ (u << 31));
        }
    }

    /// Uniform over all of int8's range.
    #[inline(never)]
    pub fn fill_i8(&mut self, out: &mut [i8]) {
        for o in out {
            *o = (self.next_u32() >> 24) as u8 as i8;
        }
    }

    /// Uniform over all of int16's range.
    #[inline(never)]
    pub fn fill_i16(&mut self, out: &mut [i16]) {
        for o in out {
            *o = (self.next_u32() >> 16) as u16 as i16;
        }
    }
}

/// The rows every image generates before its probe's setup (the empty image too, so that the
/// generator is part of the common runtime and not of a kernel's flash figure).
#[derive(Clone, Debug)]
pub struct Inputs {
    /// f32 logits, N(0, 1)-like.
    pub f32: [f32; N],
    /// int8 logits over the type's range.
    pub i8: [i8; N],
    /// int16 logits over the type's range.
    pub i16: [i16; N],
    /// The attention probes' query (`d` values drawn from `f32`).
    pub q: [f32; D],
}

impl Inputs {
    /// All zeros (the value before [`Inputs::fill`]).
    pub const ZERO: Inputs = Inputs {
        f32: [0.0; N],
        i8: [0; N],
        i16: [0; N],
        q: [0.0; D],
    };

    /// Fills every row from its seed.
    pub fn fill(&mut self) {
        Rng::new(SEED_F32).fill_normal(&mut self.f32);
        Rng::new(SEED_I8).fill_i8(&mut self.i8);
        Rng::new(SEED_I16).fill_i16(&mut self.i16);
        Rng::new(SEED_Q).fill_from(&self.f32, &mut self.q);
    }
}

/// The attention tile's 128 key rows of `D` values (`k_0 … k_127` of the [`SEED_KV`] stream, as
/// the attention-tile probe draws them, each token's value row drawn and dropped): the key rows
/// of the dot-product probes (`out` holds [`TILE_KEYS`]·[`D`] values).
#[inline(never)]
pub fn tile_keys(pool: &[f32; N], out: &mut [f32]) {
    let mut kv = Rng::new(SEED_KV);
    let mut v = [0.0; D];
    for k in out.chunks_exact_mut(D) {
        kv.fill_from(pool, k);
        kv.fill_from(pool, &mut v);
    }
}

/// The int8 probes' quantization: input scale 1/16, β = 1 (logits over [−8, 8)), the
/// parameters TFLM's Prepare (`S8Params::prepare(1.0 / 16.0, 1.0)`) computes:
/// `(input_multiplier, input_left_shift, diff_min)`. With them every value of a row of 256 is
/// above `diff_min` (−248 steps) but the few at the very bottom, so nearly every value takes the
/// exp path.
pub const S8_SCALE_RECIPROCAL: u32 = 16;
/// See [`S8_SCALE_RECIPROCAL`].
pub const S8_RAW: (i32, i32, i32) = (1 << 30, 23, -248);

/// The int16 probe's quantization: input scale 10/65536, β = 1 (the row's range of 65536 steps
/// spans the exp table's [−10, 0]): `S16Params::prepare(10.0 / 65536.0, 1.0)`'s
/// `(input_multiplier, input_left_shift)`.
pub const S16_SCALE: f32 = 10.0 / 65536.0;
/// See [`S16_SCALE`].
pub const S16_RAW: (i32, i32) = (2_147_450_880, 0);
