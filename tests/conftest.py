"""Shared helpers: run a program through the Python API or the real command line."""
import itertools
import os
import subprocess
import sys
import tempfile

import pytest

# the tests' parses must not fill the user's cache of statement shapes (goat/lexer/parser.py)
os.environ["XDG_CACHE_HOME"] = tempfile.mkdtemp(prefix="goat-test-cache-")

import goat  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(src, path="t.mg"):
    """The printed values of a program, as NumPy arrays."""
    return goat.run_source(src, path=path)


def error(src, path="t.mg"):
    """The GoatError a program raises (checked or run)."""
    with pytest.raises(goat.GoatError) as info:
        goat.run_source(src, path=path)
    return info.value


def cli(*args, stdin=None, cwd=None, timeout=120):
    """Run the real `python -m goat` and return (status, stdout, stderr)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    p = subprocess.run([sys.executable, "-m", "goat", *args], input=stdin, capture_output=True,
                       cwd=cwd or ROOT, env=env, timeout=timeout)
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


def goat_run_in(folder, *flags, digits=False):
    """``python -m goat run FLAGS p.mg`` in ``folder`` (a tmp_path holding p.mg), with a
    cache of its own there; ``digits``: values printed at full precision (GOAT_PRINT_DIGITS,
    which compiled programs read).  Returns the CompletedProcess (text)."""
    env = dict(os.environ, GOAT_CACHE=str(folder / "cache"))
    if digits:
        env["GOAT_PRINT_DIGITS"] = "17"
    return subprocess.run([sys.executable, "-m", "goat", "run", *flags, "p.mg"],
                          cwd=str(folder), capture_output=True, text=True, env=env)


def run_error_in(folder, text, aot):
    """``text`` as ``folder``/p.mg run by ``goat run`` (or ``--aot``, skipped without
    llvmlite), which must stop with status 1: (its error's first line, its standard output)."""
    if aot:
        pytest.importorskip("llvmlite")
    (folder / "p.mg").write_text(text)
    r = goat_run_in(folder, *(["--aot"] if aot else []))
    assert r.returncode == 1, r.stderr
    return r.stderr.splitlines()[0], r.stdout


def compiled_numbers(folder):
    """The numbers each print of ``folder``'s p.mg printed, compiled (goat run --aot), at full
    precision: a list per value (see printed_numbers)."""
    r = goat_run_in(folder, "--aot", digits=True)
    assert r.returncode == 0, r.stderr
    return printed_numbers(r.stdout)


def central_differences(f, like, h=1e-6):
    """The gradient of ``f`` (a function of a perturbation shaped as ``like``, a NumPy array)
    at 0 by central differences: (f(+h e_i) - f(-h e_i)) / 2h per cell i."""
    import numpy as np
    fd = np.zeros_like(like)
    for i in np.ndindex(like.shape):
        e = np.zeros_like(like)
        e[i] = h
        fd[i] = (f(e) - f(-e)) / (2 * h)
    return fd


def assert_f32_within_float32_of_f64(text):
    """``text``'s one printed value under --dtype f32 is float32, and float64's within
    float32's precision (rtol 1e-4, atol 1e-5)."""
    import numpy as np
    (wide,) = goat.run_source(text)
    (narrow,) = goat.run_source(text, dtype="f32")
    assert narrow.dtype == np.float32
    assert np.allclose(narrow, wide, rtol=1e-4, atol=1e-5)


def assert_same_on_the_gpu_test_back_end(text):
    """``text`` run on NumPy and on the GPU test back end (goat/gpu/guard.py): the same output
    and the same bits of every printed value, and no host round trip the evaluator should not
    make."""
    import io
    import numpy as np
    from goat.gpu import get_backend
    from goat.gpu.guard import GuardBackend
    from goat.interp.evaluator import Evaluator
    program = goat.check_source(text)
    outs = []
    for be in (get_backend("numpy"), GuardBackend()):
        out = io.StringIO()
        ev = Evaluator(program, be, out=out, keep_printed=True)
        if isinstance(be, GuardBackend):
            be.counter.watch_effects(ev)
        ev.run()
        outs.append((out.getvalue(), [np.asarray(v).tobytes() for v in ev.printed]))
    assert outs[0] == outs[1]
    assert be.counter.stray_downloads == 0


def literal(a):
    """A goat list literal holding exactly the doubles of the NumPy array ``a``."""
    import numpy as np
    return np.array2string(a, separator=", ", threshold=10 ** 6, floatmode="unique",
                           max_line_width=10 ** 6)


def printed_numbers(text):
    """The numbers of each value a run printed in the memref format (``text``, its standard
    output), as a flat list of floats per value."""
    out = []
    for block in text.split("Unranked Memref")[1:]:
        lines = block.split("data = \n", 1)[1].splitlines()
        data = " ".join(itertools.takewhile(lambda line: line.startswith(("[", " ")), lines))
        out.append([float(v) for v in data.replace("[", " ").replace("]", " ")
                    .replace(",", " ").split()])
    return out


def assert_compiled_equal(numbers, want, program):
    """A compiled run's printed ``numbers`` are ``want`` (goat run's value, or a reference),
    bit for bit -- within 1e-12 where ``program`` takes a tanh and NumPy's tanh is not C's on
    this processor (NumPy 2.4 without AVX-512, docs/aot.md)."""
    import numpy as np
    from goat.aot.numpy_libs import c_functions_differ
    want = np.asarray(want).ravel()
    if ("tanh(" in program or "gelu(" in program) and "tanh" in c_functions_differ():
        assert np.allclose(np.array(numbers), want, rtol=1e-12, atol=1e-15)
    else:
        assert np.array_equal(np.array(numbers), want)

