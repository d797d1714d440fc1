"""Exact pairwise alignment (Gotoh affine gaps) of long sequences on one GPU.

Same functions, arguments and results as :mod:`gpualign_plugin.pairwise.cpu`
(local, global, semiglobal; ``PairScore`` / ``PairAlignment``), and the same
answer: the recurrences, end-cell rule and traceback priority of
docs/ALGORITHMS.md. docs/GPU.md describes the design and the measurements.

Scoring (phase 1) is the striped sweep of ``pairwise/striped.cu``: a warp owns a strip
of ``32 * R`` query rows and sweeps all target columns; strips hand their bottom
row to the next strip through global memory, guarded by ready flags.

Traceback in bounded memory (phases 2 and 3). During phase 1 the sweep also saves
``(H, F)`` of every ``every``-th row and ``(H, E)`` of every ``every``-th column.
The walk back starts at the end cell; the cell it is at lies in one chunk, the
rectangle between the checkpoint rows and columns around it. That chunk is
re-solved on the GPU from its saved top row and left column, only up to the
current cell, with one direction byte per cell; the host follows the direction
bytes until the path leaves the chunk through its top or left edge, carrying the
state (H, E or F) into the next chunk. The values are exact, so every choice is
the one the full matrix would make and the CIGAR is the CPU engine's.

Memory bound. For an ``m x n`` problem with checkpoint interval ``c`` (rows and
columns) the alignment holds ``8 * (m * n / c) * 2`` bytes of checkpoints (``H``
and ``F`` or ``E``, 4 bytes each, ``(m / c)`` rows of ``n`` and ``(n / c)`` columns
of ``m``) plus the direction bytes of the chunks re-solved at once (a window of up
to :data:`CHUNK_WINDOW` x :data:`CHUNK_WINDOW` chunks, ``c * (c + 31)`` bytes each), plus
``16 n`` bytes of strip hand-over rows. At 1 Mbp x 1 Mbp and ``c = 4096`` that is 3.9 GB
of checkpoints and 1.1 GB of direction bytes. :func:`align_pair` starts from
``c = 4096`` and doubles it until the checkpoints and one chunk fit ``memory_budget``
(default: half the free GPU memory), shrinks the window (8, 4, 2, 1) until it fits
too, and raises :class:`~gpualign_plugin.runtime.kernels.GpuMemoryError` when nothing fits.
"""

from __future__ import annotations

import time

import numpy as np
from numba import njit

from gpualign_plugin.errors import InputError
from gpualign_plugin.gotoh import STATE_H, boundary_step, cigar_from_ops, direction_step
from gpualign_plugin.model import NO_PAIR_ALIGNMENT, PairAlignment, PairScore
from gpualign_plugin.pairwise import cpu
from gpualign_plugin.runtime import kernels
from gpualign_plugin.runtime.gpu import probe
from gpualign_plugin.scoring import NEG_INF, ScoringScheme

MODES = cpu.MODES
DEFAULT_CHECKPOINT_EVERY = 4096
CHUNK_WINDOW = 8
"""Chunks re-solved at once in the traceback: a square of this side, up and left of the path."""
WARPS_PER_BLOCK = 4
RING_BYTES = 64 + 64 * 8
"""Shared memory per warp besides its query profile: the target-letter ring and the output ring."""
SWEEP_SCORE, SWEEP_CHECKPOINTS, SWEEP_DIRECTIONS = 0, 1, 2
"""What a sweep writes (the ``KIND`` template argument of ``striped_sweep`` in striped.cu)."""
_SOURCE = "pairwise/striped.cu"


MIN_STRIPS_PER_SM = {16: 8.0, 8: 2.5, 4: 2.5}
"""Fewest strips per multiprocessor at which each rows-per-lane setting pays (measured on an H200)."""


