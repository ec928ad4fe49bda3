"""How the REPL shows a value: its type, then its numbers aligned in columns.

``print`` keeps the book's memref format; a bare expression typed at the prompt is shown in
this compact layout instead, large tensors summarized NumPy-style with ``...``.
"""
from __future__ import annotations

import numpy as np

from ..interp.printer import format_number
from ..typecheck.shapes import format_type

EDGE = 3            # rows/columns kept at each end of a summarized dimension
THRESHOLD = 200     # summarize beyond this many numbers


def _shown_part(a: np.ndarray) -> np.ndarray:
    """The numbers that will be visible once the array is summarized."""
    if a.size <= THRESHOLD:
        return a
    index = []
    for n in a.shape:
        index.append(np.r_[0:EDGE, n - EDGE:n] if n > 2 * EDGE else np.arange(n))
    return a[np.ix_(*index)] if index else a


def show(value) -> str:
    """``tensor[2x3]`` then the rows, numbers in C's %g, right-aligned to a common width."""
    a = np.asarray(value, dtype=np.float64)
    if a.ndim == 0:
        return "%s  : scalar" % format_number(float(a))
    visible = _shown_part(a)
    width = max((len(format_number(x)) for x in visible.ravel().tolist()), default=1)
    body = np.array2string(a, separator="  ", threshold=THRESHOLD, edgeitems=EDGE,
                           max_line_width=120,
                           formatter={"float_kind": lambda x: format_number(x).rjust(width)})
    return "%s\n%s" % (format_type(a.shape), body)
