"""Format strings for print (goat/interp/fmt.py): parsing with positions, every error message,
and exact formatted text."""
import math
import struct
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from goat.interp.fmt import FormatSyntaxError, check_spec, format_value, parse_format
from goat.interp.printer import format_number
from goat.ops.registry import OpError

NEG_NAN = struct.unpack("<d", struct.pack("<Q", 0xFFF8000000000000))[0]
NAN = struct.unpack("<d", struct.pack("<Q", 0x7FF8000000000000))[0]
INF = math.inf
Z = sys.version_info >= (3, 11)      # the z option came in Python 3.11


def syntax_error(raw):
    with pytest.raises(FormatSyntaxError) as info:
        parse_format(raw)
    e = info.value
    return e.message, raw[e.start:e.end], (e.start, e.end)


def fields(raw):
    """Each field as (expression text, spec)."""
    return [(raw[p[1]:p[2]], p[3]) for p in parse_format(raw) if p[0] == "field"]


# ---------------------------------------------------------------------------------- parsing

def test_the_example():
    raw = "step {i}: loss = {l:.6f}"
    assert parse_format(raw) == [("text", "step "), ("field", 6, 7, None),
                                 ("text", ": loss = "), ("field", 18, 19, ".6f")]


def test_text_only_and_empty():
    assert parse_format("") == []
    assert parse_format("hello") == [("text", "hello")]


def test_escapes_and_doubled_braces():
    raw = r'a\tb\n\\ \"q\" {{x}} }}{{'
    assert parse_format(raw) == [("text", 'a\tb\n\\ "q" {x} }{')]


def test_text_around_fields_is_merged_and_empty_text_left_out():
    raw = "{a}{b}"
    assert parse_format(raw) == [("field", 1, 2, None), ("field", 4, 5, None)]
    raw = r"{{\n{a}"
    assert parse_format(raw) == [("text", "{\n"), ("field", 5, 6, None)]


def test_whitespace_around_the_expression_is_trimmed():
    raw = "{  loss \t:>8}"
    [part] = parse_format(raw)
    assert raw[part[1]:part[2]] == "loss" and (part[1], part[2]) == (3, 7)
    assert part[3] == ">8"                        # the spec is kept exactly


def test_expressions_with_brackets_and_colons():
    assert fields("{f(a, b):.3f}") == [("f(a, b)", ".3f")]
    assert fields("{(a + b) / 2}") == [("(a + b) / 2", None)]
    assert fields("{row_sum(x) @ [[1], [2]]:e} and {-x}") == [("row_sum(x) @ [[1], [2]]", "e"),
                                                                ("-x", None)]
    # a ':' inside brackets is not the spec's
    assert fields("{f(a: b)}") == [("f(a: b)", None)]
    assert fields("{m[1:2]:>4}") == [("m[1:2]", ">4")]


def test_a_closing_brace_always_ends_the_field():
    # f(x is the parser's to reject, with its own message
    assert fields("{f(x}") == [("f(x", None)]
    assert fields("{a)}") == [("a)", None)]


def test_spec_escapes_and_empty_spec():
    assert fields(r'{x:\">8}') == [("x", '">8')]
    assert fields("{x:}") == [("x", "")]
    assert fields("{x::>8}") == [("x", ":>8")]            # ':' as the fill character


def test_not_equal_is_left_to_the_expression():
    assert fields("{a != b}") == [("a != b", None)]


