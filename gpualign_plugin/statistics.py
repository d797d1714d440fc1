"""Karlin-Altschul statistics of local alignment scores: bit scores and E-values.

For a local alignment score ``S`` of a query of ``m`` residues searched against a
database of ``N`` residues in all,

    E = K * m * N * exp(-lambda * S)        bits = (lambda * S - ln K) / ln 2

with no effective-length (edge-effect) correction: ``m`` and ``N`` are the full
lengths. ``lambda`` and ``K`` come from NCBI BLAST's published tables
(``blast_stat.c``: the gapped parameters of BLOSUM45/50/62/80/90, PAM30/70/250 at
their supported gap costs, and BLASTN's reward/penalty tables) when the scoring
scheme is in them; otherwise they are estimated from this search's own score
distribution by maximum likelihood, as ssearch36 does: the scores of every
(query, target, strand) pair are modelled as Gumbel with ``P(S >= x) ~ K m n
exp(-lambda x)`` (``n`` the target length), and the fit uses only the sufficient
statistics "number of pairs and sum of ``m * n`` per score value", which add up
exactly across database chunks and shards.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from gpualign_plugin.errors import InputError
from gpualign_plugin.scoring import ScoringScheme

# (gap_open, gap_extend) -> (lambda, K, H), gapped values from NCBI blast_stat.c.
_PROTEIN_TABLES = {
    "BLOSUM45": {(13, 3): (0.207, 0.049, 0.14), (12, 3): (0.199, 0.039, 0.11),
                 (11, 3): (0.190, 0.031, 0.095), (10, 3): (0.179, 0.023, 0.075),
                 (16, 2): (0.210, 0.051, 0.14), (15, 2): (0.203, 0.041, 0.12),
                 (14, 2): (0.195, 0.032, 0.10), (13, 2): (0.185, 0.024, 0.084),
                 (12, 2): (0.171, 0.016, 0.061), (19, 1): (0.205, 0.040, 0.11),
                 (18, 1): (0.198, 0.032, 0.10), (17, 1): (0.189, 0.024, 0.079),
                 (16, 1): (0.176, 0.016, 0.063)},
    "BLOSUM50": {(13, 3): (0.212, 0.063, 0.19), (12, 3): (0.206, 0.055, 0.17),
                 (11, 3): (0.197, 0.042, 0.14), (10, 3): (0.186, 0.031, 0.11),
                 (9, 3): (0.172, 0.022, 0.082), (16, 2): (0.215, 0.066, 0.20),
                 (15, 2): (0.210, 0.058, 0.17), (14, 2): (0.202, 0.045, 0.14),
                 (13, 2): (0.193, 0.035, 0.12), (12, 2): (0.181, 0.025, 0.095),
                 (19, 1): (0.212, 0.057, 0.18), (18, 1): (0.207, 0.050, 0.15),
                 (17, 1): (0.198, 0.037, 0.12), (16, 1): (0.186, 0.025, 0.10),
                 (15, 1): (0.171, 0.015, 0.063)},
    "BLOSUM62": {(11, 2): (0.297, 0.082, 0.27), (10, 2): (0.291, 0.075, 0.23),
                 (9, 2): (0.279, 0.058, 0.19), (8, 2): (0.264, 0.045, 0.15),
                 (7, 2): (0.239, 0.027, 0.10), (6, 2): (0.201, 0.012, 0.061),
                 (13, 1): (0.292, 0.071, 0.23), (12, 1): (0.283, 0.059, 0.19),
                 (11, 1): (0.267, 0.041, 0.14), (10, 1): (0.243, 0.024, 0.10),
                 (9, 1): (0.206, 0.010, 0.052)},
    "BLOSUM80": {(25, 2): (0.342, 0.17, 0.66), (13, 2): (0.336, 0.15, 0.57),
                 (9, 2): (0.319, 0.11, 0.42), (8, 2): (0.308, 0.090, 0.35),
                 (7, 2): (0.293, 0.070, 0.27), (6, 2): (0.268, 0.045, 0.19),
                 (11, 1): (0.314, 0.095, 0.35), (10, 1): (0.299, 0.071, 0.27),
                 (9, 1): (0.279, 0.048, 0.20)},
    "BLOSUM90": {(9, 2): (0.310, 0.12, 0.46), (8, 2): (0.300, 0.099, 0.39),
                 (7, 2): (0.283, 0.072, 0.30), (6, 2): (0.259, 0.048, 0.22),
                 (11, 1): (0.302, 0.093, 0.39), (10, 1): (0.290, 0.075, 0.28),
                 (9, 1): (0.265, 0.044, 0.20)},
    "PAM30": {(7, 2): (0.305, 0.15, 0.87), (6, 2): (0.287, 0.11, 0.68),
              (5, 2): (0.264, 0.079, 0.45), (10, 1): (0.309, 0.15, 0.88),
              (9, 1): (0.294, 0.11, 0.61), (8, 1): (0.270, 0.072, 0.40)},
    "PAM70": {(8, 2): (0.301, 0.12, 0.54), (7, 2): (0.286, 0.093, 0.43),
              (6, 2): (0.264, 0.064, 0.29), (11, 1): (0.305, 0.12, 0.52),
              (10, 1): (0.291, 0.091, 0.41), (9, 1): (0.270, 0.060, 0.28)},
    "PAM250": {(15, 3): (0.205, 0.049, 0.13), (14, 3): (0.200, 0.043, 0.12),
               (13, 3): (0.194, 0.036, 0.10), (12, 3): (0.186, 0.029, 0.085),
               (11, 3): (0.174, 0.020, 0.070), (17, 2): (0.204, 0.047, 0.12),
               (16, 2): (0.198, 0.038, 0.11), (15, 2): (0.191, 0.031, 0.087),
               (14, 2): (0.182, 0.024, 0.073), (13, 2): (0.171, 0.017, 0.059),
               (21, 1): (0.205, 0.045, 0.11), (20, 1): (0.199, 0.037, 0.10),
               (19, 1): (0.192, 0.029, 0.083), (18, 1): (0.183, 0.021, 0.070),
               (17, 1): (0.171, 0.014, 0.052)},
}

# (match, mismatch) -> {(gap_open, gap_extend): (lambda, K, H)}, BLASTN tables of blast_stat.c
# (rows with gap costs 0/0, BLAST's greedy-extension defaults, left out: they are not affine).
_DNA_TABLES = {
    (1, -4): {(1, 2): (1.36, 0.67, 1.2), (0, 2): (1.26, 0.43, 0.90),
              (2, 1): (1.35, 0.61, 1.1), (1, 1): (1.22, 0.35, 0.72)},
    (2, -7): {(2, 4): (0.68, 0.67, 1.2), (0, 4): (0.63, 0.43, 0.90),
              (4, 2): (0.675, 0.62, 1.1), (2, 2): (0.61, 0.35, 0.72)},
    (1, -3): {(2, 2): (1.37, 0.70, 1.2), (1, 2): (1.35, 0.64, 1.1),
              (0, 2): (1.25, 0.42, 0.83), (2, 1): (1.34, 0.60, 1.1),
              (1, 1): (1.21, 0.34, 0.71)},
    (2, -5): {(2, 4): (0.67, 0.59, 1.1), (0, 4): (0.62, 0.39, 0.78),
              (4, 2): (0.67, 0.61, 1.0), (2, 2): (0.56, 0.32, 0.59)},
    (1, -2): {(2, 2): (1.33, 0.62, 1.1), (1, 2): (1.30, 0.52, 0.93),
              (0, 2): (1.19, 0.34, 0.66), (3, 1): (1.32, 0.57, 1.0),
              (2, 1): (1.29, 0.49, 0.92), (1, 1): (1.14, 0.26, 0.52)},
    (2, -3): {(4, 4): (0.63, 0.42, 0.84), (2, 4): (0.615, 0.37, 0.72),
              (0, 4): (0.55, 0.21, 0.46), (3, 3): (0.615, 0.37, 0.68),
              (6, 2): (0.63, 0.42, 0.84), (5, 2): (0.625, 0.41, 0.78),
              (4, 2): (0.61, 0.35, 0.68), (2, 2): (0.515, 0.14, 0.33)},
    (4, -5): {(6, 5): (0.28, 0.21, 0.47), (5, 5): (0.27, 0.17, 0.39),
              (4, 5): (0.25, 0.10, 0.31), (3, 5): (0.23, 0.065, 0.25)},
    (1, -1): {(3, 2): (1.09, 0.31, 0.55), (2, 2): (1.07, 0.27, 0.49),
              (1, 2): (1.02, 0.21, 0.36), (0, 2): (0.80, 0.064, 0.17),
              (4, 1): (1.08, 0.28, 0.54), (3, 1): (1.06, 0.25, 0.46),
              (2, 1): (0.99, 0.17, 0.30)},
    (5, -4): {(10, 6): (0.163, 0.068, 0.16), (8, 6): (0.146, 0.039, 0.11)},
}

MIN_FIT_SCORES = 100
"""Fewest positive pair scores the maximum-likelihood fit accepts."""


@dataclass(frozen=True)
class KarlinAltschul:
    """Karlin-Altschul parameters of a scoring system.

    Attributes
    ----------
    lam : float
        lambda, per raw score unit.
    k : float
        K.
    source : str
        Where they come from: ``'NCBI BLAST table (...)'`` or ``'maximum-likelihood
        fit to N scores of this search'``; written into output headers.
    even_scores : bool
        NCBI's tables for rewards of 2 (2/-3, 2/-5, 2/-7) hold only for even scores:
        an odd score is rounded down to the next even number first, as BLASTN does.
    """

    lam: float
    k: float
    source: str
    even_scores: bool = False

    def _effective(self, score: int) -> int:
        return score - (score % 2) if self.even_scores else score

    def bit_score(self, score: int) -> float:
        """Bit score of a raw score: ``(lambda * S - ln K) / ln 2``."""
        return (self.lam * self._effective(score) - math.log(self.k)) / math.log(2.0)

    def evalue(self, score: int, query_length: int, database_residues: int) -> float:
        """E-value ``K * m * N * exp(-lambda * S)`` (no effective-length correction)."""
        return (self.k * query_length * database_residues
                * math.exp(-self.lam * self._effective(score)))


def published_parameters(scheme: ScoringScheme) -> KarlinAltschul | None:
    """NCBI BLAST's gapped (lambda, K) for ``scheme``, or ``None`` if it is not tabulated.

    Protein schemes are looked up by matrix name and (open, extend); DNA schemes by
    (match, mismatch, open, extend) of :meth:`ScoringScheme.dna` (the ambiguity
    score does not enter: BLAST's tables assume ACGT).
    """
    gaps = (scheme.gap_open, scheme.gap_extend)
    if scheme.is_dna:
        match = int(scheme.matrix[0, 0])
        mismatch = int(scheme.matrix[0, 1])
        regular = scheme.matrix[:4, :4]
        if not (np.diag(regular) == match).all() or (regular[~np.eye(4, dtype=bool)] != mismatch).any():
            return None
        row = _DNA_TABLES.get((match, mismatch), {}).get(gaps)
        label = f"reward {match} penalty {mismatch}"
        even = match == 2
    else:
        row = _PROTEIN_TABLES.get(scheme.name, {}).get(gaps)
        label = scheme.name
        even = False
    if row is None:
        return None
    lam, k, _ = row
    return KarlinAltschul(lam, k, f"NCBI BLAST table ({label}, gap open {gaps[0]}, "
                                  f"extend {gaps[1]})", even)


class ScoreHistogram:
    """Sufficient statistics of the pair scores for the maximum-likelihood fit.

    For each score value: the number of (query, target, strand) pairs that scored
    it and the sum of ``m * n`` (query length times target length) over them.
    Histograms of database chunks or shards add up exactly (:meth:`add`).
    """

    def __init__(self):
        self.counts: dict[int, int] = {}
        self.search_space: dict[int, int] = {}

    def add_scores(self, scores: np.ndarray, query_length: int, target_lengths: np.ndarray) -> None:
        """Count one query's ``scores`` against targets of ``target_lengths`` (same shape)."""
        scores = np.asarray(scores, dtype=np.int64).ravel()
        sizes = np.asarray(target_lengths, dtype=np.int64).ravel() * int(query_length)
        values, inverse = np.unique(scores, return_inverse=True)
        counts = np.bincount(inverse, minlength=len(values))
        spaces = np.zeros(len(values), dtype=np.int64)
        np.add.at(spaces, inverse, sizes)
        for value, count, space in zip(values.tolist(), counts.tolist(), spaces.tolist()):
            self.add_value(value, count, space)

    def add_value(self, score: int, count: int, search_space: int) -> None:
        """Add ``count`` pairs of score ``score`` whose ``m * n`` sum to ``search_space``."""
        self.counts[score] = self.counts.get(score, 0) + int(count)
        self.search_space[score] = self.search_space.get(score, 0) + int(search_space)

    def add(self, other: "ScoreHistogram") -> None:
        """Add the counts of ``other`` (another chunk or shard of the same search)."""
        for score, count in other.counts.items():
            self.add_value(score, count, other.search_space[score])

    def items(self):
        """``(score, count, search_space)`` in increasing score."""
        return [(s, self.counts[s], self.search_space[s]) for s in sorted(self.counts)]


def fit_parameters(histogram: ScoreHistogram) -> KarlinAltschul:
    """Maximum-likelihood (lambda, K) of the Gumbel law ``P(S >= x) = 1 - exp(-K m n e^(-lambda x))``.

    Only positive scores enter (a score of 0 means no local alignment at all). With
    weights ``w_i = m_i n_i exp(-lambda x_i)``, the likelihood equations are
    ``1/lambda = mean(x) - sum(w x)/sum(w)`` (solved by bisection: the right side
    minus the left is monotone in lambda) and ``K = count / sum(w)``.

    True homologs would flatten the fitted tail, so the fit is repeated without the
    scores the previous fit expects fewer than one pair of the whole search to
    reach by chance (``K e^(-lambda x) sum(m n) < 1``), until that cutoff stops
    moving (ssearch36 likewise leaves its top scores out of the fit).

    Raises
    ------
    InputError
        Fewer than :data:`MIN_FIT_SCORES` positive scores (below the cutoff).
    """
    rows = [(s, c, a) for s, c, a in histogram.items() if s > 0]
    total_space = sum(a for _, _, a in rows)
    cutoff = None
    for _ in range(50):
        kept = [row for row in rows if cutoff is None or row[0] < cutoff]
        lam, k, count = _fit(kept)
        new_cutoff = math.floor(math.log(k * total_space) / lam) + 1
        if new_cutoff == cutoff:
            break
        cutoff = new_cutoff
    return KarlinAltschul(lam, k, f"maximum-likelihood fit to the {count} positive scores of this "
                                  f"search below {cutoff}")


def _fit(rows: list[tuple[int, int, int]]) -> tuple[float, float, int]:
    """(lambda, K, number of pairs) of the maximum-likelihood fit to ``(score, count, m*n sum)`` rows."""
    total = sum(c for _, c, _ in rows)
    if total < MIN_FIT_SCORES:
        raise InputError(f"no published Karlin-Altschul parameters for this scoring scheme and only "
                         f"{total} positive scores to estimate them from (need {MIN_FIT_SCORES}); "
                         "search a larger database or use a tabulated scheme")
    x = np.array([s for s, _, _ in rows], dtype=np.float64)
    count = np.array([c for _, c, _ in rows], dtype=np.float64)
    log_space = np.log(np.array([a for _, _, a in rows], dtype=np.float64))
    mean = float((count * x).sum() / total)

    def log_weights(lam: float) -> np.ndarray:
        return log_space - lam * x

    def excess(lam: float) -> float:
        lw = log_weights(lam)
        w = np.exp(lw - lw.max())
        return 1.0 / lam - mean + float((w * x).sum() / w.sum())

    low, high = 1e-6, 1.0
    while excess(high) > 0 and high < 1e3:
        high *= 2.0
    for _ in range(200):
        middle = 0.5 * (low + high)
        if excess(middle) > 0:
            low = middle
        else:
            high = middle
    lam = 0.5 * (low + high)
    lw = log_weights(lam)
    top = lw.max()
    log_sum = top + math.log(float(np.exp(lw - top).sum()))
    return lam, math.exp(math.log(total) - log_sum), total


MAX_MAPQ = 60
"""MAPQ of a unique placement; the SAM spec reserves 255 for "unavailable"."""


def primary_mapq(best: int, second: int | None) -> int:
    """MAPQ of a primary alignment from the best and second-best scores of its query.

    Parameters
    ----------
    best : int
        Score of the primary alignment.
    second : int or None
        Score of the best secondary alignment, ``None`` when the query has only one.

    Returns
    -------
    int
        ``0`` if ``second == best``; otherwise
        ``min(60, floor(60 * (best - second) / best))`` with ``second = 0`` when
        there is none. When ``best <= 0`` (possible in global mode) the formula has
        no meaning and the MAPQ is ``0``; a result below 0 cannot occur otherwise.
    """
    second = 0 if second is None else second
    if best <= 0 or second == best:
        return 0
    return min(MAX_MAPQ, (MAX_MAPQ * (best - second)) // best)
