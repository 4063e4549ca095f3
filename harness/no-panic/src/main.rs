//! Link-time proof that softmax-core has no reachable panic path.
//!
//! The panic handler calls `__softmax_panic_reachable`, a function that exists nowhere. A release
//! build (fat LTO, opt-level 3 and "s", `thumbv7em-none-eabihf`) therefore links only if the
//! optimiser removed every call to the panic machinery from everything `main` reaches. `main` calls every
//! public function and method of softmax-core, for every (element type, backend) pair the crate
//! supports, with arguments the optimiser cannot see through (`core::hint::black_box`: unknown
//! lengths, values, masks, temperatures), and feeds every result to `black_box` so no call can be
//! dropped as dead. `harness/tests/no_panic_coverage.rs` checks that every public function of
//! softmax-core's sources is called here; `check.sh` builds it, and also proves the check can
//! fail by building the `deliberate-panic` feature, which must not link.
#![no_std]
#![no_main]
// The self-test build (`deliberate-panic`) uses only part of the probe.
#![cfg_attr(feature = "deliberate-panic", allow(dead_code, unused_imports))]

mod attention;
mod loss;
mod quant;
mod stored;

use core::fmt::{self, Write};
use core::hint::black_box;
use core::panic::PanicInfo;

use cortex_m_rt::entry;
use cortex_m_semihosting::debug;
use softmax_core::backend::{Backend, Libm, MicroMath, Poly};
use softmax_core::simd::Level;
use softmax_core::{array, linalg, rows, special, Error, Float, LogSumExp, OnlineSoftmax, Rows};

extern "C" {
    /// Defined nowhere: any surviving reference to it fails the link.
    fn __softmax_panic_reachable() -> !;
}

#[panic_handler]
fn panic(_: &PanicInfo) -> ! {
    // SAFETY: never executed in a binary that links; a reachable call is a link error.
    unsafe { __softmax_panic_reachable() }
}

/// Hands a result to the optimiser as used (a `Result` included, without a `must_use` warning),
/// so the call that produced it cannot be removed as dead code.
fn used<T>(v: T) {
    black_box(v);
}

/// Values the optimiser cannot predict.
fn opaque<F: Float>(seed: f64) -> [F; 40] {
    let mut v = [F::ZERO; 40];
    let mut s = black_box(seed);
    for x in v.iter_mut() {
        s = s * 1.618_033_988_749_895 - 0.5;
        *x = F::from_f64(black_box(s));
    }
    black_box(v)
}

