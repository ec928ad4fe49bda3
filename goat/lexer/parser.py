"""Source text -> syntax tree, with lark's LALR(1) parser.

The grammar (grammar.lark) is LALR(1), so the sequence of shifts and reductions for a
statement depends only on the sequence of its token *kinds*.  The parser uses that: the first
statement of each kind-sequence is parsed by lark, which records the reductions it makes (which
callback, on which tokens and earlier results); every later statement with the same
kind-sequence replays that record on its own tokens.  A 12,000-line unrolled training program
has a few dozen distinct statement shapes, so lark's parse tables are consulted for those only,
and the program is read several times faster than token-by-token -- with the same syntax tree
and the same errors, since a statement lark rejects is never recorded.

Syntax errors become :class:`~goat.diagnostics.GoatError` naming what was expected and what
was found.
"""
from __future__ import annotations

import atexit
import itertools
import os
import re
import threading

import numpy as np

from ..diagnostics import GoatError, Loc, Source
from . import ast
from .lexer import MAX_RANK, Tok, Unreadable, tokenize
from .tokens import COMPOUND_ASSIGN, DESCRIPTIONS, KEYWORDS, PUNCTUATION, STATEMENT_KEYWORDS

EXPRESSION_START = {"NAME", "NUMBER", "LPAR", "MINUS", "ARRAY", "LSQB", "NOT"}
STATEMENT_START = {"DEF", "LET", "PRINT"}
STATEMENT_KEYWORD_TERMS = {KEYWORDS[k] for k in STATEMENT_KEYWORDS} | {"RBRACE"}
OPERATOR_TERMS = {"PLUS", "MINUS", "STAR", "SLASH", "AT", "PERCENT", "EQEQ", "NE", "LT", "LE",
                  "GT", "GE", "AND", "OR"}
_ESCAPES = {"n": "\n", "t": "\t", "\\": "\\", '"': '"'}


class _Build:
    """Builds goat.lexer.ast nodes; one method per grammar rule, each given the rule's
    children (tokens and earlier results) as a list."""

    def __init__(self, source: Source):
        self.source = source
        self.named = []             # string arguments with {fields}, to read once parsed

    def _loc(self, tok) -> Loc:
        return Loc(self.source, tok.start_pos, tok.end_pos)

    # ---- statements
    def single(self, c):
        return c[0]

    def interactive(self, c):
        return c[0]

    def expr_stmt(self, c):
        return ast.ExprStmt(c[0], c[0].loc)

    def def_stmt(self, c):
        kw, name, _lp, params, _rp, _arrow, ret, body = c
        return ast.Def(name.value, params or [], body, self._loc(kw).to(body.loc), self._loc(name),
                       ret)

    def def_head(self, c):
        kw, name, _lp, params, _rp, _arrow, ret, brace = c
        loc = self._loc(kw).to(self._loc(brace))
        d = ast.Def(name.value, params or [], [], loc, self._loc(name), ret, block=True)
        return ast.Header("def", d, loc)

    def params_head(self, c):
        kw, name, brace = c
        loc = self._loc(kw).to(self._loc(brace))
        return ast.Header("params", ast.Params(name.value, [], loc, self._loc(name)), loc)

    def member_stmt(self, c):
        name, typ, expr = c
        nloc = self._loc(name)
        return ast.Member(name.value, self._type(typ), expr, nloc.to(expr.loc), nloc)

    def rtype(self, c):
        types = [self._type(t) for t in c if t.type in ("TYPE", "NAME")]
        return types[0] if len(types) == 1 and c[0].type in ("TYPE", "NAME") else types

    def _type(self, tok):
        if tok.type == "NAME":      # a params block's name: its layout
            return ast.TypeAnn((), self._loc(tok), layout=tok.value)
        return ast.TypeAnn(tok.extra, self._loc(tok))

    def let_stmt(self, c):
        kw, name, typ, expr = c
        ann = self._type(typ) if typ is not None else None
        return ast.Let(name.value, ann, expr, self._loc(kw).to(expr.loc), self._loc(name))

    def let_tuple(self, c, kind="let"):
        # (each name followed by its annotation, or None: let g: theta, n = ...)
        kw, *pairs, expr = c
        names, types = pairs[0::2], pairs[1::2]
        anns = [self._type(t) if t is not None else None for t in types]
        return ast.LetTuple([t.value for t in names], expr, self._loc(kw).to(expr.loc),
                            [self._loc(t) for t in names], kind=kind,
                            types=anns if any(a is not None for a in anns) else None)

    def var_tuple(self, c):
        return self.let_tuple(c, kind="var")

    def assign_target(self, c):
        """(name token, None) or (name token, (items, the brackets' Loc))."""
        if len(c) == 1:
            return (c[0], None)
        name, lsq, *items, rsq = c
        return (name, (items, self._subscripts(items, lsq, rsq)))

    def assign_tuple(self, c):
        *targets, expr = c
        names = [t for t, _ in targets]
        parts = [part for _, part in targets]
        return ast.LetTuple([t.value for t in names], expr, self._loc(names[0]).to(expr.loc),
                            [self._loc(t) for t in names], kind="assign",
                            items=parts if any(parts) else None)

    def var_stmt(self, c):
        kw, name, typ, expr = c
        ann = self._type(typ) if typ is not None else None
        return ast.Var(name.value, ann, expr, self._loc(kw).to(expr.loc), self._loc(name))

    def assign(self, c):
        name, expr = c
        nloc = self._loc(name)
        return ast.Assign(name.value, expr, nloc.to(expr.loc), nloc)

    def compound(self, c):
        return c[0]

    def assign_index(self, c):
        name, lsq, *items, rsq, expr = c
        nloc = self._loc(name)
        bracket = self._subscripts(items, lsq, rsq)
        return ast.Assign(name.value, expr, nloc.to(expr.loc), nloc, items, bracket)

    def compound_assign_index(self, c):
        name, lsq, *items, rsq, op, expr = c
        nloc = self._loc(name)
        bracket = self._subscripts(items, lsq, rsq)
        part = ast.Index(ast.Name(name.value, nloc), items, nloc.to(bracket), bracket)
        value = ast.Binary(COMPOUND_ASSIGN[op.value], part, expr, nloc.to(expr.loc),
                           self._loc(op))
        return ast.Assign(name.value, value, nloc.to(expr.loc), nloc, items, bracket)

    def _subscripts(self, items, lsq, rsq):
        """The place of the brackets around ``items``; a bare ':' gets it as its own."""
        bracket = self._loc(lsq).to(self._loc(rsq))
        for item in items:
            if type(item) is ast.Slice and item.loc is None:
                item.loc = bracket
        return bracket

    def compound_assign(self, c):
        name, op, expr = c
        nloc = self._loc(name)
        value = ast.Binary(COMPOUND_ASSIGN[op.value], ast.Name(name.value, nloc), expr,
                           nloc.to(expr.loc), self._loc(op))
        return ast.Assign(name.value, value, nloc.to(expr.loc), nloc)

    def print_stmt(self, c):
        kw, expr = c
        return ast.Print(expr, self._loc(kw).to(expr.loc))

    def print_format(self, c):
        kw, string = c
        # the fields are parsed by parse() once this statement is read (see _format_parts)
        return ast.PrintFormat(string, self._loc(kw).to(self._loc(string)))

    def save_stmt(self, c):
        kw, _lp, expr, string, rp = c
        # a name with {fields} is a format string (see parse: _format_parts)
        path = string if "{" in string.value else self._string(string)
        return ast.Save(expr, path, self._loc(kw).to(self._loc(rp)), self._loc(string))

    def assert_stmt(self, c):
        kw, cond, string = c
        # a message's fields are parsed by parse() once this statement is read (_format_parts)
        return ast.Assert(cond, string, self._loc(kw).to(self._loc(string) if string is not None
                                                          else cond.loc))

    def for_head(self, c):
        kw, name, _in, lo, _dots, hi, brace = c
        loc = self._loc(kw).to(self._loc(brace))
        return ast.Header("for", ast.For(name.value, lo, hi, [], loc, self._loc(name)), loc)

    def if_head(self, c):
        kw, cond, brace = c
        loc = self._loc(kw).to(self._loc(brace))
        return ast.Header("if", ast.If(cond, [], [], loc), loc)

    def elif_head(self, c):
        kw, _if, cond, brace = c
        loc = self._loc(kw).to(self._loc(brace))
        return ast.Header("elif", ast.If(cond, [], [], self._loc(_if).to(self._loc(brace)),
                                         chained=True), loc)

    def else_head(self, c):
        kw, brace = c
        loc = self._loc(kw).to(self._loc(brace))
        return ast.Header("else", None, loc)

    def close(self, c):
        return ast.Close(self._loc(c[0]))

    def return_stmt(self, c):
        kw, *exprs = c
        if len(exprs) == 1:
            expr = exprs[0]
        else:
            expr = ast.Tuple(exprs, exprs[0].loc.to(exprs[-1].loc))
        return ast.Return(expr, self._loc(kw).to(expr.loc))

    def import_stmt(self, c):
        kw, name = c
        return ast.Import(name.value, self._loc(kw).to(self._loc(name)), self._loc(name))

    def _string(self, tok) -> str:
        """The text of a STRING token, escapes processed (\\n \\t \\\\ \\")."""
        raw = tok.value[1:-1]
        if "\\" not in raw:
            return raw
        out = []
        i = 0
        while i < len(raw):
            ch = raw[i]
            if ch == "\\":
                nxt = raw[i + 1]
                if nxt not in _ESCAPES:
                    at = tok.start_pos + 1 + i
                    raise GoatError("unknown escape \\%s in a string (known: \\n \\t \\\\ \\\")"
                                    % nxt, Loc(self.source, at, at + 2))
                out.append(_ESCAPES[nxt])
                i += 2
            else:
                out.append(ch)
                i += 1
        return "".join(out)

    def params(self, c):
        return c

    def param(self, c):
        name, typ, default = c
        ann = self._type(typ)
        return ast.Param(name.value, ann, self._loc(name).to(
            ann.loc if default is None else default.loc), default)

    # ---- expressions
    def binary(self, c):
        left, op, right = c
        return ast.Binary(op.value, left, right, left.loc.to(right.loc), self._loc(op))

    def negate(self, c):
        op, operand = c
        return ast.Unary(op.value, operand, self._loc(op).to(operand.loc))

    def number(self, c):
        tok = c[0]
        return ast.Number(float(tok.value), self._loc(tok))

    def signed_number(self, c):
        minus, tok = c
        return ast.Number(-float(tok.value), self._loc(minus).to(self._loc(tok)))

    def name(self, c):
        tok = c[0]
        return ast.Name(tok.value, self._loc(tok))

    def call(self, c):
        name, _lp, args, rp = c
        nloc = self._loc(name)
        return ast.Call(name.value, args or [], nloc.to(self._loc(rp)), nloc)

    def args(self, c):
        return c

    def index(self, c):
        value, lsq, *items, rsq = c
        bracket = self._subscripts(items, lsq, rsq)
        return ast.Index(value, items, value.loc.to(bracket), bracket)

    def ellipsis(self, c):
        return ast.Ellipsis(self._loc(c[0]))

    def slice(self, c):
        bounds = [e for e in c if e is not None]
        loc = bounds[0].loc.to(bounds[-1].loc) if bounds else None
        if loc is not None:
            # its colons too (::2, 1:): the slice as written, for a caret under all of it
            text = loc.source.text
            a, z = loc.start, loc.end
            while a > 0 and text[a - 1] in " :" and ":" in text[a - 1:loc.start]:
                a -= 1
            while z < len(text) and text[z] in " :" and ":" in text[loc.end:z + 1]:
                z += 1
            text_a, text_z = text[a:loc.start], text[loc.end:z]
            a = loc.start - len(text_a.lstrip(" "))
            z = loc.end + len(text_z.rstrip(" "))
            loc = Loc(loc.source, a, z)
        return ast.Slice(c[0], c[1], c[2] if len(c) > 2 else None, loc)

    def type_arg(self, c):
        tok = c[0]
        return ast.TypeArg(self._type(tok), self._loc(tok))

    def keyword_arg(self, c):
        name, value = c
        nloc = self._loc(name)
        return ast.Keyword(name.value, value, nloc.to(value.loc), nloc)

    def keyword_type_arg(self, c):          # reshape(x, shape=tensor[2x3])
        name, tok = c
        return self.keyword_arg([name, self.type_arg([tok])])

    def keyword_string_arg(self, c):        # load(path="w.npy", ...)
        name, tok = c
        return self.keyword_arg([name, self.string_arg([tok])])

    def string_arg(self, c):
        tok = c[0]
        if "{" in tok.value:
            # a name with {fields}, load("w_{step}.npy"): read as a format string once the
            # statement is (see parse: _format_parts)
            arg = ast.StringArg(tok, self._loc(tok))
            self.named.append(arg)
            return arg
        return ast.StringArg(self._string(tok), self._loc(tok))

    def tuple(self, c):
        lp, *items, rp = c
        return ast.Tuple(items, Loc(self.source, lp.start_pos, rp.end_pos))

    def expression(self, c):
        return c[0]

    def group(self, c):
        lp, inner, rp = c
        inner.loc = Loc(self.source, lp.start_pos, rp.end_pos)   # the caret covers the brackets
        return inner

    def array(self, c):
        tok = c[0]
        return ast.Array(tok.extra, self._loc(tok))

    def list(self, c):
        lsq, *elements, rsq = c
        loc = self._loc(lsq).to(self._loc(rsq))
        elements = [e for e in elements if e is not None]
        if not elements:
            return ast.Array(np.zeros((0,), dtype=np.float64), loc)
        numbers = [isinstance(e, ast.Number) for e in elements]
        if all(numbers):
            return ast.Array(np.array([e.value for e in elements], dtype=np.float64), loc)
        if any(numbers):
            bad = elements[numbers.index(not numbers[0])]
            raise GoatError("a list literal cannot mix numbers and lists", bad.loc)
        first = elements[0].array.shape
        for e in elements[1:]:
            if e.array.shape != first:
                raise GoatError(
                    "the rows of a list literal must have equal length: this row has %s, the "
                    "first row has %s" % (_count(e.array.shape), _count(first)), e.loc)
        if len(first) + 1 > MAX_RANK:
            raise GoatError("a list literal may be nested at most %d deep (a tensor has at most "
                            "%d dimensions)" % (MAX_RANK, MAX_RANK), loc)
        return ast.Array(np.stack([e.array for e in elements]), loc)


