"""The CPU batch engine's lane kernel (many pairs in the vector lanes) against the oracles.

:func:`gpualign_plugin.batch.cpu.lane_groups` decides which pairs share a group; every test
here checks first that the pairs it builds do form groups, so the lane kernel is what runs.
Results are compared with the plain-Python Gotoh of ``tests/oracles.py`` (small pairs) and
with the pairwise engine pair by pair (large ones), and every CIGAR is re-scored. DNA schemes
of match/mismatch form take the kernel's computed scores, NUC.4.4 and PAM30 its lookups.
"""

from __future__ import annotations

import os

import numpy as np
import pytest
from oracles import gotoh, gotoh_matrices
from paths import DATA

from gpualign_plugin.batch import cpu
from gpualign_plugin.batch.api import align_batch_strands, align_columns
from gpualign_plugin.batch.columns import SequencePairs
from gpualign_plugin.io.fasta import read_fasta
from gpualign_plugin.model import score_cigar
from gpualign_plugin.pairwise.api import align_pair
from gpualign_plugin.pairwise.modes import MODES
from gpualign_plugin.scoring import ScoringScheme, reverse_complement_codes

DNA = ScoringScheme.dna()
TIES = ScoringScheme.dna(1, -1, 0, 1)
PROTEIN = ScoringScheme.from_matrix("PAM30", gap_open=9, gap_extend=1)


def mutated(rng, codes, letters, rate):
    """A copy of ``codes`` with substitutions, insertions and deletions at ``rate`` each."""
    out = []
    for code in codes.tolist():
        r = rng.random()
        if r < rate:
            continue
        out.append(int(rng.integers(letters)) if r < 2 * rate else code)
        if rng.random() < rate:
            out.append(int(rng.integers(letters)))
    return np.array(out, dtype=np.uint8)


def mixed_pairs(rng, scheme, count, low, high):
    """Related, unrelated, repeat (tie-heavy) and N-rich pairs of lengths ``low..high``."""
    letters = len(scheme.alphabet.letters)
    plain = 4 if scheme.is_dna else 20
    pairs = []
    for k in range(count):
        q = rng.integers(0, plain, int(rng.integers(low, high + 1))).astype(np.uint8)
        kind = k % 4
        if kind == 0:
            t = mutated(rng, q, plain, 0.1)
        elif kind == 1:
            t = rng.integers(0, plain, int(rng.integers(low, high + 1))).astype(np.uint8)
        elif kind == 2:
            unit = rng.integers(0, plain, int(rng.integers(1, 4))).astype(np.uint8)
            q = np.resize(unit, len(q))
            t = np.resize(unit, int(rng.integers(low, high + 1)))
        else:
            t = mutated(rng, q, plain, 0.05)
            ambiguous = rng.random(len(t)) < 0.3  # IUPAC codes and N (DNA), rare codes (protein)
            t[ambiguous] = rng.integers(plain, letters, int(ambiguous.sum()))
        if len(t) == 0:
            t = q[:1].copy()
        pairs.append((q, t))
    return pairs


NUC44 = ScoringScheme.from_matrix("NUC.4.4")  # DNA, but its scores must be looked up
WIDE = ScoringScheme.dna(2000, -1500, 1000, 800)  # too wide for the 16-bit lanes


def lanes_run(pairs) -> None:
    """The pairs must form at least one lane group (else the lane kernel is not under test)."""
    groups, group_offsets, singles = cpu.lane_groups(np.array([len(q) for q, _ in pairs]),
                                                     np.array([len(t) for _, t in pairs]))
    assert len(group_offsets) > 1 and len(groups) > len(singles)


def assert_rescores(alignment, q, t, scheme):
    assert score_cigar(alignment.cigar, q[alignment.query_start:alignment.query_end],
                       t[alignment.target_start:alignment.target_end], scheme) == alignment.score


def test_lane_groups_partition_the_pairs_into_full_groups_of_similar_pairs():
    rng = np.random.default_rng(1)
    m = np.concatenate([rng.integers(0, 300, 5000), [1025, 1, 600], rng.integers(100, 120, 300),
                        np.full(64, 1024), rng.integers(400, 2000, 200)])
    n = np.concatenate([rng.integers(0, 300, 5000), [1024, 1, 10], rng.integers(100, 120, 300),
                        np.full(64, 1024), rng.integers(400, 2000, 200)])
    groups, group_offsets, singles = cpu.lane_groups(m, n)
    assert sorted(np.concatenate([groups, singles]).tolist()) == list(range(len(m)))
    assert len(group_offsets) > 10
    for g in range(len(group_offsets) - 1):
        members = groups[group_offsets[g]:group_offsets[g + 1]]
        assert 0 < len(members) <= cpu.LANES
        assert 2 * (m[members] * n[members]).sum() >= cpu.LANES * m[members].max() * n[members].max()
        assert m[members].max() * n[members].max() <= cpu.LANE_PAIR_CELLS
    grouped = np.zeros(len(m), dtype=bool)
    grouped[groups] = True
    assert not grouped[(m == 0) | (n == 0) | (m * n > cpu.LANE_PAIR_CELLS)].any()


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("scheme", [DNA, TIES, NUC44, PROTEIN, WIDE],
                         ids=["dna", "ties", "nuc44", "protein", "wide-32-bit"])
