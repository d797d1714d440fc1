"""Database search score pass on the GPU(s): the best local score of every (query, target) pair.

Two entry points. :func:`top_hits` is what ``gpualign search --backend gpu`` runs on a
prepared database: the records are split over ``--devices`` (and into parts where a
device's share does not fit), each part stays resident while every query is scored
against it, and each query's ``top``-th best score is found on the device so that only
the candidates at or above it come back (ranking, statistics and the alignments are
:mod:`gpualign_plugin.search.api`'s). :func:`score_database` returns the whole
``int32`` queries x targets matrix (0 where nothing scores above 0), the same as
:func:`gpualign_plugin.search.api.score_database` (the chunked CPU path, which a
search whose statistics must be fitted to the score histogram also takes on the GPU).
docs/ALGORITHMS.md ("Database search") has the recurrence; docs/GPU.md the design.

**Work items.** The targets are packed exactly as the CPU kernel packs them
(:func:`gpualign_plugin.search.cpu.interleave`: sorted by length,
batches of ``LANES`` interleaved residue by residue), but on the device
(:func:`_pack_on_device`: no compiled host pass, whose first call in a process costs about a
second). A work item is one
(query, batch) pair, ``m * width`` cells per lane.

* **Inter-task, 16 bits** (``search_inter16<ROWS16>`` in ``search/search.cu``, the
  default where the scheme allows it): ``LANES / 2`` threads per block, two lanes per
  thread in the halves of ``s16x2`` words (Hopper DPX instructions), the query profile
  in shared memory. A lane whose best score comes within the largest substitution score
  of 32767 is flagged and its item rescored by the 32-bit kernel, so every score is
  exact.
* **Inter-task, 32 bits** (``search_inter<ROWS_PER_THREAD>``): one thread per lane,
  ``LANES`` threads per block, ``ROWS_PER_THREAD`` query rows in registers per sweep.
  In both, blocks are persistent: as many as are resident (or fit the memory budget),
  each with its own scratch slot (the hand-over row between row blocks), taking items
  from an atomic counter, largest first.
* **Intra-task**: an item whose lanes would each compute more than
  :data:`PAIR_CELLS` cells (or whose width exceeds :data:`MAX_INTER_WIDTH`)
  would keep one thread busy long after the rest of the GPU is done; each of its
  pairs is scored instead by the long-pair engine
  (:func:`gpualign_plugin.pairwise.gpu.score_pair`, local mode), which spreads
  one pair over many warps. The longer sequence goes on the rows (the engine's
  parallel dimension): the local score is the same with the query and target
  swapped and the substitution matrix transposed. That engine takes
  substitution scores in -128..127 only; other schemes score every item
  inter-task.

**Memory.** A part's packed targets and score matrix take at most a quarter of the budget
(default: half the free device memory); the fixed inputs plus one scratch slot per block
must fit the rest, and the grid shrinks to what fits.
:class:`~gpualign_plugin.runtime.kernels.GpuMemoryError` when not even one slot fits.
"""

from __future__ import annotations

import dataclasses
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Callable

import numpy as np

from gpualign_plugin.pairwise import api as pairwise
from gpualign_plugin.runtime import kernels
from gpualign_plugin.runtime.kernels import GpuMemoryError
from gpualign_plugin.scoring import NEG_INF, ScoringScheme
from gpualign_plugin.search import layout

