"""goat from Python: the same parse -> check -> evaluate pipeline the command line uses.

    >>> import goat
    >>> goat.run_source("print [[1, 2]] @ [[3], [4]]")
    [array([[11.]])]

Errors:

* :class:`goat.GoatError` -- a problem in the program or its input (a syntax or shape error, an
  unreadable file, a program nested too deeply for this process's memory).  Its ``str`` is the
  ``PATH:LINE: error: MESSAGE`` line, ``render()`` adds the source excerpt.
* ``TypeError`` -- a mistake in the calling code: an argument of the wrong type (a path that is
  not a ``str``/``bytes``/``os.PathLike``, an ``int`` file descriptor, ``None`` for a program,
  a ``stdout`` that is not a writable text stream, ...).  The message names the argument and
  what was expected.  ``ValueError`` -- an argument of the right type and a wrong value: an
  unknown back end name, a closed ``stdout``.  Both are raised before anything is read or run.
* ``MemoryError`` -- a value too large for this process's memory.  When an op's value is
  the one too large, it is a :class:`goat.GoatMemoryError`, both a ``GoatError`` at that line
  (``PATH:LINE: error: out of memory computing a value of shape 100000x100000 (80 GB)``, as
  the command line reports it) and a ``MemoryError``; memory running out elsewhere (a
  recursion too deep for it) is a plain ``MemoryError``.

Process-wide state: deep recursion needs a large stack and a raised recursion limit, so
checking (and running a program whose blocks nest deeply) happens on a helper thread with a
large stack, and the recursion limit is raised while any such call runs; Python's cyclic
garbage collector is paused while a program is read, checked and run.  Each of these is put
back as it was when the last concurrent call ends.  ``threading.stack_size()`` is changed only
while a helper thread is started, in one sequence of C calls during which no other thread of
the process runs Python code (so none can start a thread with that size), and put back.  The
BLAS's thread count is set while runs use it and given back when the last ends; runs that ask
for another count wait their turn (goat/gpu/numpy_backend.py).  Nothing else that is
process-wide is touched: ``sys.stdout``/``sys.stderr``, the working directory and the signal
handlers stay as they are, and a program prints only to the ``stdout`` it is given.
"""
from __future__ import annotations

import _thread
import codecs
import collections.abc
import functools
import gc
import io
import math
import numbers
import operator
import os
import re
import select
import stat
import sys
import threading
import time
from contextlib import contextmanager

from .diagnostics import GoatError, GoatErrors, Loc, Source
from .gpu import CHOICES, get_backend, resolve
from .interp.evaluator import Evaluator
from .lexer import ast
from .lexer.lexer import IDENT
from .lexer.parser import parse
from .typecheck.checker import Checker
from .typecheck.program import Program, subregions

# ---------------------------------------------------------------------------------------------
# Deep recursion.
#
# Deeply nested expressions (a 10,000-level bracket nest, a 10,000-term sum) recurse in the
# checker; they run on a thread with a large stack and a raised recursion limit so that they
# are checked, not crashed on.  The stack is chosen to fit the address space the process may
# still use (ulimit -v): it takes at most half of what is left, so that the program itself
# keeps room.  Below _MIN_STACK (where _RECURSION_LIMIT levels could overflow the C stack) no
# helper thread is used: the call runs in the calling thread at the recursion limit it finds,
# and a program nested too deeply for that is a GoatError saying so.

_MB = 1024 * 1024
_STACK_SIZES = (512 * _MB, 256 * _MB, 128 * _MB, 64 * _MB)
_MIN_STACK = _STACK_SIZES[-1]
_RECURSION_LIMIT = 120_000

_here = threading.local()         # .mode: "deep" on a helper thread, "plain" in a fallback call
_thread_start_lock = threading.Lock()   # threading.stack_size() is changed only under it
# At most this many helper threads at once (more callers wait for one to finish): checking is
# bound by the GIL, so more would only reserve more address space for their stacks.
_MAX_HELPERS = 4
_CALL = operator.methodcaller("__call__")
_helper_slots = threading.BoundedSemaphore(_MAX_HELPERS)

# The recursion limit is process-wide: it is raised while any "deep" call runs and put back
# when the last one ends.  A "plain" call (no helper thread could be started) runs on a stack
# of unknown size, so it must not run while the limit is raised: deep and plain calls exclude
# each other (calls of the same kind run together).
_mode = threading.Condition()
_deep_calls = 0
_plain_calls = 0
_limit_before = None              # the limit found by the first deep call
_limit_set = None                 # the limit it set (None: it found one high enough)

PLAIN_NOTE = " within this process's memory"


def _enter_deep():
    global _deep_calls, _limit_before, _limit_set
    with _mode:
        while _plain_calls:
            _mode.wait()
        if _deep_calls == 0:
            before = sys.getrecursionlimit()
            if before < _RECURSION_LIMIT:
                sys.setrecursionlimit(_RECURSION_LIMIT)
                _limit_before, _limit_set = before, _RECURSION_LIMIT
            else:
                _limit_before = _limit_set = None
        _deep_calls += 1


def _leave_deep():
    global _deep_calls, _limit_before, _limit_set
    with _mode:
        _deep_calls -= 1
        if _deep_calls == 0:
            # put the limit back unless someone else changed it meanwhile
            if _limit_set is not None and sys.getrecursionlimit() == _limit_set:
                try:
                    sys.setrecursionlimit(_limit_before)
                except (RecursionError, ValueError):    # pragma: no cover - the caller is deep
                    pass
            _limit_before = _limit_set = None
            _mode.notify_all()


def _enter_plain():
    global _plain_calls
    with _mode:
        while _deep_calls:
            _mode.wait()
        _plain_calls += 1


def _leave_plain():
    global _plain_calls
    with _mode:
        _plain_calls -= 1
        if _plain_calls == 0:
            _mode.notify_all()


