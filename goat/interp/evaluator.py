"""The evaluator: runs a typed program on an array back end.

The program is a hash-consed DAG in topological order, so running it is one pass over a flat
instruction list: each node is computed once, and a value is dropped right after its last use
(``goat run`` knows every use before it starts), so an unrolled 200-step training program runs
in the memory of a few steps.  Static checks are not repeated: only nodes the checker marked
(a ``?`` dimension made its check incomplete) run their shape rule again, on actual shapes,
raising the same message at the same line.
"""
from __future__ import annotations

import sys

from ..diagnostics import GoatError
from ..typecheck.program import CAST, CONST, OP, Program
from ..typecheck.shapes import ShapeError, compatible, format_shape
from .printer import format_memref


def _shape_of(x):
    return getattr(x, "shape", ())


def _notes(node):
    """Where a failing node came from, when it was made by expanding defs (innermost first).

    A call in the same file as the failing expression is named by its line; one elsewhere (an
    earlier input of the REPL, say) by its path and line.
    """
    here = node.loc.source
    return tuple("in %s, called %s" % (name, "on line %d" % loc.line if loc.source is here
                                       else "at %s:%d" % (loc.source.path, loc.line))
                 for name, loc in reversed(node.via))


def _checked(fn, node):
    """``fn`` preceded by the node's shape rule on the actual shapes."""
    rule = node.op.shape

    def run(*xs):
        try:
            rule(*[_shape_of(x) for x in xs])
        except ShapeError as e:
            raise GoatError(e.message, node.loc, notes=_notes(node)) from None
        return fn(*xs)
    return run


def _cast_check(node):
    declared, what = node.shape, node.what

    def run(x):
        actual = _shape_of(x)
        ok, _ = compatible(declared, actual)
        if not ok:
            raise GoatError("%s must have shape %s, got %s"
                            % (what, format_shape(declared), format_shape(actual)), node.loc,
                            notes=_notes(node))
        return x
    return run


def _same_size_check(node):
    dim, ref_dim, name, what, ref_what = node.value

    def run(x, ref):
        a, b = _shape_of(x)[dim], _shape_of(ref)[ref_dim]
        if a != b:
            raise GoatError("size variable %s is %d for %s but %d for %s"
                            % (name, b, ref_what, a, what), node.loc, notes=_notes(node))
        return x
    return run


def _identity(x):
    return x


class Evaluator:
    """Runs the nodes and effects of a :class:`Program` in order.

    ``out`` receives the printed text (None: print nothing); every printed value is also kept,
    as a NumPy array, in ``self.printed`` when ``keep_printed`` is true (the Python API).
    ``free`` drops each value after its last use; the REPL turns it off, since a later line
    may use any name.
    """

    def __init__(self, program: Program, backend, out=sys.stdout, keep_printed=False, free=True):
        self.program = program
        self.be = backend
        self.out = out
        self.keep_printed = keep_printed
        self.free = free
        self.printed = []
        self.values = []
        self._done_nodes = 0
        self._done_effects = 0
        self._fns = {}

    def _fn(self, node):
        """The function that computes ``node`` from its inputs' values."""
        if node.kind == OP:
            fn = self._fns.get(node.op.name)
            if fn is None:
                fn = self._fns[node.op.name] = node.op.evaluate(self.be)
            if node.check:
                fn = _checked(fn, node)
            return fn
        if node.kind == CAST:
            if len(node.args) == 2:
                return _same_size_check(node)
            return _cast_check(node) if node.check else _identity
        raise TypeError(node)

    def _plan(self, nodes, effects, start):
        """Instructions for nodes[start:] and the effects, interleaved in program order."""
        last_use = {}
        steps = []
        ei = 0
        for offset, node in enumerate(nodes):
            while ei < len(effects) and effects[ei].after <= start + offset:
                steps.append(("effect", effects[ei]))
                ei += 1
            steps.append(("node", node))
        steps.extend(("effect", e) for e in effects[ei:])
        if self.free:
            for k, (kind, item) in enumerate(steps):
                if kind == "node":
                    for a in item.args:
                        last_use[a.id] = k
                else:
                    last_use[item.node.id] = k
        frees = [[] for _ in steps]
        for nid, k in last_use.items():
            frees[k].append(nid)
        # a value nothing uses (a let never read) is dropped at once
        if self.free:
            for k, (kind, item) in enumerate(steps):
                if kind == "node" and item.id not in last_use:
                    frees[k].append(item.id)
        plan = []
        be = self.be
        for (kind, item), fr in zip(steps, frees):
            if kind == "effect":
                plan.append((None, item, (), tuple(fr)))
            elif item.kind == CONST:
                value = item.value if isinstance(item.value, float) else be.asarray(item.value)
                plan.append((item.id, value, None, tuple(fr)))
            else:
                plan.append((item.id, self._fn(item), tuple(a.id for a in item.args), tuple(fr)))
        return plan

    def run(self):
        """Run every node and effect not yet run (the REPL calls this after each statement)."""
        program = self.program
        nodes = program.nodes[self._done_nodes:]
        effects = program.effects[self._done_effects:]
        plan = self._plan(nodes, effects, self._done_nodes)
        vals = self.values
        vals.extend([None] * len(nodes))
        self._done_nodes = len(program.nodes)
        self._done_effects = len(program.effects)
        out = None
        try:
            with self.be.errstate():
                for out, fn, args, frees in plan:
                    if out is None:
                        self._effect(fn, vals)
                    elif args is None:
                        vals[out] = fn
                    elif len(args) == 2:
                        vals[out] = fn(vals[args[0]], vals[args[1]])
                    elif len(args) == 1:
                        vals[out] = fn(vals[args[0]])
                    else:
                        vals[out] = fn(*[vals[a] for a in args])
                    for f in frees:
                        vals[f] = None
        except MemoryError:
            if out is None:
                raise
            node = program.nodes[out]
            cells = 1
            for d in node.shape:
                cells *= d if isinstance(d, int) else 1
            raise GoatError("out of memory computing a value of shape %s (%.3g GB)"
                            % (format_shape(node.shape), cells * 8 / 1e9), node.loc,
                            notes=_notes(node)) from None
        return self.printed

    def value(self, node):
        """The NumPy value of a node already computed (and not freed)."""
        return self.be.to_numpy(self.values[node.id])

    def _effect(self, effect, vals):
        if effect.kind == "print":
            value = self.be.to_numpy(vals[effect.node.id])
            if self.keep_printed:
                self.printed.append(value.copy())
            if self.out is not None:
                self.out.write(format_memref(value))
        else:
            raise TypeError(effect.kind)


def run_program(program: Program, backend, out=sys.stdout, keep_printed=False):
    """Run a whole checked program once; returns the printed values if ``keep_printed``."""
    ev = Evaluator(program, backend, out=out, keep_printed=keep_printed)
    ev.run()
    return ev.printed
