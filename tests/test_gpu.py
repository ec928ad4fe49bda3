"""The GPU back end's contract, tested without a GPU (issue 8, point 7).

* the test back end (goat/gpu/guard.py: NumPy arrays that refuse to be read on the host) runs
  the very code the CuPy back end runs, fusion included, and must print what the NumPy back
  end prints, bit for bit, while making no host round trip but the ones named;
* every elementwise op's generated kernel body (goat/gpu/kernels.py) is compiled as C by the
  host's compiler and checked against NumPy on special values;
* ``--backend cupy`` without CuPy is a clear error; ``auto`` chooses from the program's cost;
* the tests that need CuPy and a CUDA device skip without them.
"""
from __future__ import annotations

import ctypes
import io
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import goat
from goat.api import _load, read_source
from goat.diagnostics import GoatError, Source
from goat.gpu import NumpyBackend, cupy_usable, get_backend
from goat.gpu import kernels
from goat.gpu.guard import GuardBackend, HostRoundTrip
from goat.interp.evaluator import Evaluator
from goat.ops.registry import REGISTRY

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"


def _run(program, be):
    out = io.StringIO()
    ev = Evaluator(program, be, out=out, keep_printed=True)
    if isinstance(be, GuardBackend):
        be.counter.watch_effects(ev)
    ev.run()
    return out.getvalue(), ev.printed


def _program(text, tmp_path=None, name="p.mg"):
    path = str(tmp_path / name) if tmp_path is not None else "<test>"
    if tmp_path is not None:
        Path(path).write_text(text)
        return _load(read_source(path))
    return goat.check_source(text, path)


def _same_bits(a, b):
    if isinstance(a, str) or isinstance(b, str):
        return a == b
    a, b = np.asarray(a), np.asarray(b)
    return a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()


# programs touching every op, the special values, blocks and the trainer's verbs
OPS_PROGRAM = """
let a = [[1.5, -2.0, 0.0], [3.0, -0.0, 4.0]]
let z = [[0.0, 1.0, -1.0], [0.0, -0.0, 2.0]]
print a + z
print a - z * 2.0
print a / z
print z / z
print -a
print exp(a) + log(a) + sqrt(a)
print abs(a) + floor(a * 0.7) + relu(a) + sigmoid(a) + tanh(a)
print sin(a) * cos(a)
print maximum(a, z)
print minimum(a, z)
print maximum(z, -z)
print minimum(-z, z)
print a % 2.5
print (-a) % 2.5
print a % z
print where(a > 0, log(a), z / z) + where(z, 1.0, 2.0)
print (a > z) + (a >= z) * 2 + (a < z) * 4 + (a <= z) * 8 + (a == z) * 16 + (a != z) * 32
print (a and z) + (a or z) * 2 + (not a) * 4
print row_sum(a) + row_mean(a)
print row_max(z)
print row_min(z)
print col_max(a / z)
print col_min(a)
print a @ transpose(a)
print reshape(a, tensor[3x2])
print iota(tensor[2x3], 1) + iota(tensor[2x3], 0)
print rand(tensor[2x2], 3) + randn(tensor[2x2], 4)
let emb = [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]
let ids = [[2.0], [0.0], [2.0]]
print gather(emb, ids)
print onehot(ids, 3)
print argmax_rows(a)
def softmax_like(x: tensor[2x3]) = exp(x) / row_sum(exp(x))
print sample_rows(softmax_like(a), 5)
print argsort([[3, 1, 2, 1], [0, -1, 5, 5]] * a[0, 0]) + randperm(4, 9)
"""

CONTROL_PROGRAM = """
var w = [[0.5, -0.25], [0.125, 1.0]]
var total = [[0.0]]
for step in 0 .. 12 {
  let x = [[1.0, 2.0], [3.0, 4.0]] * (step + 1)
  let h = tanh(x @ w)
  let loss = row_sum(col_sum(h * h)) / 4.0
  let g = grad(loss, w)
  w = w - 0.05 * g
  if step % 4 == 0 {
    total = total + loss
  } else {
    total = total - 0.001 * loss
  }
}
print w
print total
"""

LAYER_NORM = """
let x = [[1.0, 2.0, 4.0, 8.0], [0.5, -1.0, 3.0, 2.0]]
let g = [[1.0, 0.5, 2.0, 1.5]]
let b = [[0.1, 0.2, 0.3, 0.4]]
let mean = row_mean(x)
let centered = x - mean
let variance = row_mean(centered * centered)
print (x - mean) / sqrt(variance + 0.00001) * g + b
"""


# NaNs made by matrix products (0 * inf), read by every kind of op: cuBLAS makes its own NaNs
# positive (tests/fake_cupy.py does too), x86 gives them the sign bit
MATMUL_NANS = """
let a = [[0.0, 1.0], [2.0, 3.0]]
let b = [[1.0, 1.0], [1.0, 2.0]] + [[1.0, 0.0], [0.0, 0.0]] / [[0.0, 1.0], [1.0, 1.0]]
let p = a @ b
print p
print p * 2 + 1
print row_sum(p)
print col_max(p)
print reshape(p, tensor[1x4])
print p @ a
print transpose(p) @ a
let q = reshape(a @ b, tensor[1x4]) * 3
print q
var w = [[0.5, 0.25], [0.125, 1.0]]
let l = row_sum(col_sum(tanh(b @ w)))
print grad(l, w)
print ((a * 2) @ b) * 2 + 1
print (((a * 3) @ b) @ a) - 1
print row_max(((a * 4) @ b) * 1)
print -((a * 5) @ b)
print row_max((a * 6) @ b) + col_sum(transpose((a * 7) @ b))
print reshape((a * 8) @ b, tensor[1x4]) * 2
print transpose(reshape((a * 9) @ b, tensor[2x2])) + 1
print reshape((a * 10) @ b, tensor[2x2]) @ a
"""


# an optimizer's state: AdamW's new moments are each read by the new weight and carried to the
# next step (extra outputs of the weight's kernel); a (1x3) moment read by a (2x3) update and
# a moment printed in the middle of the step are not
OPTIMIZER_STATE = """
import optim
var w = [[0.5, -0.25, 1.0], [0.125, 1.0, -2.0]]
var m = zeros(tensor[2x3])
var v = zeros(tensor[2x3])
var u = [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]
var mb = zeros(tensor[1x3])
var s = zeros(tensor[2x3])
for step in 0 .. 6 {
    let l = row_sum(col_sum(tanh(w * u) * tanh(w * u)))
    let gw, gu = grad(l, w, u)
    w, m, v = optim.adamw(w, gw, m, v, step + 1, 0.01, 0.9, 0.999, 1e-08, 0.01)
    mb = mb * 0.9 + col_sum(gu)
    u = u - 0.1 * mb
    s = s * 0.5 + gu
    print "s {row_sum(col_sum(s))}"
    u = u + 0.001 * s
}
print w
print m
print v
print u
print mb
"""


