"""Gotoh's affine-gap recurrence as Numba kernels (docs/ALGORITHMS.md, "Pairwise").

Shared core: the CPU engines of pairwise alignment (:mod:`gpualign_plugin.pairwise.cpu`)
and batch alignment (:mod:`gpualign_plugin.batch.cpu`) are built from these row kernels,
and the GPU pairwise engine walks its tracebacks with :func:`direction_step` and
:func:`boundary_step`, so every engine follows one recurrence and one tie rule.

Everything here is ``@njit(cache=True, nogil=True)`` (callers may align pairs
in Python threads) but :func:`tiled_score_kernel` (``parallel=True``); all work on
``uint8`` code arrays, an ``int32`` substitution matrix and ``int32`` DP rows.
Orientation: ``a`` indexes the rows (``i``), ``b`` the columns (``j``); the
public functions in :mod:`gpualign_plugin.pairwise.cpu` and
:mod:`gpualign_plugin.batch.api` decide which sequence is which.

Row state: a DP row is two ``int32`` arrays ``H[j]`` and ``F[j]`` over columns
``0..width-1``; ``E`` runs along the row and is not stored. :func:`fill_row`
turns the state of row ``i-1`` into the state of row ``i`` in place, writing
the direction byte of every cell (layout in ALGORITHMS.md: bits 0-1 the H
choice 0 stop / 1 diagonal / 2 E / 3 F, bit 2 E opens here, bit 3 F opens
here); :func:`fill_two_rows` advances two rows in one sweep, with or without
direction bytes. Both compute every cell with :func:`_cell` and every byte
with :func:`direction_byte`, so all paths share one recurrence (the SIMD kernels, which
keep their values in the lane width, compute it with :func:`lane_cell`).

Boundary flags: ``col0_gap`` says whether ``H(i, 0)`` is the gap cost
``-(o + i e)`` (global; semiglobal rows over the query) or ``0``; the caller
builds row 0 with :func:`initial_row`. ``floor`` is ``0`` in local mode and
``NEG_INF`` otherwise: ``H = max(..., floor)`` and a cell whose ``H`` equals
``floor`` is a stop cell.

Path operations are written as codes :data:`OP_MATCH`, :data:`OP_MISMATCH`,
:data:`OP_INSERTION` and :data:`OP_DELETION` from the end of the path
backwards.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from gpualign_plugin.model import RUN_OPS, Cigar
from gpualign_plugin.runtime.lanes import add, maximum
from gpualign_plugin.scoring import GLOBAL, LOCAL, NEG_INF, SEMIGLOBAL

STATE_H, STATE_E, STATE_F = 0, 1, 2
"""Traceback states."""

OP_MATCH, OP_MISMATCH, OP_INSERTION, OP_DELETION = 0, 1, 2, 3
"""Path operation codes: ``=``, ``X``, ``I`` (query residue vs gap), ``D`` (target residue vs gap)."""

OP_LETTERS = RUN_OPS


@njit(cache=True, nogil=True)
def initial_row(width, gap_open, gap_extend, row0_gap, H, F):
    """Write row 0 into ``H`` and ``F`` (columns ``0..width-1``).

    ``H(0, j)`` is ``-(o + j e)`` when ``row0_gap`` else ``0``; ``F(0, j)`` is
    ``NEG_INF`` (``H(0, 0) = 0`` always).
    """
    H[0] = 0
    F[0] = NEG_INF
    for j in range(1, width):
        H[j] = -(gap_open + j * gap_extend) if row0_gap else 0
        F[j] = NEG_INF


@njit(cache=True, nogil=True, inline="always")
def _cell(h_diag, h_left, h_up, e_left, f_up, score, open_extend, gap_extend, floor):
    """One cell of the recurrence: ``(H, E, F)`` from its neighbours' values."""
    e = max(h_left - open_extend, e_left - gap_extend)
    f = max(h_up - open_extend, f_up - gap_extend)
    h = max(max(h_diag + score, floor), max(e, f))
    return h, e, f


