# A small GPT, trained as PyTorch people write one: a character-level model of a line of text
# (12 characters, context 8, width 16, 2 heads, 2 pre-norm blocks with causal attention and a
# GELU MLP, the head tied to the embedding), cross-entropy, one params block for every weight
# (each block's weights stacked on a leading axis, read per layer in a loop), one grad, a
# global gradient clip, AdamW under a cosine schedule.  Run it: goat run examples/gpt.mg
import nn
import optim

# "the cat sat on the mat. a hen ate the hat. the rat ran to the hen. ", one id per character
# of ' .acehmnorst' (space 0, '.' 1, a 2, ...)
let text = [11, 5, 4, 0, 3, 2, 11, 0, 10, 2, 11, 0, 8, 7, 0, 11, 5, 4, 0, 6, 2, 11, 1, 0, 2, 0, 5, 4, 7, 0, 2, 11, 4, 0, 11, 5, 4, 0, 5, 2, 11, 1, 0, 11, 5, 4, 0, 9, 2, 11, 0, 9, 2, 7, 0, 11, 8, 0, 11, 5, 4, 0, 5, 4, 7, 1, 0]
let V = 12          # vocabulary
let T = 8           # context
let C = 16          # width
let H = 2           # heads, of width D
let D = 8
let L = 2           # blocks
let B = 4           # sequences a batch
let steps = 150

params gpt {
    wte = randn(tensor[V, C], 1) * 0.1          # token embedding, and the head (tied)
    wpe = randn(tensor[T, C], 2) * 0.1          # position embedding
    ln1g = ones(tensor[L, 1, C])
    ln1b = zeros(tensor[L, 1, C])
    wqkv = randn(tensor[L, C, 3 * C], 3) * 0.1  # query, key and value, side by side
    wo = randn(tensor[L, C, C], 4) * 0.1
    ln2g = ones(tensor[L, 1, C])
    ln2b = zeros(tensor[L, 1, C])
    w1 = randn(tensor[L, C, 4 * C], 5) * 0.1
    b1 = zeros(tensor[L, 1, 4 * C])
    w2 = randn(tensor[L, 4 * C, C], 6) * 0.1
    b2 = zeros(tensor[L, 1, C])
    lnfg = ones(tensor[1, C])
    lnfb = zeros(tensor[1, C])
}

# B windows of T + 1 characters at seeded random places: the inputs and, one on, the targets
def batch(seed: scalar) {
    let at = floor(rand(tensor[B, 1], seed) * (size(text, 0) - T))
    let idx = at + iota(tensor[B, T], 1)
    return (text[idx], text[idx + 1])
}

# every head of every sequence at once: B x T x C -> B x H x T x D (PyTorch's view + transpose)
def heads(a: tensor[N, T, C]) = swapaxes(reshape(a, tensor[N, T, H, D]), 1, 2)

def attention(x: tensor[N, T, C], wqkv: tensor[C, 3 * C], wo: tensor[C, C]) {
    let q, k, v = split(x @ wqkv, 3, -1)
    let o = nn.attention(heads(q), heads(k), heads(v), nn.causal_mask(zeros(tensor[T, T])), 1 / sqrt(D))
    let y: tensor[N, T, C] = reshape(swapaxes(o, 1, 2))
    return y @ wo
}

def logits(p: gpt, x: tensor[N, T]) {
    var h = p.wte[x] + p.wpe
    for l in 0..L {
        h = h + attention(nn.layer_norm(h, p.ln1g[l], p.ln1b[l]), p.wqkv[l], p.wo[l])
        let m = nn.layer_norm(h, p.ln2g[l], p.ln2b[l])
        h = h + nn.gelu(m @ p.w1[l] + p.b1[l]) @ p.w2[l] + p.b2[l]
    }
    return nn.layer_norm(h, p.lnfg, p.lnfb) @ transpose(p.wte)
}

def loss(p: gpt, x: tensor[N, T], y: tensor[N, T]) = nn.cross_entropy(logits(p, x), y[:, :, None])

var m = zeros(gpt)
var v = zeros(gpt)
for step in 0..steps {
    let x, y = batch(step + 100)
    let l = loss(gpt, x, y)
    let g, norm = optim.clip_grad_norm(grad(l, gpt), 1)
    gpt, m, v = optim.adamw(gpt, g, m, v, step + 1, optim.cosine_lr(step, 10, steps, 0.02))
    if step % 25 == 0 or step == steps - 1 {
        print "step {step}: loss {l:.4f}, gradient norm {norm:.4f}"
    }
}

# greedy continuation of "the " (ids 11 5 4 0): each step's most likely next character
var seq = [[11, 5, 4, 0, 11, 5, 4, 0]]
for k in 0..4 {
    let z = logits(gpt, seq)
    let next = argmax_rows(z[:, 3 + k, :])
    seq[0, 4 + k] = next[0, 0]
}
print "the  -> {seq[0, 4]:.0f} {seq[0, 5]:.0f} {seq[0, 6]:.0f} {seq[0, 7]:.0f}"
