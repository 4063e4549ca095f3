//! The demo's loss-core section (see `demo.rs`): cross-entropy and InfoNCE on a small synthetic
//! batch, computed by loss-core in f32 (`Poly` backend), each next to the PyTorch call that gives
//! the same number and a recomputation from the printed inputs in f64 (plain `std` math here,
//! nothing from the workspace).

use std::io::Write;

use loss_core::softmax_core::backend::Poly;
use loss_core::{
    cross_entropy, info_nce, info_nce_scratch_len, mutual_information_lower_bound,
    CrossEntropyOptions, CrossEntropyOutputs, InfoNceOptions, InfoNceOutputs, Negatives, Reduction,
};

fn row(v: &[f32]) -> String {
    let p: Vec<String> = v.iter().map(|x| format!("{x:.4}")).collect();
    format!("[{}]", p.join(", "))
}

fn lse64(z: &[f64]) -> f64 {
    let m = z.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    m + z.iter().map(|v| (v - m).exp()).sum::<f64>().ln()
}

/// Prints the loss-core section of the demo.
pub fn run(out: &mut impl Write) -> std::io::Result<()> {
    writeln!(
        out,
        "\n== loss-core: cross-entropy and InfoNCE  [f32, Poly backend]"
    )?;

    // Cross-entropy: 3 samples × 4 classes, the last sample ignored (its logits are -inf).
    let logits: [f32; 12] = [
        2.0,
        1.0,
        0.1,
        -1.0,
        0.5,
        2.5,
        0.3,
        0.0,
        f32::NEG_INFINITY,
        f32::NEG_INFINITY,
        f32::NEG_INFINITY,
        f32::NEG_INFINITY,
    ];
    let target = [0i64, 1, -100];
    let mut grad = [0.0f32; 12];
    let mut lse = [0.0f32; 3];
    let opts = CrossEntropyOptions::new().with_label_smoothing(0.1);
    let loss = cross_entropy(
        Poly,
        &logits,
        4,
        &target,
        &opts,
        CrossEntropyOutputs::new()
            .with_grad(&mut grad)
            .with_lse(&mut lse),
    );
    writeln!(out, "  logits  {}", row(&logits[..4]))?;
    writeln!(out, "          {}", row(&logits[4..8]))?;
    writeln!(out, "          [-inf, -inf, -inf, -inf]   (ignored)")?;
    writeln!(
        out,
        "  target [0, 1, -100], label_smoothing 0.1, reduction mean"
    )?;
    match loss {
        Ok(l) => {
            // Recompute: mean over the 2 kept rows of 0.9·(lse − x_y) + 0.1·mean_c(lse − x_c).
            let mut s = 0.0f64;
            for (r, y) in [(0usize, 0usize), (1, 1)] {
                let z: Vec<f64> = logits[r * 4..r * 4 + 4].iter().map(|&v| v as f64).collect();
                let l = lse64(&z);
                s += 0.9 * (l - z[y]) + 0.1 * z.iter().map(|v| l - v).sum::<f64>() / 4.0;
            }
            writeln!(
                out,
                "  cross_entropy = {l:.6}   (f64 recomputation {:.6}; torch: F.cross_entropy(x, t, label_smoothing=0.1))",
                s / 2.0
            )?;
            writeln!(out, "  grad row 0 {}", row(&grad[..4]))?;
            writeln!(
                out,
                "  grad row 2 {}   (ignored row: zeros, no NaN)",
                row(&grad[8..])
            )?;
            writeln!(out, "  per-row lse {} (same pass)", row(&lse))?;
        }
        Err(e) => writeln!(out, "  cross_entropy failed: {e}")?,
    }

    // InfoNCE with in-batch negatives: 4 queries, their positive keys, D = 3, τ = 0.1.
    let q: [f32; 12] = [1.0, 0.2, 0.0, 0.1, 1.0, 0.3, -0.5, 0.1, 1.0, 0.7, -0.7, 0.2];
    let k: [f32; 12] = [0.9, 0.3, 0.1, 0.0, 1.1, 0.2, -0.4, 0.0, 0.9, 0.6, -0.8, 0.0];
    let (n, d, tau) = (4usize, 3usize, 0.1f32);
    let mut gt = 0.0f32;
    let o = InfoNceOptions::new()
        .with_temperature(tau)
        .with_reduction(Reduction::Mean);
    let mut scratch = vec![0.0f32; info_nce_scratch_len(n, 0, &o)];
    let l = info_nce(
        Poly,
        &q,
        &k,
        d,
        Negatives::InBatch,
        &o,
        InfoNceOutputs::new(&mut scratch).with_grad_temperature(&mut gt),
    );
    writeln!(
        out,
        "\n  InfoNCE, N = 4 pairs (in-batch negatives), D = 3, τ = 0.1, L2-normalised:"
    )?;
    for i in 0..n {
        writeln!(
            out,
            "    q{i} {}   k{i} {}",
            row(&q[i * d..i * d + d]),
            row(&k[i * d..i * d + d])
        )?;
    }
    match l {
        Ok(l) => {
            // Recompute: mean_i −log softmax_j(q̂_i·k̂_j/τ)[i].
            let nz = |v: &[f32]| -> Vec<f64> {
                let s = v.iter().map(|&x| (x as f64).powi(2)).sum::<f64>().sqrt();
                v.iter().map(|&x| x as f64 / s).collect()
            };
            let mut s = 0.0;
            for i in 0..n {
                let qi = nz(&q[i * d..i * d + d]);
                let z: Vec<f64> = (0..n)
                    .map(|j| {
                        let kj = nz(&k[j * d..j * d + d]);
                        qi.iter().zip(&kj).map(|(a, b)| a * b).sum::<f64>() / tau as f64
                    })
                    .collect();
                s += lse64(&z) - z[i];
            }
            writeln!(
                out,
                "  info_nce = {l:.6}   (f64 recomputation {:.6}; info-nce-pytorch: InfoNCE(temperature=0.1)(q, k))",
                s / n as f64
            )?;
            writeln!(out, "  ∂loss/∂τ = {gt:.6}   (for a learned temperature)")?;
            if let Ok(bound) = mutual_information_lower_bound(Poly, l, n) {
                writeln!(
                    out,
                    "  mutual information >= ln N − L = {bound:.6} nats, ceiling ln N = {:.6}: with N = 4 candidates no loss can certify more",
                    (n as f64).ln()
                )?;
            }
        }
        Err(e) => writeln!(out, "  info_nce failed: {e}")?,
    }
    Ok(())
}
