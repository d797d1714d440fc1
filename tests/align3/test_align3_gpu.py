"""The GPU three-sequence engine against the CPU engine: identical direction bytes, rows and scores.

Every test here needs a GPU (marker ``gpu``; conftest.py skips them elsewhere). The
sloped-plane sweep must write the CPU sweep's direction bytes byte for byte (checked
directly, also across slabs and across bands of the ring), so the shared traceback
gives the same :class:`MultipleAlignment`: short random triples (DNA, protein,
tie-heavy two-letter ones, unequal lengths, a sequence of length 1), memory budgets
that force many slabs, related proteins of 300-500 residues, minus-strand regions,
and the CLI's outputs byte for byte.
"""

from __future__ import annotations

import os
import random

import numpy as np
import pytest

from gpualign_plugin.align3.api import Region, align3, align3_score, memory_needed
from gpualign_plugin.align3.cpu import sweep as cpu_sweep
from gpualign_plugin.cli.main import main
from gpualign_plugin.io.fasta import read_fasta
from gpualign_plugin.scoring import ScoringScheme
from paths import RESOURCES

pytestmark = pytest.mark.gpu

DNA = ScoringScheme.dna()
TIES = ScoringScheme.dna(match=1, mismatch=-1)
PROTEIN = ScoringScheme.from_matrix("BLOSUM62")
AMINO = "ARNDCQEGHILKMFPSTWYV"
RESOURCES = os.path.join(RESOURCES, "triplets")


def encode(texts, scheme):
    return [scheme.encode(f"s{i}", t) for i, t in enumerate(texts)]


def random_text(rng, letters, length):
    return "".join(rng.choice(letters) for _ in range(length))


def mutate(rng, text, letters, rate):
    """A relative of ``text``: substitutions, insertions and deletions at ``rate`` each."""
    out = []
    for ch in text:
        roll = rng.random()
        if roll < rate:
            continue
        out.append(rng.choice(letters) if roll < 2 * rate else ch)
        if rng.random() < rate:
            out.append(rng.choice(letters))
    return "".join(out) or text[:1]


def assert_same(sequences, scheme, gap, memory_budget=None):
    """GPU and CPU alignments (and scores) are equal field by field."""
    extra = {} if memory_budget is None else {"memory_budget": memory_budget}
    expected = align3(*sequences, scheme, gap, backend="cpu", **extra)
    got = align3(*sequences, scheme, gap, backend="gpu", **extra)
    assert (got.score, got.rows) == (expected.score, expected.rows)
    assert got == expected
    return expected


def gpu_dirs(codes, scheme, gap, plane, first, last):
    from gpualign_plugin.align3.gpu import PlaneSweep

    dirs = np.full((last - first + 1, codes[1].size + 1, codes[2].size + 1), 255, dtype=np.uint8)
    PlaneSweep(codes, scheme, gap)(plane, first, last, dirs=dirs)
    return dirs


@pytest.mark.parametrize("band", [None, 1, 3])
def test_direction_bytes_and_planes_equal_the_cpu_sweep(band, monkeypatch):
    from gpualign_plugin.align3 import gpu as gpu

    if band is not None:  # cut each slab into bands of `band` planes: the ring restarts often
        monkeypatch.setattr(gpu, "band_height", lambda m: band)
    rng = random.Random(3 + (band or 0))
    for case in range(30):
        scheme, letters = [(DNA, "ACGT"), (TIES, "AC"), (PROTEIN, AMINO)][case % 3]
        lengths = [rng.randint(1, 40) for _ in range(3)]
        codes = tuple(s.codes for s in encode([random_text(rng, letters, x) for x in lengths], scheme))
        l, m, n = lengths
        gap = rng.randint(0, 6)
        first = rng.randint(0, l)
        last = rng.randint(first, l)
        start = np.zeros((m + 1, n + 1), dtype=np.int32)
        if first > 0:
            cpu_sweep(start, codes, scheme, gap, 0, first - 1)
        cpu_plane, gpu_plane = start.copy(), start.copy()
        cpu_dirs = np.full((last - first + 1, m + 1, n + 1), 255, dtype=np.uint8)
        cpu_sweep(cpu_plane, codes, scheme, gap, first, last, dirs=cpu_dirs)
        got = gpu_dirs(codes, scheme, gap, gpu_plane, first, last)
        assert np.array_equal(gpu_plane, cpu_plane)
        assert np.array_equal(got, cpu_dirs), np.argwhere(got != cpu_dirs)[:5]


@pytest.mark.parametrize("scheme,letters,gap", [(DNA, "ACGTacgt", 5), (DNA, "ACGT", 0),
                                                (TIES, "AC", 2), (TIES, "AC", 1),
                                                (PROTEIN, AMINO, 8), (PROTEIN, AMINO, 3)])
def test_random_short_triples_equal_cpu(scheme, letters, gap):
    rng = random.Random(len(letters) * 17 + gap)
    for case in range(50):
        lengths = [rng.randint(1, 60) for _ in range(3)]
        if case % 10 == 0:
            lengths[case % 3] = 1
        sequences = encode([random_text(rng, letters, x) for x in lengths], scheme)
        expected = assert_same(sequences, scheme, gap)
        assert align3_score(*sequences, scheme, gap, backend="gpu") == expected.score