RULES = [name for name in vars(_Build) if not name.startswith("_")]


def _count(shape) -> str:
    if len(shape) == 1:
        return "%d number%s" % (shape[0], "" if shape[0] == 1 else "s")
    return "shape " + "x".join(map(str, shape))


class _Recorder:
    """lark's callbacks while a statement is parsed for the first time: each rule is applied
    for real (to a :class:`_Build`) and written down as a step (the rule, and which tokens and
    earlier results it was given), so that the whole statement becomes a function of its
    tokens."""

    def __init__(self):
        self.build = None
        self.names = {}       # id(object) -> its reference: token index i >= 0, result j as -1-j
        self.steps = []
        self.keep = []        # results stay alive so their ids stay unique

    def start(self, build, tokens, record=True):
        self.build = build
        self.record = record
        self.names = {id(t): i for i, t in enumerate(tokens)} if record else {}
        self.steps = []
        self.keep = []

    def _rule(self, rule):
        def callback(children):
            result = getattr(self.build, rule)(children)
            if not self.record:
                return result
            self.steps.append((rule, [None if c is None else self.names[id(c)] for c in children]))
            self.names[id(result)] = -len(self.steps)
            self.keep.append(result)
            return result
        return callback


def _encode_steps(steps) -> str:
    """Steps as the cache file keeps them: ``rule:ref,ref;rule:ref`` (``n`` for None)."""
    return ";".join(rule + ":" + ",".join("n" if r is None else str(r) for r in refs)
                    for rule, refs in steps)


def _sealed(key: str, text: str) -> str:
    """A cache entry: the encoded steps of the statement shape ``key``, and a checksum of both
    (an entry edited, or moved to another key, is not replayed: it would read the statement
    another way, silently)."""
    import zlib
    return "%s#%08x" % (text, zlib.crc32((key + "\0" + text).encode("utf-8")))


def _unsealed(key: str, entry) -> str:
    """The steps of a cache entry for ``key`` that :func:`_sealed` made; ValueError if the
    checksum does not hold."""
    if not isinstance(entry, str):
        raise ValueError("not an entry")
    text, _, _ = entry.rpartition("#")
    if _sealed(key, text) != entry:
        raise ValueError("damaged")
    return text


