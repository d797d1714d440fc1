"""Low-complexity stretches of DNA (DUST scores), on which local placement bases no placement.

An exact local alignment of a poly-A tail, or of a microsatellite, is "significant" by the
random-sequence statistics (a 33-base poly-A match scores an E-value near 1e-12 against a
30 kbp genome) although it says nothing about where the contig belongs: such alignments
stack on the reference's one poly-A tract, each with MAPQ 60. BLAST (``-dust yes``) and
minimap2 (sdust) do not seed in such stretches; placement (docs/ALGORITHMS.md, "Local
placement") does not count their columns toward a piece's significance.

The score is DUST's (Morgulis et al. 2006): over the ``l`` overlapping triplets of an interval,
``sum_t c_t (c_t - 1) / 2 / (l - 1)``, with ``c_t`` the count of triplet ``t``. A base is
low-complexity where, for some start, the best-scoring interval from that start (at most
:data:`WINDOW` bases of A, C, G and T; the first maximum) scores more than :data:`LEVEL`
and holds it.
"""

from __future__ import annotations

import numpy as np
from numba import njit

WINDOW = 64
"""Longest interval scored, in bases (DUST's window)."""

LEVEL = 20
"""Score above which an interval is low-complexity (DUST's and sdust's default)."""


NEEDED_RUN = 43
"""Fewest copies of one base that a window of :data:`WINDOW` bases holds where it has a
low-complexity interval. With ``l`` triplets and ``c`` the largest triplet count, the score is
at most ``l (c - 1) / 2 / (l - 1)``; above :data:`LEVEL` that needs ``c >= 41``, which only a
homopolymer triplet reaches in 62 (two overlapping copies of any other triplet would have to
be equal shifted by one base), so 41 ``XXX`` triplets: 43 bases ``X``."""


def low_complexity_mask(codes: np.ndarray) -> np.ndarray:
    """``bool`` per base of the DNA ``codes`` (0-3 = A, C, G, T; others break triplets):
    whether it lies in a low-complexity interval (module docstring)."""
    codes = np.ascontiguousarray(codes, dtype=np.uint8)
    mask = np.zeros(len(codes), dtype=np.bool_)
    starts = _dense_starts(codes)
    if starts.any():  # else nothing can score above the level: no Numba at all
        _mark(codes, starts, WINDOW, LEVEL, mask)
    return mask


def _dense_starts(codes: np.ndarray) -> np.ndarray:
    """``bool`` per base: whether the :data:`WINDOW` bases from it hold :data:`NEEDED_RUN`
    copies of one base, the only starts whose intervals can score above the level."""
    n = len(codes)
    dense = np.zeros(n, dtype=np.bool_)
    if n < NEEDED_RUN:
        return dense
    ends = np.minimum(np.arange(n) + WINDOW, n)
    for base in range(4):
        seen = np.concatenate(([0], np.cumsum(codes == base, dtype=np.int32)))
        dense |= seen[ends] - seen[:-1] >= NEEDED_RUN
    return dense


@njit(cache=True, nogil=True)
def _mark(codes, starts, window, level, mask):  # pragma: no cover - compiled
    counts = np.zeros(64, dtype=np.int64)
    n = len(codes)
    for i in range(n - 2):
        if not starts[i]:
            continue
        counts[:] = 0
        pairs = 0
        best = 0.0
        best_end = -1
        for j in range(i, min(n - 2, i + window - 2)):
            if codes[j] > 3 or codes[j + 1] > 3 or codes[j + 2] > 3:
                break
            triplet = codes[j] * 16 + codes[j + 1] * 4 + codes[j + 2]
            pairs += counts[triplet]
            counts[triplet] += 1
            if j > i and pairs / (j - i) > best:
                best = pairs / (j - i)
                best_end = j
        if best > level:
            mask[i:best_end + 3] = True
