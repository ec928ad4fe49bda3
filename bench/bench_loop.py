"""Benchmark: the chapter's 200 training steps as a goat loop, against the same loop by hand.

    python bench/bench_loop.py            # measure and print a Markdown report
    python bench/bench_loop.py --write    # also write it to bench/RESULTS.md

Side by side in one run (the processes alternate, so that a change in the machine's load
touches all of them alike), each the median of --repeat runs:

* ``goat run examples/lm35/train.mg``: the loop, one page, as a user runs it (a fresh process:
  start-up, parse, check, evaluate, print), with its peak resident memory;
* ``python bench/numpy_loop.py``: the same 200 steps written by hand in NumPy, saving the trained
  weights as train.mg does (written, flushed to disk, renamed), a fresh process;
* ``python bench/torch_loop.py``: the same in PyTorch eager on the CPU (float64, the same
  hand-derived backward pass), when PyTorch is installed (``pip install '.[bench]'``);
* ``goat run examples/lm35/train_200.mg``: the 14,529-line unrolled program (goals: 1.5 s and
  300 MB);
* inside one process: goat's evaluation of train.mg against the NumPy loop's 200 steps, and
  the interpreter's cost per operation it executes.

Python keeps compiled bytecode of goat's modules (``__pycache__``), as an installed goat does:
``PYTHONDONTWRITEBYTECODE`` is removed from the environment of the processes measured. goat's
cache of statement shapes is warm (one run of each program first), as it is from a user's second
run of a program on; the first run of a program never seen is reported separately.
"""
from __future__ import annotations

import datetime
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from results import machine, main as results_main  # noqa: E402

ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)
TRAIN = os.path.join(ROOT, "examples", "lm35", "train.mg")
UNROLLED = os.path.join(ROOT, "examples", "lm35", "train_200.mg")


def _env(**extra):
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.update(extra)
    return env


def run_process(argv, env=None):
    """(wall seconds, peak RSS in MB, stdout) of one fresh process."""
    t0 = time.perf_counter()
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         env=env or _env(), cwd=ROOT)
    out = p.stdout.read()
    _, status, usage = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    err = p.stderr.read().decode()
    p.stdout.close()
    p.stderr.close()
    if status != 0:
        raise SystemExit("failed: %s\n%s" % (" ".join(argv), err))
    return wall, usage.ru_maxrss / 1024.0, out.decode()


def have_torch() -> bool:
    return subprocess.run([sys.executable, "-c", "import torch"], capture_output=True,
                          env=_env()).returncode == 0


def processes(repeat):
    goat = [sys.executable, "-m", "goat", "run", "--quiet", TRAIN]
    contenders = {
        "goat": goat,
        "numpy": [sys.executable, os.path.join(HERE, "numpy_loop.py")],
        "unrolled": [sys.executable, "-m", "goat", "run", "--quiet", UNROLLED],
    }
    if have_torch():
        contenders["torch"] = [sys.executable, os.path.join(HERE, "torch_loop.py")]
    outputs = {}
    for name, argv in contenders.items():         # warm-up: caches, and the output to compare
        outputs[name] = run_process(argv)[2]
    runs = {name: [] for name in contenders}
    for _ in range(repeat):
        for name, argv in contenders.items():
            runs[name].append(run_process(argv)[:2])
    # a program goat has never read: an empty cache of statement shapes
    cold = []
    for _ in range(repeat):
        with tempfile.TemporaryDirectory() as cache:
            cold.append(run_process(goat, _env(XDG_CACHE_HOME=cache))[0])
    result = {name: {"wall": statistics.median(w for w, _ in r), "rss": max(m for _, m in r)}
              for name, r in runs.items()}
    # the ratio of each round's goat run to the same round's competitor run, then their
    # median: less moved by a change in the machine's load than a ratio of medians
    for name in runs:
        result[name]["paired"] = statistics.median(
            g / c for (g, _), (c, _) in zip(runs["goat"], runs[name]))
    result["goat_cold"] = {"wall": statistics.median(cold)}
    same = outputs["goat"] == outputs["numpy"]
    return result, same


