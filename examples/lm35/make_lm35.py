#!/usr/bin/env python3
"""Write the chapter-35 language-model training programs as Mountain Goat text.

The model is a one-block, one-head causal transformer with 648 weights in 16
matrices.  It is trained by plain gradient descent on a toy language: every
sequence is ``a b c a b c a`` over the tokens 0..3, so at positions 2..5 the
next token equals the token two places back.  Sixteen training sequences are
stacked into one 112-row matrix; attention runs over all 112 rows with a
block-diagonal causal mask, and the loss only counts the 64 rows whose next
token is predictable.

Goat has no loops in the book's core language, so every training step is
unrolled: one ``let`` per forward quantity, one per backward quantity and one
per weight update, each name carrying the step it belongs to.  The naming is::

    e_0, g1_0, ..., wu_0     the 16 weight matrices before step 0 (seeded)
    e_7, g1_7, ...           the weights after 7 steps
    x0_s7, a_s7, lg_s7, ...  the forward pass of step 7 (on weights *_7)
    dl_s7, dx1_s7, ...       the backward pass of step 7
    Ge_s7, Gwq_s7, ...       the gradient of the loss for each weight matrix

The forward pass on the final weights uses the suffix ``_sK`` with K the
number of steps; evaluation passes on other data use ``_held`` and
``_all0`` .. ``_all3``.

One table (``FORWARD`` and ``BACKWARD`` below) holds the model's formulas;
the let-per-step programs, the nested-def variant and the gradient-check
program are all produced from it, so they cannot drift apart.

Command line::

    python make_lm35.py                   # rewrite train_200.mg, train_10.mg,
                                          # train_200_nested.mg next to this file
    python make_lm35.py --steps 3 -o t.mg # one program, any number of steps
    python make_lm35.py --nested ...      # the nested-def form
    python make_lm35.py --gradcheck -o g.mg
    python make_lm35.py --data DIR        # only the .npy data files, into DIR

The default run also writes ``data/`` next to this file: the data and the
starting weights as float64 ``.npy`` files (:func:`write_data`), for
programs that ``load`` them instead of holding them as literals.

Only the standard library and NumPy are used.  Numbers are written with
``repr``, which round-trips float64 exactly, so the program text holds the
very same weights and data the Python side uses.
"""

from __future__ import annotations

import argparse
import math
import re
import sys
from pathlib import Path

import numpy as np

# ---------------------------------------------------------------------------
# Sizes and data
# ---------------------------------------------------------------------------

V = 4            # vocabulary: tokens 0, 1, 2, 3
D = 8            # model width
H = 16           # feed-forward width
N = 7            # tokens per sequence
SEQS = 16        # sequences stacked in one batch
ROWS = SEQS * N  # 112 stacked rows
SCORED = (2, 3, 4, 5)           # positions whose next token is predictable
N_SCORED = SEQS * len(SCORED)   # 64 predictions per batch
MASKED = -1000000000            # added to scores a row may not see
LN_EPS = "1e-05"                # layer-norm epsilon, as written in the program
SCALE = 1.0 / math.sqrt(D)      # attention score scale 1/sqrt(8)
LR = 1.0
CHECKPOINTS = (0, 1, 10, 25, 50, 100, 150, 200)
DEFAULT_SEED = 27
INIT_SCALE = 0.5     # random matrices are N(0, 1) * INIT_SCALE / sqrt(fan_in)
DEFAULT_FD_STEP = 1e-3

TRAIN_TRIPLES = ("222 101 130 221 322 312 200 302 "
                 "123 232 211 220 133 131 001 310").split()
HELDOUT_TRIPLES = ("121 212 331 223 311 010 112 002 "
                   "032 313 230 332 033 321 213 012").split()
# All 64 possible sequences in lexicographic order; chunk c holds the 16
# sequences that start with token c.
ALL_TRIPLES = [f"{a}{b}{c}" for a in "0123" for b in "0123" for c in "0123"]
CHUNKS = [ALL_TRIPLES[16 * c:16 * (c + 1)] for c in range(4)]

# The 16 learned matrices, in the order used everywhere (prints, arguments).
PARAMS = (
    ("e", V, D),    # token embedding
    ("g1", 1, D),   # layer norm 1: gain and shift
    ("n1", 1, D),
    ("wq", D, D),   # attention: queries, keys, values, output
    ("wk", D, D),
    ("wv", D, D),
    ("wo", D, D),
    ("g2", 1, D),   # layer norm 2
    ("n2", 1, D),
    ("w1", D, H),   # feed-forward
    ("c1", 1, H),
    ("w2", H, D),
    ("c2", 1, D),
    ("gf", 1, D),   # final layer norm
    ("nf", 1, D),
    ("wu", D, V),   # projection to the vocabulary
)
PARAM_NAMES = tuple(p for p, _, _ in PARAMS)
PARAM_SHAPES = {p: (r, c) for p, r, c in PARAMS}
N_WEIGHTS = sum(r * c for _, r, c in PARAMS)   # 648


