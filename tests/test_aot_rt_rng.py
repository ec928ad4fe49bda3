"""goat/aot/runtime/rng.c: the AOT runtime's rand, randn and sample_rows give the same bits as
goat/ops/rng.py and the sample_rows op on the NumPy back end.

rng.c is compiled here (skipped without a C compiler ``cc``) into three shared libraries,
called through ctypes:

* ``real``: rng.c + goat_fail.c as the AOT build compiles them (-O2 -ffp-contract=off);
* ``fast``: the same with -O3 -march=native -ffp-contract=fast, where the compiler would fuse
  multiply-adds if rng.c did not turn contraction off itself;
* ``shim``: a test file that #includes rng.c, exposes its ln and cos_2pi, and replaces
  goat_fail by one that longjmps back with the message, so that error messages can be
  checked by the hundred in this process.

The error paths are also run for real, in a subprocess: message on stderr, status 1.
"""
import ctypes
import math
import os
import shutil
import struct
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import goat  # noqa: F401  (registers the ops)
from goat.gpu.numpy_backend import NumpyBackend
from goat.ops import rng
from goat.ops.registry import REGISTRY, OpError

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RUNTIME = os.path.join(ROOT, "goat", "aot", "runtime")
CC = shutil.which("cc")
pytestmark = pytest.mark.skipif(CC is None, reason="no C compiler (cc)")

F64P = ctypes.POINTER(ctypes.c_double)
LIMIT = 2 ** 53
SITE = b"prog.mg:4: error: \x01\n4 | print sample_rows(p, s)\n  |       ^"

SHIM = r"""
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "rng.c"

static jmp_buf jump;
static char message[2048];

void goat_fail(const char *site, const char *fmt, ...)
{
    va_list ap;
    int n = snprintf(message, sizeof message, "%s|", site);
    va_start(ap, fmt);
    vsnprintf(message + n, sizeof message - (size_t)n, fmt, ap);
    va_end(ap);
    longjmp(jump, 1);
}

double t_ln(double u) { return goat_ln(u); }
double t_cos_2pi(uint64_t n) { return goat_cos_2pi(n); }

/* 1 and *seed on success, else 0 and the message (site|text) in msg */
int t_check_seed(double v, uint64_t *seed, char *msg, size_t size)
{
    if (setjmp(jump)) {
        snprintf(msg, size, "%s", message);
        return 0;
    }
    *seed = goat_check_seed(v, "S");
    return 1;
}

int t_sample_rows(double *out, const double *p, int64_t rows, int64_t cols, uint64_t seed,
                  char *msg, size_t size)
{
    if (setjmp(jump)) {
        snprintf(msg, size, "%s", message);
        return 0;
    }
    goat_sample_rows(out, p, rows, cols, seed, "S");
    return 1;
}
"""


def _declare(lib):
    lib.goat_check_seed.restype = ctypes.c_uint64
    lib.goat_check_seed.argtypes = [ctypes.c_double, ctypes.c_char_p]
    for name in ("goat_rand", "goat_randn"):
        getattr(lib, name).restype = None
        getattr(lib, name).argtypes = [F64P, ctypes.c_int64, ctypes.c_uint64]
    lib.goat_sample_rows.restype = None
    lib.goat_sample_rows.argtypes = [F64P, F64P, ctypes.c_int64, ctypes.c_int64,
                                     ctypes.c_uint64, ctypes.c_char_p]
    lib.goat_format_seed.restype = None
    lib.goat_format_seed.argtypes = [ctypes.c_double, ctypes.c_char_p]
    return lib


def _build(out_dir, name, sources, flags):
    so = os.path.join(out_dir, name + ".so")
    cmd = [CC, *flags, "-Wall", "-shared", "-fPIC", "-I", RUNTIME, "-o", so,
           *sources, "-lm"]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, "%s\n%s" % (" ".join(cmd), p.stderr)
    return so


def _accepts(flag):
    p = subprocess.run([CC, flag, "-x", "c", "-c", "-o", os.devnull, "-"], input="int x;\n",
                       capture_output=True, text=True, timeout=60)
    return p.returncode == 0


