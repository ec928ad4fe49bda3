"""examples/batched_trainer.mg against an independent NumPy trainer written here: the same
model, weights and dropout masks (from the reference random generator of test_rng.py, which
reimplements goat's documented one in plain Python), its backward pass derived by hand.  Every
printed digit must agree; the output must be the same bits on every run and whatever the BLAS
thread count.
"""
from __future__ import annotations

import math
import os

import numpy as np
import pytest

import goat
from conftest import ROOT, cli
from test_rng import ref_normal, ref_uniform

PROGRAM = os.path.join(ROOT, "examples", "batched_trainer.mg")
TOKENS = np.array([1, 2, 3, 2, 3, 4])
TARGETS = np.array([2, 3, 4, 3, 4, 0])
MASK = np.where(np.tril(np.ones((3, 3))) == 1, 0.0, -1e9)
K = 0.7978845608028654
DROP = 0.1


def normal(shape, seed):
    return np.array(ref_normal(shape, seed)).reshape(shape)


def uniform(shape, seed):
    return np.array(ref_uniform(shape, seed)).reshape(shape)


BLOCK = ("g1", "wq", "wk", "wv", "wo", "g2", "w1", "w2")


def initial():
    w = {"e": normal((5, 4), 1) * 0.5}
    seed = 2
    for b in "ab":
        for name in BLOCK:
            if name in ("g1", "g2"):
                w[name + b] = np.ones((1, 4))
                continue
            shape = {"w1": (4, 8), "w2": (8, 4)}.get(name, (4, 4))
            w[name + b] = normal(shape, seed) * 0.5
            seed += 1
    w["gf"] = np.ones((1, 4))
    return w


def rms(x, g):
    r = np.sqrt(np.mean(x * x, axis=1, keepdims=True) + 1e-5)
    return x / r * g, (x / r, r)


def rms_back(dy, g, cache):
    xh, r = cache
    dg = np.sum(dy * xh, axis=0, keepdims=True)
    dxh = dy * g
    return (dxh - xh * np.mean(dxh * xh, axis=1, keepdims=True)) / r, dg


def gelu(u):
    t = np.tanh(K * (u + 0.044715 * u ** 3))
    return 0.5 * u * (1 + t), t


def block_forward(x, w, b, seed):
    a, ca = rms(x, w["g1" + b])
    q3, k3, v3 = ((a @ w[n + b]).reshape(2, 3, 4) for n in ("wq", "wk", "wv"))
    sc = (q3 @ np.swapaxes(k3, -1, -2) * 0.5 + MASK).reshape(6, 3)
    z = sc - sc.max(axis=1, keepdims=True)
    s = np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)
    keep = (uniform((6, 3), seed) >= DROP).astype(float)
    p3 = (s * keep / (1 - DROP)).reshape(2, 3, 3)
    o = (p3 @ v3).reshape(6, 4)
    x1 = x + o @ w["wo" + b]
    bn, cb = rms(x1, w["g2" + b])
    u = bn @ w["w1" + b]
    h, t = gelu(u)
    out = x1 + h @ w["w2" + b]
    return out, dict(a=a, ca=ca, q3=q3, k3=k3, v3=v3, s=s, keep=keep, p3=p3, o=o, x1=x1, bn=bn,
                     cb=cb, u=u, h=h, t=t)


def block_backward(dout, w, b, c, grads):
    dx1 = dout.copy()
    grads["w2" + b] = c["h"].T @ dout
    dh = dout @ w["w2" + b].T
    u, t = c["u"], c["t"]
    du = dh * (0.5 * (1 + t) + 0.5 * u * (1 - t * t) * K * (1 + 3 * 0.044715 * u * u))
    grads["w1" + b] = c["bn"].T @ du
    dx, grads["g2" + b] = rms_back(du @ w["w1" + b].T, w["g2" + b], c["cb"])
    dx1 += dx
    grads["wo" + b] = c["o"].T @ dx1
    do3 = (dx1 @ w["wo" + b].T).reshape(2, 3, 4)
    dp3 = do3 @ np.swapaxes(c["v3"], -1, -2)
    dv3 = np.swapaxes(c["p3"], -1, -2) @ do3
    ds = dp3.reshape(6, 3) * c["keep"] / (1 - DROP)
    s = c["s"]
    dsc = (s * (ds - np.sum(s * ds, axis=1, keepdims=True))).reshape(2, 3, 3) * 0.5
    dq3 = dsc @ c["k3"]
    dk3 = np.swapaxes(dsc, -1, -2) @ c["q3"]
    a = c["a"]
    da = np.zeros_like(a)
    for n, d in (("wq", dq3), ("wk", dk3), ("wv", dv3)):
        d = d.reshape(6, 4)
        grads[n + b] = a.T @ d
        da += d @ w[n + b].T
    dx, grads["g1" + b] = rms_back(da, w["g1" + b], c["ca"])
    return dx1 + dx


