"""params blocks (docs/language.md, "Many parameters, one optimizer"): a model's parameters
as one var, member after member, read and written as ``theta.w1``, with one grad, one
clip_grad_norm and one adamw for all of them -- against NumPy written here, finite differences
and (when installed) PyTorch's AdamW over the separate tensors."""

import importlib.util

import numpy as np
import pytest

import goat

from conftest import compiled_numbers, error, run, run_error_in

_LAYOUT = """params theta {
    w1 = [[1, 2, 3], [4, 5, 6]]
    b1: tensor[1x3] = [[7, 8, 9]]
    s = 10
    w2 = [11, 12]
}
print theta
print theta.w1
print theta.b1
print theta.s
print theta.w2
print size(theta, 0)
"""


def test_members_are_laid_out_one_after_another_row_major_and_read_in_their_shapes():
    flat, w1, b1, s, w2, n = run(_LAYOUT)
    want = np.concatenate([np.array([[1, 2, 3], [4, 5, 6]]).ravel(), [7, 8, 9], [10], [11, 12]])
    assert np.array_equal(flat, want) and flat.shape == (12,)
    assert np.array_equal(w1, [[1, 2, 3], [4, 5, 6]]) and w1.shape == (2, 3)
    assert np.array_equal(b1, [[7, 8, 9]]) and b1.shape == (1, 3)
    assert s.shape == () and s == 10
    assert np.array_equal(w2, [11, 12]) and w2.shape == (2,)
    assert n == 12


def test_member_writes_replace_only_their_cells():
    src = """params p {
    a = [[1, 2], [3, 4]]
    b = [5, 6, 7]
    c = 8
}
p.b = [60, 70, 80]
print p
p.a[1, 0] = 30
print p
p.a += 100
print p
p.c = [[9]]
print p
var m = 0
p.b, m = (p.b * 2, 5)
print p
"""
    a, b, c, d, e = run(src)
    assert np.array_equal(a, [1, 2, 3, 4, 60, 70, 80, 8])
    assert np.array_equal(b, [1, 2, 30, 4, 60, 70, 80, 8])
    assert np.array_equal(c, [101, 102, 130, 104, 60, 70, 80, 8])
    assert np.array_equal(d, [101, 102, 130, 104, 60, 70, 80, 9])
    assert np.array_equal(e, [101, 102, 130, 104, 120, 140, 160, 9])


def test_member_writes_in_a_loop_carry_the_params_var():
    src = """params p {
    w = zeros(tensor[3])
    k = 0
}
for i in 0..4 {
    p.w[i % 3] += i + 1
    p.k += 1
}
print p
"""
    (got,) = run(src)
    assert np.array_equal(got, [1 + 4, 2, 3, 4])


def _mlp_numpy(theta, x, y):
    """The loss of the docs' MLP and its gradient, by hand: NumPy, not goat."""
    w1, b1, w2 = theta[:24].reshape(3, 8), theta[24:32].reshape(1, 8), theta[32:].reshape(8, 1)
    h = np.tanh(x @ w1 + b1)
    e = h @ w2 - y
    loss = np.mean(e * e)
    de = 2 * e / e.size
    gw2 = h.T @ de
    dh = de @ w2.T * (1 - h * h)
    return loss, np.concatenate([(x.T @ dh).ravel(), dh.sum(0), gw2.ravel()])


# the MLP of docs/language.md's params section: its model, data and first weights
_MLP_MODEL = """import optim
params theta {
    w1 = randn(tensor[3x8], 2) * 0.5
    b1 = zeros(tensor[1x8])
    w2 = randn(tensor[8x1], 3) * 0.3
}
def mlp(p: theta, x: tensor[N, 3]) = tanh(x @ p.w1 + p.b1) @ p.w2
def loss(p: theta, x: tensor[N, 3], y: tensor[N, 1]) = mean((mlp(p, x) - y) * (mlp(p, x) - y))
let x = randn(tensor[64x3], 1)
let y = row_sum(x * x) / 3
"""

_MLP = _MLP_MODEL + """var m = zeros(theta)
var v = zeros(theta)
print x
print theta
let g0 = grad(loss(theta, x, y), theta)
print g0
print g0.w2
for step in 0..STEPS {
    let g, norm = optim.clip_grad_norm(grad(loss(theta, x, y), theta), 1)
    theta, m, v = optim.adamw(theta, g, m, v, step + 1, 0.02, 0.9, 0.999, 1e-08, 0.01)
    print "{loss(theta, x, y):.17g} {norm:.17g}"
}
print m.b1
"""


def test_one_grad_of_a_params_value_is_every_members_gradient():
    x, theta0, g0, g0w2, *_ = run(_MLP.replace("STEPS", "0"))
    y = (x * x).sum(axis=1, keepdims=True) / 3
    _, want = _mlp_numpy(theta0, x, y)
    assert np.allclose(g0, want, rtol=1e-12, atol=1e-15)
    assert g0w2.shape == (8, 1) and np.allclose(g0w2.ravel(), want[32:], rtol=1e-12)


