"""The standard library's nn module (stdlib/nn.mg), called as `import nn` / `nn.NAME(...)`.

Every value is compared with a NumPy reference written here (explicit Jacobians for the backward
functions, log-sum-exp with math.fsum for the softmaxes), and the two backward functions also
with central finite differences of the forward ones, formed by goat itself and by NumPy.  The
last tests check that nn's functions give the same bits as the book's 112-row defs in
examples/lm35/train_200.mg.
"""
import math
import os
import re
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import goat
from conftest import ROOT, cli, run

EPS_LN = 1e-05          # the book's layer-norm epsilon


# ---------------------------------------------------------------------------- running programs
@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    """An empty folder for the programs (so `import nn` can only find the standard library),
    with GOAT_PATH unset."""
    with pytest.MonkeyPatch.context() as mp:
        mp.delenv("GOAT_PATH", raising=False)
        yield tmp_path_factory.mktemp("nn")


@pytest.fixture(scope="module")
def go(folder):
    """Run a program (given without its `import nn` line) in `folder`; its printed values."""
    def run(src):
        return goat.run_source("import nn\n" + src, path=str(folder / "prog.mg"))
    return run


def lit(a) -> str:
    """A goat literal holding exactly the float64 values of the 2-D array `a`."""
    a = np.asarray(a, dtype=float)
    assert a.ndim == 2
    return "[%s]" % ", ".join("[%s]" % ", ".join(repr(float(x)) for x in row) for row in a)


# ---------------------------------------------------------------------------- NumPy references
def logsumexp_rows(z):
    out = np.empty((z.shape[0], 1))
    for r, row in enumerate(z):
        m = max(row)
        out[r, 0] = m + math.log(math.fsum(math.exp(x - m) for x in row))
    return out


def ref_softmax(z):
    return np.exp(z - logsumexp_rows(z))


def ref_log_softmax(z):
    return z - logsumexp_rows(z)


def ref_sigma(h):
    return np.sqrt(np.var(h, axis=1, keepdims=True) + EPS_LN)


def ref_hat(h):
    return (h - np.mean(h, axis=1, keepdims=True)) / ref_sigma(h)


def ref_layer_norm(h, g, t):
    return ref_hat(h) * g + t


def ref_layer_norm_back(d, h, g):
    """d^T J for y = layer_norm(h), J built explicitly for each row:
    dy_j/dh_i = g_j / sigma (delta_ij - 1/C - xhat_i xhat_j / C)."""
    n, c = h.shape
    xhat, sigma = ref_hat(h), ref_sigma(h)
    out = np.empty_like(h)
    for r in range(n):
        jac = (np.eye(c) - 1.0 / c - np.outer(xhat[r], xhat[r]) / c) / sigma[r, 0]  # [i, j]
        out[r] = jac @ (d[r] * g[0])
    return out


def ref_softmax_back(a, da):
    """da^T J for a = softmax(m), J = diag(a) - a a^T for each row."""
    out = np.empty_like(a)
    for r in range(a.shape[0]):
        jac = np.diag(a[r]) - np.outer(a[r], a[r])
        out[r] = jac.T @ da[r]
    return out


def ref_causal_mask(t):
    i, j = np.indices((t, t))
    return np.where(j <= i, 0.0, -1e9)


def ref_attention(q, k, v, mask, scale):
    return ref_softmax(q @ k.T * scale + mask) @ v


def close(got, want, rtol=1e-12, atol=1e-13):
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)


# ---------------------------------------------------------------------------- forward and back
ALL = """\
let h = %(h)s
let g = %(g)s
let t = %(t)s
let d = %(d)s
print nn.softmax_rows(h)
print nn.log_softmax(h)
print nn.ln_sigma(h)
print nn.ln_hat(h)
print nn.layer_norm(h, g, t)
print nn.layer_norm_back(d, h, g)
print nn.softmax_rows_back(nn.softmax_rows(h), d)
"""


