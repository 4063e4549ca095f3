//! The softmax-core cases: every public function of the crate, run over the suite's rows,
//! batches and argument sweeps, with the results (and the errors of invalid calls) digested.
//!
//! Functions generic over `<F, B>` become one case per (element type, backend) pair, functions
//! generic over `<F>` one case per element type; the table is in the crate root.

use softmax_core::backend::Backend;
use softmax_core::{self as sm, array, rows, Error, LogSumExp, Mask, Rows};

use crate::gen::{fill, fill_bias, fill_keep, Dist, Elem, RowSpec, BATCH_DISTS, CAP, ROWS};
use crate::Ctx;

// ------------------------------------------------------------------------------------------------
// Shared drivers
// ------------------------------------------------------------------------------------------------

/// Runs `f` on every row of [`ROWS`], freshly drawn from the case's generator. The row is passed
/// mutably so a case can reuse its buffer once it has read it (stack is scarce on the Cortex-M0).
fn each_row<F: Elem>(ctx: &mut Ctx, mut f: impl FnMut(&mut Ctx, RowSpec, &mut [F])) {
    let mut buf = [F::ZERO; CAP];
    for &spec in ROWS {
        let x = &mut buf[..spec.len];
        fill(&mut ctx.rng, spec.dist, x);
        f(ctx, spec, x);
    }
}

/// Calls `f` in a stack frame of its own. When everything is inlined, LLVM may give a function
/// that calls several kernels a single frame holding all their scratch arrays at once, so the
/// case's stack use becomes the sum of its kernels' rather than the maximum (the Cortex-M0 has
/// 16 KiB of RAM). Wrap every kernel call of a case in it.
#[inline(never)]
pub(crate) fn own_frame<R>(f: impl FnOnce() -> R) -> R {
    f()
}

/// Capacity of the batch buffers: a batched case holds up to six of them (input, mask, bias,
/// output, upstream and downstream gradient).
const BATCH_CAP: usize = 66;

/// Most rows in a batch (capacity of the per-row outputs).
const MAX_ROWS: usize = 5;

/// `(n, rows)` of the batches: every batch fits in [`BATCH_CAP`] and [`MAX_ROWS`].
const BATCHES: &[(usize, usize)] = &[(1, 5), (3, 4), (16, 3), (17, 3), (20, 3), (33, 2), (66, 1)];

