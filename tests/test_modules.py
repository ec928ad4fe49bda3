"""`import NAME`: where NAME.mg is found, what a module may hold, the errors a user meets, and
the standard library installed from a wheel (not from the source tree)."""
import io
import os
import shutil
import subprocess
import sys
import zipfile

import numpy as np
import pytest

import goat
from conftest import ROOT, cli

MEMREF = ("Unranked Memref base@ = 0x\u2026 rank = 2 offset = 0 sizes = [%d, %d] "
          "strides = [%d, 1] data = \n")


@pytest.fixture(autouse=True)
def no_goat_path(monkeypatch):
    monkeypatch.delenv("GOAT_PATH", raising=False)


def write(folder, name, text):
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(str(folder), name)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    return path


def values(path):
    """The printed values of the program file at `path`, as Python floats (one per print of a
    1x1 value)."""
    return [v.item() for v in goat.run_file(str(path))]


def fails(folder, prog, *args, stdin=None):
    """Run `goat run prog` in `folder`; assert status 1 and nothing printed; the stderr lines."""
    status, out, err = cli("run", prog, *args, cwd=str(folder), stdin=stdin)
    assert (status, out) == (1, ""), err
    return err.splitlines()


# ---------------------------------------------------------------------------- search order
LOCAL_NN = "let who = [[1]]\ndef softmax_rows(m: tensor[N, C]) = m * 0 + 1\n"
PATH_NN = "let who = [[2]]\ndef softmax_rows(m: tensor[N, C]) = m * 0 + 2\n"
USES_NN = "import nn\nprint nn.softmax_rows([[5, 5]])\n"


def test_program_folder_then_goat_path_then_stdlib(tmp_path, monkeypatch):
    prog = write(tmp_path / "prog", "p.mg", USES_NN)
    local = write(tmp_path / "prog", "nn.mg", LOCAL_NN)
    write(tmp_path / "gp", "nn.mg", PATH_NN)
    monkeypatch.setenv("GOAT_PATH", str(tmp_path / "gp"))
    [got] = goat.run_file(prog)
    assert got.tolist() == [[1, 1]]                         # the program's folder first
    assert cli("run", prog, cwd=str(tmp_path))[1] == MEMREF % (1, 2, 2) + "[[1,   1]]\n"
    os.remove(local)
    [got] = goat.run_file(prog)
    assert got.tolist() == [[2, 2]]                         # then GOAT_PATH
    assert cli("run", prog, cwd=str(tmp_path))[1] == MEMREF % (1, 2, 2) + "[[2,   2]]\n"
    monkeypatch.delenv("GOAT_PATH")
    [got] = goat.run_file(prog)
    assert got.tolist() == [[0.5, 0.5]]                     # then the standard library
    assert cli("run", prog, cwd=str(tmp_path))[1] == MEMREF % (1, 2, 2) + "[[0.5,   0.5]]\n"


def test_the_stdlib_is_not_searched_before_goat_path_even_for_its_own_names(tmp_path, monkeypatch):
    # a GOAT_PATH module named like a stdlib module hides the whole stdlib module
    write(tmp_path / "gp", "nn.mg", PATH_NN)
    monkeypatch.setenv("GOAT_PATH", str(tmp_path / "gp"))
    prog = write(tmp_path / "prog", "p.mg", "import nn\nprint nn.layer_norm([[1]], [[1]], [[0]])\n")
    with pytest.raises(goat.GoatError, match="module nn has no def or let named 'layer_norm'"):
        goat.run_file(prog)


def test_goat_path_with_two_folders_in_order(tmp_path, monkeypatch):
    write(tmp_path / "one", "a.mg", "let who = [[1]]\n")
    write(tmp_path / "two", "a.mg", "let who = [[2]]\n")
    write(tmp_path / "two", "b.mg", "let who = [[3]]\n")
    prog = write(tmp_path / "prog", "p.mg", "import a\nimport b\nprint a.who\nprint b.who\n")
    one, two = str(tmp_path / "one"), str(tmp_path / "two")
    monkeypatch.setenv("GOAT_PATH", os.pathsep.join([one, two]))
    assert values(prog) == [1, 3]
    monkeypatch.setenv("GOAT_PATH", os.pathsep.join([two, one]))
    assert values(prog) == [2, 3]
    # empty entries and folders that do not exist are skipped
    monkeypatch.setenv("GOAT_PATH", os.pathsep.join(["", str(tmp_path / "none"), "", one, two, ""]))
    assert values(prog) == [1, 3]
    status, out, err = cli("run", prog, cwd=str(tmp_path))
    assert (status, err) == (0, "")
    assert out == (MEMREF % (1, 1, 1) + "[[1]]\n") + (MEMREF % (1, 1, 1) + "[[3]]\n")


def test_a_relative_program_path_searches_the_programs_folder_not_the_current_one(tmp_path):
    write(tmp_path, "m.mg", "let who = [[1]]\n")
    write(tmp_path / "sub", "m.mg", "let who = [[2]]\n")
    write(tmp_path / "sub", "p.mg", "import m\nprint m.who\n")
    status, out, err = cli("run", os.path.join("sub", "p.mg"), cwd=str(tmp_path))
    assert (status, out, err) == (0, MEMREF % (1, 1, 1) + "[[2]]\n", "")


def test_standard_input_finds_modules_in_the_current_folder(tmp_path):
    write(tmp_path, "nn.mg", LOCAL_NN)
    write(tmp_path, "helper.mg", "let k = [[7]]\n")
    src = b"import nn\nimport helper\nprint nn.softmax_rows([[5, 5]]) * helper.k\n"
    status, out, err = cli("run", "-", stdin=src, cwd=str(tmp_path))
    assert (status, out, err) == (0, MEMREF % (1, 2, 2) + "[[7,   7]]\n", "")
    # the same through the Python API: a <string> program looks in the current folder
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        [got] = goat.run_source(src.decode())
    finally:
        os.chdir(cwd)
    assert got.tolist() == [[7, 7]]


