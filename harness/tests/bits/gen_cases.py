#!/usr/bin/env python3
"""Writes harness/tests/bits/cases.jsonl: a fixed set of `harness conform` requests covering every
op of the protocol (softmax family, losses, attention), f32 and f64, with their options, edge
values and a few structural errors.

A 64-bit digest of each answer of `harness conform` to these lines is committed next to them
(conform_expected.txt, one line per request; the last line of cases.jsonl is deliberately not
JSON) and `harness/tests/bits.rs` requires every answer to stay identical, byte for byte: the
regression fixture that protects the result bits through refactorings. Re-record only when a
change is meant to change bits (say which cases and why in the commit):

    python3 harness/tests/bits/gen_cases.py            # only if the case list itself changes
    SOFTMAX_BITS_BLESS=1 cargo test -p harness --test bits

Uses only Python's standard library (random.Random with a fixed seed); the generated file is
committed, so nothing here runs in CI.
"""

import json
import math
import os
import random

R = random.Random(20261125)
OUT = []


def f(x):
    """A float as the protocol writes it (strings for the non-finite values)."""
    if isinstance(x, float):
        if math.isnan(x):
            return "nan"
        if math.isinf(x):
            return "inf" if x > 0 else "-inf"
    return x


def emit(case_id, op, **fields):
    line = {"id": case_id, "op": op}
    for k, v in fields.items():
        if isinstance(v, list):
            v = [f(x) for x in v]
        else:
            v = f(v)
        line[k] = v
    OUT.append(json.dumps(line, separators=(",", ":")))


def short(x):
    """Four significant digits: short lines, and exactly the same input in f32 and f64 runs
    up to the rounding of the decimal to each type."""
    return float(f"{x:.4g}")


def normal(n, sd=1.0):
    return [short(R.gauss(0.0, sd)) for _ in range(n)]


def uniform(n, a, b):
    return [short(R.uniform(a, b)) for _ in range(n)]


# ------------------------------------------------------------------------------------------------
# Softmax family
# ------------------------------------------------------------------------------------------------

SOFTMAX_OPS = ["softmax", "log_softmax", "logsumexp", "entropy", "softmax_vjp", "log_softmax_vjp",
               "sparsemax"]


def rows_of(kind, r, n):
    x = []
    for _ in range(r):
        if kind == "normal":
            row = normal(n, 3.0)
        elif kind == "wide":
            row = [short(R.choice([-1.0, 1.0]) * 10 ** R.uniform(-30, 30)) for _ in range(n)]
        elif kind == "tied":
            row = [float(R.randint(-2, 2)) for _ in range(n)]
        elif kind == "huge":
            row = [R.choice([3.0e38, -3.0e38, 1.0e38, 0.0]) for _ in range(n)]
        elif kind == "tiny":
            row = [R.choice([1e-40, -1e-40, 1e-310, 0.0, 5e-45]) for _ in range(n)]
        elif kind == "special":
            row = normal(n, 2.0)
            for i in range(n):
                u = R.random()
                if u < 0.15:
                    row[i] = -math.inf
                elif u < 0.2:
                    row[i] = math.inf
        elif kind == "allneg":
            row = [-math.inf] * n
        elif kind == "nan":
            row = normal(n)
            row[R.randrange(n)] = math.nan
        elif kind == "peaked":
            row = normal(n, 1.0)
            row[R.randrange(n)] = 80.0
        x.extend(row)
    return x


case = 0
for dtype in ["f32", "f64"]:
    for op in SOFTMAX_OPS:
        for n in [1, 3, 16, 17, 33, 100, 257, 1000]:
            kinds = ["normal", "wide", "tied", "huge", "tiny", "special", "allneg", "nan", "peaked"]
            for kind in kinds:
                if n >= 257 and kind not in ("normal", "special", "peaked"):
                    continue
                r = 1 if n >= 257 else R.choice([1, 2, 3])
                x = rows_of(kind, r, n)
                fields = {"dtype": dtype, "x": x, "shape": [r, n] if r > 1 or R.random() < 0.5 else [n]}
                if R.random() < 0.4:
                    fields["temperature"] = R.choice([0.01, 0.5, 2.0, 7.5, 100.0])
                if R.random() < 0.3:
                    fields["mask"] = [R.random() < 0.7 for _ in range(r * n)]
                if op.endswith("_vjp"):
                    fields["dy"] = normal(r * n)
                case += 1
                emit(f"{op}/{dtype}/n{n}/{kind}/{case}", op, **fields)

