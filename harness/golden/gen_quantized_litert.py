#!/usr/bin/env python3
"""Golden vectors for quantized SOFTMAX, computed by LiteRT's reference kernels.

Produces harness/golden/softmax_quantized_litert.json: random test cases for TensorFlow Lite's
quantized SOFTMAX operator (softmax over the last axis of an [R, N] tensor) in its three
quantized type pairs:

    int8  -> int8    output scale 1/256,   zero point -128
    int8  -> int16   output scale 1/65536, zero point -32768
    int16 -> int16   input zero point 0, output scale 1/32768, zero point 0

The oracle is LiteRT's Python interpreter (PyPI `ai-edge-litert`) running a one-operator
SOFTMAX model per case with the *reference* kernels
(`Interpreter(..., experimental_op_resolver_type=OpResolverType.BUILTIN_REF)`), i.e.
tflite::ops::builtin::BuiltinRefOpResolver: for int8 input that is the gemmlowp fixed-point
reference_ops::Softmax (the one TFLite Micro and CMSIS-NN reproduce), not the optimized
float lookup table. The models are written directly with the `tflite` schema package and the
`flatbuffers` builder, so TensorFlow itself is not needed.

Run (from the repository root; a few seconds):

    python3 -m venv /tmp/litert-venv
    /tmp/litert-venv/bin/pip install ai-edge-litert==2.3.0 tflite==2.18.0 \
        flatbuffers==25.12.19 numpy==2.4.6
    /tmp/litert-venv/bin/python harness/golden/gen_quantized_litert.py

The output is deterministic (numpy default_rng(20261125), one child stream per type pair):
running the script again with the same package versions gives a byte-identical file. The
script checks, as it goes: the int8 input zero point does not change the result (each int8
case is also run with zero point 0); every row's outputs sum to about one (256 / 65536 / 32768
quanta); the CMSIS-NN unit-test case (int8, input scale float32(1/255), beta 1, rows
[101, 49, 6, -34, -75] and [-79, -38, 120, -55, 115]) reproduces CMSIS-NN's committed
reference output; and it counts how often the optimized resolver (OpResolverType.BUILTIN)
disagrees with the reference one, as evidence that the reference kernels really ran.

File format: {"provenance": {...}, "cases": [...]}, one case per line:

    input_type, output_type   "int8" | "int16"
    input_scale, beta         float32 values, written as the shortest decimal that parses back
                              to the same float32 (numpy's unique float32 formatting)
    input_zero_point          int (random for int8 input, 0 for int16 input)
    shape                     [R, N]
    x, y                      R*N ints each, row-major: quantized input and LiteRT's output
"""

import hashlib
import importlib
import importlib.metadata
import json
import os
import platform
import sys
from fractions import Fraction

import flatbuffers
import numpy as np
from ai_edge_litert.interpreter import Interpreter, OpResolverType
from tflite.BuiltinOperator import BuiltinOperator
from tflite.BuiltinOptions import BuiltinOptions
from tflite.TensorType import TensorType

# The flatbuffers schema modules of the `tflite` package (one module per table; their
# module-level functions Start/Add.../End build the table).
(fb_Model, fb_SubGraph, fb_Tensor, fb_Operator, fb_OperatorCode, fb_Buffer, fb_Quant,
 fb_SoftmaxOptions) = [
    importlib.import_module("tflite." + name)
    for name in ("Model", "SubGraph", "Tensor", "Operator", "OperatorCode", "Buffer",
                 "QuantizationParameters", "SoftmaxOptions")
]

SEED = 20261125
HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "softmax_quantized_litert.json")

# Rows per type pair (generation stops at the first case that reaches the target).
TARGET_ROWS = {("int8", "int8"): 1500, ("int8", "int16"): 1500, ("int16", "int16"): 30000}

# Type facts: numpy dtype, TFLite tensor type, range.
TYPES = {
    "int8": (np.int8, TensorType.INT8, -128, 127),
    "int16": (np.int16, TensorType.INT16, -32768, 32767),
}

