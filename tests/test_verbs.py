"""The trainer's verbs (LANGUAGE.md Part B7): gather, onehot, argmax_rows, sample_rows, and
stdlib nn / optim's gelu, rms_norm, cross_entropy, dropout, adamw, cosine_lr, clip_grad_norm.
Values against NumPy written here (and PyTorch when installed); derivatives against central
finite differences."""
from __future__ import annotations

import importlib.util
import math

import numpy as np
import pytest

from conftest import compiled_numbers, error, run
from test_grad import lit
from test_grad_program import fd

RNG = np.random.default_rng(3)
TABLE = RNG.standard_normal((5, 3))
IDX = np.array([[4.0], [0.0], [4.0], [2.0]])


def test_gather_values_and_gradient():
    r = RNG.standard_normal((4, 3))
    got, g = run("let t = %s\nlet i = %s\nprint gather(t, i)\n"
                 "print grad(col_sum(row_sum(gather(t, i) * %s)), t)\n" % (lit(TABLE), lit(IDX), lit(r)))
    np.testing.assert_array_equal(got, TABLE[[4, 0, 4, 2]])
    want = fd(lambda t: np.sum(t[[4, 0, 4, 2]] * r), TABLE)
    np.testing.assert_allclose(g, want, rtol=1e-7, atol=1e-9)


def test_gather_of_a_rank_3_index_column():
    (got,) = run("print gather(%s, [[[1], [0]], [[3], [3]]])\n" % lit(TABLE))
    assert got.shape == (2, 2, 3)
    np.testing.assert_array_equal(got[1, 0], TABLE[3])


@pytest.mark.parametrize("idx, words", [
    ("[[1.5]]", "gather's indices must be whole numbers from 0 to 4, got 1.5 at position 0"),
    ("[[0], [5]]", "gather's indices must be whole numbers from 0 to 4, got 5 at position 1"),
    ("[[-1]]", "got -1 at position 0"),
])
def test_gather_checks_its_indices_when_it_runs(idx, words):
    e = error("let t = %s\nprint 1\nlet y = gather(t, %s)\nprint y\n" % (lit(TABLE), idx))
    assert e.loc.line == 3
    assert words in e.message


@pytest.mark.parametrize("src, words", [
    ("print gather([[1, 2]], [[0, 1]])", "gather's indices must be a column (last size 1), such "
                                          "as Nx1; got 1x2"),
    ("print gather(3, [[0]])", "gather's table must have rows, a tensor of rank 1 or more (VxC: "
                               "a row per token), got a scalar"),
    ("print onehot([[1], [2]], tensor[3x4])", "onehot of indices 2x1 needs the type tensor[2xV]"),
    ("let i = [[0]]\nprint grad(col_sum(row_sum(gather([[1, 2]], i))), i)",
     "grad cannot differentiate through gather on line 2: it has no derivative with respect "
     "to its argument indices"),
])
def test_static_errors(src, words):
    e = error(src + "\n")
    assert words in e.message, e.message


def test_onehot_and_argmax_rows():
    oh, am = run("print onehot([[2], [0]], tensor[2x3])\n"
                 "print argmax_rows([[1, 5, 5], [7, 0, -1], [0, 0, 0]])\n")
    assert oh.tolist() == [[0, 0, 1], [1, 0, 0]]
    assert am.tolist() == [[1], [0], [0]]          # the first of equal values


def test_sample_rows_follows_the_probabilities_and_the_seed():
    p = np.tile([[0.2, 0.5, 0.0, 0.3]], (20000, 1))
    a, b, c = run("let p = reshape(%s, tensor[20000x4])\nprint sample_rows(p, 1)\n"
                  "print sample_rows(p, 1)\nprint sample_rows(p * 10, 2)\n"
                  % lit(p.reshape(1, -1)))
    np.testing.assert_array_equal(a, b)            # the seed decides
    assert not np.array_equal(a, c)
    for draws in (a, c):
        freq = np.bincount(draws[:, 0].astype(int), minlength=4) / draws.shape[0]
        np.testing.assert_allclose(freq, [0.2, 0.5, 0.0, 0.3], atol=0.015)
        assert freq[2] == 0.0                      # a zero weight is never drawn