def _rows_per_lane(height: int, multiprocessors: int, multiple_of: int = 0) -> int:
    """Rows per lane ``R`` (16, 8, 4 or 2) for a rectangle of ``height`` rows.

    Larger ``R`` spends fewer instructions per cell on hand-over and a shorter
    pipeline fill (strip ``k`` starts about 64 steps after strip ``k-1``), but gives
    fewer strips (warps) to keep the multiprocessors busy: take the largest ``R``
    that gives at least :data:`MIN_STRIPS_PER_SM` strips per multiprocessor
    (docs/GPU.md has the measurements). With ``multiple_of`` (a checkpoint
    interval) the strip height ``32 * R`` must divide it.
    """
    for rows in (16, 8, 4, 2):
        if multiple_of and multiple_of % (32 * rows):
            continue
        if rows == 2 or -(-height // (32 * rows)) >= MIN_STRIPS_PER_SM[rows] * multiprocessors:
            return rows
    raise InputError(f"checkpoint interval {multiple_of} must be a multiple of 64 rows")


class _Sweep:
    """One problem on one device: sequences, scheme and the kernel launches over its rectangles."""

    def __init__(self, query, target, scheme: ScoringScheme, mode: str, device: int,
                 compute_capability: tuple | None = None):
        import cupy

        self.cupy = cupy
        self.device = device
        self.m, self.n = len(query), len(target)
        self.local = mode == "local"
        self.mode = mode
        self.gap_open, self.gap_extend = scheme.gap_open, scheme.gap_extend
        self.query = query
        self.target = target
        self.alpha = scheme.alphabet.size
        self.d_query = cupy.asarray(query)
        self.d_target = cupy.asarray(target)
        self.d_sub = cupy.asarray(np.ascontiguousarray(scheme.matrix, dtype=np.int32))
        self.resident_warps = None
        self.compute_capability = compute_capability
        self.multiprocessors = probe(device).multiprocessors

    def kernel(self, rows: int, kind: int):
        """``(name, kernel)`` of the sweep with ``rows`` per lane; ``kind`` is one of ``SWEEP_*``."""
        name = f"striped_sweep<{rows},{'true' if self.local else 'false'},{kind}>"
        return name, kernels.get_kernel(self.device, _SOURCE, name, self.compute_capability)

    def warps(self) -> int:
        """Warps resident on the device at once (the persistent grid), measured on the R=8 kernel."""
        if self.resident_warps is None:
            _name, kernel = self.kernel(8, SWEEP_SCORE)
            shared = WARPS_PER_BLOCK * (self.alpha * 256 + RING_BYTES)
            self.resident_warps = WARPS_PER_BLOCK * kernels.resident_blocks(
                kernel, 32 * WARPS_PER_BLOCK, shared, self.device)
        return self.resident_warps

    def column0(self, rows: np.ndarray) -> np.ndarray:
        """``H(i, 0)`` for the 1-based rows ``rows``."""
        if self.local:
            return np.zeros(len(rows), dtype=np.int32)
        return (-(self.gap_open + rows * self.gap_extend)).astype(np.int32)

    def row0(self, columns: np.ndarray) -> np.ndarray:
        """``H(0, j)`` for the columns ``columns`` (``H(0, 0) = 0``)."""
        if self.mode != "global":
            return np.zeros(len(columns), dtype=np.int32)
        return np.where(columns == 0, 0, -(self.gap_open + columns * self.gap_extend)).astype(np.int32)

    def run(self, r0: int, c0: int, height: int, width: int, top_h, top_f, left_h, left_e, rows: int,
            dirs: bool = False, track_best: bool = False, last_row: int = 0,
            row_ckpt=None, col_ckpt=None, every: int = 0, sync: bool = True, dirs_out=None):
        """Sweep rows ``r0+1..r0+height`` x columns ``c0+1..c0+width``.

        ``top_h``/``top_f``: device int32, ``width + 1`` values of row ``r0`` (columns
        ``c0..c0+width``); ``left_h``/``left_e``: device int32, ``height`` values of column ``c0``.
        Returns ``(best, last_row_h, dirs)`` device arrays (or None where not asked); the
        direction bytes go to ``dirs_out`` when given (a large enough uint8 device array).
        Runs on the current stream; without ``sync`` it returns before the kernel finishes.
        """
        cp = self.cupy
        strip = 32 * rows
        strips = -(-height // strip)
        padded = strips * strip
        query = cp.zeros(padded, dtype=cp.uint8)
        query[:height] = self.d_query[r0:r0 + height]
        lh = cp.zeros(padded, dtype=cp.int32)
        lh[:height] = left_h
        le = cp.full(padded, NEG_INF, dtype=cp.int32)
        le[:height] = left_e
        batches = -(-width // 32)
        slots = cp.empty(2 * width * 2, dtype=cp.int32)
        flags = cp.full(2 * batches, -1, dtype=cp.int32)
        ticket = cp.zeros(1, dtype=cp.int32)
        best = cp.empty(3 * strips, dtype=cp.int32) if track_best else None
        last = cp.empty(width + 1, dtype=cp.int32) if last_row else None
        dir_bytes = None
        if dirs:
            size = strips * (width + 31) * strip
            dir_bytes = dirs_out[:size] if dirs_out is not None else cp.empty(size, dtype=cp.uint8)
        kind = SWEEP_DIRECTIONS if dirs else (SWEEP_CHECKPOINTS if row_ckpt is not None else SWEEP_SCORE)
        name, kernel = self.kernel(rows, kind)
        shared = WARPS_PER_BLOCK * (self.alpha * strip + RING_BYTES)
        grid = max(1, min(-(-strips // WARPS_PER_BLOCK), self.warps() // WARPS_PER_BLOCK))
        null = np.uint64(0)
        i32 = np.int32
        args = (query, self.d_target[c0:c0 + width], self.d_sub, i32(self.alpha), i32(height), i32(width),
                i32(self.gap_open + self.gap_extend), i32(self.gap_extend),
                cp.ascontiguousarray(top_h), cp.ascontiguousarray(top_f), lh, le,
                slots, flags, ticket, i32(strips),
                row_ckpt if row_ckpt is not None else null, i32(every or 1),
                i32(row_ckpt.shape[0] if row_ckpt is not None else 0),
                col_ckpt if col_ckpt is not None else null, i32(every or 1),
                i32(col_ckpt.shape[0] if col_ckpt is not None else 0),
                last if last is not None else null, i32(last_row),
                best if best is not None else null,
                dir_bytes if dir_bytes is not None else null)
        kernels.launch(kernel, name, grid, 32 * WARPS_PER_BLOCK, args, shared,
                       f"rectangle {height} x {width} at ({r0}, {c0}), {strips} strips of {strip} rows",
                       sync)
        return best, last, dir_bytes

    def full_boundaries(self):
        """Row 0 and column 0 of the whole matrix as device arrays ``(top_h, top_f, left_h, left_e)``."""
        cp = self.cupy
        top_h = cp.asarray(self.row0(np.arange(self.n + 1)))
        top_f = cp.full(self.n + 1, NEG_INF, dtype=cp.int32)
        left_h = cp.asarray(self.column0(np.arange(1, self.m + 1)))
        left_e = cp.full(self.m, NEG_INF, dtype=cp.int32)
        return top_h, top_f, left_h, left_e

    def end_cell(self, best, last) -> PairScore:
        """The end cell from phase 1's per-strip bests (local) or last row (global, semiglobal)."""
        if self.local:
            rows = best.get().reshape(-1, 3).astype(np.int64)
            order = np.lexsort((rows[:, 2], rows[:, 1], -rows[:, 0]))
            score, i, j = (int(x) for x in rows[order[0]])
            return PairScore(score, i, j) if score > 0 else PairScore(0, 0, 0)
        row = last.get()
        row[0] = self.column0(np.array([self.m]))[0]
        if self.mode == "global":
            return PairScore(int(row[self.n]), self.m, self.n)
        j = int(np.argmax(row))  # first maximum: the smallest j
        return PairScore(int(row[j]), self.m, j)


def accepts(scheme: ScoringScheme) -> bool:
    """Whether the substitution scores fit the sweep's int8 query profile (-128..127)."""
    return -128 <= int(scheme.matrix.min()) and int(scheme.matrix.max()) <= 127


def _prepare(query_codes, target_codes, scheme: ScoringScheme, mode: str):
    """The CPU engine's checks and ``uint8`` arrays, plus the int8 bound of the GPU's query profile."""
    query, target, _matrix, _mode_code = cpu._prepare(query_codes, target_codes, scheme, mode)
    if not accepts(scheme):
        raise InputError("the GPU engine needs substitution scores between -128 and 127 "
                         f"({scheme.name} has {scheme.matrix.min()}..{scheme.matrix.max()})")
    return query, target


def score_pair(query_codes, target_codes, scheme: ScoringScheme, mode: str, device: int = 0) -> PairScore:
    """Optimal score and end cell of one pair, computed on the GPU.

    Parameters
    ----------
    query_codes, target_codes : numpy.ndarray
        ``uint8`` codes of the query (rows) and target (columns).
    scheme : ScoringScheme
        Substitution matrix (scores in -128..127) and gap costs.
    mode : str
        ``'local'``, ``'global'`` or ``'semiglobal'``.
    device : int
        CUDA device ordinal (counted inside CUDA_VISIBLE_DEVICES).

    Returns
    -------
    PairScore
        Identical to :func:`gpualign_plugin.pairwise.cpu.score_pair`.

    Raises
    ------
    InputError
        Scores that could overflow 32 bits, or substitution scores outside int8.
    GpuMemoryError
        The sequences and hand-over rows do not fit in free GPU memory.
    """
    return _score(query_codes, target_codes, scheme, mode, device)


def _score(query_codes, target_codes, scheme, mode, device, rows=None, compute_capability=None):
    """:func:`score_pair` with the kernel variant forced (rows per lane, DPX by compute capability)."""
    import cupy

    query, target = _prepare(query_codes, target_codes, scheme, mode)
    if len(query) == 0 or len(target) == 0:
        return cpu.score_pair(query, target, scheme, mode)
    with cupy.cuda.Device(device):
        m, n = len(query), len(target)
        kernels.check_memory(2 * (m + n) + 24 * n + 16 * m + 4096, f"scoring {m} x {n}")
        sweep = _Sweep(query, target, scheme, mode, device, compute_capability)
        rows = rows or _rows_per_lane(m, sweep.multiprocessors)
        best, last, _ = sweep.run(0, 0, m, n, *sweep.full_boundaries(), rows,
                                  track_best=sweep.local, last_row=0 if sweep.local else m)
        return sweep.end_cell(best, last)


def _checkpoint_bytes(m: int, n: int, every: int, window: int) -> int:
    """GPU bytes of an alignment: checkpoints every ``every`` rows and columns, plus the direction
    bytes of ``window x window`` re-solved chunks and the hand-over rows and sequences."""
    rows = (m - 1) // every
    columns = (n - 1) // every
    chunk = -(-every // 64) * 64 * (every + 31) + 64 * every
    return (8 * rows * (n + 1) + 8 * columns * (m + 1) + window * window * chunk
            + 24 * n + 16 * m + 2 * (m + n) + 4096)


def align_pair(query_codes, target_codes, scheme: ScoringScheme, mode: str, device: int = 0,
               memory_budget: int | None = None, *, checkpoint_every: int | None = None) -> PairAlignment:
    """Optimal alignment of one pair with its CIGAR, computed on the GPU in bounded memory.

    Parameters
    ----------
    query_codes, target_codes : numpy.ndarray
        ``uint8`` codes of the query (rows) and target (columns).
    scheme : ScoringScheme
        Substitution matrix (scores in -128..127) and gap costs.
    mode : str
        ``'local'``, ``'global'`` or ``'semiglobal'``.
    device : int
        CUDA device ordinal (counted inside CUDA_VISIBLE_DEVICES).
    memory_budget : int, optional
        Bytes of GPU memory the checkpoints and the re-solved chunks may take
        (default: half of the free device memory). The interval grows, and the
        window of chunks re-solved at once shrinks, until they fit.
    checkpoint_every : int, optional
        Force the checkpoint interval (rows and columns; a multiple of 64). Tests
        use small values so that the chunked traceback crosses many chunks.

    Returns
    -------
    PairAlignment
        Identical to :func:`gpualign_plugin.pairwise.cpu.align_pair`.

    Raises
    ------
    InputError
        Scores that could overflow 32 bits, or substitution scores outside int8.
    GpuMemoryError
        No checkpoint interval fits the budget.
    """
    return _align(query_codes, target_codes, scheme, mode, device, memory_budget, checkpoint_every)


def _align(query_codes, target_codes, scheme, mode, device, memory_budget, checkpoint_every,
           profile: dict | None = None):
    """:func:`align_pair`; with ``profile`` (a dict) also the time of each phase and the chunk count."""
    import cupy

    query, target = _prepare(query_codes, target_codes, scheme, mode)
    m, n = len(query), len(target)
    if m == 0 or n == 0:
        return cpu.align_pair(query, target, scheme, mode)
    with cupy.cuda.Device(device):
        started = time.perf_counter()
        budget = memory_budget if memory_budget is not None else kernels.free_bytes() // 2
        every = checkpoint_every or DEFAULT_CHECKPOINT_EVERY
        if checkpoint_every is None:
            while _checkpoint_bytes(m, n, every, 1) > budget and every < max(m, n):
                every *= 2
        window = next(w for w in (CHUNK_WINDOW, 4, 2, 1)
                      if w == 1 or _checkpoint_bytes(m, n, every, w) <= budget)
        needed = _checkpoint_bytes(m, n, every, window)
        if needed > budget:
            raise kernels.GpuMemoryError(f"aligning {m} x {n} needs {needed / 2**20:.0f} MiB of GPU "
                                         f"memory (checkpoints every {every}) but the budget is "
                                         f"{budget / 2**20:.0f} MiB")
        kernels.check_memory(needed, f"aligning {m} x {n}")
        sweep = _Sweep(query, target, scheme, mode, device)
        rows = _rows_per_lane(m, sweep.multiprocessors, multiple_of=every)
        row_ckpt = cupy.empty(((m - 1) // every, n + 1, 2), dtype=cupy.int32)
        # Rows padded to whole strips: the sweep saves every row of a strip unconditionally.
        col_ckpt = cupy.empty(((n - 1) // every, -(-m // (32 * rows)) * 32 * rows + 1, 2), dtype=cupy.int32)
        if row_ckpt.shape[0]:
            row_ckpt[:, 0, 0] = cupy.asarray(sweep.column0(every * np.arange(1, row_ckpt.shape[0] + 1)))
            row_ckpt[:, 0, 1] = NEG_INF
        if col_ckpt.shape[0]:
            col_ckpt[:, 0, 0] = cupy.asarray(sweep.row0(every * np.arange(1, col_ckpt.shape[0] + 1)))
            col_ckpt[:, 0, 1] = NEG_INF
        best, last, _ = sweep.run(0, 0, m, n, *sweep.full_boundaries(), rows,
                                  track_best=sweep.local, last_row=0 if sweep.local else m,
                                  row_ckpt=row_ckpt, col_ckpt=col_ckpt, every=every)
        end = sweep.end_cell(best, last)
        if profile is not None:
            profile.update(phase1_s=time.perf_counter() - started, every=every, window=window,
                           rows_per_lane=rows,
                           checkpoint_bytes=int(row_ckpt.nbytes + col_ckpt.nbytes))
        if sweep.local and end.score <= 0:
            return NO_PAIR_ALIGNMENT
        start_i, start_j, ops = _chunked_traceback(sweep, end.query_end, end.target_end, every,
                                                   window, row_ckpt, col_ckpt, profile)
        return PairAlignment(end.score, start_i, end.query_end, start_j, end.target_end,
                             cigar_from_ops(ops))


CHUNK_ROWS_PER_LANE = 2
"""Rows per lane when re-solving a chunk: the most strips (warps) for a chunk's few thousand rows."""


class _Chunk:
    """Direction bytes of one re-solved chunk (rows ``r0+1..r0+height``, columns ``c0+1..c0+width``)."""

    def __init__(self, r0: int, c0: int, height: int, width: int, dirs):
        self.r0, self.c0, self.height, self.width, self.dirs = r0, c0, height, width, dirs

    def covers(self, i: int, j: int) -> bool:
        return i - self.r0 <= self.height and j - self.c0 <= self.width


def _solve_window(sweep: _Sweep, every: int, row_ckpt, col_ckpt, i: int, j: int, window: int,
                  streams, dir_pool) -> dict:
    """Re-solve the chunk holding ``(i, j)`` (up to ``(i, j)``) and the chunks up and left of it.

    The ``window x window`` chunks whose bottom-right one holds ``(i, j)`` are
    independent given the checkpoints, so they run concurrently, one stream each:
    the path usually crosses several of them, and one chunk alone leaves most of the
    GPU idle. Chunk ``a * window + b`` writes its direction bytes into its slice of
    ``dir_pool``. Returns ``{(r0, c0): _Chunk}``.
    """
    chunk_bytes = dir_pool.size // (window * window)
    cp = sweep.cupy
    r0 = (i - 1) // every * every
    c0 = (j - 1) // every * every
    solved = {}
    for a in range(window):
        for b in range(window):
            pr, pc = r0 - a * every, c0 - b * every
            if pr < 0 or pc < 0:
                continue
            height = i - pr if a == 0 else every
            width = j - pc if b == 0 else every
            with streams[a * window + b]:
                if pr == 0:
                    top_h = cp.asarray(sweep.row0(np.arange(pc, pc + width + 1)))
                    top_f = cp.full(width + 1, NEG_INF, dtype=cp.int32)
                else:
                    top_h = row_ckpt[pr // every - 1, pc:pc + width + 1, 0]
                    top_f = row_ckpt[pr // every - 1, pc:pc + width + 1, 1]
                if pc == 0:
                    left_h = cp.asarray(sweep.column0(np.arange(pr + 1, pr + height + 1)))
                    left_e = cp.full(height, NEG_INF, dtype=cp.int32)
                else:
                    left_h = col_ckpt[pc // every - 1, pr + 1:pr + height + 1, 0]
                    left_e = col_ckpt[pc // every - 1, pr + 1:pr + height + 1, 1]
                slot = (a * window + b) * chunk_bytes
                _, _, dirs = sweep.run(pr, pc, height, width, top_h, top_f, left_h, left_e,
                                       CHUNK_ROWS_PER_LANE, dirs=True, sync=False,
                                       dirs_out=dir_pool[slot:slot + chunk_bytes])
            solved[(pr, pc)] = _Chunk(pr, pc, height, width, dirs)
    kernels.synchronize(f"re-solving the chunks up and left of cell ({i}, {j})")
    return solved


def _chunked_traceback(sweep: _Sweep, i: int, j: int, every: int, window: int, row_ckpt, col_ckpt,
                       profile=None):
    """Phases 2 and 3: walk back from ``(i, j)`` chunk by chunk; returns ``(i, j, ops end-to-start)``.

    With ``profile`` (a dict), adds the number of chunks re-solved and traced, and
    the seconds spent re-solving (``solve_s``), copying direction bytes to the host
    (``copy_s``) and tracing (``trace_s``).
    """
    cp = sweep.cupy
    timing = {"windows": 0, "chunks_solved": 0, "chunks_traced": 0, "solve_s": 0.0, "copy_s": 0.0,
              "trace_s": 0.0}
    mode_code = cpu._MODE_CODES[sweep.mode]
    ops = np.empty(sweep.m + sweep.n, dtype=np.uint8)
    pos = 0
    state = STATE_H
    strip = 32 * CHUNK_ROWS_PER_LANE
    chunk_bytes = -(-every // strip) * strip * (every + 31)
    pinned = kernels.pinned_bytes(chunk_bytes)
    streams = [cp.cuda.Stream(non_blocking=True) for _ in range(window * window)]
    dir_pool = cp.empty(window * window * chunk_bytes, dtype=cp.uint8)
    solved: dict = {}
    while True:
        if i == 0 or j == 0:
            r0 = c0 = steps = 0
            dirs = pinned[:0]
        else:
            r0 = (i - 1) // every * every
            c0 = (j - 1) // every * every
            chunk = solved.get((r0, c0))
            if chunk is None or not chunk.covers(i, j):
                started = time.perf_counter()
                solved = _solve_window(sweep, every, row_ckpt, col_ckpt, i, j, window, streams,
                                       dir_pool)
                chunk = solved[(r0, c0)]
                timing["windows"] += 1
                timing["chunks_solved"] += len(solved)
                timing["solve_s"] += time.perf_counter() - started
            started = time.perf_counter()
            dirs = pinned[:chunk.dirs.size]
            chunk.dirs.get(out=dirs)
            steps = chunk.width + 31
            timing["chunks_traced"] += 1
            timing["copy_s"] += time.perf_counter() - started
        started = time.perf_counter()
        i, j, state, pos, done = _trace_chunk(dirs, strip, CHUNK_ROWS_PER_LANE, steps, r0, c0,
                                              sweep.query, sweep.target, mode_code, i, j, state,
                                              ops, pos)
        timing["trace_s"] += time.perf_counter() - started
        if done:
            if profile is not None:
                profile.update(timing)
            return int(i), int(j), ops[:pos]


@njit(cache=True)
def _trace_chunk(dirs, strip, rows, steps, r0, c0, a, b, mode, i, j, state, ops, pos):
    """Follow the traceback rule inside the chunk of rows ``r0+1..``, columns ``c0+1..``.

    ``dirs`` is the chunk's direction bytes in the sweep's layout
    ``[strip][step][lane][rows]`` (cell ``(i, j)``: row ``i - r0 - 1`` of the chunk is
    strip ``k``, lane ``t``, slot ``r``; its step is ``j - c0 - 1 + t``). Walks until
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
        d = dirs[((k * steps + (j - c0 - 1 + t)) * 32 + t) * rows + r]
        i, j, state, pos, done = direction_step(d, a, b, i, j, state, ops, pos)
        if done:
            return i, j, state, pos, True
