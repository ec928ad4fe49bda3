"""narrow(x, axis, start, length): a slice of a computed start and a fixed length (PyTorch's
narrow), against NumPy's slicing written here, finite differences, the compiled program and
the GPU test back end."""
import os
import subprocess
import sys

import numpy as np
import pytest

import goat
from conftest import (assert_compiled_equal, assert_f32_within_float32_of_f64,
                      assert_same_on_the_gpu_test_back_end, central_differences, compiled_numbers,
                      error, literal as _literal, run)

RNG = np.random.default_rng(35)


@pytest.mark.parametrize("shape", [(5,), (4, 3), (2, 5, 3), (3, 2, 2, 4)])
def test_every_axis_start_and_length_is_numpys_slice(shape):
    x = RNG.normal(size=shape)
    cases = []
    for axis in range(-len(shape), len(shape)):
        n = shape[axis]
        for length in sorted({0, 1, n // 2, n}):
            for start in sorted({0, (n - length) // 2, n - length}):
                cases.append((axis, start, length))
    text = "let x = %s\n" % _literal(x) + "".join(
        "print narrow(x, %d, %d, %d)\n" % c for c in cases)
    got = run(text)
    for (axis, start, length), g in zip(cases, got):
        index = [slice(None)] * len(shape)
        index[axis] = slice(start, start + length)
        assert np.array_equal(g, x[tuple(index)]), (axis, start, length)


def test_batches_taken_in_a_loop_are_the_rows_gather_takes():
    """The use it is for: a batch of B rows at step k, narrow(X, 0, k * B, B), where gather
    needed the indices made by hand."""
    x = RNG.normal(size=(12, 3))
    text = ("let B = 4\nlet X = %s\nfor k in 0..3 {\n    print narrow(X, 0, k * B, B)\n"
            "    print gather(X, iota(tensor[B, 1], 0) + k * B)\n}\n" % _literal(x))
    got = run(text)
    for k in range(3):
        assert np.array_equal(got[2 * k], x[4 * k:4 * k + 4])
        assert np.array_equal(got[2 * k + 1], got[2 * k])


@pytest.mark.parametrize("src, message", [
    ("print narrow(x, 0, 3, 2)",
     "narrow's start must be a whole number from 0 to 2 (the axis has 4 cells, the length is "
     "2), got 3"),
    ("print narrow(x, 0, 1.5, 1)",
     "narrow's start must be a whole number from 0 to 3 (the axis has 4 cells, the length is "
     "1), got 1.5"),
    ("print narrow(x, 0, 1, 5)", "narrow's length 5 is more than 4, the size of axis 0 of 4x3"),
    ("print narrow(x, 2, 0, 1)",
     "narrow's axis 2 is outside tensor[4x3], of rank 2 (axes 0 to 1, or -2 to -1 counting from the "
     "last)"),
    ("print narrow(x, 0, [[1, 2]], 1)", "narrow's start must be a single number, got shape 1x2"),
    ("print narrow(x, 0, 0, -1)", "narrow's length must be a whole number, 0 or more, got -1"),
    ("print narrow(1, 0, 0, 1)", "narrow needs a tensor of rank 1 or more, got a scalar"),
    ("print narrow(x, s, 0, 1)",
     "s is a var, which may change, so it cannot be narrow's axis: make it a let (let s = "
     "...)"),
    ('print narrow(x, 0 + load("a.npy", tensor[1x1]), 0, 1)',     # known when it runs
     "argument axis of narrow must be a whole number written in the program (or a let holding "
     "one), such as 0"),
    # a newcomer's growing window: why, and what to do instead (it said "such as 0")
    ("for k in 0..3 { print narrow(x, 0, 0, k + 1) }",
     "argument length of narrow must be a whole number known before the run (written, a let "
     "holding one, or a def's size variable): it is a size of the result, and every shape is "
     "known before the run; a window that grows can be a fixed one, its cells past the end "
     "masked"),
])
def test_what_the_program_fixes_is_checked_before_it_runs(src, message):
    """A start written in the program, the length, the axis: errors before anything runs (the
    print before them shows nothing)."""
    status_src = "let x = zeros(tensor[4x3])\nvar s = 1\nprint x\n" + src + "\n"
    with pytest.raises(goat.GoatError) as info:
        goat.check_source(status_src)
    assert info.value.message == message
    assert info.value.line == 4


@pytest.mark.parametrize("aot", [False, True])
@pytest.mark.parametrize("start, shown", [("k * 2 - 1", "-1"), ("k * 2 + 0.5", "0.5"),
                                          ("k * 3", "3"), ("0 / 0 + k", "-nan")])
def test_a_computed_start_is_checked_when_it_runs_with_the_same_words_compiled(
        tmp_path, aot, start, shown):
    if aot:
        pytest.importorskip("llvmlite")
    (tmp_path / "p.mg").write_text(
        # (a bound known only when it runs: with fixed bounds the start is checked before)
        "let x = reshape(iota(tensor[12], 0), tensor[4x3])\nfor k in 0..sum(ones(tensor[2])) {\n"
        "    print \"step {k}\"\n    print narrow(x, 0, %s, 2)\n}\n" % start)
    r = subprocess.run([sys.executable, "-m", "goat", "run"] + (["--aot"] if aot else [])
                       + ["p.mg"], cwd=str(tmp_path), capture_output=True, text=True,
                       env=dict(os.environ, GOAT_CACHE=str(tmp_path / "cache")))
    assert r.returncode == 1
    assert r.stderr.splitlines()[0] == (
        "p.mg:4: error: narrow's start must be a whole number from 0 to 2 (the axis has 4 "
        "cells, the length is 2), got %s" % shown)
    assert r.stdout.startswith("step 0\n")


_PROGRAM = """let x: tensor[6x3] = load("x.npy")
let w: tensor[1x3] = load("w.npy")
var h = zeros(tensor[2x3])
var loss = [[0]]
for k in 0..3 {
    let batch = narrow(x * w, 0, k * 2, 2)
    h = tanh(batch + h @ transpose(narrow(transpose(w), 0, 0, 3) @ ones(tensor[1x3])) * 0.5)
    loss += col_sum(row_sum(narrow(h, 1, 1, 2) * narrow(h, 1, 1, 2)))
}
let g = grad(loss, w)
print g
"""
# the program with seeded draws for its files (no folder needed)
_DRAWN = (_PROGRAM.replace('load("x.npy")', "randn(tensor[6x3], 1)")
          .replace('load("w.npy")', "randn(tensor[1x3], 2)"))


def _reference(x, w):
    total = 0.0
    h = np.zeros((2, 3))
    m = (w.T @ np.ones((1, 3))).T          # transpose(transpose(w)[0:3] @ ones)
    for k in range(3):
        h = np.tanh((x * w)[2 * k:2 * k + 2] + h @ m * 0.5)
        total += np.sum(h[:, 1:3] ** 2)
    return total


def test_grad_through_narrow_in_a_loop_is_finite_differences_and_compiles_bit_for_bit(
        tmp_path):
    x = RNG.normal(size=(6, 3))
    w = RNG.normal(size=(1, 3)) * 0.7
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "w.npy", w)
    (tmp_path / "p.mg").write_text(_PROGRAM)
    (g,) = goat.run_file(str(tmp_path / "p.mg"))
    fd = central_differences(lambda e: _reference(x, w + e), w)
    assert np.allclose(g, fd, rtol=1e-6, atol=1e-8)
    pytest.importorskip("llvmlite")
    (numbers,) = compiled_numbers(tmp_path)
    assert_compiled_equal(numbers, g, _PROGRAM)


def test_the_derivative_of_narrows_derivative_is_narrow():
    """grad of a gradient through narrow: narrow_backward's own vjp."""
    (g2,) = run("var w = [[1, 2, 3, 4]]\n"
                "let g = grad(col_sum(row_sum(narrow(w * w * w, 1, 1, 2))), w)\n"
                "print grad(col_sum(row_sum(g * g)), w)\n")
    w = np.array([[1.0, 2, 3, 4]])
    inner = np.where((np.arange(4) >= 1) & (np.arange(4) < 3), 3 * w ** 2, 0)
    assert np.allclose(g2, 2 * inner * np.where(inner != 0, 6 * w, 0))


def test_a_start_computed_from_what_is_differentiated_says_to_stop_the_gradient():
    e = error("var w = [[1, 2, 3]]\n"
              "print grad(col_sum(row_sum(narrow(w, 1, floor(w @ [[0], [0], [0.1]]), 2))), w)\n")
    assert e.message.startswith("grad cannot differentiate through narrow on line 2: it has no "
                                "derivative with respect to its argument start")


def test_the_gpu_test_back_end_gives_the_same_bits_without_stray_host_reads():
    assert_same_on_the_gpu_test_back_end(_DRAWN)


def test_f32_is_f64_within_float32():
    assert_f32_within_float32_of_f64(_DRAWN)


@pytest.mark.parametrize("src, line, message", [
    # found by a breaker: a def's length past the size its call passes had been blamed on the
    # start, and one with a computed start went through goat check
    ("def f(x: tensor[N, C]) = narrow(x, 0, 0, 2)\nprint f([[1, 2]])\n", 1,
     "narrow's length 2 is more than 1, the size of axis 0 of 1x2"),
    ("def f(x: tensor[N, C], s: scalar) = narrow(x, 0, s, 2)\nprint 3\n"
     "print f([[1, 2]], reshape(col_sum([[0]]), scalar))\n", 1,
     "narrow's length 2 is more than 1, the size of axis 0 of 1x2"),
    ("def f(x: tensor[..., N]) = narrow(x, 0, 0, 2)\nprint f([[1, 2, 3]])\n", 1,
     "narrow's length 2 is more than 1, the size of axis 0 of 1x3"),
    # a written start that no size makes valid, where the size is not known yet
    ('let y = load("q.npy", tensor[?x3])\nprint 1\nprint narrow(y, 0, -1, 1)\n', 3,
     "narrow's start must be a whole number from 0, got -1"),
    ("def f(x: tensor[N, C]) = narrow(x, 0, 0.5, 1)\n", 1,
     "narrow's start must be a whole number from 0, got 0.5"),
    ("print narrow([1, 2, 3], 0, 0, 1e30)\n", 1,
     "narrow's length 1e+30 is more than 3, the size of axis 0 of 3"),
    ("print narrow([[1, 2, 3]], 0, 1, 1)\n", 1,
     "narrow's start must be a whole number from 0 to 0 (the axis has 1 cell, the length is "
     "1), got 1"),
])
def test_what_a_call_fixes_is_checked_before_the_run_too(src, line, message):
    e = error(src)
    assert (e.line, e.message) == (line, message)


def test_an_axis_may_be_a_negative_let():
    (v,) = run("let A = -1\nprint narrow([[1, 2, 3]], A, 1, 2)\n")
    assert v.tolist() == [[2, 3]]


def test_a_float32_start_past_2_to_the_24_is_refused_not_rounded():
    """Found by a breaker: under --dtype f32 a start of 2**24 + 1 computed by the program is
    2**24 once rounded, and took the cell before the one asked for."""
    from goat.ops.builtins import _narrow_start
    from goat.ops.registry import OpError
    with pytest.raises(OpError) as info:
        _narrow_start(16777216.0, 16777220, 1, 0, "16777220", exact=2 ** 24)
    assert info.value.message == (
        "narrow's start in float32 (--dtype f32) must be below 2**24 = 16777216 (float32 holds "
        "every whole number only up to it), got 16777216 (run in f64)")
    assert _narrow_start(16777215.0, 16777220, 1, 0, "16777220", exact=2 ** 24) == 16777215
    from goat.gpu import get_backend
    assert get_backend("numpy", dtype="f32").exact_limit(np.float32(3)) == 2 ** 24


@pytest.mark.parametrize("aot", [False, True])
def test_one_cell_is_one_cell_compiled_too(tmp_path, aot):
    """Found by a reviewer: the compiled program wrote '1 cells'."""
    if aot:
        pytest.importorskip("llvmlite")
    (tmp_path / "p.mg").write_text("let x = [7]\nlet z = row_sum([[1]])\n"
                                   "print narrow(x, 0, reshape(z, scalar), 1)\n")
    r = subprocess.run([sys.executable, "-m", "goat", "run"] + (["--aot"] if aot else [])
                       + ["p.mg"], cwd=str(tmp_path), capture_output=True, text=True,
                       env=dict(os.environ, GOAT_CACHE=str(tmp_path / "cache")))
    assert r.returncode == 1
    assert r.stderr.splitlines()[0] == (
        "p.mg:3: error: narrow's start must be a whole number from 0 to 0 (the axis has 1 "
        "cell, the length is 1), got 1")
