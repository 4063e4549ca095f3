//! Writes the memory map of the QEMU machine that runs this target into OUT_DIR as `memory.x`
//! (cortex-m-rt's `link.x` INCLUDEs it) and puts OUT_DIR on the linker search path.

use std::{env, fs, path::PathBuf};

fn main() {
    let target = env::var("TARGET").expect("cargo sets TARGET");

    // An environment RUSTFLAGS replaces the rustflags of .cargo/config.toml; without -Tlink.x the
    // link still "succeeds", with an empty ELF that QEMU cannot run. Refuse instead.
    let flags = env::var("CARGO_ENCODED_RUSTFLAGS").unwrap_or_default();
    if !flags.split('\x1f').any(|f| f.contains("-Tlink.x")) {
        panic!(
            "-Tlink.x is missing from the rustflags ({flags:?}): a RUSTFLAGS or \
             CARGO_TARGET_<TRIPLE>_RUSTFLAGS environment variable overrides .cargo/config.toml. \
             Unset it (run.sh does), or pass extra flags with `cargo rustc --release -- <flags>`."
        );
    }

    let memory_x = if target.starts_with("thumbv7em") {
        // QEMU mps2-an386 (Cortex-M4F): 4 MiB of code memory at 0, 4 MiB of RAM.
        "MEMORY\n{\n  FLASH : ORIGIN = 0x00000000, LENGTH = 4M\n  RAM   : ORIGIN = 0x20000000, LENGTH = 4M\n}\n"
    } else if target.starts_with("thumbv6m") {
        // QEMU microbit (nRF51822, Cortex-M0): 256 KiB flash, 16 KiB RAM.
        "MEMORY\n{\n  FLASH : ORIGIN = 0x00000000, LENGTH = 256K\n  RAM   : ORIGIN = 0x20000000, LENGTH = 16K\n}\n"
    } else {
        panic!(
            "softmax-firmware: unsupported target {target}; build with \
             --target thumbv7em-none-eabihf (QEMU mps2-an386) or thumbv6m-none-eabi (QEMU microbit)"
        );
    };
    let out = PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    fs::write(out.join("memory.x"), memory_x).expect("write memory.x");
    println!("cargo:rustc-link-search={}", out.display());
    println!("cargo:rerun-if-changed=build.rs");
}
