"""Numba kernels of batch alignment on the CPU: many pairs in parallel.

Every pair follows the recurrence, direction bytes and end-cell rule of
:mod:`gpualign_plugin.gotoh`, so a batch gives what the pairwise engine gives pair by pair.
Two kernels align pairs, on every thread (``prange``) at once:

- the **lane kernel** (:func:`align_pairs_kernel`'s groups) aligns :data:`LANES` pairs of
  similar size together, one pair per vector lane (inter-sequence SIMD, as the database
  search scores its targets): the pairs' residues are interleaved, row ``i`` of every pair
  is computed in one sweep over the columns with the lane loop innermost and every value
  kept in the lanes' width (:func:`~gpualign_plugin.gotoh.lane_cell`: 16 bits where
  :func:`_fits_int16` proves it exact, else 32), which LLVM turns into vector instructions. Each cell's direction byte is stored (``LANES`` bytes per cell of the
  group's largest rows x columns), then each pair's path is walked with
  :func:`~gpualign_plugin.gotoh.trace_band`. Cells beyond a pair's own length are computed
  but never read: a cell depends only on cells above and to its left, and the end cell is
  looked for inside the pair's own rows and columns;
- the **one-pair kernel** (:func:`_align_one`) fills one pair's direction matrix with the
  row kernels of :mod:`gpualign_plugin.gotoh`: pairs too large for a group, pairs with an
  empty sequence, and groups that padding would leave more than half empty.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from gpualign_plugin.gotoh import (GLOBAL, LOCAL, SEMIGLOBAL, STATE_H, direction_byte, fill_row,
                                   fill_two_rows, final_end, initial_row, lane_cell, score_kernel,
                                   trace_band)
from gpualign_plugin.runtime.lanes import add, maximum
from gpualign_plugin.scoring import NEG_INF

LANES = 64
"""Pairs the lane kernel aligns at once: four AVX2 vectors per column step with 16-bit
values, eight with 32-bit ones; independent work enough to hide the instruction latencies,
and a lane loop long enough that LLVM keeps it a loop and vectorises it (it unrolls a 16- or
32-lane loop completely, and then does not vectorise it)."""

LANE_PAIR_CELLS = 1 << 20
"""The largest pair (``m * n`` cells, 1024 x 1024) the lane kernel takes, and the largest
``rows * columns`` of a group (its longest query by its longest target): a group holds
``LANES * rows * (columns + 1)`` direction bytes, at most 64 MiB and 64 bytes a row."""

LOW16 = -32768
"""Minus infinity of the 16-bit lanes: saturating additions keep it there."""

SORT_BIN = 8
"""Groups per bin of pairs of similar query length, inside which :func:`lane_groups` sorts
the pairs by target length."""


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


@njit(cache=True, nogil=True)
def _row_scores(matrix_flat, row_offsets, targets, columns, scores):
    """The substitution score of every cell of one row of a group: ``scores[j * LANES + l]`` is
    ``matrix_flat[row_offsets[l] + targets[j * LANES + l]]`` (``row_offsets[l]`` is lane ``l``'s
    query residue times the alphabet size).

    A gather, so a loop of its own: in the sweep it would stop LLVM from vectorising the
    lane loop (the table could alias the stores). Unsigned indices spare Numba's check for
    negative ones."""
    for j in range(columns):
        for lane in range(LANES):
            scores[j * LANES + lane] = matrix_flat[row_offsets[lane] + np.uint64(targets[j * LANES + lane])]


@njit(cache=True, nogil=True)
def _row_scores_by_identity(query_row, targets, columns, scores, match, mismatch, ambiguity):
    """:func:`_row_scores` for a matrix of :meth:`~gpualign_plugin.scoring.ScoringScheme.
    match_mismatch`'s form, from the codes alone (``query_row``: the row's ``LANES`` query
    codes; codes 0-3 are A, C, G, T, the others ambiguous): no lookup, so LLVM vectorises it
    (about 3x the gather's rate)."""
    for j in range(columns):
        for lane in range(LANES):
            query = query_row[lane]
            target = targets[j * LANES + lane]
            base_score = match if query == target else mismatch
            scores[j * LANES + lane] = ambiguity if max(query, target) >= 4 else base_score


@njit(cache=True, nogil=True)
def _sweep_row(columns, scores, state, carry, dirs, neg_oe, neg_ext, floor):
    """Advance every lane of a group from row ``i-1`` to row ``i`` and store the row's direction bytes.

    ``state`` holds ``H`` then ``F`` of each column ``0..columns`` (``2 * LANES`` values a
    column, column 0 already set to row ``i``'s boundary); ``carry`` the running ``E``, the
    diagonal ``H`` and the left ``H`` of each lane (rows 0, 1 and 2 of ``LANES``). The byte
    of column ``j + 1`` goes to ``dirs[j * LANES + lane]`` (``dirs`` is the row's slice: an
    offset added to the index would make it a scatter, as Numba allows negative indices).
    """
    for j in range(columns):
        at = 2 * LANES + j * 2 * LANES
        for lane in range(LANES):
            h_up = state[at + lane]
            h_left = carry[2 * LANES + lane]
            diag = add(carry[LANES + lane], scores[j * LANES + lane])
            h, e, f = lane_cell(carry[LANES + lane], h_left, carry[lane], h_up, state[at + LANES + lane],
                                scores[j * LANES + lane], neg_oe, neg_ext, floor)
            dirs[j * LANES + lane] = direction_byte(h, e, f, diag, add(h_left, neg_oe), add(h_up, neg_oe),
                                                    floor)
            carry[lane] = e
            carry[LANES + lane] = h_up
            carry[2 * LANES + lane] = h
            state[at + lane] = h
            state[at + LANES + lane] = f


@njit(cache=True, nogil=True)
def _row_best(columns, state, target_lengths, best, best_column, low, zero, one):
    """Each lane's largest ``H`` of the row in ``state`` over its own columns ``1..n``
    (``target_lengths``) at its smallest column: ``best`` and ``best_column``, all in the lane
    type (``low``, ``zero`` and ``one`` of that type): local mode's end-cell rule."""
    for lane in range(LANES):
        best[lane] = low
        best_column[lane] = zero
    column = zero
    for j in range(columns):
        at = 2 * LANES + j * 2 * LANES
        column = add(column, one)
        for lane in range(LANES):
            h = state[at + lane] if column <= target_lengths[lane] else low
            best_column[lane] = column if h > best[lane] else best_column[lane]
            best[lane] = maximum(best[lane], h)


@njit(cache=True, nogil=True)
def _fits_int16(matrix, gap_open, gap_extend, rows, columns):
    """Whether a group of ``rows`` x ``columns`` is exact in saturating 16-bit lanes.

    Every value the recurrence derives from real cells lies within ``[-bottom, top]``:
    ``H <= max(s, 0) * min(rows, columns)``; global and semiglobal ``H(i, j) >= H(i, 0) -
    (o + e j) >= -(2 o + e (rows + columns))``, and ``E``, ``F``, the diagonal and the gap-open
    candidates are at most ``o + e`` or ``|min s|`` below an ``H``. With ``step`` more for
    one addition, nothing real reaches -32768 or 32767, so no addition saturates but those of
    minus infinity (-32768), which stays minus infinity and loses every maximum as the 32-bit
    lanes' ``-2^30`` does: the values, hence the direction bytes, are the 32-bit ones.
    Column numbers are kept in the lane type too: with ``extend >= 1``, ``bottom`` exceeds
    ``columns``, so they fit.
    """
    top = max(matrix.max(), 0) * min(rows, columns)
    bottom = 3 * gap_open + gap_extend * (rows + columns + 1) - min(matrix.min(), 0)
    step = 2 * (gap_open + gap_extend) + max(matrix.max(), -matrix.min())
    return max(top, bottom) + step < 32767


@njit(cache=True, nogil=True)
def _fill_lanes(queries, targets, m, n, matrix, identity, rows, columns, gap_open, gap_extend, mode,
                dirs, ends, constants):
    """Fill the direction bytes of a group of :data:`LANES` pairs and find each pair's end cell.

    ``queries`` (``rows * LANES``) and ``targets`` (``columns * LANES``) hold the pairs'
    residues interleaved (residue ``x`` of lane ``l`` at ``x * LANES + l``; lanes past a
    pair's length hold any code); ``m``/``n`` (``int32``) are the pairs' own lengths. Cell
    ``(i, j)``'s byte of lane ``l`` goes to ``dirs[((i - 1) * (columns + 1) + j) * LANES + l]``.
    ``identity`` is ``(match, mismatch, ambiguity)`` of a matrix of that form (``int32``, see
    :func:`_row_scores_by_identity`), or empty: look every score up in ``matrix``.
    ``ends[l]`` receives ``(score, query_end, target_end)`` by :func:`~gpualign_plugin.gotoh.
    final_end`'s rule (local without a positive cell: ``(0, 0, 0)``).

    The lanes compute in the type of ``constants``, ``(-(open + extend), -extend, minus
    infinity, 0, 1)``: ``int16`` (saturating; only where :func:`_fits_int16`) or ``int32``.
    """
    neg_oe, neg_ext, low, zero, one = constants[0], constants[1], constants[2], constants[3], constants[4]
    alphabet = matrix.shape[1]
    matrix_flat = matrix.ravel()
    local = mode == LOCAL
    floor = zero if local else low
    state = np.full(2 * (columns + 1) * LANES, low)
    carry = np.full(3 * LANES, low)
    row_best = np.full(LANES, low)
    row_best_column = np.full(LANES, zero)
    target_lengths = np.full(LANES, zero)
    target_lengths[:] = n
    scores = np.full(columns * LANES, zero)
    identity_scores = np.full(identity.shape[0], zero)
    identity_scores[:] = identity
    row_offsets = np.empty(LANES, np.uint64)
    for lane in range(LANES):
        state[lane] = 0
        ends[lane, 0] = 0
        ends[lane, 1] = 0
        ends[lane, 2] = 0
    for j in range(1, columns + 1):
        for lane in range(LANES):
            state[2 * j * LANES + lane] = -(gap_open + j * gap_extend) if mode == GLOBAL else 0
    for i in range(1, rows + 1):
        if identity.shape[0]:
            _row_scores_by_identity(queries[(i - 1) * LANES:i * LANES], targets, columns, scores,
                                    identity_scores[0], identity_scores[1], identity_scores[2])
        else:
            for lane in range(LANES):
                row_offsets[lane] = np.uint64(queries[(i - 1) * LANES + lane]) * np.uint64(alphabet)
            _row_scores(matrix_flat, row_offsets, targets, columns, scores)
        boundary = 0 if local else -(gap_open + i * gap_extend)
        for lane in range(LANES):
            carry[lane] = low
            carry[LANES + lane] = state[lane]
            carry[2 * LANES + lane] = boundary
            state[lane] = boundary
            state[LANES + lane] = boundary
        row_at = ((i - 1) * (columns + 1) + 1) * LANES
        _sweep_row(columns, scores, state, carry, dirs[row_at:row_at + columns * LANES], neg_oe,
                   neg_ext, floor)
        if local:
            _row_best(columns, state, target_lengths, row_best, row_best_column, low, zero, one)
        for lane in range(LANES):
            if i > m[lane]:
                continue
            if local and row_best[lane] > ends[lane, 0]:
                ends[lane, 0] = row_best[lane]
                ends[lane, 1] = i
                ends[lane, 2] = row_best_column[lane]
            elif i == m[lane] and mode == GLOBAL:
                ends[lane, 0] = state[2 * n[lane] * LANES + lane]
                ends[lane, 1] = i
                ends[lane, 2] = n[lane]
            elif i == m[lane] and mode == SEMIGLOBAL:
                ends[lane, 0] = state[lane]
                ends[lane, 1] = i
                for j in range(1, n[lane] + 1):
                    if state[2 * j * LANES + lane] > ends[lane, 0]:
                        ends[lane, 0] = state[2 * j * LANES + lane]
                        ends[lane, 2] = j


@njit(cache=True, nogil=True)
def _align_group(seqs_a, offsets_a, seqs_b, offsets_b, pairs, matrix, identity, gap_open,
                 gap_extend, mode, out, ops, ops_offsets):
    """Align the pairs ``pairs`` (at most :data:`LANES` indices) together with the lane kernel;
    results as :func:`align_pairs_kernel` writes them."""
    count = pairs.shape[0]
    m = np.zeros(LANES, np.int32)
    n = np.zeros(LANES, np.int32)
    for lane in range(count):
        k = pairs[lane]
        m[lane] = offsets_a[k + 1] - offsets_a[k]
        n[lane] = offsets_b[k + 1] - offsets_b[k]
    rows = np.int64(m.max())
    columns = np.int64(n.max())
    queries = np.zeros(rows * LANES, np.uint8)
    targets = np.zeros(columns * LANES, np.uint8)
    for lane in range(count):
        k = pairs[lane]
        for x in range(m[lane]):
            queries[x * LANES + lane] = seqs_a[offsets_a[k] + x]
        for x in range(n[lane]):
            targets[x * LANES + lane] = seqs_b[offsets_b[k] + x]
    dirs = np.empty(rows * (columns + 1) * LANES, np.uint8)
    ends = np.empty((LANES, 3), np.int64)
    constants = (-(gap_open + gap_extend), -gap_extend, LOW16, 0, 1)
    if _fits_int16(matrix, gap_open, gap_extend, rows, columns):
        _fill_lanes(queries, targets, m, n, matrix, identity, rows, columns, gap_open, gap_extend,
                    mode, dirs, ends, np.array(constants, np.int16))
    else:
        _fill_lanes(queries, targets, m, n, matrix, identity, rows, columns, gap_open, gap_extend,
                    mode, dirs, ends, np.array((constants[0], constants[1], NEG_INF, 0, 1), np.int32))
    by_cell = dirs.reshape((rows, columns + 1, LANES))
    for lane in range(count):
        k = pairs[lane]
        score, qe, te = ends[lane, 0], ends[lane, 1], ends[lane, 2]
        qs = ts = n_ops = 0
        if mode != LOCAL or score > 0:
            qs, ts, _, n_ops, _ = trace_band(by_cell[:, :, lane], 0, seqs_a[offsets_a[k]:offsets_a[k + 1]],
                                             seqs_b[offsets_b[k]:offsets_b[k + 1]], mode, qe, te, STATE_H,
                                             ops[ops_offsets[k]:ops_offsets[k + 1]], 0)
        _put(out, k, score, qs, qe, ts, te, n_ops)


@njit(cache=True, nogil=True, inline="always")
def _put(out, k, score, qs, qe, ts, te, n_ops):
    """Write pair ``k``'s ``(score, qs, qe, ts, te, n_ops)`` to ``out[k]``."""
    out[k, 0] = score
    out[k, 1] = qs
    out[k, 2] = qe
    out[k, 3] = ts
    out[k, 4] = te
    out[k, 5] = n_ops


@njit(cache=True, parallel=True)
def align_pairs_kernel(seqs_a, offsets_a, seqs_b, offsets_b, groups, group_offsets, singles,
                       matrix, identity, gap_open, gap_extend, mode, out, ops, ops_offsets, workers):
    """Align every pair listed: the groups with the lane kernel, the singles one at a time.

    Pair ``k`` is ``seqs_a[offsets_a[k]:offsets_a[k+1]]`` (rows) against the same slice of
    ``b``. Group ``g`` is the pairs ``groups[group_offsets[g]:group_offsets[g+1]]`` (at most
    :data:`LANES`, see :func:`lane_groups`); ``singles`` the pairs aligned alone. ``identity``
    as for :func:`_fill_lanes`. ``out[k]`` receives ``(score, qs, qe, ts, te, n_ops)``; the
    pair's operations (end to start) go to ``ops[ops_offsets[k]:]``. Tasks (groups, then singles) are dealt to ``workers`` threads in
    turn (``numba.get_num_threads()``, passed in: reading it here would stop Numba caching
    this function).
    """
    n_groups = group_offsets.shape[0] - 1
    tasks = n_groups + singles.shape[0]
    for worker in prange(workers):
        for task in range(worker, tasks, workers):
            if task < n_groups:
                _align_group(seqs_a, offsets_a, seqs_b, offsets_b,
                             groups[group_offsets[task]:group_offsets[task + 1]], matrix, identity,
                             gap_open, gap_extend, mode, out, ops, ops_offsets)
                continue
            k = singles[task - n_groups]
            a = seqs_a[offsets_a[k]:offsets_a[k + 1]]
            b = seqs_b[offsets_b[k]:offsets_b[k + 1]]
            score, qs, qe, ts, te, n_ops = _align_one(a, b, matrix, gap_open, gap_extend, mode,
                                                      ops[ops_offsets[k]:ops_offsets[k + 1]])
            _put(out, k, score, qs, qe, ts, te, n_ops)


def lane_groups(query_lengths: np.ndarray, target_lengths: np.ndarray
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Which pairs the lane kernel aligns together, and which alone.

    Pairs with both sequences non-empty and at most :data:`LANE_PAIR_CELLS` cells are sorted
    by query length and cut into bins of :data:`SORT_BIN` groups; each bin is sorted by target
    length and cut into groups of :data:`LANES`, so a group's pairs are alike in both
    lengths. A group whose pairs fill less than half of its largest rows x columns times
    :data:`LANES` (shapes too different, or a last group of few pairs), or whose rows x
    columns exceed :data:`LANE_PAIR_CELLS`, is aligned pair by pair instead.

    Returns
    -------
    (numpy.ndarray, numpy.ndarray, numpy.ndarray)
        ``groups`` (pair indices, group after group), ``group_offsets`` (``len + 1`` bounds)
        and ``singles`` (pair indices aligned alone), all ``int64``.
    """
    m = np.asarray(query_lengths, dtype=np.int64)
    n = np.asarray(target_lengths, dtype=np.int64)
    cells = m * n
    eligible = np.flatnonzero((cells > 0) & (cells <= LANE_PAIR_CELLS))
    if not len(eligible):
        return np.empty(0, np.int64), np.zeros(1, np.int64), np.arange(len(m), dtype=np.int64)
    by_query = eligible[np.lexsort((n[eligible], m[eligible]))]
    in_bin = np.arange(len(by_query)) // (SORT_BIN * LANES)
    order = by_query[np.lexsort((m[by_query], n[by_query], in_bin))]
    starts = np.arange(0, len(order), LANES)
    rows = np.maximum.reduceat(m[order], starts)
    columns = np.maximum.reduceat(n[order], starts)
    real = np.add.reduceat(cells[order], starts)
    kept = (2 * real >= LANES * rows * columns) & (rows * columns <= LANE_PAIR_CELLS)
    sizes = np.minimum(LANES, len(order) - starts)
    in_kept = np.repeat(kept, sizes)
    groups = order[in_kept]
    group_offsets = np.concatenate(([0], np.cumsum(sizes[kept]))).astype(np.int64)
    alone = np.ones(len(m), dtype=bool)
    alone[groups] = False
    return groups, group_offsets, np.flatnonzero(alone).astype(np.int64)


@njit(cache=True, parallel=True)
def runs_from_ops(ops, ops_offsets, n_ops):
    """CIGAR runs (``length << 2 | op``, forward order) of every pair from its path operations.

    Pair ``k``'s ``n_ops[k]`` operations are ``ops[ops_offsets[k]:]``, end to start (as
    :func:`align_pairs_kernel` writes them). Returns ``(runs, run_offsets)`` in the layout
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
