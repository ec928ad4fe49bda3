"""The AOT runtime's number formatting (goat/aot/runtime/fmt.c) against the interpreter's
(goat/interp/fmt.py format_value): the same text for every value and spec, the same error
message and exit status when a value cannot be formatted."""
import ctypes
import math
import os
import shutil
import struct
import subprocess

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from goat.interp.fmt import INT_TYPES, MAX_DIGITS, check_spec, format_value
from goat.ops.registry import OpError

RUNTIME = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                       "goat", "aot", "runtime")
CC = shutil.which("cc")
pytestmark = pytest.mark.skipif(CC is None, reason="no C compiler (cc)")
CFLAGS = ["-O2", "-ffp-contract=off", "-Wall", "-Wextra", "-Werror"]


def bits(u):
    return struct.unpack("<d", struct.pack("<Q", u))[0]


def as_bits(x):
    return struct.unpack("<Q", struct.pack("<d", x))[0]


NAN = bits(0x7FF8000000000000)
NEG_NAN = bits(0xFFF8000000000000)
INF = math.inf


class GoatStr(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("len", ctypes.c_size_t), ("cap", ctypes.c_size_t)]


MAIN_C = r"""
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fmt.h"
/* fmt_main BITS SPEC SITE: print goat_format_value's text for the double with those bits */
int main(int argc, char **argv)
{
    if (argc != 4)
        return 2;
    uint64_t u = strtoull(argv[1], NULL, 16);
    double x;
    memcpy(&x, &u, sizeof x);
    goat_str s = {NULL, 0, 0};
    goat_format_value(&s, x, argv[2], argv[3]);
    fwrite(s.data, 1, s.len, stdout);
    free(s.data);
    return 0;
}
"""


@pytest.fixture(scope="module")
def rt(tmp_path_factory):
    d = tmp_path_factory.mktemp("aot_rt_fmt")
    srcs = [os.path.join(RUNTIME, "fmt.c"), os.path.join(RUNTIME, "goat_fail.c")]
    lib = d / "libgoatfmt.so"
    subprocess.run([CC, "-shared", "-fPIC", *CFLAGS, "-I", RUNTIME, "-o", str(lib), *srcs],
                   check=True)
    main_c = d / "fmt_main.c"
    main_c.write_text(MAIN_C)
    exe = d / "fmt_main"
    subprocess.run([CC, *CFLAGS, "-I", RUNTIME, "-o", str(exe), str(main_c), *srcs, "-lm"],
                   check=True)
    so = ctypes.CDLL(str(lib))
    so.goat_format_value.argtypes = [ctypes.POINTER(GoatStr), ctypes.c_double,
                                     ctypes.c_char_p, ctypes.c_char_p]
    so.goat_format_value.restype = None
    so.goat_format_repr.argtypes = [ctypes.POINTER(GoatStr), ctypes.c_double]
    so.goat_format_repr.restype = None
    libc = ctypes.CDLL(None)
    libc.free.argtypes = [ctypes.c_void_p]
    libc.free.restype = None

    def take(s):
        text = ctypes.string_at(s.data, s.len).decode("utf-8") if s.data else ""
        libc.free(s.data)
        return text

    class Runtime:
        @staticmethod
        def format(x, spec):
            s = GoatStr(None, 0, 0)
            so.goat_format_value(ctypes.byref(s), x, spec.encode("utf-8"), b"site: \x01")
            return take(s)

        @staticmethod
        def repr(x):
            s = GoatStr(None, 0, 0)
            so.goat_format_repr(ctypes.byref(s), x)
            return take(s)

        @staticmethod
        def run(x, spec, site):
            """(status, stdout, stderr) of the program formatting x by spec, failing at site."""
            p = subprocess.run([str(exe), "%016x" % as_bits(x), spec, site],
                               capture_output=True, check=False, timeout=30)
            return p.returncode, p.stdout.decode("utf-8"), p.stderr.decode("utf-8")

    return Runtime


