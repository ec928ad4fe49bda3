"""The evaluator: runs a typed program on an array back end.

Each region of the program (the program itself, a loop body, a branch) is a list of nodes in
topological order, so running it is one pass over a flat instruction list, its *plan*, built
once: a loop runs its body's plan once per iteration, with no shape checking, no name lookup and
no dictionary traffic inside.  Every node has one value slot (by its id).  A value is dropped
right after its last use in its region (``goat run`` knows every use before it starts), so an
unrolled 200-step training program runs in the memory of a few steps, and a loop's temporaries
do not outlive their iteration.  Values the loop carries, and values from outside the loop it
reads, live across iterations.

Static checks are not repeated: only nodes the checker marked (a ``?`` dimension made its check
incomplete) run their shape rule again, on actual shapes, raising the same message at the same
line.
"""
from __future__ import annotations

import functools
import math
import os
import sys
from operator import itemgetter

import numpy as np

from ..diagnostics import GoatError, GoatMemoryError, frame_notes
from ..ops.registry import FileName, OpError, identity
from ..typecheck.program import (ARG, BRANCH, CAST, CONST, GET, LOOP, OP, Program,
                                 condition_what, known_number, operand_loc, subregions)
from ..typecheck.shapes import RunDim, RunPoly, ShapeError, compatible, format_shape
from .fmt import field_shape_message
from .printer import format_number, write_memref


def _shape_of(x):
    return getattr(x, "shape", ())


def _in_library(source) -> bool:
    """Was ``source`` read from the standard library's folder?"""
    return bool(source.path) and _library_path(source.path)


@functools.lru_cache(maxsize=256)     # asked once per operation of a compiled program
def _library_path(path: str) -> bool:
    from ..typecheck.modules import stdlib_dir
    return os.path.realpath(path).startswith(os.path.join(os.path.realpath(stdlib_dir()), ""))


def _site(node, loc=None):
    """``(Loc, notes)`` of a run-time error at ``node`` (or an effect), at ``loc`` (default:
    the node's own).  An error inside the standard library is reported at the user's call of
    it, with a note naming the library def and its line: the user wrote the call, not the
    library's onehot (and the library's path depends on the installation)."""
    loc = loc or node.loc
    via = node.via
    if via and _in_library(loc.source):
        for k in range(len(via) - 1, -1, -1):
            frame = via[k]
            if not _in_library(frame[1].source):
                what = ("module %s" % frame[0]) if len(frame) > 2 else frame[0]
                here = frame[1]
                return here, (("in %s, at line %d of the standard library's %s"
                               % (what, loc.line, os.path.basename(loc.source.path)),)
                              + frame_notes(via[:k], here.source))
    return loc, frame_notes(via, loc.source)


def _at(node, loc=None) -> dict:
    """:func:`_site` as GoatError's keyword arguments, ``loc=`` and ``notes=``."""
    loc, notes = _site(node, loc)
    return {"loc": loc, "notes": notes}


def _checked(fn, node):
    """``fn`` preceded by the node's shape rule on the actual shapes."""
    rule = node.op.shape
    attrs = node.attrs

    def run(*xs):
        try:
            rule(*[_shape_of(x) for x in xs], *attrs)
        except ShapeError as e:
            raise GoatError(_op_message(node, e, xs), **_at(node)) from None
        return fn(*xs)
    return run


def _op_message(node, e, xs) -> str:
    """The message of an op whose shape rule fails when it runs: the rule's own, or the one
    the checker gave the node in its own words (``what``, a format whose ``{}`` takes the
    operands' shapes: x[rows, cols]'s tensors of indices that do not pair)."""
    if type(node.what) is str:
        return node.what.format(" and ".join(format_shape(_shape_of(x)) for x in xs))
    return e.message


def _mismatch(what, shape, declared) -> str:
    """The message of a run-time shape check: ``what`` names the value, or is ("var", name)
    for a value assigned to a var (which the checker's own message words)."""
    if what == ("loss",):       # grad's loss, a ? size: the checker's own message
        from ..autodiff.grad import loss_shape_message
        return loss_shape_message(shape)
    if type(what) is tuple and what[0] == "declared":    # its size variables' sizes
        return "%s must have shape %s (%s), got %s" % (what[1], format_shape(declared), what[2],
                                                      format_shape(shape))
    if type(what) is tuple:         # ("var", name), or with the var's own shape after it
        from ..typecheck.checker import _var_shape_message
        return _var_shape_message(what[1], shape, what[2] if len(what) > 2 else declared)
    return "%s must have shape %s, got %s" % (what, format_shape(declared), format_shape(shape))


def _cast_check(node):
    declared, what = node.shape, node.what

    def run(x):
        actual = _shape_of(x)
        ok, _ = compatible(declared, actual)
        if not ok:
            raise GoatError(_mismatch(what, actual, declared), **_at(node))
        return x
    return run


