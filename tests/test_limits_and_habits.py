"""What a newcomer's trial and an attack on loops, state and files found: each fault's whole
kind, held by the right behaviour."""
import io
import os

import numpy as np
import pytest

import goat
from conftest import cli, error, run


# ---- sizes no machine can hold: found before anything runs, never an internal error

@pytest.mark.parametrize("src", [
    "let a = ones(tensor[4000000000x4000000000])",
    "print zeros(tensor[0x9223372036854775807])",
    "let a: tensor[3037000500x3037000500] = randn(1)",
    "print iota(tensor[99999999999999999999x2], 0)",
    "def f(x: tensor[4000000000x4000000000]) = x",
])
def test_a_written_shape_too_large_for_any_machine_is_a_static_error(src):
    e = error("print 1\n" + src)
    assert e.line == 2 and "too large for any machine to address" in e.message


def test_a_large_but_addressable_shape_runs_out_of_memory_with_its_line():
    e = error("print 1\nprint iota(tensor[1000000x1000000], 0)")
    assert e.line == 2 and e.message.startswith("out of memory computing a value of shape")


# ---- a def's declared result holds when a ? size leaves it open

def test_a_declared_result_is_checked_when_the_def_runs():
    e = error("def g(x: tensor[?x2]) -> tensor[3x2] {\n  return x\n}\n"
              "let r = g([[1, 2]])\nprint r + [[10, 20], [30, 40], [50, 60]]")
    assert e.line == 1 and e.notes == ("in g, called on line 4",)
    assert e.message == ("the value g returns (declared tensor[3x2]) must have shape 3x2, "
                         "got 1x2")
    (ok,) = run("def g(x: tensor[?x2]) -> tensor[3x2] {\n  return x\n}\n"
                "print g([[1, 2], [3, 4], [5, 6]])")
    assert ok.tolist() == [[1, 2], [3, 4], [5, 6]]


# ---- blocks nested deeply run (as deeply as they are checked)

@pytest.mark.parametrize("depth", [400, 2000])
def test_deeply_nested_ifs_run(depth):
    src = "var c = 0\n" + "if 1 {\n" * depth + "c = 7\n" + "}\n" * depth + "print c"
    assert run(src)[0].item() == 7.0


def test_a_long_else_if_chain_runs():
    src = ("var c = 0\nif 0 { c = 1 }" + "".join(" else if c == %d { c = 5 }" % k
                                               for k in range(400)) + "\nprint c")
    assert run(src)[0].item() == 5.0          # c == 0 on the first test: the first branch


# ---- loop bounds, files read as programs

def test_a_device_is_not_read_as_a_program(tmp_path):
    status, out, err = cli("run", "/dev/zero")
    assert status == 1 and out == ""
    # a device gives, it does not hold (it had said "holds more than 256 MB")
    assert err == "/dev/zero: error: cannot read /dev/zero: it gave more than 256 MB, which is not a program\n"


# ---- habits from Python and NumPy

