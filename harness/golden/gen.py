#!/usr/bin/env python3
"""Golden vectors for softmax-core, produced by libraries that no one here wrote or tuned.

    python3 harness/golden/gen.py        # rewrites harness/golden/*.json (deterministic)

Where the expected values come from (see README.md for the file layout):

* softmax / log_softmax / logsumexp: scipy.special (float64), fed the exact shifted logits
  d = (z - max z)/tau (computed with Python's exact rationals and rounded once to float64;
  every function here is shift-invariant, so this is softmax(z/tau) itself, minus the rounding
  of z/tau that a naive float64 evaluation would add). Cross-checked against mpmath (60 digits).
* entropy: scipy.stats.entropy of the float64 softmax; where float64 loses digits (peaked rows)
  mpmath's value is used instead, and the case says so in "ref".
* KL: scipy.special.rel_entr summed (and scipy.stats.entropy(p, q) as a cross-check), mpmath
  where float64 loses digits.
* softmax / log_softmax VJPs: the analytic formula in float64, cross-checked here against
  complex-step numerical differentiation.
* sparsemax: the sort-based algorithm of Martins & Astudillo (2016), in exact rational arithmetic
  on the float64 shifted logits (independent of softmax-core's Michelot iteration).
* hardmax: onnxruntime's Hardmax (opset 13, axis -1).
* gumbel-softmax: the formula softmax((x + g)/tau), g = -ln(-ln u), in mpmath/float64.
* temperature_for_entropy: the root of H(tau) = target by bisection in mpmath.
* onnxruntime's own float32 Softmax / LogSoftmax (opset 13, axis -1; temperature as a Div node,
  masks as Where / Add nodes) are recorded next to the float64 truth in field "ort", so the Rust
  test can report how each float32 implementation compares with the truth.
* Edge-semantics cases ("edge": true): expected outputs written by hand below from
  harness/CONFORMANCE.md (and softmax-core's documented hardmax / KL semantics), not from any code.

Encoding: floats are JSON numbers that parse back to the same bits in the case's dtype
(float32 inputs are written with numpy's shortest float32 repr, float64 values with Python's
repr), and "nan", "inf", "-inf" as strings. float32 inputs are generated as float32 and widened,
so both sides see identical inputs.
"""

import json
import math
import os
import sys
from fractions import Fraction

import mpmath
import numpy as np
import onnx
import onnxruntime as ort
import scipy
import scipy.special
import scipy.stats
from mpmath import mp, mpf
from onnx import TensorProto, helper

SEED = 20251121
HERE = os.path.dirname(os.path.abspath(__file__))
INF = float("inf")
NINF = float("-inf")
NAN = float("nan")
mp.dps = 60

F32_MAX = float(np.finfo(np.float32).max)
F64_MAX = float(np.finfo(np.float64).max)


def rng_for(section):
    """An independent, reproducible stream per section, so editing one section does not move
    the others."""
    return np.random.default_rng([SEED, section])


# ------------------------------------------------------------------------------------------------
# JSON encoding with exact floats
# ------------------------------------------------------------------------------------------------


class Arr:
    """A flat float array written in a given dtype's exact encoding."""

    def __init__(self, vals, dtype):
        self.vals = [float(v) for v in vals]
        self.dtype = dtype


class Num:
    def __init__(self, v, dtype):
        self.v = float(v)
        self.dtype = dtype


def tok(v, dtype):
    if math.isnan(v):
        return '"nan"'
    if math.isinf(v):
        return '"inf"' if v > 0 else '"-inf"'
    if dtype == "f32":
        f = np.float32(v)
        assert float(f) == v, f"{v!r} is not a float32"
        s = str(f)
        assert float(np.float32(s)) == v and "n" not in s, s
        return s
    s = repr(v)
    assert float(s) == v
    return s


def emit(o):
    if isinstance(o, Arr):
        return "[" + ",".join(tok(v, o.dtype) for v in o.vals) + "]"
    if isinstance(o, Num):
        return tok(o.v, o.dtype)
    if isinstance(o, bool):
        return "true" if o else "false"
    if isinstance(o, int):
        return str(o)
    if isinstance(o, str):
        return json.dumps(o)
    if isinstance(o, (list, tuple)):
        return "[" + ",".join(emit(v) for v in o) + "]"
    if isinstance(o, dict):
        return "{" + ",".join(json.dumps(k) + ":" + emit(v) for k, v in o.items()) + "}"
    raise TypeError(f"refusing to encode {type(o)} {o!r}: wrap floats in Arr/Num")


META = {
    "generator": "harness/golden/gen.py",
    "seed": SEED,
    "numpy": np.__version__,
    "scipy": scipy.__version__,
    "mpmath": mpmath.__version__,
    "onnx": onnx.__version__,
    "onnxruntime": ort.__version__,
}


def write(fname, description, cases):
    names = [c["name"] for c in cases]
    assert len(names) == len(set(names)), f"duplicate case names in {fname}"
    meta = dict(META)
    meta["description"] = description
    text = '{"meta":' + emit(meta) + ',\n"cases":[\n' + ",\n".join(emit(c) for c in cases) + "\n]}\n"
    json.loads(text)  # valid JSON
    with open(os.path.join(HERE, fname), "w") as f:
        f.write(text)
    print(f"{fname}: {len(cases)} cases, {len(text)} bytes")
    return len(text)


# ------------------------------------------------------------------------------------------------
# Inputs
# ------------------------------------------------------------------------------------------------


def as_dtype(a, dtype):
    """Round to the dtype and widen back, so the value is exactly what the Rust side parses."""
    a = np.asarray(a, dtype=np.float64)
    if dtype == "f32":
        with np.errstate(over="raise"):
            return np.asarray(a, dtype=np.float32).astype(np.float64)
    return a


def dist(rng, kind, n, dtype):
    if kind == "normal":
        a = rng.standard_normal(n)
    elif kind == "wide":
        a = rng.uniform(-80.0, 80.0, n)
    elif kind == "offset":  # large common offset, modest spread
        a = 1000.0 + rng.standard_normal(n)
    elif kind == "ties":
        a = rng.integers(-2, 3, n).astype(np.float64)
    elif kind == "tiny":
        if dtype == "f32":
            k = rng.integers(0, 1 << 23, n).astype(np.float64)
            a = k * 2.0**-149
        else:
            k = rng.integers(0, 1 << 52, n).astype(np.float64)
            a = k * 2.0**-1074
        a *= rng.choice([-1.0, 1.0], n)
    elif kind == "huge":
        big = [3e38, 1e30, F32_MAX] if dtype == "f32" else [1.7e308, 1e300, 3e38, F64_MAX]
        a = rng.choice(big, n) * rng.choice([-1.0, 1.0], n)
    else:
        raise ValueError(kind)
    return as_dtype(a, dtype)


TEMPS = [0.05, 0.5, 1.0, 2.0, 10.0]