def _same_size_check(node):
    dim, ref_dim, name, what, ref_what = node.value

    def run(x, ref):
        a, b = _shape_of(x)[dim], _shape_of(ref)[ref_dim]
        if a != b:
            if name.startswith("..."):      # a def's leading sizes (tensor[..., N, C])
                raise GoatError("... stands for the same leading sizes in every parameter, but "
                                "a leading size is %d for %s and %d for %s"
                                % (b, ref_what, a, what), **_at(node))
            if what == ref_what:            # tensor[N, N] given a 5x2: the static words
                raise GoatError("size variable %s would be both %d and %d in %s"
                                % (name, b, a, what), **_at(node))
            raise GoatError("size variable %s is %d for %s but %d for %s"
                            % (name, b, ref_what, a, what), **_at(node))
        return x
    return run


def _same_shape_check(node):
    (what,) = node.value

    def run(x, ref):
        a, b = _shape_of(x), _shape_of(ref)
        if a != b:
            raise GoatError(_mismatch(what, a, b), **_at(node))
        return x
    return run


_identity = identity        # an op or cast that passes its value on: compiled as a copy


def _written_number(node) -> bool:
    """Is ``node`` a number written in the program (a constant, or a let's name for one)?"""
    while node.kind == OP and node.op.name == "bind":
        node = node.args[0]
    return node.kind == CONST


def _in_precision(fn, be, values=()):
    """``fn`` (an op computing one number), its result in the back end's precision: NumPy
    makes a float64 scalar of an op on two Python floats (numbers written in the program that
    float32 cannot hold exactly stay Python floats, see XpBackend.constant).  ``values``: for
    an elementwise op, which operands are numbers written in the program, each rounded first,
    as where it meets a float32 value (sin(16777217) is sin of 16777216 in f32; -1e300 -
    -1e300 is -inf - -inf, a NaN)."""
    precise = be.in_precision
    if not any(values):
        return lambda *xs: precise(fn(*xs))
    rounded = be.dtype.type

    def run(*xs):           # (under the run's errstate: 1e300 is inf in float32, quietly)
        return precise(fn(*[rounded(x) if v and type(x) is float else x
                            for x, v in zip(xs, values)]))
    return run


def _located_kind(e) -> bool:
    """Is ``e`` a failure of the program's to report at its line: an op's complaint, or memory
    (NumPy says "array is too big" for a size no machine can address)?  Anything else is a bug
    in goat.  A GoatError (a GoatMemoryError, a MemoryError too) is reported already, at its
    own line: not again at an enclosing loop's or if's."""
    if isinstance(e, GoatError):
        return False
    if isinstance(e, ValueError):
        text = str(e)
        return "array is too big" in text or "Maximum allowed dimension" in text
    return True


def _has_run_attrs(attrs) -> bool:
    """Does an attribute among ``attrs`` hold what only the running program knows: a size
    (RunDim) or a file name with {fields} (FileName)?"""
    for a in attrs:
        if type(a) is tuple:
            for d in a:
                if type(d) is RunDim or type(d) is RunPoly:
                    return True
        elif type(a) is FileName or type(a) is RunDim or type(a) is RunPoly:
            return True                     # (a def's slice of length L, or L - 1)
    return False


def _one_number(be, x, what, loc):
    """A one-element value as a Python float, read on the host by the back end; GoatError
    naming ``what`` otherwise."""
    size = getattr(x, "size", 1)
    if size != 1:
        raise GoatError("%s must be a single number (one element), got shape %s"
                        % (what, format_shape(_shape_of(x))), loc)
    return be.scalar(x)


def _field_number(be, x, node) -> float:
    """The number a {} field of ``node``'s file name holds (FileName); GoatError at the node
    otherwise (as goat compile --aot's runtime reports it: its kernels know the node's site)."""
    if getattr(x, "size", 1) != 1:
        raise GoatError(field_shape_message(_shape_of(x)), **_at(node))
    return be.scalar(x)


def _reads(region, node) -> bool:
    """Whether ``region`` (or a region nested in it) reads ``node``."""
    regions = [region]
    while regions:
        r = regions.pop()
        if any(node in n.args for n in r.nodes) or node in r.yields or \
                any(node in e.uses() for e in r.effects):
            return True
        regions.extend(r.inner)
        for n in r.nodes:
            regions.extend(subregions(n))
    return False


MAX_BOUND = 2 ** 53        # beyond, consecutive whole numbers are not all floats


def _settle_before(be, *values):
    """Before a loop's bounds or an if's condition are read on the host: the checks the back
    end holds (XpBackend.require) are read first, so that one that failed is reported as it
    was placed, not at the loop or the if.  Numbers already on the host need no read, and
    leave the checks held."""
    for v in values:
        if type(v) is not float:
            be.settle()
            return


