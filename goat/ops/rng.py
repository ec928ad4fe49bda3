"""Reproducible random draws: ``rand(tensor[...], seed)`` and ``randn(tensor[...], seed)``.

The promise
-----------
The draws are a pure function of ``(seed, shape)``, and every back end (NumPy today; CuPy and
LLVM-compiled code later) must reproduce them **bit for bit**.  So the algorithm below uses
only operations whose results IEEE 754 fixes exactly:

* unsigned 64-bit integer arithmetic, wrapping modulo 2**64 (``+``, ``*``, ``>>``, ``^``,
  ``&``);
* conversion of integers below 2**53 to float64 (exact), and of small ints (exponents) to
  float64;
* float64 ``+ - * /`` and ``sqrt``, each correctly rounded (round to nearest, ties to even),
  one operation at a time: **no fused multiply-add, no reassociation** (a compiled back end
  must turn floating-point contraction off: no ``contract``/``fast`` flags in LLVM,
  ``--fmad=false`` or ``__dmul_rn``/``__dadd_rn`` in CUDA);
* exact scalings by powers of two and ``frexp`` (splitting a float into mantissa and
  exponent, which is bit manipulation).

No library ``log``, ``exp``, ``sin``, ``cos`` is called: their last bits differ between glibc,
NumPy's SIMD loops and CUDA.  The logarithm and cosine are computed here from the operations
above with fixed-length polynomials, in a fixed order written out below.  Every float
operation is elementwise; nothing is summed over an array.

Re-implementation recipe (all integers are uint64, wrapping; ``>>`` is a logical shift)
--------------------------------------------------------------------------------------
Constants::

    GOLDEN = 0x9E3779B97F4A7C15     # SplitMix64's increment (2**64 / golden ratio, odd)
    M1     = 0xBF58476D1CE4E5B9     # SplitMix64 finalizer multipliers (Steele, Lea &
    M2     = 0x94D049BB133111EB     #   Flood 2014; Vigna's splitmix64.c, Java's SplittableRandom)
    STREAM_UNIFORM = 1              # 11-bit stream tags put above the 53 seed bits
    STREAM_NORMAL  = 2

``mix(z)`` is the SplitMix64 finalizer (variant "Mix13" of Stafford)::

    z = (z ^ (z >> 30)) * M1
    z = (z ^ (z >> 27)) * M2
    return z ^ (z >> 31)

**Key.**  The seed is a whole number ``0 <= seed < 2**53`` (:func:`check_seed`).  For a
stream tag ``S``: ``key = mix((S << 53) | seed)``.  Distinct (stream, seed) pairs give distinct
pre-keys, and ``mix`` is a bijection, so ``rand`` and ``randn`` and different seeds get
unrelated keys (not shifted copies of one stream).

**Bits.**  ``bits(key, c) = mix(key + c * GOLDEN)`` for a counter ``c >= 1``; i.e. ``bits(key,
c)`` is the ``c``-th output of a SplitMix64 generator whose state starts at ``key``.  From
64 bits we keep the top 53: ``hi(b) = b >> 11``, an integer in ``[0, 2**53)``.

Cells are numbered ``k = 0, 1, ...`` in row-major (C) order of the result.  **A cell's value
depends only on (seed, k)**, never on the shape otherwise: ``randn(tensor[2x3], 1)`` and
``randn(tensor[6], 1)`` hold the same six numbers in the same order, and a larger tensor
starts with the cells of a smaller one.

**Uniform** (``rand``, key from ``STREAM_UNIFORM``): cell ``k`` is
``float(hi(bits(key, k + 1))) * 2**-53``, a multiple of 2**-53 in ``[0, 1)``.

**Normal** (``randn``, key from ``STREAM_NORMAL``): cell ``k`` uses counters ``2k+1`` and
``2k+2`` and the cosine half of Box-Muller (Box & Muller 1958, "A note on the generation of
random normal deviates")::

    u1 = float(hi(bits(key, 2k + 1)) + 1) * 2**-53      # in (0, 1]: ln(u1) is finite
    n2 = hi(bits(key, 2k + 2))                          # angle 2*pi*n2 / 2**53
    z  = sqrt(-2.0 * ln(u1)) * cos_2pi(n2)

``-2.0 * ln(u1)`` is exact scaling, then ``sqrt`` then one product.  ``|z| <= sqrt(2*53*ln 2)
~= 8.57``; ``z`` is never NaN or infinite.

``ln(u)`` for a positive finite float (:func:`ln`), after fdlibm's ``e_log.c`` reduction
and the atanh series (Abramowitz & Stegun 4.1.27)::

    m, e = frexp(u)                      # u = m * 2**e, 0.5 <= m < 1 (exact)
    if m < SQRT_HALF: m = m * 2.0; e = e - 1      # SQRT_HALF = 0x1.6a09e667f3bcdp-1
    s = (m - 1.0) / (m + 1.0)            # |s| <= 0.1716; m - 1.0 is exact
    w = s * s
    p = L[10]
    p = p * w + L[j]   for j = 9, 8, ..., 0          # L[j] = float64 nearest 1/(2j+1)
    t = s * p
    lm = t + t                           # ln(m) = 2 atanh(s) = 2 s (1 + w/3 + w**2/5 + ...)
    E = float(e)
    return E * LN2_HI + (E * LN2_LO + lm)

with fdlibm's split of ln 2: ``LN2_HI = 0x1.62e42feep-1`` (trailing zero bits, so ``E *
LN2_HI`` is exact) and ``LN2_LO = 0x1.a39ef35793c76p-33``.  Eleven terms leave a truncation
error below 1e-18 relative; the measured error against a 40-digit reference is at most
about 3.3e-16 relative (see tests/test_rng.py).

``cos_2pi(n)`` = cos(2 pi n / 2**53) for an integer ``0 <= n < 2**53`` (:func:`cos_2pi`).
The argument is reduced exactly, in integers, to the nearest quarter turn ``q`` and a
remainder ``f`` in ``[-1/2, 1/2)`` of a quarter turn::

    t = n + 2**50
    q = (t >> 51) & 3                              # quadrant 0..3
    f = (float(t & (2**51 - 1)) - 2**50) * 2**-51  # exact, in [-0.5, 0.5)
    x = f * PIO2                                   # PIO2 = float64 nearest pi/2
    y = x * x
    c = C[8];  c = c * y + C[j]  for j = 7, ..., 0   # C[j] = float64 nearest (-1)**j / (2j)!
    s = S[8];  s = s * y + S[j]  for j = 7, ..., 0   # S[j] = float64 nearest (-1)**j / (2j+1)!
    sn = x * s
    return  c if q == 0,  -sn if q == 1,  -c if q == 2,  sn if q == 3

(Taylor series; with ``|x| <= pi/4`` nine terms leave a truncation error below 3e-18.)
Negation is exact, so the result is fully determined.  Measured error: at most about
1.5e-16 absolute; the zeros at a quarter and three quarters of a turn are exact (-0.0 and
0.0), as are cos 0 = 1 and cos pi = -1.

All functions take the array module ``xp`` (``numpy``, or ``cupy`` with the same API) and use
only ``xp.asarray``, ``xp.arange``, ``xp.uint64``, ``xp.float64``, ``xp.frexp``,
``xp.where``, ``xp.sqrt``, ``astype`` and arithmetic operators.  Every integer constant is
wrapped as ``xp.uint64`` so that no operand is ever promoted to float64.
"""
from __future__ import annotations

