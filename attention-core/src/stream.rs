//! The streaming causal decoder: a KV cache of fixed capacity (a ring buffer behind the
//! attention sinks), one token at a time, with absolute positions.

use softmax_core::backend::Backend;
use softmax_core::{linalg, simd, Float};

use crate::kernel::Rows as _;
use crate::kernel::{finalize, gap_in, part, part_mut, Mods, Tile, BK, TQ};
use crate::options::{check_heads, check_len, mul, resolve_scale, Causal, Options, Output, Rule};
use crate::{Error, QueryState};

/// The eviction rule of a cache: keep the first `sinks` tokens and a rolling window of the most
/// recent `size` tokens (StreamingLLM), exactly what attention with
/// [`Options::with_window`]`(size)` and [`Options::with_sinks`]`(sinks)` reads.
///
/// # Examples
///
/// ```
/// let w = attention_core::Window::new(256, 4);
/// assert_eq!((w.size, w.sinks), (256, 4));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Window {
    /// The window `W` (`>= 1`): a query sees keys at distance `< W`.
    pub size: usize,
    /// The first `sinks` tokens stay visible (and cached) forever.
    pub sinks: usize,
}

impl Window {
    /// A window of `size` positions with `sinks` attention sinks.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(attention_core::Window::new(8, 0).size, 8);
    /// ```
    pub const fn new(size: usize, sinks: usize) -> Self {
        Window { size, sinks }
    }

    /// The most tokens a cache with this rule ever holds: `sinks + size`.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(attention_core::Window::new(8, 2).tokens(), 10);
    /// ```
    pub const fn tokens(&self) -> usize {
        self.sinks.saturating_add(self.size)
    }
}

/// The bookkeeping of a cache: dimensions, capacity, eviction rule, tokens seen.
#[derive(Clone, Copy, Debug)]
struct Ring {
    hkv: usize,
    d: usize,
    dv: usize,
    cap: usize,
    window: Option<Window>,
    /// Tokens pushed so far (the next token's absolute position).
    len: u64,
}

impl Ring {
    fn new(
        hkv: usize,
        d: usize,
        dv: usize,
        cap: usize,
        window: Option<Window>,
    ) -> Result<Self, Error> {
        if hkv == 0 {
            return Err(Error::ZeroDim { what: "kv_heads" });
        }
        if d == 0 {
            return Err(Error::ZeroDim { what: "d" });
        }
        if dv == 0 {
            return Err(Error::ZeroDim { what: "dv" });
        }
        if window.is_some_and(|w| w.size == 0) {
            return Err(Error::InvalidWindow);
        }
        Ok(Ring {
            hkv,
            d,
            dv,
            cap,
            window,
            len: 0,
        })
    }

    /// The tokens the cache must hold when `n` tokens have been pushed.
    fn held(&self, n: u64) -> u64 {
        match self.window {
            None => n,
            Some(w) => n.min(w.tokens() as u64),
        }
    }

    /// The slot of the token at absolute position `pos` (sinks first, then the ring).
    #[inline(always)]
    fn slot(&self, pos: u64) -> u64 {
        match self.window {
            Some(w) if pos >= w.sinks as u64 => {
                w.sinks as u64
                    + (pos - w.sinks as u64)
                        .checked_rem(w.size as u64)
                        .unwrap_or(0)
            }
            _ => pos,
        }
    }

    /// How many positions from `pos` on lie in consecutive slots.
    #[inline(always)]
    fn contiguous(&self, pos: u64) -> u64 {
        match self.window {
            Some(w) => (w.tokens() as u64).saturating_sub(self.slot(pos)),
            None => u64::MAX,
        }
    }

