"""goat as a process among others: standard streams that are closed, opened the wrong way or
full; ``goat FILE``; ``--time`` when a phase fails; memory caps; and the Python API leaving the
host process as it found it, also when called from many threads at once.

What "sensibly" means for the streams is written in goat/cli.py's docstring: a stream that a
command needs and cannot use is ``...: error: ...`` with status 1; a stream it does not need
changes nothing; a standard error that cannot be written loses the reports, never the status.
"""
import gc
import io
import os
import re
import shlex
import signal
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

import goat
from goat import api
from conftest import ROOT

CORE = "print [[1, 2]] @ [[3], [4]]\n"
MEMREF_11 = ("Unranked Memref base@ = 0x\u2026 rank = 2 offset = 0 sizes = [1, 1] strides = [1, 1] "
             "data = \n[[11]]\n")
PYTHON = shlex.quote(sys.executable)
HAS_DEV_FULL = os.path.exists("/dev/full")


def env():
    e = dict(os.environ)
    e["PYTHONPATH"] = ROOT + os.pathsep + e.get("PYTHONPATH", "")
    return e


def shell(command, cwd, timeout=120):
    """Run a /bin/sh command line; (status, stdout, stderr)."""
    p = subprocess.run(["/bin/sh", "-c", command], capture_output=True, cwd=cwd, env=env(),
                       timeout=timeout)
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("streams")
    (d / "a.mg").write_text(CORE)
    (d / "quiet.mg").write_text("let a = [[1, 2]]\n")
    (d / "bad.mg").write_text("print [[1, 2]] + [[1, 2, 3]]\n")
    (d / "syntax.mg").write_text("print (1 +\n")
    (d / "runtime.mg").write_text('print [[7]]\nlet x: tensor[1x1] = load("nope.npy")\nprint x\n')
    (d / "sink").write_text("")
    return d


# ------------------------------------------------------------------------ standard streams

# how each stream is set up, as a redirection of the shell that starts goat
STDIN = {"ok": "<a.mg", "closed": "<&-", "write-only": "0>>sink"}
STDOUT = {"ok": "", "closed": ">&-", "read-only": "1<a.mg", "full": ">/dev/full"}
STDERR = {"ok": "", "closed": "2>&-", "read-only": "2<a.mg", "full": "2>/dev/full"}

STDIN_MESSAGE = {"closed": "<stdin>: error: cannot read standard input: it is closed",
                 "write-only": "<stdin>: error: cannot read standard input: it is not open for "
                               "reading"}
STDOUT_MESSAGE = {"closed": "goat: error: cannot write output: standard output is closed",
                  "read-only": "goat: error: cannot write output: standard output is not open "
                               "for writing",
                  "full": "goat: error: cannot write output: No space left on device"}

# command: (arguments, reads standard input, what it writes to standard output, status when
# its streams are fine, what standard error starts with then)
COMMANDS = {
    "run FILE": ("run a.mg", False, MEMREF_11, 0, ""),
    "goat FILE": ("a.mg", False, MEMREF_11, 0, ""),
    "run FILE, no prints": ("run quiet.mg", False, "", 0, ""),
    "run --time FILE": ("run --time a.mg", False, MEMREF_11, 0, "goat: parse "),
    "run -": ("run -", True, MEMREF_11, 0, ""),
    "goat (no command)": ("", True, MEMREF_11, 0, ""),
    "check FILE": ("check a.mg", False, "", 0, ""),
    "check -": ("check -", True, "", 0, ""),
    "check --shapes FILE": ("check --shapes quiet.mg", False, "a : tensor[1x2]\n", 0, ""),
    "--version": ("--version", False, "goat %s\n" % goat.__version__, 0, ""),
    "--help": ("--help", False, None, 0, ""),
    "an error in the program": ("run bad.mg", False, "", 1, "bad.mg:1: error: cannot add"),
    "a command-line mistake": ("frob", False, "", 1, "goat: error: 'frob' is neither"),
    "repl, its input piped": ("repl", True, "goat> " + CORE + MEMREF_11, 0, ""),
}


def expected(command, stdin, stdout):
    """(status, standard output or None to skip, how standard error starts) for a command
    run with standard input and output set up as named."""
    args, reads, out, status, err = COMMANDS[command]
    if status != 0:
        return status, "", err
    if reads and stdin != "ok":
        return 1, "", STDIN_MESSAGE[stdin]
    if out != "" and stdout != "ok":         # it writes (None: help, not compared)
        return 1, "", STDOUT_MESSAGE[stdout]
    return 0, out, err


