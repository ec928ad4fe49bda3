"""The REPL's live hint is worked out off the UI path: typing never waits for it, a runaway
one gives up within its budget, the next key or a run stops it, and nothing it does ends the
session or changes its state.

Each test runs twice: with the hint stopped through the checker's ``cancel`` hook (where the
checker has one) and with it stopped by tracing the hint thread's own calls (the fallback).
"""
import io
import os
import random
import sys
import threading
import time
import weakref

import numpy as np
import pytest
from prompt_toolkit.history import InMemoryHistory
from prompt_toolkit.input import create_pipe_input
from prompt_toolkit.output import DummyOutput

from conftest import ROOT
from goat.repl import app as app_module
from goat.repl import session as session_module
from goat.repl.app import GAVE_UP, Repl
from goat.repl.session import HintAbandoned, HintBudget, Session

ENTER, CTRL_C, CTRL_D = "\r", "\x03", "\x04"


def exploding_defs(depth):
    """Defs each of which doubles the work of checking a call: f{depth} expands 2**depth
    calls (the issue's session)."""
    lines = ["def f0(x: tensor[1x1]) = x"]
    for i in range(1, depth + 1):
        lines.append("def f%d(x: tensor[1x1]) = f%d(exp(x)) + f%d(sin(x))" % (i, i - 1, i - 1))
    return "\n".join(lines) + "\n"


@pytest.fixture
def explode(tmp_path):
    path = tmp_path / "explode.mg"
    path.write_text(exploding_defs(30))
    return str(path)


@pytest.fixture(params=["hook", "trace"])
def mode(request, monkeypatch):
    if request.param == "trace":
        monkeypatch.setattr(Session, "use_checker_hook", False)
    elif not hasattr(Session(out=io.StringIO()).checker, "cancel"):
        pytest.skip("the checker has no cancel hook")
    return request.param


def endless_hint(monkeypatch, when=lambda text: True, allocate=0):
    """Hints (on the hint thread) whose check never ends by itself: it polls its budget as
    the checker does, and with ``allocate`` keeps that many more bytes each round."""
    real = Session._check_all
    kept = []

    def check_all(self, stmts):
        text = stmts[0].loc.source.text if stmts else ""
        if threading.current_thread().name == "goat-hint" and when(text):
            while True:
                if allocate:
                    kept.append(bytearray(allocate))
                _tick(self)
        return real(self, stmts)
    monkeypatch.setattr(Session, "_check_all", check_all)
    return kept


def _tick(session):
    """One step of a check: a call of one of goat's functions (what the trace sees), and a
    look at the checker's hook (what the checker does at each def call it expands)."""
    session.names()
    cancel = getattr(session.checker, "cancel", None)
    if cancel is not None and cancel():
        raise session_module._CheckCancelled()


def state(session):
    """What a hint must leave exactly as it found it."""
    c, p, e = session.checker, session.program, session.evaluator
    return (len(p.nodes), len(p.main.nodes), len(p.main.effects), sorted(c.globals),
            dict(c.where), list(p.order), len(p.outline), len(e.values), session.names(),
            frozenset(p.main.table), frozenset(p.main.memo), c.calls[:], c.depth)


class Typing:
    """A REPL on pipe input, typed into from a thread, one key at a time or in chunks; records
    how long each key took to be drawn."""

    def __init__(self, setup=()):
        self.out = io.StringIO()
        self.inp_cm = create_pipe_input()
        self.inp = self.inp_cm.__enter__()
        self.repl = Repl(input=self.inp, output=DummyOutput(), out=self.out,
                         history=InMemoryHistory())
        for text in setup:
            self.repl.session.run(text)
        self.rendered = threading.Event()
        self.repl.prompt.app.after_render += lambda app: self.rendered.set()
        self.latencies = []
        self.status = None
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()
        assert self.rendered.wait(10)

    def _run(self):
        self.status = self.repl.loop()

    def key(self, ch, wait=10.0):
        self.rendered.clear()
        t = time.perf_counter()
        self.inp.send_text(ch)
        assert self.rendered.wait(wait), "the key %r was never drawn" % ch
        self.latencies.append(time.perf_counter() - t)

    def type(self, text):
        for ch in text:
            self.key(ch)

    def toolbar(self):
        return "".join(t for _, t in self.repl.toolbar()).strip()

    def wait_for_output(self, text, seconds=10):
        end = time.time() + seconds
        while time.time() < end:
            if text in self.out.getvalue():
                return time.time()
            time.sleep(0.005)
        raise AssertionError("%r never came; output:\n%s" % (text, self.out.getvalue()))

    def wait_for_toolbar(self, pred, seconds=10):
        end = time.time() + seconds
        while time.time() < end:
            shown = self.toolbar()
            if pred(shown):
                return shown
            time.sleep(0.01)
        raise AssertionError("the toolbar never got there; it shows %r" % self.toolbar())

    def close(self):
        self.inp.send_text(CTRL_C + CTRL_D)
        self.thread.join(20)
        self.inp_cm.__exit__(None, None, None)
        assert self.status == 0


