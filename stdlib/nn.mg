# nn: the functions of the Mountain Goat book's transformer chapters, for any number of rows.
#
#     import nn
#     let a = nn.softmax_rows(q @ transpose(k) * 0.35355339059327373 + nn.causal_mask(s))
#
# Rows are positions (or stacked sequences' positions), columns are features.  Each def is the
# book's formula, written for any N rows and C columns: the arithmetic is the book's, in the
# book's order, so a program using these prints what the book's 112-row defs print.  A
# parameter typed tensor[..., N, C] also takes a stack of such matrices (a batch: 2x3x3 is two
# 3x3 matrices), each row still on its own, as the row-wise built-ins do.

# softmax of each row: exp(m - max) / sum exp(m - max); subtracting the row's largest value
# keeps exp from overflowing (the result is the same, so its derivative with respect to the max
# is exactly 0: grad is told so with stop_gradient, as JAX's softmax does, and skips it).
# NxC -> NxC, rows sum to 1.
def softmax_rows(m: tensor[..., N, C]) = exp(m - stop_gradient(row_max(m))) / row_sum(exp(m - stop_gradient(row_max(m))))

# log of softmax_rows, computed stably: z - max - log(sum exp(z - max)).  NxC -> NxC.
def log_softmax(z: tensor[..., N, C]) = z - stop_gradient(row_max(z)) - log(row_sum(exp(z - stop_gradient(row_max(z)))))

# layer norm (Ba, Kiros & Hinton 2016), the book's chapter 34: each row is centred and divided
# by its standard deviation sigma = sqrt(mean((h - mean h)^2) + 1e-05), then scaled by the
# gain g and shifted by t.
def ln_sigma(h: tensor[..., N, C]) = sqrt(row_mean((h - row_mean(h)) * (h - row_mean(h))) + 1e-05)
def ln_hat(h: tensor[..., N, C]) = (h - row_mean(h)) / ln_sigma(h)
def layer_norm(h: tensor[..., N, C], g: tensor[1, C], t: tensor[1, C]) = ln_hat(h) * g + t

# the gradient of layer_norm's output with respect to its input h, given d, the gradient with
# respect to the output (the book's ln_back).  The gain's and shift's gradients are
# col_sum(d * ln_hat(h)) and col_sum(d).
def layer_norm_back(d: tensor[..., N, C], h: tensor[..., N, C], g: tensor[1, C]) = ((d * g) - row_mean(d * g) - ln_hat(h) * row_mean((d * g) * ln_hat(h))) / ln_sigma(h)

# the causal mask for scores s of T positions attending to T positions: 0 where column c may be
# seen from row r (c <= r), -1000000000 elsewhere, which softmax turns into exactly 0.
def causal_mask(s: tensor[T, T]) = ((iota(tensor[T, T], 1) <= iota(tensor[T, T], 0)) - 1) * 1000000000

# one head of scaled dot-product attention (Vaswani et al. 2017): softmax_rows(q k^T * scale +
# mask) v, for T queries over S keys.  scale is usually 1/sqrt(D); mask is 0 where a query may
# look and -1000000000 where it may not (causal_mask), or 0 everywhere (zeros(tensor[T, S]): no
# mask, as a ViT's or an encoder's attention has).
def attention(q: tensor[..., T, D], k: tensor[..., S, D], v: tensor[..., S, E], mask: tensor[T, S], scale: scalar) = softmax_rows(q @ transpose(k) * scale + mask) @ v

# the gradient of softmax_rows's output a with respect to its input, given da, the gradient
# with respect to a: a * (da - row_sum(a * da)) (the book's chapter 33).
def softmax_rows_back(a: tensor[..., N, C], da: tensor[..., N, C]) = a * (da - row_sum(a * da))

# ---- the trainer's verbs (LANGUAGE.md Part B7); grad differentiates each of them

# GELU, the tanh approximation (Hendrycks & Gimpel 2016, as GPT-2 and PyTorch's
# gelu(approximate="tanh")): 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).  NxC -> NxC.
def gelu(x: tensor[..., N, C]) = x * 0.5 * (1 + tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)))

# RMS norm (Zhang & Sennrich 2019): each row divided by its root mean square
# sqrt(mean(x^2) + 1e-05), then scaled by the gain g.  NxC, 1xC -> NxC.
def rms_norm(x: tensor[..., N, C], g: tensor[1, C]) = x / sqrt(row_mean(x * x) + 1e-05) * g

# cross-entropy of logits z (a row of V scores per example) against class indices t (a column
# of whole numbers 0..V-1): the mean over rows of -log softmax(z)[t], computed through the
# stable log_softmax (so logits of +-1e4 give finite values); the target's entry is picked with
# where, so a logit of -inf on another class (a masked-out class) adds nothing, as in PyTorch's
# F.cross_entropy (onehot * log_softmax alone would make 0 * -inf = nan); the onehot factor
# changes no value but makes grad with respect to t the error it should be (indices have no
# derivative), not zeros.  NxV, Nx1 -> 1x1.
def cross_entropy(z: tensor[..., N, V], t: tensor[..., N, 1]) = row_mean(reshape(row_sum(onehot(t, tensor[..., N, V]) * where(onehot(t, tensor[..., N, V]), log_softmax(z), 0)), tensor[1x?])) * -1

# the same over the rows where the mask m is 1 only (m: 1 for a scored row, 0 otherwise): the
# sum of -log softmax(z)[t] over those rows divided by their number; a row with mask 0 adds
# nothing, to the loss or to the gradient, even where its logits are inf or nan (its logits are
# read as 0s; its target must still be a valid index).
# NxV, Nx1, Nx1 -> 1x1.
def cross_entropy_masked(z: tensor[..., N, V], t: tensor[..., N, 1], m: tensor[..., N, 1]) = row_sum(reshape(row_sum(onehot(t, tensor[..., N, V]) * where(onehot(t, tensor[..., N, V]), log_softmax(where(m, z, 0)), 0)) * m, tensor[1x?])) / row_sum(reshape(m, tensor[1x?])) * -1

# inverted dropout (Srivastava et al. 2014): each value is kept with probability 1 - p and
# scaled by 1 / (1 - p), or set to 0; the mask is rand(tensor[N, C], seed) >= p, so the same
# seed gives the same mask on every back end.  Pass a different seed at each call (say
# step * 100 + layer) for a fresh mask.  p = 1 drops everything (0s, not 0/0); a p outside
# 0 to 1 stops the program.
# NxC, scalar, seed -> NxC.
def dropout(x: tensor[..., N, C], p: scalar, seed: scalar) {
    assert p >= 0 and p <= 1, "nn.dropout's p is the probability of dropping a value, from 0 to 1, got {p}"
    return x * (rand(tensor[..., N, C], seed) >= p) / (1 - p + (p >= 1))
}
