"""``gpualign compare`` and ``gpualign pairwise`` on real genomes (SARS-CoV-2 and relatives,
``tests/data/coronaviruses/SOURCES.md``) beside dnadiff, blastn and minimap2, run where installed."""

from __future__ import annotations

import os
import random
import re
import shutil
import subprocess

import pysam
import pytest
from test_compare_cli import MAIN, dnadiff_differences, number, report_rows, vcf_substitutions

from paths import DATA, RESOURCES

from gpualign_plugin.scoring import reverse_complement_text

CORONAVIRUSES = os.path.join(DATA, "coronaviruses")
WUHAN_HU_1 = os.path.join(CORONAVIRUSES, "wuhan_hu_1.fa")
MITOCHONDRIA = os.path.join(DATA, "mitochondria")


def compare(directory, assembly: str) -> dict:
    """Report rows of ``gpualign compare`` (CPU) of ``assembly`` against Wuhan-Hu-1; files ``directory/ga.*``."""
    subprocess.run(MAIN + ["compare", "-q", os.path.join(CORONAVIRUSES, assembly), "-t", WUHAN_HU_1,
                           "-p", str(directory / "ga"), "--backend", "cpu"], check=True, capture_output=True)
    return report_rows(directory / "ga.report")


def dnadiff(directory, assembly: str) -> dict:
    """Report rows of dnadiff of ``assembly`` against Wuhan-Hu-1."""
    subprocess.run(["dnadiff", "-p", str(directory / "dd"), WUHAN_HU_1, os.path.join(CORONAVIRUSES, assembly)],
                   check=True, capture_output=True)
    return report_rows(directory / "dd.report")


def test_the_bat_coronavirus_reports_every_row_dnadiff_reports(tmp_path):
    """RaTG13 against SARS-CoV-2 (96.1% identical, 1,130 SNPs, 24 indel bases): every row of
    the report, SNP classes included, equals dnadiff's (MUMmer 4, measured; our [Events] rows
    are our own)."""
    ours = compare(tmp_path, "ratg13.fa")
    expected = {"AlignedBases": ("29875(99.91%)", "29855(100.00%)"), "1-to-1": ("1", "1"),
                "AvgIdentity": ("96.14", "96.14"), "Breakpoints": ("1", "0"), "InsertionSum": ("28", "0"),
                "TotalSNPs": ("1130", "1130"), "TotalGSNPs": ("236", "236"), "TotalIndels": ("24", "24"),
                "TC": ("349(30.88%)", "331(29.29%)")}
    assert {label: ours[label] for label in expected} == expected
    if shutil.which("dnadiff"):
        theirs = dnadiff(tmp_path, "ratg13.fa")
        assert {label: ours[label] for label in theirs} == theirs


def test_sars_cov_1_is_aligned_where_blastn_finds_homology_that_nucmer_misses(tmp_path):
    """SARS-CoV-1 against SARS-CoV-2 (about 80% identical): nucmer's exact 20-mers seed only 60%
    of the genome (dnadiff: 17,844 reference bases aligned, 85.34% identity); the exact
    alignments align 96.5% at 80.8%, no more than blastn's sensitive search (``-task blastn``)
    finds in significant hits (E <= 1e-5: 29,415 reference bases): homology, not noise."""
    ours = compare(tmp_path, "sars_cov_gz02.fa")
    aligned = number(ours["AlignedBases"][0])
    assert ours["AlignedBases"] == ("28865(96.53%)", "28853(96.95%)")
    assert ours["AvgIdentity"] == ("80.79", "80.79")
    if shutil.which("dnadiff"):
        assert number(dnadiff(tmp_path, "sars_cov_gz02.fa")["AlignedBases"][0]) < 0.65 * aligned
    if shutil.which("blastn"):
        hits = subprocess.run(["blastn", "-task", "blastn", "-query", WUHAN_HU_1, "-subject",
                               os.path.join(CORONAVIRUSES, "sars_cov_gz02.fa"), "-evalue", "1e-5",
                               "-dust", "no", "-outfmt", "6 qstart qend"],
                              check=True, capture_output=True, text=True).stdout
        covered = set()
        for line in hits.splitlines():
            start, end = map(int, line.split())
            covered.update(range(start, end + 1))
        assert aligned <= len(covered) == 29415


