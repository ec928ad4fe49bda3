# Backpropagation through time, written step by step: grad does not go through a for loop,
# so a recurrence's backward pass is a second loop, last step first.  An Elman RNN, h =
# tanh(x @ wx + h @ wh), over 2 sequences of 4 steps with 3 hidden units; the loss is the
# squared error of h @ wy against a target, summed over the steps.  Run it with:
#     goat run examples/rnn_bptt.mg
def cell(x: tensor[2x1], h: tensor[2x3], wx: tensor[1x3], wh: tensor[3x3]) = tanh(x @ wx + h @ wh)
def err(h: tensor[2x3], wy: tensor[3x1], y: tensor[2x1]) = col_mean((h @ wy - y) * (h @ wy - y))
def x_at(t: scalar) = sin(t + [[0], [1]])
def y_at(t: scalar) = cos(t + [[0], [1]])
# the states are kept as the rows of a 5x6 stack (each 2x3 state read row by row): row t
# of it, and the stack with h added into row t
def row(hs: tensor[5x6], t: scalar) = reshape(gather(hs, reshape(t, tensor[1x1])), tensor[2x3])
def put(hs: tensor[5x6], t: scalar, h: tensor[2x3]) = hs + transpose(onehot(reshape(t, tensor[1x1]), 5)) * reshape(h, tensor[1x6])

let wx = randn(tensor[1x3], 1)
let wh = randn(tensor[3x3], 2) * 0.5
let wy = randn(tensor[3x1], 3)

# forward: every state kept
var hs = zeros(tensor[5x6])
var h = zeros(tensor[2x3])
var loss = [[0]]
for t in 0..4 {
    h = cell(x_at(t), h, wx, wh)
    hs = put(hs, t + 1, h)
    loss += err(h, wy, y_at(t))
}

# backward: step t's own loss, plus what the later steps pass back through its state (dh),
# differentiated with respect to the weights and to the state the step starts from, which
# stop_gradient makes a value of its own; its gradient is dh for the step before
var dh = zeros(tensor[2x3])
var gwx = zeros(tensor[1x3]); var gwh = zeros(tensor[3x3]); var gwy = zeros(tensor[3x1])
for r in 0..4 {
    let t = 3 - r
    let before = stop_gradient(row(hs, t))
    let after = cell(x_at(t), before, wx, wh)
    let l = err(after, wy, y_at(t)) + col_sum(row_sum(after * dh))
    let a, b, c, d = grad(l, wx, wh, wy, before)
    gwx += a; gwh += b; gwy += c
    dh = d
}
print "loss {loss:.6f}"
print gwh