LANES = layout.LANES
"""Targets per batch, threads per block (the CPU kernel's packing)."""
ROWS_PER_THREAD = 32
"""Query rows each thread keeps in registers per sweep of its target (``R`` of search.cu).
Measured on an H200, 500 x 20,000 proteins: R = 4, 8, 16, 32, 64 gave 550, 893, 1036, 1206, 1158 GCUPS
(more rows per sweep: less hand-over traffic and loop overhead per cell, despite fewer
resident threads); a query is padded up to a multiple of R rows."""
PROFILE_TILE = 128
"""Query rows per shared-memory profile tile (``SEARCH_TILE`` of search.cu)."""
PAIR_CELLS = 1 << 26
"""Largest ``m * width`` cells of one lane scored inter-task (67 M; a lane of this size runs for
seconds on one thread). The items are ordered largest first, so long lanes overlap the
rest of the launch; the long-pair engine only pays for pairs beyond that, since each of its
calls costs about a millisecond and runs alone. Measured on an H200 (500 queries x 20,000
proteins of the benchmark, longest lane 35 M cells): 2.5 s with every item inter-task,
6.9 s with the 4,352 pairs above 8 M cells sent to the long-pair engine."""
MAX_INTER_WIDTH = 1 << 16
"""Widest batch scored inter-task (bounds a scratch slot to 32 MiB)."""
LAUNCH_CELLS = 10**12
"""Cells per kernel launch (a few seconds): the granularity of progress reports."""
ROWS16 = 32
"""Query rows per sweep of the 16-bit kernel (``R`` of ``search_inter16``; each register holds two targets).
Measured on an H200 (stop 36, 20 q x 400,000 / 500 q x 20,000 kernels): R = 16, 32, 64 took
2.00 / 0.75, 1.36 / 0.54 and 1.55 / 0.63 s."""
PROFILE16_STRIDE = 64 + 8
"""Shorts per letter row of the 16-bit kernel's shared profile (``SEARCH16_STRIDE`` of search.cu)."""
PAD16 = -16384
"""Profile value of padding in the 16-bit kernel (far below any real score, far from wrapping)."""
WHOLE_UPLOAD_SHARE = 8
"""A part is packed from an upload of the whole database when its codes take at most this
fraction (1/8) of the free device memory: one copy, no gather on the host (a part of a larger
database uploads only its records)."""
SELECT_THREADS = 512
"""Threads per block of the selection kernels run after the scan (``SELECT_THREADS`` of search.cu)."""
_SOURCE = "search/search.cu"
_KERNEL = f"search_inter<{ROWS_PER_THREAD}>"



