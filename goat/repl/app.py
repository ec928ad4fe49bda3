"""The goat REPL (prompt-toolkit): type a statement, see its shape before you press Enter.

* a bottom toolbar shows the static shape of what is being typed, or the error it would raise
  (nothing is evaluated for it); it is worked out off the UI path (see :class:`HintWorker`),
  so typing never waits for it, and it gives up ("…") on what takes too long;
* highlighting from goat's Pygments lexer; completion of names in scope (with their shapes),
  defs and built-ins (with their signatures), keywords and REPL commands;
* history in ``$XDG_STATE_HOME/goat/history`` (Ctrl-R searches it, Enter runs what it
  found); Enter inside an open bracket starts a new line, and so does Enter after the ``}``
  of an if (an ``else`` may follow on the next line; Enter on the empty line runs the if);
* a statement is checked, then run; a bare expression is shown with its type; an error shows
  the line, a caret and the message, and the session keeps its state; Ctrl-C cancels the input
  or interrupts a running evaluation; Ctrl-D leaves.
"""
from __future__ import annotations

import os
import re
import stat
import sys
import threading
import time
from collections import OrderedDict

from prompt_toolkit import PromptSession
from prompt_toolkit.application import get_app
from prompt_toolkit.completion import Completer, Completion, PathCompleter
from prompt_toolkit.document import Document
from prompt_toolkit.filters import is_searching
from prompt_toolkit.formatted_text import FormattedText
from prompt_toolkit.history import FileHistory, InMemoryHistory
from prompt_toolkit.input.typeahead import get_typeahead
from prompt_toolkit.key_binding import KeyBindings
from prompt_toolkit.lexers import PygmentsLexer
from prompt_toolkit.search import accept_search
from prompt_toolkit.shortcuts import print_formatted_text
from prompt_toolkit.styles import Style, merge_styles, style_from_pygments_dict
from pygments.token import Comment, Keyword, Name, Number, Operator, Text

from .. import __version__
from ..diagnostics import GoatError, Terminated, internal_error_line
from ..lexer.lexer import open_brackets, starts_statement
from ..lexer.pygments_lexer import GoatLexer
from ..lexer.tokens import STATEMENT_KEYWORDS, TYPE_WORDS
from .display import show
from .session import HintAbandoned, HintBudget, Session

COMMANDS = {
    ":help": "show this help",
    ":type": ":type EXPR  -- the shape of EXPR, without evaluating it",
    ":env": "every name with its shape (and every def with its signature)",
    ":load": ":load FILE  -- run a file into the session",
    ":reset": "forget every name",
    ":backend": ":backend [NAME]  -- show or change the back end: numpy, cupy",
    ":dtype": ":dtype [f64|f32]  -- show or change the precision of every value",
    ":quit": "leave (so do :q, exit and Ctrl-D)",
}

HELP = """\
goat %s: Mountain Goat, a tensor language in which shapes are types.

Type a statement and press Enter:
  let NAME = EXPR           bind a value     let a = [[1, 2], [3, 4]]
  def NAME(P: TYPE) = EXPR  a function       def f(m: tensor[2x2]) = row_sum(m)
  print EXPR                the book's memref format
  EXPR                      evaluate it, show it with its type
  for i in 0..N { ... }     blocks may span lines: the input runs when its
  if C { ... } else { ... } last } is typed -- but after an if's }, Enter
                            waits for an else (Enter again runs the if)

The bar at the bottom shows the shape of what you are typing, or the error it
would raise, before anything runs ("…" where that takes too long to find).
Defining a name again replaces it for what follows; a def defined before keeps
the values and defs it named (define it again to use the new ones).

Commands:
%s
  :type f   the signature of the def (or built-in) f
  :h :t     short for :help and :type

Keys: Tab completes names, built-ins and commands; Ctrl-R searches the
history (Enter runs the line found); Enter inside an open bracket goes on to
the next line (Esc Enter always does); Ctrl-C cancels the input or
interrupts a run; Ctrl-D leaves.""" % (
    __version__, "\n".join("  %-9s %s" % (c, d) for c, d in COMMANDS.items()))

HELP_LINE = ":help for help   Tab completes   Ctrl-D leaves"
ELSE_LINES = {"closing": "an else may follow: Enter goes on to the next line",
              "after": "Enter runs the if; or go on with else { ... }"}

# the live hint: how long and how much memory it may take, how long the toolbar keeps showing
# the previous hint before it says it is still checking
HINT_SECONDS = 0.3
HINT_MEMORY = 512 << 20
HINT_GRACE = 0.05
HINT_WAIT = 0.005           # the most a redraw waits for a hint (then it shows it later)
CHECKING = ("pending", "still checking…")
GAVE_UP = {"time": ("pending", "…  (too slow to check while typing)"),
           "memory": ("pending", "…  (too big to check while typing)")}

