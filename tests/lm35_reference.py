"""An independent NumPy trainer for the chapter-35 language model.

This is the yardstick the goat programs are tested against, so it is
written differently from the generated programs on purpose:

* sequences are kept apart: arrays are (sequences, 7, width), attention is
  a batch of 7x7 matrices with a lower-triangular mask (no 112x112 stacked
  mask, no one-hot input: tokens are integer ids and the embedding is a
  lookup ``e[tokens]``);
* the loss is a mean of per-position log-sum-exp minus the target's logit;
* the backward pass goes through explicit per-row Jacobians: for the
  softmax ``diag(a) - a a^T``, for layer norm the full DxD Jacobian of
  ``(h - mean) / sqrt(var + eps)``; the embedding gradient is a scatter-add
  (``np.add.at``), not ``transpose(x) @ dx0``.

Only the data (the triples, the position vectors) and the seeded starting
weights come from the generator module; none of its program text is used.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np

_LM35 = Path(__file__).resolve().parent.parent / "examples" / "lm35"
if str(_LM35) not in sys.path:
    sys.path.insert(0, str(_LM35))

import make_lm35 as data  # noqa: E402  (data and starting weights only)

EPS = 1e-5
SCORED = np.array([2, 3, 4, 5])
PARAM_NAMES = data.PARAM_NAMES
POS = data.positions()                     # (7, 8)
TRIL = np.tril(np.ones((data.N, data.N), dtype=bool))


def tokens(triples) -> np.ndarray:
    """(S, 7) integer token ids, built here from the triples."""
    out = []
    for t in triples:
        a, b, c = (int(ch) for ch in t)
        out.append([a, b, c, a, b, c, a])
    return np.array(out, dtype=np.int64)


# ---------------------------------------------------------------------------
# forward
# ---------------------------------------------------------------------------

def _layer_norm(h, g, t):
    mu = h.mean(axis=-1, keepdims=True)
    var = ((h - mu) ** 2).mean(axis=-1, keepdims=True)
    sigma = np.sqrt(var + EPS)
    hat = (h - mu) / sigma
    return hat * g[0] + t[0], hat, sigma


def _softmax_last(s):
    s = s - s.max(axis=-1, keepdims=True)
    p = np.exp(s)
    return p / p.sum(axis=-1, keepdims=True)


def forward(w: dict, toks: np.ndarray) -> dict:
    """All intermediate values for token ids ``toks`` (S, 7)."""
    c = {}
    c["x0"] = w["e"][toks] + POS                         # (S, 7, 8)
    c["u1"], c["hat1"], c["sig1"] = _layer_norm(c["x0"], w["g1"], w["n1"])
    c["q"] = c["u1"] @ w["wq"]
    c["k"] = c["u1"] @ w["wk"]
    c["v"] = c["u1"] @ w["wv"]
    scores = np.einsum("sid,sjd->sij", c["q"], c["k"]) / math.sqrt(data.D)
    scores = np.where(TRIL, scores, -np.inf)
    c["a"] = _softmax_last(scores)                       # (S, 7, 7)
    c["o"] = c["a"] @ c["v"]
    c["x1"] = c["x0"] + c["o"] @ w["wo"]
    c["u2"], c["hat2"], c["sig2"] = _layer_norm(c["x1"], w["g2"], w["n2"])
    c["pre"] = c["u2"] @ w["w1"] + w["c1"][0]
    c["r"] = np.maximum(c["pre"], 0.0)
    c["x2"] = c["x1"] + c["r"] @ w["w2"] + w["c2"][0]
    c["uf"], c["hatf"], c["sigf"] = _layer_norm(c["x2"], w["gf"], w["nf"])
    c["lg"] = c["uf"] @ w["wu"]                          # (S, 7, 4)
    return c


def _scored_logits(lg, toks):
    """Logits at the scored positions (S, 4, V) and their targets (S, 4)."""
    return lg[:, SCORED, :], toks[:, SCORED + 1]


def loss_and_correct(w: dict, toks: np.ndarray, cache: dict | None = None):
    """Mean cross-entropy over scored positions, and how many are right.

    A prediction is right when the target's logit is (one of) the largest.
    """
    lg = (cache or forward(w, toks))["lg"]
    z, tgt = _scored_logits(lg, toks)
    m = z.max(axis=-1)
    lse = m + np.log(np.exp(z - m[..., None]).sum(axis=-1))
    zt = np.take_along_axis(z, tgt[..., None], axis=-1)[..., 0]
    loss = float(np.mean(lse - zt))
    correct = int(np.sum(zt >= m))
    return loss, correct


def attention(w: dict, toks: np.ndarray, seq: int = 0) -> np.ndarray:
    return forward(w, toks)["a"][seq]


# ---------------------------------------------------------------------------
# backward, through explicit Jacobians
# ---------------------------------------------------------------------------

def _ln_jacobian(hat, sigma):
    """d hat / d h for each row: (..., D, D), J[i, j] = d hat_i / d h_j."""
    d = hat.shape[-1]
    eye = np.eye(d)
    return (eye - 1.0 / d - hat[..., :, None] * hat[..., None, :] / d) / sigma[..., None]


def _ln_backward(dout, hat, sigma, g):
    """Gradients of out = hat * g + t: (d h, d g, d t)."""
    dhat = dout * g[0]
    jac = _ln_jacobian(hat, sigma)
    dh = np.einsum("...i,...ij->...j", dhat, jac)
    dg = np.einsum("snd,snd->d", dout, hat)[None, :]
    dt = dout.reshape(-1, dout.shape[-1]).sum(axis=0)[None, :]
    return dh, dg, dt


def _flat_sum(a, b):
    """sum over sequences and positions of outer(a_row, b_row): a^T b."""
    return np.einsum("sni,snj->ij", a, b)


def gradients(w: dict, toks: np.ndarray) -> dict:
    """The gradient of :func:`loss_and_correct`'s loss for every matrix."""
    c = forward(w, toks)
    S = toks.shape[0]
    n_scored = S * len(SCORED)
    g = {}

    # cross-entropy at the scored positions: (softmax - onehot) / count
    dlg = np.zeros_like(c["lg"])
    z, tgt = _scored_logits(c["lg"], toks)
    p = _softmax_last(z)
    onehot = np.eye(data.V)[tgt]
    dlg[:, SCORED, :] = (p - onehot) / n_scored

    g["wu"] = _flat_sum(c["uf"], dlg)
    duf = dlg @ w["wu"].T
    dx2, g["gf"], g["nf"] = _ln_backward(duf, c["hatf"], c["sigf"], w["gf"])

    # feed-forward block and its residual
    g["c2"] = dx2.reshape(-1, data.D).sum(axis=0)[None, :]
    g["w2"] = _flat_sum(c["r"], dx2)
    dpre = (dx2 @ w["w2"].T) * (c["pre"] > 0)
    g["c1"] = dpre.reshape(-1, data.H).sum(axis=0)[None, :]
    g["w1"] = _flat_sum(c["u2"], dpre)
    du2 = dpre @ w["w1"].T
    dx1_ln, g["g2"], g["n2"] = _ln_backward(du2, c["hat2"], c["sig2"], w["g2"])
    dx1 = dx2 + dx1_ln

    # attention block and its residual
    g["wo"] = _flat_sum(c["o"], dx1)
    do = dx1 @ w["wo"].T
    a = c["a"]
    dv = np.einsum("sij,sid->sjd", a, do)
    da = np.einsum("sid,sjd->sij", do, c["v"])
    # softmax Jacobian of each row: diag(a) - a a^T (symmetric)
    jac = a[..., :, None] * np.eye(data.N) - a[..., :, None] * a[..., None, :]
    dscore = np.einsum("sij,sijk->sik", da, jac)
    dscore = dscore / math.sqrt(data.D)
    dq = np.einsum("sij,sjd->sid", dscore, c["k"])
    dk = np.einsum("sij,sid->sjd", dscore, c["q"])
    g["wq"] = _flat_sum(c["u1"], dq)
    g["wk"] = _flat_sum(c["u1"], dk)
    g["wv"] = _flat_sum(c["u1"], dv)
    du1 = dq @ w["wq"].T + dk @ w["wk"].T + dv @ w["wv"].T
    dx0_ln, g["g1"], g["n1"] = _ln_backward(du1, c["hat1"], c["sig1"], w["g1"])
    dx0 = dx1 + dx0_ln

    # embedding lookup: scatter-add the rows' gradients onto their tokens
    ge = np.zeros_like(w["e"])
    np.add.at(ge, toks.reshape(-1), dx0.reshape(-1, data.D))
    g["e"] = ge
    return {name: g[name] for name in PARAM_NAMES}


