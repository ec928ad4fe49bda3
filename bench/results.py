"""Writes a benchmark's Markdown section into bench/RESULTS.md, replacing that benchmark's
previous section and keeping the others (older results stay in git history)."""
from __future__ import annotations

import os
import re

PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "RESULTS.md")
HEADER = ("# Benchmark results\n\nEach section is written by the script named in it; older "
          "results are in git history.\n\n")


def machine() -> str:
    import platform
    import numpy
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return "%s, %d cores, Python %s, NumPy %s" % (cpu, os.cpu_count() or 0,
                                                  platform.python_version(), numpy.__version__)


def write_section(text: str) -> None:
    """``text`` starts with '## TITLE (date)'; the section with the same TITLE is replaced."""
    def title(part):
        return part.splitlines()[0].split(" (")[0].strip()
    sections = {}
    if os.path.exists(PATH):
        with open(PATH, encoding="utf-8") as f:
            body = f.read()
        for part in re.split(r"(?m)^(?=## )", body):
            if part.startswith("## "):
                sections[title(part)] = part.rstrip() + "\n"
    sections[title(text)] = text.rstrip() + "\n"
    tmp = PATH + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(HEADER + "\n".join(sections.values()))
    os.replace(tmp, PATH)


def main(doc: str, report, repeat: int) -> None:
    """The command line every benchmark shares: ``--repeat N`` (default ``repeat``) and
    ``--write`` (the section into RESULTS.md); ``report(repeat)`` gives the Markdown."""
    import argparse
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=repeat)
    ap.add_argument("--write", action="store_true", help="write the section into RESULTS.md")
    args = ap.parse_args()
    text = report(args.repeat)
    print(text)
    if args.write:
        write_section(text)


def per_step(goat_run, torch_run, steps: int, repeat: int):
    """Per-step seconds of goat and PyTorch (None without it), each the median of ``repeat``
    runs taken in alternation after one run each to warm up, and the median of the rounds'
    ratios: (goat, torch or None, ratio or None).  Each runner runs ``steps`` steps and
    returns its seconds."""
    import statistics
    runners = {"goat": goat_run, "torch": torch_run}
    runners = {k: r for k, r in runners.items() if r is not None}
    for r in runners.values():
        r()
    times = {k: [] for k in runners}
    for _ in range(repeat):
        for k, r in runners.items():
            times[k].append(r() / steps)
    g = statistics.median(times["goat"])
    if "torch" not in times:
        return g, None, None
    ratio = statistics.median(a / b for a, b in zip(times["goat"], times["torch"]))
    return g, statistics.median(times["torch"]), ratio


def per_step_table(title: str, setup: str, step: str, measured) -> str:
    """The Markdown section of a per-step comparison: ``title`` (the date is added), ``setup``
    (after the machine), ``step`` (what a step does), ``measured`` :func:`per_step`'s
    result and the repeat count."""
    import datetime
    (g, t, ratio), repeat = measured
    lines = [
        "## %s (%s)" % (title, datetime.date.today().isoformat()),
        "",
        "Machine: %s. %s" % (machine(), setup),
        "",
        "| what | time per step (%s) |" % step,
        "|---|---|",
        "| goat (evaluation of the checked program, NumPy) | %.0f µs |" % (g * 1e6),
    ]
    if t is not None:
        import torch
        lines.append("| PyTorch %s eager, CPU, float64, one thread | %.0f µs |"
                     % (torch.__version__, t * 1e6))
        lines += ["", "goat / PyTorch (the median of the %d rounds' ratios, the two run in "
                  "alternation): **%.2f×** (below 1: goat is faster)." % (repeat, ratio)]
    else:
        lines += ["", "PyTorch is not installed here (`pip install '.[bench]'`), so only goat "
                  "is measured."]
    return "\n".join(lines) + "\n"


def torch_f64():
    """PyTorch set up as the per-step benchmarks compare with it -- one thread, float64, a
    generator seeded 0: (torch, torch.nn.functional, torch.float64, the generator), or None
    without PyTorch."""
    try:
        import torch
    except ImportError:
        return None
    torch.set_num_threads(1)
    return torch, torch.nn.functional, torch.float64, torch.Generator().manual_seed(0)


def goat_runner(text: str, path: str):
    """A function evaluating the checked program ``text`` (read as ``path``) once on NumPy,
    returning its seconds (parse and check done once, here, outside the timing)."""
    import time

    import goat
    from goat.gpu import get_backend
    from goat.interp.evaluator import Evaluator
    program = goat.load(text, path=path)

    def run():
        t0 = time.perf_counter()
        Evaluator(program, get_backend("numpy"), out=None).run()
        return time.perf_counter() - t0
    return run
