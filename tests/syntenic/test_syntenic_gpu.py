"""The GPU syntenic engine against the CPU engine: identical scores, blocks and regions.

Every test here needs a GPU (marker ``gpu``; conftest.py skips them elsewhere).
The GPU computes the DP bands (``gpu/syntenic.cu``), the CPU walks the traceback,
so equal results prove that every band's values and direction bytes are the
CPU's. Random DNA and protein pairs cover lengths 0 to 2000 and sizes around the
tile edges (32 rows x 64 or 256 columns; the ``tiles`` fixture runs a test with
each width, whatever the band's height); two-letter sequences with small block
penalties tie between all nine traceback choices; tiny memory budgets cut the
matrix into many bands over several recursion levels; one related 100 kbp pair
and the demo genomes through the CLI check the sizes the engine is built for.
"""

from __future__ import annotations

import json
import os

import numpy as np
import pytest
from test_syntenic import SCHEMES, planted_regions, random_pair

from gpualign_plugin.cli.bench import related_pair
from gpualign_plugin.runtime import kernels
from gpualign_plugin.scoring import ScoringScheme
from gpualign_plugin.syntenic import gpu as gpu_syntenic
from gpualign_plugin.syntenic.api import default_block_penalty, syntenic_align, syntenic_score
from gpualign_plugin.syntenic.gpu import NARROW_TILE_COLS, TILE_ROWS, WIDE_TILE_COLS
from paths import RESOURCES

pytestmark = pytest.mark.gpu

RESOURCES = os.path.join(RESOURCES, "genomes")


@pytest.fixture(params=["narrow", "wide"])
def tiles(request, monkeypatch):
    """Force narrow (64-column) or wide (256-column) tiles on every band."""
    monkeypatch.setattr(gpu_syntenic, "NARROW_MIN_TILE_ROWS", 0 if request.param == "narrow" else 10**9)
    return request.param


def assert_same(a, b, scheme, d, budgets=()):
    """GPU score and alignment (default budget and each of ``budgets``) equal the CPU's."""
    expected = syntenic_align(a, b, scheme, d)
    assert syntenic_score(a, b, scheme, d, backend="gpu") == expected.score
    assert syntenic_align(a, b, scheme, d, backend="gpu") == expected
    for budget in budgets:
        assert syntenic_align(a, b, scheme, d, memory_budget=budget, backend="gpu") == expected
    return expected


def test_random_dna_pairs_up_to_2000_bp_equal_cpu(tiles):
    rng = np.random.default_rng(101)
    for case in range(200):
        scheme = SCHEMES[case % len(SCHEMES)]
        d = int(rng.choice([1, 3, 8, 20, 50]))
        longest = 2000 if case % 10 == 0 else 300
        a, b = random_pair(rng, 4, longest)
        assert_same(a, b, scheme, d)


def test_sizes_around_tile_edges_equal_cpu(tiles):
    rng = np.random.default_rng(5)
    scheme = ScoringScheme.dna()
    cols = NARROW_TILE_COLS if tiles == "narrow" else WIDE_TILE_COLS
    sizes = [1, 2, TILE_ROWS - 1, TILE_ROWS, TILE_ROWS + 1, cols - 1, cols, cols + 1, 2 * cols + 3]
    for m in sizes:
        for n in sizes:
            a = rng.integers(0, 4, m).astype(np.uint8)
            b = a[:n].copy() if n <= m else np.concatenate([a, rng.integers(0, 4, n - m)]).astype(np.uint8)
            b[rng.random(len(b)) < 0.1] = 0
            assert_same(a, b, scheme, 12)


def test_empty_sequences_equal_cpu(tiles):
    scheme = ScoringScheme.dna()
    a = scheme.alphabet.encode("ACGTACGTAC")
    empty = np.zeros(0, np.uint8)
    for d in (5, 100):
        assert_same(empty, a, scheme, d)
        assert_same(a, empty, scheme, d)
    assert_same(empty, empty, scheme, 5)


def test_two_letter_pairs_follow_every_tie_rule(tiles):
    rng = np.random.default_rng(2025)
    schemes = SCHEMES + [ScoringScheme.dna(1, -1, 1, 1)]
    for case in range(300):
        scheme = schemes[case % len(schemes)]
        a = rng.integers(0, 2, int(rng.integers(1, 40))).astype(np.uint8)
        b = rng.integers(0, 2, int(rng.integers(1, 300))).astype(np.uint8)
        assert_same(a, b, scheme, int(rng.integers(1, 8)), budgets=(1,) if case % 5 == 0 else ())
    for case in range(20):
        a, b = random_pair(rng, 2, 1200)
        assert_same(a, b, schemes[case % len(schemes)], int(rng.integers(1, 10)))


def test_protein_pairs_equal_cpu(tiles):
    scheme = ScoringScheme.from_matrix("BLOSUM62", 11, 1)
    rng = np.random.default_rng(99)
    for case in range(40):
        a, b = random_pair(rng, 20, 600)
        assert_same(a, b, scheme, int(rng.choice([5, 15, 60])), budgets=(500,) if case % 4 == 0 else ())


