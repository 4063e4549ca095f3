//! `harness bench`: softmax-core against its peers, side by side, in one run.
//!
//! For every op and shape, every contender is sampled round-robin (one sample each per round, so
//! machine drift hits all alike), single-threaded, and the table shows each one's median time per
//! value, its spread (interquartile range over the median), its speed relative to onnxruntime
//! (onnxruntime's time over this one's: above 1 is faster) and its time in units of a memory copy
//! of the same bytes. The table is also written as JSON to `target/bench/bench.json`.
//!
//! Contenders: softmax-core with each backend (at the level the dispatch chose, and forced to the
//! baseline level when the CPU has a wider one), its explicitly chosen fast variant
//! (`softmax_core::fast`, at the chosen level), the same function written plainly with scalar
//! `libm::expf`, onnxruntime 1.32 through `harness/peers/ort_peer.py` (a Python process driven
//! over a pipe; its samples are timed inside Python around the calls), candle-nn with the
//! `candle` feature, and a memory copy and a memory read of the same bytes.

use std::cell::RefCell;
use std::hint::black_box;
use std::io::{self, BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::rc::Rc;
use std::time::Instant;

use harness::contenders::{bench_input, Kernel, LOG_SOFTMAX, SOFTMAX};
use serde_json::json;
use softmax_core::simd::{self, Level};

/// The shapes of the issue: rows × values per row.
const SHAPES: &[(usize, usize)] = &[
    (1024, 16),
    (1024, 64),
    (1024, 256),
    (256, 4096),
    (1, 1 << 24),
];

#[derive(Clone, Copy, PartialEq)]
enum Op {
    Softmax,
    LogSoftmax,
}

impl Op {
    fn name(self) -> &'static str {
        match self {
            Op::Softmax => "softmax",
            Op::LogSoftmax => "log_softmax",
        }
    }
    fn onnx(self) -> &'static str {
        match self {
            Op::Softmax => "Softmax",
            Op::LogSoftmax => "LogSoftmax",
        }
    }
}

/// What a contender is, for the table's grouping.
#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Ours,
    Peer,
    Memory,
}

/// One contender: runs `reps` repetitions and returns the elapsed seconds.
struct Contender<'a> {
    name: String,
    kind: Kind,
    run: Box<dyn FnMut(usize) -> io::Result<f64> + 'a>,
}

/// The onnxruntime peer process.
struct Ort {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    version: String,
    overhead_ns: f64,
}

impl Ort {
    fn start() -> Result<Ort, String> {
        let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("peers/ort_peer.py");
        let mut child = Command::new("python3")
            .arg(&script)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| format!("cannot start python3 {}: {e}", script.display()))?;
        let stdin = child.stdin.take().ok_or("no stdin")?;
        let stdout = BufReader::new(child.stdout.take().ok_or("no stdout")?);
        let mut ort = Ort {
            child,
            stdin,
            stdout,
            version: String::new(),
            overhead_ns: f64::NAN,
        };
        let hello = ort.ask("hello").map_err(|e| e.to_string())?;
        let mut w = hello.split_whitespace();
        ort.version = w.next().unwrap_or("?").to_string();
        ort.overhead_ns = w.next().and_then(|v| v.parse().ok()).unwrap_or(f64::NAN);
        Ok(ort)
    }

    /// Sends one command, returns the words after `ok`.
    fn ask(&mut self, cmd: &str) -> io::Result<String> {
        writeln!(self.stdin, "{cmd}")?;
        self.stdin.flush()?;
        let mut line = String::new();
        self.stdout.read_line(&mut line)?;
        match line.trim_end().strip_prefix("ok") {
            Some(rest) => Ok(rest.trim().to_string()),
            None => Err(io::Error::other(format!(
                "onnxruntime peer: {}",
                if line.is_empty() {
                    "exited"
                } else {
                    line.trim_end()
                }
            ))),
        }
    }
}

impl Drop for Ort {
    fn drop(&mut self) {
        let _ = writeln!(self.stdin, "quit");
        let _ = self.stdin.flush();
        let _ = self.child.wait();
    }
}

fn bench_dir() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target"));
    target.join("bench")
}

fn write_f32(path: &std::path::Path, v: &[f32]) -> io::Result<()> {
    let bytes: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
    std::fs::write(path, bytes)
}

fn read_f32(path: &std::path::Path) -> io::Result<Vec<f32>> {
    Ok(std::fs::read(path)?
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect())
}

/// The CPU's name (Linux), for the header.
fn cpu_name() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|v| v.trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".into())
}

/// Median and interquartile range over the median.
fn stats(v: &mut [f64]) -> (f64, f64) {
    v.sort_by(f64::total_cmp);
    let q = |p: f64| v[((v.len() - 1) as f64 * p).round() as usize];
    let med = q(0.5);
    (med, (q(0.75) - q(0.25)) / med)
}

/// The output buffer every contender writes (they run one at a time).
type Out = Rc<RefCell<Vec<f32>>>;

/// A Rust kernel as a contender, optionally forced to one dispatch level while it runs.
fn kernel<'a>(
    name: String,
    f: Kernel,
    x: &'a [f32],
    out: &Out,
    n: usize,
    level: Option<Level>,
) -> Contender<'a> {
    let out = Rc::clone(out);
    Contender {
        name,
        kind: Kind::Ours,
        run: Box::new(move |reps| {
            let mut y = out.borrow_mut();
            if let Some(l) = level {
                simd::set_max_level(l);
            }
            let t = Instant::now();
            for _ in 0..reps {
                f(black_box(x), black_box(&mut y[..]), n);
            }
            let dt = t.elapsed().as_secs_f64();
            simd::set_max_level(Level::Avx512);
            Ok(dt)
        }),
    }
}

/// A memory copy of the same bytes (input to output), the bandwidth yardstick.
fn copy<'a>(x: &'a [f32], out: &Out) -> Contender<'a> {
    let out = Rc::clone(out);
    Contender {
        name: "memory copy (same bytes)".into(),
        kind: Kind::Memory,
        run: Box::new(move |reps| {
            let mut y = out.borrow_mut();
            let t = Instant::now();
            for _ in 0..reps {
                black_box(&mut y[..]).copy_from_slice(black_box(x));
            }
            Ok(t.elapsed().as_secs_f64())
        }),
    }
}

