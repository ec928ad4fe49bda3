"""The one error type of goat, and how it is shown to a person.

Every problem a user can cause -- a syntax error, a shape error, an unreadable file, a shape
that turns out wrong at run time -- is a :class:`GoatError`.  It renders as the book's line::

    PATH:LINE: error: MESSAGE

followed, when the source is known, by an excerpt with a caret under the offending
expression.  Anything else that escapes is a bug in goat (see :func:`internal_error_line`).
"""
from __future__ import annotations

import os
import re

from bisect import bisect_right

REPORT_URL = "the goat issue tracker"


class Source:
    """A program text and the path it was read from (as the user wrote it).  ``folder`` is
    the absolute folder of that path when the text was read (None for standard input, the
    REPL and other names in <...>): the folder the program's relative file names are
    relative to, however the current folder changes later."""

    __slots__ = ("path", "text", "_lines", "_starts", "folder")

    def __init__(self, path: str, text: str):
        self.path = path
        self.folder = (None if not isinstance(path, str) or not path or path.startswith("<")
                       or path == "-" else os.path.abspath(os.path.dirname(path)))
        if "\r" in text:       # Windows (CRLF) and old Mac (CR) line endings read as newlines
            text = text.replace("\r\n", "\n").replace("\r", "\n")
        self.text = text
        self._lines = None
        self._starts = None

    def line(self, n: int) -> str:
        """Line ``n`` (1-based) without its newline; '' past the end."""
        if self._lines is None:
            self._lines = self.text.split("\n")
        if 1 <= n <= len(self._lines):
            return self._lines[n - 1].rstrip("\r")
        return ""

    def position(self, offset: int):
        """(line, column) of a character offset, both 1-based."""
        if self._starts is None:
            starts = [0]
            find = self.text.find
            i = find("\n")
            while i >= 0:
                starts.append(i + 1)
                i = find("\n", i + 1)
            self._starts = starts
        line = bisect_right(self._starts, offset)
        return line, offset - self._starts[line - 1] + 1


class Loc:
    """Where an expression is written: character offsets ``start``..``end`` (exclusive) in
    ``source``.  Line and column are worked out only when asked for (an error is being shown),
    since the parser makes one Loc per token of a program that may have a few hundred thousand.
    """

    __slots__ = ("source", "start", "end")

    def __init__(self, source, start, end):
        self.source = source
        self.start = start
        self.end = end

    def to(self, other: "Loc") -> "Loc":
        """The span from the start of ``self`` to the end of ``other``."""
        return Loc(self.source, self.start, other.end)

    @property
    def line(self) -> int:
        return self.source.position(self.start)[0]

    @property
    def col(self) -> int:
        return self.source.position(self.start)[1]

    @property
    def end_line(self) -> int:
        return self.source.position(max(self.start, self.end - 1))[0]

    @property
    def end_col(self) -> int:
        """Column just past the last character."""
        return self.source.position(max(self.start, self.end - 1))[1] + (self.end > self.start)

    def __repr__(self):
        return "Loc(%s:%d:%d)" % (getattr(self.source, "path", None), self.line, self.col)


_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")


def _one_line(text: str) -> str:
    """``text`` with each control character (C0, DEL, C1) shown as ``repr`` shows it
    (``\\n``, ``\\x01``); the compiled program's goat_fail.c escapes the same set."""
    return _CONTROL.sub(lambda m: repr(m.group())[1:-1], text)


