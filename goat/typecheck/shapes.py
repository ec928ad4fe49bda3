"""Shapes: the types of goat.

A shape is a tuple of dimensions, outermost first (row-major), of any rank; ``()`` is a scalar.
A dimension is

* an ``int`` -- known before the program runs;
* ``None`` -- written ``?``: unknown until run time, so every operation on it is checked again
  when it runs (LANGUAGE.md, Part A);
* a :class:`SizeVar` -- a size variable such as ``N`` in ``tensor[N, K]``: unknown inside a
  ``def`` body, bound at each call (Part B2).

Every shape rule raises :class:`ShapeError` with the message the user sees; the checker adds
the position.  The same rules run again at run time on actual shapes wherever a ``?`` made the
static check incomplete, so a run-time failure reads exactly like a static one.
"""
from __future__ import annotations


class ShapeError(Exception):
    """A shape rule's complaint, in the user's terms (no position yet)."""

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


class SizeVar:
    """A named, rigid size: equal only to itself."""

    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name

    def __repr__(self):
        return self.name

    def __eq__(self, other):
        return isinstance(other, SizeVar) and other.name == self.name

    def __hash__(self):
        return hash(("SizeVar", self.name))


class RunDim:
    """A size only the running program knows: dimension ``axis`` of ``node``'s value.

    It stands in a static attribute (the shape of ``zeros(tensor[T, T])``) when a call binds a
    def's size variable T to a ``?`` dimension of that argument; the op reads the size when it
    runs.  In a node's shape the same size is ``?``."""

    __slots__ = ("node", "axis")

    def __init__(self, node, axis: int):
        self.node = node
        self.axis = axis

    def __eq__(self, other):
        return isinstance(other, RunDim) and other.node is self.node and other.axis == self.axis

    def __hash__(self):
        return hash(("RunDim", self.node.id, self.axis))

    def __repr__(self):
        return "?"


def format_dim(d) -> str:
    if d is None or type(d) is RunDim:
        return "?"
    if d is ...:
        return "..."
    return str(d)


def format_huge(d) -> str:
    """A size or an axis as :func:`format_dim` writes it, but one far past what any machine
    holds (10**30 or more: a float such as 1e300 taken as a count) as %g: ``1e+300``, not
    301 digits."""
    if type(d) is int and abs(d) >= 10 ** 30:
        return "%.6g" % d
    return format_dim(d)


def format_shape(shape) -> str:
    """``6x6``, ``?x4``, ``NxK``, ``scalar`` -- as the book writes shapes."""
    if len(shape) == 0:
        return "scalar"
    return "x".join(format_dim(d) for d in shape)


def format_type(shape) -> str:
    """The annotation syntax: ``tensor[112x8]``, ``tensor[N, K]``, ``scalar``."""
    if len(shape) == 0:
        return "scalar"
    if any(isinstance(d, SizeVar) or d is ... for d in shape):
        return "tensor[%s]" % ", ".join(format_dim(d) for d in shape)
    return "tensor[%s]" % format_shape(shape)


MAX_BYTES = 2 ** 63 - 1       # what any machine's address space (and NumPy) can index
def _numpy_max_rank() -> int:
    """NumPy's most dimensions: 64 since NumPy 2.0, 32 before."""
    import numpy as np
    try:
        np.empty((1,) * 64)
        return 64
    except ValueError:
        return 32


MAX_RANK = _numpy_max_rank()


def strip_rest(shape) -> tuple:
    """A parameter's declared shape without its leading ``...`` (what ``...`` = no sizes
    gives)."""
    return tuple(shape[1:]) if shape and shape[0] is ... else tuple(shape)


def check_size(shape) -> None:
    """Raise ShapeError for a shape no machine can hold: more than 2**63 - 1 bytes of float64
    cells, counting each empty dimension as 1 (as NumPy does).  Exact integers: no overflow."""
    if len(shape) > MAX_RANK:
        raise ShapeError("%s has %d dimensions; a tensor may have at most %d (NumPy's limit)"
                         % (format_type(shape) if len(shape) < 100 else "this tensor",
                            len(shape), MAX_RANK))
    cells = 1
    for d in shape:
        if type(d) is int and d > 1:
            cells *= d
    if cells * 8 > MAX_BYTES:
        raise ShapeError("%s is too large for any machine to address: more than 2**63 bytes"
                         % (format_type(shape) if any(type(d) is not int for d in shape)
                            else "tensor[%s]" % "x".join(format_huge(d) for d in shape)))


def cells(shape):
    """The number of cells of a shape whose sizes are all known, else None."""
    n = 1
    for d in shape:
        if type(d) is not int:
            return None
        n *= d
    return n


def known_cells(shape) -> int:
    """The cells of a shape for an estimate: a size known only when the program runs counts
    as 1 (``--backend auto``'s cost, goat/gpu/auto.py)."""
    n = 1
    for d in shape:
        n *= d if type(d) is int else 1
    return n


def is_static(shape) -> bool:
    """True when every dimension is a known int."""
    for d in shape:
        if type(d) is not int:
            return False
    return True


