"""Every error message, its line, and its caret; static errors come before any output."""
import io

import numpy as np
import pytest

import goat
from conftest import cli, error, run

BOOK_MESSAGES = [
    ("print [[1, 1], [1, 1]] + [[1, 2, 3]]", "cannot add shapes 2x2 and 1x3: dimensions 2 and 3 differ and neither is 1"),
    ("print [[1, 2, 3]] * [[1], [2]] * [[1, 2]]", "cannot multiply shapes 2x3 and 1x2: dimensions 3 and 2 differ and neither is 1"),
    ("let a = [[1, 2, 3], [4, 5, 6]]\nlet b = [[1, 2], [3, 4]]\nprint a - b", "cannot subtract shapes 2x3 and 2x2: dimensions 3 and 2 differ and neither is 1"),
    ("print [[1, 2]] / [[1, 2, 3]]", "cannot divide shapes 1x2 and 1x3: dimensions 2 and 3 differ and neither is 1"),
    ("print ge([[1, 2]], [[1, 2, 3]])", "cannot compare shapes 1x2 and 1x3: dimensions 2 and 3 differ and neither is 1"),
]


@pytest.mark.parametrize("src, message", BOOK_MESSAGES)
def test_broadcast_messages_in_the_books_words(src, message):
    e = error(src)
    assert e.message == message
    assert str(e) == "t.mg:%d: error: %s" % (src.count("\n") + 1, message)


def test_the_first_differing_dimension_is_named():
    e = error("print [[1, 2, 3], [4, 5, 6], [7, 8, 9], [1, 1, 1]] + [[1, 2], [3, 4]]")
    assert "dimensions 4 and 2" in e.message


def test_arity():
    src = ("def f(a: tensor[1x2], b: tensor[1x2], c: tensor[1x2]) = a + b + c\n"
           "print f([[1, 2]], [[1, 2]])")
    assert str(error(src)) == "t.mg:2: error: f takes 3 arguments, got 2"
    assert error("print exp([[1]], [[2]])").message == "exp takes 1 argument, got 2"
    assert error("print ge([[1]])").message == "ge takes 2 arguments, got 1"


def test_matrix_product_inner_dimensions():
    e = error("let a = [[1, 2, 3]]\nlet b = [[1, 2, 3]]\nprint a @ b")
    assert e.line == 3
    assert e.message == "cannot matrix-multiply shapes 1x3 and 1x3: the inner dimensions 3 and 1 differ"
    assert "both operands of @ must be matrices" in error("print 2 @ [[1]]").message


def test_argument_shape_names_the_parameter_and_points_at_the_argument():
    src = "def first(m: tensor[2x2]) = row_sum(m)\nprint first([[1, 2, 3], [4, 5, 6]])"
    e = error(src)
    assert str(e) == "t.mg:2: error: argument m of first must have shape 2x2, got 2x3"
    lines = e.render().splitlines()
    assert lines[1] == "2 | print first([[1, 2, 3], [4, 5, 6]])"
    assert lines[2] == "  |             ^~~~~~~~~~~~~~~~~~~~~~"


def test_caret_under_the_offending_expression():
    e = error("let s = [[1, 1], [1, 1]]\nlet m = [[1, 2, 3]]\nprint exp(s + m)")
    assert e.render().splitlines()[1:] == ["3 | print exp(s + m)", "  |           ^~~~~"]


def test_names():
    assert error("let a = [[1]]\nprint a + b").message == "unknown name 'b'"
    assert error("let alpha = [[1]]\nprint alpah").message == "unknown name 'alpah'; did you mean 'alpha'?"
    assert error("print foo([[1]])").message == "unknown function 'foo'"
    assert error("print row_summ([[1]])").message == "unknown function 'row_summ'; did you mean 'row_sum'?"
    assert error("let a = [[1]]\nprint a([[1]])").message == "'a' is a value, not a function"
    assert error("def f(x: tensor[1x1]) = x\nprint f").message == "f is a function; call it as f(...)"
    assert error("print exp").message == "exp is a built-in function; call it as exp(...)"


def test_names_differing_only_in_case_and_slips_for_the_standard_library():
    """print x with only X defined, and sofmax(x), had had no suggestion."""
    assert error("let X = [[1]]\nprint x").message == "unknown name 'x'; did you mean 'X'?"
    assert error("let Alpha = [[1]]\nprint alpha").message == (
        "unknown name 'alpha'; did you mean 'Alpha'?")
    assert error("def F(a: tensor[1x1]) = a\nprint f([[1]])").message == (
        "unknown function 'f'; did you mean 'F'?")
    assert error("print sofmax([[1]])").message == (   # (goat has no softmax to suggest)
        "unknown function 'sofmax'; for softmax, write nn.softmax_rows(x) after import nn")
    assert error("import nn\nprint nn.softmax([[1]])").message == (
        "module nn has no def or let named 'softmax'; did you mean 'softmax_rows'?")
    assert error("print sofmax_rows([[1]])").message == (
        "unknown function 'sofmax_rows'; did you mean nn.softmax_rows? (in the standard "
        "library's nn module)")
    assert error("print foo([[1]])").message == "unknown function 'foo'"


def test_use_before_definition():
    e = error("print a\nlet a = [[1]]")
    assert (e.line, e.message) == (1, "unknown name 'a': it is defined later, on line 2; a name "
                                      "must be defined before it is used")
    e = error("def f(x: tensor[1x1]) = g(x)\ndef g(x: tensor[1x1]) = f(x)")
    assert e.message.startswith("unknown function 'g': it is defined later, on line 2")


@pytest.mark.parametrize("src, hint", [
    ("print 1 ! 2", "'not x' negates a condition, and a != b compares"),
    ("print 2 ** 3", "there is no power operator"),
    ("let a = [[1, 2]]\nprint a[::-1]", "goat has no reversed slice: a tensor of indices "
                                         "reverses an axis of N cells, x[..., N - 1 - "
                                         "iota(tensor[N], 0)] the last"),
    ("a = 3", "a new name needs let (let a = ...), or var (var a = ...) to assign to it later"),
])
def test_hints_for_common_slips(src, hint):
    assert hint in error(src).message


def test_redefinition():
    e = error("let a = [[1]]\nlet b = a\nlet a = [[2]]")
    assert str(e) == "t.mg:3: error: 'a' is already defined on line 1; a name can be defined only once in a file"
    assert error("def f(x: tensor[1x1]) = x\nlet f = [[1]]").line == 2
    assert "appears twice" in error("def f(x: tensor[1x1], x: tensor[1x1]) = x").message
    assert error("let ones = [[1]]\nlet ones = [[2]]").line == 2


def test_a_program_may_name_its_own_values_after_built_ins():
    """A program written for the book's language may define sigmoid, tanh or ones itself
    (the book has none of them): its own name wins in its own file; a module's defs still
    call the built-in; a value named like a function is not callable."""
    out = goat.run_source("import nn\n"
                          "def sigmoid(x: tensor[1x2]) = x * 10\n"
                          "let ones = [[1, 2]]\n"
                          "def scale(x: tensor[1x2], tanh: tensor[1x2]) = x * tanh\n"
                          "var grad = 0.5\n"
                          "grad = grad * 2\n"
                          "print sigmoid(ones)\nprint scale(ones, [[3, 4]])\n"
                          "print nn.gelu([[0, 1]])\nprint grad\n")
    assert [v.tolist() for v in out[:2]] == [[[10.0, 20.0]], [[3.0, 8.0]]]
    x = np.array([0.0, 1.0])        # nn.gelu still calls the built-in tanh (GELU's tanh form)
    want = 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))
    np.testing.assert_allclose(out[2][0], want, rtol=1e-15)
    assert float(out[3]) == 1.0
    e = error("let exp = [[1]]\nprint exp([[2]])")
    assert e.line == 2 and e.message == ("'exp' is a value here, not a function: the let named "
                                         "exp on line 1 hides the built-in exp; give the value "
                                         "another name")
    e = error("var sum = 1\nfor split in 0..2 {\n    print sum(split([[1, 2]], 2, 1))\n}")
    assert e.line == 3 and e.message.startswith("'sum' is a value here, not a function: the var "
                                                "named sum on line 1 hides the built-in sum")
    e = error("for split in 0..2 {\n    print split([[1, 2]], 2, 1)\n}")
    assert e.message.startswith("'split' is a value here, not a function: the loop variable "
                                "named split on line 1 hides")


def test_recursion_is_an_error():
    e = error("def f(x: tensor[1x1]) = f(x)")
    assert e.message.startswith("f calls itself: recursion is not allowed")


def test_def_body_errors_are_found_at_the_def():
    e = error("def f(x: tensor[2x2]) = x @ [[1, 2, 3]]\nprint [[1]]")
    assert e.line == 1 and "inner dimensions 2 and 1" in e.message


def test_rank_errors():
    assert error("print row_sum(3)").message == "row_sum needs a tensor (rank 1 or more), got a scalar"
    assert error("print transpose([1, 2])").message == "transpose needs a matrix (rank 2 or more), got shape 2 (rank 1)"
    assert error("print col_sum([1, 2])").message.startswith("col_sum needs a matrix")


def test_literals():
    e = error("let t = [[1, 2, 3],\n         [4, 5]]")
    assert e.line == 2
    assert e.message == "the rows of a list literal must have equal length: this row has 2 numbers, the first row has 3 numbers"
    assert error("print [1, [2]]").message == "a list literal cannot mix numbers and lists"
    assert error("print [[1, x]]").message.startswith(
        "syntax error: expected a number, found name 'x'; a list literal holds numbers only")


@pytest.mark.parametrize("src, line, message", [
    ("let = 3", 1, "syntax error: expected a name, found '='"),
    ("let a = [[1]]\nprint a +", 2, "syntax error: expected an expression, found the end of the "
     "line; a statement goes on to the next line only inside ( ) or [ ]: finish the expression "
     "on this line, or put it in parentheses"),
    ("x = 3", 1, "cannot assign to 'x': no var of that name is defined; a new name needs let (let x = ...), or var (var x = ...) to assign to it later"),
    ("print (1 + 2", 1, "'(' is never closed"),
    ("print 1 + 2)", 1, "unmatched ')': no bracket is open here"),
    ("print [(1]", 1, "']' does not close the '(' opened on line 1"),
    ("print 1 $ 2", 1, "unexpected character '$'"),
    ("print 1\nprint 2 3", 2, "syntax error: expected an operator or the end of the line, found number 3"),
    ("def f(m: tensor[2y2]) = m", 1, "malformed type tensor[2y2]: write its dimensions as 6x6, ?x4 or N, K"),
    ("def f(m: tensor) = m", 1, "'tensor' must be followed by its dimensions, as in tensor[2x3]"),
    ("def f(m) = m", 1, "syntax error: expected ':', found ')'; each parameter has a type: "
                         "m: tensor[2x3], m: tensor[N, C] or m: scalar"),
])
def test_syntax_errors(src, line, message):
    e = error(src)
    assert (e.line, e.message) == (line, message)


def test_unclosed_bracket_is_reported_where_it_opened():
    e = error("let a = [[1]]\nprint exp(a\nlet b = a\nprint b")
    assert (e.line, e.message) == (2, "'(' is never closed: a ')' is missing before line 3, "
                                      "which starts another statement (let)")
    e = error("let a = [[1]]\nprint exp(a")
    assert (e.line, e.message) == (2, "'(' is never closed")


def test_annotations():
    assert run("let a: tensor[1x2] = [[1, 2]]\nprint a")[0].shape == (1, 2)
    e = error("let a: tensor[2x2] = [[1, 2]]")
    assert e.message == "'a' is declared tensor[2x2], but its value has shape 1x2"
    assert "size variable N can only appear" in error("let a: tensor[N, 2] = [[1, 2]]").message


def test_static_errors_come_before_any_output():
    out = io.StringIO()
    with pytest.raises(goat.GoatError) as info:
        goat.run_source("print [[1]]\nprint [[1, 2]] + [[1, 2, 3]]", path="t.mg", stdout=out)
    assert out.getvalue() == ""
    assert info.value.line == 2


def test_runtime_check_of_unknown_dimensions_keeps_earlier_output(tmp_path):
    np.save(tmp_path / "b.npy", np.array([[1.0, 2], [3, 4], [5, 6]]))
    src = ("def add_rows(a: tensor[?x2], b: tensor[?x2]) = a + b\n"
           "print add_rows([[1, 2]], [[3, 4]])\n"
           "let b: tensor[?x2] = load(\"%s\")\n"
           "print add_rows([[1, 2], [3, 4]], b)\n" % (tmp_path / "b.npy"))
    out = io.StringIO()
    with pytest.raises(goat.GoatError) as info:
        goat.run_source(src, path="t.mg", stdout=out)
    assert str(info.value) == ("t.mg:1: error: cannot add shapes 2x2 and 3x2: dimensions 2 and 3 "
                               "differ and neither is 1")
    assert out.getvalue().endswith("[[4,   6]]\n")


F = "def f(a: tensor[?x2]) = a @ [[1, 2, 3], [4, 5, 6]]\nprint 7\n"
THREE = "f([[1, 2], [3, 4], [5, 6]])"


@pytest.mark.parametrize("rest, line, message", [
    ("print %s + [[1, 2, 3], [4, 5, 6]]\n" % THREE, 3,
     "cannot add shapes 3x3 and 2x3: dimensions 3 and 2 differ and neither is 1"),
    ("let y = %s * 2\nlet z = row_sum(y)\nprint z\nprint transpose(y) @ [[1], [2]]\n"
     % THREE, 6, "cannot matrix-multiply shapes 3x3 and 2x1: the inner dimensions 3 and 2 differ"),
    ("def g(b: tensor[2x3]) = b\nprint g(%s)\n" % THREE, 4,
     "argument b of g must have shape 2x3, got 3x3"),
    ("let y: tensor[2x3] = %s\n" % THREE, 3,
     "'y' (declared tensor[2x3]) must have shape 2x3, got 3x3"),
])
def test_a_question_mark_defs_result_is_checked_when_it_runs(rest, line, message):
    """The book types a ? def's result with its ? sizes (f gives ?x3), so where the call's
    known sizes (3x3) do not fit, that is its run-time error: the output before it stays.
    goat check reports it (Program.deferred) without running."""
    out = io.StringIO()
    with pytest.raises(goat.GoatError) as info:
        goat.run_source(F + rest, path="t.mg", stdout=out)
    assert (info.value.line, info.value.message) == (line, message)
    assert "[7]\n" in out.getvalue()              # the output before the error stays
    deferred = goat.check_source(F + rest, path="t.mg").deferred
    assert [(e.line, e.message) for e in deferred] == [(line, message)]


G = "def f(a: tensor[?x2]) = a * 2\n"
X3 = "[[1, 2], [3, 4], [5, 6]]"


@pytest.mark.parametrize("src, line, message", [
    # the value computed again outside the def is the same node (hash-consing): still f's
    ("let z = %s * 2\nprint 7\nprint f(%s) + [[1, 2], [3, 4]]\n" % (X3, X3), 4,
     "cannot add shapes 3x2 and 2x2: dimensions 3 and 2 differ and neither is 1"),
    # a def that returns its argument itself
    ("def h(a: tensor[?x2]) = a\nprint 7\nprint h(%s) + [[1, 2], [3, 4]]\n" % X3, 4,
     "cannot add shapes 3x2 and 2x2: dimensions 3 and 2 differ and neither is 1"),
    # bound by a let (its own node: a grad target, a constant argument)
    ("let y = f(%s)\nlet g = grad(row_sum(col_sum(y)), y)\nprint 7\nprint y + [[1, 2], [3, 4]]\n"
     % X3, 5, "cannot add shapes 3x2 and 2x2: dimensions 3 and 2 differ and neither is 1"),
    # one of a tuple
    ("def t(a: tensor[?x2]) {\n  return (a * 2, row_sum(a))\n}\nlet p, q = t(%s)\nprint 7\n"
     "print q + [[1], [2]]\n" % X3, 7,
     "cannot add shapes 3x1 and 2x1: dimensions 3 and 2 differ and neither is 1"),
    # through a def with size variables
    ("def id2(x: tensor[N, C]) = x * 1\nprint 7\nprint id2(f(%s)) + [[1, 2], [3, 4]]\n" % X3, 4,
     "cannot add shapes 3x2 and 2x2: dimensions 3 and 2 differ and neither is 1"),
    # a ? def calling a def of fixed shape
    ("def g(b: tensor[2x2]) = b * 2\ndef k(a: tensor[?x2]) = g(a)\nprint k([[1, 2], [3, 4]])\n"
     "print 7\nprint k(%s)\n" % X3, 3, "argument b of g must have shape 2x2, got 3x2"),
    # one number expected
    ("print 7\nif row_sum(f([[1, 2], [3, 4]])) > 2 {\n  print 1\n}\n", 3,
     "an if condition must be a single number (one element), got shape 2x1"),
    ('print 7\nprint "{row_sum(f([[1, 2], [3, 4]]))}"\n', 3,
     "a {} field of a format string must hold a single number, but this value has shape 2x1; "
     "to show every number, print the value on a line of its own (or one number of it: "
     "{v[0]})"),
    # assigned to a var, plainly or with +=, in a loop
    ("var v = [[1, 2]]\nprint 7\nv = f(%s)\n" % X3, 4,
     "cannot assign a value of shape 3x2 to var 'v' of shape 1x2: a var keeps the shape it was "
     "declared with"),
    ("var v = [[1, 2]]\nfor i in 0..2 {\n  print 7\n  v += f(%s)\n}\n" % X3, 5,
     "cannot assign a value of shape 3x2 to var 'v' of shape 1x2: a var keeps the shape it was "
     "declared with"),
])
def test_a_question_mark_defs_result_is_its_own_value(src, line, message):
    """The book's type belongs to the call's result, not to an equal value computed elsewhere
    (hash-consing shares their nodes), and follows it through lets, tuples, defs and the
    places that need one number: each is the book's run-time error, after the output."""
    out = io.StringIO()
    with pytest.raises(goat.GoatError) as info:
        goat.run_source(G + src, path="t.mg", stdout=out)
    assert (info.value.line, info.value.message) == (line, message)
    assert "[7]\n" in out.getvalue()