def test_params_training_takes_adamws_steps_written_in_numpy():
    steps = 20
    x, theta0, _, _, *lines, mb1 = run(_MLP.replace("STEPS", str(steps)))
    y = (x * x).sum(axis=1, keepdims=True) / 3
    theta, m, v = theta0.copy(), np.zeros(40), np.zeros(40)
    for t in range(1, steps + 1):       # AdamW (Loshchilov & Hutter), PyTorch's form
        _, g = _mlp_numpy(theta, x, y)
        norm = np.sqrt(np.sum(g * g))
        g = g * min(1.0, 1 / (norm + 1e-6))
        theta = theta * (1 - 0.02 * 0.01)
        m = 0.9 * m + 0.1 * g
        v = 0.999 * v + 0.001 * g * g
        mhat, vhat = m / (1 - 0.9 ** t), v / (1 - 0.999 ** t)
        theta = theta - 0.02 * mhat / (np.sqrt(vhat) + 1e-8)
        got_loss, got_norm = (float(s) for s in lines[t - 1].split())
        assert abs(got_loss - _mlp_numpy(theta, x, y)[0]) <= 1e-10
        assert abs(got_norm - norm) <= 1e-12 * norm
    assert mb1.shape == (1, 8) and np.allclose(mb1.ravel(), m[24:32], rtol=1e-9, atol=1e-15)


def test_params_training_matches_pytorchs_adamw_over_separate_tensors():
    from test_flat_parameters import assert_steps_match, torch_mlp_steps
    torch = pytest.importorskip("torch")
    x0, theta0, _, _, *lines, _ = run(_MLP.replace("STEPS", "30"))
    assert_steps_match(lines, torch_mlp_steps(torch, x0, theta0, 30))


_STACKED = """import nn
let L = 3
params net {
    wq = randn(tensor[L, 4, 4], 1) * 0.5
    g = 1 + 0.1 * randn(tensor[L, 1, 4], 2)
}
def block(x: tensor[N, 4], wq: tensor[4x4], g: tensor[1x4]) = x + tanh(nn.rms_norm(x, g) @ wq)
def loss(p: net, x: tensor[N, 4]) {
    var h = x
    for l in 0..L {
        h = block(h, p.wq[l], p.g[l])
    }
    return mean(h * h)
}
let x = randn(tensor[5x4], 3)
print x
print net
print loss(net, x)
print grad(loss(net, x), net)
"""


def _stacked_numpy(theta, x):
    wq, g = theta[:48].reshape(3, 4, 4), theta[48:].reshape(3, 1, 4)
    h = x
    for layer in range(3):
        n = h / np.sqrt(np.mean(h * h, axis=1, keepdims=True) + 1e-5) * g[layer]
        h = h + np.tanh(n @ wq[layer])
    return np.mean(h * h)


def test_stacked_layers_in_one_member_read_per_layer_in_a_loop_against_finite_differences():
    x, theta, loss, g = run(_STACKED)
    assert theta.shape == (60,) and g.shape == (60,)
    assert abs(loss - _stacked_numpy(theta, x)) <= 1e-13
    eps = 1e-6
    for k in range(60):
        d = np.zeros(60)
        d[k] = eps
        fd = (_stacked_numpy(theta + d, x) - _stacked_numpy(theta - d, x)) / (2 * eps)
        assert abs(g[k] - fd) <= 1e-7 * max(1.0, abs(fd)), k


def test_params_compiled_print_the_same_numbers(tmp_path):
    pytest.importorskip("llvmlite")
    (tmp_path / "p.mg").write_text(_STACKED + _LAYOUT.replace("theta", "q") +
                                   "q.w1[0, 1] = 20\nq.s += 1\nprint q\n")
    want = [np.ravel(v).tolist() for v in goat.run_source((tmp_path / "p.mg").read_text())]
    assert compiled_numbers(tmp_path) == want


def test_a_grad_let_and_a_fill_of_the_block_take_its_layout():
    src = """params p {
    a = [[1, 2], [3, 4]]
    b = [5, 6]
}
let g = grad(sum(p.a * p.a) + sum(p.b), p)
print g.a
print g.b
let r = [1, 2]
let h, k = grad(sum(p.a) * 2 + sum(r * r), p, r)
print h.a
var z = ones(p)
z.b = [0, 0]
print z
let q: p = z * 3
print q.a
"""
    ga, gb, ha, z, qa = run(src)
    assert np.array_equal(ga, [[2, 4], [6, 8]]) and np.array_equal(gb, [1, 1])
    assert np.array_equal(ha, [[2, 2], [2, 2]])
    assert np.array_equal(z, [1, 1, 1, 1, 0, 0])
    assert np.array_equal(qa, [[3, 3], [3, 3]])


def test_check_shapes_shows_the_members_and_the_def_parameter_as_the_block(tmp_path):
    from conftest import cli
    (tmp_path / "m.mg").write_text(_MLP.replace("STEPS", "1"))
    status, out, err = cli("check", "--shapes", str(tmp_path / "m.mg"))
    assert status == 0, err
    assert "params theta : tensor[40]\n  theta.w1 : tensor[3x8]\n  theta.b1 : tensor[1x8]\n" \
           "  theta.w2 : tensor[8x1]\n" in out
    assert "def mlp(p: theta, x: tensor[N, 3]) -> tensor[N, 1]" in out


