"""Exact pairwise alignment (Gotoh affine gaps): local, global and semiglobal, on the CPU.

The recurrences, boundaries, end-cell rule and traceback priority are those of
docs/ALGORITHMS.md ("Pairwise"); every function here, the checkpointed
traceback and the GPU engine return the same answer for the same input.

Conventions: sequences are ``uint8`` code arrays of the scheme's alphabet; the
query indexes rows (``i``, length ``m``), the target columns (``j``, length
``n``); coordinates are 0-based half-open on the sequences as given; scores
are integers (a gap of length ``k`` costs ``open + k * extend``). Modes:
``'local'`` (Smith-Waterman-Gotoh), ``'global'`` (Needleman-Wunsch-Gotoh) and
``'semiglobal'`` (the query end to end, free end gaps on the target).

Example
-------
>>> from gpualign_plugin.scoring import ScoringScheme
>>> scheme = ScoringScheme.dna()
>>> q = scheme.alphabet.encode("ACGTTGCA")
>>> t = scheme.alphabet.encode("TTACGTAGCATT")
>>> result = align_pair(q, t, scheme, "local")
>>> result.score, str(result.cigar), (result.target_start, result.target_end)
(11, '4=1X3=', (2, 10))
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numba
import numpy as np

from gpualign_plugin import gotoh as kernels
from gpualign_plugin.model import NO_PAIR_ALIGNMENT, PairAlignment, PairScore
from gpualign_plugin.pairwise.modes import checked_pair
from gpualign_plugin.scoring import MODE_CODES, ScoringScheme
from gpualign_plugin.striped import runs_in_bands, striped_score
from gpualign_plugin.traceback.checkpoint import Cursor, checkpointed_traceback

DEFAULT_MEMORY_BUDGET = 256 * 2**20


def _prepare(query_codes, target_codes, scheme: ScoringScheme, mode: str):
    q, t = checked_pair(query_codes, target_codes, scheme, mode)
    return q, t, np.ascontiguousarray(scheme.matrix, dtype=np.int32), MODE_CODES[mode]


STRIPED_MIN_CELLS = 10_000
"""Smallest ``m * n`` scored by the striped SIMD kernel (:mod:`gpualign_plugin.striped`);
below it the row kernel's lower fixed cost wins (100 x 100: 15-18 us either way)."""


def _score(q, t, matrix, scheme, mode_code, progress=None, threads: int = 1) -> PairScore:
    if len(q) * len(t) >= STRIPED_MIN_CELLS:
        return PairScore(*striped_score(q, t, matrix, scheme.gap_open, scheme.gap_extend,
                                        mode_code, progress, threads))
    # Rows run over the longer sequence so that the row buffers are O(min(m, n)).
    if len(t) < len(q):
        result = kernels.score_kernel(t, q, matrix, scheme.gap_open, scheme.gap_extend,
                                      mode_code, True)
    else:
        result = kernels.score_kernel(q, t, matrix, scheme.gap_open, scheme.gap_extend,
                                      mode_code, False)
    if progress is not None:
        progress(len(q) * len(t))
    return PairScore(*(int(x) for x in result))