/// Every function that takes a backend, and the `LogSumExp` state, for one (element type,
/// backend) pair.
#[inline(never)]
fn with_backend<F: Float, B: Backend<F>>() {
    let b = black_box(B::default());
    let (xs, qs, us) = (opaque::<F>(0.25), opaque::<F>(0.75), opaque::<F>(0.5));
    let (mut ys, mut zs, mut ws) = ([F::ZERO; 40], [F::ZERO; 40], [F::ZERO; 40]);
    let keep_buf = black_box([true; 40]);
    // Slices of lengths unknown to the optimiser.
    let x: &[F] = black_box(&xs[..]);
    let q: &[F] = black_box(&qs[..]);
    let u: &[F] = black_box(&us[..]);
    let keep: &[bool] = black_box(&keep_buf[..]);
    let y: &mut [F] = black_box(&mut ys[..]);
    let z: &mut [F] = black_box(&mut zs[..]);
    let w: &mut [F] = black_box(&mut ws[..]);
    let t: F = black_box(F::HALF);
    let n: usize = black_box(8);
    let hard: bool = black_box(true);

    // Single rows.
    used(softmax_core::softmax(b, x, y));
    used(softmax_core::softmax_with_temperature(b, x, t, y));
    used(softmax_core::softmax_in_place(b, y));
    used(softmax_core::log_softmax(b, x, y));
    used(softmax_core::log_softmax_in_place(b, y));
    used(softmax_core::logsumexp(b, x));
    used(softmax_core::entropy(b, x, t));
    used(softmax_core::kl_divergence(b, x, q));
    used(softmax_core::log_softmax_vjp(b, x, q, z));
    used(softmax_core::log_softmax_vjp_from_logits(b, x, q, z));
    used(softmax_core::masked_softmax(b, x, keep, y));
    used(softmax_core::softmax_with_bias(b, x, q, y));
    used(softmax_core::gumbel_softmax(b, x, u, t, hard, y));
    used(softmax_core::temperature_for_entropy(b, x, t));

    // Row batches, with a spec whose mask kind and temperature are opaque too.
    let spec: Rows<'_, F> = black_box(Rows::new(n).with_temperature(t).with_keep(keep));
    let spec_bias: Rows<'_, F> = black_box(Rows::new(n).with_bias(q));
    used(rows::softmax(b, x, y, &spec));
    used(rows::log_softmax(b, x, y, &spec_bias));
    used(rows::softmax_in_place(
        b,
        y,
        &Rows::new(n).with_temperature(t),
    ));
    used(rows::log_softmax_in_place(
        b,
        y,
        &Rows::new(n).with_temperature(t),
    ));
    used(rows::logsumexp(b, x, z, &spec));
    used(rows::entropy(b, x, z, &spec_bias));
    used(rows::kl_divergence(b, x, q, z, &spec));
    used(rows::log_softmax_vjp(
        b,
        x,
        q,
        w,
        &Rows::new(n).with_temperature(t),
    ));
    used(rows::log_softmax_vjp_from_logits(b, x, q, w, &spec_bias));
    used(rows::gumbel_softmax(b, x, u, hard, y, &spec));
    used(rows::temperature_for_entropy(b, x, t, z, &spec_bias));

    // Fixed-size arrays.
    let a: [F; 17] = black_box([F::ONE; 17]);
    let a2: [[F; 17]; 2] = black_box([[F::HALF; 17]; 2]);
    used(array::softmax(b, &a));
    used(array::softmax_with_temperature(b, &a, t));
    used(array::log_softmax(b, &a));
    used(array::logsumexp(b, &a));
    used(array::entropy(b, &a, t));
    used(array::log_softmax_vjp(b, &a, &a));
    used(array::log_softmax_vjp_from_logits(b, &a, &a));
    let mut m = a;
    array::softmax_in_place(b, &mut m);
    array::log_softmax_in_place(b, &mut m);
    used(black_box(m));
    used(array::kl_divergence(b, &a, &m));
    used(array::masked_softmax(b, &a, &black_box([true; 17])));
    used(array::softmax_with_bias(b, &a, &m));
    used(array::gumbel_softmax(
        b,
        &a,
        &black_box([F::HALF; 17]),
        t,
        hard,
    ));
    used(array::temperature_for_entropy(b, &a, t));
    used(array::softmax_rows(b, &a2));
    used(array::log_softmax_rows(b, &a2));
    used(array::logsumexp_rows(b, &a2));

    // The online state.
    let mut s = LogSumExp::new(b);
    s.push(black_box(F::ONE));
    s.push_slice(x);
    let mut s2 = LogSumExp::new(b);
    s2.push_slice(q);
    s.merge(&black_box(s2));
    black_box(s.max());
    black_box(s.scaled_sum());
    black_box(s.ln_sum());
    black_box(s.finish());
    black_box(s.log_prob(black_box(F::TWO)));
    black_box(s.prob(black_box(F::TWO)));
    used(s.probs(x, y));
    used(s.log_probs(x, z));
    s.probs_in_place(black_box(&mut *y));
    black_box(s);

    // softmax with its logsumexp.
    used(softmax_core::softmax_lse(b, x, y));
    used(softmax_core::softmax_lse_in_place(b, w));
    used(softmax_core::softmax_lse_scaled(
        b,
        x,
        y,
        black_box(F::HALF),
        black_box(usize::MAX),
    ));

    // The online softmax step of attention.
    let mut o = OnlineSoftmax::new(b);
    black_box(o.update(y));
    let mut o2 = OnlineSoftmax::new(b);
    black_box(o2.update(z));
    let mut o3 = OnlineSoftmax::new(b);
    let mut o4 = OnlineSoftmax::new(b);
    black_box(OnlineSoftmax::update_rows([
        Some((&mut o3, &mut *y)),
        None,
        Some((&mut o4, &mut *w)),
    ]));
    black_box((o3, o4));
    black_box(o.merge(&black_box(o2)));
    let (sink_w, r) = o.update_sink(black_box(F::TWO));
    black_box((
        sink_w,
        r.value(),
        r.scale(black_box(F::HALF), black_box(F::TWO)),
    ));
    black_box(o.max());
    black_box(o.sum());
    black_box(o.inv_sum());
    black_box(o.lse());

    // The scalar functions around the skeleton.
    let v = black_box(F::HALF);
    black_box(special::log1p(b, v));
    black_box(special::expm1(b, v));
    black_box(special::tanh(b, v));
    black_box(special::softcap(b, v, t));
    black_box(special::softcap_grad(v, t));
    black_box(special::softcap_slope(b, v, t));
    black_box(special::sigmoid(b, v));
    black_box(special::softplus(b, v));
    black_box(special::log_sigmoid(b, v));

    // The backend itself.
    let v = black_box(F::HALF);
    black_box(B::exp(v));
    black_box(B::exp_shifted(-v, black_box(F::ZERO)));
    black_box(B::exp_pow2(-v, black_box(F::ZERO), black_box(60)));
    black_box(B::exp_pow2_chunk(
        &black_box([-v; 16]),
        &black_box([F::ZERO; 16]),
        black_box(60),
    ));
    black_box(B::ln(v));
    black_box(B::NAME);
}

