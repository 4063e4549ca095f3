#!/usr/bin/env python3
"""Golden vectors for the reduced-precision KV cache formats (`kv_dtype`), from numpy alone.

    python3 harness/golden/gen_kv.py     # rewrites harness/golden/kv_readback.json (deterministic)

Each row of f32 values is stored, as CONFORMANCE.md ("Reduced-precision KV cache") defines it,
in the three formats of `kv_dtype`, and read back to f32:

* f16: IEEE binary16, round to nearest, ties to even. Computed here on the float32 bit pattern
  with Python integers (the value as an integer significand times a power of two, shifted to
  the f16 grid of its binade with an explicit round-half-even on the bits shifted out), and
  checked against numpy's own float32 -> float16 cast (`astype(np.float16)`) for every value.
* bf16: bfloat16, round to nearest, ties to even, on the float32 bit pattern in numpy uint32
  arithmetic: `(b + 0x7fff + ((b >> 16) & 1)) >> 16`; read back as `hi << 16`.
* int8: per row `amax = max |x|` (float32), `s = amax / 127` (one np.float32 division),
  `q = round(x / s)` with the division in np.float32 and round half away from zero done in
  float32 as `t = trunc(|y|)`, `t + (|y| - t >= 0.5)` (the fraction is exact: |y| < 2^23),
  clamped to 127, the sign of y put back (`q = 0` when `s = 0`); read back as
  `np.float32(q) * s`. Every float32 operation (the scale, each quotient, each read-back
  product) is checked against exact rational arithmetic (`fractions.Fraction`): it must be
  the correctly rounded result, so no flush-to-zero or double rounding slipped in; `q` is
  checked against `floor(|y| + 1/2)` in exact arithmetic.
* A row with NaN or +-inf cannot be stored in any format; an f16 / bf16 row with a finite
  value that rounds to +-inf cannot be stored in that format: "not storable".

File format: {"meta": {...}, "rows": [...]}, one row per line:

    name    unique; "<class>/<detail>"
    class   the coverage class (meta.counts gives the rows per class)
    x       the f32 values, as their bit patterns ("0x3f800000"): NaN payloads and the sign of
            zero are exact
    f16     {"read": [f32 bit patterns]} or "not storable"
    bf16    {"read": [f32 bit patterns]} or "not storable"
    int8    {"scale": f32 bit pattern, "q": [integers], "read": [f32 bit patterns]} or
            "not storable"

`harness/tests/golden_kv.rs` checks softmax-core's `Stored::store_row` + `Operand::load` and
attention-core's KV cache `push` against every row.
"""

import json
import math
import os
import platform
from fractions import Fraction

import numpy as np

SEED = 20261126
HERE = os.path.dirname(os.path.abspath(__file__))
OUT = "kv_readback.json"

F32 = np.float32
F32_MAX = F32(np.finfo(np.float32).max)
# The smallest magnitude that rounds to +-inf in float32: 2^128 - 2^103 (half an ulp above max).
OVERFLOW = Fraction(2**128 - 2**103)
NOT_STORABLE = "not storable"


def f32_of_bits(b):
    return np.array([b], dtype=np.uint32).view(np.float32)[0]


def bits_of(v):
    return int(np.array([v], dtype=np.float32).view(np.uint32)[0])


def hex32(b):
    return f"0x{int(b):08x}"


def row_of(values):
    """A float32 row from ("bits", b) pairs and floats (each rounded to the nearest float32:
    the row holds what the file records, its bit patterns)."""
    out = [f32_of_bits(v[1]) if isinstance(v, tuple) else F32(v) for v in values]
    return np.array(out, dtype=np.float32)


# ------------------------------------------------------------------------------------------------
# Exact-arithmetic checks
# ------------------------------------------------------------------------------------------------