@pytest.mark.parametrize("raw, msg, at", [
    ("loss {}", "empty {} in a format string: write the value to print inside, as {loss}", "{}"),
    ("loss {  }", "empty {} in a format string: write the value to print inside, as {loss}",
     "{  }"),
    ("{:.3f}", "a format field needs a value before its ':', as {loss:.3f}", "{:.3f}"),
    ("{ :}", "a format field needs a value before its ':', as {loss:.3f}", "{ :}"),
    ("x = {x", "unclosed { in a format string: close the field with }, or write {{ for a "
               "literal {", "{"),
    ("x = {x:.3f", "unclosed { in a format string: close the field with }, or write {{ for a "
                   "literal {", "{"),
    ("{", "unclosed { in a format string: close the field with }, or write {{ for a literal {",
     "{"),
    ("a } b", "a lone } in a format string: write }} for a literal }", "}"),
    ("{x}}", "a lone } in a format string: write }} for a literal }", "}"),
    ("{x:>{w}}", "nested fields like {x:>{w}} are not supported: write the width or precision "
                 "as a number, as {x:>8.3f}", "{"),
    ("{ {x} }", "a { inside a format field: fields do not nest (write {{ for a literal {, "
                "outside a field)", "{"),
    ("{x!r}", "conversions like !r are not supported: goat formats numbers; put a format spec "
              "after a colon instead, as {x:.3f}", "!r"),
    ("{x!s:>8}", "conversions like !r are not supported: goat formats numbers; put a format "
                 "spec after a colon instead, as {x:.3f}", "!s"),
    ("{x!}", "conversions like !r are not supported: goat formats numbers; put a format spec "
             "after a colon instead, as {x:.3f}", "!}"),
    (r"a\qb", 'unknown escape \\q in a string: the escapes are \\n, \\t, \\\\ and \\"', r"\q"),
    (r"{x:\q}", 'unknown escape \\q in a string: the escapes are \\n, \\t, \\\\ and \\"', r"\q"),
    ("ab\\", "a lone \\ at the end of a string: write \\\\ for a backslash", "\\"),
    (r"{f(\n)}", "a \\ inside a format field: escapes belong in the text around fields", "\\"),
    ("{x:q}", "invalid format spec ':q': 'q' is not a format type; the types are e, E, f, F, g, "
              "G, n and % (any number) and d, b, o, x and X (whole numbers)", "q"),
    ("loss {l:.f} ok", "invalid format spec ':.f': a '.' must be followed by the number of "
                       "digits, as :.3f", ".f"),
])
def test_syntax_errors_with_positions(raw, msg, at):
    message, text, _ = syntax_error(raw)
    assert message == msg
    assert text == at


def test_error_offsets_are_exact():
    assert syntax_error("ab {} cd")[2] == (3, 5)
    assert syntax_error("ab {x cd")[2] == (3, 4)
    assert syntax_error("ab } cd")[2] == (3, 4)
    assert syntax_error("{x:>{w}}")[2] == (4, 5)
    assert syntax_error("{x:08.q}")[2] == (3, 7)


# ------------------------------------------------------------------------------ check_spec

@pytest.mark.parametrize("spec", [None, "", ".6f", ">8.3f", "03d", "e", "E", "%", ",", ",d",
                                  "_b", "#x", "X", "o", "g", "G", "n", "F", ".3", "+", " ",
                                  ">8", "*^12.4e", "=+08.2f", "<>", "x<8"]
                         + (["z.1f"] if Z else []))
def test_good_specs(spec):
    assert check_spec(spec) is None


@pytest.mark.parametrize("spec, why", [
    ("q", "'q' is not a format type; the types are e, E, f, F, g, G, n and % (any number) and "
          "d, b, o, x and X (whole numbers)"),
    ("s", "goat's values are numbers, and s formats text; use g, f, e or d"),
    (">10s", "goat's values are numbers, and s formats text; use g, f, e or d"),
    ("c", "goat does not print numbers as characters; use d for a whole number"),
    (".f", "a '.' must be followed by the number of digits, as :.3f"),
    (".2d", "a whole number has no digits after the point, so :d takes no precision; use :.2f"),
    ("zd", "z (no negative zero) applies to decimals only; :d prints -0.0 as 0"),
    ("99999", "a width of 99999 is too large (at most 1000)"),
    (".5000f", "a precision of 5000 is too large (at most 1000)"),
    (",n", "cannot specify ',' with 'n'"),
    (",x", "cannot specify ',' with 'x'"),
    ("abc", "it does not follow [[fill]align][sign][#][0][width][,][.precision][type], as in "
            ":>8.3f"),
    ("3.3.3", "it does not follow [[fill]align][sign][#][0][width][,][.precision][type], as in "
              ":>8.3f"),
])
def test_bad_specs(spec, why):
    assert check_spec(spec) == "invalid format spec ':%s': %s" % (spec, why)
    with pytest.raises(OpError) as info:                  # and at run time, should one slip by
        format_value(1.0, spec)
    assert info.value.message == check_spec(spec)


