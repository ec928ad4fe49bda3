"""grad through a loop runs the loop's body as often as PyTorch's autograd does: once forward
(the loop itself keeps each iteration's starting values and its costly values -- matrix
products -- on tapes) and once backward (reading them), not three times (the loop, a copy of
it that kept the starting values, and the backward steps computing every value again).

An LSTM trained through 200 steps of time cost 222 GFLOP where PyTorch needs about 127
(goat check --cost), and about twice PyTorch's time; its gradients are unchanged.  Values are
held to finite differences of a NumPy forward pass written here, and to PyTorch where it is
installed."""
import os
import subprocess
import sys

import numpy as np
import pytest

import goat
from goat.typecheck.program import LOOP, OP

RNN = """let w = [[0.5, -0.3, 0.2, 0.1], [0.1, 0.4, -0.6, 0.2], [-0.2, 0.3, 0.5, -0.1], [0.3, 0.0, 0.1, 0.2]]
let b = [[0.1, -0.2, 0.05, 0.0]]
let x = [[[0.3, -0.1, 0.2, 0.1]], [[0.0, 0.5, -0.4, 0.2]], [[0.2, 0.2, 0.1, -0.3]], [[-0.3, 0.1, 0.6, 0.0]], [[0.4, -0.2, 0.0, 0.5]]]
def loss(w: tensor[4x4], b: tensor[1x4]) {
    var h = [[1, -1, 0.5, 0.25]]
    for t in START..START + 5 {
        h = tanh(h @ w + b + x[t - START])
    }
    return sum(h * h)
}
let gw, gb = grad(loss(w, b), w, b)
print gw
print gb
"""

W = np.array([[0.5, -0.3, 0.2, 0.1], [0.1, 0.4, -0.6, 0.2], [-0.2, 0.3, 0.5, -0.1],
              [0.3, 0.0, 0.1, 0.2]])
B = np.array([[0.1, -0.2, 0.05, 0.0]])
X = np.array([[[0.3, -0.1, 0.2, 0.1]], [[0.0, 0.5, -0.4, 0.2]], [[0.2, 0.2, 0.1, -0.3]],
              [[-0.3, 0.1, 0.6, 0.0]], [[0.4, -0.2, 0.0, 0.5]]])


def _rnn_loss(w, b):
    h = np.array([[1.0, -1.0, 0.5, 0.25]])
    for t in range(5):
        h = np.tanh(h @ w + b + X[t])
    return float(np.sum(h * h))


def _numeric(f, x, eps=1e-6):
    g = np.zeros_like(x)
    for i in np.ndindex(*x.shape):
        up, down = x.copy(), x.copy()
        up[i] += eps
        down[i] -= eps
        g[i] = (f(up) - f(down)) / (2 * eps)
    return g


def _loops(program):
    return [n for n in program.walk() if n.kind == LOOP]


def _ops(region, name):
    return [n for n in region.nodes if n.kind == OP and n.op.name == name]


def _rnn(start):
    return RNN.replace("START", str(start))