def test_an_equal_value_computed_outside_keeps_its_static_error():
    src = G + "let x = %s\nlet y = f(x)\nlet z = x * 2\nprint 7\nprint z + [[1, 2], [3, 4]]\n" % X3
    out = io.StringIO()
    with pytest.raises(goat.GoatError) as info:
        goat.run_source(src, path="t.mg", stdout=out)
    assert (info.value.line, out.getvalue()) == (6, "")
    e = error("def f(a: tensor[?x2]) = a @ [[1, 2, 3], [4, 5, 6]]\nlet y: tensor[3x2] = f(%s)\n"
              % X3)
    assert e.message == "'y' is declared tensor[3x2], but its value has shape ?x3"
    e = error("def f(a: tensor[?x2]) = a * 2\nvar v = [[1, 2, 3]]\nv = f([[1, 2]])\n")
    assert e.message == ("cannot assign a value of shape ?x2 to var 'v' of shape 1x3: a var "
                         "keeps the shape it was declared with")


@pytest.mark.parametrize("rest, message", [
    # sizes the book knows too: still found before anything runs, naming the book's types
    ("print %s + [[1, 2]]\n" % THREE,
     "cannot add shapes ?x3 and 1x2: dimensions 3 and 2 differ and neither is 1"),
    ("print %s @ [[1], [2]]\n" % THREE,
     "cannot matrix-multiply shapes ?x3 and 2x1: the inner dimensions 3 and 2 differ"),
])
def test_what_the_book_finds_before_running_stays_a_static_error(rest, message):
    out = io.StringIO()
    with pytest.raises(goat.GoatError) as info:
        goat.run_source(F + rest, path="t.mg", stdout=out)
    assert (info.value.line, info.value.message, out.getvalue()) == (3, message, "")


def test_a_question_mark_defs_result_keeps_its_known_shape_where_it_fits():
    program = goat.check_source(F + "let y = %s * 2\nlet w = [[1, 2]]\n"
                                "let g = grad(row_sum(col_sum(f(w) * f(w))), w)\n" % THREE)
    assert program.lets["y"].shape == (3, 3) and program.lets["g"].shape == (1, 2)
    out = goat.run_source(F + "let w = [[1, 2]]\nprint grad(row_sum(col_sum(f(w) * f(w))), w)\n")
    m = np.array([[1.0, 2, 3], [4, 5, 6]])
    np.testing.assert_array_equal(out[1], 2 * (np.array([[1.0, 2]]) @ m) @ m.T)


def test_runtime_check_of_an_argument():
    src = ("def rows(a: tensor[?x2]) = a\n"
           "def exact(m: tensor[3x2]) = row_sum(m)\n"
           "let r = rows([[1, 2]])\n"
           "print exact(r)\n")
    e = error(src)
    assert str(e) == "t.mg:4: error: argument m of exact must have shape 3x2, got 1x2"


def test_unknown_dimension_that_fits_runs():
    (got,) = run("def norm_rows(m: tensor[?x2]) = m / row_sum(m)\nprint norm_rows([[1, 3], [2, 2]])")
    assert got.tolist() == [[0.25, 0.75], [0.5, 0.5]]


def test_parentheses_are_inside_the_caret():
    e = error("let a = [[1, 2]]\nprint (a + a) * [[1, 2, 3]]")
    assert e.render().splitlines()[2] == "  |       ^~~~~~~~~~~~~~~~~~~~~"


def test_crlf_and_cr_line_endings():
    e = error("let a = [[1]]\r\nprint a +\r\n")
    assert e.line == 2
    assert e.render().splitlines()[1:] == ["2 | print a +", "  |          ^"]
    assert run("let a = [[1]]\rprint a\r")[0].tolist() == [[1.0]]


def test_control_characters_are_not_echoed():
    e = error("print [[1]] \x1b[31m + 2")
    assert e.message == "unexpected character U+001B"
    assert "\x1b" not in e.render()


def test_batched_matmul_names_the_whole_shapes():
    e = error("print [[[1, 2]], [[3, 4]]] @ [[[1], [2]], [[3], [4]], [[5], [6]]]")
    assert e.message == ("cannot matrix-multiply shapes 2x1x2 and 3x2x1: batch dimensions 2 and 3 "
                         "differ and neither is 1")


def test_a_number_too_large_is_an_error():
    for src in ("print 1e400", "print [[1, 1e400]]"):
        assert error(src).message.startswith("the number 1e400 is too large for a 64-bit float")


def test_runtime_error_names_the_calls_it_came_through():
    src = ("def f(x: tensor[?x2], y: tensor[?x2]) = x + y\n"
           "def g(a: tensor[?x2]) = f(a, [[1, 2], [3, 4]])\n"
           "print g([[1, 2], [3, 4], [5, 6]])\n")
    e = error(src)
    assert e.line == 1
    assert e.notes == ("in f, called on line 2", "in g, called on line 3")
    assert e.render().splitlines()[-2:] == ["note: in f, called on line 2", "note: in g, called on line 3"]


def test_out_of_memory_names_the_line():
    src = "let r = [[%s]]\nprint row_sum(transpose(r) @ r)" % ", ".join(["1"] * 300_000)
    e = error(src)
    assert e.line == 2
    assert e.message == "out of memory computing a value of shape 300000x300000 (720 GB)"
    assert isinstance(e, MemoryError)       # as the API's docs say (it had been a GoatError only)
    import pickle
    back = pickle.loads(pickle.dumps(e))
    assert type(back) is goat.GoatMemoryError and back.render() == e.render()


def test_out_of_memory_counts_the_bytes_of_the_precision():
    """In float32 a 300000x300000 value is 360 GB, not the 720 it had been said to be."""
    src = "let r = [[%s]]\nprint row_sum(transpose(r) @ r)" % ", ".join(["1"] * 300_000)
    with pytest.raises(MemoryError) as info:
        goat.run_source(src, dtype="f32")
    assert info.value.message == ("out of memory computing a value of shape 300000x300000 "
                                  "(360 GB)")


def test_a_missing_comma_between_rows():
    e = error("let a = [[1, 2],\n         [3, 4]\n         [5, 6]]")
    assert e.line == 3 and e.message.endswith("; is a comma missing between two rows?")


def test_a_function_defined_later_at_top_level():
    e = error("print g([[1]])\ndef g(x: tensor[1x1]) = x")
    assert e.message == ("unknown function 'g': it is defined later, on line 2; a name must be "
                         "defined before it is used")


def test_chained_comparison_says_they_do_not_chain():
    e = error("print 1 < 2 < 3")
    assert e.message.endswith("; comparisons do not chain: write a < b and b < c")


def test_a_misspelled_module_gets_a_suggestion():
    e = error("import nnn")
    assert e.message.startswith("cannot find module 'nnn'")
    assert e.message.endswith("did you mean 'nn'?")


def test_every_independent_error_of_a_file_is_reported(tmp_path):
    src = ("let a = [[1, 2]] + [[1, 2, 3]]\n"        # 1: an error
           "let b = a * 2\n"                          # 2: uses a: not reported again
           "def f(x: tensor[2x2]) = x @ [[1, 2, 3]]\n"  # 3: an error in a def
           "print f([[1, 0], [0, 1]])\n"              # 4: uses f: skipped
           "var w = [[1, 2]]\n"
           "for i in 0..3 {\n  w = w + [[1, 2, 3]]\n}\n"  # 7: an error in a loop
           "print w\n"                                # 9: w's value unknown: skipped
           "print unknown_thing\n"                    # 10: an error
           "print [[1]]\n")
    with pytest.raises(goat.GoatErrors) as info:
        goat.run_source(src, path="t.mg", stdout=io.StringIO())
    e = info.value
    assert [x.line for x in e.errors] == [1, 3, 7, 10]
    assert (e.line, e.left_out) == (1, 0)
    assert e.render().endswith("\ngoat: 4 errors")
    status, out, err = cli("run", "-", stdin=src.encode())
    assert status == 1 and out == ""
    assert [l.split(": error:")[0] for l in err.splitlines() if ": error:" in l] == [
        "<stdin>:1", "<stdin>:3", "<stdin>:7", "<stdin>:10"]


def test_independent_errors_inside_blocks_and_defs_are_reported_together():
    """Only the first error of a def's body, a loop's or an if's had been reported; now each
    independent one is, as at the top level, and a statement using a name a failed one
    defines (r, the return of p) is skipped without a second report."""
    src = ("let x = [[1, 2], [3, 4]]\n"                  # 1
           "def f(a: tensor[2x2]) {\n"                   # 2
           "    let p = a @ [[1, 2, 3]]\n"               # 3: an error
           "    let q = a + [[1, 2, 3]]\n"               # 4: an error
           "    let r = p * 2\n"                         # 5: uses p: skipped
           "    return p\n"                              # 6: uses p: skipped
           "}\n"
           "for i in 0..3 {\n"                           # 8
           "    let u = x @ [[1]]\n"                     # 9: an error
           "    if i > 1 {\n"                            # 10
           "        let w = x - [[1, 2, 3, 4]]\n"        # 11: an error
           "        let z = transpose(x) @ [[9]]\n"      # 12: an error
           "    }\n"
           "    print u\n"                               # 14: uses u: skipped
           "}\n"
           "print f(x)\n"                                # 16: uses f: skipped
           "print x + [[1, 2, 3]]\n")                    # 17: an error
    with pytest.raises(goat.GoatErrors) as info:
        goat.check_source(src)
    assert [e.line for e in info.value.errors] == [3, 4, 9, 11, 12, 17]
    assert info.value.errors[1].message == ("cannot add shapes 2x2 and 1x3: dimensions 2 and 3 "
                                            "differ and neither is 1")
    # the REPL checks a statement at a time, and a def with one error says just it
    with pytest.raises(goat.GoatError) as one:
        goat.check_source("def g(a: tensor[2x2]) {\n    let p = a @ [[1, 2, 3]]\n"
                          "    return p\n}\n")
    assert type(one.value) is goat.GoatError and one.value.line == 2


@pytest.mark.parametrize("src, lines", [
    # both branches of an if (the else had not been checked after an error in the first)
    ("let x = [[1, 2], [3, 4]]\nif 1 > 0 {\n    let a = x @ [[1, 2, 3]]\n} else {\n"
     "    let b = x + [[1, 2, 3]]\n}\n", [3, 5]),
    # a var that failed, assigned by a tuple: skipped (it had said "no var of that name")
    ("def f(a: tensor[2x2]) {\n    var w = a @ [[1, 2, 3]]\n    var m = a\n"
     "    w, m = (a, a)\n    return m\n}\n", [2]),
    # a def that fails at each call, called twice: one error (it had been reported twice)
    ("let x = [[1, 2], [3, 4]]\ndef f(a: tensor[2x2]) {\n    var v = a\n"
     "    for i in 0..3 {\n        v += a\n    }\n    return grad(col_sum(row_sum((v > 1) * v)), a)"
     "\n}\nfor i in 0..2 {\n    print f(x)\n    print f(x * 2)\n}\n", [7]),
    # an if's condition and a loop's bounds that fail: their bodies are checked too
    ("let x = [[1, 2], [3, 4]]\nif x {\n    print x @ [[1]]\n} else {\n"
     "    print x + [[1, 2, 3]]\n}\nfor i in 0..x {\n    print x - [[1, 2, 3]]\n}\n"
     "for i in 0..2.5 {\n    print i\n}\nprint x @ x @ [[1]]\n", [2, 3, 5, 7, 8, 10, 13]),
    # a return out of place is reported, even of a name whose let failed
    ("def h(a: tensor[2x2]) {\n    let p = a @ [[1, 2, 3]]\n    return p\n    print a\n"
     "    return a\n}\n", [2, 3]),
    # a def's parameter named as a failed let is its own: the def is checked
    ("let x = [[1, 2], [3, 4]]\nlet a = x @ [[1, 2, 3]]\ndef f(a: tensor[2x2]) {\n"
     "    let p = a @ [[1]]\n    let q = a + [[1, 2, 3]]\n    return a\n}\n", [2, 4, 5]),
    # a def's declared result, with an error in its body (it had not been checked), and not
    # when what it returns is what failed
    ("def f(x: tensor[2x2]) -> tensor[3x3] {\n    let y = x + [[1, 2, 3]]\n    return x * 2\n"
     "}\ndef g(x: tensor[2x2]) -> tensor[3x3] {\n    let y = x + [[1, 2, 3]]\n    return y\n}\n"
     "def h(x: tensor[2x2]) -> (tensor[2x2], tensor[2x1]) {\n    let y = x @ [[1]]\n"
     "    return x, x\n}\n", [1, 2, 6, 9, 10]),
])
def test_every_independent_error_once(src, lines):
    with pytest.raises(goat.GoatError) as info:
        goat.check_source(src)
    assert [e.line for e in getattr(info.value, "errors", [info.value])] == lines


def test_a_fatal_error_in_a_block_keeps_the_errors_before_it():
    """The error for a call too large to check, inside a loop, had dropped the loop's earlier
    error."""
    lines = ["let x = [[1, 2], [3, 4]]", "def d0(a: tensor[2x2]) = a + 1"]
    lines += ["def d%d(a: tensor[2x2]) = d%d(tanh(a)) + d%d(a * 2)" % (i, i - 1, i - 1)
              for i in range(1, 22)]
    lines += ["for i in 0..2 {", "    print x @ [[1]]", "    print d21(x)", "}"]
    with pytest.raises(goat.GoatErrors) as info:
        goat.check_source("\n".join(lines) + "\n")
    assert [e.line for e in info.value.errors] == [25, 26]
    assert info.value.errors[1].message.startswith("this call of d21 needs more than 500,000")


def test_the_count_of_errors_shown_is_capped():
    src = "".join("print x%d\n" % i for i in range(25))
    with pytest.raises(goat.GoatErrors) as info:
        goat.check_source(src)
    assert len(info.value.errors) == 20 and info.value.left_out == 5
    assert info.value.render().endswith("goat: 25 errors, the first 20 shown")


def test_syntax_errors_and_check_errors_are_reported_together():
    src = ("let a = [[1, 2]] +\n"            # 1: syntax error
           "let b = a * 2\n"                 # 2: uses a: skipped
           "print [[1]] @ [[1], [2]]\n"      # 3: a shape error
           "let c = 3 4\n"                   # 4: syntax error
           "print c\n"                       # 5: uses c: skipped
           "print [[5]]\n")
    with pytest.raises(goat.GoatErrors) as info:
        goat.run_source(src, path="t.mg", stdout=io.StringIO())
    assert [(x.line, x.message.split(":")[0]) for x in info.value.errors] == [
        (1, "syntax error"), (3, "cannot matrix-multiply shapes 1x1 and 2x1"), (4, "syntax error")]


def test_a_name_inside_a_list_literal_gets_a_hint():
    from conftest import error as error_of
    e = error_of("let t = 2\nlet a = [[1, t]]\n")
    assert e.loc.line == 2
    assert e.message.endswith("a list literal holds numbers only: compute a value from names "
                              "instead, e.g. reshape(t, tensor[1x1]), or [[1, 0]] * t + "
                              "[[0, 1]] * b")


def test_a_shape_left_out_inside_a_larger_expression_says_where_it_may_be():
    from conftest import error as error_of
    e = error_of("var w: tensor[4x4] = randn(2) @ ones(tensor[4x4])\n")
    assert "the shape may be left out only where the call is the whole value of an annotated " \
           "let or var" in e.message
    assert "randn(tensor[4x4], ...)" in e.message