@pytest.fixture(scope="module")
def lm35_programs():
    return [EXAMPLES / "tour.mg", EXAMPLES / "lm35" / "train_10.mg",
            EXAMPLES / "lm35" / "train_grad.mg", EXAMPLES / "batched_trainer.mg",
            EXAMPLES / "gpt.mg"]


# ---------------------------------------------------------------- the test back end

@pytest.mark.parametrize("text", [OPS_PROGRAM, CONTROL_PROGRAM, LAYER_NORM, MATMUL_NANS,
                                  OPTIMIZER_STATE],
                         ids=["ops", "control", "layer_norm", "matmul_nans", "optimizer"])
@pytest.mark.parametrize("dtype", ["f64", "f32"])
def test_guard_prints_numpy_bits(text, dtype):
    """The generic device code (what CuPy runs, fused) gives the NumPy back end's bits."""
    program = _program(text)
    text_np, printed_np = _run(program, get_backend("numpy", dtype=dtype))
    text_g, printed_g = _run(program, GuardBackend(dtype))
    assert text_g == text_np
    assert len(printed_g) == len(printed_np)
    for a, b in zip(printed_g, printed_np):
        assert _same_bits(a, b)
        if not isinstance(a, str):
            assert a.dtype == np.dtype({"f64": np.float64, "f32": np.float32}[dtype])


def test_guard_runs_the_examples_bit_for_bit(lm35_programs):
    for path in lm35_programs:
        program = _load(read_source(str(path)))
        text_np, printed_np = _run(program, get_backend("numpy"))
        be = GuardBackend()
        text_g, printed_g = _run(program, be)
        assert text_g == text_np, path
        assert all(_same_bits(a, b) for a, b in zip(printed_g, printed_np)), path
        assert max(len(spec[1]) for spec in be.groups) > 1, path      # chains were fused
        # values leave the device only to be printed (a format string's fields each)
        assert be.counter.stray_downloads == 0, path
        assert be.counter.downloads >= len(printed_np), path


def test_a_load_reads_its_name_fields_on_the_host_only(tmp_path):
    """A file name's {fields} are read as numbers, as a seed is: the values loaded are
    NumPy's, and nothing else crosses to the host."""
    for i in range(3):
        np.save(tmp_path / ("x_%d.npy" % i), np.arange(4.0).reshape(2, 2) * i)
    text = ('let k = row_sum([[1.0, 1.0]])\nvar acc = zeros(tensor[2x2])\n'
            'for i in 0..3 {\n    acc = acc + load("x_{i}.npy", tensor[2x2]) * 2\n}\n'
            'print acc + load("x_{k}.npy", tensor[2x2])\n')
    program = _program(text, tmp_path)
    text_np, printed_np = _run(program, get_backend("numpy"))
    be = GuardBackend()
    text_g, printed_g = _run(program, be)
    assert text_g == text_np
    assert printed_g[0].tolist() == (np.arange(4.0).reshape(2, 2) * 8).tolist()
    assert be.counter.stray_downloads == 0
    assert be.counter.reads == 1            # k, computed on the device; i is the loop's


def test_an_assert_that_holds_lets_the_device_run_on():
    """An assert reads its condition (on the host already for numbers of the program, so no
    read) and does not wait for the device's held checks unless it fails: the first failing
    gather's check, held, is the error then, before the assert's."""
    text = ('let t = [[1, 2], [3, 4]]\nvar s = zeros(tensor[1x2])\nfor i in 0..3 {\n'
            '    s = s + gather(t, reshape(i % 2, tensor[1x1]))\n    assert i + 1 >= 1, "t"\n}\nprint s\n')
    be = GuardBackend()
    text_g, _ = _run(_program(text), be)
    assert text_g == _run(_program(text), get_backend("numpy"))[0]
    without = GuardBackend()
    _run(_program(text.replace('    assert i + 1 >= 1, "t"\n', "")), without)
    # the held checks are read once, at the print, with the asserts or without them
    assert be.counter.reads == without.counter.reads == 1
    bad = ('let t = [[1, 2], [3, 4]]\nlet k = row_sum([[1.0, 1.0]]) * 3\n'
           'let g = gather(t, reshape(k, tensor[1x1]))\nassert 0, "the assert"\nprint g\n')
    with pytest.raises(GoatError) as info:
        _run(_program(bad), GuardBackend())
    assert info.value.line == 3 and "indices" in info.value.message


def test_host_reads_are_the_named_ones_only():
    """An if reads its condition when the device computed it (12 times here; a condition of
    numbers only, step % 4 == 0, is computed on the host, as the CuPy back end computes it: no
    read), a loop its bounds when they are computed (numbers written in the program are no
    read), a draw its seed; printing copies once per print; nothing else crosses to the
    host."""
    program = _program(CONTROL_PROGRAM)
    be = GuardBackend()
    _run(program, be)
    assert be.counter.reads == 0
    assert be.counter.downloads == 2
    program = _program(CONTROL_PROGRAM.replace("if step % 4 == 0", "if loss > 0.5"))
    be = GuardBackend()
    _run(program, be)
    assert be.counter.reads == 12
    assert be.counter.downloads == 2
    program = _program("let r = randn(tensor[3x3], 9)\nprint r @ r\n")
    be = GuardBackend()
    _run(program, be)
    assert (be.counter.reads, be.counter.downloads) == (0, 1)      # the seed is written
    program = _program("let s = row_sum([[2.0, 3.0]])\nprint rand(tensor[2], s)\n")
    be = GuardBackend()
    _run(program, be)
    assert (be.counter.reads, be.counter.downloads) == (1, 1)      # the seed is computed


# ---------------------------------------------------------------- checks of values, held

def _outcome(program, be):
    """(printed text, (message, line, column, notes) of the error or None) of a run."""
    out = io.StringIO()
    ev = Evaluator(program, be, out=out, keep_printed=True)
    try:
        ev.run()
    except goat.GoatError as e:
        return out.getvalue(), (e.message, e.loc.line, e.loc.col, e.notes)
    return out.getvalue(), None


