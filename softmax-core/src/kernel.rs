//! The skeleton: every max / exp / sum / normalise loop of the crate, once.
//!
//! A row is read through a [`Load`] (plain, keep-mask or additive bias, applied as the values are
//! loaded) and a [`Scale`] (how the temperature enters: not at all, divide first, or subtract
//! first). All loops walk the row in chunks of [`LANES`] values (`as_chunks`, so there are no
//! bounds checks and LLVM vectorises each chunk), with the ragged end padded by `-inf`, which is
//! neutral for every reduction here. Reductions keep one accumulator per lane and combine the
//! lanes in a fixed order, so the result does not depend on the target's vector width.

use crate::backend::Backend;
use crate::float::{fast_two_sum, select, two_sum};
use crate::Float;

/// Fixed number of accumulator lanes in every reduction. It is part of the numeric contract:
/// changing it changes result bits (not accuracy).
pub const LANES: usize = 16;

// ------------------------------------------------------------------------------------------------
// Loading a row
// ------------------------------------------------------------------------------------------------

/// A row of logits as the kernels see it: masked entries already `-inf`.
pub(crate) trait Load<F: Float>: Copy {
    /// The row, value by value (for elementwise passes, which need no lanes).
    fn iter(self) -> impl Iterator<Item = F>;
    /// Full chunks of the row (for reductions, which keep one accumulator per lane).
    fn chunks(self) -> impl Iterator<Item = [F; LANES]>;
    /// The ragged end (`len % LANES` values) padded with `-inf`; `None` when the row is a whole
    /// number of chunks.
    fn tail(self) -> Option<[F; LANES]>;
}

#[inline(always)]
fn pad<F: Float>(vals: impl ExactSizeIterator<Item = F>) -> Option<[F; LANES]> {
    if vals.len() == 0 {
        return None;
    }
    let mut out = [F::NEG_INFINITY; LANES];
    for (o, v) in out.iter_mut().zip(vals) {
        *o = v;
    }
    Some(out)
}

/// The row as given.
#[derive(Clone, Copy)]
pub(crate) struct Plain<'a, F>(pub &'a [F]);

impl<F: Float> Load<F> for Plain<'_, F> {
    #[inline(always)]
    fn iter(self) -> impl Iterator<Item = F> {
        self.0.iter().copied()
    }
    #[inline(always)]
    fn chunks(self) -> impl Iterator<Item = [F; LANES]> {
        self.0.as_chunks::<LANES>().0.iter().copied()
    }
    #[inline(always)]
    fn tail(self) -> Option<[F; LANES]> {
        pad(self.0.as_chunks::<LANES>().1.iter().copied())
    }
}

/// `keep[i] == false` makes entry `i` behave as `-inf`, whatever its value (NaN included).
#[derive(Clone, Copy)]
pub(crate) struct Keep<'a, F>(pub &'a [F], pub &'a [bool]);

impl<F: Float> Load<F> for Keep<'_, F> {
    #[inline(always)]
    fn iter(self) -> impl Iterator<Item = F> {
        self.0
            .iter()
            .zip(self.1)
            .map(|(&x, &k)| select(k, x, F::NEG_INFINITY))
    }
    #[inline(always)]
    fn chunks(self) -> impl Iterator<Item = [F; LANES]> {
        let x = self.0.as_chunks::<LANES>().0.iter();
        let k = self.1.as_chunks::<LANES>().0.iter();
        x.zip(k)
            .map(|(x, k)| core::array::from_fn(|i| select(k[i], x[i], F::NEG_INFINITY)))
    }
    #[inline(always)]
    fn tail(self) -> Option<[F; LANES]> {
        let x = self.0.as_chunks::<LANES>().1.iter();
        let k = self.1.as_chunks::<LANES>().1.iter();
        pad(x.zip(k).map(|(&x, &k)| select(k, x, F::NEG_INFINITY)))
    }
}

/// `x[i] + bias[i]`: the additive-mask form (`bias = -inf` masks a finite logit).
#[derive(Clone, Copy)]
pub(crate) struct Bias<'a, F>(pub &'a [F], pub &'a [F]);

impl<F: Float> Load<F> for Bias<'_, F> {
    #[inline(always)]
    fn iter(self) -> impl Iterator<Item = F> {
        self.0.iter().zip(self.1).map(|(&x, &b)| x + b)
    }
    #[inline(always)]
    fn chunks(self) -> impl Iterator<Item = [F; LANES]> {
        let x = self.0.as_chunks::<LANES>().0.iter();
        let b = self.1.as_chunks::<LANES>().0.iter();
        x.zip(b).map(|(x, b)| core::array::from_fn(|i| x[i] + b[i]))
    }
    #[inline(always)]
    fn tail(self) -> Option<[F; LANES]> {
        let x = self.0.as_chunks::<LANES>().1.iter();
        let b = self.1.as_chunks::<LANES>().1.iter();
        pad(x.zip(b).map(|(&x, &b)| x + b))
    }
}

