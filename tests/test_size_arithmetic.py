"""Arithmetic on a def's size variables: ``w: tensor[K + H, 4 * H]`` (an LSTM's fused gates),
``tensor[B * T, D]`` (a flattened batch), ``tokens[:, 0:T - 1]``, and a size variable read as
a number.  Each call works the sizes out; the body is checked once, symbolically, with the
arithmetic as rigid sizes (``K + H`` equals ``H + K``, not ``J``).  Values are held to NumPy
written here and, for the gradient, to PyTorch (when installed) and central differences."""
import importlib.util

import numpy as np
import pytest

from conftest import central_differences, compiled_numbers, error, run

CELL = """def cell(x: tensor[B, K], h: tensor[B, H], c: tensor[B, H], w: tensor[K + H, 4 * H],
         b: tensor[1, 4 * H]) {
    let z = concat(x, h, 1) @ w + b
    let i, f, g, o = split(z, 4, 1)
    let c2 = sigmoid(f) * c + sigmoid(i) * tanh(g)
    return (sigmoid(o) * tanh(c2), c2)
}
"""


def _sigmoid(v):
    return 1 / (1 + np.exp(-v))


def _numpy_cell(x, h, c, w, b):
    z = np.concatenate([x, h], 1) @ w + b
    i, f, g, o = np.split(z, 4, 1)
    c2 = _sigmoid(f) * c + _sigmoid(i) * np.tanh(g)
    return _sigmoid(o) * np.tanh(c2), c2


def _lit(a):
    return np.array2string(np.asarray(a), separator=", ", precision=17,
                           max_line_width=10 ** 6, threshold=10 ** 9)


def test_an_lstm_cell_typed_with_its_fused_gates_runs_for_any_sizes(tmp_path):
    rng = np.random.default_rng(0)
    outs = []
    src = CELL
    for B, K, H in ((1, 3, 2), (4, 5, 3)):
        x, h, c = (rng.standard_normal((B, n)) for n in (K, H, H))
        w, b = rng.standard_normal((K + H, 4 * H)), rng.standard_normal((1, 4 * H))
        src += "let h%d, c%d = cell(%s, %s, %s, %s, %s)\nprint h%d\nprint c%d\n" % (
            K, K, _lit(x), _lit(h), _lit(c), _lit(w), _lit(b), K, K)
        outs += list(_numpy_cell(x, h, c, w, b))
    got = run(src)
    for g, want in zip(got, outs):
        assert np.allclose(g, want, rtol=1e-12, atol=1e-14)
    if importlib.util.find_spec("llvmlite") is not None:
        (tmp_path / "p.mg").write_text(src)
        for g, want in zip(compiled_numbers(tmp_path), outs):
            assert np.allclose(g, want.ravel(), rtol=1e-12, atol=1e-14)


LOSS = CELL + """def loss(xs: tensor[T, B, K], w: tensor[K + H, 4 * H], b: tensor[1, 4 * H],
         h0: tensor[B, H]) {
    var h = h0
    var c = h0
    var total = 0
    for t in 0..T {
        h, c = cell(xs[t], h, c, w, b)
        total = total + sum(h * h) / H
    }
    return total
}
let xs = load("xs.npy", tensor[5, 2, 3])
let w = load("w.npy", tensor[7, 16])
let b = load("b.npy", tensor[1, 16])
let h0 = zeros(tensor[2, 4])
print loss(xs, w, b, h0)
let gw, gb = grad(loss(xs, w, b, h0), w, b)
print gw
print gb
"""