    fn push<F: Float>(
        &mut self,
        ks: &mut [F],
        vs: &mut [F],
        k: &[F],
        v: &[F],
    ) -> Result<(), Error> {
        check_len("k", mul(self.hkv, self.d)?, k.len())?;
        check_len("v", mul(self.hkv, self.dv)?, v.len())?;
        let n = self.len.saturating_add(1);
        if self.held(n) > self.cap as u64 {
            return Err(Error::CacheFull { capacity: self.cap });
        }
        let slot = self.slot(self.len) as usize;
        for (g, (kn, vn)) in k
            .rows(self.d.max(1))
            .zip(v.rows(self.dv.max(1)))
            .enumerate()
        {
            let kh = part_mut(ks, g, self.cap * self.d);
            if let Some(dst) = kh.get_mut(slot * self.d..(slot + 1) * self.d) {
                for (a, b) in dst.iter_mut().zip(kn) {
                    *a = *b;
                }
            }
            let vh = part_mut(vs, g, self.cap * self.dv);
            if let Some(dst) = vh.get_mut(slot * self.dv..(slot + 1) * self.dv) {
                for (a, b) in dst.iter_mut().zip(vn) {
                    *a = *b;
                }
            }
        }
        self.len = n;
        Ok(())
    }

    fn attend<F: Float, B: Backend<F>>(
        &self,
        backend: B,
        ks: &[F],
        vs: &[F],
        q: &[F],
        opts: &Options<'_, F>,
        out: Output<'_, F>,
    ) -> Result<(), Error> {
        let (d, dv) = (self.d, self.dv);
        if opts.mask().is_some() {
            return Err(Error::UnsupportedOption { what: "mask" });
        }
        if opts.bias().is_some() {
            return Err(Error::UnsupportedOption { what: "bias" });
        }
        if opts.causal() == Causal::TopLeft {
            return Err(Error::UnsupportedOption { what: "top_left" });
        }
        let same_window = match self.window {
            None => opts.window().is_none(),
            Some(w) => opts.window() == Some(w.size) && opts.sinks() == w.sinks,
        };
        if !same_window {
            return Err(Error::UnsupportedOption {
                what: "window/sinks differ from the cache's",
            });
        }
        let scale = resolve_scale(opts, d)?;
        if !q.len().is_multiple_of(d) {
            return Err(Error::LengthMismatch {
                what: "q",
                expected: q.len().checked_next_multiple_of(d).unwrap_or(q.len()),
                found: q.len(),
            });
        }
        let heads = q.len().checked_div(d).unwrap_or(0);
        let group = check_heads(heads, self.hkv)?;
        check_len("o", mul(heads, dv)?, out.o.len())?;
        if let Some(l) = &out.lse {
            check_len("lse", heads, l.len())?;
        }
        if let Some(e) = &out.entropy {
            check_len("entropy", heads, e.len())?;
        }
        if let Some(z) = opts.sink_logits() {
            check_len("sink_logits", heads, z.len())?;
        }
        if self.len == 0 {
            return Err(Error::EmptyCache);
        }
        let pos = self.len - 1;
        let rule = Rule {
            causal: true,
            window: self.window.map(|w| w.size as u64),
            sinks: self.window.map_or(0, |w| w.sinks as u64),
        };
        let keys = (0, self.len);
        let allowed = rule.allowed(pos, 0, self.len, keys);
        let want_entropy = out.entropy.is_some();
        let Output {
            o,
            mut lse,
            mut entropy,
        } = out;
        o.fill(F::ZERO);
        for g in 0..self.hkv {
            let kh = part(ks, g, self.cap * d);
            let vh = part(vs, g, self.cap * dv);
            let q_g = part(q, g, group * d);
            let o_g = part_mut(o, g, group * dv);
            simd::dispatch(
                #[inline(always)]
                || {
                    let mut r0 = 0;
                    while r0 < group {
                        let rows = TQ.min(group - r0);
                        let h0 = g * group + r0;
                        let mut states = [QueryState::new(backend); TQ];
                        let states = states.get_mut(..rows).unwrap_or(&mut []);
                        let acc = o_g.get_mut(r0 * dv..(r0 + rows) * dv).unwrap_or(&mut []);
                        let q_rows = q_g.get(r0 * d..(r0 + rows) * d).unwrap_or(&[]);
                        let tile = Tile::new(rows, keys, |_| allowed);
                        let mut buf = [F::ZERO; TQ * BK];
                        let mut dots = [F::ZERO; TQ * BK];
                        let mut tmp = [F::ZERO; BK];
                        tile.for_each_block(keys, |spans, _| {
                            let Some(Some(runs)) = spans.first().copied() else {
                                return;
                            };
                            let (f, l) = runs.span();
                            let w = (l - f) as usize;
                            let Some(sc) = buf.get_mut(..rows * w) else {
                                return;
                            };
                            // The dot products of each run of cached keys, scattered into
                            // their columns (the gap between the runs is masked below).
                            for run in [Some(runs.first), runs.second].into_iter().flatten() {
                                self.for_each_slot_run(run, |pos0, slot0, n| {
                                    let kr = kh.get(slot0 * d..(slot0 + n) * d).unwrap_or(&[]);
                                    let Some(dt) = dots.get_mut(..rows * n) else {
                                        return;
                                    };
                                    if n == 0 || linalg::matmul_nt(q_rows, kr, d, dt).is_err() {
                                        return;
                                    }
                                    let c0 = (pos0 - f) as usize;
                                    for (row, drow) in sc.rows_mut(w.max(1)).zip(dt.rows(n.max(1)))
                                    {
                                        if let Some(dst) = row.get_mut(c0..c0 + n) {
                                            for (a, b) in dst.iter_mut().zip(drow) {
                                                *a = *b;
                                            }
                                        }
                                    }
                                });
                            }
                            for (r, (row, (st, acc_r))) in sc
                                .rows_mut(w.max(1))
                                .zip(states.iter_mut().zip(acc.rows_mut(dv.max(1))))
                                .enumerate()
                            {
                                let m = Mods {
                                    scale,
                                    cap: opts.softcap(),
                                    slope: if opts.alibi() {
                                        Some(crate::alibi_slope::<F>(heads, h0 + r))
                                    } else {
                                        None
                                    },
                                    qp: pos,
                                };
                                finalize(backend, row, &m, f, None, None, gap_in(&runs, f), None);
                                st.step(
                                    row,
                                    tmp.get_mut(..w).unwrap_or(&mut []),
                                    acc_r,
                                    want_entropy,
                                );
                            }
                            // The value product of every run of cached values, once for all
                            // the tile's rows (their weights gathered side by side): each
                            // value row is read once per tile, and each output element adds
                            // its terms in key order as a product per row would.
                            for run in [Some(runs.first), runs.second].into_iter().flatten() {
                                self.for_each_slot_run(run, |pos0, slot0, n| {
                                    let c0 = (pos0 - f) as usize;
                                    let Some(wt) = dots.get_mut(..rows * n) else {
                                        return;
                                    };
                                    for (dst, row) in wt.rows_mut(n.max(1)).zip(sc.rows(w.max(1))) {
                                        let src = row.get(c0..c0 + n).unwrap_or(&[]);
                                        for (a, &b) in dst.iter_mut().zip(src) {
                                            *a = b;
                                        }
                                    }
                                    let vr = vh.get(slot0 * dv..(slot0 + n) * dv).unwrap_or(&[]);
                                    let _ = linalg::matmul_nn(wt, vr, n, dv, acc, true);
                                });
                            }
                        });
                        for (r, (st, acc_r)) in
                            states.iter_mut().zip(acc.rows_mut(dv.max(1))).enumerate()
                        {
                            let h = h0 + r;
                            let sink = opts.sink_logits().and_then(|z| z.get(h)).copied();
                            let (l, e) = st.finish_row(acc_r, sink);
                            if let Some(v) = lse.as_deref_mut().and_then(|x| x.get_mut(h)) {
                                *v = l;
                            }
                            if let Some(v) = entropy.as_deref_mut().and_then(|x| x.get_mut(h)) {
                                *v = e;
                            }
                        }
                        r0 += rows;
                    }
                },
            );
        }
        Ok(())
    }

