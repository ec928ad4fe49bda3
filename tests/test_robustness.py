"""No input makes goat print a Python traceback: it either runs (status 0) or reports
``PATH:LINE: error: ...`` (status 1).  Status 2 (a bug in goat) never happens here."""
import io
import re
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from goat import cli

ERROR_LINE = re.compile(r"^(t\.mg|<stdin>)(:\d+)?: error: \S")


def goat_run(src, monkeypatch=None):
    """Run `goat run -` in-process on ``src`` (str or bytes); (status, stdout, stderr)."""
    data = src.encode("utf-8", "surrogatepass") if isinstance(src, str) else src
    old = sys.stdin, sys.stdout, sys.stderr
    sys.stdin = io.TextIOWrapper(io.BytesIO(data))
    sys.stdout, sys.stderr = io.StringIO(), io.StringIO()
    try:
        status = cli.main(["run", "-"])
        return status, sys.stdout.getvalue(), sys.stderr.getvalue()
    finally:
        sys.stdin, sys.stdout, sys.stderr = old


def assert_clean(status, err):
    assert status in (0, 1), err
    assert "Traceback" not in err
    if status == 1:
        assert ERROR_LINE.match(err.splitlines()[0]), err
    else:
        assert err == ""


# ---------------------------------------------------------------- deep nesting

@pytest.mark.parametrize("src", [
    "print " + "(" * 10_000 + "1" + ")" * 10_000,
    "print " + "-" * 10_000 + "1",
    "print " + "- (" * 10_000 + "[[1]]" + ")" * 10_000,
    "print " + " + ".join(["1"] * 10_000),
    "print " + "exp(" * 10_000 + "0" + ")" * 10_000,
], ids=["parens", "minus", "minus-parens", "sum", "calls"])
def test_ten_thousand_deep_runs(src):
    status, out, err = goat_run(src)
    assert (status, err) == (0, "")
    assert out.startswith("Unranked Memref")


def test_ten_thousand_deep_list_literal_is_an_error():
    status, out, err = goat_run("print " + "[" * 10_000 + "1" + "]" * 10_000)
    assert status == 1 and out == ""
    from goat.typecheck.shapes import MAX_RANK
    assert "nested at most %d deep" % MAX_RANK in err.splitlines()[0]


@pytest.mark.parametrize("inner", ["1", "1 # a comment sends the literal to the parser\n"])
def test_a_list_literal_may_have_as_many_dimensions_as_numpy_allows(inner):
    """A literal nested as deep as NumPy's rank limit (64 since NumPy 2) is a tensor of that
    rank; one more is an error saying the limit (it had stopped at 32)."""
    from goat.typecheck.shapes import MAX_RANK
    status, out, err = goat_run("print " + "[" * MAX_RANK + inner + "]" * MAX_RANK)
    assert (status, err) == (0, "")
    assert out.startswith("Unranked Memref base@ = 0x\u2026 rank = %d " % MAX_RANK)
    assert out.splitlines()[1] == "[" * MAX_RANK + "1" + "]" * MAX_RANK
    status, out, err = goat_run("print " + "[" * (MAX_RANK + 1) + inner + "]" * (MAX_RANK + 1))
    assert status == 1 and out == ""
    assert err.splitlines()[0].endswith("error: a list literal may be nested at most %d deep (a "
                                        "tensor has at most %d dimensions)" % (MAX_RANK, MAX_RANK))


def test_unbalanced_deep_nesting():
    for src in ("print " + "(" * 10_000, "print " + ")" * 10_000, "print " + "[" * 10_000,
                "print " + "[" * 10_000 + "1" + "]" * 9_999):
        status, out, err = goat_run(src)
        assert_clean(status, err)
        assert status == 1


def test_very_deep_expression_is_an_error_not_a_crash():
    status, _, err = goat_run("print " + "(" * 300_000 + "1" + ")" * 300_000)
    assert (status, err) == (0, "")         # grouping adds no depth
    status, _, err = goat_run("print " + "-(" * 150_000 + "[[1]]" + ")" * 150_000)
    assert_clean(status, err)
    assert status == 1 and "nested too deeply" in err.splitlines()[0]


