"""The memref printer: C's %g for numbers (checked against the C library itself) and the
MLIR runner's layout (checked against the rule in LANGUAGE.md, written out by hand)."""
import ctypes
import ctypes.util
import math
import struct

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from goat.interp.printer import format_memref, format_number, row_major_strides

_libc = ctypes.CDLL(ctypes.util.find_library("c") or None)


def c_printf_g(x: float) -> str:
    """The C library's own ``snprintf("%g", x)``: an oracle independent of goat."""
    buf = ctypes.create_string_buffer(64)
    _libc.snprintf(buf, 64, b"%g", ctypes.c_double(x))
    return buf.value.decode()


def negative_nan() -> float:
    return struct.unpack("<d", struct.pack("<Q", 0xFFF8000000000000))[0]


@pytest.mark.parametrize("x, text", [
    (1.0, "1"), (20.0, "20"), (0.5, "0.5"), (1.0 / 3.0, "0.333333"), (1.25311, "1.25311"),
    (3.99338e-05, "3.99338e-05"), (-1e9, "-1e+09"), (123456789.0, "1.23457e+08"),
    (0.0001, "0.0001"), (0.00001, "1e-05"), (2500.0, "2500"), (-0.0, "-0"),
    (math.inf, "inf"), (-math.inf, "-inf"), (math.nan, "nan"), (negative_nan(), "-nan"),
])
def test_percent_g_examples(x, text):
    assert format_number(x) == text


@settings(max_examples=400, deadline=None)
@given(st.floats(allow_nan=True, allow_infinity=True))
def test_percent_g_matches_the_c_library(x):
    assert format_number(x) == c_printf_g(x)


def test_numpy_zero_over_zero_prints_like_glibc():
    # the book's division example: x86's 0/0 is a NaN with the sign bit set
    with np.errstate(all="ignore"):
        q = float((np.array([0.0]) / np.array([0.0]))[0])
    assert format_number(q) == c_printf_g(q)


def test_strides_are_row_major():
    assert row_major_strides([6, 6]) == [6, 1]
    assert row_major_strides([6, 1]) == [1, 1]
    assert row_major_strides([2, 3, 4]) == [12, 4, 1]
    assert row_major_strides([]) == []


HEADER = "Unranked Memref base@ = 0x\u2026 rank = {r} offset = 0 sizes = [{s}] strides = [{t}] data = \n"


def test_matrix_layout():
    text = format_memref(np.array([[1.0, 0.5], [0.25, -2.0]]))
    assert text == HEADER.format(r=2, s="2, 2", t="2, 1") + "[[1,   0.5], \n [0.25,   -2]]\n"


def test_column_and_single_cell():
    assert format_memref(np.ones((3, 1))) == (HEADER.format(r=2, s="3, 1", t="1, 1")
                                              + "[[1], \n [1], \n [1]]\n")
    assert format_memref(np.array([[20.0]])) == HEADER.format(r=2, s="1, 1", t="1, 1") + "[[20]]\n"


def test_scalar_layout():
    assert format_memref(np.float64(7.0)) == HEADER.format(r=0, s="", t="") + "[7]\n"


def test_vector_layout():
    # rank 1: between elements ", " then rank - 1 + 1 = 1 space
    assert format_memref(np.array([1.0, 2.0, 3.0])) == HEADER.format(r=1, s="3", t="1") + "[1,  2,  3]\n"


def test_rank3_layout():
    a = np.arange(8.0).reshape(2, 2, 2)
    expected = (HEADER.format(r=3, s="2, 2, 2", t="4, 2, 1")
                + "[[[0,    1], \n  [2,    3]], \n [[4,    5], \n  [6,    7]]]\n")
    assert format_memref(a) == expected


def test_empty_dimension_prints_brackets():
    assert format_memref(np.zeros((0, 3))).endswith("data = \n[]\n")


def test_every_processor_prints_the_books_minus_nan():
    # x86 gives 0/0 a negative NaN (the book's "-nan"); elsewhere the back end makes it so
    import io
    import goat
    from goat.gpu.numpy_backend import NumpyBackend
    from goat.interp.evaluator import Evaluator
    for x86_nan in (True, False):
        out = io.StringIO()
        program = goat.check_source("print [[1], [-1], [0]] / [[0]]\nprint sqrt([[-1]])\n"
                                    "print [[0]] * (-[[0]] / [[0]])")
        Evaluator(program, NumpyBackend(x86_nan=x86_nan), out=out).run()
        lines = out.getvalue().splitlines()
        assert lines[1:4] == ["[[inf], ", " [-inf], ", " [-nan]]"]
        assert lines[5] == "[[-nan]]"