    /// Calls `f(first position, first slot, count)` for the runs of consecutive slots that hold
    /// the positions `[a, b)` (at most two: the ring wraps at most once within a block).
    #[inline(always)]
    fn for_each_slot_run(&self, (a, b): (u64, u64), mut f: impl FnMut(u64, usize, usize)) {
        let mut pos = a;
        while pos < b {
            let n = (b - pos).min(self.contiguous(pos)).max(1);
            f(pos, self.slot(pos) as usize, n as usize);
            pos += n;
        }
    }
}

/// A KV cache for one layer with a capacity fixed at compile time: `HKV` key/value heads of
/// widths `D` (keys) and `DV` (values), `CAP` token slots, stored inline (`2·HKV·CAP·(D+DV)`
/// bytes per byte of `F`... i.e. `size_of::<Self>()`, constant from the first token to the
/// last). The streaming causal decoder: [`push`](Self::push) each token's keys and values,
/// then [`attend`](Self::attend) with its query (or both at once: [`decode`](Self::decode)).
///
/// With a [`Window`], the cache keeps the first `sinks` tokens and a ring buffer of the most
/// recent `size` (no shifting: the oldest slot is overwritten), so an endless stream needs
/// `sinks + size <= CAP` slots and every token costs the same (set by `sinks + size`, not by the
/// stream's length). Positions are absolute (a `u64` count), so ALiBi and the window see the
/// same distances as the full computation: the outputs equal [`attention`](crate::attention)
/// with [`Causal::BottomRight`] over the whole stream and the same options, **bit for bit**
/// (the key blocks sit on the same grid; `harness/tests/attention_properties.rs`).
///
/// # Examples
///
/// ```
/// use attention_core::{KvCache, Options, Output, Window, backend::Poly};
/// // 2 query heads sharing 1 kv head, d = dv = 4, a window of 3 tokens plus 1 sink.
/// let mut cache = KvCache::<f32, 1, 4, 4, 4>::new(Some(Window::new(3, 1)))?;
/// let opts = Options::new().with_window(3).with_sinks(1);
/// let mut o = [0.0f32; 8];
/// for t in 0..10 {
///     let x = t as f32;
///     let (k, v) = ([x, 1.0, 0.0, 0.0], [x, x, x, x]);
///     let q = [1.0f32; 8];
///     cache.decode(Poly, &q, &k, &v, &opts, Output::new(&mut o))?;
/// }
/// assert_eq!((cache.len(), cache.cached()), (10, 4)); // sink 0 and tokens 7, 8, 9
/// assert!(o[0] > 7.0 && o[0] < 9.0);
/// # Ok::<(), attention_core::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct KvCache<F, const HKV: usize, const CAP: usize, const D: usize, const DV: usize> {
    k: [[[F; D]; CAP]; HKV],
    v: [[[F; DV]; CAP]; HKV],
    ring: Ring,
}