def check_case(files, command, stdin, stdout, stderr):
    """'' if goat behaves as expected(), else what went wrong."""
    if "/dev/full" in STDOUT[stdout] + STDERR[stderr] and not HAS_DEV_FULL:
        return ""
    args = COMMANDS[command][0]
    line = "exec %s -m goat %s %s %s %s" % (PYTHON, args, STDIN[stdin], STDOUT[stdout],
                                            STDERR[stderr])
    status, out, err = shell(line, cwd=str(files))
    want_status, want_out, want_err = expected(command, stdin, stdout)
    problems = []
    if status != want_status:
        problems.append("status %d, not %d" % (status, want_status))
    if stdout == "ok" and want_out is not None and out != want_out:
        problems.append("standard output %r, not %r" % (out[:200], want_out))
    if stdout == "ok" and want_out is None and not out.startswith("usage: goat"):
        problems.append("standard output %r" % out[:200])
    if stderr == "ok":
        if not err.startswith(want_err) or (want_err == "" and err != ""):
            problems.append("standard error %r, not starting %r" % (err[:300], want_err))
    if "Traceback" in err or "internal error" in err:
        problems.append("standard error %r" % err[:300])
    if problems:
        return "%s (stdin %s, stdout %s, stderr %s): %s" % (command, stdin, stdout, stderr,
                                                          "; ".join(problems))
    return ""


def check_all(files, cases):
    with ThreadPoolExecutor(max_workers=4) as pool:
        found = list(pool.map(lambda case: check_case(files, *case), cases))
    return [f for f in found if f]


def test_every_command_with_standard_input_and_output_closed_wrong_or_full(files):
    cases = [(command, stdin, stdout, "ok")
             for command in COMMANDS for stdin in STDIN for stdout in STDOUT]
    assert check_all(files, cases) == []


def test_standard_error_closed_wrong_or_full_never_changes_the_status(files):
    cases = [(command, "ok", "ok", stderr) for command in COMMANDS for stderr in STDERR
             if stderr != "ok"]
    # all three streams unusable at once
    cases += [(command, stdin, stdout, stderr) for command in COMMANDS
              for stdin, stdout, stderr in (("closed", "closed", "closed"),
                                            ("write-only", "full", "full"),
                                            ("write-only", "read-only", "read-only"),
                                            ("ok", "ok", "closed"),
                                            ("closed", "ok", "closed"))]
    assert check_all(files, cases) == []


def test_the_issue_cases(files):
    d = str(files)
    for line in ("goat run - <&-", "goat <&-"):
        status, out, err = shell(line.replace("goat", "exec %s -m goat" % PYTHON, 1), d)
        assert (status, out, err) == (1, "", STDIN_MESSAGE["closed"] + "\n")
    status, out, err = shell("exec %s -m goat run - 0>sink" % PYTHON, d)
    assert (status, out, err) == (1, "", STDIN_MESSAGE["write-only"] + "\n")
    # --time with standard error closed: the run succeeds, so the status is 0
    status, out, _ = shell("exec %s -m goat run --time a.mg 2>&-" % PYTHON, d)
    assert (status, out) == (0, MEMREF_11)


def test_a_closed_descriptor_is_not_reused_for_files_goat_opens(files):
    """With standard output closed, a file a program saves must not take descriptor 1 (where
    anything meant for standard output would land in it)."""
    d = str(files)
    (files / "save.mg").write_text('save([[1, 2]], "out.npy")\n')
    status, out, err = shell("exec %s -m goat run save.mg >&-" % PYTHON, d)
    assert (status, err) == (0, "")
    import numpy as np
    assert np.load(str(files / "out.npy")).tolist() == [[1.0, 2.0]]
    code = ("import os, sys; from goat.cli import _reserve_standard_descriptors as r; r(); "
            "fd = os.open(%r, os.O_RDONLY); print(fd, file=sys.stderr)" % str(files / "a.mg"))
    status, _, err = shell("exec %s -c %s >&- <&-" % (PYTHON, shlex.quote(code)), d)
    assert status == 0 and int(err) > 2


def test_a_reader_that_leaves_is_not_an_error(files):
    (files / "many.mg").write_text("let a = [[1, 2], [3, 4]]\n" + "print a\n" * 20000)
    status, out, err = shell("%s -m goat run --time many.mg | head -1" % PYTHON, str(files))
    assert status == 0 and out.startswith("Unranked Memref")
    assert "Traceback" not in err and "error" not in err


# ------------------------------------------------------------------------ goat FILE

def test_a_file_as_the_only_argument_is_run(files):
    d = str(files)
    assert shell("%s -m goat a.mg" % PYTHON, d) == (0, MEMREF_11, "")
    status, out, err = shell("%s -m goat ./a.mg --time" % PYTHON, d)
    assert status == 0 and out == MEMREF_11 and re.match(r"goat: parse \d+\.\d{3} s, check", err)
    status, out, err = shell("%s -m goat -q --time a.mg" % PYTHON, d)
    assert status == 0 and out == MEMREF_11 and err.startswith("goat: parse ")
    status, out, err = shell("%s -m goat - <a.mg" % PYTHON, d)
    assert (status, out, err) == (0, MEMREF_11, "")
    status, out, err = shell("%s -m goat bad.mg" % PYTHON, d)
    assert status == 1 and out == "" and err.startswith("bad.mg:1: error: cannot add shapes")


