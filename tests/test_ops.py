"""Every operator and built-in against NumPy written out independently, including
broadcasting, IEEE division, reductions on higher ranks, and precedence."""
import math
import numpy as np
import pytest

from conftest import run

A = np.array([[1.0, -2.0, 3.0], [4.0, 5.0, -6.0]])
ROW = np.array([[10.0, 20.0, 30.0]])
COL = np.array([[1.0], [2.0]])


def lit(a):
    """A goat literal for a NumPy array (repr keeps every digit)."""
    a = np.asarray(a, dtype=float)
    if a.ndim == 0:
        return repr(float(a))
    return "[" + ", ".join(lit(x) for x in a) + "]"


@pytest.mark.parametrize("op, f", [("+", np.add), ("-", np.subtract), ("*", np.multiply),
                                   ("/", np.divide)])
@pytest.mark.parametrize("left, right", [(A, A), (A, ROW), (ROW, A), (A, COL), (COL, ROW),
                                         (A, np.array(2.5)), (np.array(-4.0), A)])
def test_elementwise_operators_broadcast_like_numpy(op, f, left, right):
    (got,) = run("print %s %s %s" % (lit(left), op, lit(right)))
    np.testing.assert_array_equal(got, f(left, right))


@pytest.mark.parametrize("name, f", [
    ("exp", np.exp), ("log", np.log), ("sqrt", np.sqrt), ("abs", np.abs), ("tanh", np.tanh),
    ("sin", np.sin), ("cos", np.cos), ("square", lambda x: x * x),
    ("relu", lambda x: np.where(x > 0, x, 0.0)),
    ("sigmoid", lambda x: 1 / (1 + np.exp(-x))),
])
def test_elementwise_functions(name, f):
    x = np.array([[0.5, -1.0, 2.0], [0.0, 3.0, 1e-3]])
    (got,) = run("print %s(%s)" % (name, lit(x)))
    with np.errstate(all="ignore"):
        np.testing.assert_allclose(got, f(x), rtol=1e-15, atol=0)


@pytest.mark.parametrize("name, f", [("ge", np.greater_equal), ("gt", np.greater),
                                     ("le", np.less_equal), ("lt", np.less), ("eq", np.equal),
                                     ("ne", np.not_equal), ("maximum", np.maximum),
                                     ("minimum", np.minimum)])
def test_binary_functions_broadcast(name, f):
    (got,) = run("print %s(%s, %s)" % (name, lit(A), lit(np.array([[0.0, -2.0, 4.0]]))))
    np.testing.assert_array_equal(got, f(A, np.array([[0.0, -2.0, 4.0]])).astype(float))


@pytest.mark.parametrize("name, f", [
    ("row_sum", lambda a: a.sum(axis=-1, keepdims=True)),
    ("row_max", lambda a: a.max(axis=-1, keepdims=True)),
    ("row_min", lambda a: a.min(axis=-1, keepdims=True)),
    ("row_mean", lambda a: a.mean(axis=-1, keepdims=True)),
    ("col_sum", lambda a: a.sum(axis=-2, keepdims=True)),
    ("col_max", lambda a: a.max(axis=-2, keepdims=True)),
    ("col_min", lambda a: a.min(axis=-2, keepdims=True)),
    ("col_mean", lambda a: a.mean(axis=-2, keepdims=True)),
])
@pytest.mark.parametrize("x", [A, np.arange(24.0).reshape(2, 3, 4) / 7])
def test_reductions_keep_the_reduced_axis(name, f, x):
    (got,) = run("print %s(%s)" % (name, lit(x)))
    assert got.shape == f(x).shape
    np.testing.assert_allclose(got, f(x), rtol=1e-15)


def test_matmul_and_transpose():
    b = np.array([[1.0, 2.0], [0.5, -1.0], [3.0, 0.25]])
    got = run("let a = %s\nlet b = %s\nprint a @ b\nprint transpose(a)\nprint a @ transpose(a)"
              % (lit(A), lit(b)))
    np.testing.assert_array_equal(got[0], A @ b)
    np.testing.assert_array_equal(got[1], A.T)
    np.testing.assert_array_equal(got[2], A @ A.T)


def test_batched_matmul_broadcasts_leading_dimensions():
    x = np.arange(12.0).reshape(2, 2, 3)
    w = np.arange(6.0).reshape(3, 2)
    (got,) = run("print %s @ %s" % (lit(x), lit(w)))
    np.testing.assert_array_equal(got, x @ w)


def test_division_is_ieee():
    (got,) = run("print [[1], [-1], [0]] / [[0]]")
    assert got[0, 0] == np.inf and got[1, 0] == -np.inf and np.isnan(got[2, 0])