/// A memory read of the input (an integer reduction of its bits, which vectorises freely; see
/// [`lane_sums`]).
fn read(x: &[f32]) -> Contender<'_> {
    Contender {
        name: "memory read (same bytes)".into(),
        kind: Kind::Memory,
        run: Box::new(move |reps| {
            let t = Instant::now();
            for _ in 0..reps {
                let x = black_box(x);
                let s = softmax_core::simd::dispatch(
                    #[inline(always)]
                    || {
                        let (blocks, rest) = x.as_chunks::<64>();
                        let acc = lane_sums(blocks, |a: u32, v: f32| a.wrapping_add(v.to_bits()));
                        rest.iter().fold(acc, |mut a, v| {
                            a[0] = a[0].wrapping_add(v.to_bits());
                            a
                        })
                    },
                );
                black_box(s);
            }
            Ok(t.elapsed().as_secs_f64())
        }),
    }
}

/// The running sums of the bench's plain reads: word `i` of each block into sum `i` (wrapping),
/// so that the loop keeps several independent chains and as little arithmetic as a read allows.
/// The callers run it through `simd::dispatch`, at the level the kernels run at: compiled for
/// the baseline (SSE2) in the default build, the decoder's read of 4 MiB took 17.6 ns per key
/// against 10.4 in a `target-cpu=native` build, which made the default build's "share of read"
/// figures flatter the kernels.
#[inline(always)]
fn lane_sums<T: Copy, A: Copy + Default, const N: usize>(
    blocks: &[[T; N]],
    add: impl Fn(A, T) -> A,
) -> [A; N] {
    let mut acc = [A::default(); N];
    for b in blocks {
        for (a, &w) in acc.iter_mut().zip(b) {
            *a = add(*a, w);
        }
    }
    acc
}

/// Samples every contender round-robin (`rounds` samples each, about 3 ms per sample) and
/// returns each one's median time per unit (`units` per call) and spread.
fn sample(cs: &mut [Contender<'_>], units: usize, rounds: usize) -> io::Result<Vec<Row>> {
    let mut reps = Vec::with_capacity(cs.len());
    for c in cs.iter_mut() {
        let t1 = (c.run)(1)?.max(1e-7);
        reps.push(((3e-3 / t1) as usize).clamp(1, 100_000));
    }
    let mut samples = vec![Vec::with_capacity(rounds); cs.len()];
    for _ in 0..rounds {
        for ((c, s), &r) in cs.iter_mut().zip(samples.iter_mut()).zip(&reps) {
            let t = (c.run)(r)?;
            s.push(t * 1e9 / (r * units) as f64);
        }
    }
    Ok(cs
        .iter()
        .zip(samples.iter_mut())
        .map(|(c, s)| {
            let (median, iqr) = stats(s);
            Row {
                name: c.name.clone(),
                kind: c.kind,
                median,
                iqr,
            }
        })
        .collect())
}

/// A Rust closure as a contender (it runs at the level the dispatch chose).
fn ours<'a>(name: String, mut f: impl FnMut() + 'a) -> Contender<'a> {
    Contender {
        name,
        kind: Kind::Ours,
        run: Box::new(move |reps| {
            let t = Instant::now();
            for _ in 0..reps {
                f();
            }
            Ok(t.elapsed().as_secs_f64())
        }),
    }
}

/// The onnxruntime peer on a model loaded with `loadjson`, as a contender.
fn ort_contender<'a>(peer: &'a mut Ort, spec: &serde_json::Value) -> io::Result<Contender<'a>> {
    peer.ask(&format!("loadjson {spec}"))?;
    Ok(Contender {
        name: format!("onnxruntime {}", peer.version),
        kind: Kind::Peer,
        run: Box::new(move |reps| {
            let s = peer.ask(&format!("run {reps}"))?;
            s.parse::<f64>().map_err(io::Error::other)
        }),
    })
}

/// Prints one table of a section whose contenders are not the softmax kernels: time per unit,
/// spread and the ratio to onnxruntime (row `ort`, if present); records the JSON rows.
fn print_rows(
    out: &mut impl Write,
    heading: &str,
    unit: &str,
    rows: &[Row],
    ort: Option<usize>,
    results: &mut Vec<serde_json::Value>,
) -> io::Result<()> {
    writeln!(
        out,
        "\n{heading}\n  {:<44} {:>11} {:>6} {:>8}",
        "contender",
        format!("ns/{unit}"),
        "±",
        "vs ORT"
    )?;
    let t_ort = ort.and_then(|i| rows.get(i)).map(|r| r.median);
    for r in rows {
        let vs_ort = t_ort.map(|o| o / r.median);
        writeln!(
            out,
            "  {:<44} {:>11.3} {:>5.0}% {:>8}",
            r.name,
            r.median,
            r.iqr * 100.0,
            vs_ort.map_or("-".to_string(), |v| format!("{v:.2}×")),
        )?;
        results.push(json!({
            "op": heading,
            "contender": r.name,
            "unit": unit,
            "ns_per_unit": r.median,
            "iqr_over_median": r.iqr,
            "onnxruntime_time_over_this": vs_ort,
        }));
    }
    Ok(())
}

