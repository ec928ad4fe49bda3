"""The pipeline's promises: lets are computed once, what def expansion repeats is computed
once (hash-consing), values are released after their last use, and the parser's replay of
recorded statement shapes builds exactly the tree lark builds."""
import tracemalloc

import numpy as np

import goat
from goat.diagnostics import Source
from goat.gpu.numpy_backend import NumpyBackend
from goat.interp.evaluator import Evaluator
from goat.lexer import ast, parser


class CountingBackend(NumpyBackend):
    """NumPy, counting how often each array function is called."""

    def __init__(self):
        super().__init__()
        self.calls = {}
        outer = self

        class XP:
            def __getattr__(self, name):
                f = getattr(np, name)
                if not callable(f) or isinstance(f, type):
                    return f

                def counted(*a, **k):
                    outer.calls[name] = outer.calls.get(name, 0) + 1
                    return f(*a, **k)
                return counted
        self.xp = XP()


def run_counting(src):
    be = CountingBackend()
    Evaluator(goat.check_source(src), be, out=None).run()
    return be.calls


def ops_named(program, name):
    return [n for n in program.walk() if getattr(n.op, "name", None) == name]


def test_a_let_is_computed_once():
    calls = run_counting("let a = exp([[1, 2]])\nprint a + a\nprint a * a\nprint row_sum(a)")
    assert calls["exp"] == 1


def test_def_expansion_is_shared():
    src = ("def ln_sigma(h: tensor[2x3]) = sqrt(row_mean((h - row_mean(h)) * (h - row_mean(h))) + 1e-05)\n"
           "def ln_hat(h: tensor[2x3]) = (h - row_mean(h)) / ln_sigma(h)\n"
           "let x = [[1, 2, 4], [3, 1, 0]]\n"
           "print ln_hat(x)\nprint ln_hat(x) * 2\nprint col_sum(ln_hat(x))\n")
    program = goat.check_source(src)
    assert len(ops_named(program, "sqrt")) == 1
    assert len(ops_named(program, "row_mean")) == 2          # row_mean(h) and the variance
    calls = run_counting(src)
    assert calls["sqrt"] == 1
    # and the value is right (NumPy, written out separately)
    x = np.array([[1, 2, 4], [3, 1, 0]], dtype=float)
    hat = (x - x.mean(1, keepdims=True)) / np.sqrt(x.var(1, keepdims=True) + 1e-05)
    np.testing.assert_allclose(goat.run_source(src)[0], hat, rtol=1e-14)


def test_identical_subexpressions_in_one_expression():
    program = goat.check_source("let m = [[1, 2]]\nprint exp(m - row_max(m)) / row_sum(exp(m - row_max(m)))")
    assert len(ops_named(program, "exp")) == 1
    assert len(ops_named(program, "row_max")) == 1


def test_values_are_released_after_their_last_use():
    # 60 steps, each making a 1000x1000 matrix (8 MB): kept, they would need 480 MB
    lines = ["let z = [[0]]"]
    ones = "[[%s]]" % ", ".join(["1"] * 1000)
    lines.append("let x0 = z + transpose(%s) @ %s" % (ones, ones))
    for i in range(1, 61):
        lines.append("let x%d = x%d * 0.5 + 1" % (i, i - 1))
    lines.append("print col_sum(row_sum(x60))")
    program = goat.check_source("\n".join(lines))
    tracemalloc.start()
    try:
        ev = Evaluator(program, NumpyBackend(), out=None, keep_printed=True)
        ev.run()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 40e6, peak            # a few steps' worth
    assert all(v is None for v in ev.values)


def test_freeing_can_be_turned_off_for_the_repl():
    program = goat.check_source("let a = [[1, 2]]\nlet b = a * 2\nprint b")
    ev = Evaluator(program, NumpyBackend(), out=None, free=False)
    ev.run()
    assert ev.value(program.lets["b"]).tolist() == [[2.0, 4.0]]


def dump(node):
    """A syntax tree as nested tuples (positions included), for comparing two parses."""
    if isinstance(node, list):
        return [dump(n) for n in node]
    if isinstance(node, np.ndarray):
        return ("array", node.shape, node.tobytes())
    if hasattr(node, "__slots__") and not isinstance(node, (str, float, int, tuple)):
        fields = []
        for cls in type(node).__mro__:
            for f in getattr(cls, "__slots__", ()):
                if f == "source":
                    continue
                fields.append((f, dump(getattr(node, f))))
        return (type(node).__name__, tuple(fields))
    return node


