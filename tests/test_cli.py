"""The command line as a user meets it: subcommands, exit statuses, bad files."""
import io
import os
import re
import subprocess
import sys

import pytest

from conftest import ROOT, cli

CORE = "print [[1, 2]] @ [[3], [4]]\n"
MEMREF_11 = ("Unranked Memref base@ = 0x\u2026 rank = 2 offset = 0 sizes = [1, 1] strides = [1, 1] "
             "data = \n[[11]]\n")


def write(tmp_path, name, text, mode="w"):
    p = tmp_path / name
    if mode == "w":
        p.write_text(text, encoding="utf-8")
    else:
        p.write_bytes(text)
    return str(p)


def test_run_prints_memrefs(tmp_path):
    status, out, err = cli("run", write(tmp_path, "a.mg", CORE))
    assert (status, out, err) == (0, MEMREF_11, "")


def test_run_reads_standard_input():
    status, out, err = cli("run", "-", stdin=CORE.encode())
    assert (status, out, err) == (0, MEMREF_11, "")


def test_error_line_names_the_path_as_given(tmp_path):
    write(tmp_path, "bad.mg", "let a = [[1, 2]]\nprint a + [[1, 2, 3]]\n")
    status, out, err = cli("run", "bad.mg", cwd=str(tmp_path))
    assert status == 1 and out == ""
    lines = err.splitlines()
    assert lines[0] == ("bad.mg:2: error: cannot add shapes 1x2 and 1x3: dimensions 2 and 3 "
                        "differ and neither is 1")
    assert lines[1] == "2 | print a + [[1, 2, 3]]"
    assert lines[2] == "  |       ^~~~~~~~~~~~~~~"


def test_check_does_not_run_and_shows_shapes(tmp_path):
    path = write(tmp_path, "s.mg", "def f(m: tensor[2x3]) = row_sum(m)\nlet a = [[1, 2, 3], [4, 5, 6]]\n"
                                   "let b = f(a)\nprint b\nlet c = 2 * 3\n")
    assert cli("check", path) == (0, "", "")
    status, out, err = cli("check", "--shapes", path)
    assert status == 0 and err == ""
    assert out.splitlines() == ["def f(m: tensor[2x3]) -> tensor[2x1]", "a : tensor[2x3]",
                                "b : tensor[2x1]", "c : scalar = 6"]
    # a number the program fixes shows its value: a size a type may name (a newcomer saw
    # let D = 64 as a plain scalar)
    # let D = 64, and arithmetic on such (a newcomer's let G = 4 * H had shown no value)
    path = write(tmp_path, "d.mg", "let D = 64\nlet lr = 3e-4\nlet x: tensor[2xD] = zeros()\n"
                                   "let G = 4 * D\nlet s = row_sum(x)\n")
    assert cli("check", "--shapes", path)[1].splitlines() == [
        "D : scalar = 64", "lr : scalar = 0.0003", "x : tensor[2x64]", "G : scalar = 256",
        "s : tensor[2x1]"]


def test_check_reports_errors(tmp_path):
    status, out, err = cli("check", write(tmp_path, "e.mg", "print exp(1, 2)\n"))
    assert status == 1 and err.startswith(str(tmp_path / "e.mg") + ":1: error: exp takes 1 argument, got 2")


def test_help_and_version():
    status, out, _ = cli("--help")
    assert status == 0 and "goat run" in out and "check" in out
    status, out, _ = cli("--version")
    assert status == 0 and out.startswith("goat ")


def test_missing_file():
    status, out, err = cli("run", "no/such/file.mg")
    assert status == 1 and out == ""
    assert err.strip() == "no/such/file.mg: error: cannot read no/such/file.mg: no such directory 'no/such'"


def test_directory_is_not_a_program():
    status, _, err = cli("run", ROOT)
    assert status == 1 and "it is a directory" in err and "Traceback" not in err


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads any file")
def test_unreadable_file(tmp_path):
    path = write(tmp_path, "secret.mg", CORE)
    os.chmod(path, 0)
    status, _, err = cli("run", path)
    assert status == 1 and "permission denied" in err


