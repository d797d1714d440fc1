"""``gpualign compare`` against MUMmer's dnadiff on a fragmented, rearranged assembly, and its files."""

from __future__ import annotations

import os
import random
import re
import shutil
import subprocess
import sys

import pysam
import pytest

from paths import RESOURCES
from strains import collapsed_repeat, fragments, simulated

from gpualign_plugin.scoring import reverse_complement_text

MAIN = [sys.executable, "-m", "gpualign_plugin.cli.main"]
ROWS = ("TotalSeqs", "AlignedSeqs", "TotalBases", "AlignedBases", "Breakpoints", "Relocations",
        "Translocations", "Inversions", "Insertions", "InsertionSum", "TotalSNPs", "TotalGSNPs",
        "TotalIndels", "TotalGIndels")


def report_rows(path) -> dict:
    """``{label: (REF, QRY)}`` of a dnadiff-layout report (first occurrence of each label)."""
    rows = {}
    for line in open(path, encoding="utf-8"):
        fields = line.split()
        if len(fields) == 3 and fields[0] not in rows and not fields[0].startswith("["):
            rows[fields[0]] = (fields[1], fields[2])
    return rows


def vcf_substitutions(path) -> set:
    """(reference record, 1-based position) of each single-base substitution of a VCF."""
    rows = (line.split("\t") for line in open(path) if not line.startswith("#"))
    return {(f[0], int(f[1])) for f in rows if len(f[3]) == len(f[4]) == 1}


def dnadiff_differences(path) -> tuple[set, set]:
    """The substitutions and the indel positions of dnadiff's ``.snps``, each as (reference
    record, 1-based position) (show-snps rows: P1 SUB SUB P2 ... R Q; '.' on an indel's gap side)."""
    substitutions, indels = set(), set()
    for fields in (line.split("\t") for line in open(path)):
        (indels if "." in fields[1:3] else substitutions).add((fields[10], int(fields[0])))
    return substitutions, indels


def number(cell: str) -> float:
    return float(re.match(r"[\d.]+", cell).group(0))


def percent(cell: str) -> float:
    return float(re.search(r"\(([\d.]+)%\)", cell).group(1))


def compare_rows(directory, reference: str, contigs: list[tuple[str, str]], *options: str) -> dict:
    """Report rows of `gpualign compare` (CPU, with ``options``) of the contigs against the
    reference, written as ``ref.fa`` and ``asm.fa`` in ``directory``."""
    (directory / "ref.fa").write_text(f">ref\n{reference}\n")
    (directory / "asm.fa").write_text("".join(f">{name}\n{text}\n" for name, text in contigs))
    subprocess.run(MAIN + ["compare", "-q", str(directory / "asm.fa"), "-t", str(directory / "ref.fa"),
                           "-p", str(directory / "asm"), "--backend", "cpu", *options], check=True, capture_output=True)
    return report_rows(directory / "asm.report")


def ours_and_dnadiff(directory, reference: str, contigs: list[tuple[str, str]]) -> tuple[dict, dict]:
    """Report rows of `gpualign compare` (CPU) and of dnadiff on the same reference and contigs."""
    ours = compare_rows(directory, reference, contigs)
    subprocess.run(["dnadiff", "-p", str(directory / "dnadiff"), str(directory / "ref.fa"),
                    str(directory / "asm.fa")], check=True, capture_output=True)
    return ours, report_rows(directory / "dnadiff.report")


