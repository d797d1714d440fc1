"""RNA secondary structure by base-pair maximisation (Nussinov), in Chang's simplified form.

``N(i, j)`` is the largest number of nested base pairs in ``s[i..j]`` (0-based, inclusive).
Allowed pairs: AU, GC and GU (either order); a pair ``(i, j)`` must enclose at least
``min_loop`` unpaired bases (``j - i - 1 >= min_loop``). docs/ALGORITHMS.md ("RNA
folding") gives the recurrence, the boundaries and the traceback's tie rule.

Evaluation order: the upper triangle is cut into square blocks; block ``(I, J)`` needs only
blocks to its left in its block row and below in its block column, so the blocks of one
block diagonal ``J - I`` run in parallel. The matrix is kept twice, as rows and as columns
(its transpose), so the max-plus inner loop reads both operands contiguously.

References
----------
Nussinov R., Jacobson A. B. (1980) Fast algorithm for predicting the secondary structure
of single-stranded RNA. PNAS 77:6309-6313.
Chang D.-J., Kimmer C., Ouyang M. (2010) Accelerating the Nussinov RNA folding algorithm
with CUDA/GPU. IEEE ISSPIT 2010, 120-125.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
from numba import njit, prange

from gpualign_plugin.errors import InputError

RNA_LETTERS = "ACGU"
"""RNA alphabet in code order; ``T`` reads as ``U``, either case."""

_TABLE = np.full(256, 255, dtype=np.uint8)
for _code, _letters in enumerate(("Aa", "Cc", "Gg", "UuTt")):
    for _letter in _letters:
        _TABLE[ord(_letter)] = _code

_PAIRS = np.zeros((4, 4), dtype=np.bool_)
for _x, _y in ("AU", "GC", "GU"):
    _PAIRS[RNA_LETTERS.index(_x), RNA_LETTERS.index(_y)] = True
    _PAIRS[RNA_LETTERS.index(_y), RNA_LETTERS.index(_x)] = True

BLOCK = 64
"""Side of the square blocks of the fill, in nucleotides."""


@dataclass(frozen=True)
class Fold:
    """A secondary structure with the most base pairs.

    Attributes
    ----------
    pairs : tuple of (int, int)
        Base pairs ``(i, j)``, 0-based with ``i < j``, ordered by ``i``.
    structure : str
        Dot-bracket notation: ``(`` and ``)`` for paired bases, ``.`` for unpaired ones.
    score : int
        Number of base pairs (the maximum).
    """

    pairs: tuple
    structure: str
    score: int


def encode_rna(text: str, path: str | None = None, record: str | None = None) -> np.ndarray:
    """Encode RNA text to ``uint8`` codes (A=0, C=1, G=2, U=3; ``T`` as ``U``; case ignored).

    Raises
    ------
    InputError
        At the first other character, naming ``path``, ``record`` and its 1-based position.
    """
    raw = np.frombuffer(text.encode("latin-1", errors="replace"), dtype=np.uint8)
    codes = _TABLE[raw]
    bad = np.flatnonzero(codes == 255)
    if bad.size:
        position = int(bad[0])
        raise InputError(f"character {text[position]!r} is not an RNA base (A, C, G, U or T)",
                         path=path, record=record, position=position + 1)
    if not codes.size:
        raise InputError("empty RNA sequence", path=path, record=record)
    return codes


def fold_cells(length: int) -> int:
    """Inner-loop updates of the fill for a sequence of ``length`` nucleotides.

    Each cell ``(i, j)`` with ``i < j`` tries ``j - i`` split points: in all
    ``(length - 1) length (length + 1) / 6`` updates (the unit of cells per second).
    """
    return (length - 1) * length * (length + 1) // 6


@njit(cache=True, parallel=True)
def _fill(codes, min_loop, rows, cols, diagonal):
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
def _traceback(codes, min_loop, rows, pairs):
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


def _block_diagonal_updates(n: int, diagonal: int) -> int:
    """Split-point updates (``sum of j - i``) of the cells in block diagonal ``diagonal``."""
    i = np.arange(n, dtype=np.int64)
    j_low = np.maximum((i // BLOCK + diagonal) * BLOCK, i + 1)
    j_high = np.minimum((i // BLOCK + diagonal + 1) * BLOCK, n) - 1
    valid = j_high >= j_low
    high, low = (j_high - i)[valid], (j_low - i)[valid]
    return int((high * (high + 1) // 2 - (low - 1) * low // 2).sum())


def fold(sequence, min_loop: int = 0, progress: Callable[[int], None] | None = None) -> Fold:
    """Fold an RNA sequence into a structure with the most nested base pairs.

    Parameters
    ----------
    sequence : str or numpy.ndarray
        RNA text (``ACGU``, ``T`` read as ``U``, either case) or codes from :func:`encode_rna`.
    min_loop : int
        Fewest unpaired bases a pair must enclose (a hairpin's loop length); 0, the
        default, allows adjacent bases to pair, as in the classic Nussinov formulation.
    progress : callable, optional
        Called after each block diagonal with the split-point updates it did (they add up
        to :func:`fold_cells` of the length).

    Returns
    -------
    Fold
        Pairs, dot-bracket structure and pair count. Among structures with equally many
        pairs, the one the written traceback rule picks (docs/ALGORITHMS.md).

    Examples
    --------
    >>> fold("GGGAAAUCC", min_loop=3).structure
    '(((...)))'
    """
    codes = encode_rna(sequence) if isinstance(sequence, str) else np.asarray(sequence, np.uint8)
    if int(min_loop) != min_loop or min_loop < 0:
        raise InputError(f"--min-loop must be an integer 0 or more, got {min_loop}")
    n = codes.size
    rows = np.zeros((n + 1, n + 1), dtype=np.int32)
    cols = np.zeros((n + 1, n + 1), dtype=np.int32)
    for diagonal in range((n + BLOCK - 1) // BLOCK):
        _fill(codes, int(min_loop), rows, cols, diagonal)
        if progress is not None:
            progress(_block_diagonal_updates(n, diagonal))
    pairs = np.empty((n // 2 + 1, 2), dtype=np.int64)
    count = _traceback(codes, int(min_loop), rows, pairs)
    pairs = pairs[:count]
    order = np.argsort(pairs[:, 0], kind="stable")
    pairs = pairs[order]
    structure = np.full(n, ord("."), dtype=np.uint8)
    structure[pairs[:, 0]] = ord("(")
    structure[pairs[:, 1]] = ord(")")
    return Fold(pairs=tuple((int(i), int(j)) for i, j in pairs),
                structure=structure.tobytes().decode("ascii"), score=int(rows[0, n - 1]))