def check_rn(v, exact, what):
    """v (np.float32) must be `exact` (a Fraction) rounded to nearest float32, ties to even."""
    v = F32(v)
    if math.isinf(v):
        assert abs(exact) >= OVERFLOW and (exact > 0) == (v > 0), f"{what}: {v} for {exact}"
        return
    d = abs(Fraction(float(v)) - exact)
    for direction in (np.inf, -np.inf):
        n = np.nextafter(v, F32(direction))
        # Past the largest float32, rounding goes to +-inf as if to +-2^128 (an even neighbour).
        fn = Fraction(2**128) * (1 if n > 0 else -1) if math.isinf(n) else Fraction(float(n))
        dn = abs(fn - exact)
        assert d <= dn, f"{what}: {v!r} is not the nearest float32 to {float(exact)!r}"
        if d == dn:
            assert bits_of(v) & 1 == 0, f"{what}: a tie not to even ({v!r})"


# ------------------------------------------------------------------------------------------------
# The formats
# ------------------------------------------------------------------------------------------------


def f16_bits_of_f32(b):
    """binary16 bits of the finite float32 with bits b, rounded to nearest even; None if the
    result is +-inf."""
    sign = (b >> 31) << 15
    e, m = (b >> 23) & 0xFF, b & 0x7FFFFF
    assert e != 0xFF
    sig, e2 = (m, -149) if e == 0 else (m | 0x800000, e - 150)  # |x| = sig * 2^e2
    if sig == 0:
        return sign
    top = e2 + sig.bit_length() - 1  # |x| in [2^top, 2^(top+1))
    ulp = max(top, -14) - 10  # f16's grid in that binade (subnormals: 2^-24)
    sh = ulp - e2
    if sh <= 0:
        n = sig << -sh
    else:
        n, rem, half = sig >> sh, sig & ((1 << sh) - 1), 1 << (sh - 1)
        if rem > half or (rem == half and n & 1):
            n += 1
    # n counts grid steps: a subnormal's bits are n (n = 1024 is 2^-14, the smallest normal);
    # a normal's are its exponent field and n - 1024 (n = 2048 carries into the exponent).
    mag = n if top < -14 else ((top + 15) << 10) + n - 1024
    if mag >= 0x7C00:
        return None
    return sign | mag


def f32_of_f16_bits(h):
    ef, mt = (h >> 10) & 0x1F, h & 0x3FF
    mag = math.ldexp(mt, -24) if ef == 0 else math.ldexp(1024 + mt, ef - 25)
    return F32(-mag if h & 0x8000 else mag)  # exact; -0.0 keeps its sign


def store_f16(x):
    if not np.all(np.isfinite(x)):
        return None
    hs = [f16_bits_of_f32(int(b)) for b in x.view(np.uint32)]
    with np.errstate(over="ignore"):
        numpy_h = x.astype(np.float16)
    if any(h is None for h in hs):
        assert not np.all(np.isfinite(numpy_h)), x
        return None
    assert list(numpy_h.view(np.uint16)) == hs, ("numpy float16 disagrees", x)
    read = np.array([f32_of_f16_bits(h) for h in hs], dtype=np.float32)
    assert np.array_equal(read.view(np.uint32), numpy_h.astype(np.float32).view(np.uint32))
    return read


def store_bf16(x):
    if not np.all(np.isfinite(x)):
        return None
    b = x.view(np.uint32)
    hi = (b + np.uint32(0x7FFF) + ((b >> np.uint32(16)) & np.uint32(1))) >> np.uint32(16)
    assert hi.dtype == np.uint32
    if np.any((hi & np.uint32(0x7F80)) == np.uint32(0x7F80)):
        return None  # rounded to +-inf
    return (hi << np.uint32(16)).view(np.float32)