def test_grad_through_a_loop_of_cells_typed_by_size_arithmetic(tmp_path, monkeypatch):
    """The loss's def calls the cell's with its own K + H: the body checked symbolically
    binds the cell's sizes to the loss's; a size variable T bounds the loop, H divides."""
    rng = np.random.default_rng(1)
    xs = rng.standard_normal((5, 2, 3))
    w, b = rng.standard_normal((7, 16)) * 0.3, rng.standard_normal((1, 16)) * 0.1
    for name, a in (("xs", xs), ("w", w), ("b", b)):
        np.save(tmp_path / ("%s.npy" % name), a)
    monkeypatch.chdir(tmp_path)
    total, gw, gb = run(LOSS)

    def numpy_loss(dw, db):
        h = c = np.zeros((2, 4))
        out = 0.0
        for t in range(5):
            h, c = _numpy_cell(xs[t], h, c, w + dw, b + db)
            out += (h * h).sum() / 4
        return out
    assert abs(float(np.ravel(total)[0]) - numpy_loss(0, 0)) < 1e-12
    fd_w = central_differences(lambda e: numpy_loss(e, 0), w)
    fd_b = central_differences(lambda e: numpy_loss(0, e), b)
    assert np.abs(gw - fd_w).max() < 1e-8 and np.abs(gb - fd_b).max() < 1e-8
    torch = pytest.importorskip("torch")
    tw, tb = (torch.tensor(a, requires_grad=True) for a in (w, b))
    h = c = torch.zeros(2, 4, dtype=torch.float64)
    out = 0
    for t in range(5):
        z = torch.cat([torch.tensor(xs[t]), h], 1) @ tw + tb
        i, f, g, o = torch.chunk(z, 4, 1)
        c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
        h = torch.sigmoid(o) * torch.tanh(c)
        out = out + (h * h).sum() / 4
    out.backward()
    assert np.abs(gw - tw.grad.numpy()).max() < 1e-13
    assert np.abs(gb - tb.grad.numpy()).max() < 1e-13


def test_a_product_of_sizes_flattens_and_unflattens_a_batch():
    src = """def flat(x: tensor[B, T, D]) -> tensor[B * T, D] = reshape(x, tensor[B * T, D])
def unflat(y: tensor[B * T, D], like: tensor[B, T]) = reshape(y, tensor[B, T, D])
def rows(y: tensor[N, D], k: tensor[K]) = reshape(y, tensor[K, ?, D])
let x = reshape(iota(tensor[24], 0), tensor[2, 3, 4])
print flat(x)
print unflat(flat(x), zeros(tensor[2, 3]))
print rows(flat(x), zeros(tensor[3]))
"""
    a, c, d = run(src)
    x = np.arange(24.0).reshape(2, 3, 4)
    assert a.tolist() == x.reshape(6, 4).tolist()
    assert c.tolist() == x.tolist()
    assert d.tolist() == x.reshape(3, 2, 4).tolist()


def test_a_call_works_out_a_size_from_a_multiple_or_a_sum():
    src = """def pairs(y: tensor[2 * N]) -> tensor[N, 2] = reshape(y, tensor[N, 2])
def tail(x: tensor[N], y: tensor[N + 2]) = y[2:] + x
print pairs([1, 2, 3, 4, 5, 6])
print tail([1, 1], [5, 6, 7, 8])
"""
    a, c = run(src)
    assert a.tolist() == [[1, 2], [3, 4], [5, 6]]
    assert c.tolist() == [8, 9]


