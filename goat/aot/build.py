"""From a checked program to a native executable: lower (goat/aot/lower.py), optimise with
LLVM's new pass manager for the host processor (llvmlite), emit an object file, and link it
with goat's C runtime (goat/aot/runtime/, compiled once per runtime version and cached) by the
system C compiler.

Files written are written whole or not at all: each goes to a temporary name in its folder
and is renamed into place, so an interrupted or failed build never leaves a half-written
executable or ``.ll`` file.
"""
from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import time

from .. import __version__
from ..diagnostics import GoatError

RUNTIME_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "runtime")
RUNTIME_SOURCES = ("goat_rt.c", "goat_fail.c", "npy.c", "fmt.c", "rng.c", "goat_np.c")
# no fused multiply-adds and no fast-math: every operation rounded as IEEE 754 says, as the
# interpreter computes it
C_FLAGS = ("-O2", "-std=c11", "-D_GNU_SOURCE", "-ffp-contract=off", "-fno-fast-math",
           "-fPIC")


def cache_dir() -> str:
    """Where compiled programs and the compiled runtime are kept: $GOAT_CACHE, else
    $XDG_CACHE_HOME/goat, else ~/.cache/goat."""
    root = os.environ.get("GOAT_CACHE")
    if not root:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        root = os.path.join(base, "goat")
    return os.path.join(root, "aot")


def find_cc() -> list:
    """The system C compiler as a command (a list: $CC may carry options, ``CC="gcc -m64"``,
    split as a shell splits it): $CC, else cc, gcc or clang on the PATH; GoatError if none."""
    import shlex
    env = os.environ.get("CC", "").strip()
    try:
        words = shlex.split(env) if env else []
    except ValueError:
        words = [env]
    candidates = [words[0]] if words else ["cc", "gcc", "clang"]
    for name in candidates:
        path = shutil.which(name)
        if path:
            return [path] + words[1:]
    raise GoatError("goat compile --aot links with the system C compiler, but none was found "
                    "(looked for %s on the PATH); install one (e.g. gcc) or set CC"
                    % ", ".join(candidates), path="goat")


def _cache_folder(*parts) -> str:
    """A folder of the cache, made if missing; GoatError saying so if it cannot be."""
    folder = os.path.join(cache_dir(), *parts)
    try:
        os.makedirs(folder, exist_ok=True)
        if not os.access(folder, os.W_OK | os.X_OK):
            raise PermissionError(13, "permission denied")
    except OSError as e:
        raise GoatError("%s; goat keeps compiled programs there (set GOAT_CACHE to a folder "
                        "it can write)" % _write_error(folder, e, "use the cache folder"),
                        path="goat") from None
    return folder


def _write_error(path: str, e: OSError, verb: str = "write") -> str:
    """``cannot write x: permission denied`` and the like (as save words them)."""
    from ..interp.npyio import _os_message
    return _os_message(verb, os.path.abspath(path), path, e)


