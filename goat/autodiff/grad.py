"""``grad``: reverse-mode differentiation as a transformation of the checked program.

``grad(loss, w1, w2, ...)`` is not a tape recorded while the program runs: when the checker
meets it, it walks the typed program backwards from ``loss`` (a node of one element) to the
nodes named ``w1, w2, ...`` and makes, with the same builder the checker uses, the checked
nodes of the gradient -- each op's vector-Jacobian product (its registry entry's ``vjp``)
applied to the cotangent of its result (Griewank & Walther, *Evaluating Derivatives*, 2008,
ch. 3; the rules of JAX's ``lax``).  So the gradient's shapes are known before anything runs
(the REPL's hint and ``goat check --shapes`` show them), the forward values it needs are the
forward nodes themselves (hash-consing finds them: ``exp(x)``'s derivative reuses ``exp(x)``),
and freeing after last use, hoisting out of loops and a later compiler treat its nodes like any
others.

What it differentiates through:

* lets, vars and tuples: they are only names of nodes; a def call: its body was instantiated on
  the arguments, so its nodes are in the program like any others (a ``grad`` written inside a
  def body is carried out when the def is instantiated on actual arguments);
* casts (an annotation, a parameter's declared shape): the identity;
* an ``if``: a new ``if`` on the same condition whose branches recompute the taken branch's
  forward values and then their vector-Jacobian products (the forward branch's values are gone
  when it ends), yielding the cotangents of the values from outside the branch it read;
* a ``for`` loop: backpropagation through time -- the loop itself keeps each iteration's
  starting values and its costly values (a matrix product's) on tapes, one row an iteration
  (or, where it cannot, a copy of it does), then a loop runs backwards through the
  iterations, each computing its cheap values again from its tape rows and differentiated
  (:meth:`_Pass.loop`): the body runs once forward and once backward, as under PyTorch's
  autograd.

The cotangent of a value reached along several paths is the sum along them; a named value the
loss does not depend on at all is an error (its gradient would be zero everywhere: a parameter
left out, or a loss computed before the var's last assignment), and so is one it depends on
only through ``stop_gradient`` (which says so); one it depends on through ``floor`` gets zeros
where the ``floor`` is (its derivative is zero wherever it exists).  With respect to a value,
the derivative is the total one: ``grad(l, w, h)`` with ``h = f(w)`` gives ``dl/dw`` through
``h`` as well.  A name passed to grad is a value of its own (see the checker's ``_own``), so
equal values under other names are not differentiated with it.
"""
from __future__ import annotations

import os

import numpy as np

from ..diagnostics import GoatError, frame_notes
from ..ops.registry import REGISTRY, ZERO
from ..typecheck.program import (ARG, BRANCH, CAST, CONST, GET, LOOP, OP, Region, known_number,
                                 loop_trips, subregions)
from ..typecheck.shapes import RunDim, cells, compatible, format_shape

_ADD = REGISTRY["add"]
_SUB = REGISTRY["subtract"]
_NEGATE = REGISTRY["negate"]
_SPREAD = REGISTRY["broadcast_to"]
_SUM_TO = REGISTRY["sum_to"]
_STACK_NEW = REGISTRY["stack_new"]
_STACK_SET = REGISTRY["stack_set"]
_STACK_GET = REGISTRY["stack_get"]
_TAPE_OPS = (_STACK_NEW, _STACK_SET, _STACK_GET)
_STOP = REGISTRY["stop_gradient"]
_NARROW_BACK = REGISTRY["narrow_backward"]


class Emitter:
    """Makes the checked nodes of derivatives in one region (through the checker's
    :class:`~goat.typecheck.checker.Builder`: hash-consed, hoisted out of loops).  The vjp
    rules in goat/ops/builtins.py are written with it."""

    def __init__(self, builder, loc):
        self.b = builder
        self.loc = loc              # where the forward expression was written (run-time errors)

    def op(self, name, *args, attrs=()):
        return self.b.op(REGISTRY[name], args, self.loc, tuple(attrs))

    def _shaped(self, name, x, attrs, like):
        """An op whose result has ``like``'s shape (its shape attribute may hold sizes known
        only when the program runs)."""
        return self.b.op(REGISTRY[name], (x,), self.loc, attrs, shape=like.shape, check=False)

    def const(self, v: float):
        return self.b.const(float(v), self.loc)

    def add(self, a, b):
        return self.op("add", a, b)

    def sub(self, a, b):
        return self.op("subtract", a, b)

    def mul(self, a, b):
        return self.op("multiply", a, b)

    def div(self, a, b):
        return self.op("divide", a, b)

    def neg(self, a):
        return self.op("negate", a)

    def matmul(self, a, b):
        return self.op("matmul", a, b)

    def T(self, a):
        return self.op("transpose", a)

    def mask(self, name, a, b):
        """The 0/1 comparison ``name`` of a and b, as a constant for differentiation (so that
        a second derivative goes through the rule that made it)."""
        return self.op("stop_gradient", self.op(name, a, b))

    def unbroadcast(self, g, x):
        """``g`` summed over the axes broadcasting added or widened, back to ``x``'s shape
        (a negation is moved after the sum, onto the smaller array: exactly the same numbers)."""
        if g.shape == x.shape and _static(x.shape):
            return g
        if g.kind == OP and g.op is _NEGATE:
            return self.neg(self._shaped("sum_to", g.args[0], (target_of(x),), x))
        return self._shaped("sum_to", g, (target_of(x),), x)

    def expand(self, g, x):
        """``g`` broadcast to ``x``'s shape (a reduction's cotangent spread back)."""
        if g.shape == x.shape and _static(x.shape):
            return g
        return self._shaped("broadcast_to", g, (target_of(x),), x)

    def reshape_like(self, g, x):
        return self._shaped("reshape", g, (target_of(x),), x)

    def size(self, x, axis):
        """The length of ``x`` along ``axis``, as a one-element value."""
        d = x.shape[axis]
        if type(d) is int:
            return self.const(d)
        return self.b.op(REGISTRY["size"], (x,), self.loc, (axis,), shape=(), check=False)

    def fill_like(self, x, value: float):
        """A tensor of ``value`` with ``x``'s shape: a constant when it is small, else the op
        that fills it when the program runs (a loop's gradient accumulators start as zeros of
        the weights' shapes: made when checking, they had cost the check the weights' memory)."""
        if _static(x.shape) and (_cells(x.shape) or 0) <= 4096:
            return self.b.const(np.full(x.shape, value), self.loc)
        name = "zeros" if value == 0 else "ones"
        return self.b.op(REGISTRY[name], (), self.loc, (target_of(x),), shape=x.shape,
                         check=False)