def tau_of(t, dtype):
    return float(np.float32(t)) if dtype == "f32" else float(t)


# ------------------------------------------------------------------------------------------------
# Float64 / mpmath references for one row
# ------------------------------------------------------------------------------------------------


def frac_to_float(q):
    try:
        return float(q)  # int/int true division: correctly rounded
    except OverflowError:
        return INF if q > 0 else NINF


def effective_row(x, keep=None, bias=None):
    """The row as the kernels see it: bias added (exactly, checked), masked entries -inf."""
    z = []
    for i, v in enumerate(x):
        if keep is not None and not keep[i]:
            z.append(NINF)
            continue
        if bias is not None:
            b = bias[i]
            if math.isinf(b) or math.isinf(v) or math.isnan(b) or math.isnan(v):
                z.append(v + b)  # IEEE: inf + finite = inf, inf - inf = NaN
                continue
            s = Fraction(v) + Fraction(b)
            assert float(s) == v + b and Fraction(v + b) == s, "bias sum must be exact"
            v = v + b
        z.append(v)
    return z


def exact_shift(z, tau):
    """d_i = (z_i - max z)/tau exactly, rounded once to float64."""
    m = max(z)
    fm, ft = Fraction(m), Fraction(tau)
    d = [NINF if v == NINF else frac_to_float((Fraction(v) - fm) / ft) for v in z]
    return m, d


def _ln_sum(e, imax):
    """(ln S, S) for S = sum(e) with e[imax] = 1: ln S as log1p of the other terms, so that
    S = 1 + 1e-217 keeps its tail (60 digits alone would round S to 1 and ln S to 0)."""
    rest = mp.fsum(v for i, v in enumerate(e) if i != imax)
    return mp.log1p(rest), 1 + rest


def mp_row(z, tau):
    """High-precision p, log p, lse, H of softmax(z/tau)."""
    m = max(z)
    d = [None if v == NINF else (mpf(v) - mpf(m)) / mpf(tau) for v in z]
    e = [mpf(0) if t is None else mp.exp(t) for t in d]
    ls, s = _ln_sum(e, z.index(m))
    p = [ei / s for ei in e]
    logp = [None if t is None else t - ls for t in d]
    h = ls - mp.fsum(pi * t for pi, t in zip(p, d) if t is not None)
    lse = mpf(m) / mpf(tau) + ls
    return {"d": d, "p": p, "logp": logp, "lse": lse, "H": h}


CHECK = {}  # name -> worst (|scipy - mp| / allowance) seen, printed at the end


def note(kind, ratio):
    CHECK[kind] = max(CHECK.get(kind, 0.0), ratio)
    assert ratio <= 1.0, f"{kind}: float64 reference differs from mpmath by {ratio} x its allowance"


# The float64 references carry their own rounding. These allowances are what the Rust test adds
# for the reference when it compares float64 results; gen.py asserts that the scipy values are
# within them of the 60-digit mpmath values (the `note` calls).
REF_SOFTMAX_REL = 5e-14  # relative, outputs >= 1e-300
EPS64 = 2.0**-52


def ref_softmax(z, tau):
    m, d = exact_shift(z, tau)
    y = scipy.special.softmax(np.array(d))
    mpr = mp_row(z, tau)
    for yi, pi in zip(y, mpr["p"]):
        pf = float(pi)
        if pf >= 1e-300:
            note("softmax", abs(yi - pf) / pf / REF_SOFTMAX_REL)
        else:
            note("softmax_tiny", abs(yi - pf) / 1e-310)
    return [float(v) for v in y]


def ref_log_softmax(z, tau):
    m, d = exact_shift(z, tau)
    y = scipy.special.log_softmax(np.array(d))
    mpr = mp_row(z, tau)
    for yi, li in zip(y, mpr["logp"]):
        if li is None:
            assert yi == NINF
            continue
        lf = float(li)
        if math.isinf(lf):
            assert yi == lf
        else:
            note("log_softmax", abs(yi - lf) / (EPS64 * (1 + abs(lf))))
    return [float(v) for v in y]


def ref_logsumexp(z, tau):
    m, d = exact_shift(z, tau)
    ms = frac_to_float(Fraction(m) / Fraction(tau))
    v = float(ms + scipy.special.logsumexp(np.array(d)))
    lf = float(mp_row(z, tau)["lse"])
    if math.isinf(lf):
        assert v == lf
    else:
        note("logsumexp", abs(v - lf) / (EPS64 * (1 + abs(lf) + abs(ms))))
    return v


REF_ENTROPY_REL = 1e-14


def ref_entropy(z, tau):
    """(value, source): scipy.stats.entropy of the float64 softmax, or mpmath where float64
    loses digits."""
    m, d = exact_shift(z, tau)
    p = scipy.special.softmax(np.array(d))
    hs = float(scipy.stats.entropy(p))
    hm = float(mp_row(z, tau)["H"])
    if abs(hs - hm) <= REF_ENTROPY_REL * abs(hm):
        return hs, "scipy.stats.entropy"
    return hm, "mpmath"


def ref_kl(zp, zq, tau):
    _, dp = exact_shift(zp, tau)
    _, dq = exact_shift(zq, tau)
    p = scipy.special.softmax(np.array(dp))
    q = scipy.special.softmax(np.array(dq))
    ks = float(np.sum(scipy.special.rel_entr(p, q)))
    ke = float(scipy.stats.entropy(p, q))
    mpp, mpq = mp_row(zp, tau), mp_row(zq, tau)
    terms = []
    for pi, lp, lq in zip(mpp["p"], mpp["logp"], mpq["logp"]):
        if lp is None or pi == 0:
            continue
        if lq is None:
            terms = None
            break
        terms.append(pi * (lp - lq))
    km = INF if terms is None else float(mp.fsum(terms))
    scale = 1.0 + (0.0 if terms is None else float(mp.fsum(abs(t) for t in terms)))
    if km == INF:
        assert ks == INF
        return INF, "scipy.special.rel_entr"
    assert abs(ks - ke) <= 1e-12 * scale, (ks, ke)
    if abs(ks - km) <= 1e-14 * scale:
        return ks, "scipy.special.rel_entr"
    return km, "mpmath"


def _mp_h(z, tau):
    m = max(z)
    zz = [v for v in z if v != NINF]
    d = [(mpf(v) - mpf(m)) / tau for v in zz]
    e = [mp.exp(t) for t in d]
    ls, s = _ln_sum(e, zz.index(m))
    return ls - mp.fsum(ei * t for ei, t in zip(e, d)) / s


def _mp_dh(z, tau):
    """dH/dtau = Var_p(z)/tau^3 (z in logit units)."""
    m = max(z)
    zz = [mpf(v) for v in z if v != NINF]
    e = [mp.exp((v - mpf(m)) / tau) for v in zz]
    s = mp.fsum(e)
    p = [ei / s for ei in e]
    mean = mp.fsum(pi * v for pi, v in zip(p, zz))
    var = mp.fsum(pi * (v - mean) ** 2 for pi, v in zip(p, zz))
    return var / tau**3


