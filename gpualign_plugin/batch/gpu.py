"""Batch alignment with traceback on one GPU: one warp per pair (``batch/batch.cu``).

Same answer as :mod:`gpualign_plugin.batch.cpu` pair for pair (the recurrence, end-cell
rule, direction codes and traceback rule of docs/ALGORITHMS.md); docs/GPU.md has the design
and the measurements.

**Packing.** Pairs are launched longest first (``m * n`` descending), one warp each, so
the long ones start first and short ones fill in behind them. A pair's query rows are cut
into strips of ``32 * R`` rows, ``R`` (1-8 rows per lane) chosen per pair so that the
strips are nearly full: ``strips = ceil(m / 256)``, ``R = ceil(m / (32 * strips))``.

**Direction codes** take 4 bits a cell, ``R`` of them in one 32-bit word per lane and
wavefront step: ``strips * (n + 31) * 32`` words a pair (the 31 extra steps are the
wavefront's ramp). The traceback runs on the device right after the fill (lane 0 of the
pair's warp) and returns run-length codes, so only the CIGAR runs come back to the host.

**Memory.** A pair takes ``4 * strips * (n + 31) * 32`` bytes of direction words, ``4 (m + n)``
bytes of runs and ``8 (n + 1)`` bytes of strip boundary; pairs are cut into launches that
fit ``memory_budget`` (default: half the free device memory). The caller
(:func:`gpualign_plugin.batch.api.align_columns`) keeps pairs above :data:`MAX_PAIR_CELLS`
away from this engine (they go to the long-pair engine).
"""

from __future__ import annotations

import numpy as np

from gpualign_plugin.batch.columns import SequencePairs, empty_columns, merge_columns
from gpualign_plugin.model import AlignmentColumns, PairAlignment
from gpualign_plugin.runtime import kernels
from gpualign_plugin.runtime.kernels import GpuMemoryError
from gpualign_plugin.scoring import MODE_CODES, ScoringScheme

_SOURCE = "batch/batch.cu"
_KERNEL = "batch_align"
_FORWARD = "forward_runs"
WARPS_PER_BLOCK = 4
MAX_PAIR_CELLS = 1 << 26
"""Largest ``m * n`` aligned here (32 MiB of direction codes); larger pairs go to the long-pair
engine. A pair this size takes one warp some tens of milliseconds, beside the other pairs of its
launch; the long-pair engine takes them one at a time, and loads its Numba traceback on the
host. Measured on an H200 (search, top 10 aligned): 20 queries x 400,000 proteins, whose 10 hits
over 2^24 cells went to the long-pair engine with the limit at 2^24, aligned and written in
0.41-0.42 s instead of 0.57 s (1.80 s in a fresh process), outputs identical."""
MAX_ALPHABET = 32
LAUNCH_PAIRS = 1 << 17
"""Most pairs in one launch (:func:`align_columns` overlaps the host's work with the next launch)."""


