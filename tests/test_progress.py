"""The progress bar of long top-level loops (goat/progress.py): silent off a terminal, drawn on a
real pseudo-terminal without spoiling the program's output, and gone when the loop ends."""
import io
import os
import pty
import select
import subprocess
import sys
import termios
import textwrap
import threading
import time

import pytest

from conftest import ROOT
import goat.progress as progress_module
from goat.diagnostics import GoatError
from goat.progress import LoopBar, Progress

LABEL = "for step in 0..300 (line 3)"


def _drain(fd, timeout=0.0):
    """Everything readable from ``fd`` (a pty's master) within ``timeout`` seconds."""
    data = b""
    end = time.monotonic() + timeout
    while True:
        wait = max(0.0, end - time.monotonic())
        r, _, _ = select.select([fd], [], [], wait)
        if not r:
            return data
        try:
            chunk = os.read(fd, 65536)
        except OSError:  # EIO: the other side is closed
            return data
        if not chunk:
            return data
        data += chunk


def _drain_until(fd, want: bytes, timeout=10.0):
    """What ``fd`` gives until ``want`` appears in it or ``timeout`` seconds pass (a loaded
    machine may draw the bar late)."""
    data = b""
    end = time.monotonic() + timeout
    while want not in data and time.monotonic() < end:
        data += _drain(fd, 0.1)
    return data


@pytest.fixture
def tty():
    """A pseudo-terminal: (master fd, the slave as a text stream)."""
    master, slave = pty.openpty()
    stream = os.fdopen(slave, "w")
    yield master, stream
    stream.close()
    os.close(master)


@pytest.fixture(autouse=True)
def no_thread_is_left():
    """Every test ends with the threads it began with (close() joined the bar's threads)."""
    before = set(threading.enumerate())
    yield
    assert set(threading.enumerate()) <= before


def _run_loop(progress, n, pause=0.0):
    bar = progress.loop(n, LABEL)
    try:
        for _ in range(n):
            if pause:
                time.sleep(pause)
            bar.advance()
    finally:
        bar.close()
    return bar


# -- not a terminal, or not wanted: nothing at all ---------------------------------------------

def test_not_a_terminal_writes_nothing():
    threads = threading.active_count()
    text = io.StringIO()
    r, w = os.pipe()
    pipe = os.fdopen(w, "w")
    try:
        for stream in (text, pipe):
            p = Progress(stream=stream, delay=0)
            bar = _run_loop(p, 50, pause=0.002)
            bar.close()                                   # idempotent
            out = io.StringIO()
            p.wrap_output(out).write("x\n")
            assert out.getvalue() == "x\n"
        pipe.flush()
        assert text.getvalue() == ""
        assert _drain(r) == b""
        assert threading.active_count() == threads       # no thread was even started
    finally:
        pipe.close()
        os.close(r)


def test_a_closed_or_missing_stream_writes_nothing(monkeypatch):
    closed = io.StringIO()
    closed.close()
    assert type(Progress(stream=closed, delay=0).loop(20, LABEL)) is LoopBar
    monkeypatch.setattr(sys, "stderr", None)             # the default stream, absent
    assert type(Progress(delay=0).loop(20, LABEL)) is LoopBar


def test_disabled_on_a_terminal_writes_nothing(tty):
    master, stream = tty
    _run_loop(Progress(stream=stream, enabled=False, delay=0), 40, pause=0.005)
    assert _drain(master, 0.1) == b""


def test_a_loop_shorter_than_the_delay_shows_nothing(tty):
    master, stream = tty
    p = Progress(stream=stream, delay=2)
    _run_loop(p, 30, pause=0.002)                          # ~0.06 s
    assert _drain(master, 0.1) == b""


