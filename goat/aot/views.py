"""How ``goat run``'s arrays lie in memory, worked out when a program is compiled.

NumPy's matrix product and sums add in an order that depends on the strides of their operands:
``transpose`` is a view (its strides swapped), an elementwise op on a transposed view makes a
column-major result (NumPy's ``order='K'``), and NumPy's matmul picks gemm's transposition
flags, or syrk, from the strides; its sum is pairwise along the axis it iterates innermost and
sequential along the others.  The compiled program keeps every value row-major, but to add in
NumPy's order it must know the interpreter's layout of each operand: :func:`interpreter_views`
gives it, per node, as strides in cells and the node whose buffer the view reads (a view's
``base``).

The rules follow NumPy (numpy/_core/src/multiarray/nditer_constr.c: the iterator's axis
order, ``npyiter_find_best_axis_ordering``, and axis coalescing) and goat's evaluators
(goat/ops/builtins.py: which ops return views).  Where a rule is not modelled the view is
taken as row-major, which is what almost every value is; the cost of a wrong guess is a
last-bit difference, never a wrong shape.
"""
from __future__ import annotations

from ..typecheck.program import ARG, BRANCH, CAST, CONST, GET, LOOP, OP


class View:
    """A value's strides (cells) and the node whose buffer it reads."""
    __slots__ = ("strides", "base")

    def __init__(self, strides, base):
        self.strides = tuple(strides)
        self.base = base

    def __eq__(self, other):
        return (isinstance(other, View) and self.strides == other.strides
                and self.base == other.base)

    def __hash__(self):
        return hash((self.strides, self.base))

    def __repr__(self):
        return "View(%r, %r)" % (self.strides, self.base)


def c_strides(shape) -> tuple:
    out, n = [], 1
    for d in reversed(shape):
        out.append(n)
        n *= d
    return tuple(reversed(out))


def is_c_contiguous(shape, strides) -> bool:
    """NumPy's C-contiguity: axes of length 1 may have any stride."""
    if any(d == 0 for d in shape):
        return True
    n = 1
    for d, s in zip(reversed(shape), reversed(strides)):
        if d != 1 and s != n:
            return False
        n *= d
    return True


def iteration_order(shape, operand_strides) -> list:
    """NumPy's iterator axis order for these operands (strides aligned to ``shape``; 0 where
    an operand is broadcast): the axes innermost first.  A stable insertion sort from the C
    order by the operands' |stride|, where an operand with a zero stride (or an axis of length
    1) has no say, and a conflict between operands keeps the C order."""
    ndim = len(shape)
    # NumPy's axis data runs from the last axis (innermost in C order) to the first
    axes = list(range(ndim - 1, -1, -1))

    def strides_of(axis):
        if shape[axis] == 1:
            return [0] * len(operand_strides)
        return [st[axis] for st in operand_strides]

    perm = list(axes)
    for i0 in range(1, ndim):
        ipos = i0
        a0 = perm[i0]
        s0 = strides_of(a0)
        for i1 in range(i0 - 1, -1, -1):
            s1 = strides_of(perm[i1])
            ambiguous, swap = True, False
            for x0, x1 in zip(s0, s1):
                if x0 != 0 and x1 != 0:
                    if abs(x1) <= abs(x0):
                        swap = False
                    elif ambiguous:
                        swap = True
                    ambiguous = False
            if not ambiguous:
                if swap:
                    ipos = i1
                else:
                    break
        if ipos != i0:
            perm[ipos + 1:i0 + 1] = perm[ipos:i0]
            perm[ipos] = a0
    return perm


def k_order_strides(shape, operand_strides) -> tuple:
    """The strides of a new array NumPy allocates in ``order='K'`` for these operands (the
    result of a ufunc): contiguous in the iterator's axis order."""
    out = [0] * len(shape)
    n = 1
    for axis in iteration_order(shape, operand_strides):
        out[axis] = n
        n *= shape[axis]
    return tuple(out)


def aligned_strides(view_strides, arg_shape, full) -> list:
    """An operand's strides read at each axis of the broadcast shape ``full`` (0 where it is
    broadcast)."""
    pad = len(full) - len(arg_shape)
    out = [0] * pad
    for d, s, f in zip(arg_shape, view_strides, full[pad:]):
        out.append(0 if d == 1 and f != 1 else s)
    return out


