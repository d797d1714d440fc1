"""The three modes of pairwise alignment and the input check both engines start with
(:mod:`gpualign_plugin.pairwise.cpu` and :mod:`gpualign_plugin.pairwise.gpu`); plain NumPy."""

from __future__ import annotations

import numpy as np

from gpualign_plugin.scoring import ScoringScheme

MODES = ("local", "global", "semiglobal")
"""The alignment modes, by name."""


def checked_pair(query_codes, target_codes, scheme: ScoringScheme, mode: str) -> tuple[np.ndarray, np.ndarray]:
    """The two sequences as contiguous ``uint8`` code arrays, once ``mode`` and the score range are checked.

    Raises
    ------
    ValueError
        ``mode`` is not one of :data:`MODES`.
    InputError
        Scores of this pair could overflow 32 bits (:meth:`ScoringScheme.check_score_range`).
    """
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    query = np.ascontiguousarray(query_codes, dtype=np.uint8)
    target = np.ascontiguousarray(target_codes, dtype=np.uint8)
    scheme.check_score_range(len(query), len(target))
    return query, target