# Output quantization required by TFLite for each pair: (scale, zero point, sum of one).
OUTPUT_QUANT = {
    ("int8", "int8"): (np.float32(1.0 / 256), -128, 256),
    ("int8", "int16"): (np.float32(1.0 / 65536), -32768, 65536),
    ("int16", "int16"): (np.float32(1.0 / 32768), 0, 32768),
}

# SOFTMAX operator versions as assigned by TFLite's op version registry
# (int8 input: 2, int16 input and output: 3).
OP_VERSION = {("int8", "int8"): 2, ("int8", "int16"): 2, ("int16", "int16"): 3}

ROW_LENGTHS = [1, 2, 3, 5, 8, 10, 16, 32, 64, 100, 128, 255, 256]
# int16 -> int16: many short rows (30,000 rows must fit in a few MB), weighted to short lengths.
ROW_LENGTHS_I16 = [1, 2, 3, 5, 8, 10, 16, 32, 64]
ROW_LENGTHS_I16_W = np.array([0.4, 1.5, 1.6, 1.5, 1.1, 0.55, 0.25, 0.12, 0.04])

INT8_FIXED_SCALES = [1.0 / 255, 1.0 / 256, 0.1, 0.05, 0.0078125]
INT8_FIXED_BETAS = [1.0, 0.5, 2.0, 0.25]
INT16_FIXED_SCALES = [10.0 / 32768, 1.0 / 32768, 1.0 / 4096]
INT16_FIXED_BETAS = [1.0, 0.5, 2.0]

CMSIS_INPUT = [[101, 49, 6, -34, -75], [-79, -38, 120, -55, 115]]
# Tests/UnitTest/TestCases/TestData/softmax/output_ref_data.h of ARM-software/CMSIS-NN
# ("Generated by generate_test_data.py using TFL version 2.6.0 as reference").
CMSIS_OUTPUT_REF = [-57, -70, -79, -86, -92, -94, -88, -54, -91, -56]


# ---------------------------------------------------------------------------------------------
# Model writing
# ---------------------------------------------------------------------------------------------

def _int_vector(b, start_vector, values):
    start_vector(b, len(values))
    for v in reversed(values):
        b.PrependInt32(v)
    return b.EndVector()


def _quantization(b, scale, zero_point):
    fb_Quant.StartScaleVector(b, 1)
    b.PrependFloat32(float(scale))
    scales = b.EndVector()
    fb_Quant.StartZeroPointVector(b, 1)
    b.PrependInt64(int(zero_point))
    zero_points = b.EndVector()
    fb_Quant.Start(b)
    fb_Quant.AddScale(b, scales)
    fb_Quant.AddZeroPoint(b, zero_points)
    return fb_Quant.End(b)


def _tensor(b, name, shape, tensor_type, buffer, quantization):
    name = b.CreateString(name)
    shape = _int_vector(b, fb_Tensor.StartShapeVector, shape)
    fb_Tensor.Start(b)
    fb_Tensor.AddShape(b, shape)
    fb_Tensor.AddType(b, tensor_type)
    fb_Tensor.AddBuffer(b, buffer)
    fb_Tensor.AddName(b, name)
    fb_Tensor.AddQuantization(b, quantization)
    return fb_Tensor.End(b)