def test_a_shape_left_out_where_the_call_is_scaled_by_numbers_is_the_annotations():
    """Found by two newcomers: var w: tensor[H, 1] = randn(3) * 0.3, the usual initialisation,
    had been an error; a call combined with numbers only keeps its shape, so it takes the
    annotation's."""
    a, b, c, d = run("let H = 3\nvar w: tensor[H, 2] = randn(3) * 0.3\n"
                     "let z: tensor[2x2] = 0.5 * ones()\nlet m: tensor[2] = zeros() - 1\n"
                     "var u: tensor[1x2] = -randn(1) * 0.1 + 2\n"
                     "print w - randn(tensor[3x2], 3) * 0.3\nprint z\nprint m\n"
                     "print u - (-randn(tensor[1x2], 1) * 0.1 + 2)\n")
    assert np.array_equal(a, np.zeros((3, 2))) and z_ok(b) and m_ok(c)
    assert np.array_equal(d, np.zeros((1, 2)))


def z_ok(b):
    return b.tolist() == [[0.5, 0.5], [0.5, 0.5]]


def m_ok(c):
    return c.tolist() == [-1, -1]


@pytest.mark.parametrize("call, written", [
    ("reshape([1, 2, 3, 4])", "reshape(..., tensor[4x4])"),
    ('load("f.npy")', 'load("file.npy", tensor[4x4])'),
    ("zeros()", "zeros(tensor[4x4])"),
    ("rand(3)", "rand(tensor[4x4], ...)"),
])
def test_a_missing_shape_hint_writes_the_arguments_in_their_order(call, written):
    """The hint shows the shape where the built-in takes it (last for reshape and load)."""
    assert error("print 1 + %s" % call).message.endswith("write it: " + written)


def test_save_with_an_empty_file_name_is_a_static_error():
    e = error('print [[1]]\nsave([[1]], "")')
    assert (e.line, e.message) == (2, 'save needs a file name, such as save(x, "x.npy"); got ""')


def test_an_argument_by_name_left_out_with_no_default_is_named():
    e = error("import optim\nprint optim.cosine_lr(5, warmup=10)")
    assert e.line == 2 and e.message == ("optim.cosine_lr needs 'total' and 'peak', which have "
                                         "no default: give total=..., peak=...")


@pytest.mark.parametrize("src", ["for i in 0..1e300 { }\n",
                                 "let n = row_sum([[1e300, 1]])\nfor i in 0..n { }\n"])
def test_a_huge_loop_bound_is_spelled_as_python_spells_it(src):
    """1e+300, not %.17g's 1.0000000000000001e+300 (before running, and when it runs)."""
    assert error(src).message.endswith("exact up to 2**53), got 1e+300")


@pytest.mark.parametrize("aot", [False, True])
@pytest.mark.parametrize("stmt, message", [
    ('print "{1:\\n}"', "invalid format spec ':\\n': '\\n' is not a format type"),
    ('save([[1]], "/nonexistent\\nx/a.npy")', "cannot save into '/nonexistent\\nx': no such "
                                             "directory (goat makes no folders"),
    ('let q: tensor[1x1] = load("no\\tfile.npy")\nprint q', "cannot load no\\tfile.npy: no such "
                                                            "file"),
])
def test_an_error_line_stays_one_line_with_a_newline_in_a_string(tmp_path, stmt, message, aot):
    """A file name or a format spec as written may hold a newline or a tab (an escape in the
    string): the error's first line shows it escaped, so PATH:LINE: error: is one line."""
    if aot:
        pytest.importorskip("llvmlite")
    from conftest import cli
    (tmp_path / "n.mg").write_text(stmt + "\n")
    status, out, err = cli("run", *(["--aot"] if aot else []), "n.mg", cwd=str(tmp_path))
    assert status == 1 and out == ""
    assert err.splitlines()[0].startswith("n.mg:1: error: " + message)


@pytest.mark.parametrize("src, line, ends", [
    # Python's loop: the range to write, the caret under range(...) (it was under the { )
    ("for i in range(10):\n  print i\n", 1, "goat's loop has no range(...): write for i in "
                                            "0..10 { ... } (a half-open range, as range's)"),
    ("for i in range(3) {\n  print i\n}\n", 1, "goat's loop has no range(...): write for i in "
                                               "0..3 { ... } (a half-open range, as range's)"),
    ("for step in range(a, b * 2) {\n}\n", 1, "write for step in a..b * 2 { ... } (a half-open "
                                             "range, as range's)"),
    ("for i in range(0, 9, 3) {\n}\n", 1, "goat's loop has no range(...): it runs over a "
                                          "half-open range of step 1, for i in a..b { ... }"),
    ("for i in 0..3:\n  print i\n", 1, "; a loop's body is a block in braces: for i in 0..n "
                                       "{ ... }"),
    ("let x = 1\nif x = 1 {\n  print x\n}\n", 2, "; a comparison is written =="),
    ("if 1: print 1\n", 1, "; a branch is a block in braces: if c { ... } else { ... }"),
    ('print(f"x = {1}")\n', 1, '; a string\'s {fields} are formatted without an f: print '
                               '"x = {x}"'),
    ("// a comment\nprint 1\n", 1, "; a comment starts with #"),
    # a breaker's: one error, not a second for the value inside the braces
    ("print {1}\n", 1, "; a value to format is a field of a string, in quotes: print \"{x}\""),
    ("let x = [[1, 2]]\nprint x[x > 1]\n", 2, "NumPy's boolean indexing) is not supported: its "
                                              "result's size would be known only when the "
                                              "program runs; where(mask, x, 0) keeps x's shape"),
    ("def f(x = 1) = x\n", 1, "; a parameter's type goes before its default: x: scalar = ..."),
    ("if True {\n  print 1\n}\n", 1, "unknown name 'True': write 1 (a condition is a number; "
                                     "any but 0 is true)"),
    ("let H = row_sum([[32, 32]])\nvar w: tensor[2xH] = zeros()\n", 2,
     "H is a value computed when the program runs, so it cannot be a size: a type's sizes are "
     "known before; a let holding a whole number written in the program can (let H = 32)"),
])
def test_habits_from_python_get_the_goat_spelling(src, line, ends):
    """A newcomer's Python: the message says what to write instead; the loop variable of a
    header that could not be read is not reported again as unknown."""
    e = error(src)
    assert len(getattr(e, "errors", [e])) == 1
    assert e.line == line and e.message.endswith(ends)


def test_a_wrong_number_of_arguments_shows_the_parameters():
    e = error("import optim\nlet w = [[1.0]]\nprint optim.cosine_lr(w, 0.001, 2)\n")
    assert e.message == "optim.cosine_lr takes 4 arguments, got 3"          # the book's words
    assert e.notes == ("optim.cosine_lr(step: scalar, warmup: scalar, total: scalar, "
                       "peak: scalar)",)
    e = error("import optim\nlet w = [[1.0]]\nprint optim.adamw(w, w, w, w)\n")
    assert e.message == "optim.adamw needs 't', which has no default: give t=..."
    assert e.notes == ("optim.adamw(w: tensor[...], g: tensor[...], m: tensor[...], "
                       "v: tensor[...], t: scalar, lr: scalar = 0.001, b1: scalar = 0.9, "
                       "b2: scalar = 0.999, eps: scalar = 1e-08, wd: scalar = 0.01) -> "
                       "(tensor[...], tensor[...], tensor[...])",)
    e = error("print zeros(2, 3)\n")
    assert (e.message, e.notes) == ("zeros takes 1 argument, got 2; a shape is written as a "
                                    "type: zeros(tensor[2x3])", ("zeros(tensor[S]) -> S",))


@pytest.mark.parametrize("src, message", [
    ("let x = 1\n  / 2\n", "syntax error: expected a statement (let, var, def, print, for, if, "
                           "...) or a name, found '/'"),          # not a // comment
    ('let f = 1\nprint f "x"\n', "syntax error: expected an operator, '(' or the end of the "
                                 "line, found a string"),         # f is a name, not f"..."
    ("let x = 1\nprint maximum(x, (x = 2))\n", None),
])
def test_hints_stay_silent_where_they_do_not_apply(src, message):
    e = error(src)
    assert e.line == 2
    if message is not None:
        assert e.message == message


def test_the_one_line_escape_is_the_compiled_programs():
    """Python's headline escapes exactly what goat_fail.c does: C0 controls, DEL and C1 (not
    a no-break space, which prints)."""
    from goat.diagnostics import _one_line
    assert _one_line("a\nb\t\x01\x7f\x85\xa0\u200b") == "a\\nb\\t\\x01\\x7f\\x85\xa0\u200b"


def test_errors_pickle_whole_and_print_every_line():
    """A process pool sends a GoatError back pickled: GoatErrors (several) had failed to
    unpickle (BrokenProcessPool); print(e) shows each error's first line, as goat check."""
    import pickle
    with pytest.raises(goat.GoatErrors) as info:
        goat.run_source("let a = zz\nlet b = yy\n", path="p.mg")
    e = pickle.loads(pickle.dumps(info.value))
    assert type(e) is goat.GoatErrors and [x.line for x in e.errors] == [1, 2]
    assert str(e) == "p.mg:1: error: unknown name 'zz'\np.mg:2: error: unknown name 'yy'"
    assert e.render() == info.value.render()
    one = pickle.loads(pickle.dumps(error("let a = zz\n", path="q.mg")))
    assert (one.path, one.line, one.message) == ("q.mg", 1, "unknown name 'zz'")


@pytest.mark.parametrize("line, before", [
    ('print "日本語 {[[1,2]]}"', 7 + 6 + 2),         # wide: two columns each
    ('print "ｘ {[[1,2]]}"', 7 + 2 + 2),              # full-width
    ('print "e\u0301 {[[1,2]]}"', 7 + 1 + 2),        # a combining accent: none
    ('print "é {[[1,2]]}"', 7 + 1 + 2),
])
def test_the_caret_counts_the_columns_characters_take(line, before):
    """The caret had been 3 columns left of its expression after 日本語 (one per character):
    ``before`` counts the columns of ``print "``, the text and `` {``."""
    e = error(line + "\n")
    assert e.render().splitlines()[1:] == ["1 | " + line, "  | " + " " * before + "^~~~~~~"]


def test_a_size_no_machine_holds_is_not_written_in_hundreds_of_digits():
    """onehot([[0]], 1e300) had written a 301-digit size, iota's axis 1e30 31 digits."""
    assert error("print onehot([[0]], 1e300)\n").message == (
        "tensor[1x1e+300] is too large for any machine to address: more than 2**63 bytes")
    assert error("print iota(tensor[2x2], 1e30)\n").message == (
        "iota's axis 1e+30 is outside tensor[2x2], of rank 2 (axes 0 to 1, or -2 to -1 counting "
        "from the last)")
    assert error("print iota(tensor[2x2], 7)\n").message.startswith("iota's axis 7 is outside")


@pytest.mark.parametrize("field, said", [
    ("{1 < 2 == 1}", "syntax error: expected '+', '-', 'and', 'or' or the } that ends the "
                     "field, found '=='; comparisons do not chain: write a < b and b < c"),
    ("{1 +}", "syntax error: expected an expression, found the } that ends the field"),
    ("{1 2}", "syntax error: expected an operator or the } that ends the field, found number 2"),
])
def test_a_syntax_error_in_a_format_field_ends_at_its_brace(field, said):
    """It had said 'or the end of the line', inside a string that goes on."""
    assert error('print "x = %s"\n' % field).message == said


def test_a_size_variable_bound_to_itself_is_not_shown_as_n_equals_n():
    """A def called from another with its own size variable had said "(N = N)"."""
    assert error("def inner(x: tensor[N, 3]) = x\ndef outer(y: tensor[N, 4]) = inner(y)\n"
                 ).message == "argument x of inner must have shape Nx3, got Nx4"
    assert error("def inner(x: tensor[M, 3]) = x\ndef outer(y: tensor[N, 4]) = inner(y)\n"
                 ).message == "argument x of inner must have shape Mx3 (M = N), got Nx4"


@pytest.mark.parametrize("src, said", [
    ("print zeros(4, 8)",
     "zeros takes 1 argument, got 2; a shape is written as a type: zeros(tensor[4x8])"),
    ("print randn(2, 3, 4)",         # the sizes written, not an example's
     "randn takes 2 arguments, got 3; a shape is written as a type: randn(tensor[2x3x4], ...)"),
    ("print randn(4, 8)",
     "argument shape of randn must be a type such as tensor[2x3], got the number 4; write "
     "randn(tensor[4x8], ...)"),
    ("let x = [[1, 2]]\nprint reshape(x, [2, 1])",
     "argument shape of reshape must be a type such as tensor[2x3], got a list; write "
     "reshape(..., tensor[2x3])"),
    ("let x = [[1, 2]]\nprint(x, x)",
     'print takes one value, and this is 2: to print several on a line, print "{v1} {v2}"'),
    ("let a = [[1]]\nprint a, a",
     "syntax error: expected the end of the line, found ','; print takes one value: to print "
     'several on a line, print "{a} {b}"'),
    ("let xs = [[1]]\nfor x in xs {\n}",
     "syntax error: expected '..', found '{'; a loop runs over a range of numbers: for i in "
     "0..xs { ... } if xs is a count (goat has no loop over a tensor's rows; gather takes "
     "rows)"),
    ("for i in 0...3 {\n}", "a range is written with two dots: 0..3 (three read as .. .3)"),
    ("print [[0 / 0]]",
     "syntax error: expected ',' or ']', found '/'; a list literal holds numbers only, not "
     "expressions: compute the value outside it, or write the number"),
    ("def f(x: tensor[1x1]) = {\n  return x\n}",
     "syntax error: expected an expression, found '{'; a def with a block body has no =: "
     "def f(x: tensor[2x3]) { ...; return y }"),
    ('let loss = 3\nprint "{loss=}"',
     '{loss=} is Python\'s self-documenting field; goat\'s fields hold a value: write '
     '"loss = {loss}"'),
    ("def f(x: tensor[nxk]) = x",
     "tensor[nxk] is one size, a size variable named nxk; for 2 sizes write tensor[n, k] (the "
     "x form takes numbers, ? and single capitals: tensor[NxK])"),
])
def test_habits_from_numpy_pytorch_and_python_get_the_goat_way(src, said):
    """Each had had a bare or misleading message (an invalid COMMAND-like 'must be a type',
    a bound of 0.3, a shape silently of one size)."""
    assert error(src + "\n").message == said


def test_a_lower_case_name_with_an_x_that_is_no_x_form_stays_one_size():
    assert run("def f(x: tensor[maxlen]) = x * 2\nprint f([1, 2])")[0].tolist() == [2, 4]
    assert run("def f(x: tensor[xx3]) = x * 2\nprint f([1, 2])")[0].tolist() == [2, 4]


@pytest.mark.parametrize("src", [
    "var s = [[0]]\nfor i in 0..2 {\n    let big = randn(tensor[300000x300000], i)\n"
    "    s = s + col_sum(row_sum(big))\n}\nprint s\n",
    "var s = [[0]]\nif 1 > 0 {\n    let big = randn(tensor[300000x300000], 1)\n"
    "    s = s + col_sum(row_sum(big))\n}\nprint s\n",
])
def test_out_of_memory_in_a_block_stays_at_its_own_line(src):
    """A GoatMemoryError (a MemoryError too) had been caught again by the enclosing loop or
    if, and reported at its line with the shape (1, 1)."""
    e = error(src)
    assert type(e) is goat.GoatMemoryError and e.line == 3
    assert e.message == "out of memory computing a value of shape 300000x300000 (720 GB)"


@pytest.mark.parametrize("expr", ["gather(t, [[2.00000001]])", "gather(t, [[-1e-50]])",
                                  "onehot([[1.9999999999]], 3)",
                                  "rand(tensor[1x2], 3.0000000001)"])
def test_a_constant_that_float32_rounds_to_a_valid_index_or_seed_is_not_refused(expr):
    """The check before running had refused these under --dtype f32, where the number is
    rounded first and passes; in f64 they fail, when they run."""
    src = "let t = [[1, 2], [3, 4], [5, 6]]\nprint %s\n" % expr
    assert len(goat.run_source(src, dtype="f32")) == 1
    program = goat.check_source(src)                    # no error before it runs
    assert program is not None
    with pytest.raises(goat.GoatError) as info:
        goat.run_source(src)
    assert info.value.line == 2


def test_a_load_fills_in_the_fields_of_its_name_as_save_does(tmp_path):
    """load("w_{step}.npy") had been refused: its fields were read as written.  Now each run
    of the load makes its name, as save's; the values are NumPy's, loaded back."""
    (tmp_path / "p.mg").write_text(
        'let w = [[1.5, -2], [0, 3]]\n'
        'for step in 0..3 {\n    save(w * step, "w_{step:03d}.npy")\n}\n'
        'def at(k: scalar) = load("w_{k:03d}.npy", tensor[2x2])\n'
        'for step in 0..3 {\n'
        '    let back: tensor[2x2] = load("w_{step:03d}.npy")\n'
        '    print back + at(2 - step)\n}\n')
    got = goat.run_file(str(tmp_path / "p.mg"))
    w = np.array([[1.5, -2], [0, 3]])
    assert [g.tolist() for g in got] == [(w * s + w * (2 - s)).tolist() for s in range(3)]


