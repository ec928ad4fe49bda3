"""Array back ends: the only place the evaluator reaches arrays through.

A back end is a small object (see :class:`goat.gpu.numpy_backend.NumpyBackend`):

* ``name`` -- "numpy", "cupy", ...
* ``xp`` -- the array module whose ufuncs (add, exp, matmul, ...) the ops call;
* ``dtype`` -- the precision of every array (NumPy's float64 for ``f64``, the default and the
  book's, or float32 for ``f32``); ``constant(v)`` -- a number of the program (or a loop
  index) in it; ``cast(x)`` -- one of the back end's arrays converted to it;
* ``asarray(a)`` -- a NumPy array -> this back end's array;
* ``to_numpy(x)`` -- back to a NumPy array (printing, ``save``, the Python API): a copy to
  the host; ``scalar(x)`` -- a one-element value as a Python float (a loop bound, an if
  condition, a seed, an index check): a host read.  The evaluator and the ops read values on
  the host through these two only (the test back end, guard.py, holds them to it);
* ``add_at(out, rows, values)`` -- ``out[rows[k]] += values[k]``, repeated rows adding up;
* ``fuse_min`` and ``fuse(spec)`` -- a back end that generates kernels runs each chain of
  at least ``fuse_min`` elementwise ops as one (goat/interp/fusion.py, goat/gpu/kernels.py);
  0: none;
* ``reducer(kind, axis)`` -- a function ``x -> reduced x`` keeping ``axis`` as size 1, for
  kind in sum, max, min, mean (max and min by IEEE 754-2019, as ``maximum`` / ``minimum``);
* ``matmul`` -- the matrix product ``(a, b) -> a @ b``, with the same bits on every run
  whatever the machine's thread settings (the NumPy back end holds its BLAS to one thread);
* ``maximum``, ``minimum`` -- elementwise, broadcasting, by IEEE 754-2019 (MLIR's
  ``arith.maximumf`` / ``arith.minimumf``): -0 < +0 and a NaN operand gives a NaN, so the
  result never depends on the order of the operands;
* ``errstate()`` -- a context manager in which IEEE special values raise no warning.

The CuPy back end (cupy_backend.py) is another implementation of this interface, not a change
to the evaluator; xp_backend.py holds what it shares with the test back end.
"""
from __future__ import annotations

from .cupy_backend import BackendUnavailable, CupyBackend, cupy_usable
from .numpy_backend import NumpyBackend
from .xp_backend import DTYPES

BACKENDS = {"numpy": NumpyBackend, "cupy": CupyBackend}
CHOICES = ("numpy", "cupy", "auto")     # what --backend / backend= accept


def get_backend(name: str = "numpy", threads: int = 1, dtype: str = "f64"):
    """The back end called ``name`` ("numpy" or "cupy"), in precision ``dtype`` ("f64" or
    "f32"), the NumPy back end's BLAS on ``threads`` threads (1: matrix products give the same
    bits whatever the machine's settings).  ValueError for an unknown name or precision;
    :class:`BackendUnavailable` (its message says what is missing) when CuPy or a CUDA device
    is."""
    try:
        cls = BACKENDS[name]
    except KeyError:
        raise ValueError("unknown back end %r (known: %s)" % (name, ", ".join(sorted(BACKENDS)))) from None
    if dtype not in DTYPES:
        raise ValueError("unknown precision %r (known: f32, f64)" % (dtype,))
    if cls is NumpyBackend:
        return cls(threads=threads, dtype=dtype)
    return cls(dtype=dtype)


def resolve(name: str, program, dtype: str = "f64"):
    """(back end name, reason or None): ``auto`` decided for ``program`` from its cost
    (goat/gpu/auto.py); any other name as it is."""
    if name != "auto":
        return name, None
    from .auto import choose
    choice = choose(program, dtype, cupy_usable)
    return choice.backend, choice.reason


__all__ = ["BACKENDS", "CHOICES", "BackendUnavailable", "get_backend", "resolve",
           "NumpyBackend", "CupyBackend"]
