"""The ``goat`` command: ``goat FILE``, ``goat run``, ``goat check``, ``goat repl``.

Exit status: 0 success; 1 an error in the program, its input, its output or the command line
(reported as ``PATH:LINE: error: MESSAGE``); 2 a bug in goat itself (one line asking for a
report); 130 interrupted (Ctrl-C); 143 terminated (SIGTERM: kill, timeout, a job scheduler)
and 129 hung up (SIGHUP: the terminal closed), unwound as Ctrl-C is, so that no half-written
file is left.

The standard streams may be closed, opened the wrong way, or full, and goat still ends with
a status that says what happened:

* standard input is read only by ``goat run -``, ``goat check -`` and plain ``goat`` with a
  program piped in.  Closed, it is ``<stdin>: error: cannot read standard input: it is
  closed``; opened only for writing, ``... it is not open for reading`` (status 1).  Every
  other command does not notice.
* standard output: a program that prints, ``check --shapes``, ``--help`` and ``--version``
  need it.  Closed, opened only for reading, or full (/dev/full), that is ``goat: error:
  cannot write output: standard output is closed`` (``... is not open for writing``, ``... No
  space left on device``), status 1.  A program that prints nothing runs as usual.  A reader
  that goes away (``goat run x.mg | head``) ends the run quietly, status 0.
* standard error carries only reports (errors, ``--time``, the progress bar).  When it is
  closed or cannot be written, they are lost, but the status is the same as it would have
  been: a closed standard error never turns a success into a failure.

A descriptor among 0, 1 and 2 that is closed is opened on /dev/null at the start (the stream
stays "closed" to goat), so that no file goat opens later takes its number and receives what
was meant for the stream.
"""
from __future__ import annotations

import argparse
import errno
import os
import sys

from .diagnostics import Terminated, stopping_signals, taken

from . import __version__
from .diagnostics import GoatError, internal_error_line

COMMANDS = ("run", "check", "compile", "repl")

USAGE = """\
goat [run] [--time] [--quiet] [--backend NAME] [--dtype f64|f32]
            [--threads N] [--let NAME=VALUE ...] [--aot [--portable]] FILE
       goat check [--shapes] [--cost [--dtype f64|f32]] [--time] [--let NAME=VALUE ...] FILE
       goat compile --aot FILE [-o OUTPUT] [--emit-llvm] [--portable] [-O 0-3] [--time]
                    [--let NAME=VALUE ...]
       goat [repl] [--let NAME=VALUE ...] [FILE]
       goat --help | --version"""

DESCRIPTION = """\
goat runs Mountain Goat programs: a small tensor language in which shapes are types.
Every shape error is found, with its line, before anything runs.

goat FILE runs FILE, as goat run FILE does (a file named like a command needs goat run).
With no COMMAND or FILE, goat starts the interactive REPL on a terminal, or runs the program
read from standard input when that is not a terminal (echo 'print [[1]]' | goat)."""

EPILOG = """\
examples:
  goat first.mg                           check, then run first.mg
  goat run examples/lm35/train_200.mg     train the book's transformer for 200 steps
  goat run --let lr=3e-4 train.mg         run with the top-level let lr = ... set to 3e-4
  goat check --shapes model.mg            check without running; show every let's shape
  goat compile --aot model.mg -o model    compile to a native executable (LLVM)
  goat run --aot model.mg                 compile (cached), then run natively
  goat run --backend cupy --dtype f32 m.mg   run on an NVIDIA GPU, in float32
  goat                                    the REPL, with live shape hints
  goat repl train.mg                      run train.mg into a REPL session, then go on there

exit status: 0 ok, 1 an error in the program, its input, its output or the command line
(PATH:LINE: error: ...), 2 a bug in goat"""


class _Exit(Exception):
    """The command line is done before any command ran (--help, --version, a mistake)."""

    def __init__(self, status: int):
        super().__init__(status)
        self.status = status


def _say(text: str) -> None:
    """Write a report to standard error.  A standard error that is closed or cannot be
    written loses the report; it never changes what goat does or its status."""
    stream = sys.stderr
    if stream is None:
        return
    try:
        stream.write(text)
        stream.flush()
    except Exception:
        pass


