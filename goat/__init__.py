"""goat: Mountain Goat, a small tensor language in which shapes are types.

The Python API (see goat/api.py): ``run_source``, ``run_file``, ``check_source``,
``check_file``, ``load`` and ``execute``; errors are :class:`GoatError`.
"""
__version__ = "0.1.0"

from .diagnostics import GoatError  # noqa: E402
from .api import (check_file, check_source, execute, load, run_file,  # noqa: E402
                  run_source)

__all__ = ["__version__", "GoatError", "run_source", "run_file", "check_source", "check_file",
           "load", "execute"]