def test_planted_three_regions_equal_cpu():
    scheme = ScoringScheme.dna()
    query, target = planted_regions(np.random.default_rng(11))
    result = assert_same(query, target, scheme, default_block_penalty(scheme), budgets=(1, 3000))
    assert len(result.matching_regions) == 3 and len(result.difference_blocks) == 2


def test_tiny_budgets_cross_many_bands_and_levels(tiles):
    rng = np.random.default_rng(17)
    scheme = ScoringScheme.dna()
    for case in range(8):
        a, b = random_pair(rng, 4, 1500)
        # Budget 1: one row per band and one saved row per level (many levels); 5000 and
        # 40000: bands of a few rows, checkpoints at band boundaries or one extra level.
        assert_same(a, b, scheme, int(rng.choice([5, 20, 50])), budgets=(1, 5000, 40000))


@pytest.mark.long_cpu_reference
def test_related_100_kbp_pair_equals_cpu():
    scheme = ScoringScheme.dna()
    query, target = related_pair(100_000, 100_000, 0.02, seed=3)
    rng = np.random.default_rng(3)
    # Unrelated stretches on both sides give difference blocks.
    for start in (20_000, 55_000, 80_000):
        query[start:start + 3000] = rng.integers(0, 4, 3000)
    target[40_000:42_000] = rng.integers(0, 4, 2000)
    d = default_block_penalty(scheme)
    expected = syntenic_align(query, target, scheme, d)
    assert len(expected.difference_blocks) >= 3
    assert syntenic_score(query, target, scheme, d, backend="gpu") == expected.score
    assert syntenic_align(query, target, scheme, d, backend="gpu") == expected


def test_tall_narrow_pairs_take_the_default_tile_choice():
    # Bands of at least NARROW_MIN_TILE_ROWS tile rows (here the score sweep and the one
    # direction band of each pair) use narrow tiles, the traceback's thin bands wide ones.
    rng = np.random.default_rng(23)
    scheme = ScoringScheme.dna()
    rows = gpu_syntenic.NARROW_MIN_TILE_ROWS * TILE_ROWS + 17
    for width in (1, 300, 2000):
        a, b = related_pair(rows, width, 0.05, seed=int(rng.integers(1000)))
        assert_same(a, b, scheme, 30, budgets=(50 * width,))


def test_too_little_gpu_memory_is_a_clear_error(monkeypatch):
    monkeypatch.setattr(kernels, "free_bytes", lambda: 1000)
    a = np.zeros(5000, np.uint8)
    with pytest.raises(kernels.GpuMemoryError, match="MiB"):
        syntenic_score(a, a, ScoringScheme.dna(), 20, backend="gpu")


def _outputs(prefix: str) -> dict:
    """Every output file's bytes, the block table's command line left out."""
    files = {}
    for suffix in ("blocks.tsv", "query.bed", "target.bed", "paf", "dotplot.png"):
        with open(f"{prefix}.{suffix}", "rb") as handle:
            data = handle.read()
        if suffix == "blocks.tsv":
            data = b"".join(line for line in data.splitlines(keepends=True)
                            if not line.startswith(b"# command:"))
        files[suffix] = data
    return files


def test_cli_gpu_outputs_equal_cpu_outputs_on_the_demo_genomes(tmp_path):
    from gpualign_plugin.cli.main import main

    query = os.path.join(RESOURCES, "strainA.fa")
    target = os.path.join(RESOURCES, "lambda.fa")
    outputs = {}
    for backend in ("cpu", "gpu"):
        prefix = str(tmp_path / backend)
        stats = tmp_path / f"{backend}.json"
        assert main(["syntenic", "-q", query, "-t", target, "-o", prefix, "--backend", backend,
                     "--stats", str(stats)]) == 0
        outputs[backend] = _outputs(prefix)
        with open(stats) as handle:
            assert json.load(handle)["engine"] == backend
    assert outputs["gpu"] == outputs["cpu"]


def test_cli_gpu_minus_strand_pair_outputs_equal_cpu_outputs(tmp_path):
    # The strand is handled before the engine (the reverse complement goes in), so both
    # engines must write the same minus-strand outputs.
    from minus_strand import TARGET_ID, write_case

    from gpualign_plugin.cli.main import main

    q_path, t_path, _, _ = write_case(str(tmp_path))
    pairs = tmp_path / "pairs.txt"
    pairs.write_text(f"ctg_minus {TARGET_ID} -\n")
    outputs = {}
    for backend in ("cpu", "gpu"):
        prefix = str(tmp_path / backend)
        assert main(["syntenic", "-q", q_path, "-t", t_path, "-o", prefix, "--pairs", str(pairs),
                     "--backend", backend]) == 0
        outputs[backend] = _outputs(prefix)
    assert outputs["gpu"] == outputs["cpu"]
    assert all(line.split(b"\t")[4] == b"-" for line in outputs["gpu"]["paf"].splitlines())
