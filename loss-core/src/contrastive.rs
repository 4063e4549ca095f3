//! Contrastive losses on the same skeleton: InfoNCE (one query, batched with the
//! `info-nce-pytorch` semantics, the symmetric CLIP loss), SimCLR's NT-Xent, the SigLIP sigmoid
//! loss, and the mutual-information bound. Similarities come from softmax-core's
//! `linalg::within::matmul_nt` (shapes checked once at each loss's boundary), the softmax
//! cross-entropy from the crate's cross-entropy row, the backward products from
//! `linalg::within::matmul_nn` / `matmul_tn`; each loss runs in one `simd::dispatch` region.

#![forbid(unsafe_code)]

use softmax_core::backend::Backend;
use softmax_core::chunks::{chunks, chunks_mut};
use softmax_core::linalg::within;
use softmax_core::{simd, special, Float};

use crate::ce::{row_grad, Consts};
use crate::error::{check_len, mul, rows_of, Error};
use crate::math::{axpy, clamped_norm, dot, normalize_backward};
use crate::options::{check_losses, scale_of, Reduction};

/// The negative keys of [`info_nce`], as in `info-nce-pytorch`.
///
/// # Examples
///
/// ```
/// use loss_core::Negatives;
/// let shared = [0.0f32; 6]; // M = 3 negatives of D = 2, shared by every query
/// let n = Negatives::Unpaired { keys: &shared, m: 3 };
/// # let _ = n;
/// ```
#[derive(Clone, Copy, Debug)]
pub enum Negatives<'a, F> {
    /// No negative keys: every query's negatives are the other queries' positive keys (logits
    /// `Q̂·K̂⁺ᵀ/τ`, labels `0..N`).
    InBatch,
    /// `m` negative keys (`M·D` values) shared by every query (`negative_mode="unpaired"`).
    Unpaired {
        /// `M·D` values.
        keys: &'a [F],
        /// M.
        m: usize,
    },
    /// `m` negative keys per query (`N·M·D` values; `negative_mode="paired"`).
    Paired {
        /// `N·M·D` values.
        keys: &'a [F],
        /// M.
        m: usize,
    },
}

/// The options of [`info_nce`]: temperature τ (0.1, `info-nce-pytorch`'s default), L2
/// normalisation of every vector (on), the reduction (`Mean`), and the symmetric (CLIP) form
/// (off; only with [`Negatives::InBatch`]).
///
/// # Examples
///
/// ```
/// use loss_core::{InfoNceOptions, Reduction};
/// let o = InfoNceOptions::new().with_temperature(0.07f32).with_normalize(true)
///     .with_reduction(Reduction::Sum).with_symmetric(true);
/// # let _ = o;
/// ```
#[derive(Clone, Copy, Debug)]
pub struct InfoNceOptions<F> {
    temperature: F,
    normalize: bool,
    reduction: Reduction,
    symmetric: bool,
}

impl<F: Float> Default for InfoNceOptions<F> {
    fn default() -> Self {
        Self::new()
    }
}

impl<F: Float> InfoNceOptions<F> {
    /// τ = 0.1, normalised, `Mean`, not symmetric.
    ///
    /// # Examples
    ///
    /// ```
    /// let o = loss_core::InfoNceOptions::<f32>::new();
    /// # let _ = o;
    /// ```
    pub fn new() -> Self {
        InfoNceOptions {
            temperature: F::from_f64(0.1),
            normalize: true,
            reduction: Reduction::Mean,
            symmetric: false,
        }
    }

    /// The temperature τ (finite, `> 0`): logits are similarities divided by τ.
    ///
    /// # Examples
    ///
    /// ```
    /// let o = loss_core::InfoNceOptions::new().with_temperature(0.5f64);
    /// # let _ = o;
    /// ```
    pub fn with_temperature(self, temperature: F) -> Self {
        InfoNceOptions {
            temperature,
            ..self
        }
    }

    /// Whether every vector is first replaced by `x / max(‖x‖, 1e-12)` (PyTorch's
    /// `F.normalize`), with the gradient through it.
    ///
    /// # Examples
    ///
    /// ```
    /// let o = loss_core::InfoNceOptions::<f32>::new().with_normalize(false);
    /// # let _ = o;
    /// ```
    pub fn with_normalize(self, normalize: bool) -> Self {
        InfoNceOptions { normalize, ..self }
    }

    /// The reduction over queries (`None`, `Sum`, `Mean`).
    ///
    /// # Examples
    ///
    /// ```
    /// let o = loss_core::InfoNceOptions::<f32>::new().with_reduction(loss_core::Reduction::None);
    /// # let _ = o;
    /// ```
    pub fn with_reduction(self, reduction: Reduction) -> Self {
        InfoNceOptions { reduction, ..self }
    }

    /// The symmetric (CLIP) loss: the mean of the query→key and key→query directions.
    ///
    /// # Examples
    ///
    /// ```
    /// let o = loss_core::InfoNceOptions::<f32>::new().with_symmetric(true);
    /// # let _ = o;
    /// ```
    pub fn with_symmetric(self, symmetric: bool) -> Self {
        InfoNceOptions { symmetric, ..self }
    }
}

/// The caller's buffers for [`info_nce`] / [`info_nce_single`]: the working memory (required,
/// given to [`new`](Self::new): at least [`info_nce_scratch_len`] values), and each optional:
/// per-query losses (`Reduction::None`: N values, and required then; otherwise one, the reduced
/// loss), and the gradients with respect to the queries (`N·D`), the positive keys (`N·D`), the
/// negative keys (their length) and the temperature.
///
/// # Examples
///
/// ```
/// let mut scratch = [0.0f32; 8];
/// let (mut gq, mut gk, mut gt) = ([0.0f32; 4], [0.0f32; 4], 0.0f32);
/// let o = loss_core::InfoNceOutputs::new(&mut scratch).with_grad_query(&mut gq)
///     .with_grad_positive(&mut gk).with_grad_temperature(&mut gt);
/// # let _ = o;
/// ```
#[derive(Debug)]
pub struct InfoNceOutputs<'a, F> {
    losses: Option<&'a mut [F]>,
    grad_query: Option<&'a mut [F]>,
    grad_positive: Option<&'a mut [F]>,
    grad_negatives: Option<&'a mut [F]>,
    grad_temperature: Option<&'a mut F>,
    scratch: &'a mut [F],
}

