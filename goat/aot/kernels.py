"""Kernels: the LLVM lowering of each op, as the registry's ``lowering`` entries use it.

A kernel is one LLVM function ``void k(double *out, double *in0, ..., i8 *site)`` for one op
on inputs of known shapes (every size is known when a program is compiled ahead of time), so
its loops have constant bounds that LLVM unrolls and vectorises.  ``out`` is a fresh buffer of
the result's cells (row-major float64); ``site`` is where a run-time error is reported (see
goat/aot/runtime/goat_rt.h).  Kernels are made once per (op, attributes, input shapes) and
shared by every node that needs the same one.

An op's ``lowering`` entry is one of the factories below, called ``lower(k)`` with a
:class:`Kernel` (the builder, the arguments, the shapes); :data:`ALIAS` marks an op whose
result is its first argument's cells unchanged (reshape, stop_gradient): no kernel, no copy.

Numerics are those of the interpreter (goat/ops/builtins.py), bit for bit: IEEE 754 double
precision with no reassociation and no contraction into fused multiply-adds, IEEE 754-2019
maximum/minimum, a NaN made from numbers given its sign bit, as x86 makes it, so that ``-nan``
prints the same everywhere; sums in NumPy's order (:func:`numpy_sum`), matrix products through
NumPy's dispatch and BLAS (:func:`numpy_matmul`), exp/log/tanh as NumPy computes them
(:func:`numpy_unary`): see docs/aot.md, "The same bits".  Those orders depend on how goat
run holds each array (a transposed view, ...): every value carries that layout in its header,
set by the kernels that change it (:func:`elementwise_layout`, :func:`transpose`,
:func:`broadcast_to`) and read by the runtime when the program runs.

llvmlite is imported when a kernel is built, not when the registry is (``goat run`` never
needs it).
"""
from __future__ import annotations

ALIAS = "alias"          # a lowering entry: the result shares its first argument's cells
# a lowering entry: the result is goat run's row-major view of its argument's cells (NumPy's
# reshape): shared when goat run holds the argument row-major, else a row-major copy
VIEW = "view"


def _ir():
    from llvmlite import ir
    return ir


def cells(shape) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def strides(shape) -> list:
    """Row-major strides, in cells (the printer's)."""
    from ..interp.printer import row_major_strides
    return row_major_strides(shape)


def broadcast_strides(shape, full) -> list:
    """The strides that read an array of ``shape`` at each index of the broadcast shape
    ``full`` (0 along an axis the array has as 1 or lacks)."""
    pad = (1,) * (len(full) - len(shape)) + tuple(shape)
    st = strides(pad)
    return [0 if p == 1 and f != 1 else s for p, f, s in zip(pad, full, st)]


def merge_axes(dims, stride_sets):
    """Axes of a loop nest merged where every stride set allows (an axis of size 1 dropped;
    two axes merged when each set's outer stride is its inner stride times the inner size):
    fewer, longer loops, the innermost contiguous where the arrays are."""
    keep = [i for i, d in enumerate(dims) if d != 1]
    dims = [dims[i] for i in keep]
    sets = [[s[i] for i in keep] for s in stride_sets]
    i = len(dims) - 1
    while i > 0:
        if all(s[i - 1] == s[i] * dims[i] for s in sets):
            dims[i - 1] *= dims[i]
            for s in sets:
                s[i - 1] = s[i]
            del dims[i]
            for s in sets:
                del s[i]
        i -= 1
    return dims, sets


