"""Defs over any leading sizes: a parameter typed ``tensor[..., N, C]`` takes a matrix or a stack
of them (``...`` = the leading sizes, the same in every parameter that has it), and
``tensor[...]`` takes any shape.  Values against NumPy written here."""
from __future__ import annotations

import numpy as np
import pytest

import goat
from conftest import error, run
from test_grad import lit

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
     "... stands for the same leading sizes in every parameter of f, but x is 1x2 "
     "(tensor[..., N]: ... = 1) and y is 2 (tensor[..., N]: ... = none)"),
    # found by a newcomer: class indices without their last axis of 1 (a PyTorch habit)
    ("import nn\nlet z = zeros(tensor[8x32x76])\nlet y = zeros(tensor[8x32])\n"
     "print nn.cross_entropy(z, y)\n",
     "... stands for the same leading sizes in every parameter of nn.cross_entropy, but z is "
     "8x32x76 (tensor[..., N, V]: ... = 8) and t is 8x32 (tensor[..., N, 1]: ... = none); t "
     "looks one axis short: its last size must be 1, as y[..., None] makes it (PyTorch's "
     "unsqueeze(-1))"),
    # the same in a def, on its sizes (a newcomer's stacked LSTM's loss)
    ("import nn\ndef loss(z: tensor[S, N, V], y: tensor[S, N]) = nn.cross_entropy(z, y)\n",
     "... stands for the same leading sizes in every parameter of nn.cross_entropy, but z is "
     "SxNxV (tensor[..., N, V]: ... = S) and t is SxN (tensor[..., N, 1]: ... = none); t "
     "looks one axis short: its last size must be 1, as y[..., None] makes it (PyTorch's "
     "unsqueeze(-1))"),
    ("def f(x: tensor[..., N, C]) = x\nprint f([1, 2])\n",
     # "got 2" had read as a count of dimensions
     "argument x of f must have shape tensor[..., N, C]: at least 2 dimensions, got shape 2 "
     "(rank 1)"),
    ("def f(x: tensor[..., N, C]) = x\nprint f(3)\n",
     "argument x of f must have shape tensor[..., N, C]: at least 2 dimensions, got a scalar"),
    # every parameter tensor[...]: one shape, said so (not "leading sizes")
    ("import optim\nlet w = zeros(tensor[4x8])\nlet m = zeros(tensor[8x4])\n"
     "let a, b, c = optim.adamw(w, w, m, w, 1, 0.1, 0.9, 0.999, 1e-8, 0.01)\n",
     "w, g, m and v of optim.adamw must all have the same shape (each is declared "
     "tensor[...]), but w is 4x8 and m is 8x4"),
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
    assert "cannot add shapes ...xNxC and 2x1x1" in e.message, e.message
    assert "in f with ... = 3, called on line 3" in e.notes


def test_the_signature_shows_the_leading_sizes():
    program = goat.check_source("import nn\ndef f(x: tensor[..., N, C]) = row_sum(x)\n"
                                "def g(x: tensor[...]) = col_sum(row_sum(reshape(x, tensor[1x?])))\n")
    assert program.defs["f"].signature() == "f(x: tensor[..., N, C]) -> tensor[..., N, 1]"
    assert program.defs["g"].signature() == "g(x: tensor[...]) -> tensor[1x1]"


def test_each_number_of_leading_sizes_is_checked_once():
    program = goat.check_source("def f(x: tensor[..., N]) = exp(x)\n"
                                "let a = f([[1, 2]])\nlet b = f([[3, 4]])\nlet c = f([[[5]]])\n")
    specs = program.defs["f"].specs
    assert sorted(specs) == [1, 2]          # one more check per number of leading sizes


# ---------------------------------------------------------------- found by attacking it

def _npy(tmp_path, **arrays):
    for name, a in arrays.items():
        np.save(tmp_path / ("%s.npy" % name), a)


def test_unknown_leading_sizes_are_checked_when_the_call_runs(tmp_path):
    _npy(tmp_path, a=np.ones((2, 3, 4)), b=np.ones((5, 3, 4)), r=np.ones((1, 3)),
         c=np.ones((3, 1)))
    with pytest.raises(goat.GoatError) as info:
        goat.run_source("def first(p: tensor[..., N, C], q: tensor[..., N, C]) = p\nprint 1\n"
                        "print first(load(\"a.npy\", tensor[?x3x4]), load(\"b.npy\", "
                        "tensor[?x3x4]))\n", path=str(tmp_path / "p.mg"))
    assert info.value.loc.line == 3
    assert info.value.message == ("... stands for the same leading sizes in every parameter, "
                                  "but a leading size is 2 for argument p of first and 5 for "
                                  "argument q of first")
    with pytest.raises(goat.GoatError) as info:
        goat.run_source("import optim\nlet w = load(\"r.npy\", tensor[?x?])\n"
                        "let g = load(\"c.npy\", tensor[?x?])\n"
                        "let w2, m, v = optim.adamw(w, g, w * 0, w * 0, 1, 0.1, 0.9, 0.999, "
                        "1e-08, 0)\nprint w2\n", path=str(tmp_path / "p.mg"))
    assert "a leading size is 1 for argument w of optim.adamw and 3 for argument g" \
        in info.value.message


