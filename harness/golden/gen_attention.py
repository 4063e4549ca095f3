"""Golden vectors for attention-core (called by gen.py's main, or alone:
`cd harness/golden && python -c "import gen, gen_attention; gen_attention.build(gen.write)"`).

attention_ort.json: onnxruntime's opset-23 `Attention` operator (float32, one thread, 4-D
[1, H, T, D] layout), causal and not, multi-head and grouped-query, a boolean and a float
(additive) attn_mask, soft-capping without a mask, T != S, and a key count (130) across
attention-core's 128-key blocks. Each case holds the inputs in the protocol's fields
(CONFORMANCE.md, "Attention": `causal` is "top_left" where ONNX's is_causal = 1, which this
generator verifies against both alignments; a float attn_mask becomes `bias`, repeated over
the heads), `o_ort` (onnxruntime's output) and `o_ref` (a float64 numpy computation of the same
formula from the same f32 inputs).

ONNX applies the soft-cap after adding attn_mask and scales Q and K by sqrt(scale) each; the
CONFORMANCE formula caps first and scales q·k once: the two agree when there is no mask (the
soft-cap cases have none), and the scaling differs only by rounding.
"""

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper

import gen

SECTION = 80


def f32(a):
    return np.asarray(a, dtype=np.float32)


def ort_attention(q, k, v, is_causal, scale=None, softcap=None, mask=None):
    """onnxruntime opset-23 Attention on [1, H, T, D] float32 tensors."""
    inputs = [
        helper.make_tensor_value_info("Q", TensorProto.FLOAT, list(q.shape)),
        helper.make_tensor_value_info("K", TensorProto.FLOAT, list(k.shape)),
        helper.make_tensor_value_info("V", TensorProto.FLOAT, list(v.shape)),
    ]
    feeds = {"Q": q, "K": k, "V": v}
    names = ["Q", "K", "V"]
    if mask is not None:
        et = TensorProto.BOOL if mask.dtype == bool else TensorProto.FLOAT
        inputs.append(helper.make_tensor_value_info("M", et, list(mask.shape)))
        feeds["M"] = mask
        names.append("M")
    attrs = {"is_causal": int(is_causal)}
    if scale is not None:
        attrs["scale"] = float(scale)
    if softcap is not None:
        attrs["softcap"] = float(softcap)
    node = helper.make_node("Attention", names, ["Y"], **attrs)
    y_shape = [q.shape[0], q.shape[1], q.shape[2], v.shape[3]]
    out = helper.make_tensor_value_info("Y", TensorProto.FLOAT, y_shape)
    g = helper.make_graph([node], "attention", inputs, [out])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 23)])
    model.ir_version = 10
    onnx.checker.check_model(model)
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)[0]


def ref_attention(q, k, v, causal, scale, softcap=None, keep=None, bias=None):
    """float64 attention by the CONFORMANCE formula; causal 0 none, 1 bottom-right, 2 top-left."""
    q, k, v = (np.asarray(a, np.float64) for a in (q, k, v))
    _, h, t, d = q.shape
    hkv, s = k.shape[1], k.shape[2]
    grp = h // hkv
    out = np.zeros((1, h, t, v.shape[3]))
    for hh in range(h):
        g = hh // grp
        z = scale * (q[0, hh] @ k[0, g].T)
        if softcap is not None:
            z = softcap * np.tanh(z / softcap)
        if bias is not None:
            z = z + bias
        allowed = np.ones((t, s), bool)
        if causal:
            qpos = np.arange(t)[:, None] + (s - t if causal == 1 else 0)
            allowed &= np.arange(s)[None, :] <= qpos
        if keep is not None:
            allowed &= keep
        z = np.where(allowed, z, -np.inf)
        for i in range(t):
            row = z[i]
            if not np.isfinite(row).any():
                continue
            m = row[np.isfinite(row)].max()
            p = np.exp(row - m)
            p /= p.sum()
            out[0, hh, i] = p @ v[0, g]
    return out


