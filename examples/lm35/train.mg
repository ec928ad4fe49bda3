# Chapter 35's language model, trained as a loop: 200 steps of gradient descent through the
# book's hand-derived backward pass.  Same model, data and starting weights as train_200.mg
# (the 14,529-line unrolled program), so it prints the same numbers.  The data and weights are
# in data/, written by make_lm35.py.
import nn

# ---- the data: 16 sequences of 7 tokens, stacked into 112 rows
let x: tensor[112x4] = load("data/x.npy")          # one-hot tokens
let y: tensor[112x4] = load("data/y.npy")          # one-hot next tokens; zero on unscored rows
let mr: tensor[112x1] = load("data/mr.npy")        # 1 on the 64 scored rows
let ps: tensor[112x8] = load("data/ps.npy")        # sinusoidal position vectors

# row r may look at column c when both are in the same 7-row sequence and c <= r
let row = iota(tensor[112x112], 0)
let col = iota(tensor[112x112], 1)
let mk = ((row - row % 7 == col - col % 7) * (col <= row) - 1) * 1000000000

# ---- the 16 weight matrices (648 numbers), as train_200.mg starts them
var e: tensor[4x8] = load("data/init_e.npy")       # token embedding
var g1: tensor[1x8] = load("data/init_g1.npy")     # layer norm 1: gain, shift
var n1: tensor[1x8] = load("data/init_n1.npy")
var wq: tensor[8x8] = load("data/init_wq.npy")     # attention: queries, keys, values, output
var wk: tensor[8x8] = load("data/init_wk.npy")
var wv: tensor[8x8] = load("data/init_wv.npy")
var wo: tensor[8x8] = load("data/init_wo.npy")
var g2: tensor[1x8] = load("data/init_g2.npy")     # layer norm 2
var n2: tensor[1x8] = load("data/init_n2.npy")
var w1: tensor[8x16] = load("data/init_w1.npy")    # feed-forward
var c1: tensor[1x16] = load("data/init_c1.npy")
var w2: tensor[16x8] = load("data/init_w2.npy")
var c2: tensor[1x8] = load("data/init_c2.npy")
var gf: tensor[1x8] = load("data/init_gf.npy")     # final layer norm
var nf: tensor[1x8] = load("data/init_nf.npy")
var wu: tensor[8x4] = load("data/init_wu.npy")     # projection to the 4 tokens

# ---- the forward pass: every quantity the backward pass needs, the scores lg last
def forward(x: tensor[112x4], e: tensor[4x8], g1: tensor[1x8], n1: tensor[1x8],
            wq: tensor[8x8], wk: tensor[8x8], wv: tensor[8x8], wo: tensor[8x8],
            g2: tensor[1x8], n2: tensor[1x8], w1: tensor[8x16], c1: tensor[1x16],
            w2: tensor[16x8], c2: tensor[1x8], gf: tensor[1x8], nf: tensor[1x8],
            wu: tensor[8x4]) {
    let x0 = x @ e + ps
    let u1 = nn.layer_norm(x0, g1, n1)
    let q = u1 @ wq
    let k = u1 @ wk
    let v = u1 @ wv
    let a = nn.softmax_rows(q @ transpose(k) * 0.35355339059327373 + mk)
    let o = a @ v
    let x1 = x0 + o @ wo
    let u2 = nn.layer_norm(x1, g2, n2)
    let pre = u2 @ w1 + c1
    let r = relu(pre)
    let x2 = x1 + (r @ w2 + c2)
    let uf = nn.layer_norm(x2, gf, nf)
    return x0, u1, q, k, v, a, o, x1, u2, pre, r, x2, uf, uf @ wu
}