def store_int8(x):
    if not np.all(np.isfinite(x)):
        return None
    with np.errstate(over="ignore", under="ignore"):
        amax = np.max(np.abs(x))
        s = amax / F32(127)
        assert isinstance(s, np.float32)
        check_rn(s, Fraction(float(amax)) / 127, "scale")
        if s == 0:
            q = np.zeros(len(x), dtype=np.int64)
        else:
            y = x / s
            assert y.dtype == np.float32
            a = np.abs(y)
            t = np.trunc(a)
            frac = a - t  # exact: a < 2^23
            r = np.minimum(t + (frac >= F32(0.5)).astype(np.float32), F32(127))
            q = np.where(y < 0, -r, r).astype(np.int64)
            for xi, yi, qi in zip(x, y, q):
                check_rn(yi, Fraction(float(xi)) / Fraction(float(s)), "quotient")
                fy = Fraction(float(yi))
                exact_q = min(math.floor(abs(fy) + Fraction(1, 2)), 127)
                assert qi == (-exact_q if fy < 0 else exact_q), (xi, yi, qi)
        read = q.astype(np.float32) * s
        assert read.dtype == np.float32
        for qi, ri in zip(q, read):
            check_rn(ri, int(qi) * Fraction(float(s)), "read-back")
    return s, q, read


# ------------------------------------------------------------------------------------------------
# Rows
# ------------------------------------------------------------------------------------------------


def rng_for(section):
    return np.random.default_rng([SEED, section])


def rows_normal():
    rng = rng_for(1)
    return [(f"normal/n{n}", rng.standard_normal(n).astype(np.float32)) for n in range(1, 131)]


def rows_dynamic_range():
    rng = rng_for(2)
    out = []
    # (lo, hi) of log2 |x|: within f16's range (its subnormals included), f32's whole range,
    # the small and the large halves.
    for lo, hi in [(-30.0, 15.99), (-149.0, 127.99), (-126.0, 0.0), (0.0, 127.99), (-24.0, 15.0)]:
        for i in range(5):
            n = int(rng.integers(2, 41))
            mag = np.exp2(rng.uniform(lo, hi, n))
            x = (mag * rng.choice([-1.0, 1.0], n)).astype(np.float32)
            assert np.all(np.isfinite(x))
            out.append((f"dynamic_range/2^{lo:g}..2^{hi:g}/{i}", x))
    return out


def rows_random_bits():
    """Uniformly random finite bit patterns: every binade, f32 subnormals, both signs."""
    rng = rng_for(3)
    out = []
    for i in range(8):
        b = rng.integers(0, 2**32, 64, dtype=np.uint64).astype(np.uint32)
        b = b[(b & np.uint32(0x7F800000)) != np.uint32(0x7F800000)][:48]
        assert len(b) == 48
        out.append((f"random_bits/all/{i}", b.view(np.float32)))
    for i in range(8):
        # |x| < 2^16: exponent field <= 142 (f16's range and just beyond it).
        e = rng.integers(0, 143, 48, dtype=np.uint64).astype(np.uint32)
        m = rng.integers(0, 2**23, 48, dtype=np.uint64).astype(np.uint32)
        sgn = rng.integers(0, 2, 48, dtype=np.uint64).astype(np.uint32)
        b = (sgn << np.uint32(31)) | (e << np.uint32(23)) | m
        out.append((f"random_bits/below_2^16/{i}", b.view(np.float32)))
    return out


def rows_f16_subnormal():
    rng = rng_for(4)
    u = 2.0**-24  # f16's smallest subnormal
    out = [
        ("f16_subnormal/grid", row_of([k * u for k in [1, 2, 3, 511, 512, 1000, 1022, 1023]])),
        # Exact ties between subnormals: to the even neighbour.
        ("f16_subnormal/ties", row_of([(k + 0.5) * u for k in [0, 1, 2, 3, 100, 101, 1021, 1022]])),
        # 1023.5 u ties between the largest subnormal and 2^-14 (1024 u, even): up, to the normal.
        ("f16_subnormal/to_normal", row_of([1023.5 * u, -1023.5 * u, 1023.25 * u, 1023.75 * u])),
        # Around half the smallest subnormal: 2^-25 ties to 0; just above goes to 2^-24.
        (
            "f16_subnormal/half_smallest",
            row_of([2.0**-25, ("bits", bits_of(2.0**-25) + 1), ("bits", bits_of(2.0**-25) - 1), 2.0**-26]),
        ),
        ("f16_subnormal/negative_ties", row_of([-(k + 0.5) * u for k in [0, 1, 2, 7, 8, 1022]])),
        # f32 subnormals: far below f16's grid, they round to a signed zero.
        ("f16_subnormal/f32_subnormals", row_of([2.0**-149, -(2.0**-149), 2.0**-130, -(2.0**-127)])),
    ]
    for i in range(4):
        x = (rng.uniform(-(2.0**-14), 2.0**-14, 32)).astype(np.float32)
        out.append((f"f16_subnormal/random/{i}", x))
    return out