def build(write):
    rng = gen.rng_for(SECTION)
    cases = []

    def add(name, h, hkv, t, s, d, dv, is_causal=False, scale=None, softcap=None, mask=None):
        q = f32(rng.standard_normal((1, h, t, d)))
        k = f32(rng.standard_normal((1, hkv, s, d)))
        v = f32(rng.standard_normal((1, hkv, s, dv)))
        m = None
        if mask == "bool":
            m = rng.random((t, s)) < 0.75
            m[:, 0] = True  # every query keeps a key (ORT's all-masked rows are not specified)
        elif mask == "float":
            m = f32(rng.standard_normal((t, s)))
        y = ort_attention(q, k, v, is_causal, scale, softcap, m)
        sc = scale if scale is not None else 1.0 / np.sqrt(d)
        keep = m if mask == "bool" else None
        bias = m.astype(np.float64) if mask == "float" else None
        if is_causal:
            tl = ref_attention(q, k, v, 2, sc, softcap, keep, bias)
            br = ref_attention(q, k, v, 1, sc, softcap, keep, bias)
            err_tl, err_br = np.abs(y - tl).max(), np.abs(y - br).max()
            assert err_tl < 1e-4, f"{name}: ORT is_causal is not top-left ({err_tl})"
            if t != s:
                assert err_br > 1e-3, f"{name}: alignment not distinguished"
            ref = tl
        else:
            ref = ref_attention(q, k, v, 0, sc, softcap, keep, bias)
        assert np.abs(y - ref).max() < 1e-4, name
        c = {
            "name": name,
            "heads": h,
            "kv_heads": hkv,
            "t": t,
            "s": s,
            "d": d,
            "dv": dv,
            "q": gen.Arr(q.reshape(-1), "f32"),
            "k": gen.Arr(k.reshape(-1), "f32"),
            "v": gen.Arr(v.reshape(-1), "f32"),
            "causal": "top_left" if is_causal else "none",
        }
        if scale is not None:
            c["scale"] = gen.Num(float(np.float32(scale)), "f32")
        if softcap is not None:
            c["softcap"] = gen.Num(float(np.float32(softcap)), "f32")
        if mask == "bool":
            c["mask"] = [bool(x) for x in m.reshape(-1)]
        if mask == "float":
            c["bias"] = gen.Arr(np.tile(m.reshape(-1), h), "f32")
        c["o_ort"] = gen.Arr(y.reshape(-1), "f32")
        c["o_ref"] = gen.Arr(ref.reshape(-1), "f64")
        cases.append(c)

    add("mha", 2, 2, 5, 7, 8, 8)
    add("mha_scale", 2, 2, 4, 9, 16, 4, scale=0.3)
    add("causal_square", 2, 2, 6, 6, 8, 8, is_causal=True)
    add("causal_t_lt_s", 2, 2, 3, 8, 8, 8, is_causal=True)
    add("causal_t_gt_s", 1, 1, 6, 4, 4, 4, is_causal=True)
    add("gqa", 4, 2, 5, 7, 8, 6)
    add("mqa_causal", 4, 1, 7, 7, 8, 8, is_causal=True)
    add("bool_mask", 2, 2, 5, 9, 8, 8, mask="bool")
    add("bool_mask_gqa_causal", 4, 2, 6, 6, 8, 8, is_causal=True, mask="bool")
    add("float_mask", 2, 2, 5, 9, 8, 8, mask="float")
    add("float_mask_gqa", 6, 2, 4, 7, 8, 8, mask="float")
    add("softcap", 2, 2, 5, 7, 8, 8, softcap=2.0, scale=0.5)
    add("softcap_causal_gqa", 4, 2, 6, 6, 8, 8, is_causal=True, softcap=1.5)
    add("long_causal", 2, 1, 3, 130, 16, 16, is_causal=True)
    add("long_mask", 2, 2, 2, 100, 8, 8, mask="bool")
    return write(
        "attention_ort.json",
        "onnxruntime opset-23 Attention (float32, 1 thread): o_ort; o_ref = float64 numpy of the same formula",
        cases,
    )
