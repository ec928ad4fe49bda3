"""Format strings: ``print "step {i}: loss = {l:.6f}"``.

A format string is text with fields.  Each ``{...}`` holds an expression whose value has one
element, optionally followed by ``:`` and a format spec in Python's format mini-language
(https://docs.python.org/3/library/string.html#formatspec):
``[[fill]align][sign][z][#][0][width][grouping][.precision][type]``.

Text: the escapes ``\\n``, ``\\t``, ``\\\\`` and ``\\"``, and ``{{`` / ``}}`` for literal braces.
Any other backslash escape is an error that names it.

Fields (:func:`parse_format`):

* the expression is reported as offsets into the raw source text, with the whitespace around
  it trimmed (so a caret points at the expression itself);
* a ``:`` inside brackets belongs to the expression; the first ``:`` outside brackets starts the
  spec, which runs to the ``}`` (escapes in a spec are processed as in text, so a ``"`` fill
  is written ``\\"``);
* a ``}`` always ends the field (goat's expressions have no braces), so ``{f(x}`` is a field
  whose expression ``f(x`` the parser will reject;
* not supported, each an error with a position: an empty field ``{}``, nested fields such as
  ``{x:>{w}}``, conversions ``!r`` / ``!s`` / ``!a``, an unclosed ``{`` and a lone ``}``;
* each spec is checked when the string is parsed (:func:`check_spec`), so a bad spec is
  reported before the program runs, with its position.

Specs (:func:`check_spec`, :func:`format_value`):

* no spec, or an empty one (``{x}``, ``{x:}``): C's ``%g``, as ``print`` writes numbers
  (:func:`goat.interp.printer.format_number`);
* a spec with neither a type nor a precision (``{x:>8}``, ``{x:+}``) is ``%g`` too, padded
  and signed as the spec says: it is the spec with ``g`` appended, so ``{x:>8}`` is ``{x}``
  right-aligned in 8 columns (Python itself would use ``repr`` here); with a grouping option
  (``{n:,}``, ``{n:_}``), a whole number is written with all its digits, grouped, as Python
  writes an int (``1,234,567``: a count of steps or tokens, which %g would make
  ``1.23457e+06``; 1e20 as ``:d`` writes it), any other number as ``%g`` grouped;
* the float types ``e E f F g G %``, and no type with a precision (``{x:.3}``), are Python's
  ``format(x, spec)``;  ``n`` is ``g`` (it is Python's ``n`` in the C locale: goat's output
  never depends on the locale);
* the integer types ``d b o x X`` need a whole number: ``2.5``, ``nan`` and ``inf`` are errors
  when the program runs; the value is formatted as ``format(int(x), spec)``, so ``-0.0`` with
  ``:d`` prints ``0``;
* refused before the program runs: ``s`` (goat's values are numbers, not text), ``c`` (a
  character), an unknown type, and widths or precisions over :data:`MAX_DIGITS`.

A NaN prints as ``nan``, or ``-nan`` when its sign bit is set, as glibc's printf does (Python
always writes ``nan``); upper-case types write ``NAN``.  Width, fill, alignment and the sign
option apply to it exactly as Python applies them to ``inf``.
"""
from __future__ import annotations

import functools
import math
import re

from goat.interp.printer import format_number
from goat.ops.registry import OpError
from goat.typecheck.shapes import format_shape

MAX_DIGITS = 1000    # the largest width or precision a spec may ask for

FLOAT_TYPES = frozenset("eEfFgG%n")
INT_TYPES = frozenset("dboxX")
_ESCAPES = {"n": "\n", "t": "\t", "\\": "\\", '"': '"'}
_OPEN = "(["
_CLOSE = ")]"

# the mini-language, as documented; every part optional
_SPEC = re.compile(r"""
    (?:(?P<fill>.)?(?P<align>[<>=^]))?
    (?P<sign>[-+ ])?
    (?P<z>z)?
    (?P<alt>\#)?
    (?P<zero>0)?
    (?P<width>\d+)?
    (?P<grouping>[,_])?
    (?:(?P<dot>\.)(?P<precision>\d+)?)?
    (?P<type>.)?
    \Z""", re.VERBOSE | re.DOTALL)


class FormatSyntaxError(Exception):
    """A mistake in a format string; ``start`` and ``end`` are offsets into the raw text."""

    def __init__(self, message: str, start: int, end: int):
        super().__init__(message)
        self.message = message
        self.start = start
        self.end = end


# ---------------------------------------------------------------------------------- parsing

