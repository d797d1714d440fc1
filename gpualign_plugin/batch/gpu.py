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
(:func:`gpualign_plugin.batch.api.align_batch_gpu`) keeps pairs above :data:`MAX_PAIR_CELLS`
away from this engine (they go to the long-pair engine).
"""

from __future__ import annotations

import numpy as np

from gpualign_plugin import gotoh
from gpualign_plugin.model import NO_PAIR_ALIGNMENT, Cigar, PairAlignment
from gpualign_plugin.runtime import kernels
from gpualign_plugin.runtime.kernels import GpuMemoryError
from gpualign_plugin.scoring import ScoringScheme

_SOURCE = "batch/batch.cu"
_KERNEL = "batch_align"
WARPS_PER_BLOCK = 4
MAX_PAIR_CELLS = 1 << 24
"""Largest ``m * n`` aligned here (8 MiB of direction codes); larger pairs go to the long-pair engine."""
MAX_ALPHABET = 32
_MODE_CODES = {"local": gotoh.LOCAL, "global": gotoh.GLOBAL, "semiglobal": gotoh.SEMIGLOBAL}


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

    Parameters
    ----------
    pairs : sequence of (numpy.ndarray, numpy.ndarray)
        ``uint8`` codes; every query and target at least one residue long and
        ``m * n`` at most :data:`MAX_PAIR_CELLS`.
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
        Called after each launch with its DP cells (``m * n`` of its pairs).

    Returns
    -------
    list of PairAlignment
        In the order of ``pairs``, identical to
        :func:`gpualign_plugin.batch.api.align_batch` on the CPU.

    Raises
    ------
    GpuMemoryError
        A single pair does not fit ``memory_budget``.
    """
    import cupy

    pairs = list(pairs)
    if not pairs:
        return []
    mode_code = _MODE_CODES[mode]
    m = np.array([len(q) for q, _ in pairs], dtype=np.int64)
    n = np.array([len(t) for _, t in pairs], dtype=np.int64)
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
        kernel = kernels.get_kernel(device, _SOURCE, _KERNEL)
        matrix = cupy.asarray(np.ascontiguousarray(scheme.matrix, dtype=np.int32))
        results: list = [None] * len(pairs)
        start = 0
        cumulative = np.cumsum(need[order])
        while start < len(order):
            taken = int(np.searchsorted(cumulative, (cumulative[start - 1] if start else 0) + budget,
                                        side="right"))
            chunk = order[start:max(taken, start + 1)]
            for k, alignment in zip(chunk, _launch([pairs[k] for k in chunk], m[chunk], n[chunk],
                                                   kernel, matrix, scheme, mode_code, profile)):
                results[k] = alignment
            if progress is not None:
                progress(int((m[chunk] * n[chunk]).sum()))
            start += len(chunk)
        return results


def _launch(pairs, m, n, kernel, matrix, scheme, mode_code, profile) -> list[PairAlignment]:
    """One launch over ``pairs`` (already longest first); results in the same order."""
    import cupy

    count = len(pairs)
    strips, rows = strip_shape(m)
    q_offsets = np.zeros(count + 1, dtype=np.int64)
    t_offsets = np.zeros(count + 1, dtype=np.int64)
    np.cumsum(m, out=q_offsets[1:])
    np.cumsum(n, out=t_offsets[1:])
    dir_offsets = np.zeros(count, dtype=np.int64)
    np.cumsum((32 * strips * (n + 31))[:-1], out=dir_offsets[1:])
    run_offsets = q_offsets[:-1] + t_offsets[:-1]
    boundary_offsets = 2 * (t_offsets[:-1] + np.arange(count))
    queries = cupy.asarray(np.concatenate([np.asarray(q, dtype=np.uint8) for q, _ in pairs]))
    targets = cupy.asarray(np.concatenate([np.asarray(t, dtype=np.uint8) for _, t in pairs]))
    dirs = cupy.empty(int((32 * strips * (n + 31)).sum()), dtype=cupy.uint32)
    runs = cupy.empty(int(m.sum() + n.sum()), dtype=cupy.uint32)
    boundary = cupy.empty(int(2 * (t_offsets[-1] + count)), dtype=cupy.int32)
    out = cupy.empty((count, 6), dtype=cupy.int32)
    device_arrays = [cupy.asarray(x) for x in (q_offsets, t_offsets, np.arange(count, dtype=np.int32),
                                               rows.astype(np.int32), dir_offsets, run_offsets,
                                               boundary_offsets)]
    threads = 32 * WARPS_PER_BLOCK
    blocks = -(-count // WARPS_PER_BLOCK)
    events = (cupy.cuda.Event(), cupy.cuda.Event()) if profile is not None else None
    if events:
        events[0].record()
    kernels.launch(kernel, _KERNEL, blocks, threads,
                   (queries, device_arrays[0], targets, device_arrays[1], device_arrays[2],
                    device_arrays[3], device_arrays[4], device_arrays[5], boundary, device_arrays[6],
                    dirs, runs, out, np.int32(count), matrix, np.int32(scheme.matrix.shape[0]),
                    np.int32(scheme.gap_open), np.int32(scheme.gap_extend), np.int32(mode_code)),
                   0, f"{count} pairs, longest {int(m[0])} x {int(n[0])}", sync=events is None)
    if events:
        events[1].record()
        kernels.synchronize(f"aligning {count} pairs")
        profile["kernel_seconds"] = profile.get("kernel_seconds", 0.0) + \
            cupy.cuda.get_elapsed_time(*events) / 1000
        profile["launches"] = profile.get("launches", 0) + 1
    return decode(out.get(), runs.get(), run_offsets, mode_code)


def decode(out: np.ndarray, runs: np.ndarray, run_offsets: np.ndarray, mode_code: int) -> list[PairAlignment]:
    """:class:`PairAlignment` of each pair from the kernel's ``out`` rows and run codes.

    ``out[k]`` is ``(score, qs, qe, ts, te, number of runs)``; pair ``k``'s runs
    (``length << 2 | op``, end to start) start at ``runs[run_offsets[k]]``.
    """
    counts = out[:, 5].astype(np.int64)
    ends = np.cumsum(counts)
    total = int(ends[-1]) if len(ends) else 0
    # Each pair's runs in forward order (the kernel wrote them end to start).
    within = np.arange(total) - np.repeat(ends - counts, counts)
    kept = runs[np.repeat(run_offsets + counts - 1, counts) - within]
    # One (length, op) tuple per distinct code, shared by every run that has it.
    table = {v: (v >> 2, gotoh.OP_LETTERS[v & 3]) for v in np.unique(kept).tolist()}
    runs_list = list(map(table.__getitem__, kept.tolist()))
    results = []
    last = 0
    local = mode_code == gotoh.LOCAL
    for score, q_start, q_end, t_start, t_end, n_runs in out.tolist():
        first, last = last, last + n_runs
        if local and score <= 0:
            results.append(NO_PAIR_ALIGNMENT)
        else:
            results.append(PairAlignment(score, q_start, q_end, t_start, t_end, Cigar(tuple(runs_list[first:last]))))
    return results
