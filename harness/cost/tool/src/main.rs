//! Host side of the embedded cost table (`harness/cost`). `report.sh` and `check.sh` build the
//! probe images and this tool, then run
//!
//! ```text
//! softmax-cost-tool report <harness/cost> [--jobs N] [--singlestep]
//! softmax-cost-tool check  <harness/cost> [--jobs N] [--singlestep] [--no-instructions]
//! ```
//!
//! For each (core, opt-level) configuration and each probe image it
//!
//! 1. reads `text + data` of the ELF with `llvm-size` (flash), and the addresses of the two
//!    marker functions from the ELF's symbol table;
//! 2. runs the image under QEMU with an execution trace (`-d in_asm,exec,nochain`, or one line
//!    per instruction with `--singlestep`: the same counts, five times slower; see [`Trace`]),
//!    streamed through a pipe and never stored, and adds up the instructions executed from the
//!    first execution of `cost_mark_begin` to the first of `cost_mark_end`;
//! 3. parses the image's report (stack high-water mark, the kernel's `Ok`, its output bytes)
//!    and checks the output against an f64 reference on the same inputs (`reference.rs`), the
//!    output's bits across the four configurations (the crates promise the same bits
//!    everywhere), the twice-computing int8 reference against `softmax_s8`, the hardware-FMA
//!    dot products (`dot_fma_hw`) against the software ones (`dot_fma_soft`), and each
//!    Prepare-including image against its kernel's.
//!
//! Every figure is the probe's minus the `empty` image's (flash and instructions; the stack is
//! the call's own). `report` writes `table.md` and `table.json`; `check` compares flash and
//! stack with the committed `table.json` and fails on growth above 5%.

mod elf;
#[allow(dead_code)]
#[path = "../../src/gen.rs"]
mod gen;
mod json;
mod reference;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use json::{num, obj, str, Json};
use reference::{Check, Kv, MULADDS, ROW, TILE};

/// One build configuration: a core and an opt-level.
struct Config {
    id: &'static str,
    core: &'static str,
    target: &'static str,
    opt: &'static str,
    qemu: &'static [&'static str],
}

const CONFIGS: [Config; 4] = [
    Config {
        id: "m4-s",
        core: "Cortex-M4F",
        target: "thumbv7em-none-eabihf",
        opt: "s",
        qemu: &["-machine", "mps2-an386", "-cpu", "cortex-m4"],
    },
    Config {
        id: "m4-3",
        core: "Cortex-M4F",
        target: "thumbv7em-none-eabihf",
        opt: "3",
        qemu: &["-machine", "mps2-an386", "-cpu", "cortex-m4"],
    },
    Config {
        id: "m0-s",
        core: "Cortex-M0",
        target: "thumbv6m-none-eabi",
        opt: "s",
        qemu: &[
            "-machine",
            "microbit",
            "-global",
            "nrf51-soc.sram-size=262144",
        ],
    },
    Config {
        id: "m0-3",
        core: "Cortex-M0",
        target: "thumbv6m-none-eabi",
        opt: "3",
        qemu: &[
            "-machine",
            "microbit",
            "-global",
            "nrf51-soc.sram-size=262144",
        ],
    },
];

/// Where a probe's figures go.
#[derive(Clone, Copy, PartialEq)]
enum Role {
    /// The common runtime, subtracted from the others.
    Empty,
    /// A row of the table.
    Row,
    /// The same kernel with its Prepare step (`of`): flash only, in a footnote.
    Prepare {
        of: &'static str,
        what: &'static str,
    },
}

struct Probe {
    bin: &'static str,
    kernel: &'static str,
    elements: u32,
    check: Check,
    role: Role,
    /// Roughly how long its traced run takes (orders the jobs, longest first).
    weight: u32,
}

const fn row(
    bin: &'static str,
    kernel: &'static str,
    elements: u32,
    check: Check,
    weight: u32,
) -> Probe {
    Probe {
        bin,
        kernel,
        elements,
        check,
        role: Role::Row,
        weight,
    }
}

