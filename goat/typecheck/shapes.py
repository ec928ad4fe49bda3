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


class SizePoly:
    """A size that is arithmetic on a def's size variables: ``K + H``, ``4*H``, ``B*T``,
    ``N - 1`` (a polynomial with whole coefficients).  Like a :class:`SizeVar` it is rigid:
    equal only to the same polynomial (``H + K`` is ``K + H``), never to a number or to one
    variable (those are ints and SizeVars: see :func:`size_poly`).  Each call works it out from
    the sizes it binds (:func:`size_value`).

    ``terms`` maps each monomial (a sorted tuple of variable names, one per factor; ``()`` for
    the constant) to its coefficient, in the order the terms were written."""

    __slots__ = ("terms", "_key")

    def __init__(self, terms: dict):
        self.terms = terms
        self._key = frozenset(terms.items())

    def __eq__(self, other):
        return type(other) is SizePoly and other._key == self._key

    def __hash__(self):
        return hash(("SizePoly", self._key))

    @property
    def names(self) -> tuple:
        """The size variables, in the order they are written."""
        return tuple(dict.fromkeys(n for m in self.terms for n in m))

    def __repr__(self):
        out = []
        # the terms added first, as written, then those subtracted (3 - N, 2*N - 1)
        for mono, c in sorted(self.terms.items(), key=lambda t: (t[1] < 0, t[0] == ())):
            factors = [str(abs(c))] if abs(c) != 1 or not mono else []
            text = "*".join(factors + list(mono))
            if not out:
                out.append(text if c > 0 else "-" + text)
            else:
                out.append(("+ " if c > 0 else "- ") + text)
        return " ".join(out)


def _poly(d) -> dict:
    if type(d) is int:
        return {(): d} if d else {}
    if type(d) is SizeVar:
        return {(d.name,): 1}
    return dict(d.terms)


def size_poly(terms: dict):
    """The size ``terms`` stand for, in its simplest kind: an int, a SizeVar or a SizePoly."""
    terms = {m: c for m, c in terms.items() if c}
    if not terms:
        return 0
    if len(terms) == 1:
        (mono, c), = terms.items()
        if not mono:
            return c
        if c == 1 and len(mono) == 1:
            return SizeVar(mono[0])
    return SizePoly(terms)


def is_symbolic(d) -> bool:
    """Is ``d`` a size a def's call gives (a size variable, or arithmetic on them)?"""
    return type(d) is SizeVar or type(d) is SizePoly


def size_names(d) -> tuple:
    """The size variables a size names (none for a number or ``?``)."""
    if type(d) is SizeVar:
        return (d.name,)
    if type(d) is SizePoly:
        return d.names
    return ()


def size_add(a, b, sign: int = 1):
    """``a + b`` (``a - b`` with sign -1) of two sizes (int, SizeVar or SizePoly; None when
    either is ``?``)."""
    if a is None or b is None or type(a) is RunDim or type(b) is RunDim:
        return None
    if type(a) is int and type(b) is int:
        return a + sign * b
    out = _poly(a)
    for m, c in _poly(b).items():
        out[m] = out.get(m, 0) + sign * c
    return size_poly(out)


def size_mul(a, b):
    """``a * b`` of two sizes (None when either is ``?``)."""
    if a is None or b is None or type(a) is RunDim or type(b) is RunDim:
        return None
    if type(a) is int and type(b) is int:
        return a * b
    out = {}
    for m1, c1 in _poly(a).items():
        for m2, c2 in _poly(b).items():
            m = tuple(sorted(m1 + m2))
            out[m] = out.get(m, 0) + c1 * c2
    return size_poly(out)


def size_div(a, b):
    """``a / b`` when it is a size for every value of the variables (each of a's terms a
    whole multiple of b, a number or one term), else None."""
    if type(a) is int and type(b) is int:
        return a // b if b and not a % b else None
    pb = _poly(b)
    if len(pb) != 1:
        return a if a == b and a is not None else None
    (mb, cb), = pb.items()
    if cb == 0:
        return None
    out = {}
    for m, c in _poly(a).items():
        rest = list(m)
        for n in mb:
            if n not in rest:
                return None
            rest.remove(n)
        if c % cb:
            return None
        out[tuple(rest)] = out.get(tuple(rest), 0) + c // cb
    return size_poly(out)


def size_floordiv(a, k: int):
    """``a // k`` for a whole k >= 1 when it is arithmetic for every value of the
    variables (each term but the constant a multiple of k), else None."""
    if type(a) is int:
        return a // k
    if a is None or type(a) is RunDim:
        return None
    out = {}
    for m, c in _poly(a).items():
        if m and c % k:
            return None
        out[m] = c // k
    return size_poly(out)


def size_value(d, value):
    """A size for one call: ``value(name)`` gives each size variable's size (an int, a size of
    the def the call is written in, or None for one known only when the call runs); None where
    one is None."""
    if type(d) is SizeVar:
        return value(d.name)
    if type(d) is not SizePoly:
        return d
    total = 0
    for mono, c in d.terms.items():
        term = c
        for n in mono:
            term = size_mul(term, value(n))
        total = size_add(total, term)
    return total


