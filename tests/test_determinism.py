"""Matrix products give the same bits whatever the machine's BLAS thread settings.

The issue: `v @ transpose(v * 0 + 1)` with v = [[1e16, 1, ... (19,998 ones), -1e16]] printed
[[19372]] with OPENBLAS_NUM_THREADS=1 and [[19684]] with 2: OpenBLAS splits a long dot product
into one partial sum per thread, and its threaded matrix product cuts the inner dimension into
blocks by another rule than its one-thread product (goat/gpu/numpy_backend.py says more).

What is the right value?  The exact sum is 19998 (math.fsum gives it), but no BLAS computes
products exactly, and goat's promise is the same bits on every run: goat's product is the
BLAS's one-thread product, on every thread setting.  So each product below must give, in
fresh processes with OPENBLAS_NUM_THREADS, OMP_NUM_THREADS or MKL_NUM_THREADS at 1, 2 and 4:

* the same bits in every setting;
* the bits of NumPy's product computed here with the BLAS held to one thread (threadpoolctl);
* a value within the error bound of any summation order, gamma(K+1) * sum |a_ik b_kj|, of the
  math.fsum of the exact products, checked entry by entry on a sample; and on data whose every
  partial sum is an exact float (small whole numbers), exactly math.fsum's value.

The products are those that differed between one and two threads on OpenBLAS 0.3.31 (a 2-core
machine): dot products and matrix-vector products with a long inner dimension, matrix products
large enough to be threaded (64x600 @ 600x64, 2x600 @ 600x2000, 100x1000 @ 1000x100),
a @ transpose(a) (BLAS syrk) and batched rank-3 products.
"""
import contextlib
import math
import os
import subprocess
import sys

import numpy as np
import pytest
from threadpoolctl import threadpool_limits

from conftest import ROOT
from goat.gpu.numpy_backend import NumpyBackend, blas_libraries, pin_blas_threads

THREAD_VARS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")
SETTINGS = [("default", None, None)] + [("%s=%d" % (v, n), v, n) for v in THREAD_VARS
                                        for n in (1, 2, 4)]

ISSUE = "let v = [[%s]]\nprint v @ transpose(v * 0 + 1)\n" % ", ".join(
    ["1e16"] + ["1"] * 19998 + ["-1e16"])

def T(x):
    """transpose, as goat computes it: a view with the last two axes swapped"""
    return x.swapaxes(-1, -2)


# (name, shape of a, shape of b, the goat expression, its operands as NumPy views of a and b:
# the same memory layout, so NumPy makes the same BLAS call as goat)
PRODUCTS = [
    ("dot 1x12000", (1, 12000), (12000, 1), "{a} @ {b}", lambda a, b: (a, b)),
    ("dot through transpose", (1, 20000), (1, 20000), "{a} @ transpose({b})",
     lambda a, b: (a, T(b))),
    ("gemv 30x20000", (30, 20000), (20000, 1), "{a} @ {b}", lambda a, b: (a, b)),
    ("gemv 1x20000 @ 20000x30", (1, 20000), (20000, 30), "{a} @ {b}", lambda a, b: (a, b)),
    ("gemm 64x600x64", (64, 600), (600, 64), "{a} @ {b}", lambda a, b: (a, b)),
    ("gemm 2x600x2000", (2, 600), (600, 2000), "{a} @ {b}", lambda a, b: (a, b)),
    ("gemm 100x1000x100", (100, 1000), (1000, 100), "{a} @ {b}", lambda a, b: (a, b)),
    ("gemm through transposes", (600, 64), (64, 600), "transpose({a}) @ transpose({b})",
     lambda a, b: (T(a), T(b))),
    ("syrk a @ transpose(a)", (100, 1000), (1, 1), "{a} @ transpose({a})",
     lambda a, b: (a, T(a))),
    ("batched 2x50x1000", (2, 50, 1000), (2, 1000, 50), "{a} @ {b}", lambda a, b: (a, b)),
    ("batched dots 3x1x20000", (3, 1, 20000), (3, 20000, 1), "{a} @ {b}", lambda a, b: (a, b)),
    ("small 8x8x8", (8, 8), (8, 8), "{a} @ {b}", lambda a, b: (a, b)),
]


