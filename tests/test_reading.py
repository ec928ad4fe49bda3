"""Reading a program (goat.lexer: tokenize and parse) for any input: numbers of any length give
a value or a clear error, and the time and memory reading takes grow linearly with the text."""
import io
import math
import re
import sys
import time
import tracemalloc

import pytest

import goat
from goat import cli
from goat.api import gc_paused
from goat.diagnostics import Source
from goat.lexer.lexer import _dims_of, _try_array, _type_token
from goat.lexer.parser import parse
from conftest import error, run

ERROR_LINE = re.compile(r"^t\.mg:(\d+): error: (.*)$")
LONG = 5000                     # digits: more than int() converts (4,300)


def goat_run(src):
    """`goat run -` in-process on ``src``: (status, stdout, stderr)."""
    old = sys.stdin, sys.stdout, sys.stderr
    sys.stdin = io.TextIOWrapper(io.BytesIO(src.encode("utf-8")))
    sys.stdout, sys.stderr = io.StringIO(), io.StringIO()
    try:
        return cli.main(["run", "-"]), sys.stdout.getvalue(), sys.stderr.getvalue()
    finally:
        sys.stdin, sys.stdout, sys.stderr = old


def cli_error(src):
    """The (line, message) of the one error line `goat run` writes for ``src`` (status 1)."""
    status, out, err = goat_run(src)
    assert status == 1 and out == "", (status, err[:300])
    assert "Traceback" not in err and "internal error" not in err, err[:300]
    m = ERROR_LINE.match(err.splitlines()[0].replace("<stdin>", "t.mg"))
    assert m, err[:300]
    return int(m.group(1)), m.group(2)


# ---------------------------------------------------------------- numbers of any length

TOO_LARGE_TYPES = [
    "let a: tensor[%s] = [1]" % ("1" * LONG),                   # the program
    "let a: tensor[2x%s] = [1]" % ("9" * LONG),
    "let a: tensor[2, %s] = [1]" % ("1" * LONG),                # the comma form
    "let a: tensor[?x%s] = [1]" % ("1" * LONG),
    "print zeros(tensor[%sx0])" % ("1" * LONG),                 # empty, but no machine indexes it
    "def f(x: tensor[N, %s]) = x" % ("1" * LONG),               # a size variable beside it
    "def f(x: tensor[Nx%s]) = x" % ("1" * LONG),
    "print iota(tensor[%sx2], 0)" % ("7" * LONG),
    "print reshape([1], tensor[%s])" % ("1" * 20),              # 20 digits: > 2**63 already
    "print ones(tensor[%s])" % ("1" * 100_000),
]


@pytest.mark.parametrize("src", TOO_LARGE_TYPES, ids=range(len(TOO_LARGE_TYPES)))
def test_a_dimension_of_any_length_is_too_large_for_any_machine_not_a_crash(src):
    line, message = cli_error("print 1\n" + src)
    assert line == 2
    assert message.endswith("is too large for any machine to address: more than 2**63 bytes")
    assert len(message) < 200                   # a long number is shown by its start and length
    e = error("print 1\n" + src)
    assert e.line == 2 and e.message == message


def test_a_too_large_dimension_is_shown_as_the_checker_shows_types():
    e = error("let a: tensor[2, %s] = [1]" % ("1" * LONG))
    assert e.message == ("tensor[2x11111111111111111111... (5000 characters)] is too large for "
                         "any machine to address: more than 2**63 bytes")
    e = error("def f(x: tensor[N, 000%s]) = x" % ("2" * 30))
    assert e.message.startswith("tensor[N, 00022222222222222222... (33 characters)] is too large")
    e = error("print zeros(tensor[?x%s])" % ("9" * 20))
    assert e.message.startswith("tensor[?x99999999999999999999] is too large")


def test_nineteen_digits_still_reach_the_checker():
    e = error("print zeros(tensor[9999999999999999999x2])")
    assert e.message == ("tensor[9999999999999999999x2] is too large for any machine to "
                         "address: more than 2**63 bytes")


