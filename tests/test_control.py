"""Loops, state and conditions (LANGUAGE.md Part B4/B5): for, if/else, var and assignment,
block-bodied defs with tuples, comparison/logical/% operators, format print, load/save,
reshape/iota/zeros/ones/rand/randn, the checked program's size, the outline, the REPL session
and the evaluator's memory.

Every value is checked against an independent computation written here (plain Python or
NumPy doing the same float operations), never against goat's own earlier output.  Tests marked
xfail(strict=True) assert the right behaviour where goat is wrong today: each names the bug.
"""
import importlib.util
import io
import itertools
import math
import os
import time
import tracemalloc

import numpy as np
import pytest

import goat
from conftest import cli, error, run, run_error_in
from goat.interp.printer import format_number
from goat.ops import rng
from goat.repl.session import Session


def lit(m):
    """A NumPy matrix as a goat list literal, every float exactly (repr round-trips)."""
    m = np.asarray(m, dtype=np.float64)
    return "[" + ", ".join("[" + ", ".join(repr(float(v)) for v in row) + "]" for row in m) + "]"


def scalars(values):
    """The printed values of a run as Python floats (each must have one element)."""
    return [float(np.asarray(v).reshape(())) for v in values]


def unknown(tmp_path, name, value, shape="?x?"):
    """A let whose value is read from a file: its shape (written with ?) is known only when the
    program runs.  (A ? parameter given a value of known shape is checked before running.)"""
    path = tmp_path / (name + ".npy")
    np.save(path, np.array(value, dtype=np.float64))
    return 'let %s: tensor[%s] = load("%s")\n' % (name, shape, path)


def run_out(src, path="t.mg"):
    """(printed values or the GoatError raised, the text written to standard output)."""
    out = io.StringIO()
    try:
        result = goat.run_source(src, path=path, stdout=out)
    except goat.GoatError as e:
        result = e
    return result, out.getvalue()


# =========================================================================== 1. loops

def test_for_sums_a_half_open_range():
    assert scalars(run("var s = 0\nfor i in 0..5 {\n  s += i\n}\nprint s")) == [sum(range(5))]


def test_for_product_is_a_factorial():
    assert scalars(run("var p = 1\nfor i in 1..11 { p *= i }\nprint p")) == [math.factorial(10)]


def test_loop_variable_takes_each_whole_number_in_order():
    printed = run("for i in -3..4 { print i }")
    assert scalars(printed) == list(range(-3, 4))
    assert all(np.asarray(v).shape == () for v in printed)          # i is a scalar


def test_loop_variable_is_a_float_usable_in_arithmetic():
    assert scalars(run("var s = 0\nfor i in 0..4 { s += i * 0.5 - 1 }\nprint s")) == \
        [sum(i * 0.5 - 1 for i in range(4))]


def test_zero_trip_loops_leave_vars_unchanged():
    src = ("var c = 7\nfor i in 3..3 { c += 1 }\nfor i in 5..2 { c = c * 100 }\n"
           "for i in 0..-4 { c = 0 }\nprint c")
    assert scalars(run(src)) == [7.0]


def test_zero_trip_loop_runs_no_print():
    assert run('for i in 2..1 { print "never" }\nprint "after"') == ["after"]


def test_bounds_from_expressions_and_lets():
    src = "let n = 4\nlet lo = 1\nfor i in lo + 1..n * 2 - 1 { print i }"
    assert scalars(run(src)) == list(range(2, 7))


def test_bounds_with_spaces_and_parentheses():
    assert scalars(run("for i in ( 1 ) .. (2 + 1) { print i }")) == [1.0, 2.0]


def test_bounds_are_evaluated_once_before_the_loop():
    # the var in the bound grows inside the loop; the loop still runs its initial 10 times
    src = "var n = 10\nvar k = 0\nfor i in 0..n {\n  n = n + 1\n  k += 1\n}\nprint k\nprint n"
    assert scalars(run(src)) == [10.0, 20.0]


def test_bound_from_a_var_assigned_before_the_loop():
    src = "var n = 2\nn = n * 3\nvar s = 0\nfor i in 0..n { s += 1 }\nprint s"
    assert scalars(run(src)) == [6.0]


def test_gradient_descent_loop_is_bit_identical_to_numpy():
    r = np.random.default_rng(1234)
    A = r.standard_normal((7, 3))
    b = r.standard_normal((7, 1))
    src = f"""let A = {lit(A)}
let b = {lit(b)}
var w: tensor[3x1] = zeros(tensor[3x1])
for step in 0..50 {{
  let r = A @ w - b
  let g = transpose(A) @ r * 2
  w = w - g * 0.05
}}
print w
"""
    w = np.zeros((3, 1))
    for _ in range(50):
        res = A @ w - b
        g = A.T @ res * 2
        w = w - g * 0.05
    (got,) = run(src)
    assert got.shape == (3, 1)
    assert got.tobytes() == w.tobytes()


def test_loop_carried_matrix_update_with_compound_assignment():
    M = np.array([[0.5, 0.25], [-0.125, 1.0]])
    src = f"let M = {lit(M)}\nvar x = [[1, 2]]\nfor i in 0..8 {{\n  x = x @ M\n  x += 0.1\n}}\nprint x"
    x = np.array([[1.0, 2.0]])
    for _ in range(8):
        x = x @ M
        x = x + 0.1
    assert run(src)[0].tobytes() == x.tobytes()


def test_nested_loops_carry_two_vars():
    src = """var a = 0
var b = 100
for i in 0..4 {
  for j in 0..i {
    a += i * j
    b -= j + 1
  }
  b = b * 0.5
}
print a
print b
"""
    a, b = 0.0, 100.0
    for i in range(4):
        for j in range(i):
            a += i * j
            b -= j + 1
        b = b * 0.5
    assert scalars(run(src)) == [a, b]


def test_inner_loop_bound_uses_the_outer_index():
    src = "var c = 0\nfor i in 0..5 {\n  for j in i..5 { c += 1 }\n}\nprint c"
    assert scalars(run(src)) == [sum(5 - i for i in range(5))]


def test_swap_through_a_temporary_in_a_loop():
    src = "var a = 1\nvar b = 2\nfor i in 0..3 { let t = a; a = b; b = t }\nprint a\nprint b"
    assert scalars(run(src)) == [2.0, 1.0]


def test_fibonacci_with_two_carried_vars():
    src = "var f0 = 0\nvar f1 = 1\nfor i in 0..30 { let t = f0 + f1; f0 = f1; f1 = t }\nprint f0"
    a, b = 0, 1
    for _ in range(30):
        a, b = b, a + b
    assert scalars(run(src)) == [float(a)]


def test_two_assignments_to_one_var_in_one_iteration():
    src = "var g = 1\nfor i in 0..5 { g = g * 2; g = g + 1 }\nprint g"
    g = 1
    for _ in range(5):
        g = g * 2 + 1
    assert scalars(run(src)) == [float(g)]


def test_var_declared_in_a_loop_body_is_fresh_each_iteration():
    assert scalars(run("for i in 0..3 { var t = i; t += 10; print t }")) == [10.0, 11.0, 12.0]


def test_var_declared_in_a_loop_is_carried_by_an_inner_loop():
    src = """var total = 0
for i in 0..4 {
  var row = 0
  if i % 2 == 1 {
    for j in 0..i {
      row += j
      if j == 1 { total += 100 }
    }
  }
  total += row
}
print total
"""
    total = 0
    for i in range(4):
        row = 0
        if i % 2 == 1:
            for j in range(i):
                row += j
                if j == 1:
                    total += 100
        total += row
    assert scalars(run(src)) == [float(total)]


def test_large_trip_count_finishes_quickly():
    t0 = time.perf_counter()
    printed = run("var s = 0\nfor i in 0..10000 {\n  s += i * 2\n}\nprint s")
    elapsed = time.perf_counter() - t0
    assert scalars(printed) == [float(sum(range(10000)) * 2)]
    assert elapsed < 3.0


def test_print_inside_a_loop_keeps_the_order_of_output():
    src = 'print "start"\nfor i in 0..3 {\n  print "i={i}"\n  print i * 10\n}\nprint "end"'
    printed, text = run_out(src)
    assert printed[0] == "start" and printed[-1] == "end"
    assert [p if isinstance(p, str) else float(p) for p in printed[1:-1]] == \
        ["i=0", 0.0, "i=1", 10.0, "i=2", 20.0]
    lines = text.splitlines()
    assert lines[0] == "start" and lines[-1] == "end"
    assert [ln for ln in lines if ln.startswith("i=")] == ["i=0", "i=1", "i=2"]
    assert [ln for ln in lines if ln.startswith("[")] == ["[0]", "[10]", "[20]"]


def test_var_carried_through_nested_if_in_a_loop():
    src = """var x = 0
for i in 0..9 {
  if i % 3 == 0 {
    x += 1
  } else if i % 3 == 1 {
    if i > 2 { x *= 10 }
  } else {
    x -= 0.5
  }
}
print x
"""
    x = 0.0
    for i in range(9):
        if i % 3 == 0:
            x += 1
        elif i % 3 == 1:
            if i > 2:
                x *= 10
        else:
            x -= 0.5
    assert scalars(run(src)) == [x]


def test_loop_invariant_value_read_every_iteration():
    src = "let c = [1, 2]\nvar acc = [0, 0]\nfor i in 0..4 { acc += c * 3 + i }\nprint acc"
    acc = np.zeros(2)
    for i in range(4):
        acc = acc + (np.array([1.0, 2.0]) * 3 + i)
    assert run(src)[0].tolist() == acc.tolist()


def test_comparisons_and_logic_on_the_loop_index():
    src = "for i in 0..7 { print (i == 0 or i >= 4) and not (i == 5) }\n" \
          "for i in 0..4 { print i != 2 }\nfor i in 0..3 { print i < 1.5 }"
    want = [float((i == 0 or i >= 4) and not (i == 5)) for i in range(7)]
    want += [float(i != 2) for i in range(4)] + [float(i < 1.5) for i in range(3)]
    assert scalars(run(src)) == want


def test_runtime_errors_in_a_loop_body_name_their_lines():
    src = ("def f(a: tensor[?x2]) = a\nlet m = f([[1, 2], [3, 4], [5, 6]])\nvar acc = [[0]]\n"
           "for i in 0..3 {\n  if i == 2 {\n    let z = m + [[1, 2], [3, 4]]\n"
           "    acc += col_sum(row_sum(z))\n  }\n  acc += i\n}\nprint acc")
    e = error(src)
    assert e.line == 6 and "cannot add shapes 3x2 and 2x2" in e.message
    e = error("var acc = [[0]]\nfor i in 0..3 {\n"
              "  acc += col_sum(row_sum(rand(tensor[1x1], i - 1)))\n}\nprint acc")
    assert e.line == 3 and "seed" in e.message and "got -1" in e.message


def test_rand_seeded_by_the_loop_index_differs_each_iteration():
    printed = run("for i in 0..3 { print rand(tensor[2], i) }")
    for i, v in enumerate(printed):
        assert v.tolist() == rng.uniform(np, (2,), i).tolist()
    assert printed[0].tolist() != printed[1].tolist()


def test_zero_trip_loop_body_raises_nothing():
    src = "var s = 0\ns -= 1\nfor i in 0..0 {\n  print rand(tensor[2], s)\n}\nprint 5"
    assert scalars(run(src)) == [5.0]


@pytest.mark.parametrize("use", ["x[0 - 5]", "x[[[0]] + 5]", "narrow(x, 0, 3 - 1, 2)",
                                 "rand(tensor[1], 0 - 1)", "gather([[1], [2]], [[0]] + 5)",
                                 "onehot([[1]] + 2, 3)"])
