"""Subscripts by a tensor of indices: E[tokens], x[[0, 2]], x[idx, 1:3] take rows as NumPy's
indexing by an integer array takes them (x[:, t] too).  Against NumPy written here, PyTorch's
autograd, the compiled program and the GPU test back end."""

import numpy as np
import pytest

import goat
from conftest import (assert_compiled_equal, assert_same_on_the_gpu_test_back_end,
                      compiled_numbers, error, literal, run, run_error_in)
from test_subscript import _subscripts

RNG = np.random.default_rng(35)


def _case(shape, rng):
    """A random subscript whose first item is a tensor of indices (counted from either end),
    the rest as test_subscript draws them: (goat's text of the items after the tensor, the
    indices, NumPy's index)."""
    n = shape[0]
    idx_shape = (1,)
    while np.prod(idx_shape) == 1:         # (a value of one cell is one index)
        idx_shape = tuple(int(v) for v in rng.integers(1, 4, size=rng.integers(1, 4)))
    idx = rng.integers(-n, n, size=idx_shape).astype(float)
    rest_text, rest = ("", ())
    if len(shape) > 1 and rng.integers(2):
        rest_text, rest = _subscripts(shape[1:], rng)
        rest_text = ", " + rest_text
    return rest_text, idx, (idx.astype(np.intp),) + rest


@pytest.mark.parametrize("shape", [(5,), (4, 3), (3, 5, 2), (3, 2, 2, 4)])
def test_rows_taken_by_a_tensor_of_indices_are_numpys(shape):
    x = RNG.normal(size=shape)
    cases = [_case(shape, RNG) for _ in range(30)]
    lines = ["let x = %s" % literal(x)]
    for k, (rest_text, idx, _) in enumerate(cases):
        lines.append("let i%d = %s" % (k, literal(idx)))
        lines.append("print x[i%d%s]" % (k, rest_text))
    got = run("\n".join(lines) + "\n")
    for (rest_text, idx, index), g in zip(cases, got):
        want = x[index]
        assert g.shape == want.shape and np.array_equal(g, want), (idx, rest_text)


def test_a_written_list_keeps_its_axis_and_a_one_cell_value_is_a_tensor_of_indices():
    """As NumPy's: a scalar is one index; a value of rank 1 or more, even of one cell (a
    reduction's 1x1), a tensor of indices."""
    x = np.arange(12.0).reshape(3, 4)
    got = run("let x = %s\nprint x[[2, 0, -1]]\nprint x[[1]]\nprint x[[[0], [2]], 1:3]\n"
              "print x[0:2][[1]]\nprint x[col_sum(row_sum([[1]]))]\nprint x[sum([[1]])]\n"
              % literal(x))
    assert np.array_equal(got[0], x[[2, 0, -1]])
    assert got[1].shape == (1, 4) and np.array_equal(got[1], x[[1]])
    assert np.array_equal(got[2], x[[[0], [2]], 1:3]) and got[2].shape == (2, 1, 2)
    assert np.array_equal(got[3], x[0:2][[1]])
    assert got[4].shape == (1, 1, 4) and np.array_equal(got[4], x[np.array([[1]])])
    assert got[5].shape == (4,) and np.array_equal(got[5], x[1])


def test_the_shapes_rows_give():
    p = goat.check_source("let E = zeros(tensor[10x16])\nlet t = zeros(tensor[4x8])\n"
                          "let a = E[t]\nlet b = E[t, 3]\nlet c = E[t, 2:5]\n"
                          "let v = zeros(tensor[10])\nlet d = v[t]\n"
                          "let T = zeros(tensor[10x2x3])\nlet e = T[t]\nlet f = T[t, 1, 0:2]\n")
    from goat.typecheck.shapes import format_type
    shapes = {k: format_type(p.lets[k].shape) for k in "abcdef"}
    assert shapes == {"a": "tensor[4x8x16]", "b": "tensor[4x8]", "c": "tensor[4x8x3]",
                      "d": "tensor[4x8]", "e": "tensor[4x8x2x3]", "f": "tensor[4x8x2]"}