def _static(shape) -> bool:
    return all(type(d) is int for d in shape)


def target_of(x):
    """``x``'s shape as an op's shape attribute: a ``?`` size is read from ``x`` when the op
    runs."""
    return tuple(d if type(d) is int else RunDim(x, j) for j, d in enumerate(x.shape))


_cells = cells


def _inputs(node, nodes):
    """The values ``node`` reads that its value changes with, smoothly or not: an op's value
    arguments (not the values a ``?`` size is read from), a cast's value (not the value whose
    size it is checked against), a loop's initial values and an if's or a loop's values from
    outside (not the loop's bounds or the if's condition, which only choose what runs, nor a
    where's condition, which only chooses values: Op.chooses)."""
    kind = node.kind
    if kind == OP:
        op = node.op
        if "constant" in op.tags:           # stop_gradient: its value is a constant to grad
            return ()
        if op.chooses:                      # where's condition
            return tuple(a for k, a in enumerate(node.args[:op.n_values])
                         if k not in op.chooses)
        return node.args[:op.n_values]
    if kind == CAST:
        return node.args[:1]
    subs = subregions(node)
    if not subs:
        return node.args
    own = node.args[2:] if kind == LOOP else ()
    return tuple(own) + _flows_in(node, nodes)


def _depends(node, nodes) -> tuple:
    """What :func:`_inputs` gives, but for one result of a loop or an if (a GET) the values
    that result alone is computed from (:func:`_result_inputs`): whether it depends on a
    value differentiated is its own, not its siblings' (``if c { acc += E[0, 0]; j = 1 }``
    leaves j a constant)."""
    if node.kind == GET and node.args[0].kind in (LOOP, BRANCH):
        return _result_inputs(node.args[0], node.attrs[0], nodes)
    return _inputs(node, nodes)


def _flows_in(node, nodes, roots=None, reads=None) -> tuple:
    """The outside values that a LOOP's or BRANCH's results are computed from: found by
    walking back from its regions' yields (``roots``: from these of them), so a value only a
    print or a save in the block reads (and what is computed for it) does not count; sorted
    by id.  ``reads(node)``: the values a node is computed from (default :func:`_inputs`,
    those its value changes with)."""
    if reads is None:
        reads = lambda n: _depends(n, nodes)      # noqa: E731
    if node.kind == LOOP:
        body = node.value
        regions = (body.parent, body)
        roots = list(body.yields) if roots is None else list(roots)
    else:
        regions = node.value
        roots = [y for r in regions for y in r.yields] if roots is None else list(roots)
    mine = set()
    for r in regions:
        mine.update(n.id for n in r.nodes)
        mine.update(p.id for p in r.params)
    seen = set()
    outside = {}
    stack = roots
    while stack:
        n = stack.pop()
        if n.id in seen:
            continue
        seen.add(n.id)
        if n.id not in mine:
            outside[n.id] = n
        elif n.kind != ARG:
            stack.extend(reads(n))
    return tuple(outside[i] for i in sorted(outside))


def _reaches(top, target, nodes, stop=True) -> bool:
    """Whether ``top`` is computed from ``target`` at all (through ``stop_gradient`` too;
    ``stop`` False: not through it)."""
    def reads(n):
        """Everything ``n`` is computed from: its arguments (a loop's bounds, an if's
        condition too), and what a loop's or an if's results are computed from (not a value
        only a let of the block nobody reads, a print or a save, takes)."""
        if not stop and n.kind == OP and "constant" in n.op.tags:
            return ()
        if subregions(n):
            return tuple(n.args) + _flows_in(n, nodes, reads=reads)
        return n.args

    seen = set()
    stack = [top]
    while stack:
        n = stack.pop()
        if n is target:
            return True
        if n.id in seen or n.id < target.id:        # a node reads only earlier nodes
            continue
        seen.add(n.id)
        stack.extend(reads(n))
    return False


def _op_words(node) -> str:
    op = node.op
    if op.symbol is not None:
        return "'%s'" % op.symbol
    if _subscript_kind(node) is not None:
        return "a subscript"
    return op.name


def _subscript_kind(node):
    """"index" or "slice" for a narrow or put a subscript x[...] was written as (its wording
    attribute, goat/ops/builtins.py: _start_words), "rows" for the gather of x[t] with t a
    tensor of indices (_rows_words), else None."""
    if node.kind == OP and node.op.name == "gather" and node.attrs:
        return "rows"
    if node.kind != OP or node.op.name not in ("narrow", "put"):
        return None
    what = node.attrs[-1] if len(node.attrs) > (2 if node.op.name == "narrow" else 1) else None
    return what[0] if type(what) is tuple else what