HELD_CHECKS = {
    # a lookup made bad by the loop's index, between two prints
    "gather_in_loop": """
let table = [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]
for step in 0 .. 6 {
    print "before {step}"
    let i = [[1.0], [0.0]] + [[0.0], [1.0]] * step
    let rows = gather(table, i)
    print "after {row_sum(col_sum(rows))}"
}
""",
    # the bad lookup inside a def: the error's notes name the call; a later error in the same
    # iteration (a run-time size check) must not be the one reported
    "in_a_def_then_another_error": """
def pick(t: tensor[3x2], i: tensor[?x1]) -> tensor[?x2] = gather(t, i)
let table = [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]
var total = [[0.0]]
for step in 0 .. 4 {
    let r = pick(table, [[1.0]] * (step + 3))
    let s: tensor[2x2] = r
    total = total + row_sum(col_sum(s))
}
print total
""",
    # onehot (cross-entropy's) and a fractional index, in the last iteration; the print after
    # the loop must not appear
    "onehot_fraction": """
var acc = [[0.0]]
for step in 0 .. 3 {
    let o = onehot([[0.0], [1.0]] * (step * 0.75), 3)
    acc = acc + row_sum(col_sum(o))
}
print acc
""",
    "sample_rows_bad_row": """
for step in 0 .. 3 {
    let p = [[0.5, 0.5], [1.0, 0.0]] - [[0.0, 0.0], [1.0, 0.0]] * step
    print "step {step}: {row_sum(col_sum(sample_rows(p, 7)))}"
}
""",
    # found by an attack on the held checks: a print without fields showed before the error
    "plain_print_after": """
let n = row_sum(col_sum([[1.0]]))
let t = [[1.0], [2.0]]
let g = gather(t, [[5.0]] * n)
print "mid"
""",
    # ... and in a loop whose if reads a number already on the host
    "print_under_a_host_if": """
let t = [[1.0], [2.0], [3.0]]
for a in 0 .. 5 {
    let g = gather(t, [[1.0]] * a)
    if a > 1 {
        print "big"
    }
}
""",
    # the check's notes (the def it is in) survive an if, a loop bound, a module's def
    "notes_survive_an_if": """
def pick(t: tensor[3x2], i: tensor[?x1]) -> tensor[?x2] = gather(t, i)
let table = [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]
let n = row_sum(col_sum([[2.0]]))
let r = pick(table, [[1.0]] * n * 3)
if n > 1 {
    print n
}
""",
    "notes_survive_a_loop_bound": """
import nn
let n = row_sum(col_sum([[2.0]]))
let l = nn.cross_entropy([[0.5, 0.25]], [[7.0]] * n)
for k in 0 .. n {
    print "k {k}"
}
""",
    "no_spurious_notes": """
let t = [[1.0], [2.0]]
let g = gather(t, [[1.0]] * row_sum(col_sum([[9.0]])))
def f(x: tensor[1x1]) {
    var s = x
    for k in 0 .. row_sum(col_sum(x)) {
        s = s + 1
    }
    return s
}
print f([[2.0]])
""",
    "onehot_of_no_classes": """
let n = row_sum(col_sum([[1.0]]))
print "before"
let o = onehot([[0.0]] * n, 0)
print "after"
""",
    "grad_of_a_lookup": """
var e = [[0.1, 0.2], [0.3, 0.4]]
for step in 0 .. 3 {
    let l = row_sum(col_sum(gather(e, [[0.0], [1.0]] * step)))
    e = e - 0.1 * grad(l, e)
    print e
}
""",
}


@pytest.mark.parametrize("name", sorted(HELD_CHECKS))
@pytest.mark.parametrize("dtype", ["f64", "f32"])
def test_held_checks_fail_as_the_numpy_back_end_does(name, dtype):
    """A device back end holds an index check until the next host read (a print, a loop
    bound, the run's end) instead of waiting for the device at every lookup: the run prints
    the same and fails with the same error, at the same line and column, with the same notes,
    as the NumPy back end, which checks at once."""
    program = _program(HELD_CHECKS[name])
    want = _outcome(program, get_backend("numpy", dtype=dtype))
    assert want[1] is not None, want          # every program here fails
    got = _outcome(program, GuardBackend(dtype))
    assert got == want


def test_index_checks_make_no_host_read_per_step():
    """A training loop's lookups (gather, onehot in cross-entropy, their gradients) make no
    host read per step: the device is never made to wait inside the loop.  Held checks are
    read at most max_pending at a time, so a long loop holds a bounded number."""
    text = """import nn
let tokens = [[0.0], [2.0], [1.0], [2.0]]
let targets = [[1.0], [0.0], [2.0], [1.0]]
var e = [[0.1, 0.2, 0.3], [0.4, 0.5, 0.6], [0.7, 0.8, 0.9]]
for step in 0 .. STEPS {
    let l = nn.cross_entropy(gather(e, tokens), targets)
    e = e - 0.5 * grad(l, e)
}
print e
"""
    reads = {}
    for steps in (3, 30, 300):
        program = _program(text.replace("STEPS", str(steps)))
        be = GuardBackend()
        _, printed = _run(program, be)
        _, want = _run(program, get_backend("numpy"))
        assert _same_bits(printed[0], want[0])
        reads[steps] = be.counter.reads
        assert len(be._pending) == 0
    held = 3 * 300 // GuardBackend.max_pending        # the reads of full batches of checks
    assert reads[3] == reads[30] and reads[300] <= reads[3] + held, reads


def test_guard_refuses_host_round_trips():
    be = GuardBackend()
    x = be.asarray(np.ones((2, 2)))
    for read in (float, bool, int, len, list, np.asarray, lambda v: v.tolist()):
        with pytest.raises(HostRoundTrip):
            read(be.xp.sum(x))
    with pytest.raises(HostRoundTrip):        # a host array handed to a device op
        be.xp.add(x, np.ones((2, 2)))
    assert be.scalar(be.xp.sum(x)) == 4.0
    assert be.to_numpy(x).tolist() == [[1.0, 1.0], [1.0, 1.0]]


def test_an_optimizers_new_state_is_written_by_the_weights_kernel():
    """AdamW's new first and second moments are read by the new weight and carried to the next
    step: the weight's kernel writes all three (one launch, not three), with NumPy's bits; a
    value of another shape (a 1x3 moment read by a 2x3 update) or printed in the middle of the
    step keeps a kernel of its own."""
    program = _program(OPTIMIZER_STATE)
    _, want = _run(program, get_backend("numpy"))
    be = GuardBackend()
    _, got = _run(program, be)
    assert all(_same_bits(a, b) for a, b in zip(got, want))
    multi = {kernels.outputs(spec): spec for spec in be.groups if kernels.outputs(spec) > 1}
    # w, m, v in one kernel; the 1x3 moment joins the 1x3 `0.1 * mb`, not the 2x3 update
    assert sorted(multi) == [2, 3]
    names = [op.name for op, _ in multi[3][1]]
    assert names.count("sqrt") == 1 and len(names) > 10, names
    assert [op.name for op, _ in multi[2][1]] == ["multiply", "add", "multiply"]
    assert kernels.describe(multi[2]).endswith("; add(multiply(x0, x1), x2)")



    """(x - mean) / sqrt(variance + eps) * g + b after the reductions: one fused group of
    five ops (x - mean is the value centered, read three times: an input of the group)."""
    program = _program(LAYER_NORM)
    be = GuardBackend()
    text, _ = _run(program, be)
    names = sorted([[op.name for op, _ in spec[1]] for spec in be.groups], key=len)
    assert names == [["subtract"], ["multiply"], ["add", "sqrt", "divide", "multiply", "add"]]
    # 2 row_means (a sum and a division each), x - mean, its square, the group: 7 launches
    # where NumPy makes 10 calls
    assert be.counter.launches == 7
    assert text == _run(program, get_backend("numpy"))[0]


