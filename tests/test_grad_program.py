"""grad through the program's structure -- lets, defs (polymorphic, block-bodied), tuples,
if, loops -- and its errors.  Expected values are worked out here with NumPy (by hand-derived
formulas or central differences), independently of goat."""
from __future__ import annotations

import numpy as np
import pytest

import goat
from goat.typecheck.program import GRAD, OP

from conftest import error, run
from test_grad import lit


def fd(f, x, h=1e-6):
    """Central differences of the scalar function f at x."""
    g = np.zeros_like(x)
    for i in range(x.size):
        p, m = x.copy(), x.copy()
        p.flat[i] += h
        m.flat[i] -= h
        g.flat[i] = (f(p) - f(m)) / (2 * h)
    return g


W = np.array([[0.3, -1.2, 0.5], [0.9, 0.1, -0.4]])
X = np.array([[1.0, -2.0], [0.5, 0.25], [-1.5, 1.0], [2.0, 0.0]])


def softmax(z):
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def test_through_lets_and_a_polymorphic_def():
    src = """import nn
def loss(x: tensor[N, K], w: tensor[K, M]) = col_sum(row_sum(nn.softmax_rows(x @ w) * nn.softmax_rows(x @ w)))
let x = %s
let w = %s
let g = grad(loss(x, w), w)
print g
""" % (lit(X), lit(W))
    (got,) = run(src)
    want = fd(lambda w: np.sum(softmax(X @ w) ** 2), W)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-8)