_EMBED = """let E = %s
let W = %s
let tokens = %s
def loss(E: tensor[6x4], W: tensor[4x3]) {
    var total = zeros(tensor[1x1])
    for b in 0..2 {
        let h = tanh(E[tokens[b]] @ W)
        total += col_sum(row_sum(h * h))
    }
    return total + col_sum(row_sum(reshape(E[[-1, 0, -1], 1:3], tensor[1x6])))
}
let g = grad(loss(E, W), E)
print g
print grad(col_sum(row_sum(g * g)), W)
"""


def _embed_program():
    e = RNG.normal(size=(6, 4))
    w = RNG.normal(size=(4, 3)) * 0.5
    tokens = np.array([[0, 5, 5, -2], [3, 0, -6, 1]], dtype=float)
    return _EMBED % (literal(e), literal(w), literal(tokens)), e, w, tokens


def test_grad_through_rows_is_pytorchs_first_and_second():
    """The table's gradient adds each row's where it was read (repeated indices, negative
    ones); its own derivative too (E's gradient differentiated for W)."""
    torch = pytest.importorskip("torch")
    text, e0, w0, tokens = _embed_program()
    g, g2 = run(text)
    e = torch.tensor(e0, requires_grad=True)
    w = torch.tensor(w0, requires_grad=True)
    t = torch.tensor(tokens, dtype=torch.long)
    loss = sum((torch.tanh(e[t[b]] @ w) ** 2).sum() for b in range(2))
    loss = loss + e[[-1, 0, -1], 1:3].sum()
    (tg,) = torch.autograd.grad(loss, e, create_graph=True)
    (tg2,) = torch.autograd.grad((tg * tg).sum(), w)
    assert np.allclose(g, tg.detach().numpy(), rtol=1e-13, atol=1e-13)
    assert np.allclose(g2, tg2.numpy(), rtol=1e-12, atol=1e-12)


def test_rows_compiled_are_goat_runs_bit_for_bit(tmp_path):
    pytest.importorskip("llvmlite")
    text, *_ = _embed_program()
    want = run(text)
    (tmp_path / "p.mg").write_text(text)
    for numbers, w in zip(compiled_numbers(tmp_path), want):
        assert_compiled_equal(numbers, w, text)


def test_rows_on_the_gpu_test_back_end_and_in_f32():
    text, *_ = _embed_program()
    assert_same_on_the_gpu_test_back_end(text)
    wide = run(text)
    narrow = goat.run_source(text, dtype="f32")
    for a, b in zip(wide, narrow):
        assert b.dtype == np.float32
        assert np.allclose(a, b, rtol=1e-4, atol=1e-5)


def test_a_def_over_size_variables_takes_rows_at_each_calls_sizes():
    got = run("def embed(E: tensor[V, D], t: tensor[B, T]) = E[t]\n"
              "def pick(v: tensor[N], t: tensor[K]) = v[t]\n"
              "def planes(a: tensor[N, C, D], t: tensor[K]) = a[t, 1]\n"
              "print embed([[1, 2], [3, 4], [5, 6]], [[2, 0], [1, 1], [0, -1]])\n"
              "print embed([[7, 8, 9]], [[0]])\n"
              "print pick([10, 20, 30, 40], [3, -4])\n"
              "print planes([[[1, 2], [3, 4]], [[5, 6], [7, 8]]], [1, 0, 1])\n")
    assert got[0].tolist() == [[[5, 6], [1, 2]], [[3, 4], [3, 4]], [[1, 2], [5, 6]]]
    assert got[1].tolist() == [[[7, 8, 9]]]
    assert got[2].tolist() == [40, 10]
    assert got[3].tolist() == [[7, 8], [3, 4], [7, 8]]


