"""Subscripts: x[i], x[a:b], x[:, j] read cells; x[i] = v (and +=, ...) replaces them in a var.
Against NumPy's indexing written here, finite differences, the compiled program and the GPU
test back end."""

import numpy as np
import pytest

import goat
from conftest import (assert_compiled_equal, assert_f32_within_float32_of_f64,
                      assert_same_on_the_gpu_test_back_end, central_differences, compiled_numbers,
                      error, goat_run_in, literal as _literal, printed_numbers, run,
                      run_error_in)

RNG = np.random.default_rng(2026)


def _subscripts(shape, rng, steps=True):
    """A random subscript of an array of ``shape``: (goat's text, NumPy's index); a slice
    may have a step."""
    k = rng.integers(1, len(shape) + 1)
    text, index = [], []
    for n in shape[:k]:
        kind = rng.integers(4)
        if kind == 0:                       # an index, counted from either end
            i = int(rng.integers(-n, n))
            text.append(str(i))
            index.append(i)
        elif kind == 1:                     # the whole axis
            text.append(":")
            index.append(slice(None))
        else:                               # a slice, its bounds negative or left out
            a, b = sorted(int(v) for v in rng.integers(0, n + 1, size=2))
            lo = a - n if rng.integers(2) else a
            hi = b - n if rng.integers(2) and b < n else b
            # and now and then a step (every step-th cell)
            step = int(rng.integers(1, 4)) if steps and rng.integers(3) == 0 else None
            by = "" if step is None else ":%d" % step
            if kind == 2:
                text.append("%d:%d%s" % (lo, hi, by))
                index.append(slice(lo, hi, step))
            elif a == 0:
                text.append(":%d%s" % (hi, by))
                index.append(slice(None, hi, step))
            else:
                text.append("%d:%s" % (lo, by))
                index.append(slice(lo, None, step))
    return ", ".join(text), tuple(index)


@pytest.mark.parametrize("shape", [(5,), (4, 3), (2, 5, 3), (3, 2, 2, 4)])
def test_a_subscript_takes_the_cells_numpy_takes(shape):
    x = RNG.normal(size=shape)
    cases = [_subscripts(shape, RNG) for _ in range(40)]
    got = run("let x = %s\n" % _literal(x) + "".join("print x[%s]\n" % t for t, _ in cases))
    for (text, index), g in zip(cases, got):
        want = x[index]
        assert g.shape == want.shape and np.array_equal(g, want), text


@pytest.mark.parametrize("shape", [(5,), (4, 3), (2, 5, 3)])
def test_an_assignment_to_a_subscript_changes_the_cells_numpy_changes(shape):
    x = RNG.normal(size=shape)
    cases = [_subscripts(shape, RNG) for _ in range(25)]
    lines = ["var x = %s" % _literal(x)]
    want = x.copy()
    steps = []
    for k, (text, index) in enumerate(cases):
        part = want[index].shape
        # a value of the part's shape, or one that broadcasts to it (a single number, a row)
        if k % 3 == 0 or not part or 0 in part:        # (a literal holds no 0x3)
            v = np.array(float(k))
            lines.append("x[%s] = %r" % (text, float(k)))
        elif k % 3 == 1:
            v = RNG.normal(size=part)
            lines.append("x[%s] = %s" % (text, _literal(v)))
        else:
            v = RNG.normal(size=part[-1:])
            lines.append("x[%s] += %s" % (text, _literal(v)))
            v = want[index] + v
        want[index] = v
        steps.append(want.copy())
        lines.append("print x")
    got = run("\n".join(lines) + "\n")
    for (text, _), g, w in zip(cases, got, steps):
        assert g.shape == shape and np.array_equal(g, w), text


def test_each_step_of_assignments_is_numpys():
    got = run("var x = zeros(tensor[3x4])\n"
              "x[0] = [1, 2, 3, 4]\nprint x\n"
              "x[1, 2] = 7\nprint x\n"
              "x[:, 3] = 9\nprint x\n"
              "x[2, 0:2] += [5, 6]\nprint x\n"
              "x[-1, -2] -= 1\nprint x\n"
              "x[1:3] *= [[2], [3]]\nprint x\n")
    x = np.zeros((3, 4))
    want = []
    x[0] = [1, 2, 3, 4]
    want.append(x.copy())
    x[1, 2] = 7
    want.append(x.copy())
    x[:, 3] = 9
    want.append(x.copy())
    x[2, 0:2] += [5, 6]
    want.append(x.copy())
    x[-1, -2] -= 1
    want.append(x.copy())
    x[1:3] *= [[2], [3]]
    want.append(x.copy())
    for g, w in zip(got, want):
        assert np.array_equal(g, w)


@pytest.mark.parametrize("shape", [(5,), (4, 3), (2, 5, 3), (3, 2, 2, 4)])
def test_an_ellipsis_stands_for_the_axes_the_other_subscripts_leave_as_in_numpy(shape):
    x = RNG.normal(size=shape)
    lines = ["var x = %s" % _literal(x)]
    want = []
    r = len(shape)
    for _ in range(30):
        index = ()
        while len(index) < r:                       # a subscript for every axis
            text, index = _subscripts(shape, RNG)
        text = text.split(", ")
        at = int(RNG.integers(r + 1))
        m = int(RNG.integers(r - at + 1))           # (... may stand for no axis, or several)
        lines.append("print x[%s]" % ", ".join(text[:at] + ["..."] + text[at + m:]))
        want.append(x[index[:at] + (Ellipsis,) + index[at + m:]])
    lines += ["x[..., 0] = 7", "x[0, ...] += 1", "print x"]
    x = x.copy()
    x[..., 0] = 7
    x[0, ...] += 1
    want.append(x)
    got = run("\n".join(lines) + "\n")
    assert len(got) == len(want)
    for g, w, line in zip(got, want, lines[1:]):
        assert g.shape == w.shape and np.array_equal(g, w), line


def test_an_assignment_keeps_the_number_written_exactly():
    """x[i] = v is v in those cells, bit for bit (not x + (v - x), which 1e20 would lose)."""
    (x,) = run("var x = [1e20, -0.0, 3]\nx[0] = 1\nx[2] = 0.1\nprint x\n")
    assert x.tolist() == [1.0, -0.0, 0.1] and np.signbit(x[1])