def test_a_number_computed_from_the_programs_numbers_in_a_loop_of_no_steps_is_left_to_it(use):
    """A breaker's: a computed index in a subscript inside for i in 0..0 was refused before
    the run while a computed start, seed or gather index there was left to the run; each is
    left to the run (which never takes it), and outside such a loop each is found before."""
    src = "let x = [1, 2, 3]\nprint 7\nfor i in 0..0 {\n  print %s\n}\nprint 8\n" % use
    assert scalars(run(src)) == [7.0, 8.0]
    with pytest.raises(goat.GoatError) as info:
        goat.check_source("let x = [1, 2, 3]\nprint 7\nprint %s\n" % use)
    assert info.value.loc.line == 3


@pytest.mark.parametrize("src, said", [
    ("let s = -1\nfor i in 0..0 {\n  print rand(tensor[2], s)\n}\nprint 5",
     "a seed must be a whole number from 0 to 9007199254740991, got -1"),
    ("print 1\nprint gather([[1, 2], [3, 4]], [[1], [2]])",
     "gather's indices must be whole numbers from 0 to 1, got 2 at position 1"),
    ("if 0 {\n  print onehot([[0], [7]], 3)\n}",
     "onehot's indices must be whole numbers from 0 to 2, got 7 at position 1"),
    # found by a newcomer: sample_rows's seed had been checked only when it ran
    ("print [[1]]\nprint sample_rows([[0.2, 0.8]], 2.5)",
     "a seed must be a whole number from 0 to 9007199254740991, got 2.5"),
    # a breaker's: numbers the program computes from its numbers, and a def's size at a call
    # (they had passed goat check and stopped the run after its output)
    ("print 1\nprint randn(tensor[2], 0 - 1)",
     "a seed must be a whole number from 0 to 9007199254740991, got -1"),
    ("print 1\nprint rand(tensor[2], 1 / 2)",
     "a seed must be a whole number from 0 to 9007199254740991, got 0.5"),
    ("print 1\nprint narrow([1, 2, 3], 0, 2 + 3, 1)",
     "narrow's start must be a whole number from 0 to 2 (the axis has 3 cells, the length is 1),"
     " got 5"),
    ("print 1\nprint gather([[1], [2]], [[0]] + 5)",
     "gather's indices must be whole numbers from 0 to 1, got 5 at position 0"),
    ("print 1\nprint onehot([[0]] + 5, 3)",
     "onehot's indices must be whole numbers from 0 to 2, got 5 at position 0"),
    ("def f(x: tensor[N]) = x[N]\nprint 1\nprint f([1, 2, 3])",
     "an index must be a whole number from -3 to 2 (axis 0 of 3 has 3 cells), got 3"),
    ("def f(x: tensor[N]) = x[-N - 1]\nprint 1\nprint f([1, 2, 3])",
     "an index must be a whole number from -3 to 2 (axis 0 of 3 has 3 cells), got -4"),
    ("def f(x: tensor[N]) = narrow(x, 0, N, 1)\nprint 1\nprint f([1, 2])",
     "narrow's start must be a whole number from 0 to 1 (the axis has 2 cells, the length is 1),"
     " got 2"),
])
def test_a_value_check_written_in_the_program_fails_before_it_runs(src, said):
    """Indices and seeds written in the program (constants) that are sure to fail are errors
    found before anything runs, like a shape error (they had been found when the op ran,
    after the output before it, and goat check had passed them); in code that does not run
    too, as a shape error is."""
    status, out, err = cli("run", "-", stdin=src.encode())
    assert (status, out) == (1, "")
    assert err.splitlines()[0].endswith("error: " + said)
    with pytest.raises(goat.GoatError) as info:
        goat.check_source(src)
    assert info.value.message == said


def test_zero_trip_loop_computes_nothing():
    src = ("var s = [[0]]\nfor i in 0..0 {\n  let z = zeros(tensor[2000x2000])\n"
           "  s += col_sum(row_sum(z))\n}\nprint s")
    tracemalloc.start()
    try:
        printed = run(src)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert scalars(printed) == [0.0]
    assert peak < 8_000_000


# =========================================================================== 2. if / else

def test_if_takes_the_then_branch_when_true():
    assert run('if 2 > 1 { print "yes" } else { print "no" }') == ["yes"]


def test_if_takes_the_else_branch_when_false():
    assert run('if 2 < 1 { print "yes" } else { print "no" }') == ["no"]


@pytest.mark.parametrize("v, want", [(-3, "neg"), (0, "zero"), (0.5, "small"), (7, "big")])
def test_else_if_chain_takes_the_first_true_branch(v, want):
    src = f"""let v = {v}
if v < 0 {{
  print "neg"
}} else if v == 0 {{
  print "zero"
}} else if v < 1 {{
  print "small"
}} else {{
  print "big"
}}
"""
    assert run(src) == [want]


def test_else_if_chain_on_one_line_without_else():
    assert run("if 0 { print 1 } else if 0 { print 2 }\nprint 3") == [np.array(3.0)]


@pytest.mark.parametrize("cond, taken", [
    ("1 < 2 and 2 < 3", True), ("1 < 2 and 3 < 2", False), ("0 or 2 == 2", True),
    ("not 0", True), ("not 5", False), ("not 1 == 2", True), ("0 or 0", False),
    ("-1", True), ("-0.0", False), ("0.0001", True), ("[[0]]", False), ("[1]", True),
])
def test_conditions_from_comparisons_and_logic(cond, taken):
    assert run(f'if {cond} {{ print "t" }} else {{ print "f" }}') == ["t" if taken else "f"]


def test_nan_condition_is_true():
    assert run('if 0/0 { print "t" } else { print "f" }') == ["t"]
    assert run('if -(0/0) { print "t" } else { print "f" }') == ["t"]


def test_var_assigned_in_one_branch_keeps_its_value_otherwise():
    src = "var y = 7\nif 0 { y = 1 }\nprint y\nif 1 { y = 2 }\nprint y\nif 0 { y = 3 } else { }\nprint y"
    assert scalars(run(src)) == [7.0, 2.0, 2.0]


def test_vars_assigned_in_different_branches_flow_out():
    src = "var a = 1\nvar b = 2\nif 0 { a = 10 } else { b = 20 }\nprint a\nprint b"
    assert scalars(run(src)) == [1.0, 20.0]


def test_swap_inside_an_if():
    src = "var c = 1\nvar d = 2\nif 1 { let t = c; c = d; d = t }\nprint c\nprint d"
    assert scalars(run(src)) == [2.0, 1.0]


def test_semicolons_and_one_line_blocks():
    assert scalars(run("let a = 1; let b = 2\nif a < b { print a; print b }; print a + b")) == \
        [1.0, 2.0, 3.0]


def test_blocks_without_spaces_around_braces():
    src = "for i in 0..2 {print i}\nif(1){print 7}else{print 8}\nlet x=1\nif x==1{print 9}\n" \
          "for j in 1..x+2{print j}"
    assert scalars(run(src)) == [0.0, 1.0, 7.0, 9.0, 1.0, 2.0]


def test_else_on_the_line_after_the_closing_brace():
    src = "if 0 {\n  print 1\n}\nelse {\n  print 2\n}"
    assert scalars(run(src)) == [2.0]


def test_condition_of_unknown_shape_checked_when_it_runs(tmp_path):
    ok = "def f(a: tensor[?x1]) = row_sum(transpose(a))\nif f([[1], [-1]]) { print 1 } else { print 2 }"
    assert scalars(run(ok)) == [2.0]
    bad = unknown(tmp_path, "c", [[1], [2]], "?x1") + "print 0\nif c { print 1 }"
    result, text = run_out(bad)
    assert isinstance(result, goat.GoatError)
    assert result.line == 3
    assert "if condition must be a single number" in result.message
    assert "2x1" in result.message
    assert text.startswith("Unranked Memref")          # the print before it stays printed


# =========================================================================== 3. errors

def test_assigning_to_a_let_is_an_error():
    e = error("let a = 1\na = 2")
    assert e.line == 2
    assert "cannot assign to 'a'" in e.message and "let on line 1" in e.message
    assert "var" in e.message


def test_compound_assigning_to_a_let_is_an_error():
    e = error("let a = 1\nprint a\na += 2")
    assert e.line == 3 and "cannot assign to 'a'" in e.message


def test_assigning_to_an_undefined_name_is_an_error():
    e = error("let q = 1\nb = 2")
    assert e.line == 2
    assert "cannot assign to 'b'" in e.message and "no var" in e.message


def test_assigning_to_the_loop_variable_is_an_error():
    e = error("for i in 0..3 {\n  i = 2\n}")
    assert e.line == 2 and "loop variable" in e.message


def test_assigning_to_a_parameter_is_an_error():
    e = error("def f(a: scalar) {\n  a = 2\n  return a\n}")
    assert e.line == 2 and "parameter" in e.message


@pytest.mark.parametrize("src, line, old, new", [
    ("var x = [[1, 2]]\nx = [[1, 2], [3, 4]]", 2, "1x2", "2x2"),       # broadcasting shapes
    ("var x = [[1, 2], [3, 4]]\nx = [[1, 2]]", 2, "2x2", "1x2"),
    ("var x = [[1, 2]]\nx += [[1], [2]]", 2, "1x2", "2x2"),             # 1x2 + 2x1 -> 2x2
    # (one number into a var of one number keeps the var's shape: tests/test_limits_and_habits.py)
    ("var s = 0\ns = [5, 6]", 2, "scalar", "2"),
    ("var s = [5]\ns = [[3, 4]]", 2, "1", "1x2"),
    ("var x = [[1, 2]]\nfor i in 0..2 {\n  x = x + [[1], [2]]\n}", 3, "1x2", "2x2"),
])
def test_a_var_cannot_change_shape(src, line, old, new):
    e = error(src)
    assert e.line == line
    assert "cannot assign a value of shape %s to var 'x'" % new in e.message or \
        "cannot assign a value of shape %s to var 's'" % new in e.message
    assert "of shape %s" % old in e.message


def test_a_var_keeps_its_shape_when_broadcasting_keeps_it():
    assert run("var x = [[1, 2], [3, 4]]\nx += [[10, 20]]\nprint x")[0].tolist() == \
        [[11.0, 22.0], [13.0, 24.0]]


def test_assigning_an_unknown_shape_to_a_var_is_checked_at_run_time(tmp_path):
    src = ("def f(a: tensor[?x2]) = a * 2\nvar x = [[1, 2]]\nx = f([[3, 4]])\nprint x\n"
           + unknown(tmp_path, "d", [[3, 4], [5, 6]], "?x2").rstrip("\n") + "; x = f(d)\nprint x")
    result, text = run_out(src)
    assert isinstance(result, goat.GoatError)
    assert result.line == 5
    assert "'x'" in result.message and "1x2" in result.message and "2x2" in result.message
    assert "[[6,   8]]" in text                           # the first print ran


def test_var_with_wrong_annotation_is_an_error():
    e = error("var x: tensor[2x2] = [[1, 2]]")
    assert e.line == 1 and "tensor[2x2]" in e.message and "1x2" in e.message


@pytest.mark.parametrize("src, what", [
    ("let m = [[1, 2]]\nfor i in 0..m { print i }", "1x2"),
    ("for i in [1, 2]..3 { print i }", "2"),
])
def test_a_non_scalar_loop_bound_is_an_error(src, what):
    e = error(src)
    assert e.line == src.count("\n") + 1
    assert "loop bound must be a single number" in e.message and "shape %s" % what in e.message


def test_a_non_scalar_if_condition_is_an_error():
    e = error("let v = [1, 0]\nif v { print 1 }")
    assert e.line == 2
    assert "if condition must be a single number" in e.message and "shape 2" in e.message


def test_reshape_changing_the_cell_count_is_an_error():
    e = error("let x = [[1, 2, 3]]\nlet y = reshape(x, tensor[2x2])")
    assert e.line == 2
    assert "cannot reshape 1x3" in e.message and "3 cells" in e.message and "4 cells" in e.message


def test_reshape_by_annotation_changing_the_cell_count_is_an_error():
    e = error("let x = [[1, 2, 3]]\nlet y: tensor[4] = reshape(x)")
    assert e.line == 2 and "cannot reshape" in e.message


