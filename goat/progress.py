"""A progress bar for long top-level ``for`` loops, drawn on standard error.

The evaluator uses it like this::

    progress = Progress(enabled=not quiet)
    out = progress.wrap_output(stdout_writer)          # the program's prints go through this
    bar = progress.loop(total, "for step in 0..200 (line 12)")
    try:
        for ...:
            ...
            bar.advance()
    finally:
        bar.close()

Nothing is drawn when standard error is not a terminal, when ``enabled`` is false, or when the
loop ends within ``delay`` seconds. Otherwise prompt-toolkit's ``ProgressBar`` draws one line
(label, percentage, bar, count/total, time left) on standard error, from a background thread,
and removes it when the loop ends, so that the terminal holds exactly what the program printed.

While a bar is on the terminal that standard output also goes to, a write through
``wrap_output`` first has the bar erased (the renderer's own ``erase``, run in the bar's thread),
then writes and flushes the text in the program's thread (so its errors propagate as usual), and
the bar is drawn again, below the text, once the program has been quiet for a moment.

When the loop ends, ``close`` takes the bar off the terminal for good, whatever the bar's threads
are doing: from then on nothing of prompt-toolkit's reaches the terminal, and if anything of the
bar ever did, the line the cursor is on is erased once more, directly, even when the bar is
believed to be erased already. That belief can be wrong: on Ctrl-C the terminal driver throws away
the output it has not delivered yet (no ``NOFLSH``), which may be the bar's last erase (and the
program's last line), leaving the bar on the screen under the program's next words.

prompt-toolkit is imported only when a bar is about to be drawn: importing this module is cheap.
Whatever goes wrong in the bar's machinery is swallowed: the bar is dropped, never the program.
"""
from __future__ import annotations

import os
import sys
import threading
import time

__all__ = ["Progress", "LoopBar"]

# the bar is drawn again once the program has written nothing for this long (seconds)
_QUIET = 0.02
# how long the program's thread waits for the bar's thread to erase the bar before giving up
_HANDSHAKE_TIMEOUT = 2.0
# the bar's last words, from where the cursor is: erase to the end of the screen, plain attributes,
# lines wrap again, the cursor shows (the bar hides it and turns wrapping off while it draws)
_LAST_ERASE = "\x1b[J\x1b[0m\x1b[?7h\x1b[?25h"


def _isatty(stream) -> bool:
    if stream is None:
        return False
    try:
        return bool(stream.isatty())
    except Exception:  # closed (ValueError), or not a file at all
        return False


def _same_terminal(a, b) -> bool:
    """Whether ``a`` and ``b`` are both terminals, and the same one as far as we can tell."""
    if not (_isatty(a) and _isatty(b)):
        return False
    try:
        return os.fstat(a.fileno()).st_rdev == os.fstat(b.fileno()).st_rdev
    except Exception:
        return True  # two terminals we cannot tell apart: assume the usual case, one terminal


class LoopBar:
    """What ``Progress.loop`` returns when no bar can be shown: does nothing, cheaply."""

    __slots__ = ()

    def advance(self) -> None:
        pass

    def close(self) -> None:
        pass


_NO_BAR = LoopBar()