def _status_kb(field: str):
    """A ``Vm...`` figure of /proc/self/status in kB, or None where there is none."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return None


def _address_space_left():
    """Bytes this process may still map under ``ulimit -v`` (RLIMIT_AS) and RLIMIT_DATA, or
    None when neither is set."""
    try:
        import resource
    except ImportError:          # pragma: no cover - not POSIX
        return None
    left = None
    for name, field in (("RLIMIT_AS", "VmSize"), ("RLIMIT_DATA", "VmData")):
        which = getattr(resource, name, None)
        if which is None:
            continue
        try:
            soft, _ = resource.getrlimit(which)
        except (OSError, ValueError):
            continue
        if soft == resource.RLIM_INFINITY or soft < 0:
            continue
        used = _status_kb(field)
        room = soft - (used or 0) * 1024
        left = room if left is None else min(left, room)
    return None if left is None else max(left, 0)


_RESERVE = 64 * _MB     # address space always left to the program itself


def _stack_sizes():
    """The helper-thread stack sizes to try, largest first: at most half of the address
    space left beyond a reserve for the program itself."""
    left = _address_space_left()
    if left is None:
        return _STACK_SIZES
    return tuple(size for size in _STACK_SIZES if size <= (left - _RESERVE) // 2)


def _start_helper(target) -> bool:
    """Start a thread running ``target`` on a large stack; False where none can be started.

    ``threading.stack_size()`` is one setting for the whole process, read by every thread
    start.  It is set, the thread started and the setting put back in one sequence of calls
    into C (no Python code runs in between, so the GIL is not passed to another thread, which
    could start a thread of its own with the large size), with the collector paused (its
    finalizers are Python code), under a lock."""
    with _thread_start_lock, gc_paused():
        before = _thread.stack_size()
        for size in _stack_sizes():
            steps = (functools.partial(_thread.stack_size, size),
                     functools.partial(_thread.start_new_thread, target, ()),
                     functools.partial(_thread.stack_size, before))
            try:
                list(map(_CALL, steps))
                return True
            except (RuntimeError, MemoryError, ValueError, OSError):
                _thread.stack_size(before)
        return False


def _frame_memory_error(e: BaseException) -> bool:
    """Whether ``e`` is how CPython 3.11 reports that it had no memory for one more frame of
    a deep recursion (a SystemError without an exception set) -- a MemoryError in all but
    name."""
    if isinstance(e, MemoryError):
        return True
    if isinstance(e, SystemError):
        text = str(e)
        return "without exception set" in text or "without setting an exception" in text
    return False


def with_deep_stack(fn, *args, **kwargs):
    """Run ``fn(*args, **kwargs)`` where deep recursion is allowed: on a helper thread with a
    large stack while the recursion limit is raised (put back when the last such call ends,
    so concurrent calls do not undo each other).  Where no such thread can be started (memory
    is capped), it runs in the calling thread at the recursion limit it finds; a program
    nested too deeply for that is reported as such (``PLAIN_NOTE``).  Inside a call already
    made this way, ``fn`` simply runs."""
    if getattr(_here, "mode", None) is not None:
        return fn(*args, **kwargs)
    result = {}
    go = threading.Event()
    done = threading.Event()
    cancelled = []

    def target():
        try:
            result["thread"] = threading.get_ident()
            go.wait()
            if cancelled:
                return
            _here.mode = "deep"
            try:
                result["value"] = fn(*args, **kwargs)
            except BaseException as e:      # re-raised in the caller's thread
                result["error"] = e
        finally:
            _helper_slots.release()
            done.set()
            restore = result.pop("restore", None)
            if restore is not None and sys.unraisablehook is restore[0]:
                sys.unraisablehook = restore[1]     # stopped late: put the hook back now

    _helper_slots.acquire()
    try:
        started = _start_helper(target)
    except BaseException:
        _helper_slots.release()
        raise
    if not started:
        _helper_slots.release()
        return _plain_call(fn, args, kwargs)
    entered = False
    try:
        _enter_deep()
        entered = True
        go.set()
        try:
            while not done.wait(0.1):   # a timed wait: _thread.interrupt_main() wakes it too
                pass
        except BaseException as e:      # Ctrl-C (or SIGTERM) reaches the main thread only
            _stop_helper(result.get("thread"), type(e), done, result)
            raise
    finally:
        if not go.is_set():         # interrupted before the helper could begin
            cancelled.append(True)
            go.set()
        if entered:
            _leave_deep()
    if "error" in result:
        error = result.pop("error")
        if isinstance(error, SystemError) and _frame_memory_error(error):
            raise MemoryError("no memory left for a deeper recursion") from None
        raise error
    return result.get("value")


def _stop_helper(thread, error, done, result, wait: float = 3.0):
    """Raise ``error`` (KeyboardInterrupt, say) in the helper thread too, and wait a little for
    it to end, so that what it was doing unwinds there -- a half-written file removed, an
    output left as it was -- before the process reports the interruption and exits.  A
    helper inside a long call into C (LLVM, a large matrix product) notices only when it
    returns; after ``wait`` seconds it is left."""
    if thread is None or done.is_set():
        return
    import ctypes
    before = sys.unraisablehook

    def quiet(u):               # the interruption landing in a finalizer (__del__): no report
        if not isinstance(u.exc_value, error):
            before(u)
    sys.unraisablehook = quiet
    result["restore"] = (quiet, before)         # the helper puts it back when it ends
    try:
        ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread),
                                                   ctypes.py_object(error))
        done.wait(wait)
    except BaseException:       # a second Ctrl-C: stop waiting
        pass
    if done.is_set() and sys.unraisablehook is quiet:
        sys.unraisablehook = before
        result.pop("restore", None)


def _plain_call(fn, args, kwargs):
    _enter_plain()
    _here.mode = "plain"
    try:
        return fn(*args, **kwargs)
    except SystemError as e:
        if _frame_memory_error(e):
            raise MemoryError("no memory left for a deeper recursion") from None
        raise
    finally:
        _here.mode = None
        _leave_plain()


def _depth_note() -> str:
    """What a 'nested too deeply' message adds when the call could not get a large stack."""
    return PLAIN_NOTE if getattr(_here, "mode", None) == "plain" else ""


# ---------------------------------------------------------------------------------------------
# The garbage collector.

_gc_lock = threading.Lock()
_gc_pauses = 0
_gc_was_enabled = False


@contextmanager
def gc_paused():
    """Python's cyclic garbage collector off for the duration, then as it was.

    Reading and checking a program makes a few hundred thousand small objects that live as
    long as the program; the collector would walk them all again and again while they are made
    (it doubled the time to read the 14,529-line training program).  Nothing made here needs
    the collector to be freed in time: what is garbage when it is switched back on is collected
    then.  The collector is one switch for the whole process: concurrent pauses are counted,
    and the last to end puts it back as the first found it."""
    global _gc_pauses, _gc_was_enabled
    with _gc_lock:
        if _gc_pauses == 0:
            _gc_was_enabled = gc.isenabled()
            gc.disable()
        _gc_pauses += 1
    try:
        yield
    finally:
        with _gc_lock:
            _gc_pauses -= 1
            if _gc_pauses == 0 and _gc_was_enabled:
                gc.enable()


# ---------------------------------------------------------------------------------------------
# Arguments.

def _type_name(x) -> str:
    return type(x).__name__


def _check_text(text, fn: str):
    if not isinstance(text, (str, bytes, bytearray)):
        raise TypeError("goat.%s: the program must be a str (or UTF-8 bytes), not %s"
                        % (fn, _type_name(text)))


def _check_shown_path(path, fn: str) -> str:
    """``path``, the name errors show for a program given as text: "" is "<string>", the
    default (errors had shown it as goat's own, "goat:1: error: ...")."""
    if not isinstance(path, str):
        raise TypeError("goat.%s: path (the name errors show for the program) must be a str, "
                        "not %s" % (fn, _type_name(path)))
    return path or "<string>"


def _file_path(path, fn: str, what: str = "path") -> str:
    """A file path argument (``what``: the parameter's name) as a str: a str, bytes or
    os.PathLike is taken, as open() takes them -- but not an int, which open() would take for a
    file descriptor (and close)."""
    if isinstance(path, (str, bytes, os.PathLike)):
        try:
            p = os.fspath(path)
        except TypeError:           # a __fspath__ that returns something else
            p = None
        if isinstance(p, bytes):
            p = os.fsdecode(p)
        if isinstance(p, str):
            return p
    if isinstance(path, int) and what == "path":
        raise TypeError("goat.%s: the path must be a file name (str or os.PathLike), not an "
                        "int; to run a program from an open file, read it and pass the text "
                        "to goat.run_source" % fn)
    raise TypeError("goat.%s: the %s must be a file name (str or os.PathLike), not %s"
                    % (fn, what, _type_name(path)))


def _check_stdout(stdout, fn: str):
    if stdout is None:
        return
    write = getattr(stdout, "write", None)
    if not callable(write):
        raise TypeError("goat.%s: stdout must be a writable text stream (with a write method) "
                        "or None, not %s" % (fn, _type_name(stdout)))
    if isinstance(stdout, (io.RawIOBase, io.BufferedIOBase)):
        raise TypeError("goat.%s: stdout must be a text stream, not the binary %s (wrap it in "
                        "io.TextIOWrapper)" % (fn, _type_name(stdout)))
    if getattr(stdout, "closed", False) is True:
        raise ValueError("goat.%s: stdout is closed" % fn)
    writable = getattr(stdout, "writable", None)
    if callable(writable):
        try:
            ok = writable()
        except ValueError:          # a closed file says so this way
            raise ValueError("goat.%s: stdout is closed" % fn) from None
        if ok is False:
            raise TypeError("goat.%s: stdout must be a writable text stream; this %s is not "
                            "open for writing" % (fn, _type_name(stdout)))


class _Utf8Writer:
    """A text stream whose encoding is not UTF-8 (latin-1, ascii under PYTHONIOENCODING):
    goat's output is UTF-8 text (the memref header holds '…'), so it goes to the stream's
    byte buffer in UTF-8, as goat run writes it (after what the stream holds); a stream
    without a buffer gets the text, and a clear error if it cannot encode it."""

    def __init__(self, stream):
        self._stream = stream
        self._buffer = getattr(stream, "buffer", None)

    def write(self, text):
        if self._buffer is None:
            try:
                return self._stream.write(text)
            except UnicodeEncodeError as e:
                raise UnicodeEncodeError(
                    e.encoding, e.object, e.start, e.end,
                    "goat's output is UTF-8 text (the memref header holds '\u2026'), which "
                    "this stream cannot write: give goat one opened with "
                    "encoding='utf-8'") from None
        self._stream.flush()
        self._buffer.write(text.encode("utf-8", "surrogateescape"))
        return len(text)

    def __getattr__(self, name):
        return getattr(self._stream, name)


def _utf8(stdout):
    """``stdout`` as goat writes to it: itself, or where its encoding is not UTF-8's (latin-1,
    ascii under PYTHONIOENCODING), a _Utf8Writer around it."""
    encoding = getattr(stdout, "encoding", None)
    if not isinstance(encoding, str):
        return stdout
    try:
        name = codecs.lookup(encoding).name
    except LookupError:
        return _Utf8Writer(stdout)
    return stdout if name in ("utf-8", "utf-16", "utf-32", "utf-8-sig") else _Utf8Writer(stdout)


def _check_backend(backend, fn: str, dtype="f64"):
    if not isinstance(backend, str):
        raise TypeError("goat.%s: backend must be the name of a back end (a str: %s), not %s"
                        % (fn, ", ".join(CHOICES), _type_name(backend)))
    if backend not in CHOICES:
        raise ValueError("goat.%s: unknown back end %r (the back ends: %s)"
                         % (fn, backend, ", ".join(CHOICES)))
    return _precision(dtype, fn)


_PRECISIONS = {"f64": "f64", "f32": "f32", "float64": "f64", "float32": "f32"}


def _precision(dtype, fn: str) -> str:
    """``dtype`` as "f64" or "f32": those names, NumPy's ("float64", np.float32, a
    np.dtype) too; TypeError / ValueError naming the choices otherwise."""
    import numpy as np
    name = dtype
    if not isinstance(dtype, str):
        try:
            name = np.dtype(dtype).name if isinstance(dtype, (type, np.dtype)) else None
        except TypeError:
            name = None
        if name is None:
            raise TypeError("goat.%s: dtype must be a precision: \"f64\" or \"f32\" (or "
                            "NumPy's float64, float32), not %s" % (fn, _type_name(dtype)))
    if name not in _PRECISIONS:
        raise ValueError("goat.%s: unknown precision %r (f64: float64, the default; f32: "
                         "float32)" % (fn, dtype))
    return _PRECISIONS[name]


def _check_timings(timings, fn: str, phases=None):
    """TypeError unless ``timings`` is None or a dict; a dict loses what an earlier call wrote
    of what this one writes: the ``phases`` named (and "failed", "backend"), or, None, all
    (a call that runs every phase), so that a dict used again tells of this call only."""
    if timings is None:
        return
    if not isinstance(timings, dict):
        raise TypeError("goat.%s: timings must be a dict (it receives the seconds each phase "
                        "took) or None, not %s" % (fn, _type_name(timings)))
    if phases is None:
        timings.clear()
        return
    for key in phases + ("failed", "backend"):
        timings.pop(key, None)


# ---------------------------------------------------------------------------------------------
# Reading.

MAX_PROGRAM_BYTES = 256 * 1024 * 1024     # a program's text, at most (no one writes more)
_CHUNK = 1024 * 1024


def read_program_bytes(f, shown: str) -> bytes:
    """The bytes of a program from an open binary file (a pipe or a device too), refusing
    more than MAX_PROGRAM_BYTES rather than reading without end (/dev/zero).  A regular file
    is read in one piece of its size; anything else a megabyte at a time (never a buffer of
    MAX_PROGRAM_BYTES made ahead, which a capped address space cannot hold)."""
    size = None
    try:
        st = os.fstat(f.fileno())
        if stat.S_ISREG(st.st_mode):
            size = st.st_size
    except (OSError, ValueError, AttributeError, io.UnsupportedOperation):
        pass
    if size is not None and size > MAX_PROGRAM_BYTES:
        _too_big(shown)
    want = size + 1 if size is not None else _CHUNK
    parts = []
    total = 0
    try:
        terminal = f.isatty()
    except (OSError, ValueError, AttributeError):
        terminal = False
    while True:
        try:
            chunk = f.read(want)
        except BlockingIOError:       # a non-blocking descriptor with nothing to read yet
            chunk = None
        if chunk is None:
            select.select([f], [], [])
            continue
        if not chunk:
            break
        parts.append(chunk)
        total += len(chunk)
        if total > MAX_PROGRAM_BYTES:
            _too_big(shown, size is not None)
        if terminal and len(chunk) < want:
            break       # a terminal's Ctrl-D ended that read: one, not a second, ends the program
        want = _CHUNK
    return parts[0] if len(parts) == 1 else b"".join(parts)


def _too_big(shown: str, regular: bool = True):
    """A file too large to be a program; a device or a pipe that gives more than one holds
    (/dev/urandom, /dev/zero) is said to give it."""
    raise GoatError("cannot read %s: it %s more than %d MB, which is not a program"
                    % (shown, "holds" if regular else "gave", MAX_PROGRAM_BYTES // (1024 * 1024)),
                    path=shown)


def read_source(path) -> Source:
    """Read a program file as UTF-8 text.  Raises GoatError if it cannot be read or decoded,
    TypeError if ``path`` is not a file name (str, bytes or os.PathLike)."""
    path = _file_path(path, "read_source")
    try:
        with open(path, "rb") as f:
            data = read_program_bytes(f, path)
    except IsADirectoryError:
        raise GoatError("cannot read %s: it is a directory" % path, path=path) from None
    except OSError as e:
        from .interp.npyio import _os_message       # "no such file", as load says it
        shown = path or "''"
        message = _os_message("read", os.path.abspath(path) if path else path, shown, e)
        raise GoatError(message, path=shown) from None
    except ValueError:          # a path with a NUL byte in it
        raise GoatError("cannot read %r: a file name cannot contain a NUL character" % path,
                        path=repr(path)) from None
    return decode_source(data, path)


# files a program is not, by their first bytes: what each is, and what to do with it
# (magic, what it is, what to do with it given the name to run it by and the path; "" none)
_NOT_PROGRAMS = (
    (b"\x7fELF", "a compiled executable", "run it as %(run)s"),
    (b"\xcf\xfa\xed\xfe", "a compiled executable", "run it as %(run)s"),
    (b"\x93NUMPY", "a NumPy array file", 'a program reads it with load("%(path)s")'),
    (b"PK\x03\x04", "a zip archive (an .npz file?), not text", ""),
)


def decode_source(data: bytes, path: str) -> Source:
    """Program bytes as a Source; a clear GoatError for text that is not UTF-8, and for an
    executable or an array file given in a program's place."""
    for magic, what, advice in _NOT_PROGRAMS:
        if data.startswith(magic):
            if advice and not path.startswith("<"):         # <stdin>: no name to show
                run = path if os.sep in path else "." + os.sep + path   # ./prog, as a shell
                what += " (%s)" % (advice % {"run": run, "path": path})
            raise GoatError("%s is not a goat program: it is %s" % (path, what), path=path)
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        # bytes that are not UTF-8 in a comment (a Latin-1 name, say) are read past, as a
        # C compiler reads past them; in code or a string they are an error, shown replaced
        from .lexer.lexer import first_outside_comments
        text = data.decode("utf-8", "surrogateescape")     # a bad byte b: chr(0xdc00 + b)
        shown = Source(path, re.sub("[\udc80-\udcff]", "\ufffd", text))
        k = first_outside_comments(text, "\udc80-\udcff")
        if k is None:
            return shown
        raise GoatError("the file is not UTF-8 text (byte 0x%02x cannot be decoded)"
                        % (ord(text[k]) - 0xdc00), Loc(shown, k, k + 1)) from None
    return Source(path, text)


# ---------------------------------------------------------------------------------------------
# Checking and running.

def parse_source(source: Source) -> ast.Module:
    return parse(source)


def _check_module(module: ast.Module, program: Program | None = None, errors=()) -> Program:
    """Check every statement; every independent error is reported (GoatErrors for several),
    the syntax errors ``errors`` of the statements that could not be read among them."""
    return Checker(program).check_module_all(module, convert=_check_failure, errors=errors)


def _check_failure(stmt, e) -> GoatError:
    """The GoatError for Python running out of stack or memory while checking ``stmt``."""
    if isinstance(e, RecursionError):
        return GoatError("this statement is nested too deeply to check" + _depth_note(), stmt.loc)
    if not _frame_memory_error(e):
        raise e
    return GoatError("this statement is too large or nested too deeply to check" + PLAIN_NOTE,
                     stmt.loc)



def _user_facing(fn):
    """A public function whose :class:`GoatError` reaches the caller as the user's error, not
    goat's: the traceback starts at this call (goat's own frames, which say nothing about
    the program, are left out; an internal failure keeps them all), and the source excerpt
    with its caret, which :meth:`GoatError.render` gives, is the exception's note (shown under
    its message where Python prints a traceback: a notebook cell's uncaught error reads as
    ``goat run``'s)."""
    @functools.wraps(fn)
    def call(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except GoatError as e:
            if not getattr(e, "_noted", False):
                e._noted = True
                # the excerpt under the message; of several errors, whose headlines the
                # message lists, each one's excerpt (its line number says whose)
                shown = "\n".join(
                    x for x in (err.render().partition("\n")[2] for err in
                                (e.errors if isinstance(e, GoatErrors) else [e])) if x)
                if shown and hasattr(e, "add_note"):        # Python 3.11 and newer
                    e.add_note(shown)
            raise e.with_traceback(None)
    return call


@_user_facing
def load(text, path: str = "<string>", timings: dict | None = None,
         lets: dict | None = None) -> Program:
    """Parse and check a program (``str``, or UTF-8 ``bytes``); the checked :class:`Program`
    (nothing runs yet).  ``path`` is the name errors show; ``timings`` (a dict) receives the
    seconds of "parse" and "check" (see :func:`run_source`); ``lets`` as for
    :func:`run_source`."""
    _check_text(text, "load")
    path = _check_shown_path(path, "load")
    _check_timings(timings, "load", ("parse", "check"))
    lets = check_lets(lets, "load")
    return _load_text(text, path, timings, lets)


def _load_text(text, path, timings, lets=None):
    if isinstance(text, (bytes, bytearray)):
        source = decode_source(bytes(text), path)
    else:       # a byte-order mark read into a str (open(f).read() keeps it): as in a file
        source = Source(path, text[1:] if text.startswith("\ufeff") else text)
    return with_deep_stack(_load, source, timings, lets)


def _load(source: Source, timings: dict | None = None, lets: dict | None = None) -> Program:
    with gc_paused():
        return _load_now(source, timings, lets)


def check_lets(lets, fn: str) -> dict:
    """``lets`` (a dict of top-level let or var names to numbers, or None) as a dict of str to
    float; TypeError for a wrong type, ValueError for a name that is not one."""
    if lets is None:
        return {}
    if not isinstance(lets, collections.abc.Mapping):
        raise TypeError("goat.%s: lets must be a dict of names to numbers ({\"lr\": 3e-4}), "
                        "not %s" % (fn, _type_name(lets)))
    out = {}
    for name, value in lets.items():
        if not isinstance(name, str):
            raise TypeError("goat.%s: lets' keys must be names (str), not %s"
                            % (fn, _type_name(name)))
        if not IDENT.fullmatch(name):
            raise ValueError("goat.%s: lets' key %r is not a name" % (fn, name))
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise TypeError("goat.%s: lets[%r] must be a number, not %s%s"
                            % (fn, name, _type_name(value), (
                                " (an array goes in through inputs={\"%s.npy\": array}, "
                                "which the program's load(\"%s.npy\") reads)" % (name, name)
                                if hasattr(value, "shape") or isinstance(value, (list, tuple))
                                else "")))
        try:
            number = float(value)
        except OverflowError:
            raise ValueError("goat.%s: lets[%r] is too large for a 64-bit float (the largest "
                             "is 1.79769e+308)" % (fn, name)) from None
        if not math.isfinite(number):      # a program writes none (0 / 0, 1 / 0 compute them)
            raise ValueError("goat.%s: lets[%r] must be a finite number, as a program writes "
                             "one, not %r" % (fn, name, value))
        out[name] = number
    return out


def give_lets(module: ast.Module, lets: dict) -> list:
    """Replace the number each top-level ``let NAME = NUMBER`` (or ``var``) of ``module``
    holds by ``lets[NAME]`` (goat run --let NAME=VALUE, the API's ``lets=``), before it is
    checked: a value the program writes, given from outside, as a command-line flag gives a
    training script's learning rate.  GoatError for a name that is no such let, or one whose
    value is not a number as written (its shape could then be another): the errors, returned
    to be reported with the program's own (a let whose line could not be read is its syntax
    error's)."""
    errors = []
    if not lets:
        return errors
    found = {}
    unread = set()
    for stmt in module.stmts:
        if type(stmt) in (ast.Let, ast.Var) and stmt.name in lets and stmt.name not in found:
            found[stmt.name] = stmt
        elif type(stmt) is ast.Broken:
            unread.update(stmt.names)
    source = module.source
    for name, value in lets.items():
        stmt = found.get(name)
        if stmt is None:
            if name in unread:
                continue
            known = [s.name for s in module.stmts if type(s) in (ast.Let, ast.Var)
                     and _written_number(s.expr) is not None]
            import difflib
            close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
            owner = _module_defining(module, name)
            errors.append(GoatError(
                "cannot set %s: %s has no top-level let or var %s = NUMBER%s%s"
                % (name, source.path, name, "; did you mean %s?" % close[0] if close else
                   " (those holding a number: %s)" % ", ".join(known) if known else "",
                   "; %s is a let of the imported module %s, which --let and lets= cannot set"
                   % (name, owner) if owner else ""),
                path=source.path))
        elif _written_number(stmt.expr) is None:
            errors.append(GoatError(
                "cannot set %s: its value is not a number as written (--let and lets= "
                "replace a number, as in let %s = 0.01, not an expression)" % (name, name),
                stmt.expr.loc))
        else:
            stmt.expr = ast.Number(value, stmt.expr.loc)
    return errors


def _module_defining(module: ast.Module, name: str):
    """The name of a module ``module`` imports whose file defines ``name`` with a top-level
    let or var (read as text: the message of a --let that names it), else None."""
    from .typecheck.modules import find
    pattern = re.compile(r"(?m)^(?:let|var)\s+%s\b" % re.escape(name))
    for st in module.stmts:
        if type(st) is ast.Import:
            try:
                with open(find(st.module, st.loc), encoding="utf-8", errors="replace") as f:
                    if pattern.search(f.read()):
                        return st.module
            except (GoatError, OSError):
                continue
    return None


def _written_number(e):
    """The number ``e`` is as written (``0.01``, ``-2``), or None."""
    if type(e) is ast.Number:
        return e.value
    if type(e) is ast.Unary and e.op == "-" and type(e.operand) is ast.Number:
        return -e.operand.value
    return None


@contextmanager
def _phase(timings: dict | None, name: str):
    """Time one phase into ``timings[name]``; a phase that raises is named by
    ``timings["failed"]``."""
    t0 = time.perf_counter()
    try:
        yield
    except BaseException:
        if timings is not None:
            timings[name] = time.perf_counter() - t0
            timings["failed"] = name
        raise
    if timings is not None:
        timings[name] = time.perf_counter() - t0


def _load_now(source: Source, timings: dict | None = None, lets: dict | None = None) -> Program:
    errors = []                 # syntax errors: the rest of the file is checked all the same
    with _phase(timings, "parse"):
        try:
            module = parse(source, errors=errors)
        except RecursionError:
            raise GoatError("the program is nested too deeply to parse" + _depth_note(),
                            path=source.path) from None
        except (MemoryError, SystemError) as e:
            if not _frame_memory_error(e):
                raise
            raise GoatError("the program is too large or nested too deeply to parse"
                            + PLAIN_NOTE, path=source.path) from None
    syntax_errors = bool(errors)
    try:
        with _phase(timings, "check"):
            # a let that cannot be set: reported with the program's errors, the others first
            errors = give_lets(module, lets) + errors
            program = _check_module(module, errors=errors)
    except GoatError:
        if syntax_errors and timings is not None:
            timings["failed"] = "parse"     # the file could not be read: the parse failed
        raise
    program.given = tuple(sorted(lets.items())) if lets else ()
    program.path = source.path
    return program


@_user_facing
def execute(program: Program, stdout=None, backend: str = "numpy", timings: dict | None = None,
            progress=None, threads: int = 1, dtype: str = "f64", inputs=None, outputs=None):
    """Run a checked program; returns what it printed: a NumPy float64 array per
    ``print EXPR``, a string (the line, without its newline) per ``print "..."``.

    ``program`` is a :class:`Program` from :func:`load` or :func:`check_source`; ``stdout`` a
    writable text stream that also receives the printed text, or None; ``backend`` the name
    of an array back end: "numpy" (the CPU), "cupy" (an NVIDIA GPU, through CuPy) or "auto"
    (the one the program's cost suits, goat/gpu/auto.py; ``timings["backend"]`` then says
    which and why); ``dtype`` the precision, "f64" (float64, the book's) or "f32" (float32:
    the printed arrays are float32 too); ``timings`` a dict that receives the seconds of "run";
    ``progress`` (True, or a :class:`goat.progress.Progress`) shows a bar on standard error
    for long top-level loops.  ``threads``: the BLAS's threads for matrix products (default 1: the same bits on every
    run whatever the machine's settings; more can be faster on large matrices, and the last
    bits of a product may then depend on the number).
    ``inputs`` (a dict of file names to NumPy arrays) gives ``load`` arrays in place of files:
    a load whose name, as the program writes it (its fields filled in; ``./x.npy`` is
    ``x.npy``; an absolute key is that file), is a key reads that array, by a file's rules
    (numbers only, the declared shape).  ``outputs`` (a dict) receives each ``save``'s value,
    under its name as the save writes it (``"w_10.npy"``), in place of the file: nothing is
    written to the disk, and a later load of that file reads the value saved
    (goat.interp.npyio.MemoryFiles).
    TypeError/ValueError for arguments of the wrong type/value (see the module's docstring);
    :class:`goat.gpu.BackendUnavailable` (a RuntimeError saying what is missing) when the
    "cupy" back end cannot run here."""
    if not isinstance(program, Program):
        raise TypeError("goat.execute: program must be a checked Program (from goat.load or "
                        "goat.check_source), not %s; to run program text, use goat.run_source"
                        % _type_name(program))
    _check_stdout(stdout, "execute")
    dtype = _check_backend(backend, "execute", dtype)
    _check_timings(timings, "execute", ("run",))
    threads = _check_threads(threads, "execute")
    progress = _check_progress(progress, "execute")
    inputs, outputs = _check_files(inputs, outputs, "execute")
    return _execute(program, stdout, backend, timings, progress, threads, dtype,
                    inputs=inputs, outputs=outputs)


def _check_progress(progress, fn: str):
    """None or False: no bar; True: bars on standard error (goat.progress.Progress()); a
    Progress (or an object with its ``loop`` method) as it is; TypeError otherwise."""
    if progress is None or progress is False:
        return None
    if progress is True:
        from .progress import Progress
        return Progress()
    if not callable(getattr(progress, "loop", None)):
        raise TypeError("goat.%s: progress must be True, False, None or a goat.progress."
                        "Progress, not %s" % (fn, _type_name(progress)))
    return progress


def _check_files(inputs, outputs, fn: str):
    """``inputs`` (a mapping of file names to arrays, or None) and ``outputs`` (a dict, or
    None), as :class:`goat.interp.npyio.MemoryFiles` takes them; TypeError otherwise."""
    if inputs is not None:
        if not isinstance(inputs, collections.abc.Mapping):
            raise TypeError("goat.%s: inputs must be a dict of file names to arrays "
                            "({\"x.npy\": array}), not %s" % (fn, _type_name(inputs)))
        for name in inputs:
            if not isinstance(name, (str, os.PathLike)) or isinstance(
                    os.fspath(name), bytes):
                raise TypeError("goat.%s: inputs' keys must be file names (str), as the "
                                "program's load writes them, not %s" % (fn, _type_name(name)))
        inputs = {os.fspath(k): v for k, v in inputs.items()}
    if outputs is not None and not isinstance(outputs, collections.abc.MutableMapping):
        raise TypeError("goat.%s: outputs must be a dict, which each save fills, not %s"
                        % (fn, _type_name(outputs)))
    return inputs, outputs


def _check_threads(threads, fn: str) -> int:
    """``threads`` as an int (a NumPy integer too; not a bool); TypeError/ValueError."""
    if isinstance(threads, bool) or not isinstance(threads, numbers.Integral):
        raise TypeError("goat.%s: threads must be a whole number (an int), not %s"
                        % (fn, _type_name(threads)))
    threads = int(threads)
    if threads < 1:
        raise ValueError("goat.%s: threads must be 1 or more, not %d" % (fn, threads))
    return threads


def _execute(program, stdout, backend, timings, progress=None, threads=1, dtype="f64",
             keep_printed=True, inputs=None, outputs=None):
    """Run ``program``; what it printed (``keep_printed``; goat run keeps nothing: a loop that
    prints at every step would grow by each value)."""
    with _phase(timings, "run"):
        backend, why = resolve(backend, program, dtype)
        if why is not None and timings is not None:
            timings["backend"] = why
        be = get_backend(backend, threads, dtype)
        if inputs or outputs is not None:
            from .interp.npyio import MemoryFiles
            be.files = MemoryFiles(inputs, outputs)
        ev = None
        try:
            ev = Evaluator(program, be, out=_utf8(stdout) if stdout is not None else None,
                           keep_printed=keep_printed, progress=progress)
            with gc_paused():
                if _nesting(program.main) > 50:      # plans nest as deep as the blocks do
                    with_deep_stack(_run, ev)
                else:                                # Ctrl-C reaches the run itself
                    _run(ev)
        except GoatError as e:
            if keep_printed and ev is not None:    # what the run printed before its error
                e.printed = ev.printed
            raise
        finally:
            be.close()          # the BLAS's threads as they were
    return ev.printed


def _nesting(region) -> int:
    """How deep blocks nest in ``region``."""
    deepest = 0
    stack = [(region, 0)]
    while stack:
        r, d = stack.pop()
        deepest = max(deepest, d)
        for node in r.nodes:
            for sub in subregions(node):
                stack.append((sub, d + 1))
        for sub in r.inner:
            stack.append((sub, d + 1))
    return deepest


def _run(ev):
    """Run an evaluator."""
    try:
        ev.run()
    except RecursionError:
        nodes = ev.program.nodes
        raise GoatError("the program's blocks are nested too deeply to run" + _depth_note(),
                        path=nodes[0].loc.source.path if nodes else None) from None


@_user_facing
def run_source(text: str, path: str = "<string>", stdout=None, backend: str = "numpy",
               timings: dict | None = None, threads: int = 1, dtype: str = "f64",
               inputs=None, outputs=None, lets: dict | None = None, progress=None) -> list:
    """Check and run a program given as text (a ``str``, or UTF-8 ``bytes``).

    Returns one NumPy float64 array per ``print``, in order, at full precision (a ``str``,
    the line, per formatted ``print "..."``).  ``path`` is the name errors show (a ``str``),
    and its folder (when the program is read) is where the program's relative file names
    (``load``, ``save``, ``import``) start from; the default, "<string>", starts them from the
    current folder when they are read.
    ``stdout`` (a writable text stream) also receives the printed memref text; None prints
    nothing.  ``backend`` names the array back end ("numpy", "cupy" or "auto") and ``dtype``
    the precision ("f64" or "f32"), as for :func:`execute`.  ``timings`` (a dict) receives
    the seconds each phase took, under "parse", "check" and "run"; when a phase fails, its
    time until then is there too and ``timings["failed"]`` names it; with ``backend="auto"``,
    ``timings["backend"]`` is the line saying which back end it chose and why.  ``threads``: the BLAS's
    threads for matrix products (default 1, the same bits whatever the machine's settings;
    see :func:`execute`).  ``inputs`` (file names to NumPy arrays, read by ``load`` in place
    of files) and ``outputs`` (a dict each ``save`` fills in place of a file): as for
    :func:`execute`.  ``lets`` (a dict of names to numbers, as ``goat run --let NAME=VALUE``
    gives them) replaces the number a top-level ``let NAME = NUMBER`` (or ``var``) holds
    before the program is checked; a name that is no such let is a GoatError.  ``progress``
    (True, or a :class:`goat.progress.Progress`) shows a bar on standard error for long
    top-level loops, as for :func:`execute`.

    Raises GoatError for a problem in the program (one found while it runs carries what the
    program printed before it as ``.printed``, the list this function would have returned);
    TypeError for an argument of the wrong type and ValueError for a wrong value (an unknown
    back end, a closed ``stdout``), before anything runs.
    """
    _check_text(text, "run_source")
    path = _check_shown_path(path, "run_source")
    _check_stdout(stdout, "run_source")
    dtype = _check_backend(backend, "run_source", dtype)
    _check_timings(timings, "run_source")
    threads = _check_threads(threads, "run_source")
    inputs, outputs = _check_files(inputs, outputs, "run_source")
    progress = _check_progress(progress, "run_source")
    lets = check_lets(lets, "run_source")
    program = _load_text(text, path, timings, lets)
    return _execute(program, stdout, backend, timings, progress, threads, dtype,
                    inputs=inputs, outputs=outputs)


@_user_facing
def run_file(path, stdout=None, backend: str = "numpy", timings: dict | None = None,
             threads: int = 1, dtype: str = "f64", inputs=None, outputs=None,
             lets: dict | None = None, progress=None) -> list:
    """Like :func:`run_source`, reading the program from the file ``path`` (a ``str``,
    ``bytes`` or ``os.PathLike``; not an ``int`` file descriptor: TypeError)."""
    path = _file_path(path, "run_file")
    _check_stdout(stdout, "run_file")
    dtype = _check_backend(backend, "run_file", dtype)
    _check_timings(timings, "run_file")
    threads = _check_threads(threads, "run_file")
    inputs, outputs = _check_files(inputs, outputs, "run_file")
    progress = _check_progress(progress, "run_file")
    lets = check_lets(lets, "run_file")
    source = read_source(path)
    program = with_deep_stack(_load, source, timings, lets)
    return _execute(program, stdout, backend, timings, progress, threads, dtype,
                    inputs=inputs, outputs=outputs)


@_user_facing
def check_source(text: str, path: str = "<string>", lets: dict | None = None) -> Program:
    """Check a program without running it; the typed :class:`Program` (``.lets`` gives every
    let's node and so its ``.shape``; ``.deferred`` the errors the book finds only when the
    program runs, which goat check reports).  Arguments as for :func:`run_source`."""
    _check_text(text, "check_source")
    path = _check_shown_path(path, "check_source")
    lets = check_lets(lets, "check_source")
    return _load_text(text, path, None, lets)


@_user_facing
def check_file(path, lets: dict | None = None) -> Program:
    """Like :func:`check_source`, reading the program from the file ``path`` (as
    :func:`run_file` takes it)."""
    path = _file_path(path, "check_file")
    lets = check_lets(lets, "check_file")
    return with_deep_stack(_load, read_source(path), None, lets)


@_user_facing
def compile_file(path, output=None, portable: bool = False, opt: int = 2,
                 emit_llvm: bool = False, timings: dict | None = None,
                 lets: dict | None = None) -> str:
    """Compile the program in the file ``path`` ahead of time, as ``goat compile --aot``
    does: check it, lower it to LLVM IR, optimise it (LLVM's level ``opt``, 0 to 3) and link
    it by the system C compiler into the native executable ``output`` (default: ``path``
    without ``.mg``); with ``emit_llvm`` write the LLVM IR there instead (default:
    ``path`` with ``.ll``).  Returns the path written, one that runs as it is (``./model`` for
    ``output="model"``: ``subprocess.run([goat.compile_file("m.mg", "m")])``).  The executable prints what
    :func:`run_file` prints, bit for bit (see docs/aot.md); ``portable``: an executable that
    computes with its own code only, not NumPy's BLAS and SVML.  ``timings`` as for
    :func:`run_source`, with the compiler's phases ("lower", "optimise", "codegen", "link");
    ``lets`` as for :func:`run_source` (the numbers are compiled in).

    Raises GoatError for a problem in the program (or one it cannot compile: a size known
    only when it runs) and for a missing C compiler; TypeError for an argument of the wrong
    type; nothing is left at ``output`` when it fails.
    """
    path = _file_path(path, "compile_file")
    if output is not None:
        output = _file_path(output, "compile_file", "output")
    for name, value in (("portable", portable), ("emit_llvm", emit_llvm)):
        if not isinstance(value, bool):
            raise TypeError("goat.compile_file: %s must be True or False, not %s"
                            % (name, _type_name(value)))
    if type(opt) is not int:
        raise TypeError("goat.compile_file: opt must be an int from 0 to 3, not %s"
                        % _type_name(opt))
    if not 0 <= opt <= 3:
        raise ValueError("goat.compile_file: opt must be an int from 0 to 3, not %r" % (opt,))
    _check_timings(timings, "compile_file")
    lets = check_lets(lets, "compile_file")
    from .aot import build
    source = read_source(path)
    program = with_deep_stack(_load, source, timings, lets)
    if output is None:
        output = build.default_output(path, emit_llvm)
    build.check_output(output, path, "ll" if emit_llvm else "exe")
    if emit_llvm:
        with_deep_stack(build.emit_llvm, program, output, portable)
    else:
        with_deep_stack(build.build_executable, program, output, opt, timings, portable)
    # a path that runs as it is: subprocess.run([compile_file("m.mg", "m")]) would look for a
    # bare name on PATH (found by a newcomer)
    return output if os.path.dirname(output) else os.path.join(os.curdir, output)


__all__ = ["GoatError", "load", "execute", "run_source", "run_file", "check_source",
           "check_file", "compile_file", "read_source", "with_deep_stack"]
