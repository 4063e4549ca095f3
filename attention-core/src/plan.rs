//! A validated call and its geometry: the dimensions and options checked once at the API
//! boundary ([`Plan`]), which keys each query may see ([`Rule`], [`Allowed`], [`Runs`]), and the
//! walk over the key blocks those keys fall in ([`for_each_block`]).

use softmax_core::Float;

use crate::error::Error;
use crate::math::{alibi_slope_f64, inv_sqrt};
use crate::options::{Causal, Dims, Options, Output, Qkv};

/// Which keys a query may attend, by position; shared by the full computation and the decoder.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Rule {
    pub(crate) causal: bool,
    pub(crate) window: Option<u64>,
    pub(crate) sinks: u64,
}

/// The allowed keys of one query: the sinks `[s0, s1)` and the main interval `[m0, m1)`
/// (either may be empty), as key indices.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Allowed {
    pub(crate) s0: u64,
    pub(crate) s1: u64,
    pub(crate) m0: u64,
    pub(crate) m1: u64,
}

impl Rule {
    /// The keys `j` in `keys` (a range within `0..n`) a query at position `qp` may attend, when
    /// key `j` sits at position `j + koff`. Every bound is non-decreasing in `qp`.
    #[inline(always)]
    pub(crate) fn allowed(&self, qp: u64, koff: u64, n: u64, keys: (u64, u64)) -> Allowed {
        let hi = if self.causal {
            if qp < koff {
                0
            } else {
                (qp - koff).saturating_add(1).min(n)
            }
        } else {
            n
        };
        let (s1, m0, m1) = match self.window {
            None => (0, 0, hi),
            Some(w) => {
                // |qp − (j + koff)| < w  ⟺  qp + 1 − w <= j + koff < qp + w.
                let lo = qp.saturating_add(1).saturating_sub(w).saturating_sub(koff);
                let top = qp.saturating_add(w).saturating_sub(koff);
                (self.sinks.min(hi), lo, hi.min(top))
            }
        };
        let (ks, ke) = keys;
        Allowed {
            s0: ks,
            s1: s1.min(ke),
            m0: m0.max(ks),
            m1: m1.min(ke),
        }
    }
}

impl Allowed {
    /// The runs of allowed keys within `[g0, g1)`, merged when they touch: `(span, runs)` with
    /// `span = [first, end)` covering both runs; `None` when nothing in the block is allowed.
    #[inline(always)]
    pub(crate) fn in_block(&self, g0: u64, g1: u64) -> Option<Runs> {
        let a = (self.s0.max(g0), self.s1.min(g1));
        let b = (self.m0.max(g0), self.m1.min(g1));
        let a_ok = a.0 < a.1;
        let b_ok = b.0 < b.1;
        match (a_ok, b_ok) {
            (false, false) => None,
            (true, false) => Some(Runs::one(a)),
            (false, true) => Some(Runs::one(b)),
            (true, true) => {
                if b.0 <= a.1 && a.0 <= b.1 {
                    Some(Runs::one((a.0.min(b.0), a.1.max(b.1))))
                } else if a.0 < b.0 {
                    Some(Runs::two(a, b))
                } else {
                    Some(Runs::two(b, a))
                }
            }
        }
    }
}

/// One or two ascending, disjoint, non-adjacent runs of keys `[start, end)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Runs {
    pub(crate) first: (u64, u64),
    pub(crate) second: Option<(u64, u64)>,
}

impl Runs {
    fn one(r: (u64, u64)) -> Self {
        Runs {
            first: r,
            second: None,
        }
    }

    fn two(a: (u64, u64), b: (u64, u64)) -> Self {
        Runs {
            first: a,
            second: Some(b),
        }
    }

    /// `[first key, one past the last key)`.
    #[inline(always)]
    pub(crate) fn span(&self) -> (u64, u64) {
        match self.second {
            None => self.first,
            Some(b) => (self.first.0, b.1),
        }
    }

    /// The runs, in order.
    #[inline(always)]
    pub(crate) fn iter(&self) -> impl Iterator<Item = (u64, u64)> {
        [Some(self.first), self.second].into_iter().flatten()
    }

    /// The gap between the runs (disallowed keys inside the span), if any.
    #[inline(always)]
    pub(crate) fn gap(&self) -> Option<(u64, u64)> {
        self.second.map(|b| (self.first.1, b.0))
    }
}

