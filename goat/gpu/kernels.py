"""Elementwise kernels generated from the op registry: one kernel per chain of elementwise ops.

The evaluator hands a back end that generates kernels (the CuPy back end) each *fused group*
of a region: elementwise ops whose intermediate values nothing else reads
(goat/interp/fusion.py).  A group is a :data:`Spec`::

    (n_inputs, ((op, refs), (op, refs), ...))

each instruction an elementwise :class:`goat.ops.registry.Op` and the references of its
operands: ``r < n_inputs`` is the group's input ``r``, ``r >= n_inputs`` the result of
instruction ``r - n_inputs``; the last instruction's result is the group's.  Every op gives
its scalar body in C (its registry entry's ``kernel``, e.g. ``"{0} + {1}"``), so a layer
norm's ``(x - mean) / sqrt(var + eps) * g + b`` is one kernel reading five inputs, not five
kernels writing four temporaries.  Inputs broadcast against each other as NumPy's do (CuPy's
``ElementwiseKernel`` does that); a computed value is the same in every cell it is read from,
so computing an intermediate once per output cell changes no bit.

The same source compiles as CUDA C++ (NVRTC, through CuPy) and as C (the host's compiler),
which is how the tests check every op's body without a GPU (tests/test_gpu.py): only the
prefix that defines the value type ``T``, its bits ``U`` and the reinterpretations differs
(:func:`prefix`).

Semantics kept from the NumPy back end (goat/gpu/numpy_backend.py), in the kernel itself:

* a NaN result of an arithmetic op (registry entries with ``fresh_nan``) has the bits x86
  gives it: the first NaN operand's, or, made out of numbers (``0/0``, ``inf - inf``,
  ``sqrt(-1)``), x86's default NaN with the sign bit set, which prints ``-nan`` as the book
  shows -- a GPU's arithmetic returns its own positive canonical NaN instead;
* ``maximum`` / ``minimum`` by IEEE 754-2019 (-0 < +0; NaN operands give the OR of their
  bits), ``%`` as NumPy's floor modulo (npy_divmod).

No floating-point contraction: NVRTC is given ``--fmad=false`` and the host compiler
``-ffp-contract=off``, so ``a * b + c`` is two roundings, as NumPy computes it.
"""
from __future__ import annotations

# ---------------------------------------------------------------- prefixes: T, U and bits

_CUDA = {
    "double": """typedef double T;
typedef unsigned long long U;
#define GOAT_FN __device__ __forceinline__
#define GOAT_BITS(x) ((U)__double_as_longlong(x))
#define GOAT_FROM(u) __longlong_as_double((long long)(u))
#define GOAT_NEG_NAN 0xfff8000000000000ULL
#define GOAT_INF 0x7ff0000000000000ULL
#define GOAT_SIGN 0x8000000000000000ULL
""",
    "float": """typedef float T;
typedef unsigned int U;
#define GOAT_FN __device__ __forceinline__
#define GOAT_BITS(x) ((U)__float_as_int(x))
#define GOAT_FROM(u) __int_as_float((int)(u))
#define GOAT_NEG_NAN 0xffc00000u
#define GOAT_INF 0x7f800000u
#define GOAT_SIGN 0x80000000u
""",
}

_C = {
    "double": """#include <math.h>
#include <string.h>
typedef double T;
typedef unsigned long long U;
#define GOAT_NEG_NAN 0xfff8000000000000ULL
#define GOAT_INF 0x7ff0000000000000ULL
#define GOAT_SIGN 0x8000000000000000ULL
""",
    "float": """#include <tgmath.h>   /* exp(float) is expf, as CUDA's overloads make it */
#include <string.h>
typedef float T;
typedef unsigned int U;
#define GOAT_NEG_NAN 0xffc00000u
#define GOAT_INF 0x7f800000u
#define GOAT_SIGN 0x80000000u
""",
}

_C_BITS = """#define GOAT_FN static inline
static inline U GOAT_BITS(T x) { U u; memcpy(&u, &x, sizeof u); return u; }
static inline T GOAT_FROM(U u) { T x; memcpy(&x, &u, sizeof x); return x; }
"""