@pytest.mark.parametrize("src, message", [
    ("print x[[0, 2]]", "an index must be a whole number from -2 to 1 (axis 0 of 2x3 has 2 "
                        "cells), got 2 at position 1"),
    ("print x[[[0, 1], [-3, 0]]]", "an index must be a whole number from -2 to 1 (axis 0 of 2x3 "
                                   "has 2 cells), got -3 at position 2"),
    ("print x[[0.5, 1]]", "an index must be a whole number from -2 to 1 (axis 0 of 2x3 has 2 "
                          "cells), got 0.5 at position 0"),
    ("print x[:, [0, 5]]", "an index must be a whole number from -3 to 2 (axis 1 of 2x3 has 3 "
                           "cells), got 5 at position 1"),
    ("print x[[0, 1], [0, 1, 2]]", "the tensors of indices in one subscript pair their cells "
                                   "(NumPy's x[rows, cols]: the cell of each row and its "
                                   "column), so their shapes must broadcast together, and 2 and "
                                   "3 do not"),
    ("print x[[0, 1], [1, 3]]", "an index must be a whole number from -3 to 2 (axis 1 of 2x3 "
                                "has 3 cells), got 3 at position 1"),
    ("print x[x > 2]", "a subscript by a mask (x[x > 0], NumPy's boolean indexing) is not "
                       "supported: its result's size would be known only when the program runs; "
                       "where(mask, x, 0) keeps x's shape"),
    ("x[[0, 1]] = 1", "cannot assign through a tensor of indices (one of shape 2 in x[...] = "
                      "v; NumPy's would keep one of repeated indices' writes): assign one index "
                      "at a time, x[k] = v, in a loop"),
    # a list after a value and a blank is a comma forgotten, not a subscript
    ("print concat(x [[3, 4, 5]], 0)", "syntax error: expected an operator, '(', ')' or ',', "
     "found a list literal; is a comma missing before the list? (a subscript is written right "
     "after its value: x[[0, 2]] takes rows 0 and 2)"),
])
def test_what_is_wrong_with_rows_is_said_before_the_run(src, message):
    e = error("var x = [[1, 2, 3], [4, 5, 6]]\n" + src + "\n")
    assert e.message == message


def test_an_assignment_through_one_written_index_is_that_index():
    """x[[0], [1]] = 1 and x[[1], 0] += 1: one index in a list cannot be repeated, so no write
    is lost; NumPy assigns them (they had been refused as tensors of indices)."""
    a, c = run("var x = [[1, 2, 3], [4, 5, 6]]\nx[[0], [1]] = 10\nprint x\n"
               "x[[1], 0] += 1\nprint x\n")
    x = np.array([[1.0, 2, 3], [4, 5, 6]])
    x[[0], [1]] = 10
    assert a.tolist() == x.tolist()
    x[[1], 0] += 1
    assert c.tolist() == x.tolist()


@pytest.mark.parametrize("aot", [False, True])
@pytest.mark.parametrize("line, message", [
    ("print x[t]", "an index must be a whole number from -2 to 1 (axis 0 of 2x3 has 2 cells), "
                   "got 2 at position 1"),
    ("print x[-t - 1, 1:]", "an index must be a whole number from -2 to 1 (axis 0 of 2x3 has 2 "
                            "cells), got -3 at position 1"),
    ("print x[t / 2]", "an index must be a whole number from -2 to 1 (axis 0 of 2x3 has 2 "
                       "cells), got 0.5 at position 1"),
])
def test_a_computed_tensor_of_indices_is_checked_when_it_runs_with_the_same_words_compiled(
        tmp_path, aot, line, message):
    first, out = run_error_in(tmp_path, "var x = [[1, 2, 3], [4, 5, 6]]\nfor k in 0..3 {\n"
                              "    let t = [0, 1, 0] * k\n"
                              "    print \"step {k}\"\n    %s\n}\n" % line, aot)
    assert first == "p.mg:5: error: " + message
    assert out.startswith("step 0\n")


