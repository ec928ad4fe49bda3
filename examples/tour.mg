# A first goat program: every value's shape is known before anything runs.
# Run it:    goat run examples/tour.mg
# Check it:  goat check --shapes examples/tour.mg

# Two "sequences" of three tokens, each token a row of width 4
let x = [[1, 0, 0, 0],
         [0, 1, 0, 0],
         [0, 0, 1, 0],
         [0, 0, 0, 1],
         [1, 1, 0, 0],
         [0, 0, 1, 1]]

# A def declares the shapes it takes; each call is checked against them
def softmax_rows(m: tensor[6x6]) = exp(m - row_max(m)) / row_sum(exp(m - row_max(m)))

# Scaled dot-product scores, and a causal mask for two stacked sequences of 3
let w = [[0.5, -1], [1, 0.25], [-0.5, 1], [1, 1]]
let q = x @ w
let scores = q @ transpose(q) * 0.7071067811865476
let mask = [[0, -1000000000, -1000000000, -1000000000, -1000000000, -1000000000],
            [0, 0, -1000000000, -1000000000, -1000000000, -1000000000],
            [0, 0, 0, -1000000000, -1000000000, -1000000000],
            [-1000000000, -1000000000, -1000000000, 0, -1000000000, -1000000000],
            [-1000000000, -1000000000, -1000000000, 0, 0, -1000000000],
            [-1000000000, -1000000000, -1000000000, 0, 0, 0]]
let attention = softmax_rows(scores + mask)
print attention
print row_sum(attention)      # every row sums to 1
