"""The AOT runtime's .npy reader and writer (goat/aot/runtime/npy.c) against the interpreter's
(goat/interp/npyio.py): the same float64 values bit for bit, the same bytes written, and the
same message for every way a file can be wrong.

The C library is built with `cc` into a temporary folder and called through ctypes.  Every call
runs in a forked child, because goat_fail ends the process: the child's stderr and exit status
are compared with PREFIX + read_npy's (or save_npy's) message + SUFFIX and status 1.
"""
import ctypes
import mmap
import os
import pickle
import shutil
import stat
import struct
import subprocess
import sys
import tempfile

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from numpy.lib import format as npformat

from goat.diagnostics import _one_line
from goat.interp.npyio import read_npy, save_npy
from goat.ops.registry import OpError

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RUNTIME = os.path.join(ROOT, "goat", "aot", "runtime")
CC = shutil.which("cc")
ROOT_USER = hasattr(os, "geteuid") and os.geteuid() == 0

pytestmark = [
    pytest.mark.skipif(CC is None, reason="no C compiler (cc)"),
    pytest.mark.filterwarnings("ignore::RuntimeWarning", "ignore::DeprecationWarning"),
    pytest.mark.skipif(not hasattr(os, "fork"), reason="the calls run in forked children"),
]

PREFIX = "prog.mg:3: error: "
SUFFIX = "\n3 | x = load(\"x.npy\", tensor[2])\n  |     ^"
SITE = (PREFIX + "\x01" + SUFFIX).encode()
FAST = settings(max_examples=120, deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture,
                                       HealthCheck.too_slow])


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    out = tmp_path_factory.mktemp("goat_rt_npy") / "libgoat_npy.so"
    subprocess.run([CC, "-shared", "-fPIC", "-O2", "-ffp-contract=off", "-o", str(out),
                    os.path.join(RUNTIME, "npy.c"), os.path.join(RUNTIME, "goat_fail.c")],
                   check=True, capture_output=True)
    lib = ctypes.CDLL(str(out))
    i64p = ctypes.POINTER(ctypes.c_int64)
    lib.goat_load_npy.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p,
                                  ctypes.c_int64, i64p, ctypes.c_char_p]
    lib.goat_load_npy.restype = None
    lib.goat_save_npy.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_void_p,
                                  ctypes.c_int64, i64p, ctypes.c_char_p]
    lib.goat_save_npy.restype = None
    return lib


# ----------------------------------------------------------------------------- harness

def in_child(fn, cwd=None, umask=None, setup=None):
    """Run fn() in a forked child: (exit status, its stderr)."""
    with tempfile.TemporaryFile() as err:
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:                                    # the child
            code = 3
            try:
                os.dup2(err.fileno(), 2)
                if cwd is not None:
                    os.chdir(cwd)
                if umask is not None:
                    os.umask(umask)
                if setup is not None:
                    setup()
                fn()
                code = 0
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        err.seek(0)
        return os.waitstatus_to_exitcode(status), err.read().decode("utf-8", "replace")


def failure(status, err):
    """The message of a goat_fail in a child, checked for its site and exit status."""
    assert status == 1, (status, err)
    assert err.startswith(PREFIX) and err.endswith(SUFFIX + "\n"), err
    return err[len(PREFIX):len(err) - len(SUFFIX) - 1]


def enc(s):
    return None if s is None else os.fsencode(s)


def c_load(lib, path, shape, shown=None):
    """('ok', float64 array) or ('error', message) from goat_load_npy, in a child."""
    shape = tuple(int(d) for d in shape)
    count = int(np.prod(shape, dtype=np.int64)) if shape else 1
    buf = mmap.mmap(-1, max(8 * count, 8))              # shared with the child
    addr = ctypes.addressof((ctypes.c_char * len(buf)).from_buffer(buf))
    dims = (ctypes.c_int64 * max(len(shape), 1))(*shape)
    status, err = in_child(lambda: lib.goat_load_npy(addr, enc(path), enc(shown), len(shape),
                                                     dims, SITE))
    if status == 0:
        assert err == ""
        out = np.frombuffer(buf, dtype=np.float64, count=count).reshape(shape).copy()
        return "ok", out
    return "error", failure(status, err)


def py_load(path, shape, shown=None):
    try:
        return "ok", read_npy(str(path), tuple(shape), shown)
    except OpError as e:
        return "error", _one_line(e.message)     # as both print it: one line


def bits(a):
    return np.ascontiguousarray(a, dtype=np.float64).view(np.uint64)


def same_load(lib, path, shape, shown=None):
    """Load with both; assert the same outcome.  Returns it."""
    expected = py_load(path, shape, shown)
    got = c_load(lib, path, shape, shown)
    assert got[0] == expected[0], (expected, got)
    if expected[0] == "ok":
        assert got[1].shape == expected[1].shape
        assert np.array_equal(bits(got[1]), bits(expected[1]))
    else:
        assert got[1] == expected[1]
    return expected


def c_save(lib, path, value, shown=None, cwd=None, umask=None, setup=None):
    arr = np.asarray(value, dtype=np.float64, order="C")
    dims = (ctypes.c_int64 * max(arr.ndim, 1))(*arr.shape)
    status, err = in_child(lambda: lib.goat_save_npy(enc(path), enc(shown), arr.ctypes.data,
                                                     arr.ndim, dims, SITE), cwd, umask, setup)
    if status == 0:
        assert err == ""
        return "ok", None
    return "error", failure(status, err)


def py_save(path, value, shown=None):
    try:
        save_npy(str(path), value, shown)
        return "ok", None
    except OpError as e:
        return "error", _one_line(e.message)     # as both print it: one line