def test_fusion_keeps_values_read_elsewhere():
    """A value printed, read twice, carried by a loop or read inside a block is never inside
    a group."""
    text = """
let a = [[1.0, 2.0]]
let b = exp(a) + 1.0
print b
let c = b * 2.0 + 3.0
var s = a
for i in 0 .. 3 {
  let t = s * 0.5 + c
  s = tanh(t) - 1.0
}
print s
"""
    program = _program(text)
    be = GuardBackend()
    out, _ = _run(program, be)
    assert out == _run(program, get_backend("numpy"))[0]
    names = sorted(tuple(op.name for op, _ in spec[1]) for spec in be.groups)
    # b (printed) ends a group and starts the next; t (read once, by tanh) is inside one
    assert names == [("exp", "add"), ("multiply", "add"),
                     ("multiply", "add", "tanh", "subtract")]


# ---------------------------------------------------------------- generated kernels as C

_CC = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")

SPECIALS = [0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.0, 7.0, -7.0, 1e300, -1e-300, 5e-324,
            np.inf, -np.inf, np.nan, -np.nan, 2.0 ** 52 + 1, 0.1]


def _c_kernel(tmp_path, spec, ctype):
    """The group's C twin compiled and loaded: f(*inputs) -> output array."""
    src = tmp_path / ("%s_%s.c" % (kernels.kernel_name(spec), ctype))
    src.write_text(kernels.c_source(spec, ctype))
    lib_path = src.with_suffix(".so")
    r = subprocess.run([_CC, "-O1", "-ffp-contract=off", "-shared", "-fPIC", "-o",
                        str(lib_path), str(src), "-lm"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    fn = getattr(ctypes.CDLL(str(lib_path)), kernels.kernel_name(spec))
    dt = np.float64 if ctype == "double" else np.float32

    def run(*inputs):
        arrays = np.broadcast_arrays(*[np.asarray(x, dtype=dt) for x in inputs])
        arrays = [np.ascontiguousarray(a) for a in arrays]
        out = np.empty(arrays[0].shape, dtype=dt)
        fn(ctypes.c_long(out.size), *[a.ctypes.data_as(ctypes.c_void_p) for a in arrays],
           out.ctypes.data_as(ctypes.c_void_p))
        return out
    return run


EXACT = {"add", "subtract", "multiply", "divide", "negate", "sqrt", "abs", "floor", "relu",
         "square", "ge", "gt", "le", "lt", "eq", "ne", "logical_and", "logical_or", "logical_not",
         "remainder", "maximum", "minimum", "where"}


def _numpy_op(op, dtype, *args):
    be = get_backend("numpy", dtype=dtype)
    with be.errstate():
        return np.asarray(op.evaluate(be)(*[np.asarray(a, be.dtype) for a in args]))


@pytest.mark.skipif(_CC is None, reason="no C compiler")
@pytest.mark.parametrize("dtype", ["f64", "f32"])
def test_every_kernel_body_matches_numpy(tmp_path, dtype):
    """Each elementwise op's kernel body, compiled as C, against the NumPy back end on every
    pair of special values: the same bits for the exact ops (NaN signs, -0 and the IEEE
    maximum included); for the library functions (exp, log, tanh, sin, cos) the same NaNs,
    infinities and signs and values within a few ulps."""
    ctype = "double" if dtype == "f64" else "float"
    dt = np.float64 if dtype == "f64" else np.float32
    with np.errstate(over="ignore"):        # 1e300 in float32 is inf: that is the point
        v = np.array(SPECIALS, dtype=dt)
    ops = [op for op in REGISTRY.values() if op.kernel is not None]
    assert len(ops) >= 27
    for op in ops:
        spec = (op.arity, ((op, tuple(range(op.arity))),))
        k = _c_kernel(tmp_path, spec, ctype)
        args = ((v,), (v[:, None], v[None, :]), (v[:, None, None], v[None, :, None],
                                                 v[None, None, :]))[op.arity - 1]
        got = k(*args)
        want = _numpy_op(op, dtype, *args)
        assert got.shape == want.shape
        if op.name in EXACT:
            bits = np.int64 if dt is np.float64 else np.int32
            assert np.array_equal(got.view(bits), want.view(bits)), (op.name, args, got, want)
        else:
            assert np.array_equal(np.isnan(got), np.isnan(want)), op.name
            assert np.array_equal(np.signbit(got), np.signbit(want)), op.name
            ok = ~np.isnan(want)
            np.testing.assert_allclose(got[ok], want[ok], rtol=4 * np.finfo(dt).eps,
                                       atol=0, err_msg=op.name)


@pytest.mark.skipif(_CC is None, reason="no C compiler")
def test_fused_kernel_matches_numpy(tmp_path):
    """The layer norm's fused group as the C twin of its kernel: NumPy's bits."""
    program = _program(LAYER_NORM)
    be = GuardBackend()
    _run(program, be)
    spec = max(be.groups, key=lambda s: len(s[1]))
    n = spec[0]
    rng = np.random.default_rng(1)
    inputs = [rng.normal(size=(5, 4)) if k % 2 == 0 else rng.normal(size=(5, 1)) ** 2
              for k in range(n)]
    got = _c_kernel(tmp_path, spec, "double")(*inputs)
    vals = list(inputs)
    npb = get_backend("numpy")
    with np.errstate(invalid="ignore"):     # NaNs from sqrt of negatives compared too
        for op, refs in spec[1]:
            vals.append(op.evaluate(npb)(*[vals[r] for r in refs]))
    assert got.tobytes() == np.ascontiguousarray(np.broadcast_to(vals[-1], got.shape)).tobytes()


# ---------------------------------------------------------------- choosing, and errors

def test_auto_keeps_the_chapter_on_the_cpu_and_sends_a_big_model_to_the_gpu(tmp_path):
    from goat.gpu.auto import choose
    chapter = _load(read_source(str(EXAMPLES / "lm35" / "train.mg")))
    c = choose(chapter, "f64", None)
    assert c.backend == "numpy" and c.gpu_seconds > 3 * c.cpu_seconds, c.reason
    big = """
var w = randn(tensor[512x512], 1) * 0.02
let x = randn(tensor[16x256x512], 2)
for step in 0 .. 100 {
  let h = relu(x @ w) @ transpose(w)
  let loss = row_sum(reshape(h * h, tensor[1x2097152])) / 4096.0
  w = w - 0.001 * grad(loss, w)
}
print row_sum(col_sum(w))
"""
    program = _program(big)
    c = choose(program, "f32", None)
    assert c.backend == "cupy" and c.gpu_seconds * 10 < c.cpu_seconds, c.reason
    assert "GFLOP" in c.reason
    c = choose(program, "f32", "the cupy back end needs CuPy, which is not installed; ...")
    assert c.backend == "numpy" and "no GPU" in c.reason and "needs CuPy" in c.reason


def test_auto_looks_for_a_gpu_only_when_the_gpu_would_win(tmp_path):
    """Loading CuPy and finding a device takes longer than the chapter's model runs (0.3 s
    against 0.5 s, measured on an H200 machine): auto asks for the GPU only when its estimate
    is the lower."""
    from goat.gpu.auto import choose
    asked = []

    def missing():
        asked.append(1)
        return "the cupy back end found no CUDA device"
    chapter = _load(read_source(str(EXAMPLES / "lm35" / "train.mg")))
    assert choose(chapter, "f64", missing).backend == "numpy" and asked == []
    big = _program("let x = randn(tensor[4096x4096], 1)\nprint row_sum(col_sum(x @ x @ x))\n")
    c = choose(big, "f32", missing)
    assert asked == [1] and c.backend == "numpy" and "found no CUDA device" in c.reason
    assert choose(big, "f32", lambda: None).backend == "cupy"
    # goat run --backend auto of a small program does not import CuPy at all (a stand-in
    # CuPy that imports, so that an import would show)
    (tmp_path / "cupy").mkdir()
    (tmp_path / "cupy" / "__init__.py").write_text("")
    p = tmp_path / "p.mg"
    p.write_text("print [[1, 2]] @ [[3], [4]]\n")
    code = ("import sys, goat; goat.run_file(%r, backend=sys.argv[1]); "
            "print('cupy' in sys.modules)" % str(p))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(tmp_path), str(ROOT)] + os.environ.get("PYTHONPATH", "").split(os.pathsep)))
    for backend, imported in (("auto", "False"), ("cupy", "True")):
        r = subprocess.run([sys.executable, "-c", code, backend], capture_output=True,
                           text=True, env=env, cwd=str(tmp_path))
        assert r.stdout.splitlines()[-1:] == [imported] or (
            backend == "cupy" and "cupy back end" in r.stderr), r.stdout + r.stderr


