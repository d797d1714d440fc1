"""Nussinov folding on one GPU: a blocked max-plus fill and the traceback on the device (``fold/fold.cu``).

Same answer as :mod:`gpualign_plugin.fold.cpu` (the recurrence and traceback rule of
docs/ALGORITHMS.md, "RNA folding"); docs/GPU.md has the design and the measurements.

**Fill.** In half-open form ``W(i, j) = N(i, j - 1)`` the recurrence is a max-plus closure
over the upper triangle of a ``(n + 1) x (n + 1)`` matrix, cut into :data:`TILE` x
:data:`TILE` tiles. The tiles of one tile diagonal are independent: one launch per tile
diagonal, one block per tile, the tiles of every sequence of the batch in the same launch
(so many short sequences fill the GPU together). A tile first takes the max-plus products
of the finished tiles to its left and below (shared memory, 16-bit pairs, Hopper's DPX
``__viaddmax_s16x2``), then the split points inside its own row and column tiles and the
pair term, cell anti-diagonal by anti-diagonal.

**Traceback** on the device, one block per sequence: the host gets each base's partner.

**Memory.** ``4 TILE^2 D (D + 1) / 2`` bytes of tiles per sequence (``D = ceil((n + 1) / TILE)``;
the tiles are kept row-major and transposed: 1.36 GB for n = 26,000), plus ``24 (n + 1)`` bytes
of partner and stack. Sequences are folded
in groups that fit ``memory_budget`` (default: half the free device memory).
"""

from __future__ import annotations

import numpy as np

from gpualign_plugin.errors import InputError
from gpualign_plugin.fold import cpu
from gpualign_plugin.runtime import kernels
from gpualign_plugin.runtime.kernels import GpuMemoryError

_SOURCE = "fold/fold.cu"
TILE = 64
THREADS = 256
MAX_LENGTH = 65_000
"""Longest sequence: the most pairs (half the padded length) must fit 16 bits."""


def sequence_bytes(length: int) -> int:
    """Device bytes of one sequence of ``length`` nucleotides: tiles, codes, partners and stack."""
    side = (length + 1 + TILE - 1) // TILE
    return 4 * TILE * TILE * side * (side + 1) // 2 + side * TILE + 24 * (length + 1) + 64


def fold_many(sequences, min_loop: int, device: int = 0, memory_budget: int | None = None,
              progress=None) -> list[tuple[np.ndarray, int]]:
    """Fold every sequence on the GPU.

    Parameters
    ----------
    sequences : sequence of numpy.ndarray
        ``uint8`` RNA codes (A 0, C 1, G 2, U 3, 4 pairs with nothing), each 1 to :data:`MAX_LENGTH` long.
    min_loop : int
        Fewest unpaired bases a pair must enclose (>= 0).
    device : int
        CUDA device ordinal.
    memory_budget : int, optional
        Device bytes one group of sequences may take (default: half the free memory).
    progress : callable, optional
        Called with split-point updates as tile diagonals finish (:func:`diagonal_updates`;
        ``(n - 1) n (n + 1) / 6`` a sequence in all).

    Returns
    -------
    list of (numpy.ndarray, int)
        Per sequence, its pairs (``(k, 2)`` ``int64``, ordered by ``i``) and their number
        (the maximum), identical to the CPU engine's.

    Raises
    ------
    InputError
        A sequence longer than :data:`MAX_LENGTH`.
    GpuMemoryError
        One sequence does not fit ``memory_budget``.
    """
    import cupy

    sequences = [np.asarray(s, dtype=np.uint8) for s in sequences]
    for s in sequences:
        if len(s) > MAX_LENGTH:
            raise InputError(f"the GPU fold takes sequences of up to {MAX_LENGTH:,} nt "
                             f"(one is {len(s):,} nt)")
    results: list = [None] * len(sequences)
    with cupy.cuda.Device(device):
        budget = memory_budget if memory_budget is not None else kernels.free_bytes() // 2
        need = [sequence_bytes(len(s)) for s in sequences]
        if need and max(need) > budget:
            raise GpuMemoryError(f"folding {len(sequences[int(np.argmax(need))]):,} nt needs "
                                 f"{max(need) / 2**20:.0f} MiB of GPU memory; the budget is "
                                 f"{budget / 2**20:.0f} MiB")
        group: list[int] = []
        used = 0
        for k in range(len(sequences) + 1):
            if k == len(sequences) or (group and used + need[k] > budget):
                for index, result in zip(group, _fold_group([sequences[x] for x in group], min_loop,
                                                             device, progress)):
                    results[index] = result
                group, used = [], 0
            if k < len(sequences):
                group.append(k)
                used += need[k]
    return results


def work_items(sides: np.ndarray) -> tuple[np.ndarray, list[int]]:
    """The tiles ``(sequence, I)`` of every tile diagonal ``d``, in launch order.

    ``sides[s]`` is the tile count on a side of sequence ``s``; diagonal ``d`` holds tile
    ``(I, I + d)`` for ``I < sides[s] - d`` of every sequence with ``sides[s] > d``. Returns
    the ``(count, 2)`` ``int32`` items and ``starts`` (diagonal ``d`` is
    ``items[starts[d]:starts[d + 1]]``).
    """
    sides = np.asarray(sides, dtype=np.int64)
    # Every (sequence, d) with d < sides[sequence], ordered by d, then sequence.
    sequence = np.repeat(np.arange(len(sides)), sides)
    diagonal = np.arange(len(sequence)) - np.repeat(np.cumsum(sides) - sides, sides)
    order = np.lexsort((sequence, diagonal))
    sequence, diagonal = sequence[order], diagonal[order]
    counts = sides[sequence] - diagonal
    rows = np.arange(int(counts.sum())) - np.repeat(np.cumsum(counts) - counts, counts)
    items = np.stack([np.repeat(sequence, counts), rows], axis=1).astype(np.int32)
    per_diagonal = np.bincount(diagonal, weights=counts, minlength=int(sides.max()) if len(sides) else 0)
    return items, [0] + np.cumsum(per_diagonal).astype(np.int64).tolist()


