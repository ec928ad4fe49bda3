"""maximum, minimum and the max/min reductions follow IEEE 754-2019 (as MLIR's arith.maximumf and
arith.minimumf): -0 is below +0, a NaN operand gives a NaN, and nothing depends on the order of
the operands or of a row.

The reference below is written from the standard with Python's math module, one number at a
time, independently of goat and of NumPy's ufuncs:

* maximum(a, b): a NaN when either is a NaN; otherwise the larger, where -0 < +0 (so the
  maximum of two zeros is -0 only when both are -0; the minimum is +0 only when both are +0);
* a NaN result keeps its operand's bits; when several operands are NaNs the result is the OR
  of their bits, so its sign bit is set when any of theirs is (an order-free choice: IEEE
  754 leaves it open, and goat prints the sign as `-nan`);
* the max / min of a row folds maximum / minimum over it, starting from -inf / +inf (so an
  empty row gives -inf / +inf, as before).
"""
import math
import os
import struct
import tempfile
from functools import reduce

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra import numpy as hnp

from conftest import run
from goat.gpu.numpy_backend import NumpyBackend, ieee_maximum, ieee_minimum
from goat.ops.registry import REGISTRY

NAN = float("nan")


def bits(x: float) -> int:
    return struct.unpack("<Q", struct.pack("<d", x))[0]


def from_bits(b: int) -> float:
    return struct.unpack("<d", struct.pack("<Q", b))[0]


def ref_extreme(a: float, b: float, larger: bool) -> float:
    if math.isnan(a) or math.isnan(b):
        nans = [x for x in (a, b) if math.isnan(x)]
        return from_bits(reduce(lambda p, q: p | q, (bits(x) for x in nans)))
    if a == 0.0 and b == 0.0:
        neg_a, neg_b = math.copysign(1.0, a) < 0, math.copysign(1.0, b) < 0
        negative = (neg_a and neg_b) if larger else (neg_a or neg_b)
        return math.copysign(0.0, -1.0 if negative else 1.0)
    if larger:
        return a if a > b else b
    return a if a < b else b


def ref_maximum(a, b):
    return ref_extreme(a, b, True)


def ref_minimum(a, b):
    return ref_extreme(a, b, False)


def ref_elementwise(f, a, b):
    a, b = np.broadcast_arrays(np.asarray(a, dtype=float), np.asarray(b, dtype=float))
    out = [f(float(x), float(y)) for x, y in zip(a.ravel(), b.ravel())]
    return np.array(out, dtype=float).reshape(a.shape)


def ref_reduce(f, start, x, axis):
    x = np.moveaxis(np.asarray(x, dtype=float), axis, -1)
    out = np.empty(x.shape[:-1] + (1,))
    for index in np.ndindex(*x.shape[:-1]):
        out[index] = reduce(f, (float(v) for v in x[index]), start)
    return np.moveaxis(out, -1, axis)


def same_bits(got, want):
    got, want = np.asarray(got, dtype=float), np.asarray(want, dtype=float)
    return got.shape == want.shape and np.array_equal(got.view(np.int64), want.view(np.int64))


def show(x):
    return [hex(v) for v in np.asarray(x, dtype=float).view(np.uint64).ravel()]


# values with every special case of the standard, and ordinary numbers between them
SPECIAL = [0.0, -0.0, NAN, -NAN, math.inf, -math.inf]
values = st.one_of(st.sampled_from(SPECIAL),
                   st.floats(allow_nan=False, allow_infinity=False, width=64),
                   st.sampled_from([1.0, -1.0, 2.5, -2.5]))


def arrays(shape):
    return hnp.arrays(np.float64, shape, elements=values)


pairs = st.tuples(st.integers(1, 4), st.integers(1, 5)).flatmap(
    lambda s: st.tuples(arrays(s),
                        st.sampled_from([s, (1, s[1]), (s[0], 1), (1, 1)]).flatmap(arrays)))


# ---------------------------------------------------------------- the reference itself

def test_the_reference_follows_the_standard():
    assert bits(ref_maximum(-0.0, 0.0)) == bits(ref_maximum(0.0, -0.0)) == bits(0.0)
    assert bits(ref_minimum(-0.0, 0.0)) == bits(ref_minimum(0.0, -0.0)) == bits(-0.0)
    assert bits(ref_maximum(-0.0, -0.0)) == bits(-0.0)
    assert bits(ref_minimum(0.0, 0.0)) == bits(0.0)
    assert bits(ref_maximum(-0.0, -3.0)) == bits(-0.0) and ref_minimum(0.0, 3.0) == 0.0
    assert math.isnan(ref_maximum(NAN, math.inf)) and math.isnan(ref_minimum(-math.inf, NAN))
    assert bits(ref_maximum(-NAN, 1.0)) == bits(-NAN)
    assert bits(ref_maximum(NAN, -NAN)) == bits(ref_maximum(-NAN, NAN)) == bits(-NAN)


