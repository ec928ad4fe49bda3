"""grad through a for loop (backpropagation through time): each program's gradient against
central differences of the same computation written again in NumPy, and PyTorch's autograd
when it is installed; the compiled program and the GPU test back end against goat run."""
import io
import os
import subprocess
import sys

import numpy as np
import pytest

import goat
from conftest import (ROOT, assert_compiled_equal, assert_same_on_the_gpu_test_back_end,
                      central_differences, literal, printed_numbers)

RNG = np.random.default_rng(7)


def _sin(t):
    return np.sin(t + np.array([[0.0], [1.0]]))


# name -> (goat body computing `loss` from w0, w1; their shapes; the same in NumPy)
def _rnn(w0, w1):
    h = np.zeros((2, 3))
    loss = 0.0
    for t in range(5):
        h = np.tanh(h @ w1.T + np.sin(t + w0))
        loss += np.sum(h * h)
    return loss


def _init_active(w0, w1):
    h = w0
    for _ in range(3):
        h = np.tanh(h @ w1)
    return np.sum(h)


def _counter_and_if(w0, w1):
    h, c = w0, 0
    for _ in range(6):
        c += 1
        h = h * w1 if c > 2 else np.sin(h)
        h = h * (c > 3) + h * 0.5
    return np.sum(h)


def _nested(w0, w1):
    h = w0
    for i in range(3):
        k = h
        for _ in range(2):
            k = np.tanh(k @ w1)
        h = h + k * i
    return np.sum(h * h)


def _zero_trips(w0, w1):
    return np.sum(w0 * w1)


def _in_a_def(w0, w1):
    def run(x):
        h = x
        for _ in range(3):
            h = np.tanh(h @ w1)
        return h
    return np.sum(run(w0) * run(w0 * 2))


def _two_vars(w0, w1):
    a, b = w0, w1
    for _ in range(4):
        a, b = a * b + 1, np.sin(a)
    return np.sum(a * b)


def _bounds_from_lets(w0, w1):
    h = w0
    for t in range(1, 4):
        h = h * w1 + t
    return np.sum(h)


def _same_start(w0, w1):
    h0 = np.sin(w1 * 0.3)
    a, b = h0, h0
    for t in range(4):
        a, b = np.tanh(a + w0 * t), b * w0 + a
    return np.sum(a * b)


def _loss_carried(w0, w1):
    return sum(np.sum(w0 * w1 * t) for t in range(3))



def _hoisted(w0, w1):
    h = w0
    u = np.tanh(w1 @ w1)
    for t in range(4):
        h = np.tanh(h @ u + 0.1 * t)
    return np.sum(h * h)


def _hoisted_nested(w0, w1):
    h = w0
    for i in range(3):
        k = h
        for _ in range(2):
            k = np.tanh(k @ (w1 * w1) + h)
        h = h + np.sin(k @ w1.T) * i
    return np.sum(h * h)


def _hoisted_also_outside(w0, w1):
    h = w0
    for _ in range(3):
        h = np.tanh(h * np.exp(w1))
    return np.sum(h) + np.sum(np.exp(w1))


def _metric_beside(w0, w1):
    h = w0
    for t in range(4):
        h = np.tanh(h @ w1 + 0.1 * t)
    return np.sum(h)


def _window(w0, w1):
    h = w0
    for i in range(3):
        for j in range(i, i + 2):
            h = np.tanh(h * w1 + j)
    return np.sum(h)


def _metric_nested(w0, w1):
    h = w0
    for t in range(3):
        for _ in range(2):
            h = np.tanh(h * w1)
        if t > 0:
            h = h * w0
    return np.sum(h)

