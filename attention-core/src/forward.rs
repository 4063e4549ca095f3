//! The one-pass forward computation: full attention, its partial (split-K) form, the merge of
//! partial states and their finish.

use core::ops::Range;

use softmax_core::backend::Backend;
use softmax_core::chunks::{chunks, chunks_mut};
use softmax_core::{simd, Float};

use crate::error::Error;
use crate::options::{Dims, Options, Output, Qkv};
use crate::plan::{check_heads, check_len, check_output, mul, part_mut, Plan};
use crate::state::QueryState;
use crate::tile::{tiles, Tile, TQ};

/// Scaled dot-product attention, one pass per query: `o = softmax(scores)·V` per head, with
/// every mask and score modifier of [`Options`], and optionally each query's log-sum-exp and
/// attention entropy ([`Output`]).
///
/// For each query the keys are folded into an online softmax ([`QueryState`], on
/// softmax-core's `OnlineSoftmax`) in blocks of 128 keys on a fixed grid: the block's scores come
/// from one product `Q_tile·K_blockᵀ` for a tile of queries (`linalg::matmul_nt`), its weighted
/// values are added with `linalg::matmul_nn`. Blocks that the causal rule or the window removes
/// for every query of the tile are skipped (not computed); the `sinks` first keys never are.
/// Memory: the output and a fixed block of scores on the stack; no `t × s` matrix.
///
/// A query with no allowed key gets `o = 0`, `lse = -inf` (with a sink logit: `lse` = that
/// logit) and entropy 0. Scores equal to `+inf` share the weight evenly; a NaN score makes its
/// query's outputs NaN. Values of keys inside a computed block enter with weight 0 when the key
/// is masked, so a NaN or infinite value there makes the output NaN (as in PyTorch's math
/// path); keys outside the allowed runs are never read.
///
/// Accuracy (f32, `Poly` or `Libm`, measured against a naive f64 reference by
/// `harness/tests/attention_reference.rs`): each output within `8·u·Σ_j p_j·|v_j|` plus the
/// dot products' rounding propagated through the softmax (`u = 2⁻²⁴`), `lse` within
/// `8·u·(1 + |lse|)`, entropy within `16·u·(1 + E_p|s − max s|)`. An output below the
/// smallest normal number (weights or values near underflow, e.g. behind a sink logit far above
/// the scores) is rounded absolutely: add one quantum of the subnormal range (2⁻¹⁴⁹ in f32).
/// A key whose weight is below `2⁻⁹²` of the largest (f32; `2⁻¹⁰¹⁶` in f64) enters with weight
/// 0, as in every softmax-core kernel: add `2⁻⁹²·Σ|v_j|` over those keys (it matters only where
/// their values exceed the others' by about `2⁶⁸`; a sink logit carries no value and is folded
/// exactly, however far above the scores it lies).
///
/// # Errors
///
/// [`Error::ZeroDim`], [`Error::KvHeads`] for bad dimensions; [`Error::LengthMismatch`] for a
/// buffer whose length does not match them; [`Error::InvalidScale`],
/// [`Error::InvalidSoftcap`], [`Error::InvalidWindow`] for options out of their domain.
///
/// # Examples
///
/// ```
/// use attention_core::{attention, Causal, Dims, Options, Output, Qkv, backend::Poly};
/// // One head, two queries, three keys, d = dv = 2.
/// let dims = Dims::new(1, 1, 2, 3, 2, 2);
/// let q = [1.0f32, 0.0, 0.0, 1.0];
/// let k = [1.0f32, 0.0, 0.0, 1.0, 1.0, 1.0];
/// let v = [1.0f32, 0.0, 0.0, 1.0, 0.5, 0.5];
/// let (mut o, mut lse) = ([0.0f32; 4], [0.0f32; 2]);
/// let opts = Options::new().with_causal(Causal::BottomRight);
/// attention(Poly, &dims, Qkv::new(&q, &k, &v), &opts, Output::new(&mut o).with_lse(&mut lse))?;
/// // Query 0 sits at position 1: it sees keys 0 and 1 with scores 1/√2 and 0.
/// let w = 1.0 / (1.0 + (-(0.5f32).sqrt()).exp());
/// assert!((o[0] - w).abs() < 1e-6 && (o[1] - (1.0 - w)).abs() < 1e-6);
/// # Ok::<(), attention_core::Error>(())
/// ```
pub fn attention<F: Float, B: Backend<F>>(
    backend: B,
    dims: &Dims,
    x: Qkv<'_, F>,
    opts: &Options<'_, F>,
    out: Output<'_, F>,
) -> Result<(), Error> {
    let p = Plan::new(dims, &x, opts)?;
    check_output(&out, mul(p.heads, p.t)?, p.dv)?;
    let Output {
        o,
        mut lse,
        mut entropy,
    } = out;
    if p.t == 0 {
        // Nothing to write (and no loop over a huge `heads` with empty tensors).
        return Ok(());
    }
    let want_entropy = entropy.is_some();
    let keys = (0, p.s as u64);
    for h in 0..p.heads {
        let o_h = part_mut(o, h, p.t * p.dv);
        let mut lse_h = lse.as_deref_mut().map(|l| part_mut(l, h, p.t));
        let mut ent_h = entropy.as_deref_mut().map(|e| part_mut(e, h, p.t));
        o_h.fill(F::ZERO);
        let sink = p.sink(h);
        simd::dispatch(
            #[inline(always)]
            || {
                for (t0, rows) in tiles(p.t) {
                    let mut states = [QueryState::new(backend); TQ];
                    let states = states.get_mut(..rows).unwrap_or(&mut []);
                    let acc = o_h
                        .get_mut(t0 * p.dv..(t0 + rows) * p.dv)
                        .unwrap_or(&mut []);
                    Tile::of_queries(&p, &x, h, (t0, rows), keys).fold(
                        backend,
                        states,
                        acc,
                        want_entropy,
                    );
                    QueryState::finish_rows(
                        states,
                        acc,
                        p.dv,
                        t0,
                        |_| sink,
                        lse_h.as_deref_mut(),
                        ent_h.as_deref_mut(),
                    );
                }
            },
        );
    }
    Ok(())
}