def _decode_steps(text, ntokens):
    """The steps a cache entry holds, after checking them: known rules, references to tokens
    that exist and to earlier results only.  Raises ValueError otherwise."""
    if not isinstance(text, str) or not text:
        raise ValueError("not steps")
    out = []
    for j, step in enumerate(text.split(";")):
        rule, _, refs = step.partition(":")
        if rule not in _RULE_SET:
            raise ValueError(rule)
        decoded = []
        for r in refs.split(",") if refs else ():
            if r == "n":
                decoded.append(None)
                continue
            r = int(r)
            if not -j <= r < ntokens:
                raise ValueError(r)
            decoded.append(r)
        out.append((rule, tuple(decoded)))
    return out


def _compile_steps(steps):
    """``f(b, t) -> Stmt`` doing what the (checked) ``steps`` do, as one Python function."""
    lines = []
    for j, (rule, refs) in enumerate(steps):
        shown = ", ".join("None" if r is None else "t[%d]" % r if r >= 0 else "r%d" % (-r - 1)
                          for r in refs)
        lines.append("    r%d = b.%s([%s])" % (j, rule, shown))
    code = "def replay(b, t):\n%s\n    return r%d\n" % ("\n".join(lines), len(lines) - 1)
    scope = {}
    exec(compile(code, "<goat statement shape>", "exec"), scope)
    return scope["replay"]


class _Shape:
    """How to build the statements of one token-kind sequence: the recorded steps, followed
    one by one for the first few statements of this shape, then compiled into a Python function
    that replaces this object in _SHAPES (compiling costs about as much as following the steps
    ten times, and most shapes of a program occur once or twice)."""

    __slots__ = ("key", "steps", "uses")
    COMPILE_AFTER = 8

    def __init__(self, key, steps):
        self.key = key
        self.steps = steps
        self.uses = 0

    def __call__(self, b, t):
        self.uses += 1
        if self.uses > self.COMPILE_AFTER:
            fn = _compile_steps(self.steps)
            if _SHAPES.get(self.key) is self:
                _SHAPES[self.key] = fn
            return fn(b, t)
        r = []
        for rule, refs in self.steps:
            r.append(getattr(b, rule)([None if x is None else t[x] if x >= 0 else r[-1 - x]
                                       for x in refs]))
        return r[-1]


_RULE_SET = frozenset(RULES)
_RECORDER = _Recorder()
_LOCK = threading.Lock()
_LARK = None


def _lark():
    """lark's LALR(1) parser for goat's grammar, made the first time a statement's shape is
    not known yet (most programs are read without it: see _SavedShapes)."""
    global _LARK
    if _LARK is None:
        from lark import Lark
        from lark.lexer import Lexer as LarkLexer

        class TokenListLexer(LarkLexer):
            """Feeds lark the tokens made by tokenize (lark's custom-lexer interface 2)."""
            __future_interface__ = 2

            def __init__(self, lexer_conf):
                pass

            def lex(self, lexer_state, parser_state):
                return iter(lexer_state.text)

        _LARK = Lark(
            _GRAMMAR, parser="lalr", lexer=TokenListLexer,
            start=["single", "interactive", "expression"], maybe_placeholders=True,
            transformer=type("_RecordingTransformer", (), {
                rule: staticmethod(_RECORDER._rule(rule)) for rule in RULES})(),
        )
    return _LARK


with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "grammar.lark"),
          encoding="utf-8") as _f:
    _GRAMMAR = _f.read()


class _SavedShapes:
    """The statement shapes of earlier runs, kept in goat's cache folder
    (``$XDG_CACHE_HOME/goat``, by default ``~/.cache/goat``), so that a program is read without
    loading lark at all when every shape it uses was seen before: what a run of a familiar
    program spends starting up.

    The file is data (for each shape, a string of rule names and references), checked before
    use; one per version of the grammar and of goat.  Nothing here is needed for correctness: a missing, unreadable or
    damaged file is ignored, a file that cannot be written is not written.
    ``GOAT_NO_CACHE=1`` turns it off.
    """

    LIMIT = 1024            # shapes kept in the file: those of the latest runs
    BYTES = 4 * 1024 * 1024     # and at most this much of them

    def __init__(self):
        self.loaded = None  # key string -> steps
        self.new = {}
        self.used = []
        self.path = None

    def _file(self):
        if self.path is None:
            import zlib
            from .. import __version__
            digest = "%08x" % zlib.crc32((_GRAMMAR + "\0" + __version__ + "\0" + " ".join(RULES))
                                         .encode("utf-8"))
            base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"),
                                                                   ".cache")
            self.path = os.path.join(base, "goat", "statement-shapes-3-%s.json" % digest)
        return self.path

    def get(self, key):
        if self.loaded is None:
            self.loaded = {}
            if os.environ.get("GOAT_NO_CACHE"):
                return None
            try:
                path = self._file()
                if os.path.isfile(path) and os.path.getsize(path) < 16 * 1024 * 1024:
                    import json
                    with open(path, encoding="utf-8") as f:
                        data = json.load(f)
                    if isinstance(data, dict):
                        self.loaded = data
            except (OSError, ValueError, RuntimeError):
                self.loaded = {}
        k = " ".join(key)
        entry = self.loaded.get(k)
        if entry is None:
            return None
        try:
            steps = _unsealed(k, entry)
        except ValueError:
            return None             # damaged: parsed afresh, and written again then
        self.used.append(k)
        return steps

    def add(self, key, steps):
        if os.environ.get("GOAT_NO_CACHE"):
            return
        if not self.new:
            atexit.register(self.save)
        k = " ".join(key)
        self.new[k] = _sealed(k, _encode_steps(steps))

    def save(self):
        """Write the known shapes (called once, when the process ends)."""
        if not self.new:
            return
        try:
            path = self._file()
            folder = os.path.dirname(path)
            os.makedirs(folder, exist_ok=True)
            import json
            import tempfile
            old = self.loaded or {}
            data = {}
            size = 0
            # the newest first, then those used now, then the rest: up to LIMIT shapes and
            # BYTES of text (a file over 16 MB would not be read again)
            for k, v in itertools.chain(reversed(self.new.items()),
                                        ((k, old[k]) for k in self.used), old.items()):
                if len(data) >= self.LIMIT:
                    break
                if not (isinstance(k, str) and isinstance(v, str)) or \
                        size + len(k) + len(v) > self.BYTES:
                    continue        # a damaged entry, or one too long for what is left
                if k not in data:
                    data[k] = v
                    size += len(k) + len(v) + 6
            fd, tmp = tempfile.mkstemp(dir=folder, prefix=".shapes-", suffix=".tmp")
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as f:
                    json.dump(data, f, separators=(",", ":"))
                os.replace(tmp, path)
            except BaseException:
                os.unlink(tmp)
                raise
            self.new = {}
        except Exception:
            pass            # a cache that cannot be written is not written


_SAVED = _SavedShapes()


def save_shapes() -> None:
    """Write the statement shapes learned by this process to the cache now (otherwise done
    when the process ends normally)."""
    _SAVED.save()
_SHAPES: dict = {}          # tuple of token kinds -> replay function
_MAX_SHAPES = 4096
# the tokens of the shapes kept in memory, at most (a shape of n tokens holds some 250n bytes
# of recorded steps and keys): a process that reads many generated long statements stays small
_MAX_SHAPE_TOKENS = 200_000
_shape_tokens = [0]
_MAX_RECORDED_TOKENS = 2_000


def _describe_found(tok) -> str:
    kind = tok.type
    if kind == "NAME":
        return "name '%s'" % tok.value
    if kind == "NUMBER":
        return "number %s" % tok.value
    if kind == "TYPE":
        return "the type %s" % tok.value
    return DESCRIPTIONS.get(kind, repr(str(tok.value)))


def _describe_expected(expected) -> str:
    expected = set(expected)
    expected.discard("TARGET")      # (the [ of x[i] = v: the lexer's, written as any [)
    if "_EQUAL" in expected:
        expected.discard("_COLON")  # (a params block's member w: TYPE = ...: no slip's fix)
    if {"RPAR", "_COMMA"} <= expected:
        expected.discard("_EQUAL")  # (after a name in a call, an argument by name's =)
    if len(expected) > 1:
        expected.discard("$END")
    words = []
    if EXPRESSION_START & expected and expected >= {"NAME", "NUMBER", "LPAR"}:
        words.append("an expression")
        expected -= EXPRESSION_START
    if {"NUMBER", "MINUS", "LSQB"} <= expected and "NAME" not in expected:
        words.append("a number")           # inside a list literal
        expected -= {"NUMBER", "MINUS", "LSQB", "ARRAY"}
    if {"PLUS", "MINUS", "STAR", "SLASH", "AT"} <= expected:
        words.append("an operator")
        expected -= OPERATOR_TERMS | {"SUBSCRIPT"}     # (x[i] may follow any value)
    if STATEMENT_START <= expected:
        words.append("a statement (let, var, def, print, for, if, ...)")
        expected -= STATEMENT_KEYWORD_TERMS
    words += sorted(DESCRIPTIONS.get(t, t) for t in expected)
    if not words:
        return "something else"
    if len(words) == 1:
        return words[0]
    return ", ".join(words[:-1]) + " or " + words[-1]