# Named ANSI colours follow the terminal's own palette, so the REPL reads on light and dark
# backgrounds alike.
STYLE = merge_styles([
    style_from_pygments_dict({
        Keyword: "ansimagenta bold",
        Keyword.Type: "ansicyan",
        Name.Builtin: "ansicyan",
        Name.Function: "ansigreen bold",
        Name.Variable: "ansigreen",
        Number: "ansiyellow",
        Comment: "ansibrightblack italic",
        Operator: "",
        Text.Error: "ansired",
    }),
    Style.from_dict({
        "bottom-toolbar": "noreverse",
        "bottom-toolbar.hint": "ansicyan",
        "bottom-toolbar.error": "ansired",
        "bottom-toolbar.pending": "ansibrightblack",
        "type": "ansicyan",
        "error": "ansired",
        "note": "ansibrightblack",
    }),
])

ALIASES = {":q": ":quit", ":exit": ":quit", ":h": ":help", ":t": ":type"}
# what a Python user types by reflex (unless the session defines such a name)
PYTHON_HABITS = {"exit": ":quit", "quit": ":quit", "exit()": ":quit", "quit()": ":quit",
                 "help": ":help", "help()": ":help"}

_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*$")


def _given_arguments(inside: str):
    """(how many arguments a call's text so far gives by position, the names it gives others
    by): its top-level comma-separated parts, the last (being typed) left out."""
    from ..typecheck.checker import argument_parts
    parts = argument_parts(inside)[:-1]
    named = {m.group(1) for p in parts
             for m in [re.match(r"\s*([A-Za-z_]\w*)\s*=(?!=)", p)] if m}
    return sum(1 for p in parts if not re.match(r"\s*[A-Za-z_]\w*\s*=(?!=)", p)), named


def _open_call(text: str):
    """(the name of the call whose parentheses ``text`` -- a line up to a word being typed --
    has left open, the text after its '('), where an argument is about to begin (after its (
    or a comma): else None."""
    if not re.search(r"[(,]\s*$", text):
        return None
    depth = 0
    for k in range(len(text) - 1, -1, -1):
        c = text[k]
        if c in ")]":
            depth += 1
        elif c in "([":
            if depth == 0:
                if c == "[":
                    return None
                m = re.search(r"([A-Za-z_][A-Za-z0-9_.]*)\s*$", text[:k])
                return (m.group(1), text[k + 1:]) if m else None
            depth -= 1
    return None
_MEMBER = re.compile(r"(?<![A-Za-z0-9_.])([A-Za-z_][A-Za-z0-9_]*)\.([A-Za-z0-9_]*)$")
# what awaits_else needs of the lexer's pieces: strings and comments (skipped), words, braces
_PIECE = re.compile(r"""
    "(?:[^"\\\n]|\\[^\n])*"?      # a string (perhaps unclosed)
  | \#[^\n]*                     # a comment
  | \n
  | [A-Za-z_][A-Za-z0-9_.]*       # a word
  | [{};]
  | [^\s"\#{};A-Za-z_]+           # anything else
  | [ \t\f\r]+
""", re.VERBOSE)


def else_state(text: str):
    """Where ``text`` stands with an ``else``: "closing" when its last line closes a top-level
    ``if`` block (or ``else if``) that has no ``else`` yet, so that the next line may still
    begin with ``else`` (Enter goes on to it rather than run the input); "after" when the lines
    after such a line are empty (Enter runs the input); None otherwise."""
    depth = 0
    words = []              # the first words of the top-level statement being read
    kind = None             # what the top-level block being read is: "if" or another
    state = None
    for piece in _PIECE.findall(text):
        c = piece[0]
        if c in " \t\f\r#":
            continue
        if c == "\n":
            if state == "closing":
                state = "after"
            if depth == 0:
                words = []
            continue
        state = None
        if c == "{":
            if depth == 0:
                kind = "if" if words[:1] == ["if"] or words[:2] == ["else", "if"] else "other"
            depth += 1
        elif c == "}":
            if depth > 0:
                depth -= 1
                if depth == 0:
                    state = "closing" if kind == "if" else None
                    words = []
        elif c == ";" and depth == 0:
            words = []
        elif depth == 0 and len(words) < 2:
            words.append(piece)
    return state


# a block's header written without its { (for i in 0..3:, if x < 1, while ..., def f(x):),
# alone (a one-line def f(x: scalar) = x * 2 is none)
_HEADER_WITHOUT_BRACE = re.compile(
    r"[ \t]*(?:(?:for|if|else|elif|while)\b[^{}\n]*|def\b[^{}\n=]*:[ \t]*(?:#[^\n]*)?)\Z")


