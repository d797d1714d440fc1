"""Output writers: SAM/BAM (pysam, samtools), PAF and the EMBOSS-like pairwise text.

Alignments are built by hand from known CIGARs; their scores come from
``Alignment.recompute_score`` so every example is a consistent alignment.
"""

from __future__ import annotations

import dataclasses
import gzip
import io
import os
import random
import re
import shutil
import subprocess

import numpy as np
import pysam
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpualign_plugin.cli.main import main
from gpualign_plugin.errors import InputError
from gpualign_plugin.io import sam as sam_module
from gpualign_plugin.io.names import Names
from gpualign_plugin.io.paf import paf_line, read_paf, write_paf
from gpualign_plugin.io.pairwise_text import format_alignment, write_pairwise_text
from gpualign_plugin.io.sam import md_tag, merge_bams, write_alignments
from gpualign_plugin.model import Alignment, Cigar, ambiguous_columns
from gpualign_plugin.scoring import ScoringScheme, reverse_complement_text

DNA = ScoringScheme.dna()
PROTEIN = ScoringScheme.from_matrix("BLOSUM62")

# Target t1 and two queries aligned to it by hand:
#   q1 (+):  tt ACGT GG AC C ATT - CA aaa      CIGAR 4=2I2=1X3=1D2=, target[4:17]
#            t1: ACGT -- AC G ATT G CA
#   q2 (-):  reverse complement of q2[2:12] = ACGTTCGATT against t1[4:14] = ACGTACGATT
T1 = "CCCCACGTACGATTGCAGGGG"
T2 = "ACGTACGTAC"
Q1 = "ttACGTGGACCATTCAaaa"
Q2 = "gg" + reverse_complement_text("ACGTTCGATT") + "c"


def scored(alignment: Alignment, query: str, target: str, scheme=DNA, **changes) -> Alignment:
    """The alignment with its score recomputed from the CIGAR (which also checks the CIGAR)."""
    score = alignment.recompute_score(scheme.encode("q", query).codes,
                                      scheme.encode("t", target).codes, scheme)
    return dataclasses.replace(alignment, score=score, **changes)


def hand_alignments():
    """(alignments, queries, targets): q1 on t1 (+), q2 on t1 (-), q1 on t2 (secondary)."""
    queries = {"q1": DNA.encode("q1", Q1), "q2": DNA.encode("q2", Q2)}
    targets = [DNA.encode("t1", T1), DNA.encode("t2", T2), DNA.encode("t3", "ACGT")]
    a1 = scored(Alignment("q1", "t1", 19, 21, 2, 16, 4, 17, "+", 0,
                          Cigar.from_string("4=2I2=1X3=1D2=")), Q1, T1, mapq=60)
    a2 = scored(Alignment("q2", "t1", 13, 21, 2, 12, 4, 14, "-", 0,
                          Cigar.from_string("4=1X5=")), Q2, T1, mapq=37)
    a3 = scored(Alignment("q1", "t2", 19, 10, 2, 6, 0, 4, "+", 0, Cigar.from_string("4=")),
                Q1, T2, is_primary=False, mapq=0)
    return [a3, a2, a1], queries, targets


def read_bam(path):
    with pysam.AlignmentFile(path, check_sq=False) as bam:
        return bam.header.to_dict(), list(bam.fetch(until_eof=True))


# --------------------------------------------------------------------------- SAM / BAM


def test_md_tag_of_hand_examples():
    assert md_tag(Cigar.from_string("4=2I2=1X3=1D2="), "ACGTACGATTGCA") == "6G3^G2"
    assert md_tag(Cigar.from_string("2X1D1X"), "acgt") == "0A0C0^G0T0"
    assert md_tag(Cigar.from_string("6="), "aNnCGN") == "1N0N2N0"  # N/N: a difference, as in calmd
    assert md_tag(Cigar.from_string("6="), "ANNCGN", dna=False) == "6"  # protein N: asparagine
    assert md_tag(Cigar.from_string("3="), "ACG") == "3"
    assert md_tag(Cigar.from_string("1=2D3I1="), "ACGT") == "1^CG1"


def test_md_tag_follows_the_sam_grammar_or_is_absent():
    """Protein targets may hold '*', which MD's grammar has no room for: no MD then."""
    assert md_tag(Cigar.from_string("2=1X2="), "MK*LV") is None
    assert md_tag(Cigar.from_string("2=1D2="), "MK*LV") is None
    # A '*' the query matches leaves no letter in MD: the tag stays.
    assert md_tag(Cigar.from_string("3=1X1="), "MK*LV") == "3L1"


def test_protein_records_have_md_only_where_the_grammar_allows(tmp_path):
    from gpualign_plugin.cli.main import main

    (tmp_path / "q.fa").write_text(">q1\nMKVLHEEQRSTWACDEFG\n>q2\nMKVLHAEQRSTWACDEFG\n")
    (tmp_path / "t.fa").write_text(">t\nMKVLH*EQRSTWACDEFG\n")
    assert main(["pairwise", "-q", str(tmp_path / "q.fa"), "-t", str(tmp_path / "t.fa"),
                 "--mode", "global", "--matrix", "BLOSUM62", "--backend", "cpu",
                 "--out", str(tmp_path / "x.sam")]) == 0
    _, records = read_bam(tmp_path / "x.sam")
    assert [(r.query_name, r.has_tag("MD")) for r in records] == [("q1", False), ("q2", False)]
    (tmp_path / "t.fa").write_text(">t\nMKVLHAEQRSTWACDEFG*\n")
    assert main(["pairwise", "-q", str(tmp_path / "q.fa"), "-t", str(tmp_path / "t.fa"),
                 "--mode", "semiglobal", "--matrix", "BLOSUM62", "--backend", "cpu",
                 "--out", str(tmp_path / "y.sam")]) == 0
    _, records = read_bam(tmp_path / "y.sam")
    assert {r.query_name: r.get_tag("MD") for r in records} == {"q1": "5A12", "q2": "18"}