def test_a_module_looks_in_its_own_folder_first(tmp_path, monkeypatch):
    # lib.mg (on GOAT_PATH) imports helper: its sibling, not the program's helper.mg
    write(tmp_path / "gp", "lib.mg", "import helper\nlet w = helper.who * 10\n")
    write(tmp_path / "gp", "helper.mg", "let who = [[1]]\n")
    write(tmp_path / "prog", "helper.mg", "let who = [[2]]\n")
    prog = write(tmp_path / "prog", "p.mg",
                 "import lib\nimport helper\nprint lib.w\nprint helper.who\n")
    monkeypatch.setenv("GOAT_PATH", str(tmp_path / "gp"))
    assert values(prog) == [10, 2]


# ---------------------------------------------------------------------------- what modules do
def test_lets_and_defs_across_modules(tmp_path):
    write(tmp_path, "m.mg", "let k = [[2]]\ndef f(x: tensor[1x1]) = x * k\n")
    write(tmp_path, "m2.mg", "import m\n"
                             "def f(x: tensor[1x1]) = x + 100\n"            # not m.f, not p's f
                             "def g(x: tensor[1x1]) = m.f(x) + m.k * 10 + f(x)\n"
                             "let k2 = m.k * 3\n")
    prog = write(tmp_path, "p.mg", "import m\nimport m2\n"
                                   "def f(x: tensor[1x1]) = x - 1000\n"
                                   "print m.k\nprint m.f([[3]])\nprint m2.g([[3]])\n"
                                   "print m2.k2\nprint f([[3]])\nprint m2.f([[3]])\n")
    # m.f(3) = 6; m2.g(3) = 6 + 20 + 103
    assert values(prog) == [2, 6, 129, 6, -997, 103]


def test_a_modules_defs_work_on_any_shape_and_its_lets_keep_their_shapes(tmp_path):
    write(tmp_path, "lin.mg", "let w = [[1, 2], [3, 4], [5, 6]]\n"
                              "def apply(x: tensor[N, 3]) = x @ w\n")
    prog = write(tmp_path, "p.mg", "import lin\nprint lin.apply([[1, 0, 0]])\n"
                                   "print lin.apply([[0, 1, 0], [0, 0, 1]])\nprint lin.w\n")
    a, b, w = goat.run_file(prog)
    w_ref = np.array([[1.0, 2], [3, 4], [5, 6]])
    assert np.array_equal(a, w_ref[:1]) and np.array_equal(b, w_ref[1:])
    assert np.array_equal(w, w_ref)
    p = goat.check_file(prog)
    assert "w" not in p.lets and "apply" not in p.defs     # module names stay qualified


def test_a_diamond_is_checked_once(tmp_path, monkeypatch):
    write(tmp_path, "d.mg", "let v = [[5]]\ndef dd(x: tensor[1x1]) = x * v\n")
    write(tmp_path, "b.mg", "import d\ndef bb(x: tensor[1x1]) = d.dd(x) + 1\n")
    write(tmp_path, "c.mg", "import d\ndef cc(x: tensor[1x1]) = d.dd(x) + 2\n")
    prog = write(tmp_path, "p.mg", "import b\nimport c\nimport d\n"
                                   "print b.bb([[1]]) + c.cc([[1]]) + d.v\n")
    import goat.api
    reads = []
    real_read = goat.api.read_source

    def counting(path):
        reads.append(os.path.basename(path))
        return real_read(path)

    monkeypatch.setattr(goat.api, "read_source", counting)
    p = goat.check_file(prog)
    assert sorted(reads) == ["b.mg", "c.mg", "d.mg", "p.mg"]
    assert p.templates == 3            # dd, bb, cc: each def checked once
    assert values(prog) == [5 + 1 + 5 + 2 + 5]


def test_the_stdlib_imported_by_two_modules_is_checked_once(tmp_path):
    write(tmp_path, "x.mg", "import nn\ndef fx(m: tensor[N, C]) = nn.softmax_rows(m)\n")
    write(tmp_path, "y.mg", "import nn\ndef fy(m: tensor[N, C]) = nn.softmax_rows(m) * 2\n")
    prog = write(tmp_path, "p.mg", "import x\nimport y\nimport nn\n"
                                   "print x.fx([[0, 0]]) + y.fy([[0, 0]])"
                                   " + nn.softmax_rows([[0, 0]])\n")
    with open(os.path.join(ROOT, "stdlib", "nn.mg")) as f:
        nn_defs = sum(line.startswith("def ") for line in f)
    assert goat.check_file(prog).templates == nn_defs + 2
    [got] = goat.run_file(prog)
    assert got.tolist() == [[2, 2]]


def test_check_with_imports_prints_nothing(tmp_path):
    write(tmp_path, "m.mg", "let k = [[2]]\n")
    prog = write(tmp_path, "p.mg", "import m\nimport nn\nlet a = nn.softmax_rows(m.k)\nprint a\n")
    assert cli("check", prog) == (0, "", "")
    status, out, err = cli("check", "--shapes", prog)
    assert (status, err) == (0, "")
    assert out.splitlines() == ["import m", "import nn", "a : tensor[1x1]"]