impl<F: Float, const HKV: usize, const CAP: usize, const D: usize, const DV: usize>
    KvCache<F, HKV, CAP, D, DV>
{
    /// An empty cache: keeping every token (`None`, at most `CAP` of them) or evicting by a
    /// [`Window`].
    ///
    /// # Errors
    ///
    /// [`Error::ZeroDim`] if `HKV`, `D` or `DV` is 0; [`Error::InvalidWindow`] for a window of
    /// size 0.
    ///
    /// # Examples
    ///
    /// ```
    /// use attention_core::{KvCache, Window};
    /// let c = KvCache::<f32, 2, 64, 8, 8>::new(Some(Window::new(60, 4)))?;
    /// assert_eq!((c.capacity(), c.len()), (64, 0));
    /// # Ok::<(), attention_core::Error>(())
    /// ```
    pub fn new(window: Option<Window>) -> Result<Self, Error> {
        Ok(KvCache {
            k: [[[F::ZERO; D]; CAP]; HKV],
            v: [[[F::ZERO; DV]; CAP]; HKV],
            ring: Ring::new(HKV, D, DV, CAP, window)?,
        })
    }

    /// Appends one token's keys (`HKV × D`) and values (`HKV × DV`), evicting the oldest
    /// window token if the window is full.
    ///
    /// # Errors
    ///
    /// [`Error::LengthMismatch`]; [`Error::CacheFull`] if the cache would need more than `CAP`
    /// tokens (no window and `CAP` tokens already, or `sinks + size > CAP`); the cache is
    /// unchanged then.
    ///
    /// # Examples
    ///
    /// ```
    /// use attention_core::{Error, KvCache};
    /// let mut c = KvCache::<f32, 1, 1, 2, 1>::new(None)?;
    /// c.push(&[1.0, 2.0], &[3.0])?;
    /// assert_eq!(c.push(&[1.0, 2.0], &[3.0]), Err(Error::CacheFull { capacity: 1 }));
    /// # Ok::<(), attention_core::Error>(())
    /// ```
    pub fn push(&mut self, k: &[F], v: &[F]) -> Result<(), Error> {
        self.ring.push(
            self.k.as_flattened_mut().as_flattened_mut(),
            self.v.as_flattened_mut().as_flattened_mut(),
            k,
            v,
        )
    }

    /// Attention of the newest token's queries (`heads × D`, `heads` a multiple of `HKV`) over
    /// the cached tokens, into `out` (`heads × DV`, optional lse and entropy, `heads` each).
    /// `opts` gives the scale, ALiBi, soft-cap and sink logits; its window and sinks must be the
    /// cache's.
    ///
    /// # Errors
    ///
    /// [`Error::EmptyCache`] before the first push; [`Error::UnsupportedOption`] for a mask, a
    /// bias, top-left causality, or a window/sinks other than the cache's; otherwise as
    /// [`attention`](crate::attention).
    ///
    /// # Examples
    ///
    /// ```
    /// use attention_core::{KvCache, Options, Output, backend::Poly};
    /// let mut c = KvCache::<f64, 1, 8, 2, 1>::new(None)?;
    /// c.push(&[0.0, 0.0], &[1.0])?;
    /// c.push(&[0.0, 0.0], &[3.0])?;
    /// let mut o = [0.0];
    /// c.attend(Poly, &[1.0, 1.0], &Options::new(), Output::new(&mut o))?;
    /// assert_eq!(o, [2.0]); // equal scores: the mean
    /// # Ok::<(), attention_core::Error>(())
    /// ```
    pub fn attend<B: Backend<F>>(
        &self,
        backend: B,
        q: &[F],
        opts: &Options<'_, F>,
        out: Output<'_, F>,
    ) -> Result<(), Error> {
        self.ring.attend(
            backend,
            self.k.as_flattened().as_flattened(),
            self.v.as_flattened().as_flattened(),
            q,
            opts,
            out,
        )
    }

    /// [`push`](Self::push) then [`attend`](Self::attend): one step of the decoder.
    ///
    /// # Errors
    ///
    /// As the two.
    ///
    /// # Examples
    ///
    /// ```
    /// use attention_core::{KvCache, Options, Output, backend::Poly};
    /// let mut c = KvCache::<f32, 1, 4, 1, 1>::new(None)?;
    /// let mut o = [0.0f32];
    /// c.decode(Poly, &[1.0], &[0.5], &[9.0], &Options::new(), Output::new(&mut o))?;
    /// assert_eq!(o, [9.0]);
    /// # Ok::<(), attention_core::Error>(())
    /// ```
    pub fn decode<B: Backend<F>>(
        &mut self,
        backend: B,
        q: &[F],
        k: &[F],
        v: &[F],
        opts: &Options<'_, F>,
        out: Output<'_, F>,
    ) -> Result<(), Error> {
        self.push(k, v)?;
        self.attend(backend, q, opts, out)
    }

    /// Tokens pushed so far (the next token's position).
    ///
    /// # Examples
    ///
    /// ```
    /// let c = attention_core::KvCache::<f32, 1, 4, 1, 1>::new(None)?;
    /// assert_eq!(c.len(), 0);
    /// # Ok::<(), attention_core::Error>(())
    /// ```
    pub fn len(&self) -> u64 {
        self.ring.len
    }

    /// Whether no token has been pushed.
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(attention_core::KvCache::<f32, 1, 4, 1, 1>::new(None)?.is_empty());
    /// # Ok::<(), attention_core::Error>(())
    /// ```
    pub fn is_empty(&self) -> bool {
        self.ring.len == 0
    }

    /// Tokens held now (`min(len, sinks + size)` with a window, `len` without).
    ///
    /// # Examples
    ///
    /// ```
    /// let mut c = attention_core::KvCache::<f32, 1, 4, 1, 1>::new(None)?;
    /// c.push(&[0.0], &[0.0])?;
    /// assert_eq!(c.cached(), 1);
    /// # Ok::<(), attention_core::Error>(())
    /// ```
    pub fn cached(&self) -> usize {
        self.ring.held(self.ring.len) as usize
    }

    /// The capacity `CAP`, in tokens.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(attention_core::KvCache::<f32, 1, 4, 1, 1>::new(None)?.capacity(), 4);
    /// # Ok::<(), attention_core::Error>(())
    /// ```
    pub fn capacity(&self) -> usize {
        CAP
    }

    /// The eviction rule.
    ///
    /// # Examples
    ///
    /// ```
    /// use attention_core::{KvCache, Window};
    /// let c = KvCache::<f32, 1, 4, 1, 1>::new(Some(Window::new(3, 1)))?;
    /// assert_eq!(c.window(), Some(Window::new(3, 1)));
    /// # Ok::<(), attention_core::Error>(())
    /// ```
    pub fn window(&self) -> Option<Window> {
        self.ring.window
    }

    /// Forgets every token (a new stream; the eviction rule stays).
    ///
    /// # Examples
    ///
    /// ```
    /// let mut c = attention_core::KvCache::<f32, 1, 4, 1, 1>::new(None)?;
    /// c.push(&[0.0], &[0.0])?;
    /// c.clear();
    /// assert!(c.is_empty());
    /// # Ok::<(), attention_core::Error>(())
    /// ```
    pub fn clear(&mut self) {
        self.ring.len = 0;
    }
}