def awaits_else(text: str) -> bool:
    """Does the last line of ``text`` close an if that an else may still follow?"""
    return else_state(text) == "closing"


class HintWorker:
    """Works out the toolbar's hint on a thread of its own, so that typing never waits for it.

    Only the newest request is worked on: a new one cancels the hint under way (it stops at its
    next poll) and replaces any that has not started.  Each runs within a :class:`HintBudget`
    (``seconds``, ``memory``); one that runs out gives its request the ``GAVE_UP`` hint.
    ``compute(text, width, budget)`` gives (style, text) or raises HintAbandoned; ``done()``
    is called (on the worker's thread) after each.  A request is a key (text, width, the
    session's generation): a result is for that text in that state of the session only.
    """

    KEEP = 64               # results kept (the latest)
    # the thread's stack, the first that can be had: a hint checks as deeply as a run does
    STACKS = (64 << 20, 16 << 20, 0)

    def __init__(self, compute, done=None, seconds=HINT_SECONDS, memory=HINT_MEMORY):
        self.compute = compute
        self.done = done
        self.seconds = seconds
        self.memory = memory
        self.asked_at = 0.0             # when the newest request was made
        self._cond = threading.Condition()
        self._wanted = None             # the request waiting for the thread
        self._running = None            # (request, budget) being worked on
        self._results = OrderedDict()
        self._thread = None
        self._stopping = False

    def get(self, key):
        with self._cond:
            return self._results.get(key)

    def want(self, key) -> bool:
        """Ask for ``key``'s hint, dropping every other request; True if newly asked."""
        with self._cond:
            if key in self._results or self._wanted == key:
                return False
            if self._running is not None:
                if self._running[0] == key:
                    return False
                self._running[1].cancel("superseded")
            self._wanted = key
            self.asked_at = time.monotonic()
            self._stopping = False
            started = self._start()
            self._cond.notify_all()
        if not started:         # no thread to be had: work it out here, within the budget
            self._work()
        return True

    def cancel(self):
        """Drop every request and result, and stop the hint under way (the session is about to
        change)."""
        with self._cond:
            self._wanted = None
            if self._running is not None:
                self._running[1].cancel("superseded")
            self._results.clear()
            self._cond.notify_all()

    def drop(self):
        """Drop the request waiting and stop the hint under way (the input needs none now)."""
        with self._cond:
            if self._wanted is None and self._running is None:
                return
            self._wanted = None
            if self._running is not None:
                self._running[1].cancel("superseded")
            self._cond.notify_all()

    def wait(self, key, timeout: float):
        """``key``'s result once it is there; None if it was dropped or ``timeout`` passed."""
        with self._cond:
            self._cond.wait_for(lambda: key in self._results or (
                self._wanted != key and (self._running is None or self._running[0] != key)),
                timeout)
            return self._results.get(key)

    def busy(self) -> bool:
        with self._cond:
            return self._wanted is not None or self._running is not None

    def in_flight(self):
        """The request being worked on now, or None."""
        with self._cond:
            return None if self._running is None else self._running[0]

    def _start(self) -> bool:
        """Start the thread if it is not running; False if no thread can be started."""
        if self._thread is not None and self._thread.is_alive():
            return True
        for size in self.STACKS:
            try:
                old = threading.stack_size(size) if size else None
            except (ValueError, RuntimeError):
                continue
            try:
                thread = threading.Thread(target=self._loop, name="goat-hint", daemon=True)
                thread.start()
            except RuntimeError:                # no memory for a thread of this stack
                continue
            finally:
                if size:
                    threading.stack_size(old)
            self._thread = thread
            return True
        return False

    def stop(self):
        """Let the thread end (once the hint under way, if any, stops); want() starts it again."""
        with self._cond:
            self._stopping = True
            self._wanted = None
            if self._running is not None:
                self._running[1].cancel("superseded")
            self._cond.notify_all()
            thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(2)

    def _loop(self):
        while True:
            with self._cond:
                while self._wanted is None and not self._stopping:
                    self._cond.wait()
                if self._stopping:
                    self._thread = None
                    return
            self._work()

    def _work(self):
        """Work out the request waiting, if any."""
        with self._cond:
            if self._wanted is None:
                return
            key, self._wanted = self._wanted, None
            budget = HintBudget(self.seconds, self.memory, generation=key[2])
            self._running = (key, budget)
        result = None
        try:
            result = self.compute(key[0], key[1], budget)
        except HintAbandoned as e:
            result = GAVE_UP.get(e.reason)          # superseded, preempted, stale: dropped
        except MemoryError:
            result = GAVE_UP["memory"]
        except Exception as e:                      # a bug in goat: say so, keep the session
            result = ("error", internal_error_line(e))
        except BaseException:                       # nothing may end this thread
            result = None
        with self._cond:
            self._running = None
            if result is not None:
                self._results[key] = result
                while len(self._results) > self.KEEP:
                    self._results.popitem(last=False)
            self._cond.notify_all()
        if self.done is not None:
            try:
                self.done()
            except Exception:
                pass