/// Visit every chunk of a load, the padded tail last. `f` is called from two sites: give it
/// `#[inline(always)]` so it is inlined into the loop.
#[inline(always)]
pub(crate) fn for_each_chunk<F: Float, L: Load<F>>(src: L, mut f: impl FnMut(&[F; LANES])) {
    for c in src.chunks() {
        f(&c);
    }
    if let Some(t) = src.tail() {
        f(&t);
    }
}

// ------------------------------------------------------------------------------------------------
// Temperature
// ------------------------------------------------------------------------------------------------

/// How a temperature τ enters: the kernels need `d = (x − max)/τ` as an exact difference
/// (`hi + lo`) divided once, so the only rounding is that of the quotient (relative error
/// `2⁻²⁴·|d|`, proportional to `|x − max|/τ`, not to `|x|/τ` as dividing first would give), and
/// nothing may overflow where the exact `(x − max)/τ` does not.
pub(crate) trait Scale<F: Float>: Copy {
    /// `d = (x − m)/τ` as `hi + lo` for `x <= m` (`lo` is NaN when `hi = -inf`, which
    /// every consumer handles: `exp_shifted` ignores it, the others only use `hi`).
    fn shift(self, p: F, m: F) -> (F, F);
    /// logsumexp from the maximum `m` of the raw row and `ln Σ e^d`.
    fn lse(self, m: F, ln_sum: F) -> F;
    /// `v/τ` (one rounding; `v` itself for τ = 1).
    fn scale(self, v: F) -> F;
    /// τ > 1: dividing by τ shrinks, so a quotient can be finite where the raw difference
    /// overflows.
    fn above_one(self) -> bool;
}

/// `a − b = hi + lo` exactly: Fast2Sum with the operand of larger magnitude first (cheaper than
/// TwoSum on the vector add pipes, and as exact).
#[inline(always)]
pub(crate) fn exact_diff<F: Float>(a: F, b: F) -> (F, F) {
    let a_big = a.abs() >= b.abs();
    let (p, q) = (select(a_big, a, -b), select(a_big, -b, a));
    // When the difference is -inf the tail is NaN; `Backend::exp_shifted` ignores it there.
    fast_two_sum(p, q)
}

/// τ = 1.
#[derive(Clone, Copy)]
pub(crate) struct Unit;
impl<F: Float> Scale<F> for Unit {
    #[inline(always)]
    fn shift(self, p: F, m: F) -> (F, F) {
        exact_diff(p, m)
    }
    #[inline(always)]
    fn lse(self, m: F, ln_sum: F) -> F {
        m + ln_sum
    }
    #[inline(always)]
    fn scale(self, v: F) -> F {
        v
    }
    #[inline(always)]
    fn above_one(self) -> bool {
        false
    }
}

/// τ ≠ 1: `(x·h − m·h)/(τ·h)` with `h = ½` for τ > 1 and `h = 1` for τ < 1.
///
/// Halving is exact (barring subnormals, where it moves a value by at most 2⁻¹⁵⁰) and the halved
/// difference cannot overflow, so rows spanning more than the float range still give the exact
/// quotient when τ > 1, as CONFORMANCE.md requires; for τ < 1 an overflowing difference means the
/// exact quotient overflows too (to `-inf`, whose exp is the true limit 0). Both parts are
/// divided, not multiplied by `1/τ`, which overflows for τ < 1/MAX (and `0·inf` is NaN). One type
/// for both cases (a run-time factor, one multiply) keeps the code size of every kernel at two
/// temperature variants, not three.
#[derive(Clone, Copy)]
pub(crate) struct Scaled<F> {
    h: F,
    tau_h: F,
    tau: F,
}
impl<F: Float> Scaled<F> {
    #[inline(always)]
    pub(crate) fn new(tau: F) -> Self {
        let h = if tau > F::ONE { F::HALF } else { F::ONE };
        Scaled {
            h,
            tau_h: tau * h,
            tau,
        }
    }
}
impl<F: Float> Scale<F> for Scaled<F> {
    #[inline(always)]
    fn shift(self, p: F, m: F) -> (F, F) {
        let (hi, lo) = exact_diff(p * self.h, m * self.h);
        (hi / self.tau_h, lo / self.tau_h)
    }
    #[inline(always)]
    fn lse(self, m: F, ln_sum: F) -> F {
        m / self.tau + ln_sum
    }
    #[inline(always)]
    fn scale(self, v: F) -> F {
        v / self.tau
    }
    #[inline(always)]
    fn above_one(self) -> bool {
        self.h < F::ONE
    }
}

