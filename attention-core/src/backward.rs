//! The backward pass, FlashAttention-2 style: the probabilities are recomputed block by block
//! from the saved log-sum-exp, `D = rowsum(dO ∘ O)`, and nothing of size `t × s` is stored.

use softmax_core::backend::Backend;
use softmax_core::{linalg, simd, Float, LogSumExp};

use crate::kernel::Rows as _;
use crate::kernel::{finalize, from_u64, gap_in, keys_of, part, part_mut, Mods, Tile, BK, TQ};
use crate::options::{check_len, mul, Dims, Grads, Options, Plan, Qkv, Saved};
use crate::Error;

/// The gradients of `L = Σ dO ⊙ o` with respect to `q`, `k`, `v` (and the sink logits) for
/// [`attention`](crate::attention) with the same dimensions and options, from the forward
/// output and log-sum-exp ([`Saved`]).
///
/// FlashAttention-2's algorithm on the CPU: per query, `D = dO·o`; per key block, the scores
/// are recomputed exactly as the forward pass computed them, `p_j = e^(s_j − lse)` (through
/// softmax-core's `LogSumExp::probs`), `dP_j = dO·v_j`, `dS_j = p_j·(dP_j − D)`; the chain
/// rule through the soft-cap (`1 − tanh²`) and the scale gives `g_j`, and `dq += g_j·k_j`,
/// `dk_j += g_j·q`, `dv_j += p_j·dO` (`linalg::matmul_nn` / `matmul_tn`). The bias and ALiBi
/// terms are constants; masked keys get no gradient. With grouped-query attention `dk`/`dv`
/// sum over the query heads of each group. The sink logit's gradient is
/// `−Σ_t e^(z_h − lse_t)·D_t`. A query with no allowed key contributes nothing; a query whose
/// `lse` is `+inf` (scores equal to `+inf`) gives its limit weights to `dv` and nothing to
/// `dq`/`dk` (the limit distribution is locally constant).
///
/// The gradients are written (not accumulated) into [`Grads`]. Stack: four blocks of
/// `8 × 128` scores on 64-bit targets (`1 × 128` on 32-bit ones).
///
/// Accuracy (f32 against central finite differences of a naive f64 reference,
/// `harness/tests/attention_backward.rs`): each gradient within `64·u` of the magnitude of the
/// terms it sums (`u = 2⁻²⁴`).
///
/// # Errors
///
/// As [`attention`](crate::attention); [`Error::LengthMismatch`] if `saved`, `d_o` or a
/// gradient buffer does not fit the dimensions; [`Error::UnsupportedOption`] for a sink-logit
/// gradient buffer without sink logits in `opts`.
///
/// # Examples
///
/// ```
/// use attention_core::{attention, attention_backward, Dims, Grads, Options, Output, Qkv,
///     Saved, backend::Poly};
/// // One query, two keys: dv = p (the weights), since o = p₀v₀ + p₁v₁.
/// let dims = Dims::new(1, 1, 1, 2, 1, 1);
/// let (q, k, v) = ([1.0f64], [0.0, 1.0], [3.0, 5.0]);
/// let x = Qkv::new(&q, &k, &v);
/// let opts = Options::new().with_scale(1.0);
/// let (mut o, mut lse) = ([0.0], [0.0]);
/// attention(Poly, &dims, x, &opts, Output::new(&mut o).with_lse(&mut lse))?;
/// let (mut dq, mut dk, mut dv) = ([0.0], [0.0; 2], [0.0; 2]);
/// attention_backward(Poly, &dims, x, &opts, Saved::new(&o, &lse), &[1.0],
///     Grads::new(&mut dq, &mut dk, &mut dv))?;
/// let p1 = 1.0 / (1.0 + (-1.0f64).exp());
/// assert!((dv[1] - p1).abs() < 1e-15);
/// // dq = Σ p_j (v_j − o) k_j = p₁(5 − o)
/// assert!((dq[0] - p1 * (5.0 - o[0])).abs() < 1e-14);
/// # Ok::<(), attention_core::Error>(())
/// ```
pub fn attention_backward<F: Float, B: Backend<F>>(
    backend: B,
    dims: &Dims,
    x: Qkv<'_, F>,
    opts: &Options<'_, F>,
    saved: Saved<'_, F>,
    d_o: &[F],
    grads: Grads<'_, F>,
) -> Result<(), Error> {
    let p = Plan::new(dims, &x, opts)?;
    let ht = mul(p.heads, p.t)?;
    let kv_s = mul(dims.kv_heads, p.s)?;
    check_len("o", mul(ht, p.dv)?, saved.o.len())?;
    check_len("lse", ht, saved.lse.len())?;
    check_len("do", mul(ht, p.dv)?, d_o.len())?;
    check_len("dq", mul(ht, p.d)?, grads.dq.len())?;
    check_len("dk", mul(kv_s, p.d)?, grads.dk.len())?;
    check_len("dv", mul(kv_s, p.dv)?, grads.dv.len())?;
    if let Some(ds) = &grads.d_sink {
        if p.sink_logits.is_none() {
            return Err(Error::UnsupportedOption {
                what: "d_sink_logits",
            });
        }
        check_len("d_sink_logits", p.heads, ds.len())?;
    }
    let Grads {
        dq,
        dk,
        dv,
        mut d_sink,
    } = grads;
    dq.fill(F::ZERO);
    dk.fill(F::ZERO);
    dv.fill(F::ZERO);
    if let Some(ds) = d_sink.as_deref_mut() {
        ds.fill(F::ZERO);
    }
    if p.t == 0 {
        return Ok(());
    }
    for h in 0..p.heads {
        let g = h.checked_div(p.group).unwrap_or(0);
        let head = Head {
            q: part(x.q, h, p.t * p.d),
            k: part(x.k, g, p.s * p.d),
            v: part(x.v, g, p.s * p.dv),
            o: part(saved.o, h, p.t * p.dv),
            lse: part(saved.lse, h, p.t),
            d_o: part(d_o, h, p.t * p.dv),
        };
        let dq_h = part_mut(dq, h, p.t * p.d);
        let dk_g = part_mut(dk, g, p.s * p.d);
        let dv_g = part_mut(dv, g, p.s * p.dv);
        let mut sink_grad = F::ZERO;
        simd::dispatch(
            #[inline(always)]
            || {
                let mut t0 = 0;
                while t0 < p.t {
                    let rows = TQ.min(p.t - t0);
                    sink_grad += backward_tile(backend, &p, h, t0, rows, &head, dq_h, dk_g, dv_g);
                    t0 += rows;
                }
            },
        );
        if let Some(v) = d_sink.as_deref_mut().and_then(|ds| ds.get_mut(h)) {
            *v = sink_grad;
        }
    }
    Ok(())
}

