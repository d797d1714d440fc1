"""dnadiff's 1-to-1 set on a real metagenomic draft (QUAST's test data,
``tests/data/quast_meta/SOURCES.md``): 45 contigs on three related Lactobacillus references,
where conserved genes align to several references and contigs overlap on each."""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass

import pytest

from paths import DATA

from gpualign_plugin.compare.features import lis_chain

DRAFT = os.path.join(DATA, "quast_meta")


@dataclass(eq=False)
class DeltaAlignment:
    """One alignment of a MUMmer delta file, in the fields :func:`lis_chain` reads (0-based, half-open)."""

    target_id: str
    target_start: int
    target_end: int
    query_id: str
    query_start: int
    query_end: int
    identity: float


def read_delta(path) -> list[DeltaAlignment]:
    """The alignments of a nucmer delta file, with MUMmer's identity (``DeltaAlignment_t::read``:
    errors over the reference span plus one per query gap)."""
    alignments, lines = [], open(path).read().split("\n")[2:]
    reference = query = None
    k = 0
    while k < len(lines):
        fields = lines[k].split()
        k += 1
        if lines[k - 1].startswith(">"):
            reference, query = fields[0][1:], fields[1]
        elif len(fields) == 7:
            r1, r2, q1, q2, errors = map(int, fields[:5])
            total = abs(r2 - r1) + 1
            while (step := int(lines[k])) != 0:
                total += step < 0
                k += 1
            k += 1
            alignments.append(DeltaAlignment(reference, min(r1, r2) - 1, max(r1, r2), query, min(q1, q2) - 1,
                                             max(q1, q2), 100.0 * (total - errors) / total))
    return alignments


@pytest.mark.tools("dnadiff")
def test_the_one_to_one_chains_are_delta_filters(tmp_path):
    # dnadiff's nucmer alignments of the draft (108: a conserved gene's contig aligns to all
    # three references, and contigs overlap on them), filtered by our chains and by its
    # delta-filter -1.
    subprocess.run(["dnadiff", "-p", str(tmp_path / "d"), os.path.join(DRAFT, "references.fa"),
                    os.path.join(DRAFT, "contigs.fa")], check=True, capture_output=True)
    every = read_delta(tmp_path / "d.delta")
    kept = lis_chain(every, "target") & lis_chain(every, "query")

    def key(a):
        return a.target_id, a.target_start, a.target_end, a.query_id, a.query_start, a.query_end

    ours = sorted(key(a) for a in every if id(a) in kept)
    theirs = sorted(key(a) for a in read_delta(tmp_path / "d.1delta"))
    assert len(every) > 3 * len(theirs) > 60
    assert ours == theirs