def test_a_word_that_is_neither_a_command_nor_a_file(files):
    d = str(files)
    status, out, err = shell("%s -m goat frob" % PYTHON, d)
    assert (status, out) == (1, "")
    assert err == ("goat: error: 'frob' is neither a command nor a file; the commands are run, "
                   "check, compile, repl, and goat FILE runs a program (see goat --help)\n")
    status, _, err = shell("%s -m goat chek" % PYTHON, d)
    assert status == 1 and "(did you mean check?)" in err
    # a name that looks like a file is taken for one, and its absence is reported
    status, _, err = shell("%s -m goat missing.mg" % PYTHON, d)
    assert status == 1
    assert err == "missing.mg: error: cannot read missing.mg: no such file\n"
    status, _, err = shell("%s -m goat %s" % (PYTHON, shlex.quote(ROOT)), d)
    assert status == 1 and "it is a directory" in err


def test_a_file_named_like_a_command_needs_run(files):
    d = files / "cmd"
    d.mkdir(exist_ok=True)
    (d / "check").write_text(CORE)
    status, _, err = shell("%s -m goat check" % PYTHON, str(d))
    assert status == 1 and "the following arguments are required: FILE" in err
    assert shell("%s -m goat run check" % PYTHON, str(d)) == (0, MEMREF_11, "")


def test_help_shows_goat_file():
    status, out, err = shell("%s -m goat --help" % PYTHON, ROOT)
    assert status == 0 and err == ""
    assert out.startswith("usage: goat [run] [--time] [--quiet] [--backend NAME] [--dtype f64|f32]\n"
                          "            [--threads N] [--let NAME=VALUE ...] [--aot [--portable]] FILE\n")
    assert "goat FILE runs FILE, as goat run FILE does" in out


def test_readme_command_table_has_goat_file():
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        readme = f.read()
    assert "| `goat FILE` |" in readme


# ------------------------------------------------------------------------ --time

def test_time_reports_the_phases_that_ran(files):
    d = str(files)
    status, out, err = shell("%s -m goat run --time bad.mg" % PYTHON, d)
    lines = err.splitlines()
    assert status == 1 and lines[0].startswith("bad.mg:1: error: cannot add shapes")
    assert re.fullmatch(r"goat: parse \d+\.\d{3} s, check failed after \d+\.\d{3} s", lines[-1])
    status, _, err = shell("%s -m goat run --time syntax.mg" % PYTHON, d)
    assert status == 1 and err.startswith("syntax.mg:")
    assert re.fullmatch(r"goat: parse failed after \d+\.\d{3} s", err.splitlines()[-1])
    status, out, err = shell("%s -m goat run --time runtime.mg" % PYTHON, d)
    assert status == 1 and out.endswith("[[7]]\n")
    assert re.fullmatch(r"goat: parse \d+\.\d{3} s, check \d+\.\d{3} s, run failed after "
                        r"\d+\.\d{3} s", err.splitlines()[-1])
    # a ? size the compiled program cannot know: the file is the program's own save
    (files / "qm.mg").write_text('save([[1, 2]], "q.npy")\nlet q: tensor[?x2] = load("q.npy")\n'
                                 'print q\n')
    status, out, err = shell("%s -m goat run --aot --time qm.mg" % PYTHON, d)
    assert status == 1 and re.fullmatch(r"goat: parse \d+\.\d{3} s, check \d+\.\d{3} s, lower "
                                        r"failed after \d+\.\d{3} s", err.splitlines()[-1])
    # a ? load of a file not there: goat run's error, where the load runs
    (files / "qm.mg").write_text('let q: tensor[?x2] = load("nothere.npy")\nprint q\n')
    status, out, err = shell("%s -m goat run --aot --time qm.mg" % PYTHON, d)
    assert status == 1 and err.startswith("qm.mg:1: error: cannot load nothere.npy")
    assert re.fullmatch(r"goat: parse \d+\.\d{3} s, check \d+\.\d{3} s, run failed after "
                        r"\d+\.\d{3} s", err.splitlines()[-1])
    # the compiled program's own error: its run failed (it had been reported as "run 0.005 s")
    status, out, err = shell("%s -m goat run --aot --time runtime.mg" % PYTHON, d)
    assert status == 1 and out.endswith("[[7]]\n")
    assert re.fullmatch(r"goat: parse \d+\.\d{3} s, check \d+\.\d{3} s, (lower .*, link "
                        r"\d+\.\d{3} s|compiled program from the cache.*), run failed after "
                        r"\d+\.\d{3} s", err.splitlines()[-1]), err
    status, out, err = shell("%s -m goat run --time a.mg" % PYTHON, d)
    assert status == 0 and out == MEMREF_11
    assert re.fullmatch(r"goat: parse \d+\.\d{3} s, check \d+\.\d{3} s, run \d+\.\d{3} s "
                        r"\(\d+ nodes\)\n", err)
    # nothing ran: no report
    status, _, err = shell("%s -m goat run --time missing.mg" % PYTHON, d)
    assert status == 1 and err == "missing.mg: error: cannot read missing.mg: no such file\n"