def test_through_a_block_def_with_tuples():
    src = """def parts(x: tensor[4x2], w: tensor[2x3]) {
    let h = tanh(x @ w)
    let s = col_sum(row_sum(h * h))
    return (s, h)
}
def loss(x: tensor[4x2], w: tensor[2x3]) {
    let s, h = parts(x, w)
    return s + col_sum(row_sum(exp(h)))
}
let x = %s
let w = %s
let gx, gw = grad(loss(x, w), x, w)
print gx
print gw
""" % (lit(X), lit(W))
    gx, gw = run(src)

    def f(x, w):
        h = np.tanh(x @ w)
        return np.sum(h * h) + np.sum(np.exp(h))
    np.testing.assert_allclose(gx, fd(lambda x: f(x, W), X), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(gw, fd(lambda w: f(X, w), W), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("c", [1.0, -1.0])
def test_through_if_both_branches(c):
    src = """let w = %s
let x = %s
var h = x @ w
var extra = [[0]]
if %r > 0 {
    h = exp(h) * 0.5
    extra = col_sum(row_sum(w * w))
} else {
    h = sin(h)
}
let l = col_sum(row_sum(h * h)) + extra
print grad(l, w)
""" % (lit(W), lit(X), c)
    (got,) = run(src)

    def f(w):
        h = X @ w
        if c > 0:
            h = np.exp(h) * 0.5
            return np.sum(h * h) + np.sum(w * w)
        return np.sum(np.sin(h) ** 2)
    np.testing.assert_allclose(got, fd(f, W), rtol=1e-6, atol=1e-8)


def test_if_branch_effects_are_not_repeated_by_grad():
    src = """let w = [[2]]
var h = w
if 1 {
    print "in the branch"
    h = w * w * w
}
print grad(col_sum(row_sum(h)), w)
"""
    got = run(src)
    assert got[0] == "in the branch"
    assert len(got) == 2
    assert got[1].tolist() == [[12.0]]


W2 = np.array([[0.5, -1.0]])


@pytest.mark.parametrize("aot", [False, True])
@pytest.mark.parametrize("branch, want", [
    # a loop inside the branch whose value the derivative needs (c = 8): d/dw sum(c w) = c
    ("if 1 {\n  var c = 1\n  for i in 0..3 { c = c * 2 }\n  acc = c * w\n}", 8 + 0 * W2),
    # one if deeper
    ("if 1 {\n  if 2 > 1 {\n    var c = 1\n    for i in 0..3 { c = c * 2 }\n"
     "    acc = c * w\n  }\n}", 8 + 0 * W2),
    # in the else branch, two loops deep (c = 6): d/dw sum(c w w) = 2 c w
    ("if 0 {\n  acc = w\n} else {\n  var c = 0\n  for i in 0..2 {\n"
     "    for j in 0..3 { c = c + 1 }\n  }\n  acc = c * w * w\n}", 12 * W2),
    # through a block def with a loop, called in the branch (s = 1 + 2 + 3)
    ("if col_sum(row_sum(w)) < 0 {\n  acc = powsum(w) * w * w\n}", 12 * W2),
])
def test_through_an_if_holding_a_loop(branch, want, aot, tmp_path):
    """The derivative of an if recomputes its branch, loops included (a loop there was taken
    out as unused, and the run failed inside goat)."""
    src = ("def powsum(x: tensor[1x2]) {\n  var s = zeros(tensor[1x2])\n"
           "  for k in 1..4 { s = s + k }\n  return s\n}\n"
           "let w = %s\nvar acc = w\n%s\nsave(grad(col_sum(row_sum(acc)), w), \"g.npy\")\n"
           % (lit(W2), branch))
    if aot:
        pytest.importorskip("llvmlite")
    (tmp_path / "g.mg").write_text(src)
    from conftest import cli
    status, out, err = cli("run", *(["--aot"] if aot else []), "g.mg", cwd=str(tmp_path))
    assert (status, err) == (0, "")
    np.testing.assert_array_equal(np.load(tmp_path / "g.npy"), want)


@pytest.mark.parametrize("block, loss, want", [
    ("if 1 {\n  w *= 2\n  print v\n}", "row_sum(stop_gradient(w > 0)) * v", [[2.0]]),
    ("if 1 {\n  w *= 2\n  print v\n}", "row_sum(w > 0) * v", [[2.0]]),
    ("for i in 0..2 {\n  w *= 2\n  print \"{col_sum(row_sum(v))}\"\n}", "row_sum(w) * v",
     [[12.0]]),
])
def test_a_value_a_block_only_prints_does_not_flow_into_its_vars(block, loss, want):
    """The block prints v but computes w without it: the loss depends on w only as a
    constant, so grad with respect to v neither enters the block (a comparison, a loop) nor
    fails there."""
    got = run("var w = [[1, 2]]\nlet v = [[3]]\n%s\nprint grad(%s, v)\n" % (block, loss))
    assert got[-1].tolist() == want


def test_grad_inside_a_def_is_carried_out_per_call():
    src = """def step(w: tensor[2x3], x: tensor[4x2]) {
    let g = grad(col_sum(row_sum(tanh(x @ w))), w)
    return w - g * 0.1
}
let w = %s
let x = %s
print step(w, x)
print step(w * 2, x)
""" % (lit(W), lit(X))
    a, b = run(src)

    def g(w):
        return X.T @ (1 - np.tanh(X @ w) ** 2)
    np.testing.assert_allclose(a, W - 0.1 * g(W), rtol=1e-12)
    np.testing.assert_allclose(b, 2 * W - 0.1 * g(2 * W), rtol=1e-12)


def test_grad_in_a_training_loop_equals_numpy():
    src = """var w = %s
let x = %s
for step in 0..50 {
    let l = col_mean(row_mean((x @ w - 1) * (x @ w - 1)))
    w -= grad(l, w) * 0.05
}
print w
""" % (lit(W), lit(X))
    (got,) = run(src)
    w = W.copy()
    for _ in range(50):
        r = X @ w - 1
        w = w - 0.05 * (X.T @ (2 * r / r.size))
    np.testing.assert_allclose(got, w, rtol=1e-12)


def test_shapes_are_known_before_anything_runs():
    program = goat.check_source("""let w = zeros(tensor[3x5])
let b = zeros(tensor[1x5])
let x = load("never_read.npy", tensor[7x3])
let gw, gb = grad(col_sum(row_sum(relu(x @ w + b))), w, b)
""")
    assert program.lets["gw"].shape == (3, 5)
    assert program.lets["gb"].shape == (1, 5)


def test_equal_constants_under_different_names_are_different_values():
    got = run("""let a = [[3]]
let b = [[3]]
let z1 = zeros(tensor[2x2])
let z2 = zeros(tensor[2x2])
print grad(col_sum(row_sum(a * b)), a)
print grad(col_sum(row_sum((z1 + 1) * (z2 + 2))), z1)
""")
    assert got[0].tolist() == [[3.0]]
    assert got[1].tolist() == [[2.0, 2.0], [2.0, 2.0]]


def test_a_value_the_loss_does_not_depend_on_is_an_error():
    """Its gradient would be zero everywhere: a parameter left out of the model, or a loss
    computed before the var got its current value (a newcomer stepping by hand hits this)."""
    e = error("let w = [[1, 2]]\nlet v = [[5, 6, 7]]\n"
              "let ga, gb = grad(col_sum(row_sum(w * w)), w, v)\n")
    assert e.loc.line == 3
    assert e.message.startswith("the loss does not depend on 'v', so its gradient would be "
                                "zero everywhere")
    e = error("var w = [[1, 2]]\nlet l = col_sum(row_sum(w * w))\nw -= grad(l, w) * 0.1\n"
              "print grad(l, w)\n")
    assert e.loc.line == 4 and "computed before w got its current value" in e.message
    # a let never gets another value: not asked (a breaker's: the gradient of a linear loss,
    # a constant, differentiated again)
    e = error("let w = [[1.0]]\nlet g = grad(sum(w), w)\nprint grad(sum(g), w)\n")
    assert e.message == ("the loss does not depend on 'w', so its gradient would be zero "
                         "everywhere: w is not used in it, or only through values that do not "
                         "change with it (a gradient of a linear function of it is constant)")
    # cut off by stop_gradient: said so, not asked whether it is used at all
    for loss in ("stop_gradient(w) * v", "stop_gradient(w * w) + v", "v * stop_gradient(exp(w))"):
        e = error("let w = [[1, 2]]\nlet v = [[5, 6]]\n"
                  "print grad(col_sum(row_sum(%s)), v, w)\n" % loss)
        assert e.loc.line == 3 and e.message == ("the loss depends on 'w' only through "
                                                 "stop_gradient, so its gradient would be zero "
                                                 "everywhere")


def test_a_value_whose_only_path_has_zero_derivative_gets_zeros():
    (got,) = run("let w = [[1, 2]]\nprint grad(col_sum(row_sum(stop_gradient(w) * 3)) "
                 "+ col_sum(row_sum(w * 0)), w)\n")
    assert got.tolist() == [[0.0, 0.0]]


def test_the_total_derivative_through_a_named_intermediate():
    gw, gh = run("""let w = [[2]]
let h = w * w
let gw, gh = grad(col_sum(row_sum(h * w)), w, h)
print gw
print gh
""")
    assert gw.tolist() == [[12.0]]     # d(w^3)/dw
    assert gh.tolist() == [[2.0]]      # d(h w)/dh = w


def test_second_derivative():
    (got,) = run("""let x = [[1.5, -2]]
let g = grad(col_sum(row_sum(x * x * x)), x)
print grad(col_sum(row_sum(g)), x)
""")
    np.testing.assert_allclose(got, 6 * np.array([[1.5, -2.0]]), rtol=1e-14)


def test_second_derivative_through_relu_and_max_masks():
    (got,) = run("""let x = [[1.5, -2, 0.5]]
let g = grad(col_sum(row_sum(relu(x) * x + row_max(x) * x)), x)
print grad(col_sum(row_sum(g * g)), x)
""")
    x = np.array([1.5, -2.0, 0.5])

    def g(x):
        return (np.where(x > 0, 2 * x, 0.0) + np.max(x)
                + np.where(x == np.max(x), np.sum(x), 0.0))
    want = fd(lambda v: np.sum(g(v) ** 2), x, h=1e-7)
    np.testing.assert_allclose(got[0], want, rtol=1e-6)


def test_stop_gradient():
    (got,) = run("""let x = [[3, -1]]
print grad(col_sum(row_sum(stop_gradient(x) * x)), x)
""")
    assert got.tolist() == [[3.0, -1.0]]


def test_the_seed_of_a_loss_with_unknown_sizes():
    (got,) = run("""let x: tensor[?x2] = reshape([[1, 2]], tensor[?x2])
print grad(row_sum(x * x), x)
""")
    assert got.tolist() == [[2.0, 4.0]]


def test_unknown_sizes_broadcast_back():
    gx, gb = run("""let x: tensor[?x3] = reshape([[1, 2, 3], [4, 5, 6]], tensor[?x3])
let b: tensor[?x3] = reshape([[1, 1, 2]], tensor[?x3])
let gx, gb = grad(col_sum(row_sum(x * b)), x, b)
print gx
print gb
""")
    assert gx.tolist() == [[1.0, 1.0, 2.0], [1.0, 1.0, 2.0]]
    assert gb.tolist() == [[5.0, 7.0, 9.0]]


def test_grad_in_a_def_is_a_grad_node_until_called():
    program = goat.check_source("""def g(w: tensor[N, K]) = grad(col_sum(row_sum(w * w)), w)
""")
    body = program.defs["g"].region
    assert [n.kind for n in body.nodes if n.kind == GRAD] == [GRAD]
    program = goat.check_source("""def g(w: tensor[N, K]) = grad(col_sum(row_sum(w * w)), w)
let y = g([[1, 2]])
""")
    assert program.lets["y"].kind == OP


def test_inactive_operands_make_no_nodes():
    """A constant factor's cotangent is not made (nothing would read it)."""
    program = goat.check_source("""let w = [[1, 2]]
let c = [[3, 4]]
let g = grad(col_sum(row_sum(exp(w) * c)), w)
""")
    names = [n.op.name for n in program.main.nodes if n.kind == OP]
    # the forward pass; the sums' spread of the seed; exp(w)'s cotangent (times c) and w's
    # (times exp(w)) -- not c's (times exp(w) too), which nothing reads
    assert names == ["bind", "bind", "exp", "multiply", "row_sum", "col_sum",
                     "broadcast_to", "multiply", "multiply"]


# ---------------------------------------------------------------- errors

@pytest.mark.parametrize("src, line, words", [
    ("let w = [[1, 2]]\nlet g = grad(w * w, w)\n", 2,
     "grad needs a loss of one element, got shape 1x2; reduce it first: sum(x) for its sum, "
     "mean(x) for its mean"),
    ("let w = zeros(tensor[2x2x2])\nlet g = grad(w * w, w)\n", 2,
     "got shape 2x2x2; reduce it first: sum(x) for its sum"),
    ("let w = [[1, 2]]\nlet g = grad(col_sum(row_sum(w)), w * 2)\n", 2,
     "grad differentiates with respect to named values"),
    ("let w = [[1, 2]]\nlet g = grad(col_sum(row_sum(w)), w, w)\n", 2,
     "'w' appears twice among grad's names"),
    ("let w = [[1, 2]]\nlet g = grad(col_sum(row_sum(w)))\n", 2,
     "grad takes a loss and the names"),
    ("let w = [[1, 2]]\nlet g = grad(col_sum(row_sum((w > 1) * w)), w)\n", 2,
     "grad cannot differentiate through '>' on line 2: it has no derivative; its derivative "
     "is zero wherever it exists: write stop_gradient(...)"),
    ("let w = [[1]]\nlet g = grad(col_sum(row_sum(randn(tensor[2x2], w))), w)\n", 2,
     "grad cannot differentiate through randn on line 2: it has no derivative with respect "
     "to its argument seed"),
    ("def f(w: tensor[1x2]) = grad(w, w)\n", 1,
     "grad needs a loss of one element, got shape 1x2"),
    ("let grad = 1\nlet w = [[1]]\nprint grad(w, w)\n", 3,
     "'grad' is a value here, not a function: the let named grad on line 1 hides the built-in "
     "grad"),
])
def test_errors(src, line, words):
    e = error(src)
    assert e.loc.line == line
    assert words in e.message, e.message


def test_error_inside_a_def_names_the_call():
    e = error("""def f(w: tensor[1x1]) {
    let g = grad(col_sum(row_sum((w > 0) * w)), w)
    return g
}
let y = f([[1]])
""")
    assert e.loc.line == 2
    assert "grad cannot differentiate through '>'" in e.message


def test_a_def_calling_grad_keeps_its_parameters_apart():
    """Called with one value for two parameters, grad with respect to one parameter sees that
    parameter's uses only (as JAX's grad of a function's first argument)."""
    got = run("""def f(a: tensor[1x1], b: tensor[1x1]) = grad(col_sum(row_sum(a * b * b)), a)
let w = [[3]]
print f(w, w)
print f(w, [[2]])
""")
    assert got[0].tolist() == [[9.0]]      # b * b, not d(w^3)/dw = 27
    assert got[1].tolist() == [[4.0]]


# ---------------------------------------------------------------- found by trying to break it

def test_equal_computed_values_under_different_names_are_different_values():
    """Hash-consing makes equal computations one node; a name grad differentiates with
    respect to is a value of its own (here w1 and w2 start equal)."""
    x = np.array([[1.0, 0.0], [0.0, 1.0]])
    g1, g2, gh, ga = run("""let x = %s
var w1 = randn(tensor[2x2], 1) * 0.5
var w2 = randn(tensor[2x2], 1) * 0.5
let g1, g2 = grad(col_sum(row_sum(x @ w1 @ w2 @ [[1], [10]])), w1, w2)
print g1
print g2
let h = x * 3
print grad(col_sum(row_sum(h * h)) + col_sum(row_sum(x * 3)), h)
let a = exp(x)
let b = exp(x)
print grad(col_sum(row_sum(a + b * 10)), a)
""" % lit(x))
    (w,) = run("print randn(tensor[2x2], 1) * 0.5\n")
    v = np.array([[1.0], [10.0]])
    np.testing.assert_allclose(g1, x.T @ np.ones((2, 1)) @ (w @ v).T, rtol=1e-14)
    np.testing.assert_allclose(g2, (x @ w).T @ np.ones((2, 1)) @ v.T, rtol=1e-14)
    np.testing.assert_allclose(gh, 2 * 3 * x, rtol=1e-15)
    assert ga.tolist() == [[1.0, 1.0], [1.0, 1.0]]


def test_grad_of_a_var_a_loop_assigned_earlier():
    (got,) = run("""var w = [[1, 2]]
for i in 0..3 {
    w = w * 2
}
print grad(col_sum(row_sum(w * w)), w)
""")
    assert got.tolist() == [[16.0, 32.0]]


def test_unknown_row_counts_through_a_def_with_size_variables(tmp_path):
    x = np.random.default_rng(0).standard_normal((6, 3))
    y = np.array([[0.0], [1.0], [2.0], [1.0], [0.0], [2.0]])
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "y.npy", y)
    (got,) = goat.run_source("""import nn
let x = load("x.npy", tensor[?x3])
let y = load("y.npy", tensor[?x1])
var w = zeros(tensor[3x3])
print grad(nn.cross_entropy(x @ w, y), w)
""", path=str(tmp_path / "p.mg"))
    # at w = 0 the softmax is uniform: d/dw = x^T (1/3 - onehot(y)) / 6
    want = x.T @ (np.full((6, 3), 1 / 3) - np.eye(3)[y[:, 0].astype(int)]) / 6
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-15)