/// The probes, in the table's order.
const PROBES: &[Probe] = &[
    row(
        "softmax_poly",
        "softmax-core `softmax`, f32, `Poly`",
        ROW,
        Check::Softmax { rel: 2e-6 },
        9,
    ),
    row(
        "softmax_libm",
        "softmax-core `softmax`, f32, `Libm`",
        ROW,
        Check::Softmax { rel: 2e-6 },
        10,
    ),
    row(
        "softmax_micromath",
        "softmax-core `softmax`, f32, `MicroMath`",
        ROW,
        Check::Softmax { rel: 5e-3 },
        14,
    ),
    row(
        "log_softmax_poly",
        "softmax-core `log_softmax`, f32, `Poly`",
        ROW,
        Check::LogSoftmax {
            abs: 4.0 / 16_777_216.0,
        },
        11,
    ),
    row(
        "log_softmax_libm",
        "softmax-core `log_softmax`, f32, `Libm`",
        ROW,
        Check::LogSoftmax {
            abs: 4.0 / 16_777_216.0,
        },
        12,
    ),
    row(
        "log_softmax_micromath",
        "softmax-core `log_softmax`, f32, `MicroMath`",
        ROW,
        Check::LogSoftmax { abs: 5e-3 },
        16,
    ),
    row(
        "fast_softmax",
        "softmax-core `fast::softmax`, f32",
        ROW,
        Check::Softmax { rel: 2e-6 },
        33,
    ),
    row(
        "baseline_libm",
        "baseline: scalar three-pass softmax, `libm::expf`, f32",
        ROW,
        Check::Softmax { rel: 1e-5 },
        7,
    ),
    row(
        "quant_s8",
        "softmax-core `quant::softmax_s8`, int8 → int8",
        ROW,
        Check::S8,
        2,
    ),
    row(
        "quant_s8_s16",
        "softmax-core `quant::softmax_s8_s16`, int8 → int16",
        ROW,
        Check::S8S16,
        2,
    ),
    row(
        "quant_s16",
        "softmax-core `quant::softmax_s16`, int16 → int16 (its two 1,026-byte tables included)",
        ROW,
        Check::S16,
        1,
    ),
    row(
        "quant_s8_twice",
        "int8 → int8 reference computing each exp twice (TFLM's loop, `quant::fixed` primitives)",
        ROW,
        Check::S8,
        4,
    ),
    row(
        "cross_entropy",
        "loss-core `cross_entropy`, forward + gradient, f32, `Poly`, 256 classes",
        ROW,
        Check::CrossEntropy,
        9,
    ),
    row(
        "decoder_step",
        "attention-core decoder step (`push` + `attend`), cache length 256, d = 64, f32, `Poly`",
        ROW,
        Check::Attention { keys: 256 },
        100,
    ),
    row(
        "decoder_step_int8",
        "attention-core decoder step (`push` + `attend`), int8 cache, cache length 256, d = 64, f32 compute, `Poly`",
        ROW,
        Check::AttentionStored {
            keys: 256,
            format: Kv::Int8,
        },
        100,
    ),
    row(
        "decoder_step_f16",
        "attention-core decoder step (`push` + `attend`), f16 cache, cache length 256, d = 64, f32 compute, `Poly`",
        ROW,
        Check::AttentionStored {
            keys: 256,
            format: Kv::F16,
        },
        100,
    ),
    row(
        "attention_tile",
        "attention-core `attention`, one tile: 1 query × 128 keys, d = 64, f32, `Poly`",
        TILE,
        Check::Attention { keys: 128 },
        50,
    ),
    row(
        "dot_muladd",
        "softmax-core `linalg::matmul_nt`: 128 dot products of d = 64 (one query × 128 keys), separate multiply and add, 16 lanes, f32",
        MULADDS,
        // Each product's path: its rounding, ⌈64/16⌉ − 1 = 3 lane additions, 4 of the lane tree
        // (the crate's documented (⌈k/16⌉ + 4)·u).
        Check::Dot { roundings: 8 },
        25,
    ),
    row(
        "dot_fma_soft",
        "the same 128 dot products, each a sequential chain of `fast::fma` (software FMA, same bits everywhere), f32",
        MULADDS,
        // q_0·k_0 passes through all 64 roundings of the chain.
        Check::Dot { roundings: 64 },
        145,
    ),
    row(
        "dot_fma_hw",
        "the same chains, hardware `vfma.f32` on the Cortex-M4F (`fast::fma` on the Cortex-M0), f32",
        MULADDS,
        Check::Dot { roundings: 64 },
        145,
    ),
    Probe {
        bin: "quant_s8_prepare",
        kernel: "`quant::softmax_s8` with `S8Params::prepare`",
        elements: ROW,
        check: Check::S8,
        role: Role::Prepare {
            of: "quant_s8",
            what: "`S8Params::prepare`",
        },
        weight: 2,
    },
    Probe {
        bin: "quant_s16_prepare",
        kernel: "`quant::softmax_s16` with `S16Params::prepare`",
        elements: ROW,
        check: Check::S16,
        role: Role::Prepare {
            of: "quant_s16",
            what: "`S16Params::prepare`",
        },
        weight: 1,
    },
    Probe {
        bin: "empty",
        kernel: "the runtime alone",
        elements: 1,
        check: Check::Nothing,
        role: Role::Empty,
        weight: 1,
    },
];

/// Growth of flash or stack over the committed figure that `check` tolerates.
const TOLERANCE: f64 = 0.05;

