//! Cross-entropy of a linear layer's logits `h·Wᵀ` without materialising them: block-wise over
//! the vocabulary, exact (Cut Cross-Entropy / Liger's fused linear cross-entropy, on
//! softmax-core's skeleton).

#![forbid(unsafe_code)]

use softmax_core::backend::Backend;
use softmax_core::chunks::chunks_mut;
use softmax_core::linalg::within;
use softmax_core::{simd, special, Float, LogSumExp};

use crate::ce::{class_of, streamed_row, Acc, Consts, RowGrad, Tally};
use crate::error::{check_len, mul, rows_of, Error};
use crate::math;
use crate::options::{check_losses, CrossEntropyOptions, Reduction};

/// The rows of `h` processed together: their online log-sum-exp states live on the stack, and
/// the weight matrix is swept once per group and pass (one sweep per pass for `T <= 64`).
///
/// # Examples
///
/// ```
/// use loss_core::{linear_cross_entropy_scratch_len, LINEAR_CE_ROWS};
/// // A scratch for 1,000 rows holds blocks for one group of LINEAR_CE_ROWS rows at a time.
/// assert_eq!(linear_cross_entropy_scratch_len(1000, 8), 2 * LINEAR_CE_ROWS * 8);
/// ```
pub const LINEAR_CE_ROWS: usize = 64;

/// The length of scratch [`linear_cross_entropy`] needs for blocks of `block` vocabulary
/// entries with `t` rows: `2·min(t, 64)·block` (a block of logits and one of their gradients).
/// Saturates instead of overflowing.
///
/// # Examples
///
/// ```
/// assert_eq!(loss_core::linear_cross_entropy_scratch_len(64, 256), 2 * 64 * 256);
/// assert_eq!(loss_core::linear_cross_entropy_scratch_len(3, 100), 600);
/// ```
pub fn linear_cross_entropy_scratch_len(t: usize, block: usize) -> usize {
    let r = if t < LINEAR_CE_ROWS {
        t
    } else {
        LINEAR_CE_ROWS
    };
    r.saturating_mul(block).saturating_mul(2)
}

/// The caller's buffers for [`linear_cross_entropy`]: the working memory (required, given to
/// [`new`](Self::new): at least `2·min(T, 64)` values; its length sets the vocabulary block, see
/// [`linear_cross_entropy_scratch_len`]), and each optional: per-sample losses
/// (`Reduction::None`: `T` values, and required then; otherwise one, the reduced loss), `grad_h`
/// (`T·K`), `grad_w` (`V·K`), and the per-row log-sum-exp `lse` (`T`, ignored rows included).
///
/// # Examples
///
/// ```
/// let mut scratch = [0.0f32; 8];
/// let (mut gh, mut gw, mut lse) = ([0.0f32; 4], [0.0f32; 6], [0.0f32; 2]);
/// let o = loss_core::LinearCrossEntropyOutputs::new(&mut scratch).with_grad_h(&mut gh)
///     .with_grad_w(&mut gw).with_lse(&mut lse);
/// # let _ = o;
/// ```
#[derive(Debug)]
pub struct LinearCrossEntropyOutputs<'a, F> {
    losses: Option<&'a mut [F]>,
    grad_h: Option<&'a mut [F]>,
    grad_w: Option<&'a mut [F]>,
    lse: Option<&'a mut [F]>,
    scratch: &'a mut [F],
}

impl<'a, F: Float> LinearCrossEntropyOutputs<'a, F> {
    /// The working memory `scratch` (at least `2·min(T, 64)` values; its contents on return are
    /// unspecified) and no outputs besides the return value.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut scratch = [0.0f32; 512];
    /// let o = loss_core::LinearCrossEntropyOutputs::new(&mut scratch);
    /// # let _ = o;
    /// ```
    pub fn new(scratch: &'a mut [F]) -> Self {
        LinearCrossEntropyOutputs {
            losses: None,
            grad_h: None,
            grad_w: None,
            lse: None,
            scratch,
        }
    }