def make_repl():
    """A REPL that is not looping (its hints are asked for by hand), on pipe input."""
    cm = create_pipe_input()
    repl = Repl(input=cm.__enter__(), output=DummyOutput(), out=io.StringIO(),
                history=InMemoryHistory())
    _MADE.append((cm, repl))
    return repl


_MADE = []


@pytest.fixture(autouse=True)
def _close_repls():
    yield
    while _MADE:
        cm, repl = _MADE.pop()
        repl.hints.stop()
        cm.__exit__(None, None, None)
    assert not [t for t in threading.enumerate() if t.name == "goat-hint"]


# ---------------------------------------------------------------- the session

def test_typing_goes_on_while_an_exploding_hint_gives_up(explode, mode):
    """The issue: after defs whose expansion doubles at each level, typing `print f20(...)`
    froze the screen for 28 s (and at depth 29 a MemoryError ended the session)."""
    t = Typing()
    try:
        t.repl.handle(":load " + explode)
        before = state(t.repl.session)
        start = time.perf_counter()
        t.type("print f29([[0.1]]) + 1")
        typing = time.perf_counter() - start
        assert typing < 10, typing
        assert max(t.latencies) < 2.0, max(t.latencies)      # no key waits for a hint
        shown = t.wait_for_toolbar(lambda s: s.startswith("…") or "operations" in s)
        assert shown.startswith(GAVE_UP["time"][1]) or shown.startswith(GAVE_UP["memory"][1]) \
            or "needs more than" in shown, shown
        assert state(t.repl.session) == before
        t.key(CTRL_C)
        t.type("f3([[0.5]])")
        t.wait_for_toolbar(lambda s: s == "f3([[0.5]])  :  tensor[1x1]")
        t.key(ENTER)
        t.wait_for_output("tensor[1x1]\n[[")
    finally:
        t.close()


def test_the_hint_gives_up_within_its_budget_and_says_so(explode, mode):
    s_repl = make_repl()
    s_repl.session.load(explode)
    before = state(s_repl.session)
    start = time.perf_counter()
    style, text = s_repl.hint("print f25([[0.1]])")
    took = time.perf_counter() - start
    assert style == "pending" and text.startswith("…") or "needs more than" in text, text
    assert took < app_module.HINT_SECONDS + 1.5, took
    assert state(s_repl.session) == before
    # the session is unharmed: the next hint and a run are right
    assert s_repl.hint("f2([[0.1]])") == ("hint", "f2([[0.1]])  :  tensor[1x1]")
    (r,) = s_repl.session.run("f2([[0.1]])")
    x = 0.1
    want = (np.exp(np.exp(x)) + np.sin(np.exp(x))) + (np.exp(np.sin(x)) + np.sin(np.sin(x)))
    np.testing.assert_allclose(r.value, [[want]], rtol=1e-12)


# ---------------------------------------------------------------- budgets

def test_a_hint_that_never_ends_gives_up_after_its_time(monkeypatch, mode):
    endless_hint(monkeypatch)
    repl = make_repl()
    repl.hints.seconds = 0.2
    repl.session.run("let a = [[1, 2]]")
    before = state(repl.session)
    start = time.perf_counter()
    assert repl.hint("a * 2") == GAVE_UP["time"]
    assert 0.2 <= time.perf_counter() - start < 1.5
    assert state(repl.session) == before
    # given up is an answer: the toolbar shows it without asking again
    assert repl.hints.get(("a * 2", 100, repl.session.generation)) == GAVE_UP["time"]


@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="reads /proc/self/statm")
def test_a_hint_that_takes_too_much_memory_gives_up(monkeypatch, mode):
    kept = endless_hint(monkeypatch, allocate=1 << 20)      # a megabyte a step
    repl = make_repl()
    repl.hints.seconds = 30
    repl.hints.memory = 40 << 20
    repl.session.run("let a = [[1, 2]]")
    start = time.perf_counter()
    assert repl.hint("a * 2", timeout=30) == GAVE_UP["memory"]
    assert time.perf_counter() - start < 10
    assert 40 <= len(kept) < 400          # stopped soon after the 40 MB, not at the 30 s
    kept.clear()


