"""Numba kernels of the database search score pass (inter-sequence SIMD, SWIPE style).

The database is cut into batches of :data:`~gpualign_plugin.search.layout.LANES` targets of
similar length (sorted by length), stored interleaved: residue ``j`` of the batch's lane ``l`` is at
``codes[offset + j * LANES + l]``. The Smith-Waterman-Gotoh recurrence of
docs/ALGORITHMS.md then runs over one batch column by column with the lane
dimension innermost and contiguous, so LLVM turns the lane loop into vector
instructions: one vector cell update computes the same cell of ``LANES`` different
alignments (Rognes, "Faster Smith-Waterman database searches with inter-sequence
SIMD parallelisation", BMC Bioinformatics 2011).

**Exactness.** Each (query, batch) is first scored in 16-bit lanes with saturating
additions, then, only if a lane's best score reached :data:`SATURATED16`, again in
32-bit lanes (the caller checks the scheme's 32-bit score bound,
:meth:`~gpualign_plugin.scoring.ScoringScheme.check_score_range`). The 16-bit pass is
exact when no lane saturates: H, E and F of local alignment are at least
``-(open + extend)`` (E and F come from an H >= 0 minus a gap), so only the initial
minus infinity, the padding score and the extensions of minus infinity can go below
-32768, and those saturate at -32768, which loses every ``max`` they enter exactly
as their true values would. Upwards, the first value above 32767 would clamp to
32767, make that cell's H 32767 and so the lane's best 32767: a best below
:data:`SATURATED16` proves no cell overflowed. Used when the scheme's scores and
gap costs are small (:func:`fits_int16`); otherwise the 32-bit pass runs alone.

Padding residues of a short lane carry the code ``PAD`` whose substitution score
is :data:`~gpualign_plugin.search.layout.PAD_SCORE`; a cell in a padding column can only be
reached from a real cell through a gap or a padding substitution, both of which cost, so
padding never raises a lane's maximum above its true local score.
"""

from __future__ import annotations

import numba
import numpy as np
from numba import njit, prange

from gpualign_plugin.gotoh import lane_cell
from gpualign_plugin.runtime.lanes import maximum as _max
from gpualign_plugin.scoring import NEG_INF
from gpualign_plugin.search.layout import LANES, LOW16, SATURATED16, extend_matrix, fits_int16