    /// The per-sample losses (required with `Reduction::None`), or the one reduced value.
    ///
    /// # Examples
    ///
    /// ```
    /// let (mut s, mut l) = ([0.0f32; 8], [0.0f32; 2]);
    /// let o = loss_core::LinearCrossEntropyOutputs::new(&mut s).with_losses(&mut l);
    /// # let _ = o;
    /// ```
    pub fn with_losses(self, losses: &'a mut [F]) -> Self {
        LinearCrossEntropyOutputs {
            losses: Some(losses),
            ..self
        }
    }

    /// The gradient with respect to `h` (`T·K`).
    ///
    /// # Examples
    ///
    /// ```
    /// let (mut s, mut g) = ([0.0f32; 8], [0.0f32; 8]);
    /// let o = loss_core::LinearCrossEntropyOutputs::new(&mut s).with_grad_h(&mut g);
    /// # let _ = o;
    /// ```
    pub fn with_grad_h(self, grad_h: &'a mut [F]) -> Self {
        LinearCrossEntropyOutputs {
            grad_h: Some(grad_h),
            ..self
        }
    }

    /// The gradient with respect to `W` (`V·K`).
    ///
    /// # Examples
    ///
    /// ```
    /// let (mut s, mut g) = ([0.0f64; 8], [0.0f64; 8]);
    /// let o = loss_core::LinearCrossEntropyOutputs::new(&mut s).with_grad_w(&mut g);
    /// # let _ = o;
    /// ```
    pub fn with_grad_w(self, grad_w: &'a mut [F]) -> Self {
        LinearCrossEntropyOutputs {
            grad_w: Some(grad_w),
            ..self
        }
    }

    /// The per-row log-sum-exp of the (capped) logits (`T`).
    ///
    /// # Examples
    ///
    /// ```
    /// let (mut s, mut l) = ([0.0f32; 8], [0.0f32; 2]);
    /// let o = loss_core::LinearCrossEntropyOutputs::new(&mut s).with_lse(&mut l);
    /// # let _ = o;
    /// ```
    pub fn with_lse(self, lse: &'a mut [F]) -> Self {
        LinearCrossEntropyOutputs {
            lse: Some(lse),
            ..self
        }
    }
}

