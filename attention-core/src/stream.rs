//! The streaming causal decoder: a KV cache of fixed capacity (a ring buffer behind the
//! attention sinks), one token at a time, with absolute positions. Its attention is the full
//! computation's tile loop (`tile.rs`) over the cache's slots: the same blocks, scores and
//! online steps, so the same bits.

use softmax_core::backend::Backend;
use softmax_core::chunks::chunks;
use softmax_core::{simd, Float};

use crate::error::Error;
use crate::math::alibi_slope;
use crate::options::{DecodeOptions, Output};
use crate::plan::{
    check_heads, check_len, check_output, mul, part, part_mut, resolve_scale, Rule, SlotMap,
};
use crate::state::QueryState;
use crate::tile::{tiles, Keys, Mods, Row, Tile, TQ};

/// The eviction rule of a cache: keep the first `sinks` tokens and a rolling window of the most
/// recent `size` tokens (StreamingLLM), exactly what attention with
/// [`Options::with_window`](crate::Options::with_window)`(size)` and
/// [`Options::with_sinks`](crate::Options::with_sinks)`(sinks)` reads.
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

    /// Where each position's slot is.
    #[inline(always)]
    fn slots(&self) -> SlotMap {
        SlotMap {
            ring: self.window.map(|w| (w.sinks as u64, w.size as u64)),
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
        let slot = self.slots().slot(self.len) as usize;
        for (g, (kn, vn)) in chunks(k, self.d.max(1))
            .zip(chunks(v, self.dv.max(1)))
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

    /// The attention of the newest token's queries over the cached tokens (see
    /// [`Cache::attend`]).
    fn attend<F: Float, B: Backend<F>>(
        &self,
        backend: B,
        (ks, vs): (&[F], &[F]),
        q: &[F],
        opts: &DecodeOptions<'_, F>,
        out: Output<'_, F>,
    ) -> Result<(), Error> {
        let (d, dv) = (self.d, self.dv);
        let scale = resolve_scale(opts.scale(), opts.softcap(), d)?;
        if !q.len().is_multiple_of(d) {
            return Err(Error::LengthMismatch {
                what: "q",
                expected: q.len().checked_next_multiple_of(d).unwrap_or(q.len()),
                found: q.len(),
            });
        }
        let heads = q.len().checked_div(d).unwrap_or(0);
        let group = check_heads(heads, self.hkv)?;
        check_output(&out, heads, dv)?;
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
        let range = (0, self.len);
        let allowed = rule.allowed(pos, 0, self.len, range);
        let want_entropy = out.entropy.is_some();
        let Output {
            o,
            mut lse,
            mut entropy,
        } = out;
        o.fill(F::ZERO);
        for g in 0..self.hkv {
            let keys = Keys::Slots {
                k: part(ks, g, self.cap * d),
                v: part(vs, g, self.cap * dv),
                map: self.slots(),
            };
            let q_g = part(q, g, group * d);
            let o_g = part_mut(o, g, group * dv);
            simd::dispatch(
                #[inline(always)]
                || {
                    for (r0, rows) in tiles(group) {
                        let h0 = g * group + r0;
                        let q_rows = q_g.get(r0 * d..(r0 + rows) * d).unwrap_or(&[]);
                        // The rows are query heads at the newest position: they see the same
                        // keys, each with its own ALiBi slope.
                        let tile = Tile::new((keys, q_rows, d, dv), (range, 0), rows, |r| Row {
                            allowed,
                            mods: Mods {
                                scale,
                                cap: opts.softcap(),
                                slope: opts.alibi().then(|| alibi_slope::<F>(heads, h0 + r)),
                                qp: pos,
                            },
                            bias: None,
                            keep: None,
                        });
                        let mut states = [QueryState::new(backend); TQ];
                        let states = states.get_mut(..rows).unwrap_or(&mut []);
                        let acc = o_g.get_mut(r0 * dv..(r0 + rows) * dv).unwrap_or(&mut []);
                        tile.fold(backend, states, acc, want_entropy);
                        QueryState::finish_rows(
                            states,
                            acc,
                            dv,
                            h0,
                            |h| opts.sink_logits().and_then(|z| z.get(h)).copied(),
                            lse.as_deref_mut(),
                            entropy.as_deref_mut(),
                        );
                    }
                },
            );
        }
        Ok(())
    }
}

mod sealed {
    use softmax_core::Float;

    /// What a storage gives the cache: its element type and its key and value buffers
    /// (`kv_heads × capacity × d` keys, `kv_heads × capacity × dv` values, row-major).
    pub trait Sealed {
        /// The element type.
        type Elem: Float;
        /// The keys.
        fn keys(&self) -> &[Self::Elem];
        /// The values.
        fn values(&self) -> &[Self::Elem];
        /// Both, mutable.
        fn both_mut(&mut self) -> (&mut [Self::Elem], &mut [Self::Elem]);
    }
}

/// Where a [`Cache`] keeps its keys and values: inline arrays whose sizes are const generics
/// ([`Inline`], the storage of a [`KvCache`]), or buffers the caller lends ([`Borrowed`], the
/// storage of a [`KvCacheSlice`]). Sealed: these two are the storages there are.
///
/// # Examples
///
/// ```
/// use attention_core::{Cache, Storage};
/// // Code generic over either kind of cache.
/// fn tokens_kept<S: Storage>(c: &Cache<S>) -> usize {
///     c.cached()
/// }
/// let c = attention_core::KvCache::<f32, 1, 8, 4, 4>::new(None)?;
/// assert_eq!(tokens_kept(&c), 0);
/// # Ok::<(), attention_core::Error>(())
/// ```
pub trait Storage: sealed::Sealed {}

/// The storage of a [`KvCache`]: `HKV` kv heads of `CAP` slots of `D` key and `DV` value
/// elements, inside the value (`size_of` is constant from the first token to the last).
///
/// # Examples
///
/// ```
/// use attention_core::{Cache, Inline, KvCache};
/// // 2 kv heads × 16 slots × (8 + 8) f32: 1,024 bytes of storage.
/// assert!(core::mem::size_of::<Cache<Inline<f32, 2, 16, 8, 8>>>() >= 1024);
/// let c: KvCache<f32, 2, 16, 8, 8> = Cache::<Inline<f32, 2, 16, 8, 8>>::new(None)?;
/// assert_eq!(c.capacity(), 16);
/// # Ok::<(), attention_core::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct Inline<F, const HKV: usize, const CAP: usize, const D: usize, const DV: usize> {
    k: [[[F; D]; CAP]; HKV],
    v: [[[F; DV]; CAP]; HKV],
}