def ref_temperature_for_entropy(z, target):
    """tau* with H(softmax(z/tau*)) = target, by bisection in mpmath (H increases with tau)."""
    t = mpf(target)
    lo, hi = mpf(1), mpf(1)
    while _mp_h(z, hi) < t:
        hi *= 2
    while _mp_h(z, lo) >= t:
        lo /= 2
    for _ in range(200):
        mid = (lo + hi) / 2
        if _mp_h(z, mid) < t:
            lo = mid
        else:
            hi = mid
    tau = (lo + hi) / 2
    assert abs(_mp_h(z, tau) - t) < mpf(10) ** -40
    return float(tau), float(_mp_dh(z, tau))


def sparsemax_ref(z, tau):
    """Martins & Astudillo (2016), Algorithm 1 (sort, cumulative sums, support size), in exact
    rational arithmetic on the float64 shifted logits."""
    _, d = exact_shift(z, tau)
    fin = sorted((Fraction(v) for v in d if v != NINF), reverse=True)
    cs = Fraction(0)
    k_z, cs_k = 0, Fraction(0)
    for k, v in enumerate(fin, start=1):
        cs += v
        if 1 + k * v > cs:
            k_z, cs_k = k, cs
    thr = (cs_k - 1) / k_z
    return [0.0 if v == NINF else frac_to_float(max(Fraction(v) - thr, Fraction(0))) for v in d]


# ------------------------------------------------------------------------------------------------
# VJPs: analytic in float64, checked by complex-step differentiation
# ------------------------------------------------------------------------------------------------


def vjp_refs(z, tau, dy):
    """(p, softmax dx, log_softmax dx) for a regular row; masked/-inf entries are constants."""
    p = ref_softmax(z, tau)
    act = [i for i, v in enumerate(z) if v != NINF]
    dot = math.fsum(p[i] * dy[i] for i in act)
    tot = math.fsum(dy[i] for i in act)
    dxs = [0.0] * len(z)
    dxl = [0.0] * len(z)
    for i in act:
        dxs[i] = p[i] * (dy[i] - dot) / tau
        dxl[i] = (dy[i] - p[i] * tot) / tau
    # Complex step: d/dx_k f = Im f(x + i h e_k) / h, exact to rounding (no cancellation).
    m = max(z)
    base = np.array([(z[i] - m) / tau for i in act])
    dya = np.array([dy[i] for i in act])
    h = 1e-30
    w = np.tile(base.astype(complex), (len(act), 1))
    w[np.arange(len(act)), np.arange(len(act))] += 1j * h / tau
    wm = w - 0  # max of the real parts is 0
    e = np.exp(wm)
    s = e.sum(axis=1, keepdims=True)
    g_soft = ((e / s) @ dya).imag / h
    g_log = ((wm - np.log(s)) @ dya).imag / h
    scale = math.fsum(abs(p[i] * dy[i]) for i in act) / tau
    for j, i in enumerate(act):
        note("vjp_softmax_cstep", abs(g_soft[j] - dxs[i]) / (1e-12 * (abs(dxs[i]) + p[i] * scale) + 1e-300))
        note(
            "vjp_log_softmax_cstep",
            abs(g_log[j] - dxl[i]) / (1e-12 * (abs(dxl[i]) + abs(dy[i]) / tau + p[i] * abs(tot) / tau) + 1e-300),
        )
    return p, dxs, dxl


# ------------------------------------------------------------------------------------------------
# onnxruntime
# ------------------------------------------------------------------------------------------------


def ort_run(op, x, shape, tau=1.0, keep=None, bias=None):
    """onnxruntime float32 `op` (Softmax, LogSoftmax, Hardmax) on x (float32), with the
    temperature as a Div node and the masks as Where / Add nodes."""
    r, n = shape
    inputs = [helper.make_tensor_value_info("X", TensorProto.FLOAT, [r, n])]
    feeds = {"X": np.asarray(x, np.float32).reshape(r, n)}
    nodes, inits, cur = [], [], "X"
    if bias is not None:
        inputs.append(helper.make_tensor_value_info("B", TensorProto.FLOAT, [r, n]))
        feeds["B"] = np.asarray(bias, np.float32).reshape(r, n)
        nodes.append(helper.make_node("Add", [cur, "B"], ["XB"]))
        cur = "XB"
    if keep is not None:
        inputs.append(helper.make_tensor_value_info("K", TensorProto.BOOL, [r, n]))
        feeds["K"] = np.asarray(keep, bool).reshape(r, n)
        inits.append(helper.make_tensor("NEG", TensorProto.FLOAT, [], [NINF]))
        nodes.append(helper.make_node("Where", ["K", cur, "NEG"], ["XK"]))
        cur = "XK"
    if tau != 1.0:
        inits.append(helper.make_tensor("TAU", TensorProto.FLOAT, [], [tau]))
        nodes.append(helper.make_node("Div", [cur, "TAU"], ["XT"]))
        cur = "XT"
    nodes.append(helper.make_node(op, [cur], ["Y"], axis=-1))
    out = helper.make_tensor_value_info("Y", TensorProto.FLOAT, [r, n])
    g = helper.make_graph(nodes, "golden", inputs, [out], initializer=inits)
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 10
    onnx.checker.check_model(model)
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    return [float(v) for v in sess.run(None, feeds)[0].reshape(-1)]


# ------------------------------------------------------------------------------------------------
# Row specs for the softmax family
# ------------------------------------------------------------------------------------------------


def spec(name, dtype, rows, tau=1.0, keep=None, bias=None):
    r, n = len(rows), len(rows[0])
    assert all(len(row) == n for row in rows)
    flat = [float(v) for row in rows for v in row]
    assert list(as_dtype(flat, dtype)) == flat or any(math.isnan(v) for v in flat)
    s = {"name": name, "dtype": dtype, "shape": [r, n], "x": flat, "tau": tau_of(tau, dtype)}
    if keep is not None:
        s["keep"] = [bool(k) for row in keep for k in row]
    if bias is not None:
        s["bias"] = [float(b) for row in bias for b in row]
    return s


def rows_of(s, key="x"):
    r, n = s["shape"]
    v = s[key]
    return [v[i * n : (i + 1) * n] for i in range(r)]


def eff_rows(s):
    keeps = rows_of(s, "keep") if "keep" in s else [None] * s["shape"][0]
    biases = rows_of(s, "bias") if "bias" in s else [None] * s["shape"][0]
    return [effective_row(x, k, b) for x, k, b in zip(rows_of(s), keeps, biases)]


