"""goat: Mountain Goat, a small tensor language in which shapes are types.

The Python API (see goat/api.py): ``run_source``, ``run_file``, ``check_source``,
``check_file``, ``load``, ``execute`` and ``compile_file`` (ahead of time, to a native
executable); errors are :class:`GoatError` (:class:`GoatErrors`
when a file has several independent ones: ``.errors`` lists them).

The API, and NumPy with it, is imported when first used (``goat.run_source``,
``from goat import run_source``), so that ``goat --version`` and ``goat --help`` start at once
and a process too small to load NumPy gets goat's own error rather than a traceback.
"""
__version__ = "0.1.0"

from .diagnostics import GoatError, GoatErrors, GoatMemoryError  # noqa: E402

# a traceback names them as a user imports them (goat.GoatError), as NumPy names its own
for _cls in (GoatError, GoatErrors, GoatMemoryError):
    _cls.__module__ = __name__
del _cls

_API = ("run_source", "run_file", "check_source", "check_file", "load", "execute",
        "compile_file")

__all__ = ["__version__", "GoatError", "GoatErrors", "GoatMemoryError", "run_source", "run_file", "check_source", "check_file",
           "load", "execute", "compile_file"]


def __getattr__(name):
    import importlib
    if name in _API:
        value = getattr(importlib.import_module(".api", __name__), name)
        globals()[name] = value
        return value
    if name.startswith("__"):
        raise AttributeError("module 'goat' has no attribute %r" % name)
    try:        # a submodule (goat.api, goat.interp, ...), as an eager import made them
        return importlib.import_module("." + name, __name__)
    except ModuleNotFoundError as e:
        if e.name != "%s.%s" % (__name__, name):
            raise
        raise AttributeError("module 'goat' has no attribute %r" % name) from None


def __dir__():
    return sorted(set(globals()) | set(__all__))
