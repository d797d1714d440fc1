"""The DP fill of three-sequence alignment on one GPU: slabs of planes swept on sloped planes.

:class:`PlaneSweep` does on the GPU what :func:`gpualign_plugin.align3.cpu.sweep`
does on the CPU: advance a score plane ``i`` (shape ``(m+1, n+1)``) from plane
``first - 1`` to plane ``last``, optionally writing the direction byte of every cell of
planes ``first..last`` to ``dirs[i - first, j, k]``. Slab planning, checkpoints and the
traceback stay in :mod:`gpualign_plugin.align3.api`, so the GPU engine only replaces
the fill and the CPU's :func:`~gpualign_plugin.align3.cpu.trace_slab` walks the GPU's direction bytes.

Design (``align3/align3.cu``). Inside a slab all cells of a hyperplane
``(i - first) + j + k = q`` are independent (the seven moves go back one, two or three
hyperplanes), so one kernel launch computes one hyperplane, one thread per cell. The
scores of the last four hyperplanes live in a device ring of four slots, each indexed by
``(i - first, j)``; plane ``first - 1`` is read from an input plane and plane ``last``
written to an output plane. Each cell applies the written tie rule (first maximum in
the order of :data:`~gpualign_plugin.align3.api.MOVES`, only the moves that stay in
the cube, byte 7 at the origin), so the direction bytes equal the CPU's byte for byte.

Memory bound. A sweep holds the direction bytes it was asked for (``(last - first + 1)
(m + 1)(n + 1)`` bytes, the slab the host's memory budget allows), two score planes
(``8 (m + 1)(n + 1)`` bytes) and the ring (``16 h (m + 1)`` bytes for ``h`` planes). A
score-only sweep is cut into bands of at most :data:`RING_BYTES` of ring; a sweep with
direction bytes too, each band writing its own planes of ``dirs``.
"""

from __future__ import annotations

import numpy as np

from gpualign_plugin.runtime import kernels
from gpualign_plugin.scoring import ScoringScheme

_SOURCE = "align3/align3.cu"
THREADS = 256
"""Threads per block of a hyperplane launch."""
RING_BYTES = 1 << 28
"""Most bytes of the four-hyperplane ring: bounds the planes of one band to ``RING_BYTES / (16 (m + 1))``."""


def hyperplane_shape(q: int, height: int, m: int, n: int) -> tuple[int, int, int]:
    """Threads of the launch for hyperplane ``q`` of a band of ``height`` planes.

    Returns ``(ii_lo, rows, width)``: the band's rows ``ii_lo .. ii_lo + rows - 1`` (row
    ``ii`` is plane ``first + ii``) meet the hyperplane, and each row holds at most
    ``width`` of its cells (``j + k = q - ii``, ``0 <= j <= m``, ``0 <= k <= n``). The
    launch has ``rows * width`` threads; ``align3.cu`` maps thread ``t`` to row
    ``ii_lo + t // width`` and ``j = max(0, q - ii - n) + t % width``.
    """
    ii_lo = max(0, q - m - n)
    ii_hi = min(height - 1, q)
    return ii_lo, ii_hi - ii_lo + 1, min(m, n, q) + 1