def test_sample_rows_in_f32_compares_rands_f32_draw_and_its_seed_is_one_number():
    """Breakers': in f32 the draw u is rand's f32 value (a row [u, 1 - u] never takes column
    0, whose running sum is u times the sum exactly); a seed of two numbers is an error before
    the run, as rand's is."""
    import goat
    src = ("let u = rand(tensor[8, 1], 99)\nlet p = concat(u, 1 - u, 1)\n"
           "print row_sum(p) == 1\nprint sample_rows(p, 99)\n")
    for dtype in ("f64", "f32"):
        ones, k = goat.run_source(src, dtype=dtype)
        assert ones.tolist() == [[1]] * 8 and k.tolist() == [[1]] * 8, dtype
    e = error('print "a"\nprint sample_rows([[1, 2]], [1, 2])\n')
    assert e.message == "the seed of sample_rows must be a single number, got shape 2"
    assert e.loc.line == 2


def test_sample_rows_takes_the_first_column_whose_running_sum_exceeds_the_draw(tmp_path):
    """The rule as documented, written in NumPy: u = rand's cell r, the first column whose
    running sum exceeds u times the sum -- where a running sum equals it exactly, the next
    column (with the weights [u, 0, 1 - u], not column 0 and not the empty column 1), here
    and compiled; a policy gradient's log p[sampled] differentiates through p alone."""
    (u,) = run("print rand(tensor[1x1], 7)\n")
    u = float(u[0, 0])
    p = np.array([[u, 0.0, 1.0 - u]])
    assert (p[0, 0] + p[0, 1]) + p[0, 2] == 1.0          # the threshold is u exactly
    c = np.cumsum(p, axis=-1)
    want = int(np.argmax(c > u * c[0, -1]))
    src = "let p = %s\nprint sample_rows(p, 7)\n" % lit(p)
    (got,) = run(src)
    assert int(got[0, 0]) == want == 2
    if importlib.util.find_spec("llvmlite") is not None:
        (tmp_path / "p.mg").write_text(src)
        assert compiled_numbers(tmp_path) == [[2.0]]
    (g,) = run("let p = [[0.2, 0.5, 0.3]]\nprint grad(log(p[0, sample_rows(p, 3)[0, 0]]), p)\n")
    k = int(run("print sample_rows([[0.2, 0.5, 0.3]], 3)\n")[0][0, 0])
    want = np.zeros((1, 3))
    want[0, k] = 1 / [0.2, 0.5, 0.3][k]
    np.testing.assert_allclose(g, want, rtol=1e-15)


# ---------------------------------------------------------------- nn's verbs

X = RNG.standard_normal((4, 3))
G = np.array([[0.5, 1.5, -1.0]])


def gelu(x):
    return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))


def rms_norm(x, g):
    return x / np.sqrt(np.mean(x * x, axis=1, keepdims=True) + 1e-5) * g


def cross_entropy(z, t, m=None):
    zs = z - z.max(axis=1, keepdims=True)
    logp = zs - np.log(np.exp(zs).sum(axis=1, keepdims=True))
    picked = logp[np.arange(len(t)), t[:, 0].astype(int)]
    if m is None:
        return -picked.mean()
    return -(picked * m[:, 0]).sum() / m.sum()


