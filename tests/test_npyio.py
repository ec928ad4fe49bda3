"""load/save's .npy reader and writer (goat/interp/npyio.py): exact round trips, files written
by NumPy itself, and one message per way a file can be wrong."""
import ast
import errno
import os
import pickle
import stat
import struct
import sys
import tempfile
import zipfile

import numpy as np
import pytest
from numpy.lib import format as npformat

from goat.interp import npyio
from goat.interp.npyio import read_npy, save_npy
from goat.ops.registry import OpError

ROOT_USER = hasattr(os, "geteuid") and os.geteuid() == 0


def message(fn, *args, **kwargs):
    with pytest.raises(OpError) as info:
        fn(*args, **kwargs)
    return info.value.message


def npy_bytes(header: str, data: bytes = b"", version=(1, 0), raw_header: bytes = None) -> bytes:
    """A hand-made .npy file: magic, version, header length, header text, data."""
    text = raw_header if raw_header is not None else header.encode("latin1")
    text = text + b" " * (-(len(text) + 11) % 64) + b"\n"
    length = struct.pack("<H" if version == (1, 0) else "<I", len(text))
    return b"\x93NUMPY" + bytes(version) + length + text + data


def bits(a):
    return np.ascontiguousarray(a).view(np.uint64)


def special_values(rng, shape):
    a = rng.standard_normal(shape) * 10.0 ** rng.integers(-300, 300, size=shape)
    flat = a.reshape(-1)
    negative_nan = struct.unpack("<d", struct.pack("<Q", 0xFFF8000000000000))[0]
    payload_nan = struct.unpack("<d", struct.pack("<Q", 0x7FF0000000000123))[0]
    specials = [0.0, -0.0, np.inf, -np.inf, np.nan, negative_nan, payload_nan, 5e-324,
                -2.2250738585072009e-308, 1.7976931348623157e308]
    for i, v in enumerate(specials[:flat.size]):
        flat[i] = v
    return a


# ------------------------------------------------------------------------------ round trips

@pytest.mark.parametrize("shape", [(), (1,), (7,), (3, 4), (2, 3, 5), (2, 1, 3, 4), (0, 4),
                                   (3, 0), (2, 0, 5)])
def test_round_trip_is_bitwise(tmp_path, shape):
    rng = np.random.default_rng(len(shape) * 7 + sum(shape))
    a = special_values(rng, shape)
    p = str(tmp_path / "w.npy")
    save_npy(p, a)
    b = read_npy(p, shape)
    assert b.dtype == np.float64 and b.shape == shape
    assert b.flags.c_contiguous and b.flags.writeable
    assert np.array_equal(bits(a), bits(b))
    # and NumPy reads what goat wrote, bit for bit
    c = np.load(p, allow_pickle=False)
    assert c.dtype == np.float64 and c.shape == shape
    assert np.array_equal(bits(a), bits(c))


def test_round_trip_many_random_ranks(tmp_path):
    rng = np.random.default_rng(1)
    p = str(tmp_path / "w.npy")
    for _ in range(60):
        rank = int(rng.integers(0, 5))
        shape = tuple(int(d) for d in rng.integers(1, 5, size=rank))
        a = rng.standard_normal(shape).view(np.uint64) ^ rng.integers(0, 2 ** 63, size=shape,
                                                                        dtype=np.uint64)
        a = np.asarray(a).view(np.float64).reshape(shape)     # arbitrary bit patterns
        save_npy(p, a)
        assert np.array_equal(bits(read_npy(p, shape)), bits(a))
        assert np.array_equal(bits(read_npy(p, (None,) * rank)), bits(a))


def test_save_accepts_any_layout_and_values(tmp_path):
    p = str(tmp_path / "w.npy")
    a = np.arange(12.0).reshape(3, 4)
    save_npy(p, a.T)                                  # Fortran-ordered view
    assert np.array_equal(np.load(p), a.T)
    save_npy(p, a[:, ::2])                            # neither C nor Fortran
    assert np.array_equal(np.load(p), a[:, ::2])
    save_npy(p, 2.5)                                  # a Python float: a scalar
    assert np.load(p).shape == () and float(np.load(p)) == 2.5
    save_npy(p, [[1, 2], [3, 4]])
    assert np.load(p).dtype == np.float64


