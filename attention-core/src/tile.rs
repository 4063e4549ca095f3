//! The one inner loop of attention: a tile of up to [`TQ`] query rows against the keys of a
//! [key source](Keys), block by block ([`BK`] keys on a fixed grid).
//!
//! The full computation and the streaming decoder run this same code; they differ only in where
//! the keys live (contiguous buffers, or the decoder's ring of cache slots) and in what the
//! rows of a tile are (consecutive queries of one head, or the query heads that share a kv head
//! at the newest position). The backward pass shares the block walk and the score step
//! ([`Tile::scores`]). Every path therefore folds the same scores, in the same blocks, into the
//! same online softmax: the decoder answers what the full computation answers, bit for bit.

use softmax_core::backend::Backend;
use softmax_core::chunks::{chunks, chunks_mut};
use softmax_core::linalg::within;
use softmax_core::stored::Operand;
use softmax_core::{special, Float, OnlineSoftmax};

use crate::options::Qkv;
use crate::plan::{for_each_block, from_u64, keys_of, part, Allowed, Plan, Runs, SlotMap};
use crate::state::QueryState;

/// Keys per block. Blocks sit on a fixed grid of key positions (`g·BK .. (g+1)·BK`), the same
/// in the full computation and in the decoder, so that both fold the same scores in the same
/// blocks into the online softmax. It must be the same on every target (the block boundaries
/// are part of the rounding). 128 rather than 256: the scratch of the backward pass must fit
/// the 16 KiB of RAM of the smallest firmware target.
pub(crate) const BK: usize = 128;

/// Queries per tile: they share every load of a key block in the score product. Any value
/// gives the same bits (each query's arithmetic does not depend on its neighbours); one on
/// 32-bit targets, where the tile's scores live on a small stack (`TQ·BK` values, four such
/// buffers in the backward pass). There (microcontrollers) [`Tile::scores`] is out of line, one
/// copy shared by the forward pass and the backward pass, and with one row per tile the
/// branches for several rows are compiled out ([`MULTI`]); on 64-bit targets it is inlined
/// into each entry point's dispatched region (softmax-core's `simd::dispatch`), so that it runs
/// at the level the region chose, as [`Tile::fold`] is everywhere.
///
/// Sixteen on 64-bit targets with an operating system (the per-tile and per-block work is
/// shared by twice the rows, and the online softmax steps of sixteen rows interleave): on a
/// Zen 5, H = 8, T = S = 1024, d = 64, 2.14–2.18 → 2.05–2.11 ns per query-key pair, causal
/// 1.20–1.26 → 1.14–1.19 (32 rows: 2.01–2.07 and 1.15, not worth another doubling of the
/// stack; the score product took them as two groups of eight then, and takes them sixteen at
/// a time now where the CPU has AVX-512: softmax-core's `kernel_nt16`). Eight on 64-bit
/// bare-metal targets (`target_os = "none"`: kernels and firmware, whose stacks are small),
/// where the forward pass's scores take 8 KiB instead of 16.
pub(crate) const TQ: usize = if cfg!(not(target_pointer_width = "64")) {
    1
} else if cfg!(target_os = "none") {
    8
} else {
    16
};

/// The tiles of `n` rows: `(first row, rows)` with at most [`TQ`] rows each, in order.
#[inline(always)]
pub(crate) fn tiles(n: usize) -> impl Iterator<Item = (usize, usize)> {
    (0..n).step_by(TQ).map(move |r0| (r0, TQ.min(n - r0)))
}

/// Whether a tile can hold more than one row (not on 32-bit targets).
pub(crate) const MULTI: bool = TQ > 1;

/// What [`Tile::fold`]'s per-block step does: all of it (the rows' online-softmax steps, the
/// rescale of their accumulators, the weighted values), or, for a tile of one row whose run
/// of blocks has its scores ready, first each block's update alone (`Weigh`, returning its
/// `α`), then each block's rescale by that `α` and its values (`Apply`).
#[derive(Clone, Copy)]
enum Phase<F> {
    Whole,
    Weigh,
    Apply(F),
}

/// One row's part of [`OnlineSoftmax::update_rows`]: its state and its block of scores.
type Job<'s, F, B> = Option<(&'s mut OnlineSoftmax<F, B>, &'s mut [F])>;

/// The scratch of a product whose columns are not a whole block row (only a tile of several
/// rows needs it: one row's columns are contiguous in the block's scores).
const GATHER: usize = if MULTI { TQ * BK } else { 0 };