def test_a_load_names_the_file_it_made(tmp_path):
    (tmp_path / "p.mg").write_text('print 1\nfor i in 0..2 {\n'
                                   '  print load("d/x{i + 0.5:.1f}_{i}.npy", tensor[1])\n}\n')
    (tmp_path / "d").mkdir()
    np.save(tmp_path / "d" / "x0.5_0.npy", np.array([7.0]))
    with pytest.raises(goat.GoatError) as info:
        goat.run_file(str(tmp_path / "p.mg"))
    assert info.value.line == 3
    assert info.value.message == "cannot load d/x1.5_1.npy: no such file"


@pytest.mark.parametrize("src, line, said", [
    ('let v = [[1, 2]]\nprint load("w_{v}.npy", tensor[2])\n', 2,
     "a {} field of a format string must hold a single number, but this value has shape 1x2"),
    ('print load("w_{nope}.npy", tensor[2])\n', 1, "unknown name 'nope'"),
    ('print load("w_{1 +}.npy", tensor[2])\n', 1, None),
])
def test_a_load_whose_fields_are_wrong_is_refused_before_it_runs(src, line, said):
    e = error(src)
    assert e.line == line
    if said is not None:
        assert e.message == said
    else:
        assert "the } that ends the field" in e.message


def test_a_field_its_spec_cannot_format_stops_the_load(tmp_path):
    (tmp_path / "p.mg").write_text('print 1\nprint load("w_{2.5:03d}.npy", tensor[2])\n')
    with pytest.raises(goat.GoatError) as info:
        goat.run_file(str(tmp_path / "p.mg"))
    assert (info.value.line, info.value.message) == (
        2, "cannot format 2.5 with :03d: it is not a whole number")


def test_braces_written_twice_are_braces_in_the_name(tmp_path):
    """As in save's names and formatted prints, {{ and }} are a brace; {1} is a field."""
    np.save(tmp_path / "data{1}.npy", np.arange(2.0))
    np.save(tmp_path / "data1.npy", np.arange(3.0))
    (tmp_path / "p.mg").write_text('print load("data{{1}}.npy", tensor[2])\n'
                                   'print load("data{1}.npy", tensor[3])\n')
    got = goat.run_file(str(tmp_path / "p.mg"))
    assert [v.tolist() for v in got] == [[0.0, 1.0], [0.0, 1.0, 2.0]]


def test_grad_treats_a_load_with_fields_as_a_constant(tmp_path):
    """Only the file's values reach the loss; the field's value chooses the file."""
    for s in range(3):
        np.save(tmp_path / ("x_%d.npy" % s), np.array([[1.5, -2], [0, 3]]) * s)
    (tmp_path / "p.mg").write_text(
        'var w = [[0.5, -1], [2, 0.25]]\nfor step in 0..3 {\n'
        '    let x: tensor[2x2] = load("x_{step}.npy")\n'
        '    w = w - 0.01 * grad(col_sum(row_sum(x * w * w)), w)\n}\nprint w\n')
    w = np.array([[0.5, -1], [2, 0.25]])
    for s in range(3):
        w = w - 0.01 * 2 * np.load(tmp_path / ("x_%d.npy" % s)) * w
    np.testing.assert_allclose(goat.run_file(str(tmp_path / "p.mg"))[0], w, rtol=1e-15)


def test_a_python_conditional_expression_gets_where():
    e = error("let c = 1\nlet lr = 1e-3 if c else 2\n")
    assert e.line == 2 and e.message.endswith(
        "; there is no A if C else B: write where(C, A, B), elementwise")


def test_grad_of_several_names_passed_as_one_value_says_how_to_clip_them():
    """It had said only "this is 2 values, not one; bind them with let v1, v2 = ...", which
    led a user trying PyTorch's clip_grad_norm_(parameters) nowhere."""
    e = error("import optim\nlet w1 = [[1.0]]\nlet w2 = [[2.0]]\n"
              "let loss = col_sum(row_sum(w1 * w2))\n"
              "let g, n = optim.clip_grad_norm(grad(loss, w1, w2), 1)\n")
    assert e.line == 5 and e.message.startswith(
        "grad with 2 names gives 2 gradients, one per name, not one value: bind them with "
        "let g1, g2 = grad(...)")
    assert "optim.sq_norm" in e.message and "optim.clip_coef" in e.message


@pytest.mark.parametrize("text, names", [
    # optim.adamw gives the weight and its two moments: the vars among its arguments
    ("import optim\nvar w1 = [[1.0, 2]]\nvar m1 = w1 * 0\nvar v1 = w1 * 0\nlet g = [[0.1, 0.2]]\n"
     "w1 = optim.adamw(w1, g, m1, v1, 1, 0.1, 0.9, 0.999, 1e-08, 0.01)\n", "w1, m1, v1"),
    # no such vars: the assigned var, then placeholders
    ("import optim\nvar w = [[1.0]]\nlet g = [[1.0]]\n"
     "w = optim.adamw(g, g, g, g, 1, 0.1, 0.9, 0.999, 1e-08, 0.01)\n", "w, v2, v3"),
    ("def two(a: scalar) {\n    return a, a + 1\n}\nvar x = 0\nvar y = 1\nx = two(x)\n", "x, v2"),
])
def test_several_values_assigned_to_one_var_are_told_to_assign_vars(text, names):
    """A var update with a tuple was told to "bind them with let v1, v2, v3 = ...", which
    declares new names instead of updating the vars (found by a newcomer's AdamW loop)."""
    e = error(text)
    assert e.line == text.count("\n") and e.message == (
        "this is %d values, not one; assign them to vars, one each, with %s = ..."
        % (names.count(",") + 1, names))
    # the advice, followed, checks
    fixed = text.rsplit("\n", 2)[0] + "\n" + names + " = " + text.rsplit("\n", 2)[1].split(
        " = ", 1)[1] + "\n"
    if "v2" not in names:
        run(fixed)


@pytest.mark.parametrize("line, message", [
    ("pritn x", "'pritn' is not a statement; did you mean print?"),
    ("retrun x", "'retrun' is not a statement; did you mean return?"),
    ("dfe f(a: scalar) = a", "'dfe' is not a statement; did you mean def?"),
    ("improt nn", "'improt' is not a statement; did you mean import?"),
    ("Let y = 1", "'Let' is not a statement; keywords are lower case: let"),
    ("Print x", "'Print' is not a statement; keywords are lower case: print"),
    ("const y = 1", "'const' is not a statement; goat writes let (a name bound once) or var "
                    "(a name assignment may change)"),
    ("function f", "'function' is not a statement; goat writes def"),
    ("x++", "there is no ++: write x += 1"),
    ("from nn import gelu", "goat has no from ... import: write import nn, then nn.NAME(...)"),
])
def test_a_misspelled_or_foreign_first_word_is_named(line, message):
    """These had all said "expected '*=', '+=', ',', '-=', '/=' or '=', found name 'x'", with
    the caret on the second word, as if the first were a name being assigned."""
    e = error("let x = [[1.0]]\n%s\n" % line)
    assert (e.line, e.message, e.loc.start) == (2, "syntax error: " + message,
                                                 len("let x = [[1.0]]\n"))


def test_a_name_then_an_unexpected_word_that_is_no_keyword_keeps_the_plain_message():
    e = error("let x = [[1.0]]\nx 1\n")
    assert e.message == ("syntax error: expected '*=', '+=', ',', '-=', '/=' or '=', found "
                         "number 1")


@pytest.mark.parametrize("call, message", [
    # nn.relu had been told "did you mean 'gelu'?": relu is built in
    ("nn.relu(x)", "module nn has no def or let named 'relu'; relu is built in: write relu(...)"),
    ("nn.sigmoid(x)", "module nn has no def or let named 'sigmoid'; sigmoid is built in: write "
                      "sigmoid(...)"),
    ("optim.gelu(x)", "module optim has no def or let named 'gelu'; it is in the standard "
                      "library's nn module: write nn.gelu(...)"),
    ("nn.mean(x)", "module nn has no def or let named 'mean'; mean is built in: write "
                   "mean(...)"),
    ("optim.sgd(x)", "module optim has no def or let named 'sgd'; there is no SGD function: "
                     "write w -= lr * g (optim.adamw is AdamW)"),
    ("nn.softmax(x)", "module nn has no def or let named 'softmax'; did you mean 'softmax_rows'?"),
    ("argmax(x)", "unknown function 'argmax'; write argmax_rows(x) (each row's index of its "
                  "largest)"),
    ("pow(x, 2)", "unknown function 'pow'; there is no power: square(x) is x * x, and for x > "
                  "0 write exp(p * log(x))"),
    ("normal(tensor[2x2], 1)", "unknown function 'normal'; write randn(tensor[...], seed) "
                               "(standard normal draws; times std, plus mean)"),
])
def test_a_name_goat_has_elsewhere_is_pointed_to(call, message):
    e = error("import nn\nimport optim\nlet x = [[1.0]]\nprint %s\n" % call)
    assert (e.line, e.message) == (4, message)


def test_the_advice_for_softplus_and_concatenation_is_right():
    """The written-out replacements compute what they say (against NumPy)."""
    x = np.array([[-30.0, -1.5, 0.0, 2.0, 40.0]])
    got = run("let x = [[-30, -1.5, 0, 2, 40]]\nprint maximum(x, 0) + log(1 + exp(-abs(x)))\n"
              "let a = [[1, 2]]\nlet b = [[3]]\n"
              "print a @ [[1, 0, 0], [0, 1, 0]] + b @ [[0, 0, 1]]\n")
    # (no log1p: far below 0 it is exact to 1e-16 absolute, not relative)
    np.testing.assert_allclose(got[0], np.logaddexp(0, x), rtol=1e-15, atol=1e-16)
    assert got[1].tolist() == [[1, 2, 3]]
    assert error("let a = [[1.0]]\nprint cat(a, a, 1)\n").message == (
        "unknown function 'cat'; write concat(a, b, axis) (two at a time)")
    assert run("let a = [[1.0]]\nprint concat(a, a + 1, 1)\n")[0].tolist() == [[1, 2]]


@pytest.mark.parametrize("text, line, message", [
    ("def forward(x: tensor[2x2]) =\n    x * 2\nprint forward([[1, 2], [3, 4]])\n", 1,
     "syntax error: expected an expression, found the end of the line; a def's body = EXPR "
     "goes on the def's line; a longer one is a block: def f(x: tensor[2x3]) { ...; return y }"),
    ("let x = [[1.0]]\nlet y =\n    x * 2\nprint y\n", 2,
     "syntax error: expected an expression, found the end of the line; the value goes on the "
     "same line as its =, and may go on over several inside parentheses"),
    ("var x = [[1.0]]\nx +=\n    2\nprint x\n", 2,
     "syntax error: expected an expression, found the end of the line; the value goes on the "
     "same line as its =, and may go on over several inside parentheses"),
])
def test_a_value_left_on_the_line_after_its_equals_sign_is_one_error_with_the_way_out(
        text, line, message):
    """The value on the next line had been a second error, "a value on its own line does
    nothing", and the first had no hint."""
    assert _all_errors(text) == [(line, message)]


def _all_errors(text) -> list:
    """(line, message) of each error goat.check_source finds in ``text``."""
    with pytest.raises(goat.GoatError) as info:
        goat.check_source(text)
    return [(e.line, e.message) for e in getattr(info.value, "errors", [info.value])]


@pytest.mark.parametrize("text, lines", [
    ("let y =\n    2\nlet z = 1 +* 2\n", [1, 3]),
    ("let y =\nlet z = 1 +* 2\n", [1, 2]),        # not a value left over: its own error
])
def test_an_independent_error_after_such_a_statement_is_still_reported(text, lines):
    assert [line for line, _ in _all_errors(text)] == lines


def test_a_paren_left_open_over_later_lines_is_named():
    """It had said only "expected an operator, '(', ')' or ',', found 'let'" on line 4; a '{'
    left open was already named.  A line that starts with a statement's keyword cannot go on
    an expression: the ( is the error of its own statement, and the lines after are read and
    checked (a breaker found the rest of the file swallowed)."""
    assert _reported("import nn\nlet x = [[1.0, 2]]\nlet y = nn.softmax_rows(x\nlet z = 1\n"
                     "print y\nprint x)\nprint zz\n") == [
        (3, "'(' is never closed: a ')' is missing before line 4, which starts another "
            "statement (let)"),
        (6, "unmatched ')': no bracket is open here"), (7, "unknown name 'zz'")]
    assert _reported("let m = [[1, 2],\n\n  # two rows\nprint m\n") == [
        (1, "'[' is never closed: a ']' is missing before line 4, which starts another "
            "statement (print)")]
    # on the bracket's own line the plain message stays
    assert error("let y = transpose([[1.0]] [[2.0]])\n").message.endswith(
        "found a list literal; is a comma missing between the two lists?")


@pytest.mark.parametrize("text, line, end", [
    ('let x = [[1.0]]\nlet name = "model"\n', 2,
     'found a string; goat has no string values: text goes only in print "...", an assert\'s '
     "message and load's and save's file names"),
    ('let x = [[1.0]]\nprint("a", x)\n', 2,
     'found a string; print takes no parentheses around text: print "a {x}" puts values in it'),
    ('print \u201chi\u201d\n', 1,
     'unexpected character \'\u201c\'; strings are written in straight double quotes: "..."'),
    ('let x = [[1.0]]\nprint exp(x).sum\n', 2, "unexpected character '.'; goat has no methods "
     "or fields: call a function on the value (row_sum(x), transpose(x), ...)"),
    ('let q = [[1, 2]].T\n', 1, "unexpected character '.'; goat has no methods or fields: call "
     "a function on the value (row_sum(x), transpose(x), ...)"),
    ('import nn.mg\n', 1, "; a module is imported by its name, without .mg: import nn"),
    ('import optim\nvar w = [[1.0]]\nvar m = w * 0\nvar v = w * 0\n'
     'w, m, v = optim.adamw(w, w, m, v, 1, col_mean(w), 0.9, 0.999, 1e-08, 0.01)\n', 5,
     "argument lr of optim.adamw must have shape scalar, got 1x1; both hold one number: write "
     "reshape(VALUE, scalar) to change its shape"),
    ('def f(a: tensor[1x1]) = a\nprint f(0.5)\n', 2, "argument a of f must have shape 1x1, got "
     "scalar; both hold one number: write reshape(VALUE, tensor[1x1]) to change its shape"),
])
def test_small_slips_get_the_way_out(text, line, end):
    e = error(text)
    assert e.line == line and e.message.endswith(end), e.message
    # and the way out works
    if "reshape(VALUE" in end:
        fixed = text.replace("col_mean(w)", "reshape(col_mean(w), scalar)").replace(
            "f(0.5)", "f(reshape(0.5, tensor[1x1]))")
        assert run(fixed) is not None


def test_a_dot_that_is_no_method_keeps_the_plain_message():
    assert error("let y = 1 . 2\n").message == "unexpected character '.'"


@pytest.mark.parametrize("text, line, message", [
    # a format field holds an expression, not a statement
    ('let lt = [[1.0]]\nprint "{lt 2}"\n', 2, "syntax error: expected an operator, '(' or the } "
     "that ends the field, found number 2"),
    # a bracket after a name is a subscript, whatever the name: assigned to, it is a var's
    ("let val = [[1.0, 2]]\nval[0] = 1\n", 2, "cannot assign to 'val': it is defined with let "
     "on line 1, which cannot change; declare it with var to assign to it"),
    # values, not misspelled keywords or x--
    ("let fo = 1\nfo and 1\n", 2, "syntax error: a value on its own line does nothing in a "
     "program: write print before it to show it (the REPL shows a value typed on its own)"),
    ("let x = 1\nx - -x\n", 2, "syntax error: a value on its own line does nothing in a "
     "program: write print before it to show it (the REPL shows a value typed on its own)"),
    # the ( is closed later: the fault is elsewhere
    ("let x = [[1.0]]\nlet y = maximum(x,\n   0 x)\n", 3,
     "syntax error: expected an operator, ')' or ',', found name 'x'"),
    ("let x = [[1.0]]\nlet y = x +\n    2\n", 2, "syntax error: expected an expression, found "
     "the end of the line; a statement goes on to the next line only inside ( ) or [ ]: finish "
     "the expression on this line, or put it in parentheses"),
])
def test_the_new_hints_keep_off_what_they_do_not_fit(text, line, message):
    """Found by a review of the hints: each had fired where it did not fit."""
    assert _all_errors(text) == [(line, message)]


