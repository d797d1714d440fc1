"""Genome comparison: planted events of simulated strains come back classified correctly."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from gpualign_plugin.compare.api import compare_genomes
from gpualign_plugin.compare.simulate import SimulationParameters, simulate_genome
from gpualign_plugin.model import Cigar, SyntenicAlignment, SyntenicBlock
from gpualign_plugin.scoring import ScoringScheme
from gpualign_plugin.syntenic.api import syntenic

SCHEME = ScoringScheme.dna()
EVENTS = dict(inversion_length=400, deletion_length=300, insertion_length=350,
              transposition_length=450)


def random_dna(length: int, seed: int) -> str:
    rng = np.random.default_rng(seed)
    return "".join(rng.choice(list("ACGT"), size=length))


def compare(seed: int, substitution_rate: float):
    reference = random_dna(8000, seed)
    params = SimulationParameters(substitution_rate=substitution_rate, indel_rate=0.0, **EVENTS)
    (strain,), events = simulate_genome([("ref", reference)], params, seed, prefix="s_")
    query = SCHEME.encode(strain[0], strain[1])
    target = SCHEME.encode("ref", reference)
    alignment = syntenic(query, target, SCHEME, 50)
    comparison = compare_genomes([alignment], {query.id: query}, {target.id: target}, SCHEME)
    return comparison, {event.event: event for event in events}, events, alignment


def close(a, b, tolerance=12):
    return abs(a - b) <= tolerance


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_planted_rearrangements_are_classified(seed):
    comparison, large, _, _ = compare(seed, substitution_rate=0.0)
    kinds = [d.kind for d in comparison.differences]
    assert sorted(kinds) == ["deletion", "insertion", "inversion", "relocation", "relocation"]
    by_kind = {d.kind: d for d in comparison.differences}
    inversion = by_kind["inversion"]
    assert close(inversion.target_start, large["inversion"].ref_start)
    assert close(inversion.target_end, large["inversion"].ref_end)
    assert close(by_kind["deletion"].target_start, large["deletion"].ref_start)
    assert close(by_kind["deletion"].target_span, 300)
    assert close(by_kind["insertion"].query_start, large["insertion"].strain_start)
    assert close(by_kind["insertion"].query_span, 350)
    relocations = [d for d in comparison.differences if d.kind == "relocation"]
    first, second = relocations
    assert comparison.differences[first.partner] == second
    assert comparison.differences[second.partner] == first
    moved = large["transposition"]
    assert any(close(d.target_start, moved.ref_start) and close(d.target_span, 450)
               for d in relocations)
    assert any(close(d.query_start, moved.strain_start) and close(d.query_span, 450)
               for d in relocations)
    # No point events: every aligned column is identical.
    assert comparison.snps == 0 and comparison.indels == 0
    assert comparison.identity == 100.0


def test_snps_are_counted_from_the_matching_regions():
    comparison, _, events, alignment = compare(5, substitution_rate=0.01)
    matches = [b for b in alignment.blocks if b.kind == "match"]
    inside = [e for e in events if e.event == "substitution" and any(
        b.query_start <= e.strain_start < b.query_end for b in matches)]
    # Planted substitutions inside matching regions are the SNPs; one right at a region's
    # edge may instead be left to the neighbouring block.
    assert len(inside) - 4 <= comparison.snps <= len(inside)
    assert comparison.identity == pytest.approx(
        100.0 * comparison.identical_columns / comparison.columns)


def test_counts_of_a_hand_made_alignment():
    query = SCHEME.encode("q", "ACGTACGTAC" + "T" * 60 + "ACGTA")
    target = SCHEME.encode("t", "ACGAACGTAC" + "ACGTA")
    blocks = (SyntenicBlock("match", 0, 10, 0, 10, 12, Cigar.from_string("3=1X6=")),
              SyntenicBlock("difference", 10, 70, 10, 10, -50),
              SyntenicBlock("match", 70, 75, 10, 15, 10, Cigar.from_string("5=")))
    alignment = SyntenicAlignment("q", "t", 75, 15, -28, 50, blocks)
    unaligned = SCHEME.encode("u", "ACGT" * 5)
    comparison = compare_genomes([alignment], {"q": query, "u": unaligned}, {"t": target}, SCHEME)
    assert (comparison.query_records, comparison.aligned_query_records) == (2, 1)
    assert (comparison.query_bases, comparison.aligned_query_bases) == (95, 15)
    assert comparison.snps == 1 and comparison.columns == 15
    assert [d.kind for d in comparison.differences] == ["insertion"]
    assert comparison.count("insertion") == (1, 60, 0)


def test_cli_report_and_differences_table(tmp_path):
    reference = random_dna(8000, 9)
    params = SimulationParameters(substitution_rate=0.005, indel_rate=0.0, **EVENTS)
    (strain,), _ = simulate_genome([("ref", reference)], params, 9, prefix="s_")
    (tmp_path / "ref.fa").write_text(f">ref\n{reference}\n")
    (tmp_path / "q.fa").write_text(f">{strain[0]}\n{strain[1]}\n")
    main = [sys.executable, "-m", "gpualign_plugin.cli.main"]
    subprocess.run(main + ["syntenic", "-q", str(tmp_path / "q.fa"), "-t", str(tmp_path / "ref.fa"),
                           "-o", str(tmp_path / "out")], check=True, capture_output=True)
    result = subprocess.run(main + ["genome-summary", "--blocks", str(tmp_path / "out.blocks.tsv"),
                                    "-q", str(tmp_path / "q.fa"), "-t", str(tmp_path / "ref.fa"),
                                    "-o", str(tmp_path / "summary.txt"),
                                    "--differences", str(tmp_path / "diff.tsv")],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    report = (tmp_path / "summary.txt").read_text()
    for line in ("Inversions", "Relocations", "Insertions", "Deletions", "TotalSNPs",
                 "TotalIndels", "AlignedBases", "Identity"):
        assert line in report
    kinds = [line.split("\t")[2] for line in (tmp_path / "diff.tsv").read_text().splitlines()[1:]]
    assert sorted(kinds) == ["deletion", "insertion", "inversion", "relocation", "relocation"]


def test_cli_names_an_unknown_record(tmp_path):
    (tmp_path / "ref.fa").write_text(">ref\nACGTACGTACGT\n")
    (tmp_path / "q.fa").write_text(">q\nACGTACGTACGT\n")
    (tmp_path / "b.tsv").write_text("other\tref\t1\tmatch\t0\t12\t0\t12\t12\t12\t24\t100.00\t12=\n")
    result = subprocess.run([sys.executable, "-m", "gpualign_plugin.cli.main", "genome-summary",
                             "--blocks", str(tmp_path / "b.tsv"), "-q", str(tmp_path / "q.fa"),
                             "-t", str(tmp_path / "ref.fa"), "-o", str(tmp_path / "s.txt")],
                            capture_output=True, text=True)
    assert result.returncode == 2
    assert "b.tsv: line 1: query_id 'other' is not a record" in result.stderr
    assert not (tmp_path / "s.txt").exists()