def in_process(repeat):
    """goat's evaluation of train.mg and the NumPy loop's 200 steps, in this process."""
    import numpy as np

    import goat
    import numpy_loop
    from goat.gpu import get_backend
    from goat.interp import evaluator as ev_module
    from goat.interp.evaluator import Evaluator

    program = goat.check_file(TRAIN)
    data, weights = numpy_loop.load()
    mk = numpy_loop.causal_mask()

    def run_goat():
        Evaluator(program, get_backend("numpy"), out=None).run()

    def run_numpy():
        with np.errstate(all="ignore"):
            w, _, _ = numpy_loop.train(data, weights, mk)
            numpy_loop.save_weights(w)          # train.mg saves its weights too

    run_goat()
    run_numpy()
    g, n = [], []
    for _ in range(repeat):
        t0 = time.perf_counter()
        run_goat()
        t1 = time.perf_counter()
        run_numpy()
        g.append(t1 - t0)
        n.append(time.perf_counter() - t1)
    # how many operations goat executes (one evaluation with every op counted), and the
    # interpreter's own cost: the same evaluation with every op replaced by a do-nothing
    count = [0]
    real_fn = Evaluator._fn

    def counting_fn(self, node):
        fn = real_fn(self, node)
        if node.kind in (ev_module.LOOP, ev_module.BRANCH):
            return fn

        def counted(*args):
            count[0] += 1
            return fn(*args)
        return counted
    Evaluator._fn = counting_fn
    try:
        run_goat()
    finally:
        Evaluator._fn = real_fn
    return {"goat": statistics.median(g), "numpy": statistics.median(n), "ops": count[0]}


def report(repeat):
    procs, same = processes(repeat)
    inner = in_process(repeat)
    today = datetime.date.today().isoformat()
    goat, npy = procs["goat"], procs["numpy"]
    rows = [
        ("goat, the loop (`examples/lm35/train.mg`, %d lines)"
         % sum(1 for _ in open(TRAIN, encoding="utf-8")), goat),
        ("NumPy by hand (`bench/numpy_loop.py`)", npy),
    ]
    if "torch" in procs:
        rows.append(("PyTorch eager, CPU, float64 (`bench/torch_loop.py`)", procs["torch"]))
    rows.append(("goat, unrolled (`examples/lm35/train_200.mg`, %d lines)"
                 % sum(1 for _ in open(UNROLLED, encoding="utf-8")), procs["unrolled"]))
    out = ["## The chapter's 200 training steps as a loop (%s)" % today, "",
           "Machine: %s. Whole processes, median of %d runs each, alternating, in one run of "
           "`python bench/bench_loop.py`; goat's bytecode and statement-shape caches warm "
           "(see the script's docstring)." % (machine(), repeat), "",
           "| what | wall time | peak RSS |", "|---|---|---|"]
    out += ["| %s | %.3f s | %.0f MB |" % (name, r["wall"], r["rss"]) for name, r in rows]
    per_op = (inner["goat"] - inner["numpy"]) / inner["ops"] * 1e6
    out += ["",
            "train.mg's output equals numpy_loop.py's, byte for byte: %s." % ("yes" if same else "NO"),
            "",
            "Ratios:",
            "",
            "- goat loop / NumPy by hand, whole process (the median of the %d rounds' ratios): "
            "**%.2f×** (goal: at most 1.25×)." % (repeat, npy["paired"])]
    if "torch" in procs:
        out.append("- goat loop / PyTorch eager on the CPU, whole process: **%.2f×** (goal: at "
                   "most 1.0×)." % procs["torch"]["paired"])
    else:
        out.append("- PyTorch is not installed here, so its ratio is not measured "
                   "(`pip install '.[bench]'`).")
    out += [
        "- in one process, goat's evaluation of the 200 steps (%.1f ms) against the NumPy loop's "
        "(%.1f ms): **%.2f×**; goat executes %d operations, so its interpreter costs **%.2f µs "
        "per operation** beyond NumPy's own work." % (inner["goat"] * 1e3, inner["numpy"] * 1e3,
                                                      inner["goat"] / inner["numpy"], inner["ops"],
                                                      per_op),
        "- the first run of a program goat has not read before (statement shapes parsed with "
        "lark, not yet cached): %.3f s." % procs["goat_cold"]["wall"],
        "- the unrolled program: %.2f s and %.0f MB (goals: at most 1.5 s and 300 MB: %s)."
        % (procs["unrolled"]["wall"], procs["unrolled"]["rss"],
           "met" if procs["unrolled"]["wall"] <= 1.5 and procs["unrolled"]["rss"] <= 300
           else "NOT met"),
        ""]
    return "\n".join(out)


def main():
    results_main(__doc__, report, 7)


if __name__ == "__main__":
    main()