# ---------------------------------------------------------------- generated programs

SHAPES = [(1, 1), (1, 3), (2, 3), (3, 2), (2, 1), (3, 3)]
FUNCS1 = ["exp", "log", "sqrt", "relu", "tanh", "abs", "row_sum", "row_max", "row_mean",
          "col_sum", "col_max", "transpose"]
FUNCS2 = ["ge", "lt", "maximum", "minimum"]


@st.composite
def expressions(draw, names, depth=0):
    choice = draw(st.integers(0, 7 if depth < 4 else 2))
    if choice == 0 and names:
        return draw(st.sampled_from(names))
    if choice == 1:
        r, c = draw(st.sampled_from(SHAPES))
        vals = draw(st.lists(st.integers(-9, 9), min_size=r * c, max_size=r * c))
        return "[" + ", ".join("[" + ", ".join(str(v) for v in vals[i * c:(i + 1) * c]) + "]"
                               for i in range(r)) + "]"
    if choice == 2:
        return draw(st.sampled_from(["1", "0.5", "2e-3", "0", "-3"]))
    if choice == 3:
        return "-" + draw(expressions(names, depth + 1))
    if choice == 4:
        return "(%s)" % draw(expressions(names, depth + 1))
    if choice == 5:
        return "%s(%s)" % (draw(st.sampled_from(FUNCS1)), draw(expressions(names, depth + 1)))
    if choice == 6:
        return "%s(%s, %s)" % (draw(st.sampled_from(FUNCS2)), draw(expressions(names, depth + 1)),
                               draw(expressions(names, depth + 1)))
    op = draw(st.sampled_from(["+", "-", "*", "/", "@"]))
    return "%s %s %s" % (draw(expressions(names, depth + 1)), op, draw(expressions(names, depth + 1)))


@st.composite
def programs(draw):
    lines, names = [], []
    for i in range(draw(st.integers(1, 6))):
        kind = draw(st.integers(0, 2))
        if kind == 0:
            lines.append("let v%d = %s" % (i, draw(expressions(names))))
            names.append("v%d" % i)
        elif kind == 1:
            lines.append("print %s" % draw(expressions(names)))
        else:
            r, c = draw(st.sampled_from(SHAPES))
            dims = draw(st.sampled_from(["%dx%d" % (r, c), "?x%d" % c, "%dx?" % r]))
            lines.append("def f%d(m: tensor[%s]) = %s" % (i, dims, draw(expressions(["m"]))))
            arg = draw(expressions(names))
            lines.append("print f%d(%s)" % (i, arg))
    return "\n".join(lines) + "\n"


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs())
def test_generated_programs_run_or_fail_cleanly(src):
    status, out, err = goat_run(src)
    assert_clean(status, err)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs(), st.data())
def test_broken_programs_fail_cleanly(src, data):
    how = data.draw(st.integers(0, 3))
    if how == 0:                                   # truncated
        src = src[:data.draw(st.integers(0, len(src)))]
    elif how == 1:                                 # a character deleted
        i = data.draw(st.integers(0, len(src) - 1))
        src = src[:i] + src[i + 1:]
    elif how == 2:                                 # a character inserted
        i = data.draw(st.integers(0, len(src)))
        src = src[:i] + data.draw(st.sampled_from(list("()[],:=+-*/@#?x.e \n\t\x00é$"))) + src[i:]
    else:                                          # a token swapped for another
        words = src.split(" ")
        i = data.draw(st.integers(0, len(words) - 1))
        words[i] = data.draw(st.sampled_from(["let", "def", "print", "tensor", "scalar", "(", "]", "1e", "x"]))
        src = " ".join(words)
    status, out, err = goat_run(src)
    assert_clean(status, err)


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=300))
def test_arbitrary_bytes_fail_cleanly(data):
    status, out, err = goat_run(data)
    assert_clean(status, err)


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("let print def ([,])@*+-/=:?x0123456789.e\n#tensorabc")),
               max_size=200))
def test_token_soup_fails_cleanly(src):
    status, out, err = goat_run(src)
    assert_clean(status, err)