def seed_specs(dtype):
    out = []
    for t in [0.1, 0.5, 1.0, 2.0, 5.0, 10.0]:
        out.append(spec(f"seed_123_t{t}", dtype, [[1.0, 2.0, 3.0]], t))
    for t in [0.1, 1.0, 3.0, 10.0]:
        out.append(spec(f"seed_1000_1001_1002_t{t}", dtype, [[1000.0, 1001.0, 1002.0]], t))
    out.append(spec("seed_1_5_10", dtype, [[1.0, 5.0, 10.0]]))
    out.append(spec("seed_1_50_100", dtype, [[1.0, 50.0, 100.0]]))
    out.append(spec("seed_1_500_1000", dtype, [[1.0, 500.0, 1000.0]]))
    for t in [0.01, 0.1, 0.5, 1.0, 2.0, 10.0, 100.0]:
        out.append(spec(f"seed_12345_t{t}", dtype, [[1.0, 2.0, 3.0, 4.0, 5.0]], t))
    return out


def family_specs(dtype):
    """Regular rows (finite max, no NaN) for softmax, log_softmax, logsumexp, entropy."""
    rng = rng_for(1 if dtype == "f32" else 2)
    out = []
    # The 4097-element row (longer than 256 lane chunks plus a ragged tail) only in float32,
    # where the compensated sums matter; float64 stops at 1000 to keep the files small.
    lengths = [1, 2, 3, 7, 16, 17, 100, 1000] + ([4097] if dtype == "f32" else [])
    for n in lengths:
        out.append(spec(f"normal_n{n}", dtype, [dist(rng, "normal", n, dtype)]))
    out.append(spec("normal_batch_6x7", dtype, dist(rng, "normal", 42, dtype).reshape(6, 7)))
    out.append(spec("normal_batch_4x33", dtype, dist(rng, "normal", 132, dtype).reshape(4, 33)))
    for n in [3, 17, 100, 1000]:
        out.append(spec(f"wide_n{n}", dtype, [dist(rng, "wide", n, dtype)]))
    out.append(spec("wide_batch_3x16", dtype, dist(rng, "wide", 48, dtype).reshape(3, 16)))
    for t in TEMPS:
        if t == 1.0:
            continue
        out.append(spec(f"normal_batch_2x17_t{t}", dtype, dist(rng, "normal", 34, dtype).reshape(2, 17), t))
        out.append(spec(f"wide_n100_t{t}", dtype, [dist(rng, "wide", 100, dtype)], t))
    for t in [3.0, 10.0, 0.3]:
        out.append(spec(f"offset1000_n16_t{t}", dtype, [dist(rng, "offset", 16, dtype)], t))
    # Huge magnitudes: ties at the top, spans beyond the float range.
    big_v = 3e38 if dtype == "f32" else 1.7e308
    top = F32_MAX if dtype == "f32" else F64_MAX
    huge_rows = [
        [big_v, -big_v, 1e30, -1e30, big_v, 0.0, 1.0],
        [top, -top, 1.0, -1.0, 0.0, 2.0, 3.0],
        [1e30, -1e30, 5.0, -5.0, 1e30, 2e30, 0.0],
        list(dist(rng, "huge", 7, dtype)),
    ]
    huge_rows = [list(as_dtype(r, dtype)) for r in huge_rows]
    for t in [1.0, 0.05, 10.0]:
        out.append(spec(f"huge_batch_4x7_t{t}", dtype, huge_rows, t))
    tiny = dist(rng, "tiny", 48, dtype).reshape(3, 16)
    tiny[2, :4] = as_dtype([0.0, 2.0**-126 if dtype == "f32" else 2.0**-1022, -0.0, 0.0], dtype)
    for t in [1.0, 0.5, 2.0]:
        out.append(spec(f"tiny_batch_3x16_t{t}", dtype, tiny, t))
    out.append(spec("ties_batch_4x7", dtype, dist(rng, "ties", 28, dtype).reshape(4, 7)))
    consts = [0.0, 7.0, -1e30, big_v, -top] if dtype == "f32" else [0.0, 7.0, -1e300, big_v, 5e-324]
    eq = [list(as_dtype([c] * 5, dtype)) for c in consts]
    out.append(spec("equal_batch_5x5", dtype, eq))
    out.append(spec("equal_batch_5x5_t0.5", dtype, eq, 0.5))
    # Keep-masks: random, a single kept entry, and NaN / +inf under masked positions.
    x = dist(rng, "normal", 5 * 17, dtype).reshape(5, 17)
    keep = rng.random((5, 17)) < 0.7
    keep[:, 0] = True
    keep[1] = False
    keep[1, 5] = True
    keep[2] = True
    x[3, 1], x[3, 4], x[3, 9] = NAN, INF, INF
    keep[3, 1] = keep[3, 4] = keep[3, 9] = False
    for t in [1.0, 0.5, 2.0]:
        out.append(spec(f"keep_batch_5x17_t{t}", dtype, x, t, keep=keep))
    # Additive bias: ALiBi-like slopes (multiples of 1/2) and -inf, on logits on a 2^-6 grid so
    # that x + bias is exact in the dtype.
    xg = np.round(rng.standard_normal((3, 16)) * 64.0) / 64.0
    pos = np.arange(16)
    bias = np.stack([-0.5 * np.abs(pos - 5), -1.0 * np.abs(pos - 15), np.zeros(16)])
    bias[0, 12:] = NINF
    bias[2, ::3] = NINF
    for t in [1.0, 2.0]:
        out.append(spec(f"bias_batch_3x16_t{t}", dtype, as_dtype(xg, dtype), t, bias=as_dtype(bias, dtype)))
    out += seed_specs(dtype)
    return out


# ------------------------------------------------------------------------------------------------
# Edge rows (expected outputs written from CONFORMANCE.md)
# ------------------------------------------------------------------------------------------------


def edge_specs(dtype):
    top = F32_MAX if dtype == "f32" else F64_MAX
    return [
        spec("edge_all_neg_inf", dtype, [[NINF] * 4]),
        spec("edge_all_masked", dtype, [[1.0, NAN, INF, -2.0]], keep=[[False] * 4]),
        spec("edge_one_pos_inf", dtype, [[1.0, INF, -3.0, 0.5]]),
        spec("edge_three_pos_inf", dtype, [[INF, 2.0, INF, NINF, INF, 0.0]]),
        spec("edge_three_pos_inf_t0.5", dtype, [[INF, 2.0, INF, NINF, INF, 0.0]], 0.5),
        spec("edge_three_pos_inf_t2", dtype, [[INF, 2.0, INF, NINF, INF, 0.0]], 2.0),
        spec("edge_nan", dtype, [[1.0, 2.0, NAN, 3.0]]),
        spec("edge_nan_and_inf", dtype, [[INF, NAN, NINF]]),
        spec("edge_pos_and_neg_inf", dtype, [[NINF, INF, NINF, INF]]),
        spec("edge_pos_inf_bias", dtype, [[0.0, 1.0, 2.0]], bias=[[INF, 0.0, INF]]),
        spec("edge_poison_own_row", dtype, [[0.0] * 4, [1.0, NAN, 2.0, 3.0], [5.0, 5.0, NINF, NINF], [NINF] * 4]),
        spec("edge_extremes", dtype, [[top, -top], [top, top], [-top, top]]),
        spec("edge_single", dtype, [[-7.5], [0.0], [NINF]]),
    ]


