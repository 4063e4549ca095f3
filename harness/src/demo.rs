//! The demo: the softmax family on the examples of the seed chapters (`shared/seeds/`), each
//! value computed by softmax-core in f32 with its own polynomial exp, next to the seeds' claims
//! where they made one.

use std::io::Write;

use harness::reference as r;
use softmax_core::backend::{Backend, Poly};
use softmax_core::{
    entropy, log_softmax, logsumexp, masked_softmax, rows, softmax, softmax_vjp,
    softmax_with_temperature, temperature_for_entropy, LogSumExp, Rows,
};

fn fmt_row(v: &[f32]) -> String {
    let parts: Vec<String> = v.iter().map(|&x| fmt_num(x as f64)).collect();
    format!("[{}]", parts.join(", "))
}

fn fmt_num(x: f64) -> String {
    if x == 0.0 {
        "0".into()
    } else if x.is_infinite() {
        if x > 0.0 {
            "inf".into()
        } else {
            "-inf".into()
        }
    } else if x.is_nan() {
        "NaN".into()
    } else if x.abs() >= 1e-4 && x.abs() < 1e5 {
        format!("{x:.6}")
    } else {
        format!("{x:.3e}")
    }
}

/// softmax(x/τ) in f32 through softmax-core, and its largest relative deviation from the naive
/// f64 reference over outputs >= 1e-30.
fn sm(x: &[f32], tau: f32) -> (Vec<f32>, f64) {
    let mut y = vec![0.0; x.len()];
    softmax_with_temperature(Poly, x, tau, &mut y).expect("valid row");
    let xd: Vec<f64> = x.iter().map(|&v| v as f64).collect();
    let want = r::softmax(&xd, tau as f64, None);
    let err = y
        .iter()
        .zip(&want)
        .filter(|(_, &w)| w >= 1e-30)
        .map(|(&g, &w)| ((g as f64) - w).abs() / w)
        .fold(0.0, f64::max);
    (y, err)
}

fn h(x: &[f32], tau: f32) -> f32 {
    entropy(Poly, x, tau).expect("valid row")
}

fn section(out: &mut impl Write, title: &str, source: &str) -> std::io::Result<()> {
    writeln!(out, "\n== {title}  [{source}]")
}