# ---------------------------------------------------------------------------- format_value

@pytest.mark.parametrize("x, spec, text", [
    (1.25, ".6f", "1.250000"),
    (3.14159, ">8.3f", "   3.142"),
    (3.14159, "<8.3f", "3.142   "),
    (3.14159, "*^9.2f", "**3.14***"),
    (-3.14159, "=+9.2f", "-    3.14"),
    (7.0, "03d", "007"),
    (-7.0, "03d", "-07"),
    (-0.0, "d", "0"),
    (0.0, "d", "0"),
    (1e20, "d", "100000000000000000000"),
    (1234567.0, ",d", "1,234,567"),
    (255.0, "x", "ff"), (255.0, "#x", "0xff"), (255.0, "X", "FF"), (5.0, "b", "101"),
    (8.0, "o", "10"), (-255.0, "#06x", "-0x0ff"),
    (12345.678, "e", "1.234568e+04"),
    (12345.678, ".2E", "1.23E+04"),
    (0.25, "%", "25.000000%"),
    (0.25, ".1%", "25.0%"),
    (1234567.0, ",", "1,234,567"),            # no type, grouped: a whole number's digits
    (1234567.891, ",", "1.23457e+06"),        # any other number: %g, grouped
    (-9876543210.0, "+_", "-9_876_543_210"), (1234567.0, "*^15_", "***1_234_567***"),
    (-0.0, ",", "0"), (2.0 ** 53 - 1, ",", "9,007,199,254,740,991"), (2.0 ** 53, ",", "9,007,199,254,740,992"),
    (1e20, "_", "100_000_000_000_000_000_000"), (1234.0, "010,", "00,001,234"),
    (1234.0, ",", "1,234"),
    (1234567.891, ",.2f", "1,234,567.89"),
    (0.1, ">8", "     0.1"),
    (1.0, ">8", "       1"),                   # %g, not Python's repr "1.0"
    (1.0, "+", "+1"),
    (1.0, ".3", "1.0"),                        # no type with a precision: Python's
    (1234.5, ".3", "1.23e+03"),
    (2.5, "n", "2.5"),                         # n is g
    (1234567.0, "n", "1.23457e+06"),
    (1.0, "g", "1"), (1e-5, "G", "1E-05"),
    (-0.0, ".1f", "-0.0"),
    (1.0, "", "1"), (2.5, None, "2.5"),
    # NaN by its sign bit, with and without spec and width
    (NAN, None, "nan"), (NEG_NAN, None, "-nan"),
    (NAN, "", "nan"), (NEG_NAN, "", "-nan"),
    (NAN, ".3f", "nan"), (NEG_NAN, ".3f", "-nan"),
    (NAN, ">8", "     nan"), (NEG_NAN, ">8", "    -nan"),
    (NEG_NAN, "<8.2f", "-nan    "), (NEG_NAN, "^9e", "  -nan   "), (NEG_NAN, "=8", "-    nan"),
    (NEG_NAN, "*>8", "****-nan"), (NEG_NAN, "i=8", "-iiiinan"), (NEG_NAN, "n<8", "-nannnnn"),
    (NAN, "+f", "+nan"), (NEG_NAN, "+f", "-nan"), (NEG_NAN, " f", "-nan"), (NAN, " f", " nan"),
    (NAN, "F", "NAN"), (NEG_NAN, "F", "-NAN"), (NEG_NAN, "E", "-NAN"), (NEG_NAN, "I>6G", "II-NAN"),
    (NEG_NAN, "%", "-nan%"), (NAN, "%", "nan%"),
    (NEG_NAN, "08.2f", "-0000nan"),           # as Python pads -inf
    (INF, None, "inf"), (-INF, None, "-inf"), (INF, ">6", "   inf"), (-INF, ".2f", "-inf"),
    (INF, "F", "INF"), (INF, "+e", "+inf"),
] + ([(-0.0, "z.1f", "0.0"), (-0.001, "z.1f", "0.0")] if Z else []))
def test_exact_text(x, spec, text):
    assert format_value(x, spec) == text


