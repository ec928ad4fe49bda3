"""Benchmark: what goat's same-bits rules cost -- the BLAS on one thread, and IEEE max/min.

    python bench/bench_blas.py              # measure and print a Markdown report
    python bench/bench_blas.py --write      # also write it to bench/RESULTS.md

goat holds the BLAS to one thread for matrix products, so that a product has the same bits
whatever OPENBLAS_NUM_THREADS / OMP_NUM_THREADS / MKL_NUM_THREADS say, and computes maximum,
minimum and the max/min reductions by IEEE 754-2019, so that they do not depend on the order
of their operands (goat/gpu/numpy_backend.py explains both).  Measured side by side in one
run, every variant a fresh ``goat run --time`` process, the variants alternating so that a
change in the machine's load touches all alike, each the median of --repeat runs:

* goat as it is (the BLAS limited to one thread when the first product is evaluated, for the
  rest of the process; IEEE max/min);
* goat before: the BLAS left at its default threads (one per core), NumPy's max/min;
* each rule alone, to tell their costs apart;
* the alternative rejected: the BLAS limited around each product and restored after it
  (threadpoolctl, per product), which would leave an embedding program's setting alone;

on the chapter's training loop (examples/lm35/train.mg), on a matrix-product-bound program
(1000x1000 @ 1000x1000, 20 times), and on many mid-sized products (200x200 @ 200x200, 1,000
times).  Then, inside this process, goat's max/min reductions and elementwise maximum against
NumPy's, on the training loop's shapes (softmax over 112x112 and 112x4) and a large one.
"""
from __future__ import annotations

import datetime
import os
import re
import statistics
import subprocess
import sys
import tempfile
import timeit

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from results import machine, main as results_main  # noqa: E402

ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)

# A goat command line with the two rules switched on or off: argv[1] is "blas=one|default|
# per-product", argv[2] "minmax=ieee|numpy"; the rest is goat's own command line.
LAUNCHER = r'''
import sys
import numpy as np
import goat.gpu.numpy_backend as nb
blas, minmax = sys.argv[1].split("=")[1], sys.argv[2].split("=")[1]
del sys.argv[1:3]
if blas != "one":
    nb.pin_blas_threads = lambda: []
if blas == "per-product":
    def matmul(self):
        libs, mm = nb.blas_libraries(), self.xp.matmul
        def run(a, b):
            saved = [lib.get_num_threads() for lib in libs]
            for lib in libs:
                lib.set_num_threads(1)
            try:
                return mm(a, b)
            finally:
                for lib, n in zip(libs, saved):
                    lib.set_num_threads(n)
        return run
    nb.NumpyBackend.matmul = property(matmul)
if minmax == "numpy":
    init, reducer = nb.NumpyBackend.__init__, nb.NumpyBackend.reducer
    def __init__(self, *a, **k):
        init(self, *a, **k)
        self.maximum, self.minimum = np.maximum, np.minimum
    def old_reducer(self, kind, axis):
        if kind == "max":
            red = np.maximum.reduce
            return lambda x: red(x, axis=axis, keepdims=True, initial=-np.inf)
        if kind == "min":
            red = np.minimum.reduce
            return lambda x: red(x, axis=axis, keepdims=True, initial=np.inf)
        return reducer(self, kind, axis)
    nb.NumpyBackend.__init__, nb.NumpyBackend.reducer = __init__, old_reducer
from goat.cli import main
sys.exit(main(sys.argv[1:]))
'''

NOW = ("blas=one", "minmax=ieee")
BEFORE = ("blas=default", "minmax=numpy")
VARIANTS = {
    "goat now: BLAS on one thread, IEEE max/min": NOW,
    "goat before: BLAS threads as the machine says, NumPy's max/min": BEFORE,
    "BLAS on one thread only": ("blas=one", "minmax=numpy"),
    "IEEE max/min only": ("blas=default", "minmax=ieee"),
    "BLAS held to one thread around each product (rejected)": ("blas=per-product", "minmax=ieee"),
}