class _Formatter(argparse.RawDescriptionHelpFormatter):
    """argparse's formatter, which finds the terminal's width without importing shutil (and
    with it bz2 and lzma): a few milliseconds of every goat run's start."""

    def __init__(self, prog, indent_increment=2, max_help_position=24, width=None):
        if width is None:
            try:
                width = int(os.environ.get("COLUMNS", ""))
            except ValueError:
                try:
                    width = os.get_terminal_size(sys.__stdout__.fileno()).columns
                except (AttributeError, OSError, ValueError):
                    width = 80
            width -= 2
        super().__init__(prog, indent_increment, max_help_position, width)


class _ArgumentParser(argparse.ArgumentParser):
    """A mistake on the command line is the user's (status 1), like a mistake in a program;
    help and the version go to standard output, and a failure to write them is reported."""

    command = None          # the command being parsed (set by _main), for its messages

    commands = {}           # the commands' own parsers (set by _parser), for their usage

    def error(self, message):
        words = self.prog.split()
        command = self.command or (words[1] if len(words) > 1 else None)
        _say(self.commands.get(command, self).format_usage())
        unknown = message.split(": ", 1)[1].split() if message.startswith(
            "unrecognized arguments: ") else []
        options = [w for w in unknown if w.startswith("-") and w != "-"]
        if options and command:         # not "unrecognized arguments: --threads first.mg"
            message = "%s %s not an option of goat %s (goat %s --help lists them)" % (
                " or ".join(options), "is" if len(options) == 1 else "are", command, command)
        elif unknown and command in ("run", "check", "compile", "repl"):
            message = "one FILE at a time (also given: %s)" % " ".join(unknown)
        _say("goat%s: error: %s\n" % (" " + command if command else "", message))
        raise _Exit(1)

    def exit(self, status=0, message=None):
        if message:
            _say(message)
        raise _Exit(status)

    def _print_message(self, message, file=None):
        if not message:
            return
        if file is not None and file is sys.stderr:
            _say(message)
        else:                           # --help, --version: standard output
            out = _Output()
            out.write(message)
            out.flush()


def _output_error(e: Exception) -> GoatError:
    if isinstance(e, OSError) and e.errno == errno.EBADF:
        return GoatError("cannot write output: standard output is not open for writing")
    return GoatError("cannot write output: %s" % (getattr(e, "strerror", None) or e))


class _Output:
    """Standard output for prints; a failure to write is reported, not taken for a bug."""

    def write(self, text):
        if sys.stdout is None:
            raise GoatError("cannot write output: standard output is closed")
        try:
            # the output is UTF-8 whatever the locale says: it must equal the book's byte for byte
            buffer = getattr(sys.stdout, "buffer", None)
            if buffer is not None:
                buffer.write(text.encode("utf-8"))
            else:
                sys.stdout.write(text)
        except BrokenPipeError:
            raise
        except (OSError, ValueError) as e:
            raise _output_error(e) from None

    def flush(self):
        if sys.stdout is None:
            return
        try:
            sys.stdout.flush()
        except BrokenPipeError:
            raise
        except (OSError, ValueError) as e:
            raise _output_error(e) from None