@njit(cache=True, nogil=True)
def _score_batch(query, matrix_ext, neg_oe, neg_ext, low, zero, codes, offset, width, columns, lanes,
                 scores, out):
    """Best local score of ``query`` against each lane of one interleaved batch.

    Compiled for int16 and int32 lanes: ``matrix_ext``, the constants
    ``neg_oe = -(open + extend)``, ``neg_ext = -extend``, ``low`` (minus infinity)
    and ``zero``, and the scratch arrays all have the lane type.
    Scratch (flat, rows of ``LANES``): ``columns`` holds H then E of the
    previous target column for each query row (``2 * len(query)`` rows);
    ``lanes`` the running diagonal H, H above, F and best score of the current
    column (4 rows); ``scores`` the substitution score of each letter against the
    current target column (one row per letter). The ``LANES`` results go to
    ``out``. Flat arrays indexed by hand and arithmetic in the lane width are what
    let LLVM turn the lane loop into vector instructions. Query rows go two at a
    time: the second row takes the first's H, F and left H from registers, so the
    running values of ``lanes`` are loaded and stored once per two rows (one thread of
    the 2-core AVX-512 VM, 20 MMseqs2 example queries against every fourth batch of the
    20,000 proteins, runs alternating: int16 6.1 -> 7.65 GCUPS, int32 3.9 -> 4.5; the
    same scores in every lane).
    """
    m = query.shape[0]
    alphabet = matrix_ext.shape[0]
    for i in range(m):
        for lane in range(LANES):
            columns[2 * i * LANES + lane] = 0
            columns[(2 * i + 1) * LANES + lane] = low
    for lane in range(LANES):
        lanes[3 * LANES + lane] = 0
    for j in range(width):
        base = offset + j * LANES
        for c in range(alphabet):
            for lane in range(LANES):
                scores[c * LANES + lane] = matrix_ext[c, codes[base + lane]]
        for lane in range(LANES):
            lanes[lane] = 0
            lanes[LANES + lane] = 0
            lanes[2 * LANES + lane] = low
        for pair in range(m // 2):
            i = 2 * pair
            s_first = np.int64(query[i]) * LANES
            s_second = np.int64(query[i + 1]) * LANES
            first = 2 * i * LANES
            second = first + 2 * LANES
            for lane in range(LANES):
                left_first = columns[first + lane]
                h, e, f = lane_cell(lanes[lane], left_first, columns[first + LANES + lane], lanes[LANES + lane],
                                    lanes[2 * LANES + lane], scores[s_first + lane], neg_oe, neg_ext, zero)
                columns[first + lane] = h
                columns[first + LANES + lane] = e
                left_second = columns[second + lane]
                h2, e2, f2 = lane_cell(left_first, left_second, columns[second + LANES + lane], h, f,
                                       scores[s_second + lane], neg_oe, neg_ext, zero)
                columns[second + lane] = h2
                columns[second + LANES + lane] = e2
                lanes[lane] = left_second
                lanes[LANES + lane] = h2
                lanes[2 * LANES + lane] = f2
                lanes[3 * LANES + lane] = _max(lanes[3 * LANES + lane], _max(h, h2))
        if m % 2:
            s_at = np.int64(query[m - 1]) * LANES
            h_at = 2 * (m - 1) * LANES
            for lane in range(LANES):
                h, e, f = lane_cell(lanes[lane], columns[h_at + lane], columns[h_at + LANES + lane],
                                    lanes[LANES + lane], lanes[2 * LANES + lane], scores[s_at + lane], neg_oe,
                                    neg_ext, zero)
                columns[h_at + lane] = h
                columns[h_at + LANES + lane] = e
                lanes[3 * LANES + lane] = _max(lanes[3 * LANES + lane], h)
    for lane in range(LANES):
        out[lane] = lanes[3 * LANES + lane]


@njit(cache=True, parallel=True)
def score_batches(queries, query_offsets, matrix16, matrix32, oe, ext, codes, batch_offsets,
                  batch_widths, workers, use16):
    """Best local scores of every query against every lane of every batch.

    Parameters
    ----------
    queries : numpy.ndarray
        ``uint8`` codes of all queries concatenated.
    query_offsets : numpy.ndarray
        ``int64``, ``n_queries + 1`` boundaries into ``queries``.
    matrix16, matrix32 : numpy.ndarray
        ``int16`` and ``int32`` ``(alphabet, alphabet + 1)``: the substitution matrix
        and a pad column (:func:`extend_matrix`).
    oe, ext : int
        ``gap_open + gap_extend`` (cost of a gap's first column) and ``gap_extend``.
    codes : numpy.ndarray
        ``uint8`` interleaved batches (see the module docstring).
    batch_offsets, batch_widths : numpy.ndarray
        ``int64`` start of each batch in ``codes`` and its padded length.
    workers : int
        Parallel workers, normally ``numba.get_num_threads()`` (passed in: reading
        it inside compiled code would stop Numba caching this function).
    use16 : bool
        Try 16-bit lanes first (only if :func:`fits_int16`); saturated batches are
        scored again in 32 bits.

    Returns
    -------
    numpy.ndarray
        ``int32`` ``(n_queries, n_batches * LANES)``: the score of query ``q``
        against lane ``l`` of batch ``b`` at ``[q, b * LANES + l]``.
    """
    n_queries = query_offsets.shape[0] - 1
    n_batches = batch_offsets.shape[0]
    alphabet = matrix32.shape[0]
    out = np.zeros((n_queries, n_batches * LANES), dtype=np.int32)
    longest = 0
    for q in range(n_queries):
        longest = max(longest, query_offsets[q + 1] - query_offsets[q])
    tasks = n_queries * n_batches
    # Round-robin over tasks: batches are sorted by length, so equal contiguous blocks
    # (prange's static split) would leave the thread with the long batches working alone.
    for worker in prange(workers):
        columns16 = np.empty(2 * longest * LANES, dtype=np.int16)
        lanes16 = np.empty(4 * LANES, dtype=np.int16)
        scores16 = np.empty(alphabet * LANES, dtype=np.int16)
        best16 = np.empty(LANES, dtype=np.int16)
        columns32 = np.empty(2 * longest * LANES, dtype=np.int32)
        lanes32 = np.empty(4 * LANES, dtype=np.int32)
        scores32 = np.empty(alphabet * LANES, dtype=np.int32)
        for task in range(worker, tasks, workers):
            q = task // n_batches
            b = task % n_batches
            query = queries[query_offsets[q]:query_offsets[q + 1]]
            result = out[q, b * LANES:(b + 1) * LANES]
            saturated = True
            if use16:
                _score_batch(query, matrix16, np.int16(-oe), np.int16(-ext), np.int16(LOW16),
                             np.int16(0), codes, batch_offsets[b], batch_widths[b], columns16,
                             lanes16, scores16, best16)
                saturated = False
                for lane in range(LANES):
                    result[lane] = best16[lane]
                    saturated = saturated or best16[lane] >= SATURATED16
            if saturated:
                _score_batch(query, matrix32, np.int32(-oe), np.int32(-ext), np.int32(NEG_INF),
                             np.int32(0), codes, batch_offsets[b], batch_widths[b], columns32,
                             lanes32, scores32, result)
    return out


def interleave(targets: list[np.ndarray], pad_code: int) -> tuple[np.ndarray, np.ndarray,
                                                                   np.ndarray, np.ndarray]:
    """Sort ``targets`` by length and pack them into interleaved batches of :data:`LANES`.

    Parameters
    ----------
    targets : list of numpy.ndarray
        ``uint8`` codes of each target.
    pad_code : int
        Code of the padding residue (the pad column of ``matrix_ext``).

    Returns
    -------
    codes, batch_offsets, batch_widths : numpy.ndarray
        Inputs of :func:`score_batches`.
    lane_target : numpy.ndarray
        ``int64``, for each lane slot ``b * LANES + l`` the index into ``targets``
        it holds, or ``-1`` for an empty lane of the last batch.
    """
    lengths = np.array([len(t) for t in targets], dtype=np.int64)
    offsets = np.zeros(len(targets) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    flat = np.concatenate(targets) if targets else np.zeros(0, np.uint8)
    return interleave_records(flat, offsets, np.argsort(lengths, kind="stable"), pad_code)


def interleave_records(codes: np.ndarray, offsets: np.ndarray, order: np.ndarray, pad_code: int
                       ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Pack records of a flat code array into interleaved batches, in the given order.

    ``order`` lists record indices (record ``i`` is ``codes[offsets[i]:offsets[i+1]]``),
    normally sorted by length so that a batch holds targets of similar length;
    consecutive groups of :data:`LANES` become batches. Returns what
    :func:`interleave` returns, ``lane_target`` holding the entries of ``order``.
    """
    order = np.asarray(order, dtype=np.int64)
    lengths = offsets[order + 1] - offsets[order]
    n_batches = (len(order) + LANES - 1) // LANES
    lane_target = np.full(n_batches * LANES, -1, dtype=np.int64)
    lane_target[:len(order)] = order
    widths = (np.maximum.reduceat(lengths, np.arange(0, len(order), LANES)) if len(order)
              else np.zeros(0, np.int64)).astype(np.int64)
    batch_offsets = np.zeros(n_batches, dtype=np.int64)
    batch_offsets[1:] = np.cumsum(widths * LANES)[:-1]
    packed = np.full(int((widths * LANES).sum()), pad_code, dtype=np.uint8)
    _scatter(packed, np.asarray(codes), np.asarray(offsets, np.int64), lane_target, batch_offsets)
    return packed, batch_offsets, widths, lane_target


@njit(cache=True, parallel=True)
def _scatter(packed, codes, offsets, lane_target, batch_offsets):
    """Copy each record's codes into its lane: residue ``j`` of slot ``b * LANES + l`` at
    ``packed[batch_offsets[b] + j * LANES + l]`` (batches in parallel)."""
    for b in prange(batch_offsets.shape[0]):
        for lane in range(LANES):
            index = lane_target[b * LANES + lane]
            if index < 0:
                continue
            base = batch_offsets[b] + lane
            start = offsets[index]
            for j in range(offsets[index + 1] - start):
                packed[base + j * LANES] = codes[start + j]


def pack_targets(queries: list, targets: list, scheme) -> tuple:
    """Check the score range of a search and pack its ``targets`` for the CPU lane kernel.

    Raises
    :class:`~gpualign_plugin.errors.InputError` when the longest query and target could
    overflow 32-bit scores under ``scheme``, then returns :func:`interleave` of the
    targets with the pad code one past the alphabet (``codes, offsets, widths,
    lane_target``).
    """
    scheme.check_score_range(max(len(q) for q in queries), max(len(t) for t in targets))
    return interleave([np.ascontiguousarray(t, dtype=np.uint8) for t in targets],
                      pad_code=scheme.matrix.shape[0])


CELLS_PER_CALL = 10**10
"""Cells scored per kernel call of :func:`score_database` (progress is reported between calls)."""


def score_database(queries: list[np.ndarray], targets: list[np.ndarray], scheme,
                   on_progress=None) -> np.ndarray:
    """Best local score of every query against every target on the CPU cores.

    Targets are packed by :func:`pack_targets` and scored :data:`LANES` at a time
    by :func:`score_batches` on ``numba.get_num_threads()`` threads; the result
    and its conventions are those of :func:`gpualign_plugin.search.api.score_database`,
    which calls this for the CPU backend.
    """
    result = np.zeros((len(queries), len(targets)), dtype=np.int32)
    if not queries or not targets:
        return result
    codes, offsets, widths, lane_target = pack_targets(queries, targets, scheme)
    query_offsets = np.zeros(len(queries) + 1, dtype=np.int64)
    np.cumsum([len(q) for q in queries], out=query_offsets[1:])
    packed = np.concatenate([np.ascontiguousarray(q, dtype=np.uint8) for q in queries])
    matrix16 = extend_matrix(scheme.matrix, np.int16)
    matrix32 = extend_matrix(scheme.matrix, np.int32)
    use16 = fits_int16(scheme.matrix, scheme.gap_open, scheme.gap_extend)
    lengths = np.array([len(t) for t in targets] + [0], dtype=np.int64)  # [-1]: empty lane
    query_residues = int(query_offsets[-1])
    per_call = max(1, CELLS_PER_CALL // max(1, query_residues))  # padded target residues
    start = 0
    while start < len(widths):
        stop = start + 1 + int(np.searchsorted(np.cumsum(widths[start + 1:] * LANES),
                                               per_call - widths[start] * LANES))
        lanes = score_batches(packed, query_offsets, matrix16, matrix32,
                                      scheme.gap_open + scheme.gap_extend, scheme.gap_extend, codes,
                                      offsets[start:stop], widths[start:stop],
                                      numba.get_num_threads(), use16)
        slots = lane_target[start * LANES:stop * LANES]
        used = slots >= 0
        result[:, slots[used]] = lanes[:, used]
        if on_progress is not None:
            residues = int(lengths[slots].sum())
            on_progress(residues, residues * query_residues)
        start = stop
    return result
