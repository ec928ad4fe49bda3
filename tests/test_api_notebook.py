"""goat from a notebook: what a user sees of an error, a program and a params block's vector.

A newcomer calling goat from Jupyter met a shape error as twenty frames of goat's checker with
no caret, a Program whose repr said nothing, and a saved params vector to take apart by hand."""
import pickle
import sys
import traceback

import numpy as np
import pytest

import goat

BAD = "let a = [[1, 2, 3]]\nlet b = [[1], [2]]\nprint a @ b\n"


def _frames(e):
    return [f.filename for f in traceback.extract_tb(e.__traceback__)]


@pytest.mark.parametrize("call", [
    lambda: goat.run_source(BAD),
    lambda: goat.check_source(BAD),
    lambda: goat.load(BAD),
])
def test_a_program_error_keeps_goats_frames_out_of_the_traceback(call):
    with pytest.raises(goat.GoatError) as info:
        call()
    e = info.value
    assert str(e) == ("<string>:3: error: cannot matrix-multiply shapes 1x3 and 2x1: the "
                      "inner dimensions 3 and 2 differ")
    inner = [f for f in _frames(e) if "typecheck" in f or "interp" in f or "lexer" in f]
    assert inner == []
    assert [f for f in _frames(e) if not f.endswith("test_api_notebook.py")] == [
        goat.api.__file__]              # goat's one line that re-raises


@pytest.mark.skipif(sys.version_info < (3, 11), reason="exception notes are Python 3.11's")
def test_a_program_error_shows_its_line_and_caret_under_the_message():
    with pytest.raises(goat.GoatError) as info:
        goat.run_source(BAD)
    assert info.value.__notes__ == ["3 | print a @ b\n  |       ^~~~~"]
    shown = "".join(traceback.format_exception(info.value))
    assert shown.endswith("goat.GoatError: <string>:3: error: cannot matrix-multiply shapes "
                          "1x3 and 2x1: the inner dimensions 3 and 2 differ\n"
                          "3 | print a @ b\n  |       ^~~~~\n")


@pytest.mark.skipif(sys.version_info < (3, 11), reason="exception notes are Python 3.11's")
def test_several_errors_are_noted_once_each_and_a_run_time_error_keeps_its_printed():
    with pytest.raises(goat.GoatErrors) as info:
        goat.check_source("print q\nprint [[1, 2]] @ [[1, 2]]\n")
    assert len(info.value.__notes__) == 1
    assert info.value.__notes__[0].count("^") == 2
    # the message lists the headlines; the note adds each one's excerpt, not them again
    assert "error:" not in info.value.__notes__[0], info.value.__notes__
    assert info.value.__notes__[0].startswith("1 | print q\n")
    with pytest.raises(goat.GoatError) as info:
        goat.run_source('let x: tensor[?, 2] = load("x.npy")\nprint 1\nprint [[1, 2, 3]] @ x\n',
                        inputs={"x.npy": np.ones((4, 2))})
    assert [float(v) for v in info.value.printed] == [1.0]
    assert info.value.__notes__ == ["3 | print [[1, 2, 3]] @ x\n  |       ^~~~~~~~~~~~~~~"]


def test_errors_are_named_as_imported_and_survive_pickling():
    assert goat.GoatError.__module__ == "goat"
    with pytest.raises(goat.GoatError) as info:
        goat.run_source("print q")
    back = pickle.loads(pickle.dumps(info.value))
    assert type(back) is goat.GoatError
    assert str(back) == "<string>:1: error: unknown name 'q'"
    assert back.line == 1


def test_a_program_says_what_it_defines():
    p = goat.check_source("let a = 1\nvar b = 2\ndef f(x: tensor[N]) = x\n"
                          "params th {\n  w: tensor[2] = zeros(tensor[2])\n}\n", path="m.mg")
    assert repr(p) == "<goat.Program m.mg: lets and vars a, b, th; defs f; params th>"
    assert repr(goat.check_source("")) == "<goat.Program <string>>"
    many = goat.check_source("".join("let v%d = %d\n" % (i, i) for i in range(10)))
    assert repr(many) == ("<goat.Program <string>: lets and vars v0, v1, v2, v3, v4, v5, v6, v7,"
                          " ... (10 in all)>")


PARAMS = """params th {
  w: tensor[2x3] = [[1, 2, 3], [4, 5, 6]]
  b: tensor[1x3] = [[7, 8, 9]]
  s: scalar = 10
}
var t = th
t = t * 2
save(t, "t.npy")
"""


def test_unflatten_takes_a_saved_block_apart_by_member():
    p = goat.check_source(PARAMS)
    out = {}
    goat.execute(p, outputs=out)
    parts = p.unflatten("th", out["t.npy"])
    assert list(parts) == ["w", "b", "s"]
    np.testing.assert_array_equal(parts["w"], [[2, 4, 6], [8, 10, 12]])
    np.testing.assert_array_equal(parts["b"], [[14, 16, 18]])
    assert parts["s"].shape == () and float(parts["s"]) == 20.0
    with pytest.raises(ValueError, match="params block th has 10 cells, but the vector has 9"):
        p.unflatten("th", np.zeros(9))
    with pytest.raises(KeyError, match="'theta' is not a params block of this program"):
        p.unflatten("theta", np.zeros(10))
    with pytest.raises(TypeError, match="vector must be an array"):
        p.unflatten("th", None)


def test_an_array_given_as_a_let_says_how_arrays_go_in():
    with pytest.raises(TypeError, match=r'inputs=\{"X.npy": array\}, which the program\'s '
                                        r'load\("X.npy"\) reads'):
        goat.run_source("let X = 1", lets={"X": np.zeros(3)})
    got = goat.run_source('let X: tensor[?, 2] = load("X.npy")\nprint col_sum(X)',
                          inputs={"X.npy": np.arange(6.0).reshape(3, 2)})
    np.testing.assert_array_equal(got[0], [[6.0, 9.0]])


def test_run_source_and_run_file_take_progress(tmp_path):
    src = "var s = 0\nfor i in 0..4 { s = s + i }\nprint s\n"
    assert float(goat.run_source(src, progress=True)[0]) == 6.0
    f = tmp_path / "p.mg"
    f.write_text(src)
    assert float(goat.run_file(f, progress=False)[0]) == 6.0
    with pytest.raises(TypeError, match="progress must be True, False, None"):
        goat.run_file(f, progress="yes")
