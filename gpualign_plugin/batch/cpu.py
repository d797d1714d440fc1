"""Numba kernels of batch alignment on the CPU: one pair per thread, pairs in parallel (``prange``).

Every pair is scored or aligned with the row kernels of :mod:`gpualign_plugin.gotoh`,
so a batch gives what the pairwise engine gives pair by pair.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from gpualign_plugin.gotoh import (GLOBAL, LOCAL, STATE_H, fill_row, fill_two_rows, final_end,
                                   initial_row, score_kernel, trace_band)
from gpualign_plugin.scoring import NEG_INF


@njit(cache=True, nogil=True)
def _align_one(a, b, matrix, gap_open, gap_extend, mode, ops):
    """Full-matrix alignment of one pair; returns ``(score, qs, qe, ts, te, n_ops)``."""
    # One pass fills the whole direction matrix and finds the end cell on the way.
    m = a.shape[0]
    width = b.shape[0] + 1
    H = np.empty(width, np.int32)
    F = np.empty(width, np.int32)
    initial_row(width, gap_open, gap_extend, mode == GLOBAL, H, F)
    dirs = np.empty((m, width), np.uint8)
    floor = 0 if mode == LOCAL else NEG_INF
    best = 0
    qe = 0
    te = 0
    i = 1
    while i <= m:
        if i < m:
            row_best, row_j, _, next_best, next_j = fill_two_rows(
                a[i - 1], a[i], i, b, width, matrix, gap_open, gap_extend, floor, mode != LOCAL,
                H, F, dirs[i - 1], dirs[i])
        else:
            row_best, row_j = fill_row(a[i - 1], i, b, width, matrix, gap_open, gap_extend, floor,
                                       mode != LOCAL, H, F, dirs[i - 1])
            next_best = NEG_INF
            next_j = 0
        if mode == LOCAL and row_best > best:
            best = row_best
            qe = i
            te = row_j
        if mode == LOCAL and next_best > best:
            best = next_best
            qe = i + 1
            te = next_j
        i += 2
    score, qe, te = final_end(mode, False, H, width, m, best, qe, te)
    if mode == LOCAL and score <= 0:
        return 0, 0, 0, 0, 0, 0
    i, j, state, pos, done = trace_band(dirs, 0, a, b, mode, qe, te, STATE_H, ops, 0)
    return score, i, qe, j, te, pos


@njit(cache=True, parallel=True)
def score_batch_kernel(seqs_a, offsets_a, seqs_b, offsets_b, matrix, gap_open, gap_extend, mode,
                       out):
    """Score every pair ``k`` (``seqs_a[offsets_a[k]:offsets_a[k+1]]`` vs the same slice of ``b``).

    ``out[k]`` receives ``(score, query_end, target_end)``; pairs run in parallel.
    """
    for k in prange(offsets_a.shape[0] - 1):
        a = seqs_a[offsets_a[k]:offsets_a[k + 1]]
        b = seqs_b[offsets_b[k]:offsets_b[k + 1]]
        if b.shape[0] < a.shape[0]:
            s, qe, te = score_kernel(b, a, matrix, gap_open, gap_extend, mode, True)
        else:
            s, qe, te = score_kernel(a, b, matrix, gap_open, gap_extend, mode, False)
        out[k, 0] = s
        out[k, 1] = qe
        out[k, 2] = te


@njit(cache=True, parallel=True)
def align_batch_kernel(seqs_a, offsets_a, seqs_b, offsets_b, matrix, gap_open, gap_extend, mode,
                       out, ops, ops_offsets):
    """Align every pair with a full direction matrix each; pairs run in parallel.

    ``out[k]`` receives ``(score, qs, qe, ts, te, n_ops)``; the pair's operations
    (end to start) go to ``ops[ops_offsets[k]:]``.
    """
    for k in prange(offsets_a.shape[0] - 1):
        a = seqs_a[offsets_a[k]:offsets_a[k + 1]]
        b = seqs_b[offsets_b[k]:offsets_b[k + 1]]
        score, qs, qe, ts, te, n_ops = _align_one(a, b, matrix, gap_open, gap_extend, mode,
                                                  ops[ops_offsets[k]:ops_offsets[k + 1]])
        out[k, 0] = score
        out[k, 1] = qs
        out[k, 2] = qe
        out[k, 3] = ts
        out[k, 4] = te
        out[k, 5] = n_ops


@njit(cache=True, parallel=True)
def runs_from_ops(ops, ops_offsets, n_ops):
    """CIGAR runs (``length << 2 | op``, forward order) of every pair from its path operations.

    Pair ``k``'s ``n_ops[k]`` operations are ``ops[ops_offsets[k]:]``, end to start (as
    :func:`align_batch_kernel` writes them). Returns ``(runs, run_offsets)`` in the layout
    of :class:`gpualign_plugin.model.AlignmentColumns`.
    """
    count = n_ops.shape[0]
    counts = np.zeros(count, np.int64)
    for k in prange(count):
        first = ops_offsets[k]
        c = 0
        for x in range(n_ops[k]):
            if x == 0 or ops[first + x] != ops[first + x - 1]:
                c += 1
        counts[k] = c
    run_offsets = np.zeros(count + 1, np.int64)
    run_offsets[1:] = np.cumsum(counts)
    runs = np.empty(run_offsets[count], np.uint32)
    for k in prange(count):
        first = ops_offsets[k]
        slot = run_offsets[k + 1]
        x = 0
        while x < n_ops[k]:
            op = ops[first + x]
            y = x + 1
            while y < n_ops[k] and ops[first + y] == op:
                y += 1
            slot -= 1
            runs[slot] = np.uint32(((y - x) << 2) | op)
            x = y
    return runs, run_offsets