/// The loss and attention sections: cross-entropy forward + gradient over 8 × 131072 logits
/// (issue: at most 1.3× softmax-core's softmax over the same logits, faster than onnxruntime's
/// `SoftmaxCrossEntropyLoss` forward), attention at H = 8, T = S = 1024, D = 64, causal and
/// not, against onnxruntime's opset-23 `Attention` (1 thread), with the causal speed-up over
/// our unmasked run, and a single-query decode over n = 4096 keys of d = 128 against a plain
/// read of the same K and V bytes (the bandwidth fraction).
fn built_on_skeleton(
    out: &mut impl Write,
    ort: &mut Option<Ort>,
    dir: &std::path::Path,
    fast: bool,
    results: &mut Vec<serde_json::Value>,
) -> io::Result<()> {
    use attention_core::{attention, Causal, Dims, Options, Output, Qkv};
    use loss_core::{cross_entropy, CrossEntropyOptions, CrossEntropyOutputs};
    use softmax_core::backend::Poly;
    let rounds = if fast { 3 } else { 11 };

    // Cross-entropy.
    let (n, c) = (8usize, 131_072usize);
    let x = bench_input(n * c);
    let target: Vec<i64> = (0..n).map(|i| ((i * 7919 + 13) % c) as i64).collect();
    let grad = RefCell::new(vec![0.0f32; n * c]);
    let y = RefCell::new(vec![0.0f32; n * c]);
    let level = simd::level().name();
    let mut cs = vec![
        ours(format!("loss-core cross_entropy + grad [{level}]"), || {
            let mut g = grad.borrow_mut();
            let l = cross_entropy(
                Poly,
                black_box(&x),
                c,
                &target,
                &CrossEntropyOptions::new(),
                CrossEntropyOutputs::new().with_grad(&mut g),
            );
            black_box(l.ok());
        }),
        ours(format!("softmax-core rows::softmax [{level}]"), || {
            let mut yb = y.borrow_mut();
            let r = softmax_core::rows::softmax(
                Poly,
                black_box(&x),
                &mut yb,
                &softmax_core::Rows::new(c),
            );
            black_box(r.ok());
        }),
    ];
    let mut peer = ort.as_mut();
    let ort_idx = if let Some(p) = peer.take() {
        let xp = dir.join("ce_x.f32");
        let tp = dir.join("ce_t.i32");
        write_f32(&xp, &x)?;
        let tb: Vec<u8> = target
            .iter()
            .flat_map(|&t| (t as i32).to_le_bytes())
            .collect();
        std::fs::write(&tp, tb)?;
        let spec = json!({"kind": "sce", "n": n, "c": c, "x": xp, "t": tp});
        cs.push(ort_contender(p, &spec)?);
        Some(cs.len() - 1)
    } else {
        None
    };
    let rows = sample(&mut cs, n * c, rounds)?;
    drop(cs);
    print_rows(
        out,
        &format!("cross_entropy {n}×{c} (loss-core: forward + gradient, mean; onnxruntime: SoftmaxCrossEntropyLoss forward only; logits uniform in [−10, 10))"),
        "logit",
        &rows,
        ort_idx,
        results,
    )?;

    // Attention. The headline inputs are what trained models produce: q, k, v with standard
    // deviation 1, so the scaled scores q·k/√d have a standard deviation near 1. The "peaked"
    // row (uniform in [−10, 10): scores with a standard deviation near 33, nearly every
    // attention weight subnormal) is an extra, labelled row: onnxruntime (no flush-to-zero)
    // pays the subnormal penalty on every weight there, which typical inputs never cause.
    let (h, t, d) = (8usize, 1024usize, 64usize);
    let typical = [
        unit_input(h * t * d, 11),
        unit_input(h * t * d, 12),
        unit_input(h * t * d, 13),
    ];
    let peaked = [
        bench_input(h * t * d),
        bench_input(h * t * d + 7).split_off(7),
        bench_input(h * t * d + 3).split_off(3),
    ];
    let o = RefCell::new(vec![0.0f32; h * t * d]);
    let dims = Dims::new(h, h, t, t, d, d);
    let mut ours_median = [0.0f64; 2];
    let cases = [
        (
            false,
            &typical,
            "q, k, v uniform in [−√3, √3): standard deviation 1, scores ≈ 1",
        ),
        (
            true,
            &typical,
            "q, k, v uniform in [−√3, √3): standard deviation 1, scores ≈ 1",
        ),
        (
            false,
            &peaked,
            "extra row, not the headline — peaked: q, k, v uniform in [−10, 10), scores ≈ 33, \
             nearly every weight subnormal",
        ),
    ];
    for (i, (causal, [q, k, v], input)) in cases.into_iter().enumerate() {
        let opts = if causal {
            Options::new().with_causal(Causal::BottomRight)
        } else {
            Options::new()
        };
        let mut cs = vec![ours(format!("attention-core attention [{level}]"), || {
            let mut ob = o.borrow_mut();
            let r = attention(
                Poly,
                &dims,
                Qkv::new(black_box(q), k, v),
                &opts,
                Output::new(&mut ob),
            );
            black_box(r.ok());
        })];
        let ort_idx = if let Some(p) = ort.as_mut() {
            let paths: Vec<PathBuf> = ["q", "k", "v"]
                .iter()
                .map(|n| dir.join(format!("attn_{n}_{i}.f32")))
                .collect();
            for (p, data) in paths.iter().zip([q, k, v]) {
                write_f32(p, data)?;
            }
            let spec = json!({"kind": "attention", "h": h, "hkv": h, "t": t, "s": t, "d": d,
                "causal": causal as i32, "q": paths[0], "k": paths[1], "v": paths[2]});
            cs.push(ort_contender(p, &spec)?);
            Some(cs.len() - 1)
        } else {
            None
        };
        // Fifteen single calls per contender (about 15 ms each): the causal speed-up below is a
        // ratio of two medians, and seven samples left it moving by ±3% from run to run.
        let rows = sample(&mut cs, h * t * t, if fast { 3 } else { 15 })?;
        drop(cs);
        if i < 2 {
            ours_median[causal as usize] = rows.first().map_or(f64::NAN, |r| r.median);
        }
        print_rows(
            out,
            &format!(
                "attention H={h} T=S={t} D={d}{} (per query-key pair of the full H×T×S grid; {input})",
                if causal { " causal" } else { "" }
            ),
            "pair",
            &rows,
            ort_idx,
            results,
        )?;
    }
    let speedup = ours_median[0] / ours_median[1];
    writeln!(
        out,
        "  causal mask speed-up (attention-core unmasked time / causal time): {speedup:.2}×"
    )?;
    results.push(json!({"op": "attention causal speed-up", "unmasked_over_causal": speedup}));

    // Single-query decode over a cache of n keys: the time against a plain read of the same
    // K and V bytes (one contiguous buffer: K then V).
    let (n, d) = (4096usize, 128usize);
    let kv = unit_input(2 * n * d, 14);
    let (k, v) = kv.split_at(n * d);
    let q = unit_input(d, 15);
    let o = RefCell::new(vec![0.0f32; d]);
    let dims = Dims::new(1, 1, 1, n, d, d);
    let mut cs = vec![
        ours(format!("attention-core attention, t = 1 [{level}]"), || {
            let mut ob = o.borrow_mut();
            let r = attention(
                Poly,
                &dims,
                Qkv::new(black_box(&q), k, v),
                &Options::new(),
                Output::new(&mut ob),
            );
            black_box(r.ok());
        }),
        read(&kv),
    ];
    let rows = sample(&mut cs, n, rounds)?;
    drop(cs);
    print_rows(
        out,
        &format!("decode: one query over a cache of n={n} keys, d=dv={d} (per key; read: the same {} KiB of K and V; q, k, v uniform in [−√3, √3): standard deviation 1)", 2 * n * d * 4 / 1024),
        "key",
        &rows,
        None,
        results,
    )?;
    if let [ours, read, ..] = rows.as_slice() {
        let frac = read.median / ours.median;
        writeln!(
            out,
            "  bandwidth fraction (memory read time / decode time): {:.0}%",
            frac * 100.0
        )?;
        results.push(json!({"op": "decode bandwidth fraction", "read_over_decode": frac}));
    }
    Ok(())
}