def test_the_shapes_a_subscript_gives():
    p = goat.check_source("let x = zeros(tensor[2x3x4])\nlet a = x[0]\nlet b = x[:, 1]\n"
                          "let c = x[1, 2, 3]\nlet d = x[:, 1:3]\nlet e = x[-1, :, -2:]\n"
                          "let f = x[0][1]\n")
    from goat.typecheck.shapes import format_type
    shapes = {k: format_type(v.shape) for k, v in p.lets.items()}
    assert shapes == {"x": "tensor[2x3x4]", "a": "tensor[3x4]", "b": "tensor[2x4]",
                      "c": "scalar", "d": "tensor[2x2x4]", "e": "tensor[3x2]",
                      "f": "tensor[4]"}


def test_computed_indices_and_slices_in_a_loop():
    """An index or a slice's start may be computed when the program runs (the loop's index);
    a slice's end is a fixed number of cells after its start, as the checker sees it through
    + - and * by fixed numbers."""
    x = RNG.normal(size=(6, 4))
    got = run("let x = %s\nlet B = 2\nfor k in 0..3 {\n"
              "    print x[k * B:(k + 1) * B]\n"
              "    print x[2 * k + 1, k:k + 2]\n"
              "    print x[:, 3 - k]\n"
              "    print x[5 - k:6 - k, -1]\n"
              "}\n" % _literal(x))
    for k in range(3):
        a, b, c, d = got[4 * k:4 * k + 4]
        assert np.array_equal(a, x[2 * k:2 * k + 2])
        assert np.array_equal(b, x[2 * k + 1, k:k + 2])
        assert np.array_equal(c, x[:, 3 - k])
        assert np.array_equal(d, x[5 - k:6 - k, -1])


def test_a_buffer_filled_row_by_row_in_a_loop():
    got = run("var buf = zeros(tensor[4x2])\nfor t in 0..4 {\n"
              "    buf[t] = t * [1, 0] + t * t * [0, 1]\n"
              "    buf[t:t + 1, 1] *= 10\n}\nprint buf\n")
    assert got[0].tolist() == [[0, 0], [1, 10], [2, 40], [3, 90]]


def test_a_def_with_size_variables_subscripts_each_call_at_its_sizes():
    got = run("def last(x: tensor[N, C]) = x[-1]\n"
              "def first_two(x: tensor[N, C]) = x[0:2, :]\n"
              "def put(x: tensor[N, C], v: tensor[C]) {\n    var y = x\n    y[1] = v\n"
              "    return y\n}\n"
              "print last([[1, 2], [3, 4], [5, 6]])\nprint last([[7, 8, 9]])\n"
              "print first_two([[1, 2], [3, 4], [5, 6]])\n"
              "print put(zeros(tensor[3x2]), [4, 5])\n")
    assert got[0].tolist() == [5, 6] and got[1].tolist() == [7, 8, 9]
    assert got[2].tolist() == [[1, 2], [3, 4]]
    assert got[3].tolist() == [[0, 0], [4, 5], [0, 0]]


def test_a_subscript_in_a_format_field_and_a_bracket_after_a_space():
    out = goat.run_source('let x = [[1.5, 2], [3, 4]]\nprint "{x[0, 0]:.2f} {x [1, 1]}"\n')
    assert out == ["1.50 4"]


_PROGRAM = """let x: tensor[6x3] = load("x.npy")
var w: tensor[2x3] = load("w.npy")
def loss(w: tensor[2x3]) {
    var h = zeros(tensor[3x3])
    for k in 0..3 {
        h[k] = tanh(x[2 * k] * w[0] + concat(x[2 * k + 1, 1:3], [0], 0) * w[-1])
        h[k, 0] *= w[1, k]
    }
    return col_sum(row_sum(h * h))
}
let g = grad(loss(w), w)
print g
"""
# the program with seeded draws for its files (no folder needed)
_DRAWN = (_PROGRAM.replace('load("x.npy")', "randn(tensor[6x3], 1)")
          .replace('load("w.npy")', "randn(tensor[2x3], 2)"))


def _reference(x, w):
    h = np.zeros((3, 3))
    for k in range(3):
        h[k] = np.tanh(x[2 * k] * w[0] + np.array([x[2 * k + 1, 1], x[2 * k + 1, 2], 0]) * w[-1])
        h[k, 0] *= w[1, k]
    return np.sum(h * h)


def test_grad_through_reads_and_writes_is_finite_differences_and_compiles_bit_for_bit(
        tmp_path):
    x = RNG.normal(size=(6, 3))
    w = RNG.normal(size=(2, 3)) * 0.7
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "w.npy", w)
    (tmp_path / "p.mg").write_text(_PROGRAM)
    (g,) = goat.run_file(str(tmp_path / "p.mg"))
    fd = central_differences(lambda e: _reference(x, w + e), w)
    assert np.allclose(g, fd, rtol=1e-6, atol=1e-8)
    pytest.importorskip("llvmlite")
    (numbers,) = compiled_numbers(tmp_path)
    assert_compiled_equal(numbers, g, _PROGRAM)


def test_first_and_second_derivatives_through_writes_are_pytorchs():
    torch = pytest.importorskip("torch")
    w0 = RNG.normal(size=(2, 4))
    (g, g2) = run("var w = %s\n"
                  "def f(w: tensor[2x4]) {\n    var y = w * w\n"
                  "    y[0, 1:3] = w[1, 0:2] * w[1, 0:2] * w[1, 0:2]\n"
                  "    y[1] *= w[0, 3]\n    y[:, -1] += w[:, 0]\n"
                  "    return col_sum(row_sum(y * y))\n}\n"
                  "let g = grad(f(w), w)\nprint g\n"
                  "print grad(col_sum(row_sum(g * g)), w)\n" % _literal(w0))
    w = torch.tensor(w0, requires_grad=True)
    y = (w * w).clone()
    y[0, 1:3] = w[1, 0:2] ** 3
    y1 = y.clone()                  # (each write on a copy: PyTorch's autograd reads y after)
    y1[1] = y[1] * w[0, 3]
    y2 = y1.clone()
    y2[:, -1] = y1[:, -1] + w[:, 0]
    y = y2
    (tg,) = torch.autograd.grad((y * y).sum(), w, create_graph=True)
    (tg2,) = torch.autograd.grad((tg * tg).sum(), w)
    assert np.allclose(g, tg.detach().numpy(), rtol=1e-13, atol=1e-13)
    assert np.allclose(g2, tg2.numpy(), rtol=1e-12, atol=1e-12)


def test_the_gpu_test_back_end_gives_the_same_bits_without_stray_host_reads():
    assert_same_on_the_gpu_test_back_end(_DRAWN)


