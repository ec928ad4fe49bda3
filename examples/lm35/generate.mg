# Completions from the trained chapter model: give it the first three tokens of each held-out
# sequence, a b c, and let it write the other four, one token at a time, each drawn from the
# model's own probabilities (seeded categorical sampling).  A model that has learned the
# language writes a b c a b c a.  Run train.mg first: it saves the trained weights in trained/.
import nn

# the model's fixed parts, as in train.mg: position vectors and the 112x112 mask keeping each
# row inside its own 7-row sequence and away from later positions
let ps: tensor[112x8] = load("data/ps.npy")
let row = iota(tensor[112x112], 0)
let col = iota(tensor[112x112], 1)
let mk = ((row - row % 7 == col - col % 7) * (col <= row) - 1) * 1000000000

# the trained weights, as train.mg saved them
let e: tensor[4x8] = load("trained/e.npy")
let g1: tensor[1x8] = load("trained/g1.npy")
let n1: tensor[1x8] = load("trained/n1.npy")
let wq: tensor[8x8] = load("trained/wq.npy")
let wk: tensor[8x8] = load("trained/wk.npy")
let wv: tensor[8x8] = load("trained/wv.npy")
let wo: tensor[8x8] = load("trained/wo.npy")
let g2: tensor[1x8] = load("trained/g2.npy")
let n2: tensor[1x8] = load("trained/n2.npy")
let w1: tensor[8x16] = load("trained/w1.npy")
let c1: tensor[1x16] = load("trained/c1.npy")
let w2: tensor[16x8] = load("trained/w2.npy")
let c2: tensor[1x8] = load("trained/c2.npy")
let gf: tensor[1x8] = load("trained/gf.npy")
let nf: tensor[1x8] = load("trained/nf.npy")
let wu: tensor[8x4] = load("trained/wu.npy")

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

def logits(x: tensor[112x4], e: tensor[4x8], g1: tensor[1x8], n1: tensor[1x8],
           wq: tensor[8x8], wk: tensor[8x8], wv: tensor[8x8], wo: tensor[8x8],
           g2: tensor[1x8], n2: tensor[1x8], w1: tensor[8x16], c1: tensor[1x16],
           w2: tensor[16x8], c2: tensor[1x8], gf: tensor[1x8], nf: tensor[1x8],
           wu: tensor[8x4]) {
    let _, _, _, _, _, _, _, _, _, _, _, _, _, lg = forward(
        x, e, g1, n1, wq, wk, wv, wo, g2, n2, w1, c1, w2, c2, gf, nf, wu)
    return lg
}

# ---- the 16 held-out sequences, of which the model sees only the first three tokens
let held: tensor[112x4] = load("data/held_x.npy")     # one-hot tokens, 7 rows a sequence
let position = iota(tensor[112x1], 0) % 7
var x = held * (position < 3)                          # positions 3 to 6: blank rows
let shift = row == col + 1                             # row r + 1 takes what row r predicts

# position p is written from the prediction at position p - 1; the causal mask means the blank
# rows after it change nothing before it
for p in 3..7 {
    let lg = logits(x, e, g1, n1, wq, wk, wv, wo, g2, n2, w1, c1, w2, c2, gf, nf, wu)
    let drawn = onehot(sample_rows(nn.softmax_rows(lg), p), tensor[112x4])
    let here = position == p
    x = x * (1 - here) + (shift @ drawn) * here
}

# the sequences as token numbers, a row each, and how many continue their triple
let written: tensor[16x7] = reshape(argmax_rows(x))
print "prompts a b c, and what the model wrote after them:"
print written
let right: tensor[16x7] = reshape(argmax_rows(x) == argmax_rows(held))
print "{col_sum(row_min(right))} of 16 sequences written as a b c a b c a"