impl<'a, F: Float> InfoNceOutputs<'a, F> {
    /// The working memory `scratch` (at least [`info_nce_scratch_len`] values; its contents on
    /// return are unspecified) and no outputs besides the return value.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut scratch = [0.0f32; 16];
    /// let o = loss_core::InfoNceOutputs::new(&mut scratch);
    /// # let _ = o;
    /// ```
    pub fn new(scratch: &'a mut [F]) -> Self {
        InfoNceOutputs {
            losses: None,
            grad_query: None,
            grad_positive: None,
            grad_negatives: None,
            grad_temperature: None,
            scratch,
        }
    }

    /// Per-query losses (required with `Reduction::None`), or the one reduced value.
    ///
    /// # Examples
    ///
    /// ```
    /// let (mut s, mut l) = ([0.0f32; 16], [0.0f32; 2]);
    /// let o = loss_core::InfoNceOutputs::new(&mut s).with_losses(&mut l);
    /// # let _ = o;
    /// ```
    pub fn with_losses(self, losses: &'a mut [F]) -> Self {
        InfoNceOutputs {
            losses: Some(losses),
            ..self
        }
    }

    /// ∂loss/∂query (`N·D`).
    ///
    /// # Examples
    ///
    /// ```
    /// let (mut s, mut g) = ([0.0f32; 16], [0.0f32; 4]);
    /// let o = loss_core::InfoNceOutputs::new(&mut s).with_grad_query(&mut g);
    /// # let _ = o;
    /// ```
    pub fn with_grad_query(self, g: &'a mut [F]) -> Self {
        InfoNceOutputs {
            grad_query: Some(g),
            ..self
        }
    }

    /// ∂loss/∂positive (`N·D`).
    ///
    /// # Examples
    ///
    /// ```
    /// let (mut s, mut g) = ([0.0f32; 16], [0.0f32; 4]);
    /// let o = loss_core::InfoNceOutputs::new(&mut s).with_grad_positive(&mut g);
    /// # let _ = o;
    /// ```
    pub fn with_grad_positive(self, g: &'a mut [F]) -> Self {
        InfoNceOutputs {
            grad_positive: Some(g),
            ..self
        }
    }

    /// ∂loss/∂negatives (as long as the negative keys).
    ///
    /// # Examples
    ///
    /// ```
    /// let (mut s, mut g) = ([0.0f64; 16], [0.0f64; 6]);
    /// let o = loss_core::InfoNceOutputs::new(&mut s).with_grad_negatives(&mut g);
    /// # let _ = o;
    /// ```
    pub fn with_grad_negatives(self, g: &'a mut [F]) -> Self {
        InfoNceOutputs {
            grad_negatives: Some(g),
            ..self
        }
    }

    /// ∂loss/∂τ, for a learned temperature.
    ///
    /// # Examples
    ///
    /// ```
    /// let (mut s, mut g) = ([0.0f32; 16], 0.0f32);
    /// let o = loss_core::InfoNceOutputs::new(&mut s).with_grad_temperature(&mut g);
    /// # let _ = o;
    /// ```
    pub fn with_grad_temperature(self, g: &'a mut F) -> Self {
        InfoNceOutputs {
            grad_temperature: Some(g),
            ..self
        }
    }
}

/// The scratch length [`info_nce`] needs for `n` queries and `m` negatives per query (`m = 0`:
/// in-batch negatives) with `options`: two rows of logits (`2·(1 + m)`, or `2·n` in-batch) and,
/// when normalising, the inverse norms (`2·n + m`). Saturates instead of overflowing.
///
/// # Examples
///
/// ```
/// use loss_core::{info_nce_scratch_len, InfoNceOptions};
/// assert_eq!(info_nce_scratch_len(4, 0, &InfoNceOptions::<f32>::new()), 8 + 8);
/// let raw = InfoNceOptions::<f32>::new().with_normalize(false);
/// assert_eq!(info_nce_scratch_len(4, 5, &raw), 12);
/// ```
pub fn info_nce_scratch_len<F: Float>(n: usize, m: usize, options: &InfoNceOptions<F>) -> usize {
    let row = if m == 0 { n } else { m.saturating_add(1) };
    let norms = if options.normalize {
        n.saturating_mul(2).saturating_add(m)
    } else {
        0
    };
    row.saturating_mul(2).saturating_add(norms)
}

/// Fills `inv` with `1/max(‖x_r‖, 1e-12)` for each row of `x` (or 1 without normalisation).
#[inline(always)]
fn inv_norms<F: Float>(x: &[F], d: usize, normalize: bool, inv: &mut [F]) {
    for (v, r) in inv.iter_mut().zip(chunks(x, d)) {
        *v = if normalize {
            F::ONE / clamped_norm(r).0
        } else {
            F::ONE
        };
    }
}

/// The gradient scales: the reduction's (1/N for `Mean`), halved for the symmetric loss.
fn contrast_scale<F: Float>(reduction: Reduction, n: usize, symmetric: bool) -> Result<F, Error> {
    let s = scale_of::<F>(reduction, n, n, false)?;
    Ok(if symmetric { s * F::HALF } else { s })
}

/// The error of a scratch of `found` values where `need` are required.
fn short_scratch(need: usize, found: usize) -> Error {
    Error::LengthMismatch {
        argument: "scratch",
        expected: need,
        found,
    }
}

