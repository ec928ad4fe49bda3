"""The documentation keeps up with the code: every built-in is documented, and the README's
tour runs as shown."""
import os

import pytest

from conftest import ROOT, run
from goat.ops import builtin_names


def read(*parts):
    with open(os.path.join(ROOT, *parts), encoding="utf-8") as f:
        return f.read()


def test_every_builtin_is_in_the_language_reference():
    doc = read("docs", "language.md")
    missing = [name for name in builtin_names() if "`%s(" % name not in doc]
    assert missing == []


def test_readme_opens_with_the_two_commands():
    lines = read("README.md").splitlines()
    block = lines[lines.index("```sh") + 1:lines.index("```sh") + 3]
    assert block == ["pip install . && goat run examples/lm35/train.mg",
                     "pip install '.[test]' && pytest"]
    assert lines.index("```sh") < 5


def test_readme_tour_runs_and_prints_what_it_says():
    readme = read("README.md")
    tour = readme.split("Paste this into `first.mg`")[1].split("```")[1]
    values = run(tour.strip("\n"))
    assert values[0].tolist() == [[4.5], [9.0]]
    assert values[1].tolist() == [[-1.0, 0.0, 100.0], [-1.0, 0.0, 100.0]]
    assert values[2].shape == (1, 3)
    shown = readme.split("It prints each value")[1].split("```")[1]
    assert "sizes = [2, 1] strides = [1, 1] data = \n[[4.5], \n [9]]" in shown


def test_readme_grad_example_runs_and_learns():
    block = read("README.md").split("Nobody has to derive a backward pass")[1].split("```")[1]
    (classes,) = run(block.strip("\n"))
    assert classes.tolist() == [[1.0], [0.0], [1.0], [0.0]]


def test_examples_run():
    folder = os.path.join(ROOT, "examples")
    for name in os.listdir(folder):
        if name.endswith(".mg"):
            values = run(read("examples", name), path=name)
            assert values, name


def test_readme_repl_transcript_is_what_the_repl_shows():
    import io
    from goat.repl.display import show
    from goat.repl.session import Session
    readme = read("README.md")
    transcript = readme.split("## The REPL")[1].split("```")[1]
    s = Session(out=io.StringIO())
    s.run("let q = [[1, 2], [3, 4], [5, 6]]\nlet k = [[1, 0], [0, 1], [1, 1]]")
    assert " %s\n" % s.hint("q @ transpose(k") in transcript
    assert show(s.run("q @ transpose(k)")[0].value) in transcript


def _reference_examples():
    """(line, program, expected output or None) of every ```goat block of docs/language.md."""
    lines = read("docs", "language.md").splitlines()
    out = []
    i = 0
    while i < len(lines):
        if lines[i] == "```goat":
            start = i + 1
            end = lines.index("```", start)
            program = "\n".join(lines[start:end]) + "\n"
            expected = None
            j = end + 1
            while j < len(lines) and not lines[j].strip():
                j += 1
            if j < len(lines) and lines[j] == "```text":
                close = lines.index("```", j + 1)
                expected = "\n".join(lines[j + 1:close]) + "\n"
            out.append((start, program, expected))
            i = end
        i += 1
    return out


def test_every_statement_kind_has_a_reference_example():
    programs = "".join(p for _, p, _ in _reference_examples())
    for word in ("var ", "for ", "if ", "else", "def ", "return ", "import ", "save(", "load(",
                 "reshape(", "iota(", "randn(", "rand(", "print \"", "+=", " or ", "%"):
        assert word in programs, word


@pytest.mark.parametrize("line, program, expected", _reference_examples())
def test_language_reference_examples_print_what_they_show(tmp_path, line, program, expected):
    import io
    import goat
    path = tmp_path / "example.mg"
    path.write_text(program, encoding="utf-8")
    out = io.StringIO()
    goat.run_file(str(path), stdout=out)
    if expected is not None:
        assert out.getvalue() == expected, "docs/language.md line %d" % line


def test_readme_training_loop_finds_the_weights():
    """The README's loop: least squares by gradient descent, against NumPy's lstsq."""
    readme = read("README.md")
    program = readme.split("so a training loop is a page:")[1].split("```")[1]
    printed = run(program.strip("\n"))
    losses = [float(line.split("loss ")[1]) for line in printed[:-1]]
    assert losses[0] > 1 and losses[-1] < 1e-20
    import numpy as np
    from goat.ops import rng
    x = rng.normal(np, (64, 3), 1)
    y = x @ np.array([[1], [-2], [0.5]]) + 0.1
    a = np.hstack([x, np.ones((64, 1))])
    coef = np.linalg.lstsq(a, y, rcond=None)[0]
    np.testing.assert_allclose(printed[-1], coef[:3].T, atol=1e-12)
    assert "1, -2 and 0.5" in readme