def _count(n: int, word: str) -> str:
    return "%d %s%s" % (n, word, "" if n == 1 else "s")


def history_path() -> str:
    """``$XDG_STATE_HOME/goat/history`` (``~/.local/state/goat/history`` by default)."""
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return os.path.join(base, "goat", "history")


class GoatCompleter(Completer):
    """Names in scope (with shapes), defs and built-ins (with signatures), keywords, commands."""

    def __init__(self, session: Session):
        self.session = session
        # :load's files: programs (.mg) and the folders on the way to them
        self.paths = PathCompleter(expanduser=True, file_filter=lambda path: path.endswith(
            ".mg") or os.path.isdir(path))

    def get_completions(self, document, complete_event):
        line = document.current_line_before_cursor
        stripped = line.lstrip()
        if stripped.startswith(":"):
            if " " not in stripped:
                for cmd, doc in COMMANDS.items():
                    if cmd.startswith(stripped):
                        # a command that takes a word comes with the space before it
                        text = cmd + " " if doc.startswith(cmd + " ") else cmd
                        yield Completion(text, -len(stripped), display=cmd, display_meta=doc)
                return
            if stripped.startswith(":load "):
                sub = Document(stripped[len(":load "):])
                for c in self.paths.get_completions(sub, complete_event):
                    if c.display_text.endswith("/") and not c.text.endswith("/"):
                        # a folder comes with its slash, so that Tab goes on into it
                        c = Completion(c.text + "/", c.start_position, display=c.display,
                                       display_meta=c.display_meta)
                    yield c
                return
        m = _MEMBER.search(line)
        if m:
            # nn.<Tab>: the module's defs and lets (after a name that is not a module, none)
            start = -len(m.group(2))
            for name, desc in self.session.members():
                module, _, member = name.partition(".")
                if module == m.group(1) and member.startswith(m.group(2)):
                    yield Completion(member, start, display_meta=desc)
            return
        m = _WORD.search(line)
        prefix = m.group() if m else ""
        if not prefix and not complete_event.completion_requested:
            return
        start = -len(prefix)
        call = _open_call(line[:len(line) - len(prefix)])
        if call is not None:
            # f(x, sc<Tab>: the parameters of the call's function not given yet, by name
            callee, inside = call
            given = _given_arguments(inside)
            names = self.session.parameter_names(callee)
            for k, pname in enumerate(names):
                if k < given[0] or pname in given[1]:
                    continue
                if pname.startswith(prefix):
                    yield Completion(pname + "=", start, display=pname + "=",
                                     display_meta="argument of %s, by name" % callee)
        for name, desc in self.session.names():
            if name.startswith(prefix):
                yield Completion(name, start, display_meta=desc)
        for name, sig in self.session.builtins():
            if name.startswith(prefix):
                yield Completion(name, start, display_meta=sig)
        at_start = not line.strip() or line.strip() == prefix
        words = list(STATEMENT_KEYWORDS) if at_start else [] if ":" not in line else list(TYPE_WORDS)
        for word in words:
            if word.startswith(prefix):
                yield Completion(word, start, display_meta="keyword")


