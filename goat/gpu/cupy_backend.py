"""The CuPy back end: goat's arrays on an NVIDIA GPU (``goat run --backend cupy``).

It is the generic back end (goat/gpu/xp_backend.py) over CuPy, plus kernels generated from the
op registry (goat/gpu/kernels.py):

* **every elementwise op is a generated kernel**, and a chain of them whose intermediate
  values nothing else reads is *one* kernel (goat/interp/fusion.py): a layer norm is a
  handful of launches, not twenty.  The kernels keep goat's rules in themselves -- a NaN made
  from numbers has x86's bits (``-nan``, as the book prints), ``maximum``/``minimum`` follow
  IEEE 754-2019, ``%`` is NumPy's floor modulo -- and are compiled with ``--fmad=false`` (no
  fused multiply-add: ``a * b + c`` rounds twice, as NumPy does);
* **each reduction is one kernel**: max and min with the IEEE 754-2019 maximum as the reduce
  step (associative, so any order of the GPU's threads gives the NumPy back end's bits); sums
  and means in the GPU's order (their last bits differ from NumPy's pairwise sums: the
  chapter's training is to stay within 1e-9 of the NumPy run, issue 8);
* matrix products are CuPy's (cuBLAS), their NaNs given x86's sign: by the fused kernel that
  reads the product, as it loads it, where every reader is one (or another product), else by
  a pass of its own;
* the embedding gradient (``gather``'s derivative) is a one-hot matrix product, so repeated
  tokens add up in a fixed order (GPU atomics would add them in a different order each run),
  infinities and NaNs put where NumPy's ``add.at`` puts them; beyond 2**26 one-hot cells it
  uses ``cupyx.scatter_add`` (atomics);
* in f32, CuPy compiles every kernel with ``-ftz=true``: float32 subnormals (below 1.2e-38)
  are flushed to zero, where NumPy keeps them (float64 is not affected);
* random draws use goat's counter-based generator (goat/ops/rng.py), whose every operation
  IEEE fixes exactly, on the device: the same bits as on the CPU.

Values leave the device only to be printed or saved (:meth:`to_numpy`) and when a loop bound,
an if condition, a seed or an index check is read (:meth:`scalar`): the test back end
(guard.py) holds the evaluator to that without a GPU.

Needs CuPy (``pip install '.[gpu]'`` in goat's folder brings ``cupy-cuda12x[ctk]``, CuPy for
CUDA 12 with the CUDA libraries it needs; an installed ``cupy-cuda13x`` serves as well) and a
CUDA device; :func:`load_cupy` says which is missing.  Checked against CuPy 13.6 and 14.2.
"""
from __future__ import annotations

import numpy as np

from . import kernels
from .xp_backend import XpBackend, neg_nan

_OPTIONS = ("--fmad=false",)
_ONEHOT_CELLS = 1 << 26


class BackendUnavailable(RuntimeError):
    """The back end asked for cannot run here; the message says what is missing."""


def load_cupy():
    """The ``cupy`` module, once it has found a CUDA device; BackendUnavailable naming what is
    missing otherwise (CuPy itself, the CUDA driver, a device)."""
    try:
        import cupy
    except ModuleNotFoundError as e:
        if e.name != "cupy":        # CuPy is there, something it imports is not
            raise BackendUnavailable("the cupy back end cannot load CuPy: %s" % e) from None
        raise BackendUnavailable(
            "the cupy back end needs CuPy, which is not installed: pip install "
            "'cupy-cuda12x[ctk]' installs it with the CUDA 12 libraries it needs "
            "('cupy-cuda13x[ctk]' for CUDA 13)") from None
    except Exception as e:          # a broken install: a missing CUDA library, say
        raise BackendUnavailable("the cupy back end cannot load CuPy: %s: %s"
                                 % (type(e).__name__, e)) from None
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as e:
        raise BackendUnavailable("the cupy back end found no CUDA device: %s (is the NVIDIA "
                                 "driver installed?)" % (str(e) or type(e).__name__)) from None
    if count < 1:
        raise BackendUnavailable("the cupy back end found no CUDA device")
    global _PROBED
    if not _PROBED:
        # CuPy compiles kernels with CUDA's NVRTC, which a driver alone does not bring
        try:
            probe = cupy.ElementwiseKernel("float64 x", "float64 y", "y = x", "goat_probe",
                                           options=_OPTIONS)
            probe(cupy.zeros(1))
        except Exception as e:
            raise BackendUnavailable("the cupy back end cannot compile a kernel: %s: %s (CuPy "
                                     "needs CUDA's NVRTC library and headers, from the CUDA "
                                     "toolkit or pip install 'cupy-cuda12x[ctk]', "
                                     "'cupy-cuda13x[ctk]' for CUDA 13)"
                                     % (type(e).__name__, e)) from None
        _PROBED = True
    return cupy


_PROBED = False


def cupy_usable() -> str | None:
    """None when the cupy back end can run here, else why not (for --backend auto)."""
    try:
        load_cupy()
    except BackendUnavailable as e:
        return str(e)
    return None


