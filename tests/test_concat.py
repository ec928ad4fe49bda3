"""concat(a, b, axis): two tensors joined along an axis (NumPy's concatenate, PyTorch's cat),
against NumPy written here, PyTorch's autograd (when installed) or finite differences, the
compiled program and the GPU test back end."""

import numpy as np
import pytest

import goat
from conftest import (assert_compiled_equal, assert_same_on_the_gpu_test_back_end,
                      central_differences, compiled_numbers, error, literal as _literal, run)

RNG = np.random.default_rng(36)


@pytest.mark.parametrize("shape", [(3,), (2, 3), (2, 3, 2), (2, 1, 3, 2)])
def test_every_axis_is_numpys_concatenate(shape):
    cases = []
    text = ""
    for axis in range(-len(shape), len(shape)):
        for extra in (0, 1, 3):
            b_shape = list(shape)
            b_shape[axis] = extra
            a, b = RNG.normal(size=shape), RNG.normal(size=b_shape)
            cases.append((a, b, axis))
            text += "print concat(%s, %s, %d)\n" % (
                _literal(a), "zeros(tensor[%s])" % "x".join(map(str, b_shape)) if extra == 0
                else _literal(b), axis)
    for (a, b, axis), got in zip(cases, run(text)):
        want = np.concatenate((a, b if b.size else np.zeros(b.shape)), axis=axis)
        assert got.shape == want.shape and np.array_equal(got, want), (a.shape, b.shape, axis)


@pytest.mark.parametrize("src, message", [
    ("print concat([1, 2], 3, 0)",
     "concat joins tensors of rank 1 or more; its second argument is a scalar"),
    ("print concat([[1, 2]], [1, 2], 0)",
     "concat needs tensors of the same rank, got 1x2 (rank 2) and 2 (rank 1)"),
    ("print concat([[1, 2]], [[1, 2, 3]], 0)",
     "cannot concat shapes 1x2 and 1x3 along axis 0: dimensions 2 and 3 (axis 1) differ, and "
     "only axis 0 may"),
    ("print concat([[1, 2]], [[1, 2]], 2)",
     "concat's axis 2 is outside tensor[1x2], of rank 2 (axes 0 to 1, or -2 to -1 counting from the "
     "last)"),
    ("print concat([[1, 2]], [[1, 2]], 0.5)", "got 0.5"),
])
def test_shapes_that_do_not_join_are_errors_before_the_run(src, message):
    e = error("print 1\n" + src + "\n")
    assert e.line == 2 and message in e.message


def test_a_size_known_only_when_it_runs_is_checked_then(tmp_path):
    np.save(tmp_path / "x.npy", np.ones((2, 3)))
    (tmp_path / "p.mg").write_text('let x = load("x.npy", tensor[2x?])\nprint 1\n'
                                   "print concat(x, [[1, 2]], 0)\n")
    with pytest.raises(goat.GoatError) as info:
        goat.run_file(str(tmp_path / "p.mg"))
    assert info.value.line == 3 and info.value.message.startswith(
        "cannot concat shapes 2x3 and 1x2 along axis 0")
    (v,) = goat.run_source("def f(x: tensor[N, 2], y: tensor[M, 2]) = concat(x, y, 0)\n"
                           "print f([[1, 2]], [[3, 4], [5, 6]])\n")
    assert v.tolist() == [[1, 2], [3, 4], [5, 6]]


_PROGRAM = """\
let x = load("x.npy", tensor[4x3])
let w = load("w.npy", tensor[3x2])
let u = load("u.npy", tensor[4x1])
var h = zeros(tensor[4x3])
var total = [[0]]
for k in 0..3 {
    let a = tanh(x @ w)
    h = concat(narrow(h, 1, 2, 1), a * (k + 1), 1)
    total += col_sum(row_sum(concat(h, u * u, 1) * concat(h, u, 1)))
}
let gw, gu = grad(total, w, u)
print gw
print gu
"""