@pytest.mark.parametrize("fmt", ["bam", "sam"])
def test_round_trip_of_every_field(tmp_path, fmt):
    alignments, queries, targets = hand_alignments()
    path = tmp_path / f"out.{fmt}"
    write_alignments(path, alignments, queries, targets, DNA, "gpualign pairwise\t-q x", fmt=fmt)
    header, records = read_bam(path)
    from gpualign_plugin.version import __version__

    assert header["HD"] == {"VN": "1.6", "SO": "coordinate"}
    assert header["SQ"] == [{"SN": "t1", "LN": 21}, {"SN": "t2", "LN": 10}, {"SN": "t3", "LN": 4}]
    assert header["PG"] == [{"ID": "gpualign", "PN": "gpualign", "VN": __version__,
                             "CL": "gpualign pairwise -q x"}]
    got = [(r.query_name, r.flag, r.reference_name, r.reference_start, r.mapping_quality,
            r.cigarstring, r.query_sequence, r.query_qualities, r.next_reference_id,
            r.next_reference_start, r.template_length) for r in records]
    assert got == [
        ("q1", 0, "t1", 4, 60, "2S4=2I2=1X3=1D2=3S", Q1.upper(), None, -1, -1, 0),
        ("q2", 16, "t1", 4, 37, "1S4=1X5=2S", "GACGTTCGATTCC", None, -1, -1, 0),
        ("q1", 256, "t2", 0, 0, "2S4=13S", None, None, -1, -1, 0),
    ]
    assert reverse_complement_text(Q2).upper() == "GACGTTCGATTCC"
    by_name = {(r.query_name, r.reference_name): r for r in records}
    q1, q2, secondary = by_name["q1", "t1"], by_name["q2", "t1"], by_name["q1", "t2"]
    # q1: 11 matches, 1 mismatch, 2 gaps (3 gap columns); q2: 9 matches, 1 mismatch.
    assert [q1.get_tag(t) for t in ("AS", "NM", "MD")] == [alignments[2].score, 4, "6G3^G2"]
    assert q1.get_tag("de") == pytest.approx(3 / 14, rel=1e-5)
    assert [q2.get_tag(t) for t in ("AS", "NM", "MD")] == [alignments[1].score, 1, "4A5"]
    assert q2.get_tag("de") == pytest.approx(1 / 10, rel=1e-5)
    assert [secondary.get_tag(t) for t in ("AS", "NM", "MD", "de")] == [8, 0, "4", 0.0]
    assert alignments[2].score == 11 * 2 - 3 - (5 + 2 * 2) - (5 + 2)
    # Every record's CIGAR spans the whole query and exactly the reported target interval.
    for record, alignment in [(q1, alignments[2]), (q2, alignments[1]), (secondary, alignments[0])]:
        assert record.infer_read_length() == alignment.query_length
        assert record.reference_end == alignment.target_end
    # pysam rebuilds the reference from SEQ + MD: it must be the target itself.
    assert q1.get_reference_sequence().upper() == T1[4:17]
    assert q2.get_reference_sequence().upper() == T1[4:14]
    if fmt == "bam":
        assert os.path.exists(str(path) + ".bai") and not os.path.exists(str(path) + ".csi")
    expected_files = [f"out.{fmt}"] + ([f"out.{fmt}.bai"] if fmt == "bam" else [])
    assert sorted(os.listdir(tmp_path)) == sorted(expected_files)


def test_samtools_accepts_the_bam(tmp_path):
    alignments, queries, targets = hand_alignments()
    path = str(tmp_path / "out.bam")
    write_alignments(path, alignments, queries, targets, DNA, "gpualign test")
    assert pysam.quickcheck(path) == ""
    flagstat = pysam.flagstat(path)
    assert "3 + 0 in total" in flagstat and "1 + 0 secondary" in flagstat
    idxstats = [line.split("\t") for line in pysam.idxstats(path).splitlines()]
    assert idxstats == [["t1", "21", "2", "0"], ["t2", "10", "1", "0"], ["t3", "4", "0", "0"],
                        ["*", "0", "0", "0"]]
    # Region queries go through the index.
    assert pysam.view("-c", path, "t2").strip() == "1"


@pytest.mark.skipif(shutil.which("samtools") is None, reason="samtools command not installed")
def test_installed_samtools_accepts_the_bam(tmp_path):
    alignments, queries, targets = hand_alignments()
    path = str(tmp_path / "out.bam")
    write_alignments(path, alignments, queries, targets, DNA, "gpualign test")
    subprocess.run(["samtools", "quickcheck", "-v", path], check=True)
    flagstat = subprocess.run(["samtools", "flagstat", path], check=True, capture_output=True,
                              text=True).stdout
    assert "3 + 0 in total" in flagstat
    view = subprocess.run(["samtools", "view", path, "t1:5-5"], check=True, capture_output=True,
                          text=True).stdout
    assert [line.split("\t")[0] for line in view.splitlines()] == ["q1", "q2"]


