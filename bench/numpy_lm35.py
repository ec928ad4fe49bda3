"""The competitor: the chapter's 200 training steps written by hand in NumPy.

The same model, data, starting weights and formulas as examples/lm35/train_200.mg (stacked
112 rows, the 112x112 mask, the book's hand-derived backward pass), the way a person would
write it directly in NumPy: one function per step, temporaries left to Python's refcounting.
It is what goat's interpreter is measured against in bench_train.py.
"""
from __future__ import annotations

import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "examples", "lm35"))
import make_lm35 as lm  # noqa: E402

S = 0.35355339059327373
EPS = 1e-05


def _mean(a):
    return a.sum(axis=1, keepdims=True) / a.shape[1]


def _sigma(h):
    c = h - _mean(h)
    return np.sqrt(_mean(c * c) + EPS)


def _hat(h):
    return (h - _mean(h)) / _sigma(h)


def _ln_back(d, h, g):
    dg = d * g
    hat = _hat(h)
    return (dg - _mean(dg) - hat * _mean(dg * hat)) / _sigma(h)


def _log_softmax(z):
    zc = z - z.max(axis=1, keepdims=True)
    return zc - np.log(np.exp(zc).sum(axis=1, keepdims=True))


def _softmax(m):
    e = np.exp(m - m.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def forward(w, x, ps, mk):
    x0 = x @ w["e"] + ps
    u1 = _hat(x0) * w["g1"] + w["n1"]
    q, k, v = u1 @ w["wq"], u1 @ w["wk"], u1 @ w["wv"]
    a = _softmax(q @ k.T * S + mk)
    o = a @ v
    x1 = x0 + o @ w["wo"]
    u2 = _hat(x1) * w["g2"] + w["n2"]
    pre = u2 @ w["w1"] + w["c1"]
    r = np.maximum(pre, 0.0)
    x2 = x1 + (r @ w["w2"] + w["c2"])
    uf = _hat(x2) * w["gf"] + w["nf"]
    lg = uf @ w["wu"]
    return locals()


def loss_correct(lg, y):
    loss = -(y * _log_softmax(lg)).sum() / 64
    correct = ((lg >= lg.max(axis=1, keepdims=True)) * y).sum()
    return loss, correct


def step(w, x, y, mr, ps, mk):
    f = forward(w, x, ps, mk)
    dl = (np.exp(_log_softmax(f["lg"])) * mr - y) * 0.015625
    g = {"wu": f["uf"].T @ dl}
    duf = dl @ w["wu"].T
    g["nf"] = duf.sum(axis=0, keepdims=True)
    g["gf"] = (duf * _hat(f["x2"])).sum(axis=0, keepdims=True)
    dx2 = _ln_back(duf, f["x2"], w["gf"])
    g["c2"] = dx2.sum(axis=0, keepdims=True)
    g["w2"] = f["r"].T @ dx2
    dpre = (dx2 @ w["w2"].T) * (f["pre"] >= 0)
    g["c1"] = dpre.sum(axis=0, keepdims=True)
    g["w1"] = f["u2"].T @ dpre
    du2 = dpre @ w["w1"].T
    g["n2"] = du2.sum(axis=0, keepdims=True)
    g["g2"] = (du2 * _hat(f["x1"])).sum(axis=0, keepdims=True)
    dx1 = dx2 + _ln_back(du2, f["x1"], w["g2"])
    g["wo"] = f["o"].T @ dx1
    do = dx1 @ w["wo"].T
    a = f["a"]
    dv = a.T @ do
    da = do @ f["v"].T
    ds = a * (da - (a * da).sum(axis=1, keepdims=True))
    dq = ds @ f["k"] * S
    dk = ds.T @ f["q"] * S
    u1 = f["u1"]
    g["wq"], g["wk"], g["wv"] = u1.T @ dq, u1.T @ dk, u1.T @ dv
    du1 = dq @ w["wq"].T + dk @ w["wk"].T + dv @ w["wv"].T
    g["n1"] = du1.sum(axis=0, keepdims=True)
    g["g1"] = (du1 * _hat(f["x0"])).sum(axis=0, keepdims=True)
    dx0 = dx1 + _ln_back(du1, f["x0"], w["g1"])
    g["e"] = x.T @ dx0
    return {name: w[name] - g[name] * 1.0 for name in w}


def data():
    x, y = lm.batch(lm.TRAIN_TRIPLES.split() if isinstance(lm.TRAIN_TRIPLES, str) else lm.TRAIN_TRIPLES)
    return x, y, lm.scored_rows(), lm.stacked_positions(), lm.causal_mask()


def train(steps=200, seed=lm.DEFAULT_SEED):
    """Train from the program's starting weights; returns the checkpoint losses and counts."""
    x, y, mr, ps, mk = data()
    w = lm.initial_weights(seed)
    out = []
    with np.errstate(all="ignore"):
        for t in range(steps + 1):
            if t in lm.CHECKPOINTS:
                out.append(loss_correct(forward(w, x, ps, mk)["lg"], y))
            if t < steps:
                w = step(w, x, y, mr, ps, mk)
    return out


if __name__ == "__main__":
    for (loss, correct), t in zip(train(), lm.CHECKPOINTS):
        print("step %3d: loss %.6g, %d of 64 correct" % (t, loss, correct))