def test_leading_zeros_do_not_make_a_dimension_large():
    zeros = "0" * LONG
    (v,) = run("print zeros(tensor[%s2x%s3])" % (zeros, zeros))
    assert v.shape == (2, 3)
    (v,) = run("let a: tensor[%s1, 2] = [[1, 2]]\nprint a" % zeros)
    assert v.tolist() == [[1, 2]]
    assert _dims_of("0000x01x%s" % zeros) == (0, 1, 0)


@pytest.mark.parametrize("written", ["²", "2, ²", "١x٢", "1, ٢", "٣", "N, ٢"])
def test_dimensions_are_ascii_digits(written):
    # int() reads any script's digits ("١" is 1, "²" it refuses): a dimension is 0-9 only
    e = error("let a: tensor[%s] = [1]" % written)
    assert e.message.startswith("malformed type tensor[")


@pytest.mark.parametrize("src, char", [("print 1٢", "٢"), ("print ١", "١"),
                                       ("print [1, ٢]", "٢"), ("print 1.٥", "٥")])
def test_numbers_are_ascii_digits(src, char):
    e = error(src)
    assert e.message == "unexpected character '%s'" % char


FLOAT_TOO_LARGE = [
    ("print 1" + "0" * LONG, "the number 10000000000000000000... (5001 characters)"),
    ("print 1e99999999999", "the number 1e99999999999"),
    ("print 1e" + "9" * LONG, "the number 1e999999999999999999... (5002 characters)"),
    ("print 2" * 1 + "5" * 308 + ".5", "the number 25555555555555555555... (311 characters)"),
    ("print [1" + "0" * LONG + ", 2]", "the number 10000000000000000000... (5001 characters)"),
    ("print [[3], [-" + "1" * LONG + "]]", "the number 11111111111111111111... (5000 characters)"),
    ("print [1.8e308]", "the number 1.8e308"),
    ("print iota(tensor[2x3], 1" + "0" * LONG + ")", "the number 10000000000000000000..."),
    ("for i in 0..1" + "0" * LONG + " {\n print i\n}", "the number 10000000000000000000..."),
    ('print "{1' + "0" * LONG + '}"', "the number 10000000000000000000..."),
]


@pytest.mark.parametrize("src, shown", FLOAT_TOO_LARGE, ids=range(len(FLOAT_TOO_LARGE)))
def test_a_number_too_large_for_a_float_is_an_error_of_any_length(src, shown):
    line, message = cli_error("print 1\n" + src)
    assert line == 2
    assert message.startswith(shown)
    # "about 1.8e+308" had read as if 1.8e308 fitted
    assert message.endswith("is too large for a 64-bit float (the largest is 1.79769e+308, as "
                            "%g prints it)")
    assert len(message) < 200


@pytest.mark.parametrize("written", [
    "0." + "0" * LONG + "1",                    # a value too small: 0, as float() reads it
    "0." + "0" * 323 + "5",                     # the smallest subnormal
    "0." + "0" * 300 + "2" * LONG,              # a long fraction after many zeros
    "1." + "3" * LONG,
    "1" * LONG + "e-" + str(LONG),              # many digits, scaled back
    "1" + "0" * 308,                            # the largest power of ten a float holds
    "9" * 308,
    "1e-99999999999",
    "0e99999999999",
    "0" * LONG + "7",
    "." + "5" * LONG,
    "1" + "0" * 300 + ".",
])
def test_a_long_number_is_the_value_float_gives(written):
    want = float(written)
    assert math.isfinite(want)
    (v,) = run("print " + written)
    assert v == want and math.copysign(1, v) == math.copysign(1, want)
    (v,) = run("print -" + written)
    assert v == -want
    # in a list literal: the fast path (JSON, integers read as floats) and the slow one agree
    (v,) = run("print [%s, -%s, 2]" % (written, written))
    assert v.tolist() == [want, -want, 2.0]
    (v,) = run("print [ # a comment sends this literal to the parser\n%s, -%s, 2]"
               % (written, written))
    assert v.tolist() == [want, -want, 2.0]
    (v,) = run("print [[%s], [1]]" % written)
    assert v.tolist() == [[want], [1.0]]