# ---------------------------------------------------------------- the back end's functions

@settings(max_examples=300, deadline=None)
@given(pairs)
def test_elementwise_maximum_and_minimum_match_the_reference_in_both_orders(ab):
    a, b = ab
    for f, ref in ((ieee_maximum, ref_maximum), (ieee_minimum, ref_minimum)):
        want = ref_elementwise(ref, a, b)
        assert same_bits(f(a, b), want), (f.__name__, show(a), show(b), show(f(a, b)), show(want))
        assert same_bits(f(b, a), want), (f.__name__, show(b), show(a), show(f(b, a)), show(want))


@settings(max_examples=200, deadline=None)
@given(values, values)
def test_scalars_match_the_reference_in_both_orders(a, b):
    for f, ref in ((ieee_maximum, ref_maximum), (ieee_minimum, ref_minimum)):
        want = ref(a, b)
        assert same_bits(f(a, b), want) and same_bits(f(b, a), want)
        # a scalar against an array, either side
        assert same_bits(f(np.array([[a]]), b), [[want]])
        assert same_bits(f(b, np.array([[a]])), [[want]])


shapes = st.one_of(st.tuples(st.integers(1, 5), st.integers(0, 40)),
                   st.tuples(st.integers(1, 3), st.integers(1, 4), st.integers(0, 20)))


@settings(max_examples=300, deadline=None)
@given(shapes.flatmap(arrays), st.randoms(use_true_random=False))
def test_reductions_match_the_reference_along_both_axes_and_any_order(x, rnd):
    be = NumpyBackend()
    for axis in (-1, -2):
        # the same cells in another order along the reduced axis give the same bits
        perm = list(range(x.shape[axis]))
        rnd.shuffle(perm)
        shuffled = np.take(x, perm, axis=axis)
        for kind, ref, start in (("max", ref_maximum, -math.inf), ("min", ref_minimum, math.inf)):
            want = ref_reduce(ref, start, x, axis)
            got = be.reducer(kind, axis)(x)
            assert same_bits(got, want), (kind, axis, show(x), show(got), show(want))
            assert same_bits(be.reducer(kind, axis)(shuffled), want), (kind, axis, show(shuffled))
            # a view (as transpose gives) reduces alike
            t = np.ascontiguousarray(np.swapaxes(x, -1, -2)).swapaxes(-1, -2)
            assert same_bits(be.reducer(kind, axis)(t), want)


def test_long_rows_through_every_simd_path():
    """Rows long enough for NumPy's vector loops, with the one +0 (or -0) at every place."""
    be = NumpyBackend()
    n = 67
    for where in range(n):
        row = np.full((1, n), -0.0)
        row[0, where] = 0.0
        assert same_bits(be.reducer("max", -1)(row), [[0.0]])
        assert same_bits(be.reducer("max", -2)(row.T), [[0.0]])
        assert same_bits(be.reducer("min", -1)(-row), [[-0.0]])
        assert same_bits(ieee_maximum(row, -row), np.zeros((1, n)))
        assert same_bits(ieee_minimum(-row, row), np.full((1, n), -0.0))
        nan = np.ones((1, n))
        nan[0, where] = -NAN
        assert same_bits(be.reducer("max", -1)(nan), [[-NAN]])
        assert same_bits(be.reducer("min", -1)(nan), [[-NAN]])


@pytest.mark.parametrize("sa, sb", [((300, 400), (300, 400)), ((300, 1), (1, 400)),
                                    ((2, 70000), (1, 70000)), ((3, 1, 30000), (1, 4, 1))])
def test_large_operands_broadcast_block_by_block(sa, sb):
    """Past 65,536 cells the other order is computed a block of rows at a time."""
    rng = np.random.default_rng(sum(sa) + sum(sb))
    pool = np.array(SPECIAL + [1.0, -1.0, 2.5])

    def draw(shape):
        return np.where(rng.random(shape) < 0.8, rng.choice(pool[:2], shape),
                        rng.choice(pool, shape))
    a, b = draw(sa), draw(sb)
    for f, ref in ((ieee_maximum, ref_maximum), (ieee_minimum, ref_minimum)):
        want = ref_elementwise(ref, a, b)
        assert same_bits(f(a, b), want) and same_bits(f(b, a), want), f.__name__