@njit(cache=True, nogil=True, inline="always")
def lane_cell(h_diag, h_left, e_left, h_up, f_up, score, neg_oe, neg_ext, floor):
    """:func:`_cell` with every value in its operands' own integer width (``int16`` or ``int32``).

    ``neg_oe = -(open + extend)`` and ``neg_ext = -extend`` have that width too. Numba widens
    ``int16``/``int32`` arithmetic to ``int64``; the SIMD kernels that run many alignments
    in the lanes of one vector (the database search, the batch lane kernel) use this form
    so that a vector holds 16 or 8 lanes of AVX2 instead of 4. Returns ``(H, E, F)``.
    """
    e = maximum(add(h_left, neg_oe), add(e_left, neg_ext))
    f = maximum(add(h_up, neg_oe), add(f_up, neg_ext))
    return maximum(maximum(add(h_diag, score), e), maximum(f, floor)), e, f


@njit(cache=True, nogil=True, inline="always")
def direction_byte(h, e, f, diag, e_open, f_open, floor):
    """The direction byte of a cell (layout in the module docstring)."""
    # Selects rather than branches: the choice is data-dependent and unpredictable.
    d = 2 if h == e else 3
    d = 1 if h == diag else d
    d = 0 if h == floor else d
    return d | (4 if e == e_open else 0) | (8 if f == f_open else 0)


@njit(cache=True, nogil=True)
def fill_row(code, i, b, width, matrix, gap_open, gap_extend, floor, col0_gap, H, F, dirs):
    """Advance the row state from row ``i-1`` to row ``i`` and write its direction bytes.

    Parameters
    ----------
    code : int
        Code of the row residue ``a_i``.
    i : int
        Absolute row index (>= 1), for the column-0 boundary.
    b : uint8 array
        Column sequence codes (``b[j-1]`` is column ``j``).
    width : int
        Columns ``0..width-1`` are computed.
    H, F : int32 arrays
        State of row ``i-1`` on entry, of row ``i`` on return.
    dirs : uint8 array
        The row's direction bytes, index ``j`` (``dirs[0]`` is left alone).

    Returns
    -------
    (int, int)
        The largest ``H(i, j)`` over ``1 <= j < width`` and its smallest ``j``
        (``(NEG_INF, 0)`` when ``width == 1``).
    """
    open_extend = gap_open + gap_extend
    srow = matrix[code]
    h_diag = H[0]
    h_left = -(gap_open + i * gap_extend) if col0_gap else 0
    H[0] = h_left
    F[0] = h_left
    e = NEG_INF
    best = NEG_INF
    best_j = 0
    for j in range(1, width):
        h_up = H[j]
        score = srow[b[j - 1]]
        h, e_new, f = _cell(h_diag, h_left, h_up, e, F[j], score, open_extend, gap_extend, floor)
        dirs[j] = direction_byte(h, e_new, f, h_diag + score, h_left - open_extend,
                                 h_up - open_extend, floor)
        best_j = j if h > best else best_j
        best = max(best, h)
        e = e_new
        h_diag = h_up
        H[j] = h
        F[j] = f
        h_left = h
    return best, best_j


@njit(cache=True, nogil=True)
def fill_two_rows(code1, code2, i, b, width, matrix, gap_open, gap_extend, floor, col0_gap, H, F,
                  dirs1, dirs2):
    """Advance the row state from row ``i-1`` to row ``i+1``.

    The two rows are computed in one sweep over the columns: their dependency
    chains interleave, which is faster than two sweeps on a superscalar core.
    Arguments as for :func:`fill_row` (``code1``/``code2`` are ``a_i`` and
    ``a_{i+1}``); the rows' direction bytes go to ``dirs1`` and ``dirs2``
    unless they are ``None`` (Numba then compiles a score-only version).

    Returns
    -------
    (int, int, int, int, int)
        Row ``i``'s largest ``H`` over ``1 <= j < width``, its smallest ``j`` and
        ``H(i, width-1)``; then row ``i+1``'s largest ``H`` and its smallest ``j``
        (``NEG_INF`` and 0 when ``width == 1``).
    """
    open_extend = gap_open + gap_extend
    s1 = matrix[code1]
    s2 = matrix[code2]
    h_diag1 = H[0]
    h_left1 = -(gap_open + i * gap_extend) if col0_gap else 0
    h_diag2 = h_left1
    h_left2 = -(gap_open + (i + 1) * gap_extend) if col0_gap else 0
    H[0] = h_left2
    F[0] = h_left2
    e1 = NEG_INF
    e2 = NEG_INF
    best1 = NEG_INF
    best2 = NEG_INF
    j1 = 0
    j2 = 0
    for j in range(1, width):
        c = b[j - 1]
        h_up = H[j]
        h1, e1, f1 = _cell(h_diag1, h_left1, h_up, e1, F[j], s1[c], open_extend, gap_extend,
                           floor)
        h2, e2, f2 = _cell(h_diag2, h_left2, h1, e2, f1, s2[c], open_extend, gap_extend, floor)
        if dirs1 is not None:
            dirs1[j] = direction_byte(h1, e1, f1, h_diag1 + s1[c], h_left1 - open_extend,
                                      h_up - open_extend, floor)
            dirs2[j] = direction_byte(h2, e2, f2, h_diag2 + s2[c], h_left2 - open_extend,
                                      h1 - open_extend, floor)
        j1 = j if h1 > best1 else j1
        best1 = max(best1, h1)
        j2 = j if h2 > best2 else j2
        best2 = max(best2, h2)
        h_diag1 = h_up
        h_left1 = h1
        h_diag2 = h1
        h_left2 = h2
        H[j] = h2
        F[j] = f2
    return best1, j1, h_left1, best2, j2