def interpreter_views(program, shapes) -> dict:
    """{node id: View} for every node with a tensor value, as ``goat run`` holds it (see the
    module's docstring); ``shapes`` is :func:`goat.aot.lower.resolve_shapes`'s result."""
    views = {}

    def shape_of(nid):
        s = shapes.get(nid)
        return s if type(s) is tuple and all(type(d) is int for d in s) else None

    def fresh(nid):
        s = shape_of(nid)
        return View(c_strides(s) if s is not None else (), nid)

    def region(r):
        for node in r.nodes:
            if node.kind != ARG:
                views[node.id] = one(node)

    def one(node):
        kind = node.kind
        nid = node.id
        shape = shape_of(nid)
        if kind == CONST or shape is None and kind not in (LOOP, BRANCH, GET):
            return fresh(nid)
        args = [views.get(a.id) for a in node.args]
        if kind == CAST:
            return args[0] or fresh(nid)
        if kind == GET:
            inner = args[0]
            if isinstance(inner, tuple) and node.attrs[0] < len(inner):
                return inner[node.attrs[0]] or fresh(nid)
            return fresh(nid)
        if kind == LOOP:
            return loop(node, args)
        if kind == BRANCH:
            outs = []
            for r in node.value:
                region(r)
                outs.append([views.get(y.id) for y in r.yields])
            return tuple(a if a == b else None for a, b in zip(*outs)) if len(outs) == 2 \
                else tuple(outs[0])
        if kind != OP:
            return fresh(nid)
        return op_view(node, args, shape)

    def loop(node, args):
        """A loop's carried values keep the strides they enter with when every iteration
        gives them back so; otherwise they are taken as row-major (found by iterating the
        body's views to a fixed point).  Each is a buffer of its own."""
        body = node.value
        carried = body.params[1:]
        views[body.params[0].id] = View((), body.params[0].id)      # the index: a float

        def row_major(p):
            s = shape_of(p.id)
            return c_strides(s) if s is not None else ()
        state = [v.strides if v is not None else row_major(p) for v, p in zip(args[2:], carried)]
        for _ in range(4):
            for p, st in zip(carried, state):
                views[p.id] = View(st, p.id)
            region(body.parent)
            region(body)
            after = [views.get(y.id) for y in body.yields]
            new = [st if a is not None and a.strides == st else row_major(p)
                   for st, a, p in zip(state, after, carried)]
            if new == state:
                break
            state = new
        return tuple(views.get(y.id) for y in body.yields)

    def op_view(node, args, shape):
        op = node.op
        name = op.name
        nid = node.id
        real = sum(1 for _, k in op.params if k == "value")
        ins = node.args[:real]
        in_shapes = [shape_of(a.id) for a in ins]
        if any(s is None for s in in_shapes) or any(a is None for a in args[:real]):
            return fresh(nid)
        if op.lowering == "alias" and name != "reshape":       # stop_gradient, bind
            return args[0]
        if name == "transpose":
            st = list(args[0].strides)
            st[-1], st[-2] = st[-2], st[-1]
            return View(st, args[0].base)
        if name == "reshape":
            src, s = args[0], in_shapes[0]
            if tuple(s) == tuple(shape):
                return src
            if is_c_contiguous(s, src.strides):
                return View(c_strides(shape), src.base)
            return fresh(nid)               # NumPy copies (row-major)
        if name in ("broadcast_to", "sum_to") and tuple(in_shapes[0]) == tuple(shape):
            return args[0]
        if name == "broadcast_to":
            cells = 1
            for d in shape:
                cells *= d
            st = aligned_strides(args[0].strides, in_shapes[0], shape)
            if cells > 65536:               # goat's broadcast_to: a view of a large array
                return View(st, args[0].base)
            return View(k_order_strides(shape, [st, c_strides(shape)]), nid)
        if "elementwise" in op.tags:
            ops = [aligned_strides(v.strides, s, shape) for v, s in zip(args, in_shapes)]
            return View(k_order_strides(shape, ops), nid)
        return fresh(nid)

    region(program.main)
    return views


def reduction_plan(shape, strides, reduced):
    """How NumPy adds an array of ``shape`` laid out with ``strides`` (``goat run``'s view) over
    the axes ``reduced`` (a set), keeping them: the axes in NumPy's iteration order, innermost
    first, as groups of coalesced axes; the first group is the inner loop.  Returns
    ``(groups, pairwise)``: ``groups`` a list of lists of axes (each group's axes innermost
    first), ``pairwise`` true when the inner loop runs along reduced axes (its numbers are
    summed pairwise, then added to the output cell) rather than along kept ones (each number
    added in turn)."""
    axes = [a for a in iteration_order(shape, [strides]) if shape[a] != 1]
    if not axes:
        return [], True
    # the output, allocated by the iterator: contiguous over the kept axes in iteration order
    ostr, n = {}, 1
    for a in axes:
        if a in reduced:
            ostr[a] = 0
        else:
            ostr[a] = n
            n *= shape[a]
    groups = [[axes[0]]]
    for a in axes[1:]:
        inner = groups[-1][-1]
        same_kind = (a in reduced) == (inner in reduced)
        if (same_kind and strides[a] == strides[inner] * shape[inner]
                and ostr[a] == ostr[inner] * shape[inner]):
            groups[-1].append(a)
        else:
            groups.append([a])
    return groups, groups[0][0] in reduced
