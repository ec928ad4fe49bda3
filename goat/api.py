"""goat from Python: the same parse -> check -> evaluate pipeline the command line uses.

    >>> import goat
    >>> goat.run_source("print [[1, 2]] @ [[3], [4]]")
    [array([[11.]])]

Every function raises :class:`goat.GoatError` for a problem in the program (its ``str`` is the
``PATH:LINE: error: MESSAGE`` line, ``render()`` adds the source excerpt).
"""
from __future__ import annotations

import gc
import sys
import threading
import time
from contextlib import contextmanager

from .diagnostics import GoatError, Loc, Source
from .gpu import get_backend
from .interp.evaluator import Evaluator
from .lexer import ast
from .lexer.parser import parse
from .typecheck.checker import Checker
from .typecheck.program import Program, subregions

# Deeply nested expressions (a 10,000-level bracket nest, a 10,000-term sum) recurse in the
# checker; they run on a thread with a large stack so that they are checked, not crashed on.
_STACK_SIZES = (512 * 1024 * 1024, 64 * 1024 * 1024)   # the second where memory is capped
_RECURSION_LIMIT = 120_000
_limit_lock = threading.Lock()
_limit_users = 0            # calls inside with_deep_stack now (they share the raised limit)
_limit_before = None


def _raise_limit():
    global _limit_users, _limit_before
    with _limit_lock:
        if _limit_users == 0:
            _limit_before = sys.getrecursionlimit()
            sys.setrecursionlimit(max(_limit_before, _RECURSION_LIMIT))
        _limit_users += 1


def _restore_limit():
    global _limit_users
    with _limit_lock:
        _limit_users -= 1
        if _limit_users == 0:
            sys.setrecursionlimit(_limit_before)


def with_deep_stack(fn, *args, **kwargs):
    """Run ``fn(*args, **kwargs)`` where deep recursion is allowed: on a thread with a large
    stack and a raised recursion limit (restored when the last such call ends, so concurrent
    calls do not undo each other).  Where no such thread can be started (memory is capped),
    it runs in the calling thread with the raised limit alone."""
    result = {}

    def target():
        try:
            result["value"] = fn(*args, **kwargs)
        except BaseException as e:      # re-raised in the caller's thread
            result["error"] = e

    _raise_limit()
    try:
        thread = None
        for size in _STACK_SIZES:
            old_size = threading.stack_size()
            try:
                threading.stack_size(size)
                thread = threading.Thread(target=target, name="goat", daemon=True)
                thread.start()
                break
            except (RuntimeError, MemoryError, ValueError):
                thread = None
            finally:
                threading.stack_size(old_size)
        if thread is None:
            target()
        else:
            thread.join()
    finally:
        _restore_limit()
    if "error" in result:
        raise result["error"]
    return result.get("value")