def _reference(x, w, u, xp=np):
    """_PROGRAM's total, in NumPy (xp=np) or PyTorch (xp=torch)."""
    cat = np.concatenate if xp is np else xp.cat
    h = xp.zeros((4, 3), dtype=x.dtype)
    total = 0.0
    for k in range(3):
        a = xp.tanh(x @ w)
        h = cat((h[:, 2:3], a * float(k + 1)), 1)
        total = total + (cat((h, u * u), 1) * cat((h, u), 1)).sum()
    return total


def test_grad_through_concat_in_a_loop_is_pytorchs_or_finite_differences_and_compiles(
        tmp_path):
    x = RNG.normal(size=(4, 3))
    w = RNG.normal(size=(3, 2)) * 0.5
    u = RNG.normal(size=(4, 1))
    for name, v in (("x", x), ("w", w), ("u", u)):
        np.save(tmp_path / (name + ".npy"), v)
    (tmp_path / "p.mg").write_text(_PROGRAM)
    gw, gu = goat.run_file(str(tmp_path / "p.mg"))
    try:
        import torch
    except ImportError:
        torch = None
    if torch is not None:
        tw = torch.tensor(w, requires_grad=True)
        tu = torch.tensor(u, requires_grad=True)
        _reference(torch.tensor(x), tw, tu, torch).backward()
        np.testing.assert_allclose(gw, tw.grad.numpy(), rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(gu, tu.grad.numpy(), rtol=1e-12, atol=1e-14)
    else:
        for g, v, f in ((gw, w, lambda e: _reference(x, w + e, u)),
                        (gu, u, lambda e: _reference(x, w, u + e))):
            np.testing.assert_allclose(g, central_differences(f, v), rtol=1e-6, atol=1e-8)
    pytest.importorskip("llvmlite")
    blocks = compiled_numbers(tmp_path)
    assert len(blocks) == 2
    for numbers, want in zip(blocks, (gw, gu)):
        assert_compiled_equal(numbers, want, _PROGRAM)


def test_the_second_derivative_goes_through_concats_derivative():
    """grad of a gradient through concat: concat_part's vjp puts each part back in place."""
    (g2,) = run("var w = [[1, 2, 3]]\n"
                "let g = grad(col_sum(row_sum(concat(w * w * w, w * w, 1) * [[1, 2, 3, 4, 5, 6]])), w)\n"
                "print grad(col_sum(row_sum(g * g)), w)\n")
    w = np.array([[1.0, 2, 3]])
    # g = 3 w^2 [1 2 3] + 2 w [4 5 6];  d/dw sum(g^2) = 2 g (6 w [1 2 3] + 2 [4 5 6])
    c1, c2 = np.array([[1.0, 2, 3]]), np.array([[4.0, 5, 6]])
    g = 3 * w ** 2 * c1 + 2 * w * c2
    assert np.allclose(g2, 2 * g * (6 * w * c1 + 2 * c2), rtol=1e-14)


def test_the_gpu_test_back_end_gives_the_same_bits_without_stray_host_reads():
    assert_same_on_the_gpu_test_back_end(
        _PROGRAM.replace('load("x.npy", tensor[4x3])', "randn(tensor[4x3], 1)")
        .replace('load("w.npy", tensor[3x2])', "randn(tensor[3x2], 2)")
        .replace('load("u.npy", tensor[4x1])', "randn(tensor[4x1], 3)"))


def test_f32_is_float32s_concatenate():
    a, b = RNG.normal(size=(2, 3)), RNG.normal(size=(2, 2))
    (got,) = goat.run_source("print concat(%s, %s, 1)\n" % (_literal(a), _literal(b)),
                             dtype="f32")
    assert got.dtype == np.float32
    assert np.array_equal(got, np.concatenate((a.astype(np.float32), b.astype(np.float32)), 1))


def test_an_axis_may_be_a_negative_let():
    (v,) = run("let last = -1\nprint concat([[1], [2]], [[3], [4]], last)\n")
    assert v.tolist() == [[1, 3], [2, 4]]


@pytest.mark.parametrize("call", ["concat([a, a], 0)", "concatenate([a, b], 0)",
                                  "cat([a, b], 1)"])
def test_a_list_of_tensors_as_numpy_and_pytorch_pass_them_says_how_concat_takes_them(call):
    """Found by a breaker: concat([a, a], 0) said a list literal holds numbers only, and
    suggested reshape."""
    e = error("let a = [[1, 2]]\nlet b = a\nprint %s\n" % call)
    assert e.line == 3 and e.message.endswith(
        "; concat takes two tensors and an axis, not a list of them: concat(a, b, 0)")


def test_an_axis_is_any_whole_number_known_before_the_run(tmp_path):
    """Found by a breaker: let k = 2 - 2 was an axis, 2 - 2 written in the call was not, nor
    a module's let; a var stays refused (it may change), and 0 / 0 says so (it had been an
    internal error)."""
    x = np.array([[1.0, 2.0]])
    (tmp_path / "m.mg").write_text("let k = 1\n")
    (tmp_path / "p.mg").write_text("import m\nlet x = [[1, 2]]\nprint concat(x, x, 2 - 2)\n"
                                   "print concat(x, x, m.k)\nprint concat(x, x, 1 - 2)\n"
                                   "print iota(tensor[2x3], m.k - 1)\n")
    a, b, c, d = goat.run_file(str(tmp_path / "p.mg"))
    assert np.array_equal(a, np.concatenate((x, x), 0))
    assert np.array_equal(b, np.concatenate((x, x), 1)) and np.array_equal(c, b)
    assert np.array_equal(d, [[0, 0, 0], [1, 1, 1]])
    e = error("var k = 0\nlet x = [[1, 2]]\nprint concat(x, x, k + 0)\n")
    assert (e.line, e.message) == (3, "k is a var, which may change, so it cannot be in "
                                      "concat's axis: make it a let (let k = ...)")
    e = error("let x = [[1, 2]]\nprint narrow(x, 0, 1, 0 / 0)\n")
    assert e.message == "argument length of narrow must be a whole number, got -nan"
    e = error("let x = [[1, 2]]\nprint concat(x, x, row_sum(x))\n")
    assert e.message.startswith("argument axis of concat must be a whole number written in "
                                "the program (or a let holding one)")


def test_a_concat_of_transposes_is_row_major_as_the_compiled_program_reads_it(tmp_path):
    """A breaker's: NumPy's concatenate of two transposes is column-major, so a product or a
    sum of it added in another order than goat run --aot's (0.060000000000000005 against
    0.059999999999999998); the concat is row-major, its sums NumPy's of the row-major cells."""
    a = np.array([[1, 0.2, 0.1, 0.7, 0.3, 0.9, 0.11, 0.13],
                  [0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9]])
    b = np.array([[0.4, -0.7, 0.1, 0.7, 0.3, 0.9, 0.11, 0.13]])
    src = ("let a = %s\nlet b = %s\nlet c = concat(transpose(a), transpose(b), 1)\n"
           "print col_sum(c)\nprint sum(c)\nprint [[0.6, -0.2, 0.3, 0.1, 0.2, 0.5, 0.7, 0.9]] @ c\n"
           % (_literal(a), _literal(b)))
    got = run(src)
    c = np.ascontiguousarray(np.concatenate((a.T, b.T), 1))
    assert np.array_equal(got[0], c.sum(0, keepdims=True)) and float(got[1]) == c.sum()
    pytest.importorskip("llvmlite")
    (tmp_path / "p.mg").write_text(src)
    assert compiled_numbers(tmp_path) == [np.ravel(v).tolist() for v in got]
