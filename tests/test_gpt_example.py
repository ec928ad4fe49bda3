"""examples/gpt.mg against the same GPT written in PyTorch here (float64, from the weights and
batches goat made): every step's loss and gradient norm, through AdamW, a global clip and the
cosine schedule -- and the example's own output."""

import math
import os

import numpy as np
import pytest

import goat

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLE = os.path.join(ROOT, "examples", "gpt.mg")
STEPS = 30


def _instrumented():
    """The example, printing its first weights, each step's batch, loss and norm in full."""
    src = open(EXAMPLE).read()
    src = src.replace("var m = zeros(gpt)\n", "print gpt\nvar m = zeros(gpt)\n")
    src = src.replace("let steps = 150", "let steps = %d" % STEPS)
    src = src.replace('    if step % 25 == 0 or step == steps - 1 {\n'
                      '        print "step {step}: loss {l:.4f}, gradient norm {norm:.4f}"\n'
                      '    }\n',
                      '    print x\n    print y\n    print "{l:.17g} {norm:.17g}"\n')
    return src[:src.index("# greedy continuation")]


def test_the_example_trains_and_continues_the_text():
    lines = goat.run_file(EXAMPLE)
    losses = [float(line.split("loss ")[1].split(",")[0]) for line in lines[:-1]]
    assert len(losses) == 7 and losses[-1] < losses[0] / 3
    assert lines[-1] == "the  -> 6 2 11 0"      # "mat ": the ids of ' .acehmnorst'


def test_the_example_takes_pytorchs_steps():
    torch = pytest.importorskip("torch")
    import torch.nn.functional as F
    out = goat.run_source(_instrumented(), path=EXAMPLE)
    flat, rest = out[0], out[1:]
    V, T, C, H, D, L, B = 12, 8, 16, 2, 8, 2, 4
    shapes = dict(wte=(V, C), wpe=(T, C), ln1g=(L, 1, C), ln1b=(L, 1, C), wqkv=(L, C, 3 * C),
                  wo=(L, C, C), ln2g=(L, 1, C), ln2b=(L, 1, C), w1=(L, C, 4 * C),
                  b1=(L, 1, 4 * C), w2=(L, 4 * C, C), b2=(L, 1, C), lnfg=(1, C), lnfb=(1, C))
    assert goat.check_file(EXAMPLE).params["gpt"] == {
        k: (sum(math.prod(s) for s in list(shapes.values())[:i]), s)
        for i, (k, s) in enumerate(shapes.items())}
    P, at = {}, 0
    for k, s in shapes.items():
        n = math.prod(s)
        P[k] = torch.tensor(flat[at:at + n].reshape(s), requires_grad=True)
        at += n
    assert at == flat.size
    mask = torch.tril(torch.ones(T, T, dtype=torch.bool))

    def forward(x):
        h = P["wte"][x] + P["wpe"]
        for layer in range(L):
            a = F.layer_norm(h, (C,), P["ln1g"][layer, 0], P["ln1b"][layer, 0], 1e-5)
            q, k, v = (a @ P["wqkv"][layer]).split(C, dim=-1)
            q, k, v = [t.view(B, T, H, D).transpose(1, 2) for t in (q, k, v)]
            att = (q @ k.transpose(-1, -2) / math.sqrt(D)).masked_fill(~mask, float("-inf"))
            o = (att.softmax(-1) @ v).transpose(1, 2).reshape(B, T, C)
            h = h + o @ P["wo"][layer]
            m = F.layer_norm(h, (C,), P["ln2g"][layer, 0], P["ln2b"][layer, 0], 1e-5)
            h = h + F.gelu(m @ P["w1"][layer] + P["b1"][layer], approximate="tanh") @ \
                P["w2"][layer] + P["b2"][layer]
        return F.layer_norm(h, (C,), P["lnfg"][0], P["lnfb"][0], 1e-5) @ P["wte"].T

    def lr_at(s, warm=10, total=STEPS, peak=0.02):
        if s < warm:
            return peak * (s + 1) / warm
        return peak * (1 + math.cos(math.pi * (s - warm) / (total - warm))) / 2

    opt = torch.optim.AdamW(P.values(), lr=0.02)        # PyTorch's defaults, as optim.adamw's
    for step in range(STEPS):
        x, y, line = rest[3 * step:3 * step + 3]
        x, y = torch.tensor(x).long(), torch.tensor(y).long()
        for group in opt.param_groups:
            group["lr"] = lr_at(step)
        loss = F.cross_entropy(forward(x).reshape(-1, V), y.reshape(-1))
        opt.zero_grad()
        loss.backward()
        norm = torch.nn.utils.clip_grad_norm_(P.values(), 1.0).item()
        opt.step()
        got_loss, got_norm = (float(s) for s in line.split())
        assert abs(got_loss - loss.item()) <= 1e-12 * loss.item(), step
        assert abs(got_norm - norm) <= 1e-11 * norm, step


def test_the_example_compiled_prints_what_goat_run_prints():
    pytest.importorskip("llvmlite")
    from conftest import cli
    status, interp, err = cli("run", EXAMPLE)
    assert status == 0, err
    status, compiled, err = cli("run", "--aot", EXAMPLE, timeout=300)
    assert status == 0, err
    assert compiled == interp and "the  -> 6 2 11 0" in compiled