_KEYWORD_TERMS = frozenset(KEYWORDS.values())
_STATEMENT_HABITS = {
    "break": "; goat has no break: put the rest of the loop's body in an if, with a var as a flag",
    "continue": "; goat has no continue: put the rest of the loop's body in an if",
    "while": "; goat has no while loop: write for i in 0..N { if ... { ... } }",
    "elif": "; write else if",
}


# a statement's first word in other languages -> what goat writes
_OTHER_LANGUAGES = {
    "const": "let (a name bound once) or var (a name assignment may change)",
    "val": "let", "auto": "let", "int": "let", "float": "let", "double": "let",
    "function": "def", "func": "def", "fn": "def", "fun": "def", "lambda": "def",
    "println": "print", "printf": "print", "echo": "print", "puts": "print",
    "foreach": "for", "loop": "for", "elsif": "else if", "elseif": "else if",
    "then": "if c { ... }", "end": "a closing }",
    "include": "import", "require": "import", "use": "import", "using": "import",
}


def _first_word_slip(tokens, tok) -> str:
    """The message for a statement whose first word, a name, cannot be followed by what
    follows it (``pritn x``, ``Let x = 1``, ``function f``, ``from nn import gelu``,
    ``x++``): the word is most likely a keyword misspelled or another language's."""
    first = tokens[0]
    if first.type != "NAME" or len(tokens) < 2 or tokens[1] is not tok:
        return ""
    word = first.value
    if (tok.type in ("PLUS", "MINUS") and len(tokens) == 4 and tokens[2].type == tok.type
            and tokens[3].type == "_NL"):
        op = tok.value
        return ("there is no %s%s: write %s %s= 1" % (op, op, word, op))
    # a word then a name, a number or a string: no statement begins so (a bracket after a
    # name is indexing, and an operator may make a value, each with its own message)
    if tok.type not in ("NAME", "NUMBER", "STRING"):
        return ""
    if word == "from" and tok.type == "NAME":
        return ("goat has no from ... import: write import %s, then %s.NAME(...)"
                % (tok.value, tok.value))
    if word.lower() in KEYWORDS:
        return "'%s' is not a statement; keywords are lower case: %s" % (word, word.lower())
    if word in _OTHER_LANGUAGES:
        return "'%s' is not a statement; goat writes %s" % (word, _OTHER_LANGUAGES[word])
    import difflib
    close = difflib.get_close_matches(word.lower(), STATEMENT_KEYWORDS, n=1, cutoff=0.6)
    if close:
        return "'%s' is not a statement; did you mean %s?" % (word, close[0])
    return ""


def _unclosed(build, tokens, tok) -> str:
    """The hint for a token met inside a '(' or '[' opened on an earlier line (the statement
    went on over the lines after it, as a bracket lets it): that bracket is likely unclosed."""
    at = next((k for k, t in enumerate(tokens) if t is tok), len(tokens))
    stack = [tokens[k] for k in _still_open(tokens, at)]
    if not stack:
        return ""
    # a bracket closed later in the statement is not the fault, unless what is met begins a
    # line (a statement's first word, as likely as not: the bracket closes too late)
    depth = 0
    midline = at > 0 and build._loc(tokens[at - 1]).line == build._loc(tok).line
    for t in tokens[at:] if midline else ():
        if t.type in _OPENERS:
            depth += 1
        elif t.type in ("RPAR", "RSQB"):
            depth -= 1
            if depth < 0:
                return ""
    opened = build._loc(stack[-1]).line
    if build._loc(tok).line <= opened:
        return ""
    return "; the '%s' opened on line %d is still open here: is a '%s' missing?" % (
        stack[-1].value, opened, ")" if stack[-1].type == "LPAR" else "]")


def _open_parens(tokens) -> int:
    return sum(1 if t.type == "LPAR" else -1 if t.type == "RPAR" else 0 for t in tokens)


_JOINS = frozenset(("concat", "concatenate", "cat", "stack", "hstack", "vstack"))


def _still_open(tokens, i: int) -> list:
    """The indices of the ``(`` and ``[`` still open at ``tokens[i]``, outermost first."""
    stack = []
    for k in range(i):
        t = tokens[k].type
        if t in _OPENERS:
            stack.append(k)
        elif t in ("RPAR", "RSQB") and stack:
            stack.pop()
    return stack


def _names_only(tokens) -> bool:
    """Are ``tokens`` names, commas and let/var, and subscripts of names assigned (the left of
    ``a, b = ...`` or ``h[l], c[l] = ...``)?"""
    depth = 0
    for t in tokens:
        if t.type == "TARGET":
            depth += 1
        elif depth:
            depth -= t.type == "RSQB"
            depth += t.type in _OPENERS
        elif t.type not in ("NAME", "_COMMA", "LET", "VAR"):
            return False
    return True


_OPENERS = frozenset(("LPAR", "LSQB", "SUBSCRIPT", "TARGET"))     # (each closed by ) or ])


def _list_depth(tokens, i: int) -> int:
    """How many list literals' [s are open at ``tokens[i]`` (not a subscript's, nor a ()."""
    return sum(tokens[k].type == "LSQB" for k in _still_open(tokens, i))


def _opener(tokens, k: int):
    """The kind of the bracket the closing ``tokens[k]`` closes (None: none)."""
    depth = 0
    for j in range(k, -1, -1):
        t = tokens[j].type
        if t in ("RSQB", "RPAR"):
            depth += 1
        elif t in _OPENERS:
            depth -= 1
            if depth == 0:
                return t
    return None


def _opening_bracket(tokens, i: int) -> int:
    """The index of the ``[`` or ``(`` still open at ``tokens[i]`` (-1: none)."""
    stack = _still_open(tokens, i)
    return stack[-1] if stack else -1


def _python_range(build, tokens):
    """(message, loc) for ``for i in range(10) {``, Python's loop: the range to write in its
    place (0..10, a..b), the caret under range(...); else None."""
    k = next((k for k, t in enumerate(tokens[:4]) if t.type == "IN"), None)
    if k is None or k + 2 >= len(tokens) or tokens[k + 1].value != "range" or \
            tokens[k + 2].type != "LPAR":
        return None
    level, args, start = 0, [], k + 3
    for j in range(k + 2, len(tokens)):
        t = tokens[j]
        if t.type in ("LPAR", "LSQB", "SUBSCRIPT"):
            level += 1
        elif t.type in ("RPAR", "RSQB"):
            level -= 1
            if level == 0:
                args.append((start, j))
                break
        elif t.type == "_COMMA" and level == 1:
            args.append((start, j))
            start = j + 1
    else:
        return None
    loc = build._loc(tokens[k + 1]).to(build._loc(tokens[j]))
    text = loc.source.text

    def arg(a, b):
        return text[build._loc(tokens[a]).start:build._loc(tokens[b - 1]).end] if b > a else ""
    parts = [arg(a, b) for a, b in args]
    if len(parts) == 1 and parts[0]:
        written = "0..%s" % parts[0]
    elif len(parts) == 2 and all(parts):
        written = "%s..%s" % tuple(parts)
    else:
        written = None
    if written is None:
        return ("syntax error: goat's loop has no range(...): it runs over a half-open range "
                "of step 1, for i in a..b { ... }", loc)
    return ("syntax error: goat's loop has no range(...): write for %s in %s { ... } (a "
            "half-open range, as range's)" % (tokens[k - 1].value, written), loc)