@pytest.mark.parametrize("src, message", [
    ("print x[2]", "index 2 is out of range for axis 0 of 2x3, which has 2 cells: an index is "
                   "from -2 to 1 (a negative one counts from the end)"),
    ("print x[0, -4]", "index -4 is out of range for axis 1 of 2x3, which has 3 cells: an index "
                       "is from -3 to 2 (a negative one counts from the end)"),
    ("print x[0.5]", "an index is a whole number, got 0.5"),
    ("print x[0, 0, 0]", "3 subscripts for a value of rank 2 (tensor[2x3]): one per axis, at "
                         "most"),
    ("print x[0][0][0]", "a scalar has no axes to subscript: x[...] takes cells of a tensor of "
                         "rank 1 or more"),
    ("print x[:, 1:5]", "the slice 1:5 runs past axis 1 of 2x3, which has 3 cells: its bounds "
                        "are from -3 to 3 (goat does not shorten a slice as NumPy does)"),
    ("print x[:, 2:1]", "the slice 2:1 ends before it starts: it would hold no cells, and goat "
                        "does not make an empty slice of that"),
    ("print x[::-1]", "a slice's step must be a whole number from 1, got -1 (goat has no "
                      "reversed slice: a tensor of indices reverses an axis of N cells, "
                      "x[..., N - 1 - iota(tensor[N], 0)] the last)"),
    ("print x[:, 0:3:0]", "a slice's step must be a whole number from 1, got 0"),
    ("for k in 1..2 {\n    print x[::k]\n}", "a slice's step must be a whole number written in "
     "the program (or a let holding one): the result's size depends on it"),
    # a value of more than one cell is a tensor of indices (test_rows.py)
    ("print x[row_sum(x)]", "an index must be a whole number from -2 to 1 (axis 0 of 2x3 has 2 "
                            "cells), got 6 at position 0"),
    ("for k in 0..2 {\n    print x[k:]\n}", "a slice's length must be known before the run: "
     "its start may be computed, when its end is a fixed number of cells after it (x[i:i + 4], "
     "x[k * B:(k + 1) * B]), as narrow(x, axis, start, length) takes them"),
    ("def f(a: tensor[N, ?]) = a[:, 1:]",
     "the slice 1: needs the size of axis 1 of Nx?, which is known only when the program runs "
     "(or a def is called): write both bounds as whole numbers from 0 (the result's sizes are "
     "known before the run); in a def, a slice's bounds may be its size variables: "
     "x[:, 1:N]"),
    ("def f(a: tensor[N, C]) = a[0:3]\nprint f(x)",
     "the slice of 3 cells is longer than axis 0 of 2x3, which has 2"),
    ("def f(a: tensor[N, C]) = a[:, 5]\nprint f(x)",
     "an index must be a whole number from -3 to 2 (axis 1 of 2x3 has 3 cells), got 5"),
    ("x[0] = [1, 2]", "cannot assign a value of shape 2 to x[...], of shape 3: the value's shape "
                      "must be that one, or broadcast to it"),
    ("x[0] += [[1, 2, 3], [4, 5, 6]]", "cannot assign a value of shape 2x3 to x[...], of shape "
                                       "3: the value's shape must be that one, or broadcast to "
                                       "it"),
    # a column for a vector, as argmax_rows gives (a newcomer's): the cells to take
    ("x[:, 0] = argmax_rows(x)", "cannot assign a value of shape 2x1 to x[...], of shape 2: the "
     "value's shape must be that one, or broadcast to it; the value has one axis of 1 more, "
     "last: argmax_rows(x)[:, 0] takes its cells (argmax_rows and sample_rows give a column)"),
    ("x[:, 1] = [[1], [2]] * 2", "cannot assign a value of shape 2x1 to x[...], of shape 2: "
     "the value's shape must be that one, or broadcast to it; the value has one axis of 1 "
     "more, last: ([[1], [2]] * 2)[:, 0] takes its cells (argmax_rows and sample_rows give a "
     "column)"),
    # NumPy's ellipsis and newaxis (found by a newcomer)
    ("print x[..., 0, ...]", "a subscript holds one ... at most (it stands for every axis the "
                             "others leave)"),
    ("let y = ...", "unexpected character '.'; ... is written only in a subscript, x[..., 0], "
                    "where it stands for the whole axes the others leave"),
    ("print x + None", "unknown name 'None': goat has no None, but in a subscript, where it "
                       "adds an axis of size 1 (x[:, None]; reshape(x, tensor[...]) does too)"),
    ("x[:, None] = 1", "None (a new axis of size 1) can only be read, x[:, None]; an "
                       "assignment's subscripts take the var's own axes"),
    ("print x[[0, 1], None, 0, 0]", "3 subscripts for a value of rank 2 (tensor[2x3]): one per "
                                    "axis, at most"),
    ("print x[None, None, 0, 0, 0]", "3 subscripts for a value of rank 2 (tensor[2x3]): one per "
                                     "axis, at most"),
    ("let y = x\ny[0] = 1", "cannot assign to 'y': it is defined with let on line 2, which cannot "
                            "change; declare it with var to assign to it"),
])
def test_what_the_program_fixes_is_checked_before_it_runs(src, message):
    e = error("var x = [[1, 2, 3], [4, 5, 6]]\n" + src + "\n")
    assert e.message == message


@pytest.mark.parametrize("aot", [False, True])
@pytest.mark.parametrize("line, message", [
    ("print x[k]", "an index must be a whole number from -2 to 1 (axis 0 of 2x3 has 2 cells), "
                   "got 2"),
    ("print x[:, k:k + 2]", "a slice's start must be a whole number from 0 to 1 (axis 1 of 2x3 "
                            "has 3 cells, the slice takes 2), got 2"),
    ("x[k] = 1", "an index must be a whole number from -2 to 1 (axis 0 of 2x3 has 2 cells), "
                 "got 2"),
    ("x[k / 2, 0] = 1", "an index must be a whole number from -2 to 1 (axis 0 of 2x3 has 2 "
                        "cells), got 0.5"),
    ("print x[-1 - k, 0]", "an index must be a whole number from -2 to 1 (axis 0 of 2x3 has 2 "
                           "cells), got -3"),
])
def test_a_computed_index_is_checked_when_it_runs_with_the_same_words_compiled(
        tmp_path, aot, line, message):
    # (a bound known only when it runs: with fixed bounds the index is checked before)
    first, out = run_error_in(tmp_path, "var x = [[1, 2, 3], [4, 5, 6]]\nfor k in 0..sum(ones("
                              "tensor[3])) {\n    print \"step {k}\"\n    %s\n}\n" % line, aot)
    assert first == "p.mg:4: error: " + message
    assert out.startswith("step 0\n")


