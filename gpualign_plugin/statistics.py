"""Karlin-Altschul statistics of local alignment scores: bit scores and E-values, as BLAST computes them.

For a local alignment score ``S`` the bit score is ``(lambda S - ln K) / ln 2``.
The E-value (expected number of chance alignments scoring ``S`` or more) follows
NCBI BLAST+ (``blast_stat.c``, ``blast_setup.c``, ``blast_hits.c``):

* **Length adjustment** (all schemes): an alignment cannot start within about
  ``ell`` residues of a sequence end, so the query of ``m`` residues and a
  database of ``N`` residues in ``R`` records count as ``m - ell`` and
  ``N - R ell``. ``ell`` is the largest integer not above the fixed point of
  ``ell = beta + (alpha / lambda) (ln K + ln((m - ell)(N - R ell)))`` with
  ``K (m - ell)(N - R ell) >= max(m, N)`` (:func:`length_adjustment`, the
  iteration of ``BLAST_ComputeLengthAdjustment``). Then
  ``E = K (m - ell) max(1, N - R ell) exp(-lambda S)`` (``BLAST_KarlinStoE_simple``).
* **Finite-size correction** (gapped protein schemes of BLAST's tables, as
  ``blastp`` does by default): Spouge's formula (``BLAST_SpougeStoE``) replaces
  the length adjustment. With the subject of ``n`` residues holding the
  alignment, ``E = area(S, m, n) K exp(-lambda S) N / n``, where ``area`` is the
  expected product of the usable lengths, each length shortened by a normally
  distributed amount of mean ``a S + b`` and variance ``alpha_v S + beta_v``
  (see :meth:`SpougeParameters.area`).
* NCBI's tables for rewards of 2 and for 3/-4 hold only for even scores: an odd
  score is rounded down to the next even number for the E-value, as BLASTN does.

Where the parameters come from (:func:`parameters_for`):

1. NCBI BLAST's tables (``blast_stat.c``; Altschul et al. 2001, Nucleic Acids Res
   29:351, and John Spouge's finite-size tables): gapped lambda, K, H, alpha,
   beta for BLOSUM45/50/62/80/90 and PAM30/70/250 at their supported gap costs
   (with Spouge's ``C``, ``alpha_v`` and ``sigma`` columns), and BLASTN's
   reward/penalty tables. A reward/penalty pair with a common divisor ``d`` uses
   the table of the reduced pair with gap costs times ``d`` and lambda and alpha
   divided by ``d`` (BLAST's rule). DNA gap costs at or above the table's
   "infinite" threshold use the ungapped values (BLAST's rule too).
2. Otherwise, with a score histogram of a database search: the maximum-likelihood
   fit of :func:`fit_parameters` (ssearch36's approach) for lambda and K; alpha is
   ``lambda_u / H_u`` of the exact ungapped values and beta 0 (BLAST's own
   fallback for schemes without table entries).
3. Otherwise: the exact ungapped Karlin-Altschul values of the scheme
   (:func:`ungapped_parameters`: lambda solves ``sum p_ij exp(lambda s_ij) = 1``
   over background letter frequencies -- Robinson & Robinson's for proteins, as
   BLAST uses, 1/4 for each base of DNA; H and K by Karlin & Altschul's formulas).
   Gaps only add high-scoring chance alignments, so for a gapped scheme these
   E-values are too small; the ``source`` says so.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from gpualign_plugin.errors import InputError
from gpualign_plugin.scoring import ScoringScheme, ncbi_matrix_name

# NCBI BLAST+ blast_stat.c, protein tables. Key (gap_open, gap_extend), or None for the
# ungapped row; value (lambda, K, H, alpha, beta, C, alpha_v, sigma): alpha and beta of the
# length adjustment (mean alignment length = alpha S + beta), then Spouge's finite-size
# correction constants (prefactor C, the slope alpha_v of the variance of the length and the
# slope sigma of the covariance of the two lengths).
_PROTEIN_TABLES = {
    "BLOSUM45": {
        None: (0.2291, 0.0924, 0.2514, 0.9113, -5.7, 0.641318, 9.61106, 9.61106),
        (13, 3): (0.207, 0.049, 0.14, 1.5, -22.0, 0.671128, 35.8559, 35.9639),
        (12, 3): (0.199, 0.039, 0.11, 1.8, -34.0, 0.69153, 45.6936, 45.8517),
        (11, 3): (0.19, 0.031, 0.095, 2.0, -38.0, 0.691181, 62.8741, 63.1037),
        (10, 3): (0.179, 0.023, 0.075, 2.4, -51.0, 0.710529, 88.2868, 88.6391),
        (16, 2): (0.21, 0.051, 0.14, 1.5, -24.0, 0.66668, 36.2798, 36.4524),
        (15, 2): (0.203, 0.041, 0.12, 1.7, -31.0, 0.673871, 44.8257, 45.0604),
        (14, 2): (0.195, 0.032, 0.1, 1.9, -36.0, 0.685753, 60.7362, 61.1023),
        (13, 2): (0.185, 0.024, 0.084, 2.2, -45.0, 0.69848, 85.1481, 85.6894),
        (12, 2): (0.171, 0.016, 0.061, 2.8, -65.0, 0.713429, 127.758, 128.582),
        (19, 1): (0.205, 0.04, 0.11, 1.9, -43.0, 0.672302, 53.0714, 53.8282),
        (18, 1): (0.198, 0.032, 0.1, 2.0, -43.0, 0.68258, 72.3424, 73.4039),
        (17, 1): (0.189, 0.024, 0.079, 2.4, -57.0, 0.695035, 103.055, 104.721),
        (16, 1): (0.176, 0.016, 0.063, 2.8, -67.0, 0.712966, 170.1, 173.003),
    },
    "BLOSUM50": {
        None: (0.2318, 0.112, 0.3362, 0.6895, -4.0, 0.609639, 5.38831, 5.38831),
        (13, 3): (0.212, 0.063, 0.19, 1.1, -16.0, 0.639287, 18.1138, 18.2028),
        (12, 3): (0.206, 0.055, 0.17, 1.2, -18.0, 0.644715, 22.6546, 22.7777),
        (11, 3): (0.197, 0.042, 0.14, 1.4, -25.0, 0.656327, 29.8611, 30.0457),
        (10, 3): (0.186, 0.031, 0.11, 1.7, -34.0, 0.67115, 42.3938, 42.674),
        (9, 3): (0.172, 0.022, 0.082, 2.1, -48.0, 0.694326, 66.0696, 66.5164),
        (16, 2): (0.215, 0.066, 0.2, 1.05, -15.0, 0.633899, 17.9518, 18.0921),
        (15, 2): (0.21, 0.058, 0.17, 1.2, -20.0, 0.641985, 21.9401, 22.1418),
        (14, 2): (0.202, 0.045, 0.14, 1.4, -27.0, 0.650682, 28.6812, 28.9619),
        (13, 2): (0.193, 0.035, 0.12, 1.6, -32.0, 0.660984, 42.0595, 42.4716),
        (12, 2): (0.181, 0.025, 0.095, 1.9, -41.0, 0.67809, 63.7476, 64.3973),
        (19, 1): (0.212, 0.057, 0.18, 1.2, -21.0, 0.635714, 26.3112, 26.9233),
        (18, 1): (0.207, 0.05, 0.15, 1.4, -28.0, 0.643523, 34.9037, 35.7348),
        (17, 1): (0.198, 0.037, 0.12, 1.6, -33.0, 0.654504, 48.8958, 50.1486),
        (16, 1): (0.186, 0.025, 0.1, 1.9, -42.0, 0.66775, 76.4691, 78.443),
        (15, 1): (0.171, 0.015, 0.063, 2.7, -76.0, 0.694575, 140.053, 144.16),
    },
    "BLOSUM62": {
        None: (0.3176, 0.134, 0.4012, 0.7916, -3.2, 0.623757, 4.96466, 4.96466),
        (11, 2): (0.297, 0.082, 0.27, 1.1, -10.0, 0.641766, 12.6738, 12.7576),
        (10, 2): (0.291, 0.075, 0.23, 1.3, -15.0, 0.649362, 16.474, 16.6026),
        (9, 2): (0.279, 0.058, 0.19, 1.5, -19.0, 0.659245, 22.7519, 22.95),
        (8, 2): (0.264, 0.045, 0.15, 1.8, -26.0, 0.672692, 35.4838, 35.8213),
        (7, 2): (0.239, 0.027, 0.1, 2.5, -46.0, 0.702056, 61.2383, 61.886),
        (6, 2): (0.201, 0.012, 0.061, 3.3, -58.0, 0.740802, 140.417, 141.882),
        (13, 1): (0.292, 0.071, 0.23, 1.2, -11.0, 0.647715, 19.5063, 19.8931),
        (12, 1): (0.283, 0.059, 0.19, 1.5, -19.0, 0.656391, 27.8562, 28.4699),
        (11, 1): (0.267, 0.041, 0.14, 1.9, -30.0, 0.66972, 42.6028, 43.6362),
        (10, 1): (0.243, 0.024, 0.1, 2.5, -44.0, 0.693267, 83.1787, 85.0656),
        (9, 1): (0.206, 0.01, 0.052, 4.0, -87.0, 0.731887, 210.333, 214.842),
    },
    "BLOSUM80": {
        None: (0.343, 0.177, 0.6568, 0.5222, -1.6, 0.564057, 1.91813, 1.91813),
        (25, 2): (0.342, 0.17, 0.66, 0.52, -1.6, 0.563956, 1.731, 1.7313),
        (13, 2): (0.336, 0.15, 0.57, 0.59, -3.0, 0.570979, 2.67347, 2.6923),
        (9, 2): (0.319, 0.11, 0.42, 0.76, -6.0, 0.587837, 5.57609, 5.66786),
        (8, 2): (0.308, 0.09, 0.35, 0.89, -9.0, 0.597556, 7.53695, 7.68623),
        (7, 2): (0.293, 0.07, 0.27, 1.1, -14.0, 0.615254, 11.5866, 11.8404),
        (6, 2): (0.268, 0.045, 0.19, 1.4, -19.0, 0.644054, 19.9581, 20.4412),
        (11, 1): (0.314, 0.095, 0.35, 0.9, -9.0, 0.590702, 8.80861, 9.22332),
        (10, 1): (0.299, 0.071, 0.27, 1.1, -14.0, 0.60962, 13.8338, 14.5334),
        (9, 1): (0.279, 0.048, 0.2, 1.4, -19.0, 0.6238, 24.252, 25.4904),
    },
    "BLOSUM90": {
        None: (0.3346, 0.19, 0.7547, 0.4434, -1.4, 0.544178, 1.37776, 1.37776),
        (9, 2): (0.31, 0.12, 0.46, 0.67, -6.0, 0.570267, 4.23229, 4.33417),
        (8, 2): (0.3, 0.099, 0.39, 0.76, -7.0, 0.58158, 5.79702, 5.96142),
        (7, 2): (0.283, 0.072, 0.3, 0.93, -11.0, 0.600024, 9.04088, 9.3216),
        (6, 2): (0.259, 0.048, 0.22, 1.2, -16.0, 0.629344, 16.0244, 16.5316),
        (11, 1): (0.302, 0.093, 0.39, 0.78, -8.0, 0.576919, 7.14325, 7.61919),
        (10, 1): (0.29, 0.075, 0.28, 1.04, -15.0, 0.591366, 11.4839, 12.2698),
        (9, 1): (0.265, 0.044, 0.2, 1.3, -19.0, 0.613013, 21.4083, 22.8409),
    },
    "PAM30": {
        None: (0.34, 0.283, 1.754, 0.1938, -0.3, 0.436164, 0.161818, 0.161818),
        (7, 2): (0.305, 0.15, 0.87, 0.35, -3.0, 0.479087, 1.01401, 1.16273),
        (6, 2): (0.287, 0.11, 0.68, 0.42, -4.0, 0.49998, 1.68806, 1.95143),
        (5, 2): (0.264, 0.079, 0.45, 0.59, -7.0, 0.533009, 3.37701, 3.87195),
        (10, 1): (0.309, 0.15, 0.88, 0.35, -3.0, 0.474741, 1.37205, 1.78877),
        (9, 1): (0.294, 0.11, 0.61, 0.48, -6.0, 0.492716, 2.46392, 3.18615),
        (8, 1): (0.27, 0.072, 0.4, 0.68, -10.0, 0.521286, 5.36813, 6.76348),
    },
    "PAM70": {
        None: (0.3345, 0.229, 1.029, 0.325, -0.7, 0.511296, 0.633439, 0.633439),
        (8, 2): (0.301, 0.12, 0.54, 0.56, -5.0, 0.549019, 2.88165, 3.02571),
        (7, 2): (0.286, 0.093, 0.43, 0.67, -7.0, 0.565659, 4.53454, 4.78578),
        (6, 2): (0.264, 0.064, 0.29, 0.9, -12.0, 0.59633, 7.94263, 8.40272),
        (11, 1): (0.305, 0.12, 0.52, 0.59, -6.0, 0.543514, 3.6814, 4.10802),
        (10, 1): (0.291, 0.091, 0.41, 0.71, -9.0, 0.560723, 6.00297, 6.71657),
        (9, 1): (0.27, 0.06, 0.28, 0.97, -14.0, 0.585186, 11.3608, 12.6367),
    },
    "PAM250": {
        None: (0.2252, 0.0868, 0.2223, 0.98, -5.0, 0.660059, 11.7543, 11.7543),
        (15, 3): (0.205, 0.049, 0.13, 1.6, -23.0, 0.687656, 34.5784, 34.928),
        (14, 3): (0.2, 0.043, 0.12, 1.7, -26.0, 0.689768, 43.353, 43.4438),
        (13, 3): (0.194, 0.036, 0.1, 1.9, -31.0, 0.697431, 50.9485, 51.0817),
        (12, 3): (0.186, 0.029, 0.085, 2.2, -41.0, 0.704565, 69.6065, 69.7936),
        (11, 3): (0.174, 0.02, 0.07, 2.5, -48.0, 0.722438, 98.6535, 98.9271),
        (17, 2): (0.204, 0.047, 0.12, 1.7, -28.0, 0.684799, 41.5838, 41.7358),
        (16, 2): (0.198, 0.038, 0.11, 1.8, -29.0, 0.691098, 51.6352, 51.8439),
        (15, 2): (0.191, 0.031, 0.087, 2.2, -44.0, 0.699051, 67.2567, 67.5585),
        (14, 2): (0.182, 0.024, 0.073, 2.5, -53.0, 0.714103, 96.3151, 96.7568),
        (13, 2): (0.171, 0.017, 0.059, 2.9, -64.0, 0.728738, 135.653, 136.339),
        (21, 1): (0.205, 0.045, 0.11, 1.8, -34.0, 0.683265, 48.7282, 49.2188),
        (20, 1): (0.199, 0.037, 0.1, 1.9, -35.0, 0.68938, 60.832, 61.5141),
        (19, 1): (0.192, 0.029, 0.083, 2.3, -52.0, 0.696344, 84.0197, 84.9856),
        (18, 1): (0.183, 0.021, 0.07, 2.6, -60.0, 0.710525, 113.829, 115.184),
        (17, 1): (0.171, 0.014, 0.052, 3.3, -86.0, 0.727, 175.071, 177.196),
    },
}

# NCBI BLAST+ blast_stat.c, BLASTN tables. Key (reward, penalty), then (gap_open, gap_extend);
# value (lambda, K, H, alpha, beta). Rows with gap costs 0/0 (megablast's non-affine greedy
# costs) are left out: our gap costs are affine with extend >= 1.
_DNA_TABLES = {
    (1, -5): {
        (3, 3): (1.39, 0.747, 1.38, 1.0, 0.0),
    },
    (1, -4): {
        (1, 2): (1.36, 0.67, 1.2, 1.1, 0.0),
        (0, 2): (1.26, 0.43, 0.9, 1.4, -1.0),
        (2, 1): (1.35, 0.61, 1.1, 1.2, -1.0),
        (1, 1): (1.22, 0.35, 0.72, 1.7, -3.0),
    },
    (2, -7): {
        (2, 4): (0.68, 0.67, 1.2, 0.55, 0.0),
        (0, 4): (0.63, 0.43, 0.9, 0.7, -1.0),
        (4, 2): (0.675, 0.62, 1.1, 0.6, -1.0),
        (2, 2): (0.61, 0.35, 0.72, 1.7, -3.0),
    },
    (1, -3): {
        (2, 2): (1.37, 0.7, 1.2, 1.1, 0.0),
        (1, 2): (1.35, 0.64, 1.1, 1.2, -1.0),
        (0, 2): (1.25, 0.42, 0.83, 1.5, -2.0),
        (2, 1): (1.34, 0.6, 1.1, 1.2, -1.0),
        (1, 1): (1.21, 0.34, 0.71, 1.7, -2.0),
    },
    (2, -5): {
        (2, 4): (0.67, 0.59, 1.1, 0.6, -1.0),
        (0, 4): (0.62, 0.39, 0.78, 0.8, -2.0),
        (4, 2): (0.67, 0.61, 1.0, 0.65, -2.0),
        (2, 2): (0.56, 0.32, 0.59, 0.95, -4.0),
    },
    (1, -2): {
        (2, 2): (1.33, 0.62, 1.1, 1.2, 0.0),
        (1, 2): (1.3, 0.52, 0.93, 1.4, -2.0),
        (0, 2): (1.19, 0.34, 0.66, 1.8, -3.0),
        (3, 1): (1.32, 0.57, 1.0, 1.3, -1.0),
        (2, 1): (1.29, 0.49, 0.92, 1.4, -1.0),
        (1, 1): (1.14, 0.26, 0.52, 2.2, -5.0),
    },
    (2, -3): {
        (4, 4): (0.63, 0.42, 0.84, 0.75, -2.0),
        (2, 4): (0.615, 0.37, 0.72, 0.85, -3.0),
        (0, 4): (0.55, 0.21, 0.46, 1.2, -5.0),
        (3, 3): (0.615, 0.37, 0.68, 0.9, -3.0),
        (6, 2): (0.63, 0.42, 0.84, 0.75, -2.0),
        (5, 2): (0.625, 0.41, 0.78, 0.8, -2.0),
        (4, 2): (0.61, 0.35, 0.68, 0.9, -3.0),
        (2, 2): (0.515, 0.14, 0.33, 1.55, -9.0),
    },
    (3, -4): {
        (6, 3): (0.389, 0.25, 0.56, 0.7, -5.0),
        (5, 3): (0.375, 0.21, 0.47, 0.8, -6.0),
        (4, 3): (0.351, 0.14, 0.35, 1.0, -9.0),
        (6, 2): (0.362, 0.16, 0.45, 0.8, -4.0),
        (5, 2): (0.33, 0.092, 0.28, 1.2, -13.0),
        (4, 2): (0.281, 0.046, 0.16, 1.8, -23.0),
    },
    (4, -5): {
        (6, 5): (0.28, 0.21, 0.47, 0.6, -7.0),
        (5, 5): (0.27, 0.17, 0.39, 0.7, -9.0),
        (4, 5): (0.25, 0.1, 0.31, 0.8, -10.0),
        (3, 5): (0.23, 0.065, 0.25, 0.9, -11.0),
    },
    (1, -1): {
        (3, 2): (1.09, 0.31, 0.55, 2.0, -2.0),
        (2, 2): (1.07, 0.27, 0.49, 2.2, -3.0),
        (1, 2): (1.02, 0.21, 0.36, 2.8, -6.0),
        (0, 2): (0.8, 0.064, 0.17, 4.8, -16.0),
        (4, 1): (1.08, 0.28, 0.54, 2.0, -2.0),
        (3, 1): (1.06, 0.25, 0.46, 2.3, -4.0),
        (2, 1): (0.99, 0.17, 0.3, 3.3, -10.0),
    },
    (3, -2): {
        (5, 5): (0.208, 0.03, 0.072, 2.9, -47.0),
    },
    (5, -4): {
        (10, 6): (0.163, 0.068, 0.16, 1.0, -19.0),
        (8, 6): (0.146, 0.039, 0.11, 1.3, -29.0),
    },
}

_DNA_UNGAPPED_FROM = {(1, -5): (3, 3), (1, -4): (2, 2), (2, -7): (4, 4), (1, -3): (2, 2),
                      (2, -5): (4, 4), (1, -2): (2, 2), (2, -3): (6, 4), (3, -4): (6, 3),
                      (1, -1): (4, 2), (3, -2): (5, 5), (4, -5): (12, 8), (5, -4): (25, 10)}
"""Per reduced (reward, penalty): gap costs (open, extend) from which on (both at least as
large) BLASTN treats the scheme as ungapped and uses the ungapped parameters."""

_DNA_EVEN_SCORES = frozenset({(2, -7), (2, -5), (2, -3), (3, -4)})
"""Reduced (reward, penalty) pairs whose tables hold only for even scores (BLAST's ``round_down``)."""

_DNA_UNGAPPED_BETA = {(1, -1): -2.0, (2, -3): -2.0}
"""BLAST's beta of the length adjustment for ungapped DNA statistics (0 for other pairs)."""

ROBINSON_FREQUENCIES = {
    "A": 78.05, "C": 19.25, "D": 53.64, "E": 62.95, "F": 38.56, "G": 73.77, "H": 21.99,
    "I": 51.42, "K": 57.44, "L": 90.19, "M": 22.43, "N": 44.87, "P": 52.03, "Q": 42.64,
    "R": 51.29, "S": 71.20, "T": 58.41, "V": 64.41, "W": 13.30, "Y": 32.16}
"""Amino-acid background frequencies of Robinson & Robinson (1991, PNAS 88:8880), the ones
BLAST uses for its ungapped parameters (``STD_AMINO_ACID_FREQS`` in blast_stat.c); they are
normalised to sum to 1 before use. DNA uses 1/4 for each of A, C, G, T."""

MIN_FIT_SCORES = 100
"""Fewest positive pair scores the maximum-likelihood fit accepts."""


@dataclass(frozen=True)
class SpougeParameters:
    """Spouge's finite-size correction for one gapped scheme (BLAST's ``Blast_GumbelBlk``).

    The length an alignment of score ``S`` takes on each sequence is modelled as
    normal with mean ``a S + b`` and variance ``alpha S + beta``; the covariance of
    the two lengths is ``sigma S + tau``. ``a``, ``alpha`` and ``sigma`` are table
    columns; ``b``, ``beta`` and ``tau`` follow from the ungapped row:
    ``b = 2 G (a_u - a)``, ``beta = 2 G (alpha_u - alpha)``,
    ``tau = 2 G (alpha_u - sigma)`` with ``G = gap_open + gap_extend``
    (``Blast_GumbelBlkLoadFromTables``).
    """

    a: float
    b: float
    alpha: float
    beta: float
    sigma: float
    tau: float

    @classmethod
    def from_table(cls, gapped: tuple, ungapped: tuple, gap_open: int, gap_extend: int
                   ) -> "SpougeParameters":
        """From a gapped and the ungapped row ``(lambda, K, H, a, beta, C, alpha_v, sigma)``."""
        g = gap_open + gap_extend
        a, alpha, sigma = gapped[3], gapped[6], gapped[7]
        a_u, alpha_u = ungapped[3], ungapped[6]
        return cls(a, 2.0 * g * (a_u - a), alpha, 2.0 * g * (alpha_u - alpha), sigma,
                   2.0 * g * (alpha_u - sigma))

    def area(self, score: int, lam: float, query_length: int, subject_length: int) -> float:
        """Effective search area of one (query, subject) pair at ``score`` (``BLAST_SpougeStoE``).

        Each usable length ``mu = L - (a S + b)`` is averaged over its normal spread
        with negative values counted as 0: ``E = mu P + sd phi(mu / sd)`` with
        ``P = Phi(mu / sd)`` (normal density and distribution function), and the
        covariance term is added: ``area = E_m E_n + c P_m P_n``. Variances are
        floored at ``2 alpha / lambda`` and the covariance ``c`` at
        ``2 sigma / lambda``, as in BLAST.
        """
        def usable(length: int) -> tuple[float, float]:
            mean = length - (self.a * score + self.b)
            sd = math.sqrt(max(2.0 * self.alpha / lam, self.alpha * score + self.beta))
            z = mean / sd
            p = 0.5 * math.erfc(-z / math.sqrt(2.0))
            return mean * p + sd * math.exp(-0.5 * z * z) / math.sqrt(2.0 * math.pi), p

        expected_m, p_m = usable(query_length)
        expected_n, p_n = usable(subject_length)
        covariance = max(2.0 * self.sigma / lam, self.sigma * score + self.tau)
        return expected_m * expected_n + covariance * p_m * p_n


@dataclass(frozen=True)
class KarlinAltschul:
    """Karlin-Altschul parameters of a scoring system and BLAST's E-value formulas.

    Attributes
    ----------
    lam : float
        lambda, per raw score unit.
    k : float
        K.
    source : str
        Where they come from (``'NCBI BLAST table (...)'``, a maximum-likelihood
        fit, or computed ungapped values); written into output headers.
    even_scores : bool
        NCBI's tables for 2/-3, 2/-5, 2/-7 and 3/-4 hold only for even scores: for the
        E-value an odd score is rounded down to the next even number first, as BLASTN
        does (its bit scores use the raw score).
    h : float
        Relative entropy H (nats per aligned pair); NaN when unknown (a fit).
    alpha, beta : float or None, float
        Length adjustment: an alignment of score ``S`` is about ``alpha S + beta``
        long, which gives the adjustment ``beta + (alpha / lambda) ln(K m' N')``
        (:func:`length_adjustment`). ``alpha`` ``None``: no length adjustment (full
        lengths are used).
    spouge : SpougeParameters or None
        Spouge's finite-size correction (BLAST's gapped protein tables); when set it
        replaces the length adjustment in :meth:`evalue`, as in blastp.
    """

    lam: float
    k: float
    source: str
    even_scores: bool = False
    h: float = math.nan
    alpha: float | None = None
    beta: float = 0.0
    spouge: SpougeParameters | None = None

    def _effective(self, score: int) -> int:
        return score - (score % 2) if self.even_scores else score

    def bit_score(self, score: int) -> float:
        """Bit score of a raw score: ``(lambda * S - ln K) / ln 2`` (odd scores as they are, as in BLAST)."""
        return (self.lam * score - math.log(self.k)) / math.log(2.0)

    def length_adjustment(self, query_length: int, database_residues: int,
                          database_records: int = 1) -> int:
        """BLAST's length adjustment ``ell`` (0 when ``alpha`` is ``None``); see :func:`length_adjustment`."""
        if self.alpha is None:
            return 0
        return length_adjustment(self.k, self.alpha / self.lam, self.beta, query_length,
                                 database_residues, database_records)

    def search_space(self, query_length: int, database_residues: int,
                     database_records: int = 1) -> float:
        """Effective search space ``(m - ell) * max(1, N - R * ell)`` (``BLAST_CalcEffLengths``)."""
        ell = self.length_adjustment(query_length, database_residues, database_records)
        return float(query_length - ell) * float(max(1, database_residues - database_records * ell))

    def evalue(self, score: int, query_length: int, database_residues: int,
               database_records: int = 1, subject_length: int | None = None) -> float:
        """E-value of a local alignment score, as BLAST computes it.

        Parameters
        ----------
        score : int
            Raw alignment score.
        query_length : int
            ``m``, residues of the query (of one strand).
        database_residues : int
            ``N``, residues of the whole database (the target alone for one pair).
        database_records : int
            ``R``, sequences in the database (BLAST's effective database length is
            ``N - R * ell``).
        subject_length : int, optional
            Residues of the subject holding the alignment (Spouge's correction needs
            it); default ``N / R``.

        Returns
        -------
        float
            With :attr:`spouge`: ``area(S, m, n) K exp(-lambda S) N / n``;
            otherwise ``K (m - ell) max(1, N - R ell) exp(-lambda S)``.
        """
        s = self._effective(score)
        if self.spouge is not None:
            n = subject_length if subject_length is not None else database_residues / database_records
            area = self.spouge.area(s, self.lam, query_length, n)
            return area * self.k * math.exp(-self.lam * s) * database_residues / n
        return self.k * self.search_space(query_length, database_residues, database_records) \
            * math.exp(-self.lam * s)

    def describe(self) -> str:
        """One line for output headers: the parameters, their source and the E-value formula."""
        text = f"lambda {self.lam:.6g}, K {self.k:.6g}"
        if not math.isnan(self.h):
            text += f", H {self.h:.6g}"
        text += f" from {self.source}; "
        if self.spouge is not None:
            return text + "E with Spouge's finite-size correction (as blastp)"
        if self.alpha is not None:
            return text + (f"E = K (m - l)(N - R l) exp(-lambda S), BLAST's length adjustment l "
                           f"(alpha {self.alpha:.6g}, beta {self.beta:.6g})")
        return text + "E = K m N exp(-lambda S), no length correction"


def length_adjustment(k: float, alpha_over_lambda: float, beta: float, query_length: int,
                      database_residues: int, database_records: int = 1) -> int:
    """BLAST's length adjustment: the integer part of the fixed point of the expected alignment length.

    ``ell`` solves ``ell = f(ell) = beta + alpha_over_lambda * (ln K + ln((m - ell)(N - R ell)))``;
    ``f`` falls as ``ell`` grows, so the fixed point is unique. The result is the
    largest integer ``ell >= 0`` with ``f(ell) >= ell`` and ``K (m - ell)(N - R ell)
    >= max(m, N)`` (0 when even ``ell = 0`` breaks the latter). It is found with the
    safeguarded iteration of ``BLAST_ComputeLengthAdjustment`` (at most 20 steps of
    ``ell <- f(ell)``, falling back to bisection when a step leaves the bracket), so
    that it equals BLAST's value even in the rare cases where that iteration stops
    before converging.

    Parameters
    ----------
    k : float
        Karlin-Altschul K.
    alpha_over_lambda, beta : float
        ``alpha / lambda`` and ``beta`` of the scheme (``1 / H`` and 0 for ungapped scores).
    query_length, database_residues, database_records : int
        ``m``, ``N`` and ``R``.
    """
    m, n, r = float(query_length), float(database_residues), float(database_records)
    log_k = math.log(k)
    # Largest ell with K (m - ell)(n - r ell) >= max(m, n): the smaller root of a quadratic.
    c = m * n - max(m, n) / k
    if c < 0:
        return 0
    b = m * r + n
    high = 2.0 * c / (b + math.sqrt(b * b - 4.0 * r * c))

    def f(ell: float) -> float:
        return beta + alpha_over_lambda * (log_k + math.log((m - ell) * (n - r * ell)))

    low = ell = 0.0
    converged = False
    for step in range(20):
        proposal = f(ell)
        if proposal >= ell:
            low = ell
            if proposal - low <= 1.0:
                converged = True
                break
            if low == high:
                break
        else:
            high = ell
        if low <= proposal <= high:
            ell = proposal
        else:
            ell = high if step == 0 else (low + high) / 2.0
    if converged:
        above = math.ceil(low)
        if above <= high and f(above) >= above:
            return int(above)
    return int(low)


def _dna_reward_penalty(scheme: ScoringScheme) -> tuple[int, int] | None:
    """(match, mismatch) of a DNA scheme whose A/C/G/T block is match on the diagonal, mismatch off it."""
    match = int(scheme.matrix[0, 0])
    mismatch = int(scheme.matrix[0, 1])
    regular = scheme.matrix[:4, :4]
    if not (np.diag(regular) == match).all() or (regular[~np.eye(4, dtype=bool)] != mismatch).any():
        return None
    return match, mismatch


def published_parameters(scheme: ScoringScheme) -> KarlinAltschul | None:
    """NCBI BLAST's gapped parameters for ``scheme``, or ``None`` if it is not tabulated.

    Protein schemes are looked up by matrix name and (open, extend) and carry
    lambda, K, H, alpha, beta and Spouge's finite-size correction (only when the
    matrix is NCBI's: its exact ungapped lambda matches the table's ungapped row
    within 1%; Biopython's BLOSUM80 is not); DNA schemes by
    (match, mismatch, open, extend) of :meth:`ScoringScheme.dna` (the ambiguity
    score does not enter: BLAST's tables assume ACGT) and carry lambda, K, H,
    alpha and beta. A DNA pair with a common divisor ``d`` (e.g. 4/-6) uses the
    reduced pair's table at gap costs divided by ``d``, with lambda and alpha
    divided by ``d`` (``s_AdjustGapParametersByGcd``).
    """
    gaps = (scheme.gap_open, scheme.gap_extend)
    if scheme.is_dna:
        pair = _dna_reward_penalty(scheme)
        if pair is None or pair[0] <= 0 or pair[1] >= 0:
            return None
        d = math.gcd(pair[0], -pair[1])
        reduced = (pair[0] // d, pair[1] // d)
        if gaps[0] % d or gaps[1] % d:
            return None
        row = _DNA_TABLES.get(reduced, {}).get((gaps[0] // d, gaps[1] // d))
        if row is None:
            return None
        lam, k, h, alpha, beta = row
        return KarlinAltschul(lam / d, k, f"NCBI BLAST table (reward {pair[0]} penalty {pair[1]}, "
                                          f"gap open {gaps[0]}, extend {gaps[1]})",
                              reduced in _DNA_EVEN_SCORES, h, alpha / d, beta)
    table = _PROTEIN_TABLES.get(ncbi_matrix_name(scheme.name), {})
    row = table.get(gaps)
    if row is None or not _same_matrix_as_ncbi(scheme, table[None][0]):
        return None
    lam, k, h, alpha, beta = row[:5]
    return KarlinAltschul(lam, k, f"NCBI BLAST table ({scheme.name}, gap open {gaps[0]}, "
                                  f"extend {gaps[1]})", False, h, alpha, beta,
                          SpougeParameters.from_table(row, table[None], *gaps))


def _same_matrix_as_ncbi(scheme: ScoringScheme, ncbi_ungapped_lambda: float) -> bool:
    """Whether the scheme's matrix is NCBI's of that name: its ungapped lambda matches the table's.

    Biopython's ``BLOSUM80`` is another scaling than NCBI's (A/A scores 7, not 5), so
    NCBI's BLOSUM80 values would be wrong for it; a 1% agreement of the computed
    ungapped lambda with NCBI's ungapped row tells the matrices apart.
    """
    lam = _solve_lambda(*_pair_score_law(scheme)[:2])  # K, the costly part, is not needed here
    return abs(lam - ncbi_ungapped_lambda) <= 0.01 * ncbi_ungapped_lambda


def background_frequencies(scheme: ScoringScheme) -> np.ndarray:
    """Letter frequencies of random sequence, one per code of the scheme's alphabet.

    DNA: 1/4 for each of A, C, G, T (codes 0-3), 0 for the ambiguity codes.
    Protein: :data:`ROBINSON_FREQUENCIES` normalised, 0 for B, Z, X, U, O, ``*``, J.
    """
    letters = scheme.alphabet.letters
    if scheme.is_dna:
        weights = {letter: 1.0 for letter in "ACGT"}
    else:
        weights = ROBINSON_FREQUENCIES
    frequencies = np.array([weights.get(letter, 0.0) for letter in letters])
    return frequencies / frequencies.sum()


def ungapped_parameters(scheme: ScoringScheme) -> KarlinAltschul:
    """Exact ungapped Karlin-Altschul lambda, K and H of ``scheme`` over :func:`background_frequencies`.

    With ``p_s`` the probability that an aligned pair of random letters scores
    ``s`` (Karlin & Altschul 1990, PNAS 87:2264; the computation of BLAST's
    ``Blast_KarlinBlkUngappedCalc``):

    * lambda is the positive root of ``sum_s p_s exp(lambda s) = 1``;
    * ``H = lambda sum_s s p_s exp(lambda s)``;
    * with ``d`` the greatest common divisor of the possible scores and, in units
      of ``d``, ``S_j`` the score of ``j`` random pairs:
      ``K = exp(-2 sum_j (1/j) [E(exp(lambda S_j); S_j < 0) + P(S_j >= 0)])
      * lambda d / (H (1 - exp(-lambda d)))``; when the scores in units of ``d``
      reach only -1 or only +1 the closed forms of the same paper are used.

    ``alpha = lambda / H`` and ``beta`` 0 (BLASTN's -2 for 1/-1 and 2/-3) are the
    ungapped length-adjustment constants BLAST uses.

    Raises
    ------
    InputError
        No positive score is possible, or the expected score is not negative (then
        local alignment scores grow with length and no such statistics exist).
    """
    scores, probabilities, mean = _pair_score_law(scheme)
    lam = _solve_lambda(scores, probabilities)
    tilted = probabilities * np.exp(lam * scores)
    h = lam * float((scores * tilted).sum())
    k = _karlin_k(scores, probabilities, lam, h, mean)
    beta = 0.0
    if scheme.is_dna:
        pair = _dna_reward_penalty(scheme)
        beta = _DNA_UNGAPPED_BETA.get(pair, 0.0) if pair else 0.0
    return KarlinAltschul(lam, k, f"ungapped Karlin-Altschul values computed for {scheme.describe()}",
                          False, h, lam / h, beta)


def _pair_score_law(scheme: ScoringScheme) -> tuple[np.ndarray, np.ndarray, float]:
    """The scores ``low..high`` of a random aligned pair, their probabilities and the mean score
    (:func:`ungapped_parameters`; raises its :class:`InputError`)."""
    frequencies = background_frequencies(scheme)
    matrix = scheme.matrix.astype(np.int64)
    used = np.flatnonzero(frequencies > 0)
    weights = np.outer(frequencies[used], frequencies[used]).ravel()
    values = matrix[np.ix_(used, used)].ravel()
    low, high = int(values.min()), int(values.max())
    probabilities = np.bincount(values - low, weights=weights, minlength=high - low + 1)
    probabilities /= probabilities.sum()
    scores = np.arange(low, high + 1)
    mean = float((scores * probabilities).sum())
    if high <= 0 or mean >= 0:
        raise InputError(f"no Karlin-Altschul statistics for {scheme.describe()}: the expected score of "
                         f"a random aligned pair is {mean:.4g} (it must be negative, with positive "
                         "scores possible)")
    return scores, probabilities, mean


def _solve_lambda(scores: np.ndarray, probabilities: np.ndarray) -> float:
    """Positive root of ``sum p_s exp(lambda s) = 1`` (convex in lambda, negative slope at 0)."""
    possible = probabilities > 0

    def excess(lam: float) -> float:
        # exp only where a score is possible: an overflow there is +inf (lambda too large),
        # never the 0 * inf = nan of an impossible score (large, sparse score ranges).
        with np.errstate(over="ignore"):
            tilted = np.exp(lam * scores, where=possible, out=np.zeros(len(scores)))
        return float((probabilities * tilted).sum()) - 1.0

    low, high = 0.0, 1.0
    while excess(high) <= 0:
        low, high = high, 2.0 * high
    for _ in range(200):
        middle = 0.5 * (low + high)
        if middle in (low, high):
            break
        if excess(middle) > 0:
            high = middle
        else:
            low = middle
    return 0.5 * (low + high)


def _karlin_k(scores: np.ndarray, probabilities: np.ndarray, lam: float, h: float, mean: float
              ) -> float:
    """K of Karlin & Altschul (1990) for the score law ``probabilities`` over ``scores`` (consecutive)."""
    present = scores[probabilities > 0]
    d = 0
    for s in present.tolist():
        d = math.gcd(d, abs(s))
    low, high = int(present.min()) // d, int(present.max()) // d
    law = probabilities[np.arange(low, high + 1) * d - int(scores[0])]
    lam_d = lam * d
    if low == -1 and high == 1:
        return (law[0] - law[-1]) ** 2 / law[0]
    if high == 1:
        return h / lam_d * (1.0 - math.exp(-lam_d))
    if low == -1:
        return (mean / d) ** 2 / (h / lam_d) * (1.0 - math.exp(-lam_d))
    # Sum over j of E(exp(lambda S_j); S_j < 0) + P(S_j >= 0), S_j the score of j pairs,
    # by repeated convolution; the terms fall geometrically.
    total = 0.0
    walk = np.array([1.0])
    walk_low = 0
    for j in range(1, 1001):
        walk = np.convolve(walk, law)
        walk_low += low
        positions = np.arange(walk_low, walk_low + len(walk))
        negative = positions < 0
        term = (float((walk[negative] * np.exp(lam_d * positions[negative])).sum())
                + float(walk[~negative].sum())) / j
        total += term
        if term < 1e-12:
            break
    return math.exp(-2.0 * total) * lam_d / (h * (1.0 - math.exp(-lam_d)))


def parameters_for(scheme: ScoringScheme, histogram: "ScoreHistogram | None" = None) -> KarlinAltschul:
    """The Karlin-Altschul parameters to use for ``scheme`` (see the module notes for the order).

    1. :func:`published_parameters` (NCBI BLAST's tables);
    2. a DNA reward/penalty pair of BLASTN's tables with gap costs at or above the
       table's maximum: the exact ungapped values (:func:`ungapped_parameters`), as
       BLASTN does;
    3. with ``histogram`` (a database search's pair scores): the maximum-likelihood
       fit (:func:`fit_parameters`), length adjustment with ``alpha = lambda_u / H_u``
       of the ungapped values and ``beta = 0`` (BLAST's fallback for untabulated
       gap costs);
    4. the exact ungapped values, with a caution in ``source``: for a gapped scheme
       they understate chance scores, so E-values come out too small.

    Raises
    ------
    InputError
        From :func:`fit_parameters` (too few scores) or :func:`ungapped_parameters`
        (a scheme with a non-negative expected score).
    """
    published = published_parameters(scheme)
    if published is not None:
        return published
    ungapped = ungapped_parameters(scheme)
    if scheme.is_dna:
        pair = _dna_reward_penalty(scheme)
        if pair is not None and pair[0] > 0 > pair[1]:
            d = math.gcd(pair[0], -pair[1])
            limit = _DNA_UNGAPPED_FROM.get((pair[0] // d, pair[1] // d))
            if limit is not None and scheme.gap_open >= limit[0] * d and scheme.gap_extend >= limit[1] * d:
                return replace(ungapped, source=ungapped.source + " (BLASTN's rule: gap costs at or "
                               f"above {limit[0] * d}/{limit[1] * d} count as ungapped)")
    if histogram is not None:
        fitted = fit_parameters(histogram)
        return replace(fitted, alpha=ungapped.lam / ungapped.h, beta=0.0,
                       source=fitted.source + "; length adjustment alpha = lambda/H of the ungapped "
                       "values, beta 0")
    return replace(ungapped, source=ungapped.source + "; CAUTION: the scheme is gapped and in no BLAST "
                   "table, and ungapped values make its E-values too small")


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