def _hint(tokens, tok) -> str:
    """A word on what the user probably meant, for a few common slips."""
    i = next((k for k, t in enumerate(tokens) if t is tok), 0)
    prev = tokens[i - 1].type if i > 0 else None
    if tok.type == "SLASH" and i == 0 and len(tokens) > 1 and tokens[1].type == "SLASH":
        return "; a comment starts with #"
    if tok.type == "SLASH" and prev == "SLASH":
        return "; there is no integer division (//): write (a - a % b) / b"
    if tok.type == "IF" and prev in ("NAME", "NUMBER", "RPAR", "RSQB", "ARRAY"):
        return "; there is no A if C else B: write where(C, A, B), elementwise"
    if tok.type == "IF" and prev is not None:
        return _IF_VALUE
    if (tokens[0].type == "ASSERT" and len(tokens) > 1 and tokens[1].type == "LPAR"
            and tok.type == "STRING"):
        return '; an assert is written without parentheses: assert COND, "message"'

    if tok.type in _KEYWORD_TERMS and prev in ("LET", "VAR", "DEF", "_COMMA", "LPAR", "FOR",
                                                "IMPORT"):
        return "; '%s' is a reserved word, not a name" % tok.value
    if i == 1 and tokens[0].type == "NAME" and tokens[0].value == "params" and (
            tok.type == "LBRACE"):
        return "; a params block is named: params theta { ... }"
    if i == 1 and tokens[0].type in _KEYWORD_TERMS and tokens[0].type not in (
            "LET", "VAR", "DEF", "IMPORT", "PARAMS") and (
            tok.type == "_EQUAL" or (tok.type == "_COLON" and tokens[0].type != "ELSE")):
        # for = [1, 2]: an assignment, or a params block's member, to a keyword
        return "; '%s' is a reserved word, not a name" % tokens[0].value
    if tok.type == "TYPE" and prev in ("LET", "VAR", "DEF", "_COMMA", "LPAR", "FOR", "IMPORT"):
        return "; %s is a type, not a name" % tok.value
    comparisons = ("EQEQ", "NE", "LT", "LE", "GT", "GE")
    if tok.type in comparisons and any(t.type in comparisons for t in tokens[:i]):
        return "; comparisons do not chain: write a < b and b < c"
    if tok.type == "STAR" and prev == "STAR":
        return ("; there is no power operator (**): square(x) is x * x, and for x > 0 write "
                "exp(p * log(x))")
    if tok.type == "_COMMA" and any(t.type == "_EQUAL" for t in tokens[:i]) and _names_only(
            tokens[:next(k for k, t in enumerate(tokens) if t.type == "_EQUAL")]) \
            and sum(1 if t.type in _OPENERS else -1 if t.type in ("RSQB", "RPAR")
                    else 0 for t in tokens[:i]) == 0:
        # a, b = b, a, as Python writes a swap
        return "; several values on the right are written as a tuple in parentheses: a, b = (b, a)"
    depth = _list_depth(tokens, i)
    if tok.type in ("RSQB", "_COMMA") and prev == "_COMMA" and depth > 0:
        if tok.type == "RSQB":
            return "; a list literal cannot end with a comma"
        return "; two commas in a row: a value is missing between them"
    if tok.type in ("ARRAY", "LSQB") and prev in ("ARRAY", "RSQB") and depth > 0:
        return "; is a comma missing between two rows?"
    after_value = prev in ("NAME", "RPAR") or (prev == "RSQB" and _opener(tokens, i - 1) ==
                                               "SUBSCRIPT")
    if tok.type in ("ARRAY", "LSQB") and prev in ("ARRAY", "RSQB") and not after_value:
        return "; is a comma missing between the two lists?"
    if tok.type in ("ARRAY", "LSQB") and after_value:
        # (x[[0, 2]], with no blank before its [, is a subscript by a list of indices)
        return ("; is a comma missing before the list? (a subscript is written right after "
                "its value: x[[0, 2]] takes rows 0 and 2)")
    if tok.type == "SUBSCRIPT" and i == 1 and tokens[0].type == "NAME":
        # x[0][1] = v, x[0], y = ...: a statement that assigns to something else than a
        # name or one subscript of it
        level = 0
        for t in tokens[1:]:
            kind = t.type
            if kind in _OPENERS:
                if level == 0 and kind == "SUBSCRIPT" and t is not tok:
                    return ("; write one subscript with every axis in it to assign to: "
                            "x[0, 1] = v, not x[0][1] = v")
                level += 1
            elif kind in ("RSQB", "RPAR"):
                level -= 1
            elif level == 0 and kind == "_COMMA" and any(
                    u.value in ("+=", "-=", "*=", "/=") for u in tokens[i:]):
                return ("; += and the other compound assignments take one target: h[0] += a, "
                        "then h[1] += b")
            elif level == 0:
                break
    if tok.type in ("NAME", "LPAR") and depth > 0 and prev in ("LSQB", "_COMMA"):
        opened = _opening_bracket(tokens, i)
        if opened >= 2 and tokens[opened - 1].type == "LPAR" and tokens[opened - 2].type == \
                "NAME" and tokens[opened - 2].value in _JOINS:
            # concat([a, b], 0), as NumPy's concatenate and PyTorch's cat take them
            return ("; concat takes two tensors and an axis, not a list of them: "
                    "concat(a, b, 0)")
    if tok.type in ("NAME", "LPAR", "MINUS") and depth > 0 and prev in ("LSQB", "_COMMA") and (
            tok.type != "MINUS" or tokens[i + 1].type != "NUMBER"):
        name = tok.value if tok.type == "NAME" else "a"
        return ("; a list literal holds numbers only: compute a value from names instead, e.g. "
                "reshape(%s, tensor[1x1]), or [[1, 0]] * %s + [[0, 1]] * b" % (name, name))
    if tokens[0].type == "FOR" and tok.type in ("_COLON", "LBRACE") and any(
            t.type == "NAME" and t.value == "range" for t in tokens[:i]):
        return "; a loop over 0, 1, ..., n - 1 is written for i in 0..n { ... }"
    if tokens[0].type == "FOR" and tok.type == "LBRACE" and i == 4 and prev == "NAME":
        return ("; a loop runs over a range of numbers: for i in 0..%s { ... } if %s is a "
                "count (goat has no loop over a tensor's rows; gather takes rows)"
                % ((tokens[i - 1].value,) * 2))
    if tok.type == "LBRACE" and prev == "_EQUAL" and tokens[0].type == "DEF":
        return "; a def with a block body has no =: def f(x: tensor[2x3]) { ...; return y }"
    if depth > 0 and prev in ("NUMBER", "ARRAY") and tok.type in (
            "PLUS", "MINUS", "STAR", "SLASH", "AT", "PERCENT"):
        return ("; a list literal holds numbers only, not expressions: compute the value "
                "outside it, or write the number")
    if tokens[0].type == "PRINT" and tok.type == "LBRACE" and i == 1:
        # print {x}: a format string's field without its quotes
        return "; a value to format is a field of a string, in quotes: print \"{x}\""
    if tokens[0].type == "PRINT" and tok.type == "_COMMA" and _open_parens(tokens[:i]) == 0:
        return ('; print takes one value: to print several on a line, print "{a} {b}"')
    if tokens[0].type == "FOR" and tok.type == "_COLON":
        return "; a loop's body is a block in braces: for i in 0..n { ... }"
    if tokens[0].type == "DEF" and tok.type in ("RPAR", "_COMMA") and prev == "NAME" and \
            _open_parens(tokens[:i]) == 1:
        return ("; each parameter has a type: %s: tensor[2x3], %s: tensor[N, C] or %s: scalar"
                % ((tokens[i - 1].value,) * 3))
    if tok.type == "_EQUAL" and tokens[0].type == "DEF" and _open_parens(tokens[:i]) > 0:
        return ("; a parameter's type goes before its default: %s: scalar = ..."
                % (tokens[i - 1].value if prev == "NAME" else "x"))
    if tok.type == "_EQUAL" and tokens[0].type in ("IF", "ELSE") or (
            tok.type == "_EQUAL" and _open_parens(tokens[:i]) > 0 and prev != "NAME"):
        return "; a comparison is written =="
    if tok.type == "_COLON" and tokens[0].type in ("IF", "ELSE"):
        return "; a branch is a block in braces: if c { ... } else { ... }"
    if tok.type == "STRING" and prev == "NAME" and tokens[i - 1].value in ("f", "F") and \
            tokens[i - 1].end_pos == tok.start_pos:         # f"...", written together
        return "; a string's {fields} are formatted without an f: print \"x = {x}\""
    if tok.type == "_NL" and prev in _OPEN_ENDS:
        if tokens[0].type == "DEF":
            return ("; a def's body = EXPR goes on the def's line; a longer one is a block: "
                    "def f(x: tensor[2x3]) { ...; return y }")
        return ("; the value goes on the same line as its =, and may go on over several "
                "inside parentheses")
    if tok.type == "_NL" and prev in _CONTINUED:
        return ("; a statement goes on to the next line only inside ( ) or [ ]: finish the "
                "expression on this line, or put it in parentheses")
    if tok.type == "STRING" and tokens[0].type == "PRINT" and prev == "LPAR" and i == 2:
        return ('; print takes no parentheses around text: print "a {x}" puts values in it')
    if tok.type == "STRING" and prev == "_EQUAL":
        return ("; goat has no string values: text goes only in print \"...\", an assert's "
                "message and load's and save's file names")
    if tok.type == "_COLON" and i == 0:
        return "; commands such as :env work only in the REPL"
    if tok.type == "_EQUAL" and prev == "NAME" and i == 1:
        return "; a new name needs let: let %s = ..." % tokens[0].value
    if _def_without_keyword(tokens) and (
            (tok.type == "LPAR" and i == 1) or tok.type in ("_EQUAL", "ARROW", "LBRACE")
            or (tok.type == "_COLON" and _open_parens(tokens[:i]) == 1)):
        # f(a: tensor[2]) = a * 2 (the REPL reads f(a: as a call, and stops at the :)
        return "; a function is defined with def: def %s(...)" % tokens[0].value
    if tok.type == "NAME" and i == 0 and len(tokens) > 1 and tokens[1].type == "_EQUAL":
        return "; a new name needs let: let %s = ..." % tok.value
    if tok.type == "_COLON" and i == 1 and prev == "NAME":
        # w: tensor[1x2] = ... (Python's annotated assignment)
        return "; a new name needs let or var: let %s: TYPE = ..." % tokens[0].value
    return ""