class Kernel:
    """A kernel being built: ``b`` the IR builder (inside the function), ``out`` and ``ins``
    the pointer arguments, ``site`` the error site, and the static shapes and attributes."""

    def __init__(self, lw, fn, out_shape, in_shapes, attrs, op):
        ir = _ir()
        self.ir = ir
        self.lw = lw
        self.fn = fn
        self.op = op
        self.out_shape = tuple(out_shape)
        self.in_shapes = [tuple(s) for s in in_shapes]
        self.attrs = attrs
        self.out = fn.args[0]
        self.ins = list(fn.args[1:1 + len(in_shapes)])
        self.site = fn.args[-1]
        self._entry = ir.IRBuilder(fn.append_basic_block("entry"))    # allocas only
        self.b = ir.IRBuilder(fn.append_basic_block("start"))
        self.f64 = ir.DoubleType()
        self.i64 = ir.IntType(64)

    def alloca(self, ty=None):
        """A stack slot, made in the entry block (so that mem2reg promotes it, and a loop
        does not grow the stack)."""
        return self._entry.alloca(ty or self.f64)

    def finish(self):
        self._entry.branch(self.b.function.blocks[1])
        self.b.ret_void()

    # ---------------------------------------------------------------- values
    def const(self, x: float):
        return self.ir.Constant(self.f64, x)

    def int(self, n: int):
        return self.ir.Constant(self.i64, n)

    def at(self, ptr, index):
        """The address of cell ``index`` (an i64 value or a Python int)."""
        if isinstance(index, int):
            index = self.int(index)
        return self.b.gep(ptr, [index], inbounds=True)

    def load(self, ptr, index):
        return self.b.load(self.at(ptr, index))

    def store(self, value, ptr, index):
        self.b.store(value, self.at(ptr, index))

    def call(self, name, ret, args):
        """Call the runtime function ``name`` (declared on first use)."""
        return self.b.call(self.lw.runtime(name, ret, [a.type for a in args]), args)

    # ---------------------------------------------------------------- loops
    def loop(self, n, body):
        """``for i in range(n): body(i)`` (i an i64 value); n a Python int or an i64 value."""
        b = self.b
        if isinstance(n, int):
            if n <= 0:
                return
            n = self.int(n)
            guarded = False
        else:
            guarded = True
        fn = b.function
        head = fn.append_basic_block("loop")
        done = fn.append_basic_block("done")
        entry = b.block
        if guarded:
            b.cbranch(b.icmp_signed(">", n, self.int(0)), head, done)
        else:
            b.branch(head)
        b.position_at_end(head)
        i = b.phi(self.i64)
        i.add_incoming(self.int(0), entry)
        body(i)
        nxt = b.add(i, self.int(1), flags=("nsw", "nuw"))
        i.add_incoming(nxt, b.block)
        b.cbranch(b.icmp_signed("<", nxt, n), head, done)
        b.position_at_end(done)

    def nest(self, dims, stride_sets, body, merge=True):
        """Loops over every index of ``dims`` (row-major order), calling ``body(offsets)`` with
        the linear offset of the index in each stride set (i64 values)."""
        if merge:
            dims, stride_sets = merge_axes(list(dims), [list(s) for s in stride_sets])
        if any(d == 0 for d in dims):
            return
        zero = self.int(0)

        def level(k, bases):
            if k == len(dims):
                body(bases)
                return

            def inner(i):
                offs = [base if s[k] == 0 else
                        self.b.add(base, self.b.mul(i, self.int(s[k]), flags=("nsw",)),
                                   flags=("nsw",))
                        for base, s in zip(bases, stride_sets)]
                level(k + 1, offs)
            self.loop(dims[k], inner)
        level(0, [zero] * len(stride_sets))

    # ---------------------------------------------------------------- numerics
    def isnan(self, x):
        return self.b.fcmp_unordered("uno", x, x)

    def fresh_nan(self, r, xs):
        """``r``, but a NaN made from numbers (no operand a NaN) gets its sign bit set, as
        x86 makes it (the interpreter's back end does the same on every processor)."""
        b = self.b
        made = self.isnan(r)
        for x in xs:
            made = b.and_(made, b.not_(self.isnan(x)))
        neg_nan = b.bitcast(self.ir.Constant(self.i64, 0xFFF8000000000000), self.f64)
        return b.select(made, neg_nan, r)

    def extremum(self, x, y, larger: bool):
        """IEEE 754-2019 maximum (larger) or minimum of two doubles: -0 < +0; a NaN operand
        gives a NaN (both NaNs: their bits OR'ed), as numpy_backend's maximum does."""
        b = self.b
        i64 = self.i64
        xi, yi = b.bitcast(x, i64), b.bitcast(y, i64)
        pick_x = b.fcmp_ordered(">" if larger else "<", x, y)
        pick_y = b.fcmp_ordered("<" if larger else ">", x, y)
        # equal (a signed zero pair, or the same number): AND the bits for the maximum
        # (+0 wins), OR them for the minimum (-0 wins)
        eq = b.bitcast(b.and_(xi, yi) if larger else b.or_(xi, yi), self.f64)
        xnan, ynan = self.isnan(x), self.isnan(y)
        both = b.bitcast(b.or_(xi, yi), self.f64)
        nan = b.select(b.and_(xnan, ynan), both, b.select(xnan, x, y))
        r = b.select(b.fcmp_ordered("==", x, y), eq, nan)
        r = b.select(pick_y, y, r)
        return b.select(pick_x, x, r)

    def truth(self, bit):
        """An i1 as 0.0 or 1.0."""
        return self.b.uitofp(bit, self.f64)

    def intrinsic(self, name, *xs):
        fnty = self.ir.FunctionType(self.f64, [self.f64] * len(xs))
        fn = self.lw.module.declare_intrinsic(name, [self.f64], fnty)
        return self.b.call(fn, list(xs))

    def numpy(self) -> bool:
        """Does the program compute with NumPy's own libraries (its BLAS and SVML), for the
        same bits as goat run?  (Not with --portable; see goat/aot/numpy_libs.py.)"""
        return self.lw.numpy is not None

    def i64s(self, values):
        """An ``i64*`` to a constant array of ``values``."""
        return self.lw.dims(self.b, tuple(int(v) for v in values))

    def void_call(self, name, args):
        return self.call(name, self.ir.VoidType(), args)

    def libm(self, name, *xs):
        return self.b.call(self.lw.runtime(name, self.f64, [self.f64] * len(xs)), list(xs))


# -------------------------------------------------------------------- lowering factories

def elementwise_layout(k: Kernel):
    """Give an elementwise result goat run's layout: NumPy lays it out in its operands'
    order (order='K'), row-major unless an operand is held otherwise (a transposed view);
    the runtime's goat_lay_elementwise1/2 decide when the program runs (goat/aot/runtime/
    goat_np.c)."""
    args = [k.out, k.int(len(k.out_shape)), k.i64s(k.out_shape)]
    for p, s in zip(k.ins, k.in_shapes):
        args += [p, k.int(len(s)), k.i64s(s)]
    if len(k.ins) in (1, 2):
        k.void_call("goat_lay_elementwise%d" % len(k.ins), args)


def elementwise(scalar, fresh_nan=False, layout=True):
    """An elementwise op with broadcasting: ``scalar(k, *cells) -> cell`` for each index of
    the result (inputs read through broadcast strides), laid out as NumPy lays it out
    (:func:`elementwise_layout`)."""
    def lower(k: Kernel):
        full = k.out_shape
        sets = [strides(full)] + [broadcast_strides(s, full) for s in k.in_shapes]

        def body(offs):
            xs = [k.load(p, o) for p, o in zip(k.ins, offs[1:])]
            r = scalar(k, *xs)
            if fresh_nan:
                r = k.fresh_nan(r, xs)
            k.store(r, k.out, offs[0])
        k.nest(full, sets, body)
        if layout:
            elementwise_layout(k)
    return lower