/// Prints the demo tables.
pub fn run(out: &mut impl Write) -> std::io::Result<()> {
    writeln!(
        out,
        "softmax-core demo: the softmax family on the seed chapters' examples"
    )?;
    writeln!(
        out,
        "f32, own vectorised exp (<= 1 ULP); 'err' = max relative error vs a naive f64 reference"
    )?;

    // 1. Temperature sweep.
    section(out, "Temperature: softmax([1, 2, 3] / T)", "seed 004 §4.4")?;
    writeln!(
        out,
        "{:>6}  {:<40} {:>10} {:>9}",
        "T", "probabilities", "entropy", "err"
    )?;
    let x = [1.0f32, 2.0, 3.0];
    for tau in [0.1f32, 0.5, 1.0, 2.0, 5.0, 10.0] {
        let (y, err) = sm(&x, tau);
        writeln!(
            out,
            "{tau:>6}  {:<40} {:>10.6} {:>9.1e}",
            fmt_row(&y),
            h(&x, tau),
            err
        )?;
    }
    writeln!(
        out,
        "        (T → 0: one-hot, entropy → 0;  T → ∞: uniform, entropy → ln 3 = 1.098612)"
    )?;

    // 2. Overflow.
    section(out, "Overflow: [1000, 1001, 1002]", "seed 004 §4.2")?;
    let x = [1000.0f32, 1001.0, 1002.0];
    let naive: Vec<f32> = {
        let e: Vec<f32> = x.iter().map(|&v| <Poly as Backend<f32>>::exp(v)).collect();
        let s: f32 = e.iter().sum();
        e.iter().map(|&v| v / s).collect()
    };
    let (y, err) = sm(&x, 1.0);
    let mut ls = [0.0f32; 3];
    log_softmax(Poly, &x, &mut ls).expect("valid row");
    writeln!(
        out,
        "  naive exp(x)/Σexp(x)   {}   (exp(1000) overflows to inf; inf/inf = NaN)",
        fmt_row(&naive)
    )?;
    writeln!(
        out,
        "  softmax                {}   err {err:.1e}",
        fmt_row(&y)
    )?;
    writeln!(
        out,
        "  logsumexp              {}",
        fmt_num(logsumexp(Poly, &x).expect("valid row") as f64)
    )?;
    writeln!(out, "  log_softmax            {}", fmt_row(&ls))?;
    writeln!(out, "  (the seed's naive code expects an exception; numpy, like f32 here, silently returns NaN)")?;

    // 3. Sharpening with the gap.
    section(out, "Gaps: max probability and entropy", "seed 004 §4.3")?;
    writeln!(
        out,
        "  {:<16} {:>12} {:>12}  seed's claim",
        "logits", "max p", "entropy"
    )?;
    for (x, claim) in [
        (vec![1.0f32, 1.0, 1.0], "0.333333 each: correct"),
        (vec![1.0, 2.0, 3.0], "0.67: correct"),
        (
            vec![1.0, 5.0, 10.0],
            "0.993184: wrong in the 6th decimal (0.993185)",
        ),
        (vec![1.0, 50.0, 100.0], "1.0"),
        (
            vec![1.0, 500.0, 1000.0],
            "[0, 0, 1]: correct (H = 3.6e-215 underflows f32)",
        ),
    ] {
        let (y, _) = sm(&x, 1.0);
        let pmax = y.iter().cloned().fold(0.0, f32::max);
        let label = format!("{:?}", x.iter().map(|&v| v as i32).collect::<Vec<_>>());
        writeln!(
            out,
            "  {label:<16} {:>12} {:>12}  {claim}",
            format!("{pmax:.6}"),
            fmt_num(h(&x, 1.0) as f64)
        )?;
    }
    writeln!(
        out,
        "  (entropy of [1, 50, 100] is 9.84e-21: computed as ln Σe^d − E[d] with d = x − max, two\n   non-negative terms; the unshifted lse − E[x] gives 0 in f64)"
    )?;

    // 4. Homework sweep.
    section(out, "softmax([1, 2, 3, 4, 5] / T)", "seed 004, homework")?;
    let x = [1.0f32, 2.0, 3.0, 4.0, 5.0];
    for tau in [0.01f32, 0.1, 1.0, 10.0, 100.0] {
        let (y, err) = sm(&x, tau);
        writeln!(
            out,
            "  T = {tau:<6} {:<62} H = {:<10} err {err:.1e}",
            fmt_row(&y),
            fmt_num(h(&x, tau) as f64)
        )?;
    }
    writeln!(out, "  (ln 5 = 1.609438)")?;

    // 5. Sparsemax.
    section(
        out,
        "softmax vs sparsemax on [1, 2, 3] / T",
        "seed 004 §4.6",
    )?;
    let x = [1.0f32, 2.0, 3.0];
    for tau in [0.5f32, 1.0, 2.0, 5.0] {
        let (y, _) = sm(&x, tau);
        let mut s = [0.0f32; 3];
        rows::sparsemax(&x, &mut s, &Rows::new(3).with_temperature(tau)).expect("valid row");
        writeln!(
            out,
            "  T = {tau:<4} softmax {:<34} sparsemax {}",
            fmt_row(&y),
            fmt_row(&s)
        )?;
    }
    writeln!(
        out,
        "  (sparsemax gives exact zeros: the Euclidean projection onto the simplex)"
    )?;

    // 6. Adaptive temperature.
    section(
        out,
        "Adaptive temperature: the τ that gives a target entropy",
        "seed 002 §9, §25 (posed, not solved, there)",
    )?;
    writeln!(
        out,
        "  {:<26} {:>8} {:>10} {:>12}",
        "logits", "target H", "τ", "H(τ)"
    )?;
    for (x, target) in [
        (vec![1.0f32, 2.0, 3.0], 0.5f32),
        (vec![1.0, 2.0, 3.0], 1.0),
        (vec![2.0, 1.0, 0.1], 0.5),
        (vec![1.0, 2.0, 3.0, 4.0, 5.0], 0.5 * 5f32.ln()),
    ] {
        let tau = temperature_for_entropy(Poly, &x, target).expect("reachable target");
        let label = format!("{x:?}");
        writeln!(
            out,
            "  {label:<26} {target:>8.4} {tau:>10.6} {:>12.6}",
            h(&x, tau)
        )?;
    }
    writeln!(
        out,
        "  (bisection on H(τ), which is monotone: dH/dτ = Var_p(x)/τ³)"
    )?;

    // 7. Masking.
    section(out, "Masks", "seed 003 §5.1.7")?;
    let x = [1.0f32, 2.0, 3.0, 4.0];
    let mut y = [0.0f32; 4];
    masked_softmax(Poly, &x, &[true, true, true, false], &mut y).expect("valid row");
    writeln!(out, "  [1, 2, 3, 4], last masked      {}", fmt_row(&y))?;
    masked_softmax(Poly, &x, &[false; 4], &mut y).expect("valid row");
    writeln!(out, "  [1, 2, 3, 4], all masked       {}   (zeros: no allowed entry; naive −inf gives NaN, −1e9 silently unmasks)", fmt_row(&y))?;
    let causal: Vec<bool> = (0..4).flat_map(|t| (0..4).map(move |j| j <= t)).collect();
    let mut yc = [0.0f32; 16];
    rows::softmax(Poly, &[0.0; 16], &mut yc, &Rows::new(4).with_keep(&causal)).expect("valid rows");
    for t in 0..4 {
        writeln!(
            out,
            "  causal row {t}, equal scores     {}",
            fmt_row(&yc[4 * t..4 * t + 4])
        )?;
    }

    // 8. The online state.
    section(
        out,
        "Online log-sum-exp: blocks merged in any order",
        "the shared skeleton",
    )?;
    let big: Vec<f32> = (0..10_000)
        .map(|i| ((i * 37 % 1000) as f32) * 0.02 - 10.0)
        .collect();
    let whole = logsumexp(Poly, &big).expect("valid row");
    let mut a = LogSumExp::new(Poly);
    a.push_slice(&big[..3_000]);
    let mut b = LogSumExp::new(Poly);
    b.push_slice(&big[3_000..]);
    b.merge(&a);
    let mut one = LogSumExp::new(Poly);
    big.iter().for_each(|&v| one.push(v));
    let xd: Vec<f64> = big.iter().map(|&v| v as f64).collect();
    writeln!(
        out,
        "  10000 values: one pass {whole}, two blocks merged {}, pushed one by one {}",
        b.finish(),
        one.finish()
    )?;
    writeln!(out, "  f64 reference {:.7}", r::logsumexp(&xd, 1.0, None))?;

    // 9. Gradient.
    section(
        out,
        "Backward: softmax VJP, no Jacobian",
        "seed 003 (5.1.8)",
    )?;
    let mut y = [0.0f32; 3];
    softmax(Poly, &[1.0, 2.0, 3.0], &mut y).expect("valid row");
    let mut dx = [0.0f32; 3];
    softmax_vjp(&y, &[0.0, 0.0, 1.0], &mut dx).expect("valid row");
    writeln!(
        out,
        "  ∂y₃/∂x for x = [1, 2, 3]        {}   (= y₃(e₃ − y); sums to {})",
        fmt_row(&dx),
        fmt_num(dx.iter().sum::<f32>() as f64)
    )?;
    fast_variant(out)?;
    quantized_head(out)?;
    crate::demo_loss::run(out)?;
    crate::demo_attention::run(out)?;
    writeln!(
        out,
        "\nMore: `harness conform` (JSON-lines protocol), `harness bench` (speed against onnxruntime, candle and memory)."
    )?;
    Ok(())
}