def test_lane_kernel_equals_the_plain_python_gotoh(scheme, mode):
    rng = np.random.default_rng(10 + MODES.index(mode))
    pairs = mixed_pairs(rng, scheme, 200, 12, 24)
    # Whole groups of extreme shapes: one row, one column, one cell.
    for m, n in ((1, 1), (1, 20), (20, 1)):
        pairs += [(rng.integers(0, 4, m).astype(np.uint8), rng.integers(0, 4, n).astype(np.uint8))
                  for _ in range(cpu.LANES)]
    lanes_run(pairs)
    assert cpu._fits_int16(scheme.matrix, scheme.gap_open, scheme.gap_extend, 24, 24) == (scheme is not WIDE)
    got = align_columns(SequencePairs.from_list(pairs), scheme, mode).pairs()
    for (q, t), alignment in zip(pairs, got):
        score, qs, qe, ts, te, cigar = gotoh(q, t, scheme.matrix, scheme.gap_open, scheme.gap_extend, mode)
        assert (alignment.score, alignment.query_start, alignment.query_end, alignment.target_start,
                alignment.target_end, str(alignment.cigar) if cigar else "") == (score, qs, qe, ts, te, cigar)
        if cigar:
            assert_rescores(alignment, q, t, scheme)


@pytest.mark.parametrize("mode", MODES)
def test_lane_kernel_equals_the_pairwise_engine_on_groups_of_the_largest_pairs(mode):
    # 1024 x 1024 pairs are the largest a group takes (LANE_PAIR_CELLS); one just above goes alone.
    rng = np.random.default_rng(20 + MODES.index(mode))
    pairs = mixed_pairs(rng, DNA, 70, 1000, 1024)
    pairs = [(q, t[:1024]) for q, t in pairs]
    pairs.append((rng.integers(0, 4, 1025).astype(np.uint8), rng.integers(0, 4, 1024).astype(np.uint8)))
    lanes_run(pairs)
    got = align_columns(SequencePairs.from_list(pairs), DNA, mode).pairs()
    for (q, t), alignment in zip(pairs, got):
        assert alignment == align_pair(q, t, DNA, mode)
        if alignment.cigar.runs:
            assert_rescores(alignment, q, t, DNA)


def value_range(q, t, matrix, gap_open, gap_extend, mode):
    """The smallest and largest H, E and F of real cells (rows and columns from 1) of the oracle."""
    values = [value for grid in gotoh_matrices(q, t, matrix, gap_open, gap_extend, mode)
              for row in grid[1:] for value in row[1:]]
    return min(values), max(values)


def test_16_bit_lanes_only_for_column_numbers_below_32767():
    # The local end cell's column is kept in the lane type; the bound (extend >= 1) refuses
    # any wider group, even with the cheapest gaps.
    cheapest = ScoringScheme.dna(1, -1, 0, 1)
    assert cpu._fits_int16(cheapest.matrix, 0, 1, 1, 32000)
    assert not cpu._fits_int16(cheapest.matrix, 0, 1, 1, 32767)


def test_the_16_bit_bound_holds_for_every_real_value():
    # _fits_int16 rests on -bottom <= H, E, F <= top for every real cell; check it on the
    # plain-Python recurrence, with schemes whose gaps or matches dominate in turn.
    rng = np.random.default_rng(30)
    for scheme in (DNA, TIES, PROTEIN, ScoringScheme.dna(7, -11, 0, 9), ScoringScheme.dna(9, -1, 40, 1)):
        matrix = scheme.matrix
        for _ in range(40):
            q = rng.integers(0, 4, int(rng.integers(1, 30))).astype(np.uint8)
            t = mutated(rng, q, 4, 0.2) if rng.random() < 0.5 else rng.integers(0, 4, 30).astype(np.uint8)
            if len(t) == 0:
                continue
            rows, columns = len(q), len(t)
            top = max(int(matrix.max()), 0) * min(rows, columns)
            bottom = 3 * scheme.gap_open + scheme.gap_extend * (rows + columns + 1) - min(int(matrix.min()), 0)
            for mode in MODES:
                low, high = value_range(q, t, matrix, scheme.gap_open, scheme.gap_extend, mode)
                assert -bottom <= low and high <= top


@pytest.mark.parametrize("mode", MODES)
def test_lane_kernel_on_windows_of_real_coronavirus_genomes(mode):
    # Windows of 120-400 bp of RaTG13, Omicron and SARS-CoV-1 against Wuhan-Hu-1 at the same
    # coordinates, 30 bp wider (tests/data/coronaviruses), on both strands, against the
    # pairwise engine strand by strand.
    folder = os.path.join(DATA, "coronaviruses")
    reference = read_fasta(os.path.join(folder, "wuhan_hu_1.fa"), DNA)[0].codes
    rng = np.random.default_rng(40 + MODES.index(mode))
    pairs = []
    for name in ("ratg13.fa", "omicron_or833857.fa", "sars_cov_gz02.fa"):
        genome = read_fasta(os.path.join(folder, name), DNA)[0].codes
        for _ in range(70):
            length = int(rng.integers(120, 401))
            start = int(rng.integers(0, min(len(genome), len(reference)) - length - 60))
            pairs.append((genome[start:start + length], reference[max(0, start - 30):start + length + 30]))
    lanes_run(pairs)
    for (q, t), (strand, alignment) in zip(pairs, align_batch_strands(pairs, DNA, mode, "both")):
        plus = align_pair(q, t, DNA, mode)
        minus = align_pair(reverse_complement_codes(q), t, DNA, mode)
        assert (strand, alignment) == (("-", minus) if minus.score > plus.score else ("+", plus))
