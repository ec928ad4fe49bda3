"""Turns program text into tokens for the parser, one list of tokens per statement.

The text is cut into pieces by one regular expression (every character belongs to exactly one
piece: a number, a name, a punctuation mark, a run of blanks, a comment, a newline, or a single
character goat does not know), and each piece is classified.  Besides the usual work the lexer
does three things the grammar cannot do well:

* newlines inside ``( )`` and ``[ ]`` are dropped, so a literal or a call may span lines, and a
  bracket that is never closed (or closed by the wrong bracket) is reported where it opened;
* ``tensor[...]`` is read as one TYPE token, since ``6x6`` is not a number followed by a name;
* a list literal made only of numbers (the 112x112 mask of the book's training program has
  12,544 of them) is read in one step into a NumPy array, the ARRAY token.  Anything unusual
  inside a literal (a comment, a name, ragged rows) falls back to ordinary tokens, so the
  parser reports it with its position.
"""
from __future__ import annotations

import json
import re
from bisect import bisect_left
from itertools import accumulate

import numpy as np

from ..diagnostics import GoatError, Loc, Source
from ..typecheck.shapes import MAX_RANK     # a literal may have as many dimensions as NumPy allows
from .tokens import KEYWORDS, PUNCTUATION, STATEMENT_KEYWORDS, TYPE_WORDS

_PIECES = re.compile(r"""
    [ \t\f\r]+                                  # blanks
  | \#[^\n]*                                    # a comment
  | \n
  | "(?:[^"\\\n]|\\[^\n])*"?                    # a string (an unclosed one is reported)
  | (?:[0-9]+(?:\.(?!\.)[0-9]*)?|\.[0-9]+)(?:[eE][-+]?[0-9]+)?   # a number (not the 0 of 0..9)
  | [A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*   # a name, keyword or module.name
  | ==|!=|<=|>=|\.\.|->|\+=|-=|\*=|/=           # two-character punctuation
  | [-+*/@%<>()\[\]{},=:;]                      # punctuation
  | .                                           # anything else: an error
""", re.VERBOSE | re.DOTALL)
_STRING = re.compile(r'"(?:[^"\\\n]|\\[^\n])*"')

def first_outside_comments(text: str, chars: str):
    """The index of the first character of ``text`` in the regular-expression class ``chars``
    that is not in a comment (it is in code or a string), as the lexer splits ``text``; None
    if there is none."""
    bad = re.compile("[%s]" % chars)
    for m in _PIECES.finditer(text):
        if m.group()[0] != "#":
            b = bad.search(m.group())
            if b:
                return m.start() + b.start()
    return None


# what a piece is, by its first character
_BLANK, _COMMENT, _NEWLINE, _NUMBER, _WORD, _PUNCT, _STRINGK, _OTHER = range(8)
_KIND = {}
for _c in " \t\f\r":
    _KIND[_c] = _BLANK
_KIND["#"] = _COMMENT
_KIND["\n"] = _NEWLINE
for _c in "0123456789.":
    _KIND[_c] = _NUMBER
for _c in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_":
    _KIND[_c] = _WORD
for _c in PUNCTUATION:
    _KIND.setdefault(_c[0], _PUNCT)
_KIND["."] = _NUMBER      # .5 is a number, .. is punctuation: told apart below
_KIND['"'] = _STRINGK

# the characters a numbers-only list literal is made of
# (and where one stops: a bracket, or a character no such literal holds)
_LITERAL_STOPS = re.compile(r"[^0-9eE+\-.,\s]")
_OPEN = {"(": ")", "[": "]", "{": "}"}
# the tokens a value ends with: a [ right after one (or after a subscript's ]) opens a
# subscript (SUBSCRIPT), not a list: after a list literal, [[1]] [[2]], a comma is missing
_INDEXED = frozenset(("NAME", "RPAR"))
def _tuple_targets(out, subscript_ends):
    """The subscripts' [ tokens of a statement's tokens ``out`` before an =, when they are a
    list of names assigned, two or more, some subscripted -- ``h[l], c[l]`` or ``w, p[0]`` --
    else None."""
    found, k, n, seen = [], 0, len(out), 0
    while k < n:
        if out[k].type != "NAME":
            return None
        k += 1
        seen += 1
        if k < n and out[k].type == "SUBSCRIPT":
            opener = out[k]
            j = k + 1
            while j < n and subscript_ends.get(out[j].start_pos) != opener.start_pos:
                j += 1
            if j == n:
                return None
            found.append(opener)
            k = j + 1
        if k == n:
            break
        if out[k].type != "_COMMA":
            return None
        k += 1
    return found if found and seen > 1 and k == n else None


_ASSIGNS = frozenset(("=", "+=", "-=", "*=", "/="))
_CLOSE = {")": "(", "]": "[", "}": "{"}
_IDENT = IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")     # a name (IDENT: --let's, lets=')
_SIZE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)?")  # N, model.D
_INF = float("inf")
# quotes that open a string goat does not take, and the quotes that may close it
_QUOTES = {"'": "'", "\u201c": "\u201d\u201c\"", "\u2018": "\u2019\u2018'"}

_CHARACTER_HINTS = {
    "!": "; 'not x' negates a condition, and a != b compares",
    "^": "; there is no power operator: square(x) is x * x, and for x > 0 write exp(p * log(x))",
    "'": "; strings are written in double quotes: \"...\"",
    "&": "; write 'and'", "|": "; write 'or'",
    "\\": "; a statement goes on to the next line only inside ( ) or [ ]: put the expression "
          "in parentheses",
    "\u201c": "; strings are written in straight double quotes: \"...\"",
    "\u201d": "; strings are written in straight double quotes: \"...\"",
    "\u2018": "; strings are written in straight double quotes: \"...\"",
    "\u2019": "; strings are written in straight double quotes: \"...\"",
}


class Tok:
    """A token: its terminal name, text, and character offsets in the source.

    ``extra`` carries the value of an ARRAY (the NumPy array) or a TYPE (the dims tuple).  The
    line/column attributes exist for lark, which copies them onto its end-of-input token.
    """

    __slots__ = ("type", "value", "start_pos", "end_pos", "extra")
    line = column = end_line = end_column = None

    def __init__(self, type, value, start_pos, end_pos, extra=None):
        self.type = type
        self.value = value
        self.start_pos = start_pos
        self.end_pos = end_pos
        self.extra = extra

    def __str__(self):
        return self.value

    def __repr__(self):
        return "Tok(%s, %r, @%d)" % (self.type, self.value, self.start_pos)


