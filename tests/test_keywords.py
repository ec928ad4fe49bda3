"""Arguments by name and parameters' defaults (docs/language.md, Defs): a call as if written
with every argument by position -- values against NumPy, optim.adamw's PyTorch defaults
against an AdamW step written here, the compiled program, and the errors."""

import numpy as np
import pytest

from conftest import compiled_numbers, error, run

_AFFINE = """def affine(x: tensor[N, 2], scale: scalar = 1, shift: tensor[1x2] = [[0, 0]]) = x * scale + shift
let x = [[1, 2], [3, 4]]
print affine(x)
print affine(x, shift=[[1, -1]])
print affine(x, 3)
print affine(shift=[[5, 5]], x=x, scale=-2)
print affine(x,
             scale = 0.5)
print swapaxes(reshape(x, tensor[1x2x2]), axis1=0, axis2=2)
"""


def test_arguments_by_name_and_defaults_give_the_call_written_by_position():
    a, b, c, d, e, f = run(_AFFINE)
    x = np.array([[1.0, 2.0], [3.0, 4.0]])
    assert np.array_equal(a, x)
    assert np.array_equal(b, x + [[1, -1]])
    assert np.array_equal(c, 3 * x)
    assert np.array_equal(d, -2 * x + 5)
    assert np.array_equal(e, 0.5 * x)
    assert np.array_equal(f, np.swapaxes(x.reshape(1, 2, 2), 0, 2))


def test_keywords_compiled_print_the_same_numbers(tmp_path):
    pytest.importorskip("llvmlite")
    (tmp_path / "p.mg").write_text(_AFFINE)
    assert compiled_numbers(tmp_path) == [np.ravel(v).tolist() for v in run(_AFFINE)]


def _adamw(w, g, m, v, t, lr=0.001, b1=0.9, b2=0.999, eps=1e-8, wd=0.01):
    """PyTorch's AdamW step (torch.optim.AdamW's defaults), in NumPy."""
    w = w * (1 - lr * wd)
    m = b1 * m + (1 - b1) * g
    v = b2 * v + (1 - b2) * g * g
    w = w - lr * (m / (1 - b1 ** t)) / (np.sqrt(v / (1 - b2 ** t)) + eps)
    return w, m, v


def test_optim_adamw_defaults_are_pytorchs_and_a_named_one_replaces_its_own():
    src = """import optim
let g = [[0.1, -0.2], [0.3, 0.4]]
var w = [[1, 2], [3, 4]]
var m = zeros(tensor[2x2])
var v = zeros(tensor[2x2])
w, m, v = optim.adamw(w, g, m, v, 1)
print w
w, m, v = optim.adamw(w, g, m, v, 2, 0.1, wd=0.5, b2=0.99)
print w
"""
    first, second = run(src)
    g = np.array([[0.1, -0.2], [0.3, 0.4]])
    w, m, v = _adamw(np.array([[1.0, 2], [3, 4]]), g, 0, 0, 1)
    assert np.allclose(first, w, rtol=1e-15, atol=0)
    w, m, v = _adamw(w, g, m, v, 2, lr=0.1, wd=0.5, b2=0.99)
    assert np.allclose(second, w, rtol=1e-14, atol=0)


def test_check_shapes_and_the_repl_show_the_defaults(tmp_path):
    from conftest import cli
    (tmp_path / "a.mg").write_text(_AFFINE)
    status, out, err = cli("check", "--shapes", str(tmp_path / "a.mg"))
    assert status == 0, err
    assert ("def affine(x: tensor[N, 2], scale: scalar = 1, shift: tensor[1x2] = [[0, 0]]) -> "
            "tensor[N, 2]") in out