# ---------------------------------------------------------------------------
# training
# ---------------------------------------------------------------------------

def train(w0: dict, steps: int, lr: float = 1.0, checkpoints=data.CHECKPOINTS):
    """Gradient descent on the 16 training sequences.

    Returns (final weights, {k: (loss, correct)} for checkpoints k <= steps),
    checkpoint k measured on the weights after k steps.
    """
    toks = tokens(data.TRAIN_TRIPLES)
    w = {k: v.copy() for k, v in w0.items()}
    record = {}
    for s in range(steps + 1):
        if s in checkpoints:
            record[s] = loss_and_correct(w, toks)
        if s == steps:
            break
        grads = gradients(w, toks)
        w = {k: w[k] - lr * grads[k] for k in PARAM_NAMES}
    return w, record


def report(seed: int = data.DEFAULT_SEED, steps: int = 200, lr: float = 1.0,
           checkpoints=data.CHECKPOINTS) -> dict:
    """Everything a training program prints, computed here."""
    w, record = train(data.initial_weights(seed), steps, lr, checkpoints)
    held = loss_and_correct(w, tokens(data.HELDOUT_TRIPLES))
    chunks = [loss_and_correct(w, tokens(ch))[1] for ch in data.CHUNKS]
    return {
        "checkpoints": record,
        "held": held,
        "chunks": chunks,
        "attention": attention(w, tokens(data.TRAIN_TRIPLES), 0),
        "weights": w,
    }


