"""Low-complexity stretches of DNA (symmetric DUST), on which local placement bases no placement.

An exact local alignment of a poly-A tail, or of a microsatellite, is "significant" by the
random-sequence statistics (a 33-base poly-A match scores an E-value near 1e-12 against a
30 kbp genome) although it says nothing about where the contig belongs: such alignments
stack on the reference's one poly-A tract, each with MAPQ 60. BLAST (``-dust yes``,
dustmasker) and minimap2 (sdust) do not seed in such stretches; placement (docs/ALGORITHMS.md,
"Local placement") does not count their columns toward a piece's significance.

The masked bases are those of symmetric DUST (Morgulis, Gertz, Schaffer and Agarwala 2006, J.
Comput. Biol. 13:1028), the intervals NCBI's dustmasker reports at its defaults (window 64,
level 20). Words are the overlapping triplets of a run of A, C, G and T (any other letter ends
the run). An interval of ``l + 1`` triplets scores ``r / l``, ``r = sum_t c_t (c_t - 1) / 2`` over
the counts ``c_t`` of its triplets. Going along the run, at each triplet ``e`` every interval
ending at ``e`` that lies in the window (the last :data:`WINDOW` bases) is examined from the
shortest to the longest; it is *perfect* when ``10 r > LEVEL l`` (a score above ``LEVEL / 10``)
and it scores at least as much as every perfect interval already found that starts inside it.
The bases of every perfect interval are masked.

Two bounds skip intervals that cannot be perfect (the result is the same): none lies inside the
longest suffix of the window where no triplet occurs more than ``LEVEL / 5`` times (its score is
then at most ``LEVEL / 10``), and none reaches past that suffix when the whole window's ``r`` is
at most ``LEVEL / 10`` times the suffix's length.
"""

from __future__ import annotations

import numpy as np
from numba import njit

WINDOW = 64
"""Bases of the window in which intervals are examined (dustmasker's ``-window``)."""

LEVEL = 20
"""dustmasker's ``-level``: an interval is perfect above a score of ``LEVEL / 10``."""


def low_complexity_mask(codes: np.ndarray) -> np.ndarray:
    """``bool`` per base of the DNA ``codes`` (0-3 = A, C, G, T; others end a run of triplets):
    whether symmetric DUST masks it (module docstring)."""
    codes = np.ascontiguousarray(codes, dtype=np.uint8)
    mask = np.zeros(len(codes), dtype=np.bool_)
    if len(codes) >= 3:
        _mark(codes, WINDOW - 2, LEVEL, mask)
    return mask


@njit(cache=True, nogil=True)
def _mark(codes, window, level, mask):  # pragma: no cover - compiled
    n = len(codes)
    triplets = np.empty(window, dtype=np.int64)  # ring of the window's triplets, oldest first
    window_counts = np.zeros(64, dtype=np.int64)
    suffix_counts = np.zeros(64, dtype=np.int64)
    scan_counts = np.zeros(64, dtype=np.int64)
    # Perfect intervals still inside the window, by start descending: start, end (triplet
    # indexes along the run), r, l. At most one per (start, end) pair of the window.
    found = np.empty((window * window, 4), dtype=np.int64)
    n_found = 0
    run = 0      # bases of the current A/C/G/T run
    word = 0
    size = first = r_window = r_suffix = suffix = 0
    for i in range(n + 1):
        base = codes[i] if i < n else 4
        if base > 3:
            run = 0
            word = 0
            continue
        run += 1
        word = (word * 4 + base) % 64
        if run == 1:
            size = 0
            first = 0          # ring position of the oldest triplet
            r_window = 0
            r_suffix = 0
            suffix = 0         # triplets in the suffix
            window_counts[:] = 0
            suffix_counts[:] = 0
            n_found = 0
        if run < 3:
            continue
        index = run - 3        # this triplet's index along the run
        if size == window:     # the oldest triplet leaves the window
            old = triplets[first]
            first = (first + 1) % window
            size -= 1
            window_counts[old] -= 1
            r_window -= window_counts[old]
            if suffix > size:
                suffix -= 1
                suffix_counts[old] -= 1
                r_suffix -= suffix_counts[old]
            oldest = index - size
            while n_found > 0 and found[n_found - 1, 0] < oldest:
                n_found -= 1
        triplets[(first + size) % window] = word
        size += 1
        r_window += window_counts[word]
        window_counts[word] += 1
        r_suffix += suffix_counts[word]
        suffix_counts[word] += 1
        suffix += 1
        if suffix_counts[word] * 10 > 2 * level:
            while True:  # shorten the suffix past the earliest copy of this triplet in it
                gone = triplets[(first + size - suffix) % window]
                suffix_counts[gone] -= 1
                r_suffix -= suffix_counts[gone]
                suffix -= 1
                if gone == word:
                    break
        if r_window * 10 <= suffix * level:
            continue
        scan_counts[:] = suffix_counts
        r = r_suffix
        best_r = 0
        best_l = 0
        for k in range(size - suffix - 1, -1, -1):
            t = triplets[(first + k) % window]
            r += scan_counts[t]
            scan_counts[t] += 1
            length = size - 1 - k
            if r * 10 <= level * length:
                continue
            start = index - length
            j = 0
            while j < n_found and found[j, 0] >= start:
                if best_r == 0 or found[j, 2] * best_l > best_r * found[j, 3]:
                    best_r = found[j, 2]
                    best_l = found[j, 3]
                j += 1
            if best_r == 0 or r * best_l >= best_r * length:
                best_r = r
                best_l = length
                for m in range(n_found, j, -1):
                    found[m] = found[m - 1]
                found[j, 0] = start
                found[j, 1] = index
                found[j, 2] = r
                found[j, 3] = length
                n_found += 1
                run_start = i + 1 - run
                mask[run_start + start:run_start + index + 3] = True
