"""Simulated strains for the genome comparison tests: a small reference, a rearranged strain,
and the strain cut into contigs of random orientation."""

from __future__ import annotations

import numpy as np

from gpualign_plugin.compare.simulate import SimulationParameters, simulate_genome
from gpualign_plugin.scoring import reverse_complement_text

EVENTS = dict(inversion_length=600, deletion_length=400, insertion_length=500,
              transposition_length=700)
LARGE = ("inversion", "deletion", "insertion", "transposition")


def random_dna(length: int, seed: int) -> str:
    rng = np.random.default_rng(seed)
    return "".join(rng.choice(list("ACGT"), size=length))


def collapsed_repeat():
    """A reference holding a 1.5 kbp repeat three times between four unique stretches.

    Returns ``(reference, unique, repeat)``: an assembly of ``unique`` plus ``repeat`` once
    collapses the repeat, as short-read assemblies do.
    """
    rng = np.random.default_rng(12)

    def dna(length):
        return "".join(rng.choice(list("ACGT"), size=length))

    repeat = dna(1500)
    unique = [dna(3000), dna(3500), dna(2500), dna(3000)]
    reference = unique[0] + repeat + unique[1] + repeat + unique[2] + repeat + unique[3]
    return reference, unique, repeat


def simulated(seed: int):
    """A 12 kbp reference and a strain carrying every large event and point mutations."""
    reference = random_dna(12000, 1000 + seed)
    params = SimulationParameters(substitution_rate=0.01, indel_rate=0.001, **EVENTS)
    (strain,), events = simulate_genome([("ref", reference)], params, seed, prefix="s_")
    return reference, strain[1], events


def fragments(strain: str, events, seed: int, cuts=None):
    """Cut the strain into contigs of random orientation (half of them reversed).

    By default the cuts lie half-way between neighbouring large events. Returns the
    contigs as ``(id, text)`` and, per contig, ``(strain start, strain end, reversed)``.
    """
    if cuts is None:
        spans = sorted((e.strain_start, e.strain_end) for e in events if e.event in LARGE)
        cuts = [(a[1] + b[0]) // 2 for a, b in zip(spans, spans[1:])][:3]
    bounds = [0] + list(cuts) + [len(strain)]
    flips = np.random.default_rng(seed).permutation([True, False] * (len(bounds) // 2))
    contigs, where = [], {}
    for k, (start, end) in enumerate(zip(bounds, bounds[1:])):
        text = strain[start:end]
        name = f"contig{k}"
        flipped = bool(flips[k])
        contigs.append((name, reverse_complement_text(text) if flipped else text))
        where[name] = (start, end, flipped)
    return contigs, where


def to_strain(where, contig: str, start: int, end: int) -> tuple[int, int]:
    """A contig interval in the strain's coordinates."""
    offset, stop, flipped = where[contig]
    if flipped:
        return stop - end, stop - start
    return offset + start, offset + end
