//! `harness bench`: a quick ratio table of the softmax contenders, all measured in the same run
//! (round-robin samples, medians), against the scalar libm baseline. Criterion
//! (`cargo bench -p harness`) gives the careful numbers; this gives the ratio at a glance.

use std::hint::black_box;
use std::io::Write;
use std::time::Instant;

use harness::contenders::{bench_input, SOFTMAX};

/// Which SIMD features this binary was compiled for (the kernels auto-vectorise to these).
fn features() -> String {
    let mut f = Vec::new();
    if cfg!(target_feature = "avx512f") {
        f.push("avx512f");
    }
    if cfg!(target_feature = "avx2") {
        f.push("avx2");
    }
    if cfg!(target_feature = "fma") {
        f.push("fma (unused: no contraction)");
    }
    if cfg!(target_feature = "sse2") {
        f.push("sse2");
    }
    if cfg!(target_feature = "neon") {
        f.push("neon");
    }
    if f.is_empty() {
        "none".into()
    } else {
        f.join(", ")
    }
}

/// Prints the table.
pub fn run(out: &mut impl Write) -> std::io::Result<()> {
    writeln!(
        out,
        "softmax f32, one row in cache; {} / {}; SIMD: {}",
        std::env::consts::ARCH,
        std::env::consts::OS,
        features()
    )?;
    writeln!(
        out,
        "(build with RUSTFLAGS=\"-C target-cpu=native\" for the host's full vector width)\n"
    )?;
    writeln!(
        out,
        "{:>7}  {:<24} {:>12} {:>10} {:>9}",
        "n", "contender", "time/row", "ns/elem", "speed-up"
    )?;
    for n in [64usize, 4096, 65536] {
        let x = bench_input(n);
        let mut y = vec![0.0f32; n];
        // Iterations per sample: about 1 ms of the slowest contender.
        let reps = (200_000 / n).max(4);
        let mut samples: Vec<Vec<f64>> = vec![Vec::new(); SOFTMAX.len()];
        for _ in 0..41 {
            for (s, &(_, f)) in samples.iter_mut().zip(SOFTMAX) {
                let t = Instant::now();
                for _ in 0..reps {
                    f(black_box(&x), black_box(&mut y));
                }
                s.push(t.elapsed().as_secs_f64() / reps as f64);
            }
        }
        let med: Vec<f64> = samples
            .iter_mut()
            .map(|s| {
                s.sort_by(f64::total_cmp);
                s[s.len() / 2]
            })
            .collect();
        for (&(name, _), &t) in SOFTMAX.iter().zip(&med) {
            writeln!(
                out,
                "{n:>7}  {name:<24} {:>9.2} µs {:>10.3} {:>8.2}x",
                t * 1e6,
                t * 1e9 / n as f64,
                med[0] / t
            )?;
        }
    }
    Ok(())
}