def solve_size(d, x, value):
    """The one size variable of ``d`` that ``value`` leaves open (None), worked out from
    ``d = x``: (name, its size), (name, None) when no whole size from 0 makes ``d`` equal the
    number ``x``, or None when ``d`` leaves no single variable to work out (none open,
    several, one multiplied by itself, or a quotient that is no size for every size of the
    def the call is in)."""
    open_ = [n for n in d.names if value(n) is None]
    if len(open_) != 1:
        return None
    n = open_[0]
    coeff = rest = 0
    for mono, c in d.terms.items():
        k = mono.count(n)
        if k > 1:
            return None
        term = c
        for m in mono:
            if m != n:
                term = size_mul(term, value(m))
        if k:
            coeff = size_add(coeff, term)
        else:
            rest = size_add(rest, term)
    if coeff == 0:
        return None
    v = size_div(size_add(x, rest, -1), coeff)
    if type(v) is int and v < 0 or v is None:
        return (n, None) if type(x) is int and type(coeff) is int and type(rest) is int \
            else None
    return n, v


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


class RunPoly:
    """Arithmetic on sizes only the running program knows: a def's ``N - 1`` (a slice's
    length, ``zeros(tensor[N - 1])``) at a call that binds N to a ``?`` size.  ``terms`` maps
    each monomial (a tuple of RunDims) to its coefficient; :meth:`resolve` works it out when
    the op runs.  In a node's shape the same size is ``?``."""

    __slots__ = ("terms", "_key", "poly", "names")

    def __init__(self, terms: dict, poly=None, names=None):
        self.terms = terms
        self._key = frozenset(terms.items())
        self.poly = poly            # the arithmetic as written (N - 1), for its message
        self.names = names or {}    # each of its variables: a size, or the RunDim giving it

    def __eq__(self, other):
        return type(other) is RunPoly and other._key == self._key

    def __hash__(self):
        return hash(("RunPoly", self._key))

    def __repr__(self):
        return "?"

    @property
    def dims(self) -> list:
        """The RunDims it reads, in order."""
        return list(dict.fromkeys(r for m in self.terms for r in m))

    def resolve(self, size) -> int:
        """Its value, ``size(run_dim)`` giving each size read; ShapeError where it is no
        size (negative: N - 1 of N = 0)."""
        total = 0
        for mono, c in self.terms.items():
            for r in mono:
                c *= size(r)
            total += c
        if total < 0:
            raise ShapeError("the size %s is %d for this call (%s): a size is a whole number "
                             "from 0" % (self.poly if self.poly is not None else "here", total,
                                         ", ".join("%s = %d" % (n, v if type(v) is int
                                                                else size(v))
                                                   for n, v in self.names.items())))
        return total


def format_dim(d) -> str:
    if d is None or type(d) is RunDim or type(d) is RunPoly:
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
    return "x".join("(%s)" % format_dim(d) if type(d) is SizePoly and len(shape) > 1
                    else format_dim(d) for d in shape)


def format_type(shape) -> str:
    """The annotation syntax: ``tensor[112x8]``, ``tensor[N, K]``, ``scalar``."""
    if len(shape) == 0:
        return "scalar"
    if any(isinstance(d, (SizeVar, SizePoly)) or d is ... for d in shape):
        return "tensor[%s]" % ", ".join(repr(d) if type(d) is SizePoly else format_dim(d)
                                        for d in shape)
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


def _same_hint(d1, d2) -> str:
    """Where a size written as arithmetic meets a size variable (K + 1 and J), how to say
    they are one size: the def's parameter writes it as that arithmetic."""
    for p, v in ((d1, d2), (d2, d1)):
        if type(p) is SizePoly and type(v) is SizeVar and not v.name.startswith("..."):
            return ("; where they are always equal, write %s in the parameter's type as %s"
                    % (v.name, p))
    return ""


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
            raise ShapeError("cannot %s shapes %s and %s: dimensions %s and %s %s and neither is 1%s"
                             % (verb, format_shape(a), format_shape(b), format_dim(da),
                                format_dim(db), why, _same_hint(da, db)))
    return tuple(out)


def matmul(a: tuple, b: tuple) -> tuple:
    """The shape of ``a @ b``: ``MxK @ KxN -> MxN``; leading (batch) dimensions broadcast."""
    if len(a) < 2 or len(b) < 2:
        if len(a) == 0 or len(b) == 0:
            hint = "; to scale by a number, use * (elementwise)"
        elif len(a) == 1:
            hint = ("; a vector on the left is a row, a %s matrix: reshape(x, %s)"
                    % (format_shape((1, a[0])), format_type((1, a[0]))))
        else:
            hint = ("; a vector on the right is a column, a %s matrix: reshape(x, %s)"
                    % (format_shape((b[0], 1)), format_type((b[0], 1))))
        raise ShapeError("cannot matrix-multiply shapes %s and %s: both operands of @ must be "
                         "matrices (rank 2 or more)%s" % (format_shape(a), format_shape(b), hint))
    k1, k2 = a[-1], b[-2]
    if not (_same(k1, k2) or k1 is None or k2 is None):
        why = "differ" if type(k1) is int and type(k2) is int else "may differ"
        raise ShapeError("cannot matrix-multiply shapes %s and %s: the inner dimensions %s and "
                         "%s %s%s" % (format_shape(a), format_shape(b), format_dim(k1),
                                      format_dim(k2), why, _same_hint(k1, k2)))
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
