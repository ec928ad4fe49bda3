"""A model's parameters as one vector written by hand (the layout a params block makes: see
tests/test_params.py), each weight a slice of it, trained by one grad, one clip_grad_norm and
one adamw -- the same steps as PyTorch's AdamW and clip_grad_norm_ over the separate tensors;
and several attention heads split as PyTorch splits them (swapaxes), against PyTorch."""

import numpy as np
import pytest

import goat

_FLAT = """import optim
let W1 = 0
let B1 = W1 + 3 * 8
let W2 = B1 + 8
let P = W2 + 8
def mlp(theta: tensor[P], x: tensor[N, 3]) {
    let w1: tensor[3x8] = reshape(theta[W1:B1])
    let b1: tensor[1x8] = reshape(theta[B1:W2])
    let w2: tensor[8x1] = reshape(theta[W2:P])
    return tanh(x @ w1 + b1) @ w2
}
def loss(theta: tensor[P], x: tensor[N, 3], y: tensor[N, 1]) = mean((mlp(theta, x) - y) * (mlp(theta, x) - y))
let x = randn(tensor[64x3], 1)
let y = row_sum(x * x) / 3
var theta = concat(concat(randn(tensor[24], 2) * 0.5, zeros(tensor[8]), 0), randn(tensor[8], 3) * 0.3, 0)
var m = zeros(tensor[P])
var v = zeros(tensor[P])
print x
print theta
for step in 0..STEPS {
    let g, norm = optim.clip_grad_norm(grad(loss(theta, x, y), theta), 1)
    theta, m, v = optim.adamw(theta, g, m, v, step + 1, 0.02, 0.9, 0.999, 1e-08, 0.01)
    print "{loss(theta, x, y):.17g} {norm:.17g}"
}
"""


def torch_mlp_steps(torch, x0, theta0, steps):
    """The MLP (w1 3x8, b1 1x8, w2 8x1 from the vector theta0, inputs x0, targets the mean of
    x's squares) trained for ``steps`` steps by PyTorch's AdamW (lr 0.02, its defaults) after
    clip_grad_norm_ to 1 over the three tensors: each step's (loss after it, norm before the
    clip)."""
    x = torch.tensor(x0)
    y = (x * x).sum(dim=1, keepdim=True) / 3
    w1 = torch.tensor(theta0[:24].reshape(3, 8), requires_grad=True)
    b1 = torch.tensor(theta0[24:32].reshape(1, 8), requires_grad=True)
    w2 = torch.tensor(theta0[32:].reshape(8, 1), requires_grad=True)
    params = [w1, b1, w2]
    opt = torch.optim.AdamW(params, lr=0.02, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01)

    def loss():
        e = torch.tanh(x @ w1 + b1) @ w2 - y
        return (e * e).mean()
    want = []
    for _ in range(steps):
        opt.zero_grad()
        loss().backward()
        norm = torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        with torch.no_grad():
            want.append((loss().item(), norm.item()))
    return want


def assert_steps_match(lines, want):
    """Each printed line "loss norm" equals PyTorch's (loss, norm) to 1e-12, relatively."""
    got = [tuple(float(v) for v in line.split()) for line in lines]
    assert len(got) == len(want)
    for (gl, gn), (wl, wn) in zip(got, want):
        assert abs(gl - wl) <= 1e-12 * abs(wl) and abs(gn - wn) <= 1e-12 * abs(wn)


def test_a_flat_parameter_vector_trains_as_pytorchs_adamw_over_separate_tensors():
    torch = pytest.importorskip("torch")
    x0, theta0, *lines = goat.run_source(_FLAT.replace("STEPS", "30"))
    assert_steps_match(lines, torch_mlp_steps(torch, x0, theta0, 30))


_HEADS = """import nn
let x = randn(tensor[2x4x4], 1)
let wq = randn(tensor[4x4], 2) * 0.5
let wk = randn(tensor[4x4], 3) * 0.5
let wv = randn(tensor[4x4], 4) * 0.5
let wo = randn(tensor[4x4], 5) * 0.5
def heads(a: tensor[2x4x4]) = swapaxes(reshape(a, tensor[2x4x2x2]), 1, 2)
let o = nn.attention(heads(x @ wq), heads(x @ wk), heads(x @ wv), nn.causal_mask(zeros(tensor[4x4])), 0.7071067811865476)
let y: tensor[2x4x4] = reshape(swapaxes(o, 1, 2))
print x
print wq
print wk
print wv
print wo
print y @ wo
print grad(sum(tanh(y @ wo)), wq)
"""


def test_heads_split_with_swapaxes_are_pytorchs_multi_head_attention():
    torch = pytest.importorskip("torch")
    x, wq, wk, wv, wo, out, g = goat.run_source(_HEADS)
    t = {k: torch.tensor(v, requires_grad=(k == "wq")) for k, v in
         (("x", x), ("wq", wq), ("wk", wk), ("wv", wv), ("wo", wo))}

    def heads(a):
        return a.view(2, 4, 2, 2).transpose(1, 2)
    q, k, v = (heads(t["x"] @ t[w]) for w in ("wq", "wk", "wv"))
    mask = torch.triu(torch.full((4, 4), float("-inf"), dtype=torch.float64), diagonal=1)
    p = torch.softmax(q @ k.transpose(-1, -2) * 0.7071067811865476 + mask, dim=-1)
    y = (p @ v).transpose(1, 2).reshape(2, 4, 4) @ t["wo"]
    (tg,) = torch.autograd.grad(torch.tanh(y).sum(), t["wq"])
    assert np.allclose(out, y.detach().numpy(), rtol=1e-12, atol=1e-13)
    assert np.allclose(g, tg.numpy(), rtol=1e-11, atol=1e-13)
