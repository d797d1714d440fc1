"""``gpualign compare`` on the GPU gives the CPU's comparison: regions, differences, variants, files.

Every test here needs a GPU (marker ``gpu``; conftest.py skips them elsewhere).
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from strains import collapsed_repeat, fragments, simulated
from test_compare_cli import report_rows

from gpualign_plugin.compare.api import compare_genomes
from gpualign_plugin.scoring import ScoringScheme
from paths import DATA, RESOURCES

pytestmark = pytest.mark.gpu

SCHEME = ScoringScheme.dna()


def summary(comparison):
    return ([(r.id, r.role, r.query_id, r.strand, r.query_start, r.query_end, r.target_start,
              r.target_end, r.alignment.score, r.alignment.blocks) for r in comparison.regions],
            comparison.blocks, comparison.differences, comparison.variants, comparison.copies)


def test_gpu_comparison_equals_cpu_with_a_collapsed_repeat():
    reference, unique, repeat = collapsed_repeat()
    queries = [SCHEME.encode(f"c{k}", text) for k, text in enumerate(unique + [repeat])]
    targets = [SCHEME.encode("ref", reference)]
    cpu = compare_genomes(queries, targets, SCHEME, backend="cpu")
    gpu = compare_genomes(queries, targets, SCHEME, backend="gpu")
    assert summary(gpu) == summary(cpu)
    assert len(cpu.copies) == 2


def test_gpu_comparison_equals_cpu_on_a_fragmented_strain():
    reference, strain, events = simulated(5)
    contigs, _ = fragments(strain, events, 5)
    queries = [SCHEME.encode(name, text) for name, text in contigs]
    targets = [SCHEME.encode("ref", reference)]
    cpu = compare_genomes(queries, targets, SCHEME, backend="cpu")
    gpu = compare_genomes(queries, targets, SCHEME, backend="gpu")
    assert summary(gpu) == summary(cpu)
    assert len(cpu.differences) == 4


@pytest.mark.parametrize("genome", ["strainA", "strainB"])
def test_cli_gpu_outputs_equal_cpu_on_the_demo_strains(tmp_path, genome):
    genomes = os.path.join(RESOURCES, "genomes")
    outputs = {}
    for backend in ("cpu", "gpu"):
        prefix = str(tmp_path / backend)
        subprocess.run([sys.executable, "-m", "gpualign_plugin.cli.main", "compare", "--query",
                        os.path.join(genomes, f"{genome}.fa"), "--target",
                        os.path.join(genomes, "lambda.fa"), "--prefix", prefix, "--backend",
                        backend], check=True, capture_output=True)
        outputs[backend] = {
            suffix: [line for line in open(f"{prefix}.{suffix}")
                     if not line.startswith("##gpualignCommand")]
            for suffix in ("report", "differences.tsv", "vcf")}
    assert outputs["gpu"] == outputs["cpu"]
    assert any(line.startswith("InversionEvents") and line.split()[1] == "1"
               for line in outputs["cpu"]["report"])


def test_a_real_bacterial_draft_on_its_species_reference_as_dnadiff_reports_it(tmp_path):
    """Chlamydia trachomatis strain Swab6, a 15-contig draft (``tests/data/chlamydia``), against
    the complete D-LC genome and its plasmid, on the GPU (15 s on an H200; the CPU passed 9
    minutes on 16 cores). dnadiff (MUMmer 3.23, measured): the same 5 contigs and 1 record
    aligned, 24 1-to-1 and 27 M-to-M alignments, breakpoints 52 / 44, translocations 5 / 0,
    inversions 2 / 2, 3,527 GSNPs; it finds 5,673 SNPs, 5,658 of them among our 5,835, and
    relocations 3 / 6 against our 3 / 4."""
    chlamydia = os.path.join(DATA, "chlamydia")
    prefix = tmp_path / "swab6"
    subprocess.run([sys.executable, "-m", "gpualign_plugin.cli.main", "compare", "-q",
                    os.path.join(chlamydia, "Swab6_GCF_001213045.1.fa.gz"), "-t",
                    os.path.join(chlamydia, "D-LC_GCF_000093005.1.fa.gz"), "-p", str(prefix), "--backend", "gpu"],
                   check=True, capture_output=True)
    rows = report_rows(f"{prefix}.report")
    expected = {"AlignedSeqs": ("1(50.00%)", "5(33.33%)"), "AlignedBases": ("1036540(98.72%)", "1031299(98.79%)"),
                "1-to-1": ("24", "24"), "M-to-M": ("27", "27"), "Breakpoints": ("52", "44"),
                "Relocations": ("3", "4"), "Translocations": ("5", "0"), "Inversions": ("2", "2"),
                "TotalSNPs": ("5835", "5835"), "TotalGSNPs": ("3527", "3527")}
    assert {label: rows[label] for label in expected} == expected
