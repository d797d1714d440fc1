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

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

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

_UNROLL = 4
"""Segments per trip of the lane loop (``seg_len`` is a multiple): the values a lane
carries from segment to segment stay in registers for four of them."""


@njit(cache=True, nogil=True, inline="always")
def _boundary(gap, k, gap_open, gap_extend):
    """``H`` of boundary cell ``k`` of a side: ``-(open + k * extend)`` if it carries gap costs."""
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


@njit(cache=True, nogil=True, inline="always")
def _sweep(buffer, source, target, shift, drop):
    """One step of a prefix maximum: ``target[l] = max(source[l], source[l - shift] + drop)``."""
    for lane in range(LANES):
        buffer[target + lane] = maximum(buffer[source + lane],
                                        add(buffer[source - shift + lane], drop))


def _top_diagonal(edge, k, iter_gap, gap_open, gap_extend):
    """``H`` of the row above the striped part at column ``k - 1`` (compiled per ``edge``'s type)."""


@overload(_top_diagonal)
def _top_diagonal_impl(edge, k, iter_gap, gap_open, gap_extend):
    # edge is None: the matrix's own top boundary; otherwise a band's edge row (local mode).
    if isinstance(edge, types.NoneType):
        return lambda edge, k, iter_gap, gap_open, gap_extend: _boundary(iter_gap, k - 1, gap_open,
                                                                          gap_extend)
    return lambda edge, k, iter_gap, gap_open, gap_extend: edge[0, k - 1]


def _top_chain(edge, k, work, iter_gap, gap_open, gap_extend, neg_oe, neg):
    """The vertical gap entering the first striped row at column ``k``, in ``work``'s type
    (compiled per ``edge``'s type)."""


@overload(_top_chain)
def _top_chain_impl(edge, k, work, iter_gap, gap_open, gap_extend, neg_oe, neg):
    if isinstance(edge, types.NoneType):
        return lambda edge, k, work, iter_gap, gap_open, gap_extend, neg_oe, neg: add(
            work.dtype.type(_boundary(iter_gap, k, gap_open, gap_extend)), neg_oe)
    # A chain below the lane type's minus infinity is below 0: nothing in local mode.
    return lambda edge, k, work, iter_gap, gap_open, gap_extend, neg_oe, neg: work.dtype.type(
        max(edge[1, k], np.int64(neg)))


def _record_edge(edge, k, H, carry, work, seg_len, neg_ext):
    """Keep column ``k``'s exact edge below the striped part (per ``edge``'s type)."""


@overload(_record_edge)
def _record_edge_impl(edge, k, H, carry, work, seg_len, neg_ext):
    if isinstance(edge, types.NoneType):
        return lambda edge, k, H, carry, work, seg_len, neg_ext: None

    def record(edge, k, H, carry, work, seg_len, neg_ext):
        # The last lane's last segment completed by its carry, and the vertical gap
        # leaving it: its own chain or the carry run past the lane.
        entering = np.int64(carry[LANES])
        edge[0, k] = max(np.int64(H[seg_len * LANES - 1]), entering + (seg_len - 1) * np.int64(neg_ext))
        edge[1, k] = max(np.int64(work[2 * LANES - 1]), entering + seg_len * np.int64(neg_ext))

    return record


