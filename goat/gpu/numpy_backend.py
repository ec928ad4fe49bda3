"""The NumPy back end (the default): float64 arrays on the CPU.

Same bits every run
-------------------
goat promises that a program prints the same bits on every run, whatever the machine's thread
settings.  Two parts of this back end keep that promise where NumPy alone would not:

**Matrix products run the BLAS on one thread.**  NumPy hands ``@`` to its BLAS (OpenBLAS in
NumPy's wheels, MKL or BLIS in some other builds), and the BLAS's result depends on how many
threads it uses: with OpenBLAS, ``OPENBLAS_NUM_THREADS=1`` and ``=2`` give different bits
(``[[1e16, 1, ... 1, -1e16]] @ ones`` prints 19372 and 19684).  What OpenBLAS 0.3.31 does,
read in its source and measured on this project's 2-core machine (tests/test_determinism.py
holds the products that differed):

* a dot product (1xK @ Kx1, ``ddot``) longer than 10,000 is split along K, one partial sum
  per thread added at the end, so its bits depend on the thread count itself; a
  matrix-vector product (``gemv``) is split among threads too, and its bits change with the
  split (30x20000 @ 20000x1 and 1x20000 @ 20000x30 differ);
* a matrix product (``gemm``; ``syrk`` for ``a @ transpose(a)``) is split along M and N only,
  never K -- but once it is large enough to be threaded (M*N*K above 65536 * 4) the threaded
  driver cuts K into blocks by another rule than the one-thread driver (``(k + 1) / 2``
  against a multiple of the kernel's unroll, for a remainder between GEMM_Q and 2*GEMM_Q), so
  64x600 @ 600x64, 100x1000 @ 1000x100 and 1000x1000 @ 1000x1000 change their bits between
  one thread and several;
* a batched (rank 3 or more) product is a loop of the same BLAS calls, one per matrix, and
  differs the same way.  NumPy's own reductions (``np.add.reduce``, ``maximum.reduce``) run
  on the calling thread only and never differ.

So no rule on the inner dimension alone would do: any product that the BLAS threads may
change.  When this back end first evaluates a matrix product it limits every BLAS library
loaded into the process to one thread, through threadpoolctl (which knows OpenBLAS, MKL, BLIS
and FlexiBLAS), for the rest of the run (:func:`hold_blas_threads`); when the run ends
(:meth:`NumpyBackend.close`) the libraries get back the threads they had.  A product then has
the one-thread BLAS's bits, the same with OPENBLAS_NUM_THREADS / OMP_NUM_THREADS /
MKL_NUM_THREADS at 1, 2 or 4, or unset.  The setting is process-wide: runs in several Python
threads at once that ask for the same number share it, and one that asks for another number
waits until they end (so that ``threads=1`` keeps its bits).

What it costs (bench/bench_blas.py, three runs on the 2-core machine while other work shared
it, load average 4 to 6): nothing to see on the chapter's training loop, whose 5,862 products
(the largest 112x8 @ 8x112, M*N*K = 100,352) OpenBLAS never threads -- its run time moved by
+-25% from run to run whichever the variant.  Large products could lose the second core, up
to 2x on an idle machine; on the shared machine one thread was mostly faster, as a BLAS thread
waiting for a busy core costs more than it brings: 20 products 1000x1000 @ 1000x1000 in 0.7x
to 0.8x the time, 1,000 products 200x200 @ 200x200 in 0.05x to 0.13x, one 200x200 product
(best of 9) in 0.17x to 1.27x.  Limiting each product separately and restoring the setting
after it was measured too, and rejected: 1.3x to 1.6x the training loop's run time (a few
microseconds of threadpoolctl at each product), for the sake of an embedding program's later
BLAS calls.  The bits are those of the one-thread kernel that the BLAS picks for the
processor (AVX2, AVX-512, ...): goat promises the same bits on one machine and build, whatever
its thread settings, not the same bits on every processor.

**maximum, minimum and the max/min reductions follow IEEE 754-2019** (the ``maximum`` and
``minimum`` operations, as MLIR's ``arith.maximumf`` / ``arith.minimumf``): -0 is below +0, so
``maximum(-0, +0)`` is +0 and ``minimum`` -0 in either order, and a NaN operand gives a NaN
(its own bits; several NaNs give their bits OR'ed, so the sign bit is set if any operand's
is).  NumPy's ``np.maximum`` returns its second operand of an equal pair (``maximum(-0, 0)``
is 0, ``maximum(0, -0)`` is -0) and its reductions pick a zero and a NaN by their SIMD lanes.
goat keeps NumPy's result and re-derives only what NumPy leaves open: a reduction tests its
(small) result for a zero or a NaN, 1-3 microseconds, and re-derives those rows only (about 3x
NumPy's time when every row's maximum is a zero); ``maximum`` / ``minimum`` add one
comparison and one NaN test (2-3x NumPy's time on large arrays, a few microseconds on small
ones), and a second pass in the other order where some operands are equal.  The training
loop's 412 row maxima cost about a millisecond more.
"""
from __future__ import annotations