def sensitive(rng, shape):
    """Numbers whose sums change bits with any change of summation order."""
    return rng.standard_normal(shape) * np.exp2(rng.integers(-4, 4, shape))


def whole(rng, shape):
    """Whole numbers in [-64, 64]: every product and partial sum (at most 64*64*20000) is an
    exact float, so every order of summation gives the exact value."""
    return rng.integers(-64, 65, shape).astype(float)


@pytest.fixture(scope="module")
def case(tmp_path_factory):
    """The programs and their data, and what each setting's process printed."""
    d = tmp_path_factory.mktemp("determinism")
    rng = np.random.default_rng(20240611)
    data, lines = {}, []
    for i, (name, sa, sb, expr, _) in enumerate(PRODUCTS):
        for kind, make in (("s", sensitive), ("w", whole)):
            a, b = make(rng, sa), make(rng, sb)
            data[i, kind] = (a, b)
            for v, x in (("a", a), ("b", b)):
                np.save(d / ("%s%d%s.npy" % (v, i, kind)), x)
                lines.append('let %s%d%s: tensor[%s] = load("%s%d%s.npy")'
                             % (v, i, kind, "x".join(map(str, x.shape)), v, i, kind))
            lines.append("print " + expr.format(a="a%d%s" % (i, kind), b="b%d%s" % (i, kind)))
    big = sensitive(rng, (300, 2000))
    np.save(d / "big.npy", big)
    lines += ['let big: tensor[300x2000] = load("big.npy")', "print row_sum(big)",
              "print col_sum(big)"]
    (d / "products.mg").write_text("\n".join(lines) + "\n")
    (d / "issue.mg").write_text(ISSUE)
    script = ("import io, sys, numpy as np, goat\n"
              "out = io.StringIO()\n"
              "issue = goat.run_file(sys.argv[1] + '/issue.mg', stdout=out)\n"
              "vals = goat.run_file(sys.argv[1] + '/products.mg')\n"
              "np.save(sys.argv[2], np.array(out.getvalue()))\n"
              "np.savez(sys.argv[3], *(issue + vals))\n")
    base = {k: v for k, v in os.environ.items() if k not in THREAD_VARS}
    base["PYTHONPATH"] = ROOT + os.pathsep + base.get("PYTHONPATH", "")
    procs = []
    for label, var, n in SETTINGS:
        env = dict(base)
        if var:
            env[var] = str(n)
        tag = label.replace("=", "_")
        procs.append((label, d / ("%s_text.npy" % tag), d / ("%s_vals.npz" % tag),
                      subprocess.Popen([sys.executable, "-c", script, str(d),
                                        str(d / ("%s_text.npy" % tag)),
                                        str(d / ("%s_vals.npz" % tag))],
                                       env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)))
    runs = {}
    for label, text, vals, p in procs:
        _, err = p.communicate(timeout=300)
        assert p.returncode == 0, (label, err.decode())
        with np.load(vals) as z:
            runs[label] = (str(np.load(text)), [z["arr_%d" % i] for i in range(len(z.files))])
    return data, big, runs


def same_bits(x, y):
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    return x.shape == y.shape and np.array_equal(x.view(np.int64), y.view(np.int64))


def test_the_issue_prints_the_same_in_every_setting(case):
    _, _, runs = case
    texts = {label: text for label, (text, _) in runs.items()}
    assert all(t == texts["default"] for t in texts.values()), texts
    values = {label: vals[0] for label, (_, vals) in runs.items()}
    assert all(same_bits(v, values["default"]) for v in values.values()), values
    assert texts["default"].endswith("[[%g]]\n" % values["default"][0, 0])


