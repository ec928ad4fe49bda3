# A character-level LSTM, trained through time: the cell's weights are typed with size
# arithmetic, w: tensor[K + H, 4 * H] (the input and hidden state side by side, the four gates
# fused, as PyTorch's LSTMCell keeps them), so the one def serves any widths; grad
# backpropagates through the loop over the characters.  Run it: goat run examples/lstm.mg
import nn
import optim

# one step: gates i, f, g, o from the input and the state (PyTorch's LSTMCell, fused weights).
# Written before the lets below, so its K and H are size variables, each call's own (after
# let H = 32, H in its types would be that let's 32)
def cell(x: tensor[N, K], h: tensor[N, H], c: tensor[N, H], w: tensor[K + H, 4 * H],
         b: tensor[1, 4 * H]) {
    let i, f, g, o = split(concat(x, h, 1) @ w + b, 4, 1)
    let c2 = sigmoid(f) * c + sigmoid(i) * tanh(g)
    return (sigmoid(o) * tanh(c2), c2)
}

# "the cat sat on the mat. a hen ate the hat. the rat ran to the hen. ", one id per character
# of ' .acehmnorst' (space 0, '.' 1, a 2, ...)
let text = [11, 5, 4, 0, 3, 2, 11, 0, 10, 2, 11, 0, 8, 7, 0, 11, 5, 4, 0, 6, 2, 11, 1, 0, 2, 0, 5, 4, 7, 0, 2, 11, 4, 0, 11, 5, 4, 0, 5, 2, 11, 1, 0, 11, 5, 4, 0, 9, 2, 11, 0, 9, 2, 7, 0, 11, 8, 0, 11, 5, 4, 0, 5, 4, 7, 1, 0]
let V = 12          # vocabulary
let E = 8           # embedding width
let H = 32          # hidden units
let T = 12          # characters a window
let B = 8           # windows a batch
let steps = 120

params lstm {
    emb = randn(tensor[V, E], 1) * 0.3
    w = randn(tensor[E + H, 4 * H], 2) * 0.15
    b = zeros(tensor[1, 4 * H])
    head = randn(tensor[H, V], 3) * 0.15
}

# the mean cross-entropy of each next character, through the window
def loss(p: lstm, x: tensor[N, S], y: tensor[N, S]) {
    var h = zeros(tensor[N, H])
    var c = zeros(tensor[N, H])
    var total = 0
    for t in 0..S {
        h, c = cell(p.emb[x[:, t]], h, c, p.w, p.b)
        total = total + nn.cross_entropy(h @ p.head, y[:, t:t + 1])
    }
    return total / S
}

# B windows of T + 1 characters at seeded random places: the inputs and, one on, the targets
def batch(seed: scalar) {
    let at = floor(rand(tensor[B, 1], seed) * (size(text, 0) - T))
    let idx = at + iota(tensor[B, T], 1)
    return (text[idx], text[idx + 1])
}

var m = zeros(lstm)
var v = zeros(lstm)
for step in 0..steps {
    let x, y = batch(step + 100)
    let l = loss(lstm, x, y)
    let g, norm = optim.clip_grad_norm(grad(l, lstm), 1)
    lstm, m, v = optim.adamw(lstm, g, m, v, step + 1, optim.cosine_lr(step, 10, steps, 0.02))
    if step % 20 == 0 or step == steps - 1 {
        print "step {step}: loss {l:.4f}, gradient norm {norm:.4f}"
    }
}

# greedy continuation of "the " (ids 11 5 4 0): read it, then feed back each likeliest next
var h = zeros(tensor[1, H])
var c = zeros(tensor[1, H])
var seq = [11, 5, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0]
for k in 0..11 {
    h, c = cell(lstm.emb[seq[k:k + 1]], h, c, lstm.w, lstm.b)
    if k >= 3 { seq[k + 1] = argmax_rows(h @ lstm.head)[0, 0] }
}
# (ids of " .acehmnorst": 6 2 11 1 is "mat.")
print "the -> {seq[4]:.0f} {seq[5]:.0f} {seq[6]:.0f} {seq[7]:.0f} {seq[8]:.0f} {seq[9]:.0f} {seq[10]:.0f} {seq[11]:.0f}"