def check_all(go, h, g, t, d):
    out = go(ALL % dict(h=lit(h), g=lit(g), t=lit(t), d=lit(d)))
    assert len(out) == 7
    sm, lsm, sig, hat, ln, lnb, smb = out
    close(sm, ref_softmax(h))
    assert np.allclose(sm.sum(axis=1), 1, rtol=0, atol=1e-14)
    close(lsm, ref_log_softmax(h), atol=1e-12 * max(1.0, np.abs(h).max()))
    close(sig, ref_sigma(h))
    close(hat, ref_hat(h), atol=1e-12)
    close(ln, ref_layer_norm(h, g, t), atol=1e-12)
    close(lnb, ref_layer_norm_back(d, h, g), rtol=1e-10, atol=1e-10 * np.abs(lnb).max() + 1e-12)
    close(smb, ref_softmax_back(ref_softmax(h), d), atol=1e-13)


def draw(rng, n, c, scale=1.0):
    return (rng.standard_normal((n, c)) * scale, rng.standard_normal((1, c)) + 1,
            rng.standard_normal((1, c)), rng.standard_normal((n, c)))


@pytest.mark.parametrize("n, c", [(1, 1), (3, 5), (112, 8), (7, 1), (1, 9), (112, 112)])
def test_every_function_against_numpy(go, n, c):
    rng = np.random.default_rng(n * 1000 + c)
    check_all(go, *draw(rng, n, c))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(n=st.integers(1, 6), c=st.integers(1, 6), seed=st.integers(0, 2 ** 32 - 1),
       scale=st.sampled_from([1e-3, 1.0, 30.0]))
def test_every_function_against_numpy_drawn_shapes(go, n, c, seed, scale):
    check_all(go, *draw(np.random.default_rng(seed), n, c, scale))


def test_layer_norm_of_a_constant_row_is_the_shift(go):
    # C = 1 or a constant row: h - mean is 0, sigma = sqrt(1e-05), the output is t exactly
    ln, back = go("let h = [[3, 3, 3], [-2, -2, -2]]\nlet g = [[2, 3, 4]]\n"
                  "print nn.layer_norm(h, g, [[0.5, -1, 7]])\n"
                  "print nn.layer_norm_back([[1, 2, 3], [1, 1, 1]], h, g)")
    assert np.array_equal(ln, np.array([[0.5, -1, 7], [0.5, -1, 7]]))
    # gradient through a constant row: (dg - mean(dg)) / sqrt(1e-05)
    dg = np.array([[2.0, 6, 12], [2, 3, 4]])
    close(back, (dg - dg.mean(axis=1, keepdims=True)) / math.sqrt(EPS_LN))


# ---------------------------------------------------------------------------- large and masked
def test_softmax_of_scores_of_1e4_stays_finite(go):
    rng = np.random.default_rng(4)
    s = rng.choice([-1e4, 1e4], size=(6, 7)) + rng.standard_normal((6, 7))
    s[2] = 1e4                                  # a row of equal huge scores
    s[3] = -1e4
    sm, lsm = go("let s = %s\nprint nn.softmax_rows(s)\nprint nn.log_softmax(s)" % lit(s))
    assert np.isfinite(sm).all() and np.isfinite(lsm).all()
    assert np.allclose(sm.sum(axis=1), 1, rtol=0, atol=1e-14)
    close(sm, ref_softmax(s))
    close(lsm, ref_log_softmax(s), rtol=1e-14, atol=1e-11)
    close(sm[2:4], np.full((2, 7), 1 / 7), rtol=1e-15, atol=0)
    # a score 1e4 below the row's largest contributes exactly nothing, yet its log is finite
    low = s - s.max(axis=1, keepdims=True) < -800
    assert low.any() and (sm[low] == 0).all()
    assert (lsm[low] < -800).all()


@pytest.mark.parametrize("t", [1, 2, 5, 112])
def test_causal_mask(go, t):
    (m,) = go("print nn.causal_mask(zeros(tensor[%dx%d]))" % (t, t))
    assert np.array_equal(m, ref_causal_mask(t))