def rows_f16_overflow():
    below_65520 = ("bits", bits_of(65520.0) - 1)  # 65519.996: rounds down to 65504
    return [
        ("f16_overflow/65504", row_of([65504.0])),
        ("f16_overflow/65519.996", row_of([below_65520])),
        ("f16_overflow/-65519.996", row_of([("bits", bits_of(-65520.0) - 1)])),
        ("f16_overflow/65520", row_of([65520.0])),
        ("f16_overflow/-65520", row_of([-65520.0])),
        ("f16_overflow/65536", row_of([65536.0])),
        ("f16_overflow/70000", row_of([70000.0])),
        # 65488 ties between 65472 (even) and 65504: down.
        ("f16_overflow/65488_tie", row_of([65488.0, -65488.0, 65487.996, 65488.004])),
        ("f16_overflow/max_with_small", row_of([65504.0, -65504.0, 1.0, -0.5, 1e-3])),
        ("f16_overflow/boundary_with_small", row_of([below_65520, 2.0, -3.0])),
        # One value past the boundary makes the whole row not storable.
        ("f16_overflow/one_past_boundary", row_of([1.0, 2.0, 65520.0, 3.0])),
        ("f16_overflow/1e5_negative", row_of([0.25, -1e5])),
    ]


def rows_f16_ties():
    """Normal f16 range: float32 patterns whose 13 bits below f16's mantissa are exactly half
    (0x1000), just below (0x0fff) and just above (0x1001)."""
    rng = rng_for(5)
    out = []
    for low, label in [(0x1000, "tie"), (0x0FFF, "below"), (0x1001, "above")]:
        for i in range(2):
            e = rng.integers(113, 143, 24, dtype=np.uint64).astype(np.uint32)  # 2^-14 .. 2^15
            m = rng.integers(0, 2**10, 24, dtype=np.uint64).astype(np.uint32) << np.uint32(13)
            sgn = rng.integers(0, 2, 24, dtype=np.uint64).astype(np.uint32) << np.uint32(31)
            b = sgn | (e << np.uint32(23)) | m | np.uint32(low)
            out.append((f"f16_ties/{label}/{i}", b.view(np.float32)))
    # Ties at 1 (1 + 2^-11: to 1; 1 + 3*2^-11: to 1 + 2^-9) and at the top binade.
    out.append(("f16_ties/at_one", row_of([1 + 2.0**-11, 1 + 3 * 2.0**-11, -(1 + 2.0**-11), 2048 + 1.0, 2048 + 3.0])))
    out.append(("f16_ties/top_binade", row_of([32768 + 16.0, 32768 + 48.0, 65504 - 16.0, -(65504 - 16.0)])))
    return out


def rows_bf16_ties():
    rng = rng_for(6)
    out = []
    for low, label in [(0x8000, "tie"), (0x7FFF, "below"), (0x8001, "above")]:
        for i in range(2):
            # Every exponent but the top two binades' overflow region and inf/NaN: 0 .. 253.
            e = rng.integers(0, 254, 32, dtype=np.uint64).astype(np.uint32)
            m = rng.integers(0, 2**7, 32, dtype=np.uint64).astype(np.uint32) << np.uint32(16)
            sgn = rng.integers(0, 2, 32, dtype=np.uint64).astype(np.uint32) << np.uint32(31)
            b = sgn | (e << np.uint32(23)) | m | np.uint32(low)
            out.append((f"bf16_ties/{label}/{i}", b.view(np.float32)))
    # Ties in the f32 subnormals (exponent field 0): to even, possibly into the normals.
    out.append(
        (
            "bf16_ties/subnormal",
            row_of([("bits", 0x00008000), ("bits", 0x00018000), ("bits", 0x007F8000), ("bits", 0x80008000)]),
        )
    )
    out.append(("bf16_ties/at_one", row_of([("bits", 0x3F808000), ("bits", 0x3F818000), ("bits", 0xBF808000)])))
    return out


