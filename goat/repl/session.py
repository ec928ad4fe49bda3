"""An interactive session: the state behind the REPL, independent of any terminal.

It is the same parse -> check -> evaluate pipeline as ``goat run``, fed one statement at a time:
the parser in its interactive mode (a bare expression is a statement), one :class:`Checker`
that allows a name to be defined again, and one :class:`Evaluator` that keeps every value (a
later line may use any name).  A statement that fails -- a shape error, a run-time error, a
Ctrl-C -- is taken back whole, so the session keeps exactly the state it had before it.
"""
from __future__ import annotations

import re
import sys
from dataclasses import dataclass

import numpy as np

from ..diagnostics import GoatError, Source
from ..gpu import get_backend
from ..interp.evaluator import Evaluator
from ..lexer import ast
from ..lexer.lexer import open_brackets
from ..lexer.parser import parse
from ..lexer.tokens import STATEMENT_KEYWORDS
from ..ops import REGISTRY, builtin_names
from ..typecheck.checker import Checker, Module, Template, VarBinding, _defined_names
from ..typecheck.program import Program
from ..typecheck.shapes import format_type

_RECURSION_LIMIT = 20_000
_PARTIAL_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*$")


@dataclass
class Result:
    """What one statement did: ``kind`` is let, def, print or value."""
    kind: str
    name: str | None = None
    shape: tuple | None = None
    value: np.ndarray | None = None
    signature: str | None = None