def test_api_timings_name_the_phase_that_failed():
    timings = {}
    with pytest.raises(goat.GoatError):
        goat.run_source("print [[1]] + [[1, 2, 3]] @ [[1]]", timings=timings)
    assert timings["failed"] == "check" and set(timings) == {"parse", "check", "failed"}
    timings = {}
    goat.run_source("print 1", timings=timings)
    assert set(timings) == {"parse", "check", "run"}


def test_a_timings_dict_used_again_tells_of_the_latest_call():
    """A run that succeeded had reported failed: 'check' from an earlier call."""
    timings = {}
    with pytest.raises(goat.GoatError):
        goat.run_source("print [[1]] +", timings=timings)
    goat.run_source("print [[1]]", timings=timings, backend="auto")
    assert set(timings) == {"parse", "check", "run", "backend"}
    goat.run_source("print [[1]]", timings=timings)
    assert set(timings) == {"parse", "check", "run"}
    program = goat.load("print 1", timings=timings)          # load then execute: both phases
    goat.execute(program, timings=timings)
    assert set(timings) == {"parse", "check", "run"}


def test_a_stream_of_another_encoding_gets_utf8_as_goat_run_writes_it(tmp_path):
    """A latin-1 file had failed with a bare UnicodeEncodeError at the memref header's '…'."""
    with open(tmp_path / "out.txt", "w", encoding="latin-1") as f:
        f.write("mine\n")
        goat.run_source('print "caf\u00e9"\nprint [[1]]\n', stdout=f)
        f.write("after\n")
    data = (tmp_path / "out.txt").read_bytes()
    assert data == ("mine\ncaf\u00e9\nUnranked Memref base@ = 0x\u2026 rank = 2 offset = 0 "
                    "sizes = [1, 1] strides = [1, 1] data = \n[[1]]\nafter\n").encode("utf-8")

    class Ascii:                    # no byte buffer: a clear error
        encoding = "ascii"

        def write(self, text):
            return len(text.encode("ascii"))
    with pytest.raises(UnicodeEncodeError, match="encoding='utf-8'"):
        goat.run_source("print [[1]]", stdout=Ascii())


def test_a_checked_program_finds_its_files_after_the_current_folder_changes(tmp_path,
                                                                             monkeypatch):
    """A checked program had read load("data/a.npy") relative to the current folder when it
    ran, not its own."""
    import numpy as np
    (tmp_path / "p" / "data").mkdir(parents=True)
    np.save(tmp_path / "p" / "data" / "a.npy", np.ones((1, 2)))
    (tmp_path / "p" / "p.mg").write_text('print load("data/a.npy", tensor[1x2])\n'
                                         'save([[3]], "out_{1}.npy")\n')
    monkeypatch.chdir(tmp_path)
    program = goat.check_file("p/p.mg")
    monkeypatch.chdir("/")
    assert goat.execute(program)[0].tolist() == [[1.0, 1.0]]
    assert np.load(tmp_path / "p" / "out_1.npy").tolist() == [[3.0]]


def test_the_statement_shape_cache_stays_small(tmp_path, monkeypatch):
    """Generated long statements had grown the cache to 1 GB of memory and an 81 MB file
    (read never again, being over 16 MB)."""
    from goat.lexer import parser
    monkeypatch.setattr(parser, "_SHAPES", {})
    monkeypatch.setattr(parser, "_shape_tokens", [0])
    monkeypatch.setattr(parser, "_MAX_SHAPE_TOKENS", 3000)
    saved = parser._SavedShapes()
    monkeypatch.setattr(parser, "_SAVED", saved)
    monkeypatch.setattr(saved, "BYTES", 20000)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.delenv("GOAT_NO_CACHE", raising=False)
    for n in range(1, 120):
        goat.run_source("let a = [[1]]\nprint a" + " + a * a" * n)
    assert sum(len(k) for k in parser._SHAPES) <= 3000
    saved.save()
    files = list((tmp_path / "goat").iterdir())
    assert len(files) == 1 and files[0].stat().st_size <= 20000 + 1000


# ------------------------------------------------------------------------ the Python API