/// The core's clock in GHz, estimated from a dependent chain of integer squarings plus one (an
/// `imul` and an `inc`: 4 cycles a step on AMD Zen and Intel cores since Skylake; a chain the
/// compiler cannot shorten).
fn clock_ghz() -> f64 {
    let steps: u64 = 1 << 27;
    let mut best = f64::MAX;
    for _ in 0..3 {
        let t = Instant::now();
        let mut x: u64 = black_box(3);
        for _ in 0..steps {
            x = x.wrapping_mul(x).wrapping_add(1);
        }
        black_box(x);
        best = best.min(t.elapsed().as_secs_f64());
    }
    4.0 * steps as f64 / best / 1e9
}

/// The vector peak the products are compared with: f32 lanes per vector × FMA ports × 2 flops ×
/// the measured clock, the lanes and ports taken from the CPU's vendor, family and model
/// (Linux's `/proc/cpuinfo`) at the dispatched level's width; `None` (no share printed) for a
/// family or model not in the table. A constant cannot be right everywhere: a Zen 3 or Zen 4
/// core runs two 256-bit FMA pipes (and two add pipes; an AVX-512 operation in two halves), a
/// Zen 5 core two 512-bit FMA pipes and two 512-bit add pipes (64 flops per cycle: a 32-flop
/// figure put its products above 100%), an Intel AVX-512 core one or two 512-bit FMA units (two
/// assumed: most Xeon Scalable parts). The products' separate multiply and add reach the peak
/// on the AMD cores (the adds run on their own pipes) and half of it on Intel's (they share the
/// FMA units).
struct Peak {
    /// f32 lanes per operation on the FMA pipes.
    lanes: usize,
    /// FMA pipes.
    ports: usize,
    /// What the figures were taken for.
    core: &'static str,
}

impl Peak {
    /// The peak of this CPU at `level`'s width, if its family is known.
    fn of_cpu(level: Level) -> Option<Peak> {
        let info = std::fs::read_to_string("/proc/cpuinfo").ok()?;
        let field = |name: &str| {
            info.lines()
                .find(|l| l.split(':').next().map(str::trim) == Some(name))
                .and_then(|l| l.split(':').nth(1))
                .map(|v| v.trim().to_string())
        };
        let (vendor, family) = (
            field("vendor_id")?,
            field("cpu family")?.parse::<u32>().ok()?,
        );
        let width = if level >= Level::Avx512 {
            16
        } else if level >= Level::Avx2 {
            8
        } else {
            4
        };
        let model = field("model")?.parse::<u32>().ok()?;
        let (lanes, core) = match (vendor.as_str(), family, model) {
            // Server (Turin) and desktop (Granite Ridge) Zen 5; the mobile parts' FP datapath is
            // 256 bits wide, and the other models are not in this table.
            ("AuthenticAMD", 26, 0x00..=0x1f | 0x40..=0x4f) => {
                (width, "AMD Zen 5: 512-bit FMA pipes")
            }
            ("AuthenticAMD", 25, _) | ("AuthenticAMD", 23, 0x30..) => {
                (width.min(8), "AMD Zen 2 to Zen 4: 256-bit FMA pipes")
            }
            ("AuthenticAMD", 23, _) => (width.min(4), "AMD Zen and Zen+: 128-bit FMA pipes"),
            ("GenuineIntel", 6, _) => (
                width,
                "Intel: two FMA units assumed; one-unit parts and E-cores peak lower",
            ),
            _ => return None,
        };
        Some(Peak {
            lanes,
            ports: 2,
            core,
        })
    }

    fn flops_per_cycle(&self) -> f64 {
        (2 * self.lanes * self.ports) as f64
    }
}

