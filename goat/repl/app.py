"""The goat REPL (prompt-toolkit): type a statement, see its shape before you press Enter.

* a bottom toolbar shows the static shape of what is being typed, or the error it would raise
  (nothing is evaluated for it);
* highlighting from goat's Pygments lexer; completion of names in scope (with their shapes),
  defs and built-ins (with their signatures), keywords and REPL commands;
* history in ``$XDG_STATE_HOME/goat/history`` (Ctrl-R searches it); Enter inside an open
  bracket starts a new line;
* a statement is checked, then run; a bare expression is shown with its type; an error shows
  the line, a caret and the message, and the session keeps its state; Ctrl-C cancels the input
  or interrupts a running evaluation; Ctrl-D leaves.
"""
from __future__ import annotations

import os
import re
import sys

from prompt_toolkit import PromptSession
from prompt_toolkit.completion import Completer, Completion, PathCompleter
from prompt_toolkit.document import Document
from prompt_toolkit.filters import is_searching
from prompt_toolkit.formatted_text import FormattedText
from prompt_toolkit.history import FileHistory, InMemoryHistory
from prompt_toolkit.key_binding import KeyBindings
from prompt_toolkit.lexers import PygmentsLexer
from prompt_toolkit.shortcuts import print_formatted_text
from prompt_toolkit.styles import Style, merge_styles, style_from_pygments_dict
from pygments.token import Comment, Keyword, Name, Number, Operator, Text

from .. import __version__
from ..diagnostics import GoatError, internal_error_line
from ..lexer.lexer import open_brackets
from ..lexer.pygments_lexer import GoatLexer
from ..lexer.tokens import STATEMENT_KEYWORDS, TYPE_WORDS
from .display import show
from .session import Session

COMMANDS = {
    ":help": "show this help",
    ":type": ":type EXPR  -- the shape of EXPR, without evaluating it",
    ":env": "every name with its shape (and every def with its signature)",
    ":load": ":load FILE  -- run a file into the session",
    ":reset": "forget every name",
    ":quit": "leave (Ctrl-D does too)",
}

HELP = """\
goat %s: Mountain Goat, a tensor language in which shapes are types.

Type a statement and press Enter:
  let NAME = EXPR            bind a value        let a = [[1, 2], [3, 4]]
  def NAME(p: tensor[RxC]) = EXPR                def f(m: tensor[2x2]) = row_sum(m)
  print EXPR                 the book's memref format
  EXPR                       evaluate and show it with its type

The bar at the bottom shows the shape of what you are typing, or the error it
would raise, before anything runs.  Defining a name again replaces it.

Commands:
%s

Keys: Tab completes names, built-ins and commands; Ctrl-R searches history;
Enter inside an open bracket continues on the next line (Esc Enter always does);
Ctrl-C cancels the input or interrupts a run; Ctrl-D leaves.""" % (
    __version__, "\n".join("  %-8s %s" % (c, d) for c, d in COMMANDS.items()))

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


def history_path() -> str:
    """``$XDG_STATE_HOME/goat/history`` (``~/.local/state/goat/history`` by default)."""
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return os.path.join(base, "goat", "history")