def test_a_size_variable_bound_to_two_sizes_in_one_call_is_an_error():
    e = error("def g(a: tensor[N], b: tensor[N]) = a + b\nprint g([1, 2], [1, 2, 3])")
    assert e.line == 2
    assert "size variable N" in e.message and "2" in e.message and "3" in e.message


def test_a_size_variable_used_twice_in_one_parameter():
    e = error("def f(a: tensor[N, N]) = a\nprint f([[1, 2, 3]])")
    assert e.line == 2 and "size variable N" in e.message


def test_a_def_assigning_an_outer_var_is_an_error():
    e = error("var w = 1\ndef f(a: scalar) {\n  w = a\n  return a\n}")
    assert e.line == 3
    assert "cannot assign to var 'w'" in e.message and "return the new value" in e.message


def test_a_def_assigning_an_outer_var_in_its_loop_is_an_error():
    e = error("var w = 0\ndef f(q: scalar) {\n  for i in 0..2 { w += q }\n  return q\n}")
    assert e.line == 3 and "var 'w'" in e.message


def test_a_def_reading_an_outer_var_is_an_error():
    e = error("var w = 1\ndef f(a: scalar) = a + w")
    assert e.line == 2
    assert "cannot read var 'w'" in e.message and "pass it as an argument" in e.message


def test_a_def_reading_an_outer_var_in_a_block_is_an_error():
    e = error("var w = 1\ndef f(a: scalar) {\n  if a { print w }\n  return a\n}")
    assert e.line == 3 and "var 'w'" in e.message


def test_a_def_may_read_an_outer_let():
    assert scalars(run("let k = 10\ndef f(a: scalar) = a + k\nprint f(1)")) == [11.0]


def test_return_not_last_is_an_error_at_the_return():
    e = error("def f(a: scalar) {\n  return a\n  let b = 1\n}")
    assert e.line == 2
    assert "return must be the last statement" in e.message


def test_two_returns_are_an_error():
    e = error("def f(a: scalar) {\n  return a\n  return a\n}")
    assert e.line == 2 and "return must be the last statement of f" in e.message


def test_a_block_def_without_return_is_an_error():
    e = error("def f(a: scalar) {\n  let b = a\n}")
    assert e.line == 2 and "must end with return" in e.message


def test_return_outside_a_def_is_an_error():
    e = error("print 1\nreturn 5")
    assert e.line == 2 and "return" in e.message


def test_let_tuple_of_a_single_value_is_an_error():
    e = error("let q = 1\nlet a, b = 5")
    assert e.line == 2
    assert "binds 2 names" in e.message and "single tensor" in e.message


def test_let_tuple_of_a_three_tuple_is_an_error():
    e = error("def f(q: scalar) = (q, q, q)\nlet x, y = f(1)")
    assert e.line == 2 and "binds 2 names" in e.message and "holds 3" in e.message


def test_let_tuple_binding_a_name_twice_is_an_error():
    e = error("def f(q: scalar) = (q, q)\nlet a, a = f(1)")
    assert e.line == 2 and e.message == "'a' appears twice among the names this statement binds"


def test_using_a_block_local_let_after_the_block_is_an_error():
    e = error("for i in 0..2 {\n  let t = i\n}\nprint t")
    assert e.line == 4
    assert "unknown name 't'" in e.message and "block that has ended" in e.message
    assert "var" in e.message                                # the hint: declare a var before


def test_using_a_branch_local_let_after_the_if_is_an_error():
    e = error("if 1 {\n  let u = 3\n}\nprint u")
    assert e.line == 4 and "unknown name 'u'" in e.message


def test_using_the_loop_variable_after_the_loop_is_an_error():
    e = error("for i in 0..2 { print i }\nprint i")
    assert e.line == 2 and "unknown name 'i'" in e.message


def test_block_local_names_may_be_reused_in_sibling_blocks_and_later():
    src = ("for i in 0..2 { print i }\nfor i in 5..7 { let t = i; print t }\n"
           "for j in 0..1 { let t = 9; print t }\nlet t = 4\nprint t")
    assert scalars(run(src)) == [0.0, 1.0, 5.0, 6.0, 9.0, 4.0]


def test_loop_variable_shadowing_an_outer_name_is_an_error():
    e = error("let i = 5\nfor i in 0..2 { print i }")
    assert e.line == 2 and "'i' is already defined on line 1" in e.message


def test_nested_loops_with_one_variable_name_are_an_error():
    e = error("for i in 0..2 {\n  for i in 0..2 { print i }\n}")
    assert e.line == 2 and "loop variable" in e.message


def test_redefining_an_outer_name_in_a_block_is_an_error():
    e = error("var x = 0\nfor i in 0..3 {\n  let x = 2\n}")
    assert e.line == 3 and "'x' is already defined on line 1" in e.message


def test_redefining_a_carried_var_in_a_loop_is_an_error():
    e = error("var x = 0\nfor i in 0..3 {\n  x = 1\n  var x = 2\n}")
    assert e.line == 4 and "'x' is already defined on line 1" in e.message


def test_redefining_an_assigned_var_in_an_if_is_an_error():
    e = error("var x = 0\nif 1 {\n  x = 1\n  let x = 2\n}")
    assert e.line == 4 and "'x' is already defined on line 1" in e.message


def test_runtime_if_condition_error_names_the_if_line():
    result, text = run_out("def f(a: tensor[?x1]) = a\nlet c = f([[1], [2]])\nprint 0\n"
                           "if c { print 1 }")
    assert isinstance(result, goat.GoatError)
    assert "if condition must be a single number" in result.message
    assert result.line == 4


def test_a_var_of_unknown_rows_cannot_change_shape_when_it_runs():
    e = error("def g(a: tensor[?x2]) = a\nvar t = g([[1, 2]])\nt = [[1, 2], [3, 4]]\nprint t")
    assert e.line == 3 and "'t'" in e.message and "1x2" in e.message and "2x2" in e.message


def test_a_loop_carried_var_of_unknown_rows_cannot_grow_by_broadcasting():
    e = error("def g(a: tensor[?x2]) = a\nvar t = g([[1, 2]])\n"
              "for i in 0..2 {\n  t = t + [[1, 2], [3, 4]]\n}\nprint t")
    assert e.line == 4 and "'t'" in e.message


@pytest.mark.parametrize("src, line, call_line", [
    ("def f(a: scalar) {\n  var t = 0\n  for i in 0..a { t += 1 }\n  return t\n}\n"
     "print 0\nprint f(1.5)", 3, 7),
    ("def f(a: tensor[?]) {\n  var t = 0\n  if a * [[1], [1]] { t = 1 }\n  return t\n}\n"
     "print 0\nprint f([1])", 3, 7),
    ("def f(a: scalar) {\n  let t = rand(tensor[2], a)\n  return t\n}\nprint 0\nprint f(-1)", 2, 6),
    ('def f(a: tensor[?]) {\n  print "{a * [[1], [1]]}"\n  return a\n}\nprint 0\nprint f([1])', 2, 6),
])
def test_runtime_errors_inside_a_def_name_the_call(src, line, call_line):
    e = error(src)
    assert e.line == line
    assert e.notes == ("in f, called on line %d" % call_line,)


def test_runtime_error_inside_a_def_names_the_call_for_an_operation():
    e = error("def f(a: tensor[?x2]) {\n  let t = a + [[1, 2], [3, 4]]\n  return t\n}\n"
              "print f([[1, 2], [3, 4], [5, 6]])")
    assert e.line == 2 and e.notes == ("in f, called on line 5",)


@pytest.mark.parametrize("aot", [False, True])
@pytest.mark.parametrize("expr, message", [
    ("rand(tensor[2], s)", "a seed must be a whole number from 0 to 9007199254740991, got -1"),
    ("randn(tensor[2], s)", "a seed must be a whole number from 0 to 9007199254740991, got -1"),
    ("sample_rows([[0.5, 0.5]], s)",
     "a seed must be a whole number from 0 to 9007199254740991, got -1"),
    ("gather([[1, 2], [3, 4]], reshape(s, tensor[1x1]))",
     "gather's indices must be whole numbers from 0 to 1, got -1 at position 0"),
    ("onehot(reshape(s, tensor[1x1]), tensor[1x3])",
     "onehot's indices must be whole numbers from 0 to 2, got -1 at position 0"),
])
def test_a_failing_check_in_a_loop_body_keeps_the_output_before_it(tmp_path, expr, message, aot):
    """The value does not change in the loop, but the check must not move ahead of the
    body's earlier statements (loop-invariant hoisting had lost the first iteration's print)."""
    if aot:
        pytest.importorskip("llvmlite")
    (tmp_path / "h.mg").write_text('print "start"\nlet s = floor(rand(tensor[], 1)) - 1\n'
                                   'for i in 0..3 {\n  print "it {i}"\n  print %s\n}\n' % expr)
    status, out, err = cli("run", *(["--aot"] if aot else []), "h.mg", cwd=str(tmp_path))
    assert (status, out) == (1, "start\nit 0\n")
    assert err.splitlines()[0] == "h.mg:5: error: " + message


@pytest.mark.parametrize("expr, hoisted", [
    ("randn(tensor[2x2], 42)", True),               # a seed written in the program: fine
    ("randn(tensor[2x2], s)", False),               # computed: checked where it is written
    ("gather(t, [[1], [0]])", True),
    ("gather(t, reshape(s, tensor[1x1]))", False),
    ("onehot([[1], [0]], tensor[2x2])", True),
])
def test_a_checked_op_is_computed_once_before_a_loop_only_when_sure_to_pass(expr, hoisted):
    """An op that checks values (a seed, indices) is moved before the loop, like any value
    the loop does not change, only when its operands are written in the program and pass the
    check: 200 draws of the same 512x512 randn had cost 15 times the run."""
    program = goat.check_source("let s = floor(rand(tensor[], 1)) + 1\nlet t = [[1, 2], [3, 4]]\n"
                                "var w = zeros(tensor[2x2])\nfor i in 0..3 {\n"
                                "  w = w + %s\n}\n" % expr)
    name = expr.split("(")[0]
    (node,) = [n for n in program.nodes if getattr(n.op, "name", None) == name
               and n.region is not program.main]
    assert (node.region.kind == "pre") == hoisted


def test_a_run_time_error_deep_in_calls_names_the_innermost_and_outermost_calls():
    """Of 30 nested calls, the notes name the 7 innermost and the 3 outermost and count the
    rest, as Python shortens a deep traceback (every frame had been named, in every site of a
    compiled program too: quadratic in the depth)."""
    lines = ["def f0(x: tensor[?x2]) = x + [[1, 2], [3, 4]]"]
    lines += ["def f%d(x: tensor[?x2]) = f%d(x) * 1" % (i, i - 1) for i in range(1, 30)]
    lines.append("print f29([[1, 2], [3, 4], [5, 6]])")
    e = error("\n".join(lines) + "\n")
    assert e.line == 1
    assert e.notes == tuple("in f%d, called on line %d" % (i, i + 2) for i in range(7)) + (
        "... 20 more calls in between", "in f27, called on line 29",
        "in f28, called on line 30", "in f29, called on line 31")
    ten = error("\n".join(lines[:10]) + "\nprint f9([[1, 2], [3, 4], [5, 6]])\n")
    assert len(ten.notes) == 10 and "more calls" not in " ".join(ten.notes)
    eleven = error("\n".join(lines[:11]) + "\nprint f10([[1, 2], [3, 4], [5, 6]])\n")
    assert len(eleven.notes) == 11 and "more calls" not in " ".join(eleven.notes)  # no shorter


def test_a_loop_bound_that_is_not_a_whole_number_stops_at_the_for_line():
    # computed, so known only when it runs
    result, text = run_out("let h = row_sum([[2, 0.5]])\nprint 1\nfor i in 0..h {\n  print i\n}")
    assert isinstance(result, goat.GoatError)
    assert result.line == 3
    assert result.message == "a loop bound must be a whole number, got 2.5"
    assert text.count("Unranked Memref") == 1                  # only the print before it