def check_output(output: str, program_path: str | None, output_kind: str = "exe") -> str:
    """The file goat compile writes for ``output``: ``output`` itself, or the file a symbolic
    link there points to (replaced, the link kept, as save writes through one).  GoatError
    unless it can be written: a file name, not a folder, a device or a pipe, in a folder that
    exists, not a goat program (a .mg name) and not the program being compiled.
    ``output_kind``: "exe" or "ll" (--emit-llvm)."""
    if not output:
        raise GoatError("cannot write the output: the file name is empty", path="goat")
    if os.path.isdir(output):
        raise GoatError("cannot write %s: it is a directory" % output, path="goat")
    target = output
    if os.path.islink(output):
        # found by a reviewer: the executable had been renamed over the link itself (as root,
        # -o /dev/stdout replaced the machine's /dev/stdout)
        target = os.path.realpath(output)
        if not os.path.isdir(os.path.dirname(target) or os.curdir):
            raise GoatError("cannot write %s: it links to %r, in a directory that does not "
                            "exist" % (output, target), path="goat")
    try:
        st = os.stat(target)
    except OSError:
        st = None
    if st is not None and not stat.S_ISREG(st.st_mode):
        # found by a breaker: as root, -o /dev/null had replaced the machine's /dev/null
        from ..interp.npyio import _require_regular
        from ..ops.registry import OpError
        try:
            _require_regular(st, output, "write")
        except OpError as e:
            raise GoatError(e.message, path="goat") from None
    folder = os.path.dirname(os.path.abspath(output))
    if not os.path.isdir(folder):
        raise GoatError("cannot write %s: its folder %s does not exist" % (output, folder),
                        path="goat")
    if program_path and program_path != "-":
        try:
            same = os.path.samefile(output, program_path)
        except OSError:
            same = False
        if same:
            raise GoatError("cannot write %s: it is the program being compiled (name another "
                            "output with -o)" % output, path="goat")
    if target.endswith(".mg") and not output.endswith(".mg"):
        raise GoatError("cannot write %s: it links to %s, a goat program" % (output, target),
                        path="goat")
    if output.endswith(".mg"):
        stem = output[:-3]
        while stem.endswith(".mg"):
            stem = stem[:-3]
        if not os.path.basename(stem):              # -o .mg
            stem = os.path.join(os.path.dirname(stem), "a.out" if output_kind != "ll" else "a")
        raise GoatError("cannot write %s: a .mg file is a goat program, and goat compile "
                        "writes %s (name it %s with -o)" % (
                            output, "LLVM IR" if output_kind == "ll" else "an executable",
                            stem + (".ll" if output_kind == "ll" else "")),
                        path="goat")
    return target


def _host():
    import llvmlite.binding as llvm
    try:
        llvm.initialize_native_target()
        llvm.initialize_native_asmprinter()
    except RuntimeError:
        pass
    return llvm


@functools.lru_cache(maxsize=1)
def _code_hash() -> str:
    """A hash of goat's own code (its Python modules and the runtime's C), so that a compiled
    program made by other code is never taken from the cache."""
    h = hashlib.sha256()
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    for folder, dirs, files in sorted(os.walk(root)):
        dirs.sort()
        for name in sorted(files):
            if name.endswith((".py", ".c", ".h", ".lark")):
                with open(os.path.join(folder, name), "rb") as f:
                    h.update(name.encode() + b"\0" + f.read())
    return h.hexdigest()[:16]


def host_key() -> str:
    """What a compiled program depends on besides its text: goat (its version and code),
    llvmlite, the processor."""
    llvm = _host()
    import llvmlite
    return "goat %s (%s); llvmlite %s; %s; %s; %s" % (
        __version__, _code_hash(), llvmlite.__version__, llvm.get_process_triple(),
        llvm.get_host_cpu_name(), llvm.get_host_cpu_features().flatten())


@contextlib.contextmanager
def _replacing(path: str, mode: int, shown: str | None = None):
    """A temporary file next to ``path`` to write, given ``mode`` and renamed to ``path`` when
    the block ends, removed when it fails: a failed or interrupted build leaves nothing
    behind.  It lies in a temporary folder of its own, removed at the end, so a linker still
    finishing after Ctrl-C (which reaches it too) cannot create the file again.  An OSError
    becomes GoatError naming ``path`` (as ``shown``, when given: the name the user wrote for
    it)."""
    shown = path if shown is None else shown
    try:
        work = tempfile.mkdtemp(prefix=".goat-", dir=os.path.dirname(os.path.abspath(path)))
    except OSError as e:
        raise GoatError(_write_error(shown, e), path="goat") from None
    tmp = os.path.join(work, "out")
    try:
        yield tmp
        try:
            os.chmod(tmp, mode)
            os.replace(tmp, path)
        except OSError as e:
            raise GoatError(_write_error(shown, e), path="goat") from None
    finally:
        _remove_folder(work)


def _remove_folder(work: str) -> None:
    try:
        shutil.rmtree(work, ignore_errors=True)
    except BaseException:           # Ctrl-C arriving in the middle: finish, then go on with it
        shutil.rmtree(work, ignore_errors=True)
        raise
    if os.path.exists(work):        # written into while it was removed: once more
        time.sleep(0.05)
        shutil.rmtree(work, ignore_errors=True)


