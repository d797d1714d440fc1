"""Numba kernels of the syntenic (generalized global) engine; see docs/ALGORITHMS.md, "Syntenic".

Orientation: ``a`` (the query) indexes the rows ``i``, ``b`` (the target) the
columns ``j``. A row state is three ``int32`` arrays ``S[j]``, ``I[j]`` (query
residue against a gap, vertical) and ``H[j]`` (difference block); ``D``
(target residue against a gap, horizontal) runs along the row and is not stored.

Direction byte of a cell (written when a flag array is given):

* bits 0-1: the S choice, 0 diagonal, 1 D, 2 I, 3 H;
* bit 2: D opens here (``D(i,j) == S(i,j-1) - o - e``);
* bit 3: I opens here (``I(i,j) == S(i-1,j) - o - e``);
* bits 4-5: the H choice, 0 open from above, 1 open from the left,
  2 extend from above, 3 extend from the left.

Path moves written by :func:`trace` (from the end of the path backwards) are the
``MOVE_*`` codes below.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from gpualign_plugin.scoring import NEG_INF

STATE_S, STATE_D, STATE_I, STATE_H = 0, 1, 2, 3
"""Traceback states."""

MOVE_DIAGONAL, MOVE_DELETION, MOVE_INSERTION = 0, 1, 2
"""Moves inside a matching region: a residue pair, a target residue against a gap, a query
residue against a gap."""

MOVE_BLOCK_UP, MOVE_BLOCK_LEFT, MOVE_BLOCK_OPEN_UP, MOVE_BLOCK_OPEN_LEFT = 3, 4, 5, 6
"""Moves inside a difference block (one query residue, or one target residue); the ``OPEN``
forms are the block's first move in sequence order."""


@njit(cache=True, nogil=True)
def fill_rows(a, b, matrix, gap_open, gap_extend, block_penalty, first, last, width,
              S, I, H, flags):
    """Advance the row state over rows ``first..last`` (inclusive), columns ``0..width-1``.

    Parameters
    ----------
    a, b : uint8 arrays
        Row (query) and column (target) codes; row ``i`` holds ``a[i-1]``.
    matrix : int32 array
        Substitution scores indexed by codes.
    gap_open, gap_extend, block_penalty : int
        Costs (positive numbers): a gap of ``k`` costs ``open + k*extend``, a block ``block_penalty``.
    first, last : int
        Rows to compute. When ``first == 0`` row 0 is built from the boundary
        conditions; otherwise ``S, I, H`` must hold row ``first - 1``.
    width : int
        Number of columns computed (``<= len(b) + 1``).
    S, I, H : int32 arrays
        Row state, replaced by the state of row ``last``.
    flags : uint8 2-D array
        Direction bytes of rows ``first..last`` (row ``i`` at index ``i - first``),
        or an array with zero rows to record nothing.
    """
    record = flags.shape[0] > 0
    gap_first = gap_open + gap_extend
    for i in range(first, last + 1):
        if i == 0:
            # Row "-1" does not exist: every move from above is impossible.
            S[:width] = NEG_INF
            I[:width] = NEG_INF
            H[:width] = NEG_INF
        scores = matrix[a[i - 1] if i > 0 else 0]
        # Column 0: no diagonal, no move from the left.
        up_s = S[0]
        value_s, value_d, value_i, value_h, bits = _cell(
            up_s, I[0], H[0], NEG_INF, NEG_INF, NEG_INF, NEG_INF, gap_first, gap_extend,
            block_penalty)
        if i == 0:
            value_s = 0
            bits = 0
        if record:
            flags[i - first, 0] = bits
        diag = up_s
        S[0] = value_s
        I[0] = value_i
        H[0] = value_h
        left_s = value_s
        left_d = value_d
        left_h = value_h
        for j in range(1, width):
            up_s = S[j]
            value_s, value_d, value_i, value_h, bits = _cell(
                up_s, I[j], H[j], left_s, left_d, left_h, diag + scores[b[j - 1]],
                gap_first, gap_extend, block_penalty)
            if record:
                flags[i - first, j] = bits
            diag = up_s
            S[j] = value_s
            I[j] = value_i
            H[j] = value_h
            left_s = value_s
            left_d = value_d
            left_h = value_h