DTYPES = ["<f2", ">f2", "<f4", ">f4", "<f8", ">f8", "|i1", "<i2", ">i2", "<i4", ">i4", "<i8",
          ">i8", "|u1", "<u2", ">u2", "<u4", ">u4", "<u8", ">u8", "|b1"]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("order", ["C", "F"])
def test_reads_files_numpy_saved(tmp_path, dtype, order):
    rng = np.random.default_rng(3)
    dt = np.dtype(dtype)
    if dt.kind == "f":
        a = rng.standard_normal((3, 5)).astype(dt)
        a[0, 0], a[0, 1], a[0, 2] = np.inf, -0.0, np.nan
    elif dt.kind == "b":
        a = rng.integers(0, 2, size=(3, 5)).astype(dt)
    else:
        info = np.iinfo(dt)
        lo, hi = max(info.min, -2 ** 53), min(info.max, 2 ** 53)
        a = rng.integers(lo, hi, size=(3, 5), endpoint=True, dtype=dt.newbyteorder("="))
        a = a.astype(dt)
        a[0, 0], a[0, 1] = lo, hi
    a = np.asfortranarray(a) if order == "F" else np.ascontiguousarray(a)
    p = tmp_path / "x.npy"
    np.save(p, a)
    header_says_fortran = b"'fortran_order': True" in p.read_bytes()[:200]
    assert header_says_fortran == (order == "F")
    b = read_npy(str(p), (3, 5))
    assert b.dtype == np.float64 and b.flags.c_contiguous
    expected = a.astype(np.float64)
    assert np.array_equal(bits(b), bits(expected))


def test_reads_rank_0_and_rank_4_fortran(tmp_path):
    p = tmp_path / "x.npy"
    np.save(p, np.float32(1.5))
    out = read_npy(str(p), ())
    assert out.shape == () and float(out) == 1.5
    a = np.asfortranarray(np.arange(120, dtype=">i4").reshape(2, 3, 4, 5))
    np.save(p, a)
    assert np.array_equal(read_npy(str(p), (2, None, 4, None)), a.astype(np.float64))


@pytest.mark.parametrize("version", [(1, 0), (2, 0), (3, 0)])
def test_reads_every_format_version(tmp_path, version):
    a = np.arange(6.0).reshape(2, 3)
    p = tmp_path / "x.npy"
    with open(p, "wb") as f:
        npformat.write_array(f, a, version=version)
    assert np.array_equal(read_npy(str(p), (2, 3)), a)


def test_bool_bytes_other_than_0_and_1_are_true(tmp_path):
    p = tmp_path / "x.npy"
    p.write_bytes(npy_bytes("{'descr': '|b1', 'fortran_order': False, 'shape': (4,), }",
                            bytes([0, 1, 2, 255])))
    assert read_npy(str(p), (4,)).tolist() == [0.0, 1.0, 1.0, 1.0]


# -------------------------------------------------------------------- integers beyond 2**53

@pytest.mark.parametrize("dtype, value", [
    ("<i8", 2 ** 53 + 2), ("<i8", -(2 ** 53) - 2), ("<i8", -(2 ** 63)), ("<i8", 2 ** 62),
    ("<u8", 2 ** 63), ("<u8", 2 ** 64 - 2 ** 11), (">i8", 2 ** 60), (">u8", 2 ** 53),
])
def test_large_integers_that_float64_holds_exactly_are_read(tmp_path, dtype, value):
    p = tmp_path / "x.npy"
    np.save(p, np.array([1, value], dtype=dtype))
    assert read_npy(str(p), (2,)).tolist() == [1.0, float(value)]
    assert int(read_npy(str(p), (2,))[1]) == value