class Session:
    """The names, values and program of one interactive session.

    ``out`` receives what ``print`` statements write (the book's memref format).
    """

    def __init__(self, backend: str = "numpy", out=None):
        self.backend_name = backend
        self.out = out if out is not None else sys.stdout
        self.reset()

    # ------------------------------------------------------------------ state
    def reset(self):
        """Forget every name and value."""
        self.program = Program()
        self.program.journal = []
        self.checker = Checker(self.program, allow_redefinition=True)
        self.evaluator = Evaluator(self.program, get_backend(self.backend_name), out=self.out,
                                   free=False)

    def _snapshot(self):
        c, p, e = self.checker, self.program, self.evaluator
        p.journal = []
        return (len(p.nodes), len(p.main.nodes), len(p.main.effects), dict(c.globals),
                dict(c.where), dict(c.top.what), dict(c.gone), dict(c.shared.modules),
                dict(p.lets), dict(p.defs), list(p.order), len(p.outline), p.templates,
                e._done_nodes, e._done_effects)

    def _restore(self, snap):
        c, p, e = self.checker, self.program, self.evaluator
        (n_nodes, n_main, n_effects, names, lines, what, gone, modules, p.lets, p.defs, p.order,
         n_outline, p.templates, e._done_nodes, e._done_effects) = snap
        for table, key in reversed(p.journal):
            table.pop(key, None)
        p.journal = []
        for current, saved in ((c.globals, names), (c.where, lines), (c.top.what, what),
                               (c.gone, gone), (c.shared.modules, modules)):
            current.clear()
            current.update(saved)
        del p.nodes[n_nodes:]
        del p.main.nodes[n_main:]
        del p.main.effects[n_effects:]
        del p.outline[n_outline:]
        del e.values[n_nodes:]
        c._defining = None
        c.impure = False
        c.depth = 0
        del c.shared.loading[:]
        del c.shared.calls[:]

    def _check(self, stmt):
        old = sys.getrecursionlimit()
        sys.setrecursionlimit(max(old, _RECURSION_LIMIT))
        try:
            return self.checker.check_stmt(stmt)
        except RecursionError:
            raise GoatError("this statement is nested too deeply to check", stmt.loc) from None
        finally:
            sys.setrecursionlimit(old)

    def _evaluate(self, loc):
        old = sys.getrecursionlimit()
        sys.setrecursionlimit(max(old, _RECURSION_LIMIT))
        try:
            self.evaluator.run()
        except RecursionError:
            raise GoatError("this input's blocks are nested too deeply to run", loc) from None
        finally:
            sys.setrecursionlimit(old)

    # ------------------------------------------------------------------ running
    def parse(self, text: str, path: str = "<repl>") -> list:
        return parse(Source(path, text if text.endswith("\n") else text + "\n"),
                     interactive=True).stmts

    def run(self, text: str, path: str = "<repl>") -> list:
        """Check and run each statement of ``text`` in turn; a list of :class:`Result`.

        Raises GoatError at the first statement that fails, after taking that statement back
        (the statements before it stay done).  KeyboardInterrupt likewise.
        """
        results = []
        for stmt in self.parse(text, path):
            results.append(self.run_statement(stmt))
        return results

    def run_statement(self, stmt) -> Result:
        snap = self._snapshot()
        try:
            checked = self._check(stmt)
            self._evaluate(stmt.loc)
        except BaseException:
            self._restore(snap)
            raise
        self.program.journal = []
        return self._result(stmt, checked)

    def _result(self, stmt, checked) -> Result:
        t = type(stmt)
        if t is ast.Let:
            return Result("let", stmt.name, checked.shape)
        if t is ast.Var:
            return Result("var", stmt.name, checked.shape)
        if t is ast.Assign:
            return Result("assign", stmt.name, checked.shape)
        if t is ast.LetTuple:
            return Result("lets", ", ".join(stmt.names), tuple(n.shape for n in checked))
        if t is ast.Def:
            return Result("def", stmt.name, checked.shape, signature=checked.signature())
        if t is ast.Print or t is ast.PrintFormat or t is ast.Save:
            return Result("print", None, getattr(checked, "shape", None))
        if t is ast.Import:
            return Result("import", stmt.module)
        if t is not ast.ExprStmt:           # a for or an if block
            return Result("block")
        # a copy: the session's own value must not change if the caller changes this one
        if isinstance(checked, tuple):
            return Result("value", None, tuple(n.shape for n in checked),
                          tuple(np.array(self.evaluator.value(n)) for n in checked))
        return Result("value", None, checked.shape, np.array(self.evaluator.value(checked)))

    def load(self, path: str) -> list:
        """Run a whole file into the session: checked whole first, taken back whole on error."""
        from ..api import read_source
        source = read_source(path)
        module = parse(source)
        stmts = module.stmts
        snap = self._snapshot()
        seen = {}
        try:
            self.checker.look_ahead(module)     # a file's rules: use after definition...
            checked = []
            for stmt in stmts:
                for name in _defined_names(stmt):
                    if name in seen:            # ... and each name once in the file
                        raise GoatError("'%s' is already defined on line %d; a name can be "
                                        "defined only once in a file" % (name, seen[name]),
                                        stmt.loc)
                    seen[name] = stmt.loc.line
                checked.append(self._check(stmt))
            self._evaluate(None)
        except BaseException:
            self._restore(snap)
            raise
        finally:
            self.checker.later = {}
        self.program.journal = []
        return [self._result(s, c) for s, c in zip(stmts, checked)]

    # ------------------------------------------------------------------ looking, not running
    def describe(self, text: str) -> str:
        """The static type of what ``text`` would do, without running or keeping anything:
        ``q : tensor[112x8]`` for a let, a def's signature, an expression's type.

        Raises GoatError for the error it would raise.
        """
        return self._describe(text)[1]

    def _describe(self, text: str):
        """(statement kind, description) of the last statement of ``text`` (inside a block
        when it ends in one: the statement being typed)."""
        stmts = self.parse(text)
        if not stmts:
            return None, "", None
        snap = self._snapshot()
        self.checker.last = None
        try:
            for stmt in stmts:
                try:
                    checked = self._check(stmt)
                except GoatError as e:
                    # a def still being typed has no return yet: show what is there so far
                    if not (type(stmt) is ast.Def and "must end with return" in e.message
                            and self.checker.last is not None):
                        raise
            if type(stmt) in (ast.For, ast.If, ast.Def) and self.checker.last is not None:
                inner, value = self.checker.last
                if inner.loc.start >= stmt.loc.start:
                    stmt, checked = inner, value
                    if type(stmt) is ast.Return:
                        stmt = ast.ExprStmt(stmt.expr, stmt.loc)
        finally:
            self._restore(snap)
        t = type(stmt)
        if t is ast.Let:
            return "let", "%s : %s" % (stmt.name, format_type(checked.shape)), stmt
        if t is ast.Var:
            return "let", "var %s : %s" % (stmt.name, format_type(checked.shape)), stmt
        if t is ast.Assign:
            return "let", "%s : %s" % (stmt.name, format_type(checked.shape)), stmt
        if t is ast.LetTuple:
            return "let", "%s : %s" % (", ".join(stmt.names), ", ".join(
                format_type(n.shape) for n in checked)), stmt
        if t is ast.Def:
            return "def", "def " + checked.signature(), stmt
        if t is ast.Import:
            return "let", "import %s" % stmt.module, stmt
        if t is ast.Print:
            return "print", format_type(checked.shape), stmt
        if t is ast.ExprStmt:
            if isinstance(checked, tuple):
                return "expr", "(%s)" % ", ".join(format_type(n.shape) for n in checked), stmt
            return "expr", format_type(checked.shape), stmt
        return "let", "", stmt          # a block, a format print, a save: nothing to show

    def hint(self, text: str, width: int = 100) -> str:
        """The bottom-toolbar hint for input being typed: its shape, or the error it would
        raise; '' while it is plainly unfinished.  At most about ``width`` characters."""
        body = text.strip()
        if not body or body.startswith(":") or any(k.startswith(body) for k in STATEMENT_KEYWORDS):
            return ""               # nothing yet, a command, or a keyword half typed
        missing = open_brackets(text)
        if "[" in missing:
            return ""               # a literal still being typed has no shape yet
        if "{" in missing:          # inside a block: the statement being typed, in its block
            if text.rstrip().endswith("{"):
                return ""
            closing = "".join(")" if c == "(" else "\n}" for c in reversed(missing))
            try:
                kind, described, stmt = self._describe(text + closing)
            except GoatError as e:
                if _incomplete(e) or (missing[-1] == "(" and not _shape_complaint(e)):
                    return ""
                return "error: " + e.message
            return described
        candidate = text + ")" * len(missing)
        try:
            kind, described, stmt = self._describe(candidate)
        except GoatError as e:
            if _incomplete(e) or (missing and not _shape_complaint(e)):
                return ""           # an open bracket: the rest is still to come
            partial = _PARTIAL_NAME.search(body)
            if partial and e.message.startswith("unknown ") and "'%s'" % partial.group() in e.message:
                word = partial.group()
                known = [n for n, _ in self.names()] + builtin_names()
                matches = sorted(n for n in known if n.startswith(word) and n != word)
                if matches:
                    return "%s…  (%s)" % (word, ", ".join(matches[:6]) + (", …" if len(matches) > 6 else ""))
            return "error: " + e.message
        if kind in (None, "let", "def"):
            return described
        expr = stmt.expr if kind == "print" else stmt
        if missing and not re.search(r"\w", text[expr.loc.start:]):
            return ""               # only brackets so far
        shown = " ".join(candidate[expr.loc.start:expr.loc.end].split())
        if missing:                 # show what was typed, not the brackets added to check it
            shown = " ".join(text[expr.loc.start:].split()) + "…"
        room = max(10, width - len(described) - 5)
        if len(shown) > room:
            shown = shown[:room - 1] + "…"
        return "%s  :  %s" % (shown, described)

    # ------------------------------------------------------------------ names
    def names(self) -> list:
        """[(name, description)] of everything defined, in definition order."""
        out = []
        for name in self.program.order:
            v = self.checker.globals.get(name)
            if isinstance(v, Template):
                out.append((name, "def " + v.signature()))
            elif isinstance(v, VarBinding):
                out.append((name, "var " + format_type(v.declared)))
            elif isinstance(v, Module):
                out.append((name, "module"))
            elif v is not None:
                out.append((name, format_type(v.shape)))
        return out

    @staticmethod
    def builtins() -> list:
        """[(name, signature)] of every built-in function."""
        return [(n, REGISTRY[n].signature) for n in builtin_names()]


def _incomplete(e: GoatError) -> bool:
    """Is this the complaint of a statement that is only not finished yet?"""
    m = e.message
    return ("found the end of the line" in m or "ends early" in m or "is never closed" in m)


def _shape_complaint(e: GoatError) -> bool:
    """A shape error proper, worth showing even while a bracket is still open."""
    return e.message.startswith(("cannot ", "unknown ", "argument ", "size variable "))
