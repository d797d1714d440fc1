"""The comparison's text outputs: a dnadiff-layout report and the table of differences.

The report has ``dnadiff``'s layout and row labels (a label, then the [REF] column, then
the [QRY] column, ``%-15s %20s %20s``), so scripts written for dnadiff reports read it;
docs/COMPARE.md explains every line and where ours differs. Rows dnadiff does not have are
added under labels it does not use (``IndelEvents``, the ``[Events]`` section).
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from gpualign_plugin.compare.api import EVENT_KINDS, GenomeComparison
from gpualign_plugin.compare.features import lis_chain, side_totals
from gpualign_plugin.io.vcf import VcfRecord

GOOD_BUFFER = 20
"""dnadiff's ``$SNPBuff``: a SNP or indel base with a buffer of at least this is "good"."""

DIFFERENCE_COLUMNS = ("id", "kind", "query_id", "query_start", "query_end", "query_len",
                      "target_id", "target_start", "target_end", "target_len", "orientation",
                      "region", "aligned_by", "identity_pct", "inserted_at")
"""Columns of the differences table, in order (documented in docs/COMPARE.md)."""

BASES = "ACGT"


def _row(label: str, ref, query) -> str:
    # dnadiff's columns: the first value ends at character 36 however long the label.
    return f"{label:<15} {ref:>{max(1, 35 - max(15, len(label)))}} {query:>20}"


def _percent(part: int, whole: int) -> str:
    return f"{part:>10d}({100.0 * part / whole if whole else 0.0:.2f}%)"


def _average(total: float, count: int) -> str:
    return f"{total / count if count else 0.0:.2f}"


def format_report(comparison: GenomeComparison, reference_path: str, query_path: str) -> str:
    """The report text (see the module notes and docs/COMPARE.md)."""
    ref, qry = side_totals(comparison, "target"), side_totals(comparison, "query")
    blocks = comparison.blocks
    lines = [f"{reference_path} {query_path}", "GPUALIGN", "", _row("", "[REF]", "[QRY]"),
             "[Sequences]",
             _row("TotalSeqs", ref.sequences, qry.sequences),
             _row("AlignedSeqs", _percent(ref.aligned_sequences, ref.sequences),
                  _percent(qry.aligned_sequences, qry.sequences)),
             _row("UnalignedSeqs", _percent(ref.sequences - ref.aligned_sequences, ref.sequences),
                  _percent(qry.sequences - qry.aligned_sequences, qry.sequences)),
             "", "[Bases]",
             _row("TotalBases", ref.bases, qry.bases),
             _row("AlignedBases", _percent(ref.aligned_bases, ref.bases),
                  _percent(qry.aligned_bases, qry.bases)),
             _row("UnalignedBases", _percent(ref.bases - ref.aligned_bases, ref.bases),
                  _percent(qry.bases - qry.aligned_bases, qry.bases)),
             "", "[Alignments]"]
    # M-to-M: every block and the repeat copies.
    for label, alignments in (("1-to-1", _one_to_one(blocks)),
                              ("M-to-M", blocks + comparison.copies)):
        ref_length = sum(b.target_end - b.target_start for b in alignments)
        qry_length = sum(b.query_end - b.query_start for b in alignments)
        weighted = sum(b.identity / 100.0 * (b.target_end - b.target_start + b.query_end
                                             - b.query_start) for b in alignments)
        identity = f"{100.0 * weighted / (ref_length + qry_length) if alignments else 0.0:.2f}"
        lines += [_row(label, len(alignments), len(alignments)),
                  _row("TotalLength", ref_length, qry_length),
                  _row("AvgLength", _average(ref_length, len(alignments)),
                       _average(qry_length, len(alignments))),
                  _row("AvgIdentity", identity, identity), ""]
    lines += ["[Feature Estimates]",
              _row("Breakpoints", ref.breakpoints, qry.breakpoints),
              _row("Relocations", ref.relocations, qry.relocations),
              _row("Translocations", ref.translocations, qry.translocations),
              _row("Inversions", ref.inversions, qry.inversions), "",
              _row("Insertions", ref.insertions, qry.insertions),
              _row("InsertionSum", ref.insertion_sum, qry.insertion_sum),
              _row("InsertionAvg", _average(ref.insertion_sum, ref.insertions),
                   _average(qry.insertion_sum, qry.insertions)), "",
              _row("TandemIns", ref.tandem_insertions, qry.tandem_insertions),
              _row("TandemInsSum", ref.tandem_sum, qry.tandem_sum),
              _row("TandemInsAvg", _average(ref.tandem_sum, ref.tandem_insertions),
                   _average(qry.tandem_sum, qry.tandem_insertions)), ""]
    lines += ["[SNPs]"] + _snp_lines(comparison)
    lines += ["", "[Events]"] + _event_lines(comparison) + [""]
    return "\n".join(lines)