def test_a_loop_bound_written_as_a_fraction_is_found_before_anything_runs():
    for src in ("let h = 2.5\nprint 1\nfor i in 0..h {\n  print i\n}",
                "print 1\nfor i in 0...3 {\n  print i\n}"):
        result, text = run_out(src)
        assert isinstance(result, goat.GoatError) and text == ""
        assert result.message.startswith("a loop bound must be a whole number, got ") or (
            # three dots, as Python's and Ruby's ranges: said so (it had said "got 0.3")
            result.message == "a range is written with two dots: 0..3 (three read as .. .3)")


def test_a_loop_bound_the_programs_lets_fix_is_checked_before_anything_runs(tmp_path):
    """A newcomer's: 0..N / B with N = 96 and B = 20 passed goat check and stopped the run
    after a save; lets and arithmetic on them (a module's too) fix the bound before."""
    for src, shown in (("let a = 10\nlet b = 3\nprint 1\nfor j in 0..a / b {\n  print j\n}",
                        "3.33333 (3.3333333333333335)"),
                       ("import cfg\nprint 1\nfor j in 0..cfg.N / cfg.B {\n  print j\n}",
                        "4.8")):   # (4.8 is 96 / 20: every digit only where %g rounds)
        (tmp_path / "cfg.mg").write_text("let N = 96\nlet B = 20\n")
        result, text = run_out(src, str(tmp_path / "p.mg"))
        assert isinstance(result, goat.GoatError) and text == ""
        assert result.message == "a loop bound must be a whole number, got " + shown
    (ok,) = run("let a = 12\nlet b = 3\nvar n = 0\nfor j in 0..a / b {\n  n += 1\n}\nprint n")
    assert ok == 4


def test_a_loop_bound_beyond_2_to_the_53_is_an_error():
    e = error("for i in 9007199254740990..9007199254740994 { print i }")
    assert e.message.startswith("a loop bound must be a whole number from -9007199254740992 to "
                                "9007199254740992")
    result, text = run_out("let h = row_sum([[9007199254740994]])\nfor i in 0..h { print i }")
    assert isinstance(result, goat.GoatError) and result.line == 2


@pytest.mark.parametrize("bound, shown", [("0/0", "nan"), ("1/0", "inf"), ("-1/0", "-inf")])
def test_a_loop_bound_that_is_not_finite_is_an_error(bound, shown):
    e = error(f"let n = {bound}\nfor i in 0..n {{ print i }}")
    assert e.line == 2
    assert e.message.startswith("a loop bound must be a whole number, got")
    assert e.message.endswith(shown)


def test_a_loop_bound_of_unknown_shape_is_checked_when_it_runs():
    src = "def f(a: tensor[?x1]) = a\nfor i in 0..f([[1], [2]]) { print i }"
    e = error(src)
    assert e.line == 2 and "loop bound must be a single number" in e.message and "2x1" in e.message
    assert scalars(run("def f(a: tensor[?x1]) = a\nfor i in 0..f([[2]]) { print i }")) == [0.0, 1.0]


@pytest.mark.parametrize("aot", [False, True])
@pytest.mark.parametrize("stmt, marked", [
    ("for i in 0..a {", "a"),                   # the bound, not the whole statement
    ("for i in a * 1..3 {", "a * 1"),
    ("if a {", "a"),
    ("if 1 > 2 { print 0 } else if a {", "a {"),  # the a after else if
])
def test_a_run_time_error_in_a_loop_bound_or_condition_marks_that_expression(tmp_path, stmt,
                                                                              marked, aot):
    if aot:
        pytest.importorskip("llvmlite")
    (tmp_path / "c.mg").write_text("def f(x: tensor[?x2]) = x\nlet a = f([[1, 2], [3, 4]])\n"
                                   "print [[5]]\n%s\n  print [[6]]\n}\n" % stmt)
    status, out, err = cli("run", *(["--aot"] if aot else []), "c.mg", cwd=str(tmp_path))
    assert status == 1 and out.endswith("[[5]]\n")
    what = "an if condition" if "if" in stmt else "a loop bound"
    expr = marked.rstrip(" {")
    caret = " " * stmt.rindex(marked) + "^" + "~" * (len(expr) - 1)
    assert err.splitlines() == ["c.mg:4: error: %s must be a single number (one element), got "
                                "shape 2x2" % what, "4 | " + stmt, "  | " + caret]


def test_a_tuple_used_in_arithmetic_is_an_error():
    e = error("def f(a: scalar) = (a, a)\nprint f(1) + 1")
    assert e.line == 2 and "2 values, not one" in e.message


@pytest.mark.parametrize("src", ["var v = (1, 2)", "for i in 0..(1, 2) { print i }",
                                 "if (1, 0) { print 1 }", 'print "{(1, 2)}"'])
def test_a_tuple_where_one_value_belongs_is_an_error(src):
    e = error(src)
    assert e.line == 1 and "2 values, not one" in e.message


def test_else_without_if_is_an_error():
    e = error("print 1\nelse { print 2 }")
    assert e.line == 2 and "'else' must follow the '}' of an if block" in e.message


def test_else_after_a_statement_that_follows_the_if_is_an_error():
    e = error("if 1 {\n  print 1\n}\nprint 2\nelse {\n  print 3\n}")
    assert e.line == 5 and "else" in e.message


def test_else_after_a_for_block_is_an_error():
    e = error("for i in 0..1 {\n  print i\n} else {\n  print 2\n}")
    assert e.line == 3 and "else" in e.message


def test_a_second_else_is_an_error():
    e = error("if 1 { print 1 } else { print 2 } else { print 3 }")
    assert e.line == 1 and "already has an else" in e.message


def test_an_unclosed_brace_is_reported_at_its_opener():
    e = error("print 1\nfor i in 0..2 {\n  if 1 { print 2 }\n  print i\nprint 3")
    assert e.line == 2 and "never closed" in e.message


def test_a_closing_brace_with_nothing_open_is_an_error():
    e = error("print 1\n}\nprint 2")
    assert e.line == 2 and "unmatched '}'" in e.message


def test_a_def_inside_a_block_is_an_error():
    e = error("for i in 0..2 {\n  def g(a: scalar) = a\n}")
    assert e.line == 2 and "top level" in e.message


def test_declared_return_type_is_checked():
    e = error("def f(x: scalar) -> tensor[2] {\n  return x\n}")
    assert e.line == 1 and "declared to return tensor[2]" in e.message and "scalar" in e.message
    e = error("def f(x: scalar) -> (scalar, scalar) {\n  return x\n}")
    assert e.line == 1 and "2 values" in e.message and "one value" in e.message


def test_errors_on_the_command_line_say_path_and_line(tmp_path):
    (tmp_path / "bad.mg").write_text("var x = [[1, 2]]\nprint x\nx = [[1, 2], [3, 4]]\n")
    status, out, err = cli("run", "bad.mg", cwd=str(tmp_path))
    assert status == 1
    assert out == ""                                         # static: nothing ran
    assert err.startswith("bad.mg:3: error: cannot assign a value of shape 2x2 to var 'x'")


def test_runtime_loop_bound_error_on_the_command_line(tmp_path):
    (tmp_path / "b.mg").write_text('for i in 0..2 {\n  print "i={i}"\n}\nlet h = row_sum([[2, 0.5]])\n'
                                   'for j in 0..h {\n  print j\n}\n')
    status, out, err = cli("run", "b.mg", cwd=str(tmp_path))
    assert status == 1
    assert out == "i=0\ni=1\n"
    assert err.startswith("b.mg:5: error: a loop bound must be a whole number, got 2.5")


# =========================================================================== 4. operators

OPS = {
    "==": np.equal, "!=": np.not_equal, "<": np.less, "<=": np.less_equal,
    ">": np.greater, ">=": np.greater_equal,
}
A23 = np.array([[1.0, -2.0, np.nan], [0.0, 3.5, -0.0]])
B13 = np.array([[1.0, 3.5, np.nan]])
C21 = np.array([[0.0], [3.5]])


@pytest.mark.parametrize("op", list(OPS))
def test_comparisons_broadcast_like_numpy(op):
    f = OPS[op]
    # list literals hold numbers only: the NaNs come from 0/0
    src = "let a = [[1, -2, 0], [0, 3.5, -0.0]] / [[1, 1, 0], [1, 1, 1]]\n" \
          "let b = [[1, 3.5, 0]] / [[1, 1, 0]]\nlet c = [[0], [3.5]]\n" \
          "print a %s b\nprint a %s c\nprint b %s c\nprint a %s 0\nprint 3.5 %s a" % ((op,) * 5)
    got = run(src)
    want = [f(A23, B13), f(A23, C21), f(B13, C21), f(A23, 0.0), f(3.5, A23)]
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.tolist() == w.astype(np.float64).tolist()


def test_logical_operators_broadcast_and_count_nan_as_true():
    x = np.array([1.0, 0.0, 2.0, np.nan, -0.0])
    y = np.array([[1.0], [0.0]])
    truth = lambda v: (v != 0) | np.isnan(v)               # noqa: E731
    src = "let x = [1, 0, 2, 0, -0.0] / [1, 1, 1, 0, 1]\nlet y = [[1], [0]]\nprint x and y\nprint x or y\nprint not x"
    a, o, n = run(src)
    assert a.tolist() == (truth(x) & truth(y)).astype(float).tolist()
    assert o.tolist() == (truth(x) | truth(y)).astype(float).tolist()
    assert n.tolist() == (~truth(x)).astype(float).tolist()


@pytest.mark.parametrize("expr, want", [
    ("2 and 3", 1.0), ("0 and 0/0", 0.0), ("0/0 and 1", 1.0), ("0/0 or 0", 1.0),
    ("not 0/0", 0.0), ("not not 7", 1.0), ("0 or -0.0", 0.0),
])
def test_logical_operators_on_scalars_give_zero_or_one(expr, want):
    assert scalars(run("print " + expr)) == [want]


def test_comparisons_with_nan_and_signed_zero():
    got = scalars(run("let n = 0/0\nprint n == n\nprint n != n\nprint n < 1\nprint n >= n\n"
                      "print -0.0 == 0\nprint -0.0 < 0"))
    assert got == [0.0, 1.0, 0.0, 0.0, 1.0, 0.0]


def _py_mod(a, b):
    try:
        return a % b
    except ZeroDivisionError:
        return math.nan


def _same_float(x, y):
    if math.isnan(x) or math.isnan(y):
        return math.isnan(x) and math.isnan(y)
    return x == y and math.copysign(1.0, x) == math.copysign(1.0, y)


MOD_VALUES = [0.0, -0.0, 1.0, -1.0, 7.0, -7.0, 2.5, -2.5, 3.0, -3.0, math.inf, -math.inf, 1e300,
              -1e-300]


def test_modulo_follows_pythons_sign_rules_on_a_grid():
    def goat_num(v):
        if math.isinf(v):
            return "(1/0)" if v > 0 else "(-1/0)"
        return "(%r)" % v
    pairs = list(itertools.product(MOD_VALUES, MOD_VALUES))
    src = "\n".join("print %s %% %s" % (goat_num(a), goat_num(b)) for a, b in pairs)
    got = scalars(run(src))
    bad = [(a, b, g, _py_mod(a, b)) for (a, b), g in zip(pairs, got)
           if not _same_float(g, _py_mod(a, b))]
    assert bad == []


@pytest.mark.parametrize("expr, want", [
    ("7 % 3", 1.0), ("-7 % 3", 2.0), ("7 % -3", -2.0), ("-7 % -3", -1.0), ("7.5 % 2", 1.5),
    ("6 % -3", -0.0), ("-6 % 3", 0.0),
])
def test_modulo_examples(expr, want):
    (got,) = scalars(run("print " + expr))
    assert _same_float(got, want)


def test_modulo_by_zero_is_nan():
    got = scalars(run("print 5 % 0\nprint -5 % 0\nprint 0 % 0\nprint 5 % -0.0"))
    assert all(math.isnan(g) for g in got)


