"""Benchmark: goat compile --aot against the interpreter, hand-written NumPy and the book.

    python bench/bench_aot.py            # measure and print a Markdown report
    python bench/bench_aot.py --write    # also write it to bench/RESULTS.md

Side by side in one run, each the median of --repeat runs (processes alternate):

* compile time: ``goat compile --aot`` of ``examples/lm35/train.mg`` (the loop) and of the
  14,529-line unrolled ``train_200.mg`` (the book's mgc: about 8 minutes), whole processes,
  goat's runtime library already built (it is built once per goat version and cached);
* run time: the compiled ``train.mg`` executable against ``python bench/numpy_loop.py`` (the
  same 200 steps by hand in NumPy, saving the weights the same way), whole processes; and
  ``goat run --aot train.mg`` as a user runs it a second time (check, then the cached
  executable) and ``goat run train.mg`` (the interpreter);
* a matrix-product-bound program (a loop of products of 512x512 matrices, each using the
  last) compiled (it calls NumPy's BLAS, as goat run does) and compiled with --portable (its
  own vectorised loop nest), against the same in NumPy (its BLAS on one thread, as goat runs
  it).

It also checks that the compiled train.mg prints every line `goat run train.mg` prints (the
same bits: it computes with NumPy's BLAS and SVML, in NumPy's order).
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
TRAIN = os.path.join(ROOT, "examples", "lm35", "train.mg")
UNROLLED = os.path.join(ROOT, "examples", "lm35", "train_200.mg")

MATMUL_N, MATMUL_STEPS = 512, 30
MATMUL_MG = """\
let a = randn(tensor[{n}x{n}], 1) * 0.05
let b = randn(tensor[{n}x{n}], 2) * 0.05
var acc = zeros(tensor[{n}x{n}])
for i in 0 .. {steps} {{
    acc = a + acc @ b
}}
print row_sum(col_sum(acc))
""".format(n=MATMUL_N, steps=MATMUL_STEPS)
MATMUL_PY = """\
import numpy as np
from threadpoolctl import threadpool_limits
threadpool_limits(1)
rng = np.random.default_rng(0)
a = rng.standard_normal(({n}, {n})) * 0.05
b = rng.standard_normal(({n}, {n})) * 0.05
acc = np.zeros(({n}, {n}))
for i in range({steps}):
    acc = a + acc @ b