def test_a_module_may_hold_defs_with_blocks_and_annotated_lets(tmp_path):
    write(tmp_path, "br.mg", "def acc(x: tensor[1x1]) {\n  var s = x\n  for i in 0..3 {\n"
                             "    s = s + x\n  }\n  return s\n}\n"
                             "let k: tensor[1x1] = acc([[2]])\n")
    prog = write(tmp_path, "p.mg", "import br\nprint br.acc([[1]])\nprint br.k\n")
    assert values(prog) == [4, 8]


def test_a_module_may_hold_a_tuple_let(tmp_path):
    write(tmp_path, "tup.mg", "def two(x: tensor[1x1]) {\n  return (x, x * 2)\n}\n"
                              "let a, b = two([[3]])\n")
    prog = write(tmp_path, "p.mg", "import tup\nprint tup.a\nprint tup.b\n")
    assert values(prog) == [3, 6]


def test_the_repl_imports_from_the_current_folder(tmp_path, monkeypatch):
    from goat.repl.session import Session
    write(tmp_path, "loc.mg", "let who = [[9]]\n")
    monkeypatch.chdir(tmp_path)
    session = Session()
    session.run("import loc")
    session.run("import nn")
    [r] = session.run("nn.softmax_rows(loc.who * [[1, 1]])")
    assert r.value.tolist() == [[0.5, 0.5]]


def test_a_module_sees_only_its_own_names(tmp_path):
    write(tmp_path, "iso.mg", "def f(x: tensor[1x1]) = x * k\n")
    write(tmp_path, "p.mg", "let k = [[2]]\nimport iso\nprint iso.f([[1]])\n")
    assert fails(tmp_path, "p.mg") == [
        "iso.mg:1: error: unknown name 'k'",
        "1 | def f(x: tensor[1x1]) = x * k",
        "  |                             ^",
        "note: in module iso, imported on line 2 of p.mg"]


def test_a_modules_file_names_are_relative_to_the_module(tmp_path, monkeypatch):
    for folder, value in [("gp", [[1.0, 2]]), ("prog", [[3.0, 4]])]:
        os.makedirs(tmp_path / folder)
        np.save(tmp_path / folder / "w.npy", np.array(value))
    write(tmp_path / "gp", "lib.mg", 'let w: tensor[1x2] = load("w.npy")\n')
    prog = write(tmp_path / "prog", "p.mg", 'import lib\nlet v: tensor[1x2] = load("w.npy")\n'
                                            'print lib.w\nprint v\n')
    monkeypatch.setenv("GOAT_PATH", str(tmp_path / "gp"))
    a, b = goat.run_file(prog)
    assert a.tolist() == [[1, 2]] and b.tolist() == [[3, 4]]


def test_a_run_time_error_inside_a_modules_def(tmp_path):
    write(tmp_path, "rt.mg", "# helper\ndef f(x: tensor[2x?]) = x @ [[1], [2], [3]]\n")
    np.save(tmp_path / "x.npy", np.array([[1.0, 2], [3, 4]]))
    write(tmp_path, "p.mg", "print [[1]]\nimport rt\nlet x: tensor[2x?] = load(\"x.npy\")\n"
                            "print rt.f(x)\n")
    status, out, err = cli("run", "p.mg", cwd=str(tmp_path))
    assert status == 1 and out == MEMREF % (1, 1, 1) + "[[1]]\n"    # checked when it runs
    assert err.splitlines()[0] == ("rt.mg:2: error: cannot matrix-multiply shapes 2x2 and 3x1: "
                                   "the inner dimensions 2 and 3 differ")


def test_a_run_time_error_inside_a_modules_def_names_it_qualified(tmp_path):
    write(tmp_path, "rt.mg", "# helper\ndef f(x: tensor[2x?]) = x @ [[1], [2], [3]]\n")
    write(tmp_path, "p.mg", "def f(x: tensor[1x1]) = x\nimport rt\nprint rt.f([[1, 2], [3, 4]])\n")
    status, out, err = cli("run", "p.mg", cwd=str(tmp_path))
    assert status == 1
    assert err.splitlines()[-1] == "note: in rt.f, called at p.mg:3"


def test_a_wrong_call_of_a_modules_def_names_it_qualified(tmp_path):
    write(tmp_path, "p.mg", "import nn\n"
                            "def layer_norm(h: tensor[N, C], g: tensor[1, C], "
                            "t: tensor[1, C]) = h\n"
                            "let h = [[1, 2, 3]]\nprint layer_norm(h, [[1, 1, 1]], [[0, 0, 0]])\n"
                            "print nn.layer_norm(h, [[1, 1]], [[0, 0, 0]])\n")
    err = fails(tmp_path, "p.mg")
    assert err[0] == ("p.mg:5: error: size variable C is 3 for argument h of nn.layer_norm but 2 "
                      "for argument g of nn.layer_norm")


# ---------------------------------------------------------------------------- errors
def test_missing_module_names_where_it_looked(tmp_path, monkeypatch):
    write(tmp_path, "p.mg", "print [[1]]\nimport nope\n")
    assert fails(tmp_path, "p.mg") == [
        "p.mg:2: error: cannot find module 'nope': there is no nope.mg in the folder of p.mg or "
        "the standard library (GOAT_PATH adds folders)",
        "2 | import nope",
        "  | ^~~~~~~~~~~"]
    one, two = str(tmp_path / "one"), str(tmp_path / "two")
    monkeypatch.setenv("GOAT_PATH", os.pathsep.join([one, two]))
    assert fails(tmp_path, "p.mg")[0] == (
        "p.mg:2: error: cannot find module 'nope': there is no nope.mg in the folder of p.mg, "
        "%s, %s or the standard library (GOAT_PATH adds folders)" % (one, two))