def test_a_module_member_differing_only_in_case_is_suggested_before_a_builtin(tmp_path):
    (tmp_path / "mymod.mg").write_text("def Relu(x: tensor[N, M]) = x\n")
    (tmp_path / "m.mg").write_text("import mymod\nimport nn\nimport optim\nlet x = [[1.0]]\n"
                                   "print mymod.relu(x)\nprint optim.log_softmax(x)\n")
    with pytest.raises(goat.GoatErrors) as info:
        goat.check_file(str(tmp_path / "m.mg"))
    assert [e.message for e in info.value.errors] == [
        "module mymod has no def or let named 'relu'; did you mean 'Relu'?",
        "module optim has no def or let named 'log_softmax'; it is in the standard library's "
        "nn module: write nn.log_softmax(...)"]


@pytest.mark.parametrize("text", [
    "def f(w: tensor[...], c: tensor[1, 1]) -> tensor[...] = w * c\n",
    "import optim\ndef upd(w: tensor[...], g: tensor[...], c: tensor[1, 1]) = "
    "optim.adamw(w, g * c, w, w, 1, 0.1, 0.9, 0.999, 1e-08, 0.0)\n",
])
def test_a_def_over_leading_sizes_says_it_is_checked_with_none(text):
    """"w is scalar" had puzzled a user whose every call passed a matrix (found by a newcomer
    writing a helper that scales gradients by a 1x1 clipping factor)."""
    e = error(text)
    assert e.notes[-1].endswith(" is checked with ... standing for no leading sizes (a "
                                "tensor[...] parameter a scalar), as well as for each call's: "
                                "its body must hold for all")
    # an error of a call's own check has the call's note, not this one
    e = error("def f(w: tensor[...]) = w + [[1, 2]]\nprint f([[1.0, 2]])\n")
    assert not any("no leading sizes" in n for n in e.notes)


def test_a_block_of_a_loaded_file_may_define_a_name_the_session_has(tmp_path):
    """Found by a REPL newcomer: :load of a file that runs on its own failed when an earlier
    input (or an earlier :load) had defined a name the file's blocks define, so what a file
    did depended on the session's history.  Its block's name is now its own (as a def body's
    is); the session's stays.  In a file on its own the rule is unchanged."""
    from goat.repl.session import Session
    (tmp_path / "ld.mg").write_text("for i in 0..2 {\n  let l = i * 2\n  print l\n}\n")
    out = io.StringIO()
    s = Session(out=out)
    s.run("let l = [[1]]")
    s.load(str(tmp_path / "ld.mg"))
    s.run("print l")
    import re
    assert re.findall(r"data = \n(.*)\n", out.getvalue()) == ["[0]", "[2]", "[[1]]"]
    e = error("let l = 1\nfor i in 0..2 {\n  let l = i * 2\n}\n")
    assert e.message.endswith("a block cannot define it again")


# found by a newcomer writing an RNN: each message says what to write instead
@pytest.mark.parametrize("src, message", [
    # the annotation of the let is the shape the hint writes
    ("var wx: tensor[1x16] = randn(1) @ ones(tensor[16x16])\n",
     "randn takes 2 arguments, got 1; the shape may be left out only where the call is the "
     "whole value of an annotated let or var, or it with numbers and names (let x: tensor[1x16] = "
     "randn(...) * 0.5); inside a larger expression, write it: randn(tensor[1x16], ...)"),
    ("let a = zeros() + 1\n",
     "zeros takes 1 argument, got 0; the shape may be left out only where the call is the "
     "whole value of an annotated let or var, or it with numbers and names (let x: tensor[4x4] = "
     "zeros(...) * 0.5); inside a larger expression, write it: zeros(tensor[4x4])"),
    # arithmetic in a size names only sizes: a def's size variable that no parameter gives
    ("def flat(u: tensor[3, H, H]) = reshape(u, tensor[3, H * W])\n",
     "the size H * W names W, which is no size of any parameter of flat and no let holding a "
     "size: write the size, or use the parameters' sizes (H)"),
    # the loss among the names
    ("var w = randn(tensor[2x2], 1)\nlet loss = col_sum(row_sum(w * w))\nprint grad(w, loss)\n",
     "grad takes the loss first, then the names: grad(loss, w) (its first argument must be a "
     "loss of one element, and w is 2x2)"),
    # a vector where @ needs a matrix
    ("print [1, 2, 3] @ [[1], [2], [3]]\n",
     "cannot matrix-multiply shapes 3 and 3x1: both operands of @ must be matrices (rank 2 or "
     "more); a vector on the left is a row, a 1x3 matrix: reshape(x, tensor[1x3])"),
    ("print [[1, 2]] @ [3, 4]\n",
     "cannot matrix-multiply shapes 1x2 and 2: both operands of @ must be matrices (rank 2 or "
     "more); a vector on the right is a column, a 2x1 matrix: reshape(x, tensor[2x1])"),
])
def test_a_newcomers_slip_gets_what_to_write(src, message):
    assert error(src).message == message


def test_save_never_writes_over_a_goat_program(tmp_path):
    """Found by a breaker: save(w, "self.mg") had replaced the running program with an array
    file.  A name ending in .mg is refused when the program is checked, fields or not."""
    prog = tmp_path / "self.mg"
    text = 'let w = [[1]]\nsave(w, "self.mg")\nfor s in 0..2 {\n    save(w, "ck_{s}.mg")\n}\n'
    prog.write_text(text)
    with pytest.raises(goat.GoatErrors) as info:
        goat.run_file(str(prog))
    assert [(e.line, e.message) for e in info.value.errors] == [
        (2, "cannot save to self.mg: a .mg file is a goat program, and save writes a NumPy "
            "array file (name it self.npy)"),
        (4, "cannot save to ck_{s}.mg: a .mg file is a goat program, and save writes a NumPy "
            "array file (name it ck_{s}.npy)")]
    assert prog.read_text() == text


@pytest.mark.parametrize("dtype", ["f64", "f32"])
@pytest.mark.parametrize("call, message", [
    ("rand(tensor[1x1], 1e39)",
     "a seed must be a whole number from 0 to 9007199254740991, got 1e+39"),
    ("gather([[1], [2]], [[1e39]])",
     "gather's indices must be whole numbers from 0 to 1, got 1e+39 at position 0"),
    ("onehot([[1e39]], 3)",
     "onehot's indices must be whole numbers from 0 to 2, got 1e+39 at position 0"),
])
def test_a_number_beyond_float32_in_a_checked_operand_is_an_error_without_a_warning(
        tmp_path, dtype, call, message):
    """Found by a breaker: a seed of 1e39 leaked NumPy's "overflow encountered in cast" and was
    reported as inf; the error comes before anything runs, naming the number as written."""
    (tmp_path / "p.mg").write_text("print 1\nprint %s\n" % call)
    status, out, err = cli("run", "--dtype", dtype, "p.mg", cwd=str(tmp_path))
    assert (status, out) == (1, "")
    assert err.splitlines()[0] == "p.mg:2: error: " + message
    assert "Warning" not in err


def test_a_negative_count_is_named_as_the_number_written():
    """Found by a breaker: onehot(t, -3) said it 'got a value'."""
    assert error("print onehot([[1]], -3)\n").message == (
        "argument shape of onehot must be a type such as tensor[2x3] or a count written as a "
        "number (a whole number, 0 or more) or a let holding one, got the number -3; write "
        "onehot(..., tensor[2x3])")


def test_a_count_or_an_axis_may_be_a_let_holding_one():
    """Found by a breaker: tensor[1, B] took the size let B, but onehot(t, B) refused it (and
    iota's axis); an unknown name there is that error, not 'got a value'."""
    one, ramp = run("let V = 3\nlet A = 1\nprint onehot([[1], [2]], V)\n"
                    "print iota(tensor[2x2], A)\n")
    assert one.tolist() == [[0, 1, 0], [0, 0, 1]]
    assert ramp.tolist() == [[0, 1], [0, 1]]
    assert error("print onehot([[1]], V)\n").message.startswith("unknown name 'V'")
    assert error("var V = 3\nprint onehot([[1]], V)\n").message == (
        "V is a var, which may change, so it cannot be a size: make it a let (let V = ...)")


def test_an_error_the_lexer_finds_in_one_statement_does_not_hide_the_others():
    """Found by a breaker: a malformed type (or an unknown character, an unclosed string, a
    number too large) stopped the whole file there, where a syntax error lets the checker go
    on to the statements after it."""
    src = ('let a = [[1, 2, 3]] + [[1, 2]]\n'
           'def g(x: tensor[..., ...]) = x\n'
           'print "abc\n'
           'let b = 3 . 4\n'
           'let c = 1e999\n'
           'print g([[1]]) $ 2\n'
           'let d = [[1, 2]] + [[1, 2, 3]]\n')
    with pytest.raises(goat.GoatErrors) as info:
        goat.run_source(src)
    assert [(e.line, e.message.split(":")[0]) for e in info.value.errors] == [
        (1, "cannot add shapes 1x3 and 1x2"), (2, "malformed type tensor[..., ...]"),
        (3, "this string is never closed"), (4, "unexpected character '.'"),
        (5, "the number 1e999 is too large for a 64-bit float (the largest is 1.79769e+308, "
            "as %g prints it)"),
        (6, "unexpected character '$'"), (7, "cannot add shapes 1x2 and 1x3")]


def test_a_statement_that_cannot_be_read_in_a_block_does_not_hide_the_blocks_other_errors(
        tmp_path):
    """Found by a breaker: a lexer or syntax error inside a loop's, an if's or a def's body
    hid every other error of that block; the block is now checked without it, and what it
    would have assigned is unknown after it (no error of its own).  A def whose return could
    not be read is still left out whole (its body would be said to lack one)."""
    src = ("let a = [[1, 2]]\nvar h = a\ndef f(x: tensor[1x2]) {\n    let c = x + [[1, 2, 3]]\n"
           "    let b = x $ 2\n    let d = b + 1\n    return x @ x\n}\nfor i in 0..2 {\n"
           "    if 1 {\n        let q = a +* 1\n        print a @ a\n    }\n    h = h $ 2\n"
           "    print h @ h\n}\ndef g(x: tensor[1x2]) {\n    let y = x @ x\n    return x $ 2\n}\n"
           "print h @ a\nprint g(a)\nprint a @ a\n")
    with pytest.raises(goat.GoatErrors) as info:
        goat.run_source(src)
    assert [(e.line, e.message.split(":")[0]) for e in info.value.errors] == [
        (4, "cannot add shapes 1x2 and 1x3"), (5, "unexpected character '$'"),
        (7, "cannot matrix-multiply shapes 1x2 and 1x2"),
        (11, "syntax error"), (12, "cannot matrix-multiply shapes 1x2 and 1x2"),
        (14, "unexpected character '$'"), (19, "unexpected character '$'"),
        (23, "cannot matrix-multiply shapes 1x2 and 1x2")]
    # the same in a module a program imports
    (tmp_path / "mm.mg").write_text("def f(x: tensor[1x2]) {\n    let c = x + [[1, 2, 3]]\n"
                                    "    let b = x $ 2\n    return x\n}\n")
    (tmp_path / "p.mg").write_text("import mm\nprint mm.f([[1, 2]])\n")
    with pytest.raises(goat.GoatErrors) as info:
        goat.run_file(str(tmp_path / "p.mg"))
    assert [(e.line, e.message.split(":")[0]) for e in info.value.errors] == [
        (2, "cannot add shapes 1x2 and 1x3"), (3, "unexpected character '$'")]


@pytest.mark.parametrize("body", ["    let y = x +* 2\n    return y\n",
                                  "    var y = x\n    y = y +* 2\n    return y\n"])
@pytest.mark.parametrize("result", ["", " -> tensor[1x2]"])
def test_a_def_whose_return_reads_a_line_that_cannot_be_read_is_that_one_error(body, result):
    """Found by a reviewer: checking such a def's body without the line (its other errors
    found) left its result unset, an internal error that hid every error of the file."""
    with pytest.raises(goat.GoatErrors) as info:
        goat.check_source("def g(x: tensor[1x2])%s {\n%s}\nprint g([[1, 2]])\n"
                          "print [[1]] @ [[1, 2], [3, 4]]\n" % (result, body))
    assert [(e.line, e.message.split(":")[0]) for e in info.value.errors] == [
        (2 if "let" in body else 3, "syntax error"),
        (6 if "let" in body else 7, "cannot matrix-multiply shapes 1x1 and 2x2")]


@pytest.mark.parametrize("src", [
    "let B = sum\nprint zeros(tensor[B, 1])\n",
    "let B = 3 +\nprint zeros(tensor[B, 1])\n",
    "let B = sum\ndef f(x: tensor[N, 1]) -> tensor[N, B] = x\n",
    "def f(x: tensor[N, 1]) {\n    let K = M\n    return zeros(tensor[K, 1])\n}\n",
])
def test_a_let_that_failed_used_as_a_size_gives_no_second_error(src):
    """Found by a breaker: the names a type uses as sizes did not count among a statement's
    uses, so a size let whose statement failed got a second error, 'size variable B can only
    appear in a def'."""
    try:
        goat.check_source(src)
    except goat.GoatErrors as e:
        raise AssertionError([x.message for x in e.errors])
    except goat.GoatError as e:
        assert e.line in (1, 2) and "size variable" not in e.message


def test_a_defs_declared_result_sees_the_names_outside_not_its_bodys_lets():
    """Found by a breaker: def f(...) -> tensor[N, B] { let B = 4 ... } read the body's B."""
    (v,) = run("let B = 3\ndef f(x: tensor[N, 1]) -> tensor[N, B] {\n    let B = 4\n"
               "    return zeros(tensor[N, 3])\n}\nprint f([[1]])\n")
    assert v.shape == (1, 3)
    assert error("let B = 3\ndef f(x: tensor[N, 1]) -> tensor[N, B] {\n    let B = 4\n"
                 "    return zeros(tensor[N, B])\n}\n").message == (
        "f is declared to return tensor[N, 3], but its value has shape Nx4")


def test_brackets_that_do_not_match_come_after_the_errors_before_them():
    # a block's header that cannot be read is one error; the lines before and after it are
    # read too
    with pytest.raises(goat.GoatErrors) as info:
        goat.run_source('let b = 3 . 4\nfor i in 0...3 {\n    print i\n}\nprint 1 +\n')
    assert [e.line for e in info.value.errors] == [1, 2, 5]
    # a bracket left open after an unknown character that may have caused it (a terminal's
    # colour code pasted): the character is the statement's error
    with pytest.raises(goat.GoatErrors) as info:
        goat.run_source("print zz\nprint 1 + \x1b[31m 2\n")
    assert [(e.line, e.message) for e in info.value.errors] == [
        (1, "unknown name 'zz'"), (2, "unexpected character U+001B")]
    # brackets that do not match, so that nothing after them can be read: the errors before
    # them are reported too (a breaker found them lost)
    for text, line, message in [
            ("print zz\nprint (1 }\nprint yy\n", 2, "'}' does not close the '(' opened on line 2"),
            ("print zz\nlet t: tensor[[2]] = zeros()\nprint yy\n", 2, "malformed type"),
            ("for i in 0..2 {\n    print zz\n    let t: tensor[[2]] = zeros()\n}\n", 3,
             "malformed type")]:
        with pytest.raises(goat.GoatErrors) as info:
            goat.run_source(text)
        got = [(e.line, e.message) for e in info.value.errors]
        assert len(got) == 2 and got[0][1] == "unknown name 'zz'", got
        assert got[1][0] == line and got[1][1].startswith(message), got


def test_a_let_holding_a_whole_number_is_a_size():
    """Found by a newcomer: a batch size or a width could not be a hyperparameter (let B = 32
    then tensor[B, 1] was 'B is a value, not a size'), so --let could not set it.  A let the
    program's own numbers fix is a size, at the top, in blocks, in a def's body and in its
    parameters (test_a_let_named_in_a_defs_parameters_is_that_size)."""
    src = ("let B = 4\nlet H = 2 * 3\nlet idx = iota(tensor[B, 1], 0)\n"
           "var w: tensor[H, 2] = ones()\n"
           "def f(x: tensor[N, 2]) {\n    let z = zeros(tensor[N, H])\n    return z + row_sum(x)\n}\n"
           "def g(x: tensor[B, 1]) = x * 2\n"
           "for i in 0..2 {\n    print zeros(tensor[B, H]) + i\n}\n"
           "print idx\nprint f(w)\nprint g(idx)\n")
    first, second, idx, fw, g = run(src)
    assert first.shape == second.shape == (4, 6) and second.tolist()[0][0] == 1
    assert idx.tolist() == [[0], [1], [2], [3]]
    assert fw.tolist() == [[2.0] * 6] * 6
    assert g.tolist() == [[0], [2], [4], [6]]  # g's B is the let's
    import goat
    sized = goat.run_source(src.replace("let H = 2 * 3", "let H = 6"), lets={"B": 2, "H": 3})
    assert sized[0].shape == (2, 3) and sized[2].tolist() == [[0], [1]]
    assert sized[4].tolist() == [[0], [2]]