def rows_bf16_max():
    """bf16's largest finite value is 0x7f7f (3.3895314e38); halfway to 2^128 is the f32
    0x7f7f8000 = 2^128 - 2^119 = 3.3961775e38, a tie that goes to the even neighbour: +inf.
    (3.3961514e38, a figure once quoted for this boundary, is the f32 0x7f7f7f7f, below it:
    storable, as the row "bf16_max/3.3961514e38" records.)"""
    return [
        ("bf16_max/0x7f7f0000_bf16_max", row_of([("bits", 0x7F7F0000)])),
        ("bf16_max/3.3961514e38", row_of([3.3961514e38])),
        ("bf16_max/0x7f7f7fff_below_tie", row_of([("bits", 0x7F7F7FFF)])),
        ("bf16_max/0x7f7f8000_tie_to_inf", row_of([("bits", 0x7F7F8000)])),
        ("bf16_max/0xff7f8000_tie_to_-inf", row_of([("bits", 0xFF7F8000)])),
        ("bf16_max/0xff7f7fff_below_tie", row_of([("bits", 0xFF7F7FFF)])),
        ("bf16_max/0x7f7fffff_f32_max", row_of([("bits", 0x7F7FFFFF)])),
        ("bf16_max/3.4e38", row_of([3.4e38])),
        ("bf16_max/below_tie_with_small", row_of([("bits", 0x7F7F7FFF), 1.0, -2.0, 1e-30])),
        ("bf16_max/one_tie_in_row", row_of([1.0, ("bits", 0x7F7F8000), -2.0])),
    ]


def quotient_ties(rng, count):
    """A row whose first value is its amax, then values x whose f32 quotient x / s is exactly
    k + 1/2 (ties, away from zero) or the float32 just below k + 1/2 (down to k). With a random
    scale the exact quotient is almost never k + 1/2: these ties are made by the f32 division's
    rounding, which the spec's "division in f32" makes part of the answer. Returns the row and
    how many of its ties are not ties in exact arithmetic."""
    amax = F32(rng.uniform(0.5, 4.0))
    s = amax / F32(127)
    xs, created = [amax], 0
    for _ in range(100000):
        if len(xs) > count:
            break
        k = int(rng.integers(0, 127))
        half = F32(k + 0.5)
        below = np.nextafter(half, F32(0))
        cb = bits_of(F32((k + 0.5) * float(s)))
        tie = low = None
        for j in range(-6, 7):
            x = f32_of_bits(cb + j)
            if x > amax:
                continue
            if tie is None and F32(x / s) == half:
                tie = x
            if low is None and F32(x / s) == below:
                low = x
        if tie is None or low is None:
            continue
        created += Fraction(float(tie)) / Fraction(float(s)) != Fraction(2 * k + 1, 2)
        sign = -1 if rng.integers(0, 2) else 1
        xs += [F32(sign * tie), F32(-sign * low)]
    assert len(xs) > count, "too few quotient ties"
    return np.array(xs, dtype=np.float32), created


def rows_int8_ties():
    rng = rng_for(7)
    out = [
        # s = 1: x / s is x; halves away from zero.
        (
            "int8_ties/scale_1",
            row_of(
                [127.0, 0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 63.5, -63.5, 126.5, -126.5]
                + [0.49999997, -0.49999997, 0.50000006, 126.49999]
            ),
        ),
        # s = 1/4 and s = 2^-10: exact ties again.
        ("int8_ties/scale_quarter", row_of([-31.75, 0.125, 0.375, -0.625, 31.625, -31.625, 15.875])),
        ("int8_ties/scale_2^-10", row_of([127 * 2.0**-10, 0.5 * 2.0**-10, -2.5 * 2.0**-10, 100.5 * 2.0**-10])),
    ]
    made = 0
    for i in range(6):
        x, created = quotient_ties(rng, 24)
        made += created
        out.append((f"int8_ties/quotient/{i}", x))
    assert made > 0, "no tie created by the f32 division"
    return out


