//! The pieces the forward pass, the backward pass and the decoder share: the key-block grid, the
//! tile of queries with the key blocks it needs, and the final score of a key.

use softmax_core::backend::Backend;
use softmax_core::{special, Float};

use crate::options::{for_each_block, Allowed, Runs};

/// Keys per block. Blocks sit on a fixed grid of key positions (`g·BK .. (g+1)·BK`), the same
/// in the full computation and in the decoder, so that both fold the same scores in the same
/// blocks into the online softmax: the decoder's outputs equal the full computation's bit for
/// bit. It must be the same on every target (the block boundaries are part of the rounding).
///
/// 128 rather than 64: each block pays a fixed cost per query (the online step's max, lane
/// tree and rescale of the output accumulator, one call of each product). At 128, prefill at
/// H = 8, T = S = 1024, D = 64 took 8.25 against 8.88 ns per pair unmasked and 4.22 against
/// 4.57 causal, and single-query decode (n = 4096, d = 128) reached 71–75% of a plain read of
/// K and V against 67–70% (interleaved runs). 256 measured another 4% less on prefill, but its
/// scratch does not fit the 16 KiB of RAM of the smallest firmware target.
pub(crate) const BK: usize = 128;

/// Queries per tile: they share every load of a key block in the score product. Any value
/// gives the same bits (each query's arithmetic does not depend on its neighbours); one on
/// 32-bit targets, where the tile's scores live on a small stack (`TQ·BK` values, four such
/// buffers in the backward pass).
pub(crate) const TQ: usize = if cfg!(target_pointer_width = "64") {
    8
} else {
    1
};

/// `x` as `F` (through f64: exact below 2^53, so every path that converts a distance rounds it
/// once, the same way).
#[inline(always)]
pub(crate) fn from_u64<F: Float>(x: u64) -> F {
    F::from_f64(x as f64)
}

/// Slice `i` of length `n` of `x` (empty if out of range; never panics).
#[inline(always)]
pub(crate) fn part<T>(x: &[T], i: usize, n: usize) -> &[T] {
    match (
        i.checked_mul(n),
        i.checked_add(1).and_then(|j| j.checked_mul(n)),
    ) {
        (Some(a), Some(b)) => x.get(a..b).unwrap_or(&[]),
        _ => &[],
    }
}

/// Mutable slice `i` of length `n` of `x` (empty if out of range).
#[inline(always)]
pub(crate) fn part_mut<T>(x: &mut [T], i: usize, n: usize) -> &mut [T] {
    match (
        i.checked_mul(n),
        i.checked_add(1).and_then(|j| j.checked_mul(n)),
    ) {
        (Some(a), Some(b)) => x.get_mut(a..b).unwrap_or(&mut []),
        _ => &mut [],
    }
}

/// `x[a..b]` for key indices (empty if out of range).
#[inline(always)]
pub(crate) fn keys_of<T>(x: &[T], a: u64, b: u64, width: usize) -> &[T] {
    let (a, b) = (a as usize, b as usize);
    match (a.checked_mul(width), b.checked_mul(width)) {
        (Some(a), Some(b)) => x.get(a..b).unwrap_or(&[]),
        _ => &[],
    }
}

/// The score modifiers of one query row (one head, one query position).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Mods<F> {
    pub(crate) scale: F,
    pub(crate) cap: Option<F>,
    /// ALiBi slope of the head.
    pub(crate) slope: Option<F>,
    /// The query's position (the keys' positions are `j + koff`).
    pub(crate) qp: u64,
}

/// Turns the dot products `s` of keys `kp0 ..` (positions) into final scores in place:
/// `cap(scale·s) + bias + alibi`, then `-inf` in the gap between the runs and where `keep` is
/// false. The operations and their order are the same on every path (forward, backward,
/// decoder), so every path sees the same scores. With `fac`, also writes the derivative of the
/// score with respect to the dot product: `scale·cap'`.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(crate) fn finalize<F: Float, B: Backend<F>>(
    backend: B,
    s: &mut [F],
    m: &Mods<F>,
    kp0: u64,
    bias: Option<&[F]>,
    keep: Option<&[bool]>,
    gap: Option<(usize, usize)>,
    fac: Option<&mut [F]>,
) {
    for x in s.iter_mut() {
        *x *= m.scale;
    }
    match m.cap {
        Some(c) => {
            if let Some(fac) = fac {
                for (f, &z) in fac.iter_mut().zip(s.iter()) {
                    *f = m.scale * softcap_slope::<F, B>(z, c);
                }
            }
            for x in s.iter_mut() {
                *x = special::softcap(backend, *x, c);
            }
        }
        None => {
            if let Some(fac) = fac {
                fac.fill(m.scale);
            }
        }
    }
    if let Some(b) = bias {
        for (x, &b) in s.iter_mut().zip(b) {
            *x += b;
        }
    }
    if let Some(slope) = m.slope {
        let mut kp = kp0;
        for x in s.iter_mut() {
            let dist = m.qp.abs_diff(kp);
            *x -= slope * from_u64::<F>(dist);
            kp = kp.wrapping_add(1);
        }
    }
    if let Some((a, b)) = gap {
        if let Some(g) = s.get_mut(a..b) {
            g.fill(F::NEG_INFINITY);
        }
    }
    if let Some(keep) = keep {
        for (x, &k) in s.iter_mut().zip(keep) {
            if !k {
                *x = F::NEG_INFINITY;
            }
        }
    }
}