class _Pass:
    """One backward pass over a region (the region ``grad`` is written in, with everything
    around it; or a branch being differentiated, whose outside values are its leaves)."""

    def __init__(self, builder, loc, active, boundary=None):
        self.b = builder
        self.loc = loc                  # the grad call
        self.active = active            # id -> does it depend on a value differentiated?
        self.boundary = boundary        # only this region's nodes are differentiated
        self.nodes = builder.program.nodes
        self.ct = {}                    # id -> cotangent node
        self.mark = len(self.nodes)     # nodes from here on are this pass's own

    def inside(self, node) -> bool:
        boundary = self.boundary
        if boundary is None:
            return True
        if type(boundary) is tuple:         # regions: a loop's body (and loops in it)
            return node.region in boundary
        return node.region is boundary

    def accumulate(self, node, g):
        """Add cotangent ``g`` to ``node``'s.  A sum of two is one op: ``old + (-x)`` is
        written ``old - x`` and a spread (broadcast_to) is left to the addition's own
        broadcasting -- the same numbers, exactly, with fewer passes over the arrays (the
        unused negation or spread is pruned at the end)."""
        old = self.ct.get(node.id)
        if old is None:
            self.ct[node.id] = g
            return
        mark = self.mark

        def made(x, op):            # a negation or spread this pass made
            return x.id >= mark and x.kind == OP and x.op is op
        if made(old, _NEGATE) and not made(g, _NEGATE):
            old, g = g, old
        elif made(old, _SPREAD) and not (made(g, _NEGATE) or made(g, _SPREAD)):
            old, g = g, old
        if made(g, _SPREAD) and old.shape == node.shape:
            g = g.args[0]
        joined = self._join_parts(old, g, node)
        if joined is not None:
            self.ct[node.id] = joined
            return
        if made(g, _NEGATE):
            self.ct[node.id] = self.b.op(_SUB, (old, g.args[0]), node.loc)
        else:
            self.ct[node.id] = self.b.op(_ADD, (old, g), node.loc)

    def _parts(self, x, axis, target):
        """``x`` as [(start, length, part)], when it is the sum of narrow_backward's (narrow's
        vjp) that this pass made, along ``axis`` into ``target``, at starts the program fixes;
        else None."""
        if x.id < self.mark or x.kind != OP:
            return None
        if x.op is _ADD:
            a = self._parts(x.args[0], axis, target)
            b = a and self._parts(x.args[1], axis, target)
            return a + b if b else None
        if x.op is not _NARROW_BACK or x.attrs[:2] != (axis, target) or len(x.attrs) > 2:
            return None
        start = known_number(x.args[1])
        length = x.args[0].shape[axis % len(target)]
        if start is None or type(length) is not int:
            return None
        return [(int(start), length, x.args[0])]

    def _join_parts(self, old, g, node):
        """The cotangent ``old + g`` where both are a value's parts put back among zeros
        (the parts split(x, 4, -1) takes, an LSTM's four gates, or a concat's two), and they
        now tile one run of cells: the parts joined by concat (put among zeros only where the
        run is not the whole axis) -- one pass over the value, not a zero-filled copy of it
        per part and an addition per part.  None otherwise (the sum is an addition)."""
        if g.id < self.mark or g.kind != OP or g.op is not _NARROW_BACK or len(g.attrs) > 2:
            return None
        axis, target = g.attrs[0], g.attrs[1]
        if any(type(d) is not int for d in target):
            return None
        parts = self._parts(old, axis, target)
        more = parts and self._parts(g, axis, target)
        if not more:
            return None
        parts = sorted(parts + more, key=lambda p: p[0])
        for (s0, l0, _), (s1, _, _) in zip(parts, parts[1:]):
            if s0 + l0 != s1:
                return None             # not yet one run (or overlapping): an addition
        b = self.b
        loc = node.loc
        whole = parts[0][2]
        for _, _, part in parts[1:]:
            whole = b.op(REGISTRY["concat"], (whole, part), loc, (axis,))
        start, length = parts[0][0], sum(p[1] for p in parts)
        if start == 0 and length == target[axis % len(target)]:
            return whole
        return b.op(_NARROW_BACK, (whole, b.const(float(start), loc)), loc, (axis, target),
                    shape=tuple(target), check=False)

    def run(self, seeds, targets):
        """Cotangents of the nodes in ``targets`` and of the outside nodes (a branch's leaves),
        given ``seeds`` [(node, cotangent)]."""
        nodes = self.nodes
        lo = min(targets) if targets else 0
        visited = {}
        inputs = {}                         # id -> the values it reads (found once)
        stack = [n for n, _ in seeds]
        while stack:
            n = stack.pop()
            if n.id in visited:
                continue
            visited[n.id] = n
            if not self.inside(n) or (self.boundary is None and n.id < lo):
                continue
            ins = inputs[n.id] = _inputs(n, nodes)
            for i in ins:
                if i.id not in visited:
                    stack.append(i)
        order = sorted(visited)
        active = self.active
        for i in order:
            n = visited[i]
            if not self.inside(n):
                active.setdefault(i, False)     # known from the pass around this one
            elif i in targets:
                active[i] = True
            elif self.boundary is None and i < lo:
                active[i] = False
            elif n.kind == GET and n.args[0].kind in (LOOP, BRANCH):
                active[i] = active[n.args[0].id] and any(
                    active.get(a.id, False) for a in _depends(n, nodes))
            else:
                active[i] = any(active.get(a.id, False) for a in inputs[i])
        for n, g in seeds:
            if active.get(n.id):
                self.accumulate(n, g)
        gets = {}                           # if node id -> {yield index: cotangent}
        for i in reversed(order):
            n = visited[i]
            if not active[i] or not self.inside(n):
                continue
            kind = n.kind
            if kind == BRANCH or kind == LOOP:
                if i in gets:
                    (self.branch if kind == BRANCH else self.loop)(n, gets.pop(i))
                continue
            g = self.ct.get(i)
            if g is None:
                continue
            if kind == OP:
                self.op(n, g)
            elif kind == CAST:
                if active.get(n.args[0].id):
                    self.accumulate(n.args[0], g)
            elif kind == GET:
                src = n.args[0]
                if not active.get(src.id):      # a value differentiated with respect to
                    continue
                slot = gets.setdefault(src.id, {})
                k = n.attrs[0]
                slot[k] = g if k not in slot else self.b.op(_ADD, (slot[k], g), n.loc)
            # ARG, CONST: leaves
        return self.ct

    def op(self, n, g):
        op = n.op
        args = n.args[:op.n_values]
        live = [self.active.get(a.id, False) for a in args]
        if not any(live):           # a value differentiated with respect to, made from others
            return
        if op.vjp is None:
            raise self._no_derivative(n, "it has no derivative")
        d = Emitter(self.b, n.loc)
        outs = op.vjp(d, g, n, *args, *n.attrs)
        names = [name for name, kind in op.params if kind == "value"]
        for a, on, c, name in zip(args, live, outs, names):
            if not on or c is ZERO:
                continue
            if c is None:
                raise self._no_derivative(n, "it has no derivative with respect to its "
                                             "argument %s" % name)
            self.accumulate(a, c)

    def _no_derivative(self, n, why) -> GoatError:
        """The error for a path through ``n`` that has no derivative: where ``n`` was written
        (in another file: its file's name), through which def calls, and what to do."""
        here = n.loc.source is self.loc.source
        where = ("on line %d" % n.loc.line if here
                 else "at %s:%d" % (os.path.basename(n.loc.source.path), n.loc.line))
        if n.op in _TAPE_OPS:       # a gradient taken through a loop, differentiated again
            return GoatError("grad cannot differentiate again a gradient taken through the for "
                             "loop %s: a second derivative through a loop is not supported "
                             "(take the inner gradient without the loop, or the outer one with "
                             "respect to values the inner grad does not depend on)" % where,
                             self.loc, notes=frame_notes(n.via, self.loc.source))
        hint = ""
        if here and ("comparison" in n.op.tags or "logical" in n.op.tags):
            hint = ("; its derivative is zero wherever it exists: write stop_gradient(...) "
                    "around the mask to say so")
        elif here and "indices" in n.op.tags:
            hint = ("; it gives column numbers, whose derivative is zero wherever it exists: "
                    "write stop_gradient(...) around it to say so")
        elif here and why.startswith("it has no derivative with respect to its argument "):
            # indices or a seed computed from what is differentiated (floor(w * 3))
            name = why.rsplit(" ", 1)[1]
            kind = _subscript_kind(n)
            if kind is not None and name == "start":     # x[i] with i computed from w
                name = "index" if kind == "index" else "slice's start"
                why = "it has no derivative with respect to its %s" % name
            elif kind == "rows":                            # x[t], t computed from w
                why = "it has no derivative with respect to its indices"
            hint = ("; if computing the %s from the values differentiated is meant, write "
                    "stop_gradient(...) around %s" % (
                        name, "it" if kind is not None else "that argument"))
        notes = frame_notes(n.via, self.loc.source)
        return GoatError("grad cannot differentiate through %s %s: %s%s"
                         % (_op_words(n), where, why, hint), self.loc, notes=notes)

    def branch(self, n, gs):
        """The vjp of an if: a new if on the same condition; each of its branches recomputes
        the forward branch's values, then their cotangents, and yields the cotangents of the
        outside values that branch read."""
        b = self.b
        program = b.program
        nodes = self.nodes
        free = set()
        for r in n.value:
            free |= r.free_values()
        made = []
        for src in n.value:
            region = Region("if", b.region, src.loc)
            sub = b.sub(region)
            sub.effects = False             # the forward branch's prints are not repeated
            sub.local = True                # its copies are its own: they may use only the
                                            # outside values the forward branch used
            mapping = {}
            sub._copy_region(src, mapping, {})
            seeds = []
            for k, g in gs.items():
                y = src.yields[k]
                seeds.append((mapping.get(y.id, y), g))
            inner = _Pass(sub, self.loc, self.active, boundary=region)
            made.append((region, sub, src, inner.run(seeds, set())))
        # the outside values a cotangent reaches in either branch (not every one the branches
        # read: a value only another result is computed from, a metric beside the loss, gets
        # none, and is not differentiated)
        outs = [nodes[i] for i in sorted(free) if self.active.get(i)
                and any(i in cts for _, _, _, cts in made)]
        regions = []
        for region, sub, src, cts in made:
            d = Emitter(sub, src.loc)
            region.yields = [_fit(sub, cts[o.id], o) if o.id in cts else d.fill_like(o, 0.0)
                             for o in outs]
            _sweep(region, region, nodes)   # (the copies no cotangent reads, the sums joined)
            regions.append(region)
        new = program.new_node(b.region, BRANCH, None, (n.args[0],),
                               tuple(o.shape for o in outs), n.loc, value=tuple(regions),
                               via=n.via, attrs=n.attrs)
        for k, o in enumerate(outs):
            self.accumulate(o, b.get(new, k, o.shape))


    def loop(self, n, gs):
        """The vjp of a for loop (backpropagation through time).  ``gs``: the cotangents of
        its results (the carried vars' final values), by index.

        The carried values each iteration starts from are written into tapes, one row an
        iteration (stack_set): by the loop itself, which gains them as carried values
        (:meth:`_tape_in_place`), or, where it cannot, by a copy of it of as many iterations
        (counted from 0, the bounds taken as constants; its prints and saves left out).  A
        loop then runs backwards, from the last iteration to the first: it reads the
        iteration's starting values from the tapes (stack_get), computes the body's values
        again from them -- those the loop itself kept when costly (:meth:`_tape_residuals`),
        read from their tapes -- and then their cotangents, given the carried values'
        cotangents at the iteration's end -- which gives those at its start, carried
        to the iteration before -- and adds up the cotangents of the values from outside the
        loop that the body reads (the weights), carried too.  Only the carried vars the loss
        needs are differentiated (a var the loss does not read, a running count of correct
        answers, is not, even through argmax), only those whose starting values the backward
        steps read are taped (a counter an if reads, which gets no cotangent), and only the
        vars those depend on are computed again; the rest of the body is left out of both
        loops."""
        b = self.b
        program = b.program
        nodes = self.nodes
        if n.id < b.checker.earlier:
            raise GoatError("grad cannot differentiate through the for loop at %s:%d: it ran "
                            "in an earlier input, and the REPL keeps a loop's values only while "
                            "a name needs them; put the loop and the grad in one input (a def, "
                            "or a block: if 1 { ... }), or :load a file that has both"
                            % (n.loc.source.path, n.loc.line), self.loc)
        body = n.value
        pre = body.parent
        lo, hi = n.args[0], n.args[1]
        inits = list(n.args[2:])
        params = body.params                # the index, then the carried vars
        loc = n.loc
        on = _carried_activity(n, self.active, nodes)
        through = [_carried_reads(body, y, nodes, True) for y in body.yields]
        reads = [_carried_reads(body, y, nodes, False) for y in body.yields]
        live = {k for k in gs if on[k]}     # differentiated: what the loss needs, and its
        todo = list(live)                   # values depend on
        while todo:
            for j in through[todo.pop()]:
                if on[j] and j not in live:
                    live.add(j)
                    todo.append(j)
        if not live:
            return
        live = sorted(live)
        taped = sorted(set().union(*(reads[k] for k in live)))
        carried = set(taped)                # computed again: the taped vars and their inputs
        todo = list(taped)
        while todo:
            for j in reads[todo.pop()]:
                if j not in carried:
                    carried.add(j)
                    todo.append(j)
        carried = sorted(carried)
        uid = len(nodes)                    # tells this loop's tapes from any other's
        d = Emitter(b, loc)
        # the bounds as constants (a bound the loss also depends on has no derivative through
        # the loop's count); the iterations are counted from 0 (tape rows, host numbers)
        lo = b.op(_STOP, (lo,), loc)
        hi = b.op(_STOP, (hi,), loc)
        zero = b.const(0.0, loc)
        count = b.op(REGISTRY["maximum"], (b.op(_SUB, (hi, lo), loc), zero), loc)
        trips = loop_trips(n.args[0], n.args[1])
        lead = int(trips) if trips is not None else None
        dead = b.checker.dead_loops
        # the loop itself keeps each iteration's starting values, where it can (one run of
        # the body fewer); else a copy of it does
        tapes = self._tape_in_place(n, taped, count, lead, uid)
        in_place = tapes is not None
        if tapes is None:
            # each tape its own array, written in place: its id attribute (the count of
            # nodes when it is made) keeps hash-consing from making two tapes one, as it would
            # for two vars that start from the same value (var a = h0, var b = h0)
            tapes0 = [b.op(_STACK_NEW, (count, inits[k]), loc,
                           (-1 if lead is None else lead, len(nodes)),
                           shape=(lead,) + tuple(inits[k].shape), check=False) for k in taped]

            # the loop again, keeping each iteration's starting values; a var it does not
            # compute again stands for its initial value, which nothing it keeps reads
            tpre = Region("pre", b.region, body.loc)
            tbody = Region("for", tpre, body.loc)
            tpre.inner.append(tbody)
            if body in dead:            # a loop with no trip: its copies take no index either
                dead.update((tbody,))
            mapping = {k: v for k, v in zip((p.id for p in params[1:]), inits)}
            fb = b.sub(tpre)
            fb.effects = False
            fb._copy_region(pre, mapping, {})
            fb = b.sub(tbody)
            fb.effects = False
            row = program.new_node(tbody, ARG, None, (), (), loc, what=params[0].what)
            tbody.params.append(row)            # iteration 0, 1, ...: the tape's row
            for k in carried:
                p = params[k + 1]
                mapping[p.id] = program.new_node(tbody, ARG, None, (), p.shape, p.loc,
                                                 what=p.what)
                tbody.params.append(mapping[p.id])
            mapping[params[0].id] = fb.op(_ADD, (lo, row), loc)     # the loop's own index
            tape_params = []
            for t in tapes0:
                p = program.new_node(tbody, ARG, None, (), t.shape, loc, what="tape")
                tbody.params.append(p)
                tape_params.append(p)
            fb._copy_region(body, mapping, {})
            written = [fb.op(_STACK_SET, (tp, row, mapping[params[k + 1].id]), loc, (uid,),
                             shape=tp.shape, check=False) for k, tp in zip(taped, tape_params)]
            tbody.yields = ([mapping.get(body.yields[k].id, body.yields[k]) for k in carried]
                            + written)
            _sweep(tpre, tbody, nodes)
            tloop = program.new_node(b.region, LOOP, None,
                                     (zero, count) + tuple(inits[k] for k in carried)
                                     + tuple(tapes0),
                                     tuple(inits[k].shape for k in carried)
                                     + tuple(t.shape for t in tapes0),
                                     loc, value=tbody, via=n.via, attrs=n.attrs)
            tapes = {k: b.get(tloop, len(carried) + j, tapes0[j].shape)
                     for j, k in enumerate(taped)}

        # backwards: at step r, from -count to -1, the iteration -1 - r (its index lo - 1 - r)
        bpre = Region("pre", b.region, body.loc)
        bbody = Region("for", bpre, body.loc)
        bpre.inner.append(bbody)
        if body in dead:
            dead.add(bbody)
        pb = b.sub(bpre)
        pb.effects = False
        pb.local = True                 # its copies are its own (as a branch's vjp's are)
        bb = b.sub(bbody)
        bb.effects = False
        bb.local = True
        r = program.new_node(bbody, ARG, None, (), (), loc, what="loop index")
        bbody.params.append(r)
        ct_params = []
        for k in live:
            p = program.new_node(bbody, ARG, None, (), inits[k].shape, loc, what="cotangent")
            bbody.params.append(p)
            ct_params.append(p)
        mapping = {k: v for k, v in zip((p.id for p in params[1:]), inits)}
        pb._copy_region(pre, mapping, {})
        # the values the body reads from before its first step -- from outside the loop, or
        # computed once in its pre-region (tanh(w @ w)) -- are the leaves of each step's
        # backward pass: their cotangents add up over the steps, and a pre-region value's is
        # carried back through the pre-region once, after the loop (_pre_vjp), not at each step
        for x in bpre.nodes:
            if x.kind != ARG:
                self.active[x.id] = any(self.active.get(a.id, False)
                                        for a in _inputs(x, nodes))
        leaves = {}
        seen = set()
        stack = [body.yields[k] for k in live]
        while stack:
            x = stack.pop()
            if x.id in seen:
                continue
            seen.add(x.id)
            if x.region is body:
                stack.extend(_inputs(x, nodes))
            else:
                x = mapping.get(x.id, x)
                if self.active.get(x.id):
                    leaves[x.id] = x
        leaves = [leaves[i] for i in sorted(leaves)]
        acc_params = []
        for o in leaves:
            p = program.new_node(bbody, ARG, None, (), o.shape, loc, what="gradient")
            bbody.params.append(p)
            acc_params.append(p)
        # r runs from -count to -1: the row, count - 1 down to 0, is -1 - r
        back = bb.op(_SUB, (bb.const(-1.0, loc), r), loc)
        mapping[params[0].id] = bb.op(_ADD, (lo, back), loc)
        starts = {}
        for k in taped:
            start = bb.op(_STACK_GET, (tapes[k], back), loc, (uid,), shape=inits[k].shape,
                          check=False)
            mapping[params[k + 1].id] = start
            starts[k] = start
        bb._copy_region(body, mapping, {})
        seeds = [(mapping.get(body.yields[k].id, body.yields[k]), c)
                 for k, c in zip(live, ct_params)]
        inner = _Pass(bb, self.loc, self.active, boundary=(bbody,))
        cts = inner.run(seeds, {starts[k].id for k in live if k in starts})
        yields = []
        for k, c in zip(live, ct_params):
            g = cts.get(starts[k].id) if k in starts else None
            yields.append(_fit(bb, g, inits[k]) if g is not None
                          else Emitter(bb, loc).fill_like(inits[k], 0.0))
        for o, a in zip(leaves, acc_params):
            g = cts.get(o.id)
            yields.append(bb.op(_ADD, (a, _fit(bb, g, o)), loc) if g is not None else a)
        bbody.yields = yields
        if in_place:
            self._tape_residuals(n, bbody, mapping, inner.mark, back, count, lead, uid)
        _sweep(bpre, bbody, nodes)
        start_cts = []
        for k in live:
            g = gs.get(k)
            start_cts.append(_fit(b, g, inits[k]) if g is not None
                             else d.fill_like(inits[k], 0.0))
        zeros = [d.fill_like(o, 0.0) for o in leaves]
        bloop = program.new_node(b.region, LOOP, None,
                                 (b.op(_NEGATE, (count,), loc), zero) + tuple(start_cts)
                                 + tuple(zeros),
                                 tuple(inits[k].shape for k in live)
                                 + tuple(o.shape for o in leaves),
                                 loc, value=bbody, via=n.via, attrs=n.attrs)
        for j, k in enumerate(live):
            if self.active.get(inits[k].id):
                self.accumulate(inits[k], b.get(bloop, j, inits[k].shape))
        origin = {}                     # a pre-region copy's id -> the node it copies
        for x in pre.nodes:
            origin.setdefault(mapping.get(x.id, x).id, x)
        hoisted = []
        for j, o in enumerate(leaves):
            if o.id not in cts:         # no path to the loss: its sum stays 0
                continue
            total = b.get(bloop, len(live) + j, o.shape)
            if o.region is bpre:
                hoisted.append((origin[o.id], total))
            else:
                self.accumulate(o, total)
        if hoisted:
            self._pre_vjp(pre, hoisted, count, loc, n)

    def _tape_in_place(self, n, taped, count, lead, uid):
        """The tapes of the carried vars ``taped`` (their indices) of loop ``n``, written by
        ``n`` itself: {index: the tape's node}, each iteration's starting value a row -- the
        loop gains a carried tape per var (:meth:`_give_tapes`), so that grad runs the body
        once fewer than with a copy of the loop that keeps them (:meth:`loop`).  A tape an earlier grad of the same loop added is
        shared.  None where the loop cannot gain them: it is in another region than the grad
        (an enclosing block, already built), the REPL may take the statement back (its
        journal), the values a tape is made from are not all computed before the loop, or
        its index does not start from 0 (the row is the index: a body that reads no index
        runs in float32 from any start, one that reads it only below 2**24)."""
        b = self.b
        program = b.program
        region = n.region
        if region is not b.region or program.journal is not None or n.kind != LOOP:
            return None
        if known_number(n.args[0]) != 0.0:
            return None
        known = b.checker.loop_tapes.setdefault(n.id, {})
        need = [k for k in taped if k not in known]
        if not need:
            return {k: b.get(n, *known[k]) for k in taped}
        if not _move_before(region, n, [count]):
            return None
        body = n.value
        where = self._give_tapes(n, [(n.args[2 + k], body.params[k + 1]) for k in need],
                                 count, lead, uid)
        for k, at in zip(need, where):
            known[k] = at               # (its node made again where a prune took it)
        return {k: b.get(n, *known[k]) for k in taped}

    def _give_tapes(self, n, values, count, lead, uid):
        """Make loop ``n`` (in this builder's region) keep, on a tape each, one row an
        iteration (the row its index: it counts from 0), the values ``values`` [(a node before
        the loop of the value's shape, the value in its body)]: each tape a new carried
        value, made (stack_new, moved before the loop) and written (stack_set, at the body's
        end).  Returns each tape's (index among the loop's results, shape)."""
        b = self.b
        program = b.program
        loc = n.loc
        body = n.value
        tapes0 = [b.op(_STACK_NEW, (count, like), loc,
                       (-1 if lead is None else lead, len(program.nodes)),
                       shape=(lead,) + tuple(like.shape), check=False) for like, _ in values]
        if not _move_before(n.region, n, tapes0):
            raise AssertionError("a tape's values follow the loop it is for")
        fb = b.sub(body)
        fb.effects = False
        row = body.params[0]
        first = len(n.shape)
        written = []
        for (_, value), t in zip(values, tapes0):
            p = program.new_node(body, ARG, None, (), t.shape, loc, what="tape")
            body.params.append(p)
            written.append(fb.op(_STACK_SET, (p, row, value), loc, (uid,), shape=t.shape,
                                 check=False))
        body.yields = list(body.yields) + written
        n.args = tuple(n.args) + tuple(tapes0)
        n.shape = tuple(n.shape) + tuple(t.shape for t in tapes0)
        r = body
        while r is not None:        # what the regions read from outside has changed
            r._free = None
            r = r.parent
        return [(first + j, t.shape) for j, t in enumerate(tapes0)]

    def _tape_residuals(self, n, bbody, mapping, mark, back, count, lead, uid):
        """Where loop ``n`` writes its own tapes, have it also keep the values of its body
        that the backward steps (``bbody``, its nodes from ``mark`` on) read and that are
        costly to compute again -- a matrix product's, a reduction's, a draw's (more than 8
        operations a cell) -- one row an iteration, and have the backward steps read those
        rows in place of computing them again from the iteration's starting values (as
        PyTorch's autograd keeps what each op's backward needs); cheap values (elementwise
        ones) are still computed again from what is kept.  Only values of sizes known before
        the run, in a loop of a known count, and not beyond 2**27 cells (1 GiB in float64)
        all told."""
        from ..gpu.auto import _op_cost
        from ..ops.builtins import taped
        b = self.b
        program = b.program
        nodes = program.nodes
        body = n.value
        if lead is None:
            return
        origin = {}                         # a copy's id -> the node of n's body it copies
        for x in body.nodes:
            if x.kind == OP:
                c = mapping.get(x.id)
                if c is not None and c.region is bbody and c.id < mark and c.kind == OP:
                    origin.setdefault(c.id, x)
        if not origin:
            return
        read = set()                        # the copies the backward nodes read
        for x in bbody.nodes:
            if x.id >= mark:
                read.update(a.id for a in x.args if a.id in origin)
                for sub in subregions(x):
                    read.update(i for i in sub.free_values() if i in origin)
        read.update(y.id for y in bbody.yields if y.id in origin)
        need = set()                        # ... and the copies those are computed from
        stack = list(read)
        while stack:
            i = stack.pop()
            if i not in need:
                need.add(i)
                stack.extend(a.id for a in nodes[i].args if a.id in origin)
        chosen = []
        budget = 2 ** 27
        for i in sorted(need):
            c = nodes[i]
            if not (c.op.pure and _static(c.shape)) or "tape" in c.op.tags:
                continue
            size = max(_cells(c.shape), 1)
            flops = _op_cost(c)[0]
            if flops < 8.0 * size or size * max(lead, 1) > budget:
                continue
            budget -= size * max(lead, 1)
            chosen.append(c)
        if not chosen:
            return
        loc = n.loc
        known = b.checker.loop_tapes.setdefault(n.id, {})   # (an earlier grad's are shared)
        new = [c for c in chosen if ("value", origin[c.id].id) not in known]
        if new:
            likes = [b.op(REGISTRY["zeros"], (), loc, (tuple(c.shape),),
                          shape=tuple(c.shape), check=False) for c in new]
            where = self._give_tapes(n, [(like, origin[c.id]) for c, like in zip(new, likes)],
                                     count, lead, uid)
            for c, at in zip(new, where):
                known[("value", origin[c.id].id)] = at
        bb = b.sub(bbody)
        bb.effects = False
        bb.local = True
        swap = {}
        for c in chosen:
            tape = b.get(n, *known[("value", origin[c.id].id)])
            # the row, as c's op of c's arguments: differentiable again through them
            got = bb.op(taped(c.op), (tape, back) + tuple(c.args), loc, c.attrs,
                        shape=tuple(c.shape), check=False)
            # in the copy's place (it is read from there on), the copy itself left to _sweep
            bbody.nodes.remove(got)
            bbody.nodes.insert(bbody.nodes.index(c), got)
            swap[c.id] = got
        _replace_uses(bbody, swap)

    def _pre_vjp(self, pre, seeds, count, loc, n):
        """Carry the cotangents ``seeds`` [(node of ``pre``, cotangent)] that a loop's steps
        added up for the values its pre-region computes back to the values from outside the
        loop that they are computed from: the pre-region computed again, in an ``if`` on
        ``count > 0`` (the pre-region runs only when the loop does: a loop of no steps neither
        computes it nor fails in it, and gives 0s, not 0 * inf)."""
        b = self.b
        program = b.program
        then = Region("if", b.region, pre.loc)
        sub = b.sub(then)
        sub.effects = False
        sub.local = True
        mapping = {}
        sub._copy_region(pre, mapping, {})
        inner = _Pass(sub, self.loc, self.active, boundary=then)
        cts = inner.run([(mapping[x.id], g) for x, g in seeds], set())
        outs = [self.nodes[i] for i in sorted(cts)
                if self.nodes[i].region is not then and self.active.get(i)]
        then.yields = [_fit(sub, cts[o.id], o) for o in outs]
        _sweep(then, then, self.nodes)
        other = Region("if", b.region, pre.loc)
        d = Emitter(b.sub(other), loc)
        other.yields = [d.fill_like(o, 0.0) for o in outs]
        zero = b.const(0.0, loc)
        cond = b.op(REGISTRY["gt"], (count, zero), loc)
        new = program.new_node(b.region, BRANCH, None, (cond,), tuple(o.shape for o in outs),
                               loc, value=(then, other), via=n.via, attrs=(n.attrs[0],))
        for k, o in enumerate(outs):
            self.accumulate(o, b.get(new, k, o.shape))