def npy_bytes(header, data=b"", version=(1, 0), raw_header=None):
    """A hand-made .npy file: magic, version, header length, header text, data."""
    text = raw_header if raw_header is not None else header.encode("latin1")
    text = text + b" " * (-(len(text) + 11) % 64) + b"\n"
    length = struct.pack("<H" if version == (1, 0) else "<I", len(text))
    return b"\x93NUMPY" + bytes(version) + length + text + data


# --------------------------------------------------------------------- values, bit for bit

DTYPES = ["<f2", ">f2", "<f4", ">f4", "<f8", ">f8", "|i1", "<i2", ">i2", "<i4", ">i4", "<i8",
          ">i8", "|u1", "<u2", ">u2", "<u4", ">u4", "<u8", ">u8", "|b1"]
SHAPES = [(), (1,), (7,), (3, 5), (2, 3, 4), (2, 1, 3, 2), (0,), (0, 4), (3, 0), (2, 0, 5)]


def sample(rng, dtype, shape):
    """An array of this dtype: arbitrary bytes (NaN payloads, every bool byte), except that
    64-bit integers stay where float64 holds them exactly."""
    dt = np.dtype(dtype)
    raw = rng.integers(0, 256, size=int(np.prod(shape, dtype=np.int64)) * dt.itemsize,
                       dtype=np.uint8)
    a = raw.view(dt).reshape(shape).copy()
    if dt.kind in "iu" and dt.itemsize == 8:
        a = (a.astype(dt.newbyteorder("=")) >> np.array(11, dtype=dt.newbyteorder("="))).astype(dt)
    return a


@pytest.mark.parametrize("dtype", DTYPES)
def test_numpy_files_read_bit_for_bit(lib, tmp_path, dtype):
    rng = np.random.default_rng(DTYPES.index(dtype))
    p = tmp_path / "x.npy"
    for shape in SHAPES:
        for order in "CF":
            a = sample(rng, dtype, shape)
            a = a.copy(order=order)
            np.save(p, a)
            result = same_load(lib, p, shape)
            assert result[0] == "ok", result


def test_every_float16_value(lib, tmp_path):
    p = tmp_path / "x.npy"
    for dtype in ["<f2", ">f2"]:
        np.save(p, np.arange(65536, dtype=np.uint16).view(np.float16).astype(dtype))
        assert same_load(lib, p, (65536,))[0] == "ok"


def test_float32_nans_and_subnormals(lib, tmp_path):
    patterns = [0x7F800001, 0xFF800123, 0x7FC00000, 0x7FBFFFFF, 0x00000001, 0x807FFFFF,
                0x7F7FFFFF, 0x80000000, 0x7F800000, 0xFF800000]
    p = tmp_path / "x.npy"
    for dtype in ["<f4", ">f4"]:
        np.save(p, np.array(patterns, dtype=np.uint32).view(np.float32).astype(dtype))
        assert same_load(lib, p, (len(patterns),))[0] == "ok"


def test_bool_bytes_other_than_0_and_1_are_true(lib, tmp_path):
    p = tmp_path / "x.npy"
    p.write_bytes(npy_bytes("{'descr': '|b1', 'fortran_order': False, 'shape': (16, 16), }",
                            bytes(range(256))))
    kind, out = same_load(lib, p, (16, 16))
    assert kind == "ok" and out.reshape(-1).tolist() == [0.0] + [1.0] * 255


@pytest.mark.parametrize("version", [(1, 0), (2, 0), (3, 0)])
def test_every_format_version(lib, tmp_path, version):
    p = tmp_path / "x.npy"
    with open(p, "wb") as f:
        npformat.write_array(f, np.arange(6.0).reshape(2, 3), version=version)
    assert same_load(lib, p, (2, 3))[0] == "ok"


@FAST
@given(data=st.data())
def test_random_arrays_read_as_numpy_converts_them(lib, tmp_path, data):
    dtype = data.draw(st.sampled_from(DTYPES))
    shape = tuple(data.draw(st.lists(st.integers(0, 4), max_size=4)))
    order = data.draw(st.sampled_from("CF"))
    seed = data.draw(st.integers(0, 2 ** 32 - 1))
    a = sample(np.random.default_rng(seed), dtype, shape)
    a = a.copy(order=order)
    p = tmp_path / "x.npy"
    np.save(p, a)
    assert same_load(lib, p, shape, "x.npy")[0] == "ok"


# ----------------------------------------------------------------- integers beyond 2**53

@pytest.mark.parametrize("dtype, value", [
    ("<i8", 2 ** 53 + 2), ("<i8", -(2 ** 53) - 2), ("<i8", -(2 ** 63)), ("<i8", 2 ** 62),
    ("<u8", 2 ** 63), ("<u8", 2 ** 64 - 2 ** 11), (">i8", 2 ** 60), (">u8", 2 ** 53),
    ("<i8", 2 ** 53 + 1), ("<i8", -(2 ** 53) - 1), ("<i8", 2 ** 63 - 1), (">i8", 2 ** 53 + 1),
    ("<u8", 2 ** 64 - 1), ("<u8", 2 ** 53 + 1), (">u8", 2 ** 63 + 1), ("<i8", 2 ** 63 - 512),
    ("<i8", -(2 ** 63) + 1), ("<u8", 2 ** 64 - 1024),
])
def test_large_integers(lib, tmp_path, dtype, value):
    p = tmp_path / "x.npy"
    np.save(p, np.asfortranarray(np.array([[1, 2], [3, value]], dtype=dtype)))
    same_load(lib, p, (2, 2), "x.npy")


