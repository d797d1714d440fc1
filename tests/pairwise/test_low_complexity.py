"""Low-complexity masking (symmetric DUST, as dustmasker) and placement's rule that no piece is reported on the
strength of low-complexity bases alone (docs/ALGORITHMS.md, "Local placement")."""

from __future__ import annotations

import os
import random

import numpy as np
import oracles
import pytest
from paths import DATA, RESOURCES

from gpualign_plugin.pairwise.api import place_local
from gpualign_plugin.pairwise.low_complexity import low_complexity_mask
from gpualign_plugin.scoring import ScoringScheme

SCHEME = ScoringScheme.dna()
WUHAN_HU_1 = os.path.join(DATA, "coronaviruses", "wuhan_hu_1.fa")


def mask_of(text: str) -> list[bool]:
    return low_complexity_mask(SCHEME.encode("x", text).codes).tolist()


@pytest.mark.parametrize("seed", range(40))
def test_the_mask_is_the_definitions(seed):
    rng = random.Random(seed)
    parts = []
    for _ in range(rng.randint(1, 6)):
        kind = rng.choice(["random", "homopolymer", "dinucleotide", "near", "n"])
        length = rng.randint(1, 90)
        if kind == "random":
            parts.append("".join(rng.choice("ACGT") for _ in range(length)))
        elif kind == "homopolymer":
            parts.append(rng.choice("ACGT") * length)
        elif kind == "dinucleotide":
            parts.append((rng.choice(["AT", "CA", "GC"]) * length)[:length])
        elif kind == "near":  # a homopolymer with a few substitutions
            parts.append("".join(c if rng.random() > 0.1 else rng.choice("ACGT") for c in "T" * length))
        else:
            parts.append("N" * rng.randint(1, 3))
    text = "".join(parts)
    assert mask_of(text) == oracles.dust_mask(text)


@pytest.mark.parametrize("text", ["A" * 9, "A" * 10, "AT" * 5, "AT" * 6, "CAG" * 30, "ACGT" * 20,
                                  "A" * 30 + "C" + "A" * 30, "GT" + "T" * 41 + "G" + "T" * 20,
                                  "ACGT" * 3 + "G" * 45 + "ACGT" * 3, "AT" * 40 + "N" + "AT" * 40])
def test_the_mask_is_the_definitions_on_short_repeats(text):
    assert mask_of(text) == oracles.dust_mask(text)


def test_homopolymers_and_microsatellites_are_masked_and_random_sequence_mostly_not():
    """The level is 20 in dustmasker's units, a score above 2: a run of 7 A's, (AT)6, (CAG)n
    are masked, as dustmasker masks them (an earlier version read the level as a score of 20
    and masked homopolymers of 43 bases or more only)."""
    rng = np.random.default_rng(3)
    flank = "".join(rng.choice(list("ACGT"), 300))
    mask = mask_of(flank + "A" * 80 + flank)
    assert all(mask[300:380]) and sum(mask[:290]) < 20 and sum(mask[390:]) < 20
    assert mask_of("CGT" + "A" * 7 + "CGT")[3:10] == [True] * 7 and not any(mask_of("CGT" + "A" * 6 + "CGT"))
    assert all(mask_of("AT" * 6)) and not any(mask_of("GC" + "AT" * 5 + "GC"))
    assert all(mask_of("CAG" * 20))
    assert np.mean(mask_of("".join(rng.choice(list("ACGT"), 20000)))) < 0.01


def dustmasker_intervals(path) -> dict:
    """dustmasker's intervals of each record of ``path``: [start, end) 0-based."""
    import subprocess

    out = subprocess.run(["dustmasker", "-in", str(path), "-outfmt", "interval"], check=True,
                         capture_output=True, text=True).stdout
    intervals, record = {}, None
    for line in out.splitlines():
        if line.startswith(">"):
            record = line[1:].split()[0]
            intervals[record] = []
        else:
            start, end = line.split(" - ")
            intervals[record].append((int(start), int(end) + 1))
    return intervals


