"""Fusion of elementwise chains: the groups a kernel-generating back end runs as one kernel.

A *fused group* is a tree of elementwise ops (registry entries with a ``kernel`` body) in one
region whose inner values are each read once, by the group itself: nothing else in the region,
no nested block, no ``print``/``save``, no yield and no later iteration reads them, so they
need never exist as arrays.  Its root is the one value read outside; its inputs are whatever
its ops read from outside the group.  ``x - row_mean(x)`` then ``/ sqrt(var + eps)`` then
``* g + b`` in a layer norm is one group of five ops (the two ``row_*`` reductions are not
elementwise and stay apart), so a GPU runs one kernel where NumPy makes five temporaries.

A group may also write *extra outputs* (``multi``): a chain carried to a loop's next step and
read once in the step, by a chain of the same shape, is computed inside that chain's kernel and
written out too (AdamW's new moments, inside the new weight's kernel).  And a matrix product
read only by groups (or other products) leaves its NaNs' sign to them
(:func:`unsigned_products`).

An op whose shape is re-checked when it runs (a ``?`` size) stays out of groups, so its
message keeps its line.  The evaluator (goat/interp/evaluator.py) asks for groups only when
its back end fuses (``fuse_min`` > 0: CuPy fuses even single ops, so that every elementwise op
is a generated kernel keeping goat's NaN and IEEE maximum rules; the test back end fuses
groups of two or more); NumPy and the AOT compiler see the region as it is.
"""
from __future__ import annotations

from collections import Counter

from ..gpu.kernels import SIGNED_NAN
from ..ops.registry import Op
from ..typecheck.program import OP, subregions


def fusible(node) -> bool:
    """Can ``node`` be part of a fused group: an elementwise op with a kernel body, whose
    shape rule need not run again, on tensors (an op on numbers alone is computed as NumPy
    computes it, in the precision an op at a time: CupyBackend's _on_host)."""
    return (node.kind == OP and node.op.kernel is not None and not node.check
            and len(node.args) == node.op.arity and node.shape != ())


def _read_during(region) -> set:
    """Ids of ``region``'s values read in the middle of its plan by something other than its
    own ops: a nested block or an effect (print, save)."""
    read = set()
    for n in region.nodes:
        for sub in subregions(n):
            read |= sub.free_values()
    for sub in region.inner:
        read |= sub.free_values()
    for e in region.effects:
        read.update(u.id for u in e.uses())
    return read


def _read_after(region, keep=()) -> set:
    """Ids of ``region``'s values read after its plan: its yields, and ``keep``."""
    return set(keep) | {y.id for y in region.yields}


def _outside(region, keep=()) -> set:
    """Ids of ``region``'s values read by something other than its own ops."""
    return _read_during(region) | _read_after(region, keep)


def _nan_signed_kernel(be):
    xp = be.xp
    from ..gpu.xp_backend import neg_nan
    nan = neg_nan(be.dtype)
    return lambda x: xp.where(xp.isnan(x), nan, x)


# A matrix product's NaNs given x86's sign (the one a separate pass gives them on a GPU, whose
# BLAS makes its own NaNs positive), as the first instruction of the fused group that reads
# the product (see unsigned_products): not a registry entry, as no program can write it.
NAN_SIGNED = Op(name="nan_signed", arity=1, signature="(nan_signed(x) -> x)",
                doc="x with every NaN replaced by x86's default NaN (sign bit set)",
                shape=lambda s: s, evaluate=_nan_signed_kernel, callable_by_name=False,
                kernel=SIGNED_NAN)


# ops that only move cells (their NaNs keep their bits): a product read through them may
# still leave the sign to the readers beyond
_MOVES = ("reshape", "transpose")