/// `cross_entropy(h·Wᵀ, target, options)` and its gradients with respect to `h` and `W`,
/// without ever holding the `T×V` logits.
///
/// `h` holds `T` rows of `k` values (hidden states), `w` holds `V` rows of `k` (the output
/// layer, one row per class), `target` `T` class indices (or `ignore_index`). Every option of
/// [`cross_entropy`](crate::cross_entropy) applies (class weights, ignore index, label smoothing,
/// reduction, soft-cap, z-loss) with the same semantics; the result equals `cross_entropy` on the
/// materialised logits `linalg::matmul_nt(h, w)` up to rounding (the logits are bit-identical;
/// the log-sum-exp is merged across blocks; tested).
///
/// Returns the scalar whose gradient the call writes: the mean, the sum, or with `None` the sum
/// of the per-sample values (written to the outputs' `losses`, required then; 0 for ignored
/// samples).
///
/// # Algorithm and memory
///
/// The vocabulary is cut into blocks of `nb = scratch.len() / (2·min(T, 64))` rows of `W`. For
/// each group of up to 64 rows of `h`:
///
/// 1. for each block: its logits `h_g·W_bᵀ` by `linalg::within::matmul_nt` into the scratch
///    (soft-capped in place), pushed into one online `LogSumExp` per row (on the stack),
///    remembering the target's logit and the smoothing sum;
/// 2. (only if a gradient is asked for) for each block again: the logits recomputed, their
///    probabilities from the final states (`LogSumExp::probs`), the gradient block `G` formed in
///    the scratch's second half, then `dh_g += G·W_b` (`linalg::within::matmul_nn`,
///    accumulating) and `dW_b += Gᵀ·h_g` (`linalg::within::matmul_tn`, accumulating).
///
/// Extra memory: the outputs' `scratch` (at least `2·min(T, 64)` values; give
/// [`linear_cross_entropy_scratch_len`]`(T, nb)` for blocks of `nb`) plus 64 states and 128
/// values on the stack — O(block), independent of `V`. The materialised alternative holds `T·V`
/// logits. Work: the logits are computed twice (`4·T·V·K` multiply-adds in all against
/// `3·T·V·K`), but every block of `W` stays in cache across the rows of a group.
///
/// `dh` and `dW` add each element's products in the order of the shared dimension, block by
/// block, so they equal the materialised `matmul_nn` / `matmul_tn` of the same gradient bit for
/// bit.
///
/// # Accuracy
///
/// As [`cross_entropy`](crate::cross_entropy) on the logits, plus the products' own error
/// (`linalg`'s stated bounds); `−ln p_t` from the online state is exact to a few units of
/// roundoff.
///
/// # Errors
///
/// [`Error::Empty`] for `k = 0` or no rows in `w`; [`Error::RaggedBatch`],
/// [`Error::LengthMismatch`] (buffers, a scratch shorter than `2·min(T, 64)`);
/// [`Error::MissingOutput`] for `None` without `losses`; [`Error::TargetOutOfRange`],
/// [`Error::NoTargets`], [`Error::InvalidParameter`] as [`cross_entropy`](crate::cross_entropy).
///
/// # Examples
///
/// ```
/// use loss_core::{linear_cross_entropy, linear_cross_entropy_scratch_len, CrossEntropyOptions,
///                 LinearCrossEntropyOutputs};
/// use loss_core::softmax_core::backend::Poly;
/// let h = [1.0f32, 0.0, 0.0, 1.0];             // T = 2, K = 2
/// let w = [2.0f32, 0.0, 0.0, 1.0, 1.0, 1.0];   // V = 3
/// let mut scratch = [0.0f32; 8];               // blocks of 2 vocabulary rows
/// assert_eq!(linear_cross_entropy_scratch_len(2, 2), scratch.len());
/// let (mut gh, mut gw) = ([0.0f32; 4], [0.0f32; 6]);
/// let out = LinearCrossEntropyOutputs::new(&mut scratch)
///     .with_grad_h(&mut gh)
///     .with_grad_w(&mut gw);
/// let loss = linear_cross_entropy(Poly, &h, &w, 2, &[0, 2], &CrossEntropyOptions::new(), out)?;
/// // logits [[2, 0, 1], [0, 1, 1]]: the mean of −ln softmax at the targets.
/// let l0 = (2f64.exp() + 1.0 + 1f64.exp()).ln() - 2.0;
/// let l1 = (1.0 + 2.0 * 1f64.exp()).ln() - 1.0;
/// assert!((loss as f64 - (l0 + l1) / 2.0).abs() < 1e-6);
/// # Ok::<(), loss_core::Error>(())
/// ```
pub fn linear_cross_entropy<F: Float, B: Backend<F>>(
    _backend: B,
    h: &[F],
    w: &[F],
    k: usize,
    target: &[i64],
    options: &CrossEntropyOptions<'_, F>,
    out: LinearCrossEntropyOutputs<'_, F>,
) -> Result<F, Error> {
    let t_rows = rows_of("h", h.len(), k)?;
    let v = rows_of("w", w.len(), k)?;
    if v == 0 {
        return Err(Error::Empty { argument: "w" });
    }
    check_len("target", t_rows, target.len())?;
    options.validate(v)?;
    let reduction = options.reduction;
    check_losses(out.losses.as_deref(), reduction, t_rows)?;
    if let Some(g) = &out.grad_h {
        check_len("grad_h", h.len(), g.len())?;
    }
    if let Some(g) = &out.grad_w {
        check_len("grad_w", w.len(), g.len())?;
    }
    if let Some(l) = &out.lse {
        check_len("lse", t_rows, l.len())?;
    }
    let LinearCrossEntropyOutputs {
        mut losses,
        mut grad_h,
        mut grad_w,
        lse: mut lse_out,
        scratch,
    } = out;
    let group = t_rows.clamp(1, LINEAR_CE_ROWS);
    let nb = scratch
        .len()
        .checked_div(mul(2, group)?)
        .unwrap_or(0)
        .min(v);
    let h_step = mul(group, k)?;
    let w_step = mul(nb, k)?;
    if nb == 0 || h_step == 0 || w_step == 0 {
        return Err(Error::LengthMismatch {
            argument: "scratch",
            expected: 2 * group,
            found: scratch.len(),
        });
    }
    let tally = Tally::of(target, v, options.ignore_index, options.weight)?;
    let (s_ce, s_z) = tally.scales(reduction)?;
    let kc = Consts::new(options, v, s_ce, s_z);
    let want_grad = grad_h.is_some() || grad_w.is_some();
    if let Some(g) = grad_h.as_deref_mut() {
        g.fill(F::ZERO);
    }
    if let Some(g) = grad_w.as_deref_mut() {
        g.fill(F::ZERO);
    }
    let mut acc = Acc::new();
    let (zs, ps) = scratch.split_at_mut(scratch.len() / 2);
    simd::dispatch(
        #[inline(always)]
        || {
            let mut r0 = 0usize;
            for (hg, tg) in math::pieces(h, h_step).zip(math::pieces(target, group)) {
                let rows = tg.len();
                let mut states = [LogSumExp::<F, B>::new(B::default()); LINEAR_CE_ROWS];
                let mut z_t = [F::NAN; LINEAR_CE_ROWS];
                let mut wz = [F::ZERO; LINEAR_CE_ROWS];
                let classes: [Option<usize>; LINEAR_CE_ROWS] = core::array::from_fn(|r| {
                    tg.get(r)
                        .filter(|&&t| t != options.ignore_index)
                        .and_then(|&t| class_of(t, v))
                });
                // Pass 1: the online log-sum-exp of every row across the blocks.
                for (bi, wb) in math::pieces(w, w_step).enumerate() {
                    let v0 = bi * nb;
                    let n = wb.len().checked_div(k).unwrap_or(0);
                    let z = zs.get_mut(..rows * n).unwrap_or(&mut []);
                    within::matmul_nt(hg, wb, k, z);
                    for (r, zr) in chunks_mut(z, n).enumerate() {
                        if let Some(c) = kc.cap {
                            for z in zr.iter_mut() {
                                *z = special::softcap(B::default(), *z, c);
                            }
                        }
                        if let Some(st) = states.get_mut(r) {
                            st.push_slice(zr);
                        }
                        let cls = classes.get(r).copied().flatten();
                        if let Some(&zt) =
                            cls.and_then(|c| c.checked_sub(v0)).and_then(|i| zr.get(i))
                        {
                            if let Some(s) = z_t.get_mut(r) {
                                *s = zt;
                            }
                        }
                        if kc.eps > F::ZERO {
                            if let Some(s) = wz.get_mut(r) {
                                *s += match kc.weight {
                                    Some(wt) => match wt.get(v0..v0 + n) {
                                        Some(wt) => math::dot(wt, zr),
                                        None => F::NAN,
                                    },
                                    None => math::sum(zr),
                                };
                            }
                        }
                    }
                }
                // The rows' losses.
                for r in 0..rows {
                    let st = states
                        .get(r)
                        .copied()
                        .unwrap_or(LogSumExp::new(B::default()));
                    let lse = st.finish();
                    if let Some(l) = lse_out.as_deref_mut().and_then(|l| l.get_mut(r0 + r)) {
                        *l = lse;
                    }
                    let Some(c) = classes.get(r).copied().flatten() else {
                        if reduction == Reduction::None {
                            if let Some(l) = losses.as_deref_mut().and_then(|l| l.get_mut(r0 + r)) {
                                *l = F::ZERO;
                            }
                        }
                        continue;
                    };
                    let z_tr = z_t.get(r).copied().unwrap_or(F::NAN);
                    let wzr = wz.get(r).copied().unwrap_or(F::NAN);
                    let rl = streamed_row(&kc, &st, c, z_tr, wzr, v);
                    acc.add(&mut losses, r0 + r, reduction, &rl);
                }
                // Pass 2: the gradient block by block.
                if want_grad {
                    for (bi, wb) in math::pieces(w, w_step).enumerate() {
                        let v0 = bi * nb;
                        let n = wb.len().checked_div(k).unwrap_or(0);
                        let z = zs.get_mut(..rows * n).unwrap_or(&mut []);
                        let p = ps.get_mut(..rows * n).unwrap_or(&mut []);
                        within::matmul_nt(hg, wb, k, z);
                        for (r, (zr, pr)) in chunks_mut(z, n).zip(chunks_mut(p, n)).enumerate() {
                            let Some(c) = classes.get(r).copied().flatten() else {
                                pr.fill(F::ZERO);
                                continue;
                            };
                            let Some(st) = states.get(r) else {
                                continue;
                            };
                            let row = BlockRow {
                                st,
                                kc: &kc,
                                target: c,
                                v0,
                            };
                            grad_block(&row, zr, pr);
                        }
                        if let Some(gh) = grad_h.as_deref_mut() {
                            if let Some(ghg) = gh.get_mut(r0 * k..(r0 + rows) * k) {
                                within::matmul_nn(p, wb, n, k, ghg, true);
                            }
                        }
                        if let Some(gw) = grad_w.as_deref_mut() {
                            if let Some(gwb) = gw.get_mut(v0 * k..(v0 + n) * k) {
                                within::matmul_tn(p, hg, n, k, gwb, true);
                            }
                        }
                    }
                }
                r0 += rows;
            }
        },
    );
    Ok(acc.finish(&mut losses, reduction, tally.total, tally.count))
}