def test_an_integer_attribute_of_any_length():
    # iota's axis: too large for a float is the lexer's error; 1e300 is a whole number the
    # checker refuses as an axis
    line, message = cli_error("print iota(tensor[2x3], %s)" % ("1" * LONG))
    assert line == 1 and "too large for a 64-bit float" in message
    line, message = cli_error("print iota(tensor[2x3], 1" + "0" * 300 + ")")
    assert line == 1 and message.startswith("iota's axis")
    line, message = cli_error("print iota(tensor[2x3], 1.5" + "0" * LONG + ")")
    assert line == 1 and message.startswith("argument axis of iota must be a whole number")
    (v,) = run("print iota(tensor[2x3], 0" + "0" * LONG + "1)")
    assert v.tolist() == [[0, 1, 2], [0, 1, 2]]
    (v,) = run("print iota(tensor[2x3], 0." + "0" * LONG + "1)")     # the float is 0
    assert v.tolist() == [[0, 0, 0], [1, 1, 1]]


# ---------------------------------------------------------------- reading in linear time

def _read(src):
    """Tokenize and parse, as goat does (the garbage collector paused)."""
    with gc_paused():
        return parse(Source("t.mg", src))


def _cpu_seconds(fn, reps):
    best = math.inf
    for _ in range(reps):
        t = time.process_time()
        fn()
        best = min(best, time.process_time() - t)
    return best


def assert_linear(make, small, large, what, step=_read):
    """Reading ``make(large)`` (10x ``make(small)``) takes well under 100x as long: < 25x.
    Returns the two times, in seconds of this process's CPU (other processes do not count)."""
    a, b = make(small), make(large)
    assert 8 <= len(b) / len(a) <= 12
    step(a)                                     # lark loaded, caches filled
    for _ in range(2):                          # once more if something else got in the way
        t_small = _cpu_seconds(lambda: step(a), 3)
        t_large = _cpu_seconds(lambda: step(b), 1)
        if t_large < 25 * max(t_small, 1e-3):
            return t_small, t_large
    pytest.fail("reading %s: %d bytes took %.3fs, %d bytes %.3fs (%.0fx)"
                % (what, len(a), t_small, len(b), t_large, t_large / t_small))


def sum_of_literals(n):
    return "print " + " + ".join(["[[1]]"] * n) + "\n"


def test_a_long_sum_of_literals_reads_in_linear_time():
    # every literal was once scanned to the end of the line ("[[1]] + [[1]] + ..." holds only
    # characters a literal may hold): 100,000 terms took 84 s
    assert_linear(sum_of_literals, 2_000, 20_000, "a sum of literals")
    (v,) = run(sum_of_literals(20_000))
    assert v.tolist() == [[20_000]]


def list_with_a_comment(n):
    rows = ["  [%d, 2]%s\n" % (i, "," if i < n - 1 else "") for i in range(n)]
    rows[0] = rows[0][:-1] + "  # the first row\n"
    return "let m = [\n" + "".join(rows) + "]\nprint col_sum(m)\n"


def test_a_long_literal_with_a_comment_reads_in_linear_time():
    # the comment sends the literal to the parser, row by row; each row was once scanned to the
    # end of the literal: 160,000 rows did not finish in 60 s
    assert_linear(list_with_a_comment, 5_000, 50_000, "a literal with a comment")
    (v,) = run(list_with_a_comment(50_000))
    assert v.tolist() == [[50_000 * 49_999 / 2, 100_000]]


