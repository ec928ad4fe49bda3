"""The GPU back end, measured side by side (issue 8, point 6).

    python bench/bench_gpu.py            # on a machine with an NVIDIA GPU, CuPy and PyTorch
    python bench/bench_gpu.py --check    # anywhere: the two models agree (small, on the CPU)

Two comparisons, in one run, on the same device:

1. **A GPT-style training step**: batch 16, 256 tokens, width 512, 8 heads, 4 pre-norm
   layers (RMS norm, causal attention, a GELU MLP of width 2048), vocabulary 256, the head
   tied to the embedding, cross-entropy, AdamW; float32.  goat runs it with
   ``--backend cupy --dtype f32`` (the program is :func:`gpt_program`); PyTorch runs the same
   model eagerly on CUDA (:func:`torch_model`).  A step's time is taken as the difference
   between a run of ``1 + N`` steps and a run of 1, divided by N, so start-up (CUDA context,
   kernel compilation) is left out on both sides.  Goal: goat within 1.3x PyTorch.
2. **The chapter's 200 training steps** (examples/lm35/train.mg) under ``--backend auto``
   against ``--backend numpy``: auto should keep this tiny, launch-bound model on the CPU,
   so the two times should match.

The script installs nothing: without CuPy, PyTorch with CUDA or a device it says what is
missing and measures nothing.  ``--check`` runs the goat program and the PyTorch model at a
small size in float64 on the CPU and compares their losses step by step (the test suite runs
it: tests/test_bench_gpu.py), so the model timed on the GPU is the same model on both sides.
Results go to bench/RESULTS.md with the device named.
"""
from __future__ import annotations

import argparse
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FULL = dict(batch=16, tokens=256, width=512, heads=8, layers=4, vocab=256, hidden=2048)
SMALL = dict(batch=2, tokens=8, width=16, heads=2, layers=2, vocab=11, hidden=32)
LR, WD = 0.001, 0.01


def _weights(c):
    """(name, shape, init scale) of every weight, in one order for goat and PyTorch."""
    w, h, d = c["width"], c["heads"], c["width"] // c["heads"]
    out = [("emb", (c["vocab"], w), 0.02)]
    for i in range(c["layers"]):
        out += [("g1_%d" % i, (1, w), None), ("wq_%d" % i, (h, w, d), 0.02),
                ("wk_%d" % i, (h, w, d), 0.02), ("wv_%d" % i, (h, w, d), 0.02),
                ("wo_%d" % i, (h, d, w), 0.02), ("g2_%d" % i, (1, w), None),
                ("w1_%d" % i, (w, c["hidden"]), 0.02), ("w2_%d" % i, (c["hidden"], w), 0.02)]
    out.append(("gf", (1, w), None))
    return out


def _t(shape):
    return "tensor[%s]" % "x".join(str(s) for s in shape)