@pytest.mark.parametrize("dtype, value", [
    ("<i8", 2 ** 53 + 1), ("<i8", -(2 ** 53) - 1), ("<i8", 2 ** 63 - 1), (">i8", 2 ** 53 + 1),
    ("<u8", 2 ** 64 - 1), ("<u8", 2 ** 53 + 1), (">u8", 2 ** 63 + 1),
])
def test_integers_that_would_round_are_refused(tmp_path, dtype, value):
    p = tmp_path / "x.npy"
    np.save(p, np.asfortranarray(np.array([[1, 2], [3, value]], dtype=dtype)))
    m = message(read_npy, str(p), (2, 2), shown="x.npy")
    assert m == ("x.npy holds the integer %d, which float64 cannot hold exactly (it would "
                 "round to %d); goat's values are float64" % (value, int(float(value))))


def test_the_first_inexact_integer_is_named(tmp_path):
    p = tmp_path / "x.npy"
    np.save(p, np.array([[5, 2 ** 53 + 3], [2 ** 53 + 1, 7]], dtype=np.int64))
    assert "the integer 9007199254740995, " in message(read_npy, str(p), (2, 2))


# ---------------------------------------------------------------------------- shape checks

@pytest.mark.parametrize("saved, declared, text", [
    ((3, 4), (112, 4), "x.npy holds an array of shape 3x4, but tensor[112x4] was declared"),
    ((), (112, 4), "x.npy holds a scalar, but tensor[112x4] was declared"),
    ((3, 4), (), "x.npy holds an array of shape 3x4, but a scalar was declared"),
    # as many numbers in another shape: the way to read them (a flat file for a column)
    ((12,), (3, 4), "x.npy holds an array of shape 12, but tensor[3x4] was declared; it holds "
                    "as many numbers: load it as tensor[12] and reshape it (reshape(VALUE, "
                    "tensor[3x4]))"),
    ((), (1, 1), "x.npy holds a scalar, but tensor[1x1] was declared; it holds as many numbers: "
                 "load it as scalar and reshape it (reshape(VALUE, tensor[1x1]))"),
    ((1, 1), (), "x.npy holds an array of shape 1x1, but a scalar was declared; it holds as many "
                 "numbers: load it as tensor[1x1] and reshape it (reshape(VALUE, scalar))"),
    ((12,), (None, 4), "x.npy holds an array of shape 12, but tensor[?x4] was declared"),
    # the transposed shape: reshaping would scramble it
    ((3, 2), (2, 3), "x.npy holds an array of shape 3x2, but tensor[2x3] was declared; it "
                     "holds the transposed shape: load it as tensor[3x2] and transpose it "
                     "(transpose(VALUE))"),
    ((3, 4), (None, 5), "x.npy holds an array of shape 3x4, but tensor[?x5] was declared"),
    ((3, 4, 1), (None, None), "x.npy holds an array of shape 3x4x1, but tensor[?x?] was declared"),
    ((0, 4), (1, 4), "x.npy holds an array of shape 0x4, but tensor[1x4] was declared"),
])
def test_shape_must_be_the_declared_one(tmp_path, saved, declared, text):
    p = tmp_path / "x.npy"
    np.save(p, np.zeros(saved))
    assert message(read_npy, str(p), declared, shown="x.npy") == text


def test_question_marks_take_the_files_size(tmp_path):
    p = tmp_path / "x.npy"
    np.save(p, np.ones((5, 4)))
    assert read_npy(str(p), (None, 4)).shape == (5, 4)
    assert read_npy(str(p), [None, None]).shape == (5, 4)


# ----------------------------------------------------------------------- files that are wrong

def test_missing_file(tmp_path):
    assert (message(read_npy, str(tmp_path / "x.npy"), (2,), shown="x.npy")
            == "cannot load x.npy: no such file")


def test_missing_directory(tmp_path):
    assert (message(read_npy, str(tmp_path / "data" / "x.npy"), (2,), shown="data/x.npy")
            == "cannot load data/x.npy: no such directory 'data'")


def test_path_through_a_file(tmp_path):
    (tmp_path / "data").write_text("not a directory")
    assert (message(read_npy, str(tmp_path / "data" / "x.npy"), (2,), shown="data/x.npy")
            == "cannot load data/x.npy: 'data' is not a directory")