def test_an_empty_loop_and_a_nested_loop_get_no_bar(tty):
    master, stream = tty
    p = Progress(stream=stream, delay=10)
    assert type(p.loop(0, LABEL)) is LoopBar
    outer = p.loop(5, LABEL)
    assert type(outer) is not LoopBar
    inner = p.loop(5, "for i in 0..5 (line 4)")
    assert type(inner) is LoopBar                         # the no-op bar
    inner.advance()
    inner.close()
    outer.close()
    assert type(p.loop(5, LABEL)) is not LoopBar          # the next top-level loop may have one
    p._active.close()


# -- on a terminal, in this process --------------------------------------------------------------

def _screen(data, cols=80, rows=24):
    pyte = pytest.importorskip("pyte")     # a test extra: tests without it skip
    screen = pyte.Screen(cols, rows)
    pyte.ByteStream(screen).feed(data)
    return screen


def test_the_bar_is_drawn_then_removed(tty):
    pytest.importorskip("pyte")
    master, stream = tty
    p = Progress(stream=stream, delay=0.05)
    bar = p.loop(100, LABEL)
    seen = b""
    try:
        for _ in range(100):
            time.sleep(0.005)
            bar.advance()
            seen += _drain(master)
    finally:
        bar.close()
    seen += _drain(master, 0.1)
    assert LABEL.encode() in seen
    assert b"/100" in seen                                 # count/total
    assert b"eta" in seen                                  # time left
    screen = _screen(seen)
    assert all(not line.strip() for line in screen.display), screen.display
    assert not screen.cursor.hidden
    assert (screen.cursor.x, screen.cursor.y) == (0, 0)


class _Tty(io.StringIO):
    """Says it is a terminal; fails when written to."""

    def isatty(self):
        return True

    def write(self, text):
        raise OSError(5, "Input/output error")


def test_a_failing_terminal_does_not_disturb_the_program(capfd):
    p = Progress(stream=_Tty(), delay=0)
    out = io.StringIO()
    w = p.wrap_output(out)
    bar = p.loop(60, LABEL)
    try:
        for i in range(60):
            time.sleep(0.003)
            w.write("%d\n" % i)
            bar.advance()
    finally:
        bar.close()
    assert out.getvalue() == "".join("%d\n" % i for i in range(60))
    assert capfd.readouterr() == ("", "")


def test_write_errors_propagate_and_the_bar_still_closes(tty, monkeypatch):
    master, stream = tty

    class Failing:
        def write(self, text):
            raise GoatError("cannot write output: No space left on device")

        def flush(self):
            pass

    monkeypatch.setattr(sys, "stdout", stream)            # stdout shares the bar's terminal
    p = Progress(stream=stream, delay=0)
    w = p.wrap_output(Failing())
    bar = p.loop(10, LABEL)
    try:
        time.sleep(0.3)                                   # the bar is up
        with pytest.raises(GoatError):
            w.write("x\n")
        with pytest.raises(BrokenPipeError):
            p.wrap_output(_BrokenPipe()).write("y\n")
    finally:
        bar.close()
    assert LABEL.encode() in _drain_until(master, LABEL.encode())


class _BrokenPipe:
    def write(self, text):
        raise BrokenPipeError(32, "Broken pipe")

    def flush(self):
        pass


# -- the bar's threads and the terminal, forced into their worst orders -------------------------

def _wait_for(master, needle, timeout=20.0):
    """What the terminal received, up to and including ``needle`` (and a little more)."""
    seen = b""
    end = time.monotonic() + timeout
    while needle not in seen:
        assert time.monotonic() < end, seen
        seen += _drain(master, 0.05)
    return seen


class _Lossy:
    """The terminal (a pty's slave), losing what is written while ``losing``: what the terminal
    driver does on Ctrl-C to the output it has not delivered yet (unless NOFLSH)."""

    def __init__(self, stream):
        self._stream = stream
        self.losing = False

    def write(self, text):
        if not self.losing:
            self._stream.write(text)
        return len(text)

    def flush(self):
        self._stream.flush()

    def fileno(self):
        return self._stream.fileno()

    def isatty(self):
        return True


