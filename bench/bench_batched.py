"""Benchmark: a training step of examples/batched_trainer.mg against the same model in PyTorch.

    python bench/bench_batched.py            # measure and print a Markdown report
    python bench/bench_batched.py --write    # also write it to bench/RESULTS.md

The program is run for 200 steps instead of 3 (its loop bound and its schedule's length
changed, nothing else).  Side by side in one process, each the median of --repeat runs:

* goat: the evaluation of the checked program (grad's nodes included; parse and check are
  done once, outside the timing), divided by the number of steps;
* PyTorch eager on the CPU, float64: the same model, written here (embedding lookup, two
  pre-norm blocks with RMS norm, batched causal attention through view, dropout, a GELU MLP,
  a tied head, cross-entropy), loss.backward(), per-tensor gradient clipping and
  torch.optim.AdamW under the same cosine schedule, per step.

Both do the whole step: forward, gradient, clipping, the optimizer.  (Installed with
``pip install '.[bench]'``; without PyTorch only goat's step time is reported.)
"""
from __future__ import annotations

import math
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from results import goat_runner, main as results_main, per_step, per_step_table, torch_f64  # noqa: E402

ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)
PROGRAM = os.path.join(ROOT, "examples", "batched_trainer.mg")
STEPS = 200


def _program():
    """The program run for STEPS steps instead of 3 (its loop and its schedule's length)."""
    text = open(PROGRAM).read()
    text = text.replace("for step in 0..3 {", "for step in 0..%d {" % STEPS)
    text = text.replace("optim.cosine_lr(step, 0, 3, 0.0625)",
                        "optim.cosine_lr(step, 0, %d, 0.0625)" % STEPS)
    assert "0..%d" % STEPS in text
    return text


def torch_runner():
    """The same for the PyTorch model, or None without PyTorch."""
    setup = torch_f64()
    if setup is None:
        return None
    torch, F, dt, gen = setup
    tokens = torch.tensor([1, 2, 3, 2, 3, 4])
    targets = torch.tensor([2, 3, 4, 3, 4, 0])
    mask = torch.triu(torch.full((3, 3), -1e9, dtype=dt), diagonal=1)

    def param(*shape, one=False):
        t = torch.ones(*shape, dtype=dt) if one else torch.randn(*shape, dtype=dt,
                                                                  generator=gen) * 0.5
        return t.requires_grad_()

    def rms(x, g):
        return x / torch.sqrt((x * x).mean(-1, keepdim=True) + 1e-5) * g

    def run():
        e = param(5, 4)
        blocks = [dict(g1=param(1, 4, one=True), wq=param(4, 4), wk=param(4, 4),
                       wv=param(4, 4), wo=param(4, 4), g2=param(1, 4, one=True),
                       w1=param(4, 8), w2=param(8, 4)) for _ in range(2)]
        gf = param(1, 4, one=True)
        params = [e, gf] + [p for b in blocks for p in b.values()]
        opt = torch.optim.AdamW(params, lr=0.0625, betas=(0.9, 0.999), eps=1e-8,
                                weight_decay=0.0625)
        t0 = time.perf_counter()
        for step in range(STEPS):
            for group in opt.param_groups:
                group["lr"] = 0.0625 * 0.5 * (1 + math.cos(math.pi * step / STEPS))
            x = e[tokens]
            for b in blocks:
                a = rms(x, b["g1"])
                q, k, v = ((a @ b[n]).view(2, 3, 4) for n in ("wq", "wk", "wv"))
                sc = q @ k.transpose(-1, -2) * 0.5 + mask
                p = F.dropout(torch.softmax(sc, dim=-1), 0.1, training=True)
                x = x + (p @ v).reshape(6, 4) @ b["wo"]
                x = x + F.gelu(rms(x, b["g2"]) @ b["w1"], approximate="tanh") @ b["w2"]
            loss = F.cross_entropy(rms(x, gf) @ e.t(), targets)
            opt.zero_grad()
            loss.backward()
            for p_ in params:
                torch.nn.utils.clip_grad_norm_([p_], 1.0)
            opt.step()
        return time.perf_counter() - t0

    return run


def report(repeat):
    return per_step_table(
        "The batched two-block trainer, per training step",
        "`examples/batched_trainer.mg` run for %d steps; median of %d runs each, alternating, in "
        "one process (`python bench/bench_batched.py`)." % (STEPS, repeat),
        "forward, gradient, clipping, AdamW", (per_step(goat_runner(_program(), PROGRAM), torch_runner(), STEPS, repeat), repeat))


def main():
    results_main(__doc__, report, 7)


if __name__ == "__main__":
    main()
