//! The backward pass, FlashAttention-2 style: the probabilities are recomputed block by block
//! from the saved log-sum-exp, `D = rowsum(dO ∘ O)`, and nothing of size `t × s` is stored.

use softmax_core::backend::Backend;
use softmax_core::chunks::{chunks, chunks_mut};
use softmax_core::linalg::within;
use softmax_core::{simd, Float, LogSumExp};

use crate::error::Error;
use crate::options::{Dims, Grads, Options, Qkv, Saved};
use crate::plan::{check_len, from_u64, keys_of, mul, part, part_mut, Plan};
use crate::tile::{tiles, Tile, BK, TQ};

/// The gradients of `L = Σ dO ⊙ o` with respect to `q`, `k`, `v` (and the sink logits) for
/// [`attention`](crate::attention) with the same dimensions and options, from the forward
/// output and log-sum-exp ([`Saved`]).
///
/// FlashAttention-2's algorithm on the CPU: per query, `D = dO·o`; per key block, the scores
/// are recomputed exactly as the forward pass computed them, `p_j = e^(s_j − lse)` (through
/// softmax-core's `LogSumExp::probs`), `dP_j = dO·v_j`, `dS_j = p_j·(dP_j − D)`; the chain
/// rule through the soft-cap (its slope `sech²(z/c)`, softmax-core's
/// `special::softcap_slope`) and the scale gives `g_j`, and `dq += g_j·k_j`, `dk_j += g_j·q`,
/// `dv_j += p_j·dO` (`linalg::matmul_nn` / `matmul_tn`). The bias and ALiBi terms are
/// constants; masked keys get no gradient. With grouped-query attention `dk`/`dv` sum over the
/// query heads of each group. The sink logit's gradient is
/// `−Σ_t e^(z_h − lse_t)·D_t`. A query with no allowed key contributes nothing; a query whose
/// `lse` is `+inf` (scores equal to `+inf`) gives its limit weights to `dv` and nothing to
/// `dq`/`dk` (the limit distribution is locally constant).
///
/// The gradients are written (not accumulated) into [`Grads`]. Stack: four blocks of
/// `8 × 128` scores on 64-bit targets (`1 × 128` on 32-bit ones).
///
/// Accuracy (f32 against central finite differences of a naive f64 reference,
/// `harness/tests/attention_backward.rs`): each gradient within `64·u` of the magnitude of the
/// terms it sums (`u = 2⁻²⁴`), plus half a quantum of the subnormal range (2⁻¹⁵⁰ in f32) per
/// term where a term or the gradient falls below the smallest normal number.
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
            k: part(x.k, g, p.s * p.d),
            v: part(x.v, g, p.s * p.dv),
            o: part(saved.o, h, p.t * p.dv),
            lse: part(saved.lse, h, p.t),
            d_o: part(d_o, h, p.t * p.dv),
        };
        let mut out = HeadGrads {
            dq: part_mut(dq, h, p.t * p.d),
            dk: part_mut(dk, g, p.s * p.d),
            dv: part_mut(dv, g, p.s * p.dv),
        };
        let mut sink_grad = F::ZERO;
        simd::dispatch(
            #[inline(always)]
            || {
                for (t0, rows) in tiles(p.t) {
                    let tile = Tile::of_queries(&p, &x, h, (t0, rows), (0, p.s as u64));
                    sink_grad += backward_tile(backend, &p, (h, t0), &tile, &head, &mut out);
                }
            },
        );
        if let Some(v) = d_sink.as_deref_mut().and_then(|ds| ds.get_mut(h)) {
            *v = sink_grad;
        }
    }
    Ok(())
}

/// One head's keys and values (its kv head's), saved forward outputs and output gradient.
struct Head<'a, F> {
    k: &'a [F],
    v: &'a [F],
    o: &'a [F],
    lse: &'a [F],
    d_o: &'a [F],
}

/// One head's gradient buffers (`dk`, `dv` of its kv head, shared by the group).
struct HeadGrads<'a, F> {
    dq: &'a mut [F],
    dk: &'a mut [F],
    dv: &'a mut [F],
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