class CupyBackend(XpBackend):
    """goat's arrays as CuPy arrays on the current CUDA device, in ``dtype`` ("f64", the
    book's, or "f32")."""

    name = "cupy"
    fuse_min = 1            # every elementwise op is a generated kernel
    defer_checks = True     # an index check does not make the host wait for the device

    def __init__(self, dtype: str = "f64", threads: int = 1):
        cupy = load_cupy()
        super().__init__(cupy, dtype)
        self._cupy = cupy
        self._ptype = kernels.PARAM_TYPES[dtype]        # "float64": CuPy's name of the type
        self._preamble = kernels.prefix("cuda", kernels.C_TYPES[dtype])
        self._kernels = {}
        self._reductions = {}
        self._signed = cupy.ElementwiseKernel(
            "%s x" % self._ptype, "%s y" % self._ptype, kernels.SIGNED_NANS,
            "goat_signed_nans", preamble=self._preamble, options=_OPTIONS)

    # ------------------------------------------------------------ host round trips
    def to_numpy(self, x):
        if self._pending:
            self.settle()
        if isinstance(x, self._cupy.ndarray):
            return self._cupy.asnumpy(x).astype(self.dtype, copy=False)
        return np.asarray(x, dtype=self.dtype)

    def scalar(self, x) -> float:
        if not isinstance(x, self._cupy.ndarray):   # a number on the host: nothing waits
            return float(x)
        if self._pending:
            self.settle()
        return float(self._cupy.asnumpy(x.reshape(())))

    def to_host(self, x):
        return self._cupy.asnumpy(x)

    # ------------------------------------------------------------ kernels
    def fuse(self, spec):
        """The fused group ``spec`` (goat/gpu/kernels.py) as one CuPy ElementwiseKernel,
        compiled once per group and precision; a group with extra outputs returns them all,
        the root's first (CuPy's kernel with several outputs returns a tuple)."""
        k = self._kernels.get(spec)
        if k is None:
            n = spec[0]
            outs = ["%s y" % self._ptype] + ["%s y%d" % (self._ptype, j)
                                             for j in range(1, kernels.outputs(spec))]
            k = self._kernels[spec] = self._cupy.ElementwiseKernel(
                ", ".join("%s x%d" % (self._ptype, i) for i in range(n)),
                ", ".join(outs), kernels.body(spec), kernels.kernel_name(spec),
                preamble=self._preamble, options=_OPTIONS)
        cupy = self._cupy
        ndarray = cupy.ndarray

        def run(*inputs):
            for x in inputs:
                if isinstance(x, ndarray):
                    return k(*inputs)
            return self._on_host(spec, inputs)
        return run

    @property
    def matmul(self):
        mm, signed = self._cupy.matmul, self._signed
        return lambda a, b: signed(mm(a, b))

    @property
    def matmul_unsigned(self):
        """cuBLAS's product as it is, its NaNs positive: for a product whose readers give
        them x86's sign themselves (goat/interp/fusion.py's unsigned_products)."""
        return self._cupy.matmul

    def reducer(self, kind: str, axis: int):
        """One reduction kernel per kind (goat/gpu/kernels.py's REDUCTIONS): an empty axis
        gives the identity (0, -inf, +inf; the mean 0/0, a NaN, as NumPy's)."""
        if kind not in kernels.REDUCTIONS:
            return super().reducer(kind, axis)
        k = self._reductions.get(kind)
        if k is None:
            reduce_expr, identity, post = kernels.REDUCTIONS[kind]
            k = self._reductions[kind] = self._cupy.ReductionKernel(
                "%s x" % self._ptype, "%s y" % self._ptype, "x", reduce_expr, post,
                identity, "goat_reduce_" + kind, preamble=self._preamble, options=_OPTIONS)
        return lambda x: k(x, axis=axis, keepdims=True)

    def add_at(self, out, rows, values):
        """``out[rows[k]] += values[k]``: a one-hot matrix product, in a fixed order.  Its
        0 * inf would spread an infinity or a NaN to every row, so the finite values are
        added by the product and the infinities and NaNs counted by it (four column blocks,
        one product), then put where NumPy's add.at puts them: inf + -inf is a NaN."""
        cupy = self._cupy
        n, v = rows.size, out.shape[0]
        if n * v > _ONEHOT_CELLS:
            import cupyx
            cupyx.scatter_add(out, rows, values)
            return
        onehot = cupy.zeros((n, v), dtype=self.dtype)
        onehot[cupy.arange(n), rows] = 1
        c = values.shape[1]
        inf = np.inf
        parts = cupy.concatenate([cupy.where(cupy.isfinite(values), values, 0),
                                  values == inf, values == -inf, cupy.isnan(values)],
                                 axis=1).astype(self.dtype)
        s = onehot.T @ parts
        total, up, down, nan = s[:, :c], s[:, c:2 * c], s[:, 2 * c:3 * c], s[:, 3 * c:]
        total = cupy.where((nan > 0) | ((up > 0) & (down > 0)), neg_nan(self.dtype),
                           cupy.where(up > 0, inf, cupy.where(down > 0, -inf, total)))
        total = total.astype(self.dtype, copy=False)
        # a NaN keeps its bits (the GPU's out + NaN would be its own NaN, positive)
        cupy.copyto(out, cupy.where(cupy.isnan(total), total, out + total))