def _replace_uses(region, swap):
    """Make the nodes of ``region`` and of the regions in it read ``swap[id]`` wherever they
    read the node ``id`` (args, yields); their hash-consing keys, which named the old
    arguments, are dropped."""
    stack = [region]
    while stack:
        r = stack.pop()
        changed = set()
        for x in r.nodes:
            if any(a.id in swap for a in x.args):
                x.args = tuple(swap.get(a.id, a) for a in x.args)
                changed.add(x.id)
            stack.extend(subregions(x))
        stack.extend(r.inner)
        r.yields = [swap.get(y.id, y) for y in r.yields]
        if changed:
            for key in [k for k, v in r.table.items() if v.id in changed]:
                del r.table[key]
        r._free = None


def _move_before(region, n, roots) -> bool:
    """Put the nodes of ``region`` that ``roots`` are computed from and that stand after node
    ``n`` just before it (their order kept), so that ``n`` may read ``roots``; the effects
    after ``n`` keep their places among the nodes that stay.  False, moving nothing, where
    one of them is not a pure op or a constant (a loop, a file's read: its place is its
    meaning)."""
    nodes = region.nodes
    pos = len(nodes) - 1
    while pos >= 0 and nodes[pos] is not n:
        pos -= 1
    if pos < 0:
        return False
    later = {x.id for x in nodes[pos + 1:]}
    need = set()
    stack = list(roots)
    while stack:
        x = stack.pop()
        if x.id not in later or x.id in need:
            continue
        if x.kind != CONST and not (x.kind == OP and x.op.pure):
            return False
        need.add(x.id)
        stack.extend(x.args)
    if not need:
        return True
    old = nodes[:]
    moved = [x for x in old[pos + 1:] if x.id in need]
    nodes[pos:] = moved + [x for x in old[pos:] if x.id not in need]
    at = {x.id: i for i, x in enumerate(nodes)}
    for e in region.effects:
        if e.after > pos:       # after the last node before it that stays
            k = e.after - 1
            while old[k].id in need:
                k -= 1
            e.after = at[old[k].id] + 1
    region._free = None
    return True