@pytest.mark.parametrize("src, line, words", [
    ("params t {\n  w = ones(tensor[2x2])\n}\nprint t.w3\n", 4,
     "t has no member 'w3' (did you mean 'w'?); its members: w tensor[2x2]"),
    ("params t {\n  wq = ones(tensor[2x2])\n}\nprint t.wqq\n", 4, "did you mean 'wq'?"),
    ("params t {\n  w = ones(tensor[2x2])\n}\nt.w = ones(tensor[3])\n", 4,
     "t.w is tensor[2x2], but this value has shape 3"),
    ("for i in 0..2 {\n  params t {\n    w = ones(tensor[2x2])\n  }\n}\n", 2,
     "params must be at the top level of the program"),
    ("def f(x: tensor[2]) {\n  params t {\n    w = x\n  }\n  return x\n}\n", 2,
     "params must be at the top level of the program"),
    ("params t {\n  let a = 3\n}\n", 2, "a params block holds its members, one per line"),
    ("params t {\n  w = ones(tensor[2x2])\n  w = ones(tensor[2])\n}\n", 3,
     "t has a member 'w' already"),
    ("params t {\n}\n", 1, "params t has no members"),
    ("params t {\n  w: tensor[2x3] = ones(tensor[2x2])\n}\n", 2,
     "'t.w' is declared tensor[2x3], but its value has shape 2x2"),
    ("params t {\n  w = ones(tensor[2x2])\n}\nprint t.w.x\n", 4,
     "'t.w' is tensor[2x2], not a params block's value: it has no members"),
    ("params t {\n  w = ones(tensor[2x2])\n}\nlet g = grad(sum(t.w), t.w)\n", 4,
     "grad differentiates with respect to a whole params value: let g: t = grad(loss, t)"),
    ("params t {\n  w = ones(tensor[2x2])\n}\ndef f(p: t) {\n  p.w = 3\n  return p\n}\n", 5,
     "cannot assign to 'p': it is a parameter"),
    ("def f(p: q) = p\nparams q {\n  w = ones(tensor[2])\n}\n", 1,
     "'q' is a params block defined later, on line 2"),
    ("let x: int = 3\n", 1, "unknown type 'int': a type is tensor[...]"),
    ("let y = 2\nlet x: y = 3\n", 2, "'y' is a let, not a params block, so it is no type"),
    ("params theta {\n  w = ones(tensor[2])\n}\ndef f(p: thetaa) = p\n", 4,
     "did you mean 'theta'?"),
    ("x: tensor[3] = 5\n", 1, "a new name needs let or var: let x: tensor[3] = ..."),
    ("params t {\n  w = ones(tensor[2])\n}\ndef f(p: t) = p.w\nprint f(ones(tensor[3]))\n", 5,
     "argument p of f must have shape 2, got 3 (the vector of params block t's members: "
     "w tensor[2])"),
])
def test_params_errors_say_what_to_write(src, line, words):
    e = error(src)
    assert words in e.message, e.message
    assert e.loc.line == line


def test_a_params_block_error_in_the_command_line_is_one_line_status_1(tmp_path):
    first, out = run_error_in(tmp_path, "params t {\n  w = ones(tensor[2])\n}\nprint t.v\n",
                              aot=False)
    assert first == "p.mg:4: error: t has no member 'v'; its members: w tensor[2]"
    assert out == ""


_MODEL_MODULE = """# a linear model: its parameters and its loss
params theta {
    w = [[0.5], [-1]]
    b = [[0.25]]
}
def predict(p: theta, x: tensor[N, 2]) = x @ p.w + p.b
def loss(p: theta, x: tensor[N, 2], y: tensor[N, 1]) = mean((predict(p, x) - y) * (predict(p, x) - y))
def halved(p: theta) -> theta = p * 0.5
"""


def test_a_module_may_hold_a_params_block_which_a_program_trains_in_a_var_of_its_own(tmp_path):
    """The model in a module (its params block, its defs) and the training in the program:
    var theta = model.theta takes the block's first value and its layout; the steps match
    gradient descent on the mean squared error written in NumPy."""
    (tmp_path / "model.mg").write_text(_MODEL_MODULE)
    src = """import model
let x = [[1, 2], [3, -1], [0.5, 0.5], [-2, 1]]
let y = [[1], [0], [2], [-1]]
var theta = model.theta
var m = zeros(model.theta)
for step in 0..3 {
    let g = grad(model.loss(theta, x, y), theta)
    theta = theta - 0.1 * g
}
print theta.w
print theta.b
print model.theta.w
def first(p: model.theta) = p.w[0]
print first(theta)
let h = model.halved(theta)
print h.b
"""
    src = src.replace("var m = zeros(model.theta)", "var m = zeros(theta)\nlet one = ones(m)")
    w, b, w0, first, hb = run(src, str(tmp_path / "p.mg"))
    x = np.array([[1, 2], [3, -1], [0.5, 0.5], [-2, 1]], dtype=float)
    y = np.array([[1], [0], [2], [-1]], dtype=float)
    ww, bb = np.array([[0.5], [-1]]), np.array([[0.25]])
    for _ in range(3):
        e = x @ ww + bb - y
        ww, bb = ww - 0.1 * (2 * x.T @ e / 4), bb - 0.1 * (2 * e.sum() / 4)
    assert np.allclose(w, ww, rtol=1e-14, atol=1e-15) and np.allclose(b, bb, rtol=1e-14)
    assert w0.tolist() == [[0.5], [-1]]             # the module's own value is unchanged
    assert np.allclose(first, ww[0]) and np.allclose(hb, bb * 0.5)
    checked = goat.check_source(src, path=str(tmp_path / "p.mg"))
    assert checked.params["model.theta"]["b"] == (2, (1, 1))
    # zeros(theta) of a var laid out as the module's block fills that layout (m.b reads)
    (mb,) = run(src.split("for step")[0] + "print m.b + one.b\n", str(tmp_path / "p.mg"))
    assert mb.tolist() == [[1]]
    (tmp_path / "p.mg").write_text(src)
    if importlib.util.find_spec("llvmlite") is not None:
        assert compiled_numbers(tmp_path) == [np.asarray(a).ravel().tolist() for a in
                                              (w, b, w0, first, hb)]


