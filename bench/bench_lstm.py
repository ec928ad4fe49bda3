"""Benchmark: an LSTM trained with grad through its loop over time, against PyTorch.

    python bench/bench_lstm.py            # measure and print a Markdown report
    python bench/bench_lstm.py --write    # also write it to bench/RESULTS.md

One LSTM layer (batch 32, 100 steps of time, 1 input, 128 hidden units, its four gates one
matrix product of [x_t, h] split in four, the weights in a params block), a linear head on the
last h, the mean squared error against the sequence's scaled sum; 10 training steps with
AdamW.  Side by side in one process, each the median of --repeat runs taken in alternation:

* goat: the evaluation of the checked program (parse and check done once, outside the
  timing), divided by the steps;
* PyTorch eager on the CPU, float64, one thread: the same cell written with ``chunk`` and
  autograd, ``torch.optim.AdamW``, per step.

The weights and batches are drawn separately (the timing is the point; tests/test_grad_tapes.py
holds goat's LSTM gradient to PyTorch's).
"""
from __future__ import annotations

import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))
from results import goat_runner, main as results_main, per_step, per_step_table, torch_f64  # noqa: E402

B, T, D, H, STEPS = 32, 100, 1, 128, 10

PROGRAM = """import optim
let B = %d
let T = %d
let D = %d
let H = %d
params theta {
    w = randn(tensor[D + H, 4 * H], 1) * 0.1
    b = zeros(tensor[1, 4 * H])
    wy = randn(tensor[H, 1], 2) * 0.1
    by = zeros(tensor[1, 1])
}
def forward(p: theta, x: tensor[N, T, D]) {
    var h = zeros(tensor[N, H])
    var c = zeros(tensor[N, H])
    for t in 0..T {
        let i, f, g, o = split(concat(x[:, t], h, 1) @ p.w + p.b, 4, -1)
        c = sigmoid(f) * c + sigmoid(i) * tanh(g)
        h = sigmoid(o) * tanh(c)
    }
    return h @ p.wy + p.by
}
var m = zeros(theta)
var v = zeros(theta)
for step in 0..%d {
    let x = randn(tensor[B, T, D], 100 + step)
    let y: tensor[B, 1] = reshape(col_sum(x) / 10)
    let l = mean(square(forward(theta, x) - y))
    theta, m, v = optim.adamw(theta, grad(l, theta), m, v, step + 1, 0.01)
}
""" % (B, T, D, H, STEPS)


def torch_runner():
    """The same training in PyTorch, or None without it."""
    setup = torch_f64()
    if setup is None:
        return None
    torch, _, dt, gen = setup

    def run():
        w = (torch.randn(D + H, 4 * H, dtype=dt, generator=gen) * 0.1).requires_grad_()
        b = torch.zeros(1, 4 * H, dtype=dt, requires_grad=True)
        wy = (torch.randn(H, 1, dtype=dt, generator=gen) * 0.1).requires_grad_()
        by = torch.zeros(1, 1, dtype=dt, requires_grad=True)
        opt = torch.optim.AdamW([w, b, wy, by], lr=0.01)
        t0 = time.perf_counter()
        for _ in range(STEPS):
            x = torch.randn(B, T, D, dtype=dt, generator=gen)
            y = x.sum(1) / 10
            h = torch.zeros(B, H, dtype=dt)
            c = torch.zeros(B, H, dtype=dt)
            for t in range(T):
                i, f, g, o = (torch.cat([x[:, t], h], 1) @ w + b).chunk(4, -1)
                c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
                h = torch.sigmoid(o) * torch.tanh(c)
            loss = ((h @ wy + by - y) ** 2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        return time.perf_counter() - t0
    return run


def report(repeat):
    path = os.path.join(HERE, "lstm.mg")
    return per_step_table(
        "An LSTM trained through its loop over time, per training step",
        "One LSTM layer (batch %d, %d steps of time, %d hidden units, the gates one product "
        "split in four), %d AdamW steps with grad through the loop; median of %d runs each, "
        "alternating, in one process (`python bench/bench_lstm.py`)."
        % (B, T, H, STEPS, repeat),
        "forward through time, gradient, AdamW",
        (per_step(goat_runner(PROGRAM, path), torch_runner(), STEPS, repeat), repeat))


def main():
    results_main(__doc__, report, 5)


if __name__ == "__main__":
    main()