# Long rows (the two-pass log_softmax path from 2^17 values on is not exercised here: too big for
# a committed fixture; the on-target suite covers the long-row kernels).
for dtype in ["f32", "f64"]:
    for op in ["softmax", "log_softmax", "logsumexp", "entropy"]:
        x = normal(5000, 4.0)
        emit(f"{op}/{dtype}/long5000", op, dtype=dtype, x=x, shape=[5000])

# ------------------------------------------------------------------------------------------------
# Losses
# ------------------------------------------------------------------------------------------------


def targets(b, c, ignore=-100, p_ignore=0.15):
    return [ignore if R.random() < p_ignore else R.randrange(c) for _ in range(b)]


def probs(b, c):
    out = []
    for _ in range(b):
        w = [R.random() for _ in range(c)]
        s = sum(w)
        out.extend([short(v / s) for v in w])
    return out


REDUCTIONS = ["mean", "sum", "none"]
for dtype in ["f32", "f64"]:
    for i in range(40):
        b, c = R.choice([(1, 1), (1, 5), (4, 3), (3, 17), (8, 33), (2, 300)])
        fields = {"dtype": dtype, "logits": normal(b * c, 2.5), "shape": [b, c],
                  "reduction": R.choice(REDUCTIONS)}
        if i % 5 == 4:
            fields["target_probs"] = probs(b, c)
        else:
            fields["target"] = targets(b, c)
        if R.random() < 0.4:
            fields["weight"] = uniform(c, 0.1, 2.0)
        if R.random() < 0.4:
            fields["label_smoothing"] = R.choice([0.0, 0.1, 0.5, 1.0])
        if R.random() < 0.3:
            fields["softcap"] = R.choice([1.0, 5.0, 30.0])
        if R.random() < 0.3:
            fields["z_loss"] = R.choice([0.0, 1e-4, 0.5])
        if R.random() < 0.15 and "target" in fields:
            lg = fields["logits"]
            lg[R.randrange(len(lg))] = R.choice([math.inf, -math.inf, math.nan])
        emit(f"cross_entropy/{dtype}/{i}", "cross_entropy", **fields)
    for i in range(12):
        b, c = R.choice([(1, 4), (5, 3), (6, 40)])
        lp = []
        for _ in range(b):
            row = normal(c, 2.0)
            m = max(row)
            s = math.log(sum(math.exp(v - m) for v in row)) + m
            lp.extend([short(v - s) for v in row])
        fields = {"dtype": dtype, "log_probs": lp, "shape": [b, c], "target": targets(b, c),
                  "reduction": R.choice(REDUCTIONS)}
        if R.random() < 0.5:
            fields["weight"] = uniform(c, 0.1, 2.0)
        emit(f"nll_loss/{dtype}/{i}", "nll_loss", **fields)
    for i in range(12):
        b, c = R.choice([(1, 1), (4, 3), (7, 20)])
        fields = {"dtype": dtype, "logits": normal(b * c, 4.0), "target": uniform(b * c, 0, 1),
                  "shape": [b, c], "reduction": R.choice(REDUCTIONS)}
        if R.random() < 0.4:
            fields["weight"] = uniform(b * c, 0.0, 2.0)
        if R.random() < 0.4:
            fields["pos_weight"] = uniform(c, 0.5, 3.0)
        emit(f"bce_with_logits/{dtype}/{i}", "bce_with_logits", **fields)
    for i in range(12):
        b, c = R.choice([(1, 3), (4, 5), (3, 64)])
        log_target = R.random() < 0.5
        inp = [short(math.log(p)) for p in probs(b, c)]
        tgt = probs(b, c)
        if log_target:
            tgt = [short(math.log(p)) for p in tgt]
        emit(f"kl_div/{dtype}/{i}", "kl_div", dtype=dtype, input=inp, target=tgt, shape=[b, c],
             log_target=log_target, reduction=R.choice(REDUCTIONS + ["batchmean"]))
    for i in range(6):
        n = R.choice([1, 7, 100])
        emit(f"mse/{dtype}/{i}", "mse", dtype=dtype, input=normal(n), target=normal(n),
             reduction=R.choice(REDUCTIONS))
    for i in range(10):
        b, c = R.choice([(1, 1), (4, 3), (5, 10)])
        fields = {"dtype": dtype, "logits": normal(b * c, 3.0),
                  "target": [float(R.random() < 0.3) for _ in range(b * c)],
                  "reduction": R.choice(REDUCTIONS)}
        if R.random() < 0.5:
            fields["alpha"] = R.choice([0.25, -1.0, 0.9])
        if R.random() < 0.5:
            fields["gamma"] = R.choice([0.0, 1.0, 2.0, 3.5])
        emit(f"sigmoid_focal/{dtype}/{i}", "sigmoid_focal", **fields)
    for i in range(16):
        n, d = R.choice([(1, 4), (3, 8), (6, 16), (10, 32)])
        fields = {"dtype": dtype, "query": normal(n * d), "positive": normal(n * d), "n": n, "d": d,
                  "reduction": R.choice(REDUCTIONS)}
        mode = i % 4
        if mode == 1:
            m = R.choice([1, 5])
            fields.update(negatives=normal(m * d), m=m, negative_mode="unpaired")
        elif mode == 2:
            m = R.choice([1, 3])
            fields.update(negatives=normal(n * m * d), m=m, negative_mode="paired")
        elif mode == 3:
            fields["symmetric"] = True
        if R.random() < 0.5:
            fields["temperature"] = R.choice([0.05, 0.1, 1.0])
        if R.random() < 0.3:
            fields["normalize"] = False
        emit(f"info_nce/{dtype}/{i}", "info_nce", **fields)
    for i in range(8):
        n, d = R.choice([(1, 3), (4, 8), (8, 16)])
        fields = {"dtype": dtype, "z": normal(2 * n * d), "n": n, "d": d}
        if R.random() < 0.5:
            fields["temperature"] = R.choice([0.07, 0.5])
        if R.random() < 0.3:
            fields["normalize"] = False
        emit(f"nt_xent/{dtype}/{i}", "nt_xent", **fields)
    for i in range(8):
        n, d = R.choice([(1, 3), (4, 8), (8, 16)])
        fields = {"dtype": dtype, "x": normal(n * d), "y": normal(n * d), "n": n, "d": d}
        if R.random() < 0.5:
            fields["logit_scale"] = R.choice([0.0, 2.3, 4.0])
            fields["logit_bias"] = R.choice([-10.0, 0.0, 3.0])
        if R.random() < 0.3:
            fields["normalize"] = False
        emit(f"siglip/{dtype}/{i}", "siglip", **fields)
    for i in range(10):
        b, c = R.choice([(1, 3), (5, 4), (6, 50)])
        fields = {"dtype": dtype, "logits": normal(b * c, 2.0), "shape": [b, c],
                  "target": targets(b, c), "reduction": R.choice(REDUCTIONS)}
        if R.random() < 0.5:
            fields["gamma"] = R.choice([0.0, 0.5, 2.0])
        if R.random() < 0.5:
            fields["alpha"] = uniform(c, 0.1, 1.0)
        emit(f"softmax_focal/{dtype}/{i}", "softmax_focal", **fields)
    for i in range(10):
        t, k, v = R.choice([(1, 4, 3), (5, 8, 17), (7, 16, 130), (3, 5, 300)])
        fields = {"dtype": dtype, "h": normal(t * k), "w": normal(v * k, 0.5), "t": t, "k": k,
                  "v": v, "target": targets(t, v), "reduction": R.choice(REDUCTIONS)}
        if R.random() < 0.3:
            fields["label_smoothing"] = 0.1
        if R.random() < 0.3:
            fields["softcap"] = 10.0
        if R.random() < 0.3:
            fields["z_loss"] = 1e-3
        emit(f"linear_cross_entropy/{dtype}/{i}", "linear_cross_entropy", **fields)