class Repl:
    """One REPL on a terminal (or on prompt-toolkit's pipe input, for tests).

    ``out``: where results go (None: the terminal, with colours).
    """

    def __init__(self, input=None, output=None, out=None, history=None, backend="numpy",
                 dtype="f64"):
        self.out = out
        self.inputs = 0
        self.session = Session(out=_Writer(self))
        if backend != "numpy" or dtype != "f64":
            self.session.set_backend(backend, dtype)
        self.hints = HintWorker(self._session_hint, done=self._hint_ready)
        self._shown = ("", HELP_LINE)       # what the toolbar shows now
        self.history_problem = None
        if history is None:
            history, self.history_problem = _history()
        self.prompt = PromptSession(
            message="goat> ",
            prompt_continuation=lambda width, line, wrap: "  ... ".rjust(width),
            multiline=True,
            key_bindings=self._keys(),
            lexer=PygmentsLexer(GoatLexer),
            completer=GoatCompleter(self.session),
            complete_while_typing=False,
            bottom_toolbar=self.toolbar,
            history=history,
            enable_history_search=False,
            style=STYLE,
            input=input,
            output=output,
        )

    # ------------------------------------------------------------------ the toolbar
    def hint(self, text: str, width: int = 100, timeout: float | None = None):
        """(style, text) for the toolbar, waiting for it (up to ``timeout``, by default as long
        as a hint may take): what the toolbar shows once the hint for ``text`` is worked out.
        The toolbar itself never waits (see :meth:`toolbar_hint`)."""
        quick = self._quick_hint(text)
        if quick is not None:
            return quick
        key = (text, width, self.session.generation)
        got = self.hints.get(key)
        if got is None:
            self.hints.want(key)
            got = self.hints.wait(key, HINT_SECONDS + 2 if timeout is None else timeout)
        return got if got is not None else CHECKING

    def toolbar_hint(self, text: str, width: int):
        """(style, text) for the toolbar now, without waiting: the hint for ``text`` if it is
        worked out; otherwise it is asked for, and the toolbar keeps what it shows for a
        moment (HINT_GRACE: most hints take less), then says it is still checking."""
        quick = self._quick_hint(text)
        if quick is not None:
            self.hints.drop()                   # a hint under way is of no use now
        else:
            key = (text, width, self.session.generation)
            quick = self.hints.get(key)
            if quick is None:
                if self.hints.want(key):
                    # most hints take well under a millisecond: a moment's wait (at most
                    # HINT_WAIT) shows them in this redraw, without a second one
                    quick = self.hints.wait(key, HINT_WAIT)
                    if quick is None:
                        self._redraw_later(HINT_GRACE)
            if quick is None:
                if time.monotonic() - self.hints.asked_at < HINT_GRACE:
                    return self._shown
                return CHECKING
        self._shown = quick
        return quick

    def _quick_hint(self, text: str):
        """The toolbar's text when it needs no look at the session (None when it does)."""
        stripped = text.strip()
        if not stripped:
            return ("", HELP_LINE)
        if stripped.startswith(":"):
            word, _, rest = stripped.partition(" ")
            if ALIASES.get(word, word) == ":type" and rest.strip():
                return None
            if word in COMMANDS or word in ALIASES:
                return ("hint", COMMANDS[ALIASES.get(word, word)])
            matches = [c for c in COMMANDS if c.startswith(word)]
            return ("hint", "   ".join(matches) if matches else
                    "no command %s; :help lists them" % word)
        return None

    def _session_hint(self, text: str, width: int, budget):
        """The hint that needs the session: on the hint thread, within ``budget``."""
        stripped = text.strip()
        if stripped in PYTHON_HABITS and not self.session.defines(stripped.rstrip("()")):
            # what Enter does with it (_handle), not the error it would be as goat
            command = PYTHON_HABITS[stripped]
            return ("hint", "%s: %s" % (command, COMMANDS[command]))
        if stripped.startswith(":"):            # :type EXPR
            h = self.session.hint(stripped.partition(" ")[2], width, budget, signatures=True)
        else:
            h = self.session.hint(text, width, budget)
        error = h.startswith("error:")
        state = None if error or stripped.startswith(":") else else_state(text)
        if state is not None:                   # an if, complete: an else may follow
            return ("", ELSE_LINES[state])
        if not h:                               # plainly unfinished: the help stays
            return ("", HELP_LINE)
        return ("error" if error else "hint", h)

    def _hint_ready(self):
        try:
            self.prompt.app.invalidate()        # thread-safe
        except Exception:
            pass

    def _redraw_later(self, seconds: float):
        try:
            import asyncio
            asyncio.get_running_loop().call_later(seconds, self._hint_ready)
        except RuntimeError:                    # not in the application's loop
            pass

    def toolbar_width(self) -> int:
        try:
            return self.prompt.app.output.get_size().columns - 2
        except Exception:
            return 100

    def toolbar(self):
        buffer = self.prompt.default_buffer
        width = self.toolbar_width()
        style, text = self.toolbar_hint(buffer.text, width)
        if len(text) > width:
            text = text[:width - 1] + "…"
        return FormattedText([("class:bottom-toolbar." + style if style else "class:bottom-toolbar",
                               " " + text)])

    def _enter(self, buf):
        """Enter: a new line inside an open bracket, or after the } of an if (an else may
        follow); otherwise run the input."""
        if open_brackets(buf.text) or awaits_else(buf.text):
            buf.insert_text("\n")
            return
        if buf.text != buf.text.rstrip():
            buf.document = Document(buf.text.rstrip())     # the line left empty to end an if
        buf.validate_and_handle()

    def _typeahead_after_history(self):
        """Keys typed while the last statement ran are fed once the history is in the buffer.

        prompt_toolkit feeds such keys to the new prompt before its first redraw, which is what
        loads the history into the line's buffer: Up, or Ctrl-R and Enter, typed ahead found
        nothing and ran an empty line. The history's loading task is made first, so it runs
        (to its end: the file and in-memory histories load without waiting) before the keys.
        """
        app = get_app()
        keys = get_typeahead(app.input)
        if not keys:
            return
        buf = app.current_buffer
        buf.load_history_if_not_yet_loaded()

        async def feed():
            app.key_processor.feed_multiple(keys)
            app.key_processor.process_keys()
        app.create_background_task(feed())

    def _keys(self):
        kb = KeyBindings()

        @kb.add("enter", filter=~is_searching)
        def _(event):
            buf = event.current_buffer
            if buf.complete_state:
                buf.complete_state = None
                return
            self._enter(buf)

        @kb.add("enter", filter=is_searching)
        def _(event):
            # as readline does: Enter takes the line Ctrl-R found and runs it
            accept_search()
            self._enter(event.app.current_buffer)

        @kb.add("escape", "enter")
        def _(event):
            event.current_buffer.insert_text("\n")

        return kb

    # ------------------------------------------------------------------ output
    def write(self, text: str, style: str = ""):
        if self.out is not None:
            self.out.write(text)
            self.out.flush()
        elif style:
            print_formatted_text(FormattedText([("class:" + style, text)]), end="", style=STYLE,
                                 output=self.prompt.output)
        else:
            print_formatted_text(text, end="", output=self.prompt.output)

    def load_first(self, path, lets=None):
        """goat repl FILE: the file run into the session before the first prompt, as python
        -i runs a script (``lets``: goat repl --let); an error in it is shown, and the
        session starts without it."""
        try:
            results = self.session.load(path, lets)
        except GoatError as e:
            self.write(e.render() + "\n", "error")
            return
        except KeyboardInterrupt:
            self.write("interrupted; %s was taken back\n" % path, "error")
            return
        self.write("loaded %s: %d statement%s\n" % (path, len(results),
                                                   "" if len(results) == 1 else "s"), "note")

    # ------------------------------------------------------------------ the loop
    def loop(self) -> int:
        if self.out is None:
            self.write("goat %s -- :help for help, Ctrl-D to leave\n" % __version__, "note")
        if self.history_problem:
            self.write("note: %s\n" % self.history_problem, "note")
        try:
            while True:
                try:
                    text = self.prompt.prompt(pre_run=self._typeahead_after_history)
                except Terminated:
                    raise                   # SIGTERM (SIGHUP) ends the session: 143 (129)
                except KeyboardInterrupt:
                    continue
                except EOFError:
                    return 0
                if self.handle(text) == "quit":
                    return 0
        finally:
            self.hints.stop()

    def handle(self, text: str):
        """Run one input (a statement, several, or a command); prints what happened.

        Statements run one at a time, each shown before the next runs; the first that fails
        is taken back and the rest of the input is not run.
        """
        self.hints.cancel()         # what the session knows is about to change
        stripped = text.strip()
        if not stripped:
            return None
        try:
            with self.session.exclusive():  # no hint holds the session while this runs
                return self._handle(text, stripped)
        except KeyboardInterrupt as e:      # while waiting for a hint to let go (an instant)
            if self._ends_session(e):
                raise
            self.write("interrupted\n", "error")
            return None

    def _handle(self, text, stripped):
        if stripped in PYTHON_HABITS and not self.session.defines(stripped.rstrip("()")):
            stripped = PYTHON_HABITS[stripped]
        self.inputs += 1
        try:
            if stripped.startswith(":"):
                return self.command(stripped)
            for stmt in self.session.parse(text, "<input %d>" % self.inputs):
                self._show(self.session.run_statement(stmt))
        except GoatError as e:
            self.write(e.render() + "\n", "error")
        except KeyboardInterrupt as e:
            if self._ends_session(e):
                raise
            self.write("interrupted; that statement was taken back\n", "error")
        except Exception as e:        # a bug in goat: say so, and keep the session
            self.write(internal_error_line(e) + "\n", "error")
        return None

    # Ctrl-C at the terminal takes back the statement running and keeps the session; SIGTERM
    # (kill, timeout) ends it, status 143, SIGHUP (the terminal closed) too, 129, and so does
    # Ctrl-C where no one types (piped), 130
    interrupt_ends_session = False

    def _ends_session(self, e) -> bool:
        return isinstance(e, Terminated) or self.interrupt_ends_session

    def _width(self):
        try:
            return self.prompt.app.output.get_size().columns
        except Exception:
            return 100

    def _show(self, r):
        if r.kind == "value" and isinstance(r.value, tuple):
            for k, v in enumerate(r.value):
                self.write("value %d of %d: %s\n" % (k + 1, len(r.value), show(v, self._width())))
        elif r.kind == "value":
            self.write(show(r.value, self._width()) + "\n")
        elif r.kind in ("let", "assign"):
            self.write("%s : %s%s\n" % (r.name, _type(r.shape),
                                        self.session.laid_out(r.name, r.shape)), "type")
        elif r.kind == "var":
            self.write("var %s : %s%s\n" % (r.name, _type(r.shape),
                                            self.session.laid_out(r.name, r.shape)), "type")
        elif r.kind == "lets":
            for name, shape in zip(r.name.split(", "), r.shape):
                self.write("%s : %s\n" % (name, _type(shape)), "type")
        elif r.kind == "import":
            prefix = r.name + "."
            members = [d for n, d in self.session.members() if n.startswith(prefix)]
            defs = sum(1 for d in members if d.startswith("def "))
            parts = [_count(defs, "def")] + ([_count(len(members) - defs, "let")]
                                             if len(members) > defs else [])
            self.write("%s : module, %s (Tab after %s lists them)\n"
                       % (r.name, " and ".join(parts), prefix), "type")
        elif r.kind == "def":
            self.write("def %s\n" % r.signature, "type")

    def command(self, text: str):
        word, _, rest = text.partition(" ")
        word = ALIASES.get(word, word)
        rest = rest.strip()
        if word in (":quit", ":help", ":env", ":reset") and rest:
            self.write("%s takes no argument\n" % word, "error")
            return None
        if word == ":quit":
            return "quit"
        if word == ":help":
            self.write(HELP + "\n")
        elif word == ":type":
            if not rest:
                self.write(":type needs an expression, as in :type a @ b\n", "error")
            else:
                self.write(self.session.describe(rest, "<input %d>" % self.inputs) + "\n",
                           "type")
        elif word == ":env":
            names = self.session.names()
            if not names:
                self.write("nothing is defined yet\n", "note")
            width = max((len(n) for n, d in names if not d.startswith("def ")), default=0)
            for name, desc in names:
                if desc.startswith("def "):
                    self.write(desc + "\n", "type")
                else:
                    self.write("%s : %s\n" % (name.ljust(width), desc), "type")
        elif word == ":load":
            if len(rest) > 1 and rest[0] == rest[-1] and rest[0] in "\"'":
                rest = rest[1:-1]
            if not rest:
                self.write(":load needs a file name\n", "error")
            else:
                results = self.session.load(os.path.expanduser(rest))
                self.write("loaded %s: %d statement%s\n"
                           % (rest, len(results), "" if len(results) == 1 else "s"), "note")
        elif word == ":reset":
            self.session.reset()
            self.write("every name is forgotten\n", "note")
        elif word in (":backend", ":dtype"):
            before = self.session.dtype
            if rest:
                if word == ":backend":
                    self.session.set_backend(rest)
                else:
                    self.session.set_backend(self.session.backend_name, rest)
            self.write("back end: %s, precision %s\n" % (self.session.backend_name,
                                                          self.session.dtype), "note")
            if before == "f32" and self.session.dtype == "f64" and any(
                    not desc.startswith(("def ", "module")) for _, desc in self.session.names()):
                self.write("the values computed so far keep float32's digits (about 7); "
                           "compute them again to have float64's\n", "note")
        else:
            self.write("no command %s; :help lists the commands\n" % word, "error")
        return None


