//! Cross-entropy of one row whose logits arrive in chunks (a 128k-class vocabulary that is never
//! held at once), with a second pass that turns chunks into gradient chunks.

#![forbid(unsafe_code)]

use softmax_core::backend::Backend;
use softmax_core::{simd, special, Float, LogSumExp};

use crate::ce::{class_of, streamed_row, Consts, RowGrad};
use crate::error::{check_len, Error};
use crate::math::{self, CHUNK};
use crate::options::CrossEntropyOptions;

/// Cross-entropy of one row of `classes` logits presented chunk by chunk, in order, as they are
/// produced: softmax-core's online [`LogSumExp`] runs across the chunks (two reads of each chunk,
/// no buffer), the target's logit is remembered when its chunk passes. Once every class has been
/// pushed, [`loss`](Self::loss) and [`lse`](Self::lse) are available, and
/// [`gradient`](Self::gradient) turns any chunk, presented again in any grouping and order, into
/// its gradient chunk (softmax-core's `LogSumExp::probs`, one pass).
///
/// The options are those of [`cross_entropy`](crate::cross_entropy) for one sample: class
/// weights, `ignore_index` (an ignored row has loss 0 and zero gradient), label smoothing,
/// soft-cap (capped values pass through a 64-value stack buffer) and z-loss. The reduction is
/// the caller's: [`loss`](Self::loss) is the sample's own value (as with `Reduction::None`) and
/// [`gradient`](Self::gradient) takes the scale to apply (e.g. `1/Σw` for a mean over a batch).
/// The state is a few words; it keeps a reference to the weights.
///
/// Equals [`cross_entropy`](crate::cross_entropy) on the whole row up to rounding (the
/// log-sum-exp is merged across chunks instead of summed in one pass; tested).
///
/// # Examples
///
/// ```
/// use loss_core::{ChunkedCrossEntropy, CrossEntropyOptions};
/// use loss_core::softmax_core::backend::Poly;
/// let row = [0.5f32, -1.0, 2.0, 0.0, 1.5];
/// let mut st = ChunkedCrossEntropy::new(Poly, 5, 2, &CrossEntropyOptions::new())?;
/// st.push(&row[..2])?;
/// st.push(&row[2..])?;
/// let loss = st.loss()?;
/// let lse = (row.iter().map(|&v| (v as f64).exp()).sum::<f64>()).ln();
/// assert!((loss as f64 - (lse - 2.0)).abs() < 1e-6);
/// // The gradient of chunk [3, 5): p − e_t at those classes.
/// let mut g = [0.0f32; 2];
/// st.gradient(3, &row[3..], 1.0, &mut g)?;
/// assert!((g[0] as f64 - (0.0 - lse).exp()).abs() < 1e-6);
/// # Ok::<(), loss_core::Error>(())
/// ```
#[derive(Clone, Copy, Debug)]
pub struct ChunkedCrossEntropy<'a, F, B> {
    st: LogSumExp<F, B>,
    /// The options' constants (weights, smoothing, cap, z-loss; scales 1).
    k: Consts<'a, F>,
    classes: usize,
    /// The target class; `None` for an ignored row.
    target: Option<usize>,
    pushed: usize,
    /// The target's (capped) logit, once seen.
    z_t: F,
    /// `Σ w_c·z_c` (or `Σ z_c`) so far, for the smoothing term.
    wz: F,
}

impl<'a, F: Float, B: Backend<F>> ChunkedCrossEntropy<'a, F, B> {
    /// A state for one row of `classes` logits with class index `target` (or `ignore_index`).
    ///
    /// # Errors
    ///
    /// [`Error::Empty`] for `classes = 0`; [`Error::TargetOutOfRange`] (sample 0);
    /// the option checks of [`cross_entropy`](crate::cross_entropy).
    ///
    /// # Examples
    ///
    /// ```
    /// use loss_core::{ChunkedCrossEntropy, CrossEntropyOptions, Error};
    /// use loss_core::softmax_core::backend::Poly;
    /// let o = CrossEntropyOptions::<f32>::new();
    /// assert!(ChunkedCrossEntropy::new(Poly, 10, 3, &o).is_ok());
    /// assert_eq!(ChunkedCrossEntropy::new(Poly, 10, 10, &o).err(),
    ///            Some(Error::TargetOutOfRange { sample: 0, target: 10 }));
    /// ```
    pub fn new(
        backend: B,
        classes: usize,
        target: i64,
        options: &CrossEntropyOptions<'a, F>,
    ) -> Result<Self, Error> {
        if classes == 0 {
            return Err(Error::Empty {
                argument: "classes",
            });
        }
        options.validate(classes)?;
        let target = if target == options.ignore_index {
            None
        } else {
            Some(class_of(target, classes).ok_or(Error::TargetOutOfRange { sample: 0, target })?)
        };
        Ok(ChunkedCrossEntropy {
            st: LogSumExp::new(backend),
            k: Consts::new(options, classes, F::ONE, F::ONE),
            classes,
            target,
            pushed: 0,
            z_t: F::NAN,
            wz: F::ZERO,
        })
    }