def edge_expect(op, z, dtype):
    """Spec-given outputs of one (masked) row, as Python floats in the dtype."""
    n = len(z)
    fl = np.float32 if dtype == "f32" else np.float64
    if any(math.isnan(v) for v in z):
        return [NAN] * (n if op in ("softmax", "log_softmax", "sparsemax") else 1)
    if all(v == NINF for v in z):
        return {
            "softmax": [0.0] * n,
            "sparsemax": [0.0] * n,
            "log_softmax": [NINF] * n,
            "logsumexp": [NINF],
            "entropy": [0.0],
        }[op]
    k = sum(1 for v in z if v == INF)
    if k > 0:
        share = float(fl(1) / fl(k))
        return {
            "softmax": [share if v == INF else 0.0 for v in z],
            "sparsemax": [share if v == INF else 0.0 for v in z],
            "log_softmax": [-math.log(k) if v == INF else NINF for v in z],
            "logsumexp": [INF],
            "entropy": [math.log(k)],
        }[op]
    return None  # regular row: computed by the libraries


# ------------------------------------------------------------------------------------------------
# Case builders
# ------------------------------------------------------------------------------------------------


def base_case(s, op):
    dt = s["dtype"]
    c = {"name": s["name"] + "_" + dt, "op": op, "dtype": dt, "shape": s["shape"], "x": Arr(s["x"], dt)}
    c["temperature"] = Num(s["tau"], dt)
    if "keep" in s:
        c["keep"] = s["keep"]
    if "bias" in s:
        c["bias"] = Arr(s["bias"], dt)
    return c


def family_case(s, op, edge=False):
    c = base_case(s, op)
    tau = s["tau"]
    exp = []
    srcs = set()
    for z in eff_rows(s):
        v = edge_expect(op, z, s["dtype"]) if edge else None
        if v is not None:
            srcs.add("spec")
        elif op == "softmax":
            v = ref_softmax(z, tau)
            srcs.add("scipy.special.softmax")
        elif op == "log_softmax":
            v = ref_log_softmax(z, tau)
            srcs.add("scipy.special.log_softmax")
        elif op == "logsumexp":
            v = [ref_logsumexp(z, tau)]
            srcs.add("scipy.special.logsumexp")
        elif op == "entropy":
            h, src = ref_entropy(z, tau)
            v = [h]
            srcs.add(src)
        elif op == "sparsemax":
            v = sparsemax_ref(z, tau)
            srcs.add("Martins-Astudillo sort algorithm (exact rationals)")
        exp += v
    c["edge"] = edge
    c["ref"] = "+".join(sorted(srcs))
    c["expected"] = Arr(exp, "f64")
    if s["dtype"] == "f32" and op in ("softmax", "log_softmax"):
        op_name = {"softmax": "Softmax", "log_softmax": "LogSoftmax"}[op]
        with np.errstate(all="ignore"):
            c["ort"] = Arr(
                ort_run(op_name, s["x"], s["shape"], tau, s.get("keep"), s.get("bias")), "f32"
            )
    return c


def build_family(op):
    cases = []
    for dt in ["f32", "f64"]:
        for s in family_specs(dt):
            cases.append(family_case(s, op))
        for s in edge_specs(dt):
            cases.append(family_case(s, op, edge=True))
    return cases


def build_kl():
    cases = []
    for dt in ["f32", "f64"]:
        rng = rng_for(10 if dt == "f32" else 11)
        pairs = []
        for n in [1, 3, 17, 100, 1000]:
            pairs.append((f"normal_n{n}", [dist(rng, "normal", n, dt)], [dist(rng, "normal", n, dt)], 1.0, None))
        pairs.append(("wide_n17", [dist(rng, "wide", 17, dt)], [dist(rng, "wide", 17, dt)], 1.0, None))
        near = dist(rng, "normal", 100, dt)
        pairs.append(("near_n100", [near], [as_dtype(near + 1e-3 * dist(rng, "normal", 100, dt), dt)], 1.0, None))
        pairs.append(("seed_peaked", [[1.0, 50.0, 100.0]], [[1.0, 2.0, 3.0]], 1.0, None))
        pairs.append(("seed_peaked_rev", [[1.0, 2.0, 3.0]], [[1.0, 50.0, 100.0]], 1.0, None))
        pairs.append(("p_neg_inf", [[NINF, 1.0, 2.0, NINF]], [[0.0, 1.0, -1.0, 3.0]], 1.0, None))
        for t in [0.05, 0.5, 2.0, 10.0]:
            pairs.append(
                (f"normal_batch_2x7_t{t}", dist(rng, "normal", 14, dt).reshape(2, 7), dist(rng, "normal", 14, dt).reshape(2, 7), t, None)
            )
        keep = rng.random((3, 17)) < 0.6
        keep[:, 3] = True
        for t in [1.0, 0.5]:
            pairs.append(
                (f"keep_batch_3x17_t{t}", dist(rng, "normal", 51, dt).reshape(3, 17), dist(rng, "normal", 51, dt).reshape(3, 17), t, keep)
            )
        for name, p, q, t, k in pairs:
            s = spec(name, dt, [list(r) for r in p], t, keep=k)
            c = base_case(s, "kl")
            c["q"] = Arr([float(v) for r in q for v in r], dt)
            qs = spec(name, dt, [list(r) for r in q], t, keep=k)
            vals, srcs = [], set()
            for zp, zq in zip(eff_rows(s), eff_rows(qs)):
                v, src = ref_kl(zp, zq, s["tau"])
                vals.append(v)
                srcs.add(src)
            c["edge"] = False
            c["ref"] = "+".join(sorted(srcs))
            c["expected"] = Arr(vals, "f64")
            cases.append(c)
        # Edges, from softmax-core's documented KL semantics.
        edges = [
            ("edge_identical", [[1.0, 2.0, 3.0, -4.0]], [[1.0, 2.0, 3.0, -4.0]], [0.0]),
            ("edge_q_zero_where_p_positive", [[1.0, 2.0, 3.0]], [[1.0, NINF, 3.0]], [INF]),
            ("edge_q_pos_inf_elsewhere", [[1.0, 2.0, 3.0]], [[0.0, INF, 1.0]], [INF]),
            ("edge_nan_p", [[1.0, NAN, 3.0]], [[1.0, 2.0, 3.0]], [NAN]),
            ("edge_nan_q", [[1.0, 2.0, 3.0]], [[NAN, 2.0, 3.0]], [NAN]),
            ("edge_p_pos_inf", [[INF, 0.0, 1.0]], [[0.0, 1.0, 2.0]], None),
        ]
        for name, p, q, e in edges:
            s = spec(name, dt, p)
            c = base_case(s, "kl")
            c["q"] = Arr(q[0], dt)
            if e is None:
                # p is the one-hot limit: KL = -log q_0 (mpmath).
                r = mp_row(q[0], 1.0)
                e = [float(-r["logp"][0])]
            c["edge"] = True
            c["ref"] = "spec"
            c["expected"] = Arr(e, "f64")
            cases.append(c)
    return cases