def test_a_loss_of_unknown_size_is_checked_to_be_one_element_when_it_runs(tmp_path):
    np.save(tmp_path / "x.npy", np.ones((6, 3)))
    with pytest.raises(goat.GoatError) as info:
        goat.run_source("""let x = load("x.npy", tensor[?x3])
var w = zeros(tensor[3x1])
print grad(x @ w, w)
""", path=str(tmp_path / "p.mg"))
    e = info.value
    assert e.loc.line == 3
    # the checker's own message (it had been "grad's loss (one element) must have shape 1x1,
    # got 6x1", which reads as if a scalar loss were refused, and says nothing of the fix)
    assert e.message == ("grad needs a loss of one element, got shape 6x1; reduce it first: "
                         "sum(x) for its sum, mean(x) for its mean")


def test_no_derivative_inside_a_module_names_the_module_line_and_the_call():
    e = error("import nn\nlet z = [[1, 2]]\nlet t = [[1]]\nprint grad(nn.cross_entropy(z, t), z, t)\n")
    assert e.loc.line == 4
    assert e.message.startswith("grad cannot differentiate through onehot at nn.mg:")
    assert e.message.endswith("it has no derivative with respect to its argument indices")
    assert "stop_gradient" not in e.message             # not something the user can write
    assert e.notes == ("in nn.cross_entropy, called on line 4",)