/// PyTorch's name: [`attention`] writing only the output `o` (`heads × t × dv`).
///
/// # Errors
///
/// As [`attention`].
///
/// # Examples
///
/// ```
/// use attention_core::{scaled_dot_product_attention, Dims, Options, Qkv, backend::Poly};
/// // A single key: the output is its value.
/// let dims = Dims::new(1, 1, 1, 1, 3, 2);
/// let mut o = [0.0f64; 2];
/// scaled_dot_product_attention(Poly, &dims, Qkv::new(&[1.0, 2.0, 3.0], &[0.5, 0.5, 0.5], &[7.0, -1.0]),
///     &Options::new(), &mut o)?;
/// assert_eq!(o, [7.0, -1.0]);
/// # Ok::<(), attention_core::Error>(())
/// ```
pub fn scaled_dot_product_attention<F: Float, B: Backend<F>>(
    backend: B,
    dims: &Dims,
    x: Qkv<'_, F>,
    opts: &Options<'_, F>,
    o: &mut [F],
) -> Result<(), Error> {
    attention(backend, dims, x, opts, Output::new(o))
}

/// The partial pass over the keys `keys` only (split-K / flash-decoding): continues each
/// query's state (`states`, `heads × t`, start from [`QueryState::new`]) and output
/// accumulator (`acc`, `heads × t × dv`, start from zeros) with those keys, under every mask
/// and modifier of `opts` (the sink logits are folded in by [`attention_finish`]). Ranges may
/// be processed in any order and in separate buffers, then combined with [`merge_partials`]:
/// the result equals [`attention`] up to rounding.
///
/// # Errors
///
/// As [`attention`]; [`Error::KeyRange`] if `keys` is not within `0..s`;
/// [`Error::LengthMismatch`] if `acc` or `states` do not fit the dimensions.
///
/// # Examples
///
/// ```
/// use attention_core::{attention_finish, attention_partial, Dims, Options, Output, Qkv,
///     QueryState, backend::Poly};
/// let dims = Dims::new(1, 1, 1, 2, 1, 1);
/// let x = Qkv::new(&[1.0f32][..], &[1.0, 2.0][..], &[10.0, 20.0][..]);
/// let mut states = [QueryState::new(Poly)];
/// let mut acc = [0.0f32];
/// attention_partial(Poly, &dims, x, &Options::new(), 1..2, &mut acc, &mut states)?;
/// attention_partial(Poly, &dims, x, &Options::new(), 0..1, &mut acc, &mut states)?;
/// attention_finish(&dims, &Options::new(), &mut states, Output::new(&mut acc))?;
/// let p1 = 1.0 / (1.0 + (-1.0f32).exp()); // weight of key 1 (scores 1 and 2)
/// assert!((acc[0] - (10.0 * (1.0 - p1) + 20.0 * p1)).abs() < 1e-5);
/// # Ok::<(), attention_core::Error>(())
/// ```
pub fn attention_partial<F: Float, B: Backend<F>>(
    backend: B,
    dims: &Dims,
    x: Qkv<'_, F>,
    opts: &Options<'_, F>,
    keys: Range<usize>,
    acc: &mut [F],
    states: &mut [QueryState<F, B>],
) -> Result<(), Error> {
    let p = Plan::new(dims, &x, opts)?;
    if keys.start > keys.end || keys.end > p.s {
        return Err(Error::KeyRange {
            start: keys.start,
            end: keys.end,
            s: p.s,
        });
    }
    let ht = mul(p.heads, p.t)?;
    check_len("acc", mul(ht, p.dv)?, acc.len())?;
    check_len("states", ht, states.len())?;
    if p.t == 0 {
        return Ok(());
    }
    let keys = (keys.start as u64, keys.end as u64);
    for h in 0..p.heads {
        let acc_h = part_mut(acc, h, p.t * p.dv);
        let st_h = part_mut(states, h, p.t);
        simd::dispatch(
            #[inline(always)]
            || {
                for (t0, rows) in tiles(p.t) {
                    let st = st_h.get_mut(t0..t0 + rows).unwrap_or(&mut []);
                    let acc = acc_h
                        .get_mut(t0 * p.dv..(t0 + rows) * p.dv)
                        .unwrap_or(&mut []);
                    Tile::of_queries(&p, &x, h, (t0, rows), keys).fold(backend, st, acc, true);
                }
            },
        );
    }
    Ok(())
}

