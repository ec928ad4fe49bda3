"""The built-in operators and functions, one registry entry each.

Shapes in the docs: ``RxC`` is a matrix; every op also takes higher ranks as described in
LANGUAGE.md Part B1 (row-wise verbs read the trailing axis, ``col_*`` the second-to-last).
Numerics follow IEEE 754 double precision as NumPy computes it (1/0 = inf, 0/0 = nan,
log(0) = -inf, sqrt(-1) = nan); nothing here raises on a value.
"""
from __future__ import annotations

from ..typecheck.shapes import ShapeError, broadcast, format_shape, matmul
from .registry import Op, register


def _same(s):
    return s


def _rank_at_least(name: str, k: int, what: str):
    def check(s):
        if len(s) < k:
            got = "a scalar" if len(s) == 0 else "shape %s (rank %d)" % (format_shape(s), len(s))
            raise ShapeError("%s needs %s, got %s" % (name, what, got))
    return check


# ---------------------------------------------------------------- operators

def _binary(name, symbol, verb, ufunc, doc):
    register(Op(
        name=name, arity=2, symbol=symbol, callable_by_name=False,
        signature="a %s b  (broadcasting)" % symbol,
        doc=doc,
        shape=lambda a, b, _verb=verb: broadcast(_verb, a, b),
        evaluate=lambda be, _u=ufunc: getattr(be.xp, _u),
        tags=("elementwise", "operator"),
    ))


_binary("add", "+", "add", "add", "elementwise sum")
_binary("subtract", "-", "subtract", "subtract", "elementwise difference")
_binary("multiply", "*", "multiply", "multiply", "elementwise (Hadamard) product")
_binary("divide", "/", "divide", "divide",
        "elementwise IEEE 754 quotient: 1/0 = inf, -1/0 = -inf, 0/0 = nan")

register(Op(
    name="matmul", arity=2, symbol="@", callable_by_name=False,
    signature="a @ b : MxK, KxN -> MxN",
    doc="matrix product; on rank 3 or more a batched product over the leading dimensions",
    shape=matmul,
    evaluate=lambda be: be.xp.matmul,
    tags=("operator",),
))

register(Op(
    name="negate", arity=1, symbol="-", callable_by_name=False,
    signature="-x",
    doc="elementwise negation",
    shape=_same,
    evaluate=lambda be: be.xp.negative,
    tags=("elementwise", "operator"),
))


# ---------------------------------------------------------------- elementwise functions

def _unary(name, doc, make):
    register(Op(name=name, arity=1, signature="%s(x: S) -> S" % name, doc=doc, shape=_same,
                evaluate=make, tags=("elementwise",)))


_unary("exp", "e to the power x", lambda be: be.xp.exp)
_unary("log", "natural logarithm (log 0 = -inf, log of a negative = nan)", lambda be: be.xp.log)
_unary("sqrt", "square root (sqrt of a negative = nan)", lambda be: be.xp.sqrt)
_unary("abs", "absolute value", lambda be: be.xp.abs)
_unary("tanh", "hyperbolic tangent (a NaN keeps its sign, as in C's tanh)",
       lambda be: (lambda x, _t=be.xp.tanh, _w=be.xp.where, _n=be.xp.isnan: _w(_n(x), x, _t(x))))
_unary("sin", "sine (radians)", lambda be: be.xp.sin)
_unary("cos", "cosine (radians)", lambda be: be.xp.cos)
_unary("relu", "max(x, 0), the rectified linear unit", lambda be: (lambda x, _m=be.xp.maximum: _m(x, 0.0)))
_unary("sigmoid", "1 / (1 + exp(-x)), the logistic function",
       lambda be: (lambda x, _e=be.xp.exp: 1.0 / (1.0 + _e(-x))))


def _compare(name, relation, ufunc):
    def make(be, _u=ufunc):
        f = getattr(be.xp, _u)
        f64 = be.xp.float64
        return lambda a, b: f(a, b).astype(f64)
    register(Op(name=name, arity=2, signature="%s(a, b) -> broadcast shape" % name,
                doc="1 where a %s b, else 0 (broadcasts like +)" % relation,
                shape=lambda a, b: broadcast("compare", a, b), evaluate=make,
                tags=("elementwise", "comparison")))


_compare("ge", ">=", "greater_equal")
_compare("gt", ">", "greater")
_compare("le", "<=", "less_equal")
_compare("lt", "<", "less")
_compare("eq", "==", "equal")
_compare("ne", "!=", "not_equal")

for _name, _verb, _ufunc, _doc in (
        ("maximum", "take the maximum of", "maximum", "elementwise larger of a and b (nan if either is nan)"),
        ("minimum", "take the minimum of", "minimum", "elementwise smaller of a and b (nan if either is nan)")):
    register(Op(name=_name, arity=2, signature="%s(a, b) -> broadcast shape" % _name, doc=_doc,
                shape=lambda a, b, _v=_verb: broadcast(_v, a, b),
                evaluate=lambda be, _u=_ufunc: getattr(be.xp, _u),
                tags=("elementwise",)))


# ---------------------------------------------------------------- reductions

def _row(name, kind, doc):
    check = _rank_at_least(name, 1, "a tensor (rank 1 or more)")

    def shape(s):
        check(s)
        return tuple(s[:-1]) + (1,)
    register(Op(name=name, arity=1, signature="%s(x: RxC) -> Rx1" % name,
                doc=doc + " along each row (the last axis); the result keeps that axis as size 1",
                shape=shape, evaluate=lambda be, _k=kind: be.reducer(_k, -1),
                tags=("reduction",)))


def _col(name, kind, doc):
    check = _rank_at_least(name, 2, "a matrix (rank 2 or more)")

    def shape(s):
        check(s)
        return tuple(s[:-2]) + (1, s[-1])
    register(Op(name=name, arity=1, signature="%s(x: RxC) -> 1xC" % name,
                doc=doc + " down each column (the second-to-last axis); the result keeps that "
                "axis as size 1",
                shape=shape, evaluate=lambda be, _k=kind: be.reducer(_k, -2),
                tags=("reduction",)))


for _kind, _doc in (("sum", "sum"), ("max", "largest value"), ("min", "smallest value"),
                    ("mean", "arithmetic mean (the sum divided by the count)")):
    _row("row_" + _kind, _kind, _doc)
    _col("col_" + _kind, _kind, _doc)


def _transpose_shape(s):
    _rank_at_least("transpose", 2, "a matrix (rank 2 or more)")(s)
    return tuple(s[:-2]) + (s[-1], s[-2])


register(Op(name="transpose", arity=1, signature="transpose(x: RxC) -> CxR",
            doc="swaps the last two dimensions", shape=_transpose_shape,
            evaluate=lambda be: (lambda x, _s=be.xp.swapaxes: _s(x, -1, -2))))