def _carried_reads(body, root, nodes, through: bool) -> set:
    """Which of the vars loop body ``body`` carries (their indices, from 0) the value ``root``
    reads within one iteration: through the values it is computed from (``through``: what
    a derivative flows along, :func:`_inputs`), or through anything it reads (an if's
    condition, an index, a loop's bounds too)."""
    own = {p.id: k - 1 for k, p in enumerate(body.params) if k}
    found = set()
    seen = set()
    stack = [root]
    while stack:
        x = stack.pop()
        if x.id in seen:
            continue
        seen.add(x.id)
        if x.id in own:
            found.add(own[x.id])
        elif x.region is body:
            if through and x.kind == GET and x.args[0].kind in (LOOP, BRANCH):
                # one result of a loop or an if in the body: what it alone is computed from
                stack.extend(_result_inputs(x.args[0], x.attrs[0], nodes))
            elif through:
                stack.extend(_inputs(x, nodes))
            else:
                stack.extend(x.args)
                for r in subregions(x):
                    stack.extend(nodes[i] for i in r.free_values())
    return found


def _result_inputs(src, k, nodes) -> tuple:
    """The values result ``k`` of a LOOP or BRANCH ``src`` is computed from (what
    :func:`_inputs` gives for all its results): of a loop, the initial values of the vars
    that var's final value depends on, and the outside values they are computed from; of an
    if, the outside values its branches' k-th yields are computed from."""
    if src.kind == BRANCH:
        return _flows_in(src, nodes, [r.yields[k] for r in src.value])
    body = src.value
    through = {}
    need = {k}
    todo = [k]
    while todo:
        j = todo.pop()
        if j not in through:
            through[j] = _carried_reads(body, body.yields[j], nodes, True)
        for i in through[j]:
            if i not in need:
                need.add(i)
                todo.append(i)
    return (tuple(src.args[2 + j] for j in sorted(need))
            + _flows_in(src, nodes, [body.yields[j] for j in sorted(need)]))