@njit(cache=True, nogil=True)
def _columns(profile, seg_len, seq, k0, k1, H, G, carry, work, sweep, neg_oe, neg_ext, floor, neg,
             low, high, iter_gap, gap_open, gap_extend, track, local, ties_to_smaller_p, last_lane,
             last_segment, edge_in, edge_out):
    """Run columns ``k0+1..k1`` over the striped state; return the last column done.

    Compiled for int16 and int32 lanes: ``profile`` (``alphabet x seg_len x
    LANES``, flat), the state ``H``, ``G`` (``seg_len x LANES``) and ``carry``
    (``1 + LANES``; ``carry[0]`` stays minus infinity), ``work`` (``4 x LANES``
    scratch) and the constants ``neg_oe = -(open + extend)``, ``neg_ext =
    -extend``, ``floor`` (0 local, else ``neg``), ``neg`` (minus infinity) and
    the safe band ``low``/``high`` all have the lane type; ``sweep`` is
    ``4 x LANES`` of a wider type, filled with a value far below any score.

    State after column ``k``: ``H`` holds each cell's value from the vertical
    gaps inside its own lane only, ``carry[1 + l]`` the vertical gap entering
    lane ``l`` from the lanes above (run down the lane, it completes ``H``: the
    exact value at segment ``s`` is ``max(H, carry[1 + l] - s * extend)``), ``G``
    the horizontal gap values of column ``k``. The carries come from a prefix
    maximum over the lanes and are added while column ``k+1`` reads column ``k``,
    so each column is one pass (Farrar's lazy-F loop would repeat passes until
    the chains die: up to ``LANES`` on long similar sequences). A column's
    largest value never comes from a carry (a carried gap is below the cell it
    left), so the end-cell tracking reads ``H`` as it is.

    ``track`` (int64) is updated after every column: with ``local`` (``True``;
    ``None`` otherwise) the best value, its 1-based striped position and its
    column, ties going to the smaller position when ``ties_to_smaller_p`` (the
    query is striped) and else to the earlier column; without, the best ``H`` at
    the last striped position (``last_lane``, ``last_segment``) and its column
    when ``track[3]`` is 1 (semiglobal with the query striped). Returns ``(k1,
    False)``, or ``(k, True)`` for the first column ``k`` whose values left
    ``[low, high]`` (that column is complete and exact; the caller continues in
    wider lanes).

    ``edge_in`` and ``edge_out`` are None, or a band's edges (:func:`_banded`; local mode):
    ``int64`` arrays ``(2, K + 1)``, per column ``H`` of the row above the striped part and
    the vertical gap entering its first row (read), and the same below its last row (written
    after every column).
    """
    column = seg_len * LANES
    last = column - LANES
    # 32 bits for the diagonal shift (lanes.add keeps that width: Numba's own
    # arithmetic would widen to 64 bits, halving the vectors).
    lane_drop = np.int32((seg_len - 1) * np.int64(neg_ext))
    # sweep (4 x LANES, wide enough for the lane type's values minus 32 lanes' drops:
    # int32 for int16 lanes, int64 for int32): two buffers, each after LANES of padding
    # far below any score (filled by the caller), so that a shifted read before lane 0
    # adds nothing.
    drops = np.empty(6, dtype=sweep.dtype)
    for step in range(6):
        drops[step] = (1 << step) * seg_len * np.int64(neg_ext)
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
        work[0] = _top_diagonal(edge_in, k, iter_gap, gap_open, gap_extend)
        work[LANES] = _top_chain(edge_in, k, work, iter_gap, gap_open, gap_extend, neg_oe, neg)
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
        # The chain entering lane l: the best of what leaves each lane above it, run down
        # the lanes between (a prefix maximum in six vector sweeps: log2(LANES)).
        sweep[LANES] = neg
        for lane in range(LANES - 1):
            sweep[LANES + 1 + lane] = work[LANES + lane]
        _sweep(sweep, LANES, 3 * LANES, 1, drops[0])
        _sweep(sweep, 3 * LANES, LANES, 2, drops[1])
        _sweep(sweep, LANES, 3 * LANES, 4, drops[2])
        _sweep(sweep, 3 * LANES, LANES, 8, drops[3])
        _sweep(sweep, LANES, 3 * LANES, 16, drops[4])
        _sweep(sweep, 3 * LANES, LANES, 32, drops[5])
        for lane in range(LANES):
            carry[1 + lane] = maximum(sweep[LANES + lane], sweep.dtype.type(neg))
        _record_edge(edge_out, k, H, carry, work, seg_len, neg_ext)
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
            return k, True
    return k1, False


@njit(cache=True, nogil=True)
def _start(H, G, carry, profile, stripe, walk, matrix, transposed, seg_len, stripe_gap,
           gap_open, gap_extend, neg):
    """Column 0 into the state, minus infinity for ``G`` and the carries, and the profile.

    ``profile[(c * seg_len + s) * LANES + l]`` is the score of walked letter ``c``
    against the striped residue at lane ``l``, segment ``s`` (0 for padding), for
    every letter ``c`` of ``walk`` (rows of other letters are left unset).
    """
    P = stripe.shape[0]
    letters = matrix.shape[0]
    column = seg_len * LANES
    # Scores by (walked letter, striped letter), one more striped letter for padding.
    scores = np.zeros((letters, letters + 1), dtype=H.dtype)
    for c in range(letters):
        for x in range(letters):
            scores[c, x] = matrix[x, c] if not transposed else matrix[c, x]
    # The striped residues in memory order (lane fastest), padding as letter ``letters``.
    order = np.full(column, letters, dtype=np.int64)
    for s in range(seg_len):
        for lane in range(LANES):
            p = lane * seg_len + s
            if p < P:
                order[s * LANES + lane] = stripe[p]
            H[s * LANES + lane] = -(gap_open + (p + 1) * gap_extend) if stripe_gap else 0
    # Rows only for the letters the walked sequence has (4 of the 15 DNA codes, mostly).
    used = np.zeros(letters, dtype=np.bool_)
    for k in range(walk.shape[0]):
        used[walk[k]] = True
    for c in range(letters):
        if used[c]:
            row = profile[c * column:(c + 1) * column]
            for i in range(column):
                row[i] = scores[c, order[i]]
    G[:] = neg
    carry[:] = neg