def _snp_lines(comparison: GenomeComparison) -> list[str]:
    """TotalSNPs, TotalGSNPs, TotalIndels (bases), TotalGIndels and IndelEvents, with dnadiff's rows.

    As dnadiff (``show-snps -C`` on its 1-to-1 alignments), a SNP or indel counts only where
    it lies in a 1-to-1 block and its reference and contig positions in no other
    (:func:`_aligned_once`).
    """
    snps, good_snps, indels, good_indels = Counter(), Counter(), Counter(), Counter()
    indel_events = 0
    unique = _aligned_once(comparison)
    for variant in comparison.variants:
        if not unique(variant):
            continue
        good = variant.buffer >= GOOD_BUFFER
        if variant.kind == "snp":
            snps[variant.ref.upper(), variant.alt.upper()] += 1
            good_snps[variant.ref.upper(), variant.alt.upper()] += good
            continue
        indel_events += 1
        # dnadiff counts indels in bases; a longer indel's buffer is 0 or 1 (its own bases).
        for base in (variant.ref or variant.alt).upper():
            key = (base, ".") if variant.ref else (".", base)
            indels[key] += 1
            good_indels[key] += good
    lines = []
    for label, counts in (("TotalSNPs", snps), ("TotalGSNPs", good_snps)):
        total = sum(counts.values())
        lines.append(_row(label, total, total))
        for r in BASES:
            for q in BASES:
                if r != q:
                    lines.append(_row(r + q, _percent(counts[r, q], total),
                                      _percent(counts[q, r], total)))
        # A pair with an ambiguity code (N, R, Y, ...) gets its own rows, as in dnadiff.
        for r, q in _other_pairs(counts, lambda r, q: (r, q) != (q, r) and not (
                r in BASES and q in BASES)):
            lines.append(_row(r + q, _percent(counts[r, q], total), _percent(counts[q, r], total)))
        lines.append("")
    for label, counts in (("TotalIndels", indels), ("TotalGIndels", good_indels)):
        total = sum(counts.values())
        lines.append(_row(label, total, total))
        for r in BASES:
            lines.append(_row(r + ".", _percent(counts[r, "."], total),
                              _percent(counts[".", r], total)))
        for q in BASES:
            lines.append(_row("." + q, _percent(counts[".", q], total),
                              _percent(counts[q, "."], total)))
        for r, q in _other_pairs(counts, lambda r, q: (r if q == "." else q) not in BASES):
            lines.append(_row(r + q, _percent(counts[r, q], total), _percent(counts[q, r], total)))
        lines.append("")
    lines.append(_row("IndelEvents", indel_events, indel_events))
    return lines


def _one_to_one(blocks: list) -> list:
    """dnadiff's 1-to-1 alignments (``delta-filter -1``): those in both the reference's and the
    contig's best chain (:func:`~gpualign_plugin.compare.features.lis_chain`); a redundant
    contig's alignment, covered on the reference by a better one, is not."""
    kept = lis_chain(blocks, "target") & lis_chain(blocks, "query")
    return [b for b in blocks if id(b) in kept]