/// The explicitly chosen fast variant next to the default kernels: time per value and the worst
/// relative error against f64 on the same batch.
fn fast_variant(out: &mut impl Write) -> std::io::Result<()> {
    section(
        out,
        "softmax_core::fast: speed for accuracy, by choice",
        "softmax-core",
    )?;
    let (nrows, n) = (64, 4096);
    let x = harness::contenders::bench_input(nrows * n);
    let want: Vec<f64> = x
        .chunks_exact(n)
        .flat_map(|row| {
            let xd: Vec<f64> = row.iter().map(|&v| v as f64).collect();
            r::softmax(&xd, 1.0, None)
        })
        .collect();
    let mut y = vec![0.0f32; nrows * n];
    let spec = Rows::new(n);
    let mut run = |name: &str, f: &mut dyn FnMut(&mut [f32])| -> std::io::Result<()> {
        f(&mut y);
        let t = std::time::Instant::now();
        let reps = 20;
        for _ in 0..reps {
            f(&mut y);
        }
        let ns = t.elapsed().as_secs_f64() * 1e9 / (reps * nrows * n) as f64;
        let err = y
            .iter()
            .zip(&want)
            .filter(|(_, &w)| w >= 1e-30)
            .map(|(&v, &w)| (v as f64 - w).abs() / w)
            .fold(0.0f64, f64::max);
        writeln!(
            out,
            "  {name:<36} {ns:5.2} ns/value   worst relative error {err:.1e}"
        )
    };
    run("softmax(Poly, …) (the contract)", &mut |y| {
        rows::softmax(Poly, &x, y, &spec).expect("valid batch")
    })?;
    run("fast::softmax (FMA, shift rounded)", &mut |y| {
        softmax_core::fast::softmax(&x, y, &softmax_core::Rows::new(n)).expect("valid batch")
    })?;
    writeln!(
        out,
        "  ({nrows} rows of {n} logits in [-10, 10); timed in this run at simd level {}; \
         below AVX2+FMA the fast variant runs its portable reference, with a software fused \
         multiply-add: slow, but the same bits)",
        softmax_core::simd::level().name()
    )
}

