"""The checker: syntax tree -> typed program, finding every shape error before anything runs.

Each statement is checked in order (a name must be defined before it is used), into the
:class:`~goat.typecheck.program.Region` it belongs to:

* ``let NAME = EXPR`` binds NAME to EXPR's node: computed once, however often it is used;
  ``var NAME = EXPR`` binds a name that assignment may rebind, to a value of the same shape;
* ``def`` checks its body once, with each parameter at its declared shape (size variables
  rigid), into a region of its own kept in a :class:`Template`; a call instantiates the
  template on the argument nodes.  Calls inside a body stay CALL nodes in the template and are
  memoized per (def, arguments) when instantiated, so a deep nest of defs (the book's "first
  version" of its training program) costs what the one-let-per-step version costs;
* ``for`` and ``if`` check their blocks once, each into a region of its own whose block
  arguments are the loop index and the vars the block assigns (found before the block is
  checked); after the block those vars are rebound to the loop's or branch's results;
* ``print``, a format ``print`` and ``save`` record effects; ``import`` checks a module once.

Shapes with ``?`` pass the static check when they could fit, and the node is marked to check
again at run time with the same rule and message (LANGUAGE.md Part A, Errors).
"""
from __future__ import annotations

import functools
import os
import re

from ..diagnostics import GoatError, Loc, frame_notes
from ..lexer import ast
from ..lexer.lexer import SizeExpr
from ..lexer.tokens import KEYWORDS, TYPE_WORDS
from ..interp.fmt import field_shape_message
from ..ops import OPERATORS, UNARY_OPERATORS, lookup
from ..ops.registry import REGISTRY, TRANSFORMS, FileName, OpError, builtin_names
from .program import (ARG, BRANCH, CALL, CAST, CONST, GET, GRAD, LOOP, OP, Node, Program,
                      Region, known_number, subregions)
from .shapes import (RunDim, RunPoly, ShapeError, SizePoly, SizeVar, bind, broadcast, cells, check_size,
                     compatible, format_shape, format_type, is_symbolic, size_add, size_div,
                     size_floordiv, size_mul, size_names, size_value, solve_size)

_NEGATE = UNARY_OPERATORS["-"]
_NOT = UNARY_OPERATORS["not"]
_BIND = REGISTRY["bind"]


MAX_NODES = 500_000     # the checked program's size, at most: a few hundred MB, a few seconds


class CheckCancelled(BaseException):
    """Raised inside the checker when its ``cancel`` callable says to stop (the REPL's hint
    gives up on a check that takes too long, or that the next key made useless).  A
    BaseException, so that no ``except Exception`` on the way swallows it."""


class Template:
    """A checked ``def``: parameters with declared shapes, and the body as a region whose block
    arguments are the parameters.  ``result`` is the body's value: a node, or a tuple of nodes
    for a def that returns several values."""

    __slots__ = ("name", "params", "region", "result", "has_vars", "loc", "index", "pure",
                 "qualname", "_flat", "has_grad", "generic", "stmt", "checker", "specs",
                 "display", "scope", "_book", "_reads", "let_sizes", "layouts", "defaults",
                 "stmt_ret", "home_layouts", "polys")

    def __init__(self, name, params, loc, index):
        self.name = name
        self.qualname = name        # as messages name it: nn.layer_norm for a module's def
        self._flat = None
        self.params = params        # [(name, declared shape, loc)]
        self.region = Region("def", None, loc)
        self.result = None
        self.has_vars = any(is_symbolic(d) for _, s, _ in params for d in s)
        self.polys = []             # the sizes its body writes as arithmetic, each call checks
        #                             are from 0: (SizePoly, Loc, what it is or None)
        self.loc = loc
        self.index = index
        self.pure = True            # no effects, no file reads: a call may be shared
        self.has_grad = False       # its body calls grad: each parameter is a value of its own
        # a def with a parameter typed tensor[..., N, C]: the parameters as declared (the
        # ``params`` above are its form with no leading sizes), its statement and the checker
        # of its file, to check it again for each leading shape a call gives (``specs``)
        self.generic = None
        self.stmt = None
        self.checker = None
        self.specs = {}
        self.display = None         # a generic def's result with ... as written (signature)
        self.layouts = {}           # parameter -> the Layout its type names (p: theta)
        self.defaults = {}          # parameter -> its default, as written (a literal's Expr)
        self.stmt_ret = None        # its declared result as written (a TypeAnn, a list, None)
        self.home_layouts = {}      # the params blocks its file defines (-> theta names one)
        self.scope = None           # the names it saw when written (its later checks see them)
        self.let_sizes = {}         # the lets its parameters' types name: name (a let's, or
        #                             arithmetic's) -> (size, Loc, the let's name)
        self._book = None
        self._reads = None

    def reads(self):
        """What a call of this def may read from outside its body, found once: (the ids of
        the nodes outside it that its body and result use -- a top-level let it names --,
        the defs its body calls)."""
        if self._reads is None:
            region = self.region
            ids = set(region.free_values())
            nodes = self.result if isinstance(self.result, tuple) else (self.result,)
            ids.update(n.id for n in nodes if n is not None and n.region is not region)
            called = []
            stack = [region]
            while stack:
                r = stack.pop()
                for n in r.nodes:
                    if n.kind == CALL:
                        called.append(n.op)
                    stack.extend(subregions(n))
                stack.extend(r.inner)
            self._reads = (frozenset(ids), tuple(called))
        return self._reads

    def flat(self):
        """The body as a flat list for fast instantiation, when it is only ops, casts, calls and
        tuple elements (no blocks, no effects: the common def): ([(kind, node, args)], result),
        where an argument is a slot number (the parameters first, then the entries) or a node
        from outside the body.  False for other bodies."""
        if self._flat is None:
            region = self.region
            slot = {p.id: i for i, p in enumerate(region.params)}
            entries = []
            ok = not region.effects
            for n in region.nodes if ok else ():
                kind = n.kind
                if kind == ARG:
                    continue
                if (kind not in (OP, CALL, GET) and not (kind == CAST and len(n.args) == 1)) or (
                        kind == OP and n.attrs and _run_dim_sources(n.attrs)):
                    # (a size its body reads when it runs: copied as a region, which reads it
                    # from the call's own node, _remap_run_dims)
                    ok = False
                    break
                entries.append((kind, n, tuple([slot.get(a.id, a) for a in n.args])))
                slot[n.id] = len(region.params) + len(entries) - 1
            if ok:
                nodes = self.result if isinstance(self.result, tuple) else (self.result,)
                result = tuple(slot.get(n.id, n) for n in nodes)
                self._flat = (entries, result)
            else:
                self._flat = False
        return self._flat

    @property
    def shape(self):
        """The result's shape, or a tuple of shapes for several results."""
        if isinstance(self.result, tuple):
            return tuple(n.shape for n in self.result)
        return self.result.shape

    @property
    def book_result(self) -> bool:
        """Does the result's type have a ``?`` size (as the book types it: a def with a ``?``
        parameter), which a call's known arguments may make known?"""
        if self._book is None:
            shapes = self.shape if isinstance(self.result, tuple) else (self.shape,)
            self._book = any(None in s for s in shapes)
        return self._book

    def signature(self) -> str:
        """``ln_out(h: tensor[112x8], g: tensor[1x8], t: tensor[1x8]) -> tensor[112x8]``"""
        return "%s(%s) -> %s" % (self.name, ", ".join("%s: %s%s" % (p, self.layouts[p].name
                                                         if p in self.layouts
                                                         else format_type(s), _default_text(
                                                             self.defaults.get(p)))
                                                     for p, s, _ in self.generic or self.params),
                                self._result_text())

    def _result_text(self) -> str:
        """The result as the signature shows it: a declared params block by its name."""
        ret, several = self.stmt_ret, isinstance(self.result, tuple)
        if isinstance(ret, ast.TypeAnn) and ret.layout is not None and not several:
            return ret.layout
        if isinstance(ret, list) and several and any(r.layout for r in ret):
            return "(%s)" % ", ".join(r.layout or format_type(s)
                                      for r, s in zip(ret, self.display or self.shape))
        return format_result(self.display or self.shape, several)


def format_result(shape, several: bool) -> str:
    if several:
        return "(%s)" % ", ".join(format_type(s) for s in shape)
    return format_type(shape)


class VarBinding:
    """A ``var``: its current node, its shape (fixed when declared), and where it was declared.
    Immutable: an assignment replaces the binding (so a snapshot of a scope stays valid)."""

    __slots__ = ("node", "declared", "line")

    def __init__(self, node, declared, line):
        self.node = node
        self.declared = declared
        self.line = line


class Layout:
    """A params block's layout: its members in order, each ``(offset, count, shape, layout)``
    -- where its cells begin in the block's vector, how many, the shape they are read in
    (row-major) and, for a member that is itself a params block's value, that block's Layout.
    ``size`` is the vector's length (every member's cells)."""

    __slots__ = ("name", "members", "size", "loc")

    def __init__(self, name, members, size, loc):
        self.name = name
        self.members = members
        self.size = size
        self.loc = loc

    def describe(self) -> str:
        return ", ".join("%s %s" % (m, format_type(shape))
                         for m, (_, _, shape, _) in self.members.items())


class Module:
    """An imported module: the defs and lets of its file, by name."""

    __slots__ = ("name", "path", "names", "layouts", "laid")

    def __init__(self, name, path, names, layouts=None, laid=None):
        self.name = name
        self.path = path
        self.names = names
        self.layouts = layouts or {}    # its params blocks' layouts, by block name
        self.laid = laid or {}          # its lets laid out as a params block -> the Layout


class Scope:
    """The names visible in a block.  ``function`` marks a program's, module's or def body's
    outermost scope: a name defined inside it may not be defined again in a block nested in it,
    and a def body may not assign the vars of the scope around it."""

    __slots__ = ("names", "lines", "sources", "what", "parent", "function", "shadows",
                 "layouts")

    def __init__(self, parent=None, function=False, names=None, lines=None):
        self.names = {} if names is None else names
        self.lines = {} if lines is None else lines
        self.sources = {}           # name -> the Source it was defined in (a REPL's input)
        self.what = {}              # name -> "parameter", "loop variable" (for messages)
        self.shadows = set()        # vars of the code around a block, as the block sees them
        self.layouts = {}           # name -> the Layout of a params block its value has
        self.parent = parent
        self.function = function

    def find(self, name):
        """(binding, scope holding it), or (None, None)."""
        s = self
        while s is not None:
            v = s.names.get(name)
            if v is not None:
                return v, s
            s = s.parent
        return None, None


def _shape_error(e: ShapeError, loc: Loc) -> GoatError:
    return GoatError(e.message, loc)


def _subst(shape, env):
    return tuple(env[d.name][0] if type(d) is SizeVar and d.name in env else
                 _poly_value(d, env) if type(d) is SizePoly else d for d in shape)


def _env_size(env, n):
    """The size a call's bindings ``env`` give size variable ``n``: a number, or arithmetic on
    the sizes of the def the call is written in; None where it is open or known only when
    the call runs."""
    v = env.get(n)
    return v[0] if v is not None and (type(v[0]) is int or is_symbolic(v[0])) else None


def _poly_value(d, env):
    """A size written as arithmetic on size variables, for the call whose sizes ``env``
    binds (None, ``?``, where one is known only when it runs)."""
    return size_value(d, lambda n: _env_size(env, n))


def _run_poly(d, env, run):
    """A size written as arithmetic on size variables, for a call that binds some to ``?``
    sizes read when it runs (``run``: name -> RunDim): a RunPoly, or None where a variable
    has no such size."""
    terms = {}
    names = {}
    for mono, c in d.terms.items():
        dims = []
        for n in mono:
            v = env.get(n, (None,))[0]
            if type(v) is int:
                c *= v
                names[n] = v
            elif v is None and n in run:
                dims.append(run[n])
                names[n] = run[n]
            else:
                return None
        key = tuple(sorted(dims, key=lambda r: (r.node.id, r.axis)))
        terms[key] = terms.get(key, 0) + c
    terms = {m: c for m, c in terms.items() if c}
    if all(not m for m in terms):
        return sum(terms.values())
    return RunPoly(terms, d, names)


def _subst_attr(shape, env):
    """A shape attribute of a def's op for one call: a size variable the call bound to a ``?``
    dimension becomes a RunDim, read from that argument when the op runs (``env[None]``)."""
    run = env.get(None, {})
    out = []
    for d in shape:
        if isinstance(d, SizeVar) and d.name in env:
            v = env[d.name][0]
            out.append(run.get(d.name) if v is None else v)
        elif type(d) is SizePoly:
            v = _poly_value(d, env)
            out.append(_run_poly(d, env, run) if v is None and run else v)
        else:
            out.append(d)
    return tuple(out)


def _target_text(name, loc, part) -> str:
    """A tuple's target as written: ``h``, or ``h[l]`` (its subscripts' text)."""
    if part is None or loc is None:
        return name
    bracket = part[1]
    return loc.source.text[loc.start:bracket.end] if bracket is not None else name


def _all_known(shapes) -> bool:
    """Is every size of ``shapes`` a number known before the run (no ?, no size variable)?"""
    return all(type(d) is int for s in shapes for d in s)


def _unknown(shapes) -> bool:
    """Does any of ``shapes`` have a ``?`` dimension?"""
    for s in shapes:
        if None in s:
            return True
    return False


_cells = cells


class Builder:
    """Makes the nodes of one region.

    In a program's regions (``symbolic`` false) nodes are hash-consed and hoisted (see
    program.py) and def calls are expanded; in a def's region (``symbolic``) a call stays a
    CALL node, instantiated when the def is.
    """

    def __init__(self, checker, region: Region, symbolic: bool):
        self.checker = checker
        self.program = checker.program
        self.region = region
        self.symbolic = symbolic
        # a loop body's invariants go to the loop's pre-region, which runs before the first
        # iteration and only when there is one (no further: the loop may not run at all)
        self.pre = region.parent if region.kind == "for" else None
        self.effects = True         # copies of a region copy its effects (grad's copies do not)
        self.local = False          # hash-consing finds nodes of this region only

    def sub(self, region: Region) -> "Builder":
        b = Builder(self.checker, region, self.symbolic)
        b.effects = self.effects
        b.local = self.local
        return b

    def _home(self, args):
        """The region a new node over ``args`` belongs to: this builder's, or, when none of
        them is computed in this loop body, the loop's pre-region."""
        region = self.region
        if self.pre is None:
            return region
        for a in args:
            if a.region is region:
                return region
        return self.pre

    def _find(self, key, region):
        if self.local:
            return region.table.get(key)
        r = region
        while r is not None:
            node = r.table.get(key)
            if node is not None:
                return node
            r = r.parent
        return None

    def const(self, value, loc):
        return self.checker.const(value, loc)

    def op(self, op, args, loc, attrs=(), shape=None, check=None):
        # the op's name leads the key (the registry keeps the names of the other kinds of key,
        # "s", "a", "cast", "same", "get", "call", from being op names)
        if attrs:
            key = (op.name, attrs) + tuple([a.id for a in args])
        elif len(args) == 1:
            key = (op.name, args[0].id)
        else:
            key = (op.name,) + tuple([a.id for a in args])
        book = None
        if shape is None:
            shapes = [a.shape for a in args]
            try:
                shape = op.shape(*shapes, *attrs)
                if shape not in shapes:     # a new shape (broadcasting, @): can it be held?
                    check_size(shape)
            except ShapeError as e:
                # a value whose sizes the book leaves ? (a ? def's result): an error only its
                # exact sizes show is the book's run-time error, reported when the op runs
                # (on the book's shapes it is still a static error, naming them)
                widened = self.widen(args, loc) if self.checker.soft else None
                if widened is None and op.name in ("narrow", "put") and self._never_runs():
                    # x[step] (= v) in for step in 0..0: no index is ever taken (a size 0 a
                    # --let gave, a dry run), so none is out of range; the shapes as written
                    shape = list(args[0].shape)
                    if op.name == "narrow":
                        shape[attrs[0]] = attrs[1]
                    shape = tuple(shape)
                    widened = ()
                if widened == ():
                    pass
                elif widened is None:
                    raise _shape_error(e, loc) from None
                else:
                    node = self.op(op, widened, loc, attrs)
                    self.defer(e.message, loc)
                    return node
            else:
                if self.checker.soft and any(a.book is not None for a in args):
                    book = self.book_shape(op, args, attrs)
            # a ? size makes the static check incomplete; size variables do not (they are
            # checked symbolically, and each call binds them to sizes the call checks)
            # (an op whose shape rule runs again when it runs, for the sizes a def's call or a
            # ? gives, need not where every size is known: the rule has said all it can)
            check = _unknown(shapes) or (op.checks_at_run_time and (
                self.symbolic or not _all_known(shapes + [shape]) or _run_dim_sources(attrs)))
        elif not check:                 # a def's node, instantiated: its sizes may now be ?
            check = _unknown([a.shape for a in args])
        if attrs and not self.symbolic:
            sources = _run_dim_sources(attrs)
            if sources:                     # sizes read from these values when the op runs
                args = tuple(args) + tuple(s for s in sources if s not in args)
        pure = op.pure
        # (a number computed from others, not written: checked where the code may run)
        verdict = _static_verdict(op, args, attrs, not self._never_runs()) \
            if op.checks_values else None
        if type(verdict) is str and op.name in ("narrow", "put") and self._never_runs():
            verdict = None                  # (x[k * 8:(k + 1) * 8] for k in 0..0: never taken)
        # an op checked again when it runs stays where it is written -- unless its check is
        # sure to pass on sizes all known (a def's copy keeps its template's check): a params
        # member read in a loop, p.w (a narrow of p), is computed once before the loop, not
        # copied out of p at every step
        sure = (check and verdict is True and not _unknown([a.shape for a in args])
                and not _unknown([shape]))
        home = self._home(args) if pure and (not check or sure) else self.region
        if type(verdict) is str:
            # written in the program, sure to fail: where and through which calls, as the
            # run-time error would say (at the user's call of a library def)
            from ..interp.evaluator import _site
            from types import SimpleNamespace
            where, notes = _site(SimpleNamespace(loc=loc, via=tuple(self.checker.calls)))
            raise GoatError(verdict, where, notes=notes)
        if verdict is None and op.name in ("narrow", "put") and self.checker.index_ranges:
            self._narrow_over_loop(op, args, attrs, loc)
        if op.checks_values and home is not self.region and verdict is not True:
            # an op that may stop the program is not hoisted ahead of the loop body's
            # statements before it (their output would be lost); hash-consing still shares it
            home = self.region
        if pure:
            node = self._find(key, home)
            if node is not None:
                return node
        calls = self.checker.calls
        via = tuple(calls) if calls else ()
        make = lambda i: Node(i, OP, op, tuple(args), shape, loc, check, via=via, attrs=attrs,
                              region=home)
        if not (len(self.program.nodes) & 1023):
            self.checker.poll(loc)
        if not pure:
            self.checker.impure = True      # a def reading a file: each call reads it
            node = self.program.new_node(home, OP, op, tuple(args), shape, loc, check=check,
                                         via=via, attrs=attrs)
        else:
            node = self.program.intern(home, key, make)
        if book is not None and book != shape and node.book is None:
            node.book = book
        return node

    def _never_runs(self) -> bool:
        """Is this region inside a loop whose bounds, fixed by the program, give it no
        iteration (for k in 0..0)?"""
        r, dead = self.region, self.checker.dead_loops
        while r is not None and dead:
            if r in dead:
                return True
            r = r.parent
        return False

    @staticmethod
    def book_shape(op, args, attrs):
        """The shape of ``op`` on ``args`` as the book types it (a ``?`` where a ``?`` def's
        result had one), or None where that is not a shape."""
        try:
            return op.shape(*[a.shape if a.book is None else a.book for a in args], *attrs)
        except ShapeError:
            return None

    def _narrow_over_loop(self, op, args, attrs, loc):
        """A narrow whose start a loop's index computes (X[k * B:(k + 1) * B] for k in 0..5),
        in a loop whose bounds the program fixes and that runs every time the loop's body
        does (no if around it): the start, affine in the indices, takes its least and its
        greatest value in some iteration, so a start past the axis at either is an error
        before the run, as it would be when that iteration ran."""
        r = self.region
        ranges = self.checker.index_ranges
        while r is not None:
            if r.kind in ("if", "def"):
                return
            if r.kind == "for" and (not r.params or r.params[0].id not in ranges):
                return      # a loop around it whose bounds the run fixes: it may not run
            r = r.parent
        if self._never_runs():
            return          # (a loop around it of no iterations: for i in 0..0)
        pos = 1 if op.name == "narrow" else 2       # (put(x, v, start): its start)
        span = _affine_range(args[pos], self.checker.index_ranges)
        if span is None or span[0] == span[1]:
            return
        for v, at in ((span[0], span[2]), (span[1], span[3])):
            import numpy as np
            try:
                op.static_check([None] * pos + [np.float64(v)], [a.shape for a in args],
                                attrs)
            except OpError as e:
                from ..interp.evaluator import _site
                from types import SimpleNamespace
                where, notes = _site(SimpleNamespace(loc=loc, via=tuple(self.checker.calls)))
                when = ", ".join("%s = %s" % (self._index_name(i), _number_text(k))
                                 for i, k in sorted(dict(at).items()))
                raise GoatError(e.message, where, notes=tuple(notes) + (
                    "it is %s when %s (over the loop it runs from %s to %s)" % (
                        _number_text(v), when, _number_text(span[0]),
                        _number_text(span[1])),))
            except Exception:
                return

    def _index_name(self, node_id) -> str:
        """A loop index's name, as its loop's header writes it."""
        loc = self.program.nodes[node_id].loc
        return loc.source.text[loc.start:loc.end]

    def widen(self, args, loc, books=None):
        """``args`` cast to the types the book gives them -- each value's own ``book``, or
        ``books`` (a def body's types) -- where those have a ``?`` the exact shape fills
        (nothing to check when it runs: the cast only forgets sizes); None where none has."""
        out, widened = [], False
        for k, a in enumerate(args):
            s = a.book if books is None else books[k]
            if (type(s) is tuple and len(s) == len(a.shape) and None in s and s != a.shape
                    and all(x is None or x == y for x, y in zip(s, a.shape))):
                a = self.cast(a, s, None, loc, False)
                widened = True
            out.append(a)
        return out if widened else None

    def defer(self, message, loc):
        """An error that the run will meet at ``loc``: kept in the program's ``deferred``
        (goat check reports it; goat run meets it when the operation runs)."""
        e = GoatError(message, loc, notes=self.checker.call_notes(loc))
        key = (loc.source.path, loc.start, loc.end, message, e.notes)
        seen = self.program.deferred_keys
        if key not in seen:
            seen.add(key)
            self.program.deferred.append(e)

    def _book_result(self, tmpl, args, env):
        """The call's result type as the book gives it: the def's result type, its size
        variables bound by the arguments' book types (a ``?`` stays ``?``)."""
        several = isinstance(tmpl.result, tuple)
        shapes = tmpl.shape if several else (tmpl.shape,)
        if tmpl.has_vars:
            books = {}
            try:
                for (_, declared, _), a in zip(tmpl.params, args):
                    bind(declared, a.shape if a.book is None else a.book, books, "")
            except ShapeError:
                books = env
            shapes = tuple(_subst(s, books) for s in shapes)
        return shapes if several else shapes[0]

    def _soft(self, result, book, loc):
        """``result`` with each value whose book type has a ``?`` where its shape has a size
        as a node of its own (an identity, free when it runs) carrying that type: the node of
        the value itself may be shared, by hash-consing, with an equal value computed
        elsewhere, whose type is its exact shape."""
        several = isinstance(result, tuple)
        nodes = result if several else (result,)
        books = book if several else (book,)
        out = []
        for n, s in zip(nodes, books):
            if (type(s) is tuple and type(n.shape) is tuple and len(s) == len(n.shape)
                    and None in s and s != n.shape):
                w = self.op(_BIND, (n,), loc, ("?@%s:%d" % (loc.source.path, loc.start),),
                            shape=n.shape, check=False)
                if w.book is None:
                    w.book = s
                self.checker.soft = True
                n = w
            out.append(n)
        return tuple(out) if several else out[0]

    def cast(self, ref, declared, what, loc, check):
        if ref.shape == declared:
            return ref
        key = ("cast", ref.id, declared, what if check else None)
        home = self.region if check else self._home((ref,))
        node = self._find(key, home)
        if node is not None:
            return node
        via = tuple(self.checker.calls) if check else ()
        return self.program.intern(home, key, lambda i: Node(i, CAST, None, (ref,), declared,
                                                             loc, check, what=what, via=via,
                                                             region=home))

    def same_size(self, x, dim, ref, ref_dim, name, what, ref_what, loc):
        """``x``, checked when it runs to have dimension ``dim`` equal to ``ref``'s ``ref_dim``
        (a size variable both are bound to, which neither shape knows)."""
        key = ("same", x.id, dim, ref.id, ref_dim)
        spec = (dim, ref_dim, name, what, ref_what)
        via = tuple(self.checker.calls)
        home = self.region
        node = self._find(key, home)
        if node is not None:
            return node
        return self.program.intern(home, key, lambda i: Node(i, CAST, None, (x, ref), x.shape,
                                                             loc, True, value=spec, via=via,
                                                             region=home))

    def same_shape(self, x, ref, what, loc):
        """``x``, checked when it runs to have exactly the shape of ``ref``'s value (a var
        whose sizes are known only when it runs keeps them)."""
        key = ("same", x.id, ref.id)
        home = self.region
        node = self._find(key, home)
        if node is not None:
            return node
        via = tuple(self.checker.calls)
        return self.program.intern(home, key, lambda i: Node(i, CAST, None, (x, ref), x.shape,
                                                             loc, True, value=(what,), via=via,
                                                             region=home))

    def get(self, node, index, shape):
        """Element ``index`` of the tuple value of ``node`` (a LOOP, BRANCH or CALL)."""
        key = ("get", node.id, index)
        home = node.region
        return self.program.intern(home, key, lambda i: Node(i, GET, None, (node,), shape,
                                                             node.loc, attrs=(index,),
                                                             region=home))

    def call(self, tmpl: Template, args, loc, books=None):
        """The value of a call of ``tmpl`` on ``args`` (``books``: the argument types in the
        def body this call is written in, where it is being instantiated: an argument error
        that only the exact sizes show is then the book's run-time error)."""
        checker = self.checker
        if tmpl.generic is not None:
            tmpl = checker.specialize(tmpl, [a.shape for a in args], [loc] * len(args), loc)
        if self.symbolic:
            # checks the arguments now, so a mistake is reported at the def, not at its uses
            _, env = checker.check_arguments(tmpl, [a.shape for a in args], [loc] * len(args))
            several = isinstance(tmpl.result, tuple)
            shape = tmpl.shape
            if tmpl.has_vars:
                shape = tuple(_subst(s, env) for s in shape) if several else _subst(shape, env)
            key = ("call", tmpl.index) + tuple([a.id for a in args])
            node = self._find(key, self.region)
            if node is None:
                region = self.region
                node = self.program.intern(region, key, lambda i: Node(
                    i, CALL, tmpl, tuple(args), shape, loc, region=region))
            if not tmpl.pure:
                checker.impure = True
            if several:
                return tuple(self.get(node, k, s) for k, s in enumerate(shape))
            return node
        key = (tmpl.index,) + tuple([a.id for a in args])
        checker.poll(loc)
        if tmpl.pure:
            r = self.region
            while r is not None:
                hit = r.memo.get(key)
                if hit is not None:
                    return hit
                r = r.parent
        given = args
        try:
            args, env = checker.bind_arguments(tmpl, args, loc, self)
        except GoatError as err:
            widened = self.widen(args, loc, books) if books else None
            if widened is None:
                if checker.calls:       # a call in a def's body: whose call it is
                    more = tuple(n for n in checker.call_notes(err.loc) if n not in err.notes)
                    err.notes = tuple(err.notes) + more
                raise
            args, env = checker.bind_arguments(tmpl, widened, loc, self)
            self.defer(err.message, err.loc)
        if tmpl.has_grad:
            # grad with respect to one parameter must not see another bound to the same value
            args = [self.op(_BIND, (a,), loc, ("%s@%s:%d" % (p, loc.source.path, loc.start),),
                            shape=a.shape, check=False) for a, (p, _, _) in zip(args, tmpl.params)]
        checker.calls.append((tmpl.qualname, loc))
        try:
            result = self.instantiate(tmpl, args, env)
        finally:
            checker.calls.pop()
        if tmpl.book_result or (checker.soft and any(a.book is not None for a in given)):
            # the book types the result with the def's ? sizes: an error on it is found when
            # it runs (Builder.op), as the book finds it
            result = self._soft(result, self._book_result(tmpl, given, env), loc)
        if tmpl.pure:
            nodes = result if isinstance(result, tuple) else (result,)
            home = max((n.region for n in nodes), key=lambda r: r.depth, default=self.region)
            if not home.encloses(self.region):
                home = self.region
            if self.program.journal is not None and home is self.program.main:
                self.program.journal.append((home.memo, key))
            home.memo[key] = result
        return result

    def grad(self, args, names, loc):
        """``grad(args[0], *args[1:])`` here: the gradient nodes (a tuple for several names);
        in a def's body, a GRAD node carried out when the def is instantiated."""
        loss, wrt = args[0], args[1:]
        several = len(wrt) > 1
        if self.symbolic:
            cells = _cells(loss.shape)
            if cells is not None and cells != 1:
                from ..autodiff.grad import loss_shape_error
                raise loss_shape_error(loss.shape, loc)
            shape = tuple(w.shape for w in wrt) if several else wrt[0].shape
            self.checker.grad_used = True
            region = self.region
            node = self.program.new_node(region, GRAD, None, tuple(args), shape, loc,
                                         attrs=tuple(names))
            if several:
                return tuple(self.get(node, k, w.shape) for k, w in enumerate(wrt))
            return node
        from ..autodiff.grad import grad
        out = grad(self, loss, wrt, names, loc)
        return tuple(out) if several else out[0]

    def instantiate(self, tmpl: Template, args, env):
        """The value of ``tmpl``'s body with its parameters bound to ``args``."""
        flat = tmpl.flat()
        if flat:
            return self._instantiate_flat(tmpl, flat, args, env)
        mapping = {p.id: a for p, a in zip(tmpl.region.params, args)}
        self._copy_region(tmpl.region, mapping, env)
        result = tmpl.result
        if isinstance(result, tuple):
            return tuple(mapping.get(n.id, n) for n in result)
        return mapping.get(result.id, result)

    def _instantiate_flat(self, tmpl, flat, args, env):
        entries, result = flat
        slots = list(args)
        append = slots.append
        has_vars = bool(env)
        op_ = self.op
        for kind, n, spec in entries:
            argv = [slots[s] if type(s) is int else s for s in spec]
            if kind == OP:
                attrs = n.attrs
                if has_vars:
                    shape = _subst(n.shape, env)
                    if attrs:
                        attrs = n.op.subst_attrs(attrs, lambda s: _subst_attr(s, env))
                else:
                    shape = n.shape
                check = n.check
                if check or None in shape:
                    shape, check = self._recheck(n, argv, attrs, shape, check)
                elif has_vars and "comparison" in n.op.tags:
                    self._compare_again(n, argv)
                node = op_(n.op, argv, n.loc, attrs, shape, check)
                if type(n.what) is str and node.what is None:
                    node.what = n.what      # its own words when it runs (Node.what)
                append(node)
            elif kind == CALL:
                append(self.call(n.op, argv, n.loc, [a.shape for a in n.args]))
            elif kind == GET:
                src = argv[0]
                append(src[n.attrs[0]] if isinstance(src, tuple)
                       else self.get(src, n.attrs[0], _subst(n.shape, env) if has_vars else n.shape))
            else:       # CAST
                shape = _subst(n.shape, env) if has_vars else n.shape
                append(self.cast(argv[0], shape, n.what, n.loc,
                                 self._recheck_cast(n, argv[0], shape) if n.check else False))
        out = tuple([slots[s] if type(s) is int else s for s in result])
        return out if isinstance(tmpl.result, tuple) else out[0]

    def _recheck(self, n, args, attrs, shape, check=True):
        """A def's op that a ``?`` left to be checked when it runs (``check``), or whose
        result has a ``?`` size (a reshape to tensor[1x?]), instantiated on arguments whose
        shapes are known: checked now, with its exact shape.  Returns (shape, still to
        check when it runs).  Where the known shapes do not fit, the op stays as the def
        declared it, checked when it runs -- as in the book, a ``?`` size is checked then, so
        output printed before it stays -- and the error is kept for ``goat check``
        (:meth:`_defer`)."""
        shapes = [a.shape for a in args]
        if _unknown(shapes) or any(type(d) in (RunDim, RunPoly) for s in attrs
                                   if type(s) is tuple for d in s) or any(
                                       type(s) in (RunDim, RunPoly) for s in attrs):
            return shape, check
        try:
            return n.op.shape(*shapes, *attrs), n.op.checks_at_run_time
        except ShapeError as e:
            self._defer(n.what.format(" and ".join(format_shape(sh) for sh in shapes))
                        if type(n.what) is str else e.message, n.loc)
            return shape, True

    def _compare_again(self, n, args):
        """A def's comparison, whose operands' size variables a call binds: a column of N
        against a vector of N (def acc(p: tensor[N, 1], y: tensor[M]) = mean(p == y), called
        with N = M) is the error it is when written with those sizes."""
        shapes = [a.shape for a in args]
        if _unknown(shapes):
            return
        try:
            n.op.shape(*shapes)
        except ShapeError as e:
            raise GoatError(e.message, n.loc, notes=self.checker.call_notes(n.loc)) from None

    def _recheck_cast(self, n, x, declared):
        """A def's cast (an argument, an annotation) whose value's shape is now known: False
        when it fits, True (checked when it runs, the error kept for goat check) otherwise."""
        if _unknown([x.shape]):
            return True
        ok, _ = compatible(declared, x.shape)
        if not ok:
            from ..interp.evaluator import _mismatch
            self._defer(_mismatch(n.what, x.shape, declared), n.loc)
            return True
        return False

    def _defer(self, message, loc):
        """An error that the run will meet at ``loc``: kept in the program's ``deferred``."""
        e = GoatError(message, loc, notes=self.checker.call_notes(loc))
        if all((d.loc, d.message, d.notes) != (e.loc, e.message, e.notes)
               for d in self.program.deferred):
            self.program.deferred.append(e)

    def _copy_region(self, src: Region, mapping: dict, env: dict):
        """Copy the nodes and effects of ``src`` into this builder's region, ``mapping`` taking
        ``src``'s nodes to the new ones (nodes outside ``src`` stay themselves)."""
        has_vars = bool(env)
        effects = src.effects
        ei = 0
        m = mapping.get
        for k, n in enumerate(src.nodes):
            while ei < len(effects) and effects[ei].after <= k:
                self._copy_effect(effects[ei], mapping)
                ei += 1
            kind = n.kind
            if kind == ARG:             # parameters: already in the mapping
                continue
            shape = n.shape
            if has_vars and kind != LOOP and kind != BRANCH and kind != CALL:
                shape = _subst(shape, env)
            if kind == OP:
                attrs = n.attrs
                if has_vars and attrs:
                    attrs = n.op.subst_attrs(attrs, lambda s: _subst_attr(s, env))
                if attrs and _run_dim_sources(attrs):
                    attrs = _remap_run_dims(attrs, m)
                argv = [m(a.id, a) for a in n.args]
                check = n.check
                if check or None in shape:
                    shape, check = self._recheck(n, argv, attrs, shape, check)
                elif has_vars and "comparison" in n.op.tags:
                    self._compare_again(n, argv)
                new = self.op(n.op, argv, n.loc, attrs, shape, check)
                if type(n.what) is str and new.what is None:
                    new.what = n.what
            elif kind == CAST:
                if len(n.args) == 2:
                    x, ref = (m(a.id, a) for a in n.args)
                    if len(n.value) == 1:
                        new = self.same_shape(x, ref, n.value[0], n.loc)
                    else:
                        dim, ref_dim, name, what, ref_what = n.value
                        new = self.same_size(x, dim, ref, ref_dim, name, what, ref_what, n.loc)
                else:
                    x = m(n.args[0].id, n.args[0])
                    new = self.cast(x, shape, n.what, n.loc,
                                    self._recheck_cast(n, x, shape) if n.check else False)
            elif kind == GET:
                src_val = m(n.args[0].id, n.args[0])
                if isinstance(src_val, tuple):
                    new = src_val[n.attrs[0]]
                else:
                    new = self.get(src_val, n.attrs[0], shape)
            elif kind == CALL:
                new = self.call(n.op, [m(a.id, a) for a in n.args], n.loc,
                                [a.shape for a in n.args])
            elif kind == GRAD:
                new = self.grad([m(a.id, a) for a in n.args], n.attrs, n.loc)
            elif kind == LOOP:
                new = self._copy_loop(n, mapping, env)
            elif kind == BRANCH:
                new = self._copy_branch(n, mapping, env)
            else:
                raise TypeError("cannot copy %r" % (n,))
            mapping[n.id] = new
        for e in effects[ei:]:
            self._copy_effect(e, mapping)

    def _copy_effect(self, e, mapping):
        if not self.effects:
            return
        m = mapping.get

        def parts(data):
            return [p if isinstance(p, str) else (m(p[0].id, p[0]),) + tuple(p[1:]) for p in data]
        if e.kind == "format" or e.kind == "assert":
            self.program.add_effect(self.region, e.kind, None, e.loc, parts(e.data))
        else:
            data = e.data
            if e.kind == "save" and not isinstance(data[1], str):
                data = (data[0], parts(data[1]))
            self.program.add_effect(self.region, e.kind, m(e.node.id, e.node), e.loc, data)
        self.region.effects[-1].via = tuple(self.checker.calls)

    def _copy_params(self, src: Region, dst: Region, mapping, env):
        for p in src.params:
            shape = _subst(p.shape, env) if env else p.shape
            q = self.program.new_node(dst, ARG, None, (), shape, p.loc, what=p.what)
            dst.params.append(q)
            mapping[p.id] = q

    def _copy_loop(self, n, mapping, env):
        m = mapping.get
        body = n.value
        pre = Region("pre", self.region, body.loc)
        region = Region("for", pre, body.loc)
        pre.inner.append(region)
        self.sub(pre)._copy_region(body.parent, mapping, env)
        self._copy_params(body, region, mapping, env)
        lo, hi = (m(a.id, a) for a in n.args[:2])
        first, end = known_number(lo), known_number(hi)
        dead = self.checker.dead_loops
        if body in dead or (first is not None and end is not None and first >= end):
            dead.add(region)        # for k in 0..size(x, 0) of a call with x empty: no index
        elif first is not None and end is not None and region.params:
            # a narrow its index computes is checked at its least and greatest start before
            # the run, as the loop written outside a def is (x[k * 2:(k + 1) * 2])
            self.checker.index_ranges[region.params[0].id] = (first, end - 1)
        self.sub(region)._copy_region(body, mapping, env)
        region.yields = [m(y.id, y) for y in body.yields]
        args = tuple(m(a.id, a) for a in n.args)
        shape = tuple(_subst(s, env) for s in n.shape) if env else n.shape
        return self.program.new_node(self.region, LOOP, None, args, shape, n.loc, value=region,
                                     via=tuple(self.checker.calls), attrs=n.attrs)

    def _copy_branch(self, n, mapping, env):
        m = mapping.get
        regions = []
        for src in n.value:
            region = Region("if", self.region, src.loc)
            self.sub(region)._copy_region(src, mapping, env)
            region.yields = [m(y.id, y) for y in src.yields]
            regions.append(region)
        shape = tuple(_subst(s, env) for s in n.shape) if env else n.shape
        return self.program.new_node(self.region, BRANCH, None, (m(n.args[0].id, n.args[0]),),
                                     shape, n.loc, value=tuple(regions),
                                     via=tuple(self.checker.calls), attrs=n.attrs)