def _type(shape):
    from ..typecheck.shapes import format_type
    return format_type(shape)


class _Writer:
    """The text stream ``print`` statements write to, routed through the REPL."""

    def __init__(self, repl):
        self.repl = repl

    def write(self, text):
        self.repl.write(text)

    def flush(self):
        pass


class _History(FileHistory):
    """The history file, without an entry that repeats the one just before it.  Only its last
    MAX_BYTES are read at start (a history grows for years; what Ctrl-R finds is recent)."""

    MAX_BYTES = 4 * 1024 * 1024

    def load_history_strings(self):
        strings, lines = [], []
        try:
            with open(self.filename, "rb") as f:
                if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
                    return []
                size = os.fstat(f.fileno()).st_size
                if size > self.MAX_BYTES:
                    f.seek(size - self.MAX_BYTES)
                    f.readline()            # the first line read may be cut in two
                for line_bytes in f:
                    line = line_bytes.decode("utf-8", errors="replace")
                    if line.startswith("+"):
                        lines.append(line[1:])
                    else:
                        if lines:
                            strings.append("".join(lines)[:-1])
                        lines = []
        except OSError:
            return []
        if lines:
            strings.append("".join(lines)[:-1])
        return reversed(strings)

    def append_string(self, string: str) -> None:
        if self._loaded_strings and self._loaded_strings[0] == string:
            return
        super().append_string(string)


