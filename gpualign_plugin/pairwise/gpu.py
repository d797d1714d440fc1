"""Exact pairwise alignment (Gotoh affine gaps) of long sequences on one GPU or several.

Same functions, arguments and results as :mod:`gpualign_plugin.pairwise.cpu`
(local, global, semiglobal; ``PairScore`` / ``PairAlignment``), and the same
answer: the recurrences, end-cell rule and traceback priority of
docs/ALGORITHMS.md. docs/GPU.md describes the design and the measurements.

Scoring (phase 1) is the striped sweep of ``pairwise/striped.cu``: a warp owns a strip
of ``32 * R`` query rows and sweeps all target columns; strips hand their bottom
row to the next strip through global memory, guarded by ready flags. In local mode a
warp skips the blocks that cannot reach the best score found so far (block pruning,
exact). With ``devices=`` the columns are split into one slab per device, each slab's
last column streamed to the next through mapped host memory (:class:`_Slabs`).
A score-only pass of a DNA pair on one device takes the packed sweep of
``pairwise/packed16.cu`` instead where its 16-bit arithmetic is exact for the scheme
(:func:`packed_table`): two strips per warp, two cells per instruction.

Traceback in bounded memory (phases 2 and 3). During phase 1 the sweep also saves
``(H, F)`` of every ``every``-th row and ``(H, E)`` of every ``every``-th column.
The walk back starts at the end cell; the cell it is at lies in one chunk, the
rectangle between the checkpoint rows and columns around it. That chunk is
re-solved on the GPU from its saved top row and left column, only up to the
current cell, with one direction byte per cell; the host follows the direction
bytes until the path leaves the chunk through its top or left edge, carrying the
state (H, E or F) into the next chunk. The values are exact, so every choice is
the one the full matrix would make and the CIGAR is the CPU engine's.

Memory bound. :func:`plan_memory` picks the checkpoint levels (:class:`MemoryPlan`):
one level checkpoints the whole matrix every ``c`` rows and columns
(``16 m n / c`` bytes), too much for chromosomes; then the chunks the path
crosses are swept again with finer checkpoints (a level per refinement), and only
the finest chunks are re-solved with direction bytes. Every level's checkpoints
live in one buffer reused by each region of that level, so the peak is a sum
over the levels (docs/GPU.md gives the formula); the plan is the fastest (by a
time model) that fits ``memory_budget``, CuPy's pool is limited to the budget
while the alignment runs, and a budget too small for any plan raises
:class:`~gpualign_plugin.runtime.kernels.GpuMemoryError` naming the smallest one
that fits. Host memory: the two sequences, ``m + n`` bytes of path, one chunk of
direction bytes (pinned), ``O(m + n)`` boundary values.
"""

from __future__ import annotations

import contextlib
import functools
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
from gpualign_plugin.errors import InputError
from gpualign_plugin.model import NO_PAIR_ALIGNMENT, RUN_OPS, PairAlignment, PairScore, path_scores
from gpualign_plugin.pairwise.modes import checked_pair
from gpualign_plugin.runtime import kernels
from gpualign_plugin.runtime.gpu import probe
from gpualign_plugin.runtime.warm import load_in_background
from gpualign_plugin.scoring import MODE_CODES, NEG_INF, ScoringScheme

WARPS_PER_BLOCK = 4
RING_BYTES = 64 + 64 * 8
"""Shared memory per warp besides its query profile: the target-letter ring and the output ring."""
SWEEP_SCORE, SWEEP_CHECKPOINTS, SWEEP_DIRECTIONS = 0, 1, 2
"""What a sweep writes (the ``KIND`` template argument of ``striped_sweep`` in striped.cu)."""
_SOURCE = "pairwise/striped.cu"
_PACKED_SOURCE = "pairwise/packed16.cu"
PACKED_ROWS = 1024
"""Query rows one warp of the packed sweep takes: two strips of 32 lanes x 16 rows."""
PACKED_CLASSES = 6
"""Letters of the packed sweep's profile: A, C, G, T, every other code, and the sentinel that
scores -128 against everything (columns before the first and after the last, padding rows)."""
PACKED_SHARED_PER_WARP = PACKED_CLASSES * PACKED_ROWS + 128 + 64 * 4 + 4 * 4 + 32 * 32
"""The packed sweep's shared memory per warp: profile, letter ring, output ring, bases, and each
lane's snapshot of the column of its best cell (bytes)."""
PACKED_MAX_STEP = 600
"""Largest ``max_sub + gap_open + gap_extend`` (``C``) the packed sweep takes. Neighbouring cells
differ by at most ``C``; a lane's values stay within ``50 C`` of its base (15 rows, the lane
above, 32 steps of drift, E and F below H), inside the 32768 on either side of the bias."""


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


POLL_CELLS = 1 << 32
"""Sweeps of at least this many cells (a few milliseconds on an H100) report progress while
they run; smaller ones when they end."""
POLL_SECONDS = 0.25
"""Seconds between two looks at a running sweep's ready flags."""


def flag_cells(flags: np.ndarray, strip: int, height: int, width: int) -> int:
    """Cells a running sweep has finished, from a copy of its ready flags.

    ``flags`` (int32, ``2 * batches``) is :meth:`_Sweep.run`'s hand-over flag array: entry
    ``(k % 2) * batches + c`` holds the last strip ``k`` that published column batch ``c``
    (columns ``32 c + 1 .. 32 c + 32``), -1 before any. Strips ``0..K_c`` (``K_c`` the larger
    of the two entries) have finished batch ``c``, so the count is the sum over batches of
    ``min((K_c + 1) strip, height)`` rows times the batch's columns. It never decreases while
    the sweep runs (each entry only grows); the last strip publishes nothing, so its cells
    (and those of a one-strip sweep) count only when the sweep ends.
    """
    batches = len(flags) // 2
    last = np.maximum(flags[:batches], flags[batches:]).astype(np.int64)
    rows = np.minimum((np.maximum(last, -1) + 1) * strip, height)
    columns = np.full(batches, 32, dtype=np.int64)
    if batches:
        columns[-1] = width - 32 * (batches - 1)
    return int(rows @ columns)


class _FlagWatch:
    """Reports a running sweep's progress: a host thread copies its ready flags every
    :data:`POLL_SECONDS` (an asynchronous copy on its own non-blocking stream into pinned
    memory, ordered after the flags' initialisation) and calls ``progress`` with the cells
    finished since the last look (:func:`flag_cells`). The kernel is not touched."""

    def __init__(self, flags, batches: int, strip: int, height: int, width: int, progress, device: int):
        import cupy

        self.flags, self.strip, self.height, self.width = flags, strip, height, width
        self.progress, self.device = progress, device
        self.reported = 0
        self.ready = cupy.cuda.Event(disable_timing=True)
        self.ready.record()  # after the flags were set to -1 on the sweep's stream
        self.host = kernels.pinned_bytes(8 * batches).view(np.int32)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, name="gpualign-sweep-progress", daemon=True)
        self._thread.start()

    def _poll(self) -> None:
        import cupy

        with cupy.cuda.Device(self.device):
            stream = cupy.cuda.Stream(non_blocking=True)
            stream.wait_event(self.ready)
            while not self._stop.wait(POLL_SECONDS):
                cupy.cuda.runtime.memcpyAsync(self.host.ctypes.data, self.flags.data.ptr, self.host.nbytes,
                                              cupy.cuda.runtime.memcpyDeviceToHost, stream.ptr)
                stream.synchronize()
                done = flag_cells(self.host, self.strip, self.height, self.width)
                if done > self.reported and not self._stop.is_set():
                    self.progress(done - self.reported)
                    self.reported = done

    def stop(self) -> int:
        """Stop looking (the sweep has ended); returns the cells reported so far."""
        self._stop.set()
        self._thread.join()
        return self.reported


@contextlib.contextmanager
def _sweep_progress(flags, batches: int, strip: int, height: int, width: int, progress, device: int):
    """Around one synchronous sweep launch of ``height x width`` cells: ``progress`` (or None)
    hears of them while the sweep runs, from its ready flags (:class:`_FlagWatch`, for sweeps of
    at least :data:`POLL_CELLS`), and of the rest once it has ended without an error."""
    cells = height * width
    watch = None
    if progress is not None and cells >= POLL_CELLS:
        watch = _FlagWatch(flags, batches, strip, height, width, progress, device)
    try:
        yield
    finally:
        reported = watch.stop() if watch is not None else 0
    if progress is not None and cells > reported:
        progress(cells - reported)


def column0(rows: np.ndarray, mode: str, gap_open: int, gap_extend: int) -> np.ndarray:
    """``H(i, 0)`` (``int32``) for the 1-based rows ``rows`` in ``mode``: 0 in local mode, else the
    cost of a gap of ``i``."""
    if mode == "local":
        return np.zeros(len(rows), dtype=np.int32)
    return (-(gap_open + np.asarray(rows, dtype=np.int64) * gap_extend)).astype(np.int32)


def row0(columns: np.ndarray, mode: str, gap_open: int, gap_extend: int) -> np.ndarray:
    """``H(0, j)`` (``int32``) for the columns ``columns`` in ``mode``: the cost of a gap of ``j`` in
    global mode, else 0 (``H(0, 0) = 0``)."""
    if mode != "global":
        return np.zeros(len(columns), dtype=np.int32)
    columns = np.asarray(columns, dtype=np.int64)
    return np.where(columns == 0, 0, -(gap_open + columns * gap_extend)).astype(np.int32)


@functools.lru_cache(maxsize=None)
def _striped_warps(device: int, local: bool, alpha: int, compute_capability: tuple | None = None) -> int:
    """Warps of the striped sweep resident on ``device`` at once (the persistent grid), measured on
    the R=8 kernel for an alphabet of ``alpha`` letters."""
    name = f"striped_sweep<8,{'true' if local else 'false'},{SWEEP_SCORE}>"
    kernel = kernels.get_kernel(device, _SOURCE, name, compute_capability)
    shared = WARPS_PER_BLOCK * (alpha * 256 + RING_BYTES)
    return WARPS_PER_BLOCK * kernels.resident_blocks(kernel, 32 * WARPS_PER_BLOCK, shared, device)


def _stride(first, second) -> int:
    """The stride, in ``int32`` values, of two device arrays a sweep reads with one stride."""
    stride = first.strides[0] // first.itemsize if first.size > 1 else 1
    if second.size > 1 and second.strides[0] // second.itemsize != stride:
        raise ValueError("a sweep's paired boundary arrays must have one stride")
    return stride


