#!/usr/bin/env python3
"""onnxruntime as a benchmark peer for `harness bench`.

    python3 harness/peers/ort_peer.py [--venv DIR]

Creates (once) a virtual environment with the pinned packages of requirements.txt next to this
file, re-runs itself inside it, then answers commands on stdin, one per line, so that the Rust
side can interleave onnxruntime's samples with its own (machine drift hits every contender
alike):

    hello                      -> ok <onnxruntime version> <per-call overhead, ns>
    load <op> <rows> <n> <f>   -> ok            (op: Softmax | LogSoftmax; f: raw little-endian
                                                 float32 input, rows*n values)
    loadjson <json>            -> ok            (one line of JSON: {"kind": "sce" | "attention",
                                                 ...}; see `build_json` below)
    run <reps>                 -> ok <seconds>  (reps calls of the loaded model, timed here)
    dump <f>                   -> ok            (writes the last output as raw float32)
    quit

The model is a single Softmax / LogSoftmax node (opset 13, axis -1), run with one intra-op and
one inter-op thread, sequential execution, and IOBinding with the input and a preallocated
output bound once, so a call does no allocation and no copy. The per-call overhead is the time
of a call on a 1x1 input. Every failure is reported as `err <message>` and the process exits.
"""

import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REQUIREMENTS = os.path.join(HERE, "requirements.txt")
DEFAULT_VENV = os.path.normpath(os.path.join(HERE, "..", "..", "target", "peer-venv"))


def reply(line):
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def ensure_venv(venv):
    """Re-executes this script inside `venv`, creating it (and installing the pins) if needed."""
    python = os.path.join(venv, "bin", "python")
    if os.path.realpath(sys.prefix) == os.path.realpath(venv):
        return
    marker = os.path.join(venv, ".installed")
    pins = open(REQUIREMENTS, encoding="utf-8").read()
    if not (os.path.exists(marker) and open(marker, encoding="utf-8").read() == pins):
        quiet = {"stdout": sys.stderr, "stderr": sys.stderr}
        subprocess.run([sys.executable, "-m", "venv", venv], check=True, **quiet)
        subprocess.run(
            [python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
             "-r", REQUIREMENTS],
            check=True, **quiet)
        with open(marker, "w", encoding="utf-8") as f:
            f.write(pins)
    os.execv(python, [python, os.path.abspath(__file__), "--venv", venv])


def session(op, rows, n):
    import onnx
    import onnxruntime as ort
    from onnx import TensorProto, helper

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [rows, n])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [rows, n])
    graph = helper.make_graph([helper.make_node(op, ["x"], ["y"], axis=-1)], "peer", [x], [y])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    # onnxruntime rejects the IR version onnx 1.23 writes by default.
    model.ir_version = 10
    onnx.checker.check_model(model)
    return ort.InferenceSession(model.SerializeToString(), options(), providers=["CPUExecutionProvider"])


def options():
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    return so


def build_json(spec):
    """A one-node model from a JSON spec, its named inputs (numpy arrays) and output shape.

    {"kind": "sce", "n": N, "c": C, "x": path, "t": path}: SoftmaxCrossEntropyLoss (opset 13,
        reduction mean) of float32 scores [N, C] and int64 labels [N] (the file holds int32),
        forward only; the output is the scalar loss.
    {"kind": "attention", "h": H, "hkv": Hkv, "t": T, "s": S, "d": D, "causal": 0|1,
        "q": path, "k": path, "v": path}: Attention (opset 23) on [1, H, T, D] / [1, Hkv, S, D]
        float32 inputs, default scale 1/sqrt(D); the output is [1, H, T, D].
    """
    import numpy as np
    import onnx
    from onnx import TensorProto, helper

    kind = spec["kind"]
    if kind == "sce":
        n, c = spec["n"], spec["c"]
        inputs = {
            "x": np.fromfile(spec["x"], dtype="<f4").reshape(n, c),
            "t": np.fromfile(spec["t"], dtype="<i4").astype(np.int64),
        }
        vi = [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [n, c]),
            helper.make_tensor_value_info("t", TensorProto.INT64, [n]),
        ]
        node = helper.make_node("SoftmaxCrossEntropyLoss", ["x", "t"], ["y"], reduction="mean")
        out_shape, opset = [], 13
    elif kind == "attention":
        h, hkv, t, s, d = spec["h"], spec["hkv"], spec["t"], spec["s"], spec["d"]
        inputs = {
            "q": np.fromfile(spec["q"], dtype="<f4").reshape(1, h, t, d),
            "k": np.fromfile(spec["k"], dtype="<f4").reshape(1, hkv, s, d),
            "v": np.fromfile(spec["v"], dtype="<f4").reshape(1, hkv, s, d),
        }
        vi = [
            helper.make_tensor_value_info("q", TensorProto.FLOAT, [1, h, t, d]),
            helper.make_tensor_value_info("k", TensorProto.FLOAT, [1, hkv, s, d]),
            helper.make_tensor_value_info("v", TensorProto.FLOAT, [1, hkv, s, d]),
        ]
        node = helper.make_node("Attention", ["q", "k", "v"], ["y"], is_causal=int(spec["causal"]))
        out_shape, opset = [1, h, t, d], 23
    else:
        raise ValueError(f"unknown kind {kind}")
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, out_shape)
    graph = helper.make_graph([node], "peer", vi, [y])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 10
    onnx.checker.check_model(model)
    return model.SerializeToString(), inputs, out_shape


