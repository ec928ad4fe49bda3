"""``load`` and ``save``: NumPy ``.npy`` files, read and written without pickles.

The format is NumPy's own (NEP 1, "A simple file format for NumPy arrays", and the module
documentation of ``numpy.lib.format``): the magic string ``\\x93NUMPY``, a major and minor
version byte, a little-endian header length (2 bytes in version 1.0, 4 in 2.0 and 3.0), a
header that is a Python dict literal ``{'descr': ..., 'fortran_order': ..., 'shape': ...}``
(latin-1 text in 1.0 and 2.0, UTF-8 in 3.0), then the raw data.

:func:`read_npy` reads that layout itself -- ``numpy.lib.format.read_magic`` and
``descr_to_dtype`` are used, the header dict is parsed as :func:`ast.literal_eval` parses it under
NumPy's own size limit -- so that each way a file can be wrong gets its own message in goat's
voice, and so that nothing is ever unpickled:

* versions 1.0, 2.0 and 3.0 are read;
* accepted element types: float16, float32, float64, every signed and unsigned integer, and
  bool, in either byte order, in C or Fortran order.  Values are converted exactly to float64;
  an int64 or uint64 that float64 cannot hold exactly (beyond 2**53) is an error naming it;
* refused, each with a message: Python objects (a pickle), complex numbers, strings, records
  (structured dtypes), sub-arrays, raw bytes (void), dates and time spans, and floats wider
  than 64 bits;
* the shape must be the declared one (a ``None`` dimension -- ``?`` -- matches any size);
* the file must hold exactly the bytes its header promises: fewer is "truncated", and more is
  also an error ("bytes after its data"), since ``numpy.save`` never writes any and a file
  with extra bytes is damaged or holds more than one array;
* only a regular file is opened, without blocking (a FIFO or ``/dev/zero`` is refused before
  a byte is read), and exactly the promised number of bytes is read, after checking the
  file's size, so a damaged header cannot make goat allocate memory the file does not back.

:func:`save_npy` writes a float64 array with ``numpy.lib.format.write_array``
(``allow_pickle=False``) atomically: into a temporary file in the target's directory, flushed
and fsynced, then renamed onto the target with :func:`os.replace`.  An interrupted save leaves
an existing file whole and no temporary file behind.  A symbolic link is followed (the file it
points to is replaced, the link stays).

Every failure is an :class:`~goat.ops.registry.OpError` in the user's terms; the evaluator adds
the program line.
"""
from __future__ import annotations

import ast
import errno
import io
import numbers
import os
import stat
import struct
import threading

import numpy as np
from numpy.lib import format as _format

from goat.ops.registry import OpError
from goat.typecheck.shapes import MAX_BYTES, format_shape, format_type

MAX_HEADER_SIZE = 10000   # NumPy's own default limit (``max_header_size``) for a safe header

# version -> (struct format of the header length, encoding of the header)
_VERSIONS = {(1, 0): ("<H", "latin1"), (2, 0): ("<I", "latin1"), (3, 0): ("<I", "utf8")}
_MAGIC_PREFIX = b"\x93NUMPY"
_ACCEPTED = ("goat reads float16, float32 or float64, signed or unsigned integers, "
             "or bool")
_EXACT = 2 ** 53           # every integer of at most this magnitude is a float64


# ---------------------------------------------------------------------------------- reading

def _count(shape) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def read_npy(path: str, declared: tuple, shown: str | None = None) -> np.ndarray:
    """The array in the ``.npy`` file at ``path``, as a C-contiguous float64 array.

    ``declared`` is the shape the program declared: ints, or None for a ``?`` (any size).
    ``shown`` is how the path is named in messages (default ``path``).  Raises OpError.
    """
    name = path if shown is None else shown
    try:
        st = os.stat(path)
        _require_regular(st, name)
        flags = (os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
                 | getattr(os, "O_BINARY", 0))
        fd = os.open(path, flags)
        with os.fdopen(fd, "rb", buffering=0) as f:
            st = os.fstat(f.fileno())      # the file actually opened (it may have changed)
            _require_regular(st, name)
            return _read_open(f, st.st_size, tuple(declared), name)
    except OSError as e:
        raise OpError(_os_message("load", path, name, e)) from None