def score_pair(query_codes, target_codes, scheme: ScoringScheme, mode: str,
               threads: int | None = None,
               progress: Callable[[int], None] | None = None) -> PairScore:
    """Optimal score and end cell of one pair.

    Memory: the striped kernel holds at most ``12 + 6 * alphabet`` bytes per residue of the
    sequence it stripes (the longer one up to 32,768 residues, else the shorter; the row
    kernel 9 bytes per residue of the shorter), and a local pair run in bands 32 bytes per
    column per band besides; the tiled kernel O(m + n).

    One thread runs the striped SIMD kernel of :mod:`gpualign_plugin.striped`
    (pairs of at least :data:`STRIPED_MIN_CELLS` cells; smaller ones the row
    kernel). A local pair that the striped kernel runs in bands of its striped
    sequence (:func:`~gpualign_plugin.striped.runs_in_bands`: longer than 32,768 on
    both sides, or long enough for ``threads``) runs its bands on ``threads`` threads
    at once, each a little behind the one above. Other pairs of at least
    :data:`TILED_MIN_CELLS` cells and two tiles per side, with at least
    :data:`TILED_MIN_THREADS` threads, run on the tiled wavefront kernel (see
    :func:`score_pair_tiled`). All give the identical result.

    Parameters
    ----------
    query_codes, target_codes : numpy.ndarray
        ``uint8`` codes of the query (rows) and target (columns).
    scheme : ScoringScheme
        Substitution matrix and gap costs.
    mode : str
        ``'local'``, ``'global'`` or ``'semiglobal'``.
    threads : int, optional
        CPU threads (at most Numba's ``NUMBA_NUM_THREADS``); default
        ``numba.get_num_threads()``. Callers that score pairs from several
        Python threads at once should pass ``1`` (one core per pair, no
        oversubscription; Numba's ``workqueue`` threading layer also refuses
        concurrent parallel kernels).
    progress : callable, optional
        Called with DP cells as they are computed: inside the striped kernel every
        :data:`~gpualign_plugin.striped.REPORT_CELLS` or so, else once at the end;
        ``m * n`` in all.

    Returns
    -------
    PairScore

    Raises
    ------
    InputError
        If the scores could overflow 32-bit integers.
    """
    q, t, matrix, mode_code = _prepare(query_codes, target_codes, scheme, mode)
    return _end_cell(q, t, matrix, scheme, mode_code, thread_count(threads), progress)


TILED_MIN_CELLS = 50_000_000
"""Smallest ``m * n`` for which :func:`score_pair` uses the tiled kernel (it pays off well above)."""

TILED_MIN_THREADS = 24
"""Fewest threads for which :func:`score_pair` uses the tiled kernel: its tiles run the scalar
row kernel (0.4-0.5 GCUPS a thread on the project's 2-core EPYC) while the striped kernel
runs 7-9 GCUPS on one core of it, so fewer threads are faster on one core."""


def tile_shape(query_length: int, target_length: int, threads: int) -> tuple[int, int] | None:
    """The tiles :func:`score_pair` uses for a pair with ``threads`` threads, or ``None``.

    Parameters
    ----------
    query_length, target_length : int
        Residues of the query (rows) and target (columns).
    threads : int
        Threads allowed.

    Returns
    -------
    (int, int) or None
        ``(tile_rows, tile_cols)`` in cells when the tiled kernel runs (at least
        :data:`TILED_MIN_THREADS` threads, :data:`TILED_MIN_CELLS` cells and two
        tiles per side); ``None`` when one thread runs the pair.
    """
    tile_rows, tile_cols = _tile_size(query_length, threads), _tile_size(target_length, threads)
    if (threads >= TILED_MIN_THREADS and query_length * target_length >= TILED_MIN_CELLS
            and query_length >= 2 * tile_rows and target_length >= 2 * tile_cols):
        return tile_rows, tile_cols
    return None


def thread_count(threads: int | None) -> int:
    """The CPU threads a ``threads`` argument gives: ``numba.get_num_threads()`` for ``None``,
    else ``threads`` capped at Numba's ``NUMBA_NUM_THREADS``; ``ValueError`` below 1."""
    if threads is None:
        return numba.get_num_threads()
    if threads < 1:
        raise ValueError(f"threads must be at least 1, got {threads}")
    return min(threads, numba.config.NUMBA_NUM_THREADS)


