"""The test back end: NumPy behind the GPU back end's interface, refusing host round trips.

CI has no GPU, so the contract the CuPy back end relies on is tested here: every array this
back end makes is a :class:`DeviceArray`, a NumPy array that behaves as a CuPy array does for
what goat asks of it (arithmetic, ufuncs, ``reshape``, indexing, ``astype``, ``view``) but
**cannot be read on the host**: ``float()``, ``bool()``, ``int()``, ``len()``, iteration,
``tolist()``, ``item()`` and ``numpy.asarray()`` raise :class:`HostRoundTrip`, and so does
handing a host (NumPy) array to a device op, which CuPy refuses too.  The only ways out are
the interface's own -- :meth:`GuardBackend.to_numpy` (printing, ``save``) and
:meth:`GuardBackend.scalar` (a loop bound, an if condition, a seed, an index check) -- and
the back end counts them, and counts the "launches" (each array-module call, a fused group
being one), so a test can hold the evaluator to the round trips and kernels it should make.

It runs on the shared generic implementation (:class:`goat.gpu.xp_backend.XpBackend`), the
very code the CuPy back end runs, and fuses elementwise ops as CuPy does (every one, chains
into one; computed here by composing the ops' own evaluations), so its results must equal the
NumPy back end's bit for bit (tests/test_gpu.py).  It is for tests; ``goat run`` does not
offer it.
"""
from __future__ import annotations

import numpy as np
from numpy.lib.mixins import NDArrayOperatorsMixin

from . import kernels
from .xp_backend import XpBackend


class HostRoundTrip(AssertionError):
    """A device value was read on the host, or a host array used as a device one, outside the
    back end's to_numpy / scalar."""


def _refuse(what):
    def method(self, *args, **kw):
        raise HostRoundTrip("%s of a device array %s: a host round trip the evaluator should "
                            "not make" % (what, self._shape_text()))
    return method


class DeviceArray(NDArrayOperatorsMixin):
    """A NumPy array standing for one on a device (see the module's docstring)."""

    __slots__ = ("_a", "_counter")

    def __init__(self, a, counter):
        self._a = a
        self._counter = counter

    def _shape_text(self):
        return "(shape %s, %s)" % (self._a.shape, self._a.dtype)

    __array__ = _refuse("numpy.asarray")
    __float__ = _refuse("float()")
    __int__ = _refuse("int()")
    __index__ = _refuse("operator.index()")
    __bool__ = _refuse("bool()")
    __len__ = _refuse("len()")
    __iter__ = _refuse("iteration")
    tolist = _refuse("tolist()")
    item = _refuse("item()")

    def __repr__(self):
        return "DeviceArray%s" % self._shape_text()

    # what a CuPy array has
    shape = property(lambda self: self._a.shape)
    size = property(lambda self: self._a.size)
    ndim = property(lambda self: self._a.ndim)
    dtype = property(lambda self: self._a.dtype)
    strides = property(lambda self: self._a.strides)
    T = property(lambda self: self._wrap(self._a.T))

    def _wrap(self, r):
        return _wrap(r, self._counter)

    def __array_ufunc__(self, ufunc, method, *inputs, **kw):
        self._counter.launch()
        r = getattr(ufunc, method)(*_unwrap(inputs), **_unwrap(kw))
        if method == "at":
            return None
        return self._wrap(r)

    def __getitem__(self, key):
        self._counter.launch()
        return self._wrap(self._a[_unwrap(key)])

    def __setitem__(self, key, value):
        self._counter.launch()
        self._a[_unwrap(key)] = _unwrap(value)


def _method(name, launches=True):
    def method(self, *args, **kw):
        if launches:
            self._counter.launch()
        return self._wrap(getattr(self._a, name)(*_unwrap(args), **_unwrap(kw)))
    method.__name__ = name
    return method


for _name, _launches in (("reshape", False), ("swapaxes", False), ("view", False),
                         ("astype", True), ("copy", True), ("any", True), ("all", True),
                         ("sum", True), ("max", True), ("min", True)):
    setattr(DeviceArray, _name, _method(_name, _launches))


def _unwrap(v):
    t = type(v)
    if t is DeviceArray:
        return v._a
    if t is tuple or t is list:
        return t(_unwrap(x) for x in v)
    if t is dict:
        return {k: _unwrap(x) for k, x in v.items()}
    if isinstance(v, np.ndarray) and v.ndim > 0:
        raise HostRoundTrip("a host (NumPy) array of shape %s given to a device op: CuPy "
                            "refuses it; make it with the back end's asarray" % (v.shape,))
    return v