def npy_shape(path: str, declared: tuple):
    """The shape of the array in the ``.npy`` file at ``path`` when it is one ``load`` with
    the declared shape (ints and None for ``?``) would read, else None (no such file, not
    one it reads, another shape: the load says why when it runs).  Reads the header only."""
    try:
        st = os.stat(path)
        if not stat.S_ISREG(st.st_mode):
            return None
        with open(path, "rb") as f:
            start = _read_exact(f, _format.MAGIC_LEN)
            if not start.startswith(_MAGIC_PREFIX) or len(start) < _format.MAGIC_LEN:
                return None
            version = _format.read_magic(io.BytesIO(start))
            if version not in _VERSIONS:
                return None
            shape, _, dtype = _read_header(f, version, st.st_size, path)
            data = st.st_size - f.tell()
    except (OSError, OpError, ValueError):
        return None
    if _dtype_problem(dtype, path) or not _fits(shape, tuple(declared)):
        return None
    if _count(int(d) for d in shape) * dtype.itemsize != data:
        return None         # (truncated, or more after its data: the load says which)
    return tuple(int(d) for d in shape)


class MemoryFiles:
    """The Python API's ``inputs`` and ``outputs``: NumPy arrays a run's ``load`` reads in
    place of files, and a dict its ``save`` writes into in place of the disk.

    Both are keyed by file names as the program writes them, their fields filled in and the
    name made plain (``os.path.normpath``: ``./w.npy`` is ``w.npy``), whichever file of the
    program (a module's too) writes them; an absolute key is that file.  A ``load`` whose name
    is in ``inputs`` reads that array by the rules of a file (numbers and booleans only, the
    declared shape, integers exact in float64).  ``outputs`` (a dict, or None: saves go to the
    disk) receives each ``save``'s value, a copy in the run's precision; a later ``load`` of
    the same file in the run reads that value, as it would have read the file."""

    __slots__ = ("by_name", "by_path", "outputs", "saved")

    def __init__(self, inputs, outputs):
        self.by_name = {}           # plain relative name -> array
        self.by_path = {}           # absolute path -> array
        for name, array in (inputs or {}).items():
            if os.path.isabs(name):
                self.by_path[os.path.normpath(name)] = array
            else:
                self.by_name[os.path.normpath(name)] = array
        self.outputs = outputs
        self.saved = {}             # absolute path -> its key in outputs (None: on the disk)

    def load(self, path: str, declared: tuple, name: str):
        """The array given for the file at ``path`` (written ``name``), read as a file holding
        it would be; None when none is given.  Raises OpError."""
        if self.saved:
            absolute = os.path.abspath(path)
            if absolute in self.saved:
                key = self.saved[absolute]
                if key is None:             # saved to the disk in this run: read it there
                    return None
                if key in self.outputs:
                    return _from_array(self.outputs[key], declared, name, "saved")
        if self.by_name or self.by_path:
            plain = os.path.normpath(name)
            if plain in self.by_name:
                return _from_array(self.by_name[plain], declared, name, "inputs")
            absolute = os.path.abspath(path)
            if absolute in self.by_path:
                return _from_array(self.by_path[absolute], declared, name, "inputs")
        return None

    def missing_hint(self, name: str, message: str) -> str:
        """For a load of ``name`` that read the disk and failed (``message``) while inputs
        were given: that none of them is this name, and the closest key."""
        if not (self.by_name or self.by_path) or "no such" not in message:
            return ""
        import difflib
        keys = sorted(self.by_name) + sorted(self.by_path)
        close = difflib.get_close_matches(os.path.normpath(name), keys, n=1, cutoff=0.8)
        return " (inputs= has no %r%s)" % (
            os.path.normpath(name), "; did you mean %r?" % close[0] if close else
            ": its keys are %s" % ", ".join(repr(k) for k in keys[:5]) +
            (", ..." if len(keys) > 5 else ""))

    def save(self, value, path: str, name: str) -> bool:
        """Keep ``value`` (written to ``path`` as ``name``) when saves go to ``outputs``;
        False when they go to the disk (then a later load of that file reads the disk, not
        ``inputs``' array for it, as it reads the file a save wrote)."""
        if self.outputs is None:
            self.saved[os.path.abspath(path)] = None
            return False
        dtype = np.float32 if getattr(value, "dtype", None) == np.float32 else np.float64
        try:
            copy = np.array(value, dtype=dtype, order="C", copy=True)
        except MemoryError:
            raise OpError(_out_of_memory(name, np.shape(value))) from None
        key = os.path.normpath(name)
        self.outputs[key] = copy
        self.saved[os.path.abspath(path)] = key
        return True


