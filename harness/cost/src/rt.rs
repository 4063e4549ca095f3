//! The common runtime of every probe image (the `empty` image is this and nothing else): the
//! vector table and reset handler, semihosting output and exit, the stack paint and scan, the
//! two marker functions that bracket the measured call, and the report printed over
//! semihosting:
//!
//! ```text
//! cost 1
//! marks <first address of cost_mark_begin> <first address of cost_mark_end>   (hex)
//! stack <bytes below the stack pointer at the call that the call overwrote>   (hex)
//! ok <1 if the kernel returned Ok>
//! result <the kernel's output bytes>                                           (hex)
//! end
//! ```
//!
//! then exits QEMU with status 0 (status 1 after a fault or panic). The host tool
//! (`tool/`) reads the report, checks the result and counts the instructions between the two
//! markers in QEMU's execution trace.

use core::arch::asm;
use core::hint::black_box;
use core::ptr::{addr_of, addr_of_mut, read_volatile, write_volatile};

use crate::gen::Inputs;
use crate::Probe;

/// The region painted below the stack pointer before the measured call (bytes). A call that
/// reaches its bottom fails the run instead of reporting a figure that is too small.
pub const PAINT_DEPTH: usize = 32 * 1024;

/// The paint.
const PAINT: u32 = 0xaaaa_aaaa;

extern "C" {
    // From build.rs's linker script: .data in RAM and its load address, .bss.
    static mut __cost_sdata: u32;
    static mut __cost_edata: u32;
    static __cost_sidata: u32;
    static mut __cost_sbss: u32;
    static mut __cost_ebss: u32;
}

extern "Rust" {
    /// Defined by [`crate::probe!`] in each binary: `main::<ThatProbe>()`.
    fn cost_probe_main() -> !;
}

/// The exception vectors after the initial stack pointer (which the linker script writes):
/// reset, then NMI, HardFault, MemManage, BusFault, UsageFault, 4 reserved, SVCall, DebugMonitor,
/// reserved, PendSV, SysTick. No interrupt is ever enabled.
#[link_section = ".cost_vectors"]
#[no_mangle]
#[used]
pub static COST_VECTORS: [unsafe extern "C" fn() -> !; 15] = [
    cost_reset, cost_fault, cost_fault, cost_fault, cost_fault, cost_fault, cost_fault, cost_fault,
    cost_fault, cost_fault, cost_fault, cost_fault, cost_fault, cost_fault, cost_fault,
];

/// Reset: FPU on (hard-float target), `.data` copied, `.bss` zeroed, then the probe's main.
///
/// # Safety
///
/// Only the processor calls it, through the vector table.
#[no_mangle]
pub unsafe extern "C" fn cost_reset() -> ! {
    #[cfg(target_abi = "eabihf")]
    {
        // CPACR: full access to CP10 and CP11 (the FPU), as cortex-m-rt's reset does.
        const CPACR: *mut u32 = 0xe000_ed88 as *mut u32;
        write_volatile(CPACR, read_volatile(CPACR) | (0xf << 20));
        asm!("dsb", "isb", options(nostack, preserves_flags));
    }
    let mut src = addr_of!(__cost_sidata);
    let mut dst = addr_of_mut!(__cost_sdata);
    while dst < addr_of_mut!(__cost_edata) {
        write_volatile(dst, read_volatile(src));
        dst = dst.add(1);
        src = src.add(1);
    }
    let mut b = addr_of_mut!(__cost_sbss);
    while b < addr_of_mut!(__cost_ebss) {
        write_volatile(b, 0);
        b = b.add(1);
    }
    cost_probe_main()
}

/// Every other exception (a HardFault on the Cortex-M0): report and fail.
///
/// # Safety
///
/// Only the processor calls it, through the vector table.
#[no_mangle]
pub unsafe extern "C" fn cost_fault() -> ! {
    fail("fault (HardFault or another exception)")
}

#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    fail("panic")
}