def test_auto_reports_its_choice_with_time(tmp_path):
    p = tmp_path / "p.mg"
    p.write_text("print [[1, 2]] @ [[3], [4]]\n")
    r = subprocess.run([sys.executable, "-m", "goat", "run", "--backend", "auto", "--time",
                        str(p)], capture_output=True, text=True)
    assert r.returncode == 0
    assert "[[11]]" in r.stdout
    assert "auto chose numpy: estimated" in r.stderr


@pytest.mark.skipif(cupy_usable() is None, reason="CuPy and a device are here")
def test_cupy_without_cupy_is_a_clear_error(tmp_path):
    p = tmp_path / "p.mg"
    p.write_text("print [[1, 2]]\n")
    r = subprocess.run([sys.executable, "-m", "goat", "run", "--backend", "cupy", str(p)],
                       capture_output=True, text=True)
    assert r.returncode == 1
    assert r.stdout == ""
    assert r.stderr.startswith("goat run: error: the cupy back end ")
    assert "Traceback" not in r.stderr and r.stderr.count("\n") == 1
    with pytest.raises(goat.gpu.BackendUnavailable, match="cupy back end"):
        goat.run_source("print [[1]]\n", backend="cupy")
    with pytest.raises(ValueError, match="unknown back end 'gpu'"):
        goat.run_source("print [[1]]\n", backend="gpu")
    with pytest.raises(ValueError, match="unknown precision 'f16'"):
        goat.run_source("print [[1]]\n", dtype="f16")


def test_aot_refuses_other_back_ends_and_f32(tmp_path):
    p = tmp_path / "p.mg"
    p.write_text("print [[1, 2]]\n")
    r = subprocess.run([sys.executable, "-m", "goat", "run", "--aot", "--dtype", "f32", str(p)],
                       capture_output=True, text=True)
    assert r.returncode == 1 and "float64 only" in r.stderr and "--dtype f32" in r.stderr


def test_repl_switches_back_ends_keeping_values():
    from goat.repl.session import Session
    out = io.StringIO()
    s = Session(out=out)
    s.run("let a = [[1, 2], [3, 4]]")
    s.set_backend("numpy")
    s.run("print a @ a")
    assert "[[7,   10], \n [15,   22]]" in out.getvalue()
    with pytest.raises(goat.GoatError, match="auto chooses for a whole program"):
        s.set_backend("auto")
    if cupy_usable() is not None:
        with pytest.raises(goat.GoatError, match="cupy back end"):
            s.set_backend("cupy")
    assert s.backend_name == "numpy"


# ---------------------------------------------------------------- on a real GPU

needs_gpu = pytest.mark.skipif(cupy_usable() is not None, reason="needs CuPy and a CUDA device")


@needs_gpu
@pytest.mark.parametrize("text", [OPS_PROGRAM, CONTROL_PROGRAM, LAYER_NORM],
                         ids=["ops", "control", "layer_norm"])
def test_cupy_matches_numpy(text):
    program = _program(text)
    _, want = _run(program, get_backend("numpy"))
    _, got = _run(program, get_backend("cupy"))
    for a, b in zip(got, want):
        if isinstance(a, str):
            assert a == b
        else:
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12, equal_nan=True)
            assert np.array_equal(np.signbit(a[np.isnan(a)]), np.signbit(b[np.isnan(b)]))


def _chapter_losses(be, steps=51):
    """The chapter's training (examples/lm35/train.mg) for ``steps`` steps on back end
    ``be``, the loss before each step read in full (%.17g)."""
    text = (EXAMPLES / "lm35" / "train.mg").read_text()
    for old, new in (("let steps = 200\n", "let steps = %d\n" % steps),
                     ("    if step == 0 or step == 1 or step == 10 or step == 25 or step == 50 "
                      "or step == 100 or step == 150 {", "    if 1 == 1 {"),
                     ('"step {step}: loss {loss(lg, y)}, {correct(lg, y)} of 64 correct"',
                      '"{loss(lg, y):.17g}"')):
        assert old in text, old             # train.mg changed: change this too
        text = text.replace(old, new, 1)
    text = text[:text.index("# ---- the trained weights")]
    path = EXAMPLES / "lm35" / "every_step.mg"      # beside data/, which it loads
    program = _load(Source(str(path), text))
    out, _ = _run(program, be)
    return [float(line) for line in out.splitlines()]


