"""The benchmark's competitors, bench/numpy_loop.py and bench/torch_loop.py.

Each is run as its own process, as the benchmark runs it, and its output is checked for the
exact layout examples/lm35/train.mg prints and, through step 25 (while the chaotic training
is still reproducible across orders of arithmetic), for the numbers of the independent NumPy
trainer tests/lm35_reference.py.  Timings are not checked.
"""
from __future__ import annotations

import functools
import math
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench"
TESTS = Path(__file__).resolve().parent
for folder in (TESTS, BENCH):
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))

import lm35_reference as ref  # noqa: E402
import numpy_loop  # noqa: E402

STABLE = (0, 1, 10, 25)     # checkpoints compared digit for digit
HEADER = ("Unranked Memref base@ = 0x\u2026 rank = 2 offset = 0 sizes = [7, 7] "
          "strides = [7, 1] data = ")
NUM = r"(-?nan|-?inf|-?[0-9.]+(?:e[-+][0-9]+)?)"
LINES = [
    *(re.compile(r"step %d: loss %s, %s of 64 correct" % (k, NUM, NUM))
      for k in (0, 1, 10, 25, 50, 100, 150, 200)),
    re.compile(r"held out: loss %s, %s of 64 correct" % (NUM, NUM)),
    re.compile(r"all 64 sequences, by first token: %s %s %s %s \(of 64 each\)"
               % (NUM, NUM, NUM, NUM)),
    re.compile(r"attention of the first training sequence:"),
]


@functools.lru_cache(maxsize=None)
def reference_checkpoints() -> dict:
    """{k: (loss, correct)} of the reference trainer for the stable checkpoints."""
    _, record = ref.train(ref.data.initial_weights(), max(STABLE), checkpoints=STABLE)
    return record


def run_script(name: str) -> str:
    p = subprocess.run([sys.executable, str(BENCH / name)], capture_output=True, text=True,
                       timeout=300, cwd=str(TESTS))     # not the repository root: paths are
    assert p.returncode == 0, p.stderr                  # the script's own
    assert p.stderr == ""
    return p.stdout


def parse(out: str):
    """(the numbers of each summary line, the 7x7 attention) of a competitor's output."""
    assert out.endswith("]]\n")
    lines = out.split("\n")
    numbers = []
    for pattern, line in zip(LINES, lines):
        m = pattern.fullmatch(line)
        assert m, (pattern.pattern, line)
        numbers.append(m.groups())
    assert lines[len(LINES)] == HEADER
    rows = lines[len(LINES) + 1:-1]
    assert len(rows) == 7
    matrix = []
    for i, row in enumerate(rows):
        start = "[[" if i == 0 else " ["
        end = "]]" if i == 6 else "], "
        assert row.startswith(start) and row.endswith(end), row
        matrix.append(row[len(start):-len(end)].split(",   "))
    for cells in matrix:
        assert len(cells) == 7 and all(re.fullmatch(NUM, c) for c in cells), cells
    return numbers, np.array([[float(c) for c in cells] for cells in matrix])


def check_output(out: str):
    numbers, attention = parse(out)
    record = reference_checkpoints()
    for k, (loss, correct) in zip((0, 1, 10, 25, 50, 100, 150, 200), numbers):
        assert 0 <= float(correct) <= 64 and float(correct) == int(float(correct))
        if k in record:
            want_loss, want_correct = record[k]
            assert loss == "%g" % want_loss, (k, loss, want_loss)
            assert correct == "%g" % want_correct, (k, correct, want_correct)
    assert numbers[0] == ("1.49478", "11")
    held, chunks = numbers[8], numbers[9]
    assert 0 <= float(held[1]) <= 64 and math.isfinite(float(held[0]))
    assert all(0 <= float(c) <= 64 for c in chunks)
    # attention: causal, each row sums to 1 (to the 6 printed digits)
    assert np.all(attention[np.triu_indices(7, 1)] == 0)
    assert attention[0, 0] == 1
    np.testing.assert_allclose(attention.sum(axis=1), 1.0, atol=1e-5)


# --------------------------------------------------------------------------- NumPy

def test_numpy_loop_output():
    check_output(run_script("numpy_loop.py"))


def test_numpy_loop_numbers_to_rounding():
    """In-process, all digits: the loop agrees with the reference to rounding through step 25
    (the two add in different orders; measured about 3e-16 relative)."""
    data, weights = numpy_loop.load()
    with np.errstate(all="ignore"):
        _, f, seen = numpy_loop.train(data, weights, numpy_loop.causal_mask(), steps=25)
    record = reference_checkpoints()
    assert [k for k, _, _ in seen] == list(STABLE)
    for k, loss, correct in seen:
        assert loss == pytest.approx(record[k][0], rel=1e-12, abs=0), k
        assert correct == record[k][1], k
    # the final forward pass's attention is the reference's, per sequence
    w = ref.data.initial_weights()
    toks = ref.tokens(ref.data.TRAIN_TRIPLES)
    w25, _ = ref.train(w, 25, checkpoints=())
    np.testing.assert_allclose(f["a"][:7, :7], ref.attention(w25, toks, 0), rtol=1e-10,
                               atol=1e-15)


def test_numpy_loop_mask():
    mk = numpy_loop.causal_mask()
    assert mk.shape == (112, 112) and mk.dtype == np.float64
    assert mk[8, 7] == 0 and mk[7, 6] == -1e9 and mk[7, 8] == -1e9 and mk[111, 105] == 0
    assert (mk == 0).sum() == 16 * 28


def test_format_is_goats():
    """The competitors copy goat's print format (they must not import goat)."""
    from goat.interp.printer import format_memref
    with np.errstate(all="ignore"):
        m = np.array([[1.0, 0.0, -0.0, 1e-5, 0.123456789, -2.5e20, np.inf],
                      [-np.inf, np.float64(0.0) / 0.0, -np.nan, np.nan, 1e300, 3.0, 1 / 3],
                      *[[0.5] * 7] * 5])
    assert numpy_loop.format_matrix(m) == format_memref(m)


def test_loops_import_no_goat_or_generator():
    for name in ("numpy_loop.py", "torch_loop.py"):
        text = (BENCH / name).read_text()
        imports = re.findall(r"^\s*(?:import|from)\s+(\w+)", text, re.M)
        assert set(imports) <= {"__future__", "os", "sys", "time", "numpy", "torch"}, name


# --------------------------------------------------------------------------- PyTorch

def test_torch_loop_output():
    pytest.importorskip("torch")
    check_output(run_script("torch_loop.py"))


def test_torch_loop_without_torch_says_so():
    code = ("import sys, runpy; sys.modules['torch'] = None; "
            "runpy.run_path(%r, run_name='__main__')" % str(BENCH / "torch_loop.py"))
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 1
    assert p.stdout == ""
    assert p.stderr.count("\n") == 1 and "PyTorch is not installed" in p.stderr, p.stderr