def test_binary_junk(tmp_path):
    path = write(tmp_path, "junk.mg", b"print 1\n\xff\xfe\x00garbage\n", mode="b")
    status, out, err = cli("run", path)
    assert status == 1 and out == ""
    assert err.splitlines()[0] == path + ":2: error: the file is not UTF-8 text (byte 0xff cannot be decoded)"


def test_bytes_that_are_not_utf8_in_a_comment_are_read_past(tmp_path):
    """A comment's text changes nothing, so a Latin-1 name in one is no error (a C compiler
    reads past it too); the same byte in code or in a string is, pointed at, even after one in
    a comment."""
    path = write(tmp_path, "c.mg", b"# caf\xe9 au lait\nprint [[1]]  # \xff\xfe\n", mode="b")
    status, out, err = cli("run", path)
    assert (status, err) == (0, "") and out.endswith("[[1]]\n")
    for code, col in ((b'print "\xe9"', 8), (b"print [[1\xe9]]", 10), (b"\xe9", 1)):
        path = write(tmp_path, "d.mg", b"# caf\xe9\n" + code + b"\n", mode="b")
        status, out, err = cli("run", path)
        assert status == 1 and out == ""
        lines = err.splitlines()
        assert lines[0] == path + ":2: error: the file is not UTF-8 text (byte 0xe9 cannot be " \
                                  "decoded)"
        assert lines[2] == "  | " + " " * (col - 1) + "^"


def test_nul_byte(tmp_path):
    status, _, err = cli("run", write(tmp_path, "nul.mg", b"print 1\x00\n", mode="b"))
    assert status == 1 and "unexpected character U+0000" in err


def test_runtime_error_keeps_earlier_output(tmp_path):
    # the rows of b are known only when the program runs (read from a file)
    import numpy as np
    np.save(tmp_path / "b.npy", np.arange(6.0).reshape(3, 2))
    src = ("def add_rows(a: tensor[?x2], b: tensor[?x2]) = a + b\nprint [[7]]\n"
           "let b: tensor[?x2] = load(\"b.npy\")\n"
           "print add_rows([[1, 2], [3, 4]], b)\n")
    status, out, err = cli("run", write(tmp_path, "r.mg", src))
    assert status == 1
    assert out.endswith("[[7]]\n")
    assert ":1: error: cannot add shapes 2x2 and 3x2" in err.splitlines()[0]


def test_a_question_mark_parameter_is_checked_when_it_runs_and_by_goat_check(tmp_path):
    """As in the book, a def's operation on a ? size is checked when it runs, even where the
    call's arguments are literals of known shape: the output before it stays.  goat check,
    which runs nothing, reports it (status 1), saying when goat run will."""
    src = ("def add_rows(a: tensor[?x2], b: tensor[?x2]) = a + b\nprint [[7]]\n"
           "print add_rows([[1, 2], [3, 4]], [[1, 2], [3, 4], [5, 6]])\n")
    path = write(tmp_path, "r.mg", src)
    status, out, err = cli("run", path)
    assert (status, out) == (1, MEMREF_11.replace("[[11]]", "[[7]]"))
    first = "r.mg:1: error: cannot add shapes 2x2 and 3x2: dimensions 2 and 3 differ and neither is 1"
    assert err.splitlines()[0].endswith(first)
    assert "note: in add_rows, called on line 3" in err
    status, out, err = cli("check", path)
    assert (status, out) == (1, "")
    assert err.splitlines()[0].endswith(first)
    assert "note: goat run reports this when the operation runs" in err
    # the same def on fitting arguments: nothing to report
    ok = write(tmp_path, "ok.mg", src.replace("[[1, 2], [3, 4], [5, 6]]", "[[5, 6], [7, 8]]"))
    assert cli("check", ok)[:2] == (0, "")