def test_the_omicron_deletion_in_the_3_utr_is_an_indel_of_one_alignment(tmp_path):
    """The Omicron sample lacks 26 bases of the 3' UTR (reference 29,734-29,759, 1-based) and ends
    59 bases later. minimap2 (asm5) and nucmer stop at the deletion and leave the 59 bases
    unaligned; the exact alignment goes through (``26D59=``). ``compare`` counts it as dnadiff
    counts an indel that nucmer aligns through: one alignment, 26 indel bases, a VCF deletion."""
    subprocess.run(MAIN + ["pairwise", "-q", os.path.join(CORONAVIRUSES, "omicron_or833857.fa"), "-t", WUHAN_HU_1,
                           "-o", str(tmp_path / "o.sam"), "--backend", "cpu"], check=True, capture_output=True)
    with pysam.AlignmentFile(str(tmp_path / "o.sam")) as sam:
        (record,) = list(sam)
    assert (record.reference_start, record.reference_end, record.query_alignment_end) == (39, 29818, 29723)
    assert record.cigarstring.endswith("108=26D59=")
    ours = compare(tmp_path, "omicron_or833857.fa")
    assert ours["1-to-1"] == ("1", "1") and ours["Breakpoints"] == ("2", "0")
    assert ours["AlignedBases"] == ("29779(99.59%)", "29723(100.00%)")
    with pysam.VariantFile(str(tmp_path / "ga.vcf")) as vcf:
        deletions = [(v.pos, len(v.ref), v.alts) for v in vcf if len(v.ref) > 20]
    assert deletions == [(29733, 27, ("C",))]


@pytest.mark.tools("minimap2")
def test_minimap2_places_the_genomes_where_we_place_them(tmp_path):
    """``gpualign pairwise`` and minimap2 (asm20) place RaTG13 on the same reference and query
    interval with the same number of identical bases; an unrelated genome is unmapped by both."""
    query = tmp_path / "q.fa"
    rng = random.Random(1)
    query.write_text(open(os.path.join(CORONAVIRUSES, "ratg13.fa")).read()
                     + ">unrelated\n" + "".join(rng.choice("ACGT") for _ in range(20000)) + "\n")
    subprocess.run(MAIN + ["pairwise", "-q", str(query), "-t", WUHAN_HU_1, "-o", str(tmp_path / "o.paf"),
                           "--backend", "cpu"], check=True, capture_output=True)
    ours = [line.split("\t")[:10] for line in open(tmp_path / "o.paf")]
    theirs = subprocess.run(["minimap2", "-c", "-x", "asm20", WUHAN_HU_1, str(query)], check=True,
                            capture_output=True, text=True).stdout
    theirs = [line.split("\t")[:10] for line in theirs.splitlines()]
    assert ours == theirs == [["MN996532.2", "29855", "0", "29855", "+", "MN908947.3", "29903", "0", "29875",
                               "28723"]]


@pytest.mark.parametrize("reverse", [False, True], ids=["plus", "minus"])
def test_a_tandem_duplication_in_a_real_contig_is_dnadiffs_tandem_insertion(tmp_path, reverse):
    """4 kbp of RaTG13 whose second kilobase is repeated in tandem, on either strand: the
    placement gives two pieces overlapping by 1,000 reference bases, which chain separately
    (a copy), so every [Alignments], [Feature Estimates] and SNP row equals dnadiff's
    (MUMmer 3.23, measured: TandemIns 1,000 on the contig, 57 SNPs; TotalLength within the seam's
    3 bases) and the differences table
    holds one 1,000-base duplication."""
    ratg13 = "".join(open(os.path.join(CORONAVIRUSES, "ratg13.fa")).read().split("\n", 1)[1].split())
    contig = ratg13[10000:12000] + ratg13[11000:12000] + ratg13[12000:13000]
    if reverse:
        contig = reverse_complement_text(contig)
    (tmp_path / "c.fa").write_text(f">tandem\n{contig}\n")
    subprocess.run(MAIN + ["compare", "-q", str(tmp_path / "c.fa"), "-t", WUHAN_HU_1, "-p", str(tmp_path / "ga"),
                           "--backend", "cpu"], check=True, capture_output=True)
    ours = report_rows(tmp_path / "ga.report")
    assert ours["TandemInsSum"] == ("0", "1000") and ours["AlignedBases"][1] == "4000(100.00%)"
    rows = [line.rstrip("\n").split("\t") for line in open(tmp_path / "ga.differences.tsv")]
    events = [dict(zip(rows[0], row)) for row in rows[1:]]
    assert [(e["kind"], int(e["query_len"]), int(e["target_len"])) for e in events] == [("duplication", 1000, 1000)]
    if shutil.which("dnadiff"):
        subprocess.run(["dnadiff", "-p", str(tmp_path / "dd"), WUHAN_HU_1, str(tmp_path / "c.fa")],
                       check=True, capture_output=True)
        theirs = report_rows(tmp_path / "dd.report")
        # nucmer's two alignments both take the 3 seam bases that match either copy (documented:
        # alignment ends may differ by a few bases), so its 1-to-1 TotalLength is 4003.
        near = ("TotalLength", "AvgLength")
        assert {label: ours[label] for label in theirs if label not in near} == \
            {label: value for label, value in theirs.items() if label not in near}
        assert all(abs(number(ours["TotalLength"][k]) - number(theirs["TotalLength"][k])) <= 5 for k in (0, 1))


