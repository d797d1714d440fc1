"""Syntenic alignment (Huang & Chao, difference blocks) with its DP fill on one GPU.

The GPU replaces only the fill of :func:`~gpualign_plugin.syntenic.cpu_kernels.fill_rows`:
:class:`GpuSyntenicProblem` is :class:`~gpualign_plugin.syntenic.api.SyntenicProblem`
with ``forward`` and ``directions`` computed on the device, so the checkpoint driver
(:mod:`~gpualign_plugin.traceback.checkpoint`), the traceback walk, row 0 and the
regions stay the CPU's code and the result is the CPU engine's by construction.
:func:`sweep_score` is one full device sweep keeping one row (``S, I, H``) and one
column (``S, D, H``) of state: O(m + n) device memory.

Kernel (``syntenic/syntenic.cu``): a band of rows is cut into tiles of :data:`TILE_ROWS`
rows x 64 or 256 columns; one launch per anti-diagonal of tiles, one warp per
tile (lanes own rows and pass values down by shuffles), the state crossing tile
edges in global memory. Launches on one stream run in order, so no tile waits on
another inside a launch.

Memory. A band of ``rows x width`` holds ``12 (rows + width)`` bytes of edge state,
``12 width`` per saved row and, for ``directions``, ``rows * width`` direction bytes
(copied to the host for the walk); the driver's ``memory_budget`` bounds the last
two. :func:`~gpualign_plugin.runtime.kernels.check_memory` runs before each band.
"""

from __future__ import annotations

import numpy as np

from gpualign_plugin.runtime import kernels
from gpualign_plugin.scoring import ScoringScheme
from gpualign_plugin.syntenic.cpu import SyntenicProblem

TILE_ROWS = 32
"""Rows of a tile: one lane of a warp each (the kernel's block is one warp)."""
NARROW_TILE_COLS, WIDE_TILE_COLS = 64, 256
"""Columns of a tile. A warp sweeps ``TILE_ROWS + cols - 1`` anti-diagonals of its tile, and
one launch runs at most ``width / cols`` tiles: narrow tiles give more tiles per launch, wide
ones fewer launches and less skew overhead."""
NARROW_MIN_TILE_ROWS = 512
"""Bands of at least this many tile rows use narrow tiles: their launches can hold more tiles
than the GPU has room for. Thinner bands (the traceback's, whose height is the memory budget
divided by the width) hold at most one tile per tile row in a launch whatever the width, so
wide tiles cost nothing there and need four times fewer launches."""
_SOURCE = "syntenic/syntenic.cu"