def _bound(be, x, node, k):
    """Loop bound ``k`` (0: from, 1: to) of LOOP ``node`` as an int, or GoatError."""
    loc = operand_loc(node, k)
    v = _one_number(be, x, "a loop bound", loc)
    limit = be.exact_limit(x)
    if limit is not None and abs(v) >= limit:
        raise GoatError("a loop bound computed in float32 (--dtype f32) must be a whole number "
                        "of magnitude below 2**24 = %d (float32 holds every whole number only "
                        "up to it, so %d may be %d + 1 rounded); got %.17g (write it as a "
                        "number, or run in f64)" % (limit, limit, limit, v), loc)
    if not math.isfinite(v) or v != int(v):
        shown = format_number(v)
        if math.isfinite(v) and float(shown) != v:      # %g rounds it: 2.0000001 shows as 2
            shown += " (%.17g)" % v
        raise GoatError("a loop bound must be a whole number, got %s" % shown, loc)
    if abs(v) > MAX_BOUND:
        from ..ops.rng import _format_seed
        raise GoatError("a loop bound must be a whole number from -%d to %d (the loop index is "
                        "a float, exact up to 2**53), got %s" % (MAX_BOUND, MAX_BOUND,
                                                                 _format_seed(v)),
                        loc)
    return int(v)


def _take(vals, i):
    """The value in slot ``i``, the slot emptied: the caller holds the only reference the
    evaluator had (Op.overwrites)."""
    x = vals[i]
    vals[i] = None
    return x


def _call_line(out, fn, args) -> str:
    """The line of a compiled plan that runs an op: ``v[out] = fn(v[a], ...)``, an argument
    ``~id`` taken out of its slot for the call (Op.overwrites)."""
    return "    v[%d] = %s(%s)" % (out, fn, ", ".join(
        "v[%d]" % a if a >= 0 else "take(v, %d)" % ~a for a in args))


def _sole_refs() -> int:
    """The reference count put's check (goat/ops/builtins.py: _sole) sees for an array held
    by nothing but the call, through both ways the evaluator calls an op (a compiled plan's
    line, _run_plan's call); 0 when an array held by one name more does not count more in
    both, so that a shared array could not be told from one put may write into."""
    from ..ops import builtins

    class Host:
        scalar = staticmethod(float)
    counts = []

    def probe(x):           # shaped as _sole: its parameter, then getrefcount's argument
        counts.append(sys.getrefcount(x))
        return False
    run = builtins._put(Host(), 0, None, probe)
    args = (~0, 1, 2)
    scope = {"take": _take, "f": run}
    exec(compile("def go(v):\n" + _call_line(3, "f", args) + "\n", "<goat probe>", "exec"),
         scope)
    go = scope["go"]

    def plan(vals):         # as _run_plan calls an op that overwrites
        vals[3] = run(_take(vals, ~args[0]), *[vals[a] for a in args[1:]])
    alone, shared = [], []
    for call in (go, plan):
        for into, held in ((alone, False), (shared, True)):
            vals = [np.zeros(2), np.zeros(1), 0.0, None]
            other = vals[0] if held else None
            counts.clear()
            call(vals)
            into.append(counts[0])
            del other
    if all(s > a for a, s in zip(alone, shared)):
        return min(alone)
    return 0


def _overwrites(node, be, frees) -> bool:
    """May ``node``'s op write into its first argument's array?  Its op says it can, the back
    end allows it, the argument's value is read by nothing after this step (its id among the
    ids dropped after it) nor by the op's other arguments, and the op runs as it is (no
    run-time shape check or size attribute wrapped around it)."""
    if node.kind != OP or node.op.overwrites is None or not getattr(be, "overwrites", False):
        return False
    from ..ops.builtins import SOLE_REFS
    if SOLE_REFS[0] is None:
        SOLE_REFS[0] = _sole_refs()
    first = node.args[0].id
    return (first in frees and all(a.id != first for a in node.args[1:]) and not node.check
            and not _has_run_attrs(node.attrs))


def schedule(region, start=0, estart=0, free=True, keep=(), fused=None):
    """The steps of region.nodes[start:] and region.effects[estart:] in program order, and
    what to drop after each: ``(steps, frees)``, ``steps[k]`` = (node, None) or (None,
    effect) (a block argument is no step), ``frees[k]`` the ids whose last use in the region
    is step k (a value nothing reads is dropped at the step that makes it).  The region's
    yields and the ids in ``keep`` (a pre-region's values its loop body reads) are never
    dropped; with ``free`` false nothing is.  ``fused`` (goat/interp/fusion.py's groups):
    each group is one step, at its root, reading the group's inputs; its other nodes are no
    step.  The evaluator and the AOT lowering (goat/aot/lower.py) both run a region by this
    schedule."""
    skip = set()
    if fused:
        for group in fused.values():
            skip |= group[2]
    nodes = region.nodes
    effects = region.effects
    steps = []
    ei = estart
    ne = len(effects)
    for k in range(start, len(nodes)):
        node = nodes[k]
        while ei < ne and effects[ei].after <= k:
            steps.append((None, effects[ei]))
            ei += 1
        if node.kind != ARG and node.id not in skip:
            steps.append((node, None))
    steps.extend((None, e) for e in effects[ei:])
    frees = [()] * len(steps)
    if free:
        mine = {n.id for n in nodes[start:]}
        last_use = {}
        for k, (node, effect) in enumerate(steps):
            if node is not None:
                for a in (fused[node.id][1] if fused and node.id in fused else node.args):
                    last_use[a.id] = k
                for sub in subregions(node):
                    for i in sub.free_values():
                        last_use[i] = k
            else:
                for u in effect.uses():
                    last_use[u.id] = k
        for y in region.yields:
            last_use[y.id] = len(steps)         # read after the plan has run
        for i in keep:
            last_use[i] = len(steps)
        drop = {}
        for nid, k in last_use.items():
            if nid in mine and k < len(steps):
                drop.setdefault(k, []).append(nid)
        for k, (node, _) in enumerate(steps):
            # a value nothing uses (a let never read) is dropped at once
            if node is not None and node.id not in last_use:
                drop.setdefault(k, []).append(node.id)
        for k, ids in drop.items():
            frees[k] = tuple(ids)
    return steps, frees


