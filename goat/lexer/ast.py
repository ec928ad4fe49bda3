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
    """``-x`` or ``not x``."""
    __slots__ = ("op", "operand")

    def __init__(self, op: str, operand: Expr, loc: Loc):
        self.op = op
        self.operand = operand
        self.loc = loc


class Binary(Expr):
    """``left OP right`` for OP in ``+ - * / @ % == != < <= > >= and or``; ``op_loc`` is where
    the operator stands."""
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


class Tuple(Expr):
    """``(a, b, ...)``: several values, returned by a def or bound by ``let a, b = ...``."""
    __slots__ = ("items",)

    def __init__(self, items: list, loc: Loc):
        self.items = items
        self.loc = loc


class Index(Expr):
    """``value[s1, s2, ...]``: a subscript per leading axis, each an Expr (an index, which takes
    one cell of its axis and drops the axis, as NumPy's does) or a :class:`Slice` (a run of
    cells, the axis kept).  ``bracket_loc`` covers the brackets and what is between them."""
    __slots__ = ("value", "items", "bracket_loc")

    def __init__(self, value: Expr, items: list, loc: Loc, bracket_loc: Loc):
        self.value = value
        self.items = items
        self.loc = loc
        self.bracket_loc = bracket_loc


class Slice(Expr):
    """``lo:hi`` or ``lo:hi:step`` in a subscript; a bound left out is None."""
    __slots__ = ("lo", "hi", "step")

    def __init__(self, lo, hi, step, loc: Loc):
        self.lo = lo
        self.hi = hi
        self.step = step
        self.loc = loc


class Ellipsis(Expr):
    """``...`` in a subscript: the whole axes it stands for, as many as the other subscripts
    leave (NumPy's Ellipsis, x[..., 0])."""
    __slots__ = ()

    def __init__(self, loc: Loc):
        self.loc = loc


class TypeArg(Expr):
    """A type written as an argument: ``reshape(x, tensor[2x3x4])``.  ``ann`` is its TypeAnn."""
    __slots__ = ("ann",)

    def __init__(self, ann, loc: Loc):
        self.ann = ann
        self.loc = loc


class Keyword(Expr):
    """An argument given by its parameter's name, ``eps=1e-08`` in ``f(w, eps=1e-08)``."""
    __slots__ = ("name", "value", "name_loc")

    def __init__(self, name: str, value: Expr, loc: Loc, name_loc: Loc):
        self.name = name
        self.value = value
        self.loc = loc
        self.name_loc = name_loc


class StringArg(Expr):
    """A string written as an argument: ``load("x.npy")``; ``value`` has escapes processed."""
    __slots__ = ("value",)

    def __init__(self, value: str, loc: Loc):
        self.value = value
        self.loc = loc


class TypeAnn:
    """A written type: ``tensor[6x6]``, ``tensor[?x4]``, ``tensor[N, K]``, ``scalar``.

    ``dims`` holds ints, None for ``?``, and strings for size variables.  A params block's
    name written as a type (``p: theta``) has ``layout`` that name and ``dims`` empty: the
    checker knows its size.
    """
    __slots__ = ("dims", "loc", "layout")

    def __init__(self, dims, loc: Loc, layout=None):
        self.dims = dims
        self.loc = loc
        self.layout = layout


class Stmt:
    __slots__ = ("loc",)


class Param:
    """A def's parameter: ``name: type``, or ``name: type = default`` (a number or a list,
    the value a call that leaves it out gives it)."""
    __slots__ = ("name", "type", "loc", "default")

    def __init__(self, name: str, type: TypeAnn, loc: Loc, default=None):
        self.name = name
        self.type = type
        self.loc = loc
        self.default = default


class Def(Stmt):
    """``def f(...) = EXPR`` (``body`` an Expr) or ``def f(...) { ... return EXPR }`` (``body`` a
    list of statements, ``block`` true).  ``ret`` is the declared result: None, a TypeAnn, or a
    list of TypeAnn for a tuple."""
    __slots__ = ("name", "params", "body", "name_loc", "ret", "block")

    def __init__(self, name: str, params: list, body, loc: Loc, name_loc: Loc, ret=None,
                 block: bool = False):
        self.name = name
        self.params = params
        self.body = body
        self.loc = loc
        self.name_loc = name_loc
        self.ret = ret
        self.block = block