def _parser() -> argparse.ArgumentParser:
    p = _ArgumentParser(prog="goat", usage=USAGE, description=DESCRIPTION, epilog=EPILOG,
                        formatter_class=_Formatter)
    p.add_argument("--version", action="version", version="goat %s" % __version__)
    sub = p.add_subparsers(dest="command", metavar="COMMAND", prog="goat",
                           parser_class=lambda **kw: _ArgumentParser(formatter_class=_Formatter,
                                                                      **kw))

    run = sub.add_parser("run", help="check a program, then run it (goat FILE does the same)",
                         description="Check FILE, then run it, writing each print to standard output.")
    run.add_argument("file", metavar="FILE", help="the program (.mg); - reads standard input")
    run.add_argument("--backend", default="numpy", choices=["numpy", "cupy", "auto"],
                     help="the array back end: numpy (the CPU, the default), cupy (an NVIDIA "
                          "GPU; needs CuPy: pip install '.[gpu]'), or auto (the GPU when one is "
                          "here and the program's work, known from its shapes, would run "
                          "faster there; --time says which and why)")
    run.add_argument("--dtype", default="f64", choices=["f64", "f32"],
                     help="the precision of every value: f64 (float64, the default and the "
                          "book's) or f32 (float32: half the memory, faster on a GPU; printed "
                          "with the same %%g)")
    run.add_argument("--time", action="store_true",
                     help="report parse, check and run times on standard error (those of the "
                          "phases that ran, when one fails)")
    run.add_argument("-q", "--quiet", action="store_true",
                     help="no progress bar for long loops (it is shown only on a terminal)")
    run.add_argument("--threads", type=_threads, default=1, metavar="N",
                     help="run matrix products on N BLAS threads (default 1: the same bits on "
                          "every run whatever the machine's settings; more can be faster on "
                          "large matrices, and the last bits may then depend on N)")

    run.add_argument("--let", action="append", type=_let, default=[], metavar="NAME=VALUE",
                     help="set the number a top-level let NAME = NUMBER (or var) of the program "
                          "holds, before it is checked: --let lr=3e-4 --let steps=2000 (again "
                          "for each name)")

    run.add_argument("--aot", action="store_true",
                     help="compile the program to native code first (through LLVM; cached "
                          "under ~/.cache/goat/aot, keyed by the program's text), then run it: "
                          "the same output, faster loops")
    run.add_argument("--portable", action="store_true",
                     help="with --aot: compute with the compiled program's own code only, not "
                          "NumPy's BLAS and SVML (the same numbers but for the last bits)")

    comp = sub.add_parser("compile", help="compile a program ahead of time to a native "
                                          "executable (--aot)",
                          description="Check FILE, then compile it ahead of time: lower it to "
                                      "LLVM IR, optimise it for this machine's processor and "
                                      "link it with goat's runtime by the system C compiler "
                                      "into an executable that prints what goat run prints.")
    comp.add_argument("file", metavar="FILE", help="the program (.mg); - reads standard input")
    comp.add_argument("--aot", action="store_true",
                      help="ahead-of-time compilation to native code (the only kind there is; "
                           "required, so that the command says what it does)")
    comp.add_argument("-o", "--output", metavar="OUTPUT",
                      help="the executable to write (default: FILE without .mg, or FILE.out "
                           "when FILE has no .mg; a.out for standard input; with --emit-llvm, "
                           "FILE with .ll for .mg, a.ll for standard input)")
    comp.add_argument("--let", action="append", type=_let, default=[], metavar="NAME=VALUE",
                      help="set the number a top-level let NAME = NUMBER of the program holds "
                           "(compiled in), as goat run --let does")
    comp.add_argument("--emit-llvm", action="store_true",
                      help="write the program's LLVM IR (a .ll file) instead of an executable")
    comp.add_argument("-O", dest="opt", type=int, choices=[0, 1, 2, 3], default=2,
                      help="LLVM's optimisation level (default 2)")
    comp.add_argument("--time", action="store_true",
                      help="report the time of each phase on standard error")
    comp.add_argument("--portable", action="store_true",
                      help="compute with the executable's own code only: without it the "
                           "executable opens NumPy's BLAS and SVML (found now) when it runs, "
                           "to print goat run's bits exactly, and uses its own code where they "
                           "are gone")
    comp.add_argument("--dtype", default="f64", choices=["f64", "f32"],
                      help="the precision: f64 only (compiled programs compute as goat run "
                           "does by default; --dtype f32 runs with goat run)")

    repl = sub.add_parser("repl", help="the interactive REPL (what plain goat starts on a "
                                       "terminal)",
                          description="Start the REPL: type statements, see their shapes as "
                                      "you type.")
    repl.add_argument("--backend", default="numpy", choices=["numpy", "cupy"],
                      help="the array back end to start with (:backend changes it)")
    repl.add_argument("--dtype", default="f64", choices=["f64", "f32"],
                      help="the precision of every value (:dtype changes it)")
    repl.add_argument("--let", action="append", type=_let, default=[], metavar="NAME=VALUE",
                      help="set the top-level let (or var) NAME of FILE, which holds a number, "
                           "as goat run --let does")
    repl.add_argument("file", nargs="?", metavar="FILE",
                      help="a program to run into the session first (as python -i does); its "
                           "names, values and defs are then there to use")

    check = sub.add_parser("check", help="check a program without running it",
                           description="Check FILE without running it: syntax, names and every shape.")
    check.add_argument("file", metavar="FILE", help="the program (.mg); - reads standard input")
    check.add_argument("--shapes", action="store_true",
                       help="print the shape of every let and var (in blocks too, indented) and "
                            "the signature of every def")
    check.add_argument("--cost", action="store_true",
                       help="print the program's work, known from its shapes (FLOPs, bytes, "
                            "ops, GPU launches), the time it would take on the CPU and on a "
                            "GPU, whether a GPU can run here, and what --backend auto would "
                            "choose")
    check.add_argument("--let", action="append", type=_let, default=[], metavar="NAME=VALUE",
                       help="check with the number a top-level let NAME = NUMBER holds set, as "
                            "goat run --let sets it")
    check.add_argument("--dtype", default="f64", choices=["f64", "f32"],
                       help="with --cost: the precision to count bytes and FLOP rates in")
    check.add_argument("--time", action="store_true",
                       help="report the parse and check times on standard error")
    p.commands = {"run": run, "compile": comp, "repl": repl, "check": check}
    return p


