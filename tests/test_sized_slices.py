"""Slices whose length is a def's size variable -- hp[:, 1:L + 1], wpe[0:T] -- typed with
that size (a convolution over any length, positions for any context), held to PyTorch's
conv1d (when installed) and to NumPy; sizes known only when the call runs; compiled."""
import importlib.util

import numpy as np
import pytest

from conftest import compiled_numbers, error, run

CONV = """def conv(h: tensor[N, L, C], w: tensor[3, C, F]) {
    let pad = zeros(tensor[N, 1, C])
    let hp = concat(concat(pad, h, 1), pad, 1)
    return hp[:, 0:L] @ w[0] + hp[:, 1:L + 1] @ w[1] + hp[:, 2:L + 2] @ w[2]
}
"""


def _numpy_conv(h, w):
    hp = np.pad(h, ((0, 0), (1, 1), (0, 0)))
    L = h.shape[1]
    return sum(hp[:, k:k + L] @ w[k] for k in range(3))


def test_a_convolution_over_any_length_is_typed_by_its_size_variable(tmp_path):
    rng = np.random.default_rng(3)
    h1, h2 = rng.standard_normal((2, 5, 3)), rng.standard_normal((1, 7, 3))
    w = rng.standard_normal((3, 3, 2))
    np.save(tmp_path / "h1.npy", h1)
    np.save(tmp_path / "h2.npy", h2)
    np.save(tmp_path / "w.npy", w)
    src = CONV + """let h1: tensor[2x5x3] = load("h1.npy")
let h2: tensor[?, ?, 3] = load("h2.npy")
let w: tensor[3x3x2] = load("w.npy")
print conv(h1, w)
print conv(h2, w)
print grad(sum(conv(h1, w) * conv(h1, w)), w)
"""
    y1, y2, g = run(src, str(tmp_path / "p.mg"))
    np.testing.assert_allclose(y1, _numpy_conv(h1, w), rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(y2, _numpy_conv(h2, w), rtol=1e-13, atol=1e-13)
    torch = pytest.importorskip("torch")
    wt = torch.tensor(w, requires_grad=True)
    y = torch.nn.functional.conv1d(torch.tensor(h1).transpose(1, 2), wt.permute(2, 1, 0),
                                   padding=1).transpose(1, 2)
    np.testing.assert_allclose(y1, y.detach().numpy(), rtol=1e-13, atol=1e-13)
    (y * y).sum().backward()
    np.testing.assert_allclose(g, wt.grad.numpy(), rtol=1e-12, atol=1e-12)


def test_positions_for_any_context_and_the_whole_axis(tmp_path):
    src = """def embed(tokens: tensor[B, T], wpe: tensor[P, C]) = wpe[0:T] + zeros(tensor[B, T, C])
def first(h: tensor[N, L]) = h[:, 0:L]
let wpe = [[1, 2], [3, 4], [5, 6], [7, 8]]
print embed([[0, 0, 0]], wpe)
print first([[1, 2, 3]])
"""
    e, f = run(src)
    assert e.tolist() == [[[1, 2], [3, 4], [5, 6]]] and f.tolist() == [[1, 2, 3]]
    if importlib.util.find_spec("llvmlite") is not None:
        (tmp_path / "p.mg").write_text(src)
        assert compiled_numbers(tmp_path) == [[1, 2, 3, 4, 5, 6], [1, 2, 3]]
    e = error(src + "print embed([[0, 0, 0, 0, 0]], wpe)\n")       # 5 positions of 4
    assert e.message == ("in embed, the slice 0:T would run past axis 0 of PxC for this call "
                         "(P = 4, T = 5)"), e.message


def test_a_slice_whose_bounds_are_sizes_is_typed_by_their_difference():
    """h[:, 1:L] in a def has L - 1 cells, h[:, L - 2:L] two: bounds written with the def's
    size variables are sizes, so the length is arithmetic on them that each call works out
    (it was an error: a length had to be a size variable)."""
    src = ("def g(h: tensor[N, L]) = h[:, 1:L]\nprint g([[1, 2, 3]])\n"
           "def k(h: tensor[N, L]) -> tensor[N, 2] = h[:, L - 2:L]\nprint k([[1, 2, 3, 4]])\n")
    a, c = run(src)
    h = np.array([[1, 2, 3, 4]])
    assert a.tolist() == [[2, 3]] and c.tolist() == h[:, 2:4].tolist()


def test_a_slice_of_sizes_that_is_no_slice_for_a_call_is_that_calls_error():
    """h[:, L:2] is a slice of 2 - L cells: a call with L = 3 would take -1 of them."""
    e = error("def g(h: tensor[N, L]) = h[:, L:2]\nprint g([[1, 2, 3]])\n")
    assert (e.line, e.message) == (2, "in g, the slice L:2 would end before it starts for "
                                      "this call (L = 3)"), e.message
    assert e.notes[-1] == "the slice is on line 1"
    (y,) = run("def g(h: tensor[N, L]) = h[:, L:2]\nprint g([[1, 2]])\n")
    assert y.shape == (1, 0)


def test_a_name_of_the_body_that_hides_a_size_variable_is_that_name():
    """A breaker's: a let, a parameter or a loop index named as a size variable is that
    value in a slice's end, as anywhere in the body; an end written as a longer sum is seen
    as the start plus L."""
    src = """def f(x: tensor[M], p: tensor[L]) {
  let L = 1
  return x[0:L]
}
print f([1, 2, 3], [0, 0])
def g(x: tensor[M], p: tensor[L], L: scalar) = x[L:L + 1]
print g([1, 2, 3], [0, 0], 1)
def h(x: tensor[M], p: tensor[L], s: scalar) = x[s + 1:L + s + 1]
print h([1, 2, 3, 4, 5], [0, 0], 1)
"""
    f, g, h = run(src)
    assert f.tolist() == [1] and g.tolist() == [2] and h.tolist() == [3, 4]


def test_an_open_slice_in_a_def_ends_at_its_axis():
    """A newcomer's: hp[:, 2:] in a def said to write both bounds as numbers; the end of an
    axis of a size variable's size is that size, so the slice has L - 1 cells."""
    (y,) = run("def f(h: tensor[N, L, D]) = h[:, 1:]\n"
               "print f(reshape(iota(tensor[24], 0), tensor[2, 3, 4]))\n")
    assert y.tolist() == np.arange(24.0).reshape(2, 3, 4)[:, 1:].tolist()


def test_narrow_takes_a_size_variable_as_its_length(tmp_path):
    """A newcomer's: narrow(hp, 1, 1, L) in a def, as hp[:, 1:L + 1] is written."""
    src = ("def f(h: tensor[N, L]) {\n  let hp = concat(zeros(tensor[N, 1]), h, 1)\n"
           "  return narrow(hp, 1, 1, L) + hp[:, 0:L]\n}\nprint f([[1, 2, 3]])\n"
           "print f([[1, 2], [3, 4]])\n")
    a, c = run(src)
    assert a.tolist() == [[1, 3, 5]] and c.tolist() == [[1, 3], [3, 7]]
    if importlib.util.find_spec("llvmlite") is not None:
        (tmp_path / "p.mg").write_text(src)
        assert compiled_numbers(tmp_path) == [[1, 3, 5], [1, 3, 3, 7]]
