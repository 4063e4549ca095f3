#!/usr/bin/env bash
# Builds the embedded cost table: harness/cost/table.md and harness/cost/table.json.
#
#   usage: harness/cost/report.sh [--jobs N] [--singlestep]
#     --jobs N      N QEMU runs at a time (default: the number of CPUs)
#     --singlestep  count instructions with QEMU's one-instruction-per-block trace instead (five
#                   times slower; gives the same table, which is how the default was validated)
#
# What it measures, per kernel, on the Cortex-M4F (thumbv7em-none-eabihf, QEMU mps2-an386) and
# the Cortex-M0 (thumbv6m-none-eabi, QEMU microbit with 256 KiB of SRAM), each at opt-level "s"
# and "3" (release, fat LTO, one codegen unit, panic = "abort"; the profiles cost-s and cost-3
# of Cargo.toml):
#
#   flash         llvm-size's text + data of a probe image that calls only that kernel, minus
#                 the same for `empty` (the same runtime, input generation, stack paint, report
#                 and semihosting exit, with nothing to call);
#   stack         the probe paints the 32 KiB below its stack pointer with 0xaaaaaaaa, makes
#                 the call, and reports how far below the stack pointer the lowest overwritten
#                 word lies (the high-water mark of the call, bytes);
#   instructions  QEMU runs the image with `-d in_asm,exec,nochain`: every translation block's
#                 instructions are listed once when it is translated, and every execution of a
#                 block is logged (blocks are not chained). The tool streams that log through a
#                 pipe (never stored) and adds up, from the first execution of `cost_mark_begin`
#                 to the first of `cost_mark_end` (two #[inline(never)] markers around the call),
#                 the instruction count of each block executed; minus the empty image's count;
#                 divided by the elements of the call (row values, decoder keys, tile scores;
#                 multiply-adds of the dot-product probes: 128 dot products of d = 64, 8,192).
#
# Each probe (src/bin/*.rs) calls its kernel on fixed inputs (src/gen.rs: deterministic, reached
# through core::hint::black_box) and prints the output over semihosting; tool/ checks it against
# an f64 reference on the same inputs and requires the same bits in all four builds (and the
# twice-computing int8 reference to equal softmax_s8, the hardware-FMA dot products the software
# FMA ones). So every number comes from a call that ran and was right. Same inputs, same toolchain, same QEMU: the same numbers on every run.
#
# Needs (installs nothing): rustup targets thumbv7em-none-eabihf and thumbv6m-none-eabi,
# qemu-system-arm (7.2; Debian/Ubuntu: apt-get install -y qemu-system-arm), llvm-size.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=harness/cost/build.sh
source "$here/build.sh"

jobs="$(nproc 2>/dev/null || echo 2)"
extra=()
while [ $# -gt 0 ]; do
    case "$1" in
        --jobs) jobs="${2:?--jobs needs a number}"; shift 2 ;;
        --singlestep) extra+=(--singlestep); shift ;;
        *) echo "usage: $0 [--jobs N] [--singlestep]" >&2; exit 2 ;;
    esac
done

cost_prerequisites
t0=$SECONDS
cost_build
t1=$SECONDS
"$here/tool/target/release/softmax-cost-tool" report "$here" --jobs "$jobs" "${extra[@]}"
t2=$SECONDS
echo "report.sh: build $((t1 - t0)) s, measure $((t2 - t1)) s, total $((t2 - t0)) s -> $here/table.md, $here/table.json" >&2