def test_a_hint_stops_even_while_weakref_callbacks_run_inside_it(monkeypatch):
    """Tracing the hint's calls, the stop is raised only into goat's functions: raised into a
    weakref callback (or a finalizer) that runs in the middle of the check, it would be
    ignored, and would turn the tracing off, leaving a hint that never stops."""
    monkeypatch.setattr(Session, "use_checker_hook", False)
    calls = []

    class Thing:
        pass

    def busy(ref):
        for _ in range(100):
            calls.append(len(calls))

    def check_all(self, stmts):
        end = time.time() + 10
        while time.time() < end:    # most calls it makes are in the callbacks
            calls.clear()
            thing = Thing()
            ref = weakref.ref(thing, busy)
            del thing
            _tick(self)
        raise RuntimeError("the hint was never stopped")
    monkeypatch.setattr(Session, "_check_all", check_all)
    s = Session(out=io.StringIO())
    s.run("let a = [[1]]")
    start = time.perf_counter()
    with pytest.raises(HintAbandoned) as e:
        s.hint("a", budget=HintBudget(seconds=0.2))
    assert e.value.reason == "time" and time.perf_counter() - start < 2
    assert calls and sys.gettrace() is None
    monkeypatch.undo()
    assert s.hint("a") == "a  :  tensor[1x1]"


def test_a_memory_error_inside_a_hint_is_a_hint_not_the_end(monkeypatch, mode):
    real = Session._check_all

    def check_all(self, stmts):
        if threading.current_thread().name == "goat-hint":
            raise MemoryError()
        return real(self, stmts)
    monkeypatch.setattr(Session, "_check_all", check_all)
    d = Typing(setup=["let a = [[1, 2]]"])
    try:
        d.type("a * 2")
        d.wait_for_toolbar(lambda s: s == GAVE_UP["memory"][1])
        d.key(ENTER)
        d.wait_for_output("[[2  4]]")
    finally:
        d.close()


def test_a_bug_in_a_hint_is_one_line_and_the_session_goes_on(monkeypatch, mode):
    real = Session._check_all

    def check_all(self, stmts):
        if threading.current_thread().name == "goat-hint":
            raise ZeroDivisionError("simulated")
        return real(self, stmts)
    monkeypatch.setattr(Session, "_check_all", check_all)
    d = Typing(setup=["let a = [[1, 2]]"])
    try:
        d.type("a * 3")
        d.wait_for_toolbar(lambda s: "internal error (ZeroDivisionError: simulated)" in s)
        d.key(ENTER)
        d.wait_for_output("[[3  6]]")
    finally:
        d.close()


# ---------------------------------------------------------------- the next key, a run

def test_enter_while_a_hint_is_in_flight_runs_the_statement_at_once(monkeypatch, mode):
    endless_hint(monkeypatch, when=lambda text: "y" in text)
    d = Typing(setup=["let a = [[1, 2]]"])
    d.repl.hints.seconds = 60              # the hint would run for a minute
    try:
        d.inp.send_text("let y = a * 3")
        end = time.time() + 10
        while (d.repl.hints.in_flight() or ("",))[0] != "let y = a * 3":
            assert time.time() < end, "the hint never started"
            time.sleep(0.005)
        time.sleep(0.1)
        assert d.repl.hints.in_flight()[0] == "let y = a * 3"
        start = time.time()
        d.inp.send_text(ENTER)
        done = d.wait_for_output("y : tensor[1x2]")
        # the hint would have run for 60 s: the statement did not wait for it (a tighter
        # bound failed once on a loaded machine, 5.7 s, and a time is no value to assert)
        assert done - start < 30.0, done - start
        assert d.repl.session.names() == [("a", "tensor[1x2]"), ("y", "tensor[1x2]")]
        (r,) = d.repl.session.run("y")
        assert r.value.tolist() == [[3.0, 6.0]]
    finally:
        d.close()


def test_the_next_key_stops_the_hint_and_only_the_latest_is_shown(monkeypatch, mode):
    endless_hint(monkeypatch, when=lambda text: "slow" in text)
    d = Typing(setup=["let slow = [[1, 2]]", "let b = [[3, 4]]"])
    d.repl.hints.seconds = 60
    try:
        d.type("slow")
        shown = d.wait_for_toolbar(lambda s: s == "still checking…")
        d.key(CTRL_C)
        d.type("b")
        assert d.wait_for_toolbar(lambda s: s.startswith("b  :")) == "b  :  tensor[1x2]"
        time.sleep(0.2)
        assert not d.repl.hints.busy()       # the endless hint was stopped, not left running
        assert d.toolbar() == "b  :  tensor[1x2]"
    finally:
        d.close()


