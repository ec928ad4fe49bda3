"""An interactive session: the state behind the REPL, independent of any terminal.

It is the same parse -> check -> evaluate pipeline as ``goat run``, fed one statement at a time:
the parser in its interactive mode (a bare expression is a statement), one :class:`Checker`
that allows a name to be defined again, and one :class:`Evaluator` that keeps the values a
later line may read -- those its names reach, and what a later ``grad`` through them needs --
and drops the others after each statement (:meth:`Session._needed`).  A statement that fails -- a shape error, a run-time error, a
Ctrl-C -- is taken back whole, so the session keeps exactly the state it had before it.

The REPL works out its live hint on a thread of its own (see app.py), so the state is
guarded: whatever reads or changes it holds ``lock``.  A hint is the only thing that runs off
the main thread; it is given a :class:`HintBudget` and stops (:class:`HintAbandoned`, its check
taken back like a Ctrl-C) as soon as it runs out of time or memory, is superseded by the next
key, or the main thread wants the session (to run a statement, say): a run never races a hint,
and waits for one only as long as it takes to stop and take back what it checked.
"""
from __future__ import annotations

import inspect
import os
import re
import sys
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np

from ..diagnostics import GoatError, Source
from ..gpu import get_backend
from ..interp.evaluator import Evaluator
from ..lexer import ast
from ..lexer.lexer import open_brackets
from ..lexer.parser import parse
from ..lexer.tokens import STATEMENT_KEYWORDS
from ..ops import REGISTRY, builtin_names
from ..ops.registry import TRANSFORMS, signature
from ..typecheck import checker as _checker_module
from ..typecheck.checker import Checker, Module, Template, VarBinding, _defined_names
from ..typecheck.program import CONST, LOOP, OP, Program, subregions
from ..typecheck.shapes import format_type

_RECURSION_LIMIT = 20_000
_GOAT_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_GENERATOR_FLAGS = inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR


class _NoSuchException(Exception):
    """Stands for CheckCancelled where the checker has no such hook."""


_CheckCancelled = getattr(_checker_module, "CheckCancelled", _NoSuchException)
_PARTIAL_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*$")
_PARTIAL_MEMBER = re.compile(r"(?<![\w.])([A-Za-z_][A-Za-z0-9_]*)\.([A-Za-z0-9_]*)$")   # nn.ge
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)?$")


class HintAbandoned(BaseException):
    """Raised inside a hint's check to stop it; the check is taken back like a Ctrl-C.

    ``reason``: "superseded" (the next key came), "preempted" (the main thread wants the
    session), "stale" (the session changed since the hint was asked for), "time", "memory".
    A BaseException, so that no ``except Exception`` on the way swallows it.
    """

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


def _rss() -> int:
    """This process's resident memory in bytes (0 where it cannot be read cheaply)."""
    try:
        with open("/proc/self/statm", "rb") as f:
            return int(f.read().split()[1]) * _PAGE
    except (OSError, ValueError, IndexError):
        return 0


try:
    _PAGE = os.sysconf("SC_PAGE_SIZE")
except (AttributeError, ValueError, OSError):
    _PAGE = 4096


class HintBudget:
    """What one hint may spend: ``seconds`` of checking and ``memory`` bytes more resident
    memory than the process had when its check began; ``cancel()`` stops it early.

    ``expired()`` says why the hint must stop, once any of these runs out (``poll()`` raises
    :class:`HintAbandoned` then).  The check asks as it works: through the checker's
    ``cancel`` hook where the checker has one, otherwise from a trace function the hint's
    thread installs on itself (see :meth:`Session._within`).
    """

    MEMORY_EVERY = 0.004    # seconds between two looks at the resident memory (~10 us each)

    def __init__(self, seconds: float = 0.3, memory: int = 512 << 20, generation=None):
        self.seconds = seconds
        self.deadline = None              # set when the check starts (see start)
        self.memory = memory
        self.generation = generation      # the session's generation the hint was asked for
        self.cancelled = None             # the reason, once cancelled
        self.reason = None                # why expired() last said to stop
        self.session = None               # set while the hint holds the session
        self.armed = False                # poll() raises only while armed
        self.hooked = self.traced = False
        self.old_trace = None
        self._base = 0
        self._looked = 0.0

    def start(self):
        """The check begins: the clock starts (the time to parse, or to wait for the parser to
        be built the first time, is not counted) and the memory it has now is the base."""
        if self.deadline is None:
            self.deadline = time.monotonic() + self.seconds
            self._base = _rss() if self.memory else 0

    def cancel(self, reason: str = "superseded"):
        """Stop the hint at its next poll (callable from any thread)."""
        if self.cancelled is None:
            self.cancelled = reason

    def expired(self):
        """Why the hint must stop now ("superseded", "preempted", "time", "memory"), or None;
        always None while it is not armed."""
        if not self.armed:
            return None
        reason = None
        session = self.session
        if self.cancelled is not None:
            reason = self.cancelled
        elif session is not None and session._waiting:
            reason = "preempted"
        elif time.monotonic() > self.deadline:
            reason = "time"
        elif self.memory and self._base:
            now = time.monotonic()
            if now - self._looked >= self.MEMORY_EVERY:
                self._looked = now
                if _rss() - self._base > self.memory:
                    reason = "memory"
        if reason is not None:
            self.reason = reason
        return reason

    def poll(self):
        """Raise HintAbandoned if the hint must stop now."""
        reason = self.expired()
        if reason is not None:
            raise HintAbandoned(reason)


