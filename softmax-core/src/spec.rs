//! Row-batch specification ([`Rows`]), validation at the API boundary, and the dispatch from the
//! runtime options (mask kind, temperature) to monomorphised row kernels.

#![forbid(unsafe_code)]

use crate::error::{check_len, check_rows, check_temperature, Error};
use crate::float::Float;
use crate::kernel::{Bias, Keep, Load, Plain};

/// How the entries of each row are masked.
///
/// # Examples
///
/// ```
/// use softmax_core::{rows, Mask, Rows, backend::Poly};
/// let keep = [true, false, true];
/// let spec = Rows::new(3).with_keep(&keep);
/// assert!(matches!(spec.mask(), Mask::Keep(_)));
/// let mut y = [0.0f32; 3];
/// rows::softmax(Poly, &[1.0, 100.0, 1.0], &mut y, &spec).unwrap();
/// assert_eq!(y, [0.5, 0.0, 0.5]);
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub enum Mask<'a, F> {
    /// Every entry takes part.
    #[default]
    None,
    /// Boolean keep-mask, one flag per entry (`true` = keep). A dropped entry behaves as `-inf`
    /// whatever its value, NaN included.
    Keep(&'a [bool]),
    /// Additive mask: entry `i` becomes `x[i] + bias[i]` before the temperature is applied
    /// (`0` keeps, `-inf` drops a finite logit; `+inf + -inf` is NaN, so drop infinite logits with
    /// a keep-mask instead).
    Bias(&'a [F]),
}

/// Shape and options of a row batch: rows of `n` entries (the batch size is the input length
/// divided by `n`), a temperature τ (each row is read as `x/τ`), and an optional mask.
///
/// Built with [`Rows::new`] and the chained `with_*` setters; validated by the function it is
/// passed to (`n = 0` → [`Error::EmptyRow`], an input length that is not a multiple of `n` →
/// [`Error::RaggedBatch`], other lengths → [`Error::LengthMismatch`], τ →
/// [`Error::InvalidTemperature`]).
///
/// # Examples
///
/// ```
/// use softmax_core::{rows, Rows, backend::Poly};
/// // Two rows of three, temperature 2.
/// let x = [1.0f64, 2.0, 3.0, 0.0, 0.0, 0.0];
/// let mut lse = [0.0; 2];
/// rows::logsumexp(Poly, &x, &mut lse, &Rows::new(3).with_temperature(2.0)).unwrap();
/// assert!((lse[1] - 3f64.ln()).abs() < 1e-15);
/// ```
#[derive(Clone, Copy, Debug)]
pub struct Rows<'a, F> {
    n: usize,
    temperature: F,
    mask: Mask<'a, F>,
}

impl<'a, F: Float> Rows<'a, F> {
    /// Rows of `n` entries, temperature 1, no mask.
    ///
    /// # Examples
    ///
    /// ```
    /// use softmax_core::Rows;
    /// assert_eq!(Rows::<f32>::new(8).n(), 8);
    /// ```
    pub fn new(n: usize) -> Self {
        Rows {
            n,
            temperature: F::ONE,
            mask: Mask::None,
        }
    }

    /// Sets the temperature τ (> 0 and finite, checked when used).
    ///
    /// # Examples
    ///
    /// ```
    /// use softmax_core::Rows;
    /// assert_eq!(Rows::new(4).with_temperature(0.5f32).temperature(), 0.5);
    /// ```
    pub fn with_temperature(self, temperature: F) -> Self {
        Rows {
            temperature,
            ..self
        }
    }

    /// Sets a boolean keep-mask (same length as the input, checked when used).
    ///
    /// # Examples
    ///
    /// ```
    /// use softmax_core::{Mask, Rows};
    /// let keep = [true, false];
    /// assert!(matches!(Rows::<f32>::new(2).with_keep(&keep).mask(), Mask::Keep(_)));
    /// ```
    pub fn with_keep(self, keep: &'a [bool]) -> Self {
        Rows {
            mask: Mask::Keep(keep),
            ..self
        }
    }

    /// Sets an additive bias mask (same length as the input, checked when used).
    ///
    /// # Examples
    ///
    /// ```
    /// use softmax_core::{Mask, Rows};
    /// let bias = [0.0f32, f32::NEG_INFINITY];
    /// assert!(matches!(Rows::new(2).with_bias(&bias).mask(), Mask::Bias(_)));
    /// ```
    pub fn with_bias(self, bias: &'a [F]) -> Self {
        Rows {
            mask: Mask::Bias(bias),
            ..self
        }
    }

