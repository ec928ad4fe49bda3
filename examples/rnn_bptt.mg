# Backpropagation through time: grad differentiates through the for loop over time.  An Elman
# RNN, h = tanh(x @ wx + h @ wh), over 2 sequences of 4 steps with 3 hidden units; the loss is
# the squared error of h @ wy against a target, summed over the steps.  Run it with:
#     goat run examples/rnn_bptt.mg
def cell(x: tensor[2x1], h: tensor[2x3], wx: tensor[1x3], wh: tensor[3x3]) = tanh(x @ wx + h @ wh)
def err(h: tensor[2x3], wy: tensor[3x1], y: tensor[2x1]) = col_mean((h @ wy - y) * (h @ wy - y))
def x_at(t: scalar) = sin(t + [[0], [1]])
def y_at(t: scalar) = cos(t + [[0], [1]])

let wx = randn(tensor[1x3], 1)
let wh = randn(tensor[3x3], 2) * 0.5
let wy = randn(tensor[3x1], 3)

var h = zeros(tensor[2x3])
var loss = [[0]]
for t in 0..4 {
    h = cell(x_at(t), h, wx, wh)
    loss += err(h, wy, y_at(t))
}

# grad runs the loop again keeping each step's starting h, then backwards through the steps
let gwx, gwh, gwy = grad(loss, wx, wh, wy)
print loss
print gwx
print gwh
print gwy
