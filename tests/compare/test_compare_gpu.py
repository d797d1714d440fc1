"""``gpualign compare`` on the GPU gives the CPU's comparison: regions, differences, variants, files.

Every test here needs a GPU (marker ``gpu``; conftest.py skips them elsewhere).
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from strains import collapsed_repeat, fragments, simulated

from gpualign_plugin.compare.api import compare_genomes
from gpualign_plugin.scoring import ScoringScheme
from paths import RESOURCES

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