@pytest.mark.parametrize("src, says", [
    ("for i in 0..3 {\n  break\n}", "'break' is not a statement; goat has no break"),
    ("for i in 0..3 {\n  continue\n}", "'continue' is not a statement; goat has no continue"),
    ("var c = 0\nwhile c < 3 { c += 1 }", "'while' is not a statement; goat has no while loop"),
    ("if 1 { print 1 } elif 2 { print 2 }", "'elif' is not a statement; write else if"),
    ("let a = 7 // 2", "there is no integer division (//): write (a - a % b) / b"),
    ("let x = [[1]]\nprint x.T", "goat has no methods: write transpose(x)"),
    ("let x = [[1]]\nprint x.shape", "goat has no methods: a value's shape is its type"),
    ("print max([[1, 2]], [[3, 4]])", "max takes 1 argument, got 2; max(x) is the largest "
                                      "cell; maximum(a, b) elementwise"),
    ("print softmax([[1, 2]])", "write nn.softmax_rows(x) after import nn"),
    ("print len([[1, 2]])", "a value's sizes are part of its type"),
    ("print np.zeros(3)", "goat is not NumPy"),
    ("print \"{1 # 2}\"", "a {} field cannot hold a '#'"),
    ("let x = [[1]]\nx @ x", "a value on its own line does nothing in a program: write print"),
    ("exp([[1]])", "a value on its own line does nothing in a program"),
    ("let def = 1", "'def' is a reserved word, not a name"),
    ("var in = 3", "'in' is a reserved word, not a name"),
    ("def f(scalar: tensor[1x1]) = scalar", "scalar is a type, not a name"),
    ("let x = [1, 2, ]", "expected a number, found ']'; a list literal cannot end with a comma"),
    ("let x = [[1], [2], ]", "expected a row such as [1, 2], found ']'; a list literal cannot "
                             "end with a comma"),
    ("let x = [1,, 2]", "two commas in a row: a value is missing between them"),
])
def test_habits_get_a_hint(src, says):
    assert says in error(src).message


# ---- several vars at once; a save's name made when it runs

def test_a_tuple_assigns_several_vars():
    src = ("def f(x: tensor[1x2]) { return x * 2, x + 1 }\nvar a, b = f([[1, 2]])\n"
           "for i in 0..2 {\n  a, b = f(a)\n}\nprint a\nprint b")
    a, b = run(src)
    x = np.array([[1.0, 2.0]])
    for _ in range(3):
        x, y = x * 2, x + 1
    assert a.tolist() == x.tolist() and b.tolist() == y.tolist()


@pytest.mark.parametrize("src, says", [
    ("var a = 1\nlet c = 2\na, c = (3, 4)", "cannot assign to 'c': it is defined with let"),
    ("var a = 1\nvar c = [[1, 2]]\na, c = (3, 4)", "cannot assign a value of shape scalar to var 'c'"),
    ("var a = 1\na, b = (3, 4)", "cannot assign to 'b': no var of that name is defined"),
    ("var a, b = (1, 2, 3)", "var binds 2 names, but the value holds 3"),
    ("def f(x: scalar) { return ((x, x), x) }", "a tuple cannot hold a tuple"),
])
def test_tuple_assignment_errors(src, says):
    assert says in error(src).message


def test_one_number_assigned_to_a_var_of_one_number_takes_the_vars_shape():
    """Found by a newcomer: var total = 0 ... total += nn.cross_entropy(...) (a 1x1) was an
    error asking for reshape(VALUE, scalar); both hold one number, and the var keeps its
    shape. A var of more cells still refuses a scalar."""
    b, c = run("var b = 0\nb = col_mean([[1], [2]])\nprint b\n"
               "var c = [[0]]\nc += mean([1, 2])\nprint c\n")
    assert b.shape == () and b.item() == 1.5
    assert c.shape == (1, 1) and c.item() == 1.5
    e = error("var d = [[0, 0]]\nd = col_mean([[1], [2]])\n")
    assert e.message == ("cannot assign a value of shape 1x1 to var 'd' of shape 1x2: a var "
                         "keeps the shape it was declared with")


def test_save_with_fields_in_its_name(tmp_path):
    prog = tmp_path / "p.mg"
    prog.write_text('for step in 0..3 {\n  save([[1, 2]] * step, "w_{step:03d}.npy")\n}\n')
    goat.run_file(str(prog))
    assert sorted(f for f in os.listdir(tmp_path) if f.endswith(".npy")) == [
        "w_000.npy", "w_001.npy", "w_002.npy"]
    assert np.load(tmp_path / "w_002.npy").tolist() == [[2.0, 4.0]]