# A dimension is written in ASCII digits (\d would take any script's digits, which int()
# reads: tensor[١x٢] would be 1x2).  One of more than 19 digits, leading zeros aside, is at
# least 10**19 > 2**60, so its tensor has more than 2**63 bytes even if another dimension is 0
# (goat.typecheck.shapes.check_size counts an empty dimension as 1): no machine can address it,
# whatever the other dimensions are, and it is reported here, where its text is still at hand
# (as an int it might not even convert: int() refuses more than 4,300 digits).
MAX_DIM_DIGITS = 19
_DIM_NUMBER = re.compile(r"[0-9]+")
_X_FORM = re.compile(r"(?:[0-9]+|\?)(?:\s*x\s*(?:[0-9]+|\?))*")
_X_PART = re.compile(r"[0-9]+|\?|[A-Z]")
_X_SPLIT = re.compile(r"\s*x\s*")


class _HugeDim:
    """A dimension written with more than MAX_DIM_DIGITS digits: its text, for the message."""

    __slots__ = ("text",)

    def __init__(self, text):
        self.text = text


class SizeExpr(str):
    """A size written as arithmetic, ``4 * H`` in ``tensor[D, 4 * H]``: whole numbers and names
    with + - * / (a division that leaves no remainder) and brackets.  The checker works it
    out, each name a let holding a size or, in a def, one of its size variables (a SizePoly
    each call works out: tensor[K + H, 4 * H])."""

    __slots__ = ()

    @property
    def names(self) -> tuple:
        """The names it reads, a module's let as written (m.D)."""
        return tuple(dict.fromkeys(_DOTTED.findall(self)))


_DOTTED = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")
_SIZE_CHARS = re.compile(r"[A-Za-z0-9_.\s+\-*/()]+")


def _size_expr(part: str):
    """``part`` as a SizeExpr when it is arithmetic (+ - * / and brackets) on whole numbers and
    names, else None."""
    import ast as pyast
    if not _SIZE_CHARS.fullmatch(part) or not any(c in part for c in "+-*/(") or "**" in part \
            or len(part) > 200:
        return None
    try:
        tree = pyast.parse(part.strip(), mode="eval")
    except (SyntaxError, ValueError):
        return None
    ok = (pyast.Expression, pyast.BinOp, pyast.UnaryOp, pyast.Add, pyast.Sub, pyast.Mult, pyast.Div,
          pyast.USub, pyast.UAdd, pyast.Name, pyast.Load, pyast.Constant,
          pyast.Attribute)      # (a module's let: m.D + H)
    for node in pyast.walk(tree):
        if not isinstance(node, ok) or (type(node) is pyast.Constant
                                        and type(node.value) is not int):
            return None
    return SizeExpr(" ".join(part.split()))


def _dim_number(text: str):
    """The int a dimension's ASCII digits spell, or a _HugeDim if no machine could hold it."""
    digits = text.lstrip("0")
    if len(digits) > MAX_DIM_DIGITS:
        return _HugeDim(text)
    return int(digits or "0")


def _shown_number(text: str, keep: int = 24) -> str:
    """A number's text as a message shows it: whole, or when longer than ``keep`` characters its
    start and how long it is (``10000000000000000000... (5001 characters)``)."""
    if len(text) <= keep:
        return text
    return "%s... (%d characters)" % (text[:keep - 4], len(text))


def _dims_of(inner: str):
    """The dimensions written inside ``tensor[...]``, or None if malformed.

    ``6x6`` and ``?x4`` (the book's form), ``N, K`` or ``2, 3, 4`` (commas, which size variables
    need), ``..., N, C`` (any leading sizes first: ``...`` is Ellipsis), a single ``N``, or
    nothing (a scalar).  A dimension too long for any machine is a
    _HugeDim (see MAX_DIM_DIGITS), which _type_token reports.
    """
    inner = inner.strip()
    if not inner:
        return ()
    if inner == "...":                          # any shape at all (a def's parameter)
        return (...,)
    if "," in inner:
        dims = []
        for k, part in enumerate(inner.split(",")):
            part = part.strip()
            if part == "..." and k == 0:        # any leading sizes (a def's parameter)
                dims.append(...)
            elif _DIM_NUMBER.fullmatch(part):
                dims.append(_dim_number(part))
            elif part == "?":
                dims.append(None)
            elif _SIZE_NAME.fullmatch(part):
                dims.append(part)
            elif _size_expr(part) is not None:      # tensor[D, 4 * H]
                dims.append(_size_expr(part))
            else:
                return None
        return tuple(dims)
    if _X_FORM.fullmatch(inner):
        return tuple(None if d == "?" else _dim_number(d) for d in _X_SPLIT.split(inner))
    # Nx3, ?xK, BxTxC: size variables in the x form, when every part is a number, a ?, or a
    # one-letter capital (a longer name with an x in it, like "maxlen", is one name)
    parts = _X_SPLIT.split(inner)
    if len(parts) > 1 and all(_X_PART.fullmatch(p) for p in parts):
        return tuple(None if p == "?" else _dim_number(p) if p[0] in "0123456789" else p
                     for p in parts)
    if _SIZE_NAME.fullmatch(inner):
        return (inner,)
    if not re.search(r"[A-Z0-9?)]\s*x\s*[A-Z0-9?(]", inner) and _size_expr(inner) is not None:
        # tensor[4 * H] (not the x form with arithmetic, tensor[2*3x4])
        return (_size_expr(inner),)
    return None


def _huge_type_message(dims) -> str:
    """goat.typecheck.shapes.check_size's message for a type with a _HugeDim, written as
    shapes.format_type writes types (``tensor[2x3]``, ``tensor[N, K]``), long numbers cut."""
    shown = ["?" if d is None else _shown_number(d.text) if type(d) is _HugeDim else str(d)
             for d in dims]
    sep = ", " if any(type(d) is str for d in dims) else "x"
    return ("tensor[%s] is too large for any machine to address: more than 2**63 bytes"
            % sep.join(shown))


_JSON = json.JSONDecoder(parse_int=float)            # made once: a literal may be tiny
_POINT_END = re.compile(r"(?<=[0-9])\.(?![0-9])")        # 1.  -> 1.0
_POINT_START = re.compile(r"(?<![0-9.])\.(?=[0-9])")     # .5  -> 0.5


def _fast_array(text: str):
    """Parse a numbers-only literal such as ``[[1, -2.5], [3, 1e-05]]``; None if not simple.

    JSON's number syntax is goat's but for ``1.`` and ``.5`` (NumPy prints the first), which
    are rewritten first; integers are read as floats so that ``-0`` keeps its sign.  A number
    too large for a float (``1e400``) is left to the slow path, which reports it.
    """
    if "." in text:
        text = _POINT_START.sub("0.", _POINT_END.sub(".0", text))
    try:
        arr = np.array(_JSON.decode(text), dtype=np.float64)
    except (ValueError, OverflowError, TypeError, RecursionError):
        return None
    if not np.isfinite(arr).all():
        return None
    return arr


