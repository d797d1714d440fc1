"""Numba kernels of Nussinov folding on the CPU: the blocked fill and the traceback.

The fill cuts the upper triangle into square blocks of :data:`BLOCK` nucleotides;
the blocks of one block diagonal run in parallel (``prange``). Codes are those of
:data:`RNA_LETTERS` (``uint8``); docs/ALGORITHMS.md ("RNA folding") gives the
recurrence and the traceback's tie rule.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

RNA_LETTERS = "ACGU"
"""RNA alphabet in code order; ``T`` reads as ``U``, either case."""
UNPAIRED_CODE = len(RNA_LETTERS)
"""Code of a base that pairs with nothing: ``N`` and the other IUPAC ambiguity codes (as
RNAfold treats them), and the GPU engine's padding."""

_PAIRS = np.zeros((UNPAIRED_CODE + 1, UNPAIRED_CODE + 1), dtype=np.bool_)
for _x, _y in ("AU", "GC", "GU"):
    _PAIRS[RNA_LETTERS.index(_x), RNA_LETTERS.index(_y)] = True
    _PAIRS[RNA_LETTERS.index(_y), RNA_LETTERS.index(_x)] = True

BLOCK = 64
"""Side of the square blocks of the fill, in nucleotides."""


@njit(cache=True, parallel=True)
def fill_block_diagonal(codes, min_loop, rows, cols, diagonal):
    """Fill ``rows[i, j] = cols[j, i] = N(i, j)`` in the blocks of one block diagonal.

    Both matrices start as zeros; the block diagonals are filled in increasing order.
    """
    n = codes.size
    blocks = (n + BLOCK - 1) // BLOCK
    for block_row in prange(blocks - diagonal):
        i_low = block_row * BLOCK
        i_high = min(n, i_low + BLOCK) - 1
        j_low = (block_row + diagonal) * BLOCK
        j_high = min(n, j_low + BLOCK) - 1
        for i in range(i_high, i_low - 1, -1):
            row = rows[i]
            for j in range(max(j_low, i + 1), j_high + 1):
                col = cols[j]
                best = np.int32(0)
                if j - i - 1 >= min_loop and _PAIRS[codes[i], codes[j]]:
                    best = np.int32(rows[i + 1, j - 1] + 1)
                # Slices and int32 arithmetic let LLVM vectorise the max-plus loop.
                left = row[i:j]
                below = col[i + 1:j + 1]
                for k in range(j - i):
                    best = max(best, np.int32(left[k] + below[k]))
                row[j] = best
                col[i] = best


@njit(cache=True)
def traceback(codes, min_loop, rows, pairs):
    """Write the pairs of the structure the tie rule selects into ``pairs``; return their count."""
    n = codes.size
    stack = np.empty((2 * n + 2, 2), dtype=np.int64)
    stack[0, 0] = 0
    stack[0, 1] = n - 1
    depth = 1
    count = 0
    while depth > 0:
        depth -= 1
        i = stack[depth, 0]
        j = stack[depth, 1]
        if i >= j or rows[i, j] == 0:
            continue
        if j - i - 1 >= min_loop and _PAIRS[codes[i], codes[j]] and \
                rows[i, j] == rows[i + 1, j - 1] + 1:
            pairs[count, 0] = i
            pairs[count, 1] = j
            count += 1
            stack[depth, 0] = i + 1
            stack[depth, 1] = j - 1
            depth += 1
            continue
        for k in range(i, j):
            if rows[i, k] + rows[k + 1, j] == rows[i, j]:
                stack[depth, 0] = k + 1
                stack[depth, 1] = j
                stack[depth + 1, 0] = i
                stack[depth + 1, 1] = k
                depth += 2
                break
    return count


def block_diagonal_updates(n: int, diagonal: int) -> int:
    """Split-point updates (``sum of j - i``) of the cells in block diagonal ``diagonal``."""
    i = np.arange(n, dtype=np.int64)
    j_low = np.maximum((i // BLOCK + diagonal) * BLOCK, i + 1)
    j_high = np.minimum((i // BLOCK + diagonal + 1) * BLOCK, n) - 1
    valid = j_high >= j_low
    high, low = (j_high - i)[valid], (j_low - i)[valid]
    return int((high * (high + 1) // 2 - (low - 1) * low // 2).sum())