def _is_value(parser, build, tokens) -> bool:
    """Do ``tokens`` read as an expression (and so not as a statement)?"""
    _RECORDER.start(build, tokens, False)
    try:
        parser.parse(tokens, start="expression")
        return True
    except Exception:
        return False


def _first_parse(build: _Build, tokens: list, start: str = "single"):
    """Parse one statement with lark, recording it; returns (stmt, its recorded steps or None).

    A very long statement is not recorded: no other statement is likely to share its shape,
    and compiling its replay would cost more than parsing it.
    """
    from lark import UnexpectedInput, UnexpectedToken
    record = len(tokens) <= _MAX_RECORDED_TOKENS
    with _LOCK:
        parser = _lark()
        _RECORDER.start(build, tokens, record)
        try:
            stmt = parser.parse(tokens, start=start)
        except UnexpectedToken as e:
            tok = e.token
            try:        # LALR's merged lookaheads over-report; ask which tokens really fit
                e.expected = e.interactive_parser.accepts() or e.expected
            except Exception:
                pass
            if tok.type == "$END":
                raise GoatError("syntax error: the statement ends early; expected %s"
                                % _describe_expected(e.expected), build._loc(tokens[-1])) from None
            first = tokens[0]
            if first.type == "NAME" and first.value in _STATEMENT_HABITS:
                raise GoatError("syntax error: '%s' is not a statement%s"
                                % (first.value, _STATEMENT_HABITS[first.value]),
                                build._loc(first)) from None
            slip = _first_word_slip(tokens, tok) if start != "expression" else ""
            if slip:
                raise GoatError("syntax error: %s" % slip, build._loc(first)) from None
            if start == "single" and _is_value(parser, build, tokens):
                raise GoatError(_ON_ITS_OWN + " does nothing in a "
                                "program: write print before it to show it (the REPL shows a "
                                "value typed on its own)",
                                build._loc(first).to(build._loc(tokens[-2]))) from None
            ranged = _python_range(build, tokens) if first.type == "FOR" else None
            if ranged is not None:
                raise GoatError(*ranged) from None
            expected = _describe_expected(e.expected)
            k = tokens.index(tok) if tok in tokens else 0
            if expected == "a number" and k >= 2 and tokens[k - 2].type in ("ARRAY", "RSQB"):
                expected = "a row such as [1, 2]"   # the list holds rows, not numbers
            raise GoatError("syntax error: expected %s, found %s%s"
                            % (expected, _describe_found(tok),
                               "" if start == "expression" and tok.type == "_NL" else
                               _hint(tokens, tok) or _unclosed(build, tokens, tok)),
                            build._loc(tok)) from None
        except UnexpectedInput as e:       # any other lark complaint
            raise GoatError("syntax error: %s" % str(e).splitlines()[0],
                            build._loc(tokens[0])) from None
        except Exception as e:
            # lark wraps errors raised in our callbacks (e.g. a ragged literal)
            inner = getattr(e, "orig_exc", None)
            if isinstance(inner, GoatError):
                raise inner from None
            raise
        steps = _RECORDER.steps if record else None
        _RECORDER.start(None, (), False)
    return stmt, steps


def _parse_statement(build: _Build, tokens: list, start: str):
    """One statement from its tokens, its format strings' {fields} parsed too (an error in a
    field is the statement's, as a syntax error is)."""
    stmt = _parse_tokens(build, tokens, start)
    while build.named:
        arg = build.named.pop()
        parts = _format_parts(build, arg.value)
        arg.value = parts if any(not isinstance(p, str) for p in parts) else "".join(parts)
    t = type(stmt)
    if t is ast.PrintFormat:
        stmt.parts = _format_parts(build, stmt.parts)
    elif t is ast.Save and not isinstance(stmt.path, str):
        stmt.path = _format_parts(build, stmt.path)
    elif t is ast.Assert and stmt.parts is not None:
        stmt.parts = _format_parts(build, stmt.parts)
    return stmt


def _parse_tokens(build: _Build, tokens: list, start: str):
    """One statement (or, for start="expression", one expression) from its tokens."""
    if type(tokens) is Unreadable:
        raise tokens.error
    key = tuple([t.type for t in tokens])
    if start != "single":
        key = (start,) + key
    replay = _SHAPES.get(key)
    if replay is not None:
        return replay(build, tokens)
    steps = _SAVED.get(key)
    if steps is not None:
        try:
            replay = _Shape(key, _decode_steps(steps, len(tokens)))
        except (ValueError, TypeError):
            replay = None           # a damaged cache entry: parse afresh
        if replay is not None:
            try:
                stmt = replay(build, tokens)
            except GoatError:
                raise
            except Exception:       # steps that pass every check and still do not fit
                stmt = None
            if stmt is not None:
                if _room_for(key):
                    _SHAPES[key] = replay
                return stmt
    stmt, steps = _first_parse(build, tokens, start)
    if steps is not None and _room_for(key):
        _SHAPES[key] = _Shape(key, steps)
        _SAVED.add(key, steps)
    return stmt


def _room_for(key) -> bool:
    """Is there room to keep the shape ``key`` (_MAX_SHAPES, _MAX_SHAPE_TOKENS)?  Counts it
    in when there is."""
    if not _SHAPES:
        _shape_tokens[0] = 0        # emptied (a test does)
    if len(_SHAPES) >= _MAX_SHAPES or _shape_tokens[0] + len(key) > _MAX_SHAPE_TOKENS:
        return False
    _shape_tokens[0] += len(key)
    return True


_ASSIGN_OPS = frozenset(PUNCTUATION[op] for op in COMPOUND_ASSIGN)


def _def_without_keyword(tokens) -> bool:
    """f(a: tensor[2]) = a * 2, or f(a: tensor[2]) { ...: a def written without its def."""
    if len(tokens) < 3 or tokens[0].type != "NAME" or tokens[1].type != "LPAR":
        return False
    depth = 0
    for k, t in enumerate(tokens[1:], 1):
        if t.type in _OPENERS:
            depth += 1
        elif t.type in ("RPAR", "RSQB"):
            depth -= 1
            if depth == 0:
                after = tokens[k + 1].type if k + 1 < len(tokens) else None
                return after in ("_EQUAL", "LBRACE", "ARROW")
    return False


def _names_of(tokens) -> tuple:
    """The names a statement that could not be read seems to define (let a, b = ...; a loop's
    variable, used by the lines after a Python-style header, for i in range(n):)."""
    if len(tokens) > 1 and tokens[0].type == "FOR" and tokens[1].type == "NAME":
        return (tokens[1].value,)
    if _def_without_keyword(tokens):
        return (tokens[0].value,)
    if len(tokens) > 1 and tokens[0].type == "NAME" and tokens[1].type == "_COLON":
        return (tokens[0].value,)       # w: tensor[2] = ..., a let without its let
    if tokens and tokens[0].type == "NAME":
        # an assignment (h = ..., h += ..., a, b = ...): the var's value is not known after it
        names = []
        for t in tokens:
            if t.type == "NAME":
                names.append(t.value)
            elif t.type == "_EQUAL" or t.type in _ASSIGN_OPS:
                return tuple(names)
            elif t.type != "_COMMA":
                return ()
        return ()
    if not tokens or tokens[0].type not in ("LET", "VAR", "DEF"):
        return ()
    out = []
    for t in tokens[1:]:
        if t.type == "NAME":
            out.append(t.value)
        elif t.type != "_COMMA" or tokens[0].type == "DEF":
            break
    return tuple(out[:1]) if tokens[0].type == "DEF" else tuple(out)