def expect(rt, x, spec):
    want = format_value(x, spec)
    got = rt.format(x, spec)
    assert got == want, (x, spec, got, want)


# ------------------------------------------------------------------------------ fixed cases

VALUES = [0.0, -0.0, 1.0, -1.0, 0.5, 1.5, 2.5, -2.5, 0.125, 0.375, 1e-5, 1e-4, 9.9999e-5,
          0.1, 0.3, 2 / 3, -2 / 3, 12.5, 100.0, 123.0, 999.5, 1234.5, 12345.678, 999999.5,
          1e6, 1e15, 1e16, 1e17, 2.0 ** 53, 2.0 ** 53 + 2, 1e21, 1e22, 1.7976931348623157e308,
          1e300, -1e300, 1e-300, 5e-324, -5e-324, 2.2250738585072014e-308, math.pi, -math.e,
          0.05, 0.005, 0.0005, 0.015, 0.025, 1.005, 2.675, 1e100, 123456789.0, -987654321.0,
          255.0, -255.0, 65535.0, 4096.0, 7.0, 1e23, INF, -INF, NAN, NEG_NAN,
          bits(0x7FF0000000000001), bits(0xFFF4000000000000)]

SPECS = [
    # no type, no precision: %g laid out
    "", ">8", "<8", "^9", "=10", "+", "-", " ", ",", "_", "010", "#", "z", "0", "12,", "*^13",
    "+012,", "+z10", "#12", "x=+12", "0>12", "é>9", ">0", "01", "020_", "+#015,",
    # no type with a precision: Python's 'g' with at least one digit after the point
    ".0", ".1", ".2", ".3", ".6", ".12", ".17", ".20", "#.0", "#.1", "#.3", "#.10", "+.3",
    "z.2", "015,.3", ",.10", "_>20.4", "=+14.5", "#018,.6",
    # e E
    "e", "E", ".0e", "#.0e", ".3e", ".3E", ".16e", ".20e", "+.2e", "z.2e", "012.3e",
    "0=15,.2e", "^20.4E", "#e", " .1e", "-<14.1e",
    # f F %
    "f", "F", ".0f", "#.0f", ".1f", ".2f", ".3f", ".6f", ".17f", ".30f", "z.1f", "z.0f",
    "+z.3f", " .2f", ",.2f", "_.2f", "015,.2f", "015_.2f", "016,.2f", "0=17,.2f", "*<16,.1F",
    "^+20,.3f", "#,.0f", "+025,f", "%", ".0%", ".1%", "#.0%", "z.1%", ",.2%", "012.1%",
    "+.3%", ">12.2F", "z010.0f",
    # g G n
    "g", "G", ".0g", ".1g", ".3g", ".6g", ".17g", "#g", "#.3g", "#.0g", "+g", "zg", "z#.2g",
    ",g", "_g", "015,g", ",.12g", "^12G", "n", ".3n", "+012n", "#n", "z.4n",
    # integer types
    "d", "b", "o", "x", "X", "#b", "#o", "#x", "#X", ",d", "_d", "_b", "_o", "_x", "_X",
    "+d", " d", "08d", "010,d", "09,d", "08,d", "011_x", "#012x", "#012_b", "#=+14X",
    "*^11d", "<8d", "#>10o", "+#b", "0=10d", "0<10d", "x<010d", "#d",
    # large widths and precisions
    ".%df" % MAX_DIGITS, ".%de" % MAX_DIGITS, ".%dg" % MAX_DIGITS, "#.%dg" % MAX_DIGITS,
    ".%d" % MAX_DIGITS, "%d" % MAX_DIGITS, "0%d,.2f" % MAX_DIGITS, "%d_b" % MAX_DIGITS,
    "0%d,d" % MAX_DIGITS, ".%d%%" % MAX_DIGITS,
]


def test_the_table_is_accepted():
    for spec in SPECS:
        assert check_spec(spec) is None, spec


