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