class _SequentialSums(NumpyBackend):
    """The NumPy back end summing every row in plain loop order (np.cumsum's last column)
    instead of NumPy's pairwise order: another correct order, as a GPU's is."""

    def reducer(self, kind, axis):
        if kind not in ("sum", "mean"):
            return super().reducer(kind, axis)

        def run(x):
            n = x.shape[axis]
            if n == 0:
                return super(_SequentialSums, self).reducer(kind, axis)(x)
            total = np.take(np.cumsum(x, axis=axis), [n - 1], axis=axis)
            return total / n if kind == "mean" else total
        return run


def _relative(a, b):
    return [abs(x - y) / abs(y) for x, y in zip(a, b)]


@pytest.fixture(scope="module")
def chapter_numpy_losses():
    return _chapter_losses(get_backend("numpy"))


def test_chapter_training_amplifies_any_change_of_summation_order(chapter_numpy_losses):
    """Why the GPU's training is compared with NumPy's through step 40 at 1e-9 (issue 8 asks
    for step 50): the chapter's model, at learning rate 1, multiplies a difference in the last
    bit by about 10 every three steps from step 25 on.  Summing rows in loop order instead of
    NumPy's pairwise order -- on the CPU, nothing else changed -- stays within 1e-9 through
    step 40 (6e-11 measured) and is 1e-8 or more apart by step 50 (1.7e-7 measured); any
    back end with another order of additions, a GPU's, meets the same."""
    seq = _relative(_chapter_losses(_SequentialSums()), chapter_numpy_losses)
    assert len(seq) == 51
    assert max(seq[:41]) < 1e-9, seq
    assert max(seq[41:]) > 1e-8, seq


@needs_gpu
def test_cupy_chapter_training_within_1e9(chapter_numpy_losses):
    """The chapter's training on the GPU gives NumPy's losses within 1e-9 through step 40 and,
    through step 50, within what a CPU run that only sums in another order gives."""
    got = _relative(_chapter_losses(get_backend("cupy")), chapter_numpy_losses)
    seq = _relative(_chapter_losses(_SequentialSums()), chapter_numpy_losses)
    print("\nstep  cupy-vs-numpy  sequential-sums-vs-numpy")
    for k in range(0, 51):
        print("%4d  %.3g  %.3g" % (k, got[k], seq[k]))
    assert max(got[:41]) < 1e-9, got
    assert max(got[41:]) < 100 * max(max(seq[41:]), 1e-9), (got, seq)


# ---------------------------------------------------------------- the CuPy back end's own code

@pytest.fixture
def fake_cupy(monkeypatch):
    """The CuPy back end over tests/fake_cupy.py: NumPy arrays, and the kernels it generates
    compiled as C by the host's compiler (needs one)."""
    if _CC is None:
        pytest.skip("no C compiler")
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import fake_cupy as fake
    monkeypatch.setitem(sys.modules, "cupy", fake)
    return fake


@pytest.mark.parametrize("text", [OPS_PROGRAM, CONTROL_PROGRAM, LAYER_NORM, MATMUL_NANS,
                                  OPTIMIZER_STATE],
                         ids=["ops", "control", "layer_norm", "matmul_nans", "optimizer"])
@pytest.mark.parametrize("dtype", ["f64", "f32"])
def test_cupy_backend_code_prints_what_numpy_prints(fake_cupy, text, dtype):
    """The CuPy back end's generated kernels and reductions (compiled as C here) print the
    NumPy back end's text, and hold its values to the last few bits (exp, log, tanh, sin, cos
    are the C library's here, CUDA's on a GPU)."""
    from goat.gpu.cupy_backend import CupyBackend
    program = _program(text)
    want_text, want = _run(program, get_backend("numpy", dtype=dtype))
    be = CupyBackend(dtype)
    got_text, got = _run(program, be)
    assert be._kernels                              # elementwise ops ran as kernels
    if dtype == "f64":          # in f32 a last printed digit may differ (exp, sums)
        assert got_text == want_text
    tol = 1e-12 if dtype == "f64" else 1e-5
    for a, b in zip(got, want):
        if isinstance(a, str):      # in f32 a last printed digit may differ (tanh, exp, sums)
            assert a == b or (dtype == "f32" and a.split()[:-1] == b.split()[:-1] and math.isclose(
                float(a.split()[-1]), float(b.split()[-1]), rel_tol=1e-5))
            continue
        assert a.dtype == b.dtype
        assert np.array_equal(np.isnan(a), np.isnan(b))
        assert np.array_equal(np.signbit(a), np.signbit(b)) or dtype == "f32"
        np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


def test_cupy_backend_code_in_f32_overflows_to_inf_without_a_warning(fake_cupy):
    """A number beyond float32 (1e39, kept a Python float) passed to a kernel is converted by
    NumPy's cast, as CuPy 14 converts it, and that warns of the overflow unless the back end's
    errstate says not to: inf, as NumPy's float32, and no warning."""
    import warnings
    from goat.gpu.cupy_backend import CupyBackend
    program = _program("let x = [[1, -2]]\nprint x * 1e39\nprint x + 1e39 * 10\n")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _, got = _run(program, CupyBackend("f32"))
    assert [a.tolist() for a in got] == [[[np.inf, -np.inf]], [[np.inf, np.inf]]]
    assert all(a.dtype == np.float32 for a in got)


def test_cupy_backend_code_computes_f32_kernels_in_float32(fake_cupy):
    """In f32 a kernel's exp is float32's (CUDA's expf; the stand-in's C takes tgmath.h's):
    in sigmoid(-100) = 1 / (1 + exp(100)), exp(100) overflows to inf, so the result is 0, as
    NumPy's float32 gives, not the subnormal 3.78e-44 of a double exp rounded (found by a
    fuzzer of the stand-in)."""
    from goat.gpu.cupy_backend import CupyBackend
    program = _program("print sigmoid([[-100.0, -90.0, -80.0]])\n")
    _, want = _run(program, get_backend("numpy", dtype="f32"))
    _, got = _run(program, CupyBackend("f32"))
    assert want[0].tolist()[0][:2] == [0.0, 0.0]
    np.testing.assert_allclose(got[0], want[0], rtol=1e-5, atol=0)


def test_cupy_backend_code_trains_the_chapter_model(fake_cupy):
    """Ten steps of the chapter's training through the CuPy back end's code: the NumPy run's
    values to 1e-9 (the embedding gradient as a one-hot product, sums in sequence)."""
    from goat.gpu.cupy_backend import CupyBackend
    program = _load(read_source(str(EXAMPLES / "lm35" / "train_10.mg")))
    _, want = _run(program, get_backend("numpy"))
    _, got = _run(program, CupyBackend())
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-9)