@pytest.mark.parametrize("src, message", [
    # a [ after a list literal is a comma forgotten, not a subscript of the literal
    ("print [[1, 2] [3, 4]]", "syntax error: expected ',' or ']', found a list literal; is a "
                              "comma missing between two rows?"),
    ("let y = transpose([[1.0]] [[2.0]])", "syntax error: expected an operator, ')' or ',', "
                                           "found a list literal; is a comma missing between "
                                           "the two lists?"),
    # the [ of a subscript is no operator of its own in the words of a syntax error
    ("print 3 4", "syntax error: expected an operator or the end of the line, found number 4"),
    ("x[0]", "syntax error: a value on its own line does nothing in a program: write print "
             "before it to show it (the REPL shows a value typed on its own)"),
])
def test_how_brackets_after_values_read(src, message):
    e = error("var x = [[1, 2, 3], [4, 5, 6]]\n" + src + "\n")
    assert e.message == message


def test_f32_is_f64_within_float32():
    assert_f32_within_float32_of_f64(_DRAWN)


@pytest.mark.parametrize("src, message", [
    ("x[0][1] = 5", "syntax error: expected '*=', '+=', ',', '-=', '/=' or '=', found '['; "
                    "write one subscript with every axis in it to assign to: x[0, 1] = v, not "
                    "x[0][1] = v"),
    ("print concat(x [[3, 4]], 0)", "syntax error: expected an operator, '(', ')' or ',', found "
     "a list literal; is a comma missing before the list? (a subscript is written right after "
     "its value: x[[0, 2]] takes rows 0 and 2)"),
])
def test_what_cannot_be_assigned_or_subscripted_says_what_to_write(src, message):
    e = error("var x = [[1, 2, 3], [4, 5, 6]]\n" + src + "\n")
    assert e.message == message


def test_a_computed_negative_index_counts_from_the_end_as_a_written_one():
    x = RNG.normal(size=(3, 4))
    got = run("let x = %s\nvar h = zeros(tensor[3x4])\nfor k in 0..3 {\n"
              "    print x[k - 3, -1 - k]\n    h[-1 - k] = x[k - 3]\n}\nprint h\n"
              % _literal(x))
    for k in range(3):
        assert got[k] == x[k - 3, -1 - k]
    assert np.array_equal(got[3], x[::-1])


def test_a_value_with_leading_ones_fills_a_part_of_fewer_axes_as_in_numpy():
    """A reduction's 1x1 into one cell, a 1xC row into a row (NumPy's assignment drops the
    value's leading 1s)."""
    (x,) = run("var x = [[1, 2, 3], [4, 5, 6]]\nx[0, 0] = col_sum(row_sum(x))\n"
               "x[1] = [[7, 8, 9]]\nprint x\n")
    assert x.tolist() == [[21, 2, 3], [7, 8, 9]]


def test_unknown_sizes_are_subscripted_and_assigned_checked_when_it_runs(tmp_path):
    np.save(tmp_path / "x.npy", np.arange(15.0).reshape(5, 3))
    np.save(tmp_path / "r.npy", np.arange(3.0) + 100)
    (tmp_path / "p.mg").write_text(
        'var x: tensor[?x3] = load("x.npy")\nlet r: tensor[?] = load("r.npy")\n'
        "x[:, 0] = x[:, 1]\nx[1] = r\nx[-1, 0:2] = [[7, 8]]\nprint x\n"
        "def g(y: tensor[?x3]) {\n    var z = y\n    z[:, 2] = z[:, 0] * 10\n    return z\n}\n"
        "print g(x)\n"
        "def f(y: tensor[?x?x4]) = y[:, -1, 0]\n"
        "let z: tensor[?x?x4] = reshape(iota(tensor[24], 0), tensor[?x3x4])\nprint f(z)\n"
        "for i in 4..6 {\n    x[i] = 1\n}\n")
    with pytest.raises(goat.GoatError) as info:
        goat.run_file(str(tmp_path / "p.mg"))
    assert info.value.message == ("an index must be a whole number from -5 to 4 (axis 0 of "
                                  "5x3 has 5 cells), got 5")
    x, gx, fz = info.value.printed
    want = np.arange(15.0).reshape(5, 3)
    want[:, 0] = want[:, 1]
    want[1] = np.arange(3.0) + 100
    want[-1, 0:2] = [7, 8]
    assert np.array_equal(x, want)
    want[:, 2] = want[:, 0] * 10
    assert np.array_equal(gx, want)
    assert np.array_equal(fz, np.arange(24.0).reshape(2, 3, 4)[:, -1, 0])


def test_a_write_in_place_never_changes_a_value_something_else_reads():
    """put writes into its x only when nothing reads x after: a let bound to the var's old
    value, a reshape of it, a value printed, the program's constants, an earlier iteration's
    value read later, and a def's constant called twice all keep their values."""
    got = run("var x = [[1, 2], [3, 4]]\nlet old = x\nlet flat = reshape(x, tensor[4])\n"
              "print x\nx[0, 0] = 9\nprint old\nprint flat\nprint x\n"
              "def f(a: scalar) {\n    var y = [0, 0]\n    y[0] = a\n    return y\n}\n"
              "print f(1)\nprint f(2)\n"
              "var h = zeros(tensor[3])\nvar prev = h\nfor t in 0..3 {\n"
              "    prev = h\n    h[t] = t + 1\n    print prev\n}\nprint h\n")
    assert [g.tolist() for g in got] == [
        [[1, 2], [3, 4]], [[1, 2], [3, 4]], [1, 2, 3, 4], [[9, 2], [3, 4]],
        [1, 0], [2, 0],
        [0, 0, 0], [1, 0, 0], [1, 2, 0], [1, 2, 3]]


