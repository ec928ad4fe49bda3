"""``--dtype f32``: every layer computes in float32 (issue 8, point 4).

References are NumPy float32 computations written here, independently of goat; the stated
tolerance is float32's: results of a few roundings agree to a few ulps (rtol 1e-6), and the
book's programs printed in f32 agree with f64 to the precision float32 holds (rtol 1e-4 after
ten training steps).
"""
from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import goat
from goat.ops import rng

ROOT = Path(__file__).resolve().parent.parent
F32 = np.float32


def _f32(text, tmp_path=None):
    return goat.run_source(text, dtype="f32", path=str(tmp_path / "p.mg") if tmp_path else
                           "<test>")


def test_literals_and_scalar_arithmetic_stay_float32():
    out = _f32("print 0.1\nprint 1.0 / 3.0\nprint [[0.1, 0.2]] + 0.3\n")
    assert all(v.dtype == F32 for v in out)
    assert out[0] == F32(0.1)
    assert out[1] == F32(1.0) / F32(3.0)
    np.testing.assert_array_equal(out[2], np.array([[0.1, 0.2]], F32) + F32(0.3))


def test_a_loop_accumulates_in_float32():
    out = _f32("var s = 0.0\nfor i in 0 .. 100 {\n  s = s + i / 7.0\n}\nprint s\n")
    want = F32(0.0)
    for i in range(100):
        want = want + F32(i) / F32(7.0)
    assert out[0].dtype == F32 and out[0] == want
    assert float(out[0]) != sum(i / 7.0 for i in range(100))    # not float64's sum


def test_load_and_ops_against_numpy_float32(tmp_path):
    r = np.random.default_rng(5)
    a, b, c = r.normal(size=(6, 5)), r.normal(size=(5, 4)), r.normal(size=(1, 4))
    for name, x in (("a", a), ("b", b), ("c", c)):
        np.save(tmp_path / (name + ".npy"), x)         # float64 files
    text = """
let a = load("a.npy", tensor[6x5])
let b = load("b.npy", tensor[5x4])
let c = load("c.npy", tensor[1x4])
let h = tanh(a @ b) * c + row_mean(a @ b)
print h
print exp(h) / row_sum(exp(h))
print sqrt(abs(h)) - maximum(h, c) + h % 0.5
print col_max(h) + col_min(h) + col_sum(h)
"""
    out = _f32(text, tmp_path)
    a32, b32, c32 = a.astype(F32), b.astype(F32), c.astype(F32)
    p = a32 @ b32
    h = np.tanh(p) * c32 + np.add.reduce(p, axis=-1, keepdims=True) / F32(4)
    e = np.exp(h)
    want = [h, e / e.sum(axis=-1, keepdims=True),
            np.sqrt(np.abs(h)) - np.maximum(h, c32) + np.remainder(h, F32(0.5)),
            h.max(axis=0, keepdims=True) + h.min(axis=0, keepdims=True)
            + h.sum(axis=0, keepdims=True)]
    for got, w in zip(out, want):
        assert got.dtype == F32 and w.dtype == F32
        np.testing.assert_allclose(got, w, rtol=1e-6, atol=1e-6)


def test_draws_are_the_float64_draws_rounded():
    out = _f32("print randn(tensor[3x4], 11)\nprint rand(tensor[7], 2)\n")
    np.testing.assert_array_equal(out[0], rng.normal(np, (3, 4), 11).astype(F32))
    np.testing.assert_array_equal(out[1], rng.uniform(np, (7,), 2).astype(F32))


def test_a_uniform_draw_that_rounds_up_to_1_in_f32_stays_below_1():
    """Found by a newcomer: rand's draw of seed 39870583, cell 0, is 1 - 8.2e-9, which
    float32 rounds to 1.0: rand left [0, 1), floor(rand * 3) was 3, and gather stopped a
    training run.  Such a draw is the largest float32 below 1; the other cells are the f64
    draws rounded."""
    f64 = rng.uniform(np, (3,), 39870583)
    assert f64[0] >= 1 - 2.0 ** -25 and F32(f64[0]) == 1       # the case itself
    below_one = np.nextafter(F32(1), F32(0))
    u, idx, kept = _f32("let u = rand(tensor[3], 39870583)\nprint u\n"
                        "print gather([[10], [20], [30]], floor(reshape(u, tensor[3x1]) * 3))\n"
                        "print nn.dropout(ones(tensor[1x3]), 0.999999999, 39870583)\n"
                        .replace("print nn", "import nn\nprint nn"))
    assert u.dtype == F32 and u[0] == below_one and (u < 1).all()
    np.testing.assert_array_equal(u[1:], f64[1:].astype(F32))
    assert idx[0, 0] == 30
    assert np.isfinite(kept).all()      # p rounds to 1 in f32: dropped, not 1 * 1/(1 - 1)
    for backend in ("numpy", "auto"):
        (again,) = goat.run_source("print rand(tensor[3], 39870583)\n", dtype="f32",
                                   backend=backend)
        np.testing.assert_array_equal(again, u)