class GoatError(Exception):
    """A problem in the user's program or input, reported as ``PATH:LINE: error: MESSAGE``.

    ``loc`` may be None (no position known, e.g. an unreadable file); ``path`` then names the
    file.  ``str(err)`` is the first line only; :meth:`render` adds the source excerpt.
    ``printed``: for an error met while the program ran through the Python API, what it had
    printed before (as goat.run_source returns it); None otherwise.
    """

    printed = None

    def __init__(self, message: str, loc: Loc | None = None, path: str | None = None,
                 notes: tuple[str, ...] = ()):
        super().__init__(message)
        self.message = message
        self.loc = loc
        self._path = path
        self.notes = notes

    def __reduce__(self):
        """Pickled whole (a process pool sends it back to the caller): message, position,
        notes and any attribute set on it."""
        return (type(self), (self.message, self.loc, self._path, self.notes), self.__dict__)

    @property
    def path(self) -> str | None:
        if self._path is not None:
            return self._path
        if self.loc is not None:
            return self.loc.source.path
        return None

    @property
    def line(self) -> int | None:
        return self.loc.line if self.loc is not None else None

    def headline(self) -> str:
        """``PATH:LINE: error: MESSAGE``, one line: a newline or other control character in
        the path or the message (from a file name or a format spec as written) shows as its
        escape, ``\\n``."""
        where = self.path or "goat"
        if self.loc is not None:
            where = "%s:%d" % (where, self.loc.line)
        return _one_line("%s: error: %s" % (where, self.message))

    def __str__(self) -> str:
        return self.headline()

    def render(self) -> str:
        """The headline, then the source line with a caret under the expression, then notes."""
        out = [self.headline()]
        loc = self.loc
        if loc is not None:
            text = loc.source.line(loc.line)
            if text.strip():
                if len(text) > 200:      # a 12,000-number literal is not worth echoing whole
                    start = max(0, loc.col - 60)
                    shown = text[start:start + 160]
                    prefix = "..." if start else ""
                    shift = start - len(prefix)
                    text = prefix + shown + ("..." if start + 160 < len(text) else "")
                else:
                    shift = 0
                # tabs would misalign the caret, and control characters would garble the
                # terminal: each shows as one plain character (after the cut: a compiled
                # program renders a site per operation, and a long line has many)
                if not text.isprintable():
                    text = "".join(c if c.isprintable() else (" " if c == "\t" else "?")
                                   for c in text)
                gutter = str(loc.line)
                out.append("%s | %s" % (gutter, text))
                if loc.col:
                    first = min(loc.col - 1 - shift, len(text))
                    if loc.end_line == loc.line and loc.end_col > loc.col:
                        width = loc.end_col - loc.col
                    else:
                        width = max(1, len(text) - first)
                    width = max(1, min(width, len(text) - first))
                    # columns, not characters: a wide character (CJK) takes two on a
                    # terminal, a combining mark none
                    under = _columns(text[first:first + width])
                    out.append("%s | %s^%s" % (" " * len(gutter), " " * _columns(text[:first]),
                                               "~" * (max(1, under) - 1)))
        for note in self.notes:
            out.append("note: %s" % note)
        return "\n".join(out)


def _columns(text: str) -> int:
    """The columns ``text`` takes on a terminal: two for each wide or full-width character
    (Unicode's East Asian Width W or F), none for a combining mark, one for any other."""
    if text.isascii():
        return len(text)
    import unicodedata
    n = 0
    for c in text:
        if unicodedata.combining(c) or unicodedata.category(c) in ("Mn", "Me", "Cf"):
            continue
        n += 2 if unicodedata.east_asian_width(c) in ("W", "F") else 1
    return n


_IMPORT_NOTE = "in module %s, imported on line %d of %s"


def is_call_note(note: str) -> bool:
    """Whether ``note`` (of :func:`frame_notes`) names a def's call: how an error in the
    def's body was reached, not where it is."""
    return (note.startswith("in ") and (", called on line " in note or ", called at " in note)
            or note.startswith("... ") and note.endswith(" more calls in between"))


def is_import_note(note: str) -> bool:
    """Whether ``note`` (of :func:`frame_notes`) names a module's import: how an error in
    the module was reached, not where it is."""
    return note.startswith("in module ") and ", imported on line " in note


MAX_FRAMES = 10        # at most this many notes of calls and imports name an error's frames


def frame_notes(via, here) -> tuple:
    """Notes saying where a failing expression was reached from, innermost first.

    ``via`` lists the frames being expanded, outermost first: ``(NAME, Loc)`` for a def call,
    read ``in f, called on line 4`` (``called at PATH:LINE`` when the call is in another file
    than ``here``, the failing expression's Source), and ``(NAME, Loc, "import")`` for a
    module's import, read ``in module nn, imported on line 1 of p.mg``.  Of more than
    ``MAX_FRAMES`` frames, the innermost and the three outermost are named, and a note counts
    the others.
    """
    frames = list(reversed(via))
    skipped = 0
    if len(frames) > MAX_FRAMES + 1:    # the innermost and the outermost, as Python shortens
        skipped = len(frames) - MAX_FRAMES      # a deep traceback
        frames = frames[:MAX_FRAMES - 3] + [None] + frames[-3:]
    notes = []
    for frame in frames:
        if frame is None:
            notes.append("... %d more calls in between" % skipped)
            continue
        name, loc = frame[0], frame[1]
        if len(frame) > 2:
            notes.append(_IMPORT_NOTE % (name, loc.line, loc.source.path))
        elif loc.source is here:
            notes.append("in %s, called on line %d" % (name, loc.line))
        else:
            notes.append("in %s, called at %s:%d" % (name, loc.source.path, loc.line))
    return tuple(notes)