@njit(cache=True, nogil=True)
def _setup(stripe, walk, matrix, gap_open, gap_extend, mode, transposed, local):
    """State of a striped pair before its first column (:func:`_striped`'s arguments).

    Returns ``(seg_len, H, G, carry, profile, H16, G16, carry16, profile16, track,
    position)``: the 32-bit state and profile, the 16-bit ones (empty when the pair
    starts in 32 bits; ``profile`` is empty while the pair runs in 16 bits), the
    end-cell ``track`` of :func:`_columns`, and ``position`` (int64): columns done,
    columns done in 16-bit lanes (-1: none), 1 while the pair runs in 16 bits.
    """
    P = stripe.shape[0]
    K = walk.shape[0]
    seg_len = (P + LANES * _UNROLL - 1) // (LANES * _UNROLL) * _UNROLL
    column = seg_len * LANES
    letters = matrix.shape[0]
    # Which sides carry gap costs at their boundary (docs/ALGORITHMS.md's table).
    stripe_gap = mode == GLOBAL or (mode == SEMIGLOBAL and not transposed)
    iter_gap = mode == GLOBAL or (mode == SEMIGLOBAL and transposed)
    track = np.zeros(4, dtype=np.int64)
    if local is None and mode == SEMIGLOBAL and not transposed:
        track[0] = -(gap_open + P * gap_extend)
        track[3] = 1
    H = np.empty(column, dtype=np.int32)
    G = np.empty(column, dtype=np.int32)
    carry = np.empty(1 + LANES, dtype=np.int32)
    longest_gap = max(column if stripe_gap else 0, K if iter_gap else 0)
    margin = _margin(matrix, gap_open, gap_extend)
    use16 = (margin <= 1000 and seg_len < 32767
             and gap_open + longest_gap * gap_extend <= 32768 - 2 * margin)
    position = np.zeros(3, dtype=np.int64)
    if use16:
        H16 = np.empty(column, dtype=np.int16)
        G16 = np.empty(column, dtype=np.int16)
        carry16 = np.empty(1 + LANES, dtype=np.int16)
        profile16 = np.empty(letters * column, dtype=np.int16)
        profile = np.empty(0, dtype=np.int32)
        _start(H16, G16, carry16, profile16, stripe, walk, matrix, transposed, seg_len,
               stripe_gap, gap_open, gap_extend, -32768)
        position[2] = 1
    else:
        H16 = np.empty(0, dtype=np.int16)
        G16 = np.empty(0, dtype=np.int16)
        carry16 = np.empty(0, dtype=np.int16)
        profile16 = np.empty(0, dtype=np.int16)
        profile = np.empty(letters * column, dtype=np.int32)
        _start(H, G, carry, profile, stripe, walk, matrix, transposed, seg_len, stripe_gap,
               gap_open, gap_extend, NEG_INF)
        position[1] = -1
    return seg_len, H, G, carry, profile, H16, G16, carry16, profile16, track, position


@njit(cache=True, nogil=True, inline="always")
def _margin(matrix, gap_open, gap_extend):
    """The most one cell can move a value: a substitution, or a gap's open and two extensions."""
    return np.abs(matrix).max() + gap_open + 2 * gap_extend