@njit(cache=True, nogil=True, inline="always")
def _track_end(local, last_column, transposed, i, row_best, row_j, last_value, best, best_q,
               best_t):
    """Update the end cell ``(best, best_q, best_t)`` with row ``i`` (see :func:`score_kernel`).

    ``row_best`` is the row's largest ``H`` at its smallest column ``row_j``;
    ``last_value`` its ``H`` in the last column.
    """
    if local:
        if transposed:
            # Cell (query row_j, target i); ties prefer the smaller query index.
            if row_best > best or (row_best == best and best > 0 and row_j < best_q):
                return row_best, row_j, i
        elif row_best > best:
            return row_best, i, row_j
    elif last_column and last_value > best:
        return last_value, best_q, i
    return best, best_q, best_t


@njit(cache=True, nogil=True)
def score_kernel(a, b, matrix, gap_open, gap_extend, mode, transposed):
    """Score and end cell of the best alignment, in O(len(b)) memory.

    ``a`` indexes rows and ``b`` columns. When ``transposed`` is false, ``a`` is
    the query and ``b`` the target; when true, ``a`` is the target and ``b`` the
    query (the caller passes the shorter sequence as ``b``). Either way the
    result follows the end-cell rule in query/target coordinates.

    Returns
    -------
    (int, int, int)
        ``(score, query_end, target_end)``; local with no positive cell gives
        ``(0, 0, 0)``.
    """
    rows = a.shape[0]
    width = b.shape[0] + 1
    local = mode == LOCAL
    floor = 0 if local else NEG_INF
    # Semiglobal boundaries are not symmetric: the query side carries gap costs.
    row0_gap = mode == GLOBAL or (mode == SEMIGLOBAL and transposed)
    col0_gap = mode == GLOBAL or (mode == SEMIGLOBAL and not transposed)
    H = np.empty(width, np.int32)
    F = np.empty(width, np.int32)
    scratch = np.empty(width, np.uint8)
    initial_row(width, gap_open, gap_extend, row0_gap, H, F)
    best = 0
    best_q = 0
    best_t = 0
    last_column = mode == SEMIGLOBAL and transposed
    if last_column:
        # The end cells H(m, j) form the last column: one per row, row 0 included.
        best = H[width - 1]
        best_q = width - 1
    i = 1
    while i <= rows:
        if i < rows:
            row_best, row_j, last_value, next_best, next_j = fill_two_rows(
                a[i - 1], a[i], i, b, width, matrix, gap_open, gap_extend, floor, col0_gap, H, F,
                None, None)
            best, best_q, best_t = _track_end(local, last_column, transposed, i, row_best, row_j,
                                              last_value, best, best_q, best_t)
            best, best_q, best_t = _track_end(local, last_column, transposed, i + 1, next_best,
                                              next_j, H[width - 1], best, best_q, best_t)
            i += 2
        else:
            row_best, row_j = fill_row(a[i - 1], i, b, width, matrix, gap_open, gap_extend, floor,
                                       col0_gap, H, F, scratch)
            best, best_q, best_t = _track_end(local, last_column, transposed, i, row_best, row_j,
                                              H[width - 1], best, best_q, best_t)
            i += 1
    return final_end(mode, transposed, H, width, rows, best, best_q, best_t)