@njit(cache=True, nogil=True, inline="always")
def _cell(up_s, up_i, up_h, left_s, left_d, left_h, diagonal, gap_first, gap_extend,
          block_penalty):
    """One cell: ``(S, D, I, H, direction byte)`` from its neighbours (layout in the module docstring).

    ``diagonal`` is ``S(i-1, j-1) + s(a_i, b_j)``. Values below ``NEG_INF`` are
    raised to it, so impossible states stay far from int32 overflow.
    """
    bits = 0
    # I: query residue a_i against a gap (vertical); opens on ties.
    value_i = up_s - gap_first
    extend = up_i - gap_extend
    if value_i >= extend:
        bits |= 8
    else:
        value_i = extend
    # D: target residue b_j against a gap (horizontal); opens on ties.
    value_d = left_s - gap_first
    extend = left_d - gap_extend
    if value_d >= extend:
        bits |= 4
    else:
        value_d = extend
    # H: priority open from above, open from the left, extend from above, extend from the left.
    value_h = up_s - block_penalty
    h_choice = 0
    candidate = left_s - block_penalty
    if candidate > value_h:
        value_h = candidate
        h_choice = 1
    if up_h > value_h:
        value_h = up_h
        h_choice = 2
    if left_h > value_h:
        value_h = left_h
        h_choice = 3
    value_i = max(value_i, NEG_INF)
    value_d = max(value_d, NEG_INF)
    value_h = max(value_h, NEG_INF)
    # S: priority diagonal, D, I, H.
    value_s = diagonal
    s_choice = 0
    if value_d > value_s:
        value_s = value_d
        s_choice = 1
    if value_i > value_s:
        value_s = value_i
        s_choice = 2
    if value_h > value_s:
        value_s = value_h
        s_choice = 3
    return value_s, value_d, value_i, value_h, bits | s_choice | (h_choice << 4)


@njit(cache=True, nogil=True)
def trace(flags, first, i, j, state, moves, count):
    """Follow the direction bytes from cell ``(i, j)`` in ``state`` while the path stays in rows ``>= first``.

    Parameters
    ----------
    flags : uint8 2-D array
        Direction bytes of rows ``first..`` (row ``i`` at index ``i - first``), at least ``j + 1`` columns.
    first : int
        First row held in ``flags``.
    i, j, state : int
        Where the traceback stands.
    moves : uint8 array
        Output buffer; moves are appended from index ``count`` on, last move of the path first.
    count : int
        Moves already written.

    Returns
    -------
    (int, int, int, int)
        ``(i, j, state, count)`` after the last move: the path has reached ``(0, 0)``
        in state S, or row ``first - 1`` (the caller continues with the band above).
    """
    while i >= first:
        if state == STATE_S and i == 0 and j == 0:
            break
        f = flags[i - first, j]
        if state == STATE_S:
            choice = f & 3
            if choice == 0:
                moves[count] = MOVE_DIAGONAL
                count += 1
                i -= 1
                j -= 1
            elif choice == 1:
                state = STATE_D
            elif choice == 2:
                state = STATE_I
            else:
                state = STATE_H
        elif state == STATE_D:
            moves[count] = MOVE_DELETION
            count += 1
            if f & 4:
                state = STATE_S
            j -= 1
        elif state == STATE_I:
            moves[count] = MOVE_INSERTION
            count += 1
            if f & 8:
                state = STATE_S
            i -= 1
        else:
            choice = (f >> 4) & 3
            if choice == 0:
                moves[count] = MOVE_BLOCK_OPEN_UP
                state = STATE_S
                i -= 1
            elif choice == 1:
                moves[count] = MOVE_BLOCK_OPEN_LEFT
                state = STATE_S
                j -= 1
            elif choice == 2:
                moves[count] = MOVE_BLOCK_UP
                i -= 1
            else:
                moves[count] = MOVE_BLOCK_LEFT
                j -= 1
            count += 1
    return i, j, state, count


def new_row(width: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Three ``int32`` arrays ``(S, I, H)`` of ``width`` columns for :func:`fill_rows`."""
    return (np.empty(width, dtype=np.int32), np.empty(width, dtype=np.int32),
            np.empty(width, dtype=np.int32))


NO_FLAGS = np.zeros((0, 0), dtype=np.uint8)
"""Pass as ``flags`` to :func:`fill_rows` to record nothing."""