_RUN_OPTIONS_WITH_VALUE = ("--backend", "--dtype", "--threads", "-o", "--output", "--let")


def _let(text: str):
    """--let NAME=VALUE: (name, float)."""
    import re
    from .lexer.lexer import IDENT
    name, eq, value = text.partition("=")
    if not eq or not IDENT.fullmatch(name.strip()):
        raise argparse.ArgumentTypeError("write NAME=VALUE, as in --let lr=3e-4, not %r" % text)
    # a number as the program would write it (ASCII digits, no inf, nan or 1_000)
    if not re.fullmatch(r"-?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?", value):
        raise argparse.ArgumentTypeError("the value of %s must be a number as a program "
                                         "writes one (3e-4, 2000, -0.5), not %r"
                                         % (name.strip(), value))
    number = float(value)
    if number in (float("inf"), float("-inf")):
        raise argparse.ArgumentTypeError("the value of %s, %s, is too large for a 64-bit float "
                                         "(the largest is 1.79769e+308)" % (name.strip(), value))
    return name.strip(), number


def _lets(args) -> dict:
    """The --let options as a dict; a name given twice is an error."""
    out = {}
    for name, value in getattr(args, "let", None) or []:
        if name in out and repr(out[name]) != repr(value):      # (-0 is not 0)
            raise GoatError("--let %s is given twice, with two values" % name, path="goat")
        out[name] = value
    return out


def _threads(text: str) -> int:
    """--threads N: a whole number, 1 or more."""
    import argparse
    if not text.isdigit() or int(text) < 1 or len(text) > 6:
        raise argparse.ArgumentTypeError("N must be a whole number from 1, got %r" % text)
    return int(text)


def _with_command(argv: list) -> list:
    """``goat FILE ...`` is ``goat run FILE ...`` (as ``python FILE`` runs FILE): the first
    word that is not an option, when it is not a command, names a program.  A word that is
    neither a command nor (by its look: it exists, or has a dot or a slash in it) a file is
    refused with the list of commands."""
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == "--":                   # goat -- -odd-name.mg
            if i + 1 < len(argv) and argv[i + 1] not in COMMANDS:
                return ["run"] + argv
            return argv
        if a == "-" or not a.startswith("-"):
            break
        if a in ("-h", "--help", "--version"):
            return argv                 # argparse shows help or the version first
        if a in _RUN_OPTIONS_WITH_VALUE:
            i += 1
        i += 1
    else:
        # options only, a program piped in (echo 'print [[1]]' | goat --dtype f32): run it
        if argv and not _isatty(sys.stdin):
            return ["run"] + argv + ["-"]
        if argv and not _isatty(sys.stdout):    # goat --dtype f32 > out: as plain goat > out
            _say("goat: reading a program from the terminal (end it with Ctrl-D); the REPL "
                 "needs a terminal for its output too\n")
            return ["run"] + argv + ["-"]
        if argv:                                # on a terminal, plain goat is the REPL
            if _repl_options(argv):
                return ["repl"] + argv
            names = [a.split("=", 1)[0] for a in argv if a.startswith("-")]
            if all(n in _RUN_OPTIONS for n in names):
                _options_need_a_file(argv)
        return argv
    word = argv[i]
    if word in COMMANDS:
        return argv
    if word == "-" or os.path.exists(word) or "." in word or "/" in word or os.sep in word:
        return ["run"] + argv
    import difflib
    close = difflib.get_close_matches(word, COMMANDS, n=1)
    _say("goat: error: %r is neither a command nor a file; the commands are %s%s, and goat "
         "FILE runs a program (see goat --help)\n"
         % (word, ", ".join(COMMANDS), " (did you mean %s?)" % close[0] if close else ""))
    raise _Exit(1)


