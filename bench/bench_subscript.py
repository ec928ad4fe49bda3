"""Benchmark: subscripts in a loop, goat against the same loop written by hand in NumPy.

    python bench/bench_subscript.py            # measure and print a Markdown report
    python bench/bench_subscript.py --write    # also write it to bench/RESULTS.md

Side by side in one process, alternating, each the best of --repeat runs (goat's evaluation
alone: ``goat.run_source``'s "run" time, no start-up, parse or check):

* reading a row a step, ``x[t]``, of a T x D matrix (a narrow and a reshape a step);
* writing a row a step, ``buf[t] = v``, into a T x D var, against NumPy's in-place
  ``buf[t] = v``: goat's put writes into the var's array when nothing else reads it (as here),
  D cells a step; otherwise it copies the var, T x D cells;
* an embedding lookup a step, ``E[tok]`` of a V x D table by a B x L tensor of token indices
  (a reshape and a gather), against NumPy's ``E[tok]`` (integer-array indexing).

The two give the same numbers (checked here).
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

T, D = 1000, 64
READ = ("let x = randn(tensor[%dx%d], 1)\nvar s = zeros(tensor[%d])\nfor t in 0..%d {\n"
        "    s += tanh(x[t])\n}\nprint s\nprint x\n" % (T, D, D, T))
WRITE = ("let x = randn(tensor[%dx%d], 1)\nvar buf = zeros(tensor[%dx%d])\nfor t in 0..%d {\n"
         "    buf[t] = tanh(x[t])\n}\nprint buf\n" % (T, D, T, D, T))


V, B, L, STEPS = 1000, 16, 32, 200
LOOKUP = ("let E = randn(tensor[%dx%d], 1)\nlet base = reshape(iota(tensor[%dx1], 0), "
          "tensor[%dx%d])\nvar s = zeros(tensor[1x%d])\nfor t in 0..%d {\n"
          "    let tok = (base * 7 + t * 13) %% %d\n"
          "    s += col_sum(reshape(E[tok], tensor[%dx%d]))\n}\nprint s\nprint E\n"
          % (V, D, B * L, B, L, D, STEPS, V, B * L, D))


def _goat(text):
    import goat
    t = {}
    values = goat.run_source(text, timings=t)
    return t["run"], values


def _numpy_read(x):
    import numpy as np
    s = np.zeros(D)
    for t in range(T):
        s += np.tanh(x[t])
    return s


def _numpy_write(x):
    import numpy as np
    buf = np.zeros((T, D))
    for t in range(T):
        buf[t] = np.tanh(x[t])
    return buf


def _numpy_lookup(e):
    import numpy as np
    base = np.arange(B * L, dtype=np.float64).reshape(B, L)
    s = np.zeros((1, D))
    for t in range(STEPS):
        tok = ((base * 7 + t * 13) % V).astype(np.intp)
        s += np.add.reduce(e[tok].reshape(B * L, D), axis=-2, keepdims=True)
    return s


def report(repeat):
    import numpy as np
    best = {}
    out = {}
    for _ in range(repeat):
        for name, text in (("goat read", READ), ("goat write", WRITE),
                           ("goat lookup", LOOKUP)):
            seconds, out[name] = _goat(text)
            best[name] = min(best.get(name, 1e9), seconds)
        x = out["goat read"][1]
        for name, fn, arg in (("numpy read", _numpy_read, x), ("numpy write", _numpy_write, x),
                              ("numpy lookup", _numpy_lookup, out["goat lookup"][1])):
            t0 = time.perf_counter()
            out[name] = fn(arg)
            best[name] = min(best.get(name, 1e9), time.perf_counter() - t0)
    same_read = np.array_equal(out["goat read"][0], out["numpy read"])
    same_write = np.array_equal(out["goat write"][0], out["numpy write"])
    same_lookup = np.array_equal(out["goat lookup"][0], out["numpy lookup"])
    return "\n".join([
        "## Subscripts in a loop (%s)" % datetime.date.today().isoformat(),
        "",
        "Machine: %s. `python bench/bench_subscript.py`: in one process, best of %d "
        "alternating runs each; %d steps over a %dx%d matrix." % (machine(), repeat, T, T, D),
        "",
        "| what | goat (evaluation) | NumPy by hand | goat / NumPy |",
        "|---|---|---|---|",
        "| read a row a step, `s += tanh(x[t])` | %.4f s | %.4f s | **%.1f×** |"
        % (best["goat read"], best["numpy read"], best["goat read"] / best["numpy read"]),
        "| write a row a step, `buf[t] = tanh(x[t])` | %.4f s | %.4f s | **%.1f×** |"
        % (best["goat write"], best["numpy write"], best["goat write"] / best["numpy write"]),
        "| %d steps of an embedding lookup, `E[tok]` (%dx%d table, %dx%d indices) and a column "
        "sum | %.4f s | %.4f s | **%.1f×** |"
        % (STEPS, V, D, B, L, best["goat lookup"], best["numpy lookup"],
           best["goat lookup"] / best["numpy lookup"]),
        "",
        "The same numbers: reads %s, writes %s, lookups %s. The write is in place (the var's "
        "array is read by nothing else), so a step costs goat's per-op overhead, as a read does; "
        "a write into a value something else still reads copies it (%d cells, not %d). A lookup "
        "checks its indices (whole numbers in range) as NumPy's indexing does, and takes the "
        "rows with NumPy's own indexing."
        % ("yes" if same_read else "NO", "yes" if same_write else "NO",
           "yes" if same_lookup else "NO", T * D, D),
    ]) + "\n"


def main():
    results_main(__doc__, report, 3)


if __name__ == "__main__":
    main()