def process_state():
    return {
        "stack_size": threading.stack_size(),
        "recursion_limit": sys.getrecursionlimit(),
        "gc": gc.isenabled(),
        "stdout": sys.stdout,
        "stderr": sys.stderr,
        "stdin": sys.stdin,
        "cwd": os.getcwd(),
        "signals": {s: signal.getsignal(s) for s in signal.valid_signals()
                    if s not in (signal.SIGKILL, signal.SIGSTOP)},
        "switch_interval": sys.getswitchinterval(),
    }


# 1 + (1 + (1 + ...)): nested to the right, 10,000 deep (a chain a + b + c nests to the left,
# which the checker walks in a loop), so checking it needs a deep stack
DEEP_SUM = "print " + "1 + (" * 9_999 + "1" + ")" * 9_999
DEEP_CALLS = "print " + "exp(" * 3_000 + "0" + ")" * 3_000
DEEP_BLOCKS = "var x = 0\n" + "if x == 0 {\n" * 60 + "x = x + 1\n" + "}\n" * 60 + "print x\n"
TOO_DEEP = "print " + "-(" * 150_000 + "[[1]]" + ")" * 150_000


def test_many_threads_at_once_leave_the_process_as_they_found_it(tmp_path):
    path = tmp_path / "deep.mg"
    path.write_text(DEEP_SUM)
    before = process_state()
    threads_before = set(threading.enumerate())
    errors = []

    def work(i):
        try:
            for round_ in range(2):
                kind = i % 6
                if kind == 0:
                    assert goat.run_source(DEEP_SUM)[0] == 10_000
                elif kind == 1:
                    assert float(goat.run_source(DEEP_CALLS)[0]) > 1
                elif kind == 2:
                    assert goat.run_source(DEEP_BLOCKS)[0] == 1
                elif kind == 3:
                    assert goat.run_file(str(path))[0] == 10_000
                    assert goat.check_file(path).lets == {}
                elif kind == 4 and round_ == 0:
                    with pytest.raises(goat.GoatError, match="nested too deeply"):
                        goat.check_source(TOO_DEEP)
                elif kind == 4:
                    with pytest.raises(goat.GoatError, match="cannot add"):
                        goat.run_source(DEEP_SUM + " + [[1, 2]] + [[1, 2, 3]]")
                else:
                    program = goat.load("let a = [[1, 2]]\nprint a @ transpose(a)")
                    assert goat.execute(program)[0].tolist() == [[5.0]]
        except BaseException as e:      # pragma: no cover - the failure being tested for
            errors.append((i, repr(e)[:300]))

    threads = [threading.Thread(target=work, args=(i,)) for i in range(12)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert process_state() == before
    # no thread left behind (one an earlier test started may have ended meanwhile: the count
    # alone had failed once so)
    assert set(threading.enumerate()) <= threads_before


def os_threads():
    return len(os.listdir("/proc/self/task")) if os.path.isdir("/proc/self/task") else 0


def test_helper_threads_end_with_their_calls():
    import time
    before = os_threads()
    for _ in range(5):
        goat.run_source(DEEP_SUM)
    deadline = time.monotonic() + 10
    while os_threads() > before and time.monotonic() < deadline:
        time.sleep(0.01)
    assert os_threads() <= before


def test_a_thread_the_host_starts_meanwhile_gets_its_own_stack_size():
    """Helper threads take a large stack; a thread the host starts while goat starts them
    must not: no other thread ever sees threading.stack_size() changed (it is one setting for
    the process, read by every thread start)."""
    seen = []
    stop = threading.Event()

    def watcher():
        while not stop.is_set():
            seen.append(threading.stack_size())

    w = threading.Thread(target=watcher)
    w.start()
    try:
        threads = [threading.Thread(target=goat.run_source, args=(DEEP_SUM,)) for _ in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        stop.set()
        w.join()
    assert set(seen) == {0}


def test_the_host_s_own_settings_are_put_back():
    old = threading.stack_size(), sys.getrecursionlimit(), gc.isenabled()
    try:
        threading.stack_size(1024 * 1024)
        sys.setrecursionlimit(5000)
        gc.disable()
        threads = [threading.Thread(target=goat.run_source, args=(DEEP_SUM,)) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert threading.stack_size() == 1024 * 1024
        assert sys.getrecursionlimit() == 5000
        assert gc.isenabled() is False
    finally:
        threading.stack_size(old[0])
        sys.setrecursionlimit(old[1])
        if old[2]:
            gc.enable()


def test_printing_goes_only_to_the_stream_given(capsys):
    import io
    out = io.StringIO()
    goat.run_source(CORE, stdout=out)
    goat.run_source(CORE)
    assert out.getvalue() == MEMREF_11
    assert capsys.readouterr() == ("", "")


def test_run_file_of_a_descriptor_is_refused_and_leaves_it_open(tmp_path):
    path = tmp_path / "a.mg"
    path.write_text(CORE)
    fd = os.open(str(path), os.O_RDONLY)
    try:
        for bad in (fd, 0):
            with pytest.raises(TypeError, match=r"goat.run_file: the path must be a file name "
                                                r"\(str or os.PathLike\), not an int"):
                goat.run_file(bad)
        with pytest.raises(TypeError, match="not an int"):
            goat.check_file(fd)
        os.fstat(fd)
        os.fstat(0)
        assert os.read(fd, 5) == b"print"
    finally:
        os.close(fd)


def test_paths_as_open_takes_them(tmp_path):
    import pathlib
    path = tmp_path / "a.mg"
    path.write_text(CORE)
    assert goat.run_file(pathlib.Path(path))[0].tolist() == [[11.0]]
    assert goat.run_file(os.fsencode(str(path)))[0].tolist() == [[11.0]]
    assert goat.check_file(pathlib.Path(path)).nodes


BAD_ARGUMENTS = [
    (lambda: goat.run_source(None), TypeError, "goat.run_source: the program must be a str (or UTF-8 bytes), not NoneType"),
    (lambda: goat.run_source(42), TypeError, "goat.run_source: the program must be a str (or UTF-8 bytes), not int"),
    (lambda: goat.check_source(["print 1"]), TypeError, "goat.check_source: the program must be a str"),
    (lambda: goat.load(None), TypeError, "goat.load: the program must be a str"),
    (lambda: goat.run_source("print 1", path=3), TypeError, "goat.run_source: path (the name errors show for the program) must be a str, not int"),
    (lambda: goat.run_source("print 1", path=None), TypeError, "goat.run_source: path (the name errors show for the program) must be a str, not NoneType"),
    (lambda: goat.run_file(None), TypeError, "goat.run_file: the path must be a file name (str or os.PathLike), not NoneType"),
    # found by a breaker: a wrong output had been blamed on the program's path
    (lambda: goat.compile_file("p.mg", 1), TypeError, "goat.compile_file: the output must be a file name (str or os.PathLike), not int"),
    (lambda: goat.run_file(1.5), TypeError, "goat.run_file: the path must be a file name (str or os.PathLike), not float"),
    (lambda: goat.check_file(None), TypeError, "goat.check_file: the path must be a file name"),
    (lambda: goat.run_source("print 1", stdout=object()), TypeError, "goat.run_source: stdout must be a writable text stream (with a write method) or None, not object"),
    (lambda: goat.run_source("print 1", stdout="out.txt"), TypeError, "goat.run_source: stdout must be a writable text stream (with a write method) or None, not str"),
    (lambda: goat.run_source("print 1", stdout=__import__("io").BytesIO()), TypeError, "goat.run_source: stdout must be a text stream, not the binary BytesIO (wrap it in io.TextIOWrapper)"),
    (lambda: goat.run_source("print 1", backend="cuda"), ValueError, "goat.run_source: unknown back end 'cuda' (the back ends: numpy, cupy, auto)"),
    (lambda: goat.run_source("print 1", backend=None), TypeError, "goat.run_source: backend must be the name of a back end"),
    (lambda: goat.run_file("x.mg", backend="torch"), ValueError, "goat.run_file: unknown back end 'torch'"),
    (lambda: goat.run_source("print 1", timings=[]), TypeError, "goat.run_source: timings must be a dict"),
    (lambda: goat.execute("print 1"), TypeError, "goat.execute: program must be a checked Program (from goat.load or goat.check_source), not str"),
    (lambda: goat.execute(goat.load("print 1"), backend="gpu"), ValueError, "goat.execute: unknown back end 'gpu'"),
]


@pytest.mark.parametrize("call,kind,message", BAD_ARGUMENTS,
                         ids=[m[:40] for _, _, m in BAD_ARGUMENTS])
def test_bad_arguments_say_what_was_expected(call, kind, message):
    with pytest.raises(kind) as info:
        call()
    assert str(info.value).startswith(message)
    assert not isinstance(info.value, goat.GoatError)


def test_a_stream_that_cannot_be_written(tmp_path):
    path = tmp_path / "r.txt"
    path.write_text("")
    with open(path) as f:
        with pytest.raises(TypeError, match="this TextIOWrapper is not open for writing"):
            goat.run_source("print 1", stdout=f)
    f = open(path, "w")
    f.close()
    with pytest.raises(ValueError, match="goat.run_source: stdout is closed"):
        goat.run_source("print 1", stdout=f)


def test_bytes_programs_are_utf8():
    assert goat.run_source(b"print 2")[0] == 2
    with pytest.raises(goat.GoatError, match="not UTF-8"):
        goat.run_source(b"print \xff")


# ------------------------------------------------------------------------ deep programs, memory

def test_without_a_big_stack_a_deep_program_is_a_clear_error(monkeypatch):
    """Where no helper thread can be started (a capped address space), checking runs in the
    calling thread at the limit it finds: shallow programs run, deep ones are refused."""
    monkeypatch.setattr(api, "_start_helper", lambda target: None)
    before = process_state()
    assert goat.run_source("print [[1, 2]] @ [[3], [4]]")[0].tolist() == [[11.0]]
    with pytest.raises(goat.GoatError) as info:
        goat.run_source(DEEP_SUM, path="d.mg")
    assert str(info.value) == ("d.mg:1: error: this statement is nested too deeply to check "
                               "within this process's memory")
    assert process_state() == before


def test_the_helper_stack_fits_the_address_space_left(monkeypatch):
    mb = 1024 * 1024
    monkeypatch.setattr(api, "_address_space_left", lambda: None)
    assert api._stack_sizes() == (512 * mb, 256 * mb, 128 * mb, 64 * mb)
    monkeypatch.setattr(api, "_address_space_left", lambda: 600 * mb)
    assert api._stack_sizes() == (256 * mb, 128 * mb, 64 * mb)
    monkeypatch.setattr(api, "_address_space_left", lambda: 300 * mb)
    assert api._stack_sizes() == (64 * mb,)
    monkeypatch.setattr(api, "_address_space_left", lambda: 100 * mb)
    assert api._stack_sizes() == ()


@pytest.mark.parametrize("error", [MemoryError(), SystemError("error return without exception set")])
def test_no_memory_for_a_deeper_recursion_is_a_clear_error(monkeypatch, error):
    """CPython 3.11 reports a frame it has no memory for as a SystemError; either way, the
    statement is named, with what went wrong."""
    from goat.typecheck.checker import Checker

    def fail(self, stmt):
        raise error
    monkeypatch.setattr(Checker, "check_stmt", fail)
    with pytest.raises(goat.GoatError) as info:
        goat.run_source("print 1", path="m.mg")
    assert str(info.value) == ("m.mg:1: error: this statement is too large or nested too "
                               "deeply to check within this process's memory")


def test_another_system_error_is_not_taken_for_memory(monkeypatch):
    from goat.typecheck.checker import Checker

    def fail(self, stmt):
        raise SystemError("something else")
    monkeypatch.setattr(Checker, "check_stmt", fail)
    with pytest.raises(SystemError, match="something else"):
        goat.run_source("print 1")


def baseline_kb():
    """The address space a process that has imported goat and NumPy uses, in kB."""
    code = ("import goat, numpy, goat.api\n"
            "print([l.split()[1] for l in open('/proc/self/status') if l.startswith('VmSize')][0])")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, env=env(), timeout=60)
    return int(p.stdout)


_OPENBLAS_OWN = re.compile(r"^OpenBLAS\b")
CLEAR = re.compile(r"^(\S+:(\d+:)? error: .*(nested too deeply|within this process's memory).*"
                   r"|goat: error: out of memory.*)$")


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="needs Linux's /proc")
@pytest.mark.parametrize("cap_mb", [350, 700])
def test_deep_programs_under_a_memory_cap_run_or_say_why(tmp_path, cap_mb):
    import resource
    base = baseline_kb() // 1024
    if base + 100 > cap_mb:
        pytest.skip("importing NumPy here takes %d MB of address space" % base)
    programs = {
        "exp100k.mg": "print " + "exp(" * 100_000 + "1" + ")" * 100_000 + "\n",
        "exp20k.mg": "print " + "exp(" * 20_000 + "0" + ")" * 20_000 + "\n",
        "sum100k.mg": "print " + " + ".join(["1"] * 100_000) + "\n",
        "minus50k.mg": "print " + "-(" * 50_000 + "[[1]]" + ")" * 50_000 + "\n",
        "blocks.mg": DEEP_BLOCKS,
        "small.mg": CORE,
    }
    for name, text in programs.items():
        (tmp_path / name).write_text(text)

    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    if hard != resource.RLIM_INFINITY and hard < cap_mb * 1024 * 1024:
        pytest.skip("this process may not raise its address space to %d MB" % cap_mb)

    def cap():
        resource.setrlimit(resource.RLIMIT_AS, (cap_mb * 1024 * 1024, hard))

    results = {}
    for name in programs:
        p = subprocess.run([sys.executable, "-m", "goat", "run", name], capture_output=True,
                           cwd=str(tmp_path), env=env(), timeout=300, preexec_fn=cap)
        # OpenBLAS, short of memory for its buffers, may write its own line first (from C,
        # past goat): "OpenBLAS error: Memory allocation still failed after 10 retries, ..."
        # Under a loaded machine OpenBLAS may also give up by itself, exiting with status 1
        # and its line alone ("giving up"): that too says why, in its words.
        text = p.stderr.decode("utf-8", "replace").splitlines()
        lines = [line for line in text if not _OPENBLAS_OWN.match(line)]
        blas_only = bool(text) and not lines
        results[name] = (p.returncode, lines[0] if lines else "", blas_only)
    for name, (status, first, blas_only) in results.items():
        assert status in (0, 1), (name, status, first)
        assert "internal error" not in first and "Traceback" not in first, (name, first)
        if status == 1 and not blas_only:
            assert CLEAR.match(first), (name, first)
    assert results["small.mg"][:2] == (0, "")
    assert results["blocks.mg"][:2] == (0, "")
    assert results["exp20k.mg"][0] == 0 or cap_mb < 400

    # the Python API under the same cap: a GoatError or a MemoryError, never a SystemError
    code = ("import goat\n"
            "for n in (20_000, 100_000):\n"
            "    try:\n"
            "        goat.run_source('print ' + 'exp(' * n + '1' + ')' * n)\n"
            "        print('ran')\n"
            "    except (goat.GoatError, MemoryError) as e:\n"
            "        print(type(e).__name__)\n")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, env=env(),
                       timeout=300, preexec_fn=cap)
    said = p.stderr.decode().splitlines()
    if p.returncode == 1 and said and all(_OPENBLAS_OWN.match(line) for line in said):
        return                          # OpenBLAS gave up by itself (a loaded machine), as above
    assert p.returncode == 0, p.stderr.decode()[-2000:]
    assert set(p.stdout.decode().split()) <= {"ran", "GoatError", "MemoryError"}