def test_missing_module_imported_by_a_module_names_the_modules_folder(tmp_path, monkeypatch):
    lib = write(tmp_path / "gp", "lib.mg", "let a = [[1]]\nimport nope\n")
    write(tmp_path / "prog", "p.mg", "print [[1]]\nimport lib\n")
    monkeypatch.setenv("GOAT_PATH", str(tmp_path / "gp"))
    err = fails(tmp_path / "prog", "p.mg")
    assert err[0].startswith(lib + ":2: error: cannot find module 'nope': there is no nope.mg in ")
    assert err[-1] == "note: in module lib, imported on line 2 of p.mg"
    assert "program's folder" not in err[0]      # it is lib.mg's folder that was searched
    assert str(tmp_path / "gp") in err[0] or "lib.mg" in err[0].split("error:")[1]


def test_missing_module_from_standard_input_names_the_current_folder(tmp_path, monkeypatch):
    err = fails(tmp_path, "-", stdin=b"import nope\n")
    assert err[0].startswith("<stdin>:1: error: cannot find module 'nope': there is no nope.mg in ")
    assert "program's folder" not in err[0] and "current folder" in err[0]
    # the REPL likewise
    from goat.repl.session import Session
    monkeypatch.chdir(tmp_path)
    with pytest.raises(goat.GoatError) as info:
        Session().run("import nope")
    message = str(info.value).splitlines()[0]
    assert "program's folder" not in message and "current folder" in message


def test_missing_name_suggests_the_close_one(tmp_path):
    write(tmp_path, "p.mg", "print [[1]]\nimport nn\nprint nn.softmax_row([[1]])\n")
    assert fails(tmp_path, "p.mg") == [
        "p.mg:3: error: module nn has no def or let named 'softmax_row'; did you mean "
        "'softmax_rows'?",
        "3 | print nn.softmax_row([[1]])",
        "  |       ^~~~~~~~~~~~~~"]
    write(tmp_path, "q.mg", "import nn\nprint nn.zz\n")
    assert fails(tmp_path, "q.mg")[0] == "q.mg:2: error: module nn has no def or let named 'zz'"


def test_a_modules_imports_are_not_its_names(tmp_path):
    write(tmp_path, "helper.mg", "let who = [[1]]\n")
    write(tmp_path, "lib.mg", "import helper\nlet w = helper.who\n")
    write(tmp_path, "p.mg", "import lib\nprint lib.helper\n")
    assert fails(tmp_path, "p.mg")[0] == (
        "p.mg:2: error: module lib has no def or let named 'helper'")
    write(tmp_path, "q.mg", "import lib\nprint helper.who\n")
    assert fails(tmp_path, "q.mg")[0] == (
        "q.mg:2: error: unknown module 'helper'; import it first with import helper")
    write(tmp_path, "r.mg", "import lib\nprint lib.helper.who\n")
    assert fails(tmp_path, "r.mg")[0] == (
        "r.mg:2: error: 'lib.helper.who': a module's name is followed by one name")


def test_a_modules_error_is_reported_once_however_many_imports_reach_it(tmp_path):
    # as a C compiler reports a header's error once: the first import to reach it names it
    write(tmp_path, "bad.mg", "def f(x: tensor[1x2]) = x @ x\nlet k = [[1]] + [[1, 2, 3]] @ [[1]]\n")
    write(tmp_path, "mid.mg", "import bad\ndef g(x: tensor[1x2]) = x\n")
    write(tmp_path, "other.mg", "import bad\nlet h = [[1]] @ [[1, 2]] @ [[1]]\n")
    first = ["bad.mg:1: error: cannot matrix-multiply shapes 1x2 and 1x2: the inner dimensions "
             "2 and 1 differ",
             "1 | def f(x: tensor[1x2]) = x @ x",
             "  |                         ^~~~~"]
    second = "bad.mg:2: error: cannot matrix-multiply shapes 1x3 and 1x1: the inner dimensions 3 and 1 differ"
    write(tmp_path, "p.mg", "import bad\nimport mid\nprint [[1]]\n")
    err = fails(tmp_path, "p.mg")
    assert err[:3] == first and err[3] == "note: in module bad, imported on line 1 of p.mg"
    assert err.count(first[0]) == 1 and err.count(second) == 1
    assert err[-1] == "goat: 2 errors"
    # reached through two modules first; a module's own other errors are each kept
    write(tmp_path, "q.mg", "import mid\nimport other\nimport bad\n")
    err = fails(tmp_path, "q.mg")
    assert err.count(first[0]) == 1 and err.count(second) == 1
    assert err[3:5] == ["note: in module bad, imported on line 1 of mid.mg",
                        "note: in module mid, imported on line 1 of q.mg"]
    assert sum(line.startswith("other.mg:2: error: ") for line in err) == 1
    assert err[-1] == "goat: 3 errors"


def test_import_cycle_between_modules(tmp_path):
    write(tmp_path, "b.mg", "import c\nlet z = [[1]]\n")
    write(tmp_path, "c.mg", "let y = [[1]]\nimport b\n")
    write(tmp_path, "p.mg", "print [[1]]\nimport b\n")
    assert fails(tmp_path, "p.mg") == [
        "c.mg:2: error: import cycle: b.mg imports c.mg imports b.mg",
        "2 | import b",
        "  |        ^",
        "note: in module c, imported on line 1 of b.mg",
        "note: in module b, imported on line 2 of p.mg"]


def test_a_program_importing_itself(tmp_path):
    write(tmp_path, "p.mg", "import p\nprint [[1]]\n")
    assert fails(tmp_path, "p.mg")[0] == "p.mg:1: error: import cycle: p.mg imports p.mg"


@pytest.mark.parametrize("a_text", ["import b\nprint [[1]]\n",      # blamed on a.mg, chain b-a-b
                                    "print [[1]]\nimport b\n",      # 'a module may hold only...'
                                    ])
