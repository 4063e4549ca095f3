"""Golden vectors for loss-core (called by gen.py's main, or alone:
`cd harness/golden && python -c "import gen, gen_loss; gen_loss.build(gen.write)"`).

loss_ce.json: cross_entropy and nll_loss over the PyTorch option matrix (weight x ignore_index x
label_smoothing x reduction x probability targets), ignored rows of -inf included, f32 and f64.
`loss` comes from onnxruntime's SoftmaxCrossEntropyLoss / NegativeLogLikelihoodLoss (opset 13,
run in the case's dtype) where onnxruntime has the option (`"source": "onnxruntime"`), else from
the numpy formula of torch.nn.functional.cross_entropy (`"source": "numpy"`: label smoothing and
probability targets, which onnxruntime lacks); for the onnxruntime cases the numpy value is
asserted to agree with it here. `grad` (of the returned loss; of the sum for "none") by
complex-step differentiation of the numpy formula (exact to rounding; onnxruntime's inference
ops have no gradient).

loss_elementwise.json: bce_with_logits (weight, pos_weight), kl_div (log_target, batchmean), mse,
torchvision's sigmoid_focal_loss and the softmax focal loss, from scipy/numpy formulas, gradients
by complex step.
"""

import numpy as np

import gen

SECTION = 70


def f(v, dtype):
    return gen.Arr(v, dtype)


def lse_c(z):
    """log-sum-exp of a (possibly complex-perturbed) row; -inf entries drop out."""
    fin = np.isfinite(z.real)
    if not fin.any():
        return np.array(-np.inf, dtype=z.dtype)
    m = z.real[fin].max()
    return m + np.log(np.sum(np.exp(z[fin] - m)))


def ce_total(x, c, target, probs, weight, ignore, eps, red):
    """torch.nn.functional.cross_entropy on logits x (B*C, complex allowed)."""
    b = len(x) // c
    w = np.ones(c) if weight is None else np.asarray(weight)
    per, wsum = [], 0.0
    for n in range(b):
        row = x[n * c:(n + 1) * c]
        if probs is None:
            y = target[n]
            if y == ignore:
                per.append(0.0 * x[0])
                continue
            lp = row - lse_c(row)
            nll = -w[y] * lp[y]
            smooth = -np.sum(w * lp)
            per.append((1 - eps) * nll + eps / c * smooth)
            wsum += w[y]
        else:
            lp = row - lse_c(row)
            t = np.asarray(probs[n * c:(n + 1) * c]) * (1 - eps) + eps / c
            per.append(-np.sum(w * t * lp))
    per = np.array(per)
    if red == "none":
        return per
    s = np.sum(per)
    if red == "sum":
        return s
    return s / (b if probs is not None else wsum)


def nll_total(x, c, target, weight, ignore, red):
    b = len(x) // c
    w = np.ones(c) if weight is None else np.asarray(weight)
    per, wsum = [], 0.0
    for n in range(b):
        y = target[n]
        if y == ignore:
            per.append(0.0 * x[0])
            continue
        per.append(-w[y] * x[n * c + y])
        wsum += w[y]
    per = np.array(per)
    if red == "none":
        return per
    return np.sum(per) if red == "sum" else np.sum(per) / wsum


def csgrad(fn, x, h=1e-30):
    """Complex-step gradient of sum(fn(x)): exact to rounding for analytic fn. Entries of -inf
    (ignored rows) get 0."""
    x = np.asarray(x, dtype=np.float64)
    g = np.zeros_like(x)
    for i in range(len(x)):
        if not np.isfinite(x[i]):
            continue
        xc = x.astype(np.complex128)
        xc[i] += 1j * h
        g[i] = np.sum(fn(xc)).imag / h
    return g