def test_cupy_backend_code_reductions_of_special_rows(fake_cupy):
    """Row max/min/sum/mean kernels on rows of zeros of both signs, NaNs and empty rows:
    the NumPy back end's bits (max and min exactly, whatever the order)."""
    from goat.gpu.cupy_backend import CupyBackend
    x = np.array([[0.0, -0.0, -0.0], [-0.0, -0.0, -0.0], [1.0, np.nan, -np.nan],
                  [np.inf, -np.inf, 2.0], [-np.inf, -1.0, -5.0]])
    cb, nb = CupyBackend(), get_backend("numpy")
    for kind in ("max", "min", "sum", "mean"):
        for axis in (-1, -2):
            got = cb.reducer(kind, axis)(x)
            with nb.errstate():
                want = nb.reducer(kind, axis)(x)
            assert got.view(np.int64).tolist() == want.view(np.int64).tolist(), (kind, axis)
    empty = np.zeros((2, 0))
    assert cb.reducer("max", -1)(empty).tolist() == [[-np.inf], [-np.inf]]
    assert cb.reducer("sum", -1)(empty).tolist() == [[0.0], [0.0]]


def test_auto_counts_written_bounds_and_says_what_it_could_not_count(tmp_path):
    """A bound written through a let is known; a computed bound, or a ? size, is counted
    once and the reason says so."""
    from goat.gpu.auto import choose, region_cost
    known = _program("let n = 10\nvar s = [[1.0]]\nfor i in 0..n { s = s * 2.0 }\nprint s\n")
    c = region_cost(known.main)
    assert (c.ops, c.unknown_loops) == (10, 0)
    computed = _program("let n = row_sum([[4.0, 6.0]])\nvar s = [[1.0]]\n"
                        "for i in 0..n { s = s * 2.0 }\nprint s\n")
    reason = choose(computed).reason
    assert "1 loop with bounds known only when the program runs, counted once" in reason
    np.save(tmp_path / "x.npy", np.ones((3, 3)))
    sized = _program('let x = load("x.npy", tensor[?x3])\nprint x @ transpose(x)\n', tmp_path)
    assert "3 ops with ? sizes, counted as 1" in choose(sized).reason     # load, transpose, @


def test_argmax_of_empty_rows_is_an_error_not_a_crash(tmp_path):
    with pytest.raises(goat.GoatError, match="argmax_rows needs rows of at least one column"):
        goat.check_source("print argmax_rows(zeros(tensor[2x0]))\n")
    np.save(tmp_path / "e.npy", np.zeros((2, 0)))
    with pytest.raises(goat.GoatError, match=r"p.mg:2: error: argmax_rows needs rows .* 2x0"):
        goat.run_file(_write(tmp_path, 'let x = load("e.npy", tensor[2x?])\n'
                                       'print argmax_rows(x)\n'))


def _write(tmp_path, text):
    p = tmp_path / "p.mg"
    p.write_text(text)
    return str(p)


@pytest.mark.parametrize("dtype", ["f64", "f32"])
def test_cupy_backend_code_reshapes_a_number(fake_cupy, dtype):
    """A number (a constant, a Python float in f64) reshaped: CuPy's reshape takes arrays only
    (found by a fuzzer: AttributeError on a real GPU)."""
    from goat.gpu.cupy_backend import CupyBackend
    text = ("print reshape(2, tensor[1])\nlet s = 3\nprint reshape(s, tensor[1x1]) + [[1]]\n"
            "print row_sum(reshape(s * 2, tensor[1x1]))\n")
    program = _program(text)
    want_text, _ = _run(program, get_backend("numpy", dtype=dtype))
    got_text, _ = _run(program, CupyBackend(dtype))
    assert got_text == want_text and "[[4]]" in got_text and "[[6]]" in got_text


@pytest.mark.parametrize("dtype", ["f64", "f32"])
def test_cupy_backend_code_keeps_nan_signs_outside_fused_groups(fake_cupy, tmp_path, dtype):
    """NaNs met by code other than the fused kernels keep NumPy's signs where the stand-in
    CuPy's own arithmetic gives the GPU's positive NaN (found by a fuzzer): an elementwise op on
    a value of a ? size (left out of the groups: its shape is checked again), a gradient summed
    over several broadcast axes, a scalar's gradient broadcast back."""
    from goat.gpu.cupy_backend import CupyBackend
    text = """
save([[0, 1]] / [[0, 1]], "n.npy")
let q: tensor[?x2] = load("n.npy")
print exp(q)
print log(q) + [[1, 1]]
print q + [[1, 2]]
let s = 2
let x = [[1, -1], [1, 1]] / [[0, 0], [1, 1]]
print grad(col_sum(row_sum(x * s)), s)
let t = [[3.0]]
print grad(col_sum(row_sum(x * t)), t)
"""
    program = _program(text, tmp_path)
    want_text, want = _run(program, get_backend("numpy", dtype=dtype))
    assert "-nan" in want_text
    got_text, got = _run(program, CupyBackend(dtype))
    assert got_text == want_text
    for a, b in zip(got, want):
        assert np.array_equal(np.signbit(a), np.signbit(b))


@pytest.mark.parametrize("dtype", ["f64", "f32"])
def test_cupy_backend_code_computes_numbers_as_numpy_does(fake_cupy, dtype):
    """An op on numbers only (constants) is computed as the NumPy back end computes it, then
    copied to the device (found by a fuzzer: a kernel had rounded differently).  In f32 a
    number an op takes as a value is float32's (16777219 is 16777220, 1e308 is inf), as NumPy
    float32 computes it (a breaker's: sin(16777217) had been computed in float64)."""
    from goat.gpu.cupy_backend import CupyBackend
    text = ("print 16777217 - 16777216\nprint log(1e308)\nprint [[1.0, 2.0]] * (16777219 - "
            "16777216)\nprint exp(1) * 3\nlet z = 0 / 0\nprint -z\nprint z\n")
    program = _program(text)
    want_text, want = _run(program, get_backend("numpy", dtype=dtype))
    if dtype == "f64":
        assert "[[3,   6]]" in want_text and "709.196" in want_text
    else:
        f = np.float32
        assert "[[%g,   %g]]" % ((f(16777219) - f(16777216)), 2 * (f(16777219) - f(16777216))) \
            in want_text and "[inf]" in want_text and "[0]" in want_text
    got_text, got = _run(program, CupyBackend(dtype))
    assert got_text == want_text
    assert all(_same_bits(a, b) for a, b in zip(got, want))