def test_modulo_broadcasts_like_numpy():
    a = np.array([[-7.0, 7.0, 2.5], [0.5, -0.5, 9.0]])
    b = np.array([[3.0], [-2.0]])
    got = run("print %s %% %s" % (lit(a), lit(b)))[0]
    assert got.tolist() == np.remainder(a, b).tolist()


@pytest.mark.parametrize("expr, want", [
    ("2 + 3 % 2", 2 + 3 % 2),                   # % binds tighter than +
    ("2 * 3 % 4", (2 * 3) % 4),                 # * and % share a level, left to right
    ("7 % 4 * 2", (7 % 4) * 2),
    ("-5 % 3 + 1", ((-5) % 3) + 1),
    ("1 + 2 < 4", float(1 + 2 < 4)),            # comparison below + -
    ("2 * 3 == 6", 1.0),
    ("not 1 == 2", 1.0),                        # not below comparison
    ("not 2 < 1", 1.0),
    ("not 0 and 0", 0.0),                       # not above and
    ("not 0 or 0", 1.0),
    ("1 or 0 and 0", 1.0),                      # and above or
    ("0 and 0 or 1", 1.0),
    ("0 or 1 and 0", 0.0),
    ("1 < 2 and 2 < 1 or 1", 1.0),
    ("not 1 + -1", 1.0),                        # not (1 + -1)
    ("(1 < 2) < 3", 1.0),                       # grouping makes a chain legal
    ("8 / 2 % 3", (8 / 2) % 3),
])
def test_precedence(expr, want):
    assert scalars(run("print " + expr)) == [float(want)]


def test_unary_minus_binds_tighter_than_modulo():
    assert scalars(run("let x = 7\nprint -x % 3\nprint -(x % 3)")) == [(-7) % 3, -(7 % 3)]


def test_compound_assignment_applies_to_the_whole_right_side():
    assert scalars(run("var x = 2\nx *= 2 + 1\nprint x\nx -= 1 - 1\nprint x\nx /= 2 * 3\nprint x")) \
        == [6.0, 6.0, 1.0]


@pytest.mark.parametrize("src", ["print 1 < 2 < 3", "print 1 == 1 == 1", "print 1 < 2 >= 0"])
def test_comparisons_do_not_chain(src):
    e = error(src)
    assert e.line == 1 and e.message.startswith("syntax error")


@pytest.mark.parametrize("src, verb", [
    ("print [1, 2] < [1, 2, 3]", "compare"),
    ("print [1, 2] % [1, 2, 3]", "remainder"),
    ("print [1, 2] and [1, 2, 3]", "and"),
    ("print [1, 2] or [1, 2, 3]", "or"),
])
def test_operator_shape_mismatch_is_a_static_error(src, verb):
    e = error("print 0\n" + src)
    assert e.line == 2 and verb in e.message and "shapes 2 and 3" in e.message


# =========================================================================== 5. format print

@pytest.mark.parametrize("x", [1 / 3, 100000.0, 1000000.0, 1e-5, 1e-4, 123456789.0, -0.0, 0.0,
                               2.5, -1e300, 5e-324, math.inf, -math.inf, 1e16, 0.1 + 0.2])
def test_default_format_is_c_percent_g(x):
    expr = {math.inf: "1/0", -math.inf: "-1/0"}.get(x, "(%r)" % x)
    assert run('print "<{%s}>"' % expr) == ["<%s>" % ("%g" % x)]


def _c_printf(fmt, x):
    import ctypes
    import ctypes.util
    libc = ctypes.CDLL(ctypes.util.find_library("c") or None)
    buf = ctypes.create_string_buffer(256)
    libc.snprintf(buf, 256, fmt.encode(), ctypes.c_double(x))
    return buf.value.decode()


@pytest.mark.skipif(not os.path.exists("/lib/x86_64-linux-gnu/libc.so.6")
                    and not os.path.exists("/usr/lib/x86_64-linux-gnu/libc.so.6"),
                    reason="compares with glibc's printf")
def test_format_fields_match_glibc_printf():
    with np.errstate(invalid="ignore"):
        nan = float(np.divide(0.0, 0.0))                 # sign bit set, as on x86
    cases = [("0/0", nan), ("-(0/0)", -nan), ("1/0", math.inf), ("(1/3)", 1 / 3),
             ("(-2.5e-7)", -2.5e-7), ("123456789", 123456789.0)]
    for spec, cfmt in [("", "%g"), (":.3f", "%.3f"), (":8.3f", "%8.3f"), (":+.2e", "%+.2e"),
                       (":<8g", "%-8g"), (":G", "%G"), (":.12g", "%.12g")]:
        for expr, x in cases:
            assert run('print "{%s%s}"' % (expr, spec)) == [_c_printf(cfmt, x)], (expr, spec)


def test_default_format_of_nans_is_glibcs():
    got = run('print "{0/0} {-(0/0)}"')[0]
    with np.errstate(invalid="ignore"):
        a, b = float(np.divide(0.0, 0.0)), float(-np.divide(0.0, 0.0))
    assert got == "%s %s" % (format_number(a), format_number(b))
    assert sorted(got.split()) == ["-nan", "nan"]


@pytest.mark.parametrize("field, value, spec", [
    ("x:.3f", 1 / 3, ".3f"), ("x:e", 1 / 3, "e"), ("x:>10.4", 1 / 3, ">10.4"),
    ("x:+.2f", 2.0, "+.2f"), ("x:08.3f", -3.14159, "08.3f"), ("x:.2%", 0.256, ".2%"),
    ("x:,.1f", 1234567.0, ",.1f"), ("x:.10g", 1 / 7, ".10g"), ("x:E", 12345.678, "E"),
])
def test_format_specs_follow_pythons_mini_language(field, value, spec):
    assert run('let x = %r\nprint "[{%s}]"' % (value, field)) == ["[%s]" % format(value, spec)]


def test_integer_specs_need_whole_numbers():
    assert run('for i in 7..9 { print "{i:03d}|{i:x}|{i:b}" }') == \
        ["%03d|%x|%s" % (i, i, format(i, "b")) for i in (7, 8)]
    e = error('print 1\nprint "{2.5:d}"')
    assert e.line == 2 and "2.5" in e.message and "whole number" in e.message


def test_width_without_type_is_percent_g_padded():
    assert run('print "[{(1/3):>10}]"') == ["[%10s]" % ("%g" % (1 / 3))]


def test_braces_are_escaped_by_doubling():
    assert run('let a = 5\nprint "{{a}} = {a} }}{{"') == ["{a} = 5 }{"]


def test_text_without_fields_and_escapes():
    assert run('print "plain\\ttext \\"q\\""') == ['plain\ttext "q"']


def test_fields_with_comparisons_and_calls():
    assert run('print "{1 != 2} {(1 < 2) and 1} {row_sum([[1, 2]])} {3 % 2}"') == ["1 1 3 1"]


def test_a_field_that_is_not_one_element_is_a_static_error():
    result, text = run_out('print 1\nprint "v = {[1, 2]}"')
    assert isinstance(result, goat.GoatError)
    assert result.line == 2
    assert "single number" in result.message and "shape 2" in result.message
    assert text == ""                                  # static: nothing ran


def test_a_one_element_matrix_is_a_valid_field():
    assert run('print "{[[2.5]]}"') == ["2.5"]


def test_an_unknown_shaped_field_is_checked_when_it_runs(tmp_path):
    src = ('def f(a: tensor[?x2]) = a\nlet y = f([[1, 2]])\nprint "{row_sum(y)}"\n'
           + unknown(tmp_path, "z", [[1, 2], [3, 4]], "?x2") + 'print "before"\nprint "{row_sum(z)}"')
    result, text = run_out(src)
    assert isinstance(result, goat.GoatError)
    assert result.line == 6 and "2x1" in result.message
    assert text == "3\nbefore\n"


@pytest.mark.parametrize("src, words", [
    ('print "{1:s}"', "s formats text"),
    ('print "{}"', "empty {}"),
    ('print "a } b"', "lone }"),
    ('print "a { b"', "unclosed {"),
    ('print "{x!r}"', "conversions"),
])
def test_format_string_mistakes_are_static_errors(src, words):
    e = error("print 0\n" + src)
    assert e.line == 2 and words in e.message


def test_format_print_of_unknown_name_is_an_error():
    e = error('print "{nope}"')
    assert e.line == 1 and "unknown name 'nope'" in e.message


# =========================================================================== 6. load / save

def _write_run(tmp_path, src, name="p.mg"):
    path = tmp_path / name
    path.write_text(src)
    return goat.run_file(str(path))


def test_save_then_load_round_trip(tmp_path):
    a = np.arange(6.0).reshape(2, 3) / 7
    np.save(tmp_path / "a.npy", a)
    src = ('let x: tensor[2x3] = load("a.npy")\nprint x\nlet y = load("a.npy", tensor[2x3])\n'
           'save(x * 2 + y, "out.npy")\nlet z: tensor[?x3] = load("out.npy")\nprint z')
    x, z = _write_run(tmp_path, src)
    assert x.tobytes() == a.tobytes()
    assert z.tobytes() == (a * 2 + a).tobytes()
    saved = np.load(tmp_path / "out.npy", allow_pickle=False)
    assert saved.dtype == np.float64 and saved.tobytes() == (a * 2 + a).tobytes()


def test_load_converts_integers_and_booleans(tmp_path):
    np.save(tmp_path / "i.npy", np.array([[-3, 4]], dtype=np.int32))
    np.save(tmp_path / "b.npy", np.array([True, False]))
    i, b = _write_run(tmp_path, 'let i: tensor[1x2] = load("i.npy")\nprint i\n'
                                'print load("b.npy", tensor[2])')
    assert i.tolist() == [[-3.0, 4.0]] and b.tolist() == [1.0, 0.0]


def test_load_path_is_relative_to_the_program_folder(tmp_path, monkeypatch):
    sub = tmp_path / "prog"
    (sub / "data").mkdir(parents=True)
    np.save(sub / "data" / "v.npy", np.array([1.5, 2.5]))
    monkeypatch.chdir(tmp_path)                        # not the program's folder
    (got,) = _write_run(sub, 'let v: tensor[2] = load("data/v.npy")\nprint v')
    assert got.tolist() == [1.5, 2.5]


def test_string_source_paths_are_relative_to_the_current_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    np.save(tmp_path / "w.npy", np.array([[4.0]]))
    (got,) = goat.run_source('save(load("w.npy", tensor[1x1]) + 1, "w2.npy")\n'
                             'print load("w2.npy", tensor[1x1])')
    assert got.tolist() == [[5.0]]
    assert np.load(tmp_path / "w2.npy").tolist() == [[5.0]]


def test_save_and_load_in_a_loop_see_each_other(tmp_path):
    src = ('var acc = [0]\nfor i in 0..4 {\n  save([1, 1] * i, "k.npy")\n'
           '  let v: tensor[2] = load("k.npy")\n  acc += row_sum(v)\n}\nprint acc')
    assert _write_run(tmp_path, src)[0].tolist() == [float(sum(2 * i for i in range(4)))]
    assert np.load(tmp_path / "k.npy").tolist() == [3.0, 3.0]


def test_load_before_save_in_a_loop_reads_the_previous_iteration(tmp_path):
    src = ('save([5, 5], "m.npy")\nvar acc = [0]\nfor i in 0..3 {\n'
           '  acc += row_sum(load("m.npy", tensor[2]))\n  save([1, 1] * i, "m.npy")\n}\nprint acc')
    # iteration 0 reads [5, 5], 1 reads [0, 0], 2 reads [1, 1]
    assert _write_run(tmp_path, src)[0].tolist() == [12.0]


def test_a_def_that_loads_reads_the_file_at_each_call(tmp_path):
    src = ('def f() = load("m.npy", tensor[2])\nsave([1, 2], "m.npy")\nprint f()\n'
           'save([3, 4], "m.npy")\nprint f()')
    a, b = _write_run(tmp_path, src)
    assert a.tolist() == [1.0, 2.0] and b.tolist() == [3.0, 4.0]