@njit(cache=True, nogil=True, inline="always")
def final_end(mode, transposed, H, width, rows, best, best_q, best_t):
    """Finish the end-cell rule once ``H`` holds the last row: global's corner, semiglobal's row m.

    ``(best, best_q, best_t)`` is what row-by-row tracking found (local, and
    semiglobal over a transposed matrix); local with no positive cell gives ``(0, 0, 0)``.
    """
    if mode == GLOBAL:
        if transposed:
            return H[width - 1], width - 1, rows
        return H[width - 1], rows, width - 1
    if mode == SEMIGLOBAL and not transposed:
        best = H[0]
        best_t = 0
        for j in range(1, width):
            if H[j] > best:
                best = H[j]
                best_t = j
        return best, rows, best_t
    if mode == LOCAL and best <= 0:
        return 0, 0, 0
    return best, best_q, best_t


@njit(cache=True, nogil=True)
def forward_rows(a, b, matrix, gap_open, gap_extend, mode, r0, width, H, F, save_rows, saved):
    """Run rows ``r0+1..save_rows[-1]`` from the state in ``H``/``F``; copy the listed rows' states.

    ``saved[k, 0]`` and ``saved[k, 1]`` receive ``H`` and ``F`` of row
    ``save_rows[k]`` over columns ``0..width-1`` (rows ascending, all > ``r0``).
    """
    floor = 0 if mode == LOCAL else NEG_INF
    col0_gap = mode != LOCAL
    scratch = np.empty(width, np.uint8)
    last = save_rows[save_rows.shape[0] - 1]
    k = 0
    i = r0 + 1
    while i <= last:
        if i < last and i != save_rows[k]:
            fill_two_rows(a[i - 1], a[i], i, b, width, matrix, gap_open, gap_extend, floor,
                          col0_gap, H, F, None, None)
            i += 2
        else:
            fill_row(a[i - 1], i, b, width, matrix, gap_open, gap_extend, floor, col0_gap, H, F,
                     scratch)
            i += 1
        if i - 1 == save_rows[k]:
            saved[k, 0, :width] = H[:width]
            saved[k, 1, :width] = F[:width]
            k += 1


@njit(cache=True, nogil=True)
def band_directions(a, b, matrix, gap_open, gap_extend, mode, r0, width, H, F, dirs):
    """Direction bytes of rows ``r0+1..r0+len(dirs)`` over columns ``0..width-1``.

    ``H``/``F`` hold the state of row ``r0`` on entry (and are overwritten).
    ``dirs[k, j]`` is the byte of cell ``(r0+1+k, j)``; column 0 is unused (0).
    """
    floor = 0 if mode == LOCAL else NEG_INF
    col0_gap = mode != LOCAL
    rows = dirs.shape[0]
    dirs[:, 0] = 0
    k = 0
    while k < rows:
        i = r0 + 1 + k
        if k + 1 < rows:
            fill_two_rows(a[i - 1], a[i], i, b, width, matrix, gap_open, gap_extend, floor,
                          col0_gap, H, F, dirs[k], dirs[k + 1])
            k += 2
        else:
            fill_row(a[i - 1], i, b, width, matrix, gap_open, gap_extend, floor, col0_gap, H, F,
                     dirs[k])
            k += 1


REACH_LOCAL, REACH_GLOBAL, REACH_SUFFIXES = 0, 1, 2
"""What :func:`reaching_rows` computes: local rows, or rows without restart whose column 0 holds
the gap costs (global and semiglobal: row 0 is the caller's), towards a known end cell; or the
anchored rows of the reversed prefixes (the suffixes of a local alignment, free at their far end)."""


@njit(cache=True, nogil=True, inline="always")
def _rest_bound(rows_left, cols_left, max_sub, offset_cost):
    """The most the rest of a path can add with ``rows_left`` rows and ``cols_left`` columns to
    go: a pair each at most ``max_sub``, a gap column each for their difference at ``offset_cost``."""
    return max_sub * min(rows_left, cols_left) - offset_cost * abs(rows_left - cols_left)