def test_import_cycle_through_the_program(tmp_path, a_text):
    write(tmp_path, "a.mg", a_text)
    write(tmp_path, "b.mg", "let z = [[1]]\nimport a\n")
    line = a_text.splitlines().index("import b") + 1
    assert fails(tmp_path, "a.mg") == [
        "b.mg:2: error: import cycle: a.mg imports b.mg imports a.mg",
        "2 | import a",
        "  |        ^",
        "note: in module b, imported on line %d of a.mg" % line]


def test_a_program_importing_itself_after_a_print(tmp_path):
    write(tmp_path, "p.mg", "print [[1]]\nimport p\n")
    assert fails(tmp_path, "p.mg")[0] == "p.mg:2: error: import cycle: p.mg imports p.mg"


def test_an_error_inside_a_module_is_reported_at_its_own_line(tmp_path):
    write(tmp_path, "bad.mg", "# a module\nlet q = [[1]]\nlet w = q + [[1, 2, 3]] + [[1, 2]]\n")
    write(tmp_path, "p.mg", "print [[1]]\nimport bad\nprint bad.q\n")
    assert fails(tmp_path, "p.mg") == [
        "bad.mg:3: error: cannot add shapes 1x3 and 1x2: dimensions 3 and 2 differ and neither "
        "is 1",
        "3 | let w = q + [[1, 2, 3]] + [[1, 2]]",
        "  |         ^" + "~" * (len("q + [[1, 2, 3]] + [[1, 2]]") - 1),
        "note: in module bad, imported on line 2 of p.mg"]
    # two levels down: a note per import
    write(tmp_path, "mid.mg", "let a = [[1]]\nimport bad\n")
    write(tmp_path, "p2.mg", "import mid\n")
    err = fails(tmp_path, "p2.mg")
    assert err[0].startswith("bad.mg:3: error: cannot add shapes 1x3 and 1x2")
    assert err[3:] == ["note: in module bad, imported on line 2 of mid.mg",
                       "note: in module mid, imported on line 1 of p2.mg"]


def test_every_independent_error_in_a_module_is_reported_where_it_is_imported(tmp_path):
    """An imported module had stopped at its first error, where the program itself reports
    each; now the module's errors come in its own order, at the place of the import among
    the program's, each with the import's note, and a use of the module is skipped."""
    write(tmp_path, "m.mg", "def f(x: tensor[2x2]) = x + [[1, 2, 3]]\n"
                            "let c = [[1, 2]] @ [[1, 2]]\n"
                            "def g(x: tensor[2x2]) = x * 2\n"
                            "let d = c * 2\n"              # uses c: skipped
                            "def h(x: tensor[2x2]) = nope(x)\n")
    write(tmp_path, "p.mg", "let a = [[1]] + [[1, 2, 3]] + [[1, 2]]\nimport m\n"
                            "print m.g([[1, 2], [3, 4]])\nprint unknown\n")
    err = fails(tmp_path, "p.mg")
    heads = [l for l in err if ": error:" in l]
    assert [h.split(": error:")[0] for h in heads] == ["p.mg:1", "m.mg:1", "m.mg:2", "m.mg:5",
                                                        "p.mg:4"]
    assert err.count("note: in module m, imported on line 2 of p.mg") == 3
    assert err[-1] == "goat: 5 errors"
    # syntax errors in a module: each one
    write(tmp_path, "s.mg", "def f(x: tensor[2x2]) = x +\nlet c = [[1, 2]] @\nlet ok = [[1]]\n")
    write(tmp_path, "q.mg", "import s\nprint 1 +\n")
    heads = [l.split(": error:")[0] for l in fails(tmp_path, "q.mg") if ": error:" in l]
    assert heads == ["s.mg:1", "s.mg:2", "q.mg:2"]
    # a syntax error does not hide the module's other errors (it had: the statements that
    # could be read were not checked), and they come in the module's order, as a program's
    write(tmp_path, "t.mg", "let c = [[1, 2]] @ [[1, 2]]\nlet s = 1 +\nlet d = c * 2\n"
                            "def h(x: tensor[2]) -> tensor[3] {\n    let q = nope\n"
                            "    return x\n}\n")
    write(tmp_path, "r.mg", "import t\n")
    heads = [l.split(": error:")[0] for l in fails(tmp_path, "r.mg") if ": error:" in l]
    assert heads == ["t.mg:1", "t.mg:2", "t.mg:4", "t.mg:5"]


@pytest.mark.parametrize("aot", [False, True])
def test_a_run_time_error_in_a_modules_let_names_the_import(tmp_path, aot):
    """A let of a module fails only when it runs (a ? size); the error names each import
    on the way to it, innermost first, as a static error in a module does."""
    if aot:
        pytest.importorskip("llvmlite")
    write(tmp_path, "bad.mg", "def g(x: tensor[?x2]) = x + [[1, 2], [3, 4]]\n"
                              "let q = g([[1, 2], [1, 2], [1, 2]])\n")
    write(tmp_path, "mid.mg", "# between\nimport bad\n")
    write(tmp_path, "p.mg", "print [[7]]\nimport mid\n")
    status, out, err = cli("run", *(["--aot"] if aot else []), "p.mg", cwd=str(tmp_path))
    assert status == 1 and out == MEMREF % (1, 1, 1) + "[[7]]\n"
    assert err.splitlines()[0] == ("bad.mg:1: error: cannot add shapes 3x2 and 2x2: "
                                   "dimensions 3 and 2 differ and neither is 1")
    assert err.splitlines()[3:] == ["note: in g, called on line 2",
                                    "note: in module bad, imported on line 2 of mid.mg",
                                    "note: in module mid, imported on line 2 of p.mg"]