def _write_atomic(path: str, data: bytes, mode: int = 0o644, shown: str | None = None) -> None:
    with _replacing(path, mode, shown) as tmp:
        try:
            with open(tmp, "wb") as f:
                f.write(data)
        except OSError as e:
            raise GoatError(_write_error(path if shown is None else shown, e),
                            path="goat") from None


def _run_cc(args, what):
    try:
        r = subprocess.run(args, capture_output=True, text=True, errors="replace")
    except OSError as e:
        raise GoatError("cannot run the C compiler %s: %s" % (args[0], e.strerror or e),
                        path="goat") from None
    if r.returncode != 0:
        detail = (r.stderr or r.stdout).strip().splitlines()
        # the cause, not gcc's "collect2: error: ld returned 1 exit status" after it
        cause = [line for line in detail if not line.startswith("collect2:")] or detail
        raise GoatError("the C compiler failed %s: %s" % (what, cause[-1] if cause else
                                                          "status %d" % r.returncode),
                        path="goat")


def runtime_library(cc: str) -> str:
    """The compiled runtime (an archive of the C runtime's objects), built once per runtime
    source text and compiler, kept in the cache."""
    h = hashlib.sha256()
    h.update(" ".join(cc).encode())
    h.update(" ".join(C_FLAGS).encode())
    for name in RUNTIME_SOURCES + ("goat_rt.h", "npy.h", "fmt.h", "rng.h"):
        path = os.path.join(RUNTIME_DIR, name)
        if os.path.exists(path):
            with open(path, "rb") as f:
                h.update(name.encode() + b"\0" + f.read())
    folder = _cache_folder()
    lib = os.path.join(folder, "runtime-%s.a" % h.hexdigest()[:20])
    if _sealed(lib):
        return lib
    _remove_bad(lib)
    try:
        work = tempfile.mkdtemp(prefix=".goat-rt-", dir=folder)
    except OSError as e:
        raise GoatError(_write_error(folder, e, "use the cache folder"), path="goat") from None
    try:
        objs = [os.path.join(work, name[:-2] + ".o") for name in RUNTIME_SOURCES]
        from concurrent.futures import ThreadPoolExecutor
        with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
            jobs = [pool.submit(_run_cc, [*cc, *C_FLAGS, "-c",
                                          os.path.join(RUNTIME_DIR, name), "-o", obj],
                                "on goat's runtime (%s)" % name)
                    for name, obj in zip(RUNTIME_SOURCES, objs)]
            for job in jobs:
                job.result()
        ar = shutil.which("ar")
        tmp = os.path.join(work, "runtime.a")
        if ar:
            _run_cc([ar, "rcs", tmp] + objs, "making the runtime archive")
        else:               # no ar: one relocatable object instead
            _run_cc([*cc, "-r", "-o", tmp] + objs, "making the runtime object")
        os.replace(tmp, lib)
        _seal(lib)
    finally:
        _remove_folder(work)
    return lib


def _digest(path: str) -> str | None:
    try:
        with open(path, "rb") as f:
            return hashlib.sha256(f.read()).hexdigest()
    except OSError:
        return None


def _seal(path: str) -> None:
    """Record a finished cache entry's SHA-256 beside it (``PATH.sha256``)."""
    digest = _digest(path)
    if digest is not None:
        try:
            _write_atomic(path + ".sha256", digest.encode())
        except GoatError:
            pass                # unsealed: built again next time


def _sealed(path: str) -> bool:
    """Is ``path`` the cache entry as it was built?  (One left empty, cut short or damaged
    -- a disk that filled up, an interrupted copy -- is built again, not used.)"""
    try:
        with open(path + ".sha256", "rb") as f:
            want = f.read().decode("ascii", "replace").strip()
    except OSError:
        return False
    return os.path.isfile(path) and _digest(path) == want