def _aligned_once(comparison: GenomeComparison):
    """A test of a variant: whether it lies in one of the 1-to-1 blocks (:func:`_one_to_one`),
    its reference position in no other 1-to-1 block on its reference record, and its contig
    position in no other on its contig. As dnadiff runs ``show-snps -C`` on its ``.1delta``: no
    SNP of an ambiguous mapping (two contigs or the two ends of a circular contig covering the
    same reference bases), and no SNP of, nor ambiguity from, a block left out of the 1-to-1 set
    (a redundant contig's)."""
    def intervals(pairs) -> dict:
        table: dict = {}
        for key, start, end in pairs:
            table.setdefault(key, ([], []))
            table[key][0].append(start)
            table[key][1].append(end)
        return {key: (np.sort(starts), np.sort(ends)) for key, (starts, ends) in table.items()}

    one_to_one = _one_to_one(comparison.blocks)
    kept = {id(b) for b in one_to_one}
    reference = intervals((b.target_id, b.target_start, b.target_end) for b in one_to_one)
    contigs = intervals((b.query_id, b.query_start, b.query_end) for b in one_to_one)
    left_out = intervals((b.query_id, b.query_start, b.query_end) for b in comparison.blocks
                         if id(b) not in kept)

    def depth(table: dict, key: str, position: int) -> int:
        starts, ends = table.get(key, (np.empty(0), np.empty(0)))
        return int(np.searchsorted(starts, position, "right") - np.searchsorted(ends, position, "right"))

    return lambda v: (depth(left_out, v.query_id, v.query_pos) == 0
                      and depth(reference, v.target_id, v.target_pos) <= 1
                      and depth(contigs, v.query_id, v.query_pos) <= 1)


def _other_pairs(counts: Counter, wanted) -> list[tuple[str, str]]:
    """The pairs of ``counts`` that ``wanted`` accepts, and their reverses, sorted (each once)."""
    pairs = {pair for pair, n in counts.items() if n and wanted(*pair)}
    return sorted(pairs | {(q, r) for r, q in pairs})


def _event_lines(comparison: GenomeComparison) -> list[str]:
    """Our events: per kind the number of events, then their reference and contig bases."""
    lines = []
    for kind in EVENT_KINDS:
        count, query_bases, target_bases = comparison.count(kind)
        name = kind.capitalize()
        lines += [_row(f"{name}Events", count, count),
                  _row(f"{name}Bases", target_bases, query_bases)]
    return lines


def write_differences(handle, comparison: GenomeComparison) -> None:
    """Write the differences table: a ``#`` header of :data:`DIFFERENCE_COLUMNS`, one row each."""
    handle.write("#" + "\t".join(DIFFERENCE_COLUMNS) + "\n")
    for d in comparison.differences:
        row = (d.id, d.kind, d.query_id, d.query_start, d.query_end, d.query_span, d.target_id,
               d.target_start, d.target_end, d.target_span, d.orientation, d.region,
               d.aligned_by or ".", f"{d.identity:.2f}" if d.aligned_by else ".",
               d.inserted_at if d.inserted_at >= 0 else ".")
        handle.write("\t".join(str(value) for value in row) + "\n")


VCF_INFO = [("QRY", "1", "String", "Contig carrying the variant"),
            ("QPOS", "1", "Integer", "1-based forward-strand contig position of its first base "
                                    "(an indel: the contig base next to it)"),
            ("STRAND", "1", "String", "Strand of the contig in the region (-: reverse complemented)"),
            ("REGION", "1", "String", "Region id of the differences table and report"),
            ("BUFF", "1", "Integer", "show-snps' BUFF: reference positions to the nearest other "
                                     "SNP or indel base, or 1 + to the alignment end")]
"""INFO fields of the comparison's VCF."""


def vcf_records(comparison: GenomeComparison, targets: dict) -> list[VcfRecord]:
    """The SNPs and indels as VCF records, indels anchored on the reference base before them.

    ``targets`` maps reference ids to :class:`~gpualign_plugin.scoring.Sequence`. An indel
    at the very start of a record is anchored on the base after it, as VCF 4.2 says.
    """
    records = []
    for v in comparison.variants:
        text = targets[v.target_id].text
        info = {"QRY": v.query_id, "QPOS": v.query_pos + 1, "STRAND": v.strand,
                "REGION": v.region, "BUFF": v.buffer}
        if v.kind == "snp":
            records.append(VcfRecord(v.target_id, v.target_pos, v.ref, v.alt, info))
            continue
        end = v.target_pos + len(v.ref)
        if v.target_pos > 0:
            anchor = text[v.target_pos - 1].upper()
            records.append(VcfRecord(v.target_id, v.target_pos - 1, anchor + v.ref,
                                     anchor + v.alt, info))
        else:
            anchor = text[end].upper()
            records.append(VcfRecord(v.target_id, 0, v.ref + anchor, v.alt + anchor, info))
    return records
