"""A stand-in for the ``cupy`` module, to run goat's CuPy back end without a GPU.

Arrays are NumPy's; the two things the back end generates, ``ElementwiseKernel`` and
``ReductionKernel``, compile the very operation text the back end writes, pasted as CuPy 13
pastes it (cupy/_core/_kernel.pyx, _reduction.pyx, _cub_reduction.pyx), with the C twin of
its CUDA prefix (goat/gpu/kernels.py), by the host's C compiler, and run it over the
broadcast inputs (an elementwise kernel) or along the reduced axis, in order (a reduction).
So the back end's own code -- its kernels' text, their parameters, scalar inputs, the
reductions' identities and post-maps, the one-hot embedding gradient -- runs for real; only
CUDA is missing (its own math library, its NaNs, its order of additions).
"""
from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import subprocess
import tempfile

import numpy as np

from goat.gpu import kernels

CC = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
_DIR = tempfile.mkdtemp(prefix="goat-fake-cupy-")
_C = {"float64": "double", "float32": "float"}      # CuPy's parameter types -> C's


# CuPy's own arithmetic (not goat's generated kernels) gives a NaN result the GPU's one NaN,
# positive; NumPy on x86 keeps a NaN operand's bits.  So the stand-in does too, for the
# functions goat might call on values holding NaNs.
_GPU_ARITHMETIC = {"add", "subtract", "multiply", "divide", "true_divide", "negative", "sum",
                   "mean", "exp", "log", "sqrt", "tanh", "sin", "cos", "power", "cumsum"}


def _positive_nans(r):
    if isinstance(r, np.ndarray) and r.dtype.kind == "f":
        return np.where(np.isnan(r), np.array(np.nan, dtype=r.dtype), r)
    if isinstance(r, (np.floating, float)) and r != r:
        return type(r)(np.nan)
    return r


def __getattr__(name):          # everything else is NumPy's
    f = getattr(np, name)
    if name in _GPU_ARITHMETIC:
        def run(*args, **kw):
            return _positive_nans(f(*args, **kw))
        run.__name__ = name
        return run
    return f


ndarray = np.ndarray


def asnumpy(x):
    return np.asarray(x)


def argsort(a, axis=-1, kind=None):  # CuPy's argsort is stable and takes no other kind
    if kind is not None:
        raise NotImplementedError("cupy.argsort takes no kind")
    return np.argsort(a, axis=axis, kind="stable")


def reshape(a, newshape, order="C"):
    """As CuPy's (cupy/_manipulation/shape.py): the array's own method, so a Python float,
    which has none, is refused, as CuPy refuses it."""
    return a.reshape(newshape, order=order)


def matmul(a, b):
    """NumPy's product, its NaNs made as cuBLAS makes them: CUDA's one NaN, positive (x86
    gives 0 * inf its sign bit; NumPy's BLAS keeps a NaN operand's)."""
    r = np.matmul(a, b)
    return np.where(np.isnan(r), np.float64("nan"), r).astype(r.dtype, copy=False)


class _Runtime:
    @staticmethod
    def getDeviceCount():
        return 1


class cuda:                     # noqa: N801 (cupy.cuda)
    runtime = _Runtime


def _build(source: str, name: str):
    key = hashlib.sha1(source.encode()).hexdigest()[:16]
    path = os.path.join(_DIR, "%s_%s" % (name, key))
    if not os.path.exists(path + ".so"):
        with open(path + ".c", "w") as f:
            f.write(source)
        r = subprocess.run([CC, "-O1", "-ffp-contract=off", "-shared", "-fPIC", "-o",
                            path + ".so", path + ".c", "-lm"], capture_output=True, text=True)
        if r.returncode:
            raise RuntimeError("fake cupy: the kernel does not compile:\n%s\n%s"
                               % (r.stderr, source))
    return getattr(ctypes.CDLL(path + ".so"), name)


def _params(text):
    """'float64 x0, float64 x1' -> [('float64', 'x0'), ('float64', 'x1')], the types checked
    as CuPy 13 checks them (cupy/_core/_kernel.pyx, ParameterInfo: a NumPy dtype's name)."""
    out = [tuple(p.split()) for p in text.split(",") if p.strip()]
    for t, _ in out:
        if np.dtype(t).name != t:
            raise ValueError("Wrong type %s" % t)
    return out


def _same_dtype(inputs, dtype):
    """CuPy refuses an array argument whose dtype is not the parameter's (cupy/_core/
    _kernel.pyx, _decide_params_type_core: 'Type is mismatched'); it converts scalars only."""
    for x in inputs:
        if isinstance(x, np.ndarray) and x.dtype != dtype:
            raise TypeError("Type is mismatched. %s %s" % (x.dtype, dtype))


def _ptr(a):
    return a.ctypes.data_as(ctypes.c_void_p)