def test_shown_defaults_to_the_path(tmp_path):
    p = str(tmp_path / "x.npy")
    assert message(read_npy, p, (2,)) == "cannot load %s: no such file" % p


def test_a_directory(tmp_path):
    (tmp_path / "d.npy").mkdir()
    assert (message(read_npy, str(tmp_path / "d.npy"), (2,), shown="d.npy")
            == "cannot load d.npy: it is a directory")


def test_permission_denied(tmp_path, monkeypatch):
    p = tmp_path / "x.npy"
    np.save(p, np.zeros(2))

    def refuse(*args, **kwargs):
        raise PermissionError(errno.EACCES, "Permission denied", str(p))
    monkeypatch.setattr(os, "open", refuse)
    assert message(read_npy, str(p), (2,), shown="x.npy") == "cannot load x.npy: permission denied"


@pytest.mark.skipif(ROOT_USER or sys.platform == "win32", reason="root reads any file")
def test_permission_denied_for_real(tmp_path):
    p = tmp_path / "x.npy"
    np.save(p, np.zeros(2))
    p.chmod(0)
    try:
        assert (message(read_npy, str(p), (2,), shown="x.npy")
                == "cannot load x.npy: permission denied")
    finally:
        p.chmod(0o600)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_fifo_is_refused_without_blocking(tmp_path):
    p = tmp_path / "x.npy"
    os.mkfifo(p)          # opening it for reading would block until a writer comes
    assert (message(read_npy, str(p), (2,), shown="x.npy")
            == "cannot load x.npy: it is a named pipe, not a regular file")


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="no /dev/zero here")
def test_dev_zero_is_refused_before_reading():
    assert (message(read_npy, "/dev/zero", (2,))
            == "cannot load /dev/zero: it is a character device, not a regular file")


@pytest.mark.parametrize("content, text", [
    (b"", "x.npy is not a NumPy .npy file: it is empty"),
    (b"1,2,3\n4,5,6\n", "x.npy is not a NumPy .npy file (it does not start with the .npy "
                        "magic string \\x93NUMPY)"),
    (pickle.dumps([1.0, 2.0], protocol=4), "x.npy is not a NumPy .npy file (it looks like a "
                                           "Python pickle, which goat never reads)"),
    (b"\x93NUM", "x.npy is truncated: it ends inside the .npy magic string"),
    (b"\x93NUMPY\x01", "x.npy is truncated: it ends inside the .npy magic string"),
    (b"\x93NUMPY\x01\x00\x76", "x.npy is truncated: it ends inside its header"),
    (b"\x93NUMPY\x01\x00\x76\x00{'descr'", "x.npy is truncated: it ends inside its header"),
    (b"\x93NUMPY\x04\x00\x76\x00", "x.npy is a .npy file of format version 4.0, which goat "
                                   "cannot read (it reads versions 1.0, 2.0 and 3.0)"),
    (b"\x93NUMPY\x01\x01\x76\x00", "x.npy is a .npy file of format version 1.1, which goat "
                                   "cannot read (it reads versions 1.0, 2.0 and 3.0)"),
])
def test_not_a_npy_file(tmp_path, content, text):
    p = tmp_path / "x.npy"
    p.write_bytes(content)
    assert message(read_npy, str(p), (2,), shown="x.npy") == text


def test_an_npz_archive(tmp_path):
    p = tmp_path / "x.npy"
    np.savez(p.with_suffix(""), a=np.zeros(2))        # writes x.npz
    os.replace(tmp_path / "x.npz", p)
    assert zipfile.is_zipfile(p)
    assert message(read_npy, str(p), (2,), shown="x.npy") == (
        "x.npy is not a NumPy .npy file (it is a zip archive, perhaps an .npz file: save each "
        "array on its own with numpy.save)")


def test_object_arrays_are_never_unpickled(tmp_path):
    witness = tmp_path / "unpickled"

    class Bomb:
        def __reduce__(self):
            return (os.mkdir, (str(witness),))
    p = tmp_path / "x.npy"
    np.save(p, np.array([Bomb(), 1.0], dtype=object), allow_pickle=True)
    for declared in [(2,), (5, 5)]:
        assert message(read_npy, str(p), declared, shown="x.npy") == (
            "x.npy holds Python objects (a pickle); goat reads only numeric arrays, never "
            "pickles")
    assert not witness.exists()


