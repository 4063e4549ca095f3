//! The shapes, options and buffers of an attention call, and their validation.

use softmax_core::Float;

/// Causal masking: which keys a query may attend to by position.
///
/// Key `j` sits at position `j`; query `t` at position `s − t_len + t` (bottom-right, and for
/// [`Causal::None`] wherever a position matters: the window and ALiBi) or `t` (top-left).
///
/// # Examples
///
/// ```
/// use attention_core::Causal;
/// assert_eq!(Causal::default(), Causal::None);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Causal {
    /// No causal rule.
    #[default]
    None,
    /// Query `t` sits at position `s − t_len + t` and may attend keys at positions `<=` its
    /// own: the last query sees every key. What a KV cache and chunked prefill need
    /// (FlashAttention's `causal=True`).
    BottomRight,
    /// Query `t` sits at position `t` (PyTorch's `is_causal=True`, a lower-triangular mask
    /// anchored at the top-left corner).
    TopLeft,
}

/// The dimensions of an attention call (head-major layout):
/// `q` is `heads × t × d`, `k` is `kv_heads × s × d`, `v` is `kv_heads × s × dv`, the output `o`
/// is `heads × t × dv`; query head `h` reads key/value head `h / (heads / kv_heads)`.
///
/// # Examples
///
/// ```
/// use attention_core::Dims;
/// let dims = Dims::new(8, 2, 16, 16, 64, 64); // 8 query heads sharing 2 kv heads (GQA)
/// assert_eq!(dims.group(), 4);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Dims {
    /// Query heads (`H >= 1`).
    pub heads: usize,
    /// Key/value heads (`>= 1`, divides `heads`).
    pub kv_heads: usize,
    /// Queries per head (`T`, may be 0).
    pub t: usize,
    /// Keys per head (`S`, may be 0: then no query has a key).
    pub s: usize,
    /// Query/key width (`>= 1`).
    pub d: usize,
    /// Value width (`>= 1`).
    pub dv: usize,
}

impl Dims {
    /// `heads` query heads over `kv_heads` key/value heads, `t` queries and `s` keys per head,
    /// query/key width `d`, value width `dv`.
    ///
    /// # Examples
    ///
    /// ```
    /// use attention_core::Dims;
    /// let dims = Dims::new(1, 1, 3, 5, 4, 2);
    /// assert_eq!((dims.t, dims.s, dims.dv), (3, 5, 2));
    /// ```
    pub const fn new(
        heads: usize,
        kv_heads: usize,
        t: usize,
        s: usize,
        d: usize,
        dv: usize,
    ) -> Self {
        Dims {
            heads,
            kv_heads,
            t,
            s,
            d,
            dv,
        }
    }

    /// Query heads per key/value head (`heads / kv_heads`; 0 if `kv_heads` is 0).
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(attention_core::Dims::new(6, 3, 1, 1, 1, 1).group(), 2);
    /// ```
    pub const fn group(&self) -> usize {
        match self.heads.checked_div(self.kv_heads) {
            Some(g) => g,
            None => 0,
        }
    }
}

/// The options of an attention call: scale, masks and score modifiers. Every one is off by
/// default; they combine freely (all masks with AND, the modifiers in the order
/// `cap(scale·q·k) + bias + alibi`).
///
/// # Examples
///
/// ```
/// use attention_core::{Causal, Options};
/// let opts = Options::<f32>::new()
///     .with_causal(Causal::BottomRight)
///     .with_window(128)
///     .with_sinks(4)
///     .with_softcap(50.0);
/// assert_eq!(opts.window(), Some(128));
/// ```
#[derive(Clone, Copy, Debug)]
pub struct Options<'a, F> {
    scale: Option<F>,
    causal: Causal,
    mask: Option<&'a [bool]>,
    bias: Option<&'a [F]>,
    alibi: bool,
    window: Option<usize>,
    sinks: usize,
    softcap: Option<F>,
    sink_logits: Option<&'a [F]>,
}

impl<F: Float> Default for Options<'_, F> {
    fn default() -> Self {
        Self::new()
    }
}