def _sweep(pre, body, nodes):
    """Take out of a loop's pre-region and body (copies grad made) the nodes that its yields
    do not need: what computed a var the copy leaves out, or a cotangent nothing reads."""
    keep = set()
    stack = list(body.yields)
    while stack:
        x = stack.pop()
        if x.id in keep or (x.region is not pre and x.region is not body):
            continue
        keep.add(x.id)
        stack.extend(x.args)
        for r in subregions(x):
            stack.extend(nodes[i] for i in r.free_values())
    for region in (pre, body):
        if all(x.id in keep or x.kind == ARG for x in region.nodes):
            continue
        region.nodes = [x for x in region.nodes if x.id in keep or x.kind == ARG]
        for key in [k for k, v in region.table.items() if v.id not in keep]:
            del region.table[key]
        region.memo.clear()
        region._free = None


def _carried_activity(n, active, nodes) -> list:
    """For each var a loop ``n`` carries, whether it depends on a value differentiated: its
    initial value does, or an iteration makes it depend on one (an outside value that does, or
    another carried var that does), found by repeating until nothing changes."""
    body = n.value
    params = body.params
    inits = n.args[2:]
    on = [bool(active.get(x.id)) for x in inits]
    ordered = list(body.parent.nodes) + list(body.nodes)     # (each in running order)
    own = {p.id for p in params}
    reads = {x.id: _depends(x, nodes) for x in ordered if x.id not in own}
    while True:
        state = {p.id: (k > 0 and on[k - 1]) for k, p in enumerate(params)}
        for x in ordered:
            if x.id in own:
                continue
            state[x.id] = any(state.get(a.id, active.get(a.id, False)) for a in reads[x.id])
        grown = [on[k] or state.get(y.id, active.get(y.id, False))
                 for k, y in enumerate(body.yields)]
        if grown == on:
            return on
        on = grown