def test_a_long_poly_a_tail_is_an_unaligned_end_as_in_dnadiff(tmp_path):
    """The genome's last 4,903 bases with a 150-base poly-A tail (33 in the reference): the 117
    A's more are an unaligned end, no events (before: three false duplications and four
    breakpoints, from pieces of the tail stacked on the reference's poly-A); every row equals
    dnadiff's (measured: 1 alignment, insertion 117 on the contig)."""
    genome = "".join(open(WUHAN_HU_1).read().split("\n", 1)[1].split())
    (tmp_path / "c.fa").write_text(f">tail\n{genome[25000:] + 'A' * 117}\n")
    subprocess.run(MAIN + ["compare", "-q", str(tmp_path / "c.fa"), "-t", WUHAN_HU_1, "-p", str(tmp_path / "ga"),
                           "--backend", "cpu"], check=True, capture_output=True)
    ours = report_rows(tmp_path / "ga.report")
    assert ours["M-to-M"] == ("1", "1") and ours["Breakpoints"] == ("1", "1")
    assert len(open(tmp_path / "ga.differences.tsv").read().splitlines()) == 1  # the header only
    if shutil.which("dnadiff"):
        subprocess.run(["dnadiff", "-p", str(tmp_path / "dd"), WUHAN_HU_1, str(tmp_path / "c.fa")],
                       check=True, capture_output=True)
        theirs = report_rows(tmp_path / "dd.report")
        assert {label: ours[label] for label in theirs} == theirs


def tandem_array(unit_length: int, in_reference: int, in_contig: int) -> tuple[str, str]:
    """12 kbp of Wuhan-Hu-1 holding ``in_reference`` copies of a unit of ``unit_length`` bases
    in tandem at 7,000, and the same with ``in_contig`` copies."""
    genome = "".join(open(WUHAN_HU_1).read().split("\n", 1)[1].split())[8000:20000]
    unit = genome[7000:7000 + unit_length]
    around = genome[:7000], genome[7000 + unit_length:]
    return around[0] + unit * in_reference + around[1], around[0] + unit * in_contig + around[1]


def compare_events(directory, reference: str, contig: str) -> tuple[dict, list[dict]]:
    """Report rows and differences-table rows of ``gpualign compare`` (CPU) of one contig."""
    (directory / "ref.fa").write_text(f">ref\n{reference}\n")
    (directory / "c.fa").write_text(f">c\n{contig}\n")
    subprocess.run(MAIN + ["compare", "-q", str(directory / "c.fa"), "-t", str(directory / "ref.fa"),
                           "-p", str(directory / "ga"), "--backend", "cpu"], check=True, capture_output=True)
    rows = [line.rstrip("\n").split("\t") for line in open(directory / "ga.differences.tsv")]
    return report_rows(directory / "ga.report"), [dict(zip(rows[0], row)) for row in rows[1:]]


def dnadiff_of(directory) -> dict:
    """Report rows of dnadiff of ``directory/c.fa`` against ``directory/ref.fa`` (files ``dd.*``)."""
    subprocess.run(["dnadiff", "-p", str(directory / "dd"), str(directory / "ref.fa"), str(directory / "c.fa")],
                   check=True, capture_output=True)
    return report_rows(directory / "dd.report")


NEAR = ("TotalLength", "AvgLength", "AvgIdentity")
"""Rows that differ where nucmer's alignments overlap a few bases at an event's edges (lengths, identities)."""


def rows_but(rows: dict, labels, leave_out=()) -> dict:
    """``rows`` restricted to ``labels`` (those of a dnadiff report), less ``leave_out``."""
    return {label: rows[label] for label in labels if label not in leave_out}


@pytest.mark.parametrize("unit_length, in_reference, in_contig, reverse",
                         [(30, 2, 7, False), (30, 2, 7, True), (50, 1, 4, True)])
def test_a_short_tandem_expansion_is_one_insertion_as_in_dnadiff(tmp_path, unit_length, in_reference,
                                                                 in_contig, reverse):
    """Extra copies of a 30 or 50 bp unit in a real contig, either strand: the placement finds
    each extra copy as a piece of its own (each significant, none as long as the chain's
    overlap); they are one duplication event of all the extra bases, copying the reference's
    array, and every row equals dnadiff's (MUMmer 3.23, measured: one insertion of the extra
    bases, two alignments, two breakpoints). Before: one duplication per piece, 6 breakpoints,
    4 alignments and a "relocation" where two copies read the same reference bases."""
    reference, contig = tandem_array(unit_length, in_reference, in_contig)
    ours, events = compare_events(tmp_path, reference, reverse_complement_text(contig) if reverse else contig)
    extra = unit_length * (in_contig - in_reference)
    assert [(e["kind"], int(e["query_len"])) for e in events] == [("duplication", extra)]
    start, end = int(events[0]["target_start"]), int(events[0]["target_end"])
    assert 7000 - 5 <= start and end <= 7000 + unit_length * in_reference + 5
    assert ours["Insertions"] == ("0", "1") and ours["InsertionSum"] == ("0", str(extra))
    if shutil.which("dnadiff"):
        theirs = dnadiff_of(tmp_path)
        assert {label: ours[label] for label in theirs} == theirs