def test_gelu_and_rms_norm_values_and_gradients():
    r = RNG.standard_normal((4, 3))
    y1, g1, y2, g2x, g2g = run("""import nn
let x = %s
let g = %s
let r = %s
print nn.gelu(x)
print grad(col_sum(row_sum(nn.gelu(x) * r)), x)
print nn.rms_norm(x, g)
let gx, gg = grad(col_sum(row_sum(nn.rms_norm(x, g) * r)), x, g)
print gx
print gg
""" % (lit(X), lit(G), lit(r)))
    np.testing.assert_allclose(y1, gelu(X), rtol=1e-14)
    np.testing.assert_allclose(g1, fd(lambda x: np.sum(gelu(x) * r), X), rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(y2, rms_norm(X, G), rtol=1e-14)
    np.testing.assert_allclose(g2x, fd(lambda x: np.sum(rms_norm(x, G) * r), X), rtol=1e-6,
                               atol=1e-9)
    np.testing.assert_allclose(g2g, fd(lambda g: np.sum(rms_norm(X, g) * r), G), rtol=1e-6,
                               atol=1e-9)


@pytest.mark.parametrize("scale", [1.0, 1e4])
def test_cross_entropy_values_and_gradients(scale):
    z = RNG.standard_normal((4, 5)) * scale
    t = np.array([[1.0], [4.0], [0.0], [4.0]])
    m = np.array([[1.0], [0.0], [1.0], [1.0]])
    ce, g, cem, gm = run("""import nn
let z = %s
let t = %s
let m = %s
print nn.cross_entropy(z, t)
print grad(nn.cross_entropy(z, t), z)
print nn.cross_entropy_masked(z, t, m)
print grad(nn.cross_entropy_masked(z, t, m), z)
""" % (lit(z), lit(t), lit(m)))
    assert np.all(np.isfinite(g)) and np.all(np.isfinite(gm))
    np.testing.assert_allclose(ce, [[cross_entropy(z, t)]], rtol=1e-13)
    np.testing.assert_allclose(cem, [[cross_entropy(z, t, m)]], rtol=1e-13)
    # d/dz of the mean cross-entropy: (softmax(z) - onehot(t)) / rows
    zs = z - z.max(axis=1, keepdims=True)
    p = np.exp(zs) / np.exp(zs).sum(axis=1, keepdims=True)
    oh = np.eye(5)[t[:, 0].astype(int)]
    np.testing.assert_allclose(g, (p - oh) / 4, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(gm, (p - oh) * m / m.sum(), rtol=1e-12, atol=1e-15)


def test_cross_entropy_and_gelu_equal_torch():
    torch = pytest.importorskip("torch")
    z = RNG.standard_normal((6, 5))
    t = np.array([[1.0], [4.0], [0.0], [4.0], [2.0], [3.0]])
    ce, g, ge = run("import nn\nlet z = %s\nlet t = %s\nprint nn.cross_entropy(z, t)\n"
                    "print grad(nn.cross_entropy(z, t), z)\nprint nn.gelu(z)\n" % (lit(z), lit(t)))
    tz = torch.tensor(z, requires_grad=True)
    loss = torch.nn.functional.cross_entropy(tz, torch.tensor(t[:, 0].astype(np.int64)))
    loss.backward()
    assert ce.item() == pytest.approx(loss.item(), rel=1e-13)
    np.testing.assert_allclose(g, tz.grad.numpy(), rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(ge, torch.nn.functional.gelu(torch.tensor(z), approximate="tanh"),
                               rtol=1e-13)


def test_cross_entropy_with_minus_inf_logits_and_masked_rows_of_inf():
    """A logit of -inf on a class that is not the target (a masked-out class) adds nothing
    (PyTorch's F.cross_entropy gives a finite loss), and a row with mask 0 adds nothing to the
    loss or its gradient even with inf or nan logits: the reference is the loss written out
    over the finite rows only."""
    z = np.array([[2.0, 1.0, -np.inf], [0.5, -np.inf, 0.0], [0.3, 0.2, 0.1]])
    t = np.array([[0.0], [2.0], [1.0]])
    ce, g, cem, gm = run("""import nn
let z = [[2, 1, 0], [0.5, 0, 0], [0.3, 0.2, 0.1]] + log([[1, 1, 0], [1, 0, 1], [1, 1, 1]])
let zm = z + [[0, 0, 0], [0, 0, 0], [1, 0, 0]] / [[1, 1, 1], [1, 1, 1], [0, 0, 1]]
let t = %s
let m = [[1], [1], [0]]
print nn.cross_entropy(z, t)
print grad(nn.cross_entropy(z, t), z)
print nn.cross_entropy_masked(zm, t, m)
print grad(nn.cross_entropy_masked(zm, t, m), zm)
""" % lit(t))

    def picked(z, rows):
        out = []
        for i in rows:
            finite = z[i][np.isfinite(z[i])]
            lse = finite.max() + math.log(np.exp(finite - finite.max()).sum())
            out.append(lse - z[i, int(t[i, 0])])
        return out
    np.testing.assert_allclose(ce, [[np.mean(picked(z, range(3)))]], rtol=1e-14)
    np.testing.assert_allclose(cem, [[np.mean(picked(z, range(2)))]], rtol=1e-14)
    p = np.exp(z - z.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    oh = np.eye(3)[t[:, 0].astype(int)]
    np.testing.assert_allclose(g, (p - oh) / 3, rtol=1e-12, atol=1e-15)
    want = (p - oh) / 2
    want[2] = 0
    np.testing.assert_allclose(gm, want, rtol=1e-12, atol=1e-15)


def test_dropout_keeps_the_seeded_cells_and_scales_them():
    x = np.arange(1.0, 2001.0).reshape(40, 50)
    a, b, c = run("import nn\nlet x = reshape(%s, tensor[40x50])\nprint nn.dropout(x, 0.25, 9)\n"
                  "print nn.dropout(x, 0.25, 9)\nprint nn.dropout(x, 0.25, 10)\n"
                  % lit(x.reshape(1, -1)))
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)
    kept = a != 0
    assert abs(kept.mean() - 0.75) < 0.03
    np.testing.assert_allclose(a[kept], x[kept] / 0.75, rtol=1e-15)
    (u,) = run("print rand(tensor[40x50], 9)\n")
    np.testing.assert_array_equal(kept, u >= 0.25)   # the documented mask


# ---------------------------------------------------------------- optim

def test_adamw_equals_the_formula_and_torch():
    w0 = RNG.standard_normal((2, 3))
    grads = [RNG.standard_normal((2, 3)) for _ in range(3)]
    src = ["import optim", "var w = %s" % lit(w0), "var m = zeros(tensor[2x3])",
           "var v = zeros(tensor[2x3])"]
    for k, g in enumerate(grads):
        src.append("w, m, v = optim.adamw(w, %s, m, v, %d, 0.01, 0.9, 0.999, 1e-08, 0.0625)"
                   % (lit(g), k + 1))
    src.append("print w")
    (got,) = run("\n".join(src) + "\n")
    w, m, v = w0.copy(), np.zeros_like(w0), np.zeros_like(w0)
    for k, g in enumerate(grads, start=1):
        m = 0.9 * m + 0.1 * g
        v = 0.999 * v + 0.001 * g * g
        w = w * (1 - 0.01 * 0.0625) - 0.01 * (m / (1 - 0.9 ** k)) / (
            np.sqrt(v / (1 - 0.999 ** k)) + 1e-8)
    np.testing.assert_allclose(got, w, rtol=1e-13)
    torch = pytest.importorskip("torch")
    p = torch.nn.Parameter(torch.tensor(w0))
    opt = torch.optim.AdamW([p], lr=0.01, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0625)
    for g in grads:
        p.grad = torch.tensor(g)
        opt.step()
    np.testing.assert_allclose(got, p.detach().numpy(), rtol=1e-12)


def test_cosine_lr_and_clip_grad_norm():
    got = run("""import optim
print optim.cosine_lr(0, 0, 3, 0.0625)
print optim.cosine_lr(1, 0, 3, 0.0625)
print optim.cosine_lr(2, 0, 3, 0.0625)
print optim.cosine_lr(0, 4, 20, 1)
print optim.cosine_lr(3, 4, 20, 1)
print optim.cosine_lr(12, 4, 20, 1)
let g, n = optim.clip_grad_norm([[3, 4]], 1)
print g
print n
let h, k = optim.clip_grad_norm([[0.3, 0.4]], 1)
print h
""")
    vals = [float(x) for x in got[:6]]
    # the seed document's alphas, 0.062500 0.046875 0.015625, to the last bit C's cos gives
    assert vals[:3] == [0.0625 * 0.5 * (1 + math.cos(math.pi * k / 3)) for k in range(3)]
    assert ["%.6f" % a for a in vals[:3]] == ["0.062500", "0.046875", "0.015625"]
    assert vals[3:5] == [0.25, 1.0]
    assert vals[5] == pytest.approx(0.5 * (1 + math.cos(math.pi * 8 / 16)), rel=1e-15)
    np.testing.assert_allclose(got[6], [[3 / (5 + 1e-6), 4 / (5 + 1e-6)]], rtol=1e-15)
    assert got[7].tolist() == [[5.0]]
    assert got[8].tolist() == [[0.3, 0.4]]                 # under the ceiling: unchanged


def test_second_derivative_through_gather_and_its_scatter():
    r = RNG.standard_normal((4, 3))
    s = RNG.standard_normal((5, 3))
    (got,) = run("""let t = %s
let i = %s
let g = grad(col_sum(row_sum(gather(t, i) * gather(t, i) * %s)), t)
print grad(col_sum(row_sum(g * g * %s)), t)
""" % (lit(TABLE), lit(IDX), lit(r), lit(s)))
    rows = [4, 0, 4, 2]

    def g(t):
        out = np.zeros_like(t)
        np.add.at(out, rows, 2 * t[rows] * r)
        return out
    want = fd(lambda t: np.sum(g(t) ** 2 * s), TABLE)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("weights, row", [("[[0.2, -1, 3]]", "[0.2, -1, 3]"),
                                          ("[[1, 1], [0, 0]]", "[0, 0]"),
                                          ("[[1, 1], [1, 1]] * ([[1, 1], [0, 0]] / [[1, 1], [1, 0]])",
                                           "[0, "),
                                          # an inf weight had taken every draw, silently
                                          ("[[1, 1], [1, 1]] / [[1, 1], [0, 0]]", "[inf, inf]"),
                                          ("[[1, 2], [1, 1]] / [[0, 1], [1, 1]]", "[inf, 2]"),
                                          ("[[1e308, 1e308, 1]]", "[1e+308, 1e+308, 1]")])
def test_sample_rows_refuses_weights_that_are_not_probabilities(weights, row):
    e = error("print 1\nprint sample_rows(%s, 1)\n" % weights)
    assert e.loc.line == 2
    assert e.message.startswith("sample_rows needs weights of 0 or more with a positive, "
                                "finite sum")
    assert ("row %s is %s" % (e.message.split("row ")[-1][0], row)) in e.message, e.message


def test_clipping_by_the_global_norm():
    """clip_coef is a scalar: a gradient of any rank (a vector, a scalar parameter's) keeps its
    shape when scaled by it (found by a newcomer: a 1x1 factor had made a scalar's gradient
    1x1, which adamw then refused)."""
    g1 = np.array([[3.0, 0.0]])
    g2 = np.array([[0.0, 4.0], [0.0, 0.0]])
    a, b, c, d = run("""import optim
let g1 = %s
let g2 = %s
let g3 = [0, 0, 0]
let g4 = 0
let c = optim.clip_coef(optim.sq_norm(g1) + optim.sq_norm(g2) + optim.sq_norm(g3) + optim.sq_norm(g4), 1)
print g1 * c
print g2 * c
print g3 * c
print g4 * optim.clip_coef(reshape(optim.sq_norm(g1), scalar), 1)
""" % (lit(g1), lit(g2)))
    scale = 1 / (5 + 1e-6)
    np.testing.assert_allclose(a, g1 * scale, rtol=1e-15)
    np.testing.assert_allclose(b, g2 * scale, rtol=1e-15)
    assert c.shape == (3,) and d.shape == ()


@pytest.mark.parametrize("src, words", [
    ("print gelu([[1]])\n", "unknown function 'gelu'; it is in the standard library's nn "
                            "module: write nn.gelu(...) after import nn"),
    ("import optim\nprint adamw(1)\n", "unknown function 'adamw'; it is in the standard "
                                       "library's optim module: write optim.adamw(...)"),
    ("print cross_entropy([[1]], [[0]])\n", "write nn.cross_entropy(...) after import nn"),
])
def test_a_stdlib_verb_called_without_its_module_says_where_it_is(src, words):
    e = error(src)
    assert e.message.startswith(words) or words in e.message, e.message
    assert not e.message.endswith("after import optim after import optim")


def test_onehot_takes_the_number_of_classes_as_a_number():
    a, b = run("print onehot([[2], [0]], 3)\n"
               "let t: tensor[?x1] = reshape([[1], [0]], tensor[?x1])\nprint onehot(t, 2)\n")
    assert a.tolist() == [[0, 0, 1], [1, 0, 0]]
    assert b.tolist() == [[0, 1], [1, 0]]
    e = error("print onehot([[3]], 3)\n")
    assert "onehot's indices must be whole numbers from 0 to 2, got 3 at" in e.message


def test_floor():
    a, g = run("let x = [[-1.5, -0.5, 0, 2.7]]\nprint floor(x)\n"
               "print grad(col_sum(row_sum(floor(x) + x * 2)), x)\n")
    assert a.tolist() == [[-2.0, -1.0, 0.0, 2.0]]
    assert g.tolist() == [[2.0, 2.0, 2.0, 2.0]]          # floor's derivative is 0
    e = error("print round([[1.5]])\n")
    assert "write floor(x + 0.5)" in e.message


def test_sample_rows_of_rows_without_columns_is_a_clear_error():
    """A 2x0 matrix has rows with no weights: the weights error, not a division by zero."""
    import goat
    with pytest.raises(goat.GoatError) as e:
        goat.run_source("print sample_rows(zeros(tensor[2x0]), 1)\n")
    assert "row 0 is []" in str(e.value)


def test_where_values_and_gradients():
    """where(c, a, b) against NumPy's where (c non-zero, a NaN counting as non-zero, picks
    a), broadcasting the three; the unchosen cell's NaN or inf does not get through, in the
    value or the gradient (as c * a + (1 - c) * b lets it); the gradient against finite
    differences of the same NumPy function."""
    x = np.array([[0.0, 2.0, -1.0], [4.0, 0.5, 0.0]])
    w = np.array([[1.0, -2.0, 3.0]])
    c = np.array([[1.0], [0.0]])
    got = run("let x = %s\nlet w = %s\nlet c = %s\n"
              "print where(x > 0, log(x), 0)\n"
              "print where(c, x, w)\n"
              "print where(0 / 0, x, w)\n"
              "print grad(row_sum(col_sum(where(x > 1, w * x, w * w * log(x)))), w)\n"
              % (lit(x), lit(w), lit(c)))
    with np.errstate(divide="ignore", invalid="ignore"):
        np.testing.assert_array_equal(got[0], np.where(x > 0, np.log(x), 0.0))
        want = fd(lambda v: np.sum(np.where(x > 1, v * x, v * v * np.log(np.where(x > 1, 1, x)))),
                  w)
    np.testing.assert_array_equal(got[1], np.where(c != 0, x, w))
    np.testing.assert_array_equal(got[2], np.broadcast_to(x, (2, 3)))
    assert not np.isnan(got[0]).any()
    # the cells x <= 1 hold log(0) = -inf and log(-1) = NaN: no gradient flows from them
    # to w where x > 1; where x <= 1, 2 w log(x) is -inf or NaN, and goes to w as such
    finite = np.isfinite(want)
    np.testing.assert_allclose(got[3][finite], want[finite], rtol=1e-7)


def test_the_gradient_through_where_of_an_operand_singular_where_not_chosen():
    """As docs/language.md says (and PyTorch and JAX do): the operand not chosen gets a zero,
    which its own derivative multiplies (0 x 1/0 at x = 0, a NaN); kept finite there by a
    second where, the gradient is 1/x where x > 0 and 0 elsewhere."""
    got = run("let x = [[0, -1, 4, 0.5]]\n"
              "print grad(col_sum(row_sum(where(x > 0, log(x), 0))), x)\n"
              "print grad(col_sum(row_sum(where(x > 0, log(where(x > 0, x, 1)), 0))), x)\n"
              "print grad(col_sum(row_sum(where(x > 0, sqrt(where(x > 0, x, 1)), 0))), x)\n")
    assert np.isnan(got[0][0, 0]) and got[0][0, 2] == 0.25
    np.testing.assert_array_equal(got[1], [[0, 0, 0.25, 2]])
    np.testing.assert_allclose(got[2], [[0, 0, 0.25, 0.5 / np.sqrt(0.5)]], rtol=1e-15)


def test_where_shapes_and_errors():
    e = error("print where([[1, 0]], [[1], [2]], [[1, 2, 3]])\n")
    assert e.message == ("cannot select with shapes 2x2 and 1x3: dimensions 2 and 3 differ "
                         "and neither is 1")
    assert "where takes 3 arguments, got 2" in error("print where([[1]], [[2]])\n").message
    assert run("print where(1, [[1, 2]], 0)\n")[0].tolist() == [[1.0, 2.0]]


@pytest.mark.parametrize("bad", [1.5, -1.0, float("nan"), float("inf"), float("-inf"), 7.0,
                                 -0.0, 6.0, 1e300])
def test_a_few_indices_are_checked_as_many_are(bad):
    """Up to 32 indices on the host are checked one by one in Python (4x faster than NumPy's
    calls on a 16-token batch); the answer, and the message of a failure, are those of the
    vectorised check."""
    from goat.gpu import get_backend
    from goat.ops.builtins import _indices
    from goat.ops.registry import OpError
    be = get_backend("numpy")
    answers = []
    for size in (4, 64):                    # the Python path, the NumPy one
        idx = np.zeros((size, 1))
        idx[2, 0] = bad
        try:
            answers.append(("ok", _indices(be, idx, 7, "gather").tolist()))
        except OpError as e:
            answers.append(("error", e.message))
    assert answers[0][0] == answers[1][0]
    if answers[0][0] == "ok":
        assert answers[0][1] == answers[1][1][:4]
        assert answers[0][1][2] == int(bad)
    else:
        assert answers[0][1] == answers[1][1]