def _format_parts(build: _Build, tok) -> list:
    """The parts of a format string: text, and a Field per ``{expr:spec}``."""
    from ..interp.fmt import FormatSyntaxError, check_spec, parse_format
    source = build.source
    base = tok.start_pos + 1                  # the text between the quotes starts here
    try:
        parts = parse_format(tok.value[1:-1])
    except FormatSyntaxError as e:
        raise GoatError(e.message, Loc(source, base + e.start, base + max(e.end, e.start + 1))) from None
    out = []
    for part in parts:
        if part[0] == "text":
            out.append(part[1])
            continue
        _, start, end, spec = part
        loc = Loc(source, base + start, base + end)
        if "#" in tok.value[1 + start:1 + end]:
            raise GoatError("a {} field cannot hold a '#': it would start a comment", loc)
        statements = tokenize(source, base + start, base + end)
        if len(statements) != 1:
            raise GoatError("a {} field of a format string holds one expression", loc)
        text = tok.value[1 + start:1 + end]
        if re.fullmatch(r"\s*[A-Za-z_]\w*\s*=\s*", text):
            name = text.strip().rstrip("=").strip()
            raise GoatError("{%s} is Python's self-documenting field; goat's fields hold a value: "
                            "write \"%s = {%s}\"" % (text, name, name), loc)
        try:
            expr = _parse_tokens(build, statements[0], "expression")
        except GoatError as e:
            # the field ends at its } (or the : before a spec), not at the end of the line
            e.message = e.message.replace("the end of the line", "the } that ends the field")
            e.args = (e.message,) + e.args[1:]
            raise
        if spec is not None:
            problem = check_spec(spec)
            if problem:
                raise GoatError(problem, loc)
        out.append(ast.Field(expr, spec, loc))
    return out


def _assemble(stmts: list, errors: list | None = None) -> list:
    """Blocks from the flat statements: each Header takes the statements up to its Close.

    A "broken" Header (a block's header that could not be read, its error reported) stands
    as its ast.Broken, and its block's statements are dropped: nothing in them can be checked
    without the header.  Given ``errors``, a block structure that does not hold (an ``else``
    with no if before it, a ``}`` with no block open) is appended to it and left out, and
    blocks still open at the end close there (a header's "never closed" is its own error)."""
    top = []
    stack = []              # (Header, the list its statements go to)
    current = top
    dropped = {}            # id of a dropped block's list: the Broken that stands for it
    by_brace = set()        # the headers with no { whose block (not indented) ends at a }

    def wrong(error):
        if errors is None:
            raise error
        errors.append(error)

    def close():
        """Pop the innermost block; a broken one's dropped statements leave what they assign
        unknown after it (the Broken's names), as a statement that could not be read does."""
        nonlocal current
        header, parent = stack.pop()
        broken = dropped.pop(id(current), None)
        if broken is not None:
            names = []
            ast.assigned_names(current, names)
            broken.names = tuple(dict.fromkeys(broken.names + tuple(names)))
        current = parent
        return header

    for i, stmt in enumerate(stmts):
        t = type(stmt)
        if stack and _soft(stack[-1][0]) and stack[-1][0] not in by_brace:
            # a block with no { ends at the first line indented no deeper than its header; a
            # } is its own unless it stands further left (an outer block's)
            column, mine = _indent(stmt), False
            while stack and _soft(stack[-1][0]) and stack[-1][0] not in by_brace:
                head = _indent(stack[-1][0])
                if t is not ast.Close and column > head:
                    break
                close()
                if t is ast.Close and column >= head:
                    mine = True
                    break
            if mine:
                continue
        if t is ast.Header:
            kind = stmt.kind
            if _soft(stmt):
                block = _has_block(stmts, i, stack)
                if block is None:
                    # no block under it: the header stands alone, as the statement that it
                    # is not (its error reported), and the lines after are the program's
                    current.append(stmt.stmt if kind == "unbraced" else stmt.soft)
                    continue
                if block == "brace":        # its lines not indented: it ends at its }
                    by_brace.add(stmt)
            if kind == "unbraced":
                current.append(stmt.stmt)
                stack.append((stmt, current))
                current = []
                dropped[id(current)] = stmt.stmt
                continue
            if kind in ("else", "elif"):
                try:
                    target = _open_else(current, stmt)
                except GoatError as e:
                    wrong(e)
                    target = None
                if target is None:          # after a block that could not be read
                    broken = _last_broken(current)
                    stack.append((stmt, current))
                    current = []
                    if broken is not None:
                        dropped[id(current)] = broken
                elif kind == "elif":
                    target.append(stmt.stmt)
                    stack.append((stmt, current))
                    current = stmt.stmt.body
                else:
                    stack.append((stmt, current))
                    current = target
                continue
            current.append(stmt.stmt)
            stack.append((stmt, current))
            if kind == "broken":
                current = []
                dropped[id(current)] = stmt.stmt
            else:
                current = stmt.stmt.body
        elif t is ast.Close:
            if not stack:
                wrong(GoatError("unmatched '}': no block is open here", stmt.loc))
                continue
            header = close()
            if header.kind in ("for", "if", "elif", "def", "else", "params"):
                owner = header.stmt
                if owner is not None:
                    owner.loc = owner.loc.to(stmt.loc)
        else:
            current.append(stmt)
    if stack and errors is None:
        raise GoatError("this block is never closed with '}'", stack[-1][0].loc)
    while stack:            # (its error reported: the lexer's, or the header's own)
        close()
    return top


def _last_broken(stmts: list):
    """The ast.Broken an ``else`` after ``stmts`` continues (the last statement, or the end of
    its else-if chain), or None."""
    last = stmts[-1] if stmts else None
    while type(last) is ast.If and len(last.orelse) == 1:
        last = last.orelse[0]
    return last if type(last) is ast.Broken else None


def _soft(header) -> bool:
    """Is ``header`` one written without its { (its block ends where the indentation says)?"""
    return header.kind == "unbraced" or header.soft is not None


def _indent(stmt) -> int:
    """The indentation of the line ``stmt`` starts on (its blanks, counted as characters)."""
    text, at = stmt.loc.source.text, stmt.loc.start
    start = text.rfind("\n", 0, at) + 1
    end = start
    while end < at and text[end] in " \t\f\r":
        end += 1
    return end - start


def _line(stmt) -> int:
    return stmt.loc.source.position(stmt.loc.start)[0]


def _has_block(stmts: list, i: int, stack: list):
    """The block of the header ``stmts[i]``, written without its {: "indent" where lines
    indented deeper stand under it, or a } on its own line (for k in 0..2 x = x * 2 }); "brace"
    where its lines are not indented but a } at its indentation would close nothing else (none
    at the top level; one indented deeper than the header of the block ``stack`` has open); None
    where it has none."""
    header = stmts[i]
    after = stmts[i + 1] if i + 1 < len(stmts) else None
    if after is None:
        return None
    if _line(after) == _line(header):
        return "indent" if type(after) is ast.Close else None
    if type(after) is not ast.Close and _indent(after) > _indent(header):
        return "indent"
    depth = 0
    indent = _indent(header)
    for k in range(i + 1, min(len(stmts), i + 1 + _LOOK_AHEAD)):
        s = stmts[k]
        t = type(s)
        if t is ast.Header and not _soft(s):
            depth += 1
        elif t is ast.Close:
            if depth == 0:
                if _indent(s) == indent and (not stack or indent > _indent(stack[-1][0])):
                    return "brace"
                return None
            depth -= 1
        elif depth == 0 and (_indent(s) < indent or (t is ast.Header and _soft(s))):
            return None     # the lines go back out, or another header without { begins
    return None


_LOOK_AHEAD = 2000          # statements _has_block reads ahead for a }, at the most