_REPL_OPTIONS = ("--backend", "--dtype")     # what plain goat on a terminal passes to the REPL


def _repl_options(argv: list) -> bool:
    """Are ``argv``'s options all the REPL's (``--backend NAME``, ``--dtype D``)?"""
    i = 0
    while i < len(argv):
        name = argv[i].split("=", 1)[0]
        if name not in _REPL_OPTIONS:
            return False
        i += 1 if "=" in argv[i] else 2
    return True


_RUN_OPTIONS = ("--backend", "--dtype", "--time", "-q", "--quiet", "--threads", "--aot",
                "--portable", "--let")


def _options_need_a_file(argv: list):
    """``goat --time`` on a terminal: options of goat run with no program to run (named but
    for the REPL's own, --backend and --dtype)."""
    options = [a.split("=", 1)[0] for a in argv if a.startswith("-")]
    options = [o for o in options if o not in _REPL_OPTIONS]
    _say("goat: error: %s %s a FILE to run (goat run %s FILE); plain goat starts the REPL, "
         "which takes --backend and --dtype\n"
         % (" ".join(options), "needs" if len(options) == 1 else "need", " ".join(argv)))
    raise _Exit(1)


def _read(path: str, raw: bool = False):
    """The program in ``path`` ("-": standard input) as a Source; with ``raw``, standard
    input's bytes as they are."""
    from .api import decode_source, read_program_bytes, read_source
    if path == "-":
        stdin = sys.stdin
        if stdin is None:
            raise GoatError("cannot read standard input: it is closed", path="<stdin>")
        try:
            buffer = getattr(stdin, "buffer", None)
            if buffer is not None:
                data = read_program_bytes(buffer, "<stdin>")
            else:
                data = stdin.read().encode("utf-8", "surrogatepass")
        except OSError as e:
            raise GoatError("cannot read standard input: %s" % _read_problem(e),
                            path="<stdin>") from None
        except ValueError:          # the stream object was closed
            raise GoatError("cannot read standard input: it is closed", path="<stdin>") from None
        return data if raw else decode_source(data, "<stdin>")
    return read_source(path)


def _read_problem(e: OSError) -> str:
    if e.errno == errno.EBADF:
        return "it is not open for reading"
    if e.errno == errno.EISDIR:
        return "it is a directory"
    text = e.strerror or str(e)
    return text[:1].lower() + text[1:]