def sequence(triple: str) -> list[int]:
    """The 7 tokens of the sequence that starts with ``triple`` ("abc")."""
    a, b, c = (int(ch) for ch in triple)
    return [a, b, c, a, b, c, a]


def tokens(triples) -> np.ndarray:
    """Token ids, shape (len(triples), 7), int."""
    return np.array([sequence(t) for t in triples], dtype=np.int64)


def batch(triples) -> tuple[np.ndarray, np.ndarray]:
    """One-hot inputs ``x`` (112x4) and targets ``y`` (112x4) for 16 sequences.

    Row ``7*s + i`` is position i of sequence s.  ``y`` holds the next token
    one-hot on the scored positions 2..5 and zeros on every other row.
    """
    if len(triples) != SEQS:
        raise ValueError(f"a batch holds {SEQS} sequences, got {len(triples)}")
    x = np.zeros((ROWS, V))
    y = np.zeros((ROWS, V))
    for s, triple in enumerate(triples):
        toks = sequence(triple)
        for i, t in enumerate(toks):
            x[N * s + i, t] = 1.0
            if i in SCORED:
                y[N * s + i, toks[i + 1]] = 1.0
    return x, y


def scored_rows() -> np.ndarray:
    """``mr`` (112x1): 1 on the scored rows, 0 elsewhere."""
    mr = np.zeros((ROWS, 1))
    for s in range(SEQS):
        for i in SCORED:
            mr[N * s + i, 0] = 1.0
    return mr