def test_softmax_of_masked_rows(go):
    rng = np.random.default_rng(5)
    s = rng.standard_normal((5, 5)) * 1e4
    (a,) = go("let s = %s\nprint nn.softmax_rows(s + nn.causal_mask(s))" % lit(s))
    upper = np.triu(np.ones((5, 5), bool), 1)
    assert (a[upper] == 0).all()                     # a masked score gets exactly 0
    assert np.array_equal(a[0], [1, 0, 0, 0, 0])    # row 0 sees only itself
    assert np.allclose(a.sum(axis=1), 1, rtol=0, atol=1e-14)
    for r in range(5):
        close(a[r:r + 1, :r + 1], ref_softmax(s[r:r + 1, :r + 1]))
    # a row masked everywhere is the uniform distribution (the stable form), not a NaN
    (u,) = go("print nn.softmax_rows([[1, 2, 3]] * 0 - 1000000000)")
    assert np.array_equal(u, np.full((1, 3), 1 / 3))


@pytest.mark.parametrize("t, s, dd, e, causal", [(1, 1, 1, 1, True), (4, 4, 3, 2, True),
                                                 (112, 112, 8, 8, True), (3, 6, 2, 5, False)])
def test_attention(go, t, s, dd, e, causal):
    rng = np.random.default_rng(t * 7 + s)
    q, k, v = (rng.standard_normal(x) for x in [(t, dd), (s, dd), (s, e)])
    scale = 1 / math.sqrt(dd)
    mask = ref_causal_mask(t) if causal else np.zeros((t, s))
    mask_src = "nn.causal_mask(q @ transpose(k))" if causal else "zeros(tensor[%dx%d])" % (t, s)
    (out,) = go("let q = %s\nlet k = %s\nlet v = %s\nprint nn.attention(q, k, v, %s, %r)"
                % (lit(q), lit(k), lit(v), mask_src, scale))
    close(out, ref_attention(q, k, v, mask, scale), atol=1e-12)
    if causal:   # the first query sees only the first key
        close(out[0], v[0])


# ---------------------------------------------------------------------------- finite differences
FD_STEP = 1e-5


def goat_fd(go, setup, forward, shape):
    """Central finite differences of sum(forward(x)) over each element of x (a goat expression
    of `x`), formed by goat: one pair of prints per element."""
    n, c = shape
    lines = [setup]
    for i in range(n):
        for j in range(c):
            e = np.zeros(shape)
            e[i, j] = FD_STEP
            for sign in "+-":
                lines.append("print row_sum(col_sum(%s))" % forward.replace("X", "(x %s %s)"
                                                                            % (sign, lit(e))))
    out = go("\n".join(lines))
    vals = np.array([o.item() for o in out])
    return ((vals[0::2] - vals[1::2]) / (2 * FD_STEP)).reshape(shape)


@pytest.mark.parametrize("n, c", [(1, 2), (3, 5), (4, 1)])
def test_layer_norm_back_against_finite_differences_in_goat(go, n, c):
    rng = np.random.default_rng(11 + n + c)
    h, g, t, d = draw(rng, n, c)
    setup = "let x = %s\nlet g = %s\nlet t = %s\nlet d = %s" % (lit(h), lit(g), lit(t), lit(d))
    fd = goat_fd(go, setup, "d * nn.layer_norm(X, g, t)", (n, c))
    (back,) = go(setup + "\nprint nn.layer_norm_back(d, x, g)")
    close(back, fd, rtol=0, atol=1e-7)


@pytest.mark.parametrize("n, c", [(1, 1), (3, 5), (2, 7)])
def test_softmax_rows_back_against_finite_differences_in_goat(go, n, c):
    rng = np.random.default_rng(23 + n + c)
    m, da = rng.standard_normal((n, c)) * 2, rng.standard_normal((n, c))
    setup = "let x = %s\nlet da = %s" % (lit(m), lit(da))
    fd = goat_fd(go, setup, "da * nn.softmax_rows(X)", (n, c))
    (back,) = go(setup + "\nprint nn.softmax_rows_back(nn.softmax_rows(x), da)")
    close(back, fd, rtol=0, atol=1e-7)


def numpy_fd(f, x):
    grad = np.empty_like(x)
    for idx in np.ndindex(*x.shape):
        e = np.zeros_like(x)
        e[idx] = FD_STEP
        grad[idx] = (f(x + e) - f(x - e)) / (2 * FD_STEP)
    return grad


