"""The cache of statement shapes: a familiar program is read without loading lark, and nothing
the cache file holds can change what a program means or stop it from running."""
import json
import os
import subprocess
import sys

import pytest

from conftest import ROOT

PROGRAM = ("let a = [[1, 2], [3, 4]]\nvar w = a * 2\nfor i in 0..3 { w = w + a @ a }\n"
           "print \"{col_sum(row_sum(w)):g}\"\n")
# w = 2a + 3 (a @ a); a @ a = [[7, 10], [15, 22]] sums to 54; 2a sums to 20
EXPECTED = "182\n"

PROBE = """
import sys, goat, io
out = io.StringIO()
goat.run_file(sys.argv[1], stdout=out)
sys.stdout.write(out.getvalue())
sys.stdout.write("lark loaded: %s\\n" % ("lark" in sys.modules))
"""


def _run(tmp_path, cache, **env_extra):
    prog = tmp_path / "p.mg"
    prog.write_text(PROGRAM)
    env = dict(os.environ, XDG_CACHE_HOME=str(cache),
               PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.pop("GOAT_NO_CACHE", None)
    env.update(env_extra)
    p = subprocess.run([sys.executable, "-c", PROBE, str(prog)], capture_output=True, text=True,
                       env=env, timeout=60)
    assert p.returncode == 0, p.stderr
    assert p.stderr == ""
    printed, loaded = p.stdout.rsplit("lark loaded: ", 1)
    assert printed == EXPECTED
    return loaded.strip() == "True"


def _cache_file(cache):
    files = list((cache / "goat").glob("statement-shapes-*.json"))
    assert len(files) == 1
    return files[0]


def test_a_second_run_reads_without_lark(tmp_path):
    cache = tmp_path / "cache"
    assert _run(tmp_path, cache) is True          # the first run parses with lark
    data = json.loads(_cache_file(cache).read_text())
    assert data and all(isinstance(v, str) for v in data.values())
    assert _run(tmp_path, cache) is False         # the second knows every shape


@pytest.mark.parametrize("content", [
    "not json at all {",
    json.dumps(["a", "list"]),
    "{}",
])
def test_a_damaged_cache_file_is_ignored(tmp_path, content):
    cache = tmp_path / "cache"
    (cache / "goat").mkdir(parents=True)
    _run(tmp_path, cache)
    path = _cache_file(cache)
    path.write_text(content)
    _run(tmp_path, cache)


def test_hostile_cache_entries_cannot_change_a_program(tmp_path):
    """Entries that name no rule of the grammar, or point outside the statement's tokens, are
    not used: the statement is parsed afresh."""
    cache = tmp_path / "cache"
    _run(tmp_path, cache)
    path = _cache_file(cache)
    data = json.loads(path.read_text())
    bad = {}
    for i, key in enumerate(data):
        if i % 4 == 0:
            bad[key] = "__import__:0"
        elif i % 4 == 1:
            bad[key] = "number:999"
        elif i % 4 == 2:
            bad[key] = ["number", [0]]
        else:
            bad[key] = "number:-1"
    path.write_text(json.dumps(bad))
    assert _run(tmp_path, cache) is True          # parsed afresh, correctly


def test_an_unwritable_cache_changes_nothing(tmp_path):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the cache folder would go")
    _run(tmp_path, blocker)
    assert blocker.read_text().startswith("a file")


def test_the_cache_can_be_turned_off(tmp_path):
    cache = tmp_path / "cache"
    assert _run(tmp_path, cache, GOAT_NO_CACHE="1") is True
    assert not (cache / "goat").exists()


def test_the_cache_is_bounded(tmp_path):
    from goat.lexer import parser
    saved = parser._SavedShapes()
    saved.path = str(tmp_path / "shapes.json")
    saved.loaded = {"k%d" % i: "number:0" for i in range(parser._SavedShapes.LIMIT + 50)}
    saved.add(("NUMBER", "_NL"), [("number", [0])])
    saved.save()
    data = json.loads((tmp_path / "shapes.json").read_text())
    assert len(data) == parser._SavedShapes.LIMIT
    assert "NUMBER _NL" in data                     # the newest shape is kept


def test_well_formed_entries_edited_or_moved_cannot_change_a_program(tmp_path):
    """Found by a breaker: an entry whose steps were swapped (a - 1 read as 1 - a) or moved to
    another key passed every check and changed what the program computes, or stopped it with
    an internal error.  Each entry holds a checksum of its key and steps: one edited is parsed
    afresh."""
    cache = tmp_path / "cache"
    _run(tmp_path, cache)
    path = _cache_file(cache)
    data = json.loads(path.read_text())
    keys = sorted(data)
    edited = {}
    for i, key in enumerate(keys):
        steps, _, check = data[key].rpartition("#")
        parts = steps.split(";")
        if i % 3 == 0:          # the steps in another order, the checksum kept
            edited[key] = ";".join(reversed(parts[:-1]) if len(parts) > 2 else parts) + "#" + check
        elif i % 3 == 1:        # another key's entry, whole
            edited[key] = data[keys[(i + 1) % len(keys)]]
        else:                   # no checksum
            edited[key] = steps
    path.write_text(json.dumps(edited))
    assert _run(tmp_path, cache) is True          # parsed afresh, correctly
    assert json.loads(path.read_text()) == data   # and written again as it was
