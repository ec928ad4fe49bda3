"""Lowering: the checked program (goat/typecheck/program.py) to an LLVM module.

The compiled program does what the evaluator does, step for step, in the same order
(:func:`goat.interp.evaluator.schedule` gives both the steps of each region and the values to
drop after each):

* every node has a **slot**, a global ``double *`` (``@slots``), holding one reference to its
  value, a buffer of float64 cells with a reference count (goat/aot/runtime/goat_rt.c); a
  slot's reference is released after its last use, so temporaries are freed as the evaluator
  drops them, and a loop's do not outlive their iteration;
* an op is a call of its **kernel** (goat/aot/kernels.py, the registry's ``lowering``
  entries), made once per (op, attributes, input shapes) with constant loop bounds; an op that
  passes its argument on (reshape, stop_gradient, a cast) shares its argument's buffer;
* a region is a function: its straight-line steps (call this kernel into that slot, share a
  value, release one) are *step code*, constant arrays that the runtime's ``goat_exec`` runs
  in order, so a 14,529-line unrolled program is data, not 35,000 calls for LLVM to optimise
  (it compiles in seconds); a ``for`` loop is a counted loop around the call of its body's
  function, its pre-region run once before the first iteration; an ``if`` a branch between
  its two regions' functions;
* ``print``, format strings and ``save`` call the runtime, which writes what ``goat run``
  writes.

Every size must be known when the program is compiled: the checker knows most; the others
(a ``?`` parameter given a known argument) are found here by running the shape rules on the
actual shapes (:func:`resolve_shapes`).  A shape check that fails there is the run-time
error of ``goat run`` at the same step: it is compiled as that error (the program prints what
precedes it, then fails with the same message and status 1).  A size known only when the
program runs (``load`` of a ``tensor[?x3]``) is a compile error.
"""
from __future__ import annotations

import os

import numpy as np

from ..diagnostics import GoatError
from ..interp.evaluator import (_at, _cast_check, _mismatch, _same_shape_check, _site,
                                _same_size_check, schedule)
from ..interp.fmt import field_shape_message
from ..ops.registry import REGISTRY, field_count
from ..typecheck.program import (ARG, BRANCH, CAST, CONST, GET, LOOP, OP, condition_what,
                                 operand_loc, subregions)
from ..typecheck.shapes import RunDim, RunPoly, ShapeError, format_shape
from . import kernels as K

# goat_exec's step codes (goat/aot/runtime/goat_rt.c)
CALL, ALIAS, CONSTANT, RELEASE, FAIL, VIEW, UPDATE = 1, 2, 3, 4, 5, 6, 7


class Fail:
    """A step that fails when it runs: the run-time error ``goat run`` reports there."""

    def __init__(self, message, loc, notes=()):
        self.message = message
        self.loc = loc
        self.notes = notes


DEAD = "dead"           # a value computed only after a step that fails: never reached


def _fake(shape):
    """A value of ``shape`` for the evaluator's own checks (no cells are allocated)."""
    return np.broadcast_to(np.zeros(()), shape)


def _is_static(shape) -> bool:
    return all(type(d) is int for d in shape)


def load_shapes(program):
    """({load node id: the shape its file holds now}, [the loads whose file cannot be read
    now]) for each ``load`` typed with a ``?`` size whose file name has no {fields} and which
    the program does not save itself: ``goat run --aot`` compiles for the files it will
    read, as a JIT would (each file's shape is part of the compiled program's cache key, and
    the compiled load checks it again); a file it cannot read (missing, not an array it
    reads) leaves the program to goat run, which reports it where the load runs, if it does."""
    from ..interp.npyio import npy_shape
    from ..typecheck.program import subregions
    # a file the program saves may not be there yet, or hold another shape then: its loads
    # are not compiled for what is there now
    saved, named = set(), False
    stack = [program.main]
    while stack:
        region = stack.pop()
        for e in region.effects:
            if e.kind == "save":
                if isinstance(e.data[1], str):
                    saved.add(os.path.abspath(e.data[0]))
                else:
                    named = True                # save(w, "w_{step}.npy")
        for node in region.nodes:
            stack.extend(subregions(node))
        stack.extend(region.inner)
    out, unreadable = {}, []
    for node in program.walk():
        if (node.kind == OP and node.op.name == "load" and type(node.attrs[0]) is tuple
                and None in tuple(node.attrs[-1])):
            (path, _), declared = node.attrs[0], tuple(node.attrs[-1])
            if named or os.path.abspath(path) in saved:
                continue
            shape = npy_shape(path, declared)
            if shape is None:
                unreadable.append(node)
            else:
                out[node.id] = shape
    return out, unreadable