def test_backward_functions_against_numpy_finite_differences_112x8(go):
    rng = np.random.default_rng(112)
    h, g, t, d = draw(rng, 112, 8)
    lnb, smb = go("let h = %s\nlet g = %s\nlet d = %s\nprint nn.layer_norm_back(d, h, g)\n"
                  "print nn.softmax_rows_back(nn.softmax_rows(h), d)" % (lit(h), lit(g), lit(d)))
    close(lnb, numpy_fd(lambda x: np.sum(d * ref_layer_norm(x, g, t)), h), rtol=0, atol=1e-7)
    close(smb, numpy_fd(lambda x: np.sum(d * ref_softmax(x)), h), rtol=0, atol=1e-7)


# ---------------------------------------------------------------------------- shapes
def test_one_def_on_several_shapes_in_one_program(go):
    a = np.array([[1.0, 2, 3], [4, 0, -1]])
    b = np.array([[0.5], [2], [-3], [7]])
    out = go("let a = %s\nlet b = %s\n"
             "print nn.softmax_rows(a)\nprint nn.softmax_rows(b)\n"
             "print nn.layer_norm(a, [[1, 2, 3]], [[0, 0, 1]])\n"
             "print nn.layer_norm(transpose(a), [[2, -1]], [[0.5, 0]])\n"
             "print nn.softmax_rows(transpose(b))" % (lit(a), lit(b)))
    assert [o.shape for o in out] == [(2, 3), (4, 1), (2, 3), (3, 2), (1, 4)]
    close(out[0], ref_softmax(a))
    assert np.array_equal(out[1], np.ones((4, 1)))
    close(out[2], ref_layer_norm(a, np.array([[1.0, 2, 3]]), np.array([[0.0, 0, 1]])), atol=1e-12)
    close(out[3], ref_layer_norm(a.T, np.array([[2.0, -1]]), np.array([[0.5, 0]])), atol=1e-12)
    close(out[4], ref_softmax(b.T))


def test_shapes_are_known_before_running(folder):
    p = goat.check_source("import nn\nlet a = nn.softmax_rows(zeros(tensor[3x5]))\n"
                          "let m = nn.causal_mask(zeros(tensor[6x6]))\n"
                          "let o = nn.attention(zeros(tensor[6x4]), zeros(tensor[9x4]), "
                          "zeros(tensor[9x2]), zeros(tensor[6x9]), 0.5)",
                          path=str(folder / "shapes.mg"))
    assert p.lets["a"].shape == (3, 5)
    assert p.lets["m"].shape == (6, 6)
    assert p.lets["o"].shape == (6, 2)


@pytest.mark.parametrize("call, var, col", [
    ("nn.layer_norm(h, [[1, 1]], [[0, 0, 0]])", "C", "[[1, 1]]"),
    ("nn.layer_norm_back(h, h, [[1, 1, 1, 1]])", "C", "[[1, 1, 1, 1]]"),
    ("nn.softmax_rows_back(h, transpose(h))", "", "transpose(h)"),
    ("nn.attention(h, h, h, zeros(tensor[2x3]), 1)", "S", "zeros(tensor[2x3])"),
    ("nn.causal_mask(h)", "T", "h)"),
])
def test_a_wrong_call_is_a_static_error_naming_the_size_variable(folder, tmp_path, call, var,
                                                                 col):
    prog = tmp_path / "wrong.mg"
    prog.write_text("import nn\nprint [[1]]\nlet h = [[1, 2, 3], [4, 5, 6]]\nprint %s\n" % call)
    status, out, err = cli("run", str(prog))
    assert (status, out) == (1, "")                       # nothing ran, not even line 2
    first = err.splitlines()[0]
    assert first.startswith("%s:4: error: " % prog)
    if var:
        assert "size variable %s " % var in first, first
    else:   # 2x3 and 3x2: either N or C is named
        assert re.search(r"size variable [NC] ", first), first
    caret_line = err.splitlines()[2]
    source_line = err.splitlines()[1]
    start = source_line.index(col)
    assert caret_line[start] == "^" and caret_line[:start].strip(" |") == ""


def test_wrong_number_of_arguments(folder):
    prog = folder / "arity.mg"
    prog.write_text("import nn\nprint nn.layer_norm([[1, 2]], [[1, 1]])\n")
    status, out, err = cli("run", str(prog))
    assert (status, out) == (1, "")
    assert err.splitlines()[0] == "%s:2: error: nn.layer_norm takes 3 arguments, got 2" % prog


