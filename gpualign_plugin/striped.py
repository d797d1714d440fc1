"""Striped (Farrar) score kernel of Gotoh's recurrence: one pair, 64 lanes of one core's SIMD units.

Shared core: :func:`striped_score` gives exactly the score and end cell of
:func:`gpualign_plugin.gotoh.score_kernel` (docs/ALGORITHMS.md, "Pairwise": the
recurrence, boundaries and end-cell rule, ties included) for local, global and
semiglobal alignment; :mod:`gpualign_plugin.pairwise.cpu` uses it for the
single-threaded score and for the end cell of every alignment.

**Layout** (Farrar, "Striped Smith-Waterman speeds database searches six times over
other SIMD implementations", Bioinformatics 2007). One sequence, the *striped*
one (``P`` residues, position ``p = 1..P``), is cut into :data:`LANES` lanes of
``seg_len`` consecutive residues (``ceil(P / LANES)`` rounded up to a multiple of
4); position ``p`` sits in lane ``(p - 1) // seg_len`` of segment
``(p - 1) % seg_len``. The other sequence is walked one residue (column
``k = 1..K``) at a time: a column is one pass over the segments, each segment one
vector update of :data:`LANES` cells, the lane loop innermost so that LLVM turns
it into vector instructions (via :mod:`gpualign_plugin.runtime.lanes`). Vertical
gaps that cross from one lane to the next are completed exactly while the next
column is computed (see :func:`_columns`) instead of by Farrar's "lazy F" loop.
The striped sequence is the longer one up to :data:`STRIPE_MAX` residues, else the
shorter. Positions past ``P`` (padding) score 0 against everything, so their
values stay between the smallest and the largest real value of the matrix and
can never change a real cell, the end cell or the range check below.

**Exactness.** Each pair runs first in 16-bit lanes (saturating additions) when the
scheme's scores and gap costs are small and every boundary value fits, and goes
on in 32-bit lanes from the first column whose values leave the safe band
``[LOW, HIGH]`` (``-32768`` and ``32767`` moved inwards by the largest step one
cell can make): a column computed from a column inside the band cannot saturate,
so the state handed over is exact, and the rest of the pair runs in 32 bits.
32-bit scores are safe by :meth:`~gpualign_plugin.scoring.ScoringScheme.check_score_range`,
which the callers apply.
"""

from __future__ import annotations

import numpy as np
from numba import njit
from numba.core import types
from numba.extending import overload

from gpualign_plugin.gotoh import GLOBAL, LOCAL, SEMIGLOBAL
from gpualign_plugin.runtime.lanes import add, maximum, minimum
from gpualign_plugin.scoring import NEG_INF

LANES = 64
"""Cells per vector update: 2 AVX-512 (4 AVX2) registers of int16, 4 (8) of int32; the
per-column work outside the segment loop spreads over as many cells."""

STRIPE_MAX = 32_768
"""Longest sequence striped: its state (``H`` and ``G``) and a profile row then stay within
384 KiB in 32-bit lanes, inside one core's L2 cache; above it the shorter sequence is striped."""

_TRACK_MAX, _TRACK_LAST, _TRACK_NONE = 0, 1, 2
"""What the column loop tracks: the largest ``H`` (local), ``H`` at the last
striped position (semiglobal with the query striped), or nothing (the end cell is
read from the final column)."""

_BIG = 1 << 62

_UNROLL = 4
"""Segments per trip of the lane loop (``seg_len`` is a multiple): the values a lane
carries from segment to segment stay in registers for four of them."""


@njit(cache=True, nogil=True, inline="always")
def _boundary(gap, k, gap_open, gap_extend):
    return -(gap_open + k * gap_extend) if gap and k > 0 else 0


@njit(cache=True, nogil=True, inline="always")
def _cell(h_up, e_up, score, diag, f, carry, neg_oe, neg_ext, floor):
    """One striped cell of column ``k`` from column ``k-1``'s values (scalars, no arrays:
    array arguments would add reference counting calls that stop vectorisation).

    ``h_up`` is the cell's ``H`` in column ``k-1`` before the entering vertical gap
    ``carry`` is added, ``e_up`` its horizontal gap value. Returns ``H`` and ``E``
    of the cell, then what the next segment of the same lane needs: its diagonal
    (this cell's exact ``H`` in column ``k-1``), the vertical gap chain and the
    entering chain one step further.
    """
    h_left = maximum(h_up, carry)
    e = maximum(add(h_left, neg_oe), add(e_up, neg_ext))
    h = maximum(maximum(add(diag, score), e), maximum(f, floor))
    f = maximum(add(h, neg_oe), add(f, neg_ext))
    return h, e, h_left, f, add(carry, neg_ext)