// ------------------------------------------------------------------------------------------------
// Reductions
// ------------------------------------------------------------------------------------------------

/// Result of the max pass over a row.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Scan<F> {
    /// Max over the row (`-inf` if every entry is `-inf`/masked).
    pub max: F,
    /// Some entry is NaN (masked entries excluded).
    pub nan: bool,
}

/// The max pass.
#[inline(always)]
pub(crate) fn scan<F: Float, L: Load<F>>(src: L) -> Scan<F> {
    let mut m = [F::NEG_INFINITY; LANES];
    let mut nan = [false; LANES];
    for_each_chunk(
        src,
        #[inline(always)]
        |c| {
            for ((m, nan), &x) in m.iter_mut().zip(nan.iter_mut()).zip(c) {
                let p = x;
                *nan |= p.is_nan();
                *m = select(p > *m, p, *m);
            }
        },
    );
    let mut max = m[0];
    for &v in &m[1..] {
        max = select(v > max, v, max);
    }
    Scan {
        max,
        nan: nan.iter().any(|&b| b),
    }
}

/// Chunks summed plainly into per-lane block sums before those are folded into the compensated
/// totals.
const BLOCK: usize = 16;

/// Per-lane compensated totals (TwoSum: running sum and the exact sum of its rounding errors).
#[derive(Clone, Copy)]
pub(crate) struct Totals<F> {
    s: [F; LANES],
    c: [F; LANES],
}

impl<F: Float> Totals<F> {
    const ZERO: Self = Totals {
        s: [F::ZERO; LANES],
        c: [F::ZERO; LANES],
    };

    /// The total as an unevaluated sum `hi + lo` with `hi = fl(hi + lo)`; lanes combined in a
    /// fixed order.
    #[inline(always)]
    fn finish(self) -> (F, F) {
        let mut hi = F::ZERO;
        let mut lo = F::ZERO;
        for (&s, &c) in self.s.iter().zip(&self.c) {
            let (v, e) = two_sum(hi, s);
            hi = v;
            lo += e + c;
        }
        // An infinite total has no meaningful compensation (TwoSum's error term of an infinite
        // sum is `inf − inf` = NaN): the sum of terms including +inf is +inf.
        if hi.is_finite() {
            two_sum(hi, lo)
        } else {
            (hi, F::ZERO)
        }
    }
}

/// Folds `K` arrays of block lane sums into their totals. Out of line, once per [`BLOCK`] chunks:
/// the hot loops keep their block sums in registers and never touch the totals.
#[inline(never)]
fn fold_block<F: Float, const K: usize>(t: &mut [Totals<F>; K], part: &[[F; LANES]; K]) {
    for (t, part) in t.iter_mut().zip(part) {
        for ((s, c), &p) in t.s.iter_mut().zip(t.c.iter_mut()).zip(part) {
            let (v, e) = two_sum(*s, p);
            *s = v;
            *c += e;
        }
    }
}

#[inline(always)]
fn add_lanes<F: Float, const K: usize>(part: &mut [[F; LANES]; K], v: &[[F; LANES]; K]) {
    for (p, v) in part.iter_mut().zip(v) {
        for (p, &v) in p.iter_mut().zip(v) {
            *p += v;
        }
    }
}

/// Sums `K` per-chunk quantities `f(chunk)` over `chunks` and then `tail`, each as `hi + lo`.
///
/// Blocked and compensated: each lane adds at most [`BLOCK`] values plainly (error at most 15
/// units of roundoff of that block sum), and the block sums go into the per-lane TwoSum totals.
/// The error does not grow with the row length (a plain running sum of 16M values drifts by
/// ~1e-3), and the inner loop costs one add per value and quantity. `f` is called from two
/// sites: give it `#[inline(always)]`.
#[inline(always)]
pub(crate) fn sums<F: Float, T, const K: usize>(
    mut chunks: impl Iterator<Item = T>,
    tail: Option<T>,
    mut f: impl FnMut(&T) -> [[F; LANES]; K],
) -> [(F, F); K] {
    let mut tot = [Totals::ZERO; K];
    let mut part;
    loop {
        part = [[F::ZERO; LANES]; K];
        let mut n = 0;
        for c in chunks.by_ref().take(BLOCK) {
            add_lanes(&mut part, &f(&c));
            n += 1;
        }
        if n < BLOCK {
            break;
        }
        fold_block(&mut tot, &part);
    }
    // The last, partial block has room for the tail: fold both at once.
    if let Some(t) = tail {
        add_lanes(&mut part, &f(&t));
    }
    fold_block(&mut tot, &part);
    tot.map(Totals::finish)
}