class ElementwiseKernel:
    def __init__(self, in_params, out_params, operation, name="kernel", preamble="",
                 options=(), **kw):
        ins, outs = _params(in_params), _params(out_params)
        assert "--fmad=false" in options
        ctype = _C[outs[0][0]]
        assert len({t for t, _ in outs}) == 1 and preamble in ("", kernels.prefix("cuda", ctype))
        self.dtype = np.dtype(outs[0][0])
        args = "".join(", const T *%s_p" % n for _, n in ins)
        # CuPy pastes an input as a const reference (const double &x0 = _raw_x0[...]), so a
        # body that assigns to one does not compile; each output is a reference to its cell
        loads = "".join("const T %s = %s_p[i]; " % (n, n) for _, n in ins)
        results = "".join(", T *%s_p" % n for _, n in outs)
        decls = "".join("T %s; " % n for _, n in outs)
        stores = "".join("%s_p[i] = %s; " % (n, n) for _, n in outs)
        src = (kernels.prefix("c", ctype) + "\nvoid %s(long n%s%s) {\n"
               "for (long i = 0; i < n; i++) { %s %s\n%s;\n%s }\n}\n"
               % (name, args, results, loads, decls, operation, stores))
        self.fn = _build(src, name)
        self.n_in = len(ins)
        self.n_out = len(outs)

    def __call__(self, *inputs):
        assert len(inputs) == self.n_in
        assert any(isinstance(x, np.ndarray) for x in inputs), "CuPy needs an array argument"
        _same_dtype(inputs, self.dtype)
        # a scalar is converted as CuPy 14 converts it, by NumPy's cast (which warns of an
        # overflow to inf unless the caller's np.errstate says not to)
        arrays = np.broadcast_arrays(*[np.asarray(x, dtype=self.dtype) for x in inputs])
        arrays = [np.asarray(a, order="C") for a in arrays]     # (0-d stays 0-d, as in CuPy)
        outs = [np.empty(arrays[0].shape, dtype=self.dtype) for _ in range(self.n_out)]
        self.fn(ctypes.c_long(outs[0].size), *[_ptr(a) for a in arrays],
                *[_ptr(o) for o in outs])
        return outs[0] if self.n_out == 1 else tuple(outs)


class ReductionKernel:
    """Two variants, as CuPy 13 has (cupy/_core/_reduction.pyx and _cub_reduction.pyx): the
    plain one, and CUB's for a reduction along the last axis, where CuPy renames the map's
    ``x`` and the post-map's ``y`` by text replacement and gives ``_in_ind.size()`` a value
    only in a kernel named "...mean...".  Both paste the post-map into an expression."""

    def __init__(self, in_params, out_params, map_expr, reduce_expr, post_map_expr,
                 identity, name="reduce_kernel", preamble="", options=(), **kw):
        (ptype, x), = _params(in_params)
        (_, y), = _params(out_params)
        ctype = _C[ptype]
        assert "--fmad=false" in options and preamble == kernels.prefix("cuda", ctype)
        self.dtype = np.dtype(ptype)
        prefix = kernels.prefix("c", ctype)
        template = ("\nvoid %s(long rows, long n, const T *x_p, T *y_p) {\n"
                    "for (long r = 0; r < rows; r++) { T a = %s;\n"
                    "  for (long j = 0; j < n; j++) { T %s = x_p[r * n + j]; T b = %s; a = %s; }\n"
                    "  T %s; (%s); y_p[r] = %s; }\n}\n")
        plain = (post_map_expr.replace("_in_ind.size()", "(n * rows)")
                 .replace("_out_ind.size()", "(T)rows"))
        self.plain = _build(prefix + template % (name, identity, x, map_expr, reduce_expr, y,
                                                 plain, y), name)
        cub = post_map_expr
        if "mean" in name:
            cub = cub.replace("_in_ind.size()", "n").replace("_out_ind.size()", "1.0")
        cub_name = name + "_cub"
        self.cub = _build(prefix + template % (cub_name, identity, "in0",
                                               map_expr.replace(x, "in0"), reduce_expr,
                                               "out0", cub.replace(y, "out0"), "out0"),
                          cub_name)

    def __call__(self, x, axis, keepdims):
        assert keepdims
        _same_dtype((x,), self.dtype)
        x = np.asarray(x, self.dtype)
        fn = self.cub if axis in (-1, x.ndim - 1) and x.shape[axis] else self.plain
        moved = np.ascontiguousarray(np.moveaxis(x, axis, -1))
        n = moved.shape[-1]
        rows = moved.size // n if n else int(np.prod(moved.shape[:-1]))
        out = np.empty(moved.shape[:-1], dtype=self.dtype)
        fn(ctypes.c_long(rows), ctypes.c_long(n), _ptr(moved), _ptr(out))
        return np.expand_dims(out, axis)