@pytest.mark.parametrize("src, line, message", [
    # no whole N makes 2 * N = 5
    ("def pairs(y: tensor[2 * N]) = y\nprint pairs([1, 2, 3, 4, 5])\n", 2,
     "argument y of pairs has size 5 where its type says 2*N, and no whole size N from 0 "
     "makes it so"),
    # the sizes a call binds are named
    ("def f(x: tensor[N], y: tensor[N - 1]) = y\nprint f([1, 2, 3], [1, 2, 3])\n", 2,
     "argument y of f must have shape N - 1 (N = 3), got 3"),
    ("def f(x: tensor[B, K], w: tensor[K + H, 4 * H]) = x\n"
     "print f([[1, 2]], zeros(tensor[3, 5]))\n", 2,
     "argument w of f must have shape (K + H)x(4*H) (K = 2, H = 1), got 3x5"),
    # a def no call could work out
    ("def f(x: tensor[K + H]) = x\n", 1,
     "a call of f could not work out K and H from the size K + H: give one of them a size of "
     "its own in a parameter's type (K alone, as in tensor[K]), or write the sizes so that "
     "one is open at a time"),
    ("def f(x: tensor[N * N]) = x\n", 1,
     "a call of f could not work out N from the size N*N: give it a size of its own in a "
     "parameter's type (N alone, as in tensor[N]), or write the sizes so that one is open at "
     "a time"),
    # a quotient that is a size only for some calls
    ("def f(x: tensor[N]) = zeros(tensor[N / 2])\n", 1,
     "the size N / 2 divides N by 2, which is a whole number only for some of the sizes a "
     "call may give: name the quotient instead, as a size of its own (tensor[2 * R] rather "
     "than tensor[N], then R for N / 2)"),
    # a newcomer's: the example's new name is none of the def's own (M was the batch)
    ("def f(x: tensor[M, R, S]) = zeros(tensor[M, S / 3])\n", 1,
     "the size S / 3 divides S by 3, which is a whole number only for some of the sizes a "
     "call may give: name the quotient instead, as a size of its own (tensor[3 * Q] rather "
     "than tensor[S], then Q for S / 3)"),
    # a body's size that is negative for one call
    ("def f(x: tensor[N]) = zeros(tensor[N - 1])\nprint f([1, 2])\nprint f(zeros(tensor[0]))\n",
     3, "f's size N - 1 is -1 for this call (N = 0): a size is a whole number from 0"),
    # a name that is no size
    ("def f(x: tensor[N]) = zeros(tensor[M + 1])\n", 1,
     "the size M + 1 names M, which is no size of any parameter of f and no let holding a "
     "size: write the size, or use the parameters' sizes (N)"),
    # arithmetic is rigid: K + 1 is not J, and the message says how to say it is
    ("def f(x: tensor[N, K], w: tensor[J, M]) = concat(x, ones(tensor[N, 1]), 1) @ w\n", 1,
     "cannot matrix-multiply shapes Nx(K + 1) and JxM: the inner dimensions K + 1 and J may "
     "differ; where they are always equal, write J in the parameter's type as K + 1"),
    ("def f(x: tensor[N], y: tensor[M]) = concat(x, y, 0) + zeros(tensor[N + 1])\n", 1,
     "cannot add shapes N + M and N + 1: dimensions N + M and N + 1 may differ and neither is "
     "1"),
    # split of a size that is not a multiple of the count for every call
    ("def f(x: tensor[N, 3 * C]) = split(x, 2, 1)\n", 1,
     "split needs the size of axis 1 of tensor[N, 3*C] to be 2 times a whole number for every "
     "call of f, and 3*C is not: write that size as 2 times a size variable in the parameter's "
     "type (tensor[N, 2*D])"),
    # a slice past its axis for every call
    ("def f(x: tensor[N, K]) = x[:, 1:K + 1]\n", 1,
     "the slice 1:K + 1 runs 1 cell past axis 1 of NxK, for every call"),
])
def test_size_arithmetic_errors_say_which_size_and_what_to_write(src, line, message):
    e = error(src)
    assert (e.line, e.message) == (line, message), e.message


def test_sums_of_sizes_are_equal_in_any_order():
    """concat(h, x) is H + K cells; w's type says K + H: the same size."""
    src = """def f(x: tensor[B, K], h: tensor[B, H], w: tensor[K + H, M]) = concat(h, x, 1) @ w
print f([[1, 2]], [[3]], [[1], [10], [100]])
"""
    (y,) = run(src)
    assert y.tolist() == [[3 * 1 + 1 * 10 + 2 * 100]]