class Evaluator:
    """Runs the regions and effects of a :class:`Program`.

    ``out`` receives the printed text (None: print nothing); every printed value is also kept
    in ``self.printed`` when ``keep_printed`` is true (the Python API): a NumPy array for
    ``print EXPR``, the line of text for a format ``print "..."``.  ``free`` drops each value
    of the program's top region after its last use; the REPL turns it off and names, at each
    :meth:`run`, the values a later line may still read (values inside loops and branches
    are always dropped).  ``progress``
    (a :class:`goat.progress.Progress`) shows a bar for long top-level loops.
    """

    def __init__(self, program: Program, backend, out=sys.stdout, keep_printed=False, free=True,
                 progress=None):
        self.program = program
        self.be = backend
        self._where = {}            # a compiled region's code -> {its line: node id}
        self.out = out
        self.keep_printed = keep_printed
        self.free = free
        self.progress = progress
        self.printed = []
        self.values = []
        self._done_nodes = 0
        self._done_effects = 0
        self._fns = {}

    # ------------------------------------------------------------------ plans
    def _fn(self, node):
        """The function that computes ``node`` from its inputs' values."""
        kind = node.kind
        if kind == OP:
            if _has_run_attrs(node.attrs):
                return self._run_attrs(node)
            key = node.op.name if not node.attrs else (node.op.name, node.attrs)
            fn = self._fns.get(key)
            if fn is None:
                op = node.op
                if (op.kernel is not None and getattr(self.be, "fuse_min", 0) == 1
                        and len(node.args) == op.arity and not node.attrs):
                    # an elementwise op left out of the fused groups (its shape is checked
                    # again when it runs): still a generated kernel, keeping goat's NaN rules
                    fn = self.be.fuse((op.arity, ((op, tuple(range(op.arity))),)))
                else:
                    fn = op.evaluate(self.be, *node.attrs)
                self._fns[key] = fn
            if node.check:
                fn = _checked(fn, node)
            if node.shape == () and self.be.dtype_name != "f64":
                # (numbers written in the program rounded as values; a loop's index, a count
                # grad's tape rows are computed from, is left exact)
                fn = _in_precision(fn, self.be, tuple(
                    _written_number(a) for a in node.args) if "elementwise" in node.op.tags
                    else ())
            return fn
        if kind == CAST:
            if len(node.args) == 2:
                return _same_shape_check(node) if len(node.value) == 1 else _same_size_check(node)
            return _cast_check(node) if node.check else _identity
        if kind == GET:
            return itemgetter(node.attrs[0])
        if kind == LOOP:
            return self._loop(node)
        if kind == BRANCH:
            return self._branch(node)
        raise TypeError(node)

    def _run_attrs(self, node):
        """An op whose attributes hold what is known only when it runs: sizes (RunDim), read
        from the values of the extra arguments, and a file name with {fields} (FileName),
        made from theirs; then the op runs as usual."""
        op, attrs, be = node.op, node.attrs, self.be
        real = op.n_values          # then the fields' values, then the size sources
        check = node.check
        ids = [a.id for a in node.args]
        where = {nid: ids.index(nid) for nid in ids}

        def run(*values):
            def size(d):
                if type(d) is RunPoly:
                    return d.resolve(size)
                return _shape_of(values[where[d.node.id]])[d.axis] if type(d) is RunDim else d

            def resolve(a):
                if type(a) is tuple:
                    return tuple(size(d) for d in a)
                if type(a) is RunDim or type(a) is RunPoly:
                    return size(a)
                if type(a) is FileName:     # an error in its name is the op's
                    return a.resolve([_field_number(be, values[real + k], node)
                                      for k in range(a.fields)])
                return a
            try:
                resolved = tuple(resolve(a) for a in attrs)
            except ShapeError as e:     # a def's N - 1, negative for this call
                raise GoatError(e.message, **_at(node)) from None
            if check:               # the shape rule, on the sizes now known
                try:
                    op.shape(*[_shape_of(v) for v in values[:op.n_values]], *resolved)
                except ShapeError as e:
                    raise GoatError(_op_message(node, e, values[:op.n_values]),
                                    **_at(node)) from None
            return op.evaluate(be, *resolved)(*values[:real])
        return run

    def _plan(self, region, start=0, estart=0, free=True, keep=()):
        """Instructions for region.nodes[start:] and region.effects[estart:] (see
        :func:`schedule`): (out id, function, argument ids, ids to drop after).  An effect is
        (None, effect, (), drops); a constant (id, value, None, drops).  On a back end that
        fuses, a chain of elementwise ops is one instruction (goat/interp/fusion.py)."""
        be = self.be
        fused = None
        unsigned = ()
        if getattr(be, "fuse_min", 0) and free and start == 0:
            from .fusion import groups, unsigned_products
            fused = groups(region, keep, be.fuse_min, multi=True)
            if getattr(be, "matmul_unsigned", None) is not None:
                # products whose readers give their NaNs the sign (goat/interp/fusion.py)
                unsigned = unsigned_products(region, fused, keep)
                if unsigned:
                    fused = groups(region, keep, be.fuse_min, unsigned, multi=True)
        steps, frees = schedule(region, start, estart, free, keep, fused)
        plan = []
        for (node, effect), fr in zip(steps, frees):
            if node is None:
                plan.append((None, effect, (), fr))
            elif fused and node.id in fused:
                spec, inputs, _, more = fused[node.id]
                out = (node.id,) + more if more else node.id     # extra outputs: a tuple
                plan.append((out, be.fuse(spec), tuple(a.id for a in inputs), fr))
            elif node.kind == CONST:
                value = (be.constant(node.value) if isinstance(node.value, float)
                         else be.asarray(node.value))
                plan.append((node.id, value, None, fr))
            elif node.id in unsigned and node.op.name == "matmul":
                plan.append((node.id, be.matmul_unsigned, tuple(a.id for a in node.args), fr))
            elif _overwrites(node, be, fr):
                # its first argument read by nothing after: taken out of its slot for the call
                # (~id), so that the op may write into it (Op.overwrites)
                plan.append((node.id, node.op.overwrites(be, *node.attrs),
                             (~node.args[0].id,) + tuple(a.id for a in node.args[1:]), fr))
            else:
                plan.append((node.id, self._fn(node), tuple(a.id for a in node.args), fr))
        return plan

    # ------------------------------------------------------------------ running
    def run(self, keep=None):
        """Run every node and effect of the top region not yet run (the REPL calls this after
        each statement).  ``keep``: the ids of the values to keep when the others are dropped
        after their last use, as ``free`` drops them (the REPL: the values names are bound
        to); None: as ``free`` says."""
        program = self.program
        main = program.main
        if keep is None:
            plan = self._plan(main, self._done_nodes, self._done_effects, self.free)
        else:
            plan = self._plan(main, self._done_nodes, self._done_effects, True, keep)
        files = self.be.files
        if files is None or files.outputs is None:      # (outputs: no file is written)
            _check_save_folders(main.nodes[self._done_nodes:],
                                main.effects[self._done_effects:], self.be.dtype_name)
        if len(self.values) < len(program.nodes):
            self.values.extend([None] * (len(program.nodes) - len(self.values)))
        self._done_nodes = len(main.nodes)
        self._done_effects = len(main.effects)
        be = self.be
        be.site = self._current_site
        with be.errstate():
            try:
                self._run_plan(plan)
            except BaseException:
                # a check the back end held (an index on a GPU) came before this error
                first = be.first_failure()
                if first is not None:
                    raise first from None
                raise
            be.settle()
        return self.printed

    def _current_site(self):
        """Where the evaluator is, for a check a back end holds (XpBackend.require): a
        function turning the check's OpError into the GoatError at the node being run, as
        if it had been raised there; None when no node is being run.  Found as
        :meth:`_run_compiled` finds a failing node: by the line of the generated code."""
        f = sys._getframe(1)
        codes = self._where
        run_plan = _RUN_PLAN_CODE
        while f is not None:
            code = f.f_code
            where = codes.get(code)
            if where is not None:
                out = where.get(f.f_lineno)
                break
            if code is run_plan:
                out = f.f_locals.get("out")
                if type(out) is tuple:
                    out = out[0]
                break
            f = f.f_back
        else:
            return None
        if out is None:
            return None
        node = self.program.nodes[out]
        return lambda e: self._located(e, node) if _located_kind(e) else e

    def _compiled(self, plan):
        """A region's plan as one Python function ``run()``: straight-line code, a statement
        per instruction (``v[12] = f12(v[3], v[4])``, ``v[3] = None``), with no dispatch on
        the instruction's kind.  A loop body runs it once per iteration.  A failing op is
        found by the line of the generated code the error came from."""
        lines = ["def run():", "    v = vals"]
        scope = {"vals": self.values, "take": _take}
        where = {}                      # line number -> node id
        for out, fn, args, frees in plan:
            if out is None:
                name = "e%d" % len(lines)
                scope[name] = self._effect_fn(fn)
                lines.append("    %s(v)" % name)
            elif args is None:
                scope["c%d" % out] = fn
                lines.append("    v[%d] = c%d" % (out, out))
            elif type(out) is tuple:        # a fused group with extra outputs
                scope["f%d" % out[0]] = fn
                lines.append("    %s = f%d(%s)" % (", ".join("v[%d]" % o for o in out), out[0],
                                                  ", ".join("v[%d]" % a for a in args)))
                where[len(lines)] = out[0]
            else:
                node = self.program.nodes[out]
                if node.kind == GET:
                    lines.append("    v[%d] = v[%d][%d]" % (out, args[0], node.attrs[0]))
                elif fn is _identity:
                    lines.append("    v[%d] = v[%d]" % (out, args[0]))
                else:
                    scope["f%d" % out] = fn
                    lines.append(_call_line(out, "f%d" % out, args))
                where[len(lines)] = out
            if frees:
                lines.append("    " + "; ".join("v[%d] = None" % f for f in frees))
        lines.append("    return None")
        code = compile("\n".join(lines) + "\n", "<goat region>", "exec")
        exec(code, scope)
        run = scope["run"]
        run.where = where
        self._where[run.__code__] = where
        return run

    def _effect_fn(self, effect):
        run = self._effect
        return lambda vals: run(effect, vals)

    def _run_compiled(self, run):
        try:
            run()
        except (MemoryError, OpError, ValueError) as e:
            if not _located_kind(e):
                raise
            tb = e.__traceback__
            while tb is not None and tb.tb_frame.f_code is not run.__code__:
                tb = tb.tb_next
            if tb is None or tb.tb_lineno not in run.where:
                raise
            raise self._located(e, self.program.nodes[run.where[tb.tb_lineno]]) from None

    def _located(self, e, node):
        """The GoatError for an op's OpError or MemoryError, at the node's line."""
        if isinstance(e, OpError):
            return GoatError(e.message, **_at(node))
        shape = self._actual_shape(node)
        if shape is None:
            return GoatMemoryError("out of memory computing a value of shape %s"
                                   % format_shape(node.shape), **_at(node))
        cells = 1
        for d in shape:
            cells *= d
        size = 4 if self.be.dtype == np.float32 else 8
        return GoatMemoryError("out of memory computing a value of shape %s (%.3g GB)"
                               % (format_shape(shape), cells * size / 1e9), **_at(node))

    def _actual_shape(self, node):
        """The shape a failing node was to have, from its inputs' actual shapes (a ? size
        known only now); None when it cannot be told."""
        if node.kind in (LOOP, BRANCH):
            return None
        shape = node.shape
        if all(type(d) is int for d in shape):
            return shape
        if node.kind != OP or _has_run_attrs(node.attrs):
            return None
        try:
            vals = self.values
            actual = node.op.shape(*[_shape_of(vals[a.id]) for a in node.args], *node.attrs)
        except Exception:
            return None
        return actual if all(type(d) is int for d in actual) else None

    def _run_plan(self, plan):
        vals = self.values
        out = None
        try:
            for out, fn, args, frees in plan:
                if out is None:
                    self._effect(fn, vals)
                elif args is None:
                    vals[out] = fn
                elif type(out) is tuple:    # a fused group with extra outputs
                    for o, x in zip(out, fn(*[vals[a] for a in args])):
                        vals[o] = x
                elif args and args[0] < 0:  # (an Op.overwrites: its first argument taken)
                    vals[out] = fn(_take(vals, ~args[0]), *[vals[a] for a in args[1:]])
                elif len(args) == 2:
                    vals[out] = fn(vals[args[0]], vals[args[1]])
                elif len(args) == 1:
                    vals[out] = fn(vals[args[0]])
                else:
                    vals[out] = fn(*[vals[a] for a in args])
                for f in frees:
                    vals[f] = None
        except (MemoryError, OpError, ValueError) as e:
            if out is None or not _located_kind(e):
                raise
            node = self.program.nodes[out if type(out) is int else out[0]]
            raise self._located(e, node) from None

    def _loop(self, node):
        """The function that runs a LOOP node: (lo, hi, *initial values) -> final values.
        The loop's pre-region runs once, before the first iteration, when there is one."""
        body = node.value
        pre = body.parent
        plan = self._compiled(self._plan(body))
        pre_plan = self._compiled(self._plan(pre, keep=body.free_values())) if pre.nodes else None
        pre_ids = [n.id for n in pre.nodes]
        index = body.params[0].id
        carried = [p.id for p in body.params[1:]]
        yields = [y.id for y in body.yields]
        # the body's own values that flow out stay in their slots after the last iteration:
        # dropped (the LOOP's value holds them) -- not a value from outside the body
        mine = {n.id for n in body.nodes}
        own_yields = [y for y in dict.fromkeys(yields) if y in mine]
        vals = self.values
        run_plan = self._run_compiled
        top = node.region is self.program.main and self.progress is not None
        one = len(carried) == 1
        be = self.be
        const = be.constant
        # in float32 an index from 2**24 up would be rounded (16777217 to 16777216), or be
        # a number that may be rounded (2**24, read as a loop bound or a seed): an error,
        # where the body reads the index
        f32 = getattr(be, "dtype_name", "f64") == "f32" and _reads(body, body.params[0])

        def run(lo, hi, *state):
            _settle_before(be, lo, hi)
            try:
                lo = _bound(be, lo, node, 0)
                hi = _bound(be, hi, node, 1)
                if hi > lo and f32 and max(abs(lo), abs(hi - 1)) >= 2 ** 24:
                    raise GoatError(
                        "a loop index in float32 (--dtype f32) must be of magnitude below "
                        "2**24 = 16777216 (float32 holds every whole number only up to it, and "
                        "16777216 may be 16777217 rounded); this loop's index runs from %d "
                        "to %d (run in f64)" % (lo, hi - 1), node.loc)
            except GoatError as e:
                e.loc, e.notes = _site(node, e.loc)
                raise
            bar = None
            if pre_plan is not None and hi > lo:
                run_plan(pre_plan)
            if top and hi > lo:
                label = node.loc.source.line(node.loc.line).strip().rstrip("{").strip()
                bar = self.progress.loop(hi - lo, "%s (line %d)" % (label, node.loc.line))
            try:
                for i in range(lo, hi):
                    vals[index] = const(float(i))
                    # the last iteration's values are held by their carried slots alone (not
                    # also by their own slots, nor by state): an op may then write into one
                    # its iteration reads last (Op.overwrites: h[t] = v in place)
                    for nid in own_yields:
                        vals[nid] = None
                    if one:
                        vals[carried[0]] = state[0]
                    else:
                        for pid, v in zip(carried, state):
                            vals[pid] = v
                    state = None
                    run_plan(plan)
                    state = [vals[y] for y in yields]
                    if bar is not None:
                        bar.advance()
            finally:
                if bar is not None:
                    bar.close()
            for pid in carried:
                vals[pid] = None
            for nid in pre_ids:
                vals[nid] = None
            for nid in own_yields:
                vals[nid] = None
            vals[index] = None
            return tuple(state)
        return run

    def _branch(self, node):
        """The function that runs a BRANCH node: condition -> the taken branch's yields."""
        then, orelse = node.value
        plans = (self._compiled(self._plan(orelse)), self._compiled(self._plan(then)))
        yields = ([y.id for y in orelse.yields], [y.id for y in then.yields])
        # a branch's own values that flow out: dropped once read (the BRANCH's value holds them)
        owns = tuple([y for y in dict.fromkeys(ys) if y in {n.id for n in r.nodes}]
                     for ys, r in zip(yields, (orelse, then)))
        vals = self.values
        run_plan = self._run_compiled
        be = self.be
        numbers = (float, np.float64, np.float32)
        what = condition_what(node)

        def run(cond):
            if type(cond) in numbers:       # a number on the host: read as it is
                taken = 0 if cond == 0.0 else 1     # NaN: true, as in C
            else:
                _settle_before(be, cond)
                try:
                    taken = 0 if _one_number(be, cond, what,
                                             operand_loc(node, 0)) == 0.0 else 1
                except GoatError as e:
                    e.loc, e.notes = _site(node, e.loc)
                    raise
            run_plan(plans[taken])
            out = tuple([vals[y] for y in yields[taken]])
            for y in owns[taken]:
                vals[y] = None
            return out
        return run

    def value(self, node):
        """The NumPy value of a node already computed (and not freed)."""
        return self.be.to_numpy(self.values[node.id])

    def _effect(self, effect, vals):
        # a check a device back end holds, made before this effect, fails before it shows
        self.be.settle()
        kind = effect.kind
        if kind == "print":
            value = self.be.to_numpy(vals[effect.node.id])
            if self.keep_printed:
                self.printed.append(value.copy())
            if self.out is not None:
                try:
                    write_memref(value, self.out.write)
                except MemoryError:
                    raise GoatMemoryError("out of memory printing a value of shape %s"
                                          % format_shape(value.shape), **_at(effect)) from None
        elif kind == "format":
            text = self._format(effect, effect.data, vals)
            if self.keep_printed:
                self.printed.append(text)
            if self.out is not None:
                self.out.write(text + "\n")
        elif kind == "assert":      # a failed one: in the branch taken where it fails
            raise GoatError(self._format(effect, effect.data, vals), **_at(effect))
        elif kind == "save":
            from .npyio import save_npy
            path, shown = effect.data
            if not isinstance(shown, str):          # a name with {fields}
                shown = self._format(effect, shown, vals, name=True)
                path = shown if os.path.isabs(shown) else os.path.join(path, shown)
            try:
                value = self.be.to_numpy(vals[effect.node.id])
                files = self.be.files       # the Python API's outputs (npyio.MemoryFiles)
                if files is None or not files.save(value, path, shown):
                    save_npy(path, value, shown)
            except OpError as e:
                raise GoatError(e.message, **_at(effect)) from None
        else:
            raise TypeError(kind)

    def _format(self, effect, parts, vals, name=False):
        """The text of a format string's ``parts`` with the values in ``vals`` (of a file
        name, ``name``: a field without a spec writes a whole number's every digit)."""
        from .fmt import format_value
        pieces = []
        for part in parts:
            if isinstance(part, str):
                pieces.append(part)
                continue
            node, spec, loc = part
            x = self.be.to_numpy(vals[node.id])
            if x.size != 1:
                raise GoatError(field_shape_message(x.shape, not name), **_at(effect, loc))
            try:
                pieces.append(format_value(float(x.reshape(())), spec, name))
            except OpError as e:
                raise GoatError(e.message, **_at(effect, loc)) from None
        return "".join(pieces)