def gpt_program(c, steps: int, print_each: bool = False) -> str:
    """The goat program: ``steps`` AdamW steps of the GPT-style model ``c`` on one fixed
    batch of seeded random tokens; prints the last loss (every loss with ``print_each``).
    Heads are a leading batch axis (wq: heads x width x head-width), so attention is batched
    matrix products and reshapes, with no transposition of axes."""
    n, t, w, h = c["batch"] * c["tokens"], c["tokens"], c["width"], c["heads"]
    d = w // h
    ws = _weights(c)
    lines = ["import nn", "import optim", ""]
    lines.append("let tokens = floor(rand(tensor[%dx1], 1) * %d)" % (n, c["vocab"]))
    lines.append("let targets = floor(rand(tensor[%dx1], 2) * %d)" % (n, c["vocab"]))
    lines.append("let mask = nn.causal_mask(zeros(tensor[%dx%d]))" % (t, t))
    lines.append("")
    params = ", ".join("%s: %s" % (name, _t(s)) for name, s, _ in ws)
    lines.append("def loss(%s) {" % params)
    lines.append("    var x = gather(emb, tokens)")
    for i in range(c["layers"]):
        lines += [
            "    let a%d = reshape(nn.rms_norm(x, g1_%d), tensor[1x%dx%d])" % (i, i, n, w),
            "    let q%d = reshape(a%d @ wq_%d, tensor[%dx%dx%dx%d])" % (i, i, i, h, c["batch"], t, d),
            "    let k%d = reshape(a%d @ wk_%d, tensor[%dx%dx%dx%d])" % (i, i, i, h, c["batch"], t, d),
            "    let v%d = reshape(a%d @ wv_%d, tensor[%dx%dx%dx%d])" % (i, i, i, h, c["batch"], t, d),
            "    let o%d = reshape(nn.attention(q%d, k%d, v%d, mask, %r), tensor[%dx%dx%d])"
            % (i, i, i, i, 1 / math.sqrt(d), h, n, d),
            "    let heads%d = reshape(o%d @ wo_%d, tensor[%dx%d])" % (i, i, i, h, n * w),
            "    x = x + reshape(col_sum(heads%d), tensor[%dx%d])" % (i, n, w),
            "    x = x + nn.gelu(nn.rms_norm(x, g2_%d) @ w1_%d) @ w2_%d" % (i, i, i),
        ]
    lines.append("    return nn.cross_entropy(nn.rms_norm(x, gf) @ transpose(emb), targets)")
    lines.append("}")
    lines.append("")
    for k, (name, s, scale) in enumerate(ws):
        init = "ones(%s)" % _t(s) if scale is None else "randn(%s, %d) * %r" % (_t(s), 10 + k, scale)
        lines.append("var %s = %s" % (name, init))
        lines.append("var m_%s = zeros(%s)" % (name, _t(s)))
        lines.append("var v_%s = zeros(%s)" % (name, _t(s)))
    names = [name for name, _, _ in ws]
    lines.append("var last = [[0.0]]")
    lines.append("for step in 0 .. %d {" % steps)
    lines.append("    let l = loss(%s)" % ", ".join(names))
    lines.append("    let %s = grad(l, %s)" % (", ".join("G" + x for x in names), ", ".join(names)))
    for x in names:
        lines.append("    %s, m_%s, v_%s = optim.adamw(%s, G%s, m_%s, v_%s, step + 1, %r, 0.9, "
                     "0.999, 1e-08, %r)" % (x, x, x, x, x, x, x, LR, WD))
    if print_each:
        lines.append('    print "{l:.12g}"')
    lines.append("    last = l")
    lines.append("}")
    lines.append('print "loss {last:.6f}"')
    return "\n".join(lines) + "\n"


def torch_model(c, torch, device, dtype):
    """The same model and data in PyTorch: (params, step function returning the loss)."""
    import numpy as np
    sys.path.insert(0, str(ROOT))
    from goat.ops import rng
    n, t, w, h = c["batch"] * c["tokens"], c["tokens"], c["width"], c["heads"]
    d = w // h
    tokens = torch.tensor(np.floor(rng.uniform(np, (n,), 1) * c["vocab"]).astype(np.int64),
                          device=device)
    targets = torch.tensor(np.floor(rng.uniform(np, (n,), 2) * c["vocab"]).astype(np.int64),
                           device=device)
    params = {}
    for k, (name, s, scale) in enumerate(_weights(c)):
        v = np.ones(s) if scale is None else rng.normal(np, s, 10 + k) * scale
        params[name] = torch.tensor(v, dtype=dtype, device=device, requires_grad=True)
    mask = torch.triu(torch.full((t, t), -1e9, dtype=dtype, device=device), diagonal=1)
    opt = torch.optim.AdamW(params.values(), lr=LR, betas=(0.9, 0.999), eps=1e-8,
                            weight_decay=WD)
    F = torch.nn.functional

    def rms(x, g):
        return x / torch.sqrt((x * x).mean(-1, keepdim=True) + 1e-5) * g

    def loss():
        p = params
        x = p["emb"][tokens]
        for i in range(c["layers"]):
            a = rms(x, p["g1_%d" % i])[None]                        # 1 x n x w
            q = (a @ p["wq_%d" % i]).reshape(h, c["batch"], t, d)
            k = (a @ p["wk_%d" % i]).reshape(h, c["batch"], t, d)
            v = (a @ p["wv_%d" % i]).reshape(h, c["batch"], t, d)
            s = torch.softmax(q @ k.transpose(-1, -2) * (1 / math.sqrt(d)) + mask, dim=-1)
            o = (s @ v).reshape(h, n, d)
            x = x + (o @ p["wo_%d" % i]).sum(0)
            x = x + F.gelu(rms(x, p["g2_%d" % i]) @ p["w1_%d" % i], approximate="tanh") \
                @ p["w2_%d" % i]
        logits = rms(x, p["gf"]) @ p["emb"].T
        return F.cross_entropy(logits, targets)

    def step():
        opt.zero_grad(set_to_none=True)
        l = loss()
        l.backward()
        opt.step()
        return l
    return params, step


# ---------------------------------------------------------------- the two sides, timed