def test_a_tandem_expansion_of_a_longer_unit_is_one_duplication(tmp_path):
    """Five copies of a 100 bp unit where the reference has two: the placement gives a 200 and
    a 100 bp copy, each its own region (as nucmer aligns copies that long), and one event: the
    300 extra bases, copying the reference's two units, inserted at the array (where in it
    is a matter of ties; before: two duplication events, no junction)."""
    reference, contig = tandem_array(100, 2, 5)
    _, events = compare_events(tmp_path, reference, contig)
    assert [(e["kind"], int(e["query_len"]), int(e["target_start"]), int(e["target_end"]))
            for e in events] == [("duplication", 300, 7000, 7200)]
    assert events[0]["inserted_at"] in ("7000", "7100", "7200")


@pytest.mark.parametrize("unit_length, in_reference, in_contig, reverse",
                         [(30, 7, 2, False), (30, 7, 2, True), (50, 4, 1, False)])
def test_a_short_tandem_contraction_is_one_deletion_as_in_dnadiff(tmp_path, unit_length, in_reference,
                                                                  in_contig, reverse):
    """Fewer copies of a 30 or 50 bp unit in a real contig than in the reference, either strand:
    one deletion event of the missing bases, and every row equals dnadiff's (MUMmer 3.23,
    measured: two alignments overlapping on the contig, two breakpoints). The deleted stretch's
    repeat copy is the contig's unit next to a matching region, which nucmer's alignment
    extends over; before, it was an alignment of its own (M-to-M 3, 4 breakpoints)."""
    reference, contig = tandem_array(unit_length, in_reference, in_contig)
    ours, events = compare_events(tmp_path, reference, reverse_complement_text(contig) if reverse else contig)
    missing = unit_length * (in_reference - in_contig)
    assert [(e["kind"], int(e["target_len"])) for e in events] == [("deletion", missing)]
    assert ours["M-to-M"] == ("2", "2") and ours["Breakpoints"] == ("2", "2")
    if shutil.which("dnadiff"):
        theirs = dnadiff_of(tmp_path)
        assert {label: ours[label] for label in theirs} == theirs


@pytest.mark.parametrize("reverse", [False, True], ids=["plus", "minus"])
def test_an_inversion_takes_back_its_edge_bases_from_the_flanks(tmp_path, reverse):
    """Wuhan-Hu-1's bases 14,000-14,500 inverted in a 12 kbp piece of it, either strand. The
    flanking alignments reach 6 bases into the inverted block at each end (``1X2=1X2=`` scores
    +2), which were 4 false SNPs (helper sweep, stop 34); the inversion now takes them back:
    one inversion event of exactly the 500 bases, no SNP, and every row but the lengths and
    identities equals dnadiff's (MUMmer 3.23, measured: 0 SNPs; its alignments overlap by a few
    bases at each edge, mismatches among them, so its TotalLength is 8 more and its AvgIdentity
    99.98 where ours is 100.00)."""
    genome = "".join(open(WUHAN_HU_1).read().split("\n", 1)[1].split())[8000:20000]
    contig = genome[:6000] + reverse_complement_text(genome[6000:6500]) + genome[6500:]
    ours, events = compare_events(tmp_path, genome, reverse_complement_text(contig) if reverse else contig)
    assert [(e["kind"], e["target_start"], e["target_end"], e["query_len"]) for e in events] == \
        [("inversion", "6000", "6500", "500")]
    assert ours["TotalSNPs"] == ("0", "0")
    if shutil.which("dnadiff"):
        theirs = dnadiff_of(tmp_path)
        assert rows_but(ours, theirs, NEAR) == rows_but(theirs, theirs, NEAR)


def lambda_genome() -> str:
    """The lambda phage genome (resources/genomes/lambda.fa)."""
    return "".join(line.strip() for line in open(os.path.join(RESOURCES, "genomes", "lambda.fa"))
                   if not line.startswith(">"))


@pytest.mark.parametrize("source, start, end", [("wuhan", 5301, 5601), ("wuhan", 5113, 6113), ("lambda", 6190, 6490),
                                                ("wuhan", 1500, 4500)],
                         ids=["gap-at-edge", "palindrome-inside", "placed-inversion-overlaps-flank", "deletion-at-edge"])