def test_close_erases_the_bar_even_if_the_terminal_lost_the_erase(tty, monkeypatch):
    # Ctrl-C just after a line of the program's: the terminal throws away the bar's erase and the
    # line, echoes ^C on the bar (which it still shows), and the program closes the bar, believed
    # to be erased already, then writes
    pytest.importorskip("pyte")
    master, slave = tty
    terminal = _Lossy(slave)
    monkeypatch.setattr(sys, "stdout", terminal)          # the program's output goes there too
    p = Progress(stream=terminal, delay=0)
    w = p.wrap_output(terminal)
    bar = p.loop(100, LABEL)
    try:
        seen = _wait_for(master, LABEL.encode())           # the bar is up
        monkeypatch.setattr(progress_module, "_QUIET", 60.0)  # and does not come back by itself
        terminal.losing = True
        w.write("step 1\n")                               # the bar is erased, the line written...
        terminal.losing = False                            # ... and both are lost
        slave.write("^C")
        slave.flush()
    finally:
        bar.close()
    w.write("interrupted\n")
    w.flush()
    screen = _screen(seen + _drain(master, 0.1))
    assert _lines(screen) == ["interrupted"], screen.display
    assert not screen.cursor.hidden


def test_close_takes_the_bar_off_even_when_its_thread_does_not_answer(tty, monkeypatch):
    # a loaded machine: the thread that draws does not get to run before close() gives up on it
    pytest.importorskip("pyte")
    master, stream = tty
    monkeypatch.setattr(progress_module, "_HANDSHAKE_TIMEOUT", 0.2)
    p = Progress(stream=stream, delay=0)
    bar = p.loop(100, LABEL)
    stall = threading.Event()
    try:
        seen = _wait_for(master, LABEL.encode())
        bar._loop.call_soon_threadsafe(stall.wait)         # the application's thread hangs
        bar.advance()
        bar.close()
        screen = _screen(seen + _drain(master, 0.1))
        assert _lines(screen) == [], screen.display        # off the terminal when close() returns
        assert not screen.cursor.hidden
    finally:
        stall.set()
        bar._pb._thread.join(10)
    assert _drain(master, 0.2) == b""                      # and nothing of the bar's came after


def test_a_write_takes_the_bar_off_when_its_thread_does_not_answer(tty, monkeypatch):
    # the program writes while the thread that draws does not run: the program's thread does not
    # wait for it forever, nor writes over the bar
    pytest.importorskip("pyte")
    master, stream = tty
    monkeypatch.setattr(sys, "stdout", stream)
    monkeypatch.setattr(progress_module, "_HANDSHAKE_TIMEOUT", 0.2)
    p = Progress(stream=stream, delay=0)
    w = p.wrap_output(stream)
    bar = p.loop(100, LABEL)
    stall = threading.Event()
    try:
        seen = _wait_for(master, LABEL.encode())
        bar._loop.call_soon_threadsafe(stall.wait)
        w.write("step 1\n")
        w.write("step 2\n")
        screen = _screen(seen + _drain(master, 0.1))
        assert _lines(screen) == ["step 1", "step 2"], screen.display
        assert not screen.cursor.hidden
    finally:
        stall.set()
        bar.close()
        bar._pb._thread.join(10)
    assert _drain(master, 0.2) == b""


# -- a real program on a real pseudo-terminal ---------------------------------------------------