    /// Takes the next chunk of logits (classes `pushed() .. pushed() + chunk.len()`); an empty
    /// chunk changes nothing.
    ///
    /// # Errors
    ///
    /// [`Error::LengthMismatch`] (argument `chunk`) if the chunk would run past `classes`.
    ///
    /// # Examples
    ///
    /// ```
    /// use loss_core::{ChunkedCrossEntropy, CrossEntropyOptions};
    /// use loss_core::softmax_core::backend::Poly;
    /// let mut st = ChunkedCrossEntropy::new(Poly, 3, 0, &CrossEntropyOptions::new())?;
    /// st.push(&[1.0f64, 2.0])?;
    /// assert!(st.push(&[3.0, 4.0]).is_err());
    /// assert_eq!(st.pushed(), 2);
    /// # Ok::<(), loss_core::Error>(())
    /// ```
    pub fn push(&mut self, chunk: &[F]) -> Result<(), Error> {
        let start = self.pushed;
        let end = start.checked_add(chunk.len()).ok_or(Error::ShapeOverflow)?;
        if end > self.classes {
            return Err(Error::LengthMismatch {
                argument: "chunk",
                expected: self.classes.saturating_sub(start),
                found: chunk.len(),
            });
        }
        let mut s = *self;
        simd::dispatch(
            #[inline(always)]
            || match s.k.cap {
                None => s.absorb(start, chunk),
                Some(c) => {
                    let mut buf = [F::ZERO; CHUNK];
                    for (i, part) in chunk.chunks(CHUNK).enumerate() {
                        let z = &mut buf[..part.len().min(CHUNK)];
                        for (z, &x) in z.iter_mut().zip(part) {
                            *z = special::softcap(B::default(), x, c);
                        }
                        s.absorb(start + i * CHUNK, z);
                    }
                }
            },
        );
        s.pushed = end;
        *self = s;
        Ok(())
    }

    /// Adds values `z` (already capped) of classes `start..`.
    #[inline(always)]
    fn absorb(&mut self, start: usize, z: &[F]) {
        self.st.push_slice(z);
        if let Some(t) = self.target {
            if let Some(&v) = t.checked_sub(start).and_then(|i| z.get(i)) {
                self.z_t = v;
            }
        }
        if self.k.eps > F::ZERO {
            self.wz += match self.k.weight {
                Some(w) => match w.get(start..start + z.len()) {
                    Some(w) => math::dot(w, z),
                    None => F::NAN,
                },
                None => math::sum(z),
            };
        }
    }

    /// The number of logits pushed so far.
    ///
    /// # Examples
    ///
    /// ```
    /// use loss_core::{ChunkedCrossEntropy, CrossEntropyOptions};
    /// use loss_core::softmax_core::backend::Poly;
    /// let st = ChunkedCrossEntropy::<f32, _>::new(Poly, 4, 1, &CrossEntropyOptions::new())?;
    /// assert_eq!(st.pushed(), 0);
    /// # Ok::<(), loss_core::Error>(())
    /// ```
    pub fn pushed(&self) -> usize {
        self.pushed
    }

    /// The log-sum-exp of the (capped) logits pushed so far (`-inf` before the first).
    ///
    /// Accuracy: as softmax-core's `LogSumExp::finish`, within `4·2⁻²⁴·(1 + |lse|)` in f32.
    ///
    /// # Examples
    ///
    /// ```
    /// use loss_core::{ChunkedCrossEntropy, CrossEntropyOptions};
    /// use loss_core::softmax_core::backend::Poly;
    /// let mut st = ChunkedCrossEntropy::new(Poly, 2, 0, &CrossEntropyOptions::new())?;
    /// st.push(&[0.0f64])?;
    /// st.push(&[0.0])?;
    /// assert!((st.lse() - core::f64::consts::LN_2).abs() < 1e-16);
    /// # Ok::<(), loss_core::Error>(())
    /// ```
    pub fn lse(&self) -> F {
        self.st.finish()
    }

    fn complete(&self) -> Result<(), Error> {
        check_len("chunks", self.classes, self.pushed)
    }

    /// The loss of the row (unreduced): `(1 − ε)·w_t·(−ln p_t) + ε/C·Σ_c w_c·(−ln p_c) +
    /// z·lse²`; 0 for an ignored row. Edge semantics as [`cross_entropy`](crate::cross_entropy)
    /// (with `+inf` logits and label smoothing, the smoothing term is `+inf` unless every logit is
    /// `+inf`).
    ///
    /// Accuracy: `−ln p_t` exact to a few units of roundoff (`(z_t − max) − ln Σ`, from the state);
    /// the smoothing term as [`cross_entropy`](crate::cross_entropy)'s.
    ///
    /// # Errors
    ///
    /// [`Error::LengthMismatch`] (argument `chunks`) until all `classes` logits were pushed.
    ///
    /// # Examples
    ///
    /// ```
    /// use loss_core::{ChunkedCrossEntropy, CrossEntropyOptions};
    /// use loss_core::softmax_core::backend::Poly;
    /// let mut st = ChunkedCrossEntropy::new(Poly, 2, 1, &CrossEntropyOptions::new())?;
    /// assert!(st.loss().is_err());
    /// st.push(&[0.0f32, 0.0])?;
    /// assert!((st.loss()? - core::f32::consts::LN_2).abs() < 1e-7);
    /// # Ok::<(), loss_core::Error>(())
    /// ```
    pub fn loss(&self) -> Result<F, Error> {
        self.complete()?;
        let Some(t) = self.target else {
            return Ok(F::ZERO);
        };
        let r = streamed_row(&self.k, &self.st, t, self.z_t, self.wz, self.classes);
        // The z-loss term is added only where there is one (`x + 0` would turn a −0 loss into
        // +0).
        Ok(if self.k.zl > F::ZERO {
            r.ce + r.z
        } else {
            r.ce
        })
    }