class Let(Stmt):
    __slots__ = ("name", "type", "expr", "name_loc")

    def __init__(self, name: str, type: TypeAnn | None, expr: Expr, loc: Loc, name_loc: Loc):
        self.name = name
        self.type = type
        self.expr = expr
        self.loc = loc
        self.name_loc = name_loc


class LetTuple(Stmt):
    """``let a, b = EXPR``: binds each name to one value of a tuple; ``kind`` "var" for
    ``var a, b = EXPR``, "assign" for ``a, b = EXPR`` (vars assigned).  ``types``: None, or
    each name's annotation (a TypeAnn or None: ``let g: theta, n = ...``).  ``items``: None,
    or for an assignment with subscripts (``h[l], c[l] = EXPR``) each name's (subscripts, the
    brackets' Loc), or None for a name assigned whole."""
    __slots__ = ("names", "expr", "name_locs", "kind", "types", "items")

    def __init__(self, names: list, expr: Expr, loc: Loc, name_locs: list, kind: str = "let",
                 types=None, items=None):
        self.names = names
        self.expr = expr
        self.loc = loc
        self.name_locs = name_locs
        self.kind = kind
        self.types = types
        self.items = items


class Var(Stmt):
    """``var NAME[: TYPE] = EXPR``: a name whose value assignment may change (same shape)."""
    __slots__ = ("name", "type", "expr", "name_loc")

    def __init__(self, name: str, type, expr: Expr, loc: Loc, name_loc: Loc):
        self.name = name
        self.type = type
        self.expr = expr
        self.loc = loc
        self.name_loc = name_loc


class Member(Var):
    """``NAME: TYPE = EXPR``, a member of a params block with its shape written (a statement
    of its own kind, laid out as a var's)."""
    __slots__ = ()


class Assign(Stmt):
    """``NAME = EXPR`` (and ``NAME += EXPR``, already written out as ``NAME = NAME + (EXPR)``);
    ``NAME[s1, ...] = EXPR`` has the subscripts in ``items`` (else None) and their brackets'
    place in ``bracket_loc`` (``NAME[s] += EXPR`` is ``NAME[s] = NAME[s] + (EXPR)``)."""
    __slots__ = ("name", "expr", "name_loc", "items", "bracket_loc")

    def __init__(self, name: str, expr: Expr, loc: Loc, name_loc: Loc, items=None,
                 bracket_loc=None):
        self.name = name
        self.expr = expr
        self.loc = loc
        self.name_loc = name_loc
        self.items = items
        self.bracket_loc = bracket_loc


class Params(Stmt):
    """``params NAME { MEMBER ... }``: a model's parameters, each a member (``w1 = EXPR`` or
    ``w1: tensor[3x8] = EXPR``, a :class:`Member`), held as one var NAME -- a vector of every
    member's cells, member after member, each row-major -- read and written member by member
    as ``NAME.w1``.  ``body`` holds the block's statements as written."""
    __slots__ = ("name", "body", "name_loc", "head")

    def __init__(self, name: str, body: list, loc: Loc, name_loc: Loc):
        self.name = name
        self.body = body
        self.loc = loc
        self.name_loc = name_loc
        self.head = loc




class For(Stmt):
    """``for NAME in LO..HI { BODY }``: BODY runs for NAME = LO, LO + 1, ..., HI - 1."""
    __slots__ = ("name", "lo", "hi", "body", "name_loc", "head")

    def __init__(self, name: str, lo: Expr, hi: Expr, body: list, loc: Loc, name_loc: Loc):
        self.name = name
        self.lo = lo
        self.hi = hi
        self.body = body
        self.loc = loc
        self.name_loc = name_loc
        self.head = loc         # the header, up to its '{' (loc grows to the closing '}')


class If(Stmt):
    """``if COND { BODY } else { ORELSE }``; ``else if`` is an If alone in ORELSE (``chained``)."""
    __slots__ = ("cond", "body", "orelse", "chained", "head")

    def __init__(self, cond: Expr, body: list, orelse: list, loc: Loc, chained: bool = False):
        self.cond = cond
        self.body = body
        self.orelse = orelse
        self.loc = loc
        self.chained = chained
        self.head = loc         # the header, up to its '{' (loc grows to the closing '}')


