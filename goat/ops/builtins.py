"""The built-in operators and functions, one registry entry each.

Shapes in the docs: ``RxC`` is a matrix; every op also takes higher ranks as described in
LANGUAGE.md Part B1 (row-wise verbs read the trailing axis, ``col_*`` the second-to-last).
Numerics follow IEEE 754 double precision as NumPy computes it (1/0 = inf, 0/0 = nan,
log(0) = -inf, sqrt(-1) = nan); nothing here raises on a value.

Each differentiable op's ``vjp`` sits under it: ``(d, g, out, *args) -> one cotangent per
argument``, written with the emitter ``d`` of goat/autodiff/grad.py (``d.mul(g, out)`` makes
the checked node ``g * out``); ``d.unbroadcast(c, a)`` sums a cotangent back to the shape of
an operand that broadcasting widened.  The rules are the standard ones (e.g. Griewank &
Walther, *Evaluating Derivatives*, 2008, ch. 3; JAX's ``lax`` rules).
"""
from __future__ import annotations

import sys

import numpy as np

from ..typecheck.shapes import (ShapeError, broadcast, cells, format_dim, is_symbolic,
                                size_add, size_div, size_mul, format_huge, format_shape,
                                format_type, known_cells, matmul, SizeVar)
from ..aot import kernels as lower
from .registry import ZERO, Op, OpError, identity, register


def _same(s):
    return s


def _rank_at_least(name: str, k: int, what: str):
    def check(s):
        if len(s) < k:
            got = "a scalar" if len(s) == 0 else "shape %s (rank %d)" % (format_shape(s), len(s))
            raise ShapeError("%s needs %s, got %s" % (name, what, got))
    return check


# ---------------------------------------------------------------- operators

def _binary(name, symbol, verb, ufunc, doc, vjp=None, lowering=None, kernel=None,
            fresh_nan=True, evaluate=None):
    register(Op(
        name=name, arity=2, symbol=symbol, callable_by_name=False,
        signature="a %s b  (broadcasting)" % symbol,
        doc=doc,
        shape=lambda a, b, _verb=verb: broadcast(_verb, a, b),
        evaluate=evaluate or (lambda be, _u=ufunc: getattr(be.xp, _u)),
        tags=("elementwise", "operator"), vjp=vjp, lowering=lowering,
        kernel=kernel, fresh_nan=fresh_nan,
    ))


_binary("add", "+", "add", "add", "elementwise sum", kernel="{0} + {1}",
        lowering=lower.elementwise(lambda k, a, b: k.b.fadd(a, b), fresh_nan=True),
        vjp=lambda d, g, out, a, b: (d.unbroadcast(g, a), d.unbroadcast(g, b)))
_binary("subtract", "-", "subtract", "subtract", "elementwise difference", kernel="{0} - {1}",
        lowering=lower.elementwise(lambda k, a, b: k.b.fsub(a, b), fresh_nan=True),
        vjp=lambda d, g, out, a, b: (d.unbroadcast(g, a), d.unbroadcast(d.neg(g), b)))
_binary("multiply", "*", "multiply", "multiply", "elementwise (Hadamard) product",
        kernel="{0} * {1}",
        lowering=lower.elementwise(lambda k, a, b: k.b.fmul(a, b), fresh_nan=True),
        vjp=lambda d, g, out, a, b: (d.unbroadcast(d.mul(g, b), a),
                                     d.unbroadcast(d.mul(g, a), b)))
# d(a/b)/db = -a/b**2 = -(a/b)/b: the quotient already computed is reused
_binary("divide", "/", "divide", "divide",
        "elementwise IEEE 754 quotient: 1/0 = inf, -1/0 = -inf, 0/0 = nan", kernel="{0} / {1}",
        lowering=lower.elementwise(lambda k, a, b: k.b.fdiv(a, b), fresh_nan=True),
        vjp=lambda d, g, out, a, b: (d.unbroadcast(d.div(g, b), a),
                                     d.unbroadcast(d.neg(d.mul(d.div(g, b), out)), b)))

register(Op(
    name="matmul", arity=2, symbol="@", callable_by_name=False,
    signature="a @ b : MxK, KxN -> MxN",
    doc="matrix product; on rank 3 or more a batched product over the leading dimensions; "
        "the same bits whatever the machine's BLAS thread settings (the BLAS runs on one "
        "thread)",
    shape=matmul,
    evaluate=lambda be: be.matmul,
    tags=("operator",), lowering=lower.matmul,
    # d(a@b) = da@b + a@db: a gets g @ bᵀ, b gets aᵀ @ g (summed over broadcast batch axes)
    vjp=lambda d, g, out, a, b: (d.unbroadcast(d.matmul(g, d.T(b)), a),
                                 d.unbroadcast(d.matmul(d.T(a), g), b)),
))

register(Op(
    name="negate", arity=1, symbol="-", callable_by_name=False,
    signature="-x",
    doc="elementwise negation",
    shape=_same,
    evaluate=lambda be: be.xp.negative,
    tags=("elementwise", "operator"), lowering=lower.elementwise(lambda k, x: k.b.fneg(x)),
    kernel="-{0}",
    vjp=lambda d, g, out, x: (d.neg(g),),
))


# ---------------------------------------------------------------- elementwise functions

def _unary(name, doc, make, vjp, lowering, kernel=None, fresh_nan=False):
    register(Op(name=name, arity=1, signature="%s(x: S) -> S" % name, doc=doc, shape=_same,
                evaluate=make, tags=("elementwise",), vjp=vjp, lowering=lowering,
                kernel=kernel, fresh_nan=fresh_nan))


def _sign(d, x):
    """1 where x > 0, -1 where x < 0, 0 at 0 (and at NaN)."""
    return d.sub(d.mask("gt", x, d.const(0.0)), d.mask("lt", x, d.const(0.0)))


_unary("exp", "e to the power x", lambda be: be.xp.exp,
       lambda d, g, out, x: (d.mul(g, out),),
       lowering=lower.exp, kernel="exp({0})", fresh_nan=True)
_unary("log", "natural logarithm (log 0 = -inf, log of a negative = nan)", lambda be: be.xp.log,
       lambda d, g, out, x: (d.div(g, x),),
       lowering=lower.log, kernel="log({0})", fresh_nan=True)
_unary("sqrt", "square root (sqrt of a negative = nan)", lambda be: be.xp.sqrt,
       lambda d, g, out, x: (d.div(d.mul(g, d.const(0.5)), out),),
       lowering=lower.unary_intrinsic("llvm.sqrt", fresh_nan=True), kernel="sqrt({0})",
       fresh_nan=True)
# |x|' = sign(x), taken as 0 at 0 (as PyTorch and JAX do)
_unary("abs", "absolute value", lambda be: be.xp.abs,
       lambda d, g, out, x: (d.mul(g, _sign(d, x)),),
       lowering=lower.unary_intrinsic("llvm.fabs"), kernel="fabs({0})")
# (x * x)' = 2x, as PyTorch's square and pow(x, 2) take it
_unary("square", "x times x (NumPy's and PyTorch's square, x ** 2)", lambda be: be.xp.square,
       lambda d, g, out, x: (d.mul(g, d.mul(x, d.const(2.0))),),
       lowering=lower.elementwise(lambda k, x: k.b.fmul(x, x)), kernel="{0} * {0}")
_unary("tanh", "hyperbolic tangent (a NaN keeps its sign, as in C's tanh)",
       lambda be: (lambda x, _t=be.xp.tanh, _w=be.xp.where, _n=be.xp.isnan: _w(_n(x), x, _t(x))),
       lambda d, g, out, x: (d.mul(g, d.sub(d.const(1.0), d.mul(out, out))),),
       lowering=lower.tanh, kernel="isnan({0}) ? {0} : tanh({0})", fresh_nan=True)
_unary("sin", "sine (radians)", lambda be: be.xp.sin,
       lambda d, g, out, x: (d.mul(g, d.op("cos", x)),),
       lowering=lower.unary_libm("sin"), kernel="sin({0})", fresh_nan=True)
_unary("cos", "cosine (radians)", lambda be: be.xp.cos,
       lambda d, g, out, x: (d.neg(d.mul(g, d.op("sin", x))),),
       lowering=lower.unary_libm("cos"), kernel="cos({0})", fresh_nan=True)
# relu'(0) = 0, as PyTorch and JAX take it
_unary("relu", "max(x, 0), the rectified linear unit", lambda be: (lambda x, _m=be.xp.maximum: _m(x, 0.0)),
       lambda d, g, out, x: (d.mul(g, d.mask("gt", x, d.const(0.0))),),
       lowering=lower.relu, kernel="{0} <= 0 ? (T)0 : {0}")
# floor's derivative is 0 wherever it exists (JAX takes it so): nothing flows through it
_unary("floor", "the largest whole number not above x (floor(-0.5) = -1, floor(-0) = -0)",
       lambda be: be.xp.floor, lambda d, g, out, x: (ZERO,),
       lowering=lower.unary_intrinsic("llvm.floor"), kernel="floor({0})", fresh_nan=True)
_unary("sigmoid", "1 / (1 + exp(-x)), the logistic function",
       lambda be: (lambda x, _e=be.xp.exp: 1.0 / (1.0 + _e(-x))),
       lambda d, g, out, x: (d.mul(g, d.mul(out, d.sub(d.const(1.0), out))),),
       lowering=lower.sigmoid, kernel="goat_sigmoid({0})")


_PY_RELATION = {"greater_equal": float.__ge__, "greater": float.__gt__, "less_equal": float.__le__,
                "less": float.__lt__, "equal": float.__eq__, "not_equal": float.__ne__,
                "logical_and": lambda a, b: bool(a) and bool(b),
                "logical_or": lambda a, b: bool(a) or bool(b)}


def _truth_op(ufunc):
    """The evaluation of a comparison or logical op: 0/1 as float64.  On two Python floats
    (a loop's index against a number, as in `if step % 50 == 0`) plain Python compares them,
    with the same result and without NumPy's per-call cost."""
    py = _PY_RELATION[ufunc]

    def make(be):
        f = getattr(be.xp, ufunc)
        f64 = be.dtype

        def run(a, b):
            if type(a) is float and type(b) is float:
                return 1.0 if py(a, b) else 0.0
            return f(a, b).astype(f64)
        return run
    return make