    /// Entries per row.
    ///
    /// # Examples
    ///
    /// ```
    /// use softmax_core::Rows;
    /// assert_eq!(Rows::<f64>::new(3).n(), 3);
    /// ```
    pub fn n(&self) -> usize {
        self.n
    }

    /// The temperature τ.
    ///
    /// # Examples
    ///
    /// ```
    /// use softmax_core::Rows;
    /// assert_eq!(Rows::<f64>::new(3).temperature(), 1.0);
    /// ```
    pub fn temperature(&self) -> F {
        self.temperature
    }

    /// The mask.
    ///
    /// # Examples
    ///
    /// ```
    /// use softmax_core::{Mask, Rows};
    /// assert!(matches!(Rows::<f32>::new(3).mask(), Mask::None));
    /// ```
    pub fn mask(&self) -> Mask<'a, F> {
        self.mask
    }

    /// Checks the spec against an input of `len` values; returns the number of rows.
    pub(crate) fn check(&self, len: usize) -> Result<usize, Error> {
        let rows = check_rows(len, self.n)?;
        let mask_len = match self.mask {
            Mask::None => len,
            Mask::Keep(k) => k.len(),
            Mask::Bias(b) => b.len(),
        };
        check_len(len, mask_len)?;
        check_temperature(self.temperature)?;
        Ok(rows)
    }
}

/// The mask of one row, able to wrap that row's values into a [`Load`].
pub(crate) trait RowMask<F: Float>: Copy {
    type L<'x>: Load<F>
    where
        Self: 'x,
        F: 'x;
    fn load<'x>(self, x: &'x [F]) -> Self::L<'x>
    where
        Self: 'x;
}

#[derive(Clone, Copy)]
pub(crate) struct NoMask;
impl<F: Float> RowMask<F> for NoMask {
    type L<'x>
        = Plain<'x, F>
    where
        F: 'x;
    #[inline(always)]
    fn load<'x>(self, x: &'x [F]) -> Plain<'x, F>
    where
        Self: 'x,
    {
        Plain(x)
    }
}

#[derive(Clone, Copy)]
pub(crate) struct KeepRow<'m>(pub &'m [bool]);
impl<'m, F: Float> RowMask<F> for KeepRow<'m> {
    type L<'x>
        = Keep<'x, F>
    where
        Self: 'x,
        F: 'x;
    #[inline(always)]
    fn load<'x>(self, x: &'x [F]) -> Keep<'x, F>
    where
        Self: 'x,
    {
        Keep(x, self.0)
    }
}

#[derive(Clone, Copy)]
pub(crate) struct BiasRow<'m, F>(pub &'m [F]);
impl<'m, F: Float> RowMask<F> for BiasRow<'m, F> {
    type L<'x>
        = Bias<'x, F>
    where
        Self: 'x,
        F: 'x;
    #[inline(always)]
    fn load<'x>(self, x: &'x [F]) -> Bias<'x, F>
    where
        Self: 'x,
    {
        Bias(x, self.0)
    }
}

/// Runs `$body` once per (mask kind × temperature mode) combination of a validated spec, with
/// `$masks` bound to an iterator of per-row [`RowMask`]s and `$s` to the temperature mode.
macro_rules! dispatch {
    ($spec:expr, |$masks:ident, $s:ident| $body:expr) => {{
        let spec = $spec;
        let n = spec.n();
        match spec.mask() {
            $crate::Mask::None => $crate::kernel::with_scale!(spec.temperature(), |$s| {
                let $masks = core::iter::repeat($crate::spec::NoMask);
                $body
            }),
            $crate::Mask::Keep(k) => $crate::kernel::with_scale!(spec.temperature(), |$s| {
                let $masks = $crate::chunks::chunks(k, n).map($crate::spec::KeepRow);
                $body
            }),
            $crate::Mask::Bias(b) => $crate::kernel::with_scale!(spec.temperature(), |$s| {
                let $masks = $crate::chunks::chunks(b, n).map($crate::spec::BiasRow);
                $body
            }),
        }
    }};
}
pub(crate) use dispatch;
