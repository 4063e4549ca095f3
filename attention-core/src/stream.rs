//! The streaming causal decoder: a KV cache of fixed capacity (a ring buffer behind the
//! attention sinks), one token at a time, with absolute positions. Its attention is the full
//! computation's tile loop (`tile.rs`) over the cache's slots: the same blocks, scores and
//! online steps, so the same bits.

use core::fmt::Debug;

use softmax_core::backend::Backend;
use softmax_core::chunks::chunks;
use softmax_core::stored::{bf16, f16, Operand, Stored};
use softmax_core::{simd, Float};

use crate::error::Error;
use crate::math::alibi_slope;
use crate::options::{DecodeOptions, Output};
use crate::plan::{
    check_heads, check_len, check_output, mul, part, part_mut, resolve_scale, Rule, SlotMap,
};
use crate::state::QueryState;
use crate::tile::{tiles, Keys, Mods, Row, Tile, TQ};
use sealed::{StoreMut, StoreRef};

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

    fn push<E: Element>(
        &mut self,
        store: StoreMut<'_, E>,
        k: &[E::Float],
        v: &[E::Float],
    ) -> Result<(), Error> {
        check_len("k", mul(self.hkv, self.d)?, k.len())?;
        check_len("v", mul(self.hkv, self.dv)?, v.len())?;
        let n = self.len.saturating_add(1);
        if self.held(n) > self.cap as u64 {
            return Err(Error::CacheFull { capacity: self.cap });
        }
        // Every row is checked before any is written: a row the storage cannot hold leaves the
        // cache as it was (the slot may be the oldest window token's, still visible).
        if !E::storable(k) {
            return Err(Error::NotStorable { what: "k" });
        }
        if !E::storable(v) {
            return Err(Error::NotStorable { what: "v" });
        }
        let slot = self.slots().slot(self.len) as usize;
        let StoreMut {
            k: ks,
            v: vs,
            ks: kss,
            vs: vss,
        } = store;
        for (g, (kn, vn)) in chunks(k, self.d.max(1))
            .zip(chunks(v, self.dv.max(1)))
            .enumerate()
        {
            let kh = part_mut(ks, g, self.cap * self.d);
            if let Some(dst) = kh.get_mut(slot * self.d..(slot + 1) * self.d) {
                let s = E::write_row(kn, dst);
                if let Some(x) = part_mut(kss, g, self.cap).get_mut(slot) {
                    *x = s;
                }
            }
            let vh = part_mut(vs, g, self.cap * self.dv);
            if let Some(dst) = vh.get_mut(slot * self.dv..(slot + 1) * self.dv) {
                let s = E::write_row(vn, dst);
                if let Some(x) = part_mut(vss, g, self.cap).get_mut(slot) {
                    *x = s;
                }
            }
        }
        self.len = n;
        Ok(())
    }

    /// The attention of the newest token's queries over the cached tokens (see
    /// [`Cache::attend`]).
    fn attend<E: Element, B: Backend<E::Float>>(
        &self,
        backend: B,
        store: StoreRef<'_, E>,
        q: &[E::Float],
        opts: &DecodeOptions<'_, E::Float>,
        out: Output<'_, E::Float>,
    ) -> Result<(), Error> {
        type F<E> = <E as Element>::Float;
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
        o.fill(F::<E>::ZERO);
        for g in 0..self.hkv {
            let keys: Keys<'_, F<E>, E::Unit> = Keys::Slots {
                k: part(store.k, g, self.cap * d),
                v: part(store.v, g, self.cap * dv),
                ks: part(store.ks, g, self.cap),
                vs: part(store.vs, g, self.cap),
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
                                slope: opts.alibi().then(|| alibi_slope::<F<E>>(heads, h0 + r)),
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

/// The scale stored with each row of a cache of `E` (`()`, or int8's f32).
pub type ScaleOf<E> = <<E as Element>::Unit as Operand<<E as Element>::Float>>::Scale;

mod sealed {
    /// A cache's buffers, borrowed: the key and value rows and their scales.
    pub struct StoreRef<'a, E: super::Element> {
        pub(crate) k: &'a [E::Unit],
        pub(crate) v: &'a [E::Unit],
        pub(crate) ks: &'a [super::ScaleOf<E>],
        pub(crate) vs: &'a [super::ScaleOf<E>],
    }

    /// A cache's buffers, borrowed mutably.
    pub struct StoreMut<'a, E: super::Element> {
        pub(crate) k: &'a mut [E::Unit],
        pub(crate) v: &'a mut [E::Unit],
        pub(crate) ks: &'a mut [super::ScaleOf<E>],
        pub(crate) vs: &'a mut [super::ScaleOf<E>],
    }

    /// What a storage gives the cache: its element type and its buffers (`kv_heads ×
    /// capacity × d` keys, `kv_heads × capacity × dv` values, row-major, and one scale per
    /// row where the element has one).
    pub trait Sealed {
        /// The stored element type.
        type Elem: super::Element;
        /// The buffers.
        fn store(&self) -> StoreRef<'_, Self::Elem>;
        /// The buffers, mutable.
        fn store_mut(&mut self) -> StoreMut<'_, Self::Elem>;
    }

    /// Seals [`Element`](super::Element).
    pub trait SealedElement {}
    impl SealedElement for f32 {}
    impl SealedElement for f64 {}
    impl SealedElement for super::f16 {}
    impl SealedElement for super::bf16 {}
    impl SealedElement for i8 {}
}

