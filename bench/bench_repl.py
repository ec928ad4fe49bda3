"""Benchmark: how long the REPL's live shape hint takes per keystroke.

    python bench/bench_repl.py            # measure and print a Markdown report
    python bench/bench_repl.py --write    # also write it to bench/RESULTS.md

A session is given its first 100 statements from the book's training program
(examples/lm35/train_10.mg: the definitions, the data, the starting weights and the first
training step's lets).  Then each of the next 60 statements is typed one character at a time,
and two times are taken per keystroke:

* the hint alone: what the bottom toolbar shows (its shape, or the error it would raise),
  computed as the toolbar computes it -- ``Repl.hint``, which hands the input to the hint
  thread (it parses and checks it and takes everything back) and waits for the answer, so the
  time includes that hand-off;
* the whole keystroke: from the key entering the real prompt-toolkit application (pipe input)
  to the end of the screen's redraw (the application's ``after_render`` event), toolbar
  included.

Goal: under 30 ms a keystroke.
"""
from __future__ import annotations

import argparse
import datetime
import io
import os
import statistics
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)
sys.path.insert(0, HERE)

from results import machine, write_section  # noqa: E402

from goat.diagnostics import Source  # noqa: E402
from goat.lexer.lexer import tokenize  # noqa: E402
from goat.repl.app import Repl  # noqa: E402
from prompt_toolkit.history import InMemoryHistory  # noqa: E402
from prompt_toolkit.input import create_pipe_input  # noqa: E402
from prompt_toolkit.output import DummyOutput  # noqa: E402

PROGRAM = os.path.join(ROOT, "examples", "lm35", "train_10.mg")


def statements(path):
    """The program's statements as the text a person would type, in order."""
    text = open(path, encoding="utf-8").read()
    source = Source(path, text)
    return [text[toks[0].start_pos:toks[-1].start_pos].rstrip() for toks in tokenize(source)]


def keystrokes(setup, typed):
    """Seconds from each key sent into the running application to its redraw."""
    times = []
    with create_pipe_input() as inp:
        repl = Repl(input=inp, output=DummyOutput(), out=io.StringIO(), history=InMemoryHistory())
        for s in setup:
            repl.session.run(s)
        rendered = threading.Event()
        repl.prompt.app.after_render += lambda app: rendered.set()

        def feed():
            rendered.wait(5)
            for s in typed:
                for ch in s:
                    rendered.clear()
                    t = time.perf_counter()
                    inp.send_text(ch)
                    rendered.wait(5)
                    times.append(time.perf_counter() - t)
                rendered.clear()
                inp.send_text("\r")
                rendered.wait(5)
                time.sleep(0.01)
            inp.send_text("\x04")
        threading.Thread(target=feed, daemon=True).start()
        repl.loop()
    return times


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--write", action="store_true", help="write the report to bench/RESULTS.md")
    args = ap.parse_args()
    stmts = statements(PROGRAM)
    setup, typed = stmts[:100], stmts[100:160]
    with create_pipe_input() as inp:
        repl = Repl(input=inp, output=DummyOutput(), out=io.StringIO(), history=InMemoryHistory())
        t0 = time.perf_counter()
        for s in setup:
            repl.session.run(s)
        setup_s = time.perf_counter() - t0
        times = []
        for s in typed:
            for i in range(1, len(s) + 1):
                t = time.perf_counter()
                repl.hint(s[:i])
                times.append(time.perf_counter() - t)
            repl.session.run(s)
    whole = keystrokes(setup, typed)
    times_ms = sorted(1000 * t for t in times)
    whole_ms = sorted(1000 * t for t in whole)

    def p(xs, q):
        return xs[min(len(xs) - 1, int(q * len(xs)))]
    text = "\n".join([
        "## REPL shape hint per keystroke (%s)" % datetime.date.today().isoformat(),
        "",
        "Machine: %s. `python bench/bench_repl.py`: a session holding the first 100 statements of "
        "`examples/lm35/train_10.mg` (set up in %.2f s), then the next %d statements typed one "
        "character at a time, %d keystrokes, the toolbar's hint computed after each."
        % (machine(), setup_s, len(typed), len(times_ms)),
        "",
        "| per keystroke | mean | median | 95th percentile | worst |",
        "|---|---|---|---|---|",
        "| the hint alone (parse + check + take back) | %.2f ms | %.2f ms | %.2f ms | %.2f ms |"
        % (statistics.mean(times_ms), p(times_ms, 0.5), p(times_ms, 0.95), times_ms[-1]),
        "| key in to screen redrawn (prompt-toolkit, %d keys) | %.2f ms | %.2f ms | %.2f ms | %.2f ms |"
        % (len(whole_ms), statistics.mean(whole_ms), p(whole_ms, 0.5), p(whole_ms, 0.95), whole_ms[-1]),
        "",
        "Goal: under 30 ms a keystroke: %s." % ("met" if max(times_ms[-1], whole_ms[-1]) < 30 else
                                                 "met at the 95th percentile" if p(whole_ms, 0.95) < 30
                                                 else "NOT met"),
        "",
    ])
    print(text)
    if args.write:
        write_section(text)


if __name__ == "__main__":
    main()