def rows_zeros():
    return [
        ("zeros/one", row_of([0.0])),
        ("zeros/one_negative", row_of([-0.0])),
        ("zeros/five", row_of([0.0] * 5)),
        ("zeros/five_negative", row_of([-0.0] * 5)),
        ("zeros/mixed_signs", row_of([0.0, -0.0, 0.0, -0.0])),
        ("zeros/n130", row_of([0.0] * 130)),
    ]


def rows_signed_zeros():
    return [
        ("signed_zeros/among_ones", row_of([1.0, -0.0, 0.0, -1.0])),
        ("signed_zeros/among_small", row_of([-0.0, 3.5, -2.25e-3, 0.0])),
        # Negative values that round to zero: f16 / bf16 keep the sign, int8's q = 0 reads +0.
        ("signed_zeros/negative_underflow", row_of([-1e-40, -0.0, 2.0, -1e-5, -0.0078])),
        ("signed_zeros/int8_small_negatives", row_of([100.0, -0.39, -0.393, 0.39])),
    ]


def rows_tiny_amax():
    """Rows whose scale amax/127 is an f32 subnormal (amax < 127 * 2^-126), or underflows to 0
    (amax <= 63 * 2^-149), where q saturates and the grid is coarse."""
    rng = rng_for(8)
    t = 2.0**-149
    out = []
    for k in [1, 2, 63, 64, 65, 100, 127, 128, 190, 200, 254, 255, 381, 1000, 2**23 - 1, 2**23, 127 * 2**23 - 1]:
        amax = k * t
        others = sorted({int(v) for v in rng.integers(0, k + 1, 6)})
        vals = [amax] + [(-1) ** j * o * t for j, o in enumerate(others)]
        out.append((f"tiny_amax/{k}x2^-149", row_of(vals)))
    out.append(("tiny_amax/1e-38", row_of([1e-38, -5e-39, 3e-40, -1e-45])))
    out.append(("tiny_amax/min_normal", row_of([2.0**-126, -(2.0**-127), 2.0**-133, 2.0**-149])))
    return out


def rows_huge():
    """int8 near f32's top: amax = f32 max gives s = RN(max/127) with 127*s above the overflow
    threshold, so the values with q = +-127 read back as +-inf (f16 and bf16 cannot store these
    rows at all)."""
    return [
        ("huge/f32_max", row_of([("bits", 0x7F7FFFFF), -1.0, 1.0])),
        ("huge/-f32_max", row_of([("bits", 0xFF7FFFFF), 3e38, 1e38])),
        ("huge/below_max", row_of([3.4e38, -3.4e38, 1e30, -1.0])),
        ("huge/3e38", row_of([3e38, -1.5e38, 2.9e38, 1e-30])),
    ]


def rows_nonfinite():
    rng = rng_for(9)
    nan, inf = float("nan"), float("inf")
    long = rng.standard_normal(130).astype(np.float32)
    long_nan = long.copy()
    long_nan[129] = np.float32(nan)
    long_inf = long.copy()
    long_inf[0] = np.float32(-inf)
    return [
        ("nonfinite/nan", row_of([nan])),
        ("nonfinite/inf", row_of([inf])),
        ("nonfinite/-inf", row_of([-inf])),
        ("nonfinite/nan_first", row_of([nan, 1.0, 2.0])),
        ("nonfinite/nan_middle", row_of([1.0, nan, 2.0])),
        ("nonfinite/inf_last", row_of([1.0, -2.0, inf])),
        ("nonfinite/inf_and_-inf", row_of([inf, -inf])),
        ("nonfinite/nan_and_inf", row_of([nan, inf, 0.0])),
        ("nonfinite/negative_nan", row_of([("bits", 0xFFC00000), 0.5])),
        ("nonfinite/signalling_nan_payload", row_of([0.5, ("bits", 0x7F800001), ("bits", 0x7FBFFFFF)])),
        ("nonfinite/n130_nan_last", long_nan),
        ("nonfinite/n130_-inf_first", long_inf),
    ]