def _wrap(r, counter):
    if isinstance(r, np.ndarray):
        return DeviceArray(r, counter)
    if isinstance(r, (np.floating, np.integer, np.bool_)):
        return DeviceArray(np.asarray(r), counter)      # CuPy gives a 0-d array
    if type(r) is tuple:
        return tuple(_wrap(x, counter) for x in r)
    return r


class Counter:
    """What a guarded run did: ``launches`` (array-module calls; a fused group is one),
    ``uploads`` (asarray), ``downloads`` (to_numpy) and ``reads`` (scalar)."""

    def __init__(self):
        self.launches = self.uploads = self.downloads = self.reads = 0
        self.paused = 0
        self.effects = 0            # > 0 while a print or save runs (see watch_effects)
        self.stray_downloads = 0    # copies to the host made outside a print or save

    def watch_effects(self, evaluator):
        """Count, from now on, copies to the host that ``evaluator`` makes outside its
        effects (print, save): there should be none."""
        run = evaluator._effect

        def effect(e, vals):
            self.effects += 1
            try:
                return run(e, vals)
            finally:
                self.effects -= 1
        evaluator._effect = effect

    def launch(self):
        if not self.paused:
            self.launches += 1


class _Ufunc:
    def __init__(self, f, counter):
        self._f = f
        self._counter = counter

    def __call__(self, *args, **kw):
        self._counter.launch()
        return _wrap(self._f(*_unwrap(args), **_unwrap(kw)), self._counter)

    def __getattr__(self, method):
        f = getattr(self._f, method)
        if not callable(f):
            return f
        counter = self._counter

        def run(*args, **kw):
            counter.launch()
            return _wrap(f(*_unwrap(args), **_unwrap(kw)), counter)
        return run


class GuardedNumpy:
    """NumPy's namespace taking and giving :class:`DeviceArray` only."""

    def __init__(self, counter):
        self._counter = counter

    def __getattr__(self, name):
        obj = getattr(np, name)
        counter = self._counter
        if isinstance(obj, np.ufunc):
            return _Ufunc(obj, counter)
        if callable(obj) and not isinstance(obj, type):
            def run(*args, **kw):
                counter.launch()
                return _wrap(obj(*_unwrap(args), **_unwrap(kw)), counter)
            run.__name__ = name
            return run
        return obj                          # dtypes, constants


class GuardBackend(XpBackend):
    """The test back end (see the module's docstring).  ``counter`` holds what it did."""

    name = "guard"
    fuse_min = 1            # as CuPy: every elementwise op is a "kernel", chains one
    defer_checks = True     # as CuPy: checks of values wait for the next host read

    def __init__(self, dtype: str = "f64"):
        self.counter = Counter()
        super().__init__(GuardedNumpy(self.counter), dtype)
        self.groups = []            # the fused groups' specs, in the order they were made

    def asarray(self, a):
        self.counter.uploads += 1
        with np.errstate(all="ignore"):
            return DeviceArray(np.array(a, dtype=self.dtype), self.counter)

    def to_numpy(self, x):
        if self._pending:
            self.settle()
        self.counter.downloads += 1
        if not self.counter.effects:
            self.counter.stray_downloads += 1
        if type(x) is DeviceArray:
            return np.array(x._a, dtype=self.dtype)
        return np.array(x, dtype=self.dtype)

    def scalar(self, x) -> float:
        if type(x) is not DeviceArray:      # a number on the host: no read, nothing waits
            return float(x)
        if self._pending:
            self.settle()
        self.counter.reads += 1
        return float(x._a.reshape(()))

    def to_host(self, x):
        self.counter.reads += 1     # the held checks' flags, read at once
        return np.array(x._a if type(x) is DeviceArray else x)

    def fuse(self, spec):
        """A fused group as one launch: here the ops' own evaluations composed (the CuPy
        back end compiles the group's kernel instead)."""
        self.groups.append(spec)
        instrs = spec[1]
        extra = kernels.extra_outputs(spec)
        fns = [op.evaluate(self) for op, _ in instrs]
        counter = self.counter

        def run(*inputs):
            for x in inputs:
                if type(x) is DeviceArray:
                    break
            else:       # numbers only: on the host, as the CuPy back end computes them
                return self._on_host(spec, inputs)
            counter.launch()
            counter.paused += 1
            try:
                vals = list(inputs)
                for f, (_, refs) in zip(fns, instrs):
                    vals.append(f(*[vals[r] for r in refs]))
                if extra:
                    return (vals[-1],) + tuple(vals[r] for r in extra)
                return vals[-1]
            finally:
                counter.paused -= 1
        return run
