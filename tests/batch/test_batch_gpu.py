"""The GPU batch engine against the CPU one: identical alignments pair for pair and identical files.

Every test here needs a GPU (marker ``gpu``; conftest.py skips them elsewhere). Cases: random
DNA and protein pairs of every mode, lengths 1 and 2, lengths around the strip sizes (32 R rows,
256), very unequal lengths, tie-heavy two-letter sequences, N and lower case, all-gap optima
(global against a one-residue query), local pairs with nothing positive, one long pair among
short ones (the long-pair engine), launches cut small by a tiny memory budget, and both strands
(API and CLI files).
"""

from __future__ import annotations

import numpy as np
import pytest

from gpualign_plugin.batch.api import align_batch, align_batch_gpu, align_batch_strands
from gpualign_plugin.cli.main import main
from gpualign_plugin.model import Alignment
from gpualign_plugin.scoring import ScoringScheme, reverse_complement_codes

from oracles import gotoh

pytestmark = pytest.mark.gpu

DNA = ScoringScheme.dna()
PROTEIN = ScoringScheme.from_matrix("BLOSUM62", 11, 1)
MODES = ("local", "global", "semiglobal")


def assert_same(pairs, scheme, mode, **options):
    expected = align_batch(pairs, scheme, mode)
    got = align_batch_gpu(pairs, scheme, mode, **options)
    wrong = [(k, len(pairs[k][0]), len(pairs[k][1]), g, e)
             for k, (g, e) in enumerate(zip(got, expected)) if g != e]
    assert not wrong, wrong[:3]
    for (q, t), result in zip(pairs, got):
        if result.score or result.cigar.runs:
            alignment = Alignment("q", "t", len(q), len(t), result.query_start, result.query_end,
                                  result.target_start, result.target_end, "+", result.score, result.cigar)
            assert alignment.recompute_score(q, t, scheme) == result.score
    return got


def related(rng, letters, m, n):
    base = rng.integers(0, letters, max(m, n), dtype=np.uint8)
    query = base[:m].copy()
    target = base[:n].copy()
    flips = rng.random(n) < 0.15
    target[flips] = rng.integers(0, letters, int(flips.sum()), dtype=np.uint8)
    return query, target


@pytest.mark.parametrize("mode", MODES)
def test_random_dna_pairs_of_every_length_class_equal_cpu(mode):
    rng = np.random.default_rng(11)
    lengths = [1, 2, 3, 31, 32, 33, 63, 64, 65, 150, 255, 256, 257, 300, 511, 512, 513, 700]
    pairs = []
    for m in lengths:
        n = int(rng.choice(lengths))
        pairs.append(related(rng, 4, m, n))
        pairs.append((rng.integers(0, 4, m, dtype=np.uint8), rng.integers(0, 4, n, dtype=np.uint8)))
    pairs += [related(rng, 4, int(m), int(n)) for m, n in rng.integers(1, 400, (60, 2))]
    assert_same(pairs, DNA, mode)


@pytest.mark.parametrize("mode", MODES)
def test_proteins_and_very_unequal_lengths_equal_cpu(mode):
    rng = np.random.default_rng(12)
    pairs = [related(rng, 20, m, n) for m, n in [(5, 900), (900, 5), (1, 1000), (1000, 1), (2, 2),
                                                 (40, 2000), (2000, 40), (333, 333)]]
    pairs += [(rng.integers(0, 25, m, dtype=np.uint8), rng.integers(0, 25, n, dtype=np.uint8))
              for m, n in rng.integers(1, 300, (40, 2))]
    assert_same(pairs, PROTEIN, mode)


@pytest.mark.parametrize("mode", MODES)
def test_ties_n_and_lower_case_equal_cpu_and_the_oracle(mode):
    rng = np.random.default_rng(13)
    texts = ["".join(rng.choice(list("ACac"), rng.integers(1, 40))) for _ in range(40)]
    texts += ["NNNNACGTNN", "acgtn", "N", "AN", "nnnnnnnn", "ACGTRYKMSWBDHVN"]
    pairs = [(DNA.alphabet.encode(texts[k]), DNA.alphabet.encode(texts[-1 - k])) for k in range(len(texts))]
    scheme = ScoringScheme.dna(2, -2, 2, 1)  # small gaps: many equal-scoring paths
    got = assert_same(pairs, scheme, mode)
    for (q, t), result in zip(pairs, got):
        expected = gotoh(q, t, scheme.matrix, 2, 1, mode)
        assert (result.score, str(result.cigar) if result.cigar.runs else "") == (expected[0], expected[5])


def test_all_gap_optima_and_local_pairs_without_alignment():
    a = DNA.alphabet.encode
    pairs = [(a("A"), a("CCCCCCCCCC")), (a("C"), a("G")), (a("AAAA"), a("CCCC")), (a("A"), a("A")),
             (a("GG"), a("TTTTTTTTTTTTTTTTTTTTTTTTTTTTTTTTTTTTTTTTG"))]
    for mode in MODES:
        assert_same(pairs, ScoringScheme.dna(1, -9, 1, 1), mode)
    got = align_batch_gpu(pairs[1:3], DNA, "local")
    assert all(r.score == 0 and not r.cigar.runs for r in got)


@pytest.mark.parametrize("max_pair_cells", [None, 1 << 22])
def test_one_long_pair_among_short_ones_and_empty_sequences(monkeypatch, max_pair_cells):
    """The 26 M-cell pair in the batch kernel (default limit) and through the long-pair engine."""
    from gpualign_plugin.batch import gpu

    if max_pair_cells is not None:
        monkeypatch.setattr(gpu, "MAX_PAIR_CELLS", max_pair_cells)
    rng = np.random.default_rng(14)
    pairs = [related(rng, 4, 200, 210) for _ in range(30)]
    pairs.insert(7, related(rng, 4, 5000, 5200))
    pairs.insert(3, (np.zeros(0, np.uint8), rng.integers(0, 4, 30, dtype=np.uint8)))
    pairs.insert(4, (rng.integers(0, 4, 30, dtype=np.uint8), np.zeros(0, np.uint8)))
    for mode in MODES:
        assert_same(pairs, DNA, mode)