def test_precedence_and_associativity():
    got = run("print 1 + 2 * 3\nprint 8 / 2 / 2\nprint 10 - 3 - 2\nprint -2 * 3\n"
              "print [[1, 2]] @ [[3], [4]] * 2 + 1\nprint -(1 - 3)\nprint 2 - -3")
    assert [float(np.asarray(g).ravel()[0]) for g in got] == [7.0, 2.0, 5.0, -6.0, 23.0, 2.0, 5.0]


def test_scalar_results_have_rank_zero():
    (got,) = run("print 1 + 2")
    assert got.shape == ()


def test_literals():
    (t,) = run("let t = [[1e-05, 2.5E3, 1e+2],\n   [0.125, -7, 0.35355339059327373]]\nprint t")
    np.testing.assert_array_equal(t, [[1e-05, 2500.0, 100.0], [0.125, -7.0, 0.35355339059327373]])
    (deep,) = run("print [[[1, 2]], [[3, 4]]]")
    assert deep.shape == (2, 1, 2)


def test_literal_with_comment_inside_takes_the_slow_path():
    (t,) = run("print [[1, 2],  # first row\n [3, -4]]")
    np.testing.assert_array_equal(t, [[1, 2], [3, -4]])


def test_softmax_of_the_book_masks_exactly():
    src = ("def softmax_rows(m: tensor[3x3]) = exp(m - row_max(m)) / row_sum(exp(m - row_max(m)))\n"
           "print softmax_rows([[1, -1000000000, -1000000000], [1, 1, -1000000000], [1, 1, 1]])")
    (got,) = run(src)
    np.testing.assert_allclose(got, [[1, 0, 0], [0.5, 0.5, 0], [1 / 3, 1 / 3, 1 / 3]], rtol=1e-15)
    assert got[0, 1] == 0.0


def test_empty_row_reductions_give_the_identity():
    (mx, mn, sm) = run("let e = [[], []]\nprint row_max(e)\nprint row_min(e)\nprint row_sum(e)")
    assert (mx == -np.inf).all() and (mn == np.inf).all() and (sm == 0).all()


def test_numbers_as_numpy_prints_them():
    (got,) = run("print [1., .5, -0, 2.5e1, 0.]")
    assert got.tolist() == [1.0, 0.5, 0.0, 25.0, 0.0]
    assert np.signbit(got[2])                         # -0 keeps its sign, as it does outside lists
    assert np.signbit(run("print [-0]")[0][0]) and np.signbit(run("print -0")[0])


def test_bytes_source():
    import goat
    assert goat.run_source(b"print [[1, 2]] * 2")[0].tolist() == [[2.0, 4.0]]


def test_remainder_of_two_python_floats_has_numpys_bits():
    """`%` of two Python floats (a loop's index) takes Python's own % (the if of a loop had
    spent a NumPy call on it): the same bits as np.remainder for every pair, zeros, infinities,
    NaNs, subnormals and huge numbers included."""
    import itertools
    import struct
    from goat.gpu import get_backend
    from goat.ops import REGISTRY
    f = REGISTRY["remainder"].evaluate(get_backend("numpy"))
    rng = np.random.default_rng(7)
    vals = [0.0, -0.0, 1.0, -1.0, 7.0, -7.0, 0.5, 1e300, -1e-300, 5e-324, math.inf, -math.inf,
            math.nan, -math.nan, 2.0 ** 53, 1e16 + 1]
    vals += [float(v) for v in rng.standard_normal(60) * 10.0 ** rng.integers(-20, 20, 60)]
    with np.errstate(all="ignore"):
        for a, b in itertools.product(vals, vals):
            got = struct.pack("<d", float(f(a, b)))
            want = struct.pack("<d", float(np.remainder(np.float64(a), np.float64(b))))
            assert got == want, (a, b)


# ---------------------------------------------------------------- sum(x), mean(x)

_WHOLE_RNG = np.random.default_rng(11)


@pytest.mark.parametrize("shape", [(), (1,), (7,), (3, 5), (4, 1, 9), (2, 3, 4, 5), (300, 7),
                                   (2, 0)])
def test_sum_and_mean_of_every_cell_are_numpys_bit_for_bit(shape):
    """sum(x) is x.sum() and mean(x) x.mean(), to the bit (NumPy's pairwise order over the
    row-major cells), a scalar at any rank; the mean of no cells is NaN."""
    x = _WHOLE_RNG.normal(size=shape) * 10.0 ** _WHOLE_RNG.integers(-3, 4, size=shape)
    text = ("let x = zeros(tensor[2x0])\n" if 0 in shape else "let x = %s\n" % lit(x))
    got = run(text + "print sum(x)\nprint mean(x)\nprint sum(x * x) / 2\n")
    import warnings
    with np.errstate(invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)     # (NumPy's mean of no cells)
        want = [np.sum(x), np.mean(x), np.sum(x * x) / 2]
    for g, w in zip(got, want):
        assert g.shape == () and (g.tobytes() == np.float64(w).tobytes() or
                                  (np.isnan(g) and np.isnan(w)))


