"""The host walk of the GPU long-pair traceback: the path through a re-solved chunk's directions.

Numba-compiled, and kept apart from :mod:`gpualign_plugin.pairwise.gpu` so that a GPU
alignment reaches the device without importing Numba (about 0.4 s on the GPU machines, SciPy's
BLAS check behind it): :func:`gpualign_plugin.pairwise.gpu.warm_walk` imports this module and
loads the walk on a background thread while the score pass runs.
"""

from __future__ import annotations

from numba import njit

from gpualign_plugin.gotoh import STATE_H, boundary_step, direction_step


@njit(cache=True)
def trace_chunk(dirs, strip, rows, steps, r0, c0, a, b, mode, i, j, state, ops, pos):
    """Follow the traceback rule inside the chunk of rows ``r0+1..``, columns ``c0+1..``.

    ``dirs`` is the chunk's directions in the sweep's layout, four bits a cell
    ``[strip][step][lane][rows / 2 bytes]`` (cell ``(i, j)``: row ``i - r0 - 1`` of the chunk is
    strip ``k``, lane ``t``, slot ``r``; its step is ``j - c0 - 1 + t``; slot ``r`` is the
    low half of byte ``r // 2`` when ``r`` is even, the high half when odd). The bits are
    those of a CPU direction byte. Walks until
    the path stops (returns ``done``) or leaves the chunk through its top or left
    edge. Row 0 and column 0 follow the boundary rules of ``mode`` (as the CPU
    engine's ``trace_band``).

    Returns
    -------
    (int, int, int, int, bool)
        ``(i, j, state, pos, done)``.
    """
    while True:
        if state == STATE_H and (i == 0 or j == 0):
            i, j, pos, done = boundary_step(mode, i, j, ops, pos)
            if done:
                return i, j, state, pos, True
            continue
        if i <= r0 or j <= c0:
            return i, j, state, pos, False
        li = i - r0 - 1
        k = li // strip
        t = (li - k * strip) // rows
        r = li - k * strip - t * rows
        cell = ((k * steps + (j - c0 - 1 + t)) * 32 + t) * rows + r
        d = (dirs[cell >> 1] >> (4 * (cell & 1))) & 15
        i, j, state, pos, done = direction_step(d, a, b, i, j, state, ops, pos)
        if done:
            return i, j, state, pos, True