def tokenize(source: Source, start: int = 0, end: int | None = None) -> list:
    """The tokens of ``source`` (or of its text from ``start`` to ``end``), one list per
    statement, each ending in an ``_NL`` token.

    A statement ends at a newline outside ``( )`` and ``[ ]``, at ``;``, and after the ``{``
    that opens a block; a block's closing ``}`` is a statement of its own.  Raises GoatError
    for brackets that do not match where the statements after them cannot be told apart (a
    ``)`` that closes a ``[``); a statement with an error of its own (a character goat does not
    know, a malformed type, an unclosed string, a ``(`` still open at its block's ``}`` or at
    the end, a ``)`` with nothing open, a block's ``{`` never closed, for its header) is an
    :class:`Unreadable` list, whose error the parser raises when it reaches it.
    """
    text = source.text
    piece_text = text if start == 0 and end is None else text[start:end]
    limit = len(text) if end is None else end
    pieces = _PIECES.findall(piece_text)
    ends = list(accumulate(map(len, pieces), initial=start))[1:]
    kind_of = _KIND.get
    keywords = KEYWORDS
    punctuation = PUNCTUATION
    statements = []
    out = []
    stack = []              # open brackets: (char, offset)
    subscripts = set()      # the offsets of the [s that open a subscript (x[0]), not a list
    subscript_ends = {}     # and of the ]s that close one: -> the offset of its [
    errors = []             # (statement index, GoatError): the first error of a statement
    headers = {}            # the offset of a block's { -> the index of its header statement
    i = 0
    n = len(pieces)
    # a block's } forgotten, told by the indentation of the }s after it: a } there first
    # closes the blocks it is not indented as (their headers' error)
    missing, extra = _mended_blocks(text, pieces, ends, start)

    def local(error):
        # an error of this statement alone (the brackets around are not in doubt): an ERROR
        # token holds its place, and the parser reports it when it reaches the statement, so
        # that the statements after it are read and checked too
        if not errors or errors[-1][0] != len(statements):
            errors.append((len(statements), error))
        out.append(Tok("ERROR", "", error.loc.start, error.loc.end))

    def structural(error):
        raise _Stop(error)

    def close_forgotten(todo, where, why, inside):
        # the blocks of the {s at ``todo`` (innermost first), whose } was forgotten, closed
        # at ``where``: each a statement of its own with the error, after its block (so that
        # the header and its block are read and checked), or inside it before an else
        nonlocal out
        if out:
            out.append(Tok("_NL", "", where, where))
            statements.append(out)
            out = []
        for at in todo:
            error = [Tok("ERROR", "", at, at + 1), Tok("_NL", "", where, where)]
            close = [Tok("RBRACE", "", where, where), Tok("_NL", "", where, where)]
            for stmt in (error, close) if inside else (close, error):
                if stmt is error:
                    errors.append((len(statements), GoatError("'{' is never closed: " + why,
                                                              Loc(source, at, at + 1))))
                statements.append(stmt)
            stack.pop()

    try:
        while i < n:
            piece = pieces[i]
            kind = kind_of(piece[0], _OTHER)
            if kind == _BLANK or kind == _COMMENT:
                i += 1
                continue
            end_ = ends[i]
            start_ = end_ - len(piece)
            if missing and start_ in missing:
                todo = missing[start_]
                if _open_last(stack, todo):
                    # blocks whose } was forgotten, as the indentation shows: closed here,
                    # each its header's error
                    line = source.position(start_)[0]
                    if piece == "}":
                        why = ("the '}' on line %d is indented as the block on line %d, and "
                               "closes that one" % (line, source.position(
                                   stack[-1 - len(todo)][1])[0]))
                    else:
                        why = ("line %d is indented no deeper than its header, so the block "
                               "ends before it" % line)
                    close_forgotten(todo, start_, why, piece == "else")
            if kind == _WORD:
                if piece in TYPE_WORDS:
                    try:
                        tok = _type_token(source, piece, start_, end_)
                        if tok.end_pos > limit:
                            raise GoatError("'tensor' must be followed by its dimensions, as in "
                                            "tensor[2x3]", Loc(source, start_, end_))
                    except GoatError as e:
                        if (e.message.startswith("'tensor' must be followed") and
                                text[end_:end_ + 80].lstrip(" \t").startswith("[")):
                            # tensor[1x2) -- its [ is not closed on the line: the bracket's own
                            # error says so, once (not also that no dimensions follow)
                            tok = Tok("NAME", piece, start_, end_)
                            out.append(tok)
                            i += 1
                            continue
                        covered = text[end_:e.loc.end]
                        slip = _type_closed_with_paren(text, end_, limit)
                        if slip is not None:
                            # def f(a: tensor[2), b: ...): the ) typed for the type's ],
                            # that statement's error; it is read on after the )
                            local(GoatError("')' does not close the '[' opened on line %d"
                                            % source.position(slip[0])[0],
                                            Loc(source, slip[1], slip[1] + 1)))
                            i = bisect_left(ends, slip[1] + 1, i) + 1
                            continue
                        open_at = _type_left_open(text, end_, limit)
                        if open_at is not None:
                            # let w: tensor[2x2 = ...: the type's ] forgotten, that statement's
                            # error; it is read on after the sizes
                            local(GoatError("'[' is never closed: a type's sizes end with ']' "
                                            "(tensor[2x2])", Loc(source, open_at[0],
                                                                 open_at[0] + 1)))
                            i = bisect_left(ends, open_at[1], i) + 1
                            continue
                        if any(c in covered.strip()[1:-1] for c in "[](){}"):
                            # brackets inside the type (tensor[[2]], tensor[2x3) + 1): where it
                            # ends cannot be told, nor whether those brackets match
                            structural(e)
                        local(e)
                        # past the type as far as the error covers it (to its ])
                        i = max(i + 1, bisect_left(ends, min(e.loc.end, limit), i) + 1)
                        continue
                    i = bisect_left(ends, tok.end_pos, i)   # the pieces the type covered
                else:
                    tok = Tok(keywords.get(piece, "NAME"), piece, start_, end_)
                    if piece == "params" and not (out == [] and _names_next(pieces, i + 1)):
                        # a keyword only where a params block begins, params NAME: a program
                        # may name a value params
                        tok.type = "NAME"
            elif kind == _NUMBER and piece != "..":
                if piece == ".":
                    hint = ""
                    if out and out[-1].type == "DOTDOT" and out[-1].end_pos == start_:
                        # ... outside a subscript (a subscript's is the ELLIPSIS token)
                        hint = ("; ... is written only in a subscript, x[..., 0], where it "
                                "stands for the whole axes the others leave")
                    elif out and out[-1].type in ("RPAR", "RSQB", "ARRAY"):
                        hint = ("; goat has no methods or fields: call a function on the value "
                                "(row_sum(x), transpose(x), ...)")
                    elif out and out[-1].type == "NAME" and out[-1].end_pos == start_:
                        # nn. or nn. linear: a module's member is named right after its dot
                        hint = ("; a dot is followed, with no space, by the name of a module's "
                                "def: nn.linear (in the REPL, Tab after the dot lists them)")
                    local(GoatError("unexpected character '.'" + hint, Loc(source, start_, end_)))
                    i += 1
                    continue
                if float(piece) == _INF:
                    local(GoatError("the number %s is too large for a 64-bit float (the largest is "
                                    "1.79769e+308, as %%g prints it)" % _shown_number(piece),
                                    Loc(source, start_, end_)))
                    i += 1
                    continue
                tok = Tok("NUMBER", piece, start_, end_)
            elif kind == _STRINGK:
                if not _STRING.fullmatch(piece):
                    local(GoatError('this string is never closed: end it with " on the same line',
                                    Loc(source, start_, start_ + 1)))
                    i += 1
                    continue
                tok = Tok("STRING", piece, start_, end_)
            elif piece == "/" and not out and text.startswith("//", start_):
                # // note {: a C comment, its braces and brackets no code; one error
                eol = text.find("\n", start_, limit)
                local(GoatError("unexpected '//'; a comment starts with #",
                                Loc(source, start_, start_ + 2)))
                i = n if eol < 0 else bisect_left(ends, eol + 1, i)
                continue
            elif (kind == _PUNCT and piece in punctuation) or piece == "..":
                if (piece == ".." and i + 1 < n and pieces[i + 1] == "." and stack
                        and stack[-1][1] in subscripts):
                    # x[..., 0]: NumPy's ellipsis, the whole axes it stands for
                    out.append(Tok("ELLIPSIS", "...", start_, end_ + 1))
                    i = bisect_left(ends, end_ + 1, i) + 1
                    continue
                if piece == ".." and text[end_:end_ + 1] == "." and text[end_ + 1:end_ + 2].isdigit():
                    # 0...3 reads as 0 .. .3: a range of Python's or Ruby's three dots
                    local(GoatError("a range is written with two dots: 0..3 (three read as .. .3)",
                                    Loc(source, start_, end_ + 1)))
                    i += 1
                    continue
                subscript = (piece == "[" and bool(out) and (
                    out[-1].type in _INDEXED or out[-1].start_pos in subscript_ends)
                    and not (stack and stack[-1][0] == "[" and stack[-1][1] not in subscripts)
                    and not (_list_follows(pieces, i) and start_ != out[-1].end_pos))
                if subscript:
                    # x[0], f(x)[i, 1:3]: a [ right after a value subscripts it (inside a
                    # list literal, [1, 2] [3, 4] is a comma forgotten between rows)
                    subscripts.add(start_)
                elif piece == "[":
                    try:
                        tok = _try_array(source, start_)
                    except GoatError as e:      # nested too deep: with the errors before it
                        structural(e)
                    if tok is not None and tok.end_pos <= limit:
                        out.append(tok)
                        i = bisect_left(ends, tok.end_pos, i) + 1
                        continue
                if piece in _OPEN:
                    if piece == "{" and _doubled(pieces, i):
                        # for i in 0..3 {{: the second { opens nothing, its own error
                        if out:
                            out.append(Tok("_NL", "", start_, start_))
                            statements.append(out)
                            out = []
                        local(GoatError("a block opens with one '{': this second one opens "
                                        "nothing", Loc(source, start_, end_)))
                        out.append(Tok("_NL", "", end_, end_))
                        statements.append(out)
                        out = []
                        i += 1
                        continue
                    if piece == "{" and stack and stack[-1][0] != "{":
                        # if (a < b { -- the header's own error: the ( and [ it opened end here
                        opener, at = stack[-1]
                        local(GoatError(
                            "a block '{' cannot open inside the '%s' opened on line %d"
                            % (opener, source.position(at)[0]), Loc(source, start_, end_)))
                        while stack and stack[-1][0] != "{":
                            stack.pop()
                    if piece == "{":
                        headers[start_] = len(statements)
                    stack.append((piece, start_))
                elif piece in _CLOSE:
                    if start_ in extra:
                        # a } too many, indented deeper than the header of the block it would
                        # close: its own error, and the block goes on to its } of the right indent
                        at, end = extra[start_]
                        if out:
                            out.append(Tok("_NL", "", start_, start_))
                            statements.append(out)
                            out = []
                        local(GoatError("this '}' closes no block: the block opened on line %d ends "
                                        "at the '}' on line %d, indented as its header"
                                        % (source.position(at)[0], source.position(end)[0]),
                                        Loc(source, start_, end_)))
                        out.append(Tok("_NL", "", end_, end_))
                        statements.append(out)
                        out = []
                        i += 1
                        continue
                    if not stack:
                        if piece != "}":        # (a } with no block open: the parser says so)
                            local(GoatError("unmatched '%s': no bracket is open here" % piece,
                                            Loc(source, start_, end_)))
                            i += 1
                            continue
                    else:
                        opener, at = stack[-1]
                        if _CLOSE[piece] != opener:
                            error = GoatError("'%s' does not close the '%s' opened on line %d"
                                              % (piece, opener, source.position(at)[0]),
                                              Loc(source, start_, end_))
                            if piece == "}":
                                if not any(c == "{" for c, _ in stack):
                                    structural(error)
                                # print f(i  on the line before a block's }: that statement's
                                # error, and the } closes its block
                                local(error)
                                out.pop()
                                while stack[-1][0] != "{":
                                    stack.pop()
                            else:
                                # a ) or ] that does not match: the statement's own error, its
                                # brackets mended as the likeliest slip has it
                                _mismatched_close(piece, stack, source, start_, end_, local, error,
                                                  pieces, i)
                                i += 1
                                continue
                        at = stack.pop()[1]
                        if at in subscripts:
                            subscript_ends[start_] = at
                elif piece == ";":
                    if stack and stack[-1][0] != "{":
                        # the statement's error: print (1; 2), a ; for a , -- or, a statement
                        # after it (print (1; print 2), the ( left open
                        opener, at = stack[-1]
                        local(GoatError(
                            "';' cannot appear inside the '%s' opened on line %d"
                            % (opener, source.position(at)[0]), Loc(source, start_, end_)))
                        if not _starts_statement(pieces, i + 1):
                            i += 1
                            continue
                        while stack and stack[-1][0] != "{":
                            stack.pop()
                    if out:
                        out.append(Tok("_NL", ";", start_, end_))
                        statements.append(out)
                        out = []
                    i += 1
                    continue
                tok = Tok("SUBSCRIPT" if subscript else punctuation[piece], piece, start_, end_)
                if (piece in _ASSIGNS and len(out) > 2 and out[0].type == "NAME"
                        and out[1].type == "SUBSCRIPT"
                        and subscript_ends.get(out[-1].start_pos) == out[1].start_pos):
                    # x[i] = v: the subscript is assigned to, not read (the grammar takes
                    # a TARGET's statement apart from a value's, x[i] shown in the REPL)
                    out[1].type = "TARGET"
                elif piece == "=" and len(out) > 2 and out[0].type == "NAME":
                    # h[l], c[l] = cell(...): each subscript of the names assigned
                    targets = _tuple_targets(out, subscript_ends)
                    for t in targets or ():
                        t.type = "TARGET"
                if piece == "{":            # the block's header ends here
                    out.append(tok)
                    out.append(Tok("_NL", "", end_, end_))
                    statements.append(out)
                    out = []
                    i += 1
                    continue
                if piece == "}":            # ends the statement before it, and is one of its own
                    if out:
                        out.append(Tok("_NL", "", start_, start_))
                        statements.append(out)
                    statements.append([tok, Tok("_NL", "", end_, end_)])
                    out = []
                    i += 1
                    continue
            elif kind == _NEWLINE:
                if stack and stack[-1][0] != "{" and _starts_statement(pieces, i + 1):
                    # let a = row_sum([[1, 2]] / print a: no expression goes on with a statement's
                    # keyword, so the ( was never closed: this statement's error, the next its own
                    opener, at = stack[-1]
                    if out and out[-1].type != "ERROR":
                        k = _next_index(pieces, i + 1)
                        local(GoatError(
                            "'%s' is never closed: a '%s' is missing before line %d, which starts "
                            "another statement (%s)" % (opener, _OPEN[opener], source.position(
                                ends[k] - len(pieces[k]))[0], pieces[k]), Loc(source, at, at + 1)))
                    while stack and stack[-1][0] != "{":
                        stack.pop()
                if out and (not stack or stack[-1][0] == "{"):
                    out.append(Tok("_NL", "\n", start_, end_))
                    statements.append(out)
                    out = []
                i += 1
                continue
            else:
                shown = repr(piece) if piece.isprintable() and not piece.isspace() else "U+%04X" % ord(piece)
                local(GoatError("unexpected character %s%s" % (shown, _CHARACTER_HINTS.get(piece, "")),
                                Loc(source, start_, end_)))
                closing = _QUOTES.get(piece)
                if closing is not None:
                    # 'loss {l}' or a curly-quoted string: one error, the string's text
                    # (braces and all) passed over to its closing quote on the line
                    last = text.find("\n", end_, limit)
                    last = limit if last < 0 else last
                    shut = min((at for at in (text.find(q, end_, last) for q in closing)
                                if at >= 0), default=-1)
                    if shut >= 0:
                        i = bisect_left(ends, shut + 1, i) + 1
                        continue
                i += 1
                continue
            out.append(tok)
            i += 1
    except _Stop as stop:
        # brackets that do not match: nothing after can be read; the statements before are
        # (their errors first: an unknown character may well have caused this one), and this
        # one is the last
        if not errors or errors[-1][0] != len(statements):
            errors.append((len(statements), stop.error))
        out.append(Tok("_NL", "", limit, limit))
        statements.append(out)
        for k, error in errors:
            statements[k] = Unreadable(statements[k], error)
        return statements
    todo = missing.get(_END, ())
    if todo and _open_last(stack, todo):
        close_forgotten(todo, limit, "its '}' is missing at the end of the file", False)
    if stack:
        # the innermost bracket left open is the error: of the statement it is in, or, for
        # a block's {, of its header (whose block the parser then leaves out)
        opener, at = stack[-1]
        error = GoatError("'%s' is never closed" % opener, Loc(source, at, at + 1))
        if opener == "{":
            k = headers[at]
            if all(j != k for j, _ in errors):
                errors.append((k, error))
                errors.sort(key=lambda e: e[0])
        elif errors and errors[-1][0] == len(statements):
            pass                    # after the statement's own error (which may be its cause)
        else:
            local(error)
            out.pop()
    if out:
        out.append(Tok("_NL", "", limit, limit))
        statements.append(out)
    for k, error in errors:
        statements[k] = Unreadable(statements[k], error)
    return statements