@njit(cache=True, nogil=True)
def _advance(k_end, stripe, walk, matrix, gap_open, gap_extend, mode, transposed, local, seg_len,
             H, G, carry, profile, H16, G16, carry16, profile16, track, position, edge_in, edge_out,
             last16):
    """Run the pair's columns up to ``k_end`` (:func:`_setup`'s state, updated in place).

    A pair in 16-bit lanes goes on in 32 bits from the first column whose values leave
    the safe band, or after column ``last16`` (where a band's ``edge_in`` leaves it).
    ``edge_in``/``edge_out``: None, or a band's edge rows (:func:`_banded`). Returns the
    32-bit profile (made at that hand-over).
    """
    P = stripe.shape[0]
    column = seg_len * LANES
    iter_gap = mode == GLOBAL or (mode == SEMIGLOBAL and transposed)
    last_lane = (P - 1) // seg_len
    last_segment = (P - 1) % seg_len
    done = position[0]
    if position[2] == 1:
        margin = _margin(matrix, gap_open, gap_extend)
        done, left = _columns(profile16, seg_len, walk, done, min(k_end, last16), H16, G16, carry16,
                        np.empty(4 * LANES, dtype=np.int16),
                        np.full(4 * LANES, -(1 << 30), dtype=np.int32),
                        np.int16(-(gap_open + gap_extend)), np.int16(-gap_extend),
                        np.int16(-32768 if local is None else 0),
                        np.int16(-32768), np.int16(-32768 + margin), np.int16(32767 - margin),
                        iter_gap, gap_open, gap_extend, track, local, not transposed, last_lane,
                        last_segment, edge_in, edge_out)
        position[1] = done
        left = left or done == last16 < walk.shape[0]
        if left or k_end == walk.shape[0]:
            H[:] = H16
            G[:] = G16
            carry[:] = carry16
        if left:
            position[2] = 0
            profile = np.empty(matrix.shape[0] * column, dtype=np.int32)
            profile[:] = profile16
    if done < k_end and position[2] == 0:
        _columns(profile, seg_len, walk, done, k_end, H, G, carry, np.empty(4 * LANES, dtype=np.int32),
                 np.full(4 * LANES, -(1 << 62), dtype=np.int64), np.int32(-(gap_open + gap_extend)),
                 np.int32(-gap_extend),
                 np.int32(NEG_INF if local is None else 0), np.int32(NEG_INF),
                 np.int32(-(1 << 31)), np.int32((1 << 31) - 1), iter_gap, gap_open, gap_extend,
                 track, local, not transposed, last_lane, last_segment, edge_in, edge_out)
    position[0] = k_end
    return profile


@njit(cache=True, nogil=True)
def _finish(stripe, walk, gap_open, gap_extend, mode, transposed, local, seg_len, H, carry, track,
            position):
    """``(score, query_end, target_end, columns in 16-bit lanes)`` of a pair whose columns are all done."""
    P = stripe.shape[0]
    K = walk.shape[0]
    last_lane = (P - 1) // seg_len
    last_segment = (P - 1) % seg_len
    sixteen = position[1]
    if local is not None:
        if track[0] <= 0:
            return 0, 0, 0, sixteen
        if transposed:
            return track[0], track[2], track[1], sixteen
        return track[0], track[1], track[2], sixteen
    if track[3] == 1:
        return track[0], P, track[2], sixteen
    # The end cell lies in the final column: its exact values add each lane's carry.
    if mode == GLOBAL:
        value = max(np.int64(H[last_segment * LANES + last_lane]),
                    np.int64(carry[1 + last_lane]) - last_segment * gap_extend)
        if transposed:
            return value, K, P, sixteen
        return value, P, K, sixteen
    # Semiglobal with the target striped: the end cells (m, j), j = 0..n, form that column.
    best = np.int64(-(gap_open + K * gap_extend))
    best_p = 0
    for p in range(1, P + 1):
        s = (p - 1) % seg_len
        lane = (p - 1) // seg_len
        value = max(np.int64(H[s * LANES + lane]), np.int64(carry[1 + lane]) - s * gap_extend)
        if value > best:
            best = value
            best_p = p
    return best, K, best_p, sixteen


@njit(cache=True, nogil=True)
def _striped(stripe, walk, matrix, gap_open, gap_extend, mode, transposed, local):
    """:func:`striped_score` with the striped and walked sequences chosen (``local``: True or None).

    Returns ``(score, query_end, target_end, columns)``: ``columns`` is the number of
    columns computed in 16-bit lanes (-1 when the pair starts in 32 bits).
    """
    seg_len, H, G, carry, profile, H16, G16, carry16, profile16, track, position = _setup(
        stripe, walk, matrix, gap_open, gap_extend, mode, transposed, local)
    _advance(walk.shape[0], stripe, walk, matrix, gap_open, gap_extend, mode, transposed, local,
             seg_len, H, G, carry, profile, H16, G16, carry16, profile16, track, position, None, None,
             walk.shape[0])
    return _finish(stripe, walk, gap_open, gap_extend, mode, transposed, local, seg_len, H, carry,
                   track, position)


