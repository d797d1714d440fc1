"""Real metagenomic drafts (QUAST's test data, ``tests/data/quast_meta/SOURCES.md``): 45 and 32
contigs on three related Lactobacillus references, where conserved genes align to several
references and contigs overlap on each; dnadiff's 1-to-1 set and its SNPs beside ours."""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass

import pysam
import pytest
from test_compare_cli import MAIN, dnadiff_differences, report_rows, vcf_substitutions

from paths import DATA

from gpualign_plugin.compare.features import lis_chain

DRAFT = os.path.join(DATA, "quast_meta")
REFERENCES = os.path.join(DRAFT, "references.fa")


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
@pytest.mark.parametrize("draft, alignments", [("contigs.fa", 108), ("contigs_2.fa", 75)])
def test_the_one_to_one_chains_are_delta_filters(tmp_path, draft, alignments):
    # dnadiff's nucmer alignments of the draft (a conserved gene's contig aligns to all three
    # references, and contigs overlap on them), filtered by our chains and by its delta-filter -1.
    subprocess.run(["dnadiff", "-p", str(tmp_path / "d"), REFERENCES, os.path.join(DRAFT, draft)],
                   check=True, capture_output=True)
    every = read_delta(tmp_path / "d.delta")
    assert len(every) == alignments
    kept = lis_chain(every, "target") & lis_chain(every, "query")

    def key(a):
        return a.target_id, a.target_start, a.target_end, a.query_id, a.query_start, a.query_end

    ours = sorted(key(a) for a in every if id(a) in kept)
    theirs = sorted(key(a) for a in read_delta(tmp_path / "d.1delta"))
    assert len(every) > 3 * len(theirs) > 60
    assert ours == theirs


def test_the_second_draft_places_every_contig_dnadiff_aligns_and_calls_its_snps(tmp_path):
    """QUAST's second draft, CPU. Measured with dnadiff (MUMmer 3.23): it aligns 30 of the 32
    contigs and calls 58 SNPs; we place 31, report 81 SNPs on our 1-to-1 alignments (29 against
    its 24) and write 111 substitutions to the VCF (every placed region). The 31st is the 59 bp
    NODE_34, identical to L. delbrueckii (E = 2.9e-26; MAPQ 2, as L. plantarum and L. reuteri
    each hold a copy with one mismatch), which nucmer cannot align (its clusters are at least 65
    bases). Every dnadiff SNP is one of ours
    but one: at 3,037 of L. plantarum, 16 bases from the end of NODE_16's alignment (95%
    identity), nucmer calls T>A where our alignment of the same region has a 2-base deletion
    at 3,036. ``NODE_35_specially_unaligned`` stays unplaced."""
    contigs = os.path.join(DRAFT, "contigs_2.fa")
    subprocess.run(MAIN + ["compare", "-q", contigs, "-t", REFERENCES, "-p", str(tmp_path / "g"),
                           "--backend", "cpu"], check=True, capture_output=True)
    with pysam.AlignmentFile(str(tmp_path / "g.bam")) as bam:
        primary = {r.query_name: r for r in bam if not r.is_secondary and not r.is_supplementary}
    assert len(primary) == 32
    unplaced = sorted(name for name, r in primary.items() if r.is_unmapped)
    assert unplaced == ["NODE_35_specially_unaligned"]
    short = primary["NODE_34_length_59_cov_26.75_ID_2882278"]
    assert (short.cigarstring, short.reference_name) == ("59=", "Lactobacillus_delbrueckii_bulgaricus_ATCC_BAA-365/32_60k.fa")
    assert float(short.get_tag("ZE")) < 1e-20 and short.mapping_quality <= 3
    assert report_rows(tmp_path / "g.report")["TotalSNPs"] == ("81", "81")
    ours = vcf_substitutions(tmp_path / "g.vcf")
    assert len(ours) == 111
    if shutil.which("dnadiff"):
        subprocess.run(["dnadiff", "-p", str(tmp_path / "d"), REFERENCES, contigs], check=True, capture_output=True)
        aligned = {line.split("\t")[-1].strip() for line in open(tmp_path / "d.mcoords")}
        assert aligned == set(primary) - {"NODE_35_specially_unaligned", short.query_name}
        theirs, _ = dnadiff_differences(tmp_path / "d.snps")
        assert len(theirs) == 58
        assert theirs - ours == {("Lactobacillus_plantarum/22_55k.fa", 3037)}