impl<F: Float, const HKV: usize, const CAP: usize, const D: usize, const DV: usize> Storage
    for Inline<F, HKV, CAP, D, DV>
{
}

impl<F: Float, const HKV: usize, const CAP: usize, const D: usize, const DV: usize> sealed::Sealed
    for Inline<F, HKV, CAP, D, DV>
{
    type Elem = F;
    fn keys(&self) -> &[F] {
        self.k.as_flattened().as_flattened()
    }
    fn values(&self) -> &[F] {
        self.v.as_flattened().as_flattened()
    }
    fn both_mut(&mut self) -> (&mut [F], &mut [F]) {
        (
            self.k.as_flattened_mut().as_flattened_mut(),
            self.v.as_flattened_mut().as_flattened_mut(),
        )
    }
}

/// The storage of a [`KvCacheSlice`]: key and value buffers the caller lends.
///
/// # Examples
///
/// ```
/// use attention_core::{Borrowed, Cache};
/// let (mut ks, mut vs) = ([0.0f32; 32], [0.0f32; 32]);
/// let c = Cache::<Borrowed<'_, f32>>::new(&mut ks, &mut vs, 1, 4, 4, None)?;
/// assert_eq!(c.capacity(), 8); // 32 / (1 kv head × d = 4)
/// # Ok::<(), attention_core::Error>(())
/// ```
#[derive(Debug)]
pub struct Borrowed<'a, F> {
    k: &'a mut [F],
    v: &'a mut [F],
}

impl<F: Float> Storage for Borrowed<'_, F> {}

impl<F: Float> sealed::Sealed for Borrowed<'_, F> {
    type Elem = F;
    fn keys(&self) -> &[F] {
        self.k
    }
    fn values(&self) -> &[F] {
        self.v
    }
    fn both_mut(&mut self) -> (&mut [F], &mut [F]) {
        (self.k, self.v)
    }
}