def _remove_bad(path: str) -> None:
    """Remove a damaged cache entry (a file, or a folder in its place)."""
    try:
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path)
        elif os.path.lexists(path):
            os.unlink(path)
    except OSError as e:
        raise GoatError("%s (remove it, or set GOAT_CACHE to another folder)"
                        % _write_error(path, e, "replace the damaged cache entry"),
                        path="goat") from None


def optimise(llvm_ir: str, opt: int = 2, timings: dict | None = None):
    """Parse, verify and optimise LLVM IR for the host; returns (module, target machine)."""
    llvm = _host()
    t = time.perf_counter()
    mod = llvm.parse_assembly(llvm_ir)
    mod.verify()
    triple = llvm.get_process_triple()
    mod.triple = triple
    target = llvm.Target.from_triple(triple)
    tm = target.create_target_machine(cpu=llvm.get_host_cpu_name(),
                                      features=llvm.get_host_cpu_features().flatten(),
                                      opt=opt, reloc="pic", codemodel="default")
    mod.data_layout = str(tm.target_data)
    pto = llvm.create_pipeline_tuning_options(speed_level=opt)
    pto.loop_vectorization = opt >= 2
    pto.slp_vectorization = opt >= 2
    pto.loop_unrolling = False      # constant trip counts would be unrolled whole: slow to compile
    pb = llvm.create_pass_builder(tm, pto)
    pm = pb.getModulePassManager()
    pm.run(mod, pb)
    if timings is not None:
        timings["optimise"] = time.perf_counter() - t
    return mod, tm


def _libraries(portable: bool):
    """NumPy's libraries for the program to compute with, or None (``--portable``)."""
    if portable:
        return None
    from .numpy_libs import numpy_libraries
    return numpy_libraries()


def build_executable(program, output: str, opt: int = 2, timings: dict | None = None,
                     portable: bool = False, loads=None) -> None:
    """Compile a checked program to the native executable ``output``; ``portable``: compute
    with its own code only, not NumPy's libraries (goat/aot/numpy_libs.py); ``loads``: the
    shapes of its ? loads' files (goat run --aot: lower.load_shapes)."""
    from .lower import lower
    cc = find_cc()
    t = time.perf_counter()
    try:
        module = lower(program, numpy=_libraries(portable), loads=loads)
        llvm_ir = str(module)
    except BaseException:           # a size known only when it runs, Ctrl-C: --time says so
        if timings is not None:
            timings["lower"] = time.perf_counter() - t
            timings["failed"] = "lower"
        raise
    if timings is not None:
        timings["lower"] = time.perf_counter() - t
    mod, tm = optimise(llvm_ir, opt, timings)
    t = time.perf_counter()
    obj = tm.emit_object(mod)
    if timings is not None:
        timings["codegen"] = time.perf_counter() - t
    t = time.perf_counter()
    lib = runtime_library(cc)
    target = check_output(output, None)
    with _replacing(target, 0o755 & ~_umask(), output) as tmp:
        objpath = os.path.join(os.path.dirname(tmp), "program.o")
        try:
            with open(objpath, "wb") as f:
                f.write(obj)
        except OSError as e:
            raise GoatError(_write_error(output, e), path="goat") from None
        _run_cc([*cc, "-o", tmp, objpath, lib, "-lm", "-ldl"], "linking the program")
    if timings is not None:
        timings["link"] = time.perf_counter() - t


def default_output(path: str, emit_llvm: bool = False) -> str:
    """Where ``goat compile --aot PATH`` writes when not told: PATH without ``.mg`` (``.ll``
    added with --emit-llvm; ``a.out`` (``a.ll``) for standard input, as C compilers do;
    PATH.out if that is PATH itself)."""
    if path == "-":
        return "a.ll" if emit_llvm else "a.out"
    base = path[:-3] if path.endswith(".mg") else path
    output = base + (".ll" if emit_llvm else "")
    return path + ".out" if output == path else output