def test_a_nan_that_comes_in_keeps_its_sign():
    from goat.gpu.numpy_backend import NumpyBackend
    xp = NumpyBackend(x86_nan=True).xp
    positive_nan = abs(float("nan"))
    assert not np.signbit(xp.add(np.array([positive_nan]), np.array([1.0]))[0])
    with np.errstate(all="ignore"):
        assert np.signbit(xp.subtract(np.array([np.inf]), np.array([np.inf]))[0])


def test_tanh_keeps_the_sign_of_a_nan_like_c():
    import goat
    (got,) = goat.run_source("print tanh([[0]] / [[0]])")
    libm = ctypes.CDLL(ctypes.util.find_library("m"))
    libm.tanh.restype = ctypes.c_double
    libm.tanh.argtypes = [ctypes.c_double]
    with np.errstate(all="ignore"):
        nan = float((np.zeros(1) / np.zeros(1))[0])
    assert format_number(float(got[0, 0])) == c_printf_g(libm.tanh(nan))


@pytest.mark.parametrize("dtype", ["f64", "f32"])
@pytest.mark.parametrize("fn, x", [("log", -1.0), ("log", -math.inf), ("sqrt", -1.0),
                                   ("sqrt", -math.inf), ("sin", math.inf), ("cos", -math.inf)])
def test_a_nan_made_by_a_function_has_the_c_librarys_sign(fn, x, dtype):
    """log(-1) prints as glibc's log prints it, the book's ``-nan`` on x86, whatever NumPy
    computes: NumPy 2.4's float64 log gives a positive NaN (it had printed ``nan``).  As one
    number, in a short row and in a row long enough for NumPy's SIMD loops."""
    import goat
    libm = ctypes.CDLL(ctypes.util.find_library("m"))
    f = getattr(libm, fn)
    f.restype, f.argtypes = ctypes.c_double, [ctypes.c_double]
    want = c_printf_g(f(x))
    lit = "inf" if x == math.inf else "-inf" if x == -math.inf else repr(x)
    src = ("let x = %s\nprint %s(x)\nprint %s(x + zeros(tensor[1x3]))\nprint %s(x + zeros(tensor[3x37]))\n"
           % ("1 / 0" if lit == "inf" else "-1 / 0" if lit == "-inf" else lit, fn, fn, fn))
    for got in goat.run_source(src, dtype=dtype):
        assert {format_number(float(v)) for v in np.ravel(got)} == {want}, (fn, x, got)


@pytest.mark.parametrize("shape", [(5,), (3, 4), (2, 3, 4), (0, 3), (3, 0), (2, 0, 3),
                                   (1, 1, 1, 1), (4, 1, 5, 2), (70000,), (3, 70000),
                                   (2, 2, 40000)])
def test_a_large_value_is_printed_a_part_at_a_time_with_the_same_text(shape, monkeypatch):
    """Printing a 4000x4000 value had needed 2.4 GB (its whole text built at once, about 18
    times the value); streamed, it is the same text."""
    from goat.interp import printer
    monkeypatch.setattr(printer, "STREAM_CELLS", 0)
    a = np.random.default_rng(1).standard_normal(shape) * 1e3
    a.flat[:3] = [np.nan, -np.inf, -0.0][:a.size]
    parts = []
    printer.write_memref(a, parts.append)
    assert "".join(parts) == format_memref(a)
    if a.size > 100000:
        assert len(parts) > 1 and max(map(len, parts)) < 3 * 2 ** 20


def test_running_out_of_memory_while_printing_names_the_line(monkeypatch):
    """It had been "goat: error: out of memory", with no line."""
    import goat
    from goat.interp import evaluator

    def fail(value, write):
        raise MemoryError
    monkeypatch.setattr(evaluator, "write_memref", fail)
    import io
    with pytest.raises(goat.GoatMemoryError) as info:
        goat.run_source("let a = [[1, 2]]\nprint a\n", stdout=io.StringIO())
    assert (info.value.line, info.value.message) == (
        2, "out of memory printing a value of shape 1x2")