def _load_why(node) -> str:
    """Why a ? load cannot be compiled for its file, for its error."""
    if type(node.attrs[0]) is not tuple:
        return "; its file's name, with {fields}, is made when it runs"
    return ("; goat run --aot compiles a load's ? for the file there when it starts, unless "
            "the program may save that file itself (a save of that name, or of a name with "
            "{fields}); goat compile --aot cannot know the file")


def resolve_shapes(program, loads=None) -> dict:
    """Every node's actual shape (a tuple of ints; a tuple of them for a loop or an if), a
    :class:`Fail` where a run-time check fails, or :data:`DEAD` after one.  Raises GoatError
    for a size known only when the program runs.  ``loads``: the shapes of loads typed with
    a ``?`` size, read from their files (:func:`load_shapes`)."""
    shapes = {}
    loads = loads or {}

    def region(r):
        for node in r.nodes:
            if node.kind != ARG:
                shapes[node.id] = one(node)

    def one(node):
        kind = node.kind
        if kind == CONST:
            return tuple(np.shape(node.value))
        ins = [shapes[a.id] for a in node.args]
        if kind == LOOP:
            body = node.value
            inits = ins[2:]
            if any(s is DEAD or isinstance(s, Fail) for s in ins):
                return DEAD
            shapes[body.params[0].id] = ()
            for p, s in zip(body.params[1:], inits):
                shapes[p.id] = s
            region(body.parent)
            region(body)
            return tuple(inits)
        if any(s is DEAD or isinstance(s, Fail) for s in ins):
            return DEAD
        if kind == BRANCH:
            outs = []
            for r in node.value:
                region(r)
                outs.append([shapes[y.id] for y in r.yields])
            result = []
            for k in range(len(node.value[0].yields)):
                good = [o[k] for o in outs if type(o[k]) is tuple]
                result.append(good[0] if good else DEAD)
            return tuple(result)
        if kind == GET:
            s = ins[0][node.attrs[0]]
            return s
        if kind == CAST:
            try:
                if len(node.args) == 2:
                    check = (_same_shape_check(node) if len(node.value) == 1
                             else _same_size_check(node))
                    check(_fake(ins[0]), _fake(ins[1]))
                else:
                    _cast_check(node)(_fake(ins[0]))
            except GoatError as e:
                return Fail(e.message, e.loc, e.notes)
            return ins[0]
        if kind == OP:
            op = node.op
            real = op.n_values
            def size(d):
                if type(d) is RunPoly:
                    return d.resolve(size)
                return shapes[d.node.id][d.axis] if type(d) is RunDim else d
            try:
                attrs = tuple(tuple(size(d) for d in a) if type(a) is tuple else size(a)
                              for a in node.attrs)
                s = tuple(op.shape(*ins[:real], *attrs))
            except ShapeError as e:
                return Fail(e.message, *_site(node))
            if node.id in loads:        # a ? size of a load: its file's, when it compiles
                s = loads[node.id]
                attrs = attrs[:-1] + (s,)
            if not _is_static(s) and op.name == "stack_new":
                raise GoatError("--aot (goat run --aot, goat compile --aot) needs the number of "
                                "iterations of a loop that grad differentiates through when "
                                "it compiles (it keeps each iteration's values), but this "
                                "loop's bounds are known only when the program runs (write "
                                "them as numbers, lets holding numbers, or one a number from "
                                "the other, as i..i + 2; or run it with goat run)",
                                **_at(node))
            if not _is_static(s):
                what = op.name
                raise GoatError("--aot (goat run --aot, goat compile --aot) needs every size "
                                "when it compiles, but the shape %s of this %s is known only "
                                "when the program runs (write its sizes in the type, or run "
                                "it with goat run%s)"
                                % (format_shape(s), what, _load_why(node)
                                   if what == "load" else ""), **_at(node))
            if op.name == "reshape" and not all(type(d) is int for d in attrs[0]):
                node_attrs = (s,)
            else:
                node_attrs = attrs
            static_attrs[node.id] = node_attrs
            return s
        raise GoatError("goat compile --aot cannot compile a node of kind %d" % kind, node.loc)

    static_attrs = {}
    region(program.main)
    shapes["attrs"] = static_attrs
    return shapes