def test_small_memory_budget_cuts_the_launches():
    rng = np.random.default_rng(15)
    pairs = [related(rng, 4, int(m), int(n)) for m, n in rng.integers(100, 600, (50, 2))]
    assert_same(pairs, DNA, "local", memory_budget=400_000)


@pytest.mark.parametrize("mode", MODES)
def test_both_strands_equal_cpu(mode):
    rng = np.random.default_rng(17)
    pairs = [related(rng, 4, int(m), int(n)) for m, n in rng.integers(1, 300, (60, 2))]
    pairs = [(reverse_complement_codes(q), t) if k % 3 == 0 else (q, t) for k, (q, t) in enumerate(pairs)]
    got = align_batch_strands(pairs, DNA, mode, "both", backend="gpu")
    assert got == align_batch_strands(pairs, DNA, mode, "both")
    assert {strand for strand, _ in got} == {"+", "-"}


def test_reference_workload_and_cli_files_equal_cpu(tmp_path):
    rng = np.random.default_rng(16)
    texts = [related(rng, 4, 512, 512) for _ in range(300)]
    texts = [(reverse_complement_codes(q), t) if k % 2 else (q, t) for k, (q, t) in enumerate(texts)]
    letters = np.array(list("ACGT"))
    (tmp_path / "q.fa").write_text("".join(f">q{k}\n{''.join(letters[q])}\n" for k, (q, _) in enumerate(texts)))
    (tmp_path / "t.fa").write_text("".join(f">t{k}\n{''.join(letters[t])}\n" for k, (_, t) in enumerate(texts)))
    for backend in ("cpu", "gpu"):
        assert main(["batch", "-q", str(tmp_path / "q.fa"), "-t", str(tmp_path / "t.fa"), "--backend",
                     backend, "--strand", "both", "--out", str(tmp_path / f"{backend}.tsv"), "--out",
                     str(tmp_path / f"{backend}.sam"), "--out", str(tmp_path / f"{backend}.paf")]) == 0
    for ext in ("tsv", "paf"):
        assert (tmp_path / f"gpu.{ext}").read_bytes() == (tmp_path / f"cpu.{ext}").read_bytes()
    strip = [line for line in (tmp_path / "cpu.sam").read_text().splitlines() if not line.startswith("@PG")]
    assert [line for line in (tmp_path / "gpu.sam").read_text().splitlines()
            if not line.startswith("@PG")] == strip


def test_progress_per_launch_and_inside_a_long_pair(monkeypatch):
    """Launches cut small by the budget each report their pairs' cells, and a pair past
    MAX_PAIR_CELLS reports from the long-pair engine; in all exactly m n a pair, and the
    results are those computed without progress."""
    from gpualign_plugin.batch import gpu

    monkeypatch.setattr(gpu, "MAX_PAIR_CELLS", 1 << 22)
    rng = np.random.default_rng(23)
    pairs = [(rng.integers(0, 4, int(rng.integers(200, 600))).astype(np.uint8),
              rng.integers(0, 4, int(rng.integers(200, 600))).astype(np.uint8)) for _ in range(40)]
    long_q = rng.integers(0, 4, 5000).astype(np.uint8)
    pairs.append((long_q, long_q[::-1].copy()))  # 25 M cells: past the lowered limit
    reports = []
    got = align_batch_gpu(pairs, DNA, "local", memory_budget=2 * 2**20, progress=reports.append)
    assert got == align_batch_gpu(pairs, DNA, "local", memory_budget=2 * 2**20)
    assert got == align_batch(pairs, DNA, "local")
    assert sum(reports) == sum(len(q) * len(t) for q, t in pairs)
    assert len(reports) >= 4 and min(reports) > 0


@pytest.mark.parametrize("mode", MODES)
def test_columns_over_many_small_launches_equal_cpu(mode, monkeypatch):
    from gpualign_plugin.batch import gpu

    monkeypatch.setattr(gpu, "MAX_PAIR_CELLS", 1 << 22)
    from gpualign_plugin.batch.api import align_columns, align_strands_columns
    from gpualign_plugin.batch.columns import SequencePairs

    rng = np.random.default_rng(21)
    pairs = [related(rng, 4, int(rng.integers(1, 301)), int(rng.integers(1, 301))) for _ in range(500)]
    pairs += [(np.zeros(0, np.uint8), rng.integers(0, 4, 9).astype(np.uint8)),
              related(rng, 4, 4200, 4100)]  # an empty query (CPU kernel), a pair past the lowered limit
    packed = SequencePairs.from_list(pairs)
    short = packed.take(np.arange(500))
    expected = align_columns(short, DNA, mode)
    profile: dict = {}
    got = gpu.align_columns(short, DNA, mode, profile=profile, launch_pairs=37)
    assert profile["launches"] == -(-500 // 37)
    for name in ("score", "query_start", "query_end", "target_start", "target_end", "runs", "run_offsets"):
        assert np.array_equal(getattr(got, name), getattr(expected, name)), name
    both, minus = align_strands_columns(packed, DNA, mode, "both", backend="gpu")
    cpu_both, cpu_minus = align_strands_columns(packed, DNA, mode, "both")
    assert both.pairs() == cpu_both.pairs() and np.array_equal(minus, cpu_minus)