def test_replayed_statements_equal_a_fresh_parse():
    src = ("def f(m: tensor[2x2], g: tensor[1x2]) = (m * g) - row_mean(m * g) / 2\n"
           "let a1 = [[1, 2], [3, 4]]\nlet b1 = f(a1, [[1, -1]]) @ transpose(a1) * 0.5\n"
           "let a2 = [[5, 6], [7, 8]]\nlet b2 = f(a2, [[2, -2]]) @ transpose(a2) * 0.25\n"
           "print -b1 + b2\nprint -b2 + b1\n")
    source = Source("t.mg", src)
    parser._SHAPES.clear()
    first = parser.parse(source)         # lets 2 and 4 (and the prints) are replayed
    parser._SHAPES.clear()
    fresh = [parser._first_parse(parser._Build(source), toks)[0]
             for toks in parser.tokenize(source)]
    assert dump(first.stmts) == dump(fresh)
    assert isinstance(first.stmts[4].expr, ast.Binary)


# ---------------------------------------------------------------------------------------------
# regions: loops and branches in the checked program

LOOP = ("let x = [[0.5, -1, 2]]\nvar acc = x * 0\nfor i in 0..%d {\n"
        "    let e = exp(x * i)\n    let inv = sqrt(x * x)\n    acc = acc + e / 100 + inv\n}\n"
        "print acc\n")


def test_a_loop_body_is_checked_once():
    small, large = goat.check_source(LOOP % 3), goat.check_source(LOOP % 3000)
    assert len(list(small.walk())) == len(list(large.walk()))
    x = np.array([[0.5, -1, 2]])
    want = sum(np.exp(x * i) / 100 + np.sqrt(x * x) for i in range(3))
    # the same association as the program: ((acc + e / 100) + inv), from acc = 0
    acc = x * 0
    for i in range(3):
        acc = acc + np.exp(x * i) / 100 + np.sqrt(x * x)
    assert goat.run_source(LOOP % 3)[0].tolist() == acc.tolist()
    np.testing.assert_allclose(acc, want, rtol=1e-15)


def test_lets_run_once_per_iteration_and_invariants_once_in_all():
    calls = run_counting(LOOP % 25)
    assert calls["exp"] == 25          # depends on i: computed each iteration, once
    assert calls["sqrt"] == 1          # depends on nothing the loop changes: computed before it
    program = goat.check_source(LOOP % 25)
    sqrt, = ops_named(program, "sqrt")
    assert sqrt.region.kind == "pre"            # the loop's pre-region: before its first iteration


def test_nothing_moves_out_of_an_if():
    src = ("let x = [[4, 9]]\nfor i in 0..10 {\n    if i == 7 { print sqrt(x) }\n}\n")
    assert run_counting(src)["sqrt"] == 1
    program = goat.check_source(src)
    sqrt, = ops_named(program, "sqrt")
    assert sqrt.region.kind == "if"
    assert goat.run_source(src)[0].tolist() == [[2.0, 3.0]]


def test_values_of_two_iterations_are_not_merged():
    src = "var v = [[1]]\nfor i in 0..4 {\n    v = v * 2 + 1\n    print v\n}\n"
    assert [a.item() for a in goat.run_source(src)] == [3.0, 7.0, 15.0, 31.0]


def test_static_attributes_join_the_hash_consing_key():
    src = ("let q = [[1, 2, 3], [4, 5, 6]]\nlet a = reshape(q, tensor[3x2])\n"
           "let b = reshape(q, tensor[6x1])\nlet c = reshape(q, tensor[3x2])\n"
           "let z1 = zeros(tensor[2x2])\nlet z2 = zeros(tensor[2x2])\nlet z3 = zeros(tensor[2x3])\n")
    program = goat.check_source(src)
    lets = program.lets
    assert lets["a"] is lets["c"] and lets["a"] is not lets["b"]
    # one fill for both 2x2 zeros; each let is a name of its own over it (for grad)
    assert lets["z1"].args[0] is lets["z2"].args[0] and lets["z1"] is not lets["z2"]
    assert lets["z1"].args[0] is not lets["z3"].args[0]
    assert lets["a"].attrs == ((3, 2),)


def test_loop_temporaries_are_freed_each_iteration():
    """A 100-iteration loop over 8 MB temporaries: peak memory of a few iterations' worth."""
    src = ("let big = ones(tensor[1000x1000])\nvar s = [[0]]\nfor i in 0..100 {\n"
           "    let t = big * i\n    let u = t + 1\n    s = s + col_sum(row_sum(u)) / 1000000\n}\n"
           "print s\n")
    tracemalloc.start()
    try:
        (value,) = goat.run_source(src)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert value.item() == sum(i + 1 for i in range(100))
    assert peak < 60e6, peak


def test_a_def_that_reads_a_file_reads_it_at_each_call(tmp_path):
    np.save(tmp_path / "v.npy", np.array([[1.0]]))
    prog = tmp_path / "p.mg"
    prog.write_text('def f(s: scalar) { let v: tensor[1x1] = load("v.npy"); return v * s }\n'
                    'print f(2)\nsave([[5]], "v.npy")\nprint f(2)\n')
    assert [a.item() for a in goat.run_file(str(prog))] == [2.0, 10.0]