def test_unknown_and_symbolic_leading_sizes_work_where_sizes_are_needed(tmp_path):
    x = np.arange(24.0).reshape(2, 3, 4) / 10
    _npy(tmp_path, a=x)
    d, ce, b = goat.run_source("""import nn
let a = load("a.npy", tensor[?x3x4])
print nn.dropout(a, 0.5, 1)
print nn.cross_entropy(a, zeros(tensor[2x3x1]))
def block(x: tensor[B, T, C]) = nn.dropout(x, 0.5, 1)
print block(reshape(a, tensor[2x3x4]))
""", path=str(tmp_path / "p.mg"))
    (u,) = run("print rand(tensor[2x3x4], 1)\n")
    np.testing.assert_allclose(d, np.where(u >= 0.5, x / 0.5, 0.0), rtol=1e-15)
    np.testing.assert_array_equal(b, d)
    logp = np.log(softmax(x))
    np.testing.assert_allclose(ce, [[-np.mean(logp[..., 0])]], rtol=1e-13)


def test_clip_grad_norm_keeps_the_shape_of_a_vector_or_a_scalar():
    g, n, s = run("import optim\nlet g, n = optim.clip_grad_norm([3, 4], 1)\nprint g\nprint n\n"
                  "let h, k = optim.clip_grad_norm(-6, 1)\nprint h\n")
    assert g.shape == (2,) and s.shape == ()
    np.testing.assert_allclose(g, [3 / (5 + 1e-6), 4 / (5 + 1e-6)], rtol=1e-15)
    assert float(s) == pytest.approx(-6 / (6 + 1e-6), rel=1e-15)


def test_signatures_of_generic_defs_calling_generic_defs():
    program = goat.check_source("""import nn
def inner(x: tensor[..., N, C]) = row_sum(x)
def t4(x: tensor[..., N, C]) = inner(x)
def h(x: tensor[..., N, C]) = nn.gelu(x) * 2
def outer(x: tensor[B, N, C]) = inner(x)
""")
    sig = {k: program.defs[k].signature() for k in ("t4", "h", "outer")}
    assert sig["t4"] == "t4(x: tensor[..., N, C]) -> tensor[..., N, 1]"
    assert sig["h"] == "h(x: tensor[..., N, C]) -> tensor[..., N, C]"
    assert sig["outer"] == "outer(x: tensor[B, N, C]) -> tensor[B, N, 1]"


def test_a_generic_def_in_the_repl_keeps_the_names_it_saw():
    import io
    from goat.repl.session import Session
    s = Session(out=io.StringIO())
    s.run("let k = 10")
    s.run("def f(x: tensor[..., N, C]) = x * k")
    s.run("let k = 1000")
    (v,) = [r.value for r in s.run("f(zeros(tensor[3x1x2]) + 1)")]
    assert np.asarray(v).tolist() == [[[10.0, 10.0]]] * 3


@pytest.mark.parametrize("src, words", [
    ("def f(x: tensor[N, ..., C]) = x\n", "... (any leading sizes) comes first and once"),
    ("def f(x: tensor[N, C]) = x + zeros(tensor[..., N, C])\n",
     "... stands for the leading sizes of f's parameters, but none of them begins with ..."),
    ("def f(x: tensor[N, C]) -> tensor[..., N, C] = x\n",
     "... stands for the leading sizes of f's parameters, but none of them begins with ..."),
    ("def f(x: tensor[..., N, C]) = reshape(x, tensor[..., ?])\nprint f(zeros(tensor[0x3x4]))\n",
     "cannot reshape 0x3x4 (0 cells) to tensor[0x?]: the ? size cannot be worked out"),
    ("print reshape([1, 2], tensor[%s])\n" % "x".join(["1"] * 64 + ["2"]),
     "a tensor may have at most 64 (NumPy's limit)"),
])
def test_more_errors(src, words):
    e = error(src)
    assert words in e.message, e.message


def test_the_note_names_the_call_in_the_importing_file(tmp_path):
    (tmp_path / "m.mg").write_text("def f(x: tensor[..., N, C]) = x + [[[1]], [[2]]]\n")
    (tmp_path / "p.mg").write_text("import m\nprint 1\nlet y = m.f(\n    zeros(tensor[3x1x2]))\n")
    with pytest.raises(goat.GoatError) as info:
        goat.run_file(str(tmp_path / "p.mg"))
    assert any("in m.f with ... = 3, called at %s:3" % (tmp_path / "p.mg") in n
               for n in info.value.notes), info.value.notes


def test_stop_gradient_makes_a_value_constant_to_grad():
    (got,) = run("""let w = [[1]]
print grad(col_sum(row_sum(onehot(stop_gradient(w), tensor[1x2]) * w * 3)), w)
""")
    assert got.tolist() == [[3.0]]          # the index is a constant; the product is not
    e = error("import optim\nlet w = [[1, 2]]\nprint grad(optim.sq_norm(stop_gradient(w)), w)\n")
    assert e.message.startswith("the loss depends on 'w' only through stop_gradient")


def test_a_hint_that_checks_a_generic_def_again_leaves_the_session_sound():
    """The REPL's hint checks and takes back; a later check made for the hint must not stay
    behind (its nodes are gone with the hint)."""
    import io
    from goat.repl.session import Session
    s = Session(out=io.StringIO())
    s.run("def f(x: tensor[..., N, C]) = exp(x) * 2")
    assert s.hint("f(zeros(tensor[2x1x2]))").endswith("tensor[2x1x2]")
    s.run("let a = zeros(tensor[3x1x2]) + 1")
    (v,) = [r.value for r in s.run("f(a)")]
    np.testing.assert_allclose(np.asarray(v), np.full((3, 1, 2), 2 * np.e), rtol=1e-15)