def test_nans_with_payloads_stay_nans():
    """Two NaNs whose bits share only the exponent (a signalling NaN, as a .npy file may hold,
    and the quiet NaN): the result is their OR, a NaN, in either order, beside the equal zeros
    that make goat combine both orders' bits."""
    snan, qnan = from_bits(0x7FF0000000000001), from_bits(0x7FF8000000000000)
    for n in (4, 70000):
        a = np.array([[snan] + [0.0, -0.0] * n])
        b = np.array([[qnan] + [-0.0, 0.0] * n])
        for f, z in ((ieee_maximum, 0.0), (ieee_minimum, -0.0)):
            want = np.array([[from_bits(0x7FF8000000000001)] + [z] * (2 * n)])
            assert same_bits(f(a, b), want) and same_bits(f(b, a), want), (f.__name__, n)
    be = NumpyBackend()
    row = np.array([[snan, 1.0, qnan, -0.0]])
    for kind in ("max", "min"):
        assert same_bits(be.reducer(kind, -1)(row), [[from_bits(0x7FF8000000000001)]])


def test_empty_rows_keep_their_identities():
    be = NumpyBackend()
    e = np.zeros((2, 0))
    assert same_bits(be.reducer("max", -1)(e), [[-math.inf], [-math.inf]])
    assert same_bits(be.reducer("min", -1)(e), [[math.inf], [math.inf]])
    assert same_bits(be.reducer("max", -2)(np.zeros((0, 3))), [[-math.inf] * 3])


# ---------------------------------------------------------------- through the language

def test_the_issue_example():
    got = run("print maximum([[-0, 0]], [[0, -0]])\nprint maximum([[0, -0]], [[-0, 0]])\n"
              "print minimum([[-0, 0]], [[0, -0]])\nprint minimum([[0, -0]], [[-0, 0]])\n"
              "print maximum(-0, 0)\nprint maximum(0, -0)\nprint minimum(0, -0)\n")
    assert same_bits(got[0], [[0.0, 0.0]]) and same_bits(got[1], [[0.0, 0.0]])
    assert same_bits(got[2], [[-0.0, -0.0]]) and same_bits(got[3], [[-0.0, -0.0]])
    assert same_bits(got[4], 0.0) and same_bits(got[5], 0.0) and same_bits(got[6], -0.0)


def test_rows_of_signed_zeros_and_nans_through_the_language():
    got = run("let n = [[0]] / 0\n"
              "let z = [[-0, 0, -0], [-0, -0, -0], [0, -0, -0]]\n"
              "print row_max(z)\nprint row_min(z)\nprint col_max(z)\nprint col_min(z)\n"
              "print row_max([[1, 2, 3]] + [[0, 1, 0]] * n)\n"
              "print col_min([[1], [2]] + [[1], [0]] * n)\n"
              "print row_max([[]])\nprint row_min([[]])\n")
    assert same_bits(got[0], [[0.0], [-0.0], [0.0]])
    assert same_bits(got[1], [[-0.0], [-0.0], [-0.0]])
    assert same_bits(got[2], [[0.0, 0.0, -0.0]])
    assert same_bits(got[3], [[-0.0, -0.0, -0.0]])
    assert math.isnan(got[4][0, 0]) and math.isnan(got[5][0, 0])
    assert same_bits(got[6], [[-math.inf]]) and same_bits(got[7], [[math.inf]])


@settings(max_examples=60, deadline=None)
@given(st.tuples(st.integers(1, 3), st.integers(1, 4), st.integers(1, 6)).flatmap(
    lambda s: st.tuples(arrays(s), arrays(s))))
def test_programs_match_the_reference_on_rank_3(ab):
    """Arrays with every special value come in through .npy files; goat's maximum, minimum and
    its four reductions give the reference's bits, in either order of the operands."""
    a, b = ab
    s = "x".join(map(str, a.shape))
    with tempfile.TemporaryDirectory() as d:
        np.save(os.path.join(d, "a.npy"), a)
        np.save(os.path.join(d, "b.npy"), b)
        src = ('let a: tensor[%s] = load("a.npy")\nlet b: tensor[%s] = load("b.npy")\n'
               "print maximum(a, b)\nprint maximum(b, a)\n"
               "print minimum(a, b)\nprint minimum(b, a)\n"
               "print row_max(a)\nprint row_min(a)\nprint col_max(a)\nprint col_min(a)\n" % (s, s))
        got = run(src, path=os.path.join(d, "t.mg"))
    mx, mn = ref_elementwise(ref_maximum, a, b), ref_elementwise(ref_minimum, a, b)
    want = [mx, mx, mn, mn, ref_reduce(ref_maximum, -math.inf, a, -1),
            ref_reduce(ref_minimum, math.inf, a, -1), ref_reduce(ref_maximum, -math.inf, a, -2),
            ref_reduce(ref_minimum, math.inf, a, -2)]
    for i, (g, w) in enumerate(zip(got, want)):
        assert same_bits(g, w), (i, show(a), show(b), show(g), show(w))


@pytest.mark.parametrize("name", ["maximum", "minimum", "row_max", "row_min", "col_max", "col_min"])
def test_the_docs_state_the_semantics(name):
    doc = REGISTRY[name].doc
    assert "IEEE 754-2019" in doc and "-0 < +0" in doc and "nan" in doc