@pytest.mark.parametrize("spec", SPECS)
def test_table(rt, spec):
    kind = spec[-1:] if spec[-1:] in INT_TYPES else None
    for x in VALUES:
        if kind and (not math.isfinite(x) or x != math.floor(x)):
            continue
        expect(rt, x, spec)


def test_no_spec_is_percent_g(rt):
    for x in VALUES:
        assert rt.format(x, "") == format_value(x, None) == format_value(x, "")
    assert rt.format(NEG_NAN, "") == "-nan"
    assert rt.format(-0.0, "") == "-0"


def test_examples(rt):
    assert rt.format(0.123456789, ".6f") == "0.123457"
    assert rt.format(1234567.0, ",") == "1,234,567"      # a whole number: every digit
    assert rt.format(1234567.891, ",") == "1.23457e+06"  # any other: %g, grouped
    assert rt.format(-0.0, "z_") == "0" and rt.format(2.0 ** 53, ",") == "9,007,199,254,740,992"
    assert rt.format(1e20, "_") == "100_000_000_000_000_000_000"
    assert rt.format(1234567.0, ",.1f") == "1,234,567.0"
    assert rt.format(5.0, "08,d") == "0,000,005"
    assert rt.format(100.0, ".3") == "1e+02"
    assert rt.format(1.0, ".3") == "1.0"
    assert rt.format(-0.0, "z.2f") == "0.00"
    assert rt.format(-0.001, "z.2f") == "0.00"
    assert rt.format(NEG_NAN, "+010.3F") == "-000000NAN"
    assert rt.format(NAN, "+010") == "+000000nan"
    assert rt.format(NEG_NAN, "z.1f") == "-nan"
    assert rt.format(0.25, ".1%") == "25.0%"
    assert rt.format(-255.0, "#010x") == "-0x00000ff"
    assert rt.format(0.5, ".0f") == "0" and rt.format(1.5, ".0f") == "2"
    assert rt.format(2.0 ** 70, "_x") == "40_0000_0000_0000_0000"


def test_fill_characters(rt):
    for fill in ["é", "→", "😀", "0", "=", "<", "\"", "\\", "\t", "z", "#", "n", "i", "I"]:
        for align in "<>=^":
            for x in [1.5, -1234.5, NEG_NAN, NAN, -INF, INF]:
                expect(rt, x, fill + align + "12")
                expect(rt, x, fill + align + "+14,.2f")
                expect(rt, x, fill + align + "12.3E")
            expect(rt, -42.0, fill + align + "#12x")


def test_ties_round_to_even_on_the_exact_value(rt):
    for k in range(-300, 300):
        x = k / 8
        for spec in (".0f", ".1f", ".2f", ".0e", ".1e", ".1g", ".2", ".0%"):
            expect(rt, x, spec)


def test_whole_numbers_in_every_base(rt):
    xs = [float(2 ** k) for k in range(0, 1024, 7)] + [float(2 ** k - 1) for k in range(1, 54)]
    xs += [1.7976931348623157e308, 1e300, 123456789012345678.0, 2.0 ** 1023 * 1.5]
    for x in xs:
        for v in (x, -x):
            for spec in ("d", "b", "o", "x", "X", "#b", "_o", "#_X", ",d", "+040_x"):
                expect(rt, v, spec)


def test_repr(rt):
    xs = [0.1, 0.2, 0.3, 1 / 3, 1e16, 1e15, 123456789.125, 1e-4, 9.999e-5, 5e-324, -0.0, 0.0,
          1.7976931348623157e308, 2.2250738585072014e-308, INF, -INF, NAN]
    xs += [2.0 ** k for k in range(-1074, 1024)]
    xs += [-(2.0 ** k) * 3 for k in range(-1074, 1022, 3)]
    for x in xs:
        assert rt.repr(x) == repr(x), x


@settings(max_examples=3000, deadline=None)
@given(st.integers(0, 2 ** 64 - 1))
def test_repr_any_bits(rt, u):
    x = bits(u)
    assert rt.repr(x) == repr(x)