def test_slices_bounded_by_sizes_shift_a_sequence():
    """An LM's inputs and targets in a def over tokens of any length."""
    src = """def shift(tokens: tensor[B, T]) {
    let inputs = tokens[:, 0:T - 1]
    let targets = tokens[:, 1:]
    let same = tokens[:, 0:-1]
    return (inputs, targets, same)
}
let a, c, d = shift([[1, 2, 3, 4], [5, 6, 7, 8]])
print a
print c
print d
def gates(z: tensor[B, 4 * H]) = z[:, H:2 * H] + z[:, 3 * H:]
print gates([[1, 2, 3, 4, 5, 6, 7, 8]])
print gates([[1, 2, 3, 4]])
"""
    a, c, d, g1, g2 = run(src)
    t = np.array([[1, 2, 3, 4], [5, 6, 7, 8]])
    assert a.tolist() == t[:, :-1].tolist() and c.tolist() == t[:, 1:].tolist()
    assert d.tolist() == a.tolist()
    z = np.arange(1, 9)[None, :]
    assert g1.tolist() == (z[:, 2:4] + z[:, 6:]).tolist()
    assert g2.tolist() == [[2 + 4]]
    e = error("def shift(tokens: tensor[B, T]) = tokens[:, 0:T - 1]\n"
              "print shift(zeros(tensor[1, 0]))\n")
    assert (e.line, e.message) == (2, "in shift, the slice 0:T - 1 would end before it starts "
                                      "for this call (T = 0)"), e.message


def test_a_size_variable_is_a_number_in_the_body():
    src = """def mean_rows(x: tensor[N, D]) = row_sum(x) / D
def count(x: tensor[N, D]) {
    var n = 0
    for i in 0..N { n = n + 1 }
    return n * D
}
print mean_rows([[1, 2, 3], [4, 5, 9]])
print count(zeros(tensor[4, 3]))
"""
    a, c = run(src)
    assert a.tolist() == [[2], [6]] and float(np.ravel(c)[0]) == 12


def test_the_repl_shows_a_defs_size_arithmetic():
    from goat.repl.session import Session
    s = Session()
    (r,) = s.run("def g(y: tensor[2 * N]) -> tensor[N, 2] = reshape(y, tensor[N, 2])")
    assert r.signature == "g(y: tensor[2*N]) -> tensor[N, 2]"
    (r,) = s.run("def cell(x: tensor[B, K], w: tensor[K + H, 4 * H]) = concat(x, x, 1)")
    assert r.signature == "cell(x: tensor[B, K], w: tensor[K + H, 4*H]) -> tensor[B, 2*K]"
    (r,) = s.run("g([1, 2, 3, 4])")
    assert r.value.tolist() == [[1, 2], [3, 4]]


def test_arithmetic_that_cancels_is_the_number_left():
    """0 * K + 2 and N - N are sizes 2 and 0 (they had been an internal error); a let in
    such arithmetic is the one a call's error notes."""
    src = ("def f(x: tensor[N, 0 * K + 2]) = x\nprint f([[1, 2]])\n"
           "def g(x: tensor[N], y: tensor[N - N]) = x\nprint g([1], zeros(tensor[0]))\n")
    a, c = run(src)
    assert a.tolist() == [[1, 2]] and c.tolist() == [1]
    e = error("let H = 2\ndef f(x: tensor[N, K - K + H]) = x\nprint f([[1, 2, 3]])\n")
    assert (e.line, e.message) == (3, "argument x of f must have shape Nx2 (N = 1), got 1x3")
    assert e.notes == ("K - K + H in f's types is 2, from the let H on line 1",)


def test_the_lstm_example_learns_its_text(tmp_path):
    """examples/lstm.mg: a cell typed tensor[K + H, 4 * H], trained through time with AdamW;
    its loss falls from about ln 12 (uniform over 12 characters) and it continues "the " as
    the text does; compiled, it prints the same."""
    import re
    from conftest import ROOT, cli
    status, out, err = cli("run", "examples/lstm.mg")
    assert status == 0, err
    losses = [float(v) for v in re.findall(r"loss ([0-9.]+)", out)]
    assert abs(losses[0] - np.log(12)) < 0.1 and losses[-1] < 0.5, losses
    assert out.splitlines()[-1].startswith("the -> 6 2 11 1 "), out   # "mat."
    if importlib.util.find_spec("llvmlite") is not None:
        status, compiled, err = cli("run", "--aot", "examples/lstm.mg", cwd=ROOT)
        assert status == 0 and compiled == out, err