# the functions the registry's bodies call, in the common subset of CUDA C++ and C
_FUNCTIONS = """
GOAT_FN T goat_fresh_nan(void) { return GOAT_FROM(GOAT_NEG_NAN); }
GOAT_FN T goat_inf(void) { return GOAT_FROM(GOAT_INF); }
GOAT_FN T goat_neg_inf(void) { return GOAT_FROM(GOAT_INF | GOAT_SIGN); }

/* NaN operands: the OR of their bits (so the sign is set if any operand's is) */
GOAT_FN T goat_nan_of(T a, T b) {
    U u = 0;
    if (isnan(a)) u |= GOAT_BITS(a);
    if (isnan(b)) u |= GOAT_BITS(b);
    return GOAT_FROM(u);
}

/* a + b with x86's NaN: the first NaN operand, else (inf - inf) -nan; a sum's step */
GOAT_FN T goat_add(T a, T b) {
    T s = a + b;
    if (isnan(s)) s = isnan(a) ? a : isnan(b) ? b : goat_fresh_nan();
    return s;
}

/* a mean: the sum s divided by the count n, its NaN x86's (0/0 of an empty row: -nan) */
GOAT_FN T goat_mean(T s, T n) {
    T m = s / n;
    return isnan(s) ? s : isnan(m) ? goat_fresh_nan() : m;
}

/* IEEE 754-2019 maximum: -0 < +0, so of two zeros +0 (the AND of their bits) */
GOAT_FN T goat_maximum(T a, T b) {
    if (isnan(a) || isnan(b)) return goat_nan_of(a, b);
    if (a == b) return GOAT_FROM(GOAT_BITS(a) & GOAT_BITS(b));
    return a > b ? a : b;
}

/* IEEE 754-2019 minimum: of two zeros -0 (the OR of their bits) */
GOAT_FN T goat_minimum(T a, T b) {
    if (isnan(a) || isnan(b)) return goat_nan_of(a, b);
    if (a == b) return GOAT_FROM(GOAT_BITS(a) | GOAT_BITS(b));
    return a < b ? a : b;
}

/* 1 / (1 + exp(-x)) as NumPy computes it; a NaN comes out with its sign flipped (-x) */
GOAT_FN T goat_sigmoid(T x) {
    if (isnan(x)) return -x;
    return (T)1 / ((T)1 + exp(-x));
}

/* NumPy's floor modulo (npy_divmod): fmod moved into b's sign; a zero takes b's sign;
   a % 0 is fmod's NaN */
GOAT_FN T goat_remainder(T a, T b) {
    /* NaN operands as NumPy's remainder on x86 gives them: the NaN one; of two NaNs, a
       negative NaN only when both are (the AND of their bits, for NaNs of one payload) */
    if (isnan(a) && isnan(b)) return GOAT_FROM(GOAT_BITS(a) & GOAT_BITS(b));
    if (isnan(a)) return a;
    if (isnan(b)) return b;
    T mod = fmod(a, b);
    if (isnan(mod)) return goat_fresh_nan();     /* a % 0, inf % b: made from numbers */
    if (mod != 0) {
        if ((b < 0) != (mod < 0)) mod += b;
    } else {
        mod = copysign((T)0, b);
    }
    return mod;
}
"""


# The reductions, as CuPy ReductionKernels: kind -> (reduce expression, identity, post-map).
# IEEE 754-2019 maximum and minimum are associative and commutative (ties of zeros by AND / OR
# of the bits, NaNs by OR), so a parallel max or min in any order has the bits of the NumPy
# back end's.  A sum is added in the GPU's order (its last bits differ from NumPy's pairwise
# sums), each addition giving its NaN x86's bits; the mean is the sum divided by the count,
# as NumPy's (0/0 for an empty row: x86's -nan).
#
# What CuPy makes of them (cupy/_core/_reduction.pyx, _cub_reduction.pyx, v13): the post-map
# is pasted into an expression, ``(POST)``, so it must be one expression; on CUB's path
# (a contiguous input reduced along its last axis) CuPy renames by plain text replacement,
# every ``y`` of the post-map to ``out0`` and every ``x`` of the map to ``in0``, and replaces
# ``_in_ind.size()`` by the segment's size only for a kernel whose name holds "mean" -- so
# no other y in a post-map, no other x in a map, and the mean's kernel is named
# goat_reduce_mean.  The elementwise body (:func:`body`) is pasted as it is.
_COUNT = "(T)(_in_ind.size() / _out_ind.size())"
REDUCTIONS = {
    "max": ("goat_maximum(a, b)", "goat_neg_inf()", "y = a"),
    "min": ("goat_minimum(a, b)", "goat_inf()", "y = a"),
    "sum": ("goat_add(a, b)", "0", "y = a"),
    "mean": ("goat_add(a, b)", "0", "y = goat_mean(a, %s)" % _COUNT),
}