@njit(cache=True, nogil=True)
def reaching_rows(a, b, matrix, gap_open, gap_extend, r0, r1, width, H, F, lo, hi, need,
                  end_row, end_col, max_sub, dirs, kind):
    """Rows ``r0+1..r1`` over columns ``0..width-1``, computing only the cells that may lie on a
    path scoring ``need`` at the end cell ``(end_row, end_col)`` (docs/ALGORITHMS.md,
    "Traceback of a local alignment").

    :data:`REACH_LOCAL` and :data:`REACH_GLOBAL`: a cell is live when ``H`` plus the most the
    rest of a path to the end cell can add, ``max_sub * min(R, C) - gap_extend * |R - C|``
    (``R``, ``C`` the rows and columns left), reaches ``need``. :data:`REACH_SUFFIXES` (a path
    from ``(0, 0)``, no restart, free far end): ``H + max_sub * min(R, C) >= need`` and ``H
    >= 0``, since every suffix of an optimal local alignment scores at least 0. ``H``/``F`` hold
    row ``r0``'s state on entry (exact on its live columns ``lo..hi``, where ``lo = 0`` says
    column 0 is live; lower bounds elsewhere: H = 0 local, ``NEG_INF`` otherwise, F =
    ``NEG_INF``) and row ``r1``'s on return, with the same convention. Row ``i`` computes from
    its first live predecessor column (from column 1 where a local path may start in the row,
    or where global's column 0 is live) to the last cell a live cell of row ``i-1`` or a start
    can reach, then on while the row's cells stay live. ``dirs`` has ``r1 - r0`` rows of
    ``width`` bytes for the computed cells' direction bytes (the others are left unwritten, and
    no path scoring ``need`` reads them), or one row that each row overwrites.

    Returns
    -------
    (int, int, int, int, int)
        Row ``r1``'s first and last live columns (``width`` and ``-1`` when none), the number
        of cells computed, and the largest row and the largest column of a live cell whose
        ``H`` equals ``need`` (``-1`` when none).
    """
    open_extend = gap_open + gap_extend
    restarts = kind == REACH_LOCAL
    floor = 0 if restarts else NEG_INF
    dead_h = 0 if restarts else NEG_INF
    least = 0 if kind == REACH_SUFFIXES else NEG_INF
    # Towards a fixed end cell a path must also make up the difference of rows and columns left.
    offset_cost = 0 if kind == REACH_SUFFIXES else gap_extend
    # A local path's first pair scores at most max_sub, so it may start at (i, j) only when
    # max_sub * (1 + min(end_row - i, end_col - j)) >= need: rows and columns <= end - k.
    k = (need + max_sub - 1) // max_sub - 1 if restarts else end_row + 1
    cells = 0
    far_row = -1
    far_col = -1
    for i in range(r0 + 1, r1 + 1):
        rows_left = end_row - i
        col0 = dead_h
        if kind == REACH_GLOBAL:
            edge = -(gap_open + i * gap_extend)
            if edge + _rest_bound(rows_left, end_col, max_sub, offset_cost) >= need:
                col0 = edge
        restart_last = min(end_col - k, width - 1) if rows_left >= k else 0
        start = 1 if restart_last >= 1 or col0 > dead_h else max(1, lo)
        reach = min(max(hi + 1, restart_last, 1 if col0 > dead_h else 0), width - 1)
        h_diag = H[start - 1] if start <= reach else dead_h
        H[0] = col0
        lo = 0 if col0 > dead_h else width
        hi = 0 if col0 > dead_h else -1
        if start > reach:
            continue
        srow = matrix[a[i - 1]]
        row_dirs = dirs[min(i - r0 - 1, dirs.shape[0] - 1)]
        h_left = col0 if start == 1 else dead_h
        e = NEG_INF
        j = start
        while j < width and (j <= reach or hi == j - 1):
            h_up = H[j]
            score = srow[b[j - 1]]
            h, e_new, f = _cell(h_diag, h_left, h_up, e, F[j], score, open_extend, gap_extend, floor)
            row_dirs[j] = direction_byte(h, e_new, f, h_diag + score, h_left - open_extend,
                                         h_up - open_extend, floor)
            h_diag = h_up
            if h + _rest_bound(rows_left, end_col - j, max_sub, offset_cost) >= need and h >= least:
                H[j] = h
                F[j] = f
                e = e_new
                h_left = h
                lo = min(lo, j)
                hi = j
                if h == need:
                    far_row = i
                    far_col = max(far_col, j)
            else:
                # Lower bounds (as a pruned tile's): no path scoring need passes here.
                H[j] = dead_h
                F[j] = NEG_INF
                e = NEG_INF
                h_left = dead_h
            j += 1
        cells += j - start
    return lo, hi, cells, far_row, far_col


