# nn: the functions of the Mountain Goat book's transformer chapters, for any number of rows.
#
#     import nn
#     let a = nn.softmax_rows(q @ transpose(k) * 0.35355339059327373 + nn.causal_mask(s))
#
# Rows are positions (or stacked sequences' positions), columns are features.  Each def is the
# book's formula, written for any N rows and C columns: the arithmetic is the book's, in the
# book's order, so a program using these prints what the book's 112-row defs print.

# softmax of each row: exp(m - max) / sum exp(m - max); subtracting the row's largest value
# keeps exp from overflowing (the result is the same).  NxC -> NxC, rows sum to 1.
def softmax_rows(m: tensor[N, C]) = exp(m - row_max(m)) / row_sum(exp(m - row_max(m)))

# log of softmax_rows, computed stably: z - max - log(sum exp(z - max)).  NxC -> NxC.
def log_softmax(z: tensor[N, C]) = z - row_max(z) - log(row_sum(exp(z - row_max(z))))

# layer norm (Ba, Kiros & Hinton 2016), the book's chapter 34: each row is centred and divided
# by its standard deviation sigma = sqrt(mean((h - mean h)^2) + 1e-05), then scaled by the
# gain g and shifted by t.
def ln_sigma(h: tensor[N, C]) = sqrt(row_mean((h - row_mean(h)) * (h - row_mean(h))) + 1e-05)
def ln_hat(h: tensor[N, C]) = (h - row_mean(h)) / ln_sigma(h)
def layer_norm(h: tensor[N, C], g: tensor[1, C], t: tensor[1, C]) = ln_hat(h) * g + t

# the gradient of layer_norm's output with respect to its input h, given d, the gradient with
# respect to the output (the book's ln_back).  The gain's and shift's gradients are
# col_sum(d * ln_hat(h)) and col_sum(d).
def layer_norm_back(d: tensor[N, C], h: tensor[N, C], g: tensor[1, C]) = ((d * g) - row_mean(d * g) - ln_hat(h) * row_mean((d * g) * ln_hat(h))) / ln_sigma(h)

# the causal mask for scores s of T positions attending to T positions: 0 where column c may be
# seen from row r (c <= r), -1000000000 elsewhere, which softmax turns into exactly 0.
def causal_mask(s: tensor[T, T]) = ((iota(tensor[T, T], 1) <= iota(tensor[T, T], 0)) - 1) * 1000000000

# one head of scaled dot-product attention (Vaswani et al. 2017): softmax_rows(q k^T * scale +
# mask) v, for T queries over S keys.  scale is usually 1/sqrt(D); mask is 0 where a query may
# look and -1000000000 where it may not (causal_mask), or 0 everywhere.
def attention(q: tensor[T, D], k: tensor[S, D], v: tensor[S, E], mask: tensor[T, S], scale: scalar) = softmax_rows(q @ transpose(k) * scale + mask) @ v

# the gradient of softmax_rows's output a with respect to its input, given da, the gradient
# with respect to a: a * (da - row_sum(a * da)) (the book's chapter 33).
def softmax_rows_back(a: tensor[N, C], da: tensor[N, C]) = a * (da - row_sum(a * da))