def test_save_writes_float32_and_load_reads_it_back(tmp_path):
    _f32('save([[0.1, 0.2]] / 3.0, "w.npy")\n', tmp_path)
    w = np.load(tmp_path / "w.npy")
    assert w.dtype == F32
    np.testing.assert_array_equal(w, np.array([[0.1, 0.2]], F32) / F32(3))
    back = goat.run_source('print load("w.npy", tensor[1x2])\n',
                           path=str(tmp_path / "q.mg"))
    assert back[0].dtype == np.float64 and np.array_equal(back[0], w.astype(np.float64))


def test_nan_and_zero_signs_as_in_f64():
    """NaN signs through every function (NumPy's float32 exp, log, sin and cos drop a NaN's
    sign; goat's f32 keeps it, as f64 does), and zero signs."""
    text = ("print 0.0 / 0.0\nprint maximum([[-0.0]], [[0.0]])\nprint row_min([[0.0, -0.0]])\n"
            "let n = [[0.0, 1.0]] / [[0.0, 0.0]]\n"
            "print exp(n)\nprint log(n)\nprint sin(n)\nprint cos(n)\nprint sigmoid(-n)\n"
            "print exp(0/0)\nprint log(-(0/0))\nprint sqrt(n)\nprint tanh(n)\nprint abs(n)\n")
    f32, f64 = _f32(text), goat.run_source(text)
    for a, b in zip(f32, f64):
        assert np.array_equal(np.signbit(a), np.signbit(b))
        assert np.array_equal(np.isnan(a), np.isnan(b))


@pytest.mark.parametrize("example", ["tour.mg", "lm35/train_10.mg", "batched_trainer.mg"])
def test_the_examples_in_f32_agree_with_f64(example):
    path = str(ROOT / "examples" / example)
    f64 = goat.run_file(path)
    f32 = goat.run_file(path, dtype="f32")
    assert len(f32) == len(f64)
    for a, b in zip(f32, f64):
        if isinstance(a, str):
            continue        # formatted lines: numbers to 6 digits may differ in the last
        assert a.dtype == F32
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-4)


def test_cli_dtype_prints_with_g(tmp_path):
    p = tmp_path / "p.mg"
    p.write_text("print [[1.0, 2.0]] / 3.0\n")
    r = subprocess.run([sys.executable, "-m", "goat", "run", "--dtype", "f32", str(p)],
                       capture_output=True, text=True)
    assert r.returncode == 0
    assert r.stdout.endswith("[[0.333333,   0.666667]]\n")
    r = subprocess.run([sys.executable, "-m", "goat", "run", "--dtype", "f16", str(p)],
                       capture_output=True, text=True)
    assert r.returncode != 0 and "invalid choice: 'f16'" in r.stderr


CONFORMANCE = ROOT.parent / "shared" / "conformance"


@pytest.mark.skipif(not CONFORMANCE.is_dir(), reason="no ../shared/conformance here")
def test_the_conformance_cases_in_f32():
    """Each conformance case run with --dtype f32: the same text, numbers within 1e-5 of the
    expected (float64) output, NaNs of the same sign; a case that fails fails the same way."""
    import math
    import re
    number = re.compile(r"-?nan|-?inf|-?\d+(?:\.\d*)?(?:e[-+]\d+)?")
    cases = sorted(CONFORMANCE.glob("*/*.mg")) + sorted(CONFORMANCE.glob("*/*/*.mg"))
    assert cases
    for mg in cases:
        status = mg.with_suffix(".status")
        status = int(status.read_text()) if status.exists() else 0
        r = subprocess.run([sys.executable, "-m", "goat", "run", "--dtype", "f32", mg.name],
                           cwd=str(mg.parent), capture_output=True, text=True)
        assert r.returncode == status, mg
        if status:
            f64 = subprocess.run([sys.executable, "-m", "goat", "run", mg.name],
                                 cwd=str(mg.parent), capture_output=True, text=True)
            assert r.stderr.splitlines()[:1] == f64.stderr.splitlines()[:1], mg
            continue
        want = mg.with_suffix(".out").read_text()
        assert number.sub("#", r.stdout) == number.sub("#", want), mg
        for a, b in zip(number.findall(r.stdout), number.findall(want)):
            x, y = float(a.replace("-nan", "nan")), float(b.replace("-nan", "nan"))
            if math.isnan(x) or math.isnan(y) or math.isinf(x) or math.isinf(y):
                assert a == b, mg
            else:
                assert abs(x - y) <= 1e-5 * max(abs(x), abs(y)), (mg, a, b)