def test_internal_error_is_one_line_and_status_2(monkeypatch, capsys):
    from goat import cli as goat_cli
    from goat.interp import evaluator

    def broken(*a, **k):
        raise ZeroDivisionError("simulated bug")
    monkeypatch.setattr(evaluator.Evaluator, "run", broken)
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(CORE.encode())))
    status = goat_cli.main(["run", "-"])
    err = capsys.readouterr().err
    assert status == 2
    assert err.count("\n") == 1
    assert err.startswith("goat: internal error (ZeroDivisionError: simulated bug); this is a bug in goat")


def test_broken_pipe_is_quiet(tmp_path):
    path = write(tmp_path, "many.mg", "let a = [[1, 2], [3, 4]]\n" + "print a\n" * 20000)
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    p = subprocess.run("%s -m goat run %s | head -1" % (sys.executable, path), shell=True,
                       capture_output=True, env=env, timeout=120)
    assert p.stdout.decode().startswith("Unranked Memref")
    assert b"Traceback" not in p.stderr


def test_command_line_mistakes_are_status_1():
    status, out, err = cli("run")
    assert status == 1 and "goat run: error: the following arguments are required: FILE" in err
    assert err.startswith("usage: goat run ")          # the command's own usage
    status, _, err = cli("frob")
    assert status == 1 and "'frob' is neither a command nor a file; the commands are run, check, compile, repl" in err


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_output_that_cannot_be_written(tmp_path):
    path = write(tmp_path, "a.mg", CORE)
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    with open("/dev/full", "w") as full:
        p = subprocess.run([sys.executable, "-m", "goat", "run", path], stdout=full,
                           stderr=subprocess.PIPE, env=env, timeout=60)
    assert p.returncode == 1
    assert p.stderr.decode().strip() == "goat: error: cannot write output: No space left on device"


def test_no_arguments_reads_a_program_from_standard_input():
    assert cli(stdin=CORE.encode()) == (0, MEMREF_11, "")


def test_a_path_with_a_nul_character():
    import goat
    with pytest.raises(goat.GoatError) as e:
        goat.run_file("a\x00b.mg")
    assert e.value.message == "cannot read 'a\\x00b.mg': a file name cannot contain a NUL character"


def test_a_repl_command_in_a_file_says_so():
    status, _, err = cli("run", "-", stdin=b":env\n")
    assert status == 1 and "commands such as :env work only in the REPL" in err


def test_output_is_utf8_whatever_the_locale(tmp_path):
    path = write(tmp_path, "a.mg", CORE)
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""),
               PYTHONIOENCODING="latin-1")
    p = subprocess.run([sys.executable, "-m", "goat", "run", path], capture_output=True, env=env,
                       timeout=60)
    assert p.returncode == 0 and p.stdout == MEMREF_11.encode("utf-8")