/// One image's raw measurements.
#[derive(Clone, Debug)]
struct Raw {
    text: u64,
    data: u64,
    stack: u64,
    instructions: Option<u64>,
    result: Vec<u8>,
    ok: bool,
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let usage = "usage: softmax-cost-tool <report|check> <harness/cost directory> [--jobs N] \
                 [--singlestep] [--no-instructions (check only)]";
    let (Some(mode), Some(dir)) = (args.first(), args.get(1)) else {
        eprintln!("{usage}");
        return ExitCode::from(2);
    };
    let mut jobs = 2usize;
    let mut trace = Trace::Blocks;
    let mut rest = args[2..].iter();
    while let Some(a) = rest.next() {
        match a.as_str() {
            "--jobs" => match rest.next().and_then(|n| n.parse().ok()) {
                Some(n) if n > 0 => jobs = n,
                _ => {
                    eprintln!("{usage}");
                    return ExitCode::from(2);
                }
            },
            "--no-instructions" if mode == "check" => trace = Trace::Off,
            "--singlestep" => trace = Trace::Singlestep,
            _ => {
                eprintln!("{usage}");
                return ExitCode::from(2);
            }
        }
    }
    let dir = PathBuf::from(dir);
    let result = match mode.as_str() {
        "report" => report(&dir, jobs, trace),
        "check" => check(&dir, jobs, trace),
        _ => {
            eprintln!("{usage}");
            return ExitCode::from(2);
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn elf_path(dir: &Path, cfg: &Config, bin: &str) -> PathBuf {
    dir.join("target")
        .join(cfg.target)
        .join(format!("cost-{}", cfg.opt))
        .join(bin)
}

/// `(text, data)` of each image of a configuration, from one `llvm-size` call (Berkeley format).
fn sizes(dir: &Path, cfg: &Config) -> Result<BTreeMap<String, (u64, u64)>, String> {
    let paths: Vec<PathBuf> = PROBES.iter().map(|p| elf_path(dir, cfg, p.bin)).collect();
    for p in &paths {
        if !p.is_file() {
            return Err(format!(
                "{} is missing: build the probes first (report.sh does)",
                p.display()
            ));
        }
    }
    let out = Command::new("llvm-size")
        .arg("-B")
        .args(&paths)
        .output()
        .map_err(|e| format!("cannot run llvm-size: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "llvm-size failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let mut map = BTreeMap::new();
    for line in text.lines().skip(1) {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() < 6 {
            continue;
        }
        let (Ok(t), Ok(d)) = (f[0].parse(), f[1].parse()) else {
            return Err(format!("cannot read llvm-size's line {line:?}"));
        };
        let name = Path::new(f[5])
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("")
            .to_string();
        map.insert(name, (t, d));
    }
    for p in PROBES {
        if !map.contains_key(p.bin) {
            return Err(format!("llvm-size printed no line for {}", p.bin));
        }
    }
    Ok(map)
}

/// How QEMU reports the instructions it executes.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Trace {
    /// No trace (flash and stack only).
    Off,
    /// `-d in_asm,exec,nochain`: each translation block's instructions once (`IN:` and one line
    /// per instruction), then one `Trace` line per execution of a block (blocks are not
    /// chained, so every execution is logged). The instructions executed are the sum, over the
    /// `Trace` lines, of their block's instruction count. Six times fewer lines than
    /// `Singlestep` on the soft-float kernels; the same count (`--singlestep` checks that).
    Blocks,
    /// `-singlestep -d exec,nochain`: one instruction per block, one `Trace` line per executed
    /// instruction.
    Singlestep,
}

/// The host pointer and the guest PC of a QEMU 7.2 `-d exec` line:
/// `Trace 0: 0x<host> [<cs_base>/<pc>/<flags>/<cflags>] symbol`.
fn trace_fields(line: &[u8]) -> Option<(u64, u32)> {
    let text = std::str::from_utf8(line).ok()?;
    let (_, rest) = text.split_once(": 0x")?;
    let (host, rest) = rest.split_once(' ')?;
    let (_, rest) = rest.split_once('/')?;
    let (pc, _) = rest.split_once('/')?;
    Some((
        u64::from_str_radix(host, 16).ok()?,
        u32::from_str_radix(pc, 16).ok()?,
    ))
}

/// What [`count_trace`] found.
struct Counted {
    /// Instructions from the first execution of `begin` to the first of `end` (that one not
    /// included), if both were reached.
    instructions: Option<u64>,
    /// Whether any `Trace` line came at all.
    traced: bool,
    /// A malformed trace (a block executed before it was listed, a block of no instructions).
    malformed: Option<String>,
    /// The first lines that are neither trace nor listing (QEMU's own messages).
    other: Vec<String>,
}

/// Streams QEMU's log (never stored) and counts the instructions between the markers.
fn count_trace(r: impl Read, mode: Trace, begin: u32, end: u32) -> Counted {
    let mut r = BufReader::with_capacity(1 << 20, r);
    let mut line = Vec::with_capacity(256);
    let (mut state, mut count, mut traced) = (0u8, 0u64, false);
    let mut other = Vec::new();
    let mut malformed = None;
    // Blocks mode: instructions of each translated block, by its host address.
    let mut blocks: std::collections::HashMap<u64, u64> = std::collections::HashMap::new();
    let mut listing: Option<u64> = None;
    loop {
        line.clear();
        match r.read_until(b'\n', &mut line) {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        if line.starts_with(b"Trace ") {
            traced = true;
            if state == 2 {
                continue;
            }
            let Some((host, pc)) = trace_fields(&line) else {
                malformed.get_or_insert_with(|| {
                    format!("unreadable trace line {:?}", String::from_utf8_lossy(&line))
                });
                continue;
            };
            let n = if mode == Trace::Blocks {
                if let Some(n) = listing.take() {
                    blocks.insert(host, n);
                }
                match blocks.get(&host) {
                    Some(&n) if n > 0 => n,
                    _ => {
                        malformed.get_or_insert_with(|| {
                            format!("block at pc {pc:08x} executed without an instruction listing")
                        });
                        0
                    }
                }
            } else {
                1
            };
            if state == 0 {
                if pc == begin {
                    state = 1;
                    count = n;
                }
            } else if pc == end {
                state = 2;
            } else {
                count += n;
            }
        } else if line.starts_with(b"IN:") {
            listing = Some(0);
        } else if let (true, Some(n)) = (line.starts_with(b"0x"), listing.as_mut()) {
            *n += 1;
        } else if line.starts_with(b"----------------") || line.iter().all(u8::is_ascii_whitespace)
        {
        } else if other.len() < 20 {
            other.push(String::from_utf8_lossy(&line).trim_end().to_string());
        }
    }
    Counted {
        instructions: (state == 2).then_some(count),
        traced,
        malformed,
        other,
    }
}

/// Runs one image under QEMU and reads its report.
fn run(
    dir: &Path,
    cfg: &Config,
    p: &Probe,
    trace: Trace,
    text: u64,
    data: u64,
) -> Result<Raw, String> {
    let elf = elf_path(dir, cfg, p.bin);
    let what = format!("{} {}", cfg.id, p.bin);
    let syms = elf::symbols(&elf, &["cost_mark_begin", "cost_mark_end"])
        .map_err(|e| format!("{what}: {e}"))?;
    let (begin, end) = (syms[0] & !1, syms[1] & !1);
    let mut cmd = Command::new("timeout");
    cmd.arg("600").arg("qemu-system-arm").args(cfg.qemu);
    cmd.args([
        "-nographic",
        "-semihosting-config",
        "enable=on,target=native",
    ]);
    // The log goes to QEMU's stderr, which is this pipe.
    match trace {
        Trace::Off => {}
        Trace::Blocks => {
            cmd.args(["-d", "in_asm,exec,nochain", "-D", "/dev/stderr"]);
        }
        Trace::Singlestep => {
            cmd.args(["-singlestep", "-d", "exec,nochain", "-D", "/dev/stderr"]);
        }
    }
    cmd.arg("-kernel").arg(&elf);
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd
        .spawn()
        .map_err(|e| format!("{what}: cannot start QEMU: {e}"))?;
    let mut stdout = child.stdout.take().expect("piped");
    let stderr = child.stderr.take().expect("piped");
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stdout.read_to_string(&mut s);
        s
    });
    let Counted {
        instructions: count,
        traced,
        malformed,
        other,
    } = count_trace(stderr, trace, begin, end);
    let status = child.wait().map_err(|e| format!("{what}: {e}"))?;
    let out = reader.join().unwrap_or_default();
    if !status.success() {
        return Err(format!(
            "{what}: QEMU exited with {status} (124: timeout)\n  stdout: {}\n  stderr: {}",
            out.trim_end().replace('\n', "\n          "),
            other.join("\n          ")
        ));
    }
    let mut report = BTreeMap::new();
    for line in out.lines() {
        let (k, v) = line.split_once(' ').unwrap_or((line, ""));
        report.insert(k.to_string(), v.to_string());
    }
    if report.get("cost").map(String::as_str) != Some("1") || !report.contains_key("end") {
        return Err(format!("{what}: incomplete report:\n{out}"));
    }
    let hex = |s: &str| u64::from_str_radix(s, 16).map_err(|_| format!("{what}: bad number {s:?}"));
    let marks: Vec<&str> = report["marks"].split(' ').collect();
    if marks.len() != 2 || hex(marks[0])? != begin as u64 || hex(marks[1])? != end as u64 {
        return Err(format!(
            "{what}: the image's markers {:?} are not the ELF's {begin:08x} {end:08x}",
            report["marks"]
        ));
    }
    let r = &report["result"];
    let result = (0..r.len() / 2)
        .map(|i| u8::from_str_radix(&r[2 * i..2 * i + 2], 16))
        .collect::<Result<Vec<u8>, _>>()
        .map_err(|_| format!("{what}: bad result hex"))?;
    let instructions = if trace != Trace::Off {
        if !traced {
            return Err(format!(
                "{what}: QEMU printed no trace (is this QEMU 7.2 or later with -d exec?)"
            ));
        }
        if let Some(m) = malformed {
            return Err(format!("{what}: malformed trace: {m}"));
        }
        Some(count.ok_or_else(|| format!("{what}: the trace never reached both markers"))?)
    } else {
        None
    };
    Ok(Raw {
        text,
        data,
        stack: hex(&report["stack"])?,
        instructions,
        result,
        ok: report.get("ok").map(String::as_str) == Some("1"),
    })
}

/// All measurements: `raw[config][probe]`.
struct Measured {
    raw: Vec<Vec<Raw>>,
    /// Per probe, the reference check's statement (from the first configuration).
    checks: Vec<String>,
}

fn probe_index(bin: &str) -> usize {
    PROBES
        .iter()
        .position(|p| p.bin == bin)
        .expect("known probe")
}

fn measure(dir: &Path, jobs: usize, trace: Trace) -> Result<Measured, String> {
    let sizes: Vec<_> = CONFIGS
        .iter()
        .map(|c| sizes(dir, c))
        .collect::<Result<_, _>>()?;
    let mut work: Vec<(usize, usize)> = (0..CONFIGS.len())
        .flat_map(|c| (0..PROBES.len()).map(move |p| (c, p)))
        .collect();
    // Longest first: the Cortex-M0's soft-float runs are ~30× the Cortex-M4F's.
    work.sort_by_key(|&(c, p)| {
        std::cmp::Reverse(
            PROBES[p].weight
                * if CONFIGS[c].id.starts_with("m0") {
                    30
                } else {
                    1
                },
        )
    });
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<Result<Raw, String>>>> = Mutex::new(vec![None; work.len()]);
    std::thread::scope(|s| {
        for _ in 0..jobs {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(&(c, p)) = work.get(i) else { break };
                let (text, data) = sizes[c][PROBES[p].bin];
                let r = run(dir, &CONFIGS[c], &PROBES[p], trace, text, data);
                results.lock().expect("no panics")[i] = Some(r);
            });
        }
    });
    let results = results.into_inner().expect("no panics");
    let mut raw: Vec<Vec<Option<Raw>>> = vec![vec![None; PROBES.len()]; CONFIGS.len()];
    let mut errors = Vec::new();
    for (&(c, p), r) in work.iter().zip(results) {
        match r.expect("every job ran") {
            Ok(m) => raw[c][p] = Some(m),
            Err(e) => errors.push(e),
        }
    }
    if !errors.is_empty() {
        return Err(errors.join("\n"));
    }
    let raw: Vec<Vec<Raw>> = raw
        .into_iter()
        .map(|v| v.into_iter().map(|m| m.expect("measured")).collect())
        .collect();

    // The results: right against the f64 reference, the same bits in every configuration.
    let inputs = reference::inputs();
    let mut checks = Vec::new();
    for (pi, p) in PROBES.iter().enumerate() {
        let mut statement = String::new();
        for (ci, c) in CONFIGS.iter().enumerate() {
            let m = &raw[ci][pi];
            if !m.ok {
                errors.push(format!("{} {}: the kernel returned an error", c.id, p.bin));
                continue;
            }
            match reference::check(p.check, &inputs, &m.result) {
                Ok(s) if ci == 0 => statement = s,
                Ok(_) => {}
                Err(e) => errors.push(format!("{} {}: wrong result: {e}", c.id, p.bin)),
            }
            if m.result != raw[0][pi].result {
                errors.push(format!(
                    "{} {}: output bits differ from {}'s",
                    c.id, p.bin, CONFIGS[0].id
                ));
            }
        }
        let same_as = match (p.bin, p.role) {
            ("quant_s8_twice", _) => Some("quant_s8"),
            // Both chains round each multiply-add once (hardware or software FMA).
            ("dot_fma_hw", _) => Some("dot_fma_soft"),
            (_, Role::Prepare { of, .. }) => Some(of),
            _ => None,
        };
        if let Some(other) = same_as {
            let o = probe_index(other);
            for (ci, c) in CONFIGS.iter().enumerate() {
                if raw[ci][pi].result != raw[ci][o].result {
                    errors.push(format!("{} {}: output differs from {other}'s", c.id, p.bin));
                }
            }
            statement = format!("{statement}; output bytes equal to `{other}`'s");
        }
        checks.push(statement);
    }
    if !errors.is_empty() {
        return Err(errors.join("\n"));
    }
    Ok(Measured { raw, checks })
}

/// A row's figures in one configuration, the empty image subtracted.
struct Cost {
    flash: i64,
    stack: u64,
    instructions: Option<i64>,
}

fn cost(m: &Measured, ci: usize, pi: usize) -> Cost {
    let (r, e) = (&m.raw[ci][pi], &m.raw[ci][probe_index("empty")]);
    Cost {
        flash: (r.text + r.data) as i64 - (e.text + e.data) as i64,
        stack: r.stack,
        instructions: r
            .instructions
            .zip(e.instructions)
            .map(|(a, b)| a as i64 - b as i64),
    }
}

fn per_element(instructions: i64, elements: u32) -> f64 {
    // Two decimals, so that the JSON text is the same on every run.
    (instructions as f64 / elements as f64 * 100.0).round() / 100.0
}

fn command_line(cmd: &str, arg: &str) -> String {
    Command::new(cmd)
        .arg(arg)
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|s| s.lines().next().map(str::to_string))
        .unwrap_or_else(|| format!("{cmd}: unknown version"))
}