/// attention's two products in isolation, on the shapes attention gives them (a prefill tile of
/// sixteen queries against a 128-key block, attention-core's tile on 64-bit targets with an
/// operating system, and a decoding query against 4096 keys): ns per
/// multiply-add, GFLOP/s, and the share of the CPU's [`Peak`] at the measured clock.
fn products(
    out: &mut impl Write,
    fast: bool,
    results: &mut Vec<serde_json::Value>,
) -> io::Result<()> {
    use softmax_core::linalg::{matmul_nn, matmul_nt};
    let rounds = if fast { 3 } else { 11 };
    let ghz = clock_ghz();
    let peak = Peak::of_cpu(simd::level());
    let level = simd::level().name();
    // (label, A·Bᵀ?, m, n, k): A·Bᵀ is m × k times (n × k)ᵀ, A·B is m × n times n × k.
    let shapes: [(&str, bool, usize, usize, usize); 4] = [
        (
            "scores Q·Kᵀ, prefill tile 16 × 128, d = 64",
            true,
            16,
            128,
            64,
        ),
        (
            "values P·V, prefill tile 16 × 128, dv = 64",
            false,
            16,
            128,
            64,
        ),
        ("scores q·Kᵀ, decode 1 × 4096, d = 128", true, 1, 4096, 128),
        ("values p·V, decode 1 × 4096, dv = 128", false, 1, 4096, 128),
    ];
    let mut rows_out = Vec::new();
    for (i, &(label, nt, m, n, k)) in shapes.iter().enumerate() {
        let a = unit_input(if nt { m * k } else { m * n }, 101 + i as u64);
        let b = unit_input(n * k, 202 + i as u64);
        let c = RefCell::new(vec![0.0f32; if nt { m * n } else { m * k }]);
        let mut cs = vec![ours(
            format!(
                "linalg::{} [{level}]",
                if nt { "matmul_nt" } else { "matmul_nn" }
            ),
            || {
                let mut c = c.borrow_mut();
                let r = if nt {
                    matmul_nt(black_box(&a), black_box(&b), k, &mut c)
                } else {
                    matmul_nn(black_box(&a), black_box(&b), n, k, &mut c, false)
                };
                black_box(r.ok());
            },
        )];
        let rows = sample(&mut cs, m * n * k, rounds)?;
        drop(cs);
        rows_out.push((label, rows));
    }
    let fpc = peak.as_ref().map(Peak::flops_per_cycle);
    let peak_text = match &peak {
        Some(p) => format!(
            "peak: {} f32 lanes × {} FMA pipes × 2 flops × {ghz:.2} GHz = {:.0} GFLOP/s ({})",
            p.lanes,
            p.ports,
            p.flops_per_cycle() * ghz,
            p.core
        ),
        None => "peak: not known for this CPU".to_string(),
    };
    writeln!(
        out,
        "\nattention's products in isolation (inputs with standard deviation 1; ns per multiply-add; \
         clock {ghz:.2} GHz measured; {peak_text})"
    )?;
    writeln!(
        out,
        "  {:<44} {:>11} {:>6} {:>9} {:>7}",
        "product", "ns/mul-add", "±", "GFLOP/s", "peak"
    )?;
    for (label, rows) in &rows_out {
        for r in rows {
            let gflops = 2.0 / r.median;
            let share = fpc.map(|f| gflops / (f * ghz));
            writeln!(
                out,
                "  {:<44} {:>11.4} {:>5.0}% {:>9.1} {:>7}",
                label,
                r.median,
                r.iqr * 100.0,
                gflops,
                share.map_or_else(|| "-".to_string(), |s| format!("{:.0}%", s * 100.0))
            )?;
            results.push(json!({
                "op": format!("product: {label}"),
                "contender": r.name,
                "unit": "multiply-add",
                "ns_per_unit": r.median,
                "iqr_over_median": r.iqr,
                "gflops": gflops,
                "clock_ghz": ghz,
                "peak_flops_per_cycle": fpc,
                "share_of_peak": share,
            }));
        }
    }
    Ok(())
}

/// Values uniform in [−√3, √3) (mean 0, standard deviation 1: a transformer's normalised
/// activations), SplitMix64 from `seed`.
fn unit_input(n: usize, seed: u64) -> Vec<f32> {
    let mut s = seed;
    (0..n)
        .map(|_| {
            s = s.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = s;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^= z >> 31;
            ((z >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0) * 3f32.sqrt()
        })
        .collect()
}

/// A plain read of `bytes` (summed as 32-bit words into 64 running sums by [`lane_sums`], at
/// the dispatched level: the memory traffic of the cache's bytes, with as little arithmetic as
/// the loop allows). Compiled for the SSE2 baseline, as it was before, its speed depended on how
/// LLVM laid the loop out: the same source read the decoder's 4 MiB at 10.1 ns per key in one
/// build and 17.6–17.9 in the next.
fn read_bytes(name: String, bytes: &[u8]) -> Contender<'_> {
    Contender {
        name,
        kind: Kind::Memory,
        run: Box::new(move |reps| {
            let t = Instant::now();
            for _ in 0..reps {
                let bytes = black_box(bytes);
                let s = softmax_core::simd::dispatch(
                    #[inline(always)]
                    || {
                        // 32-bit words (64-bit words from bytes compiled to byte shuffles at
                        // the AVX-512 level: five times slower).
                        let (words, _) = bytes.as_chunks::<4>();
                        let (blocks, rest) = words.as_chunks::<64>();
                        let add = |a: u32, w: [u8; 4]| a.wrapping_add(u32::from_le_bytes(w));
                        let acc = lane_sums(blocks, add);
                        rest.iter().fold(acc, |mut a, &w| {
                            a[0] = add(a[0], w);
                            a
                        })
                    },
                );
                black_box(s);
            }
            Ok(t.elapsed().as_secs_f64())
        }),
    }
}