def test_the_main_thread_takes_the_session_from_a_hint_at_once(monkeypatch, mode):
    endless_hint(monkeypatch)
    repl = make_repl()
    repl.hints.seconds = 60
    repl.session.run("let a = [[1, 2]]")
    key = ("a * 2", 100, repl.session.generation)
    repl.hints.want(key)
    end = time.time() + 10
    while repl.hints.in_flight() != key or repl.session._hint_budget is None:
        assert time.time() < end
        time.sleep(0.005)
    start = time.perf_counter()
    assert repl.session.describe("a @ transpose(a)") == "tensor[1x1]"
    assert time.perf_counter() - start < 1.0
    assert repl.session.names() == [("a", "tensor[1x2]")]


def test_names_while_a_hint_checks_are_the_sessions(monkeypatch, mode):
    seen = []
    real = Session._check_all

    def check_all(self, stmts):
        out = real(self, stmts)
        seen.append(self.names())               # the hint's let is checked, not defined
        return out
    monkeypatch.setattr(Session, "_check_all", check_all)
    s = Session(out=io.StringIO())
    s.run("let a = [[1]]")
    assert s.hint("let zzz = a * 2", budget=HintBudget(5)) == "zzz : tensor[1x1]"
    assert seen == [[("a", "tensor[1x1]")]]


# ---------------------------------------------------------------- nothing a hint does sticks

def test_hints_stopped_anywhere_leave_the_session_as_it_was(explode, mode):
    """Hints stopped at arbitrary points of their checks (budgets from a few microseconds up)
    leave the session exactly as they found it, and what runs afterwards is right."""
    s = Session(out=io.StringIO())
    s.load(explode)
    s.run("let a = [[0.25]]\nvar v = [[1, 2]]\nimport nn")
    before = state(s)
    rng = random.Random(7)
    texts = ["print f14(a) + f3(a)", "let q = f12(a) * f2(a)", "for i in 0..3 {\n  v = v * f9(a)",
             "let n = nn.softmax_rows(f11(a) * [[1, 2]])", "def g(x: tensor[1x1]) = f10(x) + x"]
    stopped = 0
    for k in range(60):
        budget = HintBudget(seconds=rng.choice([1e-5, 1e-4, 1e-3, 0.005, 0.02]), memory=0)
        out = [None]

        def work():
            try:
                out[0] = s.hint(rng.choice(texts), budget=budget)
            except HintAbandoned as e:
                out[0] = e
        th = threading.Thread(target=work)
        th.start()
        th.join(30)
        stopped += isinstance(out[0], HintAbandoned)
        assert state(s) == before, k
    assert stopped > 20
    (r,) = s.run("f3(a)")
    ref = Session(out=io.StringIO())
    ref.load(explode)
    ref.run("let a = [[0.25]]")
    np.testing.assert_array_equal(r.value, ref.run("f3(a)")[0].value)


def test_runs_and_hints_interleaved_give_what_runs_alone_give(explode, mode):
    """A thread asks for hints without pause while the main thread runs statements: every
    run is right, and the session ends as a session that only ran them does."""
    program = ["let a = [[0.5, 1], [2, 3]]", "var w = [[1, 0], [0, 1]]",
               "for i in 0..3 {\n  w = w @ a / 10 + 1\n}",
               "def g(x: tensor[2x2]) = exp(x) / row_sum(exp(x))", "let b = g(w) @ a",
               "let c = f6([[0.5]]) * row_sum(b)", "var s = 3",
               "if s > 2 {\n  w = w * 2\n} else {\n  w = w / 2\n}", "let d = transpose(w) + b",
               "s = s + 1", "let a = d @ a"]
    repl = make_repl()
    repl.session.load(explode)
    stop = threading.Event()
    hints = ["print f13([[0.5]])", "let z = w @ w", "b", "g(w", "print f16([[1]])", "d + a",
             "w", "let s = 1", "if s > 0 {\n  w = w @ w"]

    def ask():
        rng = random.Random(3)
        n = 0
        while not stop.is_set():
            text = rng.choice(hints)
            repl.hints.want((text + " " * (n % 7), 100, repl.session.generation))
            n += 1
            time.sleep(rng.choice([0, 0.0005, 0.002]))
    asker = threading.Thread(target=ask, daemon=True)
    asker.start()
    try:
        for text in program:
            repl.handle(text)
    finally:
        stop.set()
        asker.join(10)
    ref = Session(out=io.StringIO())
    ref.load(explode)
    for text in program:
        ref.run(text)
    assert repl.session.names() == ref.names()
    for name in ("a", "w", "b", "c", "d", "s"):
        np.testing.assert_array_equal(repl.session.run(name)[0].value, ref.run(name)[0].value)
    assert "error" not in repl.out.getvalue()


