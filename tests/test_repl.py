"""The REPL, driven through prompt-toolkit's pipe input as keystrokes, and once for real in a
pseudo-terminal."""
import io
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from prompt_toolkit.completion import CompleteEvent
from prompt_toolkit.document import Document
from prompt_toolkit.history import InMemoryHistory
from prompt_toolkit.input import create_pipe_input
from prompt_toolkit.output import DummyOutput

from conftest import ROOT, cli
from goat.repl.app import HELP_LINE, GoatCompleter, Repl, else_state, history_path
from goat.repl.session import Session
from goat.diagnostics import GoatError

ENTER, TAB, CTRL_C, CTRL_D = "\r", "\t", "\x03", "\x04"


def paste(text):
    """Text as a terminal pastes it (bracketed paste)."""
    return "\x1b[200~" + text + "\x1b[201~"


class Driven:
    """A REPL fed keystrokes; records the toolbar as it stands after every keystroke.

    (Keys sent through a pipe arrive together and the screen is redrawn once for all of them,
    so the toolbar's text is read, exactly as a redraw would read it, each time the input
    changes -- once the hint thread has worked out the hint for that input.)
    """

    def __init__(self, keys, *later, ready=None):
        """``later``: more keystrokes, each sent 0.3 s after the one before (for what the
        REPL does in the background, such as completing) -- or, with ``ready`` (a test of
        the Repl), once it is true (within 10 s), so that a loaded machine does not fail the
        test."""
        self.out = io.StringIO()
        self.toolbars = []
        self.texts = []             # the input, as it stood at each toolbar
        with create_pipe_input() as inp:
            self.repl = Repl(input=inp, output=DummyOutput(), out=self.out, history=InMemoryHistory())

            def changed(buffer):
                self.repl.hint(buffer.text, self.repl.toolbar_width())     # worked out
                self.toolbars.append("".join(text for _, text in self.repl.toolbar()).strip())
                self.texts.append(buffer.text)
            self.repl.prompt.default_buffer.on_text_changed += changed
            if later:
                def feed():
                    for chunk in later:
                        time.sleep(0.3)
                        deadline = time.monotonic() + 10
                        while (ready is not None and not ready(self.repl)
                               and time.monotonic() < deadline):
                            time.sleep(0.02)
                        inp.send_text(chunk)
                    inp.send_text(CTRL_C + CTRL_D)
                inp.send_text(keys)
                threading.Thread(target=feed, daemon=True).start()
            else:
                inp.send_text(keys + CTRL_C + CTRL_D)
            self.status = self.repl.loop()
        self.text = self.out.getvalue()


def test_a_statement_runs_and_shows_its_type():
    d = Driven("let a = [[1, 2], [3, 4]]" + ENTER + "a @ transpose(a)" + ENTER)
    assert d.status == 0
    assert "a : tensor[2x2]\n" in d.text
    assert "tensor[2x2]\n[[ 5  11]\n [11  25]]\n" in d.text


def test_the_toolbar_shows_the_shape_while_typing():
    d = Driven("let a = [[1, 2], [3, 4]]" + ENTER + "a @ transpose(a)")
    assert "a : tensor[2x2]" in d.toolbars                       # before Enter was pressed
    assert "a @ transpose(a…  :  tensor[2x2]" in d.toolbars      # bracket still open
    assert "a @ transpose(a)  :  tensor[2x2]" in d.toolbars
    # nothing typed at the second prompt was run
    assert d.text.count("tensor[2x2]") == 1


def test_the_toolbar_shows_the_error_it_would_raise():
    d = Driven("let a = [[1, 2], [3, 4]]" + ENTER + "a + [[1, 2, 3]]")
    assert any(t.startswith("error: cannot add shapes 2x2 and 1x3: dimensions 2 and 3 differ")
               for t in d.toolbars)
    assert not any(t.startswith("error") for t in d.toolbars[:-len("1, 2, 3]]")])  # unfinished


def test_errors_show_line_caret_message_and_keep_the_state():
    d = Driven("let a = [[1, 2]]" + ENTER + "let b = a @ a" + ENTER + "let a = a * 10" + ENTER
               + "a" + ENTER)
    assert ("<input 2>:1: error: cannot matrix-multiply shapes 1x2 and 1x2: the inner dimensions 2 and 1 differ\n"
            "1 | let b = a @ a\n"
            "  |         ^~~~~\n") in d.text
    assert "tensor[1x2]\n[[10  20]]" in d.text        # redefinition replaced a; b never existed
    assert [n for n, _ in d.repl.session.names()] == ["a"]


def test_print_keeps_the_memref_format():
    d = Driven("print [[1, 2]]" + ENTER)
    assert "sizes = [1, 2] strides = [2, 1] data = \n[[1,   2]]\n" in d.text


def test_multi_line_input_while_a_bracket_is_open():
    d = Driven("let m = [[1, 2]," + ENTER + "[3, 4]]" + ENTER + "m" + ENTER)
    assert "m : tensor[2x2]" in d.text
    assert "[[1  2]\n [3  4]]" in d.text


def test_tab_completes_a_builtin():
    d = Driven("let a = [[1, 2]]" + ENTER + "let r = row_s" + TAB, "(a)" + ENTER,
               ready=lambda repl: repl.prompt.default_buffer.text.endswith("row_sum"))
    assert "r : tensor[1x1]" in d.text


def test_ctrl_c_cancels_the_input():
    d = Driven("let x = [[1]]" + CTRL_C + "let y = [[2]]" + ENTER)
    assert [n for n, _ in d.repl.session.names()] == ["y"]


def test_ctrl_c_interrupts_a_running_evaluation(monkeypatch):
    calls = []
    real_run = Session.run_statement

    def interrupted_once(self, stmt):
        if not calls:
            calls.append(stmt)
            snap = self._snapshot()
            self._check(stmt)
            self._restore(snap)              # what run_statement does when interrupted
            raise KeyboardInterrupt
        return real_run(self, stmt)
    monkeypatch.setattr(Session, "run_statement", interrupted_once)
    d = Driven("let a = [[1]]" + ENTER + "let a = [[2]]" + ENTER + "a" + ENTER)
    assert "interrupted; that statement was taken back" in d.text
    assert "tensor[1x1]\n[[2]]" in d.text


