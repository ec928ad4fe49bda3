"""Benchmark: a training step of examples/gpt.mg against the same GPT in PyTorch.

    python bench/bench_gpt.py            # measure and print a Markdown report
    python bench/bench_gpt.py --write    # also write it to bench/RESULTS.md

Side by side in one process, each the median of --repeat runs taken in alternation:

* goat: the evaluation of the checked example (its 150 steps: the batch drawn, the forward
  pass, grad, the global clip, AdamW under the cosine schedule; parse and check done once,
  outside the timing; the greedy continuation after it left out), divided by 150;
* PyTorch eager on the CPU, float64, one thread: the same model written here (a params block's
  members as separate tensors, fused QKV split, two pre-norm blocks, tied head), the same
  batches, loss.backward(), clip_grad_norm_ over all parameters and torch.optim.AdamW, per step.

(Installed with ``pip install '.[bench]'``; without PyTorch only goat's step time is reported.
tests/test_gpt_example.py holds the two to the same numbers.)
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
PROGRAM = os.path.join(ROOT, "examples", "gpt.mg")
STEPS = 150
V, T, C, H, D, L, B = 12, 8, 16, 2, 8, 2, 4


def _training_only():
    text = open(PROGRAM).read()
    assert "let steps = %d" % STEPS in text
    return text[:text.index("# greedy continuation")]


def torch_runner():
    """The same for the PyTorch model, or None without PyTorch."""
    setup = torch_f64()
    if setup is None:
        return None
    torch, F, dt, gen = setup
    text = torch.tensor([11, 5, 4, 0, 3, 2, 11, 0, 10, 2, 11, 0, 8, 7, 0, 11, 5, 4, 0, 6, 2,
                         11, 1, 0, 2, 0, 5, 4, 7, 0, 2, 11, 4, 0, 11, 5, 4, 0, 5, 2, 11, 1, 0,
                         11, 5, 4, 0, 9, 2, 11, 0, 9, 2, 7, 0, 11, 8, 0, 11, 5, 4, 0, 5, 4, 7,
                         1, 0])
    mask = torch.tril(torch.ones(T, T, dtype=torch.bool))

    def run():
        def w(*shape):
            return (torch.randn(*shape, dtype=dt, generator=gen) * 0.1).requires_grad_()
        P = dict(wte=w(V, C), wpe=w(T, C), wqkv=w(L, C, 3 * C), wo=w(L, C, C),
                 w1=w(L, C, 4 * C), w2=w(L, 4 * C, C))
        for k, shape in (("ln1g", (L, 1, C)), ("ln2g", (L, 1, C)), ("lnfg", (1, C))):
            P[k] = torch.ones(*shape, dtype=dt, requires_grad=True)
        for k, shape in (("ln1b", (L, 1, C)), ("ln2b", (L, 1, C)), ("lnfb", (1, C)),
                         ("b1", (L, 1, 4 * C)), ("b2", (L, 1, C))):
            P[k] = torch.zeros(*shape, dtype=dt, requires_grad=True)
        opt = torch.optim.AdamW(P.values(), lr=0.02)
        t0 = time.perf_counter()
        for step in range(STEPS):
            at = torch.randint(0, text.numel() - T, (B, 1), generator=gen)
            idx = at + torch.arange(T)
            x, y = text[idx], text[idx + 1]
            for group in opt.param_groups:
                group["lr"] = (0.02 * (step + 1) / 10 if step < 10 else
                               0.02 * (1 + math.cos(math.pi * (step - 10) / (STEPS - 10))) / 2)
            h = P["wte"][x] + P["wpe"]
            for layer in range(L):
                a = F.layer_norm(h, (C,), P["ln1g"][layer, 0], P["ln1b"][layer, 0], 1e-5)
                q, k, v = ((t.view(B, T, H, D).transpose(1, 2))
                           for t in (a @ P["wqkv"][layer]).split(C, dim=-1))
                att = (q @ k.transpose(-1, -2) / math.sqrt(D)).masked_fill(~mask, -math.inf)
                h = h + (att.softmax(-1) @ v).transpose(1, 2).reshape(B, T, C) @ P["wo"][layer]
                m = F.layer_norm(h, (C,), P["ln2g"][layer, 0], P["ln2b"][layer, 0], 1e-5)
                h = h + F.gelu(m @ P["w1"][layer] + P["b1"][layer], approximate="tanh") @ \
                    P["w2"][layer] + P["b2"][layer]
            z = F.layer_norm(h, (C,), P["lnfg"][0], P["lnfb"][0], 1e-5) @ P["wte"].T
            loss = F.cross_entropy(z.reshape(-1, V), y.reshape(-1))
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(P.values(), 1.0)
            opt.step()
        return time.perf_counter() - t0
    return run


def report(repeat):
    return per_step_table(
        "A small GPT with a params block, per training step",
        "`examples/gpt.mg`'s %d training steps (V %d, T %d, C %d, %d heads, %d blocks, batch "
        "%d); median of %d runs each, alternating, in one process (`python "
        "bench/bench_gpt.py`)." % (STEPS, V, T, C, H, L, B, repeat),
        "batch, forward, gradient, global clip, AdamW", (per_step(goat_runner(_training_only(), PROGRAM), torch_runner(), STEPS, repeat), repeat))


def main():
    results_main(__doc__, report, 7)


if __name__ == "__main__":
    main()
