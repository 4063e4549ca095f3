//! Private scalar and slice helpers on top of softmax-core: the square root (from `libm`,
//! correctly rounded, so the same bits everywhere), sums through `linalg::within::dot`, powers,
//! the L2 normalisation `x / max(‖x‖, 1e-12)` and its backward pass, the soft-capped view of a
//! row streamed through a small stack buffer, and ragged pieces of a slice on top of
//! softmax-core's `chunks`.
//!
//! Everything here is called with shapes already checked at a loss's boundary (the per-row work
//! from inside the loss's `simd::dispatch` region): the products are the Result-free
//! `linalg::within` forms (the same bits as the checked ones), inlined so that they run at the
//! level of the region they are called in.

#![forbid(unsafe_code)]

use softmax_core::backend::Backend;
use softmax_core::chunks::{chunks, chunks_mut};
use softmax_core::linalg::within;
use softmax_core::{special, Float, LogSumExp};

/// `true` for `f32`, `false` for `f64` (the sealed trait has exactly these two).
#[inline(always)]
pub(crate) fn is_f32<F: Float>() -> bool {
    F::EPSILON > F::from_f64(1e-10)
}

/// The correctly rounded square root (libm's `sqrtf` / `sqrt`: IEEE exact on every target).
#[inline]
pub(crate) fn sqrt<F: Float>(x: F) -> F {
    if is_f32::<F>() {
        F::from_f64(libm::sqrtf(x.to_f64() as f32) as f64)
    } else {
        F::from_f64(libm::sqrt(x.to_f64()))
    }
}

/// Chunk length of the stack buffers (soft-capped rows, sums through `dot`): 64 values, 512 bytes
/// in f64, so a case stays small on a 16 KiB microcontroller.
pub(crate) const CHUNK: usize = 64;

/// `p = softmax(z)` under the normaliser `st`, over the common length (the callers' buffers
/// have equal lengths by construction): `LogSumExp::probs` without its length check.
#[inline(always)]
pub(crate) fn probs_into<F: Float, B: Backend<F>>(st: &LogSumExp<F, B>, z: &[F], p: &mut [F]) {
    let p = p.get_mut(..z.len()).unwrap_or_default();
    for (p, &z) in p.iter_mut().zip(z) {
        *p = z;
    }
    st.probs_in_place(p);
}

/// `Σ x_i` in the fixed lane order of `linalg::dot` (chunks of [`CHUNK`] added left to right).
#[inline(always)]
pub(crate) fn sum<F: Float>(x: &[F]) -> F {
    let ones = [F::ONE; CHUNK];
    let mut s = F::ZERO;
    for c in x.chunks(CHUNK) {
        // `within::dot` takes the common length: the chunk against as many ones.
        s += within::dot(c, &ones);
    }
    s
}

/// `⟨a, b⟩` of equal-length slices (lengths checked by the callers), as `linalg::dot`.
#[inline(always)]
pub(crate) fn dot<F: Float>(a: &[F], b: &[F]) -> F {
    within::dot(a, b)
}

/// `y += a·x` element by element (no reduction: every element has one product and one sum).
#[inline(always)]
pub(crate) fn axpy<F: Float>(a: F, x: &[F], y: &mut [F]) {
    for (y, &x) in y.iter_mut().zip(x) {
        *y += a * x;
    }
}

/// `x^g` for `x >= 0` and a finite `g >= 0`: repeated multiplication for integer `g <= 16`
/// (exact powers as PyTorch's `pow` takes for small integer exponents, `x^0 = 1`), otherwise
/// `e^(g·ln x)` with the backend (`0^g = 0` for `g > 0`).
#[inline]
pub(crate) fn pow<F: Float, B: Backend<F>>(x: F, g: F) -> F {
    if let Some(k) = small_int(g) {
        let mut r = F::ONE;
        for _ in 0..k {
            r *= x;
        }
        r
    } else if x == F::ZERO {
        F::ZERO
    } else {
        B::exp(g * B::ln(x))
    }
}

/// `Some(k)` when `g` is an integer in `0..=16`.
#[inline]
pub(crate) fn small_int<F: Float>(g: F) -> Option<u32> {
    let mut k = 0u32;
    let mut v = F::ZERO;
    while k <= 16 {
        if v == g {
            return Some(k);
        }
        v += F::ONE;
        k += 1;
    }
    None
}

/// The L2 norm clamped as PyTorch's `F.normalize`: `max(‖x‖, 1e-12)`, and whether the clamp was
/// inactive (`‖x‖ >= 1e-12`, so the gradient flows through the norm).
#[inline]
pub(crate) fn clamped_norm<F: Float>(x: &[F]) -> (F, bool) {
    let n = sqrt(dot(x, x));
    let eps = F::from_f64(1e-12);
    if n >= eps || n.is_nan() {
        (n, true)
    } else {
        (eps, false)
    }
}

/// Backward pass of `x̂ = x / max(‖x‖, 1e-12)`: turns `g = ∂L/∂x̂` (in place) into `∂L/∂x`:
/// `(g − x̂·(x̂·g))/‖x‖` when the clamp is inactive, `g/1e-12` when it is active.
#[inline]
pub(crate) fn normalize_backward<F: Float>(x: &[F], g: &mut [F]) {
    let (n, through) = clamped_norm(x);
    let inv = F::ONE / n;
    if through {
        // x̂·g = (x·g)/n; g − x̂ (x̂·g) = g − x·((x·g)/n²).
        let c = dot(x, g) * inv * inv;
        for (g, &x) in g.iter_mut().zip(x) {
            *g = (*g - x * c) * inv;
        }
    } else {
        for g in g.iter_mut() {
            *g *= inv;
        }
    }
}

