//! On-target runner of the deterministic suite (`softmax-suite`): runs the cases on the
//! microcontroller and prints, over semihosting,
//!
//! ```text
//! shard <i> <n>                   which part of the case table this image runs (stdout)
//! case <name> <16 hex digits>     one line per case, in table order (stdout)
//! done <number of cases>          (stdout)
//! info ...                        target facts and stack use (stderr)
//! ```
//!
//! then exits QEMU with status 0. Any failure (panic, HardFault, semihosting write error, stack
//! budget exceeded) exits with status 1, so a run that does not end with `done` and status 0 has
//! failed. One source for both targets: `thumbv7em-none-eabihf` (Cortex-M4F, hard-float; QEMU
//! `mps2-an386`) and `thumbv6m-none-eabi` (Cortex-M0, soft-float; QEMU `microbit`, 256 KiB of
//! flash, 16 KiB of RAM). `run.sh` builds and runs it; `harness/tests/on_target.rs` compares the
//! output with the host.
//!
//! # Shards
//!
//! The whole suite is about 2 MB of code (every softmax-core function monomorphised for five
//! (element type, backend) pairs), far more than the microbit's 256 KiB of flash. So the image
//! can be built for one shard of the case table: `SOFTMAX_FW_SHARD=i/n` at build time selects the
//! cases whose index is `i` modulo `n`. The selection is a `const` evaluation into a static array,
//! so the code of the other cases is not linked at all. Without the variable the image runs
//! every case (`0/1`). `run.sh m0` builds and runs all shards one after the other.
#![no_std]
#![no_main]

use core::fmt::Write;
use core::panic::PanicInfo;
use core::ptr::{addr_of, read_volatile, write_volatile};

use cortex_m_rt::{entry, exception, ExceptionFrame};
use cortex_m_semihosting::{debug, hio};
use softmax_suite::{Case, CASES};

/// `(i, n)`: this image runs the cases whose index is `i` modulo `n`.
const SHARD: (usize, usize) = parse_shard(option_env!("SOFTMAX_FW_SHARD"));

/// Parses `"i/n"` (decimal, `i < n`) at compile time; a malformed value fails the build.
const fn parse_shard(s: Option<&str>) -> (usize, usize) {
    let Some(s) = s else { return (0, 1) };
    let b = s.as_bytes();
    let (mut i, mut n, mut k, mut slash) = (0usize, 0usize, 0usize, false);
    while k < b.len() {
        match b[k] {
            b'/' if !slash => slash = true,
            d @ b'0'..=b'9' if slash => n = n * 10 + (d - b'0') as usize,
            d @ b'0'..=b'9' => i = i * 10 + (d - b'0') as usize,
            _ => panic!("SOFTMAX_FW_SHARD must look like 3/12"),
        }
        k += 1;
    }
    assert!(
        slash && n > 0 && i < n,
        "SOFTMAX_FW_SHARD must be i/n with i < n"
    );
    (i, n)
}

/// Only the cases whose name starts with this prefix (`SOFTMAX_FW_ONLY=loss/` at build time;
/// all cases without it): an image holding one crate's cases, to measure that crate's flash
/// and stack on its own.
const ONLY: &str = match option_env!("SOFTMAX_FW_ONLY") {
    Some(p) => p,
    None => "",
};

/// Whether `name` starts with [`ONLY`] (a `const fn`: the selection happens at compile time).
const fn selected_name(name: &str) -> bool {
    let (n, p) = (name.as_bytes(), ONLY.as_bytes());
    if n.len() < p.len() {
        return false;
    }
    let mut k = 0;
    while k < p.len() {
        if n[k] != p[k] {
            return false;
        }
        k += 1;
    }
    true
}

/// Whether case `index` of the table is in this image: in the shard among the cases that
/// pass the name filter.
const fn in_shard(index: usize) -> bool {
    if !selected_name(CASES[index].name) {
        return false;
    }
    let (mut k, mut rank) = (0, 0);
    while k < index {
        if selected_name(CASES[k].name) {
            rank += 1;
        }
        k += 1;
    }
    rank % SHARD.1 == SHARD.0
}

const fn shard_len() -> usize {
    let (mut k, mut count) = (0, 0);
    while k < CASES.len() {
        if in_shard(k) {
            count += 1;
        }
        k += 1;
    }
    count
}

/// The index of the first case of this image (the filler of [`SELECTED`] before it is set).
const fn first_selected() -> usize {
    let mut k = 0;
    while k < CASES.len() {
        if in_shard(k) {
            return k;
        }
        k += 1;
    }
    panic!("SOFTMAX_FW_SHARD / SOFTMAX_FW_ONLY select no case")
}

/// The cases of this shard, copied out of the table at compile time. Only these function
/// pointers end up in the image, so only their code is linked.
static SELECTED: [Case; shard_len()] = {
    let mut out = [CASES[first_selected()]; shard_len()];
    let (mut k, mut j) = (0, 0);
    while k < CASES.len() {
        if in_shard(k) {
            out[j] = CASES[k];
            j += 1;
        }
        k += 1;
    }
    out
};

/// Stack any one case may use (bytes). The Cortex-M0 target has 16 KiB of RAM and this firmware
/// has no static data (`.data` and `.bss` are empty), so this leaves 2 KiB unused. softmax-core's
/// own f64 kernels need most of it: about 10.5 KiB for `rows::kl_divergence::<f64>` (measured
/// with the KL of commit c906c7a), the suite's buffers at most about 2 KiB more. Exceeding the
/// budget fails the run on both targets, so a case that needs more is caught on the roomy
/// Cortex-M4 machine too; every run prints the peak and the case that reached it.
const STACK_BUDGET: usize = 14 * 1024;