/// The decoder of [`KvCache`] over storage the caller provides, for dimensions known only at
/// run time: `k_store` holds `kv_heads × capacity × d` values, `v_store`
/// `kv_heads × capacity × dv` (the capacity is `k_store.len() / (kv_heads·d)`). Same methods,
/// same results.
///
/// # Examples
///
/// ```
/// use attention_core::{KvCacheSlice, Options, Output, Window, backend::Poly};
/// let (mut ks, mut vs) = ([0.0f32; 2 * 5 * 4], [0.0f32; 2 * 5 * 2]); // 2 kv heads, 5 slots
/// let mut c = KvCacheSlice::new(&mut ks, &mut vs, 2, 4, 2, Some(Window::new(4, 1)))?;
/// assert_eq!(c.capacity(), 5);
/// let mut o = [0.0f32; 4 * 2]; // 4 query heads
/// for _ in 0..20 {
///     c.decode(Poly, &[0.5; 16], &[1.0; 8], &[2.0; 4], &Options::new().with_window(4).with_sinks(1),
///         Output::new(&mut o))?;
/// }
/// assert_eq!(o, [2.0; 8]);
/// # Ok::<(), attention_core::Error>(())
/// ```
#[derive(Debug)]
pub struct KvCacheSlice<'a, F> {
    k: &'a mut [F],
    v: &'a mut [F],
    ring: Ring,
}