@FAST
@given(data=st.data())
def test_the_first_inexact_integer_is_named(lib, tmp_path, data):
    dtype = data.draw(st.sampled_from(["<i8", ">i8", "<u8", ">u8"]))
    shape = tuple(data.draw(st.lists(st.integers(1, 4), min_size=1, max_size=3)))
    order = data.draw(st.sampled_from("CF"))
    n = int(np.prod(shape))
    lo, hi = (-(2 ** 63), 2 ** 63 - 1) if "i" in dtype else (0, 2 ** 64 - 1)
    near = st.one_of(st.integers(lo, hi), st.integers(-(2 ** 53) - 3, 2 ** 53 + 3)
                     .filter(lambda v: lo <= v <= hi))
    values = data.draw(st.lists(near, min_size=n, max_size=n))
    a = np.array(values, dtype=np.dtype(dtype).newbyteorder("=")).astype(dtype).reshape(shape)
    a = a.copy(order=order)
    p = tmp_path / "x.npy"
    np.save(p, a)
    same_load(lib, p, shape, "x.npy")


# ----------------------------------------------------------------------- files that are wrong

def test_shape_must_be_the_declared_one(lib, tmp_path):
    p = tmp_path / "x.npy"
    for saved, declared in [((3, 4), (112, 4)), ((), (112, 4)), ((3, 4), ()), ((12,), (3, 4)),
                            ((3, 4, 1), (3, 4)), ((0, 4), (1, 4)), ((2,), (3,)), ((), (1,)),
                            ((256,), (256, 1)), ((1, 1), ()), ((0, 3), (3, 0)),
                            ((3, 2), (2, 3))]:
        np.save(p, np.zeros(saved))
        kind, msg = same_load(lib, p, declared, "x.npy")
        assert kind == "error" and " was declared" in msg


def test_missing_file_directory_and_path_through_a_file(lib, tmp_path):
    (tmp_path / "file").write_text("not a directory")
    for path, shown in [(tmp_path / "x.npy", "x.npy"), (tmp_path / "x.npy", None),
                        (tmp_path / "data" / "x.npy", "data/x.npy"),
                        (tmp_path / "a" / "b" / "x.npy", "a/b/x.npy"),
                        (tmp_path / "file" / "x.npy", "file/x.npy"),
                        (tmp_path / "file" / "d" / "x.npy", "file/d/x.npy"),
                        (tmp_path / "file" / "x.npy", "x.npy"), ("", "")]:
        kind, msg = same_load(lib, path, (2,), shown)
        assert kind == "error"


def test_not_regular_files(lib, tmp_path):
    (tmp_path / "d.npy").mkdir()
    os.mkfifo(tmp_path / "fifo.npy")
    os.symlink("loop.npy", tmp_path / "loop.npy")
    for path, shown in [(tmp_path / "d.npy", "d.npy"), (tmp_path / "fifo.npy", "fifo.npy"),
                        ("/dev/zero", None), (tmp_path / "loop.npy", "loop.npy"),
                        (tmp_path / ("n" * 300 + ".npy"), "long.npy")]:
        if str(path).startswith("/dev/") and not os.path.exists(path):
            continue
        assert same_load(lib, path, (2,), shown)[0] == "error"


@pytest.mark.skipif(ROOT_USER, reason="root reads any file")
def test_permission_denied(lib, tmp_path):
    p = tmp_path / "x.npy"
    np.save(p, np.zeros(2))
    p.chmod(0)
    try:
        assert same_load(lib, p, (2,), "x.npy") == ("error", "cannot load x.npy: permission denied")
    finally:
        p.chmod(0o600)


@pytest.mark.parametrize("content", [
    b"", b"1,2,3\n4,5,6\n", pickle.dumps([1.0, 2.0], protocol=4), b"\x93NUM", b"\x93NUMPY\x01",
    b"\x93", b"\x93NUMPX\x01\x00", b"PK\x03\x04rest", b"PK\x05\x06", b"PK\x03", b"\x80",
    b"\x93NUMPY\x01\x00\x76", b"\x93NUMPY\x01\x00\x76\x00{'descr'",
    b"\x93NUMPY\x04\x00\x76\x00", b"\x93NUMPY\x01\x01\x76\x00", b"\x93NUMPY\x00\x00",
    b"\x93NUMPY\x02\x00\x10\x00\x00", b"\x93NUMPY\x02\x00\x10\x00\x00\x00{}",
    b"\x93NUMPY\x03\x00\xff\xff\xff\xff", b"\x93NUMPY\x01\x00\x00\x00",
    b"\x93NUMPY\xff\xff", b"\x93NUMPY\x01\x00\x05\x00{}   ",
])
def test_not_a_npy_file_or_cut_short(lib, tmp_path, content):
    p = tmp_path / "x.npy"
    p.write_bytes(content)
    assert same_load(lib, p, (2,), "x.npy")[0] == "error"


def test_an_npz_archive(lib, tmp_path):
    np.savez(tmp_path / "x", a=np.zeros(2))
    assert same_load(lib, tmp_path / "x.npz", (2,), "x.npz")[0] == "error"


def test_oversized_headers(lib, tmp_path):
    p = tmp_path / "x.npy"
    header = "{'descr': '<f8', 'fortran_order': False, 'shape': (2,), }"
    for pad in [10000 - 80, 10000 - 75, 20000]:
        p.write_bytes(npy_bytes(header + " " * pad, bytes(16), version=(2, 0)))
        same_load(lib, p, (2,), "x.npy")


def test_truncated_and_trailing_data(lib, tmp_path):
    p = tmp_path / "x.npy"
    np.save(p, np.zeros((112, 4)))
    content = p.read_bytes()
    for cut in [content[:len(content) - 3584 + 100], content[:len(content) - 1],
                content[:len(content) - 3584], content + b"\0" * 40, content + b"x"]:
        p.write_bytes(cut)
        assert same_load(lib, p, (112, 4), "x.npy")[0] == "error"
    with open(p, "wb") as f:
        np.save(f, np.zeros(2))
        np.save(f, np.ones(2))
    assert same_load(lib, p, (2,), "x.npy")[0] == "error"


