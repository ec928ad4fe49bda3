"""How the REPL shows a value: its type on one line, then its numbers in aligned columns.

``print`` keeps the book's memref format (every number); a bare expression typed at the prompt
is shown in this compact layout instead, fitted to the terminal's width: long rows and long
columns are summarized with ``...`` (the first and last entries are kept), as NumPy does.
"""
from __future__ import annotations

import numpy as np

from ..interp.printer import format_number
from ..typecheck.shapes import format_type

EDGE = 3             # rows (and outer blocks) kept at each end of a summarized dimension
MAX_ROWS = 2 * EDGE + 4   # a dimension longer than this is summarized


def _keep(n: int, edge: int):
    """The indices shown of a dimension of size n (None marks the '...')."""
    if n <= 2 * edge + 1:
        return list(range(n))
    return list(range(edge)) + [None] + list(range(n - edge, n))


def show(value, width: int = 100) -> str:
    """The type, then the values, in at most ``width`` columns where the rows allow."""
    a = np.asarray(value, dtype=np.float64)
    kind = format_type(a.shape)
    if a.ndim == 0:
        return "%s\n%s" % (kind, format_number(float(a)))
    if a.size == 0:
        return "%s\n(empty)" % kind
    rows = a.reshape(-1, a.shape[-1])
    cols = a.shape[-1]
    # which columns fit: each number takes its width plus two spaces
    row_keep = _keep(rows.shape[0], EDGE) if rows.shape[0] > MAX_ROWS else list(range(rows.shape[0]))
    sample = rows[[r for r in row_keep if r is not None]]
    cell = max(len(format_number(x)) for x in sample.ravel().tolist())
    fit = max(2, (width - 2 * a.ndim) // (cell + 2))
    col_keep = list(range(cols)) if cols <= fit else _keep(cols, max(1, (fit - 1) // 2))
    shown = [c for c in col_keep if c is not None]
    cell = max(len(format_number(x)) for x in sample[:, shown].ravel().tolist())

    def row_text(r):
        parts = ["..." .rjust(cell) if c is None else format_number(float(r[c])).rjust(cell)
                 for c in col_keep]
        return "[" + "  ".join(parts) + "]"

    def block(x, depth):
        """Lines for x (rank >= 1), bracketed; depth = brackets already open to the left."""
        if x.ndim == 1:
            return [row_text(x)]
        n = x.shape[0]
        keep = _keep(n, EDGE) if n > MAX_ROWS else list(range(n))
        lines = []
        for k, i in enumerate(keep):
            if i is None:
                lines.append("...")
            else:
                sub = block(x[i], depth + 1)
                lines.extend(sub)
            if x.ndim > 2 and k < len(keep) - 1:
                lines.append("")          # a blank line between matrices of a stack
        lines[0] = "[" + lines[0]
        lines[-1] = lines[-1] + "]"
        return [lines[0]] + [(" " + l) if l else l for l in lines[1:]]

    return "%s\n%s" % (kind, "\n".join(block(a, 0)))