_RUN_PLAN_CODE = Evaluator._run_plan.__code__


def _save_folder(effect) -> str | None:
    """The folder a save writes into, where the name written fixes it (``ckpt/w_{step}.npy``:
    ckpt, relative to the program's folder); None where a field names it (``run_{k}/w.npy``)."""
    path, shown = effect.data
    if isinstance(shown, str):
        if os.path.islink(path):        # a link: the folder of the file it names
            return os.path.dirname(os.path.realpath(path)) or None
        return os.path.dirname(path) or None
    head = shown[0] if shown and isinstance(shown[0], str) else ""
    if "/" not in head and not (os.sep != "/" and os.sep in head):
        return None
    folder = os.path.dirname(head)
    return folder if os.path.isabs(folder) else os.path.join(path, folder)


def check_save_folders(program: Program):
    """:func:`_check_save_folders` of a whole program (goat run --aot, before it runs the
    compiled program)."""
    _check_save_folders(program.main.nodes, program.main.effects)


def _check_save_folders(nodes, effects, dtype: str = "f64"):
    """Refuse, before anything runs, a save into a folder that is not there: goat makes no
    folders, so it would fail when it runs -- after a training run of hours, at its first
    checkpoint or its last.  ``nodes`` and ``effects``: those about to run (see
    :func:`save_folders`).  Every such save is reported, in the program's order."""
    errors = []
    for folder, written, effect in save_folders(nodes, effects, dtype):
        if not os.path.isdir(folder):
            path, shown = effect.data
            if isinstance(shown, str) and os.path.islink(path):
                # a link into a folder that is not there: save's own words when it runs
                message = ("cannot save %s: it links to %r, in a directory that does not "
                           "exist (%r); found before anything ran" % (
                               shown, os.readlink(path), folder))
            else:
                message = save_folder_message(written, os.path.exists(folder))
            errors.append(GoatError(message, **_at(effect)))
    if len(errors) == 1:
        raise errors[0]
    if errors:
        from ..diagnostics import GoatErrors
        raise GoatErrors(errors)