WRONG_DTYPES = [
    np.zeros(2, dtype=np.complex128), np.zeros(2, dtype=">c8"), np.array(["ab", "c"]),
    np.array(["ab", "c"], dtype=">U2"), np.array([b"abc", b"d"]),
    np.zeros(2, dtype=[("a", "<f8"), ("b", "<i4")]),
    np.zeros(2, dtype=[("a", ">f8", (2, 3)), ("b", [("c", "?"), ("d", "S3")])]),
    np.zeros(2, dtype={"names": ["a", "b"], "formats": ["<f8", "<i2"], "offsets": [0, 12],
                       "itemsize": 16}),
    np.zeros(2, dtype=[(("title", "a"), "<f8")]),
    np.zeros(2, dtype="datetime64[s]"), np.zeros(2, dtype=">M8[10D]"),
    np.zeros(2, dtype="timedelta64[ns]"), np.zeros(2, dtype="V8"),
    np.zeros(2, dtype=np.longdouble), np.zeros(2, dtype=np.clongdouble),
    np.array([None, 1.0], dtype=object), np.zeros(2, dtype=[("a", "<f8"), ("b", "O")]),
]


@pytest.mark.parametrize("i", range(len(WRONG_DTYPES)))
def test_wrong_dtypes_are_named(lib, tmp_path, i):
    p = tmp_path / "x.npy"
    np.save(p, WRONG_DTYPES[i], allow_pickle=True)
    assert same_load(lib, p, (2,), "x.npy")[0] == "error"


DESCRS = [
    "'<f16'", "'>f16'", "'nonsense'", "7", "None", "'float64'", "'<float64'", "'f8'", "'d'",
    "'i'", "'>i'", "'bool'", "'?'", "'b1'", "'c'", "'a5'", "'S0'", "'U'", "'<U0'", "'V'",
    "'O8'", "'T'", "'int'", "'uint'", "'half'", "'f 8'", "'f8 '", "'M8'", "'M8[s/2]'",
    "'m8[2W/7]'", "'datetime64[us]'", "'<datetime64'", "'>M8[D]'", "'M8[generic]'", "'M8[x]'",
    "'i4,f8'", "'(2,3)f8'", "'3i4'", "'f8,'", "'2,'", "'\\x00'", "'\\x05'", "'\\ud800'",
    "('<f8', ())", "('<f8', 2)", "('<f8', [2, 3])", "('<f8', None)", "('<i4', None)",
    "('<f8', '<i8')", "('S', 5)", "('U', 3)", "('<f8', (-1,))", "('<f8', True)", "('O', (2,))",
    "('<f8',)", "()", "[]", "{}", "[('a', '<f8')]", "[('', '|V4'), ('a', '<f8')]",
    "[('a', '<f8'), ('a', '<i4')]", "[(('t', 'a'), '<f8')]", "[((1.5, 'a'), '<f8')]",
    "[(1, '<f8')]", "['ab', 'cd']", "[('a', '<f8', (2,))]", "[('a', [('b', '>u2')])]",
    "[('é', '<f8'), ('a\\nb', '>i2')]", "{'a': 1}", "[('a', 'O')]", "('V8', [('a', '<f8')])",
    "('<i8', [('a', '<f8')])", "b'<f8'", "1.5", "(1+2j)", "...", "{'<f8'}",
    "(('T', (0,)), '<f8')", "(([('', '<c16'), ('a', 'O')], (0,)), None)", "('O', 'O')",
    "('V', '<f8')", "('S', '<i4')", "('<f8', '')", "('<f8', ('<f8', 1))",
]


@pytest.mark.parametrize("descr", DESCRS)
def test_descrs(lib, tmp_path, descr):
    p = tmp_path / "x.npy"
    p.write_bytes(npy_bytes("{'descr': %s, 'fortran_order': False, 'shape': (2,), }" % descr,
                            bytes(16)))
    same_load(lib, p, (2,), "x.npy")


