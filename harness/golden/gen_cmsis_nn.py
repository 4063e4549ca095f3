#!/usr/bin/env python3
"""CMSIS-NN's unit-test vectors for the quantized softmax, as JSON, with their provenance.

Produces harness/golden/cmsis_nn_softmax.json from a checkout (or bare clone) of
https://github.com/ARM-software/CMSIS-NN: the three TestData directories `softmax` (int8 ->
int8, `arm_softmax_s8`), `softmax_s8_s16` (`arm_softmax_s8_s16`) and `softmax_s16`
(`arm_softmax_s16`) — inputs, the integer parameters (mult, shift, diff_min) and the reference
outputs, which CMSIS-NN generated with the TensorFlow Lite interpreter — and the two int16 lookup
tables CMSIS-NN commits (`Tests/UnitTest/TestCases/Common/Softmax/*_lut_data.h`).

Run (standard library only; git on PATH):

    python3 harness/golden/gen_cmsis_nn.py /path/to/CMSIS-NN [commit]

The values are copied verbatim (parsed from the C headers); nothing is recomputed here.
"""

import json
import re
import subprocess
import sys

REPO = sys.argv[1] if len(sys.argv) > 1 else "/work/.mirror/ARM-software+CMSIS-NN/repo"
COMMIT = sys.argv[2] if len(sys.argv) > 2 else "HEAD"


def show(path):
    return subprocess.run(["git", "-C", REPO, "show", f"{COMMIT}:{path}"], check=True,
                          capture_output=True, text=True).stdout


def array(text, name):
    m = re.search(r"\b" + re.escape(name) + r"\[\d*\]\s*=\s*\{([^}]*)\}", text)
    if not m:
        raise SystemExit(f"{name} not found")
    return [int(v) for v in m.group(1).replace("\n", " ").split(",") if v.strip()]


def defines(text):
    return {k: int(v) for k, v in re.findall(r"#define\s+(\w+)\s+(-?\d+)", text)}


commit = subprocess.run(["git", "-C", REPO, "rev-parse", COMMIT], check=True,
                        capture_output=True, text=True).stdout.strip()
data = "Tests/UnitTest/TestCases/TestData"
cases = []
for kernel, d, prefix, in_t, out_t in [
    ("arm_softmax_s8", "softmax", "SOFTMAX", "int8", "int8"),
    ("arm_softmax_s8_s16", "softmax_s8_s16", "SOFTMAX_S8_S16", "int8", "int16"),
    ("arm_softmax_s16", "softmax_s16", "SOFTMAX_S16", "int16", "int16"),
]:
    cfg = defines(show(f"{data}/{d}/config_data.h"))
    case = {
        "kernel": kernel,
        "source": f"{data}/{d}/",
        "input_type": in_t,
        "output_type": out_t,
        "num_rows": cfg[f"{prefix}_NUM_ROWS"],
        "row_size": cfg[f"{prefix}_ROW_SIZE"],
        "input_multiplier": cfg[f"{prefix}_INPUT_MULT"],
        "input_left_shift": cfg[f"{prefix}_INPUT_LEFT_SHIFT"],
        "x": array(show(f"{data}/{d}/input_data.h"), f"{d}_input"),
        "y": array(show(f"{data}/{d}/output_ref_data.h"), f"{d}_output_ref"),
    }
    if f"{prefix}_DIFF_MIN" in cfg:
        case["diff_min"] = cfg[f"{prefix}_DIFF_MIN"]
    assert len(case["x"]) == len(case["y"]) == case["num_rows"] * case["row_size"]
    cases.append(case)

common = "Tests/UnitTest/TestCases/Common/Softmax"
out = {
    "provenance": {
        "repository": "https://github.com/ARM-software/CMSIS-NN",
        "commit": commit,
        "license": "Apache-2.0 (the data files' SPDX header)",
        "generator": "harness/golden/gen_cmsis_nn.py",
        "note": "CMSIS-NN generated these with the TensorFlow Lite interpreter "
                "(the headers say: generate_test_data.py, TFL version 2.6.0).",
    },
    "cases": cases,
    "exp_lut": array(show(f"{common}/exp_lut_data.h"), "softmax_s16_exp_lut"),
    "one_by_one_lut": array(show(f"{common}/one_by_one_lut_data.h"), "softmax_s16_one_by_one_lut"),
}
assert len(out["exp_lut"]) == len(out["one_by_one_lut"]) == 513
with open("harness/golden/cmsis_nn_softmax.json", "w") as f:
    json.dump(out, f, indent=1)
    f.write("\n")
print("wrote", len(cases), "cases and two 513-entry tables from", commit)