/// One row of a vocabulary block in the gradient pass: its final online state, the call's
/// constants, its target class and the block's first vocabulary index.
struct BlockRow<'s, F, B> {
    st: &'s LogSumExp<F, B>,
    kc: &'s Consts<'s, F>,
    target: usize,
    v0: usize,
}

/// One row's gradient block from the raw logits `z` of the block: the probabilities from the
/// final state (of the capped values, when capping), then `p_j·a − b·w_j` times the cap's
/// derivative at the raw logit, and the target's entry if it lies in the block.
#[inline(always)]
fn grad_block<F: Float, B: Backend<F>>(row: &BlockRow<'_, F, B>, z: &[F], p: &mut [F]) {
    let BlockRow {
        st,
        kc,
        target: c,
        v0,
    } = *row;
    let ti = c.checked_sub(v0);
    match kc.cap {
        None => {
            math::probs_into(st, z, p);
        }
        Some(cap) => {
            for (p, &z) in p.iter_mut().zip(z) {
                *p = st.prob(special::softcap(B::default(), z, cap));
            }
        }
    }
    let rg = RowGrad::new(kc, c, st.finish());
    match (kc.cap, kc.weight) {
        (None, _) if rg.b == F::ZERO => {
            for p in p.iter_mut() {
                *p *= rg.a;
            }
        }
        (cap, _) => {
            for (j, (p, &z)) in p.iter_mut().zip(z.iter()).enumerate() {
                let g = rg.at(*p, kc.w(v0 + j));
                *p = match cap {
                    Some(cap) => g * special::softcap_slope(B::default(), z, cap),
                    None => g,
                };
            }
        }
    }
    if let Some((pt, &zt)) = ti.and_then(|i| Some((p.get_mut(i)?, z.get(i)?))) {
        let zc = match kc.cap {
            Some(cap) => special::softcap(B::default(), zt, cap),
            None => zt,
        };
        let g = rg.target(st.prob(zc));
        *pt = match kc.cap {
            Some(cap) => g * special::softcap_slope(B::default(), zt, cap),
            None => g,
        };
    }
}
