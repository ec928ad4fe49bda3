# optim: the optimizer and schedule of a training loop, written in goat.
#
#     import optim
#     let lr = optim.cosine_lr(step, 10, 200, 0.001)
#     let g, n = optim.clip_grad_norm(grad(loss, w), 1.0)
#     w, m, v = optim.adamw(w, g, m, v, step + 1, lr)          # (wd=0.1, eps=...: by name)

# AdamW (Loshchilov & Hutter 2019, "Decoupled weight decay regularization"; the update of
# PyTorch's torch.optim.AdamW): m and v are the running first and second moments of the
# gradient g, t the number of this step counting from 1 (for the bias corrections 1 - b^t,
# computed as 1 - exp(t log b)).  The weight decay is decoupled: w shrinks by lr * wd * w,
# then takes the Adam step lr * m_hat / (sqrt(v_hat) + eps).  Returns the new (w, m, v).
# A t below 1 stops the program (at t = 0 the bias corrections would divide by 0).  The
# defaults are PyTorch's: lr 0.001, betas (0.9, 0.999), eps 1e-08, weight_decay 0.01.
def adamw(w: tensor[...], g: tensor[...], m: tensor[...], v: tensor[...], t: scalar, lr: scalar = 0.001, b1: scalar = 0.9, b2: scalar = 0.999, eps: scalar = 1e-08, wd: scalar = 0.01) {
    assert t >= 1, "optim.adamw's t numbers the steps from 1 (its bias corrections divide by 1 - b1^t), got {t}: in a loop from 0, pass step + 1"
    let m2 = b1 * m + (1 - b1) * g
    let v2 = b2 * v + (1 - b2) * (g * g)
    let m_hat = m2 / (1 - exp(t * log(b1)))
    let v_hat = v2 / (1 - exp(t * log(b2)))
    let w2 = w * (1 - lr * wd) - lr * (m_hat / (sqrt(v_hat) + eps))
    return (w2, m2, v2)
}

# AdamW whose weight decay applies where mask is 1 and not where it is 0 (a mask of w's shape:
# optax's adamw(mask=...), PyTorch's parameter groups with weight_decay 0 for biases and
# gains).  With a params block: var decay = zeros(theta), decay.w1 = 1, ..., then
# optim.adamw_masked(theta, g, m, v, decay, step + 1, lr, wd=0.1).  The same step as adamw,
# the decay w * (1 - lr * wd) taken first where the mask says.
def adamw_masked(w: tensor[...], g: tensor[...], m: tensor[...], v: tensor[...], mask: tensor[...], t: scalar, lr: scalar = 0.001, b1: scalar = 0.9, b2: scalar = 0.999, eps: scalar = 1e-08, wd: scalar = 0.01) = adamw(w * (1 - lr * wd * mask), g, m, v, t, lr, b1, b2, eps, 0)

# the learning rate at step (counting from 0) of a schedule that warms up linearly over the
# first warmup steps to peak, then follows half a cosine down to 0 at step total (Loshchilov &
# Hutter 2017, SGDR, without restarts): peak * (step + 1) / warmup while step < warmup, then
# peak * (1 + cos(pi * (step - warmup) / (total - warmup))) / 2.
def cosine_lr(step: scalar, warmup: scalar, total: scalar, peak: scalar) {
    var lr = peak
    if step < warmup {
        lr = peak * (step + 1) / warmup
    } else {
        lr = peak * 0.5 * (1 + cos(3.141592653589793 * (step - warmup) / (total - warmup)))
    }
    return lr
}

# the squared norm of a gradient, sum(g^2), 1x1: add those of several gradients for their
# global norm (the square root of the sum).
def sq_norm(g: tensor[...]) = row_sum(reshape(g * g, tensor[1x?]))

# the factor that clips gradients whose squared norms sum to total_sq (one number: a 1x1, or
# a scalar) to the norm max_norm: min(1, max_norm / (sqrt(total_sq) + 1e-06)), as PyTorch's
# clip_grad_norm_; a scalar, so that multiplying a gradient of any rank by it keeps its shape.
def clip_coef(total_sq: tensor[...], max_norm: scalar) = minimum(max_norm / (sqrt(sum(total_sq)) + 1e-06), 1)

# a gradient scaled down to norm max_norm when its norm is larger, on its own (as PyTorch's
# clip_grad_norm_ given this one tensor: the factor is max_norm / (norm + 1e-06), at most 1).
# Returns (the clipped gradient, the norm before clipping, 1x1).  To clip all gradients by
# their global norm instead (PyTorch's clip_grad_norm_(model.parameters(), ...)), add their
# sq_norm's, take clip_coef of the sum and multiply every gradient by it.
def clip_grad_norm(g: tensor[...], max_norm: scalar) {
    let n = sqrt(sq_norm(g))
    return (g * reshape(minimum(max_norm / (n + 1e-06), 1), scalar), n)
}