def _compare_shape(a, b):
    """Broadcast, but not a column of N against a vector of N: NumPy's NxN table of every
    pair, a classic silent mistake (predictions Nx1 == labels N: an accuracy of 1/N)."""
    out = broadcast("compare", a, b)        # (shapes that do not broadcast: that error)
    for col, vec in ((a, b), (b, a)):
        # a column of N (..., N, 1) and a vector of N whose shape ends the column's without
        # its 1 ((N), (..., N)): broadcasting pairs every cell of one with every cell of the
        # other, an N axis more than either means
        if (2 <= len(col) and 1 <= len(vec) < len(col) and col[-1] == 1
                and tuple(col[-1 - len(vec):-1]) == tuple(vec)
                and ((type(vec[-1]) is int and vec[-1] > 1) or is_symbolic(vec[-1]))):
            n = format_dim(vec[-1])
            table = format_shape(out)
            if len(vec) == 1:
                raise ShapeError(
                    "comparing a column of %s (%s) with a vector of %s (%s) would give a "
                    "%s table of every pair, as NumPy broadcasts them: make both columns "
                    "(v[:, None], or reshape(v, %s)) or both vectors; for every pair, write "
                    "the vector as a row, v[None, :]" % (
                        n, format_shape(col), n, format_shape(vec), table,
                        format_type(tuple(vec) + (1,))))
            raise ShapeError(
                "comparing shape %s with shape %s (the same sizes but its last 1) would give "
                "%s, every cell of a last axis of %s against every other, as NumPy broadcasts "
                "them: make both the same shape (v[..., None], or reshape(v, %s)); for every "
                "pair, write the axis where it is meant (v[..., None, :])" % (
                    format_shape(col), format_shape(vec), table, n,
                    format_type(tuple(vec) + (1,))))
    return out


def _compare(name, relation, ufunc):
    make = _truth_op(ufunc)
    low = lower.compare(relation)
    register(Op(name=name, arity=2, symbol=relation,
                signature="%s(a, b) or a %s b -> broadcast shape" % (name, relation),
                doc="1 where a %s b, else 0 (broadcasts like +; a NaN compares unequal to "
                    "everything; a column of N against a vector of N is an error, not NumPy's "
                    "NxN table of every pair)" % relation,
                shape=_compare_shape, evaluate=make,
                tags=("elementwise", "comparison"), lowering=low,
                kernel="({0} %s {1}) ? (T)1 : (T)0" % relation))


_compare("ge", ">=", "greater_equal")
_compare("gt", ">", "greater")
_compare("le", "<=", "less_equal")
_compare("lt", "<", "less")
_compare("eq", "==", "equal")
_compare("ne", "!=", "not_equal")


def _logical(name, word, ufunc, verb, doc):
    make = _truth_op(ufunc)
    register(Op(name=name, arity=2, symbol=word, callable_by_name=False,
                signature="a %s b -> broadcast shape" % word, doc=doc,
                shape=lambda a, b, _v=verb: broadcast(_v, a, b), evaluate=make,
                tags=("elementwise", "logical", "operator"), lowering=lower.logical(word),
                kernel="({0} != 0 %s {1} != 0) ? (T)1 : (T)0" % {"and": "&&", "or": "||"}[word]))


_logical("logical_and", "and", "logical_and", "apply 'and' to",
         "1 where both a and b are non-zero, else 0 (a NaN counts as non-zero, as in C)")
_logical("logical_or", "or", "logical_or", "apply 'or' to",
         "1 where a or b (or both) is non-zero, else 0 (a NaN counts as non-zero, as in C)")
register(Op(name="logical_not", arity=1, symbol="not", callable_by_name=False,
            signature="not a -> same shape",
            doc="1 where a is 0, else 0 (a NaN counts as non-zero, as in C)", shape=_same,
            evaluate=lambda be: (lambda x, _f=be.xp.equal, _d=be.dtype: _f(x, 0.0).astype(_d)),
            tags=("elementwise", "logical", "operator"), lowering=lower.logical("not"),
            kernel="({0} == 0) ? (T)1 : (T)0"))

def _remainder(be):
    """NumPy's remainder; on two Python floats (a loop's index: `if step % 50 == 0`), Python's
    own %, whose C (CPython's float_rem) is NumPy's npy_divmod step for step -- fmod, then
    the divisor added where the signs differ, a zero given the divisor's sign -- so the same
    bits without NumPy's per-call cost; b = 0 (where Python raises) and NaNs are NumPy's."""
    f = be.xp.remainder
    if f is not np.remainder:   # a wrapper keeps goat's NaN rules: through it
        return f

    def run(a, b):
        if type(a) is float and type(b) is float and b != 0.0 and a == a and b == b:
            return a % b        # (of two NaNs NumPy keeps the second's bits, Python the first's)
        return f(a, b)
    return run


# a % b = a - b*floor(a/b): d/da = 1, d/db = -floor(a/b) = -(a - a%b)/b (almost everywhere)
_binary("remainder", "%", "take the remainder of", "remainder",
        "elementwise floor modulo, with the sign of b, as Python's and NumPy's %: "
        "7 % 3 = 1, -7 % 3 = 2, 7 % -3 = -2; a % 0 = nan",
        lowering=lower.remainder, kernel="goat_remainder({0}, {1})", fresh_nan=False,
        evaluate=_remainder,
        vjp=lambda d, g, out, a, b: (d.unbroadcast(g, a), d.unbroadcast(
            d.neg(d.mul(g, d.div(d.sub(a, out), b))), b)))

for _name, _verb, _doc in (
        ("maximum", "take the maximum of",
         "elementwise larger of a and b by IEEE 754-2019 maximum (MLIR's arith.maximumf): "
         "-0 < +0, so maximum(-0, 0) = maximum(0, -0) = 0; nan if either is nan"),
        ("minimum", "take the minimum of",
         "elementwise smaller of a and b by IEEE 754-2019 minimum (MLIR's arith.minimumf): "
         "-0 < +0, so minimum(-0, 0) = minimum(0, -0) = -0; nan if either is nan")):
    register(Op(name=_name, arity=2, signature="%s(a, b) -> broadcast shape" % _name, doc=_doc,
                shape=lambda a, b, _v=_verb: broadcast(_v, a, b),
                evaluate=lambda be, _n=_name: getattr(be, _n),
                tags=("elementwise",), lowering=lower.extremum(_name == "maximum"),
                kernel="goat_%s({0}, {1})" % _name,
                vjp=lambda d, g, out, a, b, _n=_name: _extremum_vjp(
                    d, g, out, a, b, "gt" if _n == "maximum" else "lt")))


def _where_shape(c, a, b):
    return broadcast("select with", broadcast("select with", c, a), b)


def _where(be):
    xp = be.xp
    dtype = be.dtype

    def run(c, a, b):
        r = xp.where(c != 0, a, b)
        # row-major whatever the operands' layout (NumPy would follow a transposed one), in
        # the precision (two numbers given as a and b are float64 to NumPy)
        return xp.asarray(r, dtype=dtype, order="C")
    return run


# where(c, a, b): the gradient goes to the operand chosen, cell by cell; none to c
register(Op(name="where", arity=3, params=(("c", "value"), ("a", "value"), ("b", "value")),
            signature="where(c, a, b) -> broadcast shape",
            doc="a where c is non-zero, b where c is 0, cell by cell (broadcasting the three; "
                "a NaN in c counts as non-zero, as in C), as NumPy's where: unlike "
                "c * a + (1 - c) * b, a NaN or inf in the cell not chosen does not get through "
                "(where(x > 0, log(x), 0))",
            shape=_where_shape, evaluate=_where, tags=("elementwise",), chooses=(0,),
            lowering=lower.elementwise(
                lambda k, c, a, b: k.b.select(lower._nonzero(k, c), a, b), layout=False),
            kernel="({0} != 0) ? {1} : {2}",
            vjp=lambda d, g, out, c, a, b: (
                ZERO, d.unbroadcast(d.op("where", c, g, d.const(0.0)), a),
                d.unbroadcast(d.op("where", c, d.const(0.0), g), b))))


def _extremum_vjp(d, g, out, a, b, wins):
    """maximum/minimum: the gradient goes to the operand chosen; at a tie it is split in
    halves (as PyTorch's maximum does).  The operands are compared at the result's shape (a
    column and a vector broadcast, which a comparison written in the program refuses)."""
    x, y = a, b
    if a.shape != b.shape:
        x, y = (v if v.shape == out.shape else d.expand(v, out) for v in (a, b))
    half = d.mul(d.mask("eq", x, y), d.const(0.5))
    to_a = d.add(d.mask(wins, x, y), half)
    to_b = d.add(d.mask(wins, y, x), half)
    return d.unbroadcast(d.mul(g, to_a), a), d.unbroadcast(d.mul(g, to_b), b)


# ---------------------------------------------------------------- reductions

def _reduce_vjp(kind, axis, count):
    """The vjp of a reduction along ``axis`` (-1: rows, -2: columns).  sum: the cotangent is
    spread over the reduced axis; mean: divided by its length; max/min: it goes to the cells
    equal to the result, split evenly among ties (as PyTorch's amax does)."""
    if kind == "sum":
        return lambda d, g, out, x: (d.expand(g, x),)
    if kind == "mean":
        return lambda d, g, out, x: (d.expand(d.div(g, d.size(x, axis)), x),)

    def vjp(d, g, out, x):
        hit = d.mask("eq", x, out)
        return (d.mul(hit, d.div(g, d.op(count, hit))),)
    return vjp


def _row(name, kind, doc):
    check = _rank_at_least(name, 1, "a tensor (rank 1 or more)")

    def shape(s):
        check(s)
        return tuple(s[:-1]) + (1,)
    register(Op(name=name, arity=1, signature="%s(x: RxC) -> Rx1" % name,
                doc=doc + " along each row (the last axis); the result keeps that axis as size 1",
                shape=shape, evaluate=lambda be, _k=kind: be.reducer(_k, -1),
                tags=("reduction",), vjp=_reduce_vjp(kind, -1, "row_sum"),
                lowering=lower.reduction(kind, -1)))


def _col(name, kind, doc):
    check = _rank_at_least(name, 2, "a matrix (rank 2 or more)")

    def shape(s):
        check(s)
        return tuple(s[:-2]) + (1, s[-1])
    register(Op(name=name, arity=1, signature="%s(x: RxC) -> 1xC" % name,
                doc=doc + " down each column (the second-to-last axis); the result keeps that "
                "axis as size 1",
                shape=shape, evaluate=lambda be, _k=kind: be.reducer(_k, -2),
                tags=("reduction",), vjp=_reduce_vjp(kind, -2, "col_sum"),
                lowering=lower.reduction(kind, -2)))


for _kind, _doc in (("sum", "sum"),
                    ("max", "largest value (IEEE 754-2019 maximum, as MLIR's arith.maximumf: "
                            "-0 < +0, so [-0, 0, -0] gives 0; nan if any value is nan; -inf "
                            "if there is none)"),
                    ("min", "smallest value (IEEE 754-2019 minimum, as MLIR's arith.minimumf: "
                            "-0 < +0, so [0, -0, 0] gives -0; nan if any value is nan; +inf "
                            "if there is none)"),
                    ("mean", "arithmetic mean (the sum divided by the count)")):
    _row("row_" + _kind, _kind, _doc)
    _col("col_" + _kind, _kind, _doc)