@pytest.mark.parametrize("src, message", [
    ("var B = 4\nprint zeros(tensor[B, 1])\n",
     "B is a var, which may change, so it cannot be a size: make it a let (let B = ...)"),
    ("let B = 2.5\nprint zeros(tensor[B, 1])\n", "the size B is 2.5, not a whole number from 0"),
    ("let B = -3\nprint zeros(tensor[B, 1])\n", "the size B is -3, not a whole number from 0"),
    # a newcomer's PyTorch -1: what goat writes for a size worked out from the others
    ("print reshape(ones(tensor[4, 3]), tensor[2, -1])\n",
     "the size -1 is not a whole number from 0; a size worked out from the others (PyTorch's "
     "-1, in a reshape's target) is written ?: tensor[2, ?]"),
    ("print zeros(tensor[-2])\n", "the size -2 is not a whole number from 0"),
    ("for B in 0..3 {\n    print zeros(tensor[B, 1])\n}\n",
     "B is a value computed when the program runs, so it cannot be a size: a type's sizes are "
     "known before; a let holding a whole number written in the program can (let B = 32)"),
    ("print zeros(tensor[B, 1])\n",
     "size variable B can only appear in a def, bound by its parameters' types; outside one, "
     "write the size as a number, or a let holding one (let B = 32)"),
])
def test_a_name_in_a_type_that_cannot_be_a_size_says_why(src, message):
    assert error(src).message == message


def test_a_loss_not_yet_reduced_is_not_taken_for_swapped_arguments():
    """Found by a reviewer: grad(sq, scale) with sq a 1x2 value computed from the 1x1 scale
    was answered 'grad(scale, sq)', which fails again; the swap is suggested only when the
    one-element name is computed from the first argument."""
    e = error("let x = [[1, 2]]\nvar scale = [[2]]\nlet sq = (x * scale - x) * (x * scale - x)\n"
              "print grad(sq, scale)\n")
    assert e.message == ("grad needs a loss of one element, got shape 1x2; reduce it first: "
                         "sum(x) for its sum, mean(x) for its mean")


@pytest.mark.parametrize("written, hint", [
    ("2*3x4", "tensor[6x4]"),
    ("2x3*4", "tensor[2x12]"),
    ("BATCHx2*3", None),         # a name with an x in it, not the x form
])
def test_arithmetic_in_a_type_gets_a_hint_goat_accepts(written, hint):
    """Found by a reviewer: tensor[H*2, W*2] was answered with reshape(x, tensor[?, ?]), which
    goat refuses, and tensor[2*3x4] with tensor[?], a size short."""
    message = error("let a: tensor[%s] = zeros()\n" % written).message
    said = ("; a size written as arithmetic is + - * / (exact) and brackets on whole numbers, "
            "lets and a def's size variables, with commas between sizes (tensor[D, 4 * H])")
    assert message.endswith(said + (": " + hint if hint else "")) or (
        hint is None and said + "; the x form takes numbers, ? and single capitals" in message)


@pytest.mark.parametrize("value, message", [
    ("1 / 0", "the size B is inf, not a whole number from 0"),
    ("0 / 0", "the size B is -nan, not a whole number from 0"),
    ("0.1 * 3 * 10", "the size B is 3.0000000000000004, not a whole number from 0"),
    ("1e30", "the size B is 1e+30, not a whole number from 0 (too large to be a size)"),
])
def test_a_let_size_that_is_no_size_says_what_it_is(value, message):
    """Found by a reviewer: an inf or NaN let size was an internal error, and %g had shown
    3.0000000000000004 as 3."""
    assert error("let B = %s\nprint zeros(tensor[B, 1])\n" % value).message == message


def test_a_let_size_defined_later_says_where():
    assert error("print zeros(tensor[B, 1])\nlet B = 3\n").message == (
        "the size B is a let defined later, on line 2: define it before the type that uses it")
    assert error("def g(x: tensor[..., N]) {\n    return zeros(tensor[N, H])\n}\n"
                 "let H = 3\n").message == ("the size H is a let defined later, on line 4: "
                                            "define it before the type that uses it")


def test_a_long_chain_of_lets_folds_once_each():
    """Found by a reviewer: each let used twice by the next doubled the work of folding a
    size (30 lets: hours), and a chain of 40 was 'computed when the program runs'."""
    lines = ["let a0 = 1"] + ["let a%d = a%d * a%d" % (i, i - 1, i - 1) for i in range(1, 41)]
    lines += ["let b0 = 2"] + ["let b%d = b%d + 0" % (i, i - 1) for i in range(1, 2000)]
    lines += ["print zeros(tensor[a40, b1999])"]
    (z,) = run("\n".join(lines) + "\n")
    assert z.shape == (1, 2)


@pytest.mark.parametrize("src, lines", [
    # an error in a format string's field keeps those before it (lexer's too)
    ('let a = 1 $ 2\nprint "{x $ 1}"\nprint [[1, 2]] + [[1, 2, 3]]\n', [1, 2, 3]),
    # a Python line continuation: one error, not a second for the line it continued to
    ("let a = [[1]]\nlet b = [[2]]\nlet total = a + \\\n    b\nprint total\n", [3]),
    # a type holding brackets: its error, not a bracket error after it
    ("let t: tensor[[2]] = zeros(tensor[2x3])\n", [1]),
    ("let t = zeros(tensor[2x3) + [[1]]\n", [1]),
])
def test_one_mistake_gives_its_own_errors_only(src, lines):
    """Found by a reviewer of the lexer's recovery."""
    e = error(src)
    assert [x.line for x in getattr(e, "errors", [e])] == lines


def test_a_backslash_says_how_a_statement_continues():
    e = error("let total = 1 + \\\n    2\n")
    assert e.message == ("unexpected character '\\\\'; a statement goes on to the next line "
                         "only inside ( ) or [ ]: put the expression in parentheses")


def test_an_assignment_that_cannot_be_read_leaves_its_var_unknown():
    """Found by a differential tester: an unreadable `h = ...` in a loop left h as before, so
    a grad after the loop added 'the loss does not depend on w' to the one real error."""
    e = error("let w = [[0.5, -0.3], [0.2, 0.4]]\nvar h = [[0.1, 0.2]]\nfor t in 0..3 {\n"
              "    let i = col_sum(row_sum(h @ w)) > 0\n    h = tanh(h @ w) + onehot([[i]], 2)\n"
              "}\nprint grad(col_sum(row_sum(h)), w)\n")
    assert [x.line for x in getattr(e, "errors", [e])] == [5]
    e = error("var h = [[1]]\nvar a = h\nh, a = [[i]], 2\nprint h + [[1, 2, 3]] * a\n")
    assert [x.line for x in getattr(e, "errors", [e])] == [3]


@pytest.mark.parametrize("src", ["var h = [[1]]\nvar c = [[2]]\nh, c = c, h\n",
                                 "let a, b = 1, 2\n"])
def test_a_python_swap_gets_the_tuple_spelling(src):
    """Found by a differential tester: h, c = c, h was a bare syntax error."""
    assert error(src).message.endswith(
        "; several values on the right are written as a tuple in parentheses: a, b = (b, a)")


def test_a_missing_shape_hint_writes_the_annotation_as_written():
    """Found by a newcomer: with sizes from lets, the hint wrote randn(tensor[28x16], ...),
    which pinned the sizes --let was to change."""
    e = error("let V = 28\nlet D = 16\nvar emb: tensor[V, D] = randn(1) @ ones(tensor[D, D])\n")
    assert e.message.endswith("inside a larger expression, write it: randn(tensor[V, D], ...)")


def test_indices_computed_from_the_weights_get_the_stop_gradient_hint():
    e = error("let w = [[0.5]]\nlet table = [[0.1], [0.2], [0.3]]\nlet i = floor(abs(w) * 3)\n"
              "print grad(col_sum(gather(table, i) * w), w)\n")
    assert e.message == (
        "grad cannot differentiate through gather on line 4: it has no derivative with respect "
        "to its argument indices; if computing the indices from the values differentiated is "
        "meant, write stop_gradient(...) around that argument")


def test_a_let_that_cannot_be_a_size_is_one_error_however_often_it_is_used(tmp_path):
    """Found by a newcomer: --let H=32.5 gave the same error at each of the 31 types that use
    H (20 shown); it is now given once, at the first use, with a note naming the let."""
    import subprocess
    import sys
    (tmp_path / "p.mg").write_text(
        "let H = 4\nlet a = zeros(tensor[2, H])\nprint a @ ones(tensor[H, 3])\n"
        "if 1 {\n    print zeros(tensor[H, H])\n}\n")
    r = subprocess.run([sys.executable, "-m", "goat", "run", "--let", "H=32.5", "p.mg"],
                       cwd=str(tmp_path), capture_output=True, text=True)
    assert (r.returncode, r.stdout) == (1, "")
    assert r.stderr.count("error:") == 1
    assert r.stderr.splitlines()[0] == ("p.mg:2: error: the size H is 32.5, not a whole number "
                                        "from 0")
    assert r.stderr.splitlines()[-1] == "note: H is the let on line 1"


def test_a_let_named_in_a_defs_parameters_is_that_size():
    """Found by two newcomers: with let T = 4 (or let C = 32), def f(p: tensor[T, 2]) had bound
    a T of its own, so its body could not reshape by it; a let above the def holding a size is
    that size in its parameters' types too, as in every other type."""
    (y,) = run("let T = 4\ndef f(p: tensor[T, 2], x: tensor[8, 2]) {\n"
               "    let y: tensor[2, T, 2] = reshape(x + p[0, 0])\n    return y\n}\n"
               "print f(ones(tensor[4x2]), reshape(iota(tensor[16x1], 0), tensor[8x2]))\n")
    assert np.array_equal(y, np.arange(16.0).reshape(2, 4, 2) + 1)
    e = error("let T = 4\ndef f(p: tensor[T, 2]) = p\nprint f(ones(tensor[3x2]))\n")
    assert (e.line, e.message) == (3, "argument p of f must have shape 4x2, got 3x2")
    assert e.notes == ("T in f's types is 4, the let T on line 1",)
    # a let defined after the def is not a size: the def's T is its own size variable
    (y,) = run("def f(p: tensor[T, 2]) = p * 2\nlet T = 4\nprint f(ones(tensor[3x2]))\n")
    assert y.shape == (3, 2)
    # a let that is no size (computed when the program runs, or not one number) cannot be
    # named there: the body's T would be the let, the type's another (found by a breaker)
    e = error("let T = col_sum(row_sum(ones(tensor[2x2]) * 0))\n"
              "def f(p: tensor[T, 2]) = p * T\n")
    assert (e.line, e.message) == (2, "T is a value computed when the program runs, so it "
                                      "cannot be a size: a type's sizes are known before; a let "
                                      "holding a whole number written in the program can (let T "
                                      "= 32)")
    e = error("let E = [3, 4]\ndef k(x: tensor[N, E]) = E\n")
    assert (e.line, e.message) == (2, "E is a let holding a value of shape 2, not a size, so k's "
                                      "types cannot name it: a let that is a size holds one "
                                      "whole number (let E = 32); for a size of each call's "
                                      "own, use another name")
    # no let of that name, or an error that does not name it: no note
    assert error("def f(p: tensor[T, 2], x: tensor[8, 2]) {\n"
                 "    let y: tensor[2, T, 2] = reshape(x)\n    return y\n}\n").notes == ()


def test_the_sum_hint_runs_as_written():
    """Found by a newcomer: the hint for sum on a tensor of higher rank wrote tensor[1xN],
    which is an error outside a def; now sum(x) is goat's own, and the hint for NumPy's
    method x.sum() writes it."""
    message = error("let x = ones(tensor[2x3x4])\nprint x.sum()\n").message
    assert "write sum(x) (every cell), row_sum(x) or col_sum(x)" in message
    (total, rows) = run("let x = ones(tensor[2x3x4])\nprint sum(x)\nprint row_sum(x)\n")
    assert total.tolist() == 24 and rows.shape == (2, 3, 1)


@pytest.mark.parametrize("src, message", [
    ("let a = zeros(tensor[1x2)\n", "')' does not close the '[' opened on line 1"),
    ("def f(a: tensor[1x2) {\n    return a\n}\n", "')' does not close the '[' opened on line 1"),
    ("let a: tensor[1x = 1\n", "'[' is never closed"),
])
def test_a_type_whose_bracket_is_not_closed_is_one_error(src, message):
    """Found by a breaker: tensor[1x2) was also said not to be followed by its dimensions."""
    e = error(src)
    assert not hasattr(e, "errors") and e.message == message


def _reported(src):
    """(line, message) of each error goat.check_source reports for ``src``."""
    try:
        goat.check_source(src)
    except goat.GoatErrors as e:
        return [(x.line, x.message) for x in e.errors]
    except goat.GoatError as e:
        return [(e.line, e.message)]
    raise AssertionError("no error")


def _expect(src, expected):
    """The errors of ``src`` are those of ``expected``: (line, the message's start) each."""
    got = _reported(src)
    assert len(got) == len(expected), got
    for (line, message), (want_line, start) in zip(got, expected):
        assert line == want_line and message.startswith(start), got


@pytest.mark.parametrize("src, expected", [
    # a loop's header that cannot be read: its block is left out, the lines after are checked
    ("let x = [1, 2, 3]\nprint x + [1, 2]\nfor i in 0..: {\n    print y\n}\nprint z\n",
     [(2, "cannot add shapes 3 and 2"), (3, "syntax error: expected an expression"),
      (6, "unknown name 'z'")]),
    # an else if that cannot be read, and an else after it (no second error)
    ("print q\nif 1 < 2 {\n    print 1\n} else iff {\n    print 2\n} else {\n    print 3\n}\n"
     "print z\n",
     [(1, "unknown name 'q'"), (4, "syntax error: expected 'if' or '{'"),
      (9, "unknown name 'z'")]),
    # an else with no if before it, and one after an if that has its else already
    ("print q\nelse {\n    print 2\n}\nif 1 {\n    print 1\n} else {\n    print 2\n}\n"
     "else {\n    print 3\n}\nprint z\n",
     [(1, "unknown name 'q'"), (2, "'else' must follow the '}' of an if block"),
      (10, "this if already has an else block"), (13, "unknown name 'z'")]),
    ("if 1 {\n    print 1\n} else {\n    print 2\n} else {\n    print 3\n}\nprint z\n",
     [(5, "this if already has an else block"), (8, "unknown name 'z'")]),
    ("print 1 + 2)\nprint z\n",
     [(1, "unmatched ')': no bracket is open here"), (2, "unknown name 'z'")]),
    # a } with no block open
    ("print q\n}\nprint z\n",
     [(1, "unknown name 'q'"), (2, "unmatched '}': no block is open here"),
      (3, "unknown name 'z'")]),
    # a ( left open on the line before a block's }: that line's error, and the } closes
    ("print q\nfor i in 0..3 {\n    print foo(i\n}\nprint z\n",
     [(1, "unknown name 'q'"), (4, "'}' does not close the '(' opened on line 3"),
      (5, "unknown name 'z'")]),
    # a { inside a ( that is never closed: the header's error
    ("print q\nif (1 < 2 {\n    print 1\n}\nprint z\n",
     [(1, "unknown name 'q'"), (2, "a block '{' cannot open inside the '(' opened on line 2"),
      (5, "unknown name 'z'")]),
    # a def's header that cannot be read: calls to it say nothing more
    ("def f(x: tensor[2x3], {\n    return x\n}\nprint f([[1, 2, 3], [4, 5, 6]])\nprint z\n",
     [(1, "a block '{' cannot open inside the '(' opened on line 1"), (5, "unknown name 'z'")]),
    # blocks never closed, with the errors before them
    ("print q\nfor i in 0..3 {\n    print i\n",
     [(1, "unknown name 'q'"), (2, "'{' is never closed")]),
    ("print q\nfor i in 0..3 {\n    print (i\n",
     [(1, "unknown name 'q'"), (3, "'(' is never closed")]),
    # a header that cannot be read inside a block: the enclosing block goes on
    ("for i in 0..2 {\n    if i <  {\n        print i\n    }\n    print i + [1, 2]\n}\n"
     "print z\n",
     [(2, "syntax error"), (7, "unknown name 'z'")]),
])
def test_a_blocks_header_that_cannot_be_read_does_not_hide_the_other_errors(src, expected):
    """Found by a breaker: an unreadable for/if/else-if header, a stray else or }, or a
    bracket left open inside a block stopped the reading of the whole file, and the errors
    around it (syntax and shape alike) went unreported."""
    _expect(src, expected)


def test_the_repl_and_a_single_error_still_raise_the_first_syntax_error():
    # without an errors list (the REPL's parse), the first error is raised alone
    from goat.diagnostics import Source
    from goat.lexer.parser import parse
    for src, message in [("for i in 0..: {\n}\n", "syntax error: expected an expression"),
                         ("else {\n}\n", "'else' must follow the '}' of an if block"),
                         ("}\n", "unmatched '}'"),
                         ("for i in 0..3 {\n    print (i\n}\n", "'}' does not close")]:
        with pytest.raises(goat.GoatError) as info:
            parse(Source("<t>", src))
        assert info.value.message.startswith(message)