BIG = """# 1000x1000 @ 1000x1000, 20 times: a program bound by its matrix products
var x: tensor[1000x1000] = randn(1)
let w: tensor[1000x1000] = randn(2)
for i in 0..20 {
    x = x @ w * 0.03125
}
print col_sum(row_sum(x * x))
"""

MID = """# 200x200 @ 200x200, 1,000 times
var x: tensor[200x200] = randn(1)
let w: tensor[200x200] = randn(2)
for i in 0..1000 {
    x = x @ w * 0.0707
}
print col_sum(row_sum(x * x))
"""


def run_goat(variant, program):
    """(wall seconds, goat's own run seconds) of one fresh process."""
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    argv = [sys.executable, "-c", LAUNCHER, *variant, "run", "--time", "--quiet", program]
    t0 = timeit.default_timer()
    p = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=ROOT)
    wall = timeit.default_timer() - t0
    if p.returncode != 0:
        raise SystemExit("failed: %s\n%s" % (" ".join(argv[3:]), p.stderr))
    m = re.search(r"run ([\d.]+) s", p.stderr)
    return wall, float(m.group(1)), p.stdout


def measure(programs, repeat):
    """{(program, variant): (median wall, median run)}, and the printed outputs."""
    times = {(p, v): [] for p, vs in programs for v in vs}
    outputs = {}
    for _ in range(repeat):
        for p, vs in programs:
            for v in vs:
                wall, run, out = run_goat(VARIANTS[v], p)
                times[p, v].append((wall, run))
                outputs.setdefault((p, VARIANTS[v][0]), set()).add(out)
    return {k: (statistics.median(w for w, _ in ts), statistics.median(r for _, r in ts))
            for k, ts in times.items()}, outputs


def blas_description():
    import numpy  # noqa: F401  (threadpoolctl finds the BLAS NumPy loaded)
    from threadpoolctl import threadpool_info
    libs = [i for i in threadpool_info() if i["user_api"] == "blas"]
    return ", ".join("%s %s (%s kernel), %d threads by default" % (
        i["internal_api"], i["version"], i.get("architecture", "?"), i["num_threads"])
        for i in libs) or "no BLAS found by threadpoolctl"


def minmax_rows():
    """In-process: goat's reductions and maximum against NumPy's, microseconds a call."""
    import numpy as np
    from goat.gpu.numpy_backend import NumpyBackend, ieee_maximum
    be = NumpyBackend()
    rng = np.random.default_rng(0)

    def t(f, n):
        return min(timeit.repeat(f, number=n, repeat=9)) / n * 1e6
    rows = []
    for shape, n in (((112, 112), 5000), ((112, 4), 5000), ((1000, 1000), 50)):
        x = rng.standard_normal(shape)
        z = np.minimum(x, 0.0)      # a zero in every row and column: goat's fix-up path
        for axis, name in ((-1, "row_max"), (-2, "col_max")):
            new = be.reducer("max", axis)
            rows.append(("%s of %dx%d" % (name, *shape),
                         t(lambda: np.maximum.reduce(x, axis=axis, keepdims=True,
                                                     initial=-np.inf), n),
                         t(lambda: new(x), n),
                         t(lambda: np.maximum.reduce(z, axis=axis, keepdims=True,
                                                     initial=-np.inf), n),
                         t(lambda: new(z), n)))
        y = rng.standard_normal(shape)
        rows.append(("maximum of two %dx%d" % shape, t(lambda: np.maximum(x, y), n),
                     t(lambda: ieee_maximum(x, y), n), t(lambda: np.maximum(z, 0.0), n),
                     t(lambda: ieee_maximum(z, 0.0), n)))
    return rows