def test_deep_stack_calls_in_threads_keep_the_recursion_limit():
    import threading
    import goat
    before = sys.getrecursionlimit()
    deep = "print " + " + ".join(["1"] * 20_000)
    errors = []

    def work(src):
        try:
            for _ in range(3):
                goat.run_source(src)
        except Exception as e:       # pragma: no cover - the failure being tested for
            errors.append(e)
    threads = [threading.Thread(target=work, args=(deep,)),
               threading.Thread(target=work, args=("print 1\n" * 2000,))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert sys.getrecursionlimit() == before


@pytest.mark.parametrize("how, status, said", [("SIGTERM", 143, b"goat: terminated\n"),
                                               ("SIGHUP", 129, b"goat: hung up\n")])
def test_sigterm_unwinds_a_save_and_says_terminated(tmp_path, how, status, said):
    """kill, timeout and job schedulers send SIGTERM, a closing terminal SIGHUP: goat stops as
    on Ctrl-C -- the temporary file of a save in progress removed, the file saved before
    intact -- and says so, with status 143 (128 + 15) or 129 (128 + 1).  SIGHUP had left the
    temporary files (found by a breaker)."""
    import signal
    import time
    import numpy as np
    (tmp_path / "s.mg").write_text(
        'let w = rand(tensor[3000x1000], 1)\nfor i in 0 .. 1000 {\n    save(w, "w.npy")\n}\n')
    p = subprocess.Popen([sys.executable, "-m", "goat", "run", "s.mg"], cwd=str(tmp_path),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.time() + 60
    while not (tmp_path / "w.npy").exists() and time.time() < deadline:
        time.sleep(0.005)
    time.sleep(0.05)
    p.send_signal(getattr(signal, how))
    _, err = p.communicate(timeout=60)
    assert (p.returncode, err) == (status, said)
    assert sorted(os.listdir(tmp_path)) == ["s.mg", "w.npy"]
    assert np.load(tmp_path / "w.npy").shape == (3000, 1000)


def test_compile_says_f32_is_for_goat_run(tmp_path):
    status, out, err = cli("compile", "--aot", "--dtype", "f32", write(tmp_path, "a.mg", CORE))
    assert (status, out) == (1, "")
    assert err == ("goat compile: error: --aot compiles for this machine's processor, in "
                   "float64 only; --dtype f32 runs with goat run --dtype f32\n")


def test_an_empty_file_name_is_quoted(tmp_path):
    status, out, err = cli("run", "")
    assert (status, out, err) == (1, "", "'': error: cannot read '': no such file\n")



def test_the_library_is_interrupted_by_interrupt_main_and_stays_usable():
    """A timer's _thread.interrupt_main() (no signal) stops a long run_source within a
    moment; the hook for unraisable exceptions is as it was, and the next call works."""
    import _thread
    import threading
    import time
    import goat
    hook = sys.unraisablehook
    timer = threading.Timer(0.3, _thread.interrupt_main)
    timer.start()
    start = time.time()
    with pytest.raises(KeyboardInterrupt):
        goat.run_source("var s = 0\nfor i in 0 .. 100000000 {\n    s = s + i\n}\nprint s\n")
    assert time.time() - start < 10
    time.sleep(0.2)
    assert sys.unraisablehook is hook
    assert goat.run_source("print [[1]] + 1\n")[0].tolist() == [[2.0]]


def test_an_executable_or_an_array_file_in_a_programs_place(tmp_path):
    """goat run on the executable goat compile made, or on a .npy file, says what the file is
    and what to do (it had echoed the file's bytes as a line that is not UTF-8); a missing
    NAME beside NAME.mg asks whether that was meant."""
    exe = tmp_path / "prog"
    exe.write_bytes(b"\x7fELF\x02\x01\x01\x00" + bytes(64))
    status, out, err = cli("run", "prog", cwd=str(tmp_path))
    assert (status, out, err) == (1, "", "prog: error: prog is not a goat program: it is a "
                                         "compiled executable (run it as ./prog)\n")
    status, out, err = cli("run", str(exe), cwd=str(tmp_path))
    assert err.endswith("(run it as %s)\n" % exe)                  # a path as it is
    import numpy as np
    np.save(tmp_path / "w.npy", np.zeros(3))
    status, out, err = cli("check", "w.npy", cwd=str(tmp_path))
    assert (status, err) == (1, "w.npy: error: w.npy is not a goat program: it is a NumPy array "
                                'file (a program reads it with load("w.npy"))\n')
    (tmp_path / "train.mg").write_text("print 1\n")
    (tmp_path / "train.csv").write_text("1\n")        # a program is the .mg, not the first
    (tmp_path / "train.log").write_text("1\n")        # by bytes (found by a reviewer)
    status, out, err = cli("run", "train", cwd=str(tmp_path))
    assert (status, err) == (1, "train: error: cannot read train: no such file; did you mean "
                                "train.mg?\n")
    # found by a newcomer: a slip in the name itself had no suggestion
    for slip in ("train.m", "trian.mg", "Train.mg", "./tain.mg"):
        status, out, err = cli("run", slip, cwd=str(tmp_path))
        near = os.path.join(os.path.dirname(slip), "train.mg")
        assert (status, err) == (1, "%s: error: cannot read %s: no such file; did you mean "
                                    "%s?\n" % (slip, slip, near))
    status, out, err = cli("run", "tests.mg", cwd=str(tmp_path))
    assert (status, err) == (1, "tests.mg: error: cannot read tests.mg: no such file\n")


def test_check_refuses_a_dtype_without_cost(tmp_path):
    """goat check --dtype f32 had been accepted and ignored (as --portable without --aot is
    refused); with --cost it sets the precision counted."""
    path = write(tmp_path, "t.mg", "print [[1]]\n")
    status, out, err = cli("check", "--dtype", "f32", path)
    assert (status, out) == (1, "")
    assert err == ("goat check: error: --dtype needs --cost (it sets the precision the cost "
                   "counts bytes and FLOP rates in; checking is the same in either)\n")
    status, out, err = cli("check", "--cost", "--dtype", "f32", path)
    assert status == 0 and out.splitlines()[-1].startswith("--backend auto would choose")


def test_run_aot_refuses_threads_it_would_ignore(tmp_path):
    """The compiled program computes on one thread; --threads 4 had been accepted and ignored
    (and its bits differed from goat run --threads 4's)."""
    path = write(tmp_path, "t.mg", "print [[1]]\n")
    status, out, err = cli("run", "--aot", "--threads", "4", path)
    assert (status, out) == (1, "")
    assert err == ("goat run: error: --threads cannot be combined with --aot: a compiled program computes "
                   "its matrix products on one thread, as goat run does by default (so that its "
                   "bits are goat run's)\n")


@pytest.mark.parametrize("argv, cmd, said", [
    (["compile", "--aot", "--threads", "2", "p.mg"], "compile", "--threads is"),
    (["run", "--frob", "p.mg"], "run", "--frob is"),
    (["--frob", "p.mg"], "run", "--frob is"),         # goat FILE is goat run FILE
    (["check", "--threads", "2", "p.mg"], "check", "--threads is"),
    (["repl", "--time", "--quiet"], "repl", "--time or --quiet are"),
])
def test_an_option_a_command_does_not_take_is_named(tmp_path, argv, cmd, said):
    """It had read 'unrecognized arguments: --threads p.mg' (the 2 taken as the file), after
    the usage of goat as a whole rather than the command's."""
    write(tmp_path, "p.mg", "print [[1]]\n")
    status, out, err = cli(*argv, cwd=str(tmp_path))
    assert (status, out) == (1, "")
    assert err.startswith("usage: goat %s " % cmd)
    assert err.splitlines()[-1] == (
        "goat %s: error: %s not an option of goat %s (goat %s --help lists them)"
        % (cmd, said, cmd, cmd))


@pytest.mark.parametrize("argv", [["run", "a.mg", "b.mg"], ["a.mg", "b.mg"],
                                  ["check", "a.mg", "b.mg"]])
def test_a_second_file_is_named_as_one_too_many(tmp_path, argv):
    write(tmp_path, "a.mg", "print [[1]]\n")
    write(tmp_path, "b.mg", "print [[2]]\n")
    status, out, err = cli(*argv, cwd=str(tmp_path))
    assert (status, out) == (1, "")
    cmd = argv[0] if argv[0] in ("run", "check") else "run"
    assert err.splitlines()[-1] == "goat %s: error: one FILE at a time (also given: b.mg)" % cmd


def test_a_file_given_to_the_repl_runs_into_the_session_first(tmp_path):
    """goat repl FILE runs FILE's statements into the session, then reads the REPL's input
    (as python -i does), --let setting its lets; a FILE that fails is shown, status 1."""
    write(tmp_path, "d.mg", "let lr = 0.1\nlet w = [[1, 2]] * lr\nprint w\n")
    status, out, err = cli("repl", "--let", "lr=0.5", "d.mg", stdin=b"w * 10\n",
                           cwd=str(tmp_path))
    assert status == 0, err
    lines = out.splitlines()
    assert lines[1] == "[[0.5,   1]]" and lines[2] == "loaded d.mg: 3 statements"
    assert lines[3:] == ["goat> w * 10", "tensor[1x2]", "[[ 5  10]]"]
    status, out, err = cli("repl", "--let", "lx=2", "d.mg", stdin=b"w\n", cwd=str(tmp_path))
    assert status == 1
    assert out.splitlines()[0] == ("d.mg: error: cannot set lx: d.mg has no top-level let or "
                                   "var lx = NUMBER (those holding a number: lr)")
    assert "unknown name 'w'" in out
    status, out, err = cli("repl", "d.mg", "e.mg", cwd=str(tmp_path))
    assert (status, out) == (1, "")
    assert err.splitlines()[-1] == "goat repl: error: one FILE at a time (also given: e.mg)"
    status, out, err = cli("repl", "--let", "lr=1", stdin=b"", cwd=str(tmp_path))
    assert status == 1 and err.splitlines()[-1] == (
        "goat repl: error: --let sets a top-level let of a FILE: goat repl --let lr=... FILE")


def test_an_empty_path_for_a_programs_text_is_the_default_name():
    """Found by a breaker: run_source(text, path="") showed errors as goat's own, goat:1:."""
    import goat
    with pytest.raises(goat.GoatError) as info:
        goat.run_source("print [[1, 2]] + [[1, 2, 3]]\n", path="")
    assert str(info.value).startswith("<string>:1: error: cannot add shapes 1x2 and 1x3")


@pytest.mark.parametrize("aot", [False, True])
def test_nohup_keeps_a_run_going_when_its_terminal_closes(tmp_path, aot):
    """Found by a reviewer: goat took SIGHUP over even where nohup had ignored it, so a
    nohup'd training run died (status 129) when its terminal closed; a compiled program too."""
    import signal
    import time
    if aot:
        pytest.importorskip("llvmlite")
    # some 1.5 s of work either way
    (tmp_path / "s.mg").write_text(
        "var n = [[0]]\nfor i in 0..6000 {\n    n += col_sum(row_sum(randn(tensor[100x100], i)))"
        "\n}\nprint n\n" if aot else
        "var n = 0\nfor i in 0..1500000 {\n    n += 1\n}\nprint n\n")
    env = dict(os.environ, GOAT_CACHE=str(tmp_path / "cache"))
    args = [sys.executable, "-m", "goat", "run"] + (["--aot"] if aot else []) + ["s.mg"]
    if aot:         # compiled and cached first, so that the signal reaches the run itself
        assert subprocess.run(args, cwd=str(tmp_path), env=env, capture_output=True).returncode == 0
    p = subprocess.Popen(args, cwd=str(tmp_path), env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE,
                         preexec_fn=lambda: signal.signal(signal.SIGHUP, signal.SIG_IGN))
    time.sleep(0.6)
    p.send_signal(signal.SIGHUP)
    if aot:
        for child in _children(p.pid):
            os.kill(child, signal.SIGHUP)
    assert p.poll() is None             # still running when the signal came
    out, err = p.communicate(timeout=120)
    assert (p.returncode, err) == (0, b"")
    assert out.startswith(b"Unranked Memref") and (aot or out.endswith(b"[1.5e+06]\n"))


def _children(pid):
    """The processes whose parent is ``pid`` (Linux's /proc)."""
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open("/proc/%s/stat" % entry) as f:
                    if int(f.read().rsplit(")", 1)[1].split()[1]) == pid:
                        out.append(int(entry))
            except (OSError, ValueError, IndexError):
                pass
    return out


def test_check_reports_its_times(tmp_path):
    """Found by a newcomer: goat check --time was refused, where a slow check is what one
    wants to time."""
    write(tmp_path, "a.mg", "let a = [[1, 2]]\nprint a * 2\n")
    status, out, err = cli("check", "--time", "a.mg", cwd=str(tmp_path))
    assert (status, out) == (0, "")
    assert re.fullmatch(r"goat: parse \d+\.\d{3} s, check \d+\.\d{3} s\n", err), err