def test_two_loads_of_one_file_around_a_save_differ(tmp_path):
    src = ('save([1, 2], "m.npy")\nprint load("m.npy", tensor[2])\nsave([3, 4], "m.npy")\n'
           'print load("m.npy", tensor[2])')
    a, b = _write_run(tmp_path, src)
    assert a.tolist() == [1.0, 2.0] and b.tolist() == [3.0, 4.0]


def test_save_is_atomic_and_leaves_no_temporary_files(tmp_path):
    np.save(tmp_path / "s.npy", np.zeros(3))
    src = 'for i in 0..5 {\n  save(ones(tensor[3]) * i, "s.npy")\n}\nsave([[1]], "t.npy")'
    _write_run(tmp_path, src)
    assert sorted(os.listdir(tmp_path)) == ["p.mg", "s.npy", "t.npy"]
    assert np.load(tmp_path / "s.npy").tolist() == [4.0, 4.0, 4.0]


def _load_error(tmp_path, src):
    with pytest.raises(goat.GoatError) as info:
        _write_run(tmp_path, src)
    return info.value


def test_load_of_a_missing_file_is_a_runtime_error(tmp_path):
    (tmp_path / "p.mg").write_text('print 1\nlet x: tensor[3] = load("missing.npy")\nprint x')
    out = io.StringIO()
    with pytest.raises(goat.GoatError) as info:
        goat.run_file(str(tmp_path / "p.mg"), stdout=out)
    e = info.value
    assert e.line == 2 and "cannot load missing.npy" in e.message and "no such file" in e.message
    assert out.getvalue().count("Unranked Memref") == 1        # the print before it ran


def test_load_of_the_wrong_shape_is_an_error(tmp_path):
    np.save(tmp_path / "a.npy", np.zeros((2, 3)))
    e = _load_error(tmp_path, 'let x: tensor[3x2] = load("a.npy")\nprint x')
    assert e.line == 1 and "2x3" in e.message and "tensor[3x2]" in e.message


def test_load_of_the_wrong_dtype_is_an_error(tmp_path):
    np.save(tmp_path / "c.npy", np.zeros(3, dtype=np.complex128))
    e = _load_error(tmp_path, 'let x: tensor[3] = load("c.npy")\nprint x')
    assert e.line == 1 and "complex" in e.message


def test_load_never_unpickles(tmp_path):
    np.save(tmp_path / "o.npy", np.array([{"a": 1}], dtype=object), allow_pickle=True)
    e = _load_error(tmp_path, 'let x: tensor[1] = load("o.npy")\nprint x')
    assert e.line == 1 and "pickle" in e.message


def test_load_of_a_truncated_file_is_an_error(tmp_path):
    np.save(tmp_path / "a.npy", np.arange(6.0))
    data = (tmp_path / "a.npy").read_bytes()
    (tmp_path / "t.npy").write_bytes(data[:-8])
    e = _load_error(tmp_path, 'let x: tensor[6] = load("t.npy")\nprint x')
    assert e.line == 1 and "truncated" in e.message


def test_load_without_a_shape_is_a_static_error():
    e = error('let x = load("a.npy")')
    assert e.line == 1 and "load takes 2 arguments" in e.message and "let x: tensor" in e.message


# =========================================================================== 7. shapes and draws

def test_reshape_rereads_cells_in_row_major_order():
    x = np.arange(1.0, 25.0).reshape(4, 6)
    got = run(f"let x = {lit(x)}\nprint reshape(x, tensor[2x3x4])\nlet q: tensor[3x8] = reshape(x)\n"
              "print q\nprint reshape(x, tensor[?x12])\nprint reshape(x, tensor[24])")
    want = [x.reshape(2, 3, 4), x.reshape(3, 8), x.reshape(2, 12), x.reshape(24)]
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.tolist() == w.tolist()


def test_reshape_question_mark_is_worked_out_statically():
    program = goat.check_source("let x = [[1, 2, 3], [4, 5, 6]]\nlet a = reshape(x, tensor[?x2])")
    assert program.lets["a"].shape == (3, 2)


def test_reshape_question_mark_that_does_not_divide_is_an_error():
    e = error("let x = [[1, 2, 3], [4, 5, 6]]\nlet a = reshape(x, tensor[?x4])")
    assert e.line == 2 and "6 cells" in e.message


def test_reshape_two_question_marks_is_an_error():
    e = error("let x = [[1, 2, 3], [4, 5, 6]]\nlet a = reshape(x, tensor[?x?])")
    assert e.line == 2 and "at most one ?" in e.message


def test_reshape_of_unknown_shape_is_checked_when_it_runs(tmp_path):
    src = ('def f(a: tensor[?x3]) = reshape(a, tensor[?x2])\nprint f([[1, 2, 3], [4, 5, 6]])\n'
           'print "ok"\n' + unknown(tmp_path, "r", [[1, 2, 3]], "?x3").rstrip("\n") + "; print f(r)")
    result, text = run_out(src)
    assert isinstance(result, goat.GoatError)
    assert result.line == 1 and "3 cells" in result.message
    assert "ok\n" in text and "sizes = [3, 2]" in text


def test_zeros_and_ones():
    z, o, s = run("print zeros(tensor[2x3])\nprint ones(tensor[3])\nprint zeros(tensor[])")
    assert z.shape == (2, 3) and z.tolist() == np.zeros((2, 3)).tolist()
    assert o.tolist() == [1.0, 1.0, 1.0]
    assert s.shape == () and float(s) == 0.0


def test_zeros_need_a_known_shape():
    e = error("let s = zeros(tensor[?x3])")
    assert e.line == 1 and "every size" in e.message


def test_zeros_by_annotation():
    (z,) = run("let z: tensor[2x2] = zeros()\nprint z")
    assert z.tolist() == [[0.0, 0.0], [0.0, 0.0]]


@pytest.mark.parametrize("shape, axis", [((2, 3), 0), ((2, 3), 1), ((2, 3, 4), 1), ((2, 3, 4), -1),
                                         ((5,), 0)])
def test_iota_matches_numpy_indices(shape, axis):
    (got,) = run("print iota(tensor[%s], %d)" % ("x".join(map(str, shape)), axis))
    want = np.indices(shape)[axis % len(shape)].astype(np.float64)
    assert got.shape == shape and got.tolist() == want.tolist()


def test_iota_axis_out_of_range_is_an_error():
    e = error("let s = iota(tensor[2x3], 2)")
    assert e.line == 1 and "axis 2" in e.message


def test_iota_axis_error_names_the_type_once():
    e = error("let s = iota(tensor[2x3], 2)")
    assert "tensor tensor" not in e.message


def test_causal_mask_from_iota_and_comparison():
    (m,) = run("print ((iota(tensor[4x4], 1) <= iota(tensor[4x4], 0)) - 1) * 1000000000")
    r, c = np.indices((4, 4))
    assert m.tolist() == (((c <= r).astype(float) - 1) * 1e9).tolist()


# --- rand / randn: an independent SplitMix64 from the recipe in goat/ops/rng.py's docstring
_MASK = (1 << 64) - 1


def _mix(z):
    z &= _MASK
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK
    return z ^ (z >> 31)


def _hi(key, c):
    return _mix(key + c * 0x9E3779B97F4A7C15) >> 11


def ref_rand(n, seed):
    key = _mix((1 << 53) | seed)
    return [_hi(key, k + 1) * 2.0 ** -53 for k in range(n)]


def ref_randn_approx(n, seed):
    key = _mix((2 << 53) | seed)
    out = []
    for k in range(n):
        u1 = (_hi(key, 2 * k + 1) + 1) * 2.0 ** -53
        n2 = _hi(key, 2 * k + 2)
        out.append(math.sqrt(-2.0 * math.log(u1)) * math.cos(2 * math.pi * (n2 / 2.0 ** 53)))
    return out


def test_rand_matches_splitmix64_exactly():
    (got,) = run("print rand(tensor[3x4], 42)")
    assert got.shape == (3, 4)
    assert got.ravel().tolist() == ref_rand(12, 42)


def test_randn_matches_box_muller():
    (got,) = run("print randn(tensor[2x5], 9)")
    assert np.allclose(got.ravel(), ref_randn_approx(10, 9), rtol=0, atol=1e-13)
    assert got.tobytes() == rng.normal(np, (2, 5), 9).tobytes()


def test_draws_are_deterministic_across_runs():
    src = "print rand(tensor[5], 3)\nprint randn(tensor[5], 3)"
    a = run(src)
    b = run(src)
    assert a[0].tobytes() == b[0].tobytes() and a[1].tobytes() == b[1].tobytes()


def test_draws_depend_on_the_cell_index_not_the_shape():
    got = run("print rand(tensor[2x3], 7)\nprint rand(tensor[6], 7)\nprint rand(tensor[10], 7)\n"
              "print randn(tensor[2x3], 7)\nprint randn(tensor[6], 7)")
    assert got[0].shape == (2, 3) and got[1].shape == (6,)
    assert got[0].ravel().tolist() == got[1].tolist() == got[2][:6].tolist()
    assert got[3].ravel().tolist() == got[4].tolist()


def test_different_seeds_and_streams_differ():
    a, b, c = run("print rand(tensor[8], 1)\nprint rand(tensor[8], 2)\nprint randn(tensor[8], 1)")
    assert len(set(a.tolist()) & set(b.tolist())) == 0
    assert a.tolist() != c.tolist()


def test_randn_shape_from_the_annotation():
    a, b = run("let w: tensor[4x8] = randn(3)\nprint w\nprint randn(tensor[4x8], 3)")
    assert a.shape == (4, 8) and a.tobytes() == b.tobytes()


def test_large_draws_have_sane_moments():
    u, n = run("print rand(tensor[100x100], 11)\nprint randn(tensor[100x100], 11)")
    assert u.min() >= 0.0 and u.max() < 1.0
    assert abs(u.mean() - 0.5) < 0.01 and abs(u.std() - math.sqrt(1 / 12)) < 0.01
    assert abs(n.mean()) < 0.03 and abs(n.std() - 1.0) < 0.03
    assert np.isfinite(n).all() and np.abs(n).max() < 8.6


@pytest.mark.parametrize("seed", ["-1", "2.5", "0/0", "9007199254740992"])
def test_bad_seeds_are_runtime_errors(seed):
    e = error("print 0\nlet s = %s\nprint rand(tensor[2], s)" % seed)
    assert e.line == 3 and "seed must be a whole number" in e.message


def test_a_seed_must_be_one_number():
    e = error("print rand(tensor[2], [1, 2])")
    assert e.line == 1 and "seed" in e.message and "shape 2" in e.message


# =========================================================================== blocks in defs

def test_block_def_with_loop_if_and_var():
    src = """def powsum(x: tensor[N, K], n: scalar) -> tensor[N, K] {
  var acc = zeros(tensor[N, K])
  var t = ones(tensor[N, K])
  for i in 0..n {
    t = t * x
    if i % 2 == 0 { acc += t } else { acc -= t }
  }
  return acc
}
print powsum([[2, 3]], 3)
print powsum([[1], [2]], 0)
print powsum([[0.5, -1, 2]], 5)
"""
    def ref(x, n):
        acc, t = np.zeros_like(x), np.ones_like(x)
        for i in range(n):
            t = t * x
            acc = acc + t if i % 2 == 0 else acc - t
        return acc
    got = run(src)
    for g, (x, n) in zip(got, [([[2.0, 3.0]], 3), ([[1.0], [2.0]], 0), ([[0.5, -1.0, 2.0]], 5)]):
        w = ref(np.array(x), n)
        assert g.shape == w.shape and g.tolist() == w.tolist()