impl<'a, F: Float> KvCacheSlice<'a, F> {
    /// An empty cache over `k_store` and `v_store` (see the type's docs), keeping every token
    /// or evicting by a [`Window`].
    ///
    /// # Errors
    ///
    /// [`Error::ZeroDim`] for a zero dimension; [`Error::LengthMismatch`] if the stores do not
    /// hold the same whole number of slots; [`Error::InvalidWindow`] for a window of size 0.
    ///
    /// # Examples
    ///
    /// ```
    /// use attention_core::KvCacheSlice;
    /// let (mut ks, mut vs) = ([0.0f64; 12], [0.0f64; 6]);
    /// let c = KvCacheSlice::new(&mut ks, &mut vs, 1, 2, 1, None)?;
    /// assert_eq!(c.capacity(), 6);
    /// # Ok::<(), attention_core::Error>(())
    /// ```
    pub fn new(
        k_store: &'a mut [F],
        v_store: &'a mut [F],
        kv_heads: usize,
        d: usize,
        dv: usize,
        window: Option<Window>,
    ) -> Result<Self, Error> {
        let ring0 = Ring::new(kv_heads, d, dv, 0, window)?;
        let row = mul(kv_heads, d)?;
        let cap = k_store.len().checked_div(row).unwrap_or(0);
        check_len("k_store", mul(cap, row)?, k_store.len())?;
        check_len("v_store", mul(mul(cap, kv_heads)?, dv)?, v_store.len())?;
        Ok(KvCacheSlice {
            k: k_store,
            v: v_store,
            ring: Ring { cap, ..ring0 },
        })
    }

