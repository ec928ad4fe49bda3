"""The op registry: every operator and built-in function is one :class:`Op` entry.

An entry declares, side by side (after JAX's primitives): its name and arity, a one-line doc
with shapes in and out, its **shape rule** (used by the checker, the REPL's hints and the
run-time re-check of ``?`` dimensions), and its **evaluation** on an array back end (``xp`` is
NumPy or CuPy), its vector-Jacobian product (``vjp``, below) and its LLVM lowering
(``lowering``: one of the factories of goat/aot/kernels.py, called with a kernel builder for
the op's actual shapes; ``kernels.ALIAS`` for an op whose result shares its argument's
cells; ``kernels.VIEW`` for reshape, which shares them when goat run's array is row-major),
which ``goat compile --aot`` uses.  An elementwise op also gives its scalar body in C
(``kernel``), from which a GPU back end generates its kernels and fuses chains of them.

``vjp`` is the op's vector-Jacobian product, used by ``grad`` (goat/autodiff/grad.py):
``vjp(d, g, out, *args, *attrs)`` gets an emitter ``d`` (which makes checked nodes: ``d.mul``,
``d.matmul``, ``d.unbroadcast`` ...), the cotangent ``g`` of the op's result ``out`` (a node of
``out``'s shape) and the op's argument nodes, and returns one entry per value argument: the
cotangent node for that argument, :data:`ZERO` (the derivative is zero: nothing flows), or
None (no derivative: ``grad`` reports an error if that argument depends on what is
differentiated).  An op whose ``vjp`` is None has no derivative at all.

The parser's token table, the highlighter and completion read the names from here
(:func:`builtin_names`), so a new op needs no edit anywhere else.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from ..typecheck.shapes import SizePoly, SizeVar


@dataclass(frozen=True, eq=False)    # identity hash: ops are keys of hash-consing
class Op:
    name: str                       # the name a program calls it by, or the operator's name
    arity: int
    signature: str                  # e.g. "row_sum(x: RxC) -> Rx1"
    doc: str                        # one line: what it computes, and its source
    shape: Callable                 # (*shapes) -> shape; raises ShapeError
    evaluate: Callable              # (backend) -> (*arrays) -> array
    symbol: str | None = None       # "+", "@", ... for operators; None for functions
    callable_by_name: bool = True   # False for operators (written as symbols only)
    vjp: Callable | None = None     # reverse-mode derivative (see the module's doc)
    lowering: Callable | None = None  # (kernel) -> None: LLVM lowering (goat/aot/kernels.py)
    tags: tuple = field(default=())   # "elementwise", "reduction", "comparison", "indices"
                                      # (its result is column numbers), ...
    # The parameters as written in a call, (name, kind): kind "value" (a tensor, an argument
    # node) or a static attribute known when the program is checked -- "type" (a shape written
    # tensor[...]), "string" (a file name), "int" (a whole number written in the program).
    # Empty: `arity` values.  Attributes follow the argument shapes in `shape` and the back
    # end in `evaluate`, in order: shape(*shapes, *attrs), evaluate(backend, *attrs).
    params: tuple = field(default=())
    pure: bool = True               # False: reads the world (a file); never shared or moved
    checks_at_run_time: bool = False  # the shape rule runs again on actual shapes, always
    # the value arguments (their positions) that only choose among the others, as a where's
    # condition: their derivative is zero, and grad does not follow them
    chooses: tuple = ()
    # the op checks its operands' values when it runs (indices, seeds) and may stop the
    # program there: it is not moved out of a loop body ahead of the body's earlier statements
    checks_values: bool = False
    # for such an op, (the value arguments' constant values, None for one computed, their
    # shapes, the attributes) -> returns if the check is sure to pass (so the op may still be
    # computed once before a loop), raises otherwise; None: never sure
    static_check: Callable | None = None
    # a string attribute as the op keeps it (load resolves a file name against the folder of
    # the program); (value, Loc) -> attribute; None keeps the string as written.  A string
    # written with {fields} is a FileName (below), whose text is made when the op runs: the
    # fields' values are arguments after the op's values, and string_attr is applied then
    string_attr: Callable | None = None
    # a type parameter that may also be written as a whole number (onehot(t, 5) for
    # onehot(t, tensor[Nx5])): (the value arguments' shapes, the number) -> the type
    count_type: Callable | None = None
    # an elementwise op's scalar body in C (CUDA C++ and C alike), for back ends that generate
    # kernels (the CuPy back end fuses chains of such ops into one kernel, goat/gpu/kernels.py):
    # a format string over its operands, "{0} + {1}"; None: no kernel, the op runs unfused
    kernel: str | None = None
    # generated kernels give the op's NaN results x86's bits (a GPU's are its own canonical
    # NaN): the first NaN operand's, or for a NaN made out of numbers (0/0, inf - inf,
    # sqrt(-1)) x86's default NaN, sign bit set (printed -nan, as the book prints it)
    fresh_nan: bool = False
    # what one cell of the result costs, in floating-point operations, for --backend auto's
    # estimate (goat/gpu/auto.py): 1 for most ops; a draw computes its logs and cosines itself
    # (goat/ops/rng.py), some hundreds to thousands of operations a cell, as measured
    cell_flops: float = 1.0
    # for an op whose work is not one pass over its operands and result: (node) -> (flops,
    # bytes), as --backend auto counts them; None: cell_flops per cell, every cell moved
    cost: Callable | None = None
    # an evaluation that may write its result into its first argument's array, as
    # ``evaluate`` is made, (backend, *attrs) -> (*arrays) -> array: the evaluator uses it on a
    # back end that allows it (NumPy's) where that argument's value is read by nothing after
    # (its last use, the evaluator's slot emptied first); the function still copies the array
    # when anything else holds it (put: an assignment x[i] = v in a loop, in place)
    overwrites: Callable | None = None
    # the op's value when its operands' shapes fix it, (shapes, attrs) -> a number or None:
    # the checker takes it as a number the program fixes (size(x, 0) as a let's size)
    static_value: Callable | None = None
    # the "int" parameters a def's size variable may give, its value each call's (narrow's
    # length: narrow(hp, 1, 1, L) in a def over x: tensor[N, L])
    size_params: tuple = ()

    def __post_init__(self):
        if not self.params:
            object.__setattr__(self, "params", (("x", "value"),) * self.arity)
        elif len(self.params) != self.arity:
            raise ValueError("op %s: %d params for arity %d" % (self.name, len(self.params),
                                                                self.arity))

    @property
    def n_values(self) -> int:
        """How many of its arguments are values (they come first; attributes follow)."""
        return sum(1 for _, kind in self.params if kind == "value")

    def subst_attrs(self, attrs: tuple, subst: Callable) -> tuple:
        """``attrs`` with every shape attribute passed through ``subst`` (a def's size variables
        replaced by the sizes of one call)."""
        kinds = [kind for _, kind in self.params if kind != "value"]
        # (an attribute past the written parameters, narrow's wording for a subscript, is kept;
        # a whole number that is a size variable, a def's slice x[:, 0:L], is the call's size)
        return tuple(subst(a) if k == "type" else subst((a,))[0] if isinstance(a, (SizeVar, SizePoly))
                     else a for a, k in zip(attrs, kinds)) + tuple(attrs[len(kinds):])


class OpError(Exception):
    """A problem found while an op runs on actual values (a file that cannot be read, a seed
    that is not a whole number, ...), in the user's terms.  The evaluator adds the line of the
    expression that failed and reports it as ``PATH:LINE: error: MESSAGE``."""

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


class FileName:
    """A string attribute written with ``{fields}``, as ``save``'s name may be:
    ``load("w_{step:03d}.npy", tensor[4x4])``.  Its text is made each time the op runs.

    ``parts`` holds text and, per field, ``(k, spec, Loc)``: the field's value is the op's
    argument ``n_values + k`` (one number), formatted as a formatted print formats it, but for
    ``spec`` None: a whole number has all its digits (fmt.format_name_number).  ``attr`` (the op's ``string_attr``, or None) turns the text
    into the attribute the op takes, as it turns a name written without fields."""

    __slots__ = ("parts", "loc", "attr", "fields")

    def __init__(self, parts: list, loc, attr: Callable | None):
        self.parts = tuple(parts)
        self.loc = loc
        self.attr = attr
        self.fields = sum(1 for p in parts if not isinstance(p, str))

    def text(self, numbers) -> str:
        """The name, with field ``k`` holding ``numbers[k]`` (floats).  Raises OpError for a
        number its spec cannot format (``{i:d}`` of 2.5)."""
        from ..interp.fmt import format_value
        return "".join(p if isinstance(p, str) else format_value(numbers[p[0]], p[1], True)
                       for p in self.parts)

    def resolve(self, numbers):
        """The attribute the op takes, for these field values."""
        text = self.text(numbers)
        return self.attr(text, self.loc) if self.attr else text

    def __repr__(self):
        """Every part, spec and the folder the name is relative to: goat compile --aot shares
        a kernel between ops of equal reprs (f_{x}.npy and f_{x:.3f}.npy are two)."""
        folder = self.loc.source.folder if self.loc is not None else None
        return "FileName(%r, %r)" % (folder, tuple(p if isinstance(p, str) else (p[0], p[1])
                                                   for p in self.parts))


def field_count(attrs) -> int:
    """How many arguments after an op's values the :class:`FileName` attributes among
    ``attrs`` read (their fields' values)."""
    return sum(a.fields for a in attrs if type(a) is FileName)


ZERO = "zero"       # a vjp's entry: the derivative with respect to this argument is zero


def identity(x):
    """The evaluation of ops that pass their argument on unchanged (the evaluator copies the
    reference, no call)."""
    return x


REGISTRY: dict[str, Op] = {}
OPERATORS: dict[str, Op] = {}       # symbol -> op, binary operators
UNARY_OPERATORS: dict[str, Op] = {}  # symbol -> op


# the first word of the checker's hash-consing keys for constants and casts
RESERVED = {"s", "a", "cast", "same", "get", "call", "grad"}

# program transformations a program calls like functions, which the checker carries out itself
# (not ops: they make nodes rather than compute a value): name -> (signature, doc)
TRANSFORMS = {
    "grad": ("grad(loss, w1, w2, ...) -> (shape of w1, shape of w2, ...)",
             "the gradient of the one-element value loss with respect to the named values "
             "(lets, vars, parameters), by reverse-mode differentiation of the checked program; "
             "one name gives one tensor, several give a tuple"),
    "split": ("split(x, n, axis) -> (n values, each x's shape but size / n on axis)",
              "x's cells along axis in n equal parts, in order: NumPy's split(x, n, axis), "
              "PyTorch's chunk(x, n, dim) (whose split takes a part's size instead); the size "
              "must be a multiple of n, both known before the run -- let q, k, v = split(qkv, "
              "3, -1)"),
}


def register(op: Op) -> Op:
    if op.name in REGISTRY:
        raise ValueError("op %s registered twice" % op.name)
    if op.name in RESERVED:
        raise ValueError("op name %s is reserved for the checker's own keys" % op.name)
    REGISTRY[op.name] = op
    if op.symbol is not None:
        (OPERATORS if op.arity == 2 else UNARY_OPERATORS)[op.symbol] = op
    return op


def lookup(name: str) -> Op | None:
    """The built-in function called ``name`` in a program, or None."""
    op = REGISTRY.get(name)
    if op is None or not op.callable_by_name:
        return None
    return op


def builtin_names() -> list[str]:
    """Every built-in function name a program may call, sorted."""
    return sorted([name for name, op in REGISTRY.items() if op.callable_by_name] + list(TRANSFORMS))


def signature(name: str) -> str:
    """The signature of a built-in function or transformation a program may call."""
    if name in TRANSFORMS:
        return TRANSFORMS[name][0]
    return REGISTRY[name].signature