class _Device:
    """Sequences and scores of one problem on one device, and the band sweep over them."""

    def __init__(self, query, target, matrix, scheme: ScoringScheme, block_penalty: int, device: int):
        import cupy

        self.cupy = cupy
        self.device = device
        self.alpha = int(matrix.shape[0])
        self.costs = (np.int32(scheme.gap_open + scheme.gap_extend), np.int32(scheme.gap_extend),
                      np.int32(block_penalty))
        with cupy.cuda.Device(device):
            kernels.check_memory(len(query) + len(target) + 4 * matrix.size + 4096,
                                 "the syntenic sequences")
            # One padding byte keeps empty sequences valid device pointers.
            self.query = cupy.asarray(np.append(query, np.uint8(0)))
            self.target = cupy.asarray(np.append(target, np.uint8(0)))
            self.matrix = cupy.asarray(np.ascontiguousarray(matrix, dtype=np.int32))
        self.pinned = None

    def _host_directions(self, dirs) -> np.ndarray:
        """``dirs`` copied into the reused page-locked host buffer (valid until the next call)."""
        size = dirs.size
        if self.pinned is None or self.pinned.size < size:
            self.pinned = kernels.pinned_bytes(max(size, 1))
        host = self.pinned[:size].reshape(dirs.shape)
        dirs.get(out=host)
        return host

    def sweep(self, r0: int, rows: int, top: np.ndarray, width: int, save_rows=(),
              directions: bool = False):
        """Compute rows ``r0+1..r0+rows`` over columns ``0..width-1`` from ``top`` (row ``r0``).

        Parameters
        ----------
        r0, rows : int
            The band: ``rows >= 1`` rows below row ``r0``.
        top : numpy.ndarray
            ``int32`` state ``(S, I, H)`` of row ``r0``, at least ``width`` columns.
        width : int
            Columns ``0..width-1`` (``>= 1``).
        save_rows : sequence of int
            Rows (in ``r0+1..r0+rows``) whose state is returned.
        directions : bool
            Also return the direction bytes, ``(rows, width)`` ``uint8``, in a host
            buffer that the next sweep with directions overwrites.

        Returns
        -------
        (numpy.ndarray, list of numpy.ndarray, numpy.ndarray or None)
            The state of row ``r0 + rows``, the states of ``save_rows`` (each ``(3, width)``
            ``int32``) and the direction bytes.
        """
        cp = self.cupy
        tile_rows = -(-rows // TILE_ROWS)
        cols = NARROW_TILE_COLS if tile_rows >= NARROW_MIN_TILE_ROWS else WIDE_TILE_COLS
        tile_cols = -(-width // cols)
        saves = len(save_rows)
        needed = (12 * (rows + width) + 8 * rows + 4 * tile_rows + 12 * saves * width
                  + (rows * width if directions else 0) + 4096)
        with cp.cuda.Device(self.device):
            kernels.check_memory(needed, f"a syntenic band of {rows} x {width}")
            row = cp.asarray(np.ascontiguousarray(top[:, :width], dtype=np.int32))
            column = cp.empty((3, rows), dtype=cp.int32)
            corner = cp.empty(tile_rows, dtype=cp.int32)
            slots = saved = None
            if saves:
                index = np.full(rows, -1, dtype=np.int32)
                index[np.asarray(save_rows, dtype=np.int64) - r0 - 1] = np.arange(saves, dtype=np.int32)
                slots = cp.asarray(index)
                saved = cp.empty((saves, 3, width), dtype=cp.int32)
            dirs = cp.empty((rows, width), dtype=cp.uint8) if directions else None
            name = f"syntenic_tile_diagonal<{cols},{'true' if directions else 'false'}>"
            kernel = kernels.get_kernel(self.device, _SOURCE, name)
            null = np.uint64(0)
            i32 = np.int32
            head = (self.query, self.target, self.matrix, i32(self.alpha), *self.costs, i32(r0),
                    i32(rows), i32(width))
            tail = (i32(tile_rows), i32(tile_cols), row[0], row[1], row[2], column[0], column[1],
                    column[2], corner, slots if slots is not None else null,
                    saved if saved is not None else null, dirs if dirs is not None else null)
            shared = 4 * self.alpha * self.alpha
            sizes = f"band of rows {r0 + 1}..{r0 + rows} x {width} columns"
            for diagonal in range(tile_rows + tile_cols - 1):
                first = max(0, diagonal - (tile_cols - 1))
                tiles = min(diagonal, tile_rows - 1) - first + 1
                kernels.launch(kernel, name, tiles, TILE_ROWS, head + (i32(diagonal),) + tail, shared,
                               sizes, sync=False)
            kernels.synchronize(f"computing the syntenic {sizes}")
            states = list(saved.get()) if saved is not None else []
            return row.get(), states, self._host_directions(dirs) if dirs is not None else None


class GpuSyntenicProblem(SyntenicProblem):
    """:class:`~gpualign_plugin.syntenic.api.SyntenicProblem` whose bands are computed on a GPU.

    ``initial_state`` (row 0), ``trace`` and the collected moves are the CPU
    class's; ``forward`` and ``directions`` return the same arrays as the CPU's,
    computed by ``syntenic/syntenic.cu``.
    """

    def __init__(self, query, target, matrix, scheme: ScoringScheme, block_penalty: int,
                 progress=None, device: int = 0):
        super().__init__(query, target, matrix, scheme, block_penalty, progress)
        self.gpu = _Device(query, target, matrix, scheme, block_penalty, device)

    def forward(self, r0: int, top: np.ndarray, width: int, save_rows) -> list:
        """States of the rows in ``save_rows``, computed from ``top`` (row ``r0``) on the GPU."""
        rows = save_rows[-1] - r0
        _, saved, _ = self.gpu.sweep(r0, rows, top, width, save_rows)
        self._count(rows * width)
        return saved

    def directions(self, r0: int, r1: int, top: np.ndarray, width: int) -> np.ndarray:
        """Direction bytes of rows ``r0+1..r1`` over columns ``0..width-1``, computed on the GPU.

        The array is valid until the next call (the driver traces each band before
        solving the next one).
        """
        last, _, flags = self.gpu.sweep(r0, r1 - r0, top, width, directions=True)
        self._keep_score(r1, width, last)
        self._count((r1 - r0) * width)
        return flags


def sweep_score(query, target, matrix, scheme: ScoringScheme, block_penalty: int, device: int = 0) -> int:
    """``S(m, n)`` from one device sweep over rows ``1..m`` (inputs as prepared by the CPU engine).

    ``query`` must be non-empty. Called by
    :func:`gpualign_plugin.syntenic.api.syntenic_score` with ``backend='gpu'``,
    which puts the longer sequence on the rows.
    """
    problem = GpuSyntenicProblem(query, target, matrix, scheme, block_penalty, device=device)
    width = len(target) + 1
    last, _, _ = problem.gpu.sweep(0, len(query), problem.initial_state(width), width)
    return int(last[0, width - 1])