def test_sizes_known_only_when_the_program_runs(folder, tmp_path):
    rng = np.random.default_rng(9)
    x, y = rng.standard_normal((4, 3)), rng.standard_normal((3, 5))
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "y.npy", y)
    out = goat.run_source('import nn\nlet x: tensor[?x3] = load("x.npy")\n'
                          'let y: tensor[?x?] = load("y.npy")\n'
                          "print nn.layer_norm(x, [[1, 2, 3]], [[0, 0, 1]])\n"
                          "print nn.softmax_rows(y)\nprint nn.log_softmax(y)\n"
                          "print nn.layer_norm_back(y, y, [[1, 1, 1, 1, 1]])\n",
                          path=str(tmp_path / "p.mg"))
    g, t = np.array([[1.0, 2, 3]]), np.array([[0.0, 0, 1]])
    close(out[0], ref_layer_norm(x, g, t), atol=1e-12)
    close(out[1], ref_softmax(y))
    close(out[2], ref_log_softmax(y), atol=1e-12)
    close(out[3], ref_layer_norm_back(y, y, np.ones((1, 5))), rtol=1e-10, atol=1e-10)
    # a wrong size is found when the call runs, at the call's line, after the earlier prints
    (tmp_path / "w.mg").write_text('import nn\nlet y: tensor[?x?] = load("y.npy")\nprint [[1]]\n'
                                   "print nn.layer_norm(y, [[1, 1, 1]], [[0, 0, 0]])\n")
    status, out, err = cli("run", "w.mg", cwd=str(tmp_path))
    assert status == 1 and out.endswith("[[1]]\n") and out.count("Unranked") == 1
    assert err.startswith("w.mg:4: error: argument h of nn.layer_norm must have shape ?x3 "
                          "(declared tensor[N, C] with C = 3), got 3x5")


def test_causal_mask_of_scores_sized_at_run_time(folder, tmp_path):
    y = np.random.default_rng(10).standard_normal((3, 5))
    np.save(tmp_path / "y.npy", y)
    src = 'import nn\nlet y: tensor[?x?] = load("y.npy")\nprint nn.causal_mask(y @ transpose(y))\n'
    (tmp_path / "p.mg").write_text(src)
    status, out, err = cli("run", "p.mg", cwd=str(tmp_path))
    assert (status, err) == (0, "")
    [m] = goat.run_source(src, path=str(tmp_path / "p.mg"))
    assert np.array_equal(m, ref_causal_mask(3))


# ---------------------------------------------------------------------------- the book's defs
def book_defs():
    with open(os.path.join(ROOT, "examples", "lm35", "train_200.mg")) as f:
        defs = [line.rstrip("\n") for line in f if line.startswith("def ")]
    names = [re.match(r"def (\w+)\(", d).group(1) for d in defs]
    assert names == ["softmax_rows", "ln_sigma", "ln_hat", "ln_out", "ln_back", "log_softmax"]
    return "\n".join(defs)


def block_causal_mask():
    mk = np.full((112, 112), -1e9)
    for s in range(16):
        mk[7 * s:7 * s + 7, 7 * s:7 * s + 7] = ref_causal_mask(7)
    return mk


BOOK = [("ln_out(h, g, t)", "nn.layer_norm(h, g, t)"),
        ("ln_back(d, h, g)", "nn.layer_norm_back(d, h, g)"),
        ("ln_hat(h)", "nn.ln_hat(h)"),
        ("ln_sigma(h)", "nn.ln_sigma(h)"),
        ("softmax_rows(s)", "nn.softmax_rows(s)"),
        ("log_softmax(z)", "nn.log_softmax(z)"),
        ("softmax_rows(q @ transpose(k) * 0.35355339059327373 + mk) @ v",
         "nn.attention(q, k, v, mk, 0.35355339059327373)")]