def test_a_syntax_error_or_bad_bytes_inside_a_module(tmp_path):
    write(tmp_path, "syn.mg", "let a = [[1]]\nlet x = [[1]\n")
    write(tmp_path, "p.mg", "print [[1]]\nimport syn\n")
    err = fails(tmp_path, "p.mg")
    assert err[0] == "syn.mg:2: error: '[' is never closed"
    assert err[-1] == "note: in module syn, imported on line 2 of p.mg"
    with open(tmp_path / "nu.mg", "wb") as f:
        f.write(b"let a = [[1]]\nlet b = \xff\n")
    write(tmp_path, "q.mg", "import nu\n")
    err = fails(tmp_path, "q.mg")
    assert err[0] == "nu.mg:2: error: the file is not UTF-8 text (byte 0xff cannot be decoded)"
    assert err[-1] == "note: in module nu, imported on line 1 of q.mg"


@pytest.mark.parametrize("stmt", ["print [[1]]", "for i in 0..2 { let b = i }", "var v = [[1]]",
                                  "if 1 { let b = 2 }", 'print "hello"',
                                  'save([[1]], "x.npy")'])
def test_a_module_holds_only_defs_lets_and_imports(tmp_path, stmt):
    write(tmp_path, "m.mg", "let a = [[1]]\n%s\n" % stmt)
    write(tmp_path, "p.mg", "print [[1]]\nimport m\n")
    err = fails(tmp_path, "p.mg")
    assert err[0] == ("m.mg:2: error: a module may hold only def, let, params and import "
                      "statements; this belongs in a program")
    assert err[1] == "2 | " + stmt
    assert err[-1] == "note: in module m, imported on line 2 of p.mg"
    assert not os.path.exists(tmp_path / "x.npy")


@pytest.mark.parametrize("src, line", [
    ("for i in 0..2 {\n  import nn\n}\n", 3),
    ("if 1 {\n  import nn\n}\n", 3),
    ("def f(x: tensor[1x1]) {\n  import nn\n  return x\n}\n", 3),
])
def test_import_inside_a_block(tmp_path, src, line):
    write(tmp_path, "p.mg", "print [[1]]\n" + src)
    assert fails(tmp_path, "p.mg")[0] == (
        "p.mg:%d: error: import must be at the top level of the program" % line)


@pytest.mark.parametrize("use, message, caret", [
    ("print nn([[1]])",
     "'nn' is a module, not a function; call its defs as nn.NAME(...)", "      ^~"),
    ("print nn", "nn is a module; use its names as nn.NAME", "      ^~"),
    ("print nn.softmax_rows", "nn.softmax_rows is a function; call it as nn.softmax_rows(...)",
     "      ^~~~~~~~~~~~~~~"),
    ("print nn.layer_norm([[1]])", "nn.layer_norm takes 3 arguments, got 1",
     "      ^~~~~~~~~~~~~~~~~~~~"),
])
def test_using_a_module_wrongly(tmp_path, use, message, caret):
    write(tmp_path, "p.mg", "print [[1]]\nimport nn\n" + use + "\n")
    err = fails(tmp_path, "p.mg")
    assert err[:3] == ["p.mg:3: error: " + message, "3 | " + use, "  | " + caret]
    assert err[3:] == (["note: nn.layer_norm(h: tensor[..., N, C], g: tensor[1, C], "
                        "t: tensor[1, C])"] if "arguments" in message else [])


def test_an_unimported_module(tmp_path):
    write(tmp_path, "p.mg", "print [[1]]\nprint nn.softmax_rows([[1]])\n")
    assert fails(tmp_path, "p.mg")[0] == (
        "p.mg:2: error: unknown module 'nn'; import it first with import nn")
    write(tmp_path, "q.mg", "let q = [[1]]\nprint q.softmax_rows([[1]])\n")
    assert fails(tmp_path, "q.mg")[0] == (
        "q.mg:2: error: 'q' is not a module, so 'q.softmax_rows' means nothing")


@pytest.mark.parametrize("src, line, col", [
    ("import nn\nlet nn = 1\n", 2, 4),
    ("let nn = 1\nimport nn\n", 2, 7),
    ("import nn\nimport nn\n", 2, 7),
    ("import nn\ndef nn(x: tensor[1x1]) = x\n", 2, 4),
])
def test_a_name_defined_twice(tmp_path, src, line, col):
    write(tmp_path, "p.mg", "print [[1]]\n" + src)
    err = fails(tmp_path, "p.mg")
    assert err[0] == ("p.mg:%d: error: 'nn' is already defined on line %d; a name can be defined "
                      "only once in a file" % (line + 1, line))
    assert err[2] == "  | " + " " * col + "^~"


def test_errors_through_the_api_name_the_module_file(tmp_path):
    bad = write(tmp_path, "bad.mg", "let w = [[1, 2]] @ [[1, 2]]\n")
    prog = write(tmp_path, "p.mg", "import bad\n")
    with pytest.raises(goat.GoatError) as info:
        goat.run_file(prog)
    assert str(info.value).splitlines()[0] == (
        "%s:1: error: cannot matrix-multiply shapes 1x2 and 1x2: the inner dimensions 2 and 1 "
        "differ" % bad)