/// One claim of the issue, evaluated on the measurements.
struct Target {
    id: &'static str,
    claim: &'static str,
    holds: bool,
    detail: String,
}

fn targets(m: &Measured) -> Vec<Target> {
    let (m4s, m4_3) = (0, 1);
    let s8 = cost(m, m4s, probe_index("quant_s8"));
    let s16 = cost(m, m4s, probe_index("quant_s16"));
    let s16_3 = cost(m, m4_3, probe_index("quant_s16"));
    let s8_3 = cost(m, m4_3, probe_index("quant_s8"));
    let mut poly_vs_libm = Vec::new();
    let mut holds = true;
    for (ci, c) in CONFIGS.iter().enumerate() {
        let poly = cost(m, ci, probe_index("softmax_poly")).instructions;
        let base = cost(m, ci, probe_index("baseline_libm")).instructions;
        if let (Some(a), Some(b)) = (poly, base) {
            holds &= a < b;
            poly_vs_libm.push(format!(
                "{} `{}` {} vs {}",
                c.core,
                c.opt,
                decimal(a, ROW),
                decimal(b, ROW)
            ));
        }
    }
    vec![
        Target {
            id: "int8-flash",
            claim: "int8 softmax (`softmax_s8`) <= 1 KiB of flash on the Cortex-M4F at opt-level s",
            holds: s8.flash <= 1024,
            detail: format!(
                "{} bytes (opt-level 3: {})",
                group(s8.flash),
                group(s8_3.flash)
            ),
        },
        Target {
            id: "int16-flash",
            claim: "int16 softmax (`softmax_s16`) <= 1 KiB of flash plus its two 1,026-byte tables on the Cortex-M4F at opt-level s",
            holds: s16.flash <= 1024 + 2 * 1026,
            detail: format!(
                "{} bytes = {} of code + 2,052 of tables (opt-level 3: {} = {} + 2,052)",
                group(s16.flash),
                group(s16.flash - 2052),
                group(s16_3.flash),
                group(s16_3.flash - 2052)
            ),
        },
        Target {
            id: "poly-vs-libm",
            claim: "f32 `Poly` softmax: fewer instructions per element than the scalar `libm::expf` baseline, on both cores",
            holds: holds && poly_vs_libm.len() == CONFIGS.len(),
            detail: if poly_vs_libm.is_empty() {
                "not measured (no instruction counts)".to_string()
            } else {
                format!("instructions per element, Poly vs baseline: {}", poly_vs_libm.join("; "))
            },
        },
    ]
}

