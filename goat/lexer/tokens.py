"""The token table: the one list of goat's keywords and punctuation.

The lexer, the grammar's terminal names, the Pygments highlighter, the REPL's completion and
the editor grammars all read these names (built-in function names come from the op registry,
:func:`goat.ops.builtin_names`).  Add a keyword here and nowhere else.
"""

# keyword -> the grammar's terminal name
KEYWORDS = {
    "def": "DEF",
    "let": "LET",
    "var": "VAR",
    "print": "PRINT",
    "for": "FOR",
    "in": "IN",
    "if": "IF",
    "else": "ELSE",
    "return": "RETURN",
    "import": "IMPORT",
    "save": "SAVE",
    "assert": "ASSERT",
    "and": "AND",
    "or": "OR",
    "not": "NOT",
    "params": "PARAMS",
}

# the keywords that begin a statement (the REPL completes them at the start of a line)
STATEMENT_KEYWORDS = ("def", "let", "var", "print", "for", "if", "else", "return", "import",
                      "save", "assert", "params")

# words that only appear inside a type annotation
TYPE_WORDS = ("tensor", "scalar")

# punctuation -> terminal name (the lexer tries longer spellings first)
PUNCTUATION = {
    "==": "EQEQ",
    "!=": "NE",
    "<=": "LE",
    ">=": "GE",
    "<": "LT",
    ">": "GT",
    "..": "DOTDOT",
    "->": "ARROW",
    "+=": "PLUS_EQUAL",
    "-=": "MINUS_EQUAL",
    "*=": "STAR_EQUAL",
    "/=": "SLASH_EQUAL",
    "+": "PLUS",
    "-": "MINUS",
    "*": "STAR",
    "/": "SLASH",
    "@": "AT",
    "%": "PERCENT",
    "(": "LPAR",
    ")": "RPAR",
    "[": "LSQB",
    "]": "RSQB",
    "{": "LBRACE",
    "}": "RBRACE",
    ",": "_COMMA",
    "=": "_EQUAL",
    ":": "_COLON",
    ";": "_SEMI",
}

# compound assignment -> the binary operator it applies
COMPOUND_ASSIGN = {"+=": "+", "-=": "-", "*=": "*", "/=": "/"}

# how a terminal is named in a syntax error
DESCRIPTIONS = {
    "NAME": "a name",
    "NUMBER": "a number",
    "ARRAY": "a list literal",
    "TYPE": "a type such as tensor[2x3]",
    "STRING": "a string",
    "SUBSCRIPT": "'['",
    "ELLIPSIS": "'...'",
    "TARGET": "'['",
    "_NL": "the end of the line",
    "$END": "the end of the file",
    **{term: "'%s'" % word for word, term in KEYWORDS.items()},
    **{term: "'%s'" % sym for sym, term in PUNCTUATION.items()},
}

COMMENT = "#"
