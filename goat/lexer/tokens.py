"""The token table: the one list of goat's keywords and punctuation.

The lexer, the grammar's terminal names, the Pygments highlighter, the REPL's completion and
the editor grammars all read these names (built-in function names come from the op registry,
:func:`goat.ops.builtin_names`).  Add a keyword here and nowhere else.
"""

# keyword -> the grammar's terminal name
KEYWORDS = {
    "def": "DEF",
    "let": "LET",
    "print": "PRINT",
}

# words that only appear inside a type annotation
TYPE_WORDS = ("tensor", "scalar")

# punctuation -> terminal name (longest first where one is a prefix of another)
PUNCTUATION = {
    "+": "PLUS",
    "-": "MINUS",
    "*": "STAR",
    "/": "SLASH",
    "@": "AT",
    "(": "LPAR",
    ")": "RPAR",
    "[": "LSQB",
    "]": "RSQB",
    ",": "_COMMA",
    "=": "_EQUAL",
    ":": "_COLON",
}

# how a terminal is named in a syntax error
DESCRIPTIONS = {
    "NAME": "a name",
    "NUMBER": "a number",
    "ARRAY": "a list literal",
    "TYPE": "a type such as tensor[2x3]",
    "_NL": "the end of the line",
    "$END": "the end of the file",
    **{term: "'%s'" % word for word, term in KEYWORDS.items()},
    **{term: "'%s'" % sym for sym, term in PUNCTUATION.items()},
}

COMMENT = "#"
