"""Local placement on the GPU: the same records as the plain-Python oracle and as the CPU engine."""

from __future__ import annotations

import math

import oracles
import pytest
from test_placement import PARAMETERS, SCHEME, _records, placement_case
from test_placement_truth import lambda_text, strain_contigs

from gpualign_plugin.pairwise.api import place_local

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("seed", range(2))
@pytest.mark.parametrize("zdrop_bits", [12.0, math.inf])
def test_gpu_local_placement_equals_the_oracle_record_for_record(seed, zdrop_bits):
    queries, targets = placement_case(seed)
    placed = place_local([SCHEME.encode(*q) for q in queries], [SCHEME.encode(*t) for t in targets],
                         SCHEME, backend="gpu", zdrop_bits=zdrop_bits)
    zdrop = zdrop_bits * math.log(2) / PARAMETERS.lam
    assert _records(placed) == oracles.local_placement(queries, targets, SCHEME, PARAMETERS, 1e-5,
                                                       zdrop)


def test_gpu_and_cpu_place_the_contigs_of_a_rearranged_strain_identically():
    reference = lambda_text()[:20000]
    contigs, _ = strain_contigs(reference, seed=3)
    queries = [SCHEME.encode(f"contig{k}", c) for k, c in enumerate(contigs)]
    targets = [SCHEME.encode("ref", reference)]
    gpu = place_local(queries, targets, SCHEME, backend="gpu")
    cpu = place_local(queries, targets, SCHEME, backend="cpu")
    assert gpu == cpu and any(a.is_supplementary for a in gpu)
    assert [(a.evalue, a.bit_score, a.mapq) for a in gpu] == [(a.evalue, a.bit_score, a.mapq) for a in cpu]
