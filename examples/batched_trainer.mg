# A batched two-block transformer trainer, every mechanism a line you can point at: a batch of
# two sequences of three tokens, the embedding lookup, pre-norm blocks (RMS norm, causal
# attention batched through reshape, dropout, a GELU MLP), a head tied to the embedding,
# cross-entropy against class targets, gradient clipping, and AdamW under a cosine schedule.
# grad finds all eighteen gradients.  Three steps; run it with: goat run examples/batched_trainer.mg
import nn
import optim

# ---- the batch: 2 sequences x 3 tokens, one token per row (the 2x3 batch read row by row),
# and each token's target, the token after it
let tokens = [[1], [2], [3], [2], [3], [4]]
let targets = [[2], [3], [4], [3], [4], [0]]
let mask = nn.causal_mask(zeros(tensor[3x3]))      # a position sees itself and those before

# ---- one pre-norm block: per token, x is a 6x4 matrix; only the attention scores need the
# batch's 2x3x4 shape, and reshape reads the same cells that way
def block(x: tensor[6x4], g1: tensor[1x4], wq: tensor[4x4], wk: tensor[4x4], wv: tensor[4x4],
          wo: tensor[4x4], g2: tensor[1x4], w1: tensor[4x8], w2: tensor[8x4], seed: scalar) {
    let a = nn.rms_norm(x, g1)
    let q3: tensor[2x3x4] = reshape(a @ wq)
    let k3: tensor[2x3x4] = reshape(a @ wk)
    let v3: tensor[2x3x4] = reshape(a @ wv)
    let sc = q3 @ transpose(k3) * 0.5 + mask        # 2x3x3; 0.5 = 1/sqrt(4), exactly
    let p = nn.dropout(nn.softmax_rows(sc), 0.1, seed)  # softmax per row: six rows of three
    let o: tensor[6x4] = reshape(p @ v3)
    let x1 = x + o @ wo
    return x1 + nn.gelu(nn.rms_norm(x1, g2) @ w1) @ w2
}

# the loss of the whole model; the dropout masks are fresh each step (their seeds use it)
def loss(e: tensor[5x4],
         g1a: tensor[1x4], wqa: tensor[4x4], wka: tensor[4x4], wva: tensor[4x4],
         woa: tensor[4x4], g2a: tensor[1x4], w1a: tensor[4x8], w2a: tensor[8x4],
         g1b: tensor[1x4], wqb: tensor[4x4], wkb: tensor[4x4], wvb: tensor[4x4],
         wob: tensor[4x4], g2b: tensor[1x4], w1b: tensor[4x8], w2b: tensor[8x4],
         gf: tensor[1x4], step: scalar) {
    let x0 = gather(e, tokens)                      # 6x4: each token's embedding row
    let x1 = block(x0, g1a, wqa, wka, wva, woa, g2a, w1a, w2a, step * 10 + 1)
    let x2 = block(x1, g1b, wqb, wkb, wvb, wob, g2b, w1b, w2b, step * 10 + 2)
    let logits = nn.rms_norm(x2, gf) @ transpose(e) # 6x5: the head is the embedding, tied
    return nn.cross_entropy(logits, targets)
}

# one parameter's update: its gradient clipped to norm 1, then AdamW (weight decay 0.0625)
def update(w: tensor[R, C], g: tensor[R, C], m: tensor[R, C], v: tensor[R, C], t: scalar,
           lr: scalar) {
    let clipped, n = optim.clip_grad_norm(g, 1)
    let w2, m2, v2 = optim.adamw(w, clipped, m, v, t, lr, 0.9, 0.999, 1e-08, 0.0625)
    return (w2, m2, v2, n)
}

# ---- the weights: seeded normal draws (the same bits on every machine), gains 1
var e = randn(tensor[5x4], 1) * 0.5
var g1a = ones(tensor[1x4]); var wqa = randn(tensor[4x4], 2) * 0.5; var wka = randn(tensor[4x4], 3) * 0.5
var wva = randn(tensor[4x4], 4) * 0.5; var woa = randn(tensor[4x4], 5) * 0.5
var g2a = ones(tensor[1x4]); var w1a = randn(tensor[4x8], 6) * 0.5; var w2a = randn(tensor[8x4], 7) * 0.5
var g1b = ones(tensor[1x4]); var wqb = randn(tensor[4x4], 8) * 0.5; var wkb = randn(tensor[4x4], 9) * 0.5
var wvb = randn(tensor[4x4], 10) * 0.5; var wob = randn(tensor[4x4], 11) * 0.5
var g2b = ones(tensor[1x4]); var w1b = randn(tensor[4x8], 12) * 0.5; var w2b = randn(tensor[8x4], 13) * 0.5
var gf = ones(tensor[1x4])

