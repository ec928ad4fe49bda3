"""Highlighting everywhere reads the one token table: the Pygments lexer, and the editor
grammars, which must name every keyword and built-in the parser knows."""
import importlib.util
import json
import os
import re

import pytest
from pygments.token import Comment, Keyword, Name, Number

from conftest import ROOT
from goat.lexer.pygments_lexer import GoatLexer
from goat.lexer.tokens import KEYWORDS, TYPE_WORDS
from goat.ops import builtin_names

EDITORS = os.path.join(ROOT, "editors")
NAMES = sorted(KEYWORDS) + list(TYPE_WORDS) + builtin_names()


def generator():
    spec = importlib.util.spec_from_file_location("generate", os.path.join(EDITORS, "generate.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def read(rel):
    with open(os.path.join(EDITORS, rel), encoding="utf-8") as f:
        return f.read()


def test_committed_grammars_are_current():
    for rel, text in generator().files().items():
        assert read(rel) == text, "%s is stale: run python editors/generate.py" % rel


@pytest.mark.parametrize("name", NAMES)
def test_textmate_grammar_knows_every_name(name):
    grammar = json.loads(read("vscode/syntaxes/goat.tmLanguage.json"))
    alternatives = set()
    for p in grammar["patterns"]:
        for group in re.findall(r"\\b\(([\w|]+)\)", p.get("match", "")):
            alternatives.update(group.split("|"))
    assert name in alternatives


@pytest.mark.parametrize("name", NAMES)
def test_vim_syntax_knows_every_name(name):
    keyword_lines = [l.split()[3:] for l in read("vim/syntax/goat.vim").splitlines()
                     if l.startswith("syn keyword")]
    assert any(name in words for words in keyword_lines), name


@pytest.mark.parametrize("name", NAMES)
def test_pygments_lexer_knows_every_name(name):
    tokens = list(GoatLexer().get_tokens(name + "\n"))
    kind = tokens[0][0]
    assert kind in Keyword or kind in Name.Builtin, (name, kind)


def test_pygments_lexer_on_a_program():
    src = "def f(m: tensor[2x3]) = row_sum(m) # comment\nlet a = f([[1, 2, 3], [4, 5, 6]]) * 1e-05\n"
    kinds = {}
    for kind, text in GoatLexer().get_tokens(src):
        kinds.setdefault(text, kind)
    assert kinds["f"] in Name.Function and kinds["row_sum"] in Name.Builtin
    assert kinds["tensor"] in Keyword.Type and kinds["2x3"] in Number
    assert kinds["# comment"] in Comment and kinds["1e-05"] in Number.Float
    assert "".join(text for _, text in GoatLexer().get_tokens(src)) == src


def test_pygments_lexer_reads_every_subscript_form_without_an_error_token():
    from pygments.token import Error
    src = "print x[..., ::2] + sum(E[[0, -1], 1:3])\nfor i in 0..3 {\n    y[i, ...] = 1\n}\n"
    tokens = list(GoatLexer().get_tokens(src))
    assert not [text for kind, text in tokens if kind in Error]
    assert ("...") in [text for _, text in tokens] and ".." in [text for _, text in tokens]


def test_vscode_package_points_at_the_grammar():
    pkg = json.loads(read("vscode/package.json"))
    assert pkg["contributes"]["grammars"][0]["path"] == "./syntaxes/goat.tmLanguage.json"
    assert pkg["contributes"]["languages"][0]["extensions"] == [".mg"]
    assert "autocmd BufRead,BufNewFile *.mg set filetype=goat" in read("vim/ftdetect/goat.vim")


def test_pygments_finds_the_lexer_by_name_once_installed():
    from importlib import metadata
    try:
        metadata.distribution("goat-lang")
    except metadata.PackageNotFoundError:
        pytest.skip("goat is not installed (pip install .)")
    from pygments.lexers import get_lexer_by_name, get_lexer_for_filename
    assert type(get_lexer_by_name("goat")).__name__ == "GoatLexer"
    assert type(get_lexer_for_filename("model.mg")).__name__ == "GoatLexer"
