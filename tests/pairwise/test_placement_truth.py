"""Local placement against the truth: a simulated rearranged strain cut into contigs, variant
calling on our BAM with bcftools; and unrelated sequences, which must come out unmapped."""

from __future__ import annotations

import random
import shutil
import subprocess

import numpy as np
import pysam
import pytest
from paths import REPO

from gpualign_plugin.cli.main import main
from gpualign_plugin.compare.simulate import (SimulationParameters,
                                              simulate_genome)
from gpualign_plugin.scoring import reverse_complement_text

pytestmark = pytest.mark.skipif(shutil.which("bcftools") is None, reason="bcftools is not installed")


def lambda_text() -> str:
    with open(f"{REPO}/resources/genomes/lambda.fa") as handle:
        return "".join(line.strip() for line in handle if not line.startswith(">"))


def strain_contigs(reference: str, seed: int):
    """A strain of ``reference`` with every large event, cut into contigs of random orientation;
    returns the contigs and the planted SNPs as ``{1-based reference position: alt base}``."""
    params = SimulationParameters(inversion_length=1200, deletion_length=600, insertion_length=600,
                                  transposition_length=1000, substitution_rate=0.02)
    strain, events = simulate_genome([("ref", reference)], params, seed=seed, prefix="strain_")
    inversion = next(e for e in events if e.event == "inversion")
    complement = str.maketrans("ACGT", "TGCA")
    snps = {}
    for event in events:
        if event.event == "substitution" and event.ref_start >= 0:
            alt = event.detail.split(">")[1]
            if inversion.ref_start <= event.ref_start < inversion.ref_end:
                alt = alt.translate(complement)  # the truth table gives the strain's strand
            snps[event.ref_start + 1] = alt
    rng = random.Random(seed)
    text, contigs, start = strain[0][1], [], 0
    while start < len(text):
        piece = text[start:start + rng.randint(2500, 5000)]
        start += len(piece)
        contigs.append(reverse_complement_text(piece) if rng.random() < 0.5 else piece)
    return contigs, snps


def called_snps(bam: str, reference: str) -> dict[int, str]:
    pileup = subprocess.run(["bcftools", "mpileup", "-Ou", "-f", reference, bam], check=True,
                            capture_output=True).stdout
    calls = subprocess.run(["bcftools", "call", "-mv", "--ploidy", "1", "-Ov"], input=pileup,
                           check=True, capture_output=True).stdout.decode()
    snps = {}
    for line in calls.splitlines():
        if not line.startswith("#"):
            fields = line.split("\t")
            if len(fields[3]) == 1 and len(fields[4]) == 1:
                snps[int(fields[1])] = fields[4]
    return snps


def test_bcftools_on_placed_contigs_of_a_rearranged_strain_finds_the_planted_snps(tmp_path):
    reference = lambda_text()[:20000]
    contigs, planted = strain_contigs(reference, seed=3)
    (tmp_path / "ref.fa").write_text(f">ref\n{reference}\n")
    (tmp_path / "contigs.fa").write_text("".join(f">contig{k}\n{c}\n" for k, c in enumerate(contigs)))
    bam = str(tmp_path / "contigs.bam")
    assert main(["pairwise", "-q", str(tmp_path / "contigs.fa"), "-t", str(tmp_path / "ref.fa"),
                 "--out", bam, "--backend", "cpu"]) == 0
    with pysam.AlignmentFile(bam) as handle:
        records = list(handle)
    assert any(r.is_supplementary for r in records) and any(r.is_reverse for r in records)
    assert not any(r.is_unmapped for r in records)
    called = called_snps(bam, str(tmp_path / "ref.fa"))
    found = sum(called.get(position) == alt for position, alt in planted.items())
    false = sum(planted.get(position) != alt for position, alt in called.items())
    assert len(planted) > 300
    assert found >= 0.99 * len(planted), (found, len(planted))
    assert false <= 0.01 * len(called), (false, len(called))


def test_unrelated_sequences_of_realistic_size_are_written_unmapped(tmp_path):
    reference = lambda_text()
    rng = np.random.default_rng(4)
    composition = np.array([reference.count(b) for b in "ACGT"], dtype=float) / len(reference)
    queries = ["".join(rng.choice(list("ACGT"), 6000, p=composition)) for _ in range(2)]
    queries.append(reference[30000:36000][::-1])  # reversed, not complemented: same composition
    (tmp_path / "ref.fa").write_text(f">lambda\n{reference}\n")
    (tmp_path / "q.fa").write_text("".join(f">u{k}\n{q}\n" for k, q in enumerate(queries)))
    bam, paf = str(tmp_path / "u.bam"), tmp_path / "u.paf"
    assert main(["pairwise", "-q", str(tmp_path / "q.fa"), "-t", str(tmp_path / "ref.fa"),
                 "--out", bam, "--out", str(paf), "--backend", "cpu"]) == 0
    with pysam.AlignmentFile(bam) as handle:
        records = list(handle)
    assert [(r.query_name, r.is_unmapped, r.query_length) for r in records] == \
        [("u0", True, 6000), ("u1", True, 6000), ("u2", True, 6000)]
    assert paf.read_text() == ""