@njit(cache=True, nogil=True)
def boundary_step(mode, i, j, ops, pos):
    """One traceback step in state H on row 0 or column 0, by ``mode``'s boundary rules.

    Returns ``(i, j, pos, done)``: local alignments and semiglobal ones on row 0
    stop; global row 0 emits the remaining deletions and stops; column 0 of
    global / semiglobal emits one insertion and moves up.
    """
    if mode == LOCAL or (i == 0 and mode == SEMIGLOBAL):
        return i, j, pos, True
    if i == 0:
        while j > 0:
            ops[pos] = OP_DELETION
            pos += 1
            j -= 1
        return i, j, pos, True
    ops[pos] = OP_INSERTION
    return i - 1, j, pos + 1, False


@njit(cache=True, nogil=True)
def direction_step(d, a, b, i, j, state, ops, pos):
    """Follow direction byte ``d`` of cell ``(i, j)`` one step (docs/ALGORITHMS.md's rule).

    Shared by the CPU band walk and the GPU engine's chunk walk, which differ
    only in where a cell's byte is stored. Returns ``(i, j, state, pos, done)``.
    """
    if state == STATE_H:
        choice = d & 3
        if choice == 0:
            return i, j, state, pos, True
        if choice == 1:
            ops[pos] = OP_MATCH if a[i - 1] == b[j - 1] else OP_MISMATCH
            return i - 1, j - 1, state, pos + 1, False
        return i, j, STATE_E if choice == 2 else STATE_F, pos, False
    if state == STATE_E:
        ops[pos] = OP_DELETION
        return i, j - 1, STATE_H if d & 4 else STATE_E, pos + 1, False
    ops[pos] = OP_INSERTION
    return i - 1, j, STATE_H if d & 8 else STATE_F, pos + 1, False


@njit(cache=True, nogil=True)
def trace_band(dirs, r0, a, b, mode, i, j, state, ops, pos):
    """Follow the traceback rule through one band of direction bytes.

    Starts at cell ``(i, j)`` in ``state`` (``r0 < i <= r0 + len(dirs)``, or
    ``i == r0 == 0``) and walks until the path stops or reaches row ``r0 > 0``
    (the band above continues from there in the returned state). Row 0 and
    column 0 follow the boundary rules of ``mode``.

    Returns
    -------
    (int, int, int, int, bool)
        ``(i, j, state, pos, done)``: where the walk left off, the number of
        operations now in ``ops`` and whether the path is complete.
    """
    while True:
        if i == r0 and r0 > 0:
            return i, j, state, pos, False
        if state == STATE_H and (i == 0 or j == 0):
            i, j, pos, done = boundary_step(mode, i, j, ops, pos)
        else:
            i, j, state, pos, done = direction_step(dirs[i - r0 - 1, j], a, b, i, j, state, ops, pos)
        if done:
            return i, j, state, pos, True