/// Fill pattern for the stack high-water measurement (per case; build with
/// `SOFTMAX_FW_STACK_REPORT=1` to print every case's figure on stderr).
const PAINT: u32 = 0x5afe_c0de;

/// Bytes below the current stack pointer left unpainted (the frame of `paint_stack` itself).
const PAINT_MARGIN: usize = 256;

extern "C" {
    // From cortex-m-rt's link.x: the lowest address the stack may grow to (end of .bss and
    // .uninit, 4-aligned) and the initial stack pointer (end of RAM).
    static _stack_end: u32;
    static _stack_start: u32;
}

fn stack_bounds() -> (usize, usize) {
    // Only the addresses of the linker symbols are taken, never their (nonexistent) values.
    let end = addr_of!(_stack_end) as usize;
    let start = addr_of!(_stack_start) as usize;
    (end, start)
}

/// Deepest region painted below the stack pointer (bytes): more than the budget, less than the
/// time it takes to paint 4 MiB before every case on the Cortex-M4 machine.
const PAINT_DEPTH: usize = 32 * 1024;

/// The lowest address [`paint_stack`] paints.
fn paint_floor() -> usize {
    let (end, start) = stack_bounds();
    end.max(start.saturating_sub(PAINT_DEPTH))
}

/// Fills the free stack (from [`paint_floor`] up to just below the current stack pointer) with
/// [`PAINT`].
#[inline(never)]
fn paint_stack() {
    let sp = cortex_m::register::msp::read() as usize;
    let mut addr = paint_floor();
    while addr + 4 <= sp.saturating_sub(PAINT_MARGIN) {
        // SAFETY: `addr` is 4-aligned (`_stack_end` and `_stack_start` are, and we step by 4)
        // and lies between the end of all static data and the live part of the stack, in RAM
        // no one else uses: no interrupts are enabled and nothing has been allocated there.
        unsafe { write_volatile(addr as *mut u32, PAINT) };
        addr += 4;
    }
}

/// Deepest stack use since [`paint_stack`]: distance from the initial stack pointer to the
/// lowest word that no longer holds [`PAINT`]. If nothing down to the floor is left, the stack
/// reached the floor (on the microbit: ran into static data): reported as the whole region.
fn stack_peak() -> usize {
    let (_, start) = stack_bounds();
    let mut addr = paint_floor();
    // SAFETY: reads of 4-aligned words of RAM between the end of static data and the initial
    // stack pointer; all of it is mapped, and reading has no side effects.
    while addr < start && unsafe { read_volatile(addr as *const u32) } == PAINT {
        addr += 4;
    }
    start - addr
}

/// Ends the QEMU run with the given status. Never returns.
fn exit(success: bool) -> ! {
    debug::exit(if success {
        debug::EXIT_SUCCESS
    } else {
        debug::EXIT_FAILURE
    });
    // Only reached without a semihosting host (real hardware): stop here.
    loop {
        cortex_m::asm::bkpt();
    }
}

fn target_info(err: &mut hio::HostStream) {
    #[cfg(target_abi = "eabihf")]
    {
        let fpscr = cortex_m::register::fpscr::read().bits();
        // FZ (bit 24) would flush subnormals to zero, DN (bit 25) would force the default NaN:
        // either would change result bits. Reset value is 0 and this firmware never changes it.
        let _ = writeln!(
            err,
            "info target thumbv7em-none-eabihf fpscr={fpscr:#010x} fz={} dn={}",
            (fpscr >> 24) & 1,
            (fpscr >> 25) & 1
        );
    }
    #[cfg(not(target_abi = "eabihf"))]
    {
        let _ = writeln!(err, "info target thumbv6m-none-eabi soft-float");
    }
}

#[entry]
fn main() -> ! {
    let (Ok(mut out), Ok(mut err)) = (hio::hstdout(), hio::hstderr()) else {
        exit(false)
    };
    target_info(&mut err);

    let mut written = writeln!(out, "shard {} {}", SHARD.0, SHARD.1).is_ok();
    let mut count = 0usize;
    let (mut peak, mut peak_case) = (0usize, "");
    let mut over = false;
    // With the default shard 0/1 this is exactly `softmax_suite::run_all`, plus a stack
    // measurement around every case.
    for case in &SELECTED {
        paint_stack();
        let digest = softmax_suite::run_case(case, softmax_suite::DEFAULT_SEED);
        let used = stack_peak();
        written &= writeln!(out, "case {} {digest:016x}", case.name).is_ok();
        count += 1;
        if option_env!("SOFTMAX_FW_STACK_REPORT").is_some() {
            let _ = writeln!(err, "info stack {} {used}", case.name);
        }
        if used > peak {
            (peak, peak_case) = (used, case.name);
        }
        if used > STACK_BUDGET || paint_floor() + PAINT_MARGIN >= stack_bounds().1 - used {
            over = true;
            let _ = writeln!(
                err,
                "error: {} used {used} bytes of stack (budget {STACK_BUDGET})",
                case.name
            );
        }
    }
    written &= writeln!(out, "done {count}").is_ok();

    let _ = writeln!(
        err,
        "info stack peak {peak} bytes in {peak_case} (budget {STACK_BUDGET})"
    );
    if !written {
        let _ = writeln!(err, "error: a semihosting write failed");
    }
    exit(written && !over && count == SELECTED.len())
}

#[exception]
unsafe fn HardFault(frame: &ExceptionFrame) -> ! {
    if let Ok(mut err) = hio::hstderr() {
        let _ = writeln!(err, "error: HardFault at pc={:#010x}", frame.pc());
    }
    exit(false)
}

#[panic_handler]
fn panic(info: &PanicInfo) -> ! {
    if let Ok(mut err) = hio::hstderr() {
        let _ = writeln!(err, "error: panic: {info}");
    }
    exit(false)
}