impl<'a, F: Float> Options<'a, F> {
    /// No mask and no modifier; scale `1/√d`.
    ///
    /// # Examples
    ///
    /// ```
    /// use attention_core::{Causal, Options};
    /// let o = Options::<f64>::new();
    /// assert_eq!((o.causal(), o.window(), o.sinks()), (Causal::None, None, 0));
    /// ```
    pub const fn new() -> Self {
        Options {
            scale: None,
            causal: Causal::None,
            mask: None,
            bias: None,
            alibi: false,
            window: None,
            sinks: 0,
            softcap: None,
            sink_logits: None,
        }
    }

    /// The factor of `q·k` (default `1/√d`, correctly rounded); must be finite.
    ///
    /// # Examples
    ///
    /// ```
    /// let o = attention_core::Options::new().with_scale(0.5f32);
    /// assert_eq!(o.scale(), Some(0.5));
    /// ```
    pub const fn with_scale(mut self, scale: F) -> Self {
        self.scale = Some(scale);
        self
    }

    /// The causal rule ([`Causal`]).
    ///
    /// # Examples
    ///
    /// ```
    /// use attention_core::{Causal, Options};
    /// let o = Options::<f32>::new().with_causal(Causal::TopLeft);
    /// assert_eq!(o.causal(), Causal::TopLeft);
    /// ```
    pub const fn with_causal(mut self, causal: Causal) -> Self {
        self.causal = causal;
        self
    }

    /// A boolean keep-mask of `t × s` entries (`true` = may attend), shared by every head.
    ///
    /// # Examples
    ///
    /// ```
    /// let keep = [true, false];
    /// let o = attention_core::Options::<f32>::new().with_mask(&keep);
    /// assert_eq!(o.mask(), Some(&keep[..]));
    /// ```
    pub const fn with_mask(mut self, keep: &'a [bool]) -> Self {
        self.mask = Some(keep);
        self
    }

    /// An additive bias of `heads × t × s` scores, added after scaling and capping (`-inf`
    /// removes a key, like the keep-mask).
    ///
    /// # Examples
    ///
    /// ```
    /// let b = [0.0f32, -1.0];
    /// let o = attention_core::Options::new().with_bias(&b);
    /// assert_eq!(o.bias(), Some(&b[..]));
    /// ```
    pub const fn with_bias(mut self, bias: &'a [F]) -> Self {
        self.bias = Some(bias);
        self
    }

    /// ALiBi: each score gains `−m_h·|pos(query) − pos(key)|` with the slopes of
    /// [`alibi_slopes`](crate::alibi_slopes).
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(attention_core::Options::<f32>::new().with_alibi(true).alibi());
    /// ```
    pub const fn with_alibi(mut self, on: bool) -> Self {
        self.alibi = on;
        self
    }

    /// A sliding window: a query attends only keys with `|pos(query) − pos(key)| < window`
    /// (besides the `sinks` first keys); `window >= 1`.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(attention_core::Options::<f32>::new().with_window(3).window(), Some(3));
    /// ```
    pub const fn with_window(mut self, window: usize) -> Self {
        self.window = Some(window);
        self
    }

    /// The first `sinks` keys are exempt from the window (StreamingLLM's attention sinks; not
    /// from the causal rule or the keep-mask). Without a window every key is visible anyway.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(attention_core::Options::<f32>::new().with_sinks(4).sinks(), 4);
    /// ```
    pub const fn with_sinks(mut self, sinks: usize) -> Self {
        self.sinks = sinks;
        self
    }

    /// Logit soft-capping: `scale·q·k` becomes `c·tanh(scale·q·k / c)` (Gemma 2); `c` finite and
    /// `> 0`.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(attention_core::Options::new().with_softcap(30.0f32).softcap(), Some(30.0));
    /// ```
    pub const fn with_softcap(mut self, c: F) -> Self {
        self.softcap = Some(c);
        self
    }

    /// Learned per-head sink logits (`heads` values, gpt-oss): one more candidate in each
    /// query's softmax that carries no value, so the key weights may sum to less than 1.
    ///
    /// # Examples
    ///
    /// ```
    /// let z = [0.5f32, -1.0];
    /// let o = attention_core::Options::new().with_sink_logits(&z);
    /// assert_eq!(o.sink_logits(), Some(&z[..]));
    /// ```
    pub const fn with_sink_logits(mut self, logits: &'a [F]) -> Self {
        self.sink_logits = Some(logits);
        self
    }

