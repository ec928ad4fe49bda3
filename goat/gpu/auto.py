"""``--backend auto``: CPU or GPU, chosen from the checked program's own cost.

Every shape in a checked program is known before it runs, so its work is too: for each op,
the floating-point operations (a matrix product ``2*M*N*K`` per batch, an elementwise op or a
reduction one per cell read) and the bytes it reads and writes; a loop's body counts once per
iteration when its bounds are numbers written in the program (a bound computed when it runs
counts the body once, and the report says so); of an ``if``, the branch its condition takes
when the program's own numbers fix it (``if save_ckpt`` with ``let save_ckpt = 0``), else the
dearer branch, as if it ran every time (``if step % 100 == 0`` in a loop counts at every step:
an upper bound).

Each back end's time is then estimated by a simple roofline with a cost per launch:

* NumPy (one core, the BLAS on one thread): ``2 us`` per op, ``10 GB/s``, ``30 GFLOP/s``
  (f64; twice for f32);
* CuPy: ``1 s`` to start (CUDA context, kernel compilation -- cached on disk after the first
  run), ``10 us`` per launch (CuPy's Python-side dispatch; a fused elementwise chain is one
  launch, counted with goat/interp/fusion.py's own groups), ``2 TB/s``, ``20 TFLOP/s`` (f64;
  twice for f32).

These are round figures for a current server CPU core and a data-centre GPU (an H200 does
better on every count, which only moves large programs further towards it); what decides is
the ratio, which is decided by the launch count on small models and by the FLOPs on large
ones: the chapter's model (112 x 8 activations, ~60,000 ops) stays on the CPU, where a GPU
spends its time launching; a batched GPT-style model (16 x 256 tokens, width 512) goes to the
GPU.  ``goat run --time`` reports the choice and both estimates.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..aot.kernels import ALIAS
from ..typecheck.program import BRANCH, LOOP, OP, known_number, loop_trips
from ..typecheck.shapes import known_cells

CPU = {"launch": 2e-6, "bandwidth": 10e9, "flops": 30e9, "start": 0.0}
GPU = {"launch": 10e-6, "bandwidth": 2e12, "flops": 20e12, "start": 1.0}


@dataclass
class Cost:
    """The work of a program: ``flops``, ``bytes`` moved, ``ops`` (NumPy calls) and
    ``launches`` (GPU kernels, fused chains counted once); ``unknown_loops``: loops whose
    bounds are known only when they run (counted once); ``unknown_sizes``: ops with a size
    known only when they run (a ``?``, counted as 1)."""
    flops: float = 0.0
    bytes: float = 0.0
    ops: float = 0.0
    launches: float = 0.0
    unknown_loops: int = 0
    unknown_sizes: int = 0

    def add(self, other, times=1.0):
        self.flops += other.flops * times
        self.bytes += other.bytes * times
        self.ops += other.ops * times
        self.launches += other.launches * times
        self.unknown_loops += other.unknown_loops
        self.unknown_sizes += other.unknown_sizes

    def seconds(self, rates, itemsize=8) -> float:
        speed = 2.0 if itemsize == 4 else 1.0
        return (rates["start"] + self.launches_for(rates) * rates["launch"]
                + self.bytes * itemsize / 8 / rates["bandwidth"]
                + self.flops / (rates["flops"] * speed))

    def launches_for(self, rates):
        return self.launches if rates is GPU else self.ops


def _known(shape) -> bool:
    return type(shape) is tuple and all(type(d) is int for d in shape)


def _op_cost(node) -> tuple:
    """(flops, bytes) of one op node, float64."""
    if node.op.cost is not None:
        return node.op.cost(node)
    out = known_cells(node.shape) if type(node.shape) is tuple and all(
        type(d) is not tuple for d in node.shape) else 1
    ins = [known_cells(a.shape) for a in node.args if type(a.shape) is tuple
           and all(type(d) is not tuple for d in a.shape)]
    moved = 8.0 * (out + sum(ins))
    if node.op.name == "matmul" and len(node.args) == 2:
        a, b = node.args[0].shape, node.args[1].shape
        if len(a) >= 2 and len(b) >= 2:
            k = a[-1] if type(a[-1]) is int else 1
            return 2.0 * out * k, moved
    return float(max(out, max(ins, default=0))) * node.op.cell_flops, moved


def region_cost(region, dtype: str = "f64") -> Cost:
    """The cost of running ``region`` once (its loops as many times as their written bounds
    say)."""
    from ..interp.fusion import groups
    c = Cost()
    fused = groups(region, (), 1, multi=True)     # as the GPU back end runs it
    inner = set()
    for _, _, members, _ in fused.values():
        inner |= members
    for node in region.nodes:
        if node.kind == OP and node.op.lowering is ALIAS:
            continue                # a let's own name for a value, stop_gradient: no work
        if node.kind == OP:
            f, b = _op_cost(node)
            if not (_known(node.shape) and all(_known(a.shape) for a in node.args)):
                c.unknown_sizes += 1
            c.flops += f
            c.bytes += b
            c.ops += 1
            if node.id not in inner:
                c.launches += 1
        elif node.kind == LOOP:
            body = node.value
            trips = loop_trips(node.args[0], node.args[1], dtype)
            known = trips is not None
            trips = trips if known else 1.0
            c.unknown_loops += 0 if known else 1
            c.add(region_cost(body.parent, dtype), 1.0 if trips else 0.0)
            c.add(region_cost(body, dtype), trips)
        elif node.kind == BRANCH:
            a, b = (region_cost(r, dtype) for r in node.value)
            known = known_number(node.args[0], dtype)
            if known is not None:           # fixed by the program's own numbers
                c.add(a if known != 0 else b)   # (a NaN holds, as the if takes it)
            else:
                c.add(a if a.flops + a.ops >= b.flops + b.ops else b)
    return c


@dataclass
class Choice:
    """What ``auto`` chose (``backend``) and why (``reason``, one line); ``work``: the
    counts it estimated from."""
    backend: str
    reason: str
    cpu_seconds: float
    gpu_seconds: float
    work: str = ""


def choose(program, dtype: str = "f64", gpu_missing: str | None = None) -> Choice:
    """The back end ``auto`` runs ``program`` on: "cupy" when a GPU is usable
    (``gpu_missing`` None) and the estimate on it is lower, else "numpy".  ``gpu_missing``
    may be a function giving it (goat.gpu.cupy_usable), called only when the GPU's estimate
    is the lower: loading CuPy and finding a device takes longer than a small program
    runs."""
    c = region_cost(program.main, dtype)
    itemsize = 4 if dtype == "f32" else 8
    cpu, gpu = c.seconds(CPU, itemsize), c.seconds(GPU, itemsize)
    work = ("%s GFLOP, %s GB moved, %d ops, %d GPU launches"
            % (_num(c.flops / 1e9), _num(c.bytes * itemsize / 8 / 1e9), c.ops, c.launches))
    if c.unknown_loops:
        work += "; %s known only when the program runs, counted once" % _plural(
            c.unknown_loops, "loop with bounds", "loops with bounds")
    if c.unknown_sizes:
        work += "; %s, counted as 1" % _plural(c.unknown_sizes, "op with a ? size",
                                              "ops with ? sizes")
    estimate = "estimated %.3g s on the CPU, %.3g s on a GPU (%s)" % (cpu, gpu, work)
    if gpu < cpu and callable(gpu_missing):
        gpu_missing = gpu_missing()
    if gpu < cpu and gpu_missing is None:
        return Choice("cupy", "auto chose cupy: " + estimate, cpu, gpu, work)
    if gpu < cpu:
        return Choice("numpy", "auto chose numpy: no GPU to run on (%s), though %s"
                      % (_first_clause(gpu_missing), estimate), cpu, gpu, work)
    return Choice("numpy", "auto chose numpy: " + estimate, cpu, gpu, work)


def _num(x: float) -> str:
    """3 significant digits, whole numbers from 1000 to a million (3410, not 3.41e+03;
    8.11e+22, not 23 digits)."""
    return "%.0f" % x if 1000 <= x < 1e6 else "%.3g" % x


def _plural(n, one, many):
    return "%d %s" % (n, one if n == 1 else many)


def _first_clause(text: str) -> str:
    return text.split(";")[0].split(":")[0].split(" (")[0].replace("the cupy back end ", "")