@pytest.fixture(scope="module")
def libs(tmp_path_factory):
    d = str(tmp_path_factory.mktemp("aot_rng"))
    rng_c = os.path.join(RUNTIME, "rng.c")
    fail_c = os.path.join(RUNTIME, "goat_fail.c")
    real = _build(d, "real", [rng_c, fail_c], ["-O2", "-ffp-contract=off"])
    fast_flags = ["-O3", "-ffp-contract=fast"] + (["-march=native"]
                                                  if _accepts("-march=native") else [])
    fast = _build(d, "fast", [rng_c, fail_c], fast_flags)
    shim_c = os.path.join(d, "shim.c")
    with open(shim_c, "w") as f:
        f.write(SHIM)
    shim = _build(d, "shim", [shim_c], ["-O2", "-ffp-contract=off"])
    shim_lib = _declare(ctypes.CDLL(shim))
    shim_lib.t_ln.restype = ctypes.c_double
    shim_lib.t_ln.argtypes = [ctypes.c_double]
    shim_lib.t_cos_2pi.restype = ctypes.c_double
    shim_lib.t_cos_2pi.argtypes = [ctypes.c_uint64]
    shim_lib.t_check_seed.restype = ctypes.c_int
    shim_lib.t_check_seed.argtypes = [ctypes.c_double, ctypes.POINTER(ctypes.c_uint64),
                                      ctypes.c_char_p, ctypes.c_size_t]
    shim_lib.t_sample_rows.restype = ctypes.c_int
    shim_lib.t_sample_rows.argtypes = [F64P, F64P, ctypes.c_int64, ctypes.c_int64,
                                       ctypes.c_uint64, ctypes.c_char_p, ctypes.c_size_t]
    return {"real": _declare(ctypes.CDLL(real)), "fast": _declare(ctypes.CDLL(fast)),
            "shim": shim_lib, "real_path": real}


def _ptr(a):
    return a.ctypes.data_as(F64P)


def _draw(lib, which, cells, seed):
    out = np.full(cells, 7.0)       # a sentinel: every cell must be written
    getattr(lib, "goat_" + which)(_ptr(out), cells, seed)
    return out


def _same_bits(got, want):
    got = np.ascontiguousarray(got, dtype=np.float64).ravel()
    want = np.ascontiguousarray(want, dtype=np.float64).ravel()
    assert got.shape == want.shape
    bad = np.flatnonzero(got.view(np.uint64) != want.view(np.uint64))
    assert bad.size == 0, "cell %d: %r != %r (%d cells differ)" % (
        bad[0], got[bad[0]], want[bad[0]], bad.size)


SEEDS = [0, 1, 2, 3, 42, 12345, 2 ** 31 - 1, 2 ** 32 - 1, 2 ** 32, 2 ** 32 + 1,
         123456789012345, 2 ** 52 - 1, 2 ** 52, 2 ** 52 + 1, LIMIT - 2, LIMIT - 1]
SIZES = [0, 1, 2, 3, 7, 64, 1001]


# ---------------------------------------------------------------- rand and randn

@pytest.mark.parametrize("which, ref", [("rand", rng.uniform), ("randn", rng.normal)])
def test_draws_are_numpys_bits(libs, which, ref):
    for seed in SEEDS:
        for n in SIZES:
            _same_bits(_draw(libs["real"], which, n, seed), ref(np, (n,), seed))


@pytest.mark.parametrize("which, ref", [("rand", rng.uniform), ("randn", rng.normal)])
@pytest.mark.parametrize("build", ["real", "fast"])
@pytest.mark.parametrize("seed", [0, 7, LIMIT - 1])
def test_a_hundred_thousand_draws(libs, which, ref, build, seed):
    _same_bits(_draw(libs[build], which, 10 ** 5, seed), ref(np, (10 ** 5,), seed))


@pytest.mark.parametrize("which, ref", [("rand", rng.uniform), ("randn", rng.normal)])
def test_any_shape_is_its_cells_in_row_major_order(libs, which, ref):
    for shape in [(), (1,), (2, 3), (3, 1, 5), (4, 0, 2), (2, 2, 2, 3)]:
        cells = math.prod(shape)
        _same_bits(_draw(libs["real"], which, cells, 5), ref(np, shape, 5))


def test_nothing_is_written_for_no_cells(libs):
    out = np.full(3, 7.0)
    libs["real"].goat_rand(_ptr(out), 0, 1)
    libs["real"].goat_randn(_ptr(out), -5, 1)
    assert out.tolist() == [7.0, 7.0, 7.0]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, LIMIT - 1), n=st.integers(0, 40))
def test_draws_for_any_seed(libs, seed, n):
    _same_bits(_draw(libs["real"], "rand", n, seed), rng.uniform(np, (n,), seed))
    _same_bits(_draw(libs["real"], "randn", n, seed), rng.normal(np, (n,), seed))