    /// As [`KvCache::push`].
    ///
    /// # Errors
    ///
    /// As [`KvCache::push`].
    ///
    /// # Examples
    ///
    /// ```
    /// use attention_core::{Error, KvCacheSlice};
    /// let (mut ks, mut vs) = ([0.0f32; 1], [0.0f32; 1]);
    /// let mut c = KvCacheSlice::new(&mut ks, &mut vs, 1, 1, 1, None)?;
    /// c.push(&[1.0], &[1.0])?;
    /// assert_eq!(c.push(&[1.0], &[1.0]), Err(Error::CacheFull { capacity: 1 }));
    /// # Ok::<(), attention_core::Error>(())
    /// ```
    pub fn push(&mut self, k: &[F], v: &[F]) -> Result<(), Error> {
        self.ring.push(self.k, self.v, k, v)
    }

    /// As [`KvCache::attend`].
    ///
    /// # Errors
    ///
    /// As [`KvCache::attend`].
    ///
    /// # Examples
    ///
    /// ```
    /// use attention_core::{Error, KvCacheSlice, Options, Output, backend::Poly};
    /// let (mut ks, mut vs) = ([0.0f32; 4], [0.0f32; 4]);
    /// let c = KvCacheSlice::new(&mut ks, &mut vs, 1, 1, 1, None)?;
    /// let mut o = [0.0f32];
    /// assert_eq!(c.attend(Poly, &[1.0], &Options::new(), Output::new(&mut o)), Err(Error::EmptyCache));
    /// # Ok::<(), attention_core::Error>(())
    /// ```
    pub fn attend<B: Backend<F>>(
        &self,
        backend: B,
        q: &[F],
        opts: &Options<'_, F>,
        out: Output<'_, F>,
    ) -> Result<(), Error> {
        self.ring.attend(backend, self.k, self.v, q, opts, out)
    }