def test_a_tensor_of_indices_of_a_size_known_when_it_runs(tmp_path):
    """Indices loaded from a file (their count ? until the run) take rows as NumPy's do."""
    x = RNG.normal(size=(5, 3))
    np.save(tmp_path / "i.npy", np.array([4.0, -5.0, 2.0, 2.0]))
    (tmp_path / "p.mg").write_text("let x = %s\nlet i: tensor[?] = load(\"i.npy\")\n"
                                   "print x[i, 1:]\n" % literal(x))
    (g,) = goat.run_file(str(tmp_path / "p.mg"))
    assert np.array_equal(g, x[[4, -5, 2, 2], 1:])


def test_random_rows_compiled_are_goat_runs_bit_for_bit(tmp_path):
    pytest.importorskip("llvmlite")
    lines = []
    for j, shape in enumerate([(5,), (4, 3), (3, 5, 2)]):
        x = RNG.normal(size=shape)
        lines.append("let x%d = %s" % (j, literal(x)))
        for k in range(6):
            rest_text, idx, _ = _case(shape, RNG)
            lines.append("print x%d[%s%s]" % (j, literal(idx), rest_text))
    text = "\n".join(lines) + "\n"
    want = run(text)
    (tmp_path / "p.mg").write_text(text)
    got = compiled_numbers(tmp_path)
    assert len(got) == len(want) == 18
    for numbers, w in zip(got, want):
        assert np.array_equal(np.array(numbers), w.ravel())


def test_the_gradient_of_rows_of_a_rank_3_table_adds_each_read(tmp_path):
    """grad(sum(T[t, 1] * W), T): W's rows added into plane 1 of the rows t names (NumPy's
    add.at written here), repeated and negative indices included; compiled the same."""
    T = RNG.normal(size=(4, 2, 3))
    W = RNG.normal(size=(2, 2, 3))
    t = np.array([[3, -1], [0, 2]], dtype=float)
    text = ("let T = %s\nlet W = %s\nlet t = %s\n"
            "print grad(col_sum(row_sum(reshape(T[t, 1] * W, tensor[1x12]))), T)\n"
            % (literal(T), literal(W), literal(t)))
    (g,) = run(text)
    want = np.zeros_like(T)
    np.add.at(want[:, 1], t.astype(int).ravel() % 4, W.reshape(4, 3))
    assert np.array_equal(g, want)
    pytest.importorskip("llvmlite")
    (tmp_path / "p.mg").write_text(text)
    (numbers,) = compiled_numbers(tmp_path)
    assert np.array_equal(np.array(numbers), want.ravel())


@pytest.mark.parametrize("src, message", [
    ("print x[[5, 0]]", "an index must be a whole number from -2 to 1 (axis 0 of 2x3 has 2 "
                        "cells), got 5 at position 0"),
    ("let t = [[1], [0.5]]\nprint x[t]", "an index must be a whole number from -2 to 1 (axis 0 "
                                         "of 2x3 has 2 cells), got 0.5 at position 1"),
    ("if size(x, 0) > 5 {\n    print x[[0, 16777217]]\n}", "an index must be a whole number "
     "from -2 to 1 (axis 0 of 2x3 has 2 cells), got 16777217 at position 1"),
])
def test_indices_written_in_the_program_are_checked_before_anything_runs(src, message):
    """Found by a breaker: x[[5, 0]] printed what came before it, then failed (gather as
    written was checked before the run; the subscript's column of indices hid the constant)."""
    with pytest.raises(goat.GoatError) as info:
        goat.check_source("var x = [[1, 2, 3], [4, 5, 6]]\nprint 1\n" + src + "\n")
    assert info.value.message == message


def test_grad_through_rows_named_by_what_it_differentiates_names_the_subscript():
    e = error("let x = [[1, 2], [3, 4]]\nlet w = [0.0, 1.0]\n"
              "print grad(sum(x[w]), w)\n")
    assert e.message == ("grad cannot differentiate through a subscript on line 3: it has no "
                         "derivative with respect to its indices; if computing the indices from "
                         "the values differentiated is meant, write stop_gradient(...) around it")


