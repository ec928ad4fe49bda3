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
from prompt_toolkit.formatted_text import FormattedText
from prompt_toolkit.history import FileHistory, InMemoryHistory
from prompt_toolkit.key_binding import KeyBindings
from prompt_toolkit.lexers import PygmentsLexer
from prompt_toolkit.shortcuts import print_formatted_text
from prompt_toolkit.styles import Style

from .. import __version__
from ..diagnostics import GoatError
from ..lexer.lexer import open_brackets
from ..lexer.pygments_lexer import GoatLexer
from ..lexer.tokens import KEYWORDS, TYPE_WORDS
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

STYLE = Style.from_dict({
    "bottom-toolbar": "noreverse bg:#222222 #aaaaaa",
    "bottom-toolbar.hint": "bg:#222222 #87d7ff",
    "bottom-toolbar.error": "bg:#222222 #ff8787",
    "type": "#87afaf",
    "error": "#ff5f5f",
    "note": "#888888",
})

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
        for word in list(KEYWORDS) + list(TYPE_WORDS):
            if word.startswith(prefix):
                yield Completion(word, start, display_meta="keyword")


class Repl:
    """One REPL on a terminal (or on prompt-toolkit's pipe input, for tests).

    ``out``: where results go (None: the terminal, with colours).
    """

    def __init__(self, input=None, output=None, out=None, history=None):
        self.out = out
        self.session = Session(out=_Writer(self))
        self._hint_for = None
        self._hint = ("", "")
        if history is None:
            history = _history()
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
    def hint(self, text: str):
        """(style, text) for the toolbar, recomputed only when the input changed."""
        if text != self._hint_for:
            self._hint_for = text
            stripped = text.strip()
            if stripped.startswith(":"):
                word = stripped.split()[0]
                self._hint = ("hint", COMMANDS.get(word, "unknown command; :help lists them"))
            elif not stripped:
                self._hint = ("", ":help for help   Tab completes   Ctrl-D leaves")
            else:
                h = self.session.hint(text)
                self._hint = ("error" if h.startswith("error:") else "hint", h)
        return self._hint

    def toolbar(self):
        style, text = self.hint(self.prompt.default_buffer.text)
        return FormattedText([("class:bottom-toolbar." + style if style else "class:bottom-toolbar",
                               " " + text)])

    def _keys(self):
        kb = KeyBindings()

        @kb.add("enter")
        def _(event):
            buf = event.current_buffer
            if buf.complete_state:
                buf.complete_state = None
                return
            if open_brackets(buf.text) and buf.document.is_cursor_at_the_end:
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
        """Run one input (a statement, several, or a command); prints what happened."""
        stripped = text.strip()
        if not stripped:
            return None
        try:
            if stripped.startswith(":"):
                return self.command(stripped)
            for result in self.session.run(text):
                self._show(result)
        except GoatError as e:
            self.write(e.render() + "\n", "error")
        except KeyboardInterrupt:
            self.write("interrupted; nothing was changed\n", "error")
        return None

    def _show(self, r):
        if r.kind == "value":
            self.write(show(r.value) + "\n")
        elif r.kind == "let":
            self.write("%s : %s\n" % (r.name, _type(r.shape)), "type")
        elif r.kind == "def":
            self.write("def %s\n" % r.signature, "type")

    def command(self, text: str):
        word, _, rest = text.partition(" ")
        rest = rest.strip()
        if word in (":quit", ":q", ":exit"):
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
            if not rest:
                self.write(":load needs a file name\n", "error")
            else:
                results = self.session.load(os.path.expanduser(rest))
                self.write("loaded %s: %d statements\n" % (rest, len(results)), "note")
        elif word == ":reset":
            self.session.reset()
            self.write("every name is forgotten\n", "note")
        else:
            self.write("unknown command %s; :help lists the commands\n" % word, "error")
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


def _history():
    path = history_path()
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "a", encoding="utf-8"):
            pass
        return FileHistory(path)
    except OSError:
        return InMemoryHistory()


def main() -> int:
    """Start the REPL on the terminal."""
    return Repl().loop()


if __name__ == "__main__":
    sys.exit(main())