/// Batched InfoNCE with the semantics of the `info-nce-pytorch` package
/// (`info_nce(query, positive_key, negative_keys, temperature, reduction, negative_mode)`):
/// optionally normalise every vector (`x / max(‖x‖, 1e-12)`), then for each query `i` the
/// cross-entropy of the logits `[q̂_i·k̂⁺_i | q̂_i·n̂_1 … q̂_i·n̂_M] / τ` with label 0 (negatives
/// given: [`Negatives::Unpaired`] shared, [`Negatives::Paired`] per query), or of the row
/// `q̂_i·K̂⁺ᵀ/τ` with label `i` ([`Negatives::InBatch`]). With `symmetric` (in-batch only) the
/// loss is CLIP's: the mean of that and the same loss with queries and keys swapped (with
/// `Reduction::None`, the element-wise mean of the two per-sample vectors).
///
/// Returns the scalar whose gradient the call writes: the mean, the sum, or with `None` the sum
/// of the per-query values (written to the outputs' `losses`, required then).
///
/// It *is* the crate's cross-entropy on similarity/τ (the same row function runs; tested against
/// [`cross_entropy`](crate::cross_entropy) on the materialised logits). Gradients: with
/// `G = s·(p − e_label)` per row (`s` the reduction's scale), `∂/∂q̂_i = Σ_j G_ij·k̂_j/τ`,
/// `∂/∂k̂_j += G_ij·q̂_i/τ`, then back through the normalisation; `∂/∂τ = −Σ G_ij·z_ij/τ` (with
/// `z` the logits). The temperature gradient for a learned τ (CLIP learns `ln(1/τ)`: multiply
/// by `−τ` for that parametrisation).
///
/// Memory: the outputs' `scratch` of [`info_nce_scratch_len`] values (two rows of logits and
/// the inverse norms), nothing else. Work: one `matmul_nt` row per query and one `matmul_nn` /
/// `matmul_tn` per query for the gradients.
///
/// # Accuracy
///
/// f32: each logit within `(⌈D/16⌉ + 6)·2⁻²⁴·|z|`-ish of the exact one (dot product, norms, one
/// division by τ); the loss as the cross-entropy of those logits; gradients within the same
/// relative order (f64: checked against central finite differences to `1e-6` relative).
///
/// # Errors
///
/// [`Error::Empty`] for `d = 0`; [`Error::RaggedBatch`], [`Error::LengthMismatch`] for inputs,
/// outputs or a `scratch` shorter than [`info_nce_scratch_len`]; [`Error::MissingOutput`] for
/// `None` without `losses`; [`Error::InvalidParameter`] for a temperature that is not positive
/// and finite, `symmetric` with negative keys, or `BatchMean`; [`Error::NoTargets`] for `Mean`
/// over zero queries.
///
/// # Examples
///
/// ```
/// use loss_core::{info_nce, info_nce_scratch_len, InfoNceOptions, InfoNceOutputs, Negatives};
/// use loss_core::softmax_core::backend::Poly;
/// // Two queries, their positive keys; in-batch negatives; τ = 1, no normalisation.
/// let q = [1.0f64, 0.0, 0.0, 1.0];
/// let k = [1.0f64, 0.0, 0.0, 1.0];
/// let opts = InfoNceOptions::new().with_temperature(1.0).with_normalize(false);
/// let mut scratch = vec![0.0; info_nce_scratch_len(2, 0, &opts)];
/// let out = InfoNceOutputs::new(&mut scratch);
/// let l = info_nce(Poly, &q, &k, 2, Negatives::InBatch, &opts, out)?;
/// // Each row: logits [1, 0] with label on the 1: −ln(e/(e + 1)).
/// assert!((l - (1.0 + (-1.0f64).exp()).ln()).abs() < 1e-15);
/// # Ok::<(), loss_core::Error>(())
/// ```
pub fn info_nce<F: Float, B: Backend<F>>(
    _backend: B,
    query: &[F],
    positive: &[F],
    d: usize,
    negatives: Negatives<'_, F>,
    options: &InfoNceOptions<F>,
    out: InfoNceOutputs<'_, F>,
) -> Result<F, Error> {
    let n = rows_of("query", query.len(), d)?;
    check_len("positive", query.len(), positive.len())?;
    let (neg, m, paired) = match negatives {
        Negatives::InBatch => (&[][..], 0, false),
        Negatives::Unpaired { keys, m } => {
            check_len("negatives", mul(m, d)?, keys.len())?;
            (keys, m, false)
        }
        Negatives::Paired { keys, m } => {
            check_len("negatives", mul(mul(n, m)?, d)?, keys.len())?;
            (keys, m, true)
        }
    };
    let has_neg = !matches!(negatives, Negatives::InBatch);
    let tau = options.temperature;
    if !(tau > F::ZERO && tau.is_finite()) {
        return Err(Error::InvalidParameter {
            name: "temperature",
        });
    }
    if options.symmetric && has_neg {
        return Err(Error::InvalidParameter { name: "symmetric" });
    }
    if has_neg && m == 0 {
        return Err(Error::Empty { argument: "m" });
    }
    let reduction = options.reduction;
    let scale = contrast_scale::<F>(reduction, n, options.symmetric)?;
    check_losses(out.losses.as_deref(), reduction, n)?;
    if let Some(g) = &out.grad_query {
        check_len("grad_query", query.len(), g.len())?;
    }
    if let Some(g) = &out.grad_positive {
        check_len("grad_positive", positive.len(), g.len())?;
    }
    if let Some(g) = &out.grad_negatives {
        check_len("grad_negatives", neg.len(), g.len())?;
    }
    let InfoNceOutputs {
        mut losses,
        mut grad_query,
        mut grad_positive,
        mut grad_negatives,
        grad_temperature,
        scratch,
    } = out;
    let need = info_nce_scratch_len(n, m, options);
    let found = scratch.len();
    if found < need {
        return Err(short_scratch(need, found));
    }
    let normalize = options.normalize;
    let row_len = if has_neg { m + 1 } else { n };
    let short = short_scratch(need, found);
    let (inv_q, rest) = scratch
        .split_at_mut_checked(if normalize { n } else { 0 })
        .ok_or(short)?;
    let (inv_k, rest) = rest
        .split_at_mut_checked(if normalize { n } else { 0 })
        .ok_or(short)?;
    let (inv_neg, rest) = rest
        .split_at_mut_checked(if normalize { m } else { 0 })
        .ok_or(short)?;
    let (zrow, rest) = rest.split_at_mut_checked(row_len).ok_or(short)?;
    let prow = rest.get_mut(..row_len).ok_or(short)?;
    let (total, dtau) = simd::dispatch(
        #[inline(always)]
        || -> Result<([F; 2], F), Error> {
            inv_norms(query, d, normalize, inv_q);
            inv_norms(positive, d, normalize, inv_k);
            if !paired {
                inv_norms(neg, d, normalize, inv_neg);
            }
            for g in [
                grad_query.as_deref_mut(),
                grad_positive.as_deref_mut(),
                grad_negatives.as_deref_mut(),
            ]
            .into_iter()
            .flatten()
            {
                g.fill(F::ZERO);
            }
            let inv_at = |v: &[F], i: usize| {
                if normalize {
                    v.get(i).copied().unwrap_or(F::NAN)
                } else {
                    F::ONE
                }
            };
            let mut total = [F::ZERO, F::ZERO];
            let mut dtau = F::ZERO;
            let none = reduction == Reduction::None;
            let directions = if options.symmetric { 2 } else { 1 };
            for dir in 0..directions {
                // Rows `a` against candidates `c`: queries against keys, then keys against
                // queries.
                let (a, c, inv_a, inv_c) = if dir == 0 {
                    (query, positive, &*inv_q, &*inv_k)
                } else {
                    (positive, query, &*inv_k, &*inv_q)
                };
                for (i, ai) in chunks(a, d).enumerate() {
                    let ia = inv_at(inv_a, i);
                    // Logits: raw dot products, times the inverse norms, over τ.
                    let ci = c.get(i * d..(i + 1) * d).unwrap_or(&[]);
                    let neg_i: &[F] = if paired {
                        neg.get(i * m * d..(i + 1) * m * d).unwrap_or(&[])
                    } else {
                        neg
                    };
                    if has_neg {
                        if paired {
                            inv_norms(neg_i, d, normalize, inv_neg);
                        }
                        let Some((z0, zn)) = zrow.split_first_mut() else {
                            return Err(short);
                        };
                        *z0 = dot(ai, ci) * (ia * inv_at(inv_c, i)) / tau;
                        within::matmul_nt(ai, neg_i, d, zn);
                        for (j, z) in zn.iter_mut().enumerate() {
                            *z = *z * (ia * inv_at(inv_neg, j)) / tau;
                        }
                    } else {
                        within::matmul_nt(ai, c, d, zrow);
                        for (j, z) in zrow.iter_mut().enumerate() {
                            *z = *z * (ia * inv_at(inv_c, j)) / tau;
                        }
                    }
                    let label = if has_neg { 0 } else { i };
                    let k = Consts::plain(row_len, scale);
                    let r = row_grad::<F, B>(zrow, prow, label, &k, false);
                    if let Some(t) = total.get_mut(dir) {
                        *t += r.ce;
                    }
                    if none {
                        if let Some(l) = losses.as_deref_mut().and_then(|l| l.get_mut(i)) {
                            let v = if options.symmetric {
                                r.ce * F::HALF
                            } else {
                                r.ce
                            };
                            *l = if dir == 0 { v } else { *l + v };
                        }
                    }
                    // ∂/∂τ of Σ G·z: −(1/τ)·⟨G, z⟩.
                    dtau -= dot(prow, zrow) / tau;
                    // Gradient coefficients w.r.t. the raw dot products: G/τ times the inverse
                    // norms.
                    let (ga, gc) = if dir == 0 {
                        (grad_query.as_deref_mut(), grad_positive.as_deref_mut())
                    } else {
                        (grad_positive.as_deref_mut(), grad_query.as_deref_mut())
                    };
                    if let Some(ga) = ga.and_then(|g| g.get_mut(i * d..(i + 1) * d)) {
                        // ∂/∂â_i = Σ_j (G_j/τ)·ĉ_j = Σ_j (G_j·inv_c_j/τ)·c_j.
                        if has_neg {
                            let (Some((&g0, pn)), Some((z0, zn))) =
                                (prow.split_first(), zrow.split_first_mut())
                            else {
                                return Err(short);
                            };
                            *z0 = g0 * inv_at(inv_c, i) / tau;
                            axpy(*z0, ci, ga);
                            for ((z, &g), j) in zn.iter_mut().zip(pn).zip(0..) {
                                *z = g * inv_at(inv_neg, j) / tau;
                            }
                            within::matmul_nn(zn, neg_i, m, d, ga, true);
                        } else {
                            for ((z, &g), j) in zrow.iter_mut().zip(prow.iter()).zip(0..) {
                                *z = g * inv_at(inv_c, j) / tau;
                            }
                            within::matmul_nn(zrow, c, n, d, ga, true);
                        }
                    }
                    // ∂/∂ĉ_j += (G_j/τ)·â_i = (G_j·inv_a_i/τ)·a_i.
                    let f = ia / tau;
                    for g in prow.iter_mut() {
                        *g *= f;
                    }
                    if has_neg {
                        let Some((&g0, pn)) = prow.split_first() else {
                            return Err(short);
                        };
                        if let Some(gk) = gc.and_then(|g| g.get_mut(i * d..(i + 1) * d)) {
                            axpy(g0, ai, gk);
                        }
                        let gn = grad_negatives.as_deref_mut().and_then(|g| {
                            if paired {
                                g.get_mut(i * m * d..(i + 1) * m * d)
                            } else {
                                Some(g)
                            }
                        });
                        if let Some(gn) = gn {
                            within::matmul_tn(pn, ai, m, d, gn, true);
                        }
                    } else if let Some(gc) = gc {
                        within::matmul_tn(prow, ai, n, d, gc, true);
                    }
                }
            }
            // Back through the normalisation.
            if normalize {
                for (x, g) in [
                    (query, grad_query),
                    (positive, grad_positive),
                    (neg, grad_negatives),
                ] {
                    if let Some(g) = g {
                        for (xr, gr) in chunks(x, d).zip(chunks_mut(g, d)) {
                            normalize_backward(xr, gr);
                        }
                    }
                }
            }
            Ok((total, dtau))
        },
    )?;
    if let Some(gt) = grad_temperature {
        *gt = dtau;
    }
    let [t0, t1] = total;
    let v = match reduction {
        Reduction::Mean => {
            let s = F::ONE / F::from_usize(n);
            if options.symmetric {
                (t0 * s + t1 * s) * F::HALF
            } else {
                t0 * s
            }
        }
        _ => {
            if options.symmetric {
                (t0 + t1) * F::HALF
            } else {
                t0
            }
        }
    };
    if reduction != Reduction::None {
        if let Some(l) = losses.and_then(|l| l.first_mut()) {
            *l = v;
        }
    }
    Ok(v)
}