/// Calls `f(g0, g1)` for every key block `[g0, g1)` (blocks of `bk` keys on the fixed grid
/// `g·bk`, clipped to `keys`) that meets `[s0, s1) ∪ [m0, m1)`, in ascending order, each once.
#[inline(always)]
pub(crate) fn for_each_block(
    union: &Allowed,
    bk: u64,
    keys: (u64, u64),
    mut f: impl FnMut(u64, u64),
) {
    let mut next = 0u64;
    for (lo, hi) in [(union.s0, union.s1), (union.m0, union.m1)] {
        if lo >= hi {
            continue;
        }
        let first = lo.checked_div(bk).unwrap_or(0).max(next);
        let last = (hi - 1).checked_div(bk).unwrap_or(0).saturating_add(1);
        let mut g = first;
        while g < last {
            let g0 = g.saturating_mul(bk).max(keys.0);
            let g1 = g.saturating_add(1).saturating_mul(bk).min(keys.1);
            if g0 < g1 {
                f(g0, g1);
            }
            g += 1;
        }
        next = next.max(last);
    }
}

/// `a·b`, or [`Error::ShapeOverflow`].
pub(crate) fn mul(a: usize, b: usize) -> Result<usize, Error> {
    a.checked_mul(b).ok_or(Error::ShapeOverflow)
}

/// The output buffers' lengths for `rows` query rows of `dv` values: `o` holds `rows·dv`, `lse`
/// and `entropy` (when given) `rows`.
pub(crate) fn check_output<F>(out: &Output<'_, F>, rows: usize, dv: usize) -> Result<(), Error> {
    check_len("o", mul(rows, dv)?, out.o.len())?;
    if let Some(l) = &out.lse {
        check_len("lse", rows, l.len())?;
    }
    if let Some(e) = &out.entropy {
        check_len("entropy", rows, e.len())?;
    }
    Ok(())
}

/// `Ok` if `found == expected`.
pub(crate) fn check_len(what: &'static str, expected: usize, found: usize) -> Result<(), Error> {
    if expected == found {
        Ok(())
    } else {
        Err(Error::LengthMismatch {
            what,
            expected,
            found,
        })
    }
}

/// Checks the score parameters every entry point shares (scale, soft-cap) and resolves the
/// scale; `d` is the query/key width.
pub(crate) fn resolve_scale<F: Float>(
    scale: Option<F>,
    softcap: Option<F>,
    d: usize,
) -> Result<F, Error> {
    let scale = match scale {
        Some(s) if s.is_finite() => s,
        Some(_) => return Err(Error::InvalidScale),
        None => inv_sqrt(d),
    };
    if let Some(c) = softcap {
        if !(c > F::ZERO && c.is_finite()) {
            return Err(Error::InvalidSoftcap);
        }
    }
    Ok(scale)
}

/// Checks the head counts.
pub(crate) fn check_heads(heads: usize, kv_heads: usize) -> Result<usize, Error> {
    if heads == 0 {
        return Err(Error::ZeroDim { what: "heads" });
    }
    if kv_heads == 0 {
        return Err(Error::ZeroDim { what: "kv_heads" });
    }
    if !heads.is_multiple_of(kv_heads) {
        return Err(Error::KvHeads { heads, kv_heads });
    }
    Ok(heads.checked_div(kv_heads).unwrap_or(0))
}

/// A validated call: dimensions, resolved scale, the position rule and the optional inputs with
/// their lengths checked.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Plan<'a, F> {
    pub(crate) heads: usize,
    pub(crate) group: usize,
    pub(crate) t: usize,
    pub(crate) s: usize,
    pub(crate) d: usize,
    pub(crate) dv: usize,
    pub(crate) scale: F,
    pub(crate) softcap: Option<F>,
    pub(crate) rule: Rule,
    pub(crate) top_left: bool,
    pub(crate) mask: Option<&'a [bool]>,
    pub(crate) bias: Option<&'a [F]>,
    pub(crate) alibi: bool,
    pub(crate) sink_logits: Option<&'a [F]>,
}