    /// The gradient of `scale·loss()` with respect to the raw logits of classes
    /// `start .. start + chunk.len()`, whose logits are `chunk`, into `grad` (as long as
    /// `chunk`): `scale·(p_j·S − ε/C·w_j − [j = t]·(1 − ε)·w_t) + 2·scale·z·lse·p_j`, times the
    /// soft-cap's derivative. Any chunk, any order, once the whole row was pushed. Zero for an
    /// ignored row.
    ///
    /// Accuracy: as [`cross_entropy`](crate::cross_entropy)'s gradient (the same formula on the
    /// probabilities of the chunk under the row's normaliser): the softmax's `2e-6` relative per
    /// entry plus `2⁻²³·|g|` in f32.
    ///
    /// # Errors
    ///
    /// [`Error::LengthMismatch`] until the whole row was pushed (argument `chunks`), if
    /// `grad.len() != chunk.len()` (argument `grad`), or if the chunk runs past `classes`
    /// (argument `chunk`).
    ///
    /// # Examples
    ///
    /// ```
    /// use loss_core::{ChunkedCrossEntropy, CrossEntropyOptions};
    /// use loss_core::softmax_core::backend::Poly;
    /// let row = [1.0f64, 1.0, 1.0, 1.0];
    /// let mut st = ChunkedCrossEntropy::new(Poly, 4, 0, &CrossEntropyOptions::new())?;
    /// st.push(&row)?;
    /// let mut g = [0.0f64; 2];
    /// st.gradient(0, &row[..2], 0.5, &mut g)?;
    /// assert_eq!(g, [0.5 * (0.25 - 1.0), 0.5 * 0.25]);
    /// # Ok::<(), loss_core::Error>(())
    /// ```
    pub fn gradient(
        &self,
        start: usize,
        chunk: &[F],
        scale: F,
        grad: &mut [F],
    ) -> Result<(), Error> {
        self.complete()?;
        check_len("grad", chunk.len(), grad.len())?;
        let end = start.checked_add(chunk.len()).ok_or(Error::ShapeOverflow)?;
        if end > self.classes {
            return Err(Error::LengthMismatch {
                argument: "chunk",
                expected: self.classes.saturating_sub(start),
                found: chunk.len(),
            });
        }
        let Some(t) = self.target else {
            grad.fill(F::ZERO);
            return Ok(());
        };
        let k = Consts {
            s_ce: scale,
            s_z: scale,
            ..self.k
        };
        let rg = RowGrad::new(&k, t, self.st.finish());
        let st = self.st;
        let cap = k.cap;
        simd::dispatch(
            #[inline(always)]
            || {
                // g_j = p_j·a − b·w_j, times the cap's derivative at the raw logit x_j; `z` are
                // the values the softmax saw (capped), `x` the raw logits.
                let finish = |off: usize, x: &[F], z: &[F], g: &mut [F]| {
                    math::probs_into(&st, z, g);
                    for (j, (g, &x)) in g.iter_mut().zip(x).enumerate() {
                        let v = rg.at(*g, k.w(off + j));
                        *g = match cap {
                            Some(c) => v * special::softcap_slope(B::default(), x, c),
                            None => v,
                        };
                    }
                    // The target's entry.
                    if let Some(i) = t.checked_sub(off) {
                        if let (Some(gt), Some(&zt), Some(&xt)) = (g.get_mut(i), z.get(i), x.get(i))
                        {
                            let v = rg.target(st.prob(zt));
                            *gt = match cap {
                                Some(c) => v * special::softcap_slope(B::default(), xt, c),
                                None => v,
                            };
                        }
                    }
                };
                match cap {
                    None => finish(start, chunk, chunk, grad),
                    Some(c) => {
                        let mut buf = [F::ZERO; CHUNK];
                        for (i, (part, g)) in math::pieces(chunk, CHUNK)
                            .zip(math::pieces_mut(grad, CHUNK))
                            .enumerate()
                        {
                            let z = &mut buf[..part.len().min(CHUNK)];
                            for (z, &x) in z.iter_mut().zip(part) {
                                *z = special::softcap(B::default(), x, c);
                            }
                            finish(start + i * CHUNK, part, z, g);
                        }
                    }
                }
            },
        );
        Ok(())
    }
}