def build_vjp(op):
    cases = []
    for dt in ["f32", "f64"]:
        rng = rng_for(20 if dt == "f32" else 21)
        specs = []
        for n in [1, 2, 3, 7, 17, 100, 1000]:
            specs.append(spec(f"normal_n{n}", dt, [dist(rng, "normal", n, dt)]))
        specs.append(spec("wide_n17", dt, [dist(rng, "wide", 17, dt)]))
        specs.append(spec("ties_batch_3x7", dt, dist(rng, "ties", 21, dt).reshape(3, 7)))
        for t in [0.05, 0.5, 2.0, 10.0]:
            specs.append(spec(f"normal_batch_2x7_t{t}", dt, dist(rng, "normal", 14, dt).reshape(2, 7), t))
        specs.append(spec("seed_123_t0.5", dt, [[1.0, 2.0, 3.0]], 0.5))
        x = dist(rng, "normal", 51, dt).reshape(3, 17)
        keep = rng.random((3, 17)) < 0.6
        keep[:, 2] = True
        specs.append(spec("keep_batch_3x17", dt, x, 1.0, keep=keep))
        specs.append(spec("keep_batch_3x17_t2", dt, x, 2.0, keep=keep))
        for s in specs:
            c = base_case(s, op)
            r, n = s["shape"]
            dy = list(as_dtype(rng.standard_normal(r * n), dt))
            if "keep" in s:
                # The dy of a masked entry must not enter the sums (CONFORMANCE.md): make it NaN.
                dy = [NAN if not k else v for v, k in zip(dy, s["keep"])]
            ps, dxs = [], []
            for i, z in enumerate(eff_rows(s)):
                p, dx_s, dx_l = vjp_refs(z, s["tau"], dy[i * n : (i + 1) * n])
                ps += p
                dxs += dx_s if op == "softmax_vjp" else dx_l
            c["dy"] = Arr(dy, dt)
            c["p"] = Arr(ps, "f64")
            c["edge"] = False
            c["ref"] = "analytic float64, complex-step checked"
            c["expected"] = Arr(dxs, "f64")
            cases.append(c)
        # Edges: written from CONFORMANCE.md ("masked and -inf entries are constants: dx 0, their
        # dy not in the sums; NaN poisons the row; with +inf entries, use the limit distribution").
        top = F32_MAX if dt == "f32" else F64_MAX
        edges = [
            ("edge_all_neg_inf", [NINF] * 3, None, [1.0, 2.0, 3.0]),
            ("edge_all_masked", [1.0, NAN, INF], [False] * 3, [1.0, 2.0, 3.0]),
            ("edge_nan", [1.0, NAN, 2.0], None, [1.0, 2.0, 3.0]),
            ("edge_two_pos_inf", [INF, 1.0, INF, NINF], None, [0.5, 2.0, -1.0, 7.0]),
            ("edge_neg_inf_dy_nan", [1.0, NINF, 2.0], None, [0.5, NAN, -1.0]),
            ("edge_extremes", [top, -top], None, [1.0, 2.0]),
        ]
        for name, x, keep, dy in edges:
            s = spec(name, dt, [x], keep=None if keep is None else [keep])
            c = base_case(s, op)
            z = eff_rows(s)[0]
            n = len(z)
            if any(math.isnan(v) for v in z):
                e, p = [NAN] * n, [NAN] * n
            elif all(v == NINF for v in z):
                e, p = [0.0] * n, [0.0] * n
            elif any(v == INF for v in z):
                k = sum(1 for v in z if v == INF)
                p = [1.0 / k if v == INF else 0.0 for v in z]
                act = [i for i, v in enumerate(z) if v != NINF]
                dot = math.fsum(p[i] * dy[i] for i in act)
                tot = math.fsum(dy[i] for i in act)
                if op == "softmax_vjp":
                    e = [p[i] * (dy[i] - dot) if i in act else 0.0 for i in range(n)]
                else:
                    e = [dy[i] - p[i] * tot if i in act else 0.0 for i in range(n)]
            elif name == "edge_extremes":
                # p = [1, e^-(2 max)] = [1, 0] exactly in float64; dx from the formula.
                p = [1.0, 0.0]
                if op == "softmax_vjp":
                    e = [0.0, 0.0]
                else:
                    e = [dy[0] - (dy[0] + dy[1]), dy[1]]
            else:
                p, dxs, dxl = vjp_refs(z, 1.0, dy)
                e = dxs if op == "softmax_vjp" else dxl
            c["dy"] = Arr(list(as_dtype(dy, dt)), dt)
            c["p"] = Arr(p, "f64")
            c["edge"] = True
            c["ref"] = "spec"
            c["expected"] = Arr(e, "f64")
            if op == "log_softmax_vjp" and name in ("edge_two_pos_inf", "edge_extremes"):
                # softmax-core's documented semantics of the VJP computed from the output
                # y = log_softmax(x) alone: entries with y = -inf are constants (dx = 0, dy not
                # summed), which here also freezes the finite logits (y = -inf in the limit, or
                # -2·max overflowing). The from-logits VJP must give "expected".
                live = [i for i in range(n) if z[i] == INF] if name == "edge_two_pos_inf" else [0]
                k = len(live)
                tot = math.fsum(dy[i] for i in live)
                c["expected_from_output"] = Arr([dy[i] - tot / k if i in live else 0.0 for i in range(n)], "f64")
            cases.append(c)
    return cases