import math
import operator
from fractions import Fraction

from .registry import OpError

SEED_LIMIT = 2 ** 53                   # seeds are whole numbers 0 <= seed < 2**53

MASK64 = (1 << 64) - 1
GOLDEN = 0x9E3779B97F4A7C15
M1 = 0xBF58476D1CE4E5B9
M2 = 0x94D049BB133111EB
STREAM_UNIFORM = 1
STREAM_NORMAL = 2

SQRT_HALF = float.fromhex("0x1.6a09e667f3bcdp-1")      # float64 nearest sqrt(1/2)
LN2_HI = float.fromhex("0x1.62e42feep-1")              # fdlibm ln2_hi (0x3fe62e42fee00000)
LN2_LO = float.fromhex("0x1.a39ef35793c76p-33")        # fdlibm ln2_lo (0x3dea39ef35793c76)
PIO2 = float.fromhex("0x1.921fb54442d18p+0")           # float64 nearest pi/2

# Polynomial coefficients, each the float64 nearest an exact rational (Fraction -> float
# rounds correctly), so every back end can write down the same bits.
LOG_COEFFS = tuple(float(Fraction(1, 2 * j + 1)) for j in range(11))          # 1/(2j+1)
COS_COEFFS = tuple(float(Fraction((-1) ** j, math.factorial(2 * j))) for j in range(9))
SIN_COEFFS = tuple(float(Fraction((-1) ** j, math.factorial(2 * j + 1))) for j in range(9))

_TWO_M53 = 2.0 ** -53
_TWO_M51 = 2.0 ** -51
_TWO_50 = 2.0 ** 50