def _whole(kind):
    """sum(x), mean(x), max(x) or min(x): every cell of x reduced to a scalar -- the row
    reduction of x read as one row (its cells in row-major order), so that the sum adds in
    NumPy's order for x.sum() (pairwise over the contiguous cells) on every back end and
    compiled."""
    def evaluate(be):
        row = be.reducer(kind, -1)
        xp = be.xp
        return lambda x: row(xp.reshape(x, (1, -1))).reshape(())

    def vjp(d, g, out, x):
        if kind in ("max", "min"):      # to the cells equal to it, ties split (torch.amax)
            hit = d.mask("eq", x, out)
            return (d.mul(hit, d.div(g, d.op("sum", hit))),)
        if kind == "mean":
            count = None
            for a in range(len(x.shape)):
                n = d.size(x, a)
                count = n if count is None else d.mul(count, n)
            if count is not None:
                g = d.div(g, count)
        return (d.expand(g, x),)

    register(Op(name=kind, arity=1, signature="%s(x) -> scalar" % kind,
                doc="the %s of every cell of x, a scalar (NumPy's x.%s(); a loss to hand to "
                    "grad, whatever x's rank)%s" % (
                        {"max": "largest", "min": "smallest"}.get(kind, kind), kind,
                        "; IEEE 754-2019's, as row_%s: nan if any cell is nan; %s of no cells"
                        % (kind, "-inf" if kind == "max" else "inf")
                        if kind in ("max", "min") else ""),
                shape=lambda s: (), evaluate=evaluate, tags=("reduction",), vjp=vjp,
                lowering=lower.whole_reduction(kind)))


_whole("sum")
_whole("mean")
_whole("max")
_whole("min")


def _transpose_shape(s):
    _rank_at_least("transpose", 2, "a matrix (rank 2 or more)")(s)
    return tuple(s[:-2]) + (s[-1], s[-2])


register(Op(name="transpose", arity=1, signature="transpose(x: RxC) -> CxR",
            doc="swaps the last two dimensions", shape=_transpose_shape,
            evaluate=lambda be: (lambda x: x.swapaxes(-1, -2)),
            vjp=lambda d, g, out, x: (d.T(g),), lowering=lower.transpose))


def _swapaxes_shape(s, axis1, axis2):
    r = len(s)
    if r == 0:
        raise ShapeError("swapaxes needs a tensor of rank 1 or more, got a scalar")
    for which, axis in (("axis1", axis1), ("axis2", axis2)):
        if not -r <= axis < r:
            raise ShapeError("swapaxes's %s %s is outside %s, of rank %d (%s)"
                             % (which, format_huge(axis), format_type(s), r, _axes(r)))
    out = list(s)
    i, j = axis1 % r, axis2 % r
    out[i], out[j] = s[j], s[i]
    return tuple(out)


def _swapaxes(be, axis1, axis2):
    xp = be.xp

    def run(x):
        r = x.ndim
        i, j = sorted((axis1 % r, axis2 % r))
        if i == j:
            return x
        if (i, j) == (r - 2, r - 1):
            return x.swapaxes(-1, -2)           # (as transpose holds it: a view)
        return xp.ascontiguousarray(x.swapaxes(i, j))
    return run


register(Op(name="swapaxes", arity=3,
            params=(("x", "value"), ("axis1", "int"), ("axis2", "int")),
            signature="swapaxes(x, axis1, axis2) -> x with those two axes swapped",
            doc="x with axes axis1 and axis2 swapped (NumPy's swapaxes, PyTorch's "
                "x.transpose(axis1, axis2)): swapaxes(x, 1, 2) of a BxTxHxD is BxHxTxD, as "
                "multi-head attention takes it; the axes are whole numbers the program fixes (a "
                "negative one counts from the last)",
            shape=_swapaxes_shape, evaluate=_swapaxes, lowering=lower.swapaxes,
            vjp=lambda d, g, out, x, axis1, axis2: (
                d.op("swapaxes", g, attrs=(axis1, axis2)),)))


# ---------------------------------------------------------------- shapes and new tensors

def _static_shape(name, target):
    """A shape to create: known sizes or a def's size variables, never ``?``."""
    if any(d is None for d in target):
        raise ShapeError("%s needs every size of its shape, got %s: a ? size is known only "
                         "when the program runs" % (name, format_type(target)))
    return tuple(target)


def _writable(d):
    """A size worked out in a def's body, or None (``?``) where it is arithmetic on the
    leading sizes ``...`` stands for, which no type can write."""
    if is_symbolic(d) and any(n.startswith("...") for n in getattr(d, "names", ())):
        return None
    return d


def _factors(shape):
    """The cell count of a shape: a number, or arithmetic on a def's size variables
    (``B*T*C``); None when a dimension is ``?``."""
    n = 1
    for d in shape:
        if d is None:
            return None
        n = size_mul(n, d)
    return n


def _count(n):
    if type(n) is int:
        return "%d cell%s" % (n, "" if n == 1 else "s")
    return format_dim(n) + " cells"


def _cells_differ(src, dst) -> str:
    """Why a def's reshape of ``src`` cells to ``dst`` (arithmetic on its size variables) is
    refused: they differ for every size from 1 (64*M and 128*M: each term of the difference
    has one sign), or for some of the calls (the body is checked for all of them)."""
    diff = size_add(src, dst, -1)
    signs = {c > 0 for c in ([diff] if type(diff) is int else
                             [1] if type(diff) is SizeVar else diff.terms.values())}
    if len(signs) == 1:
        return "the numbers of cells differ for every size from 1"
    return ("the numbers of cells differ for some sizes, and a def's body must fit every "
            "call")


