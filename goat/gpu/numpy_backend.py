"""The NumPy back end (the default): float64 arrays on the CPU."""
from __future__ import annotations

import numpy as np

# Operations that can make a NaN out of numbers (0/0, inf - inf, 0 * inf, sqrt(-1), log(-1)).
_INVALID = ("add", "subtract", "multiply", "divide", "sqrt", "log", "matmul", "tanh", "sin",
            "cos", "remainder")


def fresh_nan_is_negative() -> bool:
    """Does this processor give an invalid operation (0/0) a NaN with the sign bit set?

    x86 does, so C's printf -- and the book -- print it as ``-nan``; ARM and others do not.
    """
    with np.errstate(all="ignore"):
        q = np.divide(np.zeros(1), np.zeros(1))
    return bool(np.signbit(q[0]))


class _X86NaN:
    """NumPy, but a NaN made from numbers gets its sign bit set, as on x86, so that programs
    print the same ``-nan`` on every processor (NaNs that came in keep their own sign)."""

    def __init__(self):
        for name in _INVALID:
            setattr(self, name, self._wrap(getattr(np, name)))

    def __getattr__(self, name):
        return getattr(np, name)

    @staticmethod
    def _wrap(f):
        def run(*args):
            r = f(*args)
            made = np.isnan(r)
            if made.any():
                for a in args:
                    made &= ~np.isnan(a)
                r = np.where(made, -np.nan, r) if np.ndim(r) else (-np.nan if made else r)
            return r
        return run


class NumpyBackend:
    name = "numpy"
    xp = np

    def __init__(self, x86_nan: bool | None = None):
        if x86_nan is None:
            x86_nan = not fresh_nan_is_negative()
        if x86_nan:
            self.xp = _X86NaN()

    def asarray(self, a):
        return np.asarray(a, dtype=np.float64)

    def to_numpy(self, x):
        return np.asarray(x, dtype=np.float64)

    def reducer(self, kind: str, axis: int):
        """``x -> reduce(x)`` along ``axis``, keeping it as size 1.

        ufunc.reduce skips np.sum's Python-level dispatch (a few microseconds a call, which
        adds up over the 60,000 reductions of the book's training run).  The mean is the sum
        divided by the count, exactly as np.mean computes it.
        """
        if kind == "sum":
            red = np.add.reduce
            return lambda x: red(x, axis=axis, keepdims=True)
        # the max of an empty row is -inf and its min +inf (the identities), not an exception
        if kind == "max":
            red = np.maximum.reduce
            return lambda x: red(x, axis=axis, keepdims=True, initial=-np.inf)
        if kind == "min":
            red = np.minimum.reduce
            return lambda x: red(x, axis=axis, keepdims=True, initial=np.inf)
        if kind == "mean":
            red = np.add.reduce
            div = np.true_divide
            return lambda x: div(red(x, axis=axis, keepdims=True), x.shape[axis])
        raise ValueError("unknown reduction %r" % kind)

    def errstate(self):
        return np.errstate(all="ignore")