HEADERS = [
    "[1, 2]", "{'descr': '<f8', 'fortran_order': False, 'shape': (2,)",
    "__import__('os').system('echo hi')", "{'descr': '<f8', 'shape': (2,)}",
    "{'fortran_order': False, 'shape': (2,)}", "{'descr': '<f8', 'fortran_order': False}",
    "{'descr': '<f8', 'fortran_order': False, 'shape': (2,), 'x': 1}",
    "{'descr': '<f8', 'fortran_order': False, 'shape': (2,), 1.5: 1}",
    "{'descr': '<f8', 'fortran_order': False, 'shape': (2,), b'x' * 1: 1}",
    "{'descr': '<f8', 'fortran_order': False, 'shape': (2,), ('a', None): 1}",
    "{'descr': '<f8', 'fortran_order': False, 'shape': [2]}",
    "{'descr': '<f8', 'fortran_order': False, 'shape': (-2,)}",
    "{'descr': '<f8', 'fortran_order': False, 'shape': (True,)}",
    "{'descr': '<f8', 'fortran_order': False, 'shape': (2.0,)}",
    "{'descr': '<f8', 'fortran_order': False, 'shape': 2}",
    "{'descr': '<f8', 'fortran_order': False, 'shape': (%d, %d)}" % (10 ** 15, 10 ** 6),
    "{'descr': '<f8', 'fortran_order': False, 'shape': (%d,)}" % 2 ** 60,
    "{'descr': '<f8', 'fortran_order': False, 'shape': (%d,)}" % (2 ** 60 - 1),
    "{'descr': '<f8', 'fortran_order': False, 'shape': (0, %d)}" % (2 ** 59),
    "{'descr': '<f8', 'fortran_order': False, 'shape': (%d,)}" % 10 ** 40,
    "{'descr': '<f8', 'fortran_order': False, 'shape': (0x10,)}",
    "{'descr': '<f8', 'fortran_order': 0, 'shape': (2,)}",
    "{'descr': '<f8', 'fortran_order': 'yes', 'shape': (2,)}",
    "{'descr': '<f8', 'fortran_order': True, 'shape': (2,), 'descr': '>f8'}",
    "{'descr': '<f8', 'fortran_order': False, 'shape': (2,), 'shape': (3,)}",
    "{'descr':'<f8','fortran_order':False,'shape':(2,)}",
    "{'descr': '<f8', # a comment\n 'fortran_order': False, 'shape': (2,)}",
    "{'descr': '<f8', 'fortran_order': False, 'shape': (2,),}\r\n",
    "{'descr': u'<f8', 'fortran_order': False, 'shape': (2,)}",
    "{'descr': '<' 'f8', 'fortran_order': False, 'shape': (2,)}",
    "{'descr': '<f8', 'fortran_order': False, 'shape': (2,)}\n1",
    "\n{'descr': '<f8', 'fortran_order': False, 'shape': (2,)}",
    "\n {'descr': '<f8', 'fortran_order': False, 'shape': (2,)}",
    "{'descr': '<f8', 'fortran_order': False, 'shape': (2,)} ; 1",
    "{1, 2, 3}", "set()", "'just a string with \\t and \\u00e9 and \\x00'", "b'\\x80'",
    "1.5", "-0.0", "1e16", "1e-05", "(1+2j)", "-2j", "...", "None", "True", "(1,)",
    "x" * 100, "'" + "y" * 100 + "'", "[" * 201 + "]" * 201, "[" * 200 + "]" * 200,
    "{'descr': '<f8', 'fortran_order': False, 'shape': (2,), 'z': " + "1" * 5000 + "}",
    "0x" + "f" * 30, "12345678901234567890123", "'\\N{BULLET}'",
]


@pytest.mark.parametrize("i", range(len(HEADERS)))
def test_damaged_headers(lib, tmp_path, i):
    p = tmp_path / "x.npy"
    p.write_bytes(npy_bytes(HEADERS[i], bytes(16)))
    expected = py_load(p, (2,), "x.npy")
    if HEADERS[i] == "'\\N{BULLET}'":            # \N{...} escapes are not read (see npy.c)
        assert expected[1].startswith("x.npy has a damaged header: ")
        assert c_load(lib, p, (2,), "x.npy")[1].startswith("x.npy has a damaged header: ")
        return
    same_load(lib, p, (2,), "x.npy")


def test_header_encodings(lib, tmp_path):
    p = tmp_path / "x.npy"
    good = b"{'descr': '<f8', 'fortran_order': False, 'shape': (2,), "
    for version, raw in [((3, 0), good + b"'\xff': 1}"), ((3, 0), good + b"'\xc3\xa9': 1}"),
                         ((3, 0), good + b"'\xe2\x80\xa8\xf0\x9f\x98\x80': 1}"),
                         ((3, 0), good + b"'\xed\xa0\x80': 1}"), ((3, 0), good + b"'\xc0\xaf'}"),
                         ((2, 0), good + b"'\xe9\xa0\xad\x85': 1}"), ((1, 0), good + b"\xa0}"),
                         ((3, 0), good + b"}\xc2\xa0"), ((1, 0), good + b"\x00}")]:
        p.write_bytes(npy_bytes("", bytes(16), version=version, raw_header=raw))
        assert same_load(lib, p, (2,), "x.npy")[0] == "error"


TOKENS = ["1", "0", "00", "-", "+", "(", ")", "[", "]", "{", "}", ",", ":", " ", "\n", "\t",
          "#x\n", "'a'", '"b"', "b'c'", "r'\\d'", "True", "False", "None", "...", "set()",
          "1j", "2.5j", "1e5", "0x1F", "\\\n", "'''t\n'''", "1_0", "'\\u00e9'", "'é'", "x",
          "*", ".", "1e400", "-0.0", "'descr'", "'shape'", "'fortran_order'", "'<f8'", "(2,)",
          "'\\x7f'", "1.5", "0.1", "123456789.123"]


@FAST
@given(st.lists(st.sampled_from(TOKENS), min_size=1, max_size=14))
def test_random_headers(lib, tmp_path, tokens):
    text = "".join(tokens)
    p = tmp_path / "x.npy"
    p.write_bytes(npy_bytes("", bytes(16), version=(3, 0), raw_header=text.encode()))
    expected = py_load(p, (2,), "x.npy")
    if expected[0] == "error" and "{" in expected[1] and "," in expected[1]:
        return      # a set's repr follows its hash order, which npy.c does not reproduce
    same_load(lib, p, (2,), "x.npy")


DESCR_PARTS = ["'<f8'", "'>i4'", "'|b1'", "'S3'", "'<U2'", "'V4'", "'O'", "'<M8[s]'", "'f8'",
               "'i1'", "None", "'V0'", "'S'", "'<c16'", "'<f2'", "'u8'", "'>f2'"]


