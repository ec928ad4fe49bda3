"""The REPL's session keeps the values its names can reach, and no others.

It had kept every value of every statement: 100 steps of ``w = w + 1`` on a 1000x1000 ``w``
held 800 MB, and each loop's last carried values stayed too.  Now each statement drops what
no name reaches any more (Checker.reachable, Program.forget), and the checks here hold that
nothing it still needs is dropped: random sessions print what a session that keeps every
value prints, statement by statement."""
import io
import random

import numpy as np
import pytest

from goat.diagnostics import GoatError
from goat.repl.session import Session


class KeepingSession(Session):
    """The session as it was: every value kept (the reference)."""

    def _evaluate(self, loc, keep=None):
        super()._evaluate(loc, None)

    def _forget(self, live):
        pass


def _big_values(s):
    """How many distinct arrays of 400x400 numbers the session holds."""
    return len({id(v) for v in s.evaluator.values if getattr(v, "size", 0) >= 400 * 400})


@pytest.mark.parametrize("text", [
    "w = w + 1",
    "let t = w * {k}",
    "for i in 0..2 {{ w = w + i }}",
    "if {k} % 2 == 0 {{ w = w * 0.5 }} else {{ w = w + {k} }}",
    "w * {k}",
    "let u = grad(row_sum(col_sum(w * w)) * {k}, w)",
])
def test_a_statement_repeated_keeps_what_its_names_hold(text):
    s = Session(out=io.StringIO())
    s.run("var w = zeros(tensor[400x400])")
    held = []
    for k in range(30):
        s.run(text.format(k=k + 2))
        held.append(_big_values(s))
    # the same after 30 statements as after 2: w, and t or u with what a later grad through
    # them needs (u's own backward values: a later grad(..., w) differentiates through u)
    assert held[-1] == held[1] <= (5 if "grad" in text else 2), held
    (r,) = s.run("row_sum(col_sum(w))")
    ref = KeepingSession(out=io.StringIO())
    ref.run("var w = zeros(tensor[400x400])")
    for k in range(30):
        ref.run(text.format(k=k + 2))
    (want,) = ref.run("row_sum(col_sum(w))")
    assert r.value.tolist() == want.value.tolist()


def test_a_def_keeps_the_top_level_value_it_reads():
    """A def that names a top-level let keeps that let's value after the name is bound to
    another value (the def reads the one it saw); a def calling a def that was replaced keeps
    the old one's."""
    s = Session(out=io.StringIO())
    s.run("let a = [[1, 2]]\ndef f(x: tensor[1x2]) = x + a\ndef g(x: tensor[1x2]) = f(x) * 2")
    s.run("let a = [[10, 20]]\ndef f(x: tensor[1x2]) = x - 1")
    for _ in range(3):
        s.run("let junk = a * 3")
    (r,) = s.run("g([[1, 1]])")
    assert r.value.tolist() == [[4, 6]]
    (r,) = s.run("f([[1, 1]])")
    assert r.value.tolist() == [[0, 0]]


def _statement(rng, defs, history=()):
    names = ["a", "b", "c"]
    n = rng.choice(names)
    m = rng.choice(names)
    k = rng.randint(1, 4)
    e = rng.choice([
        "%s * %d" % (m, k), "%s + %s" % (n, m), "tanh(%s) - %d" % (m, k), "-%s" % m,
        "%s @ transpose(%s) @ %s" % (n, m, m), "exp(%s / 10)" % m, "row_sum(%s) + %s" % (m, n),
        "maximum(%s, %s * 0.5)" % (n, m), "%s * col_mean(%s)" % (n, m),
    ] + ["%s(%s)" % (d, m) for d in defs] + ["nn.softmax_rows(%s)" % m])
    kind = rng.choice(["let", "let", "assign", "assign", "loop", "if", "def", "print", "show",
                       "grad", "grad", "tuple", "format", "again", "free"])
    if kind == "again" and history:         # the same text: its nodes may be shared
        return rng.choice(history)
    if kind == "free":                      # a loop reading a name from outside it
        return "for i in 0..%d { %s = %s * 0.5 + %s }" % (k, n, n, m)
    if kind == "let":
        return "let %s = %s" % (n, e)
    if kind == "assign":
        return "%s = %s" % (n, e)
    if kind == "loop":
        return "for i in 0..%d { %s = %s * 0.5 + i }" % (k, n, e)
    if kind == "if":
        return "if row_sum(col_sum(%s)) > 0 { %s = %s } else { %s = %s + 1 }" % (m, n, e, n, n)
    if kind == "def":
        d = rng.choice(["f", "g"])
        defs.add(d)
        return "def %s(x: tensor[2x3]) = x * %d + %s" % (d, k, e.replace(d + "(", "nn.gelu("))
    if kind == "print":
        return "print %s" % e
    if kind == "show":
        return e
    if kind == "grad":
        return "let %s = grad(row_sum(col_sum(%s * %s)), %s)" % (n, e, e, m)
    if kind == "tuple":
        return "let %s, %s = (%s, %s + 1)" % (n, "d" if n != "d" else "e", e, m)
    return 'print "{row_sum(col_sum(%s)):.6g}"' % e