def _fit(b, g, like):
    """``g`` at exactly ``like``'s static shape (a cast's cotangent may know more sizes)."""
    if g.shape == like.shape:
        return g
    ok, runtime = compatible(like.shape, g.shape)
    if not ok:
        raise AssertionError("gradient of shape %s for a value of shape %s"
                             % (format_shape(g.shape), format_shape(like.shape)))
    return b.cast(g, like.shape, "the gradient", like.loc, runtime)


def loss_shape_error(shape, loc) -> GoatError:
    """The error for a loss of more than one element, with how to reduce one of its rank."""
    return GoatError(loss_shape_message(shape), loc)


def loss_shape_message(shape) -> str:
    """:func:`loss_shape_error`'s message (also when a ``?`` size shows it as the program
    runs)."""
    how = "sum(x) for its sum, mean(x) for its mean"
    return ("grad needs a loss of one element, got shape %s; reduce it first: %s"
            % (format_shape(shape), how))


def grad(builder, loss, wrt, names, loc):
    """The gradient nodes of ``loss`` with respect to the nodes ``wrt`` (named ``names``),
    made with ``builder``; ``loc`` is the grad call.  Raises GoatError for a loss of more than
    one element or a path with no derivative."""
    cells = _cells(loss.shape)
    if cells is not None and cells != 1:
        raise loss_shape_error(loss.shape, loc)
    if cells is None:           # a ? size: one element, checked when it runs
        loss = builder.cast(loss, (1,) * len(loss.shape), ("loss",), loc, True)
    checker = builder.checker
    outer, checker.grad_site = checker.grad_site, loc     # the size limit blames the grad
    try:
        return _grad(builder, loss, wrt, names, loc)
    finally:
        checker.grad_site = outer