def test_the_size_limit_names_the_grad_that_passes_it_and_stops_there(monkeypatch):
    from goat.typecheck import checker
    monkeypatch.setattr(checker, "MAX_NODES", 20_000)      # the same, sooner
    lines = ["let x = [[0.5, -0.2]]", "let h0 = x"]
    for i in range(1, 301):
        lines.append("let h%d = tanh(h%d) * 1.01 + x * 0.001" % (i, i - 1))
        lines.append("let g%d = grad(col_sum(row_sum(h%d)), x)" % (i, i))
    e = error("\n".join(lines) + "\n")
    assert len(getattr(e, "errors", [e])) == 1             # one report: nothing after it
    assert e.message.startswith("the program grows past 20,000 operations at this grad")
    assert "grad(" in e.loc.source.line(e.loc.line)


def test_dropout_of_everything_is_zeros():
    (got,) = run("import nn\nprint nn.dropout([[1, -2]], 1, 3)\n")
    assert got.tolist() == [[0.0, -0.0]]


def test_a_training_loop_with_grad_frees_its_values_each_step():
    """grad's nodes are freed after their last use like any others: the evaluation's peak
    memory is the same for 10 steps as for 100 over a 400x400 weight (1.3 MB a value, some
    ten of them a step: 100 steps kept would be over 1 GB)."""
    import tracemalloc
    from goat.gpu import get_backend
    from goat.interp.evaluator import Evaluator

    def peak(steps):
        program = goat.check_source("""var w = zeros(tensor[400x400]) + 0.01
let x = iota(tensor[8x400], 1) * 0.001
for step in 0..%d {
    let loss = col_mean(row_mean(tanh(x @ w) * tanh(x @ w)))
    w -= grad(loss, w) * 0.1
}
""" % steps)
        tracemalloc.start()
        try:
            Evaluator(program, get_backend("numpy"), out=None).run()
            return tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    few, many = peak(10), peak(100)
    assert many < few * 1.2, (few, many)
    assert many < 10_000_000, many