# ---------------------------------------------------------------- ln and cos_2pi themselves

def test_ln_is_rngs_ln(libs):
    r = np.random.default_rng(0)
    special = [1.0, 2.0 ** -53, 0.5, 0.75, rng.SQRT_HALF, np.nextafter(rng.SQRT_HALF, 0),
               np.nextafter(rng.SQRT_HALF, 1), np.nextafter(1.0, 0), 1 - 2.0 ** -53,
               2.0 ** -52, 3 * 2.0 ** -53, 5e-324, 2.2250738585072014e-308, 1e-300, 2.0,
               math.e, 10.0, 1e300, 1.7976931348623157e308]
    u = np.concatenate([special, (r.integers(0, LIMIT, 20000) + 1) * 2.0 ** -53,
                        r.random(5000) ** 30, np.exp(r.uniform(-700, 700, 5000))])
    got = np.array([libs["shim"].t_ln(float(x)) for x in u])
    _same_bits(got, rng.ln(np, u))


def test_cos_2pi_is_rngs_cos_2pi(libs):
    r = np.random.default_rng(1)
    q = 2 ** 51
    special = [0, 1, 2, q // 2 - 1, q // 2, q // 2 + 1, q - 1, q, q + 1, 2 * q - 1, 2 * q,
               2 * q + 1, 3 * q - 1, 3 * q, 3 * q + 1, 4 * q - 2, 4 * q - 1,
               3 * q // 2, 5 * q // 2, 7 * q // 2, 7 * q // 2 - 1, 7 * q // 2 + 1]
    n = np.concatenate([np.array(special, dtype=np.uint64),
                        r.integers(0, LIMIT, 30000, dtype=np.uint64)])
    got = np.array([libs["shim"].t_cos_2pi(int(x)) for x in n])
    _same_bits(got, rng.cos_2pi(np, n))


# ---------------------------------------------------------------- seeds

def _check_seed_here(libs, v):
    """(seed, None) or (None, message) from the shim's goat_check_seed."""
    seed = ctypes.c_uint64()
    buf = ctypes.create_string_buffer(2048)
    if libs["shim"].t_check_seed(v, ctypes.byref(seed), buf, 2048):
        return seed.value, None
    site, _, msg = buf.value.decode().partition("|")
    assert site == "S"
    return None, msg


def _python_check_seed(v):
    try:
        return rng.check_seed(v), None
    except OpError as e:
        return None, e.message


BAD_SEEDS = [2.5, -1.0, -0.5, float(LIMIT), float(LIMIT + 2), 2.0 ** 63, -2.0 ** 63,
             2.0 ** 64, 1e300, -1e300, 1e16, 1e17, 0.1, 1e-5, 1.5e-7, 5e-324,
             1.7976931348623157e308, float("nan"), -float("nan"), float("inf"),
             -float("inf"), 4503599627370495.5, 123.456, -9.5e-5, 0.0001, 2.0 ** -1074]
GOOD_SEEDS = [0.0, -0.0, 1.0, 2.0, 1e15, float(LIMIT - 1), float(2 ** 52), 12345.0]


@pytest.mark.parametrize("v", BAD_SEEDS + GOOD_SEEDS)
def test_check_seed(libs, v):
    assert _check_seed_here(libs, v) == _python_check_seed(v)
    if v in GOOD_SEEDS:
        assert libs["real"].goat_check_seed(v, b"S") == rng.check_seed(v)


def _format_seed(libs, v):
    buf = ctypes.create_string_buffer(32)
    libs["real"].goat_format_seed(v, buf)
    return buf.value.decode()


def _bits_to_float(b):
    return struct.unpack("<d", struct.pack("<Q", b))[0]


def test_seeds_are_spelt_as_python_spells_them(libs):
    r = np.random.default_rng(2)
    values = [_bits_to_float(int(b)) for b in r.integers(0, 2 ** 64, 20000, dtype=np.uint64)]
    values += [float(x) for x in r.uniform(-1e6, 1e6, 3000)]
    values += [float(x) for x in r.integers(-2 ** 62, 2 ** 62, 1000)]
    values += [s * 2.0 ** e for e in range(-1074, 1024) for s in (1, -1)]
    values += [s * 10.0 ** e for e in range(-323, 309) for s in (1, -1)]
    values += [float(np.nextafter(s * 2.0 ** e, t)) for e in range(-1074, 1024, 7)
               for s in (1, -1) for t in (0, math.inf)]
    for v in values:
        assert _format_seed(libs, v) == rng._format_seed(v), v.hex()


@settings(max_examples=500, deadline=None)
@given(v=st.floats(allow_nan=True, allow_infinity=True))
def test_any_seed_value(libs, v):
    assert _format_seed(libs, v) == rng._format_seed(v)
    assert _check_seed_here(libs, v) == _python_check_seed(v)


# ---------------------------------------------------------------- sample_rows

OP = REGISTRY["sample_rows"].evaluate(NumpyBackend())


def _op(p, seed):
    """(result, None) or (None, message) from the registry's sample_rows on NumPy."""
    try:
        with np.errstate(all="ignore"):         # inf weights overflow the sums on purpose
            return OP(p, np.array(float(seed))), None
    except OpError as e:
        return None, e.message


def _c_sample_rows(libs, p, seed, build="shim"):
    p = np.ascontiguousarray(p, dtype=np.float64)
    cols = p.shape[-1]
    rows = math.prod(p.shape[:-1])
    out = np.full(rows, 7.0)
    if build == "shim":
        buf = ctypes.create_string_buffer(4096)
        if not libs["shim"].t_sample_rows(_ptr(out), _ptr(p), rows, cols, seed, buf, 4096):
            site, _, msg = buf.value.decode().partition("|")
            assert site == "S"
            return None, msg
    else:
        libs[build].goat_sample_rows(_ptr(out), _ptr(p), rows, cols, seed, b"S")
    return out.reshape(p.shape[:-1] + (1,)), None


def _compare_sample_rows(libs, p, seed, builds=("shim",)):
    want, want_msg = _op(p, seed)
    for build in builds:
        got, msg = _c_sample_rows(libs, p, seed, build)
        assert msg == want_msg
        if want is not None:
            assert got.shape == want.shape
            _same_bits(got, want)
    return want


def _matrices():
    r = np.random.default_rng(3)
    out = []
    for rows, cols in [(1, 1), (5, 1), (1, 2), (3, 3), (100, 7), (1000, 10), (64, 300)]:
        logits = r.normal(size=(rows, cols)) * 3
        e = np.exp(logits - logits.max(axis=1, keepdims=True))
        out.append(e / e.sum(axis=1, keepdims=True))                   # softmax rows
        w = r.random((rows, cols))
        w[r.random((rows, cols)) < 0.4] = 0.0                          # zeros
        w[np.arange(rows), r.integers(0, cols, rows)] = 0.5             # no all-zero row
        out.append(w)
        ties = r.integers(0, 4, (rows, cols)).astype(float)
        ties[:, -1] += 1.0
        out.append(ties)                                                # small ints: ties
        one = np.zeros((rows, cols))
        one[np.arange(rows), r.integers(0, cols, rows)] = r.random(rows) + 0.01
        out.append(one)                                                 # one non-zero a row
        out.append(np.ones((rows, cols)))                               # all tied
        neg0 = np.where(r.random((rows, cols)) < 0.5, -0.0, 1.0)
        neg0[:, 0] = 2.0 ** -1074
        out.append(neg0)                                                # -0.0 and subnormals
    # (an inf weight is refused: BAD_WEIGHTS)
    out.append(np.array([[1e300, 1e300, 1.0], [1.0, 1e-300, 1e300],
                         [2.0 ** -1074, 0.0, 2.0 ** -1074]]))
    out.append(np.array([0.0, 0.0, 3.0, 0.0]))                          # a vector
    out.append(r.random((2, 3, 4)))                                     # rank 3
    out.append(np.zeros((0, 5)))                                        # no rows
    out.append(np.zeros((2, 0, 3)))
    return out


def test_sample_rows_is_the_ops_result(libs):
    for i, p in enumerate(_matrices()):
        for seed in (0, 1, 99, LIMIT - 1):
            want = _compare_sample_rows(libs, p, seed, builds=("shim", "real", "fast"))
            assert want is not None, i


def test_sample_rows_with_many_seeds_on_tied_weights(libs):
    # u * total lands on running sums exactly for weights that are powers of two
    p = np.array([[1.0, 1.0, 2.0, 4.0], [0.0, 0.5, 0.0, 0.5], [0.25] * 4, [0.0, 0.0, 0.0, 8.0]])
    for seed in range(300):
        _compare_sample_rows(libs, p, seed)


BAD_WEIGHTS = [
    [[0.2, -1, 3]],
    [[1, 1], [0, 0]],
    [[1, 1], [1, 1], [np.nan, 1]],
    [[1, 1], [-np.nan, 1]],
    [[1, 2, 3, 4, 5, -6]],
    [[1, 2, 3, 4, 5, 6, -7]],
    [[0.0] * 10],
    [[-0.0, -0.0]],
    [[np.inf, -np.inf]],
    [[np.inf, np.inf]],            # an inf weight would take every draw
    [[1, 1], [2, np.inf]],
    [[1e308, 1e308, 1.0]],          # finite weights whose sum overflows: as bad as an inf
    [[1.5e-7, 123456789.0, -1e300, 2.5e-308, 0.1, 1 / 3, 7, 8]],
    [[1], [2], [3], [0]],
    [[-1e-320, 1.0]],
]


@pytest.mark.parametrize("weights", BAD_WEIGHTS, ids=str)
def test_sample_rows_refuses_what_the_op_refuses(libs, weights):
    p = np.array(weights, dtype=np.float64)
    _, want = _op(p, 1)
    assert want is not None
    assert _c_sample_rows(libs, p, 1) == (None, want)


def test_sample_rows_without_columns_names_row_0(libs):
    # the Python op divides by zero here; rng.c reports the row as the message has it
    assert _c_sample_rows(libs, np.zeros((2, 0)), 1) == (
        None, "sample_rows needs weights of 0 or more with a positive, finite sum in every row "
              "(probabilities, such as nn.softmax_rows(logits)); row 0 is []")


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=st.integers(1, 6), cols=st.integers(1, 9), seed=st.integers(0, LIMIT - 1),
       data=st.data())