MATMUL_ERROR = "print [[1, 2]] @ [[1]]\n"


@pytest.mark.parametrize("src, expected", [
    # a header with no {: the lines indented under it, and the } under the header, are its
    # block (no second error for that })
    ("for i in 0..3\n  print i\n}\n" + MATMUL_ERROR,
     [(1, "syntax error: expected '{'"), (4, "cannot matrix-multiply")]),
    # ... inside a def: the } under the for is the for's, the def's own } closes the def
    ("def f(x: tensor[2]) -> tensor[2] {\n  for i in 0..3\n    print i\n  }\n  return x\n}\n"
     + MATMUL_ERROR,
     [(2, "syntax error: expected '{'"), (7, "cannot matrix-multiply")]),
    # ... Python's blocks: each header its own error, the block ends where the indent does
    ("var s = 0\nif s < 1:\n    s = s + 1\nelse:\n    s = s - 1\n" + MATMUL_ERROR,
     [(2, "syntax error"), (4, "syntax error"), (6, "cannot matrix-multiply")]),
    # ... the header reads with a { in place of its end: its block is checked
    ("for i in 0..3\n    print i\n    print j\n}\nprint k\n",
     [(1, "syntax error: expected '{'"), (3, "unknown name 'j'"), (5, "unknown name 'k'")]),
    # ... an else after a } (the } is the if's, the one under the else the else's)
    ("let x = 2\nif x > 1 {\n    print 1\n} else\n    print zz\n}\nprint yy\n",
     [(4, "syntax error"), (5, "unknown name 'zz'"), (7, "unknown name 'yy'")]),
    ("let x = 2\nif x > 1 {\n    print 1\n} else if x > 0\n    print zz\n}\nprint yy\n",
     [(4, "syntax error"), (5, "unknown name 'zz'"), (7, "unknown name 'yy'")]),
    # ... its lines not indented: the } at its indentation ends it
    ('let s = 1\nif s > 1\nprint "big"\n}\nprint zz\n',
     [(2, "syntax error"), (5, "unknown name 'zz'")]),
    ('let s = 1\nif s > 1\nprint "big"\n} else if s > 0\nprint 1\n} else {\nprint 2\n}\n'
     'print zz\n',
     [(2, "syntax error"), (4, "syntax error"), (9, "unknown name 'zz'")]),
    # ... on one line with its }: that } is its own, not the def's
    ("def f(x: scalar) {\n    var acc = x\n    for k in 0..2 acc = acc * 2 }\n    return acc\n"
     "}\nprint z\n",
     [(3, "syntax error"), (6, "unknown name 'z'")]),
    # ... a header with no block under it: the next line is the program's
    ("for i in 0..3 print i\nprint z\n",
     [(1, "syntax error"), (2, "unknown name 'z'")]),
    # a { on the line after its header: one error, saying where the { goes, and the block
    # is checked
    ("for i in 0..3\n{\n  print i + [[1, 2]] @ [[1]]\n}\n" + MATMUL_ERROR,
     [(2, "syntax error: a block's '{' goes at the end of its header's line (for i in 0..3 {)"),
      (3, "cannot matrix-multiply"), (5, "cannot matrix-multiply")]),
    ("if 1 < 2\n{\n  print 1\n}\nelse\n{\n  print 2\n}\n" + MATMUL_ERROR,
     [(2, "syntax error: a block's '{' goes at the end of its header's line (if 1 < 2 {)"),
      (6, "syntax error: a block's '{' goes at the end of its header's line (else {)"),
      (9, "cannot matrix-multiply")]),
    # ... a header that does not read with its { either: its own error, its block dropped
    ("for i in 0..\n{\n  print i\n}\n" + MATMUL_ERROR,
     [(1, "syntax error"), (5, "cannot matrix-multiply")]),
])
def test_a_header_without_its_brace_is_one_error(src, expected):
    """Found by a breaker: a block's header with no { (or its { on the next line) was one
    error, and the } that ended its block (or the lone {) a second."""
    _expect(src, expected)


def test_what_a_dropped_block_assigns_is_unknown_after_it():
    """Found by a breaker: the body of a loop whose header could not be read was dropped,
    and a grad after it then said the loss did not depend on w (the update was in that
    body).  What the dropped statements assign is unknown after the block, as a statement's
    that could not be read is; a name it does not assign is still checked."""
    src = ("var w = [1.0, 2.0]\n"
           "for step in 0..: {\n"
           "  w = w - 0.1 * grad(sum(w * w), w)\n"
           "}\n"
           "print grad(sum(w * w), w)\n"       # w unknown: not checked, no second error
           "print [[1, 2]] @ [[1]]\n")
    with pytest.raises(goat.GoatErrors) as info:
        goat.check_source(src)
    assert [e.line for e in info.value.errors] == [2, 6]
    # the same with an else after an if whose header could not be read
    src = ("var w = [1.0, 2.0]\nif w <: {\n  print 1\n} else {\n  w = w * 2\n}\n"
           "print w @ [[1]]\nprint [[1, 2]] @ [[1]]\n")
    with pytest.raises(goat.GoatErrors) as info:
        goat.check_source(src)
    assert [e.line for e in info.value.errors] == [2, 8]


@pytest.mark.parametrize("src, expected", [
    ("print [[1, 2)]\nprint z\n",                        # a ) typed for a ]
     [(1, "')' does not close the '[' opened on line 1"), (2, "unknown name 'z'")]),
    ("let t: tensor[3x3) = zeros()\nprint z\n",
     [(1, "')' does not close the '['"), (2, "unknown name 'z'")]),
    ("let a = [1, 2]\nprint sum(a[1)\nprint z\n",        # a ] forgotten inside a ( )
     [(2, "')' does not close the '['"), (3, "unknown name 'z'")]),
    ("for i in 0..2 {\n  print i)\n  print [[1, 2]] @ [[1]] + i\n}\nprint z\n",   # a ) in a block
     [(2, "unmatched ')': no bracket is open here"), (3, "cannot matrix-multiply"),
      (5, "unknown name 'z'")]),
    ("print (1; print 2 + [1]\nprint z\n",      # a ; then a statement: it ends the first
     [(1, "';' cannot appear inside the '(' opened on line 1"), (2, "unknown name 'z'")]),
    ("print (1; 2)\nprint z\n",                  # a ; for a , : one error, the ) its own
     [(1, "';' cannot appear inside the '(' opened on line 1"), (2, "unknown name 'z'")]),
    ("print [1; 2]\nprint (1,\n2;\n3)\nprint z\n",
     [(1, "';' cannot appear inside the '['"), (3, "';' cannot appear inside the '(' opened "
                                                    "on line 2"), (5, "unknown name 'z'")]),
    # a let's ] forgotten before a block: the let's name is unknown after it, not undefined
    ("let m = [[1, 2], [3, 4]\nfor i in 0..2 {\n    print i + [[1, 2]] @ [[1]]\n}\nprint m\n"
     "print z\n",
     [(1, "'[' is never closed: a ']' is missing before line 2, which starts another "
          "statement (for)"), (3, "cannot matrix-multiply"), (6, "unknown name 'z'")]),
    ("let m = [[1, 2], [3, 4] for i in 0..2 {\n    print i\n}\nprint m\nprint z\n",
     [(1, "a block '{' cannot open inside the '[' opened on line 1"), (5, "unknown name 'z'")]),
    ("let x = [1, 2]]\nprint x + [1]\n",
     [(1, "unmatched ']'")]),
])
def test_a_bracket_that_does_not_match_is_its_statements_error(src, expected):
    """Found by a breaker: a ) or ] that closed another bracket, or a ; inside ( ), stopped
    the reading of the whole file.  It is its statement's error, the brackets mended as the
    likeliest slip has it, and the statements after it are read and checked."""
    _expect(src, expected)


def test_a_def_written_without_its_keyword_is_one_error():
    """Found by a breaker: f(a: tensor[2]) = a * 2 was a syntax error, and each call of f
    after it a second one (unknown function 'f').  The error says a function is defined with
    def, and the calls are not reported again."""
    src = ("f(a: tensor[2]) = a * 2\nprint f([1, 2])\n"
           "g(a: tensor[2]) -> tensor[2] {\n  return a\n}\nprint g([1, 2])\nprint z\n")
    with pytest.raises(goat.GoatErrors) as info:
        goat.check_source(src)
    got = [(e.line, e.message) for e in info.value.errors]
    assert [line for line, _ in got] == [1, 3, 7], got
    assert got[0][1].endswith("; a function is defined with def: def f(...)")
    assert got[1][1].endswith("; a function is defined with def: def g(...)")


@pytest.mark.parametrize("src", ["import nn\nprint nn.\n", "import nn\nprint nn. linear\n"])
def test_a_dot_with_no_name_after_it_says_what_follows_a_dot(src):
    """Found by a newcomer: nn. then Enter in the REPL said only "unexpected character '.'"."""
    with pytest.raises(goat.GoatError) as info:
        goat.check_source(src)
    assert info.value.line == 2 and info.value.message == (
        "unexpected character '.'; a dot is followed, with no space, by the name of a "
        "module's def: nn.linear (in the REPL, Tab after the dot lists them)")


@pytest.mark.parametrize("src, expected", [
    # the if's } forgotten: its block ends at the line indented as its header, the } under
    # the for closes the for, and the if is the error
    ("var s = 0\nfor i in 0..3 {\n  if i > 1 {\n    s = s + i\n\n  s = s * 2\n}\nprint z\n",
     [(3, "'{' is never closed: line 6 is indented no deeper than its header, so the block "
          "ends before it"), (8, "unknown name 'z'")]),
    # ... the } right after the if's block: it closes the for
    ("var s = 0\nfor i in 0..3 {\n  if i > 1 {\n    s = s + i\n}\nprint z\n",
     [(3, "'{' is never closed: the '}' on line 5 is indented as the block on line 2, and "
          "closes that one"), (6, "unknown name 'z'")]),
    # the last } of the file forgotten (a breaker's: every line after was left out)
    ("for i in 0..3 {\n    print i\nprint zz\nprint [[1, 2]] @ [[1]]\n",
     [(1, "'{' is never closed: line 3 is indented no deeper than its header"),
      (3, "unknown name 'zz'"), (4, "cannot matrix-multiply")]),
    ("for i in 0..3 {\n    print i\nfor j in 0..2 {\n  print j\n}\nprint zz\n",
     [(1, "'{' is never closed: line 3"), (6, "unknown name 'zz'")]),
    # an else's, inside a def: the def's } still closes the def
    ("def f(x: tensor[2]) -> tensor[2] {\n  var s = x\n  for i in 0..3 {\n    if i > 1 {\n"
     "      s = s + x\n    } else {\n      s = s * 2\n\n  }\n  return s\n}\nprint z\n",
     [(6, "'{' is never closed: the '}' on line 9 is indented as the block on line 3"),
      (12, "unknown name 'z'")]),
    # two forgotten: each its error
    ("for i in 0..3 {\n  for j in 0..3 {\n    if i > j {\n      print i\n\n}\nprint z\n",
     [(2, "'{' is never closed: the '}' on line 6 is indented as the block on line 1"),
      (3, "'{' is never closed: the '}' on line 6 is indented as the block on line 1"),
      (7, "unknown name 'z'")]),
    # braces in strings and comments are not counted; a } not first on its line tells nothing
    ('for i in 0..3 {  # {\n  if i > 1 {\n    print "{i}"\n\n}\nprint z\n',
     [(2, "'{' is never closed: the '}' on line 5"), (6, "unknown name 'z'")]),
    # a } in a string or a comment is no brace (a breaker's: the count had taken them)
    ('for i in 0..3 {  # loop }\n  if i > 1 {\n    print "i = {i} }}"\n  print i\n}\n'
     'print z\n',
     [(2, "'{' is never closed: line 4 is indented no deeper"), (6, "unknown name 'z'")]),
    # a } too many inside a def, indented deeper than the def: that } is the error, the def
    # is read to its own } and its calls are checked
    ("def f(x: tensor[2]) -> tensor[2] {\n  let y = x * 2\n  }\n  return y\n}\n"
     "print f([1, 2]) @ [[1]]\nprint z\n",
     [(3, "this '}' closes no block: the block opened on line 1 ends at the '}' on line 5, "
          "indented as its header"), (6, "cannot matrix-multiply"), (7, "unknown name 'z'")]),
    # the indentation does not explain it: the innermost { left open, as before
    ("for i in 0..3 {\nprint i\nprint z\n",
     [(1, "'{' is never closed")]),
])
def test_a_forgotten_brace_is_found_by_the_indentation_of_the_braces_after_it(src, expected):
    """Found by a breaker: a block's } forgotten inside another was reported at the
    outermost block (the } meant for it closed the inner one), and everything after was
    dropped with it.  The } lined up with the outer header closes it; the inner block is the
    error, and the lines after are checked."""
    _expect(src, expected)


def test_a_valid_program_however_indented_is_not_repaired():
    src = ("var s = 0\nfor i in 0..3 {\n    if i > 1 {\n        s = s + i\n}\n}\n"
           "  for j in 0..2 {\ns = s + j\n      }\nprint s\n")
    assert goat.run_source(src)[0] == 3        # 2, then 0 + 1


@pytest.mark.parametrize("text", ["f(a: tensor[2]) = a * 2\n", "f(a) = a * 2\n",
                                  "f(a: tensor[2]) -> tensor[2] {\n    return a\n}\n"])
def test_the_repl_says_a_function_is_defined_with_def_too(text):
    """Found by a breaker: in a file, f(a: tensor[2]) = a * 2 said that a function is defined
    with def; the REPL, which reads f(a: as a call, did not."""
    from goat.diagnostics import Source
    from goat.lexer.parser import parse
    with pytest.raises(goat.GoatError) as info:
        parse(Source("<input 1>", text), interactive=True)
    assert info.value.message.endswith("; a function is defined with def: def f(...)")


@pytest.mark.parametrize("src, expected", [
    # an assignment ends a ( left open before it, as a statement's keyword does
    ("var h = [[0, 0]]\nvar s = [[0]]\nh = tanh(h + 1\ns += row_sum(hh)\nprint s\n",
     [(3, "'(' is never closed: a ')' is missing before line 4, which starts another "
          "statement (s)"), (4, "unknown name 'hh'")]),
    ("var h = [[0, 0]]\nvar s = [[0]]\nfor t in 0..3 {\n  h = tanh(h + 1\n  s += row_sum(hh)\n}\n",
     [(4, "'(' is never closed: a ')' is missing before line 5"), (5, "unknown name 'hh'")]),
    # a row's ( typed for its [ in a matrix over several lines: read as the [ (closing the
    # matrix there left the next row and its ] as more errors)
    ("let x = [[1, 0],\n(0, 1],\n[1, 1]]\nprint x\nprint zz\n",
     [(2, "']' does not close the '(' opened on line 2"), (5, "unknown name 'zz'")]),
    # ... and a ] forgotten inside a call: the ) closes both
    ("let a = [[1, 2]]\nprint row_sum(a[1)\nprint zz\n",
     [(2, "')' does not close the '['"), (3, "unknown name 'zz'")]),
    # a ) typed for a type's ] in a def's parameters: the def's error, the file read on
    ("def f(a: tensor[2), b: tensor[2]) = a + b\nprint f([1, 2], [3, 4])\nlet q = zz\n",
     [(1, "')' does not close the '[' opened on line 1"), (3, "unknown name 'zz'")]),
    ("def f(a: tensor[2x3),\n      b: tensor[2]) -> tensor[2] {\n  return b\n}\nprint zz\n",
     [(1, "')' does not close the '['"), (5, "unknown name 'zz'")]),
    # a { doubled: the second opens nothing, and the block is checked
    ("for i in 0..3 {{\n  print i + [[1, 2]] @ [[1]]\n}\nprint z\n",
     [(1, "a block opens with one '{': this second one opens nothing"),
      (2, "cannot matrix-multiply"), (4, "unknown name 'z'")]),
    # a let without its let (Python's annotated assignment): one error, saying so
    ("w: tensor[1x2] = [[1, 2]]\nw = w * 10\nprint w\nprint zz\n",
     [(1, "a new name needs let or var: let w: tensor[1x2] = ... (NAME: TYPE = ... gives a "
          "member its first value in a params block only)"), (4, "unknown name 'zz'")]),
    # a } too many at the header's indentation, the block's lines going on indented after it
    ('for step in 0..3 {\n}\n    print "a {step}"\n}\nprint zz\n',
     [(2, "this '}' closes no block: the block opened on line 1 ends at the '}' on line 4"),
      (5, "unknown name 'zz'")]),
])
def test_a_second_round_of_slips_is_one_error_each(src, expected):
    """Found by a second breaker: each of these gave a follow-on error or hid one after it."""
    _expect(src, expected)