/// The streaming causal decoder over a KV cache: [`push`](Self::push) each token's keys and
/// values, then [`attend`](Self::attend) with its query (or both at once:
/// [`decode`](Self::decode)). One implementation for either storage: [`KvCache`] (inline, sizes
/// fixed at compile time) and [`KvCacheSlice`] (the caller's buffers, sizes known at run time).
///
/// With a [`Window`], the cache keeps the first `sinks` tokens and a ring buffer of the most
/// recent `size` (no shifting: the oldest slot is overwritten), so an endless stream needs
/// `sinks + size <= capacity` slots and every token costs the same (set by `sinks + size`, not
/// by the stream's length). The window is given once, when the cache is made. Positions are
/// absolute (a `u64` count), so ALiBi and the window see the same distances as the full
/// computation: the outputs equal [`attention`](crate::attention) with
/// [`Causal::BottomRight`](crate::Causal::BottomRight) over the whole stream, with that window
/// and those sinks and the same score options, **bit for bit** (the same tile loop over the same
/// key blocks).
///
/// # Examples
///
/// ```
/// use attention_core::{DecodeOptions, KvCache, Output, Window, backend::Poly};
/// // 2 query heads sharing 1 kv head, d = dv = 4, a window of 3 tokens plus 1 sink.
/// let mut cache = KvCache::<f32, 1, 4, 4, 4>::new(Some(Window::new(3, 1)))?;
/// let mut o = [0.0f32; 8];
/// for t in 0..10 {
///     let x = t as f32;
///     let (k, v) = ([x, 1.0, 0.0, 0.0], [x, x, x, x]);
///     let q = [1.0f32; 8];
///     cache.decode(Poly, &q, &k, &v, &DecodeOptions::new(), Output::new(&mut o))?;
/// }
/// assert_eq!((cache.len(), cache.cached()), (10, 4)); // sink 0 and tokens 7, 8, 9
/// assert!(o[0] > 7.0 && o[0] < 9.0);
/// # Ok::<(), attention_core::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct Cache<S> {
    store: S,
    ring: Ring,
}

/// A KV cache for one layer with a capacity fixed at compile time: `HKV` key/value heads of
/// widths `D` (keys) and `DV` (values), `CAP` token slots, stored inline
/// (`size_of::<Self>()`, constant from the first token to the last). The methods are
/// [`Cache`]'s.
///
/// # Examples
///
/// ```
/// use attention_core::{KvCache, Window};
/// // 1 kv head, 64 slots, d = dv = 16: 4 sinks and a window of 60 fit exactly.
/// let mut c = KvCache::<f32, 1, 64, 16, 16>::new(Some(Window::new(60, 4)))?;
/// c.push(&[0.5; 16], &[1.0; 16])?;
/// assert_eq!((c.len(), c.capacity()), (1, 64));
/// # Ok::<(), attention_core::Error>(())
/// ```
pub type KvCache<F, const HKV: usize, const CAP: usize, const D: usize, const DV: usize> =
    Cache<Inline<F, HKV, CAP, D, DV>>;

/// A KV cache over storage the caller provides, for dimensions known only at run time:
/// `k_store` holds `kv_heads × capacity × d` values, `v_store` `kv_heads × capacity × dv`
/// (the capacity is `k_store.len() / (kv_heads·d)`). The methods are [`Cache`]'s: the same
/// results as a [`KvCache`] of the same sizes.
///
/// # Examples
///
/// ```
/// use attention_core::KvCacheSlice;
/// // Sizes read at run time: 2 kv heads, d = 4, dv = 2, room for 3 tokens.
/// let (mut ks, mut vs) = (vec![0.0f32; 2 * 3 * 4], vec![0.0f32; 2 * 3 * 2]);
/// let mut c = KvCacheSlice::new(&mut ks, &mut vs, 2, 4, 2, None)?;
/// c.push(&[1.0; 8], &[2.0; 4])?;
/// assert_eq!((c.cached(), c.capacity()), (1, 3));
/// # Ok::<(), attention_core::Error>(())
/// ```
pub type KvCacheSlice<'a, F> = Cache<Borrowed<'a, F>>;