def ort_loss(op, x, shape, target, weight, ignore, red, dtype):
    from onnx import TensorProto, helper

    tt = TensorProto.DOUBLE if dtype == "f64" else TensorProto.FLOAT
    npdt = np.float64 if dtype == "f64" else np.float32
    b, c = shape
    ins = [helper.make_tensor_value_info("X", tt, [b, c]),
           helper.make_tensor_value_info("T", TensorProto.INT64, [b])]
    feeds = {"X": np.asarray(x, npdt).reshape(b, c), "T": np.asarray(target, np.int64)}
    names = ["X", "T"]
    if weight is not None:
        ins.append(helper.make_tensor_value_info("W", tt, [c]))
        feeds["W"] = np.asarray(weight, npdt)
        names.append("W")
    node = helper.make_node(op, names, ["L"], reduction=red, ignore_index=ignore)
    out = helper.make_tensor_value_info("L", tt, [b] if red == "none" else [])
    g = helper.make_graph([node], "golden_loss", ins, [out])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 10
    gen.onnx.checker.check_model(model)
    so = gen.ort.SessionOptions()
    so.intra_op_num_threads = 1
    sess = gen.ort.InferenceSession(model.SerializeToString(), so,
                                    providers=["CPUExecutionProvider"])
    return [float(v) for v in np.asarray(sess.run(None, feeds)[0]).reshape(-1)]


def ce_cases(rng):
    cases = []
    b, c = 4, 6
    for dtype in ("f32", "f64"):
        for red in ("mean", "sum", "none"):
            for weighted in (False, True):
                for ignore in (-100, 2):
                    for eps in (0.0, 0.2):
                        for probs in (False, True):
                            if probs and ignore != -100:
                                continue  # PyTorch refuses ignore_index with probabilities.
                            x = gen.as_dtype(rng.normal(0, 2, b * c), dtype)
                            w = gen.as_dtype(rng.uniform(0.2, 2.0, c), dtype) if weighted else None
                            case = {"dtype": dtype, "shape": [b, c], "reduction": red,
                                    "ignore_index": ignore,
                                    "label_smoothing": gen.Num(eps, "f64")}
                            if probs:
                                p = rng.uniform(0, 1, b * c)
                                p = gen.as_dtype(p / np.repeat(p.reshape(b, c).sum(1), c), dtype)
                                t, src = None, "numpy"
                            else:
                                t = [int(v) for v in rng.integers(0, c, b)]
                                t[1] = ignore  # row 1 ignored, its logits all -inf
                                x[c:2 * c] = -np.inf
                                p = None
                                src = "onnxruntime" if eps == 0.0 else "numpy"
                            eps_d = float(gen.as_dtype([eps], dtype)[0])

                            def fn(v, t=t, p=p, w=w, ignore=ignore, eps_d=eps_d, red=red):
                                return ce_total(v, c, t, p, w, ignore, eps_d, red)

                            want = np.atleast_1d(fn(x.astype(np.complex128)).real)
                            grad = csgrad(fn, x)
                            if src == "onnxruntime":
                                got = ort_loss("SoftmaxCrossEntropyLoss", x, (b, c), t, w,
                                               ignore, red, dtype)
                                tol = 1e-5 if dtype == "f32" else 1e-12
                                assert np.allclose(got, want, rtol=tol, atol=tol), (got, want)
                                loss = got
                            else:
                                loss = [float(v) for v in want]
                            name = (f"ce_{red}_w{int(weighted)}_ig{ignore}_eps{eps}"
                                    f"_{'probs' if probs else 'index'}_{dtype}")
                            case.update({"name": name, "source": src, "logits": f(x, dtype)})
                            if w is not None:
                                case["weight"] = f(w, dtype)
                            if probs:
                                case["target_probs"] = f(p, dtype)
                            else:
                                case["target"] = t
                            case["loss"] = gen.Arr(loss, "f64")
                            case["grad"] = gen.Arr(grad, "f64")
                            cases.append(case)
        # nll_loss through onnxruntime NegativeLogLikelihoodLoss.
        for red in ("mean", "sum", "none"):
            for weighted in (False, True):
                x = gen.as_dtype(rng.uniform(-6, 0, b * c), dtype)
                w = gen.as_dtype(rng.uniform(0.2, 2.0, c), dtype) if weighted else None
                t = [int(v) for v in rng.integers(0, c, b)]
                t[2] = 4
                got = ort_loss("NegativeLogLikelihoodLoss", x, (b, c), t, w, 4, red, dtype)

                def fn(v, t=t, w=w, red=red):
                    return nll_total(v, c, t, w, 4, red)

                want = np.atleast_1d(fn(x.astype(np.complex128)).real)
                tol = 1e-6 if dtype == "f32" else 1e-14
                assert np.allclose(got, want, rtol=tol, atol=tol), (got, want)
                case = {"name": f"nll_{red}_w{int(weighted)}_{dtype}", "source": "onnxruntime",
                        "dtype": dtype, "shape": [b, c], "reduction": red, "ignore_index": 4,
                        "log_probs": f(x, dtype), "target": t}
                if w is not None:
                    case["weight"] = f(w, dtype)
                case["loss"] = gen.Arr(got, "f64")
                case["grad"] = gen.Arr(csgrad(fn, x), "f64")
                cases.append(case)
    return cases