def _item(n, rng):
    """One random subscript item for an axis of n cells: (text, NumPy's)."""
    kind = rng.integers(3)
    if kind == 0:
        i = int(rng.integers(-n, n))
        return str(i), i
    if kind == 1:
        return ":", slice(None)
    a, b = sorted(int(v) for v in rng.integers(0, n + 1, size=2))
    return "%d:%d" % (a, b), slice(a, b)


@pytest.mark.parametrize("shape", [(4, 3), (3, 5, 2), (3, 2, 2, 4)])
def test_a_tensor_of_indices_on_any_axis_takes_what_numpy_takes_where_numpy_puts_it(
        shape, tmp_path):
    """x[:, t], x[2, :, t], x[0:2, t, 3]: the indices' axes stand where the axis was when the
    subscripts that index (the tensor and the numbers) are side by side, else first, as in
    NumPy; compiled, the same bits; the gradient adds each read into its cell."""
    x = RNG.normal(size=shape)
    r = len(shape)
    lines = ["let x = %s" % literal(x)]
    want = []
    for k in range(30):
        axis = int(RNG.integers(r))
        before = [_item(shape[a], RNG) for a in range(axis)]
        idx_shape = (1,)
        while np.prod(idx_shape) == 1:
            idx_shape = tuple(int(v) for v in RNG.integers(1, 4, size=RNG.integers(1, 3)))
        idx = RNG.integers(-shape[axis], shape[axis], size=idx_shape).astype(float)
        after = [_item(shape[a], RNG) for a in range(axis + 1, r)][:int(RNG.integers(r - axis))]
        lines.append("let t%d = %s" % (k, literal(idx)))
        lines.append("print x[%s]" % ", ".join([t for t, _ in before] + ["t%d" % k] +
                                               [t for t, _ in after]))
        want.append(x[tuple(i for _, i in before) + (idx.astype(np.intp),) +
                      tuple(i for _, i in after)])
    text = "\n".join(lines) + "\n"
    got = run(text)
    for g, w, line in zip(got, want, [ln for ln in lines if ln.startswith("print")]):
        assert g.shape == w.shape and np.array_equal(g, w), line
    pytest.importorskip("llvmlite")
    (tmp_path / "p.mg").write_text(text)
    for numbers, w in zip(compiled_numbers(tmp_path), want):
        assert np.array_equal(np.array(numbers), w.ravel())


def test_the_gradient_through_columns_taken_by_indices_adds_each_read():
    x = RNG.normal(size=(3, 4))
    (g,) = run("var x = %s\nprint grad(sum(x[:, [1, 1, -1]] * x[:, [1, 1, -1]]), x)\n"
               % literal(x))
    want = np.zeros_like(x)
    for j in (1, 1, 3):
        want[:, j] += 2 * x[:, j]
    assert np.array_equal(g, want)


_X4 = np.arange(2 * 3 * 4 * 5, dtype=float).reshape(2, 3, 4, 5) - 50


@pytest.mark.parametrize("text, idx", [
    ("[r, c]", (np.array([1, 0, 1]), np.array([2, 0, 1]))),
    ("[:, r, c]", (slice(None), np.array([2, 0, 1]), np.array([3, -1, 0]))),
    ("[r, :, c]", (np.array([1, 0]), slice(None), np.array([3, -4]))),
    ("[0, r, c]", (0, np.array([[1, 2], [0, 0]]), np.array([[3], [1]]))),
    ("[r, 1, c]", (np.array([1, 0, 1]), 1, np.array([2, 0, 1]))),
    ("[:, :, r, c]", (slice(None), slice(None), np.array([0, 3]), np.array([4, 0]))),
    ("[r, c, 1:3]", (np.array([1, -1]), np.array([2, 0]), slice(1, 3))),
    ("[r, c, d]", (np.array([1, 0]), np.array([2, 0]), np.array([3, 1]))),
    ("[r, :, :, c]", (np.array([1, 0]), slice(None), slice(None), np.array([3, 1]))),
    # a breaker's: a ... standing for no axes still parts them, so their axes go first
    ("[:, 0, :, ..., r]", (slice(None), 0, slice(None), Ellipsis, np.array([0, 1, 3, 2, 1]))),
    ("[r, :, ..., c, :]", (np.array([1, 0]), slice(None), Ellipsis, np.array([3, 1]),
                          slice(None))),
    ("[r, ..., c]", (np.array([1, 0]), Ellipsis, np.array([4, 1]))),
    ("[r, c, ...]", (np.array([1, 0]), np.array([2, 1]), Ellipsis)),
    ("[0, ..., r]", (0, Ellipsis, np.array([1, 3]))),
])
def test_several_tensors_of_indices_pair_their_cells_as_numpys_do(text, idx):
    src, names = "let x = %s\n" % literal(_X4), iter("rcd")
    for item in idx:
        if isinstance(item, np.ndarray):
            src += "let %s = %s\n" % (next(names), literal(item))
    (got,) = run(src + "print x%s\n" % text)
    want = _X4[idx]
    assert got.shape == want.shape and np.array_equal(got, want)