@pytest.fixture(scope="module")
def assembly(tmp_path_factory):
    """A rearranged strain cut into four contigs, every other one reversed, and our run on it."""
    directory = tmp_path_factory.mktemp("compare")
    reference, strain, events = simulated(5)
    contigs, _ = fragments(strain, events, 5)
    (directory / "ref.fa").write_text(f">ref\n{reference}\n")
    (directory / "asm.fa").write_text("".join(f">{name}\n{text}\n" for name, text in contigs))
    result = subprocess.run(MAIN + ["compare", "--query", str(directory / "asm.fa"), "--target",
                                    str(directory / "ref.fa"), "--prefix", str(directory / "asm"),
                                    "--backend", "cpu"], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    return directory


@pytest.mark.tools("samtools")
def test_a_contig_without_a_placement_is_an_unmapped_bam_record(tmp_path):
    # As `gpualign pairwise` writes it, so that samtools flagstat counts it.
    reference, _, _ = simulated(5)
    rng = random.Random(7)
    unrelated = "".join(rng.choice("ACGT") for _ in range(3000))
    (tmp_path / "ref.fa").write_text(f">ref\n{reference}\n")
    (tmp_path / "asm.fa").write_text(f">piece\n{reference[2000:6000]}\n>unrelated\n{unrelated}\n")
    result = subprocess.run(MAIN + ["compare", "--query", str(tmp_path / "asm.fa"), "--target",
                                    str(tmp_path / "ref.fa"), "--prefix", str(tmp_path / "asm"),
                                    "--backend", "cpu"], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    with pysam.AlignmentFile(str(tmp_path / "asm.bam")) as bam:
        records = [(r.query_name, r.is_unmapped) for r in bam]
    assert records == [("piece", False), ("unrelated", True)]
    flagstat = subprocess.run(["samtools", "flagstat", str(tmp_path / "asm.bam")],
                              capture_output=True, text=True, check=True).stdout
    assert re.search(r"^2 \+ 0 in total", flagstat, re.M)
    assert re.search(r"^1 \+ 0 mapped", flagstat, re.M), flagstat


@pytest.mark.tools("dnadiff")
def test_report_agrees_with_dnadiff(assembly):
    subprocess.run(["dnadiff", "-p", str(assembly / "dnadiff"), str(assembly / "ref.fa"),
                    str(assembly / "asm.fa")], check=True, capture_output=True)
    theirs = report_rows(assembly / "dnadiff.report")
    ours = report_rows(assembly / "asm.report")
    side_by_side = "\n".join(f"{label:15} dnadiff {theirs[label]}  gpualign {ours[label]}"
                             for label in ROWS)
    print("\n" + side_by_side)
    for column in (0, 1):
        assert abs(percent(ours["AlignedBases"][column])
                   - percent(theirs["AlignedBases"][column])) <= 1.0, side_by_side
        for label in ("TotalSeqs", "TotalBases", "Relocations", "Translocations", "Inversions"):
            assert ours[label][column] == theirs[label][column], side_by_side
    snps, their_snps = number(ours["TotalSNPs"][0]), number(theirs["TotalSNPs"][0])
    assert abs(snps - their_snps) <= 0.02 * their_snps, side_by_side
    # Indel bases and show-snps' buffers ("good" SNPs and indels) agree as closely.
    for label in ("TotalGSNPs", "TotalIndels", "TotalGIndels"):
        ours_value, theirs_value = number(ours[label][0]), number(theirs[label][0])
        assert abs(ours_value - theirs_value) <= max(1.0, 0.05 * theirs_value), side_by_side


def messy_lambda_assembly() -> tuple[str, list[tuple[str, str]]]:
    """The lambda phage genome and an assembly of a 1%-divergent strain of it as assemblers
    write them: a soft-masked stretch, a minus-strand contig with a 100 N scaffold gap, IUPAC
    codes, a minus-strand contig all in lower case, an unrelated contig and one of N only."""
    reference = "".join(line.strip() for line in open(os.path.join(RESOURCES, "genomes", "lambda.fa"))
                        if not line.startswith(">"))
    rng = random.Random(11)
    strain = []
    for base in reference:
        draw = rng.random()
        if draw < 0.01:
            strain.append(rng.choice([b for b in "ACGT" if b != base]))
        elif draw < 0.011:
            continue
        elif draw < 0.012:
            strain.append(base + rng.choice("ACGT"))
        else:
            strain.append(base)
    strain = "".join(strain)
    iupac = list(strain[20500:30000])
    for k in range(100, len(iupac), 900):
        iupac[k] = rng.choice("RYKMSW")
    gapped = strain[9200:14200] + "N" * 100 + strain[14300:20000]
    contigs = [("c1_softmasked", strain[:3000] + strain[3000:4500].lower() + strain[4500:9000]),
               ("c2_minus_gap", reverse_complement_text(gapped)),
               ("c3_iupac", "".join(iupac)),
               ("c4_unrelated", "".join(rng.choice("ACGT") for _ in range(5000))),
               ("c6_minus_lower", reverse_complement_text(strain[32000:47000].lower())),
               ("c7_all_n", "N" * 500)]
    return reference, contigs


def test_a_messy_assembly_reports_what_dnadiff_reports(tmp_path):
    """Every count of the report equals dnadiff's (MUMmer 4, measured: 4 of 6 contigs aligned,
    44202 / 44197 bases aligned at 98.90%, 402 SNPs, 9 / 3 breakpoints, 2 assembly insertions of
    103 bases, 3 translocations). c2's last bases follow an indel: the exact syntenic alignment
    of its grown end forced them through as three mismatches, three false SNPs, until the grown
    ends were cut back where their score peaks (nucmer leaves them unaligned too)."""
    reference, contigs = messy_lambda_assembly()
    ours, theirs = ours_and_dnadiff(tmp_path, reference, contigs) if shutil.which("dnadiff") else \
        (compare_rows(tmp_path, reference, contigs), None)
    expected = {"AlignedSeqs": ("1(100.00%)", "4(66.67%)"), "AlignedBases": ("44202(91.13%)", "44197(88.75%)"),
                "1-to-1": ("5", "5"), "AvgIdentity": ("98.90", "98.90"), "Breakpoints": ("9", "3"),
                "Translocations": ("3", "0"), "Insertions": ("5", "2"), "InsertionSum": ("4300", "103"),
                "TotalSNPs": ("402", "402")}
    assert {label: ours[label] for label in expected} == expected
    if theirs is not None:
        labels = [label for label in theirs if label in ours and not re.fullmatch(r"[ACGTNRYKMSWBDHV.]{2}", label)]
        assert {label: ours[label] for label in labels} == {label: theirs[label] for label in labels}


@pytest.mark.tools("dnadiff")
def test_a_collapsed_repeat_counts_every_reference_copy_as_dnadiff(tmp_path):
    # The reference holds a 1.5 kbp repeat three times; the assembly has the unique parts
    # (two of them reversed) and the repeat once, as short-read assemblies do.
    reference, unique, repeat = collapsed_repeat()
    contigs = [unique[0], reverse_complement_text(unique[1]), unique[2],
               reverse_complement_text(unique[3]), repeat]
    ours, theirs = ours_and_dnadiff(tmp_path, reference, [(f"c{k}", c) for k, c in enumerate(contigs)])
    for label in ("AlignedSeqs", "AlignedBases", "1-to-1", "M-to-M", "Breakpoints",
                  "Translocations", "Relocations", "Inversions"):
        assert ours[label] == theirs[label], (label, ours[label], theirs[label])
    assert ours["AlignedBases"][0].strip().startswith(str(len(reference)))


@pytest.mark.tools("dnadiff")
def test_snps_where_the_ends_of_a_circular_contig_overlap_count_once_as_in_dnadiff(tmp_path):
    # A complete circular assembly starts elsewhere than the reference and repeats its first
    # 600 bases at its end: those reference bases are aligned twice. dnadiff (show-snps -C)
    # leaves the SNPs there out of its totals; so do we.
    reference, _, _ = simulated(6)
    rng = random.Random(6)
    strain = "".join(c if rng.random() > 0.01 else rng.choice("ACGT".replace(c, "")) for c in reference)
    start = len(strain) // 3
    contig = strain[start:] + strain[:start + 600]
    ours, theirs = ours_and_dnadiff(tmp_path, reference, [("circle", contig)])
    overlap_snps = sum(a != b for a, b in zip(strain[start:start + 600], reference[start:start + 600]))
    assert overlap_snps > 2
    for label in ("Relocations", "TotalIndels"):
        assert ours[label] == theirs[label], (label, ours[label], theirs[label])
    for side in (0, 1):  # the same alignments, their ends a few bases apart (below)
        assert abs(number(ours["AlignedBases"][side]) - number(theirs["AlignedBases"][side])) <= 10
        assert abs(number(ours["Breakpoints"][side]) - number(theirs["Breakpoints"][side])) <= 1
    # Counted twice, the overlap's SNPs would put us overlap_snps above dnadiff. The overlap's
    # edges may differ by a SNP: an exact local alignment keeps a few matches before a mismatch
    # at its end, which nucmer trims (docs/COMPARE.md); here the contig's first 3 bases, which
    # also make dnadiff count a query breakpoint more.
    for label in ("TotalSNPs", "TotalGSNPs"):
        assert abs(number(ours[label][0]) - number(theirs[label][0])) <= 2, (label, ours[label], theirs[label])


@pytest.mark.tools("dnadiff")
def test_a_redundant_contig_is_not_a_one_to_one_alignment_as_in_dnadiff(tmp_path):
    # An assembly with a whole-genome contig and two redundant pieces of it (one reversed):
    # dnadiff's 1-to-1 set keeps one alignment per reference position, its M-to-M set all three.
    reference, _, _ = simulated(7)
    pieces = [reference, reference[3000:6000], reverse_complement_text(reference[8000:9500])]
    ours, theirs = ours_and_dnadiff(tmp_path, reference, [(f"c{k}", c) for k, c in enumerate(pieces)])
    assert ours["1-to-1"] == theirs["1-to-1"] == ("1", "1")
    assert ours["M-to-M"] == theirs["M-to-M"] == ("3", "3")
    assert ours["AlignedBases"] == theirs["AlignedBases"]


@pytest.mark.tools("dnadiff")
def test_snps_under_a_redundant_contig_count_as_in_dnadiff(tmp_path):
    # A whole-genome contig with SNPs and a redundant piece of it: dnadiff's SNPs come from its
    # 1-to-1 alignments (show-snps -C on the .1delta), where the piece's alignment is filtered
    # out, so the whole contig's SNPs under the piece are unambiguous and count.
    reference, _, _ = simulated(8)
    rng = random.Random(8)
    strain = "".join(c if rng.random() > 0.01 else rng.choice("ACGT".replace(c, "")) for c in reference)
    ours, theirs = ours_and_dnadiff(tmp_path, reference, [("whole", strain), ("piece", strain[3000:6000])])
    assert number(theirs["TotalSNPs"][0]) > sum(a != b for a, b in zip(strain[3000:6000], reference[3000:6000]))
    for label in ("TotalSNPs", "TotalGSNPs", "TotalIndels"):
        assert ours[label] == theirs[label], (label, ours[label], theirs[label])


@pytest.mark.tools("dnadiff")
def test_a_base_that_an_ambiguity_code_allows_is_no_snp_as_in_dnadiff(tmp_path):
    # A reference with IUPAC codes: show-snps skips a pair its CompareIUPAC accepts (R against
    # A or G, N against anything), so such a pair is no SNP and takes no SNP's buffer; a code
    # that excludes the contig's base (W against C) is one.
    reference, _, _ = simulated(9)
    rng = random.Random(9)
    strain = "".join(c if rng.random() > 0.005 else rng.choice("ACGT".replace(c, "")) for c in reference)
    codes = {"A": "RWMD", "C": "YSMB", "G": "RSKV", "T": "YWKH"}
    scaffold = list(reference)
    for k, position in enumerate(range(500, len(reference) - 500, 300)):
        allowed = codes[strain[position]]
        scaffold[position] = "N" if k % 5 == 0 else rng.choice(
            [c for c in "RYSWKM" if c not in allowed]) if k % 3 == 0 else rng.choice(allowed)
    ours, theirs = ours_and_dnadiff(tmp_path, "".join(scaffold), [("strain", strain)])
    for label in ("TotalSNPs", "TotalGSNPs"):
        assert ours[label] == theirs[label], (label, ours[label], theirs[label])


@pytest.mark.tools("dnadiff")
@pytest.mark.parametrize("length, seed", [(300, 10), (1000, 10), (1000, 12), (2500, 13)])
def test_a_tandem_duplication_is_a_tandem_insertion_as_in_dnadiff(tmp_path, length, seed):
    # Reference bases repeated in tandem in the assembly. The placement cuts the contig at the
    # copy, whose piece then abuts the first alignment on both sequences: one alignment for
    # nucmer (its end overlapping the next one: a tandem insertion), not a block out of order
    # (a relocation). Where the bases at a seam match on both sides of it, the copy's region
    # takes them back from the difference block (extend_over_matches): seed 10 with 1,000
    # bases has three such bases.
    reference, _, _ = simulated(seed)
    middle = len(reference) // 2
    contig = reference[:middle + length] + reference[middle:]
    ours, theirs = ours_and_dnadiff(tmp_path, reference, [("tandem", contig)])
    for label in ("AlignedBases", "1-to-1", "M-to-M", "Breakpoints", "Relocations", "Insertions",
                  "InsertionSum", "TandemIns", "TandemInsSum"):
        assert ours[label] == theirs[label], (label, ours[label], theirs[label])


@pytest.mark.parametrize("moved", ["relocation", "inversion"])
def test_an_event_at_a_contig_end_spans_the_bases_it_aligns(tmp_path, moved):
    # The contig ends in 1,000 bases from elsewhere in the reference (forward or reversed) and
    # 150 foreign bases. The moved block's alignment window is grown to the contig's end
    # (END_EXTENSION), but the event is the 1,000 bases it aligns, not the window.
    reference, _, _ = simulated(11)
    block = reference[2000:3000] if moved == "relocation" else reverse_complement_text(reference[2000:3000])
    foreign = "".join(random.Random(11).choice("ACGT") for _ in range(150))
    compare_rows(tmp_path, reference, [("c", reference[6000:10000] + block + foreign)])
    rows = [line.rstrip("\n").split("\t") for line in open(tmp_path / "asm.differences.tsv")]
    events = [dict(zip(rows[0], row)) for row in rows[1:] if row[1] == moved]
    assert len(events) == 1
    query = int(events[0]["query_start"]), int(events[0]["query_end"])
    target = int(events[0]["target_start"]), int(events[0]["target_end"])
    # Chance matches may take a few bases more at either side of the block.
    assert abs(query[0] - 4000) <= 10 and abs(query[1] - 5000) <= 10, query
    assert abs(target[0] - 2000) <= 10 and abs(target[1] - 3000) <= 10, target


def test_indels_that_nucmer_aligns_through_are_indels_of_one_alignment_as_in_dnadiff(tmp_path):
    """Lambda with 1% SNPs and planted deletions of 26, 45, 60, 80 and 120 bases, insertions of 40
    and 150. nucmer aligns through all but the 120 and the 150 (dnadiff, measured: 3 alignments,
    4 / 4 breakpoints, one insertion each side, 252 indel bases). The syntenic alignment breaks
    at any gap longer than 23 bases: before ``join_small_differences``, 8 alignments, 14 / 14
    breakpoints, 6 / 2 insertions and no indel base. Now the 26, 45 and 40 are indels of one
    alignment; the 60 and 80, of ``--min-event`` (50) bases or more, stay deletion events (5
    alignments); with ``--min-event 85`` they are indels too: dnadiff's figures (251 indel
    bases: one base of a junction placed on the other side)."""
    reference = "".join(line.strip() for line in open(os.path.join(RESOURCES, "genomes", "lambda.fa"))
                        if not line.startswith(">"))
    rng = random.Random(3)
    strain = list(reference)
    for k in range(100, len(strain) - 100):  # clean ends: no end-extension differences
        if rng.random() < 0.01:
            strain[k] = rng.choice([b for b in "ACGT" if b != strain[k]])
    strain = "".join(strain)
    edits = [(6000, 26, 0), (12000, 45, 0), (18000, 60, 0), (24000, 80, 0), (30000, 0, 40), (36000, 120, 0),
             (42000, 0, 150)]
    pieces, last = [], 0
    for at, deleted, inserted in edits:
        pieces += [strain[last:at], "".join(rng.choice("ACGT") for _ in range(inserted))]
        last = at + deleted
    contigs = [("strain", "".join(pieces) + strain[last:])]
    ours = compare_rows(tmp_path, reference, contigs)
    assert (ours["1-to-1"], ours["Breakpoints"], ours["Insertions"], ours["TotalIndels"]) == \
        (("5", "5"), ("8", "8"), ("3", "1"), ("111", "111"))
    deletions = [line.split("\t")[7:10] for line in open(tmp_path / "asm.differences.tsv")
                 if line.split("\t")[1] == "deletion"]
    assert [int(length) for _, _, length in deletions] == [60, 80, 120]
    like_nucmer = compare_rows(tmp_path, reference, contigs, "--min-event", "85")
    assert (like_nucmer["1-to-1"], like_nucmer["Breakpoints"], like_nucmer["Insertions"],
            like_nucmer["InsertionSum"], like_nucmer["TotalIndels"]) == \
        (("3", "3"), ("4", "4"), ("1", "1"), ("120", "150"), ("251", "251"))
    if shutil.which("dnadiff"):
        subprocess.run(["dnadiff", "-p", str(tmp_path / "dnadiff"), str(tmp_path / "ref.fa"),
                        str(tmp_path / "asm.fa")], check=True, capture_output=True)
        theirs = report_rows(tmp_path / "dnadiff.report")
        for label in ("1-to-1", "Breakpoints", "Insertions"):
            assert like_nucmer[label] == theirs[label], (label, like_nucmer[label], theirs[label])
        assert abs(number(like_nucmer["TotalIndels"][0]) - number(theirs["TotalIndels"][0])) <= 1


@pytest.mark.tools("samtools", "bcftools")
def test_outputs_are_complete_and_readable(assembly):
    rows = report_rows(assembly / "asm.report")
    report = (assembly / "asm.report").read_text()
    assert re.search(r"^\s+\[REF\]\s+\[QRY\]$", report, re.M)
    for label in ("1-to-1", "M-to-M", "AvgIdentity", "TandemIns", "IndelEvents",
                  "InversionEvents", "RelocationEvents"):
        assert label in rows, label
    # The VCF holds every SNP and every indel event, and bcftools reads it.
    view = subprocess.run(["bcftools", "view", "-H", str(assembly / "asm.vcf")],
                          capture_output=True, text=True, check=True).stdout.splitlines()
    assert len(view) == int(rows["TotalSNPs"][0]) + int(rows["IndelEvents"][0])
    with pysam.VariantFile(str(assembly / "asm.vcf")) as vcf:
        records = list(vcf)
        assert list(vcf.header.samples) == ["asm"]
    reference = (assembly / "ref.fa").read_text().split("\n")[1]
    for record in records:
        assert reference[record.start:record.start + len(record.ref)] == record.ref
        assert record.info["QRY"].startswith("contig")
    # The BAM holds the placements, sorted and indexed.
    subprocess.run(["samtools", "quickcheck", str(assembly / "asm.bam")], check=True)
    assert os.path.exists(str(assembly / "asm.bam") + ".bai")
    with pysam.AlignmentFile(str(assembly / "asm.bam")) as bam:
        assert {r.query_name for r in bam if not r.is_secondary} == {f"contig{k}" for k in range(4)}
    # The differences table: documented columns, one row per event, ids in order.
    lines = (assembly / "asm.differences.tsv").read_text().splitlines()
    header = lines[0].lstrip("#").split("\t")
    assert header[:3] == ["id", "kind", "query_id"]
    kinds = sorted(line.split("\t")[1] for line in lines[1:])
    assert kinds == ["deletion", "insertion", "inversion", "relocation"]
    assert [line.split("\t")[0] for line in lines[1:]] == [f"E{k}" for k in range(1, 5)]
    png = (assembly / "asm.dotplot.png").read_bytes()
    assert png.startswith(b"\x89PNG") and len(png) > 10000


@pytest.mark.parametrize("change, message", [
    (["--min-event", "0"], "--min-event must be 1 or more"),
    (["--evalue", "0"], "--evalue must be greater than 0"),
    (["--matrix", "BLOSUM62"], "compare aligns DNA genomes"),
    (["--query", "missing.fa"], "missing.fa"),
    # Names the BAM cannot hold stop before any work (they stopped at the end, at the BAM).
    (["--target-name", "chr1,alt"], "record 'chr1,alt': target name is not a SAM reference name"),
    (["--query-name", "@c"], "record '@c'"),
])
def test_bad_input_exits_2_and_writes_nothing(tmp_path, change, message):
    target_name = change[1] if change[0] == "--target-name" else "ref"
    query_name = change[1] if change[0] == "--query-name" else "c"
    (tmp_path / "ref.fa").write_text(f">{target_name}\nACGTACGTAGCTAGCTAGCATCGATCGATCGA\n")
    (tmp_path / "asm.fa").write_text(f">{query_name}\nACGTACGTAGCTAGCTAGCATCGATCGATCGA\n")
    arguments = ["compare", "--query", str(tmp_path / "asm.fa"), "--target",
                 str(tmp_path / "ref.fa"), "--prefix", str(tmp_path / "out"), "--backend", "cpu"]
    if change[0] == "--query":
        arguments[2] = str(tmp_path / change[1])
    elif not change[0].endswith("-name"):
        arguments += change
    result = subprocess.run(MAIN + arguments, capture_output=True, text=True)
    assert result.returncode == 2
    assert message in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert sorted(os.listdir(tmp_path)) == ["asm.fa", "ref.fa"]