/// The options of [`info_nce_single`]: the temperature τ (0.1, as [`InfoNceOptions`]). The
/// single-query form never normalises and has no reduction (one sample).
///
/// # Examples
///
/// ```
/// let o = loss_core::InfoNceSingleOptions::new().with_temperature(0.07f32);
/// assert_eq!(o.temperature(), 0.07);
/// ```
#[derive(Clone, Copy, Debug)]
pub struct InfoNceSingleOptions<F> {
    temperature: F,
}

impl<F: Float> Default for InfoNceSingleOptions<F> {
    fn default() -> Self {
        Self::new()
    }
}

impl<F: Float> InfoNceSingleOptions<F> {
    /// τ = 0.1.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(loss_core::InfoNceSingleOptions::<f64>::new().temperature(), 0.1);
    /// ```
    pub fn new() -> Self {
        InfoNceSingleOptions {
            temperature: F::from_f64(0.1),
        }
    }

    /// The temperature τ (finite, `> 0`): logits are dot products divided by τ.
    ///
    /// # Examples
    ///
    /// ```
    /// let o = loss_core::InfoNceSingleOptions::new().with_temperature(1.0f32);
    /// # let _ = o;
    /// ```
    pub fn with_temperature(self, temperature: F) -> Self {
        InfoNceSingleOptions { temperature }
    }