def test_an_inversion_leaves_no_false_variant_at_its_edges_or_inside(tmp_path, source, start, end):
    """Inversions of real sequence whose edges or insides the home region's alignment reached
    into (helper sweep, stop 34; dnadiff, measured: 0 SNPs, 0 indels, 3 alignments, 4 breakpoints
    each): a flank ending ``2056=1I6=`` 7 bases into the block (false indels), a flank starting
    ``6=3X3=1D2=2X`` on bases the inverted placement aligns, a flank ending ``3=1D`` there, and
    a 36-base palindrome in the block that the home region aligned forward (4 false SNPs, an
    alignment and two breakpoints more). Now: one inversion event within 2 bases of the truth,
    an empty VCF, and every row but the lengths and identities equals dnadiff's (a seam base that
    matches both sides of an edge is aligned on both, overlapping on the contig as dnadiff's
    alignments do; before this stop's seam rule, 1 base of AlignedBases and an Insertions row
    could differ)."""
    genome = ("".join(open(WUHAN_HU_1).read().split("\n", 1)[1].split()) if source == "wuhan"
              else lambda_genome())[:12000]
    contig = genome[:start] + reverse_complement_text(genome[start:end]) + genome[end:]
    ours, events = compare_events(tmp_path, genome, contig)
    assert [e["kind"] for e in events] == ["inversion"]
    assert abs(int(events[0]["target_start"]) - start) <= 2 and abs(int(events[0]["target_end"]) - end) <= 2
    assert [line for line in open(tmp_path / "ga.vcf") if not line.startswith("#")] == []
    if shutil.which("dnadiff"):
        theirs = dnadiff_of(tmp_path)
        assert rows_but(ours, theirs, NEAR) == rows_but(theirs, theirs, NEAR)


@pytest.mark.parametrize("reverse", [False, True], ids=["plus", "minus"])
def test_a_contig_ending_at_an_inversions_far_end_leaves_no_false_variant(tmp_path, reverse):
    """An assembly broken at the far end of a 1 kbp inversion of Wuhan-Hu-1 (bases 10,918-11,918;
    helper sweep, stop 34): the first contig holds 6 kbp of flank and the whole inverted block,
    the second goes on from its end. The flank's placement, taken first, ended ``2I5=1X1=1X3=``
    13 contig bases into the block (those columns score +3), and the inverted placement, found
    later on the contig's free part, stopped there: 3 false variants in the VCF and an inversion
    987 bases long. The junction now lies where the two placements' scores sum highest (dnadiff,
    MUMmer 3.23, measured: 0 SNPs, 0 indels; its flank alignment stops 5 bases into the block,
    overlapping the inverted one): one inversion of exactly the 1,000 bases, an empty VCF, and
    BAM records that meet at the block's edge."""
    genome = "".join(open(WUHAN_HU_1).read().split("\n", 1)[1].split())
    start, end = 10918, 11918
    first = genome[start - 6000:start] + reverse_complement_text(genome[start:end])
    (tmp_path / "ref.fa").write_text(f">ref\n{genome}\n")
    contigs = [first, genome[end:end + 6000]]
    if reverse:
        contigs = [reverse_complement_text(c) for c in contigs]
    (tmp_path / "asm.fa").write_text(f">c1\n{contigs[0]}\n>c2\n{contigs[1]}\n")
    subprocess.run(MAIN + ["compare", "-q", str(tmp_path / "asm.fa"), "-t", str(tmp_path / "ref.fa"),
                           "-p", str(tmp_path / "ga"), "--backend", "cpu"], check=True, capture_output=True)
    rows = [line.rstrip("\n").split("\t") for line in open(tmp_path / "ga.differences.tsv")]
    events = [dict(zip(rows[0], row)) for row in rows[1:]]
    assert [(e["kind"], e["target_start"], e["target_end"], e["query_len"]) for e in events] == \
        [("inversion", str(start), str(end), "1000")]
    assert [line for line in open(tmp_path / "ga.vcf") if not line.startswith("#")] == []
    with pysam.AlignmentFile(str(tmp_path / "ga.bam")) as bam:
        pieces = sorted((r.reference_start, r.reference_end) for r in bam if r.query_name == "c1")
    assert pieces == [(start - 6000, start), (start, end)]
    assert report_rows(tmp_path / "ga.report")["TotalSNPs"] == ("0", "0")


@pytest.mark.parametrize("source, start, end, to", [("wuhan", 9364, 10730, 20543), ("lambda", 20243, 22191, 13284)])
def test_a_seam_base_that_matches_both_sides_of_a_moved_block_is_aligned(tmp_path, source, start, end, to):
    """A block of Wuhan-Hu-1 or lambda moved elsewhere in the genome (helper sweep, stop 34),
    where a base at a seam reads as a match on both sides of the moved block: the placement
    found first took the contig base, so the reference base that pairs with it on the other
    side was aligned by nothing, a one-base Insertions row and AlignedBases one short. The block
    that can go on over it with identical bases now closes that gap (its alignment then overlaps
    its neighbour by a base on the contig, as dnadiff's do): every row but the lengths and
    identities equals dnadiff's (MUMmer 3.23, measured), and the event is the block give or take
    the seam base, which belongs to either side."""
    genome = "".join(open(WUHAN_HU_1).read().split("\n", 1)[1].split()) if source == "wuhan" else lambda_genome()
    rest = genome[:start] + genome[end:]
    at = to if to < start else to - (end - start)
    _, events = compare_events(tmp_path, genome, rest[:at] + genome[start:end] + rest[at:])
    assert [e["kind"] for e in events] == ["relocation"]
    found = (int(events[0]["target_start"]), int(events[0]["target_end"]), int(events[0]["inserted_at"]))
    assert all(abs(a - b) <= 1 for a, b in zip(found, (start, end, to)))  # the seam base may go either way
    ours = report_rows(tmp_path / "ga.report")
    assert ours["AlignedBases"][0].startswith(f"{len(genome)}(") and ours["Insertions"] == ("0", "0")
    if shutil.which("dnadiff"):
        theirs = dnadiff_of(tmp_path)
        assert rows_but(ours, theirs, NEAR) == rows_but(theirs, theirs, NEAR)