# ------------------------------------------------------------------------------------------------
# Attention
# ------------------------------------------------------------------------------------------------


def attn_fields(heads, kvh, t, s, d, dv, sd):
    return {"q": normal(heads * t * d, sd), "k": normal(kvh * s * d, sd), "v": normal(kvh * s * dv),
            "heads": heads, "kv_heads": kvh, "t": t, "s": s, "d": d, "dv": dv}


SHAPES = [(1, 1, 1, 1, 4, 4), (2, 1, 3, 5, 8, 4), (4, 2, 6, 130, 8, 8), (2, 2, 5, 257, 8, 8),
          (3, 1, 9, 9, 4, 6), (1, 1, 2, 300, 16, 16)]
# The attention ops are f32 only (f64 answers `unsupported_dtype`, one case each below).
for dtype in ["f32"]:
    for i in range(48):
        heads, kvh, t, s, d, dv = SHAPES[i % len(SHAPES)]
        fields = attn_fields(heads, kvh, t, s, d, dv, R.choice([1.0, 3.0]))
        fields["dtype"] = dtype
        if R.random() < 0.5:
            fields["causal"] = R.choice(["bottom_right", "top_left"])
        if R.random() < 0.25:
            fields["mask"] = [R.random() < 0.8 for _ in range(t * s)]
        if R.random() < 0.25:
            fields["bias"] = normal(heads * t * s)
        if R.random() < 0.3:
            fields["alibi"] = True
        if R.random() < 0.35:
            fields["window"] = R.choice([1, 2, 7, 64])
            fields["sinks"] = R.choice([0, 1, 3])
        if R.random() < 0.3:
            fields["softcap"] = R.choice([5.0, 30.0])
        if R.random() < 0.2:
            fields["scale"] = R.choice([0.1, 1.0])
        sink = i % 3 == 2
        if sink:
            fields["sink_logits"] = normal(heads, 2.0)
        tag = "sink" if sink else "plain"
        emit(f"attention/{dtype}/{tag}/{i}", "attention", **fields)
        if i % 2 == 0:
            bf = dict(fields)
            bf["do"] = normal(heads * t * dv)
            emit(f"attention_backward/{dtype}/{tag}/{i}", "attention_backward", **bf)
    for i in range(24):
        heads, kvh, t, d, dv = R.choice([(1, 1, 5, 4, 4), (2, 1, 20, 8, 8), (4, 2, 140, 8, 4),
                                         (2, 2, 40, 16, 16)])
        fields = attn_fields(heads, kvh, t, t, d, dv, 1.0)
        del fields["s"]
        fields["dtype"] = dtype
        cap = t
        if R.random() < 0.5:
            w = R.choice([1, 3, 16])
            sinks = R.choice([0, 1, 4])
            fields["window"] = w
            fields["sinks"] = sinks
            cap = min(t, w + sinks)
        fields["capacity"] = cap + R.choice([0, 0, 5])
        if R.random() < 0.3:
            fields["alibi"] = True
        if R.random() < 0.3:
            fields["softcap"] = 20.0
        if R.random() < 0.3:
            fields["causal"] = "bottom_right"
        sink = i % 3 == 2
        if sink:
            fields["sink_logits"] = normal(heads, 2.0)
        tag = "sink" if sink else "plain"
        emit(f"attention_stream/{dtype}/{tag}/{i}", "attention_stream", **fields)

