#!/usr/bin/env bash
# Builds the release firmware for one QEMU machine, runs the deterministic suite on it and writes
# the firmware's stdout to <output-log>: per image a `shard <i> <n>` line, one
# `case <name> <digest>` line per case, and `done <count>`.
#
#   usage: harness/firmware/run.sh <m4|m0> <output-log>
#     m4: thumbv7em-none-eabihf on QEMU mps2-an386 (Cortex-M4F, hard-float), one image
#     m0: thumbv6m-none-eabi    on QEMU microbit   (Cortex-M0, soft-float; 256 KiB flash,
#         16 KiB RAM), the suite split into SOFTMAX_FW_SHARDS images (default 30) that each
#         fit the flash; they run one after the other and their output is concatenated
#   SOFTMAX_FW_ONLY=<prefix> builds only the cases whose name starts with <prefix> (e.g.
#   `loss/`, `attention/`): one crate's flash and stack on their own; with
#   SOFTMAX_FW_STACK_REPORT=1 the firmware prints every case's stack use on stderr.
#
# Fails if a build fails (including an image that no longer fits the flash: raise
# SOFTMAX_FW_SHARDS), QEMU is missing, QEMU exits non-zero (panic, HardFault, stack budget
# exceeded) or does not finish within 120 s, or an image's output has no `done` line.
#
# Needs: rustup target add thumbv7em-none-eabihf thumbv6m-none-eabi; qemu-system-arm (>= 7.2).
# Then compare with the host:
#   SOFTMAX_FIRMWARE_LOG_M4=<m4 log> SOFTMAX_FIRMWARE_LOG_M0=<m0 log> \
#     cargo test -p harness --test on_target -- --include-ignored
set -euo pipefail

usage() {
    echo "usage: $0 <m4|m0> <output-log>" >&2
    exit 2
}
[ $# -eq 2 ] || usage
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
case "$1" in
    m4)
        target=thumbv7em-none-eabihf
        machine=(-machine mps2-an386 -cpu cortex-m4)
        shards="${SOFTMAX_FW_SHARDS:-1}"
        ;;
    m0)
        target=thumbv6m-none-eabi
        machine=(-machine microbit)
        shards="${SOFTMAX_FW_SHARDS:-30}"
        ;;
    *) usage ;;
esac
log="$2"
case "$shards" in
    '' | *[!0-9]* | 0) echo "error: SOFTMAX_FW_SHARDS must be a positive integer" >&2; exit 2 ;;
esac

if ! command -v qemu-system-arm >/dev/null; then
    echo "error: qemu-system-arm not found (Debian/Ubuntu: apt-get install -y qemu-system-arm)" >&2
    exit 1
fi

# An environment RUSTFLAGS would replace the -Tlink.x of .cargo/config.toml (build.rs refuses to
# build then); flags meant for host builds are not meant for the firmware anyway.
unset RUSTFLAGS CARGO_ENCODED_RUSTFLAGS CARGO_BUILD_RUSTFLAGS
unset CARGO_TARGET_THUMBV7EM_NONE_EABIHF_RUSTFLAGS CARGO_TARGET_THUMBV6M_NONE_EABI_RUSTFLAGS
# The firmware has its own target directory (a workspace CARGO_TARGET_DIR is not reused).
target_dir="$here/target"
elf="$target_dir/$target/release/softmax-firmware"

now() { date +%s.%N; }
mkdir -p "$(dirname "$log")"
: >"$log"
part="$(mktemp)"
trap 'rm -f "$part"' EXIT
build_s=0
run_s=0
max_text=0
for ((i = 0; i < shards; i++)); do
    t0=$(now)
    (cd "$here" && SOFTMAX_FW_SHARD="$i/$shards" \
        cargo build --quiet --release --locked --target "$target" --target-dir "$target_dir")
    t1=$(now)
    if command -v llvm-size >/dev/null; then
        text=$(llvm-size "$elf" | awk 'NR == 2 { print $1 }')
        [ "$text" -gt "$max_text" ] && max_text=$text
    fi
    set +e
    timeout 120 qemu-system-arm "${machine[@]}" -nographic \
        -semihosting-config enable=on,target=native -kernel "$elf" </dev/null >"$part"
    rc=$?
    set -e
    t2=$(now)
    cat "$part" >>"$log"
    if [ $rc -eq 124 ]; then
        echo "error: QEMU ($1, shard $i/$shards) did not finish within 120 s; log in $log" >&2
        exit 1
    elif [ $rc -ne 0 ]; then
        echo "error: QEMU ($1, shard $i/$shards) exited with status $rc; log in $log" >&2
        exit 1
    fi
    if ! grep -q '^done ' "$part"; then
        echo "error: shard $i/$shards printed no 'done' line; log in $log" >&2
        exit 1
    fi
    build_s=$(awk -v a="$build_s" -v b="$t0" -v c="$t1" 'BEGIN { print a + c - b }')
    run_s=$(awk -v a="$run_s" -v b="$t1" -v c="$t2" 'BEGIN { print a + c - b }')
done
awk -v m="$1" -v k="$shards" -v n="$(grep -c '^case ' "$log")" -v b="$build_s" -v r="$run_s" \
    -v t="$max_text" -v l="$log" 'BEGIN {
        printf "%s: %d cases in %d image(s), largest .text %d bytes; build %.1f s, QEMU %.1f s -> %s\n",
            m, n, k, t, b, r, l }' >&2