def _goat_seconds(text, backend, dtype):
    """Seconds of goat's run phase for the program ``text`` (in-process, as goat run)."""
    import goat
    timings = {}
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "gpt.mg")
        with open(path, "w") as f:
            f.write(text)
        out = goat.run_file(path, backend=backend, dtype=dtype, timings=timings)
    return timings["run"], out


def goat_step(c, steps, backend="cupy", dtype="f32"):
    """Seconds of one step: (1 + steps steps) - (1 step), after an untimed run of one step
    that compiles the kernels (CuPy keeps them on disk; the two timed runs load them)."""
    _goat_seconds(gpt_program(c, 1), backend, dtype)
    one, _ = _goat_seconds(gpt_program(c, 1), backend, dtype)
    many, out = _goat_seconds(gpt_program(c, 1 + steps), backend, dtype)
    return (many - one) / steps, out[-1]


def profile(c, steps, path, backend="cupy", dtype="f32"):
    """cProfile of goat running ``steps`` steps (kernels already compiled): where the host's
    time goes, by function, written to ``path``."""
    import cProfile
    import io
    import pstats
    _goat_seconds(gpt_program(c, 1), backend, dtype)
    prof = cProfile.Profile()
    prof.enable()
    seconds, _ = _goat_seconds(gpt_program(c, steps), backend, dtype)
    prof.disable()
    buf = io.StringIO()
    st = pstats.Stats(prof, stream=buf)
    buf.write("%d steps, run phase %.3f s under the profiler\n" % (steps, seconds))
    st.sort_stats("tottime").print_stats(40)
    st.sort_stats("cumulative").print_stats(40)
    Path(path).write_text(buf.getvalue())
    print(buf.getvalue())


def torch_step(c, steps, torch):
    _, step = torch_model(c, torch, "cuda", torch.float32)
    step()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(steps):
        l = step()
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) / steps, l.item()


def chapter(backend):
    """(wall seconds, stdout, the --time report) of goat run --time --backend BACKEND on the
    chapter's training (examples/lm35/train.mg), a process of its own."""
    t0 = time.perf_counter()
    r = subprocess.run([sys.executable, "-m", "goat", "run", "--time", "--backend", backend,
                        str(ROOT / "examples" / "lm35" / "train.mg")],
                       capture_output=True, text=True, cwd=str(ROOT))
    wall = time.perf_counter() - t0
    if r.returncode != 0:
        raise SystemExit("goat run --backend %s failed:\n%s" % (backend, r.stderr))
    report = " / ".join(line[len("goat: "):] for line in r.stderr.splitlines()
                        if line.startswith("goat: "))
    return wall, r.stdout, report


def chapters(rounds=3):
    """The chapter under numpy and auto, alternated ``rounds`` times: the best wall time of
    each, whether the outputs agree, and the last --time reports."""
    best, outs, reports = {}, {}, {}
    for _ in range(rounds):
        for backend in ("numpy", "auto"):
            wall, out, report = chapter(backend)
            best[backend] = min(best.get(backend, wall), wall)
            outs.setdefault(backend, out)
            reports[backend] = report
    return best, outs["numpy"] == outs["auto"], reports


def check(steps=3) -> int:
    """The goat program and the PyTorch model, small, float64, on the CPU: the same losses."""
    import torch
    text = gpt_program(SMALL, steps, print_each=True)
    import goat
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "gpt.mg")
        with open(path, "w") as f:
            f.write(text)
        out = goat.run_file(path)
    got = [float(line) for line in out[:-1]]
    _, step = torch_model(SMALL, torch, "cpu", torch.float64)
    want = [step().item() for _ in range(steps)]
    worst = max(abs(a - b) / abs(b) for a, b in zip(got, want))
    print("goat   losses: %s" % " ".join("%.12g" % x for x in got))
    print("torch  losses: %s" % " ".join("%.12g" % x for x in want))
    print("largest relative difference: %.3g" % worst)
    return 0 if worst < 1e-9 else 1


