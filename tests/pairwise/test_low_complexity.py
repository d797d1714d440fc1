"""Low-complexity masking (DUST scores) and placement's rule that no piece is reported on the
strength of low-complexity bases alone (docs/ALGORITHMS.md, "Local placement")."""

from __future__ import annotations

import os
import random

import numpy as np
import oracles
import pytest
from paths import DATA

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


@pytest.mark.parametrize("text", ["A" * 42, "A" * 43, "A" * 44, "C" + "A" * 43, "A" * 30 + "C" + "A" * 30,
                                  "GT" + "T" * 41 + "G" + "T" * 20, "ACGT" * 3 + "G" * 45 + "ACGT" * 3])
def test_the_mask_is_the_definitions_around_the_fewest_bases_that_can_score(text):
    assert mask_of(text) == oracles.dust_mask(text)


def test_long_homopolymers_are_masked_and_random_sequence_is_not():
    rng = np.random.default_rng(3)
    flank = "".join(rng.choice(list("ACGT"), 300))
    mask = mask_of(flank + "A" * 80 + flank)
    assert all(mask[300:380]) and not any(mask[:280]) and not any(mask[400:])
    assert not any(mask_of("A" * 40))      # 38 triplets score 19: under the level
    assert not any(mask_of("AT" * 60))     # DUST's score of a dinucleotide repeat is about 15
    assert not any(mask_of("".join(rng.choice(list("ACGT"), 5000))))


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