def _cmd_run(args) -> int:
    from .api import _execute, _load, with_deep_stack
    from .progress import Progress
    if args.portable and not args.aot:
        _say("goat run: error: --portable needs --aot (it chooses how the compiled "
             "program computes)\n")
        return 1
    if args.aot and (args.backend != "numpy" or args.dtype != "f64"):
        extra = (["--backend " + args.backend] if args.backend != "numpy" else []) + (
            ["--dtype " + args.dtype] if args.dtype != "f64" else [])
        _say("goat run: error: --aot compiles for this machine's processor, in float64 only; "
             "it does not go with %s\n" % " or ".join(extra))
        return 1
    if args.aot and args.threads != 1:
        _say("goat run: error: --threads cannot be combined with --aot: a compiled program computes its "
             "matrix products on one thread, as goat run does by default (so that its bits "
             "are goat run's)\n")
        return 1
    source = _read(args.file)
    program = with_deep_stack(_load, source, args.timings, _lets(args))
    args.program = program
    loads, unreadable = None, ()
    if args.aot:
        from .aot.lower import load_shapes
        # a ? load is compiled for its file; one that cannot be read now leaves the program
        # to goat run, whose output is then the same: what it prints before the load fails,
        # or all of it where the load never runs
        loads, unreadable = load_shapes(program)
    if args.aot and not unreadable:
        from .aot.build import cached_executable, run_executable
        from .interp.evaluator import check_save_folders
        with _timed(args.timings, "run"):       # as goat run finds it, before anything runs
            check_save_folders(program)
        exe = with_deep_stack(cached_executable, program, source, args.timings,
                              args.portable, loads)
        with _timed(args.timings, "run"):
            status = run_executable(exe)
        if status != 0 and args.timings is not None:
            args.timings["failed"] = "run"      # the executable reported its error itself
        return status
    progress = Progress(enabled=not args.quiet)
    out = progress.wrap_output(_Output())
    from .gpu import BackendUnavailable
    try:
        _execute(program, out, args.backend, args.timings, progress, args.threads, args.dtype,
                 keep_printed=False)
    except BackendUnavailable as e:
        _say("goat run: error: %s; --backend numpy runs on the CPU\n" % e)
        return 1
    out.flush()
    return 0


def _time_report(args, status: int) -> str | None:
    """The --time line: the time of each phase that ran; one that failed says so."""
    timings = getattr(args, "timings", None)
    if not timings:
        return None
    failed = timings.get("failed")
    parts = []
    for phase in ("parse", "check", "lower", "optimise", "codegen", "link", "compile", "run"):
        if phase not in timings or (phase == "compile" and "link" in timings
                                    and failed != "compile"):
            continue
        if phase == failed:
            word = "interrupted" if status in (129, 130, 143) else "failed"
            parts.append("%s %s after %.3f s" % (phase, word, timings[phase]))
            break
        parts.append("%s %.3f s" % (phase, timings[phase]))
    if timings.get("cached"):
        parts.insert(2, "compiled program from the cache")
    line = "goat: " + ", ".join(parts)
    program = getattr(args, "program", None)
    if failed is None and program is not None:
        n = sum(1 for _ in program.walk())
        line += " (%d node%s)" % (n, "" if n == 1 else "s")
    if timings.get("backend"):
        line += "\ngoat: " + timings["backend"]
    return line + "\n"


class _timed:
    """Record a phase's seconds in ``timings`` (None: nothing)."""

    def __init__(self, timings, name):
        self.timings, self.name = timings, name

    def __enter__(self):
        import time
        self.start = time.perf_counter()

    def __exit__(self, kind, *rest):
        import time
        if self.timings is not None:
            self.timings[self.name] = time.perf_counter() - self.start
            if kind is not None:
                self.timings["failed"] = self.name
        return False


def _cmd_compile(args) -> int:
    from .api import _load, with_deep_stack
    if not args.aot:
        _say("goat compile: error: say --aot (goat compile --aot FILE): ahead-of-time "
             "compilation to native code is the only kind goat does\n")
        return 1
    if args.dtype != "f64":
        _say("goat compile: error: --aot compiles for this machine's processor, in float64 "
             "only; --dtype f32 runs with goat run --dtype f32\n")
        return 1
    source = _read(args.file)
    program = with_deep_stack(_load, source, args.timings, _lets(args))
    args.program = program
    from .aot.build import build_executable, check_output, default_output, emit_llvm
    output = args.output
    if output is None:
        output = default_output(args.file, args.emit_llvm)
    check_output(output, args.file, "ll" if args.emit_llvm else "exe")
    if args.emit_llvm:
        with _timed(args.timings, "compile"):
            with_deep_stack(emit_llvm, program, output, args.portable)
    else:
        with _timed(args.timings, "compile"):
            with_deep_stack(build_executable, program, output, args.opt, args.timings,
                            args.portable)
    return 0