def _from_array(given, declared, name: str, where: str) -> np.ndarray:
    """``given`` (the API's array for the file ``name``) as a C-contiguous float64 array, by
    the rules read_npy applies to a file's array; OpError naming ``where`` it came from."""
    if not isinstance(given, np.ndarray) or type(given) is not np.ndarray:
        if given is None or isinstance(given, (str, bytes, dict, set)) or not (
                isinstance(given, (list, tuple, numbers.Number, np.generic))
                or (hasattr(type(given), "__array__")      # (a PyTorch CPU tensor: NumPy's
                    and not isinstance(given, np.ndarray))):   # array protocol; a masked
            #                                                     array would lose its mask)
            kind = type(given)
            shown = kind.__name__ if kind.__module__ == "builtins" else "%s.%s" % (
                kind.__module__.split(".")[0], kind.__name__)
            raise OpError("cannot load %s: the value given for it in %s is %s, not a NumPy "
                          "array (numpy.ndarray)" % (name, where, shown))
        try:
            given = np.asarray(given)
        except (TypeError, ValueError, RuntimeError) as e:
            why = str(e).strip().splitlines()[0] if str(e).strip() else ""
            raise OpError("cannot load %s: the value given for it in %s is not an array of "
                          "numbers%s" % (name, where, " (%s)" % why if why and hasattr(
                              type(given), "__array__") else "")) from None
    dtype = given.dtype
    if dtype.hasobject:
        raise OpError("cannot load %s: the array given for it in %s holds Python objects; goat "
                      "reads numbers and booleans" % (name, where))
    problem = _dtype_problem(dtype, name)
    if problem:
        raise OpError(problem.replace(name + " holds", "%s (in %s) holds" % (name, where), 1))
    shape = given.shape
    if not _fits(shape, tuple(declared)):
        held = "a scalar" if len(shape) == 0 else "an array of shape %s" % format_shape(shape)
        wanted = "a scalar" if len(declared) == 0 else format_type(declared)
        raise OpError("%s (in %s) holds %s, but %s was declared" % (name, where, held, wanted))
    if dtype.kind in "iu" and dtype.itemsize >= 8:
        _check_exact(given, "%s (in %s)" % (name, where))
    try:
        return np.array(given, dtype=np.float64, order="C", copy=True)
    except MemoryError:
        raise OpError(_out_of_memory(name, shape)) from None


def _require_regular(st, name, verb="load"):
    mode = st.st_mode
    if stat.S_ISDIR(mode):
        raise OpError("cannot %s %s: it is a directory" % (verb, name))
    if not stat.S_ISREG(mode):
        kind = ("a named pipe" if stat.S_ISFIFO(mode) else
                "a character device" if stat.S_ISCHR(mode) else
                "a block device" if stat.S_ISBLK(mode) else
                "a socket" if stat.S_ISSOCK(mode) else "not a plain file")
        raise OpError("cannot %s %s: it is %s, not a regular file" % (verb, name, kind))


def _read_exact(f, n: int) -> bytes:
    """Up to ``n`` bytes (fewer only at the end of the file)."""
    chunks = []
    while n > 0:
        chunk = f.read(n)
        if not chunk:
            break
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