def strip_shape(m: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(strips, rows_per_lane)`` of queries of lengths ``m`` (>= 1): strips of ``32 * R`` rows, R <= 8."""
    m = np.asarray(m, dtype=np.int64)
    strips = (m + 255) // 256
    return strips, -(-m // (32 * strips))


def pair_bytes(m: np.ndarray, n: np.ndarray) -> np.ndarray:
    """Device bytes of each pair: direction words, CIGAR run slots and the strip boundary row."""
    strips, _ = strip_shape(m)
    n = np.asarray(n, dtype=np.int64)
    return 128 * strips * (n + 31) + 4 * (m + n) + 8 * (n + 1) + 64


def accepts(scheme: ScoringScheme) -> bool:
    """Whether the kernel takes ``scheme`` (an alphabet of at most 32 letters)."""
    return scheme.matrix.shape[0] <= MAX_ALPHABET


def align_batch(pairs, scheme: ScoringScheme, mode: str, device: int = 0,
                memory_budget: int | None = None, profile: dict | None = None,
                progress=None) -> list[PairAlignment]:
    """Align every ``(query_codes, target_codes)`` pair on the GPU, with traceback.

    :func:`align_columns` of the pairs, as one :class:`PairAlignment` each (in the
    order of ``pairs``, identical to :func:`gpualign_plugin.batch.api.align_batch` on
    the CPU); ``pairs`` is a sequence of ``uint8`` code arrays, each pair of 1 to
    :data:`MAX_PAIR_CELLS` cells. ``progress`` is called after each launch with its DP
    cells (``m * n`` of its pairs).
    """
    return align_columns(SequencePairs.from_list(list(pairs)), scheme, mode, device, memory_budget,
                         profile, progress).pairs()


def align_columns(pairs: SequencePairs, scheme: ScoringScheme, mode: str, device: int = 0,
                  memory_budget: int | None = None, profile: dict | None = None,
                  progress=None, launch_pairs: int = LAUNCH_PAIRS) -> AlignmentColumns:
    """Align every pair of ``pairs`` on the GPU, with traceback; results as arrays.

    Parameters
    ----------
    pairs : SequencePairs
        Every query and target at least one residue long and ``m * n`` at most
        :data:`MAX_PAIR_CELLS`.
    scheme : ScoringScheme
        Substitution matrix (any ``int32`` scores, alphabet up to 32 letters) and gap costs;
        the caller has checked the score range.
    mode : str
        ``'local'``, ``'global'`` or ``'semiglobal'``.
    device : int
        CUDA device ordinal.
    memory_budget : int, optional
        Device bytes one launch may take (default: half the free device memory);
        pairs are cut into as many launches as needed.
    profile : dict, optional
        When given, ``profile['kernel_seconds']`` accumulates the kernels' device time
        (CUDA events around each launch) and ``profile['launches']`` counts them.
    progress : callable, optional
        Called with the DP cells of each launch once its results are back.
    launch_pairs : int
        Most pairs in one launch: the host gathers the next launch's sequences and
        unpacks the last one's results while a launch runs.

    Returns
    -------
    AlignmentColumns
        In the order of ``pairs``, identical to
        :func:`gpualign_plugin.batch.api.align_columns` on the CPU.

    Raises
    ------
    GpuMemoryError
        A single pair does not fit ``memory_budget``.
    """
    import cupy

    count = len(pairs)
    if not count:
        return empty_columns()
    mode_code = MODE_CODES[mode]
    m, n = pairs.query_lengths, pairs.target_lengths
    if (m < 1).any() or (n < 1).any() or (m * n > MAX_PAIR_CELLS).any():
        raise ValueError("the batch GPU kernel takes pairs of 1 to MAX_PAIR_CELLS cells")
    with cupy.cuda.Device(device):
        budget = memory_budget if memory_budget is not None else kernels.free_bytes() // 2
        need = pair_bytes(m, n) + m + n
        if need.max() > budget:
            raise GpuMemoryError(f"a {int(m[need.argmax()])} x {int(n[need.argmax()])} pair needs "
                                 f"{int(need.max()) / 2**20:.0f} MiB of GPU memory; the budget is "
                                 f"{budget / 2**20:.0f} MiB")
        order = np.argsort(-(m * n), kind="stable")
        launches = _launch_ranges(need[order], budget, launch_pairs)
        kernel = kernels.get_kernel(device, _SOURCE, _KERNEL)
        matrix = cupy.asarray(np.ascontiguousarray(scheme.matrix, dtype=np.int32))
        args = (kernel, matrix, scheme, mode_code, profile)
        parts = []
        running = _start(pairs.take(order[launches[0]]), *args)
        for k, launch in enumerate(launches):
            staged = pairs.take(order[launches[k + 1]]) if k + 1 < len(launches) else None
            if staged is not None:
                staged = (staged, staged.packed_queries(), staged.packed_targets())
            finished = _finish(running, profile)
            if staged is not None:
                running = _start(staged, *args)
            parts.append((order[launch], finished))
            if progress is not None:
                progress(int(np.dot(m[order[launch]], n[order[launch]])))
        return merge_columns(count, parts)


def _launch_ranges(need: np.ndarray, budget: int, most: int) -> list[slice]:
    """Consecutive ranges of pairs (needing ``need`` bytes each) of at most ``budget`` bytes and ``most`` pairs."""
    ranges = []
    cumulative = np.cumsum(need)
    start = 0
    while start < len(need):
        taken = int(np.searchsorted(cumulative, (cumulative[start - 1] if start else 0) + budget,
                                    side="right"))
        stop = min(max(taken, start + 1), start + most)
        ranges.append(slice(start, stop))
        start = stop
    return ranges


def _start(pairs, kernel, matrix, scheme, mode_code, profile):
    """Upload one launch's pairs (already longest first) and launch it; returns what :func:`_finish` needs.

    ``pairs`` is a :class:`SequencePairs`, or one with its packed queries and targets.
    """
    import cupy

    pairs, (queries, q_offsets), (targets, t_offsets) = pairs if isinstance(pairs, tuple) else \
        (pairs, pairs.packed_queries(), pairs.packed_targets())
    m, n = pairs.query_lengths, pairs.target_lengths
    count = len(pairs)
    strips, rows = strip_shape(m)
    dir_offsets = np.zeros(count, dtype=np.int64)
    np.cumsum((32 * strips * (n + 31))[:-1], out=dir_offsets[1:])
    run_offsets = q_offsets[:-1] + t_offsets[:-1]
    boundary_offsets = 2 * (t_offsets[:-1] + np.arange(count))
    dirs = cupy.empty(int((32 * strips * (n + 31)).sum()), dtype=cupy.uint32)
    runs = cupy.empty(int(q_offsets[-1] + t_offsets[-1]), dtype=cupy.uint32)
    boundary = cupy.empty(int(2 * (t_offsets[-1] + count)), dtype=cupy.int32)
    out = cupy.empty((count, 6), dtype=cupy.int32)
    device_run_offsets = cupy.asarray(run_offsets)
    threads = 32 * WARPS_PER_BLOCK
    blocks = -(-count // WARPS_PER_BLOCK)
    events = (cupy.cuda.Event(), cupy.cuda.Event()) if profile is not None else None
    arguments = (cupy.asarray(queries), cupy.asarray(q_offsets), cupy.asarray(targets),
                 cupy.asarray(t_offsets), cupy.asarray(np.arange(count, dtype=np.int32)),
                 cupy.asarray(rows.astype(np.int32)), cupy.asarray(dir_offsets), device_run_offsets,
                 boundary, cupy.asarray(boundary_offsets), dirs, runs, out, np.int32(count), matrix,
                 np.int32(scheme.matrix.shape[0]), np.int32(scheme.gap_open),
                 np.int32(scheme.gap_extend), np.int32(mode_code))
    if events:
        events[0].record()
    kernels.launch(kernel, _KERNEL, blocks, threads, arguments, 0,
                   f"{count} pairs, longest {int(m[0])} x {int(n[0])}", sync=False)
    if events:
        events[1].record()
    return out, runs, device_run_offsets, events, count


def _finish(running, profile) -> AlignmentColumns:
    """Wait for a launch of :func:`_start` and bring its results back, each pair's runs in forward order."""
    import cupy

    out, runs, slot_offsets, events, count = running
    kernels.synchronize(f"aligning {count} pairs")
    if profile is not None:
        profile["kernel_seconds"] = profile.get("kernel_seconds", 0.0) + \
            cupy.cuda.get_elapsed_time(*events) / 1000
        profile["launches"] = profile.get("launches", 0) + 1
    host = out.get().astype(np.int64)
    run_offsets = np.zeros(count + 1, dtype=np.int64)
    np.cumsum(host[:, 5], out=run_offsets[1:])
    forward = cupy.empty(max(1, int(run_offsets[-1])), dtype=cupy.uint32)
    kernels.launch(kernels.get_kernel(cupy.cuda.Device().id, _SOURCE, _FORWARD), _FORWARD, count, 32,
                   (runs, slot_offsets, cupy.asarray(run_offsets), forward, np.int32(count)), 0,
                   f"{count} pairs, {int(run_offsets[-1])} runs")
    return AlignmentColumns(host[:, 0].copy(), host[:, 1].copy(), host[:, 2].copy(), host[:, 3].copy(),
                            host[:, 4].copy(), forward.get()[:run_offsets[-1]], run_offsets)
