"""bench/bench_gpu.py times the same model on both sides: checked here without a GPU."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

import goat

ROOT = Path(__file__).resolve().parent.parent
spec = importlib.util.spec_from_file_location("bench_gpu", ROOT / "bench" / "bench_gpu.py")
bench_gpu = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bench_gpu)


def test_the_full_size_program_checks_and_auto_sends_it_to_a_gpu():
    program = goat.check_source(bench_gpu.gpt_program(bench_gpu.FULL, 10), "<gpt>")
    from goat.gpu.auto import choose
    c = choose(program, "f32", None)
    assert c.backend == "cupy", c.reason
    assert c.cpu_seconds > 20 * c.gpu_seconds, c.reason


def test_goat_and_pytorch_train_the_same_model(capsys):
    pytest.importorskip("torch")
    assert bench_gpu.check(steps=3) == 0
    out = capsys.readouterr().out
    assert "largest relative difference" in out


def test_without_a_gpu_nothing_is_measured(capsys):
    from goat.gpu import cupy_usable
    if cupy_usable() is None:
        pytest.skip("a GPU is here")
    assert bench_gpu.main([]) == 1
    assert capsys.readouterr().out.startswith("nothing measured: ")


def test_auto_counts_a_draw_as_its_work_and_an_if_by_the_programs_own_numbers():
    """Found by a newcomer: 1M randn draws (0.17 s here) were estimated at 0.002 s, and an if
    the program's own numbers rule out was counted as if it ran."""
    import goat
    from goat.gpu.auto import region_cost
    draws = goat.check_source("print randn(tensor[1000x1000], 1)\n")
    flops = region_cost(draws.main).flops
    assert flops == 1e6 * 5000                     # randn's cell_flops
    uniform = goat.check_source("print rand(tensor[1000x1000], 1)\n")
    assert region_cost(uniform.main).flops == 1e6 * 500
    body = "if big {\n    print col_sum(row_sum(rand(tensor[1000x1000], 1)))\n}\n"
    off = region_cost(goat.check_source("let big = 0\n" + body).main)
    on = region_cost(goat.check_source("let big = 1\n" + body).main)
    unknown = region_cost(goat.check_source(
        "for big in 0..2 {\n    " + body.replace("\n", "\n    ").rstrip() + "\n}\n").main)
    assert off.flops == 0 and on.flops > 5e8
    assert unknown.flops == 2 * on.flops           # the dearer branch, at every pass


@pytest.mark.parametrize("bounds, products", [("0..50", 2), ("1..steps + 1", 4)])
def test_auto_counts_the_loops_grad_runs_through_a_loop(bounds, products):
    """Found by a newcomer: the loops grad runs for a loop it differentiates through were
    counted once each, as bounds known only when the program runs; so were bounds computed
    from lets (steps + 1).  Now each is counted its 50 steps: from 0, the backward loop's two
    products for the gradients (the loop keeps its own product on a tape); from 1, twice the
    forward product again besides (a copy of the loop keeps the tape, and the backward loop
    computes the product again)."""
    import goat
    from goat.gpu.auto import region_cost
    head = "let steps = 50\nlet w = randn(tensor[64x64], 1)\nvar h = randn(tensor[8x64], 2)\n"
    loop = "for t in %s {\n    h = tanh(h @ w)\n}\n" % bounds
    forward = region_cost(goat.check_source(head + loop + "print h\n").main)
    both = region_cost(goat.check_source(
        head + loop + "print grad(col_sum(row_sum(h)), w)\n").main)
    assert forward.unknown_loops == both.unknown_loops == 0
    product = 2 * 8 * 64 * 64
    assert forward.flops >= 50 * product
    assert 50 * products * product <= both.flops - forward.flops < 50 * (products + 1) * product


def test_auto_counts_a_window_loop_as_its_steps():
    """Found by a reviewer: for j in i..i + 2 in a loop over i was counted once, as bounds
    known only when the program runs, where --aot knows its count (the same rule now)."""
    import goat
    from goat.gpu.auto import region_cost
    cost = region_cost(goat.check_source(
        "var h = randn(tensor[8x64], 1)\nlet w = randn(tensor[64x64], 2)\nfor i in 0..3 {\n"
        "    for j in i..i + 2 {\n        h = tanh(h @ w)\n    }\n}\nprint h\n").main)
    assert cost.unknown_loops == 0
    assert cost.flops >= 6 * 2 * 8 * 64 * 64


def test_auto_counts_the_backward_loop_of_a_window_loop_as_its_steps():
    """Found by a reviewer: grad's loops over a window loop (0..count, -count..0, count its
    maximum(hi - lo, 0)) were counted once, as bounds known only when the program runs."""
    import goat
    from goat.gpu.auto import region_cost
    cost = region_cost(goat.check_source(
        "var w = randn(tensor[16x16], 1)\nvar loss = [[0]]\nfor i in 0..10 {\n"
        "    for j in i..i + 3 {\n        loss += col_sum(row_sum(tanh(w @ w) * j))\n    }\n}\n"
        "print grad(loss, w)\n").main)
    assert cost.unknown_loops == 0


@pytest.mark.parametrize("take", ["narrow(X, 0, k, 4)", "gather(X, iota(tensor[4x1], 0) + k)"])
def test_auto_counts_a_slice_or_a_lookup_as_the_cells_it_takes(take):
    """Found by a newcomer: a batch of 4 rows taken from a million-row table was costed as the
    whole table (16.7 s estimated, where the run took 0.26 s), so auto would have sent a small
    job to the GPU."""
    import goat
    from goat.gpu.auto import region_cost
    cost = region_cost(goat.check_source(
        "let X = zeros(tensor[1000000x10])\nvar s = [[0]]\nfor k in 0..2000 {\n"
        "    s = s + col_sum(row_sum(%s))\n}\nprint s\n" % take).main)
    # the table made once (80 MB) and, per step, some hundreds of bytes
    assert cost.bytes < 8e6 * 10 + 2000 * 2000