def test_picking_each_rows_label_and_its_gradient_against_numpy(tmp_path):
    logp = np.log(np.arange(12.0).reshape(3, 4) + 1)
    y = np.array([2, 0, 3])
    src = ("let logp = %s\nlet y = %s\nlet picked = logp[[0, 1, 2], y]\nprint picked\n"
           "print grad(sum(picked * picked), logp)\n" % (literal(logp), literal(y)))
    picked, g = run(src)
    assert np.array_equal(picked, logp[np.arange(3), y])
    want = np.zeros((3, 4))
    want[np.arange(3), y] = 2 * logp[np.arange(3), y]
    assert np.allclose(g, want, rtol=1e-15, atol=0)
    pytest.importorskip("llvmlite")
    (tmp_path / "p.mg").write_text(src)
    assert compiled_numbers(tmp_path) == [np.ravel(v).tolist() for v in (picked, g)]


def test_tensors_of_indices_whose_shapes_are_known_when_it_runs_say_they_do_not_pair(tmp_path):
    """x[r, c] with r and c loaded (shapes ?): pairs as NumPy does when they broadcast, and
    stops with the pairing words, not an addition's, when they do not."""
    src = ('let x = [[1, 2, 3], [4, 5, 6]]\nlet r: tensor[?] = load("r.npy")\n'
           'let c: tensor[?] = load("c.npy")\nprint x[r, c]\n')
    path = str(tmp_path / "t.mg")
    x = np.array([[1.0, 2, 3], [4, 5, 6]])
    np.save(tmp_path / "r.npy", np.array([0.0, 1, 1]))
    np.save(tmp_path / "c.npy", np.array([2.0]))
    (got,) = run(src, path)
    assert np.array_equal(got, x[[0, 1, 1], [2]])
    np.save(tmp_path / "c.npy", np.array([0.0, 2]))
    e = error(src, path)
    assert e.message == ("the tensors of indices in one subscript pair their cells (NumPy's "
                         "x[rows, cols]: the cell of each row and its column), so their shapes "
                         "must broadcast together, and 3 and 2 do not")
    assert e.loc.line == 4


def test_tensors_of_indices_in_a_def_that_do_not_pair_say_so_when_called(tmp_path):
    """A breaker's: in a def over ?-sized index vectors, a call whose indices do not pair
    (known at the call, or only when it runs) names the pairing, as at the top level."""
    src = ('def f(a: tensor[3x3], r: tensor[?], c: tensor[?]) = a[r, c]\n'
           'let x = [[1, 2, 3], [4, 5, 6], [7, 8, 9]]\nprint f(x, [0, 1, 2], [0, 2, 1])\n'
           'let r: tensor[?] = load("r.npy")\nlet c: tensor[?] = load("c.npy")\n'
           'print f(x, r, c)\n')
    np.save(tmp_path / "r.npy", np.array([0.0, 1, 1]))
    np.save(tmp_path / "c.npy", np.array([0.0, 2]))
    words = ("the tensors of indices in one subscript pair their cells (NumPy's x[rows, cols]: "
             "the cell of each row and its column), so their shapes must broadcast together, "
             "and 3 and 2 do not")
    e = error(src, str(tmp_path / "t.mg"))
    assert e.message == words and e.loc.line == 1
    e = error(src.replace("print f(x, r, c)", "print f(x, [0, 1, 2], [0, 1])"),
              str(tmp_path / "t.mg"))
    assert e.message == words