def parse_format(raw: str) -> list:
    """The parts of a format string, from the raw text between its quotes.

    ``("text", s)`` with escapes processed (adjacent text is one part, and an empty one is left
    out), and ``("field", start, end, spec)``: ``raw[start:end]`` is the expression, trimmed of
    whitespace; ``spec`` is the text after the top-level ``:`` with escapes processed, or None.
    Raises FormatSyntaxError.
    """
    parts = []
    text = []
    i = 0
    n = len(raw)
    while i < n:
        c = raw[i]
        if c == "\\":
            s, i = _escape(raw, i)
            text.append(s)
        elif c == "{":
            if raw.startswith("{", i + 1):
                text.append("{")
                i += 2
                continue
            field, i = _field(raw, i)
            if text:
                parts.append(("text", "".join(text)))
                text = []
            parts.append(field)
        elif c == "}":
            if raw.startswith("}", i + 1):
                text.append("}")
                i += 2
                continue
            raise FormatSyntaxError("a lone } in a format string: write }} for a literal }",
                                    i, i + 1)
        else:
            text.append(c)
            i += 1
    if text:
        parts.append(("text", "".join(text)))
    return parts


def _escape(raw: str, i: int):
    """(the character, the next offset) for the escape at raw[i] == '\\'."""
    if i + 1 >= len(raw):
        raise FormatSyntaxError("a lone \\ at the end of a string: write \\\\ for a backslash",
                                i, i + 1)
    c = raw[i + 1]
    if c in _ESCAPES:
        return _ESCAPES[c], i + 2
    raise FormatSyntaxError('unknown escape \\%s in a string: the escapes are \\n, \\t, \\\\ '
                            'and \\"' % c, i, i + 2)


def _field(raw: str, open_at: int):
    """(the field part, the offset after its '}') for the field whose '{' is at open_at."""
    n = len(raw)
    i = open_at + 1
    depth = 0
    colon = None
    while i < n:
        c = raw[i]
        if c == "}":
            break
        if c == "{":
            raise FormatSyntaxError("a { inside a format field: fields do not nest (write {{ "
                                    "for a literal {, outside a field)", i, i + 1)
        if c == "\\":
            raise FormatSyntaxError("a \\ inside a format field: escapes belong in the text "
                                    "around fields", i, i + 1)
        if c in _OPEN:
            depth += 1
        elif c in _CLOSE:
            depth = max(depth - 1, 0)
        elif c == "!" and depth == 0 and not raw.startswith("!=", i):
            raise FormatSyntaxError("conversions like !r are not supported: goat formats "
                                    "numbers; put a format spec after a colon instead, as "
                                    "{x:.3f}", i, min(i + 2, n))
        elif c == ":" and depth == 0:
            colon = i
            break
        i += 1
    expr_end = i
    spec = None
    if colon is not None:
        spec_chars = []
        i = colon + 1
        while i < n and raw[i] != "}":
            c = raw[i]
            if c == "{":
                raise FormatSyntaxError("nested fields like {x:>{w}} are not supported: write "
                                        "the width or precision as a number, as {x:>8.3f}",
                                        i, i + 1)
            if c == "\\":
                s, i = _escape(raw, i)
                spec_chars.append(s)
            else:
                spec_chars.append(c)
                i += 1
        spec = "".join(spec_chars)
        spec_start, spec_end = colon + 1, i
    if i >= n:
        raise FormatSyntaxError("unclosed { in a format string: close the field with }, or "
                                "write {{ for a literal {", open_at, open_at + 1)
    close_at = i
    start, end = open_at + 1, expr_end
    while start < end and raw[start].isspace():
        start += 1
    while end > start and raw[end - 1].isspace():
        end -= 1
    if start == end:
        if spec is None:
            raise FormatSyntaxError("empty {} in a format string: write the value to print "
                                    "inside, as {loss}", open_at, close_at + 1)
        raise FormatSyntaxError("a format field needs a value before its ':', as {loss%s}"
                                % (":" + spec if spec else ":.3f"), open_at, close_at + 1)
    if spec is not None:
        problem = check_spec(spec)
        if problem is not None:
            raise FormatSyntaxError(problem, spec_start, max(spec_end, spec_start + 1))
    return ("field", start, end, spec), close_at + 1


# ------------------------------------------------------------------------------ format specs

