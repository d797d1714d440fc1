"""The GPU Nussinov engine against the CPU one and the plain-Python oracle: identical folds.

Every test here needs a GPU (marker ``gpu``; conftest.py skips them elsewhere). Cases: lengths
1 and 2, lengths around the tile (64) and its multiples, sequences with no possible pair, N and
IUPAC ambiguity codes (bases that pair with nothing),
palindromes and tie-heavy two-letter sequences, every min_loop from 0 to 4, many sequences of
mixed lengths in one launch, groups cut small by a tiny memory budget, and the CLI's file.
"""

from __future__ import annotations

import random

import pytest

from gpualign_plugin.cli.main import main
from gpualign_plugin.fold.api import fold, fold_many

from oracles import nussinov, traceback_by_rule

pytestmark = pytest.mark.gpu


def test_small_cases_equal_the_oracle_and_the_cpu():
    rng = random.Random(21)
    texts = ["A", "G", "GC", "AU", "AA", "GCA", "AAAAAAAA", "CCCCCCCCCCCC", "ACACACACAC",
             "GGGGAAAACCCC", "GCGCGCGC", "AUGCAUGCAUGC", "GGUACCGGUACC"]
    texts += ["".join(rng.choice("ACGU") for _ in range(rng.randint(1, 45))) for _ in range(60)]
    texts += ["".join(rng.choice("GC") for _ in range(rng.randint(1, 40))) for _ in range(20)]
    texts += ["N", "NNNN", "GGGNNNNCCC"]
    texts += ["".join(rng.choice("ACGUNRY") for _ in range(rng.randint(1, 45))) for _ in range(20)]
    for min_loop in range(5):
        gpu = fold_many(texts, min_loop, backend="gpu")
        for text, result in zip(texts, gpu):
            expected = nussinov(text, min_loop)
            assert result.score == (expected[0][len(text) - 1] if len(text) > 1 else 0), text
            assert result.pairs == traceback_by_rule(text, min_loop), (text, min_loop)
            assert result == fold(text, min_loop), (text, min_loop)


@pytest.mark.parametrize("length", [63, 64, 65, 127, 128, 129, 200, 257, 700, 1500, 3000])
def test_lengths_around_the_tiles_equal_cpu(length):
    rng = random.Random(length)
    text = "".join(rng.choice("ACGU") for _ in range(length))
    palindrome = text[: length // 2] + text[: length - length // 2][::-1]
    for min_loop in (0, 3):
        assert fold(text, min_loop, backend="gpu") == fold(text, min_loop)
        assert fold(palindrome, min_loop, backend="gpu") == fold(palindrome, min_loop)
    no_pair = "".join(rng.choice("AC") for _ in range(length))
    assert fold(no_pair, 0, backend="gpu").structure == "." * length


def test_many_sequences_in_groups_equal_cpu():
    from gpualign_plugin.fold import gpu

    rng = random.Random(22)
    texts = ["".join(rng.choice("ACGU") for _ in range(rng.randint(1, 400))) for _ in range(80)]
    expected = [fold(t, 2) for t in texts]
    assert fold_many(texts, 2, backend="gpu") == expected
    codes = fold_many(texts, 2, backend="cpu")
    assert codes == expected
    budget = 3 * gpu.sequence_bytes(400)
    from gpualign_plugin.fold.api import encode_rna

    results = gpu.fold_many([encode_rna(t) for t in texts], 2, memory_budget=budget)
    assert [(tuple(map(tuple, p.tolist())), s) for p, s in results] == [(e.pairs, e.score) for e in expected]


def test_cli_gpu_file_equals_cpu_file(tmp_path):
    rng = random.Random(23)
    fasta = tmp_path / "in.fa"
    fasta.write_text("".join(f">r{k}\n{''.join(rng.choice('ACGUacgt') for _ in range(rng.randint(1, 300)))}\n"
                             for k in range(30)))
    for backend in ("cpu", "gpu"):
        assert main(["fold", "--input", str(fasta), "--out", str(tmp_path / f"{backend}.dbn"),
                     "--min-loop", "3", "--backend", backend]) == 0
    assert (tmp_path / "gpu.dbn").read_bytes() == (tmp_path / "cpu.dbn").read_bytes()


def test_progress_per_tile_diagonal_and_the_same_folds():
    """A group of sequences reports every tile diagonal as it finishes: as many reports as the
    longest sequence has tile diagonals, adding up to the split-point count of them all."""
    from gpualign_plugin.fold.api import fold_cells

    rng = random.Random(31)
    texts = ["".join(rng.choice("ACGU") for _ in range(length)) for length in (2000, 700, 65, 1)]
    reports = []
    got = fold_many(texts, 0, "gpu", progress=reports.append)
    assert got == fold_many(texts, 0, "gpu") == fold_many(texts, 0, "cpu")
    assert len(reports) == (2000 + 64) // 64 and min(reports) > 0
    assert sum(reports) == sum(fold_cells(len(text)) for text in texts)
    one = []
    assert fold(texts[0], 0, progress=one.append, backend="gpu") == got[0]
    assert len(one) == 32 and sum(one) == fold_cells(2000)
