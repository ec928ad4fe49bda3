"""Benchmark: training an RNN with grad through its loop over time, goat against PyTorch and
NumPy by hand.

    python bench/bench_bptt.py            # measure and print a Markdown report
    python bench/bench_bptt.py --write    # also write it to bench/RESULTS.md

An Elman RNN, ``h = tanh(x_t @ wx + h @ wh)``, a batch of 16 sequences of 50 steps, 64 hidden
units, the mean squared error of ``h @ wy`` over the steps; 20 steps of gradient descent,
the gradient taken through the loop over time.  Side by side in one process, alternating,
each the best of --repeat runs:

* goat's evaluation (``goat.run_source``'s "run" time: no start-up, parse or check), ``grad``
  through the ``for`` loop;
* PyTorch eager on the CPU, autograd (when PyTorch is installed), one thread;
* NumPy by hand: the forward pass keeping every h, then the backward pass written out.

The three start from the same weights (goat's seeded draws) and must reach the same last loss.
"""
from __future__ import annotations

import datetime
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))
from results import machine, main as results_main  # noqa: E402

B, T, H, STEPS, LR = 16, 50, 64, 20, 0.05

PROGRAM = """
let B = %d
let H = %d
var wx = randn(tensor[1, H], 1) * 0.5
var wh = randn(tensor[H, H], 2) * 0.1
var wy = randn(tensor[H, 1], 3) * 0.1
let phase = iota(tensor[B, 1], 0) * 0.3
var last = [[0]]
for step in 0..%d {
    var h = zeros(tensor[B, H])
    var loss = [[0]]
    for t in 0..%d {
        h = tanh(sin(phase + 0.2 * t) @ wx + h @ wh)
        let e = h @ wy - cos(phase + 0.2 * t)
        loss += col_mean(e * e) / %d
    }
    let gx, gh, gy = grad(loss, wx, wh, wy)
    wx = wx - %r * gx
    wh = wh - %r * gh
    wy = wy - %r * gy
    last = loss
}
print last
""" % (B, H, STEPS, T, T, LR, LR, LR)


def _start():
    import goat
    return [goat.run_source("let H = %d\nprint randn(tensor[1, H], 1) * 0.5\n" % H)[0],
            goat.run_source("let H = %d\nprint randn(tensor[H, H], 2) * 0.1\n" % H)[0],
            goat.run_source("let H = %d\nprint randn(tensor[H, 1], 3) * 0.1\n" % H)[0]]


def _goat():
    import goat
    t = {}
    (value,) = goat.run_source(PROGRAM, timings=t)
    return t["run"], value.item()


def _numpy(start):
    import numpy as np
    wx, wh, wy = (w.copy() for w in start)
    phase = np.arange(B, dtype=np.float64).reshape(B, 1) * 0.3
    xs = [np.sin(phase + 0.2 * t) for t in range(T)]
    ys = [np.cos(phase + 0.2 * t) for t in range(T)]
    t0 = time.perf_counter()
    for _ in range(STEPS):
        hs = [np.zeros((B, H))]
        loss = 0.0
        es = []
        for t in range(T):
            hs.append(np.tanh(xs[t] @ wx + hs[-1] @ wh))
            e = hs[-1] @ wy - ys[t]
            es.append(e)
            loss += np.mean(e * e) / T
        gx, gh, gy = np.zeros_like(wx), np.zeros_like(wh), np.zeros_like(wy)
        dh = np.zeros((B, H))
        for t in reversed(range(T)):
            de = 2 * es[t] / B / T
            gy += hs[t + 1].T @ de
            dh = dh + de @ wy.T
            dz = dh * (1 - hs[t + 1] ** 2)
            gx += xs[t].T @ dz
            gh += hs[t].T @ dz
            dh = dz @ wh.T
        wx, wh, wy = wx - LR * gx, wh - LR * gh, wy - LR * gy
    return time.perf_counter() - t0, loss


def _torch(start):
    import torch
    torch.set_num_threads(1)
    wx, wh, wy = (torch.tensor(w) for w in start)
    phase = torch.arange(B, dtype=torch.float64).reshape(B, 1) * 0.3
    t0 = time.perf_counter()
    for _ in range(STEPS):
        ws = [w.clone().requires_grad_(True) for w in (wx, wh, wy)]
        h = torch.zeros(B, H, dtype=torch.float64)
        loss = 0
        for t in range(T):
            h = torch.tanh(torch.sin(phase + 0.2 * t) @ ws[0] + h @ ws[1])
            e = h @ ws[2] - torch.cos(phase + 0.2 * t)
            loss = loss + (e * e).mean() / T
        loss.backward()
        wx, wh, wy = (w.detach() - LR * w.grad for w in ws)
    return time.perf_counter() - t0, loss.item()


def report(repeat):
    import importlib.util
    have_torch = importlib.util.find_spec("torch") is not None
    start = _start()
    best, last = {}, {}
    for _ in range(repeat):
        runs = [("goat", _goat), ("numpy", lambda: _numpy(start))]
        if have_torch:
            runs.append(("torch", lambda: _torch(start)))
        for name, fn in runs:
            seconds, last[name] = fn()
            best[name] = min(best.get(name, 1e9), seconds)
    agree = max(abs(v - last["numpy"]) / abs(last["numpy"]) for v in last.values())
    rows = ["| goat, `grad` through the loop (evaluation alone) | %.3f s |" % best["goat"],
            "| NumPy by hand (forward keeping every h, backward written out) | %.3f s |"
            % best["numpy"]]
    if have_torch:
        rows.append("| PyTorch eager, CPU, one thread, autograd | %.3f s |" % best["torch"])
    ratios = ["- goat / NumPy by hand: **%.2f×**" % (best["goat"] / best["numpy"])]
    if have_torch:
        ratios.append("- goat / PyTorch: **%.2f×**" % (best["goat"] / best["torch"]))
    return "\n".join([
        "## Backpropagation through time (%s)" % datetime.date.today().isoformat(),
        "",
        "Machine: %s. `python bench/bench_bptt.py`: an Elman RNN (batch %d, %d steps of time, "
        "%d hidden units), %d steps of gradient descent with the gradient through the loop "
        "over time; in one process, best of %d alternating runs each."
        % (machine(), B, T, H, STEPS, repeat),
        "",
        "| what | time |",
        "|---|---|",
    ] + rows + [
        "",
        "The last losses agree to %.1e (relative)%s." % (
            agree, "" if have_torch else "; PyTorch is not installed, so it was not run"),
        "",
        "Ratios:",
        "",
    ] + ratios) + "\n"


def main():
    results_main(__doc__, report, 3)


if __name__ == "__main__":
    main()
