//! A naive f64 reference of attention (harness/CONFORMANCE.md, "Attention"), written from the
//! specification and nothing else: it materialises every score, applies the rules one by one
//! and normalises with f64 `exp`. The `attention_*` and `conform_attention` tests include it with
//! `#[path = "attention_support/reference.rs"] mod attention_ref;` (a subdirectory, so it is
//! not a test binary of its own); `attention_reference.rs` tests it against values worked out
//! by hand.
#![allow(clippy::needless_range_loop)] // the reference is written as the formulas' index loops
#![allow(dead_code)]

/// The small deterministic generator (SplitMix64) of the tests' random cases.
pub struct Rng(pub u64);

impl Rng {
    /// The next 64 random bits.
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    /// Uniform on `0..n`.
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    /// Uniform on [0, 1).
    pub fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
    /// A value exactly representable in f32, uniform on [-a, a).
    pub fn val(&mut self, a: f64) -> f64 {
        ((self.unit() * 2.0 - 1.0) * a) as f32 as f64
    }
    /// `n` values of [`val`](Self::val).
    pub fn vec(&mut self, n: usize, a: f64) -> Vec<f64> {
        (0..n).map(|_| self.val(a)).collect()
    }
}

/// Causal rule: 0 none, 1 bottom-right, 2 top-left.
#[derive(Clone, Debug, Default)]
pub struct Case {
    pub heads: usize,
    pub kv_heads: usize,
    pub t: usize,
    pub s: usize,
    pub d: usize,
    pub dv: usize,
    pub q: Vec<f64>,
    pub k: Vec<f64>,
    pub v: Vec<f64>,
    pub scale: Option<f64>,
    pub causal: u8,
    pub mask: Option<Vec<bool>>,
    pub bias: Option<Vec<f64>>,
    pub alibi: bool,
    pub window: Option<usize>,
    pub sinks: usize,
    pub softcap: Option<f64>,
    pub sink_logits: Option<Vec<f64>>,
}

/// The ALiBi paper's reference code (Press et al., `get_slopes`), transcribed.
pub fn alibi_slopes(n: usize) -> Vec<f64> {
    fn pow2(n: usize) -> Vec<f64> {
        let start = 2f64.powf(-(2f64.powf(-((n as f64).log2() - 3.0))));
        let ratio = start;
        (0..n).map(|i| start * ratio.powi(i as i32)).collect()
    }
    if (n as f64).log2().fract() == 0.0 {
        pow2(n)
    } else {
        let closest = 1usize << (n as f64).log2().floor() as u32;
        let mut v = pow2(closest);
        v.extend(
            alibi_slopes(2 * closest)
                .into_iter()
                .step_by(2)
                .take(n - closest),
        );
        v
    }
}

/// One query row's view of the keys: the final score of each key, `None` where not allowed, and
/// the pre-cap scaled dot product (for the soft-cap's derivative).
pub struct RowScores {
    pub s: Vec<Option<f64>>,
    pub z: Vec<f64>,
}

impl Case {
    pub fn scale(&self) -> f64 {
        self.scale.unwrap_or(1.0 / (self.d as f64).sqrt())
    }

    fn q_row(&self, h: usize, t: usize) -> &[f64] {
        &self.q[(h * self.t + t) * self.d..][..self.d]
    }

    fn kv(&self, h: usize) -> usize {
        h / (self.heads / self.kv_heads)
    }

    pub fn k_row(&self, g: usize, j: usize) -> &[f64] {
        &self.k[(g * self.s + j) * self.d..][..self.d]
    }

    pub fn v_row(&self, g: usize, j: usize) -> &[f64] {
        &self.v[(g * self.s + j) * self.dv..][..self.dv]
    }

    /// Position of query `t` (CONFORMANCE: S − T + t, or t with top-left).
    pub fn qpos(&self, t: usize) -> i64 {
        if self.causal == 2 {
            t as i64
        } else {
            self.s as i64 - self.t as i64 + t as i64
        }
    }

    pub fn allowed(&self, t: usize, j: usize) -> bool {
        let (pq, pk) = (self.qpos(t), j as i64);
        if self.causal != 0 && pk > pq {
            return false;
        }
        if let Some(w) = self.window {
            if (pq - pk).abs() >= w as i64 && j >= self.sinks {
                return false;
            }
        }
        if let Some(m) = &self.mask {
            if !m[t * self.s + j] {
                return false;
            }
        }
        true
    }

    /// Sets every head's sink logit `gap` above the largest score of any of its queries (a
    /// value exact in f32): the case of the sink-logit underflow.
    pub fn set_sinks_above_scores(&mut self, gap: f64) {
        let z = (0..self.heads)
            .map(|h| {
                let top = (0..self.t)
                    .flat_map(|t| self.row_scores(h, t).s)
                    .flatten()
                    .fold(f64::NEG_INFINITY, f64::max);
                ((top.max(-1e3) + gap) as f32) as f64
            })
            .collect();
        self.sink_logits = Some(z);
    }