@pytest.mark.parametrize("src, message", [
    ("print grad(col_sum(row_sum(x[floor(w[0, 0]), 0:2] * w)), w)",
     "grad cannot differentiate through a subscript on line 3: it has no derivative with "
     "respect to its index; if computing the index from the values differentiated is meant, "
     "write stop_gradient(...) around it"),
    ("var y = zeros(tensor[2x2])\ny[floor(w[0, 1]), 0] = 1\n"
     "print grad(col_sum(row_sum(y * w)), w)",
     "grad cannot differentiate through a subscript on line 4: it has no derivative with "
     "respect to its index; if computing the index from the values differentiated is meant, "
     "write stop_gradient(...) around it"),
    ("print grad(col_sum(row_sum(x[:, floor(w[0, 0]):floor(w[0, 0]) + 2] * w)), w)",
     "grad cannot differentiate through a subscript on line 3: it has no derivative with "
     "respect to its slice's start; if computing the slice's start from the values "
     "differentiated is meant, write stop_gradient(...) around it"),
])
def test_an_index_computed_from_what_grad_differentiates_is_named_as_written(src, message):
    e = error("let x = [[1, 2, 3], [4, 5, 6]]\nvar w = [[0.5, 1.5], [1, 1]]\n" + src + "\n")
    assert e.message == message


_NEGATIVE = """let u = [1.0, 2, 3]
var s = 0
for t in 0..2 {
    s += u[-1 - t]
}
print grad(s, u)
def f(u: tensor[3]) {
    var x = u * 2
    for t in 0..2 {
        x[-1 - t] = u[t] * u[t]
    }
    return row_sum(reshape(x * x, tensor[1x3]))
}
print grad(f(u), u)
"""


@pytest.mark.parametrize("aot", [False, True])
def test_grad_through_computed_negative_indices(tmp_path, aot):
    """Found by a breaker: the backward pass had taken -1 as a start from 0."""
    if aot:
        pytest.importorskip("llvmlite")
    (tmp_path / "p.mg").write_text(_NEGATIVE)
    r = goat_run_in(tmp_path, *(["--aot"] if aot else []))
    assert r.returncode == 0, r.stderr
    # s = u[2] + u[1]; f: x = [2 u0, u1^2 ... ] = [2 u0, u0^2 -> x[2], u1^2 -> x[1]]
    u = np.array([1.0, 2, 3])
    assert printed_numbers(r.stdout) == [[0, 1, 1], [8 * u[0] + 4 * u[0] ** 3, 4 * u[1] ** 3, 0]]


def test_a_wrong_value_for_a_part_a_call_sizes_is_the_assignments_error():
    """Found by a breaker: a def over ? sizes took a value of the wrong size (an internal
    error in goat run, wrong numbers compiled)."""
    e = error("def f(a: tensor[?x?]) {\n  var b = a\n  b[0] = [1, 2]\n  return b\n}\n"
              "print f([[1, 2, 3]])\n")
    assert (e.line, e.message) == (3, "cannot assign a value of shape 2 to b[...], of shape 3: "
                                      "the value's shape must be that one, or broadcast to it")
    assert e.notes == ("in f, called on line 6",)


@pytest.mark.parametrize("stmt, message", [
    ("y[0] = v", "cannot assign a value of shape 5 to y[...], of shape 3: the value's shape "
                 "must be that one, or broadcast to it"),
    # the part's size is known only when it runs too (found by a review: the check of an op
    # whose sizes are read when it runs had been skipped)
    ("x[:, 0] = v", "cannot assign a value of shape 5 to x[...], of shape 4: the value's shape "
                    "must be that one, or broadcast to it"),
])
def test_a_value_of_a_size_known_when_it_runs_is_checked_then(tmp_path, stmt, message):
    np.save(tmp_path / "v.npy", np.arange(5.0))
    np.save(tmp_path / "x.npy", np.zeros((4, 3)))
    (tmp_path / "p.mg").write_text('let v: tensor[?] = load("v.npy")\n'
                                   'var x: tensor[?x3] = load("x.npy")\n'
                                   "var y = zeros(tensor[2x3])\nprint y\n%s\n" % stmt)
    with pytest.raises(goat.GoatError) as info:
        goat.run_file(str(tmp_path / "p.mg"))
    assert (info.value.line, info.value.message) == (5, message)
    assert len(info.value.printed) == 1


def test_a_buffer_filled_in_a_loop_is_written_in_place(monkeypatch):
    """The reference count put's check reads is measured for this Python; with it, the loop's
    writes go into the buffer's own array (each write after the first, which copies the
    program's constant zeros)."""
    from goat.interp.evaluator import _sole_refs
    from goat.ops import builtins
    assert _sole_refs() >= 1
    seen = []
    real = builtins._sole

    def sole(x):            # (this frame holds x once more: the limit one more for it)
        builtins.SOLE_REFS[0] += 1
        try:
            seen.append(real(x))
        finally:
            builtins.SOLE_REFS[0] -= 1
        return seen[-1]
    monkeypatch.setattr(builtins, "_sole", sole)
    got = run("var buf = zeros(tensor[5x2])\nfor t in 0..5 {\n    buf[t] = t * [1, 1]\n}\n"
              "print buf\n")
    assert got[0].tolist() == [[t, t] for t in range(5)]
    assert seen == [False, True, True, True, True]


def test_size_is_a_number_before_the_run_where_the_shape_is_and_when_it_runs_in_a_def():
    """size(x, axis), asked for by a newcomer who looped over a def's size variable."""
    got = run("let x = reshape(iota(tensor[12], 0), tensor[3x4])\n"
              "print size(x, 0)\nprint size(x, -1)\n"
              "let n = size(x, 1)\nprint zeros(tensor[n, 2])\nprint x[:, n - 2:]\n"
              "def total(y: tensor[B, T]) {\n    var s = zeros(tensor[B])\n"
              "    for t in 0..size(y, 1) {\n        s += y[:, t]\n    }\n    return s\n}\n"
              "print total(x)\nprint total(transpose(x))\n")
    x = np.arange(12.0).reshape(3, 4)
    assert got[0] == 3 and got[1] == 4 and got[2].shape == (4, 2)
    assert np.array_equal(got[3], x[:, 2:])
    assert np.array_equal(got[4], x.sum(axis=1)) and np.array_equal(got[5], x.sum(axis=0))


@pytest.mark.parametrize("src, message", [
    ("print size(x, 2)", "size's axis 2 is outside tensor[2x3], of rank 2 (axes 0 to 1, or -2 "
                         "to -1 counting from the last)"),
    ("print size(3, 0)", "size needs a tensor of rank 1 or more, got a scalar (which has no "
                         "axes)"),
    ("print len(x)", "unknown function 'len'; write size(x, 0) (a value's sizes are part of "
                     "its type: :type x in the REPL, goat check --shapes)"),
])
def test_size_errors(src, message):
    assert error("var x = [[1, 2, 3], [4, 5, 6]]\n" + src + "\n").message == message