def _read_open(f, file_size: int, declared: tuple, name: str) -> np.ndarray:
    # the magic string and version
    start = _read_exact(f, _format.MAGIC_LEN)
    if not start.startswith(_MAGIC_PREFIX):
        if _MAGIC_PREFIX.startswith(start) and start:
            raise OpError("%s is truncated: it ends inside the .npy magic string" % name)
        raise OpError("%s is not a NumPy .npy file%s" % (name, _what_it_is(start)))
    if len(start) < _format.MAGIC_LEN:
        raise OpError("%s is truncated: it ends inside the .npy magic string" % name)
    version = _format.read_magic(io.BytesIO(start))
    if version not in _VERSIONS:
        raise OpError("%s is a .npy file of format version %d.%d, which goat cannot read "
                      "(it reads versions 1.0, 2.0 and 3.0)" % (name, version[0], version[1]))

    shape, fortran_order, dtype = _read_header(f, version, file_size, name)

    # what the elements are
    problem = _dtype_problem(dtype, name)
    if problem:
        raise OpError(problem)

    # the shape the program declared
    if not _fits(shape, declared):
        held = "a scalar" if len(shape) == 0 else "an array of shape %s" % format_shape(shape)
        wanted = "a scalar" if len(declared) == 0 else format_type(declared)
        hint = ""
        if len(shape) == 2 and tuple(declared) == tuple(shape[::-1]):
            hint = ("; it holds the transposed shape: load it as %s and transpose it "
                    "(transpose(VALUE))" % format_type(shape))
        elif None not in declared and _count(shape) == _count(declared):
            hint = ("; it holds as many numbers: load it as %s and reshape it (reshape(VALUE, "
                    "%s))" % (format_type(shape), format_type(declared)))
        raise OpError("%s holds %s, but %s was declared%s" % (name, held, wanted, hint))

    # exactly the bytes the header promises
    count = _count(shape)
    nbytes = count * dtype.itemsize
    data_start = f.tell()
    held = file_size - data_start
    if held < nbytes:
        raise OpError(_truncated(name, nbytes, held))
    if held > nbytes:
        raise OpError("%s has %d bytes after its data: its header promises %d bytes of data, "
                      "the file holds %d (a .npy file holds one array, with nothing after it)"
                      % (name, held - nbytes, nbytes, held))
    try:
        buf = bytearray(nbytes)
    except MemoryError:
        raise OpError(_out_of_memory(name, shape)) from None
    view = memoryview(buf)
    got = 0
    while got < nbytes:
        n = f.readinto(view[got:])
        if not n:
            break
        got += n
    view.release()
    if got < nbytes:                       # the file shrank while it was read
        raise OpError(_truncated(name, nbytes, got))

    flat = np.frombuffer(buf, dtype=dtype, count=count)
    if fortran_order:
        arr = flat.reshape(shape[::-1]).transpose()
    else:
        arr = flat.reshape(shape)
    if dtype.kind == "b":                  # any nonzero byte is true, as C reads a bool
        arr = arr.view(np.uint8) != 0
    elif dtype.kind in "iu" and dtype.itemsize >= 8:
        _check_exact(arr, name)
    try:
        out = arr.astype(np.float64, order="C", copy=False)
    except MemoryError:
        raise OpError(_out_of_memory(name, shape)) from None
    if not out.flags.writeable:            # never hand out a read-only view
        out = out.copy()
    return out


def _what_it_is(start: bytes) -> str:
    """A hint at what a file that is not .npy holds, from its first bytes."""
    if not start:
        return ": it is empty"
    if start.startswith(b"PK\x03\x04") or start.startswith(b"PK\x05\x06"):
        return (" (it is a zip archive, perhaps an .npz file: save each array on its own "
                "with numpy.save)")
    if start[:1] == b"\x80":
        return " (it looks like a Python pickle, which goat never reads)"
    return " (it does not start with the .npy magic string \\x93NUMPY)"


def _truncated(name, nbytes, held):
    return ("%s is truncated: its header promises %d bytes of data, the file holds %d"
            % (name, nbytes, held))


def _out_of_memory(name, shape):
    count = 1
    for d in shape:
        count *= d
    return ("out of memory loading %s: its array of shape %s takes %.3g GB as float64"
            % (name, format_shape(shape), count * 8 / 1e9))