def softmax_model(shape, in_type, out_type, in_scale, in_zp, out_scale, out_zp, beta, version):
    """A .tflite flatbuffer (schema version 3): one subgraph, input tensor 0 -> SOFTMAX ->
    output tensor 1, both quantized per tensor. Buffer 0 is the schema's empty sentinel; each
    tensor has its own empty buffer (1, 2), as the converter writes activations."""
    b = flatbuffers.Builder(1024)
    q_in = _quantization(b, in_scale, in_zp)
    q_out = _quantization(b, out_scale, out_zp)
    t_in = _tensor(b, "x", shape, TYPES[in_type][1], 1, q_in)
    t_out = _tensor(b, "y", shape, TYPES[out_type][1], 2, q_out)
    fb_SubGraph.StartTensorsVector(b, 2)
    b.PrependUOffsetTRelative(t_out)
    b.PrependUOffsetTRelative(t_in)
    tensors = b.EndVector()

    fb_SoftmaxOptions.Start(b)
    fb_SoftmaxOptions.AddBeta(b, float(beta))
    options = fb_SoftmaxOptions.End(b)
    op_inputs = _int_vector(b, fb_Operator.StartInputsVector, [0])
    op_outputs = _int_vector(b, fb_Operator.StartOutputsVector, [1])
    fb_Operator.Start(b)
    fb_Operator.AddOpcodeIndex(b, 0)
    fb_Operator.AddInputs(b, op_inputs)
    fb_Operator.AddOutputs(b, op_outputs)
    fb_Operator.AddBuiltinOptionsType(b, BuiltinOptions.SoftmaxOptions)
    fb_Operator.AddBuiltinOptions(b, options)
    op = fb_Operator.End(b)
    fb_SubGraph.StartOperatorsVector(b, 1)
    b.PrependUOffsetTRelative(op)
    operators = b.EndVector()

    sg_inputs = _int_vector(b, fb_SubGraph.StartInputsVector, [0])
    sg_outputs = _int_vector(b, fb_SubGraph.StartOutputsVector, [1])
    sg_name = b.CreateString("main")
    fb_SubGraph.Start(b)
    fb_SubGraph.AddTensors(b, tensors)
    fb_SubGraph.AddInputs(b, sg_inputs)
    fb_SubGraph.AddOutputs(b, sg_outputs)
    fb_SubGraph.AddOperators(b, operators)
    fb_SubGraph.AddName(b, sg_name)
    subgraph = fb_SubGraph.End(b)

    # builtin_code (int32) is the real field; deprecated_builtin_code (int8) must hold
    # min(code, 127) for readers of the old schema (SOFTMAX = 25 fits in both).
    code = BuiltinOperator.SOFTMAX
    fb_OperatorCode.Start(b)
    fb_OperatorCode.AddDeprecatedBuiltinCode(b, min(code, 127))
    fb_OperatorCode.AddBuiltinCode(b, code)
    fb_OperatorCode.AddVersion(b, version)
    opcode = fb_OperatorCode.End(b)

    buffers = []
    for _ in range(3):  # 0: the empty sentinel; 1, 2: the (empty) activation buffers
        fb_Buffer.Start(b)
        buffers.append(fb_Buffer.End(b))

    fb_Model.StartOperatorCodesVector(b, 1)
    b.PrependUOffsetTRelative(opcode)
    opcodes = b.EndVector()
    fb_Model.StartSubgraphsVector(b, 1)
    b.PrependUOffsetTRelative(subgraph)
    subgraphs = b.EndVector()
    fb_Model.StartBuffersVector(b, len(buffers))
    for buf in reversed(buffers):
        b.PrependUOffsetTRelative(buf)
    buffers = b.EndVector()
    description = b.CreateString("one-op SOFTMAX (harness/golden/gen_quantized_litert.py)")
    fb_Model.Start(b)
    fb_Model.AddVersion(b, 3)
    fb_Model.AddOperatorCodes(b, opcodes)
    fb_Model.AddSubgraphs(b, subgraphs)
    fb_Model.AddDescription(b, description)
    fb_Model.AddBuffers(b, buffers)
    model = fb_Model.End(b)
    b.Finish(model, file_identifier=b"TFL3")
    return bytes(b.Output())


def run_softmax(pair, x, in_scale, in_zp, beta, resolver=OpResolverType.BUILTIN_REF):
    """LiteRT's SOFTMAX of the [R, N] array x; returns the output array."""
    in_type, out_type = pair
    out_scale, out_zp, _ = OUTPUT_QUANT[pair]
    model = softmax_model(list(x.shape), in_type, out_type, in_scale, in_zp, out_scale, out_zp,
                          beta, OP_VERSION[pair])
    interpreter = Interpreter(model_content=model, experimental_op_resolver_type=resolver)
    interpreter.allocate_tensors()  # runs Prepare: raises RuntimeError if the kernel rejects
    inp = interpreter.get_input_details()[0]
    out = interpreter.get_output_details()[0]
    assert inp["dtype"] == TYPES[in_type][0] and out["dtype"] == TYPES[out_type][0]
    assert inp["quantization"] == (np.float32(in_scale), in_zp)
    interpreter.set_tensor(inp["index"], x.astype(TYPES[in_type][0]))
    interpreter.invoke()
    return interpreter.get_tensor(out["index"]).copy()