def test_block_def_returns_a_tuple_both_ways():
    src = """def split(x: tensor[N, K]) -> (tensor[N, 1], tensor[1, K]) {
  return row_sum(x), col_sum(x)
}
def split2(x: tensor[N, K]) {
  let r = row_sum(x)
  return (r, col_sum(x))
}
let r, c = split([[1, 2], [3, 4]])
print r
print c
let r2, c2 = split2([[1, 2], [3, 4]])
print r2
print c2
let _, only = split([[1, 2, 3]])
print only
"""
    r, c, r2, c2, only = run(src)
    x = np.array([[1.0, 2.0], [3.0, 4.0]])
    assert r.tolist() == r2.tolist() == x.sum(1, keepdims=True).tolist()
    assert c.tolist() == c2.tolist() == x.sum(0, keepdims=True).tolist()
    assert only.tolist() == [[1.0, 2.0, 3.0]]


def test_a_def_called_in_a_loop_carries_through_its_own_loop():
    src = """def f(q: scalar) {
  var t = q
  for i in 0..3 { t = t * 2 }
  return t
}
var z = 1
for k in 0..3 { z = f(z) + 1 }
print z
"""
    z = 1
    for _ in range(3):
        z = z * 8 + 1
    assert scalars(run(src)) == [float(z)]


def test_a_def_with_a_print_prints_at_every_call():
    src = 'def show(a: scalar) {\n  print "show {a}"\n  return a\n}\n' \
          'let u = show(1)\nlet v = show(1)\nfor i in 0..2 { let w = show(7 + i) }'
    assert run(src) == ["show 1", "show 1", "show 7", "show 8"]


def test_tuple_let_in_a_loop_body():
    src = "def f(q: scalar) = (q, q * 10)\nvar s = 0\nfor i in 0..4 { let u, v = f(i); s += u + v }\nprint s"
    assert scalars(run(src)) == [float(sum(i + 10 * i for i in range(4)))]


def test_block_def_on_one_line():
    assert scalars(run("def f(a: scalar) { return a * 3 }\nprint f(3)")) == [9.0]


def test_block_def_with_unknown_rows_carries_a_var():
    src = ("def f(a: tensor[?x2]) {\n  var t = a\n  for i in 0..3 {\n    t = t + a\n  }\n"
           "  return t\n}\nprint f([[1, 2], [3, 4], [5, 6]])")
    a = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    assert run(src)[0].tolist() == (a + a + a + a).tolist()


# =========================================================================== 8. the checked program

def _loop_program(n):
    return ("var x = [[1, 2]]\nfor i in 0..%d {\n  let y = x * 0.5 + i\n  x = y - 1\n}\nprint x\n"
            % n)


def test_checked_program_size_does_not_grow_with_the_trip_count():
    small = sum(1 for _ in goat.check_source(_loop_program(10)).walk())
    large = sum(1 for _ in goat.check_source(_loop_program(1000)).walk())
    assert small == large
    assert small < 30


def test_loop_program_values_for_two_trip_counts():
    for n in (10, 1000):
        x = np.array([[1.0, 2.0]])
        for i in range(n):
            x = (x * 0.5 + i) - 1
        assert run(_loop_program(n))[0].tobytes() == x.tobytes()


OUTLINE_PROGRAM = """let a = [[1, 2], [3, 4]]
var w: tensor[2x2] = zeros(tensor[2x2])
def f(x: tensor[N, K]) -> tensor[N, K] {
  let y = x * 2
  return y
}
for i in 0..3 {
  let g = f(a) + w
  if i % 2 == 0 {
    w = g
  } else {
    let h = g * 0
    w = h - 1
  }
}
let s = row_sum(w)
print w
"""


def test_check_shapes_outline_of_a_loop_and_an_if(tmp_path):
    (tmp_path / "o.mg").write_text(OUTLINE_PROGRAM)
    status, out, err = cli("check", "--shapes", "o.mg", cwd=str(tmp_path))
    assert status == 0 and err == ""
    assert out == (
        "a : tensor[2x2]\n"
        "var w : tensor[2x2]\n"
        "def f(x: tensor[N, K]) -> tensor[N, K]\n"
        "  y : tensor[N, K]\n"
        "for i in 0..3\n"
        "  g : tensor[2x2]\n"
        "  if i % 2 == 0\n"
        "  else\n"
        "    h : tensor[2x2]\n"
        "s : tensor[2x1]\n")


def test_check_shapes_outline_of_a_def_with_leading_axes():
    """A def over tensor[..., N, C] had shown its locals without the ... (h : tensor[N, C],
    a 2-d shape), though its signature kept it; a local whose ... cannot be written (a
    reshape folds it) shows as the def's check with no leading axes sees it."""
    program = goat.check_source(
        "def k(a: tensor[...]) {\n    let h = a * 2\n    return h\n}\n"
        "def n(a: tensor[..., N, K], w: tensor[K, M]) {\n    let h = a @ w\n"
        "    let t = transpose(h)\n    let g = grad(col_sum(row_sum(reshape(h, tensor[1x?]))), w)\n"
        "    return h\n}\n"
        "def r(a: tensor[..., N, C]) {\n    let flat = reshape(a, tensor[?x1])\n"
        "    return flat\n}\n")
    assert program.outline == [
        (0, "def k(a: tensor[...]) -> tensor[...]"), (1, "h : tensor[...]"),
        (0, "def n(a: tensor[..., N, K], w: tensor[K, M]) -> tensor[..., N, M]"),
        (1, "h : tensor[..., N, M]"), (1, "t : tensor[..., M, N]"), (1, "g : tensor[K, M]"),
        (0, "def r(a: tensor[..., N, C]) -> tensor[?x1]"), (1, "flat : tensor[?x1]")]


def test_outline_program_values():
    a = np.array([[1.0, 2.0], [3.0, 4.0]])
    w = np.zeros((2, 2))
    for i in range(3):
        g = a * 2 + w
        w = g if i % 2 == 0 else g * 0 - 1
    assert run(OUTLINE_PROGRAM)[0].tolist() == w.tolist()


def test_check_shapes_outline_of_one_line_blocks():
    program = goat.check_source("var s = 0\nfor i in 0..3 { let t = i * 2; s += t }\n"
                                "if s > 1 { let u = s } else { let v = 0 }\n")
    assert program.outline == [(0, "var s : scalar"), (0, "for i in 0..3"), (1, "t : scalar"),
                               (0, "if s > 1"), (1, "u : scalar"), (0, "else"),
                               (1, "v : scalar = 0")]


def test_check_shapes_outline_ignores_a_comment_after_the_brace():
    program = goat.check_source("for i in 0..3 {   # count\n  let t = i\n}\n")
    assert program.outline[0] == (0, "for i in 0..3")


def test_repl_session_runs_a_multi_line_loop_and_an_if():
    out = io.StringIO()
    s = Session(out=out)
    s.run("var x = 0")
    results = s.run("for i in 0..4 {\n  x += i\n  print i\n}")
    assert [r.kind for r in results] == ["block"]
    assert float(s.run("x")[0].value) == float(sum(range(4)))
    s.run("if x > 5 {\n  x = x * 10\n} else {\n  x = 0\n}")
    assert float(s.run("x")[0].value) == 60.0
    assert out.getvalue().count("Unranked Memref") == 4
    s.run('print "x is {x}"')
    assert out.getvalue().endswith("x is 60\n")


def test_repl_session_runs_a_loop_and_an_if_given_as_one_input():
    s = Session(out=io.StringIO())
    results = s.run("var x = 1\nfor i in 1..5 {\n  x *= i\n}\nif x == 24 {\n  x += 1\n} else {\n"
                    "  x = 0\n}\nx")
    assert [r.kind for r in results] == ["var", "block", "block", "value"]
    assert float(results[-1].value) == float(math.factorial(4) + 1)


def test_repl_session_describes_a_var():
    s = Session(out=io.StringIO())
    s.run("var acc = [[0, 0]]\nfor i in 0..3 { acc += [[1, 0]] * i + [[0, 1]] }")
    assert s.run("acc")[0].value.tolist() == [[3.0, 3.0]]
    assert s.describe("var z = acc * 2") == "var z : tensor[1x2]"
    assert s.describe("acc = acc * 3") == "acc : tensor[1x2]"
    assert s.describe("acc") == "tensor[1x2]"
    assert ("acc", "var tensor[1x2]") in s.names()
    assert s.run("acc")[0].value.tolist() == [[3.0, 3.0]]      # describing ran nothing


def test_repl_loop_that_fails_midway_is_taken_back():
    s = Session(out=io.StringIO())
    s.run("var x = 0")
    with pytest.raises(goat.GoatError) as info:
        s.run("for i in 0..3 {\n  x += 1\n  if i == 2 { print rand(tensor[1], -1) }\n}")
    assert info.value.line == 3
    assert float(s.run("x")[0].value) == 0.0
    s.run("for i in 0..3 {\n  x += 1\n}")
    assert float(s.run("x")[0].value) == 3.0


def test_repl_assignment_of_the_wrong_shape_keeps_the_var():
    s = Session(out=io.StringIO())
    s.run("var x = 5")
    with pytest.raises(goat.GoatError):
        s.run("x = [1, 2]")
    assert float(s.run("x")[0].value) == 5.0


# =========================================================================== 9. memory

def test_loop_temporaries_are_freed_each_iteration():
    src = """var acc = zeros(tensor[1x1])
let base = ones(tensor[1000x1000])
for i in 0..200 {
  let a = base * i
  let b = a + 1
  acc = acc + col_sum(row_sum(b * b)) * 0.000001
}
print acc
"""
    tracemalloc.start()
    try:
        (got,) = run(src)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    base = np.ones((1000, 1000))
    acc = np.zeros((1, 1))
    for i in range(200):
        b = base * i + 1
        acc = acc + (b * b).sum(axis=-1, keepdims=True).sum(axis=-2, keepdims=True) * 0.000001
    assert np.allclose(got, acc, rtol=1e-12, atol=0)
    assert peak < 80 * 1000 * 1000            # 200 iterations x 8 MB would be 1.6 GB


def test_a_defs_body_is_a_scope_of_its_own():
    """Its lets may reuse a name defined outside (as its parameters may), hiding it inside the
    body only; a block elsewhere may not define again a name around it."""
    assert scalars(run("let t = 1\ndef f(a: scalar) {\n  let t = a * 2\n  return t\n}\n"
                       "print f(5)\nprint t\n")) == [10.0, 1.0]
    e = error("let t = 1\nif 1 {\n  let t = 2\n}\n")
    assert e.line == 3 and "outside this block" in e.message


# ---------------------------------------------------------------------------- assert

def test_an_assert_that_holds_goes_on_and_one_that_fails_stops_with_its_message():
    src = ('var x = [[1.0, 2]]\nfor i in 0..5 {\n    x = x * 2\n'
           '    assert col_max(row_max(x)) < 20, "at step {i}: max {col_max(row_max(x)):.1f}"\n'
           '    print "{i}"\n}\n')
    out = io.StringIO()
    with pytest.raises(goat.GoatError) as info:
        goat.run_source(src, path="t.mg", stdout=out)
    # 2 * 2**(i + 1) < 20 holds for i = 0, 1, 2 (4, 8, 16) and fails at i = 3 (32)
    assert out.getvalue() == "0\n1\n2\n"
    assert (info.value.line, info.value.message) == (4, "at step 3: max 32.0")


@pytest.mark.parametrize("cond, holds", [("1", True), ("0", False), ("-0.0", False),
                                         ("0 / 0", True), ("[[0.5]]", True), ("[[1, 2]] == [[1, 3]]", None)])
def test_what_an_assert_takes_as_true(cond, holds):
    """As an if: any number but 0, a NaN too; the condition must be one number."""
    src = "assert %s\nprint 1\n" % cond
    if holds is None:
        e = error(src)
        assert e.message == ("an assert's condition must be a single number (one element), "
                             "got shape 1x2")
    elif holds:
        assert [v.item() for v in run(src)] == [1.0]
    else:
        e = error(src)
        assert (e.line, e.message) == (1, "assertion failed: " + cond)