def positions() -> np.ndarray:
    """Sinusoidal position vectors for one sequence, shape (7, 8).

    Column 2j holds sin(p / 10000**(2j/8)) and column 2j+1 the cosine.
    Computed with the ``math`` module (not NumPy's vectorised sin/cos) so
    the digits do not depend on the machine's SIMD code paths.
    """
    ps = np.zeros((N, D))
    for p in range(N):
        for j in range(D // 2):
            angle = p / 10000.0 ** (2 * j / D)
            ps[p, 2 * j] = math.sin(angle)
            ps[p, 2 * j + 1] = math.cos(angle)
    return ps


def stacked_positions() -> np.ndarray:
    """``ps`` (112x8): the 7 position vectors repeated for each sequence."""
    return np.tile(positions(), (SEQS, 1))


def causal_mask() -> np.ndarray:
    """``mk`` (112x112): 0 where row r may look at column c, -1e9 elsewhere.

    Allowed means: same sequence, and c <= r.
    """
    mk = np.full((ROWS, ROWS), float(MASKED))
    for s in range(SEQS):
        for i in range(N):
            for j in range(i + 1):
                mk[N * s + i, N * s + j] = 0.0
    return mk


def selection(seq: int = 0) -> np.ndarray:
    """A 7x112 matrix that picks the rows of sequence ``seq``."""
    sel = np.zeros((N, ROWS))
    for i in range(N):
        sel[i, N * seq + i] = 1.0
    return sel


def initial_weights(seed: int = DEFAULT_SEED) -> dict[str, np.ndarray]:
    """Seeded starting weights, as a dict in ``PARAMS`` order.

    Layer-norm gains are 1 and every shift/bias is 0.  Every other matrix
    (the embedding included) is drawn from N(0, 1) and scaled by
    ``INIT_SCALE / sqrt(rows)``, rows being its fan-in.  Draws come from
    ``numpy.random.default_rng(seed)``, matrix by matrix in ``PARAMS`` order.
    """
    rng = np.random.default_rng(seed)
    weights = {}
    for name, r, c in PARAMS:
        if name.startswith("g"):
            w = np.ones((r, c))
        elif name.startswith(("n", "c")):
            w = np.zeros((r, c))
        else:
            w = rng.standard_normal((r, c)) * (INIT_SCALE / math.sqrt(r))
        weights[name] = w
    return weights


# ---------------------------------------------------------------------------
# The model as a table of formulas
# ---------------------------------------------------------------------------
# Bare names: a quantity of the table, a parameter of PARAMS, or a global of
# the program (ps, mk, mr).  X and Y stand for the batch's inputs and targets.

_S = repr(SCALE)  # 0.35355339059327373
_INV = repr(1.0 / N_SCORED)  # 0.015625

FORWARD = (
    ("x0", "X @ e + ps"),
    ("u1", "ln_out(x0, g1, n1)"),
    ("q", "u1 @ wq"),
    ("k", "u1 @ wk"),
    ("v", "u1 @ wv"),
    ("a", f"softmax_rows(q @ transpose(k) * {_S} + mk)"),
    ("o", "a @ v"),
    ("x1", "x0 + o @ wo"),
    ("u2", "ln_out(x1, g2, n2)"),
    ("pre", "u2 @ w1 + c1"),
    ("r", "relu(pre)"),
    ("x2", "x1 + (r @ w2 + c2)"),
    ("uf", "ln_out(x2, gf, nf)"),
    ("lg", "uf @ wu"),
)

BACKWARD = (
    ("dl", f"(exp(log_softmax(lg)) * mr - Y) * {_INV}"),
    ("Gwu", "transpose(uf) @ dl"),
    ("duf", "dl @ transpose(wu)"),
    ("Gnf", "col_sum(duf)"),
    ("Ggf", "col_sum(duf * ln_hat(x2))"),
    ("dx2", "ln_back(duf, x2, gf)"),
    ("Gc2", "col_sum(dx2)"),
    ("Gw2", "transpose(r) @ dx2"),
    ("dpre", "(dx2 @ transpose(w2)) * ge(pre, [[0]])"),
    ("Gc1", "col_sum(dpre)"),
    ("Gw1", "transpose(u2) @ dpre"),
    ("du2", "dpre @ transpose(w1)"),
    ("Gn2", "col_sum(du2)"),
    ("Gg2", "col_sum(du2 * ln_hat(x1))"),
    ("dx1", "dx2 + ln_back(du2, x1, g2)"),
    ("Gwo", "transpose(o) @ dx1"),
    ("do", "dx1 @ transpose(wo)"),
    ("dv", "transpose(a) @ do"),
    ("da", "do @ transpose(v)"),
    ("ds", "a * (da - row_sum(a * da))"),
    ("dq", f"ds @ k * {_S}"),
    ("dk", f"transpose(ds) @ q * {_S}"),
    ("Gwq", "transpose(u1) @ dq"),
    ("Gwk", "transpose(u1) @ dk"),
    ("Gwv", "transpose(u1) @ dv"),
    ("du1", "dq @ transpose(wq) + dk @ transpose(wk) + dv @ transpose(wv)"),
    ("Gn1", "col_sum(du1)"),
    ("Gg1", "col_sum(du1 * ln_hat(x0))"),
    ("dx0", "dx1 + ln_back(du1, x0, g1)"),
    ("Ge", "transpose(X) @ dx0"),
)

LOSS = f"col_sum(row_sum(Y * log_softmax(lg))) * -{_INV}"
CORRECT = "col_sum(row_sum(ge(lg, row_max(lg)) * Y))"

FORWARD_NAMES = tuple(n for n, _ in FORWARD)
BACKWARD_NAMES = tuple(n for n, _ in BACKWARD)
_TABLE = dict(FORWARD + BACKWARD)
_NAME = re.compile(r"(?<![\w.])[A-Za-z_]\w*")


def _subst(expr: str, mapping) -> str:
    """Replace every bare name in ``expr`` via ``mapping(name)``."""
    return _NAME.sub(lambda m: mapping(m.group(0)), expr)


def library_defs() -> list[str]:
    """The helper definitions, typed for the 112-row batch."""
    r = ROWS
    return [
        f"def softmax_rows(m: tensor[{r}x{r}]) = "
        "exp(m - row_max(m)) / row_sum(exp(m - row_max(m)))",
        f"def ln_sigma(h: tensor[{r}x{D}]) = "
        f"sqrt(row_mean((h - row_mean(h)) * (h - row_mean(h))) + {LN_EPS})",
        f"def ln_hat(h: tensor[{r}x{D}]) = (h - row_mean(h)) / ln_sigma(h)",
        f"def ln_out(h: tensor[{r}x{D}], g: tensor[1x{D}], t: tensor[1x{D}]) = "
        "ln_hat(h) * g + t",
        f"def ln_back(d: tensor[{r}x{D}], h: tensor[{r}x{D}], g: tensor[1x{D}]) = "
        "((d * g) - row_mean(d * g) - ln_hat(h) * row_mean((d * g) * ln_hat(h)))"
        " / ln_sigma(h)",
        f"def log_softmax(z: tensor[{r}x{V}]) = "
        "z - row_max(z) - log(row_sum(exp(z - row_max(z))))",
    ]


# ---------------------------------------------------------------------------
# Program text helpers
# ---------------------------------------------------------------------------

def fmt_number(v: float) -> str:
    """A float64 as a literal that reads back to exactly the same value."""
    v = float(v)
    if not math.isfinite(v):
        raise ValueError(f"cannot write {v} as a literal")
    if v == int(v) and abs(v) < 1e15:
        return str(int(v))          # also turns -0.0 into 0
    return repr(v)


def fmt_matrix(m: np.ndarray, indent: str = "    ") -> str:
    """A 2-D array as a literal; one row per line when it has several."""
    m = np.asarray(m, dtype=np.float64)
    if m.ndim != 2:
        raise ValueError("only matrices can be written")
    rows = ["[" + ", ".join(fmt_number(v) for v in row) + "]" for row in m]
    if len(rows) == 1:
        return "[" + rows[0] + "]"
    return "[\n" + ",\n".join(indent + row for row in rows) + "]"


def _data_sets() -> dict[str, tuple[str, str, list[str]]]:
    """Evaluation sets: suffix -> (x name, y name, triples)."""
    sets = {"held": ("x_held", "y_held", HELDOUT_TRIPLES)}
    for c in range(4):
        sets[f"all{c}"] = (f"x_all{c}", f"y_all{c}", CHUNKS[c])
    return sets


def _data_lets(with_eval: bool) -> list[str]:
    out = []
    x, y = batch(TRAIN_TRIPLES)
    out.append("# ---- the 16 training sequences, stacked: row 7*s + i is position i "
               "of sequence s")
    out.append("# first triples: " + " ".join(TRAIN_TRIPLES))
    out.append(f"let x = {fmt_matrix(x)}")
    out.append("# the next token, one-hot, on the scored rows (positions 2..5); "
               "zero rows elsewhere")
    out.append(f"let y = {fmt_matrix(y)}")
    out.append("# 1 on the scored rows")
    out.append(f"let mr = {fmt_matrix(scored_rows())}")
    out.append("# fixed sinusoidal position vectors, repeated for each sequence")
    out.append(f"let ps = {fmt_matrix(stacked_positions())}")
    out.append("# block-diagonal causal mask: 0 = may look, -1000000000 = may not")
    out.append(f"let mk = {fmt_matrix(causal_mask())}")
    if with_eval:
        out.append("# ---- evaluation data: the 16 held-out sequences, then all 64 "
                   "sequences in four chunks of 16 (chunk c starts with token c)")
        out.append("# held-out first triples: " + " ".join(HELDOUT_TRIPLES))
        for xname, yname, triples in _data_sets().values():
            xe, ye = batch(triples)
            out.append(f"let {xname} = {fmt_matrix(xe)}")
            out.append(f"let {yname} = {fmt_matrix(ye)}")
        out.append("# picks the 7 rows of the first training sequence out of 112")
        out.append(f"let sel = {fmt_matrix(selection(0))}")
    return out


def _weight_lets(weights: dict[str, np.ndarray], suffix: str = "_0") -> list[str]:
    return [f"let {p}{suffix} = {fmt_matrix(weights[p])}" for p in PARAM_NAMES]


def _pnames(step: int | str) -> dict[str, str]:
    return {p: f"{p}_{step}" for p in PARAM_NAMES}


def _mapper(suffix: str, params: dict[str, str], xname: str, yname: str):
    def mapping(name: str) -> str:
        if name in _TABLE:
            return name + suffix
        if name in params:
            return params[name]
        if name == "X":
            return xname
        if name == "Y":
            return yname
        return name
    return mapping


def forward_lets(suffix: str, params: dict[str, str], xname: str = "x") -> list[str]:
    """One ``let`` per forward quantity, names suffixed with ``suffix``."""
    mp = _mapper(suffix, params, xname, "y")
    return [f"let {n}{suffix} = {_subst(e, mp)}" for n, e in FORWARD]


def backward_lets(suffix: str, params: dict[str, str],
                  xname: str = "x", yname: str = "y") -> list[str]:
    """One ``let`` per backward quantity (including the 16 gradients)."""
    mp = _mapper(suffix, params, xname, yname)
    return [f"let {n}{suffix} = {_subst(e, mp)}" for n, e in BACKWARD]


def loss_expr(suffix: str, yname: str = "y") -> str:
    return _subst(LOSS, _mapper(suffix, {}, "x", yname))


def correct_expr(suffix: str, yname: str = "y") -> str:
    return _subst(CORRECT, _mapper(suffix, {}, "x", yname))


def _rate(lr: float) -> str:
    """The learning rate as written in the program (1.0 stays 1.0)."""
    return f"{lr:.1f}" if lr == int(lr) else fmt_number(lr)


def update_lets(step: int, lr: float = LR) -> list[str]:
    """Gradient descent: the weights after ``step + 1`` steps."""
    rate = _rate(lr)
    return [f"let {p}_{step + 1} = {p}_{step} - G{p}_s{step} * {rate}"
            for p in PARAM_NAMES]


def checkpoints_for(steps: int) -> list[int]:
    return [k for k in CHECKPOINTS if k <= steps]


def print_layout(steps: int) -> list[tuple]:
    """What each ``print`` of a training program shows, in order.

    ``("loss", k)`` / ``("correct", k)`` for each checkpoint k <= steps
    (weights after k steps), then ``("held_loss",)``, ``("held_correct",)``,
    ``("chunk_correct", c)`` for c = 0..3 and ``("attention",)`` (7x7).
    """
    out = []
    for k in checkpoints_for(steps):
        out += [("loss", k), ("correct", k)]
    out += [("held_loss",), ("held_correct",)]
    out += [("chunk_correct", c) for c in range(4)]
    out.append(("attention",))
    return out


def _header(title: str, steps: int, seed: int, lr: float) -> list[str]:
    return [
        f"# {title}",
        "# Generated by examples/lm35/make_lm35.py -- do not edit by hand; "
        "rerun the generator.",
        f"# {steps} steps of gradient descent, learning rate {lr}, starting "
        f"weights from numpy default_rng({seed}).",
        "# A one-block, one-head causal transformer language model (V=4, D=8, "
        "H=16, 648 weights in 16 matrices)",
        "# learns to continue a b c a b c a: at positions 2..5 the next token "
        "is the one two places back.",
        "# Prints: loss and number correct (of 64) on the training sequences "
        "after " + ", ".join(str(k) for k in checkpoints_for(steps)) + " steps;",
        "# then the held-out loss and number correct; then the number correct "
        "in each of four chunks",
        "# of 16 of all 64 sequences; then the 7x7 attention matrix of the "
        "first training sequence.",
        "",
    ]


# ---------------------------------------------------------------------------
# The let-per-step training program
# ---------------------------------------------------------------------------

def training_program(steps: int = 200, seed: int = DEFAULT_SEED,
                     lr: float = LR,
                     weights: dict[str, np.ndarray] | None = None) -> str:
    """The unrolled training program, one ``let`` per quantity per step."""
    if steps < 0:
        raise ValueError("steps must be >= 0")
    if weights is None:
        weights = initial_weights(seed)
    checkpoints = set(checkpoints_for(steps))
    out = _header("Chapter 35: training a small transformer language model, "
                  "one let per step.", steps, seed, lr)
    out += library_defs() + [""]
    out += _data_lets(with_eval=True) + [""]
    out.append(f"# ---- starting weights (seed {seed})")
    out += _weight_lets(weights) + [""]
    for s in range(steps):
        out.append(f"# ---- step {s}: forward pass on the weights *_{s}")
        out += forward_lets(f"_s{s}", _pnames(s))
        if s in checkpoints:
            out.append(f"print {loss_expr(f'_s{s}')}")
            out.append(f"print {correct_expr(f'_s{s}')}")
        out.append(f"# backward, step {s}")
        out += backward_lets(f"_s{s}", _pnames(s))
        out.append(f"# update, step {s}")
        out += update_lets(s, lr)
    final = f"_s{steps}"
    out.append(f"# ---- the forward pass on the final weights (after {steps} steps)")
    out += forward_lets(final, _pnames(steps))
    if steps in checkpoints:
        out.append(f"print {loss_expr(final)}")
        out.append(f"print {correct_expr(final)}")
    for sfx, (xname, yname, _) in _data_sets().items():
        what = ("the 16 held-out sequences" if sfx == "held"
                else f"chunk {sfx[-1]} of all 64 sequences")
        out.append(f"# ---- {what}, final weights")
        out += forward_lets(f"_{sfx}", _pnames(steps), xname)
        if sfx == "held":
            out.append(f"print {loss_expr('_held', yname)}")
        out.append(f"print {correct_expr(f'_{sfx}', yname)}")
    out.append("# ---- attention of the first training sequence, final weights")
    out.append(f"print sel @ a{final} @ transpose(sel)")
    return "\n".join(out) + "\n"


# ---------------------------------------------------------------------------
# The nested-def variant (the book's "first version")
# ---------------------------------------------------------------------------

def _dependencies() -> dict[str, tuple[bool, tuple[str, ...]]]:
    """For each table quantity: (depends on the input batch, its weights).

    Both are transitive: a quantity depends on whatever the quantities in
    its formula depend on.  Weights come in ``PARAMS`` order.
    """
    deps: dict[str, tuple[bool, tuple[str, ...]]] = {}
    for name, expr in FORWARD + BACKWARD:
        needs_x = False
        params: set[str] = set()
        for tok in _NAME.findall(expr):
            if tok in deps:
                dep_x, dep_params = deps[tok]
                needs_x |= dep_x
                params |= set(dep_params)
            elif tok in PARAM_SHAPES:
                params.add(tok)
            elif tok == "X":
                needs_x = True
        deps[name] = (needs_x, tuple(p for p in PARAM_NAMES if p in params))
    return deps


def _def_name(q: str) -> str:
    """Gradients keep their names (Ge, Gwq, ...); other quantities get an f."""
    return q if q.startswith("G") else "f" + q


def nested_defs() -> list[str]:
    """One ``def`` per quantity, each a function of the weights it uses.

    Forward quantities take the input batch ``xs`` as their first argument
    (so the same defs evaluate the held-out and chunk data); backward
    quantities use the training data ``x`` and ``y`` directly, so a
    gradient is a def of exactly the 16 weights.
    """
    deps = _dependencies()
    forward = set(FORWARD_NAMES)

    def call(q: str, data: str) -> str:
        needs_x, params = deps[q]
        args = [data] if (needs_x and q in forward) else []
        return f"{_def_name(q)}({', '.join(args + list(params))})"

    out = []
    for q in FORWARD_NAMES + BACKWARD_NAMES:
        needs_x, params = deps[q]
        data = "xs" if q in forward else "x"
        sig = [f"xs: tensor[{ROWS}x{V}]"] if (needs_x and q in forward) else []
        sig += [f"{p}: tensor[{PARAM_SHAPES[p][0]}x{PARAM_SHAPES[p][1]}]"
                for p in params]

        def mapping(name: str, data=data) -> str:
            if name in _TABLE:
                return call(name, data)
            if name == "X":
                return data
            if name == "Y":
                return "y"
            return name
        out.append(f"def {_def_name(q)}({', '.join(sig)}) = "
                   f"{_subst(_TABLE[q], mapping)}")
    # loss and correct count on any batch
    _, lg_params = deps["lg"]
    sig = [f"xs: tensor[{ROWS}x{V}]", f"ys: tensor[{ROWS}x{V}]"]
    sig += [f"{p}: tensor[{PARAM_SHAPES[p][0]}x{PARAM_SHAPES[p][1]}]"
            for p in lg_params]

    def on_batch(name: str) -> str:
        return {"lg": call("lg", "xs"), "Y": "ys"}.get(name, name)
    out.append(f"def floss({', '.join(sig)}) = {_subst(LOSS, on_batch)}")
    out.append(f"def fcorrect({', '.join(sig)}) = {_subst(CORRECT, on_batch)}")
    return out


def _nested_call(q: str, step: int, xname: str = "x") -> str:
    needs_x, params = _dependencies()[q]
    args = ([xname] if needs_x and q in FORWARD_NAMES else [])
    args += [f"{p}_{step}" for p in params]
    return f"{_def_name(q)}({', '.join(args)})"


def nested_training_program(steps: int = 200, seed: int = DEFAULT_SEED,
                            lr: float = LR,
                            weights: dict[str, np.ndarray] | None = None) -> str:
    """The same training, each quantity a ``def`` of the weights.

    Every step is 16 lets, ``let e_1 = e_0 - Ge(e_0, g1_0, ...) * 1.0``.
    The printed values equal those of :func:`training_program`.
    """
    if steps < 0:
        raise ValueError("steps must be >= 0")
    if weights is None:
        weights = initial_weights(seed)
    checkpoints = set(checkpoints_for(steps))
    rate = _rate(lr)
    all_p = PARAM_NAMES

    def ps_at(step):
        return ", ".join(f"{p}_{step}" for p in all_p)

    out = _header("Chapter 35, nested-def form: every quantity is a def of the "
                  "weights, one let per weight per step.", steps, seed, lr)
    out += library_defs() + [""]
    out += _data_lets(with_eval=True) + [""]
    out.append("# ---- the model: forward quantities (f...), backward quantities "
               "(fd...) and the 16 gradients (G...)")
    out += nested_defs() + [""]
    out.append(f"# ---- starting weights (seed {seed})")
    out += _weight_lets(weights) + [""]
    for s in range(steps + 1):
        if s in checkpoints:
            out.append(f"print floss(x, y, {ps_at(s)})")
            out.append(f"print fcorrect(x, y, {ps_at(s)})")
        if s == steps:
            break
        out.append(f"# ---- step {s}")
        for p in all_p:
            out.append(f"let {p}_{s + 1} = {p}_{s} - G{p}({ps_at(s)}) * {rate}")
    out.append("# ---- evaluation with the final weights")
    for sfx, (xname, yname, _) in _data_sets().items():
        if sfx == "held":
            out.append(f"print floss({xname}, {yname}, {ps_at(steps)})")
        out.append(f"print fcorrect({xname}, {yname}, {ps_at(steps)})")
    out.append(f"print sel @ {_nested_call('a', steps)} @ transpose(sel)")
    return "\n".join(out) + "\n"


# ---------------------------------------------------------------------------
# The gradient-check program (step 0)
# ---------------------------------------------------------------------------

def gradcheck_program(seed: int = DEFAULT_SEED,
                      extra: dict[str, int] | None = None,
                      h: float = DEFAULT_FD_STEP,
                      weights: dict[str, np.ndarray] | None = None) -> str:
    """A program that prints the step-0 gradients and finite differences.

    Prints, in order:

    * the 16 gradient matrices ``G<p>`` in ``PARAMS`` order;
    * for every matrix p, and for two of its weights -- flat (row-major)
      index 0 and ``extra[p]`` (default: the last weight) -- the 1x1 value
      ``loss(p + h*E) - loss(p - h*E)``, E the one-hot matrix of that
      weight.  The difference is formed inside the program, so its printed
      digits are spent on the difference, not on the two losses.  Divide by
      ``2*h`` for the finite-difference estimate.

    See :func:`gradcheck_layout` for the (param, index) of each difference.
    """
    if weights is None:
        weights = initial_weights(seed)
    out = ["# Chapter 35: the step-0 gradient of all 16 weight matrices, and "
           "central differences for two weights of each.",
           "# Generated by examples/lm35/make_lm35.py (gradcheck_program).",
           f"# Starting weights from numpy default_rng({seed}); step h = {h!r}.",
           ""]
    out += library_defs() + [""]
    out += _data_lets(with_eval=False) + [""]
    out += _weight_lets(weights) + [""]
    out.append("# ---- forward and backward on the starting weights")
    out += forward_lets("_s0", _pnames(0))
    out += backward_lets("_s0", _pnames(0))
    for p in PARAM_NAMES:
        out.append(f"print G{p}_s0")
    hs = fmt_number(h)
    for n, (p, idx) in enumerate(gradcheck_layout(extra)):
        r, c = PARAM_SHAPES[p]
        onehot = np.zeros((r, c))
        onehot.flat[idx] = 1.0
        tag = f"fd{n}"
        out.append(f"# ---- {p}, weight {idx} (row {idx // c}, column {idx % c})")
        out.append(f"let E_{tag} = {fmt_matrix(onehot)}")
        for sign, pm in (("+", "p"), ("-", "m")):
            sfx = f"_{tag}{pm}"
            params = _pnames(0)
            params[p] = f"{p}{sfx}"
            out.append(f"let {p}{sfx} = {p}_0 {sign} E_{tag} * {hs}")
            out += forward_lets(sfx, params)
            out.append(f"let L{sfx} = {loss_expr(sfx)}")
        out.append(f"print L_{tag}p - L_{tag}m")
    return "\n".join(out) + "\n"


def gradcheck_layout(extra: dict[str, int] | None = None) -> list[tuple[str, int]]:
    """(param, flat index) of each finite difference the check program prints."""
    pairs = []
    for p in PARAM_NAMES:
        r, c = PARAM_SHAPES[p]
        second = (extra or {}).get(p, r * c - 1)
        if not 0 <= second < r * c:
            raise ValueError(f"index {second} is outside {p} ({r}x{c})")
        pairs += [(p, 0), (p, second)]
    return pairs


# ---------------------------------------------------------------------------
# Command line
# ---------------------------------------------------------------------------

HERE = Path(__file__).resolve().parent
DEFAULT_FILES = {
    "train_200.mg": lambda seed: training_program(200, seed),
    "train_10.mg": lambda seed: training_program(10, seed),
    "train_200_nested.mg": lambda seed: nested_training_program(200, seed),
}


def write_default_files(folder: Path = HERE, seed: int = DEFAULT_SEED) -> list[Path]:
    """(Re)write the example programs into ``folder``; returns their paths."""
    folder = Path(folder)
    written = []
    for name, make in DEFAULT_FILES.items():
        path = folder / name
        path.write_text(make(seed))
        written.append(path)
    return written


DATA_FOLDER = HERE / "data"


def data_arrays(seed: int = DEFAULT_SEED) -> dict[str, np.ndarray]:
    """The arrays :func:`write_data` writes, file stem -> float64 matrix.

    The same values, to the bit, as the literals of a training program with
    this seed (``x``, ``y``, ``mr``, ``ps``, ``x_held`` ... ``sel`` and the
    starting weights ``e_0`` ... ``wu_0``); only the 112x112 mask ``mk`` is
    left out: a program can compute it.  A literal cannot hold -0.0
    (:func:`fmt_number` writes it as 0), so neither do these arrays.
    """
    x, y = batch(TRAIN_TRIPLES)
    arrays = {"x": x, "y": y, "mr": scored_rows(), "ps": stacked_positions()}
    for sfx, (_, _, triples) in _data_sets().items():
        arrays[f"{sfx}_x"], arrays[f"{sfx}_y"] = batch(triples)
    arrays["sel"] = selection(0)
    for p, w in initial_weights(seed).items():
        arrays[f"init_{p}"] = w
    out = {}
    for name, a in arrays.items():
        a = np.ascontiguousarray(a, dtype=np.float64)
        out[name] = np.where(a == 0.0, 0.0, a)      # -0.0 -> 0.0, as in the literals
    return out


def write_data(folder: Path = DATA_FOLDER, seed: int = DEFAULT_SEED) -> list[Path]:
    """Write :func:`data_arrays` as ``folder/NAME.npy`` (float64, C order, no pickle).

    Creates ``folder`` if needed; returns the paths, in :func:`data_arrays` order.
    The bytes depend only on the values (the ``.npy`` header holds the dtype,
    order and shape), so the files are reproducible.
    """
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for name, a in data_arrays(seed).items():
        path = folder / f"{name}.npy"
        with open(path, "wb") as f:
            np.save(f, a, allow_pickle=False)
        written.append(path)
    return written


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, help="write one training program with "
                    "this many steps (needs -o)")
    ap.add_argument("--seed", type=int, default=DEFAULT_SEED,
                    help=f"seed of the starting weights (default {DEFAULT_SEED})")
    ap.add_argument("--lr", type=float, default=LR, help="learning rate (default 1.0)")
    ap.add_argument("--nested", action="store_true",
                    help="write the nested-def form instead of one let per step")
    ap.add_argument("--gradcheck", action="store_true",
                    help="write the step-0 gradient-check program (needs -o)")
    ap.add_argument("--fd-step", type=float, default=DEFAULT_FD_STEP,
                    help="finite-difference step of --gradcheck")
    ap.add_argument("--data", type=Path, metavar="FOLDER",
                    help="write only the .npy data and starting weights (for "
                    "--seed) into FOLDER")
    ap.add_argument("-o", "--output", type=Path,
                    help="file to write (default: the standard examples, "
                    "next to this script)")
    args = ap.parse_args(argv)

    if args.data is not None:
        if (args.steps is not None or args.gradcheck or args.output is not None
                or args.nested or args.lr != LR):
            ap.error("--data goes only with --seed")
        paths = write_data(args.data, args.seed)
        print(f"wrote {len(paths)} .npy files into {args.data}")
        return 0
    if args.steps is None and not args.gradcheck:
        if args.output is not None or args.nested or args.lr != LR:
            ap.error("-o, --nested and --lr go with --steps or --gradcheck")
        for path in write_default_files(HERE, args.seed):
            print(f"wrote {path} ({len(path.read_text().splitlines())} lines)")
        paths = write_data(DATA_FOLDER, args.seed)
        size = sum(p.stat().st_size for p in paths)
        print(f"wrote {len(paths)} .npy files into {DATA_FOLDER} ({size} bytes)")
        return 0
    if args.output is None:
        ap.error("-o/--output is needed with --steps or --gradcheck")
    if args.gradcheck:
        text = gradcheck_program(args.seed, h=args.fd_step)
    elif args.nested:
        text = nested_training_program(args.steps, args.seed, args.lr)
    else:
        text = training_program(args.steps, args.seed, args.lr)
    args.output.write_text(text)
    print(f"wrote {args.output} ({len(text.splitlines())} lines)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