def _cmd_check(args) -> int:
    from .api import _load, with_deep_stack
    if args.dtype != "f64" and not args.cost:
        _say("goat check: error: --dtype needs --cost (it sets the precision the cost counts "
             "bytes and FLOP rates in; checking is the same in either)\n")
        return 1
    source = _read(args.file)
    program = with_deep_stack(_load, source, args.timings, _lets(args))
    if program.deferred:
        # sure to fail when it runs: a ? size that a call's known shapes do not fit (goat run
        # reports it there, after the output before it, as the book's compiler does)
        from .diagnostics import GoatError, GoatErrors
        when = ("goat run reports this when the operation runs (a ? size is checked then), "
                "after the output before it")
        shown = program.deferred[:20]           # as many as static errors show
        raise GoatErrors([GoatError(e.message, e.loc, notes=tuple(e.notes) + (when,))
                          for e in shown], len(program.deferred) - len(shown))
    out = []
    if args.shapes:
        out += ["  " * depth + text for depth, text in program.outline]
    if args.cost:
        from .gpu import cupy_usable
        from .gpu.auto import GPU, choose
        missing = cupy_usable()
        c = choose(program, args.dtype, missing)
        out += ["work: " + c.work,
                "estimated: %.3g s on the CPU (numpy), %.3g s on a GPU (cupy; %.3g s of it "
                "starting CUDA)" % (c.cpu_seconds, c.gpu_seconds, GPU["start"]),
                "GPU here: %s" % ("yes" if missing is None else "no: " + missing),
                "--backend auto would choose %s" % c.backend]
    if out:
        stdout = _Output()
        stdout.write("\n".join(out) + "\n")
        stdout.flush()
    return 0


def _isatty(stream) -> bool:
    try:
        return stream is not None and stream.isatty()
    except Exception:
        return False


_ran_repl = False


def _on_sigterm(signum, frame):
    raise Terminated(signum)


def main(argv=None) -> int:
    """Run the command line ``argv``; its exit status.  Ctrl-C raises KeyboardInterrupt and
    SIGTERM or SIGHUP :class:`Terminated` while it runs, so that what is under way unwinds."""
    import signal
    import threading
    previous = []
    if threading.current_thread() is threading.main_thread():
        try:
            previous = [(s, signal.signal(s, h)) for s, h in
                        [(signal.SIGINT, signal.default_int_handler)]
                        + [(t, _on_sigterm) for t in stopping_signals()] if taken(s)]
        except (ValueError, OSError):
            previous = []
    try:
        try:
            return _main(argv)
        except Terminated as e:     # in the moment after the command ended (freeing it)
            _say(e.line + "\n")
            return e.status
        except KeyboardInterrupt:
            _say("goat: interrupted\n")
            return 130
    finally:
        for s, h in previous:
            signal.signal(s, h)


def _main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = None
    try:
        try:
            parser = _parser()
            words = _with_command(argv)
            parser.command = words[0] if words and words[0] in COMMANDS else None
            args = parser.parse_args(words)
            args.timings = {} if getattr(args, "time", False) else None
            terminal = _isatty(sys.stdin) and _isatty(sys.stdout)
            if args.command is None:
                if terminal:
                    args.command = "repl"
                else:
                    if _isatty(sys.stdin):
                        _say("goat: reading a program from the terminal (end it with Ctrl-D); "
                             "the REPL needs a terminal for its output too\n")
                    args = parser.parse_args(["run", "-"])
                    args.timings = None
            if args.command == "repl" and not terminal and _isatty(sys.stdin):
                _say("goat: error: the REPL needs a terminal for its output; to keep a "
                     "transcript, pipe its input too: goat repl < session.txt > log\n")
                return 1
        except _Exit as e:
            return e.status
        status = _dispatch(args)
    except GoatError as e:
        try:
            if sys.stdout is not None:
                sys.stdout.flush()
        except Exception:
            pass
        _say(e.render() + "\n")
        status = 1
    except Terminated as e:
        _say(e.line + "\n")
        status = e.status
    except KeyboardInterrupt:
        _say("goat: interrupted\n")
        status = 130
    except BrokenPipeError:
        # the reader went away (goat run x.mg | head): not an error of the program
        _quiet_stdout()
        status = 0
    except MemoryError:
        _say("goat: error: out of memory\n")
        status = 1
    except SystemError as e:
        from .api import _frame_memory_error
        if _frame_memory_error(e):
            _say("goat: error: out of memory\n")
            status = 1
        else:
            _say(internal_error_line(e) + "\n")
            status = 2
    except ImportError as e:
        if _memory_text(str(e)):     # NumPy's libraries could not be mapped: a capped process
            _say("goat: error: out of memory while loading the libraries goat needs\n")
            status = 1
        else:
            _say(internal_error_line(e) + "\n")
            status = 2
    except Exception as e:  # a bug in goat
        _say(internal_error_line(e) + "\n")
        status = 2
    if args is not None and getattr(args, "timings", None) is not None:
        report = _time_report(args, status)
        if report:
            _say(report)
    return status