@njit(cache=True, nogil=True)
def _score_tile(a, b, matrix, gap_open, gap_extend, floor, i0, i1, j0, j1, row_h, row_f, col_h,
                col_e, corner, ti):
    """Compute tile rows ``i0+1..i1`` x columns ``j0+1..j1`` of :func:`tiled_score_kernel`.

    On entry ``row_h``/``row_f[j0+1..j1]`` hold ``H``/``F`` of row ``i0``,
    ``col_h``/``col_e[i0+1..i1]`` hold ``H``/``E`` of column ``j0`` and
    ``corner[ti]`` holds ``H(i0, j0)``; on return they hold row ``i1``, column
    ``j1`` and ``H(i0, j1)`` (the corner of the tile to the right), in place.

    Returns
    -------
    (int, int, int)
        The tile's largest ``H`` and its cell ``(i, j)``, first in row-major order.
    """
    open_extend = gap_open + gap_extend
    # Views from column j0, indexed from 1 like fill_two_rows (a constant start
    # lets LLVM drop the negative-index checks: 25% faster).
    hs = row_h[j0:j1 + 1]
    fs = row_f[j0:j1 + 1]
    bs = b[j0:j1]
    width = j1 - j0 + 1
    h_corner = corner[ti]
    corner[ti] = row_h[j1]
    best = NEG_INF
    best_i = 0
    best_j = 0
    i = i0 + 1
    while i < i1:
        # Two rows per sweep, as in fill_two_rows.
        s1 = matrix[a[i - 1]]
        s2 = matrix[a[i]]
        h_diag1 = h_corner
        h_left1 = col_h[i]
        e1 = col_e[i]
        h_diag2 = h_left1
        h_left2 = col_h[i + 1]
        e2 = col_e[i + 1]
        h_corner = h_left2
        best1 = NEG_INF
        best2 = NEG_INF
        k1 = 0
        k2 = 0
        for j in range(1, width):
            c = bs[j - 1]
            h_up = hs[j]
            h1, e1, f1 = _cell(h_diag1, h_left1, h_up, e1, fs[j], s1[c], open_extend,
                               gap_extend, floor)
            h2, e2, f2 = _cell(h_diag2, h_left2, h1, e2, f1, s2[c], open_extend, gap_extend,
                               floor)
            k1 = j if h1 > best1 else k1
            best1 = max(best1, h1)
            k2 = j if h2 > best2 else k2
            best2 = max(best2, h2)
            h_diag1 = h_up
            h_left1 = h1
            h_diag2 = h1
            h_left2 = h2
            hs[j] = h2
            fs[j] = f2
        if best1 > best:
            best, best_i, best_j = best1, i, j0 + k1
        if best2 > best:
            best, best_i, best_j = best2, i + 1, j0 + k2
        col_h[i] = h_left1
        col_e[i] = e1
        col_h[i + 1] = h_left2
        col_e[i + 1] = e2
        i += 2
    if i == i1:
        srow = matrix[a[i - 1]]
        h_diag = h_corner
        h_left = col_h[i]
        e = col_e[i]
        best1 = NEG_INF
        k1 = 0
        for j in range(1, width):
            h_up = hs[j]
            h, e, f = _cell(h_diag, h_left, h_up, e, fs[j], srow[bs[j - 1]], open_extend,
                            gap_extend, floor)
            k1 = j if h > best1 else k1
            best1 = max(best1, h)
            h_diag = h_up
            h_left = h
            hs[j] = h
            fs[j] = f
        if best1 > best:
            best, best_i, best_j = best1, i, j0 + k1
        col_h[i] = h_left
        col_e[i] = e
    return best, best_i, best_j


@njit(cache=True, nogil=True)
def _tile_reach(row_h, col_h, h_corner, i0, i1, j0, j1, m, n, max_sub):
    """The most a local path through tile rows ``i0+1..i1`` x columns ``j0+1..j1`` can score:
    the largest H on its border (row ``i0``, column ``j0``, their corner; E and F never exceed
    the H of their cell), at least 0 (a path may start inside), plus ``max_sub`` for each of
    the rows and columns left after ``(i0, j0)``."""
    border = max(h_corner, 0)
    for j in range(j0 + 1, j1 + 1):
        border = max(border, row_h[j])
    for i in range(i0 + 1, i1 + 1):
        border = max(border, col_h[i])
    return np.int64(border) + np.int64(max_sub) * min(m - i0, n - j0)


@njit(cache=True, nogil=True)
def _skip_tile(row_h, row_f, col_h, col_e, corner, ti, i0, i1, j0, j1):
    """Leave a pruned tile's bottom row and right column at lower bounds (H = 0, E = F = -inf),
    in place of :func:`_score_tile`; ``H(i0, j1)`` is saved exact for the tile to the right."""
    corner[ti] = row_h[j1]
    for j in range(j0 + 1, j1 + 1):
        row_h[j] = 0
        row_f[j] = NEG_INF
    for i in range(i0 + 1, i1 + 1):
        col_h[i] = 0
        col_e[i] = NEG_INF