    /// The scale given, or `None` for the default `1/√d`.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(attention_core::Options::<f32>::new().scale(), None);
    /// ```
    pub const fn scale(&self) -> Option<F> {
        self.scale
    }

    /// The causal rule.
    ///
    /// # Examples
    ///
    /// ```
    /// use attention_core::{Causal, Options};
    /// assert_eq!(Options::<f32>::new().causal(), Causal::None);
    /// ```
    pub const fn causal(&self) -> Causal {
        self.causal
    }

    /// The keep-mask, if any.
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(attention_core::Options::<f32>::new().mask().is_none());
    /// ```
    pub const fn mask(&self) -> Option<&'a [bool]> {
        self.mask
    }

    /// The additive bias, if any.
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(attention_core::Options::<f32>::new().bias().is_none());
    /// ```
    pub const fn bias(&self) -> Option<&'a [F]> {
        self.bias
    }

    /// Whether ALiBi is on.
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(!attention_core::Options::<f32>::new().alibi());
    /// ```
    pub const fn alibi(&self) -> bool {
        self.alibi
    }

    /// The window, if any.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(attention_core::Options::<f32>::new().window(), None);
    /// ```
    pub const fn window(&self) -> Option<usize> {
        self.window
    }

    /// The number of attention sinks.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(attention_core::Options::<f32>::new().sinks(), 0);
    /// ```
    pub const fn sinks(&self) -> usize {
        self.sinks
    }

    /// The soft-cap, if any.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(attention_core::Options::<f32>::new().softcap(), None);
    /// ```
    pub const fn softcap(&self) -> Option<F> {
        self.softcap
    }

    /// The sink logits, if any.
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(attention_core::Options::<f32>::new().sink_logits().is_none());
    /// ```
    pub const fn sink_logits(&self) -> Option<&'a [F]> {
        self.sink_logits
    }
}

/// The options of the streaming decoder's [`attend`](crate::Cache::attend): the score
/// modifiers of [`Options`] without its masks. The causal rule is implied (a new token sees the
/// tokens before it) and the window and the attention sinks are the cache's own
/// ([`Window`](crate::Window), given once, when the cache is made), so they cannot disagree.
///
/// # Examples
///
/// ```
/// use attention_core::DecodeOptions;
/// let z = [0.5f32, -1.0];
/// let opts = DecodeOptions::new().with_alibi(true).with_softcap(50.0).with_sink_logits(&z);
/// assert_eq!((opts.alibi(), opts.softcap()), (true, Some(50.0)));
/// ```
#[derive(Clone, Copy, Debug)]
pub struct DecodeOptions<'a, F> {
    scale: Option<F>,
    alibi: bool,
    softcap: Option<F>,
    sink_logits: Option<&'a [F]>,
}

impl<F: Float> Default for DecodeOptions<'_, F> {
    fn default() -> Self {
        Self::new()
    }
}

impl<'a, F: Float> DecodeOptions<'a, F> {
    /// No modifier; scale `1/√d`.
    ///
    /// # Examples
    ///
    /// ```
    /// let o = attention_core::DecodeOptions::<f32>::new();
    /// assert_eq!((o.scale(), o.alibi()), (None, false));
    /// ```
    pub const fn new() -> Self {
        DecodeOptions {
            scale: None,
            alibi: false,
            softcap: None,
            sink_logits: None,
        }
    }

    /// The factor of `q·k` (default `1/√d`, correctly rounded); must be finite.
    ///
    /// # Examples
    ///
    /// ```
    /// let o = attention_core::DecodeOptions::new().with_scale(0.5f32);
    /// assert_eq!(o.scale(), Some(0.5));
    /// ```
    pub const fn with_scale(mut self, scale: F) -> Self {
        self.scale = Some(scale);
        self
    }