CASES = {
    "rnn, an invariant hoisted": (
        "var h = zeros(tensor[2x3])\nvar loss = [[0]]\nfor t in 0..5 {\n"
        "    h = tanh(h @ transpose(w1) + sin(t + w0))\n    loss += col_sum(row_sum(h * h))\n}\n",
        [(2, 3), (3, 3)], _rnn),
    "the initial value differentiated": (
        "var h = w0\nfor t in 0..3 {\n    h = tanh(h @ w1)\n}\nlet loss = col_sum(row_sum(h))\n",
        [(2, 3), (3, 3)], _init_active),
    "a counter, an if and a mask": (
        "var h = w0\nvar c = 0\nfor t in 0..6 {\n    c += 1\n    if c > 2 {\n        h = h * w1\n"
        "    } else {\n        h = sin(h)\n    }\n    h = h * (c > 3) + h * 0.5\n}\n"
        "let loss = col_sum(row_sum(h))\n", [(1, 2), (1, 2)], _counter_and_if),
    "nested loops": (
        "var h = w0\nfor i in 0..3 {\n    var k = h\n    for j in 0..2 {\n        k = tanh(k @ w1)\n"
        "    }\n    h = h + k * i\n}\nlet loss = col_sum(row_sum(h * h))\n",
        [(2, 2), (2, 2)], _nested),
    "no iteration": (
        "var h = w0\nfor t in 0..0 {\n    h = h * w1\n}\nlet loss = col_sum(row_sum(h * w1))\n",
        [(1, 2), (1, 2)], _zero_trips),
    "a loop in a def called twice": (
        "def run(x: tensor[N, C], w: tensor[C, C]) {\n    var h = x\n    for t in 0..3 {\n"
        "        h = tanh(h @ w)\n    }\n    return h\n}\n"
        "let loss = col_sum(row_sum(run(w0, w1) * run(w0 * 2, w1)))\n",
        [(2, 3), (3, 3)], _in_a_def),
    "two vars feeding each other": (
        "var a = w0\nvar b = w1\nfor t in 0..4 {\n    let a2 = a * b + 1\n    b = sin(a)\n"
        "    a = a2\n}\nlet loss = col_sum(row_sum(a * b))\n", [(1, 3), (1, 3)], _two_vars),
    "bounds from lets": (
        "let first = 1\nlet steps = 4\nvar h = w0\nfor t in first..steps {\n    h = h * w1 + t\n}\n"
        "let loss = col_sum(row_sum(h))\n", [(1, 2), (1, 2)], _bounds_from_lets),
    # two tapes that hash-consing had made one array, written in place by both
    "two vars starting from one value": (
        "let h0 = sin(w1 * 0.3)\nvar a = h0\nvar b = h0\nfor t in 0..4 {\n"
        "    let a2 = tanh(a + w0 * t)\n    b = b * w0 + a\n    a = a2\n}\n"
        "let loss = col_sum(row_sum(a * b))\n", [(1, 2), (1, 2)], _same_start),
    # values computed once from the weights before the first step (the pre-region): their
    # cotangents add up over the steps and go through them once, after the loop
    "a value hoisted from the weights": (
        "var h = w0\nfor t in 0..4 {\n    h = tanh(h @ tanh(w1 @ w1) + 0.1 * t)\n}\n"
        "let loss = col_sum(row_sum(h * h))\n", [(2, 3), (3, 3)], _hoisted),
    "values hoisted in nested loops": (
        "var h = w0\nfor i in 0..3 {\n    var k = h\n    for j in 0..2 {\n"
        "        k = tanh(k @ (w1 * w1) + h)\n    }\n    h = h + sin(k @ transpose(w1)) * i\n}\n"
        "let loss = col_sum(row_sum(h * h))\n", [(2, 2), (2, 2)], _hoisted_nested),
    "a hoisted value also computed after the loop": (
        "var h = w0\nfor t in 0..3 {\n    h = tanh(h * exp(w1))\n}\n"
        "let loss = col_sum(row_sum(h)) + col_sum(row_sum(exp(w1)))\n",
        [(2, 3), (2, 3)], _hoisted_also_outside),
    # a var the loss does not read: not differentiated (argmax_rows has no derivative)
    "a metric the loss does not read": (
        "var h = w0\nvar correct = [[0]]\nvar spent = w1 * 0\nfor t in 0..4 {\n"
        "    h = tanh(h @ w1 + 0.1 * t)\n    correct += col_sum(argmax_rows(h) == 0)\n"
        "    spent = spent + exp(h @ transpose(h))\n}\nlet loss = col_sum(row_sum(h))\n",
        [(3, 3), (3, 3)], _metric_beside),
    # an inner loop whose bounds change, but not its number of steps (--aot needs that)
    "a window i..i + 2": (
        "var h = w0\nfor i in 0..3 {\n    for j in i..i + 2 {\n        h = tanh(h * w1 + j)\n"
        "    }\n}\nlet loss = col_sum(row_sum(h))\n", [(1, 2), (1, 2)], _window),
    # found by a differential tester: the same, the metric assigned in a loop or an if in
    # the loop beside a var the loss needs
    "a metric in a nested loop and an if": (
        "var h = w0\nvar m = zeros(tensor[1x3])\nfor t in 0..3 {\n    for j in 0..2 {\n"
        "        m = m + (h > 0)\n        h = tanh(h * w1)\n    }\n    if t > 0 {\n"
        "        m = m + (h == 0)\n        h = h * w0\n    }\n}\n"
        "let loss = col_sum(row_sum(h))\n", [(1, 3), (1, 3)], _metric_nested),
    "the loss carried": (
        "var s = [[0]]\nfor t in 0..3 {\n    s = s + col_sum(row_sum(w0 * w1 * t))\n}\n"
        "let loss = s\n", [(2, 2), (2, 2)], _loss_carried),
}