def build_sparsemax():
    cases = []
    for dt in ["f32", "f64"]:
        rng = rng_for(30 if dt == "f32" else 31)
        specs = []
        for n in [1, 2, 3, 7, 16, 17, 100, 1000] + ([4097] if dt == "f32" else []):
            specs.append(spec(f"normal_n{n}", dt, [dist(rng, "normal", n, dt)]))
        specs.append(spec("normal_batch_6x7", dt, dist(rng, "normal", 42, dt).reshape(6, 7)))
        specs.append(spec("wide_n17", dt, [dist(rng, "wide", 17, dt)]))
        # Small spread: wide supports.
        specs.append(spec("narrow_n100", dt, [as_dtype(0.01 * rng.standard_normal(100), dt)]))
        for t in TEMPS:
            if t != 1.0:
                specs.append(spec(f"normal_batch_2x17_t{t}", dt, dist(rng, "normal", 34, dt).reshape(2, 17), t))
        specs.append(spec("ties_batch_4x7", dt, dist(rng, "ties", 28, dt).reshape(4, 7)))
        specs.append(spec("equal_batch_2x5", dt, as_dtype([[3.0] * 5, [-1e30] * 5], dt)))
        specs.append(spec("tiny_batch_2x16", dt, dist(rng, "tiny", 32, dt).reshape(2, 16)))
        big_v = 3e38 if dt == "f32" else 1.7e308
        specs.append(spec("huge_batch_2x4", dt, as_dtype([[big_v, -big_v, 1e30, big_v], [1e30, 1e30, -1e30, 0.5]], dt)))
        specs.append(spec("offset1000_n16_t3", dt, [dist(rng, "offset", 16, dt)], 3.0))
        x = dist(rng, "normal", 51, dt).reshape(3, 17)
        keep = rng.random((3, 17)) < 0.6
        keep[:, 0] = True
        x[2, 1], x[2, 2] = NAN, INF
        keep[2, 1] = keep[2, 2] = False
        specs.append(spec("keep_batch_3x17", dt, x, 1.0, keep=keep))
        xg = as_dtype(np.round(rng.standard_normal((2, 16)) * 64.0) / 64.0, dt)
        bias = np.stack([-0.25 * np.abs(np.arange(16) - 4), np.zeros(16)])
        bias[1, 1::2] = NINF
        specs.append(spec("bias_batch_2x16", dt, xg, 1.0, bias=as_dtype(bias, dt)))
        for t in [0.5, 1.0, 5.0]:
            specs.append(spec(f"seed_123_t{t}", dt, [[1.0, 2.0, 3.0]], t))
        specs.append(spec("seed_05_10_15", dt, [[0.5, 1.0, 1.5]]))
        for s in specs:
            cases.append(family_case(s, "sparsemax"))
        for s in edge_specs(dt):
            cases.append(family_case(s, "sparsemax", edge=True))
    return cases


def build_hardmax():
    """Expected from onnxruntime's Hardmax (float32; the float64 cases use float32-exact inputs,
    on which ORT's float32 argmax is exact). Edge rows: softmax-core's documented semantics
    (NaN row -> NaN, all -inf -> zeros); ORT's answer is recorded in "ort" as a fact."""
    rng = rng_for(40)
    rows = {
        "normal_batch_4x7": dist(rng, "normal", 28, "f32").reshape(4, 7),
        "ties_batch_4x7": dist(rng, "ties", 28, "f32").reshape(4, 7),
        "equal_batch_2x5": as_dtype([[2.0] * 5, [-1e30] * 5], "f32"),
        "huge_batch_2x4": as_dtype([[3e38, -3e38, 1e30, 3e38], [F32_MAX, -F32_MAX, 0.0, 1.0]], "f32"),
        "tiny_batch_2x16": dist(rng, "tiny", 32, "f32").reshape(2, 16),
        "normal_n1": dist(rng, "normal", 1, "f32").reshape(1, 1),
        "normal_n1000": dist(rng, "normal", 1000, "f32").reshape(1, 1000),
        "seed_123": as_dtype([[1.0, 2.0, 3.0]], "f32"),
        "seed_1000_1001_1002": as_dtype([[1000.0, 1001.0, 1002.0]], "f32"),
        "neg_inf_and_finite": as_dtype([[NINF, -5.0, NINF, -5.0]], "f32"),
        "one_pos_inf": as_dtype([[1.0, INF, 2.0, INF]], "f32"),
    }
    edges = {
        "edge_nan": [[1.0, 2.0, NAN, 3.0]],
        "edge_all_neg_inf": [[NINF] * 4],
        "edge_poison_own_row": [[1.0, NAN, 2.0], [3.0, 1.0, 3.0]],
    }
    cases = []
    for dt in ["f32", "f64"]:
        for name, x in rows.items():
            x = [list(r) for r in np.asarray(x, dtype=np.float64)]
            s = spec(name, dt, x)
            c = base_case(s, "hardmax")
            with np.errstate(all="ignore"):
                o = ort_run("Hardmax", s["x"], s["shape"])
            # Cross-check: the first maximum (numpy argmax), no NaN in these rows.
            for i, row in enumerate(x):
                oh = [0.0] * len(row)
                oh[int(np.argmax(row))] = 1.0
                assert o[i * len(row) : (i + 1) * len(row)] == oh, name
            c["edge"] = False
            c["ref"] = "onnxruntime Hardmax"
            c["expected"] = Arr(o, "f64")
            cases.append(c)
        for name, x in edges.items():
            s = spec(name, dt, x)
            c = base_case(s, "hardmax")
            e = []
            for row in x:
                if any(math.isnan(v) for v in row):
                    e += [NAN] * len(row)
                elif all(v == NINF for v in row):
                    e += [0.0] * len(row)
                else:
                    oh = [0.0] * len(row)
                    oh[int(np.argmax(row))] = 1.0
                    e += oh
            with np.errstate(all="ignore"):
                c["ort"] = Arr(ort_run("Hardmax", s["x"], s["shape"]), "f32")
            c["edge"] = True
            c["ref"] = "spec"
            c["expected"] = Arr(e, "f64")
            cases.append(c)
    return cases


def build_gumbel():
    cases = []
    for dt in ["f32", "f64"]:
        rng = rng_for(50 if dt == "f32" else 51)
        items = []
        for n in [3, 7, 17, 100]:
            for t in TEMPS:
                items.append((f"normal_n{n}_t{t}", dist(rng, "normal", n, dt), t))
        items.append(("seed_doc", as_dtype([1.0, 2.0, 3.0], dt), 1.0))
        for name, x, t in items:
            n = len(x)
            u = rng.random(n)
            if name.startswith("normal_n7"):
                u[:3] = [1e-30, 0.99999994, 0.5]  # extreme noise: g = -4.2, +16.6
            u = as_dtype(u, dt)
            if name == "seed_doc":
                u = as_dtype([0.5, 0.9, 0.1], dt)
            assert all(0.0 < v < 1.0 for v in u)
            mu = [mpf(float(v)) for v in u]
            g = [-mp.log(-mp.log(v)) for v in mu]
            zz = [mpf(float(xi)) + gi for xi, gi in zip(x, g)]
            m = max(zz)
            d = [float((zi - m) / mpf(tau_of(t, dt))) for zi in zz]
            y = [float(v) for v in scipy.special.softmax(np.array(d))]
            # Cross-check against the 60-digit softmax of the same logits.
            ex = [mp.exp((zi - m) / mpf(tau_of(t, dt))) for zi in zz]
            se = mp.fsum(ex)
            for yi, ei in zip(y, ex):
                pf = float(ei / se)
                if pf >= 1e-300:
                    note("gumbel_softmax", abs(yi - pf) / pf / REF_SOFTMAX_REL)
            # Gap between the top two (x + g)/tau, for the hard variant.
            srt = sorted(d, reverse=True)
            gap = srt[0] - srt[1] if n > 1 else INF
            for hard in [False, True]:
                if hard and gap < 0.05:
                    continue  # argmax not determined robustly at float32 precision
                s = spec(f"{name}_{'hard' if hard else 'soft'}", dt, [list(x)], t)
                c = base_case(s, "gumbel_softmax")
                c["uniform"] = Arr(list(u), dt)
                c["hard"] = hard
                c["edge"] = False
                c["ref"] = "softmax((x + g)/tau), g = -ln(-ln u) in mpmath, softmax by scipy"
                if hard:
                    e = [0.0] * n
                    e[int(np.argmax(d))] = 1.0
                else:
                    e = y
                c["expected"] = Arr(e, "f64")
                cases.append(c)
    return cases