fn report(dir: &Path, jobs: usize, trace: Trace) -> Result<(), String> {
    let m = measure(dir, jobs, trace)?;
    let rustc = command_line("rustc", "--version");
    let qemu = command_line("qemu-system-arm", "--version");

    // table.json
    let configs = Json::Arr(
        CONFIGS
            .iter()
            .enumerate()
            .map(|(ci, c)| {
                let e = &m.raw[ci][probe_index("empty")];
                obj([
                    ("id", str(c.id)),
                    ("core", str(c.core)),
                    ("target", str(c.target)),
                    ("opt_level", str(c.opt)),
                    ("qemu", str(c.qemu.join(" "))),
                    (
                        "empty_image",
                        obj([
                            ("text", num(e.text as f64)),
                            ("data", num(e.data as f64)),
                            ("stack", num(e.stack as f64)),
                            ("instructions", num(e.instructions.unwrap_or(0) as f64)),
                        ]),
                    ),
                ])
            })
            .collect(),
    );
    let entry = |pi: usize| {
        let p = &PROBES[pi];
        let mut per = Vec::new();
        for (ci, c) in CONFIGS.iter().enumerate() {
            let k = cost(&m, ci, pi);
            let ins = k.instructions.unwrap_or(0);
            per.push((
                c.id.to_string(),
                obj([
                    ("flash", num(k.flash as f64)),
                    ("stack", num(k.stack as f64)),
                    ("instructions", num(ins as f64)),
                    ("per_element", num(per_element(ins, p.elements))),
                    (
                        "output_fnv1a64",
                        str(format!("{:016x}", fnv1a(&m.raw[ci][pi].result))),
                    ),
                ]),
            ));
        }
        let mut o = vec![
            ("probe".to_string(), str(p.bin)),
            ("kernel".to_string(), str(p.kernel)),
            ("elements".to_string(), num(p.elements)),
        ];
        if let Role::Prepare { of, what } = p.role {
            o.push(("prepare_of".to_string(), str(of)));
            o.push(("prepare".to_string(), str(what)));
        }
        o.push(("output_check".to_string(), str(m.checks[pi].clone())));
        o.push(("cost".to_string(), Json::Obj(per)));
        Json::Obj(o)
    };
    let rows: Vec<usize> = (0..PROBES.len())
        .filter(|&i| PROBES[i].role == Role::Row)
        .collect();
    let preps: Vec<usize> = (0..PROBES.len())
        .filter(|&i| matches!(PROBES[i].role, Role::Prepare { .. }))
        .collect();
    let (once, twice) = (probe_index("quant_s8"), probe_index("quant_s8_twice"));
    let speedup = Json::Obj(
        CONFIGS
            .iter()
            .enumerate()
            .map(|(ci, c)| {
                let a = cost(&m, ci, twice).instructions.unwrap_or(0);
                let b = cost(&m, ci, once).instructions.unwrap_or(0);
                (
                    c.id.to_string(),
                    obj([
                        ("twice_per_element", num(per_element(a, ROW))),
                        ("once_per_element", num(per_element(b, ROW))),
                        ("ratio", num((a as f64 / b as f64 * 100.0).round() / 100.0)),
                    ]),
                )
            })
            .collect(),
    );
    // The decoder step over the reduced caches against the f32 cache: instructions per key.
    let (f32_step, int8_step, f16_step) = (
        probe_index("decoder_step"),
        probe_index("decoder_step_int8"),
        probe_index("decoder_step_f16"),
    );
    let per_key = |ci: usize, pi: usize| cost(&m, ci, pi).instructions.unwrap_or(0);
    let reduced_kv = Json::Obj(
        CONFIGS
            .iter()
            .enumerate()
            .map(|(ci, c)| {
                let (a, b, h) = (
                    per_key(ci, f32_step),
                    per_key(ci, int8_step),
                    per_key(ci, f16_step),
                );
                let ratio = |x: i64| num((x as f64 / a as f64 * 100.0).round() / 100.0);
                (
                    c.id.to_string(),
                    obj([
                        ("f32_per_key", num(per_element(a, ROW))),
                        ("int8_per_key", num(per_element(b, ROW))),
                        ("f16_per_key", num(per_element(h, ROW))),
                        ("int8_over_f32", ratio(b)),
                        ("f16_over_f32", ratio(h)),
                    ]),
                )
            })
            .collect(),
    );
    // The dot products by multiply + add against the FMA chains: instructions per multiply-add.
    let (muladd, fma_soft, fma_hw) = (
        probe_index("dot_muladd"),
        probe_index("dot_fma_soft"),
        probe_index("dot_fma_hw"),
    );
    let fma = Json::Obj(
        CONFIGS
            .iter()
            .enumerate()
            .map(|(ci, c)| {
                let (a, f, h) = (
                    per_key(ci, muladd),
                    per_key(ci, fma_soft),
                    per_key(ci, fma_hw),
                );
                let ratio = |x: i64| num((x as f64 / a as f64 * 100.0).round() / 100.0);
                (
                    c.id.to_string(),
                    obj([
                        ("muladd_per_multiply_add", num(per_element(a, MULADDS))),
                        ("fma_soft_per_multiply_add", num(per_element(f, MULADDS))),
                        ("fma_hw_per_multiply_add", num(per_element(h, MULADDS))),
                        ("fma_soft_over_muladd", ratio(f)),
                        ("fma_hw_over_muladd", ratio(h)),
                    ]),
                )
            })
            .collect(),
    );
    let targets = targets(&m);
    let doc = obj([
        (
            "about",
            str(
                "Embedded cost table: per kernel call on fixed inputs, flash = llvm-size text+data of the probe \
                 image minus the empty image's (bytes), stack = bytes below the stack pointer at the call that the \
                 call overwrote, instructions = instructions QEMU executed from the marker before the call to the \
                 marker after it, minus the empty image's, per_element = instructions / elements. Written by \
                 harness/cost/report.sh; checked by harness/cost/check.sh; table.md is the same table.",
            ),
        ),
        ("rustc", str(rustc.clone())),
        ("qemu", str(qemu.clone())),
        ("configs", configs),
        ("kernels", Json::Arr(rows.iter().map(|&i| entry(i)).collect())),
        ("prepare", Json::Arr(preps.iter().map(|&i| entry(i)).collect())),
        ("exp_once_speedup", speedup),
        ("reduced_kv_decoder_step", reduced_kv),
        ("fma_vs_muladd", fma),
        (
            "targets",
            Json::Arr(
                targets
                    .iter()
                    .map(|t| obj([("id", str(t.id)), ("claim", str(t.claim)), ("holds", Json::Bool(t.holds)), ("detail", str(t.detail.clone()))]))
                    .collect(),
            ),
        ),
    ]);
    std::fs::write(dir.join("table.json"), doc.pretty())
        .map_err(|e| format!("write table.json: {e}"))?;

    // table.md
    let mut md = String::new();
    let _ = writeln!(md, "# Embedded cost table\n");
    let _ = writeln!(
        md,
        "Written by `harness/cost/report.sh` (do not edit; `harness/cost/check.sh` compares a fresh build with \
         `table.json`). {rustc}; release, fat LTO, 1 codegen unit, `panic = \"abort\"`; {qemu}.\n"
    );
    let _ = writeln!(
        md,
        "One call per kernel on fixed inputs. **flash**: bytes of code and constant data the kernel adds to an \
         image (`llvm-size` text + data of an image that calls only this kernel, minus an image with the same \
         runtime and no call). **stack**: high-water mark of the call, in bytes below the stack pointer at the \
         call (stack painted with a pattern, scanned after the call). **instr/elem**: instructions executed by the \
         call, counted in QEMU's execution trace between two marker functions around it (`-d in_asm,exec,nochain`: \
         each translated block's instructions listed once, each execution of a block logged; the same counts as \
         `-singlestep`'s one line per instruction), minus the same count for the empty image, divided by the \
         elements: values of the row, keys for the decoder step, scores for the tile, multiply-adds for the \
         dot products (128 dot products of d = 64: 8,192).\n"
    );
    let mut head = String::from("| kernel | elements |");
    let mut rule = String::from("|---|---:|");
    for c in &CONFIGS {
        let _ = write!(head, " {} `{}` flash | stack | instr/elem |", c.core, c.opt);
        rule.push_str("---:|---:|---:|");
    }
    let _ = writeln!(md, "{head}\n{rule}");
    for &pi in &rows {
        let p = &PROBES[pi];
        let _ = write!(md, "| {} | {} |", p.kernel, p.elements);
        for ci in 0..CONFIGS.len() {
            let k = cost(&m, ci, pi);
            let ins = k.instructions.unwrap_or(0);
            let _ = write!(
                md,
                " {} | {} | {} |",
                group(k.flash),
                group(k.stack as i64),
                decimal(ins, p.elements)
            );
        }
        md.push('\n');
    }
    let _ = writeln!(md, "\n**Each exp once** (int8 → int8, instructions per element, same run): TFLM's twice-computing loop vs `softmax_s8`:");
    let mut parts = Vec::new();
    for (ci, c) in CONFIGS.iter().enumerate() {
        let a = cost(&m, ci, twice).instructions.unwrap_or(0);
        let b = cost(&m, ci, once).instructions.unwrap_or(0);
        parts.push(format!(
            "{} `{}` {} → {} ({:.2}× fewer)",
            c.core,
            c.opt,
            decimal(a, ROW),
            decimal(b, ROW),
            a as f64 / b as f64
        ));
    }
    let _ = writeln!(
        md,
        "{}; the outputs are byte-for-byte equal.\n",
        parts.join("; ")
    );
    let _ = writeln!(
        md,
        "**Reduced KV caches** (decoder step, instructions per key, same run): f32 cache vs int8 vs f16:"
    );
    let mut parts = Vec::new();
    for (ci, c) in CONFIGS.iter().enumerate() {
        let (a, b, h) = (
            per_key(ci, f32_step),
            per_key(ci, int8_step),
            per_key(ci, f16_step),
        );
        parts.push(format!(
            "{} `{}` {} vs {} ({:.2}×) vs {} ({:.2}×)",
            c.core,
            c.opt,
            decimal(a, ROW),
            decimal(b, ROW),
            b as f64 / a as f64,
            decimal(h, ROW),
            h as f64 / a as f64
        ));
    }
    let _ = writeln!(
        md,
        "{}; a stored row of d = {} takes {} bytes in int8 (its scale included), {} in f16, {} in f32.\n",
        parts.join("; "),
        gen::D,
        gen::D + 4,
        2 * gen::D,
        4 * gen::D
    );
    let _ = writeln!(
        md,
        "**Fused multiply-add** (the 128 dot products of d = 64, instructions per multiply-add, same run): \
         `matmul_nt` (separate multiply and add) vs sequential chains of software `fast::fma` vs chains of \
         hardware `vfma.f32` (the Cortex-M0 has no FPU: `fast::fma` there too):"
    );
    let mut parts = Vec::new();
    for (ci, c) in CONFIGS.iter().enumerate() {
        let (a, f, h) = (
            per_key(ci, muladd),
            per_key(ci, fma_soft),
            per_key(ci, fma_hw),
        );
        parts.push(format!(
            "{} `{}` {} vs {} ({:.2}×) vs {} ({:.2}×)",
            c.core,
            c.opt,
            decimal(a, MULADDS),
            decimal(f, MULADDS),
            f as f64 / a as f64,
            decimal(h, MULADDS),
            h as f64 / a as f64
        ));
    }
    let _ = writeln!(
        md,
        "{}; the hardware chains' outputs are byte-for-byte equal to the software chains'.\n",
        parts.join("; ")
    );
    let _ = writeln!(md, "## Targets\n");
    for t in &targets {
        let _ = writeln!(
            md,
            "- {}: **{}** — {}.",
            t.claim,
            if t.holds { "holds" } else { "does not hold" },
            t.detail
        );
    }
    let _ = writeln!(md, "\n## Notes\n");
    let mut prep = Vec::new();
    for &pi in &preps {
        let Role::Prepare { of, what } = PROBES[pi].role else {
            continue;
        };
        let figures: Vec<String> = CONFIGS
            .iter()
            .enumerate()
            .map(|(ci, c)| {
                let extra = cost(&m, ci, pi).flash - cost(&m, ci, probe_index(of)).flash;
                format!("{} `{}` {}", c.core, c.opt, group(extra))
            })
            .collect();
        prep.push(format!("{what}: {} bytes", figures.join(", ")));
    }
    let e = probe_index("empty");
    let empty: Vec<String> = CONFIGS
        .iter()
        .enumerate()
        .map(|(ci, c)| {
            let r = &m.raw[ci][e];
            format!(
                "{} `{}` {} bytes, stack {}, {} instructions",
                c.core,
                c.opt,
                group((r.text + r.data) as i64),
                r.stack,
                r.instructions.unwrap_or(0)
            )
        })
        .collect();
    let notes = [
        format!(
            "Prepare is not in the quantized rows (it runs once at initialisation; the probes take TFLM's \
             parameters through `from_raw`). Its own flash, measured as an image calling Prepare on opaque \
             scale and β minus the kernel's image: {}. The f64 arithmetic of Prepare is software on both cores.",
            prep.join("; ")
        ),
        "Inputs: one row of 256 f32 logits, N(0, 1)-like (Irwin–Hall sum of twelve 16-bit uniforms, exact in \
         f32, range ±6); int8 logits uniform over [−128, 127] with input scale 1/16 (TFLM parameters \
         multiplier 2³⁰, shift 23, diff_min −248); int16 logits uniform over the type's range with input scale \
         10/65536 (multiplier 2,147,450,880, shift 0); cross-entropy target class 17; attention q, K, V drawn \
         from the f32 row with random signs, default scale 1/8; the dot-product rows take the attention \
         tile's q and its 128 key rows. Pointers and lengths reach the kernel through \
         `core::hint::black_box`, so nothing about them is known at compile time (`harness/cost/src/gen.rs`)."
            .to_string(),
        "Every output is checked on the host against an f64 reference on the same inputs (within the \
         kernel's documented accuracy) and must have the same bits in all four builds; the twice-computing \
         reference's output must equal `softmax_s8`'s, the hardware-FMA chains' the software chains', and each \
         Prepare image's its kernel's. A dot product is within (r + 1)·2⁻²⁴·Σ|q_t·k_t| of the f64 one, r the \
         most roundings a product passes through: 8 for `matmul_nt` (its documented (⌈64/16⌉ + 4)·2⁻²⁴), 64 \
         for a chain of 64 FMAs."
            .to_string(),
        format!(
            "The empty image (runtime: vector table, start-up, input generation, stack paint/scan, report over \
             semihosting; subtracted from every row): {}. A row's flash also holds its probe's few bytes of \
             setup (for the decoders: `KvCacheSlice::new` or `new_int8` and the loop that pushes the \
             first 255 tokens); the instructions and stack are the call's alone.",
            empty.join("; ")
        ),
        "The int8 and f16 decoder rows are the f32 row's probe, on the same q, keys and values, with the cache \
         stored as int8 (one f32 scale per row) or f16 (attention-core's `Element`): the step's `push` converts the \
         new token's key and value rows (int8: one f32 division per value), and `attend` reads every stored key \
         and value back in registers as the products use it (int8: an integer-to-float conversion and a product \
         per value; f16: the bit manipulation of `softmax_core::stored`, with an f32 subtraction per value for its \
         subnormals); the Cortex-M0 does all of it in software. Their outputs are checked against an f64 \
         reference over the keys and values as the cache reads them back (the tool's own implementation of each \
         format's rounding), within the same 1e-6·max|v| as the f32 row; table.json's output_check also gives \
         their error against the f32 inputs (the formats' rounding)."
            .to_string(),
        "Cortex-M0 images run on QEMU's `microbit` (nRF51, Cortex-M0) with the SoC's SRAM raised from 16 KiB to \
         256 KiB (`-global nrf51-soc.sram-size=262144`): the f32 K and V of the tile (64 KiB) and of the decoder's \
         cache (128 KiB; int8 34 KiB, f16 64 KiB) do not fit 16 KiB. Code, instruction counts and stack depth do not depend on the RAM size. \
         QEMU counts instructions, not cycles (no wait states, no pipeline): compare kernels with each other, not \
         with a datasheet's cycle figures."
            .to_string(),
    ];
    for n in &notes {
        let _ = writeln!(md, "- {n}");
    }
    std::fs::write(dir.join("table.md"), md).map_err(|e| format!("write table.md: {e}"))?;
    print!(
        "{}",
        std::fs::read_to_string(dir.join("table.md")).unwrap_or_default()
    );
    Ok(())
}