class Lowering:
    """Builds the LLVM module of one program."""

    def __init__(self, program, name="goat", numpy=None, loads=None):
        from llvmlite import ir
        self.ir = ir
        self.program = program
        self.module = ir.Module(name=name)
        self.f64 = ir.DoubleType()
        self.i64 = ir.IntType(64)
        self.i32 = ir.IntType(32)
        self.i8p = ir.IntType(8).as_pointer()
        self.dp = self.f64.as_pointer()
        self.void = ir.VoidType()
        self.shapes = resolve_shapes(program, loads)
        self.attrs = self.shapes.pop("attrs")
        # NumPy's libraries to compute with (goat/aot/numpy_libs.py), or None: own code only
        self.numpy = numpy
        self._runtime = {}
        self._strings = {}
        self._dims = {}
        self._kernels = {}
        self._kernel_fns = []
        self._text = {}
        self._text_blob = []
        self._text_size = 0
        self._const_values = []
        self._segments = 0
        self._sites = {}
        self._consts = 0
        self._fns = 0
        nslots = len(program.nodes)
        self.tuple_slots = {}
        for node in program.walk():
            if node.kind in (LOOP, BRANCH):
                self.tuple_slots[node.id] = nslots
                nslots += len(node.shape)
        self.slots = ir.GlobalVariable(self.module, ir.ArrayType(self.dp, max(nslots, 1)),
                                       "slots")
        self.slots.initializer = ir.Constant(self.slots.value_type, None)
        self.slots.linkage = "internal"
        strty = ir.LiteralStructType([self.i8p, self.i64, self.i64])
        self.fmtbuf = ir.GlobalVariable(self.module, strty, "fmtbuf")
        self.fmtbuf.initializer = ir.Constant(strty, None)
        self.fmtbuf.linkage = "internal"

    # ---------------------------------------------------------------- module-level pieces
    def runtime(self, name, ret, args, var_arg=False):
        fn = self._runtime.get(name)
        if fn is None:
            fnty = self.ir.FunctionType(ret, args, var_arg=var_arg)
            fn = self._runtime[name] = self.ir.Function(self.module, fnty, name)
        return fn

    def _global_bytes(self, data: bytes, prefix="str"):
        ir = self.ir
        ty = ir.ArrayType(ir.IntType(8), len(data))
        g = ir.GlobalVariable(self.module, ty, "%s.%d" % (prefix, len(self._strings)))
        g.initializer = ir.Constant(ty, bytearray(data))
        g.global_constant = True
        g.linkage = "internal"
        g.unnamed_addr = True
        return g

    def cstring(self, builder, text: str):
        """An ``i8*`` to a NUL-terminated copy of ``text`` (one global per distinct text)."""
        g = self._strings.get(text)
        if g is None:
            g = self._strings[text] = self._global_bytes(text.encode("utf-8", "surrogateescape")
                                                         + b"\0")
        return builder.bitcast(g, self.i8p)

    def dims(self, builder, shape):
        """An ``i64*`` to a global array holding ``shape``."""
        shape = tuple(shape)
        g = self._dims.get(shape)
        if g is None:
            ir = self.ir
            ty = ir.ArrayType(self.i64, max(len(shape), 1))
            g = ir.GlobalVariable(self.module, ty, "dims.%d" % len(self._dims))
            g.initializer = ir.Constant(ty, list(shape) or [0])
            g.global_constant = True
            g.linkage = "internal"
            self._dims[shape] = g
        return builder.bitcast(g, self.i64.as_pointer())

    def site(self, builder, loc, notes=()):
        """The error site of ``loc``: goat run's rendering of an error there, the message
        left out (see goat_rt.h)."""
        return self.cstring(builder, self.site_text(loc, notes))

    def const_value(self, value):
        """A constant value: a global block {refs, cells, id, strides, data} (refs never
        reaching zero; id 0: the block is its own array; strides null: row-major); the
        pointer to its cells."""
        ir = self.ir
        arr = np.ascontiguousarray(np.asarray(value, dtype=np.float64)).ravel()
        ty = ir.LiteralStructType([self.i64, self.i64, self.i64, self.i64.as_pointer(),
                                   ir.ArrayType(self.f64, len(arr))])
        g = ir.GlobalVariable(self.module, ty, "const.%d" % self._consts)
        self._consts += 1
        g.initializer = ir.Constant(ty, [ir.Constant(self.i64, 1 << 62),
                                         ir.Constant(self.i64, len(arr)),
                                         ir.Constant(self.i64, 0),
                                         ir.Constant(self.i64.as_pointer(), None),
                                         ir.Constant(ty.elements[4], [float(x) for x in arr])])
        g.linkage = "internal"
        zero = ir.Constant(self.i32, 0)
        return g.gep([zero, ir.Constant(self.i32, 4), zero])

    def kernel(self, node, out_shape, in_shapes, attrs) -> int:
        """The index in the kernel table of ``node``'s op's kernel on these shapes (made
        once)."""
        op = node.op
        key = (op.name, repr(attrs), tuple(in_shapes))
        index = self._kernels.get(key)
        if index is None:
            ir = self.ir
            fnty = ir.FunctionType(self.void, [self.dp] * (1 + len(in_shapes)) + [self.i8p])
            fn = ir.Function(self.module, fnty, "k.%s.%d" % (op.name, len(self._kernels)))
            fn.linkage = "internal"
            fn.attributes.add("noinline")       # each kernel optimised once, on its own
            for a in fn.args[:-1]:
                a.add_attribute("noalias")
            k = K.Kernel(self, fn, out_shape, in_shapes, attrs, op)
            op.lowering(k)
            k.finish()
            index = self._kernels[key] = len(self._kernel_fns)
            self._kernel_fns.append(fn)
        return index

    # ---------------------------------------------------------------- slots
    def slot_ptr(self, b, index):
        zero = self.ir.Constant(self.i32, 0)
        return b.gep(self.slots, [zero, self.ir.Constant(self.i32, index)], inbounds=True)

    def get(self, b, nid):
        return b.load(self.slot_ptr(b, nid))

    def put(self, b, nid, value):
        b.store(value, self.slot_ptr(b, nid))

    def retain(self, b, value):
        b.call(self.runtime("goat_retain", self.void, [self.dp]), [value])

    def release_slot(self, b, index):
        ptr = self.slot_ptr(b, index)
        b.call(self.runtime("goat_release", self.void, [self.dp]), [b.load(ptr)])
        b.store(self.ir.Constant(self.dp, None), ptr)

    def release_node(self, b, nid):
        node = self.program.nodes[nid]
        if node.kind in (LOOP, BRANCH):
            base = self.tuple_slots.get(nid)
            if base is not None:
                for k in range(len(node.shape)):
                    self.release_slot(b, base + k)
        else:
            self.release_slot(b, nid)

    def fail(self, b, message, loc, notes=()):
        """A call of goat_fail (it does not return); the builder goes on in a dead block."""
        fn = self.runtime("goat_fail", self.void, [self.i8p, self.i8p], var_arg=True)
        b.call(fn, [self.site(b, loc, notes), self.cstring(b, "%s"), self.cstring(b, message)])
        b.unreachable()
        b.position_at_end(b.function.append_basic_block("after_error"))

    # ---------------------------------------------------------------- regions
    def region_function(self, region, start=0, keep=()):
        """The function that runs ``region`` by its schedule: each run of straight-line
        steps (ops, casts, constants, releases) is a segment of step code run by the
        runtime's ``goat_exec`` (:meth:`step_code`); loops, branches and effects are code of
        this function.  Returns [function]."""
        steps, frees = schedule(region, start, 0, True, keep)
        fn = self._new_function("region")
        b = self.ir.IRBuilder(fn.append_basic_block("entry"))
        seg = []
        for (node, effect), fr in zip(steps, frees):
            if node is not None and node.kind in (LOOP, BRANCH):
                self.flush(b, seg)
                self.step(b, node)
            elif node is not None:
                self.step_code(seg, node)
            else:
                self.flush(b, seg)
                self.effect(b, effect)
            for nid in fr:
                self.release_code(seg, nid)
        self.flush(b, seg)
        b.ret_void()
        return [fn]

    def flush(self, b, seg):
        """Emit the step code gathered in ``seg`` as a constant array and a call of
        goat_exec on it."""
        if not seg:
            return
        ir = self.ir
        ty = ir.ArrayType(self.i64, len(seg))
        g = ir.GlobalVariable(self.module, ty, "code.%d" % self._segments)
        self._segments += 1
        g.initializer = ir.Constant(ty, seg)
        g.global_constant = True
        g.linkage = "internal"
        fn = self.runtime("goat_exec", self.void, [self.i64.as_pointer(), self.i64])
        b.call(fn, [b.bitcast(g, self.i64.as_pointer()), ir.Constant(self.i64, len(seg))])
        seg.clear()

    def text(self, text: str) -> int:
        """The offset of ``text`` (NUL-terminated) in the program's string table."""
        off = self._text.get(text)
        if off is None:
            data = text.encode("utf-8", "surrogateescape") + b"\0"
            off = self._text[text] = self._text_size
            self._text_blob.append(data)
            self._text_size += len(data)
        return off

    def site_text(self, loc, notes=()) -> str:
        key = (id(loc.source), loc.start, loc.end, notes)
        text = self._sites.get(key)
        if text is None:
            # the headline ends with "error: "; \x01 marks where goat_fail puts the message
            # (a control character in a path shows escaped, so the first line ends there)
            head, _, rest = GoatError("", loc, notes=notes).render().partition("\n")
            text = self._sites[key] = head + "\x01" + ("\n" + rest if rest else "")
        return text

    def release_code(self, seg, nid):
        node = self.program.nodes[nid]
        if node.kind in (LOOP, BRANCH):
            base = self.tuple_slots.get(nid)
            if base is not None:
                for k in range(len(node.shape)):
                    seg += (RELEASE, base + k)
        else:
            seg += (RELEASE, nid)

    def step_code(self, seg, node):
        """The step code of a node that is no loop or branch (see goat_exec in
        goat/aot/runtime/goat_rt.c)."""
        shape = self.shapes[node.id]
        if shape is DEAD:
            return
        if isinstance(shape, Fail):
            seg += (FAIL, self.text(self.site_text(shape.loc, shape.notes)),
                    self.text(shape.message))
            return
        kind = node.kind
        if kind == CONST:
            self._const_values.append(node.value)
            seg += (CONSTANT, node.id, len(self._const_values) - 1)
        elif kind == CAST:
            seg += (ALIAS, node.id, node.args[0].id)
        elif kind == GET:
            seg += (ALIAS, node.id, self.tuple_slots[node.args[0].id] + node.attrs[0])
        elif kind == OP:
            op = node.op
            lowering = op.lowering
            if lowering is None:
                raise GoatError("--aot cannot compile %s yet: it has no lowering "
                                "(run this program with goat run)" % op.name, **_at(node))
            real = op.n_values + field_count(node.attrs)     # a file name's fields too
            args = node.args[:real]
            if lowering is K.ALIAS or (lowering is K.VIEW
                                       and tuple(self.shapes[args[0].id]) == tuple(shape)):
                seg += (ALIAS, node.id, args[0].id)
                return
            if lowering is K.VIEW:
                count = K.cells(shape)
                src = tuple(self.shapes[args[0].id])
                seg += (VIEW, node.id, args[0].id, count,
                        self.text(self.site_text(*_site(node))),
                        self.text("out of memory computing a value of shape %s (%.3g GB)"
                                  % (format_shape(shape), count * 8 / 1e9)))
                seg += (len(src),) + src + (len(shape),) + tuple(shape)
                return
            in_shapes = [self.shapes[a.id] for a in args]
            attrs = self.attrs.get(node.id, node.attrs)
            index = self.kernel(node, shape, in_shapes, attrs)
            count = K.cells(shape)
            oom = ("out of memory computing a value of shape %s (%.3g GB)"
                   % (format_shape(shape), count * 8 / 1e9))
            # a kernel that writes part of its first argument's value (a tape's row): in place
            # when no other slot holds that value (goat_exec's UPDATE), else into a copy
            seg += (UPDATE if getattr(op.lowering, "in_place", False) else CALL, index,
                    node.id, len(args))
            seg += tuple(a.id for a in args)
            seg += (count, self.text(self.site_text(*_site(node))), self.text(oom))
        else:
            raise GoatError("goat compile --aot cannot compile a node of kind %d" % kind,
                            node.loc)

    def _new_function(self, what):
        fn = self.ir.Function(self.module, self.ir.FunctionType(self.void, []),
                              "%s.%d" % (what, self._fns))
        fn.linkage = "internal"
        self._fns += 1
        return fn

    def call_all(self, b, fns):
        for fn in fns:
            b.call(fn, [])

    def step(self, b, node):
        """A loop or a branch, as code."""
        shape = self.shapes[node.id]
        if shape is DEAD:
            return
        if node.kind == LOOP:
            self.loop_step(b, node)
        else:
            self.branch_step(b, node)

    def scalar(self, b, nid, what, loc, notes):
        """The one number of node ``nid``'s value (a double), or the run-time error that it
        is not one number (``what`` names it)."""
        shape = self.shapes[nid]
        if K.cells(shape) != 1:
            self.fail(b, "%s must be a single number (one element), got shape %s"
                      % (what, format_shape(shape)), loc, notes)
            return self.ir.Constant(self.f64, 0.0)
        return b.load(self.get(b, nid))

    def loop_step(self, b, node):
        ir = self.ir
        body = node.value
        pre = body.parent
        site = self.site(b, *_site(node))
        bound = self.runtime("goat_bound", self.i64, [self.f64, self.i8p])
        lo, hi = (b.call(bound, [self.scalar(b, node.args[k].id, "a loop bound", *where),
                                 self.site(b, *where)])
                  for k, where in ((0, _site(node, operand_loc(node, 0))),
                                   (1, _site(node, operand_loc(node, 1)))))
        base = self.tuple_slots[node.id]
        carried = body.params[1:]
        for k, init in enumerate(node.args[2:]):
            v = self.get(b, init.id)
            self.retain(b, v)
            self.put(b, base + k, v)
        pre_fns = self.region_function(pre, keep=body.free_values()) if pre.nodes else []
        body_fns = self.region_function(body)
        fn = b.function
        head = fn.append_basic_block("for")
        done = fn.append_basic_block("for_end")
        b.cbranch(b.icmp_signed("<", lo, hi), fn.append_basic_block("for_pre"), done)
        b.position_at_end(fn.blocks[-1])
        self.call_all(b, pre_fns)
        b.branch(head)
        pre_end = b.block
        b.position_at_end(head)
        i = b.phi(self.i64)
        i.add_incoming(lo, pre_end)
        # the index, a scalar value of its own
        alloc = self.runtime("goat_alloc", self.dp, [self.i64, self.i8p, self.i8p])
        index = b.call(alloc, [ir.Constant(self.i64, 1), site,
                               self.cstring(b, "out of memory")])
        b.store(b.sitofp(i, self.f64), index)
        self.put(b, body.params[0].id, index)
        for k, p in enumerate(carried):
            ptr = self.slot_ptr(b, base + k)
            self.put(b, p.id, b.load(ptr))              # the state's reference moves in
            b.store(ir.Constant(self.dp, None), ptr)
        self.call_all(b, body_fns)
        self.yield_values(b, body, base)
        nxt = b.add(i, ir.Constant(self.i64, 1))
        i.add_incoming(nxt, b.block)
        b.cbranch(b.icmp_signed("<", nxt, hi), head, fn.append_basic_block("for_exit"))
        b.position_at_end(fn.blocks[-1])
        for n in pre.nodes:
            self.release_node(b, n.id)
        b.branch(done)
        b.position_at_end(done)

    def yield_values(self, b, region, base):
        """A region's results into the tuple slots from ``base`` (a loop's state for the next
        iteration, an if's values), then its parameters and own results released.  A result
        after a failed check (DEAD) is never reached."""
        for k, y in enumerate(region.yields):
            if self.shapes.get(y.id) is DEAD:
                continue
            v = self.get(b, y.id)
            self.retain(b, v)
            self.put(b, base + k, v)
        for p in region.params:
            self.release_slot(b, p.id)
        for y in region.yields:
            if y.region is region and y.kind != ARG:
                self.release_slot(b, y.id)

    def branch_step(self, b, node):
        then, orelse = node.value
        cond = self.scalar(b, node.args[0].id, condition_what(node),
                           *_site(node, operand_loc(node, 0)))
        taken = b.fcmp_unordered("!=", cond, self.ir.Constant(self.f64, 0.0))   # NaN is true
        base = self.tuple_slots[node.id]
        fn = b.function
        blocks = [fn.append_basic_block("then"), fn.append_basic_block("else")]
        done = fn.append_basic_block("if_end")
        b.cbranch(taken, blocks[0], blocks[1])
        for block, region in zip(blocks, (then, orelse)):
            b.position_at_end(block)
            self.call_all(b, self.region_function(region))
            self.yield_values(b, region, base)
            b.branch(done)
        b.position_at_end(done)

    # ---------------------------------------------------------------- effects
    def _uses_ok(self, effect) -> bool:
        return all(type(self.shapes.get(u.id)) is tuple for u in effect.uses())

    def effect(self, b, effect):
        if not self._uses_ok(effect):
            return          # after a step that fails: never reached
        kind = effect.kind
        where, notes = _site(effect)
        if kind == "print":
            shape = self.shapes[effect.node.id]
            fn = self.runtime("goat_print", self.void, [self.dp, self.i64, self.i64.as_pointer()])
            b.call(fn, [self.get(b, effect.node.id), self.ir.Constant(self.i64, len(shape)),
                        self.dims(b, shape)])
        elif kind == "format":
            buf = self.format_parts(b, effect, effect.data, notes)
            b.call(self.runtime("goat_print_line", self.void, [buf.type]), [buf])
        elif kind == "assert":      # a failed one: in the branch taken where it fails
            buf = self.format_parts(b, effect, effect.data, notes)
            b.call(self.runtime("goat_assert_fail", self.void, [buf.type, self.i8p]),
                   [buf, self.site(b, where, notes)])
        elif kind == "save":
            path, shown = effect.data
            shape = self.shapes[effect.node.id]
            site = self.site(b, where, notes)
            value = self.get(b, effect.node.id)
            dims = self.dims(b, shape)
            rank = self.ir.Constant(self.i64, len(shape))
            if isinstance(shown, str):
                fn = self.runtime("goat_save_npy", self.void,
                                  [self.i8p, self.i8p, self.dp, self.i64,
                                   self.i64.as_pointer(), self.i8p])
                b.call(fn, [self.cstring(b, path), self.cstring(b, shown), value, rank, dims,
                            site])
            else:
                buf = self.format_parts(b, effect, shown, notes, name=True)
                fn = self.runtime("goat_save_named", self.void,
                                  [self.i8p, buf.type, self.dp, self.i64,
                                   self.i64.as_pointer(), self.i8p])
                b.call(fn, [self.cstring(b, path), buf, value, rank, dims, site])
        else:
            raise GoatError("goat compile --aot cannot compile a %s statement" % kind,
                            effect.loc)

    def format_parts(self, b, effect, parts, notes, name=False):
        """The text of a format string's parts, built in the runtime's buffer; returns the
        buffer (a goat_str *).  In a file name (``name``) a field without a spec is
        goat_format_name_value's (fmt.format_name_number)."""
        buf = self.fmtbuf
        add = self.runtime("goat_str_add", self.void, [buf.type, self.i8p])
        fmt = self.runtime("goat_format_value", self.void, [buf.type, self.f64, self.i8p,
                                                             self.i8p])
        plain = self.runtime("goat_format_name_value", self.void, [buf.type, self.f64])
        for part in parts:
            if isinstance(part, str):
                b.call(add, [buf, self.cstring(b, part)])
                continue
            node, spec, loc = part
            loc, notes = _site(effect, loc)
            shape = self.shapes[node.id]
            if K.cells(shape) != 1:
                self.fail(b, field_shape_message(shape, not name), loc, notes)
                continue
            x = b.load(self.get(b, node.id))
            if name and not spec:
                b.call(plain, [buf, x])
            else:
                b.call(fmt, [buf, x, self.cstring(b, spec or ""), self.site(b, loc, notes)])
        return buf

    # ---------------------------------------------------------------- the program
    def tables(self, b):
        """The tables goat_exec reads (slots, kernels, strings, constants), handed to the
        runtime at the start."""
        ir = self.ir
        kty = ir.ArrayType(self.i8p, max(len(self._kernel_fns), 1))
        kernels = ir.GlobalVariable(self.module, kty, "kernels")
        kernels.initializer = ir.Constant(kty, [f.bitcast(self.i8p) for f in self._kernel_fns]
                                          or [ir.Constant(self.i8p, None)])
        kernels.global_constant = True
        kernels.linkage = "internal"
        blob = b"".join(self._text_blob) or b"\0"
        tty = ir.ArrayType(ir.IntType(8), len(blob))
        strtab = ir.GlobalVariable(self.module, tty, "strtab")
        strtab.initializer = ir.Constant(tty, bytearray(blob))
        strtab.global_constant = True
        strtab.linkage = "internal"
        cty = ir.ArrayType(self.dp, max(len(self._const_values), 1))
        consts = ir.GlobalVariable(self.module, cty, "consts")
        consts.initializer = ir.Constant(cty, [self.const_value(v) for v in self._const_values]
                                         or [ir.Constant(self.dp, None)])
        consts.global_constant = True
        consts.linkage = "internal"
        fn = self.runtime("goat_tables", self.void, [self.dp.as_pointer(), self.i8p.as_pointer(),
                                                      self.i8p, self.dp.as_pointer()])
        b.call(fn, [b.bitcast(self.slots, self.dp.as_pointer()),
                    b.bitcast(kernels, self.i8p.as_pointer()), b.bitcast(strtab, self.i8p),
                    b.bitcast(consts, self.dp.as_pointer())])

    def _uses_files(self) -> bool:
        """Does the program load or save a file by a relative name?"""
        stack = [self.program.main]
        while stack:
            region = stack.pop()
            if any(e.kind == "save" for e in region.effects):
                return True
            for node in region.nodes:
                if node.kind == OP and node.op.name == "load":
                    return True
                stack.extend(subregions(node))
            stack.extend(region.inner)
        return False

    def check_folders(self, b):
        """Before anything runs, the folders the saves write into, as goat run checks them
        (evaluator.save_folders): one missing is an error then, not after the training."""
        from ..interp.evaluator import save_folders
        folders = save_folders(self.program.main.nodes, self.program.main.effects)
        if not folders:
            return
        check = self.runtime("goat_check_folder", self.i64, [self.i8p, self.i8p, self.i8p])
        failed = self.ir.Constant(self.i64, 0)
        for folder, written, effect in folders:
            loc, notes = _site(effect)
            failed = b.add(failed, b.call(check, [self.cstring(b, folder),
                                                  self.cstring(b, written),
                                                  self.site(b, loc, notes)]))
        b.call(self.runtime("goat_folders_checked", self.void, [self.i64]), [failed])

    def lower(self):
        ir = self.ir
        main_fns = self.region_function(self.program.main)
        main = ir.Function(self.module, ir.FunctionType(self.i32, [self.i32,
                                                                   self.i8p.as_pointer()]),
                           "main")
        b = ir.IRBuilder(main.append_basic_block("entry"))
        b.call(self.runtime("goat_start", self.void, [self.i32, self.i8p.as_pointer()]),
               list(main.args))
        if self._uses_files():
            b.call(self.runtime("goat_folder", self.void, [self.i8p]),
                   [self.cstring(b, os.getcwd())])
        self.check_folders(b)
        if self.numpy is not None:
            libs = self.numpy
            b.call(self.runtime("goat_np_config", self.void, [self.i8p] * 3 + [self.i64] +
                                [self.i8p] * 2),
                   [self.cstring(b, libs["blas"]), self.cstring(b, libs["prefix"]),
                    self.cstring(b, libs["suffix"]), ir.Constant(self.i64, libs["ilp64"]),
                    self.cstring(b, libs["umath"]), self.cstring(b, libs["python"])])
        self.tables(b)
        self.call_all(b, main_fns)
        b.ret(b.call(self.runtime("goat_finish", self.i32, []), []))
        return self.module


def lower(program, name="goat", numpy=None, loads=None):
    """The LLVM module (llvmlite.ir.Module) of a checked program; ``numpy``: the libraries of
    :func:`goat.aot.numpy_libs.numpy_libraries` to compute with (None: own code only);
    ``loads``: the shapes of its ? loads' files (:func:`load_shapes`)."""
    return Lowering(program, name, numpy, loads).lower()


def missing_lowerings() -> list:
    """Names of the registry's ops that have no lowering."""
    return sorted(name for name, op in REGISTRY.items() if op.lowering is None)


__all__ = ["lower", "resolve_shapes", "missing_lowerings", "Fail", "DEAD", "_mismatch"]
