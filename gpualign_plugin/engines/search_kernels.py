"""Numba kernels of the database search score pass (inter-sequence SIMD, SWIPE style).

The database is cut into batches of :data:`LANES` targets of similar length (sorted by
length), stored interleaved: residue ``j`` of the batch's lane ``l`` is at
``codes[offset + j * LANES + l]``. The Smith-Waterman-Gotoh recurrence of
docs/ALGORITHMS.md then runs over one batch column by column with the lane
dimension innermost and contiguous, so LLVM turns the lane loop into vector
instructions: one vector cell update computes the same cell of ``LANES`` different
alignments (Rognes, "Faster Smith-Waterman database searches with inter-sequence
SIMD parallelisation", BMC Bioinformatics 2011).

Scores are exact ``int32`` values: the caller checks the scheme's score bound
(:meth:`~gpualign_plugin.scoring.ScoringScheme.check_score_range`) first.
Padding residues of a short lane carry the code ``PAD`` whose substitution score
is :data:`PAD_SCORE`; a cell in a padding column can only be reached from a real
cell through a gap or a padding substitution, both of which cost, so padding never
raises a lane's maximum above its true local score.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange
from numba.core import types
from numba.extending import intrinsic

from gpualign_plugin.scoring import NEG_INF

LANES = 16
"""Targets scored together by one vector cell update (16 x int32 = one AVX-512 register)."""

PAD_SCORE = -(1 << 20)
"""Substitution score of a padding residue: far below any real score, far from int32 overflow."""


@intrinsic
def _add32(typingctx, a, b):
    """``a + b`` in 32-bit arithmetic (Numba would widen int32 + int32 to int64)."""
    sig = types.int32(types.int32, types.int32)

    def codegen(context, builder, signature, args):
        return builder.add(args[0], args[1])

    return sig, codegen


@intrinsic
def _max32(typingctx, a, b):
    """``max(a, b)`` of two int32 values, kept 32-bit so a vector holds 16 lanes, not 8."""
    sig = types.int32(types.int32, types.int32)

    def codegen(context, builder, signature, args):
        return builder.select(builder.icmp_signed(">", args[0], args[1]), args[0], args[1])

    return sig, codegen


@njit(cache=True, nogil=True)
def _score_batch(query, matrix_ext, oe, ext, codes, offset, width, columns, lanes, scores, out):
    """Best local score of ``query`` against each lane of one interleaved batch.

    Scratch (int32, flat, rows of ``LANES``): ``columns`` holds H then E of the
    previous target column for each query row (``2 * len(query)`` rows);
    ``lanes`` the running diagonal H, H above, F and best score of the current
    column (4 rows); ``scores`` the substitution score of each letter against the
    current target column (one row per letter). The ``LANES`` results go to
    ``out``. Flat arrays indexed by hand and 32-bit arithmetic are what let LLVM
    turn the lane loop into 16-lane vector instructions.
    """
    m = query.shape[0]
    alphabet = matrix_ext.shape[0]
    neg_oe = np.int32(-oe)
    neg_ext = np.int32(-ext)
    zero = np.int32(0)
    for i in range(m):
        for lane in range(LANES):
            columns[2 * i * LANES + lane] = 0
            columns[(2 * i + 1) * LANES + lane] = NEG_INF
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
            lanes[2 * LANES + lane] = NEG_INF
        for i in range(m):
            s_at = np.int64(query[i]) * LANES
            h_at = 2 * i * LANES
            e_at = h_at + LANES
            for lane in range(LANES):
                h_left = columns[h_at + lane]
                e = _max32(_add32(h_left, neg_oe), _add32(columns[e_at + lane], neg_ext))
                f = _max32(_add32(lanes[LANES + lane], neg_oe), _add32(lanes[2 * LANES + lane], neg_ext))
                h = _max32(_max32(_add32(lanes[lane], scores[s_at + lane]), e), _max32(f, zero))
                lanes[lane] = h_left
                columns[h_at + lane] = h
                columns[e_at + lane] = e
                lanes[2 * LANES + lane] = f
                lanes[LANES + lane] = h
                lanes[3 * LANES + lane] = _max32(lanes[3 * LANES + lane], h)
    for lane in range(LANES):
        out[lane] = lanes[3 * LANES + lane]


@njit(cache=True, parallel=True)
def score_batches(queries, query_offsets, matrix_ext, oe, ext, codes, batch_offsets, batch_widths,
                  workers):
    """Best local scores of every query against every lane of every batch.

    Parameters
    ----------
    queries : numpy.ndarray
        ``uint8`` codes of all queries concatenated.
    query_offsets : numpy.ndarray
        ``int64``, ``n_queries + 1`` boundaries into ``queries``.
    matrix_ext : numpy.ndarray
        ``int32`` ``(alphabet, alphabet + 1)``: the substitution matrix and a pad column.
    oe, ext : int
        ``gap_open + gap_extend`` (cost of a gap's first column) and ``gap_extend``.
    codes : numpy.ndarray
        ``uint8`` interleaved batches (see the module docstring).
    batch_offsets, batch_widths : numpy.ndarray
        ``int64`` start of each batch in ``codes`` and its padded length.
    workers : int
        Parallel workers, normally ``numba.get_num_threads()`` (passed in: reading
        it inside compiled code would stop Numba caching this function).

    Returns
    -------
    numpy.ndarray
        ``int32`` ``(n_queries, n_batches * LANES)``: the score of query ``q``
        against lane ``l`` of batch ``b`` at ``[q, b * LANES + l]``.
    """
    n_queries = query_offsets.shape[0] - 1
    n_batches = batch_offsets.shape[0]
    out = np.zeros((n_queries, n_batches * LANES), dtype=np.int32)
    longest = 0
    for q in range(n_queries):
        longest = max(longest, query_offsets[q + 1] - query_offsets[q])
    tasks = n_queries * n_batches
    # Round-robin over tasks: batches are sorted by length, so equal contiguous blocks
    # (prange's static split) would leave the thread with the long batches working alone.
    for worker in prange(workers):
        columns = np.empty(2 * longest * LANES, dtype=np.int32)
        lanes = np.empty(4 * LANES, dtype=np.int32)
        scores = np.empty(matrix_ext.shape[0] * LANES, dtype=np.int32)
        for task in range(worker, tasks, workers):
            q = task // n_batches
            b = task % n_batches
            query = queries[query_offsets[q]:query_offsets[q + 1]]
            _score_batch(query, matrix_ext, oe, ext, codes, batch_offsets[b], batch_widths[b],
                         columns, lanes, scores, out[q, b * LANES:(b + 1) * LANES])
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
    order = np.argsort(lengths, kind="stable")
    n_batches = (len(targets) + LANES - 1) // LANES
    lane_target = np.full(n_batches * LANES, -1, dtype=np.int64)
    lane_target[:len(targets)] = order
    widths = np.zeros(n_batches, dtype=np.int64)
    for b in range(n_batches):
        members = lane_target[b * LANES:(b + 1) * LANES]
        widths[b] = lengths[members[members >= 0]].max()
    offsets = np.zeros(n_batches, dtype=np.int64)
    offsets[1:] = np.cumsum(widths * LANES)[:-1]
    codes = np.full(int((widths * LANES).sum()), pad_code, dtype=np.uint8)
    for slot, index in enumerate(lane_target):
        if index < 0:
            continue
        b, lane = divmod(slot, LANES)
        target = targets[index]
        codes[offsets[b] + lane: offsets[b] + lane + len(target) * LANES: LANES] = target
    return codes, offsets, widths, lane_target


def extend_matrix(matrix: np.ndarray) -> np.ndarray:
    """The substitution matrix with one more column (the pad code) scoring :data:`PAD_SCORE`."""
    size = matrix.shape[0]
    out = np.full((size, size + 1), PAD_SCORE, dtype=np.int32)
    out[:, :size] = matrix
    return np.ascontiguousarray(out)