class _Bar(LoopBar):
    """The bar of one top-level loop, on a terminal.

    Three threads touch it: the program's (``advance``, ``close``, writes through
    ``Progress.wrap_output``); the starter (waits ``delay``, starts the ``ProgressBar``, and at the
    end stops it); and prompt-toolkit's application thread, which draws. ``_mu`` guards the
    shared state; nobody waits for another thread while holding it. ``_tty`` is held while bytes
    go to the terminal, and guards ``_drawn`` and ``_released``: once the bar is released (see
    ``_release``), the application's output is thrown away for good.
    """

    __slots__ = ("n", "total", "label", "shares_stdout", "_progress", "_stream", "_delay",
                 "_t0", "_stop", "_mu", "_tty", "_phase", "_suspended", "_suppress", "_writing",
                 "_last_write", "_resume_pending", "_app", "_loop", "_pb", "_starter", "_closed",
                 "_drawn", "_released")

    def __init__(self, progress: "Progress", stream, total: int, label: str, delay: float,
                 shares_stdout: bool):
        self.n = 0
        self.total = total
        self.label = label
        self.shares_stdout = shares_stdout
        self._progress = progress
        self._stream = stream
        self._delay = delay
        self._t0 = time.perf_counter()
        self._stop = threading.Event()
        self._mu = threading.Lock()
        self._tty = threading.Lock()     # held while bytes go to the terminal
        self._phase = "wait"             # wait -> starting -> running -> done
        self._suspended = True           # the bar is not on the terminal (program may write)
        self._suppress = True            # the application's output is thrown away
        self._writing = 0                # writes of the program in progress
        self._last_write = 0.0
        self._resume_pending = False
        self._app = None
        self._loop = None
        self._pb = None
        self._closed = False
        self._drawn = False              # something of the bar's may have reached the terminal
        self._released = False           # the bar is off the terminal for good
        # A daemon thread, so that the application thread it starts is a daemon too: a bar that
        # somehow is never closed cannot keep the process alive.
        self._starter = threading.Thread(target=self._run, name="goat-progress", daemon=True)
        self._starter.start()

    # -- the program's thread --------------------------------------------------------------

    def advance(self) -> None:
        self.n += 1

    def close(self) -> None:
        """End the bar. When it returns, the bar is off the terminal and stays off (the starter
        releases it, see ``_release``, before it ends). Cheap when called again; a call cut short
        (a second Ctrl-C) is finished by the next one."""
        self._closed = True
        if self._progress._active is self:
            self._progress._active = None
        with self._mu:
            self._stop.set()
        try:
            if self._starter is not threading.current_thread():
                self._starter.join()
        except Exception:
            pass

    def _before_write(self) -> None:
        """Make sure the bar is off the terminal before the program writes to it."""
        with self._mu:
            phase = self._phase
            if phase != "done":
                if self._suspended or phase != "running":
                    return
                self._suspended = True
                loop = self._loop
        if phase == "done":
            # the bar broke down, or is ending: it may still be on the terminal
            self._release()
            return
        done = threading.Event()
        try:
            loop.call_soon_threadsafe(self._erase, done)
        except Exception:
            self._break()
            self._release()
            return
        if not done.wait(_HANDSHAKE_TIMEOUT):
            # the bar's thread does not answer: take the bar off ourselves, for good
            self._break()
            self._release()

    def _after_write(self) -> None:
        with self._mu:
            self._writing = max(0, self._writing - 1)
            self._last_write = time.perf_counter()
            if self._phase != "running" or self._resume_pending:
                return
            self._resume_pending = True
            loop = self._loop
        try:
            loop.call_soon_threadsafe(self._resume_later, _QUIET)
        except Exception:
            self._break()

    def write_through(self, out, text) -> None:
        try:
            with self._mu:
                self._writing += 1
            self._before_write()
            with self._tty:
                out.write(text)
                if text:
                    # (known to ``_release`` as soon as the text is on the terminal)
                    self._progress._line_start = text[-1] == "\n"
                out.flush()
        finally:
            self._after_write()

    # -- any thread --------------------------------------------------------------------------

    def _break(self) -> None:
        """Something failed: no more bar; the program goes on as if there never was one. The
        application draws nothing more; the bar is taken off the terminal by ``_release`` (by the
        starter, which ``_stop`` wakes, or by the program's next write, whichever comes first)."""
        with self._mu:
            self._suspended = True
            self._suppress = True
            self._phase = "done"
        self._stop.set()

    def _release(self) -> None:
        """Take the bar off the terminal for good; from any thread, any number of times.

        Whatever the application's thread is doing (drawing, erasing, stuck), from now on its
        output is thrown away; and if anything of the bar's ever reached the terminal, the line the
        cursor is on is erased, from its start when that is where the bar begins (the bar is
        drawn in column 0, and goes back there after each drawing) or where the program's output
        ends a line: this also erases the ^C that the terminal echoes there. The erasing is done
        even when the bar is believed to be erased already, since the terminal may have dropped
        that erase (on Ctrl-C, the terminal driver throws away what it has not delivered yet).
        Nothing is in the middle of being written meanwhile: the terminal shows the end of a
        drawing, of an erase, or of the program's text."""
        with self._tty:
            if self._released:
                return
            self._released = True
            self._suppress = True
            if not self._drawn:
                return
            at_line_start = not self.shares_stdout or self._progress._line_start
            try:
                self._stream.write(("\r" if at_line_start else "") + _LAST_ERASE)
                self._stream.flush()
            except Exception:
                pass

    # -- the application's thread ------------------------------------------------------------

    def _erase(self, done: threading.Event) -> None:
        try:
            if not self._suppress:
                self._wipe()
            self._suppress = True
        except Exception:
            self._suppress = True
        finally:
            done.set()

    def _wipe(self) -> None:
        """Erase the bar. It starts in column 0 (see ``_try_resume``): going there first also
        erases what the terminal itself echoed meanwhile (the ^C of a Ctrl-C)."""
        self._app.output.write_raw("\r")
        self._app.renderer.erase()

    def _adopt(self) -> None:
        """First thing in the application's thread: its errors are ours (prompt-toolkit's own
        handler would print them and wait for Enter), then show the bar."""
        try:
            self._loop.set_exception_handler(self._on_loop_error)
            # a terminal too narrow for the bar gets an empty line, not "Window too small..."
            from prompt_toolkit.layout import VSplit, Window
            for container in self._app.layout.walk():
                if isinstance(container, VSplit):
                    container.window_too_small = Window()
        except Exception:
            self._break()
            return
        self._try_resume()

    def _on_loop_error(self, loop, context) -> None:
        self._break()

    def _resume_later(self, after: float) -> None:
        try:
            self._loop.call_later(after, self._try_resume)
        except Exception:
            self._break()

    def _try_resume(self) -> None:
        try:
            with self._mu:
                if self._phase != "running":
                    self._resume_pending = False
                    return
                wait = self._last_write + _QUIET - time.perf_counter()
                if self._writing or wait > 0 or not self._progress._line_start:
                    # (a line the program has begun is not interrupted by the bar)
                    self._loop.call_later(max(wait, _QUIET / 2), self._try_resume)
                    return
                self._suspended = False
                self._resume_pending = False
            # the terminal's cursor is where the bar starts: forget what was drawn before
            self._app.renderer.reset()
            self._suppress = False
            self._app.invalidate()
        except Exception:
            self._break()

    def _finish(self) -> None:
        """End the application (the bar is already off the terminal: ``_release``)."""
        self._suppress = True
        try:
            self._app.exit()
        except Exception:
            pass

    # -- the starter thread ------------------------------------------------------------------

    def _run(self) -> None:
        if self._stop.wait(self._delay):
            return
        try:
            if self._start():
                self._stop.wait()
        except BaseException:
            self._break()
        finally:
            with self._mu:
                self._phase = "done"
                self._suspended = True
            if self._pb is not None:
                self._shut(self._pb)

    def _start(self):
        import datetime

        from prompt_toolkit.input import DummyInput
        from prompt_toolkit.layout.dimension import D
        from prompt_toolkit.output.vt100 import Vt100_Output
        from prompt_toolkit.shortcuts import ProgressBar
        from prompt_toolkit.shortcuts.progress_bar.base import ProgressBarCounter
        from prompt_toolkit.shortcuts.progress_bar import formatters as f

        bar = self

        class NoInput(DummyInput):
            """No keys ever (the terminal stays in its own mode, so Ctrl-C is a plain SIGINT);
            unlike DummyInput, never closed, so the application runs until told to exit."""

            @property
            def closed(self) -> bool:
                return False

            def attach(self, input_ready_callback):
                return self.detach()

        class Output(Vt100_Output):
            """Standard error; flushes are thrown away while the bar is suspended, and never
            raise. No bracketed paste (nobody reads the keyboard)."""

            def flush(self) -> None:
                if not self._buffer:
                    return
                with bar._tty:
                    if bar._suppress or bar._released:
                        self._buffer = []
                        return
                    bar._drawn = True
                    try:
                        super().flush()
                    except BaseException:
                        self._buffer = []
                        bar._suppress = True
                        bar._stop.set()

            def enable_bracketed_paste(self) -> None:
                pass

            def disable_bracketed_paste(self) -> None:
                pass

            def ask_for_cpr(self) -> None:
                pass

            def show_cursor(self) -> None:
                # only show it: prompt-toolkit also turns the cursor's blinking off here
                if getattr(self, "_cursor_visible", None) is not True:
                    if "_cursor_visible" in vars(self):   # (prompt-toolkit >= 3.0.37 or so)
                        self._cursor_visible = True
                    self.write_raw("\x1b[?25h")

        stream = self._stream

        def get_size():
            from prompt_toolkit.data_structures import Size
            try:
                columns, rows = os.get_terminal_size(stream.fileno())
            except Exception:
                columns, rows = 0, 0
            return Size(rows=rows or 24, columns=columns or 80)

        class Label(f.Label):
            """The label, cut short with an ellipsis (prompt-toolkit's scrolls) when the
            terminal is narrow."""

            def format(self, progress_bar, progress, width):
                label = progress.label
                return label if len(label) <= width else label[:max(0, width - 1)] + "\u2026"

            def get_width(self, progress_bar):
                n = len(bar.label)
                return D(min=min(n, 12), preferred=n, max=n)

        class Counter(ProgressBarCounter):
            """Counts what ``advance`` counted (read when drawn; never more than the total)."""

            @property
            def items_completed(self):
                return min(bar.n, bar.total)

            @items_completed.setter
            def items_completed(self, value):
                pass

        with self._mu:
            if self._stop.is_set():
                return False
            self._phase = "starting"
            self._suspended = True
            self._suppress = True

        output = Output(stream, get_size, term=os.environ.get("TERM"), enable_cpr=False)
        # "label  45% [=====>     ]  90/200 eta [00:02]": on a narrow terminal, without the bar;
        # on a very narrow one, the label and the count only
        formatters = [Label(), f.Text(" "), f.Percentage(), f.Text(" "), f.Bar(), f.Text(" "),
                      f.Progress(), f.Text(" "), f.Text("eta [", style="class:time-left"),
                      f.TimeLeft(), f.Text("]", style="class:time-left"), f.Text(" ")]
        columns = get_size().columns
        count = 2 * max(3, len(str(self.total))) + 1
        if columns < 50 + count:
            del formatters[3:5]
            if columns < 40 + count:
                formatters = [Label(), f.Text(" "), f.Progress(), f.Text(" ")]
        pb = ProgressBar(output=output, input=NoInput(), formatters=formatters)
        counter = Counter(pb, None, label=self.label, total=self.total)
        counter.start_time = datetime.datetime.now() - datetime.timedelta(
            seconds=time.perf_counter() - self._t0)
        pb.counters.append(counter)
        self._pb = pb
        pb.__enter__()
        if not pb._app_started.wait(_HANDSHAKE_TIMEOUT) or pb.app.loop is None:
            raise RuntimeError("the progress bar did not start")
        with self._mu:
            self._app = pb.app
            self._loop = pb.app.loop
            if self._stop.is_set():
                return False
            self._phase = "running"
            self._resume_pending = True
        self._loop.call_soon_threadsafe(self._adopt)
        return True

    def _shut(self, pb) -> None:
        # first the bar is off the terminal for good, then the application is told to end (what
        # it draws meanwhile, its last drawing included, is thrown away): the one does not wait
        # for the other, which may be slow to answer, or not answer at all
        self._release()
        try:
            app = pb.app
            if not pb._app_started.wait(_HANDSHAKE_TIMEOUT):
                raise RuntimeError("the progress bar did not start")
            self._app = app
            loop = app.loop
            if loop is not None and app.is_running:
                loop.call_soon_threadsafe(self._finish)
        except Exception:
            self._suppress = True
        thread = getattr(pb, "_thread", None)
        if thread is not None:
            thread.join(_HANDSHAKE_TIMEOUT)
            # (older prompt-toolkits make a loop of their own, closed by __exit__, not used here)
            loop = getattr(pb, "_app_loop", None)
            if loop is not None and not thread.is_alive():
                try:
                    loop.close()
                except Exception:
                    pass