/// The decoder's attention over a full KV cache of n = 4096 tokens, d = dv = 128, one query
/// head over one kv head (`Cache::attend`, the per-token cost of decoding at that context),
/// for each storage, each beside a plain read of its stored bytes (keys, values and scales),
/// all in one round-robin run. Inputs: q, k, v uniform in [−√3, √3) (standard deviation 1;
/// the scaled scores then have a standard deviation near 1).
fn kv_cache(
    out: &mut impl Write,
    fast: bool,
    results: &mut Vec<serde_json::Value>,
) -> io::Result<()> {
    use attention_core::softmax_core::stored::{bf16, f16};
    use attention_core::{DecodeOptions, Element, KvCacheSlice, Output};
    use softmax_core::backend::Poly;
    let (n, d) = (4096usize, 128usize);
    // More rounds than elsewhere: the f32 cache's time moves by 10–15% from sample to sample
    // (its 4 MiB sit at the edge of what stays in the cache between samples).
    let rounds = if fast { 3 } else { 31 };
    let k = unit_input(n * d, 1);
    let v = unit_input(n * d, 2);
    let q = unit_input(d, 3);
    let level = simd::level().name();
    let err = |e: attention_core::Error| io::Error::other(e.to_string());

    /// A buffer as large as a full cache of `E` (keys, values and their scales), filled with
    /// nonzero bytes (so that its pages are really there: an untouched zeroed allocation reads
    /// the kernel's shared zero page).
    fn bytes_of<E: Element<Float = f32>>(n: usize, d: usize) -> Vec<u8> {
        let unit = core::mem::size_of::<E::Unit>();
        let scale = core::mem::size_of::<attention_core::ScaleOf<E>>();
        let len = 2 * n * (d * unit + scale);
        (0..len).map(|i| (i.wrapping_mul(131) | 1) as u8).collect()
    }

    let (mut k32, mut v32) = (vec![0.0f32; n * d], vec![0.0f32; n * d]);
    let (mut k16, mut v16) = (vec![f16::ZERO; n * d], vec![f16::ZERO; n * d]);
    let (mut kb, mut vb) = (vec![bf16::ZERO; n * d], vec![bf16::ZERO; n * d]);
    let (mut k8, mut v8) = (vec![0i8; n * d], vec![0i8; n * d]);
    let (mut s8k, mut s8v) = (vec![0.0f32; n], vec![0.0f32; n]);
    let mut c32 = KvCacheSlice::new(&mut k32, &mut v32, 1, d, d, None).map_err(err)?;
    let mut c16 = KvCacheSlice::new(&mut k16, &mut v16, 1, d, d, None).map_err(err)?;
    let mut cb = KvCacheSlice::new(&mut kb, &mut vb, 1, d, d, None).map_err(err)?;
    let mut c8 =
        KvCacheSlice::new_int8(&mut k8, &mut v8, &mut s8k, &mut s8v, 1, d, d, None).map_err(err)?;
    for (kr, vr) in k.chunks(d).zip(v.chunks(d)) {
        c32.push(kr, vr).map_err(err)?;
        c16.push(kr, vr).map_err(err)?;
        cb.push(kr, vr).map_err(err)?;
        c8.push(kr, vr).map_err(err)?;
    }
    let bytes = [
        bytes_of::<f32>(n, d),
        bytes_of::<f16>(n, d),
        bytes_of::<bf16>(n, d),
        bytes_of::<i8>(n, d),
    ];
    let opts = DecodeOptions::new();
    let o = RefCell::new(vec![0.0f32; d]);
    let dims = attention_core::Dims::new(1, 1, 1, n, d, d);
    let mut cs = vec![
        ours(format!("f32 cache attend [{level}]"), || {
            let r = c32.attend(Poly, black_box(&q), &opts, Output::new(&mut o.borrow_mut()));
            black_box(r.ok());
        }),
        ours(format!("f16 cache attend [{level}]"), || {
            let r = c16.attend(Poly, black_box(&q), &opts, Output::new(&mut o.borrow_mut()));
            black_box(r.ok());
        }),
        ours(format!("bf16 cache attend [{level}]"), || {
            let r = cb.attend(Poly, black_box(&q), &opts, Output::new(&mut o.borrow_mut()));
            black_box(r.ok());
        }),
        ours(format!("int8 cache attend [{level}]"), || {
            let r = c8.attend(Poly, black_box(&q), &opts, Output::new(&mut o.borrow_mut()));
            black_box(r.ok());
        }),
    ];
    // The same keys and values through `attention` (one query, no cache): the f32 rows read
    // the way the full computation reads them.
    cs.push(ours(
        format!("attention over the same f32 rows, t = 1 [{level}]"),
        || {
            let r = attention_core::attention(
                Poly,
                &dims,
                attention_core::Qkv::new(black_box(&q), &k, &v),
                &attention_core::Options::new(),
                Output::new(&mut o.borrow_mut()),
            );
            black_box(r.ok());
        },
    ));
    for (name, b) in ["f32", "f16", "bf16", "int8"].iter().zip(&bytes) {
        cs.push(read_bytes(
            format!("read of the {name} cache's {} KiB", b.len() / 1024),
            b,
        ));
    }
    let rows = sample(&mut cs, n, rounds)?;
    drop(cs);
    print_rows(
        out,
        &format!(
            "decode over a KV cache of n={n} tokens, d=dv={d}, 1 query head (per key; q, k, v \
             uniform in [−√3, √3): standard deviation 1)"
        ),
        "key",
        &rows,
        None,
        results,
    )?;
    if rows.len() == 9 {
        let f32_t = rows[0].median;
        for (i, name) in ["f32", "f16", "bf16", "int8"].iter().enumerate() {
            let (t, read) = (rows[i].median, rows[5 + i].median);
            writeln!(
                out,
                "  {name:<5} cache: {:.2}× the f32 cache's speed per key; its read takes {:.0}% of its decode time",
                f32_t / t,
                100.0 * read / t
            )?;
            results.push(json!({"op": "kv cache decode", "storage": name,
                "f32_time_over_this": f32_t / t, "read_over_decode": read / t}));
        }
    }
    Ok(())
}

/// candle-nn's `softmax_last_dim` / `log_softmax` on a CPU tensor (each call allocates its
/// output: candle has no out-parameter), inside a one-thread rayon pool.
#[cfg(feature = "candle")]
fn candle(op: Op, x: &[f32], rows: usize, n: usize) -> Contender<'static> {
    use candle_core::{Device, Tensor, D};
    let t = Tensor::from_slice(x, (rows, n), &Device::Cpu).expect("candle tensor");
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .expect("one-thread pool");
    Contender {
        name: "candle-nn 0.11".into(),
        kind: Kind::Peer,
        run: Box::new(move |reps| {
            pool.install(|| {
                let start = Instant::now();
                for _ in 0..reps {
                    let r = match op {
                        Op::Softmax => candle_nn::ops::softmax_last_dim(black_box(&t)),
                        Op::LogSoftmax => candle_nn::ops::log_softmax(black_box(&t), D::Minus1),
                    };
                    black_box(r.map_err(io::Error::other)?);
                }
                Ok(start.elapsed().as_secs_f64())
            })
        }),
    }
}