_HEAD_WORDS = frozenset(("for", "if", "else", "def"))


def _names_next(pieces: list, j: int) -> bool:
    """Is the next piece from ``pieces[j]`` on, past blanks on the same line, a name (not a
    keyword)?"""
    n = len(pieces)
    while j < n and pieces[j][0] in " \t\f\r":
        j += 1
    return j < n and _NAME.match(pieces[j]) is not None and (
        pieces[j] not in KEYWORDS or pieces[j] == "params")


def _mended_blocks(text: str, pieces: list, ends: list, first: int) -> tuple:
    """Where a block's ``}`` was forgotten, or one too many written, as the indentation of the
    ``}`` after it shows: ({the offset of a ``}``: the offsets of the ``{`` it closes first,
    innermost first}, {the offset of a ``}`` that closes nothing: (the line of the block it
    stands in, the line of the ``}`` that closes that block)}).

    Only where the ``{`` and ``}`` do not pair up (a valid program, however indented, is read
    as written), and only when the places found pair up every one.  Where there are too few,
    a block whose lines are indented under its header ends before the first line indented no
    deeper than the header, and a ``}`` first on its line, indented less than the header of
    the block it would close and as deep as an outer one's, closes the blocks in between
    first.  Where there are too many, a ``}`` indented deeper than the header of the block it
    would close, or as deep with the block's lines going on indented after it, closes
    nothing.  A ``}`` as deep as a header written without ``{`` is left to the parser, which
    pairs them.  (A header's indentation: that of the line its statement starts on.)
    ``pieces`` end at ``ends``, the first at offset ``first`` of ``text``."""
    opens, closes = pieces.count("{"), pieces.count("}")
    if opens > closes:      # (a { doubled, {{, opens nothing: its own error)
        opens -= sum(1 for k, piece in enumerate(pieces) if piece == "{" and _doubled(pieces, k))
    # (a } under a header written without its { is the parser's: with one, the count may
    # balance while a { is still left open)
    if opens == closes and (closes == 0 or not _UNBRACED_HEADER.search(text, first)):
        return {}, {}
    too_few = opens >= closes

    def scan(repair):
        stack = []                  # [offset of a {, the indentation of its header, whether a
        #                             statement indented deeper has begun in its block]
        missing, extra = {}, {}
        skipped = {}                # offset of a { -> the extra } met inside its block
        depth = 0                   # ( and [ open: a newline inside them starts no statement
        indent = None               # the current statement's first line's indentation
        at_start = True             # nothing yet on this line
        line_start = text.rfind("\n", 0, first) + 1
        head = None                 # the current statement's first word, while it has no {
        unbraced = {}               # the offset of a { (None: none) -> the indentations of the
        #                             headers with no { inside its block (the parser's to pair)
        for index, piece in enumerate(pieces):
            c = piece[0]
            end = ends[index]
            start = end - len(piece)
            if c == "\n":
                if depth == 0 and head in _HEAD_WORDS:
                    unbraced.setdefault(stack[-1][0] if stack else None, set()).add(indent)
                head = None if depth == 0 else head
                at_start = True
                line_start = end
                continue
            if c in " \t\f\r" or c == "#":
                continue
            if at_start and depth > 0 and _starts_statement(pieces, index):
                depth = 0           # a ( left open before it: the lexer ends it there too
            if at_start and depth == 0:
                indent = start - line_start
                head = piece
                if repair and too_few and piece != "}":
                    # a block's lines indented under its header, then one that is not: its }
                    # was forgotten before that line
                    while stack and stack[-1][2] and indent <= stack[-1][1]:
                        missing.setdefault(start, []).append(stack.pop()[0])
                    if stack and indent > stack[-1][1]:
                        stack[-1][2] = True
            first_on_line, at_start = at_start, False
            if c in "([":
                depth += 1
            elif c in ")]":
                depth = max(0, depth - 1)
            elif piece == "{":
                if not _doubled(pieces, index):
                    stack.append([start, indent, False])
                depth = 0
                head = None
            elif piece == "}":
                depth = 0
                head = None
                col = start - line_start
                if first_on_line and col in unbraced.get(stack[-1][0] if stack else None, ()):
                    continue        # under a header with no {: the parser pairs them
                if repair and first_on_line and too_few:
                    while (len(stack) > 1 and col < stack[-1][1]
                           and any(e[1] == col for e in stack[:-1])):
                        missing.setdefault(start, []).append(stack.pop()[0])
                elif repair and first_on_line and stack and (
                        col > stack[-1][1]
                        or (col == stack[-1][1] and _indented_after(pieces, ends, index) > col)):
                    # a } too many: deeper than the header of the block it would close, or
                    # as deep but with the block's lines going on indented after it
                    skipped.setdefault(stack[-1][0], []).append(start)
                    continue
                if not stack:
                    return None     # a } with nothing open
                at = stack.pop()[0]
                for one in skipped.pop(at, ()):
                    extra[one] = (at, start)
                if first_on_line:
                    indent = col
        if skipped:
            return None
        if repair and too_few:
            # the file ends inside blocks whose lines were indented under their headers
            while stack and stack[-1][2]:
                missing.setdefault(_END, []).append(stack.pop()[0])
        return stack, missing, extra

    if too_few:
        plain = scan(False)
        if plain is None or not plain[0]:
            return {}, {}
    mended = scan(True)
    if mended is None or mended[0]:
        return {}, {}       # the indentation does not pair up every { and }
    return mended[1], mended[2]