def test_a_deeply_nested_input_is_checked_on_the_hint_thread_without_a_crash(mode):
    repl = make_repl()
    repl.hints.seconds = 20
    style, text = repl.hint("print " + "exp(" * 5000 + "0" + ")" * 5000, timeout=60)
    assert (style, text) in (("hint", text), ("error", text), GAVE_UP["time"])
    assert repl.hint("1 + 1") == ("hint", "1 + 1  :  scalar")


# ---------------------------------------------------------------- for real, in a terminal

def test_typing_echoes_at_once_in_a_terminal_while_the_hint_explodes(tmp_path):
    """The real `goat` in a pseudo-terminal: each key typed into `print f24([[0.1]]) + 1`
    (a check of 2**24 calls) is echoed at once, the bar gives up, and the session lives on."""
    pytest.importorskip("pexpect")
    pytest.importorskip("pyte")
    from test_repl import Terminal
    defs = tmp_path / "explode.mg"
    defs.write_text(exploding_defs(24))
    env = dict(os.environ, PYTHONPATH=ROOT, XDG_STATE_HOME=str(tmp_path), TERM="xterm")
    # (a screen wide enough for the path: under pytest-xdist tmp_path is longer, and the
    # "loaded PATH: 25 statements" line had wrapped on the 100 columns of the emulated screen)
    term = Terminal(env, cols=max(100, len(str(defs)) + 60))
    try:
        term.wait_for("goat>")
        term.child.send(":load %s\r" % defs)
        term.wait_for("25 statements")
        typed = ""
        for ch in "print f24([[0.1]]) + 1":
            typed += ch
            start = time.time()
            term.child.send(ch)
            term.wait_for("goat> " + typed.rstrip(), seconds=20)
            assert time.time() - start < 2.0, (typed, time.time() - start)
        start = time.time()
        screen = "\n".join(term.lines())
        term.wait_for("too slow to check while typing" if "needs more than" not in screen
                      else "needs more than", seconds=20)
        term.child.send(CTRL_C)
        term.child.send("f2([[0.1]])")
        term.wait_for("f2([[0.1]])  :  tensor[1x1]")
        term.child.send(ENTER)
        term.wait_for("[[5.11794]]")               # f2(0.1)
        term.child.send(CTRL_D)
        term.child.expect(term.pexpect.EOF)
    finally:
        term.child.close()
    assert term.child.exitstatus == 0


def test_the_bar_shows_the_run_time_error_of_a_question_mark_defs_result():
    """The book finds it only when the statement runs, which in the REPL is on Enter: the bar
    says so before (it had shown tensor[2x2]); each keystroke's check is taken back whole, so
    the same statement shows it again."""
    import io
    from goat.repl.session import Session
    s = Session(out=io.StringIO())
    s.run("def f(a: tensor[?x2]) = a + [[1, 2], [3, 4]]")
    bad = "print f([[1, 2], [3, 4], [5, 6]])"
    want = "error: cannot add shapes 3x2 and 2x2: dimensions 3 and 2 differ and neither is 1"
    assert s.hint(bad) == want
    assert s.hint("print f([[1, 2], [3, 4]])") == "f([[1, 2], [3, 4]])  :  tensor[2x2]"
    assert s.hint(bad) == want
    assert s.program.deferred == []


def test_a_name_that_begins_a_keyword_gets_its_hint():
    """`a` (as `assert` begins), `s` (`save`), `i` (`if`, `import`): a name of the session's
    gets its shape; a keyword half typed that is no name gets none."""
    s = Session(out=io.StringIO())
    s.run("let a = [[1, 2]]")
    s.run("let s = [[1], [2]]")
    assert s.hint("a") == "a  :  tensor[1x2]"
    assert s.hint("s") == "s  :  tensor[2x1]"
    assert s.hint("as") == "" and s.hint("pr") == "" and s.hint("i") == ""