/// A quantized classifier head as a microcontroller runs it: int8 logits in, int8 (and int16)
/// probabilities out, bit for bit TensorFlow Lite Micro's kernels, next to the f32 softmax of the
/// dequantized logits.
fn quantized_head(out: &mut impl Write) -> std::io::Result<()> {
    use softmax_core::quant::{softmax_s16, softmax_s8, softmax_s8_s16, S16Params, S8Params};
    section(
        out,
        "Quantized classifier head: int8 logits → int8 probabilities (TFLM / CMSIS-NN bits)",
        "softmax-core quant",
    )?;
    // 2000 rows of 12 classes (a keyword-spotting head): logits N(0, 1.5²) with the true class
    // raised by 3, quantized with scale 1/16 (int8) and 1/4096 (int16) as a converter would.
    let (rows, n) = (2000usize, 12usize);
    let mut rng = suite::SplitMix64::new(12);
    let mut logits = vec![0f32; rows * n];
    for row in logits.chunks_exact_mut(n) {
        let hot = rng.below(n);
        for (j, v) in row.iter_mut().enumerate() {
            // Box–Muller from two uniforms.
            let (u1, u2) = (1.0 - rng.unit(), rng.unit());
            let z = (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos();
            *v = (1.5 * z + if j == hot { 3.0 } else { 0.0 }) as f32;
        }
    }
    let (s8, s16) = (1.0f32 / 16.0, 1.0f32 / 4096.0);
    let x8: Vec<i8> = logits
        .iter()
        .map(|&v| (v / s8).round().clamp(-128.0, 127.0) as i8)
        .collect();
    let x16: Vec<i16> = logits
        .iter()
        .map(|&v| (v / s16).round().clamp(-32768.0, 32767.0) as i16)
        .collect();
    let p8 = S8Params::prepare(s8, 1.0).expect("valid scale");
    let p16 = S16Params::prepare(s16, 1.0).expect("valid scale");
    let mut scratch = vec![0i32; n];
    let mut y8 = vec![0i8; rows * n];
    let mut y8_16 = vec![0i16; rows * n];
    let mut y16 = vec![0i16; rows * n];
    softmax_s8(&p8, &x8, n, &mut scratch, &mut y8).expect("valid batch");
    softmax_s8_s16(&p8, &x8, n, &mut scratch, &mut y8_16).expect("valid batch");
    softmax_s16(&p16, &x16, n, &mut y16).expect("valid batch");
    writeln!(
        out,
        "  Prepare(scale 1/16, β 1): input_multiplier {}, input_left_shift {}, diff_min {}",
        p8.input_multiplier(),
        p8.input_left_shift(),
        p8.diff_min()
    )?;
    let row0: Vec<f32> = x8[..n].iter().map(|&q| q as f32 * s8).collect();
    writeln!(out, "  row 0 logits (dequantized)     {}", fmt_row(&row0))?;
    let q0: Vec<String> = y8[..n].iter().map(|v| v.to_string()).collect();
    writeln!(out, "  row 0 int8 probabilities       [{}]", q0.join(", "))?;
    let deq0: Vec<f32> = y8[..n]
        .iter()
        .map(|&q| (q as f32 + 128.0) / 256.0)
        .collect();
    writeln!(out, "  … as probabilities (q+128)/256 {}", fmt_row(&deq0))?;
    // Against the f32 softmax of the same dequantized logits, in output quanta.
    let compare = |x_deq: &[f32], probs: &dyn Fn(usize) -> f64, quantum: f64| {
        let mut reference = vec![0f32; rows * n];
        rows::softmax(Poly, x_deq, &mut reference, &Rows::new(n)).expect("valid batch");
        let (mut worst, mut sq, mut same_argmax) = (0f64, 0f64, 0usize);
        for (r, want) in reference.chunks_exact(n).enumerate() {
            let got: Vec<f64> = (0..n).map(|j| probs(r * n + j)).collect();
            for (g, &w) in got.iter().zip(want) {
                let e = (g - w as f64).abs() / quantum;
                worst = worst.max(e);
                sq += e * e;
            }
            let arg = |v: &[f64]| (0..n).fold(0, |b, j| if v[j] > v[b] { j } else { b });
            let want64: Vec<f64> = want.iter().map(|&w| w as f64).collect();
            same_argmax += usize::from(got[arg(&got)] == got[arg(&want64)]);
        }
        (worst, (sq / (rows * n) as f64).sqrt(), same_argmax)
    };
    let deq8: Vec<f32> = x8.iter().map(|&q| q as f32 * s8).collect();
    let deq16: Vec<f32> = x16.iter().map(|&q| q as f32 * s16).collect();
    for (name, (worst, rms, same), quantum) in [
        (
            "int8 → int8  (quantum 1/256)",
            compare(&deq8, &|i| (y8[i] as f64 + 128.0) / 256.0, 1.0 / 256.0),
            256.0,
        ),
        (
            "int8 → int16 (quantum 1/65536)",
            compare(
                &deq8,
                &|i| (y8_16[i] as f64 + 32768.0) / 65536.0,
                1.0 / 65536.0,
            ),
            65536.0,
        ),
        (
            "int16 → int16 (quantum 1/32768)",
            compare(&deq16, &|i| y16[i] as f64 / 32768.0, 1.0 / 32768.0),
            32768.0,
        ),
    ] {
        writeln!(
            out,
            "  {name:<32} vs f32 softmax of the dequantized logits: worst {worst:.2} quanta \
             ({:.1e}), RMS {rms:.2} quanta; top class agrees in {same}/{rows} rows",
            worst / quantum
        )?;
    }
    writeln!(
        out,
        "  ({rows} rows of {n} classes; the int8 kernels evaluate each fixed-point exp once, TFLM twice: \
         same bits, `harness bench --quantized` times both)"
    )
}