def _device_table(run, label, steps, out):
    """Run ``run()`` under PyTorch's profiler (CUPTI records every CUDA kernel of the process,
    CuPy's too) and write the kernels that took the most device time; returns (device
    seconds, wall seconds) per step."""
    from torch.profiler import ProfilerActivity, profile
    t0 = time.perf_counter()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        run()
    wall = time.perf_counter() - t0
    events = prof.key_averages()

    def device_us(e):
        for name in ("self_device_time_total", "self_cuda_time_total"):
            v = getattr(e, name, None)
            if v is not None:
                return v
        return 0
    kernels = [e for e in events if device_us(e) > 0 and "cuda" in str(
        getattr(e, "device_type", "cuda")).lower()]
    busy = sum(device_us(e) for e in kernels) / 1e6
    kernels.sort(key=device_us, reverse=True)
    out.write("== %s: %d steps, wall %.1f ms a step, device busy %.1f ms a step, %d kernel "
              "launches a step\n" % (label, steps, wall / steps * 1e3, busy / steps * 1e3,
                                     sum(e.count for e in kernels) // steps))
    for e in kernels[:40]:
        out.write("%9.3f ms %6d  %s\n" % (device_us(e) / 1e3 / steps, e.count // steps,
                                          e.key[:110]))
    out.flush()
    return busy / steps, wall / steps


def kernels(c, steps, path):
    """Where the device's time goes in a step, goat (CuPy) against PyTorch eager, kernel by
    kernel, and how long the host takes to issue a step: written to ``path``."""
    import torch
    with open(path, "w") as out:
        try:
            _, step = torch_model(c, torch, "cuda", torch.float32)
            step()
            torch.cuda.synchronize()

            def torch_run():
                for _ in range(steps):
                    step()
                torch.cuda.synchronize()
            _device_table(torch_run, "PyTorch eager CUDA", steps, out)
        except Exception:
            import traceback
            traceback.print_exc(file=out)
        try:
            _goat_seconds(gpt_program(c, 1), "cupy", "f32")        # kernels compiled
            text = gpt_program(c, steps)
            _device_table(lambda: _goat_seconds(text, "cupy", "f32"),
                          "goat cupy (the run includes the program's check and setup)",
                          steps, out)
        except Exception:
            import traceback
            traceback.print_exc(file=out)
    print(Path(path).read_text())


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--check", action="store_true",
                   help="compare the goat and PyTorch models, small, on the CPU")
    p.add_argument("--steps", type=int, default=10, help="timed steps (default 10)")
    p.add_argument("--profile", metavar="FILE",
                   help="instead: profile goat's host time over the steps into FILE")
    p.add_argument("--kernels", metavar="FILE",
                   help="instead: the device time of each kernel in a step, goat and PyTorch, "
                        "into FILE")
    args = p.parse_args(argv)
    if args.check:
        return check()
    sys.path.insert(0, str(ROOT))
    from goat.gpu import cupy_usable
    missing = cupy_usable()
    try:
        import torch
        if not torch.cuda.is_available():
            missing = missing or "PyTorch finds no CUDA device"
    except ImportError:
        missing = missing or "PyTorch is not installed"
    if missing:
        print("nothing measured: %s" % missing)
        return 1
    import cupy
    import traceback
    device = cupy.cuda.runtime.getDeviceProperties(0)["name"].decode()
    print("device: %s; goat %s, CuPy %s, PyTorch %s, NumPy %s"
          % (device, __import__("goat").__version__, cupy.__version__, torch.__version__,
             __import__("numpy").__version__), flush=True)
    if args.profile:
        profile(FULL, args.steps, args.profile)
        return 0
    if args.kernels:
        kernels(FULL, args.steps, args.kernels)
        return 0
    failed = 0
    # each measurement is printed as soon as it is made; one that fails does not stop the others
    try:
        t, tl = torch_step(FULL, args.steps, torch)
        print("PyTorch eager CUDA: %.2f ms a step (last loss %.6f)" % (t * 1e3, tl), flush=True)
    except Exception:
        traceback.print_exc()
        t, failed = None, failed + 1
    try:
        g, gl = goat_step(FULL, args.steps)
        print("GPT step (batch 16 x 256 tokens, width 512, 8 heads, 4 layers, vocab 256, f32, "
              "AdamW): goat cupy %.2f ms%s; last losses %s / %s"
              % (g * 1e3, ", PyTorch eager CUDA %.2f ms, ratio %.2fx (goal <= 1.3x)"
                 % (t * 1e3, g / t) if t else "", gl, "%.6f" % tl if t else "-"), flush=True)
    except Exception:
        traceback.print_exc()
        failed += 1
    try:
        best, same, reports = chapters()
        print("chapter's 200 steps, a process each, best of 3: numpy %.3f s, auto %.3f s, "
              "ratio %.2fx; same output: %s\n  numpy: %s\n  auto: %s"
              % (best["numpy"], best["auto"], best["auto"] / best["numpy"],
                 "yes" if same else "NO", reports["numpy"], reports["auto"]), flush=True)
    except BaseException:
        traceback.print_exc()
        failed += 1
    return failed


if __name__ == "__main__":
    sys.exit(main())
