"""Differential test: random well-typed programs, their values computed by goat and by a
small NumPy evaluator written here independently (no goat code).

Each program builds a few lets from random expressions over matrices of known shapes, some
wrapped in defs (so template expansion, call memoization and hash-consing are exercised), and
prints them.  The checker must accept every one (shapes are built to fit) and every printed
value must equal NumPy's.
"""
import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import goat

SIZES = [1, 2, 3]


class Gen:
    """Draws an expression of a requested shape: (goat text, NumPy function of the env)."""

    def __init__(self, draw, env):
        self.draw = draw
        self.env = env          # name -> (shape, value)

    def literal(self, shape):
        vals = self.draw(st.lists(st.sampled_from([-2.5, -1.0, -0.5, 0.0, 0.25, 1.0, 2.0, 3.0]),
                                  min_size=shape[0] * shape[1], max_size=shape[0] * shape[1]))
        a = np.array(vals, dtype=float).reshape(shape)
        text = "[" + ", ".join("[" + ", ".join(repr(float(x)) for x in row) + "]" for row in a) + "]"
        return text, (lambda env, a=a: a)

    def expr(self, shape, depth=0):
        d = self.draw
        names = [n for n, (s, _) in self.env.items() if s == shape]
        choice = d(st.integers(0, 9 if depth < 3 else 1))
        if choice == 0 and names:
            n = d(st.sampled_from(names))
            return n, (lambda env, n=n: env[n])
        if choice <= 1:
            return self.literal(shape)
        if choice == 2:                                      # elementwise binary, maybe broadcast
            op, f = d(st.sampled_from([("+", np.add), ("-", np.subtract), ("*", np.multiply),
                                       ("/", np.divide)]))
            rshape = d(st.sampled_from([shape, (1, shape[1]), (shape[0], 1)]))
            (lt, lf), (rt, rf) = self.expr(shape, depth + 1), self.expr(rshape, depth + 1)
            return "(%s %s %s)" % (lt, op, rt), (lambda env, lf=lf, rf=rf, f=f: f(lf(env), rf(env)))
        if choice == 3:                                      # matrix product through an inner size
            k = d(st.sampled_from(SIZES))
            (lt, lf), (rt, rf) = self.expr((shape[0], k), depth + 1), self.expr((k, shape[1]), depth + 1)
            return "(%s @ %s)" % (lt, rt), (lambda env, lf=lf, rf=rf: lf(env) @ rf(env))
        if choice == 4:
            name, f = d(st.sampled_from([
                ("exp", np.exp), ("relu", lambda x: np.maximum(x, 0.0)), ("tanh", np.tanh),
                ("abs", np.abs), ("sigmoid", lambda x: 1.0 / (1.0 + np.exp(-x))),
                ("square", lambda x: x * x)]))
            t, g = self.expr(shape, depth + 1)
            return "%s(%s)" % (name, t), (lambda env, g=g, f=f: f(g(env)))
        if (choice == 5 and shape[1] == 1) or (choice == 6 and shape[0] == 1):   # a reduction
            axis = 1 if choice == 5 else 0
            kind = "row" if axis == 1 else "col"
            name, f = d(st.sampled_from([
                (kind + "_sum", lambda x, a=axis: x.sum(a, keepdims=True)),
                (kind + "_max", lambda x, a=axis: x.max(a, keepdims=True)),
                (kind + "_min", lambda x, a=axis: x.min(a, keepdims=True)),
                (kind + "_mean", lambda x, a=axis: x.sum(a, keepdims=True) / x.shape[a])]))
            inner = list(shape)
            inner[axis] = d(st.sampled_from(SIZES))
            t, g = self.expr(tuple(inner), depth + 1)
            return "%s(%s)" % (name, t), (lambda env, g=g, f=f: f(g(env)))
        if choice == 7:
            t, g = self.expr((shape[1], shape[0]), depth + 1)
            return "transpose(%s)" % t, (lambda env, g=g: g(env).T)
        if choice == 8:
            name, f = d(st.sampled_from([("ge", np.greater_equal), ("lt", np.less),
                                         ("maximum", np.maximum), ("minimum", np.minimum)]))
            (lt, lf), (rt, rf) = self.expr(shape, depth + 1), self.expr(shape, depth + 1)
            return "%s(%s, %s)" % (name, lt, rt), (
                lambda env, lf=lf, rf=rf, f=f: f(lf(env), rf(env)).astype(float))
        t, g = self.expr(shape, depth + 1)
        return "-%s" % t, (lambda env, g=g: -g(env))


@st.composite
def programs(draw):
    env, lines, prints, defs = {}, [], [], 0
    for i in range(draw(st.integers(1, 5))):
        shape = (draw(st.sampled_from(SIZES)), draw(st.sampled_from(SIZES)))
        gen = Gen(draw, env)
        if draw(st.booleans()):
            # a def of one parameter, called twice on the same argument (memoized) and once more
            pshape = shape if draw(st.booleans()) else (draw(st.sampled_from(SIZES)),
                                                        draw(st.sampled_from(SIZES)))
            inner = Gen(draw, {"p": (pshape, None)})
            body, bf = inner.expr(shape)
            lines.append("def f%d(p: tensor[%dx%d]) = %s" % (defs, pshape[0], pshape[1], body))
            arg, af = gen.expr(pshape)
            text = "f%d(%s) + f%d(%s)" % (defs, arg, defs, arg)
            fn = (lambda env, bf=bf, af=af:
                  bf({**env, "p": af(env)}) + bf({**env, "p": af(env)}))
            defs += 1
        else:
            text, fn = gen.expr(shape)
        name = "v%d" % i
        lines.append("let %s = %s" % (name, text))
        with np.errstate(all="ignore"):
            value = fn({n: v for n, (_, v) in env.items()})
        env[name] = (shape, value)
        lines.append("print %s" % name)
        prints.append(value)
    return "\n".join(lines) + "\n", prints


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                   HealthCheck.data_too_large])
@given(programs())
def test_random_programs_equal_numpy(case):
    src, expected = case
    with np.errstate(all="ignore"):
        got = goat.run_source(src, path="t.mg")
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        assert g.shape == e.shape, src
        np.testing.assert_allclose(g, e, rtol=1e-12, atol=0, equal_nan=True, err_msg=src)