@st.composite
def descrs(draw, depth=0):
    r = draw(st.integers(0, 9))
    if depth > 2 or r < 4:
        return draw(st.sampled_from(DESCR_PARTS))
    if r < 6:
        shape = draw(st.sampled_from(["()", "(2,)", "2", "(1, 3)", "(0,)", "[2]", "None",
                                      "'<f8'", "(-1,)", "True", "3"]))
        return "(%s, %s)" % (draw(descrs(depth + 1)), shape)
    fields = []
    for _ in range(draw(st.integers(0, 3))):
        name = draw(st.sampled_from(["'a'", "'b'", "''", "('t', 'c')", "1", "(None, 'd')"]))
        if draw(st.booleans()):
            fields.append("(%s, %s, %s)" % (name, draw(descrs(depth + 1)),
                                              draw(st.sampled_from(["(2,)", "()", "1"]))))
        else:
            fields.append("(%s, %s)" % (name, draw(descrs(depth + 1))))
    return "[%s]" % ", ".join(fields)


@FAST
@given(descrs(), st.sampled_from(["", "<", ">", "|", "="]),
       st.text(alphabet="<>|=0123456789,()[]fiubcSUVMmOsD?. /hT", min_size=0, max_size=8))
def test_random_descrs(lib, tmp_path, descr, order, typestr):
    p = tmp_path / "x.npy"
    if "/0" in typestr:
        typestr = typestr.replace("/0", "/1")            # NumPy itself dies on M8[s/0]
    for d in [descr, repr(order + typestr)]:
        p.write_bytes(npy_bytes("{'descr': %s, 'fortran_order': False, 'shape': (2,), }" % d,
                                bytes(16)))
        same_load(lib, p, (2,), "x.npy")


# ---------------------------------------------------------------------------------- saving

SAVE_SHAPES = [(), (1,), (7,), (3, 4), (2, 3, 5), (2, 1, 3, 4), (0,), (0, 4), (3, 0),
               (10 ** 9, 0), (0, 10 ** 9), (1,) * 12, (2,) * 6 + (1,) * 20]


def special(rng, shape):
    n = int(np.prod(shape, dtype=np.int64))
    a = rng.integers(0, 2 ** 64, size=n, dtype=np.uint64).view(np.float64)
    specials = [0.0, -0.0, np.inf, -np.inf, np.nan, 5e-324, 1.7976931348623157e308]
    a[:min(n, len(specials))] = specials[:n]
    return a.reshape(shape)


def test_save_writes_what_save_npy_writes(lib, tmp_path):
    rng = np.random.default_rng(5)
    for shape in SAVE_SHAPES:
        a = special(rng, shape)
        py_path, c_path = tmp_path / "py.npy", tmp_path / "c.npy"
        assert py_save(py_path, a) == ("ok", None)
        assert c_save(lib, c_path, a) == ("ok", None)
        assert c_path.read_bytes() == py_path.read_bytes()
        back = np.load(c_path, allow_pickle=False)
        assert back.dtype == np.float64 and back.shape == shape
        assert np.array_equal(bits(back), bits(a))
        assert same_load(lib, c_path, shape)[0] == "ok"
        assert stat.S_IMODE(os.stat(c_path).st_mode) == stat.S_IMODE(os.stat(py_path).st_mode)
    assert sorted(os.listdir(tmp_path)) == ["c.npy", "py.npy"]       # no temporary files


@FAST
@given(shape=st.lists(st.integers(0, 5), max_size=5), seed=st.integers(0, 2 ** 32 - 1),
       wide=st.one_of(st.none(), st.integers(0, 10 ** 12)))
def test_random_saves(lib, tmp_path, shape, seed, wide):
    if wide is not None and len(shape) >= 2:
        shape = [wide, 0] + shape[2:]           # a wide first size (the header's padding)
    shape = tuple(shape)
    a = special(np.random.default_rng(seed), shape)
    py_path, c_path = tmp_path / "py.npy", tmp_path / "c.npy"
    assert py_save(py_path, a) == ("ok", None) and c_save(lib, c_path, a) == ("ok", None)
    assert c_path.read_bytes() == py_path.read_bytes()


def test_save_replaces_a_file_and_keeps_its_mode(lib, tmp_path):
    p = tmp_path / "w.npy"
    np.save(p, np.ones(5))
    p.chmod(0o640)
    assert c_save(lib, p, np.zeros((2, 2))) == ("ok", None)
    assert np.load(p).tolist() == [[0.0, 0.0], [0.0, 0.0]]
    assert stat.S_IMODE(os.stat(p).st_mode) == 0o640
    assert sorted(os.listdir(tmp_path)) == ["w.npy"]


def test_a_new_file_gets_the_usual_mode(lib, tmp_path):
    assert c_save(lib, tmp_path / "w.npy", np.zeros(2), umask=0o027) == ("ok", None)
    assert stat.S_IMODE(os.stat(tmp_path / "w.npy").st_mode) == 0o640
    old = os.umask(0o027)
    try:
        save_npy(str(tmp_path / "p.npy"), np.zeros(2))
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(tmp_path / "p.npy").st_mode) == 0o640


def test_save_through_symbolic_links(lib, tmp_path):
    real = tmp_path / "real.npy"
    np.save(real, np.ones(2))
    os.symlink(real, tmp_path / "w.npy")
    assert c_save(lib, tmp_path / "w.npy", np.full(3, 7.0)) == ("ok", None)
    assert os.path.islink(tmp_path / "w.npy") and np.load(real).tolist() == [7.0, 7.0, 7.0]
    # a dangling link: the file it names is made
    (tmp_path / "sub").mkdir()
    os.symlink("sub/../sub/new.npy", tmp_path / "dangling.npy")
    assert c_save(lib, tmp_path / "dangling.npy", np.arange(2.0)) == ("ok", None)
    assert np.load(tmp_path / "sub" / "new.npy").tolist() == [0.0, 1.0]
    # a relative link through a linked folder
    os.symlink("sub", tmp_path / "linkdir")
    os.symlink("linkdir/rel.npy", tmp_path / "rel.npy")
    assert c_save(lib, tmp_path / "rel.npy", np.arange(3.0)) == ("ok", None)
    assert np.load(tmp_path / "sub" / "rel.npy").tolist() == [0.0, 1.0, 2.0]


