"""The checker: syntax tree -> typed program, finding every shape error before anything runs.

Each statement is checked in order (a name must be defined before it is used):

* ``let NAME = EXPR`` binds NAME to EXPR's node: computed once, however often it is used;
* ``def`` checks its body once, with each parameter at its declared shape, and keeps the body
  as a :class:`Template`; a call instantiates the template on the argument nodes.  Calls inside
  a body stay calls in the template and are memoized per (def, arguments) when instantiated, so
  a deep nest of defs (the book's "first version" of its training program) costs what the
  one-let-per-step version costs;
* ``print EXPR`` records an effect.

Shapes with ``?`` pass the static check when they could fit, and the node is marked to check
again at run time with the same rule and message (LANGUAGE.md Part A, Errors).
"""
from __future__ import annotations

import difflib

from ..diagnostics import GoatError, Loc
from ..lexer import ast
from ..ops import OPERATORS, UNARY_OPERATORS, lookup
from ..ops.registry import builtin_names
from .program import CAST, CONST, OP, Node, Program
from .shapes import (ShapeError, SizeVar, bind, compatible, format_shape, format_type,
                     is_static)

_NEGATE = UNARY_OPERATORS["-"]

# template entry kinds
_G, _O, _C = range(3)         # a node of the program (a let or a constant), an op, a call


class Template:
    """A checked ``def``: parameters with declared shapes, and the body as flat entries.

    Slots 0..n-1 are the parameters; entry j fills slot n + j.  An entry is a tuple
    ``(kind, payload, arg_slots, shape, loc, check)``.
    """

    __slots__ = ("name", "params", "entries", "result", "has_vars", "loc", "index")

    def __init__(self, name, params, loc, index):
        self.name = name
        self.params = params        # [(name, declared shape, loc)]
        self.entries = []
        self.result = None          # slot of the body's value
        self.has_vars = any(isinstance(d, SizeVar) for _, s, _ in params for d in s)
        self.loc = loc
        self.index = index

    @property
    def shape(self):
        n = len(self.params)
        if self.result < n:
            return self.params[self.result][1]
        return self.entries[self.result - n][3]

    def signature(self) -> str:
        """``ln_out(h: tensor[112x8], g: tensor[1x8], t: tensor[1x8]) -> tensor[112x8]``"""
        return "%s(%s) -> %s" % (self.name, ", ".join("%s: %s" % (p, format_type(s))
                                                     for p, s, _ in self.params),
                                format_type(self.shape))


def _shape_error(e: ShapeError, loc: Loc) -> GoatError:
    return GoatError(e.message, loc)


def _subst(shape, env):
    return tuple(env[d.name][0] if isinstance(d, SizeVar) and d.name in env else d for d in shape)


