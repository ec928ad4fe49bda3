"""Array back ends: the only place the evaluator reaches arrays through.

A back end is a small object (see :class:`goat.gpu.numpy_backend.NumpyBackend`):

* ``name`` -- "numpy", "cupy", ...
* ``xp`` -- the array module whose ufuncs (add, exp, matmul, ...) the ops call;
* ``asarray(a)`` -- a float64 NumPy array -> this back end's array;
* ``to_numpy(x)`` -- back to a NumPy float64 array (for printing and the Python API);
* ``reducer(kind, axis)`` -- a function ``x -> reduced x`` keeping ``axis`` as size 1, for
  kind in sum, max, min, mean (max and min by IEEE 754-2019, as ``maximum`` / ``minimum``);
* ``matmul`` -- the matrix product ``(a, b) -> a @ b``, with the same bits on every run
  whatever the machine's thread settings (the NumPy back end holds its BLAS to one thread);
* ``maximum``, ``minimum`` -- elementwise, broadcasting, by IEEE 754-2019 (MLIR's
  ``arith.maximumf`` / ``arith.minimumf``): -0 < +0 and a NaN operand gives a NaN, so the
  result never depends on the order of the operands;
* ``errstate()`` -- a context manager in which IEEE special values raise no warning.

A CuPy back end is a new implementation of this interface, not a change to the evaluator.
"""
from __future__ import annotations

from .numpy_backend import NumpyBackend

BACKENDS = {"numpy": NumpyBackend}


def get_backend(name: str = "numpy", threads: int = 1):
    """The back end called ``name``, its BLAS on ``threads`` threads (1: matrix products give
    the same bits whatever the machine's settings); ValueError naming the known ones
    otherwise."""
    try:
        cls = BACKENDS[name]
    except KeyError:
        raise ValueError("unknown back end %r (known: %s)" % (name, ", ".join(sorted(BACKENDS)))) from None
    return cls(threads=threads) if threads != 1 else cls()
