"""Source text -> syntax tree, with lark's LALR(1) parser.

The tree is built while parsing (lark's inline transformer), so no intermediate parse tree
is kept.  Syntax errors become :class:`~goat.diagnostics.GoatError` naming what was expected and
what was found.
"""
from __future__ import annotations

import threading
from importlib import resources

import numpy as np
from lark import Lark, Transformer, UnexpectedInput, UnexpectedToken
from lark.lexer import Lexer as LarkLexer

from ..diagnostics import GoatError, Loc, Source
from . import ast
from .lexer import tokenize
from .tokens import DESCRIPTIONS

EXPRESSION_START = {"NAME", "NUMBER", "LPAR", "MINUS", "ARRAY", "LSQB"}
STATEMENT_START = {"DEF", "LET", "PRINT"}


class _TokenListLexer(LarkLexer):
    """Feeds lark the token list :func:`tokenize` made (lark's custom-lexer interface 2)."""

    __future_interface__ = 2

    def __init__(self, lexer_conf):
        pass

    def lex(self, lexer_state, parser_state):
        return iter(lexer_state.text)


def _loc(source, tok) -> Loc:
    return Loc(source, tok.line, tok.column, tok.end_line, tok.end_column)


class _Build(Transformer):
    """Builds goat.lexer.ast nodes as lark reduces rules."""

    source: Source = None

    def __default_token__(self, tok):
        return tok

    # ---- statements
    def start(self, stmts):
        return stmts

    def def_stmt(self, c):
        kw, name, _lp, params, _rp, body = c
        return ast.Def(str(name), params or [], body, _loc(self.source, kw).to(body.loc),
                       _loc(self.source, name))

    def let_stmt(self, c):
        kw, name, typ, expr = c
        ann = ast.TypeAnn(typ.dims, _loc(self.source, typ)) if typ is not None else None
        return ast.Let(str(name), ann, expr, _loc(self.source, kw).to(expr.loc), _loc(self.source, name))

    def print_stmt(self, c):
        kw, expr = c
        return ast.Print(expr, _loc(self.source, kw).to(expr.loc))

    def params(self, c):
        return c

    def param(self, c):
        name, typ = c
        tloc = _loc(self.source, typ)
        return ast.Param(str(name), ast.TypeAnn(typ.dims, tloc), _loc(self.source, name).to(tloc))

    # ---- expressions
    def binary(self, c):
        left, op, right = c
        return ast.Binary(str(op), left, right, left.loc.to(right.loc), _loc(self.source, op))

    def negate(self, c):
        op, operand = c
        return ast.Unary("-", operand, _loc(self.source, op).to(operand.loc))

    def number(self, c):
        tok = c[0]
        return ast.Number(float(tok), _loc(self.source, tok))

    def signed_number(self, c):
        minus, tok = c
        return ast.Number(-float(tok), _loc(self.source, minus).to(_loc(self.source, tok)))

    def name(self, c):
        tok = c[0]
        return ast.Name(str(tok), _loc(self.source, tok))

    def call(self, c):
        name, _lp, args, rp = c
        nloc = _loc(self.source, name)
        return ast.Call(str(name), args or [], nloc.to(_loc(self.source, rp)), nloc)

    def args(self, c):
        return c

    def group(self, c):
        return c[1]

    def array(self, c):
        tok = c[0]
        return ast.Array(tok.array, _loc(self.source, tok))

    def list(self, c):
        lsq, *elements, rsq = c
        loc = _loc(self.source, lsq).to(_loc(self.source, rsq))
        elements = [e for e in elements if e is not None]
        if not elements:
            return ast.Array(np.zeros((0,), dtype=np.float64), loc)
        numbers = [isinstance(e, ast.Number) for e in elements]
        if all(numbers):
            return ast.Array(np.array([e.value for e in elements], dtype=np.float64), loc)
        if any(numbers):
            bad = elements[numbers.index(not numbers[0])]
            raise GoatError("a list literal cannot mix numbers and lists", bad.loc)
        first = elements[0].array.shape
        for e in elements[1:]:
            if e.array.shape != first:
                raise GoatError(
                    "the rows of a list literal must have equal length: this row has %s, the "
                    "first row has %s" % (_count(e.array.shape), _count(first)), e.loc)
        return ast.Array(np.stack([e.array for e in elements]), loc)


def _count(shape) -> str:
    if len(shape) == 1:
        return "%d number%s" % (shape[0], "" if shape[0] == 1 else "s")
    return "shape " + "x".join(map(str, shape))


_BUILD = _Build()
_LOCK = threading.Lock()
_PARSER = Lark(
    resources.files(__package__).joinpath("grammar.lark").read_text(encoding="utf-8"),
    parser="lalr", lexer=_TokenListLexer, transformer=_BUILD, maybe_placeholders=True,
)


def _describe_found(tok) -> str:
    kind = tok.type
    if kind == "NAME":
        return "name '%s'" % tok
    if kind == "NUMBER":
        return "number %s" % tok
    if kind == "TYPE":
        return "the type %s" % tok
    return DESCRIPTIONS.get(kind, repr(str(tok)))


def _describe_expected(expected) -> str:
    expected = set(expected)
    if len(expected) > 1:
        expected.discard("$END")
    words = []
    if EXPRESSION_START & expected and expected >= {"NAME", "NUMBER", "LPAR"}:
        words.append("an expression")
        expected -= EXPRESSION_START
    if {"NUMBER", "MINUS", "LSQB"} <= expected and "NAME" not in expected:
        words.append("a number")           # inside a list literal
        expected -= {"NUMBER", "MINUS", "LSQB", "ARRAY"}
    if STATEMENT_START <= expected:
        words.append("a statement (def, let or print)")
        expected -= STATEMENT_START
    words += sorted(DESCRIPTIONS.get(t, t) for t in expected)
    if not words:
        return "something else"
    if len(words) == 1:
        return words[0]
    return ", ".join(words[:-1]) + " or " + words[-1]


def parse(source: Source) -> ast.Module:
    """Parse a whole program.  Raises GoatError for any syntax error."""
    tokens = tokenize(source)
    try:
        with _LOCK:
            _BUILD.source = source
            stmts = _PARSER.parse(tokens)
    except UnexpectedToken as e:
        tok = e.token
        if tok.type == "$END":
            last = tokens[-1] if tokens else None
            loc = _loc(source, last) if last is not None else Loc(source, 1, 1, 1, 1)
            raise GoatError("syntax error: the program ends early; expected %s"
                            % _describe_expected(e.expected), loc) from None
        raise GoatError("syntax error: expected %s, found %s"
                        % (_describe_expected(e.expected), _describe_found(tok)),
                        _loc(source, tok)) from None
    except UnexpectedInput as e:       # any other lark complaint
        raise GoatError("syntax error: %s" % str(e).splitlines()[0],
                        Loc(source, getattr(e, "line", 1) or 1, getattr(e, "column", 1) or 1)) from None
    except Exception as e:
        # lark wraps errors raised in our callbacks (e.g. a ragged literal)
        inner = getattr(e, "orig_exc", None)
        if isinstance(inner, GoatError):
            raise inner from None
        raise
    return ast.Module(source, stmts)