class _Global:
    """Builds nodes of the program itself (hash-consed)."""

    def __init__(self, checker):
        self.checker = checker
        self.program = checker.program
        self._memo = {}
        self._calls = []       # (def name, call Loc) of the calls being expanded, outermost first

    @staticmethod
    def shape(ref):
        return ref.shape

    def const(self, value, loc):
        if isinstance(value, float):
            key = ("s", value.hex())
            shape = ()
        else:
            key = ("a", value.shape, value.tobytes())
            shape = value.shape
        return self.program.intern(key, lambda i: Node(i, CONST, None, (), shape, loc, value=value))

    def global_ref(self, node):
        return node

    def op(self, op, args, loc, shape=None, check=None):
        # the op's name leads the key (the registry keeps the names of the other kinds of key,
        # "s", "a", "cast", "same", from being op names)
        if len(args) == 1:
            key = (op.name, args[0].id)
        else:
            key = (op.name,) + tuple(a.id for a in args)
        node = self.program._table.get(key)
        if node is not None:
            return node
        if shape is None:
            shapes = [a.shape for a in args]
            try:
                shape = op.shape(*shapes)
            except ShapeError as e:
                raise _shape_error(e, loc) from None
            check = not all(is_static(s) for s in shapes)
        via = tuple(self._calls) if check else ()
        return self.program.intern(key, lambda i: Node(i, OP, op, tuple(args), shape, loc, check,
                                                       via=via))

    def cast(self, ref, declared, what, loc, check):
        if ref.shape == declared:
            return ref
        key = ("cast", ref.id, declared, what if check else None)
        via = tuple(self._calls) if check else ()
        return self.program.intern(key, lambda i: Node(i, CAST, None, (ref,), declared, loc,
                                                       check, what=what, via=via))

    def same_size(self, x, dim, ref, ref_dim, name, what, ref_what, loc):
        """``x``, checked when it runs to have dimension ``dim`` equal to ``ref``'s ``ref_dim``
        (a size variable both are bound to, which neither shape knows)."""
        key = ("same", x.id, dim, ref.id, ref_dim)
        spec = (dim, ref_dim, name, what, ref_what)
        via = tuple(self._calls)
        return self.program.intern(key, lambda i: Node(i, CAST, None, (x, ref), x.shape, loc, True,
                                                       value=spec, via=via))

    def call(self, tmpl: Template, args, loc):
        key = (tmpl.index,) + tuple([a.id for a in args])
        hit = self._memo.get(key)
        if hit is not None:
            return hit
        args, env = self.checker.bind_arguments(tmpl, args, loc, self)
        self._calls.append((tmpl.name, loc))
        try:
            result = self._expand(tmpl, args, env)
        finally:
            self._calls.pop()
        if self.program.journal is not None:
            self.program.journal.append((self._memo, key))
        self._memo[key] = result
        return result

    def _expand(self, tmpl: Template, args, env):
        """The node of ``tmpl``'s body with its parameters bound to ``args``."""
        slots = list(args)
        append = slots.append
        has_vars = tmpl.has_vars
        op_ = self.op
        for kind, payload, arg_slots, shape, eloc, check in tmpl.entries:
            if kind == _O:
                if has_vars:
                    shape = _subst(shape, env)
                append(op_(payload, [slots[s] for s in arg_slots], eloc, shape, check))
            elif kind == _G:
                append(payload)
            else:  # _C
                append(self.call(payload, [slots[s] for s in arg_slots], eloc))
        return slots[tmpl.result]


class _Body:
    """Records a def's body as template entries (hash-consed within the body)."""

    def __init__(self, tmpl: Template, checker):
        self.tmpl = tmpl
        self.checker = checker
        self._table = {}
        self._n = len(tmpl.params)

    def shape(self, ref):
        n = self._n
        if ref < n:
            return self.tmpl.params[ref][1]
        return self.tmpl.entries[ref - n][3]

    def _add(self, key, entry):
        slot = self._table.get(key)
        if slot is None:
            slot = self._n + len(self.tmpl.entries)
            self.tmpl.entries.append(entry)
            self._table[key] = slot
        return slot

    def const(self, value, loc):
        return self.global_ref(self.checker.g.const(value, loc))

    def global_ref(self, node):
        return self._add((_G, node.id), (_G, node, (), node.shape, node.loc, False))

    def op(self, op, args, loc):
        shapes = [self.shape(a) for a in args]
        key = (_O, op.name) + tuple(args)
        if key in self._table:
            return self._table[key]
        try:
            shape = op.shape(*shapes)
        except ShapeError as e:
            raise _shape_error(e, loc) from None
        check = not all(is_static(s) for s in shapes)
        return self._add(key, (_O, op, tuple(args), shape, loc, check))

    def call(self, tmpl: Template, args, loc):
        # checks the arguments now, so a mistake is reported at the def, not at its uses
        _, env = self.checker.check_arguments(tmpl, [self.shape(a) for a in args], [loc] * len(args))
        shape = _subst(tmpl.shape, env) if tmpl.has_vars else tmpl.shape
        key = (_C, tmpl.index) + tuple(args)
        return self._add(key, (_C, tmpl, tuple(args), shape, loc, False))