for op in ["attention", "attention_backward", "attention_stream"]:
    emit(f"{op}/f64/unsupported", op, dtype="f64", q=[0.0] * 4, k=[0.0] * 4, v=[0.0] * 4, heads=1,
         kv_heads=1, t=1, s=1, d=4, dv=4)

# Sink logits far above every score (the underflow of the accumulator's rescale): the regression
# cases of the sink-logit fix, in every attention op.
for dtype in ["f32"]:
    for gap in [60.0, 80.0, 100.0, 200.0, 700.0, 800.0]:
        heads, kvh, t, s, d, dv = 2, 1, 3, 140, 8, 4
        fields = attn_fields(heads, kvh, t, s, d, dv, 0.3)
        fields["dtype"] = dtype
        fields["sink_logits"] = [gap + 2.0, gap + 3.0]
        emit(f"attention/{dtype}/sinkgap/{gap}", "attention", **fields)
        bf = dict(fields)
        bf["do"] = normal(heads * t * dv)
        emit(f"attention_backward/{dtype}/sinkgap/{gap}", "attention_backward", **bf)
        sf = attn_fields(heads, kvh, 12, 12, d, dv, 0.3)
        del sf["s"]
        sf.update(dtype=dtype, window=4, sinks=1, capacity=5, sink_logits=[gap + 2.0, gap + 3.0])
        emit(f"attention_stream/{dtype}/sinkgap/{gap}", "attention_stream", **sf)