def _reshape_shape(s, target):
    unknown = sum(d is None for d in target)
    if unknown > 1:
        raise ShapeError("reshape's target %s may have at most one ? size (it is worked out "
                         "from the others)" % format_type(target))
    src = _factors(s)
    if unknown:
        known = _factors(tuple(d for d in target if d is not None))
        if src is None:
            return tuple(target)            # worked out when it runs
        n, k = src, known
        if type(n) is not int or type(k) is not int:
            q = size_div(n, k) if k != 0 else None
            # B*T*C over B*T: C; where the quotient is no size for every call, at run time
            return tuple(_writable(q) if d is None else d for d in target) if q is not None \
                else tuple(target)
        if k == 0 or n % k:         # the message goat run gives where it is found then
            raise ShapeError("cannot reshape %s (%s) to %s: the ? size cannot be worked out "
                             "(%s)" % (format_shape(s), _count(src), format_type(target),
                                       "the other sizes hold no cells" if k == 0 else
                                       "%d is not a multiple of %d, the product of the other sizes"
                                       % (n, k)))
        return tuple(n // k if d is None else d for d in target)
    if src is None:
        return tuple(target)                # checked when it runs
    dst = _factors(target)
    if src != dst:
        why = ("the number of cells must stay the same" if type(src) is int and type(dst) is int
               else _cells_differ(src, dst))
        raise ShapeError("cannot reshape %s (%s) to %s (%s): %s"
                         % (format_shape(s), _count(src), format_shape(target), _count(dst), why))
    return tuple(target)


def _as_array(be, x):
    """A number (a Python float or a NumPy scalar: a constant of the program, or computed from
    constants) as the back end's 0-d array: CuPy's reshape takes arrays only, and a NumPy
    scalar is a host value no device op takes."""
    if type(x) is float or isinstance(x, np.generic):
        return be.asarray(np.asarray(x))
    return x


def _reshape(be, target):
    xp_reshape = be.xp.reshape

    def reshape(x, shape):
        return xp_reshape(_as_array(be, x), shape)
    if sum(d is None for d in target) > 1:
        def run(x):
            raise OpError("cannot reshape to %s: more than one size is unknown"
                          % format_type(target))
        return run
    shape = tuple(-1 if d is None else d for d in target)
    if None not in target:
        return lambda x: reshape(x, shape)
    known = 1
    for d in target:
        if d is not None:
            known *= d

    def run(x):
        x = _as_array(be, x)
        if known == 0 or x.size % known:
            raise OpError("cannot reshape %s (%d cells) to %s: the ? size cannot be worked out "
                          "(%s)" % (format_shape(x.shape), x.size, format_type(target),
                                    "the other sizes hold no cells" if known == 0 else
                                    "%d is not a multiple of %d, the product of the other sizes"
                                    % (x.size, known)))
        return reshape(x, shape)
    return run


register(Op(name="reshape", arity=2, params=(("x", "value"), ("shape", "type")),
            signature="reshape(x: S, tensor[T]) -> T",
            doc="the same cells read in row-major order into shape T (the cell counts must "
                "be equal; one size of T may be ?, worked out from the others); NumPy's "
                "reshape in C order",
            shape=_reshape_shape, evaluate=_reshape, checks_at_run_time=False,
            tags=("shape",), vjp=lambda d, g, out, x, target: (d.reshape_like(g, x),),
            lowering=lower.VIEW))


def _fill(name, value, doc):
    register(Op(name=name, arity=1, params=(("shape", "type"),),
                signature="%s(tensor[S]) -> S" % name, doc=doc,
                shape=lambda target, _n=name: _static_shape(_n, target),
                evaluate=lambda be, target, _v=value: (
                    lambda _f=be.xp.full: _f(target, _v, dtype=be.dtype)),
                tags=("creation",), lowering=lower.fill(value)))


_fill("zeros", 0.0, "a tensor of zeros")
_fill("ones", 1.0, "a tensor of ones")


def _draw(name, method, doc, cell_flops):
    def shape(seed, target, _n=name):
        cells = 1
        for d in seed:
            if type(d) is not int:
                cells = None
                break
            cells *= d
        if cells is not None and cells != 1:
            raise ShapeError("the seed of %s must be a single number, got shape %s"
                             % (_n, format_shape(seed)))
        return _static_shape(_n, target)

    def evaluate(be, target):
        from . import rng
        xp = be.xp
        draw = getattr(rng, method)

        if method == "uniform" and be.dtype != xp.float64:
            # a draw from 1 - 2**-25 up rounds to 1.0 in float32: [0, 1) holds in every
            # precision (floor(rand(...) * N) is an index below N) with those draws as the
            # largest float32 below 1, and every other the f64 draw rounded
            below_one = xp.nextafter(xp.asarray(1, dtype=be.dtype), xp.asarray(0, dtype=be.dtype))

            def run(seed):
                return xp.minimum(be.cast(draw(xp, tuple(target),
                                               rng.check_seed(_scalar(be, seed)))), below_one)
            return run

        def run(seed):
            return be.cast(draw(xp, tuple(target), rng.check_seed(_scalar(be, seed))))
        return run
    register(Op(name=name, arity=2, params=(("shape", "type"), ("seed", "value")),
                checks_values=True, static_check=_seed_passes,
                signature="%s(tensor[S], seed) -> S" % name, doc=doc, shape=shape,
                evaluate=evaluate, tags=("creation", "random"), cell_flops=cell_flops,
                lowering=lower.draw("goat_" + {"uniform": "rand", "normal": "randn"}[method]),
                vjp=lambda d, g, out, seed, target: (None,)))


def _seed_passes(values, shapes, attrs):
    """A seed written in the program (a constant) that check_seed accepts."""
    import numpy as np
    from . import rng
    seed = values[0]
    if seed is None:
        raise ValueError("computed")
    try:
        rng.check_seed(np.asarray(seed, dtype=np.float64).reshape(()))
    except OpError as e:
        first = e
    else:
        return
    # under --dtype f32 the number is rounded first, and may pass (one beyond float32's range
    # rounds to inf, quietly: the message names the number as written)
    with np.errstate(over="ignore"):
        rounded = np.asarray(seed, dtype=np.float32).astype(np.float64).reshape(())
    try:
        rng.check_seed(rounded)
    except OpError:
        raise first from None
    raise ValueError("passes in float32")


def _indices_pass(idx, count, name):
    """Constant indices, each a whole number from 0 to count - 1 (from -count for a
    subscript's, see _rows_from; and below 2**24, which float32 holds exactly).  ValueError
    when that is not known; OpError, with the message the op gives when it runs, when some
    index is sure to fail in any precision."""
    import numpy as np
    if idx is None or type(count) is not int:
        raise ValueError("not known to pass")
    lo = _rows_from(name, count)
    def valid(a):
        return (a >= lo) & (a < count) & (a == np.floor(a))
    a = np.asarray(idx, dtype=np.float64).reshape(-1)
    whole = valid(a)
    if not np.all(whole):
        if np.all(valid(a.astype(np.float32).astype(np.float64))):   # as --dtype f32 rounds
            raise ValueError("passes in float32")
        raise OpError(_index_problem(name, count, a, whole))
    if count > 2 ** 24:
        raise ValueError("not known to pass in float32")


# how the indices of gather (and of its derivative, scatter_add) are named: "gather" as
# written, ("index", the subscripted value's shape or None) for a subscript's tensor of
# indices, x[idx], which the checker makes a gather of (a negative index counts from the end)
def _rows_from(name, count) -> int:
    """The lowest valid index: 0, or -count for a subscript's (counting from the end)."""
    return -count if type(name) is tuple else 0


def _rows_words(name) -> str:
    """'gather's indices', or what a subscript's tensor of indices takes ('axis 0 of 5x3')."""
    if type(name) is tuple:
        axis = name[2] if len(name) > 2 else 0      # ("index", shape, the subscript's axis)
        return "axis %d of %s" % (axis, name[1]) if name[1] else "axis %d" % axis
    return "%s's indices" % name


def index_text(v) -> str:
    """An index as a message shows it: Python's repr of the float, which keeps every digit
    (2.0000000000000004), without the ``.0`` of a whole number (``-1``, ``16777216``, not
    ``-1.0``), a NaN with its sign as a print shows it (``-nan``, the loop bound's message
    too); the AOT runtime's goat_index_fail writes it alike."""
    v = float(v)
    if v != v:
        from ..interp.printer import format_number
        return format_number(v)
    r = repr(v)
    return r[:-2] if r.endswith(".0") else r


def _index_problem(name, count, flat, whole) -> str:
    """The message for indices ``flat`` (NumPy, read on the host) of which ``whole`` marks the
    whole numbers from 0 (or -count, _rows_from) to count - 1: the first that is not, and its
    position."""
    import numpy as np
    k = int(np.argmin(whole))
    got = index_text(flat[k])
    if type(name) is tuple:         # a subscript's tensor of indices, x[idx]
        where = _rows_words(name)
        if count == 0:
            return "%s has no cells to index, got %s at position %d" % (where, got, k)
        return ("an index must be a whole number from %d to %d (%s has %d cell%s), got %s at "
                "position %d" % (-count, count - 1, where, count, "" if count == 1 else "s",
                                 got, k))
    if count == 0:          # not "from 0 to -1"
        return ("%s's indices point into 0 rows or classes, so none is valid; got %s at "
                "position %d" % (name, got, k))
    return ("%s's indices must be whole numbers from 0 to %d, got %s at position %d"
            % (name, count - 1, got, k))


def _scalar(be, x):
    """A one-element value as a Python float, read on the host (a bigger one is passed on
    for the message)."""
    size = getattr(x, "size", 1)
    if size == 1:
        v = be.scalar(x)
        limit = be.exact_limit(x)
        if limit is not None and v >= limit:
            raise OpError("a seed computed in float32 (--dtype f32) must be below 2**24 = %d "
                          "(float32 holds every whole number only up to it); got %s (keep "
                          "a seed made from the step small, step * 100 + layer rather than "
                          "step * 100003 + layer; or write it as a number, or run in f64)"
                          % (limit, "%.17g" % v))
        return v
    return x


_draw("rand", "uniform",
      "uniform draws on [0, 1), a pure function of (seed, cell index): SplitMix64 counters "
      "(Steele, Lea & Flood 2014), the top 53 bits times 2**-53; the same bits on every back "
      "end (see goat/ops/rng.py)",
      # 16 ns a draw on NumPy, measured (1000x1000: 0.016 s): some 500 operations at 30 GFLOP/s
      cell_flops=500.0)
_draw("randn", "normal",
      "standard normal draws, a pure function of (seed, cell index): Box-Muller (1958) on two "
      "SplitMix64 uniforms, with goat's own log and cos built from + - * / and sqrt, so every "
      "back end gives the same bits (see goat/ops/rng.py)",
      # 175 ns a draw on NumPy, measured (1000x1000: 0.175 s): some 5,000 operations
      cell_flops=5000.0)


def _axes(r) -> str:
    """The axes of a rank-r tensor, as an axis error lists them."""
    if r == 1:
        return "axis 0, or -1 counting from the last"
    return "axes 0 to %d, or -%d to -1 counting from the last" % (r - 1, r)


def _iota_shape(target, axis):
    target = _static_shape("iota", target)
    r = len(target)
    if not -r <= axis < r:
        raise ShapeError("iota's axis %s is outside %s, of rank %d (%s)"
                         % (format_huge(axis), format_type(target), r, _axes(r)))
    return target


def _iota(be, target, axis):
    xp = be.xp
    r = len(target)
    axis = axis % r

    def run():
        idx = xp.arange(target[axis], dtype=be.dtype)
        idx = idx.reshape((target[axis],) + (1,) * (r - axis - 1))
        return xp.broadcast_to(idx, tuple(target)).copy()
    return run


register(Op(name="iota", arity=2, params=(("shape", "type"), ("axis", "int")),
            signature="iota(tensor[S], axis) -> S",
            doc="each cell holds its index along `axis` (0, 1, 2, ...), as XLA's "
                "broadcasted iota; iota(tensor[3x3], 0) has rows of 0s, 1s and 2s",
            shape=_iota_shape, evaluate=_iota, tags=("creation",), lowering=lower.iota))


# ---------------------------------------------------------------- files

def _load_path(value, loc):
    from ..typecheck.checker import resolve_path
    return (resolve_path(value, loc), value)


def _load(be, path, target):
    from ..interp.npyio import read_npy
    resolved, shown = path

    def run():
        files = be.files            # the Python API's inputs (npyio.MemoryFiles), or None
        if files is None:
            return be.asarray(read_npy(resolved, tuple(target), shown))
        given = files.load(resolved, target, shown)
        if given is not None:
            return be.asarray(given)
        try:
            return be.asarray(read_npy(resolved, tuple(target), shown))
        except OpError as e:        # a key misspelled: the file read instead is not there
            raise OpError(e.message + files.missing_hint(shown, e.message)) from None
    return run


register(Op(name="load", arity=2, params=(("path", "string"), ("shape", "type")),
            signature='load("file.npy", tensor[S]) -> S',
            doc="a NumPy .npy file's array as float64 (numbers and booleans only, never "
                "pickles), checked when it loads to have shape S (a ? size takes the file's); "
                "the file name is relative to the program's folder and may hold {fields}, "
                "filled in as save fills them",
            # a name with {fields} reads their values as arguments (registry.FileName)
            shape=lambda *args: tuple(args[-1]), evaluate=_load, pure=False,
            string_attr=_load_path, tags=("file",), lowering=lower.load))


# ---------------------------------------------------------------- for derivatives

register(Op(name="stop_gradient", arity=1, signature="stop_gradient(x: S) -> S",
            doc="x itself, which grad treats as a constant (its derivative is zero), as JAX's "
                "lax.stop_gradient: for a mask such as x > 0, or a target computed from the "
                "weights",
            shape=_same, evaluate=lambda be: identity,
            vjp=lambda d, g, out, x: (ZERO,), tags=("constant",), lowering=lower.ALIAS))


def _bind_shape(x, name):
    return x


# A let or var bound to a constant: its own node, so that grad with respect to that name does
# not also see an equal constant written elsewhere (hash-consing would have made them one).
register(Op(name="bind", arity=2, params=(("x", "value"), ("name", "string")),
            callable_by_name=False, signature="(a let's own copy of a constant)",
            doc="x under a name of its own", shape=_bind_shape,
            evaluate=lambda be, name: identity,
            vjp=lambda d, g, out, x, name: (g,), lowering=lower.ALIAS))


def _sum_to_shape(x, target):
    return tuple(target)


def _dense(xp, g):
    """g, or a row-major copy of it when it is a broadcast view (a zero stride), to be summed
    over several axes: NumPy sums a view like that through its iterator's buffers, in chunks
    whose bounds follow the buffer size, an order a compiled program does not reproduce; a
    row-major array it sums in one pairwise run (goat/aot/runtime/goat_np.c, goat_np_reduce)."""
    strides = getattr(g, "strides", None)
    if strides and any(st == 0 and d > 1 for st, d in zip(strides, g.shape)):
        return xp.ascontiguousarray(g)
    return g


def _sum_to(be, target):
    xp = be.xp
    target = tuple(target)
    plans = {}                  # the input's shape -> how to sum it to the target

    def plan(shape):
        lead = len(shape) - len(target)
        axes = tuple(range(lead)) + tuple(lead + i for i, t in enumerate(target)
                                          if t == 1 and shape[lead + i] != 1)
        if lead == 0 and len(axes) == 1:            # the common case: one axis, as col_sum
            return be.reducer("sum", axes[0])
        if not be.host:
            # on a device, the back end's own reductions, an axis at a time: its kernels keep
            # goat's NaN rules (CuPy's sum gives every NaN the GPU's sign)
            steps = [be.reducer("sum", a) for a in axes]

            def device(g):
                for step in steps:
                    g = step(g)
                return g.reshape(target)
            return device
        if len(axes) == 1:
            return lambda g: xp.sum(g, axis=axes, keepdims=True).reshape(target)
        return lambda g: xp.sum(_dense(xp, g), axis=axes, keepdims=True).reshape(target)

    def run(g):
        shape = g.shape
        if shape == target:
            return g
        f = plans.get(shape)
        if f is None:
            f = plans[shape] = plan(shape)
        return f(g)
    return run


register(Op(name="sum_to", arity=2, params=(("x", "value"), ("shape", "type")),
            callable_by_name=False, signature="(sum_to(x, tensor[T]) -> T)",
            doc="x summed over the axes that broadcasting added or widened to reach its shape "
                "from T: the reverse of broadcasting, for derivatives",
            shape=_sum_to_shape, evaluate=_sum_to, lowering=lower.sum_to,
            vjp=lambda d, g, out, x, target: (d.expand(g, x),)))


def _broadcast_to(be, target, what=None):
    xp = be.xp
    target = tuple(target)
    cells = 1
    for d in target:
        cells *= d
    if cells > 65536 or not be.host:    # a view: no copy of a large array (on a device,
        # g * 1 would give a NaN the GPU's sign; a number is made an array first)
        return lambda g: g if getattr(g, "shape", ()) == target else xp.broadcast_to(
            _as_array(be, g), target)
    one = xp.ones(target, dtype=be.dtype)   # g * 1 is g exactly, and a small product is faster than the
                                # view broadcast_to builds
    # (a scalar may be a Python float: the interpreter's one-number values)
    return lambda g: g if getattr(g, "shape", ()) == target else g * one


def _broadcast_to_shape(x, target, what=None):
    """broadcast_to's shape rule: x's sizes, aligned from the last, are 1 or T's.  ``what``:
    (a var's name, the axes its assignment x[...] = v keeps), for the assignment's words
    (goat/typecheck/checker.py: _store)."""
    if len(x) <= len(target) and all(
            a == 1 or a == b or a is None or b is None for a, b in zip(x[::-1], target[::-1])):
        return tuple(target)
    if what is None:
        raise ShapeError("cannot broadcast %s to %s" % (format_shape(x), format_shape(target)))
    name, kept = what[:2]           # (a third item: the whole of a params member, p.w = v)
    raise ShapeError("cannot assign a value of shape %s to %s, of shape %s: the value's "
                     "shape must be that one, or broadcast to it"
                     % (format_shape(tuple(x[a] for a in kept)),
                        "member " + name if len(what) > 2 else name + "[...]",
                        format_shape(tuple(target[a] for a in kept))))


register(Op(name="broadcast_to", arity=2, params=(("x", "value"), ("shape", "type")),
            callable_by_name=False, signature="(broadcast_to(x, tensor[T]) -> T)",
            doc="x broadcast to shape T (as NumPy's broadcast_to, computed as x * 1), for "
                "derivatives and assignments to subscripts",
            shape=_broadcast_to_shape, evaluate=_broadcast_to, lowering=lower.broadcast_to,
            vjp=lambda d, g, out, x, target, *what: (d.unbroadcast(g, x),)))


def _dim_size(be, axis):
    const = be.constant
    return lambda x: const(float(x.shape[axis]))


def _size_shape(x, axis):
    r = len(x)
    if r == 0:
        raise ShapeError("size needs a tensor of rank 1 or more, got a scalar (which has no "
                         "axes)")
    if not -r <= axis < r:
        raise ShapeError("size's axis %s is outside %s, of rank %d (%s)"
                         % (format_huge(axis), format_type(x), r, _axes(r)))
    return ()


def _size_value(shapes, attrs):
    """size's value when the shape is known before the run (a let may then hold it as a
    size, a slice's bound, an axis); None when it is known only then (a ? size, or a def's
    size variable, whose every call has its own)."""
    d = shapes[0][attrs[0]]
    return float(d) if type(d) is int else None


register(Op(name="size", arity=2, params=(("x", "value"), ("axis", "int")),
            signature="size(x, axis) -> scalar",
            doc="the number of cells of x along axis, as a number (PyTorch's x.size(axis), "
                "NumPy's x.shape[axis]): known before the run when the shape is, else read "
                "when it runs (a loop's bound over a def's size variable, for t in "
                "0..size(x, 1))",
            shape=_size_shape, evaluate=_dim_size, static_value=_size_value,
            vjp=lambda d, g, out, x, axis: (ZERO,), tags=("constant",),
            lowering=lower.dim_size))


# ---------------------------------------------------------------- grad through a loop
# A loop's backward pass (goat/autodiff/grad.py, _Pass.loop) runs the loop again keeping the
# carried values each iteration starts from, rows of a tape, then runs backwards reading them.
# The tape is written in place (goat run, a GPU; a compiled program too, when the loop's
# state alone holds it: goat_exec's UPDATE step): it is grad's own value, made fresh for each
# loop (its ``id`` attribute keeps two tapes from being shared), whose rows are each written
# before they are read.  They
# have no derivative: a gradient taken through a loop is not differentiated again (a second
# derivative through a loop is an error, _Pass._no_derivative).

def _taken_cost(node) -> tuple:
    """(flops, bytes) of an op that takes part of its first operand (gather's rows, narrow's
    slice) for auto's estimate: the cells taken, read and written, and gather's indices --
    not the whole table (found by a newcomer: a batch of a million-row table had been costed
    as the table, 16 s where the run took 0.26)."""
    rest = sum(known_cells(a.shape) for a in node.args[1:node.op.n_values]
               if node.op.name == "gather")
    return 0.0, 16.0 * known_cells(node.shape) + 8.0 * rest


def _spread_cost(node) -> tuple:
    """(flops, bytes) of a derivative that spreads a part into zeros (scatter_add,
    narrow_backward): the zeros written, the part read and added, the indices read."""
    g = node.args[0]
    rest = sum(known_cells(a.shape) for a in node.args[1:node.op.n_values]
               if node.op.name == "scatter_add")
    return float(known_cells(g.shape)), (8.0 * known_cells(node.shape)
                                          + 16.0 * known_cells(g.shape) + 8.0 * rest)


def _row_cost(node) -> tuple:
    """(flops, bytes) of a tape op for auto's estimate: one row written or read (the tape is
    written in place, one row an iteration), not the whole tape."""
    return 0.0, 16.0 * known_cells(node.shape[1:] if node.op.name != "stack_get"
                                   else node.shape)


# the most bytes of tapes nothing holds that a back end keeps to give again (a run's tapes,
# of its several loops, are given again to the loops that come after, not each kept apart)
_SPARE_TAPE_BYTES = 256 * 2 ** 20


def _stack_new(be, rows, uid):
    """A tape: zeros the first time; after that, an array of the same shape that an earlier
    tape of the run was given and nothing holds any more (the grad that read it is done),
    kept by the back end (up to 256 MiB of them) -- a new array's pages cost a fault each at
    their first write, which made writing a tape ten times slower than writing into one
    already touched.  (The rows are all written, each by its iteration, before the backward
    steps read them: a tape given again keeps old rows that are never read.)"""
    xp = be.xp
    getrefcount = sys.getrefcount
    pool = be.__dict__.setdefault("tapes", [])

    def run(count, like):
        n = int(be.scalar(count))
        # (a scalar may be a Python float: a loop's counter)
        shape = (max(n, 0),) + tuple(getattr(like, "shape", ()))
        for old in pool:
            # (the pool's, old's and getrefcount's own: no one else's)
            if old.shape == shape and getrefcount(old) <= 3:
                return old
        out = xp.zeros(shape, dtype=be.dtype)
        pool.append(out)
        spare = 0
        for k in range(len(pool) - 1, -1, -1):      # the newest spare ones are kept
            old = pool[k]
            if old is not out and getrefcount(old) <= 3:
                spare += old.nbytes
                if spare > _SPARE_TAPE_BYTES:
                    del pool[k]
            del old
        return out
    return run


def _stack_set(be, uid):
    def run(tape, row, x):
        tape[int(be.scalar(row))] = x
        return tape
    return run


def _stack_get(be, uid):
    xp = be.xp
    return lambda tape, row: xp.array(tape[int(be.scalar(row))], copy=True)


_TAPED = {}


def taped(op: Op) -> Op:
    """``op``'s value kept on a tape by the loop that computed it (grad's backward steps read
    it rather than compute it again, goat/autodiff/grad.py: _tape_residuals): the op
    ``taped_NAME(tape, row, *op's values, *op's attributes)``, whose value is the tape's row
    ``row`` (its other arguments, the values ``op`` was computed from, are not read), and
    whose derivative is ``op``'s with respect to those values -- so that a gradient taken
    through the loop can be differentiated again, through ``op``, as when the backward
    steps computed it.  Made from ``op``'s registry entry (one for each op, on first use);
    not a name a program calls."""
    made = _TAPED.get(op.name)
    if made is not None:
        return made
    n = op.n_values
    inner_vjp = op.vjp

    def vjp(d, g, out, tape, row, *rest):
        if inner_vjp is None:
            return (ZERO, ZERO) + (None,) * n
        return (ZERO, ZERO) + tuple(inner_vjp(d, g, out, *rest))

    def evaluate(be, *attrs):
        xp = be.xp
        return lambda tape, row, *args: xp.array(tape[int(be.scalar(row))], copy=True)
    made = Op(name="taped_" + op.name, arity=op.arity + 2,
              params=(("tape", "value"), ("row", "value")) + tuple(op.params),
              callable_by_name=False,
              signature="(taped_%s(tape: NxS, row, ...) -> S)" % op.name,
              doc="%s's value, kept on a tape by the loop that computed it, for grad" % op.name,
              shape=lambda tape, row, *rest: tuple(tape[1:]),
              evaluate=evaluate, vjp=vjp, tags=("tape",),
              cost=lambda node: (0.0, 16.0 * known_cells(node.shape)),
              lowering=lower.stack_get)
    _TAPED[op.name] = made
    return made


register(Op(name="stack_new", arity=4,
            params=(("count", "value"), ("like", "value"), ("rows", "int"), ("id", "int")),
            callable_by_name=False, signature="(stack_new(count, like: S, rows, id) -> NxS)",
            doc="a tape of count rows of zeros, each of like's shape, for grad through a loop "
                "(rows: count when the program's own numbers fix it, else -1)",
            shape=lambda count, like, rows, uid: (rows if rows >= 0 else None,) + tuple(like),
            evaluate=_stack_new, cost=_row_cost, tags=("tape",),
            lowering=lower.stack_new))
register(Op(name="stack_set", arity=4,
            params=(("tape", "value"), ("row", "value"), ("x", "value"), ("id", "int")),
            callable_by_name=False, signature="(stack_set(tape: NxS, row, x: S, id) -> NxS)",
            doc="the tape with its row `row` (from 0) set to x, for grad through a loop",
            shape=lambda tape, row, x, uid: tuple(tape), evaluate=_stack_set, cost=_row_cost,
            tags=("tape",),
            lowering=lower.stack_set))
register(Op(name="stack_get", arity=3,
            params=(("tape", "value"), ("row", "value"), ("id", "int")),
            callable_by_name=False, signature="(stack_get(tape: NxS, row, id) -> S)",
            doc="row `row` (from 0) of the tape, for grad through a loop",
            shape=lambda tape, row, uid: tuple(tape[1:]), evaluate=_stack_get, cost=_row_cost,
            tags=("tape",),
            lowering=lower.stack_get))


# ---------------------------------------------------------------- the trainer's verbs

def _indices(be, idx, count, name):
    """``idx`` (a column of class or token numbers, last axis 1) as integers, each checked to
    be a whole number from 0 to count-1 (OpError naming the first that is not; from -count,
    counting from the end, for a subscript's: see _rows_from).  The check is the back end's
    :meth:`~goat.gpu.xp_backend.XpBackend.require`: on the host at once; on a GPU at the next
    host read, the indices clamped to 0 meanwhile, so that the device is not made to wait at
    every lookup."""
    xp = be.xp
    lo = _rows_from(name, count)
    flat = idx.reshape(-1) if hasattr(idx, "reshape") else xp.full((1,), idx, dtype=be.dtype)
    if type(flat) is np.ndarray and flat.size <= 32 and count <= 2 ** 24:
        # a few indices on the host (a batch's tokens at one time step): checked one by one
        # in Python, several times faster than NumPy's calls on arrays this small
        values = flat.tolist()
        for v in values:
            if not (lo <= v < count and v == int(v)):
                break
        else:
            if lo < 0 and any(v < 0 for v in values):
                return np.array([v + count if v < 0 else v for v in values], dtype=np.intp)
            return flat.astype(np.intp)
    whole = (flat >= lo) & (flat < count) & (flat == xp.floor(flat))
    ok = whole
    if be.dtype_name == "f32" and count > 2 ** 24:
        # float32 holds every whole number only up to 2**24: 2**24 + 1 is stored as 2**24, so
        # a larger index may be a neighbour's, rounded; refused rather than read wrongly
        ok = whole & (xp.abs(flat) < 2 ** 24)

    def fail():
        if not be.scalar(xp.all(whole)):
            raise OpError(_index_problem(name, count, be.to_numpy(flat), be.to_numpy(whole)))
        k = int(be.scalar(xp.argmax(xp.abs(flat) >= 2 ** 24)))
        raise OpError("%s in float32 (--dtype f32) must be below 2**24 = %d (float32 "
                      "holds every whole number only up to it), got %s at position %d (run in "
                      "f64)" % ("an index into " + _rows_words(name) if lo else
                                _rows_words(name), 2 ** 24, index_text(be.to_numpy(flat)[k]), k))

    if count == 0 and flat.size:
        # none is valid, whatever the values: fail here, without reading them from a device,
        # after any check held before this one (writing a one-hot row of 0 columns on a GPU
        # is no safe stand-in)
        be.settle()
        fail()
    rows = xp.where(flat < 0, flat + count, flat) if lo < 0 else flat   # from the end
    if be.require(xp.all(ok), fail):
        return xp.where(ok, rows, 0).astype(xp.intp)    # safe to run until the check is read
    return rows.astype(xp.intp)


def _column_of_indices(name, s):
    if len(s) < 1 or s[-1] not in (1, None):
        raise ShapeError("%s's indices must be a column (last size 1), such as Nx1; got %s"
                         % (name, "a scalar" if not s else format_shape(s)))


def _gather_shape(table, idx, what="gather"):
    if not table:
        raise ShapeError("gather's table must have rows, a tensor of rank 1 or more (VxC: a "
                         "row per token), got a scalar")
    _column_of_indices("gather", idx)
    return tuple(idx[:-1]) + tuple(table[1:])


# gather's and scatter_add's optional attribute (after their own): how their indices are
# named, "gather" as written or a subscript's ("index", shape), see _rows_words
def _gather(be, what="gather"):
    def run(table, idx):
        i = _indices(be, idx, table.shape[0], what)
        return table[i].reshape(tuple(idx.shape[:-1]) + tuple(table.shape[1:]))
    return run


register(Op(name="gather", checks_values=True,
            static_check=lambda values, shapes, attrs: _indices_pass(
                values[1], shapes[0][0], attrs[0] if attrs else "gather"),
            arity=2, params=(("table", "value"), ("indices", "value")),
            signature="gather(table: VxC, indices: Nx1) -> NxC",
            doc="row indices[i] of table for each i: an embedding lookup (NumPy's take along "
                "axis 0; a table of any rank, VxS, gives NxS); the indices must be whole "
                "numbers from 0 to V-1, checked when it runs "
                "(x[indices], which the checker makes a gather of, also takes -V to -1, "
                "counting from the end)",
            shape=_gather_shape, evaluate=_gather, lowering=lower.gather,
            cost=_taken_cost,
            # the table's cotangent: each row's gradient added where it was read
            vjp=lambda d, g, out, table, idx, *what: (
                d.b.op(REGISTRY["scatter_add"], (g, idx), d.loc,
                       (_target_of(table),) + tuple(what), shape=table.shape, check=False),
                None)))


def _target_of(x):
    from ..autodiff.grad import target_of
    return target_of(x)


def _scatter_add(be, target, what="gather"):
    xp = be.xp
    target = tuple(target)

    def run(g, idx):
        i = _indices(be, idx, target[0], what)
        out = xp.zeros(target, dtype=be.dtype)
        if out.size:                # (a table of no columns: nothing to add, no -1 to work out)
            row = cells(target[1:])     # (a table of any rank: a matrix, a row per index)
            be.add_at(out.reshape(target[0], row), i, g.reshape(-1, row))
        return out
    return run


register(Op(name="scatter_add", checks_values=True,
            arity=3,
            params=(("x", "value"), ("indices", "value"), ("shape", "type")),
            callable_by_name=False, signature="(scatter_add(x: NxC, indices: Nx1, tensor[VxC]))",
            doc="a VxC matrix of zeros with x's rows added at rows indices: gather's derivative "
                "(a table VxS of any rank too, x then NxS)",
            shape=lambda x, idx, target, *what: tuple(target), evaluate=_scatter_add,
            cost=_spread_cost,
            lowering=lower.scatter_add,
            vjp=lambda d, g, out, x, idx, target, *what: (
                d.b.op(REGISTRY["gather"], (g, idx), d.loc, tuple(what)), None)))

from .registry import REGISTRY  # noqa: E402  (the vjp above looks scatter_add up)


# ---------------------------------------------------------------- narrow (a dynamic slice)

# narrow's optional third attribute: how its errors name what it takes -- None for narrow as
# written, "index" or "slice" for a subscript the checker made of it (x[i], x[a:b])
def _is_index(what) -> bool:
    """Does narrow's ``what`` say it takes a subscript's index (which may be negative)?"""
    return what == "index" or (type(what) is tuple and what[0] == "index")


def _start_words(what, n, length, axis, shape) -> tuple:
    """(what the start is called, the parenthesis after 'from 0 to N') in narrow's errors;
    ``what`` may be a pair, the word and the shape to name (the subscripted value's, where
    an assignment x[i] = v spreads a part of another shape)."""
    if type(what) is tuple:
        what, shape = what
    cells_ = "%d cell%s" % (n, "" if n == 1 else "s")
    if what == "index":
        return "an index", "axis %d of %s has %s" % (axis, shape, cells_)
    if what == "slice":
        return "a slice's start", "axis %d of %s has %s, the slice takes %d" % (
            axis, shape, cells_, length)
    if what == "span":          # a slice with a step: the cells from its start to its end
        return "a slice's start", "axis %d of %s has %s, the slice runs over %d" % (
            axis, shape, cells_, length)
    return "narrow's start", "the axis has %s, the length is %d" % (cells_, length)


def _narrow_shape(x, start, axis, length, what=None):
    r = len(x)
    if r == 0:
        raise ShapeError("narrow needs a tensor of rank 1 or more, got a scalar")
    if not -r <= axis < r:
        raise ShapeError("narrow's axis %s is outside %s, of rank %d (%s)"
                         % (format_huge(axis), format_type(x), r, _axes(r)))
    n = cells(start)
    if n is not None and n != 1:
        raise ShapeError("narrow's start must be a single number, got shape %s"
                         % format_shape(start))
    if type(length) is int and length < 0:
        raise ShapeError("narrow's length must be a whole number, 0 or more, got %s"
                         % format_huge(length))
    n = x[axis % r]
    if type(n) is int and type(length) is int and length > n:
        raise ShapeError(_narrow_too_long(length, n, axis % r, format_shape(x), what))
    out = list(x)
    out[axis % r] = length
    return tuple(out)


def _narrow_too_long(length, n, axis, shape, what=None) -> str:
    if type(what) is tuple:
        what, shape = what
    if what == "slice":
        return ("the slice of %d cell%s is longer than axis %d of %s, which has %d"
                % (length, "" if length == 1 else "s", axis, shape, n))
    if what == "span":
        return ("the slice runs over %d cell%s, more than axis %d of %s has (%d)"
                % (length, "" if length == 1 else "s", axis, shape, n))
    if what == "index":
        return "axis %d of %s has no cells to index" % (axis, shape)
    return ("narrow's length %s is more than %d, the size of axis %d of %s"
            % (format_huge(length), n, axis, shape))


def _narrow_start(v, n, length, axis, shape, exact=None, what=None) -> int:
    """The start of a narrow of ``length`` cells out of the ``n`` of ``axis`` of ``shape``
    (its text) as an int, or OpError: a length of at most n, and a whole number from 0 to
    n - length (below ``exact``, the whole numbers float32 holds, when given); ``what`` words
    the errors for a subscript (see _start_words)."""
    if length > n:
        raise OpError(_narrow_too_long(length, n, axis, shape, what))
    lo = -n if _is_index(what) else 0       # an index counts from the end when negative
    if not (lo <= v <= n - length and v == int(v)):
        thing, detail = _start_words(what, n, length, axis, shape)
        raise OpError("%s must be a whole number from %d to %d (%s), got %s"
                      % (thing, lo, n - length, detail, index_text(v)))
    if v < 0:
        v += n
    if exact is not None and v >= exact:
        raise OpError("%s in float32 (--dtype f32) must be below 2**24 = %d "
                      "(float32 holds every whole number only up to it), got %s (run in f64)"
                      % (_start_words(what, n, length, axis, shape)[0], exact, index_text(v)))
    return int(v)


def _narrow_index(x_rank, axis, s, length):
    return (slice(None),) * (axis % x_rank) + (slice(s, s + length),)


def _narrow_run_start(be, start, shape, axis, length, what=None) -> int:
    """narrow's start, read on the host and checked against the actual ``shape``."""
    ax = axis % len(shape)
    n = shape[ax]
    v = be.scalar(start)
    if n <= 2 ** 24 and 0 <= v <= n - length and v == int(v):
        return int(v)               # (the usual start: no message made for it)
    exact = be.exact_limit(start) if n > 2 ** 24 else None
    return _narrow_start(v, n, length, ax, "x".join(map(str, shape)), exact,
                         what)


def _narrow(be, axis, length, what=None):
    def run(x, start):
        s = _narrow_run_start(be, start, x.shape, axis, length, what)
        return x[_narrow_index(x.ndim, axis, s, length)].copy()
    return run


def _narrow_static(values, shapes, attrs):
    """A start written in the program: one that is not a whole number from 0 is sure to fail;
    against a size known before the run (a call of a def too), so is one past its end."""
    start = values[1]
    axis, length = attrs[:2]
    what = attrs[2] if len(attrs) > 2 else None
    shape = shapes[0]
    n = shape[axis % len(shape)]
    if type(length) is not int:         # a def's slice of a size variable's length, x[:, 0:L]
        raise ValueError("its length is each call's")
    if type(n) is int and length > n:
        raise OpError(_narrow_too_long(length, n, axis % len(shape), format_shape(shape), what))
    if start is None:
        raise ValueError("known when it runs")
    v = float(np.asarray(start, dtype=np.float64).reshape(()))
    if type(n) is not int:
        if not ((v >= 0 or _is_index(what)) and v == int(v)):
            raise OpError("%s must be a whole number from 0, got %s"
                          % (_start_words(what, 0, length, 0, "")[0], index_text(v)))
        raise ValueError("known when it runs")
    _narrow_start(v, n, length, axis % len(shape), format_shape(shape), what=what)


def _put_static(values, shapes, attrs):
    """put's start, as narrow's: the cells it writes are those a narrow of v's length there
    would take (x[k * 2:k * 2 + 2] = v, checked over a loop's indices before the run)."""
    x, v = shapes[0], shapes[1]
    axis = attrs[0]
    if not x or len(v) != len(x):
        raise ValueError("not a put of its own shape")
    return _narrow_static([None, values[2]], [x], (axis, v[axis % len(x)]) + tuple(attrs[1:]))


def _narrow_backward(be, axis, target, what=None):
    xp = be.xp
    target = tuple(target)

    def run(g, start):
        out = xp.zeros(target, dtype=be.dtype)
        length = g.shape[axis % len(target)]
        s = _narrow_run_start(be, start, target, axis, length, what)
        out[_narrow_index(len(target), axis, s, length)] = g
        return out
    return run


# checks_at_run_time: its shape rule runs again for a def's call (length <= N, N a size
# variable, is known only then) and when it runs (a ? size)
register(Op(name="narrow", checks_values=True, static_check=_narrow_static,
            checks_at_run_time=True, size_params=("length",),
            arity=4, params=(("x", "value"), ("axis", "int"), ("start", "value"),
                             ("length", "int")),
            signature="narrow(x, axis, start, length) -> x's shape, length cells on axis",
            doc="the cells start to start + length - 1 along axis (PyTorch's narrow, NumPy's "
                "x[start:start + length] on that axis): axis and length are whole numbers the "
                "program fixes, start a number it may compute (a batch's first row, k * B), "
                "from 0 to the axis's size - length, checked when it runs",
            shape=_narrow_shape, evaluate=_narrow, lowering=lower.narrow,
            cost=_taken_cost,
            vjp=lambda d, g, out, x, start, axis, length, *what: (
                d.b.op(REGISTRY["narrow_backward"], (g, start), d.loc,
                       (axis, _target_of(x)) + tuple(what), shape=x.shape, check=False),
                None)))

register(Op(name="narrow_backward", checks_values=True, callable_by_name=False,
            arity=4, params=(("g", "value"), ("start", "value"), ("axis", "int"),
                             ("shape", "type")),
            signature="(narrow_backward(g, start, axis, tensor[S]))",
            doc="zeros of shape S with g at cells start to start + length - 1 along axis: "
                "narrow's derivative",
            shape=lambda g, start, axis, target, *what: tuple(target),
            evaluate=_narrow_backward, cost=_spread_cost,
            lowering=lower.narrow_backward,
            vjp=lambda d, g, out, x, start, axis, target, *what: (
                d.op("narrow", g, start, attrs=(axis, _length_of(x, axis % len(x.shape)))
                     + tuple(what)), None)))


def _put_shape(x, v, start, axis, what=None):
    """put's shape rule: v is x's shape but for its length along axis (at most x's)."""
    r = len(x)
    ax = axis % r
    if len(v) != r or any(not _same_dim(a, b) for k, (a, b) in enumerate(zip(x, v))
                          if k != ax):
        raise ShapeError("cannot put a part of shape %s into %s along axis %d: the other "
                         "sizes must be equal" % (format_shape(v), format_shape(x), ax))
    n, length = x[ax], v[ax]
    if type(n) is int and type(length) is int and length > n:
        raise ShapeError(_narrow_too_long(length, n, ax, format_shape(x), what))
    return tuple(x)


def _put_cost(node) -> tuple:
    """(flops, bytes) of put for auto's estimate: x copied (its cells read and written; in
    place on the host, where nothing else reads x, only v's), v's cells read and written."""
    x, v = node.args[0], node.args[1]
    return 0.0, 16.0 * known_cells(x.shape) + 16.0 * known_cells(v.shape)


def _same_dim(a, b) -> bool:
    return a == b or a is None or b is None


def _put(be, axis, what=None, sole=None):
    def run(x, v, start):
        length = v.shape[axis % x.ndim]
        s = _narrow_run_start(be, start, x.shape, axis, length, what)
        out = x if sole is not None and sole(x) else x.copy()
        out[_narrow_index(x.ndim, axis, s, length)] = v
        return out
    return run


# the reference count _sole sees for an array that nothing but put's call holds, measured
# once through the evaluator's own calls (goat/interp/evaluator.py: _sole_refs): Python
# versions count a call's operands differently (3.10 one more than 3.11 to 3.13; 3.14 borrows
# some); 0 where a holder more cannot be told apart, and put never writes in place
SOLE_REFS = [None]


def _sole(x) -> bool:
    """Is NumPy array ``x`` held by nothing but the caller's argument (the evaluator's slot
    emptied before the call, no view of it, no name, no constant of the program), its own
    cells, writable?  Then put may write into it."""
    limit = SOLE_REFS[0]
    return bool(limit) and (type(x) is np.ndarray and x.base is None and x.flags.writeable
                            and x.flags.c_contiguous and sys.getrefcount(x) <= limit)


def _put_over(be, axis, what=None):
    return _put(be, axis, what, _sole)


# an assignment x[i] = v (goat/typecheck/checker.py: _store) is put: x with the cells v takes
# replaced; its second attribute, as narrow's third, words an index or a slice
register(Op(name="put", checks_values=True, static_check=_put_static, callable_by_name=False,
            overwrites=_put_over,
            arity=4, params=(("x", "value"), ("v", "value"), ("start", "value"),
                             ("axis", "int")),
            signature="(put(x, v, start, axis) -> x's shape)",
            doc="x with the cells start to start + length - 1 along axis replaced by v (of x's "
                "shape but for its length along axis): NumPy's x[..., start:start + length] = "
                "v on a copy",
            shape=_put_shape, evaluate=_put, cost=_put_cost, lowering=lower.put,
            vjp=lambda d, g, out, x, v, start, axis, *what: (
                d.op("put", g, d.fill_like(v, 0.0), start, attrs=(axis,) + tuple(what)),
                d.op("narrow", g, start, attrs=(axis, _length_of(v, axis % len(v.shape)))
                     + tuple(what)), None)))


def _length_of(v, axis):
    """A node's size along ``axis`` as an attribute: the number, or (a ? size, a def's
    slice of L cells called on a ? size) the size read from v when it runs."""
    from ..typecheck.shapes import RunDim
    d = v.shape[axis]
    return d if type(d) is int else RunDim(v, axis)


# ------------------------------------------------------------- concat (joined along an axis)

def _concat_shape(a, b, axis):
    r = len(a)
    for which, x in (("first", a), ("second", b)):
        if not x:
            raise ShapeError("concat joins tensors of rank 1 or more; its %s argument is a "
                             "scalar" % which)
    if len(b) != r:
        raise ShapeError("concat needs tensors of the same rank, got %s (rank %d) and %s "
                         "(rank %d)" % (format_shape(a), r, format_shape(b), len(b)))
    if not -r <= axis < r:
        raise ShapeError("concat's axis %s is outside %s, of rank %d (%s)"
                         % (format_huge(axis), format_type(a), r, _axes(r)))
    ax = axis % r
    out = []
    for j, (x, y) in enumerate(zip(a, b)):
        if j == ax:
            out.append(_writable(size_add(x, y)))   # (K + H in a def of sizes K and H)
        elif x is None or x == y:
            out.append(y)
        elif y is None:
            out.append(x)
        else:
            raise ShapeError("cannot concat shapes %s and %s along axis %d: dimensions %s and "
                             "%s (axis %d) differ, and only axis %d may"
                             % (format_shape(a), format_shape(b), ax, format_dim(x),
                                format_dim(y), j, ax))
    return tuple(out)


def _concat(be, axis):
    concatenate, contiguous = be.xp.concatenate, be.xp.ascontiguousarray

    def run(a, b):
        # row-major, whatever the operands' layout (NumPy's concatenate of two transposes is
        # column-major, and a product or a sum of it then adds in another order than the
        # compiled program's)
        return contiguous(concatenate((a, b), axis=axis))      # (no copy when it is)
    return run


def _concat_part(be, axis, which, target):
    target = tuple(target)

    def run(g):
        ax = axis % g.ndim
        m = target[ax]
        start = 0 if which == 0 else g.shape[ax] - m
        return g[(slice(None),) * ax + (slice(start, start + m),)].copy()
    return run


def _concat_vjp(d, g, out, a, b, axis):
    return tuple(d.b.op(REGISTRY["concat_part"], (g,), d.loc, (axis, which, _target_of(x)),
                        shape=x.shape, check=False) for which, x in ((0, a), (1, b)))


def _concat_part_vjp(d, g, out, whole, axis, which, target):
    # the part back in its place among zeros: narrow_backward at the part's start
    ax = axis % len(whole.shape)
    start = d.const(0.0) if which == 0 else d.sub(d.size(whole, ax), d.size(out, ax))
    return (d.b.op(REGISTRY["narrow_backward"], (g, start), d.loc, (axis, _target_of(whole)),
                   shape=whole.shape, check=False),)


# checks_at_run_time: a ? size of one operand is checked against the other's when it runs
register(Op(name="concat", arity=3, checks_at_run_time=True,
            params=(("a", "value"), ("b", "value"), ("axis", "int")),
            signature="concat(a, b, axis) -> a and b joined along axis",
            doc="a's cells, then b's, along axis (NumPy's concatenate((a, b), axis), PyTorch's "
                "cat): the other sizes agree; axis is a whole number the program fixes",
            shape=_concat_shape, evaluate=_concat, lowering=lower.concat, cost=_taken_cost,
            vjp=_concat_vjp))

register(Op(name="concat_part", callable_by_name=False,
            arity=4, params=(("g", "value"), ("axis", "int"), ("which", "int"),
                             ("shape", "type")),
            signature="(concat_part(g, axis, which, tensor[S]))",
            doc="the first (which 0) or last (which 1) S[axis] cells of g along axis: "
                "concat's derivative for each operand",
            shape=lambda g, axis, which, target: tuple(target), evaluate=_concat_part,
            cost=_taken_cost, lowering=lower.concat_part, vjp=_concat_part_vjp))


def _onehot_shape(idx, target):
    _column_of_indices("onehot", idx)
    target = tuple(target)
    if len(target) != len(idx) or not all(a == b or a is None or b is None
                                         for a, b in zip(idx[:-1], target[:-1])):
        want = "x".join([format_dim(d) for d in idx[:-1]] + ["V"])
        raise ShapeError("onehot of indices %s needs the type tensor[%s] (V the number of "
                         "classes), got %s" % (format_shape(idx), want, format_type(target)))
    if target[-1] is None:
        raise ShapeError("onehot needs the number of classes, the last size of its type; "
                         "got %s" % format_type(target))
    return target


def _onehot(be, target):
    xp = be.xp
    count = target[-1]

    def run(idx):
        i = _indices(be, idx, count, "onehot")
        out = xp.zeros((i.size, count), dtype=be.dtype)
        out[xp.arange(i.size), i] = 1.0
        return out.reshape(tuple(idx.shape[:-1]) + (count,))
    return run


register(Op(name="onehot", checks_values=True,
            static_check=lambda values, shapes, attrs: _indices_pass(values[0], attrs[0][-1],
                                                                     "onehot"),
            arity=2, params=(("indices", "value"), ("shape", "type")),
            signature="onehot(indices: Nx1, V) -> NxV  (or onehot(indices, tensor[NxV]))",
            doc="row i is 1 in column indices[i] and 0 elsewhere (indices whole numbers from 0 "
                "to V-1, checked when it runs); V, the number of classes, is written as a whole "
                "number or as the result's type (which a def's size variables may write)",
            shape=_onehot_shape, evaluate=_onehot, lowering=lower.onehot, vjp=lambda d, g, out, idx, target: (None,),
            count_type=lambda shapes, v: tuple(shapes[0][:-1]) + (v,) if shapes[0] else (v,)))


def _argmax_rows(be):
    xp = be.xp

    def run(x):
        if x.shape[-1] == 0:
            raise OpError("argmax_rows needs rows of at least one column, got shape %s"
                          % format_shape(x.shape))
        i = xp.argmax(x, axis=-1)[..., None]
        if be.dtype_name == "f32" and x.shape[-1] > 2 ** 24:
            def fail():
                raise OpError("argmax_rows found a column of 2**24 = %d or more, which float32 "
                              "(--dtype f32) cannot hold exactly (it holds every whole number "
                              "only up to 2**24); run in f64" % 2 ** 24)
            be.require(~xp.any(i >= 2 ** 24), fail)
        return i.astype(be.dtype)
    return run


def _argmax_shape(s):
    _rank_at_least("argmax_rows", 1, "a tensor (rank 1 or more)")(s)
    if s[-1] == 0:
        raise ShapeError("argmax_rows needs rows of at least one column, got shape %s"
                         % format_shape(s))
    return tuple(s[:-1]) + (1,)


register(Op(name="argmax_rows", arity=1, signature="argmax_rows(x: NxC) -> Nx1",
            doc="the column of each row's largest value, counting from 0 (the first of equal "
                "ones; a NaN counts as largest), as NumPy's argmax; rows need a column at least; "
                "it only chooses cells (grad does not follow it)",
            shape=_argmax_shape,
            evaluate=_argmax_rows, tags=("reduction", "indices"), chooses=(0,),
            lowering=lower.argmax_rows))


def _index_limit(be, name, n):
    """Indices up to n - 1 must be whole numbers the back end's float type holds exactly."""
    if be.dtype_name == "f32" and n - 1 > 2 ** 24:
        raise OpError("%s gives indices up to %d, which float32 (--dtype f32) cannot hold "
                      "exactly (it holds every whole number only up to 2**24 = %d); run in f64"
                      % (name, n - 1, 2 ** 24))


def _stable_argsort(xp, x):
    """argsort along the last axis, keeping equal values in order (NumPy's kind="stable",
    for a host array whatever wraps the module; CuPy's argsort is stable and takes no
    kind)."""
    if isinstance(x, np.ndarray):
        return np.argsort(x, axis=-1, kind="stable")
    return xp.argsort(x, axis=-1)


def _argsort(be):
    xp = be.xp

    def run(x):
        _index_limit(be, "argsort", x.shape[-1])
        return _stable_argsort(xp, x).astype(be.dtype)
    return run


def _argsort_shape(s):
    _rank_at_least("argsort", 1, "a tensor (rank 1 or more)")(s)
    return tuple(s)


register(Op(name="argsort", arity=1, signature="argsort(x: S) -> S",
            doc="along the last axis, the indices that sort each row ascending, counting from 0: "
                "x[argsort(x)] is x sorted, for a vector (NumPy's argsort(x, kind='stable'): "
                "equal values keep their order, NaNs go last); it only chooses cells, so grad "
                "follows x[argsort(x)] through x, not through the indices",
            shape=_argsort_shape, evaluate=_argsort, tags=("indices",), chooses=(0,),
            vjp=lambda d, g, out, x: (ZERO,), lowering=lower.argsort))


def _randperm(be, target):
    from . import rng
    xp = be.xp
    n = target[0]

    def run(seed):
        _index_limit(be, "randperm", n)
        keys = rng.uniform(xp, (n,), rng.check_seed(_scalar(be, seed)))
        return _stable_argsort(xp, keys).astype(be.dtype)
    return run


def _randperm_shape(seed, target):
    if len(target) != 1:
        raise ShapeError("randperm makes a vector, a permutation of 0 to N-1: its type is "
                         "tensor[N], got %s" % format_type(target))
    if all(type(d) is int for d in seed) and cells(seed) != 1:
        raise ShapeError("the seed of randperm must be a single number, got shape %s"
                         % format_shape(seed))
    return _static_shape("randperm", target)


register(Op(name="randperm", arity=2, params=(("n", "type"), ("seed", "value")),
            checks_values=True, static_check=_seed_passes,
            signature="randperm(N, seed) -> N  (or randperm(tensor[N], seed))",
            doc="a random permutation of the whole numbers 0 to N-1, a pure function of (N, "
                "seed) and the same on every back end: the order that sorts rand(tensor[N], "
                "seed) (PyTorch's randperm, NumPy's permutation); X[randperm(N, epoch)] "
                "shuffles the rows of an N-row X, without replacement",
            shape=_randperm_shape, evaluate=_randperm, tags=("creation", "random", "indices"),
            cell_flops=600.0, lowering=lower.randperm,
            vjp=lambda d, g, out, seed, target: (None,),
            count_type=lambda shapes, v: (v,)))


def _sample_rows(be):
    from ..interp.printer import format_number
    from . import rng
    xp = be.xp

    def run(p, seed):
        n = 1
        for d in p.shape[:-1]:
            n *= d
        u = rng.uniform(xp, (n, 1), rng.check_seed(_scalar(be, seed)))
        if be.dtype != xp.float64:          # rand's draws as this precision gives them
            u = xp.minimum(be.cast(u), xp.nextafter(xp.asarray(1, dtype=be.dtype),
                                                    xp.asarray(0, dtype=be.dtype)))
        rows = p.reshape(n, p.shape[-1])
        c = xp.cumsum(rows, axis=-1)
        # the sum as the draw adds it, left to right: NaN fails both tests, and a sum that is
        # inf (an inf weight, or finite ones that overflow) would take every draw
        total = c[:, -1] if rows.shape[-1] else xp.zeros(n, dtype=rows.dtype)
        bad = ~((rows >= 0).all(axis=-1) & (total > 0) & (total < xp.inf))

        def fail(rows=rows):
            r = int(be.scalar(xp.argmax(bad)))
            rows = be.to_numpy(rows)
            raise OpError("sample_rows needs weights of 0 or more with a positive, finite sum "
                          "in every row (probabilities, such as nn.softmax_rows(logits)); row %d is [%s]"
                          % (r, ", ".join(format_number(v) for v in rows[r][:6].tolist())
                             + (", ..." if rows.shape[1] > 6 else "")))
        be.require(~bad.any(), fail)
        # the first running sum that exceeds u times the sum (so never a column of weight 0,
        # even at u = 0, as torch.multinomial never draws one)
        k = xp.sum(c <= u * c[:, -1:], axis=-1, keepdims=True)
        k = xp.minimum(k, p.shape[-1] - 1)
        return k.astype(be.dtype).reshape(tuple(p.shape[:-1]) + (1,))
    return run


def _sample_rows_shape(p, seed):
    _rank_at_least("sample_rows", 1, "a tensor (rank 1 or more)")(p)
    if all(type(d) is int for d in seed) and cells(seed) != 1:
        raise ShapeError("the seed of sample_rows must be a single number, got shape %s"
                         % format_shape(seed))
    return tuple(p[:-1]) + (1,)


def _sample_rows_seed(values, shapes, attrs):
    """A seed written in the program that check_seed refuses is an error before the run; the
    weights are checked when it runs."""
    _seed_passes(values[1:], shapes[1:], attrs)
    raise ValueError("the weights are checked when it runs")


register(Op(name="sample_rows", checks_values=True,
            arity=2, params=(("p", "value"), ("seed", "value")),
            signature="sample_rows(p: NxC, seed) -> Nx1",
            doc="for each row, a column drawn with probability proportional to p (weights "
                "that need not sum to 1): the first column whose running sum exceeds u times "
                "the row's sum, u the row's uniform draw rand(tensor[Nx1], seed) (never a "
                "column of weight 0); it only chooses columns, so grad follows p[.., "
                "sample_rows(p, s)] through p, not the indices",
            shape=_sample_rows_shape,
            evaluate=_sample_rows, tags=("random", "indices"), lowering=lower.sample_rows,
            static_check=_sample_rows_seed, chooses=(0, 1)))