class Checker:
    """Checks statements one at a time into a :class:`Program`.

    ``allow_redefinition`` is for the REPL, where defining a name again replaces it.
    """

    def __init__(self, program: Program | None = None, allow_redefinition: bool = False):
        self.program = program if program is not None else Program()
        self.allow_redefinition = allow_redefinition
        self.globals: dict = {}       # name -> Node (let) or Template (def)
        self.where: dict = {}         # name -> line it was defined on
        self.g = _Global(self)
        self._defining = None         # name of the def whose body is being checked
        self.later: dict = {}         # names the file defines further down -> their line
        self._templates = 0

    # ------------------------------------------------------------------ statements
    def check_module(self, module: ast.Module) -> Program:
        self.look_ahead(module)
        for stmt in module.stmts:
            self.check_stmt(stmt)
        return self.program

    def look_ahead(self, module: ast.Module):
        """Note the names the file defines, so that a use before its definition says so."""
        self.later = {}
        for stmt in module.stmts:
            if isinstance(stmt, (ast.Let, ast.Def)) and stmt.name not in self.later:
                self.later[stmt.name] = stmt.loc.line

    def check_stmt(self, stmt):
        t = type(stmt)
        self.later.pop(getattr(stmt, "name", None), None)
        if t is ast.Let:
            self._new_name(stmt.name, stmt.name_loc)
            node = self.expr(stmt.expr, None, self.g)
            if stmt.type is not None:
                node = self._annotate(stmt, node)
            self.globals[stmt.name] = node
            self.where[stmt.name] = stmt.loc.line
            self.program.lets[stmt.name] = node
            self.program.order.append(stmt.name)
            return node
        if t is ast.Print:
            node = self.expr(stmt.expr, None, self.g)
            self.program.add_effect("print", node, stmt.loc)
            return node
        if t is ast.ExprStmt:
            return self.check_expr(stmt.expr)
        if t is ast.Def:
            tmpl = self._define(stmt)
            self.globals[stmt.name] = tmpl
            self.where[stmt.name] = stmt.loc.line
            self.program.defs[stmt.name] = tmpl
            self.program.order.append(stmt.name)
            return tmpl
        raise TypeError("unknown statement %r" % (stmt,))

    def check_expr(self, expr):
        """The node of a bare expression (the REPL's ``a @ b`` or ``:type``)."""
        return self.expr(expr, None, self.g)

    def _new_name(self, name, loc):
        if lookup(name) is not None:
            raise GoatError("cannot define '%s': it is the name of a built-in function" % name, loc)
        if name in self.globals and not self.allow_redefinition:
            raise GoatError("'%s' is already defined on line %d; a name can be defined only "
                            "once in a file" % (name, self.where[name]), loc)
        if self.allow_redefinition and name in self.globals:
            self.program.lets.pop(name, None)
            self.program.defs.pop(name, None)
            self.program.order.remove(name)

    def _dims(self, ann: ast.TypeAnn, allow_vars: bool):
        dims = []
        for d in ann.dims:
            if isinstance(d, str):
                if not allow_vars:
                    raise GoatError("size variable %s can only appear in the parameters of a def"
                                    % d, ann.loc)
                dims.append(SizeVar(d))
            else:
                dims.append(d)
        return tuple(dims)

    def _annotate(self, stmt: ast.Let, node):
        declared = self._dims(stmt.type, allow_vars=False)
        ok, runtime = compatible(declared, node.shape)
        what = "'%s'" % stmt.name
        if not ok:
            raise GoatError("%s is declared %s, but its value has shape %s"
                            % (what, format_type(declared), format_shape(node.shape)), stmt.type.loc)
        return self.g.cast(node, declared, "%s (declared %s)" % (what, format_type(declared)),
                           stmt.loc, runtime)

    def _define(self, stmt: ast.Def) -> Template:
        self._new_name(stmt.name, stmt.name_loc)
        params = []
        seen = set()
        for p in stmt.params:
            if p.name in seen:
                raise GoatError("parameter '%s' appears twice in %s" % (p.name, stmt.name), p.loc)
            if lookup(p.name) is not None:
                raise GoatError("cannot name a parameter '%s': it is the name of a built-in "
                                "function" % p.name, p.loc)
            seen.add(p.name)
            params.append((p.name, self._dims(p.type, allow_vars=True), p.loc))
        self._templates += 1
        tmpl = Template(stmt.name, params, stmt.loc, self._templates)
        body = _Body(tmpl, self)
        scope = {p: i for i, (p, _, _) in enumerate(params)}
        self._defining = stmt.name
        try:
            tmpl.result = self.expr(stmt.body, scope, body)
        finally:
            self._defining = None
        return tmpl

    # ------------------------------------------------------------------ calls
    def check_arguments(self, tmpl, shapes, locs):
        """Check a call's argument shapes against the parameters' declared shapes.

        Size variables are bound from every argument first (a ``?`` in one argument takes the
        size another argument gives), then each argument is compared with its declared shape
        with the variables filled in.  ``locs`` gives each argument's position (for the caret).
        Returns ([(bound shape, needs a run-time check, phrase naming the argument)], bindings).
        """
        env = {}
        whats = ["argument %s of %s" % (pname, tmpl.name) for pname, _, _ in tmpl.params]
        for (_, declared, _), actual, what, loc in zip(tmpl.params, shapes, whats, locs):
            try:
                bind(declared, actual, env, what)
            except ShapeError as e:
                raise _shape_error(e, loc) from None
        out = []
        for (_, declared, _), actual, what, loc in zip(tmpl.params, shapes, whats, locs):
            bound = _subst(declared, env) if tmpl.has_vars else declared
            ok, runtime = compatible(bound, actual)
            if not ok:
                raise GoatError("%s must have shape %s, got %s"
                                % (what, format_shape(bound), format_shape(actual)), loc)
            out.append((bound, runtime, what))
        return out, env

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
        out = [builder.cast(a, bound, what, loc, runtime) if a.shape != bound else a
               for a, (bound, runtime, what) in zip(args, checked)]
        if tmpl.has_vars:
            for i, j, k, m, name in self.unknown_sizes(tmpl, shapes):
                out[i] = builder.same_size(out[i], j, out[k], m, name, checked[i][2], checked[k][2], loc)
        return out, env

    # ------------------------------------------------------------------ expressions
    def expr(self, e, scope, b):
        """The node (or template slot) for expression ``e``."""
        t = type(e)
        if t is ast.Binary:
            left = self.expr(e.left, scope, b)
            right = self.expr(e.right, scope, b)
            return b.op(OPERATORS[e.op], (left, right), e.loc)
        if t is ast.Name:
            return self._name(e, scope, b)
        if t is ast.Call:
            return self._call(e, scope, b)
        if t is ast.Number:
            return b.const(e.value, e.loc)
        if t is ast.Array:
            return b.const(e.array, e.loc)
        if t is ast.Unary:
            if type(e.operand) is ast.Number:            # fold -12 into a constant
                return b.const(-e.operand.value, e.loc)
            return b.op(_NEGATE, (self.expr(e.operand, scope, b),), e.loc)
        raise TypeError("unknown expression %r" % (e,))

    def _name(self, e: ast.Name, scope, b):
        name = e.name
        if scope is not None and name in scope:
            return scope[name]
        v = self.globals.get(name)
        if isinstance(v, Node):
            return b.global_ref(v)
        if isinstance(v, Template):
            raise GoatError("%s is a function; call it as %s(...)" % (name, name), e.loc)
        if lookup(name) is not None:
            raise GoatError("%s is a built-in function; call it as %s(...)" % (name, name), e.loc)
        if name in self.later:
            raise GoatError("unknown name '%s': it is defined later, on line %d; a name must be "
                            "defined before it is used" % (name, self.later[name]), e.loc)
        candidates = list(self.globals) + (list(scope) if scope else [])
        raise GoatError("unknown name '%s'%s" % (name, _suggest(name, candidates)), e.loc)

    def _call(self, e: ast.Call, scope, b):
        name = e.name
        target = self.globals.get(name)
        if scope is not None and name in scope:
            raise GoatError("'%s' is a parameter (a value), not a function" % name, e.name_loc)
        if isinstance(target, Template):
            arity = len(target.params)
            if len(e.args) != arity:
                raise GoatError("%s takes %d argument%s, got %d"
                                % (name, arity, "" if arity == 1 else "s", len(e.args)), e.loc)
            args = [self.expr(a, scope, b) for a in e.args]
            shapes = [b.shape(a) for a in args]
            if target.has_vars or any(s != d for s, (_, d, _) in zip(shapes, target.params)):
                # static mistakes are shown under the argument itself
                self.check_arguments(target, shapes, [a.loc for a in e.args])
            return b.call(target, args, e.loc)
        if isinstance(target, Node):
            raise GoatError("'%s' is a value, not a function" % name, e.name_loc)
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
            candidates = [k for k, v in self.globals.items() if isinstance(v, Template)]
            raise GoatError("unknown function '%s'%s"
                            % (name, _suggest(name, candidates + builtin_names())), e.name_loc)
        if len(e.args) != op.arity:
            raise GoatError("%s takes %d argument%s, got %d"
                            % (name, op.arity, "" if op.arity == 1 else "s", len(e.args)), e.loc)
        args = [self.expr(a, scope, b) for a in e.args]
        return b.op(op, args, e.loc)


def _suggest(name, candidates) -> str:
    close = difflib.get_close_matches(name, candidates, n=1, cutoff=0.75)
    return "; did you mean '%s'?" % close[0] if close else ""


def check(module: ast.Module, program: Program | None = None) -> Program:
    """Check a parsed module into a typed program.  Raises GoatError on the first error."""
    return Checker(program).check_module(module)