/// Every function without a backend, the `Rows` spec and the `Float` trait, for one element
/// type.
#[inline(never)]
fn float_only<F: Float>() {
    let (xs, qs) = (opaque::<F>(0.125), opaque::<F>(0.375));
    let (mut ys, mut zs) = ([F::ZERO; 40], [F::ZERO; 40]);
    let mut idx_buf = [0usize; 40];
    let keep_buf = black_box([true; 40]);
    let x: &[F] = black_box(&xs[..]);
    let q: &[F] = black_box(&qs[..]);
    let keep: &[bool] = black_box(&keep_buf[..]);
    let y: &mut [F] = black_box(&mut ys[..]);
    let z: &mut [F] = black_box(&mut zs[..]);
    let idx: &mut [usize] = black_box(&mut idx_buf[..]);
    let t: F = black_box(F::TWO);
    let n: usize = black_box(5);

    used(softmax_core::softmax_vjp(x, q, y));
    used(softmax_core::sparsemax(x, y));
    used(softmax_core::sparsemax_vjp(x, q, z));
    used(softmax_core::argmax(x));
    used(softmax_core::hardmax(x, y));

    // The spec and its accessors.
    let spec: Rows<'_, F> = black_box(Rows::new(n).with_temperature(t).with_keep(keep));
    let spec_bias: Rows<'_, F> = black_box(Rows::new(n).with_bias(q));
    black_box(spec.n());
    black_box(spec.temperature());
    black_box(spec.mask());
    black_box(spec_bias.mask());

    used(rows::softmax_vjp(
        x,
        q,
        y,
        &Rows::new(n).with_temperature(t),
    ));
    used(rows::sparsemax(x, y, &spec));
    used(rows::sparsemax(x, z, &spec_bias));
    used(rows::sparsemax_vjp(
        x,
        q,
        y,
        &Rows::new(n).with_temperature(t),
    ));
    used(rows::argmax(x, idx, &Rows::new(n)));
    used(rows::hardmax(x, y, &Rows::new(n)));

    let a: [F; 17] = black_box([F::ONE; 17]);
    used(array::sparsemax(&a));
    used(array::argmax(&a));
    used(array::hardmax(&a));
    used(array::softmax_vjp(&a, &a));
    used(array::sparsemax_vjp(&a, &a));

    // The shared products.
    let kk: usize = black_box(4);
    used(linalg::dot(x, q));
    used(linalg::matmul_nt(x, q, kk, y));
    used(linalg::matmul_nn(x, q, n, kk, y, black_box(true)));
    used(linalg::matmul_tn(x, q, n, kk, z, black_box(false)));
    black_box(linalg::within::dot(x, q));
    linalg::within::matmul_nt(x, q, kk, y);
    linalg::within::matmul_nn(x, q, n, kk, y, black_box(true));
    linalg::within::matmul_tn(x, q, n, kk, z, black_box(false));
    black_box(softmax_core::simd::dispatch(|| black_box(1u8)));

    // The row chunker.
    for r in softmax_core::chunks::chunks(x, black_box(3)) {
        black_box(r);
    }
    for r in softmax_core::chunks::chunks_mut(&mut *z, black_box(3)) {
        black_box(r);
    }

    // The element-type trait.
    let v = black_box(F::HALF);
    black_box(F::from_bits(black_box(v.to_bits())));
    black_box(v.is_nan());
    black_box(v.is_finite());
    black_box(v.abs());
    black_box(F::from_usize(black_box(7usize)));
    black_box(F::from_f64(black_box(0.1)));
    black_box(v.to_f64());
}