# ---- the backward pass, derived by hand as in the book: the gradient of the loss for each
# of the 16 matrices, in their order
def backward(x: tensor[112x4], y: tensor[112x4], e: tensor[4x8], g1: tensor[1x8],
             n1: tensor[1x8], wq: tensor[8x8], wk: tensor[8x8], wv: tensor[8x8],
             wo: tensor[8x8], g2: tensor[1x8], n2: tensor[1x8], w1: tensor[8x16],
             c1: tensor[1x16], w2: tensor[16x8], c2: tensor[1x8], gf: tensor[1x8],
             nf: tensor[1x8], wu: tensor[8x4]) {
    let x0, u1, q, k, v, a, o, x1, u2, pre, r, x2, uf, lg = forward(
        x, e, g1, n1, wq, wk, wv, wo, g2, n2, w1, c1, w2, c2, gf, nf, wu)
    let dl = (exp(nn.log_softmax(lg)) * mr - y) * 0.015625     # 1/64: the scored rows
    let duf = dl @ transpose(wu)
    let dx2 = nn.layer_norm_back(duf, x2, gf)
    let dpre = (dx2 @ transpose(w2)) * ge(pre, [[0]])         # through the ReLU
    let du2 = dpre @ transpose(w1)
    let dx1 = dx2 + nn.layer_norm_back(du2, x1, g2)           # residual paths add
    let do = dx1 @ transpose(wo)
    let dv = transpose(a) @ do
    let ds = nn.softmax_rows_back(a, do @ transpose(v))      # the mask needs no extra term
    let dq = ds @ k * 0.35355339059327373
    let dk = transpose(ds) @ q * 0.35355339059327373
    let du1 = dq @ transpose(wq) + dk @ transpose(wk) + dv @ transpose(wv)
    let dx0 = dx1 + nn.layer_norm_back(du1, x0, g1)
    return (transpose(x) @ dx0, col_sum(du1 * nn.ln_hat(x0)), col_sum(du1),
            transpose(u1) @ dq, transpose(u1) @ dk, transpose(u1) @ dv, transpose(o) @ dx1,
            col_sum(du2 * nn.ln_hat(x1)), col_sum(du2), transpose(u2) @ dpre, col_sum(dpre),
            transpose(r) @ dx2, col_sum(dx2), col_sum(duf * nn.ln_hat(x2)), col_sum(duf),
            transpose(uf) @ dl)
}

def logits(x: tensor[112x4], e: tensor[4x8], g1: tensor[1x8], n1: tensor[1x8],
           wq: tensor[8x8], wk: tensor[8x8], wv: tensor[8x8], wo: tensor[8x8],
           g2: tensor[1x8], n2: tensor[1x8], w1: tensor[8x16], c1: tensor[1x16],
           w2: tensor[16x8], c2: tensor[1x8], gf: tensor[1x8], nf: tensor[1x8],
           wu: tensor[8x4]) {
    let _, _, _, _, _, _, _, _, _, _, _, _, _, lg = forward(
        x, e, g1, n1, wq, wk, wv, wo, g2, n2, w1, c1, w2, c2, gf, nf, wu)
    return lg
}

# the mean of -log p(next token) over the 64 scored rows, and how many of them are right
def loss(lg: tensor[112x4], y: tensor[112x4]) = col_sum(row_sum(y * nn.log_softmax(lg))) * -0.015625
def correct(lg: tensor[112x4], y: tensor[112x4]) = col_sum(row_sum(ge(lg, row_max(lg)) * y))

# ---- training: 200 steps of gradient descent, learning rate 1 (goat run --let steps=20 ...)
let lr = 1.0
let steps = 200
for step in 0..steps {
    let Ge, Gg1, Gn1, Gwq, Gwk, Gwv, Gwo, Gg2, Gn2, Gw1, Gc1, Gw2, Gc2, Ggf, Gnf, Gwu = backward(
        x, y, e, g1, n1, wq, wk, wv, wo, g2, n2, w1, c1, w2, c2, gf, nf, wu)
    if step == 0 or step == 1 or step == 10 or step == 25 or step == 50 or step == 100 or step == 150 {
        let lg = logits(x, e, g1, n1, wq, wk, wv, wo, g2, n2, w1, c1, w2, c2, gf, nf, wu)
        print "step {step}: loss {loss(lg, y)}, {correct(lg, y)} of 64 correct"
    }
    e -= Ge * lr
    g1 -= Gg1 * lr
    n1 -= Gn1 * lr
    wq -= Gwq * lr
    wk -= Gwk * lr
    wv -= Gwv * lr
    wo -= Gwo * lr
    g2 -= Gg2 * lr
    n2 -= Gn2 * lr
    w1 -= Gw1 * lr
    c1 -= Gc1 * lr
    w2 -= Gw2 * lr
    c2 -= Gc2 * lr
    gf -= Ggf * lr
    nf -= Gnf * lr
    wu -= Gwu * lr
}