def test_the_issue_value_is_the_one_thread_product_and_within_the_bound(case):
    _, _, runs = case
    got = runs["default"][1][0]
    v = np.array([[1e16] + [1.0] * 19998 + [-1e16]])
    with threadpool_limits(limits=1, user_api="blas"):
        want = v @ (v * 0 + 1).swapaxes(-1, -2)
    assert same_bits(got, want)
    exact = math.fsum([1e16] + [1.0] * 19998 + [-1e16])
    assert exact == 19998.0
    k = v.size
    u = 2.0 ** -53
    assert abs(got[0, 0] - exact) <= (k + 1) * u / (1 - (k + 1) * u) * (2e16 + 19998)


@pytest.mark.parametrize("index", range(len(PRODUCTS)), ids=[p[0] for p in PRODUCTS])
def test_products_are_the_same_in_every_setting_and_equal_the_reference(case, index):
    data, _, runs = case
    name, _, _, _, operands = PRODUCTS[index]
    rng = np.random.default_rng(index)
    u = 2.0 ** -53
    for j, kind in enumerate(("s", "w")):
        slot = 1 + 2 * index + j
        got = runs["default"][1][slot]
        for label, (_, vals) in runs.items():
            assert same_bits(vals[slot], got), (name, kind, label)
        A, B = operands(*data[index, kind])
        with threadpool_limits(limits=1, user_api="blas"):
            one_thread = np.matmul(A, B)
        assert same_bits(got, one_thread), (name, kind)
        # entry by entry against math.fsum of the exact products
        k = A.shape[-1]
        gamma = (k + 1) * u / (1 - (k + 1) * u)
        for _ in range(12):
            idx = tuple(int(rng.integers(0, s)) for s in got.shape)
            row = A[idx[:-2] + (idx[-2],)]
            col = B[idx[:-2] + (slice(None), idx[-1])]
            terms = [float(x) * float(y) for x, y in zip(row, col)]   # exact for kind "w"
            exact = math.fsum(terms)
            if kind == "w":
                assert got[idx] == exact, (name, idx)
            else:   # fsum of the rounded products is within u * sum |terms| of the exact sum
                bound = gamma * math.fsum(abs(t) for t in terms)
                assert abs(got[idx] - exact) <= bound, (name, idx, got[idx], exact, bound)


def test_numpy_reductions_are_the_same_in_every_setting(case):
    _, big, runs = case
    n = 1 + 2 * len(PRODUCTS)
    for label, (_, vals) in runs.items():
        assert same_bits(vals[n], np.add.reduce(big, axis=-1, keepdims=True)), label
        assert same_bits(vals[n + 1], np.add.reduce(big, axis=-2, keepdims=True)), label


def test_a_batched_product_gives_each_matrix_its_own_products_bits():
    rng = np.random.default_rng(5)
    be = NumpyBackend()
    mm = be.matmul
    for sa, sb in (((3, 40, 700), (3, 700, 30)), ((2, 1, 20000), (2, 20000, 1)),
                   ((2, 30, 900), (1, 900, 20))):
        a, b = sensitive(rng, sa), sensitive(rng, sb)
        r = mm(a, b)
        for i in range(r.shape[0]):
            assert same_bits(r[i], mm(a[i % sa[0]], b[i % sb[0]]))


def test_the_back_end_holds_every_blas_library_to_one_thread():
    import gc
    gc.collect()        # back ends of earlier tests, never closed, give up their holds
    libs = blas_libraries()
    assert libs, "threadpoolctl found no BLAS library in NumPy"
    before = [lib.get_num_threads() for lib in libs]
    be = NumpyBackend()
    be.matmul
    assert all(lib.get_num_threads() == 1 for lib in libs)
    be.close()
    assert [lib.get_num_threads() for lib in libs] == before
    for lib in libs:
        lib.set_num_threads(2)          # as a program embedding goat might leave it
    be = NumpyBackend()
    be.matmul                           # a fresh back end sets the limit again
    assert all(lib.get_num_threads() == 1 for lib in libs)
    assert pin_blas_threads() == []
    be.close()
    assert all(lib.get_num_threads() == 2 for lib in libs)
    for lib, n in zip(libs, before):
        lib.set_num_threads(n)