# CuPy's names of the precisions in a kernel's parameters (NumPy's dtype names; CuPy maps
# them to C's double and float), and the C types of goat's prefix
PARAM_TYPES = {"f64": "float64", "f32": "float32"}
C_TYPES = {"f64": "double", "f32": "float"}

# a value's NaNs with x86's sign (a matrix product's: the BLAS's own NaN for 0 * inf may be
# positive), as an expression of {0} (goat/interp/fusion.py's NAN_SIGNED), and as a kernel
SIGNED_NAN = "(isnan({0}) ? goat_fresh_nan() : {0})"
SIGNED_NANS = "y = %s;" % SIGNED_NAN.format("x")


def prefix(target: str, ctype: str) -> str:
    """The definitions of ``T`` (``ctype``: "double" or "float"), its bits ``U`` and the
    helpers, for ``target`` "cuda" (NVRTC) or "c" (the host's C compiler)."""
    if target == "cuda":
        return _CUDA[ctype] + _FUNCTIONS
    return _C[ctype] + _C_BITS + _FUNCTIONS


# ---------------------------------------------------------------- the kernel's body

def extra_outputs(spec) -> tuple:
    """The references of a fused group's extra outputs (goat/interp/fusion.py's ``multi``),
    written after its root; () for most groups."""
    return spec[2] if len(spec) > 2 else ()


def outputs(spec) -> int:
    """How many values a fused group writes: its root, and its extra outputs."""
    return 1 + len(extra_outputs(spec))


def body(spec) -> str:
    """The statements computing one cell of a fused group ``spec`` from its inputs ``x0``,
    ``x1``, ... into ``y`` (and its extra outputs into ``y1``, ``y2``, ...): one
    ``T tJ = ...;`` per instruction, in order, each op's registry body with its operands'
    names put in."""
    n, instrs = spec[0], spec[1]
    lines = []

    def name(r):
        return "x%d" % r if r < n else "t%d" % (r - n)

    for j, (op, refs) in enumerate(instrs):
        args = [name(r) for r in refs]
        lines.append("T t%d = %s;" % (j, op.kernel.format(*args)))
        if op.fresh_nan:
            # x86's NaN: the first NaN operand's, else (made from numbers) -nan
            pick = "goat_fresh_nan()"
            for a in reversed(args):
                pick = "isnan(%s) ? %s : %s" % (a, a, pick)
            lines.append("if (isnan(t%d)) t%d = %s;" % (j, j, pick))
    lines.append("y = t%d;" % (len(instrs) - 1))
    for k, r in enumerate(extra_outputs(spec)):
        lines.append("y%d = %s;" % (k + 1, name(r)))
    return "\n".join(lines)


def describe(spec) -> str:
    """A fused group as one expression, for messages and kernel names:
    ``multiply(subtract(x0, x1), x2)``."""
    n, instrs = spec[0], spec[1]
    exprs = []

    def name(r):
        return "x%d" % r if r < n else exprs[r - n]

    for op, refs in instrs:
        exprs.append("%s(%s)" % (op.name, ", ".join(name(r) for r in refs)))
    return "; ".join([exprs[-1]] + [name(r) for r in extra_outputs(spec)])


def kernel_name(spec) -> str:
    """A C identifier naming the group: its ops, then a hash of its whole expression."""
    import hashlib          # here: OpenSSL's library costs every goat run 2 MB and 4 ms
    ops = "_".join(op.name for op, _ in spec[1][:4])
    digest = hashlib.sha1(describe(spec).encode()).hexdigest()[:10]
    return "goat_%s_%s" % (ops, digest)


def c_source(spec, ctype: str = "double") -> str:
    """The group as a C function ``void NAME(long n, const T *x0, ..., T *out)`` over ``n``
    cells of inputs already broadcast to the result's shape: the host-compiler twin of the
    CUDA kernel, which the tests compile to check the bodies' values."""
    n = spec[0]
    assert outputs(spec) == 1, "c_source writes one output"
    params = "".join(", const T *x%d_p" % k for k in range(n))
    loads = "".join("T x%d = x%d_p[i]; " % (k, k) for k in range(n))
    return (prefix("c", ctype)
            + "\nvoid %s(long n%s, T *out) {\n" % (kernel_name(spec), params)
            + "for (long i = 0; i < n; i++) {\n%sT y;\n%s\nout[i] = y;\n}\n}\n"
            % (loads, body(spec)))