/// One measured row of the table.
/// The quantized softmax (softmax-core `quant`, TFLM's bits) beside the f32 kernels on the same
/// logits: 1024 rows of 16 and of 256 logits uniform in [−4, 4] (a classifier head's range),
/// quantized to int8 with scale 1/16 and to int16 with scale 1/4096; the f32 contenders take the
/// dequantized logits. The twice-computing row is TFLM's reference loop as written
/// (`softmax_suite::softmax_s8_twice`): the exp-once speed-up is its time over ours.
fn quantized(
    out: &mut impl Write,
    fast: bool,
    results: &mut Vec<serde_json::Value>,
) -> io::Result<()> {
    use softmax_core::quant::{softmax_s16, softmax_s8, softmax_s8_s16, S16Params, S8Params};
    let p8 = S8Params::prepare(1.0 / 16.0, 1.0).map_err(io::Error::other)?;
    let p16 = S16Params::prepare(1.0 / 4096.0, 1.0).map_err(io::Error::other)?;
    for (rows, n) in [(1024usize, 16usize), (1024, 256)] {
        let len = rows * n;
        // The bench's logits in [−10, 10), scaled to [−4, 4).
        let logits: Vec<f32> = bench_input(len).iter().map(|&v| v * 0.4).collect();
        let x8: Vec<i8> = logits
            .iter()
            .map(|&v| (v * 16.0).round().clamp(-128.0, 127.0) as i8)
            .collect();
        let x16: Vec<i16> = logits
            .iter()
            .map(|&v| (v * 4096.0).round() as i16)
            .collect();
        let deq: Vec<f32> = x8.iter().map(|&q| q as f32 / 16.0).collect();
        let (y8, y16, y32, yf) = (
            RefCell::new(vec![0i8; len]),
            RefCell::new(vec![0i16; len]),
            RefCell::new(vec![0i32; len]),
            RefCell::new(vec![0f32; len]),
        );
        let scratch = RefCell::new(vec![0i32; n]);
        // The parameters and the row length as a caller has them, at run time: constants the
        // optimiser can see let a `target-cpu=native` build specialise the int16 kernel's loops
        // to the row length (2.5 times faster than any caller would see).
        let (p8, p16, n) = (black_box(&p8), black_box(&p16), black_box(n));
        let mut cs = vec![
            ours("int8 → int8 (quant::softmax_s8)".into(), || {
                let _ = softmax_s8(
                    p8,
                    black_box(&x8),
                    n,
                    &mut scratch.borrow_mut(),
                    &mut y8.borrow_mut(),
                );
            }),
            ours("int8 → int8, exp twice (TFLM's loop)".into(), || {
                let _ = suite::softmax_s8_twice(p8, black_box(&x8), n, 8, &mut y32.borrow_mut());
            }),
            ours("int8 → int16 (quant::softmax_s8_s16)".into(), || {
                let _ = softmax_s8_s16(
                    p8,
                    black_box(&x8),
                    n,
                    &mut scratch.borrow_mut(),
                    &mut y16.borrow_mut(),
                );
            }),
            ours("int16 → int16 (quant::softmax_s16)".into(), || {
                let _ = softmax_s16(p16, black_box(&x16), n, &mut y16.borrow_mut());
            }),
        ];
        let (deq, yf) = (&deq, &yf);
        for &(name, f) in SOFTMAX.iter().take(2) {
            cs.push(ours(
                format!("f32 {name} (dequantized logits)"),
                move || f(black_box(deq), &mut yf.borrow_mut(), n),
            ));
        }
        let rows_out = sample(&mut cs, len, if fast { 3 } else { 25 })?;
        drop(cs);
        let heading = format!("quantized softmax {rows}×{n} (logits uniform in [−4, 4]; int8 scale 1/16, int16 1/4096)");
        print_rows(out, &heading, "value", &rows_out, None, results)?;
        writeln!(
            out,
            "  exp once vs TFLM's twice-computing loop: {:.2}× faster",
            rows_out[1].median / rows_out[0].median
        )?;
    }
    Ok(())
}

struct Row {
    name: String,
    kind: Kind,
    median: f64,
    iqr: f64,
}

/// Which sections [`run`] runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Only {
    /// Every section.
    All,
    /// The quantized softmax (`--quantized`).
    Quantized,
    /// The decoder over each KV cache storage (`--kv`).
    KvCache,
    /// The softmax family's tables alone (`--softmax`).
    Softmax,
}