def _open_last(stack: list, todo: list) -> bool:
    """Are the blocks of the {s at ``todo`` (innermost first) the last brackets open?  (Not
    where brackets the indentation's reading does not count are open above them.)"""
    return len(stack) >= len(todo) and all(
        stack[-1 - j] == ("{", at) for j, at in enumerate(todo))


_END = -1                   # _mended_blocks' key for the end of the text
# a line that starts with a block's header word and has no { (for i in 0..3, if x < 1:)
_UNBRACED_HEADER = re.compile(r"(?m)^[ \t]*(?:(?:for|if|else)\b[^{\n]*|def\b[^{=\n]*)$")


def _doubled(pieces: list, i: int) -> bool:
    """Is ``pieces[i]``, a ``{``, the second of two on a line with only blanks between?"""
    k = i - 1
    while k >= 0 and pieces[k][0] in " \t\f\r":
        k -= 1
    return k >= 0 and pieces[k] == "{"


_OPEN_TYPE = re.compile(r"[ \t]*\[([ \t]*[0-9A-Za-z_?]+(?:[ \t]*[x,][ \t]*[0-9A-Za-z_?]+)*)"
                        r"[ \t]*(?=[=:)\n{;]|\Z)")


def _type_left_open(text: str, at: int, limit: int):
    """(the offset of the [, the offset after the sizes) where the type word ending at ``at``
    is followed by ``[`` and sizes with no ``]`` before an ``=``, ``:``, ``)``, ``{`` or the
    line's end (let w: tensor[2x2 = ...); None otherwise."""
    m = _OPEN_TYPE.match(text, at, limit)
    if m is None:
        return None
    return text.index("[", at), m.end(1)