/// What a KV cache stores its key and value rows as. The computation (queries, scores,
/// softmax, accumulators, outputs) runs in [`Element::Float`]; every use of a stored row reads
/// its stored form converted back to that type ([`Operand::load`]), in registers, while the
/// products run: there is no dequantized copy of the cache, not even per call.
///
/// * `f32`, `f64`: the rows as pushed (the full computation's bits).
/// * [`f16`](struct@f16), [`bf16`]: IEEE binary16 / bfloat16, each value rounded to nearest, ties to even;
///   half the bytes of f32. Computation in f32.
/// * `i8`: int8 with one f32 scale per row (one token's keys, or values, of one kv head):
///   `s = amax/127`, `q = round(x/s)` half away from zero, read back as `q·s`; a quarter of the
///   bytes of f32 plus 4 per row. Computation in f32.
///
/// The exact rounding of each format is in [`softmax_core::stored`]. A row with NaN or ±inf
/// (or, for f16 and bf16, a value that rounds to ±inf) cannot be stored in a reduced cache:
/// [`Cache::push`] returns [`Error::NotStorable`] and the cache is unchanged.
///
/// Accuracy: a decoder over a reduced cache computes what [`attention`](crate::attention)
/// computes over the read-back keys and values, **bit for bit** (the same tile loop; the
/// products form each read-back value exactly as [`Operand::load`] does); against the f32
/// cache, the outputs differ by the rounding of the stored rows, propagated through the scores
/// and the weighted sum (`harness/tests/kv_cache.rs` states and checks the bound).
///
/// # Examples
///
/// ```
/// use attention_core::{Element, KvCache};
/// // The same cache in int8: 2 kv heads × 256 slots × (64 + 64) values.
/// type Q8 = KvCache<i8, 2, 256, 64, 64>;
/// type F32 = KvCache<f32, 2, 256, 64, 64>;
/// // 262,144 bytes of f32 rows; 65,536 of int8 rows and 4,096 of scales.
/// assert_eq!(core::mem::size_of::<F32>() - core::mem::size_of::<Q8>(), 262_144 - 69_632);
/// assert_eq!(<i8 as Element>::NAME, "int8");
/// ```
pub trait Element: sealed::SealedElement + Copy + Default + Debug + Send + Sync + 'static {
    /// The float type of the computation: `Self` for f32 and f64, f32 for the reduced formats.
    type Float: Float;
    /// The element as the products read it (always `Self`).
    type Unit: Operand<Self::Float>;
    /// The name of the storage, as the conformance protocol's `kv_dtype` spells it.
    const NAME: &'static str;

    /// Whether every value of `x` can be stored (always, for f32 and f64).
    ///
    /// # Examples
    ///
    /// ```
    /// use attention_core::{softmax_core::stored::f16, Element};
    /// assert!(<f16 as Element>::storable(&[1.0, -65504.0]));
    /// assert!(!<f16 as Element>::storable(&[1.0e5]));
    /// assert!(<f32 as Element>::storable(&[f32::NAN]));
    /// ```
    fn storable(x: &[Self::Float]) -> bool;

    /// Stores the row `x` into `out` (`min` of the lengths) and returns its scale; for a row
    /// [`storable`](Self::storable) rejects, the stored values are the conversions'
    /// (`softmax_core::stored::Stored::write_row`: ±inf or NaN in f16 and bf16, zeros and an
    /// infinite or zero scale in int8).
    ///
    /// # Examples
    ///
    /// ```
    /// use attention_core::Element;
    /// let mut q = [0i8; 2];
    /// let s = i8::write_row(&[1.0, -0.5], &mut q);
    /// assert_eq!((q, s), ([127, -64], 1.0 / 127.0));
    /// ```
    fn write_row(x: &[Self::Float], out: &mut [Self::Unit]) -> ScaleOf<Self>;
}

