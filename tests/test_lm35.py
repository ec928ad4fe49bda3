"""Chapter 35's language model as real input for goat.

The programs come from ``examples/lm35/make_lm35.py``; every value goat
prints is compared with ``lm35_reference.py``, an independent NumPy trainer
(per-sequence 7x7 attention, explicit Jacobians), never with goat's own
earlier output.  Tolerances and why:

* goat against the reference, first 10 steps: 1e-9 relative.  The two
  compute in different orders, so they differ by rounding (measured about
  1e-15 relative); training only amplifies that after ~25 steps, and
  chaotically after ~60 (see examples/lm35/README.md).
* the reference's gradient against central differences (h = 1e-5, all 648
  weights): 1e-6 of the matrix's largest gradient (measured about 2e-9).
* goat's in-program central differences (h = 1e-3) against the gradient:
  5e-6 absolute.  The error is the h**2 truncation term: measured at most
  6e-8 on the seeded weights and 8e-7 on the perturbed ones.

The 200-step program runs too, compared digit for digit up to step 50 only:
training is chaotic after that.  Set LM35_FULL=1 to also check what the
run claims (it fits its data, it generalizes); a goat change that merely
reorders floating-point work may legitimately change those outcomes.
"""

from __future__ import annotations

import ast
import functools
import os
import re
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
LM35 = ROOT / "examples" / "lm35"
for folder in (LM35, Path(__file__).resolve().parent):
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))

import lm35_reference as ref  # noqa: E402
import make_lm35 as gen  # noqa: E402

RTOL = 1e-9
FD_PROGRAM_ATOL = 5e-6


@pytest.fixture(scope="module")
def goat():
    import goat as goat_module
    return goat_module


@functools.lru_cache(maxsize=None)
def expected(steps: int) -> tuple:
    return tuple(ref.expected_prints(steps=steps))


def perturbed_weights(seed: int = 5) -> dict:
    """The seeded weights plus N(0, 0.3^2) noise everywhere.

    At the seeded start every gain is 1 and every shift 0, which would hide
    a backward pass that mixes up a gain with 1 or drops a shift; these
    weights do not.
    """
    rng = np.random.default_rng(seed)
    return {k: v + 0.3 * rng.standard_normal(v.shape)
            for k, v in gen.initial_weights().items()}


WEIGHT_SETS = {
    "seeded": gen.initial_weights,
    "perturbed": perturbed_weights,
}


def assert_prints_match(got: list, want: list, layout: list, rtol: float = RTOL):
    assert len(got) == len(want) == len(layout), (len(got), len(want), len(layout))
    for item, g, w in zip(layout, got, want):
        g = np.asarray(g, dtype=np.float64)
        if item[0] == "attention":
            assert g.shape == (7, 7), item
            np.testing.assert_allclose(g, w, rtol=rtol, atol=1e-15, err_msg=str(item))
        else:
            assert g.shape == (1, 1), (item, g.shape)
            if item[0] in ("loss", "held_loss"):
                assert g.item() == pytest.approx(w, rel=rtol, abs=0), item
            else:
                assert g.item() == w, item   # counts are exact


# ---------------------------------------------------------------------------
# The reference on its own
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("which", sorted(WEIGHT_SETS))
def test_reference_gradient_matches_finite_differences(which):
    w = WEIGHT_SETS[which]()
    toks = ref.tokens(gen.TRAIN_TRIPLES)
    grads = ref.gradients(w, toks)
    h = 1e-5

    def loss(ws):
        return ref.loss_and_correct(ws, toks)[0]

    for p in gen.PARAM_NAMES:
        fd = np.zeros_like(w[p])
        for i in range(w[p].size):
            plus = dict(w)
            minus = dict(w)
            plus[p] = w[p].copy()
            minus[p] = w[p].copy()
            plus[p].flat[i] += h
            minus[p].flat[i] -= h
            fd.flat[i] = (loss(plus) - loss(minus)) / (2 * h)
        scale = np.max(np.abs(grads[p]))
        assert scale > 0, p
        err = np.max(np.abs(fd - grads[p]))
        assert err <= 1e-6 * scale, (p, err, scale)