# ---------------------------------------------------------------------------------------------
# Parameters and rows
# ---------------------------------------------------------------------------------------------

def f32_text(v):
    """Shortest decimal that parses back to the float32 v (checked exactly with rationals)."""
    v = np.float32(v)
    text = np.format_float_positional(v, unique=True, trim="0")
    assert np.float32(float(text)) == v
    # Exact check: the decimal lies within half an ulp of v, so any correctly rounding f32
    # parser (Rust's str::parse::<f32>) returns v.
    ulp = Fraction(float(np.spacing(v)))
    assert abs(Fraction(text) - Fraction(float(v))) < ulp / 2
    return text


def log_uniform(rng, lo, hi):
    return float(np.exp(rng.uniform(np.log(lo), np.log(hi))))


def gen_row(rng, n, lo, hi, spread):
    """One row of n ints in [lo, hi] from a randomly chosen generator.

    `spread` is the input difference (in quanta) that corresponds to a real-valued logit
    difference of 1 after scaling by input_scale * beta, used by the "window" generator to
    put rows where the exponentials are neither all 1 nor all underflowed."""
    width = hi - lo
    kind = rng.choice(["uniform", "top", "normal", "equal", "extremes", "onehot", "window"],
                      p=[0.18, 0.12, 0.2, 0.07, 0.12, 0.08, 0.23])
    if kind == "uniform":  # the full type range
        row = rng.integers(lo, hi + 1, n)
    elif kind == "top":  # a narrow window at the top: [100, 127] / [30000, 32767]
        row = rng.integers(100 if hi == 127 else 30000, hi + 1, n)
    elif kind == "normal":  # small spread around a random centre
        sigma = log_uniform(rng, 0.5, 16.0) if width < 256 else log_uniform(rng, 1.0, 4096.0)
        row = np.rint(rng.normal(rng.integers(lo, hi + 1), sigma, n))
    elif kind == "equal":  # all entries equal
        row = np.full(n, rng.integers(lo, hi + 1))
    elif kind == "extremes":  # uniform, with at least one lo and one hi (n >= 2)
        row = rng.integers(lo, hi + 1, n)
        pos = rng.permutation(n)
        k_lo = rng.integers(1, max(1, n // 4) + 1)
        k_hi = rng.integers(1, max(1, n // 4) + 1)
        row[pos[:k_lo]] = lo
        row[pos[k_lo:k_lo + k_hi]] = hi  # (n == 1: the only entry is lo)
    elif kind == "onehot":  # one maximum (hi or random), the rest at the type minimum
        row = np.full(n, lo)
        row[rng.integers(n)] = hi if rng.random() < 0.5 else rng.integers(lo + 1, hi + 1)
    else:  # "window": real logit differences spread over [0, d], d log-uniform in [0.5, 16]
        w = max(1, int(round(log_uniform(rng, 0.5, 16.0) * spread)))
        top = rng.integers(lo + min(w, width), hi + 1)
        row = rng.integers(top - min(w, width), top + 1, n)
    return np.clip(row, lo, hi).astype(np.int64)


def case_params(rng, pair, index):
    """(input_scale, beta, input_zero_point) as float32, float32, int."""
    in_type = pair[0]
    if in_type == "int8":
        fixed = [(s, b) for s in INT8_FIXED_SCALES for b in INT8_FIXED_BETAS]
        if index < len(fixed):  # every fixed scale with every fixed beta, once
            scale, beta = fixed[index]
        else:
            pick = rng.integers(len(INT8_FIXED_SCALES) + 3)
            scale = (INT8_FIXED_SCALES[pick] if pick < len(INT8_FIXED_SCALES)
                     else log_uniform(rng, 2.0 ** -9, 2.0 ** -1))
            pick = rng.integers(len(INT8_FIXED_BETAS) + 1)
            beta = INT8_FIXED_BETAS[pick] if pick < len(INT8_FIXED_BETAS) \
                else log_uniform(rng, 0.1, 4.0)
        zero_point = int(rng.integers(-128, 128))
        scale, beta = np.float32(scale), np.float32(beta)
        # TFLM's PreprocessSoftmaxScaling requires beta * scale * 2^26 > 1.
        assert float(beta) * float(scale) * 2.0 ** 26 > 1.0
    else:
        fixed = [(s, b) for s in INT16_FIXED_SCALES for b in INT16_FIXED_BETAS]
        if index < len(fixed):
            scale, beta = fixed[index]
        else:
            pick = rng.integers(len(INT16_FIXED_SCALES) + 3)
            scale = (INT16_FIXED_SCALES[pick] if pick < len(INT16_FIXED_SCALES)
                     else log_uniform(rng, 2.0 ** -16, 2.0 ** -2))
            pick = rng.integers(len(INT16_FIXED_BETAS) + 1)
            beta = INT16_FIXED_BETAS[pick] if pick < len(INT16_FIXED_BETAS) \
                else log_uniform(rng, 0.1, 4.0)
        zero_point = 0
        scale, beta = np.float32(scale), np.float32(beta)
        # Larger products give input shifts that overflow in TFLM (an error in the project).
        assert float(scale) * float(beta) < 4.0
    return scale, beta, zero_point


def case_shape(rng, pair):
    if pair == ("int16", "int16"):
        r = int(rng.integers(1, 65))
        n = int(rng.choice(ROW_LENGTHS_I16, p=ROW_LENGTHS_I16_W / ROW_LENGTHS_I16_W.sum()))
    else:
        r = int(rng.integers(1, 7))
        n = int(rng.choice(ROW_LENGTHS))  # all <= 256
    return r, n


# ---------------------------------------------------------------------------------------------
# Checks
# ---------------------------------------------------------------------------------------------

def check_cmsis():
    """The CMSIS-NN softmax unit test (int8, scale float32(1/255), beta 1)."""
    x = np.array(CMSIS_INPUT, dtype=np.int8)
    y = run_softmax(("int8", "int8"), x, np.float32(1.0 / 255), 0, np.float32(1.0))
    got = [int(v) for v in y.ravel()]
    assert got == CMSIS_OUTPUT_REF, (got, CMSIS_OUTPUT_REF)
    return got


def probe_prepare():
    """Configurations outside the file, run once to record what LiteRT's Prepare accepts:
    returns {description: "rejected" | "accepted, outputs [...]"}."""
    def attempt(pair, x, scale, zp, beta, out_scale, out_zp):
        model = softmax_model(list(x.shape), pair[0], pair[1], scale, zp, out_scale, out_zp,
                              beta, OP_VERSION[pair])
        interpreter = Interpreter(model_content=model,
                                  experimental_op_resolver_type=OpResolverType.BUILTIN_REF)
        try:
            interpreter.allocate_tensors()
        except RuntimeError:
            return "rejected"
        interpreter.set_tensor(interpreter.get_input_details()[0]["index"],
                               x.astype(TYPES[pair[0]][0]))
        interpreter.invoke()
        y = interpreter.get_tensor(interpreter.get_output_details()[0]["index"])
        return "accepted, outputs " + json.dumps([int(v) for v in y.ravel()])

    i8, i16 = np.array([[1, 2, 3, 100]]), np.array([[0, -1, -2, 32767, -32768]])
    f = np.float32
    return {
        "int8->int8, output zero point 0": attempt(
            ("int8", "int8"), i8, f(0.05), 0, f(1), f(1 / 256), 0),
        "int8->int8, output scale float32(1/255)": attempt(
            ("int8", "int8"), i8, f(0.05), 0, f(1), f(1 / 255), -128),
        "int8->int16 [[1,2,3,100]] scale 0.05, output scale 1/65536 zero point -32768": attempt(
            ("int8", "int16"), i8, f(0.05), 0, f(1), f(1 / 65536), -32768),
        "the same with output scale 1 zero point 0": attempt(
            ("int8", "int16"), i8, f(0.05), 0, f(1), f(1), 0),
        "int16->int16, input zero point 3": attempt(
            ("int16", "int16"), i16, f(0.01), 3, f(1), f(1 / 32768), 0),
        "int16->int16, output scale 1/65536": attempt(
            ("int16", "int16"), i16, f(0.01), 0, f(1), f(1 / 65536), 0),
        "int16->int16 [[0,-1,-2,32767,-32768]], input_scale*beta 4": attempt(
            ("int16", "int16"), i16, f(4), 0, f(1), f(1 / 32768), 0),
        "the same with input_scale*beta 8": attempt(
            ("int16", "int16"), i16, f(8), 0, f(1), f(1 / 32768), 0),
    }


def row_sum_deviation(pair, y):
    """Per row: (sum of output quanta above the type minimum / zero point) - one."""
    _, out_zp, one = OUTPUT_QUANT[pair]
    return (y.astype(np.int64) - out_zp).sum(axis=1) - one


# ---------------------------------------------------------------------------------------------
# Main
# ---------------------------------------------------------------------------------------------

def generate():
    cmsis = check_cmsis()
    streams = dict(zip(TARGET_ROWS, np.random.default_rng(SEED).spawn(len(TARGET_ROWS))))
    cases, stats = [], {}
    for pair, target in TARGET_ROWS.items():
        rng = streams[pair]
        in_type, out_type = pair
        _, _, lo, hi = TYPES[in_type]
        st = stats[pair] = {"cases": 0, "rows": 0, "values": 0, "max_sum_dev": 0,
                            "max_sum_dev_per_n": 0.0, "ref_vs_optimized_rows_differ": 0}
        index = 0
        while st["rows"] < target:
            scale, beta, zp = case_params(rng, pair, index)
            r, n = case_shape(rng, pair)
            spread = 1.0 / (float(scale) * float(beta))
            x = np.stack([gen_row(rng, n, lo, hi, spread) for _ in range(r)])
            y = run_softmax(pair, x, scale, zp, beta)
            if in_type == "int8":  # the zero point must not matter (the kernel uses x - max)
                y0 = run_softmax(pair, x, scale, 0, beta)
                assert np.array_equal(y, y0), "input zero point changed the result"
            # Evidence that the resolver choice matters: the optimized (BUILTIN) kernel's rows.
            y_opt = run_softmax(pair, x, scale, zp, beta, OpResolverType.BUILTIN)
            st["ref_vs_optimized_rows_differ"] += int((y_opt != y).any(axis=1).sum())
            # Sanity: every row sums to about one.
            dev = np.abs(row_sum_deviation(pair, y))
            st["max_sum_dev"] = max(st["max_sum_dev"], int(dev.max()))
            st["max_sum_dev_per_n"] = max(st["max_sum_dev_per_n"], float(dev.max()) / n)
            assert (dev <= n + 2).all(), (pair, scale, beta, x, y)
            cases.append({
                "input_type": in_type, "output_type": out_type,
                "input_scale": f32_text(scale), "input_zero_point": zp,
                "beta": f32_text(beta), "shape": [r, n],
                "x": [int(v) for v in x.ravel()], "y": [int(v) for v in y.ravel()],
            })
            st["cases"] += 1
            st["rows"] += r
            st["values"] += r * n
            index += 1
    return cases, stats, cmsis


def case_json(case):
    # input_scale and beta are emitted as bare JSON numbers from their exact shortest text.
    text = json.dumps({**case, "input_scale": "@S", "beta": "@B"}, separators=(",", ":"))
    return text.replace('"@S"', case["input_scale"]).replace('"@B"', case["beta"])


def main():
    cases, stats, cmsis = generate()
    probes = probe_prepare()
    version = importlib.metadata.version("ai-edge-litert")
    counts = "; ".join(f"{a}->{b}: {s['cases']} cases, {s['rows']} rows"
                       for (a, b), s in stats.items())
    notes = (
        "One .tflite model per case (schema version 3, one SOFTMAX operator, per-tensor "
        "quantization on input and output), written with the tflite schema package and "
        "flatbuffers; run with Interpreter(model_content=..., "
        "experimental_op_resolver_type=OpResolverType.BUILTIN_REF). Output quantization as "
        "TFLite requires: int8->int8 scale 1/256 zero point -128, int8->int16 scale 1/65536 "
        "zero point -32768 (LiteRT's Prepare does not check these for int8->int16: the reference "
        "kernel writes outputs relative to the int16 minimum regardless), int16->int16 scale "
        "1/32768 zero point 0 with input zero point 0. No configuration generated here was "
        "rejected in Prepare. Configurations probed outside the file (BUILTIN_REF): " +
        "; ".join(f"{k}: {v}" for k, v in probes.items()) + ". So LiteRT ignores the "
        "int8->int16 output quantization, and its int16 kernel accepts input_scale*beta = 8 "
        "but returns wrong outputs (an int32 overflow; the generated int16 cases keep "
        "input_scale*beta <= 1). The int16 kernel "
        "looks up exp on [-10, 0] and clamps below: entries more than 10 (real, after beta) "
        "below the row maximum contribute exp(-10) each instead of 0 (about 2 quanta of "
        "output each, and a correspondingly smaller maximum). Checks done by the generator: every int8 case gives the same "
        "output with input zero point 0 as with its random zero point; the CMSIS-NN softmax "
        "unit test (int8, input scale float32(1/255), beta 1, rows [101,49,6,-34,-75] and "
        "[-79,-38,120,-55,115]) gives " + json.dumps(cmsis) + ", equal to CMSIS-NN's "
        "Tests/UnitTest/TestCases/TestData/softmax/output_ref_data.h; each row's outputs sum "
        "to one (256/65536/32768 quanta above the zero point) within " +
        ", ".join(f"{a}->{b}: {s['max_sum_dev']}" for (a, b), s in stats.items()) +
        " quanta; rows where LiteRT's optimized resolver (BUILTIN) differs from BUILTIN_REF: " +
        ", ".join(f"{a}->{b}: {s['ref_vs_optimized_rows_differ']}/{s['rows']}"
                  for (a, b), s in stats.items()) +
        ". Parameters: int8 input scale log-uniform in [2^-9, 2^-1] or one of float32(1/255), "
        "1/256, 0.1, 0.05, 0.0078125, beta in {1, 0.5, 2, 0.25} or log-uniform in [0.1, 4] "
        "(every fixed scale with every fixed beta at least once), random input zero point; "
        "int16 input scale log-uniform in [2^-16, 2^-2] or one of 10/32768, 1/32768, 1/4096, "
        "beta in {1, 0.5, 2} or log-uniform in [0.1, 4]. Rows mix generators: uniform over the "
        "type range, uniform in [100,127] / [30000,32767], rounded normal around a random "
        "centre, all equal, containing both extremes, one-hot (one maximum, the rest at the "
        "type minimum), and a window whose width is a log-uniform real logit difference in "
        "[0.5, 16] divided by input_scale*beta. Counts: " + counts + "."
    )
    provenance = {
        "oracle": f"ai-edge-litert {version} Python interpreter, OpResolverType.BUILTIN_REF",
        "generator": "harness/golden/gen_quantized_litert.py",
        "seed": SEED,
        "python": platform.python_version(),
        "numpy": np.__version__,
        "tflite": importlib.metadata.version("tflite"),
        "flatbuffers": importlib.metadata.version("flatbuffers"),
        "notes": notes,
    }
    head = '{"provenance":' + json.dumps(provenance, separators=(",", ":")) + ',"cases":[\n'
    body = ",\n".join(case_json(c) for c in cases)
    text = head + body + "\n]}\n"
    json.loads(text)  # well-formed
    with open(OUT, "w") as f:
        f.write(text)
    for (a, b), s in stats.items():
        print(f"{a}->{b}: {s['cases']} cases, {s['rows']} rows, {s['values']} values, "
              f"max |row sum - one| {s['max_sum_dev']} quanta "
              f"(max per entry {s['max_sum_dev_per_n']:.3f}), "
              f"BUILTIN differs from BUILTIN_REF in {s['ref_vs_optimized_rows_differ']} rows")
    print(f"CMSIS-NN check: {cmsis} == reference")
    print(f"wrote {OUT}: {len(text.encode())} bytes, sha256 "
          f"{hashlib.sha256(text.encode()).hexdigest()}")


if __name__ == "__main__":
    sys.exit(main())