class GoatMemoryError(GoatError, MemoryError):
    """A value too large for this process's memory, at the line that computes it: both a
    :class:`GoatError` (``PATH:LINE: error: out of memory computing a value of shape ...``)
    and a ``MemoryError`` (what Python code catches for running out of memory)."""


class GoatErrors(GoatError):
    """Several independent errors of one file (a compiler's list): the first is this error's
    own message and position, ``errors`` holds them all (in order), and ``left_out`` counts
    those beyond the cap that are not shown."""

    def __init__(self, errors: list, left_out: int = 0):
        first = errors[0]
        super().__init__(first.message, first.loc, first._path, first.notes)
        self.errors = list(errors)
        self.left_out = left_out

    def __reduce__(self):
        return (GoatErrors, (self.errors, self.left_out), self.__dict__)

    def __str__(self) -> str:
        """Every error's first line (``print(e)`` shows them all, as goat check does)."""
        out = [e.headline() for e in self.errors]
        if self.left_out:
            out.append("goat: %d errors, the first %d shown"
                       % (len(self.errors) + self.left_out, len(self.errors)))
        return "\n".join(out)

    def render(self) -> str:
        out = [e.render() for e in self.errors]
        total = len(self.errors) + self.left_out
        if self.left_out:
            out.append("goat: %d errors, the first %d shown" % (total, len(self.errors)))
        elif total > 1:
            out.append("goat: %d errors" % total)
        return "\n".join(out)


def internal_error_line(exc: BaseException) -> str:
    """The single line shown when goat itself fails (exit status 2)."""
    detail = "%s: %s" % (type(exc).__name__, exc) if str(exc) else type(exc).__name__
    detail = detail.replace("\n", " ")
    if len(detail) > 300:
        detail = detail[:300] + "..."
    return ("goat: internal error (%s); this is a bug in goat, please report it to %s "
            "with the program that caused it" % (detail, REPORT_URL))


class Terminated(KeyboardInterrupt):
    """SIGTERM (kill, timeout, a job scheduler) or SIGHUP (the terminal closed): unwinds as
    Ctrl-C does, so that nothing half-written is left; status 128 + the signal's number (143,
    129)."""

    def __init__(self, signum: int | None = None):
        import signal
        super().__init__()
        self.signum = signal.SIGTERM if signum is None else signum

    @property
    def status(self) -> int:
        return 128 + int(self.signum)

    @property
    def line(self) -> str:
        """What goat says as it ends: "goat: terminated" (SIGTERM), "goat: hung up" (SIGHUP)."""
        import signal
        return "goat: hung up" if self.signum == getattr(signal, "SIGHUP", None) else \
            "goat: terminated"


def stopping_signals() -> tuple:
    """The signals that end goat by unwinding (:class:`Terminated`): SIGTERM, and SIGHUP
    where the system has it (each handled only where :func:`taken`)."""
    import signal
    return (signal.SIGTERM,) + ((signal.SIGHUP,) if hasattr(signal, "SIGHUP") else ())


def taken(signum) -> bool:
    """Whether goat may handle ``signum``: it was not ignored when goat started --
    ``nohup goat run ...`` ignores SIGHUP so that the run outlives its terminal, a shell
    without job control a background job's SIGINT -- and goat leaves it so (as Python leaves
    an ignored SIGINT)."""
    import signal
    return signal.getsignal(signum) is not signal.SIG_IGN


def stop_quietly(signum, frame):
    """A handler for Ctrl-C, SIGTERM and SIGHUP while goat starts or ends (outside the
    command, which unwinds on KeyboardInterrupt and :class:`Terminated`): one line, the
    status (130, 143, 129), no traceback."""
    import os
    import signal
    if signum == signal.SIGINT:
        line, status = "goat: interrupted", 130
    else:
        stop = Terminated(signum)
        line, status = stop.line, stop.status
    try:
        os.write(2, line.encode() + b"\n")
    except OSError:         # the terminal is gone (SIGHUP)
        pass
    os._exit(status)