def reduce(per, red, batch=None):
    if red == "none":
        return per
    s = np.sum(per)
    if red == "sum":
        return s
    if red == "batchmean":
        return s / batch
    return s / len(per)


def softplus_c(x):
    # log(1 + e^x) written so that it stays analytic (complex step) and does not overflow.
    return np.where(x.real > 0, x + np.log1p(np.exp(-x)), np.log1p(np.exp(x)))


def sigmoid_c(x):
    return np.where(x.real >= 0, 1 / (1 + np.exp(-x)), np.exp(x) / (1 + np.exp(x)))


def elementwise_cases(rng):
    cases = []
    b, c = 3, 5
    for dtype in ("f32", "f64"):
        for red in ("mean", "sum", "none"):
            for weighted, pos in ((False, False), (True, False), (True, True)):
                x = gen.as_dtype(rng.normal(0, 4, b * c), dtype)
                y = gen.as_dtype(rng.uniform(0, 1, b * c), dtype)
                w = gen.as_dtype(rng.uniform(0.1, 2, b * c), dtype) if weighted else None
                pw = gen.as_dtype(rng.uniform(0.5, 3, c), dtype) if pos else None

                def fn(v, y=y, w=w, pw=pw, red=red):
                    p = np.ones(b * c) if pw is None else np.tile(pw, b)
                    lw = 1 + (p - 1) * y
                    per = (1 - y) * v + lw * softplus_c(-v)
                    if w is not None:
                        per = per * w
                    return reduce(per, red)

                # scipy cross-check of the real value: −[p·y·log σ(x) + (1−y)·log σ(−x)]·w.
                p = np.ones(b * c) if pw is None else np.tile(pw, b)
                sc = -(p * y * scipy_log_expit(x) + (1 - y) * scipy_log_expit(-x))
                if w is not None:
                    sc = sc * w
                want = np.atleast_1d(fn(x.astype(np.complex128)).real)
                assert np.allclose(np.atleast_1d(reduce(sc, red)), want, rtol=1e-13)
                case = {"name": f"bce_{red}_w{int(weighted)}_p{int(pos)}_{dtype}",
                        "op": "bce_with_logits", "dtype": dtype, "shape": [b, c],
                        "reduction": red, "logits": f(x, dtype), "target": f(y, dtype)}
                if w is not None:
                    case["weight"] = f(w, dtype)
                if pw is not None:
                    case["pos_weight"] = f(pw, dtype)
                case["loss"] = gen.Arr(want, "f64")
                case["grad"] = gen.Arr(csgrad(fn, x), "f64")
                cases.append(case)
            # mse
            x = gen.as_dtype(rng.normal(0, 2, b * c), dtype)
            y = gen.as_dtype(rng.normal(0, 2, b * c), dtype)

            def fn(v, y=y, red=red):
                return reduce((v - y) ** 2, red)

            cases.append({"name": f"mse_{red}_{dtype}", "op": "mse", "dtype": dtype,
                          "shape": [b, c], "reduction": red, "input": f(x, dtype),
                          "target": f(y, dtype),
                          "loss": gen.Arr(np.atleast_1d(fn(x.astype(np.complex128)).real), "f64"),
                          "grad": gen.Arr(csgrad(fn, x), "f64")})
            # torchvision sigmoid_focal_loss
            for alpha, gamma in ((0.25, 2.0), (-1.0, 0.0), (0.6, 1.5)):
                x = gen.as_dtype(rng.normal(0, 3, b * c), dtype)
                y = gen.as_dtype(rng.integers(0, 2, b * c).astype(float), dtype)
                a_d = float(gen.as_dtype([alpha], dtype)[0])
                g_d = float(gen.as_dtype([gamma], dtype)[0])

                def fn(v, y=y, a=a_d, g=g_d, red=red):
                    p = sigmoid_c(v)
                    ce = (1 - y) * v + softplus_c(-v)
                    pt = p * y + (1 - p) * (1 - y)
                    loss = ce * (1 - pt) ** g
                    if a >= 0:
                        loss = loss * (a * y + (1 - a) * (1 - y))
                    return reduce(loss, red)

                cases.append({"name": f"sigmoid_focal_{red}_a{alpha}_g{gamma}_{dtype}",
                              "op": "sigmoid_focal", "dtype": dtype, "shape": [b, c],
                              "reduction": red, "alpha": gen.Num(alpha, "f64"),
                              "gamma": gen.Num(gamma, "f64"), "logits": f(x, dtype),
                              "target": f(y, dtype),
                              "loss": gen.Arr(np.atleast_1d(fn(x.astype(np.complex128)).real),
                                              "f64"),
                              "grad": gen.Arr(csgrad(fn, x), "f64")})
            # softmax focal (γ, α per class), row 1 ignored.
            for gamma, with_alpha in ((0.0, False), (2.0, False), (1.5, True)):
                x = gen.as_dtype(rng.normal(0, 2, b * c), dtype)
                al = gen.as_dtype(rng.uniform(0.1, 1, c), dtype) if with_alpha else None
                t = [int(v) for v in rng.integers(0, c, b)]
                t[1] = -100
                g_d = float(gen.as_dtype([gamma], dtype)[0])

                def fn(v, t=t, al=al, g=g_d, red=red):
                    per = []
                    for n in range(b):
                        if t[n] == -100:
                            per.append(0.0 * v[0])
                            continue
                        row = v[n * c:(n + 1) * c]
                        lp = row[t[n]] - lse_c(row)
                        a = 1.0 if al is None else al[t[n]]
                        per.append(-a * (1 - np.exp(lp)) ** g * lp)
                    per = np.array(per)
                    if red == "none":
                        return per
                    return np.sum(per) if red == "sum" else np.sum(per) / (b - 1)

                case = {"name": f"softmax_focal_{red}_g{gamma}_a{int(with_alpha)}_{dtype}",
                        "op": "softmax_focal", "dtype": dtype, "shape": [b, c],
                        "reduction": red, "gamma": gen.Num(gamma, "f64"),
                        "logits": f(x, dtype), "target": t}
                if al is not None:
                    case["alpha"] = f(al, dtype)
                case["loss"] = gen.Arr(np.atleast_1d(fn(x.astype(np.complex128)).real), "f64")
                case["grad"] = gen.Arr(csgrad(fn, x), "f64")
                cases.append(case)
        # kl_div (input log-probabilities), every reduction incl. batchmean, both target forms.
        for red in ("mean", "sum", "none", "batchmean"):
            for log_target in (False, True):
                x = gen.as_dtype(np.log(rng.dirichlet(np.ones(c), b)).reshape(-1), dtype)
                tp = rng.dirichlet(np.ones(c), b).reshape(-1)
                tp[0] = 0.0
                t = gen.as_dtype(np.log(np.maximum(tp, 1e-3)) if log_target else tp, dtype)

                def fn(v, t=t, lt=log_target, red=red):
                    if lt:
                        per = np.exp(t) * (t - v)
                    else:
                        per = scipy_xlogy(t) - t * v
                    return reduce(per, red, b)

                cases.append({"name": f"kl_{red}_lt{int(log_target)}_{dtype}", "op": "kl_div",
                              "dtype": dtype, "shape": [b, c], "reduction": red,
                              "log_target": log_target, "input": f(x, dtype),
                              "target": f(t, dtype),
                              "loss": gen.Arr(np.atleast_1d(fn(x.astype(np.complex128)).real),
                                              "f64"),
                              "grad": gen.Arr(csgrad(fn, x), "f64")})
    return cases


