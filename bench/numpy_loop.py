"""A competitor: the chapter's 200 training steps as a hand-written NumPy loop.

    python bench/numpy_loop.py            # prints what examples/lm35/train.mg prints
    python bench/numpy_loop.py --time     # also: load / 200 steps / evaluation times on stderr

The same model, data, starting weights and formulas as examples/lm35/train_200.mg, written the
way a person would write them directly in NumPy: the 16 sequences stacked into 112 rows, a
112x112 block-diagonal causal mask, the book's hand-derived backward pass, learning rate 1.0.
Nothing is generated: the data and the starting weights are read from the .npy files of
examples/lm35/data/ (written by make_lm35.py), and the mask is computed here.

Every formula is evaluated in the same order as the goat program (``x @ e + ps``, a row mean
as a row sum divided by the count, ``(d - mean(d)) - hat * mean(d * hat)``, the loss as a
column sum of row sums, ...), so the numbers equal goat's to the last bit as long as NumPy's
own kernels are the ones goat calls.  Values goat computes once per step (a layer norm's
centred input, its sigma and its normalized output, the log-softmax of the logits) are
computed once here too.

Imports only NumPy and the standard library.
"""
from __future__ import annotations

import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "..", "examples", "lm35", "data")

PARAMS = ("e", "g1", "n1", "wq", "wk", "wv", "wo", "g2", "n2", "w1", "c1", "w2", "c2",
          "gf", "nf", "wu")
STEPS = 200
CHECKPOINTS = (0, 1, 10, 25, 50, 100, 150, 200)
LR = 1.0
S = 0.35355339059327373          # 1/sqrt(8), as written in the goat program
EPS = 1e-05
INV = 0.015625                   # 1/64: the 64 scored rows of a batch


def load(folder=DATA):
    """The data (a dict of arrays) and the starting weights (a dict in PARAMS order)."""
    def get(name):
        return np.load(os.path.join(folder, name + ".npy"), allow_pickle=False)
    data = {n: get(n) for n in ("x", "y", "mr", "ps", "sel")}
    for b in ("held", "all0", "all1", "all2", "all3"):
        data[b + "_x"], data[b + "_y"] = get(b + "_x"), get(b + "_y")
    weights = {p: get("init_" + p) for p in PARAMS}
    return data, weights