def _short(value) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _literal(text: str):
    """The Python literal ``text``, exactly as :func:`ast.literal_eval` reads it (Python
    3.11's rules, which goat/aot/runtime/npy.c mirrors: constants, tuples, lists, sets, dicts,
    ``set()``, signed numbers, a real number plus or minus a complex one), without its nested
    functions: those make a reference cycle at each call, which goat's runs, with the cyclic
    collector paused, would keep (about 1 KB per load in a loop).  ValueError (TypeError for
    an unhashable key) otherwise."""
    return _literal_node(ast.parse(text.lstrip(" \t"), mode="eval").body)


def _literal_node(node):
    t = type(node)
    if t is ast.Constant:
        return node.value
    if t is ast.Tuple:
        return tuple(map(_literal_node, node.elts))
    if t is ast.List:
        return list(map(_literal_node, node.elts))
    if t is ast.Set:
        return set(map(_literal_node, node.elts))
    if (t is ast.Call and type(node.func) is ast.Name and node.func.id == "set"
            and node.args == node.keywords == []):
        return set()
    if t is ast.Dict:
        if len(node.keys) != len(node.values):
            raise ValueError("malformed node")
        return dict(zip(map(_literal_node, node.keys), map(_literal_node, node.values)))
    if t is ast.BinOp and isinstance(node.op, (ast.Add, ast.Sub)):
        left = _signed_number(node.left)
        right = _number(node.right)
        if isinstance(left, (int, float)) and isinstance(right, complex):
            return left + right if isinstance(node.op, ast.Add) else left - right
    return _signed_number(node)


def _number(node):
    if type(node) is not ast.Constant or type(node.value) not in (int, float, complex):
        raise ValueError("malformed node")
    return node.value


def _signed_number(node):
    if type(node) is ast.UnaryOp and isinstance(node.op, (ast.UAdd, ast.USub)):
        operand = _number(node.operand)
        return +operand if isinstance(node.op, ast.UAdd) else -operand
    return _number(node)