def scipy_log_expit(x):
    return gen.scipy.special.log_expit(x)


def scipy_xlogy(t):
    return gen.scipy.special.xlogy(t, t)


def build(write):
    rng = gen.rng_for(SECTION)
    total = write("loss_ce.json",
                  "loss-core cross_entropy / nll_loss: onnxruntime SoftmaxCrossEntropyLoss and "
                  "NegativeLogLikelihoodLoss (opset 13, in the case's dtype) where it has the "
                  "option, numpy (PyTorch's formula) otherwise; gradients by complex step",
                  ce_cases(rng))
    total += write("loss_elementwise.json",
                   "loss-core bce_with_logits, mse, sigmoid_focal, softmax_focal, kl_div: "
                   "scipy/numpy formulas (PyTorch / torchvision semantics); gradients by "
                   "complex step",
                   elementwise_cases(gen.rng_for(SECTION + 1)))
    return total


def bench_ort(rows=8, classes=131072, reps=30):
    """onnxruntime's SoftmaxCrossEntropyLoss forward (mean), float32, 1 thread, IOBinding, on the
    shape of the `ce_f32_8x131072` criterion bench; prints the median time and ns per logit.
    `cd harness/golden && python -c "import gen_loss; gen_loss.bench_ort()"`"""
    import time

    from onnx import TensorProto, helper

    ort = gen.ort
    ins = [helper.make_tensor_value_info("X", TensorProto.FLOAT, [rows, classes]),
           helper.make_tensor_value_info("T", TensorProto.INT64, [rows])]
    node = helper.make_node("SoftmaxCrossEntropyLoss", ["X", "T"], ["L"], reduction="mean")
    out = helper.make_tensor_value_info("L", TensorProto.FLOAT, [])
    model = helper.make_model(helper.make_graph([node], "bench", ins, [out]),
                              opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 10
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    sess = ort.InferenceSession(model.SerializeToString(), so,
                                providers=["CPUExecutionProvider"])
    x = np.random.default_rng(1).uniform(-8, 8, (rows, classes)).astype(np.float32)
    t = (np.arange(rows, dtype=np.int64) * 1000 + 7)
    io = sess.io_binding()
    io.bind_ortvalue_input("X", ort.OrtValue.ortvalue_from_numpy(x))
    io.bind_ortvalue_input("T", ort.OrtValue.ortvalue_from_numpy(t))
    io.bind_output("L")
    for _ in range(5):
        sess.run_with_iobinding(io)
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        sess.run_with_iobinding(io)
        times.append(time.perf_counter() - t0)
    med = float(np.median(times))
    print(f"onnxruntime {ort.__version__} SoftmaxCrossEntropyLoss {rows}x{classes} f32 1 thread: "
          f"median {med * 1e3:.3f} ms, {med * 1e9 / (rows * classes):.3f} ns/logit")
    return med