def test_a_calls_unknown_sizes_are_read_when_it_runs(tmp_path, monkeypatch):
    """Found by a breaker and a newcomer: x[1:] or zeros(tensor[N - 1, C]) in a def called
    on a value of ? rows (tokens loaded as tensor[?, ?]) was an internal error; the
    arithmetic is worked out from the sizes when the call runs."""
    monkeypatch.chdir(tmp_path)
    np.save("v4.npy", np.arange(4.0))
    np.save("x5.npy", np.arange(15.0).reshape(5, 3))
    src = """def diff(x: tensor[N]) = x[1:] - x[0:N - 1] + zeros(tensor[N - 1])
def rows(x: tensor[N, C]) = zeros(tensor[N - 1, C]) + x[1:]
let v: tensor[?] = load("v4.npy")
let x: tensor[?, 3] = load("x5.npy")
print diff(v)
print rows(x)
"""
    a, c = run(src)
    assert a.tolist() == np.diff(np.arange(4.0)).tolist()
    assert c.tolist() == np.arange(15.0).reshape(5, 3)[1:].tolist()


@pytest.mark.parametrize("src, message", [
    # a size a parameter's arithmetic needs, given only when the call runs: refused, not
    # taken unchecked (w's 4 * H columns could not be checked)
    ("def f(x: tensor[B, K], w: tensor[K + H, 4 * H]) = concat(x, x, 1)\n"
     "let w: tensor[?, ?] = load(\"x5.npy\")\nprint f([[1, 2]], w)\n",
     "argument w of f has shape ?x?, and its type tensor[K + H, 4*H] needs H, which this call "
     "gives only when the program runs (a ? size of w): give w a shape known before the run "
     "(an annotation, let w: tensor[...] = load(...))"),
    ("def f(w: tensor[2 * H]) = w * H\nlet w: tensor[?] = load(\"v4.npy\")\nprint f(w)\n",
     "argument w of f has shape ?, and its type tensor[2*H] needs H, which this call gives only "
     "when the program runs (a ? size of w): give w a shape known before the run (an "
     "annotation, let w: tensor[...] = load(...))"),
])
def test_arithmetic_a_call_cannot_work_out_before_it_runs_is_refused(tmp_path, monkeypatch,
                                                                      src, message):
    monkeypatch.chdir(tmp_path)
    np.save("v4.npy", np.arange(4.0))
    np.save("x5.npy", np.ones((5, 3)))
    e = error(src)
    assert (e.line, e.message) == (3, message), e.message


def test_a_bound_of_minus_a_size_counts_from_the_end():
    """x[-H:] is the last H cells, as NumPy's (a breaker's: it had been refused as a start
    before 0)."""
    src = """def last(x: tensor[2 * H]) = x[-H:]
def mid(x: tensor[N, 2 * H]) = x[:, -2 * H:-H] + x[:, :-H]
def tail(x: tensor[N], k: tensor[K]) = x[-K:]
print last([1, 2, 3, 4])
print mid([[1, 2, 3, 4]])
print tail([1, 2, 3], [0, 0])
"""
    a, c, d = run(src)
    x = np.array([1, 2, 3, 4])
    assert a.tolist() == x[-2:].tolist()
    assert c.tolist() == [(x[-4:-2] + x[:-2]).tolist()]
    assert d.tolist() == [2, 3]
    e = error("def tail(x: tensor[N], k: tensor[K]) = x[-K:]\nprint tail([1, 2, 3], [0, 0, 0, 0])\n")
    assert (e.line, e.message) == (2, "in tail, the slice -K: would start before 0 for this "
                                      "call (N = 3, K = 4)"), e.message


def test_narrow_takes_arithmetic_on_sizes_as_its_length():
    src = "def f(x: tensor[N], k: scalar) = narrow(x, 0, k, N - 1)\nprint f([1, 2, 3], 1)\n"
    (y,) = run(src)
    assert y.tolist() == [2, 3]
    e = error(src + "print f(zeros(tensor[0]), 0)\n")
    assert (e.line, e.message) == (3, "in f, narrow's length N - 1 would be negative for this "
                                      "call (N = 0)"), e.message


