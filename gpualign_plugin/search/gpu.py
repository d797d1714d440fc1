"""Database search score pass on one GPU: the best local score of every (query, target) pair.

Same function and answer as :func:`gpualign_plugin.search.api.score_database`
(an ``int32`` queries x targets matrix, 0 where nothing scores above 0); top-k,
ranking, statistics and the alignment pass stay the CPU path's.
docs/ALGORITHMS.md ("Database search") has the recurrence; docs/GPU.md the design.

**Work items.** The targets are packed exactly as the CPU kernel packs them
(:func:`gpualign_plugin.search.cpu.interleave`: sorted by length,
batches of ``LANES`` interleaved residue by residue). A work item is one
(query, batch) pair, ``m * width`` cells per lane.

* **Inter-task** (``search/search.cu``): one thread per lane of an item, ``LANES``
  threads per block, the query profile in shared memory, ``ROWS_PER_THREAD``
  query rows in registers per sweep of the target. Blocks are persistent: as
  many as are resident (or fit the memory budget), each with its own scratch
  slot (the hand-over row between row blocks, ``8 * width * LANES`` bytes), taking
  items from an atomic counter in the order given: largest first, so the long
  lanes start first and short ones fill in behind them.
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

**Memory.** The packed targets, queries, the output matrix and the item list
(fixed), plus one scratch slot per block; the grid shrinks to what fits
``memory_budget`` (default: half the free device memory).
:class:`~gpualign_plugin.runtime.kernels.GpuMemoryError` when not even one slot fits.
"""

from __future__ import annotations

import dataclasses
from typing import Callable

import numpy as np

from gpualign_plugin.pairwise import api as pairwise
from gpualign_plugin.runtime import kernels
from gpualign_plugin.runtime.kernels import GpuMemoryError
from gpualign_plugin.scoring import NEG_INF, ScoringScheme
from gpualign_plugin.search import cpu as search_kernels

LANES = search_kernels.LANES
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
                   memory_budget: int | None = None, pair_cells: int = PAIR_CELLS) -> np.ndarray:
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
        The chunk does not fit ``memory_budget`` or the free device memory.
    GpuKernelError
        A kernel failed.
    """
    import cupy as cp

    result = np.zeros((len(queries), len(targets)), dtype=np.int32)
    if not queries or not targets:
        return result
    codes, offsets, widths, lane_target = search_kernels.pack_targets(queries, targets, scheme)
    query_lengths = np.array([len(q) for q in queries], dtype=np.int64)
    target_lengths = np.array([len(t) for t in targets] + [0], dtype=np.int64)  # [-1]: empty lane
    batch_residues = target_lengths[lane_target].reshape(-1, LANES).sum(axis=1)
    inter_q, inter_b, intra_q, intra_b = plan_items(query_lengths, widths,
                                                    pair_cells if pairwise.gpu_accepts(scheme) else None)
    progress = _Progress(query_lengths, batch_residues, np.concatenate([inter_b, intra_b]),
                         on_progress)
    with cp.cuda.Device(device):
        if len(inter_q):
            out = _score_inter(queries, query_lengths, codes, offsets, widths, scheme, inter_q, inter_b,
                               device, memory_budget, len(targets), progress)
            used = lane_target >= 0
            result[:, lane_target[used]] = out[:, used]
        if len(intra_q):
            transposed = dataclasses.replace(scheme, matrix=np.ascontiguousarray(scheme.matrix.T))
            for q, b in zip(intra_q.tolist(), intra_b.tolist()):
                for index in lane_target[b * LANES:(b + 1) * LANES].tolist():
                    if index >= 0:
                        result[q, index] = _score_pair(queries[q], targets[index], scheme, transposed,
                                                       device)
                progress.done(np.array([q]), np.array([b]))
    progress.finish()
    return result


def _score_pair(query, target, scheme: ScoringScheme, transposed: ScoringScheme, device: int) -> int:
    """Local score of one pair with the long-pair engine, the longer sequence on the rows."""
    if len(target) > len(query):
        return pairwise.score_pair_on("gpu", target, query, transposed, "local", device).score
    return pairwise.score_pair_on("gpu", query, target, scheme, "local", device).score


def _score_inter(queries, query_lengths, codes, offsets, widths, scheme, item_query, item_batch,
                 device, memory_budget, n_targets, progress) -> np.ndarray:
    """Run the inter-task kernel over the given items; returns the host ``(queries, lanes)`` scores."""
    import cupy as cp

    n_queries, n_batches = len(queries), len(widths)
    packed = np.concatenate([np.ascontiguousarray(q, dtype=np.uint8) for q in queries])
    query_offsets = np.zeros(n_queries + 1, dtype=np.int64)
    np.cumsum(query_lengths, out=query_offsets[1:])
    sub = search_kernels.extend_matrix(scheme.matrix, np.int32)
    letters = sub.shape[1]
    width = int(widths[item_batch].max())
    fixed = (codes.nbytes + 12 * n_batches + packed.nbytes + query_offsets.nbytes + sub.nbytes
             + 4 * n_queries * n_batches * LANES + 8 * len(item_query) + 4096)
    slot_bytes = 8 * width * LANES
    shared = 4 * letters * PROFILE_TILE
    kernel = kernels.get_kernel(device, _SOURCE, _KERNEL)
    budget = memory_budget if memory_budget is not None else kernels.free_bytes() // 2
    slots = scratch_slots(fixed, slot_bytes, budget,
                          kernels.resident_blocks(kernel, LANES, shared, device))
    what = f"scoring {n_queries} queries against {n_targets} targets ({codes.size} padded residues)"
    kernels.check_memory(fixed + slots * slot_bytes, what)
    d_codes = cp.asarray(codes)
    d_offsets = cp.asarray(offsets.astype(np.int64))
    d_widths = cp.asarray(widths.astype(np.int32))
    d_queries = cp.asarray(packed)
    d_query_offsets = cp.asarray(query_offsets)
    d_sub = cp.asarray(sub)
    d_item_query = cp.asarray(item_query)
    d_item_batch = cp.asarray(item_batch)
    scratch = cp.empty(slots * width * LANES * 2, dtype=cp.int32)
    out = cp.zeros((n_queries, n_batches * LANES), dtype=cp.int32)
    counter = cp.zeros(1, dtype=cp.int32)
    cells = query_lengths[item_query] * widths[item_batch]
    i32, i64 = np.int32, np.int64
    for start, stop in launch_ranges(cells):
        counter.fill(0)
        args = (d_codes, d_offsets, d_widths, d_queries, d_query_offsets, d_sub, i32(letters),
                i32(scheme.gap_open + scheme.gap_extend), i32(scheme.gap_extend),
                i32(search_kernels.PAD_SCORE), i32(NEG_INF), d_item_query[start:], d_item_batch[start:],
                i32(stop - start), counter, scratch, i64(width * LANES), out, i64(n_batches * LANES))
        kernels.launch(kernel, _KERNEL, min(slots, stop - start), LANES, args, shared,
                       f"{what}, items {start}..{stop} of {len(item_query)}, widest batch {width}")
        progress.done(item_query[start:stop], item_batch[start:stop])
    return out.get()


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