def diagonal_updates(lengths: np.ndarray, d: int) -> int:
    """Split-point updates of tile diagonal ``d`` of sequences of ``lengths`` nucleotides.

    Cell ``W(i, j) = N(i, j - 1)`` (``0 <= i < j <= n``) tries ``j - i - 1`` split points;
    tile ``(I, J)`` holds rows ``I T..I T + T - 1`` and columns ``J T..J T + T - 1``
    (``T`` = :data:`TILE`), cut at ``n``. With ``s = ceil((n + 1) / T)`` tiles a side and
    ``L = n + 1 - (s - 1) T`` columns in the last tile column: diagonal 0 has ``s - 1`` full
    tiles of ``C(T, 3)`` updates and one of ``C(L, 3)``; diagonal ``d >= 1`` has ``s - 1 - d``
    full tiles of ``T^2 (d T - 1)`` and one cut tile of ``T L (d T - 1) + T L (L - T) / 2``.
    Over all diagonals a sequence adds up to ``(n - 1) n (n + 1) / 6``
    (:func:`gpualign_plugin.fold.api.fold_cells`).
    """
    n = np.asarray(lengths, dtype=np.int64)
    sides = (n + TILE) // TILE
    last = n + 1 - (sides - 1) * TILE
    if d == 0:
        updates = (sides - 1) * (TILE * (TILE - 1) * (TILE - 2) // 6) + last * (last - 1) * (last - 2) // 6
    else:
        updates = np.where(sides > d, (sides - 1 - d) * TILE * TILE * (d * TILE - 1)
                           + TILE * last * (d * TILE - 1) + TILE * last * (last - TILE) // 2, 0)
    return int(updates.sum())


def _fold_group(sequences, min_loop: int, device: int, progress=None) -> list[tuple[np.ndarray, int]]:
    import cupy

    if not sequences:
        return []
    fill = kernels.get_kernel(device, _SOURCE, "fold_diagonal")
    trace = kernels.get_kernel(device, _SOURCE, "fold_traceback")
    lengths = np.array([len(s) for s in sequences], dtype=np.int64)
    sides = (lengths + TILE) // TILE  # ceil((n + 1) / TILE)
    tile_counts = sides * (sides + 1) // 2 * TILE * TILE
    tile_base = np.concatenate(([0], np.cumsum(tile_counts)[:-1])).astype(np.int64)
    code_base = np.concatenate(([0], np.cumsum(sides * TILE)[:-1])).astype(np.int64)
    codes = np.full(int((sides * TILE).sum()), cpu.UNPAIRED_CODE, dtype=np.uint8)
    for s, base in zip(sequences, code_base):
        codes[base:base + len(s)] = s
    items, starts = work_items(sides)
    item_array = cupy.asarray(items)
    tiles = cupy.empty(int(tile_counts.sum()), dtype=cupy.int16)
    tiles_t = cupy.empty_like(tiles)
    d_tile_base, d_sides, d_codes, d_code_base = (cupy.asarray(x) for x in (
        tile_base, sides.astype(np.int32), codes, code_base))
    # With progress, an event after each diagonal's launch; finished diagonals are reported
    # between launches and, after the last, in order as they finish.
    pending: list = []

    def report(wait: bool) -> None:
        while pending and (wait or pending[0][0].done):
            event, d = pending.pop(0)
            event.synchronize()
            progress(diagonal_updates(lengths, d))

    for d in range(len(starts) - 1):
        count = starts[d + 1] - starts[d]
        kernels.launch(fill, "fold_diagonal", count, THREADS,
                       (tiles, tiles_t, d_tile_base, d_sides, d_codes, d_code_base,
                        item_array[starts[d]:], np.int32(d), np.int32(min_loop)),
                       0, f"tile diagonal {d} of {len(sequences)} sequence(s), longest {int(lengths.max())} nt",
                       sync=False)
        if progress is not None:
            pending.append((cupy.cuda.Event(disable_timing=True), d))
            pending[-1][0].record()
            report(wait=False)
    if progress is not None:
        report(wait=True)
    partner_base = np.concatenate(([0], np.cumsum(lengths)[:-1])).astype(np.int64)
    partner = cupy.empty(int(lengths.sum()), dtype=cupy.int32)
    stack = cupy.empty(2 * int(lengths.sum() + len(sequences)) * 2, dtype=cupy.int32)
    scores = cupy.empty(len(sequences), dtype=cupy.int32)
    kernels.launch(trace, "fold_traceback", len(sequences), THREADS,
                   (tiles, d_tile_base, d_sides, d_codes, d_code_base, cupy.asarray(lengths.astype(np.int32)),
                    cupy.asarray(partner_base), partner, stack, scores, np.int32(min_loop)),
                   0, f"traceback of {len(sequences)} sequence(s)")
    partner_host = partner.get()
    score_host = scores.get()
    results = []
    for s, base in enumerate(partner_base):
        part = partner_host[base:base + lengths[s]].astype(np.int64)
        first = np.flatnonzero(part > np.arange(lengths[s]))
        results.append((np.stack([first, part[first]], axis=1), int(score_host[s])))
    return results
