"""Where ``import NAME`` finds ``NAME.mg``.

The search order (LANGUAGE.md, B3): the folder of the file that imports (the current folder for
standard input and the REPL), then each folder of the ``GOAT_PATH`` environment variable
(separated like ``PATH``), then goat's standard library, installed with goat as the package
``goat.stdlib`` (the ``stdlib/`` folder of the source tree).
"""
from __future__ import annotations

import importlib.util
import os

from ..diagnostics import GoatError, Loc


def stdlib_dir() -> str:
    """The folder holding the standard library's ``.mg`` files."""
    try:
        spec = importlib.util.find_spec("goat.stdlib")
    except (ImportError, ValueError):
        spec = None
    if spec is not None and spec.submodule_search_locations:
        return list(spec.submodule_search_locations)[0]
    here = os.path.dirname(os.path.abspath(__file__))
    return os.path.join(os.path.dirname(os.path.dirname(here)), "stdlib")


def is_file_source(source) -> bool:
    """Was ``source`` read from a file (not standard input, a string, or the REPL)?"""
    src = source.path
    return bool(src) and not src.startswith("<") and src != "-"


def search_path(loc: Loc) -> list:
    """The folders searched for a module imported at ``loc``, in order."""
    if is_file_source(loc.source):
        dirs = [os.path.dirname(loc.source.path) or "."]
    else:
        dirs = ["."]
    dirs += [d for d in os.environ.get("GOAT_PATH", "").split(os.pathsep) if d]
    dirs.append(stdlib_dir())
    return dirs


def find(name: str, loc: Loc) -> str:
    """The path of ``name``.mg for an import at ``loc``; GoatError naming where it looked."""
    dirs = search_path(loc)
    for d in dirs:
        path = os.path.join(d, name + ".mg")
        if os.path.isfile(path):
            return os.path.normpath(path) if not os.path.isabs(d) else path
        if os.path.exists(path):
            raise GoatError("cannot import module '%s': %s is not a regular file"
                            % (name, os.path.normpath(path)), loc)
    if is_file_source(loc.source):
        first = "the folder of %s" % os.path.basename(loc.source.path)
    else:
        first = "the current folder"
    places = [first if i == 0 else "the standard library" if i == len(dirs) - 1 else d
              for i, d in enumerate(dirs)]
    shown = places[0] if len(places) == 1 else "%s or %s" % (", ".join(places[:-1]), places[-1])
    known = set()
    for d in dirs:
        try:
            known.update(f[:-3] for f in os.listdir(d) if f.endswith(".mg"))
        except OSError:
            pass
    import difflib
    close = difflib.get_close_matches(name, sorted(known - {name}), n=1, cutoff=0.75)
    hint = "; did you mean '%s'?" % close[0] if close else " (GOAT_PATH adds folders)"
    if name.endswith(".mg") and name[:-3] in known:
        hint = "; a module is imported by its name, without .mg: import %s" % name[:-3]
    raise GoatError("cannot find module '%s': there is no %s.mg in %s%s"
                    % (name, name, shown, hint), loc)


_STDLIB_DEFS = None


def stdlib_defs() -> dict:
    """{def name: module name} of the standard library's modules (read once, by their ``def``
    lines), for the hint at a call of ``gelu`` that means ``nn.gelu``."""
    global _STDLIB_DEFS
    if _STDLIB_DEFS is None:
        import re
        found = {}
        folder = stdlib_dir()
        try:
            names = sorted(os.listdir(folder))
        except OSError:
            names = []
        for f in names:
            if f.endswith(".mg"):
                try:
                    with open(os.path.join(folder, f), encoding="utf-8") as fh:
                        for m in re.finditer(r"(?m)^def (\w+)\(", fh.read()):
                            found.setdefault(m.group(1), f[:-3])
                except OSError:
                    pass
        _STDLIB_DEFS = found
    return _STDLIB_DEFS