def test_save_in_the_current_directory(lib, tmp_path):
    assert c_save(lib, "w.npy", np.arange(3.0), cwd=tmp_path) == ("ok", None)
    assert np.load(tmp_path / "w.npy").tolist() == [0.0, 1.0, 2.0]


def test_save_errors(lib, tmp_path):
    (tmp_path / "file").write_text("x")
    (tmp_path / "dir.npy").mkdir()
    os.mkfifo(tmp_path / "pipe.npy")
    os.symlink("/dev/null", tmp_path / "null.npy")
    os.symlink("loop.npy", tmp_path / "loop.npy")
    os.symlink("dir.npy", tmp_path / "dirlink.npy")
    os.symlink("missing/x.npy", tmp_path / "broken.npy")
    cases = [(tmp_path / "out" / "w.npy", "out/w.npy"), (tmp_path / "out" / "w.npy", None),
             (tmp_path / "a" / "b" / "w.npy", "a/b/w.npy"),
             (tmp_path / "file" / "w.npy", "file/w.npy"),
             (tmp_path / "file" / "d" / "w.npy", "file/d/w.npy"),
             (tmp_path / "dir.npy", "dir.npy"), (tmp_path / "dirlink.npy", "dirlink.npy"),
             (tmp_path / "pipe.npy", "pipe.npy"), (tmp_path / "null.npy", "null.npy"),
             (tmp_path / "loop.npy", "loop.npy"), (tmp_path / "broken.npy", "broken.npy"),
             (tmp_path / ("n" * 300 + ".npy"), "long.npy"),
             ("/proc/goat-test.npy", None), (str(tmp_path) + "/", "slash/")]
    for path, shown in cases:
        expected = py_save(path, np.zeros(2), shown)
        assert expected[0] == "error", (path, expected)
        assert c_save(lib, path, np.zeros(2), shown) == expected
    assert sorted(os.listdir(tmp_path)) == sorted(
        ["file", "dir.npy", "pipe.npy", "null.npy", "loop.npy", "dirlink.npy", "broken.npy"])
    assert os.listdir(tmp_path / "dir.npy") == []


def test_save_errors_name_what_is_wrong(lib, tmp_path):
    """A dangling link's missing folder had been named '.', and a folder of /proc that takes
    no new file 'no such directory'."""
    os.symlink("missing/x.npy", tmp_path / "broken.npy")
    cases = [(tmp_path / "broken.npy", "broken.npy",
              "cannot save broken.npy: it links to 'missing/x.npy', in a directory that does "
              "not exist (%r)" % str(tmp_path / "missing")),
             ("/proc/goat-test.npy", None,
              "cannot save /proc/goat-test.npy: no new file can be made in the directory "
              "'/proc'"),
             ("/proc/self/goat-test.npy", "p.npy",
              "cannot save p.npy: no new file can be made in the directory '/proc/self'"),
             (tmp_path / "none" / "x.npy", "none/x.npy",
              "cannot save none/x.npy: no such directory 'none'")]
    # a link whose target is not UTF-8: shown as Python's repr shows it, by both
    os.symlink(b"nod\xffir/x.npy", os.fsencode(tmp_path / "odd.npy"))
    cases.append((tmp_path / "odd.npy", "odd.npy",
                  "cannot save odd.npy: it links to 'nod\\udcffir/x.npy', in a directory that "
                  "does not exist (%r)" % (os.fsdecode(os.fsencode(str(tmp_path)) + b"/nod\xffir"),)))
    for path, shown, said in cases:
        assert py_save(path, np.zeros(2), shown) == ("error", said)
        assert c_save(lib, path, np.zeros(2), shown) == ("error", said)


@pytest.mark.parametrize("name", ["n" * 251 + ".npy", "é" * 125 + ".npy", "n" * 199 + "é" * 20])
def test_save_takes_names_up_to_the_longest_a_folder_holds(lib, tmp_path, name):
    """A name of 242 to 255 bytes had been refused as too long (its temporary file's name,
    14 bytes longer, was); the temporary name is cut, between UTF-8 sequences."""
    assert len(name.encode()) <= 255
    for who, save in (("py", py_save), ("c", lambda p, a: c_save(lib, p, a))):
        d = tmp_path / who
        d.mkdir()
        assert save(d / name, np.arange(3.0)) == ("ok", None)
        assert np.load(d / name).tolist() == [0.0, 1.0, 2.0]
        assert os.listdir(d) == [name]


def file_size_limit(limit):
    """A child's setup: writes past `limit` bytes fail with EFBIG."""
    import resource
    import signal

    def setup():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    return setup


@pytest.mark.parametrize("limit, why", [
    (100, "file too large"),                        # in the header: the OSError's errno
    (4096, "file too large"),                       # in the data: the same (not tofile's
])                                                  # "1000 requested and 496 written")
def test_a_failed_write_leaves_the_old_file_whole(lib, tmp_path, limit, why):
    p = tmp_path / "w.npy"
    np.save(p, np.arange(10.0))
    before = p.read_bytes()
    status, err = in_child(lambda: os.write(2, py_save(p, np.zeros(1000), "w.npy")[1].encode()),
                           setup=file_size_limit(limit))
    assert (status, err) == (0, "cannot save w.npy: " + why)
    assert c_save(lib, p, np.zeros(1000), "w.npy", setup=file_size_limit(limit)) == ("error", err)
    assert p.read_bytes() == before
    assert sorted(os.listdir(tmp_path)) == ["w.npy"]          # no temporary file left behind