def _read_header(f, version, file_size, name):
    """(shape, fortran_order, dtype) from the header; the file is left at the data."""
    length_format, encoding = _VERSIONS[version]
    size = struct.calcsize(length_format)
    raw = _read_exact(f, size)
    if len(raw) < size:
        raise OpError("%s is truncated: it ends inside its header" % name)
    (length,) = struct.unpack(length_format, raw)
    if length > file_size - f.tell():
        raise OpError("%s is truncated: it ends inside its header" % name)
    if length > MAX_HEADER_SIZE:
        raise OpError("%s has a header of %d bytes, more than the %d goat reads (a numeric "
                      "array's header takes a few hundred)" % (name, length, MAX_HEADER_SIZE))
    raw = _read_exact(f, length)
    if len(raw) < length:
        raise OpError("%s is truncated: it ends inside its header" % name)
    damaged = "%s has a damaged header: " % name
    try:
        text = raw.decode(encoding)
    except UnicodeDecodeError:
        raise OpError(damaged + "it is not UTF-8 text") from None
    try:
        header = _literal(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        raise OpError(damaged + "%s is not a Python dict literal" % _short(text.strip()))
    if not isinstance(header, dict):
        raise OpError(damaged + "%s is not a Python dict literal" % _short(header))
    for key in ("descr", "fortran_order", "shape"):
        if key not in header:
            raise OpError(damaged + "it has no %r entry" % key)
    for key in header:
        if key not in ("descr", "fortran_order", "shape"):
            raise OpError(damaged + "it has an unexpected entry %s" % _short(key))
    shape = header["shape"]
    if not (isinstance(shape, tuple)
            and all(type(d) is int and d >= 0 for d in shape)):
        raise OpError(damaged + "its shape %s is not a tuple of sizes" % _short(shape))
    cells = 1
    for d in shape:
        cells *= max(d, 1)
    if cells * 8 > MAX_BYTES:           # as NumPy counts: an empty dimension as 1
        raise OpError(damaged + "its shape %s is too large for any machine to address"
                      % _short(shape))
    fortran_order = header["fortran_order"]
    if not isinstance(fortran_order, bool):
        raise OpError(damaged + "its fortran_order %s is not True or False"
                      % _short(fortran_order))
    try:
        dtype = _format.descr_to_dtype(header["descr"])
    except Exception:     # descr_to_dtype raises TypeError, ValueError, KeyError, ...
        raise OpError(damaged + "its descr %s is not a NumPy dtype" % _short(header["descr"]))
    if not isinstance(dtype, np.dtype):
        raise OpError(damaged + "its descr %s is not a NumPy dtype" % _short(header["descr"]))
    return shape, fortran_order, dtype


def _dtype_problem(dtype: np.dtype, name: str) -> str | None:
    """None for an accepted element type, else the message that refuses it."""
    if dtype.hasobject:
        return ("%s holds Python objects (a pickle); goat reads only numeric arrays, "
                "never pickles" % name)
    kind = dtype.kind
    if kind in "biu" or (kind == "f" and dtype.itemsize <= 8):
        return None
    what = str(dtype)
    if kind == "f":
        found = "floats of %d bits (%s), wider than float64" % (dtype.itemsize * 8, what)
    elif kind == "c":
        found = "complex numbers (%s)" % what
    elif kind == "U":
        found = "Unicode strings (%s)" % what
    elif kind == "S":
        found = "byte strings (%s)" % what
    elif kind == "M":
        found = "dates and times (%s)" % what
    elif kind == "m":
        found = "time spans (%s)" % what
    elif dtype.names is not None:
        found = "records with fields %s (structured dtype %s)" % (
            ", ".join(dtype.names), what)
    elif dtype.subdtype is not None:
        found = "sub-arrays (dtype %s)" % what
    elif kind == "V":
        found = "raw bytes (void dtype %s)" % what
    else:
        found = "elements of type %s" % what
    return "%s holds %s; %s" % (name, found, _ACCEPTED)


def _fits(shape: tuple, declared: tuple) -> bool:
    if len(shape) != len(declared):
        return False
    for a, d in zip(shape, declared):
        if isinstance(d, int) and d != a:
            return False
    return True


def _check_exact(arr: np.ndarray, name: str) -> None:
    """Raise OpError if an int64/uint64 element would round when converted to float64."""
    if arr.dtype.kind == "i":
        mask = (arr > _EXACT) | (arr < -_EXACT)
        limit = 2.0 ** 63
    else:
        mask = arr > _EXACT
        limit = 2.0 ** 64
    if not mask.any():
        return
    values = arr[mask]                     # row-major order
    as_float = values.astype(np.float64)
    in_range = as_float < limit           # 2**63 (2**64) itself is past the type's range
    back = np.zeros_like(values)
    back[in_range] = as_float[in_range].astype(values.dtype)
    bad = ~in_range | (back != values)
    if bad.any():
        v = int(values[bad][0])
        raise OpError("%s holds the integer %d, which float64 cannot hold exactly (it would "
                      "round to %d); goat's values are float64" % (name, v, int(float(v))))


# ---------------------------------------------------------------------------------- writing

def save_npy(path: str, value, shown: str | None = None) -> None:
    """Write ``value`` (a float64 array of any rank, or float32 under ``--dtype f32``, kept
    so) to ``path`` in .npy format, atomically.

    ``shown`` is how the path is named in messages (default ``path``).  Raises OpError.
    """
    name = path if shown is None else shown
    try:
        dtype = np.float32 if getattr(value, "dtype", None) == np.float32 else np.float64
        arr = np.asarray(value, dtype=dtype, order="C")
    except (TypeError, ValueError):
        raise OpError("cannot save %s: the value is not a tensor of numbers" % name) from None
    tmp = None
    try:
        target = os.path.realpath(path) if os.path.islink(path) else path
        if os.path.isdir(target):
            raise OpError("cannot save %s: it is a directory" % name)
        directory = os.path.dirname(target) or os.curdir
        if not os.path.isdir(directory) and target != path and not os.path.exists(directory):
            # a link to a file in a folder that is not there: name the folder it needs
            raise OpError("cannot save %s: it links to %r, in a directory that does not "
                          "exist (%r)" % (name, os.readlink(path), directory))
        if not os.path.isdir(directory):
            raise OSError(errno.ENOTDIR if os.path.exists(directory) else errno.ENOENT,
                          os.strerror(errno.ENOENT))
        try:
            st = os.stat(target)
            # a device, a pipe or a socket is not replaced by a file (as root, save to
            # /dev/null would otherwise replace the machine's /dev/null)
            _require_regular(st, name, "save")
            mode = stat.S_IMODE(st.st_mode)
            if not os.access(target, os.W_OK):    # a read-only file stays protected
                raise OSError(errno.EACCES, os.strerror(errno.EACCES))
        except FileNotFoundError:
            mode = 0o666 & ~_umask()
        fd, tmp = _temporary(directory, os.path.basename(target), name)
        with os.fdopen(fd, "wb") as f:
            _write_array(f, arr)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, target)
        tmp = None
    except OSError as e:
        raise OpError(_os_message("save", path, name, e)) from None
    except MemoryError:
        raise OpError("out of memory saving %s" % name) from None
    except ValueError as e:       # write_array's own complaints; not expected for float64
        raise OpError("cannot save %s: %s" % (name, e)) from None
    finally:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass
    _fsync_directory(directory)