/// The derivative of the soft-cap `c·tanh(z/c)` with respect to `z`: `sech²(z/c)`, as
/// `4e/(1 + e)²` with `e = e^(−2|z/c|)`. Unlike `1 − tanh²` (softmax-core's `softcap_grad`,
/// from the capped value) it keeps its relative precision where the cap saturates (`1 − tanh²`
/// cancels: at `z/c = 10` it is 8e-9 and `1 − t²` has lost 27 of f64's 53 bits). Within a few
/// ULP for every `z`; 0 for infinite `z`.
#[inline(always)]
pub(crate) fn softcap_slope<F: Float, B: Backend<F>>(z: F, c: F) -> F {
    let x = (z / c).abs();
    let e = B::exp(-(x + x));
    let d = F::ONE + e;
    let four = F::TWO + F::TWO;
    four * e / (d * d)
}

/// The allowed keys of the rows of a tile and the blocks they need.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Tile {
    pub(crate) rows: usize,
    pub(crate) allowed: [Allowed; TQ],
    union: Allowed,
}

impl Tile {
    /// A tile of `rows <= TQ` queries with the given allowed keys (`allowed(r)` for row `r`).
    #[inline(always)]
    pub(crate) fn new(rows: usize, keys: (u64, u64), allowed: impl Fn(usize) -> Allowed) -> Self {
        let rows = rows.min(TQ);
        let mut al = [Allowed::default(); TQ];
        let mut union = Allowed {
            s0: keys.0,
            s1: keys.0,
            m0: u64::MAX,
            m1: 0,
        };
        for (r, a) in al.iter_mut().enumerate().take(rows) {
            *a = allowed(r);
            union.s1 = union.s1.max(a.s1);
            if a.m0 < a.m1 {
                union.m0 = union.m0.min(a.m0);
                union.m1 = union.m1.max(a.m1);
            }
        }
        Tile {
            rows,
            allowed: al,
            union,
        }
    }

    /// Calls `f(g0, spans, (u0, u1))` for every key block `[g0, g1)` some row needs, in
    /// ascending order: `spans[r]` is row `r`'s runs in the block, `[u0, u1)` the union of the
    /// rows' spans (what the block's score product covers).
    #[inline(always)]
    pub(crate) fn for_each_block(
        &self,
        keys: (u64, u64),
        mut f: impl FnMut(&[Option<Runs>; TQ], (u64, u64)),
    ) {
        let rows = self.rows;
        let al = &self.allowed;
        for_each_block(&self.union, BK as u64, keys, |g0, g1| {
            let mut spans = [None; TQ];
            let (mut u0, mut u1) = (u64::MAX, 0u64);
            for (sp, a) in spans.iter_mut().zip(al.iter()).take(rows) {
                *sp = a.in_block(g0, g1);
                if let Some(r) = sp {
                    let (a, b) = r.span();
                    u0 = u0.min(a);
                    u1 = u1.max(b);
                }
            }
            if u0 < u1 {
                f(&spans, (u0, u1));
            }
        });
    }
}

/// The offsets of a gap within a span starting at key `f`.
#[inline(always)]
pub(crate) fn gap_in(runs: &Runs, f: u64) -> Option<(usize, usize)> {
    runs.gap()
        .map(|(a, b)| ((a - f) as usize, (b - f) as usize))
}

/// `chunks_exact` without its chunk-size assertion and length division: the rows of a slice,
/// `n` values each (a ragged end dropped; nothing when `n = 0`). Those panic paths survived in
/// the panic-freedom probe wherever `Iterator::zip` was not inlined (opt-level `s`).
pub(crate) trait Rows<T: 'static> {
    /// The rows of `n` values.
    fn rows(&self, n: usize) -> impl Iterator<Item = &[T]>;
    /// The rows of `n` values, mutable.
    fn rows_mut(&mut self, n: usize) -> impl Iterator<Item = &mut [T]>;
}

impl<T: 'static> Rows<T> for [T] {
    #[inline(always)]
    fn rows(&self, n: usize) -> impl Iterator<Item = &[T]> {
        let mut rest = self;
        core::iter::from_fn(move || {
            if n == 0 {
                return None;
            }
            let (row, tail) = rest.split_at_checked(n)?;
            rest = tail;
            Some(row)
        })
    }

    #[inline(always)]
    fn rows_mut(&mut self, n: usize) -> impl Iterator<Item = &mut [T]> {
        let mut rest = self;
        core::iter::from_fn(move || {
            if n == 0 {
                return None;
            }
            let (row, tail) = core::mem::take(&mut rest).split_at_mut_checked(n)?;
            rest = tail;
            Some(row)
        })
    }
}