def build_temperature_for_entropy():
    cases = []
    for dt in ["f32", "f64"]:
        rng = rng_for(60 if dt == "f32" else 61)
        items = [
            ("seed_123_h0.5", [1.0, 2.0, 3.0], 0.5),
            ("seed_123_h1.0", [1.0, 2.0, 3.0], 1.0),
            ("seed_1_50_100_h0.1", [1.0, 50.0, 100.0], 0.1),
            ("ties_top2_h1.0", [3.0, 3.0, 1.0, 0.0, -2.0], 1.0),
            ("with_neg_inf_h0.9", [0.0, NINF, 1.0, 2.0], 0.9),
        ]
        for n, h in [(7, 0.5), (7, 1.8), (100, 2.0), (100, 4.5), (1000, 6.0)]:
            items.append((f"normal_n{n}_h{h}", list(dist(rng, "normal", n, dt)), h))
        for name, x, h in items:
            x = list(as_dtype(x, dt))
            target = float(as_dtype([h], dt)[0])
            tau, dh = ref_temperature_for_entropy(x, target)
            s = spec(name, dt, [x])
            c = base_case(s, "temperature_for_entropy")
            del c["temperature"]
            c["target"] = Num(target, dt)
            c["dh_dtau"] = Arr([dh], "f64")
            c["edge"] = False
            c["ref"] = "mpmath bisection of H(tau) = target"
            c["expected"] = Arr([tau], "f64")
            cases.append(c)
    return cases


def build_errors():
    """Structural errors, from CONFORMANCE.md / softmax-core's Error docs."""
    cases = []
    for dt in ["f32", "f64"]:
        def err(name, op, x, shape, error, **kw):
            c = {"name": f"{name}_{dt}", "op": op, "dtype": dt, "shape": shape, "x": Arr(x, dt)}
            for k, v in kw.items():
                if k == "keep" or isinstance(v, bool):
                    c[k] = v
                elif isinstance(v, list):
                    c[k] = Arr(as_dtype(v, dt), dt)
                else:
                    c[k] = Num(as_dtype([v], dt)[0], dt)
            c["error"] = error
            return c

        for t in [0.0, -1.0, INF, NAN]:
            for op in ["softmax", "log_softmax", "logsumexp", "entropy", "sparsemax"]:
                cases.append(err(f"{op}_temperature_{t}", op, [1.0, 2.0], [1, 2], "InvalidTemperature", temperature=t))
        cases.append(err("softmax_empty_row", "softmax", [], [1, 0], "EmptyRow", temperature=1.0))
        cases.append(err("softmax_ragged", "softmax", [1.0, 2.0, 3.0, 4.0, 5.0], [2, 3], "RaggedBatch", temperature=1.0))
        cases.append(
            err("softmax_keep_length", "softmax", [1.0, 2.0, 3.0], [1, 3], "LengthMismatch", temperature=1.0, keep=[True, False])
        )
        for u in [0.0, 1.0, NAN]:
            cases.append(
                err(f"gumbel_noise_{u}", "gumbel_softmax", [1.0, 2.0], [1, 2], "InvalidNoise", temperature=1.0, uniform=[0.5, u], hard=False)
            )
        cases.append(err("gumbel_temperature_0", "gumbel_softmax", [1.0, 2.0], [1, 2], "InvalidTemperature", temperature=0.0, uniform=[0.5, 0.5], hard=False))
        for name, x, h in [
            ("above_ln_n", [1.0, 2.0, 3.0], 1.2),
            ("below_ln_k", [3.0, 3.0, 1.0], 0.5),
            ("nan_row", [1.0, NAN, 2.0], 0.5),
            ("pos_inf_row", [1.0, INF, 2.0], 0.5),
            ("nan_target", [1.0, 2.0, 3.0], NAN),
        ]:
            cases.append(err(f"tfe_{name}", "temperature_for_entropy", x, [1, 3], "EntropyOutOfRange", target=h))
    return cases


def main():
    total = 0
    total += write("softmax.json", "softmax(x/tau) per row; float64 truth + onnxruntime float32 Softmax", build_family("softmax"))
    total += write("log_softmax.json", "log_softmax(x/tau) per row; float64 truth + onnxruntime float32 LogSoftmax", build_family("log_softmax"))
    total += write("logsumexp.json", "logsumexp(x/tau), one value per row", build_family("logsumexp"))
    total += write("entropy.json", "Shannon entropy (nats) of softmax(x/tau), one value per row", build_family("entropy"))
    total += write("kl.json", "KL(softmax(x/tau) || softmax(q/tau)), one value per row", build_kl())
    total += write("softmax_vjp.json", "d/dx of sum(dy * softmax(x/tau)); p = float64 softmax", build_vjp("softmax_vjp"))
    total += write("log_softmax_vjp.json", "d/dx of sum(dy * log_softmax(x/tau)); p = float64 softmax", build_vjp("log_softmax_vjp"))
    total += write("sparsemax.json", "sparsemax(x/tau) per row", build_sparsemax())
    total += write("hardmax.json", "one-hot of the first argmax per row", build_hardmax())
    total += write("gumbel_softmax.json", "softmax((x + g)/tau), g = -ln(-ln u); hard = one-hot", build_gumbel())
    total += write("temperature_for_entropy.json", "tau with H(softmax(x/tau)) = target", build_temperature_for_entropy())
    total += write("errors.json", "structural errors (expected Error variant)", build_errors())
    # The crates built on softmax-core add their files from modules of their own next to this
    # one (each a `build(write) -> int` over the same encoding helpers).
    for extra in ("gen_loss", "gen_attention"):
        if os.path.exists(os.path.join(HERE, extra + ".py")):
            sys.path.insert(0, HERE)
            total += __import__(extra).build(write)
    print(f"total {total} bytes")
    for k in sorted(CHECK):
        print(f"reference check {k}: worst {CHECK[k]:.3g} of its allowance")


if __name__ == "__main__":
    sys.exit(main())