def test_whole_numbers_beyond_2_24_written_in_the_program_stay_exact():
    """Loop bounds and seeds written as numbers are exact in f32 (float32 holds every whole
    number only up to 2**24); one computed in float32 beyond it is an error, not a silent
    other number."""
    out = _f32("var k = 0.0\nfor i in 16777216..16777219 { k = k + 1.0 }\nprint k\n"
               "print randn(tensor[3], 20240101)\nprint randn(tensor[2], 100000000)\n")
    assert out[0] == 3.0
    np.testing.assert_array_equal(out[1], rng.normal(np, (3,), 20240101).astype(F32))
    np.testing.assert_array_equal(out[2], rng.normal(np, (2,), 100000000).astype(F32))
    with pytest.raises(goat.GoatError, match="a loop bound computed in float32 .* 16777216"):
        _f32("let n = row_sum([[16777216.0, 3.0]])\nfor i in 0..n { }\n")
    # 2**24 + 1 computed in float32 is 2**24: that too is refused, not one iteration short
    with pytest.raises(goat.GoatError, match="a loop bound computed in float32"):
        _f32("var a = 0.0\nfor i in 16777210..(16777216 + 1) { a = a + 1.0 }\nprint a\n")
    assert goat.run_source("var a = 0.0\nfor i in 16777210..(16777216 + 1) { a = a + 1.0 }\n"
                           "print a\n")[0] == 7.0
    with pytest.raises(goat.GoatError, match="a seed computed in float32 .* got 16777220"):
        _f32("let n = row_sum([[16777216.0, 3.0]])\nprint rand(tensor[1], n)\n")
    assert goat.run_source("let n = row_sum([[16777216.0, 3.0]])\n"
                           "print rand(tensor[1], n)\n")[0].shape == (1,)      # f64: fine


@pytest.mark.parametrize("lo, hi", [(16777214, 16777218), (16777215, 16777217),
                                    (-16777216, -16777214)])
def test_a_loop_index_from_2_24_up_in_f32_is_refused_where_the_body_reads_it(lo, hi):
    """The index is a float32 value: 16777217 would be 16777216 (it had printed 16777216
    twice), and 2**24 itself, read as a loop bound or a seed, is refused as a number that may
    be 2**24 + 1 rounded; a loop that never reads its index runs (see the test above), as does
    one below 2**24 in magnitude on either side."""
    for body in ('print "{i:d}"', "if 1 { k = k + i }", "k = k + rand(tensor[], i)"):
        with pytest.raises(goat.GoatError) as info:
            _f32("var k = 0.0\nprint k\nfor i in %d..%d {\n  %s\n}\n" % (lo, hi, body))
        assert info.value.line == 3
        assert info.value.message == (
            "a loop index in float32 (--dtype f32) must be of magnitude below 2**24 = 16777216 "
            "(float32 holds every whole number only up to it, and 16777216 may be 16777217 "
            "rounded); this loop's index runs from %d to %d (run in f64)" % (lo, hi - 1))


def test_a_loop_index_in_f32_is_a_float32_value_up_to_2_24():
    """As NumPy float32 computes: at i = 2**24 - 1, i - 16777217 rounds 16777217 to 2**24
    (it is -1, not -2), and a seed or an inner loop's bound read from the index is exact."""
    out = io.StringIO()
    goat.run_source(
        'for i in -16777215..-16777213 { print "{i:d}" }\n'
        'for i in 16777214..16777216 {\n'
        '  print "{i:d} {i - 16777217:g} {16777218 - i:g} {i + 16777219:g}"\n'
        '  for j in (i - 1)..i { print "{j:d}" }\n'
        '  print "{rand(tensor[], i):.9g}"\n}\n', stdout=out, dtype="f32")
    f = np.float32
    want = ["-16777215", "-16777214"]
    for i in (16777214, 16777215):
        want.append("%d %g %g %g" % (i, f(i) - f(16777217), f(16777218) - f(i), f(i) + f(16777219)))
        want.append("%d" % (i - 1))
        want.append("%.9g" % rng.uniform(np, (), i).astype(F32))
    assert out.getvalue().splitlines() == want
    assert want[5].split()[1] == "-1"



