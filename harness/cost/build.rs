//! Writes the linker script of the probe images into OUT_DIR as `cost.x` (the memory map of the
//! QEMU machine that runs the target, then the sections) and passes `-Tcost.x` to the linker of
//! every binary. The images bring their own minimal runtime (`src/rt.rs`), so the crate has no
//! dependency but the kernels', and no proc-macro or build script of a runtime crate to compile.

use std::{env, fs, path::PathBuf};

fn main() {
    let target = env::var("TARGET").expect("cargo sets TARGET");
    let memory = if target.starts_with("thumbv7em") {
        // QEMU mps2-an386 (Cortex-M4F): 4 MiB of code memory at 0, 4 MiB of RAM.
        "MEMORY\n{\n  FLASH : ORIGIN = 0x00000000, LENGTH = 4M\n  RAM   : ORIGIN = 0x20000000, LENGTH = 4M\n}\n"
    } else if target.starts_with("thumbv6m") {
        // QEMU microbit (nRF51822, Cortex-M0): 256 KiB of flash. Its 16 KiB of RAM cannot hold
        // the attention probes' f32 K/V (64 KiB for the tile, 128 KiB for the decoder's cache),
        // so report.sh raises the SoC's SRAM to 256 KiB (`-global nrf51-soc.sram-size=262144`);
        // the code, the instructions executed and the stack depth do not depend on it.
        "MEMORY\n{\n  FLASH : ORIGIN = 0x00000000, LENGTH = 256K\n  RAM   : ORIGIN = 0x20000000, LENGTH = 256K\n}\n"
    } else {
        panic!(
            "softmax-cost: unsupported target {target}; build with --target thumbv7em-none-eabihf \
             (QEMU mps2-an386) or thumbv6m-none-eabi (QEMU microbit)"
        );
    };
    let sections = r#"
ENTRY(cost_reset);
EXTERN(COST_VECTORS);

SECTIONS
{
  /* Initial stack pointer, then the 15 exception vectors of src/rt.rs. */
  .vector_table ORIGIN(FLASH) :
  {
    LONG(ORIGIN(RAM) + LENGTH(RAM));
    KEEP(*(.cost_vectors));
  } > FLASH

  .text : ALIGN(4)
  {
    *(.text .text.*);
  } > FLASH

  .rodata : ALIGN(4)
  {
    *(.rodata .rodata.*);
    . = ALIGN(4);
  } > FLASH

  .data : ALIGN(4)
  {
    __cost_sdata = .;
    *(.data .data.*);
    . = ALIGN(4);
    __cost_edata = .;
  } > RAM AT > FLASH
  __cost_sidata = LOADADDR(.data);

  .bss (NOLOAD) : ALIGN(4)
  {
    __cost_sbss = .;
    *(.bss .bss.*);
    *(COMMON);
    . = ALIGN(4);
    __cost_ebss = .;
  } > RAM

  __cost_stack_top = ORIGIN(RAM) + LENGTH(RAM);

  /DISCARD/ :
  {
    *(.ARM.exidx .ARM.exidx.* .ARM.extab.*);
  }
}
"#;
    let out = PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    fs::write(out.join("cost.x"), format!("{memory}{sections}")).expect("write cost.x");
    println!("cargo:rustc-link-search={}", out.display());
    println!("cargo:rustc-link-arg-bins=-Tcost.x");
    println!("cargo:rerun-if-changed=build.rs");
}