/// One semihosting call (`bkpt 0xab`, ARM's semihosting on M-profile).
#[inline(always)]
fn semihost(op: u32, arg: usize) -> usize {
    let r: usize;
    // SAFETY: a semihosting request; QEMU (`-semihosting-config enable=on`) services it and
    // reads or writes only the argument block and buffers `arg` points at, which are live.
    unsafe { asm!("bkpt #0xab", inout("r0") op as usize => r, in("r1") arg, options(nostack)) };
    r
}

const SYS_OPEN: u32 = 0x01;
const SYS_WRITE: u32 = 0x05;
const SYS_EXIT: u32 = 0x18;
/// `ADP_Stopped_ApplicationExit`: QEMU exits with status 0.
const EXIT_SUCCESS: usize = 0x20026;
/// `ADP_Stopped_RunTimeErrorUnknown`: QEMU exits with status 1.
const EXIT_FAILURE: usize = 0x20023;

fn exit(success: bool) -> ! {
    semihost(SYS_EXIT, if success { EXIT_SUCCESS } else { EXIT_FAILURE });
    // Not reached under QEMU.
    loop {
        // SAFETY: a breakpoint; without a debugger it halts (locks up) the core.
        unsafe { asm!("bkpt #0", options(nomem, nostack)) };
    }
}

/// Host stdout (semihosting `:tt` opened for writing) or stderr (for appending), line-buffered
/// through a small buffer.
struct Out {
    handle: usize,
    buf: [u8; 128],
    len: usize,
}

impl Out {
    fn open(stderr: bool) -> Out {
        let name = b":tt\0";
        let args = [name.as_ptr() as usize, if stderr { 8 } else { 4 }, 3];
        let handle = semihost(SYS_OPEN, args.as_ptr() as usize);
        Out {
            handle,
            buf: [0; 128],
            len: 0,
        }
    }

    fn flush(&mut self) {
        if self.len > 0 {
            let args = [self.handle, self.buf.as_ptr() as usize, self.len];
            if semihost(SYS_WRITE, args.as_ptr() as usize) != 0 {
                exit(false);
            }
            self.len = 0;
        }
    }

    fn byte(&mut self, b: u8) {
        if self.len == self.buf.len() {
            self.flush();
        }
        self.buf[self.len] = b;
        self.len += 1;
    }

    fn str(&mut self, s: &str) {
        for &b in s.as_bytes() {
            self.byte(b);
        }
    }

    fn hex_byte(&mut self, b: u8) {
        const DIGITS: &[u8; 16] = b"0123456789abcdef";
        self.byte(DIGITS[(b >> 4) as usize]);
        self.byte(DIGITS[(b & 15) as usize]);
    }

    fn hex_u32(&mut self, v: u32) {
        for b in v.to_be_bytes() {
            self.hex_byte(b);
        }
    }
}

pub fn fail(what: &str) -> ! {
    let mut err = Out::open(true);
    err.str("error: ");
    err.str(what);
    err.byte(b'\n');
    err.flush();
    exit(false)
}

/// The first of the two markers: the host counts the trace lines from this function's first
/// instruction to [`cost_mark_end`]'s. (Their bodies differ so that no pass merges them.)
#[inline(never)]
#[no_mangle]
pub extern "C" fn cost_mark_begin() {
    // SAFETY: a no-op.
    unsafe { asm!("nop", options(nomem, nostack, preserves_flags)) };
}

/// The second marker (see [`cost_mark_begin`]).
#[inline(never)]
#[no_mangle]
pub extern "C" fn cost_mark_end() {
    // SAFETY: no-ops.
    unsafe { asm!("nop", "nop", options(nomem, nostack, preserves_flags)) };
}

/// The measured call: the probe's kernel and nothing else (its arguments are in `p`, behind a
/// `black_box`ed pointer, so nothing about them is known at compile time).
#[inline(never)]
fn measured<P: Probe>(p: &mut P) {
    p.run();
    // SAFETY: an empty asm statement. Not `pure`, so the empty image still calls this function.
    unsafe { asm!("", options(nomem, nostack, preserves_flags)) };
}