@pytest.mark.parametrize("src, words", [
    ("let x = [[1, 2]]\nlet y = [[1]]\nvar theta = model.theta\nfor s in 0..2 {\n"
     "  let g = grad(model.loss(theta, x, y), model.theta)\n  theta = theta - 0.1 * g\n}\n",
     "the loss does not depend on 'model.theta', so its gradient would be zero everywhere: a "
     "module's value is not what a var taken from it holds (var theta = model.theta): name the "
     "value the loss reads, grad(loss, theta)"),
    ("model.theta = zeros(model.theta)\n",
     "cannot assign to 'model.theta': a module's names cannot change; to train the module's "
     "params block, take its first value in a var of the program: var theta = model.theta"),
    ("model.theta.w = [[1], [2]]\n", "cannot assign to 'model.theta.w'"),
    ("print model.theta.ww\n", "model.theta has no member 'ww' (did you mean 'w'?)"),
    ("def f(p: model.thta) = p\n", "unknown type 'model.thta'"),
])
def test_a_modules_params_block_is_read_not_assigned(tmp_path, src, words):
    (tmp_path / "model.mg").write_text(_MODEL_MODULE)
    first, _ = run_error_in(tmp_path, "import model\n" + src, aot=False)
    assert words in first, first


def test_the_repl_completes_a_params_blocks_members_and_shows_their_shapes():
    import io
    from prompt_toolkit.completion import CompleteEvent
    from prompt_toolkit.document import Document

    from goat.repl.app import GoatCompleter
    from goat.repl.session import Session
    s = Session(out=io.StringIO())
    s.run("params theta {\n  w1 = ones(tensor[2x3])\n  b1 = [1, 2, 3]\n}\nvar m = zeros(theta)")
    got = {x.text: x.display_meta_text for x in GoatCompleter(s).get_completions(
        Document("print theta."), CompleteEvent(completion_requested=True))}
    assert got == {"w1": "tensor[2x3]", "b1": "tensor[3]"}
    got = {x.text: x.display_meta_text for x in GoatCompleter(s).get_completions(
        Document("print m.w"), CompleteEvent(completion_requested=True))}
    assert got == {"w1": "tensor[2x3]"}
    assert ("theta", "params tensor[9] (w1 tensor[2x3], b1 tensor[3])") in s.names()
    assert ("m", "var tensor[9] (theta)") in s.names()
    results = s.run("theta.b1 = theta.b1 * 10\ntheta")
    assert results[0].name == "theta.b1" and results[0].shape == (3,)
    assert np.array_equal(results[1].value, [1, 1, 1, 1, 1, 1, 10, 20, 30])


def test_a_member_may_be_another_params_blocks_value_read_and_written_through_both_names():
    src = """params block {
    wq = [[1, 2], [3, 4]]
    g = [5, 6]
}
params model {
    e = [7, 8]
    a = block
    b: block = block * 10
}
def f(p: block) = sum(p.wq * p.wq) + sum(p.g)
print model
print model.a.wq
print f(model.b)
model.b.g = [0, 1]
print model
let gr = grad(f(model.a) * 2 + f(model.b), model)
print gr
print gr.b.wq
"""
    first, awq, fb, after, gr, grbwq = run(src)
    blk = np.array([1, 2, 3, 4, 5, 6])
    assert np.array_equal(first, np.concatenate([[7, 8], blk, blk * 10]))
    assert np.array_equal(awq, [[1, 2], [3, 4]])
    assert fb == 100 + 400 + 900 + 1600 + 50 + 60
    assert np.array_equal(after, np.concatenate([[7, 8], blk, [10, 20, 30, 40, 0, 1]]))
    # d/dwq sum(wq * wq) = 2 wq; d/dg sum(g) = 1; block a's counted twice
    want = np.concatenate([[0, 0], 2 * 2 * blk[:4], [2, 2], 2 * np.array([10, 20, 30, 40]),
                           [1, 1]])
    assert np.array_equal(gr, want)
    assert np.array_equal(grbwq, [[20, 40], [60, 80]])


def test_a_checked_programs_params_give_each_members_offset_and_shape_to_take_a_saved_vector_apart(
        tmp_path):
    src = """params block {
    wq = [[1, 2], [3, 4]]
    g = [5, 6]
}
params model {
    e = [[7, 8, 9]]
    a = block
}
save(model, "model.npy")
"""
    (tmp_path / "m.mg").write_text(src)
    program = goat.check_file(str(tmp_path / "m.mg"))
    assert program.params["block"] == {"wq": (0, (2, 2)), "g": (4, (2,))}
    assert program.params["model"] == {"e": (0, (1, 3)), "a": (3, (6,)), "a.wq": (3, (2, 2)),
                                       "a.g": (7, (2,))}
    goat.execute(program)
    saved = np.load(str(tmp_path / "model.npy"))
    offset, shape = program.params["model"]["a.wq"]
    part = saved[offset:offset + int(np.prod(shape))].reshape(shape)
    assert np.array_equal(part, [[1, 2], [3, 4]])


