"""The back-end interface over any NumPy-like array module, without a host round trip.

:class:`XpBackend` implements goat's array semantics (see goat/gpu/__init__.py) with nothing
but the array module's own functions, each result staying where the arrays live: no
``float()``, ``bool()`` or ``.any()`` of a device value decides anything, since on a GPU each
is a copy to the host and a wait for the device.  The CuPy back end (cupy_backend.py) is this
class over CuPy; the test back end (guard.py) is this class over NumPy arrays that refuse to
be read on the host, which is how CI checks, without a GPU, that the evaluator and the ops
make no host round trip they should not.  The NumPy back end (numpy_backend.py) computes the
same results with host shortcuts (it tests a small result before fixing it up).

What NumPy alone leaves open, and this class fixes on the device:

* **Fresh NaNs** (0/0, inf - inf, sqrt(-1), 0 * inf in a matrix product) get x86's bits, the
  sign bit set, so that they print ``-nan`` as the book shows, whatever made them (a GPU's
  default NaN is positive);
* **maximum / minimum and the max / min reductions** by IEEE 754-2019: -0 < +0, and NaN
  operands give the OR of their bits;
* **the precision** (``dtype``): float64 (``f64``, the book's) or float32 (``f32``); every
  array this back end makes is of it, and :meth:`constant` gives a number of it.
"""
from __future__ import annotations


import numpy as np

from . import kernels

DTYPES = {"f64": np.dtype(np.float64), "f32": np.dtype(np.float32)}

# Ops that can make a NaN out of numbers, with how to tell which result cells had a NaN
# operand: elementwise ops broadcast their operands; a matrix product's cell (i, j) reads
# row i of a and column j of b.
INVALID = ("add", "subtract", "multiply", "divide", "sqrt", "log", "matmul", "tanh", "sin",
           "cos", "remainder")

_INTS = {8: np.int64, 4: np.int32}
_NEG_NAN_BITS = {8: np.int64(-0x0008000000000000), 4: np.int32(-0x00400000)}


def int_type(dtype):
    """The signed integer type as wide as ``dtype`` (to read a float's bits)."""
    return _INTS[np.dtype(dtype).itemsize]


def neg_nan(dtype):
    """x86's NaN (0/0) in ``dtype``: quiet, sign bit set."""
    return np.array([_NEG_NAN_BITS[np.dtype(dtype).itemsize]]).view(dtype)[0]


def nan_operands(xp, name, args):
    """A boolean array, broadcast like the result of op ``name`` on ``args``: True where some
    operand of the cell is a NaN."""
    if name == "matmul":
        a, b = args
        rows = xp.isnan(a).any(axis=-1, keepdims=True)          # ..., M, 1
        cols = xp.isnan(b).any(axis=-2, keepdims=True)          # ..., 1, N
        return rows | cols
    m = xp.isnan(args[0])
    for a in args[1:]:
        m = m | xp.isnan(a)
    return m


class FreshNaN:
    """The array module ``xp``, with the ops that can make a NaN out of numbers (``names``,
    every one by default) wrapped so that such a NaN gets x86's bits (sign set); NaNs that
    came in keep theirs.  ``host``: the arrays are on the host, so a quick test (is there a
    NaN at all?) may skip the fix."""

    def __init__(self, xp, dtype, host: bool, names=INVALID):
        self._xp = xp
        self._nan = neg_nan(dtype)
        for name in names:
            setattr(self, name, self._wrap(name, getattr(xp, name), host))

    def __getattr__(self, name):
        return getattr(self._xp, name)

    def _wrap(self, name, f, host):
        xp = self._xp
        isnan, where = xp.isnan, xp.where
        nan = self._nan

        def run(*args):
            r = f(*args)
            made = isnan(r)
            if host and not made.any():
                return r
            made = made & ~nan_operands(xp, name, args)
            if host and not getattr(r, "ndim", 0):      # two numbers: a NumPy scalar
                return nan if made else r
            return where(made, nan, r)
        return run