def unary_libm(name, fresh_nan=True):
    return elementwise(lambda k, x: k.libm(name, x), fresh_nan)


def unary_intrinsic(name, fresh_nan=False):
    return elementwise(lambda k, x: k.intrinsic(name, x), fresh_nan)


def compare(op: str):
    """A comparison: 1.0 where it holds, else 0.0 (ordered: a NaN compares unequal to
    everything, so != holds)."""
    if op == "!=":
        return elementwise(lambda k, x, y: k.truth(k.b.fcmp_unordered("!=", x, y)))
    return elementwise(lambda k, x, y: k.truth(k.b.fcmp_ordered(op, x, y)))


def _nonzero(k, x):
    return k.b.fcmp_unordered("!=", x, k.const(0.0))      # a NaN counts as non-zero


def logical(kind: str):
    if kind == "and":
        return elementwise(lambda k, x, y: k.truth(k.b.and_(_nonzero(k, x), _nonzero(k, y))))
    if kind == "or":
        return elementwise(lambda k, x, y: k.truth(k.b.or_(_nonzero(k, x), _nonzero(k, y))))
    return elementwise(lambda k, x: k.truth(k.b.fcmp_ordered("==", x, k.const(0.0))))


def _remainder(k, a, b):
    """NumPy's floor modulo (npy_divmod): fmod, then moved into b's sign; 0 takes b's sign."""
    bld = k.b
    mod = bld.frem(a, b)
    zero = k.const(0.0)
    nonzero = bld.fcmp_unordered("!=", mod, zero)
    differ = bld.xor(bld.fcmp_ordered("<", b, zero), bld.fcmp_ordered("<", mod, zero))
    moved = bld.select(differ, bld.fadd(mod, b), mod)
    signed_zero = k.intrinsic("llvm.copysign", zero, b)
    r = bld.select(nonzero, moved, signed_zero)
    # b = 0: fmod's NaN
    r = bld.select(bld.fcmp_ordered("==", b, zero), mod, r)
    # NaN operands as NumPy's remainder gives them on x86 (fmod's choice between two NaNs is
    # not NumPy's): the NaN one; of two, negative only when both are (the AND of their bits)
    an, bn = k.isnan(a), k.isnan(b)
    both = bld.bitcast(bld.and_(bld.bitcast(a, k.i64), bld.bitcast(b, k.i64)), k.f64)
    nan = bld.select(bld.and_(an, bn), both, bld.select(an, a, b))
    return bld.select(bld.or_(an, bn), nan, r)


remainder = elementwise(_remainder, fresh_nan=True)


def _relu(k, x):
    # maximum(x, 0) as NumPy computes it: 0 unless x > 0 (so -0 gives 0); a NaN stays
    return k.b.select(k.b.fcmp_ordered("<=", x, k.const(0.0)), k.const(0.0), x)


relu = elementwise(_relu)


def _tanh(k, x):
    return k.b.select(k.isnan(x), x, k.libm("tanh", x))


def _sigmoid(k, x):
    b = k.b
    e = k.libm("exp", b.fneg(x))
    return b.fdiv(k.const(1.0), b.fadd(k.const(1.0), e))


UNARY_EXP, UNARY_LOG, UNARY_TANH = 0, 1, 2      # goat_np_unary's functions


def numpy_unary(which: int, portable, before=None, after=None):
    """An elementwise function that NumPy computes with SVML where the processor has AVX-512
    (exp, log, tanh): the runtime's goat_np_unary does the same (goat/aot/runtime/goat_np.c),
    between the elementwise steps ``before`` (on x, into the result) and ``after`` (on the
    function's value and x), as the interpreter composes them.  ``portable`` is the lowering
    without NumPy's libraries."""
    def lower(k: Kernel):
        if not k.numpy():
            return portable(k)
        n = cells(k.out_shape)
        src = k.ins[0]
        if before is not None:
            k.loop(n, lambda i: k.store(before(k, k.load(src, i)), k.out, i))
            src = k.out
        k.void_call("goat_np_unary", [k.int(which), k.out, src, k.int(n)])
        if after is not None:
            k.loop(n, lambda i: k.store(after(k, k.load(k.out, i), k.load(k.ins[0], i)),
                                        k.out, i))
        elementwise_layout(k)
    return lower


exp = numpy_unary(UNARY_EXP, unary_libm("exp", fresh_nan=False))
log = numpy_unary(UNARY_LOG, unary_libm("log"))
# goat's tanh keeps a NaN's own bits: where(isnan(x), x, tanh(x))
tanh = numpy_unary(UNARY_TANH, elementwise(_tanh),
                   after=lambda k, t, x: k.b.select(k.isnan(x), x, t))
# 1 / (1 + exp(-x)), each step as NumPy takes it
sigmoid = numpy_unary(UNARY_EXP, elementwise(_sigmoid), before=lambda k, x: k.b.fneg(x),
                      after=lambda k, e, x: k.b.fdiv(k.const(1.0), k.b.fadd(k.const(1.0), e)))


def extremum(larger: bool):
    return elementwise(lambda k, x, y: k.extremum(x, y, larger))