def _tile_size(length: int, threads: int) -> int:
    # About 8 tiles per thread along each side, so that the waves that ramp up
    # and down are short; at least 256 so a wave's work outweighs its start,
    # at most 2048 so a tile's row state stays in the core's cache.
    return min(2048, max(256, -(-length // (8 * threads))))


def _end_cell(q, t, matrix, scheme, mode_code, threads: int, progress=None) -> PairScore:
    banded = mode_code == kernels.LOCAL and runs_in_bands(len(q), len(t), threads)
    tiles = None if banded else tile_shape(len(q), len(t), threads)
    if tiles is None:
        return _score(q, t, matrix, scheme, mode_code, progress, threads)
    end = _score_tiled(q, t, matrix, scheme, mode_code, *tiles, threads, True)
    if progress is not None:
        progress(len(q) * len(t))
    return end


def _score_tiled(q, t, matrix, scheme, mode_code, tile_rows, tile_cols, threads, prune,
                 profile: dict | None = None) -> PairScore:
    previous = numba.get_num_threads()
    numba.set_num_threads(threads)
    pruned = np.zeros(1, dtype=np.int64)
    try:
        result = kernels.tiled_score_kernel(q, t, matrix, scheme.gap_open, scheme.gap_extend,
                                            mode_code, tile_rows, tile_cols, prune, pruned)
    finally:
        numba.set_num_threads(previous)
    if profile is not None:
        profile["pruned_cells"] = int(pruned[0])
    return PairScore(*(int(x) for x in result))


def score_pair_tiled(query_codes, target_codes, scheme: ScoringScheme, mode: str,
                     tile_rows: int, tile_cols: int, threads: int | None = None, prune: bool = True,
                     profile: dict | None = None) -> PairScore:
    """:func:`score_pair` by the tiled wavefront kernel with the tile shape given.

    The matrix is cut into tiles of ``tile_rows`` query residues x ``tile_cols``
    target residues; the tiles of one anti-diagonal of tiles run in parallel,
    one synchronisation per anti-diagonal. Memory is O(m + n). The result is
    identical to :func:`score_pair`'s for every tile shape (the tests force
    tiny tiles to prove it).

    Parameters
    ----------
    query_codes, target_codes : numpy.ndarray
        ``uint8`` codes of the query (rows) and target (columns).
    scheme : ScoringScheme
        Substitution matrix and gap costs.
    mode : str
        ``'local'``, ``'global'`` or ``'semiglobal'``.
    tile_rows, tile_cols : int
        Tile height and width in cells (at least 1).
    threads : int, optional
        CPU threads; default ``numba.get_num_threads()``.
    prune : bool
        Local mode: skip the tiles that cannot reach the best score found so far (block
        pruning; exact, the result is the same); False computes every cell.
    profile : dict, optional
        Gets ``pruned_cells``, the cells of the skipped tiles.

    Returns
    -------
    PairScore
    """
    if tile_rows < 1 or tile_cols < 1:
        raise ValueError(f"tiles must be at least 1x1, got {tile_rows}x{tile_cols}")
    q, t, matrix, mode_code = _prepare(query_codes, target_codes, scheme, mode)
    return _score_tiled(q, t, matrix, scheme, mode_code, tile_rows, tile_cols,
                        thread_count(threads), prune, profile)


WARPS_PER_THREAD = 4
"""The ``warps`` figure of :class:`PairScorer` per thread. The placement driver of local placement
(:func:`~gpualign_plugin.pairwise.placement.score_above_floor`) cuts a score call's long target
ranges into slices of at least ``cells / (warps * 512 * SLICE_WAVES)`` columns, sized for GPU
warps sweeping 512-row strips; a CPU thread sweeps a whole pair instead. With 4 per thread, a
segment of ``m`` rows in a call is cut into about ``32768 / m`` slices per thread where the
targets are long enough (4 to 8 for contigs of 4 to 8 kbp), so the pool's last, partly idle wave
is short; the span bound (slices at least 8 times an alignment's longest span) keeps the slices'
overlap at most 1/8 of their cells, and a call with fewer pairs than threads leaves cores idle."""


class PairScorer:
    """Local scores of many (query segment, target slice) pairs on a pool of CPU threads.

    The interface of :class:`gpualign_plugin.pairwise.gpu.PairScorer` (:meth:`score`,
    :attr:`warps`) on the CPU engine, for the placement driver of local placement: each pair is
    one :func:`score_pair` (the striped kernel releases the GIL), ``threads`` pairs at once,
    the largest first; a pair whose cells are a large part of the call's runs its bands on its
    share of the threads. Results are those of :func:`score_pair` in local mode.

    Parameters
    ----------
    targets : list of numpy.ndarray
        ``uint8`` codes of the targets that pairs name by index.
    scheme : ScoringScheme
        Substitution matrix and gap costs.
    threads : int, optional
        Pairs scored at once (at most Numba's ``NUMBA_NUM_THREADS``); default
        ``numba.get_num_threads()``.
    progress : callable, optional
        Called (from the pool's threads) with DP cells as each pair computes them.
    """

    def __init__(self, targets: list, scheme: ScoringScheme, threads: int | None = None,
                 progress: Callable[[int], None] | None = None):
        self.targets = [np.ascontiguousarray(t, dtype=np.uint8) for t in targets]
        self.scheme, self.progress = scheme, progress
        self.threads = thread_count(threads)
        self.warps = WARPS_PER_THREAD * self.threads
        self.swept_cells = 0  # rows x columns of every pair scored

    def score(self, pairs: list) -> list[PairScore]:
        """:func:`score_pair` (local) of every pair.

        Parameters
        ----------
        pairs : list of (numpy.ndarray, int, int, int)
            ``(query codes, target index, t0, t1)``: the (oriented) query segment against
            columns ``[t0, t1)`` of that target.

        Returns
        -------
        list of PairScore
            Per pair, the end cell in the pair's own coordinates (row of the segment, column
            counted from ``t0``); ``(0, 0, 0)`` when no cell is positive.
        """
        cells = [len(q) * (t1 - t0) for q, _, t0, t1 in pairs]
        self.swept_cells += sum(cells)

        def one(p: int) -> PairScore:
            q, t_index, t0, t1 = pairs[p]
            return score_pair(q, self.targets[t_index][t0:t1], self.scheme, "local",
                              threads=self._share(len(q), t1 - t0, cells[p], sum(cells)),
                              progress=self.progress)

        # The largest first, so that the last pairs to start are short ones.
        order = sorted(range(len(pairs)), key=lambda p: -cells[p])
        results: list = [None] * len(pairs)
        with ThreadPoolExecutor(max_workers=self.threads) as pool:
            for p, found in zip(order, pool.map(one, order)):
                results[p] = found
        return results

    def _share(self, rows: int, columns: int, cells: int, total: int) -> int:
        """Threads for one pair of a call sweeping ``total`` cells: its share of :attr:`threads`
        by cells (so that one long pair does not finish alone on one core), where its bands can
        use them (:func:`~gpualign_plugin.striped.runs_in_bands`); else 1."""
        share = max(1, (2 * self.threads * cells + total) // (2 * max(total, 1)))  # rounded
        return share if share > 1 and runs_in_bands(rows, columns, share) else 1


class GotohProblem:
    """The Gotoh recurrence as a :mod:`~gpualign_plugin.traceback.checkpoint` problem.

    The state of a row is an ``int32`` array of shape ``(2, width)``: ``H`` and
    ``F``. Operations collect in :attr:`ops` (end to start) up to :attr:`length`.
    ``progress``, if given, is called with the DP cells computed after each
    checkpoint segment of a forward pass and after each band of directions.
    """

    direction_bytes_per_cell = 1
    state_bytes_per_column = 8

    def __init__(self, query, target, matrix, scheme: ScoringScheme, mode_code: int,
                 progress: Callable[[int], None] | None = None):
        self.progress = progress
        self.query = query
        self.target = target
        self.matrix = matrix
        self.gap_open = scheme.gap_open
        self.gap_extend = scheme.gap_extend
        self.mode = mode_code
        self.ops = np.empty(len(query) + len(target), dtype=np.uint8)
        self.length = 0

    def initial_state(self, width: int) -> np.ndarray:
        """Row 0: ``H`` and ``F`` over columns ``0..width-1``."""
        state = np.empty((2, width), dtype=np.int32)
        kernels.initial_row(width, self.gap_open, self.gap_extend, self.mode == kernels.GLOBAL,
                            state[0], state[1])
        return state

    def forward(self, r0: int, top: np.ndarray, width: int, save_rows) -> list:
        """States of the rows in ``save_rows``, computed from ``top`` (row ``r0``)."""
        H = top[0, :width].copy()
        F = top[1, :width].copy()
        saved = np.empty((len(save_rows), 2, width), dtype=np.int32)
        # One call per checkpoint, the state carried in H and F: the same rows as one call over
        # all of them, with a progress report between segments.
        row = r0
        for k, save_row in enumerate(save_rows):
            kernels.forward_rows(self.query, self.target, self.matrix, self.gap_open,
                                 self.gap_extend, self.mode, row, width, H, F,
                                 np.array([save_row], dtype=np.int64), saved[k:k + 1])
            self._count((save_row - row) * width)
            row = save_row
        return list(saved)

    def directions(self, r0: int, r1: int, top: np.ndarray, width: int) -> np.ndarray:
        """Direction bytes of rows ``r0+1..r1`` over columns ``0..width-1``."""
        H = top[0, :width].copy()
        F = top[1, :width].copy()
        dirs = np.empty((r1 - r0, width), dtype=np.uint8)
        kernels.band_directions(self.query, self.target, self.matrix, self.gap_open,
                                self.gap_extend, self.mode, r0, width, H, F, dirs)
        self._count((r1 - r0) * width)
        return dirs

    def _count(self, cells: int) -> None:
        """Report ``cells`` computed DP cells to the progress callback, if any."""
        if self.progress is not None:
            self.progress(cells)

    def trace(self, dirs: np.ndarray, r0: int, cursor: Cursor) -> bool:
        """Walk the band; see the protocol in :mod:`~gpualign_plugin.traceback.checkpoint`."""
        i, j, state, self.length, done = kernels.trace_band(
            dirs, r0, self.query, self.target, self.mode, cursor.row, cursor.col, cursor.state,
            self.ops, self.length)
        cursor.row, cursor.col, cursor.state = int(i), int(j), int(state)
        return bool(done)


@dataclass(frozen=True)
class LiveRow:
    """A row state of :class:`ReachingGotohProblem`: ``H`` and ``F`` of the live columns
    ``lo..hi`` (every other column holds the lower bounds: H = 0 in local mode, ``NEG_INF``
    otherwise; F = ``NEG_INF``)."""

    lo: int
    hi: int
    h: np.ndarray
    f: np.ndarray


class ReachingGotohProblem(GotohProblem):
    """The traceback (any mode) of an alignment whose score and end cell are known,
    computing only the cells that may lie on a path reaching that score there
    (docs/ALGORITHMS.md, "Traceback of a local alignment"): a band around the alignment (and,
    local, the corner where it may start) instead of every cell above and left of its end.
    The path is the one :class:`GotohProblem` gives, byte for byte.

    States are :class:`LiveRow`; the rows are computed in one pair of full-width buffers.
    :attr:`cells` counts the cells computed; progress still reports the rectangle covered.
    """

    def __init__(self, query, target, matrix, scheme: ScoringScheme, end: PairScore,
                 progress: Callable[[int], None] | None = None, mode_code: int = kernels.LOCAL):
        super().__init__(query, target, matrix, scheme, mode_code, progress)
        self.end = end
        self.max_sub = int(matrix.max())
        self.kind = kernels.REACH_LOCAL if mode_code == kernels.LOCAL else kernels.REACH_GLOBAL
        self.dead_h = 0 if mode_code == kernels.LOCAL else kernels.NEG_INF
        self.H = np.full(end.target_end + 1, self.dead_h, dtype=np.int32)
        self.F = np.full(end.target_end + 1, kernels.NEG_INF, dtype=np.int32)
        self.cells = 0
        self._dirs = np.empty(0, dtype=np.uint8)

    def initial_state(self, width: int) -> LiveRow:
        """Row 0. Local: H = 0 everywhere, nothing live (a path only starts below it). Global:
        its gap costs, semiglobal: 0, where a path from there can still reach the score."""
        if self.kind == kernels.REACH_LOCAL:
            empty = np.empty(0, dtype=np.int32)
            return LiveRow(width, -1, empty, empty)
        columns = np.arange(width, dtype=np.int64)
        h = np.where((columns == 0) | (self.mode == kernels.SEMIGLOBAL), 0,
                     -(self.gap_open + columns * self.gap_extend))
        rows_left, cols_left = self.end.query_end, self.end.target_end - columns
        rest = self.max_sub * np.minimum(rows_left, cols_left) - self.gap_extend * np.abs(rows_left - cols_left)
        live = h + rest >= self.end.score
        lo, hi = (int(k) for k in np.flatnonzero(live)[[0, -1]])
        h = np.where(live, h, kernels.NEG_INF)[lo:hi + 1].astype(np.int32)
        return LiveRow(lo, hi, h, np.full(hi + 1 - lo, kernels.NEG_INF, dtype=np.int32))

    def _rows(self, r0: int, r1: int, top: LiveRow, width: int, dirs) -> LiveRow:
        """Rows ``r0+1..r1`` from ``top``; the buffers are back at lower bounds on return."""
        lo, hi = top.lo, min(top.hi, width - 1)
        self.H[lo:hi + 1] = top.h[:max(0, hi + 1 - lo)]
        self.F[lo:hi + 1] = top.f[:max(0, hi + 1 - lo)]
        end = self.end
        lo, hi, cells, _, _ = kernels.reaching_rows(
            self.query, self.target, self.matrix, self.gap_open, self.gap_extend, r0, r1, width,
            self.H, self.F, lo, hi, end.score, end.query_end, end.target_end, self.max_sub, dirs,
            self.kind)
        self.cells += cells
        self._count((r1 - r0) * width)
        row = LiveRow(lo, hi, self.H[lo:hi + 1].copy(), self.F[lo:hi + 1].copy())
        self.H[lo:hi + 1] = self.dead_h
        self.F[lo:hi + 1] = kernels.NEG_INF
        return row

    def forward(self, r0: int, top: LiveRow, width: int, save_rows) -> list[LiveRow]:
        """States of the rows in ``save_rows``, computed from ``top`` (row ``r0``)."""
        saved = []
        scratch = np.empty((1, width), dtype=np.uint8)
        for save_row in save_rows:
            top = self._rows(r0, save_row, top, width, scratch)
            saved.append(top)
            r0 = save_row
        return saved

    def directions(self, r0: int, r1: int, top: LiveRow, width: int) -> np.ndarray:
        """Direction bytes of rows ``r0+1..r1`` (unwritten where no path reaching the score runs).

        The bands share one buffer, valid until the next call: a band writes a few bytes of
        each row, and fresh memory would cost a page fault for each of them."""
        if self._dirs.size < (r1 - r0) * width:
            self._dirs = np.empty((r1 - r0) * width, dtype=np.uint8)
        dirs = self._dirs[:(r1 - r0) * width].reshape(r1 - r0, width)
        self._rows(r0, r1, top, width, dirs)
        return dirs


def local_start_corner(q: np.ndarray, t: np.ndarray, matrix: np.ndarray, scheme: ScoringScheme,
                       end: PairScore) -> tuple[int, int]:
    """The smallest row and the smallest column where an optimal local alignment ending at
    ``end``'s cell (score ``end.score > 0``) may start (0-based: the cell before its first
    pair), from an anchored pass over the reversed prefixes that computes only the cells of
    paths scoring ``end.score``: a path through a cell must keep its suffix at 0 or more and
    reach the score (:func:`~gpualign_plugin.gotoh.reaching_rows`). Every optimal alignment ending
    there lies in rows and columns from these on, so the traceback needs no others
    (docs/ALGORITHMS.md, "Traceback of a local alignment")."""
    rows, cols = end.query_end, end.target_end
    a = np.ascontiguousarray(q[:rows][::-1])
    b = np.ascontiguousarray(t[:cols][::-1])
    H = np.full(cols + 1, kernels.NEG_INF, dtype=np.int32)
    H[0] = 0
    F = np.full(cols + 1, kernels.NEG_INF, dtype=np.int32)
    scratch = np.empty((1, cols + 1), dtype=np.uint8)
    *_, far_row, far_col = kernels.reaching_rows(
        a, b, matrix, scheme.gap_open, scheme.gap_extend, 0, rows, cols + 1, H, F, 0, 0,
        end.score, rows, cols, int(matrix.max()), scratch, kernels.REACH_SUFFIXES)
    return rows - far_row, cols - far_col


def align_pair(query_codes, target_codes, scheme: ScoringScheme, mode: str,
               memory_budget: int = DEFAULT_MEMORY_BUDGET, threads: int = 1,
               progress: Callable[[int], None] | None = None,
               end: PairScore | None = None, prune: bool = True) -> PairAlignment:
    """Optimal alignment of one pair with its CIGAR.

    The end cell comes from :func:`score_pair`; the traceback then uses one
    direction byte per cell of rows ``0..query_end`` and columns
    ``0..target_end`` when that fits ``memory_budget`` bytes, and otherwise the
    checkpointed traceback of :mod:`~gpualign_plugin.traceback.checkpoint`, which
    returns the same path. Peak memory is ``memory_budget`` of direction bytes
    plus at most ``memory_budget`` of saved rows (8 bytes per column) per
    checkpoint level: measured 650 MiB peak RSS for two related 200 kbp DNA
    sequences with the default budget (one level). Only the cells that may lie on an optimal
    path are computed (:class:`ReachingGotohProblem`; local mode after
    :func:`local_start_corner` for a weak alignment): the same path, in a fraction of the
    cells for a related pair.

    Parameters
    ----------
    query_codes, target_codes : numpy.ndarray
        ``uint8`` codes of the query and target.
    scheme : ScoringScheme
        Substitution matrix and gap costs.
    mode : str
        ``'local'``, ``'global'`` or ``'semiglobal'``.
    memory_budget : int
        Bytes of direction information held at once (default 256 MiB).
    threads : int
        Threads of the end-cell pass, as for :func:`score_pair` (default 1:
        callers align pairs from thread pools); the traceback runs on one.
    progress : callable, optional
        Called with DP cells as they are computed (for a progress bar inside a
        long pair): ``m * n`` when the end-cell pass is done, then the cells of
        each checkpoint segment and band of the traceback; in all at most
        :func:`align_cells` with one checkpoint level.
    end : PairScore, optional
        The score and end cell, when a score pass of this very pair (or of a range whose end
        cell lies in it, by the end-cell rule) already found them: the end-cell pass is skipped.
    prune : bool
        False computes every cell above and left of the end cell (:class:`GotohProblem`: the
        same alignment, for measuring what the reaching cells save).

    Returns
    -------
    PairAlignment
    """
    q, t, matrix, mode_code = _prepare(query_codes, target_codes, scheme, mode)
    if end is None:
        end = _end_cell(q, t, matrix, scheme, mode_code, thread_count(threads), progress)
    if mode_code == kernels.LOCAL and end.score <= 0:
        return NO_PAIR_ALIGNMENT
    row0 = col0 = 0
    if not prune:
        problem = GotohProblem(q, t, matrix, scheme, mode_code, progress)
    elif mode_code == kernels.LOCAL:
        # Where a path may start anywhere in much of the rectangle (a weak alignment), the
        # corner pass pays for itself; for a strong one the traceback's own bound is as tight.
        pairs_after_first = -(-end.score // max(1, int(matrix.max()))) - 1
        start_zone = max(0, end.query_end - pairs_after_first) * max(0, end.target_end - pairs_after_first)
        if start_zone * 8 > end.query_end * end.target_end:
            row0, col0 = local_start_corner(q, t, matrix, scheme, end)
        problem = ReachingGotohProblem(q[row0:], t[col0:], matrix, scheme,
                                       PairScore(end.score, end.query_end - row0, end.target_end - col0),
                                       progress)
    else:
        problem = ReachingGotohProblem(q, t, matrix, scheme, end, progress, mode_code)
    start = checkpointed_traceback(problem, end.query_end - row0, end.target_end - col0,
                                   kernels.STATE_H, memory_budget)
    return PairAlignment(end.score, row0 + start.row, end.query_end, col0 + start.col, end.target_end,
                         kernels.cigar_from_ops(problem.ops[:problem.length]))


def align_cells(query_length: int, target_length: int,
                memory_budget: int = DEFAULT_MEMORY_BUDGET) -> int:
    """DP cells :func:`align_pair` computes at most with one checkpoint level (its progress total).

    The end-cell pass (``m * n``), the direction bytes (at most ``m * (n + 1)``:
    a band spans the columns up to where the path enters it) and,
    when those exceed ``memory_budget``, the top level's forward pass up to its
    last checkpoint (as :func:`~gpualign_plugin.traceback.checkpoint.checkpointed_traceback`
    cuts the rows; deeper levels, from about 1 Mbp a side, add more). Paths that
    end earlier (local, semiglobal) cost less. Used as the total of a progress
    bar counted in cells.
    """
    m, width = query_length, target_length + 1
    cells = m * target_length + m * width
    band_rows = max(1, int(memory_budget) // (GotohProblem.direction_bytes_per_cell * width))
    if m > band_rows:
        bands = -(-m // band_rows)
        segments = max(1, int(memory_budget) // (GotohProblem.state_bytes_per_column * width)) + 1
        last_cut = (bands - 1) * band_rows if bands <= segments else (segments - 1) * m // segments
        cells += last_cut * width
    return cells