def plan_items(query_lengths: np.ndarray, batch_widths: np.ndarray, pair_cells: int | None,
               max_width: int = MAX_INTER_WIDTH) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Split the (query, batch) work items between the inter-task kernel and the long-pair engine.

    Parameters
    ----------
    query_lengths, batch_widths : numpy.ndarray
        Residues of each query; padded length of each batch.
    pair_cells : int or None
        Items with ``m * width`` above this, or ``width`` above ``max_width``, go
        intra-task; None keeps every item inter-task.

    Returns
    -------
    inter_query, inter_batch, intra_query, intra_batch : numpy.ndarray
        ``int32`` item coordinates. Inter-task items are ordered by cells
        descending, then batch, then query. Items with no cells (empty query or a
        batch of empty targets) are in neither list: their scores are 0.
    """
    cells = np.asarray(query_lengths, np.int64)[:, None] * np.asarray(batch_widths, np.int64)[None, :]
    live = cells > 0
    intra = np.zeros_like(live)
    if pair_cells is not None:
        intra = live & ((cells > pair_cells) | (np.asarray(batch_widths)[None, :] > max_width))
    inter_query, inter_batch = np.nonzero(live & ~intra)
    order = np.lexsort((inter_query, inter_batch, -cells[inter_query, inter_batch]))
    intra_query, intra_batch = np.nonzero(intra)
    return (inter_query[order].astype(np.int32), inter_batch[order].astype(np.int32),
            intra_query.astype(np.int32), intra_batch.astype(np.int32))


def launch_ranges(item_cells: np.ndarray, launch_cells: int = LAUNCH_CELLS,
                  max_items: int = 1 << 30) -> list[tuple[int, int]]:
    """Consecutive ``[start, stop)`` ranges of items, each about ``launch_cells`` cells.

    Every range holds at least one item and at most ``max_items``; together they
    cover ``range(len(item_cells))`` in order.
    """
    ranges = []
    total = np.cumsum(np.asarray(item_cells, np.int64))
    start = 0
    while start < len(total):
        before = total[start - 1] if start else 0
        stop = int(np.searchsorted(total, before + launch_cells, side="right"))
        stop = min(max(stop, start + 1), start + max_items)
        ranges.append((start, stop))
        start = stop
    return ranges


def chained_items(item_rows: np.ndarray, item_widths: np.ndarray, split_cells: int | None,
                  warps: int, room: int, rows_per_task: int = ROWS16) -> np.ndarray:
    """Which items run as chains of ``rows_per_task``-row tasks (``search_inter16``'s chained tasks).

    Parameters
    ----------
    item_rows, item_widths : numpy.ndarray
        Query residues and batch width of each item, the items ordered largest first.
    split_cells : int or None
        Items whose lanes have more cells (rows x width) are chained; None: the mean cells
        a lane per warp (all items' cells a lane over ``warps``), the size above which one
        item would outlast the launch's even share of a warp.
    warps : int
        Warps resident at once (one per block of the 16-bit kernel).
    room : int
        Bytes of device memory the chains may take (:func:`chain_bytes`): items are chained
        in order, largest first, until the next one would not fit.

    Returns
    -------
    numpy.ndarray
        ``bool`` per item. Items of at most ``rows_per_task`` rows are never chained.
    """
    rows = np.asarray(item_rows, np.int64)
    lane_cells = rows * np.asarray(item_widths, np.int64)
    limit = split_cells if split_cells is not None else int(lane_cells.sum()) // max(1, warps)
    split = (lane_cells > limit) & (rows > rows_per_task)
    cost = np.where(split, chain_bytes(item_widths, -(-rows // rows_per_task)), 0)
    return split & (np.cumsum(cost) <= room)


def chain_bytes(widths, tasks):
    """Device bytes of chains over batches of these widths, of these numbers of tasks: a ring of two
    rows (8 bytes a column and thread, 32 threads), a progress count and 32 best words per task."""
    return 2 * 32 * 8 * np.asarray(widths, np.int64) + (4 + 4 * 32) * np.asarray(tasks, np.int64)


def plan_tasks(item_rows: np.ndarray, split: np.ndarray,
               rows_per_task: int = ROWS16) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The kernel's tasks: each item whole, or (``split``) as a chain of ``rows_per_task``-row tasks.

    Returns
    -------
    task_item, task_row, task_chain, first_task : numpy.ndarray
        ``int32`` per task: its item, its first query row (0 for a whole item) and its chain
        (-1 for a whole item; chains numbered in item order); ``int64`` ``first_task[k]``: the
        index of item ``k``'s first task (``first_task[-1]`` is the number of tasks). A
        chain's ``ceil(rows / rows_per_task)`` tasks are consecutive, in row order.
    """
    rows = np.asarray(item_rows, np.int64)
    split = np.asarray(split, dtype=bool)
    counts = np.where(split, -(-rows // rows_per_task), 1)
    first_task = np.zeros(len(rows) + 1, dtype=np.int64)
    np.cumsum(counts, out=first_task[1:])
    task_item = np.repeat(np.arange(len(rows), dtype=np.int32), counts)
    task_row = ((np.arange(first_task[-1]) - first_task[task_item]) * rows_per_task).astype(np.int32)
    chain_of_item = np.where(split, np.cumsum(split) - 1, -1).astype(np.int32)
    return task_item, task_row, chain_of_item[task_item], first_task


def scratch_slots(fixed_bytes: int, slot_bytes: int, budget: int, most: int) -> int:
    """Persistent blocks (one scratch slot each) that fit ``budget`` bytes, at most ``most``.

    Raises
    ------
    GpuMemoryError
        Not even one slot fits beside the ``fixed_bytes``.
    """
    room = budget - fixed_bytes
    slots = min(most, room // slot_bytes) if slot_bytes > 0 else most
    if slots < 1 or room < 0:
        raise GpuMemoryError(
            f"the search score pass needs {(fixed_bytes + slot_bytes) / 2**20:.1f} MiB of GPU memory "
            f"({fixed_bytes / 2**20:.1f} MiB for this chunk of the database and the queries, "
            f"{slot_bytes / 2**20:.1f} MiB per block) but the budget is {budget / 2**20:.1f} MiB; "
            "use a smaller --chunk-residues")
    return int(slots)


def score_database(queries: list[np.ndarray], targets: list[np.ndarray], scheme: ScoringScheme,
                   device: int = 0, on_progress: Callable[[int, int], None] | None = None, *,
                   memory_budget: int | None = None, pair_cells: int = PAIR_CELLS,
                   use16: bool | None = None, split_cells: int | None = None) -> np.ndarray:
    """Best local (Smith-Waterman-Gotoh) score of every query against every target, on the GPU.

    Parameters
    ----------
    queries, targets : list of numpy.ndarray
        ``uint8`` codes in ``scheme``'s alphabet (oriented as given).
    scheme : ScoringScheme
        Substitution matrix and gap costs (a gap of ``k`` costs ``open + k*extend``).
    device : int
        CUDA device ordinal (counted inside CUDA_VISIBLE_DEVICES).
    on_progress : callable, optional
        Called with ``(target residues, cells)`` after each kernel launch and each
        intra-task pair; the residues of a batch are reported once all its items are done.
    memory_budget : int, optional
        Bytes of device memory the score pass may take (default: half the free memory).
    pair_cells : int
        Lanes of more cells go intra-task (:data:`PAIR_CELLS`; tests force small values).
    use16 : bool, optional
        Score in 16-bit lanes first (default: when the scheme allows,
        :func:`~gpualign_plugin.search.cpu.fits_int16`); False runs the 32-bit kernel alone.
    split_cells : int or None
        Items of the 16-bit kernel with more cells a lane (query rows x batch width) run as
        chains of 32-row tasks, since on one warp such an item would outlast the rest of the
        launch (:func:`chained_items`; None, the default: above the mean cells a lane per
        resident warp; tests force 0).

    Returns
    -------
    numpy.ndarray
        ``int32`` ``(len(queries), len(targets))``, equal to the CPU
        :func:`gpualign_plugin.search.api.score_database`.

    Raises
    ------
    InputError
        Lengths whose scores could overflow 32-bit integers.
    GpuMemoryError
        Not even one persistent block fits ``memory_budget`` or the free device memory.
    GpuKernelError
        A kernel failed.
    """
    result = np.zeros((len(queries), len(targets)), dtype=np.int32)
    if not queries or not targets:
        return result
    scheme.check_score_range(max(len(q) for q in queries), max(len(t) for t in targets))
    lengths = np.array([len(t) for t in targets], dtype=np.int64)
    offsets = np.concatenate(([0], np.cumsum(lengths)))
    flat = np.concatenate([np.ascontiguousarray(t, dtype=np.uint8) for t in targets])
    part = _pack_on_device(flat, offsets, _batch_rows(np.argsort(lengths, kind="stable")),
                           scheme.matrix.shape[0], device)
    scores = _scan(queries, part, scheme, device, on_progress, memory_budget, pair_cells, use16,
                   split_cells)
    used = part.lane_target >= 0
    result[:, part.lane_target[used]] = scores.get()[:, used]
    return result


def top_hits(queries: list[np.ndarray], codes: np.ndarray, offsets: np.ndarray, order: np.ndarray,
             scheme: ScoringScheme, top: int, devices: list[int],
             on_progress: Callable[[int, int], None] | None = None, *,
             memory_budget: int | None = None, pair_cells: int = PAIR_CELLS,
             use16: bool | None = None,
             split_cells: int | None = None) -> list[tuple[np.ndarray, np.ndarray]]:
    """The candidates for the ``top`` best targets of each query, selected on the GPU(s).

    The records ``order`` of a flat database (record ``i`` is
    ``codes[offsets[i]:offsets[i+1]]``; ``order`` sorted by length) are
    split over ``devices`` (batches dealt in turn, so each device gets
    about the same cells) and, where a device's share does not fit
    ``memory_budget``, into consecutive parts. Each part stays on its device
    while every query is scored against it; then the ``top``-th best score of
    each query is found on the device and only the scores at or above it
    (and above 0) come back. One host thread drives each device.
    ``memory_budget``, ``pair_cells``, ``use16`` and ``split_cells`` are
    :func:`score_database`'s.

    Returns
    -------
    list of (numpy.ndarray, numpy.ndarray)
        For each query: ``int32`` scores and ``int64`` record indices of its
        candidates, a superset of its ``top`` best by the ranking rule (score
        descending, then record index), unordered.
    """
    if not queries or len(order) == 0:
        return [(np.empty(0, np.int32), np.empty(0, np.int64)) for _ in queries]
    lengths = np.diff(offsets)
    scheme.check_score_range(max(len(q) for q in queries), int(lengths[order].max()))
    rows = _batch_rows(order)
    widths = np.where(rows >= 0, lengths[np.maximum(rows, 0)], 0).max(axis=1)
    lock = threading.Lock()

    def progress(residues: int, cells: int) -> None:
        with lock:
            on_progress(residues, cells)

    def run(groups: list, device: int) -> list:
        found = []
        for group in groups:
            part = _pack_on_device(codes, offsets, rows[group], scheme.matrix.shape[0], device)
            scores = _scan(queries, part, scheme, device, progress if on_progress else None,
                           memory_budget, pair_cells, use16, split_cells)
            found.append(_device_top(scores, part.lane_target, top, device))
            del scores, part
        return found

    batches = np.arange(len(rows))
    jobs = [(_parts(batches[k::len(devices)], widths, len(queries), memory_budget, device), device)
            for k, device in enumerate(devices) if k < len(batches)]  # more devices than batches: idle
    with ThreadPoolExecutor(max_workers=len(jobs)) as pool:
        found = [item for items in pool.map(lambda job: run(*job), jobs) for item in items]
    return [(np.concatenate([part[q][0] for part in found]),
             np.concatenate([part[q][1] for part in found])) for q in range(len(queries))]


def _batch_rows(order: np.ndarray) -> np.ndarray:
    """``order`` (record indices) cut into batches of :data:`LANES`: row ``b`` holds batch
    ``b``'s records, the last row padded with -1 (empty lanes)."""
    rows = np.full(-(-len(order) // LANES) * LANES, -1, dtype=np.int64)
    rows[:len(order)] = order
    return rows.reshape(-1, LANES)


class _Part:
    """Interleaved batches of a part of the database on its device: the inputs of :func:`_scan`.

    ``codes`` (device ``uint8``) are the batches packed as :func:`~gpualign_plugin.search.cpu.
    interleave_records` packs them; ``lane_target`` the record index of each lane slot (-1:
    empty); ``record(index)`` a record's codes on the host (for the intra-task pairs).
    """

    def __init__(self, codes, batch_offsets, widths, lane_target, lane_lengths, record):
        self.codes = codes
        self.record = record
        self.batch_offsets = batch_offsets
        self.widths = widths
        self.lane_target = lane_target
        self.batch_residues = lane_lengths.reshape(-1, LANES).sum(axis=1)


def _pack_on_device(codes: np.ndarray, offsets: np.ndarray, rows: np.ndarray, pad_code: int,
                    device: int) -> _Part:
    """The batches ``rows`` (record indices, ``LANES`` a row, -1 for empty lanes) of the flat
    database ``codes``/``offsets``, packed on ``device``, each as wide as its longest record.

    The same bytes as :func:`~gpualign_plugin.search.cpu.interleave_records` (tested), without
    its compiled host pass: the whole flat array is uploaded when it takes at most
    1/:data:`WHOLE_UPLOAD_SHARE` of the free memory (or the part holds every record), else only
    the part's records; the ``interleave_lanes`` kernel of search.cu lays them out.
    """
    import cupy as cp

    lane_target = rows.ravel().astype(np.int64)
    lengths = np.diff(offsets)
    lane_lengths = np.where(lane_target >= 0, lengths[np.maximum(lane_target, 0)], 0)
    widths = lane_lengths.reshape(-1, LANES).max(axis=1)
    held = np.zeros(len(lengths), dtype=bool)
    held[lane_target[lane_target >= 0]] = True
    batch_offsets = np.zeros(len(widths), dtype=np.int64)
    batch_offsets[1:] = np.cumsum(widths * LANES)[:-1]
    size = int((widths * LANES).sum())
    with cp.cuda.Device(device):
        whole = held.all() or len(codes) <= kernels.free_bytes() // WHOLE_UPLOAD_SHARE
        upload = len(codes) if whole else int(lengths[held].sum())
        kernels.check_memory(upload + size, f"packing {len(widths)} batches of targets")
        if whole:
            d_codes, starts = kernels.upload(codes), offsets[:-1]
        else:  # only the part's records, in file order
            d_codes = kernels.upload(np.asarray(codes)[np.repeat(held, lengths)])
            starts = np.zeros(len(lengths), dtype=np.int64)
            starts[held] = np.concatenate(([0], np.cumsum(lengths[held])[:-1]))
        lane_starts = np.where(lane_target >= 0, starts[np.maximum(lane_target, 0)], 0)
        packed = cp.empty(size, dtype=cp.uint8)
        if len(widths):
            name = "interleave_lanes"
            kernels.launch(kernels.get_kernel(device, _SOURCE, name), name, len(widths), 256,
                           (d_codes, cp.asarray(lane_starts.astype(np.int64)), cp.asarray(lane_lengths),
                            cp.asarray(batch_offsets), cp.asarray(widths.astype(np.int64)),
                            np.uint8(pad_code), packed), 0, f"{len(widths)} batches")
        del d_codes
    return _Part(packed, batch_offsets, widths, lane_target, lane_lengths,
                 lambda index: codes[offsets[index]:offsets[index + 1]])


def _parts(batches: np.ndarray, widths: np.ndarray, n_queries: int, memory_budget: int | None,
           device: int) -> list[np.ndarray]:
    """Consecutive groups of ``batches`` whose packed codes and score matrix take at most
    a quarter of the memory budget each (the rest is for scratch and the rescoring)."""
    import cupy as cp

    with cp.cuda.Device(device):
        budget = memory_budget if memory_budget is not None else kernels.free_bytes() // 2
    per_batch = widths[batches] * LANES + 4 * n_queries * LANES + 16 * n_queries
    groups, start, total = [], 0, 0
    for k, size in enumerate(per_batch.tolist()):
        if total and total + size > budget // 4:
            groups.append(batches[start:k])
            start, total = k, 0
        total += size
    groups.append(batches[start:])
    return groups


def _device_top(scores, lane_target: np.ndarray, top: int, device: int) -> list:
    """Per query, the scores and record indices of the lanes at or above its ``top``-th best score
    (and above 0), unordered: ``top_floor`` and ``collect_candidates`` of search.cu (``scores``
    has at least one lane)."""
    import cupy as cp

    n_queries, n_lanes = scores.shape
    with cp.cuda.Device(device):
        floors = cp.empty(n_queries, dtype=cp.int32)
        counts = cp.empty(n_queries, dtype=cp.int32)
        _launch(device, "top_floor", n_queries, SELECT_THREADS,
                (scores, np.int64(n_lanes), np.int32(min(max(top, 1), n_lanes)), floors, counts))
        starts = np.zeros(n_queries + 1, dtype=np.int64)
        np.cumsum(counts.get(), out=starts[1:])
        values = cp.empty(max(1, int(starts[-1])), dtype=cp.int32)
        lanes = cp.empty(max(1, int(starts[-1])), dtype=cp.int64)
        _launch(device, "collect_candidates", n_queries, SELECT_THREADS,
                (scores, np.int64(n_lanes), floors, cp.asarray(starts), values, lanes))
        values, lanes = values.get(), lanes.get()
    indices = lane_target[lanes[:starts[-1]]]
    return [(values[starts[q]:starts[q + 1]], indices[starts[q]:starts[q + 1]]) for q in range(n_queries)]


def _launch(device: int, name: str, grid: int, block: int, args: tuple) -> None:
    """Launch the search.cu kernel ``name`` on ``device`` (one of the small kernels run after the scan)."""
    kernels.launch(kernels.get_kernel(device, _SOURCE, name), name, grid, block, args, 0,
                   f"{args[0].shape[0]} queries x {args[0].shape[1]} lanes")


def _scan(queries, part: _Part, scheme: ScoringScheme, device: int, on_progress, memory_budget,
          pair_cells: int, use16: bool | None, split_cells: int | None = None):
    """Score every query against every lane of ``part`` on ``device``; the device
    ``(queries, lanes)`` int32 score matrix (0 in empty lanes)."""
    import cupy as cp

    query_lengths = np.array([len(q) for q in queries], dtype=np.int64)
    inter_q, inter_b, intra_q, intra_b = plan_items(query_lengths, part.widths,
                                                    pair_cells if pairwise.gpu_accepts(scheme) else None)
    progress = _Progress(query_lengths, part.batch_residues, np.concatenate([inter_b, intra_b]),
                         on_progress)
    if use16 is None:
        use16 = layout.fits_int16(scheme.matrix, scheme.gap_open, scheme.gap_extend)
    with cp.cuda.Device(device):
        inputs = _DeviceInputs(queries, query_lengths, part, scheme, len(inter_q))
        if len(inter_q):
            if use16:
                _run_inter(inputs, scheme, inter_q, inter_b, device, memory_budget, True, progress,
                           split_cells)
                flagged = cp.empty((len(queries), len(part.widths)), dtype=cp.uint8)
                _launch(device, "flag_overflowed_items", flagged.size, LANES, (inputs.out, flagged))
                again_q, again_b = (a.astype(np.int32) for a in np.nonzero(flagged.get()))
                if len(again_q):
                    _run_inter(inputs, scheme, again_q, again_b, device, memory_budget, False, None)
            else:
                _run_inter(inputs, scheme, inter_q, inter_b, device, memory_budget, False, progress)
        if len(intra_q):
            transposed = dataclasses.replace(scheme, matrix=np.ascontiguousarray(scheme.matrix.T))
            pairs = []
            for q, b in zip(intra_q.tolist(), intra_b.tolist()):
                for lane in range(b * LANES, (b + 1) * LANES):
                    if part.lane_target[lane] >= 0:
                        target = part.record(int(part.lane_target[lane]))
                        pairs.append((q, lane, _score_pair(queries[q], target, scheme, transposed,
                                                           device)))
                progress.done(np.array([q]), np.array([b]))
            if pairs:
                q, lane, score = (np.array(column) for column in zip(*pairs))
                _launch(device, "set_scores", -(-len(pairs) // 256), 256,
                        (inputs.out, np.int64(inputs.out.shape[1]), cp.asarray(q.astype(np.int64)),
                         cp.asarray(lane.astype(np.int64)), cp.asarray(score.astype(np.int32)),
                         np.int32(len(pairs))))
    progress.finish()
    return inputs.out


def _score_pair(query, target, scheme: ScoringScheme, transposed: ScoringScheme, device: int) -> int:
    """Local score of one pair with the long-pair engine, the longer sequence on the rows."""
    if len(target) > len(query):
        return pairwise.score_pair_on("gpu", target, query, transposed, "local", device).score
    return pairwise.score_pair_on("gpu", query, target, scheme, "local", device).score


class _DeviceInputs:
    """The device copies of one part's packed targets, the queries, the profiles and the score matrix."""

    def __init__(self, queries, query_lengths, part: _Part, scheme: ScoringScheme, n_items: int):
        import cupy as cp

        n_queries, n_batches = len(queries), len(part.widths)
        packed = np.concatenate([np.ascontiguousarray(q, dtype=np.uint8) for q in queries])
        query_offsets = np.zeros(n_queries + 1, dtype=np.int64)
        np.cumsum(query_lengths, out=query_offsets[1:])
        self.sub32 = layout.extend_matrix(scheme.matrix, np.int32)
        self.letters = self.sub32.shape[1]
        oe = scheme.gap_open + scheme.gap_extend
        profile16 = np.clip(scheme.matrix.astype(np.int64) + oe, -32768, 32767)
        self.profile16 = np.full((scheme.matrix.shape[0], self.letters), PAD16, dtype=np.int16)
        self.profile16[:, :-1] = profile16
        self.limit = 32767 - max(0, int(scheme.matrix.max()))
        self.fixed = (part.codes.nbytes + 12 * n_batches + packed.nbytes + query_offsets.nbytes
                      + self.sub32.nbytes + self.profile16.nbytes + 4 * n_queries * n_batches * LANES
                      + 8 * n_items + 4096)
        what = f"scoring {n_queries} queries against {n_batches * LANES} lanes ({part.codes.size} padded residues)"
        kernels.check_memory(self.fixed - part.codes.nbytes, what)  # the packed codes are there already
        self.what = what
        self.width = part.widths
        self.codes = cp.asarray(part.codes)
        self.offsets = cp.asarray(part.batch_offsets.astype(np.int64))
        self.widths = cp.asarray(part.widths.astype(np.int32))
        self.queries = cp.asarray(packed)
        self.query_offsets = cp.asarray(query_offsets)
        self.query_lengths = query_lengths
        self.d_sub32 = cp.asarray(self.sub32)
        self.d_profile16 = cp.asarray(self.profile16)
        self.out = cp.zeros((n_queries, n_batches * LANES), dtype=cp.int32)


def _run_inter(inputs: _DeviceInputs, scheme: ScoringScheme, item_query, item_batch, device,
               memory_budget, sixteen: bool, progress, split_cells: int | None = None) -> None:
    """Run the 16-bit or 32-bit inter-task kernel over the given items, writing ``inputs.out``;
    the 16-bit kernel runs the long items as chains (:func:`chained_items`)."""
    import cupy as cp

    width = int(inputs.width[item_batch].max())
    rows, widths = inputs.query_lengths[item_query], inputs.width[item_batch]
    if sixteen:
        name, threads = f"search_inter16<{ROWS16}>", LANES // 2
        slot_bytes = 8 * width * threads
        shared = 2 * inputs.letters * PROFILE16_STRIDE
    else:
        name, threads = _KERNEL, LANES
        slot_bytes = 8 * width * LANES
        shared = 4 * inputs.letters * PROFILE_TILE
    kernel = kernels.get_kernel(device, _SOURCE, name)
    resident = kernels.resident_blocks(kernel, threads, shared, device)
    budget = memory_budget if memory_budget is not None else kernels.free_bytes() // 2 + inputs.fixed
    split = np.zeros(len(item_query), dtype=bool)
    if sixteen:
        split = chained_items(rows, widths, split_cells, resident, (budget - inputs.fixed) // 2, ROWS16)
    # ROWS16 read now, not as a default bound at import: scripts/search-bench times other R.
    task_item, task_row, task_chain, first_task = plan_tasks(rows, split, ROWS16)
    chain_widths = widths[split]
    chain_row_offsets = np.zeros(len(chain_widths) + 1, dtype=np.int64)
    np.cumsum(2 * 32 * chain_widths, out=chain_row_offsets[1:])
    chained_tasks = len(task_item) if split.any() else 0  # progress and best are indexed by task
    chains = int(chain_bytes(chain_widths, 0).sum() + chain_bytes(0, chained_tasks))
    slots = scratch_slots(inputs.fixed + chains, slot_bytes, budget, resident)
    kernels.check_memory(slots * slot_bytes + chains, inputs.what)
    scratch = cp.empty(slots * slot_bytes // 4, dtype=cp.int32)
    d_task_query = cp.asarray(item_query[task_item])
    d_task_batch = cp.asarray(item_batch[task_item])
    counter = cp.zeros(1, dtype=cp.int32)
    n_lanes = inputs.out.shape[1]
    i32, i64 = np.int32, np.int64
    oe = scheme.gap_open + scheme.gap_extend
    if sixteen:
        d_task_row, d_task_chain = cp.asarray(task_row), cp.asarray(task_chain)
        chain_rows = cp.empty(max(1, int(chain_row_offsets[-1])) * 2, dtype=cp.uint32)
        d_chain_row_offsets = cp.asarray(chain_row_offsets)
        task_progress = cp.zeros(max(1, chained_tasks), dtype=cp.int32)
        task_best = cp.empty(32 * max(1, chained_tasks), dtype=cp.uint32)
    for start, stop in launch_ranges(rows * widths):
        counter.fill(0)
        first, end = int(first_task[start]), int(first_task[stop])
        if sixteen:
            args = (inputs.codes, inputs.offsets, inputs.widths, inputs.queries, inputs.query_offsets,
                    inputs.d_profile16, i32(inputs.letters), i32(oe), i32(scheme.gap_extend),
                    i32(PAD16), i32(inputs.limit), d_task_query[first:], d_task_batch[first:],
                    d_task_row[first:], d_task_chain[first:], i32(end - first), counter, scratch,
                    i64(width * threads), chain_rows, d_chain_row_offsets, task_progress[first:],
                    task_best[32 * first:], inputs.out, i64(n_lanes))
        else:
            args = (inputs.codes, inputs.offsets, inputs.widths, inputs.queries, inputs.query_offsets,
                    inputs.d_sub32, i32(inputs.letters), i32(oe), i32(scheme.gap_extend),
                    i32(layout.PAD_SCORE), i32(NEG_INF), d_task_query[first:],
                    d_task_batch[first:], i32(end - first), counter, scratch, i64(width * LANES),
                    inputs.out, i64(n_lanes))
        kernels.launch(kernel, name, min(slots, end - first), threads, args, shared,
                       f"{inputs.what}, items {start}..{stop} of {len(item_query)}, widest batch {width}")
        if progress is not None:
            progress.done(item_query[start:stop], item_batch[start:stop])


class _Progress:
    """Reports ``(residues, cells)`` as items finish: a batch's residues once all its items are done."""

    def __init__(self, query_lengths, batch_residues, item_batches, callback):
        self.query_lengths = query_lengths
        self.batch_residues = batch_residues
        self.remaining = np.bincount(item_batches, minlength=len(batch_residues))
        self.reported = np.zeros(len(batch_residues), dtype=bool)
        self.callback = callback

    def done(self, item_query: np.ndarray, item_batch: np.ndarray) -> None:
        """Items ``(item_query[k], item_batch[k])`` are scored."""
        if self.callback is None:
            return
        cells = int((self.query_lengths[item_query] * self.batch_residues[item_batch]).sum())
        self.remaining -= np.bincount(item_batch, minlength=len(self.batch_residues))
        self.callback(self._finished(self.remaining == 0), cells)

    def finish(self) -> None:
        """Report the residues of batches that had no items (empty queries or targets)."""
        if self.callback is not None and not self.reported.all():
            self.callback(self._finished(np.ones_like(self.reported)), 0)

    def _finished(self, complete: np.ndarray) -> int:
        new = complete & ~self.reported
        self.reported |= new
        return int(self.batch_residues[new].sum())
