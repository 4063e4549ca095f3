//! Writes a Cortex-M memory map as `memory.x` into OUT_DIR (cortex-m-rt's `link.x`
//! INCLUDEs it) and refuses to build without `-Tlink.x`.

use std::{env, fs, path::PathBuf};

fn main() {
    let target = env::var("TARGET").expect("cargo sets TARGET");
    // An environment RUSTFLAGS replaces the rustflags of .cargo/config.toml; without -Tlink.x the
    // link "succeeds" with an empty ELF, which would prove nothing. Refuse instead.
    let flags = env::var("CARGO_ENCODED_RUSTFLAGS").unwrap_or_default();
    if !flags.split('\x1f').any(|f| f.contains("-Tlink.x")) {
        panic!(
            "-Tlink.x is missing from the rustflags ({flags:?}): a RUSTFLAGS or \
             CARGO_TARGET_<TRIPLE>_RUSTFLAGS environment variable overrides .cargo/config.toml. \
             Unset it (check.sh does), or pass extra flags with `cargo rustc --release -- <flags>`."
        );
    }
    assert!(
        target == "thumbv7em-none-eabihf",
        "softmax-no-panic is built for thumbv7em-none-eabihf only, not {target}"
    );
    // The probe is a link-time proof and is never flashed: at opt-level 3 it holds every
    // monomorphisation of softmax-core (about 6 MB of code), so the code region is made large
    // enough for any of them rather than matching a real part.
    let out = PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    fs::write(
        out.join("memory.x"),
        "MEMORY\n{\n  FLASH : ORIGIN = 0x00000000, LENGTH = 256M\n  RAM   : ORIGIN = 0x20000000, LENGTH = 4M\n}\n",
    )
    .expect("write memory.x");
    println!("cargo:rustc-link-search={}", out.display());
    println!("cargo:rerun-if-changed=build.rs");
}
