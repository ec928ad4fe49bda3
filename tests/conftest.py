"""Shared helpers: run a program through the Python API or the real command line."""
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