def save_folder_message(written: str, exists: bool) -> str:
    """The error of a save into the folder ``written`` (as the program writes it) that is not
    there (``exists``: something else is); the compiled program's runtime says the same."""
    return ("cannot save into '%s': %s (goat makes no folders: make it first; found before "
            "anything ran)" % (written, "it is not a directory" if exists else
                               "no such directory"))


def save_folders(nodes, effects, dtype: str = "f64") -> list:
    """(folder, the folder as written, the first save effect into it) of each folder that the
    saves among ``effects`` and in the blocks of ``nodes`` write into, where their names fix
    it, in the program's order; not those in a branch or a loop that the program's own numbers
    say never runs (``if save_ckpt { ... }`` with ``let save_ckpt = 0``)."""
    found = []
    for effect in _saves_that_may_run(nodes, effects, dtype):
        folder = _save_folder(effect)
        if folder is not None:
            found.append((effect.loc.line, effect.loc.start, folder, effect))
    found.sort(key=lambda f: f[:2])
    out = []
    seen = set()
    for _, _, folder, effect in found:
        if folder not in seen:
            seen.add(folder)
            shown = effect.data[1]
            written = os.path.dirname(shown if isinstance(shown, str) else shown[0])
            out.append((folder, written or folder, effect))
    return out


