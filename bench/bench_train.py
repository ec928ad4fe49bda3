"""Benchmark: the book's 200-step training run, goat against a hand-written NumPy loop.

    python bench/bench_train.py            # measure and print a Markdown report
    python bench/bench_train.py --write    # also write it to bench/RESULTS.md

Measured side by side in one run, each the median of --repeat runs:

* ``goat run examples/lm35/train_200.mg`` as a user runs it (a fresh process: start-up, parse,
  check, evaluate, print), with its peak resident memory, and goat's own parse / check / run
  split (``--time``);
* the same model written with nested defs instead of one let per step (the form the book's
  compiler was killed for memory on), ``train_200_nested.mg``;
* the same 200 steps hand-written in NumPy (bench/numpy_lm35.py), both as a fresh process and
  as the training loop alone;
* the book's figure for its MLIR compiler: about 8 minutes for the 12,455-line program.
"""
from __future__ import annotations

import datetime
import os
import re
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from results import machine, main as results_main  # noqa: E402
ROOT = os.path.dirname(HERE)
EXAMPLES = os.path.join(ROOT, "examples", "lm35")
BOOK_SECONDS = 8 * 60


def run_process(argv):
    """(wall seconds, peak RSS in MB, stderr) of one fresh process."""
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    t0 = time.perf_counter()
    p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, cwd=ROOT)
    _, status, usage = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    err = p.stderr.read().decode()
    p.stderr.close()
    if status != 0:
        raise SystemExit("failed: %s\n%s" % (" ".join(argv), err))
    return wall, usage.ru_maxrss / 1024.0, err


def measure_goat(program, repeat, runs=None):
    argv = [sys.executable, "-m", "goat", "run", "--time", os.path.join(EXAMPLES, program)]
    if runs is None:
        runs = [run_process(argv) for _ in range(repeat)]
    split = {k: [] for k in ("parse", "check", "run")}
    for _, _, err in runs:
        m = re.search(r"parse ([\d.]+) s, check ([\d.]+) s, run ([\d.]+) s", err)
        for k, v in zip(("parse", "check", "run"), m.groups()):
            split[k].append(float(v))
    return {
        "wall": statistics.median(r[0] for r in runs),
        "rss": max(r[1] for r in runs),
        **{k: statistics.median(v) for k, v in split.items()},
        "lines": sum(1 for _ in open(os.path.join(EXAMPLES, program), encoding="utf-8")),
    }


def measure_numpy(repeat):
    sys.path.insert(0, HERE)
    import numpy_lm35
    loop = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        numpy_lm35.train()
        loop.append(time.perf_counter() - t0)
    proc = [run_process([sys.executable, os.path.join(HERE, "numpy_lm35.py")]) for _ in range(repeat)]
    return {"loop": statistics.median(loop), "wall": statistics.median(p[0] for p in proc),
            "rss": max(p[1] for p in proc)}


def report(repeat):
    # the two forms alternate, so that a change in the machine's load touches both alike
    argv = {p: [sys.executable, "-m", "goat", "run", "--time", os.path.join(EXAMPLES, p)]
            for p in ("train_200.mg", "train_200_nested.mg")}
    runs = {p: [] for p in argv}
    for _ in range(repeat):
        for p, a in argv.items():
            runs[p].append(run_process(a))
    lets = measure_goat("train_200.mg", repeat, runs["train_200.mg"])
    nested = measure_goat("train_200_nested.mg", repeat, runs["train_200_nested.mg"])
    npy = measure_numpy(repeat)
    today = datetime.date.today().isoformat()
    rows = [
        ("goat, one let per step (`train_200.mg`, %d lines)" % lets["lines"],
         "%.2f s" % lets["wall"], "%.0f MB" % lets["rss"]),
        ("goat, nested defs (`train_200_nested.mg`, %d lines)" % nested["lines"],
         "%.2f s" % nested["wall"], "%.0f MB" % nested["rss"]),
        ("NumPy by hand, whole process (`bench/numpy_lm35.py`)", "%.2f s" % npy["wall"], "%.0f MB" % npy["rss"]),
        ("NumPy by hand, the training loop alone", "%.3f s" % npy["loop"], ""),
        ("the book's MLIR compiler, 12,455 lines (its published figure)", "about 480 s",
         "killed on the nested form"),
    ]
    out = ["## Training the chapter's model for 200 steps (%s)" % today, "",
           "Machine: %s. Median of %d runs each, the two goat forms alternating, in one run of "
           "`python bench/bench_train.py`." % (machine(), repeat), "",
           "| what | wall time | peak RSS |", "|---|---|---|"]
    out += ["| %s | %s | %s |" % r for r in rows]
    out += ["",
            "goat's own split (`goat run --time`, median): parse %.3f s, check %.3f s, run %.3f s "
            "(let form); parse %.3f s, check %.3f s, run %.3f s (nested form). The rest of the "
            "wall time is Python start-up and imports."
            % (lets["parse"], lets["check"], lets["run"], nested["parse"], nested["check"], nested["run"]),
            "",
            "Ratios:",
            "",
            "- goat / NumPy by hand, whole process: **%.1f×**; goat / NumPy training loop alone: "
            "**%.1f×** (goal: at most 15×)." % (lets["wall"] / npy["wall"], lets["wall"] / npy["loop"]),
            "- goat's evaluation alone / NumPy training loop alone: **%.1f×**."
            % (lets["run"] / npy["loop"]),
            "- nested defs / one let per step: **%.2f×** (goal: at most 1.1×)." % (nested["wall"] / lets["wall"]),
            "- the book's compiler / goat: **%.0f×** faster." % (BOOK_SECONDS / lets["wall"]),
            "- goals: wall time at most 1.5 s: %s; peak RSS at most 300 MB: %s."
            % ("met" if lets["wall"] <= 1.5 else "NOT met", "met" if lets["rss"] <= 300 else "NOT met"),
            ""]
    return "\n".join(out)


def main():
    results_main(__doc__, report, 5)


if __name__ == "__main__":
    main()