def emit_llvm(program, output: str, portable: bool = False) -> None:
    """Write the program's LLVM IR (before optimisation) to ``output``."""
    from .lower import lower
    module = lower(program, numpy=_libraries(portable))
    llvm = _host()
    module.triple = llvm.get_process_triple()
    target = check_output(output, None, "ll")
    _write_atomic(target, str(module).encode(), 0o666 & ~_umask(), output)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def program_key(program, source, portable: bool = False, loads=None) -> str:
    """The cache key of a compiled program: the text and path of every file it was checked
    from, :func:`host_key`, the NumPy libraries it computes with, and the shapes of its ?
    loads' files it was compiled for."""
    from .numpy_libs import describe
    libs = _libraries(portable)
    h = hashlib.sha256(host_key().encode())
    h.update(b"\0numpy\0" + (describe(libs).encode() if libs else b"portable"))
    seen = {}
    seen[id(source)] = source
    for node in program.walk():
        src = node.loc.source if node.loc is not None else None
        if src is not None:
            seen.setdefault(id(src), src)
    # errors show each file's path as it was given, and relative file names in the program are
    # resolved from the folder it is compiled in
    h.update(b"\0folder\0" + os.getcwd().encode("utf-8", "surrogateescape"))
    h.update(b"\0given\0" + repr(getattr(program, "given", ())).encode())    # --let
    if loads:
        h.update(b"\0loads\0" + repr(sorted(loads.items())).encode())
    for src in sorted(seen.values(), key=lambda s: str(s.path)):
        h.update(b"\0file\0" + os.path.abspath(str(src.path)).encode("utf-8", "surrogateescape"))
        h.update(b"\0shown\0" + str(src.path).encode("utf-8", "surrogateescape"))
        h.update(b"\0" + src.text.encode("utf-8", "surrogateescape"))
    return h.hexdigest()[:32]


def cached_executable(program, source, timings: dict | None = None,
                      portable: bool = False, loads=None) -> str:
    """The path of ``program`` compiled, from the cache or compiled into it now; ``loads``:
    the shapes of the files its ? loads read (lower.load_shapes; part of the key)."""
    key = program_key(program, source, portable, loads)
    folder = _cache_folder()
    exe = os.path.join(folder, "prog-%s" % key)
    if not (_sealed(exe) and os.access(exe, os.X_OK)):
        _remove_bad(exe)
        build_executable(program, exe, timings=timings, portable=portable, loads=loads)
        _seal(exe)
    elif timings is not None:
        timings["cached"] = True
    return exe


def run_executable(exe: str) -> int:
    """Run a compiled program with this process's standard streams; its exit status.  Ctrl-C,
    SIGTERM or SIGHUP reaching goat is passed on to the program (it removes a save's temporary file
    and ends), waited for, and raised again here; a program ended by a signal of its own is
    reported in one line, status 128 + the signal's number."""
    import signal
    from ..diagnostics import Terminated
    closed = []
    for fd, stream in enumerate((sys.stdin, sys.stdout, sys.stderr)):
        if stream is None:          # closed when goat started (goat ... >&-): closed for the
            closed.append(fd)       # program too (goat's own /dev/null there is not its)
        elif fd:
            stream.flush()

    def close_them():
        for fd in closed:
            os.close(fd)
    try:
        p = subprocess.Popen([exe], preexec_fn=close_them if closed else None)
    except OSError as e:
        raise GoatError("cannot run the compiled program %s: %s" % (exe, e.strerror or e),
                        path="goat") from None
    try:
        status = p.wait()
    except BaseException as e:
        sig = e.signum if isinstance(e, Terminated) else signal.SIGINT
        try:
            p.send_signal(sig)
            p.wait(timeout=10)
        except BaseException:
            p.kill()
            p.wait()
        raise
    if status < 0:
        try:
            name = signal.Signals(-status).name
        except ValueError:
            name = "signal %d" % -status
        if -status == signal.SIGINT:
            raise KeyboardInterrupt
        if -status == signal.SIGTERM or -status == getattr(signal, "SIGHUP", None):
            raise Terminated(-status)
        if sys.stderr is not None:
            sys.stderr.write("goat: error: the compiled program %s was ended by %s\n"
                             % (exe, name))
            sys.stderr.flush()
        return 128 - status
    return status
