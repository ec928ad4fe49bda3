"""The documentation keeps up with the code: every built-in is documented, and the README's
tour runs as shown."""
import os

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
    assert block == ["pip install . && goat run examples/lm35/train_200.mg",
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