# ---------------------------------------------------------------- seeds and keys

def _format_seed(v: float) -> str:
    if math.isfinite(v) and v.is_integer() and abs(v) < 2.0 ** 63:
        return str(int(v))
    if v != v:                          # with its sign, as a print shows it
        from ..interp.printer import format_number
        return format_number(v)
    return repr(v)                      # 2.5, inf, -inf, 1e+300


def check_seed(seed) -> int:
    """The seed as a Python int, after checking it.

    ``seed`` is the value a program passes: a Python float (or int) or a 0-d array (NumPy or
    CuPy).  It must be a whole number with ``0 <= seed < 2**53`` (so that every such float64
    is exact); otherwise :class:`OpError` is raised, e.g. ``a seed must be a whole number
    from 0 to 9007199254740991, got 2.5`` (likewise for -1, nan, inf, 2**53).
    """
    def bad(got):
        return OpError("a seed must be a whole number from 0 to %d, got %s"
                       % (SEED_LIMIT - 1, got))

    shape = getattr(seed, "shape", ())
    if tuple(shape) != ():
        raise OpError("a seed must be a single number, got a tensor of shape %s"
                      % "x".join(str(d) for d in shape))
    if isinstance(seed, bool):
        raise bad(seed)
    try:
        as_int = operator.index(seed)   # Python ints and NumPy integer scalars: exact
    except TypeError:
        as_int = None
    if as_int is not None:
        if 0 <= as_int < SEED_LIMIT:
            return int(as_int)
        raise bad(as_int)
    try:
        v = float(seed)
    except (TypeError, ValueError, OverflowError):
        raise bad(repr(seed)) from None
    if not (math.isfinite(v) and v.is_integer() and 0.0 <= v < SEED_LIMIT):
        raise bad(_format_seed(v))
    return int(v)


def mix64(z: int) -> int:
    """The SplitMix64 finalizer on a Python int (taken modulo 2**64); returns an int in
    ``[0, 2**64)``.  Source: Steele, Lea & Flood, "Fast splittable pseudorandom number
    generators" (OOPSLA 2014); constants as in Vigna's splitmix64.c."""
    z &= MASK64
    z = ((z ^ (z >> 30)) * M1) & MASK64
    z = ((z ^ (z >> 27)) * M2) & MASK64
    return z ^ (z >> 31)


def stream_key(stream: int, seed: int) -> int:
    """The 64-bit key of stream ``stream`` (1 uniform, 2 normal) for a checked seed:
    ``mix((stream << 53) | seed)``."""
    return mix64((stream << 53) | seed)


# ---------------------------------------------------------------- array kernels

def _mix(xp, z):
    """The SplitMix64 finalizer on a uint64 array (wrapping arithmetic)."""
    z = (z ^ (z >> xp.uint64(30))) * xp.uint64(M1)
    z = (z ^ (z >> xp.uint64(27))) * xp.uint64(M2)
    return z ^ (z >> xp.uint64(31))


def _hi53(xp, key: int, counters):
    """``mix(key + c * GOLDEN) >> 11`` for a uint64 array of counters ``c``: integers in
    ``[0, 2**53)`` (uint64)."""
    z = counters * xp.uint64(GOLDEN) + xp.uint64(key)
    return _mix(xp, z) >> xp.uint64(11)


def ln(xp, u):
    """Natural logarithm of a float64 array of positive finite values, from + - * / and
    frexp only (recipe in the module docstring: fdlibm's reduction to m in [sqrt(1/2),
    sqrt(2)), then ln m = 2 atanh((m-1)/(m+1)) by an 11-term odd series in Horner form).
    Same shape as ``u``; error below about 3.3e-16 relative.  Not for zero, negatives, inf
    or nan."""
    u = xp.asarray(u, dtype=xp.float64)
    m, e = xp.frexp(u)
    small = m < SQRT_HALF
    m = xp.where(small, m * 2.0, m)
    e = xp.where(small, e - 1, e)
    s = (m - 1.0) / (m + 1.0)
    w = s * s
    p = xp.full(s.shape, LOG_COEFFS[-1], dtype=xp.float64)
    for c in LOG_COEFFS[-2::-1]:     # p = p * w + c, two roundings (in place)
        p *= w
        p += c
    t = s * p
    lm = t + t
    ef = e.astype(xp.float64)
    return ef * LN2_HI + (ef * LN2_LO + lm)