fn check(dir: &Path, jobs: usize, trace: Trace) -> Result<(), String> {
    let path = dir.join("table.json");
    let text =
        std::fs::read_to_string(&path).map_err(|e| format!("read {}: {e}", path.display()))?;
    let committed = json::parse(&text)?;
    let m = measure(dir, jobs, trace)?;
    let mut entries: Vec<&Json> = Vec::new();
    for key in ["kernels", "prepare"] {
        entries.extend(
            committed
                .get(key)
                .and_then(Json::as_arr)
                .ok_or(format!("table.json has no {key:?} array"))?,
        );
    }
    let mut failures = Vec::new();
    let mut lines = Vec::new();
    let mut seen = 0;
    for e in entries {
        let bin = e
            .get("probe")
            .and_then(Json::as_str)
            .ok_or("table.json: an entry without \"probe\"")?;
        let Some(pi) = PROBES.iter().position(|p| p.bin == bin) else {
            failures.push(format!(
                "{bin}: in table.json but no longer a probe (rerun report.sh)"
            ));
            continue;
        };
        seen += 1;
        for (ci, c) in CONFIGS.iter().enumerate() {
            let old = e
                .get("cost")
                .and_then(|x| x.get(c.id))
                .ok_or(format!("table.json: {bin} has no {}", c.id))?;
            let now = cost(&m, ci, pi);
            let mut row = Vec::new();
            for (name, new, old) in [
                ("flash", now.flash, old.get("flash").and_then(Json::as_u64)),
                (
                    "stack",
                    now.stack as i64,
                    old.get("stack").and_then(Json::as_u64),
                ),
            ] {
                let old = old.ok_or(format!("table.json: {bin} {} has no {name}", c.id))? as i64;
                let limit = (old as f64 * (1.0 + TOLERANCE)).floor() as i64;
                if new > limit {
                    failures.push(format!(
                        "{bin} {} {name}: {new} bytes, committed {old} (+{:.1}%, limit +{:.0}%)",
                        c.id,
                        (new - old) as f64 / old.max(1) as f64 * 100.0,
                        TOLERANCE * 100.0
                    ));
                }
                if new != old {
                    row.push(format!("{name} {old} → {new}"));
                }
            }
            if let (Some(new), Some(old)) = (
                now.instructions,
                old.get("instructions").and_then(Json::as_u64),
            ) {
                if new != old as i64 {
                    row.push(format!(
                        "instructions {old} → {new} ({:+.1}%)",
                        (new - old as i64) as f64 / old.max(1) as f64 * 100.0
                    ));
                }
            }
            if !row.is_empty() {
                lines.push(format!("  {bin} {}: {}", c.id, row.join(", ")));
            }
        }
    }
    let expected = PROBES.iter().filter(|p| p.role != Role::Empty).count();
    if seen != expected {
        failures.push(format!(
            "table.json lists {seen} of the {expected} probes (rerun report.sh)"
        ));
    }
    if lines.is_empty() {
        println!(
            "check: every figure equals the committed table.json ({} probes × {} builds{})",
            seen,
            CONFIGS.len(),
            if trace != Trace::Off {
                ", instructions included"
            } else {
                ""
            }
        );
    } else {
        println!(
            "check: figures that differ from the committed table.json:\n{}",
            lines.join("\n")
        );
    }
    if failures.is_empty() {
        println!(
            "check: no flash or stack figure grew more than {:.0}%: passed",
            TOLERANCE * 100.0
        );
        Ok(())
    } else {
        Err(format!(
            "{} figure(s) over the committed table.json:\n  {}",
            failures.len(),
            failures.join("\n  ")
        ))
    }
}

/// Thousands separated by commas (the README's style).
fn group(v: i64) -> String {
    let s = v.unsigned_abs().to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    if v < 0 {
        format!("−{out}")
    } else {
        out
    }
}

/// `instructions / elements` with one decimal (rounded half up, in integers), thousands grouped.
fn decimal(instructions: i64, elements: u32) -> String {
    let e = elements as i64;
    let tenths = (20 * instructions + e).div_euclid(2 * e);
    format!("{}.{}", group(tenths.div_euclid(10)), tenths.rem_euclid(10))
}

fn fnv1a(b: &[u8]) -> u64 {
    b.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &x| {
        (h ^ x as u64).wrapping_mul(0x0000_0100_0000_01b3)
    })
}