def test_check_shapes_shows_the_gradients(tmp_path):
    from conftest import cli
    p = tmp_path / "g.mg"
    p.write_text("var w = zeros(tensor[3x2])\nlet x = [[1, 2, 3]]\n"
                 "for step in 0..2 {\n    let g = grad(col_sum(row_sum(x @ w)), w)\n"
                 "    w -= g\n}\n")
    status, out, err = cli("check", "--shapes", str(p))
    assert status == 0, err
    assert "  g : tensor[3x2]" in out.splitlines()


@pytest.mark.parametrize("src", [
    "print grad(col_sum(row_sum(where(w > 0, x, x * 2))), w)\n",
    "print grad(col_sum(row_sum(where(w, x, x * 2))), w)\n",
    "var s = [[0]]\nif col_sum(row_sum(w)) > 0 {\n    s = s + 1\n}\nprint grad(s, w)\n",
    "print grad(sum(argsort(w)), w)\n",
    "print grad(sum(argmax_rows(w) * x), w)\n",
    "print grad(sum(sample_rows(w * w, 3) * x), w)\n",
])
def test_a_loss_that_depends_on_a_name_only_through_a_condition_is_an_error(src):
    """Found by a reviewer: a loss that depends on w only through a where's condition gave a
    silent gradient of zeros (through stop_gradient it is an error), and through an if's
    condition the error said stop_gradient.  Both now say what: a condition chooses values
    and has no derivative.  With w in a chosen value too, the gradient flows as before."""
    head = "let x = [[1, 2]]\nvar w = [[0.5, -1]]\n"
    e = error(head + src)
    assert e.message == ("the loss depends on 'w' only through what chooses values (an if's or "
                         "a where's condition, a loop's bounds, the indices argsort, argmax_rows "
                         "or sample_rows give), which has no derivative, so its gradient would "
                         "be zero everywhere")
    (g,) = goat.run_source(head + "print grad(col_sum(row_sum(where(w > 0, x * w, x))), w)\n")
    assert g.tolist() == [[1, 0]]