@pytest.mark.parametrize("dtype", ["f64", "f32"])
def test_a_file_names_field_without_a_spec_writes_every_digit_of_a_whole_number(tmp_path,
                                                                                 dtype):
    """"w_{step}.npy" had formatted step as %g, as a print does: steps 1000000 to 1000002
    all became w_1e+06.npy, each checkpoint silently overwriting the last.  A whole number
    below 2**53 is now written in full in a save's and a load's name; another number as %g."""
    prog = tmp_path / "p.mg"
    prog.write_text('for step in 999999..1000003 {\n  save([[1]] * step, "w_{step}.npy")\n}\n'
                    'print load("w_{1000001}.npy", tensor[1x1])\n'
                    'save([[0]], "f_{0.25}_{-0}_{1/0}_{9007199254740991}_{2e20}_{-3}.npy")\n'
                    'print "{1000001}"\n')
    out = io.StringIO()
    values = goat.run_file(str(prog), dtype=dtype, stdout=out)
    names = sorted(f for f in os.listdir(tmp_path) if f.endswith(".npy"))
    big = "9007199254740991" if dtype == "f64" else "9.0072e+15"   # 2**53 - 1 is 2**53 in f32
    assert names == ["f_0.25_0_inf_%s_2e+20_-3.npy" % big, "w_1000000.npy", "w_1000001.npy",
                     "w_1000002.npy", "w_999999.npy"]
    assert np.load(tmp_path / "w_1000002.npy").item() == 1000002
    assert values[0].item() == 1000001
    assert values[1] == "1e+06"         # a print keeps %g (the book's)


def test_a_module_that_is_not_a_file_says_so(tmp_path):
    (tmp_path / "dirmod.mg").mkdir()
    (tmp_path / "p.mg").write_text("import dirmod\n")
    status, out, err = cli("run", "p.mg", cwd=str(tmp_path))
    assert status == 1
    assert err.startswith("p.mg:1: error: cannot import module 'dirmod': dirmod.mg is not a "
                          "regular file")


def test_the_repl_shows_a_tuple():
    from goat.repl.session import Session
    s = Session(out=io.StringIO())
    s.run("def h(x: scalar) { return x, x * [[2]] }")
    r = s.run("h(3)")[0]
    assert r.kind == "value" and r.shape == ((), (1, 1))
    assert [v.tolist() for v in r.value] == [3.0, [[6.0]]]
    assert s.describe("h(3)") == "(scalar, tensor[1x1])"


def test_a_broadcast_too_large_for_any_machine_is_found_before_running():
    """A sum of 21 literals nested 31 deep, each 8 wide at another depth: 8**21 cells."""
    def literal(wide_at):
        s = "1"
        for d in range(31):
            s = "[" + ", ".join([s] * 8) + "]" if d == wide_at else "[" + s + "]"
        return s
    src = "print 1\nprint " + " + ".join(literal(k) for k in range(21))
    e = error(src)
    assert e.line == 2 and e.message.endswith("is too large for any machine to address: more "
                                              "than 2**63 bytes")
    status, out, err = cli("check", "-", stdin=src.encode())
    assert status == 1 and out == ""


def test_a_program_whose_expansion_explodes_is_refused_at_the_call():
    """Each def calls the one before on two different values: 2**23 operations.  goat stops
    at its bound (goat.typecheck.checker.MAX_NODES), at the call, in bounded time and memory."""
    src = ("def f0(x: tensor[1x1]) = x\n"
           + "".join("def f%d(x: tensor[1x1]) = f%d(exp(x)) + f%d(sin(x))\n" % (i, i - 1, i - 1)
                     for i in range(1, 24))
           + "print 1\nprint f23([[0.1]])\n")
    status, out, err = cli("run", "-", stdin=src.encode(), timeout=120)
    assert status == 1 and out == ""
    assert err.startswith("<stdin>:26: error: this call of f23 needs more than 500,000 "
                          "operations to check")


