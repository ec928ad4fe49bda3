"""split(x, n, axis): n equal parts along an axis, as NumPy's split(x, n, axis) and PyTorch's
chunk make them -- values and gradients against NumPy, the compiled program's numbers, and
the errors (a PyTorch habit, split's size for its count, among them)."""

import numpy as np
import pytest

from conftest import compiled_numbers, error, run

X = np.arange(24.0).reshape(2, 3, 4) * 0.5 - 3


def _lit(a):
    return np.array2string(a, separator=", ", threshold=10 ** 6).replace("\n", "")


@pytest.mark.parametrize("n, axis", [(2, 0), (3, 1), (4, 2), (2, -1), (1, 1), (4, -1)])
def test_split_gives_numpys_parts_in_order(n, axis):
    names = ", ".join("p%d" % k for k in range(n))
    src = "let x = %s\nlet %s = split(x, %d, %d)\n" % (_lit(X), names, n, axis)
    src += "".join("print p%d\n" % k for k in range(n))
    if n == 1:
        src = "let x = %s\nlet p0 = split(x, 1, %d)\nprint p0\n" % (_lit(X), axis)
    got = run(src)
    want = np.split(X, n, axis)
    assert len(got) == n
    for g, w in zip(got, want):
        assert g.shape == w.shape and np.array_equal(g, w)


def test_the_gradient_through_split_puts_each_parts_gradient_back_in_its_place():
    src = "let x = %s\nlet q, k, v = split(x, 3, 1)\nprint grad(sum(q * k) + sum(v * v * v), x)\n" \
          % _lit(X)
    (g,) = run(src)
    q, k, v = np.split(X, 3, 1)
    assert np.allclose(g, np.concatenate([k, q, 3 * v * v], 1), rtol=0, atol=1e-12)


def test_a_fused_qkv_projection_split_in_three_as_nanogpt_writes_it():
    src = """let C = 4
let x = randn(tensor[2x3x4], 1)
let w = randn(tensor[4x12], 2)
def attn(x: tensor[B, T, C]) {
    let q, k, v = split(x @ w, 3, -1)
    return q @ transpose(k) @ v
}
print x
print w
print attn(x)
"""
    x, w, y = run(src)
    q, k, v = np.split(x @ w, 3, -1)
    assert np.allclose(y, q @ np.swapaxes(k, -1, -2) @ v, rtol=1e-13, atol=1e-13)


def test_split_compiled_prints_the_same_numbers(tmp_path):
    pytest.importorskip("llvmlite")
    src = ("let x = %s\nlet a, b = split(x, 2, -1)\nprint b\nprint a - b\n"
           "print grad(sum(a * b), x)\n" % _lit(X))
    (tmp_path / "p.mg").write_text(src)
    want = [np.ravel(v).tolist() for v in run(src)]
    assert compiled_numbers(tmp_path) == want


@pytest.mark.parametrize("src, words", [
    ("let x = ones(tensor[2x6])\nlet a, b = split(x, 4, 1)\n",
     "cannot split axis 1 of tensor[2x6] (size 6) into 4 equal parts: 6 is not a multiple of 4"),
    ("let x = ones(tensor[2x48])\nlet q, k, v = split(x, 16, 1)\n",
     "let binds 3 names, but the value holds 16; split's second argument is how many equal "
     "parts (NumPy's split, PyTorch's chunk), not a part's size (PyTorch's split): for 3 "
     "parts, split(x, 3, axis)"),
    ("let x = ones(tensor[2x6])\nlet a, b = split(x, 2, 2)\n",
     "split's axis 2 is not an axis of tensor[2x6] (rank 2: 0 to 1, or -1 to -2 from the end)"),
    ("def f(x: tensor[N, C2]) {\n  let a, b = split(x, 2, 1)\n  return a\n}\n",
     "split needs the size of axis 1 of tensor[N, C2] to be 2 times a whole number for every "
         "call of f, and C2 is not: write that size as 2 times a size variable"),
    ("let x = ones(tensor[2x6])\nvar k = 2\nlet a, b = split(x, k, 1)\n",
     "k is a var, which may change, so it cannot be split's count"),
    ("let x = ones(tensor[2x6])\nlet a, b = split(x, 0, 1)\n", "the count must be 1 or more"),
    ("let x = ones(tensor[2x6])\nlet a, b = split(x, 2)\n",
     "split takes a value, how many equal parts, and the axis"),
    ("let a, b = split(3, 2, 0)\n", "split takes a tensor of rank 1 or more"),
    ("let x = ones(tensor[2x6])\nlet a = split(x, 2, 1)\nprint a\n",
     "this is 2 values, not one"),
])
def test_split_errors_say_what_to_write(src, words):
    e = error(src)
    assert words in e.message, e.message