def test_sample_rows_on_any_weights(libs, rows, cols, seed, data):
    cell = st.one_of(st.sampled_from([0.0, -0.0, 1.0, 0.5, 2.0, -1.0, np.inf, np.nan]),
                     st.floats(0, 10), st.floats(allow_nan=True, allow_infinity=True))
    p = np.array(data.draw(st.lists(cell, min_size=rows * cols, max_size=rows * cols)),
                 dtype=np.float64).reshape(rows, cols)
    _compare_sample_rows(libs, p, seed)


# ---------------------------------------------------------------- errors, for real

CHILD = r"""
import ctypes, sys
lib = ctypes.CDLL(sys.argv[1])
site = bytes.fromhex(sys.argv[2])
if sys.argv[3] == "seed":
    lib.goat_check_seed.restype = ctypes.c_uint64
    lib.goat_check_seed.argtypes = [ctypes.c_double, ctypes.c_char_p]
    print(lib.goat_check_seed(float.fromhex(sys.argv[4]), site))
else:
    rows, cols = int(sys.argv[4]), int(sys.argv[5])
    data = bytes.fromhex(sys.argv[6])
    p = (ctypes.c_double * max(rows * cols, 1)).from_buffer_copy(data.ljust(8, b"\0"))
    out = (ctypes.c_double * max(rows, 1))()
    lib.goat_sample_rows.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64,
                                     ctypes.c_int64, ctypes.c_uint64, ctypes.c_char_p]
    lib.goat_sample_rows(out, p, rows, cols, 1, site)
    print([out[i] for i in range(rows)])
print("returned")
"""