def test_out_of_memory_on_a_size_known_only_when_it_runs_reports_the_real_size(tmp_path):
    np.save(tmp_path / "col.npy", np.ones((300000, 1)))
    prog = tmp_path / "p.mg"
    prog.write_text('let c: tensor[?x1] = load("col.npy")\nprint 1\nprint row_sum(c @ transpose(c))\n')
    with pytest.raises(goat.GoatError) as info:
        goat.run_file(str(prog))
    assert info.value.line == 3
    assert info.value.message == ("out of memory computing a value of shape 300000x300000 "
                                  "(720 GB)")


SAVES_LATE = ('print 1\nvar w = [[1.0]]\nfor step in 0..3 {\n    w = w * 2\n}\n'
              'if col_sum(w) > 0 {\n    save(w, "ckpt/w_{col_sum(w):03d}_final.npy")\n}\nprint w\n')


@pytest.mark.parametrize("flags", [[], ["--aot"]])
def test_a_save_into_a_missing_folder_is_refused_before_anything_runs(tmp_path, flags):
    """It had failed when the save ran: after the whole training, at the last checkpoint."""
    (tmp_path / "t.mg").write_text(SAVES_LATE)
    status, out, err = cli("run", *flags, "t.mg", cwd=str(tmp_path))
    assert (status, out) == (1, "")
    assert err.startswith("t.mg:7: error: cannot save into 'ckpt': no such directory (goat "
                          "makes no folders: make it first; found before anything ran)\n"), err
    (tmp_path / "ckpt").mkdir()
    status, out, err = cli("run", *flags, "t.mg", cwd=str(tmp_path))
    assert status == 0, err
    assert np.load(tmp_path / "ckpt" / "w_008_final.npy").tolist() == [[8.0]]


def test_the_folder_check_looks_into_blocks_defs_and_names_with_fields(tmp_path):
    (tmp_path / "afile").write_text("")
    text = ('def keep(x: tensor[1x1]) {\n    save(x, "afile/x.npy")\n    return x\n}\n'
            'print 1\nif 1 > 0 {\n    print keep([[2]])\n}\n')
    e = error(text, path=str(tmp_path / "t.mg"))
    assert (e.line, e.message) == (2, "cannot save into 'afile': it is not a directory (goat "
                                      "makes no folders: make it first; found before anything "
                                      "ran)")
    assert e.printed == [] and "called on line 7" in e.render()
    # a field in the folder: known only when the save runs
    e = error('print 1\nfor k in 0..2 {\n    save([[1.0]], "run_{k}/x.npy")\n}\n',
              path=str(tmp_path / "u.mg"))
    assert (e.line, e.message) == (3, "cannot save run_0/x.npy: no such directory 'run_0'")
    assert [v.tolist() for v in e.printed] == [1.0]
    # in outputs= nothing is written: no folder is needed
    outputs = {}
    goat.run_source(SAVES_LATE, path=str(tmp_path / "v.mg"), outputs=outputs)
    assert list(outputs) == ["ckpt/w_008_final.npy"]


def test_every_save_into_a_missing_folder_is_reported_in_the_programs_order(tmp_path):
    with pytest.raises(goat.GoatErrors) as info:
        goat.run_source('save([[1]], "nodir1/a.npy")\nfor i in 0..2 {\n'
                        '    save([[1]], "nodir2/b_{i}.npy")\n}\nsave([[1]], "nodir3/a.npy")\n'
                        'save([[2]], "nodir1/b.npy")\n', path=str(tmp_path / "t.mg"))
    assert [(e.line, e.message.split(":")[0]) for e in info.value.errors] == [
        (1, "cannot save into 'nodir1'"), (3, "cannot save into 'nodir2'"),
        (5, "cannot save into 'nodir3'")]