def test_an_index_float32_computes_otherwise_is_read_when_it_runs_in_each_precision():
    """Found by a breaker: 2**24 + 1, folded in float64 before the run, had read cell 16777217
    under --dtype f32, whose own arithmetic gives 16777216 (and refuses an index from 2**24)."""
    text = ("let x = concat(zeros(tensor[16777217]), ones(tensor[3]), 0)\nvar j = 16777216\n"
            "j += 1\nprint x[j]\n")
    assert run(text)[0] == 1
    with pytest.raises(goat.GoatError) as info:
        goat.run_source(text, dtype="f32")
    assert info.value.message.startswith("an index in float32 (--dtype f32) must be below "
                                         "2**24 = 16777216")


def test_stepped_slices_read_and_write_as_numpy_compiled_bit_for_bit(tmp_path):
    """lo:hi:step takes every step-th cell (the last group short or not, a computed start);
    its assignment writes those cells; compiled, the same bits."""
    x = RNG.normal(size=(7, 6))
    text = ("var x = %s\nprint x[::2]\nprint x[1::3, ::4]\nprint x[:, 1:6:2]\nprint x[2:3:5]\n"
            "for k in 0..2 {\n    print x[k + 1:k + 6:2, -1]\n}\n"
            "x[::3, 1::2] = 0.5\nx[1:7:2] *= -1\nx[6::2, ::5] += [[1, 2]]\nprint x\n" % _literal(x))
    want = [x[::2], x[1::3, ::4], x[:, 1:6:2], x[2:3:5], x[1:6:2, -1], x[2:7:2, -1]]
    y = x.copy()
    y[::3, 1::2] = 0.5
    y[1:7:2] *= -1
    y[6::2, ::5] += [[1, 2]]
    want.append(y)
    got = run(text)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape and np.array_equal(g, w)
    pytest.importorskip("llvmlite")
    (tmp_path / "p.mg").write_text(text)
    for numbers, w in zip(compiled_numbers(tmp_path), want):
        assert np.array_equal(np.array(numbers), w.ravel())


def test_grad_through_stepped_slices_is_pytorchs():
    torch = pytest.importorskip("torch")
    w0 = RNG.normal(size=(5, 7))
    (g,) = run("var w = %s\ndef f(w: tensor[5x7]) {\n    var y = w * 1\n"
               "    y[::2, 1::3] = tanh(w[0:5:2, 0:5:3] * w[::2, 0:5:2][0:3, 0:2])\n"
               "    return sum(y * y) + sum(w[3::4, ::6])\n}\nprint grad(f(w), w)\n"
               % _literal(w0))
    w = torch.tensor(w0, requires_grad=True)
    y = (w * 1).clone()
    y[::2, 1::3] = torch.tanh(w[0:5:2, 0:5:3] * w[::2, 0:5:2][0:3, 0:2])
    (t,) = torch.autograd.grad((y * y).sum() + w[3::4, ::6].sum(), w)
    assert np.allclose(g, t.numpy(), rtol=1e-13, atol=1e-14)


def test_stepped_slices_on_the_gpu_test_back_end():
    assert_same_on_the_gpu_test_back_end(
        "var x = randn(tensor[6x5x4], 3)\nprint x[::2, 1::3, 0:4:3]\nx[1::2] = 0\nprint x\n")


def test_a_stepped_slice_of_a_size_known_when_it_runs(tmp_path):
    x = RNG.normal(size=(9, 4))
    np.save(tmp_path / "x.npy", x)
    (tmp_path / "p.mg").write_text('var x: tensor[?x4] = load("x.npy")\nprint x[1:8:3]\n'
                                   "x[0:9:4, ::2] = 7\nprint x\n")
    a, b = goat.run_file(str(tmp_path / "p.mg"))
    y = x.copy()
    y[0:9:4, ::2] = 7
    assert np.array_equal(a, x[1:8:3]) and np.array_equal(b, y)


@pytest.mark.parametrize("aot", [False, True])
def test_a_stepped_slice_with_a_computed_start_must_fit_its_whole_run(tmp_path, aot):
    """Found by a breaker: x[k:k + 6:2] had checked only the cells it takes (3:9:2 of 8 rows
    ran, where the written x[3:9:2] is refused) and named the last cell's start (8) and 1."""
    first, out = run_error_in(
        tmp_path,
        "let x = reshape(iota(tensor[32x1], 0), tensor[8x4])\nvar y = zeros(tensor[8x4])\n"
        "for k in 0..sum(ones(tensor[9])) {\n    print \"k {k}\"\n    y[k:k + 6:2] += 1\n"
        "    print x[k:k + 6:2, 0]\n}\n",
        aot)
    assert out.splitlines()[-1] == "k 3"
    assert first == (
        "p.mg:5: error: a slice's start must be a whole number from 0 to 2 (axis 0 of 8x4 has 8 "
        "cells, the slice runs over 6), got 3")


@pytest.mark.parametrize("src, message", [
    ("def g(x: tensor[..., 6]) = x[1:6:4]\nprint g(ones(tensor[3x6]))",
     "the slice runs over 5 cells, more than axis 0 of 3x6 has (3)"),
    ("def h(x: tensor[N, C]) = x[1::2]",
     "the slice 1::2 takes every 2nd of N - 1 cells, a number (rounded up) no type writes: "
     "the cells it runs over must be 2 times a size, plus any number (all of an axis of "
     "tensor[2 * M])"),
    ("var v = 2\nprint zeros(tensor[4])[::v]",
     "v is a var, which may change, so it cannot be in a slice's step (the result's size depends "
     "on it): make it a let (let v = ...)"),
    ("print zeros(tensor[2x3])[....]", "syntax error: expected an expression, '...' or ':', "
                                      "found '..'"),
])
def test_stepped_slice_and_ellipsis_errors_found_by_a_breaker(src, message):
    assert error(src + "\n").message == message


def test_a_slice_from_0_to_the_end_of_an_axis_known_when_called_is_the_whole_axis():
    (a, b) = run("def f(x: tensor[N, C]) = x[0:, 0::1]\ndef g(x: tensor[N, C]) = x[..., ::1]\n"
                 "print f([[1, 2], [3, 4]])\nprint g([[5, 6, 7]])\n")
    assert a.tolist() == [[1, 2], [3, 4]] and b.tolist() == [[5, 6, 7]]


def test_the_caret_is_under_the_whole_slice_as_written():
    e = error("def h(x: tensor[N, C]) = x[..., ::2]\n")
    assert e.loc.source.text[e.loc.start:e.loc.end] == "::2"
    e = error("def k(x: tensor[?, C]) = x[1: , 0]\n")
    assert e.loc.source.text[e.loc.start:e.loc.end] == "1:"