/// The rows every image generates (see [`Inputs`]).
static mut INPUTS: Inputs = Inputs::ZERO;

/// Generates the inputs (once).
#[inline(never)]
fn start() -> &'static Inputs {
    // SAFETY: the only reference to INPUTS ever made (called once), turned shared on return.
    let inputs: &'static mut Inputs = unsafe { &mut *addr_of_mut!(INPUTS) };
    inputs.fill();
    inputs
}

/// Paints the [`PAINT_DEPTH`] bytes below the stack pointer with [`PAINT`] and returns the
/// stack pointer. Assembly, so that it is the same instructions in every image and certainly
/// uses no stack itself; the caller's frame (above the stack pointer) is untouched.
#[inline(always)]
fn paint() -> usize {
    let sp: usize;
    // SAFETY: writes only the free stack below the stack pointer, which nothing live occupies
    // (no interrupt is enabled); `main` checked that it lies above the static data.
    unsafe {
        asm!(
            "mov r0, sp",
            "mov r1, r0",
            "subs r1, r1, r2",
            "2:",
            "str r3, [r1]",
            "adds r1, #4",
            "cmp r1, r0",
            "blo 2b",
            out("r0") sp,
            out("r1") _,
            in("r2") PAINT_DEPTH,
            in("r3") PAINT,
            options(nostack),
        )
    };
    sp
}

/// The lowest address in `[sp − PAINT_DEPTH, sp)` from which the paint is intact up to `sp`
/// (`sp` if the call wrote nothing below `sp`). Assembly, like [`paint`].
#[inline(always)]
fn scan(sp: usize) -> usize {
    let low: usize;
    // SAFETY: reads of the painted region.
    unsafe {
        asm!(
            "subs r1, r0, r2",
            "2:",
            "cmp r1, r0",
            "bhs 3f",
            "ldr r2, [r1]",
            "cmp r2, r3",
            "bne 3f",
            "adds r1, #4",
            "b 2b",
            "3:",
            in("r0") sp,
            out("r1") low,
            inout("r2") PAINT_DEPTH => _,
            in("r3") PAINT,
            options(nostack, readonly),
        )
    };
    low
}

/// The report and the exit (one copy for every probe: the arguments are opaque).
#[inline(never)]
fn finish(sp: usize, low: usize, ok: bool, result: &[u8]) -> ! {
    if low + PAINT_DEPTH <= sp {
        fail("the measured call reached the bottom of the painted stack region");
    }
    let mut out = Out::open(false);
    out.str("cost 1\nmarks ");
    out.hex_u32(cost_mark_begin as *const () as usize as u32 & !1);
    out.byte(b' ');
    out.hex_u32(cost_mark_end as *const () as usize as u32 & !1);
    out.str("\nstack ");
    out.hex_u32((sp - low) as u32);
    out.str("\nok ");
    out.byte(if ok { b'1' } else { b'0' });
    out.str("\nresult ");
    for &b in result {
        out.hex_byte(b);
    }
    out.str("\nend\n");
    out.flush();
    exit(true)
}

/// The whole run of one probe image; called by the binary's [`crate::probe!`]. Everything but
/// the probe's setup and its measured call is in functions that are the same in every image
/// (`start`, `finish`) or in assembly (`paint`, `scan`), so that the empty image's flash and
/// instruction count are the same runtime's.
pub fn main<P: Probe>() -> ! {
    let mut probe = P::setup(start());
    let sp: usize;
    // SAFETY: reads SP.
    unsafe { asm!("mov {}, sp", out(reg) sp, options(nomem, nostack, preserves_flags)) };
    if sp - PAINT_DEPTH < addr_of!(__cost_ebss) as usize {
        fail("the paint region overlaps static data: not enough RAM");
    }
    // Paint below this frame, call, find the lowest word the call changed.
    let sp = paint();
    cost_mark_begin();
    measured(black_box(&mut probe));
    cost_mark_end();
    let low = scan(sp);
    probe.after();
    let probe = black_box(&probe);
    finish(sp, low, black_box(probe.ok()), black_box(probe.result()))
}