def test_grad_of_sum_and_mean_of_any_rank_needs_no_reshape():
    torch = pytest.importorskip("torch")
    x0 = _WHOLE_RNG.normal(size=(2, 3, 4))
    g1, g2 = run("var x = %s\nprint grad(sum(tanh(x) * x), x)\n"
                 "print grad(mean(x * x) * sum(x), x)\n" % lit(x0))
    x = torch.tensor(x0, requires_grad=True)
    (t1,) = torch.autograd.grad((torch.tanh(x) * x).sum(), x)
    (t2,) = torch.autograd.grad((x * x).mean() * x.sum(), x)
    assert np.allclose(g1, t1.numpy(), rtol=1e-14, atol=1e-15)
    assert np.allclose(g2, t2.numpy(), rtol=1e-14, atol=1e-15)


def test_the_mean_of_cells_counted_when_the_program_runs(tmp_path):
    """mean(x) of a value whose sizes are ? until it is loaded, and its gradient 1/n."""
    import goat
    x = _WHOLE_RNG.normal(size=(3, 5))
    np.save(tmp_path / "x.npy", x)
    (tmp_path / "p.mg").write_text('var x: tensor[?x?] = load("x.npy")\nprint mean(x)\n'
                                   "print grad(mean(x), x)\n")
    m, g = goat.run_file(str(tmp_path / "p.mg"))
    assert m.tobytes() == np.mean(x).tobytes()
    assert np.array_equal(g, np.full((3, 5), 1 / 15))


def test_sum_and_mean_compiled_on_the_gpu_test_back_end_and_in_f32(tmp_path):
    from conftest import (assert_compiled_equal, assert_same_on_the_gpu_test_back_end,
                          compiled_numbers)
    import goat
    text = ("let x = randn(tensor[37x29x3], 5)\nprint sum(x)\nprint mean(x * x)\n"
            "print grad(mean(x * x) + sum(x), x)\n")
    want = run(text)
    assert_same_on_the_gpu_test_back_end(text)
    narrow = goat.run_source(text, dtype="f32")
    for a, b in zip(want, narrow):
        assert b.dtype == np.float32 and np.allclose(a, b, rtol=1e-5, atol=1e-6)
    pytest.importorskip("llvmlite")
    (tmp_path / "p.mg").write_text(text)
    for numbers, w in zip(compiled_numbers(tmp_path), want):
        assert_compiled_equal(numbers, w, text)


# ---------------------------------------------------------------- swapaxes

@pytest.mark.parametrize("shape", [(4,), (2, 3), (2, 3, 4), (2, 1, 3, 5)])
def test_swapaxes_is_numpys_for_every_pair_of_axes(shape):
    x = _WHOLE_RNG.normal(size=shape)
    r = len(shape)
    pairs = [(a, b) for a in range(-r, r) for b in range(-r, r)]
    got = run("let x = %s\n" % lit(x) + "".join("print swapaxes(x, %d, %d)\n" % p for p in pairs))
    for (a, b), g in zip(pairs, got):
        assert np.array_equal(g, np.swapaxes(x, a, b)), (a, b)


def test_heads_split_and_merged_with_swapaxes_compiled_bit_for_bit(tmp_path):
    """Multi-head attention's layout, B x T x H x D -> B x H x T x D and back, as PyTorch's
    view + transpose(1, 2) writes it; grad through it; goat compile --aot the same bits."""
    from conftest import assert_compiled_equal, assert_same_on_the_gpu_test_back_end, \
        compiled_numbers
    x0 = _WHOLE_RNG.normal(size=(2, 5, 6))
    text = ("let x = %s\n"
            "let q = swapaxes(reshape(x, tensor[2x5x3x2]), 1, 2)\n"
            "let s = q @ transpose(q)\n"
            "let o: tensor[2x5x6] = reshape(swapaxes(s @ q, 1, 2))\n"
            "print o\nprint grad(sum(o * o), x)\n" % lit(x0))
    o, g = run(text)
    torch = pytest.importorskip("torch")
    x = torch.tensor(x0, requires_grad=True)
    q = x.view(2, 5, 3, 2).transpose(1, 2)
    to = ((q @ q.transpose(-1, -2)) @ q).transpose(1, 2).reshape(2, 5, 6)
    (tg,) = torch.autograd.grad((to * to).sum(), x)
    assert np.allclose(o, to.detach().numpy(), rtol=1e-14, atol=1e-14)
    assert np.allclose(g, tg.numpy(), rtol=1e-13, atol=1e-13)
    assert_same_on_the_gpu_test_back_end(text)
    pytest.importorskip("llvmlite")
    (tmp_path / "p.mg").write_text(text)
    for numbers, w in zip(compiled_numbers(tmp_path), (o, g)):
        assert_compiled_equal(numbers, w, text)


