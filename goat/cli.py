"""The ``goat`` command: ``goat run``, ``goat check``.

Exit status: 0 success; 1 an error in the program or its input (reported as
``PATH:LINE: error: MESSAGE``); 2 a bug in goat itself (one line asking for a report) or a
command-line mistake.
"""
from __future__ import annotations

import argparse
import os
import sys

from . import __version__
from .diagnostics import GoatError, internal_error_line

DESCRIPTION = """\
goat runs Mountain Goat programs: a small tensor language in which shapes are types.
Every shape error is found, with its line, before anything runs.

With no COMMAND, goat starts the interactive REPL on a terminal, or runs the program
read from standard input when that is not a terminal (echo 'print [[1]]' | goat)."""

EPILOG = """\
examples:
  goat run examples/lm35/train_200.mg     train the book's transformer for 200 steps
  goat check --shapes model.mg            check without running; show every let's shape
  goat                                    the REPL, with live shape hints

exit status: 0 ok, 1 an error in the program, its input or the command line
(PATH:LINE: error: ...), 2 a bug in goat"""


class _ArgumentParser(argparse.ArgumentParser):
    """A mistake on the command line is the user's (status 1), like a mistake in a program."""

    def error(self, message):
        self.print_usage(sys.stderr)
        self.exit(1, "goat: error: %s\n" % message)


def _output_error(e: Exception) -> GoatError:
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
    p = _ArgumentParser(prog="goat", description=DESCRIPTION, epilog=EPILOG,
                        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--version", action="version", version="goat %s" % __version__)
    sub = p.add_subparsers(dest="command", metavar="COMMAND")

    run = sub.add_parser("run", help="check a program, then run it",
                         description="Check FILE, then run it, writing each print to standard output.")
    run.add_argument("file", metavar="FILE", help="the program (.mg); - reads standard input")
    run.add_argument("--backend", default="numpy", choices=["numpy"],
                     help="the array back end (default: numpy)")
    run.add_argument("--time", action="store_true",
                     help="report parse, check and run times on standard error")
    run.add_argument("-q", "--quiet", action="store_true",
                     help="no progress bar for long loops (it is shown only on a terminal)")

    sub.add_parser("repl", help="the interactive REPL (what plain goat starts on a terminal)",
                   description="Start the REPL: type statements, see their shapes as you type.")

    check = sub.add_parser("check", help="check a program without running it",
                           description="Check FILE without running it: syntax, names and every shape.")
    check.add_argument("file", metavar="FILE", help="the program (.mg); - reads standard input")
    check.add_argument("--shapes", action="store_true",
                       help="print the shape of every let and var (in blocks too, indented) and "
                            "the signature of every def")
    return p


def _read(path: str):
    from .api import decode_source, read_program_bytes, read_source
    if path == "-":
        return decode_source(read_program_bytes(sys.stdin.buffer, "<stdin>"), "<stdin>")
    return read_source(path)


def _cmd_run(args) -> int:
    from .api import _load, execute, with_deep_stack
    from .progress import Progress
    timings = {} if args.time else None
    source = _read(args.file)
    program = with_deep_stack(_load, source, timings)
    progress = Progress(enabled=not args.quiet)
    out = progress.wrap_output(_Output())
    execute(program, stdout=out, backend=args.backend, timings=timings, progress=progress)
    out.flush()
    if timings is not None:
        sys.stderr.write("goat: parse %.3f s, check %.3f s, run %.3f s (%d nodes)\n"
                         % (timings["parse"], timings["check"], timings["run"], sum(1 for _ in program.walk())))
    return 0


def _cmd_check(args) -> int:
    from .api import _load, with_deep_stack
    source = _read(args.file)
    program = with_deep_stack(_load, source)
    if args.shapes:
        out = ["  " * depth + text for depth, text in program.outline]
        stdout = _Output()
        stdout.write("\n".join(out) + ("\n" if out else ""))
        stdout.flush()
    return 0


def main(argv=None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    terminal = sys.stdin is not None and sys.stdin.isatty() and sys.stdout is not None and sys.stdout.isatty()
    if args.command is None:
        if terminal:
            args.command = "repl"
        else:
            if sys.stdin is not None and sys.stdin.isatty():
                sys.stderr.write("goat: reading a program from the terminal (end it with Ctrl-D); "
                                 "the REPL needs a terminal for its output too\n")
            args = parser.parse_args(["run", "-"])
    if args.command == "repl" and not terminal:
        sys.stderr.write("goat: error: the REPL needs a terminal; to run a program from standard "
                         "input, pipe it into goat or use goat run -\n")
        return 1
    try:
        if args.command == "repl":
            from .repl.app import main as repl_main
            return repl_main()
        if args.command == "run":
            return _cmd_run(args)
        return _cmd_check(args)
    except GoatError as e:
        try:
            sys.stdout.flush()
        except Exception:
            pass
        if sys.stderr is not None:
            sys.stderr.write(e.render() + "\n")
        return 1
    except KeyboardInterrupt:
        sys.stderr.write("goat: interrupted\n")
        return 130
    except BrokenPipeError:
        # the reader went away (goat run x.mg | head): not an error of the program
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
    except MemoryError:
        sys.stderr.write("goat: error: out of memory\n")
        return 1
    except Exception as e:  # a bug in goat
        sys.stderr.write(internal_error_line(e) + "\n")
        return 2


def entry() -> None:
    """The console script."""
    argv = sys.argv[1:]
    status = main(argv)
    try:
        if sys.stdout is not None:
            sys.stdout.flush()
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError) as e:
        sys.stderr.write(_output_error(e).render() + "\n")
        status = status or 1
    if argv and argv[0] in ("run", "check"):
        _exit_now(status)
    sys.exit(status)


def _exit_now(status: int) -> None:
    """End a finished run at once: everything it wrote is flushed and the cache of statement
    shapes saved, and the operating system takes back the memory in one piece rather than
    Python freeing a large checked program object by object (a fifth of a second for the
    14,529-line training program)."""
    from .lexer.parser import save_shapes
    save_shapes()
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except Exception:
            pass
    os._exit(status)