import threading
import warnings
import weakref

import numpy as np

from .xp_backend import DTYPES, INVALID, FreshNaN, XpBackend, int_type

_I64 = np.int64
_F64 = np.float64
ndarray = np.ndarray


# for each op of xp_backend.INVALID, operands from which it makes a NaN out of numbers (tanh
# cannot: its NaN is always its operand's)
_PROBES = {
    "add": ((np.inf,), (-np.inf,)), "subtract": ((np.inf,), (np.inf,)),
    "multiply": ((0.0,), (np.inf,)), "divide": ((0.0,), (0.0,)), "sqrt": ((-1.0,),),
    "log": ((-1.0, -np.inf),), "sin": ((np.inf,),), "cos": ((-np.inf,),),
    "remainder": ((1.0, np.inf), (0.0, 2.0)),
}
_UNSIGNED = {}


def unsigned_ops(dtype) -> tuple:
    """The ops of xp_backend.INVALID whose NaNs made out of numbers NumPy does not give
    x86's bits (sign set) in ``dtype``, here: found by trying each (cached).

    On x86 the processor's own invalid operations set the sign, but a function NumPy
    computes in software need not: NumPy 2.4's float64 ``log(-1)`` is a positive NaN where
    glibc's, the book's, is ``-nan``.  Each op is tried on one number, on NumPy scalars, and
    on 37 of them, contiguous and strided (its SIMD loops and their remainders).
    """
    dtype = np.dtype(dtype)
    found = _UNSIGNED.get(dtype)
    if found is not None:
        return found
    ops = []
    with np.errstate(all="ignore"):
        for name, args in _PROBES.items():
            f = getattr(np, name)
            for k in range(len(args[0])):
                cells = [a[k] for a in args]
                tries = [f(*[np.array([c], dtype) for c in cells]),
                         f(*[dtype.type(c) for c in cells]),
                         f(*[np.full(37, c, dtype) for c in cells]),
                         f(*[np.full(74, c, dtype)[::2] for c in cells])]
                if not all(np.isnan(r).all() and np.signbit(r).all() for r in tries):
                    ops.append(name)
                    break
        a, b = np.zeros((3, 3), dtype), np.full((3, 3), np.inf, dtype)
        r = np.matmul(a, b)
        if not (np.isnan(r).all() and np.signbit(r).all()):
            ops.append("matmul")
    found = _UNSIGNED[dtype] = tuple(ops)
    return found


# ---------------------------------------------------------------- the BLAS on one thread

_BLAS_LIBS = None       # threadpoolctl's controllers of the BLAS libraries loaded (found once)


def blas_libraries() -> list:
    """threadpoolctl's controllers of every BLAS library loaded into this process (NumPy's
    is loaded when NumPy is imported), looked up once."""
    global _BLAS_LIBS
    if _BLAS_LIBS is None:
        from threadpoolctl import ThreadpoolController
        _BLAS_LIBS = list(ThreadpoolController().select(user_api="blas").lib_controllers)
    return _BLAS_LIBS


def pin_blas_threads(threads: int = 1) -> list:
    """Limit every BLAS library loaded to ``threads`` threads (one: the same bits whatever the
    machine's settings); the paths of those that could not be.

    threadpoolctl lets one Python thread at a time control OpenBLAS's process-wide pool and
    silently ignores the others; goat takes control when another thread holds it (the
    setting is process-wide anyway) and gives it up again, so that the other thread can
    change it later.
    """
    failed = []
    for lib in blas_libraries():
        if lib.get_num_threads() != threads:
            _set_threads(lib, threads)
        if threads == 1 and lib.get_num_threads() != 1:
            failed.append(lib.filepath)
    return failed


