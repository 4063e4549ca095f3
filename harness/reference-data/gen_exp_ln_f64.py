"""Correctly rounded f64 exp and ln values, computed with mpmath, for
harness/tests/backend_accuracy.rs. Deterministic: rerunning gives the same file.

    python3 gen_exp_ln_f64.py > exp_ln_f64.json

Each case is [input bits, correctly rounded output bits] as 16-digit hex strings. exp inputs are
restricted to results in the normal range (x >= -708.39), where converting a 60-digit mpmath
value to a double is a single correct rounding.
"""
import json
import random
import struct

import mpmath as mp

mp.mp.dps = 60


def bits(x):
    return "%016x" % struct.unpack("<Q", struct.pack("<d", x))[0]


def from_bits(b):
    return struct.unpack("<d", struct.pack("<Q", b))[0]


def cr(v):
    # mpmath rounds to nearest when converting to a Python float at this precision.
    return float(mp.mpf(v))


rng = random.Random(20261121)
exp_in = [rng.uniform(-708.39, 709.78) for _ in range(4000)]
exp_in += [rng.uniform(-1.0, 1.0) for _ in range(1000)]
exp_in += [rng.uniform(-1e-8, 1e-8) for _ in range(500)]
exp_in += [k * 0.6931471805599453 / 2 for k in range(-2040, 2040, 7) if -708.39 < k * 0.3465 < 709.7]
ln_in = [from_bits(rng.getrandbits(63)) for _ in range(4000)]
ln_in = [x for x in ln_in if x == x and 0 < x < float("inf")]
ln_in += [rng.uniform(0.5, 2.0) for _ in range(1000)]
ln_in += [1.0 + rng.uniform(-1e-6, 1e-6) for _ in range(500)]
ln_in += [from_bits(rng.getrandbits(52) | 1) for _ in range(300)]  # subnormal inputs

out = {
    "exp": [[bits(x), bits(cr(mp.exp(mp.mpf(x))))] for x in exp_in],
    "ln": [[bits(x), bits(cr(mp.log(mp.mpf(x))))] for x in ln_in],
}
print(json.dumps(out, separators=(",", ":")))