@functools.lru_cache(maxsize=256)
def check_spec(spec: str | None) -> str | None:
    """None when ``spec`` is a format spec goat accepts, else the message that refuses it."""
    if not spec:
        return None
    shown = spec if len(spec) <= 40 else spec[:30] + "... (%d characters)" % len(spec)
    bad = "invalid format spec ':%s': " % shown
    m = _SPEC.match(spec)
    if m is None:
        return bad + ("it does not follow [[fill]align][sign][#][0][width][,][.precision]"
                      "[type], as in :>8.3f")
    kind = m.group("type")
    if kind == "s":
        return bad + "goat's values are numbers, and s formats text; use g, f, e or d"
    if kind == "c":
        return bad + "goat does not print numbers as characters; use d for a whole number"
    if kind is not None and kind not in FLOAT_TYPES and kind not in INT_TYPES:
        return bad + ("%r is not a format type; the types are e, E, f, F, g, G, n and %% "
                      "(any number) and d, b, o, x and X (whole numbers)" % kind)
    if m.group("dot") and m.group("precision") is None:
        return bad + "a '.' must be followed by the number of digits, as :.3f"
    for part, what in (("width", "width"), ("precision", "precision")):
        digits = m.group(part)
        # (compared as text first: int() refuses more than 4,300 digits)
        if digits is not None and (len(digits.lstrip("0")) > 6
                                   or int(digits.lstrip("0") or "0") > MAX_DIGITS):
            if len(digits) > 12:
                digits = digits[:6] + "... (%d digits)" % len(digits)
            return bad + "a %s of %s is too large (at most %d)" % (what, digits, MAX_DIGITS)
    if kind in INT_TYPES:
        if m.group("precision") is not None:
            return bad + ("a whole number has no digits after the point, so :%s takes no "
                          "precision; use :.%sf" % (kind, m.group("precision")))
        if m.group("z"):
            return bad + ("z (no negative zero) applies to decimals only; :%s prints -0.0 "
                          "as 0" % kind)
        sample = 0
    else:
        sample = 0.0
    try:
        format(sample, spec)
    except ValueError as e:          # anything the pattern lets through but Python refuses
        why = str(e).rstrip(".")
        return bad + why[:1].lower() + why[1:]
    return None


def _python_spec(spec: str) -> str:
    """The spec handed to Python's format() for a float: ``g`` where goat means %g."""
    m = _SPEC.match(spec)
    kind = m.group("type")
    if kind is None:
        return spec if m.group("precision") is not None else spec + "g"
    if kind == "n":
        return spec[:-1] + "g"
    return spec


def field_shape_message(shape, printed: bool = False) -> str:
    """The error of a ``{}`` field (of a print, a save's or a load's name, an assert's
    message) whose value is not one number: the checker's, the interpreter's and goat compile
    --aot's alike.  ``printed``: a print's or an assert's field, where the value may be
    printed whole instead."""
    return ("a {} field of a format string must hold a single number, but this value has "
            "shape %s%s" % (format_shape(shape), "; to show every number, print the value on "
                            "a line of its own (or one number of it: {v[0]})" if printed else ""))


#: a whole number below this in magnitude is written with all its digits in a file name
NAME_DIGITS_BELOW = 2.0 ** 53


def format_name_number(x: float) -> str:
    """A ``{}`` field without a spec in a ``save`` or ``load`` file name: a whole number below
    2**53 in magnitude with all its digits (``w_1000001.npy``, where ``%g`` made step 1000001
    ``1e+06`` and two checkpoints one file), any other number as C's ``%g``, as in a print.
    The C runtime's goat_format_name_value is the same."""
    if math.isfinite(x) and x == math.floor(x) and abs(x) < NAME_DIGITS_BELOW:
        return str(int(x))
    return format_number(x)


def format_value(x: float, spec: str | None, name: bool = False) -> str:
    """``x`` formatted by ``spec`` (None: C's ``%g``; in a file name, ``name``,
    :func:`format_name_number`).  Raises OpError."""
    x = float(x)
    if not spec:
        return format_name_number(x) if name else format_number(x)
    problem = check_spec(spec)
    if problem is not None:
        raise OpError(problem)
    kind = _SPEC.match(spec).group("type")
    if kind in INT_TYPES:
        if not math.isfinite(x) or x != math.floor(x):
            shown = repr(x) if math.isfinite(x) else format_number(x)
            raise OpError("cannot format %s with :%s: it is not a whole number" % (shown, spec))
        return format(int(x), spec)
    m = _SPEC.match(spec)
    if (kind is None and m.group("grouping") and m.group("precision") is None
            and math.isfinite(x) and x == math.floor(x)):
        # {n:,}: a whole number's digits, grouped (an int's spec takes no z: -0.0 is 0 here)
        return format(int(x), spec[:m.start("z")] + spec[m.end("z"):] if m.group("z")
                      else spec)
    pspec = _python_spec(spec)
    if x != x and math.copysign(1.0, x) < 0:
        # Python writes every NaN as "nan"; -inf is laid out exactly as -nan must be
        text = format(-math.inf, pspec)
        at = text.find("inf")
        if at >= 0:
            return text[:at] + "nan" + text[at + 3:]
        at = text.find("INF")
        return text[:at] + "NAN" + text[at + 3:]
    return format(x, pspec)