macro_rules! float_element {
    ($t:ty, $name:literal) => {
        impl Element for $t {
            type Float = $t;
            type Unit = $t;
            const NAME: &'static str = $name;
            #[inline]
            fn storable(_: &[$t]) -> bool {
                true
            }
            #[inline]
            fn write_row(x: &[$t], out: &mut [$t]) {
                for (o, &v) in out.iter_mut().zip(x) {
                    *o = v;
                }
            }
        }
    };
}
float_element!(f32, "f32");
float_element!(f64, "f64");

macro_rules! stored_element {
    ($t:ty) => {
        impl Element for $t {
            type Float = f32;
            type Unit = $t;
            const NAME: &'static str = <$t as Stored>::NAME;
            #[inline]
            fn storable(x: &[f32]) -> bool {
                <$t as Stored>::check_row(x).is_ok()
            }
            #[inline]
            fn write_row(x: &[f32], out: &mut [$t]) -> ScaleOf<$t> {
                <$t as Stored>::write_row(x, out)
            }
        }
    };
}
stored_element!(f16);
stored_element!(bf16);
stored_element!(i8);

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
/// elements of type `E` (and one scale per row for int8), inside the value (`size_of` is
/// constant from the first token to the last).
///
/// # Examples
///
/// ```
/// use attention_core::{Cache, Inline, KvCache};
/// // 2 kv heads × 16 slots × (8 + 8) f32: 2,048 bytes of storage (plus the bookkeeping).
/// assert_eq!(core::mem::size_of::<Inline<f32, 2, 16, 8, 8>>(), 2048);
/// // int8: 512 bytes of values and 2 × 2 × 16 scales of 4 bytes.
/// assert_eq!(core::mem::size_of::<Inline<i8, 2, 16, 8, 8>>(), 512 + 256);
/// let c: KvCache<f32, 2, 16, 8, 8> = Cache::<Inline<f32, 2, 16, 8, 8>>::new(None)?;
/// assert_eq!(c.capacity(), 16);
/// # Ok::<(), attention_core::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct Inline<E: Element, const HKV: usize, const CAP: usize, const D: usize, const DV: usize> {
    k: [[[E::Unit; D]; CAP]; HKV],
    v: [[[E::Unit; DV]; CAP]; HKV],
    ks: [[ScaleOf<E>; CAP]; HKV],
    vs: [[ScaleOf<E>; CAP]; HKV],
}

impl<E: Element, const HKV: usize, const CAP: usize, const D: usize, const DV: usize> Storage
    for Inline<E, HKV, CAP, D, DV>
{
}

impl<E: Element, const HKV: usize, const CAP: usize, const D: usize, const DV: usize> sealed::Sealed
    for Inline<E, HKV, CAP, D, DV>
{
    type Elem = E;
    fn store(&self) -> StoreRef<'_, E> {
        StoreRef {
            k: self.k.as_flattened().as_flattened(),
            v: self.v.as_flattened().as_flattened(),
            ks: self.ks.as_flattened(),
            vs: self.vs.as_flattened(),
        }
    }
    fn store_mut(&mut self) -> StoreMut<'_, E> {
        StoreMut {
            k: self.k.as_flattened_mut().as_flattened_mut(),
            v: self.v.as_flattened_mut().as_flattened_mut(),
            ks: self.ks.as_flattened_mut(),
            vs: self.vs.as_flattened_mut(),
        }
    }
}