/// One head's inputs.
struct Head<'a, F> {
    q: &'a [F],
    k: &'a [F],
    v: &'a [F],
    o: &'a [F],
    lse: &'a [F],
    d_o: &'a [F],
}

/// How a query's probabilities are recomputed from its saved log-sum-exp.
#[derive(Clone, Copy, Debug)]
enum Norm<F, B> {
    /// A finite (or NaN) lse: `p = e^(s − lse)`.
    Lse(LogSumExp<F, B>),
    /// No allowed key (`lse = -inf`): every p is 0.
    Empty,
    /// `lse = +inf`: `p = 1/k` on the `k` scores equal to `+inf`, 0 elsewhere.
    Limit(F),
}

/// The backward pass of one tile of queries (`t0 .. t0 + rows` of head `h`); returns this
/// tile's contribution to the sink logit's gradient.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn backward_tile<F: Float, B: Backend<F>>(
    backend: B,
    p: &Plan<'_, F>,
    h: usize,
    t0: usize,
    rows: usize,
    x: &Head<'_, F>,
    dq: &mut [F],
    dk: &mut [F],
    dv: &mut [F],
) -> F {
    let (d, dvw, s) = (p.d, p.dv, p.s);
    let koff = p.koff();
    let keys = (0, s as u64);
    let tile = Tile::new(rows, keys, |r| {
        p.rule.allowed(p.qpos(t0 + r), koff, s as u64, keys)
    });
    let rows = tile.rows;
    let slope = p.slope(h);
    let q_tile = x.q.get(t0 * d..(t0 + rows) * d).unwrap_or(&[]);
    let do_tile = x.d_o.get(t0 * dvw..(t0 + rows) * dvw).unwrap_or(&[]);
    let o_tile = x.o.get(t0 * dvw..(t0 + rows) * dvw).unwrap_or(&[]);
    let dq_tile = dq.get_mut(t0 * d..(t0 + rows) * d).unwrap_or(&mut []);
    let mods = |r: usize| Mods {
        scale: p.scale,
        cap: p.softcap,
        slope,
        qp: p.qpos(t0 + r),
    };
    // D = rowsum(dO ∘ O) and the normaliser of each row.
    let mut dd = [F::ZERO; TQ];
    let mut norm = [Norm::Empty; TQ];
    for (r, ((dr, nr), (dor, or))) in dd
        .iter_mut()
        .zip(norm.iter_mut())
        .zip(do_tile.rows(dvw.max(1)).zip(o_tile.rows(dvw.max(1))))
        .enumerate()
    {
        *dr = linalg::dot(dor, or).unwrap_or(F::NAN);
        let l = x.lse.get(t0 + r).copied().unwrap_or(F::NAN);
        *nr = if l == F::NEG_INFINITY {
            Norm::Empty
        } else if l == F::INFINITY {
            let k = count_pos_inf(backend, p, h, t0 + r, x, &mods(r));
            Norm::Limit(F::ONE / from_u64::<F>(k))
        } else {
            let mut st = LogSumExp::new(backend);
            st.push(l);
            Norm::Lse(st)
        };
    }
    let mut sc = [F::ZERO; TQ * BK];
    let mut pb = [F::ZERO; TQ * BK];
    let mut gb = [F::ZERO; TQ * BK];
    let mut fac = [F::ZERO; TQ * BK];
    tile.for_each_block(keys, |spans, (u0, u1)| {
        let w = (u1 - u0) as usize;
        let n = rows * w;
        let (Some(sc), Some(pb), Some(gb), Some(fac)) = (
            sc.get_mut(..n),
            pb.get_mut(..n),
            gb.get_mut(..n),
            fac.get_mut(..n),
        ) else {
            return;
        };
        let kb = keys_of(x.k, u0, u1, d);
        let vb = keys_of(x.v, u0, u1, dvw);
        if linalg::matmul_nt(q_tile, kb, d, sc).is_err()
            || linalg::matmul_nt(do_tile, vb, dvw, gb).is_err()
        {
            return;
        }
        pb.fill(F::ZERO);
        for (r, (((((srow, prow), grow), frow), runs), (&dr, nr))) in sc
            .rows_mut(w.max(1))
            .zip(pb.rows_mut(w.max(1)))
            .zip(gb.rows_mut(w.max(1)))
            .zip(fac.rows_mut(w.max(1)))
            .zip(spans.iter())
            .zip(dd.iter().zip(norm.iter()))
            .enumerate()
        {
            let Some(runs) = runs else {
                grow.fill(F::ZERO);
                continue;
            };
            let (f, l) = runs.span();
            let (a, b) = ((f - u0) as usize, (l - u0) as usize);
            let t = t0 + r;
            let row_off = (h * p.t + t) * s;
            let bias = p
                .bias
                .and_then(|bs| bs.get(row_off + f as usize..row_off + l as usize));
            let keep = p
                .mask
                .and_then(|k| k.get(t * s + f as usize..t * s + l as usize));
            let (Some(s_span), Some(p_span), Some(f_span)) =
                (srow.get_mut(a..b), prow.get_mut(a..b), frow.get_mut(a..b))
            else {
                continue;
            };
            finalize(
                backend,
                s_span,
                &mods(r),
                f + koff,
                bias,
                keep,
                gap_in(runs, f),
                Some(f_span),
            );
            match nr {
                Norm::Lse(st) => {
                    let _ = st.probs(s_span, p_span);
                }
                Norm::Empty => {}
                Norm::Limit(inv_k) => {
                    for (pj, &sj) in p_span.iter_mut().zip(s_span.iter()) {
                        *pj = if sj == F::INFINITY { *inv_k } else { F::ZERO };
                    }
                    f_span.fill(F::ZERO);
                }
            }
            // g = p·(dP − D)·scale·cap' (0 wherever p is 0: masked keys, underflow).
            for (j, gj) in grow.iter_mut().enumerate() {
                let (pj, fj) = match (prow.get(j), frow.get(j)) {
                    (Some(&pj), Some(&fj)) if j >= a && j < b => (pj, fj),
                    _ => (F::ZERO, F::ZERO),
                };
                *gj = if pj == F::ZERO {
                    F::ZERO
                } else {
                    pj * (*gj - dr) * fj
                };
            }
            // dq_t += Σ_j g_j k_j over the row's span.
            if let (Some(gs), Some(dq_r)) = (grow.get(a..b), dq_tile.get_mut(r * d..(r + 1) * d)) {
                let _ = linalg::matmul_nn(gs, keys_of(x.k, f, l, d), gs.len(), d, dq_r, true);
            }
        }
        // dk_j += Σ_t g_tj q_t, dv_j += Σ_t p_tj dO_t (rows in order).
        let dk_b = dk
            .get_mut(u0 as usize * d..u1 as usize * d)
            .unwrap_or(&mut []);
        let _ = linalg::matmul_tn(gb, q_tile, w, d, dk_b, true);
        let dv_b = dv
            .get_mut(u0 as usize * dvw..u1 as usize * dvw)
            .unwrap_or(&mut []);
        let _ = linalg::matmul_tn(pb, do_tile, w, dvw, dv_b, true);
    });
    // d sink_h = −Σ_t e^(z_h − lse_t)·D_t.
    let mut ds = F::ZERO;
    if let Some(z) = p.sink(h) {
        for (&dr, nr) in dd.iter().zip(norm.iter()).take(rows) {
            let pz = match nr {
                Norm::Lse(st) => st.prob(z),
                Norm::Empty | Norm::Limit(_) => F::ZERO,
            };
            if pz != F::ZERO {
                ds -= pz * dr;
            }
        }
    }
    ds
}