def test_reference_loss_by_hand():
    """Loss and count of the reference, checked on a hand-made case."""
    w = gen.initial_weights()
    toks = ref.tokens(gen.TRAIN_TRIPLES)
    cache = ref.forward(w, toks)
    loss, correct = ref.loss_and_correct(w, toks, cache)
    # a plain per-position loop over the 64 scored predictions
    total, right = 0.0, 0
    for s, seq in enumerate(toks):
        for i in (2, 3, 4, 5):
            z = cache["lg"][s, i]
            p = np.exp(z - z.max())
            p /= p.sum()
            total -= np.log(p[seq[i + 1]])
            right += int(z[seq[i + 1]] == z.max())
    assert loss == pytest.approx(total / 64, rel=1e-13)
    assert correct == right
    # attention is causal and sums to 1 in every row
    a = cache["a"]
    assert np.all(a[:, ~ref.TRIL] == 0)
    np.testing.assert_allclose(a.sum(axis=-1), 1.0, rtol=1e-14)


# ---------------------------------------------------------------------------
# The generator's data and text, without goat
# ---------------------------------------------------------------------------

def test_data_matches_the_task():
    assert len(set(gen.TRAIN_TRIPLES)) == 16 and len(set(gen.HELDOUT_TRIPLES)) == 16
    assert not set(gen.TRAIN_TRIPLES) & set(gen.HELDOUT_TRIPLES)
    assert sorted(sum(gen.CHUNKS, [])) == sorted(gen.ALL_TRIPLES)
    assert len(set(gen.ALL_TRIPLES)) == 64
    x, y = gen.batch(gen.TRAIN_TRIPLES)
    mr = gen.scored_rows()
    assert np.all(x.sum(axis=1) == 1)
    assert np.array_equal(y.sum(axis=1, keepdims=True), mr)
    assert mr.sum() == 64
    for r in np.flatnonzero(mr[:, 0]):
        # the next token is the token two places back
        assert np.argmax(y[r]) == np.argmax(x[r - 2])
    mk = gen.causal_mask()
    rows, cols = np.indices(mk.shape)
    allowed = (rows // 7 == cols // 7) & (cols <= rows)
    assert np.array_equal(mk == 0, allowed)
    assert np.all(mk[~allowed] == -1e9)
    ps = gen.stacked_positions()
    np.testing.assert_allclose(ps[:7, 0], np.sin(np.arange(7)), rtol=1e-15)
    np.testing.assert_allclose(ps[:7, 7], np.cos(np.arange(7) / 1000.0), rtol=1e-15)
    assert np.array_equal(ps[7:14], ps[:7])
    w = gen.initial_weights()
    assert sum(v.size for v in w.values()) == gen.N_WEIGHTS == 648


def _statements(text: str):
    """(kind, name, text) of each statement; literals may span lines."""
    out, buf, depth = [], [], 0
    for line in text.splitlines():
        code = line.split("#", 1)[0]
        if not code.strip() and depth == 0:
            continue
        buf.append(code)
        depth += code.count("[") + code.count("(") - code.count("]") - code.count(")")
        if depth == 0:
            stmt = " ".join(buf).strip()
            buf = []
            m = re.match(r"(def|let)\s+(\w+)", stmt)
            out.append((m.group(1), m.group(2), stmt) if m else ("print", None, stmt))
    assert depth == 0
    return out


@pytest.mark.parametrize("kind", ["let", "nested", "gradcheck"])
def test_program_text_is_well_formed(kind):
    steps = 12
    if kind == "let":
        text = gen.training_program(steps)
    elif kind == "nested":
        text = gen.nested_training_program(steps)
    else:
        text = gen.gradcheck_program()
    stmts = _statements(text)
    names = [n for k, n, _ in stmts if k != "print"]
    assert len(names) == len(set(names)), "a name is defined twice"
    prints = [s for k, _, s in stmts if k == "print"]
    if kind == "gradcheck":
        assert len(prints) == 16 + 32
    else:
        assert len(prints) == len(gen.print_layout(steps))
    # the starting weights are written exactly
    literals = {n: s for k, n, s in stmts if k == "let"}
    for p, w in gen.initial_weights().items():
        lit = literals[f"{p}_0"].split("=", 1)[1]
        assert np.array_equal(np.array(ast.literal_eval(lit.strip())), w), p
    if kind == "nested":
        ge_def = next(s for k, n, s in stmts if n == "Ge")
        assert ge_def.count("tensor[") == 16
        assert f"let e_{steps} = e_{steps - 1} - Ge(e_{steps - 1}, g1_{steps - 1}," in text


def test_generated_files_are_current(tmp_path):
    written = gen.write_default_files(tmp_path)
    assert sorted(p.name for p in written) == sorted(gen.DEFAULT_FILES)
    for path in written:
        on_disk = LM35 / path.name
        assert on_disk.exists(), f"{on_disk} is missing: run make_lm35.py"
        assert on_disk.read_text() == path.read_text(), (
            f"{on_disk.name} is stale: run python examples/lm35/make_lm35.py")


def test_data_files_are_current(tmp_path):
    """examples/lm35/data holds exactly what write_data writes, byte for byte."""
    written = gen.write_data(tmp_path / "data")
    folder = LM35 / "data"
    assert folder.is_dir(), f"{folder} is missing: run make_lm35.py"
    assert sorted(p.name for p in folder.iterdir()) == sorted(p.name for p in written), (
        "examples/lm35/data has other files than make_lm35.py writes")
    for path in written:
        assert (folder / path.name).read_bytes() == path.read_bytes(), (
            f"data/{path.name} is stale: run python examples/lm35/make_lm35.py")


def _data_literals(text: str) -> dict:
    """The literal matrices a training program defines before step 0, by name."""
    head = text.split("# ---- step 0:", 1)[0]
    out = {}
    for kind, name, stmt in _statements(head):
        if kind == "let":
            lit = stmt.split("=", 1)[1].strip()
            if lit.startswith("["):
                out[name] = np.array(ast.literal_eval(lit), dtype=np.float64)
    return out


def test_data_files_hold_the_literals_of_train_200():
    """Each .npy file holds, to the bit, the literal of train_200.mg it stands for.

    Read from the program's text (not from the generator), so a change in either shows.
    """
    literals = _data_literals((LM35 / "train_200.mg").read_text())
    names = {"x": "x", "y": "y", "mr": "mr", "ps": "ps", "sel": "sel",
             "held_x": "x_held", "held_y": "y_held"}
    for c in range(4):
        names[f"all{c}_x"], names[f"all{c}_y"] = f"x_all{c}", f"y_all{c}"
    for p in gen.PARAM_NAMES:
        names[f"init_{p}"] = f"{p}_0"
    files = {path.stem for path in (LM35 / "data").glob("*.npy")}
    assert files == set(names)          # all of them, and no mask
    for stem, let in names.items():
        a = np.load(LM35 / "data" / f"{stem}.npy", allow_pickle=False)
        want = literals[let]
        assert a.dtype == np.float64 and a.flags.c_contiguous, stem
        assert a.shape == want.shape, (stem, a.shape, want.shape)
        assert a.tobytes() == want.tobytes(), stem        # same bits, -0.0 included
    assert literals["x"].shape == (112, 4) and literals["ps"].shape == (112, 8)
    assert literals["sel"].shape == (7, 112) and literals["mr"].shape == (112, 1)
    # the mask the data files leave out follows the rule a program computes it by
    rows, cols = np.indices((112, 112))
    rule = np.where((rows // 7 == cols // 7) & (cols <= rows), 0.0, -1000000000.0)
    assert np.array_equal(literals["mk"], rule)


def test_command_line_writes_data(tmp_path):
    assert gen.main(["--data", str(tmp_path / "d"), "--seed", "8"]) == 0
    want = gen.data_arrays(8)
    assert sorted(p.stem for p in (tmp_path / "d").iterdir()) == sorted(want)
    for name, a in want.items():
        assert np.array_equal(np.load(tmp_path / "d" / f"{name}.npy"), a), name
    assert not np.array_equal(want["init_e"], gen.data_arrays()["init_e"])
    with pytest.raises(SystemExit):
        gen.main(["--data", str(tmp_path / "d"), "--steps", "3"])


def test_command_line_writes_one_program(tmp_path):
    out = tmp_path / "t3.mg"
    assert gen.main(["--steps", "3", "-o", str(out)]) == 0
    assert out.read_text() == gen.training_program(3)
    out = tmp_path / "n2.mg"
    assert gen.main(["--steps", "2", "--nested", "-o", str(out)]) == 0
    assert out.read_text() == gen.nested_training_program(2)


# ---------------------------------------------------------------------------
# goat against the reference
# ---------------------------------------------------------------------------

def test_train_10_matches_reference(goat):
    got = goat.run_file(str(LM35 / "train_10.mg"), stdout=None)
    assert_prints_match(got, list(expected(10)), gen.print_layout(10))


@pytest.mark.parametrize("which", sorted(WEIGHT_SETS))
def test_gradient_check_program(goat, which):
    w = WEIGHT_SETS[which]()
    grads = ref.gradients(w, ref.tokens(gen.TRAIN_TRIPLES))
    # besides the first weight, the one with the largest gradient
    extra = {p: 1 + int(np.argmax(np.abs(grads[p].ravel()[1:]))) for p in gen.PARAM_NAMES}
    h = gen.DEFAULT_FD_STEP
    got = goat.run_source(gen.gradcheck_program(extra=extra, h=h, weights=w),
                          path=f"<gradcheck {which}>", stdout=None)
    assert len(got) == 16 + 32
    for p, g in zip(gen.PARAM_NAMES, got[:16]):
        g = np.asarray(g, dtype=np.float64)
        assert g.shape == grads[p].shape, p
        scale = np.max(np.abs(grads[p]))
        np.testing.assert_allclose(g, grads[p], rtol=RTOL, atol=1e-12 * scale, err_msg=p)
    for (p, idx), diff in zip(gen.gradcheck_layout(extra), got[16:]):
        diff = np.asarray(diff, dtype=np.float64)
        assert diff.shape == (1, 1), p
        fd = diff.item() / (2 * h)
        assert abs(fd - grads[p].flat[idx]) <= FD_PROGRAM_ATOL, (p, idx, fd, grads[p].flat[idx])


def test_nested_defs_compute_the_same(goat):
    steps = 3
    lets = goat.run_source(gen.training_program(steps), path="<lets>", stdout=None)
    nested = goat.run_source(gen.nested_training_program(steps), path="<nested>",
                             stdout=None)
    layout = gen.print_layout(steps)
    assert_prints_match(lets, list(expected(steps)), layout)
    assert len(nested) == len(lets)
    for item, a, b in zip(layout, lets, nested):
        np.testing.assert_allclose(np.asarray(b, dtype=np.float64), a,
                                   rtol=1e-12, atol=1e-300, err_msg=str(item))


@functools.lru_cache(maxsize=None)
def _train_200_values(goat) -> dict:
    got = goat.run_file(str(LM35 / "train_200.mg"), stdout=None)
    layout = gen.print_layout(200)
    assert len(got) == len(layout)
    return dict(zip(layout, (np.asarray(v, dtype=np.float64) for v in got)))


def test_train_200_agrees_while_training_is_stable(goat):
    """The full 14,529-line program: digits while they are reproducible.

    Up to step 25 goat and the reference agree to rounding (measured 7e-16
    relative); by step 50 the differences in operation order have grown to
    about 2e-8; after that the run is chaotic and only claims are checked
    (test_train_200_learns).
    """
    values = _train_200_values(goat)
    want = dict(zip(gen.print_layout(200), expected(200)))
    for k, rtol in ((0, RTOL), (1, RTOL), (10, RTOL), (25, RTOL), (50, 1e-6)):
        assert values[("loss", k)].item() == pytest.approx(want[("loss", k)], rel=rtol), k
        assert values[("correct", k)].item() == want[("correct", k)], k
    for key, v in values.items():
        if key[0] == "attention":
            assert v.shape == (7, 7)
            np.testing.assert_allclose(v.sum(axis=1), 1.0, rtol=1e-12)
            assert np.all(v[np.triu_indices(7, 1)] == 0)     # the mask works
        else:
            assert v.shape == (1, 1)
            if "correct" in key[0]:
                assert v.item() in range(65), key


@pytest.mark.skipif(not os.environ.get("LM35_FULL"),
                    reason="chaotic after step 60: set LM35_FULL=1 to check the claims")
def test_train_200_learns(goat):
    """The experiment's claims for the seeded run, not its digits.

    In 20 reference runs nudged by 1e-12 every run fitted the training data
    and got at least 252 of 256, but one differently ordered computation can
    still land elsewhere, so this is opt-in.
    """
    values = _train_200_values(goat)
    assert values[("loss", 200)].item() < 0.01
    assert values[("correct", 200)].item() == 64
    assert values[("held_correct",)].item() >= 60
    assert sum(values[("chunk_correct", c)].item() for c in range(4)) >= 250
    attention = values[("attention",)]
    for i in range(2, 7):   # each scored position looks two places back most
        assert np.argmax(attention[i]) == i - 2, (i, attention[i])


# ---------------------------------------------------------------------------
# the loop: examples/lm35/train.mg
# ---------------------------------------------------------------------------

_MEMREF_HEADER = "Unranked Memref base@ = 0x\u2026 rank = 2 offset = 0 sizes = [7, 7]"


def _loop_numbers(text):
    """The numbers train.mg prints, in train_200.mg's print order, as printed (%g)."""
    lines = text.splitlines()
    out = []
    for k in gen.CHECKPOINTS:
        m = re.fullmatch(r"step %d: loss (\S+), (\S+) of 64 correct" % k, lines.pop(0))
        assert m, k
        out += [m.group(1), m.group(2)]
    m = re.fullmatch(r"held out: loss (\S+), (\S+) of 64 correct", lines.pop(0))
    out += [m.group(1), m.group(2)]
    m = re.fullmatch(r"all 64 sequences, by first token: (\S+) (\S+) (\S+) (\S+) \(of 64 each\)",
                     lines.pop(0))
    out += list(m.groups())
    assert lines.pop(0) == "attention of the first training sequence:"
    return out, "\n".join(lines) + "\n"


def test_train_loop_prints_what_the_unrolled_program_prints():
    """examples/lm35/train.mg (a loop, a page) against train_200.mg (14,529 lines, unrolled):
    the same weights, data and arithmetic, so every printed digit is equal."""
    import io
    import goat as goat_api
    loop_out, unrolled_out = io.StringIO(), io.StringIO()
    goat_api.run_file(str(LM35 / "train.mg"), stdout=loop_out)
    goat_api.run_file(str(LM35 / "train_200.mg"), stdout=unrolled_out)
    numbers, attention = _loop_numbers(loop_out.getvalue())
    blocks = unrolled_out.getvalue().split("Unranked Memref")[1:]
    assert len(blocks) == len(numbers) + 1 == 23
    for got, block in zip(numbers, blocks):
        assert block.endswith("data = \n[[%s]]\n" % got)
    assert attention.startswith(_MEMREF_HEADER)
    assert "Unranked Memref" + blocks[-1] == attention
    # the checkpoints on the way are those the independent reference trainer computes while
    # the run is stable (examples/lm35/README.md): the loop is right, not only consistent
    want = dict(zip(gen.print_layout(200), expected(200)))
    for i, k in enumerate(gen.CHECKPOINTS[:4]):
        assert float(numbers[2 * i]) == pytest.approx(want[("loss", k)], rel=1e-5)
        assert float(numbers[2 * i + 1]) == want[("correct", k)]