def _type_closed_with_paren(text: str, at: int, limit: int):
    """(the offset of the [, of the )) where the type word ending at ``at`` is followed by
    ``[`` and sizes closed with a ``)`` on the line (tensor[2x3) before more of the line);
    None otherwise."""
    m = re.compile(r"[ \t]*\[[^\[\](){}\n]*\)").match(text, at, limit)
    if m is None:
        return None
    return text.index("[", at), m.end() - 1


def _indented_after(pieces: list, ends: list, i: int) -> int:
    """The indentation of the next line that holds a statement after ``pieces[i]``, a ``}``
    that ends its own line (-1 where something follows the ``}`` on its line, or the next is
    a ``}`` too, or nothing follows)."""
    n = len(pieces)
    k = i + 1
    while k < n and pieces[k][0] in " \t\f\r#":
        k += 1
    if k >= n or pieces[k] != "\n":
        return -1
    k = _next_index(pieces, k)
    if k is None or pieces[k] == "}":
        return -1
    j = k - 1
    while pieces[j][0] in " \t\f\r":      # back over the line's blanks to its newline
        j -= 1
    return (ends[k] - len(pieces[k])) - ends[j]


class _Stop(Exception):
    """Brackets that do not match so that nothing after them can be read: ``error``."""

    def __init__(self, error):
        super().__init__(error.message)
        self.error = error


class Unreadable(list):
    """The tokens of a statement in which the lexer found an error of its own (an unknown
    character, a malformed type, an unclosed string): ``error``, which the parser raises
    when it reaches the statement.  An ``ERROR`` token stands where each error was."""

    __slots__ = ("error",)

    def __init__(self, tokens, error):
        super().__init__(tokens)
        self.error = error


