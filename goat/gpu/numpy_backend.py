"""The NumPy back end (the default): float64 arrays on the CPU."""
from __future__ import annotations

import numpy as np


class NumpyBackend:
    name = "numpy"
    xp = np

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