def test_a_product_with_one_size_known_gives_the_other():
    src = ("def f(x: tensor[N], y: tensor[N * M]) = reshape(y, tensor[N, M])\n"
           "print f([1, 2], [1, 2, 3, 4, 5, 6])\n")
    (y,) = run(src)
    assert y.tolist() == [[1, 2, 3], [4, 5, 6]]
    e = error("def f(x: tensor[M], y: tensor[N * M]) = y\n"
              "print f(zeros(tensor[0]), zeros(tensor[0]))\n")
    assert e.message == ("argument y of f has shape 0, and its type tensor[M*N] leaves N open "
                         "for this call (M = 0): give N a size of its own in a parameter's "
                         "type"), e.message


def test_errors_of_a_call_in_a_defs_body_name_the_outer_call():
    e = error("def g(y: tensor[2 * N]) = y[N:]\ndef f(x: tensor[M]) = g(x)\n"
              "print f([1, 2, 3, 4])\nprint f([1, 2, 3])\n")
    assert (e.line, e.message) == (2, "argument y of g has size 3 where its type says 2*N, and "
                                      "no whole size N from 0 makes it so")
    assert e.notes == ("in f, called on line 4",), e.notes


def test_a_parameters_size_that_is_negative_for_a_call_says_so():
    e = error("def f(y: tensor[3 - N], x: tensor[N]) = y\n"
              "print f(zeros(tensor[0]), [1, 2, 3, 4])\n")
    assert e.message == ("argument y of f must have shape 3 - N, whose size 3 - N is -1 for "
                         "this call (N = 4): a size is a whole number from 0"), e.message
    e = error("def f(x: tensor[N], y: tensor[N + 1] = [0, 0, 0]) = y\n")
    assert e.message.startswith("y's type tensor[N + 1] has sizes a call gives, so it cannot "
                                "have a default"), e.message


def test_a_stepped_slice_over_a_run_the_step_divides():
    """A newcomer's: x[::2] in a def over any length (a stride) was refused; over an axis of
    2 * M (+ any number) its cells are a size, M (ceil of the run over the step)."""
    src = """def pairs(x: tensor[2 * M]) = x[::2] + x[1::2]
def odd(x: tensor[N, 2 * L + 1]) = x[:, 1::2]
def pool(x: tensor[N, 2 * L]) = x[:, ::2] * x[:, 1::2]
print pairs([1, 2, 3, 4, 5, 6])
print odd([[1, 2, 3, 4, 5]])
let x = [[1, 2, 3, 4], [5, 6, 7, 8]]
print grad(sum(pool(x) * [[1, 2]]), x)
"""
    a, c, g = run(src)
    v = np.arange(1.0, 7.0)
    assert a.tolist() == (v[::2] + v[1::2]).tolist()
    assert c.tolist() == [[2, 4]]
    x = np.array([[1.0, 2, 3, 4], [5, 6, 7, 8]])
    want = np.zeros_like(x)
    want[:, ::2] = x[:, 1::2] * [1, 2]
    want[:, 1::2] = x[:, ::2] * [1, 2]
    assert g.tolist() == want.tolist()
    e = error("def f(x: tensor[M]) = x[::2]\n")
    assert e.message == ("the slice ::2 takes every 2nd of M cells, a number (rounded up) no "
                         "type writes: the cells it runs over must be 2 times a size, plus any "
                         "number (all of an axis of tensor[2 * M])"), e.message