def _grad(builder, loss, wrt, names, loc):
    mark = len(builder.program.nodes)
    d = Emitter(builder, loc)
    seed = d.fill_like(loss, 1.0)
    targets = {w.id for w in wrt}
    grad_pass = _Pass(builder, loc, {})
    cts = grad_pass.run([(loss, seed)], targets)
    for w, name in zip(wrt, names):
        if not grad_pass.active.get(w.id) or not grad_pass.active.get(loss.id):
            nodes = builder.program.nodes
            if _reaches(loss, w, nodes, stop=False):
                raise GoatError("the loss depends on '%s' only through what chooses values (an "
                                "if's or a where's condition, a loop's bounds, the indices "
                                "argsort, argmax_rows or sample_rows give), which has no "
                                "derivative, so its gradient would be zero everywhere"
                                % name, loc)
            if _reaches(loss, w, nodes):
                raise GoatError("the loss depends on '%s' only through stop_gradient, so its "
                                "gradient would be zero everywhere" % name, loc)
            if "." in name:         # grad(l, model.theta), the loss reading var theta
                raise GoatError("the loss does not depend on '%s', so its gradient would be "
                                "zero everywhere: a module's value is not what a var taken "
                                "from it holds (var theta = %s): name the value the loss "
                                "reads, grad(loss, theta)" % (name, name), loc)
            if name in getattr(builder.checker, "grad_vars", ()):
                raise GoatError("the loss does not depend on '%s', so its gradient would be "
                                "zero everywhere: was the loss computed before %s got its "
                                "current value (compute it again after the assignment), or is "
                                "%s not used in it?" % (name, name, name), loc)
            raise GoatError("the loss does not depend on '%s', so its gradient would be zero "
                            "everywhere: %s is not used in it, or only through values that do "
                            "not change with it (a gradient of a linear function of it is "
                            "constant)" % (name, name), loc)
    out = []
    for w in wrt:
        g = cts.get(w.id)
        out.append(d.fill_like(w, 0.0) if g is None else _fit(builder, g, w))
    nodes = builder.program.nodes
    taping = [nodes[i] for i in builder.checker.loop_tapes
              if any(a.id >= mark for a in nodes[i].args)]   # given tapes by this grad
    _prune(builder.program, mark, out, taping)
    return out


def _prune(program, mark, outputs, loops=()):
    """Take out the nodes this grad made (ids from ``mark``) that no gradient uses: a vjp
    rule gives every argument its cotangent, and those of arguments that do not depend on the
    differentiated values (a constant, the data) are not wanted.  What this grad made for
    ``loops`` (earlier loops it gave tapes to write, :meth:`_Pass._give_tapes`) is kept."""
    nodes = program.nodes
    live = set()
    stack = [n for n in outputs if n.id >= mark] + list(loops)
    while stack:
        n = stack.pop()
        if n.id in live:
            continue
        live.add(n.id)          # (a loop of ``loops`` too: its id is below mark, kept)
        for a in n.args:
            if a.id >= mark and a.id not in live:
                stack.append(a)
        # a loop or an if is kept whole: every node of its regions (a loop's pre-region, its
        # body in the pre-region's inner, an if's branches, and those of loops and ifs in
        # them), and what they read from outside
        regions = list(subregions(n))
        while regions:
            r = regions.pop()
            regions.extend(r.inner)
            for m in list(r.nodes) + list(r.yields):
                if m.id >= mark and m.id not in live:
                    stack.append(m)
    dead = [n for n in nodes[mark:] if n.id not in live]
    if not dead:
        return
    regions = {}
    for n in dead:
        regions.setdefault(id(n.region), n.region)
    gone = {n.id for n in dead}
    for region in regions.values():
        region.nodes = [n for n in region.nodes if n.id not in gone]
        for key in [k for k, v in region.table.items() if v.id in gone]:
            del region.table[key]
        region._free = None