@pytest.mark.parametrize("src, words", [
    ('params theta {\n  w = ones(tensor[2x2])\n}\nsave(theta, "theta.npz")\n',
     'save writes one array as a NumPy .npy file, not a npz file: name it theta.npy (a params '
     'block is one vector: save its members one by one, save(theta.NAME, "NAME.npy"), or the '
     'whole, whose members\' offsets and shapes goat.check_file(...).params["theta"] gives)'),
    ('let x = [1]\nsave(x, "out/x.pt")\n',
     "save writes one array as a NumPy .npy file, not a pt file: name it x.npy"),
    ("params p {\n  wte = ones(tensor[2x2])\n}\nprint p.wte.T\n",
     "'p.wte' is tensor[2x2], not a params block's value: it has no members; goat has no "
     "methods: write transpose(p.wte)"),
    ("params p {\n  wte = ones(tensor[2x2])\n}\nprint p.sum\n",
     "p has no member 'sum'; goat has no methods: write sum(p)"),
])
def test_habits_from_python_with_params_say_what_goat_writes(src, words):
    e = error(src)
    assert words in e.message, e.message


def test_params_stays_a_name_where_no_block_begins():
    a, b = run("let params = 3\nvar p2 = params * 2\nprint p2\ndef g(params: scalar) = "
               "params + 1\nprint g(params)\nparams theta {\n  params = [1, 2]\n}\n")[:2]
    assert a == 6 and b == 4


@pytest.mark.parametrize("src, line, words", [
    # a breaker's findings: a tuple whose targets overlap (the later write had won, silently)
    ("params p {\n  a = [1, 2]\n  b = [3, 4]\n}\np.b, p = ([7, 7], p * 10)\n", 5,
     "'p.b' and 'p' are both assigned here, and p holds p.b's cells"),
    ("params p {\n  a = [1, 2]\n}\nvar m = 0\np, m, p.a = (p, 1, [0, 0])\n", 5,
     "'p' and 'p.a' are both assigned here, and p holds p.a's cells"),
    # a member of a value with no layout: not "a module's names cannot change"
    ("var a = [1, 2]\na.w = [3, 4]\n", 2,
     "'a' is tensor[2], not a params block's value: it has no member 'w'"),
    ("params p {\n  w = [1, 2]\n}\nvar b, c = ([0, 0], 0)\nb.w = [3, 4]\n", 5,
     "it has no member 'w'; to read it by p's members, give it that layout: var b: p = ..."),
    ("import optim\nparams p {\n  w = [[1, 2], [3, 4]]\n}\n"
     "let g = reshape(p.w * 2, tensor[4])\nprint g.w\n", 6,
     "'g' is tensor[4], not a params block's value: it has no member 'w'; to read it by p's "
     "members, name it with that layout: let g_: p = g, then g_.w"),
    ("params theta {\n  w = [1, 2]\n}\nthetaa.w = [3, 4]\n", 4,
     "unknown name 'thetaa' (in thetaa.w); did you mean 'theta'?"),
    ("params theta {\n  w = [1, 2]\n}\nprint thetaa.w\n", 4,
     "unknown name 'thetaa' (in thetaa.w); did you mean 'theta'?"),
    ("params p {\n  w = [1, 2]\n  x = p.w * 2\n}\n", 3,
     "p is the params block being written: a member's first value cannot read its members"),
    ("params p {\n  w = [1, 2, 3]\n}\nvar m = zeros(tensor[p])\n", 4,
     "p is a params block, not a size: its shape is written p (zeros(p), def f(x: p)), "
     "tensor[3] as sizes"),
    ("params p {\n  w = [1, 2, 3]\n  b = 1\n}\nprint p.ww\n", 5,
     "p has no member 'ww' (did you mean 'w'?); its members: w tensor[3], b scalar"),
    ("params p {\n  for = [1, 2]\n}\n", 2, "'for' is a reserved word, not a name"),
    ("params p\n{\n  w = [1, 2]\n}\n", 2,
     "a block's '{' goes at the end of its header's line (params p {)"),
])
def test_params_mistakes_found_by_a_breaker_say_what_to_write(src, line, words):
    e = error(src)
    assert words in e.message, e.message
    assert e.loc.line == line


@pytest.mark.parametrize("src", [
    "params p {\n  a = foo(3)\n  b = [1, 2]\n}\ndef f(q: p) = q.b\np.b = [3, 4]\nprint zz\n",
    "params p {\n  w = [1, 2\n  b = 3\n}\nprint p.b\nprint zz\n",
    "params p {\n  w: tensor[2]\n}\nprint p.w\nprint zz\n",
])
def test_a_params_block_that_fails_is_one_error_and_its_uses_none(tmp_path, src):
    (tmp_path / "p.mg").write_text(src)
    from conftest import cli
    status, out, err = cli("check", str(tmp_path / "p.mg"))
    lines = [line for line in err.splitlines() if ": error: " in line]
    assert status == 1 and len(lines) == 2, err
    assert ":2: error:" in lines[0] and "unknown name 'zz'" in lines[1]