@pytest.mark.parametrize("dtype", ["f64", "f32"])
def test_cupy_backend_code_keeps_numbers_numbers(fake_cupy, dtype):
    """An op on numbers alone gives a number, never a host array, which a CuPy kernel refuses
    (NumPy's tanh and where of numbers give 0-d arrays; found by a fuzzer: a TypeError on a
    GPU, hidden by the stand-in, whose arrays are NumPy's)."""
    from goat.gpu.cupy_backend import CupyBackend
    be = CupyBackend(dtype)
    want = np.dtype({"f64": np.float64, "f32": np.float32}[dtype])
    for name, args in (("tanh", (0.5,)), ("where", (1.0, 2.0, 3.0)), ("exp", (1.0,)),
                       ("add", (16777217.0, be.constant(0.5)))):
        op = REGISTRY[name]
        got = be.fuse((len(args), ((op, tuple(range(len(args)))),)))(*args)
        assert not isinstance(got, np.ndarray), (name, type(got))
        assert type(got) is float or got.dtype == want, (name, type(got))
    program = _program("let a: scalar = tanh(0.5)\nprint [[1, 2]] * a\n"
                       "let b: scalar = where(1, 2, 3)\nprint [[1, 2]] * b\n")
    assert _run(program, be)[0] == _run(program, get_backend("numpy", dtype=dtype))[0]


def test_cupy_embedding_gradient_puts_infinities_where_add_at_does(fake_cupy):
    """The one-hot product of the CuPy back end's add_at must not spread 0 * inf to rows
    that no token hit; repeated rows add up; inf + -inf is a NaN."""
    from goat.gpu.cupy_backend import CupyBackend
    values = np.array([[1.0, 2.0], [np.inf, 4.0], [3.0, -np.inf], [np.nan, 1.0],
                       [-np.inf, 0.5]])
    rows = np.array([0, 0, 2, 3, 0])
    got = np.zeros((5, 2))
    CupyBackend().add_at(got, rows, values)
    want = np.zeros((5, 2))
    with np.errstate(all="ignore"):
        np.add.at(want, rows, values)
    assert np.array_equal(np.isnan(got), np.isnan(want))
    assert np.array_equal(got[~np.isnan(got)], want[~np.isnan(want)])
    assert got[1].tolist() == [0.0, 0.0] and got[4].tolist() == [0.0, 0.0]
    # every NaN with the sign bit, as a matrix product's (docs/gpu.md, "what differs"): here a
    # positive NaN added (row 3) stays positive in NumPy's add.at
    assert np.signbit(got[np.isnan(got)]).all()
    assert not np.signbit(want[3, 0])


def test_the_stdlib_layer_norm_is_a_handful_of_kernels(tmp_path):
    """nn.layer_norm: two means (one reduction kernel each on CuPy; a sum and a division
    here), x - mean, its square, then one fused kernel: 7 launches, where one launch per op
    would be 10 (h - row_mean(h) is one value, shared by hash-consing)."""
    text = ("import nn\nlet h = [[1.0, 2.0, 4.0, 8.0], [0.5, -1.0, 3.0, 2.0]]\n"
            "let g = [[1.0, 0.5, 2.0, 1.5]]\nlet t = [[0.1, 0.2, 0.3, 0.4]]\n"
            "print nn.layer_norm(h, g, t)\n")
    program = _program(text, tmp_path)
    be = GuardBackend()
    out, _ = _run(program, be)
    assert out == _run(program, get_backend("numpy"))[0]
    assert sorted([op.name for op, _ in s[1]] for s in be.groups) == [
        ["add", "sqrt", "divide", "multiply", "add"], ["multiply"], ["subtract"]]
    assert be.counter.launches == 7


def test_a_broken_cupy_is_told_apart_from_a_missing_one(monkeypatch, tmp_path):
    """CuPy installed but unable to load (a CUDA library missing) says so, not that CuPy is
    not installed."""
    from goat.gpu.cupy_backend import BackendUnavailable, load_cupy
    (tmp_path / "cupy").mkdir()
    (tmp_path / "cupy" / "__init__.py").write_text("import cupy_backends_cuda_libcudart\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "cupy", raising=False)
    with pytest.raises(BackendUnavailable, match="cannot load CuPy: No module named "
                                                 "'cupy_backends_cuda_libcudart'"):
        load_cupy()
    (tmp_path / "cupy" / "__init__.py").write_text("raise OSError('libnvrtc.so.12: cannot open')\n")
    monkeypatch.delitem(sys.modules, "cupy", raising=False)
    with pytest.raises(BackendUnavailable, match="cannot load CuPy: OSError: libnvrtc"):
        load_cupy()


def test_check_cost_says_the_work_the_estimates_and_the_choice(tmp_path):
    """goat check --cost runs nothing and prints four lines: the work, both estimates,
    whether a GPU can run here, and auto's choice."""
    p = tmp_path / "p.mg"
    p.write_text("let a = [[1.0, 2.0], [3.0, 4.0]]\nprint a @ a\n")
    r = subprocess.run([sys.executable, "-m", "goat", "check", "--cost", str(p)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert len(lines) == 4 and "[[" not in r.stdout            # nothing was run
    # 2x2 @ 2x2: 2*M*N*K = 16 FLOPs; three arrays of 4 float64 cells = 96 bytes
    assert lines[0] == "work: 1.6e-08 GFLOP, 9.6e-08 GB moved, 1 ops, 1 GPU launches"
    assert lines[1].startswith("estimated: ") and "on the CPU (numpy)" in lines[1]
    gpu = cupy_usable()
    assert lines[2] == ("GPU here: yes" if gpu is None else "GPU here: no: " + gpu)
    assert lines[3] == "--backend auto would choose numpy"


def test_the_apis_inputs_and_outputs_make_no_other_host_round_trip():
    """inputs= (npyio.MemoryFiles on the back end) goes up as a file's array does, and
    outputs= comes down as a save does: the same output as on the NumPy back end, and no stray
    download."""
    from goat.interp.npyio import MemoryFiles
    text = ('var w: tensor[2x2] = load("w.npy")\nfor i in 0..3 {\n'
            '    w = w * 2 + load("x_{i}.npy", tensor[2x2])\n    save(w, "w_{i}.npy")\n}\n'
            'print w\n')
    program = _program(text)
    inputs = {"w.npy": np.eye(2)}
    inputs.update({"x_%d.npy" % i: np.full((2, 2), float(i)) for i in range(3)})
    got = {}
    for name in ("numpy", "guard"):
        be = get_backend("numpy") if name == "numpy" else GuardBackend()
        outputs = {}
        be.files = MemoryFiles(inputs, outputs)
        got[name] = (_run(program, be)[0], outputs)
        if name == "guard":
            assert be.counter.stray_downloads == 0
    assert got["guard"][0] == got["numpy"][0]
    w = np.eye(2)
    for i in range(3):
        w = w * 2 + i
        for outputs in (got["numpy"][1], got["guard"][1]):
            assert outputs["w_%d.npy" % i].tolist() == w.tolist()