SECTIONS = [
    rows_normal,
    rows_dynamic_range,
    rows_random_bits,
    rows_f16_subnormal,
    rows_f16_overflow,
    rows_f16_ties,
    rows_bf16_ties,
    rows_bf16_max,
    rows_int8_ties,
    rows_zeros,
    rows_signed_zeros,
    rows_tiny_amax,
    rows_huge,
    rows_nonfinite,
]


# ------------------------------------------------------------------------------------------------
# Output
# ------------------------------------------------------------------------------------------------


def enc_bits(a):
    return [hex32(b) for b in np.asarray(a, dtype=np.float32).view(np.uint32)]


def case(name, x):
    x = np.asarray(x, dtype=np.float32)
    assert x.ndim == 1 and len(x) >= 1, name
    c = {"name": name, "class": name.split("/")[0], "x": enc_bits(x)}
    r = store_f16(x)
    c["f16"] = NOT_STORABLE if r is None else {"read": enc_bits(r)}
    r = store_bf16(x)
    c["bf16"] = NOT_STORABLE if r is None else {"read": enc_bits(r)}
    r = store_int8(x)
    if r is None:
        c["int8"] = NOT_STORABLE
    else:
        s, q, read = r
        c["int8"] = {"scale": hex32(bits_of(s)), "q": [int(v) for v in q], "read": enc_bits(read)}
    return c


def main():
    cases = [case(name, x) for section in SECTIONS for name, x in section()]
    names = [c["name"] for c in cases]
    assert len(names) == len(set(names)), "duplicate row names"
    counts = {}
    for c in cases:
        k = counts.setdefault(c["class"], {"rows": 0, "values": 0})
        k["rows"] += 1
        k["values"] += len(c["x"])
        for fmt in ("f16", "bf16", "int8"):
            key = f"{fmt}_not_storable"
            k[key] = k.get(key, 0) + (c[fmt] == NOT_STORABLE)
    # int8 values whose f32 quotient x / s is exactly k + 1/2, and how many of those are not
    # ties in exact arithmetic (made by the division's rounding).
    ties = made = 0
    for c in cases:
        if c["int8"] == NOT_STORABLE:
            continue
        x = np.array([int(b, 16) for b in c["x"]], dtype=np.uint32).view(np.float32)
        s = f32_of_bits(int(c["int8"]["scale"], 16))
        if s == 0:
            continue
        for xi in x:
            y = F32(xi / s)
            if abs(y) <= 127 and abs(y) - np.trunc(abs(y)) == 0.5:
                ties += 1
                made += Fraction(float(xi)) / Fraction(float(s)) != Fraction(float(y))
    meta = {
        "generator": "harness/golden/gen_kv.py",
        "description": "f32 rows stored as kv_dtype f16 / bf16 / int8 (CONFORMANCE.md, "
        "Reduced-precision KV cache) and read back to f32, as bit patterns",
        "seed": SEED,
        "python": platform.python_version(),
        "numpy": np.__version__,
        "rows": len(cases),
        "counts": counts,
        "int8_quotient_ties": {"values": ties, "made_by_the_f32_division": made},
    }
    text = (
        '{"meta":'
        + json.dumps(meta, separators=(",", ":"))
        + ',\n"rows":[\n'
        + ",\n".join(json.dumps(c, separators=(",", ":")) for c in cases)
        + "\n]}\n"
    )
    json.loads(text)
    with open(os.path.join(HERE, OUT), "w") as f:
        f.write(text)
    print(f"{OUT}: {len(cases)} rows, {len(text)} bytes")
    for k, v in counts.items():
        print(f"  {k:16} {v}")
    print(f"  int8 quotient ties: {ties}, made by the f32 division: {made}")


if __name__ == "__main__":
    main()