def cos_2pi(xp, n):
    """``cos(2 pi n / 2**53)`` for a uint64 array of integers ``0 <= n < 2**53``, from + - *
    and integer bit operations only (recipe in the module docstring: exact reduction to the
    nearest quarter turn, then 9-term Taylor polynomials for cos and sin on |x| <= pi/4).
    Same shape as ``n``; error below about 1.5e-16 absolute."""
    n = xp.asarray(n, dtype=xp.uint64)
    t = n + xp.uint64(1 << 50)
    q = (t >> xp.uint64(51)) & xp.uint64(3)
    f = ((t & xp.uint64((1 << 51) - 1)).astype(xp.float64) - _TWO_50) * _TWO_M51
    x = f * PIO2
    y = x * x
    c = xp.full(y.shape, COS_COEFFS[-1], dtype=xp.float64)
    for k in COS_COEFFS[-2::-1]:     # c = c * y + k, two roundings (in place)
        c *= y
        c += k
    s = xp.full(y.shape, SIN_COEFFS[-1], dtype=xp.float64)
    for k in SIN_COEFFS[-2::-1]:
        s *= y
        s += k
    sn = x * s
    return xp.where(q == xp.uint64(0), c,
                    xp.where(q == xp.uint64(1), -sn,
                             xp.where(q == xp.uint64(2), -c, sn)))


def _cells(shape) -> int:
    shape = tuple(shape)
    for d in shape:
        if operator.index(d) < 0:
            raise ValueError("a shape has non-negative dimensions, got %r" % (shape,))
    return math.prod(shape)


def uniform(xp, shape: tuple, seed):
    """``rand``: a float64 array of shape ``shape`` (a tuple of non-negative ints, any rank,
    ``()`` for a scalar) of uniform draws on ``[0, 1)``, each a multiple of 2**-53.

    Cell k (row-major) is ``(mix(key + (k+1) * GOLDEN) >> 11) * 2**-53`` with ``key =
    mix((1 << 53) | seed)`` -- SplitMix64 (Steele, Lea & Flood 2014); the value depends on
    (seed, k) only.  ``seed`` is checked by :func:`check_seed` (OpError if not a whole number
    from 0 to 2**53 - 1)."""
    key = stream_key(STREAM_UNIFORM, check_seed(seed))

    def block(a, b):
        counters = xp.arange(a + 1, b + 1, dtype=xp.uint64)
        return _hi53(xp, key, counters).astype(xp.float64) * _TWO_M53
    return _blocks(xp, shape, block)


# cells drawn at a time: a draw's temporaries (counters, their mixes, Box-Muller's terms) are
# of a block's size, not of the whole result's (a 40000x40000 randn had needed 16 times its
# 12.8 GB); each cell's value depends on its index only, so the bits are the same
BLOCK = 1 << 20


def _blocks(xp, shape, block):
    """The array of ``shape`` whose cells k in [a, b) are ``block(a, b)``, computed a block
    of cells at a time."""
    count = _cells(shape)
    if count <= BLOCK:
        return block(0, count).reshape(tuple(shape))
    out = xp.empty(count, dtype=xp.float64)
    for a in range(0, count, BLOCK):
        b = min(a + BLOCK, count)
        out[a:b] = block(a, b)
    return out.reshape(tuple(shape))


def normal(xp, shape: tuple, seed):
    """``randn``: a float64 array of shape ``shape`` (a tuple of non-negative ints, any rank,
    ``()`` for a scalar) of standard normal draws (mean 0, variance 1).

    Cell k (row-major) takes two SplitMix64 outputs of ``key = mix((2 << 53) | seed)``,
    counters 2k+1 and 2k+2, and applies Box-Muller (Box & Muller 1958):
    ``sqrt(-2 ln u1) * cos(2 pi u2)`` with ``u1`` in (0, 1], computed with this module's own
    :func:`ln` and :func:`cos_2pi` so that every back end gets the same bits.  The value
    depends on (seed, k) only; it is finite, with ``|z| < 8.6``.  ``seed`` is checked by
    :func:`check_seed`."""
    key = stream_key(STREAM_NORMAL, check_seed(seed))

    def block(a, b):
        k2 = xp.arange(a, b, dtype=xp.uint64) * xp.uint64(2)
        n1 = _hi53(xp, key, k2 + xp.uint64(1))
        n2 = _hi53(xp, key, k2 + xp.uint64(2))
        u1 = (n1 + xp.uint64(1)).astype(xp.float64) * _TWO_M53
        r = xp.sqrt(-2.0 * ln(xp, u1))
        return r * cos_2pi(xp, n2)
    return _blocks(xp, shape, block)