@pytest.mark.parametrize("shape", [(5,), (4, 3), (2, 5, 3)])
def test_none_adds_an_axis_of_size_1_as_numpys_newaxis(shape):
    """x[:, None], x[None], x[..., None, 0]: None takes no axis of x and gives the result one
    of size 1 there (the outer product v[:, None] * w[None, :])."""
    x = RNG.normal(size=shape)
    lines = ["let x = %s" % _literal(x)]
    want = []
    for _ in range(30):
        text, index = _subscripts(shape, RNG)
        text, index = text.split(", "), list(index)
        for _ in range(int(RNG.integers(1, 3))):
            at = int(RNG.integers(len(index) + 1))
            text.insert(at, "None")
            index.insert(at, None)
        if RNG.integers(2):             # (last: the axes the subscripts leave, and Nones)
            text.append("...")
            index.append(Ellipsis)
            if RNG.integers(2):
                text.append("None")
                index.append(None)
        lines.append("print x[%s]" % ", ".join(text))
        want.append(x[tuple(index)])
    got = run("\n".join(lines) + "\n")
    for g, w, line in zip(got, want, lines[1:]):
        assert g.shape == w.shape and np.array_equal(g, w), line
    (outer,) = run("let v = [1, 2, 3]\nlet w = [10, 20]\nprint v[:, None] * w[None, :]\n")
    assert outer.tolist() == [[10, 20], [20, 40], [30, 60]]


@pytest.mark.parametrize("src, line, message, note", [
    # a batch's rows past the data in a loop whose bounds the program fixes: found before the
    # run (it was found after four steps had run), at the iteration that reaches it
    ("let X = ones(tensor[300x2])\nlet B = 64\nfor k in 0..5 {\n  print sum(X[k * B:(k + 1) * B])\n}\n",
     4, "a slice's start must be a whole number from 0 to 236 (axis 0 of 300x2 has 300 cells, "
        "the slice takes 64), got 256",
     "it is 256 when k = 4 (over the loop it runs from 0 to 256)"),
    ("let X = ones(tensor[10])\nfor k in 0..11 {\n  print X[k]\n}\n", 3,
     "an index must be a whole number from -10 to 9 (axis 0 of 10 has 10 cells), got 10",
     "it is 10 when k = 10 (over the loop it runs from 0 to 10)"),
    ("let X = ones(tensor[10])\nfor k in 1..3 {\n  for j in 0..4 {\n    print X[j + k * 4]\n  }\n}\n",
     4, "an index must be a whole number from -10 to 9 (axis 0 of 10 has 10 cells), got 11",
     "it is 11 when k = 2, j = 3 (over the loop it runs from 4 to 11)"),
    ("let X = ones(tensor[10])\nfor k in 0..4 {\n  print X[-(k * 4) - 1]\n}\n", 3,
     "an index must be a whole number from -10 to 9 (axis 0 of 10 has 10 cells), got -13",
     "it is -13 when k = 3 (over the loop it runs from -13 to -1)"),
])
def test_a_subscript_a_fixed_loop_takes_past_its_axis_is_an_error_before_the_run(src, line,
                                                                                 message, note):
    e = error(src)
    assert (e.message, e.loc.line, e.notes[-1]) == (message, line, note)


@pytest.mark.parametrize("src", [
    # every start in range; one under an if (it may not run); bounds computed when it runs;
    # a start no affine function of the index (k * k: its ends are not the loop's ends)
    "let X = ones(tensor[300x2])\nfor k in 0..5 {\n  print sum(X[k * 60:(k + 1) * 60])\n}\n",
    "let X = ones(tensor[10])\nfor k in 0..10 {\n  if k < 5 {\n    print X[k * 2]\n  }\n}\n",
    "let X = ones(tensor[10])\nlet n = sum(ones(tensor[3]))\nfor k in 0..n {\n  print X[k * 3]\n}\n",
    "let X = ones(tensor[10])\nfor k in 0..4 {\n  print X[k * k]\n}\n",
    # a breaker's: the index named more than once, k - k, (k + 1) * 3 - k (2k + 3)
    "let X = ones(tensor[10])\nfor k in 0..4 {\n  print X[(k + 1) * 3 - k]\n}\n",
    "let X = ones(tensor[10])\nfor k in 0..20 {\n  print X[k - k]\n}\n",
    "let X = ones(tensor[30])\nfor k in 0..20 {\n  print X[k * 2 - k]\n}\n",
    "let X = ones(tensor[10])\nfor k in 0..4 {\n  print sum(X[3 * k - k:3 * k - k + 2])\n}\n",
])
def test_a_subscript_the_loop_keeps_in_range_runs(src):
    assert len(run(src)) >= 3


TUPLE_CELLS = """var h = zeros(tensor[2, 3])
var c = zeros(tensor[2, 3])
let w = [0.5, -0.2, 0.1]
def cell(x: tensor[3], c: tensor[3]) = (tanh(x * w + c), x * 0.5 + c)
for l in 0..2 {
    let x = ones(tensor[3]) * (l + 1)
    ASSIGN
}
print h
print c
"""


def test_a_tuple_assigns_cells_of_vars_as_separate_statements_would():
    """Found by a newcomer: a stacked LSTM wrote h[l], c[l] = cell(...) and met a syntax
    error; it assigns each var's cells in turn, as three statements did."""
    together = run(TUPLE_CELLS.replace("ASSIGN", "h[l], c[l] = cell(x, c[l])"))
    apart = run(TUPLE_CELLS.replace("ASSIGN", "let a, b = cell(x, c[l])\n    h[l] = a\n"
                                              "    c[l] = b"))
    for a, b in zip(together, apart):
        np.testing.assert_array_equal(a, b)
    w = np.array([0.5, -0.2, 0.1])
    h, c = np.zeros((2, 3)), np.zeros((2, 3))
    for l in range(2):
        x = np.ones(3) * (l + 1)
        h[l], c[l] = np.tanh(x * w + c[l]), x * 0.5 + c[l]
    np.testing.assert_allclose(together[0], h, rtol=1e-15)
    np.testing.assert_allclose(together[1], c, rtol=1e-15)


