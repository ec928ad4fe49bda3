"""Defs over any leading sizes: a parameter typed ``tensor[..., N, C]`` takes a matrix or a stack
of them (``...`` = the leading sizes, the same in every parameter that has it), and
``tensor[...]`` takes any shape.  Values against NumPy written here."""
from __future__ import annotations

import numpy as np
import pytest

import goat
from conftest import error, run
from test_grad import lit
from test_grad_program import fd

RNG = np.random.default_rng(11)


def softmax(z):
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


@pytest.mark.parametrize("shape", [(3, 4), (2, 3, 4), (2, 1, 3, 4), (1, 4)])
def test_a_generic_def_takes_any_number_of_leading_sizes(shape):
    x = RNG.standard_normal(shape)
    (got,) = run("def sm(m: tensor[..., N, C]) = exp(m - row_max(m)) / row_sum(exp(m - row_max(m)))\n"
                 "print sm(reshape(%s, tensor[%s]))\n"
                 % (lit(x.reshape(1, -1)), "x".join(map(str, shape))))
    assert got.shape == shape
    np.testing.assert_allclose(got, softmax(x), rtol=1e-14)


def test_nn_verbs_take_a_batch_as_a_stack_of_matrices():
    z = RNG.standard_normal((2, 3, 5)) * 3
    t = RNG.integers(0, 5, (2, 3, 1)).astype(float)
    x = RNG.standard_normal((2, 3, 4))
    g = np.array([[0.5, 1.0, 2.0, -1.0]])
    sm, ce, flat, rn, ge = run("""import nn
let z = reshape(%s, tensor[2x3x5])
let t = reshape(%s, tensor[2x3x1])
let x = reshape(%s, tensor[2x3x4])
print nn.softmax_rows(z)
print nn.cross_entropy(z, t)
print nn.cross_entropy(reshape(z, tensor[6x5]), reshape(t, tensor[6x1]))
print nn.rms_norm(x, %s)
print grad(nn.cross_entropy(z, t), z)
""" % (lit(z.reshape(1, -1)), lit(t.reshape(1, -1)), lit(x.reshape(1, -1)), lit(g)))
    np.testing.assert_allclose(sm, softmax(z), rtol=1e-14)
    assert ce.shape == (1, 1)
    np.testing.assert_allclose(ce, flat, rtol=1e-15)
    logp = np.log(softmax(z))
    want = -np.mean(np.take_along_axis(logp, t.astype(int), axis=-1))
    np.testing.assert_allclose(ce, [[want]], rtol=1e-13)
    np.testing.assert_allclose(rn, x / np.sqrt(np.mean(x * x, -1, keepdims=True) + 1e-5) * g,
                               rtol=1e-14)
    oh = np.eye(5)[t[..., 0].astype(int)]
    np.testing.assert_allclose(ge, (softmax(z) - oh) / 6, rtol=1e-12, atol=1e-15)


def test_batched_attention_equals_one_sequence_at_a_time():
    q, k, v = (RNG.standard_normal((2, 3, 4)) for _ in range(3))
    (got,) = run("""import nn
let q = reshape(%s, tensor[2x3x4])
let k = reshape(%s, tensor[2x3x4])
let v = reshape(%s, tensor[2x3x4])
print nn.attention(q, k, v, nn.causal_mask(zeros(tensor[3x3])), 0.5)
""" % tuple(lit(a.reshape(1, -1)) for a in (q, k, v)))
    mask = np.where(np.tril(np.ones((3, 3))) == 1, 0.0, -1e9)
    for b in range(2):
        want = softmax(q[b] @ k[b].T * 0.5 + mask) @ v[b]
        np.testing.assert_allclose(got[b], want, rtol=1e-13)


def test_any_shape_with_tensor_of_dots():
    s, v, m = run("""import optim
let w0, m0, v0 = optim.adamw(2, 0.5, 0, 0, 1, 0.1, 0.9, 0.999, 1e-08, 0)
print w0
let w3 = zeros(tensor[2x2x2]) + 1
let g3, n3 = optim.clip_grad_norm(w3 * 3, 1)
print n3
print optim.sq_norm([1, 2, 2])
""")
    # one Adam step moves by lr (m_hat / sqrt(v_hat) = sign(g)) less eps's share
    assert float(s) == pytest.approx(2 - 0.1 * 0.5 / (0.5 + 1e-8), rel=1e-15)
    assert v.tolist() == [[np.sqrt(72.0)]] or abs(v[0, 0] - np.sqrt(72.0)) < 1e-14
    assert m.tolist() == [[9.0]]


@pytest.mark.parametrize("src, words", [
    ("def f(x: tensor[..., N], y: tensor[..., N]) = x + y\nprint f([[1, 2]], [1, 2])\n",
     "... stands for the same leading sizes in every parameter of f, but they are 1 for x and "
     "none for y"),
    ("def f(x: tensor[..., N, C]) = x\nprint f([1, 2])\n",
     "argument x of f must have shape tensor[..., N, C]: at least 2 dimensions, got 2"),
    ("let a: tensor[..., 2] = [1, 2]\n", "... (any leading sizes) can only begin a type in a def"),
])
def test_errors(src, words):
    e = error(src)
    assert words in e.message, e.message


def test_an_error_only_a_batch_shows_names_the_leading_sizes():
    e = error("def f(x: tensor[..., N, C]) = x + [[[1]], [[2]]]\n"
              "let a = f([[1, 2, 3]])\n"
              "let b = f(reshape([1, 2, 3, 4, 5, 6], tensor[3x1x2]))\n")
    assert e.loc.line == 1
    assert "cannot add shapes 3xNxC and 2x1x1" in e.message, e.message
    assert "in f with ... = 3, called on line 3" in e.notes


def test_the_signature_shows_the_leading_sizes():
    program = goat.check_source("import nn\ndef f(x: tensor[..., N, C]) = row_sum(x)\n"
                                "def g(x: tensor[...]) = col_sum(row_sum(reshape(x, tensor[1x?])))\n")
    assert program.defs["f"].signature() == "f(x: tensor[..., N, C]) -> tensor[..., N, 1]"
    assert program.defs["g"].signature() == "g(x: tensor[...]) -> tensor[1x1]"


def test_each_leading_shape_is_checked_once():
    program = goat.check_source("def f(x: tensor[..., N]) = exp(x)\n"
                                "let a = f([[1, 2]])\nlet b = f([[3, 4]])\nlet c = f([[[5]]])\n")
    specs = program.defs["f"].specs
    assert sorted(specs) == [(1,), (1, 1)]