    /// The temperature in effect.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(loss_core::InfoNceSingleOptions::<f32>::new().temperature(), 0.1);
    /// ```
    pub fn temperature(&self) -> F {
        self.temperature
    }
}

/// InfoNCE for one query `q` with one positive key `k⁺` and `M` negative keys:
/// `L = −ln( e^(q·k⁺/τ) / (e^(q·k⁺/τ) + Σ_m e^(q·k⁻_m/τ)) )` on the raw vectors (no
/// normalisation), with the gradients (verified against central finite differences; some
/// derivations give other forms for `k⁺` and `k⁻`, which do not match them):
///
/// * `∂L/∂q = (E_p[k] − k⁺)/τ`, `p = softmax([q·k⁺, q·k⁻_1, …]/τ)`;
/// * `∂L/∂k⁺ = (p⁺ − 1)·q/τ`;
/// * `∂L/∂k⁻_m = p_m·q/τ`;
/// * `∂L/∂τ = −(E_p[z] − z⁺)/τ` with `z` the logits.
///
/// Returns the scalar whose gradient the call writes: the loss of the one sample (its mean, its
/// sum and its per-sample value alike; the outputs' `losses`, if given, holds one value).
///
/// It is [`info_nce`] with one query, [`Negatives::Unpaired`], no normalisation and the given τ.
/// The outputs' `scratch` holds at least `2·(M + 1)` values. Accuracy as [`info_nce`].
///
/// # Errors
///
/// As [`info_nce`]: [`Error::Empty`] for an empty `q` or no negatives;
/// [`Error::LengthMismatch`], [`Error::RaggedBatch`]; [`Error::InvalidParameter`] for τ.
///
/// # Examples
///
/// ```
/// use loss_core::{info_nce_single, InfoNceOutputs, InfoNceSingleOptions};
/// use loss_core::softmax_core::backend::Poly;
/// let q = [1.0f64, 0.0];
/// let kp = [1.0, 0.0];
/// let kn = [0.0, 1.0, -1.0, 0.0]; // two negatives
/// let mut gq = [0.0; 2];
/// let mut scratch = [0.0; 6];
/// let o = InfoNceSingleOptions::new().with_temperature(1.0);
/// let l = info_nce_single(Poly, &q, &kp, &kn, &o,
///                         InfoNceOutputs::new(&mut scratch).with_grad_query(&mut gq))?;
/// let s = 1f64.exp() + 1.0 + (-1f64).exp();
/// assert!((l - (s.ln() - 1.0)).abs() < 1e-15);
/// // E_p[k] − k⁺: (e·[1,0] + 1·[0,1] + e⁻¹·[−1,0])/s − [1, 0]
/// assert!((gq[1] - 1.0 / s).abs() < 1e-15);
/// # Ok::<(), loss_core::Error>(())
/// ```
pub fn info_nce_single<F: Float, B: Backend<F>>(
    backend: B,
    q: &[F],
    k_pos: &[F],
    k_neg: &[F],
    options: &InfoNceSingleOptions<F>,
    out: InfoNceOutputs<'_, F>,
) -> Result<F, Error> {
    let d = q.len();
    if d == 0 {
        return Err(Error::Empty { argument: "q" });
    }
    let m = rows_of("k_neg", k_neg.len(), d)?;
    let opts = InfoNceOptions::new()
        .with_temperature(options.temperature)
        .with_normalize(false)
        .with_reduction(Reduction::Sum);
    info_nce(
        backend,
        q,
        k_pos,
        d,
        Negatives::Unpaired { keys: k_neg, m },
        &opts,
        out,
    )
}

/// The scratch length [`nt_xent`] needs for `n` pairs (`2n` views): `6·n` (the inverse norms,
/// two rows of `2n` logits). Saturates.
///
/// # Examples
///
/// ```
/// assert_eq!(loss_core::nt_xent_scratch_len(4), 24);
/// ```
pub fn nt_xent_scratch_len(n: usize) -> usize {
    n.saturating_mul(6)
}

/// The options of [`nt_xent`]: the temperature τ (0.1, the default of SimCLR's reference
/// implementation) and L2 normalisation of the views (on, as SimCLR's cosine similarity).
///
/// # Examples
///
/// ```
/// let o = loss_core::NtXentOptions::new().with_temperature(0.5f32).with_normalize(false);
/// assert_eq!(o.temperature(), 0.5);
/// ```
#[derive(Clone, Copy, Debug)]
pub struct NtXentOptions<F> {
    temperature: F,
    normalize: bool,
}

impl<F: Float> Default for NtXentOptions<F> {
    fn default() -> Self {
        Self::new()
    }
}

impl<F: Float> NtXentOptions<F> {
    /// τ = 0.1, normalised.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(loss_core::NtXentOptions::<f32>::new().temperature(), 0.1);
    /// ```
    pub fn new() -> Self {
        NtXentOptions {
            temperature: F::from_f64(0.1),
            normalize: true,
        }
    }

    /// The temperature τ (finite, `> 0`): logits are similarities divided by τ.
    ///
    /// # Examples
    ///
    /// ```
    /// let o = loss_core::NtXentOptions::new().with_temperature(0.5f64);
    /// # let _ = o;
    /// ```
    pub fn with_temperature(self, temperature: F) -> Self {
        NtXentOptions {
            temperature,
            ..self
        }
    }

    /// Whether every view is first replaced by `x / max(‖x‖, 1e-12)`, with the gradient through
    /// it.
    ///
    /// # Examples
    ///
    /// ```
    /// let o = loss_core::NtXentOptions::<f32>::new().with_normalize(false);
    /// # let _ = o;
    /// ```
    pub fn with_normalize(self, normalize: bool) -> Self {
        NtXentOptions { normalize, ..self }
    }

    /// The temperature in effect.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(loss_core::NtXentOptions::<f64>::new().temperature(), 0.1);
    /// ```
    pub fn temperature(&self) -> F {
        self.temperature
    }
}

/// The caller's buffers for [`nt_xent`]: the working memory (required, given to
/// [`new`](Self::new): at least [`nt_xent_scratch_len`]`(N)` values), and each optional: the
/// gradient with respect to the views (`2N·d`) and the temperature.
///
/// # Examples
///
/// ```
/// let (mut scratch, mut g, mut gt) = ([0.0f32; 6], [0.0f32; 4], 0.0f32);
/// let o = loss_core::NtXentOutputs::new(&mut scratch).with_grad(&mut g)
///     .with_grad_temperature(&mut gt);
/// # let _ = o;
/// ```
#[derive(Debug)]
pub struct NtXentOutputs<'a, F> {
    grad: Option<&'a mut [F]>,
    grad_temperature: Option<&'a mut F>,
    scratch: &'a mut [F],
}