class XpBackend:
    """goat's array semantics on the array module ``xp`` (NumPy's interface), in precision
    ``dtype`` ("f64" or "f32"), with no host round trip but those the interface names
    (:meth:`to_numpy`, :meth:`scalar`)."""

    name = "xp"
    fuse_min = 0            # fused groups of at least this many ops go to fuse(); 0: none
    host = False            # arrays live on the host (quick host tests allowed)
    defer_checks = False    # require() defers its checks to the next host read (a device)
    max_pending = 64        # checks held at most before they are read all at once
    site = None             # the evaluator's hook: () -> OpError-to-GoatError, or None
    files = None            # the Python API's inputs and outputs (npyio.MemoryFiles), or None
    overwrites = False      # an op may write into an argument no one reads after (Op.overwrites)

    def __init__(self, xp, dtype: str = "f64"):
        if dtype not in DTYPES:
            raise ValueError("unknown precision %r (known: f32, f64)" % (dtype,))
        self.raw = xp
        self.dtype_name = dtype
        self.dtype = DTYPES[dtype]
        self._ftype = getattr(xp, self.dtype.name)      # xp.float64 / xp.float32
        self._itype = getattr(xp, np.dtype(int_type(self.dtype)).name)
        self.xp = FreshNaN(xp, self.dtype, self.host)
        self.maximum = self._extreme(True)
        self.minimum = self._extreme(False)
        self._pending = []
        self._host = None           # a NumPy back end, for groups of numbers only
        self._host_fns = {}

    # ------------------------------------------------------------ checks of values
    def require(self, ok, fail) -> bool:
        """A check of values the program computed (indices in range, say): ``ok`` is a
        one-element boolean array, ``fail()`` raises the OpError that says what is wrong when
        it is false.  On the host the check is made at once (False is returned).  A device
        back end (``defer_checks``) would have to wait for the device to read ``ok``, so it
        keeps the check, with the place the evaluator is at (:attr:`site`), until the next
        host read -- a print, a loop bound, the end of the run (:meth:`settle`) -- and
        returns True: the caller must then make its result safe to compute with whatever
        the values are (indices clamped into range, say), since the run goes on until then.
        The error raised is the same, at the same place, and what was printed before it is
        the same; only the device is not made to wait at every check."""
        site = self.site() if self.defer_checks and self.site is not None else None
        if site is None:
            if not self.scalar(ok):
                fail()
            return False
        self._pending.append((ok, fail, site))
        if len(self._pending) >= self.max_pending:
            self.settle()
        return True

    def close(self):
        """The run is over: give back what the back end holds for it (the NumPy back end: the
        BLAS's thread setting)."""

    def settle(self):
        """Read the checks :meth:`require` kept, all at once, and raise the first failing
        one's error (a GoatError at its place); nothing held afterwards."""
        err = self.first_failure()
        if err is not None:
            raise err

    def first_failure(self):
        """The located error of the first failing held check, or None; nothing held
        afterwards (the evaluator asks when another error stops the run: an earlier
        failed check is the one to report)."""
        if not self._pending:
            return None
        pending, self._pending = self._pending, []
        oks = self._read_all([p[0] for p in pending])
        for (_, fail, site), good in zip(pending, oks):
            if not good:
                try:
                    fail()
                except Exception as e:      # the OpError fail() raises, given its place
                    return site(e)
                return None
        return None

    def _read_all(self, flags):
        """Booleans, one per one-element array of ``flags``: one host read for them all."""
        xp = self.raw
        flags = xp.stack([f.reshape(()) for f in flags])
        return np.asarray(self.to_host(flags), dtype=bool).tolist()

    def to_host(self, x):
        """``x`` copied to a NumPy array as it is (no check settled: :meth:`to_numpy` is the
        evaluator's read)."""
        return np.asarray(x)

    # ------------------------------------------------------------ values
    def _on_host(self, spec, inputs):
        """A group of numbers only (constants of the program): computed as the NumPy back end
        computes them -- an op at a time, each result in the precision, a whole number that
        float32 cannot hold kept exact until it meets a float32 value -- and kept on the host,
        as numbers are (a kernel takes them as arguments).  A kernel would round every number
        to float32 first (16777217 - 16777216 would be 0, log(1e308) inf)."""
        host = self._host
        if host is None:
            from .numpy_backend import NumpyBackend
            host = self._host = NumpyBackend(dtype=self.dtype_name)
        fns = self._host_fns.get(spec)
        if fns is None:
            fns = self._host_fns[spec] = [op.evaluate(host) for op, _ in spec[1]]
        vals = list(inputs)
        with host.errstate():
            for f, (_, refs) in zip(fns, spec[1]):
                r = f(*[vals[j] for j in refs])
                if type(r) is np.ndarray:
                    # NumPy's tanh and where of numbers give a 0-d array, a host array a CuPy
                    # kernel refuses: its number instead
                    r = r[()]
                vals.append(host.in_precision(r))
        outs = [vals[-1]] + [vals[j] for j in kernels.extra_outputs(spec)]
        return outs[0] if len(outs) == 1 else tuple(outs)

    def in_precision(self, r):
        """``r``, a number an op gave, in the back end's precision: NumPy makes a float64
        scalar of an op on two Python floats; a Python float stays one where
        :meth:`constant` keeps it."""
        if type(r) is float:
            return self.constant(r)
        return r if r.dtype == self.dtype else r.astype(self.dtype)

    def constant(self, v: float):
        """A number written in the program (or a loop's index) as this back end holds it: a
        Python float in f64 (which NumPy and CuPy treat as a weak scalar); in f32 a float32
        scalar, so that an op on two numbers keeps the precision -- except a whole number
        of magnitude 2**24 or more, where float32 no longer holds every whole number (2**24
        may be 2**24 + 1 rounded): it stays the exact
        Python float, rounded only where it meets a float32 value, so that a seed or a loop
        bound written as 20240101 is that number (one computed in f32 beyond 2**24 is an
        error where it is read: :meth:`exact_limit`)."""
        if self.dtype_name == "f64" or (v == v and abs(v) >= 2 ** 24 and v == int(v)):
            return v
        with np.errstate(all="ignore"):
            return self.dtype.type(v)

    def exact_limit(self, x):
        """A bound below which the whole number ``x`` (a value read by :meth:`scalar`) is
        sure to be exact, or None when it holds every one a float64 does: a float32 value
        computed in f32 holds whole numbers exactly up to 2**24 only, and 2**24 itself may be
        2**24 + 1 rounded."""
        if type(x) is float or self.dtype_name == "f64":
            return None
        return 2 ** 24

    def asarray(self, a):
        """A host (NumPy) array -> this back end's array in its precision (a number too
        large for float32 becomes inf, as NumPy rounds it)."""
        with np.errstate(all="ignore"):     # rounded on the host, then copied over
            a = np.asarray(a, dtype=self.dtype)
        return a if self.raw is np else self.raw.asarray(a)

    def cast(self, x):
        """One of this back end's arrays (float64 random draws, say) in its precision."""
        return x.astype(self.dtype, copy=False)

    def to_numpy(self, x):
        """A value as a NumPy array in the back end's precision: the copy to the host that
        printing and ``save`` make (held checks are settled first)."""
        if self._pending:
            self.settle()
        return np.asarray(x, dtype=self.dtype)

    def scalar(self, x) -> float:
        """A one-element value as a Python float: a loop bound, an if condition, a seed.
        On a GPU this waits for the device: the evaluator reads a value on the host only
        here and in :meth:`to_numpy`."""
        if type(x) is float:
            return x
        if self._pending:
            self.settle()
        return float(x.reshape(()) if hasattr(x, "reshape") else x)

    def errstate(self):
        """IEEE special values raise no warning: NumPy's own (the NumPy back end computes
        with it) and those of a number rounded on the host on its way to a device kernel
        (CuPy 14 converts a Python float argument to float32 with NumPy's cast, which warns
        that 1e39 overflows to inf)."""
        return np.errstate(all="ignore")

    def add_at(self, out, rows, values):
        """``out[rows[k]] += values[k]`` for each k in order, repeated rows adding up (NumPy's
        ``add.at``): the embedding gradient (``gather``'s derivative)."""
        self.raw.add.at(out, rows, values)

    @property
    def matmul(self):
        return self.xp.matmul

    # ------------------------------------------------------------ IEEE 754-2019 max, min
    def _operand(self, a):
        xp = self.raw
        if isinstance(a, (float, int, np.generic)):
            return xp.full((), a, dtype=self.dtype)
        return a

    def _extreme(self, larger: bool):
        """maximum (``larger``) or minimum of two broadcasting operands, by IEEE 754-2019:
        of two equal operands (zeros of two signs) the AND (maximum: +0 wins) or OR of their
        bits; NaN operands give the OR of their bits."""
        xp_ = self

        def run(a, b):
            xp = xp_.raw
            it, ft = xp_._itype, xp_.dtype
            a, b = xp_._operand(a), xp_._operand(b)
            ab, bb = a.view(it), b.view(it)
            pick = xp.where(a > b, a, b) if larger else xp.where(a < b, a, b)
            tie = (ab & bb) if larger else (ab | bb)
            r = xp.where(a == b, tie.view(ft), pick)
            na, nb = xp.isnan(a), xp.isnan(b)
            nan = xp.where(na, ab, 0) | xp.where(nb, bb, 0)
            return xp.where(na | nb, nan.view(ft), r)
        return run

    # ------------------------------------------------------------ reductions
    def reducer(self, kind: str, axis: int):
        """``x -> reduce(x)`` along ``axis``, kept as size 1 (as the NumPy back end's): sum,
        mean (the sum divided by the count), max and min (IEEE 754-2019; an empty axis gives
        -inf / +inf)."""
        xp = self.raw
        if kind == "sum":
            return lambda x: xp.sum(x, axis=axis, keepdims=True)
        if kind == "mean":
            return lambda x: xp.sum(x, axis=axis, keepdims=True) / x.shape[axis]
        if kind in ("max", "min"):
            return lambda x: self._reduce_extreme(x, axis, kind == "max")
        raise ValueError("unknown reduction %r" % kind)

    def _reduce_extreme(self, x, axis, larger):
        xp = self.raw
        if x.shape[axis] == 0:
            shape = list(x.shape)
            shape[axis] = 1
            return xp.full(tuple(shape), -np.inf if larger else np.inf, dtype=self.dtype)
        r = (xp.max if larger else xp.min)(x, axis=axis, keepdims=True)
        xb = x.view(self._itype)
        # a zero result: +0 for a maximum when the row holds a +0 (read as integers, +0 is 0
        # and -0 and every negative number below it), -0 for a minimum when it holds a -0
        if larger:
            signed = xp.where(xp.max(xb, axis=axis, keepdims=True) == 0, 0.0, -0.0)
        else:
            signed = xp.where(xp.min(xb, axis=axis, keepdims=True) < 0, -0.0, 0.0)
        r = xp.where(r == 0, signed.astype(self.dtype), r)
        nanbits = self._or_reduce(xp.where(xp.isnan(x), xb, 0), axis)
        return xp.where(xp.isnan(r), nanbits.view(self.dtype), r)

    def _or_reduce(self, bits, axis):
        """The OR of the integers along ``axis`` (kept): the NaNs' bits of a row."""
        xp = self.raw
        orr = getattr(getattr(xp, "bitwise_or", None), "reduce", None)
        if orr is not None:
            try:
                return orr(bits, axis=axis, keepdims=True)
            except (TypeError, NotImplementedError):
                pass
        # without ufunc.reduce: the sign bit if any NaN has it, with the largest payload (the
        # OR itself whenever the row's NaNs share a payload, as goat's NaNs all do)
        it = self._itype
        top = it(np.iinfo(np.dtype(it)).min)
        sign = xp.any(bits < 0, axis=axis, keepdims=True)
        mag = xp.max(bits & ~top, axis=axis, keepdims=True)
        return xp.where(sign, mag | top, mag)
