"""Shapes beyond the book's matrices: size variables, any rank, scalars, annotations."""
import numpy as np
import pytest

import goat
from conftest import error, run
from goat.typecheck.shapes import SizeVar, ShapeError, broadcast, format_shape, format_type, matmul

LINEAR = "def linear(x: tensor[N, K], w: tensor[K, M], b: tensor[1, M]) = x @ w + b\n"


def test_size_variables_are_bound_at_each_call():
    src = LINEAR + ("let y = linear([[1, 2, 3], [4, 5, 6]], [[1, 0], [0, 1], [1, 1]], [[0.5, -0.5]])\n"
                    "let z = linear([[1]], [[2, 3, 4]], [[1, 1, 1]])\nprint y\nprint z\n")
    program = goat.check_source(src)
    assert program.lets["y"].shape == (2, 2) and program.lets["z"].shape == (1, 3)
    y, z = run(src)
    x = np.array([[1, 2, 3], [4, 5, 6]], float)
    np.testing.assert_array_equal(y, x @ np.array([[1, 0], [0, 1], [1, 1]]) + [[0.5, -0.5]])
    np.testing.assert_array_equal(z, [[3, 4, 5]])


def test_inconsistent_size_variable_is_named():
    e = error(LINEAR + "print linear([[1, 2, 3]], [[1, 2]], [[0, 0]])")
    assert e.message == "size variable K is 3 for argument x of linear but 1 for argument w of linear"
    e = error("def sq(x: tensor[N, N]) = x\nprint sq([[1, 2, 3]])")
    assert e.message == "size variable N would be both 1 and 3 in argument x of sq"


def test_def_body_with_size_variables_is_checked_symbolically():
    e = error("def bad(x: tensor[N, K]) = x + [[1, 2, 3]]")
    assert e.message == "cannot add shapes NxK and 1x3: dimensions K and 3 may differ and neither is 1"
    e = error("def bad(x: tensor[N, K], y: tensor[N, M]) = x @ y")
    assert "inner dimensions K and N may differ" in e.message     # as + says of sizes K and 3


@pytest.mark.parametrize("body, line", [
    ("= zeros(tensor[M, K])", 1),
    ("-> tensor[M] = zeros(tensor[M])", 1),
    ("= ones(tensor[M]) + randn(tensor[K], 1)", 1),
    ("= iota(tensor[M, 2], 0)", 1),
    ("= reshape(x, tensor[M, ?])", 1),
    ("= onehot([[0]], tensor[1, M])", 1),
    ("{\n  let y: tensor[M] = zeros(tensor[K])\n  return y\n}", 2),
    ("{\n  var y: tensor[1, M] = zeros(tensor[1, K])\n  return y\n}", 2),
])
def test_a_size_variable_no_parameter_binds_is_a_static_error(body, line):
    """Nothing gives M a value (it had been accepted, and the run failed inside goat)."""
    src = "def f(x: tensor[N, K]) %s\nprint f([[1, 2]])\n" % body
    e = error(src)
    assert (e.line, e.message) == (line, "size variable M is not a size of any parameter of f, "
                                         "so no call gives it a value: write the size, use one "
                                         "of the parameters' sizes (K, N), or ? for a size "
                                         "known when it runs")
    assert e.loc.source.line(line)[e.loc.col - 1:].startswith("tensor[")
    e = error("def g(x: scalar) = zeros(tensor[M])\n")
    assert e.message == ("size variable M is not a size of any parameter of g, so no call gives "
                         "it a value: write the size, or ? for a size known when it runs")


@pytest.mark.parametrize("word", ["let", "def", "for", "tensor", "scalar"])
def test_a_reserved_word_cannot_name_a_size_variable(word):
    e = error("def f(x: tensor[%s, 2]) = x\n" % word)
    assert e.message == "'%s' is a reserved word and cannot name a size variable" % word


def test_a_size_variable_bound_twice_in_one_argument_at_run_time_says_so_as_statically(tmp_path):
    np.save(tmp_path / "a.npy", np.ones((5, 2)))
    src = ('def f(x: tensor[N, N]) = x\nlet a: tensor[?x?] = load("%s")\nprint f(a)\n'
           % (tmp_path / "a.npy"))
    e = error(src)
    assert (e.line, e.message) == (3, "size variable N would be both 5 and 2 in argument x of f")


def test_nested_size_variable_defs():
    src = ("def f(x: tensor[N, K]) = row_sum(x)\n"
           "def g(y: tensor[2, M]) = f(y) * 2\nprint g([[1, 2, 3], [4, 5, 6]])")
    assert run(src)[0].tolist() == [[12.0], [30.0]]
    assert goat.check_source(src).defs["g"].signature() == "g(y: tensor[2, M]) -> tensor[2x1]"


def test_rank_three_broadcast_and_batched_matmul():
    a = np.arange(24.0).reshape(2, 3, 4)
    src = ("let a = %s\nprint a + [[1, 2, 3, 4]]\nprint a @ transpose(a)\nprint row_sum(a)\n"
           % np.array2string(a, separator=", ").replace("\n", ""))
    s, m, r = run(src)
    np.testing.assert_array_equal(s, a + np.array([[1, 2, 3, 4]]))
    np.testing.assert_array_equal(m, a @ np.swapaxes(a, -1, -2))
    np.testing.assert_array_equal(r, a.sum(-1, keepdims=True))


def test_scalar_annotation():
    assert run("let s: scalar = 2 * 3\nprint s")[0] == 6.0
    assert error("let s: scalar = [[1]]").message == "'s' is declared scalar, but its value has shape 1x1"


