"""grad against central finite differences, op by op, on random shapes (broadcasting and
batched cases included), and against torch.autograd when PyTorch is installed.

The forward functions here are NumPy (and PyTorch) written in the test, independently of
goat: the finite differences differentiate them, not goat.  Inputs are drawn away from the
points where an op is not differentiable (0 for abs and relu, ties for max and min, the jumps
of %), so the differences are exact to their truncation error.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import goat
from goat.ops import REGISTRY

H = 1e-6            # central differences: error ~ h**2 f''' plus rounding ~ 1e-16 / h
RTOL, ATOL = 1e-5, 1e-6


def lit(a) -> str:
    """A goat literal holding exactly the doubles of ``a``."""
    a = np.asarray(a)
    if a.ndim == 0:
        return repr(float(a))
    return "[" + ", ".join(lit(x) for x in a) + "]"


def _softplus_safe(x):
    return x


# name -> (arity, goat expression with {0} {1}, NumPy forward, torch forward, input domain)
OPS = {
    "add": (2, "{0} + {1}", np.add, lambda t, a, b: a + b, "any"),
    "subtract": (2, "{0} - {1}", np.subtract, lambda t, a, b: a - b, "any"),
    "multiply": (2, "{0} * {1}", np.multiply, lambda t, a, b: a * b, "any"),
    "divide": (2, "{0} / {1}", np.divide, lambda t, a, b: a / b, "nonzero"),
    "remainder": (2, "{0} % {1}", np.remainder, lambda t, a, b: t.remainder(a, b), "mod"),
    "maximum": (2, "maximum({0}, {1})", np.maximum, lambda t, a, b: t.maximum(a, b), "any"),
    "minimum": (2, "minimum({0}, {1})", np.minimum, lambda t, a, b: t.minimum(a, b), "any"),
    "matmul": (2, "{0} @ {1}", np.matmul, lambda t, a, b: a @ b, "any"),
    "negate": (1, "-{0}", np.negative, lambda t, a: -a, "any"),
    "exp": (1, "exp({0})", np.exp, lambda t, a: t.exp(a), "any"),
    "log": (1, "log({0})", np.log, lambda t, a: t.log(a), "positive"),
    "sqrt": (1, "sqrt({0})", np.sqrt, lambda t, a: t.sqrt(a), "positive"),
    "abs": (1, "abs({0})", np.abs, lambda t, a: t.abs(a), "nonzero"),
    "tanh": (1, "tanh({0})", np.tanh, lambda t, a: t.tanh(a), "any"),
    "square": (1, "square({0})", np.square, lambda t, a: t.square(a), "any"),
    "sin": (1, "sin({0})", np.sin, lambda t, a: t.sin(a), "any"),
    "cos": (1, "cos({0})", np.cos, lambda t, a: t.cos(a), "any"),
    "relu": (1, "relu({0})", lambda a: np.maximum(a, 0.0), lambda t, a: t.relu(a), "nonzero"),
    "sigmoid": (1, "sigmoid({0})", lambda a: 1 / (1 + np.exp(-a)), lambda t, a: t.sigmoid(a),
                "any"),
    "transpose": (1, "transpose({0})", lambda a: np.swapaxes(a, -1, -2),
                  lambda t, a: a.transpose(-1, -2), "any"),
    "reshape": (1, "reshape({0}, tensor[{target}])", None, None, "any"),
    "sum": (1, "sum({0})", np.sum, lambda t, a: a.sum(), "any"),
    "swapaxes": (1, "swapaxes({0}, 0, -1)", lambda a: np.swapaxes(a, 0, -1),
                 lambda t, a: a.transpose(0, -1), "any"),
    "mean": (1, "mean({0})", np.mean, lambda t, a: a.mean(), "any"),
    "max": (1, "max({0})", np.max, lambda t, a: t.amax(a), "any"),
    "min": (1, "min({0})", np.min, lambda t, a: t.amin(a), "any"),
}
for _kind, _np, _t in (("sum", np.sum, "sum"), ("mean", np.mean, "mean"),
                       ("max", np.max, "amax"), ("min", np.min, "amin")):
    OPS["row_" + _kind] = (1, "row_%s({0})" % _kind,
                           lambda a, f=_np: f(a, axis=-1, keepdims=True),
                           lambda t, a, f=_t: getattr(t, f)(a, dim=-1, keepdim=True), "any")
    OPS["col_" + _kind] = (1, "col_%s({0})" % _kind,
                           lambda a, f=_np: f(a, axis=-2, keepdims=True),
                           lambda t, a, f=_t: getattr(t, f)(a, dim=-2, keepdim=True), "any")

# ops that have no derivative by design, and internal ops reached only through others
NOT_DIFFERENTIATED = {"ge", "gt", "le", "lt", "eq", "ne", "logical_and", "logical_or",
                      "logical_not", "zeros", "ones", "iota", "rand", "randn", "load",
                      "stop_gradient", "bind", "sum_to", "broadcast_to", "size",
                      "onehot", "argmax_rows", "sample_rows", "floor", "argsort", "randperm",
                      # grad's own tapes for a loop (tests/test_grad_loops.py)
                      "stack_new", "stack_set", "stack_get"}
# differentiated against finite differences in tests/test_verbs.py (and narrow's, the second
# derivative through narrow_backward too, in tests/test_narrow.py)
TESTED_IN_TEST_VERBS = {"gather", "scatter_add", "where", "narrow", "narrow_backward"}
# ... in tests/test_concat.py, against PyTorch or finite differences (concat_part's, the
# second derivative, too)
TESTED_IN_TEST_CONCAT = {"concat", "concat_part"}
# ... in tests/test_subscript.py (an assignment x[i] = v), against finite differences and
# PyTorch (the second derivative too)
TESTED_IN_TEST_SUBSCRIPT = {"put"}


def test_every_op_is_tested_or_known_not_differentiable():
    assert set(REGISTRY) == (set(OPS) | NOT_DIFFERENTIATED | TESTED_IN_TEST_VERBS
                             | TESTED_IN_TEST_CONCAT | TESTED_IN_TEST_SUBSCRIPT)
    for name in OPS:
        assert REGISTRY[name].vjp is not None, name


def _values(draw, shape, domain):
    n = int(np.prod(shape))
    if domain == "positive":
        xs = draw(st.lists(st.floats(0.2, 3.0), min_size=n, max_size=n))
    elif domain == "nonzero":
        xs = [s * m for s, m in zip(draw(st.lists(st.sampled_from([-1.0, 1.0]), min_size=n,
                                                  max_size=n)),
                                    draw(st.lists(st.floats(0.1, 2.0), min_size=n, max_size=n)))]
    else:
        xs = draw(st.lists(st.floats(-2.0, 2.0), min_size=n, max_size=n))
    return np.array(xs, dtype=np.float64).reshape(shape)


def _narrowed(draw, shape):
    """A shape that broadcasts to ``shape``: some sizes made 1, some leading axes dropped."""
    out = [d if draw(st.booleans()) else 1 for d in shape]
    drop = draw(st.integers(0, len(shape)))
    return tuple(out[drop:])


@st.composite
def cases(draw, name):
    arity, template, f, _, domain = OPS[name]
    dims = st.integers(1, 3)
    if name == "matmul":
        m, k, n = draw(dims), draw(dims), draw(dims)
        batch = tuple(draw(st.lists(dims, max_size=2)))
        sa = _narrowed(draw, batch) + (m, k)
        sb = _narrowed(draw, batch) + (k, n)
        shapes = [sa, sb]
    else:
        rank = draw(st.integers(2 if name.startswith(("col_", "transpose")) else 1, 3))
        out = tuple(draw(dims) for _ in range(rank))
        if arity == 2:
            shapes = [out, out]
            k = draw(st.integers(0, 1))
            shapes[k] = _narrowed(draw, out)      # the other keeps the full shape
        else:
            shapes = [out]
    args = [_values(draw, s, domain) for s in shapes]
    if domain == "mod":
        # b away from 0, a/b away from whole numbers: the remainder is smooth there
        b = args[1]
        args[1] = np.where(np.abs(b) < 0.3, np.sign(b + 1e-9) * 0.7, b)
        q = np.broadcast_to(args[0], np.broadcast_shapes(args[0].shape, args[1].shape)) \
            / args[1]
        assume(np.all(np.abs(q - np.round(q)) > 0.05))
    if name in ("maximum", "minimum"):
        a, b = np.broadcast_arrays(*args)
        assume(np.all(np.abs(a - b) > 1e-3))
    if name.endswith(("_max", "_min")):
        ax = -1 if name.startswith("row_") else -2
        s = np.sort(args[0], axis=ax)
        assume(s.shape[ax] == 1 or np.all(np.abs(np.diff(s, axis=ax)) > 1e-3))
    if name in ("max", "min"):          # every cell: no two within finite differences' reach
        s = np.sort(args[0], axis=None)
        assume(s.size == 1 or np.all(np.diff(s) > 1e-3))
    target = None
    if name == "reshape":
        n = args[0].size
        target = draw(st.sampled_from([(n,), (1, n), (n, 1)]))
        expr = template.format("a", target="x".join(map(str, target)))
        fwd = lambda a: a.reshape(target)       # noqa: E731
    else:
        expr = template.format(*"ab"[:arity])
        fwd = f
    with np.errstate(all="ignore"):
        out = fwd(*args)
    r = _values(draw, out.shape, "any")
    return expr, args, fwd, r, target


def program(expr, args, r) -> str:
    names = "ab"[:len(args)]
    lines = ["let %s = %s" % (n, lit(a)) for n, a in zip(names, args)]
    lines.append("let r = %s" % lit(r))
    cells = r.size
    lines.append("let l = row_sum(reshape((%s) * r, tensor[1x%d]))" % (expr, cells))
    if len(args) == 1:
        lines.append("print grad(l, a)")
    else:
        lines.append("let ga, gb = grad(l, a, b)")
        lines += ["print ga", "print gb"]
    return "\n".join(lines) + "\n"


def finite_differences(fwd, args, r):
    def loss(xs):
        return float(np.sum(fwd(*xs) * r))
    out = []
    for i, a in enumerate(args):
        g = np.zeros_like(a)
        for j in range(a.size):
            plus = [x.copy() for x in args]
            minus = [x.copy() for x in args]
            plus[i].flat[j] += H
            minus[i].flat[j] -= H
            g.flat[j] = (loss(plus) - loss(minus)) / (2 * H)
        out.append(g)
    return out


def _grad(expr, args, r):
    src = program(expr, args, r)
    got = goat.run_source(src, path="grad.mg")
    assert len(got) == len(args)
    for g, a in zip(got, args):
        assert g.shape == a.shape, src
    return src, got


SETTINGS = settings(max_examples=40, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much,
                                           HealthCheck.data_too_large])


@pytest.mark.parametrize("name", sorted(OPS))
def test_grad_equals_finite_differences(name):
    @SETTINGS
    @given(cases(name))
    def check(case):
        expr, args, fwd, r, _ = case
        src, got = _grad(expr, args, r)
        for g, fd in zip(got, finite_differences(fwd, args, r)):
            np.testing.assert_allclose(g, fd, rtol=RTOL, atol=ATOL, err_msg=src)
    check()


@pytest.mark.parametrize("name", sorted(OPS))
def test_grad_equals_torch_autograd(name):
    torch = pytest.importorskip("torch")

    @SETTINGS
    @given(cases(name))
    def check(case):
        expr, args, fwd, r, target = case
        src, got = _grad(expr, args, r)
        ts = [torch.tensor(a, dtype=torch.float64, requires_grad=True) for a in args]
        if name == "reshape":
            out = ts[0].reshape(target)
        else:
            out = OPS[name][3](torch, *ts)
        (out * torch.tensor(r)).sum().backward()
        for g, t in zip(got, ts):
            np.testing.assert_allclose(g, t.grad.numpy(), rtol=1e-10, atol=1e-12, err_msg=src)
    check()


def test_max_and_min_of_every_cell_split_a_ties_gradient_as_torch_amax():
    x = np.array([[1.0, 5.0, -2.0], [5.0, 0.0, 3.0]])
    mx, mn, gmax, gmin = goat.run_source(
        "let x = %s\nprint max(x)\nprint min(x)\nprint grad(max(x), x)\n"
        "print grad(min(x + x), x)\n" % lit(x))
    assert float(mx) == 5.0 and float(mn) == -2.0
    assert gmax.tolist() == [[0, 0.5, 0], [0.5, 0, 0]]
    assert gmin.tolist() == [[0, 0, 2], [0, 0, 0]]
    torch = pytest.importorskip("torch")
    t = torch.tensor(x, requires_grad=True)
    torch.amax(t).backward()
    assert t.grad.tolist() == gmax.tolist()


def test_grad_of_maximum_and_minimum_of_a_column_and_a_vector_is_pytorchs():
    """A breaker's: maximum(a, b) of a column and a vector (a table, as NumPy broadcasts it)
    was computed, but its gradient stopped with the comparison's 'column of 3 with a vector
    of 3' error, which is for comparisons the program writes.  Against PyTorch's (ties
    split in halves)."""
    out = goat.run_source(
        "let a = [[0.5], [2.0], [1.5]]\nlet b = [1.0, 2.5, 0.2]\n"
        "print grad(sum(maximum(a, b)), a)\nprint grad(sum(maximum(a, b)), b)\n"
        "let ga, gb = grad(sum(minimum(a, b) * [[1, 2, 3]]), a, b)\nprint ga\nprint gb\n"
        "let c = [[[0.5], [2.0]]]\nprint grad(sum(minimum(c, [1.0, 2.0])), c)\n")
    want = [[[1], [2], [2]], [1, 3, 0], [[3], [2], [2]], [2, 0, 9], [[[2], [0.5]]]]
    assert [v.tolist() for v in out] == want
