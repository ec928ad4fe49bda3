"""Fusion of elementwise chains: the groups a kernel-generating back end runs as one kernel.

A *fused group* is a tree of elementwise ops (registry entries with a ``kernel`` body) in one
region whose inner values are each read once, by the group itself: nothing else in the region,
no nested block, no ``print``/``save``, no yield and no later iteration reads them, so they
need never exist as arrays.  Its root is the one value read outside; its inputs are whatever
its ops read from outside the group.  ``x - row_mean(x)`` then ``/ sqrt(var + eps)`` then
``* g + b`` in a layer norm is one group of five ops (the two ``row_*`` reductions are not
elementwise and stay apart), so a GPU runs one kernel where NumPy makes five temporaries.

An op whose shape is re-checked when it runs (a ``?`` size) stays out of groups, so its
message keeps its line.  The evaluator (goat/interp/evaluator.py) asks for groups only when
its back end fuses (``fuse_min`` > 0: CuPy fuses even single ops, so that every elementwise op
is a generated kernel keeping goat's NaN and IEEE maximum rules; the test back end fuses
groups of two or more); NumPy and the AOT compiler see the region as it is.
"""
from __future__ import annotations

from collections import Counter

from ..typecheck.program import OP, subregions


def fusible(node) -> bool:
    """Can ``node`` be part of a fused group: an elementwise op with a kernel body, whose
    shape rule need not run again."""
    return (node.kind == OP and node.op.kernel is not None and not node.check
            and len(node.args) == node.op.arity)


def groups(region, keep=(), min_size: int = 2) -> dict:
    """The fused groups of ``region``: root id -> (spec, input nodes, ids of the group's other
    nodes), ``spec`` as goat/gpu/kernels.py takes it, for every group of at least
    ``min_size`` ops.  ``keep``:
    ids read after the region's plan by someone else (a loop body reads its pre-region's
    values); they are never inside a group."""
    nodes = region.nodes
    here = {n.id for n in nodes}
    uses = Counter()
    outside = set(keep)
    for n in nodes:
        for a in n.args:
            uses[a.id] += 1
        for sub in subregions(n):
            outside |= sub.free_values()
    for sub in region.inner:
        outside |= sub.free_values()
    for e in region.effects:
        outside.update(u.id for u in e.uses())
    outside.update(y.id for y in region.yields)

    position = {n.id: k for k, n in enumerate(nodes)}
    members = {}                    # root id -> member nodes
    for n in nodes:
        if not fusible(n):
            continue
        mine = [n]
        for a in n.args:
            if (a.id in members and a.id in here and uses[a.id] == 1 and a.id not in outside):
                mine.extend(members.pop(a.id))
        members[n.id] = mine

    out = {}
    for root, mine in members.items():
        if len(mine) < min_size:
            continue
        mine.sort(key=lambda m: position[m.id])
        inside = {m.id for m in mine}
        inputs, ref = [], {}
        for m in mine:
            for a in m.args:
                if a.id not in inside and a.id not in ref:
                    ref[a.id] = len(inputs)
                    inputs.append(a)
        n_in = len(inputs)
        instrs = []
        for j, m in enumerate(mine):
            instrs.append((m.op, tuple(ref[a.id] for a in m.args)))
            ref[m.id] = n_in + j
        out[root] = ((n_in, tuple(instrs)), inputs, inside - {root})
    return out