def band_height(m: int) -> int:
    """Planes per band so that the ring (4 slots of ``(m + 1)`` int32 per plane) fits :data:`RING_BYTES`."""
    return max(1, RING_BYTES // (16 * (m + 1)))


def sweep_bytes(m: int, n: int, planes: int, dirs: bool) -> int:
    """GPU bytes of a sweep of ``planes`` planes: two score planes, the ring, the direction bytes."""
    plane = (m + 1) * (n + 1)
    band = min(planes, band_height(m))
    return 8 * plane + 16 * band * (m + 1) + (planes * plane if dirs else 0)


class PlaneSweep:
    """The slab sweep of one triple on one GPU; call it like the CPU engine's ``_sweep``.

    Parameters
    ----------
    codes : tuple of numpy.ndarray
        ``uint8`` codes of the three sequences ``a``, ``b``, ``c`` (all non-empty).
    scheme : ScoringScheme
        Substitution matrix.
    gap : int
        Linear gap cost per residue against a gap.
    device : int
        CUDA device ordinal (counted inside CUDA_VISIBLE_DEVICES).
    """

    def __init__(self, codes, scheme: ScoringScheme, gap: int, device: int = 0):
        import cupy

        self.cupy = cupy
        self.device = device
        self.l, self.m, self.n = (int(x.size) for x in codes)
        self.gap2 = np.int32(2 * gap)
        self.alpha = np.int32(scheme.matrix.shape[0])
        with cupy.cuda.Device(device):
            kernels.check_memory(sum(x.size for x in codes) + 4 * scheme.matrix.size,
                                 "the three sequences")
            self.d_codes = tuple(cupy.asarray(np.ascontiguousarray(x, dtype=np.uint8)) for x in codes)
            self.d_matrix = cupy.asarray(np.ascontiguousarray(scheme.matrix, dtype=np.int32))

    def _kernel(self, dirs: bool):
        name = f"align3_hyperplane<{'true' if dirs else 'false'}>"
        return name, kernels.get_kernel(self.device, _SOURCE, name)

    def __call__(self, plane: np.ndarray, first: int, last: int, dirs: np.ndarray | None = None,
                 progress=None) -> None:
        """Advance ``plane`` (int32, ``(m+1, n+1)``) from plane ``first - 1`` to plane ``last``.

        ``plane`` must hold plane ``first - 1`` on entry (ignored when ``first == 0``). With
        ``dirs`` (uint8, at least ``last - first + 1`` planes of ``(m+1, n+1)``) the move of
        cell ``(i, j, k)`` goes to ``dirs[i - first, j, k]``. ``progress`` is called with the
        cells of each band as it is done.

        Raises
        ------
        GpuMemoryError
            The planes, ring and direction bytes do not fit in free GPU memory.
        GpuKernelError
            A launch failed.
        """
        cp = self.cupy
        m, n = self.m, self.n
        planes = last - first + 1
        keep = dirs is not None
        with cp.cuda.Device(self.device):
            kernels.check_memory(sweep_bytes(m, n, planes, keep),
                                 f"planes {first}..{last} of a {self.l} x {m} x {n} alignment")
            height = min(planes, band_height(m))
            plane_in = cp.asarray(plane) if first > 0 else cp.zeros((m + 1, n + 1), dtype=cp.int32)
            plane_out = cp.empty_like(plane_in)
            ring = cp.empty(4 * height * (m + 1), dtype=cp.int32)
            d_dirs = cp.empty((planes, m + 1, n + 1), dtype=cp.uint8) if keep else None
            name, kernel = self._kernel(keep)
            for band in range(first, last + 1, height):
                rows = min(height, last + 1 - band)
                self._band(kernel, name, band, rows, plane_in, plane_out, ring,
                           d_dirs[band - first:] if keep else None)
                plane_in, plane_out = plane_out, plane_in
                if progress is not None:
                    kernels.synchronize(f"sweeping planes {band}..{band + rows - 1}")
                    progress(rows * plane.size)
            kernels.synchronize(f"sweeping planes {first}..{last}")
            plane_in.get(out=plane)
            if keep:
                d_dirs.get(out=dirs[:planes])

    def _band(self, kernel, name: str, first: int, height: int, plane_in, plane_out, ring, dirs) -> None:
        """Launch the hyperplanes of planes ``first..first+height-1`` (no synchronisation)."""
        m, n = self.m, self.n
        i32 = np.int32
        a, b, c = self.d_codes
        head = (a, b, c, self.d_matrix, self.alpha, i32(m), i32(n), i32(first), i32(height),
                self.gap2, plane_in, plane_out, ring, dirs if dirs is not None else np.uint64(0))
        for q in range(height + m + n):
            ii_lo, rows, width = hyperplane_shape(q, height, m, n)
            threads = rows * width
            kernels.launch(kernel, name, -(-threads // THREADS), THREADS,
                           head + (i32(q), i32(ii_lo), i32(rows), i32(width)), 0,
                           f"hyperplane {q} of planes {first}..{first + height - 1} "
                           f"({self.l} x {m} x {n})", sync=False)