REPORT_CELLS = 1 << 30
"""Cells between two progress reports of one pair (about 0.1-0.2 s on one core)."""


def _run_part(stripe, walk, matrix, gap_open, gap_extend, mode, transposed, local, progress,
              group, edge_in=None, edge_out=None, wait=None, handed_over=None):
    """:func:`_striped` with its columns run in groups of ``group``, each group's cells passed to
    ``progress`` (if given) when it is done (the sum is ``P * K``).

    A band of :func:`_banded` gives its edges (as :func:`_advance`'s), ``wait(k)``, called
    before the group that ends at column ``k`` (until the band above has left its edge that
    far), and ``handed_over(k)``, after it; its 16-bit lanes give way to 32 bits after the last
    column whose edge stays in their safe band.
    """
    seg_len, H, G, carry, profile, H16, G16, carry16, profile16, track, position = _setup(
        stripe, walk, matrix, gap_open, gap_extend, mode, transposed, local)
    K = len(walk)
    high = 32767 - int(_margin(matrix, gap_open, gap_extend))
    last16 = K
    for done in range(0, K, group):
        k_end = min(done + group, K)
        if wait is not None:
            wait(k_end)
        if edge_in is not None and last16 == K:
            # Column k reads the edge's H at k - 1 and its gap at k (index k - 1 below).
            leaves = (edge_in[0, done:k_end] > high) | (edge_in[1, done + 1:k_end + 1] > high)
            if leaves.any():
                last16 = done + int(np.argmax(leaves))
        profile = _advance(k_end, stripe, walk, matrix, gap_open, gap_extend, mode, transposed,
                           local, seg_len, H, G, carry, profile, H16, G16, carry16, profile16,
                           track, position, edge_in, edge_out, last16)
        if handed_over is not None:
            handed_over(k_end)
        if progress is not None:
            progress((k_end - done) * len(stripe))
    return _finish(stripe, walk, gap_open, gap_extend, mode, transposed, local, seg_len, H, carry,
                   track, position)


BAND_ROWS = STRIPE_MAX
"""Most residues of the striped sequence in one band of a long local pair (:func:`_banded`)."""

MIN_BAND_ROWS = 4096
"""Fewest residues per band when a local pair is cut into more bands for more threads (the
per-column work outside the segment loop is paid once per band)."""

PIPELINE_CELLS = 1 << 26
"""Cells of a band between two hand-overs to the band below when bands run on several threads."""


