"""The libraries through which NumPy computes, for a compiled program to compute the same bits.

``goat run`` evaluates with NumPy; its matrix products go to NumPy's BLAS (OpenBLAS in NumPy's
wheels) and, on processors with AVX-512, its exp, log and tanh to Intel's SVML, which NumPy
ships inside ``_multiarray_umath`` and exports.  A compiled program opens the same libraries
when it runs (goat/aot/runtime/goat_np.c), from the paths found here when it is compiled:

* the BLAS: the library threadpoolctl finds loaded in this process after a matrix product,
  with its symbols' naming (``scipy_cblas_dgemm64_`` in NumPy 2's wheels: prefix ``scipy_``,
  suffix ``64_``, 64-bit integers; ``cblas_dgemm`` in a plain build);
* ``_multiarray_umath`` (its SVML functions need no Python, but the library refers to
  Python's symbols, so libpython is opened first, where Python was built as a shared
  library).

``goat compile --aot --portable`` records none of them: the program then computes with its
own loops and C's exp, log and tanh, which give the same numbers to the last bits.
"""
from __future__ import annotations

import ctypes
import functools
import os
import sysconfig

# (prefix, suffix, 64-bit integers) of the BLAS builds goat knows
_NAMINGS = (("scipy_", "64_", 1), ("", "64_", 1), ("scipy_", "", 0), ("", "", 0))
_NEEDED = ("cblas_ddot", "cblas_dgemv", "cblas_dgemm", "cblas_dsyrk")


@functools.lru_cache(maxsize=1)
def numpy_libraries() -> dict:
    """{"blas", "prefix", "suffix", "ilp64", "umath", "python"}: what the compiled program
    opens to compute as NumPy does ("" where nothing was found)."""
    found = {"blas": "", "prefix": "", "suffix": "", "ilp64": 0, "umath": "", "python": ""}
    try:
        import numpy as np
        np.ones((2, 2)) @ np.ones((2, 2))        # loads the BLAS, if it is loaded lazily
        from threadpoolctl import threadpool_info
        for lib in threadpool_info():
            if lib.get("user_api") != "blas" or not lib.get("filepath"):
                continue
            naming = _naming(lib["filepath"])
            if naming is not None:
                found["blas"] = lib["filepath"]
                found["prefix"], found["suffix"], found["ilp64"] = naming
                break
    except Exception:       # no threadpoolctl, an odd build: the program's own loops
        pass
    try:
        from numpy._core import _multiarray_umath
        found["umath"] = os.path.abspath(_multiarray_umath.__file__)
    except Exception:
        pass
    if sysconfig.get_config_var("Py_ENABLE_SHARED"):
        libdir = sysconfig.get_config_var("LIBDIR") or ""
        name = sysconfig.get_config_var("INSTSONAME") or sysconfig.get_config_var("LDLIBRARY")
        if name and os.path.exists(os.path.join(libdir, name)):
            found["python"] = os.path.join(libdir, name)
    return found


def _naming(path: str):
    try:
        lib = ctypes.CDLL(path)
    except OSError:
        return None
    for prefix, suffix, ilp64 in _NAMINGS:
        if all(hasattr(lib, prefix + name + suffix) for name in _NEEDED):
            return prefix, suffix, ilp64
    return None


def describe(libs: dict) -> str:
    """One line for a cache key or a report."""
    return "; ".join("%s=%s" % (k, libs[k]) for k in sorted(libs))


def _avx512_skx() -> bool:
    """Has this processor the AVX-512 features for which NumPy calls SVML (F, CD, BW, DQ,
    VL)?"""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    flags = set(line.split(":", 1)[1].split())
                    return {"avx512f", "avx512cd", "avx512bw", "avx512dq",
                            "avx512vl"} <= flags
    except OSError:
        pass
    return False


@functools.lru_cache(maxsize=1)
def c_functions_differ() -> tuple:
    """The functions among exp, log and tanh whose float64 bits NumPy computes otherwise
    than C's libm on this processor without AVX-512, where a compiled program calls C's
    (with AVX-512 both call SVML): tried on 20,000 numbers over each function's range.
    NumPy 2.4's tanh is vectorised code of its own, about one result in five a bit away
    from C's; its exp and log give C's bits."""
    if _avx512_skx():
        return ()
    import ctypes.util
    import numpy as np
    try:
        libm = ctypes.CDLL(ctypes.util.find_library("m") or "libm.so.6")
    except OSError:
        return ("exp", "log", "tanh")
    rng = np.random.default_rng(0)
    x = rng.standard_normal(20000) * np.exp(rng.standard_normal(20000) * 3)
    differ = []
    for name, sample in (("exp", x), ("log", np.abs(x)), ("tanh", x)):
        f = getattr(libm, name)
        f.restype, f.argtypes = ctypes.c_double, [ctypes.c_double]
        with np.errstate(all="ignore"):
            mine = getattr(np, name)(sample)
        if not np.array_equal(mine, np.array([f(v) for v in sample.tolist()])):
            differ.append(name)
    return tuple(differ)


def bit_exact() -> tuple:
    """(True, "") when a compiled program computes goat run's bits here, else (False, why):
    NumPy's BLAS found, and, where NumPy calls SVML, SVML reachable too."""
    libs = numpy_libraries()
    if not libs["blas"]:
        return False, "NumPy's BLAS was not found (threadpoolctl sees none goat can call)"
    if _avx512_skx() and not (libs["umath"] and libs["python"]):
        return False, ("NumPy computes exp, log and tanh with SVML on this processor, and "
                       "SVML needs libpython, which this Python was built without")
    return True, ""