def test_an_interrupt_inside_the_evaluator_takes_the_statement_back(monkeypatch):
    s = Session(out=io.StringIO())
    s.run("let a = [[1, 2]]")
    from goat.interp import evaluator

    def boom(self, keep=None):
        raise KeyboardInterrupt
    monkeypatch.setattr(evaluator.Evaluator, "run", boom)
    with pytest.raises(KeyboardInterrupt):
        s.run("let b = a * 2")
    monkeypatch.undo()
    assert [n for n, _ in s.names()] == ["a"]
    (r,) = s.run("a * 3")
    assert r.value.tolist() == [[3.0, 6.0]]


def test_commands():
    path = os.path.join(ROOT, "examples", "tour.mg")
    d = Driven(":help" + ENTER + ":load " + path + ENTER + ":env" + ENTER + ":type q @ transpose(q)"
               + ENTER + ":reset" + ENTER + ":env" + ENTER + ":bogus" + ENTER + ":quit" + ENTER
               + "let never = 1" + ENTER)
    assert ":type EXPR" in d.text
    assert "loaded %s: 9 statements" % path in d.text
    assert "attention : tensor[6x6]" in d.text
    assert "def softmax_rows(m: tensor[6x6]) -> tensor[6x6]" in d.text
    assert "\ntensor[6x6]\n" in d.text                      # :type
    assert "nothing is defined yet" in d.text
    assert "no command :bogus" in d.text
    assert d.repl.session.names() == []                     # :quit left before the last line


def test_load_is_all_or_nothing(tmp_path):
    bad = tmp_path / "bad.mg"
    bad.write_text("let ok = [[1]]\nlet worse = ok @ [[1, 2], [3, 4]]\n")
    d = Driven(":load " + str(bad) + ENTER)
    assert "bad.mg:2: error: cannot matrix-multiply" in d.text
    assert d.repl.session.names() == []


def test_load_completes_programs_and_folders_with_their_slash(tmp_path):
    """:load exd<Tab> had given 'exdir' (a second Tab then did nothing), and every file was
    offered, not only programs."""
    (tmp_path / "exdir").mkdir()
    (tmp_path / "exdir" / "inner.mg").write_text("print [[1]]\n")
    for name in ["model.mg", "notes.txt", "model.ll", "run.py"]:
        (tmp_path / name).write_text("")
    c = GoatCompleter(Session(out=io.StringIO()))

    def texts(line):
        return sorted(x.text for x in c.get_completions(Document(line), CompleteEvent()))
    base = ":load %s/" % tmp_path
    assert texts(base) == ["exdir/", "model.mg"]
    assert texts(base + "exd") == ["ir/"]
    assert texts(base + "exdir/") == ["inner.mg"]
    assert texts(base + "no") == []


def test_completion_offers_names_with_shapes_and_signatures():
    s = Session(out=io.StringIO())
    s.run("let alpha = [[1, 2, 3]]\ndef affine(x: tensor[1x3]) = x * 2 + 1")
    c = GoatCompleter(s)
    got = {x.text: x.display_meta_text for x in c.get_completions(Document("print a"), CompleteEvent())}
    assert got["alpha"] == "tensor[1x3]"
    assert got["affine"] == "def affine(x: tensor[1x3]) -> tensor[1x3]"
    assert got["abs"] == "abs(x: S) -> S"
    cmds = [x.text for x in c.get_completions(Document(":t"), CompleteEvent())]
    assert cmds == [":type "]           # it takes an expression: the space comes with it
    cmds = [x.text for x in c.get_completions(Document(":lo"), CompleteEvent())]
    assert cmds == [":load "]
    cmds = [x.text for x in c.get_completions(Document(":q"), CompleteEvent())]
    assert cmds == [":quit"]            # it takes nothing


def test_completion_offers_a_modules_defs_after_its_name_and_a_dot():
    s = Session(out=io.StringIO())
    s.run("import nn")
    c = GoatCompleter(s)

    def complete(text):
        return {x.text: (x.start_position, x.display_meta_text)
                for x in c.get_completions(Document(text), CompleteEvent(completion_requested=True))}
    got = complete("let p = nn.softmax_r")
    assert sorted(got) == ["softmax_rows", "softmax_rows_back"]
    assert got["softmax_rows"] == (-9, "def softmax_rows(m: tensor[..., N, C]) -> "
                                       "tensor[..., N, C]")
    every = complete("print nn.")
    assert "cross_entropy" in every and "dropout" in every and every["dropout"][0] == 0
    assert not any(name.startswith("nn") or name == "abs" for name in every)
    assert ("nn", "module") in s.names()
    # after a name that is not a module, nothing; names complete as before
    s.run("let alpha = [[1.0]]")
    assert "alpha" in complete("print al") and complete("print alpha.") == {}