def _program(body, shapes, printing=True):
    head = "".join('let w%d: tensor[%s] = load("w%d.npy")\n' % (i, "x".join(map(str, s)), i)
                   for i, s in enumerate(shapes))
    tail = "let g0, g1 = grad(loss, w0, w1)\n" + ("print g0\nprint g1\n" if printing else "")
    return head + body + tail


def _weights(shapes):
    return {"w%d.npy" % i: RNG.normal(size=s) * 0.7 for i, s in enumerate(shapes)}


def _central(f, ws, eps=1e-6):
    out = []
    for k, w in enumerate(ws):
        g = np.zeros_like(w)
        for i in np.ndindex(w.shape):
            up = [x.copy() for x in ws]
            down = [x.copy() for x in ws]
            up[k][i] += eps
            down[k][i] -= eps
            g[i] = (f(*up) - f(*down)) / (2 * eps)
        out.append(g)
    return out


@pytest.mark.parametrize("name", list(CASES))
def test_grad_through_a_loop_equals_finite_differences(name):
    body, shapes, reference = CASES[name]
    inputs = _weights(shapes)
    got = goat.run_source(_program(body, shapes), inputs=inputs)[-2:]
    want = _central(reference, [inputs["w0.npy"], inputs["w1.npy"]])
    for g, w in zip(got, want):
        assert np.allclose(g, w, rtol=1e-6, atol=1e-8), (name, g, w)


def test_an_rnn_trained_through_its_loop_matches_pytorch_step_by_step():
    """An Elman RNN over 6 steps, 30 steps of gradient descent with grad taken through the
    loop over time: the loss at every tenth step against PyTorch's autograd, float64."""
    torch = pytest.importorskip("torch")
    text = """
def cell(x: tensor[2x1], h: tensor[2x3], wx: tensor[1x3], wh: tensor[3x3]) = tanh(x @ wx + h @ wh)
def err(h: tensor[2x3], wy: tensor[3x1], y: tensor[2x1]) = col_mean((h @ wy - y) * (h @ wy - y))
var wx = randn(tensor[1x3], 1)
var wh = randn(tensor[3x3], 2) * 0.5
var wy = randn(tensor[3x1], 3)
for step in 0..30 {
    var h = zeros(tensor[2x3])
    var loss = [[0]]
    for t in 0..6 {
        h = cell(sin(t * 0.5 + [[0], [1]]), h, wx, wh)
        loss += err(h, wy, cos(t * 0.5 + [[0], [1]])) / 6
    }
    let gx, gh, gy = grad(loss, wx, wh, wy)
    wx = wx - 0.5 * gx
    wh = wh - 0.5 * gh
    wy = wy - 0.5 * gy
    print loss
}
"""
    losses = [v.item() for v in goat.run_source(text)]
    start = goat.run_source("print randn(tensor[1x3], 1)\nprint randn(tensor[3x3], 2) * 0.5\n"
                            "print randn(tensor[3x1], 3)\n")
    ws = [torch.tensor(np.asarray(v)) for v in start]
    off = torch.tensor([[0.0], [1.0]], dtype=torch.float64)
    want = []
    for _ in range(30):
        ws = [w.clone().requires_grad_(True) for w in ws]
        h = torch.zeros(2, 3, dtype=torch.float64)
        loss = 0
        for t in range(6):
            h = torch.tanh(torch.sin(t * 0.5 + off) @ ws[0] + h @ ws[1])
            p = h @ ws[2] - torch.cos(t * 0.5 + off)
            loss = loss + (p * p).mean() / 6
        loss.backward()
        want.append(loss.item())
        ws = [w.detach() - 0.5 * w.grad for w in ws]
    assert losses[-1] < losses[0] * 0.6
    assert np.allclose(losses, want, rtol=1e-13, atol=0)