def test_a_def_may_return_a_params_value_and_its_let_reads_members():
    src = """params p {
  w = [1, 2]
  b = 3
}
def step(q: p, g: p) -> p = q - 0.5 * g
let r = step(p, p)
print r.b
def two(q: p) -> (p, scalar) {
  return (q * 2, q.b)
}
let a, c = two(p)
print a.w
print c
"""
    rb, aw, c = run(src)
    assert rb == 1.5 and np.array_equal(aw, [2, 4]) and c == 3


def test_the_repl_names_the_layout_a_def_was_checked_with_after_the_block_is_redefined():
    import io

    from goat.repl.session import Session
    s = Session(out=io.StringIO())
    s.run("params p {\n  w = [1, 2, 3]\n  b = 5\n}\ndef f(q: p) = q.b * 2\n"
          "params p {\n  z = 1\n}")
    with pytest.raises(goat.GoatError) as info:
        s.run("print f(p)")
    assert info.value.message == ("argument q of f must have shape 4, got 1 (the vector of "
                                  "params block p's members: w tensor[3], b scalar)")


def test_a_block_may_be_named_params_and_a_def_shows_a_block_it_returns_by_name(tmp_path):
    (got,) = run("params params {\n  w = [1, 2]\n}\nprint params.w\n")
    assert np.array_equal(got, [1, 2])
    from conftest import cli
    (tmp_path / "r.mg").write_text("params p {\n  w = [1, 2]\n  b = 3\n}\n"
                                   "def step(q: p, g: p) -> p = q - 0.5 * g\n"
                                   "def two(q: p) -> (p, scalar) {\n  return (q * 2, q.b)\n}\n")
    status, out, err = cli("check", "--shapes", str(tmp_path / "r.mg"))
    assert status == 0, err
    assert "def step(q: p, g: p) -> p\n" in out and "def two(q: p) -> (p, scalar)\n" in out


def test_the_repls_type_of_a_laid_out_name_lists_its_members():
    import io

    from goat.repl.session import Session
    s = Session(out=io.StringIO())
    s.run("params theta {\n  w = ones(tensor[2x2])\n  b = [1, 2]\n}\nvar m = zeros(theta)")
    assert s.describe("m") == "m : tensor[6], laid out as params theta: w tensor[2x2], b tensor[2]"
    assert s.describe("theta.w") == "tensor[2x2]"
    # an expression's layout, as goat check --shapes shows a let's
    s.run("let l = sum(theta.w * theta.w)")
    assert s.describe("grad(l, theta)") == "tensor[6] (theta)"
    assert s.describe("let g = theta - 0.1 * grad(l, theta)") == "g : tensor[6] (theta)"
    assert s.describe("let g: theta = m") == "g : tensor[6] (theta)"
    assert s.describe("theta[0:6]") == "tensor[6]"


def test_a_fill_of_a_values_shape_says_the_type_to_write():
    e = error("params theta {\n  w = ones(tensor[2x2])\n}\nlet o = ones(theta.w)\n")
    assert e.message.endswith("got a value; write ones(tensor[2x2]) for the shape of theta.w")


@pytest.mark.parametrize("src, end", [
    # a breaker's: a let holding a size is a vector's length, as NumPy's zeros(3); onehot's
    # type is its second argument, a count
    ("let N = 3\nlet o = zeros(N)\n", "got a value; write zeros(tensor[N])"),
    ("let x = [[1], [2]]\nprint onehot(x, x)\n", "got a value; write onehot(..., tensor[2x3])"),
])
def test_a_fill_given_a_number_or_onehot_a_value_says_what_to_write(src, end):
    assert error(src).message.endswith(end)


_MASKED = _MLP_MODEL + """var decay = zeros(theta)
decay.w1 = 1
decay.w2 = 1
var m = zeros(theta)
var v = zeros(theta)
print x
print theta
for step in 0..20 {
    let g = grad(loss(theta, x, y), theta)
    theta, m, v = optim.adamw_masked(theta, g, m, v, decay, step + 1, 0.05, wd=0.5)
    print theta
}
"""


def test_adamw_masked_decays_only_the_masked_members_as_pytorchs_parameter_groups():
    x0, theta0, *thetas = run(_MASKED)
    y = (x0 * x0).sum(axis=1, keepdims=True) / 3
    theta, m, v = theta0.copy(), np.zeros(40), np.zeros(40)
    mask = np.r_[np.ones(24), np.zeros(8), np.ones(8)]
    for t, got in enumerate(thetas, 1):           # AdamW in NumPy, the decay where masked
        _, g = _mlp_numpy(theta, x0, y)
        theta = theta * (1 - 0.05 * 0.5 * mask)
        m = 0.9 * m + 0.1 * g
        v = 0.999 * v + 0.001 * g * g
        theta = theta - 0.05 * (m / (1 - 0.9 ** t)) / (np.sqrt(v / (1 - 0.999 ** t)) + 1e-8)
        assert np.allclose(got, theta, rtol=1e-10, atol=1e-13)
    torch = pytest.importorskip("torch")
    w1 = torch.tensor(theta0[:24].reshape(3, 8), requires_grad=True)
    b1 = torch.tensor(theta0[24:32].reshape(1, 8), requires_grad=True)
    w2 = torch.tensor(theta0[32:].reshape(8, 1), requires_grad=True)
    opt = torch.optim.AdamW([{"params": [w1, w2], "weight_decay": 0.5},
                             {"params": [b1], "weight_decay": 0.0}], lr=0.05)
    xt, yt = torch.tensor(x0), torch.tensor(y)
    for got in thetas:
        opt.zero_grad()
        e = torch.tanh(xt @ w1 + b1) @ w2 - yt
        (e * e).mean().backward()
        opt.step()
        want = torch.cat([w1.detach().ravel(), b1.detach().ravel(), w2.detach().ravel()])
        assert np.allclose(got, want.numpy(), rtol=1e-12, atol=1e-15)