    /// As [`KvCache::decode`].
    ///
    /// # Errors
    ///
    /// As [`KvCache::decode`].
    ///
    /// # Examples
    ///
    /// ```
    /// use attention_core::{KvCacheSlice, Options, Output, backend::Poly};
    /// let (mut ks, mut vs) = ([0.0f32; 4], [0.0f32; 4]);
    /// let mut c = KvCacheSlice::new(&mut ks, &mut vs, 1, 1, 1, None)?;
    /// let mut o = [0.0f32];
    /// c.decode(Poly, &[1.0], &[1.0], &[4.0], &Options::new(), Output::new(&mut o))?;
    /// assert_eq!(o, [4.0]);
    /// # Ok::<(), attention_core::Error>(())
    /// ```
    pub fn decode<B: Backend<F>>(
        &mut self,
        backend: B,
        q: &[F],
        k: &[F],
        v: &[F],
        opts: &Options<'_, F>,
        out: Output<'_, F>,
    ) -> Result<(), Error> {
        self.push(k, v)?;
        self.attend(backend, q, opts, out)
    }

    /// As [`KvCache::len`].
    ///
    /// # Examples
    ///
    /// ```
    /// let (mut ks, mut vs) = ([0.0f32; 4], [0.0f32; 4]);
    /// let c = attention_core::KvCacheSlice::new(&mut ks, &mut vs, 1, 1, 1, None)?;
    /// assert_eq!(c.len(), 0);
    /// # Ok::<(), attention_core::Error>(())
    /// ```
    pub fn len(&self) -> u64 {
        self.ring.len
    }

    /// As [`KvCache::is_empty`].
    ///
    /// # Examples
    ///
    /// ```
    /// let (mut ks, mut vs) = ([0.0f32; 4], [0.0f32; 4]);
    /// let c = attention_core::KvCacheSlice::new(&mut ks, &mut vs, 1, 1, 1, None)?;
    /// assert!(c.is_empty());
    /// # Ok::<(), attention_core::Error>(())
    /// ```
    pub fn is_empty(&self) -> bool {
        self.ring.len == 0
    }

    /// As [`KvCache::cached`].
    ///
    /// # Examples
    ///
    /// ```
    /// let (mut ks, mut vs) = ([0.0f32; 4], [0.0f32; 4]);
    /// let c = attention_core::KvCacheSlice::new(&mut ks, &mut vs, 1, 1, 1, None)?;
    /// assert_eq!(c.cached(), 0);
    /// # Ok::<(), attention_core::Error>(())
    /// ```
    pub fn cached(&self) -> usize {
        self.ring.held(self.ring.len) as usize
    }

    /// The capacity, in tokens.
    ///
    /// # Examples
    ///
    /// ```
    /// let (mut ks, mut vs) = ([0.0f32; 4], [0.0f32; 4]);
    /// let c = attention_core::KvCacheSlice::new(&mut ks, &mut vs, 1, 1, 1, None)?;
    /// assert_eq!(c.capacity(), 4);
    /// # Ok::<(), attention_core::Error>(())
    /// ```
    pub fn capacity(&self) -> usize {
        self.ring.cap
    }

    /// The eviction rule.
    ///
    /// # Examples
    ///
    /// ```
    /// let (mut ks, mut vs) = ([0.0f32; 4], [0.0f32; 4]);
    /// let c = attention_core::KvCacheSlice::new(&mut ks, &mut vs, 1, 1, 1, None)?;
    /// assert_eq!(c.window(), None);
    /// # Ok::<(), attention_core::Error>(())
    /// ```
    pub fn window(&self) -> Option<Window> {
        self.ring.window
    }

    /// As [`KvCache::clear`].
    ///
    /// # Examples
    ///
    /// ```
    /// let (mut ks, mut vs) = ([0.0f32; 4], [0.0f32; 4]);
    /// let mut c = attention_core::KvCacheSlice::new(&mut ks, &mut vs, 1, 1, 1, None)?;
    /// c.push(&[1.0], &[1.0])?;
    /// c.clear();
    /// assert_eq!(c.len(), 0);
    /// # Ok::<(), attention_core::Error>(())
    /// ```
    pub fn clear(&mut self) {
        self.ring.len = 0;
    }
}