def test_the_example_program_matches_pytorch():
    """examples/rnn_bptt.mg: grad through the loop over time, against PyTorch."""
    torch = pytest.importorskip("torch")
    path = os.path.join(ROOT, "examples", "rnn_bptt.mg")
    values = goat.run_file(path)
    loss, gwx, gwh, gwy = values[-4:]
    start = goat.run_source("print randn(tensor[1x3], 1)\nprint randn(tensor[3x3], 2) * 0.5\n"
                            "print randn(tensor[3x1], 3)\n")
    ws = [torch.tensor(np.asarray(v), requires_grad=True) for v in start]
    off = torch.tensor([[0.0], [1.0]], dtype=torch.float64)
    h = torch.zeros(2, 3, dtype=torch.float64)
    total = 0
    for t in range(4):
        h = torch.tanh(torch.sin(t + off) @ ws[0] + h @ ws[1])
        p = h @ ws[2] - torch.cos(t + off)
        total = total + (p * p).mean()
    total.backward()
    assert loss.item() == pytest.approx(total.item(), rel=1e-14)
    for got, w in zip((gwx, gwh, gwy), ws):
        assert np.allclose(got, w.grad.numpy(), rtol=1e-13, atol=1e-15)


def test_bounds_known_only_when_the_program_runs(tmp_path):
    np.save(tmp_path / "n.npy", np.array([[4.0]]))
    text = ('let n: tensor[1x1] = load("n.npy")\nvar w = [[0.5, 0.3]]\nvar h = [[1, 2]]\n'
            'for t in 0..reshape(n, scalar) {\n    h = tanh(h * w + t)\n}\n'
            'print grad(col_sum(row_sum(h)), w)\n')

    def f(w):
        h = np.array([1.0, 2.0])
        for t in range(4):
            h = np.tanh(h * w + t)
        return np.sum(h)
    (g,) = goat.run_source(text, path=str(tmp_path / "p.mg"))
    (want,) = _central(f, [np.array([0.5, 0.3])])
    assert np.allclose(g.ravel(), want, rtol=1e-7)


def test_the_loops_prints_are_not_repeated_by_grad():
    out = io.StringIO()
    goat.run_source('var w = [[2]]\nvar h = [[1]]\nfor t in 0..3 {\n    h = h * w\n'
                    '    print "t = {t}"\n}\nprint grad(col_sum(h), w)\n', stdout=out)
    lines = out.getvalue().splitlines()
    assert [line for line in lines if line.startswith("t = ")] == ["t = 0", "t = 1", "t = 2"]
    assert lines[-1] == "[[12]]"                        # d(w^3)/dw at 2


def test_f32_follows_f64():
    body, shapes, _ = CASES["rnn, an invariant hoisted"]
    inputs = _weights(shapes)
    wide = goat.run_source(_program(body, shapes), inputs=inputs)[-2:]
    narrow = goat.run_source(_program(body, shapes), inputs=inputs, dtype="f32")[-2:]
    for a, b in zip(narrow, wide):
        assert a.dtype == np.float32
        assert np.allclose(a, b, rtol=1e-4, atol=1e-5)


def test_the_gpu_test_back_end_gives_the_same_bits_without_stray_host_reads():
    body, shapes, _ = CASES["nested loops"]
    assert_same_on_the_gpu_test_back_end(
        _program(body, shapes).replace('load("w0.npy")', "randn(tensor[2x2], 1)")
        .replace('load("w1.npy")', "randn(tensor[2x2], 2)"))


@pytest.mark.parametrize("name", ["rnn, an invariant hoisted", "a counter, an if and a mask",
                                  "nested loops", "a loop in a def called twice",
                                  "a window i..i + 2", "values hoisted in nested loops",
                                  "a metric the loss does not read"])
def test_compiled_gradients_are_goat_runs_bit_for_bit(tmp_path, name):
    pytest.importorskip("llvmlite")
    body, shapes, _ = CASES[name]
    for file, w in _weights(shapes).items():
        np.save(tmp_path / file, w)
    (tmp_path / "p.mg").write_text(_program(body, shapes))
    env = dict(os.environ, GOAT_CACHE=str(tmp_path / "cache"), GOAT_PRINT_DIGITS="17")
    runs = [subprocess.run([sys.executable, "-m", "goat", "run"] + extra + ["p.mg"],
                           cwd=str(tmp_path), env=env, capture_output=True, text=True)
            for extra in ([], ["--aot"])]
    assert runs[1].returncode == 0, runs[1].stderr
    got = goat.run_file(str(tmp_path / "p.mg"))[-2:]
    for g, numbers in zip(got, printed_numbers(runs[1].stdout)):
        assert_compiled_equal(numbers, g, body)