def _child(libs, *args):
    p = subprocess.run([sys.executable, "-c", CHILD, libs["real_path"], SITE.hex(), *args],
                       capture_output=True, text=True, timeout=60)
    return p.returncode, p.stdout, p.stderr


def _reported(message):
    before, _, after = SITE.decode().partition("\x01")
    return before + message + after + "\n"


@pytest.mark.parametrize("v", [2.5, -1.0, float(LIMIT), float("nan"), -float("inf"), 1e300,
                               0.1])
def test_a_bad_seed_exits_with_the_message(libs, v):
    status, out, err = _child(libs, "seed", v.hex())
    assert (status, out) == (1, "")
    assert err == _reported(_python_check_seed(v)[1])


def test_a_good_seed_returns(libs):
    status, out, err = _child(libs, "seed", float(LIMIT - 1).hex())
    assert (status, out, err) == (0, "%d\nreturned\n" % (LIMIT - 1), "")


@pytest.mark.parametrize("weights", [BAD_WEIGHTS[i] for i in (0, 1, 3, 5)], ids=str)
def test_bad_weights_exit_with_the_message(libs, weights):
    p = np.array(weights, dtype=np.float64)
    status, out, err = _child(libs, "rows", str(p.shape[0]), str(p.shape[1]), p.tobytes().hex())
    assert (status, out) == (1, "")
    assert err == _reported(_op(p, 1)[1])