def _arithmetic_hint(inner: str) -> str:
    """For a type whose sizes hold arithmetic (tensor[3, H * H], tensor[2*3x4]), how to write
    it: a size is a number, a size variable or ?; arithmetic on numbers alone is worked out
    (tensor[6x4]), and for one size that is not, reshape works out a ? from the others."""
    if any(c in inner for c in "[]{}"):
        return ""
    # the x form (tensor[2*3x4]) only where each part is numbers, ?, single capitals and
    # arithmetic (BATCHx2*3 is no x form: it reads as one name)
    x_form = "," not in inner and "x" in inner and all(
        re.fullmatch(r"\s*(?:[0-9]+|\?|[A-Z](?![A-Za-z0-9_])|[-+*/()\s])+\s*", p)
        for p in inner.split("x"))
    sep = "x" if x_form else ","
    parts = [p.strip() for p in inner.split(sep)]
    if not x_form and any(re.search(r"[A-Z0-9?)]x[A-Z0-9?(]", p) for p in parts):
        return ("; a size written as arithmetic is + - * / (exact) and brackets on whole "
                "numbers, lets and a def's size variables, with commas between sizes "
                "(tensor[D, 4 * H]); the x form takes numbers, ? and single capitals")

    def arithmetic(p):
        return any(c in p for c in "*+/") or "-" in p.lstrip("-")
    if not any(arithmetic(p) for p in parts):
        return ""
    join = ", " if sep == "," else "x"

    def number(p):      # the value of arithmetic on whole numbers alone (2*3), else None
        if not re.fullmatch(r"[0-9 \t*+()-]+", p) or "**" in p or len(p) > 40:
            return None
        try:
            v = eval(p, {"__builtins__": {}})      # digits, + - * and brackets only
        except Exception:
            return None
        return v if type(v) is int and 0 <= v < 10 ** 12 else None
    sized = [number(p) if arithmetic(p) else p for p in parts]
    say = ("; a size written as arithmetic is + - * / (exact) and brackets on whole numbers, "
           "lets and a def's size variables, with commas between sizes (tensor[D, 4 * H])")
    if x_form and all(v is not None for v in sized):
        return say + ": tensor[%s]" % join.join(str(v) for v in sized)
    if any("?" in p for p in parts if arithmetic(p)):
        return say + "; a ? cannot be in it"
    if "." in inner:
        return say + "; a module's let is named through a let of the program's own (let S = m.H)"
    return say


def _type_token(source, word, start, end):
    """``scalar`` or ``tensor[...]`` as one TYPE token (its dims tuple in ``extra``)."""
    if word == "scalar":
        return Tok("TYPE", word, start, end, ())
    text = source.text
    j = end
    while j < len(text) and text[j] in " \t":
        j += 1
    close = text.find("]", j)
    nl = text.find("\n", j, max(close, j))  # up to the ] only: not the rest of a long line
    inner = text[j + 1:close]
    if 0 <= nl < close:     # tensor[  # rows\n  1x2]: lines inside brackets, comments too
        inner = re.sub(r"#[^\n]*", " ", inner).replace("\r", " ").replace("\n", " ")
        if j < len(text) and text[j] == "[" and _dims_of(inner) is not None:
            nl = -1         # a newline inside brackets does not end the statement
    if j >= len(text) or text[j] != "[" or close < 0 or (0 <= nl < close):
        raise GoatError("'tensor' must be followed by its dimensions, as in tensor[2x3]",
                        Loc(source, start, end))
    dims = _dims_of(inner)
    if dims is None:
        shown = inner.strip()
        if len(shown) > 60:                 # the excerpt below the message shows the rest
            shown = shown[:40] + "..."
        if "..." in inner:
            raise GoatError("malformed type tensor[%s]: ... (any leading sizes) comes first and "
                            "once, followed by the other sizes with commas: tensor[..., N, C]"
                            % shown, Loc(source, start, close + 1))
        raise GoatError("malformed type tensor[%s]: write its dimensions as 6x6, ?x4 or N, K%s"
                        % (shown, _arithmetic_hint(inner)), Loc(source, start, close + 1))
    if any(type(d) is _HugeDim for d in dims):
        raise GoatError(_huge_type_message(dims), Loc(source, start, close + 1))
    if len(dims) == 1 and type(dims[0]) is str and all(
            _LOWER_X_PART.fullmatch(p) for p in dims[0].split("x")) and "x" in dims[0]:
        # tensor[nxk] is one size variable named nxk: surely meant as two sizes
        parts = dims[0].split("x")
        raise GoatError("tensor[%s] is one size, a size variable named %s; for %d sizes write "
                        "tensor[%s] (the x form takes numbers, ? and single capitals: "
                        "tensor[%s])" % (dims[0], dims[0], len(parts), ", ".join(parts),
                                         "x".join(p.upper() for p in parts)),
                        Loc(source, start, close + 1))
    return Tok("TYPE", text[start:close + 1], start, close + 1, dims)


# nxk, bxtxc, nx3: the x form with lower-case letters (one name to the lexer)
_LOWER_X_PART = re.compile(r"[a-wyz]|[0-9]+")


def _try_array(source, start):
    """The fast path for numbers-only literals: an ARRAY token, or None.

    Raises GoatError for a literal nested deeper than MAX_RANK (checked here, once, so that
    a pathological 10,000-deep nest costs one scan rather than one per bracket).
    """
    text = source.text
    depth = 0
    close = -1
    # the brackets from here on, up to the first character a numbers-only literal cannot hold:
    # the scan stops at the bracket that closes this one, so it reads this literal's text only
    # (scanning to the end of the run of such characters, as once done, read all of
    # "[[1]] + [[1]] + ..." again at every literal: quadratic)
    for b in _LITERAL_STOPS.finditer(text, start):
        c = b.group()
        if c == "[":
            depth += 1
            if depth > MAX_RANK:
                raise GoatError("a list literal may be nested at most %d deep (a tensor has at "
                                "most %d dimensions)" % (MAX_RANK, MAX_RANK),
                                Loc(source, b.start(), b.end()))
        elif c == "]":
            depth -= 1
            if depth == 0:
                close = b.end()
                break
        else:
            break
    if close < 0:
        return None
    literal = text[start:close]
    if len(literal) > _SMALL_LITERAL:
        arr = _fast_array(literal)
    else:               # a short literal ([[1]], [[0.5, -1]]) is often written many times
        arr = _SMALL_LITERALS.get(literal)
        if arr is None:
            arr = _fast_array(literal)
            if arr is not None and len(_SMALL_LITERALS) < 4096:
                _SMALL_LITERALS[literal] = arr
        if arr is not None:
            arr = arr.copy()        # each ARRAY token has a value of its own
    if arr is None:
        return None
    return Tok("ARRAY", literal, start, close, arr)


_SMALL_LITERAL = 40
_SMALL_LITERALS = {}    # text -> its value, for literals of at most _SMALL_LITERAL characters


def _list_follows(pieces: list, i: int) -> bool:
    """Does a list literal start at the ``[`` of ``pieces[i]`` (a ``[`` follows it)?  Then the
    ``[`` after a value and a blank is a list with a comma forgotten before it
    (concat(a [[1]], 0)); right after the value, x[[0, 2]], it subscripts x by a list of
    indices, as in NumPy."""
    j = _next_index(pieces, i + 1)
    return j is not None and pieces[j] == "["