def test_an_if_beside_the_loss_leaves_a_metric_it_assigns_alone():
    """Found by a differential tester: an if that assigns the loss's h and a metric m (built
    from a comparison) passed a cotangent of zeros to m's earlier value, so grad stopped at the
    comparison with 'no derivative', though the loss does not read m."""
    (g,) = goat.run_source("var w = [[0.5, -0.3]]\nvar h = w * 2\nvar m = h > 0\nif 1 {\n"
                           "    m = m + (h > 0)\n    h = tanh(h * w)\n}\n"
                           "print grad(col_sum(row_sum(h)), w)\n")
    w = np.array([[0.5, -0.3]])
    assert np.allclose(g, (1 - np.tanh(2 * w * w) ** 2) * 4 * w, rtol=1e-14)


def test_indices_argmax_rows_and_argsort_give_only_choose_so_grad_follows_the_values_beside():
    """argmax_rows(w) and argsort(w) are column numbers (PyTorch's integer tensors, which
    carry no gradient): grad follows w where it is a value, not through the indices --
    d/dw sum(argmax_rows(w) * w) is argmax_rows(w), as PyTorch gives it."""
    (g,) = goat.run_source("let w = [[1, 2], [5, 3]]\n"
                           "print grad(col_sum(row_sum(argmax_rows(w) * w)), w)\n")
    assert g.tolist() == [[1, 1], [0, 0]]
    torch = pytest.importorskip("torch")
    w = torch.tensor([[1.0, 2.0], [5.0, 3.0]], dtype=torch.float64, requires_grad=True)
    (torch.argmax(w, dim=-1, keepdim=True) * w).sum().backward()
    assert w.grad.tolist() == g.tolist()
