"""The op registry (see registry.py) with every built-in registered (builtins.py)."""
from .registry import OPERATORS, REGISTRY, UNARY_OPERATORS, Op, builtin_names, lookup, register
from . import builtins as _builtins  # noqa: F401  (registers the built-ins)

__all__ = ["Op", "REGISTRY", "OPERATORS", "UNARY_OPERATORS", "register", "lookup", "builtin_names"]