/// `e^d` for one chunk, `d = shift(x, m) <= 0`.
#[inline(always)]
pub(crate) fn exp_chunk<F: Float, B: Backend<F>, S: Scale<F>>(
    s: S,
    m: F,
    x: &[F; LANES],
) -> [F; LANES] {
    let mut e = [F::ZERO; LANES];
    for (e, &x) in e.iter_mut().zip(x) {
        let (hi, lo) = s.shift(x, m);
        *e = B::exp_shifted(hi, lo);
    }
    e
}

/// `e^d` for one chunk split in two: the entries at the maximum (`d = 0` exactly, since the shift
/// is exact) are counted in the second array, the others' `e^d` are in the first.
#[inline(always)]
pub(crate) fn exp_chunk_split<F: Float, B: Backend<F>, S: Scale<F>>(
    s: S,
    m: F,
    x: &[F; LANES],
) -> [[F; LANES]; 2] {
    let mut e = [F::ZERO; LANES];
    let mut k = [F::ZERO; LANES];
    for ((e, k), &x) in e.iter_mut().zip(k.iter_mut()).zip(x) {
        let (hi, lo) = s.shift(x, m);
        let at_max = hi == F::ZERO;
        *e = select(at_max, F::ZERO, B::exp_shifted(hi, lo));
        *k = select(at_max, F::ONE, F::ZERO);
    }
    [e, k]
}

/// `Σ e^d` over a row whose max is the finite `m`, as `hi + lo`, with `Σ e^d − 1` kept to full
/// relative precision: the maxima contribute an exact count and only the other terms are summed,
/// so when they are tiny (a peaked row) they are not rounded away against the 1s. That matters
/// to the entropy, to log-probabilities near 0 and to KL; softmax itself only needs the sum to
/// 1e-7 relative and uses the one-array sum in its fused store pass.
#[inline(always)]
pub(crate) fn sum_exp<F: Float, B: Backend<F>, L: Load<F>, S: Scale<F>>(
    src: L,
    s: S,
    m: F,
) -> (F, F) {
    let [(e_hi, e_lo), (k, _)] = sums(
        src.chunks(),
        src.tail(),
        #[inline(always)]
        |c| exp_chunk_split::<F, B, S>(s, m, c),
    );
    let (hi, lo) = two_sum(k, e_hi);
    two_sum(hi, lo + e_lo)
}

/// Number of entries equal to `+inf`.
#[inline(always)]
pub(crate) fn count_pos_inf<F: Float, L: Load<F>>(src: L) -> usize {
    let mut n = 0usize;
    for_each_chunk(
        src,
        #[inline(always)]
        |c| n += c.iter().filter(|&&x| x == F::INFINITY).count(),
    );
    n
}

/// `ln(hi + lo)` for a positive compensated sum, accurate also when the sum is `1 + tiny`
/// (then `hi − 1` is exact and `ln(1 + t) = t·ln(u)/(u − 1)` with `u = fl(1 + t)`, Goldberg's
/// log1p; the tiny part of the sum, including `lo`, is kept instead of rounding into 1).
#[inline]
pub(crate) fn ln_sum<F: Float, B: Backend<F>>(hi: F, lo: F) -> F {
    if hi >= F::HALF && hi <= F::TWO {
        let t = (hi - F::ONE) + lo;
        let u = F::ONE + t;
        if u == F::ONE {
            t
        } else {
            B::ln(u) * (t / (u - F::ONE))
        }
    } else {
        B::ln(hi) + lo / hi
    }
}

// ------------------------------------------------------------------------------------------------
// Destinations
// ------------------------------------------------------------------------------------------------

/// Where a row op reads its input and writes its output: a separate source, or in place.
///
/// Elementwise passes (`map`, `update`) take per-value closures and run as plain unit-stride
/// loops; only `map_sum`, which reduces, works in lane chunks (its closure is called from two
/// sites, full chunks and the padded tail: give it `#[inline(always)]`).
pub(crate) trait Io<F: Float> {
    /// The input row, as a load.
    type Src<'b>: Load<F>
    where
        Self: 'b;
    /// The input row.
    fn src(&self) -> Self::Src<'_>;
    /// `out_i = f(input_i)`.
    fn map(&mut self, f: impl FnMut(F) -> F);
    /// `out = f(input)` chunk by chunk, and the compensated sum of the stored values.
    fn map_sum(&mut self, f: impl FnMut(&[F; LANES]) -> [F; LANES]) -> (F, F);
    /// `out_i = f(out_i)`.
    fn update(&mut self, f: impl FnMut(F) -> F);
}