def _memory_text(text: str) -> bool:
    text = text.lower()
    return "failed to map segment" in text or "cannot allocate memory" in text


def _dispatch(args) -> int:
    global _ran_repl
    if args.command == "repl":
        backend, dtype = getattr(args, "backend", "numpy"), getattr(args, "dtype", "f64")
        first = getattr(args, "file", None)
        if first is None and getattr(args, "let", None):
            _say("goat repl: error: --let sets a top-level let of a FILE: goat repl --let "
                 "%s=... FILE\n" % args.let[0][0])
            return 1
        start = (first, _lets(args)) if first is not None else None
        if not _isatty(sys.stdin):      # goat repl < session.txt: a transcript
            from .repl.app import main_piped
            data = _read("-", raw=True)     # read as goat run - reads it; each input is
            if data.startswith(b"\xef\xbb\xbf"):   # decoded alone (a bad byte fails only it)
                data = data[3:]
            # lines end where the lexer's do (\n, \r\n, \r), not at a form feed or U+2028
            text = data.decode("utf-8", "surrogateescape")
            lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
            if lines and lines[-1] == "":
                lines.pop()             # (the newline that ends the last line)
            return main_piped(lines, _Output(), backend, dtype, start)
        from .repl.app import main as repl_main
        _ran_repl = True
        return repl_main(backend, dtype, start)
    if args.command == "run":
        return _cmd_run(args)
    if args.command == "compile":
        return _cmd_compile(args)
    return _cmd_check(args)


def _quiet_stdout() -> None:
    """Standard output onto /dev/null, so that nothing more is written to a reader that left
    (nor fails at exit)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except Exception:
        pass


def _reserve_standard_descriptors() -> None:
    """Open /dev/null on each of descriptors 0, 1 and 2 that is closed (Python has made its
    stream None already), so that a file goat opens later cannot take that number and receive
    what a library writes to the stream."""
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
            continue
        except OSError:
            pass
        try:
            null = os.open(os.devnull, os.O_RDWR)
            if null != fd:
                os.dup2(null, fd)
                os.close(null)
        except OSError:
            pass


def entry() -> None:
    """The console script."""
    import signal
    from .diagnostics import stop_quietly
    for s in (signal.SIGINT,) + stopping_signals():
        if taken(s):                # nohup's ignored SIGHUP stays ignored
            signal.signal(s, stop_quietly)
    _reserve_standard_descriptors()
    argv = sys.argv[1:]
    status = main(argv)
    try:
        if sys.stdout is not None:
            sys.stdout.flush()
    except BrokenPipeError:
        _quiet_stdout()
    except (OSError, ValueError) as e:
        _say(_output_error(e).render() + "\n")
        status = status or 1
    if _ran_repl:
        sys.exit(status)
    _exit_now(status)


def _exit_now(status: int) -> None:
    """End at once: everything written is flushed and the cache of statement shapes saved,
    and the operating system takes back the memory in one piece rather than Python freeing a
    large checked program object by object (a fifth of a second for the 14,529-line training
    program).  A stream that cannot be flushed (a full disk) is not flushed again at exit,
    which would turn the status into 120."""
    parser = sys.modules.get("goat.lexer.parser")      # nothing to save if nothing was read
    if parser is not None:
        try:
            parser.save_shapes()
        except Exception:
            pass
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except Exception:
            pass
    os._exit(status)