/// Runs `f` on every batch of [`BATCHES`] (rows drawn from [`BATCH_DISTS`] in turn), at
/// temperatures 0.5 (shift first), 1 and 2 (divide first), each without a mask, with a random
/// keep-mask and with a random additive mask.
fn each_batch<F: Elem>(ctx: &mut Ctx, mut f: impl FnMut(&mut Ctx, &[F], &Rows<'_, F>)) {
    let mut x = [F::ZERO; BATCH_CAP];
    let mut keep = [false; BATCH_CAP];
    let mut bias = [F::ZERO; BATCH_CAP];
    let mut k = 0;
    for &(n, r) in BATCHES {
        let len = n * r;
        for row in x[..len].chunks_exact_mut(n) {
            fill(&mut ctx.rng, BATCH_DISTS[k % BATCH_DISTS.len()], row);
            k += 1;
        }
        fill_keep(&mut ctx.rng, &mut keep[..len]);
        fill_bias(&mut ctx.rng, &mut bias[..len]);
        for t in [0.5, 1.0, 2.0].map(F::from_f64) {
            let plain = Rows::new(n).with_temperature(t);
            for spec in [
                plain,
                plain.with_keep(&keep[..len]),
                plain.with_bias(&bias[..len]),
            ] {
                feed_spec(ctx, &spec);
                f(ctx, &x[..len], &spec);
            }
        }
    }
}

/// Feeds everything a [`Rows`] spec reports about itself.
fn feed_spec<F: Elem>(ctx: &mut Ctx, spec: &Rows<'_, F>) {
    ctx.feed(&spec.n());
    ctx.feed(&spec.temperature());
    match spec.mask() {
        Mask::None => ctx.feed(&0u8),
        Mask::Keep(k) => {
            ctx.feed(&1u8);
            ctx.feed(k);
        }
        Mask::Bias(b) => {
            ctx.feed(&2u8);
            ctx.feed(b);
        }
    }
}

/// Valid temperatures: shift-first (τ < 1), τ = 1, divide-first (τ > 1), and the extremes of
/// the type (the smallest subnormal and MAX).
fn temps<F: Elem>() -> [F; 7] {
    [
        F::from_f64(0.05),
        F::from_f64(0.7),
        F::ONE,
        F::from_f64(1.5),
        F::from_f64(40.0),
        F::SUBNORMAL,
        F::MAX,
    ]
}

/// Temperatures that must be rejected.
fn bad_temps<F: Elem>() -> [F; 6] {
    [
        F::ZERO,
        -F::ZERO,
        -F::ONE,
        F::INFINITY,
        F::NEG_INFINITY,
        F::NAN,
    ]
}

fn row3<F: Elem>() -> [F; 3] {
    [F::ONE, F::TWO, F::HALF]
}

/// Upstream gradients for the VJPs: uniform on [−1, 1).
fn fill_grad<F: Elem>(ctx: &mut Ctx, dy: &mut [F]) {
    for g in dy.iter_mut() {
        *g = F::from_f64(ctx.rng.range(-1.0, 1.0));
    }
}

/// The structural errors of an `(x, y)` function: empty, `y` too short, `y` too long; then one
/// valid call on a short row.
fn xy_errors<F: Elem>(ctx: &mut Ctx, mut call: impl FnMut(&[F], &mut [F]) -> Result<(), Error>) {
    let x = row3::<F>();
    let mut y = [F::ZERO; 4];
    ctx.feed(&own_frame(|| call(&[], &mut [])));
    ctx.feed(&own_frame(|| call(&x, &mut y[..2])));
    ctx.feed(&own_frame(|| call(&x, &mut y[..4])));
    ctx.feed(&own_frame(|| call(&x, &mut y[..3])));
    ctx.feed(&y[..3]);
}

/// The structural errors of a VJP `(y, dy, dx)`: empty, `dy` or `dx` of the wrong length.
fn vjp_errors<F: Elem>(
    ctx: &mut Ctx,
    mut call: impl FnMut(&[F], &[F], &mut [F]) -> Result<(), Error>,
) {
    let y = [F::HALF, F::HALF, F::ZERO];
    let dy = [F::ONE, F::ZERO, F::TWO, F::ONE];
    let mut dx = [F::ZERO; 4];
    ctx.feed(&own_frame(|| call(&[], &[], &mut [])));
    ctx.feed(&own_frame(|| call(&y, &dy[..2], &mut dx[..3])));
    ctx.feed(&own_frame(|| call(&y, &dy, &mut dx[..3])));
    ctx.feed(&own_frame(|| call(&y, &dy[..3], &mut dx[..2])));
    ctx.feed(&own_frame(|| call(&y, &dy[..3], &mut dx)));
    ctx.feed(&own_frame(|| call(&y, &dy[..3], &mut dx[..3])));
    ctx.feed(&dx[..3]);
}

// ------------------------------------------------------------------------------------------------
// Single-row functions
// ------------------------------------------------------------------------------------------------

/// `softmax` over every row.
pub(crate) fn softmax<F: Elem, B: Backend<F>>(ctx: &mut Ctx) {
    each_row(ctx, |ctx, _, x: &mut [F]| {
        let mut y = [F::ZERO; CAP];
        let y = &mut y[..x.len()];
        ctx.feed(&own_frame(|| sm::softmax(B::default(), x, y)));
        ctx.feed(&*y);
    });
    xy_errors(ctx, |x, y| sm::softmax(B::default(), x, y));
}

/// `softmax_with_temperature` at every valid temperature, and the invalid ones.
pub(crate) fn softmax_with_temperature<F: Elem, B: Backend<F>>(ctx: &mut Ctx) {
    each_row(ctx, |ctx, _, x: &mut [F]| {
        let mut y = [F::ZERO; CAP];
        let y = &mut y[..x.len()];
        for t in temps::<F>() {
            ctx.feed(&own_frame(|| {
                sm::softmax_with_temperature(B::default(), x, t, y)
            }));
            ctx.feed(&*y);
        }
    });
    let x = row3::<F>();
    let mut y = [F::ZERO; 3];
    for t in bad_temps::<F>() {
        ctx.feed(&own_frame(|| {
            sm::softmax_with_temperature(B::default(), &x, t, &mut y)
        }));
    }
    xy_errors(ctx, |x, y| {
        sm::softmax_with_temperature(B::default(), x, F::from_f64(0.3), y)
    });
}

/// `softmax_in_place` and `log_softmax_in_place`.
pub(crate) fn in_place<F: Elem, B: Backend<F>>(ctx: &mut Ctx) {
    each_row(ctx, |ctx, _, x: &mut [F]| {
        let mut y = [F::ZERO; CAP];
        let y = &mut y[..x.len()];
        y.copy_from_slice(x);
        ctx.feed(&own_frame(|| sm::softmax_in_place(B::default(), y)));
        ctx.feed(&*y);
        y.copy_from_slice(x);
        ctx.feed(&own_frame(|| sm::log_softmax_in_place(B::default(), y)));
        ctx.feed(&*y);
    });
    ctx.feed(&own_frame(|| {
        sm::softmax_in_place::<F, B>(B::default(), &mut [])
    }));
    ctx.feed(&own_frame(|| {
        sm::log_softmax_in_place::<F, B>(B::default(), &mut [])
    }));
}

/// `log_softmax` over every row.
pub(crate) fn log_softmax<F: Elem, B: Backend<F>>(ctx: &mut Ctx) {
    each_row(ctx, |ctx, _, x: &mut [F]| {
        let mut y = [F::ZERO; CAP];
        let y = &mut y[..x.len()];
        ctx.feed(&own_frame(|| sm::log_softmax(B::default(), x, y)));
        ctx.feed(&*y);
    });
    xy_errors(ctx, |x, y| sm::log_softmax(B::default(), x, y));
}

/// `logsumexp` over every row.
pub(crate) fn logsumexp<F: Elem, B: Backend<F>>(ctx: &mut Ctx) {
    each_row(ctx, |ctx, _, x: &mut [F]| {
        ctx.feed(&own_frame(|| sm::logsumexp(B::default(), x)));
    });
    ctx.feed(&own_frame(|| sm::logsumexp::<F, B>(B::default(), &[])));
}

/// `entropy` at every valid temperature, and the invalid ones.
pub(crate) fn entropy<F: Elem, B: Backend<F>>(ctx: &mut Ctx) {
    each_row(ctx, |ctx, _, x: &mut [F]| {
        for t in temps::<F>() {
            ctx.feed(&own_frame(|| sm::entropy(B::default(), x, t)));
        }
    });
    for t in bad_temps::<F>() {
        ctx.feed(&own_frame(|| sm::entropy(B::default(), &row3::<F>(), t)));
    }
    ctx.feed(&own_frame(|| {
        sm::entropy::<F, B>(B::default(), &[], F::ONE)
    }));
}

/// `kl_divergence` between each row and a second row of the same kind, and of a row with
/// itself.
pub(crate) fn kl_divergence<F: Elem, B: Backend<F>>(ctx: &mut Ctx) {
    each_row(ctx, |ctx, spec, p: &mut [F]| {
        let mut q = [F::ZERO; CAP];
        let q = &mut q[..p.len()];
        fill(&mut ctx.rng, spec.dist, q);
        ctx.feed(&own_frame(|| sm::kl_divergence(B::default(), p, q)));
        ctx.feed(&own_frame(|| sm::kl_divergence(B::default(), q, p)));
        ctx.feed(&own_frame(|| sm::kl_divergence(B::default(), p, p)));
    });
    let x = row3::<F>();
    ctx.feed(&own_frame(|| {
        sm::kl_divergence::<F, B>(B::default(), &[], &[])
    }));
    ctx.feed(&own_frame(|| sm::kl_divergence(B::default(), &x, &x[..2])));
    ctx.feed(&own_frame(|| sm::kl_divergence(B::default(), &x[..2], &x)));
}

/// `softmax_vjp` from the softmax of every row.
pub(crate) fn softmax_vjp<F: Elem, B: Backend<F>>(ctx: &mut Ctx) {
    each_row(ctx, |ctx, _, x: &mut [F]| {
        let n = x.len();
        let (mut y, mut dx) = ([F::ZERO; CAP], [F::ZERO; CAP]);
        let (y, dx) = (&mut y[..n], &mut dx[..n]);
        ctx.feed(&own_frame(|| sm::softmax(B::default(), x, y)));
        let dy = x; // the logits are no longer needed: reuse their buffer
        fill_grad(ctx, dy);
        ctx.feed(&own_frame(|| sm::softmax_vjp(y, dy, dx)));
        ctx.feed(&*dx);
    });
    vjp_errors::<F>(ctx, |y, dy, dx| sm::softmax_vjp(y, dy, dx));
}

/// `log_softmax_vjp` from the log_softmax of every row.
pub(crate) fn log_softmax_vjp<F: Elem, B: Backend<F>>(ctx: &mut Ctx) {
    each_row(ctx, |ctx, _, x: &mut [F]| {
        let n = x.len();
        let (mut y, mut dx) = ([F::ZERO; CAP], [F::ZERO; CAP]);
        let (y, dx) = (&mut y[..n], &mut dx[..n]);
        ctx.feed(&own_frame(|| sm::log_softmax(B::default(), x, y)));
        let dy = x; // the logits are no longer needed: reuse their buffer
        fill_grad(ctx, dy);
        ctx.feed(&own_frame(|| sm::log_softmax_vjp(B::default(), y, dy, dx)));
        ctx.feed(&*dx);
    });
    vjp_errors(ctx, |y, dy, dx| {
        sm::log_softmax_vjp(B::default(), y, dy, dx)
    });
}

/// `masked_softmax` with a random mask, nothing kept, everything kept, and only the finite
/// entries kept (masking hides NaN and `+inf`).
pub(crate) fn masked_softmax<F: Elem, B: Backend<F>>(ctx: &mut Ctx) {
    each_row(ctx, |ctx, _, x: &mut [F]| {
        let n = x.len();
        let (mut y, mut keep) = ([F::ZERO; CAP], [false; CAP]);
        let (y, keep) = (&mut y[..n], &mut keep[..n]);
        for kind in 0..4 {
            match kind {
                0 => fill_keep(&mut ctx.rng, keep),
                1 => keep.fill(false),
                2 => keep.fill(true),
                _ => {
                    for (k, v) in keep.iter_mut().zip(x.iter()) {
                        *k = v.is_finite();
                    }
                }
            }
            ctx.feed(&own_frame(|| sm::masked_softmax(B::default(), x, keep, y)));
            ctx.feed(&*y);
        }
    });
    let x = row3::<F>();
    let keep = [true, false, true, true];
    let mut y = [F::ZERO; 3];
    ctx.feed(&own_frame(|| {
        sm::masked_softmax(B::default(), &x, &keep, &mut y)
    }));
    ctx.feed(&own_frame(|| {
        sm::masked_softmax(B::default(), &x, &keep[..2], &mut y)
    }));
    xy_errors(ctx, |x, y| {
        sm::masked_softmax(B::default(), x, &keep[..x.len()], y)
    });
}

/// `softmax_with_bias` with a random additive mask (0, finite, `-inf`, and the odd `+inf`).
pub(crate) fn softmax_with_bias<F: Elem, B: Backend<F>>(ctx: &mut Ctx) {
    each_row(ctx, |ctx, _, x: &mut [F]| {
        let n = x.len();
        let (mut y, mut bias) = ([F::ZERO; CAP], [F::ZERO; CAP]);
        let (y, bias) = (&mut y[..n], &mut bias[..n]);
        fill_bias(&mut ctx.rng, bias);
        ctx.feed(&own_frame(|| {
            sm::softmax_with_bias(B::default(), x, bias, y)
        }));
        ctx.feed(&*y);
    });
    let x = row3::<F>();
    let bias = [F::ZERO, F::NEG_INFINITY, F::ONE, F::ZERO];
    let mut y = [F::ZERO; 3];
    ctx.feed(&own_frame(|| {
        sm::softmax_with_bias(B::default(), &x, &bias, &mut y)
    }));
    ctx.feed(&own_frame(|| {
        sm::softmax_with_bias(B::default(), &x, &bias[..2], &mut y)
    }));
    xy_errors(ctx, |x, y| {
        sm::softmax_with_bias(B::default(), x, &bias[..x.len()], y)
    });
}

/// `gumbel_softmax` with noise from the generator, soft and hard, and every kind of invalid
/// noise.
pub(crate) fn gumbel_softmax<F: Elem, B: Backend<F>>(ctx: &mut Ctx) {
    each_row(ctx, |ctx, _, x: &mut [F]| {
        let n = x.len();
        let (mut y, mut u) = ([F::ZERO; CAP], [F::ZERO; CAP]);
        let (y, u) = (&mut y[..n], &mut u[..n]);
        for v in u.iter_mut() {
            *v = F::open_unit(ctx.rng.next_u64());
        }
        for (t, hard) in [(0.5, false), (1.0, false), (2.0, true), (1.0, true)] {
            let t = F::from_f64(t);
            ctx.feed(&own_frame(|| {
                sm::gumbel_softmax(B::default(), x, u, t, hard, y)
            }));
            ctx.feed(&*y);
        }
    });
    let x = row3::<F>();
    let mut y = [F::ZERO; 3];
    let good = [F::HALF, F::from_f64(0.25), F::from_f64(0.75)];
    for bad in [F::ZERO, F::ONE, F::NAN, -F::HALF, F::INFINITY] {
        let u = [F::HALF, bad, F::HALF];
        ctx.feed(&own_frame(|| {
            sm::gumbel_softmax(B::default(), &x, &u, F::ONE, false, &mut y)
        }));
    }
    for t in bad_temps::<F>() {
        ctx.feed(&own_frame(|| {
            sm::gumbel_softmax(B::default(), &x, &good, t, true, &mut y)
        }));
    }
    ctx.feed(&own_frame(|| {
        sm::gumbel_softmax(B::default(), &x, &good[..2], F::ONE, false, &mut y)
    }));
    xy_errors(ctx, |x, y| {
        sm::gumbel_softmax(B::default(), x, &good[..x.len()], F::ONE, false, y)
    });
}

/// `temperature_for_entropy` for targets inside (0.1, 0.5 and 0.9 of `ln n`) and outside the
/// reachable range, with the entropy at the returned τ. Rows up to 40 long (the bisection runs
/// the entropy kernel about a hundred times).
pub(crate) fn temperature_for_entropy<F: Elem, B: Backend<F>>(ctx: &mut Ctx) {
    each_row(ctx, |ctx, _, x: &mut [F]| {
        if x.len() > 40 {
            return;
        }
        let ln_n = B::ln(F::from_usize(x.len()));
        let targets = [
            ln_n * F::from_f64(0.1),
            ln_n * F::HALF,
            ln_n * F::from_f64(0.9),
            ln_n,
            -F::ONE,
            F::NAN,
            F::INFINITY,
        ];
        for target in targets {
            let r = own_frame(|| sm::temperature_for_entropy(B::default(), x, target));
            ctx.feed(&r);
            if let Ok(tau) = r {
                ctx.feed(&own_frame(|| sm::entropy(B::default(), x, tau)));
            }
        }
    });
    ctx.feed(&own_frame(|| {
        sm::temperature_for_entropy::<F, B>(B::default(), &[], F::HALF)
    }));
}

/// Everything a [`LogSumExp`] state reports.
fn feed_state<F: Elem, B: Backend<F>>(ctx: &mut Ctx, s: &LogSumExp<F, B>) {
    ctx.feed(&s.max());
    ctx.feed(&s.scaled_sum());
    ctx.feed(&s.ln_sum());
    ctx.feed(&s.finish());
}

/// The online state: values pushed one by one, as a slice, as three blocks merged in three
/// orders, merged with empty states; `prob`/`log_prob` of every value (and of one above the
/// max); the empty and the poisoned state.
pub(crate) fn lse_state<F: Elem, B: Backend<F>>(ctx: &mut Ctx) {
    let of = |xs: &[F]| {
        let mut s = LogSumExp::new(B::default());
        s.push_slice(xs);
        s
    };
    each_row(ctx, |ctx, _, x: &mut [F]| {
        let mut one = LogSumExp::new(B::default());
        for &v in x.iter() {
            one.push(v);
        }
        feed_state(ctx, &one);
        let whole = of(x);
        feed_state(ctx, &whole);

        let (a, rest) = x.split_at(x.len() / 3);
        let (b, c) = rest.split_at(rest.len() / 2);
        let (sa, sb, sc) = (of(a), of(b), of(c));
        let mut left = sa;
        left.merge(&sb);
        left.merge(&sc);
        feed_state(ctx, &left);
        let mut bc = sb;
        bc.merge(&sc);
        let mut right = sa;
        right.merge(&bc);
        feed_state(ctx, &right);
        let mut rev = sc;
        rev.merge(&sb);
        rev.merge(&sa);
        feed_state(ctx, &rev);
        // Slice state continued value by value.
        let mut mixed = sa;
        for &v in rest {
            mixed.push(v);
        }
        feed_state(ctx, &mixed);

        let empty = LogSumExp::<F, B>::new(B::default());
        let mut e = empty;
        e.merge(&whole);
        feed_state(ctx, &e);
        let mut w = whole;
        w.merge(&empty);
        w.push_slice(&[]);
        feed_state(ctx, &w);

        for &v in x.iter() {
            ctx.feed(&whole.prob(v));
            ctx.feed(&whole.log_prob(v));
        }
        let above = whole.max() + F::ONE;
        ctx.feed(&whole.prob(above));
        ctx.feed(&whole.log_prob(above));
    });
    let empty = LogSumExp::<F, B>::new(B::default());
    feed_state(ctx, &empty);
    ctx.feed(&empty.prob(F::ZERO));
    ctx.feed(&empty.log_prob(F::ZERO));
    let mut poisoned = empty;
    poisoned.push(F::ONE);
    poisoned.push(F::NAN);
    poisoned.push(F::TWO);
    feed_state(ctx, &poisoned);
    ctx.feed(&poisoned.prob(F::ONE));
    let mut p2 = of(&row3::<F>());
    p2.merge(&poisoned);
    feed_state(ctx, &p2);
}

/// `sparsemax` over every row.
pub(crate) fn sparsemax<F: Elem>(ctx: &mut Ctx) {
    each_row(ctx, |ctx, _, x: &mut [F]| {
        let mut y = [F::ZERO; CAP];
        let y = &mut y[..x.len()];
        ctx.feed(&own_frame(|| sm::sparsemax(x, y)));
        ctx.feed(&*y);
    });
    xy_errors::<F>(ctx, |x, y| sm::sparsemax(x, y));
}

/// `sparsemax_vjp` from the sparsemax of every row.
pub(crate) fn sparsemax_vjp<F: Elem>(ctx: &mut Ctx) {
    each_row(ctx, |ctx, _, x: &mut [F]| {
        let n = x.len();
        let (mut y, mut dx) = ([F::ZERO; CAP], [F::ZERO; CAP]);
        let (y, dx) = (&mut y[..n], &mut dx[..n]);
        ctx.feed(&own_frame(|| sm::sparsemax(x, y)));
        let dy = x; // the logits are no longer needed: reuse their buffer
        fill_grad(ctx, dy);
        ctx.feed(&own_frame(|| sm::sparsemax_vjp(y, dy, dx)));
        ctx.feed(&*dx);
    });
    vjp_errors::<F>(ctx, |y, dy, dx| sm::sparsemax_vjp(y, dy, dx));
}

/// `argmax` and `hardmax` over every row.
pub(crate) fn argmax_hardmax<F: Elem>(ctx: &mut Ctx) {
    each_row(ctx, |ctx, _, x: &mut [F]| {
        ctx.feed(&own_frame(|| sm::argmax(x)));
        let mut y = [F::ZERO; CAP];
        let y = &mut y[..x.len()];
        ctx.feed(&own_frame(|| sm::hardmax(x, y)));
        ctx.feed(&*y);
    });
    ctx.feed(&own_frame(|| sm::argmax::<F>(&[])));
    xy_errors::<F>(ctx, |x, y| sm::hardmax(x, y));
}

// ------------------------------------------------------------------------------------------------
// Batched rows
// ------------------------------------------------------------------------------------------------

/// The structural errors of a batched `(x, y, spec)` function: `n = 0`, a ragged input, `y`,
/// keep-mask or bias of the wrong length, every invalid temperature; and the valid empty batch.
fn rows_xy_errors<F: Elem>(
    ctx: &mut Ctx,
    mut call: impl FnMut(&[F], &mut [F], &Rows<'_, F>) -> Result<(), Error>,
) {
    let x = [F::ONE, F::TWO, F::HALF, F::ZERO, F::ONE, F::TWO];
    let mut y = [F::ZERO; 7];
    let keep = [true; 7];
    let bias = [F::ZERO; 7];
    ctx.feed(&own_frame(|| call(&x, &mut y[..6], &Rows::new(0))));
    ctx.feed(&own_frame(|| call(&x[..5], &mut y[..5], &Rows::new(2))));
    ctx.feed(&own_frame(|| call(&x, &mut y[..5], &Rows::new(3))));
    ctx.feed(&own_frame(|| {
        call(&x, &mut y[..6], &Rows::new(3).with_keep(&keep[..5]))
    }));
    ctx.feed(&own_frame(|| {
        call(&x, &mut y[..6], &Rows::new(3).with_bias(&bias))
    }));
    for t in bad_temps::<F>() {
        ctx.feed(&own_frame(|| {
            call(&x, &mut y[..6], &Rows::new(3).with_temperature(t))
        }));
    }
    ctx.feed(&own_frame(|| call(&[], &mut [], &Rows::new(3))));
    ctx.feed(&own_frame(|| call(&x, &mut y[..6], &Rows::new(3))));
    ctx.feed(&y[..6]);
}

/// As [`rows_xy_errors`] for functions with one output per row.
fn rows_reduce_errors<F: Elem>(
    ctx: &mut Ctx,
    mut call: impl FnMut(&[F], &mut [F], &Rows<'_, F>) -> Result<(), Error>,
) {
    let x = [F::ONE, F::TWO, F::HALF, F::ZERO, F::ONE, F::TWO];
    let mut out = [F::ZERO; 3];
    let keep = [true; 7];
    ctx.feed(&own_frame(|| call(&x, &mut out[..2], &Rows::new(0))));
    ctx.feed(&own_frame(|| call(&x[..5], &mut out[..2], &Rows::new(3))));
    ctx.feed(&own_frame(|| call(&x, &mut out[..3], &Rows::new(3))));
    ctx.feed(&own_frame(|| call(&x, &mut out[..1], &Rows::new(3))));
    ctx.feed(&own_frame(|| {
        call(&x, &mut out[..2], &Rows::new(3).with_keep(&keep))
    }));
    for t in bad_temps::<F>() {
        ctx.feed(&own_frame(|| {
            call(&x, &mut out[..2], &Rows::new(3).with_temperature(t))
        }));
    }
    ctx.feed(&own_frame(|| call(&[], &mut [], &Rows::new(3))));
    ctx.feed(&own_frame(|| call(&x, &mut out[..2], &Rows::new(3))));
    ctx.feed(&out[..2]);
}

/// The structural errors of a batched VJP `(y, dy, dx, n, τ)`.
fn rows_vjp_errors<F: Elem>(
    ctx: &mut Ctx,
    mut call: impl FnMut(&[F], &[F], &mut [F], usize, F) -> Result<(), Error>,
) {
    let y = [F::HALF, F::HALF, F::ONE, F::ZERO];
    let dy = [F::ONE, F::ZERO, F::TWO, F::ONE, F::ONE];
    let mut dx = [F::ZERO; 5];
    ctx.feed(&own_frame(|| call(&y, &dy[..4], &mut dx[..4], 0, F::ONE)));
    ctx.feed(&own_frame(|| {
        call(&y[..3], &dy[..3], &mut dx[..3], 2, F::ONE)
    }));
    ctx.feed(&own_frame(|| call(&y, &dy, &mut dx[..4], 2, F::ONE)));
    ctx.feed(&own_frame(|| call(&y, &dy[..4], &mut dx, 2, F::ONE)));
    for t in bad_temps::<F>() {
        ctx.feed(&own_frame(|| call(&y, &dy[..4], &mut dx[..4], 2, t)));
    }
    ctx.feed(&own_frame(|| call(&[], &[], &mut [], 2, F::ONE)));
    ctx.feed(&own_frame(|| {
        call(&y, &dy[..4], &mut dx[..4], 2, F::from_f64(0.5))
    }));
    ctx.feed(&dx[..4]);
}

/// `rows::softmax` over every batch, mask and temperature.
pub(crate) fn rows_softmax<F: Elem, B: Backend<F>>(ctx: &mut Ctx) {
    each_batch(ctx, |ctx, x: &[F], spec| {
        let mut y = [F::ZERO; BATCH_CAP];
        let y = &mut y[..x.len()];
        ctx.feed(&own_frame(|| rows::softmax(B::default(), x, y, spec)));
        ctx.feed(&*y);
    });
    rows_xy_errors(ctx, |x, y, s| rows::softmax(B::default(), x, y, s));
}

/// `rows::log_softmax` over every batch, mask and temperature.
pub(crate) fn rows_log_softmax<F: Elem, B: Backend<F>>(ctx: &mut Ctx) {
    each_batch(ctx, |ctx, x: &[F], spec| {
        let mut y = [F::ZERO; BATCH_CAP];
        let y = &mut y[..x.len()];
        ctx.feed(&own_frame(|| rows::log_softmax(B::default(), x, y, spec)));
        ctx.feed(&*y);
    });
    rows_xy_errors(ctx, |x, y, s| rows::log_softmax(B::default(), x, y, s));
}

/// `rows::softmax_in_place` and `rows::log_softmax_in_place` (which take no mask) over every
/// batch and temperature.
pub(crate) fn rows_in_place<F: Elem, B: Backend<F>>(ctx: &mut Ctx) {
    each_batch(ctx, |ctx, x: &[F], spec| {
        if !matches!(spec.mask(), Mask::None) {
            return;
        }
        let (n, t) = (spec.n(), spec.temperature());
        let mut y = [F::ZERO; BATCH_CAP];
        let y = &mut y[..x.len()];
        y.copy_from_slice(x);
        ctx.feed(&own_frame(|| {
            rows::softmax_in_place(B::default(), y, &Rows::new(n).with_temperature(t))
        }));
        ctx.feed(&*y);
        y.copy_from_slice(x);
        ctx.feed(&own_frame(|| {
            rows::log_softmax_in_place(B::default(), y, &Rows::new(n).with_temperature(t))
        }));
        ctx.feed(&*y);
    });
    let mut xy = [F::ONE, F::TWO, F::HALF, F::ZERO, F::ONE];
    for (n, t) in [
        (0, F::ONE),
        (2, F::ONE),
        (5, F::ZERO),
        (5, F::NAN),
        (5, F::INFINITY),
    ] {
        ctx.feed(&own_frame(|| {
            rows::softmax_in_place(B::default(), &mut xy, &Rows::new(n).with_temperature(t))
        }));
        ctx.feed(&own_frame(|| {
            rows::log_softmax_in_place(B::default(), &mut xy, &Rows::new(n).with_temperature(t))
        }));
    }
    ctx.feed(&own_frame(|| {
        rows::softmax_in_place::<F, B>(
            B::default(),
            &mut [],
            &Rows::new(3).with_temperature(F::ONE),
        )
    }));
    ctx.feed(&xy);
}

/// `rows::logsumexp` over every batch, mask and temperature.
pub(crate) fn rows_logsumexp<F: Elem, B: Backend<F>>(ctx: &mut Ctx) {
    each_batch(ctx, |ctx, x: &[F], spec| {
        let mut out = [F::ZERO; MAX_ROWS];
        let out = &mut out[..x.len() / spec.n()];
        ctx.feed(&own_frame(|| rows::logsumexp(B::default(), x, out, spec)));
        ctx.feed(&*out);
    });
    rows_reduce_errors(ctx, |x, o, s| rows::logsumexp(B::default(), x, o, s));
}

/// `rows::entropy` over every batch, mask and temperature.
pub(crate) fn rows_entropy<F: Elem, B: Backend<F>>(ctx: &mut Ctx) {
    each_batch(ctx, |ctx, x: &[F], spec| {
        let mut out = [F::ZERO; MAX_ROWS];
        let out = &mut out[..x.len() / spec.n()];
        ctx.feed(&own_frame(|| rows::entropy(B::default(), x, out, spec)));
        ctx.feed(&*out);
    });
    rows_reduce_errors(ctx, |x, o, s| rows::entropy(B::default(), x, o, s));
}

/// `rows::kl_divergence` between every batch and a second batch of the same shape.
pub(crate) fn rows_kl_divergence<F: Elem, B: Backend<F>>(ctx: &mut Ctx) {
    each_batch(ctx, |ctx, p: &[F], spec| {
        let n = spec.n();
        let (mut q, mut out) = ([F::ZERO; BATCH_CAP], [F::ZERO; MAX_ROWS]);
        let (q, out) = (&mut q[..p.len()], &mut out[..p.len() / n]);
        for (i, row) in q.chunks_exact_mut(n).enumerate() {
            fill(&mut ctx.rng, BATCH_DISTS[(i + 2) % BATCH_DISTS.len()], row);
        }
        ctx.feed(&own_frame(|| {
            rows::kl_divergence(B::default(), p, q, out, spec)
        }));
        ctx.feed(&*out);
        ctx.feed(&own_frame(|| {
            rows::kl_divergence(B::default(), p, p, out, spec)
        }));
        ctx.feed(&*out);
    });
    rows_reduce_errors(ctx, |p, o, s| rows::kl_divergence(B::default(), p, p, o, s));
    let p = [F::ONE; 4];
    let mut out = [F::ZERO; 2];
    ctx.feed(&own_frame(|| {
        rows::kl_divergence(B::default(), &p, &p[..3], &mut out, &Rows::new(2))
    }));
}

/// `rows::gumbel_softmax`, soft and hard, over every batch, mask and temperature, with noise
/// from the generator; then invalid noise and a noise buffer of the wrong length.
pub(crate) fn rows_gumbel_softmax<F: Elem, B: Backend<F>>(ctx: &mut Ctx) {
    each_batch(ctx, |ctx, x: &[F], spec| {
        let (mut u, mut y) = ([F::ZERO; BATCH_CAP], [F::ZERO; BATCH_CAP]);
        let (u, y) = (&mut u[..x.len()], &mut y[..x.len()]);
        for v in u.iter_mut() {
            *v = F::open_unit(ctx.rng.next_u64());
        }
        for hard in [false, true] {
            ctx.feed(&own_frame(|| {
                rows::gumbel_softmax(B::default(), x, u, hard, y, spec)
            }));
            ctx.feed(&*y);
        }
    });
    let good = [F::HALF; 7];
    rows_xy_errors(ctx, |x, y, s| {
        rows::gumbel_softmax(B::default(), x, &good[..x.len()], false, y, s)
    });
    let x = [F::ONE, F::TWO, F::HALF, F::ZERO];
    let mut y = [F::ZERO; 4];
    for bad in [F::ZERO, F::ONE, F::NAN, -F::HALF, F::INFINITY] {
        let u = [F::HALF, F::HALF, F::HALF, bad];
        ctx.feed(&own_frame(|| {
            rows::gumbel_softmax(B::default(), &x, &u, true, &mut y, &Rows::new(2))
        }));
    }
    ctx.feed(&own_frame(|| {
        rows::gumbel_softmax(B::default(), &x, &good[..3], true, &mut y, &Rows::new(2))
    }));
}

/// `rows::temperature_for_entropy` over every batch and mask (the spec's temperature is only
/// validated), at targets half and 0.9 of the largest row's `ln n`: some rows cannot reach the
/// second (masked or tied rows), which must give NaN for them and an error for the batch.
pub(crate) fn rows_temperature_for_entropy<F: Elem, B: Backend<F>>(ctx: &mut Ctx) {
    each_batch(ctx, |ctx, x: &[F], spec| {
        let n = spec.n();
        if n > 20 || spec.temperature() != F::ONE {
            return; // the bisection runs the entropy kernel ~100 times per row
        }
        let mut out = [F::ZERO; MAX_ROWS];
        let out = &mut out[..x.len() / n];
        let ln_n = B::ln(F::from_usize(n));
        for target in [ln_n * F::HALF, ln_n * F::from_f64(0.9)] {
            ctx.feed(&own_frame(|| {
                rows::temperature_for_entropy(B::default(), x, target, out, spec)
            }));
            ctx.feed(&*out);
        }
    });
    rows_reduce_errors(ctx, |x, o, s| {
        rows::temperature_for_entropy(B::default(), x, F::HALF, o, s)
    });
}

/// `rows::softmax_vjp` from the masked, tempered softmax of every batch.
pub(crate) fn rows_softmax_vjp<F: Elem, B: Backend<F>>(ctx: &mut Ctx) {
    each_batch(ctx, |ctx, x: &[F], spec| {
        let m = x.len();
        let (mut y, mut dy, mut dx) = (
            [F::ZERO; BATCH_CAP],
            [F::ZERO; BATCH_CAP],
            [F::ZERO; BATCH_CAP],
        );
        let (y, dy, dx) = (&mut y[..m], &mut dy[..m], &mut dx[..m]);
        ctx.feed(&own_frame(|| rows::softmax(B::default(), x, y, spec)));
        fill_grad(ctx, dy);
        let (n, t) = (spec.n(), spec.temperature());
        ctx.feed(&own_frame(|| {
            rows::softmax_vjp(y, dy, dx, &Rows::new(n).with_temperature(t))
        }));
        ctx.feed(&*dx);
    });
    rows_vjp_errors::<F>(ctx, |y, dy, dx, n, t| {
        rows::softmax_vjp(y, dy, dx, &Rows::new(n).with_temperature(t))
    });
}

/// `rows::log_softmax_vjp` from the masked, tempered log_softmax of every batch.
pub(crate) fn rows_log_softmax_vjp<F: Elem, B: Backend<F>>(ctx: &mut Ctx) {
    each_batch(ctx, |ctx, x: &[F], spec| {
        let m = x.len();
        let (mut y, mut dy, mut dx) = (
            [F::ZERO; BATCH_CAP],
            [F::ZERO; BATCH_CAP],
            [F::ZERO; BATCH_CAP],
        );
        let (y, dy, dx) = (&mut y[..m], &mut dy[..m], &mut dx[..m]);
        ctx.feed(&own_frame(|| rows::log_softmax(B::default(), x, y, spec)));
        fill_grad(ctx, dy);
        let (n, t) = (spec.n(), spec.temperature());
        ctx.feed(&own_frame(|| {
            rows::log_softmax_vjp(B::default(), y, dy, dx, &Rows::new(n).with_temperature(t))
        }));
        ctx.feed(&*dx);
    });
    rows_vjp_errors(ctx, |y, dy, dx, n, t| {
        rows::log_softmax_vjp(B::default(), y, dy, dx, &Rows::new(n).with_temperature(t))
    });
}

/// `rows::log_softmax_vjp_from_logits` over every batch, mask and temperature.
pub(crate) fn rows_log_softmax_vjp_from_logits<F: Elem, B: Backend<F>>(ctx: &mut Ctx) {
    each_batch(ctx, |ctx, x: &[F], spec| {
        let m = x.len();
        let (mut dy, mut dx) = ([F::ZERO; BATCH_CAP], [F::ZERO; BATCH_CAP]);
        let (dy, dx) = (&mut dy[..m], &mut dx[..m]);
        fill_grad(ctx, dy);
        ctx.feed(&own_frame(|| {
            rows::log_softmax_vjp_from_logits(B::default(), x, dy, dx, spec)
        }));
        ctx.feed(&*dx);
    });
    // The batch errors with `dy = x`, then `dy` of the wrong length.
    rows_xy_errors(ctx, |x, dx, s| {
        rows::log_softmax_vjp_from_logits(B::default(), x, x, dx, s)
    });
    let x = [F::ONE, F::TWO, F::HALF, F::ZERO];
    let mut dx = [F::ZERO; 4];
    ctx.feed(&own_frame(|| {
        rows::log_softmax_vjp_from_logits(B::default(), &x, &x[..3], &mut dx, &Rows::new(2))
    }));
}

/// `rows::sparsemax` over every batch, mask and temperature.
pub(crate) fn rows_sparsemax<F: Elem>(ctx: &mut Ctx) {
    each_batch(ctx, |ctx, x: &[F], spec| {
        let mut y = [F::ZERO; BATCH_CAP];
        let y = &mut y[..x.len()];
        ctx.feed(&own_frame(|| rows::sparsemax(x, y, spec)));
        ctx.feed(&*y);
    });
    rows_xy_errors::<F>(ctx, |x, y, s| rows::sparsemax(x, y, s));
}

/// `rows::sparsemax_vjp` from the masked, tempered sparsemax of every batch.
pub(crate) fn rows_sparsemax_vjp<F: Elem>(ctx: &mut Ctx) {
    each_batch(ctx, |ctx, x: &[F], spec| {
        let m = x.len();
        let (mut y, mut dy, mut dx) = (
            [F::ZERO; BATCH_CAP],
            [F::ZERO; BATCH_CAP],
            [F::ZERO; BATCH_CAP],
        );
        let (y, dy, dx) = (&mut y[..m], &mut dy[..m], &mut dx[..m]);
        ctx.feed(&own_frame(|| rows::sparsemax(x, y, spec)));
        fill_grad(ctx, dy);
        let (n, t) = (spec.n(), spec.temperature());
        ctx.feed(&own_frame(|| {
            rows::sparsemax_vjp(y, dy, dx, &Rows::new(n).with_temperature(t))
        }));
        ctx.feed(&*dx);
    });
    rows_vjp_errors::<F>(ctx, |y, dy, dx, n, t| {
        rows::sparsemax_vjp(y, dy, dx, &Rows::new(n).with_temperature(t))
    });
}

/// `rows::argmax` and `rows::hardmax` over every batch.
pub(crate) fn rows_argmax_hardmax<F: Elem>(ctx: &mut Ctx) {
    each_batch(ctx, |ctx, x: &[F], spec| {
        if !matches!(spec.mask(), Mask::None) {
            return;
        }
        let n = spec.n();
        let (mut idx, mut y) = ([0usize; MAX_ROWS], [F::ZERO; BATCH_CAP]);
        let (idx, y) = (&mut idx[..x.len() / n], &mut y[..x.len()]);
        ctx.feed(&own_frame(|| rows::argmax(x, idx, &Rows::new(n))));
        ctx.feed(&*idx);
        ctx.feed(&own_frame(|| rows::hardmax(x, y, &Rows::new(n))));
        ctx.feed(&*y);
    });
    let x = [F::ONE, F::TWO, F::HALF, F::ZERO, F::ONE, F::TWO];
    let (mut idx, mut y) = ([0usize; 3], [F::ZERO; 7]);
    for (n, rows_out, len_y) in [(0, 2, 6), (4, 2, 6), (3, 3, 6), (3, 2, 7), (3, 2, 6)] {
        ctx.feed(&own_frame(|| {
            rows::argmax(&x, &mut idx[..rows_out], &Rows::new(n))
        }));
        ctx.feed(&own_frame(|| {
            rows::hardmax(&x, &mut y[..len_y], &Rows::new(n))
        }));
    }
    ctx.feed(&own_frame(|| {
        rows::argmax::<F>(&[], &mut [], &Rows::new(2))
    }));
    ctx.feed(&idx);
    ctx.feed(&y);
}

// ------------------------------------------------------------------------------------------------
// Fixed-size arrays
// ------------------------------------------------------------------------------------------------

/// Every `array::` function for one length `N`.
#[inline(never)]
fn array_n<F: Elem, B: Backend<F>, const N: usize>(ctx: &mut Ctx) {
    let dists = [
        Dist::Moderate,
        Dist::Wide,
        Dist::Ties,
        Dist::PosInf(1),
        Dist::AllNegInf,
        Dist::Nan,
        Dist::Underflow,
        Dist::Extremes,
    ];
    for dist in dists {
        let mut x = [F::ZERO; N];
        fill(&mut ctx.rng, dist, &mut x);
        let b = B::default();
        let y = own_frame(|| array::softmax(b, &x));
        ctx.feed(&y);
        for t in temps::<F>().into_iter().chain(bad_temps::<F>()) {
            ctx.feed(&own_frame(|| array::softmax_with_temperature(b, &x, t)));
            ctx.feed(&own_frame(|| array::entropy(b, &x, t)));
        }
        let ly = own_frame(|| array::log_softmax(b, &x));
        ctx.feed(&ly);
        ctx.feed(&own_frame(|| array::logsumexp(b, &x)));
        ctx.feed(&own_frame(|| array::sparsemax(&x)));
        ctx.feed(&own_frame(|| array::argmax(&x)));
        ctx.feed(&own_frame(|| array::hardmax(&x)));
        let mut dy = [F::ZERO; N];
        fill_grad(ctx, &mut dy);
        ctx.feed(&own_frame(|| array::softmax_vjp(&y, &dy)));
        ctx.feed(&own_frame(|| array::log_softmax_vjp(b, &ly, &dy)));
        let two = [x, dy];
        ctx.feed(&own_frame(|| array::softmax_rows(b, &two)));
        ctx.feed(&own_frame(|| array::log_softmax_rows(b, &two)));
        ctx.feed(&own_frame(|| array::logsumexp_rows(b, &two)));
        let mut xy = x;
        own_frame(|| array::softmax_in_place(b, &mut xy));
        ctx.feed(&xy);
        xy = x;
        own_frame(|| array::log_softmax_in_place(b, &mut xy));
        ctx.feed(&xy);
        ctx.feed(&own_frame(|| array::kl_divergence(b, &x, &dy)));
        let mut keep = [false; N];
        fill_keep(&mut ctx.rng, &mut keep);
        ctx.feed(&own_frame(|| array::masked_softmax(b, &x, &keep)));
        ctx.feed(&own_frame(|| array::softmax_with_bias(b, &x, &dy)));
        let sy = own_frame(|| array::sparsemax(&x));
        ctx.feed(&own_frame(|| array::sparsemax_vjp(&sy, &dy)));
        ctx.feed(&own_frame(|| {
            array::log_softmax_vjp_from_logits(b, &x, &dy)
        }));
        let mut u = [F::ZERO; N];
        for v in u.iter_mut() {
            *v = F::open_unit(ctx.rng.next_u64());
        }
        for (t, hard) in [(0.5, false), (1.0, true)] {
            let t = F::from_f64(t);
            ctx.feed(&own_frame(|| array::gumbel_softmax(b, &x, &u, t, hard)));
        }
        let target = B::ln(F::from_usize(N)) * F::HALF;
        ctx.feed(&own_frame(|| array::temperature_for_entropy(b, &x, target)));
    }
}

/// The fixed-size wrappers at lengths 1 (tail only), 16 (one chunk, no tail) and 17 (chunk and
/// tail). Each length is a separate monomorphisation of every wrapper, so the list is short: the
/// same kernels are exercised at every length by the slice cases.
pub(crate) fn arrays<F: Elem, B: Backend<F>>(ctx: &mut Ctx) {
    array_n::<F, B, 1>(ctx);
    array_n::<F, B, 16>(ctx);
    array_n::<F, B, 17>(ctx);
}

// ------------------------------------------------------------------------------------------------
// Raw backends
// ------------------------------------------------------------------------------------------------

/// Points per sweep.
const SWEEP: u64 = 4096;

/// Arguments around the thresholds of the exp/ln implementations (over- and underflow of both
/// widths, the clamps of `Poly`, the cut-offs of the `MicroMath` wrapper) and the specials.
fn edge_args<F: Elem>() -> [F; 32] {
    [
        -760.0, -745.2, -745.1, -708.4, -708.3, -110.0, -104.0, -103.98, -103.96, -103.3, -87.4,
        -87.3, -1.0e-10, -0.0, 0.0, 1.0e-10, 0.5, 1.0, 2.0, 88.72, 88.73, 88.74, 100.0, 709.7,
        709.8, 720.0, 1.0e300, -1.0e300, 3.4e38, -3.4e38, 1.0e-40, -1.0e-40,
    ]
    .map(F::from_f64)
}

fn specials<F: Elem>() -> [F; 8] {
    [
        F::INFINITY,
        F::NEG_INFINITY,
        F::NAN,
        -F::NAN,
        F::MAX,
        -F::MAX,
        F::SUBNORMAL,
        F::MIN_POSITIVE,
    ]
}

/// Calls `f` on [`SWEEP`] bit patterns evenly spaced over the whole encoding (every sign,
/// exponent, subnormals, infinities, NaN payloads) from a random start, then on [`SWEEP`]
/// values evenly spaced over `[lo, hi)` with random jitter, then on the edges and specials.
fn sweep<F: Elem>(ctx: &mut Ctx, lo: f64, hi: f64, mut f: impl FnMut(&mut Ctx, F)) {
    let space = u64::MAX >> (64 - F::BITS);
    let stride = space / SWEEP;
    let start = ctx.rng.next_u64() % stride;
    for i in 0..SWEEP {
        f(ctx, F::from_raw(start.wrapping_add(i * stride)));
    }
    let step = (hi - lo) / SWEEP as f64;
    for i in 0..SWEEP {
        let v = lo + step * (i as f64 + ctx.rng.unit());
        f(ctx, F::from_f64(v));
    }
    for v in edge_args::<F>().into_iter().chain(specials::<F>()) {
        f(ctx, v);
    }
}

/// The exp argument range that matters for each width (beyond it the result is 0 or `+inf`).
fn exp_range<F: Elem>() -> (f64, f64) {
    if F::BITS == 32 {
        (-110.0, 100.0)
    } else {
        (-760.0, 720.0)
    }
}

/// `Backend::exp` over the sweeps.
pub(crate) fn backend_exp<F: Elem, B: Backend<F>>(ctx: &mut Ctx) {
    ctx.feed(B::NAME);
    let (lo, hi) = exp_range::<F>();
    sweep(ctx, lo, hi, |ctx, x: F| ctx.feed(&B::exp(x)));
}

/// `Backend::ln` over the sweeps (negative arguments included).
pub(crate) fn backend_ln<F: Elem, B: Backend<F>>(ctx: &mut Ctx) {
    ctx.feed(B::NAME);
    sweep(ctx, 0.0, 4.0, |ctx, x: F| ctx.feed(&B::ln(x)));
}

/// `Backend::exp_shifted(hi, lo)` for `hi <= 0` over the sweeps, with a tail `lo` of up to half
/// an ulp of `hi` of either sign; and the documented specials (`hi = -inf` with a NaN tail,
/// `hi = NaN`).
pub(crate) fn backend_exp_shifted<F: Elem, B: Backend<F>>(ctx: &mut Ctx) {
    ctx.feed(B::NAME);
    let (lo, _) = exp_range::<F>();
    sweep(ctx, lo, 0.0, |ctx, x: F| {
        let hi = -x.abs();
        let tail = hi * F::EPSILON * F::from_f64(ctx.rng.range(-0.5, 0.5));
        ctx.feed(&B::exp_shifted(hi, tail));
    });
    for (hi, tail) in [
        (F::NEG_INFINITY, F::NAN),
        (F::NEG_INFINITY, F::ZERO),
        (F::NAN, F::ZERO),
        (F::ZERO, F::ZERO),
        (-F::ZERO, F::ZERO),
        (F::ZERO, -F::EPSILON * F::HALF),
        (-F::MAX, F::ZERO),
    ] {
        ctx.feed(&B::exp_shifted(hi, tail));
    }
}

/// `exp_pow2` (the hot loops' exp) over the same sweep, at the scale the kernels use and at 0,
/// its chunk form (which must agree bit for bit), and the special values.
pub(crate) fn backend_exp_pow2<F: Elem, B: Backend<F>>(ctx: &mut Ctx) {
    ctx.feed(B::NAME);
    let (lo, _) = exp_range::<F>();
    let mut chunk_hi = [F::ZERO; 16];
    let mut chunk_lo = [F::ZERO; 16];
    let mut k = 0;
    sweep(ctx, lo, 0.0, |ctx, x: F| {
        let hi = -x.abs();
        let tail = hi * F::EPSILON * F::from_f64(ctx.rng.range(-0.5, 0.5));
        ctx.feed(&B::exp_pow2(hi, tail, 60));
        ctx.feed(&B::exp_pow2(hi, tail, 0));
        if let (Some(h), Some(l)) = (chunk_hi.get_mut(k % 16), chunk_lo.get_mut(k % 16)) {
            (*h, *l) = (hi, tail);
        }
        k += 1;
        if k % 16 == 0 {
            let e = B::exp_pow2_chunk(&chunk_hi, &chunk_lo, 60);
            for ((&e, &h), &l) in e.iter().zip(&chunk_hi).zip(&chunk_lo) {
                ctx.feed(&(e.to_bits() == B::exp_pow2(h, l, 60).to_bits()));
            }
            ctx.feed(&e[..]);
        }
    });
    for (hi, tail) in [
        (F::NEG_INFINITY, F::NAN),
        (F::NEG_INFINITY, F::ZERO),
        (F::NAN, F::ZERO),
        (F::ZERO, F::ZERO),
        (-F::ZERO, F::ZERO),
        (F::ZERO, -F::EPSILON * F::HALF),
        (-F::MAX, F::ZERO),
    ] {
        ctx.feed(&B::exp_pow2(hi, tail, 60));
    }
}

/// softmax and log_softmax (in place, one buffer) on rows longer than a block of the hot
/// loops' sums (512 values), so the block folding and the 32-lane sums are compared between the
/// targets that sum lane-parallel (x86_64) and lane-major (Cortex-M). The buffer is 6.4 KiB in
/// f32 (rows up to 1600) and 5.6 KiB in f64 (rows up to 700).
pub(crate) fn long_rows<F: Elem, B: Backend<F>>(ctx: &mut Ctx) {
    if core::mem::size_of::<F>() == 4 {
        long_rows_in::<F, B, 1600>(ctx);
    } else {
        long_rows_in::<F, B, 700>(ctx);
    }
}

fn long_rows_in<F: Elem, B: Backend<F>, const CAP_LONG: usize>(ctx: &mut Ctx) {
    for (len, dist) in [
        (513, Dist::Moderate),
        (700, Dist::Wide),
        (1100, Dist::SomeNegInf),
        (1600, Dist::Ties),
    ] {
        if len > CAP_LONG {
            continue;
        }
        let mut buf = [F::ZERO; CAP_LONG];
        let y = &mut buf[..len];
        let mut seed = ctx.rng;
        fill(&mut ctx.rng, dist, y);
        ctx.feed(&own_frame(|| sm::softmax_in_place(B::default(), y)));
        ctx.feed(&*y);
        fill(&mut seed, dist, y);
        ctx.feed(&own_frame(|| sm::log_softmax_in_place(B::default(), y)));
        ctx.feed(&*y);
        // Out of place (half the buffer in, half out): log_softmax's stored-terms path, and
        // logsumexp of the same half.
        fill(&mut seed, dist, y);
        let (a, b) = y.split_at_mut(len / 2);
        let b = &mut b[..a.len()];
        ctx.feed(&own_frame(|| sm::log_softmax(B::default(), a, b)));
        ctx.feed(&*b);
        ctx.feed(&own_frame(|| sm::logsumexp(B::default(), a)));
    }
}

// ------------------------------------------------------------------------------------------------
// Inputs
// ------------------------------------------------------------------------------------------------

/// The generated inputs themselves (rows, batches, masks, noise): if these differ between
/// machines, every other case differs too, and this case says so first.
pub(crate) fn inputs<F: Elem>(ctx: &mut Ctx) {
    each_row(ctx, |ctx, _, x: &mut [F]| ctx.feed(x));
    each_batch(ctx, |ctx, x: &[F], _| ctx.feed(x));
    for _ in 0..64 {
        let u = F::open_unit(ctx.rng.next_u64());
        ctx.feed(&u);
    }
    ctx.feed(&temps::<F>());
    ctx.feed(&bad_temps::<F>());
    ctx.feed(&edge_args::<F>());
    ctx.feed(&specials::<F>());
}

// ------------------------------------------------------------------------------------------------
// The fast variant
// ------------------------------------------------------------------------------------------------

/// `fast::softmax`, `fast::log_softmax` and `fast::logsumexp` over every row (a batch of one row)
/// and over the batches without masks, a 1100-value row (four whole blocks of 256 values for its
/// sums, a partial one and a ragged end), `fast::fma` on awkward operands, and the structural errors. Its bits must equal the
/// host's like every other case's: on the host the AVX2+FMA or AVX-512 kernel (release builds)
/// or the portable reference, on the microcontrollers the portable reference with its software
/// fused multiply-add.
pub(crate) fn fast(ctx: &mut Ctx) {
    each_row(ctx, |ctx, spec, x: &mut [f32]| {
        let mut y = [0.0f32; CAP];
        let y = &mut y[..spec.len];
        ctx.feed(&own_frame(|| {
            sm::fast::softmax(x, y, &sm::Rows::new(spec.len))
        }));
        ctx.feed(&*y);
        ctx.feed(&own_frame(|| {
            sm::fast::log_softmax(x, y, &sm::Rows::new(spec.len))
        }));
        ctx.feed(&*y);
        let mut out = [0.0f32; 1];
        ctx.feed(&own_frame(|| {
            sm::fast::logsumexp(x, &mut out, &sm::Rows::new(spec.len))
        }));
        ctx.feed(&out);
    });
    // The batches of the other row cases, without masks and at τ = 1 (fast takes neither).
    each_batch(ctx, |ctx, x: &[f32], spec| {
        if !matches!(spec.mask(), Mask::None) || spec.temperature() != 1.0 {
            return;
        }
        let (n, len) = (spec.n(), x.len());
        let r = len / n;
        let mut y = [0.0f32; BATCH_CAP];
        ctx.feed(&own_frame(|| {
            sm::fast::softmax(x, &mut y[..len], &sm::Rows::new(n))
        }));
        ctx.feed(&y[..len]);
        ctx.feed(&own_frame(|| {
            sm::fast::log_softmax(x, &mut y[..len], &sm::Rows::new(n))
        }));
        ctx.feed(&y[..len]);
        ctx.feed(&own_frame(|| {
            sm::fast::logsumexp(x, &mut y[..r], &sm::Rows::new(n))
        }));
        ctx.feed(&y[..r]);
    });
    let mut long = [0.0f32; 1100];
    fill(&mut ctx.rng, Dist::Wide, &mut long[..550]);
    fill(&mut ctx.rng, Dist::SomeNegInf, &mut long[550..]);
    let (a, b) = long.split_at_mut(550);
    ctx.feed(&own_frame(|| sm::fast::softmax(a, b, &sm::Rows::new(550))));
    ctx.feed(&*b);
    fill(&mut ctx.rng, Dist::Moderate, b);
    let mut out = [0.0f32; 1];
    ctx.feed(&own_frame(|| {
        sm::fast::logsumexp(&long, &mut out, &sm::Rows::new(1100))
    }));
    ctx.feed(&out);
    for _ in 0..256 {
        let r = ctx.rng.next_u64();
        let (a, b, c) = (
            f32::from_bits(r as u32),
            1.0 + (r >> 41) as f32 * f32::EPSILON,
            f32::from_bits((r >> 32) as u32),
        );
        ctx.feed(&sm::fast::fma(a, b, c));
        ctx.feed(&sm::fast::fma(b, b, -(b * b)));
    }
    for n in [0usize, 2, 3] {
        let mut y = [0.0f32; 4];
        ctx.feed(&own_frame(|| {
            sm::fast::softmax(&row3::<f32>(), &mut y[..3], &sm::Rows::new(n))
        }));
        ctx.feed(&own_frame(|| {
            sm::fast::log_softmax(&row3::<f32>(), &mut y, &sm::Rows::new(3))
        }));
        ctx.feed(&own_frame(|| {
            sm::fast::logsumexp(&row3::<f32>(), &mut y[..2], &sm::Rows::new(n))
        }));
    }
}