def band_rows(length: int, threads: int = 1) -> int:
    """Residues per band when a striped sequence of ``length`` residues is cut into bands: the
    fewest bands of at most :data:`BAND_ROWS`, or one per thread (``threads``) while bands keep
    :data:`MIN_BAND_ROWS`; as even as whole vectors allow (a multiple of ``LANES * 4``, so that
    only the last band has padding)."""
    unit = LANES * _UNROLL
    bands = max(-(-length // BAND_ROWS), min(threads, length // MIN_BAND_ROWS))
    return -(-(-(-length // bands)) // unit) * unit


def runs_in_bands(query_length: int, target_length: int, threads: int = 1) -> bool:
    """Whether :func:`lane_columns` runs a local pair in bands (:func:`_banded`): when the
    sequence it stripes is longer than :data:`STRIPE_MAX`, or several threads have at least
    two bands of :data:`MIN_BAND_ROWS` to share."""
    striped_length = _orient(query_length, target_length)[1]
    return striped_length > STRIPE_MAX or (threads > 1 and striped_length >= 2 * MIN_BAND_ROWS)


def _orient(query_length: int, target_length: int) -> tuple[bool, int]:
    """``(transposed, striped length)``: the longer sequence is striped when its state fits the
    core's cache (fewer, longer columns: the per-column work is paid fewer times), else the
    shorter one."""
    longer_query = query_length >= target_length
    transposed = longer_query != (max(query_length, target_length) <= STRIPE_MAX)
    return transposed, target_length if transposed else query_length


def _banded(stripe, walk, matrix, gap_open: int, gap_extend: int, transposed: bool, progress,
            threads: int = 1):
    """Local score and end cell of a pair in bands of :func:`band_rows` residues of the striped
    sequence, each striped and walked over every column as a pair of its own (its state stays
    in the core's cache); ``threads`` bands at once, each one :data:`PIPELINE_CELLS` behind the
    band above.

    A band starts from the exact edge the band above leaves (per column: ``H`` of its last
    row and the vertical gap leaving it); the first starts from the matrix's top row. Each
    band starts in 16-bit lanes and goes on in 32 bits from the column where its own values
    or its edge leave the 16-bit band. The end cells merge by the rule of
    :func:`gpualign_plugin.gotoh.score_kernel`: highest score, then smallest query row, then
    smallest target column. Returns ``(score, query_end, target_end, columns in 16-bit lanes
    summed over the bands, columns summed over the bands)``.
    """
    P, K = len(stripe), len(walk)
    rows = band_rows(P, threads)
    starts = range(0, P, rows)
    edges = [np.empty((2, K + 1), dtype=np.int64) for _ in range(len(starts) + 1)]
    edges[0][0] = 0
    edges[0][1] = -(gap_open + gap_extend)
    for edge in edges[1:]:
        edge[:, 0] = (0, NEG_INF)
    finished = [K] + [0] * len(starts)  # columns each band has done, the top edge first
    condition = threading.Condition()
    if threads > 1:
        group = max(1, PIPELINE_CELLS // rows)
    else:
        group = max(1, REPORT_CELLS // rows) if progress is not None else K

    def run(band: int) -> tuple:
        def wait(k: int) -> None:
            with condition:
                condition.wait_for(lambda: finished[band] >= k)

        def handed_over(k: int) -> None:
            with condition:
                finished[band + 1] = k
                condition.notify_all()

        r0 = starts[band]
        score, query_end, target_end, band16 = _run_part(
            stripe[r0:r0 + rows], walk, matrix, gap_open, gap_extend, LOCAL, transposed, True,
            progress, group, edges[band], edges[band + 1], wait, handed_over)
        if transposed:
            return int(score), int(query_end), int(target_end) + r0, int(band16)
        return int(score), int(query_end) + r0, int(target_end), int(band16)

    if threads > 1:
        with ThreadPoolExecutor(max_workers=min(threads, len(starts))) as pool:
            ends = list(pool.map(run, range(len(starts))))
    else:
        ends = [run(band) for band in range(len(starts))]
    found = [end[:3] for end in ends if end[0] > 0]
    best = min(found, key=lambda end: (-end[0], end[1], end[2])) if found else (0, 0, 0)
    return best + (sum(max(end[3], 0) for end in ends), K * len(starts))


def striped_score(a, b, matrix, gap_open: int, gap_extend: int, mode: int,
                  progress: Callable[[int], None] | None = None,
                  threads: int = 1) -> tuple[int, int, int]:
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
    progress : callable, optional
        Called with DP cells as they are computed, about every :data:`REPORT_CELLS`
        (pairs of at least twice that many), else once at the end; ``m * n`` in all
        (from the threads that run the bands, with ``threads``).
    threads : int
        Local pairs that :func:`runs_in_bands`: bands run on this many threads at once.

    Returns
    -------
    (int, int, int)
        ``(score, query_end, target_end)``, identical to
        :func:`gpualign_plugin.gotoh.score_kernel`'s; local with no positive cell
        gives ``(0, 0, 0)``.
    """
    return lane_columns(a, b, matrix, gap_open, gap_extend, mode, progress, threads)[:3]


def lane_columns(a, b, matrix, gap_open: int, gap_extend: int, mode: int,
                 progress: Callable[[int], None] | None = None, threads: int = 1) -> tuple:
    """:func:`striped_score`'s result and how the pair ran: ``(score, query_end, target_end,
    columns in 16-bit lanes (-1: none), columns)`` (the tests check the 16-to-32-bit hand-over);
    a pair run in bands (:func:`_banded`) counts both over its bands."""
    transposed = _orient(len(a), len(b))[0]
    stripe, walk = (b, a) if transposed else (a, b)
    local = True if mode == LOCAL else None
    if local and runs_in_bands(len(a), len(b), threads):
        return _banded(stripe, walk, matrix, gap_open, gap_extend, transposed, progress, threads)
    if progress is not None and len(a) * len(b) >= 2 * REPORT_CELLS:
        result = _run_part(stripe, walk, matrix, gap_open, gap_extend, mode, transposed, local,
                           progress, max(1, REPORT_CELLS // len(stripe)))
    else:
        result = _striped(stripe, walk, matrix, gap_open, gap_extend, mode, transposed, local)
        if progress is not None:
            progress(len(a) * len(b))
    return tuple(int(x) for x in result) + (len(walk),)