@contextmanager
def gc_paused():
    """Python's cyclic garbage collector off for the duration, then as it was.

    Reading and checking a program makes a few hundred thousand small objects that live as
    long as the program; the collector would walk them all again and again while they are made
    (it doubled the time to read the 14,529-line training program).  Nothing made here needs
    the collector to be freed in time: what is garbage when it is switched back on is collected
    then."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


MAX_PROGRAM_BYTES = 256 * 1024 * 1024     # a program's text, at most (no one writes more)


def read_program_bytes(f, shown: str) -> bytes:
    """The bytes of a program from an open binary file (a pipe or a device too), refusing
    more than MAX_PROGRAM_BYTES rather than reading without end (/dev/zero)."""
    data = f.read(MAX_PROGRAM_BYTES + 1)
    if len(data) > MAX_PROGRAM_BYTES:
        raise GoatError("cannot read %s: it holds more than %d MB, which is not a program"
                        % (shown, MAX_PROGRAM_BYTES // (1024 * 1024)), path=shown)
    return data


def read_source(path: str) -> Source:
    """Read a program file as UTF-8 text.  Raises GoatError if it cannot be read or decoded."""
    try:
        with open(path, "rb") as f:
            data = read_program_bytes(f, path)
    except IsADirectoryError:
        raise GoatError("cannot read %s: it is a directory" % path, path=path) from None
    except OSError as e:
        raise GoatError("cannot read %s: %s" % (path, e.strerror or e), path=path) from None
    except ValueError:          # a path with a NUL byte in it
        raise GoatError("cannot read %r: a file name cannot contain a NUL character" % path,
                        path=repr(path)) from None
    return decode_source(data, path)


def decode_source(data: bytes, path: str) -> Source:
    """Program bytes as a Source; a clear GoatError for text that is not UTF-8."""
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        # show the line with the bad byte replaced, and point at it
        before = data[:e.start].decode("utf-8", "replace")
        shown = Source(path, before + data[e.start:].decode("utf-8", "replace"))
        raise GoatError("the file is not UTF-8 text (byte 0x%02x cannot be decoded)"
                        % data[e.start], Loc(shown, len(before), len(before) + 1)) from None
    return Source(path, text)


def parse_source(source: Source) -> ast.Module:
    return parse(source)


def _check_module(module: ast.Module, program: Program | None = None) -> Program:
    checker = Checker(program)
    checker.look_ahead(module)
    for stmt in module.stmts:
        try:
            checker.check_stmt(stmt)
        except RecursionError:
            raise GoatError("this statement is nested too deeply to check", stmt.loc) from None
    return checker.program


def load(text, path: str = "<string>", timings: dict | None = None) -> Program:
    """Parse and check a program (``str``, or UTF-8 ``bytes``); the checked :class:`Program`
    (nothing runs yet)."""
    source = decode_source(bytes(text), path) if isinstance(text, (bytes, bytearray)) else Source(path, text)
    return with_deep_stack(_load, source, timings)


def _load(source: Source, timings: dict | None = None) -> Program:
    with gc_paused():
        return _load_now(source, timings)


def _load_now(source: Source, timings: dict | None = None) -> Program:
    t0 = time.perf_counter()
    try:
        module = parse(source)
    except RecursionError:
        raise GoatError("the program is nested too deeply to parse", path=source.path) from None
    t1 = time.perf_counter()
    program = _check_module(module)
    t2 = time.perf_counter()
    if timings is not None:
        timings["parse"] = t1 - t0
        timings["check"] = t2 - t1
    return program


def execute(program: Program, stdout=None, backend: str = "numpy", timings: dict | None = None,
            progress=None):
    """Run a checked program; returns what it printed: a NumPy float64 array per
    ``print EXPR``, a string (the line, without its newline) per ``print "..."``.
    ``progress`` (a :class:`goat.progress.Progress`) shows a bar for long top-level loops."""
    t0 = time.perf_counter()
    ev = Evaluator(program, get_backend(backend), out=stdout, keep_printed=True,
                   progress=progress)
    with gc_paused():
        if _nesting(program.main) > 50:      # plans nest as deep as the blocks do
            with_deep_stack(_run, ev)
        else:                                # Ctrl-C reaches the run itself
            _run(ev)
    if timings is not None:
        timings["run"] = time.perf_counter() - t0
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
        raise GoatError("the program's blocks are nested too deeply to run",
                        path=nodes[0].loc.source.path if nodes else None) from None


def run_source(text: str, path: str = "<string>", stdout=None, backend: str = "numpy",
               timings: dict | None = None) -> list:
    """Check and run a program given as text.

    Returns one NumPy float64 array per ``print``, in order, at full precision.  ``stdout``
    (a text stream) also receives the printed memref text; None prints nothing.
    """
    program = load(text, path, timings)
    return execute(program, stdout, backend, timings)


def run_file(path: str, stdout=None, backend: str = "numpy", timings: dict | None = None) -> list:
    """Like :func:`run_source`, reading the program from ``path``."""
    source = read_source(path)
    program = with_deep_stack(_load, source, timings)
    return execute(program, stdout, backend, timings)


def check_source(text: str, path: str = "<string>") -> Program:
    """Check a program without running it; the typed :class:`Program` (``.lets`` gives every
    let's node and so its ``.shape``)."""
    return load(text, path)


def check_file(path: str) -> Program:
    return with_deep_stack(_load, read_source(path))


__all__ = ["GoatError", "load", "execute", "run_source", "run_file", "check_source",
           "check_file", "read_source", "with_deep_stack"]