class Progress:
    """Progress bars for the top-level loops of one run of a program.

    ``stream``: where bars go (default: ``sys.stderr`` when a loop starts); a bar is shown only
    if ``enabled`` and ``stream`` is a terminal, and only once a loop has run ``delay`` seconds.
    """

    def __init__(self, stream=None, enabled: bool = True, delay: float = 1.0):
        self._stream = stream
        self.enabled = enabled
        self.delay = delay
        self._active = None   # the _Bar of the loop running now, if it may draw
        self._line_start = True  # the program's output so far ends with a newline (or is empty)

    def loop(self, total: int, label: str) -> LoopBar:
        """A top-level loop of ``total`` iterations starts. Call ``advance`` after each
        iteration and ``close`` when the loop ends (in a ``finally``)."""
        if not self.enabled or self._active is not None:
            return _NO_BAR
        try:
            if not total > 0:
                return _NO_BAR
            stream = self._stream if self._stream is not None else sys.stderr
            if not _isatty(stream):
                return _NO_BAR
            term = os.environ.get("TERM", "")
            if term in ("dumb", "unknown"):
                return _NO_BAR
            bar = _Bar(self, stream, int(total), str(label), float(self.delay),
                       _same_terminal(sys.stdout, stream))
        except Exception:
            return _NO_BAR
        self._active = bar
        return bar

    def wrap_output(self, out) -> "_Output":
        """``out`` (with ``write(text)`` and ``flush()``), made to share the terminal with the
        bar: while a bar may be on the terminal that standard output goes to, each write first
        takes the bar off the terminal and is flushed at once; otherwise writes go straight
        to ``out``."""
        return _Output(self, out)


class _Output:
    __slots__ = ("_progress", "_out")

    def __init__(self, progress: Progress, out):
        self._progress = progress
        self._out = out

    def write(self, text):
        progress = self._progress
        bar = progress._active
        if bar is None or not bar.shares_stdout:
            self._out.write(text)
        else:
            bar.write_through(self._out, text)
        if text:
            progress._line_start = text[-1] == "\n"

    def flush(self):
        return self._out.flush()
