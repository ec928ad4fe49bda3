"""``print``'s output: the format of MLIR's runner utilities (``printMemrefF64``), as the book shows.

    Unranked Memref base@ = 0x… rank = 2 offset = 0 sizes = [6, 1] strides = [1, 1] data = 
    [[1], 
     [1]]

The address is always written ``0x…`` (U+2026), as the book prints it, so output is
reproducible.  Numbers are C's ``%g`` (6 significant digits); a NaN whose sign bit is set
prints as ``-nan``, as glibc's printf does (x86's 0/0 is such a NaN).
"""
from __future__ import annotations

import math

import numpy as np


def format_number(x: float) -> str:
    """C's ``printf("%g", x)`` for a double, glibc's spelling of infinities and NaNs."""
    if x != x:
        return "-nan" if math.copysign(1.0, x) < 0 else "nan"
    return "%g" % x


def row_major_strides(shape) -> list:
    strides = []
    acc = 1
    for size in reversed(shape):
        strides.append(acc)
        acc *= size
    return strides[::-1]


def format_memref(value) -> str:
    """The whole printed text of one value, ending in a newline.

    Layout, recursively over dimensions: each dimension is bracketed; between two elements
    comes ``, ``, then a newline if the level holds more than one dimension, then
    ``rank - d + 1`` spaces (d = the number of dimensions at that level).
    """
    a = np.asarray(value, dtype=np.float64)
    rank = a.ndim
    shape = list(a.shape)
    header = ("Unranked Memref base@ = 0x\u2026 rank = %d offset = 0 sizes = [%s] strides = [%s] "
              "data = \n" % (rank, ", ".join(map(str, shape)),
                             ", ".join(map(str, row_major_strides(shape)))))
    if rank == 0:
        return header + "[" + format_number(float(a)) + "]\n"
    cells = [format_number(x) for x in a.ravel().tolist()]
    # build from the innermost dimension outwards, joining groups of strings
    level = cells
    for d in range(1, rank + 1):
        size = shape[rank - d]
        sep = ", " + ("\n" if d > 1 else "") + " " * (rank - d + 1)
        if size == 0:
            count = int(np.prod(shape[:rank - d])) if rank - d > 0 else 1
            level = ["[]"] * count
            continue
        level = ["[" + sep.join(level[i:i + size]) + "]" for i in range(0, len(level), size)]
    return header + level[0] + "\n"


STREAM_CELLS = 1 << 20      # a value of more cells is printed a part at a time
_PART = 1 << 16             # cells formatted at once when streaming


def write_memref(value, write) -> None:
    """``write(text)`` the printed text of one value, as :func:`format_memref` gives it; a
    value of more than STREAM_CELLS cells a part at a time (about a megabyte of text each),
    so that printing it needs memory for a part of its text, not a whole one (about 18 times
    the value's size)."""
    a = np.asarray(value, dtype=np.float64)
    if a.size <= STREAM_CELLS or a.ndim == 0:
        write(format_memref(a))
        return
    rank = a.ndim
    shape = list(a.shape)
    pending = ["Unranked Memref base@ = 0x\u2026 rank = %d offset = 0 sizes = [%s] strides = [%s] "
               "data = \n" % (rank, ", ".join(map(str, shape)),
                              ", ".join(map(str, row_major_strides(shape))))]
    size = 0
    for piece in _pieces(a, rank):
        pending.append(piece)
        size += len(piece)
        if size >= 1 << 20:
            write("".join(pending))
            pending, size = [], 0
    pending.append("\n")
    write("".join(pending))


def _pieces(a, rank):
    """The text of ``a`` (a part of a rank-``rank`` value) in pieces, as format_memref lays
    it out: bracketed, ", " between elements, then a newline and ``rank - k + 1`` spaces
    where the level holds k > 1 dimensions."""
    k = a.ndim
    yield "["
    if k == 1:
        sep = ", " + " " * rank
        for i in range(0, a.shape[0], _PART):
            text = sep.join([format_number(x) for x in a[i:i + _PART].tolist()])
            yield sep + text if i else text
    else:
        sep = ", \n" + " " * (rank - k + 1)
        for i in range(a.shape[0]):
            if i:
                yield sep
            yield from _pieces(a[i], rank)
    yield "]"
