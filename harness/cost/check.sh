#!/usr/bin/env bash
# CI check of the embedded cost table: rebuilds every probe image (Cortex-M4F and Cortex-M0,
# opt-level s and 3), re-measures it exactly as report.sh does (flash = llvm-size text + data
# minus the empty image's; stack = painted-stack high-water mark of the call; instructions from
# QEMU's execution trace between the two markers around the call) and compares flash and stack
# with the committed harness/cost/table.json.
#
#   usage: harness/cost/check.sh [--jobs N] [--no-instructions]
#
# Fails if any kernel's flash or stack (any of the four builds, Prepare footnote included) grows
# more than 5% over table.json, printing the offending rows; passes if every figure is equal or
# smaller or within 5%, and prints every figure that moved (instruction counts included, which
# are reported but never fail the check). It also fails, like report.sh, if a probe's output is
# wrong (against an f64 reference on the same inputs), differs between the builds, or the kernel
# returned an error. After a deliberate change, rerun report.sh and commit table.md/table.json.
# --no-instructions runs QEMU without the trace (flash and stack only).
#
# Installs nothing; fails with a message if qemu-system-arm, llvm-size or one of the Rust targets
# thumbv7em-none-eabihf / thumbv6m-none-eabi is missing.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=harness/cost/build.sh
source "$here/build.sh"

jobs="$(nproc 2>/dev/null || echo 2)"
extra=()
while [ $# -gt 0 ]; do
    case "$1" in
        --jobs) jobs="${2:?--jobs needs a number}"; shift 2 ;;
        --no-instructions) extra+=(--no-instructions); shift ;;
        *) echo "usage: $0 [--jobs N] [--no-instructions]" >&2; exit 2 ;;
    esac
done

cost_prerequisites
t0=$SECONDS
cost_build
t1=$SECONDS
rc=0
"$here/tool/target/release/softmax-cost-tool" check "$here" --jobs "$jobs" "${extra[@]}" || rc=$?
t2=$SECONDS
echo "check.sh: build $((t1 - t0)) s, measure $((t2 - t1)) s, total $((t2 - t0)) s" >&2
exit "$rc"