@contextlib.contextmanager
def blas_on_two_threads():
    """The BLAS libraries set to 2 threads (the user's own setting), put back after."""
    import gc
    gc.collect()                    # holds of earlier tests' backends given back first
    libs = blas_libraries()
    before = [lib.get_num_threads() for lib in libs]
    try:
        for lib in libs:
            lib.set_num_threads(2)
        yield libs
    finally:
        for lib, n in zip(libs, before):
            lib.set_num_threads(n)


def test_a_run_gives_the_blas_its_threads_back():
    """A run had left NumPy's BLAS on one thread (threads=N: on N) for the rest of the
    process: 60x slower for an embedding program's own products on the helper's machine."""
    import goat
    with blas_on_two_threads() as libs:
        goat.run_source("print [[1, 2]] @ [[3], [4]]")
        assert [lib.get_num_threads() for lib in libs] == [2] * len(libs)
        goat.run_source("print [[1, 2]] @ [[3], [4]]", threads=3)
        assert [lib.get_num_threads() for lib in libs] == [2] * len(libs)


def test_runs_on_other_threads_with_other_counts_do_not_change_a_runs_bits(tmp_path):
    """Two runs at once, one asking threads=2: each product of the threads=1 run had had the
    bits of whichever setting was last made (19372 or 19684 below); now they take turns."""
    import threading
    import goat
    k = 20000
    a = np.ones((1, k))
    a[0, 0], a[0, -1] = 1e16, -1e16
    np.save(tmp_path / "a.npy", a)
    np.save(tmp_path / "b.npy", np.ones((k, 1)))
    (tmp_path / "p.mg").write_text(
        'let a: tensor[1x20000] = load("a.npy")\nlet b: tensor[20000x1] = load("b.npy")\n'
        'for i in 0..400 {\n    if i % 20 == 0 {\n        print a @ b\n    }\n}\n')
    alone = {float(x[0, 0]) for x in goat.run_file(str(tmp_path / "p.mg"))}
    assert len(alone) == 1
    stop = []

    def other():
        while not stop:
            goat.run_source("print [[1]] @ [[1]]", threads=2)
    t = threading.Thread(target=other)
    t.start()
    try:
        got = {float(x[0, 0]) for _ in range(3) for x in goat.run_file(str(tmp_path / "p.mg"))}
    finally:
        stop.append(1)
        t.join()
    assert got == alone


def test_more_blas_threads_on_request():
    """--threads N (threads=N): products on N threads; the values agree with one thread's to
    rounding, and N is validated."""
    import goat
    from conftest import cli
    src = "let a = randn(tensor[300x300], 1)\nprint col_sum(row_sum(a @ a)) / 1000\n"
    one = goat.run_source(src)
    two = goat.run_source(src, threads=2)
    np.testing.assert_allclose(two[0], one[0], rtol=1e-12)
    for bad, kind in ((0, ValueError), (1.5, TypeError), ("2", TypeError)):
        with pytest.raises(kind, match="threads"):
            goat.run_source(src, threads=bad)
    status, out, err = cli("run", "--threads", "2", "-", stdin=src.encode())
    assert status == 0 and out.endswith("]]\n")
    status, out, err = cli("run", "--threads", "0", "-", stdin=src.encode())
    assert status == 1 and "N must be a whole number from 1, got '0'" in err
    # and the next run without it is back on one thread, with one thread's bits
    assert goat.run_source(src)[0].tobytes() == one[0].tobytes()


def test_a_hold_of_a_thread_that_ended_is_dropped_and_the_threads_given_back():
    """A hold whose thread ended without giving it up is dropped when another thread waits;
    dropping the last one gives the libraries their threads back (it had left them pinned,
    the settings saved again while pinned)."""
    import threading
    from goat.gpu import numpy_backend as nb
    with blas_on_two_threads() as libs:
        t = threading.Thread(target=lambda: nb.hold_blas_threads(1))
        t.start()
        t.join()                        # ended, its hold never released
        assert all(lib.get_num_threads() == 1 for lib in libs)
        hold, _ = nb.hold_blas_threads(3)   # another count: the dead hold is dropped first
        nb.release_blas_threads(hold)
        assert [lib.get_num_threads() for lib in libs] == [2] * len(libs)