def line_of_calls(nbytes):
    unit = " + ones(tensor[1x2])"
    return "print 0" + unit * (nbytes // len(unit)) + "\n"


def test_a_long_line_reads_in_linear_time():
    # one statement of 100 KB and of 1 MB, read by lark (it has too many tokens to record)
    assert_linear(line_of_calls, 100_000, 1_000_000, "a line of calls")
    n = 100_000 // len(" + ones(tensor[1x2])")
    (v,) = run(line_of_calls(100_000))
    assert v.tolist() == [[n, n]]


def line_of_signed_numbers(nbytes):
    # "- 7" is not JSON: the literal is one long statement lark reads, element by element
    n = nbytes // len("- 12345, ")
    return "print [" + ", ".join("- %d" % i for i in range(n)) + "]\n"


def test_a_long_line_holding_one_literal_reads_in_linear_time():
    assert_linear(line_of_signed_numbers, 50_000, 500_000, "a line holding a literal")
    (v,) = run(line_of_signed_numbers(500_000))
    assert v.tolist() == [-float(i) for i in range(len(v))] and len(v) > 50_000


def line_of_statements(nbytes):
    n = nbytes // len("let a12345 = a12344 + 1; ")
    return ("let a0 = [[1, 2]]; " + "".join("let a%d = a%d + 1; " % (i, i - 1)
                                           for i in range(1, n)) + "print a%d\n" % (n - 1))


def test_a_long_line_of_statements_reads_in_linear_time():
    assert_linear(line_of_statements, 50_000, 500_000, "a line of statements")
    n = 50_000 // len("let a12345 = a12344 + 1; ")
    (v,) = run(line_of_statements(50_000))
    assert v.tolist() == [[n, n + 1]]


def _per_call(fn, reps=300):
    return _cpu_seconds(lambda: [fn() for _ in range(reps)], 3) / reps


def test_reading_a_literal_or_a_type_does_not_read_the_rest_of_the_line():
    # what made the two faults quadratic, measured one token at a time: reading a literal (or
    # a type) at the start of a 4 MB line costs what it costs at the start of a short one
    for head, tail in (("print [[1]]", " + [[1]]"), ("print [[1], [2]]", " + 1"),
                       ("print ones(tensor[1x2])", " + ones(tensor[1x2])")):
        short = Source("t.mg", head + tail + "\n")
        long = Source("t.mg", head + tail * (4_000_000 // len(tail)) + "\n")
        if "tensor" in head:
            at = head.index("tensor")
            read = lambda s: _type_token(s, "tensor", at, at + 6)          # noqa: E731
        else:
            read = lambda s: _try_array(s, 6)                               # noqa: E731
        assert read(short).end_pos == read(long).end_pos == head.rindex("]") + 1
        t_short, t_long = _per_call(lambda: read(short)), _per_call(lambda: read(long))
        assert t_long < 3 * t_short + 2e-6, (head, t_short, t_long)


def test_reading_takes_memory_in_proportion_to_the_text():
    peaks = []
    for n in (1_000, 10_000):
        src = sum_of_literals(n)
        _read(src)
        tracemalloc.start()
        try:
            module = _read(src)
            peaks.append(tracemalloc.get_traced_memory()[1])
        finally:
            tracemalloc.stop()
        del module
        assert peaks[-1] < 500 * len(src)       # bytes of memory per byte of program
    assert peaks[1] < 15 * peaks[0]


def test_a_hundred_thousand_term_sum_is_checked_and_run():
    """A long chain nests to the left in the syntax tree; the checker walks it in a loop."""
    (v,) = goat.run_source("print " + " + ".join(["[[1]]"] * 100_000))
    assert v.tolist() == [[100000.0]]


def test_a_format_width_or_precision_of_any_length_is_an_error_not_a_crash():
    for spec in (".%sf" % ("9" * 5000), "%sd" % ("1" * 5000), ".%sf" % ("0" * 4998 + "12")):
        e = None
        try:
            goat.run_source('print "{1:%s}"' % spec)
        except goat.GoatError as err:
            e = err
        if spec.startswith(".000"):                     # leading zeros: a precision of 12
            assert e is None
        else:
            assert e is not None and "is too large (at most 1000)" in e.message
            assert len(e.message) < 200