/// Combines two partial results over disjoint key ranges (each an output accumulator,
/// `heads × t × dv`, and its states, `heads × t`, from [`attention_partial`]): afterwards
/// `acc`/`states` hold the partial result over both ranges. Associative and commutative up to
/// rounding.
///
/// # Errors
///
/// [`Error::LengthMismatch`] if a buffer does not fit `dims`; [`Error::ShapeOverflow`].
///
/// # Examples
///
/// ```
/// use attention_core::{attention_finish, attention_partial, merge_partials, Dims, Options,
///     Output, Qkv, QueryState, backend::Poly};
/// let dims = Dims::new(1, 1, 1, 2, 1, 1);
/// let x = Qkv::new(&[1.0f32][..], &[1.0, 2.0][..], &[10.0, 20.0][..]);
/// let (mut sa, mut sb) = ([QueryState::new(Poly)], [QueryState::new(Poly)]);
/// let (mut a, mut b) = ([0.0f32], [0.0f32]);
/// attention_partial(Poly, &dims, x, &Options::new(), 0..1, &mut a, &mut sa)?; // e.g. on core 0
/// attention_partial(Poly, &dims, x, &Options::new(), 1..2, &mut b, &mut sb)?; // on core 1
/// merge_partials(&dims, &mut a, &mut sa, &b, &sb)?;
/// attention_finish(&dims, &Options::new(), &mut sa, Output::new(&mut a))?;
/// assert!((a[0] - 17.310_586).abs() < 1e-4);
/// # Ok::<(), attention_core::Error>(())
/// ```
pub fn merge_partials<F: Float, B: Backend<F>>(
    dims: &Dims,
    acc: &mut [F],
    states: &mut [QueryState<F, B>],
    other_acc: &[F],
    other_states: &[QueryState<F, B>],
) -> Result<(), Error> {
    let ht = mul(dims.heads, dims.t)?;
    let n = mul(ht, dims.dv)?;
    check_len("acc", n, acc.len())?;
    check_len("other_acc", n, other_acc.len())?;
    check_len("states", ht, states.len())?;
    check_len("other_states", ht, other_states.len())?;
    if dims.dv == 0 {
        return Err(Error::ZeroDim { what: "dv" });
    }
    for (((st, a), ost), oa) in states
        .iter_mut()
        .zip(chunks_mut(acc, dims.dv.max(1)))
        .zip(other_states)
        .zip(chunks(other_acc, dims.dv.max(1)))
    {
        st.merge(a, ost, oa)?;
    }
    Ok(())
}

/// Finishes partial results: folds in the sink logits of `opts` (if any), then writes the
/// outputs. `out.o` holds the output accumulators on entry (`heads × t × dv`, from
/// [`attention_partial`] / [`merge_partials`]) and the attention output on return; `lse` and
/// `entropy` as in [`attention`]. Only the sink logits of `opts` are used.
///
/// # Errors
///
/// [`Error::LengthMismatch`] if a buffer does not fit `dims`; [`Error::ZeroDim`].
///
/// # Examples
///
/// ```
/// use attention_core::{attention_finish, Dims, Options, Output, QueryState, backend::Poly};
/// // A query that saw no key, with a sink logit: all the mass is on the sink.
/// let dims = Dims::new(1, 1, 1, 0, 1, 1);
/// let sink = [2.0f32];
/// let (mut o, mut lse) = ([0.0f32], [0.0f32]);
/// let mut states = [QueryState::new(Poly)];
/// attention_finish(&dims, &Options::new().with_sink_logits(&sink), &mut states,
///     Output::new(&mut o).with_lse(&mut lse))?;
/// assert_eq!((o[0], lse[0]), (0.0, 2.0));
/// # Ok::<(), attention_core::Error>(())
/// ```
pub fn attention_finish<F: Float, B: Backend<F>>(
    dims: &Dims,
    opts: &Options<'_, F>,
    states: &mut [QueryState<F, B>],
    out: Output<'_, F>,
) -> Result<(), Error> {
    check_heads(dims.heads, dims.kv_heads)?;
    if dims.dv == 0 {
        return Err(Error::ZeroDim { what: "dv" });
    }
    let ht = mul(dims.heads, dims.t)?;
    check_len("states", ht, states.len())?;
    check_output(&out, ht, dims.dv)?;
    if let Some(z) = opts.sink_logits() {
        check_len("sink_logits", dims.heads, z.len())?;
    }
    let Output { o, lse, entropy } = out;
    QueryState::finish_rows(
        states,
        o,
        dims.dv,
        0,
        |i| {
            let h = i.checked_div(dims.t).unwrap_or(0);
            opts.sink_logits().and_then(|z| z.get(h)).copied()
        },
        lse,
        entropy,
    );
    Ok(())
}
