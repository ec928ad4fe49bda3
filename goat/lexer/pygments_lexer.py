"""Syntax highlighting for goat with Pygments (the REPL, ``pygmentize -l goat``, Sphinx, MkDocs).

Registered as a Pygments plugin (entry point ``pygments.lexers``), so it is found by name once
goat is installed.  Keywords and built-in names come from the token table and the op registry,
the same lists the parser and completion use.
"""
from __future__ import annotations

from pygments.lexer import RegexLexer, bygroups, words
from pygments.token import (Comment, Error, Keyword, Name, Number, Operator, Punctuation,
                            String, Whitespace)

from ..ops import builtin_names
from .tokens import KEYWORDS, TYPE_WORDS

NAME = r"[A-Za-z_][A-Za-z0-9_]*"


class GoatLexer(RegexLexer):
    """Mountain Goat source (``.mg``)."""

    name = "Mountain Goat"
    aliases = ["goat", "mountain-goat"]
    filenames = ["*.mg"]
    mimetypes = ["text/x-goat"]
    url = "https://github.com/"   # the language is described in docs/language.md

    tokens = {
        "root": [
            (r"[ \t\f\r]+", Whitespace),
            (r"\n", Whitespace),
            (r"#.*?$", Comment.Single),
            (r"(def)(\s+)(%s)" % NAME, bygroups(Keyword.Declaration, Whitespace, Name.Function)),
            (r"(let|var)(\s+)(%s)" % NAME, bygroups(Keyword.Declaration, Whitespace, Name.Variable)),
            (r'"', String, "string"),
            (words(tuple(KEYWORDS), suffix=r"\b"), Keyword),
            (r"(tensor)(\s*)(\[)([^\]\n]*)(\])",
             bygroups(Keyword.Type, Whitespace, Punctuation, Number.Integer, Punctuation)),
            (words(tuple(TYPE_WORDS), suffix=r"\b"), Keyword.Type),
            (words(tuple(builtin_names()), suffix=r"\b"), Name.Builtin),
            (r"(?:\d+(?:\.(?!\.)\d*)?|\.\d+)[eE][-+]?\d+", Number.Float),
            (r"\d+\.(?!\.)\d*|\.\d+", Number.Float),
            (r"\d+", Number.Integer),
            (NAME, Name),
            (r"\.\.\.", Punctuation),          # a subscript's ellipsis, x[..., 0]
            (r"==|!=|<=|>=|->|\.\.|[-+*/@%<>]=?|=", Operator),
            (r"[()\[\]{},:;]", Punctuation),
            (r".", Error),
        ],
        "string": [
            (r'\\.', String.Escape),
            (r"\{\{|\}\}", String.Escape),
            (r"\{[^{}\"\n]*\}", String.Interpol),
            (r'[^"\\{}\n]+', String),
            (r'"', String, "#pop"),
            (r"\n", Error, "#pop"),
            (r".", String),
        ],
    }