@pytest.mark.parametrize("src, line, words", [
    ("def f(a: scalar, b: scalar = 2) = a + b\nprint f(b=1, 2)\n", 2,
     "an argument by position cannot follow one by name (b=...): give those by position first"),
    ("def f(a: scalar, beta: scalar = 2) = a + beta\nprint f(1, betaa=2)\n", 2,
     "f has no parameter named 'betaa' (did you mean 'beta'?); its parameters: a, beta"),
    ("def f(a: scalar, b: scalar = 2) = a + b\nprint f(1, a=2)\n", 2,
     "f's a is given twice: by position (argument 1) and by name"),
    ("def f(a: scalar, b: scalar = 2) = a + b\nprint f(1, b=2, b=3)\n", 2,
     "f's b is given twice: by name twice"),
    ("def f(a: scalar, b: scalar) = a + b\nprint f(b=1)\n", 2,
     "f needs 'a', which has no default: give a=..."),
    ("def f(a: scalar = 1, b: scalar) = a + b\n", 1,
     "a has a default, so every parameter after it needs one too (b has none)"),
    ("def f(a: scalar = [1, 2]) = a\n", 1, "a's default has shape 2, but a is declared scalar"),
    ("let k = 3\ndef f(a: scalar = k) = a\n", 2,
     "a parameter's default is a number or a list written in the def"),
    ("let x = [1]\nprint grad(sum(x), wrt=x)\n", 2,
     "grad takes its arguments by position, not by name (wrt=...)"),
    ("import optim\nlet w = [1]\nlet a, b, c = optim.adamw(w, w, w, w, 1, lr=0.1, beta1=0.8)\n", 3,
     "optim.adamw has no parameter named 'beta1'"),
    ("print exp(y=2)\n", 1, "exp has no parameter named 'y'; its parameters: x"),
    ("def f(a: scalar, b: scalar = 2) = a + b\nprint f(1, 2, 3)\n", 2,
     "f takes 1 to 2 arguments, got 3"),
    # a newcomer's: PyTorch's names, too many, a value not wanted
    ("import optim\nlet w = [1]\nlet a, b, c = optim.adamw(w, w, w, w, 1, weight_decay=0.1)\n", 3,
     "optim.adamw has no parameter named 'weight_decay' (PyTorch's weight_decay is wd here)"),
    ("import optim\nlet w = [1]\nlet a, b, c = optim.adamw(w, w, w, w, 1, betas=0.9)\n", 3,
     "(PyTorch's betas=(0.9, 0.999) is b1=0.9, b2=0.999 here)"),
    ("import optim\nlet w = [1]\nlet a, b, c = optim.adamw(w, w, w, w, 1, 2, 3, 4, 5, 6, 7)\n", 3,
     "optim.adamw takes 5 to 10 arguments, got 11"),
    ("import optim\nlet w = [1]\nlet a, b = optim.adamw(w, w, w, w, 1)\n", 3,
     "let binds 2 names, but the value holds 3; a value not wanted is bound to _ (a, b, _)"),
])
def test_argument_errors_say_what_to_write(src, line, words):
    e = error(src)
    assert words in e.message, e.message
    assert e.loc.line == line


def test_builtins_take_the_names_their_signatures_show_and_split_takes_names_too():
    a, b, c = run("print maximum(a=[3, 2], b=[1, 5])\nprint onehot([[1], [0]], V=3)\n"
                  "let x = iota(tensor[2x4], 1)\nlet p, q = split(x, axis=1, n=2)\nprint q\n")
    assert np.array_equal(a, [3, 5])
    assert np.array_equal(b, [[0, 1, 0], [1, 0, 0]])
    assert np.array_equal(c, [[2, 3], [2, 3]])


def test_a_trailing_comma_ends_a_call_written_one_argument_a_line():
    (v,) = run("def f(x: scalar, s: scalar = 1) = x * s\nprint f(2,\n  s = 2,\n)\n")
    assert v == 4


def test_the_repl_reads_an_argument_by_name_on_its_own_line_as_the_calls():
    from conftest import cli
    status, out, err = cli("repl", stdin=b"def f(x: scalar, s: scalar = 1) = x * s\n"
                                         b"print f(2,\n  s = 3)\n")
    assert status == 0 and "[6]" in out and "error" not in out + err, out + err


@pytest.mark.parametrize("src, line, words", [
    # a breaker's findings
    ("def f(x: tensor[N], b: tensor[N] = [1, 2]) = x + b\n", 1,
     "b's type tensor[N] has sizes a call gives, so it cannot have a default"),
    ("def f(x: tensor[...], b: tensor[...] = 1) = x + b\n", 1,
     "b's type tensor[...] has sizes a call gives, so it cannot have a default"),
    ("def f() = 3\nprint f(x=4)\n", 2, "f has no parameter named 'x': it takes no arguments"),
    ("let x = [[1, 2, 3, 4]]\nlet a, b, c = split(x, 2, 1)\n", 2,
     "let binds 3 names, but the value holds 2"),
    ("params {\n  w = [1]\n}\n", 1, "a params block is named: params theta { ... }"),
])
def test_argument_and_default_mistakes_point_at_the_call_and_say_what_to_write(src, line, words):
    e = error(src)
    assert words in e.message, e.message
    assert e.loc.line == line
    if "split" in src:
        assert "PyTorch's split" not in e.message      # 4 is no multiple of 3: no such hint