def test_records_with_an_object_field_are_a_pickle(tmp_path):
    p = tmp_path / "x.npy"
    np.save(p, np.zeros(2, dtype=[("a", "<f8"), ("b", "O")]), allow_pickle=True)
    assert "holds Python objects (a pickle)" in message(read_npy, str(p), (2,))


ACCEPTED = "goat reads float16, float32 or float64, signed or unsigned integers, or bool"


@pytest.mark.parametrize("array, found", [
    (np.zeros(2, dtype=np.complex128), "complex numbers (complex128)"),
    (np.zeros(2, dtype=">c8"), "complex numbers (>c8)"),
    (np.array(["ab", "c"]), "Unicode strings (<U2)"),
    (np.array([b"abc", b"d"]), "byte strings (|S3)"),
    (np.zeros(2, dtype=[("a", "<f8"), ("b", "<i4")]),
     "records with fields a, b (structured dtype [('a', '<f8'), ('b', '<i4')])"),
    (np.zeros(2, dtype="datetime64[s]"), "dates and times (datetime64[s])"),
    (np.zeros(2, dtype="timedelta64[ns]"), "time spans (timedelta64[ns])"),
    (np.zeros(2, dtype="V8"), "raw bytes (void dtype |V8)"),
])
def test_wrong_dtypes_are_named(tmp_path, array, found):
    p = tmp_path / "x.npy"
    np.save(p, array)
    assert message(read_npy, str(p), (2,), shown="x.npy") == "x.npy holds %s; %s" % (found,
                                                                                     ACCEPTED)


def test_floats_wider_than_64_bits(tmp_path):
    p = tmp_path / "x.npy"
    p.write_bytes(npy_bytes("{'descr': '<f16', 'fortran_order': False, 'shape': (2,), }",
                            bytes(32)))
    m = message(read_npy, str(p), (2,), shown="x.npy")
    assert m.startswith("x.npy holds floats of 128 bits (") and m.endswith(
        "), wider than float64; " + ACCEPTED)


def test_truncated_data(tmp_path):
    p = tmp_path / "x.npy"
    np.save(p, np.zeros((112, 4)))
    content = p.read_bytes()
    p.write_bytes(content[:len(content) - 3584 + 100])
    assert message(read_npy, str(p), (112, 4), shown="x.npy") == (
        "x.npy is truncated: its header promises 3584 bytes of data, the file holds 100")


def test_a_huge_promise_is_checked_before_any_allocation(tmp_path):
    p = tmp_path / "x.npy"
    p.write_bytes(npy_bytes("{'descr': '<f8', 'fortran_order': False, 'shape': (10**15, 10**6), }"
                            .replace("10**15", str(10 ** 15)).replace("10**6", str(10 ** 6)),
                            bytes(16)))
    assert message(read_npy, str(p), (None, None), shown="x.npy") == (
        "x.npy has a damaged header: its shape (1000000000000000, 1000000) is too large for any "
        "machine to address")


def test_trailing_bytes_are_an_error(tmp_path):
    p = tmp_path / "x.npy"
    np.save(p, np.zeros((3, 4)))
    with open(p, "ab") as f:
        f.write(b"\0" * 40)
    assert message(read_npy, str(p), (3, 4), shown="x.npy") == (
        "x.npy has 40 bytes after its data: its header promises 96 bytes of data, the file "
        "holds 136 (a .npy file holds one array, with nothing after it)")


def test_two_arrays_in_one_file_are_refused(tmp_path):
    p = tmp_path / "x.npy"
    with open(p, "wb") as f:
        np.save(f, np.zeros(2))
        np.save(f, np.ones(2))
    assert "bytes after its data" in message(read_npy, str(p), (2,))


DAMAGED = "x.npy has a damaged header: "