def test_aot_needs_the_number_of_iterations(tmp_path):
    pytest.importorskip("llvmlite")
    np.save(tmp_path / "n.npy", np.array([[3.0]]))
    (tmp_path / "p.mg").write_text(
        'let n: tensor[1x1] = load("n.npy")\nvar w = [[0.5]]\nvar h = [[1]]\n'
        'for t in 0..reshape(n, scalar) {\n    h = h * w\n}\nprint grad(col_sum(h), w)\n')
    r = subprocess.run([sys.executable, "-m", "goat", "run", "--aot", "p.mg"], cwd=str(tmp_path),
                       env=dict(os.environ, GOAT_CACHE=str(tmp_path / "cache")),
                       capture_output=True, text=True)
    assert r.returncode == 1
    assert r.stderr.startswith(
        "p.mg:4: error: --aot (goat run --aot, goat compile --aot) needs the number of "
        "iterations of a loop that grad differentiates through when it compiles")


def test_the_repl_differentiates_through_a_loop_of_the_same_input_only(tmp_path):
    """The REPL keeps an earlier input's values only while a name needs them: grad through
    an earlier input's loop is a clear error; in one input (a block, a def, a loaded file)
    it goes through."""
    from goat.diagnostics import GoatError
    from goat.repl.session import Session
    s = Session()
    s.run("var w = [[0.5]]")
    s.run("var h = [[1]]")
    s.run("for t in 0..3 {\n    h = tanh(h * w)\n}")
    with pytest.raises(GoatError) as info:
        s.run("grad(col_sum(h), w)")
    assert "it ran in an earlier input" in info.value.message
    want = (np.tanh(np.tanh(np.tanh(0.5 + 1e-6) * (0.5 + 1e-6)) * (0.5 + 1e-6))
            - np.tanh(np.tanh(np.tanh(0.5 - 1e-6) * (0.5 - 1e-6)) * (0.5 - 1e-6))) / 2e-6
    s.run("var g = [[0]]")
    s.run("if 1 {\n    var k = [[1]]\n    for t in 0..3 {\n        k = tanh(k * w)\n"
          "    }\n    g = grad(col_sum(k), w)\n}")
    (r,) = s.run("g")
    assert abs(np.asarray(r.value).item() - want) < 1e-8
    (tmp_path / "f.mg").write_text("var v = [[0.5]]\nvar k = [[1]]\nfor t in 0..3 {\n"
                                   "    k = tanh(k * v)\n}\nlet gv = grad(col_sum(k), v)\n")
    s.load(str(tmp_path / "f.mg"))
    (r,) = s.run("gv")
    assert abs(np.asarray(r.value).item() - want) < 1e-8


@pytest.mark.parametrize("src", [
    "let w = [[0.7]]\nvar h = [[0.4]]\nfor t in 0..2 {\n    h = h * w\n}\nlet g1 = grad(h, w)\n"
    "print grad(g1, w)\n",
    # a training loop differentiated whose step takes a gradient through a loop
    "let x = [[0.5, -0.2], [0.3, 0.8]]\nlet w0 = [[0.2, -0.4], [0.5, 0.1]]\n"
    "def inner(w: tensor[2x2]) {\n    var h = x\n    for t in 0..2 {\n        h = tanh(h @ w)\n"
    "    }\n    return col_sum(row_sum(h * h))\n}\nvar w = w0\nfor step in 0..3 {\n"
    "    w = w - 0.3 * grad(inner(w), w)\n}\nprint grad(col_sum(row_sum(w * w * w)), w0)\n",
])
def test_a_second_derivative_through_a_loop_is_refused_not_wrong(src):
    """Found by a differential tester: grad of a gradient taken through a loop treated the
    tape as a constant and silently dropped a term (0.4 for 0.8)."""
    with pytest.raises(goat.GoatError) as info:
        goat.run_source(src)
    assert info.value.message.startswith(
        "grad cannot differentiate again a gradient taken through the for loop on line ")


