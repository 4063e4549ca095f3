//! The error type of every fallible function of the crate.

/// What can go wrong: structural problems with the arguments (lengths, shapes, parameters out of
/// their domain, a full cache), never the values in the tensors (those follow the edge semantics
/// of the [crate](crate) docs: `-inf`, `+inf` and NaN scores have defined results).
///
/// # Examples
///
/// ```
/// use attention_core::{attention, Dims, Error, Options, Output, Qkv, backend::Poly};
/// let dims = Dims::new(2, 1, 1, 1, 2, 2);
/// let (q, k, v) = ([0.0f32; 4], [0.0f32; 2], [0.0f32; 2]);
/// let mut o = [0.0f32; 3]; // should be 2·1·2 = 4
/// let err = attention(Poly, &dims, Qkv::new(&q, &k, &v), &Options::new(), Output::new(&mut o));
/// assert_eq!(err, Err(Error::LengthMismatch { what: "o", expected: 4, found: 3 }));
/// assert_eq!(err.unwrap_err().to_string(), "`o` has 3 values, expected 4");
/// ```
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Error {
    /// A buffer's length is not what the dimensions imply.
    LengthMismatch {
        /// The buffer (`"q"`, `"k"`, `"v"`, `"o"`, `"lse"`, `"mask"`, …).
        what: &'static str,
        /// The length required.
        expected: usize,
        /// The length given.
        found: usize,
    },
    /// A product of the dimensions does not fit in `usize` (no buffer can have that length).
    ShapeOverflow,
    /// A dimension that must be at least 1 is 0 (`heads`, `kv_heads`, `d` or `dv`).
    ZeroDim {
        /// Which dimension.
        what: &'static str,
    },
    /// `kv_heads` does not divide `heads` (grouped-query attention needs whole groups).
    KvHeads {
        /// Query heads.
        heads: usize,
        /// Key/value heads.
        kv_heads: usize,
    },
    /// The scale is not finite.
    InvalidScale,
    /// The soft-cap is not a finite number > 0.
    InvalidSoftcap,
    /// The window is 0 (a window of `W` positions needs `W >= 1`).
    InvalidWindow,
    /// An option the operation does not support: a sink-logit gradient buffer given to
    /// [`attention_backward`](crate::attention_backward) without sink logits to differentiate.
    UnsupportedOption {
        /// Which option.
        what: &'static str,
    },
    /// A key range of a partial pass is not within `0..s`.
    KeyRange {
        /// First key of the range.
        start: usize,
        /// One past the last key.
        end: usize,
        /// The number of keys.
        s: usize,
    },
    /// The KV cache would have to hold more tokens than its capacity.
    CacheFull {
        /// The capacity, in tokens.
        capacity: usize,
    },
    /// The decoder was asked to attend before any token was pushed.
    EmptyCache,
    /// A reduced-precision KV cache ([`Element`](crate::Element)) cannot store a pushed row: it
    /// holds NaN or ±inf, or a value the format rounds to ±inf.
    NotStorable {
        /// Which rows (`"k"` or `"v"`).
        what: &'static str,
    },
    /// An error of softmax-core (a backstop: the arguments are checked here first).
    Core(softmax_core::Error),
}

impl core::fmt::Display for Error {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match *self {
            Error::LengthMismatch {
                what,
                expected,
                found,
            } => write!(f, "`{what}` has {found} values, expected {expected}"),
            Error::ShapeOverflow => f.write_str("the dimensions' product overflows usize"),
            Error::ZeroDim { what } => write!(f, "`{what}` must be at least 1"),
            Error::KvHeads { heads, kv_heads } => {
                write!(f, "kv_heads = {kv_heads} does not divide heads = {heads}")
            }
            Error::InvalidScale => f.write_str("the scale must be finite"),
            Error::InvalidSoftcap => f.write_str("the soft-cap must be finite and > 0"),
            Error::InvalidWindow => f.write_str("the window must be at least 1"),
            Error::UnsupportedOption { what } => {
                write!(f, "option `{what}` is not supported here")
            }
            Error::KeyRange { start, end, s } => {
                write!(f, "key range {start}..{end} is not within 0..{s}")
            }
            Error::CacheFull { capacity } => {
                write!(f, "the KV cache is full ({capacity} tokens)")
            }
            Error::EmptyCache => f.write_str("no token has been pushed into the cache"),
            Error::NotStorable { what } => write!(
                f,
                "`{what}` holds NaN, an infinity or a value the cache's format rounds to infinity"
            ),
            Error::Core(e) => write!(f, "softmax-core: {e}"),
        }
    }
}

impl core::error::Error for Error {}

impl From<softmax_core::Error> for Error {
    fn from(e: softmax_core::Error) -> Self {
        Error::Core(e)
    }
}