def test_an_assert_in_a_def_is_reported_as_every_run_time_error_in_a_def():
    """At the assert, with the call in a note; in a library's def, at the program's call."""
    e = error("def half(n: scalar) {\n    assert n % 2 == 0, \"half of an odd {n}\"\n"
              "    return n / 2\n}\nprint half(4)\nprint half(7)\n")
    assert (e.line, e.message, e.notes) == (2, "half of an odd 7", ("in half, called on line 6",))
    e = error("import nn\nprint 1\nprint nn.dropout([[1.0]], 2, 3)\n")
    assert e.line == 3 and e.notes[0].startswith("in nn.dropout, at line ")


@pytest.mark.parametrize("src, said", [
    ("assert\n", "syntax error"),
    ("assert 1, 2\n", "syntax error"),
    ('assert(1 > 2, "m")\n', 'an assert is written without parentheses: assert COND, "message"'),
    ('assert 1, "{nope}"\n', "unknown name 'nope'"),
    ('let assert = 1\n', "syntax error"),
])
def test_an_assert_written_wrong_is_an_error_before_anything_runs(src, said):
    assert said in error("print 7\n" + src).message


def test_the_stdlib_refuses_the_numbers_it_cannot_use():
    """optim.adamw with t = 0 had made every weight NaN, silently; nn.dropout took any p."""
    e = error("import optim\nvar w = [[1.0, 2]]\nvar m = zeros(tensor[1x2])\n"
              "var v = zeros(tensor[1x2])\nfor step in 0..2 {\n"
              "    w, m, v = optim.adamw(w, w, m, v, step, 0.1, 0.9, 0.999, 1e-08, 0)\n}\n")
    assert e.line == 6 and e.message.startswith("optim.adamw's t numbers the steps from 1")
    assert "got 0: in a loop from 0, pass step + 1" in e.message
    for p in ("1.5", "-0.1", "0 / 0 * 0 - 2"):
        e = error("import nn\nprint nn.dropout([[1.0, 2]], %s, 3)\n" % p)
        assert e.line == 2 and e.message.startswith("nn.dropout's p is the probability")
    got = run("import nn\nprint nn.dropout([[1.0, 2]], 1, 3)\nprint nn.dropout([[1.0, 2]], 0, 3)\n")
    assert [g.tolist() for g in got] == [[[0.0, 0.0]], [[1.0, 2.0]]]


def test_every_error_after_a_failed_statement_an_assert_uses_is_skipped():
    e = error("let x = [[1, 2]] + [[1, 2, 3]]\nassert x, \"{x}\"\nassert y\n")
    assert [one.line for one in e.errors] == [1, 3]


def test_an_asserts_message_is_computed_only_when_it_fails():
    """As Python's: a field that cannot be computed (gather past the table) stops nothing
    while the assert holds; the message had been computed at every step."""
    src = ('let t = [[1.0], [2.0]]\nvar n = 0\nfor i in 0..4 {\n'
           '    assert i < 10, "row {i}: {gather(t, reshape(i, tensor[1x1]))} {i / 2:d}"\n'
           '    n += 1\n}\nprint n\n')
    assert [v.item() for v in run(src)] == [4.0]
    e = error(src.replace("i < 10", "i < 1"))
    assert e.line == 4 and e.message == "cannot format 0.5 with :d: it is not a whole number"


def test_an_asserts_condition_of_several_numbers_at_run_time_is_named_as_the_asserts():
    """A condition whose size a def's size variable leaves open is checked when it runs; it
    had been called "an if condition" (the assert's branch)."""
    e = error('def f(x: tensor[N, 1]) {\n    assert x, "m"\n    return x\n}\n'
              'print f([[1.0]])\nprint f([[1.0], [2.0]])\n')
    assert (e.line, e.message) == (
        2, "an assert's condition must be a single number (one element), got shape 2x1")
    assert "where(C, A, B)" not in error("let a = 1\nassert a, if\n").message


@pytest.mark.parametrize("aot", [False, True])
@pytest.mark.parametrize("index, shown", [
    ("-3", "-3"), ("5", "5"), ("2.5", "2.5"), ("2.0000000000000004", "2.0000000000000004"),
    ("1e300", "1e+300"), ("-0.5", "-0.5"), ("16777216", "16777216"),
])
def test_an_index_is_shown_as_written(tmp_path, index, shown, aot):
    """A bad index in the message keeps every digit (Python's repr) but not the ``.0`` of a
    whole number ("got -3", not "got -3.0"), in the interpreter and the AOT runtime alike."""
    if aot:
        pytest.importorskip("llvmlite")
    (tmp_path / "i.mg").write_text("let s = floor(rand(tensor[1x1], 1)) + %s\n"
                                   "print gather([[1, 2], [3, 4]], s)\n" % index)
    status, out, err = cli("run", *(["--aot"] if aot else []), "i.mg", cwd=str(tmp_path))
    assert (status, out) == (1, "")
    assert err.splitlines()[0] == ("i.mg:2: error: gather's indices must be whole numbers from 0 "
                                   "to 1, got %s at position 0" % shown)


@pytest.mark.parametrize("steps", [0, 3])
def test_a_loop_whose_fixed_bounds_give_no_iteration_takes_no_index(steps):
    """for step in 0..steps with steps = 0 (a dry run, --let steps=0): its body's subscripts
    by the index would be out of range, but none is ever taken -- the program runs, as
    NumPy's and PyTorch's loops would; with steps = 3 the same program fills every cell."""
    src = """let steps = %d
var losses = zeros(tensor[steps])
let X = zeros(tensor[4x2]) + 1
var total = 0
for step in 0..steps {
    losses[step] = step + 1
    total = total + sum(X[step * 8:(step + 1) * 8])
}
print losses
""" % steps
    if steps:
        e = error(src)                      # 3 steps take rows 0..8 of 4: an error before
        assert e.message == "the slice of 8 cells is longer than axis 0 of 4x2, which has 4"
        (losses,) = run(src.replace("X[step * 8:(step + 1) * 8]", "X[step:step + 1]"))
        assert losses.tolist() == [1, 2, 3]
    else:
        (losses,) = run(src)
        assert losses.shape == (0,)
    # a shape that is wrong whatever the index is still an error in a loop that never runs
    e = error("let X = zeros(tensor[4x2])\nfor k in 0..0 {\n    print X[k:k + 2] + "
              "zeros(tensor[3x2])\n}\n")
    assert e.message.startswith("cannot add shapes 2x2 and 3x2")


def test_grad_through_a_loop_with_no_iteration_over_an_empty_var():
    """A breaker's: with a grad in the program, the loop's copies (its tape and its reverse)
    and a def's loop over an empty argument's size took the index they never take."""
    src = """var x = zeros(tensor[0])
let w = [2.0]
for k in 0..0 { x[k] = w[0] }
print grad(sum(x) + w[0], w)
def f(x: tensor[N], w: tensor[1]) {
  var y = x
  for k in 0..size(x, 0) {
    y[k] = w[0] * 2
  }
  return sum(y) + w[0]
}
print grad(f(zeros(tensor[0]), w), w)
print grad(f(zeros(tensor[2]), w), w)
"""
    g0, g1, g2 = run(src)
    assert g0.tolist() == [1] and g1.tolist() == [1] and g2.tolist() == [5]   # d/dw of w, 5w


@pytest.mark.parametrize("bound, shown", [("1 / a", "inf"), ("0 / a", "-nan"),
                                           ("a - 1 / a", "-inf")])
def test_a_loop_bound_the_lets_make_infinite_or_nan_is_found_before_anything_runs(bound, shown):
    result, text = run_out("let a = 0\nprint 1\nfor j in 0..%s { print j }\n" % bound)
    assert isinstance(result, goat.GoatError) and text == ""
    assert result.message == "a loop bound must be a whole number, got " + shown


def test_a_loop_bound_that_shows_as_whole_says_every_digit(tmp_path):
    """A breaker's: 2.0000001 (or f32's 15.000001) printed %g reads 2: the message adds every
    digit, here and compiled."""
    src = "let h = row_sum([[2.0000001, 0]])\nfor i in 0..h { print i }\n"
    e = error(src)
    assert e.message == "a loop bound must be a whole number, got 2 (2.0000000999999998)"
    if importlib.util.find_spec("llvmlite") is not None:
        first, _ = run_error_in(tmp_path, src, aot=True)
        assert first.endswith("error: a loop bound must be a whole number, got 2 "
                              "(2.0000000999999998)")


def test_a_narrow_over_a_loop_in_a_def_is_checked_at_the_call_before_the_run():
    """From an earlier note: x[k * 2:(k + 1) * 2] for k in 0..5 in a def over 6 rows was
    found when it ran (after the output before it), where the same loop written outside a
    def is an error before the run; the call's copy of the loop has its bounds too."""
    src = ("def f(x: tensor[N, C]) {\n  var s = 0\n  for k in 0..5 {\n"
           "    s = s + sum(x[k * 2:(k + 1) * 2])\n  }\n  return s\n}\n"
           "print 1\nprint f(zeros(tensor[6, 3]))\n")
    with pytest.raises(goat.GoatError) as info:
        goat.check_source(src)
    e = info.value
    assert (e.line, e.message) == (4, "a slice's start must be a whole number from 0 to 4 (axis "
                                      "0 of 6x3 has 6 cells, the slice takes 2), got 8")
    assert e.notes == ("in f, called on line 9",
                       "it is 8 when k = 4 (over the loop it runs from 0 to 8)")
    (s,) = run(src.replace("zeros(tensor[6, 3])", "ones(tensor[10, 3])").replace("print 1\n", ""))
    assert float(s) == 30


def test_a_narrow_over_a_loop_that_may_not_run_is_left_to_the_run():
    """A breaker's: the call in a loop of no iterations (0..0, or a var's 0 when it runs) had
    been refused before the run; NumPy would never take that slice."""
    src = ("def f(x: tensor[N]) {\n  var s = 0\n  for k in 0..5 {\n"
           "    s += sum(x[k * 2:(k + 1) * 2])\n  }\n  return s\n}\nprint 1\n"
           "for i in 0..0 {\n  print f(iota(tensor[4], 0))\n}\nvar reps = 0\n"
           "for i in 0..reps {\n  print f(iota(tensor[4], 0))\n}\nprint 2\n")
    assert [float(v) for v in run(src)] == [1.0, 2.0]


def test_an_assignment_to_a_slice_over_a_loop_is_checked_before_the_run():
    """A breaker's: h[k * 2:k * 2 + 2] = k for k in 0..5 of 6 cells failed only at k = 3,
    after the output before it, where the read of the same slice is an error before the
    run; the put's start is checked as the narrow's."""
    e = error("print 1\nvar h = zeros(tensor[6])\nfor k in 0..5 {\n    h[k * 2:k * 2 + 2] = k\n}\n")
    assert (e.line, e.message) == (4, "a slice's start must be a whole number from 0 to 4 (axis "
                                      "0 of 6 has 6 cells, the slice takes 2), got 8")
    assert e.notes == ("it is 8 when k = 4 (over the loop it runs from 0 to 8)",)
    assert not getattr(e, "printed", None)
    (h,) = run("var h = zeros(tensor[10])\nfor k in 0..5 {\n    h[k * 2:k * 2 + 2] = k\n}\n"
               "print h\n")
    assert h.tolist() == [0, 0, 1, 1, 2, 2, 3, 3, 4, 4]


@pytest.mark.parametrize("bound, message", [
    ("7 / 2", "got 3.5"), ("n / b", "got 5.12"), ("n / 3", "got 170.667 (170.66666666666666)"),
    ("2.0000001 * 1", "got 2 (2.0000000999999998)")])
def test_a_computed_loop_bound_that_is_not_whole_is_said_once(bound, message):
    """A newcomer's: a bound the lets make (7 / 2) said 'got 3.5 (3.5)', and 5.12 as
    '5.12 (5.1200000000000001)'; every digit is added only where %g does not show it exactly, as
    the run (and the compiled program) says it: where %g rounds it."""
    e = error("let n = 512\nlet b = 100\nfor k in 0..%s { print k }\n" % bound)
    assert e.message == "a loop bound must be a whole number, " + message and e.loc.line == 3