@pytest.mark.parametrize("src, message", [
    ("print swapaxes(x, 0, 3)", "swapaxes's axis2 3 is outside tensor[2x3x4], of rank 3 (axes 0 "
                                "to 2, or -3 to -1 counting from the last)"),
    ("print transpose(x, 1, 2)", "transpose takes 1 argument, got 3; transpose(x) swaps the last "
                                 "two axes; swapaxes(x, a, b) swaps axes a and b (PyTorch's "
                                 "x.transpose(a, b))"),
    ("print mean(x, -1)", "mean takes 1 argument, got 2; mean(x) averages every cell; "
                          "row_mean(x) along the last axis, col_mean(x) along the one before it "
                          "(each keeping it as size 1)"),
    ("print permute(x, 0, 2, 1)", "unknown function 'permute'; write swapaxes(x, a, b), a pair "
                                  "of axes at a time"),
])
def test_pytorch_habits_for_axes_point_to_goats_spelling(src, message):
    from conftest import error
    e = error("let x = zeros(tensor[2x3x4])\n" + src + "\n")
    assert e.message == message


def test_a_column_compared_with_a_vector_of_its_length_is_an_error_not_every_pair():
    """Found by a newcomer: argmax_rows(X @ w) == y with y a vector of the N labels broadcast
    to an NxN table, and the accuracy read 1/3, silently (as NumPy does). The forms that say
    what is meant run as NumPy does."""
    from conftest import error
    e = error("let p = [[0], [1], [2]]\nlet y = [0, 1, 2]\nprint mean(p == y)\n")
    assert e.message == (
        "comparing a column of 3 (3x1) with a vector of 3 (3) would give a 3x3 table of every "
        "pair, as NumPy broadcasts them: make both columns (v[:, None], or reshape(v, "
        "tensor[3x1])) or both vectors; for every pair, write the vector as a row, v[None, :]")
    e = error("def acc(p: tensor[N, 1], y: tensor[N]) = mean(p == y)\n")
    assert "a column of N (Nx1) with a vector of N (N)" in e.message
    p = np.array([[0.0], [1.0], [2.0]])
    y = np.array([0.0, 1.0, 1.0])
    a, b, c, d = run("let p = %s\nlet y = %s\nprint mean(p == y[:, None])\n"
                     "print mean(p[:, 0] == y)\nprint p == y[None, :]\nprint p - y\n"
                     % (lit(p), lit(y)))
    assert a.item() == np.mean(p == y[:, None]) and b.item() == np.mean(p[:, 0] == y)
    assert np.array_equal(c, p == y[None, :]) and np.array_equal(d, p - y)   # (- stays NumPy's)


def test_a_higher_rank_column_against_its_vector_is_that_error_too_and_in_a_defs_call():
    """The rule's whole kind (a breaker's note): predictions BxTx1 against labels T or BxT
    (when the shapes broadcast at all), and a def whose size variables differ, called with
    them equal."""
    from conftest import error
    e = error("let p = ones(tensor[2x5x1])\nlet y = ones(tensor[5])\nprint p == y\n")
    assert e.message.startswith("comparing a column of 5 (2x5x1) with a vector of 5 (5) would "
                                "give a 2x5x5 table of every pair")
    e = error("let p = ones(tensor[5x5x1])\nlet y = ones(tensor[5x5])\nprint p < y\n")
    assert e.message.startswith("comparing shape 5x5x1 with shape 5x5 (the same sizes but its "
                                "last 1) would give 5x5x5")
    assert "(v[..., None], or reshape(v, tensor[5x5x1]))" in e.message
    e = error("let p = ones(tensor[2x5x1])\nlet y = ones(tensor[2x5])\nprint p == y\n")
    assert e.message == "cannot compare shapes 2x5x1 and 2x5: dimensions 5 and 2 differ and " \
                        "neither is 1"
    e = error("def acc(p: tensor[N, 1], y: tensor[M]) = mean(p == y)\n"
              "print acc(ones(tensor[5x1]), ones(tensor[5]))\n")
    assert e.message.startswith("comparing a column of 5 (5x1) with a vector of 5 (5)")
    assert e.loc.line == 1 and "in acc, called on line 2" in e.notes[0]
    # other sizes, or the pairs asked for, run as NumPy's
    p, q = run("def acc(p: tensor[N, 1], y: tensor[M]) = p == y\n"
               "print acc([[1], [2]], [1, 2, 3])\n"
               "print ones(tensor[2x5x1]) == [[0, 1, 2, 3, 4]] - 1\n")
    assert np.array_equal(p, np.array([[1], [2]]) == np.array([1, 2, 3]))
    assert np.array_equal(q, np.ones((2, 5, 1)) == np.array([[0, 1, 2, 3, 4]]) - 1)
