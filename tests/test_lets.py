"""Numbers given from outside: goat run --let NAME=VALUE, and lets= in the Python API, replace
the number a top-level let (or var) of the program holds, before it is checked."""
import numpy as np
import pytest

import goat
from conftest import cli

PROGRAM = ('let steps = 3\nlet lr = 0.5\nlet lo = -1\nvar decay = 0.9\nvar w = [[1.0, 2.0]]\n'
           'for i in 0..steps {\n    w = w * lr + lo\n    decay = decay * decay\n}\n'
           'print w\nprint decay\nlet twice = lr * 2\nprint twice\n')


def _reference(steps=3, lr=0.5, lo=-1.0, decay=0.9):
    """The program, written in NumPy."""
    w = np.array([[1.0, 2.0]])
    for _ in range(int(steps)):
        w = w * lr + lo
        decay = decay * decay
    return w, decay, lr * 2


@pytest.mark.parametrize("lets", [{}, {"steps": 5}, {"lr": -2, "lo": 0.25},
                                  {"decay": 0.5, "steps": 0}, {"steps": 2.0, "lr": 1e-3}])
def test_the_numbers_given_replace_the_numbers_written(lets):
    got = goat.run_source(PROGRAM, lets=lets)
    w, decay, twice = _reference(**lets)
    assert got[0].tolist() == w.tolist()
    assert got[1].item() == decay and got[2].item() == twice


@pytest.mark.parametrize("flags", [[], ["--aot"]])
def test_goat_run_let_sets_them_and_a_compiled_program_is_cached_per_value(tmp_path, flags):
    (tmp_path / "p.mg").write_text(PROGRAM)
    for steps, lr in [(4, 0.5), (2, 0.5), (2, 3.0), (4, 0.5)]:
        status, out, err = cli("run", *flags, "--let", "steps=%d" % steps, "--let",
                               "lr=%r" % lr, "p.mg", cwd=str(tmp_path))
        assert status == 0, err
        w, decay, twice = _reference(steps=steps, lr=lr)
        want = goat.run_source(PROGRAM.replace("steps = 3", "steps = %d" % steps)
                               .replace("lr = 0.5", "lr = %r" % lr))
        assert out == cli("run", "-", stdin=PROGRAM.replace("steps = 3", "steps = %d" % steps)
                          .replace("lr = 0.5", "lr = %r" % lr).encode())[1]
        assert want[0].tolist() == w.tolist()


def test_check_and_compile_take_let_too(tmp_path):
    pytest.importorskip("llvmlite")
    (tmp_path / "p.mg").write_text(PROGRAM)
    assert cli("check", "--let", "steps=7", "p.mg", cwd=str(tmp_path))[0] == 0
    status, _, err = cli("compile", "--aot", "--let", "steps=1", "p.mg", "-o", "p1",
                         cwd=str(tmp_path))
    assert status == 0, err
    import subprocess
    out = subprocess.run([str(tmp_path / "p1")], capture_output=True, text=True).stdout
    assert out == cli("run", "--let", "steps=1", "p.mg", cwd=str(tmp_path))[1]
    assert "[[-0.5,   0]]" in out


@pytest.mark.parametrize("args, message", [
    (["--let", "stepz=5"], "p.mg: error: cannot set stepz: p.mg has no top-level let or var "
                           "stepz = NUMBER; did you mean steps?\n"),
    (["--let", "twice=5"], "p.mg:12: error: cannot set twice: its value is not a number as "
                           "written (--let and lets= replace a number, as in let twice = 0.01, "
                           "not an expression)\n"),
    (["--let", "w=5"], "p.mg:5: error: cannot set w: its value is not a number as written"),
    (["--let", "lr=1", "--let", "lr=2"], "goat: error: --let lr is given twice, with two "
                                         "values\n"),
    (["--let", "lr=abc"], "goat run: error: argument --let: the value of lr must be a number "
                          "as a program writes one (3e-4, 2000, -0.5), not 'abc'\n"),
    (["--let", "lr"], "goat run: error: argument --let: write NAME=VALUE, as in --let "
                      "lr=3e-4, not 'lr'\n"),
    # a number as a program writes one: these were taken by Python's float()
    (["--let", "lr=1e400"], "goat run: error: argument --let: the value of lr, 1e400, is too "
                            "large for a 64-bit float (the largest is 1.79769e+308)\n"),
] + [(["--let", "lr=" + v], "goat run: error: argument --let: the value of lr must be a number "
                            "as a program writes one (3e-4, 2000, -0.5), not %r\n" % v)
     for v in ("inf", "nan", "1_000", " 5", "0x10", "\u0665", "")] + [
    (["--let", "lr=0", "--let", "lr=-0"], "goat: error: --let lr is given twice, with two "
                                          "values\n"),
])
def test_a_let_that_cannot_be_set_is_an_error_before_anything_runs(tmp_path, args, message):
    (tmp_path / "p.mg").write_text(PROGRAM)
    status, out, err = cli("run", *args, "p.mg", cwd=str(tmp_path))
    assert status in (1, 2) and out == ""
    assert message in err, err