def test_a_write_failing_in_the_last_block_is_an_error(lib, tmp_path):
    """The array's last partial block failing (once missed by NumPy's tofile, whose failed
    flush at fclose nobody checks, so a truncated file replaced the old one): both report it
    and keep the old file."""
    p = tmp_path / "w.npy"
    np.save(p, np.arange(10.0))
    before = p.read_bytes()
    status, err = in_child(lambda: os.write(2, py_save(p, np.zeros(1000), "w.npy")[1].encode()),
                           setup=file_size_limit(128 + 4096 + 100))
    assert (status, err) == (0, "cannot save w.npy: file too large")
    assert p.read_bytes() == before
    assert c_save(lib, p, np.zeros(1000), "w.npy", setup=file_size_limit(128 + 4096 + 100)) == (
        "error", "cannot save w.npy: file too large")
    assert p.read_bytes() == before
    assert sorted(os.listdir(tmp_path)) == ["w.npy"]


@pytest.mark.skipif(ROOT_USER, reason="root writes anywhere")
def test_save_permission_denied(lib, tmp_path):
    d = tmp_path / "ro"
    d.mkdir()
    p = tmp_path / "w.npy"
    np.save(p, np.ones(2))
    p.chmod(0o444)
    d.chmod(0o500)
    try:
        for path, shown in [(d / "w.npy", "ro/w.npy"), (p, "w.npy")]:
            expected = py_save(path, np.zeros(2), shown)
            assert expected == ("error", "cannot save %s: permission denied" % shown)
            assert c_save(lib, path, np.zeros(2), shown) == expected
        assert np.load(p).tolist() == [1.0, 1.0]
    finally:
        d.chmod(0o700)


# -------------------------------------------------------------- the real process, for once

def test_a_failure_ends_the_process_with_status_1(lib, tmp_path):
    so = lib._name
    code = ("import ctypes, sys; lib = ctypes.CDLL(sys.argv[1]); "
            "dims = (ctypes.c_int64 * 1)(2); buf = (ctypes.c_double * 2)(); "
            "print('before', flush=True); "
            "lib.goat_load_npy(buf, sys.argv[2].encode(), b'data/x.npy', 1, dims, "
            "sys.argv[3].encode()); print('after')")
    p = subprocess.run([sys.executable, "-c", code, so, str(tmp_path / "data" / "x.npy"),
                        PREFIX + "\x01" + SUFFIX], capture_output=True, text=True, timeout=60)
    assert p.returncode == 1
    assert p.stdout == "before\n"
    assert p.stderr == PREFIX + "cannot load data/x.npy: no such directory 'data'" + SUFFIX + "\n"


@pytest.mark.parametrize("files, missing, hint", [
    (["data.npy"], "dat.npy", "data.npy"),            # a letter left out
    (["data.npy"], "dataa.npy", "data.npy"),          # one too many
    (["train.npy"], "trian.npy", "train.npy"),        # two neighbours swapped
    (["W.npy"], "w.npy", "W.npy"),                    # the case
    (["w.npy.gz", "w.npy.bak"], "w.npy", "w.npy.bak"),  # an extension more: the first by bytes
    (["Data.npy", "data.npy.x"], "data.npy", "Data.npy"),  # the case comes first
    (["w_100.npy"], "w_200.npy", None),               # a numbered series: another file
    (["w_10.npy"], "w_100.npy", None),
    (["abc.npy"], "xyz.npy", None),
    (["café.npy"], "cafe.npy", None),                 # é is two bytes: two edits, in both
    (["cafe.npy"], "cafè.npy", None),
])
def test_a_missing_file_names_the_file_it_is_likeliest_a_slip_for(lib, tmp_path, files, missing,
                                                                    hint):
    """Found by a newcomer: `goat run rnn.m` suggested nothing.  The interpreter and the C
    runtime pick the same file by the same rules."""
    (tmp_path / "d").mkdir()
    for f in files:
        (tmp_path / "d" / f).write_bytes(b"x")
    (tmp_path / "d" / "sub.npy").mkdir()         # a folder is no suggestion
    kind, message = same_load(lib, tmp_path / "d" / missing, (2,), "d/" + missing)
    assert kind == "error"
    want = "cannot load d/%s: no such file" % missing
    assert message == (want + "; did you mean d/%s?" % hint if hint else want)


def test_a_missing_file_in_a_huge_folder_gets_no_suggestion(lib, tmp_path):
    for k in range(10001):
        (tmp_path / ("f%05d.npy" % k)).write_bytes(b"")
    (tmp_path / "data.npy").write_bytes(b"")
    assert same_load(lib, tmp_path / "dat.npy", (2,), "dat.npy") == (
        "error", "cannot load dat.npy: no such file")


@pytest.mark.parametrize("files, missing, hint", [
    (["data.csv", "data.log", "data.npy"], "data", "data.npy"),    # the extension load reads
    (["e.txt", "W.npy"], "e.npy", None),                        # too short a name for one edit
    ([b"dat\xff.npy"], "data.npy", None),                       # not UTF-8: passed over
])
def test_a_suggestion_prefers_the_files_load_reads_and_passes_over_unlikely_ones(
        lib, tmp_path, files, missing, hint):
    """Found by a reviewer: 'data' suggested data.csv over data.npy (the first by bytes), e.npy
    suggested W.npy, and a name that is not UTF-8 was written differently by the two."""
    (tmp_path / "d").mkdir()
    for f in files:
        with open(os.path.join(os.fsencode(str(tmp_path / "d")),
                               f if isinstance(f, bytes) else f.encode()), "wb") as out:
            out.write(b"x")
    kind, message = same_load(lib, tmp_path / "d" / missing, (2,), "d/" + missing)
    want = "cannot load d/%s: no such file" % missing
    assert message == (want + "; did you mean d/%s?" % hint if hint else want)