def _temporary(directory: str, base: str, name: str):
    """(descriptor, path) of a new file in ``directory`` to write ``base`` through: named
    ``.BASE.XXXXXXXX.tmp``, BASE cut short enough that the name fits in a directory entry
    (255 bytes) whatever ``base``'s own length.  OpError when the directory takes no new file
    (a folder of /proc, say)."""
    import tempfile
    raw = base.encode("utf-8", "surrogateescape")
    cut = min(len(raw), 200)
    while 0 < cut < len(raw) and raw[cut] & 0xC0 == 0x80:
        cut -= 1                        # back to the start of the UTF-8 sequence cut
    short = raw[:cut].decode("utf-8", "surrogateescape")
    try:
        return tempfile.mkstemp(dir=directory, prefix="." + short + ".", suffix=".tmp")
    except FileNotFoundError:
        if not os.path.isdir(directory):
            raise
        raise OpError("cannot save %s: no new file can be made in the directory %r"
                      % (name, directory)) from None


def _write_array(f, arr) -> None:
    """``arr`` (C-contiguous) in .npy format, the bytes NumPy's ``format.write_array`` writes
    (version 1.0 header, then the cells), the cells by the file's own write (NumPy's
    ``tofile`` reports a full disk only as "N requested and M written", without the reason;
    this OSError says ENOSPC)."""
    _format.write_array_header_1_0(f, _format.header_data_from_array_1_0(arr))
    f.write(memoryview(arr.reshape(-1)).cast("B"))


_umask_lock = threading.Lock()


