//! The skeleton: every max / exp / sum / normalise loop of the crate, once.
//!
//! A row is read through a [`Load`] (plain, keep-mask or additive bias, applied as the values are
//! loaded) and a [`Scale`] (how the temperature enters: not at all, divide first, or subtract
//! first). The reductions walk the row in chunks of [`LANES`] values (`as_chunks`, so there are
//! no bounds checks and LLVM vectorises each chunk), with the ragged end padded by `-inf`, which
//! is neutral for every reduction here; they keep one accumulator per lane and combine the lanes
//! in a fixed order, so the result does not depend on the target's vector width.
//!
//! softmax's and log_softmax's own passes are the hot loops: the exp pass stores the terms
//! `e^d·2^60` ([`term`], [`Backend::exp_pow2`]) block by block ([`TERM_BLOCK`] values, evaluated
//! [`EXP_W`] at a time) and sums each block while it is in L1, in [`TERM_LANES`] lanes
//! ([`TermSum`], [`SplitSum`]); the scale or output pass follows.

#![forbid(unsafe_code)]

use crate::backend::Backend;
use crate::float::Float;
use crate::float::{fast_two_sum, select, two_sum};
use crate::soft::SOFT;

/// Fixed number of accumulator lanes in every reduction. It is part of the numeric contract:
/// changing it changes result bits (not accuracy).
///
/// # Examples
///
/// ```
/// // The lanes of a dot product hold the products of entries i, i + 16, i + 32, ...
/// assert_eq!(softmax_core::LANES, 16);
/// ```
pub const LANES: usize = 16;

// ------------------------------------------------------------------------------------------------
// Loading a row
// ------------------------------------------------------------------------------------------------

/// A row of logits as the kernels see it: masked entries already `-inf`.
pub(crate) trait Load<F: Float>: Copy {
    /// The row, value by value (for elementwise passes, which need no lanes).
    fn iter(self) -> impl Iterator<Item = F>;
    /// Full chunks of the row (for reductions, which keep one accumulator per lane).
    fn chunks(self) -> impl Iterator<Item = [F; LANES]> {
        self.chunks_of::<LANES>()
    }
    /// Full chunks of `W` values.
    fn chunks_of<const W: usize>(self) -> impl Iterator<Item = [F; W]>;
    /// Number of values.
    fn len(self) -> usize;
    /// The ragged end (`len % LANES` values) padded with `-inf`; `None` when the row is a whole
    /// number of chunks.
    fn tail(self) -> Option<[F; LANES]>;
    /// The values `start..end` (clamped to the row; empty if out of range).
    fn slice(self, start: usize, end: usize) -> Self;
}