def test_numpy_scalars_are_accepted():
    import numpy as np
    assert format_value(np.float64(1.5), ".2f") == "1.50"
    assert format_value(np.array(7.0), "d") == "7"


@pytest.mark.parametrize("x, spec, shown", [
    (2.5, "d", "2.5"), (2.5, "03d", "2.5"), (-0.5, "x", "-0.5"), (2.0000001, "d", "2.0000001"),
    (1e-300, "b", "1e-300"), (NAN, "d", "nan"), (NEG_NAN, "d", "-nan"), (INF, "o", "inf"),
    (-INF, "X", "-inf"),
])
def test_integer_types_need_whole_numbers(x, spec, shown):
    with pytest.raises(OpError) as info:
        format_value(x, spec)
    assert info.value.message == "cannot format %s with :%s: it is not a whole number" % (shown,
                                                                                           spec)


def test_default_is_format_number():
    import random
    rng = random.Random(5)
    for _ in range(20000):
        x = struct.unpack("<d", struct.pack("<Q", rng.getrandbits(64)))[0]
        assert format_value(x, None) == format_number(x)
        assert format_value(x, "") == format_number(x)


@settings(max_examples=500, deadline=None)
@given(st.floats(allow_nan=True, allow_infinity=True), st.integers(0, 30))
def test_a_width_alone_pads_the_default(x, width):
    assert format_value(x, ">%d" % width) == format_number(x).rjust(width)
    assert format_value(x, "<%d" % width) == format_number(x).ljust(width)


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 2 ** 64 - 1), st.sampled_from([".3f", "e", ">12.4g", "+.2%", "F", "E"]))
def test_nan_shows_its_sign_bit_and_lays_out_like_inf(payload, spec):
    # every NaN bit pattern: the sign bit decides "-nan", the rest lays out as +-inf does
    bits = (payload & 0x800FFFFFFFFFFFFF) | 0x7FF0000000000001
    x = struct.unpack("<d", struct.pack("<Q", bits))[0]
    assert x != x
    negative = bool(bits >> 63)
    expected = format(-INF if negative else INF, spec).replace("inf", "nan").replace("INF", "NAN")
    assert format_value(x, spec) == expected
    assert format_value(x, spec).lstrip(" +").startswith("-") == negative


@settings(max_examples=300, deadline=None)
@given(st.floats(allow_nan=False, allow_infinity=True),
       st.sampled_from([".6f", ">8.3f", "e", "E", "%", ",.2f", "g", "G", ".3", "+.1e"]
                       + (["z.2f"] if Z else [])))
def test_finite_and_infinite_values_are_pythons(x, spec):
    assert format_value(x, spec) == format(x, spec)


@settings(max_examples=300, deadline=None)
@given(st.integers(-2 ** 60, 2 ** 60), st.sampled_from(["d", "03d", ">8d", "x", "#X", "b", ",d",
                                                        "+d", "o"]))
def test_whole_numbers_are_pythons_ints(n, spec):
    x = float(n)
    assert format_value(x, spec) == format(int(x), spec)