/// The row of logits as the softmax sees it: the raw logits, or their soft-capped values
/// `c·tanh(z/c)` produced chunk by chunk in a stack buffer (so no buffer of the row's length is
/// needed).
#[derive(Clone, Copy)]
pub(crate) struct RowZ<'x, F> {
    pub(crate) x: &'x [F],
    pub(crate) cap: Option<F>,
}

impl<'x, F: Float> RowZ<'x, F> {
    /// The value the softmax sees at class `c` (NaN if out of range, which callers exclude).
    #[inline]
    pub(crate) fn at<B: Backend<F>>(&self, c: usize) -> F {
        let v = self.x.get(c).copied().unwrap_or(F::NAN);
        match self.cap {
            Some(cap) => special::softcap(B::default(), v, cap),
            None => v,
        }
    }

    /// Calls `f(offset, values)` over the row: once with the whole raw row, or chunk by chunk
    /// with soft-capped copies.
    #[inline]
    pub(crate) fn for_chunks<B: Backend<F>>(&self, mut f: impl FnMut(usize, &[F])) {
        match self.cap {
            None => f(0, self.x),
            Some(cap) => {
                let mut buf = [F::ZERO; CHUNK];
                for (i, c) in self.x.chunks(CHUNK).enumerate() {
                    let z = &mut buf[..c.len().min(CHUNK)];
                    for (z, &v) in z.iter_mut().zip(c) {
                        *z = special::softcap(B::default(), v, cap);
                    }
                    f(i * CHUNK, z);
                }
            }
        }
    }

    /// The online log-sum-exp state of the row.
    #[inline]
    pub(crate) fn state<B: Backend<F>>(&self) -> LogSumExp<F, B> {
        let mut st = LogSumExp::new(B::default());
        self.for_chunks::<B>(|_, z| st.push_slice(z));
        st
    }

    /// `Σ_c w_c·z_c` (`Σ_c z_c` without weights).
    #[inline]
    pub(crate) fn weighted_sum<B: Backend<F>>(&self, w: Option<&[F]>) -> F {
        let mut s = F::ZERO;
        self.for_chunks::<B>(|off, z| {
            s += match w {
                Some(w) => match w.get(off..off + z.len()) {
                    Some(w) => dot(w, z),
                    None => F::NAN,
                },
                None => sum(z),
            };
        });
        s
    }

    /// Shannon entropy (nats) of the row's softmax. Raw rows go to softmax-core's `entropy`
    /// (every edge case included); capped rows are finite (or NaN) and use the state:
    /// `H = ln Σ e^(z − m) − Σ_c p_c·(z_c − m)`, both terms non-negative.
    pub(crate) fn entropy<B: Backend<F>>(&self, st: &LogSumExp<F, B>) -> F {
        match self.cap {
            None => softmax_core::entropy(B::default(), self.x, F::ONE).unwrap_or(F::NAN),
            Some(_) => {
                let m = st.max();
                if !m.is_finite() {
                    return if m.is_nan() { m } else { F::ZERO };
                }
                let mut e = F::ZERO;
                let mut p = [F::ZERO; CHUNK];
                self.for_chunks::<B>(|_, z| {
                    let p = &mut p[..z.len().min(CHUNK)];
                    probs_into(st, z, p);
                    // The shifted values are bounded by 2c and rounded once each.
                    let mut d = [F::ZERO; CHUNK];
                    let d = &mut d[..z.len().min(CHUNK)];
                    for (d, &z) in d.iter_mut().zip(z) {
                        *d = m - z;
                    }
                    e += dot(p, d);
                });
                st.ln_sum() + e
            }
        }
    }
}

/// `x` in consecutive pieces of `n` values, the last one shorter when `n` does not divide the
/// length: softmax-core's [`chunks`] over the whole pieces, then the ragged end (nothing at all
/// for `n = 0`). No panic path: the remainder is a `checked_rem`, the split point at most the
/// length.
#[inline(always)]
pub(crate) fn pieces<T>(x: &[T], n: usize) -> impl Iterator<Item = &[T]> {
    let len = x.len();
    let whole = len - len.checked_rem(n).unwrap_or(0);
    // `min`: the split's bound check is visibly true (a remainder never exceeds the length).
    let (body, tail) = x.split_at(whole.min(len));
    chunks(body, n).chain((!tail.is_empty()).then_some(tail))
}

/// [`pieces`] of a mutable slice (softmax-core's [`chunks_mut`], then the ragged end).
#[inline(always)]
pub(crate) fn pieces_mut<T>(x: &mut [T], n: usize) -> impl Iterator<Item = &mut [T]> {
    let len = x.len();
    let whole = len - len.checked_rem(n).unwrap_or(0);
    // `min`: the split's bound check is visibly true (a remainder never exceeds the length).
    let (body, tail) = x.split_at_mut(whole.min(len));
    chunks_mut(body, n).chain((!tail.is_empty()).then_some(tail))
}