@pytest.mark.parametrize("seed", range(40))
def test_random_sessions_print_what_a_session_keeping_every_value_prints(seed):
    rng = random.Random(seed)
    start = ("import nn\nvar a = [[1, -2, 3], [0.5, 4, -1]]\nvar b = [[2, 0, 1], [1, 1, 1]]\n"
             "var c = [[0.1, 0.2, 0.3], [3, 2, 1]]")
    got_out, want_out = io.StringIO(), io.StringIO()
    s, ref = Session(out=got_out), KeepingSession(out=want_out)
    s.run(start)
    ref.run(start)
    defs = set()
    history = []
    for _ in range(30):
        text = _statement(rng, defs, history)
        history.append(text)
        results = []
        for session in (s, ref):
            try:
                results.append([(r.kind, r.name, r.shape, None if r.value is None else
                                 np.asarray(r.value).tobytes()) for r in session.run(text)])
            except GoatError as e:
                results.append(str(e))
        assert results[0] == results[1], text
        assert got_out.getvalue() == want_out.getvalue(), text


def test_a_constant_a_def_reads_ties_nothing_to_it():
    """After import nn (whose defs read literals such as 0.5), w = w * 0.5 + 1 repeated
    held every w: each product by the constant lay on a path from it."""
    s = Session(out=io.StringIO())
    s.run("import nn\ndef h(x: tensor[1x1]) = x * 0.5 + 1\nvar w = zeros(tensor[400x400])")
    held = []
    for _ in range(20):
        s.run("w = w * 0.5 + 1")
        held.append(_big_values(s))
    assert held[-1] == held[0] == 1, held


def test_a_training_loop_run_again_and_again_keeps_no_earlier_weights():
    """A for loop of training steps that reads a data let, typed again and again, had kept
    each earlier w (a path from the data to w ran through every loop); grad never
    differentiates through a for loop, so none is needed."""
    step = ("for i in 0..3 {{ w = w - {lr} * grad(col_sum(row_sum((x @ w - t) * (x @ w - t))), "
            "w) }}")
    sessions = []
    for cls in (Session, KeepingSession):
        s = cls(out=io.StringIO())
        s.run("let x = randn(tensor[400x400], 1) * 0.05")
        s.run("let t = randn(tensor[400x400], 2)")
        s.run("var w = zeros(tensor[400x400])")
        held = []
        for k in range(10):
            s.run(step.format(lr=0.01 / (k + 1)))
            held.append(_big_values(s))
        sessions.append((s, held))
    (s, held), (ref, ref_held) = sessions
    assert held[-1] == held[1] <= 3, held          # x, t and w
    assert ref_held[-1] > ref_held[1]              # (the reference keeps every w)
    (r,) = s.run("col_sum(row_sum(w * w))")
    (want,) = ref.run("col_sum(row_sum(w * w))")
    assert r.value.tolist() == want.value.tolist() and r.value.item() > 0
    # a grad through an earlier input's loop is refused, whatever was dropped
    with pytest.raises(GoatError, match="cannot differentiate through the for loop"):
        s.run("let g = grad(col_sum(row_sum(w)), x)")