# ------------------------------------------------------------------------------------------------
# Structural errors and odd requests (answers must stay the same too)
# ------------------------------------------------------------------------------------------------
emit("err/shape", "softmax", x=[1.0, 2.0, 3.0], shape=[2, 2])
emit("err/temperature", "softmax", x=[1.0, 2.0], shape=[2], temperature=0.0)
emit("err/unknown_field", "softmax", x=[1.0], shape=[1], tempreature=1.0)
emit("err/dtype", "softmax", x=[1.0], shape=[1], dtype="f16")
emit("err/unknown_op", "softermax", x=[1.0], shape=[1])
emit("err/target", "cross_entropy", logits=[1.0, 2.0], shape=[1, 2], target=[5])
emit("err/no_targets", "cross_entropy", logits=[1.0, 2.0], shape=[1, 2], target=[-100])
emit("err/kv_heads", "attention", q=[0.0] * 12, k=[0.0] * 8, v=[0.0] * 8, heads=3, kv_heads=2, t=1,
     s=1, d=4, dv=4)
emit("err/cache_full", "attention_stream", q=[0.0] * 8, k=[0.0] * 8, v=[0.0] * 8, heads=1,
     kv_heads=1, t=2, d=4, dv=4, capacity=1)

# ------------------------------------------------------------------------------------------------
# Quantized softmax (TFLM semantics). Appended last, with its own generator, so that the cases
# above keep their inputs.
# ------------------------------------------------------------------------------------------------
Q = random.Random(1925)
for scale, beta in [(0.00392156886, 1.0), (0.1, 1.0), (0.05, 0.5), (0.0078125, 2.0), (0.25, 1.0)]:
    for out_t in ["int8", "int16"]:
        for r, n in [(1, 1), (2, 5), (3, 16), (1, 255)]:
            x = [Q.randint(-128, 127) for _ in range(r * n)]
            emit(f"quant/s8_{out_t}/{scale}/{beta}/{r}x{n}", "softmax_quantized", x=x, shape=[r, n],
                 input_type="int8", output_type=out_t, input_scale=scale, beta=beta)
for scale, beta in [(0.000305175781, 1.0), (3.05175781e-05, 1.0), (0.000244140625, 2.0), (0.01, 0.5),
                    (4.0, 1.0), (1e-30, 1.0)]:
    for r, n in [(1, 1), (2, 7), (4, 32)]:
        x = [Q.randint(-32768, 32767) for _ in range(r * n)]
        emit(f"quant/s16/{scale}/{beta}/{r}x{n}", "softmax_quantized", x=x, shape=[r, n],
             input_type="int16", output_type="int16", input_scale=scale, beta=beta)
emit("quant/s8/extremes", "softmax_quantized", x=[-128, 127, -128, 127, 0], shape=[5],
     input_type="int8", output_type="int8", input_scale=0.1)
emit("quant/s8/all_equal", "softmax_quantized", x=[-7] * 12, shape=[3, 4], input_type="int8",
     output_type="int8", input_scale=0.02)
emit("quant/s16/extremes", "softmax_quantized", x=[-32768, 32767, 0], shape=[3],
     input_type="int16", output_type="int16", input_scale=0.0001)
emit("quant/s8/sum_2^28", "softmax_quantized", x=[3] * 512, shape=[512], input_type="int8",
     output_type="int8", input_scale=0.1)
emit("quant/s8_int16/511_at_max", "softmax_quantized", x=[3] * 511, shape=[511],
     input_type="int8", output_type="int16", input_scale=0.1)
emit("err/quant/beta_scale", "softmax_quantized", x=[1, 2], shape=[2], input_type="int8",
     output_type="int8", input_scale=1e-9)
emit("err/quant/int16_shift", "softmax_quantized", x=[1, 2], shape=[2], input_type="int16",
     output_type="int16", input_scale=6.0)
emit("err/quant/int16_to_int8", "softmax_quantized", x=[1, 2], shape=[2], input_type="int16",
     output_type="int8", input_scale=0.001)
emit("err/quant/range", "softmax_quantized", x=[1, 128], shape=[2], input_type="int8",
     output_type="int8", input_scale=0.1)
emit("err/quant/float", "softmax_quantized", x=[1, 2.0], shape=[2], input_type="int8",
     output_type="int8", input_scale=0.1)
emit("err/quant/dtype", "softmax_quantized", x=[1, 2], shape=[2], input_type="int8",
     output_type="int8", input_scale=0.1, dtype="f32")
emit("err/quant/shape", "softmax_quantized", x=[1, 2, 3], shape=[2, 2], input_type="int8",
     output_type="int8", input_scale=0.1)

here = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(here, "cases.jsonl"), "w") as fh:
    for line in OUT:
        fh.write(line + "\n")
    fh.write("not json\n")
print(f"{len(OUT) + 1} lines")