class _Shared:
    """What every checker of one program shares: imported modules, the imports under way
    (to find cycles), and the def calls being expanded (for run-time error notes)."""

    def __init__(self):
        self.modules = {}       # real path -> Module
        self.loading = []       # (real path, shown path) of the modules being checked now
        self.calls = []         # (def name, call Loc) of the calls being expanded


class Checker:
    """Checks statements one at a time into a :class:`Program`.

    ``allow_redefinition`` is for the REPL, where defining a name again replaces it.  A module
    (``import nn``) is checked by a checker of its own (``module`` true) into the same program.
    """

    def __init__(self, program: Program | None = None, allow_redefinition: bool = False,
                 module: bool = False, shared: _Shared | None = None):
        self.program = program if program is not None else Program()
        self.allow_redefinition = allow_redefinition
        self.module = module
        self.qual = ""                  # a module's checker: "nn." (its params blocks' names)
        self.shared = shared if shared is not None else _Shared()
        self.calls = self.shared.calls
        self.top = Scope(function=True)
        self.globals = self.top.names     # name -> Node (let), VarBinding, Template, Module
        self.where = self.top.lines       # name -> line it was defined on
        self.main = Builder(self, self.program.main, symbolic=False)
        self._defining = None         # name of the def whose body is being checked
        self.collecting = False       # check_module_all: every independent error in a block
        self._assigned_memo = {}      # see check_stmt
        self.impure = False           # the def being checked has effects
        self.soft = False             # some value has a Node.book shape (Builder.op)
        self.later: dict = {}         # names the file defines further down -> their line
        self.gone: dict = {}          # names of blocks that have ended -> their line
        self.depth = 0                # block nesting, for the outline
        self.last = None              # (statement, its value) of the last plain statement checked
        self.stated = None            # the annotation (TypeAnn) of the let or var being checked
        self.filled = []              # the built-ins whose left-out shape an annotation gave
        self.cancel = None            # a callable: True stops the check (CheckCancelled)
        self.max_nodes = MAX_NODES
        self.grad_used = False        # the def being checked calls grad
        self.grad_site = None         # the grad call being carried out (its Loc)
        # the REPL: the first node of the input being checked (the values of those before it
        # are kept only while a name may need them: grad does not differentiate through an
        # earlier input's loop)
        self.earlier = 0
        self.grad_targets = set()     # names the program differentiates with respect to
        self._rest = ()               # the leading sizes ... stands for in the def being checked
        self._generic_def = False     # the def being checked has a parameter typed [..., ...]
        self.grad_vars = set()        # the names of vars a grad being made differentiates
        self._polys = None            # while a def's body is checked: its sizes written as
        #                               arithmetic on its size variables (Template.polys)
        self._param_lets = None       # while a def's parameters are read: the lets their
        #                               types name, name -> (size, the let's Loc)
        self._sizes = None            # the size variables its parameters bind (None: while
                                      # they are being read, when each may bind new ones)
        self._quiet = False           # checking a def again for a call: no outline
        self._bad_sizes = {}          # a let that cannot be a size -> the error its first use
                                      # as one gave (each later use gives it again: one error)
        self.layout_types = {}        # a params block's name -> its Layout (a type's name)
        self.index_ranges = {}        # a loop index's ARG id -> (first, last), fixed bounds
        self.dead_loops = set()         # the bodies of loops whose fixed bounds give no trip
        self.loop_tapes = {}            # a loop id -> {var or value: (tape index, shape)}
        self._params_defining = None  # the params block whose members are being checked

    def reachable(self) -> set:
        """The ids of the top region's nodes that a statement checked later may still reach:
        those the names in scope are bound to (this checker's, the imported modules', the
        names a def saw when it was written), and those the defs those names lead to read
        from outside their bodies (directly or through the defs they call).  Every other
        top-level node is unreachable -- a var's earlier value, a statement's intermediate
        values, an expression the REPL showed -- so its value may be dropped, once the
        hash-consing tables forget it (Program.forget).  The REPL's session asks after each
        statement; ``goat run`` never needs to (its evaluator drops each value after its
        last use)."""
        main = self.program.main
        ids = set()
        seen = set()
        scopes = [self.top] + [Scope(names=m.names) for m in self.shared.modules.values()]
        templates = []
        while scopes or templates:
            while scopes:
                scope = scopes.pop()
                while scope is not None and id(scope) not in seen:
                    seen.add(id(scope))
                    for v in scope.names.values():
                        t = type(v)
                        if t is Node:
                            ids.add(v.id)
                        elif t is VarBinding:
                            ids.add(v.node.id)
                        elif t is Template:
                            templates.append(v)
                        elif t is Module:
                            scopes.append(Scope(names=v.names))
                    scope = scope.parent
            while templates:
                t = templates.pop()
                if id(t) in seen:
                    continue
                seen.add(id(t))
                reads, called = t.reads()
                ids |= reads
                templates.extend(called)
                templates.extend(t.specs.values())
                if t.scope is not None:
                    scopes.append(t.scope)
                if t.checker is not None:
                    scopes.append(t.checker.top)
        nodes = self.program.nodes
        return {i for i in ids if nodes[i].region is main}

    def call_notes(self, loc):
        """Notes naming the def calls being expanded, innermost first, as run-time errors
        name them: ``in f, called on line 4``."""
        return frame_notes(self.calls, loc.source)

    def poll(self, loc):
        """Stop a check that has grown too large, or that ``cancel`` asks to stop."""
        if self.cancel is not None and self.cancel():
            raise CheckCancelled()
        if len(self.program.nodes) > self.max_nodes:
            calls = [f for f in self.calls if len(f) == 2]      # def calls, not imports
            limit = format(self.max_nodes, ",")
            if calls:
                e = GoatError("this call of %s needs more than %s operations to check, more "
                              "than goat checks (a def that calls defs on different values "
                              "doubles the work at each level)" % (calls[0][0], limit),
                              calls[0][1], notes=frame_notes(calls[1:4], calls[0][1].source))
            else:
                what = "this grad" if self.grad_site is not None else "this statement"
                e = GoatError("the program grows past %s operations at %s, more than goat "
                              "checks; nothing after it is checked" % (limit, what),
                              self.grad_site or loc)
            e.fatal = True          # every later statement would only fail the same way
            raise e

    # ------------------------------------------------------------------ constants
    def const(self, value, loc):
        main = self.program.main
        if isinstance(value, float):
            key = ("s", value.hex())
            shape = ()
        else:
            key = ("a", value.shape, value.tobytes())
            shape = value.shape
        return self.program.intern(main, key, lambda i: Node(i, 0, None, (), shape, loc,
                                                             value=value, region=main))

    # ------------------------------------------------------------------ statements
    def check_module(self, module: ast.Module) -> Program:
        self.look_ahead(module)
        for stmt in module.stmts:
            self.check_stmt(stmt)
        return self.program

    def check_module_all(self, module: ast.Module, limit: int = 20, convert=None,
                         errors=()) -> Program:
        """Check every statement, reporting every independent error (as compilers do): a
        statement that fails is skipped, and statements that use what it would have defined
        (or assigned) are skipped without a second report.  Raises GoatError for one error,
        GoatErrors for several (at most ``limit`` shown).  ``convert(stmt, exc)`` turns a
        Python failure while checking a statement (RecursionError, MemoryError) into a
        GoatError, or raises it again."""
        self.look_ahead(module)
        self.collecting = True
        try:
            return self._check_all(module, limit, convert, errors)
        finally:
            self.collecting = False

    def _check_all(self, module, limit, convert, errors):
        errors, left_out = list(errors[:limit]), max(0, len(errors) - limit)
        # where each error is reported among the others: its place in the program, or for one
        # in an imported module, the place of the import (then in the module's own order)
        place = {}
        broken = set()                      # names whose value is unknown after an error
        for stmt in module.stmts:
            if type(stmt) is ast.Broken:    # a syntax error, already reported
                broken.update(stmt.names)
                continue
            holds = _holds_broken(stmt)     # a block holding one: checked without it, its
            if holds and not _checkable_without_broken(stmt):      # names broken after it
                broken.update(_defined_names(stmt))
                broken.update(_assigned_names(stmt))
                continue
            if broken and _uses(stmt) & broken:
                broken.update(_defined_names(stmt))
                broken.update(_assigned_names(stmt))
                continue
            try:
                try:
                    self.check_stmt(stmt)
                except (RecursionError, MemoryError, SystemError) as e:
                    if convert is None:
                        raise
                    raise convert(stmt, e) from None
            except GoatError as e:
                for one in _each(e):   # a block's several, each
                    if any(_same_error(one, x) for x in errors):
                        continue        # a def's error met again at a second call
                    if len(errors) < limit:
                        errors.append(one)
                        _place_imported([one], stmt, place)
                    else:
                        left_out += 1
                broken.update(_defined_names(stmt))
                broken.update(_assigned_names(stmt))
                self._recover()
                if getattr(e, "fatal", False):
                    break
            if holds:
                broken.update(_defined_names(stmt))
                broken.update(_assigned_names(stmt))
        if len(errors) == 1 and not left_out:
            raise errors[0]
        if errors:
            from ..diagnostics import GoatErrors
            raise GoatErrors(_in_order(errors, place), left_out)
        return self.program

    def _recover(self):
        """The checker's state after a statement failed midway, for the next statement."""
        self._defining = None
        self.impure = False
        self.grad_used = False
        self.depth = 0
        del self.calls[:]
        del self.shared.loading[:]

    def look_ahead(self, module: ast.Module):
        """Note the names the file defines, so that a use before its definition says so, and
        the names it differentiates with respect to (see :meth:`_own`)."""
        self.later = {}
        for stmt in module.stmts:
            for name in _defined_names(stmt):
                if name not in self.later:
                    self.later[name] = stmt.loc.line
            _grad_targets(stmt, self.grad_targets)

    def check_stmt(self, stmt):
        """Check one top-level statement; returns its node (or Template, or tuple)."""
        for name in _defined_names(stmt):
            self.later.pop(name, None)
        self._assigned_memo = {}        # a block's assigned names, for this statement's blocks
        return self._stmt(stmt, self.top, self.main)

    def check_expr(self, expr):
        """The node of a bare expression (the REPL's ``a @ b`` or ``:type``)."""
        return self.value(expr, self.top, self.main)

    def _outline(self, text):
        if not self.module and not self._quiet:
            self.program.outline.append((self.depth, text))

    def _stmt(self, stmt, scope: Scope, b: Builder):
        result = self._stmt_kind(stmt, scope, b)
        if type(stmt) not in _BLOCKS:
            self.last = (stmt, result)
        return result

    def _stmt_kind(self, stmt, scope: Scope, b: Builder):
        t = type(stmt)
        if t is ast.Let:
            want = self._dims(stmt.type, scope) if stmt.type is not None else None
            node = self._stated_value(stmt.expr, scope, b, want, stmt.type)
            if stmt.type is not None:
                node = self._annotate(stmt, want, node, b)
            node = self._own(node, stmt.name, stmt.loc, b)
            self._bind(scope, stmt.name, stmt.name_loc, node, stmt.loc.line)
            self._lay_out(scope, stmt.name, stmt.type, stmt.expr, node.shape)
            shown_layout = _laid_out(scope, stmt.name)
            # a number the program fixes (let D = 64, let G = 4 * D) shows it: a size a type
            # may name
            fixed = known_number(node) if node.shape == () else None
            shown = "" if fixed is None else " = %d" % fixed if (
                fixed == fixed and abs(fixed) < 2 ** 53 and fixed == int(fixed)) else " = %g" % fixed
            self._outline("%s : %s%s%s" % (stmt.name, format_type(node.shape), shown,
                                           shown_layout))
            return node
        if t is ast.Print:
            if type(stmt.expr) is ast.Tuple:        # print(a, b), as Python writes it
                raise GoatError('print takes one value, and this is %d: to print several on '
                                'a line, print "%s"' % (len(stmt.expr.items), " ".join(
                                    "{v%d}" % (k + 1) for k in range(len(stmt.expr.items)))),
                                stmt.expr.loc)
            node = self.value(stmt.expr, scope, b)
            self.program.add_effect(b.region, "print", node, stmt.loc)
            self.impure = True
            return node
        if t is ast.Assign:
            return self._assign(stmt, scope, b)
        if t is ast.Var:
            want = self._dims(stmt.type, scope) if stmt.type is not None else None
            node = self._stated_value(stmt.expr, scope, b, want, stmt.type)
            if (want is not None and tuple(node.shape) != tuple(want) and None not in want
                    and None not in node.shape and _cells(want) == 1
                    and _cells(node.shape) == 1):
                # var total: tensor[1x1] = 0: one number in the var's shape, as assigning
                # one to it gives
                node = b.op(REGISTRY["reshape"], (node,), stmt.expr.loc, (tuple(want),))
            if stmt.type is not None:
                node = self._annotate(stmt, want, node, b)
            node = self._own(node, stmt.name, stmt.loc, b)
            declared = want if want is not None else node.shape
            self._bind(scope, stmt.name, stmt.name_loc, VarBinding(node, declared, stmt.loc.line),
                       stmt.loc.line)
            self._lay_out(scope, stmt.name, stmt.type, stmt.expr, declared)
            self._outline("var %s : %s%s" % (stmt.name, format_type(declared),
                                             _laid_out(scope, stmt.name)))
            return node
        if t is ast.Params:
            return self._params(stmt, scope, b)
        if t is ast.Member:
            raise GoatError("a new name needs let or var: let %s: %s = ... (NAME: TYPE = ... "
                            "gives a member its first value in a params block only)" % (
                                stmt.name, _written(stmt.type)), stmt.loc)
        if t is ast.For:
            return self._for(stmt, scope, b)
        if t is ast.If:
            return self._if(stmt, scope, b)
        if t is ast.LetTuple:
            return self._let_tuple(stmt, scope, b)
        if t is ast.PrintFormat:
            return self._print_format(stmt, scope, b)
        if t is ast.Assert:
            return self._assert(stmt, scope, b)
        if t is ast.Save:
            node = self.value(stmt.expr, scope, b)
            tail = stmt.path if isinstance(stmt.path, str) else (
                stmt.path[-1] if stmt.path and isinstance(stmt.path[-1], str) else "")
            if tail.endswith((".npz", ".pt", ".pth", ".safetensors", ".pkl")):
                at = stmt.path_loc
                raise GoatError("save writes one array as a NumPy .npy file, not a %s file: name "
                                "it %s.npy%s" % (
                                    tail.rpartition(".")[2],
                                    tail.rpartition(".")[0].rpartition("/")[2] or "x",
                                    " (a params block is one vector: save its members one "
                                    "by one, save(%s.NAME, \"NAME.npy\"), or the whole, whose "
                                    "members' offsets and shapes goat.check_file(...).params"
                                    "[\"%s\"] gives)" % (stmt.expr.name, stmt.expr.name)
                                    if type(stmt.expr) is ast.Name
                                    and stmt.expr.name in self.program.params else ""),
                                at or stmt.loc)
            if tail.endswith(".mg"):
                # found by a breaker: save(w, "p.mg") had replaced the program p.mg itself
                at = stmt.path_loc
                written = (stmt.path if isinstance(stmt.path, str) or at is None
                           else at.source.text[at.start:at.end].strip('"'))
                raise GoatError("cannot save to %s: a .mg file is a goat program, and save "
                                "writes a NumPy array file (name it %s.npy)"
                                % (written, written[:-3]), stmt.path_loc or stmt.loc)
            if isinstance(stmt.path, str):
                if not stmt.path:
                    raise GoatError('save needs a file name, such as save(x, "x.npy"); got ""',
                                    stmt.loc)
                path = (resolve_path(stmt.path, stmt.loc), stmt.path)
            else:                       # "w_{step}.npy": the name is made when it runs
                path = (resolve_path(".", stmt.loc), self._format_data(stmt.path, scope, b))
            self.program.add_effect(b.region, "save", node, stmt.loc, path)
            self.impure = True
            return node
        if t is ast.ExprStmt:           # the REPL shows it (a tuple too)
            return self.expr(stmt.expr, scope, b)
        if t is ast.Def:
            if scope is not self.top:
                raise GoatError("a def must be at the top level of the program, not inside a "
                                "block", stmt.loc)
            outline = self.program.outline
            mark = len(outline)
            tmpl = self._define(stmt)
            if tmpl.generic is not None:        # its result with ... standing for a size
                first = outline[mark:]          # its locals' shapes with ... as no sizes
                del outline[mark:]
                try:                            # ... with ... as written, where it can be
                    shape = self._define(stmt, rest=(SizeVar("..."),), scope=tmpl.scope,
                                         outlined=True).shape
                    shapes = shape if isinstance(tmpl.result, tuple) else (shape,)
                    if all(SizeVar("...") not in s[1:] for s in shapes):
                        tmpl.display = shape
                except GoatError:
                    pass
                if tmpl.display is None or any(re.search(r"[^\[]\.\.\.", text)
                                               for _, text in outline[mark:]):
                    outline[mark:] = first      # (... inside a shape: no way to write it)
            self.globals[stmt.name] = tmpl
            self.where[stmt.name] = stmt.loc.line
            self.top.sources[stmt.name] = stmt.loc.source   # (an earlier REPL input's)
            if not self.module:
                self.program.defs[stmt.name] = tmpl
                self.program.order.append(stmt.name)
                self.program.outline.insert(mark, (self.depth, "def " + tmpl.signature()))
            return tmpl
        if t is ast.Import:
            return self._import(stmt, scope)
        if t is ast.Return:
            if self._defining is not None:
                raise GoatError("return must be the last statement of %s's body, outside any "
                                "block: assign a var in the block, and return it at the end"
                                % self._defining, stmt.loc)
            raise GoatError("return can only end the body of a def written with { }", stmt.loc)
        raise TypeError("unknown statement %r" % (stmt,))

    def _own(self, node, name, loc, b):
        """The value bound to ``name``, as a node of its own (an identity op, copied for free)
        when ``grad`` may be taken with respect to it: hash-consing makes equal computations
        one node, and grad with respect to this name must see this name's uses only, not those
        of an equal value elsewhere (``var w1 = randn(...) * 0.5`` and ``w2`` the same).  So:
        a name the program passes to grad, every name in the REPL (a later input may), and a
        constant (a literal, a fill, a seeded draw)."""
        if not (name in self.grad_targets or self.allow_redefinition or node.kind == CONST
                or (node.kind == OP and node.op.pure and all(a.kind == CONST for a in node.args))):
            return node
        own = b.op(_BIND, (node,), loc, ("%s@%s:%d" % (name, loc.source.path, loc.start),),
                   shape=node.shape, check=False)
        if node.book is not None and own.book is None:
            own.book = node.book
        return own

    def _block(self, stmts, scope: Scope, b: Builder):
        self.depth += 1
        try:
            self._statements(stmts, lambda stmt: self._stmt(stmt, scope, b))
        finally:
            self.depth -= 1
            for name, line in scope.lines.items():
                if name not in scope.shadows:
                    self.gone[name] = line

    def _statements(self, stmts, check, last=None, broken=None):
        """``check`` each of a block's statements (``last``: a def body's return, checked after
        them).  In :meth:`check_module_all` every independent error is kept, as at the top
        level: a statement that uses a name a failed one would have defined or assigned is
        skipped, and at the end the errors are raised together (GoatErrors)."""
        if not self.collecting or self._quiet:
            for stmt in stmts:
                if type(stmt) is ast.Broken:
                    # a line that could not be read, met again (a def with ... checked again
                    # for a call's leading sizes): its syntax error is the one reported
                    raise _Reported()
                check(stmt)
            return None if last is None else last[0]()
        errors, broken = [], set(broken or ())
        for stmt in stmts:
            if type(stmt) is ast.Broken:    # a syntax error, already reported: what it would
                broken.update(stmt.names)   # define is unknown
                continue
            # a block holding one: checked without it, what it defines unknown after it
            holds = _holds_broken(stmt)
            # (a return out of place is that error, whatever it returns)
            if (holds and not _checkable_without_broken(stmt)) or (
                    broken and type(stmt) is not ast.Return and _uses(stmt) & broken):
                broken.update(_defined_names(stmt))
                broken.update(_assigned_names(stmt))
                continue
            try:
                check(stmt)
            except GoatError as e:
                if getattr(e, "fatal", False):
                    raise _together(errors, e)      # every later statement would fail so
                errors.extend(_each(e))
                broken.update(_defined_names(stmt))
                broken.update(_assigned_names(stmt))
            except Exception:
                if not errors:
                    raise
                break           # after an error, a failure of goat's own is its consequence
            else:
                if holds:
                    broken.update(_defined_names(stmt))
                    broken.update(_assigned_names(stmt))
        else:
            if last is not None and broken and last[1] & broken:
                if not errors:      # the return reads what an unreadable statement defines
                    raise _Reported()
            elif last is not None:
                try:
                    result = last[0]()
                except GoatError as e:
                    if getattr(e, "fatal", False) or not errors:
                        raise
                    errors.extend(_each(e))
                except Exception:
                    if not errors:
                        raise
                else:
                    if not errors:
                        return result
        if errors:
            raise _together(errors)
        return None

    def _bind(self, scope: Scope, name, loc, binding, line):
        self._new_name(scope, name, loc)
        scope.layouts.pop(name, None)
        scope.names[name] = binding
        scope.lines[name] = line
        scope.sources[name] = loc.source if loc is not None else None
        if scope is self.top and not self.module and not isinstance(binding, Module):
            self.program.lets[name] = binding.node if isinstance(binding, VarBinding) else binding
            self.program.order.append(name)

    def _new_name(self, scope: Scope, name, loc):
        if "." in name:
            raise GoatError("cannot define '%s': a name cannot contain '.'" % name, loc)
        s = scope
        while s is not None:
            if name in s.names:
                if s is scope and s is self.top and self.allow_redefinition:
                    self.program.lets.pop(name, None)
                    self.program.defs.pop(name, None)
                    if name in self.program.order:
                        self.program.order.remove(name)
                    break
                what = s.what.get(name)
                if what:
                    raise GoatError("'%s' is already the name of a %s here; choose another name"
                                    % (name, what), loc)
                source = s.sources.get(name)
                if (self.allow_redefinition and s is self.top and source is not None
                        and loc is not None and source is not loc.source):
                    # the REPL: a name of an earlier input (or :load'ed file) is not this
                    # input's; a block of this one may define its own, as a def's body may
                    break
                if s is scope and name not in s.shadows:
                    raise GoatError("'%s' is already defined %s; a name can be defined "
                                    "only once in a file" % (name, _defined_at(s, name, loc)), loc)
                # (a var of the session's that this block also assigns: its block sees it
                # as the session's, so it cannot also have one of its own)
                typed = (source is not None and loc is not None and source is not loc.source
                         and source.path.startswith("<"))     # typed in the REPL
                raise GoatError("'%s' is already defined %s, outside this block; a block "
                                "cannot define it again%s"
                                % (name, _defined_at(s, name, loc),
                                   " (:reset forgets the session's names)" if typed else ""),
                                loc)
            if s.function:
                break
            s = s.parent

    def _dims(self, ann: ast.TypeAnn, scope=None, rest_ok=False):
        if ann.layout is not None:      # p: theta, the vector of a params block's cells
            return (self._layout_type(ann.layout, ann.loc).size,)
        dims = []
        for d in ann.dims:
            if d is ...:
                if not self._in_def(scope):
                    raise GoatError("... (any leading sizes) can only begin a type in a def: "
                                    "its parameters', as in def f(x: tensor[..., N, C]), and "
                                    "then in its body and result", ann.loc)
                if not self._generic_def and not rest_ok:
                    raise GoatError("... stands for the leading sizes of %s's parameters, but "
                                    "none of them begins with ...: write the sizes"
                                    % self._defining, ann.loc)
                if rest_ok:
                    dims.append(d)
                else:                   # in the body: the sizes it stands for in this check
                    dims.extend(self._rest)
            elif type(d) is SizeExpr:
                dims.append(self._size_arithmetic(d, scope, ann.loc))
            elif isinstance(d, str):
                if d in KEYWORDS or d in TYPE_WORDS:
                    raise GoatError("'%s' is a reserved word and cannot name a size variable"
                                    % d, ann.loc)
                if "." in d:            # tensor[B, model.D]: a module's let holding a size
                    fixed = self._let_size(d, scope if scope is not None else self.top,
                                           ann.loc)
                    if fixed is None:
                        raise GoatError("%s is not a size: a module's let named in a type holds "
                                        "one whole number (let D = 32 in the module)" % d,
                                        ann.loc)
                    if self._param_lets is not None:    # (a call's error notes where it is)
                        self._param_lets[d] = (fixed, self._resolve(
                            d, ann.loc, scope if scope is not None else self.top).loc, d)
                    dims.append(fixed)
                    continue
                if not self._in_def(scope) or (self._sizes is not None
                                               and d not in self._sizes):
                    fixed = self._let_size(d, scope, ann.loc)
                    if fixed is not None:       # let B = 32 ... tensor[B, 1]
                        dims.append(fixed)
                        continue
                elif self._sizes is None:
                    # a def's parameter: a let above the def holding a size is that size, as
                    # in any other type (let C = 32 ... def f(x: tensor[N, C])); any other name
                    # is a size variable each call binds
                    binding = scope.find(d)[0] if scope is not None else None
                    fixed = None
                    if isinstance(binding, Node):
                        # (a let that is no whole number from 0 -- --let C=4.5, a value
                        # computed when it runs, a vector -- is that error here too, not a
                        # size variable the body's C would not be)
                        fixed = self._let_size(d, scope, ann.loc)
                        if fixed is None:
                            raise GoatError(
                                "%s is a let holding a %s, not a size, so %s's types cannot "
                                "name it: a let that is a size holds one whole number (let "
                                "%s = 32); for a size of each call's own, use another name"
                                % (d, "value of shape " + format_shape(binding.shape),
                                   self._defining, d), ann.loc)
                    if fixed is not None:
                        if self._param_lets is not None:
                            self._param_lets[d] = (fixed, scope.find(d)[0].loc, d)
                        dims.append(fixed)
                        continue
                # a let of that name: it is a value, known only when the program runs
                value = ("" if scope is None or scope.find(d)[0] is None else
                         " (%s is a value, not a size: a type's sizes are known before the "
                         "program runs)" % d)
                if not self._in_def(scope):
                    raise GoatError("size variable %s can only appear in a def, bound by its "
                                    "parameters' types; outside one, write the size as a "
                                    "number, or a let holding one (let %s = 32)%s"
                                    % (d, d, value), ann.loc)
                if self._sizes is not None and d not in self._sizes:
                    known = sorted(self._sizes)
                    raise GoatError("size variable %s is not a size of any parameter of %s, so "
                                    "no call gives it a value: write the size%s, or ? for a "
                                    "size known when it runs%s"
                                    % (d, self._defining,
                                       ", use one of the parameters' sizes (%s)" % ", ".join(known)
                                       if known else "", value), ann.loc)
                dims.append(SizeVar(d))
            else:
                dims.append(d)
        dims = tuple(dims)
        try:
            check_size(dims)
        except ShapeError as e:
            raise _shape_error(e, ann.loc) from None
        return dims

    def _size_arithmetic(self, expr, scope, loc):
        """The size ``expr`` (a SizeExpr: tensor[D, 4 * H]) works out to: arithmetic on whole
        numbers, lets holding sizes and, in a def, its size variables (tensor[K + H, 4 * H]:
        a SizePoly each call works out).  GoatError for a name that is neither, or a result
        that is no size."""
        import ast as pyast
        values = {}
        for name in expr.names:
            if "." in name:             # m.D: a module's let holding a size
                v = self._let_size(name, scope if scope is not None else self.top, loc)
                if v is None:
                    raise GoatError("%s is not a size: a module's let named in a type holds "
                                    "one whole number (let D = 32 in the module)" % name, loc)
                values[name] = v
                continue
            if self._sizes is not None and name in self._sizes or (
                    self._in_def(scope) and self._sizes is None and
                    not isinstance(scope.find(name)[0] if scope is not None else None, Node)):
                if name in KEYWORDS or name in TYPE_WORDS:
                    raise GoatError("'%s' is a reserved word and cannot name a size variable"
                                    % name, loc)
                values[name] = SizeVar(name)    # a size each call gives
                continue
            if self._in_def(scope) and self._sizes is not None and \
                    not isinstance(scope.find(name)[0], Node):
                known = sorted(n for n in self._sizes if not n.startswith("..."))
                raise GoatError("the size %s names %s, which is no size of any parameter of %s "
                                "and no let holding a size: write the size%s"
                                % (expr, name, self._defining,
                                   ", or use the parameters' sizes (%s)" % ", ".join(known)
                                   if known else ""), loc)
            # (a let in the arithmetic may be any whole number: only the size is checked)
            v = self._let_int(name, scope, loc, "part of the size %s" % expr)
            if v is None:
                raise GoatError("the size %s names %s, which is no let holding a size: a size "
                                "written as arithmetic is on whole numbers and lets (let H = "
                                "32 ... tensor[4 * H])%s" % (
                                    expr, name, "" if not self._in_def(scope) else
                                    " and the def's size variables"), loc)
            values[name] = v

        def paren(n):
            t = pyast.unparse(n)
            return t if re.fullmatch(r"\w+", t) else "(%s)" % t

        def value(node):
            t = type(node)
            if t is pyast.Expression:
                return value(node.body)
            if t is pyast.Constant:
                return node.value
            if t is pyast.Name:
                return values[node.id]
            if t is pyast.Attribute:
                return values[pyast.unparse(node)]
            if t is pyast.UnaryOp:
                v = value(node.operand)
                return size_mul(-1, v) if type(node.op) is pyast.USub else v
            a, b = value(node.left), value(node.right)
            if type(node.op) is pyast.Div:      # tensor[N / B, B]: a division with no remainder
                if type(a) is int and type(b) is int:
                    if b == 0 or a % b:
                        n, d = paren(node.left), paren(node.right)
                        raise GoatError(
                            "the size %s divides %d by %d, which %s: a size is a whole "
                            "number%s" % (expr, a, b, "is no number" if b == 0 else
                                          "leaves %d over" % (a % b), "" if b == 0 else
                                          " (a let holding (%s - %s %% %s) / %s drops what is "
                                          "left over)" % (n, n, d, d)), loc)
                    return a // b
                q = size_div(a, b)
                if q is None:
                    k = b if type(b) is int and b > 1 else 2
                    # the example's names: the def's own where it divides one, and a new one
                    taken = set(self._sizes or ()) | set(re.findall(r"[A-Za-z_]\w*", expr))
                    whole = node.left.id if type(node.left) is pyast.Name else "N"
                    part = next(c for c in ("R", "Q", "P", "H", "W", "Z", "R1", "R2", "R3")
                                if c not in taken and c != whole)
                    raise GoatError(
                        "the size %s divides %s by %s, which is a whole number only for some "
                        "of the sizes a call may give: name the quotient instead, as a size of "
                        "its own (tensor[%d * %s] rather than tensor[%s], then %s for %s / %d)"
                        % (expr, paren(node.left), paren(node.right), k, part, whole, part,
                           whole, k), loc)
                return q
            if type(node.op) is pyast.Add:
                return size_add(a, b)
            if type(node.op) is pyast.Sub:
                return size_add(a, b, -1)
            return size_mul(a, b)
        v = value(pyast.parse(expr, mode="eval"))
        if type(v) is not int:
            if self._polys is not None and self._sizes is not None and type(v) is SizePoly:
                self._polys.append((v, loc, None))  # (each call checks it is a size: N - 1)
            return v
        if not 0 <= v <= 2 ** 53:
            written = str(expr).replace(" ", "") == str(v)       # (-1, not N - 4)
            raise GoatError("the size %s %s not a whole number from 0%s" % (
                expr, "is" if written else "is %d," % v, " (too large to be a size)" if v > 0
                else "; a size worked out from the others (PyTorch's -1, in a reshape's "
                "target) is written ?: tensor[2, ?]" if v == -1 and written else ""), loc)
        lets = [n for n in expr.names if type(values[n]) is int]
        if self._param_lets is not None and lets:
            # (a call of another size notes where it comes from)
            self._param_lets[expr] = (v, self._resolve(
                lets[0], loc, scope if scope is not None else self.top).loc, lets[0])
        return v

    def _let_size(self, name, scope, loc):
        """The size a let named in a type holds (``let B = 32`` ... ``tensor[B, 4]``): a whole
        number the program's own numbers fix (a literal, or arithmetic on such, as --let sets
        it), else None when ``name`` is no let; GoatError for a let or var that cannot be a
        size."""
        binding = scope.find(name)[0] if scope is not None else None
        if binding is None and "." in name and scope is not None:
            binding = self._resolve(name, loc, scope)       # m.D: a module's let
        if binding is None and name in self.later:
            raise GoatError("the size %s is a let defined later, on line %d: define it before "
                            "the type that uses it" % (name, self.later[name]), loc)
        if isinstance(binding, VarBinding) and name in self.layout_types:
            raise GoatError("%s is a params block, not a size: its shape is written %s "
                            "(zeros(%s), def f(x: %s)), tensor[%d] as sizes" % (
                                name, name, name, name, self.layout_types[name].size), loc)
        if isinstance(binding, VarBinding):
            raise GoatError("%s is a var, which may change, so it cannot be a size: make it a "
                            "let (let %s = ...)" % (name, name), loc)
        if not isinstance(binding, Node) or binding.shape not in ((), (1,), (1, 1)):
            return None
        v = known_number(binding)
        if v is None:
            raise GoatError("%s is a value computed when the program runs, so it cannot be a "
                            "size: a type's sizes are known before; a let holding a whole number "
                            "written in the program can (let %s = 32%s)" % (
                                name, name.rpartition(".")[2],
                                " in the module" if "." in name else ""), loc)
        if not (0 <= v <= 2 ** 53 and v == int(v)):     # (a NaN fails the first test)
            if 2 ** 53 < v < 1e21 and v == int(v):     # (inf and NaN fail the first test)
                raise GoatError("the size %s is %d, too large to be a size (at most 2**53 = %d)"
                                % (name, v, 2 ** 53), loc)
            # reported once, where it is first used (every use of it as a size fails alike:
            # a --let H=32.5 had given one error a use, 31 of them)
            first = self._bad_sizes.get(binding.id)
            if first is None or first.loc.source is not loc.source:     # (another REPL input)
                from ..interp.printer import format_number
                shown = format_number(v) if v != v or abs(v) == float("inf") else repr(v)
                first = GoatError("the size %s is %s, not a whole number from 0%s" % (
                    name, shown[:-2] if shown.endswith(".0") else shown,
                    " (too large to be a size)" if abs(v) != float("inf") and abs(v) > 2 ** 53
                    and v == int(v) else ""), loc,
                    notes=("%s is the let on line %d" % (name, binding.loc.line),)
                    if binding.loc.source is loc.source and binding.loc.line != loc.line else ())
                self._bad_sizes[binding.id] = first
            raise GoatError(first.message, first.loc, notes=first.notes)
        return int(v)

    def _let_int(self, name, scope, loc, what):
        """The whole number a let named as ``what`` holds ("narrow's axis": -1 too), else None
        when ``name`` is no let (an unknown name: that error); GoatError for a let or var that
        cannot be one."""
        binding = scope.find(name)[0] if scope is not None else None
        if binding is None:
            if name in self.later:
                raise GoatError("%s is a let defined later, on line %d: define it before it is "
                                "used as %s" % (name, self.later[name], what), loc)
            return None
        if isinstance(binding, VarBinding):
            raise GoatError("%s is a var, which may change, so it cannot be %s: make it a let "
                            "(let %s = ...)" % (name, what, name), loc)
        if not isinstance(binding, Node) or binding.shape not in ((), (1,), (1, 1)):
            return None
        v = known_number(binding)
        if v is None:
            raise GoatError("%s is a value computed when the program runs, so it cannot be %s: "
                            "a let holding a whole number written in the program can (let %s = "
                            "1)" % (name, what, name), loc)
        if not (v == v and abs(v) <= 2 ** 53 and v == int(v)):
            from ..interp.printer import format_number
            shown = format_number(v) if v != v or abs(v) == float("inf") else repr(v)
            raise GoatError("%s is %s, not a whole number, so it cannot be %s"
                            % (name, shown[:-2] if shown.endswith(".0") else shown, what), loc)
        return int(v)

    def _in_def(self, scope) -> bool:
        return self._defining is not None and scope is not None and scope is not self.top

    def _annotate(self, stmt, declared, node, b):
        ok, runtime = compatible(declared, node.shape)
        what = "'%s'" % stmt.name
        widened = b.widen([node], stmt.loc) if not ok and node.book is not None else None
        if widened is not None and compatible(declared, node.book)[0]:
            # a value the book types with a ? size (a ? def's result): checked when it runs
            from ..interp.evaluator import _mismatch
            what = "%s (declared %s)" % (what, format_type(declared))
            b.defer(_mismatch(what, node.shape, declared), stmt.loc)
            return b.cast(widened[0], declared, what, stmt.loc, True)
        if not ok:
            hint = ""
            if node.shape == () and _cells(declared) not in (None, 1) and _numbers_only(
                    stmt.expr):
                hint = ("; a number fills a shape through a built-in: zeros(%s) + %s"
                        % (format_type(declared), _written(stmt.expr)))
            raise GoatError("%s is declared %s, but its value has shape %s%s"
                            % (what, format_type(declared),
                               format_shape(node.shape if node.book is None else node.book),
                               hint), stmt.type.loc, notes=tuple(self.filled))
        return b.cast(node, declared, "%s (declared %s)" % (what, format_type(declared)),
                      stmt.loc, runtime)

    # ---- params blocks: a model's parameters as one vector, read and written by member
    def _layout_of(self, name, scope):
        """The Layout of the value ``name`` is bound to (a params var, a parameter typed with
        a params block's name, a let so annotated or holding grad with respect to one), or
        None."""
        binding, s = scope.find(name)
        while s is not None:        # (a block's own binding of a var it assigns: the var's)
            layout = s.layouts.get(name)
            if layout is not None or s.function:
                return layout
            s = s.parent
        return None

    def _no_members(self, name, v, scope, loc):
        """The error for ``g.w`` where g is no params block's value (``v``, its binding, or
        None where no g is defined)."""
        base, _, member = name.partition(".")
        if v is None:
            if base == self._params_defining:
                raise GoatError("%s is the params block being written: a member's first value "
                                "cannot read its members (give it its own value, or assign "
                                "%s after the block)" % (base, name), loc)
            if base in self.later:
                raise GoatError("unknown name '%s': it is defined later, on line %d; a name must "
                                "be defined before it is used (a params block's members cannot "
                                "read the block)" % (base, self.later[base]), loc)
            raise GoatError("unknown name '%s' (in %s)%s" % (
                base, name, _suggest(base, _visible(scope))), loc)
        shape = v.declared if isinstance(v, VarBinding) else v.shape
        fits = [k for k, lay in self.layout_types.items() if (lay.size,) == tuple(shape)]
        fits.sort(key=lambda k: member not in self.layout_types[k].members)   # its own first
        hint = ""
        if fits:
            hint = ("; to read it by %s's members, give it that layout: %s %s: %s = ..." % (
                fits[0], "var" if isinstance(v, VarBinding) else "let", base, fits[0]))
            if member in self.layout_types[fits[0]].members and not isinstance(v, VarBinding):
                fresh = next(n for n in (base + "_", base + "2", base + "_p", base + "_laid")
                             if scope.find(n)[0] is None)
                hint = ("; to read it by %s's members, name it with that layout: let %s: %s = "
                        "%s, then %s.%s" % (fits[0], fresh, fits[0], base, fresh, member))
        raise GoatError("'%s' is %s, not a params block's value: it has no member '%s'%s" % (
            base, format_type(shape), member, hint), loc)

    def _layout_type(self, name, loc) -> Layout:
        """The params block ``name`` written as a type (``p: theta``)."""
        layout = self.layout_types.get(name)
        if layout is not None:
            return layout
        if name in self.later and self.later[name] > loc.line:
            raise GoatError("'%s' is a params block defined later, on line %d; it must be "
                            "defined before a type names it" % (name, self.later[name]), loc)
        known = self.globals.get(name)
        what = ("'%s' is a %s, not a params block, so it is no type" % (
                    name, "def" if isinstance(known, Template) else "module"
                    if isinstance(known, Module) else "var" if isinstance(known, VarBinding)
                    else "let") if known is not None else "unknown type '%s'" % name)
        hint = _TYPE_HABITS.get(name.lower(), "")
        raise GoatError("%s: a type is tensor[...] (tensor[3x4], tensor[N, D]), scalar, or the "
                        "name of a params block%s%s" % (
                            what, "; " + hint if hint else "",
                            _suggest(name, self.layout_types) if not hint else ""), loc)

    def _lay_out(self, scope, name, ann, expr, shape=None, index=None):
        """After ``let name[: ann] = expr``: the name's Layout, if its value has one -- written
        (``let g: theta = ...``), that a def's declared result names (``-> theta``), that of
        the one value grad differentiates with respect to (``let g = grad(l, theta)``), or
        else that of the values the expression is made of, when its value is a vector of a
        block's length and they are laid out alike (``let p = theta``, ``zeros(theta)``,
        ``let u = theta - lr * g``, ``let g, n = optim.clip_grad_norm(grad(l, theta), 1)``).
        ``index``: the name takes that result of a call giving several."""
        if not self.layout_types:       # (no params block: nothing is laid out)
            return
        if ann is not None:
            if ann.layout is not None:
                scope.layouts[name] = self.layout_types[ann.layout]
            return
        layout = self._expr_layout(expr, scope, index)
        if layout is not None and (shape is None or tuple(shape) == (layout.size,)):
            scope.layouts[name] = layout

    def _expr_layout(self, expr, scope, index=None):
        """The Layout of the value ``expr`` gives (its result ``index`` for several), or None:
        see :meth:`_lay_out`.  A value keeps the layout of what it is computed from cell by
        cell -- a laid-out name, a fill of a block's shape, grad with respect to one, a def
        declared to return one or whose result is its argument's cells computed elementwise
        -- through elementwise operators and built-ins; a reshape, a subscript or any other
        op that moves cells gives none.  Several layouts: none.  The caller keeps the layout
        only when the value's shape is the block's vector."""
        found = self._layouts_in(expr, scope, index)
        return next(iter(found)) if len(found) == 1 else None

    def _layouts_in(self, e, scope, index=None) -> set:
        t = type(e)
        if t is ast.Name:
            layout = self._name_layout(e.name, scope)
            return {layout} if layout is not None else set()
        if t is ast.Binary:
            return self._layouts_in(e.left, scope) | self._layouts_in(e.right, scope)
        if t is ast.Unary:
            return self._layouts_in(e.operand, scope)
        if t is ast.Tuple:
            return (self._layouts_in(e.items[index], scope)
                    if index is not None and index < len(e.items) else set())
        if t is not ast.Call:
            return set()
        args = [a.value if type(a) is ast.Keyword else a for a in e.args]
        if _is_grad(e):
            k = 1 + (index or 0)
            return ({self._name_layout(args[k].name, scope)} - {None}
                    if k < len(args) and type(args[k]) is ast.Name else set())
        callee = self._def_named(e.name)
        if isinstance(callee, Template):
            ret = callee.stmt_ret
            if isinstance(ret, list):
                ret = ret[index] if index is not None and index < len(ret) else None
            if isinstance(ret, ast.TypeAnn) and ret.layout is not None:
                layout = callee.home_layouts.get(ret.layout)
                return {layout} if layout is not None else set()
            out = set()
            for k in _carriers(callee, index):
                if k < len(args):
                    out |= self._layouts_in(args[k], scope)
            return out
        op = lookup(e.name)
        if op is None:
            return set()
        if "creation" in op.tags:           # zeros(theta), randn(theta, 1)
            out = set()
            for a, (_, kind) in zip(args, op.params):
                name = (a.ann.layout if type(a) is ast.TypeArg else
                        a.name if type(a) is ast.Name else None)
                if kind == "type" and name in self.layout_types:
                    out.add(self.layout_types[name])
                elif kind == "type" and type(a) is ast.Name:   # zeros(m), m laid out
                    out |= self._layouts_in(a, scope)
            return out
        if "elementwise" in op.tags or "constant" in op.tags:   # exp(theta), stop_gradient
            out = set()
            for k, a in enumerate(args[:op.n_values]):
                if k not in op.chooses:
                    out |= self._layouts_in(a, scope)
            return out
        return set()

    def _def_named(self, name):
        """The def a call names (``f``, or a module's, ``model.loss``), or None."""
        if "." not in name:
            return self.globals.get(name)
        mod, _, member = name.partition(".")
        module = self.globals.get(mod)
        return module.names.get(member) if isinstance(module, Module) else None

    def _name_layout(self, name, scope):
        """The Layout of the value a name (or a member, ``theta.blk``; a module's params
        block, ``model.theta``) holds, or None."""
        if "." not in name:
            return self._layout_of(name, scope)
        base, _, rest = name.partition(".")
        layout = self._layout_of(base, scope)
        module = scope.find(base)[0] if layout is None else None
        if isinstance(module, Module):  # model.theta: the module's block's first value
            block, _, rest = rest.partition(".")
            layout = module.laid.get(block) if isinstance(
                module.names.get(block), Node) else None
            if not rest:
                return layout
        for part in rest.split(".") if layout is not None else ():
            member = layout.members.get(part)
            layout = member[3] if member is not None else None
            if layout is None:
                break
        return layout

    def _member(self, name, loc, scope, b):
        """``theta.w1`` (or ``theta.blk.w1``): the cells of the member, read in its shape --
        a narrow of the vector and a reshape, so that grad and goat compile take it as they
        take any slice.  Returns (node, the member's (offset, count, shape, layout), the base's
        binding node)."""
        base, *path = name.split(".")
        layout = self._layout_of(base, scope)
        module = scope.find(base)[0] if layout is None else None
        if isinstance(module, Module) and path and path[0] in module.laid:
            # model.theta.w1: a member of a module's params block's first value (or of a
            # let it lays out)
            layout = module.laid[path[0]]
            base, path = base + "." + path[0], path[1:]
        node = self._name(ast.Name(base, loc), scope, b)
        whole = node
        offset, member, walked = 0, None, base
        for part in path:
            if layout is None:
                hint = _METHOD_HABITS.get(part)
                raise GoatError("'%s' is %s, not a params block's value: it has no members%s"
                                % (walked, format_type(member[2]), (
                                    "; goat has no methods: " + hint.replace("(x", "(" + walked))
                                    if hint else ""), loc)
            member = layout.members.get(part)
            if member is None:
                hint = _METHOD_HABITS.get(part) if part not in layout.members else None
                near = _near_member(part, layout.members)
                raise GoatError("%s has no member '%s'%s; its members: %s" % (
                    walked, part, ("; goat has no methods: " + hint.replace("(x", "(" + walked))
                    if hint else " (did you mean '%s'?)" % near if near else "",
                    layout.describe()), loc)
            offset += member[0]
            layout = member[3]
            walked += "." + part
        _, count, shape, _ = member
        if count != whole.shape[0]:
            node = b.op(REGISTRY["narrow"], (whole, b.const(float(offset), loc)), loc,
                        (0, count))
        if tuple(shape) != tuple(node.shape):
            node = b.op(REGISTRY["reshape"], (node,), loc, (tuple(shape),))
        return node, (offset, count, shape, layout), whole

    def _assign_member(self, stmt, scope, b, name=None, name_loc=None, node=None,
                       value_loc=None, loc=None):
        """``theta.w1 = v`` (``stmt``; or, from ``theta.w1, m = ...``, the value ``node``):
        the params var theta with w1's cells replaced by v, which has w1's shape (one number
        goes into a member of one cell); ``theta.w1[0, 1] = v`` replaces those cells of w1."""
        if stmt is not None:
            name, name_loc, value_loc, loc = stmt.name, stmt.name_loc, stmt.expr.loc, stmt.loc
        base = name.partition(".")[0]
        self._assignable(base, name_loc, scope)
        current, (offset, count, shape, _), whole = self._member(name, name_loc, scope, b)
        if stmt is not None:
            node = self._one(stmt.expr, self.expr(
                stmt.expr, scope, b, tuple(shape) if stmt.items is None else None))
            if stmt.items is not None:  # theta.w1[0, 1] = v: w1 with those cells replaced
                node = self._store(stmt, current, node, scope, b)
        ok, runtime = compatible(tuple(shape), node.shape)
        if not ok and _cells(shape) == 1 and _cells(node.shape) == 1:
            node, ok, runtime = b.op(REGISTRY["reshape"], (node,), value_loc,
                                     (tuple(shape),)), True, False
        if not ok and all(type(d) is int for d in node.shape):
            # decay.w = 1: a member is cells of the var, as x[a:b] = v is, so v broadcasts to
            # it as to a subscript's cells (NumPy's rule: v's leading 1s do not count)
            vs = tuple(node.shape)
            while len(vs) > len(shape) and vs[0] == 1:
                vs = vs[1:]
            if vs != tuple(node.shape):
                node = b.op(REGISTRY["reshape"], (node,), value_loc, (vs,))
            try:
                if broadcast("assign", tuple(shape), tuple(node.shape)) == tuple(shape):
                    import numpy as np
                    node = b.op(OPERATORS["+"], (node, b.const(np.zeros(shape), value_loc)),
                                value_loc)
                    ok, runtime = True, False
            except ShapeError:
                pass
        if not ok and None in node.shape and len(node.shape) <= len(shape) and all(
                d in (1, None) or d == t for d, t in zip(node.shape[::-1], shape[::-1])):
            ok, runtime = True, True        # p.w = x, x of shape ?x1: it may broadcast
        if not ok:
            raise GoatError("%s is %s, but this value has shape %s" % (
                name, format_type(shape), format_shape(node.shape)), value_loc)
        if runtime and len(node.shape) <= len(shape):
            # p.w = x, x of shape ?x2: its cells, broadcast as a subscript's are (checked when
            # it runs)
            node = b.op(REGISTRY["broadcast_to"], (node,), value_loc,
                        (tuple(shape), (name, tuple(range(len(shape))), "member")))
            runtime = False
        node = b.cast(node, tuple(shape), ("var", name), loc, runtime)
        flat = node if tuple(shape) == (count,) else b.op(REGISTRY["reshape"], (node,), loc,
                                                          ((count,),))
        if count == whole.shape[0]:
            new = flat
        else:
            new = b.op(REGISTRY["put"], (whole, flat, b.const(float(offset), loc)), loc, (0,))
        return self._assign_value(base, name_loc, new, value_loc, loc, scope, b)

    def _members(self, stmt, scope, b, members, parts):
        """The members of params block ``stmt``, in order, into ``members`` (name -> (offset,
        count, shape, layout)) and their cells as vectors into ``parts``."""
        offset = 0
        for s in stmt.body:
            t = type(s)
            if t is ast.Assign and s.items is None and "." not in s.name and not (
                    type(s.expr) is ast.Binary and type(s.expr.left) is ast.Name
                    and s.expr.left.name == s.name and s.expr.left.loc == s.name_loc):
                name, name_loc, ann, expr, member_loc = s.name, s.name_loc, None, s.expr, s.loc
            elif t is ast.Member:
                name, name_loc, ann, expr, member_loc = s.name, s.name_loc, s.type, s.expr, s.loc
            else:
                raise GoatError("a params block holds its members, one per line, each given "
                                "its first value: NAME = VALUE, or NAME: tensor[...] = VALUE "
                                "(a let, a loop or another statement belongs outside it)",
                                s.loc)
            if name in members:
                raise GoatError("%s has a member '%s' already; each member has a name of its "
                                "own" % (stmt.name, name), name_loc)
            if (name in KEYWORDS and name != "params") or name in TYPE_WORDS:
                raise GoatError("'%s' is a reserved word and cannot name a member" % name,
                                name_loc)
            want = self._dims(ann, scope) if ann is not None else None
            node = self._stated_value(expr, scope, b, want, ann)
            if ann is not None:         # (its errors name it theta.w1)
                node = self._annotate(ast.Member("%s.%s" % (stmt.name, name), ann, expr,
                                                 s.loc, name_loc), want, node, b)
            shape = tuple(node.shape)
            if not all(type(d) is int for d in shape):
                raise GoatError("member %s.%s has shape %s: a member's shape must be known "
                                "before the run (write it: %s: tensor[...] = ...)" % (
                                    stmt.name, name, format_shape(shape), name), expr.loc)
            sub = None
            if ann is not None and ann.layout is not None:
                sub = self.layout_types[ann.layout]
            else:       # blk = block (model.theta, zeros(block)): laid out as that block
                sub = self._expr_layout(expr, scope)
                if sub is not None and shape != (sub.size,):
                    sub = None
            count = _cells(shape)
            members[name] = (offset, count, shape, sub)
            parts.append(node if shape == (count,) else b.op(
                REGISTRY["reshape"], (node,), member_loc, ((count,),)))
            offset += count

    def _params(self, stmt: ast.Params, scope, b):
        """``params NAME { w1 = EXPR ... }``: each member's value (its shape known before the
        run), their cells one after another in one var NAME (a vector), and NAME's Layout, a
        type a def's parameter may have (``p: NAME``)."""
        if scope is not self.top or self._defining is not None:
            raise GoatError("params must be at the top level of the program, not inside a "
                            "block or a def: a def takes a params block's value as a parameter "
                            "(def f(p: %s, ...), and reads p.NAME)" % stmt.name, stmt.head)
        members, parts, offset = {}, [], 0
        outer, self._params_defining = self._params_defining, stmt.name
        try:
            self._members(stmt, scope, b, members, parts)
        finally:
            self._params_defining = outer
        offset = sum(count for _, count, _, _ in members.values())
        if not members:
            raise GoatError("params %s has no members: write each, one per line, as NAME = "
                            "VALUE (w = randn(tensor[3x4], 1) * 0.1)" % stmt.name, stmt.head)
        while len(parts) > 1:       # joined pairwise, each cell copied log2(members) times
            parts = [b.op(REGISTRY["concat"], tuple(parts[k:k + 2]), stmt.head, (0,))
                     if k + 1 < len(parts) else parts[k] for k in range(0, len(parts), 2)]
        node = self._own(parts[0], stmt.name, stmt.loc, b)
        layout = Layout(stmt.name, members, offset, stmt.head)
        # (in a module, its first value, which a program takes: var theta = model.theta)
        self._bind(scope, stmt.name, stmt.name_loc, node if self.module else VarBinding(
            node, (offset,), stmt.loc.line), stmt.loc.line)
        scope.layouts[stmt.name] = layout
        self.layout_types[stmt.name] = layout
        self.program.params[self.qual + stmt.name] = _member_table(members)
        self._outline("params %s : tensor[%d]" % (stmt.name, offset))
        for m, (_, _, shape, _) in members.items():
            self._outline("  %s.%s : %s" % (stmt.name, m, format_type(shape)))
        return node

    def _let_tuple(self, stmt, scope, b):
        n = len(stmt.names)
        seen = set()
        parts = stmt.items or [None] * n
        whole = {name for name, part in zip(stmt.names, parts) if part is None}
        for name, loc, part in zip(stmt.names, stmt.name_locs, parts):
            if part is not None:        # h[0], h[1] = ...: cells of one var, in turn
                if name == "_":
                    raise GoatError("_ leaves a value out: it has no cells to assign (write _ "
                                    "alone)", loc)
                if name in whole:
                    raise GoatError("'%s' is assigned whole and in part here: one value would "
                                    "replace the other's; assign them in two statements"
                                    % name, loc)
                continue
            if name in seen and name != "_":
                raise GoatError("'%s' appears twice among the names this statement binds" % name,
                                loc)
            within = [n for n in seen if n.startswith(name + ".") or name.startswith(n + ".")]
            if within:                  # p.b, p = ...: p.b's cells assigned twice
                inner, outer = sorted((within[0], name), key=len, reverse=True)
                raise GoatError("'%s' and '%s' are both assigned here, and %s holds %s's cells: "
                                "one value would replace the other's; assign them in two "
                                "statements" % (within[0], name, outer, inner), loc)
            seen.add(name)
        value = self.expr(stmt.expr, scope, b)
        what = {"let": "let binds", "var": "var binds", "assign": "this assigns"}[stmt.kind]
        if not isinstance(value, tuple):
            cells = stmt.items is not None and any(i is not None for i in stmt.items)
            raise GoatError("%s %d %s here, but the value is a single tensor of shape %s%s"
                            % (what, n, "targets" if cells else "names",
                               format_shape(value.shape),
                               "; cells of one value are assigned one statement each (h[0] = "
                               "v[0]), or as one slice (h[0:2] = v)" if cells else ""),
                            stmt.expr.loc)
        if len(value) != n:
            hint = ""
            whole = _split_size(stmt.expr, value)
            if whole is not None and whole % n == 0:
                hint = ("; split's second argument is how many equal parts (NumPy's split, "
                        "PyTorch's chunk), not a part's size (PyTorch's split): for %d parts, "
                        "split(x, %d, axis)" % (n, n))
            if not hint and len(value) > n:
                hint = ("; a value not wanted is bound to _ (%s)" % ", ".join(
                    [_target_text(name, loc, part)
                     for name, loc, part in zip(stmt.names, stmt.name_locs, parts)]
                    + ["_"] * (len(value) - n)))
            raise GoatError("%s %d names, but the value holds %d%s" % (what, n, len(value), hint),
                            stmt.loc)
        types = stmt.types or [None] * n
        for name, loc, node, ann, part in zip(stmt.names, stmt.name_locs, value, types, parts):
            if name == "_":             # a value not wanted here
                continue
            if part is not None:        # h[l] = the value: h with those cells replaced
                items, bracket = part
                target = ast.Assign(name, stmt.expr, stmt.loc, loc, items, bracket)
                if "." in name and self._layout_of(name.partition(".")[0], scope) is not None:
                    current = self._member(name, loc, scope, b)[0]     # theta.w[0], ... =
                else:
                    current = self._assignable(name, loc, scope)[0].node
                node = self._store(target, current, node, scope, b)
                self._assign_value(name, loc, node, stmt.expr.loc, stmt.loc, scope, b)
                continue
            if stmt.kind == "assign":
                self._assign_value(name, loc, node, stmt.expr.loc, stmt.loc, scope, b)
                continue
            if ann is not None:         # let g: theta, n = ...: each name's annotation
                node = self._annotate(ast.Let(name, ann, stmt.expr, stmt.loc, loc),
                                      self._dims(ann, scope), node, b)
            node = self._own(node, name, loc, b)
            if stmt.kind == "var":
                self._bind(scope, name, loc, VarBinding(node, node.shape, stmt.loc.line),
                           stmt.loc.line)
            else:
                self._bind(scope, name, loc, node, stmt.loc.line)
            # let g, n = optim.clip_grad_norm(grad(l, theta), 1): g is laid out as theta
            self._lay_out(scope, name, ann, stmt.expr, node.shape, stmt.names.index(name))
            self._outline("%s%s : %s%s" % ("var " if stmt.kind == "var" else "", name,
                                           format_type(node.shape), _laid_out(scope, name)))
        return value

    def _assign(self, stmt, scope, b):
        if "." in stmt.name and self._layout_of(stmt.name.partition(".")[0], scope) is not None:
            return self._assign_member(stmt, scope, b)
        binding, _ = self._assignable(stmt.name, stmt.name_loc, scope)
        # (w = randn(7) * 0.3: a built-in's shape left out is the var's)
        want = tuple(binding.declared) if stmt.items is None and None not in binding.declared \
            else None
        node = self.expr(stmt.expr, scope, b, want)
        if stmt.items is not None:          # x[i] = v: x with those cells replaced
            node = self._store(stmt, binding.node, self._one(stmt.expr, node), scope, b)
        if isinstance(node, tuple) and not _is_grad(stmt.expr):
            raise GoatError("this is %d values, not one; assign them to vars, one each, with "
                            "%s = ..." % (len(node), ", ".join(
                                _var_targets(stmt, len(node), scope))), stmt.expr.loc)
        node = self._one(stmt.expr, node)
        return self._assign_value(stmt.name, stmt.name_loc, node, stmt.expr.loc, stmt.loc, scope, b)

    def _assignable(self, name, name_loc, scope):
        binding, owner = scope.find(name)
        if not isinstance(binding, VarBinding):
            self._not_assignable(name, binding, owner, scope, name_loc)
        if self._crosses_def(scope, owner):
            raise GoatError("a def cannot assign to var '%s', defined outside it; return the new "
                            "value instead" % name, name_loc)
        return binding, owner

    def _assign_value(self, name, name_loc, node, value_loc, loc, scope, b):
        if "." in name and self._layout_of(name.partition(".")[0], scope) is not None:
            # theta.w1, m = ...: the member's cells of the params var replaced
            return self._assign_member(None, scope, b, name, name_loc, node, value_loc, loc)
        binding, owner = self._assignable(name, name_loc, scope)
        ok, runtime = compatible(binding.declared, node.shape)
        widened = b.widen([node], value_loc) if not ok and node.book is not None else None
        if widened is not None and compatible(binding.declared, node.book)[0]:
            # a value the book types with a ? size (a ? def's result): checked when it runs,
            # as an annotated let's is
            b.defer(_var_shape_message(name, node.shape, binding.declared), value_loc)
            node, ok, runtime, loc = widened[0], True, True, value_loc
        if not ok and _cells(binding.declared) == 1 and None not in binding.declared and (
                _cells(node.shape) == 1 or (None in node.shape and
                                            all(d in (None, 1) for d in node.shape))):
            # one number into a var of one number (var total = 0 ... total += loss, a 1x1):
            # the var's shape, the same number (a value of ? sizes checked when it runs)
            if None in node.shape:
                node = b.cast(node, (1,) * len(node.shape), ("var", name, binding.declared),
                              value_loc, True)
            node = b.op(REGISTRY["reshape"], (node,), value_loc, (tuple(binding.declared),))
            ok, runtime = True, False
        if not ok:
            hint = ""
            shown = node.shape if node.book is None else node.book     # the type that fails
            raise GoatError(_var_shape_message(name, shown, binding.declared) + hint, value_loc)
        what = ("var", name)            # the run-time checks say what the static one says
        if None in binding.declared:    # a size known when it runs: it must stay the same
            node = b.cast(node, binding.declared, what, loc, False)
            node = b.same_shape(node, binding.node, what, loc)
        else:
            node = b.cast(node, binding.declared, what, loc, runtime)
        node = self._own(node, name, loc, b)
        owner.names[name] = VarBinding(node, binding.declared, binding.line)
        return node

    def _not_assignable(self, name, binding, owner, scope, loc):
        if binding is None:
            if "." in name:
                base = name.partition(".")[0]
                v, _ = scope.find(base)
                if v is None or isinstance(v, (Node, VarBinding)):
                    self._no_members(name, v, scope, loc)
                block = name.split(".")[1]
                if isinstance(v, Module) and block in v.layouts:
                    raise GoatError("cannot assign to '%s': a module's names cannot change; to "
                                    "train the module's params block, take its first value in a "
                                    "var of the program: var %s = %s.%s" % (
                                        name, block, base, block), loc)
                raise GoatError("cannot assign to '%s': a module's names cannot change" % name, loc)
            raise GoatError("cannot assign to '%s': no var of that name is defined; a new name "
                            "needs let (let %s = ...), or var (var %s = ...) to assign to it "
                            "later" % (name, name, name), loc)
        what = owner.what.get(name)
        if what:
            raise GoatError("cannot assign to '%s': it is a %s" % (name, what), loc)
        if isinstance(binding, Template):
            raise GoatError("cannot assign to '%s': it is a def" % name, loc)
        if isinstance(binding, Module):
            raise GoatError("cannot assign to '%s': it is a module" % name, loc)
        raise GoatError("cannot assign to '%s': it is defined with let %s, which "
                        "cannot change; declare it with var to assign to it"
                        % (name, _defined_at(owner, name, loc)), loc)

    @staticmethod
    def _crosses_def(scope, owner) -> bool:
        """Is ``owner`` outside the def body that ``scope`` is in?"""
        s = scope
        while s is not None and s is not owner:
            if s.function:
                return True
            s = s.parent
        return False

    # ------------------------------------------------------------------ blocks
    def _carried(self, stmts, scope):
        """The vars of enclosing blocks that ``stmts`` assign, in order of first assignment:
        [(name, binding, scope holding it)]."""
        names = []
        _assigned(stmts, names, self._assigned_memo)
        out = []
        seen = set()
        for name in names:
            if name in seen:
                continue
            seen.add(name)
            binding, owner = scope.find(name)
            if isinstance(binding, VarBinding) and not self._crosses_def(scope, owner):
                out.append((name, binding, owner))
        return out

    def _one_value(self, node, loc, what, b=None):
        cells = _cells(node.shape)
        if cells is not None and cells != 1:
            message = ("%s must be a single number (one element), got shape %s"
                       % (what, format_shape(node.shape)))
            if b is not None and node.book is not None and _cells(node.book) is None:
                b.defer(message, loc)       # the book's type leaves it open: when it runs
                return
            raise GoatError(message, loc)

    def _whole_bound(self, node, loc):
        """A loop bound the program's numbers fix (written, or lets and arithmetic on them:
        0..N / B) is checked now, not when the loop runs."""
        node = _unbound(node)
        v = node.value if node.kind == CONST and isinstance(node.value, float) else (
            known_number(node) if node.shape in ((), (1,), (1, 1)) else None)
        if v is not None and node.kind != CONST:
            # computed: an error before the run only where a --dtype f32 run fails too (0.1 *
            # 3 * 10 is 3 in float32)
            from .program import _fold
            narrow = _fold(node, "f32")
            if narrow is None or (narrow == narrow and abs(narrow) != float("inf")
                                  and narrow == int(narrow)):
                v = None
        if v is not None and (v != v or abs(v) == float("inf")):
            from ..interp.printer import format_number
            raise GoatError("a loop bound must be a whole number, got %s" % format_number(v),
                            loc)
        if v is not None:
            if v != int(v):
                shown = "%g" % v        # (every digit too where %g rounds it: 2.0000001)
                raise GoatError("a loop bound must be a whole number, got %s%s" % (
                    shown, " (%.17g)" % v if float(shown) != v else ""), loc)
            if abs(v) > 2 ** 53:
                from ..ops.rng import _format_seed
                raise GoatError("a loop bound must be a whole number from -%d to %d (the loop "
                                "index is a float, exact up to 2**53), got %s"
                                % (2 ** 53, 2 ** 53, _format_seed(v)), loc)

    def _keeps(self, e) -> bool:
        """Is ``e`` kept to be reported with the other errors, the checking going on (in
        check_module_all, not in a call's specialization, and not a fatal error)?"""
        return self.collecting and not self._quiet and not getattr(e, "fatal", False)

    def _head(self, check):
        """``check()`` a block's head (a loop's bounds, an if's condition): its result, or, when
        every error is wanted, the error kept in a list so that the body is checked too."""
        try:
            return check(), []
        except GoatError as e:
            if not self._keeps(e):
                raise
            return None, _each(e)

    def _for(self, stmt: ast.For, scope, b):
        def bounds():
            lo = self.value(stmt.lo, scope, b)
            hi = self.value(stmt.hi, scope, b)
            for node, expr in ((lo, stmt.lo), (hi, stmt.hi)):
                self._one_value(node, expr.loc, "a loop bound", b)
                self._whole_bound(node, expr.loc)
            return lo, hi
        both, errors = self._head(bounds)
        carried = self._carried(stmt.body, scope)
        self._outline(_header(stmt))
        pre = Region("pre", b.region, stmt.loc)
        region = Region("for", pre, stmt.loc)
        pre.inner.append(region)
        program = self.program
        index = program.new_node(region, ARG, None, (), (), stmt.name_loc, what="loop index")
        region.params.append(index)
        if both is not None:        # (fixed bounds: a narrow's start over the loop, above)
            first, end = (known_number(n) for n in both)
            if first is not None and end is not None and first < end:
                self.index_ranges[index.id] = (first, end - 1)
            elif first is not None and end is not None:
                self.dead_loops.add(region)
        inner = Scope(scope)
        self._new_name(inner, stmt.name, stmt.name_loc)      # the block's own name
        inner.names[stmt.name] = index
        inner.lines[stmt.name] = stmt.loc.line
        inner.what[stmt.name] = "loop variable"
        for name, binding, owner in carried:
            p = program.new_node(region, ARG, None, (), binding.declared, stmt.loc,
                                 what="var %s" % name)
            region.params.append(p)
            inner.names[name] = VarBinding(p, binding.declared, binding.line)
            inner.lines[name] = binding.line
            inner.sources[name] = owner.sources.get(name)   # (an earlier REPL input's)
            inner.shadows.add(name)
        try:
            self._block(stmt.body, inner, b.sub(region))
        except GoatError as e:
            raise _together(errors, e) if errors else e
        if errors:
            raise _together(errors)         # the bounds' errors, the body checked too
        lo, hi = both
        region.yields = [inner.names[name].node for name, _, _ in carried]
        inits = tuple(binding.node for _, binding, _ in carried)
        loop = program.new_node(b.region, LOOP, None, (lo, hi) + inits,
                                tuple(bd.declared for _, bd, _ in carried), stmt.loc, value=region,
                                attrs=(stmt.lo.loc, stmt.hi.loc))
        self._rebind(loop, carried, b)
        return loop

    def _rebind(self, node, carried, b):
        for i, (name, binding, owner) in enumerate(carried):
            result = b.get(node, i, binding.declared)
            current = owner.names[name]
            owner.names[name] = VarBinding(result, current.declared, current.line)

    def _if(self, stmt: ast.If, scope, b):
        def condition():
            cond = self.value(stmt.cond, scope, b)
            self._one_value(cond, stmt.cond.loc, "an if condition", b)
            return cond
        cond, errors = self._head(condition)
        carried = self._carried(stmt.body + stmt.orelse, scope)
        regions = []
        shifted = False
        for k, stmts in enumerate((stmt.body, stmt.orelse)):
            if k == 0:
                outline = self.program.outline
                if stmt.chained and outline[-1:] == [(self.depth - 1, "else")] and not self.module:
                    outline[-1] = (self.depth - 1, "else " + _header(stmt))
                    shifted = True          # an else-if reads at the depth of its first if
                    self.depth -= 1
                else:
                    self._outline(_header(stmt))
            elif stmts:
                self._outline("else")
            region = Region("if", b.region, stmt.loc)
            inner = Scope(scope)
            for name, binding, owner in carried:
                inner.names[name] = VarBinding(binding.node, binding.declared, binding.line)
                inner.lines[name] = binding.line
                inner.sources[name] = owner.sources.get(name)
                inner.shadows.add(name)
            try:
                self._block(stmts, inner, b.sub(region))
            except GoatError as e:
                # checking every error: the other branch is checked all the same
                if not self._keeps(e):
                    if shifted:
                        self.depth += 1
                    raise _together(errors, e) if errors else e
                errors.extend(_each(e))
                continue
            region.yields = [inner.names[name].node for name, _, _ in carried]
            regions.append(region)
        if shifted:
            self.depth += 1
        if errors:
            raise _together(errors)
        branch = self.program.new_node(b.region, BRANCH, None, (cond,),
                                       tuple(bd.declared for _, bd, _ in carried), stmt.loc,
                                       value=tuple(regions), attrs=(stmt.cond.loc,))
        self._rebind(branch, carried, b)
        return branch

    def _print_format(self, stmt, scope, b):
        data = self._format_data(stmt.parts, scope, b, printed=True)
        self.program.add_effect(b.region, "format", None, stmt.loc, data)
        self.impure = True
        return None

    def _assert(self, stmt, scope, b):
        """``assert COND, "message"``: a branch taken where COND (one number) is 0 (a NaN
        holds, as an if takes it), whose effect stops the program with the message; the
        message's fields are computed there only (as Python's assert computes its message)."""
        cond = self.value(stmt.cond, scope, b)
        self._one_value(cond, stmt.cond.loc, "an assert's condition", b)
        failed = b.op(OPERATORS["=="], (cond, b.const(0.0, stmt.cond.loc)), stmt.cond.loc)
        region = Region("if", b.region, stmt.loc)
        if stmt.parts is None:
            head = stmt.cond.loc
            data = ["assertion failed: " + head.source.text[head.start:head.end]]
        else:
            data = self._format_data(stmt.parts, Scope(scope), b.sub(region), printed=True)
        self.program.add_effect(region, "assert", None, stmt.loc, data)
        self.impure = True
        return self.program.new_node(b.region, BRANCH, None, (failed,), (), stmt.loc,
                                     value=(region, Region("if", b.region, stmt.loc)),
                                     attrs=(stmt.cond.loc, "an assert's condition"))

    def _format_data(self, parts, scope, b, printed=False):
        """A format string's parts: text, and (node, spec, Loc) per field."""
        data = []
        for part in parts:
            if isinstance(part, str):
                data.append(part)
                continue
            node = self.value(part.expr, scope, b)
            cells = _cells(node.shape)
            if cells is not None and cells != 1:
                message = field_shape_message(node.shape, printed)
                if node.book is None or _cells(node.book) is not None:
                    raise GoatError(message, part.loc)
                b.defer(message, part.loc)      # the book's type leaves it open: when it runs
            data.append((node, part.spec, part.loc))
        return data

    # ------------------------------------------------------------------ defs
    def _solvable(self, stmt, params):
        """Every size variable of a def's parameters can be worked out by a call: one a
        parameter's size is, or the one open variable of a size written as arithmetic once
        the others are known (tensor[K + H, 4 * H]: 4*H gives H, then K + H gives K).  A
        GoatError names a variable no call could work out (tensor[K + H] alone, tensor[N*N])."""
        known = set(self._sizes)
        polys = [(d, p.type.loc) for p, (_, dims, _) in zip(stmt.params, params) for d in dims
                 if type(d) is SizePoly]
        progress = True
        while progress:
            progress = False
            for d, _ in polys:
                # (a known size taken as a number no arithmetic cancels: N * M with N known
                # gives M, as each call with N from 1 does)
                got = solve_size(d, 0, lambda n: 7919 if n in known else None)
                if got is not None:
                    known.add(got[0])
                    progress = True
        for d, loc in polys:
            open_ = [n for n in d.names if n not in known]
            if open_:
                raise GoatError(
                    "a call of %s could not work out %s from the size %s: give %s a size of "
                    "its own in a parameter's type (%s alone, as in tensor[%s]), or write the "
                    "sizes so that one is open at a time" % (
                        stmt.name, _and_list(open_), d,
                        "one of them" if len(open_) > 1 else "it", open_[0], open_[0]), loc)

    def _define(self, stmt: ast.Def, rest=None, scope=None, outlined=False) -> Template:
        """Check a def.  ``rest``: the leading sizes its ``...`` stand for in this check (a
        call's specialization, :meth:`specialize`), in ``scope`` (the names the def saw when it
        was written); None for the def statement itself, where ``...`` stands for no sizes.
        ``outlined``: a check with ``rest`` that still adds its locals to the outline (the
        def's own, with ``...`` as written)."""
        if rest is None:
            self._new_name(self.top, stmt.name, stmt.name_loc)
        params = []
        generic = []
        seen = set()
        fscope = Scope(scope or self.top, function=True)
        outer_generic = self._generic_def
        self._generic_def = any(p.type.dims[:1] == (...,) for p in stmt.params)
        outer_defining, self._defining = self._defining, stmt.name
        outer_rest, self._rest = self._rest, rest or ()
        outer_quiet, self._quiet = self._quiet, self._quiet or (rest is not None
                                                               and not outlined)
        outer_sizes, self._sizes = self._sizes, None
        outer_lets, self._param_lets = self._param_lets, {}
        outer_polys = self._polys
        try:
            for p in stmt.params:
                if p.name in seen:
                    raise GoatError("parameter '%s' appears twice in %s" % (p.name, stmt.name), p.loc)
                seen.add(p.name)
                dims = self._dims(p.type, fscope, rest_ok=True)
                generic.append((p.name, dims, p.loc))
                if dims and dims[0] is ...:
                    dims = (rest or ()) + dims[1:]
                params.append((p.name, dims, p.loc))
            # each size variable -> where a call gives it (the first parameter and axis)
            self._sizes = {}
            for pname, dims, _ in params:
                for axis, d in enumerate(dims):
                    if isinstance(d, SizeVar):
                        self._sizes.setdefault(d.name, (pname, axis))
            self._solvable(stmt, params)
            for pname, dims, _ in params:
                for axis, d in enumerate(dims):
                    for n in size_names(d):
                        self._sizes.setdefault(n, (pname, axis))
            if rest is None:
                self.program.templates += 1
                index = self.program.templates
            else:           # a call's specialization: not a def of the program's own
                self.program.specializations += 1
                index = -self.program.specializations
            tmpl = Template(stmt.name, params, stmt.loc, index)
            tmpl.stmt_ret = stmt.ret
            tmpl.polys = self._polys = []
            tmpl.home_layouts = self.layout_types
            tmpl.let_sizes, self._param_lets = self._param_lets, None
            if any(d and d[0] is ... for _, d, _ in generic):
                tmpl.generic = generic
                tmpl.stmt = stmt
                tmpl.checker = self
                if scope is None:           # the names as they are now, for later checks
                    snap = Scope(function=True, names=dict(self.top.names),
                                 lines=dict(self.top.lines))
                    snap.what = dict(self.top.what)
                    tmpl.scope = snap
                else:
                    tmpl.scope = scope
            region = tmpl.region
            for name, shape, loc in params:
                node = self.program.new_node(region, ARG, None, (), shape, loc,
                                             what="parameter %s" % name)
                region.params.append(node)
                fscope.names[name] = node
                fscope.lines[name] = stmt.loc.line
                fscope.what[name] = "parameter"
            for p, (_, dims, _) in zip(stmt.params, params):
                if p.default is not None:   # eps: scalar = 1e-08
                    tmpl.defaults[p.name] = self._default(p, dims, stmt.params)
            for p in stmt.params:           # p: theta reads theta's members as p.w1
                if p.type.layout is not None:
                    fscope.layouts[p.name] = self.layout_types[p.type.layout]
                    tmpl.layouts[p.name] = self.layout_types[p.type.layout]
            # the declared result sees the parameters and the names outside, not the body's
            # lets (def f(x: tensor[N, 1]) -> tensor[N, B] { let B = 4 ...}: B is the outer B)
            sig = Scope(fscope.parent, function=True, names=dict(fscope.names),
                        lines=dict(fscope.lines))
            sig.what = dict(fscope.what)
            body = Builder(self, region, symbolic=True)
            outer_impure, self.impure = self.impure, False
            outer_grad, self.grad_used = self.grad_used, False
            depth, self.depth = self.depth, self.depth + 1
            try:
                if stmt.block:
                    stmts = stmt.body
                    ends = bool(stmts) and type(stmts[-1]) is ast.Return

                    def one(s):
                        if type(s) is ast.Return:
                            raise GoatError("return must be the last statement of %s's body"
                                            % stmt.name, s.loc)
                        self._stmt(s, fscope, body)

                    def returned():
                        if not ends:
                            raise GoatError("the body of %s must end with return, giving its "
                                            "value" % stmt.name,
                                            stmts[-1].loc if stmts else stmt.loc)
                        tmpl.result = self.expr(stmts[-1].expr, fscope, body)
                        if stmt.ret is not None:    # with the body's errors, if any
                            self._check_result(stmt, tmpl, sig, body)
                        return tmpl.result
                    result = self._statements(stmts[:-1] if ends else stmts, one,
                                              (returned, _uses(stmts[-1]) if ends else set()))
                    self.last = (stmts[-1], result)
                else:
                    result = self.expr(stmt.body, fscope, body)
                tmpl.result = result
                tmpl.pure = not self.impure
                tmpl.has_grad = self.grad_used
            finally:
                self.impure = outer_impure
                self.grad_used = outer_grad
                self.depth = depth
            if stmt.ret is not None and not stmt.block:
                self._check_result(stmt, tmpl, sig, body)
        except GoatError as e:
            if rest is None and self._generic_def:
                _note_no_leading_sizes(e, stmt.name)
            raise
        finally:
            self._defining = outer_defining
            self._rest = outer_rest
            self._quiet = outer_quiet
            self._generic_def = outer_generic
            self._sizes = outer_sizes
            self._polys = outer_polys
            self._param_lets = outer_lets
        return tmpl

    def specialize(self, tmpl: Template, shapes, locs, call=None) -> Template:
        """The template of a call of ``tmpl`` with arguments of ``shapes``: ``tmpl`` itself,
        or, for a def with ``...`` parameters given arguments with leading sizes, the def
        checked again with ``...`` standing for that many leading sizes (once per number of
        them).  In that check the leading sizes are size variables (``...``, ``...2``, ...):
        each call binds them like any size variable, so a ``?`` among them is checked when the
        call runs, and a def that creates a tensor of the leading shape works for every call.
        ``call`` is the call's Loc (for the note of an error in that check)."""
        if tmpl.generic is None:
            return tmpl
        lead0 = first = None
        firsts = None               # (declared, actual, loc) of the first parameter with ...
        for (pname, declared, _), actual, loc in zip(tmpl.generic, shapes, locs):
            if not declared or declared[0] is not ...:
                continue
            k = len(declared) - 1
            if len(actual) < k:
                hint = ""
                if declared[-1] == 1 and len(actual) == k - 1 and actual:
                    # cross_entropy(z, y) with y the vector of labels, PyTorch's way
                    written = loc.source.text[loc.start:loc.end] if loc is not None else ""
                    hint = ("; its last axis of 1 is added by a subscript: %s[..., None] "
                            "(PyTorch's unsqueeze(-1))" % (
                                written if re.fullmatch(r"[\w.]+", written) else "("
                                + written + ")" if written else pname))
                raise GoatError("argument %s of %s must have shape %s: at least %d dimension%s, "
                                "got %s%s" % (pname, tmpl.qualname, format_type(declared), k,
                                              "" if k == 1 else "s",
                                              "a scalar" if not actual else "shape %s (rank %d)"
                                              % (format_shape(actual), len(actual)), hint), loc)
            lead = tuple(actual[:len(actual) - k])
            if lead0 is None:
                lead0, first, firsts = lead, pname, (declared, actual, loc)
            elif len(lead) != len(lead0) or not all(
                    a is None or b is None or a == b for a, b in zip(lead0, lead)):
                dotted = [p for p, d, _ in tmpl.generic if d and d[0] is ...]
                if all(len(d) == 1 for _, d, _ in tmpl.generic if d and d[0] is ...):
                    # optim.adamw(w: tensor[...], g: tensor[...], ...): one shape, any
                    raise GoatError("%s of %s must all have the same shape (each is declared "
                                    "tensor[...]), but %s is %s and %s is %s"
                                    % (_and_list(dotted), tmpl.qualname, first,
                                       format_shape(lead0), pname, format_shape(lead)), loc)
                hint = ""
                for (short, sd, sa, sl), (other, od, oa, _) in (
                        ((pname, declared, actual, loc), (first,) + firsts),
                        ((first,) + firsts, (pname, declared, actual, loc))):
                    # t: 8x32 for tensor[..., N, 1] beside z: 8x32x76 for tensor[..., N, V]
                    # (in a def, on its sizes too: t: SxN beside z: SxNxV)
                    if (sd[-1] == 1 and len(sa) == len(oa) - len(od) + len(sd) - 1
                            and None not in sa):
                        written = sl.source.text[sl.start:sl.end] if sl is not None else ""
                        hint = ("; %s looks one axis short: its last size must be 1, as "
                                "%s[..., None] makes it (PyTorch's unsqueeze(-1))"
                                % (short, written if re.fullmatch(r"[\w.]+", written)
                                   else "(%s)" % written if written else short))
                        break
                raise GoatError("... stands for the same leading sizes in every parameter of %s, "
                                "but %s is %s (%s: ... = %s) and %s is %s (%s: ... = %s)%s"
                                % (tmpl.qualname, first, format_shape(firsts[1]),
                                   format_type(firsts[0]),
                                   format_shape(lead0) if lead0 else "none",
                                   pname, format_shape(actual), format_type(declared),
                                   format_shape(lead) if lead else "none", hint), loc)
        if not lead0:
            return tmpl
        rank = len(lead0)
        spec = tmpl.specs.get(rank)
        if spec is None:
            rest = tuple(SizeVar("..." if i == 0 else "...%d" % (i + 1)) for i in range(rank))
            try:
                spec = tmpl.checker._define(tmpl.stmt, rest=rest, scope=tmpl.scope)
            except GoatError as e:
                where = call or locs[0]
                src = e.loc.source if e.loc is not None else None
                at = ("on line %d" % where.line if where.source is src
                      else "at %s:%d" % (where.source.path, where.line))
                e.notes = tuple(e.notes) + ("in %s with ... = %s, called %s"
                                            % (tmpl.qualname, format_shape(lead0), at),)
                raise
            spec.qualname = tmpl.qualname
            tmpl.specs[rank] = spec
        return spec

    def _check_result(self, stmt, tmpl, fscope, body):
        """The declared result against the body's value; where a ``?`` leaves it open, the
        result is checked when the def runs.  ``fscope``: the names the signature sees."""
        declared = stmt.ret
        several = isinstance(tmpl.result, tuple)
        if isinstance(declared, list) != several or (several and len(declared) != len(tmpl.result)):
            want = ("%d values" % len(declared)) if isinstance(declared, list) else "one value"
            got = ("%d values" % len(tmpl.result)) if several else "one value"
            raise GoatError("%s is declared to return %s, but returns %s" % (stmt.name, want, got),
                            stmt.name_loc)
        pairs = zip(declared, tmpl.result) if several else [(declared, tmpl.result)]
        results = []
        for ann, node in pairs:
            dims = self._dims(ann, fscope, rest_ok=True)
            if dims and dims[0] is ...:
                if not self._generic_def:
                    raise GoatError("... stands for the leading sizes of %s's parameters, but "
                                    "none of them begins with ...: write the sizes" % stmt.name,
                                    ann.loc)
                dims = self._rest + dims[1:]
            ok, runtime = compatible(dims, node.shape)
            if not ok:
                raise GoatError("%s is declared to return %s, but its value has shape %s"
                                % (stmt.name, format_type(dims), format_shape(node.shape)),
                                ann.loc)
            results.append(body.cast(node, dims, "the value %s returns (declared %s)"
                                     % (stmt.name, format_type(dims)), ann.loc, runtime))
        tmpl.result = tuple(results) if several else results[0]

    # ------------------------------------------------------------------ imports
    def _import(self, stmt: ast.Import, scope):
        from . import modules
        if scope is not self.top:
            raise GoatError("import must be at the top level of the program", stmt.loc)
        name = stmt.module
        existing = self.globals.get(name)
        if isinstance(existing, Module) and self.allow_redefinition:
            return existing
        path = modules.find(name, stmt.loc)
        real = os.path.realpath(path)
        shared = self.shared
        program_file = not self.module and modules.is_file_source(stmt.loc.source)
        if program_file:                    # the program itself is being read, too
            here = stmt.loc.source.path
            shared.loading.append((os.path.realpath(here), here))
        try:
            for i, (p, shown) in enumerate(shared.loading):
                if p == real:
                    chain = [s for _, s in shared.loading[i:]] + [path]
                    raise GoatError("import cycle: %s" % " imports ".join(
                        os.path.basename(s) for s in chain), stmt.module_loc)
            module = shared.modules.get(real)
            if module is None:
                module = self._load_module(name, path, real, stmt)
        finally:
            if program_file:
                shared.loading.pop()
        self._bind(scope, name, stmt.module_loc, module, stmt.loc.line)
        for block, layout in module.layouts.items():    # p: model.theta, zeros(model.theta)
            self.layout_types["%s.%s" % (name, block)] = layout
        self._outline("import %s" % name)
        return module

    def _load_module(self, name, path, real, stmt):
        from ..api import read_source
        from ..lexer.parser import parse
        shared = self.shared
        shared.loading.append((real, path))
        frame = (name, stmt.loc, "import")
        shared.calls.append(frame)      # a run-time error in the module's lets names the import
        place = {}          # an error from a module this one imports: where that import is

        def check(s):
            if type(s) not in (ast.Def, ast.Let, ast.LetTuple, ast.Import, ast.Params):
                raise GoatError("a module may hold only def, let, params and import "
                                "statements; this belongs in a program", s.loc)
            try:
                sub.check_stmt(s)
            except GoatError as e:
                _place_imported(_each(e), s, place)
                raise
        try:
            source = read_source(path)
            # every error in the module, as in the program, when every one is wanted: its
            # syntax errors, and the errors of the statements that could be read
            syntax = [] if self._keeps(GoatError("")) else None
            parsed = parse(source, errors=syntax)
            sub = Checker(self.program, module=True, shared=shared)
            sub.qual = name + "."
            sub.cancel = self.cancel            # an import in a hint stops with the hint
            sub.collecting = syntax is not None
            sub.look_ahead(parsed)
            try:
                # (with syntax errors: the statements that could not be read are skipped,
                # and the blocks holding one checked without it)
                sub._statements(parsed.stmts, check)
            except GoatError as e:
                if not syntax and not sub.collecting:
                    raise
                out = _together(_in_order(syntax + _each(e), place))
                out.fatal = getattr(e, "fatal", False)
                raise out from None
            if syntax:
                raise _together(syntax)
        except GoatError as e:
            note = frame_notes((frame,), None)
            for one in _each(e):
                if (one.loc is None or one.loc.source.path != stmt.loc.source.path) and \
                        note[0] not in one.notes:
                    one.notes = tuple(one.notes) + note
            raise
        finally:
            shared.loading.pop()
            shared.calls.pop()
        own = {k: lay for k, lay in sub.layout_types.items() if "." not in k}
        for block, layout in own.items():      # as the program names it: model.theta
            layout.name = "%s.%s" % (name, block)
        module = Module(name, path, dict(sub.globals), own, dict(sub.top.layouts))
        for v in module.names.values():
            if isinstance(v, Template) and v.qualname == v.name:
                v.qualname = "%s.%s" % (name, v.name)
        shared.modules[real] = module
        return module

    # ------------------------------------------------------------------ calls
    def check_arguments(self, tmpl, shapes, locs):
        """Check a call's argument shapes against the parameters' declared shapes.

        Size variables are bound from every argument first (a ``?`` in one argument takes the
        size another argument gives), then each argument is compared with its declared shape
        with the variables filled in.  ``locs`` gives each argument's position (for the caret).
        Returns ([(bound shape, needs a run-time check, phrase naming the argument)], bindings).
        """
        env = {}
        whats = ["argument %s of %s" % (pname, tmpl.qualname) for pname, _, _ in tmpl.params]
        for (_, declared, _), actual, what, loc in zip(tmpl.params, shapes, whats, locs):
            try:
                bind(declared, actual, env, what)
            except ShapeError as e:
                raise _shape_error(e, loc) from None
        if tmpl.has_vars:
            self._solve_sizes(tmpl, shapes, whats, locs, env)
        out = []
        for (_, declared, _), actual, what, loc in zip(tmpl.params, shapes, whats, locs):
            bound = _subst(declared, env) if tmpl.has_vars else declared
            ok, runtime = compatible(bound, actual)
            if not ok:
                hint = ""
                if _cells(actual) == 1 and None not in bound and _cells(bound) == 1:
                    hint = ("; both hold one number: write reshape(VALUE, %s) to change its "
                            "shape" % format_type(bound))
                elif actual == () and bound and all(type(d) is int for d in bound):
                    # attention's mask given 0: a parameter's shape is exact, not broadcast
                    text = loc.source.text[loc.start:loc.end] if loc is not None else ""
                    text = text if 0 < len(text) <= 30 and "\n" not in text else "VALUE"
                    hint = ("; a parameter's shape is exact, and a number is not spread over "
                            "it: write %s for %s in every cell" % (
                                "zeros(%s)" % format_type(bound) if text in ("0", "0.0") else
                                "zeros(%s) + %s" % (format_type(bound), text), text))
                elif (len(actual) > len(bound) and all(d == 1 for d in
                                                      actual[:len(actual) - len(bound)])
                        and all(type(d) is not int or x is None or d == x for d, x in
                                zip(bound, actual[len(actual) - len(bound):]))):
                    # E[t] of a 1x1 t (argmax_rows of one row) is 1x1xD, as NumPy's
                    extra = len(actual) - len(bound)
                    hint = ("; if the value is a subscript by a tensor of one cell (E[t]), it "
                            "keeps t's axes, as NumPy's does: %d too many here (E[t[%s]] takes "
                            "%s fewer)" % (extra, ", ".join("0" for _ in range(extra)),
                                           "one" if extra == 1 else "%d" % extra))
                pname = what.split()[1]
                if pname in tmpl.layouts:       # p: theta
                    hint = (" (the vector of params block %s's members: %s)"
                            % (tmpl.layouts[pname].name, tmpl.layouts[pname].describe()))
                notes = tuple("%s in %s's types is %d, %s %s on line %d%s" % (
                    name, tmpl.qualname, size,
                    "from the let" if type(name) is SizeExpr else "the let", let, at.line,
                    "" if at.source is loc.source else " of %s" % at.source.path)
                    for name, (size, at, let) in sorted(tmpl.let_sizes.items())
                    if size in declared)
                raise GoatError("%s must have shape %s, got %s%s"
                                % (what, _declared_shape(declared, env), format_shape(actual),
                                   hint), loc, notes=notes)
            out.append((bound, runtime, what))
        return out, env

    def _solve_sizes(self, tmpl, shapes, whats, locs, env):
        """Bind the size variables that only sizes written as arithmetic name (tensor[K + H,
        4 * H]): each worked out from an argument's size once the others are known, in
        turn.  Then every size the body writes as arithmetic must be one (N - 1 of N = 0 is
        no size): a GoatError at the call."""
        def value(n):
            return _env_size(env, n)
        todo = [(d, x, what, loc) for (_, declared, _), actual, what, loc
                in zip(tmpl.params, shapes, whats, locs) if len(declared) == len(actual)
                for d, x in zip(declared, actual) if type(d) is SizePoly
                and (type(x) is int or is_symbolic(x))]
        progress = True
        while todo and progress:
            progress = False
            for item in list(todo):
                d, x, what, loc = item
                got = solve_size(d, x, value)
                if got is None:
                    continue
                name, v = got
                if v is None:
                    raise GoatError("%s has size %d where its type says %s, and no whole size "
                                    "%s from 0 makes it so%s" % (
                                        what, x, d, name, "".join(
                                            " (%s = %s)" % (n, value(n)) for n in d.names
                                            if value(n) is not None)), loc)
                env[name] = (v, what)
                todo.remove(item)
                progress = True
        if not any(is_symbolic(x) for sh in shapes for x in sh):
            self._open_sizes(tmpl, shapes, whats, locs, value, env)
        else:
            # a call in a def's body, on its sizes, is worked out again for each call of that
            # def; a size it cannot work out now (g(h: tensor[2 * L]) given T) is ? till then,
            # not g's L, a name of another def
            for _, declared, _ in tmpl.params:
                for d in declared:
                    for n in size_names(d):
                        env.setdefault(n, (None, whats[0] if whats else ""))
        for (pname, declared, _), actual, what, loc in zip(tmpl.params, shapes, whats, locs):
            for d, x in zip(declared, actual):
                v = size_value(d, value) if type(d) is SizePoly else None
                if type(v) is int and v < 0:
                    raise GoatError("%s must have shape %s, whose size %s is %d for this call "
                                    "(%s): a size is a whole number from 0" % (
                                        what, format_shape(declared), d, v, ", ".join(
                                            "%s = %s" % (n, value(n)) for n in d.names)), loc)
        for d, at, said in tmpl.polys:
            v = size_value(d, value)
            if type(v) is int and v > 2 ** 53:
                raise GoatError("%s's size %s is %d for this call (%s): too large to be a size "
                                "(at most 2**53)" % (tmpl.qualname, d, v, ", ".join(
                                    "%s = %s" % (n, value(n)) for n in d.names)), locs[0])
            if type(v) is int and v < 0:
                sizes = ", ".join("%s = %s" % (n, value(n)) for n in d.names)
                where = "line %d%s" % (at.line, "" if at.source is locs[0].source
                                       else " of %s" % at.source.path)
                if said is None:
                    raise GoatError("%s's size %s is %d for this call (%s): a size is a whole "
                                    "number from 0" % (tmpl.qualname, d, v, sizes), locs[0],
                                    notes=("the size is written on %s" % where,))
                raise GoatError("in %s, %s %s for this call (%s)" % (
                    tmpl.qualname, said[0], said[1], sizes), locs[0],
                    notes=("%s is on %s" % ("the slice" if said[0].startswith("the slice")
                                            else "it", where),))

    def _open_sizes(self, tmpl, shapes, whats, locs, value, env):
        """A GoatError where a call leaves open, until it runs (a ``?`` size of an argument),
        a size variable that arithmetic in the def's types or body needs: goat works each
        out before the run (w: tensor[K + H, 4 * H] given a w of ?x?: which H?)."""
        def unknown(names):
            """The parameters given a ? size on an axis that names one of ``names``."""
            return list(dict.fromkeys(
                p for (p, dims, _), actual in zip(tmpl.params, shapes)
                for dd, x in zip(dims, actual) if x is None and set(size_names(dd)) & names))

        def give(params):
            if self.calls:          # (a call in a def's body: its argument is the outer one's)
                return "give the value%s this comes from a shape known before the run" % (
                    "s" if len(params) > 1 else "")
            return "give %s a shape known before the run (an annotation, let %s: " \
                   "tensor[...] = load(...))" % (_and_list(params), params[0])
        for (pname, declared, _), actual, what, loc in zip(tmpl.params, shapes, whats, locs):
            if len(declared) != len(actual):
                continue                    # (that argument's error: its rank)
            for d, x in zip(declared, actual):
                open_ = [n for n in size_names(d) if value(n) is None] \
                    if type(d) is SizePoly else ()
                if not open_:
                    continue
                runs = unknown(set(open_))
                if not runs:                # (N * M with M = 0: any N fits)
                    raise GoatError(
                        "%s has shape %s, and its type %s leaves %s open for this call (%s): "
                        "give %s a size of its own in a parameter's type" % (
                            what, format_shape(actual), format_type(declared),
                            _and_list(open_), ", ".join(
                                "%s = %s" % (n, value(n)) for n in size_names(d)
                                if value(n) is not None) or "any size fits",
                            _and_list(open_)), loc)
                raise GoatError(
                    "%s has shape %s, and its type %s needs %s, which this call gives only "
                    "when the program runs (a ? size of %s): %s" % (
                        what, format_shape(actual), format_type(declared),
                        _and_list(open_), _and_list(runs), give(runs)), loc)
        # (a size variable that is a parameter's size, given as ?, is read when the call runs:
        # the body's arithmetic on it too, x[1:] of x: tensor[N])
        plain = {d.name for _, dims, _ in tmpl.params for d in dims if type(d) is SizeVar}
        for d, at, said in tmpl.polys:
            open_ = [n for n in size_names(d) if value(n) is None and n not in plain]
            if open_:
                where = "line %d%s" % (at.line, "" if at.source is locs[0].source
                                       else " of %s" % at.source.path)
                runs = unknown(set(open_))
                raise GoatError(
                    "%s works out %s from %s, which this call gives only when the program runs "
                    "(a ? size%s): %s" % (
                        tmpl.qualname, "%s (%s)" % (said[0], d) if said else "the size %s" % d,
                        _and_list(open_), " of %s" % _and_list(runs) if runs else "",
                        give(runs) if runs else "give its arguments shapes known before the run"),
                    locs[0], notes=("%s is on %s" % (
                        "the size" if not said else "the slice"
                        if said[0].startswith("the slice") else "it", where),))

    @staticmethod
    def unknown_sizes(tmpl, shapes):
        """Size variables that only ``?`` dimensions bind: they must agree when the call runs.

        Returns [(argument, dimension, first argument, its dimension, variable name)] for every
        place after the first where such a variable appears.
        """
        first, links = {}, []
        for i, ((_, declared, _), actual) in enumerate(zip(tmpl.params, shapes)):
            for j, (d, x) in enumerate(zip(declared, actual)):
                if isinstance(d, SizeVar) and x is None:
                    if d.name in first:
                        links.append((i, j) + first[d.name] + (d.name,))
                    else:
                        first[d.name] = (i, j)
        return links

    def bind_arguments(self, tmpl, args, loc, builder):
        """Cast the argument nodes to the declared parameter shapes (checked at run time
        where a ``?`` leaves it open); returns (args, size-variable bindings)."""
        if not tmpl.has_vars:       # the common case: every argument already has its shape
            for (_, declared, _), a in zip(tmpl.params, args):
                if a.shape != declared:
                    break
            else:
                return args, {}
        shapes = [a.shape for a in args]
        checked, env = self.check_arguments(tmpl, shapes, [loc] * len(args))
        # an argument whose shape is known keeps it (a ? parameter does not make it unknown:
        # the body's operations are then checked on it now, not when they run)
        out = [builder.cast(a, bound, _declared_what(what, declared, env), loc, runtime)
               if runtime else a
               for a, (bound, runtime, what), (_, declared, _) in zip(args, checked, tmpl.params)]
        if tmpl.has_vars:
            for i, j, k, m, name in self.unknown_sizes(tmpl, shapes):
                out[i] = builder.same_size(out[i], j, out[k], m, name, checked[i][2], checked[k][2], loc)
            # a size variable bound to a ? size: where its size is read when the call runs
            run = {}
            for i, ((_, declared, _), a) in enumerate(zip(tmpl.params, out)):
                for j, d in enumerate(declared):
                    if (isinstance(d, SizeVar) and env.get(d.name, (0,))[0] is None
                            and d.name not in run and j < len(a.shape) and a.shape[j] is None):
                        run[d.name] = RunDim(a, j)
            if run:
                env[None] = run
        return out, env

    # ------------------------------------------------------------------ expressions
    def _stated_value(self, e, scope, b, want, written=None):
        """The node of a let's or var's value ``e``, annotated with shape ``want`` (or None),
        written ``written`` (its TypeAnn): a hint for a built-in's missing shape inside ``e``
        may write that one."""
        self.filled = []
        outer, self.stated = self.stated, written
        try:
            return self.value(e, scope, b, want=want)
        finally:
            self.stated = outer

    def value(self, e, scope, b, want=None):
        """The node of expression ``e``, which must be one tensor (not a tuple)."""
        v = self.expr(e, scope, b, want)
        return self._one(e, v)

    def _one(self, e, v):
        """``v``, the node of ``e``, which must be one tensor: a tuple is an error."""
        if isinstance(v, tuple):
            names = ", ".join("v%d" % (i + 1) for i in range(len(v)))
            if _is_grad(e):
                raise GoatError("grad with %d names gives %d gradients, one per name, not one "
                                "value: bind them with let %s = grad(...) and use each (to "
                                "clip several by their global norm, as PyTorch's "
                                "clip_grad_norm_ does, add their optim.sq_norm's and scale "
                                "each by optim.clip_coef of the sum)"
                                % (len(v), len(v), names.replace("v", "g")), e.loc)
            raise GoatError("this is %d values, not one; bind them with let %s = ..."
                            % (len(v), names), e.loc)
        return v

    def expr(self, e, scope, b, want=None):
        """The node for expression ``e``, or a tuple of nodes."""
        t = type(e)
        if t is ast.Binary:
            # a long chain a + b + c + ... nests to the left: walk its spine in a loop, so that
            # a 100,000-term sum is not 100,000 deep in Python's stack
            if want is not None and (_numbers_only(e.left) or _numbers_only(e.right)):
                # var w: tensor[H, 1] = 0.02 * randn(3) + 1: numbers combined with the call
                # keep its shape, so the annotation's shape is the call's too
                left = self.value(e.left, scope, b, want if _numbers_only(e.right) else None)
                right = self.value(e.right, scope, b, want if _numbers_only(e.left) else None)
                return b.op(OPERATORS[e.op], (left, right), e.loc)
            spine = []
            while type(e) is ast.Binary:
                spine.append(e)
                e = e.left
            acc = self.value(e, scope, b)
            for node in reversed(spine):
                right = self.value(node.right, scope, b)
                acc = b.op(OPERATORS[node.op], (acc, right), node.loc)
            return acc
        if t is ast.Name:
            return self._name(e, scope, b)
        if t is ast.Call:
            return self._call(e, scope, b, want)
        if t is ast.Number:
            return b.const(e.value, e.loc)
        if t is ast.Array:
            return b.const(e.array, e.loc)
        if t is ast.Unary:
            if e.op == "-":
                if type(e.operand) is ast.Number:            # fold -12 into a constant
                    return b.const(-e.operand.value, e.loc)
                # (-randn(1): the annotation's shape is the call's)
                return b.op(_NEGATE, (self.value(e.operand, scope, b, want),), e.loc)
            return b.op(_NOT, (self.value(e.operand, scope, b),), e.loc)
        if t is ast.Tuple:
            for item in e.items:
                if type(item) is ast.Tuple:
                    raise GoatError("a tuple cannot hold a tuple: list its values in one tuple",
                                    item.loc)
            return tuple(self.value(item, scope, b) for item in e.items)
        if t is ast.Index:
            return self._index(e, scope, b)
        if t is ast.TypeArg:
            raise GoatError("a type can only be an argument of a built-in that takes one, such "
                            "as reshape(x, tensor[2x3])", e.loc)
        if t is ast.StringArg:
            raise GoatError("a string can only be an argument of load(...) or save(...), or a "
                            "format in print \"...\"", e.loc)
        raise TypeError("unknown expression %r" % (e,))

    def _resolve(self, name, loc, scope):
        """The binding of ``name`` (module-qualified names included), or None."""
        if "." in name:
            mod_name, _, member = name.partition(".")
            module, _ = scope.find(mod_name)
            if not isinstance(module, Module):
                if (isinstance(module, (Node, VarBinding)) and member not in _METHOD_HABITS
                        and self.layout_types):
                    self._no_members(name, module, scope, loc)
                if module is None and not isinstance(self.globals.get(mod_name), Module) and (
                        mod_name in self.later or _closest(mod_name, _visible(scope))
                        or mod_name == self._params_defining):
                    self._no_members(name, None, scope, loc)
                if module is None and mod_name in _FOREIGN_MODULES:
                    raise GoatError("goat is not %s: its functions are built in (exp, log, "
                                    "row_sum, transpose, ...; docs/language.md lists them), and "
                                    "the book's are in nn (import nn)"
                                    % _FOREIGN_MODULES[mod_name], loc)
                if module is None:
                    raise GoatError("unknown module '%s'; import it first with import %s"
                                    % (mod_name, mod_name), loc)
                hint = _METHOD_HABITS.get(member, "")
                raise GoatError("'%s' is not a module, so '%s' means nothing%s"
                                % (mod_name, name, hint and "; goat has no methods: " + hint), loc)
            if "." in member:
                raise GoatError("'%s': a module's name is followed by one name" % name, loc)
            v = module.names.get(member)
            if v is None or isinstance(v, Module) or isinstance(v, VarBinding):
                close = [k for k, x in module.names.items()
                         if not isinstance(x, (Module, VarBinding))]
                # nn.softmax: the member it begins (softmax_rows) before one spelled alike
                longer = sorted(k for k in close if k.startswith(member + "_"))
                same = [k for k in close if k.lower() == member.lower()]   # Relu for relu
                hint = ("; did you mean '%s'?" % (longer or same)[0]) if longer or same else (
                    _elsewhere(member, mod_name, scope) or _suggest(member, close))
                raise GoatError("module %s has no def or let named '%s'%s"
                                % (mod_name, member, hint), loc)
            return v
        v, owner = scope.find(name)
        if isinstance(v, VarBinding) and self._crosses_def(scope, owner):
            raise GoatError("the def %s cannot read var '%s', whose value changes; pass it as an "
                            "argument" % (self._defining, name), loc)
        return v

    def _name(self, e: ast.Name, scope, b):
        name = e.name
        if "." in name:
            base = name.partition(".")[0]
            layout = self._layout_of(base, scope)
            if layout is not None:      # theta.w1: a member of a params block's value
                return self._member(name, e.loc, scope, b)[0]
            if name.count(".") > 1 and self._name_layout(name.rpartition(".")[0],
                                                         scope) is not None:
                return self._member(name, e.loc, scope, b)[0]      # model.theta.w1
        if self._sizes and name in self._sizes and not name.startswith("...") and \
                scope.find(name)[0] is None and self._in_def(scope):
            # a def's size variable read as a value: each call's size, a number (sum(x) / N)
            return self._size_value_node(SizeVar(name), e.loc, b)
        v = self._resolve(name, e.loc, scope)
        if isinstance(v, Node):
            return v
        if isinstance(v, VarBinding):
            return v.node
        if isinstance(v, Template):
            raise GoatError("%s is a function; call it as %s(...)" % (name, name), e.loc)
        if isinstance(v, Module):
            raise GoatError("%s is a module; use its names as %s.NAME" % (name, name), e.loc)
        if lookup(name) is not None:
            raise GoatError("%s is a built-in function; call it as %s(...)" % (name, name), e.loc)
        if name in self.later:
            raise GoatError("unknown name '%s': it is defined later, on line %d; a name must be "
                            "defined before it is used" % (name, self.later[name]), e.loc)
        if name in self.gone:
            raise GoatError("unknown name '%s': the '%s' defined on line %d belongs to a block "
                            "that has ended; declare a var before the block and assign it inside"
                            % (name, name, self.gone[name]), e.loc)
        if name in _NAME_HABITS:
            raise GoatError("unknown name '%s': %s" % (name, _NAME_HABITS[name]), e.loc)
        raise GoatError("unknown name '%s'%s" % (name, _suggest(name, _visible(scope))), e.loc)

    def _call(self, e: ast.Call, scope, b, want=None):
        name = e.name
        target = self._resolve(name, e.name_loc, scope)
        named = False
        for a in e.args:
            if type(a) is ast.Keyword:
                named = True
                break
        if isinstance(target, Template) and (named or target.defaults):
            e = self._placed(e, [p for p, _, _ in target.params], target.defaults,
                             target.qualname,
                             lambda: target.qualname + target.signature()[len(target.name):])
        elif named and lookup(name) is not None:
            op = lookup(name)
            # (a type left out where an annotation gives it: randn(seed=2), load(path=...))
            left = ({n for n, (_, kind) in zip(_signature_names(op), op.params) if kind == "type"}
                    if want is not None else ())
            e = self._placed(e, _signature_names(op), {}, name, lambda: op.signature, left)
        elif named and name == "split":
            e = self._placed(e, ["x", "n", "axis"], {}, name, lambda: TRANSFORMS["split"][0])
        elif named and name in TRANSFORMS:
            k = next(a for a in e.args if type(a) is ast.Keyword)
            raise GoatError("%s takes its arguments by position, not by name (%s=...): %s"
                            % (name, k.name, TRANSFORMS[name][0]), k.name_loc)
        if isinstance(target, Template):
            arity = len(target.params)
            if len(e.args) != arity:
                params = ", ".join("%s: %s" % (p, format_type(d))
                                   for p, d, _ in target.generic or target.params)
                least = arity - len(target.defaults)
                raise GoatError("%s takes %s argument%s, got %d"
                                % (name, arity if least == arity else "%d to %d" % (least, arity),
                                   "" if arity == 1 else "s", len(e.args)), e.loc,
                                notes=(target.qualname + target.signature()[len(target.name):]
                                       if target.defaults else
                                       "%s(%s)" % (target.qualname, params),))
            args = [self.value(a, scope, b) for a in e.args]
            shapes = [a.shape for a in args]
            target = self.specialize(target, shapes, [a.loc for a in e.args], e.loc)
            if target.has_vars or any(s != d for s, (_, d, _) in zip(shapes, target.params)):
                # static mistakes are shown under the argument itself
                try:
                    self.check_arguments(target, shapes, [a.loc for a in e.args])
                except GoatError as err:
                    # an argument the book types with a ? size: checked when the call runs
                    widened = b.widen(args, e.loc) if self.soft and target.generic is None \
                        else None
                    if widened is None:
                        raise
                    args = widened
                    self.check_arguments(target, [a.shape for a in args],
                                         [a.loc for a in e.args])
                    b.defer(err.message, err.loc)
            if not target.pure:
                self.impure = True
            return b.call(target, args, e.loc)
        if isinstance(target, (Node, VarBinding)):
            what = scope.find(name)[1].what.get(name) if "." not in name else None
            if what == "parameter":
                raise GoatError("'%s' is a parameter (a value), not a function" % name, e.name_loc)
            if name in REGISTRY or name in TRANSFORMS or name == "split":
                # let exp = 3, then exp(x): the built-in is hidden, not gone
                found = scope.find(name)[1]
                line = found.lines.get(name) if found is not None else None
                raise GoatError("'%s' is a value here, not a function: the %s named %s%s hides "
                                "the built-in %s; give the value another name" % (
                                    name, what or ("var" if isinstance(target, VarBinding)
                                                   else "let"),
                                    name, " on line %d" % line if line else "", name),
                                e.name_loc)
            raise GoatError("'%s' is a value, not a function" % name, e.name_loc)
        if isinstance(target, Module):
            raise GoatError("'%s' is a module, not a function; call its defs as %s.NAME(...)"
                            % (name, name), e.name_loc)
        if name == "split":
            return self._split_call(e, scope, b)
        if name in TRANSFORMS:
            return self._grad_call(e, scope, b)
        op = lookup(name)
        if op is None:
            if name == self._defining:
                raise GoatError("%s calls itself: recursion is not allowed (a def may call only "
                                "earlier defs)" % name, e.name_loc)
            if name in self.later:
                if self._defining is not None:
                    raise GoatError("unknown function '%s': it is defined later, on line %d; a "
                                    "def may call only defs above it, so defs cannot call each "
                                    "other" % (name, self.later[name]), e.name_loc)
                raise GoatError("unknown function '%s': it is defined later, on line %d; a name "
                                "must be defined before it is used" % (name, self.later[name]),
                                e.name_loc)
            if name in _FUNCTION_HABITS:
                raise GoatError("unknown function '%s'; %s" % (name, _FUNCTION_HABITS[name]),
                                e.name_loc)
            from .modules import stdlib_defs
            module = stdlib_defs().get(name)
            if module is not None and "." not in name:
                imported = isinstance(scope.find(module)[0], Module)
                raise GoatError("unknown function '%s'; it is in the standard library's %s "
                                "module: write %s.%s(...)%s"
                                % (name, module, module, name,
                                   "" if imported else " after import %s" % module), e.name_loc)
            owners = sorted(k for k, v in self.globals.items() if isinstance(v, Module)
                            and isinstance(v.names.get(name), Template))
            if owners and "." not in name:      # a def of a module imported: its prefix
                raise GoatError("unknown function '%s'; the module %s defines it: write "
                                "%s.%s(...)" % (name, owners[0], owners[0], name), e.name_loc)
            candidates = [k for k, v in self.globals.items() if isinstance(v, Template)]
            hint = _suggest(name, candidates + builtin_names())
            if not hint and "." not in name:
                # a slip for a name the standard library has (sofmax_rows), or for one
                # with advice of its own (sofmax: softmax is nn.softmax_rows)
                stdlib = stdlib_defs()
                near = _closest(name, list(stdlib) + list(_FUNCTION_HABITS))
                if near in _FUNCTION_HABITS:
                    hint = "; for %s, %s" % (near, _FUNCTION_HABITS[near])
                elif near is not None:
                    hint = "; did you mean %s.%s? (in the standard library's %s module)" % (
                        stdlib[near], near, stdlib[near])
            raise GoatError("unknown function '%s'%s" % (name, hint), e.name_loc)
        return self._op_call(op, e, scope, b, want)

    def _placed(self, e, names, defaults, what, sig, optional=()):
        """Call ``e`` with its arguments given by name (``eps=1e-08``) put in their
        parameters' places, after those given by position, and the defaults of the
        parameters left out filled in: the call as if written with every argument by
        position.  ``sig``: a function giving the signature its errors note; ``optional``:
        parameters that may be left out (a built-in's shape an annotation gives)."""
        positional, given = [], {}
        for a in e.args:
            if type(a) is not ast.Keyword:
                if given:
                    k = next(iter(given.values()))
                    raise GoatError("an argument by position cannot follow one by name (%s=...): "
                                    "give those by position first" % k[0].name, a.loc)
                positional.append(a)
                continue
            if a.name not in names:
                near = _closest(a.name, names)
                habit = _KEYWORD_HABITS.get(a.name)
                if habit is not None and all(n in names for n in habit[0]):
                    near = None
                    habit = " (%s here)" % habit[1]
                else:
                    habit = ""
                raise GoatError("%s has no parameter named '%s'%s" % (
                    what, a.name, (habit or (" (did you mean '%s'?)" % near if near else ""))
                    + "; its parameters: " + ", ".join(names)
                    if names else ": it takes no arguments"), a.name_loc, notes=(sig(),))
            at = names.index(a.name)
            if a.name in given or at < len(positional):
                raise GoatError("%s's %s is given twice: %s" % (
                    what, a.name, "by name twice" if a.name in given else
                    "by position (argument %d) and by name" % (at + 1)), a.name_loc,
                    notes=(sig(),))
            given[a.name] = (a, at)
        if len(positional) >= len(names) and not given:
            return e                    # (too many: the arity's error)
        args, missing = list(positional), []
        for k in range(len(positional), len(names)):
            n = names[k]
            if n in given:
                args.append(given[n][0].value)
            elif n in defaults:         # (its errors point at the call that left it out)
                args.append(_relocated(defaults[n], e.loc))
            elif n not in optional:
                missing.append(n)
        if missing:
            raise GoatError("%s needs %s, which %s no default: give %s" % (
                what, _and_list(["'%s'" % m for m in missing]),
                "has" if len(missing) == 1 else "have",
                ", ".join("%s=..." % m for m in missing) if given or defaults
                else "every argument, in order"), e.loc, notes=(sig(),))
        return ast.Call(e.name, args, e.loc, e.name_loc)

    def _default(self, p, dims, params):
        """A parameter's default (``eps: scalar = 1e-08``): a number or a list written in the
        def, of the parameter's shape, after which every parameter has one (a call gives the
        others first, by position)."""
        d = p.default
        literal = (type(d) in (ast.Number, ast.Array)
                   or (type(d) is ast.Unary and d.op == "-" and type(d.operand) is ast.Number))
        if not literal:
            raise GoatError("a parameter's default is a number or a list written in the def "
                            "(eps: scalar = 1e-08), the same at every call", d.loc)
        shape = () if type(d) is not ast.Array else tuple(d.array.shape)
        if any(is_symbolic(x) for x in dims) or ... in p.type.dims:
            raise GoatError("%s's type %s has sizes a call gives, so it cannot have a default "
                            "(the default's shape would not follow them): write its sizes, or "
                            "leave the default out" % (p.name, _written(p.type)), d.loc)
        if not compatible(tuple(dims), shape)[0]:
            raise GoatError("%s's default has shape %s, but %s is declared %s" % (
                p.name, format_shape(shape), p.name, format_type(dims)), d.loc)
        later = params[params.index(p) + 1:]
        for q in later:
            if q.default is None:
                raise GoatError("%s has a default, so every parameter after it needs one too "
                                "(%s has none): a call leaves out the last ones" % (
                                    p.name, q.name), q.loc)
        return d

    def _split_call(self, e: ast.Call, scope, b):
        """``split(x, n, axis)``: the cells of x along axis in n equal parts, in order (NumPy's
        split with a count, PyTorch's chunk): a tuple of n narrows, so grad and goat compile
        take them as any slice."""
        if len(e.args) != 3:
            raise GoatError("split takes a value, how many equal parts, and the axis: let q, k, "
                            "v = split(qkv, 3, -1); got %d argument%s"
                            % (len(e.args), "" if len(e.args) == 1 else "s"), e.loc)
        x = self.value(e.args[0], scope, b)
        n = self._fixed_whole(e.args[1], "split's count", scope, b)
        axis = self._fixed_whole(e.args[2], "split's axis", scope, b)
        r = len(x.shape)
        if r == 0:
            raise GoatError("split takes a tensor of rank 1 or more; this is a scalar",
                            e.args[0].loc)
        if not -r <= axis < r:
            raise GoatError("split's axis %d is not an axis of %s (rank %d: 0 to %d, or -1 to "
                            "-%d from the end)" % (axis, format_type(x.shape), r, r - 1, r),
                            e.args[2].loc)
        axis %= r
        size = x.shape[axis]
        if is_symbolic(size):
            part = size_div(size, n) if n >= 1 else None
            if part is None:
                fresh = next(c for c in ("C", "D", "P", "Q", "Z")
                             if c not in (self._sizes or {}))
                shown = list(x.shape)
                shown[axis] = size_mul(n, SizeVar(fresh))
                raise GoatError("split needs the size of axis %d of %s to be %d times a whole "
                                "number for every call of %s, and %s is not: write that size as "
                                "%d times a size variable in the parameter's type (%s)"
                                % (axis, format_type(x.shape), n, self._defining, size, n,
                                   format_type(tuple(shown))), e.loc)
            if n == 1:
                return x
            # part k starts at size(x, axis) * k / n (exact: a whole number), a number once
            # a call's sizes are known
            whole = b.op(REGISTRY["size"], (x,), e.loc, (axis,))
            starts = [b.const(0.0, e.loc)] + [
                b.op(OPERATORS["/"], (b.op(OPERATORS["*"], (whole, b.const(float(k), e.loc)),
                                           e.loc), b.const(float(n), e.loc)), e.loc)
                for k in range(1, n)]
            return tuple(b.op(REGISTRY["narrow"], (x, start), e.loc, (axis, part))
                         for start in starts)
        if type(size) is not int:
            raise GoatError("split needs the size of axis %d of %s, which is known only when "
                            "the program runs: split where the size is known, or take the "
                            "parts with narrow" % (axis, format_type(x.shape)), e.loc)
        if n < 1 or size % n:
            raise GoatError("cannot split axis %d of %s (size %d) into %d equal parts: %s" % (
                axis, format_type(x.shape), size, n, "the count must be 1 or more" if n < 1
                else "%d is not a multiple of %d" % (size, n)), e.args[1].loc)
        part = size // n
        if n == 1:                      # one part: x itself, one value
            return x
        return tuple(b.op(REGISTRY["narrow"], (x, b.const(float(k * part), e.loc)), e.loc,
                          (axis, part)) for k in range(n))

    def _fixed_whole(self, a, what, scope, b) -> int:
        """A whole number the program fixes (written, or a let holding one; not a var)."""
        for name in sorted(_uses(a)):
            if isinstance(scope.find(name)[0], VarBinding):
                raise GoatError("%s is a var, which may change, so it cannot be %s: make it a "
                                "let (let %s = ...)" % (name, what, name), a.loc)
        node = self.value(a, scope, b)
        v = known_number(node) if _cells(node.shape) == 1 else None
        if v is None:
            raise GoatError("%s must be a whole number written in the program (or a let "
                            "holding one), such as 2" % what, a.loc)
        if not (abs(v) <= 2 ** 53 and v == int(v)):
            raise GoatError("%s must be a whole number, got %s" % (what, _number_text(v)), a.loc)
        return int(v)

    def _grad_call(self, e: ast.Call, scope, b):
        """``grad(loss, w1, w2, ...)``: the loss an expression, then the names of the values
        to differentiate with respect to."""
        if len(e.args) < 2:
            raise GoatError("grad takes a loss and the names of the values to differentiate "
                            "with respect to: grad(loss, w1, w2, ...)", e.loc)
        loss = self.value(e.args[0], scope, b)
        wrt, names = [], []
        for a in e.args[1:]:
            if type(a) is not ast.Name:
                raise GoatError("grad differentiates with respect to named values (a let, a "
                                "var or a parameter): write the name, not an expression", a.loc)
            if "." in a.name and self._layout_of(a.name.partition(".")[0], scope) is not None:
                base = a.name.partition(".")[0]
                raise GoatError("grad differentiates with respect to a whole params value: "
                                "let g: %s = grad(loss, %s) is every member's gradient, and "
                                "g.%s is %s's" % (self._layout_of(base, scope).name, base,
                                                  a.name.partition(".")[2], a.name), a.loc)
            if a.name in names:
                raise GoatError("'%s' appears twice among grad's names" % a.name, a.loc)
            wrt.append(self.value(a, scope, b))
            names.append(a.name)
        ones = [(n, w) for n, w in zip(names, wrt) if _one_cell(w.shape)]
        if (type(e.args[0]) is ast.Name and len(ones) == 1 and not _one_cell(loss.shape)
                and all(type(d) is int for d in loss.shape)
                and _reaches(ones[0][1], loss, self.program.nodes)):
            # grad(w, loss): the loss written among the names
            # (a one-element name computed from the first argument: the loss, written
            # second; otherwise a loss not yet reduced, which the grad pass reports)
            order = [e.args[0].name if n == ones[0][0] else n for n in names]
            raise GoatError("grad takes the loss first, then the names: grad(%s, %s) (its "
                            "first argument must be a loss of one element, and %s is %s)"
                            % (ones[0][0], ", ".join(order), e.args[0].name,
                               format_shape(loss.shape)), e.loc)
        outer = self.grad_vars
        # (the vars among them: the loss may have been computed before one got its value)
        self.grad_vars = {n for n in names if isinstance(scope.find(n)[0], VarBinding)}
        try:
            return b.grad([loss] + wrt, tuple(names), e.loc)
        finally:
            self.grad_vars = outer

    def _op_call(self, op, e, scope, b, want):
        params = op.params
        args = list(e.args)
        if (want is not None and len(args) == len(params) - 1
                and sum(kind == "type" for _, kind in params) == 1):
            # the shape comes from where the call stands: let q3: tensor[2x3x4] = reshape(q)
            k = next(i for i, (_, kind) in enumerate(params) if kind == "type")
            args.insert(k, ast.TypeArg(ast.TypeAnn(want, e.loc), e.loc))
            self.filled.append("%s(...) took the annotation's shape, %s" % (
                e.name, format_type(want)))
        if len(args) != len(params):
            n = len(params)
            hint = _ARITY_HABITS.get((e.name, len(args)), "")
            if hint:
                pass
            elif (any(kind == "type" for _, kind in params) and len(args) > n
                    and type(args[0]) is ast.Number):
                # zeros(4, 8), as NumPy and PyTorch write it
                hint = "; a shape is written as a type: %s" % _written_call(
                    e.name, params, _sizes_written(e.args))
            elif any(kind == "type" for _, kind in params) and len(args) == n - 1:
                # the annotation of the let the call stands in, as written (tensor[V, D]:
                # a size from a let stays the let), is the likeliest shape
                stated = self.stated
                dims = stated.dims if stated is not None else ()
                if dims and all(type(d) is int for d in dims):
                    sizes, shape = [str(d) for d in dims], "x".join(str(d) for d in dims)
                elif dims and all(type(d) in (int, str) for d in dims):
                    sizes = [", ".join(str(d) for d in dims)]
                    shape = sizes[0]
                else:
                    sizes, shape = ["4", "4"], "4x4"
                hint = ("; the shape may be left out only where the call is the whole value of "
                        "an annotated let or var, or it with numbers and names (let x: "
                        "tensor[%s] = %s(...) * 0.5); inside a larger expression, write it: %s"
                        % (shape, e.name, _written_call(e.name, params, sizes)))
            raise GoatError("%s takes %d argument%s, got %d%s"
                            % (e.name, n, "" if n == 1 else "s", len(e.args), hint), e.loc,
                            notes=(op.signature,))
        nodes = []
        attrs = []
        fields = []         # the values a name's {fields} read, after the op's values
        for at, (a, (pname, kind)) in enumerate(zip(args, params)):
            if kind == "value":
                nodes.append(self.value(a, scope, b))
            elif kind == "type":
                if (op.count_type is not None and type(a) is ast.Number
                        and a.value == int(a.value) and a.value >= 0):
                    attrs.append(op.count_type([n.shape for n in nodes], int(a.value)))
                    continue
                count = (self._let_size(a.name, scope, a.loc)
                         if op.count_type is not None and type(a) is ast.Name else None)
                if count is not None:           # a let holding one: onehot(t, V)
                    attrs.append(op.count_type([n.shape for n in nodes], count))
                    continue
                if (op.count_type is not None and type(a) is ast.Name and self._sizes
                        and a.name in self._sizes):
                    # randperm(N, seed) in a def over x: tensor[N, D]: the size N
                    size = self._dims(ast.TypeAnn((a.name,), a.loc), scope)[0]
                    attrs.append(op.count_type([n.shape for n in nodes], size))
                    continue
                if type(a) is ast.Name and a.name in self.layout_types:
                    # zeros(theta): the shape of the params block theta's vector
                    a = ast.TypeArg(ast.TypeAnn((), a.loc, layout=a.name), a.loc)
                elif type(a) is ast.Name and self.layout_types and op.count_type is None:
                    # zeros(theta), theta a var laid out as model.theta: that layout
                    layout = self._name_layout(a.name, scope) if scope.find(
                        a.name.partition(".")[0])[0] is not None else None
                    if layout is not None and self.layout_types.get(layout.name) is layout:
                        a = ast.TypeArg(ast.TypeAnn((), a.loc, layout=layout.name), a.loc)
                if (type(a) is ast.Name and scope.find(a.name)[0] is None
                        and a.name not in (self._sizes or ())):
                    self.value(a, scope, b)     # an unknown name: that error, with its hints
                if type(a) is not ast.TypeArg:
                    negative = (type(a) is ast.Unary and a.op == "-"
                                and type(a.operand) is ast.Number)
                    got = ("the number %s" % _number_text(a.value) if type(a) is ast.Number
                           else "the number -%s" % _number_text(a.operand.value) if negative
                           else "a list" if type(a) is ast.Array else "a value")
                    written = _written_call(e.name, params, _sizes_written(args[at:]))
                    if type(a) is ast.Name and at == 0 and not op.count_type:
                        # ones(theta.w): the value's own shape, as a type (NumPy's ones_like);
                        # zeros(N), N a let holding a size: a vector of N, as NumPy's
                        try:
                            shape = self.value(a, scope, b).shape
                        except GoatError:
                            shape = None
                        try:
                            size = (self._let_int(a.name, scope, a.loc, "a size")
                                    if shape is not None and _cells(shape) == 1 else None)
                        except GoatError:
                            size = None
                        if size is not None and size >= 0:
                            written = _written_call(e.name, params, [a.name])
                        elif (shape is not None and _cells(shape) != 1
                                and all(type(d) is int for d in shape)):
                            written = "%s(%s%s) for the shape of %s" % (
                                e.name, format_type(shape),
                                "".join(", ..." for _ in params[1:]), a.name)
                    elif at == 0 and not op.count_type and type(a) in (ast.Binary, ast.Unary,
                                                                        ast.Call, ast.Index):
                        # zeros(theta * 2): the value's own shape (its layout's name, where
                        # it has one), as for a name
                        try:
                            shape = self.value(a, scope, b).shape
                        except GoatError:
                            shape = None
                        layout = self._expr_layout(a, scope) if shape is not None else None
                        if layout is not None and tuple(shape) == (layout.size,) and \
                                self.layout_types.get(layout.name) is layout:
                            written = "%s(%s%s)" % (e.name, layout.name,
                                                    "".join(", ..." for _ in params[1:]))
                        elif shape is not None and all(type(d) is int for d in shape):
                            written = "%s(%s%s) for the value's shape" % (
                                e.name, format_type(shape), "".join(", ..." for _ in params[1:]))
                    raise GoatError("argument %s of %s must be a type such as tensor[2x3]%s, "
                                    "got %s; write %s"
                                    % (pname, e.name, " or a count written as a number (a "
                                       "whole number, 0 or more) or a let holding one"
                                       if op.count_type else "",
                                       got, written), a.loc)
                attrs.append(self._dims(a.ann, scope))
            elif kind == "string":
                if type(a) is not ast.StringArg:
                    raise GoatError("argument %s of %s must be a string in double quotes"
                                    % (pname, e.name), a.loc)
                if isinstance(a.value, str):
                    attrs.append(op.string_attr(a.value, a.loc) if op.string_attr else a.value)
                    continue
                parts = []          # "w_{step}.npy": the name is made when the op runs
                for p in self._format_data(a.value, scope, b):
                    if not isinstance(p, str):
                        fields.append(p[0])
                        p = (len(fields) - 1,) + p[1:]
                    parts.append(p)
                attrs.append(FileName(parts, a.loc, op.string_attr))
            elif kind == "int":
                count = (self._let_int(a.name, scope, a.loc, "%s's %s" % (e.name, pname))
                         if type(a) is ast.Name else None)
                if count is not None:           # a let holding one, as a size may
                    attrs.append(count)
                    continue
                if (type(a) is ast.Name and pname in op.size_params
                        and self._sizes and a.name in self._sizes
                        and not a.name.startswith("...") and scope.find(a.name)[0] is None):
                    attrs.append(SizeVar(a.name))   # narrow(hp, 1, 2, L): each call's L
                    continue
                if (pname in op.size_params and self._sizes and self._in_def(scope)
                        and type(a) in (ast.Binary, ast.Unary)):
                    size = self._size_bound(a, scope)   # narrow(x, 0, k, N - 1)
                    if is_symbolic(size) and not any(
                            v.startswith("...") for v in size_names(size)):
                        if type(size) is SizePoly and self._polys is not None:
                            text = a.loc.source.text[a.loc.start:a.loc.end]
                            self._polys.append((size, a.loc, (
                                "%s's %s %s" % (e.name, pname, text), "would be negative")))
                        attrs.append(size)
                        continue
                if type(a) is ast.Name and scope.find(a.name)[0] is None:
                    self.value(a, scope, b)     # an unknown name: that error, with its hints
                if type(a) is ast.Number:
                    if a.value != int(a.value):     # narrow(x, 0, 1, 2.5)
                        raise GoatError("argument %s of %s must be a whole number, got %s"
                                        % (pname, e.name, _number_text(a.value)), a.loc)
                    attrs.append(int(a.value))
                    continue
                # -1, 2 - 1, m.k: a number known before the run, as a let's may be (not
                # from a var, which may change)
                for name in sorted(_uses(a)):
                    if isinstance(scope.find(name)[0], VarBinding):
                        raise GoatError("%s is a var, which may change, so it cannot be in %s's "
                                        "%s: make it a let (let %s = ...)"
                                        % (name, e.name, pname, name), a.loc)
                node = self.value(a, scope, b)
                v = known_number(node) if node.shape in ((), (1,), (1, 1)) else None
                if v is None and pname in op.size_params:
                    raise GoatError("argument %s of %s must be a whole number known before "
                                    "the run (written, a let holding one, or a def's size "
                                    "variable): it is a size of the result, and every shape "
                                    "is known before the run; a window that grows can be a "
                                    "fixed one, its cells past the end masked" % (
                                        pname, e.name), a.loc)
                if v is None:
                    raise GoatError("argument %s of %s must be a whole number written in the "
                                    "program (or a let holding one), such as 0"
                                    % (pname, e.name), a.loc)
                if not (abs(v) <= 2 ** 53 and v == int(v)):
                    raise GoatError("argument %s of %s must be a whole number, got %s"
                                    % (pname, e.name, _number_text(v)), a.loc)
                attrs.append(int(v))
        return b.op(op, nodes + fields, e.loc, tuple(attrs))

    def _index(self, e: ast.Index, scope, b, x=None):
        """``x[s1, s2, ...]``: a narrow per subscripted axis (the cells an index or a slice
        takes, its start checked when it runs where the program computes it), then, when an
        index dropped an axis, a reshape to the axes left -- so grad, goat compile and every
        back end take a subscript as they take narrow and reshape.  A first subscript that is
        a tensor of indices (``E[tokens]``, ``x[[0, 2]]``) takes those rows: a gather.
        ``x``: the subscripted value's node, where it is made already."""
        if x is None:
            x = self.value(e.value, scope, b)
        whole = format_shape(x.shape) if x.shape and all(type(d) is int for d in x.shape) \
            else None
        items = e.items
        new = []            # x[:, None]: where a new axis of size 1 goes among the result's
        if any(_is_newaxis(item) for item in items):
            if not x.shape:
                raise GoatError("a scalar has no axes to subscript: x[...] takes cells of a "
                                "tensor of rank 1 or more (reshape(x, tensor[1]) makes a "
                                "tensor of it)", e.bracket_loc)
            items = _expand_ellipsis(items, len(x.shape))
            at = 0
            for item in items:
                if _is_newaxis(item):
                    new.append(at)
                    at += 1
                elif type(item) is ast.Slice:
                    at += 1
                else:
                    node = self.value(item, scope, b)
                    if type(item) is ast.Array or len(node.shape) >= 1:
                        return self._new_axes_beside_indices(x, e, scope, b)
            items = [item for item in items if not _is_newaxis(item)]
        parts, kept, rows = self._subscripts(x, items, e.bracket_loc, scope, b)
        for part in parts:
            x = self._take(b, x, part)
        if len(kept) != len(x.shape) or new:
            # drop the axes indexed, and add the new ones: a reshape to the others
            x = self._kept_axes(b, x, kept, new, e.loc)
        if rows is not None and len(rows[0]) > 1:
            x = self._paired(x, rows[0], rows[1] + rows[2], kept, whole, b)
        elif rows is not None:
            (idx, axis, loc), indexed = rows[0][0], rows[1]
            p = kept.index(axis)            # the axis's place among those left
            x = self._moved(b, x, p, 0, loc)
            x = self._rows(x, idx, whole, axis, loc, b)
            # NumPy's place for the indices' axes: where the axis was, when the subscripts
            # that index (this tensor and the numbers) are side by side; else first
            together = sorted(indexed + rows[2])
            if together == list(range(together[0], together[-1] + 1)) and p:
                s = len(idx.shape)
                for i in range(p):          # the axes that were before it go back before
                    x = self._moved(b, x, s + i, i, loc)
        return x

    def _new_axes_beside_indices(self, x, e, scope, b):
        """``x[None, t]``, ``x[t, None, u]``: a subscript with both new axes and tensors of
        indices, as NumPy's -- the value the subscript without its Nones takes, its axes then
        put in the order NumPy's rule gives with them (the indices' axes in place when the
        subscripts that index stand side by side, a None parting them as any slice does,
        else first) and the new axes of size 1 added."""
        kinds = []
        for item in e.items:
            if _is_newaxis(item):
                kinds.append(("new", 0))
            elif type(item) is ast.Ellipsis:
                kinds.append(("dots", 0))
            elif type(item) is ast.Slice:
                kinds.append(("slice", 0))
            else:
                node = self.value(item, scope, b)
                kinds.append(("tensor", len(node.shape))
                             if type(item) is ast.Array or len(node.shape) >= 1 else ("int", 0))
        if ("dots", 0) not in kinds:
            kinds.append(("dots", 0))   # (the axes after the last subscript: x[t, None, ...])
        taken = sum(k in ("tensor", "int", "slice") for k, _ in kinds)
        spread = max(0, len(x.shape) - taken)        # (the axes the ... stands for)
        block = max(r for k, r in kinds if k == "tensor")   # the indices' broadcast rank

        def layout(with_new):
            """NumPy's result axes for the subscripts (with or without the Nones), each
            labelled by the subscript it comes from."""
            ks = [(k, kind) for k, (kind, _) in enumerate(kinds) if with_new or kind != "new"]
            idx = [i for i, (_, kind) in enumerate(ks) if kind in ("tensor", "int")]
            together = idx == list(range(idx[0], idx[-1] + 1))
            out = [] if together else [("a", j) for j in range(block)]
            for i, (k, kind) in enumerate(ks):
                if kind in ("slice", "new"):
                    out.append((kind, k))
                elif kind == "dots":
                    out += [("dots", j) for j in range(spread)]
                elif together and i == idx[0]:
                    out += [("a", j) for j in range(block)]
            return out
        item_list = [item for item in e.items if not _is_newaxis(item)]
        x = self._index(ast.Index(e.value, item_list, e.loc, e.bracket_loc), scope, b, x)
        have, want = layout(False), [l for l in layout(True) if l[0] != "new"]
        for i, label in enumerate(want):
            at = have.index(label)
            x = self._moved(b, x, at, i, e.loc)
            have.insert(i, have.pop(at))
        return self._kept_axes(b, x, range(len(want)), [
            i for i, label in enumerate(layout(True)) if label[0] == "new"], e.loc)

    @staticmethod
    def _kept_axes(b, x, kept, new, loc):
        """x's axes ``kept`` (in order), with a new axis of size 1 at each place of ``new``
        (ascending places in the result): a reshape, its ? sizes read when it runs."""
        sources = [(x, a) for a in kept]
        for at in new:
            sources.insert(at, None)
        out_shape = tuple(1 if src is None else x.shape[src[1]] for src in sources)
        return b.op(REGISTRY["reshape"], (x,), loc, (_run_shape(out_shape, sources),),
                    shape=out_shape, check=False)

    @staticmethod
    def _moved(b, x, at, to, loc):
        """x with its axis ``at`` moved to ``to`` (to <= at), the others in their order: swaps
        of neighbouring axes."""
        for k in range(at, to, -1):
            x = b.op(REGISTRY["swapaxes"], (x,), loc, (k - 1, k))
        return x

    def _paired(self, x, tensors, indexed, kept, whole, b):
        """``x[rows, cols]``: several tensors of indices in one subscript, their cells paired
        (broadcast together, NumPy's advanced indexing): the axes they index moved first and
        merged into one (a reshape), indexed by rows * C + cols (each checked against its own
        axis, negative ones counted from its end, by a gather from that axis's iota), then
        the result's axes where NumPy puts them -- in place when the indexing subscripts
        stand side by side, else first."""
        loc = tensors[0][2].to(tensors[-1][2])
        shapes = [node.shape for node, _, _ in tensors]
        pairing = ("the tensors of indices in one subscript pair their cells (NumPy's "
                   "x[rows, cols]: the cell of each row and its column), so their shapes must "
                   "broadcast together, and {} do not")
        try:
            functools.reduce(lambda a, c: broadcast("index", a, c), shapes)
        except ShapeError:
            raise GoatError(pairing.format(" and ".join(format_shape(sh) for sh in shapes)),
                            loc) from None
        positions = [kept.index(axis) for _, axis, _ in tensors]
        # each axis's size: a number, a def's size (each call's), or ? (read when it runs)
        sizes = [x.shape[p] for p in positions]
        if None in sizes:       # (a def's size beside a ?: read when it runs, as the ?)
            sizes = [n if type(n) is int else RunDim(x, p) for n, p in zip(sizes, positions)]
        whole_x = x
        for j, p in enumerate(positions):
            x = self._moved(b, x, p, j, loc)
        combined, stride, count = None, 1, None     # count: stride's cells as a value

        def value(n, at):
            """A size as a number the program computes (a ? one: the axis's size)."""
            if type(n) is RunDim:
                return b.op(REGISTRY["size"], (whole_x,), iloc, (at,))
            return self._size_value_node(n, iloc, b)
        for j, ((idx, axis, iloc), n, p) in reversed(list(enumerate(zip(tensors, sizes,
                                                                          positions)))):
            table = b.op(REGISTRY["iota"], (), iloc, ((n,), 0),
                         **({"shape": (None,), "check": False} if type(n) is RunDim else {}))
            at = self._rows(table, idx, whole, axis, iloc, b)      # checked, from 0
            if count is not None:
                at = b.op(OPERATORS["*"], (at, count), iloc)
            combined = at if combined is None else b.op(OPERATORS["+"], (at, combined), iloc)
            if combined.check and combined.what is None:
                combined.what = pairing     # shapes known when it runs: its words, then
            if type(n) is RunDim or type(stride) is RunPoly:
                terms = ({(): stride} if type(stride) is not RunPoly else stride.terms)
                stride = RunPoly({tuple(sorted(m + ((n,) if type(n) is RunDim else ()),
                                               key=lambda r: (r.node.id, r.axis))):
                                  c * (n if type(n) is int else 1) for m, c in terms.items()})
            else:
                stride = size_mul(stride, n)
            if j:                   # (the first axis's size multiplies none)
                count = value(n, p) if count is None else b.op(OPERATORS["*"], (count, value(
                    n, p)), iloc)
        rest = tuple(x.shape[len(tensors):])
        merged = (None if type(stride) is RunPoly else stride,) + rest
        x = b.op(REGISTRY["reshape"], (x,), loc,
                 ((stride,) + _run_shape(rest, [(x, a) for a in range(len(tensors), len(
                     x.shape))]),), shape=merged, check=False)
        x = self._rows(x, combined, None, 0, loc, b)
        together = sorted(indexed)          # (the places of the tensors and numbers)
        if together == list(range(together[0], together[-1] + 1)) and positions[0]:
            s = len(combined.shape)
            for i in range(positions[0]):   # the axes that were before them go back before
                x = self._moved(b, x, s + i, i, loc)
        return x

    def _rows(self, x, idx, whole, axis, loc, b):
        """x's cells of the first axis at each of a tensor of indices ``idx`` (of shape S):
        S + x's other sizes (NumPy's indexing by an integer array) -- a gather of x by idx as
        a column.  ``axis`` is the axis of the subscripted value it was (its errors name it).
        A negative index counts from the end; each is checked when the program runs (before,
        when written)."""
        s = tuple(idx.shape)
        column = s + (1,)
        idx = b.op(REGISTRY["reshape"], (idx,), loc,
                   (_run_shape(column, [(idx, a) for a in range(len(s))] + [None]),),
                   shape=column, check=False)
        return b.op(REGISTRY["gather"], (x, idx), loc,
                    (("index", whole) if axis == 0 else ("index", whole, axis),))

    def _subscripts(self, x, items, bracket_loc, scope, b, store=False):
        """The narrows that subscripts ``items`` of ``x`` make, (axis, start node, length,
        "index" or "slice", loc) each, the axes kept (those no index drops), and the first
        subscript's value when it is a tensor of indices (else None; its axis is kept).  A
        subscript that is a value of rank 1 or more is a tensor of indices, as in NumPy (a
        scalar is one index); in an assignment (``store``), a value of one cell is one index
        (no repeated index to lose a write: ``x[k] = v``, NumPy's x[np.array([k])] = v)."""
        shape = x.shape
        r = len(shape)
        if r == 0:
            raise GoatError("a scalar has no axes to subscript: x[...] takes cells of a tensor "
                            "of rank 1 or more", bracket_loc)
        dots = [k for k, item in enumerate(items) if type(item) is ast.Ellipsis]
        written = len(items)
        items = _expand_ellipsis(items, r)
        spread = len(items) - written + 1 if dots else 0     # the axes the ... stands for

        def place(axis):
            """The subscript's place among those written (the ... one place, even for no
            axes: NumPy's rule for where a tensor of indices' axes go counts it)."""
            return axis if not dots or axis < dots[0] else axis - spread + 1
        for item in items:
            if _is_newaxis(item):
                raise GoatError("None (a new axis of size 1) can only be read, x[:, None]; an "
                                "assignment's subscripts take the var's own axes", item.loc)
        if len(items) > r:
            raise GoatError("%d subscripts for a value of rank %d (%s): one per axis, at most"
                            % (len(items), r, format_type(shape)), bracket_loc)
        whole = format_shape(shape)
        # a run-time error names x's shape (not that of a part an earlier axis's narrow took)
        # when it is known before the run
        named = whole if all(type(d) is int for d in shape) else None
        parts = []
        kept = []
        rows = None
        indexed = []        # the axes a number indexes (NumPy's place for a tensor's axes)
        for axis, item in enumerate(items):
            n = shape[axis]
            size = n if type(n) is int else None
            if type(item) is not ast.Slice:
                node = self.value(item, scope, b)
                if (cells(node.shape) != 1 if store
                        else type(item) is ast.Array or len(node.shape) >= 1):
                    self._indices_subscript(node, item)
                    rows = rows or ([], indexed, [])
                    rows[0].append((node, axis, item.loc))
                    rows[2].append(place(axis))
                    kept.append(axis)
                    continue
                start = self._subscript_index(axis, item, node, size, whole, b)
                parts.append((axis, start, 1, ("index", named) if named else "index",
                              item.loc, 1, 1))
                if store and len(node.shape) == 1:
                    # x[:, t] = v of a t of one cell: its cell, its axis kept, as NumPy's
                    # (and as x[:, t] reads it: x[:, t] *= 2 puts back what it took)
                    kept.append(axis)
                else:
                    indexed.append(place(axis))
                continue
            kept.append(axis)
            step = self._slice_step(item, scope, b)
            if item.lo is None and item.hi is None and step == 1:
                continue                    # x[:, 1]: the whole axis
            if step > 1 and self._sizes and self._in_def(scope):
                got = self._stepped_size_slice(x, axis, item, step, scope, b)
                if got is not None:         # x[::2] of 2 * M cells: M of them
                    parts.append(got)
                    continue
            if item.lo is None and item.hi is None and size is None:
                raise GoatError(
                    "the slice ::%d needs the size of axis %d of %s, which is known only when "
                    "the program runs (or a def is called): write both bounds as whole numbers "
                    "from 0 (the result's sizes are known before the run)" % (step, axis, whole),
                    item.loc)
            if item.lo is None and item.hi is None:
                start, span = b.const(0.0, item.loc), size
            else:
                start, span = self._subscript_slice(x, axis, item, n, size, whole, scope, b,
                                                    step)
            if start is None:               # the whole axis, as written, x[0:n]
                if step == 1:
                    continue
                start, span = b.const(0.0, item.loc), size
            # every step-th cell of the run lo to hi - 1, as NumPy's lo:hi:step takes them
            length = span if step == 1 else -(-span // step)
            kind = "slice" if step == 1 else "span"
            parts.append((axis, start, length, (kind, named) if named else kind,
                          item.loc, step, span))
        kept.extend(range(len(items), r))
        return parts, kept, rows

    def _size_var_end(self, hi, scope):
        """See :func:`_size_var_end_of`: in a def whose parameters bind sizes, a size
        variable that no name of the body (a let, a parameter, a loop's index) hides."""
        if hi is None or not self._sizes:
            return None
        sizes = {n for n in self._sizes if scope.find(n)[0] is None}
        return _size_var_end_of(hi, sizes) if sizes else None

    def _size_bound(self, e, scope, atoms=False):
        """A slice's bound in a def written with its size variables, numbers and lets holding
        numbers, with + - * (``T - 1``, ``2 * H``): the size it is (an int, SizeVar or
        SizePoly), else None.  With ``atoms``, any other term (``k``, ``size(x, 0)``) is
        itself, a variable named by its text (which means one value in the two bounds of one
        slice), so that ``(k + 1) * T - k * T`` is T."""
        def other():
            return SizeVar("\0" + e.loc.source.text[e.loc.start:e.loc.end]) if atoms else None
        t = type(e)
        if t is ast.Number:
            return int(e.value) if e.value == int(e.value) and abs(e.value) <= 2 ** 53 \
                else None
        if t is ast.Name:
            found = scope.find(e.name)[0]
            if found is None:
                return SizeVar(e.name) if e.name in self._sizes and \
                    not e.name.startswith("...") else other()
            v = known_number(found) if isinstance(found, Node) and \
                found.shape in ((), (1,), (1, 1)) else None
            return int(v) if v is not None and v == int(v) and abs(v) <= 2 ** 53 else other()
        if t is ast.Unary and e.op == "-":
            v = self._size_bound(e.operand, scope, atoms)
            return None if v is None else size_mul(-1, v)
        if t is ast.Binary and e.op in ("+", "-", "*") or (
                t is ast.Binary and e.op == "/" and not atoms):
            a = self._size_bound(e.left, scope, atoms)
            c = self._size_bound(e.right, scope, atoms) if a is not None else None
            if c is None:
                return None
            if e.op == "/":
                q = size_div(a, c) if c != 0 else None
                if q is None and (is_symbolic(a) or is_symbolic(c)):
                    raise GoatError("%s divides a def's size, a whole number only for some of "
                                    "the sizes a call may give: write the size as a multiple "
                                    "(tensor[2 * M], then M)"
                                    % e.loc.source.text[e.loc.start:e.loc.end], e.loc)
                return q
            return size_add(a, c) if e.op == "+" else size_add(a, c, -1) if e.op == "-" \
                else size_mul(a, c)
        return other()

    def _size_value_node(self, d, loc, b):
        """A size of a def (a SizePoly, a SizeVar, an int) as a number: the size of a
        vector of that many cells, which each call makes its own (its type's sizes are the
        call's) and which is known, and folded, wherever the call's sizes are."""
        if type(d) is int:
            return b.const(float(d), loc)
        cells_ = b.op(REGISTRY["zeros"], (), loc, ((d,),))
        return b.op(REGISTRY["size"], (cells_,), loc, (0,))

    def _size_slice(self, x, axis, item, scope, b):
        """A slice in a def whose bounds are sizes (``tokens[:, 0:T - 1]``, ``z[:, H:2 * H]``,
        ``x[:, 1:]`` of an axis of size K, ``x[:, 0:-1]``): (start node, length), the length
        arithmetic on the def's size variables that each call works out and checks (a
        slice that would end before it starts, or past its axis, is that call's error), or
        (None, None) for the whole axis; None when the bounds are not sizes."""
        n = x.shape[axis]
        lo = 0 if item.lo is None else self._size_bound(item.lo, scope)
        hi = n if item.hi is None else self._size_bound(item.hi, scope)
        if lo is None or hi is None or not (is_symbolic(lo) or is_symbolic(hi)) and not (
                is_symbolic(n) and (item.hi is None or lo < 0 or hi < 0)):
            return None     # (bounds of numbers from 0: checked as any, for each call)
        def from_end(d):       # -1, -H, -2 * H - 1: a bound counted from the axis's end
            return (d < 0 if type(d) is int else
                    type(d) is not SizeVar and all(c < 0 for c in d.terms.values()))
        for bound, written in ((lo, item.lo), (hi, item.hi)):
            if written is not None and type(bound) is SizePoly and not from_end(bound) and any(
                    c < 0 for m, c in bound.terms.items() if m) and not (
                        n is not None and type(size_add(n, bound, -1)) is int):
                # (H - K - 1 on an axis of H - K counts from the start: each call checks it)
                # -N + 1: negative for some calls (NumPy counts it from the end), not others
                text = written.loc.source.text[written.loc.start:written.loc.end]
                start = size_add(n, bound) if n is not None else None
                raise GoatError(
                    "the slice's bound %s is negative for some calls, where NumPy counts it "
                    "from the end, and not for others: write it from the start%s" % (
                        text, " (%s, on this axis of %s)" % (start, n)
                        if start is not None and not from_end(start) else
                        ", or as minus sizes (-N, the last N)"), written.loc)
        if from_end(lo) or from_end(hi):
            if n is None or not (is_symbolic(n) or is_symbolic(lo) or is_symbolic(hi)):
                return None
            # counted from the end of an axis: x[:, 0:-1] of K is 0:K - 1, x[-H:] the last H
            # (none when H is 0, where NumPy's -0 would take them all)
            lo = size_add(n, lo) if from_end(lo) else lo
            hi = size_add(n, hi) if from_end(hi) else hi
        if any(v.startswith("...") for v in size_names(lo) + size_names(hi)):
            return None     # (a leading size ... stands for: no type writes arithmetic on it)
        text = item.loc.source.text[item.loc.start:item.loc.end] if item.loc else ""
        length = size_add(hi, lo, -1)
        if type(length) is int and length < 0:
            raise GoatError("the slice %s ends %d cell%s before it starts, for every call"
                            % (text, -length, "" if length == -1 else "s"), item.loc)
        if lo == 0 and hi == n:
            return None, None
        whole = format_shape(x.shape)
        if n is not None:
            past = size_add(hi, n, -1)
            if type(past) is int and past > 0:
                raise GoatError("the slice %s runs %d cell%s past axis %d of %s, for every call"
                                % (text, past, "" if past == 1 else "s", axis, whole),
                                item.loc)
        if self._polys is not None:     # each call checks them
            what = "the slice %s" % text
            if is_symbolic(length):
                self._polys.append((length, item.loc, (what, "would end before it starts")))
            if is_symbolic(lo):
                self._polys.append((lo, item.loc, (what, "would start before 0")))
            if n is not None and is_symbolic(size_add(n, hi, -1)):
                self._polys.append((size_add(n, hi, -1), item.loc, (
                    what, "would run past axis %d of %s" % (axis, whole))))
        return self._size_value_node(lo, item.loc, b), length

    def _computed_size_slice(self, item, scope, b):
        """A slice in a def whose start is computed when it runs and whose end is a size of
        the def's more (``y[k * T:(k + 1) * T]``, the k-th row of T cells, for k a loop's
        index): (start node, the length, arithmetic on its size variables), or None where
        the end minus the start is no such size.  Each bound is read as arithmetic on the
        def's sizes and on the other terms as written (k), which must cancel."""
        if item.lo is None or item.hi is None:
            return None
        lo, hi = self._size_bound(item.lo, scope, True), self._size_bound(item.hi, scope, True)
        if lo is None or hi is None:
            return None
        length = size_add(hi, lo, -1)
        if not is_symbolic(length) or any(n.startswith("\0") or n.startswith("...")
                                          for n in size_names(length)):
            return None
        if not any(n.startswith("\0") for n in size_names(lo)):
            return None     # (bounds all sizes: _size_slice's)
        start = self.value(item.lo, scope, b)
        if cells(start.shape) != 1:
            return None
        if type(length) is SizePoly and self._polys is not None:
            text = item.loc.source.text[item.loc.start:item.loc.end]
            self._polys.append((length, item.loc, ("the slice %s" % text,
                                                   "would end before it starts")))
        return start, length

    def _stepped_size_slice(self, x, axis, item, step, scope, b):
        """A slice with a step in a def, over a run of cells whose number is arithmetic on
        its size variables that the step divides for every call (x[::2] of an axis of 2 * M,
        h[:, 1:2 * L + 1:2]): the part _take takes (M cells, every step-th); None when the
        bounds are not sizes; a GoatError when the step does not divide the run."""
        got = self._size_slice(x, axis, item, scope, b)
        if got is None:
            return None
        start, span = got
        if start is None:
            start, span = b.const(0.0, item.loc), x.shape[axis]
        if not is_symbolic(span):
            return None
        count = size_floordiv(size_add(span, step - 1), step)   # ceil(span / step)
        if count is None:
            text = item.loc.source.text[item.loc.start:item.loc.end]
            raise GoatError("the slice %s takes every %s of %s cells, a number (rounded up) "
                            "no type writes: the cells it runs over must be %d times a size, "
                            "plus any number (all of an axis of tensor[%d * M])" % (
                                text, _ordinal(step), span, step, step), item.loc)
        return (axis, start, count, "span", item.loc, step, span)

    def _sized_slice(self, x, axis, item, sized, scope, b):
        """``x[..., lo:L + lo]`` in a def, L a size variable: (start, L) -- the whole axis
        (None, None) where that is x's own axis of size L from 0."""
        name, rest = sized
        lo = self.value(item.lo, scope, b) if item.lo is not None else b.const(0.0, item.loc)
        off = b.const(0.0, item.loc)
        for bound, node in [(item.lo, lo)] + [(t, self.value(t, scope, b)) for t in rest]:
            if bound is not None and cells(node.shape) != 1:
                raise GoatError("a slice's bounds are numbers, got a value of shape %s"
                                % format_shape(node.shape), bound.loc)
            if bound is not item.lo:
                off = b.op(OPERATORS["+"], (off, node), bound.loc)
        if _linear(lo) != _linear(off):
            raise GoatError("a slice's length must be known before the run (or, in a def, be "
                            "a size of its types): an end of %s plus a number is that many "
                            "cells after the start only when the start is that number "
                            "(x[:, 2:%s + 2], x[:, i:i + %s])" % (name, name, name), item.loc)
        length = SizeVar(name)
        if x.shape[axis] == length and known_number(lo) == 0:
            return None, None               # h[:, 0:L] of h: tensor[N, L, D], the whole axis
        return lo, length

    def _slice_step(self, item, scope, b) -> int:
        """A slice's step: 1 when left out; a whole number from 1 the program fixes."""
        if item.step is None:
            return 1
        for name in sorted(_uses(item.step)):
            if isinstance(scope.find(name)[0], VarBinding):
                raise GoatError("%s is a var, which may change, so it cannot be in a slice's "
                                "step (the result's size depends on it): make it a let (let %s "
                                "= ...)" % (name, name), item.step.loc)
        node = self.value(item.step, scope, b)
        v = known_number(node) if node.shape in ((), (1,), (1, 1)) else None
        if v is None:
            raise GoatError("a slice's step must be a whole number written in the program (or "
                            "a let holding one): the result's size depends on it",
                            item.step.loc)
        if not (v == v and abs(v) <= 2 ** 53 and v == int(v)) or v < 1:
            raise GoatError("a slice's step must be a whole number from 1, got %s%s"
                            % (_number_text(v), " (goat has no reversed slice: a tensor of "
                               "indices reverses an axis of N cells, x[..., N - 1 - iota("
                               "tensor[N], 0)] the last)" if v < 0 else ""), item.step.loc)
        return int(v)

    def _take(self, b, x, part):
        """The cells ``part`` (one of _subscripts' parts) takes from x along its axis: a
        narrow; for a slice with a step, the slice's whole run (a narrow, its start checked as
        a slice's), then its every step-th cell -- the groups of step cells as a new axis (a
        reshape) and their first cells (a narrow), a short last group's one cell joined on
        (concat)."""
        axis, start, count, what, loc, step, span = part
        if step == 1:
            return b.op(REGISTRY["narrow"], (x, start), loc, (axis, count, what))
        run = self._run(b, x, part)
        if is_symbolic(count):              # (count * step cells, or a last group of one)
            whole = size_mul(count, step)
            if whole == span:
                return self._firsts(b, run, axis, count, step, loc)
            cut = size_add(whole, step, -1)
            tail = b.op(REGISTRY["narrow"], (run, self._size_value_node(cut, loc, b)), loc,
                        (axis, 1))
            head = b.op(REGISTRY["narrow"], (run, b.const(0.0, loc)), loc, (axis, cut))
            head = self._firsts(b, head, axis, size_add(count, 1, -1), step, loc)
            return b.op(REGISTRY["concat"], (head, tail), loc, (axis,))
        zero = b.const(0.0, loc)
        if count * step <= span:
            if count * step < span:         # (the groups' cells, when the run holds more)
                run = b.op(REGISTRY["narrow"], (run, zero), loc, (axis, count * step))
            return self._firsts(b, run, axis, count, step, loc)
        tail = b.op(REGISTRY["narrow"], (run, b.const(float((count - 1) * step), loc)), loc,
                    (axis, 1))
        if count == 1:
            return tail
        head = b.op(REGISTRY["narrow"], (run, zero), loc, (axis, (count - 1) * step))
        head = self._firsts(b, head, axis, count - 1, step, loc)
        return b.op(REGISTRY["concat"], (head, tail), loc, (axis,))

    def _give(self, b, y, v, part):
        """y with the cells ``part`` takes (as _take takes them) replaced by v."""
        axis, start, count, what, loc, step, span = part
        if step == 1:
            return b.op(REGISTRY["put"], (y, v, start), loc, (axis, what))
        run = self._run(b, y, part)
        zero = b.const(0.0, loc)
        if is_symbolic(count):              # (count * step cells, or a last group of one)
            whole = size_mul(count, step)
            if whole == span:
                run2 = self._put_groups(b, run, v, axis, count, step, loc)
            else:
                less = size_add(count, 1, -1)
                tail_v = b.op(REGISTRY["narrow"], (v, self._size_value_node(less, loc, b)),
                              loc, (axis, 1))
                head_v = b.op(REGISTRY["narrow"], (v, zero), loc, (axis, less))
                run2 = self._put_groups(b, run, head_v, axis, less, step, loc)
                last = self._size_value_node(size_add(whole, step, -1), loc, b)
                run2 = b.op(REGISTRY["put"], (run2, tail_v, last), loc, (axis,))
        elif count * step <= span:
            run2 = self._put_groups(b, run, v, axis, count, step, loc)
        else:
            last = b.const(float((count - 1) * step), loc)
            tail_v = b.op(REGISTRY["narrow"], (v, b.const(float(count - 1), loc)), loc,
                          (axis, 1))
            run2 = run
            if count > 1:
                head_v = b.op(REGISTRY["narrow"], (v, zero), loc, (axis, count - 1))
                run2 = self._put_groups(b, run2, head_v, axis, count - 1, step, loc)
            run2 = b.op(REGISTRY["put"], (run2, tail_v, last), loc, (axis,))
        if run is y:
            return run2
        return b.op(REGISTRY["put"], (y, run2, start), loc, (axis, what))

    def _put_groups(self, b, run, v, axis, count, step, loc):
        """``run`` with the first cell of each of its first ``count`` groups of ``step`` cells
        along axis replaced by v (count cells along the axis)."""
        zero = b.const(0.0, loc)
        whole = run.shape[axis] == size_mul(count, step)
        part = run if whole else b.op(REGISTRY["narrow"], (run, zero), loc,
                                      (axis, size_mul(count, step)))
        groups = self._groups(b, part, axis, count, step, loc)
        shape = tuple(v.shape[:axis]) + (count, 1) + tuple(v.shape[axis + 1:])
        v = b.op(REGISTRY["reshape"], (v,), loc,
                 (_run_shape(shape, _split_sources(v, axis)),), shape=shape, check=False)
        groups = b.op(REGISTRY["put"], (groups, v, zero), loc, (axis + 1,))
        part2 = b.op(REGISTRY["reshape"], (groups,), loc,
                     (_run_shape(part.shape, [(part, k) for k in range(len(part.shape))]),),
                     shape=part.shape, check=False)
        if whole:
            return part2
        return b.op(REGISTRY["put"], (run, part2, zero), loc, (axis,))

    @staticmethod
    def _run(b, x, part):
        """The cells of x a stepped slice runs over, from its start (x itself when that is
        all of x): its start checked as a slice's of that many cells."""
        axis, start, _, what, loc, _, span = part
        if x.shape[axis] == span and known_number(start) == 0:
            return x
        return b.op(REGISTRY["narrow"], (x, start), loc, (axis, span, what))

    def _firsts(self, b, run, axis, count, step, loc):
        """The first cell of each of the ``count`` groups of ``step`` cells ``run`` holds
        along ``axis``."""
        groups = self._groups(b, run, axis, count, step, loc)
        first = b.op(REGISTRY["narrow"], (groups, b.const(0.0, loc)), loc, (axis + 1, 1))
        shape = tuple(run.shape[:axis]) + (count,) + tuple(run.shape[axis + 1:])
        sources = [(first, k) for k in range(axis)] + [None] + \
            [(first, k + 1) for k in range(axis + 1, len(run.shape))]
        return b.op(REGISTRY["reshape"], (first,), loc, (_run_shape(shape, sources),),
                    shape=shape, check=False)

    @staticmethod
    def _groups(b, run, axis, count, step, loc):
        """``run`` (count x step cells along axis) with that axis split in two: count, step."""
        shape = tuple(run.shape[:axis]) + (count, step) + tuple(run.shape[axis + 1:])
        return b.op(REGISTRY["reshape"], (run,), loc,
                    (_run_shape(shape, _split_sources(run, axis)),), shape=shape, check=False)

    @staticmethod
    def _indices_subscript(node, item):
        """A subscript that is a tensor of indices: one in a subscript, and no mask."""
        inner = node
        while inner.kind == OP and inner.op.name in ("bind", "stop_gradient"):
            inner = inner.args[0]
        if inner.kind == OP and ("comparison" in inner.op.tags or "logical" in inner.op.tags):
            raise GoatError("a subscript by a mask (x[x > 0], NumPy's boolean indexing) is not "
                            "supported: its result's size would be known only when the program "
                            "runs; where(mask, x, 0) keeps x's shape", item.loc)

    def _store(self, stmt, x, v, scope, b):
        """``x[s1, ...] = v``: x with the cells the subscripts take replaced by v (which
        broadcasts to them as to x[s1, ...]), the rest unchanged -- a new value, as every
        value in goat is: put (narrow's inverse) per subscripted axis, from the innermost
        part out, so that grad and goat compile take it."""
        parts, kept, rows = self._subscripts(x, stmt.items, stmt.bracket_loc, scope, b,
                                             store=True)
        if rows is not None:
            rows = rows[0][0]
            raise GoatError("cannot assign through a tensor of indices (one of shape %s in "
                            "%s[...] = v; NumPy's would keep one of repeated indices' writes): "
                            "assign one index at a time, %s[k] = v, in a loop"
                            % (format_shape(rows[0].shape), stmt.name, stmt.name), rows[2])
        r = len(x.shape)
        part = list(x.shape)                # the shape x[s1, ...] has, its indexed axes kept
        for axis, _, length, _, _, _, _ in parts:
            part[axis] = length
        part = tuple(part)
        target = tuple(part[a] for a in kept)
        vs = tuple(v.shape)
        source = v
        while len(vs) > len(target) and vs[0] == 1:
            vs = vs[1:]                     # as NumPy's assignment, leading 1s do not count
        if len(vs) > len(target) or any(
                not (d == 1 or d is None or t is None or d == t) for d, t in
                zip(vs[::-1], target[::-1])):
            e = stmt.expr
            compound = type(e) is ast.Binary and type(e.left) is ast.Index and \
                e.left.items is stmt.items          # x[i] += v: v's place
            hint = ""
            if vs[-1:] == (1,) and len(vs) > 1 and vs[:-1] == target[len(target) - len(vs) + 1:]:
                # seq[:, k] = argmax_rows(p): a column (Rx1) for a vector (R)
                at = e.right.loc if compound else e.loc
                text = at.source.text[at.start:at.end]
                text = text if len(text) <= 40 and "\n" not in text else "v"
                if not (text.replace("_", "").isalnum() or text.endswith(")")):
                    text = "(%s)" % text
                hint = ("; the value has one axis of 1 more, last: %s%s takes its cells "
                        "(argmax_rows and sample_rows give a column)" % (
                            text, "[:, 0]" if len(vs) == 2 else "[..., 0]"))
            raise GoatError("cannot assign a value of shape %s to %s[...], of shape %s: the "
                            "value's shape must be that one, or broadcast to it%s" % (
                                format_shape(source.shape), stmt.name, format_shape(target),
                                hint), e.right.loc if compound else e.loc)
        loc = stmt.loc
        # v at rank r: its sizes on the kept axes (1 where it broadcasts), 1 on the indexed;
        # then broadcast to the part's shape
        gap = len(target) - len(vs)
        padded = (1,) * gap + vs
        full = [1] * r
        sources = [None] * r                # where a ? size of v's is read when it runs
        offset = len(source.shape) - len(vs)
        for k, (a, d) in enumerate(zip(kept, padded)):
            full[a] = d
            if k >= gap:
                sources[a] = (source, offset + k - gap)
        full = tuple(full)
        unknown = None in full or None in part     # (checked when it runs)
        if full != tuple(source.shape):
            v = b.op(REGISTRY["reshape"], (v,), loc, (_run_shape(full, sources),), shape=full,
                     check=False)
        if full != part or unknown:
            v = b.op(REGISTRY["broadcast_to"], (v,), stmt.expr.loc,
                     (_run_shape(part, [(x, a) for a in range(r)]), (stmt.name, tuple(kept))),
                     shape=part, check=unknown)
        chain = [x]                         # x, then the part each axis but the last takes
        for p in parts[:-1]:
            chain.append(self._take(b, chain[-1], p))
        for p, y in reversed(list(zip(parts, chain))):
            v = self._give(b, y, v, p)
        return v

    def _subscript_index(self, axis, item, node, size, whole, b):
        """The start node of index ``item`` (its one-cell value ``node``) of ``axis`` (of size
        ``size``, None when not known before the run): a number written in the program is
        checked here; one computed when the program runs is checked then (narrow's start,
        worded as an index); a negative one counts from the end, as in NumPy."""
        v = known_number(node) if node.shape in ((), (1,), (1, 1)) else None
        if v is None or known_number(node, "f32") is None:
            # (known only when it runs, or a number --dtype f32 computes otherwise, 2**24 + 1:
            # each precision's run reads its own, as it reads a computed index)
            return node
        if _unbound(node).kind != CONST and b._never_runs():
            return node     # (computed, in a loop of no steps: left to the run, as a start is)
        if not (v == v and abs(v) <= 2 ** 53 and v == int(v)):
            raise GoatError("an index is a whole number, got %s" % _number_text(v), item.loc)
        v = int(v)
        if size is not None:
            if not -size <= v < size:
                raise GoatError(
                    "index %d is out of range for axis %d of %s, which has %d cell%s: an index "
                    "is from %d to %d (a negative one counts from the end)"
                    % (v, axis, whole, size, "" if size == 1 else "s", -size, size - 1)
                    if size else "index %d is out of range for axis %d of %s, which has no "
                    "cells" % (v, axis, whole), item.loc)
            return b.const(float(v % size), item.loc)
        # (-1 of an axis whose size is known when the program runs counts from its end then,
        # as a computed index does)
        return b.const(float(v), item.loc)

    def _subscript_slice(self, x, axis, item, n, size, whole, scope, b, step=1):
        """(start node, length) of slice ``item`` of ``axis``, or (None, None) when it takes
        the whole axis.  Bounds written as numbers are checked here (a negative one counts
        from the end of an axis whose size is known); a computed start is checked when it
        runs, and its end must be a fixed number of cells after it (x[i:i + 4],
        x[k * B:(k + 1) * B]): the result's shape is known before the run.  In a def, the end
        may be a size variable's number of cells after the start (hp[:, 1:L + 1], h[:, 0:L]):
        the length is that size, each call's."""
        if step == 1 and self._sizes and self._in_def(scope):
            got = self._size_slice(x, axis, item, scope, b)
            if got is None:
                got = self._computed_size_slice(item, scope, b)
            if got is not None:
                return got
        sized = self._size_var_end(item.hi, scope) if step == 1 else None
        if sized is not None:
            return self._sized_slice(x, axis, item, sized, scope, b)
        lo = self.value(item.lo, scope, b) if item.lo is not None else None
        hi = self.value(item.hi, scope, b) if item.hi is not None else None
        for bound, node in ((item.lo, lo), (item.hi, hi)):
            if node is not None and cells(node.shape) != 1:
                raise GoatError("a slice's bounds are numbers, got a value of shape %s"
                                % format_shape(node.shape), bound.loc)
        vlo = 0.0 if lo is None else known_number(lo) if lo.shape in ((), (1,), (1, 1)) else None
        vhi = (float(size) if size is not None else None) if hi is None else (
            known_number(hi) if hi.shape in ((), (1,), (1, 1)) else None)
        for bound, v in ((item.lo, vlo), (item.hi, vhi)):
            if v is not None and not (v == v and abs(v) <= 2 ** 53 and v == int(v)):
                raise GoatError("a slice's bounds are whole numbers, got %s" % _number_text(v),
                                bound.loc)
        written = "%s:%s%s" % ("" if vlo is None or item.lo is None else "%d" % vlo,
                               "" if vhi is None or item.hi is None else "%d" % vhi,
                               ":%d" % step if step > 1 else "")
        if vlo is not None and (vhi is not None or hi is None):
            if size is None and hi is None and vlo == 0:
                return None, None           # x[0:], the whole axis
            if size is None and (hi is None or vlo < 0 or vhi < 0):
                raise GoatError(
                    "the slice %s needs the size of axis %d of %s, which is known only when "
                    "the program runs (or a def is called): write both bounds as whole numbers "
                    "from 0 (the result's sizes are known before the run)%s" % (
                        written, axis, whole, (
                        "; in a def, a slice's bounds may be its size variables: "
                        "x[:, 1:%s]" % (
                            x.shape[axis].name if isinstance(x.shape[axis], SizeVar)
                            and not x.shape[axis].name.startswith("...") else
                            sorted(n for n in self._sizes if not n.startswith("..."))[0]))
                        if [n for n in self._sizes or () if not n.startswith("...")]
                        and self._in_def(scope) and step == 1 else ""), item.loc)
            a, z = int(vlo), int(vhi)
            if size is not None:
                a, z = a + size if a < 0 else a, z + size if z < 0 else z
                if not (0 <= a <= size and 0 <= z <= size):
                    raise GoatError(
                        "the slice %s runs past axis %d of %s, which has %d cell%s: its bounds "
                        "are from %d to %d (goat does not shorten a slice as NumPy does)"
                        % (written, axis, whole, size, "" if size == 1 else "s", -size, size),
                        item.loc)
                if a == 0 and z == size:
                    return None, None
            if z < a:
                raise GoatError("the slice %s ends before it starts: it would hold no cells, "
                                "and goat does not make an empty slice of that" % written,
                                item.loc)
            return b.const(float(a), item.loc), z - a
        # a start computed when the program runs: the end must be a fixed number after it
        terms_lo, k_lo = _linear(lo) if lo is not None else ({}, 0.0)
        terms_hi, k_hi = _linear(hi) if hi is not None else ({}, float("nan"))
        length = k_hi - k_lo
        if terms_lo != terms_hi or not (length == length and length == int(length)):
            raise GoatError("a slice's length must be known before the run: its start may be "
                            "computed, when its end is a fixed number of cells after it "
                            "(x[i:i + 4], x[k * B:(k + 1) * B]), as narrow(x, axis, start, "
                            "length) takes them", item.loc)
        if length < 0:
            raise GoatError("this slice ends %d cell%s before it starts" % (
                -length, "" if length == -1 else "s"), item.loc)
        if lo is None:
            lo = b.const(0.0, item.loc)
        return lo, int(length)


def _ordinal(k: int) -> str:
    """2nd, 3rd, 11th, 21st"""
    tail = "th" if 10 <= k % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(k % 10, "th")
    return "%d%s" % (k, tail)


def _size_var_end_of(e, sizes):
    """(the size variable, the other terms) of a slice's end written as a sum with one term a
    size variable L of ``sizes`` (L, L + E, s + 1 + L) and the others free of them; else
    None."""
    def sized(x):
        return type(x) is ast.Name and x.name in sizes and not x.name.startswith("...")
    terms, stack = [], [e]
    while stack:
        x = stack.pop()
        if type(x) is ast.Binary and x.op == "+":
            stack += (x.right, x.left)
        else:
            terms.append(x)
    named = [t for t in terms if sized(t)]
    rest = [t for t in terms if not sized(t)]
    if len(named) != 1 or any(_uses(t) & set(sizes) for t in rest):
        return None
    return named[0].name, rest


def _linear(node):
    """``node`` (a one-cell value) as (terms, k): the sum of coefficient x node over
    ``terms`` ({node id: coefficient}, the nodes the program computes) plus the number k,
    through +, -, negation, and * and / by numbers the program fixes -- so that the ends of
    x[k * B:(k + 1) * B] are seen B apart."""
    v = known_number(node) if node.shape in ((), (1,), (1, 1)) else None
    if v is not None:
        return {}, v
    while (node.kind == OP and node.op.name in ("bind", "stop_gradient")) or (
            node.kind == CAST and len(node.args) == 1):
        node = node.args[0]
    name = node.op.name if node.kind == OP else None
    if name in ("add", "subtract"):
        (ta, ka), (tb, kb) = _linear(node.args[0]), _linear(node.args[1])
        sign = 1.0 if name == "add" else -1.0
        terms = dict(ta)
        for key, c in tb.items():
            terms[key] = terms.get(key, 0.0) + sign * c
        return {key: c for key, c in terms.items() if c != 0}, ka + sign * kb
    if name == "negate":
        t, k = _linear(node.args[0])
        return {key: -c for key, c in t.items()}, -k
    if name in ("multiply", "divide"):
        (ta, ka), (tb, kb) = _linear(node.args[0]), _linear(node.args[1])
        if not tb and kb == kb and kb != 0:
            f = kb if name == "multiply" else 1.0 / kb
            return {key: c * f for key, c in ta.items() if c * f != 0}, ka * f
        if not ta and name == "multiply":
            return {key: c * ka for key, c in tb.items() if c * ka != 0}, kb * ka
    return {node.id: 1.0}, 0.0


_BLOCKS = (ast.For, ast.If, ast.Def)

# what a NumPy, PyTorch or Python habit is in goat
_FOREIGN_MODULES = {"np": "NumPy", "numpy": "NumPy", "torch": "PyTorch", "math": "Python",
                    "F": "PyTorch", "jnp": "JAX"}
_METHOD_HABITS = {
    "T": "write transpose(x)",
    "transpose": "write transpose(x) (the last two axes) or swapaxes(x, a, b)",
    "permute": "write swapaxes(x, a, b), a pair of axes at a time",
    "swapaxes": "write swapaxes(x, a, b)",
    "shape": "a value's shape is its type (:type x in the REPL, goat check --shapes); "
             "size(x, axis) gives one of its sizes as a number",
    "sum": "write sum(x) (every cell), row_sum(x) or col_sum(x)",
    "mean": "write mean(x) (every cell), row_mean(x) or col_mean(x)",
    "round": "write floor(x + 0.5) to round halves up", "max": "write row_max(x) or col_max(x)",
    "min": "write row_min(x) or col_min(x)", "reshape": "write reshape(x, tensor[...])",
    "exp": "write exp(x)", "log": "write log(x)", "sqrt": "write sqrt(x)",
    "pow": "write square(x) for x ** 2; there is no power (for x > 0, exp(p * log(x)))",
    "square": "write square(x)", "abs": "write abs(x)",
}
_NAME_HABITS = {
    "True": "write 1 (a condition is a number; any but 0 is true)",
    "true": "write 1 (a condition is a number; any but 0 is true)",
    "False": "write 0 (a condition is a number; 0 is false)",
    "false": "write 0 (a condition is a number; 0 is false)",
    "inf": "write 1 / 0 (and -1 / 0 for -inf)", "nan": "write 0 / 0",
    "pi": "write 3.141592653589793",
    "None": "goat has no None, but in a subscript, where it adds an axis of size 1 "
            "(x[:, None]; reshape(x, tensor[...]) does too)",
}
# a built-in called as another library's function of that name is: (name, arguments) -> hint
_ARITY_HABITS = {
    ("transpose", 3): "; transpose(x) swaps the last two axes; swapaxes(x, a, b) swaps axes a "
                      "and b (PyTorch's x.transpose(a, b))",
    ("sum", 2): "; sum(x) adds every cell; row_sum(x) sums along the last axis, col_sum(x) "
                "along the one before it (each keeping it as size 1)",
    ("mean", 2): "; mean(x) averages every cell; row_mean(x) along the last axis, col_mean(x) "
                 "along the one before it (each keeping it as size 1)",
    ("max", 2): "; max(x) is the largest cell; maximum(a, b) elementwise, row_max(x) along the "
                "last axis, col_max(x) along the one before it",
    ("min", 2): "; min(x) is the smallest cell; minimum(a, b) elementwise, row_min(x) along "
                "the last axis, col_min(x) along the one before it",
}
# row_sum(x, 1), col_mean(x, 0): an axis given to a reduction whose name is its axis
for _verb in ("sum", "mean", "max", "min"):
    for _k in (2, 3):
        _ARITY_HABITS[("row_" + _verb, _k)] = (
            "; row_%s(x) takes no axis: it %s along the last axis (keeping it as size 1), "
            "col_%s(x) along the one before it, %s(x) over every cell; another axis first "
            "goes last with swapaxes(x, a, -1)" % (_verb, {"sum": "sums", "mean": "averages",
                                                          "max": "takes the largest",
                                                          "min": "takes the smallest"}[_verb],
                                                   _verb, _verb))
        _ARITY_HABITS[("col_" + _verb, _k)] = (
            "; col_%s(x) takes no axis: it works along the second-to-last axis (keeping it "
            "as size 1), row_%s(x) along the last, %s(x) over every cell" % (_verb, _verb,
                                                                              _verb))
del _verb, _k
# an argument named as PyTorch names it, where goat's parameters have other names: name ->
# (the parameters that must exist, what to write)
_KEYWORD_HABITS = {
    "weight_decay": (("wd",), "PyTorch's weight_decay is wd"),
    "learning_rate": (("lr",), "learning_rate is lr"),
    "epsilon": (("eps",), "epsilon is eps"),
    "beta1": (("b1",), "beta1 is b1"), "beta2": (("b2",), "beta2 is b2"),
    "betas": (("b1", "b2"), "PyTorch's betas=(0.9, 0.999) is b1=0.9, b2=0.999"),
    "max_grad_norm": (("max_norm",), "max_grad_norm is max_norm"),
}
_FUNCTION_HABITS = {
    "sum": "write sum(x) (every cell), row_sum(x) or col_sum(x)",
    "mean": "write mean(x) (every cell), row_mean(x) or col_mean(x)",
    "round": "write floor(x + 0.5) to round halves up",
    "softmax": "write nn.softmax_rows(x) after import nn",
    "log_softmax": "write nn.log_softmax(x) after import nn",
    "layer_norm": "write nn.layer_norm(x, g, t) after import nn",
    "attention": "write nn.attention(q, k, v, mask, scale) after import nn",
    "len": "write size(x, 0) (a value's sizes are part of its type: :type x in the REPL, "
           "goat check --shapes)",
    "dot": "write a @ b", "matmul": "write a @ b", "mm": "write a @ b",
    "permute": "write swapaxes(x, a, b), a pair of axes at a time",
    "moveaxis": "write swapaxes(x, a, b), a pair of axes at a time",
    "pow": "there is no power: square(x) is x * x, and for x > 0 write exp(p * log(x))",
    "clip": "write minimum(maximum(x, lo), hi)", "clamp": "write minimum(maximum(x, lo), hi)",
    "sign": "write (x > 0) - (x < 0)",
    "arange": "write iota(tensor[N], 0) (0, 1, ..., N-1)",
    "select": "write where(c, a, b)",
    "zeros_like": "write zeros(tensor[...]) with the shape", "ones_like": "write ones(tensor[...]) with the shape",
    "range": "loops are written for i in 0..N { ... }",
    "float": "every value is already a float64 tensor", "int": "every value is a float64 tensor",
    "argmax": "write argmax_rows(x) (each row's index of its largest)",
    "row_argmax": "write argmax_rows(x) (each row's index of its largest)",
    "argmax_row": "write argmax_rows(x) (each row's index of its largest)",
    "argmin": "write argmax_rows(-x) (each row's index of its smallest)",
    "argmin_rows": "write argmax_rows(-x) (each row's index of its smallest)",
    "row_argmin": "write argmax_rows(-x) (each row's index of its smallest)",
"softplus": "write maximum(x, 0) + log(1 + exp(-abs(x)))",
    "normal": "write randn(tensor[...], seed) (standard normal draws; times std, plus mean)",
    "uniform": "write rand(tensor[...], seed) (uniform draws on [0, 1))",
    "sgd": "there is no SGD function: write w -= lr * g (optim.adamw is AdamW)",
    "linear": "write x @ w + b", "dense": "write x @ w + b",
    "permutation": "write randperm(N, seed) (a random order of 0 to N-1)",
    "conv1d": "goat has no convolution op: a kernel of width 3 over the time axis of h "
              "(BxTxC, padded to T + 2 rows hp) is hp[:, 0:T] @ w0 + hp[:, 1:T + 1] @ w1 + "
              "hp[:, 2:T + 2] @ w2 + b, each wk CxF (docs/language.md, Convolutions)",
    "conv2d": "goat has no convolution op: write it as products of shifted slices "
              "(docs/language.md, Convolutions)",
    "pad": "write concat(concat(zeros(tensor[...]), x, axis), zeros(tensor[...]), axis)",
    "unfold": "take the windows with a tensor of indices: h[:, iota(tensor[T, K], 0) + "
              "iota(tensor[T, K], 1)] is BxTxKxC (docs/language.md, Convolutions)",
    "einsum": "write @ (batched over leading axes), with swapaxes and reshape to line the "
              "axes up",
    "topk": "write argsort(-x)[..., 0:k] (the columns of the k largest of each row, largest "
            "first) and take them, x[i, idx]",
    "multinomial": "write sample_rows(p, seed) (a column per row, drawn in proportion to p)",
    "categorical": "write sample_rows(p, seed) (a column per row, drawn in proportion to p)",
    "cumsum": "the running sum along the last axis of C cells is x @ (iota(tensor[CxC], 0) "
              "<= iota(tensor[CxC], 1))",
    "shuffle": "write X[randperm(N, seed)] (X's N rows in a random order, a new one per seed)",
    "sort": "write x[argsort(x)] for a vector (argsort gives each row's sorting order)",
    "randn_like": "write randn(tensor[...], seed) with the shape",
    "rand_like": "write rand(tensor[...], seed) with the shape",
    "randint": "write floor(rand(tensor[...], seed) * n) (whole numbers from 0 to n-1)",
}
for _name, _axis in (("concatenate", "axis"), ("cat", "axis"), ("hstack", "1"),
                     ("vstack", "0")):
    _FUNCTION_HABITS[_name] = "write concat(a, b, %s) (two at a time)" % _axis
_FUNCTION_HABITS["stack"] = ("write concat(a1, b1, 0), a1 and b1 being a and b reshaped with "
                             "a leading 1 (of a 2x3 a: reshape(a, tensor[1x2x3]))")


def _elsewhere(member, mod_name, scope) -> str:
    """The hint for ``MODULE.member`` where the module has no such member but goat has it
    elsewhere: built in (``nn.relu``), in another standard module (``optim.gelu``), or with
    advice of its own (``nn.mean``, ``optim.sgd``); "" when none of these."""
    from ..ops.registry import builtin_names
    from .modules import stdlib_defs
    if member in builtin_names():
        return "; %s is built in: write %s(...)" % (member, member)
    other = stdlib_defs().get(member)
    if other is not None and other != mod_name:
        imported = isinstance(scope.find(other)[0], Module)
        return "; it is in the standard library's %s module: write %s.%s(...)%s" % (
            other, other, member, "" if imported else " after import %s" % other)
    if member in _FUNCTION_HABITS:
        return "; %s" % _FUNCTION_HABITS[member]
    return ""


def _numbers_only(e) -> bool:
    """Is ``e`` numbers and names (lets: a scale, sqrt(2 / H)) and arithmetic on them, and
    built-ins of no shape of their own called on such (3, -0.5, 2 * s, sqrt(2 / H))?  Beside
    a built-in whose shape is left out, the annotation's shape is that built-in's (where a
    name holds more than one number, the annotation's check says so)."""
    while type(e) is ast.Unary and e.op == "-":
        e = e.operand
    if type(e) is ast.Binary:
        return _numbers_only(e.left) and _numbers_only(e.right)
    if type(e) is ast.Call:
        op = lookup(e.name)
        return (op is not None and all(kind != "type" for _, kind in op.params)
                and all(_numbers_only(a) for a in e.args))
    return type(e) in (ast.Number, ast.Name)


def _is_newaxis(item) -> bool:
    """``None`` in a subscript: NumPy's newaxis, a new axis of size 1."""
    return type(item) is ast.Name and item.name == "None"


def _expand_ellipsis(items, r):
    """``items`` with its ``...`` (at most one) replaced by the whole axes the others leave of
    a value of rank ``r`` (none, x[..., 0] of a vector), as in NumPy; a None takes no axis."""
    dots = [item for item in items if type(item) is ast.Ellipsis]
    if len(dots) > 1:
        raise GoatError("a subscript holds one ... at most (it stands for every axis the "
                        "others leave)", dots[1].loc)
    if not dots:
        return items
    at = items.index(dots[0])
    taken = sum(not _is_newaxis(item) for item in items) - 1
    whole_axis = [ast.Slice(None, None, None, dots[0].loc)] * max(0, r - taken)
    return items[:at] + whole_axis + items[at + 1:]


def _split_sources(x, axis):
    """Where the sizes of x with ``axis`` split in two are read when the program runs (the
    two new sizes are known)."""
    r = len(x.shape)
    return [(x, k) for k in range(axis)] + [None, None] + [(x, k) for k in range(axis + 1, r)]


def _run_shape(shape, sources):
    """``shape`` as an op's shape attribute: a ``?`` size read from ``sources`` (per
    dimension, (node, axis)) when the program runs (in a def's body, from the copy of that
    node each call makes: _remap_run_dims)."""
    return tuple(RunDim(*src) if d is None else d for d, src in zip(shape, sources))


def _remap_run_dims(attrs, m):
    """A def's shape attributes for one call: a size read from a node of the def's body when
    it runs (a RunDim) read from that node's copy, or the size the copy has before the run."""
    def remap(d):
        if type(d) is RunPoly:          # each size it reads remapped, then worked out
            terms = {}
            for mono, c in d.terms.items():
                dims = []
                for r in mono:
                    v = remap(r)
                    if type(v) is int:
                        c *= v
                    else:
                        dims.append(v)
                key = tuple(sorted(dims, key=lambda r: (r.node.id, r.axis)))
                terms[key] = terms.get(key, 0) + c
            terms = {k: c for k, c in terms.items() if c}
            if not any(terms):
                return sum(terms.values())
            return RunPoly(terms, d.poly, {n: remap(v) if type(v) is RunDim else v
                                           for n, v in d.names.items()})
        node = m(d.node.id, d.node)
        size = None if isinstance(node, tuple) else node.shape[d.axis]
        return size if type(size) is int else RunDim(node, d.axis)
    out = []
    for a in attrs:
        if type(a) is tuple and any(type(d) in (RunDim, RunPoly) for d in a):
            a = tuple(remap(d) if type(d) in (RunDim, RunPoly) else d for d in a)
        elif type(a) in (RunDim, RunPoly):
            a = remap(a)
        out.append(a)
    return tuple(out)


def _run_dim_sources(attrs):
    """The nodes whose run-time sizes the RunDims in ``attrs`` read, in order."""
    out = []
    for a in attrs:
        if type(a) is tuple:
            for d in a:
                if type(d) is RunDim and d.node not in out:
                    out.append(d.node)
                for r in (d.dims if type(d) is RunPoly else ()):
                    if r.node not in out:
                        out.append(r.node)
        elif type(a) is RunDim and a.node not in out:     # a def's slice of length L
            out.append(a.node)
        elif type(a) is RunPoly:                            # ... of length L - 1
            for r in a.dims:
                if r.node not in out:
                    out.append(r.node)
    return out


def _header(stmt) -> str:
    """A block's header as written, without its '{': ``for step in 0..200``."""
    head = stmt.head
    return " ".join(head.source.text[head.start:head.end].rstrip("{").split())


def _defined_at(scope, name, loc) -> str:
    """Where ``name`` of ``scope`` was defined, for a message at ``loc``: "on line 3", or
    "on line 1 of <input 2>" when that was another source (an earlier input of the REPL)."""
    line = scope.lines[name]
    source = scope.sources.get(name)
    if source is None or loc is None or source is loc.source:
        return "on line %d" % line
    if source.path == loc.source.path:          # goat.repl.Session.run's "<repl>" each time
        return "on line %d of an earlier input" % line
    return "on line %d of %s" % (line, source.path)


def _declared_shape(declared, env) -> str:
    """A parameter's declared shape with the sizes its variables were bound to:
    ``Nx3 (N = 1)``."""
    bound = _bindings(declared, env)
    return format_shape(declared) + (" (%s)" % ", ".join(bound) if bound else "")


def _bindings(declared, env, leading=True) -> list:
    """``["N = 4", ...]``: the sizes ``env`` binds the size variables of ``declared`` to (not
    one bound to itself; with ``leading`` false, not the leading sizes ``...``)."""
    names = dict.fromkeys(n for d in declared for n in size_names(d)
                          if leading or n != "...")
    return ["%s = %s" % (n, format_shape((env[n][0],))) for n in names
            if n in env and env[n][0] is not None and env[n][0] != SizeVar(n)]


def _and_list(words) -> str:
    """w, g, m and v"""
    words = list(words)
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


def _same_error(a, b) -> bool:
    """Whether ``a`` is ``b`` met again: at a def's second call (a grad in its body fails at
    each call: the call notes, how it was reached, differ), or in a module imported again
    through another module (the import notes differ)."""
    from ..diagnostics import is_call_note, is_import_note

    def key(e):
        return (e.message, tuple(n for n in e.notes
                                 if not (is_import_note(n) or is_call_note(n))),
                e.loc and (e.loc.source.path, e.loc.start, e.loc.end))
    return key(a) == key(b)


def _place_imported(errors, stmt, place: dict):
    """Note in ``place`` where each of ``errors`` that is in another file (a module ``stmt``
    imports) is reported among the file's own: at ``stmt``."""
    for one in errors:
        if one.loc is not None and one.loc.source is not stmt.loc.source:
            place[id(one)] = stmt.loc.start


def _in_order(errors: list, place: dict) -> list:
    """``errors`` sorted as they are reported: by position, one from an imported module at its
    import's (:func:`_place_imported`), then in the order found."""
    errors.sort(key=lambda e: place.get(id(e), e.loc.start if e.loc is not None else -1))
    return errors


def _words(message: str, sizes) -> set:
    """The names a message holds as words, a shape's sizes among them (T in 2xTx2, when T is
    one of ``sizes``): not the n of 'cannot'."""
    out = set()
    for word in re.findall(r"[A-Za-z0-9_]+", message):
        out.add(word)
        parts = word.split("x")
        if len(parts) > 1 and all(p.isdigit() or p in sizes for p in parts):
            out.update(parts)
    return out


class _Reported(GoatError):
    """A block that cannot be checked for an error already reported (a def whose return reads
    what a statement that could not be read would have defined): it fails with no error of
    its own."""

    def __init__(self):
        super().__init__("(reported)")


def _each(e) -> list:
    """The errors a GoatError stands for: its list (GoatErrors), or itself (none for
    :class:`_Reported`)."""
    if type(e) is _Reported:
        return []
    return list(getattr(e, "errors", None) or [e])


def _together(errors, last=None):
    """One error for a block's ``errors`` (and a ``last``, fatal one, whose fatality the
    result keeps): itself when alone, else a GoatErrors."""
    errors = list(errors) + (_each(last) if last else [])
    if len(errors) == 1:
        out = errors[0]
    else:
        from ..diagnostics import GoatErrors
        out = GoatErrors(errors)
    if last is not None and getattr(last, "fatal", False):
        out.fatal = True
    return out


def _reaches(value, source, nodes) -> bool:
    """Whether ``value`` is computed from ``source`` (grad's own test)."""
    from ..autodiff.grad import _reaches
    return _reaches(value, source, nodes)


def _one_cell(shape) -> bool:
    """Whether a value of ``shape`` is sure to hold one element (1x1, scalar)."""
    return all(type(d) is int and d == 1 for d in shape)


def _written_call(name, params, sizes=None) -> str:
    """How a call of the built-in ``name`` is written, its type arguments as types:
    ``randn(tensor[4x8], ...)`` (``sizes``: the ones written, as NumPy writes them)."""
    shape = "tensor[%s]" % ("x".join(sizes) if sizes else "2x3")
    return "%s(%s)" % (name, ", ".join(shape if kind == "type" else
                                       '"file.npy"' if kind == "string" else "..."
                                       for _, kind in params))


def _sizes_written(args) -> list:
    """The sizes a NumPy-style call writes as numbers (zeros(2, 3), randn(4, 8)): its
    leading whole-number arguments."""
    out = []
    for a in args:
        if type(a) is not ast.Number or a.value != int(a.value) or a.value < 0:
            break
        out.append("%d" % a.value)
    return out


def _number_text(v) -> str:
    if v != v or abs(v) == float("inf"):            # 0 / 0, 1 / 0: as print shows them
        from ..interp.printer import format_number
        return format_number(v)
    return "%d" % v if v == int(v) and abs(v) < 1e15 else "%g" % v


def _declared_what(what, declared, env):
    """A run-time check's phrase for an argument whose declared shape has size variables
    bound by the other arguments: ("declared", phrase, "N = 4 from argument y of f"), so that
    its failure names them (as the checker's own message does); else the phrase alone."""
    bound = _bindings(declared, env, leading=False)
    if not bound:
        return what
    return ("declared", what, "declared %s with %s" % (format_type(declared), ", ".join(bound)))


def _var_shape_message(name, shape, declared) -> str:
    return ("cannot assign a value of shape %s to var '%s' of shape %s: a var keeps the shape "
            "it was declared with" % (format_shape(shape), name, format_shape(declared)))


def _note_no_leading_sizes(e, name):
    """Say, under a shape error met checking a def over ``tensor[...]`` as written, that
    ``...`` stood for no sizes there (``w: tensor[...]`` a scalar): the def must hold for
    that case too, whatever its calls pass."""
    note = ("%s is checked with ... standing for no leading sizes (a tensor[...] "
            "parameter a scalar), as well as for each call's: its body must hold for all"
            % name)
    for err in getattr(e, "errors", None) or [e]:
        if ("shape" in err.message or "scalar" in err.message) and note not in err.notes:
            err.notes = tuple(err.notes) + (note,)


# a type as another language writes it -> what goat writes
_TYPE_HABITS = {
    "int": "goat's values are all numbers (float64): write scalar, or tensor[...]",
    "float": "write scalar for one number, tensor[...] for more",
    "double": "write scalar for one number, tensor[...] for more",
    "float32": "write scalar, or tensor[...]; goat run --dtype f32 computes in float32",
    "float64": "write scalar for one number, tensor[...] for more",
    "tensor": "a tensor's type gives its shape: tensor[3x4], tensor[N, D]",
    "number": "write scalar for one number",
    "bool": "a comparison gives 0 or 1: write scalar, or tensor[...]",
    "array": "write tensor[...] with its shape: tensor[3x4]",
    "vector": "write tensor[N] (or tensor[1, N] for a row)",
    "matrix": "write tensor[N, M]",
}


def _carriers(tmpl, index=None) -> tuple:
    """The positions of the parameters whose cells a def's result (its result ``index`` for
    several) is computed from elementwise -- through elementwise ops and casts only, as
    optim.clip_grad_norm's g * scale, adamw's w, g, m and v: a layout an argument there
    has, the result has too."""
    key = index or 0
    result = tmpl.result
    if result is None:
        return ()
    nodes = result if isinstance(result, tuple) else (result,)
    if key >= len(nodes):
        return ()
    params = {p.id: k for k, p in enumerate(tmpl.region.params)}
    found, seen, stack = set(), set(), [nodes[key]]
    while stack:
        n = stack.pop()
        if n.id in seen:
            continue
        seen.add(n.id)
        if n.id in params:
            found.add(params[n.id])
        elif n.kind == CAST:
            stack.append(n.args[0])
        elif n.kind == OP and ("elementwise" in n.op.tags or "constant" in n.op.tags):
            stack.extend(a for k, a in enumerate(n.args[:n.op.n_values])
                         if k not in n.op.chooses)
    return tuple(sorted(found))


def _laid_out(scope, name) -> str:
    """`` (theta)`` for a name whose value is laid out as params block theta (else "")."""
    layout = scope.layouts.get(name)
    return "" if layout is None else " (%s)" % layout.name


def _near_member(name, members):
    """The member ``name`` is likely a slip for: the closest by spelling, or one a letter
    away (p.ww for w, p.bb for b), else None."""
    close = _closest(name, members)
    if close:
        return close
    for m in members:
        if len(m) >= 1 and abs(len(m) - len(name)) == 1 and (
                name.startswith(m) or name.endswith(m) or m.startswith(name)):
            return m
    return None


def _member_table(members, at=0, prefix="") -> dict:
    """{member: (offset, shape)} of a params block's members, a nested block's own members
    named after it (blk.wq), offsets from the start of the outermost vector."""
    out = {}
    for name, (offset, _, shape, sub) in members.items():
        out[prefix + name] = (at + offset, tuple(shape))
        if sub is not None:
            out.update(_member_table(sub.members, at + offset, prefix + name + "."))
    return out


def _split_size(e, parts):
    """The size of the axis a ``split(x, k, axis)`` call ``e`` took apart into ``parts``, or
    None for any other value."""
    if type(e) is not ast.Call or e.name != "split" or not parts:
        return None
    axis = [k for k, (a, b) in enumerate(zip(parts[0].shape, parts[0].args[0].shape)) if a != b]
    return parts[0].args[0].shape[axis[0]] if axis else None


def _affine_range(node, ranges):
    """(least, greatest, the loop indices' values giving the least, those giving the greatest)
    of a one-number value affine in loop indices of fixed bounds (``ranges``: ARG id ->
    (first, last)) -- sums, differences, negations, and products and quotients by numbers the
    program fixes -- or None.  The value is worked out as c + a1 k1 + a2 k2 + ... (k - k is 0,
    (k + 1) * 3 - k is 2k + 3), so both ends are values it takes, at the indices' values given
    as ((ARG id, value), ...)."""
    form = _affine_form(node, ranges, 0)
    if form is None:
        return None
    c, coefs = form
    lo, hi, lo_at, hi_at = c, c, [], []
    for i, a in sorted(coefs.items()):
        first, last = ranges[i]
        small, big = (first, last) if a >= 0 else (last, first)
        lo, hi = lo + a * small, hi + a * big
        lo_at.append((i, small))
        hi_at.append((i, big))
    return (lo, hi, tuple(lo_at), tuple(hi_at))


def _affine_form(node, ranges, depth):
    """``node`` as (c, {ARG id: coefficient}) -- c + the sum of each coefficient times its loop
    index -- or None where it is no such form."""
    if depth > 50:
        return None
    while node.kind == OP and node.op.name in ("bind", "reshape") and _cells(node.shape) == 1:
        node = node.args[0]
    if node.kind == CONST or (node.kind == OP and not node.args):
        v = known_number(node)
        return None if v is None else (v, {})
    if node.kind == ARG:
        return (0, {node.id: 1}) if node.id in ranges else None
    if node.kind != OP or _cells(node.shape) != 1:
        return None
    name = node.op.name
    if name == "negate":
        f = _affine_form(node.args[0], ranges, depth + 1)
        return None if f is None else (-f[0], {i: -a for i, a in f[1].items()})
    if name not in ("add", "subtract", "multiply", "divide") or len(node.args) != 2:
        return None
    f = _affine_form(node.args[0], ranges, depth + 1)
    g = _affine_form(node.args[1], ranges, depth + 1)
    if f is None or g is None:
        return None
    if name in ("add", "subtract"):
        sign = 1 if name == "add" else -1
        coefs = dict(f[1])
        for i, a in g[1].items():
            coefs[i] = coefs.get(i, 0) + sign * a
        return (f[0] + sign * g[0], {i: a for i, a in coefs.items() if a != 0})
    if name == "multiply" and not f[1]:
        f, g = g, f                     # (the number second)
    if name == "multiply" and not g[1]:
        k = g[0]
        return (f[0] * k, {i: a * k for i, a in f[1].items() if a * k != 0})
    if name == "divide" and not g[1] and g[0] != 0:
        k = g[0]
        return (f[0] / k, {i: a / k for i, a in f[1].items()})
    return None


def _relocated(d, loc):
    """A copy of a default's literal placed at ``loc`` (the call that gives it)."""
    if type(d) is ast.Number:
        return ast.Number(d.value, loc)
    if type(d) is ast.Array:
        return ast.Array(d.array, loc)
    return ast.Unary(d.op, _relocated(d.operand, loc), loc)


def argument_parts(inside: str) -> list:
    """The comma-separated parts of a call's arguments written after its '(' (commas inside
    brackets not counted), up to the ')' that closes it or the end of the text."""
    parts, depth, cur = [], 0, ""
    for ch in inside:
        if ch in "([":
            depth += 1
        elif ch in ")]":
            if depth == 0:
                break
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    parts.append(cur)
    return parts


def _signature_names(op) -> list:
    """The names a built-in's arguments are given by: those its signature shows
    (maximum(a, b), onehot(indices, V)), else its parameters'."""
    names = [p for p, _ in op.params]
    text = op.signature
    if "(" not in text:
        return names
    shown = [p.split(":")[0].strip() for p in argument_parts(text[text.index("(") + 1:])]
    if len(shown) != len(names):
        return names
    out = [w if re.fullmatch(r"[A-Za-z_]\w*", w) and w not in TYPE_WORDS else n
           for w, n in zip(shown, names)]
    return out if len(set(out)) == len(out) else names


def _default_text(d) -> str:
    """`` = 1e-08`` for a parameter whose default is written 1e-08 (else "")."""
    if d is None:
        return ""
    return " = " + _written(d)


def _written(node) -> str:
    """A TypeAnn or an expression as the program wrote it."""
    return node.loc.source.text[node.loc.start:node.loc.end]


def _is_grad(e) -> bool:
    return type(e) is ast.Call and e.name == "grad"


def _var_targets(stmt, n, scope) -> list:
    """The names to suggest for ``NAME = CALL`` where CALL gives ``n`` values: the vars among
    the call's arguments when they are ``n`` and hold NAME (``w = optim.adamw(w, g, m, v, ...)``
    gives w, m, v), else NAME then v2, v3, ..."""
    e = stmt.expr
    if type(e) is ast.Call:
        seen = []
        for a in e.args:
            if (type(a) is ast.Name and a.name not in seen
                    and isinstance(scope.find(a.name)[0], VarBinding)):
                seen.append(a.name)
        if len(seen) == n and stmt.name in seen:
            return seen
    return [stmt.name] + ["v%d" % (i + 1) for i in range(1, n)]


_assigned = ast.assigned_names     # (in nested blocks too, not in defs)


def _unbound(node):
    """``node`` past the binds a let or a grad puts around a value (a let's own copy of a
    constant is that constant)."""
    while node.kind == OP and node.op is _BIND:
        node = node.args[0]
    return node


def _constant(node, fold=True):
    """The value of ``node`` when the program writes it: a constant, a reshape of one (a
    subscript's tensor of indices, x[[5, 0]], made a column), or one number the program's
    numbers fix (0 - 1, [[0]] + 5, a def's size N at a call: known_number, where --dtype f32
    computes the same), else None."""
    import numpy as np
    node = _unbound(node)
    if node.kind == CONST:
        return node.value
    if fold and all(type(d) is int for d in node.shape) and _cells(node.shape) == 1:
        v = known_number(node, "f32")
        if v is not None:
            return np.full(node.shape, v)
    if node.kind == OP and node.op.name == "reshape" and all(
            type(d) is int for d in node.shape):
        inner = _constant(node.args[0], fold)
        if inner is not None:
            return np.reshape(inner, node.shape)
    return None


def _static_verdict(op, args, attrs, fold=True):
    """What the run-time check of ``op`` (``Op.checks_values``) on ``args`` is sure to give
    from its operands written in the program (constants): True (it passes), the message of
    its failure (an index out of range, a seed that is not whole: an error found before the
    program runs, as a shape error is), or None (not known before it runs).  ``fold``: a
    number the program computes from its numbers counts too (:func:`_constant`)."""
    if op.static_check is None:
        return None
    import numpy as np
    values = [_constant(v, fold) for v in args[:op.n_values]]
    try:
        # a number beyond float32's range (an index or seed of 1e39, rounded as --dtype f32
        # would) is a verdict, not a warning to show the user
        with np.errstate(all="ignore"):
            op.static_check(values, [a.shape for a in args], attrs)
    except OpError as e:
        return e.message
    except Exception:
        return None
    return True


def _checkable_without_broken(stmt) -> bool:
    """Whether a block statement holding statements that could not be read is checked without
    them (each of its other errors found, as at the top level): all but a def whose last
    statement, its return, could not be read (its body would be said to lack one)."""
    if type(stmt) is ast.Params:        # a member that could not be read: the vector unknown
        return not any(type(s) is ast.Broken for s in stmt.body)
    return not (type(stmt) is ast.Def and isinstance(stmt.body, list) and stmt.body
                and type(stmt.body[-1]) is ast.Broken)


def _holds_broken(stmt) -> bool:
    """Does a block statement hold a statement that could not be read and leaves something
    unknown: a name it would define or assign, or a def's last statement (its return)?  (One
    that names nothing -- a stray }, a print -- changes nothing the rest of the block or a
    caller sees: the block is checked without it, and what it defines stays known.)"""
    if not _checkable_without_broken(stmt):
        return True
    stack = [stmt]
    while stack:
        s = stack.pop()
        if type(s) is ast.Broken and s.names:
            return True
        for name in ("body", "orelse"):
            inner = getattr(s, name, None)
            if isinstance(inner, list):
                stack.extend(inner)
    return False


def _assigned_names(stmt):
    out = []
    _assigned([stmt], out)
    return out


_NODES = (ast.Expr, ast.Stmt, ast.Field, ast.TypeAnn)


def _uses(stmt) -> set:
    """The names a statement reads (a qualified name by its module), in nested blocks too; of
    a def, those its body reads from outside (not its own parameters)."""
    if type(stmt) is ast.Def:
        out = set()
        for s in stmt.body if isinstance(stmt.body, list) else [stmt.body]:
            out |= _uses(s)
        for ret in stmt.ret if isinstance(stmt.ret, list) else [stmt.ret] * (stmt.ret is not None):
            out |= _uses(ret)
        own = {d for p in stmt.params for d in p.type.dims if type(d) is str and "." not in d}
        layouts = {p.type.layout.split(".")[0] for p in stmt.params if p.type.layout is not None}
        read = {d.split(".")[0] for p in stmt.params for d in p.type.dims
                if type(d) is str and "." in d}         # tensor[N, cfg.T]: the module cfg
        return (out - {p.name for p in stmt.params} - own) | layouts | read
    out = set()
    stack = [stmt]
    while stack:
        x = stack.pop()
        t = type(x)
        if t is ast.TypeAnn:            # a let's size in a type: tensor[B, 1], tensor[4 * H]
            if x.layout is not None:    # p: theta reads the params block theta (model.theta:
                out.add(x.layout.split(".")[0])     # the module model)
            out.update(d.split(".")[0] for d in x.dims if type(d) is str)   # (cfg.T: cfg)
            for d in x.dims:
                if type(d) is SizeExpr:
                    out.update(d.names)
        elif t is ast.Name:
            out.add(x.name.split(".")[0])
        elif t is ast.Call:
            out.add(x.name.split(".")[0])
            stack.extend(x.args)
        elif t is ast.Assign:           # (p.w1 = v: the params var p)
            out.add(x.name.split(".")[0])
            stack.append(x.expr)
            stack.extend(i for i in x.items or () if isinstance(i, _NODES))     # x[i] = v
        elif t is ast.LetTuple and x.kind == "assign":   # w, m = ...: assigns w and m
            out.update(n.split(".")[0] for n in x.names if n != "_")
            stack.append(x.expr)
            for part in x.items or ():                  # h[l], c[l] = ...: l
                if part is not None:
                    stack.extend(i for i in part[0] if isinstance(i, _NODES))
        elif t is ast.Field:
            stack.append(x.expr)
        else:       # the format strings' fields too (print, save's and load's names, assert)
            for name in getattr(t, "__slots__", ()):
                v = getattr(x, name, None)
                if isinstance(v, _NODES):
                    stack.append(v)
                elif isinstance(v, list):
                    stack.extend(i for i in v if isinstance(i, _NODES))
    return out


def _grad_targets(stmt, out: set):
    """Add to ``out`` the names ``stmt`` passes to grad as values to differentiate with
    respect to (in nested blocks and def bodies too)."""
    stack = [stmt]
    while stack:
        x = stack.pop()
        if type(x) is ast.Call:
            if x.name == "grad":
                out.update(a.name for a in x.args[1:] if type(a) is ast.Name)
            stack.extend(x.args)
            continue
        for name in getattr(type(x), "__slots__", ()):
            v = getattr(x, name, None)
            if isinstance(v, (ast.Expr, ast.Stmt)):
                stack.append(v)
            elif isinstance(v, list):
                stack.extend(i for i in v if isinstance(i, (ast.Expr, ast.Stmt)))
                stack.extend(p.expr for p in v if type(p) is ast.Field)


def _defined_names(stmt):
    t = type(stmt)
    if t in (ast.Let, ast.Def, ast.Var, ast.Params, ast.Member):
        return (stmt.name,)
    if t is ast.LetTuple:
        return tuple(n for n in stmt.names if n != "_") if stmt.kind != "assign" else ()
    if t is ast.Import:
        return (stmt.module,)
    return ()


def _visible(scope):
    out = []
    while scope is not None:
        out.extend(scope.names)
        scope = scope.parent
    return out


def resolve_path(path: str, loc: Loc) -> str:
    """A file name written in the program, relative to the folder of the file it is written in
    (the current folder for standard input and the REPL)."""
    if os.path.isabs(path):
        return path
    folder = loc.source.folder
    return path if folder is None else os.path.join(folder, path)


def _suggest(name, candidates) -> str:
    close = _closest(name, candidates)
    return "; did you mean '%s'?" % close if close else ""


def _closest(name, candidates):
    """The candidate ``name`` is most likely a slip for, or None: one differing only in case
    (``x`` for ``X``, however short), else the closest by spelling."""
    import difflib
    candidates = list(candidates)
    same = [c for c in candidates if c.lower() == name.lower() and c != name]
    if same:
        return same[0]
    # a short name needs a closer match: 'foo' is not a slip for 'floor'
    close = difflib.get_close_matches(name, candidates, n=1, cutoff=0.75 if len(name) > 3 else 0.8)
    return close[0] if close else None


def check(module: ast.Module, program: Program | None = None) -> Program:
    """Check a parsed module into a typed program.  Raises GoatError on the first error."""
    return Checker(program).check_module(module)


__all__ = ["Checker", "Template", "VarBinding", "Module", "Scope", "check", "resolve_path",
           "format_result", "subregions"]