@pytest.mark.parametrize("header, why", [
    ("[1, 2]", "[1, 2] is not a Python dict literal"),
    ("{'descr': '<f8', 'fortran_order': False, 'shape': (2,)",
     "\"{'descr': '<f8', 'fortran_order': False, 'shape': (2,)\" is not a Python dict literal"),
    ("__import__('os').system('echo hi')", "\"__import__('os').system('echo hi')\" is not a "
                                           "Python dict literal"),
    ("{'descr': '<f8', 'shape': (2,)}", "it has no 'fortran_order' entry"),
    ("{'descr': '<f8', 'fortran_order': False, 'shape': (2,), 'x': 1}",
     "it has an unexpected entry 'x'"),
    ("{'descr': '<f8', 'fortran_order': False, 'shape': [2]}", "its shape [2] is not a tuple of sizes"),
    ("{'descr': '<f8', 'fortran_order': False, 'shape': (-2,)}",
     "its shape (-2,) is not a tuple of sizes"),
    ("{'descr': '<f8', 'fortran_order': False, 'shape': (True,)}",
     "its shape (True,) is not a tuple of sizes"),
    ("{'descr': '<f8', 'fortran_order': 0, 'shape': (2,)}",
     "its fortran_order 0 is not True or False"),
    ("{'descr': 'nonsense', 'fortran_order': False, 'shape': (2,)}",
     "its descr 'nonsense' is not a NumPy dtype"),
    ("{'descr': 7, 'fortran_order': False, 'shape': (2,)}", "its descr 7 is not a NumPy dtype"),
])
def test_damaged_headers(tmp_path, header, why):
    p = tmp_path / "x.npy"
    p.write_bytes(npy_bytes(header, bytes(16)))
    assert message(read_npy, str(p), (2,), shown="x.npy") == DAMAGED + why


def test_a_header_that_is_not_utf8(tmp_path):
    p = tmp_path / "x.npy"
    p.write_bytes(npy_bytes("", bytes(16), version=(3, 0),
                            raw_header=b"{'descr': '<f8', 'fortran_order': False, 'shape': (2,), "
                                       b"'\xff': 1}"))
    assert message(read_npy, str(p), (2,), shown="x.npy") == DAMAGED + "it is not UTF-8 text"


def test_an_oversized_header(tmp_path):
    p = tmp_path / "x.npy"
    header = "{'descr': '<f8', 'fortran_order': False, 'shape': (2,), }" + " " * 20000
    p.write_bytes(npy_bytes(header, bytes(16), version=(2, 0)))
    m = message(read_npy, str(p), (2,), shown="x.npy")
    assert m.startswith("x.npy has a header of 20") and m.endswith(
        "bytes, more than the 10000 goat reads (a numeric array's header takes a few hundred)")


def test_the_hand_made_header_helper_is_sound(tmp_path):
    p = tmp_path / "x.npy"
    p.write_bytes(npy_bytes("{'descr': '<f8', 'fortran_order': False, 'shape': (2,), }",
                            np.array([1.5, -2.0]).tobytes()))
    assert read_npy(str(p), (2,)).tolist() == [1.5, -2.0]
    assert np.load(p).tolist() == [1.5, -2.0]
    content = p.read_bytes()
    assert len(content) % 64 == 16                       # the header pads to 64 bytes
    assert ast.literal_eval(content[10:-16].decode())["shape"] == (2,)


# ---------------------------------------------------------------------------------- saving

def test_save_to_a_missing_directory(tmp_path):
    assert (message(save_npy, str(tmp_path / "out" / "w.npy"), np.zeros(2), shown="out/w.npy")
            == "cannot save out/w.npy: no such directory 'out'")
    assert not (tmp_path / "out").exists()


def test_save_through_a_file(tmp_path):
    (tmp_path / "out").write_text("x")
    assert (message(save_npy, str(tmp_path / "out" / "w.npy"), np.zeros(2), shown="out/w.npy")
            == "cannot save out/w.npy: 'out' is not a directory")


def test_save_onto_a_directory(tmp_path):
    (tmp_path / "w.npy").mkdir()
    assert (message(save_npy, str(tmp_path / "w.npy"), np.zeros(2), shown="w.npy")
            == "cannot save w.npy: it is a directory")
    assert os.listdir(tmp_path / "w.npy") == []