# ------------------------------------------------------------------------ drawn (value, spec)

FILLS = st.one_of(st.sampled_from(list(" *0x=<>^+-_,.#z%é→😀\"\\\tn")),
                  st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00{}"))


def _number(small, big):
    return st.one_of(st.integers(0, small), st.integers(0, big),
                     st.integers(0, 6).map(lambda n: "0" * n + "7"))


@st.composite
def specs(draw):
    parts = []
    if draw(st.booleans()):
        if draw(st.booleans()):
            parts.append(draw(FILLS))
        parts.append(draw(st.sampled_from("<>=^")))
    for opt in ("+- ", "z", "#", "0"):
        if draw(st.booleans()):
            parts.append(draw(st.sampled_from(opt)))
    if draw(st.booleans()):
        parts.append(str(draw(_number(30, MAX_DIGITS))))
    if draw(st.booleans()):
        parts.append(draw(st.sampled_from(",_")))
    if draw(st.booleans()):
        parts.append("." + str(draw(_number(20, MAX_DIGITS))))
    if draw(st.integers(0, 3)):
        parts.append(draw(st.sampled_from(list("eEfFgG%ndboxX"))))
    spec = "".join(parts)
    assume(check_spec(spec) is None)
    return spec


VALUES_DRAWN = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(-10 ** 6, 10 ** 6).map(float),
    st.integers(-2 ** 64, 2 ** 64).map(float),
    st.integers(-10 ** 6, 10 ** 6).map(lambda k: k / 8),
    st.integers(-10 ** 6, 10 ** 6).map(lambda k: k / 1000),
    st.integers(0, 2 ** 64 - 1).map(bits),
    st.sampled_from(VALUES),
)


@settings(max_examples=4000, deadline=None, suppress_health_check=[HealthCheck.filter_too_much,
                                                                    HealthCheck.too_slow])
@given(VALUES_DRAWN, specs())
def test_drawn(rt, x, spec):
    if spec[-1:] in INT_TYPES and not (math.isfinite(x) and x == math.floor(x)):
        x = float(math.floor(x)) if math.isfinite(x) else 12345.0
    expect(rt, x, spec)


# --------------------------------------------------------------------------------- errors

SITE = "prog.mg:4: error: \x01\n4 | print x\n  | ^"


def test_errors_exit_1_with_the_interpreters_message(rt):
    cases = [(2.5, "d"), (-0.5, "x"), (NAN, "d"), (NEG_NAN, "#b"), (INF, ",d"), (-INF, "08X"),
             (1e-300, "o"), (0.1, "_d"), (1 / 3, ">10d"), (4503599627370495.5, "d"),
             (5e-324, "b")]
    for x, spec in cases:
        with pytest.raises(OpError) as info:
            format_value(x, spec)
        message = str(info.value)
        status, out, err = rt.run(x, spec, SITE)
        prefix, suffix = SITE.split("\x01")
        assert (status, out, err) == (1, "", prefix + message + suffix + "\n"), (x, spec)
    assert rt.run(2.5, "d", "t.mg:1: ")[2] == \
        "t.mg:1: cannot format 2.5 with :d: it is not a whole number\n"
    assert rt.run(NEG_NAN, "x", "")[2] == "cannot format -nan with :x: it is not a whole number\n"


def test_whole_numbers_do_not_fail(rt):
    for x, spec in [(-0.0, "d"), (3.0, "#x"), (1e300, "b")]:
        assert rt.run(x, spec, SITE) == (0, format_value(x, spec), "")


def test_a_spec_check_spec_refuses_fails_at_run_time(rt):
    for spec in ["s", "c", "q", ".f", ",_", "%d" % (MAX_DIGITS + 1), ".2d", "z d", ",x", ",n"]:
        assert check_spec(spec) is not None
        status, out, err = rt.run(1.0, spec, "t.mg:1: ")
        assert (status, out, err) == (1, "", "t.mg:1: invalid format spec ':%s'\n" % spec)