impl<F: Float, const HKV: usize, const CAP: usize, const D: usize, const DV: usize>
    Cache<Inline<F, HKV, CAP, D, DV>>
{
    /// An empty cache: keeping every token (`None`, at most `CAP` of them) or evicting by a
    /// [`Window`]. An endless stream needs `sinks + size <= CAP`; a larger window is accepted
    /// (a stream that stays shorter never needs the slots), and [`push`](Cache::push) then
    /// returns [`Error::CacheFull`] when the slots run out before the window evicts.
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
        Ok(Cache {
            store: Inline {
                k: [[[F::ZERO; D]; CAP]; HKV],
                v: [[[F::ZERO; DV]; CAP]; HKV],
            },
            ring: Ring::new(HKV, D, DV, CAP, window)?,
        })
    }
}

impl<'a, F: Float> Cache<Borrowed<'a, F>> {
    /// An empty cache over `k_store` and `v_store` (see [`KvCacheSlice`]), keeping every token
    /// or evicting by a [`Window`]. As for [`KvCache`], a window with `sinks + size` above the
    /// capacity is accepted, and [`push`](Cache::push) returns [`Error::CacheFull`] when the
    /// slots run out before it evicts.
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
        Ok(Cache {
            store: Borrowed {
                k: k_store,
                v: v_store,
            },
            ring: Ring { cap, ..ring0 },
        })
    }
}

impl<S: Storage> Cache<S> {
    /// Appends one token's keys (`kv_heads × d`) and values (`kv_heads × dv`), evicting the
    /// oldest window token if the window is full.
    ///
    /// # Errors
    ///
    /// [`Error::LengthMismatch`]; [`Error::CacheFull`] if the cache would need more than its
    /// capacity (no window and that many tokens already, or `sinks + size` above it); the cache
    /// is unchanged then.
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
    pub fn push(&mut self, k: &[S::Elem], v: &[S::Elem]) -> Result<(), Error> {
        let (ks, vs) = self.store.both_mut();
        self.ring.push(ks, vs, k, v)
    }

    /// Attention of the newest token's queries (`heads × d`, `heads` a multiple of the kv
    /// heads) over the cached tokens, into `out` (`heads × dv`, optional lse and entropy,
    /// `heads` each). `opts` gives the scale, ALiBi, soft-cap and sink logits; the causal rule
    /// and the cache's window and sinks apply.
    ///
    /// Accuracy: as [`attention`](crate::attention) (it is the same computation).
    ///
    /// # Errors
    ///
    /// [`Error::EmptyCache`] before the first push; otherwise as
    /// [`attention`](crate::attention).
    ///
    /// # Examples
    ///
    /// ```
    /// use attention_core::{DecodeOptions, KvCache, Output, backend::Poly};
    /// let mut c = KvCache::<f64, 1, 8, 2, 1>::new(None)?;
    /// c.push(&[0.0, 0.0], &[1.0])?;
    /// c.push(&[0.0, 0.0], &[3.0])?;
    /// let mut o = [0.0];
    /// c.attend(Poly, &[1.0, 1.0], &DecodeOptions::new(), Output::new(&mut o))?;
    /// assert_eq!(o, [2.0]); // equal scores: the mean
    /// # Ok::<(), attention_core::Error>(())
    /// ```
    pub fn attend<B: Backend<S::Elem>>(
        &self,
        backend: B,
        q: &[S::Elem],
        opts: &DecodeOptions<'_, S::Elem>,
        out: Output<'_, S::Elem>,
    ) -> Result<(), Error> {
        let stores = (self.store.keys(), self.store.values());
        self.ring.attend(backend, stores, q, opts, out)
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
    /// use attention_core::{DecodeOptions, KvCache, Output, backend::Poly};
    /// let mut c = KvCache::<f32, 1, 4, 1, 1>::new(None)?;
    /// let mut o = [0.0f32];
    /// c.decode(Poly, &[1.0], &[0.5], &[9.0], &DecodeOptions::new(), Output::new(&mut o))?;
    /// assert_eq!(o, [9.0]);
    /// # Ok::<(), attention_core::Error>(())
    /// ```
    pub fn decode<B: Backend<S::Elem>>(
        &mut self,
        backend: B,
        q: &[S::Elem],
        k: &[S::Elem],
        v: &[S::Elem],
        opts: &DecodeOptions<'_, S::Elem>,
        out: Output<'_, S::Elem>,
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

    /// The capacity, in tokens.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(attention_core::KvCache::<f32, 1, 4, 1, 1>::new(None)?.capacity(), 4);
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