def test_nn_gives_the_bits_of_the_books_112_row_defs(go):
    rng = np.random.default_rng(35)
    h, g, t, d = draw(rng, 112, 8)
    q, k, v = (rng.standard_normal((112, 8)) for _ in range(3))
    data = "\n".join("let %s = %s" % (name, lit(x)) for name, x in [
        ("h", h), ("g", g), ("t", t), ("d", d), ("q", q), ("k", k), ("v", v),
        ("z", rng.standard_normal((112, 4)) * 3), ("mk", block_causal_mask()),
        ("s", rng.standard_normal((112, 112)) * 10)])
    # one program: goat's own == on the two results, every element equal
    checks = "\n".join("print row_sum(col_sum(%s == %s))" % pair for pair in BOOK)
    counts = go(book_defs() + "\n" + data + "\n" + checks)
    assert [c.item() for c in counts] == [112 * 8, 112 * 8, 112 * 8, 112, 112 * 112, 112 * 4,
                                          112 * 8]
    # two programs, so that nothing is shared between the two sides: the same bits
    book = go(book_defs() + "\n" + data + "\n" + "\n".join("print " + b for b, _ in BOOK))
    ours = go(data + "\n" + "\n".join("print " + n for _, n in BOOK))
    for (name, _), x, y in zip(BOOK, book, ours):
        assert x.shape == y.shape and x.tobytes() == y.tobytes(), name
    # and they are right
    close(ours[0], ref_layer_norm(h, g, t), atol=1e-12)
    close(ours[1], ref_layer_norm_back(d, h, g), rtol=1e-10, atol=1e-10)


def test_train_200_with_its_defs_replaced_by_nn_prints_the_same_bits(folder):
    # the book's whole 200-step training program, each 112-row def now a call of nn's
    with open(os.path.join(ROOT, "examples", "lm35", "train_200.mg")) as f:
        src = f.read()
    calls = {"softmax_rows": "nn.softmax_rows(m)", "ln_sigma": "nn.ln_sigma(h)",
             "ln_hat": "nn.ln_hat(h)", "ln_out": "nn.layer_norm(h, g, t)",
             "ln_back": "nn.layer_norm_back(d, h, g)", "log_softmax": "nn.log_softmax(z)"}
    lines, replaced = [], []
    for line in src.split("\n"):
        m = re.match(r"def (\w+)\((.*)\) = ", line)
        if m:
            line = "def %s(%s) = %s" % (m.group(1), m.group(2), calls[m.group(1)])
            replaced.append(m.group(1))
        lines.append(line)
    assert sorted(replaced) == sorted(calls)
    book = goat.run_source(src, path=str(folder / "book.mg"))
    ours = goat.run_source("import nn\n" + "\n".join(lines), path=str(folder / "ours.mg"))
    assert len(book) == len(ours) > 10
    for x, y in zip(book, ours):
        assert x.shape == y.shape and x.tobytes() == y.tobytes()


def test_several_attention_heads_as_docs_write_them_against_numpy():
    """docs/language.md's multi-head attention (heads a leading axis of the weights, summed by
    col_sum) against a NumPy version written separately: per head, per sequence, the causal
    softmax attention, then each head's output projection, added."""
    text = (Path(ROOT) / "docs" / "language.md").read_text()
    # (the section's second example: its first splits one matrix's columns with swapaxes,
    # tests/test_flat_parameters.py)
    start = text.index("Or the heads are a leading batch axis", text.index("### Several attention heads"))
    program = text[text.index("```goat\n", start) + 8:text.index("```", text.index("```goat\n", start) + 8)]
    program = program.replace("print row_sum(y)",
                              "print x\nprint wq\nprint wk\nprint wv\nprint wo\nprint y")
    x, wq, wk, wv, wo, y = run(program)
    want = np.zeros((8, 4))
    mask = np.triu(np.full((4, 4), -1e9), 1)
    for h in range(2):
        for s in range(2):
            rows = x[4 * s:4 * s + 4]
            q, k, v = rows @ wq[h], rows @ wk[h], rows @ wv[h]
            z = q @ k.T / np.sqrt(2) + mask
            a = np.exp(z - z.max(1, keepdims=True))
            a /= a.sum(1, keepdims=True)
            want[4 * s:4 * s + 4] += (a @ v) @ wo[h]
    np.testing.assert_allclose(y, want, rtol=1e-13, atol=1e-15)