/// `s[start..end]`, clamped; never panics.
#[inline(always)]
fn sub<T>(s: &[T], start: usize, end: usize) -> &[T] {
    s.get(start..end.min(s.len())).unwrap_or(&[])
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
    fn chunks_of<const W: usize>(self) -> impl Iterator<Item = [F; W]> {
        self.0.as_chunks::<W>().0.iter().copied()
    }
    #[inline(always)]
    fn len(self) -> usize {
        self.0.len()
    }
    #[inline(always)]
    fn tail(self) -> Option<[F; LANES]> {
        pad(self.0.as_chunks::<LANES>().1.iter().copied())
    }
    #[inline(always)]
    fn slice(self, start: usize, end: usize) -> Self {
        Plain(sub(self.0, start, end))
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
    fn chunks_of<const W: usize>(self) -> impl Iterator<Item = [F; W]> {
        let x = self.0.as_chunks::<W>().0.iter();
        let k = self.1.as_chunks::<W>().0.iter();
        x.zip(k)
            .map(|(x, k)| core::array::from_fn(|i| select(k[i], x[i], F::NEG_INFINITY)))
    }
    #[inline(always)]
    fn len(self) -> usize {
        self.0.len().min(self.1.len())
    }
    #[inline(always)]
    fn tail(self) -> Option<[F; LANES]> {
        let x = self.0.as_chunks::<LANES>().1.iter();
        let k = self.1.as_chunks::<LANES>().1.iter();
        pad(x.zip(k).map(|(&x, &k)| select(k, x, F::NEG_INFINITY)))
    }
    #[inline(always)]
    fn slice(self, start: usize, end: usize) -> Self {
        Keep(sub(self.0, start, end), sub(self.1, start, end))
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
    fn chunks_of<const W: usize>(self) -> impl Iterator<Item = [F; W]> {
        let x = self.0.as_chunks::<W>().0.iter();
        let b = self.1.as_chunks::<W>().0.iter();
        x.zip(b).map(|(x, b)| core::array::from_fn(|i| x[i] + b[i]))
    }
    #[inline(always)]
    fn len(self) -> usize {
        self.0.len().min(self.1.len())
    }
    #[inline(always)]
    fn tail(self) -> Option<[F; LANES]> {
        let x = self.0.as_chunks::<LANES>().1.iter();
        let b = self.1.as_chunks::<LANES>().1.iter();
        pad(x.zip(b).map(|(&x, &b)| x + b))
    }
    #[inline(always)]
    fn slice(self, start: usize, end: usize) -> Self {
        Bias(sub(self.0, start, end), sub(self.1, start, end))
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
    /// The log-probability `(x − m)/τ − ln_sum` of a value `x <= m`, `m` the row's finite
    /// maximum and `ln_sum = ln Σ e^d >= 0`; `-inf` where the difference overflows (as it does
    /// exactly). A function of the exact difference `x − m` alone, so an exact shift of the row
    /// changes no bit.
    fn log_prob(self, x: F, m: F, ln_sum: F) -> F;
}

/// `(x − m)/τ − ln_sum` from the exact difference: `(d_hi − ln_sum) + d_lo`, for any `x`
/// (also above `m`, where the difference and `ln_sum` can cancel).
#[inline(always)]
pub(crate) fn log_prob_exact<F: Float, S: Scale<F>>(s: S, x: F, m: F, ln_sum: F) -> F {
    let (hi, lo) = s.shift(x, m);
    // lo is NaN when hi = -inf.
    select(hi == F::NEG_INFINITY, hi, (hi - ln_sum) + lo)
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

/// [`two_sum`] out of line, for a rare path the optimiser must not speculate.
#[cold]
#[inline(never)]
fn two_sum_cold<F: Float>(a: F, b: F) -> (F, F) {
    two_sum(a, b)
}

/// τ = 1.
#[derive(Clone, Copy)]
pub(crate) struct Unit;
impl<F: Float> Scale<F> for Unit {
    #[inline(always)]
    fn shift(self, p: F, m: F) -> (F, F) {
        if SOFT {
            // Where every add is a call: Fast2Sum (three adds) after a magnitude comparison in
            // integer arithmetic (bit tests, not float comparisons, which would be calls too).
            // The rounding error is unique, so for a finite difference the pair is TwoSum's —
            // but for its sign when it is zero: TwoSum's zero error is always +0, Fast2Sum's is
            // −0 when `−m` is −0. A non-finite difference (NaN, overflow) takes TwoSum itself.
            let bits = |v: F| v.abs().to_bits().into();
            let a_big = bits(p) >= bits(m);
            let (a, b) = if a_big { (p, -m) } else { (-m, p) };
            let (hi, lo) = fast_two_sum(a, b);
            if bits(hi) >= bits(F::INFINITY) {
                // Out of line: inlined, the optimiser computes both sums and selects (float
                // operations look cheap to it), which on these targets costs six calls a value.
                return two_sum_cold(p, -m);
            }
            // −0 → +0 by its bit pattern (a test for zero would become a float comparison).
            let neg_zero = (-F::ZERO).to_bits().into();
            return (
                hi,
                if lo.to_bits().into() == neg_zero {
                    F::ZERO
                } else {
                    lo
                },
            );
        }
        // TwoSum: six adds and no selects, so the difference itself is ready after one add
        // (the tail is only needed late, in the exp's reduction).
        two_sum(p, -m)
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
    /// `(x − m) − ln_sum`, two roundings: `d = x − m <= 0` is rounded once (at most `u·|d|`,
    /// `u` the unit roundoff, 2⁻²⁴ for f32), then `d − ln_sum`, which cannot cancel (`d <= 0 <=
    /// ln_sum`: `|d| <= |y|`), once more: at most `u·(2 + u)·|y|` in all, the bound of the exact
    /// difference's `(d_hi − ln_sum) + d_lo` ([`log_prob_exact`]), in two subtractions
    /// instead of eight.
    #[inline(always)]
    fn log_prob(self, x: F, m: F, ln_sum: F) -> F {
        (x - m) - ln_sum
    }
}

/// τ ≠ 1: `(x·h − m·h)/(τ·h)` with `h = ½` for τ > 1 and `h = 1` for τ < 1.
///
/// Halving is exact (barring subnormals, where it moves a value by at most 2⁻¹⁵⁰) and the halved
/// difference cannot overflow, so rows spanning more than the float range still give the exact
/// quotient when τ > 1 (no spurious overflow, the crate's edge semantics); for τ < 1 an
/// overflowing difference means the
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
    /// [`log_prob_exact`]: the quotient of the exact difference, then `ln_sum`.
    #[inline(always)]
    fn log_prob(self, x: F, m: F, ln_sum: F) -> F {
        log_prob_exact(self, x, m, ln_sum)
    }
}

/// Runs `$body` with `$s` bound to the temperature mode for τ (already validated): τ = 1 → no
/// scaling at all (the fast path), otherwise the exact shift divided by τ. The body runs at the
/// dispatched machine-code level ([`simd`](crate::simd)).
macro_rules! with_scale {
    ($tau:expr, |$s:ident| $body:expr) => {{
        let tau = $tau;
        if tau == F::ONE {
            let $s = $crate::kernel::Unit;
            $crate::simd::exec(
                #[inline(always)]
                || $body,
            )
        } else {
            let $s = $crate::kernel::Scaled::new(tau);
            $crate::simd::exec(
                #[inline(always)]
                || $body,
            )
        }
    }};
}
pub(crate) use with_scale;

/// `1/(hi + lo)` with the low part folded in.
#[inline(always)]
pub(crate) fn inv_pair<F: Float>(hi: F, lo: F) -> F {
    let r = F::ONE / hi;
    r - r * (lo / hi)
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
///
/// On scalar cores ([`LANE_PARALLEL`] false) one running maximum in a register, then the lane
/// pass only when that maximum is a zero: the lane combine decides which zero's sign the row
/// keeps, and any other maximum has only one encoding, so the result's bits are the same. The
/// lane pass alone kept its sixteen maxima and NaN flags in memory there, at four times the
/// instructions per value.
#[inline(always)]
pub(crate) fn scan<F: Float, L: Load<F>>(src: L) -> Scan<F> {
    if !LANE_PARALLEL {
        let mut m = F::NEG_INFINITY;
        let mut nan = false;
        for x in src.iter() {
            // One comparison for the common value (not above the running maximum); a new
            // maximum or a NaN (unordered: the negated comparison is deliberate) takes the
            // branch. `m` is never NaN.
            #[allow(clippy::neg_cmp_op_on_partial_ord)]
            if !(x <= m) {
                if x.is_nan() {
                    nan = true;
                } else {
                    m = x;
                }
            }
        }
        if m != F::ZERO {
            return Scan { max: m, nan };
        }
    }
    // f32 on x86_64 with AVX2: the same lanes and tree, by hand (`tree_x86::scan`).
    #[cfg(softmax_dispatch)]
    if F::SIGNIFICAND_BITS == 24 {
        // The identity on f32 (this branch is compiled out for f64).
        let bits = |c: [F; LANES]| c.map(|x| f32::from_bits(x.to_bits().into() as u32));
        if let Some((max, nan)) =
            crate::tree_x86::scan(src.chunks().map(bits), src.tail().map(bits))
        {
            // Exact: an f32 through f64 and back (the max is never NaN).
            return Scan {
                max: F::from_f64(max.into()),
                nan,
            };
        }
    }
    scan_lanes(src)
}

/// The max pass in [`LANES`] lanes combined by [`tree`]: what every target computes.
#[inline(always)]
fn scan_lanes<F: Float, L: Load<F>>(src: L) -> Scan<F> {
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
    Scan {
        max: tree(m, |a, b| select(b > a, b, a)),
        nan: nan.iter().any(|&b| b),
    }
}

/// Combines `N` (a power of two) lanes pairwise: lane `i` with lane `i + N/2`, then again on the
/// first half, and so on. A fixed order, like a sequential fold, but `log2 N` steps deep instead
/// of `N`, and each step vectorises.
#[inline(always)]
pub(crate) fn tree<T: Copy, const N: usize>(mut v: [T; N], f: impl Fn(T, T) -> T) -> T {
    let mut n = N;
    while n > 1 {
        let h = n / 2;
        if let Some((a, b)) = v.split_at_mut_checked(h) {
            for (a, &b) in a.iter_mut().zip(b.iter()) {
                *a = f(*a, b);
            }
        }
        n = h;
    }
    v[0]
}

/// Chunks summed plainly into per-lane block sums before those are folded into the compensated
/// totals.
const BLOCK: usize = 16;

/// Per-lane compensated totals (TwoSum: running sum and the exact sum of its rounding errors).
#[derive(Clone, Copy)]
pub(crate) struct Totals<F, const N: usize = LANES> {
    s: [F; N],
    c: [F; N],
}

impl<F: Float, const N: usize> Totals<F, N> {
    pub(crate) const ZERO: Self = Totals {
        s: [F::ZERO; N],
        c: [F::ZERO; N],
    };

    /// Folds one block's plain lane sums into the totals.
    #[inline(always)]
    pub(crate) fn fold(&mut self, part: &[F; N]) {
        for ((s, c), &p) in self.s.iter_mut().zip(self.c.iter_mut()).zip(part) {
            let (v, e) = two_sum(*s, p);
            *s = v;
            *c += e;
        }
    }

    /// Multiplies every lane's sum and compensation by `f` (each rounded once).
    #[inline(always)]
    pub(crate) fn scale(&mut self, f: F) {
        for (s, c) in self.s.iter_mut().zip(self.c.iter_mut()) {
            *s *= f;
            *c *= f;
        }
    }

    /// The total as an unevaluated sum `hi + lo` with `hi = fl(hi + lo)`; lanes combined in a
    /// fixed order, pairwise (each step an exact TwoSum, its error joining the compensation).
    #[inline(always)]
    pub(crate) fn finish(self) -> (F, F) {
        // f32 on x86_64 with AVX2: the same tree, by hand (`tree_x86`).
        #[cfg(softmax_dispatch)]
        if F::SIGNIFICAND_BITS == 24 {
            // The identity on f32 (this branch is compiled out for f64).
            let bits = |v: &[F; N]| v.map(|x| f32::from_bits(x.to_bits().into() as u32));
            if let Some((hi, lo)) = crate::tree_x86::tree(&bits(&self.s), &bits(&self.c)) {
                return Self::last(F::from_f64(hi.into()), F::from_f64(lo.into()));
            }
        }
        let (mut s, mut c) = (self.s, self.c);
        let mut n = N;
        while n > 1 {
            let h = n / 2;
            if let (Some((s1, s2)), Some((c1, c2))) =
                (s.split_at_mut_checked(h), c.split_at_mut_checked(h))
            {
                for (((s1, &s2), c1), &c2) in s1.iter_mut().zip(s2.iter()).zip(c1).zip(c2.iter()) {
                    let (v, e) = two_sum(*s1, s2);
                    *s1 = v;
                    *c1 = (*c1 + c2) + e;
                }
            }
            n = h;
        }
        Self::last(s[0], c[0])
    }

    /// The tree's last lane as `hi + lo` with `hi = fl(hi + lo)`.
    #[inline(always)]
    fn last(hi: F, lo: F) -> (F, F) {
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
/// the hot loops keep their block sums in registers and never touch the totals (on x86_64 this
/// copy runs at the baseline level whatever the caller's level: same bits, negligible time).
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

/// The terms every hot loop sums: `e^d · 2^TOP` for `d = shift(x, m) <= 0` (see
/// [`Backend::exp_pow2`]): the maximum's term is exactly `2^TOP`, every term that can matter is a
/// normal number, and terms below `2^TINY` are 0.
#[inline(always)]
pub(crate) fn term<F: Float, B: Backend<F>, S: Scale<F>>(s: S, m: F, x: F) -> F {
    let (hi, lo) = s.shift(x, m);
    B::exp_pow2(hi, lo, F::TOP)
}

/// How many terms the exp pass evaluates side by side: on vector targets a chunk of 16 gives the
/// out-of-order core two independent dependency chains per AVX2 instruction stream (four with
/// SSE2; 32 spills registers at the SSE2 level); scalar cores take one value at a time (a
/// chunk would only multiply code size). Elementwise, so it does not affect any result bit.
pub(crate) const EXP_W: usize = if LANE_PARALLEL { 16 } else { 1 };

/// [`term`] for a chunk of `W` values, evaluated side by side ([`Backend::exp_pow2_chunk`]).
#[inline(always)]
pub(crate) fn term_chunk<F: Float, B: Backend<F>, S: Scale<F>, const W: usize>(
    s: S,
    m: F,
    x: &[F; W],
) -> [F; W] {
    let mut hi = [F::ZERO; W];
    let mut lo = [F::ZERO; W];
    for ((h, l), &x) in hi.iter_mut().zip(lo.iter_mut()).zip(x) {
        (*h, *l) = s.shift(x, m);
    }
    B::exp_pow2_chunk(&hi, &lo, F::TOP)
}

/// [`term`] for one chunk split in two: the entries at the maximum (`d = 0` exactly, since the
/// shift is exact) are counted in the second array, the others' terms are in the first.
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
        *e = select(at_max, F::ZERO, B::exp_pow2(hi, lo, F::TOP));
        *k = select(at_max, F::ONE, F::ZERO);
    }
    [e, k]
}

/// `2^-TOP`: takes a sum of [`term`]s back to a sum of `e^d`.
#[inline(always)]
pub(crate) fn untop<F: Float>() -> F {
    F::pow2(-F::TOP)
}

/// `Σ e^d` over a row whose max is the finite `m`, as `hi + lo`, with `Σ e^d − 1` kept to full
/// relative precision: the maxima contribute an exact count and only the other terms are summed,
/// so when they are tiny (a peaked row) they are not rounded away against the 1s. That matters
/// to the entropy, to log-probabilities near 0 and to KL; softmax itself only needs the sum to
/// 1e-7 relative and uses the one-array sum in its fused store pass. The terms are summed as
/// [`SplitSum`] sums them when a pass stores them first (log_softmax out of place,
/// `softmax_lse`), so every path to a row's normaliser gives the same bits.
#[inline(always)]
pub(crate) fn sum_exp<F: Float, B: Backend<F>, L: Load<F>, S: Scale<F>>(
    src: L,
    s: S,
    m: F,
) -> (F, F) {
    let mut sum = SplitSum::new();
    let mut b = 0;
    while b < src.len() {
        let e = src.len().min(b + TERM_BLOCK);
        sum.add_fused(
            src.slice(b, e),
            #[inline(always)]
            |c| term_chunk::<F, B, S, EXP_W>(s, m, c),
            #[inline(always)]
            |x| term::<F, B, S>(s, m, x),
        );
        b = e;
    }
    sum.finish()
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
///
/// Inlined into the x86_64 kernels (it is on the critical path of every log_softmax row: 5%
/// of a 16-value row's time as a call), a call elsewhere (code size on small targets).
#[cfg_attr(softmax_dispatch, inline(always))]
#[cfg_attr(not(softmax_dispatch), inline)]
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
// The sums of the hot loops
// ------------------------------------------------------------------------------------------------

/// Lanes of the sums of softmax's and log_softmax's terms: wider than [`LANES`] so that the
/// adds of a vector target form independent chains (32 f32 are four AVX2 registers, two
/// AVX-512 ones). Part of the numeric contract, like [`LANES`]: the lane of element `i` is
/// `i mod TERM_LANES`.
pub(crate) const TERM_LANES: usize = 32;

/// Elements per block of the hot loops: each lane adds 16 values plainly (error at most 15 units
/// of roundoff of that block sum) before the block sum is folded into the TwoSum totals. The
/// exp pass stores a block and sums it while it is in L1.
pub(crate) const TERM_BLOCK: usize = TERM_LANES * BLOCK;

/// Whether the target sums lane-parallel (a vector unit keeps the lanes in registers) or
/// lane-major (a scalar core keeps one accumulator in a register and strides through the
/// block). Both add the same values in the same order into each lane: the bits are the same.
pub(crate) const LANE_PARALLEL: bool = cfg!(any(
    all(target_arch = "x86_64", target_feature = "sse2"),
    target_arch = "aarch64"
));

/// The compensated sum of a stream of non-negative terms, block by block (see
/// [`TERM_BLOCK`]); optionally split like [`sum_exp`]: terms equal to `2^TOP` (the maxima, whose
/// shifted logit is exactly 0) counted apart from the rest, so `Σ − count` keeps its relative
/// precision when the rest is tiny.
pub(crate) struct TermSum<F> {
    tot: Totals<F, TERM_LANES>,
}

impl<F: Float> TermSum<F> {
    #[inline(always)]
    pub(crate) fn new() -> Self {
        TermSum { tot: Totals::ZERO }
    }

    /// Adds one block (at most [`TERM_BLOCK`] values; only the row's last block is shorter).
    #[inline(always)]
    pub(crate) fn add(&mut self, v: &[F]) {
        self.tot.fold(&block_lanes::<F, false>(v, &mut 0));
    }

    /// Adds the terms `fw`/`f` of one block of a load without storing them: the same lanes and
    /// order as [`add`](Self::add) over the stored terms, so the same bits.
    #[inline(always)]
    pub(crate) fn add_fused<L: Load<F>>(
        &mut self,
        src: L,
        fw: impl FnMut(&[F; EXP_W]) -> [F; EXP_W],
        f: impl FnMut(F) -> F,
    ) {
        self.tot
            .fold(&fused_lanes::<F, L, false>(src, fw, f, &mut 0));
    }

    /// Multiplies the total by `f` (each lane's sum and compensation rounded once).
    #[inline(always)]
    pub(crate) fn scale(&mut self, f: F) {
        self.tot.scale(f);
    }

    /// The total `hi + lo`.
    #[inline(always)]
    pub(crate) fn finish(self) -> (F, F) {
        self.tot.finish()
    }
}

/// log_softmax rows at least this long take two passes over their values instead of three: an
/// online pass that finds the maximum and the sum together over L1-sized blocks
/// ([`online_sum`]), and the output pass (which needs no exp). Such rows do not fit in the
/// caches next to their output (2^17 f32 are 512 KiB), and reading them once less wins.
/// softmax keeps its three passes at every length: its output pass would compute every exp a
/// second time, and storing the terms in the exp pass and scaling them in place is the faster
/// of the two at every length (`docs/speed-history.md` has the figures).
pub(crate) const LONG_ROW: usize = 1 << 17;

/// Values per block of [`online_sum`]: 16 KiB of f32, read from memory by the block's max scan
/// and again from L1 by its exp pass.
const LONG_BLOCK: usize = 4096;

/// How far (in units of the shifted logit `d`) a block's maximum may lie above the reference
/// before the reference moves: terms stay below `2^TOP·e^2.5 < 2^64`, and each move rounds the
/// sum once while shrinking every earlier rounding error by `e^-2.5`, so the errors of any number
/// of moves add up to less than 1.1 units of roundoff.
const REBASE: f64 = 2.5;

/// The online pass over a long row: a reference `r` (a running maximum that moves only when a
/// block exceeds it by more than [`REBASE`]) and the compensated `Σ e^((x − r)/τ)·2^TOP`.
/// `None` when the row holds a NaN or `+inf`, or nothing but `-inf`: the general path handles
/// those.
#[inline(always)]
pub(crate) fn online_sum<F: Float, B: Backend<F>, L: Load<F>, S: Scale<F>>(
    src: L,
    s: S,
) -> Option<(F, F, F)> {
    let n = src.len();
    let mut r = F::NEG_INFINITY;
    let mut sum = TermSum::new();
    let mut start = 0;
    while start < n {
        let end = n.min(start + LONG_BLOCK);
        let blk = src.slice(start, end);
        start = end;
        let sc = scan(blk);
        if sc.nan || sc.max == F::INFINITY {
            return None;
        }
        if sc.max == F::NEG_INFINITY {
            continue;
        }
        if r == F::NEG_INFINITY || s.shift(sc.max, r).0 > F::from_f64(REBASE) {
            if r != F::NEG_INFINITY {
                let (h, l) = s.shift(r, sc.max);
                sum.scale(B::exp_pow2(h, l, 0));
            }
            r = sc.max;
        }
        let mut b = 0;
        while b < blk.len() {
            let e = blk.len().min(b + TERM_BLOCK);
            sum.add_fused(
                blk.slice(b, e),
                #[inline(always)]
                |c| term_chunk::<F, B, S, EXP_W>(s, r, c),
                #[inline(always)]
                |x| term::<F, B, S>(s, r, x),
            );
            b = e;
        }
    }
    if r == F::NEG_INFINITY {
        return None;
    }
    let (hi, lo) = sum.finish();
    Some((r, hi, lo))
}

/// The split form of [`TermSum`]: `(count, rest)` with the terms equal to `2^TOP` counted.
pub(crate) struct SplitSum<F> {
    rest: Totals<F, TERM_LANES>,
    count: usize,
}

impl<F: Float> SplitSum<F> {
    #[inline(always)]
    pub(crate) fn new() -> Self {
        SplitSum {
            rest: Totals::ZERO,
            count: 0,
        }
    }

    /// Adds one block.
    #[inline(always)]
    pub(crate) fn add(&mut self, v: &[F]) {
        let part = block_lanes::<F, true>(v, &mut self.count);
        self.rest.fold(&part);
    }

    /// [`add`](Self::add) of the terms `fw`/`f` of one block of a load, without storing them:
    /// the same bits.
    #[inline(always)]
    pub(crate) fn add_fused<L: Load<F>>(
        &mut self,
        src: L,
        fw: impl FnMut(&[F; EXP_W]) -> [F; EXP_W],
        f: impl FnMut(F) -> F,
    ) {
        let part = fused_lanes::<F, L, true>(src, fw, f, &mut self.count);
        self.rest.fold(&part);
    }

    /// `Σ e^d = count + rest·2^-TOP` as `hi + lo`, the count exact.
    #[inline(always)]
    pub(crate) fn finish(self) -> (F, F) {
        let (r_hi, r_lo) = self.rest.finish();
        let u = untop::<F>();
        let (hi, lo) = two_sum(F::from_usize(self.count), r_hi * u);
        two_sum(hi, lo + r_lo * u)
    }
}

/// The plain per-lane sums of the terms of one block of a load (at most [`TERM_BLOCK`] values),
/// computed on the fly (`fw` for chunks of [`EXP_W`], `f` for the ragged end): value `i` of the
/// block goes into lane `i mod TERM_LANES`, in order, exactly as [`TermSum::add`] and
/// [`SplitSum::add`] sum the stored terms, so the same bits. With `SPLIT`, the terms equal to
/// `2^TOP` are left out of the sums and counted into `count`.
#[inline(always)]
fn fused_lanes<F: Float, L: Load<F>, const SPLIT: bool>(
    src: L,
    mut fw: impl FnMut(&[F; EXP_W]) -> [F; EXP_W],
    mut f: impl FnMut(F) -> F,
    count: &mut usize,
) -> [F; TERM_LANES] {
    let top = F::pow2(F::TOP);
    // A term's share of its lane's sum: with SPLIT, 0 for a term equal to `2^TOP`, which is
    // counted instead.
    let share = |e: F| {
        if SPLIT {
            (select(e == top, F::ZERO, e), e == top)
        } else {
            (e, false)
        }
    };
    let mut part = [F::ZERO; TERM_LANES];
    let mut done = 0;
    if LANE_PARALLEL {
        // The counts in lanes beside the sums, so the loop stays one vector loop (one `usize`
        // count for the block made `logsumexp` 1.5 times slower than `log_softmax`).
        let mut lanes = [0u32; TERM_LANES];
        for c in src.chunks_of::<TERM_LANES>() {
            let (subs, _) = c.as_chunks::<EXP_W>();
            let (parts, _) = part.as_chunks_mut::<EXP_W>();
            let (ns, _) = lanes.as_chunks_mut::<EXP_W>();
            for ((p, n), x) in parts.iter_mut().zip(ns.iter_mut()).zip(subs) {
                let e = fw(x);
                for ((p, n), &e) in p.iter_mut().zip(n.iter_mut()).zip(&e) {
                    let (v, at_top) = share(e);
                    *n += u32::from(at_top);
                    *p += v;
                }
            }
            done += TERM_LANES;
        }
        if SPLIT {
            // At most TERM_BLOCK per block: the u32 lanes cannot overflow.
            *count += lanes.iter().map(|&n| n as usize).sum::<usize>();
        }
    } else {
        // A scalar core keeps one count in a register (no array of counts on its stack).
        for c in src.chunks_of::<TERM_LANES>() {
            let (subs, _) = c.as_chunks::<EXP_W>();
            let (parts, _) = part.as_chunks_mut::<EXP_W>();
            for (p, x) in parts.iter_mut().zip(subs) {
                let e = fw(x);
                for (p, &e) in p.iter_mut().zip(&e) {
                    let (v, at_top) = share(e);
                    *count += usize::from(at_top);
                    *p += v;
                }
            }
            done += TERM_LANES;
        }
    }
    // The ragged end: fewer values than lanes, one per lane.
    for (p, x) in part.iter_mut().zip(src.slice(done, src.len()).iter()) {
        let (v, at_top) = share(f(x));
        *count += usize::from(at_top);
        *p += v;
    }
    part
}

/// The plain per-lane sums of one block of stored terms; with `SPLIT`, the terms equal to
/// `2^TOP` left out and counted, as in [`fused_lanes`] (the same lanes and order).
#[inline(always)]
fn block_lanes<F: Float, const SPLIT: bool>(v: &[F], count: &mut usize) -> [F; TERM_LANES] {
    let top = F::pow2(F::TOP);
    let mut part = [F::ZERO; TERM_LANES];
    if LANE_PARALLEL {
        // The count in u32 lanes beside the sums, in the same loop (a separate `usize` count
        // of the block cost 10% of `softmax_lse`).
        let mut lanes = [0u32; TERM_LANES];
        // A function, not a closure: a closure that LLVM declines to inline (as when a kernel
        // sums two rows' blocks) is compiled for the baseline level, whatever level calls it.
        #[inline(always)]
        fn step<F: Float, const SPLIT: bool>(
            part: &mut [F; TERM_LANES],
            lanes: &mut [u32; TERM_LANES],
            c: &[F; TERM_LANES],
        ) {
            let top = F::pow2(F::TOP);
            for ((p, n), &x) in part.iter_mut().zip(lanes.iter_mut()).zip(c) {
                if SPLIT {
                    let at_top = x == top;
                    *n += u32::from(at_top);
                    *p += select(at_top, F::ZERO, x);
                } else {
                    *p += x;
                }
            }
        }
        let (chunks, tail) = v.as_chunks::<TERM_LANES>();
        for c in chunks {
            step::<F, SPLIT>(&mut part, &mut lanes, c);
        }
        if !tail.is_empty() {
            // Padded with zeros, which add nothing and are not counted.
            let mut t = [F::ZERO; TERM_LANES];
            for (t, &x) in t.iter_mut().zip(tail) {
                *t = x;
            }
            step::<F, SPLIT>(&mut part, &mut lanes, &t);
        }
        if SPLIT {
            // At most TERM_BLOCK per block: the u32 lanes cannot overflow.
            *count += lanes.iter().map(|&n| n as usize).sum::<usize>();
        }
    } else {
        // Lane-major, with a plain index loop (a `skip().step_by()` iterator costs three times
        // the instructions of the addition on a Cortex-M).
        for (j, p) in part.iter_mut().enumerate() {
            let mut acc = F::ZERO;
            let mut i = j;
            while let Some(&x) = v.get(i) {
                if SPLIT {
                    let at_top = x == top;
                    *count += usize::from(at_top);
                    acc += select(at_top, F::ZERO, x);
                } else {
                    acc += x;
                }
                i += TERM_LANES;
            }
            *p = acc;
        }
    }
    part
}

// ------------------------------------------------------------------------------------------------
// Destinations
// ------------------------------------------------------------------------------------------------

/// Where a row op reads its input and writes its output: a separate source, or in place.
///
/// Every pass takes a per-value closure and runs as a plain unit-stride loop, which LLVM
/// vectorises to the width of the target (or of the dispatched level); `map_sum` also sums what
/// it stores, block by block ([`TERM_BLOCK`]), while the block is in L1.
pub(crate) trait Io<F: Float> {
    /// The input row, as a load.
    type Src<'b>: Load<F>
    where
        Self: 'b;
    /// The input row.
    fn src(&self) -> Self::Src<'_>;
    /// `out_i = f(input_i)`.
    fn map(&mut self, f: impl FnMut(F) -> F);
    /// `out_i = f(input_i)`, and the sum of the stored values into `sum` (a [`TermSum`] or a
    /// [`SplitSum`]). `fw` is `f` on a chunk of [`EXP_W`] values (it must agree with `f`
    /// elementwise, bit for bit); the ragged end of each block uses `f`.
    fn map_sum(
        &mut self,
        fw: impl FnMut(&[F; EXP_W]) -> [F; EXP_W],
        f: impl FnMut(F) -> F,
        sum: impl FnMut(&[F]),
    );
    /// `out_i = f(out_i)`.
    fn update(&mut self, f: impl FnMut(F) -> F);
    /// `out_i` as it stands (NaN if `i` is out of range).
    fn out_at(&self, i: usize) -> F;
    /// The output is a separate buffer, free to hold intermediate values until the last pass.
    const SCRATCH_OUT: bool;
}

/// Read from `src`, write to `out` (same length, checked by the caller).
pub(crate) struct OutOfPlace<'o, F, L> {
    pub src: L,
    pub out: &'o mut [F],
}

impl<F: Float, L: Load<F>> Io<F> for OutOfPlace<'_, F, L> {
    const SCRATCH_OUT: bool = true;
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
    fn map_sum(
        &mut self,
        mut fw: impl FnMut(&[F; EXP_W]) -> [F; EXP_W],
        mut f: impl FnMut(F) -> F,
        mut sum: impl FnMut(&[F]),
    ) {
        let mut start = 0;
        for ob in self.out.chunks_mut(TERM_BLOCK) {
            let end = start + ob.len();
            let src = self.src.slice(start, end);
            let (oc, ot) = ob.as_chunks_mut::<EXP_W>();
            for (o, x) in oc.iter_mut().zip(src.chunks_of::<EXP_W>()) {
                *o = fw(&x);
            }
            let done = oc.len() * EXP_W;
            for (o, x) in ot.iter_mut().zip(src.slice(done, src.len()).iter()) {
                *o = f(x);
            }
            sum(ob);
            start = end;
        }
    }
    #[inline(always)]
    fn update(&mut self, mut f: impl FnMut(F) -> F) {
        for o in self.out.iter_mut() {
            *o = f(*o);
        }
    }
    #[inline(always)]
    fn out_at(&self, i: usize) -> F {
        self.out.get(i).copied().unwrap_or(F::NAN)
    }
}

/// Read and write the same buffer.
pub(crate) struct InPlace<'o, F>(pub &'o mut [F]);

impl<F: Float> Io<F> for InPlace<'_, F> {
    const SCRATCH_OUT: bool = false;
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
    fn map_sum(
        &mut self,
        mut fw: impl FnMut(&[F; EXP_W]) -> [F; EXP_W],
        mut f: impl FnMut(F) -> F,
        mut sum: impl FnMut(&[F]),
    ) {
        for ob in self.0.chunks_mut(TERM_BLOCK) {
            let (oc, ot) = ob.as_chunks_mut::<EXP_W>();
            for o in oc.iter_mut() {
                *o = fw(o);
            }
            for o in ot.iter_mut() {
                *o = f(*o);
            }
            sum(ob);
        }
    }
    #[inline(always)]
    fn update(&mut self, mut f: impl FnMut(F) -> F) {
        for o in self.0.iter_mut() {
            *o = f(*o);
        }
    }
    #[inline(always)]
    fn out_at(&self, i: usize) -> F {
        self.0.get(i).copied().unwrap_or(F::NAN)
    }
}