SCRIPT = textwrap.dedent('''\
    import signal, sys, termios, time
    from goat.progress import Progress

    # (a test run started in the background inherits SIGINT ignored)
    signal.signal(signal.SIGINT, signal.default_int_handler)

    class Out:                                 # like goat's standard output writer
        def write(self, text):
            sys.stdout.buffer.write(text.encode("utf-8"))
        def flush(self):
            sys.stdout.flush()

    n, every, pause = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
    attrs = termios.tcgetattr(2)
    progress = Progress(delay=0.2)
    out = progress.wrap_output(Out())
    out.write("before the loop\\n")
    bar = progress.loop(n, "for step in 0..%d (line 3)" % n)
    try:
        for i in range(n):
            time.sleep(pause)
            if i % every == 0:
                out.write("step %d loss %.3f\\n" % (i, 1.0 / (i + 1)))
            bar.advance()
    except KeyboardInterrupt:
        bar.close()
        out.write("interrupted; terminal %s\\n"
                  % ("unchanged" if termios.tcgetattr(2) == attrs else "CHANGED"))
        out.flush()
        sys.exit(130)
    finally:
        bar.close()
    out.write("after the loop; terminal %s\\n"
              % ("unchanged" if termios.tcgetattr(2) == attrs else "CHANGED"))
    out.flush()
''')


def _expected(n, every):
    return (["before the loop"]
            + ["step %d loss %.3f" % (i, 1.0 / (i + 1)) for i in range(0, n, every)]
            + ["after the loop; terminal unchanged"])


@pytest.fixture
def script(tmp_path):
    path = tmp_path / "loop.py"
    path.write_text(SCRIPT)
    return str(path)


def _env():
    return dict(os.environ, PYTHONPATH=ROOT, TERM="xterm")


def _spawn(script, *args):
    pexpect = pytest.importorskip("pexpect")
    pytest.importorskip("pyte")
    child = pexpect.spawn(sys.executable, [script, *map(str, args)], env=_env(),
                          dimensions=(24, 80), timeout=20)
    child.logfile_read = io.BytesIO()                     # everything the terminal received
    return child


def _read_all(child):
    child.expect(pytest.importorskip("pexpect").EOF)
    child.close()
    return child.logfile_read.getvalue()


def _lines(screen):
    return [line.rstrip() for line in screen.display if line.strip()]


def test_output_and_bar_share_the_terminal(script):
    # 300 iterations of ~3 ms, a line every 40: the bar comes and goes between the lines
    child = _spawn(script, 300, 40, 0.003)
    data = _read_all(child)
    assert child.exitstatus == 0, data
    assert LABEL.encode() in data                          # the bar was drawn
    screen = _screen(data)
    assert _lines(screen) == _expected(300, 40)            # every line, whole, in order; no bar
    assert not screen.cursor.hidden
    assert (screen.cursor.x, screen.cursor.y) == (0, len(_expected(300, 40)))


def test_a_stream_of_output_stays_intact(script):
    # a line every iteration: the bar stays away while the program writes
    child = _spawn(script, 150, 1, 0.002)
    data = _read_all(child)
    assert child.exitstatus == 0
    screen = _screen(data, rows=200)
    assert _lines(screen) == _expected(150, 1)


def test_stdout_to_a_file_and_the_bar_on_the_terminal(script, tmp_path):
    master, slave = pty.openpty()
    log = tmp_path / "log.txt"
    try:
        with open(log, "wb") as f:
            proc = subprocess.Popen([sys.executable, script, "300", "40", "0.003"], stdin=slave,
                                    stdout=f, stderr=slave, env=_env())
        os.close(slave)
        slave = None
        data = b""
        while proc.poll() is None:
            data += _drain(master, 0.05)
        data += _drain(master, 0.1)
    finally:
        if slave is not None:
            os.close(slave)
        os.close(master)
    assert proc.returncode == 0
    assert LABEL.encode() in data
    assert log.read_text() == "".join(line + "\n" for line in _expected(300, 40))
    assert b"\x1b" not in log.read_bytes()
    screen = _screen(data)
    assert _lines(screen) == []                             # the bar is gone again
    assert not screen.cursor.hidden