def loss_and_grads(w, step):
    x0 = w["e"][TOKENS]
    x1, c1 = block_forward(x0, w, "a", step * 10 + 1)
    x2, c2 = block_forward(x1, w, "b", step * 10 + 2)
    f, cf = rms(x2, w["gf"])
    lg = f @ w["e"].T
    z = lg - lg.max(axis=1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
    loss = -np.mean(logp[np.arange(6), TARGETS])
    dlg = (np.exp(logp) - np.eye(5)[TARGETS]) / 6
    grads = {"e": dlg.T @ f}
    dx2, grads["gf"] = rms_back(dlg @ w["e"], w["gf"], cf)
    dx1 = block_backward(dx2, w, "b", c2, grads)
    dx0 = block_backward(dx1, w, "a", c1, grads)
    np.add.at(grads["e"], TOKENS, dx0)
    return loss, grads


def reference():
    """The lines the program prints, by the NumPy trainer."""
    w = initial()
    m = {k: np.zeros_like(v) for k, v in w.items()}
    v = {k: np.zeros_like(x) for k, x in w.items()}
    lines = []
    for step in range(3):
        loss, g = loss_and_grads(w, step)
        a = 0.0625 * 0.5 * (1 + math.cos(math.pi * step / 3))
        t = step + 1
        norm_e = None
        for k in w:
            n = math.sqrt(np.sum(g[k] * g[k]))
            if k == "e":
                norm_e = n
            gc = g[k] * min(1.0 / (n + 1e-6), 1.0)
            m[k] = 0.9 * m[k] + 0.1 * gc
            v[k] = 0.999 * v[k] + 0.001 * gc * gc
            w[k] = w[k] * (1 - a * 0.0625) - a * (m[k] / (1 - 0.9 ** t)) / (
                np.sqrt(v[k] / (1 - 0.999 ** t)) + 1e-8)
        lines.append("step %d: a = %.6f n = %.6f loss = %.6f" % (t, a, norm_e, loss))
    lines.append("e0 = %.6f %.6f wq0 = %.6f g1 = %.6f"
                 % (w["e"][0, 0], w["e"][0, 1], w["wqa"][0, 0], w["g1a"][0, 0]))
    return lines


def test_the_reference_gradient_is_right():
    """The hand-derived NumPy backward pass against central differences (so that the replay
    below compares goat with a trainer known to be right)."""
    w = initial()
    _, g = loss_and_grads(w, 0)
    rng = np.random.default_rng(0)
    h = 1e-6
    for k in ("e", "wqa", "g1a", "w1b", "gf"):
        for _ in range(3):
            i = rng.integers(w[k].size)
            plus = {n: x.copy() for n, x in w.items()}
            minus = {n: x.copy() for n, x in w.items()}
            plus[k].flat[i] += h
            minus[k].flat[i] -= h
            fd = (loss_and_grads(plus, 0)[0] - loss_and_grads(minus, 0)[0]) / (2 * h)
            assert g[k].flat[i] == pytest.approx(fd, rel=1e-6, abs=1e-9), (k, i)


def test_goat_prints_what_the_numpy_trainer_prints():
    printed = goat.run_file(PROGRAM)
    assert printed == reference()
    assert printed[0].startswith("step 1: a = 0.062500 n = ")


@pytest.mark.parametrize("threads", ["1", "2"])
def test_same_bits_every_run_and_any_blas_thread_count(threads, monkeypatch):
    first = cli("run", PROGRAM)
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", threads)
    monkeypatch.setenv("OMP_NUM_THREADS", threads)
    second = cli("run", PROGRAM)
    assert first[0] == 0 and first == second
    # full precision, not only the printed digits: the values themselves are the same bits
    a = goat.run_source(open(PROGRAM).read().replace(":.6f}", ":.17g}"), path=PROGRAM)
    b = goat.run_source(open(PROGRAM).read().replace(":.6f}", ":.17g}"), path=PROGRAM)
    assert a == b