def test_auto_counts_a_tape_row_an_iteration_not_the_whole_tape():
    """Found by a differential tester: each iteration's tape write was counted as moving the
    whole tape, so the estimate grew with the square of the steps (100,000 steps: 135 s
    estimated for a 6 s run)."""
    from goat.gpu.auto import region_cost
    text = ("let N = %d\nvar w = [[0.5, 0.1, 0.2, 0.3]]\nvar h = [[1, 1, 1, 1]]\n"
            "for t in 0..N {\n    h = tanh(h * w)\n}\nprint grad(col_sum(row_sum(h)), w)\n")
    small = region_cost(goat.check_source(text % 1000).main)
    large = region_cost(goat.check_source(text % 10000).main)
    assert 9 < large.bytes / small.bytes < 11


def test_a_big_loop_gradient_costs_the_check_no_memory(tmp_path):
    """Found by a newcomer: the zeros a loop's gradient accumulators start from were made when
    the program was checked (H = 8000: 1 GB for a check that runs nothing)."""
    text = ("let H = 8000\nvar w: tensor[H, H] = zeros(tensor[H, H])\nvar h = zeros(tensor[1, H])\n"
            "for t in 0..3 {\n    h = tanh(h @ w + 1)\n}\nprint grad(col_sum(row_sum(h)), w)\n")
    program = goat.check_source(text)
    held = sum(np.asarray(n.value).nbytes for n in program.nodes if n.kind == 0)   # CONST
    assert held < 1_000_000


def test_grad_through_gather_of_a_table_without_columns():
    """Found by a newcomer (--let B=0): a 3x0 table's gradient was an internal error."""
    (g,) = goat.run_source("let table = zeros(tensor[3, 0])\n"
                           "print grad(col_sum(row_sum(gather(table, [[1]]))), table)\n")
    assert g.shape == (3, 0)


def test_the_repl_lets_a_loops_tape_go(tmp_path):
    """Found by a reviewer: a tape read a named starting value, so it lay 'on a path' and the
    REPL kept it (160 MB here) for the rest of the session."""
    from goat.repl.session import Session
    (tmp_path / "f.mg").write_text(
        "let x = randn(tensor[100x1000], 5)\nlet h0 = zeros(tensor[100x1000])\n"
        "let w = randn(tensor[1x1000], 1) * 0.1\nvar h = h0\nfor t in 0..200 {\n"
        "    h = tanh(h * w + x)\n}\nlet g = grad(col_sum(row_sum(h)), w)\n")
    s = Session()
    s.load(str(tmp_path / "f.mg"))
    s.run("let z = g * 2")
    held = sum(v.nbytes for v in s.evaluator.values if hasattr(v, "nbytes"))
    assert held < 20_000_000, held


@pytest.mark.parametrize("body, want", [
    # a bound the loss also depends on: no derivative through the loop's count (it had been
    # refused as a second derivative)
    ("var h = w0\nfor t in 0..n {\n    h = h * w0 + t * t\n}\nlet loss = col_sum(row_sum(h)) + n\n",
     lambda w: 4 * w ** 3 + 1),                  # w^4 + w + 4
    ("var h = w0\nfor t in 0..n {\n    h = h * w0 * (t > 1) + sin(h) * (t <= 1)\n}\n"
     "let loss = col_sum(row_sum(h)) + n\n",
     lambda w: (np.sin(np.sin(w + 1e-6)) * (w + 1e-6) - np.sin(np.sin(w - 1e-6)) * (w - 1e-6))
     / 2e-6),
])
def test_a_bound_the_loss_depends_on_is_a_constant_to_the_loop(body, want):
    w = np.array([[0.5, 0.3]])
    text = ("let w0 = [[0.5, 0.3]]\nlet n = 3 + col_sum(row_sum(w0 * 0))\n" + body
            + "print grad(loss, w0)\n")
    (g,) = goat.run_source(text)
    assert np.allclose(g, want(w), rtol=1e-7)


def test_an_f32_loop_far_from_0_counts_its_rows_from_0():
    """Found by a reviewer: the tape's row was the loop's float32 index minus its start, so a
    loop from 20,000,000 failed under --dtype f32 with grad only."""
    text = ("let w = [[0.5, 0.3]]\nvar h = [[1, 1]]\nfor t in 20000000..20000003 {\n"
            "    h = tanh(h * w)\n}\nprint grad(col_sum(row_sum(h)), w)\n")
    wide = goat.run_source(text)[0]
    narrow = goat.run_source(text, dtype="f32")[0]
    assert np.allclose(narrow, wide, rtol=1e-5)


