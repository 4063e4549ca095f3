# Sourced by report.sh and check.sh: the prerequisites check and the build of the probe images
# (both targets, both profiles) and of the host tool. Installs nothing.

# Fails, saying what is missing, unless QEMU, llvm-size and both Rust targets are installed.
cost_prerequisites() {
    local missing=()
    command -v qemu-system-arm >/dev/null 2>&1 ||
        missing+=("qemu-system-arm (Debian/Ubuntu: apt-get install -y qemu-system-arm)")
    command -v llvm-size >/dev/null 2>&1 ||
        missing+=("llvm-size (Debian/Ubuntu: apt-get install -y llvm)")
    command -v timeout >/dev/null 2>&1 || missing+=("timeout (coreutils)")
    local sysroot t
    sysroot="$(rustc --print sysroot 2>/dev/null || true)"
    for t in thumbv7em-none-eabihf thumbv6m-none-eabi; do
        [ -n "$sysroot" ] && [ -d "$sysroot/lib/rustlib/$t/lib" ] ||
            missing+=("the Rust target $t (rustup target add $t)")
    done
    if [ ${#missing[@]} -gt 0 ]; then
        printf 'error: missing: %s\n' "${missing[@]}" >&2
        exit 1
    fi
}

# Builds the probes for both targets at opt-level s and 3 (one cargo build per profile, both
# running at once: each compiles the dependencies once and links the probes in parallel) and the
# host tool, in harness/cost/target and harness/cost/tool/target.
cost_build() {
    # An environment RUSTFLAGS would change the code measured (and the tool's build).
    unset RUSTFLAGS CARGO_ENCODED_RUSTFLAGS CARGO_BUILD_RUSTFLAGS
    unset CARGO_TARGET_THUMBV7EM_NONE_EABIHF_RUSTFLAGS CARGO_TARGET_THUMBV6M_NONE_EABI_RUSTFLAGS
    unset CARGO_TARGET_DIR CARGO_BUILD_TARGET
    local pids=() p rc=0
    (cd "$here" && cargo build --quiet --locked --profile cost-s \
        --target thumbv7em-none-eabihf --target thumbv6m-none-eabi) &
    pids+=($!)
    (cd "$here" && cargo build --quiet --locked --profile cost-3 \
        --target thumbv7em-none-eabihf --target thumbv6m-none-eabi) &
    pids+=($!)
    (cd "$here/tool" && cargo build --quiet --locked --release) &
    pids+=($!)
    for p in "${pids[@]}"; do
        wait "$p" || rc=$?
    done
    if [ "$rc" -ne 0 ]; then
        echo "error: the build failed" >&2
        exit "$rc"
    fi
}
