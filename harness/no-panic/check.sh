#!/usr/bin/env bash
# Panic-freedom proof for softmax-core (see src/main.rs):
#   1. builds the probe in release for thumbv7em-none-eabihf, at each optimisation level in
#      SOFTMAX_NO_PANIC_OPT_LEVELS (default "3 s": cargo's release default and the size-optimised
#      level firmware is usually built with); each build must link, which it does only if no
#      panic path survives in any public softmax-core function (the panic handler calls an
#      undefined symbol);
#   2. self-test: builds it again with the `deliberate-panic` feature (one runtime slice index)
#      and asserts that this link FAILS, on exactly that undefined symbol, so a passing step 1
#      means something.
# On a failure of step 1 it rebuilds with `--why-live` so the linker names the call chain that
# keeps the panic handler alive.
#
#   usage: harness/no-panic/check.sh
#   needs: rustup target add thumbv7em-none-eabihf
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$here"

# An environment RUSTFLAGS would replace the -Tlink.x of .cargo/config.toml (build.rs refuses to
# build then).
unset RUSTFLAGS CARGO_ENCODED_RUSTFLAGS CARGO_BUILD_RUSTFLAGS CARGO_TARGET_THUMBV7EM_NONE_EABIHF_RUSTFLAGS
target_dir="$here/target"
elf="$target_dir/thumbv7em-none-eabihf/release/softmax-no-panic"
symbol=__softmax_panic_reachable
out="$(mktemp)"
trap 'rm -f "$out"' EXIT
nm_tool=$(command -v nm || command -v llvm-nm || true)
size_tool=$(command -v size || command -v llvm-size || true)

for opt in ${SOFTMAX_NO_PANIC_OPT_LEVELS:-3 s}; do
    export CARGO_PROFILE_RELEASE_OPT_LEVEL="$opt"
    start=$(date +%s)
    if ! cargo build --release --locked --target-dir "$target_dir" >"$out" 2>&1; then
        cat "$out" >&2
        if grep -q "undefined symbol: $symbol" "$out"; then
            echo "FAIL (opt-level $opt): a panic path survives in softmax-core; the chain that" \
                "keeps the panic handler alive:" >&2
            cargo rustc --release --locked --target-dir "$target_dir" --bin softmax-no-panic -- \
                -C "link-arg=--why-live=*rust_begin_unwind*" 2>&1 | grep -E "why-live|>>>|^\s" >&2 || true
        else
            echo "FAIL (opt-level $opt): the probe did not build (see above)" >&2
        fi
        exit 1
    fi
    # Sanity checks of the ELF (binutils or LLVM tools; skipped if neither is installed): the
    # symbol is not referenced, and the code is really there (not an empty ELF).
    if [ -n "$nm_tool" ] && "$nm_tool" "$elf" | grep -q "$symbol"; then
        echo "FAIL (opt-level $opt): $elf references $symbol" >&2
        exit 1
    fi
    text=unknown
    if [ -n "$size_tool" ]; then
        text=$("$size_tool" -A "$elf" | awk '$1 == ".text" { print $2 }')
        if [ -z "$text" ] || [ "$text" -lt 4096 ]; then
            echo "FAIL (opt-level $opt): $elf has a .text of '${text:-no}' bytes: not a real build" >&2
            exit 1
        fi
    fi
    echo "ok: opt-level $opt: the probe links with no panic path (.text $text bytes, $(($(date +%s) - start)) s)"
done

start=$(date +%s)
if cargo build --release --locked --target-dir "$target_dir" --features deliberate-panic >"$out" 2>&1; then
    echo "FAIL: self-test: the deliberate panic linked, so the check cannot detect panics" >&2
    exit 1
fi
if ! grep -q "undefined symbol: $symbol" "$out"; then
    cat "$out" >&2
    echo "FAIL: self-test: the deliberate-panic build failed, but not on the undefined $symbol" >&2
    exit 1
fi
echo "ok: self-test: the deliberate-panic build fails to link on $symbol ($(($(date +%s) - start)) s)"