@pytest.mark.parametrize("body, refused", [
    ('let save_ckpt = 0\nif save_ckpt == 1 {\n    save([[1]], "nod/a.npy")\n}\n', False),
    ('let save_ckpt = 0\nif not save_ckpt {\n    print 1\n} else {\n    save([[1]], "nod/a.npy")\n}\n',
     False),
    ('let steps = 1\nfor s in 0..steps - 1 {\n    save([[1]], "nod/a.npy")\n}\n', False),
    ('let steps = 0\nfor s in 0..steps * 2 {\n    save([[1]], "nod/a.npy")\n}\n', False),
    ('let steps = 3\nfor s in 0..steps % 2 {\n    save([[1]], "nod/a.npy")\n}\n', True),
    # a condition on the loop's index may hold at some step
    ('let every = 1000\nfor step in 0..10 {\n    if step % every == every - 1 {\n'
     '        save([[1]], "nod/a.npy")\n    }\n}\n', True),
    # a NaN holds, as the if takes it
    ('let k = 0 / 0\nif k {\n    save([[1]], "nod/a.npy")\n}\n', True),
    ('let k = 2\nif k > 1 and k < 3 {\n    save([[1]], "nod/a.npy")\n}\n', True),
    # every elementwise op of the registry folds, as the run computes it
    ('let every = 4\nif maximum(every, 9) < sqrt(every) {\n    save([[1]], "nod/a.npy")\n}\n', False),
    ('let every = 4\nif exp(every - 4) == 1 {\n    save([[1]], "nod/a.npy")\n}\n', True),
])
def test_a_save_the_programs_own_arithmetic_rules_out_needs_no_folder(tmp_path, body, refused):
    """Found by a docs check: only a bare name or number had been read, so `if save_ckpt == 1`
    and `0..steps - 1` were refused."""
    text = body + "print 7\n"
    if refused:
        e = error(text, path=str(tmp_path / "t.mg"))
        assert e.message.startswith("cannot save into 'nod': no such directory")
    else:
        assert run(text, path=str(tmp_path / "t.mg"))[-1].item() == 7


def test_a_save_ruled_out_only_in_float64_is_checked_under_f32(tmp_path):
    """Found by a reviewer: exp(1e-8) == 1 is false in float64 but true in float32, so a
    --dtype f32 run reached a save into a missing folder that the check had ruled out."""
    text = 'let k = 1e-8\nif exp(k) == 1 {\n    save([[1]], "nod/a.npy")\n}\nprint 7\n'
    path = str(tmp_path / "t.mg")
    assert goat.run_source(text, path=path)[-1].item() == 7         # f64: it does not run
    with pytest.raises(goat.GoatError) as info:
        goat.run_source(text, path=path, dtype="f32")
    assert info.value.line == 3
    assert info.value.message.startswith("cannot save into 'nod': no such directory")
    assert "found before anything ran" in info.value.message


def test_a_value_of_sizes_known_when_it_runs_into_a_var_of_one_number(tmp_path):
    """Found by a breaker: var v = 0 then v = a, a loaded as tensor[?x?] holding [[4]], was
    refused before the run, where a 1x1 var took it; it is checked when it runs, with the var's
    words."""
    import goat
    import numpy as np
    np.save(tmp_path / "one.npy", np.array([[4.0]]))
    np.save(tmp_path / "two.npy", np.array([[4.0, 5.0]]))
    src = 'let a: tensor[?x?] = load("%s")\nvar v = 0\nv = a\nprint v\nvar w = [0]\nw += a\nprint w\n'
    v, w = goat.run_source(src % (tmp_path / "one.npy"))
    assert v.shape == () and v.item() == 4 and w.shape == (1,) and w.tolist() == [4]
    with pytest.raises(goat.GoatError) as info:
        goat.run_source(src % (tmp_path / "two.npy"))
    assert info.value.message == ("cannot assign a value of shape 1x2 to var 'v' of shape "
                                  "scalar: a var keeps the shape it was declared with")


def test_a_let_too_large_to_be_a_size_is_shown_whole():
    e = error("let H = 1152921504606846976\nprint zeros(tensor[H])\n")
    assert e.message == ("the size H is 1152921504606846976, too large to be a size (at most "
                         "2**53 = 9007199254740992)")