@njit(cache=True, parallel=True)
def tiled_score_kernel(a, b, matrix, gap_open, gap_extend, mode, tile_rows, tile_cols, prune, pruned):
    """Score and end cell like :func:`score_kernel` (not transposed), over tiles in parallel.

    The matrix is cut into tiles of ``tile_rows`` x ``tile_cols`` cells; the
    tiles of one anti-diagonal of tiles (a wave) are independent and run in one
    ``prange``. Tiles pass boundaries through a row buffer (``H``, ``F`` of
    every column), a column buffer (``H``, ``E`` of every row) and one corner
    value per tile row: a tile's diagonal predecessor ``H(i0, j0)`` is
    overwritten by the tile to its left one wave earlier, so that tile saves it
    first. Memory is O(m + n); the end-cell rule is applied to per-tile bests
    reduced lexicographically (score, then smallest ``i``, then smallest ``j``).

    Block pruning (local mode with ``prune``): before each wave the best score found so far
    is taken, and a tile of the wave that cannot reach it (:func:`_tile_reach`) is skipped,
    its outputs left at lower bounds (:func:`_skip_tile`). Cells on optimal paths keep their
    exact values, so the result is unchanged (the argument of docs/GPU.md, "Block pruning");
    ``pruned[0]`` gets the cells skipped.

    Returns
    -------
    (int, int, int)
        ``(score, query_end, target_end)`` with ``a`` the query and ``b`` the
        target, identical to :func:`score_kernel`'s.
    """
    m = a.shape[0]
    n = b.shape[0]
    floor = 0 if mode == LOCAL else NEG_INF
    col0_gap = mode != LOCAL
    row_h = np.empty(n + 1, np.int32)
    row_f = np.empty(n + 1, np.int32)
    initial_row(n + 1, gap_open, gap_extend, mode == GLOBAL, row_h, row_f)
    col_h = np.empty(m + 1, np.int32)
    col_e = np.full(m + 1, NEG_INF, np.int32)
    col_h[0] = 0
    for i in range(1, m + 1):
        col_h[i] = -(gap_open + i * gap_extend) if col0_gap else 0
    tiles_down = (m + tile_rows - 1) // tile_rows
    tiles_across = (n + tile_cols - 1) // tile_cols
    corner = np.empty(tiles_down, np.int32)
    for ti in range(tiles_down):
        corner[ti] = col_h[ti * tile_rows]
    best = np.full(tiles_down, NEG_INF, np.int64)
    best_i = np.zeros(tiles_down, np.int64)
    best_j = np.zeros(tiles_down, np.int64)
    skipped = np.zeros(tiles_down, np.int64)
    pruning = prune and mode == LOCAL and tiles_down > 0
    max_sub = max(0, matrix.max())
    for wave in range(tiles_down + tiles_across - 1):
        first = max(0, wave - tiles_across + 1)
        last = min(tiles_down - 1, wave)
        seen = best.max() if pruning else np.int64(NEG_INF)
        for k in prange(last - first + 1):
            ti = first + k
            tj = wave - ti
            i0 = ti * tile_rows
            j0 = tj * tile_cols
            i1 = min(i0 + tile_rows, m)
            j1 = min(j0 + tile_cols, n)
            if pruning and _tile_reach(row_h, col_h, corner[ti], i0, i1, j0, j1, m, n, max_sub) < seen:
                _skip_tile(row_h, row_f, col_h, col_e, corner, ti, i0, i1, j0, j1)
                skipped[ti] += (i1 - i0) * (j1 - j0)
            else:
                s, si, sj = _score_tile(a, b, matrix, gap_open, gap_extend, floor, i0, i1, j0, j1,
                                        row_h, row_f, col_h, col_e, corner, ti)
                if s > best[ti] or (s == best[ti] and (si < best_i[ti] or
                                                       (si == best_i[ti] and sj < best_j[ti]))):
                    best[ti] = s
                    best_i[ti] = si
                    best_j[ti] = sj
    pruned[0] = skipped.sum()
    # Tile rows ascend in i, so a strict > keeps the smallest (i, j) among equal maxima.
    score = 0
    end_i = 0
    end_j = 0
    for ti in range(tiles_down):
        if best[ti] > score:
            score = best[ti]
            end_i = best_i[ti]
            end_j = best_j[ti]
    row_h[0] = -(gap_open + m * gap_extend) if col0_gap and m > 0 else 0
    return final_end(mode, False, row_h, n + 1, m, score, end_i, end_j)


def cigar_from_ops(ops: np.ndarray) -> Cigar:
    """CIGAR of path operations given end to start."""
    ops = ops[::-1]
    if ops.size == 0:
        return Cigar(())
    starts = np.flatnonzero(np.concatenate(([True], ops[1:] != ops[:-1])))
    lengths = np.diff(np.append(starts, ops.size))
    return Cigar(tuple(zip(lengths.tolist(), _OP_ARRAY[ops[starts]].tolist())))


_OP_ARRAY = np.array(list(OP_LETTERS))
""":data:`OP_LETTERS` as an array, to look the letters of many runs up at once."""