impl<'a, F: Float> Plan<'a, F> {
    /// Validates the dimensions, the inputs' lengths and the options.
    pub(crate) fn new(dims: &Dims, x: &Qkv<'_, F>, opts: &Options<'a, F>) -> Result<Self, Error> {
        let group = check_heads(dims.heads, dims.kv_heads)?;
        if dims.d == 0 {
            return Err(Error::ZeroDim { what: "d" });
        }
        if dims.dv == 0 {
            return Err(Error::ZeroDim { what: "dv" });
        }
        let ht = mul(dims.heads, dims.t)?;
        let ks = mul(dims.kv_heads, dims.s)?;
        check_len("q", mul(ht, dims.d)?, x.q.len())?;
        check_len("k", mul(ks, dims.d)?, x.k.len())?;
        check_len("v", mul(ks, dims.dv)?, x.v.len())?;
        let ts = mul(dims.t, dims.s)?;
        if let Some(m) = opts.mask() {
            check_len("mask", ts, m.len())?;
        }
        if let Some(b) = opts.bias() {
            check_len("bias", mul(dims.heads, ts)?, b.len())?;
        }
        if let Some(z) = opts.sink_logits() {
            check_len("sink_logits", dims.heads, z.len())?;
        }
        let scale = resolve_scale(opts.scale(), opts.softcap(), dims.d)?;
        if opts.window() == Some(0) {
            return Err(Error::InvalidWindow);
        }
        Ok(Plan {
            heads: dims.heads,
            group,
            t: dims.t,
            s: dims.s,
            d: dims.d,
            dv: dims.dv,
            scale,
            softcap: opts.softcap(),
            rule: Rule {
                causal: opts.causal() != Causal::None,
                window: opts.window().map(|w| w as u64),
                sinks: opts.sinks() as u64,
            },
            top_left: opts.causal() == Causal::TopLeft,
            mask: opts.mask(),
            bias: opts.bias(),
            alibi: opts.alibi(),
            sink_logits: opts.sink_logits(),
        })
    }

    /// Key `j` sits at position `j + koff()`.
    #[inline(always)]
    pub(crate) fn koff(&self) -> u64 {
        self.t as u64
    }

    /// The position of query `t` (offset like the keys: [`koff`](Self::koff)).
    #[inline(always)]
    pub(crate) fn qpos(&self, t: usize) -> u64 {
        t as u64
            + if self.top_left {
                self.t as u64
            } else {
                self.s as u64
            }
    }

    /// The ALiBi slope of head `h`, or `None` without ALiBi.
    #[inline(always)]
    pub(crate) fn slope(&self, h: usize) -> Option<F> {
        if self.alibi {
            Some(F::from_f64(alibi_slope_f64(self.heads, h)))
        } else {
            None
        }
    }

    /// The sink logit of head `h`, if any.
    #[inline(always)]
    pub(crate) fn sink(&self, h: usize) -> Option<F> {
        self.sink_logits.and_then(|z| z.get(h).copied())
    }
}

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

/// Where the decoder's cache keeps each position: without a window, position `p` in slot `p`;
/// with one, the first `sinks` positions in slots `0..sinks` and every later position in a ring
/// of `size` slots after them.
#[derive(Clone, Copy, Debug)]
pub(crate) struct SlotMap {
    /// `(sinks, size)` of the window, if any.
    pub(crate) ring: Option<(u64, u64)>,
}

impl SlotMap {
    /// The slot of position `pos`.
    #[inline(always)]
    pub(crate) fn slot(&self, pos: u64) -> u64 {
        match self.ring {
            Some((sinks, size)) if pos >= sinks => {
                sinks + (pos - sinks).checked_rem(size).unwrap_or(0)
            }
            _ => pos,
        }
    }

    /// How many positions from `pos` on lie in consecutive slots.
    #[inline(always)]
    fn contiguous(&self, pos: u64) -> u64 {
        match self.ring {
            Some((sinks, size)) => sinks.saturating_add(size).saturating_sub(self.slot(pos)),
            None => u64::MAX,
        }
    }

    /// Calls `f(first position, first slot, count)` for the runs of consecutive slots that hold
    /// the positions `[a, b)`, in order (at most two for the positions a query may see: the
    /// window's ring wraps at most once within them).
    #[inline(always)]
    pub(crate) fn for_each_run(&self, (a, b): (u64, u64), mut f: impl FnMut(u64, usize, usize)) {
        let mut pos = a;
        while pos < b {
            let n = (b - pos).min(self.contiguous(pos)).max(1);
            f(pos, self.slot(pos) as usize, n as usize);
            pos += n;
        }
    }
}