def test_a_deletion_with_microhomology_at_its_edges_gives_every_dnadiff_row(tmp_path):
    """Wuhan-Hu-1 without bases 18,576-19,076 (helper sweep, stop 34): the three bases after the
    deletion's left edge equal the three at its right edge, so they read as matches on either
    side. Our alignment of the left flank now goes on over them, overlapping the right flank's
    on the contig as nucmer's does: every row equals dnadiff's (MUMmer 3.23, measured:
    `AlignedBases` 29,406, `InsertionSum` 500). Before, `AlignedBases` was 29,403 and the
    lengths 3 shorter."""
    genome = "".join(open(WUHAN_HU_1).read().split("\n", 1)[1].split())
    ours, events = compare_events(tmp_path, genome, genome[:18576] + genome[19076:])
    assert [(e["kind"], e["target_len"]) for e in events] == [("deletion", "500")]
    assert ours["AlignedBases"][0].startswith("29406(") and ours["InsertionSum"] == ("500", "0")
    if shutil.which("dnadiff"):
        theirs = dnadiff_of(tmp_path)
        assert {label: ours[label] for label in theirs} == theirs


def test_a_scaffold_gap_in_an_assembly_of_both_strands_is_aligned_up_to_its_edge(tmp_path):
    """RaTG13 as four contigs against Wuhan-Hu-1: its first 9 kbp; the next 8 kbp reverse
    complemented; the rest with 200 bases replaced by Ns (a scaffold gap) and 3 kbp soft-masked;
    and 5 kbp of lambda (unrelated). The lambda contig stays unaligned, and every report row
    equals dnadiff's (MUMmer 3.23, measured) except those of the 13 bases right after the N run
    (reference 22,204-22,216, in the spike's receptor-binding domain). There the exact alignment
    of the region reaches the gap: the bases align without a gap with 4 substitutions, real
    differences between the two viruses. nucmer starts its alignment at 22,217 and minimap2
    ``-x asm20`` at 22,216 (0-based), so dnadiff aligns 13 reference bases fewer and counts
    4 SNPs fewer (1,120 against 1,124); every SNP of its is one of ours."""
    bat = "".join(open(os.path.join(CORONAVIRUSES, "ratg13.fa")).read().split("\n", 1)[1].split())
    contigs = [bat[:9000], reverse_complement_text(bat[9000:17000]),
               bat[17000:22000] + "N" * 200 + bat[22200:25200].lower() + bat[25200:],
               lambda_genome()[10000:15000]]
    (tmp_path / "c.fa").write_text("".join(f">ctg{k + 1}\n{c}\n" for k, c in enumerate(contigs)))
    shutil.copy(WUHAN_HU_1, tmp_path / "ref.fa")
    subprocess.run(MAIN + ["compare", "-q", str(tmp_path / "c.fa"), "-t", str(tmp_path / "ref.fa"),
                           "-p", str(tmp_path / "ga"), "--backend", "cpu"], check=True, capture_output=True)
    ours = report_rows(tmp_path / "ga.report")
    expected = {"AlignedSeqs": ("1(100.00%)", "3(75.00%)"), "AlignedBases": ("29675(99.24%)", "29655(85.08%)"),
                "1-to-1": ("4", "4"), "Breakpoints": ("7", "2"), "Translocations": ("2", "0"),
                "Inversions": ("0", "0"), "TotalSNPs": ("1124", "1124"), "TotalGSNPs": ("231", "231"),
                "TotalIndels": ("24", "24")}
    assert {label: ours[label] for label in expected} == expected
    records = [line.split("\t") for line in open(tmp_path / "ga.vcf") if not line.startswith("#")]
    snps = [int(r[1]) for r in records if len(r[3]) == len(r[4]) == 1]
    assert len(snps) == 1124
    assert [p for p in snps if 22204 <= p <= 22216] == [22210, 22213, 22215, 22216]
    with pysam.AlignmentFile(str(tmp_path / "ga.bam")) as bam:
        assert [r.is_unmapped for r in bam if r.query_name == "ctg4"] == [True]
    if shutil.which("dnadiff"):
        theirs = dnadiff_of(tmp_path)
        edge = {"AlignedBases", "UnalignedBases", "InsertionSum", "InsertionAvg", "TotalSNPs", *NEAR}
        substitution_classes = {a + b for a in "ACGT" for b in "ACGT" if a != b}
        assert {label for label in theirs if ours[label] != theirs[label]} <= edge | substitution_classes
        assert 0 < number(ours["AlignedBases"][0]) - number(theirs["AlignedBases"][0]) <= 13
        fields = [line.split() for line in open(tmp_path / "dd.snps")]
        their_snps = {int(f[0]) for f in fields if len(f) > 3 and f[1] != "." and f[2] != "."}
        assert their_snps <= set(snps) and all(22204 <= p <= 22216 for p in set(snps) - their_snps)