/// The block loop of [`Io::map_sum`] over (output chunk, input chunk) pairs; returns the totals
/// of the full blocks and the lane sums of the last, partial block (not yet folded).
#[inline(always)]
fn map_sum_pairs<'o, F: Float + 'o>(
    mut pairs: impl Iterator<Item = (&'o mut [F; LANES], [F; LANES])>,
    mut f: impl FnMut(&[F; LANES]) -> [F; LANES],
) -> ([Totals<F>; 1], [[F; LANES]; 1]) {
    let mut tot = [Totals::ZERO; 1];
    loop {
        let mut part = [[F::ZERO; LANES]; 1];
        let mut n = 0;
        for (o, c) in pairs.by_ref().take(BLOCK) {
            let v = f(&c);
            *o = v;
            add_lanes(&mut part, &[v]);
            n += 1;
        }
        if n < BLOCK {
            return (tot, part);
        }
        fold_block(&mut tot, &part);
    }
}

/// Runs `f` on the padded tail (if any), stores the real part, and finishes the sum.
#[inline(always)]
fn finish_map_sum<F: Float>(
    (tot, mut part): ([Totals<F>; 1], [[F; LANES]; 1]),
    tail_in: Option<[F; LANES]>,
    tail_out: &mut [F],
    mut f: impl FnMut(&[F; LANES]) -> [F; LANES],
) -> (F, F) {
    if let Some(t) = tail_in {
        let v = f(&t);
        for (o, &v) in tail_out.iter_mut().zip(&v) {
            *o = v;
        }
        add_lanes(&mut part, &[v]);
    }
    let mut tot = tot;
    fold_block(&mut tot, &part);
    let [t] = tot;
    t.finish()
}

/// Read from `src`, write to `out` (same length, checked by the caller).
pub(crate) struct OutOfPlace<'o, F, L> {
    pub src: L,
    pub out: &'o mut [F],
}

impl<F: Float, L: Load<F>> Io<F> for OutOfPlace<'_, F, L> {
    type Src<'b>
        = L
    where
        Self: 'b;
    #[inline(always)]
    fn src(&self) -> L {
        self.src
    }
    #[inline(always)]
    fn map(&mut self, mut f: impl FnMut(F) -> F) {
        for (o, x) in self.out.iter_mut().zip(self.src.iter()) {
            *o = f(x);
        }
    }
    #[inline(always)]
    fn map_sum(&mut self, mut f: impl FnMut(&[F; LANES]) -> [F; LANES]) -> (F, F) {
        let (chunks, tail) = self.out.as_chunks_mut::<LANES>();
        let blocks = map_sum_pairs(chunks.iter_mut().zip(self.src.chunks()), &mut f);
        finish_map_sum(blocks, self.src.tail(), tail, f)
    }
    #[inline(always)]
    fn update(&mut self, mut f: impl FnMut(F) -> F) {
        for o in self.out.iter_mut() {
            *o = f(*o);
        }
    }
}

/// Read and write the same buffer.
pub(crate) struct InPlace<'o, F>(pub &'o mut [F]);

impl<F: Float> Io<F> for InPlace<'_, F> {
    type Src<'b>
        = Plain<'b, F>
    where
        Self: 'b;
    #[inline(always)]
    fn src(&self) -> Plain<'_, F> {
        Plain(self.0)
    }
    #[inline(always)]
    fn map(&mut self, f: impl FnMut(F) -> F) {
        self.update(f)
    }
    #[inline(always)]
    fn map_sum(&mut self, mut f: impl FnMut(&[F; LANES]) -> [F; LANES]) -> (F, F) {
        let (chunks, tail) = self.0.as_chunks_mut::<LANES>();
        let blocks = map_sum_pairs(
            chunks.iter_mut().map(|o| {
                let c = *o;
                (o, c)
            }),
            &mut f,
        );
        let t = pad(tail.iter().copied());
        finish_map_sum(blocks, t, tail, f)
    }
    #[inline(always)]
    fn update(&mut self, mut f: impl FnMut(F) -> F) {
        for o in self.0.iter_mut() {
            *o = f(*o);
        }
    }
}