class _ChunkBuffers:
    """The hand-over rows, ready flags and ticket of one stream's chunk re-solves, made once per
    traceback for chunks of at most ``width`` columns and reset before each launch (two
    ``cudaMemsetAsync``: flags to -1, the ticket to 0) instead of allocated and filled per chunk."""

    def __init__(self, cupy, width: int):
        self.cupy = cupy
        self.slots = cupy.empty(2 * width * 2, dtype=cupy.int32)
        self.flags_and_ticket = cupy.empty(2 * -(-width // 32) + 1, dtype=cupy.int32)

    def reset(self, width: int):
        """``(slots, flags, ticket)`` for a chunk of ``width`` columns, the flags and ticket reset on
        the current stream."""
        cupy = self.cupy
        batches = -(-width // 32)
        flags, ticket = self.flags_and_ticket[:2 * batches], self.flags_and_ticket[-1:]
        stream = cupy.cuda.get_current_stream().ptr
        cupy.cuda.runtime.memsetAsync(flags.data.ptr, 0xFF, flags.nbytes, stream)
        cupy.cuda.runtime.memsetAsync(ticket.data.ptr, 0, ticket.nbytes, stream)
        return self.slots[:2 * width * 2], flags, ticket


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
        self.max_sub = int(scheme.matrix.max())
        self.pruned_cells = 0
        self.goal_pruned_cells = 0
        self.resident_warps = None
        self._padded_query = None
        self.compute_capability = compute_capability
        self.multiprocessors = probe(device).multiprocessors

    def kernel(self, rows: int, kind: int):
        """``(name, kernel)`` of the sweep with ``rows`` per lane; ``kind`` is one of ``SWEEP_*``."""
        name = f"striped_sweep<{rows},{'true' if self.local else 'false'},{kind}>"
        return name, kernels.get_kernel(self.device, _SOURCE, name, self.compute_capability)

    def warps(self) -> int:
        """Warps resident on the device at once (the persistent grid), measured on the R=8 kernel."""
        if self.resident_warps is None:
            self.resident_warps = _striped_warps(self.device, self.local, self.alpha, self.compute_capability)
        return self.resident_warps

    def column0(self, rows: np.ndarray) -> np.ndarray:
        """``H(i, 0)`` for the 1-based rows ``rows``."""
        return column0(rows, self.mode, self.gap_open, self.gap_extend)

    def row0(self, columns: np.ndarray) -> np.ndarray:
        """``H(0, j)`` for the columns ``columns`` (``H(0, 0) = 0``)."""
        return row0(columns, self.mode, self.gap_open, self.gap_extend)

    def run(self, r0: int, c0: int, height: int, width: int, top_h, top_f, left_h, left_e, rows: int,
            dirs: bool = False, track_best: bool = False, last_row: int = 0,
            row_ckpt=None, col_ckpt=None, every: int = 0, sync: bool = True, dirs_out=None,
            progress=None, prune: bool = False, link=None, goal: int | None = None,
            buffers: _ChunkBuffers | None = None):
        """Sweep rows ``r0+1..r0+height`` x columns ``c0+1..c0+width``.

        ``top_h``/``top_f``: device int32, ``width + 1`` values of row ``r0`` (columns
        ``c0..c0+width``); ``left_h``/``left_e``: device int32, ``height`` values of column ``c0``;
        each pair contiguous or views with one stride (the ``(H, F)`` and ``(H, E)`` pairs of
        checkpoints), read in place.
        ``buffers`` (a chunk re-solve, with ``dirs``): the hand-over rows, flags and ticket come
        from there and the rows from :meth:`padded_query`, so the launch allocates and copies
        nothing (the per-chunk host work was most of a window's time, docs/GPU.md).
        Returns ``(best, last_row_h, dirs)`` device arrays (or None where not asked); ``dirs``
        holds four bits a cell, two cells a byte (the layout :func:`~gpualign_plugin.pairwise.gpu_walk.trace_chunk` reads), and goes to
        ``dirs_out`` when given (a large enough uint8 device array).
        Runs on the current stream; without ``sync`` it returns before the kernel finishes.
        ``progress`` (with ``sync`` only) is called with cells done, ``height * width`` in
        all: while a sweep of at least :data:`POLL_CELLS` runs, as :class:`_FlagWatch` sees
        strips hand their rows over; the rest when it ends.
        ``prune`` (local, with ``track_best`` and ``sync``): skip the blocks that cannot reach
        the best score found so far (block pruning, docs/GPU.md). Only the best cell and a
        traceback from it through the checkpoints stay exact: the caller must want nothing else
        of the rectangle. The skipped cells are added to :attr:`pruned_cells`.
        ``goal`` (local, with ``sync``; a traceback's region sweep): block pruning against this
        fixed score instead, a lower bound of the value the path needs at the rectangle's
        bottom-right cell: a block from which no path reaches that cell with ``goal`` is skipped.
        Only cells on the paths that reach ``goal`` there stay exact (the traceback's, and any
        it could tie with); the skipped cells are added to :attr:`goal_pruned_cells`.
        ``link`` (a sweep of a whole-height slab of a split matrix): ``(struct, left)`` from
        :meth:`_SlabLink.slab_args`; with ``left`` (the pointers of the column streamed by the
        slab on the left) ``left_h`` and ``left_e`` are ignored.
        """
        cp = self.cupy
        strip = 32 * rows
        strips = -(-height // strip)
        padded = strips * strip
        batches = -(-width // 32)
        if buffers is not None:
            query = self.padded_query()[r0:r0 + padded]
            slots, flags, ticket = buffers.reset(width)
        else:
            query = cp.zeros(padded, dtype=cp.uint8)
            query[:height] = self.d_query[r0:r0 + height]
            slots = cp.empty(2 * width * 2, dtype=cp.int32)
            flags = cp.full(2 * batches, -1, dtype=cp.int32)
            ticket = cp.zeros(1, dtype=cp.int32)
        struct, streamed = link if link is not None else (None, None)
        lh, le = streamed if streamed is not None else (left_h, left_e)
        top_stride, left_stride = _stride(top_h, top_f), _stride(lh, le)
        best = cp.empty(3 * strips, dtype=cp.int32) if track_best else None
        goal = goal if self.local and sync else None
        prune = (prune and track_best and self.local and sync) or goal is not None
        prune_best = cp.full(1, goal or 0, dtype=cp.int32) if prune else None
        pruned = cp.zeros(1, dtype=cp.uint64) if prune else None
        last = cp.empty(width + 1, dtype=cp.int32) if last_row else None
        dir_bytes = None
        if dirs:
            size = strips * (width + 31) * strip // 2
            dir_bytes = dirs_out[:size] if dirs_out is not None else cp.empty(size, dtype=cp.uint8)
        kind = SWEEP_DIRECTIONS if dirs else (SWEEP_CHECKPOINTS if row_ckpt is not None else SWEEP_SCORE)
        name, kernel = self.kernel(rows, kind)
        shared = WARPS_PER_BLOCK * (self.alpha * strip + RING_BYTES)
        grid = max(1, min(-(-strips // WARPS_PER_BLOCK), self.warps() // WARPS_PER_BLOCK))
        null = np.uint64(0)
        i32 = np.int32
        args = (query, self.d_target[c0:c0 + width], self.d_sub, i32(self.alpha), i32(height), i32(width),
                i32(self.gap_open + self.gap_extend), i32(self.gap_extend),
                top_h, top_f, lh, le,
                slots, flags, ticket, i32(strips),
                row_ckpt if row_ckpt is not None else null, i32(every or 1),
                i32(row_ckpt.shape[0] if row_ckpt is not None else 0),
                col_ckpt if col_ckpt is not None else null, i32(every or 1),
                i32(col_ckpt.shape[0] if col_ckpt is not None else 0),
                last if last is not None else null, i32(last_row),
                best if best is not None else null,
                dir_bytes if dir_bytes is not None else null,
                prune_best if prune else null, pruned if prune else null, i32(self.max_sub),
                struct if struct is not None else null, i32(goal is not None), i32(top_stride),
                i32(left_stride))
        with _sweep_progress(flags, batches, strip, height, width, progress if sync else None, self.device):
            kernels.launch(kernel, name, grid, 32 * WARPS_PER_BLOCK, args, shared,
                           f"rectangle {height} x {width} at ({r0}, {c0}), {strips} strips of {strip} rows",
                           sync)
        if goal is not None:
            self.goal_pruned_cells += int(pruned.get()[0])
        elif prune:
            self.pruned_cells += int(pruned.get()[0])
        return best, last, dir_bytes

    def padded_query(self):
        """The query's codes on the device followed by a strip of the tallest sweep of padding,
        made once: a chunk's rows are a view of it. Rows past the end of a rectangle
        may then hold the next real letters instead of zeros; no cell of the rectangle depends
        on them, and a chunk re-solve keeps only its rows' directions."""
        if self._padded_query is None:
            padded = self.cupy.zeros(self.m + 32 * max(SCORE_ROWS), dtype=self.cupy.uint8)
            padded[:self.m] = self.d_query
            # Ready before any stream reads it: the chunks' streams do not wait for this one.
            self.cupy.cuda.get_current_stream().synchronize()
            self._padded_query = padded
        return self._padded_query

    def full_boundaries(self):
        """Row 0 and column 0 of the whole matrix as device arrays ``(top_h, top_f, left_h, left_e)``."""
        cp = self.cupy
        top_h = cp.asarray(self.row0(np.arange(self.n + 1)))
        top_f = cp.full(self.n + 1, NEG_INF, dtype=cp.int32)
        left_h = cp.asarray(self.column0(np.arange(1, self.m + 1)))
        left_e = cp.full(self.m, NEG_INF, dtype=cp.int32)
        return top_h, top_f, left_h, left_e


_LINK_FIELDS = np.dtype([("ready_in", "u8"), ("ready_out", "u8"), ("edge_h", "u8"), ("edge_e", "u8"),
                         ("best_in", "u8"), ("best_out", "u8"), ("abort", "u8"), ("cols_after", "i4"),
                         ("padding", "i4")])
"""``struct SlabLink`` of striped.cu, field for field (64 bytes)."""


class _SlabLink:
    """Page-locked host memory joining the column slabs of one matrix split over devices.

    Slab ``d`` (columns ``bounds[d]+1 .. bounds[d+1]``, every row) streams its last column
    (H and E of rows ``1 .. padded``) to slab ``d + 1`` strip by strip, each strip's rows and
    the best score slab ``d`` knew then (block pruning) followed by its ready flag; the slab on
    the right starts a strip once the flags of that strip and the one above are set. The memory
    is mapped (unified addressing), so kernels on every device use the host addresses; 8 bytes
    a row and 8 a strip per boundary in all.
    """

    def __init__(self, bounds: list, padded: int, strips: int):
        slabs = len(bounds) - 1
        self.bounds, self.n = bounds, bounds[-1]

        def zeros(count: int) -> np.ndarray:
            array = kernels.pinned_bytes(4 * count).view(np.int32)
            array[:] = 0
            return array

        self.edges = [(zeros(padded), zeros(padded)) for _ in range(slabs - 1)]
        self.ready = [zeros(strips) for _ in range(slabs - 1)]
        self.bests = [zeros(strips) for _ in range(slabs - 1)]
        self.abort = zeros(1)

    def slab_args(self, d: int):
        """``link`` of :meth:`_Sweep.run` for slab ``d``, made on the current device."""
        import cupy

        struct = np.zeros(1, dtype=_LINK_FIELDS)
        if d > 0:
            struct["ready_in"] = self.ready[d - 1].ctypes.data
            struct["best_in"] = self.bests[d - 1].ctypes.data
        if d + 1 < len(self.bounds) - 1:
            struct["ready_out"] = self.ready[d].ctypes.data
            struct["best_out"] = self.bests[d].ctypes.data
            struct["edge_h"], struct["edge_e"] = (x.ctypes.data for x in self.edges[d])
        struct["abort"] = self.abort.ctypes.data
        struct["cols_after"] = self.n - self.bounds[d + 1]
        left = tuple(np.uint64(x.ctypes.data) for x in self.edges[d - 1]) if d > 0 else None
        return cupy.asarray(struct.view(np.uint8)), left

    def fail(self) -> None:
        """Let every waiting slab go on (another one failed; the results are discarded)."""
        self.abort[0] = 1


MIN_SLAB_COLUMNS = 4096
"""A matrix is split over devices only into slabs at least this wide (narrower ones would spend
more on starting a device than they save)."""

SLAB_SPLIT_RATE = 0.9
"""Score per row, in units of the largest substitution score, of the pair that
:func:`column_slabs` models when block pruning runs (0.9: about 98% identity at match 1,
mismatch -3). 0 splits into equal widths."""


def column_slabs(m: int, n: int, slabs: int, pruning: bool = False) -> list:
    """Column bounds (``bounds[0] = 0``, ``bounds[-1] = n``) of ``slabs`` slabs of an ``m x n`` matrix.

    Without pruning the slabs are as equal as possible. With block pruning (local score
    passes) each slab gets an equal share of the cells expected to survive it, modelled on a
    pair aligned from the top left at :data:`SLAB_SPLIT_RATE` (``c``) per row: when the strips
    down to row ``i`` have found about ``c i``, a cell ``(i, j)`` survives only while both
    ``m - i`` and ``n - j`` are at least ``c i``, so column ``j`` keeps about
    ``min(m / (1 + c), (n - j) / c)`` rows and the left slabs get fewer columns (measured on
    10 Mbp pairs in docs/GPU.md, where a model that also charged each slab for waiting on the
    first strip of the slabs on its left did worse). The split only moves work between
    devices: the result is the same for any bounds. Equal widths where the model would make a
    slab narrower than :data:`MIN_SLAB_COLUMNS`.
    """
    equal = [n * d // slabs for d in range(slabs + 1)]
    rate = SLAB_SPLIT_RATE
    if not pruning or rate <= 0 or slabs == 1:
        return equal
    j = np.linspace(0.0, n, 4097)
    rows = np.minimum(m / (1 + rate), (n - j) / rate)
    work = np.concatenate([[0.0], np.cumsum((rows[1:] + rows[:-1]) / 2)])
    inner = np.interp(work[-1] * np.arange(1, slabs) / slabs, work, j).round().astype(int)
    bounds = [0, *(int(b) for b in inner), n]
    return bounds if min(np.diff(bounds)) >= MIN_SLAB_COLUMNS else equal


def slab_devices(n: int, devices) -> list:
    """The devices that get a slab of ``n`` columns: the first ones, as many as give slabs of at
    least :data:`MIN_SLAB_COLUMNS` columns (at least one)."""
    return list(devices)[:max(1, min(len(devices), n // MIN_SLAB_COLUMNS))]


def slab_layout(m: int, n: int, devices, mode: str, prune: bool) -> tuple[list, list]:
    """The devices (:func:`slab_devices`) and column bounds (:func:`column_slabs`) of an ``m x n``
    matrix on ``devices``; block pruning runs in local mode when ``prune`` is true."""
    devices = slab_devices(n, devices)
    return devices, column_slabs(m, n, len(devices), prune and mode == "local")


class _Slabs:
    """One matrix on one or more devices: ``devices[d]`` sweeps the column slab ``d``
    (:func:`column_slabs`; one slab per device, fewer when the slabs would be narrower than
    :data:`MIN_SLAB_COLUMNS`). With several slabs the devices run at once, slab ``d + 1`` one
    strip behind slab ``d`` (:class:`_SlabLink`); a device named twice runs its slabs one after
    the other. The results are those of one sweep over the whole matrix; ``slab_seconds`` holds
    each slab's sweep time of the last :meth:`score_pass`.

    ``packed``: a score pass that writes checkpoints runs the packed sweep (one slab, every
    :func:`packs_checkpoints`); None takes it where :func:`score_kernel` would for a score."""

    def __init__(self, query, target, scheme: ScoringScheme, mode: str, devices, prune: bool,
                 compute_capability=None, packed: bool | None = None):
        import cupy

        self.cupy = cupy
        self.scheme = scheme
        self.m, self.n, self.mode = len(query), len(target), mode
        self.devices, self.bounds = slab_layout(self.m, self.n, devices, mode, prune)
        if packed is None:
            packed = compute_capability is None and len(self.devices) == 1 and \
                score_kernel(self.m, scheme, mode, self.devices[0], None, prune) == "packed16"
        self.packed = packed and len(self.devices) == 1
        self.kernel = "striped"
        self.slab_seconds = [0.0] * len(self.devices)
        self.sweeps = []
        for device in self.devices:
            with cupy.cuda.Device(device):
                self.sweeps.append(_Sweep(query, target, scheme, mode, device, compute_capability))
        self.multiprocessors = min(s.multiprocessors for s in self.sweeps)

    @property
    def pruned_cells(self) -> int:
        """Cells skipped by block pruning in all slabs' sweeps."""
        return sum(s.pruned_cells for s in self.sweeps)

    def profile(self) -> dict:
        """``pruned_cells``, ``slabs`` and ``kernel`` (the last score pass's sweep, ``'packed16'`` or
        ``'striped'``); with several slabs also their ``slab_bounds`` (columns),
        ``slab_pruned_cells`` and ``slab_seconds`` (each slab's sweep, waits included)."""
        profile = {"pruned_cells": self.pruned_cells, "slabs": len(self.sweeps), "kernel": self.kernel}
        if len(self.sweeps) > 1:
            profile.update(slab_bounds=self.bounds, slab_pruned_cells=[s.pruned_cells for s in self.sweeps],
                           slab_seconds=[round(x, 3) for x in self.slab_seconds])
        return profile

    def top_regions(self) -> list:
        """Per slab a :class:`_Region` of all rows with its row 0 and, for the first, column 0
        (the others' left column is known once the slab on the left has swept: ``None`` until
        :meth:`score_pass` fills it)."""
        regions = []
        for d, sweep in enumerate(self.sweeps):
            c0, c1 = self.bounds[d], self.bounds[d + 1]
            with self.cupy.cuda.Device(sweep.device):
                top_h, top_f, left_h, left_e = sweep.full_boundaries()
                if d > 0:
                    left_h = left_e = None
                regions.append(_Region(0, c0, self.m, c1 - c0, top_h[c0:c1 + 1], top_f[c0:c1 + 1],
                                       left_h, left_e))
        return regions

    def score_pass(self, rows: int, regions: list, prune: bool, progress=None) -> PairScore:
        """Sweep every slab (with the level-0 checkpoints of ``regions`` when they have them) and
        return the end cell; afterwards the regions of slabs 1.. hold their left column."""
        cp = self.cupy
        if self.packed and regions[0].row_ckpt is not None and packs_checkpoints(regions[0].every):
            sweep = self.sweeps[0]
            started = time.perf_counter()
            self.kernel = "packed16"
            end = _score_packed(sweep.query, sweep.target, self.scheme, self.mode, sweep.device, progress,
                                regions[0])
            self.slab_seconds[0] = time.perf_counter() - started
            return end
        self.kernel = "striped"
        strip = 32 * rows
        strips = -(-self.m // strip)
        slabs = len(self.sweeps)
        link = _SlabLink(self.bounds, strips * strip, strips) if slabs > 1 else None
        outs: list = [None] * slabs
        errors: list = []

        def sweep_slab(d: int) -> None:
            sweep, region = self.sweeps[d], regions[d]
            started = time.perf_counter()
            try:
                with cp.cuda.Device(sweep.device):
                    outs[d] = sweep.run(0, region.c0, self.m, region.width, region.top_h, region.top_f,
                                        region.left_h, region.left_e, rows, track_best=sweep.local,
                                        last_row=0 if sweep.local else self.m, row_ckpt=region.row_ckpt,
                                        col_ckpt=region.col_ckpt, every=region.every, progress=progress,
                                        prune=prune, link=link.slab_args(d) if link is not None else None)
            except BaseException as exc:
                if link is not None:
                    link.fail()
                errors.append(exc)
            self.slab_seconds[d] = time.perf_counter() - started

        if len(set(self.devices)) == slabs and slabs > 1:
            threads = [threading.Thread(target=sweep_slab, args=(d,), name=f"gpualign-slab-{d}")
                       for d in range(slabs)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
        else:
            for d in range(slabs):
                if not errors:
                    sweep_slab(d)
        if errors:
            raise errors[0]
        for d in range(1, slabs):
            with cp.cuda.Device(self.sweeps[d].device):
                regions[d].left_h, regions[d].left_e = (cp.asarray(x[:self.m]) for x in link.edges[d - 1])
        return self._end_cell(outs)

    def _end_cell(self, outs: list) -> PairScore:
        """The end cell from the slabs' per-strip bests (local) or last rows (global, semiglobal)."""
        m, n = self.m, self.n
        if self.sweeps[0].local:
            cells = []
            for c0, (best, _, _) in zip(self.bounds, outs):
                rows = best.get().reshape(-1, 3).astype(np.int64)
                rows[:, 2] += c0
                cells.append(rows)
            cells = np.concatenate(cells)
            return local_end_cells(cells, np.array([len(cells)]))[0]
        row = np.empty(n + 1, dtype=np.int64)
        for c0, c1, (_, last, _) in zip(self.bounds, self.bounds[1:], outs):
            row[c0 + 1:c1 + 1] = last.get()[1:c1 - c0 + 1]
        row[0] = self.sweeps[0].column0(np.array([m]))[0]
        if self.mode == "global":
            return PairScore(int(row[n]), m, n)
        j = int(np.argmax(row))  # first maximum: the smallest j
        return PairScore(int(row[j]), m, j)


def local_end_cells(cells: np.ndarray, strips: np.ndarray) -> list[PairScore]:
    """Per pair, its local end cell from the best cells of its strips: the highest score, then
    the smallest row, then the smallest column (the "Pairwise" end-cell rule); ``(0, 0, 0)``
    when no cell is positive.

    ``cells`` are ``(score, row, column)`` rows, one per strip, the pairs' strips one after
    another; ``strips`` the number of strips of each pair (each at least one).
    """
    owner = np.repeat(np.arange(len(strips)), strips)
    order = np.lexsort((cells[:, 2], cells[:, 1], -cells[:, 0], owner))
    firsts = np.concatenate(([0], np.cumsum(strips)[:-1]))
    ends = []
    for at in firsts:
        score, i, j = (int(x) for x in cells[order[at]])
        ends.append(PairScore(score, i, j) if score > 0 else PairScore(0, 0, 0))
    return ends


def _require_int8(scheme: ScoringScheme) -> None:
    """Refuse (:class:`InputError`) a scheme whose substitution scores do not fit the int8 query
    profiles of the GPU kernels."""
    if not scheme.fits_int8:
        raise InputError("the GPU engine needs substitution scores between -128 and 127 "
                         f"({scheme.name} has {scheme.matrix.min()}..{scheme.matrix.max()})")


def _prepare(query_codes, target_codes, scheme: ScoringScheme, mode: str):
    """The CPU engine's checks and ``uint8`` arrays, plus the int8 bound of the GPU's query profile."""
    query, target = checked_pair(query_codes, target_codes, scheme, mode)
    _require_int8(scheme)
    return query, target


def score_pair(query_codes, target_codes, scheme: ScoringScheme, mode: str, device: int = 0,
               progress=None, devices=None) -> PairScore:
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
    progress : callable, optional
        Called (from a helper thread too) with DP cells as the sweep computes them,
        ``m * n`` in all (see :meth:`_Sweep.run`).
    devices : list of int, optional
        Split the matrix by columns over these devices, as :func:`align_pair` does.

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
    return _score(query_codes, target_codes, scheme, mode, device, progress=progress, devices=devices)


def _score(query_codes, target_codes, scheme, mode, device, rows=None, compute_capability=None,
           progress=None, prune: bool = True, profile: dict | None = None, devices=None,
           packed: bool | None = None):
    """:func:`score_pair` with the kernel variant forced (rows per lane, DPX by compute capability,
    block pruning in local mode on or off, the packed sweep or the striped one); ``profile`` gets
    ``pruned_cells``, ``slabs`` and ``kernel`` (``'packed16'`` or ``'striped'``).

    ``packed=None`` takes the packed sweep where it applies (:func:`packed_table`), on one device,
    with neither ``rows`` nor ``compute_capability`` forced; in local mode with block pruning only
    while all double strips fit on the device at once, because the packed sweep does not prune
    and beyond one wave of warps the striped sweep's pruning saves more (docs/GPU.md)."""
    import cupy

    query, target = _prepare(query_codes, target_codes, scheme, mode)
    if len(query) == 0 or len(target) == 0:
        from gpualign_plugin.pairwise import cpu

        return cpu.score_pair(query, target, scheme, mode)
    m, n = len(query), len(target)
    for d in set(devices or [device]):
        with cupy.cuda.Device(d):
            kernels.check_memory(2 * (m + n) + 24 * n + 16 * m + 4096, f"scoring {m} x {n}")
    if packed is None:
        packed = rows is None and compute_capability is None and \
            score_kernel(m, scheme, mode, device, devices, prune) == "packed16"
    elif packed and packed_table(scheme) is None:
        raise InputError(f"the packed GPU sweep cannot score {scheme.name} exactly")
    if packed:
        end = _score_packed(query, target, scheme, mode, (devices or [device])[0], progress)
        if profile is not None:
            profile.update(pruned_cells=0, slabs=1, kernel="packed16")
        return end
    slabs = _Slabs(query, target, scheme, mode, devices or [device], prune, compute_capability, packed=False)
    rows = rows or _rows_per_lane(m, slabs.multiprocessors)
    end = slabs.score_pass(rows, slabs.top_regions(), prune, progress)
    if profile is not None:
        profile.update(slabs.profile())
    return end


def score_kernel(m: int, scheme: ScoringScheme, mode: str, device: int = 0, devices=None,
                 prune: bool = True) -> str:
    """The sweep :func:`score_pair` runs for ``m`` query rows: ``'packed16'`` where the packed sweep
    applies (:func:`packed_table`) on one device (``devices`` names at most one) with Hopper's DPX
    instructions (compute capability 9.0 or later: it was built and measured on them; elsewhere
    its 16-bit instructions are emulated), else ``'striped'``.

    In local mode with block pruning the packed sweep, which does not prune, runs only while the
    striped sweep would hold all its strips on the device at once: there the chain of strips sets
    the time and pruning saves little (1 Mbp: packed 0.61 s, striped with pruning 0.77 s on an
    H100), while beyond it strips run in waves, time follows work and pruning skips half of it
    (3 Mbp: striped 3.5-3.8 s, packed 4.1-4.6 s; docs/GPU.md)."""
    devices = devices or [device]
    if len(devices) > 1 or packed_table(scheme) is None or probe(devices[0]).compute_capability < (9, 0):
        return "striped"
    if mode == "local" and prune:
        strips = -(-m // (32 * _rows_per_lane(m, probe(devices[0]).multiprocessors)))
        if strips > _striped_warps(devices[0], True, scheme.alphabet.size):
            return "striped"
    return "packed16"


def packed_table(scheme: ScoringScheme) -> np.ndarray | None:
    """The packed sweep's ``PACKED_CLASSES x PACKED_CLASSES`` ``int8`` table for ``scheme``, or None
    where its arithmetic would not be exact.

    Row and column are letter classes (A, C, G, T = 0..3, every other code 4, the sentinel 5);
    an entry is ``score + gap_open + gap_extend`` (-128 with the sentinel). It applies to DNA
    schemes in which every code past T scores as one letter against every code (the default
    match/mismatch/ambiguity schemes), with every shifted score in -127..127 and
    ``max_sub + gap_open + gap_extend`` at most :data:`PACKED_MAX_STEP`.
    """
    matrix = np.asarray(scheme.matrix, dtype=np.int64)
    sentinel = PACKED_CLASSES - 1
    if not scheme.is_dna or matrix.shape[0] < sentinel:
        return None
    classes = np.minimum(np.arange(matrix.shape[0]), sentinel - 1)
    if not np.array_equal(matrix, matrix[np.ix_(classes, classes)]):
        return None
    oe = scheme.gap_open + scheme.gap_extend
    shifted = matrix[:sentinel, :sentinel] + oe
    if shifted.min() < -127 or shifted.max() > 127 or int(matrix.max()) + oe > PACKED_MAX_STEP:
        return None
    table = np.full((PACKED_CLASSES, PACKED_CLASSES), -128, dtype=np.int8)
    table[:sentinel, :sentinel] = shifted
    return table


def _packed_kernel(local: bool, device: int, checkpoints: bool = False):
    """``(name, kernel)`` of the packed sweep (``checkpoints``: the instance that also writes an
    alignment's row and column checkpoints), asking for all of L1 as shared memory so that the
    shared memory of the blocks its registers allow per multiprocessor (six, or five for a local
    sweep) never caps them."""
    name = f"packed16_sweep<{'true' if local else 'false'},{'true' if checkpoints else 'false'}>"
    kernel = kernels.get_kernel(device, _PACKED_SOURCE, name)
    kernel.preferred_shared_memory_carveout = 100
    return name, kernel


@functools.lru_cache(maxsize=None)
def _packed_warps(device: int, local: bool, checkpoints: bool = False) -> int:
    """Warps of the packed sweep (local, or global and semiglobal; with or without checkpoints)
    resident on ``device`` at once (the persistent grid)."""
    _name, kernel = _packed_kernel(local, device, checkpoints)
    return WARPS_PER_BLOCK * kernels.resident_blocks(kernel, 32 * WARPS_PER_BLOCK,
                                                     WARPS_PER_BLOCK * PACKED_SHARED_PER_WARP, device)


def packs_checkpoints(every: int) -> bool:
    """Whether the packed sweep can write checkpoints every ``every`` rows and columns: a power of
    two that is a multiple of :data:`PACKED_ROWS` (row checkpoints fall on double-strip edges)."""
    return every > 0 and every % PACKED_ROWS == 0 and every & (every - 1) == 0


def _score_packed(query: np.ndarray, target: np.ndarray, scheme: ScoringScheme, mode: str, device: int,
                  progress=None, region: "_Region | None" = None) -> PairScore:
    """Score and end cell with the packed sweep (``scheme`` passes :func:`packed_table`; both
    sequences non-empty ``uint8`` codes); ``progress`` as in :meth:`_Sweep.run`.

    ``region`` (the whole matrix with its row 0 and checkpoint arrays, as :class:`_Traceback`
    shapes them, every ``region.every`` rows and columns, :func:`packs_checkpoints`): the sweep
    also writes the row and column checkpoints there, the values the striped sweep's
    ``SWEEP_CHECKPOINTS`` writes without pruning."""
    import cupy as cp

    m, n = len(query), len(target)
    local = mode == "local"
    checkpoints = region is not None
    with cp.cuda.Device(device):
        doubles = -(-m // PACKED_ROWS)
        padded = doubles * PACKED_ROWS
        sentinel = PACKED_CLASSES - 1
        classes = np.full(padded, sentinel, dtype=np.uint8)
        classes[:m] = np.minimum(query, sentinel - 1)
        rows = cp.asarray(classes)
        columns = cp.asarray(np.minimum(target, sentinel - 1).astype(np.uint8))
        gaps = (mode, scheme.gap_open, scheme.gap_extend)
        left_h = np.concatenate(([0], column0(np.arange(1, padded + 1), *gaps))).astype(np.int32)
        batches = -(-n // 32)
        flags = cp.full(2 * batches, -1, dtype=cp.int32)
        best = cp.zeros(3 * doubles, dtype=cp.int32) if local else None
        last = None if local else cp.zeros(n + 1, dtype=cp.int32)
        name, kernel = _packed_kernel(local, device, checkpoints)
        grid = max(1, min(-(-doubles // WARPS_PER_BLOCK), _packed_warps(device, local, checkpoints) // WARPS_PER_BLOCK))
        null, i32 = np.uint64(0), np.int32
        if checkpoints:
            top_h, top_f = cp.ascontiguousarray(region.top_h), cp.ascontiguousarray(region.top_f)
            row_ckpt, col_ckpt = region.row_ckpt, region.col_ckpt
            ckpt_args = (row_ckpt, i32(row_ckpt.shape[0]), col_ckpt, i32(col_ckpt.shape[1]), i32(region.every))
        else:
            top_h, top_f = cp.asarray(row0(np.arange(n + 1), *gaps)), cp.full(n + 1, NEG_INF, dtype=cp.int32)
            ckpt_args = (null, i32(0), null, i32(0), i32(PACKED_ROWS))
        args = (rows, columns, cp.asarray(packed_table(scheme).ravel()), i32(m), i32(n),
                i32(scheme.gap_open + scheme.gap_extend), i32(scheme.gap_extend), top_h, top_f,
                cp.asarray(left_h), cp.empty(4 * n, dtype=cp.int32), flags, cp.zeros(1, dtype=cp.int32),
                i32(doubles), last if last is not None else null, i32(m), best if best is not None else null,
                cp.zeros(1, dtype=cp.int32) if local else null, *ckpt_args)
        with _sweep_progress(flags, batches, PACKED_ROWS, m, n, progress, device):
            kernels.launch(kernel, name, grid, 32 * WARPS_PER_BLOCK, args, WARPS_PER_BLOCK * PACKED_SHARED_PER_WARP,
                           f"pair {m} x {n}, {doubles} double strips of {PACKED_ROWS} rows")
        if local:
            return local_end_cells(best.get().reshape(-1, 3).astype(np.int64), np.array([doubles]))[0]
        row = last.get().astype(np.int64)
    row[0] = left_h[m]
    if mode == "global":
        return PairScore(int(row[n]), m, n)
    j = int(np.argmax(row))  # first maximum: the smallest j
    return PairScore(int(row[j]), m, j)


SCORE_ROWS = (16, 8, 4, 2)
"""Rows per lane :class:`PairScorer` chooses from (``striped_score_pairs<R>`` instances)."""
STEP_OVERHEAD_ROWS = 4
"""The time model of :meth:`PairScorer.rows_per_lane`: one wavefront step of a lane costs about
``R + STEP_OVERHEAD_ROWS`` cell updates (the shuffles and the hand-over are paid per step)."""


class PairScorer:
    """Local scores of many (query segment, target slice) pairs on one device, one launch for all.

    One contig against a genome keeps only ``m / (32 R)`` warps of the striped sweep
    busy; placing many contigs pair by pair leaves the device mostly idle. Here the
    strips of all pairs of a call share one ticket (``striped_score_pairs`` in
    striped.cu), so a call fills the device whenever the pairs have enough strips in
    all. The targets are uploaded once; each call uploads its query segments
    (each distinct array once, however many pairs use it). Results are those of
    :func:`score_pair` in local mode, pair by pair: the same score and end cell.

    Memory: the targets, and per call ``16`` bytes per column of every pair (the
    hand-over rows of its strips), its flags and best cells and the padded query
    segments; the pairs of a call are launched in groups that fit ``memory_budget``
    (default :data:`DEFAULT_MEMORY_FRACTION` of the free memory when the scorer is made).

    ``prune`` (default on): block pruning inside each pair (docs/GPU.md), which keeps every
    pair's score and end cell; :attr:`pruned_cells` counts the cells it skipped.
    """

    def __init__(self, targets: list, scheme: ScoringScheme, device: int = 0,
                 memory_budget: int | None = None, prune: bool = True):
        _require_int8(scheme)
        import cupy

        self.cupy, self.scheme, self.device = cupy, scheme, device
        self.alpha = scheme.alphabet.size
        codes = [np.ascontiguousarray(t, dtype=np.uint8) for t in targets]
        self.target_at = np.concatenate(([0], np.cumsum([len(t) for t in codes], dtype=np.int64)))
        with cupy.cuda.Device(device):
            self.d_targets = cupy.asarray(np.concatenate(codes) if codes else np.zeros(1, np.uint8))
            self.d_sub = cupy.asarray(np.ascontiguousarray(scheme.matrix, dtype=np.int32))
            self.budget = (memory_budget if memory_budget is not None
                           else int(kernels.free_bytes() * DEFAULT_MEMORY_FRACTION))
        self.multiprocessors = probe(device).multiprocessors
        self._warps = None
        self.launches = 0
        self.swept_cells = 0  # real rows x columns of every pair scored
        self.prune = prune
        self.pruned_cells = 0
        self.seconds = 0.0

    def kernel(self, rows: int):
        """``(name, kernel)`` of ``striped_score_pairs<rows>``."""
        name = f"striped_score_pairs<{rows}>"
        return name, kernels.get_kernel(self.device, _SOURCE, name)

    def shared_bytes(self, rows: int) -> int:
        """Dynamic shared memory of a block: each warp's query profile and rings."""
        return WARPS_PER_BLOCK * (self.alpha * 32 * rows + RING_BYTES)

    @property
    def warps(self) -> int:
        """Warps resident at once (the persistent grid), measured on the ``R = 16`` kernel."""
        if self._warps is None:
            _name, kernel = self.kernel(16)
            self._warps = WARPS_PER_BLOCK * kernels.resident_blocks(
                kernel, 32 * WARPS_PER_BLOCK, self.shared_bytes(16), self.device)
        return self._warps

    def rows_per_lane(self, heights: np.ndarray, widths: np.ndarray) -> int:
        """``R`` of a call: the least estimated time, the larger of the device's busy time
        (all strips' steps over the resident warps) and the slowest pair's last strip
        (``width + 64 strips`` steps); a step costs ``R + STEP_OVERHEAD_ROWS``."""
        costs = []
        for rows in SCORE_ROWS:
            strips = -(-heights // (32 * rows))
            per_step = rows + STEP_OVERHEAD_ROWS
            busy = float((strips * (widths + 64)).sum()) * per_step / self.warps
            longest = float((widths + 64 * strips).max()) * per_step
            costs.append((max(busy, longest), -rows))
        return -min(costs)[1]

    def score(self, pairs: list, rows: int | None = None) -> list[PairScore]:
        """:func:`score_pair` (local) of every pair.

        Parameters
        ----------
        pairs : list of (numpy.ndarray, int, int, int)
            ``(query codes, target index, t0, t1)``: the (oriented) query segment
            against columns ``[t0, t1)`` of that target; both non-empty. Pass the
            same array object for pairs that share a segment: it is uploaded once.
        rows : int, optional
            Force the rows per lane (one of :data:`SCORE_ROWS`; tests); default
            :meth:`rows_per_lane`.

        Returns
        -------
        list of PairScore
            Per pair, the end cell in the pair's own coordinates (row of the
            segment, column counted from ``t0``); ``(0, 0, 0)`` when no cell is positive.
        """
        if not pairs:
            return []
        cp = self.cupy
        heights = np.array([len(q) for q, _, _, _ in pairs], dtype=np.int64)
        widths = np.array([t1 - t0 for _, _, t0, t1 in pairs], dtype=np.int64)
        if heights.min() <= 0 or widths.min() <= 0:
            raise ValueError("every pair needs at least one row and one column")
        self.scheme.check_score_range(int(heights.max()), int(widths.max()))
        rows = rows or self.rows_per_lane(heights, widths)
        strip = 32 * rows
        strips = -(-heights // strip)
        need = 16 * widths + 8 * -(-widths // 32) + 12 * strips + strips * strip + 64
        results: list = [None] * len(pairs)
        started = time.perf_counter()
        with cp.cuda.Device(self.device):
            group: list[int] = []
            used = 0
            for p in range(len(pairs)):
                if group and used + need[p] > self.budget:
                    self._launch(pairs, group, rows, strips, results)
                    group, used = [], 0
                group.append(p)
                used += int(need[p])
            self._launch(pairs, group, rows, strips, results)
        self.seconds += time.perf_counter() - started
        self.swept_cells += int((heights * widths).sum())
        return results

    def _launch(self, pairs: list, group: list[int], rows: int, strips: np.ndarray, results: list) -> None:
        """One launch of ``striped_score_pairs<rows>`` over the pairs ``group``; fills ``results``."""
        cp = self.cupy
        strip = 32 * rows
        segments: dict = {}  # id of a query array -> its offset in the padded query buffer
        query_at, pieces, size = [], [], 0
        for p in group:
            codes = pairs[p][0]
            if id(codes) not in segments:
                segments[id(codes)] = size
                pieces.append((size, codes))
                size += int(strips[p]) * strip
            query_at.append(segments[id(codes)])
        buffer = np.zeros(size, dtype=np.uint8)
        for at, codes in pieces:
            buffer[at:at + len(codes)] = codes
        heights = np.array([len(pairs[p][0]) for p in group], dtype=np.int32)
        widths = np.array([pairs[p][3] - pairs[p][2] for p in group], dtype=np.int64)
        target_at = np.array([self.target_at[pairs[p][1]] + pairs[p][2] for p in group], dtype=np.int64)
        counts = strips[group]
        first_strip = np.concatenate(([0], np.cumsum(counts))).astype(np.int32)
        slot_at = np.concatenate(([0], np.cumsum(2 * widths)[:-1])).astype(np.int64)
        batches = -(-widths // 32)
        flag_at = np.concatenate(([0], np.cumsum(2 * batches)[:-1])).astype(np.int64)
        total = int(first_strip[-1])
        longest = int(widths.max())
        tallest = int(counts.max()) * strip
        top_h = cp.zeros(longest + 1, dtype=cp.int32)
        top_f = cp.full(longest + 1, NEG_INF, dtype=cp.int32)
        left_h = cp.zeros(tallest, dtype=cp.int32)
        left_e = cp.full(tallest, NEG_INF, dtype=cp.int32)
        slots = cp.empty(2 * int(2 * widths.sum()), dtype=cp.int32)
        flags = cp.full(int(2 * batches.sum()), -1, dtype=cp.int32)
        ticket = cp.zeros(1, dtype=cp.int32)
        best = cp.empty(3 * total, dtype=cp.int32)
        prune_best = cp.zeros(len(group), dtype=cp.int32) if self.prune else None
        pruned = cp.zeros(1, dtype=cp.uint64)
        name, kernel = self.kernel(rows)
        grid = max(1, min(-(-total // WARPS_PER_BLOCK), self.warps // WARPS_PER_BLOCK))
        i32 = np.int32
        args = (cp.asarray(buffer), cp.asarray(np.array(query_at, dtype=np.int64)), cp.asarray(heights),
                self.d_targets, cp.asarray(target_at), cp.asarray(widths.astype(np.int32)),
                self.d_sub, i32(self.alpha), i32(self.scheme.gap_open + self.scheme.gap_extend),
                i32(self.scheme.gap_extend), top_h, top_f, left_h, left_e, slots, cp.asarray(slot_at),
                flags, cp.asarray(flag_at), cp.asarray(first_strip), i32(len(group)), ticket, best,
                prune_best if self.prune else np.uint64(0), pruned, i32(int(self.scheme.matrix.max())))
        kernels.launch(kernel, name, grid, 32 * WARPS_PER_BLOCK, args, self.shared_bytes(rows),
                       f"{len(group)} pairs, {total} strips of {strip} rows, widest {longest}")
        self.launches += 1
        self.pruned_cells += int(pruned.get()[0])
        for p, end in zip(group, local_end_cells(best.get().reshape(-1, 3).astype(np.int64), counts)):
            results[p] = end


ALLOC_UNIT = 512
"""CuPy's memory pool rounds every allocation up to a multiple of this many bytes."""
DEFAULT_MEMORY_FRACTION = 0.8
"""Default ``--gpu-memory``: this fraction of the device memory free at the start of an alignment."""
MEMORY_SLACK = 8 * 2**20
"""Bytes a plan leaves unused below the budget: CuPy's own small allocations."""
LEAF_INTERVALS = (4096, 2048, 1024, 512, 256, 128, 64)
"""Sides of the chunks re-solved with direction bytes, largest (fastest) first."""
MAX_LEVELS = 5
"""Most checkpoint levels a plan may have."""
CELL_RATE = 1.2e12
STEP_SECONDS = 6e-7
LEAF_STEP_SECONDS = 3.5e-7
LEAF_CELL_RATE = 1.3e11
COPY_RATE = 5e10
WRITE_RATE = 2e12
LAUNCH_SECONDS = 5e-5
TRACE_SECONDS = 3e-5
"""The time model that ranks plans (rough figures of an H200, docs/GPU.md): cells per second of
a large sweep; seconds per wavefront step of a latency-bound one (R = 16 and 8; R = 2 in the
chunk re-solves); cells per second of a window
of re-solved chunks; bytes per second of direction-byte copies to the host and of checkpoint
writes; host seconds per launch (with its allocations) and per traced chunk."""
NEAR_FASTEST = 1.02
"""Among plans within this factor of the fastest estimate, the one with the least memory is taken."""


def _alloc(nbytes: int) -> int:
    """Bytes the pool takes for an array of ``nbytes`` bytes."""
    return -(-int(nbytes) // ALLOC_UNIT) * ALLOC_UNIT


def _pad(height: int, strip: int) -> int:
    """``height`` rounded up to whole strips of ``strip`` rows."""
    return -(-height // strip) * strip


def _run_bytes(height: int, width: int, strip: int, best: bool = False, last: bool = False) -> int:
    """GPU bytes :meth:`_Sweep.run` allocates for a ``height x width`` rectangle in strips of ``strip``
    (a chunk re-solve allocates nothing: :class:`_ChunkBuffers`).

    Padded query (a byte a padded row), two hand-over rows (``16`` bytes a column), ready
    flags, the ticket; the per-strip best cells (local phase 1) and the last row (global and
    semiglobal phase 1). The boundary row and column are read in place.
    """
    padded = _pad(height, strip)
    total = _alloc(padded) + _alloc(16 * width) + _alloc(8 * -(-width // 32)) + _alloc(4)
    if best:
        total += _alloc(12 * (padded // strip))
    if last:
        total += _alloc(4 * (width + 1))
    return total


def _packed_run_bytes(height: int, width: int, local: bool) -> int:
    """GPU bytes :func:`_score_packed` allocates for a ``height x width`` matrix given its row 0:
    letter classes of the padded rows and of the columns, the table, column 0 (``4`` bytes a
    padded row), two hand-over rows (``16`` bytes a column), ready flags, the ticket, and the
    per-double-strip best cells and best score (local) or the last row."""
    padded = _pad(height, PACKED_ROWS)
    total = (_alloc(padded) + _alloc(width) + _alloc(PACKED_CLASSES ** 2) + _alloc(4 * (padded + 1))
             + _alloc(16 * width) + _alloc(8 * -(-width // 32)) + _alloc(4))
    if local:
        return total + _alloc(12 * (padded // PACKED_ROWS)) + _alloc(4)
    return total + _alloc(4 * (width + 1))


def _checkpoint_shapes(height: int, width: int, every: int, strip: int) -> tuple[tuple, tuple]:
    """Shapes (int32) of the row and column checkpoints of a ``height x width`` rectangle.

    Rows: ``(H, F)`` of rows ``every, 2 every, ...`` below the top, columns ``0..width``.
    Columns: ``(H, E)`` of columns ``every, 2 every, ...``, rows ``0..`` the padded height
    (the sweep writes whole strips).
    """
    return (((height - 1) // every, width + 1, 2),
            ((width - 1) // every, _pad(height, strip) + 1, 2))


@dataclass(frozen=True)
class MemoryPlan:
    """How an alignment fits its GPU memory budget: checkpoint levels and the re-solve window.

    Attributes
    ----------
    intervals : tuple of int
        Checkpoint interval of each level, top first. Level 0 is the whole
        ``m x n`` matrix, checkpointed every ``intervals[0]`` rows and columns
        by the score pass; a level-``l`` region (``l >= 1``) is one chunk of
        level ``l - 1`` that the path crosses, swept again with checkpoints
        every ``intervals[l]``; the chunks of the last level (side
        ``intervals[-1]``) are re-solved with direction bytes.
    window : int
        Chunks re-solved at once, ``window x window`` (fewer where the region is smaller).
    bytes : int
        Peak GPU memory of the alignment (the formula of docs/GPU.md).
    seconds : float
        The time model's estimate (only used to rank plans).
    rows_per_lane : tuple of int
        Rows per lane of each level's sweep (the strip height is ``32`` times it).
    """

    intervals: tuple
    window: int
    bytes: int
    seconds: float
    rows_per_lane: tuple


def _level_sides(m: int, n: int, intervals: tuple) -> list[tuple[int, int]]:
    """Largest region (height, width) of each level: the matrix, then one chunk of the level above."""
    return [(m, n)] + [(min(e, m), min(e, n)) for e in intervals[:-1]]


@functools.lru_cache(maxsize=4096)
def _level_cost(h: int, w: int, every: int, multiprocessors: int, top: bool, local: bool):
    """``(persistent bytes, sweep bytes, sweep seconds, rows per lane)`` of one level's largest region."""
    rows = _rows_per_lane(h, multiprocessors, multiple_of=every)
    strip = 32 * rows
    row_shape, col_shape = _checkpoint_shapes(h, w, every, strip)
    persistent = _alloc(4 * row_shape[0] * row_shape[1] * 2) + _alloc(4 * col_shape[0] * col_shape[1] * 2)
    if top:  # the striped sweep or the packed one (_Slabs.score_pass)
        swept = max(_run_bytes(h, w, strip, best=local, last=not local), _packed_run_bytes(h, w, local))
        return persistent, swept, _sweep_seconds(h, w, strip), rows
    # A deeper region also holds its own top row and left column (contiguous copies).
    persistent += 2 * _alloc(4 * (w + 1)) + 2 * _alloc(4 * h)
    return persistent, _run_bytes(h, w, strip), _sweep_seconds(h, w, strip) + LAUNCH_SECONDS, rows


@functools.lru_cache(maxsize=4096)
def _leaf_cost(m: int, n: int, h: int, w: int, leaf: int, window: int):
    """``(persistent bytes, transient bytes, seconds)`` of the chunk re-solves in regions of ``h x w``:
    the direction pool and each stream's :class:`_ChunkBuffers` and, once, the padded query
    (:meth:`_Sweep.padded_query`); nothing transient."""
    ch, cw = min(leaf, h), min(leaf, w)
    wa, wb = min(window, -(-h // leaf)), min(window, -(-w // leaf))
    chunk = _pad(ch, 32 * CHUNK_ROWS_PER_LANE) * (cw + 31) // 2
    buffers = wa * wb * (_alloc(16 * cw) + _alloc(4 * (2 * -(-cw // 32) + 1))) + _alloc(m + 32 * max(SCORE_ROWS))
    crossed = -(-m // leaf) + -(-n // leaf)
    windows = -(-max(m, n) // (leaf * min(wa, wb)))
    seconds = (windows * (wa * wb * LAUNCH_SECONDS + max(wa * wb * ch * cw / LEAF_CELL_RATE,
                                                         (cw + 31 + ch) * LEAF_STEP_SECONDS))
               + crossed * (chunk / COPY_RATE + TRACE_SECONDS))
    return _alloc(wa * wb * chunk) + buffers, 0, seconds


def _evaluate(m: int, n: int, intervals: tuple, windows: tuple, multiprocessors: int, local: bool,
              alpha: int, usable: int | None = None) -> list[MemoryPlan]:
    """The :class:`MemoryPlan` of ``intervals`` with each window of ``windows``: peak bytes, estimated time.

    With ``usable``, returns nothing as soon as the checkpoints alone exceed it (the planner's pruning).
    """
    sides = _level_sides(m, n, intervals)
    # Always allocated: sequences, substitution matrix, the matrix's row 0 and column 0.
    persistent = _alloc(m) + _alloc(n) + _alloc(4 * alpha * alpha) + 2 * _alloc(4 * (n + 1)) + 2 * _alloc(4 * m)
    transient = 0
    seconds = 0.0
    rows = []
    for level, ((h, w), every) in enumerate(zip(sides, intervals)):
        kept, swept, sweep_seconds, r = _level_cost(h, w, every, multiprocessors, level == 0, local)
        persistent += kept
        transient = max(transient, swept)
        rows.append(r)
        if level == 0:
            seconds += sweep_seconds
        else:
            seconds += (-(-m // intervals[level - 1]) + -(-n // intervals[level - 1])) * sweep_seconds
        if usable is not None and persistent > usable:
            return []
    plans = []
    for window in windows:
        pool, leaf_transient, leaf_seconds = _leaf_cost(m, n, *sides[-1], intervals[-1], window)
        total = persistent + pool
        plans.append(MemoryPlan(tuple(intervals), window, int(total + transient + leaf_transient),
                                seconds + leaf_seconds + total / WRITE_RATE, tuple(rows)))
    return plans


def _sweep_seconds(height: int, width: int, strip: int) -> float:
    """Time model of one sweep: the cell rate, or the wavefront's steps where that is longer."""
    return max(height * width / CELL_RATE, (width + 64 * -(-height // strip)) * STEP_SECONDS)


def _chains(m: int, n: int, levels: int):
    """Interval chains of ``levels`` levels: decreasing powers of two times 64, the last a leaf side."""
    import itertools

    longest = max(m, n)
    uppers = []
    e = 128
    while e < longest:
        uppers.append(e)
        e *= 2
    for leaf in LEAF_INTERVALS:
        if levels == 1:
            yield (leaf,)
            continue
        above = [e for e in uppers if e > leaf]
        for chain in itertools.combinations(reversed(above), levels - 1):
            yield chain + (leaf,)


def plan_memory(m: int, n: int, budget: int, multiprocessors: int, local: bool = True, alpha: int = 4,
                intervals: tuple | None = None) -> MemoryPlan:
    """The fastest checkpoint plan (by the time model) whose peak GPU memory fits ``budget`` bytes.

    Parameters
    ----------
    m, n : int
        Query and target lengths (rows and columns).
    budget : int
        Bytes of GPU memory the alignment may take (CuPy pool allocations).
    multiprocessors : int
        The device's multiprocessor count (it sets the sweeps' rows per lane and so their padding).
    local : bool
        Local mode (phase 1 keeps per-strip best cells instead of the last row).
    alpha : int
        Alphabet size (the substitution matrix is ``alpha x alpha`` int32).
    intervals : tuple of int, optional
        Force the checkpoint levels (each a multiple of 64, decreasing); the
        window is still chosen to fit.

    Returns
    -------
    MemoryPlan
        Among plans of up to :data:`MAX_LEVELS` levels (intervals powers of two
        times 64, chunk sides of :data:`LEAF_INTERVALS`, windows 8, 4, 2, 1) that
        fit ``budget`` less :data:`MEMORY_SLACK`, the smallest whose estimated
        time is within :data:`NEAR_FASTEST` of the fastest; one more level is
        tried past the fewest that fit.

    Raises
    ------
    GpuMemoryError
        No plan fits; the message names the smallest budget that would.
    """
    usable = budget - MEMORY_SLACK
    fitting = []
    smallest = None
    fitted_at = None
    for levels in range(1, MAX_LEVELS + 1):
        if fitted_at is not None and levels > fitted_at + 1:
            break
        chains = [tuple(intervals)] if intervals is not None else _chains(m, n, levels)
        for chain in chains:
            for plan in _evaluate(m, n, chain, (8, 4, 2, 1), multiprocessors, local, alpha,
                                  None if smallest is None else max(usable, smallest.bytes)):
                if smallest is None or plan.bytes < smallest.bytes:
                    smallest = plan
                if plan.bytes <= usable:
                    fitting.append(plan)
                    fitted_at = levels if fitted_at is None else fitted_at
        if intervals is not None:
            break
    if not fitting:
        need = smallest.bytes + MEMORY_SLACK
        raise kernels.GpuMemoryError(
            f"aligning {m} x {n} needs at least {need / 2**20:.0f} MiB of GPU memory "
            f"(--gpu-memory {-(-need // 2**20)}M: checkpoints every {', '.join(map(str, smallest.intervals))}) "
            f"but the budget is {budget / 2**20:.0f} MiB")
    fastest = min(plan.seconds for plan in fitting)
    return min((plan for plan in fitting if plan.seconds <= NEAR_FASTEST * fastest), key=lambda p: p.bytes)


def align_pair(query_codes, target_codes, scheme: ScoringScheme, mode: str, device: int = 0,
               memory_budget: int | None = None, *, checkpoint_every: int | None = None,
               intervals: tuple | None = None, profile: dict | None = None,
               limit_pool: bool = True, progress=None, prune: bool = True, devices=None) -> PairAlignment:
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
        Bytes of GPU memory the alignment may take (default:
        :data:`DEFAULT_MEMORY_FRACTION` of the free device memory). The plan
        (:func:`plan_memory`) fits it, and CuPy's pool is limited to it while
        the alignment runs (unless ``limit_pool`` is false).
    checkpoint_every : int, optional
        Force one level of checkpoints at this interval (a multiple of 64);
        same as ``intervals=(checkpoint_every,)``.
    intervals : tuple of int, optional
        Force the checkpoint levels (see :class:`MemoryPlan`). Tests use small
        values so that paths cross many chunks of every level.
    profile : dict, optional
        Filled with the plan and the seconds of each phase: ``score_pass_s``
        (the sweep with level-0 checkpoints), ``region_sweeps`` and
        ``region_s`` (the deeper levels' sweeps), ``solve_s``, ``copy_s``,
        ``trace_s`` (chunk re-solves, copies of their direction bytes, the host
        walk), ``traceback_s`` (all after the score pass).
    limit_pool : bool
        Limit CuPy's memory pool to the budget while the alignment runs. The
        limit is process-wide: callers that align on several threads at once
        (local placement on several streams) pass ``False`` and give each
        alignment its share of the memory as ``memory_budget``.
    progress : callable, optional
        Called (from a helper thread too) with DP cells as they are computed: the
        score pass's ``m * n`` while it runs (see :meth:`_Sweep.run`), then each
        deeper level's region sweep and each window of re-solved chunks as it ends
        (``profile`` counts them as ``region_cells`` and ``chunk_cells``).
    prune : bool
        Local mode: skip the blocks of the score pass that cannot reach the best score found so
        far (exact, docs/GPU.md "Block pruning"; ``profile["pruned_cells"]`` counts them).
        False computes every cell (for checks and timings).
    devices : list of int, optional
        Split the matrix by columns over these devices (one slab each, in order, widths from
        :func:`column_slabs`; instead of ``device``): they run at once, each slab's left column
        streamed from the slab before it, and each device keeps its slab's checkpoints within
        ``memory_budget`` (the plan is made for the widest slab). Same alignment as one device.
        A device named twice runs its slabs one after the other (tests on one GPU).
        ``profile["slabs"]`` counts the slabs used (fewer than the devices when slabs would be
        narrower than :data:`MIN_SLAB_COLUMNS`); with several, ``profile`` also gets each slab's
        bounds, pruned cells and sweep seconds (:meth:`_Slabs.profile`).

    Returns
    -------
    PairAlignment
        Identical to :func:`gpualign_plugin.pairwise.cpu.align_pair`.

    Raises
    ------
    InputError
        Scores that could overflow 32 bits, or substitution scores outside int8.
    GpuMemoryError
        No plan fits the budget (the message names the smallest that would).
    """
    import cupy

    query, target = _prepare(query_codes, target_codes, scheme, mode)
    m, n = len(query), len(target)
    if m == 0 or n == 0:
        from gpualign_plugin.pairwise import cpu

        return cpu.align_pair(query, target, scheme, mode)
    if checkpoint_every is not None:
        intervals = (checkpoint_every,)
    if intervals is not None and any(e % 64 or e <= 0 for e in intervals):
        raise InputError(f"checkpoint intervals {intervals} must be positive multiples of 64")
    started = time.perf_counter()
    devices = devices or [device]
    budgets = _device_budgets(devices, memory_budget)
    budget = min(budgets.values())
    plan = _slab_plan(m, n, devices, mode, prune, budget, scheme.alphabet.size, f"aligning {m} x {n}", intervals)
    try:
        with _pool_limits(budgets if limit_pool else {}):
            return _align_planned(query, target, scheme, mode, devices, plan, started, profile, progress, prune)
    except cupy.cuda.memory.OutOfMemoryError as exc:
        raise kernels.GpuMemoryError(
            f"aligning {m} x {n} went past the GPU memory budget of {budget / 2**20:.0f} MiB "
            f"(planned {plan.bytes / 2**20:.0f} MiB): {exc}") from exc


def _device_budgets(devices, memory_budget: int | None) -> dict:
    """``{device: bytes}`` an alignment may take on each of ``devices``: ``memory_budget``, or
    :data:`DEFAULT_MEMORY_FRACTION` of the device's free memory where it is ``None``."""
    import cupy

    budgets = {}
    for d in set(devices):
        with cupy.cuda.Device(d):
            budgets[d] = (memory_budget if memory_budget is not None
                          else int(kernels.free_bytes() * DEFAULT_MEMORY_FRACTION))
    return budgets


@contextlib.contextmanager
def _pool_limits(budgets: dict):
    """Limit CuPy's memory pool of each device in ``{device: bytes}`` to what it holds now plus
    its budget, and give each its old limit back on leaving.

    The pool's cached free blocks are released first: CuPy counts them against the limit and
    does not release them when an allocation would pass it, and blocks cached for one stream
    cannot serve another's (the chunk re-solves run on streams of their own). Left cached, the
    blocks an earlier alignment of the process freed took that much of the budget away (a
    48 MiB placement after an unlimited one ran out at a 1 KiB allocation, 28 Nov 2026)."""
    import cupy

    pool = cupy.get_default_memory_pool()  # one pool per device, the current one's
    old_limits = {}
    try:
        for d, budget in budgets.items():
            with cupy.cuda.Device(d):
                old_limits[d] = pool.get_limit()
                pool.free_all_blocks()
                pool.set_limit(size=pool.total_bytes() + budget)
        yield
    finally:
        for d, limit in old_limits.items():
            with cupy.cuda.Device(d):
                pool.set_limit(size=limit)


def _slab_plan(m: int, n: int, devices, mode: str, prune: bool, budget: int, alpha: int, what: str,
               intervals: tuple | None = None) -> MemoryPlan:
    """The plan of an ``m x n`` alignment on ``devices`` (:func:`slab_layout`): made for the widest
    slab within ``budget`` bytes on each device, shared by the slabs one device runs, and checked
    against each device's free memory (:class:`GpuMemoryError` naming ``what`` otherwise)."""
    import cupy

    devices, bounds = slab_layout(m, n, devices, mode, prune)
    sharing = max(devices.count(d) for d in devices)
    plan = plan_memory(m, int(np.diff(bounds).max()), budget // sharing,
                       min(probe(d).multiprocessors for d in devices), mode == "local", alpha, intervals)
    for d in set(devices):
        with cupy.cuda.Device(d):
            kernels.check_memory(sharing * plan.bytes, what)
    return plan


def traceback_cells(m: int, n: int, plan: MemoryPlan) -> int:
    """Estimated DP cells of an alignment's phases 2 and 3 under ``plan`` (a progress bar's total).

    A path crosses at most ``ceil(m / e) + ceil(n / e) - 1`` chunks of side ``e``: each
    deeper level sweeps that many chunks of the level above, and the leaves re-solve
    ``wa x wb`` chunks per window, a window for about every ``wa + wb - 1`` chunks the
    path crosses. Paths that end early (local, semiglobal) cost less.
    """
    def crossed(e: int) -> int:
        return -(-m // e) + -(-n // e) - 1

    sides = _level_sides(m, n, plan.intervals)
    cells = sum(crossed(e) * h * w for e, (h, w) in zip(plan.intervals[:-1], sides[1:]))
    leaf = plan.intervals[-1]
    h, w = sides[-1]
    wa, wb = min(plan.window, -(-h // leaf)), min(plan.window, -(-w // leaf))
    windows = -(-crossed(leaf) // (wa + wb - 1))
    return cells + windows * wa * wb * min(leaf, h) * min(leaf, w)


def align_cells(m: int, n: int, scheme: ScoringScheme, mode: str, device: int = 0,
                memory_budget: int | None = None) -> int:
    """DP cells :func:`align_pair` computes for an ``m x n`` pair, estimated: the score pass's
    ``m * n`` plus :func:`traceback_cells` of the plan it would take now (a progress bar's total)."""
    import cupy

    with cupy.cuda.Device(device):
        budget = memory_budget if memory_budget is not None else int(kernels.free_bytes() * DEFAULT_MEMORY_FRACTION)
        try:
            plan = plan_memory(m, n, budget, probe(device).multiprocessors, mode == "local", scheme.alphabet.size)
        except kernels.GpuMemoryError:
            return m * n  # the alignment will say so
    return m * n + traceback_cells(m, n, plan)


PROFILE_SUMS = ("region_sweeps", "region_cells", "region_pruned_cells", "windows", "chunks_solved", "chunk_cells",
                "chunks_traced", "pruned_cells")
"""Counts of :func:`align_pair`'s profile that :func:`add_profile` sums (besides every ``*_s``)."""


def add_profile(total: dict, profile: dict) -> None:
    """Add one alignment's ``profile`` (from :func:`align_pair`) into ``total``, a run's sums.

    Seconds (``*_s``) and the counts of :data:`PROFILE_SUMS` are summed, ``pairs``
    counts the alignments, ``peak_planned_bytes`` keeps the largest plan and ``slabs`` the most
    slabs one matrix was split into.
    """
    for key, value in profile.items():
        if key.endswith("_s") or key in PROFILE_SUMS:
            total[key] = total.get(key, 0) + value
    total["pairs"] = total.get("pairs", 0) + 1
    total["peak_planned_bytes"] = max(total.get("peak_planned_bytes", 0), profile.get("planned_bytes", 0))
    total["slabs"] = max(total.get("slabs", 1), profile.get("slabs", 1))


@dataclass
class _Region:
    """A rectangle of the matrix (rows ``r0+1..r0+height``, columns ``c0+1..c0+width``) and its edges.

    ``top_h``/``top_f``: device int32, ``width + 1`` values of row ``r0`` (columns
    ``c0..c0+width``); ``left_h``/``left_e``: device int32, ``height`` values of column
    ``c0``. After its sweep, ``row_ckpt``/``col_ckpt`` hold its checkpoints every ``every``.
    """

    r0: int
    c0: int
    height: int
    width: int
    top_h: object
    top_f: object
    left_h: object
    left_e: object
    every: int = 0
    row_ckpt: object = None
    col_ckpt: object = None

    def edges(self, pr: int, pc: int, height: int, width: int, contiguous: bool = True):
        """``(top_h, top_f, left_h, left_e)`` of the sub-rectangle at ``(pr, pc)`` (checkpoint-aligned)."""
        rr, cc = pr - self.r0, pc - self.c0
        if rr == 0:
            top_h, top_f = self.top_h[cc:cc + width + 1], self.top_f[cc:cc + width + 1]
        else:
            top_h = self.row_ckpt[rr // self.every - 1, cc:cc + width + 1, 0]
            top_f = self.row_ckpt[rr // self.every - 1, cc:cc + width + 1, 1]
        if cc == 0:
            left_h, left_e = self.left_h[rr:rr + height], self.left_e[rr:rr + height]
        else:
            left_h = self.col_ckpt[cc // self.every - 1, rr + 1:rr + height + 1, 0]
            left_e = self.col_ckpt[cc // self.every - 1, rr + 1:rr + height + 1, 1]
        if contiguous:
            import cupy

            return tuple(cupy.ascontiguousarray(x) for x in (top_h, top_f, left_h, left_e))
        return top_h, top_f, left_h, left_e


_OP_LETTERS = np.frombuffer(RUN_OPS.encode("ascii"), dtype=np.uint8)
"""The letter code of each operation code of the walk's path (:data:`~gpualign_plugin.model.RUN_OPS`)."""
_GAP_LETTERS = (ord("I"), ord("D"))


class _TracedScore:
    """The score of the path traced so far, from the end cell back to the cursor, kept up to
    date as the walk adds operations: what bounds the value a region's sweep must reach.

    The path's columns score as in :func:`~gpualign_plugin.model.score_cigar`, with each gap
    run's open charged at its first column along the alignment; the run the walk is inside is
    charged one open already, which the run may not have (the cursor inside a gap). So
    :meth:`goal` subtracts one open more: best score - traced score - open is at most the value,
    in its state, of the cell the path has reached, and equals it inside a gap.
    """

    def __init__(self, query: np.ndarray, target: np.ndarray, scheme: ScoringScheme, best: int, end_row: int,
                 end_column: int):
        self.query, self.target, self.scheme = query, target, scheme
        self.best, self.row, self.column = best, end_row, end_column
        self.score = 0
        self.counted = 0  # operations of ops[:counted] are in self.score

    def goal(self, ops: np.ndarray, pos: int) -> int:
        """A lower bound of the value the path needs where ``ops[:pos]`` (traceback order) ends."""
        if pos > self.counted:
            codes = ops[self.counted:pos][::-1]  # along the alignment: the last is nearest the end cell
            letters = _OP_LETTERS[codes]
            row = self.row - int(np.count_nonzero(letters != ord("D")))
            column = self.column - int(np.count_nonzero(letters != ord("I")))
            if self.counted and letters[-1] in _GAP_LETTERS and codes[-1] == ops[self.counted - 1]:
                self.score += self.scheme.gap_open  # the run charged before goes on: its open was early
            self.score += int(path_scores(letters, self.query[row:self.row], self.target[column:self.column],
                                          self.scheme).sum())
            self.row, self.column, self.counted = row, column, pos
        return self.best - self.score - self.scheme.gap_open


class _Traceback:
    """Phases 2 and 3 under a :class:`MemoryPlan`: one workspace per level, reused by every region."""

    def __init__(self, sweep: _Sweep, plan: MemoryPlan, timing: dict, progress=None, width: int | None = None):
        cp = sweep.cupy
        self.sweep, self.plan, self.timing, self.progress = sweep, plan, timing, progress
        self.sides = _level_sides(sweep.m, sweep.n if width is None else width, plan.intervals)
        self.buffers = []
        for (h, w), e, r in zip(self.sides, plan.intervals, plan.rows_per_lane):
            row_shape, col_shape = _checkpoint_shapes(h, w, e, 32 * r)
            self.buffers.append((cp.empty(int(np.prod(row_shape)), dtype=cp.int32),
                                 cp.empty(int(np.prod(col_shape)), dtype=cp.int32)))
        h, w = self.sides[-1]
        leaf = plan.intervals[-1]
        self.wa = min(plan.window, -(-h // leaf))
        self.wb = min(plan.window, -(-w // leaf))
        strip = 32 * CHUNK_ROWS_PER_LANE
        self.chunk_bytes = _pad(min(leaf, h), strip) * (min(leaf, w) + 31) // 2
        self.dir_pool = cp.empty(self.wa * self.wb * self.chunk_bytes, dtype=cp.uint8)
        self.streams = [cp.cuda.Stream(non_blocking=True) for _ in range(self.wa * self.wb)]
        self.chunk_buffers = [_ChunkBuffers(cp, min(leaf, w)) for _ in self.streams]
        self.pinned = kernels.pinned_bytes(self.chunk_bytes)
        self.ops = np.empty(sweep.m + sweep.n, dtype=np.uint8)
        self.pos = 0
        self.traced: _TracedScore | None = None  # set by the caller before a walk
        from gpualign_plugin.pairwise.gpu_walk import trace_chunk  # loaded by warm_walk meanwhile

        self.mode_code = MODE_CODES[sweep.mode]
        self.trace_chunk = trace_chunk

    def checkpoints(self, level: int, region: _Region):
        """Views of level ``level``'s workspace shaped for ``region``, column 0 / row 0 filled in
        (column 0 later, by :meth:`fill_left`, while the region's left column is unknown)."""
        every = self.plan.intervals[level]
        rows = _rows_per_lane(region.height, self.sweep.multiprocessors, multiple_of=every)
        row_shape, col_shape = _checkpoint_shapes(region.height, region.width, every, 32 * rows)
        row_buf, col_buf = self.buffers[level]
        row_ckpt = row_buf[:int(np.prod(row_shape))].reshape(row_shape)
        col_ckpt = col_buf[:int(np.prod(col_shape))].reshape(col_shape)
        if col_shape[0]:
            col_ckpt[:, 0, 0] = region.top_h[every:col_shape[0] * every + 1:every]
            col_ckpt[:, 0, 1] = NEG_INF
        region.every, region.row_ckpt, region.col_ckpt = every, row_ckpt, col_ckpt
        if region.left_h is not None:
            self.fill_left(region)
        return rows

    @staticmethod
    def fill_left(region: _Region) -> None:
        """Column 0 of the region's row checkpoints, from its left column."""
        every, row_ckpt = region.every, region.row_ckpt
        if row_ckpt.shape[0]:
            row_ckpt[:, 0, 0] = region.left_h[every - 1:row_ckpt.shape[0] * every:every]
            row_ckpt[:, 0, 1] = NEG_INF

    def walk(self, level: int, region: _Region, cursor: list) -> bool:
        """Trace from ``cursor`` (``[i, j, state]``, inside ``region``) until the path leaves the
        region through its top or left edge (False) or ends (True). The region's checkpoints
        are made here, except at level 0 (the score pass made them)."""
        sweep = self.sweep
        if level > 0:
            started = time.perf_counter()
            rows = self.checkpoints(level, region)
            pruned = sweep.goal_pruned_cells
            sweep.run(region.r0, region.c0, region.height, region.width, region.top_h, region.top_f,
                      region.left_h, region.left_e, rows, row_ckpt=region.row_ckpt,
                      col_ckpt=region.col_ckpt, every=region.every, progress=self.progress,
                      goal=self.traced.goal(self.ops, self.pos))
            self.timing["region_sweeps"] += 1
            self.timing["region_cells"] += region.height * region.width
            self.timing["region_pruned_cells"] += sweep.goal_pruned_cells - pruned
            self.timing["region_s"] += time.perf_counter() - started
        if level == len(self.plan.intervals) - 1:
            return self.leaf_walk(region, cursor)
        every = region.every
        while True:
            i, j = cursor[0], cursor[1]
            if i <= region.r0 or j <= region.c0:
                return False
            pr = region.r0 + (i - 1 - region.r0) // every * every
            pc = region.c0 + (j - 1 - region.c0) // every * every
            sub = _Region(pr, pc, i - pr, j - pc, *region.edges(pr, pc, i - pr, j - pc))
            if self.walk(level + 1, sub, cursor):
                return True
            del sub  # its edges are freed before the next region's are copied

    def leaf_walk(self, region: _Region, cursor: list) -> bool:
        """:meth:`walk` through the region's chunks, re-solved with direction bytes a window at a time."""
        sweep, timing = self.sweep, self.timing
        every = region.every
        strip = 32 * CHUNK_ROWS_PER_LANE
        solved: dict = {}
        while True:
            i, j, state = cursor
            if i == 0 or j == 0:
                r0 = c0 = steps = 0
                dirs = self.pinned[:0]
            else:
                if i <= region.r0 or j <= region.c0:
                    return False
                r0 = region.r0 + (i - 1 - region.r0) // every * every
                c0 = region.c0 + (j - 1 - region.c0) // every * every
                chunk = solved.get((r0, c0))
                if chunk is None or not chunk.covers(i, j):
                    started = time.perf_counter()
                    solved = self.solve_window(region, i, j)
                    chunk = solved[(r0, c0)]
                    timing["windows"] += 1
                    timing["chunks_solved"] += len(solved)
                    timing["solve_s"] += time.perf_counter() - started
                started = time.perf_counter()
                dirs = self.pinned[:chunk.dirs.size]
                chunk.dirs.get(out=dirs)
                steps = chunk.width + 31
                timing["chunks_traced"] += 1
                timing["copy_s"] += time.perf_counter() - started
            started = time.perf_counter()
            i, j, state, self.pos, done = self.trace_chunk(dirs, strip, CHUNK_ROWS_PER_LANE, steps, r0, c0,
                                                           sweep.query, sweep.target, self.mode_code, i, j,
                                                           state, self.ops, self.pos)
            timing["trace_s"] += time.perf_counter() - started
            cursor[:] = [int(i), int(j), int(state)]
            if done:
                return True

    def solve_window(self, region: _Region, i: int, j: int) -> dict:
        """Re-solve the chunk holding ``(i, j)`` (up to ``(i, j)``) and the chunks up and left of it.

        The chunks of a ``wa x wb`` window whose bottom-right one holds ``(i, j)`` are
        independent given the checkpoints, so they run concurrently, one stream each:
        the path usually crosses several of them, and one chunk alone leaves most of the
        GPU idle. Chunk ``(a, b)`` writes its direction bytes into slot ``a * wb + b`` of
        the direction-byte pool. Returns ``{(r0, c0): _Chunk}``.
        """
        sweep, every = self.sweep, region.every
        r0 = region.r0 + (i - 1 - region.r0) // every * every
        c0 = region.c0 + (j - 1 - region.c0) // every * every
        solved = {}
        for a in range(self.wa):
            for b in range(self.wb):
                pr, pc = r0 - a * every, c0 - b * every
                if pr < region.r0 or pc < region.c0:
                    continue
                height = i - pr if a == 0 else every
                width = j - pc if b == 0 else every
                slot = (a * self.wb + b) * self.chunk_bytes
                with self.streams[a * self.wb + b]:
                    edges = region.edges(pr, pc, height, width, contiguous=False)
                    _, _, dirs = sweep.run(pr, pc, height, width, *edges, CHUNK_ROWS_PER_LANE, dirs=True,
                                           sync=False, dirs_out=self.dir_pool[slot:slot + self.chunk_bytes],
                                           buffers=self.chunk_buffers[a * self.wb + b])
                solved[(pr, pc)] = _Chunk(pr, pc, height, width, dirs)
        kernels.synchronize(f"re-solving the chunks up and left of cell ({i}, {j})")
        cells = sum(chunk.height * chunk.width for chunk in solved.values())
        self.timing["chunk_cells"] += cells
        if self.progress is not None:
            self.progress(cells)
        return solved


@functools.lru_cache(maxsize=1)
def warm_walk() -> threading.Thread:
    """Import the host walk (:mod:`gpualign_plugin.pairwise.gpu_walk`, and Numba with it) and load
    its compiled code in a background thread, once per process
    (:mod:`gpualign_plugin.runtime.warm`; started before the score pass)."""
    return load_in_background("walk", _load_walk)


def _load_walk() -> None:
    from gpualign_plugin.pairwise.gpu_walk import trace_chunk

    trace_chunk(*warm_walk_args())


def warm_walk_args() -> tuple:
    """Arguments of a :func:`~gpualign_plugin.pairwise.gpu_walk.trace_chunk` call that ends at
    once (cell (0, 0)), typed as the traceback's."""
    from gpualign_plugin.gotoh import LOCAL, STATE_H

    nothing = np.zeros(0, dtype=np.uint8)
    return (nothing, 64, CHUNK_ROWS_PER_LANE, 0, 0, 0, nothing, nothing, LOCAL, 0, 0,
            STATE_H, np.zeros(1, dtype=np.uint8), 0)


class _Pass:
    """Phase 1 of an alignment under a plan (the score pass with level-0 checkpoints), kept so
    that phases 2 and 3 (:meth:`finish`) can follow at once or later.

    With several ``devices`` the matrix is split by columns (:class:`_Slabs`): each device keeps
    its slab's checkpoints under ``plan`` (made for the widest slab) and traces the path while it
    crosses its slab; the path moves to the slab on the left with its state when it leaves one.
    """

    def __init__(self, query, target, scheme, mode, devices, plan: MemoryPlan, started: float,
                 progress=None, prune: bool = True, packed: bool | None = None):
        import cupy

        warm_walk()
        self.plan = plan
        self.query, self.target, self.scheme = query, target, scheme
        self.slabs = slabs = _Slabs(query, target, scheme, mode, devices, prune, packed=packed)
        self.timing = {"region_sweeps": 0, "region_s": 0.0, "region_cells": 0, "region_pruned_cells": 0, "windows": 0,
                       "chunks_solved": 0, "chunk_cells": 0, "chunks_traced": 0, "solve_s": 0.0,
                       "copy_s": 0.0, "trace_s": 0.0}
        self.regions = slabs.top_regions()
        self.tracebacks = []
        for sweep, region in zip(slabs.sweeps, self.regions):
            with cupy.cuda.Device(sweep.device):
                self.tracebacks.append(_Traceback(sweep, plan, self.timing, progress, region.width))
                rows = self.tracebacks[-1].checkpoints(0, region)
        self.end = slabs.score_pass(rows, self.regions, prune, progress)
        for sweep, traceback, region in zip(slabs.sweeps[1:], self.tracebacks[1:], self.regions[1:]):
            with cupy.cuda.Device(sweep.device):
                traceback.fill_left(region)
        self.score_pass_s = time.perf_counter() - started

    def finish(self, profile: dict | None = None) -> PairAlignment:
        """The alignment: phases 2 and 3 from the kept checkpoints; ``profile`` as in :func:`align_pair`."""
        import cupy

        from gpualign_plugin.gotoh import STATE_H, cigar_from_ops

        started = time.perf_counter()
        end = self.end
        result = NO_PAIR_ALIGNMENT
        if not (self.slabs.sweeps[0].local and end.score <= 0):
            cursor = [end.query_end, end.target_end, STATE_H]
            d = max(0, int(np.searchsorted(self.slabs.bounds, cursor[1])) - 1)
            ops, pos = self.tracebacks[d].ops, 0
            traced = _TracedScore(self.query, self.target, self.scheme, end.score, *cursor[:2])
            while True:
                traceback, region = self.tracebacks[d], self.regions[d]
                traceback.ops, traceback.pos, traceback.traced = ops, pos, traced
                with cupy.cuda.Device(self.slabs.sweeps[d].device):
                    if cursor[0] == 0 or cursor[1] == 0:
                        done = traceback.leaf_walk(region, cursor)
                    else:
                        done = traceback.walk(0, region, cursor)
                ops, pos = traceback.ops, traceback.pos
                if done:
                    break
                if cursor[0] > 0 and cursor[1] <= region.c0:
                    d -= 1  # the path left the slab through its left edge (else it is on row 0)
            result = PairAlignment(end.score, cursor[0], end.query_end, cursor[1], end.target_end,
                                   cigar_from_ops(ops[:pos]))
        if profile is not None:
            plan = self.plan
            profile.update(self.timing, **self.slabs.profile(), score_pass_s=self.score_pass_s,
                           traceback_s=time.perf_counter() - started, intervals=list(plan.intervals),
                           window=plan.window, rows_per_lane=list(plan.rows_per_lane), planned_bytes=plan.bytes)
        return result


def _align_planned(query, target, scheme, mode, devices, plan: MemoryPlan, started: float, profile,
                   progress=None, prune: bool = True, packed: bool | None = None):
    """:func:`align_pair` on ``devices`` under ``plan``; fills ``profile`` when given; ``packed``
    as in :class:`_Slabs` (tests and benchmarks force the striped score pass with False)."""
    return _Pass(query, target, scheme, mode, devices, plan, started, progress, prune, packed).finish(profile)


class LongPairSession:
    """Scores that remember their checkpoints: aligning a pair just scored runs only the traceback.

    A caller that scores several candidates and then aligns the best (local
    placement: both strands of a query against a target) would otherwise run
    the score pass twice for the pair it aligns. Within a session,
    :meth:`score` runs the alignment's own score pass (with its level-0
    checkpoints) and keeps it for the last ``keep`` pairs, each planned within
    ``memory_budget // keep``; :meth:`align` of a kept pair runs phases 2 and 3
    from it, and any other pair is aligned from scratch with the whole budget
    (the kept passes are dropped first). CuPy's pool is limited to the budget
    while the session is open. Results are those of :func:`score_pair` and
    :func:`align_pair`.

    Use as a context manager (:func:`long_pair_session`); the session is on one
    device (or splits each pair over ``devices`` as :func:`align_pair` does, the budget
    per device), one scheme and one mode. ``profile`` (a dict) gets the phase seconds
    summed (:func:`add_profile`), with ``score_passes`` counting the score passes and
    ``kept_hits`` the alignments that reused one. ``progress`` gets DP cells as they are
    computed, as in :func:`align_pair`.
    """

    def __init__(self, scheme: ScoringScheme, mode: str, device: int = 0, memory_budget: int | None = None,
                 keep: int = 2, profile: dict | None = None, progress=None, devices=None):
        self.scheme, self.mode, self.keep, self.profile = scheme, mode, max(1, keep), profile
        self.devices = list(devices or [device])
        self.progress = progress
        self.memory_budget = memory_budget
        self.kept: dict = {}
        self.limits = contextlib.ExitStack()
        self.profile_lock = threading.Lock()  # score passes run on several threads (score_all)

    def __enter__(self) -> "LongPairSession":
        budgets = _device_budgets(self.devices, self.memory_budget)
        self.memory_budget = min(budgets.values())
        self.limits.enter_context(_pool_limits(budgets))
        return self

    def __exit__(self, *exc) -> None:
        self.kept.clear()
        self.limits.close()

    def score(self, key, query_codes, target_codes) -> PairScore:
        """:func:`score_pair` of the pair, keeping its checkpoints under ``key`` (any hashable)."""
        import cupy

        query, target = _prepare(query_codes, target_codes, self.scheme, self.mode)
        m, n = len(query), len(target)
        if m == 0 or n == 0:
            from gpualign_plugin.pairwise import cpu

            return cpu.score_pair(query, target, self.scheme, self.mode)
        started = time.perf_counter()
        self.kept.pop(key, None)
        while len(self.kept) >= self.keep:
            self.kept.pop(next(iter(self.kept)))
        try:
            plan = _slab_plan(m, n, self.devices, self.mode, True, self.memory_budget // self.keep,
                              self.scheme.alphabet.size, f"scoring {m} x {n} for its alignment")
        except kernels.GpuMemoryError:
            # Too long to keep within a share of the budget: score only, align from scratch later.
            return score_pair(query, target, self.scheme, self.mode, progress=self.progress, devices=self.devices)
        try:
            scored = _Pass(query, target, self.scheme, self.mode, self.devices, plan, started, self.progress)
        except cupy.cuda.memory.OutOfMemoryError as exc:
            raise kernels.GpuMemoryError(f"scoring {m} x {n} went past the GPU memory budget of "
                                         f"{self.memory_budget / 2**20:.0f} MiB: {exc}") from exc
        self.kept[key] = scored
        if self.profile is not None:
            with self.profile_lock:
                self.profile["score_pass_s"] = self.profile.get("score_pass_s", 0) + scored.score_pass_s
                self.profile["score_passes"] = self.profile.get("score_passes", 0) + 1
        return scored.end

    def score_all(self, pairs: list) -> list[PairScore]:
        """:meth:`score` of every ``(key, query_codes, target_codes)``, the passes at once when
        there are at most ``keep`` of them on one device, each on its own CUDA stream and host
        thread.

        One long pair's score pass leaves most of a large GPU idle (at 1 Mbp an H200 holds
        every strip at once and waits on the chain of strips along the diagonal), so the two
        strands of a query take about the time of one. Memory as for :meth:`score` one after
        the other: each pass within ``memory_budget // keep``, at most ``keep`` kept.
        """
        import cupy

        if not 1 < len(pairs) <= self.keep or len(self.devices) > 1:
            return [self.score(*pair) for pair in pairs]
        for key, _, _ in pairs:  # room for every pass first, so the threads evict nothing
            self.kept.pop(key, None)
        while len(self.kept) > self.keep - len(pairs):
            self.kept.pop(next(iter(self.kept)))

        def score_on_own_stream(pair) -> PairScore:
            with cupy.cuda.Device(self.devices[0]), cupy.cuda.Stream(non_blocking=True):
                return self.score(*pair)

        with ThreadPoolExecutor(max_workers=len(pairs), thread_name_prefix="gpualign-strand") as pool:
            return list(pool.map(score_on_own_stream, pairs))

    def align(self, key, query_codes, target_codes) -> PairAlignment:
        """:func:`align_pair` of the pair: from the kept score pass of ``key`` when there is one."""
        scored = self.kept.pop(key, None)
        profile = {} if self.profile is not None else None
        if scored is None:
            self.kept.clear()
            result = align_pair(query_codes, target_codes, self.scheme, self.mode,
                                memory_budget=self.memory_budget, profile=profile, progress=self.progress,
                                devices=self.devices)
            if profile:
                self.profile["score_passes"] = self.profile.get("score_passes", 0) + 1
        else:
            result = scored.finish(profile)
            if profile:
                profile.pop("score_pass_s")  # counted when it was scored
                self.profile["kept_hits"] = self.profile.get("kept_hits", 0) + 1
        if profile:
            add_profile(self.profile, profile)
        return result


def long_pair_session(scheme: ScoringScheme, mode: str, device: int = 0, memory_budget: int | None = None,
                      keep: int = 2, profile: dict | None = None, progress=None,
                      devices=None) -> LongPairSession:
    """A :class:`LongPairSession` (use with ``with``): one score pass for a pair scored, then aligned."""
    return LongPairSession(scheme, mode, device, memory_budget, keep, profile, progress, devices)


CHUNK_ROWS_PER_LANE = 2
"""Rows per lane when re-solving a chunk: the most strips (warps) for a chunk's few thousand rows."""


class _Chunk:
    """Direction bytes of one re-solved chunk (rows ``r0+1..r0+height``, columns ``c0+1..c0+width``)."""

    def __init__(self, r0: int, c0: int, height: int, width: int, dirs):
        self.r0, self.c0, self.height, self.width, self.dirs = r0, c0, height, width, dirs

    def covers(self, i: int, j: int) -> bool:
        """Whether the re-solved part of the chunk holds cell ``(i, j)``."""
        return i - self.r0 <= self.height and j - self.c0 <= self.width