def expected_prints(seed: int = data.DEFAULT_SEED, steps: int = 200,
                    lr: float = 1.0) -> list:
    """The values a training program of ``steps`` steps prints, in order."""
    rep = report(seed, steps, lr)
    out = []
    for item in data.print_layout(steps):
        kind = item[0]
        if kind == "loss":
            out.append(rep["checkpoints"][item[1]][0])
        elif kind == "correct":
            out.append(rep["checkpoints"][item[1]][1])
        elif kind == "held_loss":
            out.append(rep["held"][0])
        elif kind == "held_correct":
            out.append(rep["held"][1])
        elif kind == "chunk_correct":
            out.append(rep["chunks"][item[1]])
        elif kind == "attention":
            out.append(rep["attention"])
    return out


if __name__ == "__main__":
    import argparse
    ap = argparse.ArgumentParser(description="train the chapter-35 model in NumPy")
    ap.add_argument("--seed", type=int, default=data.DEFAULT_SEED)
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--lr", type=float, default=1.0)
    args = ap.parse_args()
    rep = report(args.seed, args.steps, args.lr)
    for k, (loss, corr) in rep["checkpoints"].items():
        print(f"after {k:3d} steps: loss {loss:.6g}, {corr} of 64 correct")
    print(f"held-out: loss {rep['held'][0]:.6g}, {rep['held'][1]} of 64 correct")
    print(f"chunks of all 64 sequences: {rep['chunks']} "
          f"({sum(rep['chunks'])} of 256)")
    np.set_printoptions(precision=4, suppress=True)
    print("attention, first training sequence:")
    print(rep["attention"])