class GoatCompleter(Completer):
    """Names in scope (with shapes), defs and built-ins (with signatures), keywords, commands."""

    def __init__(self, session: Session):
        self.session = session
        self.paths = PathCompleter(expanduser=True)

    def get_completions(self, document, complete_event):
        line = document.current_line_before_cursor
        stripped = line.lstrip()
        if stripped.startswith(":"):
            if " " not in stripped:
                for cmd, doc in COMMANDS.items():
                    if cmd.startswith(stripped):
                        yield Completion(cmd, -len(stripped), display_meta=doc)
                return
            if stripped.startswith(":load "):
                sub = Document(stripped[len(":load "):])
                yield from self.paths.get_completions(sub, complete_event)
                return
        m = _WORD.search(line)
        prefix = m.group() if m else ""
        if not prefix and not complete_event.completion_requested:
            return
        start = -len(prefix)
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

    def __init__(self, input=None, output=None, out=None, history=None):
        self.out = out
        self.inputs = 0
        self.session = Session(out=_Writer(self))
        self._hint_for = None
        self._hint = ("", "")
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
    def hint(self, text: str, width: int = 100):
        """(style, text) for the toolbar, recomputed only when the input changed.  Nothing the
        hint does may end the session: a failure inside it is shown as one line."""
        if (text, width) != self._hint_for:
            try:
                return self._compute_hint(text, width)
            except Exception as e:          # a bug in goat: say so, keep the session
                self._hint_for = (text, width)
                self._hint = ("error", internal_error_line(e))
        return self._hint

    def _compute_hint(self, text: str, width: int):
        self._hint_for = (text, width)
        stripped = text.strip()
        if stripped.startswith(":"):
            word, _, rest = stripped.partition(" ")
            if word == ":type" and rest.strip():
                h = self.session.hint(rest, width)
                self._hint = ("error" if h.startswith("error:") else "hint", h)
            elif word in COMMANDS or word in ALIASES:
                self._hint = ("hint", COMMANDS[ALIASES.get(word, word)])
            else:
                matches = [c for c in COMMANDS if c.startswith(word)]
                self._hint = ("hint", "   ".join(matches) if matches else
                              "no command %s; :help lists them" % word)
        elif not stripped:
            self._hint = ("", ":help for help   Tab completes   Ctrl-D leaves")
        else:
            h = self.session.hint(text, width)
            self._hint = ("error" if h.startswith("error:") else "hint", h)
        return self._hint

    def toolbar(self):
        buffer = self.prompt.default_buffer
        try:
            width = self.prompt.app.output.get_size().columns - 2
        except Exception:
            width = 100
        style, text = self.hint(buffer.text, width)
        if len(text) > width:
            text = text[:width - 1] + "…"
        return FormattedText([("class:bottom-toolbar." + style if style else "class:bottom-toolbar",
                               " " + text)])

    def _keys(self):
        kb = KeyBindings()

        @kb.add("enter", filter=~is_searching)
        def _(event):
            buf = event.current_buffer
            if buf.complete_state:
                buf.complete_state = None
                return
            if open_brackets(buf.text):
                buf.insert_text("\n")
            else:
                buf.validate_and_handle()

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

    # ------------------------------------------------------------------ the loop
    def loop(self) -> int:
        if self.out is None:
            self.write("goat %s -- :help for help, Ctrl-D to leave\n" % __version__, "note")
        if self.history_problem:
            self.write("note: %s\n" % self.history_problem, "note")
        while True:
            try:
                text = self.prompt.prompt()
            except KeyboardInterrupt:
                continue
            except EOFError:
                return 0
            if self.handle(text) == "quit":
                return 0

    def handle(self, text: str):
        """Run one input (a statement, several, or a command); prints what happened.

        Statements run one at a time, each shown before the next runs; the first that fails
        is taken back and the rest of the input is not run.
        """
        self._hint_for = None       # what the session knows is about to change
        stripped = text.strip()
        if not stripped:
            return None
        if stripped in PYTHON_HABITS and stripped.rstrip("()") not in self.session.checker.globals:
            stripped = PYTHON_HABITS[stripped]
        self.inputs += 1
        try:
            if stripped.startswith(":"):
                return self.command(stripped)
            for stmt in self.session.parse(text, "<input %d>" % self.inputs):
                self._show(self.session.run_statement(stmt))
        except GoatError as e:
            self.write(e.render() + "\n", "error")
        except KeyboardInterrupt:
            self.write("interrupted; that statement was taken back\n", "error")
        except Exception as e:        # a bug in goat: say so, and keep the session
            self.write(internal_error_line(e) + "\n", "error")
        return None

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
            self.write("%s : %s\n" % (r.name, _type(r.shape)), "type")
        elif r.kind == "var":
            self.write("var %s : %s\n" % (r.name, _type(r.shape)), "type")
        elif r.kind == "lets":
            for name, shape in zip(r.name.split(", "), r.shape):
                self.write("%s : %s\n" % (name, _type(shape)), "type")
        elif r.kind == "import":
            self.write("import %s\n" % r.name, "type")
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
                self.write(self.session.describe(rest) + "\n", "type")
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
                self.write("loaded %s: %d statements\n" % (rest, len(results)), "note")
        elif word == ":reset":
            self.session.reset()
            self.write("every name is forgotten\n", "note")
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
    """The history file, without an entry that repeats the one just before it."""

    def append_string(self, string: str) -> None:
        if self._loaded_strings and self._loaded_strings[0] == string:
            return
        super().append_string(string)


def _history():
    """(history, None), or (history kept in memory, why the file cannot be used)."""
    path = history_path()
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "a", encoding="utf-8"):
            pass
        return _History(path), None
    except OSError as e:
        return InMemoryHistory(), "history is not saved: cannot write %s (%s)" % (path, e.strerror or e)


def main() -> int:
    """Start the REPL on the terminal."""
    return Repl().loop()


if __name__ == "__main__":
    sys.exit(main())