def test_the_chimpanzee_mitochondrion_against_the_soft_masked_crlf_human_reference(tmp_path):
    """Chimpanzee against human mtDNA (91% identical), the reference as a genome browser serves
    it: CRLF line ends, 418 soft-masked bases, N at 3,107; the chimpanzee circle is opened 576
    bases further on (one relocation). Measured with dnadiff (MUMmer 3.23, given the reference
    with LF line ends: on CRLF its show-snps stops with "'chrM' not found in reference file"):
    every row the same but AvgIdentity 91.43 against 91.47, TotalSNPs 1,395 against 1,381 and
    TotalIndels 25 against 33. The scorings differ: at 251-254, 1,760-1,766, 10,868-10,874 and
    15,455-15,461 nucmer aligns an insertion and a deletion a few bases apart where the exact
    alignment (match 2, mismatch -3, a 1-base gap 7) has three substitutions (at 1,760-1,766:
    -1 for the 7 bases against -2 with the two gaps); in HVS-II (286-319, its C run) both place
    gaps, at different bases. Inside the soft-masked runs the SNPs are dnadiff's; none is on the N."""
    human = os.path.join(MITOCHONDRIA, "human_chrM.fa")
    chimp = os.path.join(MITOCHONDRIA, "chimp_GU112745.fa")
    subprocess.run(MAIN + ["compare", "-q", chimp, "-t", human, "-p", str(tmp_path / "g"), "--backend", "cpu"],
                   check=True, capture_output=True)
    ours = report_rows(tmp_path / "g.report")
    same = {"TotalBases": ("16569", "16558"), "AlignedBases": ("16569(100.00%)", "16558(100.00%)"),
            "1-to-1": ("2", "2"), "Breakpoints": ("2", "2"), "Relocations": ("1", "1"),
            "Translocations": ("0", "0"), "Inversions": ("0", "0"), "Insertions": ("0", "0"),
            "TotalGSNPs": ("55", "55"), "TotalGIndels": ("0", "0")}
    assert {label: ours[label] for label in same} == same
    assert (ours["AvgIdentity"], ours["TotalSNPs"], ours["TotalIndels"]) == \
        (("91.43", "91.43"), ("1395", "1395"), ("25", "25"))
    substitutions = {position for _, position in vcf_substitutions(tmp_path / "g.vcf")}
    assert 3107 not in substitutions
    if shutil.which("dnadiff"):
        reference = tmp_path / "human_lf.fa"
        with open(human, "rb") as handle:
            reference.write_bytes(handle.read().replace(b"\r\n", b"\n"))
        subprocess.run(["dnadiff", "-p", str(tmp_path / "d"), str(reference), chimp], check=True,
                       capture_output=True)
        theirs = report_rows(tmp_path / "d.report")
        assert {label: theirs[label] for label in same} == same
        snps, indels = (({position for _, position in sites}) for sites in dnadiff_differences(tmp_path / "d.snps"))
        assert len(snps) == 1381 and len(indels) == 33
        assert snps - substitutions == {294, 313, 316}
        assert all(any(abs(site - gap) <= 6 for gap in indels) for site in substitutions - snps)
        with open(human) as handle:
            text = "".join(line.strip() for line in handle if not line.startswith(">"))
        masked = [(run.start() + 1, run.end()) for run in re.finditer("[a-z]+", text)]
        assert len(masked) == 5 and sum(last - first + 1 for first, last in masked) == 418
        for first, last in masked:
            assert {p for p in snps if first <= p <= last} == {p for p in substitutions if first <= p <= last}


PLASTIDS = os.path.join(DATA, "plastids")