def numpy_sum(k: Kernel, reduced, divide_by=None, lead=0):
    """``k.ins[0]`` summed over the axes ``reduced`` into ``k.out`` (the kept axes in order),
    adding in NumPy's order for goat run's layout of the input, which the runtime's
    goat_np_reduce reads from the value when the program runs: pairwise along the axis NumPy
    iterates innermost when it is reduced, one number after another otherwise.
    ``divide_by``: the mean's count; ``lead``: leading axes the result drops (sum_to's)."""
    src = k.in_shapes[0]
    n_out = cells(k.out_shape)
    mask = sum(1 << a for a in reduced)
    k.void_call("goat_np_reduce", [k.out, k.int(n_out), k.ins[0], k.int(len(src)),
                                   k.i64s(src), k.int(mask), k.int(lead), k.site])
    if divide_by is not None:
        def div(i):
            acc = k.load(k.out, i)
            r = k.b.fdiv(acc, k.const(float(divide_by)))
            k.store(k.fresh_nan(r, [acc]) if divide_by == 0 else r, k.out, i)
        k.loop(n_out, div)


def whole_reduction(kind: str):
    """sum(x), mean(x), max(x), min(x): x read as one row (as goat run reduces it), summed in
    NumPy's order."""
    def lower(k: Kernel):
        n = cells(k.in_shapes[0])
        k.in_shapes = [(1, n)]
        if kind in ("max", "min"):
            return reduction(kind, -1)(k)
        numpy_sum(k, {1}, n if kind == "mean" else None)
    return lower


def reduction(kind: str, axis: int):
    """A row (axis -1) or column (axis -2) reduction keeping the axis as size 1: sums (and
    the mean, the sum over the count) in NumPy's order (:func:`numpy_sum`), max/min by IEEE
    754-2019 from -inf/+inf (any order gives the same)."""
    larger = kind == "max"
    init = float("-inf") if larger else float("inf")

    def combine(k, acc, x):
        return k.extremum(acc, x, larger)

    def lower(k: Kernel):
        shape = k.in_shapes[0]
        if kind in ("sum", "mean"):
            ax = len(shape) + axis
            return numpy_sum(k, {ax}, shape[ax] if kind == "mean" else None)
        if axis == -1:
            n = shape[-1]
            rows = cells(shape[:-1])

            def row(r):
                base = k.b.mul(r, k.int(n))
                acc = k.const(init)
                if n > 0:
                    slot = k.alloca()
                    k.b.store(acc, slot)

                    def step(j):
                        x = k.load(k.ins[0], k.b.add(base, j))
                        k.b.store(combine(k, k.b.load(slot), x), slot)
                    k.loop(n, step)
                    acc = k.b.load(slot)
                k.store(acc, k.out, r)
            k.loop(rows, row)
        else:
            r, c = shape[-2], shape[-1]
            batch = cells(shape[:-2])

            def one(bi):
                obase = k.b.mul(bi, k.int(c))
                ibase = k.b.mul(bi, k.int(r * c))

                def init_col(j):
                    k.store(k.const(init), k.out, k.b.add(obase, j))
                k.loop(c, init_col)

                def add_row(i):
                    rbase = k.b.add(ibase, k.b.mul(i, k.int(c)))

                    def col(j):
                        o = k.b.add(obase, j)
                        x = k.load(k.ins[0], k.b.add(rbase, j))
                        k.store(combine(k, k.load(k.out, o), x), k.out, o)
                    k.loop(c, col)
                k.loop(r, add_row)
            k.loop(batch, one)
        # NumPy lays the result out in its iteration order of the input
        k.void_call("goat_lay_reduce", [k.out, k.ins[0], k.int(len(shape)), k.i64s(shape),
                                        k.int(1 << (len(shape) + axis))])
    return lower


def matmul(k: Kernel):
    """``a @ b`` as NumPy computes it (:func:`numpy_matmul`), or with --portable as a loop
    nest (:func:`loop_matmul`)."""
    if k.numpy():
        return numpy_matmul(k)
    return loop_matmul(k)


def numpy_matmul(k: Kernel):
    """``a @ b`` as NumPy's matmul computes it: the runtime's goat_np_product lays each
    operand out as goat run holds it (read from the values: a transposed view, a broadcast
    one; two views of one array share one block, as in goat run), then goat_np_matmul makes
    NumPy's choice of dot, gemv, gemm, syrk or the plain loop with NumPy's BLAS."""
    (sa, sb), so = k.in_shapes, k.out_shape
    k.void_call("goat_np_product", [k.out, k.ins[0], k.int(len(sa)), k.i64s(sa), k.ins[1],
                                    k.int(len(sb)), k.i64s(sb), k.int(len(so)), k.i64s(so),
                                    k.site])


def loop_matmul(k: Kernel):
    """``a @ b`` as a loop nest: for each batch index (broadcast), each row i of a and each
    k, row k of b times a[i, k] is added into row i of the result -- every cell is a sum over
    k in order from +0, and the innermost loop runs along contiguous rows (vectorised)."""
    a, bsh = k.in_shapes
    out = k.out_shape
    m, kk, n = a[-2], a[-1], bsh[-1]
    batch = out[:-2]
    sets = [strides(batch) if batch else [],
            broadcast_strides(a[:-2], batch), broadcast_strides(bsh[:-2], batch)]
    sets = [[s * (m * n) for s in sets[0]], [s * (m * kk) for s in sets[1]],
            [s * (kk * n) for s in sets[2]]]
    A, B, O = k.ins[0], k.ins[1], k.out
    bld = k.b
    tiles = m // ROWS if n >= COLS else 0

    def one(offs):
        ob, ab, bb = offs
        if tiles:
            _matmul_tiles(k, A, B, O, ob, ab, bb, m, kk, n)

        def row(i):
            orow = bld.add(ob, bld.mul(i, k.int(n)))
            arow = bld.add(ab, bld.mul(i, k.int(kk)))

            def zero(j):
                k.store(k.const(0.0), O, bld.add(orow, j))
            k.loop(n, zero)

            def inner(p):
                aip = k.load(A, bld.add(arow, p))
                brow = bld.add(bb, bld.mul(p, k.int(n)))

                def col(j):
                    o = bld.add(orow, j)
                    k.store(bld.fadd(k.load(O, o), bld.fmul(aip, k.load(B, bld.add(brow, j)))),
                            O, o)
                k.loop(n, col)
            k.loop(kk, inner)
        if tiles:
            # the rows the tiles left, and the columns right of the tiles in tiled rows
            rest = m - tiles * ROWS
            k.loop(rest, lambda r: row(bld.add(r, k.int(tiles * ROWS))))
            if n % COLS:
                k.loop(tiles * ROWS, lambda i: _row_columns(k, A, B, O, ob, ab, bb, i, kk, n,
                                                            n - n % COLS))
        else:
            k.loop(m, row)
    k.nest(batch, sets, one, merge=False)