def test_an_annotated_var_of_one_number_takes_one_number_in_its_shape():
    # as assigning one to it does (a let's annotation stays a check: above)
    m, s, q = run("var m: tensor[1x1] = 0\nm += [[2]]\nprint m\nvar s: scalar = [[4]]\n"
                  "print s\nvar q: tensor[1] = [[5]]\nprint q")
    assert m.shape == (1, 1) and m[0, 0] == 2
    assert s.shape == () and s == 4
    assert q.shape == (1,) and q[0] == 5
    assert error("var m: tensor[1x2] = 0").message == (
        "'m' is declared tensor[1x2], but its value has shape scalar; a number fills a shape "
        "through a built-in: zeros(tensor[1x2]) + 0")


def test_broadcast_rule_directly():
    assert broadcast("add", (6, 6), (1, 6)) == (6, 6)
    assert broadcast("add", (2, 3, 4), (4,)) == (2, 3, 4)
    assert broadcast("add", (), (3, 2)) == (3, 2)
    assert broadcast("add", (None, 2), (3, 2)) == (3, 2)
    with pytest.raises(ShapeError) as e:
        broadcast("add", (6, 6), (4, 4))
    assert e.value.message == "cannot add shapes 6x6 and 4x4: dimensions 6 and 4 differ and neither is 1"
    n = SizeVar("N")
    assert broadcast("add", (n, 3), (1, 3)) == (n, 3)


def test_matmul_rule_directly():
    assert matmul((2, 3), (3, 5)) == (2, 5)
    assert matmul((7, 2, 3), (3, 5)) == (7, 2, 5)
    assert matmul((None, 3), (3, 5)) == (None, 5)
    with pytest.raises(ShapeError):
        matmul((2, 3), (2, 3))


def test_formatting():
    assert format_shape((112, 8)) == "112x8"
    assert format_shape((None, 4)) == "?x4"
    assert format_shape(()) == "scalar"
    assert format_type((SizeVar("N"), 4)) == "tensor[N, 4]"
    assert format_type((6, 6)) == "tensor[6x6]"


def test_a_size_variable_bound_by_one_argument_checks_an_unknown_one():
    src = ("let a: tensor[?x2] = [[1, 2]]\n"
           "def f(x: tensor[N, K], y: tensor[N, K]) = x @ transpose(y)\n"
           "let z = f(a, [[1, 2], [3, 4]])\nprint z\n")
    assert goat.check_source(src).lets["z"].shape == (2, 2)
    e = error(src)
    # the sizes it was held to, and where they came from (it had said only "2x2")
    assert (e.line, e.message) == (3, "argument x of f must have shape 2x2 (declared "
                                      "tensor[N, K] with N = 2, K = 2), got 1x2")


@pytest.mark.parametrize("written, dims", [("Nx3", ("N", 3)), ("?xK", (None, "K")),
                                           ("BxTxC", ("B", "T", "C")), ("maxlen", ("maxlen",)),
                                           ("N, 3", ("N", 3))])
def test_type_spellings(written, dims):
    from goat.lexer.lexer import _dims_of
    assert _dims_of(written) == dims


def test_x_form_with_size_variables_runs():
    assert run("def f(x: tensor[Nx3]) = row_sum(x)\nprint f([[1, 2, 3], [4, 5, 6]])")[0].tolist() == [[6.0], [15.0]]


def test_two_unknown_sizes_bound_to_one_variable_are_compared_when_the_call_runs():
    src = ("def rows(m: tensor[?x2]) = m\n"
           "def f(x: tensor[N, K], y: tensor[N, K]) = x + y\n"
           "print f(rows([[1, 2]]), rows([[3, 4]]))\n"
           "print f(rows([[1, 2], [3, 4]]), rows([[1, 2], [3, 4], [5, 6]]))\n")
    e = error(src)
    assert str(e) == "t.mg:4: error: size variable N is 2 for argument x of f but 3 for argument y of f"
    assert run(src.rsplit("\n", 2)[0])[0].tolist() == [[4.0, 6.0]]


def test_a_reshape_whose_question_mark_cannot_be_worked_out_names_the_product(tmp_path):
    """5x? of 24 cells: 5 rows, not rows of 5; statically and when the size is known only at
    run time."""
    why = "(24 is not a multiple of 5, the product of the other sizes)"
    e = error("print reshape(zeros(tensor[2x3x4]), tensor[5x?])\n")
    assert e.message == "cannot reshape 2x3x4 (24 cells) to tensor[5x?]: the ? size cannot be " \
                        "worked out " + why
    np.save(tmp_path / "z.npy", np.zeros((2, 12)))
    e = error('let z: tensor[?x12] = load("%s")\nprint reshape(z, tensor[5x?])\n'
              % (tmp_path / "z.npy"))
    assert e.line == 2 and e.message == ("cannot reshape 2x12 (24 cells) to tensor[5x?]: the ? "
                                         "size cannot be worked out " + why)


def test_a_type_may_span_lines_inside_its_brackets():
    """Part A: a newline inside [ ] does not end a statement -- in a type's brackets too."""
    src = ("def f(a: tensor[\n  1x2]) = a * 2\nprint f([[1, 2]])\nlet t: tensor[1x2\n] = "
           "[[3, 4]]\nprint zeros(tensor[\n1, 2]) + t\n")
    f, t = run(src)
    assert f.tolist() == [[2, 4]] and t.tolist() == [[3, 4]]
    (g,) = run("def g(a: tensor[  # rows\n  1x2]) = a\nprint g([[5, 6]])\n")
    assert g.tolist() == [[5, 6]]
    # a ] that never comes on the line is still the unclosed bracket it was
    e = error("let w: tensor[2x2 = 3\nlet x = [1]\nprint x\n")
    assert e.message.startswith("'[' is never closed") and e.loc.line == 1
