"""Benchmark: the chapter's model trained with ``grad`` against the hand-derived backward pass.

    python bench/bench_grad.py            # measure and print a Markdown report
    python bench/bench_grad.py --write    # also write it to bench/RESULTS.md

Side by side in one run, alternating, each the median of --repeat runs:

* ``goat run examples/lm35/train_grad.mg``: 200 steps, the gradient by ``grad``;
* ``goat run examples/lm35/train.mg``: the same 200 steps through the book's hand-derived
  backward pass (a def returning the sixteen gradients);
* inside one process, the evaluation of each alone (no start-up, parse or check), and the
  number of operations one training step executes in each: what the transformation costs in
  work, not just in time.

The goal (the issue "grad, the trainer's verbs"): train_grad.mg within 1.1x of train.mg, so
the transformation must not duplicate work.  Caches warm, as in bench_loop.py.
"""
from __future__ import annotations

import datetime
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from bench_loop import _env, run_process  # noqa: E402
from results import machine, main as results_main  # noqa: E402

ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)
LM35 = os.path.join(ROOT, "examples", "lm35")
PROGRAMS = {"grad": os.path.join(LM35, "train_grad.mg"),
            "hand": os.path.join(LM35, "train.mg")}


def _without_saves(path):
    """A copy of train.mg without its 16 save statements (train_grad.mg saves nothing: the
    two then do the same work), next to it so that its data paths still resolve."""
    import tempfile
    with open(path) as f:
        text = "".join(line for line in f if not line.startswith("save("))
    tmp = tempfile.NamedTemporaryFile("w", dir=LM35, prefix=".bench_", suffix=".mg",
                                      delete=False)
    tmp.write(text)
    tmp.close()
    return tmp.name


def processes(repeat, programs):
    argv = {k: [sys.executable, "-m", "goat", "run", "--quiet", p] for k, p in programs.items()}
    for a in argv.values():
        run_process(a, _env())                      # warm the caches
    runs = {k: [] for k in argv}
    for _ in range(repeat):
        for k, a in argv.items():
            runs[k].append(run_process(a, _env())[0])
    out = {k: statistics.median(v) for k, v in runs.items()}
    out["paired"] = statistics.median(g / h for g, h in zip(runs["grad"], runs["hand"]))
    return out


def in_process(repeat, programs):
    import goat
    from goat.gpu import get_backend
    from goat.interp.evaluator import Evaluator
    from goat.typecheck.program import LOOP

    result = {}
    for k, path in programs.items():
        t0 = time.perf_counter()
        program = goat.check_file(path)
        check = time.perf_counter() - t0
        loop = next(n for n in program.main.nodes if n.kind == LOOP)
        per_step = len(loop.value.nodes) - len(loop.value.params)
        Evaluator(program, get_backend("numpy"), out=None).run()
        times = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            Evaluator(program, get_backend("numpy"), out=None).run()
            times.append(time.perf_counter() - t0)
        result[k] = {"run": statistics.median(times), "check": check, "ops": per_step}
    return result


def report(repeat):
    programs = dict(PROGRAMS, hand=_without_saves(PROGRAMS["hand"]))
    try:
        procs = processes(repeat, programs)
        inproc = in_process(repeat, programs)
    finally:
        os.unlink(programs["hand"])
    g, h = inproc["grad"], inproc["hand"]
    return "\n".join([
        "## The chapter's model trained with grad (%s)" % datetime.date.today().isoformat(),
        "",
        "Machine: %s. Whole processes, median of %d runs each, alternating, in one run of "
        "`python bench/bench_grad.py`; caches warm." % (machine(), repeat),
        "",
        "| what | wall time | evaluation alone | operations per step |",
        "|---|---|---|---|",
        "| `train_grad.mg`: the gradient by `grad` | %.3f s | %.1f ms | %d |"
        % (procs["grad"], g["run"] * 1e3, g["ops"]),
        "| `train.mg` (without its 16 saves): the book's hand-derived backward pass "
        "| %.3f s | %.1f ms | %d |"
        % (procs["hand"], h["run"] * 1e3, h["ops"]),
        "",
        "Ratios:",
        "",
        "- train_grad.mg / train.mg, whole process (the median of the %d rounds' ratios): "
        "**%.2f×** (goal: at most 1.1×)." % (repeat, procs["paired"]),
        "- evaluation alone: **%.2f×**; operations per training step: **%.2f×** (%d against "
        "%d: mostly layer norm's derivative, which the book's derivation simplified by hand)." % (g["run"] / h["run"], g["ops"] / h["ops"],
                                                       g["ops"], h["ops"]),
        "- checking, `grad` included: %.0f ms against %.0f ms." % (g["check"] * 1e3,
                                                                  h["check"] * 1e3),
    ]) + "\n"


def main():
    results_main(__doc__, report, 11)


if __name__ == "__main__":
    main()