print(acc.sum())
""".format(n=MATMUL_N, steps=MATMUL_STEPS)


def _env(cache):
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""),
               GOAT_CACHE=cache)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def timed(argv, env, cwd=ROOT):
    t0 = time.perf_counter()
    r = subprocess.run(argv, capture_output=True, env=env, cwd=cwd)
    wall = time.perf_counter() - t0
    if r.returncode != 0:
        raise SystemExit("failed: %s\n%s" % (" ".join(argv), r.stderr.decode()))
    return wall, r.stdout


def report(repeat):
    goat = [sys.executable, "-m", "goat"]
    with tempfile.TemporaryDirectory() as work:
        cache = os.path.join(work, "cache")
        env = _env(cache)
        # the runtime library, built once (not part of any compile time below)
        first_mg = os.path.join(work, "first.mg")
        with open(first_mg, "w") as f:
            f.write("print [[1]]\n")
        t_runtime, _ = timed(goat + ["compile", "--aot", first_mg, "-o",
                                     os.path.join(work, "first")], env)
        exe = os.path.join(work, "train")
        exe200 = os.path.join(work, "train200")
        mm_mg = os.path.join(work, "matmul.mg")
        mm_py = os.path.join(work, "matmul.py")
        mm_exe = os.path.join(work, "matmul")
        mm_portable = os.path.join(work, "matmul_portable")
        with open(mm_mg, "w") as f:
            f.write(MATMUL_MG)
        with open(mm_py, "w") as f:
            f.write(MATMUL_PY)
        comp, comp200 = [], []
        for _ in range(max(1, repeat // 3)):
            comp.append(timed(goat + ["compile", "--aot", TRAIN, "-o", exe], env)[0])
            comp200.append(timed(goat + ["compile", "--aot", UNROLLED, "-o", exe200], env)[0])
        timed(goat + ["compile", "--aot", mm_mg, "-o", mm_exe], env)
        timed(goat + ["compile", "--aot", "--portable", mm_mg, "-o", mm_portable], env)
        timed(goat + ["run", "--aot", "--quiet", TRAIN], env)         # into the cache
        contenders = {
            "compiled": [exe],
            "numpy": [sys.executable, os.path.join(HERE, "numpy_loop.py")],
            "run_aot": goat + ["run", "--aot", "--quiet", TRAIN],
            "interp": goat + ["run", "--quiet", TRAIN],
            "mm_compiled": [mm_exe],
            "mm_portable": [mm_portable],
            "mm_numpy": [sys.executable, mm_py],
        }
        outputs = {name: timed(argv, env)[1] for name, argv in contenders.items()}
        runs = {name: [] for name in contenders}
        for _ in range(repeat):
            for name, argv in contenders.items():
                runs[name].append(timed(argv, env)[0])
    med = {name: statistics.median(r) for name, r in runs.items()}

    def paired(a, b):
        return statistics.median(x / y for x, y in zip(runs[a], runs[b]))

    a, b = outputs["compiled"].decode().splitlines(), outputs["numpy"].decode().splitlines()
    upto = next(i for i, line in enumerate(b) if line.startswith("step 50:"))
    same50 = a[:upto + 1] == b[:upto + 1]
    same_interp = outputs["compiled"] == outputs["interp"]
    today = datetime.date.today().isoformat()
    lines = sum(1 for _ in open(UNROLLED, encoding="utf-8"))
    out = ["## goat compile --aot (%s)" % today, "",
           "Machine: %s. Whole processes, medians of %d runs, alternating, in one run of "
           "`python bench/bench_aot.py`; LLVM from llvmlite, linked by the system C compiler."
           % (machine(), repeat), "",
           "Compile time (goat's runtime library already built; building it the first time "
           "took %.2f s):" % t_runtime, "",
           "| program | goat compile --aot | goal |", "|---|---|---|",
           "| `examples/lm35/train.mg` (the loop) | %.2f s | ≤ 5 s |" % statistics.median(comp),
           "| `examples/lm35/train_200.mg` (unrolled, %d lines) | %.2f s | ≤ 20 s (the book's "
           "mgc: ~8 minutes) |" % (lines, statistics.median(comp200)), "",
           "Run time:", "",
           "| what | wall time |", "|---|---|",
           "| compiled `train.mg` (the executable) | %.3f s |" % med["compiled"],
           "| NumPy by hand (`bench/numpy_loop.py`) | %.3f s |" % med["numpy"],
           "| `goat run --aot train.mg` (check, then the cached executable) | %.3f s |"
           % med["run_aot"],
           "| `goat run train.mg` (the interpreter) | %.3f s |" % med["interp"],
           "| compiled: %d products %dx%d @ %dx%d | %.3f s |"
           % (MATMUL_STEPS, MATMUL_N, MATMUL_N, MATMUL_N, MATMUL_N, med["mm_compiled"]),
           "| compiled with --portable (its own loop nest, no BLAS): the same | %.3f s |"
           % med["mm_portable"],
           "| NumPy, BLAS on one thread: the same | %.3f s |" % med["mm_numpy"], "",
           "Ratios (medians of the rounds' ratios):", "",
           "- compiled train.mg / NumPy by hand, whole process: **%.2f×** (goal: at most 0.5×)."
           % paired("compiled", "numpy"),
           "- `goat run --aot` / NumPy by hand: **%.2f×**; / `goat run`: **%.2f×**."
           % (paired("run_aot", "numpy"), paired("run_aot", "interp")),
           "- matrix products, compiled / NumPy's BLAS: **%.2f×** (goal: within 2×; the "
           "compiled program calls NumPy's BLAS); with --portable: **%.2f×**."
           % (paired("mm_compiled", "mm_numpy"), paired("mm_portable", "mm_numpy")),
           "",
           "The compiled train.mg prints every line `goat run train.mg` prints, through the "
           "chaotic steps after 50: %s. It prints the hand-written NumPy loop's lines through "
           "step 50: %s (after it, that loop's own order of operations takes another path)."
           % ("yes" if same_interp else "NO", "yes" if same50 else "NO")]
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    results_main(__doc__, report, repeat=5)