# AdamW's moments, one pair per weight
var m_e = zeros(tensor[5x4]); var v_e = zeros(tensor[5x4])
var m_g1a = zeros(tensor[1x4]); var v_g1a = zeros(tensor[1x4])
var m_wqa = zeros(tensor[4x4]); var v_wqa = zeros(tensor[4x4])
var m_wka = zeros(tensor[4x4]); var v_wka = zeros(tensor[4x4])
var m_wva = zeros(tensor[4x4]); var v_wva = zeros(tensor[4x4])
var m_woa = zeros(tensor[4x4]); var v_woa = zeros(tensor[4x4])
var m_g2a = zeros(tensor[1x4]); var v_g2a = zeros(tensor[1x4])
var m_w1a = zeros(tensor[4x8]); var v_w1a = zeros(tensor[4x8])
var m_w2a = zeros(tensor[8x4]); var v_w2a = zeros(tensor[8x4])
var m_g1b = zeros(tensor[1x4]); var v_g1b = zeros(tensor[1x4])
var m_wqb = zeros(tensor[4x4]); var v_wqb = zeros(tensor[4x4])
var m_wkb = zeros(tensor[4x4]); var v_wkb = zeros(tensor[4x4])
var m_wvb = zeros(tensor[4x4]); var v_wvb = zeros(tensor[4x4])
var m_wob = zeros(tensor[4x4]); var v_wob = zeros(tensor[4x4])
var m_g2b = zeros(tensor[1x4]); var v_g2b = zeros(tensor[1x4])
var m_w1b = zeros(tensor[4x8]); var v_w1b = zeros(tensor[4x8])
var m_w2b = zeros(tensor[8x4]); var v_w2b = zeros(tensor[8x4])
var m_gf = zeros(tensor[1x4]); var v_gf = zeros(tensor[1x4])

# ---- three steps: the schedule's learning rate a, the embedding gradient's norm n before
# clipping, and the loss
for step in 0..3 {
    let l = loss(e, g1a, wqa, wka, wva, woa, g2a, w1a, w2a, g1b, wqb, wkb, wvb, wob, g2b, w1b, w2b, gf, step)
    let Ge, Gg1a, Gwqa, Gwka, Gwva, Gwoa, Gg2a, Gw1a, Gw2a, Gg1b, Gwqb, Gwkb, Gwvb, Gwob, Gg2b, Gw1b, Gw2b, Ggf = grad(
        l, e, g1a, wqa, wka, wva, woa, g2a, w1a, w2a, g1b, wqb, wkb, wvb, wob, g2b, w1b, w2b, gf)
    let a = optim.cosine_lr(step, 0, 3, 0.0625)
    let t = step + 1
    var n = [[0]]
    e, m_e, v_e, n = update(e, Ge, m_e, v_e, t, a)
    g1a, m_g1a, v_g1a, _ = update(g1a, Gg1a, m_g1a, v_g1a, t, a)
    wqa, m_wqa, v_wqa, _ = update(wqa, Gwqa, m_wqa, v_wqa, t, a)
    wka, m_wka, v_wka, _ = update(wka, Gwka, m_wka, v_wka, t, a)
    wva, m_wva, v_wva, _ = update(wva, Gwva, m_wva, v_wva, t, a)
    woa, m_woa, v_woa, _ = update(woa, Gwoa, m_woa, v_woa, t, a)
    g2a, m_g2a, v_g2a, _ = update(g2a, Gg2a, m_g2a, v_g2a, t, a)
    w1a, m_w1a, v_w1a, _ = update(w1a, Gw1a, m_w1a, v_w1a, t, a)
    w2a, m_w2a, v_w2a, _ = update(w2a, Gw2a, m_w2a, v_w2a, t, a)
    g1b, m_g1b, v_g1b, _ = update(g1b, Gg1b, m_g1b, v_g1b, t, a)
    wqb, m_wqb, v_wqb, _ = update(wqb, Gwqb, m_wqb, v_wqb, t, a)
    wkb, m_wkb, v_wkb, _ = update(wkb, Gwkb, m_wkb, v_wkb, t, a)
    wvb, m_wvb, v_wvb, _ = update(wvb, Gwvb, m_wvb, v_wvb, t, a)
    wob, m_wob, v_wob, _ = update(wob, Gwob, m_wob, v_wob, t, a)
    g2b, m_g2b, v_g2b, _ = update(g2b, Gg2b, m_g2b, v_g2b, t, a)
    w1b, m_w1b, v_w1b, _ = update(w1b, Gw1b, m_w1b, v_w1b, t, a)
    w2b, m_w2b, v_w2b, _ = update(w2b, Gw2b, m_w2b, v_w2b, t, a)
    gf, m_gf, v_gf, _ = update(gf, Ggf, m_gf, v_gf, t, a)
    print "step {t}: a = {a:.6f} n = {n:.6f} loss = {l:.6f}"
}

# a few trained weights: the first embedding row's first two values, block 1's first query
# weight, and its first gain
print "e0 = {e[0, 0]:.6f} {e[0, 1]:.6f} wq0 = {wqa[0, 0]:.6f} g1 = {g1a[0, 0]:.6f}"