impl<'a, F: Float> NtXentOutputs<'a, F> {
    /// The working memory `scratch` (at least [`nt_xent_scratch_len`] values; its contents on
    /// return are unspecified) and no outputs besides the return value.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut scratch = [0.0f64; 6];
    /// let o = loss_core::NtXentOutputs::new(&mut scratch);
    /// # let _ = o;
    /// ```
    pub fn new(scratch: &'a mut [F]) -> Self {
        NtXentOutputs {
            grad: None,
            grad_temperature: None,
            scratch,
        }
    }

    /// ∂loss/∂z (`2N·d`).
    ///
    /// # Examples
    ///
    /// ```
    /// let (mut s, mut g) = ([0.0f32; 6], [0.0f32; 4]);
    /// let o = loss_core::NtXentOutputs::new(&mut s).with_grad(&mut g);
    /// # let _ = o;
    /// ```
    pub fn with_grad(self, grad: &'a mut [F]) -> Self {
        NtXentOutputs {
            grad: Some(grad),
            ..self
        }
    }

    /// ∂loss/∂τ, for a learned temperature.
    ///
    /// # Examples
    ///
    /// ```
    /// let (mut s, mut g) = ([0.0f32; 6], 0.0f32);
    /// let o = loss_core::NtXentOutputs::new(&mut s).with_grad_temperature(&mut g);
    /// # let _ = o;
    /// ```
    pub fn with_grad_temperature(self, g: &'a mut F) -> Self {
        NtXentOutputs {
            grad_temperature: Some(g),
            ..self
        }
    }
}

/// SimCLR's NT-Xent loss over `2N` views: `z` holds `2N` rows of `d` (rows `0..N` the first
/// views, `N..2N` their second views). Optionally normalised (`x / max(‖x‖, 1e-12)`), then each
/// anchor `i` takes the cross-entropy of its similarities to the other `2N − 1` views (itself
/// excluded) over τ, with its partner (`i ± N`) as the label. Gradients with respect to `z` and
/// τ into the outputs, each if given, as [`info_nce`]'s.
///
/// Returns the scalar whose gradient the call writes: the mean over the `2N` anchors (the loss
/// has no other reduction).
///
/// Memory: the outputs' `scratch` of [`nt_xent_scratch_len`]`(N)` values. Accuracy as
/// [`info_nce`].
///
/// # Errors
///
/// [`Error::Empty`] for `d = 0`; [`Error::RaggedBatch`] unless `z` is `2N` rows of `d`;
/// [`Error::LengthMismatch`] for `grad` or a short `scratch`; [`Error::InvalidParameter`] for τ;
/// [`Error::NoTargets`] for `N = 0`.
///
/// # Examples
///
/// ```
/// use loss_core::{nt_xent, nt_xent_scratch_len, NtXentOptions, NtXentOutputs};
/// use loss_core::softmax_core::backend::Poly;
/// // N = 1: each view's only candidate is its partner, so the loss is 0.
/// let z = [1.0f32, 2.0, 3.0, 4.0];
/// let mut scratch = [0.0f32; 6];
/// assert_eq!(nt_xent_scratch_len(1), 6);
/// let o = NtXentOptions::new().with_temperature(0.5);
/// let l = nt_xent(Poly, &z, 2, &o, NtXentOutputs::new(&mut scratch))?;
/// assert_eq!(l, 0.0);
/// # Ok::<(), loss_core::Error>(())
/// ```
pub fn nt_xent<F: Float, B: Backend<F>>(
    _backend: B,
    z: &[F],
    d: usize,
    options: &NtXentOptions<F>,
    out: NtXentOutputs<'_, F>,
) -> Result<F, Error> {
    let rows = rows_of("z", z.len(), d)?;
    if rows % 2 != 0 {
        return Err(Error::RaggedBatch {
            argument: "z",
            len: z.len(),
            row: mul(2, d)?,
        });
    }
    let n = rows / 2;
    let tau = options.temperature;
    if !(tau > F::ZERO && tau.is_finite()) {
        return Err(Error::InvalidParameter {
            name: "temperature",
        });
    }
    if n == 0 {
        return Err(Error::NoTargets);
    }
    let NtXentOutputs {
        mut grad,
        grad_temperature,
        scratch,
    } = out;
    if let Some(g) = &grad {
        check_len("grad", z.len(), g.len())?;
    }
    let need = nt_xent_scratch_len(n);
    let found = scratch.len();
    if found < need {
        return Err(short_scratch(need, found));
    }
    let short = short_scratch(need, found);
    let (inv, rest) = scratch.split_at_mut_checked(rows).ok_or(short)?;
    let (zrow, rest) = rest.split_at_mut_checked(rows).ok_or(short)?;
    let prow = rest.get_mut(..rows).ok_or(short)?;
    let normalize = options.normalize;
    let scale = F::ONE / F::from_usize(rows);
    let (total, dtau) = simd::dispatch(
        #[inline(always)]
        || {
            inv_norms(z, d, normalize, inv);
            if let Some(g) = grad.as_deref_mut() {
                g.fill(F::ZERO);
            }
            let mut total = F::ZERO;
            let mut dtau = F::ZERO;
            for (i, zi) in chunks(z, d).enumerate() {
                let ii = inv.get(i).copied().unwrap_or(F::NAN);
                within::matmul_nt(zi, z, d, zrow);
                for (zj, &ij) in zrow.iter_mut().zip(inv.iter()) {
                    *zj = *zj * (ii * ij) / tau;
                }
                if let Some(s) = zrow.get_mut(i) {
                    *s = F::NEG_INFINITY; // self excluded
                }
                let partner = if i < n { i + n } else { i - n };
                let k = Consts::plain(rows, scale);
                let r = row_grad::<F, B>(zrow, prow, partner, &k, false);
                total += r.ce;
                if let Some(s) = zrow.get_mut(i) {
                    *s = F::ZERO; // its gradient is 0; keep −inf out of ⟨G, z⟩
                }
                dtau -= dot(prow, zrow) / tau;
                if let Some(g) = grad.as_deref_mut() {
                    // ∂/∂ẑ_i = Σ_j (G_j/τ)·ẑ_j; ∂/∂ẑ_j += (G_j/τ)·ẑ_i.
                    for ((zj, &gj), &ij) in zrow.iter_mut().zip(prow.iter()).zip(inv.iter()) {
                        *zj = gj * ij / tau;
                    }
                    if let Some(gi) = g.get_mut(i * d..(i + 1) * d) {
                        within::matmul_nn(zrow, z, rows, d, gi, true);
                    }
                    let f = ii / tau;
                    for p in prow.iter_mut() {
                        *p *= f;
                    }
                    within::matmul_tn(prow, zi, rows, d, g, true);
                }
            }
            if normalize {
                if let Some(g) = grad {
                    for (xr, gr) in chunks(z, d).zip(chunks_mut(g, d)) {
                        normalize_backward(xr, gr);
                    }
                }
            }
            (total, dtau)
        },
    );
    if let Some(gt) = grad_temperature {
        *gt = dtau;
    }
    Ok(total * scale)
}