def test_a_tuple_of_cells_swaps_and_mixes_with_whole_vars():
    got = run("var x = [[1, 2, 3]]\nvar w = [[0]]\nx[:, 0], x[:, 2] = (x[:, 2], x[:, 0])\n"
              "print x\nw, x[0, 1] = ([[5]], [[9]])\nprint w\nprint x\n")
    np.testing.assert_array_equal(got[0], [[3, 2, 1]])
    np.testing.assert_array_equal(got[1], [[5]])
    np.testing.assert_array_equal(got[2], [[3, 9, 1]])


def test_a_tuple_of_cells_is_differentiated_through_a_loop():
    text = ("let w0 = [0.5, -0.2]\ndef f(w: tensor[2]) {\n"
            "    var h = ones(tensor[3, 2])\n    var c = zeros(tensor[3, 2])\n"
            "    for l in 0..2 {\n        h[l + 1], c[l + 1] = (tanh(h[l] * w), c[l] + h[l])\n"
            "    }\n    return sum(h * h) + sum(c)\n}\nprint grad(f(w0), w0)\n")
    (g,) = run(text)

    def f(w):
        h, c = np.ones((3, 2)), np.zeros((3, 2))
        for l in range(2):
            h[l + 1], c[l + 1] = np.tanh(h[l] * w), c[l] + h[l]
        return float(np.sum(h * h) + np.sum(c))
    w0 = np.array([0.5, -0.2])
    want = np.zeros_like(w0)
    for i in np.ndindex(2):
        up, down = w0.copy(), w0.copy()
        up[i] += 1e-6
        down[i] -= 1e-6
        want[i] = (f(up) - f(down)) / 2e-6
    np.testing.assert_allclose(g, want, rtol=1e-7, atol=1e-10)


@pytest.mark.parametrize("src, message", [
    ("h, h[0] = (ones(tensor[2, 3]), ones(tensor[3]))",
     "'h' is assigned whole and in part here: one value would replace the other's; assign "
     "them in two statements"),
    ("k[0], h[0] = (ones(tensor[3]), ones(tensor[3]))",
     "cannot assign to 'k': it is defined with let on line 2, which cannot change; declare it "
     "with var to assign to it"),
    ("h[5], h[0] = (ones(tensor[3]), ones(tensor[3]))",
     "index 5 is out of range for axis 0 of 2x3, which has 2 cells: an index is from -2 to 1 "
     "(a negative one counts from the end)"),
    ("h[0], h[1] = ones(tensor[3])",
     "this assigns 2 targets here, but the value is a single tensor of shape 3; cells of one "
     "value are assigned one statement each (h[0] = v[0]), or as one slice (h[0:2] = v)"),
    ("_[k], h[1] = (1, 2)", "_ leaves a value out: it has no cells to assign (write _ alone)"),
    ("h[0], h[1] = (1, 2, 3)", "this assigns 2 names, but the value holds 3; a value not wanted "
                               "is bound to _ (h[0], h[1], _)"),
    ("h[0], k = 1, 2", "syntax error: expected the end of the line, found ','; several values "
                       "on the right are written as a tuple in parentheses: a, b = (b, a)"),
    ("h[0], h[1] += (1, 2)", "syntax error: expected '*=', '+=', ',', '-=', '/=' or '=', found "
                             "'['; += and the other compound assignments take one target: "
                             "h[0] += a, then h[1] += b"),
])
def test_a_tuple_of_cells_that_cannot_be_assigned_says_why(src, message):
    e = error("var h = zeros(tensor[2, 3])\nlet k = zeros(tensor[2, 3])\n" + src + "\n")
    assert (e.line, e.message) == (3, message)


def test_a_tuple_assigns_cells_of_a_params_member():
    """Found by a breaker: theta.w[0], theta.b = ... was refused ('theta' is not a params
    block's value), where theta.w[0] = ... alone was taken."""
    got = run("params theta {\n    w = [[1, 2], [3, 4]]\n    b = [1, 1]\n}\n"
              "theta.w[0], theta.b = ([7, 8], [9, 9])\nprint theta\n")
    np.testing.assert_array_equal(got[0], [7, 8, 3, 4, 9, 9])


def test_a_value_of_rank_one_or_more_indexes_as_numpy_even_of_one_cell():
    """A newcomer's and an example's: E[seq[k:k + 1]] had dropped the axis (a value of one
    cell was one index) where NumPy keeps it; a scalar is one index, a tensor of one cell a
    tensor of indices; an assignment takes a value of one cell as one index."""
    E = np.arange(15.0).reshape(5, 3)
    seq = np.array([4.0, 1.0, 3.0])
    src = """let E = reshape(iota(tensor[15], 0), tensor[5, 3])
let seq = [4, 1, 3]
let c = [[2]]
print E[seq[1:2]]
print E[c]
print E[c[0, 0]]
print E[sum(seq) - 6]
var x = zeros(tensor[5, 3])
x[seq[2:3]] = [7, 8, 9]
x[c] += 1
print x
"""
    a, c, d, e, x = run(src)
    assert a.shape == (1, 3) and a.tolist() == E[seq[1:2].astype(int)].tolist()
    assert c.shape == (1, 1, 3) and c.tolist() == E[np.array([[2]])].tolist()
    assert d.shape == (3,) and d.tolist() == E[2].tolist()
    assert e.shape == (3,) and e.tolist() == E[2].tolist()
    want = np.zeros((5, 3))
    want[np.array([3])] = [7, 8, 9]
    want[np.array([[2]])] += 1
    assert x.tolist() == want.tolist()


def test_an_assignment_through_a_vector_of_one_index_keeps_its_axis_as_numpy():
    """A breaker's: E[:, seq[k:k + 1]] *= 2 read a 4x1 and put it back into a 4 (the write
    took the one cell as an index); NumPy keeps the axis both ways."""
    src = """var E = ones(tensor[4, 3])
let seq = [2, 0]
for k in 0..2 {
    E[:, seq[k:k + 1]] *= 2
}
print E
var z = zeros(tensor[5, 3])
z[:, [1]] += 100
z[:, [1]] = [[1], [2], [3], [4], [5]]
z[[3]] -= 2
z[[0], [1]] = 10
print z
"""
    e, z = run(src)
    E = np.ones((4, 3))
    seq = np.array([2, 0])
    for k in range(2):
        E[:, seq[k:k + 1]] *= 2
    Z = np.zeros((5, 3))
    Z[:, [1]] += 100
    Z[:, [1]] = [[1], [2], [3], [4], [5]]
    Z[[3]] -= 2
    Z[[0], [1]] = 10
    assert e.tolist() == E.tolist() and z.tolist() == Z.tolist()