def _set_threads(lib, threads: int):
    lib.set_num_threads(threads)
    release = getattr(type(lib), "clear_controlling_thread", None)
    if lib.get_num_threads() != threads and release is not None:
        release(force=True)
        lib.set_num_threads(threads)
    if release is not None:
        release()


_HOLD = threading.Condition()
_holds = []                 # [thread ident, threads] per hold not released yet, oldest first
_saved = []                 # (library, its threads) before the first hold


def _others(me: int, threads: int) -> bool:
    """Does a live thread other than ``me`` hold the BLAS at another count?  (A hold of a
    thread that has ended without releasing it is dropped.)"""
    alive = {t.ident for t in threading.enumerate()}
    held = len(_holds)
    _holds[:] = [h for h in _holds if h[0] in alive]
    if held and not _holds:
        _give_back()        # the last hold was dropped: as if it had been released
    return any(h[0] != me and h[1] != threads for h in _holds)


def _give_back():
    """Every library gets back the threads it had before the first hold."""
    for lib, n in _saved:
        if lib.get_num_threads() != n:
            _set_threads(lib, n)
    _saved[:] = []


def hold_blas_threads(threads: int, owner: int | None = None):
    """Hold every BLAS library at ``threads`` threads until :func:`release_blas_threads` is
    given the hold returned.  The first hold saves the libraries' settings; holds of other
    threads for the same count share it, and a hold for another count waits until they are
    released (so that a run on one thread keeps its bits).  In one thread holds nest (a run
    started from a run's output) and the latest count applies.  Returns (the hold, the paths
    of the libraries that could not be limited to one thread).  ``owner``: the ident of the
    thread the hold is for (default this one): a run computing on a helper thread holds for
    the thread that waits for it, which lives as long as the run."""
    me = threading.get_ident() if owner is None else owner
    with _HOLD:
        while _others(me, threads):
            _HOLD.wait(0.5)
        if not _holds:
            _saved[:] = [(lib, lib.get_num_threads()) for lib in blas_libraries()]
        hold = [me, threads]
        _holds.append(hold)
        return hold, pin_blas_threads(threads)


def release_blas_threads(hold):
    """Give up ``hold`` (from :func:`hold_blas_threads`; once given up, nothing); the last
    hold gives every library back the threads it had before the first."""
    with _HOLD:
        for i, h in enumerate(_holds):
            if h is hold:
                del _holds[i]
                break
        else:
            return
        if _holds:
            pin_blas_threads(_holds[-1][1])
        else:
            _give_back()
        _HOLD.notify_all()


# ---------------------------------------------------------------- IEEE 754-2019 max and min

_max_reduce = np.maximum.reduce
_min_reduce = np.minimum.reduce
_abs = np.abs
_count = np.count_nonzero
_CHUNK = 1 << 16        # cells: 512 KiB of float64
_INF = np.inf


def _bits(x):
    """``x``'s bits as signed integers as wide as its floats."""
    return x.view(int_type(x.dtype))


def _scalar_extreme(a: float, b: float, larger: bool):
    """maximum or minimum of two Python floats, as :func:`ieee_maximum` on arrays."""
    if a != a or b != b:
        if a != a and b != b:
            ai = np.float64(a).view(_I64)
            bi = np.float64(b).view(_I64)
            return _F64(np.bitwise_or(ai, bi).view(_F64))
        return _F64(a if a != a else b)
    if a == b:      # equal: the same number, or zeros of two signs
        ai = np.float64(a).view(_I64)
        bi = np.float64(b).view(_I64)
        return _F64((np.bitwise_and(ai, bi) if larger else np.bitwise_or(ai, bi)).view(_F64))
    return _F64(a if (a > b) == larger else b)