def _umask() -> int:
    """The process's umask, read without changing it where the system allows."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    with _umask_lock:
        mask = os.umask(0o022)
        os.umask(mask)
    return mask


def _fsync_directory(directory: str) -> None:
    """Make the rename itself durable (best effort; not every system can)."""
    if not hasattr(os, "O_DIRECTORY"):
        return
    try:
        fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


# --------------------------------------------------------------------------------- messages

def _os_message(verb: str, path: str, name: str, e: OSError) -> str:
    """``cannot load x.npy: no such file`` and the like, from an OSError."""
    code = e.errno
    shown_dir = os.path.dirname(name) or os.path.dirname(path)
    real_dir = os.path.dirname(path)
    if code == errno.ENOENT:
        if real_dir and not os.path.isdir(real_dir) and not os.path.exists(real_dir):
            why = "no such directory %r" % shown_dir
        elif verb == "save":
            why = "no such directory %r" % (shown_dir or os.curdir)
        else:
            why = "no such file" + _nearby(path, name, verb)
    elif code == errno.ENOTDIR:
        why = "%r is not a directory" % _first_non_directory(real_dir, shown_dir)
    elif code in (errno.EACCES, errno.EPERM):
        why = "permission denied"
    elif code == errno.EISDIR:
        why = "it is a directory"
    elif code == errno.ENOSPC:
        why = "the disk is full"
    elif code == getattr(errno, "EDQUOT", None):
        why = "the disk quota is used up"
    elif code == errno.EROFS:
        why = "the file system is read-only"
    elif code == errno.ELOOP:
        why = "too many levels of symbolic links"
    elif code == errno.ENAMETOOLONG:
        why = "the name is too long"
    elif code == errno.EIO:
        why = "an input/output error (the disk may be failing)"
    else:
        text = e.strerror or str(e) or type(e).__name__
        why = text[:1].lower() + text[1:]
    return "cannot %s %s: %s" % (verb, name, why)


def _nearby(path: str, name: str, verb: str = "load") -> str:
    """For a file ``path`` (written ``name``) that does not exist: "; did you mean NAME?" with
    the file of its folder it is likeliest a slip for, else "".  In this order, the first by
    byte order: the same name in other (ASCII) case; the name with the extension the verb
    reads added (rnn for rnn.mg, data for data.npy), then with any extension; the name with
    one character inserted, deleted or replaced, or two neighbours swapped (dat.npy for
    data.npy), unless only digits changed (w_100.npy for w_200.npy is another file of a
    numbered series, not a slip) or the name before its first dot is shorter than 3 (e.npy
    is no slip for W.npy).  Names that are not UTF-8 are passed over.  Names compare as
    bytes, as the C runtime compares them (goat/aot/runtime/npy.c, nearby), so that both say
    the same."""
    base = os.fsencode(os.path.basename(path))
    if not base:
        return ""
    try:
        entries = []
        with os.scandir(os.path.dirname(path) or os.curdir) as it:
            for entry in it:
                if entry.is_file():
                    if len(entries) >= _NEARBY_FILES:   # not worth reading a huge folder
                        return ""
                    entries.append(os.fsencode(entry.name))
    except OSError:
        return ""
    entries = sorted(e for e in entries if _utf8(e))
    lower = base.lower()
    wanted = base + (b".mg" if verb == "read" else b".npy")
    long_enough = len(base.split(b".")[0]) >= 3
    for rule in (lambda e: e != base and e.lower() == lower,
                 lambda e: e == wanted,
                 lambda e: e.startswith(base + b"."),
                 lambda e: long_enough and _one_edit(base, e)):
        for e in entries:
            if rule(e):
                return "; did you mean %s?" % os.path.join(os.path.dirname(name),
                                                           os.fsdecode(e))
    return ""


def _utf8(name: bytes) -> bool:
    try:
        name.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


_NEARBY_FILES = 10000       # a folder with more files than this gets no "did you mean"


def _one_edit(a: bytes, b: bytes) -> bool:
    """Whether ``b`` is ``a`` with one byte inserted, deleted or replaced, or two neighbours
    swapped, where what changed is not digits alone."""
    la, lb = len(a), len(b)
    if a == b or abs(la - lb) > 1:
        return False
    i = 0
    while i < min(la, lb) and a[i] == b[i]:
        i += 1
    if la == lb:
        if a[i + 1:] == b[i + 1:]:
            changed = a[i:i + 1] + b[i:i + 1]
        elif i + 1 < la and a[i] == b[i + 1] and a[i + 1] == b[i] and a[i + 2:] == b[i + 2:]:
            changed = a[i:i + 2]
        else:
            return False
    elif la + 1 == lb:
        if a[i:] != b[i + 1:]:
            return False
        changed = b[i:i + 1]
    else:
        if a[i + 1:] != b[i:]:
            return False
        changed = a[i:i + 1]
    return not changed.isdigit()


def _first_non_directory(real_dir: str, shown_dir: str) -> str:
    """The part of a path that exists but is not a directory (as the user wrote it)."""
    probe, shown = real_dir, shown_dir
    found = shown or real_dir
    while probe and probe != os.path.dirname(probe):
        if os.path.exists(probe) and not os.path.isdir(probe):
            found = shown or probe
        probe, shown = os.path.dirname(probe), os.path.dirname(shown)
    return found