def test_two_chloroplasts_align_in_synteny_through_their_inverted_repeats(tmp_path):
    """Potato against tomato chloroplast (155 kbp each, 98.8% identical; inverted repeats of about
    25.6 kbp, ``tests/data/plastids/SOURCES.md``), CPU, about 2 minutes on 2 cores. The tomato's
    last 2,280 bases (in its IRa) match the potato's end in synteny and, as well (99.96%), the
    potato's IRb inverted. dnadiff's 1-to-1 set keeps neither copy (its M-to-M keeps the inverted
    one), so it counts 2,368 reference bases as insertions; the placement here keeps the syntenic
    copy (a forward record to the end of both genomes), and the repeat is no event: no
    inversion, relocation or translocation, as in dnadiff. 893 of dnadiff's 898 SNPs are among
    our 910; the others lie where the two place a gap differently."""
    tomato, potato = os.path.join(PLASTIDS, "tomato_PP952510.fa"), os.path.join(PLASTIDS, "potato_PP952511.fa")
    subprocess.run(MAIN + ["compare", "-q", potato, "-t", tomato, "-p", str(tmp_path / "pt"), "--backend", "cpu"],
                   check=True, capture_output=True)
    ours = report_rows(tmp_path / "pt.report")
    expected = {"AlignedSeqs": ("1(100.00%)", "1(100.00%)"), "AlignedBases": ("155436(99.98%)", "155271(99.81%)"),
                "AvgIdentity": ("98.83", "98.83"), "Inversions": ("0", "0"), "Relocations": ("0", "0"),
                "Translocations": ("0", "0"), "TotalSNPs": ("910", "910")}
    assert {label: ours[label] for label in expected} == expected
    with pysam.AlignmentFile(str(tmp_path / "pt.bam")) as bam:
        records = list(bam)
    assert all(not r.is_reverse and not r.is_unmapped for r in records)
    end = max(records, key=lambda r: r.reference_end)
    operation, length = end.cigartuples[-1]
    trailing_clip = length if operation in (pysam.CSOFT_CLIP, pysam.CHARD_CLIP) else 0
    assert (end.reference_end, end.infer_read_length() - trailing_clip) == (155438, 155562)
    if not shutil.which("dnadiff"):
        return
    subprocess.run(["dnadiff", "-p", str(tmp_path / "dd"), tomato, potato], check=True, capture_output=True)
    theirs = report_rows(tmp_path / "dd.report")
    assert theirs["InsertionSum"] == ("2368", "2413") and ours["InsertionSum"] == ("25", "324")
    assert {label: theirs[label] for label in ("AlignedSeqs", "Inversions", "Relocations", "Translocations")} == \
        {label: ours[label] for label in ("AlignedSeqs", "Inversions", "Relocations", "Translocations")}
    substitutions, _indels = dnadiff_differences(tmp_path / "dd.snps")
    found = vcf_substitutions(tmp_path / "pt.vcf")
    assert len(substitutions) == 898 and len(substitutions & found) == 893


def test_microsatellites_inserted_here_and_deleted_there_are_no_relocation(tmp_path):
    """Brassica rapa against Arabidopsis thaliana chloroplast (94.5% identical), CPU, about 3.5
    minutes on 2 cores. The Brassica genome has 74 bases of (AT)n at 62,021 where Arabidopsis
    has 5, and Arabidopsis 91 bases of (AT)n at 8,075-8,166 where Brassica has none: an
    insertion and a deletion 55 kbp apart, which align to each other (54 columns at 81%) only
    because both are dinucleotide repeats. Before DUST's level was read right and the
    relocation test left low-complexity bases out, they were a relocation, and the report said 3
    relocations where dnadiff finds none. dnadiff: no relocation, translocation or inversion,
    4,861 SNPs, 4,763 of them among ours."""
    arabidopsis = os.path.join(PLASTIDS, "arabidopsis_NC_000932.fa")
    brassica = os.path.join(PLASTIDS, "brassica_PV995108.fa")
    subprocess.run(MAIN + ["compare", "-q", brassica, "-t", arabidopsis, "-p", str(tmp_path / "ab"),
                           "--backend", "cpu"], check=True, capture_output=True)
    ours = report_rows(tmp_path / "ab.report")
    expected = {"AlignedSeqs": ("1(100.00%)", "1(100.00%)"), "Relocations": ("0", "0"),
                "Translocations": ("0", "0"), "Inversions": ("0", "0"), "AvgIdentity": ("94.50", "94.50"),
                "TotalSNPs": ("5153", "5153")}
    assert {label: ours[label] for label in expected} == expected
    rows = [line.split("\t") for line in open(tmp_path / "ab.differences.tsv") if not line.startswith("#")]
    assert {row[1] for row in rows} == {"insertion", "deletion"}
    assert ["insertion", "62021", "62095"] in [row[1:2] + row[3:5] for row in rows]
    assert ["deletion", "8075", "8166"] in [row[1:2] + row[7:9] for row in rows]
    if not shutil.which("dnadiff"):
        return
    subprocess.run(["dnadiff", "-p", str(tmp_path / "dd"), arabidopsis, brassica], check=True, capture_output=True)
    theirs = report_rows(tmp_path / "dd.report")
    assert {label: theirs[label] for label in ("AlignedSeqs", "Relocations", "Translocations", "Inversions")} == \
        {label: ours[label] for label in ("AlignedSeqs", "Relocations", "Translocations", "Inversions")}
    substitutions, _indels = dnadiff_differences(tmp_path / "dd.snps")
    assert len(substitutions) == 4861 and len(substitutions & vcf_substitutions(tmp_path / "ab.vcf")) == 4763