def test_executes_progress_argument_is_checked_before_anything_runs():
    """progress=5 had printed the output up to the first loop, then failed inside goat."""
    program = goat.load("print 1\nfor i in 0..2 { print i }\n")
    out = io.StringIO()
    with pytest.raises(TypeError, match="goat.execute: progress must be True, False, None or a "
                                        "goat.progress.Progress, not int"):
        goat.execute(program, stdout=out, progress=5)
    assert out.getvalue() == ""
    for value in (True, False, None):
        assert [float(v) for v in goat.execute(program, progress=value)] == [1.0, 0.0, 1.0]


def test_a_byte_order_mark_at_the_start_of_a_str_program_is_read_past():
    """open(path).read() keeps a file's BOM as U+FEFF; the file itself runs, so does the str."""
    assert [float(v) for v in goat.run_source("\ufeffprint 1\n")] == [1.0]
    with pytest.raises(goat.GoatError, match="unexpected character U\\+FEFF"):
        goat.run_source("print 1\n\ufeffprint 2\n")              # elsewhere it is an error


def _peak_kb(tmp_path, text):
    """Peak resident memory (KB) of goat run on ``text``, in a process of its own."""
    path = tmp_path / "p.mg"
    path.write_text(text)
    code = ("import resource, subprocess, sys\n"
            "subprocess.run([sys.executable, '-m', 'goat', 'run', %r], stdout=subprocess.DEVNULL)\n"
            "sys.stderr.write('%%d' %% resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
            % str(path))
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                       timeout=300)
    return int(p.stderr.strip().splitlines()[-1])