def blas_rows():
    """In-process, best of 9 (the nearest to an idle machine): one product at the BLAS's
    default threads and at one thread, milliseconds."""
    import numpy as np
    from threadpoolctl import threadpool_limits
    from goat.gpu.numpy_backend import blas_libraries
    default = max(lib.get_num_threads() for lib in blas_libraries())
    rng = np.random.default_rng(0)
    rows = []
    for n, number in ((1000, 3), (200, 200), (112, 2000)):
        a, b = rng.standard_normal((n, n)), rng.standard_normal((n, n))
        times = []
        for threads in (default, 1):
            with threadpool_limits(limits=threads, user_api="blas"):
                times.append(min(timeit.repeat(lambda: a @ b, number=number, repeat=9))
                             / number * 1e3)
        rows.append(("%dx%d @ %dx%d" % (n, n, n, n), default, *times))
    return rows


def report(repeat):
    with tempfile.TemporaryDirectory() as d:
        big, mid = os.path.join(d, "big.mg"), os.path.join(d, "mid.mg")
        with open(big, "w") as f:
            f.write(BIG)
        with open(mid, "w") as f:
            f.write(MID)
        train = os.path.join(ROOT, "examples", "lm35", "train.mg")
        blas_only = [v for v in VARIANTS if VARIANTS[v][1] == "minmax=ieee"]
        programs = [(train, list(VARIANTS)), (big, blas_only), (mid, blas_only)]
        run_goat(VARIANTS[list(VARIANTS)[0]], train)         # warm the caches once
        load_before = os.getloadavg()[0]
        res, outputs = measure(programs, repeat)
        load_after = os.getloadavg()[0]
    names = {train: "training loop (`examples/lm35/train.mg`)",
             big: "1000x1000 @ 1000x1000, 20 times", mid: "200x200 @ 200x200, 1,000 times"}
    out = ["## BLAS threads and IEEE max/min: what the same bits cost (%s)"
           % datetime.date.today().isoformat(), "",
           "Machine: %s; BLAS: %s. Median of %d fresh `goat run --time` processes for each "
           "row, the variants alternating, in one run of `python bench/bench_blas.py`; the "
           "machine's load average (1 minute) was %.1f before and %.1f after (other work "
           "shares the cores: a BLAS thread that waits for a busy core costs far more than "
           "on an idle machine)."
           % (machine(), blas_description(), repeat, load_before, load_after), "",
           "| program | variant | wall time | goat's run time | run time / goat before |",
           "|---|---|---|---|---|"]
    for p, vs in programs:
        before = res[p, "goat before: BLAS threads as the machine says, NumPy's max/min"][1] \
            if "goat before: BLAS threads as the machine says, NumPy's max/min" in vs else None
        if before is None:
            before = res[p, "IEEE max/min only"][1]
        for v in vs:
            wall, run = res[p, v]
            out.append("| %s | %s | %.3f s | %.3f s | %.2f× |" % (names[p], v, wall, run,
                                                                   run / before))
    same = all(len(o) == 1 for (p, b), o in outputs.items() if b == "blas=one")
    out += ["", "Every one-thread variant printed the same text on every run: %s. (The programs "
            "built for this benchmark have no BLAS-order-sensitive cancellation, so the other "
            "variants print the same digits here; tests/test_determinism.py holds the "
            "programs whose bits differ.)" % ("yes" if same else "NO"), "",
            "One product in this process, best of 9 runs (the nearest this machine gets to "
            "idle):", "",
            "| product | BLAS threads by default | default threads | one thread | one thread / "
            "default |", "|---|---|---|---|---|"]
    for name, default, t_default, t_one in blas_rows():
        out.append("| %s | %d | %.2f ms | %.2f ms | %.2f× |"
                   % (name, default, t_default, t_one, t_one / t_default))
    out += ["",
            "goat's max/min against NumPy's, in this process (microseconds a call, best of 9; "
            "\"zeros\": a zero in every row and column, where goat re-derives the sign of a "
            "zero maximum):", "",
            "| operation | NumPy | goat | NumPy, zeros | goat, zeros |", "|---|---|---|---|---|"]
    for name, *ts in minmax_rows():
        out.append("| %s | %s |" % (name, " | ".join("%.1f µs" % t for t in ts)))
    out.append("")
    return "\n".join(out)


def main():
    results_main(__doc__, report, 5)


if __name__ == "__main__":
    main()