def unsigned_products(region, fused, keep=()) -> set:
    """Ids of ``region``'s matrix products whose NaNs need no pass of their own to get x86's
    sign, and of the reshapes and transposes of them read the same way: every reader is a
    fused group (``fused``, as :func:`groups` gives it, whose kernel then gives the sign as it
    loads the value: :data:`NAN_SIGNED`), another product (whose own NaNs are given the sign
    in their turn, whatever the signs of its operands' NaNs), or a reshape or transpose read
    so in its turn; none is outside the region's ops (printed, yielded, read by a block or
    after the plan).  On a GPU that saves a kernel and a pass over memory per product."""
    member = set()
    for root, group in fused.items():
        member.add(root)
        member |= group[2]
    readers = {}
    for n in region.nodes:
        for a in n.args:
            readers.setdefault(a.id, []).append(n)
    outside = _outside(region, keep)
    ok = {}

    def left_to_readers(n) -> bool:
        """May ``n``'s NaNs stay as the GPU made them (its readers give them the sign)?"""
        if n.id in ok:
            return ok[n.id]
        ok[n.id] = False                        # (no cycles in a region; a guard anyway)
        good = n.id not in outside and n.id in readers and all(
            r.id in member
            or (r.kind == OP and not r.check and (
                r.op.name == "matmul"
                or (r.op.name in _MOVES and r.args[0] is n and left_to_readers(r))))
            for r in readers[n.id])
        ok[n.id] = good
        return good

    out = set()
    for n in region.nodes:                      # in order: a move's operand comes first
        if n.kind != OP or n.check:
            continue
        if n.op.name == "matmul" and left_to_readers(n):
            out.add(n.id)
        elif n.op.name in _MOVES and n.args[0].id in out and left_to_readers(n):
            out.add(n.id)
    return out


def groups(region, keep=(), min_size: int = 2, unsigned=frozenset(), multi=False) -> dict:
    """The fused groups of ``region``: root id -> (spec, input nodes, ids of the group's other
    nodes, ids of its extra outputs), ``spec`` as goat/gpu/kernels.py takes it, for every
    group of at least ``min_size`` ops.  ``keep``:
    ids read after the region's plan by someone else (a loop body reads its pre-region's
    values).  An input in ``unsigned`` (a matrix product left to its readers,
    :func:`unsigned_products`) is read through :data:`NAN_SIGNED`, the group's first
    instructions.

    With ``multi``, a chain whose value is read once in the region, by the group, and also
    after the region's plan (a loop's next state, or ``keep``) joins the group as an *extra
    output*: the kernel writes it as well as the root (an optimizer's new moments, each also
    read by the new weight: one kernel, not three).  Without ``multi`` such a value, like
    any read elsewhere, ends a group."""
    nodes = region.nodes
    here = {n.id for n in nodes}
    uses = Counter()
    for n in nodes:
        for a in n.args:
            uses[a.id] += 1
    during = _read_during(region)
    outside = during | _read_after(region, keep)
    late = _read_after(region, keep) - during      # read only after the plan

    position = {n.id: k for k, n in enumerate(nodes)}
    shape_of = {n.id: n.shape for n in nodes}
    members = {}                    # root id -> member nodes
    extras = {}                     # root id -> ids of its extra outputs
    for n in nodes:
        if not fusible(n):
            continue
        mine = [n]
        more = []
        for a in n.args:
            if a.id in members and a.id in here and uses[a.id] == 1 and (
                    a.id not in outside or (multi and a.id in late)):
                carried = list(extras.get(a.id, ())) + ([a.id] if a.id in outside else [])
                # a kernel writes every output over the root's cells: an extra output must
                # have the root's shape (one broadcast up to it would be written again)
                if any(shape_of[c] != n.shape for c in carried):
                    continue
                mine.extend(members.pop(a.id))
                extras.pop(a.id, None)
                more.extend(carried)
        members[n.id] = mine
        if more:
            extras[n.id] = more

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
        for k, a in enumerate(inputs):
            if a.id in unsigned:
                ref[a.id] = n_in + len(instrs)
                instrs.append((NAN_SIGNED, (k,)))
        for m in mine:
            instrs.append((m.op, tuple(ref[a.id] for a in m.args)))
            ref[m.id] = n_in + len(instrs) - 1
        more = tuple(extras.get(root, ()))
        spec = (n_in, tuple(instrs)) + ((tuple(ref[e] for e in more),) if more else ())
        out[root] = (spec, inputs, inside - {root}, more)
    return out