ROWS, LANES, VECTORS = 4, 8, 2      # a matmul tile: 4 rows x 16 columns, in 8 vector registers
COLS = LANES * VECTORS


def _matmul_tiles(k, A, B, O, ob, ab, bb, m, kk, n):
    """The tiled part of ``a @ b``: for each tile of ROWS x COLS result cells, the sums over k
    kept in vector registers (each cell still 0 + a[i,0]*b[0,j] + a[i,1]*b[1,j] + ..., in
    that order: the same bits as the plain loop), one row of b's tile read once for ROWS
    rows of a."""
    ir = k.ir
    bld = k.b
    vty = ir.VectorType(k.f64, LANES)
    vptr = vty.as_pointer()
    accs = [[k.alloca(vty) for _ in range(VECTORS)] for _ in range(ROWS)]
    zero = ir.Constant(vty, [0.0] * LANES)
    mask = ir.Constant(ir.VectorType(ir.IntType(32), LANES), [0] * LANES)
    undef = ir.Constant(vty, ir.Undefined)

    def tile_row(t):
        i0 = bld.mul(t, k.int(ROWS))

        def tile(u):
            j0 = bld.mul(u, k.int(COLS))
            for r in range(ROWS):
                for c in range(VECTORS):
                    bld.store(zero, accs[r][c])

            def step(p):
                brow = bld.add(bb, bld.add(bld.mul(p, k.int(n)), j0))
                bs = [bld.load(bld.bitcast(k.at(B, bld.add(brow, k.int(c * LANES))), vptr),
                               align=8) for c in range(VECTORS)]
                for r in range(ROWS):
                    a = k.load(A, bld.add(ab, bld.add(bld.mul(bld.add(i0, k.int(r)),
                                                              k.int(kk)), p)))
                    av = bld.shuffle_vector(bld.insert_element(undef, a, k.int(0)), undef, mask)
                    for c in range(VECTORS):
                        acc = accs[r][c]
                        bld.store(bld.fadd(bld.load(acc), bld.fmul(av, bs[c])), acc)
            k.loop(kk, step)
            for r in range(ROWS):
                orow = bld.add(ob, bld.add(bld.mul(bld.add(i0, k.int(r)), k.int(n)), j0))
                for c in range(VECTORS):
                    bld.store(bld.load(accs[r][c]),
                              bld.bitcast(k.at(O, bld.add(orow, k.int(c * LANES))), vptr),
                              align=8)
        k.loop(n // COLS, tile)
    k.loop(m // ROWS, tile_row)


def _row_columns(k, A, B, O, ob, ab, bb, i, kk, n, j_from):
    """Cells j_from..n-1 of row i of ``a @ b``, summed in k order from +0."""
    bld = k.b
    orow = bld.add(ob, bld.mul(i, k.int(n)))
    arow = bld.add(ab, bld.mul(i, k.int(kk)))
    acc = k.alloca()

    def col(jj):
        j = bld.add(jj, k.int(j_from))
        bld.store(k.const(0.0), acc)

        def step(p):
            x = bld.fmul(k.load(A, bld.add(arow, p)), k.load(B, bld.add(bb, bld.add(
                bld.mul(p, k.int(n)), j))))
            bld.store(bld.fadd(bld.load(acc), x), acc)
        k.loop(kk, step)
        k.store(bld.load(acc), O, bld.add(orow, j))
    k.loop(n - j_from, col)


def transpose(k: Kernel):
    """The last two axes swapped: an index map into a row-major result, which carries goat
    run's layout (a view of the argument's array, its strides swapped)."""
    src = k.in_shapes[0]
    out = k.out_shape
    st = strides(src)
    st = st[:-2] + [st[-1], st[-2]]
    k.nest(out, [strides(out), st],
           lambda offs: k.store(k.load(k.ins[0], offs[1]), k.out, offs[0]))
    k.void_call("goat_lay_transpose", [k.out, k.ins[0], k.int(len(src)), k.i64s(src)])


def swapaxes(k: Kernel):
    """Two axes swapped: an index map into a row-major result; its layout is goat run's (the
    last two: transpose's view; the same axis: the argument itself; else a row-major copy)."""
    src = k.in_shapes[0]
    r = len(src)
    i, j = sorted(a % r for a in k.attrs[:2])
    st = strides(src)
    st[i], st[j] = st[j], st[i]
    k.nest(k.out_shape, [strides(k.out_shape), st],
           lambda offs: k.store(k.load(k.ins[0], offs[1]), k.out, offs[0]))
    if i == j:
        k.void_call("goat_lay_same", [k.out, k.ins[0], k.int(r), k.i64s(src)])
    elif (i, j) == (r - 2, r - 1):
        k.void_call("goat_lay_transpose", [k.out, k.ins[0], k.int(r), k.i64s(src)])


def fill(value: float):
    def lower(k: Kernel):
        k.loop(cells(k.out_shape), lambda i: k.store(k.const(value), k.out, i))
    return lower


def iota(k: Kernel):
    shape = k.out_shape
    axis = k.attrs[-1] % len(shape)
    # the index along `axis` is (linear index // stride) % size
    st = strides(shape)
    sets = [st, [1 if d == axis else 0 for d in range(len(shape))]]
    k.nest(shape, [sets[0], sets[1]],
           lambda offs: k.store(k.b.sitofp(offs[1], k.f64), k.out, offs[0]), merge=False)


def dim_size(k: Kernel):
    k.store(k.const(float(k.in_shapes[0][k.attrs[0]])), k.out, 0)


def sum_to(k: Kernel):
    """The input summed over the axes broadcasting added or widened, into the target shape,
    in NumPy's order (:func:`numpy_sum`)."""
    src = k.in_shapes[0]
    out = k.out_shape
    if tuple(src) == tuple(out):        # goat run gives the argument back
        k.loop(cells(out), lambda i: k.store(k.load(k.ins[0], i), k.out, i))
        k.void_call("goat_lay_same", [k.out, k.ins[0], k.int(len(out)), k.i64s(out)])
        return
    lead = len(src) - len(out)
    reduced = set(range(lead)) | {lead + i for i, t in enumerate(out)
                                  if t == 1 and src[lead + i] != 1}
    numpy_sum(k, reduced, lead=lead)


def broadcast_to(k: Kernel):
    """x broadcast to the target shape; goat run's layout: a view with zero strides when the
    result holds more than 65,536 cells (goat's evaluator), else row-major (x * ones)."""
    elementwise(lambda k, x: x, layout=False)(k)
    src, out = k.in_shapes[0], k.out_shape
    k.void_call("goat_lay_broadcast", [k.out, k.ins[0], k.int(len(src)), k.i64s(src),
                                       k.int(len(out)), k.i64s(out)])


def stack_new(k: Kernel):
    """A tape of zeros (grad through a loop; goat/ops/builtins.py)."""
    k.loop(cells(k.out_shape), lambda i: k.store(k.const(0.0), k.out, i))


def _row(k: Kernel, value, rows):
    """A tape's row number as an i64 (grad computes it: a whole number from 0 to rows - 1)."""
    return k.b.fptosi(value, k.i64)


def stack_set(k: Kernel):
    """One row of the tape set, in the tape's own cells: ``out`` is the tape itself, or a copy
    of it the runtime made (goat_exec's UPDATE step; goat run writes it in place too)."""
    tape, _, x = k.in_shapes[:3]
    n = cells(x)
    base = k.b.mul(_row(k, k.load(k.ins[1], 0), tape[0]), k.int(n))
    k.loop(n, lambda j: k.store(k.load(k.ins[2], j), k.out, k.b.add(base, j)))


stack_set.in_place = True


def stack_get(k: Kernel):
    """One row of a tape."""
    tape = k.in_shapes[0]
    n = cells(k.out_shape)
    base = k.b.mul(_row(k, k.load(k.ins[1], 0), tape[0]), k.int(n))
    k.loop(n, lambda j: k.store(k.load(k.ins[0], k.b.add(base, j)), k.out, j))


def _index(k: Kernel, value, position, count, name):
    """``value`` as an index from 0 to count-1 (i64), or the run-time error naming it; a
    subscript's (``name`` a pair, builtins._rows_words) may be from -count, counting from the
    end (goat_rows_fail words its error as builtins._index_problem does)."""
    b = k.b
    rows = type(name) is tuple
    written = value
    if rows:
        value = _from_end(k, value, count)
    ok = b.and_(b.fcmp_ordered(">=", value, k.const(0.0)),
                b.fcmp_ordered("<", value, k.const(float(count))))
    ok = b.and_(ok, b.fcmp_ordered("==", value, k.intrinsic("llvm.floor", value)))
    fn = b.function
    bad = fn.append_basic_block("bad_index")
    good = fn.append_basic_block("index")
    b.cbranch(ok, good, bad)
    b.position_at_end(bad)
    if rows:
        from ..ops.builtins import _rows_words
        k.call("goat_rows_fail", k.i64, [written, position, k.int(count),
                                         k.lw.cstring(b, _rows_words(name)), k.site])
    else:
        k.call("goat_index_fail", k.i64, [value, position, k.int(count),
                                          k.lw.cstring(b, name),
                                          k.site])
    b.unreachable()
    b.position_at_end(good)
    return b.fptosi(value, k.i64)


def _from_end(k: Kernel, value, count):
    """A subscript's index: a negative one counts from the end (value + count)."""
    b = k.b
    return b.select(b.fcmp_ordered("<", value, k.const(0.0)),
                    b.fadd(value, k.const(float(count))), value)


def _narrow_start(k: Kernel, n: int, length: int, words: tuple, start_in: int = 1,
                  index: bool = False):
    """narrow's start (input ``start_in``) as an i64 from 0 to n - length, or the run-time
    error naming it (goat_narrow_fail, as builtins._narrow_start words it: ``words`` from
    builtins._start_words); a subscript's ``index`` may be negative, counting from the end."""
    b = k.b
    written = k.load(k.ins[start_in], 0)
    value = written
    lo = 0
    if index:
        lo = -n
        value = b.select(b.fcmp_ordered("<", written, k.const(0.0)),
                         b.fadd(written, k.const(float(n))), written)
    ok = b.and_(b.fcmp_ordered(">=", value, k.const(0.0)),
                b.fcmp_ordered("<=", value, k.const(float(n - length))))
    ok = b.and_(ok, b.fcmp_ordered("==", value, k.intrinsic("llvm.floor", value)))
    fn = b.function
    bad = fn.append_basic_block("bad_start")
    good = fn.append_basic_block("start")
    b.cbranch(ok, good, bad)
    b.position_at_end(bad)
    k.call("goat_narrow_fail", k.i64, [written, k.int(lo), k.int(n - length),
                                       k.lw.cstring(b, words[0]), k.lw.cstring(b, words[1]),
                                       k.site])
    b.unreachable()
    b.position_at_end(good)
    return b.fptosi(value, k.i64)


def _narrow_parts(shape, axis):
    """(outer, n, inner): the cells before ``axis``, its size, and the cells after it."""
    ax = axis % len(shape)
    return cells(shape[:ax]), shape[ax], cells(shape[ax + 1:])


def _narrow_copy(k: Kernel, shape, length, into_out: bool, what=None, part_in=0, start_in=1):
    """Copy the runs of narrow's cells: for each index before the axis, length x inner cells
    (row-major, contiguous) between the whole of ``shape`` (at the start along the axis) and
    the narrow part -- from the input to the result (narrow), or into it (its derivative,
    put): the part is input ``part_in``, the start input ``start_in``; ``what`` words a
    start out of range (builtins._start_words)."""
    from ..ops.builtins import _is_index, _start_words
    outer, n, inner = _narrow_parts(shape, k.attrs[0])
    s = _narrow_start(k, n, length, _start_words(what, n, length, k.attrs[0] % len(shape),
                                                 "x".join(map(str, shape))), start_in,
                      _is_index(what))
    run = length * inner
    at0 = k.b.mul(s, k.int(inner))

    def block(o):
        whole = k.b.add(k.b.mul(o, k.int(n * inner)), at0)
        part = k.b.mul(o, k.int(run))
        src, dst = (part, whole) if into_out else (whole, part)
        k.loop(run, lambda j: k.store(k.load(k.ins[part_in], k.b.add(src, j)), k.out,
                                      k.b.add(dst, j)))
    k.loop(outer, block)


def _what(k: Kernel, at: int):
    return k.attrs[at] if len(k.attrs) > at else None


def narrow(k: Kernel):
    """Cells start .. start + length - 1 along the axis."""
    _narrow_copy(k, k.in_shapes[0], k.attrs[1], False, _what(k, 2))


def narrow_backward(k: Kernel):
    """Zeros, with the cotangent at cells start .. start + length - 1 along the axis."""
    k.loop(cells(k.out_shape), lambda i: k.store(k.const(0.0), k.out, i))
    _narrow_copy(k, k.out_shape, k.in_shapes[0][k.attrs[0] % len(k.out_shape)], True,
                 _what(k, 2))


def put(k: Kernel):
    """x, with v at cells start .. start + length - 1 along the axis."""
    n = cells(k.out_shape)
    k.loop(n, lambda i: k.store(k.load(k.ins[0], i), k.out, i))
    _narrow_copy(k, k.out_shape, k.in_shapes[1][k.attrs[0] % len(k.out_shape)], True,
                 _what(k, 1), part_in=1, start_in=2)


def _copy_runs(k: Kernel, outer: int, src, src_run: int, src_at: int, dst, dst_run: int,
               dst_at: int, length: int):
    """For o below ``outer``: ``length`` cells from src[o * src_run + src_at] to
    dst[o * dst_run + dst_at] (row-major runs along an axis and the axes after it)."""
    def block(o):
        s = k.b.add(k.b.mul(o, k.int(src_run)), k.int(src_at))
        t = k.b.add(k.b.mul(o, k.int(dst_run)), k.int(dst_at))
        k.loop(length, lambda j: k.store(k.load(src, k.b.add(s, j)), dst, k.b.add(t, j)))
    k.loop(outer, block)


def concat(k: Kernel):
    """a's cells then b's along the axis: for each index before it, a's run, then b's."""
    outer, na, inner = _narrow_parts(k.in_shapes[0], k.attrs[0])
    nb = k.in_shapes[1][k.attrs[0] % len(k.out_shape)]
    n = (na + nb) * inner
    _copy_runs(k, outer, k.ins[0], na * inner, 0, k.out, n, 0, na * inner)
    _copy_runs(k, outer, k.ins[1], nb * inner, 0, k.out, n, na * inner, nb * inner)


def concat_part(k: Kernel):
    """The first (which 0) or last (which 1) cells of g along the axis, as concat_part's
    shape has them."""
    outer, n, inner = _narrow_parts(k.in_shapes[0], k.attrs[0])
    m = k.out_shape[k.attrs[0] % len(k.out_shape)]
    start = 0 if k.attrs[1] == 0 else n - m
    _copy_runs(k, outer, k.ins[0], n * inner, start * inner, k.out, m * inner, 0, m * inner)


def gather(k: Kernel):
    table, idx = k.in_shapes
    v, c = table[0], cells(table[1:])       # (a table of any rank: a row of c cells per index)
    rows = cells(idx)
    name = k.attrs[0] if k.attrs else "gather"

    def row(r):
        i = _index(k, k.load(k.ins[1], r), r, v, name)
        src = k.b.mul(i, k.int(c))
        dst = k.b.mul(r, k.int(c))
        k.loop(c, lambda j: k.store(k.load(k.ins[0], k.b.add(src, j)), k.out,
                                    k.b.add(dst, j)))
    k.loop(rows, row)


def scatter_add(k: Kernel):
    g, idx = k.in_shapes
    v, c = k.out_shape[0], cells(k.out_shape[1:])
    rows = cells(idx)
    name = k.attrs[1] if len(k.attrs) > 1 else "gather"
    k.loop(v * c, lambda i: k.store(k.const(0.0), k.out, i))
    # every index is checked before any is used, as NumPy's add.at does
    k.loop(rows, lambda r: _index(k, k.load(k.ins[1], r), r, v, name))

    def row(r):
        value = k.load(k.ins[1], r)
        if type(name) is tuple:
            value = _from_end(k, value, v)
        i = k.b.fptosi(value, k.i64)
        dst = k.b.mul(i, k.int(c))
        src = k.b.mul(r, k.int(c))

        def col(j):
            o = k.b.add(dst, j)
            k.store(k.b.fadd(k.load(k.out, o), k.load(k.ins[0], k.b.add(src, j))), k.out, o)
        k.loop(c, col)
    k.loop(rows, row)


def onehot(k: Kernel):
    idx = k.in_shapes[0]
    count = k.out_shape[-1]
    rows = cells(idx)
    k.loop(cells(k.out_shape), lambda i: k.store(k.const(0.0), k.out, i))
    # all checked first: the first bad index is the one reported
    k.loop(rows, lambda r: _index(k, k.load(k.ins[0], r), r, count, "onehot"))

    def row(r):
        i = k.b.fptosi(k.load(k.ins[0], r), k.i64)
        k.store(k.const(1.0), k.out, k.b.add(k.b.mul(r, k.int(count)), i))
    k.loop(rows, row)


def argmax_rows(k: Kernel):
    """NumPy's argmax along rows: the first largest; the first NaN wins."""
    shape = k.in_shapes[0]
    n = shape[-1]
    rows = cells(shape[:-1])
    b = k.b

    def row(r):
        base = b.mul(r, k.int(n))
        best = k.alloca()
        where = k.alloca(k.i64)
        b.store(k.load(k.ins[0], base), best)
        b.store(k.int(0), where)

        def step(j):
            x = k.load(k.ins[0], b.add(base, j))
            cur = b.load(best)
            # take x when it is larger, or a NaN while the best so far is not
            take = b.or_(b.fcmp_ordered(">", x, cur), b.and_(k.isnan(x), b.not_(k.isnan(cur))))
            b.store(b.select(take, x, cur), best)
            b.store(b.select(take, j, b.load(where)), where)
        k.loop(n, step)
        k.store(b.sitofp(b.load(where), k.f64), k.out, r)
    if n > 0:
        k.loop(rows, row)


def argsort(k: Kernel):
    """NumPy's stable argsort along the last axis, NaNs last (goat/aot/runtime/goat_rt.c)."""
    shape = k.in_shapes[0]
    if cells(shape) > 0:
        k.call("goat_argsort_rows", k.ir.VoidType(),
               [k.out, k.ins[0], k.int(cells(shape[:-1])), k.int(shape[-1])])


def randperm(k: Kernel):
    """The order that sorts rand(tensor[N], seed) (goat/aot/runtime/rng.c)."""
    seed = k.call("goat_check_seed", k.i64, [k.load(k.ins[0], 0), k.site])
    k.call("goat_randperm", k.ir.VoidType(), [k.out, k.int(cells(k.out_shape)), seed])


def draw(name: str):
    """rand / randn: the runtime's SplitMix64 draws (goat/aot/runtime/rng.c), the same bits as
    goat/ops/rng.py."""
    def lower(k: Kernel):
        seed = k.call("goat_check_seed", k.i64, [k.load(k.ins[0], 0), k.site])
        k.call(name, k.ir.VoidType(), [k.out, k.int(cells(k.out_shape)), seed])
    return lower


def sample_rows(k: Kernel):
    p = k.in_shapes[0]
    n = p[-1]
    rows = cells(p[:-1])
    seed = k.call("goat_check_seed", k.i64, [k.load(k.ins[1], 0), k.site])
    k.call("goat_sample_rows", k.ir.VoidType(),
           [k.out, k.ins[0], k.int(rows), k.int(n), seed, k.site])


def load(k: Kernel):
    """load: the runtime's .npy reader (goat/aot/runtime/npy.c), the file checked against
    the declared shape when it runs.  A name with {fields} (registry.FileName) is made in
    the runtime's format buffer from the fields' values, the kernel's arguments, as save
    makes its name (goat_save_named)."""
    from ..ops.registry import FileName
    path, _target = k.attrs
    shape = k.out_shape
    b = k.b
    lw = k.lw
    void = k.ir.VoidType()
    if type(path) is not FileName:
        path, shown = path
        k.call("goat_load_npy", void, [k.out, lw.cstring(b, path), lw.cstring(b, shown),
                                       k.int(len(shape)), lw.dims(b, shape), k.site])
        return
    buf = lw.fmtbuf
    for part in path.parts:
        if isinstance(part, str):
            k.call("goat_str_add", void, [buf, lw.cstring(b, part)])
            continue
        x = k.op.n_values + part[0]
        if cells(k.in_shapes[x]) != 1:      # a ? size the checker left to the run
            from ..interp.fmt import field_shape_message
            fail = lw.runtime("goat_fail", void, [lw.i8p, lw.i8p], var_arg=True)
            b.call(fail, [k.site, lw.cstring(b, "%s"),
                          lw.cstring(b, field_shape_message(k.in_shapes[x]))])
            continue
        if part[1]:
            k.call("goat_format_value", void, [buf, k.load(k.ins[x], 0),
                                               lw.cstring(b, part[1]), k.site])
        else:       # a whole number with every digit (fmt.format_name_number)
            k.call("goat_format_name_value", void, [buf, k.load(k.ins[x], 0)])
    from ..typecheck.checker import resolve_path
    k.call("goat_load_named", void, [k.out, lw.cstring(b, resolve_path(".", path.loc)), buf,
                                     k.int(len(shape)), lw.dims(b, shape), k.site])