    pub fn row_scores(&self, h: usize, t: usize) -> RowScores {
        let g = self.kv(h);
        let slopes = alibi_slopes(self.heads);
        let mut s = Vec::with_capacity(self.s);
        let mut z = Vec::with_capacity(self.s);
        for j in 0..self.s {
            let dot: f64 = self
                .q_row(h, t)
                .iter()
                .zip(self.k_row(g, j))
                .map(|(a, b)| a * b)
                .sum();
            let zj = self.scale() * dot;
            z.push(zj);
            if !self.allowed(t, j) {
                s.push(None);
                continue;
            }
            let mut x = match self.softcap {
                Some(c) => c * (zj / c).tanh(),
                None => zj,
            };
            if let Some(b) = &self.bias {
                x += b[(h * self.t + t) * self.s + j];
            }
            if self.alibi {
                x -= slopes[h] * (self.qpos(t) - j as i64).abs() as f64;
            }
            s.push(Some(x));
        }
        RowScores { s, z }
    }
}

/// The reference outputs, and each row's weights (for the backward reference).
pub struct Out {
    pub o: Vec<f64>,
    pub lse: Vec<f64>,
    pub entropy: Vec<f64>,
    /// `p[(h·T + t)·S + j]`: the weight of key j (0 if not allowed).
    pub p: Vec<f64>,
    /// The sink's weight per row.
    pub p_sink: Vec<f64>,
}

pub fn forward(c: &Case) -> Out {
    let (h_n, t_n, s_n, dv) = (c.heads, c.t, c.s, c.dv);
    let mut out = Out {
        o: vec![0.0; h_n * t_n * dv],
        lse: vec![0.0; h_n * t_n],
        entropy: vec![0.0; h_n * t_n],
        p: vec![0.0; h_n * t_n * s_n],
        p_sink: vec![0.0; h_n * t_n],
    };
    for h in 0..h_n {
        let g = c.kv(h);
        for t in 0..t_n {
            let rs = c.row_scores(h, t);
            let mut cand: Vec<f64> = rs.s.iter().flatten().copied().collect();
            let sink = c.sink_logits.as_ref().map(|z| z[h]);
            if let Some(z) = sink {
                cand.push(z);
            }
            let row = h * t_n + t;
            if cand.is_empty() {
                out.lse[row] = f64::NEG_INFINITY;
                continue;
            }
            let m = cand.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            if m == f64::NEG_INFINITY {
                out.lse[row] = f64::NEG_INFINITY;
                continue;
            }
            let zsum: f64 = cand.iter().map(|x| (x - m).exp()).sum();
            let lse = m + zsum.ln();
            out.lse[row] = lse;
            let mut ent = 0.0;
            for (j, sj) in rs.s.iter().enumerate() {
                if let Some(x) = sj {
                    let pj = (x - lse).exp();
                    out.p[row * s_n + j] = pj;
                    if pj > 0.0 {
                        ent -= pj * (x - lse);
                    }
                    for (o, vv) in out.o[row * dv..][..dv].iter_mut().zip(c.v_row(g, j)) {
                        *o += pj * vv;
                    }
                }
            }
            if let Some(z) = sink {
                let pz = (z - lse).exp();
                out.p_sink[row] = pz;
                if pz > 0.0 {
                    ent -= pz * (z - lse);
                }
            }
            out.entropy[row] = ent;
        }
    }
    out
}

/// The gradients of Σ d_o ⊙ o, analytically from the materialised weights.
pub struct Grads {
    pub dq: Vec<f64>,
    pub dk: Vec<f64>,
    pub dv: Vec<f64>,
    pub d_sink: Vec<f64>,
}

pub fn backward(c: &Case, d_o: &[f64]) -> Grads {
    let f = forward(c);
    let (t_n, s_n, d, dv) = (c.t, c.s, c.d, c.dv);
    let mut g = Grads {
        dq: vec![0.0; c.q.len()],
        dk: vec![0.0; c.k.len()],
        dv: vec![0.0; c.v.len()],
        d_sink: vec![0.0; c.heads],
    };
    for h in 0..c.heads {
        let kvh = c.kv(h);
        for t in 0..t_n {
            let row = h * t_n + t;
            let rs = c.row_scores(h, t);
            let dor = &d_o[row * dv..][..dv];
            let dd: f64 = dor
                .iter()
                .zip(&f.o[row * dv..][..dv])
                .map(|(a, b)| a * b)
                .sum();
            for j in 0..s_n {
                let pj = f.p[row * s_n + j];
                if rs.s[j].is_none() || pj == 0.0 {
                    continue;
                }
                let dp: f64 = dor.iter().zip(c.v_row(kvh, j)).map(|(a, b)| a * b).sum();
                let ds = pj * (dp - dd);
                let dz = match c.softcap {
                    Some(cap) => ds / (rs.z[j] / cap).cosh().powi(2),
                    None => ds,
                };
                let gj = dz * c.scale();
                for i in 0..d {
                    g.dq[row * d + i] += gj * c.k_row(kvh, j)[i];
                    g.dk[(kvh * s_n + j) * d + i] += gj * c.q_row(h, t)[i];
                }
                for i in 0..dv {
                    g.dv[(kvh * s_n + j) * dv + i] += pj * dor[i];
                }
            }
            g.d_sink[h] -= f.p_sink[row] * dd;
        }
    }
    g
}

/// Σ d_o ⊙ o of the reference.
pub fn objective(c: &Case, d_o: &[f64]) -> f64 {
    forward(c).o.iter().zip(d_o).map(|(a, b)| a * b).sum()
}