def test_a_tuple_let_may_annotate_its_names_and_a_params_type_lays_one_out():
    src = """import optim
params p {
  w = [[1, 2], [3, 4]]
  b = [1, 1]
}
let g: p, n = optim.clip_grad_norm(grad(sum(p.w * p.w) + sum(p.b), p), 100)
print g.w
var a: tensor[2], c = ([1, 2], 3)
print a
"""
    gw, a = run(src)
    assert np.array_equal(gw, [[2, 4], [6, 8]]) and np.array_equal(a, [1, 2])
    e = error("let x: tensor[3], y = ([1, 2], 3)\n")
    assert e.message == "'x' is declared tensor[3], but its value has shape 2"


def test_a_layout_flows_through_what_a_value_is_made_of_when_its_shape_is_the_blocks():
    """A let with no annotation takes the layout of the laid-out values its expression is made
    of (grad's, a def's result, an elementwise sum), when its value is the block's vector and
    they agree -- the values checked against NumPy's own clipping and AdamW step."""
    src = """import optim
params p {
  w = [[1, 2], [3, 4]]
  b = [0.5, -1]
}
params q {
  v = [1, 2, 3, 4, 5, 6]
}
let g, n = optim.clip_grad_norm(grad(sum(p.w * p.w) + sum(p.b), p), 1)
print g.w
let u = p - 0.1 * g
print u.b
let w2, m2, v2 = optim.adamw(p, g, zeros(p), zeros(p), 1, lr=0.01)
print w2.w
print m2.b
let e = -exp(p) * 1
print e.b
"""
    gw, ub, w2w, m2b, eb = run(src)
    w, b = np.array([[1.0, 2], [3, 4]]), np.array([0.5, -1])
    full = np.concatenate([(2 * w).ravel(), np.ones(2)])
    gfull = full * min(1.0, 1.0 / (np.sqrt((full * full).sum()) + 1e-06))
    assert np.allclose(gw, gfull[:4].reshape(2, 2), rtol=1e-14, atol=0)
    assert np.allclose(ub, b - 0.1 * gfull[4:], rtol=1e-14, atol=0)
    m, v = 0.1 * gfull, 0.001 * gfull * gfull
    step = 0.01 * (m / 0.1) / (np.sqrt(v / 0.001) + 1e-08)
    wfull = np.concatenate([w.ravel(), b]) * (1 - 0.01 * 0.01) - step
    assert np.allclose(w2w, wfull[:4].reshape(2, 2), rtol=1e-14, atol=0)
    assert np.allclose(m2b, m[4:], rtol=1e-14, atol=0)
    assert np.allclose(eb, -np.exp(b), rtol=1e-14, atol=0)
    # values laid out as two blocks of one length, or not the block's vector: no layout
    e = error(src.replace("print g.w", "let bad = p + q\nprint bad.w"))
    assert "'bad' is tensor[6], not a params block's value" in e.message
    e = error(src.replace("print g.w", "print n.w"))
    assert "'n' is tensor[1x1], not a params block's value" in e.message
    e = error(src.replace("print g.w", "let bad = p * 0 + q\nprint bad.v"))
    assert "to read it by q's members, name it with that layout" in e.message   # v is q's


def test_a_value_whose_shape_is_known_when_it_runs_fills_a_member_as_a_subscripts_cells(tmp_path):
    """p.w = x with x of shape ?x2 broadcasts to the member when it runs, as y[0:3] = x does
    (NumPy's assignment); a shape that does not broadcast stops there, naming the member."""
    src = """params p {
  w = [[1, 2], [3, 4], [5, 6]]
  b = [7, 8]
}
let x: tensor[?x2] = load("x.npy")
p.w = x
print p
p.w = x * 2
print p.w
"""
    path = str(tmp_path / "t.mg")
    np.save(tmp_path / "x.npy", np.array([[5.0, 6.0]]))
    whole, w = run(src, path)
    assert np.array_equal(whole, [5, 6, 5, 6, 5, 6, 7, 8])
    assert np.array_equal(w, [[10, 12]] * 3)
    np.save(tmp_path / "x.npy", np.array([[1.0, 2.0], [3.0, 4.0], [5.5, 6.5]]))
    whole, w = run(src, path)
    assert np.array_equal(whole, [1, 2, 3, 4, 5.5, 6.5, 7, 8])
    np.save(tmp_path / "x.npy", np.array([[1.0, 2.0], [3.0, 4.0]]))
    e = error(src, path)
    assert e.message == ("cannot assign a value of shape 2x2 to member p.w, of shape 3x2: the "
                         "value's shape must be that one, or broadcast to it")
    assert e.loc.line == 6