def test_ctrl_c_in_the_loop_leaves_the_terminal_sane(script):
    child = _spawn(script, 5000, 100, 0.002)
    child.expect_exact("for step in 0..5000 (line 3)")     # the bar is up
    time.sleep(0.1)
    child.sendintr()
    data = _read_all(child)
    assert child.exitstatus == 130, data
    screen = _screen(data)
    lines = _lines(screen)
    assert lines[0] == "before the loop"
    # (the terminal echoes ^C where the cursor is: on the bar's line, erased with the bar; or, if
    # the program was writing just then, at the start of the next line. It also throws away what
    # it has not delivered yet: a line of the program's may be missing, and the bar's erase before
    # it, which close() makes up for)
    assert lines[-1] in ("interrupted; terminal unchanged", "^Cinterrupted; terminal unchanged")
    assert all(line.startswith("step ") for line in lines[1:-1]), lines
    assert not screen.cursor.hidden


# -- costs ------------------------------------------------------------------------------------

def test_advance_costs_little_while_no_bar_is_shown(tty, capsys):
    master, stream = tty
    n = 1_000_000
    for name, progress in (("not a terminal", Progress(stream=io.StringIO())),
                           ("terminal, before the delay", Progress(stream=stream, delay=60))):
        bar = progress.loop(n, LABEL)
        advance = bar.advance
        t = time.perf_counter()
        for _ in range(n):
            advance()
        ns = (time.perf_counter() - t) / n * 1e9
        bar.close()
        with capsys.disabled():
            print("\nadvance() %s: %.0f ns/call" % (name, ns))


def test_importing_the_module_does_not_import_prompt_toolkit():
    code = ("import sys, io, goat.progress as g; b = g.Progress(stream=io.StringIO()).loop(5, 'x');"
            "b.advance(); b.close(); print('prompt_toolkit' in sys.modules)")
    p = subprocess.run([sys.executable, "-X", "importtime", "-c", code], capture_output=True,
                       text=True, env=dict(os.environ, PYTHONPATH=ROOT), timeout=60)
    assert p.stdout.strip() == "False"
    assert "prompt_toolkit" not in p.stderr


# ---------------------------------------------------------------------------------------------
# through `goat run`: a top-level loop longer than a second shows the bar on a terminal only

# about 10 microseconds an iteration: 2 to 3 seconds in all, well past the bar's 1 s delay
_LONG = ("let big = ones(tensor[100x100])\nvar x = [[0]]\nfor i in 0..250000 {\n"
         "    x += col_sum(row_sum(big * i)) / 10000\n}\nprint \"x = {x:.0f}\"\n")
_LONG_RESULT = "x = %d" % (250000 * 249999 // 2)


def _goat_argv(*args):
    return [sys.executable, "-m", "goat", *args]


def test_goat_run_shows_the_bar_on_a_terminal(tmp_path):
    import pexpect
    prog = tmp_path / "long.mg"
    prog.write_text(_LONG)
    env = dict(os.environ, PYTHONPATH=ROOT, TERM="xterm")
    child = pexpect.spawn(_goat_argv("run", str(prog))[0], _goat_argv("run", str(prog))[1:],
                          env=env, dimensions=(24, 100), timeout=60, encoding="utf-8")
    child.expect(r"for i in 0\.\.250000 \(line 3\)")
    child.expect(_LONG_RESULT)
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0


def test_goat_run_quiet_and_redirected_show_no_bar(tmp_path):
    import pexpect
    prog = tmp_path / "long.mg"
    prog.write_text(_LONG)
    env = dict(os.environ, PYTHONPATH=ROOT, TERM="xterm")
    argv = _goat_argv("run", "--quiet", str(prog))
    child = pexpect.spawn(argv[0], argv[1:], env=env, dimensions=(24, 100), timeout=60,
                          encoding="utf-8")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    assert "for i in" not in child.before and _LONG_RESULT in child.before
    p = subprocess.run(_goat_argv("run", str(prog)), capture_output=True, text=True, env=env,
                       timeout=60)
    assert (p.returncode, p.stdout, p.stderr) == (0, _LONG_RESULT + "\n", "")