# ---------------------------------------------------------------------------- the wheel
def _deps_dirs():
    """The folders holding goat's dependencies in this interpreter (not goat itself)."""
    import lark
    import prompt_toolkit
    import pygments
    import threadpoolctl
    import wcwidth      # prompt_toolkit's own dependency
    dirs = []
    for mod in (np, lark, prompt_toolkit, pygments, threadpoolctl, wcwidth):
        d = os.path.dirname(os.path.dirname(os.path.abspath(mod.__file__)))
        if d not in dirs:
            dirs.append(d)
    for d in dirs:
        # (a goat installed there, as in CI, comes after the new venv's own on sys.path: the
        # test checks below that the new venv's goat is the one imported)
        assert os.path.realpath(d) != os.path.realpath(ROOT)
    return dirs


def test_the_wheel_installs_the_stdlib_and_runs_import_nn(tmp_path):
    ignore = shutil.ignore_patterns(".git", "build", "dist", "*.egg-info", "__pycache__",
                                    ".hypothesis", ".pytest_cache", ".venv", "*.pyc")
    src = tmp_path / "src"
    shutil.copytree(ROOT, src, ignore=ignore)
    dist = tmp_path / "dist"
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "GOAT_PATH", "PYTHONHOME", "VIRTUAL_ENV")}
    env["PYTHONNOUSERSITE"] = "1"

    def sh(*cmd, cwd=tmp_path):
        p = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, cwd=str(cwd),
                           env=env, timeout=300)
        assert p.returncode == 0, (cmd, p.stdout, p.stderr)
        return p.stdout

    # as `pip install .` builds it (an isolated build environment with setuptools from the
    # package index); where no index can be reached, with the setuptools and wheel at hand
    build = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-w", str(dist),
                            str(src)], capture_output=True, text=True, env=env, timeout=300)
    if build.returncode != 0:
        sh(sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
           "--no-index", "-w", dist, src)
    [whl] = [f for f in os.listdir(dist) if f.endswith(".whl")]
    names = set(zipfile.ZipFile(dist / whl).namelist())

    # every file of the source tree that goat needs is in the wheel
    assert {"goat/stdlib/nn.mg", "goat/lexer/grammar.lark", "goat/__main__.py"} <= names
    wanted = set()
    for folder, subdirs, files in os.walk(os.path.join(ROOT, "goat")):
        subdirs[:] = [d for d in subdirs if d != "__pycache__"]
        rel = os.path.relpath(folder, ROOT).replace(os.sep, "/")
        wanted |= {rel + "/" + f for f in files if f.endswith((".py", ".lark"))}
    for f in os.listdir(os.path.join(ROOT, "stdlib")):
        if f.endswith((".py", ".mg")):
            wanted.add("goat/stdlib/" + f)
    subpackages = {w.rsplit("/", 1)[0] for w in wanted}
    assert {"goat", "goat/interp", "goat/lexer", "goat/ops", "goat/repl", "goat/typecheck",
            "goat/gpu", "goat/stdlib"} <= subpackages
    assert wanted - names == set()
    with open(os.path.join(ROOT, "stdlib", "nn.mg"), "rb") as f:
        assert zipfile.ZipFile(dist / whl).read("goat/stdlib/nn.mg") == f.read()

    # a fresh venv, the wheel installed into it (not editable), the dependencies borrowed
    venv = tmp_path / "venv"
    sh(sys.executable, "-m", "venv", "--without-pip", venv)
    py = venv / "bin" / "python"
    sh(sys.executable, "-m", "pip", "--python", py, "install", "--no-deps", "--no-index",
       dist / whl)
    site = sh(py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])").strip()
    assert os.path.realpath(site).startswith(os.path.realpath(venv))
    with open(os.path.join(site, "borrowed_deps.pth"), "w") as f:
        f.write("\n".join(_deps_dirs()) + "\n")

    run_dir = tmp_path / "run"
    run_dir.mkdir()
    out = sh(py, "-c", "import goat, sys\n"
                       "from goat.typecheck import modules\n"
                       "from goat.diagnostics import Loc, Source\n"
                       "print(goat.__file__)\n"
                       "print(modules.stdlib_dir())\n"
                       "print(modules.find('nn', Loc(Source('prog.mg', ''), 0, 0)))\n"
                       "print(any('__editable__' in m for m in sys.modules))\n", cwd=run_dir)
    goat_file, stdlib, nn_file, editable = out.splitlines()
    real_venv = os.path.realpath(venv)
    for p in (goat_file, stdlib, nn_file):
        assert os.path.realpath(p).startswith(real_venv + os.sep), p
        assert not os.path.realpath(p).startswith(os.path.realpath(ROOT) + os.sep), p
    assert os.path.basename(nn_file) == "nn.mg" and editable == "False"

    write(run_dir, "prog.mg", "import nn\nprint nn.softmax_rows([[1, 2, 3], [0, 0, 0]])\n"
                              "print nn.causal_mask([[1, 2], [3, 4]])\n")
    goat_exe = venv / "bin" / "goat"
    out = sh(goat_exe, "run", "prog.mg", cwd=run_dir)
    e = np.exp([1.0, 2, 3])
    row = e / e.sum()
    assert out == (MEMREF % (2, 3, 3)
                   + "[[%g,   %g,   %g], \n [%g,   %g,   %g]]\n" % (*row, *[1 / 3] * 3)
                   + MEMREF % (2, 2, 2) + "[[0,   -1e+09], \n [0,   0]]\n")
    # and the installed command line reports errors inside the installed stdlib's callers
    write(run_dir, "bad.mg", "import nn\nprint nn.layer_norm([[1, 2]], [[1]], [[1, 2, 3]])\n")
    p = subprocess.run([str(goat_exe), "run", "bad.mg"], capture_output=True, text=True,
                       cwd=str(run_dir), env=env, timeout=120)
    assert (p.returncode, p.stdout) == (1, "")
    assert p.stderr.startswith("bad.mg:2: error: size variable C ")