def test_a_value_with_a_size_known_when_it_runs_broadcasts_into_a_member_as_numpy_does(tmp_path):
    """A breaker's: p.w = x with x of shape ?x1 or ? (not only ?x2) broadcasts when it runs,
    as q.w[0:3] = x and NumPy's assignment do."""
    src = """params p {
  w = zeros(tensor[3x2])
  b = zeros(tensor[2])
}
var q = p
let x: tensor[?x1] = load("x31.npy")
q.w = x
print q
let z: tensor[?] = load("x1.npy")
q.w = z
print q
"""
    np.save(tmp_path / "x31.npy", np.array([[1.0], [2.0], [3.0]]))
    np.save(tmp_path / "x1.npy", np.array([9.0]))
    a, c = run(src, str(tmp_path / "t.mg"))
    want = np.zeros((3, 2))
    want[:] = np.array([[1.0], [2.0], [3.0]])
    assert np.array_equal(a, np.concatenate([want.ravel(), [0, 0]]))
    assert np.array_equal(c, [9, 9, 9, 9, 9, 9, 0, 0])
    np.save(tmp_path / "x31.npy", np.array([[1.0], [2.0]]))
    e = error(src, str(tmp_path / "t.mg"))
    assert e.message.startswith("cannot assign a value of shape 2x1 to member q.w, of shape 3x2")


@pytest.mark.parametrize("value, laid_out", [
    ("twice(theta)", True), ("zeros(theta) + 1", True), ("randn(theta, 1)", True),
    ("exp(theta) - stop_gradient(theta)", True),
    ("reshape(transpose(reshape(theta, tensor[3x2])), tensor[6])", False),
    ("rev(theta)", False), ("argsort(theta)", False), ("theta[[5, 4, 3, 2, 1, 0]]", False),
    ("concat(theta[2:6], theta[0:2], 0)", False),
])
def test_only_cell_by_cell_computations_keep_a_layout(value, laid_out):
    """A breaker's: a value whose cells moved (a reshape and transpose, a def that reverses
    them) read as the block's members; only elementwise computations keep the layout."""
    src = """params theta {
    w = [[1, 2], [3, 4]]
    b = [0.5, -0.5]
}
def rev(v: tensor[6]) = v[[5, 4, 3, 2, 1, 0]]
def twice(v: tensor[6]) = v * 2
let r = %s
print r.b
""" % value
    if laid_out:
        (rb,) = run(src)
        assert rb.shape == (2,)
    else:
        e = error(src)
        assert e.message.startswith("'r' is tensor[6], not a params block's value"), e.message


def test_a_modules_laid_out_lets_and_a_member_holding_a_modules_block_read_by_member(tmp_path):
    (tmp_path / "m2.mg").write_text("params theta {\n  w1 = [[1, 2]]\n  b = [3]\n}\n"
                                    "let t0 = theta * 0.5\nlet gz = zeros(theta)\n"
                                    "let g0 = grad(sum(theta * theta), theta)\n")
    src = """import m2
print m2.t0.w1
var x = m2.gz
print x.b
print m2.g0.w1
params big {
  inner = m2.theta
  extra = [7, 8]
}
print big.inner.b
"""
    t0w, xb, g0w, ib = run(src, str(tmp_path / "p.mg"))
    assert t0w.tolist() == [[0.5, 1]] and xb.tolist() == [0] and g0w.tolist() == [[2, 4]]
    assert ib.tolist() == [3]
    e = error("import m2\nparams theta {\n  q = [1, 2]\n}\ndef f(p: m2.theta) = p.b\n"
              "print f(theta)\n", str(tmp_path / "p.mg"))
    assert "(the vector of params block m2.theta's members" in e.message, e.message


@pytest.mark.parametrize("src, written", [
    ("params theta {\n  w = [[1, 2]]\n  b = [3]\n}\nprint zeros(theta * 2)\n", "zeros(theta)"),
    ("let x = [[1, 2, 3]]\nprint ones(x * 2)\n", "ones(tensor[1x3]) for the value's shape"),
])
def test_a_fill_given_an_expression_says_its_shape_or_its_layout(src, written):
    """A breaker's: zeros(theta * 2) suggested zeros(tensor[2x3]), a placeholder."""
    e = error(src)
    assert e.message.endswith("got a value; write " + written), e.message


def test_the_repl_shows_the_block_a_value_is_laid_out_as(tmp_path):
    """A newcomer's: the REPL showed `var m2 : tensor[9]` and `g : tensor[9]` where goat check
    --shapes and :type show the block, (theta); :env lists it too."""
    from conftest import cli
    src = ("params theta {\n    w: tensor[2, 3] = randn(tensor[2, 3], 1)\n"
           "    b: tensor[1, 3] = zeros(tensor[1, 3])\n}\nvar m2 = zeros(theta)\n"
           "let l = sum(theta.w * theta.w)\nlet g = grad(l, theta)\nlet h = theta * 2\n"
           "let k = [1, 2]\n:env\n")
    status, out, err = cli("repl", stdin=src.encode(), cwd=str(tmp_path))
    assert status == 0, err
    for line in ("var m2 : tensor[9] (theta)\n", "g : tensor[9] (theta)\n",
                 "h : tensor[9] (theta)\n", "k : tensor[2]\n", "l : scalar\n"):
        assert line in out, out
    (tmp_path / "p.mg").write_text(src.replace(":env\n", ""))
    status, shapes, err = cli("check", "--shapes", str(tmp_path / "p.mg"))
    for line in ("var m2 : tensor[9] (theta)\n", "g : tensor[9] (theta)\n"):
        assert line in shapes
    assert "m2" in out.split(":env")[-1] and "var tensor[9] (theta)" in out.split(":env")[-1]