def test_a_long_compiled_loop_writes_its_tape_in_place(tmp_path):
    """Found by a reviewer: the compiled program copied the whole tape at each step (8,000 steps
    of a 16x64 state: 29 s against goat run's 0.6 s); it now writes the row in place when the
    loop's state alone holds the tape (goat_exec's UPDATE step), as goat run does.  Its
    gradient is goat run's, bit for bit."""
    pytest.importorskip("llvmlite")
    from goat.aot import kernels
    assert kernels.stack_set.in_place
    program = ("let T = 3000\nvar w = randn(tensor[16x16], 1) * 0.1\n"
               "var h = randn(tensor[4x16], 2)\nfor t in 0..T {\n    h = tanh(h @ w + 0.01)\n}\n"
               "let g = grad(col_sum(row_sum(h)), w)\nprint g\n")
    (tmp_path / "p.mg").write_text(program)
    env = dict(os.environ, GOAT_CACHE=str(tmp_path / "cache"), GOAT_PRINT_DIGITS="17")
    r = subprocess.run([sys.executable, "-m", "goat", "run", "--aot", "p.mg"], cwd=str(tmp_path),
                       env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    (g,) = goat.run_file(str(tmp_path / "p.mg"))
    (numbers,) = printed_numbers(r.stdout)
    assert_compiled_equal(numbers, g, program)


_HOISTED = ("let w = randn(tensor[32x32], 1) * 0.2\nvar h = randn(tensor[2x32], 2)\n"
            "for t in 0..50 {\n    h = tanh(h @ %s)\n}\nprint grad(col_sum(row_sum(h * h)), w)\n")


def test_a_value_hoisted_from_the_weights_is_differentiated_once():
    """Found by a reviewer: a value the loop computes once from the weights (tanh(w @ w) in
    the body, hoisted before the first step) was differentiated again at every step of the
    backward loop -- 2.6 s against 0.19 s with the value computed before the loop by hand.  Its
    cotangent now adds up over the steps and goes through tanh(w @ w) once: the same gradient,
    bit for bit, as the program that computes it before the loop, and about its work."""
    from goat.gpu.auto import region_cost
    inside = _HOISTED % "tanh(w @ w)"
    before = _HOISTED.replace("var h", "let u = tanh(w @ w)\nvar h") % "u"
    (a,), (b,) = goat.run_source(inside), goat.run_source(before)
    assert np.array_equal(a, b)
    work = [region_cost(goat.check_source(t).main).flops for t in (inside, before)]
    # the difference is tanh(w @ w) computed again for the backward pass: 3 products of
    # 32x32 matrices, where at each step it had been 150 (50 steps of 2x32 products: 100)
    assert work[0] < work[1] + 4 * 2 * 32 ** 3


@pytest.mark.parametrize("count", ["let n = 0\n", 'let n: tensor[1x1] = load("n.npy")\n'])
def test_a_loop_of_no_steps_leaves_its_hoisted_values_alone(tmp_path, count):
    """A loop that does not run does not compute its pre-region, so its gradient does not go
    through it either: no 0 * inf from log(w * 0) and no error from gather's out-of-range
    index, which only a step would meet -- whether the number of steps is known when the
    program is checked or only when it runs."""
    np.save(tmp_path / "n.npy", np.array([[0.0]]))
    np.save(tmp_path / "idx.npy", np.array([[5.0]]))
    text = (count + 'let idx: tensor[1x1] = load("idx.npy")\nvar w = [[0.5, 2], [1, 3]]\n'
            "var h = [[1, 1]]\nfor t in 0..n {\n    h = h @ (w * log(w * 0)) + gather(w, idx)\n}\n"
            "print grad(col_sum(row_sum(h)) + col_sum(row_sum(w * w)), w)\n")
    (g,) = goat.run_source(text, path=str(tmp_path / "p.mg"))
    assert np.array_equal(g, 2 * np.array([[0.5, 2], [1, 3]]))



def test_a_var_the_loss_does_not_read_is_left_out_of_the_backward_pass():
    """Found by a reviewer: every var the loop carries was taped and computed again, and one
    computed through argmax_rows (a count of correct answers) stopped grad with "no
    derivative", though the loss does not read it.  Now the tape and the backward loop keep
    only the vars the loss needs: the work of grad is the same with the metric as without."""
    from goat.gpu.auto import region_cost
    text = ("let w = randn(tensor[32x32], 1) * 0.2\nvar h = randn(tensor[2x32], 2)\n%s"
            "for t in 0..50 {\n    h = tanh(h @ w)\n%s}\nprint grad(col_sum(row_sum(h)), w)\n")
    plain = text % ("", "")
    metric = text % ("var hits = [[0]]\nvar big = zeros(tensor[32x32])\n",
                     "    hits += col_sum(argmax_rows(h) == 3)\n"
                     "    big = big + transpose(h) @ h\n")
    (a,), (b,) = goat.run_source(plain), goat.run_source(metric)
    assert np.array_equal(a, b)
    work = [region_cost(goat.check_source(t).main).flops for t in (plain, metric)]
    # the metric's own forward pass (50 steps of a 32x2 @ 2x32 product and the rest), once
    assert work[1] - work[0] < 50 * (2 * 2 * 32 * 32 + 3 * 32 * 32 + 40)


@pytest.mark.parametrize("block", [
    "for i in 0..2 {\n    let u = w2 * 2\n    acc += w1 * (i + 1)\n}\n",
    "if 1 {\n    let u = w2 * 2\n    acc = acc * w1\n}\n",
    "for i in 0..2 {\n    print w2\n    acc = acc * w1\n}\n",
])
def test_a_name_only_an_unread_let_of_a_block_takes_is_not_in_the_loss(block):
    """Found by a breaker: w2, read only by a let nobody reads inside a loop or an if, was said
    to reach the loss 'only through what chooses values'; the loss does not depend on it at
    all, as it says for the same let outside a block."""
    text = ("let w1 = [[1.0, 2]]\nlet w2 = [[3.0, 4]]\nvar acc = w1\n" + block
            + "print grad(sum(acc), w1, w2)\n")
    with pytest.raises(goat.GoatError) as info:
        goat.check_source(text)
    assert info.value.message.startswith("the loss does not depend on 'w2', so its gradient "
                                         "would be zero everywhere")


def test_a_name_a_loop_s_bound_reads_is_still_said_to_choose():
    text = ("let n = [[2.0]]\nvar acc = [[1.0]]\nfor i in 0..n {\n    acc = acc * 2\n}\n"
            "print grad(sum(acc), n)\n")
    with pytest.raises(goat.GoatError) as info:
        goat.check_source(text)
    assert "only through what chooses values" in info.value.message


@pytest.mark.parametrize("block,use", [
    # an if that sets the loss's part and an index beside it (a sampling rollout's shape)
    ("if 1 {\n    acc += E[0, 0]\n    j = 1\n}\n", "acc += E[j, 0]\n"),
    ("if 1 {\n    if 1 {\n        acc += E[0, 0] * E[1, 1]\n        j = 1\n    }\n}\n",
     "acc += sum(narrow(E, 0, j, 1)) + sum(onehot(reshape(j, tensor[1, 1]), 2) * E[0:1, :])"
     " + sum(rand(tensor[1], j) * E[1, 1])\n"),
    ("for i in 0..3 {\n    if i >= 1 {\n        acc += E[j, 0] * E[0, 1]\n        j = 1 - j\n"
     "    }\n}\n", "acc += E[j, 1] * E[j, 1]\n"),
    ("for i in 0..3 {\n    acc += E[j, 1] * E[j, 0]\n    j = 1 - j\n}\n", "acc += E[j, 0]\n"),
    ("if 1 {\n    acc, j = step(acc, E)\n}\n", "acc += E[j, 1]\n"),
])
def test_an_index_set_beside_the_loss_in_a_block_is_a_constant_to_grad(block, use):
    """Found by a newcomer: a var assigned in the same if (or loop) as one that depends on
    the weights was taken to depend on them too, so using it as an index (a subscript,
    narrow's start, onehot's indices, a seed) stopped grad with "no derivative with respect
    to its index".  Each result of an if or a loop now depends on what it is computed from;
    the gradient against central differences."""
    head = ("def step(a: scalar, w: tensor[2, 2]) {\n    return (a + w[0, 0] * w[1, 0], 1)\n}\n"
            "var j = 0\nvar acc = 0\n")
    E = np.array([[1.0, 2.0], [0.5, 0.1]])
    src = "let E = %s\n" % literal(E) + head + block + use

    def loss(dE):
        (v,) = goat.run_source(src.replace("let E = %s" % literal(E), "let E = %s"
                                           % literal(E + dE)) + "print acc\n")
        return float(np.ravel(v)[0])
    (g,) = goat.run_source(src + "print grad(acc, E)\n")
    assert np.allclose(g, central_differences(loss, E), rtol=1e-7, atol=1e-9)
    assert np.any(g != 0)