/// The options of [`siglip_loss`]: the logit scale `t` (the scale is `e^t`; SigLIP initialises
/// `t = ln 10`), the bias `b` (−10), and normalisation (on).
///
/// # Examples
///
/// ```
/// let o = loss_core::SiglipOptions::new().with_logit_scale(2.0f32).with_logit_bias(-5.0)
///     .with_normalize(false);
/// # let _ = o;
/// ```
#[derive(Clone, Copy, Debug)]
pub struct SiglipOptions<F> {
    logit_scale: F,
    logit_bias: F,
    normalize: bool,
}

impl<F: Float> Default for SiglipOptions<F> {
    fn default() -> Self {
        Self::new()
    }
}

impl<F: Float> SiglipOptions<F> {
    /// `t = ln 10`, `b = −10`, normalised.
    ///
    /// # Examples
    ///
    /// ```
    /// let o = loss_core::SiglipOptions::<f64>::new();
    /// # let _ = o;
    /// ```
    pub fn new() -> Self {
        SiglipOptions {
            logit_scale: F::from_f64(core::f64::consts::LN_10),
            logit_bias: F::from_f64(-10.0),
            normalize: true,
        }
    }

    /// The logit scale `t` (the similarities are multiplied by `e^t`).
    ///
    /// # Examples
    ///
    /// ```
    /// let o = loss_core::SiglipOptions::new().with_logit_scale(0.0f32);
    /// # let _ = o;
    /// ```
    pub fn with_logit_scale(self, t: F) -> Self {
        SiglipOptions {
            logit_scale: t,
            ..self
        }
    }

    /// The logit bias `b`.
    ///
    /// # Examples
    ///
    /// ```
    /// let o = loss_core::SiglipOptions::new().with_logit_bias(0.0f32);
    /// # let _ = o;
    /// ```
    pub fn with_logit_bias(self, b: F) -> Self {
        SiglipOptions {
            logit_bias: b,
            ..self
        }
    }

    /// Whether `x` and `y` rows are first normalised (`x / max(‖x‖, 1e-12)`).
    ///
    /// # Examples
    ///
    /// ```
    /// let o = loss_core::SiglipOptions::<f32>::new().with_normalize(false);
    /// # let _ = o;
    /// ```
    pub fn with_normalize(self, normalize: bool) -> Self {
        SiglipOptions { normalize, ..self }
    }
}

/// The caller's buffers for [`siglip_loss`]'s gradients, each optional: `x` and `y` (`N·D`),
/// the logit scale `t` and the bias `b`.
///
/// # Examples
///
/// ```
/// let (mut gt, mut gb) = (0.0f32, 0.0f32);
/// let o = loss_core::SiglipOutputs::new().with_grad_logit_scale(&mut gt).with_grad_logit_bias(&mut gb);
/// # let _ = o;
/// ```
#[derive(Debug, Default)]
pub struct SiglipOutputs<'a, F> {
    grad_x: Option<&'a mut [F]>,
    grad_y: Option<&'a mut [F]>,
    grad_logit_scale: Option<&'a mut F>,
    grad_logit_bias: Option<&'a mut F>,
}

impl<'a, F: Float> SiglipOutputs<'a, F> {
    /// No gradients.
    ///
    /// # Examples
    ///
    /// ```
    /// let o = loss_core::SiglipOutputs::<f32>::new();
    /// # let _ = o;
    /// ```
    pub fn new() -> Self {
        SiglipOutputs {
            grad_x: None,
            grad_y: None,
            grad_logit_scale: None,
            grad_logit_bias: None,
        }
    }

    /// ∂loss/∂x (`N·D`).
    ///
    /// # Examples
    ///
    /// ```
    /// let mut g = [0.0f32; 4];
    /// let o = loss_core::SiglipOutputs::new().with_grad_x(&mut g);
    /// # let _ = o;
    /// ```
    pub fn with_grad_x(self, g: &'a mut [F]) -> Self {
        SiglipOutputs {
            grad_x: Some(g),
            ..self
        }
    }

    /// ∂loss/∂y (`N·D`).
    ///
    /// # Examples
    ///
    /// ```
    /// let mut g = [0.0f32; 4];
    /// let o = loss_core::SiglipOutputs::new().with_grad_y(&mut g);
    /// # let _ = o;
    /// ```
    pub fn with_grad_y(self, g: &'a mut [F]) -> Self {
        SiglipOutputs {
            grad_y: Some(g),
            ..self
        }
    }

    /// ∂loss/∂t (the logit scale's parameter).
    ///
    /// # Examples
    ///
    /// ```
    /// let mut g = 0.0f64;
    /// let o = loss_core::SiglipOutputs::new().with_grad_logit_scale(&mut g);
    /// # let _ = o;
    /// ```
    pub fn with_grad_logit_scale(self, g: &'a mut F) -> Self {
        SiglipOutputs {
            grad_logit_scale: Some(g),
            ..self
        }
    }

    /// ∂loss/∂b.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut g = 0.0f64;
    /// let o = loss_core::SiglipOutputs::new().with_grad_logit_bias(&mut g);
    /// # let _ = o;
    /// ```
    pub fn with_grad_logit_bias(self, g: &'a mut F) -> Self {
        SiglipOutputs {
            grad_logit_bias: Some(g),
            ..self
        }
    }
}