@pytest.mark.parametrize("aot", [False, True])
def test_a_run_time_error_inside_the_standard_library_is_reported_at_the_users_call(tmp_path,
                                                                                    aot):
    """A target out of range fails in nn.cross_entropy's onehot: the error is at the user's
    call (the library's path depends on the installation, and the user wrote no onehot), with
    a note naming the library def and its line, then the user's own calls."""
    if aot:
        pytest.importorskip("llvmlite")
    with open(os.path.join(modules_stdlib(), "nn.mg")) as f:
        line = next(k for k, text in enumerate(f, 1) if text.startswith("def cross_entropy("))
    # targets computed when it runs (a var): found then, after the output before it
    write(tmp_path, "p.mg", "import nn\n"
                            "def loss(z: tensor[N, 2], t: tensor[N, 1]) = nn.cross_entropy(z, t)\n"
                            "var t = [[0], [1]]\nt += [[0], [1]]\n"
                            "print [[7]]\nprint loss([[1, 2], [3, 4]], t)\n")
    status, out, err = cli("run", *(["--aot"] if aot else []), "p.mg", cwd=str(tmp_path))
    assert status == 1 and out == MEMREF % (1, 1, 1) + "[[7]]\n"
    lines = err.splitlines()
    assert lines[0] == ("p.mg:2: error: onehot's indices must be whole numbers from 0 to 1, got "
                        "2 at position 1")
    assert lines[2] == "  | " + " " * 45 + "^" + "~" * (len("nn.cross_entropy(z, t)") - 1)
    assert lines[3:] == ["note: in nn.cross_entropy, at line %d of the standard library's nn.mg"
                         % line, "note: in loss, called on line 6"]
    # targets written in the program: the same error, found before anything runs
    write(tmp_path, "p.mg", "import nn\n"
                            "def loss(z: tensor[N, 2], t: tensor[N, 1]) = nn.cross_entropy(z, t)\n"
                            "print [[7]]\nprint loss([[1, 2], [3, 4]], [[0], [2]])\n")
    status, out, err = cli("run", *(["--aot"] if aot else []), "p.mg", cwd=str(tmp_path))
    assert (status, out) == (1, "")
    lines = err.splitlines()
    assert lines[0] == ("p.mg:2: error: onehot's indices must be whole numbers from 0 to 1, got "
                        "2 at position 1")
    assert lines[3:] == ["note: in nn.cross_entropy, at line %d of the standard library's nn.mg"
                         % line, "note: in loss, called on line 4"]


def modules_stdlib():
    from goat.typecheck.modules import stdlib_dir
    return stdlib_dir()


def test_a_modules_def_called_without_its_prefix_says_which_module(tmp_path):
    """Found by a REPL newcomer: double(d) after import helpers was 'unknown function'."""
    (tmp_path / "helpers.mg").write_text("def double(x: tensor[N, C]) = x * 2\n")
    (tmp_path / "p.mg").write_text("import helpers\nprint double([[1]])\n")
    with pytest.raises(goat.GoatError) as info:
        goat.run_file(str(tmp_path / "p.mg"))
    assert info.value.message == ("unknown function 'double'; the module helpers defines it: "
                                  "write helpers.double(...)")


def test_a_modules_let_holding_a_size_sizes_a_type(tmp_path):
    """A newcomer's: tensor[2, m.T] (a model's sizes kept in its module) as tensor[2, T] is
    with a let of the program's own -- in a def's parameter too, and as a count."""
    write(tmp_path, "cfg.mg", "let T = 4\nlet D = 3\nlet x = [1, 2]\n")
    write(tmp_path, "p.mg", "import cfg\nprint zeros(tensor[2, cfg.T])\n"
                            "def f(a: tensor[N, cfg.D]) = row_sum(a)\n"
                            "print f(ones(tensor[2, cfg.D]))\n"
                            "let y: tensor[cfg.T] = iota(tensor[cfg.T], 0)\nprint y\n"
                            "print onehot([[1]], cfg.D)\n")
    z, f, y, hot = goat.run_file(str(tmp_path / "p.mg"), stdout=io.StringIO())
    assert z.shape == (2, 4) and f.tolist() == [[3], [3]] and y.tolist() == [0, 1, 2, 3]
    assert hot.tolist() == [[0, 1, 0]]
    write(tmp_path, "n.mg", "import cfg\ndef f(a: tensor[B, cfg.T]) = a\nprint f([[1, 2, 3, 4, 5]])\n")
    err = fails(tmp_path, "n.mg")
    assert err[0] == "n.mg:3: error: argument a of f must have shape Bx4 (B = 1), got 1x5"
    assert err[-1] == "note: cfg.T in f's types is 4, the let cfg.T on line 1 of cfg.mg"
    write(tmp_path, "q.mg", "import cfg\nprint zeros(tensor[cfg.x])\n")
    err = fails(tmp_path, "q.mg")
    assert err[0] == ("q.mg:2: error: cfg.x is not a size: a module's let named in a type "
                      "holds one whole number (let D = 32 in the module)")


def test_a_failed_import_is_one_error_and_its_names_in_types_none(tmp_path):
    """A breaker's: after an import that fails, tensor[cfgv.T] (and p: cfgv.theta) added
    'unknown module' errors of their own; the names a failed statement would define are
    silent, in types as in values."""
    write(tmp_path, "p.mg", "import cfgv\nprint cfgv.T\nprint zeros(tensor[2, cfgv.T])\n"
                            "def f(a: tensor[N, cfgv.T]) = a\ndef g(p: cfgv.theta) = p\n")
    err = fails(tmp_path, "p.mg")
    assert err[0].startswith("p.mg:1: error: cannot find module 'cfgv'")
    assert not any("unknown module" in line for line in err), err