/// The backward pass of one tile of queries (`t0 ..` of head `h`); returns this tile's
/// contribution to the sink logit's gradient.
#[inline(always)]
fn backward_tile<F: Float, B: Backend<F>>(
    backend: B,
    p: &Plan<'_, F>,
    (h, t0): (usize, usize),
    tile: &Tile<'_, F>,
    x: &Head<'_, F>,
    out: &mut HeadGrads<'_, F>,
) -> F {
    let (d, dvw) = (p.d, p.dv);
    let rows = tile.rows();
    let q_tile = tile.q;
    let do_tile = x.d_o.get(t0 * dvw..(t0 + rows) * dvw).unwrap_or(&[]);
    let o_tile = x.o.get(t0 * dvw..(t0 + rows) * dvw).unwrap_or(&[]);
    let dq_tile = out.dq.get_mut(t0 * d..(t0 + rows) * d).unwrap_or(&mut []);
    // D = rowsum(dO ∘ O) and the normaliser of each row.
    let mut dd = [F::ZERO; TQ];
    let mut norm = [Norm::Empty; TQ];
    for (r, ((dr, nr), (dor, or))) in dd
        .iter_mut()
        .zip(norm.iter_mut())
        .zip(chunks(do_tile, dvw.max(1)).zip(chunks(o_tile, dvw.max(1))))
        .enumerate()
    {
        *dr = within::dot(dor, or);
        let l = x.lse.get(t0 + r).copied().unwrap_or(F::NAN);
        *nr = if l == F::NEG_INFINITY {
            Norm::Empty
        } else if l == F::INFINITY {
            let k = count_pos_inf(backend, tile, r);
            Norm::Limit(F::ONE / from_u64::<F>(k))
        } else {
            let mut st = LogSumExp::new(backend);
            st.push(l);
            Norm::Lse(st)
        };
    }
    // The scores of a block become its probabilities in place (`pb`: 0 outside each row's
    // span, as the value gradient's product needs).
    let mut pb = [F::ZERO; TQ * BK];
    let mut gb = [F::ZERO; TQ * BK];
    let mut fac = [F::ZERO; TQ * BK];
    tile.for_each_block(|blk| {
        let (u0, u1, w) = (blk.u0, blk.u1, blk.width());
        let n = rows * w;
        let (Some(pb), Some(gb), Some(fac)) = (pb.get_mut(..n), gb.get_mut(..n), fac.get_mut(..n))
        else {
            return;
        };
        tile.scores(backend, blk, pb, Some(&mut *fac));
        let vb = keys_of(x.v, u0, u1, dvw);
        within::matmul_nt(do_tile, vb, dvw, gb);
        for (((prow, grow), frow), (runs, (&dr, nr))) in chunks_mut(pb, w.max(1))
            .zip(chunks_mut(gb, w.max(1)))
            .zip(chunks_mut(fac, w.max(1)))
            .zip(blk.spans.iter().zip(dd.iter().zip(norm.iter())))
        {
            let Some(runs) = runs else {
                prow.fill(F::ZERO);
                grow.fill(F::ZERO);
                continue;
            };
            let (f, l) = runs.span();
            let (a, b) = ((f - u0) as usize, (l - u0) as usize);
            let (Some(p_span), Some(f_span)) = (prow.get_mut(a..b), frow.get_mut(a..b)) else {
                prow.fill(F::ZERO);
                grow.fill(F::ZERO);
                continue;
            };
            match nr {
                Norm::Lse(st) => st.probs_in_place(p_span),
                Norm::Empty => p_span.fill(F::ZERO),
                Norm::Limit(inv_k) => {
                    for pj in p_span.iter_mut() {
                        *pj = if *pj == F::INFINITY { *inv_k } else { F::ZERO };
                    }
                    f_span.fill(F::ZERO);
                }
            }
            for (j, pj) in prow.iter_mut().enumerate() {
                if j < a || j >= b {
                    *pj = F::ZERO;
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
        }
        // dq_t += Σ_j g_j k_j over each row's span.
        for ((grow, runs), dq_r) in chunks(gb, w.max(1))
            .zip(blk.spans.iter())
            .zip(chunks_mut(dq_tile, d.max(1)))
        {
            if let Some(runs) = runs {
                let (f, l) = runs.span();
                let gs = grow
                    .get((f - u0) as usize..(l - u0) as usize)
                    .unwrap_or(&[]);
                within::matmul_nn(gs, keys_of(x.k, f, l, d), gs.len(), d, dq_r, true);
            }
        }
        // dk_j += Σ_t g_tj q_t, dv_j += Σ_t p_tj dO_t (rows in order).
        let dk_b = out
            .dk
            .get_mut(u0 as usize * d..u1 as usize * d)
            .unwrap_or(&mut []);
        within::matmul_tn(gb, q_tile, w, d, dk_b, true);
        let dv_b = out
            .dv
            .get_mut(u0 as usize * dvw..u1 as usize * dvw)
            .unwrap_or(&mut []);
        within::matmul_tn(pb, do_tile, w, dvw, dv_b, true);
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

/// The number of scores equal to `+inf` among the allowed keys of row `r` of a tile.
#[inline(never)]
fn count_pos_inf<F: Float, B: Backend<F>>(backend: B, tile: &Tile<'_, F>, r: usize) -> u64 {
    let one = tile.one_row(r);
    let mut buf = [F::ZERO; BK];
    let mut k = 0u64;
    one.for_each_block(|blk| {
        let Some(Some(runs)) = blk.spans.first() else {
            return;
        };
        let (f, l) = runs.span();
        one.scores(backend, blk, &mut buf, None);
        let row = buf
            .get((f - blk.u0) as usize..(l - blk.u0) as usize)
            .unwrap_or(&[]);
        k += row.iter().filter(|&&v| v == F::INFINITY).count() as u64;
    });
    k.max(1)
}