def random_alignment(rng: random.Random, query_id: str, target_id: str, target_text: str,
                     strand: str):
    """A random consistent alignment on ``target_text``; returns (alignment, query text).

    It opens and closes with an identical column so that gaps stay inside, and the
    query gets random flanks (soft clips) in mixed case.
    """
    n = len(target_text)
    start = rng.randrange(0, n // 2)
    runs, pieces, ti = [(1, "=")], [target_text[start]], start + 1
    while len(runs) < 12 and ti < n - 1:
        op = rng.choice("==XID")
        length = rng.randint(1, 4) if op == "I" else min(rng.randint(1, 4), n - 1 - ti)
        if op == "=":
            pieces.append(target_text[ti:ti + length])
        elif op == "X":
            pieces.append("".join(rng.choice([b for b in "ACGT" if b != target_text[ti + k]])
                                  for k in range(length)))
        elif op == "I":
            pieces.append("".join(rng.choice("ACGT") for _ in range(length)))
        if op != "I":
            ti += length
        runs.append((length, op))
    runs.append((1, "="))
    pieces.append(target_text[ti])
    aligned_text = "".join(pieces)
    head = "".join(rng.choice("acgtACGT") for _ in range(rng.randint(0, 5)))
    tail = "".join(rng.choice("acgtACGT") for _ in range(rng.randint(0, 5)))
    forward_piece = aligned_text if strand == "+" else reverse_complement_text(aligned_text)
    query = head + forward_piece + tail
    alignment = Alignment(query_id, target_id, len(query), n, len(head),
                          len(head) + len(forward_piece), start, ti + 1, strand, 0,
                          Cigar.from_runs(runs))
    return scored(alignment, query, target_text), query


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_md_and_nm_agree_with_samtools_calmd(tmp_path_factory, seed):
    rng = random.Random(seed)
    target_text = "".join(rng.choice("ACGT") for _ in range(60))
    alignments, queries = [], {}
    for k in range(6):
        alignment, query = random_alignment(rng, f"q{k}", "t", target_text, rng.choice("+-"))
        alignments.append(alignment)
        queries[alignment.query_id] = DNA.encode(alignment.query_id, query)
    tmp = tmp_path_factory.mktemp("calmd")
    fasta = tmp / "t.fa"
    fasta.write_text(">t\n" + target_text + "\n")
    path = str(tmp / "out.bam")
    write_alignments(path, alignments, queries, [DNA.encode("t", target_text)], DNA, "test")
    ours = {r.query_name: (r.get_tag("MD"), r.get_tag("NM")) for r in read_bam(path)[1]}
    recomputed = pysam.calmd(path, str(fasta)).splitlines()
    for line in recomputed:
        if line.startswith("@"):
            continue
        fields = line.split("\t")
        tags = dict((f[:2], f[5:]) for f in fields[11:])
        assert ours[fields[0]] == (tags["MD"], int(tags["NM"])), line


def n_gap_pair(tmp_path, extra_differences: bool):
    """A 3 kbp reference with an assembly gap (50 N) and a query that has the same gap and three
    SNPs; with ``extra_differences`` also an N and a Y against bases and an R against an R."""
    rng = np.random.default_rng(8)
    reference = list("".join(rng.choice(list("ACGT"), 3000)))
    reference[1000:1050] = "N" * 50
    if extra_differences:
        reference[2000] = "R"
    query = reference.copy()
    for k in (500, 1500, 2500):
        query[k] = "A" if query[k] != "A" else "C"
    if extra_differences:
        query[700], query[2200] = "N", "Y"
    (tmp_path / "r.fa").write_text(">ref\n" + "".join(reference) + "\n")
    (tmp_path / "q.fa").write_text(">query\n" + "".join(query) + "\n")


def run_global(tmp_path, command: str, out: str) -> None:
    assert main([command, "-q", str(tmp_path / "q.fa"), "-t", str(tmp_path / "r.fa"), "--mode", "global",
                 "--strand", "plus", "--backend", "cpu", "--out", str(tmp_path / out)]) == 0


@pytest.mark.parametrize("command, out", [("pairwise", "q.bam"), ("batch", "q.sam")])
def test_n_against_n_is_a_difference_in_nm_and_md_as_samtools_calmd_counts_it(tmp_path, command, out):
    """An assembly gap at the same place in query and reference, N and IUPAC codes against bases,
    R against R, and SNPs, through both SAM writers (pysam's for pairwise, the columnar one for
    batch): the CIGAR's '=' covers identical letters (N/N too, as BLAST counts identities), and NM
    and MD equal what samtools calmd computes from the reference."""
    n_gap_pair(tmp_path, extra_differences=True)
    run_global(tmp_path, command, out)
    with pysam.AlignmentFile(str(tmp_path / out)) as handle:
        record = next(iter(handle))
    assert record.cigarstring == "500=1X199=1X799=1X699=1X299=1X499="
    calmd = pysam.calmd(str(tmp_path / out), str(tmp_path / "r.fa"))
    recomputed = [line.split("\t") for line in calmd.splitlines() if not line.startswith("@")]
    tags = dict((field[:2], field[5:]) for field in recomputed[0][11:])
    assert (record.get_tag("MD"), record.get_tag("NM")) == (tags["MD"], int(tags["NM"])) and tags["NM"] == "55"


@pytest.mark.parametrize("command", ["pairwise", "batch"])
def test_n_against_n_in_paf_nmatch_nm_and_sam_de_as_minimap2_counts_it(tmp_path, command):
    """The gap pair with three SNPs: minimap2 (``-c --eqx``) writes ``=`` over the N/N columns but
    leaves them out of nmatch (2947) and of the block length (2950), counts them in NM (53) and
    de (53 / 3000) and gives their number in nn (50); both PAF writers and both SAM writers do the
    same, and agree with minimap2 itself where it is installed."""
    n_gap_pair(tmp_path, extra_differences=False)
    run_global(tmp_path, command, "q.paf")
    run_global(tmp_path, command, "q.sam")
    row = read_paf(str(tmp_path / "q.paf"))[0]
    with pysam.AlignmentFile(str(tmp_path / "q.sam")) as handle:
        record = next(iter(handle))
    ours = (row["nmatch"], row["alen"], row["NM"], row["nn"], row["cg"], record.get_tag("NM"),
            round(record.get_tag("de"), 4))
    assert ours == (2947, 2950, 53, 50, "500=1X999=1X999=1X499=", 53, 0.0177)
    if shutil.which("minimap2") is None:
        return
    paf = subprocess.run(["minimap2", "-c", "--eqx", str(tmp_path / "r.fa"), str(tmp_path / "q.fa")],
                         check=True, capture_output=True, text=True).stdout.split("\t")
    tags = dict((field[:2], field[5:]) for field in paf[12:])
    assert (int(paf[9]), int(paf[10]), int(tags["NM"]), int(tags["nn"]), tags["cg"].strip(),
            round(float(tags["de"]), 4)) == ours[:5] + ours[6:]


def test_ambiguous_columns_equal_a_column_by_column_count():
    """:func:`ambiguous_columns` (runs located by search) against a plain walk over every column,
    on random paths with N, R and lower case on both sides and runs of every operation."""
    rng = random.Random(5)
    letters = "ACGTNRacgtn"
    for _ in range(2000):
        ops = "".join(rng.choice("=XID") * rng.randint(1, 4) for _ in range(rng.randint(0, 12)))
        query = [rng.choice(letters) for op in ops if op != "D"]
        target = [rng.choice(letters) for op in ops if op != "I"]
        expected = [0, 0]
        q = t = 0
        for op in ops:
            in_query = op != "D" and query[q].upper() not in "ACGT"
            if op == "=":
                target[t] = query[q]
            in_target = op != "I" and target[t].upper() not in "ACGT"
            expected[0] += op == "=" and in_target
            expected[1] += in_query or in_target
            q += op != "D"
            t += op != "I"
        assert ambiguous_columns(Cigar.from_ops(ops), "".join(query), "".join(target)) == tuple(expected), ops


def ambiguous_pair(tmp_path, strand: str) -> None:
    """A 3 kbp reference with six N where the query has bases (D columns over N) and the query
    with R against R, R against bases, SNPs and a 5 bp deletion; on ``'-'`` the query is written
    reverse complemented."""
    rng = random.Random(3)
    reference = [rng.choice("ACGT") for _ in range(3000)]
    query = reference.copy()
    for k in range(1000, 1010):
        query[k] = reference[k] = "R"
    for k in range(1200, 1210):
        query[k] = "R"
    for k in range(1500, 3000, 97):
        query[k] = "ACGT"[("ACGT".index(query[k]) + 1) % 4]
    del query[2200:2205]
    reference[2500:2500] = "NNNNNN"
    query_text = "".join(query) if strand == "+" else reverse_complement_text("".join(query))
    (tmp_path / "r.fa").write_text(">ref\n" + "".join(reference) + "\n")
    (tmp_path / "q.fa").write_text(">query\n" + query_text + "\n")


@pytest.mark.parametrize("strand", ["+", "-"])
@pytest.mark.parametrize("command", ["pairwise", "batch"])
def test_ambiguous_bases_in_paf_as_minimap2_counts_them(tmp_path, command, strand):
    """R against R is an '=' column left out of nmatch and counted in NM; every column with an
    ambiguous base (R/R, R against a base, a deletion over N) is left out of the block length and
    counted in nn, on both strands and through both PAF writers: minimap2's figures (2959 matches
    in 2980 columns, NM 47, nn 26), checked against minimap2 itself where it is installed."""
    ambiguous_pair(tmp_path, strand)
    assert main([command, "-q", str(tmp_path / "q.fa"), "-t", str(tmp_path / "r.fa"), "--strand", "both",
                 "--backend", "cpu", "--out", str(tmp_path / "q.paf")]) == 0
    row = read_paf(str(tmp_path / "q.paf"))[0]
    ours = [row[key] for key in ("qstart", "qend", "strand", "tstart", "tend", "nmatch", "alen", "NM", "nn")]
    assert ours == [0, 2995, strand, 0, 3006, 2959, 2980, 47, 26]
    if shutil.which("minimap2") is None:
        return
    paf = subprocess.run(["minimap2", "-c", "--eqx", str(tmp_path / "r.fa"), str(tmp_path / "q.fa")],
                         check=True, capture_output=True, text=True).stdout.split("\t")
    tags = dict((field[:2], field[5:]) for field in paf[12:])
    assert [int(paf[2]), int(paf[3]), paf[4], int(paf[7]), int(paf[8]), int(paf[9]), int(paf[10]),
            int(tags["NM"]), int(tags["nn"])] == ours


def test_long_cigar_goes_to_cg_tag_and_reads_back(tmp_path):
    # Alternating =X over 70,000 columns: 70,000 CIGAR operations (> 65,535).
    rng = random.Random(7)
    target_text = "".join(rng.choice("ACGT") for _ in range(70_002))
    aligned = [target_text[1 + k] if k % 2 == 0 else ("A" if target_text[1 + k] != "A" else "C")
               for k in range(70_000)]
    query_text = "".join(aligned)
    cigar = Cigar.from_ops("".join("=" if k % 2 == 0 else "X" for k in range(70_000)))
    assert len(cigar) == 70_000
    alignment = scored(Alignment("long", "t", 70_000, 70_002, 0, 70_000, 1, 70_001, "+", 0, cigar),
                       query_text, target_text)
    queries = {"long": DNA.encode("long", query_text)}
    targets = [DNA.encode("t", target_text)]
    path = tmp_path / "long.bam"
    # A secondary copy has SEQ '*': the stand-in CIGAR must work without a sequence too.
    secondary = dataclasses.replace(alignment, is_primary=False, mapq=0)
    write_alignments(path, [alignment, secondary], queries, targets, DNA, "test")
    with gzip.open(path, "rb") as raw:
        data = raw.read()
    assert data.count(b"CGBI") == 2  # the real CIGARs travel in CG:B,I
    _, records = read_bam(path)
    assert [r.cigarstring == str(cigar) for r in records] == [True, True]
    assert not records[0].has_tag("CG")  # pysam restored the CIGAR from the tag
    assert records[0].get_reference_sequence().upper() == target_text[1:70_001]
    assert records[1].query_sequence is None and records[1].is_secondary
    assert pysam.quickcheck(str(path)) == ""
    sam_path = tmp_path / "long.sam"
    write_alignments(sam_path, [alignment], queries, targets, DNA, "test", fmt="sam")
    line = [l for l in sam_path.read_text().splitlines() if not l.startswith("@")][0]
    assert line.split("\t")[5] == str(cigar)


def test_csi_index_when_a_target_exceeds_512_mbp(tmp_path):
    alignments, queries, targets = hand_alignments()
    path = str(tmp_path / "big.bam")
    (tmp_path / "big.bam.bai").write_text("stale index from an earlier run")
    write_alignments(path, alignments, queries, targets + [("chr_huge", 2**29 + 1)], DNA, "test")
    assert os.path.exists(path + ".csi") and not os.path.exists(path + ".bai")
    header, _ = read_bam(path)
    assert header["SQ"][-1] == {"SN": "chr_huge", "LN": 2**29 + 1}
    assert pysam.view("-c", path, "t1").strip() == "2"
    # Exactly 2**29 still fits a .bai.
    write_alignments(path, alignments, queries, targets + [("chr_edge", 2**29)], DNA, "test")
    assert os.path.exists(path + ".bai") and not os.path.exists(path + ".csi")


def test_protein_alignments_carry_no_seq(tmp_path):
    query, target = "MKTAYIAKQR", "GGMKTWYIAKQRGG"
    alignment = scored(Alignment("p", "db1", 10, 14, 0, 10, 2, 12, "+", 0,
                                 Cigar.from_string("3=1X6=")), query, target, scheme=PROTEIN)
    path = tmp_path / "p.sam"
    write_alignments(path, [alignment], {"p": PROTEIN.encode("p", query)},
                     [PROTEIN.encode("db1", target)], PROTEIN, "test", fmt="sam")
    _, records = read_bam(path)
    assert records[0].query_sequence is None
    assert records[0].cigarstring == "3=1X6="
    assert records[0].get_tag("MD") == "3W6"
    assert records[0].get_tag("AS") == alignment.score


def test_unsorted_output_keeps_input_order(tmp_path):
    alignments, queries, targets = hand_alignments()
    path = tmp_path / "u.bam"
    write_alignments(path, alignments, queries, targets, DNA, "test", sort=False)
    header, records = read_bam(path)
    assert header["HD"]["SO"] == "unsorted"
    assert [(r.query_name, r.reference_name) for r in records] == [("q1", "t2"), ("q2", "t1"),
                                                                    ("q1", "t1")]
    assert not os.path.exists(str(path) + ".bai")


def test_failure_mid_write_leaves_no_file(tmp_path, monkeypatch):
    alignments, queries, targets = hand_alignments()
    real_record = sam_module._record
    calls = []

    def failing_record(*args):
        calls.append(1)
        if len(calls) == 2:
            raise RuntimeError("disk on fire")
        return real_record(*args)

    monkeypatch.setattr(sam_module, "_record", failing_record)
    for fmt in ("bam", "sam"):
        calls.clear()
        with pytest.raises(RuntimeError, match="disk on fire"):
            write_alignments(tmp_path / f"out.{fmt}", alignments, queries, targets, DNA, "t", fmt=fmt)
    assert os.listdir(tmp_path) == []


def test_bad_arguments_are_refused_before_writing(tmp_path):
    alignments, queries, targets = hand_alignments()
    with pytest.raises(ValueError, match="'t2' is not among the targets"):
        write_alignments(tmp_path / "x.bam", alignments, queries, [targets[0]], DNA, "t")
    with pytest.raises(ValueError, match="without its sequence"):
        write_alignments(tmp_path / "x.bam", alignments, queries, [targets[0], ("t2", 10)], DNA, "t")
    with pytest.raises(ValueError, match="missing from queries"):
        write_alignments(tmp_path / "x.bam", alignments, {}, targets, DNA, "t")
    with pytest.raises(ValueError, match="fmt"):
        write_alignments(tmp_path / "x.cram", alignments, queries, targets, DNA, "t", fmt="cram")
    assert os.listdir(tmp_path) == []


# --------------------------------------------------------------------------- merging shards


def test_merge_equals_writing_everything_at_once(tmp_path):
    alignments, queries, targets = hand_alignments()
    rng = random.Random(3)
    extra = []
    for k in range(20):
        alignment, query = random_alignment(rng, f"r{k}", "t1", T1, rng.choice("+-"))
        extra.append(alignment)
        queries[alignment.query_id] = DNA.encode(alignment.query_id, query)
    shard_a, shard_b = alignments + extra[:10], extra[10:]
    write_alignments(tmp_path / "a.bam", shard_a, queries, targets, DNA, "gpualign shard a")
    write_alignments(tmp_path / "b.bam", shard_b, queries, targets, DNA, "gpualign shard b")
    write_alignments(tmp_path / "all.bam", shard_a + shard_b, queries, targets, DNA, "all")
    merged = tmp_path / "merged.bam"
    merge_bams(merged, [tmp_path / "a.bam", tmp_path / "b.bam"], command_line="gpualign merge")
    header, records = read_bam(merged)
    _, expected = read_bam(tmp_path / "all.bam")
    assert [r.to_string() for r in records] == [r.to_string() for r in expected]
    assert [(p["ID"], p["CL"]) for p in header["PG"]] == [
        ("gpualign", "gpualign shard a"), ("gpualign.1", "gpualign shard b"),
        ("gpualign.merge", "gpualign merge")]
    assert header["SQ"] == read_bam(tmp_path / "a.bam")[0]["SQ"]
    assert os.path.exists(str(merged) + ".bai")
    assert pysam.quickcheck(str(merged)) == ""
    assert pysam.view("-c", str(merged), "t1").strip() == str(len(records) - 1)


def test_merge_refuses_mismatched_or_unsorted_inputs(tmp_path):
    alignments, queries, targets = hand_alignments()
    write_alignments(tmp_path / "a.bam", alignments, queries, targets, DNA, "a")
    write_alignments(tmp_path / "other.bam", alignments, queries, targets[:2], DNA, "b")
    write_alignments(tmp_path / "unsorted.bam", alignments, queries, targets, DNA, "c", sort=False)
    cases = [
        ([tmp_path / "a.bam", tmp_path / "other.bam"], r"other\.bam: reference sequences"),
        ([tmp_path / "a.bam", tmp_path / "unsorted.bam"], r"unsorted\.bam: not sorted"),
        ([tmp_path / "a.bam", tmp_path / "missing.bam"], r"missing\.bam: no such file"),
        ([], "no BAM files"),
    ]
    for inputs, message in cases:
        with pytest.raises(InputError, match=message):
            merge_bams(tmp_path / "m.bam", inputs)
    assert not os.path.exists(tmp_path / "m.bam")


def test_merge_detects_records_out_of_order_and_leaves_no_output(tmp_path):
    alignments, queries, targets = hand_alignments()
    write_alignments(tmp_path / "a.bam", alignments, queries, targets, DNA, "a")
    # A file that claims coordinate order but breaks it: q1 on t2, then q2 on t1, then q1 on t1.
    with pysam.AlignmentFile(str(tmp_path / "a.bam")) as source:
        header = source.header.to_dict()
        records = list(source.fetch(until_eof=True))
    with pysam.AlignmentFile(str(tmp_path / "liar.bam"), "wb", header=header) as liar:
        for record in reversed(records):
            liar.write(record)
    with pytest.raises(InputError,
                       match=r"liar\.bam: record 'q2': records are not in coordinate order"):
        merge_bams(tmp_path / "m.bam", [tmp_path / "a.bam", tmp_path / "liar.bam"])
    assert sorted(os.listdir(tmp_path)) == ["a.bam", "a.bam.bai", "liar.bam"]


# --------------------------------------------------------------------------- PAF


def test_paf_lines_of_hand_examples_on_both_strands(tmp_path):
    alignments, _, _ = hand_alignments()
    path = tmp_path / "out.paf"
    write_paf(path, alignments)
    score_q2, score_q1 = alignments[1].score, alignments[2].score
    assert (score_q2, score_q1) == (9 * 2 - 3, 3)
    assert path.read_text() == (
        "q1\t19\t2\t6\t+\tt2\t10\t0\t4\t4\t4\t0\ttp:A:S\tAS:i:8\tNM:i:0\tcg:Z:4=\n"
        "q2\t13\t2\t12\t-\tt1\t21\t4\t14\t9\t10\t37\ttp:A:P\tAS:i:15\tNM:i:1\tcg:Z:4=1X5=\n"
        "q1\t19\t2\t16\t+\tt1\t21\t4\t17\t11\t15\t60\ttp:A:P\tAS:i:3\tNM:i:4\tcg:Z:4=2I2=1X3=1D2=\n")
    # Minus strand: the CIGAR reads the reverse complement of q2[2:12] along t1[4:14].
    assert reverse_complement_text(Q2[2:12]) == "ACGTTCGATT" and T1[4:14] == "ACGTACGATT"


def test_paf_round_trip_through_the_reader(tmp_path):
    alignments, _, _ = hand_alignments()
    path = tmp_path / "out.paf"
    write_paf(path, alignments)
    rows = read_paf(path)
    assert rows[1] == {
        "qname": "q2", "qlen": 13, "qstart": 2, "qend": 12, "strand": "-", "tname": "t1",
        "tlen": 21, "tstart": 4, "tend": 14, "nmatch": 9, "alen": 10, "mapq": 37,
        "tp": "P", "AS": 15, "NM": 1, "cg": "4=1X5="}
    for row, alignment in zip(rows, alignments):
        assert Cigar.from_string(row["cg"]) == alignment.cigar
        assert (row["qstart"], row["tend"]) == (alignment.query_start, alignment.target_end)


def test_paf_to_an_open_handle_and_with_float_tags(tmp_path):
    buffer = io.StringIO()
    alignments, _, _ = hand_alignments()
    write_paf(buffer, alignments[:1])
    assert buffer.getvalue().count("\n") == 1 and not buffer.closed
    path = tmp_path / "mm2.paf"
    path.write_text(buffer.getvalue().rstrip("\n") + "\tde:f:0.0123\n")
    assert read_paf(path)[0]["de"] == pytest.approx(0.0123)


def test_paf_reader_names_file_and_line_of_bad_input(tmp_path):
    path = tmp_path / "bad.paf"
    good = paf_line(hand_alignments()[0][0])
    for text, message in [(good + "\nq\t1\t2\n", "line 2: PAF line has 3 columns"),
                          (good.replace("\t19\t", "\tnineteen\t", 1), "line 1: column qlen"),
                          (good + "\tAS:i:x", "line 1: malformed PAF tag"),
                          (good + "\n" + good.replace("\t+\t", "\t*\t", 1),
                           "line 2: column strand is not '\\+' or '-': '\\*'"),
                          (good + "\tbroken", "line 1: malformed PAF tag")]:
        path.write_text(text)
        with pytest.raises(InputError, match=f"bad.paf: {message}"):
            read_paf(path)
    with pytest.raises(InputError, match="no such file"):
        read_paf(tmp_path / "missing.paf")


@pytest.mark.parametrize("command", [
    ["best-pairs", "--paf", "{bad}", "--out", "{tmp}/pairs.txt"],
    ["triplets", "--hits", "{bad}", "{bad}", "--out", "{tmp}/triplets.tsv"],
    ["split", "--lines", "{bad}", "--parts", "2", "--out-dir", "{tmp}/parts"],
    ["merge-hits", "{bad}", "--out-blast", "{tmp}/hits.m8"],
    ["merge-alignments", "--paf", "{bad}", "--out-paf", "{tmp}/merged.paf"],
    ["merge-alignments", "--maf", "{bad}", "--out-maf", "{tmp}/merged.maf"],
], ids=lambda command: "_".join(command[:2]))
def test_a_binary_text_input_is_one_line_exit_2(tmp_path, capsys, command):
    from gpualign_plugin.cli.main import main

    bad = tmp_path / "input.bam"
    bad.write_bytes(gzip.compress(b"BAM\x01" + bytes(range(256))))
    status = main([word.format(bad=bad, tmp=tmp_path) for word in command])
    err = capsys.readouterr().err.strip().splitlines()
    assert status == 2 and err == [f"gpualign: error: {bad}: not a UTF-8 text file"]
    assert sorted(p.name for p in tmp_path.iterdir() if p.name != "parts") == ["input.bam"]


def test_merge_alignments_writes_every_output_or_none(tmp_path, capsys):
    from gpualign_plugin.cli.main import main

    paf = tmp_path / "shard.paf"
    paf.write_text(paf_line(hand_alignments()[0][0]) + "\n")
    (tmp_path / "shard.maf").write_text("not a MAF\n")
    status = main(["merge-alignments", "--paf", str(paf), "--out-paf", str(tmp_path / "all.paf"),
                   "--maf", str(tmp_path / "shard.maf"), "--out-maf", str(tmp_path / "all.maf")])
    assert status == 2 and "shard.maf: line 1: not a MAF file" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["shard.maf", "shard.paf"]


def failing_after_first(items):
    yield items[0]
    raise RuntimeError("engine died")


def test_paf_failure_mid_write_leaves_no_file(tmp_path):
    alignments, _, _ = hand_alignments()
    with pytest.raises(RuntimeError, match="engine died"):
        write_paf(tmp_path / "out.paf", failing_after_first(alignments))
    assert os.listdir(tmp_path) == []


# --------------------------------------------------------------------------- pairwise text

HAND_TEXT = """\
########################################
# Program: gpualign {version}
# Commandline: gpualign pairwise -q q.fa -t t.fa --out x.txt
# Align_format: pair
# Matrix: match=2,mismatch=-3,ambiguity=-1
# Gap_open: 5
# Gap_extend: 2
# Gap_cost: a gap of k residues costs 5 + 2k
# Alignments: 2
########################################

#=======================================
#
# Aligned_sequences: 2
# 1: q2
# 2: t1
# Mode: local
# Strand: -
# Length: 10
# Identity:        9/10 (90.0%)
# Similarity:      9/10 (90.0%)
# Gaps:            0/10 ( 0.0%)
# Score: 15
#
#=======================================

q2                12 ACGTTCGATT      3
                     ||||.|||||
t1                 5 ACGTACGATT     14

#=======================================
#
# Aligned_sequences: 2
# 1: q1
# 2: t1
# Mode: local
# Strand: +
# Length: 15
# Identity:       11/15 (73.3%)
# Similarity:     11/15 (73.3%)
# Gaps:            3/15 (20.0%)
# Score: 3
#
#=======================================

q1                 3 ACGTGGACCATT-CA     16
                     ||||  ||.||| ||
t1                 5 ACGT--ACGATTGCA     17

#---------------------------------------
"""


def test_pairwise_text_of_hand_examples(tmp_path):
    from gpualign_plugin.version import __version__

    alignments, queries, targets = hand_alignments()
    path = tmp_path / "out.txt"
    write_pairwise_text(path, alignments[1:], queries, targets, DNA,
                        "gpualign pairwise -q q.fa\t-t t.fa --out x.txt")
    assert path.read_text() == HAND_TEXT.format(version=__version__)


def test_pairwise_text_wraps_at_60_columns_and_keeps_case():
    # 5 identical columns, a 130-residue insertion (a whole line without target residues), 5 more.
    query_text = "ACGTA" + "t" * 130 + "CGTAC"
    target_text = "ACGTACGTAC"
    alignment = scored(Alignment("query_one", "target", 140, 10, 0, 140, 0, 10, "+", 0,
                                 Cigar.from_string("5=130I5="), mode="global"),
                       query_text, target_text)
    assert alignment.score == 10 * 2 - (5 + 130 * 2)
    block = format_alignment(alignment, DNA.encode("query_one", query_text),
                             DNA.encode("target", target_text), DNA)
    body = block.split("#=======================================\n")[-1]
    pad = " " * 21
    assert body == (
        "\n"
        "query_one          1 ACGTA" + "t" * 55 + "     60\n"
        + pad + "|||||" + " " * 55 + "\n"
        "target             1 ACGTA" + "-" * 55 + "      5\n"
        "\n"
        "query_one         61 " + "t" * 60 + "    120\n"
        + pad + " " * 60 + "\n"
        "target             5 " + "-" * 60 + "      5\n"
        "\n"
        "query_one        121 " + "t" * 15 + "CGTAC    140\n"
        + pad + " " * 15 + "|||||\n"
        "target             6 " + "-" * 15 + "CGTAC     10\n"
        "\n")
    assert "# Gaps:          130/140 (92.9%)" in block
    assert "# Mode: global" in block


def test_pairwise_text_match_line_for_protein():
    query_text, target_text = "MKTAYIAKQR", "MKTWYVAKQR"
    alignment = scored(Alignment("p", "db", 10, 10, 0, 10, 0, 10, "+", 0,
                                 Cigar.from_string("3=1X1=1X4=")), query_text, target_text,
                       scheme=PROTEIN)
    block = format_alignment(alignment, PROTEIN.encode("p", query_text),
                             PROTEIN.encode("db", target_text), PROTEIN)
    # A/W scores -3 in BLOSUM62 ('.'), I/V scores 3 (':').
    assert PROTEIN.matrix[PROTEIN.alphabet.encode("A")[0], PROTEIN.alphabet.encode("W")[0]] == -3
    assert PROTEIN.matrix[PROTEIN.alphabet.encode("I")[0], PROTEIN.alphabet.encode("V")[0]] == 3
    assert "\n" + " " * 21 + "|||.|:||||\n" in block
    assert "# Identity:        8/10 (80.0%)" in block
    assert "# Similarity:      9/10 (90.0%)" in block


def test_pairwise_text_failure_mid_write_leaves_no_file(tmp_path):
    alignments, queries, targets = hand_alignments()
    with pytest.raises(KeyError):
        write_pairwise_text(tmp_path / "out.txt", [alignments[1], alignments[0]], queries,
                            targets[:1], DNA, "test")
    assert os.listdir(tmp_path) == []


# --------------------------------------------------------------------------- aligned FASTA


def test_aligned_fasta_layout_by_hand():
    """Biopython's FASTA writer gives the documented layout: header fields, 60 columns, case kept."""
    from gpualign_plugin.io.msa import write_aligned_fasta
    from gpualign_plugin.model import MultipleAlignment

    rows = ("ac" + "G" * 60 + "-T", "AC" + "G" * 60 + "AT", "-C" + "G" * 60 + "AT")
    alignment = MultipleAlignment(ids=("a", "b", "c"), sources=("x.a", "x.b", "x.c"), rows=rows,
                                  score=7, starts=(0, 3, 5), ends=(63, 67, 68),
                                  strands=("+", "-", "+"), source_lengths=(63, 70, 80))
    handle = io.StringIO()
    write_aligned_fasta(handle, alignment)
    assert handle.getvalue() == (
        ">a source=x.a start=0 end=63 strand=+\nac" + "G" * 58 + "\nGG-T\n"
        ">b source=x.b start=3 end=67 strand=-\nAC" + "G" * 58 + "\nGGAT\n"
        ">c source=x.c start=5 end=68 strand=+\n-C" + "G" * 58 + "\nGGAT\n")
    narrow = io.StringIO()
    write_aligned_fasta(narrow, alignment, width=30)
    assert narrow.getvalue().splitlines()[1:4] == ["ac" + "G" * 28, "G" * 30, "GG-T"]


def test_vcf_alleles_with_ambiguity_codes_are_written_as_n(tmp_path):
    """VCF 4.2 alleles hold A, C, G, T and N only: an assembly's IUPAC code (R, Y, ...) is
    written N, lower case upper; N against an ambiguity code is no variant and is left out;
    bcftools reads the file."""
    from gpualign_plugin.io.vcf import VcfRecord, write_vcf

    records = [VcfRecord("chr", 4, "A", "R"), VcfRecord("chr", 9, "c", "t"),
               VcfRecord("chr", 14, "N", "Y"), VcfRecord("chr", 19, "G", "GkT")]
    path = tmp_path / "v.vcf"
    write_vcf(path, records, [("chr", 30)], "asm", [], "test", "gpualign compare")
    with pysam.VariantFile(str(path)) as vcf:
        assert [(r.pos, r.ref, r.alts) for r in vcf] == [(5, "A", ("N",)), (10, "C", ("T",)),
                                                         (20, "G", ("GNT",))]
    if shutil.which("bcftools"):
        subprocess.run(["bcftools", "view", "-H", str(path)], check=True, capture_output=True)


def test_aligned_fasta_and_clustal_rows_with_one_record_id_are_named_by_their_source():
    """Three genomes' records of one id (``--fasta human=hs.fa mouse=mm.fa dog=cf.fa``, each
    holding ``chr1``) were three ``>chr1`` records, which Biopython refuses to index, and three
    ``chr1`` rows in Clustal that no reader could tell apart; they are named by their MAF source
    (GENOME.RECORD), and distinct ids stay as they are."""
    from Bio import AlignIO, SeqIO

    from gpualign_plugin.io.msa import write_aligned_fasta, write_clustal
    from gpualign_plugin.model import MultipleAlignment

    rows = ("ACGT-A", "ACGTTA", "AC-TTA")
    common = dict(rows=rows, score=5, starts=(0, 0, 0), ends=(5, 6, 5), strands=("+", "+", "+"),
                  source_lengths=(5, 6, 5))
    alike = MultipleAlignment(ids=("chr1",) * 3, sources=("hs.chr1", "mm.chr1", "cf.chr1"), **common)
    fasta, clustal = io.StringIO(), io.StringIO()
    write_aligned_fasta(fasta, alike)
    write_clustal(clustal, alike)
    fasta.seek(0)
    assert list(SeqIO.to_dict(SeqIO.parse(fasta, "fasta"))) == ["hs.chr1", "mm.chr1", "cf.chr1"]
    assert ">hs.chr1 source=hs.chr1 start=0 end=5 strand=+" in fasta.getvalue()
    clustal.seek(0)
    assert [r.id for r in AlignIO.read(clustal, "clustal")] == ["hs.chr1", "mm.chr1", "cf.chr1"]
    # The same record three times (one file given thrice): numbered.
    same = MultipleAlignment(ids=("x",) * 3, sources=("x",) * 3, **common)
    fasta = io.StringIO()
    write_aligned_fasta(fasta, same)
    assert [line.split()[0] for line in fasta.getvalue().splitlines() if line.startswith(">")] == \
        [">x_1", ">x_2", ">x_3"]


def _first_bad_name(names, good):
    """The first of ``names`` that ``good`` refuses, or None: the per-name rule, as an oracle."""
    return next((name for name in names if not good(name)), None)


def _good_query_name(name):
    return name != "*" and re.fullmatch(r"[!-?A-~]*", name) is not None and len(name) <= 254


def _good_reference_name(name):
    return re.fullmatch(r"[0-9A-Za-z!#$%&+./:;?@^_|~-][0-9A-Za-z!#$%&*+./:;=?@^_|~-]*", name) is not None


_NAME_PIECES = ["r1", "chr2", "a*b", "x=y", "*", "=", "", "@r", "r@", "a b", "a\nb", "a,b", "é", "\t", "q" * 255,
                "q" * 254, "ok.1", "|x|", "(x)"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(_NAME_PIECES), max_size=12), st.integers(0, 3))
def test_name_checks_refuse_the_first_name_the_sam_grammar_refuses(pieces, valid_before):
    # The checks look at all names joined at once (or, for Names, at all their bytes) and fall
    # back to one name at a time only when that finds something: whatever the mix, they must
    # refuse exactly the first name the per-name rule refuses (names holding a newline
    # included) and accept every other list.
    names = [f"read{k}" for k in range(valid_before)] + pieces
    for check, good in ((sam_module.check_query_names, _good_query_name),
                        (sam_module.check_target_names, _good_reference_name)):
        bad = _first_bad_name(names, good)
        for form in [iter(names)] + ([Names.of(names)] if not any("\n" in name for name in names) else []):
            if bad is None:
                check(form, path="names.fa")
            else:
                with pytest.raises(InputError) as info:
                    check(form, path="names.fa")
                assert info.value.record == bad and info.value.path == "names.fa"