/// Prints the table (and writes the JSON). `fast` shortens the run to a smoke test; `only`
/// picks the sections.
pub fn run(out: &mut impl Write, fast: bool, only: Only) -> io::Result<()> {
    let softmax = matches!(only, Only::All | Only::Softmax);
    let started = Instant::now();
    let dir = bench_dir();
    std::fs::create_dir_all(&dir)?;
    writeln!(
        out,
        "softmax-core bench: {} ({} logical CPUs), {} / {}, one thread for every contender",
        cpu_name(),
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        std::env::consts::ARCH,
        std::env::consts::OS
    )?;
    writeln!(
        out,
        "dispatch: {} (CPU supports {}); built for {}",
        simd::level().name(),
        simd::detected().name(),
        if cfg!(target_feature = "avx512f") {
            "avx512f (target-cpu)"
        } else if cfg!(target_feature = "avx2") {
            "avx2 (target-cpu)"
        } else {
            "the target's baseline (no RUSTFLAGS)"
        }
    )?;
    let mut ort = match Ort::start() {
        Ok(o) => {
            writeln!(
                out,
                "onnxruntime {} (MLAS, 1 thread, IOBinding, output preallocated): per-call overhead {:.2} µs, included in its times",
                o.version,
                o.overhead_ns / 1e3
            )?;
            Some(o)
        }
        Err(e) => {
            writeln!(
                out,
                "onnxruntime: unavailable ({e}); the table shows the rest"
            )?;
            None
        }
    };
    if !cfg!(feature = "candle") {
        writeln!(
            out,
            "candle-nn: not built (cargo run --release -p harness --features candle -- bench)"
        )?;
    }
    writeln!(
        out,
        "values: ns per value (median of round-robin samples); ±: interquartile range / median;\n\
         vs ORT: onnxruntime's time / this time (> 1 = faster than onnxruntime); vs copy: this time / memory copy's"
    )?;
    let mut results = Vec::new();
    let ops: &[Op] = if softmax {
        &[Op::Softmax, Op::LogSoftmax]
    } else {
        &[]
    };
    for &op in ops {
        let kernels = match op {
            Op::Softmax => SOFTMAX,
            Op::LogSoftmax => LOG_SOFTMAX,
        };
        for &(rows, n) in SHAPES {
            let len = rows * n;
            let x = bench_input(len);
            let y: Out = Rc::new(RefCell::new(vec![0.0f32; len]));
            let mut cs: Vec<Contender<'_>> = Vec::new();
            for &(name, f) in kernels {
                let label = if name == "softmax-core Poly" || name == "softmax-core fast" {
                    format!("{name} [{}]", simd::level().name())
                } else {
                    name.to_string()
                };
                cs.push(kernel(label, f, &x, &y, n, None));
                if name == "softmax-core Poly" && simd::level() > Level::Baseline {
                    cs.push(kernel(
                        format!("{name} [baseline forced]"),
                        f,
                        &x,
                        &y,
                        n,
                        Some(Level::Baseline),
                    ));
                }
            }
            let ort_idx = if let Some(o) = ort.as_mut() {
                let path = dir.join("input.f32");
                write_f32(&path, &x)?;
                o.ask(&format!("load {} {rows} {n} {}", op.onnx(), path.display()))?;
                let idx = cs.len();
                // The peer is reborrowed by its closure only; `ort` is not used elsewhere until
                // this shape is done.
                let peer: &mut Ort = o;
                cs.push(Contender {
                    name: format!("onnxruntime {}", peer.version),
                    kind: Kind::Peer,
                    run: Box::new(move |reps| {
                        let s = peer.ask(&format!("run {reps}"))?;
                        s.parse::<f64>().map_err(io::Error::other)
                    }),
                });
                Some(idx)
            } else {
                None
            };
            #[cfg(feature = "candle")]
            cs.push(candle(op, &x, rows, n));
            let copy_idx = cs.len();
            cs.push(copy(&x, &y));
            cs.push(read(&x));

            let rounds = if fast {
                3
            } else if len >= 1 << 22 {
                11
            } else {
                25
            };
            let rows_out = sample(&mut cs, len, rounds)?;
            drop(cs);
            let t_ort = ort_idx.map(|i| rows_out[i].median);
            let t_copy = rows_out[copy_idx].median;
            writeln!(
                out,
                "\n{} {rows}×{n} ({len} values; logits uniform in [−10, 10): every output above 1e-15, \
                 none subnormal)\n  {:<34} {:>9} {:>6} {:>8} {:>8}",
                op.name(),
                "contender",
                "ns/value",
                "±",
                "vs ORT",
                "vs copy"
            )?;
            for r in &rows_out {
                let vs_ort = t_ort.map(|o| o / r.median);
                writeln!(
                    out,
                    "  {:<34} {:>9.3} {:>5.0}% {:>8} {:>7.2}×",
                    r.name,
                    r.median,
                    r.iqr * 100.0,
                    vs_ort.map_or("-".to_string(), |v| format!("{v:.2}×")),
                    r.median / t_copy
                )?;
                results.push(json!({
                    "op": op.name(),
                    "rows": rows,
                    "n": n,
                    "contender": r.name,
                    "kind": match r.kind { Kind::Ours => "ours", Kind::Peer => "peer", Kind::Memory => "memory" },
                    "ns_per_value": r.median,
                    "iqr_over_median": r.iqr,
                    "onnxruntime_time_over_this": vs_ort,
                    "this_over_copy": r.median / t_copy,
                }));
            }
            // Sanity: onnxruntime computed the same function (largest relative difference).
            if let Some(o) = ort.as_mut() {
                let path = dir.join("ort_out.f32");
                o.ask(&format!("dump {}", path.display()))?;
                let theirs = read_f32(&path)?;
                let mut ours = vec![0.0f32; len];
                kernels[0].1(&x, &mut ours, n);
                let diff = ours
                    .iter()
                    .zip(&theirs)
                    .map(|(&a, &b)| ((a - b).abs() / a.abs().max(b.abs()).max(1e-30)) as f64)
                    .fold(0.0, f64::max);
                writeln!(
                    out,
                    "  (onnxruntime's output agrees with softmax-core's to {diff:.1e} relative)"
                )?;
            }
        }
    }
    if only == Only::All {
        built_on_skeleton(out, &mut ort, &dir, fast, &mut results)?;
        products(out, fast, &mut results)?;
    }
    if matches!(only, Only::All | Only::KvCache) {
        kv_cache(out, fast, &mut results)?;
    }
    if matches!(only, Only::All | Only::Quantized) {
        quantized(out, fast, &mut results)?;
    }
    let doc = json!({
        "cpu": cpu_name(),
        "arch": std::env::consts::ARCH,
        "dispatch_level": simd::level().name(),
        "detected_level": simd::detected().name(),
        "target_features": if cfg!(target_feature = "avx2") { "native" } else { "default" },
        "onnxruntime": ort.as_ref().map(|o| json!({"version": o.version, "per_call_overhead_ns": o.overhead_ns})),
        "results": results,
    });
    let path = dir.join("bench.json");
    std::fs::write(&path, serde_json::to_string_pretty(&doc)?)?;
    writeln!(
        out,
        "\nwritten to {} in {:.0} s",
        path.display(),
        started.elapsed().as_secs_f64()
    )?;
    Ok(())
}
