//! The embedded cost table's probe images: one binary per kernel (`src/bin/`), each calling only
//! that kernel once on fixed inputs, plus `empty`, the same runtime with nothing to call. The
//! host tool (`tool/`, driven by `report.sh` and `check.sh`) builds them for the Cortex-M4F and
//! the Cortex-M0 at opt-level `s` and `3`, and measures
//!
//! * flash: `text + data` of the image minus that of `empty`;
//! * stack: the bytes below the stack pointer that the call overwrote (paint and scan, [`rt`]);
//! * instructions: counted in QEMU's execution trace between the two marker functions around
//!   the call, minus the same count of `empty`.
//!
//! Every image prints the kernel's output over semihosting; the tool checks it against an f64
//! reference computed from the same inputs ([`gen`]), so a deleted or broken call cannot pass.
#![no_std]

pub mod gen;
pub mod rt;

pub use gen::{Inputs, D, N, TILE_KEYS};

/// One probe: the state its kernel call needs, the call, and what it produced.
pub trait Probe {
    /// Everything before the measured call (parameters, buffers, a filled KV cache), from the
    /// common inputs.
    fn setup(inputs: &'static Inputs) -> Self;

    /// The measured call: one call of the kernel.
    fn run(&mut self);

    /// Whether the kernel returned `Ok` (the run fails otherwise).
    fn ok(&self) -> bool;

    /// The kernel's output, as bytes (little-endian), for the host's check.
    fn result(&self) -> &[u8];

    /// Runs after the measured call and the stack scan, before [`Probe::result`]: for a probe
    /// whose kernel writes a wider type than the output it reports (not measured).
    fn after(&mut self) {}
}

/// Element types whose slices can be viewed as bytes.
pub trait Plain: Copy {}
impl Plain for f32 {}
impl Plain for i8 {}
impl Plain for i16 {}
impl Plain for i32 {}

/// The bytes of a slice of plain numbers.
pub fn bytes<T: Plain>(s: &[T]) -> &[u8] {
    // SAFETY: `Plain` types have no padding and every byte of them is initialised; the slice
    // of bytes covers exactly the same memory, with the same lifetime, and `u8` has alignment 1.
    unsafe { core::slice::from_raw_parts(s.as_ptr().cast::<u8>(), core::mem::size_of_val(s)) }
}

/// Makes the binary's entry: `probe!(MyProbe);` runs [`rt::main`] for `MyProbe`.
#[macro_export]
macro_rules! probe {
    ($p:ty) => {
        #[no_mangle]
        fn cost_probe_main() -> ! {
            $crate::rt::main::<$p>()
        }
    };
}

/// A whole probe of a kernel from the f32 row to an f32 row of the same length: `x` and `y`
/// reach the call through `black_box`, the call's `Result` says whether it ran.
///
/// `row_probe!(|x, y| softmax_core::softmax(Poly, x, y));`
#[macro_export]
macro_rules! row_probe {
    (|$x:ident, $y:ident| $call:expr) => {
        struct P {
            x: &'static [f32; $crate::N],
            y: [f32; $crate::N],
            ok: bool,
        }

        impl $crate::Probe for P {
            fn setup(inputs: &'static $crate::Inputs) -> Self {
                P {
                    x: &inputs.f32,
                    y: [0.0; $crate::N],
                    ok: false,
                }
            }
            fn run(&mut self) {
                let $x = core::hint::black_box(&self.x[..]);
                let $y = core::hint::black_box(&mut self.y[..]);
                self.ok = $call.is_ok();
            }
            fn ok(&self) -> bool {
                self.ok
            }
            fn result(&self) -> &[u8] {
                $crate::bytes(&self.y)
            }
        }

        $crate::probe!(P);
    };
}

/// The FMA probes' dot products: `s_j = row(q, k_j)` for each key row `k_j` (`k` in rows of
/// `d`), as many as `s` and `k` hold; `false` (nothing done) if `d = 0`.
#[inline(always)]
pub fn dot_rows(
    q: &[f32],
    k: &[f32],
    d: usize,
    s: &mut [f32],
    row: impl Fn(&[f32], &[f32]) -> f32,
) -> bool {
    if d == 0 {
        return false;
    }
    for (s, kj) in s.iter_mut().zip(k.chunks_exact(d)) {
        *s = row(q, kj);
    }
    true
}

/// One dot product as a sequential chain of correctly rounded fused multiply-adds in software:
/// `acc = softmax_core::fast::fma(q_t, k_t, acc)` for `t = 0, 1, …` from `acc = 0` (over the
/// common length). The same bits on every target, and the same bits as the chain of hardware
/// `vfma.f32` (both round `q_t·k_t + acc` once, to nearest).
#[inline(always)]
pub fn fma_chain_soft(q: &[f32], k: &[f32]) -> f32 {
    let mut acc = 0.0;
    for (&a, &b) in q.iter().zip(k) {
        acc = softmax_core::fast::fma(a, b, acc);
    }
    acc
}

/// A whole probe of the dot-product rows: the [`TILE_KEYS`] = 128 dot products of the attention
/// tile's query (`Inputs::q`, [`D`] = 64 values) with its 128 key rows ([`gen::tile_keys`], made in
/// `setup`: not measured), `8192` multiply-adds. `q` (`D` values), `k` (`TILE_KEYS` rows of `D`)
/// and `s` (`TILE_KEYS` outputs) reach the call through `black_box`; `d` is `D`, also through
/// `black_box` (so no loop's length is known at compile time, as in a real caller); the
/// expression says whether the call succeeded.
///
/// `dot_probe!(|q, k, d, s| softmax_core::linalg::matmul_nt(q, k, d, s).is_ok());`
#[macro_export]
macro_rules! dot_probe {
    (|$q:ident, $k:ident, $d:ident, $s:ident| $call:expr) => {
        static mut K: [f32; $crate::TILE_KEYS * $crate::D] = [0.0; $crate::TILE_KEYS * $crate::D];

        struct P {
            q: [f32; $crate::D],
            k: &'static [f32],
            s: [f32; $crate::TILE_KEYS],
            ok: bool,
        }

        impl $crate::Probe for P {
            fn setup(inputs: &'static $crate::Inputs) -> Self {
                // SAFETY: the only reference ever made to K (setup runs once).
                let k = unsafe { &mut *core::ptr::addr_of_mut!(K) };
                $crate::gen::tile_keys(&inputs.f32, k);
                P {
                    q: inputs.q,
                    k,
                    s: [0.0; $crate::TILE_KEYS],
                    ok: false,
                }
            }
            fn run(&mut self) {
                let $q = core::hint::black_box(&self.q[..]);
                let $k = core::hint::black_box(self.k);
                let $d = core::hint::black_box($crate::D);
                let $s = core::hint::black_box(&mut self.s[..]);
                self.ok = $call;
            }
            fn ok(&self) -> bool {
                self.ok
            }
            fn result(&self) -> &[u8] {
                $crate::bytes(&self.s)
            }
        }

        $crate::probe!(P);
    };
}

/// A whole probe of one step of attention-core's streaming causal decoder (`Cache::decode`:
/// push the newest token's key and value, then attend with its query) on a `KvCacheSlice` of
/// stored element `$elem` and capacity [`N`], one head, d = dv = [`D`], `Poly`, the default
/// scale: `$make` builds the empty cache from the probe's static stores (`Result`, `$what`
/// names it in a failure); `setup` pushes `N − 1` tokens (not measured), and the measured call
/// pushes the last one and attends over all `N` keys. Every decoder-step probe (f32, int8, f16)
/// uses the same q, keys and values, so their rows compare instruction for instruction per key.
///
/// `decoder_probe!(f32, "KvCacheSlice::new", { KvCacheSlice::new(ks, vs, 1, D, D, None) });`
#[macro_export]
macro_rules! decoder_probe {
    ($elem:ty, $what:literal, $make:block) => {
        struct P {
            cache: attention_core::KvCacheSlice<'static, $elem>,
            q: [f32; $crate::D],
            k: [f32; $crate::D],
            v: [f32; $crate::D],
            o: [f32; $crate::D],
            ok: bool,
        }

        impl $crate::Probe for P {
            fn setup(inputs: &'static $crate::Inputs) -> Self {
                let mut cache = match $make {
                    Ok(c) => c,
                    Err(_) => $crate::rt::fail($what),
                };
                let mut kv = $crate::gen::Rng::new($crate::gen::SEED_KV);
                let (mut k, mut v) = ([0.0; $crate::D], [0.0; $crate::D]);
                for _ in 0..$crate::N - 1 {
                    kv.fill_from(&inputs.f32, &mut k);
                    kv.fill_from(&inputs.f32, &mut v);
                    if cache.push(&k, &v).is_err() {
                        $crate::rt::fail("push");
                    }
                }
                kv.fill_from(&inputs.f32, &mut k);
                kv.fill_from(&inputs.f32, &mut v);
                let q = inputs.q;
                P {
                    cache,
                    q,
                    k,
                    v,
                    o: [0.0; $crate::D],
                    ok: false,
                }
            }
            fn run(&mut self) {
                self.ok = self
                    .cache
                    .decode(
                        softmax_core::backend::Poly,
                        core::hint::black_box(&self.q[..]),
                        core::hint::black_box(&self.k[..]),
                        core::hint::black_box(&self.v[..]),
                        &attention_core::DecodeOptions::new(),
                        attention_core::Output::new(core::hint::black_box(&mut self.o[..])),
                    )
                    .is_ok();
            }
            fn ok(&self) -> bool {
                self.ok
            }
            fn result(&self) -> &[u8] {
                $crate::bytes(&self.o)
            }
        }

        $crate::probe!(P);
    };
}

/// A whole probe of a quantized kernel: parameters made in `setup` (not measured), the int8 or
/// int16 row in, `N` outputs of type `$out`, an `i32` scratch of `N` (for the kernels that keep
/// their exps; unused by the others, so not `black_box`ed here: a kernel that takes it wraps it
/// itself). `x` and `y` reach the call through `black_box`.
///
/// `quant_probe!(S8Params = params_expr; i8 -> i8; |p, x, scratch, y| softmax_s8(p, x, N, black_box(scratch), y));`
#[macro_export]
macro_rules! quant_probe {
    ($pt:ty = $params:expr; $input:ident -> $out:ty;
     |$p:ident, $x:ident, $s:ident, $y:ident| $call:expr) => {
        struct P {
            params: $pt,
            x: &'static [$input; $crate::N],
            scratch: [i32; $crate::N],
            y: [$out; $crate::N],
            ok: bool,
        }

        impl $crate::Probe for P {
            fn setup(inputs: &'static $crate::Inputs) -> Self {
                P {
                    params: $params,
                    x: &inputs.$input,
                    scratch: [0; $crate::N],
                    y: [0; $crate::N],
                    ok: false,
                }
            }
            fn run(&mut self) {
                let $p = &self.params;
                let $x = core::hint::black_box(&self.x[..]);
                let $s = &mut self.scratch[..];
                let $y = core::hint::black_box(&mut self.y[..]);
                self.ok = $call.is_ok();
            }
            fn ok(&self) -> bool {
                self.ok
            }
            fn result(&self) -> &[u8] {
                $crate::bytes(&self.y)
            }
        }

        $crate::probe!(P);
    };
}