def test_the_second_breakers_findings(tmp_path, monkeypatch):
    """A def's result had carried a size variable of a def it calls (g's L in f's type,
    f([1, 2, 3, 4]) + [1, 2] refused); a ? size making the body's arithmetic negative was an
    internal error; grad through y[1:] = x[1:] on a ? value too; a bound of -N + 1 was read
    from the start; y[1::2] could not be assigned in a def."""
    monkeypatch.chdir(tmp_path)
    np.save("e0.npy", np.zeros(0))
    np.save("v5.npy", np.arange(5.0))
    (a,) = run("def g(h: tensor[2 * L]) = h[0:L]\ndef f(x: tensor[T]) = g(x) * 2\n"
               "print f([1, 2, 3, 4]) + [1, 2]\n")
    assert a.tolist() == [3, 6]
    e = error("def f(x: tensor[N]) = zeros(tensor[N - 1])\n"
              "let v: tensor[?] = load(\"e0.npy\")\nprint f(v)\n")
    assert (e.line, e.message) == (1, "the size N - 1 is -1 for this call (N = 0): a size is "
                                      "a whole number from 0"), e.message
    (g,) = run("def f(x: tensor[N]) {\n  var y = zeros(tensor[N])\n  y[1:] = x[1:]\n"
               "  return y\n}\nlet v: tensor[?] = load(\"v5.npy\")\nprint grad(sum(f(v) * v), v)\n")
    v = np.arange(5.0)
    assert g.tolist() == np.where(np.arange(5) > 0, 2 * v, 0).tolist()
    e = error("def f(x: tensor[N]) = x[-N + 1:]\n")
    assert e.message == ("the slice's bound -N + 1 is negative for some calls, where NumPy "
                         "counts it from the end, and not for others: write it from the start "
                         "(1, on this axis of N)"), e.message
    src = """def f(x: tensor[2 * M]) {
 var y = x
 y[1::2] += 10 * x[::2]
 return y
}
def h(x: tensor[2 * M + 1]) {
 var y = x
 y[::2] = zeros(tensor[M + 1])
 return y
}
print f([1, 2, 3, 4, 5, 6])
print h([1, 2, 3, 4, 5])
let x = [1, 2, 3, 4]
print grad(sum(f(x) * f(x)), x)
"""
    y, z, gx = run(src)
    assert y.tolist() == [1, 12, 3, 34, 5, 56] and z.tolist() == [0, 2, 0, 4, 0]
    xs = np.array([1.0, 2, 3, 4])
    fy = xs.copy()
    fy[1::2] += 10 * xs[::2]
    want = 2 * fy                                   # d sum(y*y) / dy
    want[::2] += 10 * want[1::2]                    # y[1::2] reads x[::2] times 10
    assert gx.tolist() == want.tolist()


def test_an_open_end_on_an_axis_of_mixed_arithmetic():
    """x[1:] of an axis of 3 - N: its end is the axis's size, not a bound written (it had
    looked for the bound's text)."""
    (y,) = run("def f(x: tensor[3 - N], y: tensor[N]) = x[1:]\nprint f([1, 2], [0])\n")
    assert y.tolist() == [2]


def test_the_third_breakers_findings(tmp_path, monkeypatch):
    """A bound equal to its axis of H - K was refused as negative for some calls; an
    argument of the wrong rank was said to leave a size open; z[[3]] -= 2 was refused where
    z[u] of u = [3] was taken as one index; a slice bound N / 2 had the vague message; a
    module's let could not be in arithmetic (tensor[N, m.D + H])."""
    y, w = run("def f(x: tensor[K], y: tensor[H - K]) = y[0:H - K] + y[:H - K]\n"
               "def g(x: tensor[K], y: tensor[H - K]) = y[H - K - 2:H - K]\n"
               "print f([1, 2], [1, 2, 3])\nprint g([1, 2], [1, 2, 3])\n")
    assert y.tolist() == [2, 4, 6] and w.tolist() == [2, 3]
    e = error("def f(y: tensor[2 * H, 2]) = y[:, 0]\nprint f([1, 2, 3, 4])\n")
    assert e.message == "argument y of f must have shape (2*H)x2, got 4", e.message
    (z,) = run("var z = zeros(tensor[4, 3])\nz[[3]] -= 2\nz[[[1]]] = 1\nprint z\n")
    want = np.zeros((4, 3))
    want[[3]] -= 2
    want[[[1]]] = 1
    assert z.tolist() == want.tolist()
    e = error("def f(x: tensor[N]) = x[0:N / 2]\n")
    assert e.message == ("N / 2 divides a def's size, a whole number only for some of the "
                         "sizes a call may give: write the size as a multiple (tensor[2 * M], "
                         "then M)"), e.message
    (h,) = run("def f(x: tensor[2 * N]) = x[0:2 * N / 2] + x[N:]\nprint f([1, 2, 3, 4])\n")
    assert h.tolist() == [4, 6]
    monkeypatch.chdir(tmp_path)
    (tmp_path / "mymod.mg").write_text("let D = 3\n")
    a, c = run("import mymod\ndef f(x: tensor[N, mymod.D + H], h: tensor[N, H]) = x\n"
               "print f(zeros(tensor[1, 5]), zeros(tensor[1, 2]))\n"
               "let z: tensor[mymod.D * 2 - 1] = zeros(tensor[5])\nprint z\n",
               path=str(tmp_path / "p.mg"))
    assert a.shape == (1, 5) and c.shape == (5,)
    e = error("import mymod\ndef f(x: tensor[N, mymod.D + H], h: tensor[N, H]) = x\n"
              "print f(zeros(tensor[1, 6]), zeros(tensor[1, 2]))\n", path=str(tmp_path / "p.mg"))
    assert e.message == "argument x of f must have shape Nx(H + 3) (N = 1, H = 2), got 1x6"