@dataclass
class Result:
    """What one statement did: ``kind`` is let, def, print or value."""
    kind: str
    name: str | None = None
    shape: tuple | None = None
    value: np.ndarray | None = None
    signature: str | None = None


def _nodes(checked):
    """The nodes in a statement's checked value: a node, a tuple of them, nested."""
    if type(checked) is tuple:
        for c in checked:
            yield from _nodes(c)
    elif checked is not None:
        yield checked


class Session:
    """The names, values and program of one interactive session.

    ``out`` receives what ``print`` statements write (the book's memref format).
    """

    # a hint's check is stopped through the checker's ``cancel`` hook where the checker has
    # one (False: always by tracing the hint thread's calls; see _within)
    use_checker_hook = True

    def __init__(self, backend: str = "numpy", out=None, dtype: str = "f64"):
        self.backend_name = backend
        self.dtype = dtype
        self.out = out if out is not None else sys.stdout
        # whoever reads or changes the state holds the lock: the main thread (runs, :type,
        # :load, :reset) or the REPL's hint thread; ``_waiting`` counts the main thread's
        # requests for it, which make a hint holding it stop at once (its next poll)
        self.lock = threading.RLock()
        self._waiting = 0
        self._hint_budget = None        # the budget of the hint holding the lock
        self.generation = 0             # changes whenever the state may have changed
        self._names = []
        self._members = []
        self.reset()

    # ------------------------------------------------------------------ state
    @contextmanager
    def exclusive(self):
        """Hold the session, stopping a hint that holds it (it stops at its next poll, a few
        microseconds of checking away, and takes back what it checked)."""
        self._waiting += 1
        try:
            budget = self._hint_budget
            if budget is not None:
                budget.cancel("preempted")
            with self.lock:
                yield
        finally:
            self._waiting -= 1

    def _changed(self):
        """After the state may have changed: a new generation, the names listed again."""
        self._names = self._list_names()
        self._members = self._list_members()
        self.generation += 1

    def reset(self):
        """Forget every name and value."""
        with self.exclusive():
            self.program = Program()
            self.program.journal = []
            self.checker = Checker(self.program, allow_redefinition=True)
            if getattr(self, "evaluator", None) is not None:
                self.evaluator.be.close()
            self.evaluator = Evaluator(self.program, get_backend(self.backend_name,
                                                                 dtype=self.dtype),
                                       out=self.out, free=False)
            # what _needed found after the last statement (see there): the ids of the
            # top-level values kept, of the reachable ones, of those on a path between them
            self._held, self._live, self._on_path = set(), set(), set()
            self._kept = 0          # the top-level nodes looked at by _forget so far
            self._changed()

    def set_backend(self, name: str, dtype: str | None = None):
        """Run from now on with the back end called ``name`` ("numpy" or "cupy"), in the
        precision ``dtype`` ("f64" or "f32"; None: as now); every value computed so far
        moves to it (rounded to float32 when the precision becomes f32).  GoatError when it
        is unknown or cannot run here (``auto`` chooses for a whole program, which a session
        is not)."""
        from ..gpu import BACKENDS, BackendUnavailable
        from ..gpu.xp_backend import DTYPES
        if name not in BACKENDS:
            raise GoatError("no back end %s; the REPL's are %s%s" % (
                name, " and ".join(sorted(BACKENDS)),
                " (auto chooses for a whole program: goat run --backend auto FILE)"
                if name == "auto" else ""), path="<repl>")
        dtype = self.dtype if dtype is None else dtype
        if dtype not in DTYPES:
            raise GoatError("no precision %s; the precisions are f64 (float64, the book's) and "
                            "f32 (float32)" % dtype, path="<repl>")
        with self.exclusive():
            old = self.evaluator.be
            try:
                new = get_backend(name, dtype=dtype)
            except BackendUnavailable as e:
                raise GoatError(str(e), path="<repl>") from None
            def move(v):
                if v is None or type(v) is float:
                    return v
                if type(v) is tuple:
                    return tuple(move(x) for x in v)
                if getattr(v, "ndim", 0):
                    return new.asarray(old.to_numpy(v))
                return new.constant(old.scalar(v))
            ev = self.evaluator
            ev.values[:] = [move(v) for v in ev.values]
            ev.be = new
            old.close()
            ev._fns.clear()
            self.backend_name = name
            self.dtype = dtype
            self._changed()

    def _snapshot(self):
        c, p, e = self.checker, self.program, self.evaluator
        p.journal = []
        return (len(p.nodes), len(p.main.nodes), len(p.main.effects), dict(c.globals),
                dict(c.where), dict(c.top.what), dict(c.gone), dict(c.shared.modules),
                dict(p.lets), dict(p.defs), list(p.order), len(p.outline), p.templates,
                p.specializations, e._done_nodes, e._done_effects, len(p.deferred),
                set(p.deferred_keys), dict(c.top.sources))

    def _restore(self, snap):
        c, p, e = self.checker, self.program, self.evaluator
        (n_nodes, n_main, n_effects, names, lines, what, gone, modules, p.lets, p.defs, p.order,
         n_outline, p.templates, specializations, e._done_nodes, e._done_effects, n_deferred,
         p.deferred_keys, sources) = snap
        del p.deferred[n_deferred:]
        # a def checked again for a call of the statement taken back: its nodes go with it
        for v in list(c.globals.values()) + [t for m in c.shared.modules.values()
                                             for t in m.names.values()]:
            specs = getattr(v, "specs", None)
            if specs:
                for key in [k for k, t in specs.items() if t.index < -specializations]:
                    del specs[key]
        for table, key in reversed(p.journal):
            table.pop(key, None)
        p.journal = []
        for current, saved in ((c.globals, names), (c.where, lines), (c.top.what, what),
                               (c.gone, gone), (c.shared.modules, modules),
                               (c.top.sources, sources)):
            current.clear()
            current.update(saved)
        del p.nodes[n_nodes:]
        del p.main.nodes[n_main:]
        del p.main.effects[n_effects:]
        del p.outline[n_outline:]
        del e.values[n_nodes:]
        c._defining = None
        c.impure = False
        c.depth = 0
        del c.shared.loading[:]
        del c.shared.calls[:]

    def _check(self, stmt, start=None):
        old = sys.getrecursionlimit()
        sys.setrecursionlimit(max(old, _RECURSION_LIMIT))
        # the nodes before this input's (``start``: a loaded file's first) may be gone
        # (_needed): grad does not go back into an earlier input's loop
        self.checker.earlier = len(self.program.nodes) if start is None else start
        try:
            return self.checker.check_stmt(stmt)
        except RecursionError:
            raise GoatError("this statement is nested too deeply to check", stmt.loc) from None
        finally:
            sys.setrecursionlimit(old)

    def _evaluate(self, loc, keep=None):
        old = sys.getrecursionlimit()
        sys.setrecursionlimit(max(old, _RECURSION_LIMIT))
        try:
            self.evaluator.run(keep)
        except RecursionError:
            raise GoatError("this input's blocks are nested too deeply to run", loc) from None
        finally:
            sys.setrecursionlimit(old)

    # ------------------------------------------------------------------ running
    def parse(self, text: str, path: str = "<repl>") -> list:
        return parse(Source(path, text if text.endswith("\n") else text + "\n"),
                     interactive=True).stmts

    def run(self, text: str, path: str = "<repl>") -> list:
        """Check and run each statement of ``text`` in turn; a list of :class:`Result`.

        Raises GoatError at the first statement that fails, after taking that statement back
        (the statements before it stay done).  KeyboardInterrupt likewise.
        """
        results = []
        for stmt in self.parse(text, path):
            results.append(self.run_statement(stmt))
        return results

    def run_statement(self, stmt) -> Result:
        with self.exclusive():
            snap = self._snapshot()
            try:
                checked = self._check(stmt)
                needed = self._needed()
                shown = checked if type(stmt) is ast.ExprStmt else ()
                self._evaluate(stmt.loc, self._to_keep(needed, _nodes(shown)))
                result = self._result(stmt, checked)
            except BaseException:
                self._restore(snap)
                self.generation += 1
                raise
            self._forget(needed)
            self.program.journal = []
            self._changed()
            return result

    def _needed(self):
        """(the ids of the top-level values a later statement may read once the statement
        just checked has run, the ids of the reachable ones, of those on a path, see below).

        A later statement reads the values names reach (Checker.reachable), and a later
        ``grad`` may read more: it differentiates through earlier statements, so a node on a
        path from one reachable value to another (``let c = b * 4`` then ``grad(f(c), b)``)
        is needed, with its operands (the 4); not through a for loop, which grad never
        differentiates through (a loop of training steps run again and again had kept each
        earlier w).  Everything else can go: a var's earlier
        values (after ``w = w + 1`` nothing reachable leads to the old w), a statement's
        intermediate values off such paths, a shown expression's value.

        Only a reachable node or one on a path can be reached again later (Program.forget
        leaves no other in the hash-consing tables), so a value dropped is never needed
        again (whatever lies between a node on a path and a reachable one is on a path too);
        and while no name lets go of a node, nothing needed stops being needed: then only
        the statement's new nodes are looked at, else every value still held."""
        program = self.program
        main = program.main
        nodes = program.nodes
        live = self.checker.reachable()
        fresh = main.nodes[self._kept:]
        # a path starts at a value grad can differentiate with respect to: not a constant
        # (a def's literal is reachable, and would tie every later product by it to it)
        starts = {i for i in live if nodes[i].kind != CONST}

        def inputs(n):
            ins = [a.id for a in n.args]
            for sub in subregions(n):         # what a loop or an if reads from outside it
                ins.extend(sub.free_values())
            return [i for i in ins if nodes[i].region is main]

        # while no name lets go of a node, only the new nodes are looked at; else every value
        # still held, from the reachable ones back to what they are computed from
        grown = self._live <= live
        among = {n.id for n in fresh}
        if not grown:
            among |= self._held
        ancestors = set()
        stack = [i for i in live if i in among]
        while stack:
            i = stack.pop()
            if i not in ancestors:
                ancestors.add(i)
                stack.extend(j for j in inputs(nodes[i]) if j in among)
        needed = self._held | live if grown else set(live)
        on_path = set(self._on_path) if grown else set()
        for i in sorted(ancestors):     # ids are in creation order: operands first
            node = nodes[i]
            # grad never differentiates through an earlier input's for loop, nor through the
            # tapes a grad through a loop made (a tape is as big as the loop is long)
            if node.kind == LOOP or (node.kind == OP and "tape" in node.op.tags):
                continue
            ins = inputs(nodes[i])
            if any(j in starts or j in on_path for j in ins):
                on_path.add(i)
                needed.add(i)
                needed.update(ins)
        return needed, live, on_path, grown

    def _to_keep(self, needed, shown):
        """The new values the statement's run keeps (the evaluator drops the others after
        their last use): those needed later, and those the REPL shows."""
        new = {n.id for n in self.program.main.nodes[self._kept:]}
        return (needed[0] & new) | {n.id for n in shown}

    def _forget(self, needed):
        """Drop the values no later statement can read (``needed`` is :meth:`_needed`'s), and
        let the hash-consing tables give none but the reachable ones.  Kept, they had made
        the session grow by each statement's values (100 steps of ``w = w + 1`` on a
        1000x1000 w: 800 MB)."""
        keep, live, on_path, grown = needed
        main = self.program.main
        # a value on a path may be reached again (shared by a later statement) safely: every
        # value between it and a reachable one is kept; an operand kept for grad's sake is not.
        # When nothing needed before has stopped being needed, only the entries the statement
        # added are looked at (the journal)
        self.program.forget(main, live | on_path,
                            list(self.program.journal) if grown else None)
        values = self.evaluator.values
        for node in main.nodes[self._kept:]:
            if node.id not in keep:
                values[node.id] = None
        for i in self._held - keep:
            values[i] = None
        self._held, self._live, self._on_path = keep, live, on_path
        self._kept = len(main.nodes)

    def _result(self, stmt, checked) -> Result:
        t = type(stmt)
        if t is ast.Let:
            return Result("let", stmt.name, checked.shape)
        if t is ast.Var:
            return Result("var", stmt.name, checked.shape)
        if t is ast.Assign:
            return Result("assign", stmt.name, self._assigned_shape(stmt, checked))
        if t is ast.Params:
            return Result("var", stmt.name, checked.shape)
        if t is ast.LetTuple:
            return Result("lets", ", ".join(stmt.names), self._tuple_shapes(stmt, checked))
        if t is ast.Def:
            return Result("def", stmt.name, checked.shape, signature=checked.signature())
        if t is ast.Print or t is ast.PrintFormat or t is ast.Save:
            return Result("print", None, getattr(checked, "shape", None))
        if t is ast.Import:
            return Result("import", stmt.module)
        if t is not ast.ExprStmt:           # a for or an if block
            return Result("block")
        # a copy: the session's own value must not change if the caller changes this one
        if isinstance(checked, tuple):
            return Result("value", None, tuple(n.shape for n in checked),
                          tuple(np.array(self.evaluator.value(n)) for n in checked))
        return Result("value", None, checked.shape, np.array(self.evaluator.value(checked)))

    def _tuple_shapes(self, stmt, checked) -> tuple:
        """The shape of each name a tuple binds or assigns: its value's, or for cells assigned
        (h[0], c[0] = ...) the whole var's, as h[0] = v shows it."""
        parts = stmt.items or [None] * len(stmt.names)
        shapes = []
        for name, part, node in zip(stmt.names, parts, checked):
            if part is None:
                shapes.append(node.shape)
                continue
            base, _, path = name.partition(".")
            if path:                        # theta.w[0]: the member's shape
                shapes.append(self._assigned_shape(ast.Assign(name, None, None, None), node))
                continue
            binding, _ = self.checker.top.find(name)
            shapes.append(getattr(binding, "declared", None) or node.shape)
        return tuple(shapes)

    def _assigned_shape(self, stmt, checked):
        """The shape of what ``stmt`` assigned: a var's, or a params member's (p.w1 = v, whose
        checked value is the whole var p)."""
        base, _, path = stmt.name.partition(".")
        layout = self.checker._layout_of(base, self.checker.top) if path else None
        if layout is None:
            return checked.shape
        for part in path.split("."):
            member = layout.members[part]
            layout = member[3]
        return member[2]

    def load(self, path: str, lets: dict | None = None) -> list:
        """Run a whole file into the session: checked whole first, taken back whole on error.
        ``lets``: numbers for its top-level lets, as goat run --let gives them."""
        from ..api import give_lets, read_source
        source = read_source(path)
        module = parse(source)
        errors = give_lets(module, lets or {})
        if errors:
            raise errors[0]
        with self.exclusive():
            return self._load(module)

    def _load(self, module) -> list:
        stmts = module.stmts
        snap = self._snapshot()
        seen = {}
        try:
            self.checker.look_ahead(module)     # a file's rules: use after definition...
            checked = []
            start = len(self.program.nodes)     # the file is one input
            for stmt in stmts:
                for name in _defined_names(stmt):
                    if name in seen:            # ... and each name once in the file
                        raise GoatError("'%s' is already defined on line %d; a name can be "
                                        "defined only once in a file" % (name, seen[name]),
                                        stmt.loc)
                    seen[name] = stmt.loc.line
                checked.append(self._check(stmt, start))
            needed = self._needed()
            shown = [c for s, c in zip(stmts, checked) if type(s) is ast.ExprStmt]
            self._evaluate(None, self._to_keep(needed, _nodes(tuple(shown))))
            results = [self._result(s, c) for s, c in zip(stmts, checked)]
        except BaseException:
            self._restore(snap)
            self.generation += 1
            raise
        finally:
            self.checker.later = {}
        self._forget(needed)
        self.program.journal = []
        self._changed()
        return results

    # ------------------------------------------------------------------ looking, not running
    def describe(self, text: str, path: str = "<repl>") -> str:
        """The static type of what ``text`` would do, without running or keeping anything:
        ``q : tensor[112x8]`` for a let, a def's signature, an expression's type; for the name
        of a def, a built-in or a module, its signature.

        Raises GoatError for the error it would raise (its place named ``path``).
        """
        with self.exclusive():
            named = self._signature(text.strip())
            if named is not None:
                return named
            return self._describe(text, path)[1]

    def laid_out(self, name: str, shape) -> str:
        """`` (theta)`` where the name a statement bound holds a vector laid out as a params
        block (``var m = zeros(theta)``, ``let g = grad(l, theta)``), as goat check --shapes
        shows it; else ""."""
        layout = self.checker.top.layouts.get(name)
        if layout is None or tuple(shape or ()) != (layout.size,):
            return ""
        return " (%s)" % layout.name

    def parameter_names(self, name: str) -> list:
        """The names the arguments of the def or built-in ``name`` may be given by (f(x,
        scale=2)), in order; [] for anything else."""
        from ..ops import lookup
        from ..typecheck.checker import _signature_names
        v = self.checker.globals.get(name)
        if "." in name:
            mod, _, member = name.partition(".")
            module = self.checker.globals.get(mod)
            v = module.names.get(member) if isinstance(module, Module) else None
        if isinstance(v, Template):
            return [p for p, _, _ in v.params]
        op = lookup(name) if v is None else None
        return _signature_names(op) if op is not None else []

    def _signature(self, name: str):
        """``def f(x: tensor[2x2]) -> tensor[2x1]`` when ``name`` names a def (``nn.relu``: a
        module's def), a built-in's signature, ``module nn``; else None."""
        if not _NAME.match(name):
            return None
        if "." in name:
            mod, _, member = name.partition(".")
            module = self.checker.globals.get(mod)
            v = module.names.get(member) if isinstance(module, Module) else None
            if isinstance(v, Template):
                return "def %s.%s" % (mod, v.signature())
            return None
        v = self.checker.globals.get(name)
        if isinstance(v, Template):
            return "def " + v.signature()
        if isinstance(v, Module):
            return "module %s" % name
        layout = self.checker.top.layouts.get(name)
        if layout is not None:      # :type theta -- its members, in the vector's order
            return "%s : tensor[%d], laid out as params %s: %s" % (
                name, layout.size, layout.name, layout.describe())
        if v is None and (name in REGISTRY or name in TRANSFORMS):
            return signature(name)
        return None

    def _within(self, budget, fn, *args):
        """``fn(*args)`` (a check), stopped by ``budget`` (HintAbandoned) when it runs out.

        Nothing can interrupt a thread from outside, so the check itself looks at the budget
        as it works: through the checker's hook where it has one -- ``checker.cancel``, a
        callable the checker calls now and then (at each def call it expands, and every
        thousand nodes it makes) and that stops the check (CheckCancelled) when it returns
        true -- and otherwise from a trace function on this thread's Python calls
        (``sys.settrace`` is per thread; about three times slower, but only hints pay it).
        The budget stops the check only while armed, and it is disarmed without calling any
        Python function (a trace event), so the taking back that follows is never interrupted.
        """
        if budget is None:
            return fn(*args)
        try:
            self._arm(budget)
            return fn(*args)
        except _CheckCancelled:
            raise HintAbandoned(budget.cancelled or budget.reason or "superseded") from None
        finally:
            budget.armed = False                # no Python call in here: no trace event
            if budget.hooked:
                self.checker.cancel = None
            if budget.traced:
                sys.settrace(budget.old_trace)
                budget.traced = False

    def _arm(self, budget):
        budget.start()
        budget.hooked = budget.traced = False
        if self.use_checker_hook and hasattr(self.checker, "cancel"):   # the checker asks
            self.checker.cancel = budget.expired
            budget.hooked = True
        else:
            budget.old_trace = sys.gettrace()
            poll = budget.poll
            count = [0]

            def tracer(frame, event, arg):
                if budget.armed:
                    count[0] += 1
                    # a look every 32 calls, raising only into goat's own functions: raised
                    # into a weakref callback or a finalizer that the collector runs meanwhile,
                    # it would be ignored (and turn the tracing off); nor into a generator
                    if ((count[0] >= 32 or budget.cancelled is not None or self._waiting)
                            and frame.f_code.co_filename.startswith(_GOAT_DIR)
                            and not frame.f_code.co_flags & _GENERATOR_FLAGS):
                        count[0] = 0
                        poll()
                return None                     # no line events: only calls are traced
            budget.traced = True
            sys.settrace(tracer)
        budget.armed = True

    def _describe(self, text: str, path: str = "<repl>", budget=None):
        """(statement kind, description) of the last statement of ``text`` (inside a block
        when it ends in one: the statement being typed).  ``budget``: see :meth:`_within`."""
        # parsing needs nothing of the session (the parser guards its own tables), and it is
        # not stopped half-way: it takes time in proportion to the text, once the parser exists
        stmts = self.parse(text, path)
        if not stmts:
            return None, "", None
        with self._held_for(budget):
            snap = self._snapshot()
            self.checker.last = None
            deferred = self.program.deferred
            n = len(deferred)
            try:
                stmt, checked = self._within(budget, self._check_all, stmts)
                later = deferred[n:]
                # (the layout the check gave a name: the snapshot takes it back)
                bound = self.checker.top.layouts.get(getattr(stmt, "name", None))
            finally:
                self._restore(snap)
        if later:       # the book's run-time error (a ? def's result): the bar shows it too
            raise later[0]
        t = type(stmt)
        if t is ast.Let:
            return "let", "%s : %s%s" % (stmt.name, format_type(checked.shape),
                                         self._laid_out(stmt.expr, checked, stmt.type,
                                                        bound)), stmt
        if t is ast.Var:
            return "let", "var %s : %s%s" % (stmt.name, format_type(checked.shape),
                                             self._laid_out(stmt.expr, checked, stmt.type,
                                                            bound)), stmt
        if t is ast.Assign:
            return "let", "%s : %s" % (stmt.name, format_type(
                self._assigned_shape(stmt, checked))), stmt
        if t is ast.Params:
            return "let", "params %s : %s" % (stmt.name, format_type(checked.shape)), stmt
        if t is ast.LetTuple:
            return "let", "%s : %s" % (", ".join(stmt.names), ", ".join(
                format_type(shape) for shape in self._tuple_shapes(stmt, checked))), stmt
        if t is ast.Def:
            return "def", "def " + checked.signature(), stmt
        if t is ast.Import:
            return "let", "import %s" % stmt.module, stmt
        if t is ast.Print:
            return "print", format_type(checked.shape) + self._laid_out(stmt.expr, checked), stmt
        if t is ast.ExprStmt:
            if isinstance(checked, tuple):
                return "expr", "(%s)" % ", ".join(format_type(n.shape) for n in checked), stmt
            return "expr", format_type(checked.shape) + self._laid_out(stmt.expr, checked), stmt
        return "let", "", stmt          # a block, a format print, a save: nothing to show

    def _laid_out(self, expr, checked, ann=None, bound=None) -> str:
        """`` (theta)`` where the value of ``expr`` (checked: ``checked``; ``bound``: the
        Layout the check gave the name it binds) is laid out as a params block, as goat check
        --shapes shows it; else ""."""
        checker = self.checker
        if not checker.layout_types or isinstance(checked, tuple):
            return ""
        if ann is not None:
            return " (%s)" % ann.layout if ann.layout is not None else ""
        if bound is not None and tuple(checked.shape) == (bound.size,):
            return " (%s)" % bound.name     # (what the checker gave the name: zeros(theta))
        try:
            layout = checker._expr_layout(expr, checker.top)
        except Exception:           # (a name the snapshot took back: nothing to show)
            return ""
        if layout is None or tuple(checked.shape) != (layout.size,):
            return ""
        return " (%s)" % layout.name

    def _check_all(self, stmts):
        """Check ``stmts`` in turn (the caller takes them back): (the statement to describe,
        what checking it gave)."""
        for stmt in stmts:
            try:
                checked = self._check(stmt)
            except GoatError as e:
                # a def still being typed has no return yet: show what is there so far
                if not (type(stmt) is ast.Def and "must end with return" in e.message
                        and self.checker.last is not None):
                    raise
        if type(stmt) in (ast.For, ast.If, ast.Def) and self.checker.last is not None:
            inner, value = self.checker.last
            if inner.loc.start >= stmt.loc.start:
                stmt, checked = inner, value
                if type(stmt) is ast.Return:
                    stmt = ast.ExprStmt(stmt.expr, stmt.loc)
        return stmt, checked

    def hint(self, text: str, width: int = 100, budget: HintBudget | None = None,
             signatures: bool = False) -> str:
        """The bottom-toolbar hint for input being typed: its shape, or the error it would
        raise; '' while it is plainly unfinished.  At most about ``width`` characters.
        ``signatures``: the name of a def or a built-in alone gives its signature (:type f).

        With a ``budget`` (the REPL's hint thread) it raises :class:`HintAbandoned` when the
        budget runs out or the main thread wants the session; what it checked is taken back
        either way.  Without one it holds the session until it is done.
        """
        if budget is None:
            with self.exclusive():
                return self._hint(text, width, None, signatures)
        return self._hint(text, width, budget, signatures)

    @contextmanager
    def _held_for(self, budget):
        """Hold the session for a hint (with ``budget``; None: the caller holds it already).
        Raises HintAbandoned at once if the main thread wants it or it changed since the hint
        was asked for."""
        if budget is None:
            yield
            return
        with self.lock:
            self._hint_budget = budget          # first this, then the look at _waiting
            budget.session = self
            try:
                if self._waiting:
                    raise HintAbandoned("preempted")
                if budget.generation is not None and budget.generation != self.generation:
                    raise HintAbandoned("stale")
                yield
            finally:
                budget.session = None
                self._hint_budget = None

    def _hint(self, text, width, budget, signatures):
        if signatures:
            with self._held_for(budget):
                named = self._signature(text.strip())
            if named is not None:
                return named
        body = text.strip()
        line = re.split(r"[\n;{}]", body)[-1].strip()    # the statement being typed
        if not body or body.startswith(":") or (
                line and any(k.startswith(line) for k in STATEMENT_KEYWORDS)
                and self.checker.globals.get(line) is None):
            return ""               # nothing yet, a command, or a keyword half typed (not a
            #                         name of the session's: a, s, i)
        missing = open_brackets(text)
        if "[" in missing:
            return ""               # a literal still being typed has no shape yet
        if "{" in missing:          # inside a block: the statement being typed, in its block
            if text.rstrip().endswith("{"):
                return ""
            closing = "".join(")" if c == "(" else "\n}" for c in reversed(missing))
            try:
                kind, described, stmt = self._describe(text + closing, budget=budget)
            except GoatError as e:
                members = self._member_hint(body, e)
                if members:
                    return members
                if _incomplete(e) or (missing[-1] == "(" and not _shape_complaint(e)):
                    return ""
                return "error: " + e.message
            return described
        candidate = text + ")" * len(missing)
        try:
            kind, described, stmt = self._describe(candidate, budget=budget)
        except GoatError as e:
            members = self._member_hint(body, e)
            if members:
                return members
            if _incomplete(e) or (missing and not _shape_complaint(e)):
                return ""           # an open bracket: the rest is still to come
            partial = _PARTIAL_NAME.search(body)
            if partial and e.message.startswith("unknown ") and "'%s'" % partial.group() in e.message:
                word = partial.group()
                known = [n for n, _ in self.names()] + builtin_names()
                matches = sorted(n for n in known if n.startswith(word) and n != word)
                if matches:
                    return "%s…  (%s)" % (word, ", ".join(matches[:6]) + (", …" if len(matches) > 6 else ""))
            return "error: " + e.message
        if kind in (None, "let", "def"):
            return described
        expr = stmt.expr if kind == "print" else stmt
        if missing and not re.search(r"\w", text[expr.loc.start:]):
            return ""               # only brackets so far
        shown = " ".join(candidate[expr.loc.start:expr.loc.end].split())
        if missing:                 # show what was typed, not the brackets added to check it
            shown = " ".join(text[expr.loc.start:].split()) + "…"
        room = max(10, width - len(described) - 5)
        if len(shown) > room:
            shown = shown[:room - 1] + "…"
        return "%s  :  %s" % (shown, described)

    def _member_hint(self, body, e):
        """``nn.…  (nn.gelu, ...)`` for a module's name and part of a member's typed last (the
        error ``e`` is then its own: a '.' with nothing after it, or no such member); None
        otherwise."""
        member = _PARTIAL_MEMBER.search(body)
        if member and (e.message.startswith("unexpected character '.'") or e.message.startswith(
                "module %s has no def or let named" % member.group(1))):
            word = member.group()       # nn. or nn.ge, as Tab completes it
            matches = sorted(n for n, _ in self.members() if n.startswith(word) and n != word)
            if matches:
                return "%s…  (%s)" % (word, ", ".join(matches[:6]) + (", …" if len(matches) > 6 else ""))
        return None

    # ------------------------------------------------------------------ names
    def names(self) -> list:
        """[(name, description)] of everything defined, in definition order (as the last
        statement left them: safe to call while a hint is checking)."""
        return list(self._names)

    def defines(self, name: str) -> bool:
        """Is ``name`` defined in the session (a let, var, def or module)?"""
        with self.exclusive():
            return name in self.checker.globals

    def members(self) -> list:
        """[(module.name, description)] of every def and let of the modules imported, for
        completing ``nn.`` (as the last statement left them, as :meth:`names`)."""
        return list(self._members)

    def _list_members(self) -> list:
        out = []
        for name, v in self.checker.globals.items():
            if isinstance(v, Module):
                for member, w in v.names.items():
                    if member.startswith("_"):
                        continue
                    if isinstance(w, Template):
                        out.append(("%s.%s" % (name, member), "def " + w.signature()))
                    elif getattr(w, "shape", None) is not None:
                        out.append(("%s.%s" % (name, member), format_type(w.shape)))
        for name, layout in self.checker.top.layouts.items():
            # theta.<Tab>: a params block's members (and those of a let laid out as one)
            for member, (_, _, shape, _) in layout.members.items():
                out.append(("%s.%s" % (name, member), format_type(shape)))
        return out

    def _list_names(self) -> list:
        out = []
        for name, v in self.checker.globals.items():      # imports first: `import nn`
            if isinstance(v, Module) and name not in self.program.order:
                out.append((name, "module"))
        for name in self.program.order:
            v = self.checker.globals.get(name)
            if isinstance(v, Template):
                out.append((name, "def " + v.signature()))
            elif isinstance(v, VarBinding):
                layout = self.checker.top.layouts.get(name)
                out.append((name, ("params %s (%s)" % (format_type(v.declared), layout.describe()))
                            if layout is not None and layout.name == name
                            else "var " + format_type(v.declared)
                            + self.laid_out(name, v.declared)))
            elif isinstance(v, Module):
                out.append((name, "module"))
            elif v is not None:
                out.append((name, format_type(v.shape) + self.laid_out(name, v.shape)))
        return out

    @staticmethod
    def builtins() -> list:
        """[(name, signature)] of every built-in function."""
        return [(n, signature(n)) for n in builtin_names()]


def _incomplete(e: GoatError) -> bool:
    """Is this the complaint of a statement that is only not finished yet?"""
    m = e.message
    return ("found the end of the line" in m or "ends early" in m or "is never closed" in m)


def _shape_complaint(e: GoatError) -> bool:
    """A shape error proper, worth showing even while a bracket is still open."""
    return e.message.startswith(("cannot ", "unknown ", "argument ", "size variable "))