def intervals_of(mask) -> list[tuple[int, int]]:
    found, start = [], None
    for k, masked in enumerate(list(mask) + [False]):
        if masked and start is None:
            start = k
        elif not masked and start is not None:
            found.append((start, k))
            start = None
    return found


@pytest.mark.skipif(not __import__("shutil").which("dustmasker"), reason="dustmasker (ncbi-blast+) absent")
def test_the_mask_is_dustmaskers_on_repeats_and_on_real_genomes(tmp_path):
    """Every interval dustmasker (BLAST's DUST, defaults) reports, on 150 random mixes of
    homopolymers, di- and trinucleotide repeats, AT-rich and random stretches, and on real
    genomes (lambda, SARS-CoV-2, the chimpanzee mitochondrion, a chloroplast). Sequences without
    N: dustmasker reads N as a base of a triplet where we end the run, as minimap2's sdust does."""
    rng = random.Random(7)
    records = {}
    for k in range(150):
        parts = []
        for _ in range(rng.randint(1, 8)):
            kind, length = rng.choice(["random", "homo", "di", "tri", "near", "at-rich"]), rng.randint(1, 120)
            unit = {"random": None, "homo": rng.choice("ACGT"), "di": rng.choice(["AT", "CA", "GC", "AG"]),
                    "tri": rng.choice(["CAG", "ATT", "GGC"]), "near": "AT", "at-rich": None}[kind]
            if unit is None:
                letters = "ACGT" if kind == "random" else "AATTTACG"
                parts.append("".join(rng.choice(letters) for _ in range(length)))
            else:
                text = (unit * length)[:length]
                if kind == "near":
                    text = "".join(c if rng.random() > 0.15 else rng.choice("ACGT") for c in text)
                parts.append(text)
        records[f"r{k}"] = "".join(parts)
    for path in (os.path.join(RESOURCES, "genomes", "lambda.fa"), WUHAN_HU_1,
                 os.path.join(DATA, "mitochondria", "chimp_GU112745.fa"),
                 os.path.join(DATA, "plastids", "tomato_PP952510.fa")):
        name, text = open(path).read().split("\n", 1)
        records[name[1:].split()[0]] = "".join(text.split()).upper()
    fasta = tmp_path / "all.fa"
    fasta.write_text("".join(f">{name}\n{text}\n" for name, text in records.items()))
    theirs = dustmasker_intervals(fasta)
    for name, text in records.items():
        assert intervals_of(mask_of(text)) == theirs[name], name
    assert sum(e - s for s, e in theirs["MN908947.3"]) > 0


def wuhan() -> str:
    return "".join(open(WUHAN_HU_1).read().split("\n", 1)[1].split())


def test_a_poly_a_contig_is_not_placed_on_the_reference_poly_a_tail():
    """SARS-CoV-2 ends in 33 A's; a 200-base poly-A contig matches them 33 at a time, each an
    E-value near 1e-12 by the random-sequence statistics: six stacked records with MAPQ 60
    before this rule, none now (minimap2, nucmer and blastn with DUST place nothing)."""
    queries = [SCHEME.encode("polyA", "A" * 200)]
    targets = [SCHEME.encode("MN908947.3", wuhan())]
    assert place_local(queries, targets, SCHEME, backend="cpu") == []
    counted = place_local(queries, targets, SCHEME, backend="cpu", count_low_complexity=True)
    assert len(counted) == 6 and {(a.target_start, a.target_end) for a in counted} == {(29870, 29903)}


def test_a_long_poly_a_tail_leaves_one_record():
    """The genome's last 4,903 bases with 150 A's instead of 33: the alignment runs through the
    reference's tail, and the 117 A's more are left unaligned (before: three more records
    stacked on the reference tail, and three false duplications in compare)."""
    genome = wuhan()
    contig = genome[25000:] + "A" * 117
    placed = place_local([SCHEME.encode("tail", contig)], [SCHEME.encode("MN908947.3", genome)], SCHEME,
                         backend="cpu")
    assert [(a.query_start, a.query_end, a.target_start, a.target_end, a.mapq) for a in placed] == \
        [(0, 4903, 25000, 29903, 60)]