def test_save_permission_denied(tmp_path, monkeypatch):
    def refuse(*args, **kwargs):
        raise PermissionError(errno.EACCES, "Permission denied")
    monkeypatch.setattr(tempfile, "mkstemp", refuse)
    assert (message(save_npy, str(tmp_path / "w.npy"), np.zeros(2), shown="w.npy")
            == "cannot save w.npy: permission denied")


@pytest.mark.skipif(ROOT_USER or sys.platform == "win32", reason="root writes anywhere")
def test_save_permission_denied_for_real(tmp_path):
    d = tmp_path / "ro"
    d.mkdir()
    d.chmod(0o500)
    try:
        assert (message(save_npy, str(d / "w.npy"), np.zeros(2), shown="ro/w.npy")
                == "cannot save ro/w.npy: permission denied")
    finally:
        d.chmod(0o700)


@pytest.mark.skipif(ROOT_USER or sys.platform == "win32", reason="root writes anywhere")
def test_a_read_only_file_is_not_replaced(tmp_path):
    p = tmp_path / "w.npy"
    np.save(p, np.ones(2))
    p.chmod(0o444)
    assert (message(save_npy, str(p), np.zeros(2), shown="w.npy")
            == "cannot save w.npy: permission denied")
    assert np.load(p).tolist() == [1.0, 1.0]


def fail_halfway(error):
    """save's writer (npyio._write_array) writing half of the real file, then failing."""
    real = npformat.write_array

    def write_array(f, array, **kwargs):
        import io
        buf = io.BytesIO()
        real(buf, array, allow_pickle=False)
        data = buf.getvalue()
        f.write(data[:len(data) // 2])
        f.flush()
        raise error
    return write_array


@pytest.mark.parametrize("error, why", [
    (OSError(errno.ENOSPC, "No space left on device"), "the disk is full"),
    (OSError(errno.EIO, "Input/output error"), "an input/output error (the disk may be failing)"),
    (OSError(errno.EDQUOT, "Disk quota exceeded"), "the disk quota is used up"),
    (OSError(errno.EFBIG, "File too large"), "file too large"),
])
def test_an_interrupted_save_leaves_the_old_file_whole(tmp_path, monkeypatch, error, why):
    p = tmp_path / "w.npy"
    old = np.arange(1000.0)
    np.save(p, old)
    before = p.read_bytes()
    monkeypatch.setattr(npyio, "_write_array", fail_halfway(error))
    assert message(save_npy, str(p), np.zeros(1000), shown="w.npy") == "cannot save w.npy: " + why
    assert p.read_bytes() == before
    assert sorted(os.listdir(tmp_path)) == ["w.npy"]          # no temporary file left behind


def test_an_interrupt_during_save_removes_the_temporary_file(tmp_path, monkeypatch):
    p = tmp_path / "w.npy"
    np.save(p, np.arange(10.0))
    before = p.read_bytes()
    monkeypatch.setattr(npyio, "_write_array", fail_halfway(KeyboardInterrupt()))
    with pytest.raises(KeyboardInterrupt):
        save_npy(str(p), np.zeros(10))
    assert p.read_bytes() == before
    assert sorted(os.listdir(tmp_path)) == ["w.npy"]


def test_a_failed_rename_removes_the_temporary_file(tmp_path, monkeypatch):
    def refuse(src, dst):
        raise OSError(errno.EXDEV, "Invalid cross-device link")
    monkeypatch.setattr(os, "replace", refuse)
    assert (message(save_npy, str(tmp_path / "w.npy"), np.zeros(2), shown="w.npy")
            == "cannot save w.npy: invalid cross-device link")
    assert os.listdir(tmp_path) == []


def test_save_replaces_an_existing_file_and_keeps_its_mode(tmp_path):
    p = tmp_path / "w.npy"
    np.save(p, np.ones(5))
    p.chmod(0o640)
    save_npy(str(p), np.zeros((2, 2)))
    assert np.load(p).tolist() == [[0.0, 0.0], [0.0, 0.0]]
    assert stat.S_IMODE(os.stat(p).st_mode) == 0o640
    assert sorted(os.listdir(tmp_path)) == ["w.npy"]


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX modes")
def test_a_new_file_gets_the_usual_mode(tmp_path):
    old = os.umask(0o027)
    try:
        save_npy(str(tmp_path / "w.npy"), np.zeros(2))
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(tmp_path / "w.npy").st_mode) == 0o640


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="no symbolic links")
def test_save_through_a_symbolic_link_keeps_the_link(tmp_path):
    real = tmp_path / "real.npy"
    np.save(real, np.ones(2))
    link = tmp_path / "w.npy"
    os.symlink(real, link)
    save_npy(str(link), np.full(3, 7.0))
    assert os.path.islink(link)
    assert np.load(real).tolist() == [7.0, 7.0, 7.0]