def test_lengths_one_and_two():
    for texts in (["A", "A", "A"], ["A", "C", "G"], ["AC", "A", "C"], ["A", "CA", "AC"], ["G", "G", "CC"]):
        for scheme, gap in ((DNA, 5), (TIES, 0), (TIES, 1)):
            assert_same(encode(texts, scheme), scheme, gap)


def test_small_budgets_force_many_slabs():
    rng = random.Random(29)
    for case in range(12):
        scheme, letters = [(DNA, "ACGT"), (TIES, "AC"), (PROTEIN, AMINO)][case % 3]
        base = random_text(rng, letters, rng.randint(30, 90))
        texts = [mutate(rng, base, letters, 0.1) for _ in range(3)]
        sequences = encode(texts, scheme)
        lengths = tuple(len(t) for t in texts)
        for height in (1, 2, 5, max(1, lengths[0] // 3)):
            assert_same(sequences, scheme, 3 if scheme is not PROTEIN else 8,
                        memory_budget=memory_needed(lengths, height))


def test_related_proteins_of_300_to_500_residues():
    records = [read_fasta(os.path.join(RESOURCES, f"{name}.fa"), PROTEIN)[0]
               for name in ("queries", "setB", "setC")]
    assert_same(records, PROTEIN, 8)
    rng = random.Random(41)
    base = random_text(rng, AMINO, 480)
    texts = [mutate(rng, base, AMINO, 0.08) for _ in range(3)]
    sequences = encode(texts, PROTEIN)
    assert_same(sequences, PROTEIN, 8)
    lengths = tuple(len(t) for t in texts)
    assert_same(sequences, PROTEIN, 8, memory_budget=memory_needed(lengths, 64))


def test_minus_strand_regions_equal_cpu():
    rng = random.Random(13)
    source = DNA.encode("chr", random_text(rng, "ACGTacgt", 400))
    others = encode([random_text(rng, "ACGT", 150), random_text(rng, "ACGT", 170)], DNA)
    for start, end in ((0, 160), (37, 211), (250, 400)):
        region = Region(source, start, end, "-", source="g.chr")
        assert_same([region, *others], DNA, 4)
        assert_same([others[0], region, Region(source, start, end, "+")], DNA, 4,
                    memory_budget=memory_needed((150, end - start, end - start), 20))


def _cli_outputs(tmp_path, backend, fasta_args, extra):
    out = tmp_path / backend
    out.mkdir()
    paths = [str(out / name) for name in ("t.maf", "t.afa", "t.aln")]
    assert main(["align3", "--fasta", *fasta_args, "--maf", paths[0], "--fasta-out", paths[1],
                 "--clustal", paths[2], "--backend", backend, *extra]) == 0
    texts = []
    for path in paths:
        with open(path) as handle:
            # The MAF's comment line holds the command line, which names the backend.
            texts.append("".join(line for line in handle if not line.startswith("# gpualign")))
    return texts


@pytest.mark.parametrize("extra", [[], ["--memory-budget", "8"]])  # 8 MiB: about 5 slabs
def test_cli_outputs_are_byte_identical(tmp_path, extra):
    rng = random.Random(19)
    base = random_text(rng, AMINO, 300)
    fasta = tmp_path / "trio.fa"
    fasta.write_text("".join(f">p{i} protein {i}\n{mutate(rng, base, AMINO, 0.1)}\n" for i in range(3)))
    args = [str(fasta)], ["--matrix", "BLOSUM62", *extra]
    assert _cli_outputs(tmp_path, "gpu", *args) == _cli_outputs(tmp_path, "cpu", *args)


def test_cli_triplets_and_stats_name_the_gpu(tmp_path):
    import json

    fastas = [os.path.join(RESOURCES, "globins.fa")]
    triplets = os.path.join(RESOURCES, "globins.triplets.tsv")
    results = {}
    for backend in ("cpu", "gpu"):
        maf = tmp_path / f"{backend}.maf"
        stats = tmp_path / f"{backend}.json"
        assert main(["align3", "--fasta", *fastas, "--triplets", triplets, "--maf", str(maf),
                     "--matrix", "BLOSUM62", "--backend", backend, "--stats", str(stats)]) == 0
        results[backend] = [line for line in maf.read_text().splitlines()
                            if not line.startswith("# gpualign")]
        recorded = json.loads(stats.read_text())
        assert recorded["engine"] == backend
    assert results["gpu"] == results["cpu"]
    assert recorded["peak_gpu_memory_bytes"] > 0


def test_too_little_gpu_memory_is_a_one_line_error(tmp_path, monkeypatch, capsys):
    from gpualign_plugin.runtime import kernels

    monkeypatch.setattr(kernels, "free_bytes", lambda: 1000)
    fasta = tmp_path / "trio.fa"
    fasta.write_text(">a\nACGTACGT\n>b\nACGTTACG\n>c\nACGGT\n")
    maf = tmp_path / "t.maf"
    assert main(["align3", "--fasta", str(fasta), "--maf", str(maf), "--backend", "gpu"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "GPU memory" in err[0]
    assert not maf.exists()
