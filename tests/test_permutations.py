"""randperm(N, seed) and argsort(x): shuffling a dataset without replacement, and sorting --
held to NumPy's stable argsort (written separately), to the draws of rand, to central
differences for a derivative through a sort, and to the compiled program's numbers."""
import numpy as np
import pytest

from conftest import central_differences, compiled_numbers, error, run


def _numpy_argsort(x):
    return np.argsort(np.asarray(x, dtype=np.float64), axis=-1, kind="stable")


@pytest.mark.parametrize("n, seed", [(1, 0), (5, 3), (8, 0), (100, 7), (1000, 12345)])
def test_randperm_is_the_order_that_sorts_rands_draws(n, seed):
    perm, draws = run("print randperm(%d, %d)\nprint rand(tensor[%d], %d)\n" % (n, seed, n, seed))
    assert np.array_equal(np.sort(perm), np.arange(n))          # a permutation
    assert np.array_equal(perm, _numpy_argsort(draws))
    typed, = run("print randperm(tensor[%d], %d)\n" % (n, seed))
    assert np.array_equal(typed, perm)


def test_a_permutation_shuffles_rows_without_replacement_and_a_new_seed_gives_another():
    src = """let X = iota(tensor[6x2], 0) * 10 + iota(tensor[6x2], 1)
let N = 6
var seen = zeros(tensor[6])
for epoch in 0..3 {
    let order = randperm(N, epoch)
    print order
    print X[order]
}
"""
    out = run(src)
    X = np.arange(6)[:, None] * 10 + np.arange(2)
    orders = out[0::2]
    for order, rows in zip(orders, out[1::2]):
        assert np.array_equal(rows, X[order.astype(int)])
    assert len({tuple(o) for o in orders}) == 3


def test_argsort_matches_numpys_stable_argsort_with_ties_nans_and_infinities(tmp_path):
    rng = np.random.default_rng(5)
    cases = [rng.integers(0, 4, size=(3, 9)).astype(float),          # many ties
             rng.standard_normal((2, 3, 5)),
             np.array([np.nan, 1.0, -np.inf, np.inf, -0.0, 0.0, -np.nan, -1.0]),
             np.array([[2.0]])]
    for x in cases:
        np.save(tmp_path / "x.npy", x)
        got, = run('let x: tensor[%s] = load("x.npy")\nprint argsort(x)\n'
                   % "x".join(map(str, x.shape)), str(tmp_path / "t.mg"))
        assert np.array_equal(got, _numpy_argsort(x)), x


def test_a_sort_written_with_argsort_differentiates_as_the_gather_it_is():
    """x[argsort(x)] sorts a vector: its gradient is the weights put back where each cell
    came from (argsort's own derivative is zero) -- central differences agree."""
    x0 = np.array([0.3, -1.2, 2.5, 0.7, -0.4])
    c = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    src = """let x = [0.3, -1.2, 2.5, 0.7, -0.4]
print grad(sum(x[argsort(x)] * [1, 2, 3, 4, 5]), x)
"""
    g, = run(src)
    fd = central_differences(lambda d: float(np.sum(np.sort(x0 + d) * c)), x0)
    assert np.allclose(g, fd, atol=1e-8, rtol=0)
    assert np.array_equal(g, np.empty(5)[:0].tolist() or c[np.argsort(np.argsort(x0))])


def test_compiled_permutations_and_sorts_print_the_same_numbers(tmp_path):
    pytest.importorskip("llvmlite")
    src = """var x = [[3, 1, 2, 1, 0], [0, -1, 5, 5, 0]]
x[0, 4] = 0 / 0
x[1, 4] = -1 / 0
print argsort(x)
print randperm(10, 4)
print randperm(tensor[1000], 99)
var total = 0
for epoch in 0..3 {
    total = total + sum(randperm(7, epoch) * iota(tensor[7], 0))
}
print total
"""
    (tmp_path / "p.mg").write_text(src)
    want = [np.asarray(a).ravel().tolist() for a in run(src)]
    assert compiled_numbers(tmp_path) == want


def test_randperm_and_argsort_give_the_same_indices_in_f32():
    import goat
    src = ("print randperm(50, 3)\nprint argsort([[2, 1, 1], [0, 3, -1]])\n"
           "print argsort([2, 1, 1, 0, 0, 0, 0])\nprint argsort(floor(rand(tensor[4x300], 1) * 3))\n")
    f64 = goat.run_source(src)
    f32 = goat.run_source(src, dtype="f32")
    for a, b in zip(f64, f32):
        assert b.dtype == np.float32 and np.array_equal(a, b)
    ties = np.floor(np.asarray(goat.run_source("print rand(tensor[4x300], 1)\n")[0]) * 3)
    assert np.array_equal(f32[3], _numpy_argsort(ties))       # stable, in f32 too


@pytest.mark.parametrize("src, words", [
    ("print randperm(tensor[2x3], 1)",
     "randperm makes a vector, a permutation of 0 to N-1: its type is tensor[N], got "
     "tensor[2x3]"),
    ("print randperm(4, [1, 2])", "the seed of randperm must be a single number, got shape 2"),
    ("print randperm(4, 0.5)", "a seed must be a whole number"),
    ("print randperm(-3, 1)", "argument n of randperm must be a type such as tensor[2x3] or a "
                              "count"),
    ("print argsort(3)", "argsort needs a tensor (rank 1 or more)"),
])
def test_randperm_and_argsort_mistakes(src, words):
    e = error(src + "\n")
    assert words in e.message, e.message
    assert e.loc.line == 1


def test_a_def_may_size_a_permutation_by_its_size_variable():
    """randperm(N, seed) (and onehot(t, V)) in a def, N a size its parameters bind."""
    src = """def shuffled(x: tensor[N, 2], e: scalar) = x[randperm(N, e)]
def hot(t: tensor[N, 1], x: tensor[V, 3]) = onehot(t, V)
print shuffled([[1, 2], [3, 4], [5, 6]], 1)
print rand(tensor[3], 1)
print hot([[0], [2]], zeros(tensor[4x3]))
"""
    rows, draws, hot = run(src)
    x = np.array([[1, 2], [3, 4], [5, 6]])
    assert np.array_equal(rows, x[_numpy_argsort(draws)])
    assert np.array_equal(hot, np.eye(4)[[0, 2]])