def _extremes(h, top, other, segment, local):
    """Running per-lane statistics of a column (compiled per ``local``'s type, below)."""


@overload(_extremes)
def _extremes_impl(h, top, other, segment, local):
    # local is None: other is the lane's smallest value (the range check of global and
    # semiglobal); otherwise the first segment holding the lane's largest value.
    if isinstance(local, types.NoneType):
        return lambda h, top, other, segment, local: (maximum(top, h), minimum(other, h))
    return lambda h, top, other, segment, local: (maximum(top, h),
                                                  segment if h > top else other)


@njit(cache=True, nogil=True)
def _columns(profile, seg_len, seq, k0, k1, H, G, carry, work, neg_oe, neg_ext, floor, neg, low,
             high, iter_gap, gap_open, gap_extend, track, local, ties_to_smaller_p, last_lane,
             last_segment):
    """Run columns ``k0+1..k1`` over the striped state; return the last column done.

    Compiled for int16 and int32 lanes: ``profile`` (``alphabet x seg_len x
    LANES``, flat), the state ``H``, ``G`` (``seg_len x LANES``) and ``carry``
    (``1 + LANES``; ``carry[0]`` stays minus infinity), ``work`` (``4 x LANES`` scratch) and the constants
    ``neg_oe = -(open + extend)``, ``neg_ext = -extend``, ``floor`` (0 local,
    else ``neg``), ``neg`` (minus infinity) and the safe band ``low``/``high``
    all have the lane type.

    State after column ``k``: ``H`` holds each cell's value from the vertical
    gaps inside its own lane only, ``carry[1 + l]`` the vertical gap entering
    lane ``l`` from the lanes above (run down the lane, it completes ``H``: the
    exact value at segment ``s`` is ``max(H, carry[1 + l] - s * extend)``), ``G``
    the horizontal gap values of column ``k``. The carries come from one scalar
    sweep over the lanes and are added while column ``k+1`` reads column ``k``,
    so each column is one pass (Farrar's lazy-F loop would repeat passes until
    the chains die: up to ``LANES`` on long similar sequences). A column's
    largest value never comes from a carry (a carried gap is below the cell it
    left), so the end-cell tracking reads ``H`` as it is.

    ``track`` (int64) is updated after every column: with ``local`` (``True``;
    ``None`` otherwise) the best value, its 1-based striped position and its
    column, ties going to the smaller position when ``ties_to_smaller_p`` (the
    query is striped) and else to the earlier column; without, the best ``H`` at
    the last striped position (``last_lane``, ``last_segment``) and its column
    when ``track[3]`` is 1 (semiglobal with the query striped). Returns ``k1``,
    or the first column whose values left ``[low, high]`` (that column is
    complete and exact; the caller continues in wider lanes).
    """
    column = seg_len * LANES
    last = column - LANES
    # 32-bit scalars for the per-column sweeps (lanes.add keeps them in that width:
    # Numba's own arithmetic would widen them to 64 bits, halving the vectors).
    lane_drop = np.int32((seg_len - 1) * np.int64(neg_ext))
    segment_drop = np.int32(seg_len * np.int64(neg_ext))
    neg32 = np.int32(neg)
    for k in range(k0 + 1, k1 + 1):
        # A view per column: indices that are provably non-negative keep Numba's
        # negative-index handling (a gather) out of the vector loop.
        code = np.int64(seq[k - 1])
        scores = profile[code * column:(code + 1) * column]
        # work rows: diagonal, vertical gap chain, largest value, smallest value or
        # first segment of the largest. Segment 0's diagonal is the previous
        # column's last segment moved down one lane.
        above = H[last - 1:last - 1 + LANES]
        for lane in range(LANES):
            work[lane] = maximum(np.int32(above[lane]), add(np.int32(carry[lane]), lane_drop))
            work[LANES + lane] = neg
            work[2 * LANES + lane] = low
            work[3 * LANES + lane] = high
        work[0] = _boundary(iter_gap, k - 1, gap_open, gap_extend)
        work[LANES] = add(work.dtype.type(_boundary(iter_gap, k, gap_open, gap_extend)), neg_oe)
        for trip in range(seg_len // _UNROLL):
            base = trip * (_UNROLL * LANES)
            s0 = work.dtype.type(trip * _UNROLL)
            s1 = add(s0, work.dtype.type(1))
            s2 = add(s1, work.dtype.type(1))
            s3 = add(s2, work.dtype.type(1))
            # work indexed by hand (one base pointer, constant offsets) keeps LLVM's
            # runtime alias checks few enough to vectorise the lane loop.
            for lane in range(LANES):
                d = work[lane]
                v = work[LANES + lane]
                c = carry[1 + lane]
                top = work[2 * LANES + lane]
                other = work[3 * LANES + lane]
                i = base + lane
                h, e, d, v, c = _cell(H[i], G[i], scores[i], d, v, c, neg_oe, neg_ext, floor)
                H[i] = h
                G[i] = e
                top, other = _extremes(h, top, other, s0, local)
                i = base + LANES + lane
                h, e, d, v, c = _cell(H[i], G[i], scores[i], d, v, c, neg_oe, neg_ext, floor)
                H[i] = h
                G[i] = e
                top, other = _extremes(h, top, other, s1, local)
                i = base + 2 * LANES + lane
                h, e, d, v, c = _cell(H[i], G[i], scores[i], d, v, c, neg_oe, neg_ext, floor)
                H[i] = h
                G[i] = e
                top, other = _extremes(h, top, other, s2, local)
                i = base + 3 * LANES + lane
                h, e, d, v, c = _cell(H[i], G[i], scores[i], d, v, c, neg_oe, neg_ext, floor)
                H[i] = h
                G[i] = e
                top, other = _extremes(h, top, other, s3, local)
                work[lane] = d
                work[LANES + lane] = v
                carry[1 + lane] = c
                work[2 * LANES + lane] = top
                work[3 * LANES + lane] = other
        # The chain entering lane l: what leaves lane l-1, or what entered it, run down it.
        entering = neg32
        for lane in range(LANES):
            leaving = np.int32(work[LANES + lane])
            carry[1 + lane] = maximum(entering, neg32)
            entering = maximum(leaving, add(entering, segment_drop))
        top = low
        bottom = high
        for lane in range(LANES):
            top = maximum(top, work[2 * LANES + lane])
            bottom = minimum(bottom, work[3 * LANES + lane])
        if local is not None:
            bottom = low
            if top > track[0] or (ties_to_smaller_p and top == track[0] and top > 0):
                # The first lane holding the largest value, then its first segment.
                lane_first = LANES
                for lane in range(LANES):
                    lane_first = min(lane_first, lane if work[2 * LANES + lane] == top else LANES)
                first = (lane_first * np.int64(seg_len)
                         + np.int64(work[3 * LANES + lane_first]) + 1)
                if top > track[0] or first < track[1]:
                    track[0] = top
                    track[1] = first
                    track[2] = k
        elif track[3] == 1:
            value = max(np.int64(H[last_segment * LANES + last_lane]),
                        np.int64(carry[1 + last_lane]) + last_segment * np.int64(neg_ext))
            if value > track[0]:
                track[0] = value
                track[2] = k
        if top > high or bottom < low:
            return k
    return k1


def _profile(stripe, matrix, seg_len, dtype):
    """Substitution scores of every letter against each striped position, padding scoring 0."""
    size = matrix.shape[0]
    extended = np.zeros((size, size + 1), dtype=dtype)
    extended[:, :size] = matrix
    padded = np.full(seg_len * LANES, size, dtype=np.intp)
    padded[:len(stripe)] = stripe
    return np.ascontiguousarray(extended[:, padded.reshape(LANES, seg_len).T]).ravel()


def fits_int16(matrix, gap_open: int, gap_extend: int, longest_gap: int) -> bool:
    """Whether 16-bit lanes can start: small scores and gap costs, every boundary inside the band."""
    margin = _margin(matrix, gap_open, gap_extend)
    return margin <= 1000 and gap_open + longest_gap * gap_extend <= 32768 - 2 * margin


def _margin(matrix, gap_open, gap_extend) -> int:
    # The most one cell can move a value: a substitution, or a gap's open and two extensions.
    return int(np.abs(matrix).max()) + gap_open + 2 * gap_extend


def striped_score(a, b, matrix, gap_open: int, gap_extend: int, mode: int) -> tuple[int, int, int]:
    """Score and end cell of the best alignment of ``a`` (query) and ``b`` (target), striped.

    Parameters
    ----------
    a, b : numpy.ndarray
        ``uint8`` codes of the query (rows ``i``) and the target (columns ``j``),
        each at least one residue long.
    matrix : numpy.ndarray
        ``int32`` substitution scores, ``matrix[query code, target code]``.
    gap_open, gap_extend : int
        A gap of length ``k`` costs ``gap_open + k * gap_extend``.
    mode : int
        :data:`~gpualign_plugin.gotoh.LOCAL`, ``GLOBAL`` or ``SEMIGLOBAL``.

    Returns
    -------
    (int, int, int)
        ``(score, query_end, target_end)``, identical to
        :func:`gpualign_plugin.gotoh.score_kernel`'s; local with no positive cell
        gives ``(0, 0, 0)``.
    """
    # Stripe the longer sequence when its state fits the core's cache (fewer, longer
    # columns: the per-column work is paid fewer times), else the shorter one.
    longer_query = len(a) >= len(b)
    transposed = longer_query != (max(len(a), len(b)) <= STRIPE_MAX)
    stripe, walk = (b, a) if transposed else (a, b)
    scores = matrix if transposed else matrix.T
    P, K = len(stripe), len(walk)
    seg_len = -(-P // (LANES * _UNROLL)) * _UNROLL
    # Which sides carry gap costs at their boundary (docs/ALGORITHMS.md's table).
    stripe_gap = mode == GLOBAL or (mode == SEMIGLOBAL and not transposed)
    iter_gap = mode == GLOBAL or (mode == SEMIGLOBAL and transposed)
    if mode == LOCAL:
        kind = _TRACK_MAX
    elif mode == SEMIGLOBAL and not transposed:
        kind = _TRACK_LAST
    else:
        kind = _TRACK_NONE
    track = np.zeros(4, dtype=np.int64)
    if kind == _TRACK_LAST:
        track[0] = _boundary(True, P, gap_open, gap_extend)
        track[3] = 1
    positions = np.arange(1, seg_len * LANES + 1, dtype=np.int64)
    column0 = -(gap_open + positions * gap_extend) if stripe_gap else np.zeros_like(positions)
    state = [np.ascontiguousarray(column0.reshape(LANES, seg_len).T).ravel(),
             np.full(seg_len * LANES, NEG_INF, dtype=np.int64),
             np.full(1 + LANES, NEG_INF, dtype=np.int64)]
    done = 0
    longest_gap = max(seg_len * LANES if stripe_gap else 0, K if iter_gap else 0)
    if seg_len < 32767 and fits_int16(matrix, gap_open, gap_extend, longest_gap):
        margin = _margin(matrix, gap_open, gap_extend)
        state = [np.maximum(x, -32768).astype(np.int16) for x in state]
        done = _run(np.int16, stripe, walk, scores, seg_len, 0, state, gap_open, gap_extend,
                    mode, -32768, -32768 + margin, 32767 - margin, iter_gap, track, kind,
                    not transposed, P)
    if done < K:
        state = [x.astype(np.int32) for x in state]
        _run(np.int32, stripe, walk, scores, seg_len, done, state, gap_open, gap_extend, mode,
             NEG_INF, -(1 << 31), (1 << 31) - 1, iter_gap, track, kind, not transposed, P)
    H, _, carry = state
    # The final column, exact: each lane's entering gap added (see _columns).
    segment = np.arange(seg_len, dtype=np.int64)[:, None]
    final = np.maximum(H.reshape(seg_len, LANES).astype(np.int64),
                       carry[1:].astype(np.int64)[None, :] - segment * gap_extend).T.ravel()[:P]
    return _end_cell(mode, kind, transposed, final, K, track,
                     _boundary(iter_gap, K, gap_open, gap_extend))


def _run(dtype, stripe, walk, scores, seg_len, k0, state, gap_open, gap_extend, mode, neg, low,
         high, iter_gap, track, kind, ties_to_smaller_p, P) -> int:
    lane = dtype
    H, G, carry = state
    return _columns(_profile(stripe, scores, seg_len, dtype), seg_len, walk, k0, len(walk), H, G,
                    carry, np.empty(4 * LANES, dtype=dtype), lane(-(gap_open + gap_extend)),
                    lane(-gap_extend), lane(0 if mode == LOCAL else neg), lane(neg), lane(low),
                    lane(high), iter_gap, gap_open, gap_extend, track,
                    True if kind == _TRACK_MAX else None, ties_to_smaller_p, (P - 1) // seg_len,
                    (P - 1) % seg_len)


def _end_cell(mode, kind, transposed, final, K, track, corner_left):
    """``(score, query_end, target_end)`` from the tracking and the exact final column.

    ``final[p - 1]`` is ``H`` of striped position ``p`` in the last column ``K``;
    ``corner_left`` is the boundary value ``H(0, K)`` of the walked side.
    """
    P = len(final)
    if kind == _TRACK_MAX:
        if track[0] <= 0:
            return 0, 0, 0
        p, k = int(track[1]), int(track[2])
        return (int(track[0]), k, p) if transposed else (int(track[0]), p, k)
    if kind == _TRACK_LAST:
        return int(track[0]), P, int(track[2])
    if mode == GLOBAL:
        return (int(final[-1]), K, P) if transposed else (int(final[-1]), P, K)
    # Semiglobal with the target striped: the end cells (m, j) form the final column.
    values = np.concatenate(([corner_left], final))
    j = int(np.argmax(values))
    return int(values[j]), K, j