def _extreme(ufunc, combine, larger):
    """The IEEE 754-2019 maximum (``larger``) or minimum of two broadcasting operands.

    NumPy's ``ufunc`` returns its second operand of an equal pair, and equal operands differ in
    bits only when they are zeros of two signs.  So where some operands are equal, the other
    order is computed too and the two results' bits combined (``combine``: AND for the
    maximum, so +0 wins; OR for the minimum, so -0 wins), which leaves every other cell as it
    is: two passes, where a masked fix of the equal cells (``where=``) costs NumPy ten times
    more when they are many.  A NaN result (whatever the combining made of two NaNs: the AND
    of two NaNs' bits need not be a NaN) is made again as the OR of its NaN operands' bits.
    """
    inf = np.inf
    equal = np.equal

    def run(a, b):
        r = ufunc(a, b)
        if type(r) is not ndarray:                  # two scalars
            if r.dtype != _F64:                     # f32: as one-cell arrays
                return run(np.full(1, a, r.dtype), np.full(1, b, r.dtype))[0]
            return _scalar_extreme(float(a), float(b), larger)
        m = _min_reduce(r, axis=None, initial=inf)      # a NaN if r holds one
        eq = equal(a, b)
        if r.size < _CHUNK:
            if _count(eq):
                rb = _bits(r)
                combine(rb, _bits(ufunc(b, a)), out=rb)
        elif eq.any():
            # the other order a block of rows at a time, into one small buffer: a second
            # result as large as r would cost more in page faults than the pass itself
            ab, bb = np.broadcast_arrays(a, b)
            rows = max(1, _CHUNK // (r.size // r.shape[0]))
            scratch = np.empty((min(rows, r.shape[0]),) + r.shape[1:], dtype=r.dtype)
            sb = _bits(scratch)
            rb = _bits(r)
            for i in range(0, r.shape[0], rows):
                n = min(rows, r.shape[0] - i)
                ufunc(bb[i:i + n], ab[i:i + n], out=scratch[:n])
                combine(rb[i:i + n], sb[:n], out=rb[i:i + n])
        if m == m:
            return r
        a = np.asarray(a, dtype=r.dtype)
        b = np.asarray(b, dtype=r.dtype)
        na, nb = np.isnan(a), np.isnan(b)
        bits = np.bitwise_or(np.where(na, _bits(a), 0), np.where(nb, _bits(b), 0))
        np.copyto(_bits(r), bits, where=na | nb)
        return r
    return run


ieee_maximum = _extreme(np.maximum, np.bitwise_and, True)
ieee_minimum = _extreme(np.minimum, np.bitwise_or, False)


def _reduce_extreme(x, axis, larger):
    """The maximum (``larger``) or minimum along ``axis``, kept as size 1, by IEEE 754-2019:
    -0 < +0, and a NaN anywhere gives a NaN (the OR of the NaNs' bits); an empty axis gives
    -inf (maximum) or +inf (minimum).  NumPy's reduction is right except where its result is
    a zero or a NaN, which it picks by SIMD lane; those are made again from the whole row by
    an order-free rule (a zero maximum is +0 when the row holds a +0, a zero minimum -0 when
    it holds a -0; a NaN is the OR of the row's NaNs' bits).  ``x`` is a float64 array."""
    if larger:
        r = _max_reduce(x, axis=axis, keepdims=True, initial=-_INF)
    else:
        r = _min_reduce(x, axis=axis, keepdims=True, initial=_INF)
    # one test on the (small) result: is any of it a zero or a NaN?  (a NaN fails > too)
    if _min_reduce(_abs(r), axis=None, initial=_INF) > 0.0:
        return r
    zero = np.equal(r, 0.0)
    if zero.any():
        # Read as int64, +0 is 0, -0 is the least int64 and every negative number is negative:
        # in a row whose maximum is a zero (every value <= 0) the largest int64 is 0 just when
        # the row holds a +0; in a row whose minimum is a zero (every value >= 0, so every
        # int64 is >= 0 but -0's) the least is negative just when it holds a -0.
        xb = _bits(x)
        if larger:
            signed = np.where(_max_reduce(xb, axis=axis, keepdims=True) == 0, 0.0, -0.0)
        else:
            signed = np.where(_min_reduce(xb, axis=axis, keepdims=True) < 0, -0.0, 0.0)
        signed = signed.astype(r.dtype)
        np.copyto(r, signed, where=zero)
    nan = np.isnan(r)
    if nan.any():
        nb = np.bitwise_or.reduce(np.where(np.isnan(x), _bits(x), 0), axis=axis, keepdims=True)
        np.copyto(_bits(r), nb, where=nan)
    return r


# NumPy's float32 loops of these (SIMD) return a positive NaN for a negative one; float64's
# keep the NaN that came in, and so do goat's kernels
_F32_NAN_DROPPING = ("exp", "log", "sin", "cos")


class _KeepNaN:
    """The array module ``xp`` with the float32 functions that drop a NaN's sign wrapped to
    return the NaN that came in, as float64 does (one test for a NaN per call)."""

    def __init__(self, xp):
        self._xp = xp
        isnan, where = np.isnan, np.where
        for name in _F32_NAN_DROPPING:
            f = getattr(xp, name)

            def run(x, _f=f):
                r = _f(x)
                if type(r) is not ndarray:
                    return x if r != r and x != x else r
                if _max_reduce(isnan(r), axis=None, initial=False):
                    r = where(isnan(x), x, r)
                return r
            setattr(self, name, run)

    def __getattr__(self, name):
        return getattr(self._xp, name)


class NumpyBackend(XpBackend):
    """goat's arrays as NumPy arrays on the CPU, float64 (``dtype="f64"``, the book's) or
    float32 (``"f32"``)."""

    name = "numpy"
    host = True
    overwrites = True       # (its arrays' references are counted: Op.overwrites's check)

    def __init__(self, x86_nan: bool | None = None, threads: int = 1, dtype: str = "f64"):
        """``x86_nan``: True gives every op's fresh NaNs x86's bits itself, False none
        (NumPy's as they are), None those ops that NumPy's own do not already have
        (:func:`unsigned_ops`: on x86 most have them, so most cost nothing)."""
        super().__init__(np, dtype)
        self.threads = threads      # the BLAS's threads: 1 unless the user asks for more
        if x86_nan is None:
            names = unsigned_ops(self.dtype)
        else:
            names = INVALID if x86_nan else ()
        self.xp = FreshNaN(np, self.dtype, host=True, names=names) if names else np
        if dtype == "f32":
            self.xp = _KeepNaN(self.xp)
        self._blas_pinned = False
        self._owner = threading.get_ident()     # the thread the run is for (see matmul)
        self.maximum = ieee_maximum
        self.minimum = ieee_minimum

    @property
    def matmul(self):
        """``xp.matmul``, the BLAS limited to one thread first (see the module's docstring),
        until :meth:`close`.  Read when a matrix product is first evaluated, so a program
        without one never loads threadpoolctl."""
        if not self._blas_pinned:
            hold, failed = hold_blas_threads(self.threads, self._owner)
            # given up by close(), or when the back end is collected without it
            self._blas_hold = weakref.finalize(self, release_blas_threads, hold)
            if failed:
                warnings.warn("goat could not limit the BLAS library %s to one thread: matrix "
                              "products may give other bits with other thread settings"
                              % ", ".join(failed), RuntimeWarning, stacklevel=2)
            self._blas_pinned = True
        return self.xp.matmul

    def close(self):
        """The run is over: the BLAS libraries get their threads back (when this back end was
        the last to hold them)."""
        if self._blas_pinned:
            self._blas_pinned = False
            self._blas_hold()

    def reducer(self, kind: str, axis: int):
        """``x -> reduce(x)`` along ``axis``, keeping it as size 1.

        ufunc.reduce skips np.sum's Python-level dispatch (a few microseconds a call, which
        adds up over the 60,000 reductions of the book's training run).  The mean is the sum
        divided by the count, exactly as np.mean computes it.  max and min follow IEEE
        754-2019 (see the module's docstring); the max of an empty row is -inf and its min
        +inf (the identities), not an exception.
        """
        if kind == "sum":
            red = np.add.reduce
            return lambda x: red(x, axis=axis, keepdims=True)
        if kind == "max":
            return lambda x, _r=_reduce_extreme: _r(x, axis, True)
        if kind == "min":
            return lambda x, _r=_reduce_extreme: _r(x, axis, False)
        if kind == "mean":
            red = np.add.reduce
            div = np.true_divide
            return lambda x: div(red(x, axis=axis, keepdims=True), x.shape[axis])
        raise ValueError("unknown reduction %r" % kind)


__all__ = ["NumpyBackend", "DTYPES", "unsigned_ops", "ieee_maximum", "ieee_minimum",
           "pin_blas_threads", "hold_blas_threads", "release_blas_threads"]