def _saves_that_may_run(nodes, effects, dtype: str = "f64"):
    """The save effects among ``effects`` and in the blocks of ``nodes`` that the program's
    own numbers do not rule out (computed in the run's precision, ``dtype``)."""
    stack = [(nodes, effects)]
    while stack:
        nodes, effects = stack.pop()
        for effect in effects:
            if effect.kind == "save":
                yield effect
        for node in nodes:
            regions = subregions(node)
            if node.kind == LOOP:
                lo, hi = known_number(node.args[0], dtype), known_number(node.args[1], dtype)
                if lo is not None and hi is not None and not hi > lo:
                    continue                # no iteration
            elif node.kind == BRANCH:
                c = known_number(node.args[0], dtype)
                if c is not None:           # (a NaN holds, as the if takes it)
                    regions = regions[:1] if c != 0 else regions[1:]
            while regions:
                region, regions = regions[0], regions[1:]
                stack.append((region.nodes, region.effects))
                regions = tuple(region.inner) + tuple(regions)


def run_program(program: Program, backend, out=sys.stdout, keep_printed=False):
    """Run a whole checked program once; returns the printed values if ``keep_printed``."""
    ev = Evaluator(program, backend, out=out, keep_printed=keep_printed)
    ev.run()
    return ev.printed


__all__ = ["Evaluator", "run_program", "np"]