def _next_index(pieces: list, j: int) -> int | None:
    """The index of the next piece from ``pieces[j]`` on that is not a blank, a newline or a
    comment (None: there is none)."""
    n = len(pieces)
    while j < n:
        if pieces[j][0] not in " \t\f\r\n#":
            return j
        j += 1
    return None


_ASSIGNS = frozenset(("=", "+=", "-=", "*=", "/="))
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def _after_open(pieces: list, j: int) -> bool:
    """Is the piece before ``pieces[j]`` (past blanks, newlines and comments) a '(' or a ','?"""
    j -= 1
    while j >= 0 and (pieces[j][0] in " \t\f\r\n" or pieces[j][0] == "#"):
        j -= 1
    return j >= 0 and pieces[j] in ("(", ",")


def _starts_statement(pieces: list, j: int) -> bool:
    """Does what follows ``pieces[j]`` (past blanks, newlines and comments) start a statement
    that no expression goes on with: a statement's keyword (let, print, for, ...), or an
    assignment (h = ..., s += ..., a, b = ...; but not an argument given by name on a line of
    its own, after a '(' or a ',')?"""
    k = _next_index(pieces, j)
    if k is None:
        return False
    if pieces[k] in STATEMENT_KEYWORDS:
        return True
    n = len(pieces)
    first = k
    while k < n and _NAME.match(pieces[k]) and pieces[k] not in KEYWORDS:
        one = k == first
        k += 1
        while k < n and pieces[k][0] in " \t\f\r":
            k += 1
        if k < n and pieces[k] in _ASSIGNS:
            # f(w,\n  eps = 1e-08): an argument by name on a line of its own, after a ( or a
            # comma, goes on with the call
            return not (pieces[k] == "=" and one and _after_open(pieces, first))
        if k >= n or pieces[k] != ",":
            return False
        k += 1
        while k < n and pieces[k][0] in " \t\f\r":
            k += 1
    return False


def _mismatched_close(piece, stack, source, start, end, local, error, pieces, i):
    """A ``)`` or ``]`` (``pieces[i]``) that does not close the bracket open before it
    (``stack``'s last) is its statement's error (``local``), and is taken as the slip the rest
    of the statement bears out: closing the bracket of its own kind open in the statement,
    those inside it forgotten (``f(a[1)``), or closing the bracket open last, mistyped
    (``[[1, 2)]``, a row ``(0, 1],`` of a matrix); with none open in the statement (``print
    i)`` in a block), nothing."""
    own = _CLOSE[piece]
    base = len(stack)
    while base > 0 and stack[base - 1][0] != "{":
        base -= 1
    inner = [c for c, _ in stack[base:]]
    if not inner:
        local(GoatError("unmatched '%s': no bracket is open here" % piece,
                        Loc(source, start, end)))
        return
    local(error)
    del stack[base + _mended(inner, own, pieces, i):]


def _mended(inner: list, own: str, pieces: list, i: int) -> int:
    """How many of a statement's open brackets ``inner`` (( and [, outermost first) stay open
    after ``pieces[i]``, a ``)`` or ``]`` that does not close the last of them (``own``: the
    opener of its kind): those before the last of its kind, the rest forgotten, where the rest
    of the statement bears that out or does not bear out a mistyped last one; else all but
    the last."""
    forgotten = len(inner) - 1 - inner[::-1].index(own) if own in inner else None
    if forgotten is not None and (_pairs_up(pieces, i + 1, inner[:forgotten])
                                  or not _pairs_up(pieces, i + 1, inner[:-1])):
        return forgotten
    return len(inner) - 1


def _pairs_up(pieces: list, j: int, open_: list) -> bool:
    """Do the brackets of ``pieces[j:]`` close ``open_`` (the ( and [ a statement has open)
    and the statement end there, a statement or the end of the file following it?"""
    st = list(open_)
    for k in range(j, min(len(pieces), j + _PAIRING_LOOK)):
        p = pieces[k]
        c = p[0]
        if c == "(" or c == "[":
            st.append(c)
        elif c == ")" or c == "]":
            if not st or st[-1] != _CLOSE[c]:
                return False
            st.pop()
        elif p in ("{", "}", ";"):
            return not st
        elif c == "\n":
            follows = _next_index(pieces, k + 1)
            starts = follows is None or pieces[follows] == "}" or _starts_statement(pieces, k + 1)
            if not st:
                return starts
            if starts:
                return False
    return False


_PAIRING_LOOK = 4000        # pieces _pairs_up reads ahead, at the most


def starts_statement(line: str, before: str = "") -> bool:
    """Does ``line`` start with what no expression goes on with (a statement's keyword, or an
    assignment), so that a ( or [ left open before it ends there?  ``before``: the text of the
    input so far, inside a call's ( (after its ( or a comma, ``eps = 1e-08`` is an argument
    by name, not an assignment)."""
    if not before:
        return _starts_statement(_PIECES.findall(line), 0)
    pieces = _PIECES.findall(before) + ["\n"]
    return _starts_statement(pieces + _PIECES.findall(line), len(pieces))


def open_brackets(text: str) -> list:
    """The brackets and blocks still open at the end of ``text``, outermost first (comments and
    strings skipped).

    The REPL reads another line while this is not empty.  The brackets are matched as
    :func:`tokenize` matches them: a ``{``, a block's ``}`` or a line that starts with a
    statement's keyword ends the ``(`` and ``[`` left open before it (``print f(i`` before a
    ``}`` is that statement's error, and the ``}`` closes the block); a bracket that closes
    another kind or none, or a ``;`` inside ``(`` or ``[``, is mended as the lexer mends it
    inside a block (whose ``}`` is still to come), and outside one is an error no later line
    can mend: nothing is open then, so the REPL reads no more and says so.
    """
    stack = []
    pieces = _PIECES.findall(text)
    for k, piece in enumerate(pieces):
        c = piece[0]
        if c == "\n" and stack and stack[-1] != "{" and \
                _starts_statement(pieces, k + 1):
            while stack and stack[-1] != "{":
                stack.pop()
        elif c in "([{":
            if c == "{":
                if _doubled(pieces, k):
                    continue            # {{: the second opens nothing (the lexer says so)
                while stack and stack[-1] != "{":
                    stack.pop()
            stack.append(c)
        elif c in ")]}":
            if stack and stack[-1] == _CLOSE[c]:
                stack.pop()
            elif c == "}" and "{" in stack:
                while stack.pop() != "{":
                    pass
            elif c == "}" or "{" not in stack:
                return []
            else:                   # in a block: mended as _mismatched_close mends them
                base = len(stack) - stack[::-1].index("{")
                if len(stack) > base:
                    del stack[base + _mended(stack[base:], _CLOSE[c], pieces, k):]
        elif c == ";" and stack and stack[-1] != "{":
            if "{" not in stack:
                return []
            if _starts_statement(pieces, k + 1):
                while stack[-1] != "{":
                    stack.pop()
    return stack
