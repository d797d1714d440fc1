"""The database's lane layout and the lane score types of the search score pass.

Shared by the CPU kernels (:mod:`gpualign_plugin.search.cpu`) and the GPU engine
(:mod:`gpualign_plugin.search.gpu`); plain NumPy, so that a GPU search does not import the
CPU kernels' Numba on its way to the device (docs/GPU.md, "Start-up").
"""

from __future__ import annotations

import numpy as np

LANES = 64
"""Targets scored together: the lane loop becomes 2 (int16) or 4 (int32) AVX-512 vector
operations per cell, so each row's scalar overhead spreads over more cells. Measured per
CPU-second on the 2-core AMD EPYC dev machine (int16 pass, mmseqs example proteins):
16 lanes 2.6, 32 lanes 3.8, 64 lanes 4.45, 128 lanes 4.6 GCUPS (int32 worse at 128)."""

PAD_SCORE = -(1 << 20)
"""Substitution score of a padding residue in 32-bit lanes: far below any real score."""

SATURATED16 = 32767
"""Largest int16: a 16-bit lane whose best score reaches it is scored again in 32 bits."""

LOW16 = -32768
"""Minus infinity and padding score of 16-bit lanes (saturating arithmetic keeps it there)."""


def fits_int16(matrix: np.ndarray, gap_open: int, gap_extend: int) -> bool:
    """Whether the 16-bit pass applies: substitution scores and gap costs far inside int16."""
    return int(np.abs(matrix).max()) <= 1000 and gap_open + gap_extend <= 1000


def extend_matrix(matrix: np.ndarray, dtype=np.int32) -> np.ndarray:
    """The substitution matrix with one more column (the pad code) in lane type ``dtype``.

    The pad column scores :data:`PAD_SCORE` for int32 and :data:`LOW16` for int16;
    an int16 matrix of a scheme outside :func:`fits_int16` is not meaningful (and
    not used).
    """
    size = matrix.shape[0]
    pad = LOW16 if dtype == np.int16 else PAD_SCORE
    out = np.full((size, size + 1), pad, dtype=dtype)
    out[:, :size] = np.clip(matrix, LOW16, SATURATED16) if dtype == np.int16 else matrix
    return np.ascontiguousarray(out)