def test_the_loop_keeps_its_own_tapes_and_the_gradient_is_the_derivative():
    program = goat.check_source(_rnn(0))
    loops = _loops(program)
    assert len(loops) == 2              # the loop and its backward steps, no copy of it
    forward, backward = loops
    assert len(forward.shape) > 1 and len(forward.value.yields) == len(forward.shape)
    gw, gb = goat.execute(program)
    np.testing.assert_allclose(gw, _numeric(lambda w: _rnn_loss(w, B), W), rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(gb, _numeric(lambda b: _rnn_loss(W, b), B), rtol=1e-7, atol=1e-9)


def test_the_backward_steps_read_the_products_the_loop_kept():
    """The backward body computes no forward product again: its two matrix products are the
    cotangent's, h's (g @ w^T) and w's (h^T @ g)."""
    program = goat.check_source(_rnn(0))
    forward, backward = _loops(program)
    assert len(_ops(forward.value, "matmul")) == 1
    assert len(_ops(forward.value, "stack_set")) == 2       # h's start, and h @ w
    assert len(_ops(backward.value, "matmul")) == 2
    assert len(_ops(backward.value, "stack_get")) == 1          # h's start
    assert len(_ops(backward.value, "taped_matmul")) == 1       # h @ w, as the loop made it


def test_a_gradient_through_a_loop_that_kept_a_product_is_differentiated_again():
    """The kept product reads as the product of its arguments to a second grad (found by the
    suite: an embedding's gradient differentiated for W had become an error)."""
    torch = pytest.importorskip("torch")
    text = ("let E = [[0.5, -0.2, 0.1, 0.7], [0.3, 0.8, -0.5, -0.1]]\nlet W = [[0.2, 0.4], "
            "[-0.3, 0.1], [0.5, 0.6], [0.1, -0.2]]\ndef loss(E: tensor[2x4], W: tensor[4x2]) {\n"
            "    var total = zeros(tensor[1x1])\n    for b in 0..3 {\n"
            "        let h = tanh(E * (b + 1) @ W)\n        total += col_sum(row_sum(h * h))\n"
            "    }\n    return total\n}\nlet g = grad(loss(E, W), E)\nprint g\n"
            "print grad(col_sum(row_sum(g * g)), W)\n")
    program = goat.check_source(text)
    assert [n for n in program.walk() if n.kind == OP and n.op.name == "taped_matmul"]
    g, g2 = goat.execute(program)
    e = torch.tensor([[0.5, -0.2, 0.1, 0.7], [0.3, 0.8, -0.5, -0.1]], dtype=torch.float64,
                     requires_grad=True)
    w = torch.tensor([[0.2, 0.4], [-0.3, 0.1], [0.5, 0.6], [0.1, -0.2]], dtype=torch.float64,
                     requires_grad=True)
    total = 0
    for b in range(3):
        h = torch.tanh(e * (b + 1) @ w)
        total = total + (h * h).sum()
    (ge,) = torch.autograd.grad(total, e, create_graph=True)
    (gw,) = torch.autograd.grad((ge * ge).sum(), w)
    np.testing.assert_allclose(g, ge.detach().numpy(), rtol=1e-13)
    np.testing.assert_allclose(g2, gw.numpy(), rtol=1e-12)


def test_a_loop_from_another_start_is_taped_by_a_copy_with_the_same_gradient():
    """The tape's row is the loop's index, so a loop counting from 3 keeps the copy that
    counts its rows from 0 (a float32 index past 2**24 stays exact in it)."""
    at0 = goat.run_source(_rnn(0))
    at3 = goat.check_source(_rnn(3))
    assert len(_loops(at3)) == 3
    for a, b in zip(at0, goat.execute(at3)):
        np.testing.assert_array_equal(a, b)


def test_two_grads_of_one_loop_share_its_tapes():
    text = _rnn(0).replace("let gw, gb = grad(loss(w, b), w, b)\nprint gw\nprint gb",
                           "let l = loss(w, b)\nprint grad(l, w)\nprint grad(l, b)")
    assert text != _rnn(0)
    program = goat.check_source(text)
    forward = _loops(program)[0]
    assert len(_ops(forward.value, "stack_set")) == 2
    gw, gb = goat.execute(program)
    both = goat.run_source(_rnn(0))
    np.testing.assert_array_equal(gw, both[0])
    np.testing.assert_array_equal(gb, both[1])


def test_a_loop_that_prints_prints_once_an_iteration():
    text = ("var w = [[0.5]]\nvar h = [[1]]\nfor t in 0..3 {\n    h = tanh(h @ w)\n"
            "    print \"t {t}: {h[0, 0]:.6f}\"\n}\nprint grad(sum(h), w)\n")
    out = goat.run_source(text)
    h, lines = 1.0, []
    for t in range(3):
        h = np.tanh(h * 0.5)
        lines.append("t %d: %.6f" % (t, h))
    assert out[:3] == lines
    np.testing.assert_allclose(out[3], [[_numeric(lambda w: _h3(w), np.array([0.5]))[0]]],
                               rtol=1e-8)


def _h3(w):
    h = 1.0
    for _ in range(3):
        h = np.tanh(h * w[0])
    return h


LSTM = """let D = 2
let H = 3
let N = 2
let x = randn(tensor[4, N, D], 7)
def loss(w: tensor[D + H, 4 * H], b: tensor[1, 4 * H]) {
    var h = zeros(tensor[N, H])
    var c = zeros(tensor[N, H])
    for t in 0..4 {
        let gates = concat(x[t], h, 1) @ w + b
        let i, f, g, o = split(gates, 4, -1)
        c = sigmoid(f) * c + sigmoid(i) * tanh(g)
        h = sigmoid(o) * tanh(c)
    }
    return sum(h * h) + mean(c)
}
let w0 = randn(tensor[D + H, 4 * H], 1) * 0.5
let b0 = randn(tensor[1, 4 * H], 2) * 0.5
print x
print w0
print b0
let gw, gb = grad(loss(w0, b0), w0, b0)
print gw
print gb
"""


def _lstm_loss(x, w, b):
    sig = lambda v: 1 / (1 + np.exp(-v))            # noqa: E731
    h = np.zeros((2, 3))
    c = np.zeros((2, 3))
    for t in range(4):
        gates = np.concatenate([x[t], h], 1) @ w + b
        i, f, g, o = np.split(gates, 4, -1)
        c = sig(f) * c + sig(i) * np.tanh(g)
        h = sig(o) * np.tanh(c)
    return float(np.sum(h * h) + np.mean(c))


def test_an_lstm_cell_s_gradient_joins_its_gates_cotangents():
    """split's four parts' cotangents are joined (concat), not each put among zeros and added;
    the gradient is the derivative."""
    program = goat.check_source(LSTM)
    backward = _loops(program)[1]
    assert _ops(backward.value, "narrow_backward") == []
    x, w, b, gw, gb = goat.execute(program)
    np.testing.assert_allclose(gw, _numeric(lambda v: _lstm_loss(x, v, b), w), rtol=1e-6,
                               atol=1e-9)
    np.testing.assert_allclose(gb, _numeric(lambda v: _lstm_loss(x, w, v), b), rtol=1e-6,
                               atol=1e-9)


def test_an_lstm_cell_s_gradient_is_pytorch_s():
    torch = pytest.importorskip("torch")
    x, w, b, gw, gb = goat.run_source(LSTM)
    tw = torch.tensor(w, dtype=torch.float64, requires_grad=True)
    tb = torch.tensor(b, dtype=torch.float64, requires_grad=True)
    tx = torch.tensor(x, dtype=torch.float64)
    h = torch.zeros(2, 3, dtype=torch.float64)
    c = torch.zeros(2, 3, dtype=torch.float64)
    for t in range(4):
        i, f, g, o = (torch.cat([tx[t], h], 1) @ tw + tb).chunk(4, -1)
        c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
        h = torch.sigmoid(o) * torch.tanh(c)
    (torch.sum(h * h) + torch.mean(c)).backward()
    np.testing.assert_allclose(gw, tw.grad.numpy(), rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(gb, tb.grad.numpy(), rtol=1e-12, atol=1e-15)


def test_a_concat_s_gradient_is_its_parts_joined():
    text = ("let a = [[1, 2], [3, 4]]\nlet b = [[5], [6]]\n"
            "let ga, gb = grad(sum(concat(a, b, 1) * [[1, -2, 3]]), a, b)\nprint ga\nprint gb\n")
    program = goat.check_source(text)
    assert not [n for n in program.walk() if n.kind == OP and n.op.name == "narrow_backward"]
    ga, gb = goat.execute(program)
    np.testing.assert_array_equal(ga, [[1, -2], [1, -2]])
    np.testing.assert_array_equal(gb, [[3], [3]])


def test_parts_that_do_not_tile_the_axis_are_put_among_zeros():
    text = ("let x = [[1, 2, 3, 4, 5, 6]]\n"
            "print grad(sum(x[:, 0:2] * 2) + sum(x[:, 4:6] * 3), x)\n"
            "print grad(sum(x[:, 1:3] * 2) + sum(x[:, 3:5] * 3), x)\n")
    gap, middle = goat.run_source(text)
    np.testing.assert_array_equal(gap, [[2, 2, 0, 0, 3, 3]])
    np.testing.assert_array_equal(middle, [[0, 2, 2, 3, 3, 0]])


def test_a_tape_is_written_again_in_place_once_nothing_holds_it():
    """A new array's pages fault at their first write (ten times slower than writing into one
    already touched): a tape nothing holds any more is given again."""
    from goat.gpu import get_backend
    from goat.ops.builtins import _stack_new
    run = _stack_new(get_backend("numpy", 1, "f64"), 4, 0)
    like = np.zeros((2, 3))
    first = run(4.0, like)
    assert first.shape == (4, 2, 3) and not first.any()
    first_id = id(first)
    del first
    again = run(4.0, like)
    assert id(again) == first_id
    held = again
    other = run(4.0, like)
    assert other is not held and other.shape == (4, 2, 3)
    assert run(5.0, like).shape == (5, 2, 3)


def test_the_tapes_of_a_run_s_loops_are_given_again_not_each_kept():
    """Found by a breaker: each tape node kept its last array after its grad was done, so a
    program with three grads through three loops held three loops' tapes (435 MB where one's
    186 MB had done): the back end keeps the tapes nothing holds, for any tape of that shape,
    and no more than 256 MiB of them."""
    from goat.gpu import get_backend
    from goat.ops import builtins
    be = get_backend("numpy", 1, "f64")
    first, second = builtins._stack_new(be, 4, 0), builtins._stack_new(be, 4, 1)
    like = np.zeros((2, 3))
    a = first(4.0, like)
    kept = id(a)
    del a
    assert id(second(4.0, like)) == kept           # another loop's tape, once free
    rows = 100 * 2 ** 20 // 48                       # tapes of 100 MiB (zeros: not touched)
    for k in range(5):
        t = first(float(rows + k), like)            # five loops' tapes, of five shapes
        last = t.nbytes
        del t
        assert sum(x.nbytes for x in be.tapes) <= builtins._SPARE_TAPE_BYTES + last
    assert len(be.tapes) <= 3


def test_a_training_loop_s_losses_are_the_same_with_its_tapes_given_again():
    """Each step's grad reuses the tapes of the step before; the losses are those of NumPy's
    own BPTT (hand-written here)."""
    text = ("var w = [[0.5, -0.2], [0.3, 0.4]]\nlet x = [[1, 0.5]]\n"
            "for step in 0..4 {\n    var h = x\n    for t in 0..3 {\n        h = tanh(h @ w)\n"
            "    }\n    let l = sum(h)\n    print \"{l:.17g}\"\n    w = w - 0.1 * grad(l, w)\n}\n")
    got = [float(v) for v in goat.run_source(text)]
    w = np.array([[0.5, -0.2], [0.3, 0.4]])
    want = []
    for _ in range(4):
        hs = [np.array([[1.0, 0.5]])]
        for _ in range(3):
            hs.append(np.tanh(hs[-1] @ w))
        want.append(float(np.sum(hs[-1])))
        g, gw = np.ones((1, 2)), np.zeros((2, 2))
        for t in range(3, 0, -1):
            g = g * (1 - hs[t] ** 2)
            gw += hs[t - 1].T @ g
            g = g @ w.T
        w = w - 0.1 * gw
    np.testing.assert_allclose(got, want, rtol=1e-14)


def test_the_compiled_lstm_computes_the_interpreter_s_bits(tmp_path):
    pytest.importorskip("llvmlite")
    outs = []
    for extra in ([], ["--aot"]):
        folder = tmp_path / ("aot" if extra else "run")
        folder.mkdir()
        (folder / "l.mg").write_text(LSTM + 'save(gw, "gw.npy")\nsave(gb, "gb.npy")\n')
        env = dict(os.environ, GOAT_CACHE=str(tmp_path / "cache"))
        r = subprocess.run([sys.executable, "-m", "goat", "run"] + extra + ["l.mg"],
                           cwd=str(folder), env=env, capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        outs.append((r.stdout, np.load(folder / "gw.npy"), np.load(folder / "gb.npy")))
    assert outs[0][0] == outs[1][0]
    np.testing.assert_array_equal(outs[0][1], outs[1][1])
    np.testing.assert_array_equal(outs[0][2], outs[1][2])


def test_a_params_member_read_in_a_loop_is_taken_once_before_it():
    """p.w in a loop's body (a narrow of p, checked again when it runs) was copied out of p at
    every step, and its gradient put into a vector of p's size and added at every backward
    step; its check is sure to pass, so it is computed once before the loop, and the
    gradient's parts are joined once after it."""
    text = ("params p {\n    w = [[0.5, -0.2, 0.1, 0.3], [0.2, 0.4, -0.1, 0.0], "
            "[0.1, 0.1, 0.2, -0.3], [0.0, 0.3, 0.1, 0.2]]\n    b = [[0.1, 0.0, -0.1, 0.2]]\n}\n"
            "def f(q: p) {\n    var h = [[1, 0.5, -0.5, 0.25]]\n    for t in 0..3 {\n"
            "        h = tanh(h @ q.w + q.b)\n    }\n    return sum(h)\n}\n"
            "print grad(f(p), p)\n")
    program = goat.check_source(text)
    for loop in _loops(program):
        assert _ops(loop.value, "narrow") == [] and _ops(loop.value, "narrow_backward") == []
    every = [n for n in program.walk() if n.kind == OP and n.op.name == "narrow_backward"]
    assert every == []
    (g,) = goat.execute(program)
    w = np.array([[0.5, -0.2, 0.1, 0.3], [0.2, 0.4, -0.1, 0.0], [0.1, 0.1, 0.2, -0.3],
                  [0.0, 0.3, 0.1, 0.2]])
    b = np.array([[0.1, 0.0, -0.1, 0.2]])

    def f(flat):
        ww, bb = flat[:16].reshape(4, 4), flat[16:].reshape(1, 4)
        h = np.array([[1, 0.5, -0.5, 0.25]])
        for _ in range(3):
            h = np.tanh(h @ ww + bb)
        return float(np.sum(h))
    flat = np.concatenate([w.ravel(), b.ravel()])
    np.testing.assert_allclose(g, _numeric(f, flat), rtol=1e-7, atol=1e-10)


R1 = """let w = [[0.5, 0.1, 0.2, -0.3], [0.1, 0.4, -0.6, 0.2], [-0.2, 0.3, 0.5, -0.1], [0.3, 0.0, 0.1, 0.2]]
let b = [[0.1, -0.2, 0.05, 0.0]]
var h = [[1, -1, 0.5, 0.25], [0.3, 0.2, -0.1, 0.4]]
for t in 0..3 {
    h = tanh(h @ w + b)
}
let l = sum(h * h)
"""


def test_a_tape_a_first_grad_did_not_read_is_there_for_the_second():
    """Found by a breaker: grad(l, b) needs no starting value of h (its product was kept),
    so its prune took the tape's node away, and grad(l, w) after it read a tape never
    computed (an internal error)."""
    b_first = goat.run_source(R1 + "print grad(l, b)\nprint grad(l, w)\n")
    w_first = goat.run_source(R1 + "print grad(l, w)\nprint grad(l, b)\n")
    np.testing.assert_array_equal(b_first[0], w_first[1])
    np.testing.assert_array_equal(b_first[1], w_first[0])
    w = np.array([[0.5, 0.1, 0.2, -0.3], [0.1, 0.4, -0.6, 0.2], [-0.2, 0.3, 0.5, -0.1],
                  [0.3, 0.0, 0.1, 0.2]])
    b = np.array([[0.1, -0.2, 0.05, 0.0]])

    def loss(w, b):
        h = np.array([[1, -1, 0.5, 0.25], [0.3, 0.2, -0.1, 0.4]])
        for _ in range(3):
            h = np.tanh(h @ w + b)
        return float(np.sum(h * h))
    np.testing.assert_allclose(b_first[1], _numeric(lambda v: loss(v, b), w), rtol=1e-7,
                               atol=1e-10)


def test_split_s_gradient_keeps_a_negative_zero_as_pytorch_s_does():
    """Joined by concat, each cell is its own part's cotangent (no 0 + -0 = 0), as PyTorch's
    split backward (a cat) gives; two slices of the same value add, there as here."""
    text = ("let x = [[1, 2, 3, 4]]\nlet p, q = split(x, 2, -1)\n"
            "print grad(sum(p * [[-0.0, 1]]) - sum(q * [[0, 3]]), x)\n"
            "print grad(sum(x[:, 0:2] * [[-0.0, 1]]) - sum(x[:, 2:4] * [[0, 3]]), x)\n")
    joined, added = goat.run_source(text)
    assert list(np.signbit(joined[0])) == [True, False, True, True]
    assert list(np.signbit(added[0])) == [False, False, False, True]