@pytest.mark.parametrize("text,idx", [
    ("[r, c]", (np.array([0, 2, -1]), np.array([3, -1, 0]))),
    ("[:, r, c]", (slice(None), np.array([1, 0]), np.array([2, -2]))),
    ("[r, 1, c]", (np.array([1, 0]), 1, np.array([3, 2]))),
    ("[r, c, d]", (np.array([[1, 0]]), np.array([2, 2]), np.array([1, -2]))),
])
def test_paired_tensors_of_indices_on_axes_known_when_it_runs_or_a_defs_sizes(tmp_path, text,
                                                                              idx):
    """x[rows, cols] of a loaded ?-sized x, and in a def over size variables (N, D), for
    calls of known and of ? sizes: NumPy's cells (they had been refused: "needs the sizes of
    the axes ... before the run"), compiled the same bit for bit."""
    c = RNG.normal(size=(2, 3, 4)) if len(idx) == 3 or text.startswith("[:") else \
        RNG.normal(size=(3, 4))
    np.save(tmp_path / "c.npy", c)
    axes = ", ".join("?" for _ in c.shape)
    params = ", ".join("ABC"[k] for k in range(c.ndim))
    names = iter("rcd")
    args, src = [], ""
    for item in idx:
        if isinstance(item, np.ndarray):
            name = next(names)
            args.append("%s: tensor[%s]" % (name, ", ".join(str(n) for n in item.shape)))
            src += "let %s = %s\n" % (name, literal(item))
    call = ", ".join(a.split(":")[0] for a in args)
    src += ('let x: tensor[%s] = load("c.npy")\nlet k = %s\n'
            'def f(x: tensor[%s], %s) = x%s\n'
            'def h(x: tensor[N, ?%s], %s) = x%s\n'   # a def's size beside a ?
            'print x%s\nprint f(x, %s)\nprint f(k, %s)\nprint h(x, %s)\nprint h(k, %s)\n'
            % (axes, literal(c), params, ", ".join(args), text,
               ", ?" if c.ndim == 3 else "", ", ".join(args), text, text, call, call, call,
               call))
    want = c[idx]
    (tmp_path / "p.mg").write_text(src)
    got = run(src, str(tmp_path / "p.mg"))
    assert len(got) == 5
    for g in got:
        assert g.shape == want.shape and np.array_equal(g, want)
    pytest.importorskip("llvmlite")
    assert compiled_numbers(tmp_path) == [np.ravel(want).tolist()] * 5


def test_paired_indices_in_a_def_are_checked_at_each_calls_sizes_and_their_gradient(tmp_path):
    """E[i, j] in a def over NxD: an index past a call's axis is that call's error (the
    axis's words); the gradient of a loss through it adds each read, against NumPy."""
    src = ("def pick(E: tensor[N, D], i: tensor[K], j: tensor[K]) = E[i, j]\n"
           "let w = %s\n"
           "print grad(sum(pick(w, [0, 2, 2], [1, 1, -1]) * [1, 2, 3]), w)\n"
           "print pick(w, [0, 3], [0, 0])\n")
    w = RNG.normal(size=(3, 4))
    e = error(src % literal(w), str(tmp_path / "p.mg"))
    assert e.message == ("an index must be a whole number from -3 to 2 (axis 0 has 3 cells), "
                         "got 3 at position 1") and e.loc.line == 1
    (g,) = run((src % literal(w)).replace("print pick(w, [0, 3], [0, 0])\n", ""))
    want = np.zeros((3, 4))
    np.add.at(want, ([0, 2, 2], [1, 1, -1]), [1.0, 2.0, 3.0])
    assert np.array_equal(g, want)


