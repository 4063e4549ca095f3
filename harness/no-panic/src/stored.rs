//! The panic-freedom probe for softmax-core's reduced-precision storage (`stored`: f16, bf16,
//! int8 with a scale per row) and the products that read stored rows
//! (`linalg::within::matmul_nt_stored`, `matmul_nt_scaled` / `matmul_nn_stored`), with lengths,
//! shapes and values the optimiser cannot see (see `main.rs`).

use core::hint::black_box;

use softmax_core::linalg::within;
use softmax_core::stored::{self, bf16, f16, Operand, Stored};
use softmax_core::Float;

fn used<T>(v: T) {
    black_box(v);
}

/// Values the optimiser cannot predict.
fn opaque<F: Float, const N: usize>(seed: f64) -> [F; N] {
    let mut v = [F::ZERO; N];
    let mut s = black_box(seed);
    for x in v.iter_mut() {
        s = s * 1.618_033_988_749_895 - 0.5;
        *x = F::from_f64(black_box(s));
    }
    black_box(v)
}

/// Calls every public function of `stored` and the stored products.
#[inline(never)]
pub fn probe() {
    format::<f16>();
    format::<bf16>();
    format::<i8>();
    operand::<f32, f16>();
    operand::<f32, bf16>();
    operand::<f32, i8>();
    operand::<f32, f32>();
    operand::<f64, f64>();
    let n = black_box(64usize);
    used(stored::row_bytes::<f16>(n));
    used(stored::row_bytes::<bf16>(n));
    used(stored::row_bytes::<i8>(n));
}

/// One format: checking, storing (into an output of a length the optimiser cannot see) and
/// writing a row, and reading every stored value back.
#[inline(never)]
fn format<S: Stored>() {
    let xs = opaque::<f32, 40>(0.3);
    let x: &[f32] = black_box(&xs[..]);
    let mut buf = black_box([S::default(); 40]);
    let out: &mut [S] = black_box(&mut buf[..]);
    used(S::check_row(x));
    used(S::store_row(x, &mut *out));
    let s = S::write_row(x, &mut *out);
    for &e in out.iter() {
        used(e.load(s));
    }
    used(S::NAME);
    used(buf);
}

/// Both stored products over `O` read as `F`, and the hooks they dispatch through, with
/// shapes and scales that may disagree with the buffers.
#[inline(never)]
fn operand<F: Float, O: Operand<F>>() {
    let a_buf = opaque::<F, 40>(0.7);
    let a: &[F] = black_box(&a_buf[..]);
    let b_buf = black_box([O::default(); 40]);
    let b: &[O] = black_box(&b_buf[..]);
    let s_buf = black_box([O::Scale::default(); 8]);
    let scales: &[O::Scale] = black_box(&s_buf[..]);
    let mut c_buf = [F::ZERO; 40];
    let c: &mut [F] = black_box(&mut c_buf[..]);
    let (n, k) = (black_box(4usize), black_box(5usize));
    within::matmul_nt_stored(a, b, scales, k, &mut *c);
    within::matmul_nt_scaled(a, b, scales, k, &mut *c, black_box(F::HALF));
    within::matmul_nn_stored(a, b, scales, n, k, &mut *c, black_box(true));
    used(O::nt_fast(a, b, scales, k, &mut *c, black_box(F::HALF)));
    used(O::nn_fast(a, b, scales, (n, k), &mut *c, black_box(false)));
    used(c_buf);
}