def causal_mask(rows=112, n=7):
    """0 where row r may look at column c (same sequence of n rows, c <= r), -1e9 elsewhere."""
    r = np.arange(rows)[:, None]
    c = np.arange(rows)[None, :]
    return np.where((r // n == c // n) & (c <= r), 0.0, -1000000000.0)


# --------------------------------------------------------------------------- pieces

def row_mean(a):
    return a.sum(axis=1, keepdims=True) / a.shape[1]


def layer_norm(h, g, t):
    """(output, normalized input, sigma) of a layer norm over each row."""
    c = h - row_mean(h)
    sigma = np.sqrt(row_mean(c * c) + EPS)
    hat = c / sigma
    return hat * g + t, hat, sigma


def ln_back(d, g, hat, sigma):
    dg = d * g
    return (dg - row_mean(dg) - hat * row_mean(dg * hat)) / sigma


def softmax_rows(m):
    ex = np.exp(m - m.max(axis=1, keepdims=True))
    return ex / ex.sum(axis=1, keepdims=True)


def log_softmax(z):
    zc = z - z.max(axis=1, keepdims=True)
    return zc - np.log(np.exp(zc).sum(axis=1, keepdims=True))


def forward(w, x, ps, mk):
    """Every quantity of the forward pass that the backward pass needs."""
    f = {}
    f["x0"] = x0 = x @ w["e"] + ps
    u1, f["hat1"], f["sig1"] = layer_norm(x0, w["g1"], w["n1"])
    f["u1"] = u1
    f["q"] = q = u1 @ w["wq"]
    f["k"] = k = u1 @ w["wk"]
    f["v"] = v = u1 @ w["wv"]
    f["a"] = a = softmax_rows(q @ k.T * S + mk)
    f["o"] = o = a @ v
    f["x1"] = x1 = x0 + o @ w["wo"]
    u2, f["hat2"], f["sig2"] = layer_norm(x1, w["g2"], w["n2"])
    f["u2"] = u2
    f["pre"] = pre = u2 @ w["w1"] + w["c1"]
    f["r"] = r = np.maximum(pre, 0.0)
    x2 = x1 + (r @ w["w2"] + w["c2"])
    uf, f["hatf"], f["sigf"] = layer_norm(x2, w["gf"], w["nf"])
    f["uf"] = uf
    f["lg"] = uf @ w["wu"]
    return f


def loss_correct(lg, y, ls=None):
    """The loss and the number of correct predictions, as two floats."""
    if ls is None:
        ls = log_softmax(lg)
    loss = (y * ls).sum(axis=1, keepdims=True).sum(axis=0, keepdims=True) * -INV
    hit = (lg >= lg.max(axis=1, keepdims=True)) * y
    correct = hit.sum(axis=1, keepdims=True).sum(axis=0, keepdims=True)
    return float(loss[0, 0]), float(correct[0, 0])


def gradients(w, f, ls, x, y, mr):
    """The book's hand-derived backward pass: the gradient of the loss for each weight."""
    g = {}
    dl = (np.exp(ls) * mr - y) * INV
    g["wu"] = f["uf"].T @ dl
    duf = dl @ w["wu"].T
    g["nf"] = duf.sum(axis=0, keepdims=True)
    g["gf"] = (duf * f["hatf"]).sum(axis=0, keepdims=True)
    dx2 = ln_back(duf, w["gf"], f["hatf"], f["sigf"])
    g["c2"] = dx2.sum(axis=0, keepdims=True)
    g["w2"] = f["r"].T @ dx2
    dpre = (dx2 @ w["w2"].T) * (f["pre"] >= 0.0)
    g["c1"] = dpre.sum(axis=0, keepdims=True)
    g["w1"] = f["u2"].T @ dpre
    du2 = dpre @ w["w1"].T
    g["n2"] = du2.sum(axis=0, keepdims=True)
    g["g2"] = (du2 * f["hat2"]).sum(axis=0, keepdims=True)
    dx1 = dx2 + ln_back(du2, w["g2"], f["hat2"], f["sig2"])
    g["wo"] = f["o"].T @ dx1
    do = dx1 @ w["wo"].T
    a = f["a"]
    dv = a.T @ do
    da = do @ f["v"].T
    ds = a * (da - (a * da).sum(axis=1, keepdims=True))
    dq = ds @ f["k"] * S
    dk = ds.T @ f["q"] * S
    u1 = f["u1"]
    g["wq"] = u1.T @ dq
    g["wk"] = u1.T @ dk
    g["wv"] = u1.T @ dv
    du1 = dq @ w["wq"].T + dk @ w["wk"].T + dv @ w["wv"].T
    g["n1"] = du1.sum(axis=0, keepdims=True)
    g["g1"] = (du1 * f["hat1"]).sum(axis=0, keepdims=True)
    dx0 = dx1 + ln_back(du1, w["g1"], f["hat1"], f["sig1"])
    g["e"] = x.T @ dx0
    return g


def train(data, weights, mk, steps=STEPS):
    """``steps`` steps of gradient descent; returns the final weights, their forward pass on
    the training batch and [(step, loss, correct)] at each checkpoint."""
    x, y, mr, ps = data["x"], data["y"], data["mr"], data["ps"]
    w = dict(weights)
    seen = []
    for t in range(steps + 1):
        f = forward(w, x, ps, mk)
        ls = log_softmax(f["lg"])
        if t in CHECKPOINTS:
            seen.append((t,) + loss_correct(f["lg"], y, ls))
        if t == steps:
            return w, f, seen
        g = gradients(w, f, ls, x, y, mr)
        w = {p: w[p] - g[p] * LR for p in PARAMS}


# --------------------------------------------------------------------------- printing

def format_number(v):
    """C's printf("%g"), with glibc's spelling of a NaN (-nan when its sign bit is set)."""
    if v != v:
        return "-nan" if np.signbit(v) else "nan"
    return "%g" % v


def format_matrix(m):
    """A matrix in the format of MLIR's runner utilities, as goat's print writes it."""
    rows, cols = m.shape
    head = ("Unranked Memref base@ = 0x\u2026 rank = 2 offset = 0 sizes = [%d, %d] "
            "strides = [%d, 1] data = \n" % (rows, cols, cols))
    body = ", \n ".join("[" + ",   ".join(format_number(v) for v in row) + "]"
                        for row in m.tolist())
    return head + "[" + body + "]\n"


def report(data, w, f, seen, mk):
    """The text train.mg prints."""
    out = ["step %d: loss %s, %s of 64 correct" % (t, format_number(loss), format_number(c))
           for t, loss, c in seen]
    fh = forward(w, data["held_x"], data["ps"], mk)
    loss, c = loss_correct(fh["lg"], data["held_y"])
    out.append("held out: loss %s, %s of 64 correct" % (format_number(loss), format_number(c)))
    chunks = []
    for b in ("all0", "all1", "all2", "all3"):
        fb = forward(w, data[b + "_x"], data["ps"], mk)
        chunks.append(format_number(loss_correct(fb["lg"], data[b + "_y"])[1]))
    out.append("all 64 sequences, by first token: %s (of 64 each)" % " ".join(chunks))
    out.append("attention of the first training sequence:")
    sel = data["sel"]
    return "\n".join(out) + "\n" + format_matrix(sel @ f["a"] @ sel.T)


def save_weights(w):
    """The trained weights into examples/lm35/trained/, as train.mg saves them: each file
    written under a temporary name, flushed to disk, then renamed (the same work as goat's
    atomic save)."""
    folder = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples", "lm35",
                          "trained")
    for name, value in w.items():
        path = os.path.join(folder, name + ".npy")
        tmp = path + ".tmp"
        with open(tmp, "wb") as f:
            np.save(f, value)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv not in ([], ["--time"]):
        sys.exit("usage: numpy_loop.py [--time]")
    t0 = time.perf_counter()
    data, weights = load()
    mk = causal_mask()
    t1 = time.perf_counter()
    with np.errstate(all="ignore"):
        w, f, seen = train(data, weights, mk)
        save_weights(w)
        t2 = time.perf_counter()
        text = report(data, w, f, seen, mk)
    sys.stdout.write(text)
    sys.stdout.flush()
    t3 = time.perf_counter()
    if argv:
        sys.stderr.write("numpy_loop.py: load %.4f s, %d steps %.4f s, evaluate and print %.4f s\n"
                         % (t1 - t0, STEPS, t2 - t1, t3 - t2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