/// The storage of a [`KvCacheSlice`]: key and value buffers the caller lends (and, for int8,
/// the buffers of their scales).
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
pub struct Borrowed<'a, E: Element> {
    k: &'a mut [E::Unit],
    v: &'a mut [E::Unit],
    ks: &'a mut [ScaleOf<E>],
    vs: &'a mut [ScaleOf<E>],
}

impl<E: Element> Storage for Borrowed<'_, E> {}

impl<E: Element> sealed::Sealed for Borrowed<'_, E> {
    type Elem = E;
    fn store(&self) -> StoreRef<'_, E> {
        StoreRef {
            k: self.k,
            v: self.v,
            ks: self.ks,
            vs: self.vs,
        }
    }
    fn store_mut(&mut self) -> StoreMut<'_, E> {
        StoreMut {
            k: self.k,
            v: self.v,
            ks: self.ks,
            vs: self.vs,
        }
    }
}

/// The float type of a cache over the storage `S` (queries, outputs, pushed rows).
pub type FloatOf<S> = <<S as sealed::Sealed>::Elem as Element>::Float;

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
/// widths `D` (keys) and `DV` (values), `CAP` token slots, stored inline as `E` ([`Element`]:
/// `f32`, `f64`, or the reduced `f16`, `bf16`, `i8` computed in f32)
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
/// // The same in int8: pushed and attended in f32, stored as 16 bytes + a scale per row.
/// let mut q = KvCache::<i8, 1, 64, 16, 16>::new(Some(Window::new(60, 4)))?;
/// q.push(&[0.5; 16], &[1.0; 16])?;
/// assert_eq!(q.token_bytes(), 2 * (16 + 4));
/// # Ok::<(), attention_core::Error>(())
/// ```
pub type KvCache<E, const HKV: usize, const CAP: usize, const D: usize, const DV: usize> =
    Cache<Inline<E, HKV, CAP, D, DV>>;

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
pub type KvCacheSlice<'a, E> = Cache<Borrowed<'a, E>>;

impl<E: Element, const HKV: usize, const CAP: usize, const D: usize, const DV: usize>
    Cache<Inline<E, HKV, CAP, D, DV>>
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
                k: [[[E::Unit::default(); D]; CAP]; HKV],
                v: [[[E::Unit::default(); DV]; CAP]; HKV],
                ks: [[ScaleOf::<E>::default(); CAP]; HKV],
                vs: [[ScaleOf::<E>::default(); CAP]; HKV],
            },
            ring: Ring::new(HKV, D, DV, CAP, window)?,
        })
    }
}

impl<'a, E: Element<Unit = E>> Cache<Borrowed<'a, E>>
where
    E: Operand<E::Float, Scale = ()>,
{
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
        k_store: &'a mut [E],
        v_store: &'a mut [E],
        kv_heads: usize,
        d: usize,
        dv: usize,
        window: Option<Window>,
    ) -> Result<Self, Error> {
        Self::over(
            k_store,
            v_store,
            (&mut [], &mut []),
            (kv_heads, d, dv),
            window,
        )
    }
}