def test_save_in_the_current_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    save_npy("w.npy", np.arange(3.0))
    assert read_npy("w.npy", (3,)).tolist() == [0.0, 1.0, 2.0]


def test_save_never_replaces_a_device_or_a_pipe(tmp_path):
    """A save onto a named pipe (or through a link to a device) is refused: replacing it with
    a regular file would, as root, replace /dev/null for the whole machine."""
    fifo = tmp_path / "pipe.npy"
    os.mkfifo(fifo)
    with pytest.raises(OpError) as e:
        save_npy(str(fifo), np.zeros((1, 1)))
    assert e.value.message.endswith("it is a named pipe, not a regular file")
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    link = tmp_path / "null.npy"
    os.symlink("/dev/null", link)
    with pytest.raises(OpError) as e:
        save_npy(str(link), np.zeros((1, 1)))
    assert e.value.message.endswith("it is a character device, not a regular file")
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)


@pytest.mark.parametrize("shape, dtype", [((), np.float64), ((0, 3), np.float64),
                                          ((3, 4, 5), np.float64), ((7,), np.float32),
                                          ((1,) * 40, np.float64)])
def test_save_writes_the_bytes_numpy_writes(shape, dtype):
    """save writes the cells with the file's own write (so a full disk is "the disk is
    full", not tofile's "N requested and M written"): byte for byte NumPy's write_array."""
    import io
    from numpy.lib import format as npformat
    from goat.interp.npyio import _write_array
    a = np.asarray(np.random.default_rng(0).normal(size=shape), dtype=dtype, order="C")
    want, got = io.BytesIO(), io.BytesIO()
    npformat.write_array(want, a, allow_pickle=False)
    _write_array(got, a)
    assert got.getvalue() == want.getvalue()


def test_reading_makes_no_reference_cycles(tmp_path):
    """goat runs with the cyclic collector paused; ast.literal_eval made a cycle at each
    call, so a load in a loop had kept about 1 KB a step (100,000 steps: 135 MB)."""
    import gc
    p = tmp_path / "x.npy"
    np.save(p, np.ones((2, 3)))
    was = gc.isenabled()
    gc.disable()
    try:
        gc.collect()
        for _ in range(200):
            read_npy(str(p), (2, 3))
        assert gc.collect() == 0
    finally:
        if was:
            gc.enable()


@pytest.mark.parametrize("text", ["{'descr': '<f8', 'fortran_order': False, 'shape': (3, 4), }",
                                  "{'shape': (), 'a': [1, +2.5, -3, -1j], 'b': None}",
                                  "  {1: 'x'}  \n", "{'<f8'}", "(1+2j, -3-4j, 1.5-2j)", "set()",
                                  "{'a': {1, 2}, 'b': (), 'c': [[]]}", "-(1)"])
def test_the_header_is_read_as_literal_eval_reads_it(text):
    assert npyio._literal(text) == ast.literal_eval(text.strip())


@pytest.mark.parametrize("text", ["{**a}", "f(x)", "{'a': x}", "-'s'", "[1, 2][0]", "1 + 2",
                                  "1j + 2", "set(1)", "--1", "{[1]: 2}"])
def test_what_literal_eval_refuses_is_refused(text):
    with pytest.raises((ValueError, SyntaxError, TypeError)) as info:
        npyio._literal(text)
    with pytest.raises(info.type):
        ast.literal_eval(text)
