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