impl<'a> Cache<Borrowed<'a, i8>> {
    /// An empty int8 cache over caller buffers (see [`KvCacheSlice`]): `k_store` and `v_store`
    /// as for [`KvCacheSlice::new`], and one f32 scale per stored row in `k_scales` and
    /// `v_scales` (`kv_heads × capacity` each).
    ///
    /// # Errors
    ///
    /// As [`KvCacheSlice::new`], and [`Error::LengthMismatch`] for a scale buffer of another
    /// length.
    ///
    /// # Examples
    ///
    /// ```
    /// use attention_core::KvCacheSlice;
    /// // 1 kv head, d = dv = 64, room for 1,000 tokens: 128,000 + 8,000 bytes.
    /// let (mut k, mut v) = (vec![0i8; 64_000], vec![0i8; 64_000]);
    /// let (mut ks, mut vs) = (vec![0.0f32; 1000], vec![0.0f32; 1000]);
    /// let c = KvCacheSlice::new_int8(&mut k, &mut v, &mut ks, &mut vs, 1, 64, 64, None)?;
    /// assert_eq!((c.capacity(), c.token_bytes()), (1000, 136));
    /// # Ok::<(), attention_core::Error>(())
    /// ```
    #[allow(clippy::too_many_arguments)]
    pub fn new_int8(
        k_store: &'a mut [i8],
        v_store: &'a mut [i8],
        k_scales: &'a mut [f32],
        v_scales: &'a mut [f32],
        kv_heads: usize,
        d: usize,
        dv: usize,
        window: Option<Window>,
    ) -> Result<Self, Error> {
        let c = Self::over(
            k_store,
            v_store,
            (k_scales, v_scales),
            (kv_heads, d, dv),
            window,
        )?;
        let rows = mul(c.ring.cap, kv_heads)?;
        check_len("k_scales", rows, c.store.ks.len())?;
        check_len("v_scales", rows, c.store.vs.len())?;
        Ok(c)
    }
}

impl<'a, E: Element> Cache<Borrowed<'a, E>> {
    /// The cache over the buffers, its capacity read from `k_store` (the scales' lengths are
    /// the caller's to check).
    fn over(
        k_store: &'a mut [E::Unit],
        v_store: &'a mut [E::Unit],
        (ks, vs): (&'a mut [ScaleOf<E>], &'a mut [ScaleOf<E>]),
        (kv_heads, d, dv): (usize, usize, usize),
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
                ks,
                vs,
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
    /// capacity (no window and that many tokens already, or `sinks + size` above it);
    /// [`Error::NotStorable`] if a reduced cache ([`Element`]) cannot hold a value (NaN, ±inf,
    /// a value its format rounds to ±inf). The cache is unchanged then.
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
    pub fn push(&mut self, k: &[FloatOf<S>], v: &[FloatOf<S>]) -> Result<(), Error> {
        self.ring.push::<S::Elem>(self.store.store_mut(), k, v)
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
    pub fn attend<B: Backend<FloatOf<S>>>(
        &self,
        backend: B,
        q: &[FloatOf<S>],
        opts: &DecodeOptions<'_, FloatOf<S>>,
        out: Output<'_, FloatOf<S>>,
    ) -> Result<(), Error> {
        self.ring
            .attend::<S::Elem, B>(backend, self.store.store(), q, opts, out)
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
    pub fn decode<B: Backend<FloatOf<S>>>(
        &mut self,
        backend: B,
        q: &[FloatOf<S>],
        k: &[FloatOf<S>],
        v: &[FloatOf<S>],
        opts: &DecodeOptions<'_, FloatOf<S>>,
        out: Output<'_, FloatOf<S>>,
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

    /// Bytes of storage one cached token takes: its keys and values in every kv head, with
    /// their scales (int8): `kv_heads · (d·size_of(E) + dv·size_of(E) + 2·size_of(scale))`.
    ///
    /// # Examples
    ///
    /// ```
    /// use attention_core::{softmax_core::stored::f16, KvCache};
    /// assert_eq!(KvCache::<f32, 2, 4, 64, 64>::new(None)?.token_bytes(), 1024);
    /// assert_eq!(KvCache::<f16, 2, 4, 64, 64>::new(None)?.token_bytes(), 512);
    /// assert_eq!(KvCache::<i8, 2, 4, 64, 64>::new(None)?.token_bytes(), 272);
    /// # Ok::<(), attention_core::Error>(())
    /// ```
    pub fn token_bytes(&self) -> usize {
        let (unit, scale) = (
            core::mem::size_of::<<S::Elem as Element>::Unit>(),
            core::mem::size_of::<ScaleOf<S::Elem>>(),
        );
        let row = |w: usize| w.saturating_mul(unit).saturating_add(scale);
        self.ring
            .hkv
            .saturating_mul(row(self.ring.d).saturating_add(row(self.ring.dv)))
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
