"""The typed program: what the checker produces and every back end consumes.

It is a DAG of :class:`Node` s in creation order (so already topologically sorted), plus the
program's effects (``print``) in source order.  Nodes are hash-consed: asking for the same op on
the same inputs returns the existing node, so a sub-expression that the expansion of ``def``s
repeats -- ``ln_hat(x2)`` is needed by the forward pass, by ``ln_back`` and by a gain's
gradient -- exists, and is computed, once.
"""
from __future__ import annotations

from ..diagnostics import Loc

# node kinds
CONST = 0     # a literal; .value is a NumPy array (or a float for a scalar)
OP = 1        # a registry op applied to .args
CAST = 2      # .args[0] seen at the declared shape .shape (a parameter or an annotation);
              #   checked at run time when the static check could not be complete


class Node:
    """One value of the program.

    ``shape`` is its static shape (dims: int, None for ``?``, SizeVar).  ``check`` is True when
    some input's shape was not fully known statically, so the shape rule runs again on the
    actual shapes at run time.  ``loc`` is where the expression was written (for a node shared
    by hash-consing, the first place).
    """

    __slots__ = ("id", "kind", "op", "args", "shape", "loc", "check", "value", "what", "via")

    def __init__(self, id, kind, op, args, shape, loc, check=False, value=None, what=None,
                 via=()):
        self.id = id
        self.kind = kind
        self.op = op
        self.args = args
        self.shape = shape
        self.loc = loc
        self.check = check
        self.value = value
        self.what = what        # CAST: a phrase naming the value, e.g. "argument h of ln_back"
        self.via = via          # checked nodes made by expanding a def: ((def name, call Loc), ...)

    def __repr__(self):
        name = {CONST: "const", OP: getattr(self.op, "name", "?"), CAST: "cast"}[self.kind]
        return "%%%d = %s(%s) : %s" % (self.id, name, ", ".join("%%%d" % a.id for a in self.args),
                                      self.shape)


class Effect:
    """A ``print`` of ``node``, at position ``after`` in the node list (all nodes before it exist)."""

    __slots__ = ("kind", "node", "loc", "after")

    def __init__(self, kind: str, node: Node, loc: Loc, after: int):
        self.kind = kind
        self.node = node
        self.loc = loc
        self.after = after


class Program:
    """The checked program: nodes, effects, and the names it defined (for tools)."""

    def __init__(self):
        self.nodes: list[Node] = []
        self.effects: list[Effect] = []
        self.lets: dict = {}          # name -> Node, in definition order
        self.defs: dict = {}          # name -> Template
        self.order: list = []         # every let and def name, in definition order
        self._table: dict = {}        # hash-consing: key -> Node
        # (dict, key) of every entry added to a hash-consing or memo table since the last
        # commit, so that a statement that fails can be taken back (the REPL); None: off
        self.journal: list | None = None

    def intern(self, key, make):
        """The node for ``key``, created by ``make(id)`` the first time it is asked for."""
        node = self._table.get(key)
        if node is None:
            node = make(len(self.nodes))
            if self.journal is not None:    # first the journal, so a Ctrl-C cannot strand the entry
                self.journal.append((self._table, key))
            self._table[key] = node
            self.nodes.append(node)
        return node

    def add_effect(self, kind: str, node: Node, loc: Loc):
        self.effects.append(Effect(kind, node, loc, len(self.nodes)))