@pytest.mark.skipif(sys.platform != "linux", reason="ru_maxrss in KB on Linux")
def test_goat_run_keeps_nothing_it_printed(tmp_path):
    """goat run had kept a copy of each value printed (and each formatted line) to the end:
    a loop printing a 100x100 value 1,000 times grew by 78 MB."""
    src = ('let w = rand(tensor[100x100], 1)\nfor step in 0..%d {\n    print w\n'
           '    print "step {step}"\n}\n')
    few, many = _peak_kb(tmp_path, src % 50), _peak_kb(tmp_path, src % 600)
    assert many - few < 15_000, (few, many)      # kept, 550 more values would be 44 MB


def test_a_run_time_error_carries_what_was_printed_before_it():
    with pytest.raises(goat.GoatError) as info:
        goat.run_source('print [[1]]\nprint "x"\n'
                        'print gather([[1]], floor(rand(tensor[1x1], 1)) + 3)\n')
    assert info.value.line == 3
    assert [p if isinstance(p, str) else p.tolist() for p in info.value.printed] == [[[1.0]], "x"]
    with pytest.raises(goat.GoatError) as info:
        goat.run_source("print [[1]] +")
    assert info.value.printed is None           # found before anything ran


def test_threads_takes_any_whole_number_type_but_bool():
    import numpy as np
    assert goat.run_source("print [[1]] @ [[2]]", threads=np.int64(2))[0].tolist() == [[2.0]]
    with pytest.raises(TypeError, match="threads"):
        goat.run_source("print 1", threads=True)