def test_history_lives_in_the_xdg_state_folder(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    assert history_path() == str(tmp_path / "goat" / "history")


def test_values_are_right():
    s = Session(out=io.StringIO())
    s.run("let x = [[0.5, -1], [2, 3]]\ndef sm(m: tensor[2x2]) = exp(m) / row_sum(exp(m))")
    (r,) = s.run("sm(x)")
    x = np.array([[0.5, -1], [2, 3]])
    np.testing.assert_allclose(r.value, np.exp(x) / np.exp(x).sum(1, keepdims=True), rtol=1e-15)


class Terminal:
    """The real `goat` in a pseudo-terminal (pexpect), its screen kept by a VT100 emulator
    (pyte), which also answers the cursor-position requests prompt-toolkit makes."""

    def __init__(self, env, rows=24, cols=100, args=()):
        import pexpect
        import pyte
        self.pexpect = pexpect
        self.child = pexpect.spawn(sys.executable, ["-m", "goat", *args], env=env,
                                   encoding="utf-8",
                                   dimensions=(rows, cols), timeout=30)
        child = self.child

        class Screen(pyte.Screen):
            def write_process_input(self, data):
                child.send(data)
        self.screen = Screen(cols, rows)
        self.stream = pyte.Stream(self.screen)

    @classmethod
    def started(cls, tmp_path, args=(), prompt="goat>"):
        """goat (with ``args``) in a terminal, its history under ``tmp_path``, once
        ``prompt`` shows (skips the test without pexpect or pyte)."""
        pytest.importorskip("pexpect")
        pytest.importorskip("pyte")
        env = dict(os.environ, PYTHONPATH=ROOT, XDG_STATE_HOME=str(tmp_path), TERM="xterm")
        term = cls(env, args=args)
        term.wait_for(prompt)
        return term

    def lines(self):
        return [line.rstrip() for line in self.screen.display]

    def wait_for(self, text, seconds=20):
        end = time.time() + seconds
        while time.time() < end:
            try:
                self.stream.feed(self.child.read_nonblocking(65536, timeout=0.1))
            except self.pexpect.TIMEOUT:
                pass
            if any(text in line for line in self.lines()):
                return True
        raise AssertionError("%r never appeared; the screen:\n%s" % (text, "\n".join(self.lines())))


@pytest.mark.parametrize("args, said", [
    (["--dtype", "f32"], "back end: numpy, precision f32"),
    (["--backend=numpy", "--dtype=f32"], "back end: numpy, precision f32"),
    (["--dtype", "f64"], "back end: numpy, precision f64"),
])
def test_plain_goat_with_the_repl_options_starts_the_repl_with_them(tmp_path, args, said):
    """goat --dtype f32 on a terminal had said "invalid choice: 'f32'" for a COMMAND."""
    term = Terminal.started(tmp_path, args)
    try:
        term.child.send(":dtype" + ENTER)
        term.wait_for(said)
        term.child.send(CTRL_D)
        term.child.expect(term.pexpect.EOF)
    finally:
        term.child.close()
    assert term.child.exitstatus == 0


@pytest.mark.parametrize("args, named", [(["--time"], "--time needs"),
                                         (["--threads", "2", "--quiet"], "--threads --quiet need"),
                                         (["--dtype", "f32", "--aot"], "--aot needs"),
                                         (["--backend", "numpy", "--time"], "--time needs")])
def test_plain_goat_with_run_options_only_asks_for_a_file(tmp_path, args, named):
    """goat --time on a terminal had said "unrecognized arguments: --time" under a usage
    line that lists it."""
    term = Terminal.started(tmp_path, args, prompt="goat: error:")
    term.child.expect(term.pexpect.EOF)
    term.child.close()
    assert term.child.exitstatus == 1
    screen = "".join(term.lines()).replace(" ", "")       # (the line wraps)
    said = ("goat: error: %s a FILE to run (goat run %s FILE); plain goat starts the REPL, "
            "which takes --backend and --dtype" % (named, " ".join(args)))
    assert screen == said.replace(" ", "")


def test_plain_goat_with_an_unknown_option_says_so(tmp_path):
    """goat --bogus on a terminal had been told it needs a FILE."""
    term = Terminal.started(tmp_path, ["--bogus"], prompt="goat: error:")
    term.child.expect(term.pexpect.EOF)
    term.child.close()
    assert term.child.exitstatus == 1
    assert "goat: error: unrecognized arguments: --bogus" in "\n".join(term.lines())


def test_plain_goat_with_options_and_output_to_a_file_reads_a_program(tmp_path):
    """goat --dtype f32 > out with a terminal on standard input had said "invalid choice:
    'f32'"; plain goat > out reads a program from the terminal, and so does it now."""
    pexpect = pytest.importorskip("pexpect")
    env = dict(os.environ, PYTHONPATH=ROOT)
    out = tmp_path / "out.txt"
    child = pexpect.spawn("/bin/sh", ["-c", '"$0" -m goat --dtype f32 > "$1"', sys.executable,
                                      str(out)], env=env, timeout=30, encoding="utf-8")
    child.expect("reading a program from the terminal")
    child.send("print 1 / 3" + "\n")
    time.sleep(0.3)
    child.sendcontrol("d")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    assert out.read_text().splitlines()[1] == "[0.333333]"


def test_end_to_end_in_a_pseudo_terminal(tmp_path):
    term = Terminal.started(tmp_path)
    try:
        term.child.send("let a = [[1, 2], [3, 4]]")
        term.wait_for(" a : tensor[2x2]")                      # the hint, before Enter
        assert term.lines()[-1].strip() == "a : tensor[2x2]"   # ... in the bottom toolbar
        term.child.send(ENTER)
        term.child.send("a @ a")
        term.wait_for("a @ a  :  tensor[2x2]")
        term.child.send(ENTER)
        term.wait_for("[15  22]]")
        screen = "\n".join(term.lines())
        assert "a : tensor[2x2]\ngoat> a @ a\ntensor[2x2]\n[[ 7  10]\n [15  22]]" in screen
        term.child.send(CTRL_D)
        term.child.expect(term.pexpect.EOF)
    finally:
        term.child.close()
    assert term.child.exitstatus == 0
    with open(tmp_path / "goat" / "history", encoding="utf-8") as f:
        assert "a @ a" in f.read()


def test_ctrl_r_then_enter_runs_the_match():
    # one Enter, as readline does: it takes the line found and runs it
    d = Driven("let zz = [[5]]" + ENTER + "\x12zz", ENTER)
    assert d.text.count("zz : tensor[1x1]") == 2
    assert d.repl.inputs == 2


@pytest.mark.parametrize("keys", ["\x12zz" + ENTER, "\x1b[A" + ENTER, "\x1b[A\x1b[A" + ENTER])
def test_history_keys_typed_while_a_statement_runs_find_the_history(keys):
    # all keys in one write: what follows the first Enter reaches the next prompt before its
    # first redraw, as keys typed during a long statement do (they ran an empty line)
    d = Driven("let yy = [[6]]" + ENTER + "let zz = [[5]]" + ENTER + keys)
    want = "yy" if keys.count("\x1b[A") == 2 else "zz"
    assert d.text.count(want + " : tensor[1x1]") == 2
    assert d.repl.inputs == 3


def test_several_statements_show_their_results_in_order():
    d = Driven(paste("let a = [[1, 2]]\nlet b = a * 2\nb + 1\nprint b") + ENTER)
    text = d.text
    assert (text.index("a : tensor[1x2]") < text.index("b : tensor[1x2]")
            < text.index("[[3  5]]") < text.index("sizes = [1, 2]"))


def test_a_failing_statement_in_a_pasted_input_is_taken_back_alone():
    d = Driven(paste("let a2 = [[5]]\nlet b2 = [[1, 2]] @ [[1, 2]]\nlet c2 = [[1]]") + ENTER)
    assert "a2 : tensor[1x1]" in d.text
    assert [n for n, _ in d.repl.session.names()] == ["a2"]


def test_a_bug_in_goat_does_not_end_the_session(monkeypatch):
    real = Session.run_statement
    calls = []

    def broken_once(self, stmt):
        if not calls:
            calls.append(1)
            raise ZeroDivisionError("simulated")
        return real(self, stmt)
    monkeypatch.setattr(Session, "run_statement", broken_once)
    d = Driven("let a = [[1]]" + ENTER + "let a = [[2]]" + ENTER)
    assert "goat: internal error (ZeroDivisionError: simulated)" in d.text
    assert "a : tensor[1x1]" in d.text


def test_python_habits_and_command_arguments():
    d = Driven(":reset now" + ENTER + ":load \"%s\"" % os.path.join(ROOT, "examples", "tour.mg")
               + ENTER + "exit" + ENTER + "let never = 1" + ENTER)
    assert ":reset takes no argument" in d.text
    assert "loaded" in d.text
    assert "never" not in [n for n, _ in d.repl.session.names()]


@pytest.mark.parametrize("word, command", [("help", ":help"), ("quit", ":quit"),
                                           ("exit()", ":quit")])
def test_the_toolbar_says_what_a_python_habit_does_on_enter(word, command):
    """Found by a REPL newcomer: help, quit and exit() showed "error: unknown name", then
    Enter did what they ask.  A name the session defines is itself, as before."""
    from goat.repl.app import COMMANDS
    d = Driven(word)
    assert d.toolbars[-1] == "%s: %s" % (command, COMMANDS[command])
    d = Driven("let help = [[1]]" + ENTER + "help")
    assert d.toolbars[-1].startswith("help  :  tensor[1x1]")


def test_values_fit_the_terminal():
    from goat.repl.display import show
    text = show(np.arange(1.0, 41.0).reshape(1, 40), width=80)
    assert max(len(line) for line in text.splitlines()) <= 80
    assert text.splitlines()[1].startswith("[[ 1   2   3") and text.endswith("39  40]]")
    assert show(np.zeros((2, 0))) == "tensor[2x0]\n(empty)"
    assert show(np.float64(7)) == "scalar\n7"


def test_no_hint_for_what_is_plainly_unfinished():
    s = Session(out=io.StringIO())
    s.run("let a = [[1, 2], [3, 4]]")
    for text in ["let m = [[1, 2],", "exp(", "(", "def h(x: tensor[2x2], y: ", "[[1, 2], [3", "[",
                 "le", "a + [[1, 2"]:
        assert s.hint(text) == "", text
    assert s.hint("exp(a + [[1, 2, 3]]").startswith("error: cannot add shapes 2x2 and 1x3")
    assert s.hint("foo + ro") == "error: unknown name 'foo'"


def test_a_partly_typed_module_member_shows_the_candidates():
    """nn. had shown "error: unexpected character '.'" and nn.ge "module nn has no def or let
    named 'ge'", while row_ showed the built-ins it could be."""
    s = Session(out=io.StringIO())
    s.run("import nn\nlet x = [[1, 2]]")
    members = sorted(n for n, _ in s.members())
    assert len(members) > 6
    assert s.hint("nn.") == "nn.…  (%s, …)" % ", ".join(members[:6])
    assert s.hint("nn.ge") == "nn.ge…  (nn.gelu)"
    assert s.hint("x + nn.la") == "nn.la…  (nn.layer_norm, nn.layer_norm_back)"
    assert s.hint("print nn.softmax_") == "nn.softmax_…  (nn.softmax_rows, nn.softmax_rows_back)"
    assert s.hint("nn.zz") == "error: module nn has no def or let named 'zz'"
    assert s.hint("nn.gelu(x") == "nn.gelu(x…  :  tensor[1x2]"
    assert s.hint("x.") == ("error: unexpected character '.'; a dot is followed, with no "
                            "space, by the name of a module's def: nn.linear (in the REPL, Tab "
                            "after the dot lists them)")
    assert s.hint("ro").startswith("ro…  (row_max, ")
    # inside an open call and inside a block too (they had shown nothing, and an error)
    assert s.hint("exp(nn.ge") == "nn.ge…  (nn.gelu)"
    assert s.hint("for i in 0..3 {\n  print nn.ge") == "nn.ge…  (nn.gelu)"
    assert s.hint("for i in 0..3 {\n  let y = exp(nn.la") == (
        "nn.la…  (nn.layer_norm, nn.layer_norm_back)")


def test_repl_with_its_input_piped_writes_a_transcript():
    """goat repl < session.txt: each input echoed after the prompt (an open bracket or an if
    that an else may follow joins lines, as Enter does on a terminal) and answered as on a
    terminal; an error does not end the session, but makes the status 1."""
    from conftest import cli
    session = ("let q = [[1, 2]]\n"
               "q @ transpose(q)\n"
               "q + [[1, 2, 3]]\n"
               "var s = 0\n"
               "for i in 0..3 {\n  s = s + i\n}\n"
               "if s > 2 {\n  print \"big\"\n}\n"
               "else {\n  print \"small\"\n}\n"
               "if s > 5 {\n  print \"huge\"\n}\n"
               "def f(x: tensor[1x2]) = row_sum(x)\n"
               ":type f\n")
    status, out, err = cli("repl", stdin=session.encode())
    assert (status, err) == (1, "")
    assert out == (
        "goat> let q = [[1, 2]]\nq : tensor[1x2]\n"
        "goat> q @ transpose(q)\ntensor[1x1]\n[[5]]\n"
        "goat> q + [[1, 2, 3]]\n<input 3>:1: error: cannot add shapes 1x2 and 1x3: dimensions 2 "
        "and 3 differ and neither is 1\n1 | q + [[1, 2, 3]]\n  | ^~~~~~~~~~~~~~~\n"
        "goat> var s = 0\nvar s : scalar\n"
        "goat> for i in 0..3 {\n  ...   s = s + i\n  ... }\n"
        "goat> if s > 2 {\n  ...   print \"big\"\n  ... }\n  ... else {\n  ...   print \"small\"\n"
        "  ... }\nbig\n"
        "goat> if s > 5 {\n  ...   print \"huge\"\n  ... }\n"
        "goat> def f(x: tensor[1x2]) = row_sum(x)\ndef f(x: tensor[1x2]) -> tensor[1x1]\n"
        "goat> :type f\ndef f(x: tensor[1x2]) -> tensor[1x1]\n")
    assert cli("repl", stdin=b"let a = [[1]]\n:quit\nprint a + [[1, 2]]\n")[:2] == (
        0, "goat> let a = [[1]]\na : tensor[1x1]\ngoat> :quit\n")


def test_values_handed_out_are_copies():
    s = Session(out=io.StringIO())
    s.run("let a = [[1, 2]]")
    (r,) = s.run("a")
    r.value[0, 0] = 99
    (again,) = s.run("a")
    assert again.value.tolist() == [[1.0, 2.0]]


def test_load_follows_the_rules_of_a_file(tmp_path):
    twice = tmp_path / "twice.mg"
    twice.write_text("let a = [[1]]\nlet a = [[2]]\n")
    early = tmp_path / "early.mg"
    early.write_text("print b\nlet b = [[1]]\n")
    s = Session(out=io.StringIO())
    s.run("let a = [[0]]")                  # a file may still replace a name of the session
    with pytest.raises(Exception) as e:
        s.load(str(twice))
    assert "'a' is already defined on line 1" in str(e.value)
    with pytest.raises(Exception) as e:
        s.load(str(early))
    assert "it is defined later, on line 2" in str(e.value)
    assert s.names() == [("a", "tensor[1x1]")]


def test_the_hint_follows_the_session():
    d = Driven("zeta" + CTRL_C + "let zeta = [[1, 2]]" + ENTER + "zeta")
    assert "error: unknown name 'zeta'" in d.toolbars
    assert d.toolbars[-1] == "zeta  :  tensor[1x2]"


def test_hint_inside_a_block_shows_the_statement_being_typed():
    s = Session(out=io.StringIO())
    s.run("var w = [[1, 2]]")
    assert s.hint("for i in 0..3 {\n  let a = w * i") == "a : tensor[1x2]"
    assert s.hint("for i in 0..3 {\n  w = w * 2") == "w : tensor[1x2]"
    assert s.hint("for i in 0..3 {\n  if i > 1 {\n    let b = transpose(w") == "b : tensor[2x1]"
    assert s.hint("def f(x: tensor[N, K]) {\n  let y = row_sum(x)") == "y : tensor[N, 1]"
    assert s.hint("def f(x: tensor[N, K]) {\n  return row_sum(x), x") == "(tensor[N, 1], tensor[N, K])"
    assert s.hint("for i in 0..3 {\n  let a = w @ w").startswith(
        "error: cannot matrix-multiply shapes 1x2 and 1x2")
    assert s.hint("for i in 0..3 {") == ""
    # nothing of what the hints checked stays in the session
    assert [n for n, _ in s.names()] == ["w"]


def test_a_loop_typed_at_the_repl_runs():
    out = io.StringIO()
    s = Session(out=out)
    s.run("var total = 0")
    results = s.run("for i in 1..5 {\n  total += i\n  if i == 4 { print \"i = {i}\" }\n}")
    assert [r.kind for r in results] == ["block"]
    assert out.getvalue() == "i = 4\n"
    assert s.run("total")[0].value == 10.0
    assert s.describe("total") == "scalar"
    assert s.describe("var t2 = total * [[1, 2]]") == "var t2 : tensor[1x2]"


def test_the_toolbar_keeps_its_help_while_the_input_is_unfinished():
    d = Driven("let m = [[1, 2]," + ENTER + "[3, 4" + CTRL_C + "pri" + CTRL_C + "exp(")
    shown = dict(zip(d.texts, d.toolbars))
    for text in ["l", "let m = [[1, 2],", "let m = [[1, 2],\n", "let m = [[1, 2],\n[3, 4", "pri",
                 "exp("]:
        assert shown[text] == HELP_LINE, (text, shown[text])
    assert "" not in d.toolbars


def test_type_of_a_def_shows_its_signature():
    d = Driven("def f(x: tensor[1x2]) = x * 2" + ENTER + "import nn" + ENTER + ":type f" + ENTER
               + ":type exp" + ENTER + ":type nn.softmax_rows" + ENTER + ":t nn" + ENTER
               + ":type f")
    defs = re.findall(r"^def ([a-z]\w*)", (Path(ROOT) / "stdlib" / "nn.mg").read_text(), re.M)
    # an import had been answered by its own words, "import nn"
    assert ("nn : module, %d defs (Tab after nn. lists them)\n"
            "def f(x: tensor[1x2]) -> tensor[1x2]\n" % len(defs)) in d.text
    assert "\nexp(x: S) -> S\n" in d.text
    assert "\ndef nn.softmax_rows(m: tensor[..., N, C]) -> tensor[..., N, C]\n" in d.text
    assert "\nmodule nn\n" in d.text
    assert d.toolbars[-1] == "def f(x: tensor[1x2]) -> tensor[1x2]"     # the bar, as typed


def test_errors_of_type_are_labelled_like_inputs():
    d = Driven("let q = [[1, 2]]" + ENTER + ":type q @ q" + ENTER + ":type nope" + ENTER)
    assert ("<input 2>:1: error: cannot matrix-multiply shapes 1x2 and 1x2: the inner dimensions "
            "2 and 1 differ\n1 | q @ q\n") in d.text
    assert "<input 3>:1: error: unknown name 'nope'" in d.text
    assert "<repl>" not in d.text


def test_load_counts_its_statements_in_english(tmp_path):
    one = tmp_path / "one.mg"
    one.write_text("let a = [[1]]\n")
    two = tmp_path / "two.mg"
    two.write_text("let b = [[1]]\nlet c = b\n")
    d = Driven(":load " + str(one) + ENTER + ":load " + str(two) + ENTER)
    assert "loaded %s: 1 statement\n" % one in d.text
    assert "loaded %s: 2 statements\n" % two in d.text


def test_help_fits_80_columns():
    d = Driven(":help" + ENTER)
    assert ":type EXPR" in d.text and "else" in d.text
    assert max(len(line) for line in d.text.splitlines()) <= 80


def test_else_on_the_line_after_the_brace_of_an_if():
    d = Driven("var a = 1" + ENTER
               + "if a > 1 { print 10 }" + ENTER + "else { print 20 }" + ENTER    # the else
               + "if a > 1 {" + ENTER + "print 30" + ENTER + "}" + ENTER
               + "else if a > 0 {" + ENTER + "print 40" + ENTER + "}" + ENTER
               + "else { print 50 }" + ENTER                                    # a chain
               + "if a > 0 { print 60 }" + ENTER + ENTER                         # Enter: runs
               + "if a > 0 { print 70 }" + ENTER + "print 80" + ENTER            # not an else
               + "if a > 0 { print 90 } else { print 100 }" + ENTER              # one line
               + "print 110" + ENTER)
    printed = [int(line.strip("[]")) for line in d.text.splitlines() if line.startswith("[")]
    assert printed == [20, 40, 60, 70, 80, 90, 110]
    assert "error" not in d.text
    assert "Enter runs the if; or go on with else { ... }" in d.toolbars
    assert d.repl.inputs == 7


@pytest.mark.parametrize("text, state", [
    ("if a > 0 { print 1 }", "closing"),
    ("if a > 0 { print 1 }\n", "after"),
    ("if a > 0 { print 1 }\n  ", "after"),
    ("if a > 0 {\n  print 1\n}  # done", "closing"),
    ("if a > 0 { print 1 } else { print 2 }", None),
    ("if a > 0 { print 1 } else if a < 0 { print 2 }", "closing"),
    ("if a > 0 { print 1 }\nelse {\n  print 2\n}", None),
    ("for i in 0..3 { if i > 1 { print i } }", None),       # an if inside a block: no wait
    ("for i in 0..3 { print i }", None),
    ("def f(x: tensor[1x1]) {\n  return x\n}", None),
    ("if a > 0 { print \"}\" }", "closing"),                # braces in strings do not count
    ("if a > 0 { print \"{\" }", "closing"),
    ("if a > 0 { print 1 } # {", "closing"),
    ("if a > 0 { print 1 }; print 2", None),
    ("if a > 0 { print 1 }\nprint 2", None),
    ("if a > 0 { print 1", None),
    ("let x = 1", None),
])
def test_else_state(text, state):
    assert else_state(text) == state


def test_a_history_that_is_not_a_regular_file_is_not_read(tmp_path, monkeypatch):
    from goat.repl import app as repl_app
    state = tmp_path / "state"
    (state / "goat").mkdir(parents=True)
    os.symlink("/dev/zero", state / "goat" / "history")
    monkeypatch.setenv("XDG_STATE_HOME", str(state))
    history, problem = repl_app._history()
    assert isinstance(history, InMemoryHistory)
    assert problem.endswith("history is not a regular file")


def test_only_the_end_of_a_long_history_is_read(tmp_path, monkeypatch):
    from goat.repl import app as repl_app
    path = tmp_path / "history"
    with open(path, "w") as f:
        for i in range(200_000):
            f.write("\n# time\n+let a%d = [[%d]]\n" % (i, i))
    monkeypatch.setattr(repl_app._History, "MAX_BYTES", 100_000)
    strings = list(repl_app._History(str(path)).load_history_strings())
    assert strings[0] == "let a199999 = [[199999]]"          # the newest first
    assert 2000 < len(strings) < 4000 and all(s.startswith("let a") for s in strings)


def test_the_hint_shows_a_gradients_shape_before_it_runs():
    s = Session(out=io.StringIO())
    s.run("let w = [[1, 2, 3]]")
    s.run("let x = [[1], [2]]")
    assert s.hint("let g = grad(col_sum(row_sum(x @ w)), w)") == "g : tensor[1x3]"
    assert s.hint("let gx, gw = grad(col_sum(row_sum(x @ w)), x, w)").startswith("gx")
    assert s.hint("grad(x @ w, w)").startswith(
        "error: grad needs a loss of one element, got shape 2x3")
    assert s.hint("grad", signatures=True).startswith("grad(loss, w1, w2, ...)")
    s.run("let g = grad(col_sum(row_sum(x @ w)), w)")
    assert s.names()[-1] == ("g", "tensor[1x3]")


LONG_LOOP = "var s = 0\nfor i in 0..300000000 { s = s + 1 }\nprint s\n"


@pytest.mark.parametrize("signum, status, said", [(signal.SIGTERM, 143, "goat: terminated"),
                                                  (signal.SIGINT, 130, "goat: interrupted")])
def test_a_signal_ends_a_piped_session(tmp_path, signum, status, said):
    """With its input piped, nobody is there to type the next line: SIGTERM (timeout, kill)
    and Ctrl-C end the session, as they end goat run (they had only taken back the statement
    running, and the rest of the input ran on)."""
    (tmp_path / "s.txt").write_text(LONG_LOOP)
    env = dict(os.environ, PYTHONPATH=ROOT)
    with open(tmp_path / "s.txt") as stdin:
        p = subprocess.Popen([sys.executable, "-m", "goat", "repl"], stdin=stdin, env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(2.5)
    p.send_signal(signum)
    out, err = p.communicate(timeout=60)
    assert p.returncode == status
    assert err.strip().splitlines()[-1] == said
    assert "print s" not in out                   # the rest of the input did not run


def test_sigterm_ends_an_interactive_session(tmp_path):
    """At the terminal Ctrl-C takes back the statement and keeps the session; SIGTERM ends it
    with status 143 (it had been taken as a Ctrl-C: only kill -9 stopped the REPL)."""
    term = Terminal.started(tmp_path)
    try:
        term.child.send("var s = 0" + ENTER)
        term.wait_for("var s : scalar")
        term.child.send("for i in 0..300000000 { s = s + 1 }" + ENTER)
        time.sleep(1.5)
        term.child.kill(signal.SIGINT)
        term.wait_for("that statement was taken back")
        term.child.send("print 7" + ENTER)
        term.wait_for("[7]")
        term.child.send("for i in 0..300000000 { s = s + 1 }" + ENTER)
        time.sleep(1.5)
        term.child.kill(signal.SIGTERM)
        term.child.expect(term.pexpect.EOF, timeout=30)
    finally:
        term.child.close()
    assert term.child.exitstatus == 143


def test_a_bad_byte_in_a_piped_input_fails_that_input_only():
    """One byte that is not UTF-8 had ended the whole session before its first line; now it
    is that input's error (in a comment, none), and the session goes on."""
    status, out, err = cli("repl", stdin=b"print 1\nprint [[2\xff]]\nprint 3 # caf\xe9\n")
    assert status == 1
    lines = out.splitlines()
    assert "goat> print [[2\ufffd]]" in lines
    assert "<input 2>:1: error: the file is not UTF-8 text (byte 0xff cannot be decoded)" in lines
    assert lines[-2:] == ["Unranked Memref base@ = 0x\u2026 rank = 0 offset = 0 sizes = [] "
                          "strides = [] data = ", "[3]"]


def test_a_name_defined_in_an_earlier_input_is_placed_in_that_input():
    """In the REPL "line 1" alone would mean the current input's line: the message names the
    input that defined the name (in a file, the line alone, as before)."""
    s = Session(out=io.StringIO())
    s.run("let a = [[1.0]]", "<input 1>")         # as the REPL names its inputs
    s.run("print a", "<input 2>")
    with pytest.raises(GoatError) as info:
        s.run("a = [[2.0]]", "<input 3>")
    assert info.value.message == ("cannot assign to 'a': it is defined with let on line 1 of "
                                  "<input 1>, which cannot change; declare it with var to "
                                  "assign to it")
    # a block's own a (found by a REPL newcomer: an earlier input's name had been refused)
    s.run("if 1 > 0 {\n    let a = 2\n    print a\n}", "<input 4>")
    with pytest.raises(GoatError) as info:
        s.run("let b = 1\nb = 2")
    assert "defined with let on line 1, which" in info.value.message
    s.run("let c = 1")                              # the API's inputs are all "<repl>"
    with pytest.raises(GoatError) as info:
        s.run("c = 2")
    assert "defined with let on line 1 of an earlier input, which" in info.value.message


def test_dtype_back_to_f64_says_the_values_keep_float32_digits():
    """:dtype f32 rounds every value to float32; going back to f64 cannot bring the digits
    back, and says so (only when there are values)."""
    status, out, err = cli("repl", stdin=b":dtype f32\n:dtype f64\nlet a = [[1.0]] / 3\n"
                                          b":dtype f32\n:dtype f64\nprint a\n")
    assert status == 0
    lines = out.splitlines()
    assert lines.count("back end: numpy, precision f64") == 2
    note = ("the values computed so far keep float32's digits (about 7); compute them again "
            "to have float64's")
    assert out.count(note) == 1
    assert lines.index(note) > lines.index("a : tensor[1x1]")
    assert "[[0.333333]]" in out


def test_a_loaded_file_redefining_a_var_in_nested_loops_names_the_line(tmp_path):
    """Found by a newcomer: with a loop inside the loop, a clash had been placed on the wrong
    line.  A clash is now the file's own only: a session's name is not the file's."""
    from goat.repl.session import Session
    s = Session()
    s.run("var h = [[1]]")
    # the file's own h, in its block, within its own file: named by its line
    (tmp_path / "f.mg").write_text("var h = [[3]]\nfor s in 0..2 {\n"
                                   "    var h = zeros(tensor[2, 2])\n"
                                   "    for t in 0..2 {\n        h = h + 1\n    }\n}\n")
    with pytest.raises(GoatError) as info:
        s.load(str(tmp_path / "f.mg"))
    assert info.value.line == 3
    assert info.value.message.startswith("'h' is already defined on line 1, outside this block")
    # a session's var that the block also assigns is still the session's: a block that
    # defines its own is refused, with the REPL's way out
    (tmp_path / "g.mg").write_text("for s in 0..2 {\n    var h = zeros(tensor[2, 2])\n"
                                   "    for t in 0..2 {\n        h = h + 1\n    }\n}\n")
    with pytest.raises(GoatError) as info:
        s.load(str(tmp_path / "g.mg"))
    assert info.value.line == 2
    assert info.value.message.startswith("'h' is already defined on line 1 of <repl>")
    assert info.value.message.endswith("(:reset forgets the session's names)")


def test_a_block_may_define_a_name_an_earlier_input_gave_a_def():
    """Found by a reviewer: a def kept no record of the input that defined it, so a block
    could shadow an earlier input's let but not its def."""
    out = io.StringIO()
    s = Session(out=out)
    s.run("def f(x: scalar) = x", "<input 1>")
    s.run("for i in 0..1 {\n    let f = 3\n    print f\n}", "<input 2>")
    assert out.getvalue().endswith("data = \n[3]\n")


def test_a_loop_variable_is_the_blocks_own_name():
    """Found by a breaker: a loop variable named like a session name took the top level's
    redefinition path, so :env and completion lost the session's name (its value stayed),
    and a :load'ed file whose loop reused its own let ran where goat run refuses it."""
    out = io.StringIO()
    s = Session(out=out)
    s.run("let i = 100\nlet y = 3", "<input 1>")
    s.run("for i in 0..2 {\n    print i\n}", "<input 2>")
    assert dict(s.names())["i"] == "scalar"
    assert s.run("print i", "<input 3>") is not None
    assert out.getvalue().endswith("data = \n[100]\n")


def test_a_loaded_file_reusing_its_own_name_for_a_loop_variable_is_refused(tmp_path):
    (tmp_path / "f2.mg").write_text("let f = [[1.0]]\nfor f in 0..2 {\n    print f\n}\n")
    s = Session(out=io.StringIO())
    with pytest.raises(GoatError) as info:
        s.load(str(tmp_path / "f2.mg"))
    assert info.value.line == 2
    assert info.value.message.startswith("'f' is already defined on line 1, outside this block")
    status, _, err = cli("run", "f2.mg", cwd=str(tmp_path))
    assert status == 1 and "'f' is already defined on line 1" in err


@pytest.mark.parametrize("text, still_open", [
    ("let m = [[1, 2],", ["["]),
    ("for i in 0..2 {\n  print (i", ["{", "("]),
    ("for i in 0..2 {\n  print (i\n}", []),               # the } ends the ( and its block
    ("for i in 0..2 {\n  if (i < 1 {", ["{", "{"]),       # a { ends the ( left open
    ("print [[1, 2)]", []),                               # no later line mends a ) for a [
    ("print (1 + 2", ["("]),
    ("print 1)", []),
    ("print sum(a[1)", []),                 # an error whatever follows: read no more
    ("for i in 0..2 {\n  print (1; print [2", ["{", "["]),   # in a block: mended, read on
    ("for i in 0..2 {\n  print (i]", ["{"]),
    ("print ) (", []),
    ("let a = row_sum([[1, 2]]\nprint a", []),          # a statement's keyword ends the (
    ("for i in 0..2 {\n  let a = (1 +\n  print a", ["{"]),
    ("let a = (1 +\n  2", ["("]),
    ("for i in 0..2 {{\n  print i", ["{"]),                # the second { opens nothing
    ("def f(x: tensor[2]) {\n  return x\n}", []),
])
def test_open_brackets_matches_them_as_the_lexer_does(text, still_open):
    from goat.lexer.lexer import open_brackets
    assert open_brackets(text) == still_open


def test_a_bracket_left_open_in_a_block_does_not_keep_the_repl_reading():
    """print (i before a block's }: the } closes the block, the input ends and says what is
    wrong; a ) that closes a [ ends the input too (no later line could mend it)."""
    session = ("for i in 0..2 {\n  print (i\n}\nprint 5\n"
               "print [[1, 2)]\nprint 3\n")
    status, out, err = cli("repl", stdin=session.encode())
    assert (status, err) == (1, "")
    assert out.replace("0x…", "X") == (
        "goat> for i in 0..2 {\n  ...   print (i\n  ... }\n"
        "<input 1>:3: error: '}' does not close the '(' opened on line 2\n3 | }\n  | ^\n"
        "goat> print 5\nUnranked Memref base@ = X rank = 0 offset = 0 sizes = [] "
        "strides = [] data = \n[5]\n"
        "goat> print [[1, 2)]\n<input 3>:1: error: ')' does not close the '[' opened on line 1\n"
        "1 | print [[1, 2)]\n  |             ^\n"
        "goat> print 3\nUnranked Memref base@ = X rank = 0 offset = 0 sizes = [] "
        "strides = [] data = \n[3]\n")


def test_a_piped_block_written_without_its_brace_fails_as_one_input():
    """Found by a breaker: for step in 0..3: failed, and the indented line under it then ran
    once on its own, changing w.  The header and the lines indented under it (or a { on a
    line of its own, and its block) are one input, which fails as a whole."""
    session = ("var w = [1.0, 2.0]\nfor step in 0..3:\n    w = w - 0.25\nprint w\n"
               "for i in 0..2\n{\n  w = w * 2\n}\nprint w\n")
    status, out, err = cli("repl", stdin=session.encode())
    assert (status, err) == (1, "")
    assert "goat> for step in 0..3:\n  ...     w = w - 0.25\n<input 2>:1: error: syntax error" in out
    assert "goat> for i in 0..2\n  ... {\n  ...   w = w * 2\n  ... }\n<input 4>:1: error" in out
    assert out.count("[1,  2]\n") == 2         # w as it was, both times


def test_a_slip_inside_a_block_and_an_indented_one_line_def_in_piped_input():
    """Found by a second breaker: a ) or ] or ; slip inside a block ended the REPL's input
    there (its } then an input of its own), and an indented one-line def took the lines
    after it into its input."""
    session = ("for i in 0..2 {\n  print (i]\n}\nprint 7\n"
               "  def f(x: scalar) = x * 2\n  print f(1)\n  print zz\n  print f(3)\n")
    status, out, err = cli("repl", stdin=session.encode())
    assert (status, err) == (1, "")
    assert ("goat> for i in 0..2 {\n  ...   print (i]\n  ... }\n<input 1>:2: error: ']' does "
            "not close the '(' opened on line 2\n") in out
    assert "[7]" in out and "[2]" in out and "[6]" in out
    assert out.count("error") == 2


def test_a_piped_line_that_starts_a_statement_is_not_taken_into_an_open_bracket():
    """Found by a third breaker: let a = row_sum([[1, 2]] took the next line, let b = 3, into
    its input, which failed, so b was never defined (and print b then failed too)."""
    status, out, err = cli("repl", stdin=b"let a = row_sum([[1, 2]]\nlet b = 3\nprint b\n")
    assert (status, err) == (1, "")
    assert out.startswith("goat> let a = row_sum([[1, 2]]\n<input 1>:1: error: '(' is never "
                          "closed\n")
    assert "goat> let b = 3\nb : scalar\ngoat> print b\n" in out and out.endswith("[3]\n")


def test_a_piped_comment_between_an_ifs_brace_and_its_else_keeps_them_one_input():
    """Found by a third breaker: } / # c / else { ran the if alone at the comment, and the
    else was then an error (a file takes it)."""
    session = ("var s = 1\nif s > 1 {\n  print 1\n}\n# c\nelse {\n  print 2\n}\n"
               "if s > 1 {\n  print 3\n}\n# c2\nprint 4\n")
    status, out, err = cli("repl", stdin=session.encode())
    assert (status, err) == (0, "")
    assert "  ... }\n  ... # c\n  ... else {\n  ...   print 2\n  ... }\n" in out
    assert "  ... # c2\ngoat> print 4\n" in out
    assert [line for line in out.splitlines() if line.startswith("[")] == ["[2]", "[4]"]


def test_a_tuple_of_cells_shows_each_var_s_shape():
    """Found by a breaker: h[0], h[1] = (...) echoed h : tensor[2] (the cells' shape), where
    h[0] = v echoes the var's."""
    from goat.repl.session import Session
    s = Session()
    s.run("var h = zeros(tensor[3x2])")
    s.run("var i = 0")
    got = s.run("i, h[i] = (2, [9, 9])")
    assert [r.shape for r in got][-1] == ((), (3, 2))


def test_the_piped_repl_reads_lines_and_loose_values_as_goat_run_does(tmp_path):
    """A breaker's: goat repl < file split lines at a form feed and U+2028 (Python's
    splitlines), where the lexer does not; and it took `continue`, and a value on its own line
    inside a block, as a name and a value shown, where goat run says what is wrong."""
    from conftest import cli
    status, out, err = cli("repl", stdin="# page\x0cnext\nprint \"a\u2028b\"\n".encode())
    assert (status, err) == (0, "") and out.endswith("a\u2028b\n")
    src = ("for i in 0..2 {\n  continue\n}\nbreak\nfor i in 0..2 {\n  i * 2\n}\n"
           "def f(x: scalar) {\n  x + 1\n  return x\n}\nlet y = 2\ny * 3\n")
    status, out, err = cli("repl", stdin=src.encode())
    assert status == 1
    said = [line for line in out.splitlines() if ": error: " in line]
    assert said == [
        "<input 1>:2: error: syntax error: 'continue' is not a statement; goat has no continue: "
        "put the rest of the loop's body in an if",
        "<input 2>:1: error: syntax error: 'break' is not a statement; goat has no break: put "
        "the rest of the loop's body in an if, with a var as a flag",
        "<input 3>:2: error: syntax error: a value on its own line does nothing inside a block: "
        "write print before it to show it (the REPL shows a value typed on its own, outside "
        "any block)",
        "<input 4>:2: error: syntax error: a value on its own line does nothing inside a block: "
        "write print before it to show it (the REPL shows a value typed on its own, outside "
        "any block)"]
    assert out.endswith("goat> y * 3\nscalar\n6\n")     # outside any block: shown
    (tmp_path / "p.mg").write_text(src.replace("y * 3\n", ""))
    status, _, err = cli("check", str(tmp_path / "p.mg"))
    assert [line.split(": error: ")[1].split(";")[0] for line in err.splitlines()
            if ": error: " in line] == [
        "syntax error: 'continue' is not a statement", "syntax error: 'break' is not a statement",
        "syntax error: a value on its own line does nothing in a program: write print before "
        "it to show it (the REPL shows a value typed on its own)"] + [
        "syntax error: a value on its own line does nothing in a program: write print before "
        "it to show it (the REPL shows a value typed on its own)"]
