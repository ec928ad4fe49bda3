"""The syntax tree the parser builds and the checker consumes.

Plain classes with slots: a 12,000-line training program makes a few hundred thousand of
them, so they carry nothing but the fields and a :class:`~goat.diagnostics.Loc`.
"""
from __future__ import annotations

from ..diagnostics import Loc


class Expr:
    __slots__ = ("loc",)


class Number(Expr):
    """A number literal; a scalar (rank 0)."""
    __slots__ = ("value",)

    def __init__(self, value: float, loc: Loc):
        self.value = value
        self.loc = loc


class Array(Expr):
    """A nested list literal, already turned into a float64 NumPy array."""
    __slots__ = ("array",)

    def __init__(self, array, loc: Loc):
        self.array = array
        self.loc = loc


class Name(Expr):
    __slots__ = ("name",)

    def __init__(self, name: str, loc: Loc):
        self.name = name
        self.loc = loc


class Unary(Expr):
    """``-x``."""
    __slots__ = ("op", "operand")

    def __init__(self, op: str, operand: Expr, loc: Loc):
        self.op = op
        self.operand = operand
        self.loc = loc


class Binary(Expr):
    """``left OP right`` for OP in ``+ - * / @``; ``op_loc`` is where the operator stands."""
    __slots__ = ("op", "left", "right", "op_loc")

    def __init__(self, op: str, left: Expr, right: Expr, loc: Loc, op_loc: Loc):
        self.op = op
        self.left = left
        self.right = right
        self.loc = loc
        self.op_loc = op_loc


class Call(Expr):
    __slots__ = ("name", "args", "name_loc")

    def __init__(self, name: str, args: list, loc: Loc, name_loc: Loc):
        self.name = name
        self.args = args
        self.loc = loc
        self.name_loc = name_loc


class TypeAnn:
    """A written type: ``tensor[6x6]``, ``tensor[?x4]``, ``tensor[N, K]``, ``scalar``.

    ``dims`` holds ints, None for ``?``, and strings for size variables.
    """
    __slots__ = ("dims", "loc")

    def __init__(self, dims: tuple, loc: Loc):
        self.dims = dims
        self.loc = loc


class Stmt:
    __slots__ = ("loc",)


class Param:
    __slots__ = ("name", "type", "loc")

    def __init__(self, name: str, type: TypeAnn, loc: Loc):
        self.name = name
        self.type = type
        self.loc = loc


class Def(Stmt):
    __slots__ = ("name", "params", "body", "name_loc")

    def __init__(self, name: str, params: list, body: Expr, loc: Loc, name_loc: Loc):
        self.name = name
        self.params = params
        self.body = body
        self.loc = loc
        self.name_loc = name_loc


class Let(Stmt):
    __slots__ = ("name", "type", "expr", "name_loc")

    def __init__(self, name: str, type: TypeAnn | None, expr: Expr, loc: Loc, name_loc: Loc):
        self.name = name
        self.type = type
        self.expr = expr
        self.loc = loc
        self.name_loc = name_loc


class Print(Stmt):
    __slots__ = ("expr",)

    def __init__(self, expr: Expr, loc: Loc):
        self.expr = expr
        self.loc = loc


class ExprStmt(Stmt):
    """A bare expression (the REPL only): evaluated and shown."""
    __slots__ = ("expr",)

    def __init__(self, expr: Expr, loc: Loc):
        self.expr = expr
        self.loc = loc


class Module:
    """A parsed file: its statements in order."""
    __slots__ = ("source", "stmts")

    def __init__(self, source, stmts: list):
        self.source = source
        self.stmts = stmts