/// The dispatch API (a no-op on this target, which has one level of machine code).
#[inline(never)]
fn dispatch() {
    softmax_core::simd::set_max_level(black_box(Level::Avx2));
    black_box(softmax_core::simd::level().name());
    black_box(softmax_core::simd::detected());
}

/// A `fmt::Write` sink that cannot fail or panic: it folds the text into a hash.
struct Sink(u32);

impl Write for Sink {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        for b in s.bytes() {
            self.0 = (self.0 ^ u32::from(b)).wrapping_mul(16_777_619);
        }
        Ok(())
    }
}

/// `Display` and `Debug` of every error (what a user prints when a call fails).
#[inline(never)]
fn errors() {
    let mut sink = Sink(black_box(2_166_136_261));
    let all = [
        Error::EmptyRow,
        Error::LengthMismatch {
            expected: black_box(3),
            found: black_box(2),
        },
        Error::InvalidTemperature,
        Error::InvalidNoise,
        Error::EntropyOutOfRange,
        Error::FastSpec,
        Error::ShapeOverflow,
        Error::RaggedBatch {
            len: black_box(5),
            n: black_box(2),
        },
        Error::InvalidQuantization,
        Error::QuantizedSumOverflow,
    ];
    for e in black_box(all) {
        let _ = write!(sink, "{e} {e:?}");
        black_box(e == black_box(Error::EmptyRow));
    }
    black_box(sink.0);
}

#[cfg(feature = "deliberate-panic")]
#[inline(never)]
fn deliberate_panic() {
    let xs = opaque::<f32>(0.5);
    let x: &[f32] = black_box(&xs[..]);
    // A runtime index into a slice of unknown length: the bounds check's panic is reachable.
    black_box(x[black_box(3)]);
}

/// The fast variant (f32 only), with lengths, row lengths and values the optimiser cannot see.
#[inline(never)]
fn fast() {
    let xs = opaque::<f32>(0.25);
    let (mut ys, mut zs) = ([0.0f32; 40], [0.0f32; 40]);
    let x: &[f32] = black_box(&xs[..]);
    let y: &mut [f32] = black_box(&mut ys[..]);
    let z: &mut [f32] = black_box(&mut zs[..]);
    let n: usize = black_box(8);
    used(softmax_core::fast::softmax(
        x,
        y,
        &softmax_core::Rows::new(n),
    ));
    used(softmax_core::fast::log_softmax(
        x,
        y,
        &softmax_core::Rows::new(n),
    ));
    used(softmax_core::fast::logsumexp(
        x,
        z,
        &softmax_core::Rows::new(n),
    ));
    used(softmax_core::fast::exp(black_box(-1.5)));
    used(softmax_core::fast::fma(
        black_box(1.5),
        black_box(-2.0),
        black_box(0.25),
    ));
}

#[entry]
fn main() -> ! {
    #[cfg(not(feature = "deliberate-panic"))]
    {
        with_backend::<f32, Poly>();
        with_backend::<f32, Libm>();
        with_backend::<f32, MicroMath>();
        with_backend::<f64, Poly>();
        with_backend::<f64, Libm>();
        float_only::<f32>();
        float_only::<f64>();
        errors();
        dispatch();
        fast();
        loss::probe();
        attention::probe();
        quant::probe();
        stored::probe();
    }
    // The self-test: one (element type, backend) pair, so it links in a fraction of the time of
    // the full probe, plus one certain panic path. It must not link.
    #[cfg(feature = "deliberate-panic")]
    {
        with_backend::<f32, Poly>();
        deliberate_panic();
    }
    debug::exit(debug::EXIT_SUCCESS);
    loop {
        cortex_m::asm::bkpt();
    }
}