def test_an_argument_one_cells_subscript_too_deep_gets_the_hint():
    e = error("def f(x: tensor[N, K]) = x\nlet E = ones(tensor[5, 3])\n"
              "let t = argmax_rows([[1, 3, 2]])\nprint f(E[t])\n")
    assert e.message == ("argument x of f must have shape NxK, got 1x1x3; if the value is a "
                         "subscript by a tensor of one cell (E[t]), it keeps t's axes, as "
                         "NumPy's does: 1 too many here (E[t[0]] takes one fewer)"), e.message


def test_a_body_size_too_large_for_a_call_is_that_calls_error():
    e = error("def f(x: tensor[N]) = zeros(tensor[N * N * N * N])\n"
              "print f(zeros(tensor[100000]))\n")
    assert (e.line, e.message) == (2, "f's size N*N*N*N is 100000000000000000000 for this call "
                                      "(N = 100000): too large to be a size (at most 2**53)")


def test_a_computed_start_and_an_end_a_size_more():
    """A breaker's: y[k * T:(k + 1) * T] (the k-th run of T cells, k a loop's index) was
    refused as a slice of unknown length, while y[k:k + T] was taken; the end minus the
    start is read as arithmetic on the def's sizes, the other terms cancelling."""
    src = """def rows(x: tensor[B, T]) {
    let y = reshape(x, tensor[B * T])
    var s = zeros(tensor[T])
    for k in 0..B {
        s = s + y[k * T:(k + 1) * T] + y[k * T:k * T + T]
    }
    return s
}
print rows([[1, 2, 3], [4, 5, 6]])
def pairs(x: tensor[2 * N], k: scalar) = x[k * N:k * N + N]
print pairs([1, 2, 3, 4], 1)
"""
    a, c = run(src)
    assert a.tolist() == (2 * np.array([[1, 2, 3], [4, 5, 6]]).sum(0)).tolist()
    assert c.tolist() == [3, 4]
    e = error("def pairs(x: tensor[2 * N], k: scalar) = x[k * N:k * N + N]\n"
              "print pairs([1, 2, 3, 4], 2)\n")
    assert "start" in e.message and e.line == 1, e.message


@pytest.mark.parametrize("src, why", [
    # a newcomer's ViT patches: 64*M cells to 128*M differ for every batch but 0
    ("def patches(img: tensor[M, 8, 8]) = reshape(swapaxes(reshape(img, tensor[M, 4, 2, 4, 2]),"
     " 2, 3), tensor[M, 16, 8])",
     "cannot reshape Mx4x4x2x2 (64*M cells) to Mx16x8 (128*M cells): the numbers of cells "
     "differ for every size from 1"),
    ("def g(x: tensor[N]) = reshape(x, tensor[N + 1])",
     "cannot reshape N (N cells) to N + 1 (N + 1 cells): the numbers of cells differ for every "
     "size from 1"),
    ("def g(x: tensor[N, K]) = reshape(x, tensor[N, N])",
     "cannot reshape NxK (K*N cells) to NxN (N*N cells): the numbers of cells differ for some "
     "sizes, and a def's body must fit every call"),
])
def test_a_defs_reshape_that_changes_the_cells_says_for_which_sizes(src, why):
    assert error(src + "\n").message == why
