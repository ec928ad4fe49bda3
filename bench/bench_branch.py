"""Benchmark: an ``if`` in a loop, goat against the same loop written by hand in Python.

    python bench/bench_branch.py            # measure and print a Markdown report
    python bench/bench_branch.py --write    # also write it to bench/RESULTS.md

Side by side in one process, alternating, each the best of --repeat runs:

* goat's evaluation (``goat.run_source``'s "run" time: no start-up, parse or check) of
  ``for i in 0..N`` whose body is an ``if i % 7 == 0 { ... } else { ... }`` assigning a var;
* the same loop by hand in Python on NumPy float64 scalars (what goat computes with: the
  same bits), and on Python floats;
* goat's evaluation of the loop without its ``if`` (``s = s - 1`` alone), so that the cost of
  one ``if`` a step can be read off.

A condition computed from numbers only (the loop index) lives on the host, and goat reads it
as it is; the goal is that an ``if`` costs a few operations' time, not a device read.
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

STEPS = 200_000
BRANCH = ("var s = 0\nfor i in 0..%d {\n    if i %% 7 == 0 {\n        s = s * 0.5 + i\n"
          "    } else {\n        s = s - 1\n    }\n}\nprint s\n" % STEPS)
PLAIN = "var s = 0\nfor i in 0..%d {\n    s = s - 1\n}\nprint s\n" % STEPS


def by_hand(number):
    s = number(0.0)
    half, one, seven, zero = number(0.5), number(1.0), number(7.0), number(0.0)
    for k in range(STEPS):
        i = number(k)
        if i % seven == zero:
            s = s * half + i
        else:
            s = s - one
    return float(s)


def _goat(text):
    import goat
    t = {}
    value = goat.run_source(text, timings=t)[0]
    return t["run"], float(value)


def report(repeat):
    import numpy as np
    best = {}
    values = {}
    for _ in range(repeat):
        for name, fn in (("goat", lambda: _goat(BRANCH)), ("plain", lambda: _goat(PLAIN))):
            seconds, values[name] = fn()
            best[name] = min(best.get(name, 1e9), seconds)
        for name, number in (("numpy", np.float64), ("python", float)):
            t0 = time.perf_counter()
            values[name] = by_hand(number)
            best[name] = min(best.get(name, 1e9), time.perf_counter() - t0)
    same = values["goat"] == values["numpy"] == values["python"]
    per_if = (best["goat"] - best["plain"]) / STEPS * 1e6
    return "\n".join([
        "## An if in a loop (%s)" % datetime.date.today().isoformat(),
        "",
        "Machine: %s. `python bench/bench_branch.py`: in one process, best of %d alternating "
        "runs each; %d steps." % (machine(), repeat, STEPS),
        "",
        "| what | time |",
        "|---|---|",
        "| goat, the loop with its `if` (evaluation alone) | %.3f s |" % best["goat"],
        "| goat, the loop without it | %.3f s |" % best["plain"],
        "| Python by hand, NumPy float64 scalars | %.3f s |" % best["numpy"],
        "| Python by hand, Python floats | %.3f s |" % best["python"],
        "",
        "The three give the same value: %s." % ("yes" if same else "NO (%r)" % values),
        "",
        "Ratios:",
        "",
        "- goat / Python on NumPy scalars: **%.2f×**; goat / Python floats: **%.2f×**."
        % (best["goat"] / best["numpy"], best["goat"] / best["python"]),
        "- one `if` (its condition, `i %% 7 == 0`, and the branch taken) costs goat about "
        "**%.1f µs** a step." % per_if,
    ]) + "\n"


def main():
    results_main(__doc__, report, 3)


if __name__ == "__main__":
    main()