def _same(a, b) -> bool:
    """Provably equal dimensions."""
    return a is not None and b is not None and a == b


def broadcast(verb: str, a: tuple, b: tuple) -> tuple:
    """The shape of an elementwise ``a OP b`` under NumPy's broadcasting rules.

    Dimensions are aligned from the right; each pair must be equal or contain a 1.  A ``?``
    paired with anything is accepted here (it is checked again at run time).  ``verb`` names
    the operation in the message: ``cannot add shapes 6x6 and 4x4: dimensions 6 and 4 differ
    and neither is 1`` (the book's wording; the first differing pair is named).
    """
    if a == b:
        return a
    ra, rb = len(a), len(b)
    if ra == 0:
        return b
    if rb == 0:
        return a
    r = max(ra, rb)
    pa = (1,) * (r - ra) + tuple(a)
    pb = (1,) * (r - rb) + tuple(b)
    out = []
    for da, db in zip(pa, pb):
        if da == 1:
            out.append(db)
        elif db == 1:
            out.append(da)
        elif _same(da, db):
            out.append(da)
        elif da is None:
            out.append(db)
        elif db is None:
            out.append(da)
        else:
            why = "differ" if type(da) is int and type(db) is int else "may differ"
            raise ShapeError("cannot %s shapes %s and %s: dimensions %s and %s %s and neither is 1"
                             % (verb, format_shape(a), format_shape(b), format_dim(da),
                                format_dim(db), why))
    return tuple(out)


def matmul(a: tuple, b: tuple) -> tuple:
    """The shape of ``a @ b``: ``MxK @ KxN -> MxN``; leading (batch) dimensions broadcast."""
    if len(a) < 2 or len(b) < 2:
        if len(a) == 0 or len(b) == 0:
            hint = "; to scale by a number, use * (elementwise)"
        elif len(a) == 1:
            hint = ("; a vector on the left is a row, a 1x%s matrix: reshape(x, tensor[1x%s])"
                    % (format_dim(a[0]), format_dim(a[0])))
        else:
            hint = ("; a vector on the right is a column, a %sx1 matrix: reshape(x, tensor[%sx1])"
                    % (format_dim(b[0]), format_dim(b[0])))
        raise ShapeError("cannot matrix-multiply shapes %s and %s: both operands of @ must be "
                         "matrices (rank 2 or more)%s" % (format_shape(a), format_shape(b), hint))
    k1, k2 = a[-1], b[-2]
    if not (_same(k1, k2) or k1 is None or k2 is None):
        why = "differ" if type(k1) is int and type(k2) is int else "may differ"
        raise ShapeError("cannot matrix-multiply shapes %s and %s: the inner dimensions %s and "
                         "%s %s" % (format_shape(a), format_shape(b), format_dim(k1),
                                    format_dim(k2), why))
    batch = ()
    if len(a) > 2 or len(b) > 2:
        try:
            batch = broadcast("matrix-multiply", a[:-2], b[:-2])
        except ShapeError as e:
            # name the whole shapes, not just their batch dimensions
            why = e.message.split(": ", 1)[1]
            raise ShapeError("cannot matrix-multiply shapes %s and %s: batch %s"
                             % (format_shape(a), format_shape(b), why)) from None
    return tuple(batch) + (a[-2], b[-1])


def compatible(declared: tuple, actual: tuple):
    """Does a value of shape ``actual`` fit a declared shape?

    Returns (ok, needs_runtime_check).  ``?`` on either side matches anything (on the actual
    side, only at run time).  Size variables must be bound before this is asked (see
    :func:`bind`).
    """
    if len(declared) != len(actual):
        return False, False
    runtime = False
    for d, x in zip(declared, actual):
        if d is None:
            continue
        if x is None:
            runtime = True
            continue
        if d != x:
            return False, False
    return True, runtime


def bind(declared: tuple, actual: tuple, env: dict, what: str) -> tuple:
    """Bind the size variables of ``declared`` to the dimensions of ``actual`` in ``env``.

    Returns ``declared`` with bound variables replaced.  Raises ShapeError when a variable
    already bound to another size meets a different one (``what`` names the argument).
    """
    out = []
    for d, x in zip(declared, actual) if len(declared) == len(actual) else ():
        if isinstance(d, SizeVar):
            if d.name in env:
                prev, prev_what = env[d.name]
                if prev is not None and x is not None and prev != x:
                    if prev_what == what:
                        raise ShapeError("size variable %s would be both %s and %s in %s"
                                         % (d.name, format_dim(prev), format_dim(x), what))
                    raise ShapeError("size variable %s is %s for %s but %s for %s"
                                     % (d.name, format_dim(prev), prev_what, format_dim(x), what))
                if prev is None and x is not None:
                    env[d.name] = (x, what)
                out.append(env[d.name][0])
            else:
                env[d.name] = (x, what)
                out.append(x)
        else:
            out.append(d)
    if len(declared) != len(actual):
        return tuple(declared)
    return tuple(out)