/// The number of scores equal to `+inf` among query `t`'s allowed keys (head `h`).
#[inline(never)]
fn count_pos_inf<F: Float, B: Backend<F>>(
    backend: B,
    p: &Plan<'_, F>,
    h: usize,
    t: usize,
    x: &Head<'_, F>,
    m: &Mods<F>,
) -> u64 {
    let (d, s) = (p.d, p.s);
    let koff = p.koff();
    let keys = (0, s as u64);
    let tile = Tile::new(1, keys, |_| p.rule.allowed(p.qpos(t), koff, s as u64, keys));
    let q_row = x.q.get(t * d..(t + 1) * d).unwrap_or(&[]);
    let mut buf = [F::ZERO; BK];
    let mut k = 0u64;
    tile.for_each_block(keys, |spans, _| {
        let Some(Some(runs)) = spans.first() else {
            return;
        };
        let (f, l) = runs.span();
        let Some(row) = buf.get_mut(..(l - f) as usize) else {
            return;
        };
        if linalg::matmul_nt(q_row, keys_of(x.k, f, l, d), d, row).is_err() {
            return;
        }
        let row_off = (h * p.t + t) * s;
        let bias = p
            .bias
            .and_then(|bs| bs.get(row_off + f as usize..row_off + l as usize));
        let keep = p
            .mask
            .and_then(|kk| kk.get(t * s + f as usize..t * s + l as usize));
        finalize(backend, row, m, f + koff, bias, keep, gap_in(runs, f), None);
        k += row.iter().filter(|&&v| v == F::INFINITY).count() as u64;
    });
    k.max(1)
}