@pytest.mark.parametrize("use", ["gather(zeros(tensor[16777218x1]), i)",
                                 "onehot(i, 16777218)"])
def test_an_index_beyond_2_24_in_f32_is_refused_not_rounded_to_a_neighbour(use):
    """float32 stores 16777217 as 16777216: a lookup into a table (or classes) bigger than
    2**24 would read the neighbouring row.  In f32 it is an error; in f64 it is the row."""
    text = "let i = [[3], [16777217]]\nprint %s\n" % use
    with pytest.raises(goat.GoatError, match=r"indices in float32 .* below 2\*\*24 = 16777216 "
                                             r".*got 16777216 at position 1"):
        _f32(text)
    _f32("let i = [[3], [16777215]]\nprint %s\n" % use)       # below 2**24: exact, fine
    if use.startswith("onehot"):
        out = goat.run_source(text)[0]
        assert out.shape == (2, 16777218) and out[1, 16777217] == 1 and out.sum() == 2

def test_a_number_too_large_for_float32_is_inf_without_a_warning(recwarn):
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = _f32("print 1e39\nprint [[1e39, -1e39]]\nprint 1e39 * 0.5\n")
    assert out[0] == np.inf and out[1].tolist() == [[np.inf, -np.inf]] and out[2] == np.inf
    assert all(v.dtype == F32 for v in out)


def test_the_api_takes_numpy_names_of_the_precisions():
    for d in ("float32", np.float32, np.dtype("float32")):
        assert goat.run_source("print 0.1\n", dtype=d)[0].dtype == F32
    with pytest.raises(ValueError, match="unknown precision 'int64'"):
        goat.run_source("print 1\n", dtype="int64")
    with pytest.raises(TypeError, match="dtype must be a precision"):
        goat.run_source("print 1\n", dtype=32)


def test_piped_program_with_options_only(tmp_path):
    r = subprocess.run([sys.executable, "-m", "goat", "--dtype", "f32"], input="print 1 / 3\n",
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert r.stdout.endswith("[0.333333]\n")


def test_the_repl_session_changes_precision_keeping_values():
    import io
    from goat.repl.session import Session
    out = io.StringIO()
    s = Session(out=out)
    s.run("let a = [[0.1, 16777217.0]]")
    s.set_backend("numpy", "f32")
    assert s.dtype == "f32"
    (r,) = s.run("a")
    assert r.value.dtype == F32 and r.value.tolist() == [[float(F32(0.1)), 16777216.0]]
    with pytest.raises(goat.GoatError, match="no precision f16"):
        s.set_backend("numpy", "f16")
    s.set_backend("numpy", "f64")
    assert s.run("a")[0].value.dtype == np.float64


def test_argmax_beyond_2_24_columns_in_f32_is_refused_not_rounded():
    text = "print argmax_rows(%siota(tensor[1x16777218], 1))\n"
    with pytest.raises(goat.GoatError, match=r"argmax_rows found a column of 2\*\*24"):
        _f32(text % "")
    assert goat.run_source(text % "")[0].tolist() == [[16777217.0]]
    assert _f32(text % "-")[0].tolist() == [[0.0]]


def test_f32_numbers_an_op_takes_are_float32s_as_numpy_float32_computes_them():
    """A breaker's: in f32 an op on numbers written in the program alone computed in float64
    (sin(16777217) was sin of 16777217, -1e300 - -1e300 was 0); each is float32's, as NumPy
    float32 gives -- while a seed or a loop bound written so stays the number written."""
    f = np.float32
    got = goat.run_source("print sin(16777217)\nlet n = 16777217\nprint n - 16777216\n"
                          "let a = -1e300\nprint a - a\nprint sin([16777217])\n"
                          "print randn(tensor[2], 20240101)\nfor i in 0..16777217 - 16777215 {\n"
                          "    print i\n}\n", dtype="f32")
    with np.errstate(all="ignore"):
        assert float(got[0]) == float(np.sin(f(16777217))) == float(got[3][0])
        assert float(got[1]) == 0.0 and np.isnan(float(got[2]))
    draws = goat.run_source("print randn(tensor[2], 20240101)\n")[0]
    assert np.array_equal(got[4], draws.astype(np.float32))
    assert [float(v) for v in got[5:]] == [0.0]     # 16777216 - 16777215 in float32: 1 step