    /// ALiBi, as [`Options::with_alibi`], with the tokens' absolute positions.
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(attention_core::DecodeOptions::<f32>::new().with_alibi(true).alibi());
    /// ```
    pub const fn with_alibi(mut self, on: bool) -> Self {
        self.alibi = on;
        self
    }

    /// Logit soft-capping, as [`Options::with_softcap`]; `c` finite and `> 0`.
    ///
    /// # Examples
    ///
    /// ```
    /// let o = attention_core::DecodeOptions::new().with_softcap(30.0f32);
    /// assert_eq!(o.softcap(), Some(30.0));
    /// ```
    pub const fn with_softcap(mut self, c: F) -> Self {
        self.softcap = Some(c);
        self
    }

    /// Learned per-head sink logits (`heads` values), as [`Options::with_sink_logits`].
    ///
    /// # Examples
    ///
    /// ```
    /// let z = [1.0f64];
    /// let o = attention_core::DecodeOptions::new().with_sink_logits(&z);
    /// assert_eq!(o.sink_logits(), Some(&z[..]));
    /// ```
    pub const fn with_sink_logits(mut self, logits: &'a [F]) -> Self {
        self.sink_logits = Some(logits);
        self
    }

    /// The scale given, or `None` for the default `1/√d`.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(attention_core::DecodeOptions::<f32>::new().scale(), None);
    /// ```
    pub const fn scale(&self) -> Option<F> {
        self.scale
    }

    /// Whether ALiBi is on.
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(!attention_core::DecodeOptions::<f32>::new().alibi());
    /// ```
    pub const fn alibi(&self) -> bool {
        self.alibi
    }

    /// The soft-cap, if any.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(attention_core::DecodeOptions::<f32>::new().softcap(), None);
    /// ```
    pub const fn softcap(&self) -> Option<F> {
        self.softcap
    }

    /// The sink logits, if any.
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(attention_core::DecodeOptions::<f32>::new().sink_logits().is_none());
    /// ```
    pub const fn sink_logits(&self) -> Option<&'a [F]> {
        self.sink_logits
    }
}

/// The three inputs of an attention call, in the layout of [`Dims`].
///
/// # Examples
///
/// ```
/// use attention_core::Qkv;
/// let (q, k, v) = ([1.0f32; 4], [1.0f32; 8], [2.0f32; 8]);
/// let x = Qkv::new(&q, &k, &v);
/// assert_eq!(x.k.len(), 8);
/// ```
#[derive(Clone, Copy, Debug)]
pub struct Qkv<'a, F> {
    /// Queries, `heads × t × d`.
    pub q: &'a [F],
    /// Keys, `kv_heads × s × d`.
    pub k: &'a [F],
    /// Values, `kv_heads × s × dv`.
    pub v: &'a [F],
}

impl<'a, F> Qkv<'a, F> {
    /// Bundles the queries, keys and values.
    ///
    /// # Examples
    ///
    /// ```
    /// let x = attention_core::Qkv::new(&[0.0f32][..], &[][..], &[][..]);
    /// assert_eq!(x.q.len(), 1);
    /// ```
    pub const fn new(q: &'a [F], k: &'a [F], v: &'a [F]) -> Self {
        Qkv { q, k, v }
    }
}

/// Where an attention call writes: the output `o` (`heads × t × dv`) and, optionally, each
/// query's log-sum-exp and attention entropy (`heads × t` each).
///
/// # Examples
///
/// ```
/// use attention_core::Output;
/// let (mut o, mut lse) = ([0.0f32; 8], [0.0f32; 2]);
/// let out = Output::new(&mut o).with_lse(&mut lse);
/// # let _ = out;
/// ```
#[derive(Debug)]
pub struct Output<'a, F> {
    pub(crate) o: &'a mut [F],
    pub(crate) lse: Option<&'a mut [F]>,
    pub(crate) entropy: Option<&'a mut [F]>,
}

impl<'a, F> Output<'a, F> {
    /// Writes the attention output into `o`.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut o = [0.0f64; 4];
    /// let _out = attention_core::Output::new(&mut o);
    /// ```
    pub fn new(o: &'a mut [F]) -> Self {
        Output {
            o,
            lse: None,
            entropy: None,
        }
    }

