"""Numba kernels of three-sequence alignment on the CPU: the tiled plane sweep and the slab walk.

See :mod:`gpualign_plugin.align3.api` for the recurrence and the checkpointing that
drives these kernels; :mod:`gpualign_plugin.align3.gpu` writes the same direction
bytes on a GPU, and :func:`trace_slab` walks either.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from gpualign_plugin.scoring import NEG_INF

_ORIGIN = 7
"""Direction byte of the cell (0, 0, 0), where the traceback stops."""

TILE = 32
"""Rows ``(i, j)`` per side of a tile of the wavefront (each row holds ``n + 1`` cells)."""


@njit(cache=True)
def _row(row, left, upleft, save, scratch, i, j, a, b, c, profile, matrix, gap2, dirs, slot):
    """Compute row ``(i, j, 0..n)`` in place.

    On entry ``row`` holds row ``(i - 1, j)``; on exit row ``(i, j)``, and ``save`` holds the
    old contents. ``left`` is row ``(i, j - 1)``, ``upleft`` row ``(i - 1, j - 1)``;
    ``profile[x, k] = matrix[x, c[k - 1]]``; ``scratch`` is a work row. With ``slot >= 0``
    each cell's move goes to ``dirs[slot, j, k]``.
    """
    n = c.size
    if i > 0 and j > 0:
        pa = profile[a[i - 1]]
        pb = profile[b[j - 1]]
        sab = matrix[a[i - 1], b[j - 1]]
        # Pass 1 (vectorisable): the best of the six moves that do not come from (i, j, k - 1),
        # taking the first maximum in the written order; cell 0 has only moves 1, 4, 5.
        save[0] = row[0]
        best = upleft[0] + sab - gap2
        move = 1
        v = row[0] - gap2
        if v > best:
            best = v
            move = 4
        v = left[0] - gap2
        if v > best:
            best = v
            move = 5
        scratch[0] = best
        if slot >= 0:
            dirs[slot, j, 0] = move
        if slot < 0:
            for k in range(1, n + 1):
                save[k] = row[k]
                scratch[k] = max(upleft[k - 1] + sab + pa[k] + pb[k],
                                 max(max(upleft[k] + sab, row[k - 1] + pa[k]),
                                     max(left[k - 1] + pb[k], max(row[k], left[k]))) - gap2)
        else:
            moves = dirs[slot, j]
            for k in range(1, n + 1):
                save[k] = row[k]
                best = upleft[k - 1] + sab + pa[k] + pb[k]
                move = 0
                v = upleft[k] + sab - gap2
                move = 1 if v > best else move
                best = max(best, v)
                v = row[k - 1] + pa[k] - gap2
                move = 2 if v > best else move
                best = max(best, v)
                v = left[k - 1] + pb[k] - gap2
                move = 3 if v > best else move
                best = max(best, v)
                v = row[k] - gap2
                move = 4 if v > best else move
                best = max(best, v)
                v = left[k] - gap2
                move = 5 if v > best else move
                best = max(best, v)
                scratch[k] = best
                moves[k] = move
        # Pass 2 (a scan): move 6, from (i, j, k - 1), is last in the order, so it wins
        # only when strictly better.
        best = scratch[0]
        row[0] = best
        if slot < 0:
            for k in range(1, n + 1):
                best = max(scratch[k], best - gap2)
                row[k] = best
        else:
            moves = dirs[slot, j]
            for k in range(1, n + 1):
                v = best - gap2
                if v > scratch[k]:
                    best = v
                    moves[k] = 6
                else:
                    best = scratch[k]
                row[k] = best
        return
    # A face of the cube (i == 0 or j == 0): at most three moves are possible.
    up_before = 0
    for k in range(n + 1):
        up = row[k]
        save[k] = up
        best = NEG_INF
        move = _ORIGIN
        if i > 0 and k > 0:
            v = up_before + matrix[a[i - 1], c[k - 1]] - gap2
            if v > best:
                best = v
                move = 2
        if j > 0 and k > 0:
            v = left[k - 1] + matrix[b[j - 1], c[k - 1]] - gap2
            if v > best:
                best = v
                move = 3
        if i > 0:
            v = up - gap2
            if v > best:
                best = v
                move = 4
        if j > 0:
            v = left[k] - gap2
            if v > best:
                best = v
                move = 5
        if k > 0:
            v = row[k - 1] - gap2
            if v > best:
                best = v
                move = 6
        row[k] = 0 if move == _ORIGIN else best
        if slot >= 0:
            dirs[slot, j, k] = move
        up_before = up


@njit(cache=True, parallel=True)
def _sweep_band(plane, first, last, a, b, c, profile, matrix, gap2, dirs, keep_dirs):
    """Compute planes ``first..last`` (of ``i``); ``plane`` goes from plane ``first - 1`` to ``last``.

    ``plane[j]`` is row ``(i, j)``; on entry it must hold plane ``first - 1`` (ignored when
    ``first == 0``). The ``(i, j)`` rows are swept in tiles of ``TILE x TILE`` along
    anti-diagonals of tiles; the tiles of one anti-diagonal run in parallel. With
    ``keep_dirs`` the move of cell ``(i, j, k)`` goes to ``dirs[i - first, j, k]``.
    """
    m, n = b.size, c.size
    tile_rows = (last - first) // TILE + 1
    tile_cols = m // TILE + 1
    # right[i - first]: row (i, j1) handed to the tile on the right; corner[r]: row
    # (i0 - 1, j1) of tile row r, the up-left corner of the next tile on the right.
    right = np.empty((last - first + 1, n + 1), dtype=np.int32)
    corner = np.empty((tile_rows, n + 1), dtype=np.int32)
    work = np.empty((tile_rows, 5, n + 1), dtype=np.int32)
    for wave in range(tile_rows + tile_cols - 1):
        for r in prange(max(0, wave - tile_cols + 1), min(tile_rows, wave + 1)):
            tc = wave - r
            i0 = first + r * TILE
            i1 = min(last, i0 + TILE - 1)
            j0 = tc * TILE
            j1 = min(m, j0 + TILE - 1)
            upleft_first = work[r, 0]
            fresh = work[r, 1]
            other = work[r, 2]
            discard = work[r, 3]
            scratch = work[r, 4]
            if j0 > 0:
                upleft_first[:] = corner[r]
            for i in range(i0, i1 + 1):
                slot = i - first if keep_dirs else -1
                upleft = upleft_first
                for j in range(j0, j1 + 1):
                    # The old row (i - 1, j) is the up-left row of (i, j + 1); the last
                    # column's is the next tile's corner (first row only).
                    if j == j1:
                        target = corner[r] if i == i0 else discard
                    else:
                        target = fresh
                    if j > j0:
                        left = plane[j - 1]
                    elif j0 > 0:
                        left = right[i - first]
                    else:
                        left = discard
                    _row(plane[j], left, upleft, target, scratch, i, j, a, b, c, profile, matrix,
                         gap2, dirs, slot)
                    upleft = fresh
                    fresh, other = other, fresh
                if j0 > 0:
                    upleft_first[:] = right[i - first]
                right[i - first, :] = plane[j1]


@njit(cache=True)
def trace_slab(dirs, first, i, j, k, moves, count):
    """Follow direction bytes from ``(i, j, k)`` while ``i >= first`` (the slab's first plane).

    Appends move codes to ``moves`` from index ``count``; returns the new count and position.
    """
    while i >= first:
        move = dirs[i - first, j, k]
        if move == _ORIGIN:
            break
        moves[count] = move
        count += 1
        if move == 0 or move == 1 or move == 2 or move == 4:
            i -= 1
        if move == 0 or move == 1 or move == 3 or move == 5:
            j -= 1
        if move == 0 or move == 2 or move == 3 or move == 6:
            k -= 1
    return count, i, j, k


BAND = 4 * TILE
"""Planes per call of the kernel: enough tile rows to keep a few cores busy on each wave."""


def sweep(plane, codes, scheme, gap, first, last, dirs=None, progress=None):
    """Advance ``plane`` from plane ``first - 1`` to plane ``last``.

    With ``dirs``, the moves of plane ``i`` go to ``dirs[i - first]``.
    """
    a, b, c = codes
    gap2 = np.int32(2 * gap)
    profile = np.zeros((scheme.matrix.shape[0], c.size + 1), dtype=np.int32)
    profile[:, 1:] = scheme.matrix[:, c]
    keep = dirs is not None
    if not keep:
        dirs = np.zeros((1, 1, 1), dtype=np.uint8)
    for band in range(first, last + 1, BAND):
        band_last = min(last, band + BAND - 1)
        _sweep_band(plane, band, band_last, a, b, c, profile, scheme.matrix, gap2,
                    dirs[band - first:] if keep else dirs, keep)
        if progress is not None:
            progress((band_last - band + 1) * plane.size)