def _history():
    """(history, None), or (history kept in memory, why the file cannot be used)."""
    path = history_path()
    try:
        if os.path.exists(path) and not os.path.isfile(path):
            return InMemoryHistory(), ("history is not saved: %s is not a regular file" % path)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "a", encoding="utf-8"):
            pass
        return _History(path), None
    except OSError as e:
        return InMemoryHistory(), "history is not saved: cannot write %s (%s)" % (path, e.strerror or e)


class _NoHints:
    def cancel(self):
        pass

    def stop(self):
        pass


class PipedRepl(Repl):
    interrupt_ends_session = True
    """The REPL reading its input from a pipe or a file (``goat repl < session.txt``): each
    input, read as the terminal's Enter would take it (lines with an open bracket, or an if
    that an else may follow, are one input), is echoed after the prompt and answered as on a
    terminal -- a let's type, an expression's value, an error -- and the session goes on.
    The exit status is 1 when an input failed, else 0."""

    def __init__(self, lines, out, backend="numpy", dtype="f64"):
        self.out = out
        self.lines = lines
        self.inputs = 0
        self.failed = 0
        self.session = Session(out=_Writer(self))
        if backend != "numpy" or dtype != "f64":
            self.session.set_backend(backend, dtype)
        self.hints = _NoHints()

    def write(self, text: str, style: str = ""):
        if style == "error":
            self.failed += 1
        self.out.write(text)
        self.out.flush()

    def _width(self):
        return 100

    def _echo(self, text):
        lines = text.split("\n")
        self.out.write("goat> %s\n" % lines[0] + "".join("  ... %s\n" % x for x in lines[1:]))

    def loop(self) -> int:
        text = ""
        header = False          # text is a block's header written without its {
        held = False            # comment lines held after an if's }, an else may still come
        for line in self.lines:
            line = line.rstrip("\r\n")
            if header:
                if line.strip() and (line[:1] in " \t" or line.lstrip()[:1] in "{}"):
                    # for i in 0..3: / its indented lines (or a { on a line of its own): one
                    # input, which fails as a whole -- none of its lines runs alone
                    text += "\n" + line
                    if not open_brackets(text):
                        continue
                    header = False
                    continue
                header = False
                if self._run(text) == "quit":
                    return self._status()
                text = ""
            if text and open_brackets(text)[-1:] in (["("], ["["]) and starts_statement(
                    line, text if open_brackets(text)[-1:] == ["("] else ""):
                # let a = row_sum([[1, 2]] / let b = 3: the ( was left open; that input
                # fails alone, and the next line is an input of its own
                if self._run(text) == "quit":
                    return self._status()
                text = ""
            if text and not open_brackets(text) and (awaits_else(text) or held):
                if line.lstrip().startswith("#"):
                    # a comment between an if's } and its else, as a file may have one
                    text += "\n" + line
                    held = True
                    continue
                held = False
                if not line.lstrip().startswith("else"):
                    if self._run(text) == "quit":       # the if had no else: run it
                        return self._status()
                    text = ""
            text = line if not text else text + "\n" + line
            if open_brackets(text) or awaits_else(text):
                continue
            if _HEADER_WITHOUT_BRACE.match(text):
                header = True
                continue
            if self._run(text) == "quit":
                return self._status()
            text = ""
        if text.strip():
            self._run(text)
        return self._status()

    def _run(self, text):
        if not text.strip():
            return None
        if not text.isprintable() and re.search("[\udc80-\udcff]", text):
            # bytes that are not UTF-8 (kept as surrogates): an error of this input alone,
            # unless they are in a comment, as in a program file
            from ..api import decode_source
            try:
                text = decode_source(text.encode("utf-8", "surrogateescape"),
                                     "<input %d>" % (self.inputs + 1)).text
            except GoatError as e:
                self._echo(re.sub("[\udc80-\udcff]", "\ufffd", text.rstrip()))
                self.inputs += 1
                self.write(e.render() + "\n", "error")
                return None
        self._echo(text.rstrip())
        return self.handle(text.rstrip())

    def _status(self) -> int:
        return 1 if self.failed else 0


def main_piped(lines, out, backend: str = "numpy", dtype: str = "f64", start=None) -> int:
    """The REPL over ``lines`` (standard input that is not a terminal), writing to ``out``;
    ``start``: (FILE, lets) to run into the session first."""
    try:
        repl = PipedRepl(lines, out, backend=backend, dtype=dtype)
    except GoatError as e:
        sys.stderr.write("goat repl: error: %s\n" % e.message)
        return 1
    if start is not None:
        repl.load_first(*start)
    return repl.loop()


def main(backend: str = "numpy", dtype: str = "f64", start=None) -> int:
    """Start the REPL on the terminal, with the array back end ``backend`` in precision
    ``dtype``; ``start``: (FILE, lets) to run into the session first (goat repl FILE)."""
    try:
        repl = Repl(backend=backend, dtype=dtype)
    except GoatError as e:
        sys.stderr.write("goat repl: error: %s\n" % e.message)
        return 1
    if start is not None:
        repl.load_first(*start)
    return repl.loop()


if __name__ == "__main__":
    sys.exit(main())