# ---- the trained weights, for generate.mg
save(e, "trained/e.npy")
save(g1, "trained/g1.npy")
save(n1, "trained/n1.npy")
save(wq, "trained/wq.npy")
save(wk, "trained/wk.npy")
save(wv, "trained/wv.npy")
save(wo, "trained/wo.npy")
save(g2, "trained/g2.npy")
save(n2, "trained/n2.npy")
save(w1, "trained/w1.npy")
save(c1, "trained/c1.npy")
save(w2, "trained/w2.npy")
save(c2, "trained/c2.npy")
save(gf, "trained/gf.npy")
save(nf, "trained/nf.npy")
save(wu, "trained/wu.npy")

# ---- the trained model
let lg = logits(x, e, g1, n1, wq, wk, wv, wo, g2, n2, w1, c1, w2, c2, gf, nf, wu)
print "step {steps}: loss {loss(lg, y)}, {correct(lg, y)} of 64 correct"

# on the 16 held-out sequences, and on all 64 sequences (in 4 batches by first token)
let held_x: tensor[112x4] = load("data/held_x.npy")
let held_y: tensor[112x4] = load("data/held_y.npy")
let lg_held = logits(held_x, e, g1, n1, wq, wk, wv, wo, g2, n2, w1, c1, w2, c2, gf, nf, wu)
print "held out: loss {loss(lg_held, held_y)}, {correct(lg_held, held_y)} of 64 correct"
let all0_x: tensor[112x4] = load("data/all0_x.npy")
let all0_y: tensor[112x4] = load("data/all0_y.npy")
let all1_x: tensor[112x4] = load("data/all1_x.npy")
let all1_y: tensor[112x4] = load("data/all1_y.npy")
let all2_x: tensor[112x4] = load("data/all2_x.npy")
let all2_y: tensor[112x4] = load("data/all2_y.npy")
let all3_x: tensor[112x4] = load("data/all3_x.npy")
let all3_y: tensor[112x4] = load("data/all3_y.npy")
let c_0 = correct(logits(all0_x, e, g1, n1, wq, wk, wv, wo, g2, n2, w1, c1, w2, c2, gf, nf, wu), all0_y)
let c_1 = correct(logits(all1_x, e, g1, n1, wq, wk, wv, wo, g2, n2, w1, c1, w2, c2, gf, nf, wu), all1_y)
let c_2 = correct(logits(all2_x, e, g1, n1, wq, wk, wv, wo, g2, n2, w1, c1, w2, c2, gf, nf, wu), all2_y)
let c_3 = correct(logits(all3_x, e, g1, n1, wq, wk, wv, wo, g2, n2, w1, c1, w2, c2, gf, nf, wu), all3_y)
print "all 64 sequences, by first token: {c_0} {c_1} {c_2} {c_3} (of 64 each)"

# where the first training sequence (2 2 2 2 2 2 2) looks: row i is position i asking
let sel: tensor[7x112] = load("data/sel.npy")
let _, _, _, _, _, a, _, _, _, _, _, _, _, _ = forward(
    x, e, g1, n1, wq, wk, wv, wo, g2, n2, w1, c1, w2, c2, gf, nf, wu)
print "attention of the first training sequence:"
print sel @ a @ transpose(sel)