@pytest.mark.parametrize("src, expected", [
    # a string in single or curly quotes: one error, its braces no block
    ("let l = 1\nprint 'loss {l:.3f}'\nprint l + qq\nprint \u201closs {l}\u201d\n",
     [(2, "unexpected character \"'\"; strings are written in double quotes"),
      (3, "unknown name 'qq'"), (4, "unexpected character '\u201c'")]),
    # a C comment: one error, its brace no block
    ("let x = 1\n// note {\nprint qq\n",
     [(2, "unexpected '//'; a comment starts with #"), (3, "unknown name 'qq'")]),
    # a type's ] forgotten: that statement's error, the file read on
    ("let w: tensor[2x2 = [[1, 2], [3, 4]]\nprint qq\n",
     [(1, "'[' is never closed: a type's sizes end with ']'"), (2, "unknown name 'qq'")]),
    ("def f(a: tensor[2, b: tensor[3]) = a\nprint qq\n",
     [(1, "'[' is never closed: a type's sizes end with ']'"), (2, "unknown name 'qq'")]),
    # a header without its { and, later, a } forgotten: the count balances, yet each is
    # found (the first } is the brace-less header's)
    ("var s = 1\nfor i in 0..3\n    print i\n}\nfor j in 0..3 {\n    print j\nprint s + qq\n",
     [(2, "syntax error: expected '{'"), (5, "'{' is never closed: line 7"),
      (7, "unknown name 'qq'")]),
    # a block whose } is forgotten is closed where the indentation says, and checked
    ("var y = [1.0]\nfor i in 0..3 {\n    y = y * qq\nprint y\nprint zz\n",
     [(2, "'{' is never closed: line 4 is indented no deeper than its header"),
      (3, "unknown name 'qq'"), (5, "unknown name 'zz'")]),
    # ... a def's: its calls are checked against it
    ("def f(x: tensor[2]) -> tensor[2] {\n    return x * 2\nprint f([1, 2, 3])\n",
     [(1, "'{' is never closed"), (3, "argument x of f must have shape 2, got 3")]),
    # ... two of them, the last at the end of the file
    ("for i in 0..3 {\n    print i\nprint qq\nfor j in 0..3 {\n    print j + zz\n",
     [(1, "'{' is never closed: line 3"), (3, "unknown name 'qq'"),
      (4, "'{' is never closed: its '}' is missing at the end of the file"),
      (5, "unknown name 'zz'")]),
    # ... with a ( left open in it too
    ("var y = [[1.0]]\nfor i in 0..3 {\n    y = y + row_sum(y\n    print y\nprint y\nprint qq\n",
     [(2, "'{' is never closed: line 5"), (3, "'(' is never closed"),
      (6, "unknown name 'qq'")]),
])
def test_a_third_round_of_slips_is_one_error_each(src, expected):
    """Found by a third breaker: each of these hid an error after it or added one."""
    _expect(src, expected)



def test_a_size_variable_read_as_a_value_is_that_calls_size():
    """Found by a newcomer: tokens / T in a def over tokens: tensor[B, T] said "unknown
    name 'T'"; a size variable is a number in the body, each call's own, as size(x, axis)
    gives it."""
    src = ("def f(tokens: tensor[B, T], w: tensor[P, C]) {\n    return tokens / T + C\n}\n"
           "print f([[1, 2]], [[1]])\nprint f([[1, 2, 3, 4]], [[1, 2, 3]])\n")
    a, c = run(src)
    assert a.tolist() == [[1.5, 2.0]] and c.tolist() == [[3.25, 3.5, 3.75, 4.0]]
    e = error("def f(tokens: tensor[B, T]) = tokens\nprint T\n")
    assert e.message.startswith("unknown name 'T'"), e.message


def test_a_let_in_a_defs_parameters_that_is_no_size_is_that_error(tmp_path):
    """Found by a breaker: with let C = 4.5 (or --let C=-3) the def's C had become a size
    variable taking any size, quietly dropping the check."""
    e = error("let C = 4.5\ndef f(x: tensor[N, C]) = x * C\nprint f(ones(tensor[1x5]))\n")
    assert (e.line, e.message) == (2, "the size C is 4.5, not a whole number from 0")
    (tmp_path / "p.mg").write_text("let C = 4\ndef f(x: tensor[N, C]) = x\n"
                                   "print f(ones(tensor[1x4]))\n")
    status, _, err = cli("run", "--let", "C=-3", "p.mg", cwd=str(tmp_path))
    assert status == 1
    assert err.splitlines()[0] == "p.mg:2: error: the size C is -3, not a whole number from 0"


def test_the_note_on_a_lets_size_names_its_file_when_it_is_another(tmp_path):
    (tmp_path / "mm.mg").write_text("# a module\n\n\nlet C = 4\ndef f(x: tensor[N, C]) = x\n")
    (tmp_path / "main.mg").write_text("import mm\nlet C = 5\nprint mm.f(ones(tensor[2x5]))\n")
    with pytest.raises(goat.GoatError) as info:
        goat.run_file(str(tmp_path / "main.mg"))
    assert info.value.notes == ("C in mm.f's types is 4, the let C on line 4 of %s"
                                % (tmp_path / "mm.mg"),)


@pytest.mark.parametrize("src", [
    "let a = 3\nlet b = if a > 2 { 1 } else { 0 }\nprint b\n",
    "let a = 3\nlet b = if a > 2 {\n    1\n} else {\n    0\n}\nprint b\n",
])
def test_an_if_written_as_a_value_is_one_error_pointing_to_where(src):
    """Found by a newcomer: let b = if a > 2 { 1 } else { 0 } said only 'expected an
    expression, found if', then twice that a value on its own line does nothing."""
    e = error(src)
    assert len(getattr(e, "errors", [e])) == 1
    assert e.line == 2 and e.message == (
        "syntax error: expected an expression, found 'if'; an if is a statement, not a value: "
        "where(c, a, b) chooses between two values (elementwise), or declare a var and assign "
        "it in each branch")


def test_the_power_hint_multiplies_first():
    """Found by a newcomer: mean((p - y) ** 2) was told to write exp(p * log(x)), a NaN for a
    negative difference."""
    e = error("let d = [-1, 2]\nprint d ** 2\n")
    assert e.message.endswith("there is no power operator (**): square(x) is x * x, and for x > "
                              "0 write exp(p * log(x))")


def test_numbers_combined_with_a_call_anywhere_give_it_the_annotations_shape():
    """Found by a breaker: 0.02 * randn(5) + 1, 2 * (randn(1) + 1), 1 - 2 * rand(1) were still
    refused; a var's assignment takes the var's shape the same way."""
    got = run("var b: tensor[3x1] = 0.02 * randn(5) + 1\nlet c: tensor[2] = 2 * (randn(1) + 1)\n"
              "let d: tensor[2] = 1 - 2 * rand(3)\nlet e: tensor[2] = 0.1 * -randn(1)\n"
              "var w: tensor[2x2] = zeros()\nw = randn(7) * 0.3\n"
              "print b - (0.02 * randn(tensor[3x1], 5) + 1)\n"
              "print c - 2 * (randn(tensor[2], 1) + 1)\nprint d - (1 - 2 * rand(tensor[2], 3))\n"
              "print e - 0.1 * -randn(tensor[2], 1)\nprint w - randn(tensor[2x2], 7) * 0.3\n")
    for g in got:
        assert not np.any(g)
    e = error("var w: tensor[2x2] = randn(1) * randn(2)\n")
    assert e.message.startswith("randn takes 2 arguments, got 1")


def test_check_shapes_shows_a_whole_numbers_every_digit(tmp_path):
    (tmp_path / "s.mg").write_text("let A = 1000001\nlet B = 1234567 * 3\nlet c = 0.5\n")
    assert cli("check", "--shapes", str(tmp_path / "s.mg"))[1].splitlines() == [
        "A : scalar = 1000001", "B : scalar = 3703701", "c : scalar = 0.5"]


def test_a_size_may_be_arithmetic_on_lets_and_numbers(tmp_path):
    """Found by a newcomer writing an LSTM's fused gates: tensor[D, 4 * H] and tensor[D + H,
    4 * H] had been malformed types; a size may be + - * and brackets on whole numbers and
    lets, which --let changes with the rest."""
    src = ("let D = 3\nlet H = 2\nvar wx: tensor[D, 4 * H] = randn(1) * 0.3\n"
           "var w: tensor[D + H, 4 * H] = zeros()\nlet z: tensor[(D + 1) * 2] = ones()\n"
           "let a: tensor[2 * (3 + 1), 4] = zeros()\n"
           "def f(x: tensor[N, D + H]) = row_sum(x)\n"
           "print wx\nprint w\nprint z\nprint a\nprint f(ones(tensor[2, D + H]))\n")
    wx, w, z, a, fx = run(src)
    assert wx.shape == (3, 8) and w.shape == (5, 8) and z.shape == (8,) and a.shape == (8, 4)
    assert fx.tolist() == [[5], [5]]
    assert np.array_equal(wx, run("print randn(tensor[3x8], 1) * 0.3\n")[0])
    (tmp_path / "p.mg").write_text(src)
    status, out, _ = cli("check", "--shapes", "--let", "H=3", "p.mg", cwd=str(tmp_path))
    assert status == 0 and "var w : tensor[6x12]" in out.splitlines()
    for bad, message in (
            ("let D = 3\nlet z: tensor[D - 5] = zeros()\n",
             "the size D - 5 is -2, not a whole number from 0"),
            ("let z: tensor[Q * 2] = zeros()\n",
             "the size Q * 2 names Q, which is no let holding a size: a size written as "
             "arithmetic is on whole numbers and lets (let H = 32 ... tensor[4 * H])"),
            ("var V = 2\nlet z: tensor[V * 2] = zeros()\n",
             "V is a var, which may change, so it cannot be part of the size V * 2: make it a "
             "let (let V = ...)")):
        assert error(bad).message == message


@pytest.mark.parametrize("src, says", [
    ("let H = 2\nlet H2 = H - 5\nprint zeros(tensor[H2 + 10])\n", None),    # only the size is checked
    ("print zeros(tensor[(3)])\n", None),
    ("let H = 2\nprint zeros(tensor[? + H])\n", "; a ? cannot be in it"),
    # a module's let may be in the arithmetic; one it does not have is that error
    ("import nn\nprint zeros(tensor[nn.H * 2])\n", "module nn has no def or let named 'H'"),
])
def test_arithmetic_sizes_found_by_a_breaker(src, says):
    if says is None:
        assert run(src)[0].shape in ((7,), (3,))
    else:
        assert error(src).message.endswith(says)


def test_a_call_of_another_size_notes_the_let_in_a_sizes_arithmetic():
    e = error("let H = 2\ndef f(x: tensor[N, H * 2]) = x\nprint f(zeros(tensor[3, 5]))\n")
    assert e.message == "argument x of f must have shape Nx4 (N = 3), got 3x5"
    assert e.notes == ("H * 2 in f's types is 4, from the let H on line 1",)


@pytest.mark.parametrize("call, words", [
    ("conv1d(x, w)", "goat has no convolution op: a kernel of width 3"),
    ("pad(x, 1)", "write concat(concat(zeros(tensor[...]), x, axis)"),
    ("unfold(x, 1, 3, 1)", "take the windows with a tensor of indices"),
    ("topk(x, 2)", "write argsort(-x)[..., 0:k]"),
    ("multinomial(x, 1)", "write sample_rows(p, seed)"),
    ("permutation(5)", "write randperm(N, seed)"),
    ("sort(x)", "write x[argsort(x)] for a vector"),
    ("row_argmax(x)", "write argmax_rows(x)"),
])
def test_functions_of_other_libraries_say_what_goat_writes(call, words):
    """Newcomers' reaches (PyTorch's and NumPy's names): each says goat's way."""
    e = error("let x = [[1, 2]]\nlet w = x\nprint %s\n" % call)
    assert e.message.startswith("unknown function '%s'; " % call.partition("(")[0])
    assert words in e.message, e.message


@pytest.mark.parametrize("call, message", [
    ("row_mean(x, 1)", "row_mean takes 1 argument, got 2; row_mean(x) takes no axis: it averages "
                       "along the last axis (keeping it as size 1), col_mean(x) along the one "
                       "before it, mean(x) over every cell; another axis first goes last with "
                       "swapaxes(x, a, -1)"),
    ("col_max(x, 0)", "col_max takes 1 argument, got 2; col_max(x) takes no axis: it works along "
                      "the second-to-last axis (keeping it as size 1), row_max(x) along the "
                      "last, max(x) over every cell"),
    ("x.pow(2)", "'x' is not a module, so 'x.pow' means nothing; goat has no methods: write "
                 "square(x) for x ** 2; there is no power (for x > 0, exp(p * log(x)))"),
])
def test_a_reduction_given_an_axis_and_a_power_method_say_what_to_write(call, message):
    """Found by a newcomer: row_mean(x, 1) had a bare 'takes 1 argument', where mean(x, 1)
    pointed to the reductions; x.pow(2) had no hint where x.T had one."""
    e = error("let x = [[1.0, 2]]\nprint %s\n" % call)
    assert (e.line, e.message) == (2, message)


@pytest.mark.parametrize("params, body", [
    ("w: tensor[...]", "    let\n    return w\n"),
    ("w: tensor[..., N]", "    if 1 {\n        print (\n    }\n    return w\n"),
    ("w: tensor[...], k: scalar = 2", "    for i in 0..2 {\n        assert\n    }\n    return w * k\n"),
    ("w: tensor[...]", "    let a, = 1\n    return w\n"),
])
def test_a_line_not_read_in_a_def_of_leading_sizes_is_its_syntax_error(params, body):
    """Found by a fuzzer: a def with ... parameters, checked again for a call's leading sizes,
    met the line it could not read as an unknown statement (an internal error)."""
    text = "def f(%s) {\n%s}\nprint f([[1, 2]])\n" % (params, body)
    with pytest.raises(goat.GoatError) as info:
        goat.check_source(text)
    errors = getattr(info.value, "errors", [info.value])
    assert len(errors) == 1 and errors[0].message.startswith(("syntax error", "'}' does not"))


def test_a_number_for_a_tensor_parameter_says_how_to_fill_one():
    """A newcomer's: nn.attention's mask given 0 (its comment says "or 0 everywhere") was
    refused without a word on what to write; a parameter's shape is exact."""
    e = error("import nn\nlet q = randn(tensor[2x2x4x3], 1)\nprint nn.attention(q, q, q, 0, 0.5)\n")
    assert e.line == 3 and e.message == (
        "argument mask of nn.attention must have shape TxS (T = 4, S = 4), got scalar; a "
        "parameter's shape is exact, and a number is not spread over it: write "
        "zeros(tensor[4x4]) for 0 in every cell")
    e = error("def f(x: tensor[2, 3]) = x\nlet m = 3\nprint f(m * 2)\n")
    assert e.message.endswith("write zeros(tensor[2x3]) + m * 2 for m * 2 in every cell")
    (got,) = goat.run_source("import nn\nlet q = randn(tensor[2x4x3], 1)\n"
                             "print nn.attention(q, q, q, zeros(tensor[4, 4]), 0.5)\n")
    assert got.shape == (2, 4, 3)


def test_the_reversal_the_reversed_slices_error_suggests_is_numpys_and_differentiable():
    """The flip a newcomer's image augmentation needed (x[..., ::-1] is refused): the tensor of
    indices the message writes, here and in a def over N, against NumPy, and its gradient."""
    x = np.arange(24.0).reshape(2, 3, 4)
    src = ("let x = %s\nprint x[..., 3 - iota(tensor[4], 0)]\n"
           "def flip(v: tensor[B, N]) = v[..., N - 1 - iota(tensor[N], 0)]\n"
           "print flip(x[0])\nprint grad(sum(flip(x[1]) * [1, 2, 3, 4]), x)\n"
           % np.array2string(x, separator=", "))
    a, b, g = goat.run_source(src)
    assert np.array_equal(a, x[..., ::-1]) and np.array_equal(b, x[0][..., ::-1])
    want = np.zeros_like(x)
    want[1] = [4, 3, 2, 1]
    assert np.array_equal(g, want)


@pytest.mark.parametrize("aot", [False, True])
def test_a_save_through_a_link_into_a_missing_folder_is_refused_before_anything_runs(tmp_path,
                                                                                     aot):
    """A breaker's: save("dangling.npy"), a link to /nonexistent/x.npy, ran the program first
    and failed at the save; a plain missing folder was refused before anything ran."""
    if aot:
        pytest.importorskip("llvmlite")
    (tmp_path / "dangling.npy").symlink_to(tmp_path / "gone" / "x.npy")
    (tmp_path / "p.mg").write_text('print 1\nsave([1, 2], "dangling.npy")\n')
    status, out, err = cli("run", *(["--aot"] if aot else []), "p.mg", cwd=str(tmp_path))
    assert (status, out) == (1, "")
    assert err.splitlines()[0] == (
        "p.mg:2: error: cannot save dangling.npy: it links to %r, in a directory that does not "
        "exist (%r); found before anything ran" % (str(tmp_path / "gone" / "x.npy"),
                                                   str(tmp_path / "gone")))