/// The SigLIP sigmoid loss: with `s = e^t`, `ĉ_ij = x̂_i·ŷ_j` (normalised unless turned off),
/// `L = −(1/N)·Σ_i Σ_j ln σ(z_ij·(s·ĉ_ij + b))`, `z_ii = 1`, `z_ij = −1` for `i ≠ j`.
///
/// No normaliser over a row, so it streams pair by pair in O(1) extra memory (no scratch at all,
/// made for small devices): each pair's similarity is one dot product (`linalg::within::dot`;
/// normalising, the norm of `y_j` recomputed, another), `ln σ` is softmax-core's
/// `special::log_sigmoid`. Gradients:
/// with `a = s·ĉ + b` and `g = −z·σ(−z·a)/N`: `∂L/∂b = Σ g`, `∂L/∂t = Σ g·s·ĉ`,
/// `∂L/∂x̂_i = Σ_j g_ij·s·ŷ_j`, `∂L/∂ŷ_j = Σ_i g_ij·s·x̂_i`, then back through the normalisation.
///
/// Returns the scalar whose gradient the call writes: `L`, the mean over the `N` rows of each
/// row's sum over its `N` pairs (the loss has no other reduction). The outputs
/// ([`SiglipOutputs`]) receive the gradients, each if given.
///
/// Accuracy: each pair's term within a few ULP of the exact term of the computed similarity
/// (log-sigmoid and sigmoid within 3 ULP); the sum of `N²` terms in order.
///
/// # Errors
///
/// [`Error::Empty`] for `d = 0`; [`Error::RaggedBatch`], [`Error::LengthMismatch`];
/// [`Error::InvalidParameter`] for a logit scale or bias that is not finite; [`Error::NoTargets`]
/// for `N = 0`.
///
/// # Examples
///
/// ```
/// use loss_core::{siglip_loss, SiglipOptions, SiglipOutputs};
/// use loss_core::softmax_core::backend::Poly;
/// // N = 1, t = 0 (s = 1), b = 0: −ln σ(x̂·ŷ) = −ln σ(1) for parallel vectors.
/// let o = SiglipOptions::new().with_logit_scale(0.0f64).with_logit_bias(0.0);
/// let l = siglip_loss(Poly, &[3.0, 4.0], &[6.0, 8.0], 2, &o, SiglipOutputs::new())?;
/// assert!((l - (1.0 + (-1.0f64).exp()).ln()).abs() < 1e-15);
/// # Ok::<(), loss_core::Error>(())
/// ```
pub fn siglip_loss<F: Float, B: Backend<F>>(
    _backend: B,
    x: &[F],
    y: &[F],
    d: usize,
    options: &SiglipOptions<F>,
    mut out: SiglipOutputs<'_, F>,
) -> Result<F, Error> {
    let n = rows_of("x", x.len(), d)?;
    check_len("y", x.len(), y.len())?;
    let (t, b) = (options.logit_scale, options.logit_bias);
    if !t.is_finite() {
        return Err(Error::InvalidParameter {
            name: "logit_scale",
        });
    }
    if !b.is_finite() {
        return Err(Error::InvalidParameter { name: "logit_bias" });
    }
    if n == 0 {
        return Err(Error::NoTargets);
    }
    if let Some(g) = &out.grad_x {
        check_len("grad_x", x.len(), g.len())?;
    }
    if let Some(g) = &out.grad_y {
        check_len("grad_y", y.len(), g.len())?;
    }
    let normalize = options.normalize;
    let s = B::exp(t);
    let inv_n = F::ONE / F::from_usize(n);
    let inv_of = |r: &[F]| {
        if normalize {
            F::ONE / clamped_norm(r).0
        } else {
            F::ONE
        }
    };
    let (total, dt, db) = simd::dispatch(
        #[inline(always)]
        || {
            if let Some(g) = out.grad_y.as_deref_mut() {
                g.fill(F::ZERO);
            }
            let mut total = F::ZERO;
            let (mut dt, mut db) = (F::ZERO, F::ZERO);
            let mut grad_x_rows = out.grad_x.as_deref_mut().map(|g| chunks_mut(g, d));
            for (i, xi) in chunks(x, d).enumerate() {
                let ix = inv_of(xi);
                let mut gx = grad_x_rows.as_mut().and_then(|it| it.next());
                if let Some(g) = gx.as_deref_mut() {
                    g.fill(F::ZERO);
                }
                for (j, yj) in chunks(y, d).enumerate() {
                    let iy = inv_of(yj);
                    let c = dot(xi, yj) * ix * iy;
                    let a = s * c + b;
                    let za = if i == j { a } else { -a };
                    total -= special::log_sigmoid(B::default(), za);
                    // g = ∂ℓ/∂a / N = −z·σ(−z·a)/N.
                    let sg = special::sigmoid(B::default(), -za) * inv_n;
                    let g = if i == j { -sg } else { sg };
                    db += g;
                    dt += g * s * c;
                    let gc = g * s; // ∂/∂ĉ
                    if let Some(gx) = gx.as_deref_mut() {
                        axpy(gc * iy, yj, gx);
                    }
                    if let Some(gy) = out
                        .grad_y
                        .as_deref_mut()
                        .and_then(|g| g.get_mut(j * d..(j + 1) * d))
                    {
                        axpy(gc * ix, xi, gy);
                    }
                }
                if normalize {
                    if let Some(g) = gx {
                        normalize_backward(xi, g);
                    }
                }
            }
            if normalize {
                if let Some(g) = out.grad_y.as_deref_mut() {
                    for (yr, gr) in chunks(y, d).zip(chunks_mut(g, d)) {
                        normalize_backward(yr, gr);
                    }
                }
            }
            (total, dt, db)
        },
    );
    if let Some(g) = out.grad_logit_scale {
        *g = dt;
    }
    if let Some(g) = out.grad_logit_bias {
        *g = db;
    }
    Ok(total * inv_n)
}

/// The InfoNCE lower bound on mutual information, `I(X; Y) >= ln N − L` (van den Oord et al.
/// 2018), where `N` counts every candidate of a query, the positive included (texts that call
/// it "the number of negatives" mean `N − 1`). The bound can never exceed its ceiling `ln N`
/// (a loss is `>= 0`), however much information there is: estimating large mutual information
/// needs many candidates.
///
/// Accuracy: `ln N` within the backend's `ln` error (a few ULP), then one subtraction.
///
/// # Errors
///
/// [`Error::Empty`] for `candidates = 0`.
///
/// # Examples
///
/// ```
/// use loss_core::mutual_information_lower_bound;
/// use loss_core::softmax_core::backend::Poly;
/// let b = mutual_information_lower_bound(Poly, 0.5f64, 8)?;
/// assert!((b - (8f64.ln() - 0.5)).abs() < 1e-15);
/// # Ok::<(), loss_core::Error>(())
/// ```
pub fn mutual_information_lower_bound<F: Float, B: Backend<F>>(
    _backend: B,
    loss: F,
    candidates: usize,
) -> Result<F, Error> {
    if candidates == 0 {
        return Err(Error::Empty {
            argument: "candidates",
        });
    }
    Ok(B::ln(F::from_usize(candidates)) - loss)
}