class Loaded:
    def __init__(self, op, rows, n, x):
        self.bind(session(op, rows, n), {"x": x}, x.shape)

    @classmethod
    def from_json(cls, spec):
        import onnxruntime as ort

        model, inputs, out_shape = build_json(spec)
        self = cls.__new__(cls)
        self.bind(ort.InferenceSession(model, options(), providers=["CPUExecutionProvider"]),
                  inputs, out_shape)
        return self

    def bind(self, sess, inputs, out_shape):
        import numpy as np
        import onnxruntime as ort

        self.sess = sess
        self.y = np.empty(out_shape, dtype=np.float32)
        self.values = {k: ort.OrtValue.ortvalue_from_numpy(v) for k, v in inputs.items()}
        self.yo = ort.OrtValue.ortvalue_from_numpy(self.y)
        self.binding = self.sess.io_binding()
        for k, v in self.values.items():
            self.binding.bind_ortvalue_input(k, v)
        self.binding.bind_ortvalue_output("y", self.yo)
        self.sess.run_with_iobinding(self.binding)  # warm-up

    def run(self, reps):
        run = self.sess.run_with_iobinding
        b = self.binding
        t = time.perf_counter()
        for _ in range(reps):
            run(b)
        return time.perf_counter() - t


def overhead_ns():
    import numpy as np

    one = Loaded("Softmax", 1, 1, np.zeros((1, 1), dtype=np.float32))
    reps = 20000
    best = min(one.run(reps) for _ in range(5))
    return best / reps * 1e9


def main():
    venv = DEFAULT_VENV
    if len(sys.argv) == 3 and sys.argv[1] == "--venv":
        venv = sys.argv[2]
    try:
        ensure_venv(venv)
        import numpy as np
        import onnxruntime as ort
    except Exception as e:  # the Rust side prints this and goes on without the peer
        reply(f"err cannot set up onnxruntime: {e}")
        return
    loaded = None
    for line in sys.stdin:
        words = line.split()
        if not words:
            continue
        try:
            if words[0] == "hello":
                reply(f"ok {ort.__version__} {overhead_ns():.1f}")
            elif words[0] == "load":
                op, rows, n, path = words[1], int(words[2]), int(words[3]), words[4]
                x = np.fromfile(path, dtype="<f4").reshape(rows, n)
                loaded = Loaded(op, rows, n, x)
                reply("ok")
            elif words[0] == "loadjson":
                import json

                loaded = Loaded.from_json(json.loads(line.split(None, 1)[1]))
                reply("ok")
            elif words[0] == "run":
                reply(f"ok {loaded.run(int(words[1])):.9f}")
            elif words[0] == "dump":
                loaded.y.astype("<f4").tofile(words[1])
                reply("ok")
            elif words[0] == "quit":
                return
            else:
                reply(f"err unknown command {words[0]}")
                return
        except Exception as e:
            reply(f"err {type(e).__name__}: {e}")
            return


if __name__ == "__main__":
    main()