def test_newcomers_habits_read_a_member_filled_by_a_number_a_scale_from_a_let_and_a_size_divided():
    """A second newcomer's trial: decay.w = 1 (a member broadcasts as a subscript's cells do),
    randn(2) * s with s a let (the annotation's shape is randn's), tensor[N / B, B]."""
    src = """params theta {
  w = ones(tensor[2x2])
  b = [1, 2]
}
var decay = zeros(theta)
decay.w = 1
decay.b = [[5, 6]]
print decay
let H = 4
let s = sqrt(2 / H)
let a: tensor[H, 1] = randn(tensor[4x1], 2) * s
let c: tensor[H, 1] = randn(2) * s
print a - c
let N = 12
let B = 4
let x: tensor[N / B, B] = reshape(iota(tensor[12], 0))
print x
"""
    d, diff, x = run(src)
    assert np.array_equal(d, [1, 1, 1, 1, 5, 6])
    assert np.array_equal(diff, np.zeros((4, 1)))
    assert np.array_equal(x, np.arange(12.0).reshape(3, 4))
    e = error("let N = 10\nlet B = 4\nlet x: tensor[N / B, B] = zeros(tensor[2x4])\n")
    assert e.message == ("the size N / B divides 10 by 4, which leaves 2 over: a size is a whole "
                         "number (a let holding (N - N % B) / B drops what is left over)")


def test_a_vector_of_labels_for_cross_entropy_says_how_to_add_its_axis():
    e = error("import nn\nlet z = ones(tensor[4x3])\nlet y = [0, 1, 2, 0]\n"
              "print nn.cross_entropy(z, y)\n")
    assert e.message.endswith("got shape 4 (rank 1); its last axis of 1 is added by a "
                              "subscript: y[..., None] (PyTorch's unsqueeze(-1))")


def test_an_annotations_mismatch_says_which_left_out_shape_it_gave_and_how_a_number_fills():
    e = error("let x = [1, 2, 3, 4]\nlet k: tensor[4x1] = zeros() + x\n")
    assert e.message == "'k' is declared tensor[4x1], but its value has shape 4x4"
    assert e.notes == ("zeros(...) took the annotation's shape, tensor[4x1]",)
    e = error("var n: tensor[2x2] = 0\n")
    assert e.message == ("'n' is declared tensor[2x2], but its value has shape scalar; a number "
                         "fills a shape through a built-in: zeros(tensor[2x2]) + 0")


def test_a_type_or_a_file_name_given_by_name_and_a_shape_the_annotation_gives(tmp_path):
    np.save(str(tmp_path / "a.npy"), np.arange(4.0).reshape(2, 2))
    r, w, v, d = run("let x = iota(tensor[2x3], 1)\nprint reshape(x, shape=tensor[3x2])\n"
                     "let w: tensor[2x2] = load(path=\"a.npy\")\nprint w\n"
                     "print load(shape=tensor[2x2], path=\"a.npy\")\n"
                     "let q: tensor[2x2] = randn(seed=3)\nprint q - randn(tensor[2x2], 3)\n",
                     path=str(tmp_path / "t.mg"))
    assert np.array_equal(r, np.tile([0.0, 1, 2], 2).reshape(3, 2))
    assert np.array_equal(w, np.arange(4.0).reshape(2, 2)) and np.array_equal(v, w)
    assert np.array_equal(d, np.zeros((2, 2)))


def test_the_repl_completes_the_arguments_a_call_has_not_given_yet_by_name():
    import io

    from prompt_toolkit.completion import CompleteEvent
    from prompt_toolkit.document import Document

    from goat.repl.app import GoatCompleter
    from goat.repl.session import Session
    s = Session(out=io.StringIO())
    s.run("import optim\ndef f(x: scalar, scale: scalar = 1, shift: scalar = 0) = "
          "x * scale + shift")
    c = GoatCompleter(s)

    def named(text):
        return [x.text for x in c.get_completions(Document(text),
                                                  CompleteEvent(completion_requested=True))
                if x.text.endswith("=")]
    assert named("print f(2, ") == ["scale=", "shift="]
    assert named("print f(2, shift=1, ") == ["scale="]
    assert named("print f(2, sc") == ["scale="]
    assert named("print optim.adamw(w, g, m, v, 1, ") == ["lr=", "b1=", "b2=", "eps=", "wd="]
    assert named("print swapaxes(x, ax") == ["axis1=", "axis2="]
    assert named("print f(2, [1, ") == []           # inside a list: no argument begins
