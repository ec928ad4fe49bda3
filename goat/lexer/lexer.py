"""Turns program text into tokens for the lark parser.

One regular expression per token kind (from :mod:`goat.lexer.tokens`), matched in a loop.
Besides the usual work it does three things the grammar cannot do well:

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

import numpy as np
from lark import Token

from ..diagnostics import GoatError, Loc, Source
from .tokens import KEYWORDS, PUNCTUATION, TYPE_WORDS

_MASTER = re.compile(r"""
    (?P<ws>[ \t\f\r]+)
  | (?P<comment>\#[^\n]*)
  | (?P<nl>\n)
  | (?P<number>(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)
  | (?P<name>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<punct>[-+*/@()\[\],=:])
""", re.VERBOSE)

# the characters a numbers-only list literal is made of
_LITERAL_RUN = re.compile(r"[\[\]0-9eE+\-.,\s]*")
_BRACKETS = re.compile(r"[\[\]]")
_OPEN = {"(": ")", "[": "]"}
_CLOSE = {")": "(", "]": "["}
_DIM_X = re.compile(r"\s*(\d+|\?)\s*(?:x|$)")


class ArrayToken(Token):
    """An ARRAY token; ``array`` holds the literal's values."""


def _dims_of(inner: str):
    """The dimensions written inside ``tensor[...]``, or None if malformed."""
    inner = inner.strip()
    if not inner:
        return ()
    if "," in inner:
        dims = []
        for part in inner.split(","):
            part = part.strip()
            if part.isdigit():
                dims.append(int(part))
            elif part == "?":
                dims.append(None)
            elif re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", part):
                dims.append(part)
            else:
                return None
        return tuple(dims)
    if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", inner) and not re.fullmatch(r"[0-9?x]+", inner):
        return (inner,)
    if not re.fullmatch(r"(?:\d+|\?)(?:\s*x\s*(?:\d+|\?))*", inner):
        return None
    return tuple(None if d == "?" else int(d) for d in re.split(r"\s*x\s*", inner))


def _fast_array(text: str):
    """Parse a numbers-only literal such as ``[[1, -2.5], [3, 1e-05]]``; None if not simple."""
    try:
        value = json.loads(text)
        arr = np.array(value, dtype=np.float64)
    except (ValueError, OverflowError, TypeError, RecursionError):
        return None
    if arr.dtype != np.float64:
        return None
    return arr


def tokenize(source: Source) -> list:
    """The tokens of ``source`` for the parser, statements separated by ``_NL``.

    Raises GoatError for a character goat does not know, a malformed type, or brackets that do
    not match.
    """
    text = source.text
    out = []
    append = out.append
    match = _MASTER.match
    pos = 0
    n = len(text)
    line = 1
    line_start = 0
    stack = []            # open brackets: (char, Loc)
    last_nl = True        # the last emitted token ended a statement (or nothing emitted yet)

    def loc_at(start, end, l=None, ls=None):
        l = line if l is None else l
        ls = line_start if ls is None else ls
        return Loc(source, l, start - ls + 1, l, end - ls + 1)

    while pos < n:
        m = match(text, pos)
        if m is None:
            ch = text[pos]
            shown = repr(ch) if ch.isprintable() and not ch.isspace() else "U+%04X" % ord(ch)
            raise GoatError("unexpected character %s" % shown, loc_at(pos, pos + 1))
        kind = m.lastgroup
        end = m.end()
        if kind == "ws" or kind == "comment":
            pos = end
            continue
        col = pos - line_start + 1
        if kind == "nl":
            if not stack and not last_nl:
                append(Token("_NL", "\n", pos, line, col, line, col + 1, end))
                last_nl = True
            line += 1
            line_start = end
            pos = end
            continue
        value = m.group()
        if kind == "number":
            tok = Token("NUMBER", value, pos, line, col, line, end - line_start + 1, end)
        elif kind == "name":
            if value in TYPE_WORDS:
                tok, end, line, line_start = _type_token(source, text, value, pos, end, line, line_start)
            else:
                tok = Token(KEYWORDS.get(value, "NAME"), value, pos, line, col, line,
                            end - line_start + 1, end)
        else:
            if value == "[":
                fast = _try_array(source, text, pos, line, line_start)
                if fast is not None:
                    tok, end, line, line_start = fast
                    append(tok)
                    last_nl = False
                    pos = end
                    continue
            if value in _OPEN:
                stack.append((value, loc_at(pos, end)))
            elif value in _CLOSE:
                if not stack:
                    raise GoatError("unmatched '%s': no bracket is open here" % value, loc_at(pos, end))
                opener, oloc = stack.pop()
                if _CLOSE[value] != opener:
                    raise GoatError("'%s' does not close the '%s' opened on line %d"
                                    % (value, opener, oloc.line), loc_at(pos, end))
            tok = Token(PUNCTUATION[value], value, pos, line, col, line, end - line_start + 1, end)
        append(tok)
        last_nl = False
        pos = end
    if stack:
        opener, oloc = stack[-1]
        raise GoatError("'%s' is never closed" % opener, oloc)
    if not last_nl:
        col = pos - line_start + 1
        append(Token("_NL", "", pos, line, col, line, col, pos))
    return out


def _type_token(source, text, word, pos, end, line, line_start):
    """``scalar`` or ``tensor[...]`` as one TYPE token (value: the dims tuple in ``.dims``)."""
    col = pos - line_start + 1
    if word == "scalar":
        tok = ArrayToken("TYPE", word, pos, line, col, line, end - line_start + 1, end)
        tok.dims = ()
        return tok, end, line, line_start
    j = end
    while j < len(text) and text[j] in " \t":
        j += 1
    close = text.find("]", j)
    nl = text.find("\n", j)
    if j >= len(text) or text[j] != "[" or close < 0 or (0 <= nl < close):
        raise GoatError("'tensor' must be followed by its dimensions, as in tensor[2x3]",
                        Loc(source, line, col, line, end - line_start + 1))
    inner = text[j + 1:close]
    dims = _dims_of(inner)
    end = close + 1
    loc = Loc(source, line, col, line, end - line_start + 1)
    if dims is None:
        raise GoatError("malformed type tensor[%s]: write its dimensions as 6x6, ?x4 or N, K"
                        % inner.strip(), loc)
    tok = ArrayToken("TYPE", text[pos:end], pos, line, col, line, end - line_start + 1, end)
    tok.dims = dims
    return tok, end, line, line_start


def _try_array(source, text, pos, line, line_start):
    """The fast path for numbers-only literals: (token, end, line, line_start) or None."""
    run_end = _LITERAL_RUN.match(text, pos).end()
    depth = 0
    close = -1
    for b in _BRACKETS.finditer(text, pos, run_end):
        if b.group() == "[":
            depth += 1
        else:
            depth -= 1
            if depth == 0:
                close = b.end()
                break
    if close < 0:
        return None
    literal = text[pos:close]
    arr = _fast_array(literal)
    if arr is None:
        return None
    newlines = literal.count("\n")
    end_line = line + newlines
    end_line_start = line_start if not newlines else pos + literal.rfind("\n") + 1
    tok = ArrayToken("ARRAY", literal, pos, line, pos - line_start + 1, end_line,
                     close - end_line_start + 1, close)
    tok.array = arr
    return tok, close, end_line, end_line_start