    /// Also writes each query's log-sum-exp of its allowed scores (the sink logit included) into
    /// `lse`: what [`attention_backward`](crate::attention_backward) needs.
    ///
    /// # Examples
    ///
    /// ```
    /// let (mut o, mut l) = ([0.0f32; 2], [0.0f32; 1]);
    /// let _out = attention_core::Output::new(&mut o).with_lse(&mut l);
    /// ```
    pub fn with_lse(mut self, lse: &'a mut [F]) -> Self {
        self.lse = Some(lse);
        self
    }

    /// Also writes each query's attention entropy (nats) into `entropy`.
    ///
    /// # Examples
    ///
    /// ```
    /// let (mut o, mut h) = ([0.0f32; 2], [0.0f32; 1]);
    /// let _out = attention_core::Output::new(&mut o).with_entropy(&mut h);
    /// ```
    pub fn with_entropy(mut self, entropy: &'a mut [F]) -> Self {
        self.entropy = Some(entropy);
        self
    }
}

/// What the backward pass needs from the forward pass: its output `o` (`heads × t × dv`) and
/// each query's log-sum-exp (`heads × t`), as [`attention`](crate::attention) wrote them.
///
/// # Examples
///
/// ```
/// let (o, lse) = ([0.0f32; 4], [0.0f32; 2]);
/// let saved = attention_core::Saved::new(&o, &lse);
/// assert_eq!(saved.lse.len(), 2);
/// ```
#[derive(Clone, Copy, Debug)]
pub struct Saved<'a, F> {
    /// The forward output.
    pub o: &'a [F],
    /// The forward log-sum-exp of each query.
    pub lse: &'a [F],
}

impl<'a, F> Saved<'a, F> {
    /// Bundles the forward output and log-sum-exp.
    ///
    /// # Examples
    ///
    /// ```
    /// let _s = attention_core::Saved::new(&[0.0f64][..], &[0.0f64][..]);
    /// ```
    pub const fn new(o: &'a [F], lse: &'a [F]) -> Self {
        Saved { o, lse }
    }
}

/// Where the backward pass writes: `dq` (`heads × t × d`), `dk` (`kv_heads × s × d`), `dv`
/// (`kv_heads × s × dv`) and, with sink logits, their gradient (`heads`).
///
/// # Examples
///
/// ```
/// let (mut dq, mut dk, mut dv) = ([0.0f32; 2], [0.0f32; 2], [0.0f32; 2]);
/// let _g = attention_core::Grads::new(&mut dq, &mut dk, &mut dv);
/// ```
#[derive(Debug)]
pub struct Grads<'a, F> {
    pub(crate) dq: &'a mut [F],
    pub(crate) dk: &'a mut [F],
    pub(crate) dv: &'a mut [F],
    pub(crate) d_sink: Option<&'a mut [F]>,
}

impl<'a, F> Grads<'a, F> {
    /// The gradient buffers of `q`, `k` and `v`.
    ///
    /// # Examples
    ///
    /// ```
    /// let (mut a, mut b, mut c) = ([0.0f32; 1], [0.0f32; 1], [0.0f32; 1]);
    /// let _g = attention_core::Grads::new(&mut a, &mut b, &mut c);
    /// ```
    pub fn new(dq: &'a mut [F], dk: &'a mut [F], dv: &'a mut [F]) -> Self {
        Grads {
            dq,
            dk,
            dv,
            d_sink: None,
        }
    }

    /// Also the gradient of the sink logits (`heads` values). Optional when the options have
    /// sink logits (without it their gradient is not computed; the other gradients are the
    /// same), refused ([`Error::UnsupportedOption`](crate::Error::UnsupportedOption)) when they
    /// have none.
    ///
    /// # Examples
    ///
    /// ```
    /// let (mut a, mut b, mut c, mut z) = ([0.0f32; 1], [0.0f32; 1], [0.0f32; 1], [0.0f32; 1]);
    /// let _g = attention_core::Grads::new(&mut a, &mut b, &mut c).with_sink_logits(&mut z);
    /// ```
    pub fn with_sink_logits(mut self, d_sink: &'a mut [F]) -> Self {
        self.d_sink = Some(d_sink);
        self
    }
}
