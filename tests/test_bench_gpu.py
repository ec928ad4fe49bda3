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