class Return(Stmt):
    """``return EXPR`` or ``return (A, B)``: the value of a block-bodied def."""
    __slots__ = ("expr",)

    def __init__(self, expr: Expr, loc: Loc):
        self.expr = expr
        self.loc = loc


class Import(Stmt):
    """``import NAME``: the defs and lets of NAME.mg, used as NAME.f(...)."""
    __slots__ = ("module", "module_loc")

    def __init__(self, module: str, loc: Loc, module_loc: Loc):
        self.module = module
        self.loc = loc
        self.module_loc = module_loc


class Save(Stmt):
    """``save(EXPR, "file.npy")``: writes the value to a NumPy .npy file.  ``path`` is the
    name, or, for a name with ``{fields}`` (``"w_{step}.npy"``), its parts as PrintFormat's."""
    __slots__ = ("expr", "path", "path_loc")

    def __init__(self, expr: Expr, path: str, loc: Loc, path_loc: Loc):
        self.expr = expr
        self.path = path
        self.loc = loc
        self.path_loc = path_loc


class PrintFormat(Stmt):
    """``print "text {expr} more {expr:.6f}"``: ``parts`` are strings and Field objects."""
    __slots__ = ("parts",)

    def __init__(self, parts: list, loc: Loc):
        self.parts = parts
        self.loc = loc


class Assert(Stmt):
    """``assert COND, "message {expr}"``: the program stops with the message where COND (one
    number) is 0.  ``parts`` are those of a format string (strings and Field objects), or None
    (the message is then the condition as written)."""
    __slots__ = ("cond", "parts")

    def __init__(self, cond: Expr, parts, loc: Loc):
        self.cond = cond
        self.parts = parts
        self.loc = loc


class Field:
    """One ``{expr:spec}`` of a format string (``spec`` None when absent)."""
    __slots__ = ("expr", "spec", "loc")

    def __init__(self, expr: Expr, spec, loc: Loc):
        self.expr = expr
        self.spec = spec
        self.loc = loc


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


class Header(Stmt):
    """A block's opening line, as the parser reads it one statement at a time: ``kind`` is
    for, if, elif, else or def; ``stmt`` the For/If/Def to fill with the block's statements.
    parser.py assembles blocks from headers and Close statements; no Header leaves the parser.
    ``soft``: for a header written without its ``{`` (its error reported), the Broken that
    stands for it where no block can be found under it; its block ends where the indentation
    or a ``}`` says."""
    __slots__ = ("kind", "stmt", "soft")

    def __init__(self, kind: str, stmt, loc: Loc):
        self.kind = kind
        self.stmt = stmt
        self.loc = loc
        self.soft = None


class Close(Stmt):
    """A block's closing ``}`` (parser-internal, like Header)."""
    __slots__ = ()

    def __init__(self, loc: Loc):
        self.loc = loc


class Broken(Stmt):
    """A statement that could not be read (its syntax error is reported), standing in for it
    so that the rest of the file can be checked: ``names`` are those it seems to define."""
    __slots__ = ("names",)

    def __init__(self, names: tuple, loc: Loc):
        self.names = names
        self.loc = loc


class Module:
    """A parsed file: its statements in order."""
    __slots__ = ("source", "stmts")

    def __init__(self, source, stmts: list):
        self.source = source
        self.stmts = stmts


def assigned_names(stmts, out, memo=None):
    """Append the names ``stmts`` assign (in nested blocks too, not in defs) to ``out``.
    ``memo`` (a dict) keeps each block's names, for a caller that asks again for the blocks
    inside (each if of an else-if chain asks for the rest: quadratic without it)."""
    for s in stmts:
        t = type(s)
        if t is Assign:             # (p.w1 = v assigns the params var p)
            out.append(s.name.partition(".")[0])
        elif t is LetTuple and s.kind == "assign":
            out.extend(n.partition(".")[0] for n in s.names if n != "_")
        elif t is Broken:           # a statement that could not be read: what it names
            out.extend(s.names)
        elif t is For or t is If:
            names = memo.get(s) if memo is not None else None
            if names is None:
                names = []
                assigned_names(s.body, names, memo)
                if t is If:
                    assigned_names(s.orelse, names, memo)
                if memo is not None:
                    memo[s] = names
            out.extend(names)