/// The score modifiers of one query row.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Mods<F> {
    pub(crate) scale: F,
    pub(crate) cap: Option<F>,
    /// ALiBi slope of the row's head.
    pub(crate) slope: Option<F>,
    /// The query's position (key `j` sits at `j + koff`).
    pub(crate) qp: u64,
}

/// One query row of a tile: which keys it may see and how its scores are made.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Row<'a, F> {
    pub(crate) allowed: Allowed,
    pub(crate) mods: Mods<F>,
    /// The row's additive bias and keep flags, indexed by key (the full computation's only).
    pub(crate) bias: Option<&'a [F]>,
    pub(crate) keep: Option<&'a [bool]>,
}

impl<F: Float> Row<'_, F> {
    /// Turns the scaled dot products `s = scale·(q·k)` of keys `f ..` (key `j` at position
    /// `j + koff`; the product multiplies by the scale, [`within::matmul_nt_scaled`]) into final
    /// scores in place: `cap(s) + bias + alibi`, then `-inf` in `gap` and where `keep` is
    /// false. The operations and their order are the same on every path (forward, backward,
    /// decoder), so every path sees the same scores. With `fac`, also writes the derivative of
    /// the score with respect to the dot product: `scale·cap'`.
    #[inline(always)]
    fn finalize<B: Backend<F>>(
        &self,
        backend: B,
        s: &mut [F],
        (f, koff): (u64, u64),
        gap: Option<(usize, usize)>,
        fac: Option<&mut [F]>,
    ) {
        let m = &self.mods;
        let (k0, k1) = (f as usize, (f as usize).saturating_add(s.len()));
        match m.cap {
            Some(c) => {
                if let Some(fac) = fac {
                    for (g, &z) in fac.iter_mut().zip(s.iter()) {
                        *g = m.scale * special::softcap_slope(B::default(), z, c);
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
        if let Some(bias) = self.bias.and_then(|b| b.get(k0..k1)) {
            for (x, &b) in s.iter_mut().zip(bias) {
                *x += b;
            }
        }
        if let Some(slope) = m.slope {
            let mut kp = f.wrapping_add(koff);
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
        if let Some(keep) = self.keep.and_then(|k| k.get(k0..k1)) {
            for (x, &k) in s.iter_mut().zip(keep) {
                if !k {
                    *x = F::NEG_INFINITY;
                }
            }
        }
    }
}

/// Where a tile's keys and values live: key `j`'s `K` row and `V` row, as elements of type
/// `U` read as `F` ([`Operand`]: `F` itself, or a reduced-precision format of the decoder's
/// cache read as f32 with its row's scale).
#[derive(Clone, Copy, Debug)]
pub(crate) enum Keys<'a, F: Float, U: Operand<F> = F> {
    /// One buffer each, key `j` at row `j`: the full computation's.
    Contiguous { k: &'a [U], v: &'a [U] },
    /// The decoder's cache of one kv head: position `j` at row `map.slot(j)`, with the rows'
    /// scales (`ks`, `vs`: one per slot for int8, empty otherwise).
    Slots {
        k: &'a [U],
        v: &'a [U],
        ks: &'a [U::Scale],
        vs: &'a [U::Scale],
        map: SlotMap,
    },
}

/// A run of consecutive rows of a key source: its `K` rows and their scales, its `V` rows and
/// theirs.
pub(crate) struct Piece<'a, U, S> {
    k: &'a [U],
    ks: &'a [S],
    v: &'a [U],
    vs: &'a [S],
}

impl<F: Float, U: Operand<F>> Keys<'_, F, U> {
    /// Calls `f(first key, rows)` for the runs of consecutive rows that hold the keys
    /// `[a, b)`, in ascending order (`d` and `dv` the widths of a `K` and a `V` row).
    #[inline(always)]
    fn pieces(
        &self,
        (a, b): (u64, u64),
        (d, dv): (usize, usize),
        mut f: impl FnMut(u64, Piece<'_, U, U::Scale>),
    ) {
        match *self {
            Keys::Contiguous { k, v } => f(
                a,
                Piece {
                    k: keys_of(k, a, b, d),
                    ks: &[],
                    v: keys_of(v, a, b, dv),
                    vs: &[],
                },
            ),
            Keys::Slots { k, v, ks, vs, map } => map.for_each_run((a, b), |pos0, slot0, n| {
                f(
                    pos0,
                    Piece {
                        k: k.get(slot0 * d..(slot0 + n) * d).unwrap_or(&[]),
                        ks: ks.get(slot0..slot0 + n).unwrap_or(&[]),
                        v: v.get(slot0 * dv..(slot0 + n) * dv).unwrap_or(&[]),
                        vs: vs.get(slot0..slot0 + n).unwrap_or(&[]),
                    },
                );
            }),
        }
    }
}

/// A key block as the tile sees it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Block {
    /// Each row's runs of allowed keys in the block (`None`: nothing allowed here).
    pub(crate) spans: [Option<Runs>; TQ],
    /// The union of the rows' spans: the columns of the block's scores.
    pub(crate) u0: u64,
    pub(crate) u1: u64,
    /// The tile's rows (the first `rows` spans).
    rows: usize,
}

impl Block {
    /// Columns of the block's scores.
    #[inline(always)]
    pub(crate) fn width(&self) -> usize {
        (self.u1 - self.u0) as usize
    }

    /// The keys every row takes, `[max start, min end)`, when each row has one run and they
    /// overlap.
    #[inline(always)]
    fn common(&self) -> Option<(u64, u64)> {
        let (mut c0, mut c1) = (0u64, u64::MAX);
        for s in self.spans.iter().take(self.rows) {
            let r = (*s)?;
            if r.second.is_some() {
                return None;
            }
            c0 = c0.max(r.first.0);
            c1 = c1.min(r.first.1);
        }
        (c0 < c1).then_some((c0, c1))
    }

    /// The first key past the keys every row takes, when every row has one run, all the runs
    /// start at the block's first column and they do not all end together (the diagonal block
    /// of a causal tile): the rows then differ only in how many trailing columns they leave out.
    #[inline(always)]
    fn ragged_end(&self) -> Option<u64> {
        let mut c1 = u64::MAX;
        for s in self.spans.iter().take(self.rows) {
            let r = (*s)?;
            if r.second.is_some() || r.first.0 != self.u0 {
                return None;
            }
            c1 = c1.min(r.first.1);
        }
        (c1 < self.u1).then_some(c1)
    }

    /// The runs, when every row has the same (the decoder's rows always do).
    #[inline(always)]
    fn shared(&self) -> Option<Runs> {
        let first = self.spans[0];
        let same = self.spans.iter().take(self.rows).all(|s| *s == first);
        if same {
            first
        } else {
            None
        }
    }
}

/// A tile of query rows against a key source (its elements of type `U`, read as `F`).
pub(crate) struct Tile<'a, F: Float, U: Operand<F> = F> {
    /// Where the keys and values live.
    pub(crate) keys: Keys<'a, F, U>,
    /// The rows' queries, `rows × d`.
    pub(crate) q: &'a [F],
    pub(crate) d: usize,
    pub(crate) dv: usize,
    /// The keys to fold, `[start, end)` (key indices).
    pub(crate) range: (u64, u64),
    /// Key `j` sits at position `j + koff`.
    pub(crate) koff: u64,
    rows: usize,
    row: [Row<'a, F>; TQ],
}

impl<'a, F: Float, U: Operand<F>> Tile<'a, F, U> {
    /// A tile of `rows` (at least 1, at most [`TQ`]) query rows, `row(r)` describing row `r`.
    #[inline(always)]
    pub(crate) fn new(
        (keys, q, d, dv): (Keys<'a, F, U>, &'a [F], usize, usize),
        (range, koff): ((u64, u64), u64),
        rows: usize,
        row: impl Fn(usize) -> Row<'a, F>,
    ) -> Self {
        let rows = rows.clamp(1, TQ);
        let row: [Row<'a, F>; TQ] = core::array::from_fn(|r| row(r.min(rows - 1)));
        Tile {
            keys,
            q,
            d,
            dv,
            range,
            koff,
            rows,
            row,
        }
    }

    /// The union of the rows' allowed keys (what the block walk covers).
    #[inline(always)]
    fn union(&self) -> Allowed {
        let mut union = Allowed {
            s0: self.range.0,
            s1: self.range.0,
            m0: u64::MAX,
            m1: 0,
        };
        for r in self.row.iter().take(self.rows) {
            let a = r.allowed;
            union.s1 = union.s1.max(a.s1);
            if a.m0 < a.m1 {
                union.m0 = union.m0.min(a.m0);
                union.m1 = union.m1.max(a.m1);
            }
        }
        union
    }

    /// The number of query rows.
    #[inline(always)]
    pub(crate) fn rows(&self) -> usize {
        self.rows
    }

    /// Row `r` alone, as a tile of one row.
    #[inline(always)]
    pub(crate) fn one_row(&self, r: usize) -> Self {
        let d = self.d;
        let q = self.q.get(r * d..(r + 1) * d).unwrap_or(&[]);
        let row = self.row.get(r).copied().unwrap_or(self.row[0]);
        Tile::new(
            (self.keys, q, d, self.dv),
            (self.range, self.koff),
            1,
            |_| row,
        )
    }

    /// Calls `f(block)` for every key block some row needs, in ascending order.
    #[inline(always)]
    pub(crate) fn for_each_block(&self, mut f: impl FnMut(&Block)) {
        let rows = self.rows;
        for_each_block(
            &self.union(),
            BK as u64,
            self.range,
            #[inline(always)]
            |g0, g1| {
                let mut spans = [None; TQ];
                let (mut u0, mut u1) = (u64::MAX, 0u64);
                for (sp, r) in spans.iter_mut().zip(self.row.iter()).take(rows) {
                    *sp = r.allowed.in_block(g0, g1);
                    if let Some(runs) = sp {
                        let (a, b) = runs.span();
                        u0 = u0.min(a);
                        u1 = u1.max(b);
                    }
                }
                if u0 < u1 {
                    f(&Block {
                        spans,
                        u0,
                        u1,
                        rows,
                    });
                }
            },
        );
    }

    /// The final scores of a block into `sc` (`rows × width`): the dot products of the keys the
    /// rows need (the union of their spans, or each run when the rows share their runs), then
    /// each row's modifiers and masks over its own span ([`Row::finalize`]; with `fac`, the
    /// derivative of each score with respect to its dot product, likewise). Columns outside a
    /// row's span are left as they are.
    #[cfg_attr(target_pointer_width = "64", inline(always))]
    #[cfg_attr(not(target_pointer_width = "64"), inline(never))]
    pub(crate) fn scores<B: Backend<F>>(
        &self,
        backend: B,
        blk: &Block,
        sc: &mut [F],
        mut fac: Option<&mut [F]>,
    ) {
        let (rows, w, d) = (self.rows, blk.width(), self.d);
        let Some(sc) = sc.get_mut(..rows * w) else {
            return;
        };
        // Every row of a tile has the plan's scale.
        let scale = self.row[0].mods.scale;
        let mut product = |a: u64, b: u64| {
            self.keys.pieces(
                (a, b),
                (d, self.dv),
                #[inline(always)]
                |p0, pc| {
                    let (kr, ks) = (pc.k, pc.ks);
                    let n = kr.len().checked_div(d).unwrap_or(0);
                    let c0 = (p0 - blk.u0) as usize;
                    if n == w {
                        within::matmul_nt_scaled(self.q, kr, ks, d, sc, scale);
                    } else if !MULTI || rows == 1 {
                        if let Some(dst) = sc.get_mut(c0..c0 + n) {
                            within::matmul_nt_scaled(self.q, kr, ks, d, dst, scale);
                        }
                    } else {
                        // Part of the columns of several rows (a run of the rows' shared runs: the
                        // sinks before a window, or a ring of slots that wraps): the products side
                        // by side, then into their columns.
                        let mut gather = [F::ZERO; GATHER];
                        let dt = gather.get_mut(..rows * n).unwrap_or(&mut []);
                        within::matmul_nt_scaled(self.q, kr, ks, d, dt, scale);
                        for (row, src) in chunks_mut(sc, w).zip(chunks(dt, n.max(1))) {
                            let dst = row.get_mut(c0..c0 + n).unwrap_or(&mut []);
                            for (a, &b) in dst.iter_mut().zip(src) {
                                *a = b;
                            }
                        }
                    }
                },
            );
        };
        match blk.shared() {
            Some(runs) => {
                for (a, b) in runs.iter() {
                    product(a, b);
                }
            }
            None => product(blk.u0, blk.u1),
        }
        for (r, srow) in chunks_mut(sc, w.max(1)).enumerate().take(rows) {
            let (Some(Some(runs)), Some(row)) = (blk.spans.get(r), self.row.get(r)) else {
                continue;
            };
            let (f, l) = runs.span();
            let (a, b) = ((f - blk.u0) as usize, (l - blk.u0) as usize);
            let frow = fac
                .as_deref_mut()
                .and_then(|x| x.get_mut(r * w + a..r * w + b));
            if let Some(s) = srow.get_mut(a..b) {
                row.finalize(backend, s, (f, self.koff), gap_in(runs, f), frow);
            }
        }
    }

    /// Folds the keys of the tile's range into the rows' states and output accumulators
    /// (`acc`, `rows × dv`): per block, the scores, each row's online-softmax step, then the
    /// weighted values (one product of the whole tile for the keys every row takes, each value
    /// row read once per tile; row by row for a row's other keys; each output element adds its
    /// terms in key order either way). In a causal diagonal block the rows' future keys take
    /// part as weights of +0 where that changes no bit (`zeros_add_nothing`). A tile of one row
    /// takes its blocks in runs of up to `TQ`: the run's scores, then each block's update, then
    /// each block's rescale and values (the same bits; see the comment at that branch).
    #[inline(always)]
    pub(crate) fn fold<B: Backend<F>>(
        &self,
        backend: B,
        states: &mut [QueryState<F, B>],
        acc: &mut [F],
        entropy: bool,
    ) {
        let (rows, dv) = (self.rows, self.dv);
        let mut sc = [F::ZERO; TQ * BK];
        let mut tmp = [F::ZERO; TQ * BK];
        // A block's online-softmax steps and weighted values, its scores in `sc` (`rows ×
        // width`). Inlined (as the block walk's own closure is): out of line, a closure is
        // compiled for the baseline level, not for the dispatched region it is called from.
        let mut fold_block = {
            #[inline(always)]
            |blk: &Block, sc: &mut [F], phase: Phase<F>| -> F {
                let w = blk.width();
                let Some(sc) = sc.get_mut(..rows * w) else {
                    return F::ONE;
                };
                // The causal diagonal: each row's keys start at the block's first column, and the
                // rows leave out different numbers of trailing columns. Those columns become
                // -inf and every row takes the block's whole width: the same weights, maxima
                // and sums to the bit (a -inf score is a weight of +0, which adds nothing to a
                // lane: value `i` of a row still goes into lane `i mod 32`, and the sums' own
                // ragged tails are padded with zeros anyway), with whole vectors instead of
                // sixteen ragged tails.
                let ragged = if MULTI && rows > 1 {
                    blk.ragged_end()
                } else {
                    None
                };
                if ragged.is_some() {
                    for (srow, span) in chunks_mut(sc, w.max(1)).zip(blk.spans.iter()) {
                        let end = span.map_or(0, |r| (r.first.1 - blk.u0) as usize);
                        for x in srow.iter_mut().skip(end) {
                            *x = F::NEG_INFINITY;
                        }
                    }
                }
                // Row r's scores: its span of the block's columns (the whole width when padded).
                let span_of = |r: usize| {
                    let (f, l) = blk.spans.get(r).copied().flatten()?.span();
                    if ragged.is_some() {
                        return Some((r * w, r * w + w));
                    }
                    Some((r * w + (f - blk.u0) as usize, r * w + (l - blk.u0) as usize))
                };
                if MULTI && rows > 1 {
                    // The rows' online-softmax steps side by side (`update_rows`: the same bits as
                    // one `update` per row, with their dependency chains interleaved). One row (the
                    // decoder of a kv head with one query head) takes `step`: the batch's walk over
                    // empty slots cost it 4%.
                    let mut before = [(F::ZERO, F::ZERO); TQ];
                    let mut jobs: [Job<'_, F, B>; TQ] = core::array::from_fn(|_| None);
                    let mut rest = &mut *sc;
                    let mut at = 0;
                    for (r, ((st, job), (b, t))) in states
                        .iter_mut()
                        .zip(jobs.iter_mut())
                        .zip(before.iter_mut().zip(chunks_mut(&mut tmp[..], BK)))
                        .enumerate()
                        .take(rows)
                    {
                        let Some((a, z)) = span_of(r) else {
                            continue;
                        };
                        let (Some(gap), Some(n)) = (a.checked_sub(at), z.checked_sub(a)) else {
                            break;
                        };
                        let Some((_, tail)) = core::mem::take(&mut rest).split_at_mut_checked(gap)
                        else {
                            break;
                        };
                        let Some((s, tail)) = tail.split_at_mut_checked(n) else {
                            break;
                        };
                        (rest, at) = (tail, z);
                        *b = st.begin(s, t, entropy);
                        *job = Some((&mut st.sm, s));
                    }
                    let alphas = OnlineSoftmax::update_rows(jobs);
                    for (r, ((st, acc_r), ((&alpha, &b), t))) in states
                        .iter_mut()
                        .zip(chunks_mut(acc, dv.max(1)))
                        .zip(
                            alphas
                                .iter()
                                .zip(before.iter())
                                .zip(chunks_mut(&mut tmp[..], BK)),
                        )
                        .enumerate()
                        .take(rows)
                    {
                        if let Some(wts) = span_of(r).and_then(|(a, z)| sc.get(a..z)) {
                            st.end(wts, t, acc_r, alpha, b, entropy);
                        }
                    }
                } else {
                    for (r, (st, acc_r)) in states
                        .iter_mut()
                        .zip(chunks_mut(acc, dv.max(1)))
                        .enumerate()
                        .take(rows)
                    {
                        let Some(s) = span_of(r).and_then(|(a, z)| sc.get_mut(a..z)) else {
                            continue;
                        };
                        let n = s.len();
                        let t = tmp.get_mut(..n).unwrap_or(&mut []);
                        match phase {
                            Phase::Whole => st.step(s, t, acc_r, entropy),
                            Phase::Weigh => return st.sm.update(s),
                            Phase::Apply(alpha) => {
                                st.end(s, t, acc_r, alpha, (F::ZERO, F::ZERO), false)
                            }
                        }
                    }
                }
                if matches!(phase, Phase::Weigh) {
                    return F::ONE;
                }
                match blk.shared() {
                    Some(runs) => {
                        for r in runs.iter() {
                            self.tile_values(blk, sc, acc, r, &mut tmp[..]);
                        }
                    }
                    // The padded diagonal (above): one product of the whole tile over the whole
                    // block, when the zero weights of the rows' future keys add nothing.
                    None if match ragged {
                        Some(c1) => self.zeros_add_nothing(states, acc, (c1, blk.u1)),
                        None => false,
                    } =>
                    {
                        self.tile_values(blk, sc, acc, (blk.u0, blk.u1), &mut tmp[..]);
                    }
                    // Rows whose allowed keys differ otherwise (the edge of a sliding window, or a
                    // causal diagonal whose zeros would change a bit): the keys every row takes
                    // (in the causal diagonal, all but the last few) as one product of the whole
                    // tile, each row's keys before and after them row by row; every output
                    // element still adds its terms in key order.
                    None => {
                        let common = if MULTI && rows > 1 {
                            blk.common()
                        } else {
                            None
                        };
                        match common {
                            Some((c0, c1)) => {
                                each_row(
                                    sc,
                                    blk,
                                    acc,
                                    dv,
                                    #[inline(always)]
                                    |srow, acc_r, runs| {
                                        self.row_values(blk, srow, acc_r, (runs.first.0, c0))
                                    },
                                );
                                self.tile_values(blk, sc, acc, (c0, c1), &mut tmp[..]);
                                each_row(
                                    sc,
                                    blk,
                                    acc,
                                    dv,
                                    #[inline(always)]
                                    |srow, acc_r, runs| {
                                        self.row_values(blk, srow, acc_r, (c1, runs.first.1))
                                    },
                                );
                            }
                            None => each_row(
                                sc,
                                blk,
                                acc,
                                dv,
                                #[inline(always)]
                                |srow, acc_r, runs| {
                                    for r in runs.iter() {
                                        self.row_values(blk, srow, acc_r, r);
                                    }
                                },
                            ),
                        }
                    }
                }
                F::ONE
            }
        };
        if MULTI && rows == 1 {
            // One query row (a decoding step): the scores of up to `TQ` blocks first (the scores'
            // buffer holds `TQ` blocks of one row), then each block's online-softmax update, then
            // each block's rescale and values. So the keys, and then the values, stream from memory
            // in runs of up to `TQ` blocks instead of taking turns every block. Each block's scores
            // and update are the same operations as block by block, and each accumulator takes the
            // same rescales and additions in the same order: the same bits. One query over 4,096
            // keys, d = 128, on a Zen 5 (three sets of 4–5 interleaved scratch runs): 10.4–11.3 →
            // 9.9–10.5 ns per key, 5–9% faster within each set; with each block's whole step after
            // all the scores, 10.3–10.4. Asking for the first value rows during the updates,
            // interleaving the updates with the next blocks' scores, updating the run's blocks
            // side by side (their exps independent once the running maxima are known), or each
            // update one block ahead of its values (`docs/speed-history.md`, ninth session)
            // measured no faster. With the entropy, each block's whole step follows the scores: its entropy
            // term needs the block's scores kept in the scratch row before the update and the
            // state's maximum right after it, before the next block's update.
            let mut pending = [(0u64, 0u64, None::<Runs>); TQ];
            let mut held = 0;
            let mut flush = {
                #[inline(always)]
                |pending: &[(u64, u64, Option<Runs>)], sc: &mut [F]| {
                    let block = |&(u0, u1, first): &(u64, u64, Option<Runs>)| {
                        let mut spans = [None; TQ];
                        if let Some(s) = spans.first_mut() {
                            *s = first;
                        }
                        Block {
                            spans,
                            u0,
                            u1,
                            rows: 1,
                        }
                    };
                    for (p, slot) in pending.iter().zip(chunks_mut(sc, BK)) {
                        self.scores(backend, &block(p), slot, None);
                    }
                    if entropy {
                        for (p, slot) in pending.iter().zip(chunks_mut(sc, BK)) {
                            fold_block(&block(p), slot, Phase::Whole);
                        }
                    } else {
                        let mut alphas = [F::ONE; TQ];
                        for ((p, slot), a) in
                            pending.iter().zip(chunks_mut(sc, BK)).zip(&mut alphas)
                        {
                            *a = fold_block(&block(p), slot, Phase::Weigh);
                        }
                        for ((p, slot), &a) in pending.iter().zip(chunks_mut(sc, BK)).zip(&alphas) {
                            fold_block(&block(p), slot, Phase::Apply(a));
                        }
                    }
                }
            };
            self.for_each_block(
                #[inline(always)]
                |blk| {
                    if let Some(p) = pending.get_mut(held) {
                        *p = (blk.u0, blk.u1, blk.spans.first().copied().flatten());
                        held += 1;
                    }
                    if held == TQ {
                        flush(&pending[..], &mut sc[..]);
                        held = 0;
                    }
                },
            );
            flush(pending.get(..held).unwrap_or(&[]), &mut sc[..]);
            return;
        }
        self.for_each_block(
            #[inline(always)]
            |blk| {
                self.scores(backend, blk, &mut sc[..], None);
                fold_block(blk, &mut sc[..], Phase::Whole);
            },
        );
    }
}

impl<F: Float, U: Operand<F>> Tile<'_, F, U> {
    /// Every row's weights of the keys `[a, b)` of a block (keys all the rows take; `sc`: the
    /// block's scores, rows of its width) into the accumulators (`acc`, `rows × dv`): one
    /// product of the whole tile, each value row read once (one row: [`row_values`](Self::row_values)). `gather`
    /// (at least `rows × width` values, contents free) holds the weights of a part of the
    /// columns side by side.
    #[inline(always)]
    fn tile_values(
        &self,
        blk: &Block,
        sc: &[F],
        acc: &mut [F],
        (a, b): (u64, u64),
        gather: &mut [F],
    ) {
        let (rows, dv, w) = (self.rows, self.dv, blk.width());
        let acc = acc.get_mut(..rows * dv).unwrap_or(&mut []);
        if !MULTI || rows == 1 {
            self.row_values(blk, sc, acc, (a, b));
            return;
        }
        self.keys.pieces(
            (a, b),
            (self.d, dv),
            #[inline(always)]
            |p0, pc| {
                let (vr, vs) = (pc.v, pc.vs);
                let n = vr.len().checked_div(dv).unwrap_or(0);
                let c0 = (p0 - blk.u0) as usize;
                if n == w {
                    within::matmul_nn_stored(sc, vr, vs, n, dv, acc, true);
                } else {
                    // Part of the columns: the rows' weights side by side first.
                    let wt = gather.get_mut(..rows * n).unwrap_or(&mut []);
                    for (dst, row) in chunks_mut(wt, n.max(1)).zip(chunks(sc, w)) {
                        let src = row.get(c0..c0 + n).unwrap_or(&[]);
                        for (a, &b) in dst.iter_mut().zip(src) {
                            *a = b;
                        }
                    }
                    within::matmul_nn_stored(wt, vr, vs, n, dv, acc, true);
                }
            },
        );
    }

    /// Whether weights of +0 for the keys `[a, b)` leave every accumulator of the tile as it is,
    /// bit for bit, when a product adds them in: `0·v` is ±0 for a finite value `v` (so every
    /// value of those keys must be finite: `0·inf` is NaN), and `acc + ±0` is `acc` for every
    /// `acc` but −0 (`−0 + +0 = +0`). A sum of terms is −0 only if it was −0 before them (RN:
    /// `x + y = −0` needs `x = y = −0`), so no −0 now means none while the keys before `a` are
    /// added either. A row whose maximum is not finite (NaN or `+inf` scores, or `-inf`: a
    /// state that has seen no allowed key) goes the other way too: its weights were not
    /// computed as finite-maximum weights (a conservative condition: their padded columns hold
    /// +0 as well, except a NaN row's, whose outputs are NaN either way).
    #[inline(always)]
    fn zeros_add_nothing<B: Backend<F>>(
        &self,
        states: &[QueryState<F, B>],
        acc: &[F],
        (a, b): (u64, u64),
    ) -> bool {
        let (rows, dv) = (self.rows, self.dv);
        let neg_zero = (-F::ZERO).to_bits();
        let mut ok = states.iter().take(rows).all(|s| s.sm.max().is_finite());
        ok &= all_of(acc.get(..rows * dv).unwrap_or(&[]), |x| {
            x.to_bits() != neg_zero
        });
        self.keys.pieces(
            (a, b),
            (self.d, dv),
            #[inline(always)]
            |_, pc| {
                for (j, vrow) in chunks(pc.v, dv.max(1)).enumerate() {
                    let s = pc.vs.get(j).copied().unwrap_or_default();
                    ok &= all_of(vrow, |v| v.load(s).is_finite());
                }
            },
        );
        ok
    }

    /// A row's weights of the keys `[a, b)` of a block (`srow`: the row's scores, the block's
    /// width) into its accumulator.
    #[inline(always)]
    fn row_values(&self, blk: &Block, srow: &[F], acc_r: &mut [F], (a, b): (u64, u64)) {
        if a >= b {
            return;
        }
        let dv = self.dv;
        self.keys.pieces(
            (a, b),
            (self.d, dv),
            #[inline(always)]
            |p0, pc| {
                let (vr, vs) = (pc.v, pc.vs);
                let n = vr.len().checked_div(dv).unwrap_or(0);
                let c0 = (p0 - blk.u0) as usize;
                let wr = srow.get(c0..c0 + n).unwrap_or(&[]);
                within::matmul_nn_stored(wr, vr, vs, n, dv, acc_r, true);
            },
        );
    }
}

impl<'a, F: Float> Tile<'a, F> {
    /// Query `t` of head `h` as a row of a tile over the keys `range`: its allowed keys, its
    /// score modifiers, and its rows of the bias and the keep-mask.
    #[inline(always)]
    fn query_row(p: &Plan<'a, F>, h: usize, t: usize, range: (u64, u64)) -> Row<'a, F> {
        let (s, qp) = (p.s, p.qpos(t));
        Row {
            allowed: p.rule.allowed(qp, p.koff(), s as u64, range),
            mods: Mods {
                scale: p.scale,
                cap: p.softcap,
                slope: p.slope(h),
                qp,
            },
            // Row `(h·T + t)` of the bias, row `t` of the mask (`part` multiplies checked: the
            // products were only validated when the option is given).
            bias: p.bias.map(|b| part(b, (h * p.t).saturating_add(t), s)),
            keep: p.mask.map(|m| part(m, t, s)),
        }
    }

    /// The tile of queries `t0 .. t0 + rows` of head `h` of a full computation, over the keys
    /// `range` of its kv head.
    #[inline(always)]
    pub(crate) fn of_queries(
        p: &Plan<'a, F>,
        x: &Qkv<'a, F>,
        h: usize,
        (t0, rows): (usize, usize),
        range: (u64, u64),
    ) -> Self {
        let g = h.checked_div(p.group).unwrap_or(0);
        let (d, dv, s) = (p.d, p.dv, p.s);
        let q_h = part(x.q, h, p.t * d);
        let keys = Keys::Contiguous {
            k: part(x.k, g, s * d),
            v: part(x.v, g, s * dv),
        };
        let q = q_h.get(t0 * d..(t0 + rows) * d).unwrap_or(&[]);
        Tile::new((keys, q, d, dv), (range, p.koff()), rows, |r| {
            Self::query_row(p, h, t0 + r, range)
        })
    }
}

/// Calls `f(scores, accumulator, runs)` for each row of a block's scores (`sc`, rows of the
/// block's width) that has keys in the block.
#[inline(always)]
fn each_row<F: Float>(
    sc: &[F],
    blk: &Block,
    acc: &mut [F],
    dv: usize,
    mut f: impl FnMut(&[F], &mut [F], Runs),
) {
    for ((srow, span), acc_r) in chunks(sc, blk.width().max(1))
        .zip(blk.spans.iter())
        .zip(chunks_mut(acc, dv.max(1)))
        .take(blk.rows)
    {
        if let Some(runs) = span {
            f(srow, acc_r, *runs);
        }
    }
}

/// Whether `p` holds for every element of `x`: one fold without an early exit, which LLVM
/// vectorises as a reduction (compares into mask registers at the AVX-512 level). A
/// short-circuiting `all` ran one element at a time; an array of sixteen flags, each chunk of
/// sixteen values folded into it, was vectorised across chunks instead, with sixteen gathers per
/// sixteen chunks: mostly 360–500 ns per causal diagonal block of a 16-query tile on a Zen 5 in
/// a scratch timing (best of 1 s per width), the whole extra cost of that block over an unmasked
/// one there.
#[inline(always)]
fn all_of<T: Copy>(x: &[T], p: impl Fn(T) -> bool) -> bool {
    x.iter().fold(true, |ok, &v| ok & p(v))
}

/// The offsets of a gap within a span starting at key `f`.
#[inline(always)]
fn gap_in(runs: &Runs, f: u64) -> Option<(usize, usize)> {
    runs.gap()
        .map(|(a, b)| ((a - f) as usize, (b - f) as usize))
}