def _open_else(current: list, header) -> list | None:
    """The (empty) else-list of the if that ``header`` (an ``else``) continues; None after a
    block whose header could not be read (an ast.Broken: its error is reported)."""
    last = current[-1] if current else None
    if type(last) is ast.Broken:
        return None
    if type(last) is not ast.If:
        raise GoatError("'else' must follow the '}' of an if block", header.loc)
    while last.orelse:
        nested = last.orelse[0]
        if len(last.orelse) == 1 and type(nested) is ast.If and nested.chained:
            last = nested
        elif len(last.orelse) == 1 and type(nested) is ast.Broken:
            return None
        else:
            raise GoatError("this if already has an else block", header.loc)
    return last.orelse


# let b = if c { 1 } else { 0 }: an if where a value goes (its blocks' values are not said to
# do nothing on their own lines)
_IF_VALUE = ("; an if is a statement, not a value: where(c, a, b) chooses between two "
             "values (elementwise), or declare a var and assign it in each branch")

# a statement's last token that leaves its value to come (``let y =``, ``x +=``)
_OPEN_ENDS = frozenset(("_EQUAL", "PLUS_EQUAL", "MINUS_EQUAL", "STAR_EQUAL", "SLASH_EQUAL"))
_ON_ITS_OWN = "syntax error: a value on its own line"
# ... and those that leave the rest of an expression to come (``let y = x +``)
_CONTINUED = _OPEN_ENDS | {"PLUS", "MINUS", "STAR", "SLASH", "AT", "PERCENT", "AND", "OR",
                           "NOT", "EQEQ", "NE", "LT", "LE", "GT", "GE", "_COMMA"}


def parse(source: Source, interactive: bool = False, errors: list | None = None) -> ast.Module:
    """Parse a whole program.  Raises GoatError for the first syntax error -- or, given an
    ``errors`` list, appends each statement's syntax error to it and goes on with the next
    statement (an ast.Broken stands in for the statement; for a block's header, for its whole
    block).

    ``interactive`` (the REPL) also accepts a bare expression as a statement (ast.ExprStmt).
    """
    build = _Build(source)
    start = "interactive" if interactive else "single"
    stmts = []
    append = stmts.append
    blocks = False
    dangling = False        # the statement before failed ending in =: this one is its value
    if_value = 0            # the depth of the blocks of an if written as a value
    if_value_else = False   # ... whose block has just ended (an else may follow)
    unbraced = None         # (its tokens, its error's index) when the statement before was a
    #                         block's header with no { that failed
    for tokens in tokenize(source):
        if errors is None:
            stmt = _parse_statement(build, tokens, start)
        else:
            if unbraced is not None and len(tokens) == 2 and tokens[0].type == "LBRACE":
                # for i in 0..3 / { on a line of its own: one error, the block kept
                stmt = _brace_on_its_own_line(build, unbraced, tokens, stmts[-1], errors)
                unbraced = None
                stmts[-1] = stmt
                blocks = True
                continue
            unbraced = None
            quiet = if_value > 0 or (if_value_else and tokens[0].type == "ELSE")
            if quiet:
                if tokens[0].type == "RBRACE":
                    if_value -= 1
                if len(tokens) > 1 and tokens[-2].type == "LBRACE":
                    if_value += 1
                if_value_else = if_value == 0       # (an else may follow its block)
            else:
                if_value_else = False
            try:
                stmt = _parse_statement(build, tokens, start)
            except GoatError as e:
                if quiet and e.message.startswith(_ON_ITS_OWN):
                    continue            # (a value in the block of an if written as a value)
                if len(tokens) > 1 and tokens[-2].type == "LBRACE":
                    # a block's header (the lexer ends a statement at the { that opens a
                    # block): its block stands as the Broken, the names it would define
                    errors.append(e)
                    dangling = False
                    build.named.clear()
                    blocks = True
                    loc = build._loc(tokens[0])
                    # (a let's ] forgotten before a block: let m = [[1, 2] / for ... {)
                    names = () if tokens[0].type in _HEADS and tokens[0].type != "DEF" \
                        else _names_of(tokens)
                    append(ast.Header("broken", ast.Broken(names, loc), loc))
                    if (e.message.endswith(_IF_VALUE) or tokens[0].type not in _HEADS) \
                            and if_value == 0:
                        # (no block's header: what is inside the braces is its error's too)
                        if_value = 1
                    continue
                if not (dangling and e.message.startswith(_ON_ITS_OWN)):
                    errors.append(e)    # (a value left on the next line is the last error's)
                # (an error token is no end: "a +\" continues as "a +" would)
                last = [t for t in tokens[:-1] if t.type != "ERROR"]
                dangling = bool(last) and len(tokens) > 1 and last[-1].type in _CONTINUED
                build.named.clear()
                broken = ast.Broken(_names_of(tokens), build._loc(tokens[0]))
                if tokens[0].type in _HEADS:
                    # a block's header with no { (for i in 0..3, if a < b:): the lines
                    # indented under it are its block (_assemble), checked where the header
                    # reads with a { in place of its end (or of its Python colon)
                    unbraced = (tokens, len(errors) - 1) if errors and errors[-1] is e else None
                    blocks = True
                    header = _with_brace(build, tokens, start)
                    if header is None:
                        header = ast.Header("unbraced", broken, broken.loc)
                    else:
                        header.soft = broken
                    append(header)
                else:
                    append(broken)
                continue
        dangling = False
        if type(stmt) is ast.Header or type(stmt) is ast.Close:
            blocks = True
        append(stmt)
    if blocks:
        first = len(errors) if errors is not None else 0
        stmts = _assemble(stmts, errors)
        if errors is not None and len(errors) > first:
            errors[first:] = sorted(errors[first:], key=_where)
    if interactive:
        _loose_values(stmts, errors, True)
    return ast.Module(source, stmts)


def _loose_values(stmts, errors, top):
    """The REPL's bare expressions that a program refuses too: one inside a block (it shows
    nothing there), and ``break`` or ``continue`` (words of other languages, not names): each
    the program's error (raised, or appended to ``errors`` with the statement made Broken)."""
    for k, stmt in enumerate(stmts):
        t = type(stmt)
        if t is ast.ExprStmt:
            e = stmt.expr
            if type(e) is ast.Name and e.name in _STATEMENT_HABITS:
                error = GoatError("syntax error: '%s' is not a statement%s"
                                  % (e.name, _STATEMENT_HABITS[e.name]), e.loc)
            elif not top:
                error = GoatError(_ON_ITS_OWN + " does nothing inside a block: write print "
                                  "before it to show it (the REPL shows a value typed on its "
                                  "own, outside any block)", stmt.loc)
            else:
                continue
            if errors is None:
                raise error
            errors.append(error)
            stmts[k] = ast.Broken((), stmt.loc)
        elif t is ast.For or (t is ast.Def and stmt.block):
            _loose_values(stmt.body, errors, False)
        elif t is ast.If:
            _loose_values(stmt.body, errors, False)
            if isinstance(stmt.orelse, list):
                _loose_values(stmt.orelse, errors, False)
            elif stmt.orelse is not None:
                _loose_values([stmt.orelse], errors, False)


_HEADS = frozenset(("FOR", "IF", "ELSE", "DEF", "PARAMS"))


def _with_brace(build, tokens, start):
    """The Header that a block's header written without its ``{`` (``tokens``, which failed)
    reads as with one at its end, in place of a Python colon there; None if it does not."""
    body = tokens[:-1]
    if body and body[-1].type == "_COLON":
        body = body[:-1]
    if not body:
        return None
    end = body[-1].end_pos
    try:
        stmt = _parse_statement(build, body + [Tok("LBRACE", "{", end, end),
                                               Tok("_NL", "", end, end)], start)
    except GoatError:
        build.named.clear()
        return None
    return stmt if type(stmt) is ast.Header else None


def _brace_on_its_own_line(build, unbraced, tokens, header, errors):
    """The statement for a block's header that failed for want of its ``{`` (``unbraced``: its
    tokens and its error's index in ``errors``; ``header``: what it was read as) and the ``{``
    on the line after it: the header with that { when it reads so (its error then says where
    the { goes), else a broken header whose block is dropped (the header's own error stands;
    the lone { is no second one)."""
    head, at = unbraced
    brace = tokens[0]
    loc = Loc(build.source, brace.start_pos, brace.end_pos)
    if header.kind == "unbraced" or head[-2].type == "_COLON":
        broken = header.stmt if header.kind == "unbraced" else header.soft
        return ast.Header("broken", broken, broken.loc)
    header.soft = None
    errors[at] = GoatError(
        "syntax error: a block's '{' goes at the end of its header's line (%s {)"
        % build.source.text[head[0].start_pos:head[-2].end_pos], loc)
    return header


def _where(error) -> int:
    return error.loc.start if error.loc is not None else -1