def _new_axes_case(shape, rng):
    """A random subscript of x (of ``shape``) with tensors of indices and Nones among slices,
    numbers and a ...: (goat's text, NumPy's index, the tensors' lets)."""
    items, np_items, lets = [], [], []
    axes = list(range(len(shape)))
    dots = rng.integers(3) == 0
    if dots:                                    # a ... stands for some axes (or none)
        cut = sorted(int(v) for v in rng.integers(0, len(shape) + 1, size=2))
        where = int(rng.integers(len(axes) + 1))
    rank = int(rng.integers(1, 3))
    for a in axes:
        if dots and a == cut[0]:
            items.append("...")
            np_items.append(Ellipsis)
        if dots and cut[0] <= a < cut[1]:
            continue
        kind = rng.integers(3)
        if kind == 0:
            idx = rng.integers(-shape[a], shape[a], size=(2,) * rank).astype(float)
            lets.append("let t%d = %s" % (a, literal(idx)))
            items.append("t%d" % a)
            np_items.append(idx.astype(np.intp))
        else:
            text, i = _item(shape[a], rng)
            items.append(text)
            np_items.append(i)
    if dots and cut[0] == len(shape):
        items.append("...")
        np_items.append(Ellipsis)
    if not any(isinstance(i, np.ndarray) for i in np_items):
        idx = np.array([0.0, -1.0])
        lets.append("let t = %s" % literal(idx))
        k = next(k for k, i in enumerate(np_items) if i is not Ellipsis) if any(
            i is not Ellipsis for i in np_items) else 0
        if np_items and np_items[k] is not Ellipsis:
            items[k], np_items[k] = "t", idx.astype(np.intp)
        else:
            items.insert(0, "t")
            np_items.insert(0, idx.astype(np.intp))
    for _ in range(int(rng.integers(1, 3))):        # the Nones, anywhere
        at = int(rng.integers(len(items) + 1))
        items.insert(at, "None")
        np_items.insert(at, None)
    return ", ".join(items), tuple(np_items), lets


@pytest.mark.parametrize("shape", [(4, 3), (3, 5, 2), (3, 2, 2, 4)])
def test_new_axes_beside_tensors_of_indices_are_numpys(shape, tmp_path):
    """x[None, t], x[t, None, u], x[..., None, t]: NumPy's result (the indices' axes where
    NumPy's rule puts them, a None parting them as a slice does); they had been refused.
    Compiled: the same bits; the gradient adds each read into its cell."""
    x = RNG.normal(size=shape)
    lines = ["let x = %s" % literal(x)]
    want, texts = [], []
    for k in range(25):
        text, index, lets = _new_axes_case(shape, RNG)
        lines += [ln.replace("let t", "let c%d_t" % k) for ln in lets]
        text = ", ".join("c%d_%s" % (k, t) if t.startswith("t") else t
                         for t in text.split(", "))
        lines.append("print x[%s]" % text)
        texts.append(text)
        want.append(x[index])
    src = "\n".join(lines) + "\n"
    got = run(src)
    for g, w, text in zip(got, want, texts):
        assert g.shape == w.shape and np.array_equal(g, w), text
    (g,) = run("var x = %s\nlet t = [[0, -1], [1, 1]]\nprint grad(sum(x[None, t, None] * "
               "x[None, t, None]), x)\n" % literal(x))
    grad_want = np.zeros_like(x)
    np.add.at(grad_want, np.array([[0, -1], [1, 1]]), 2 * x[np.array([[0, -1], [1, 1]])])
    assert np.array_equal(g, grad_want)
    pytest.importorskip("llvmlite")
    (tmp_path / "p.mg").write_text(src)
    for numbers, w in zip(compiled_numbers(tmp_path), want):
        assert np.array_equal(np.array(numbers), w.ravel())