def test_a_let_inside_a_block_or_def_is_not_a_top_level_one():
    text = 'def f(x: scalar) {\n    let k = 2\n    return x * k\n}\nprint f(1)\n'
    with pytest.raises(goat.GoatError) as info:
        goat.run_source(text, lets={"k": 3})
    assert info.value.message == ("cannot set k: <string> has no top-level let or var k = "
                                  "NUMBER")


@pytest.mark.parametrize("lets, error, text", [
    ([("lr", 1)], TypeError, "lets must be a dict of names to numbers"),
    ({1: 2}, TypeError, "lets' keys must be names (str)"),
    ({"a b": 2}, ValueError, "lets' key 'a b' is not a name"),
    ({"lr": "1e-3"}, TypeError, "lets['lr'] must be a number, not str"),
    ({"lr": True}, TypeError, "lets['lr'] must be a number, not bool"),
    ({"lr": 10 ** 400}, ValueError, "lets['lr'] is too large for a 64-bit float"),
    ({"lr": float("nan")}, ValueError, "lets['lr'] must be a finite number"),
    ({"lr": -np.inf}, ValueError, "lets['lr'] must be a finite number"),
])
def test_the_apis_lets_are_checked_before_anything_runs(lets, error, text):
    for call in (lambda: goat.run_source(PROGRAM, lets=lets),
                 lambda: goat.check_source(PROGRAM, lets=lets),
                 lambda: goat.load(PROGRAM, lets=lets)):
        with pytest.raises(error) as info:
            call()
        assert text in str(info.value)
    # a NumPy number is a number
    assert goat.run_source(PROGRAM, lets={"steps": np.int64(1)})[0].tolist() == [[-0.5, 0.0]]


def test_a_let_that_cannot_be_set_is_reported_with_the_programs_own_errors(tmp_path):
    """It had been the only error, and a let whose line had a syntax error was "no such let"."""
    with pytest.raises(goat.GoatErrors) as info:
        goat.run_source("let lr = 0.1 +\nprint lr\nlet k = lr * 2\n"
                        "let q = [[1, 2]] + [[1, 2, 3]]\n",
                        lets={"lr": 0.2, "k": 1, "zz": 3})
    got = [(e.line, e.message.split(";")[0].split(":")[0]) for e in info.value.errors]
    assert got == [(None, "cannot set zz"), (1, "syntax error"), (3, "cannot set k"),
                   (4, "cannot add shapes 1x2 and 1x3")]


def test_a_save_a_let_switches_off_needs_no_folder(tmp_path):
    """A save in an if on a let set to 0, or in a loop of 0 steps, never runs: its missing
    folder is not an error (it was, for a dry run with --let steps=0)."""
    text = ('let save_ckpt = 1\nlet steps = 3\nvar w = [[1.0]]\nfor step in 0..steps {\n'
            '    w = w * 2\n    if save_ckpt {\n        save(w, "ckpt/w_{step}.npy")\n    }\n}\n'
            'print w\n')
    path = str(tmp_path / "t.mg")
    with pytest.raises(goat.GoatError) as info:
        goat.run_source(text, path=path)
    assert info.value.line == 7 and "no such directory" in info.value.message
    assert goat.run_source(text, path=path, lets={"save_ckpt": 0})[0].tolist() == [[8.0]]
    assert goat.run_source(text, path=path, lets={"steps": 0})[0].tolist() == [[1.0]]
    assert not (tmp_path / "ckpt").exists()


def test_a_let_of_an_imported_module_is_not_one_to_set(tmp_path):
    (tmp_path / "m.mg").write_text("let lr = 0.5\n")
    (tmp_path / "p.mg").write_text("import m\nprint m.lr\n")
    with pytest.raises(goat.GoatError) as info:
        goat.run_file(str(tmp_path / "p.mg"), lets={"lr": 1})
    assert info.value.message.endswith("has no top-level let or var lr = NUMBER; lr is a let "
                                       "of the imported module m, which --let and lets= cannot "
                                       "set")
    # a module without it: no such note (it had named every import)
    with pytest.raises(goat.GoatError) as info:
        goat.run_source("import nn\nlet lr = 1\nprint lr\n", lets={"zzz": 1})
    assert info.value.message == ("cannot set zzz: <string> has no top-level let or var zzz = "
                                  "NUMBER (those holding a number: lr)")


def test_a_chain_of_lets_is_folded_once_each(monkeypatch):
    """Found by a fuzzer: each let of a chain of N (x{i} = x{i-1} + 1) folded the whole chain
    again to learn its number: N**2 / 2 folds, 3.5 s for 1000 lets and minutes for 20,000.
    Each node's number is kept on it now (counted here, not timed)."""
    from goat.typecheck import program as prog
    calls = []
    real = prog._foldable
    monkeypatch.setattr(prog, "_foldable", lambda op: calls.append(op) or real(op))
    n = 400
    text = "let x0 = 1\n" + "".join("let x%d = x%d + 1\n" % (i, i - 1) for i in range(1, n))
    got = goat.run_source(text + "print x%d\n" % (n - 1))
    assert float(got[0]) == float(n)
    assert len(calls) < 10 * n
