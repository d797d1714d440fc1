"""``gpualign genome-summary``: a dnadiff-like report from a ``gpualign syntenic`` block table."""

from __future__ import annotations

import argparse
from collections import defaultdict

from gpualign_plugin.cli.common import add_scoring_options, scheme_from_args
from gpualign_plugin.compare.api import DIFFERENCE_KINDS, compare_genomes
from gpualign_plugin.errors import InputError
from gpualign_plugin.io.atomic import all_or_none, atomic_text, check_writable
from gpualign_plugin.io.fasta import read_fasta
from gpualign_plugin.io.synteny import TABLE_COLUMNS
from gpualign_plugin.io.text import text_input
from gpualign_plugin.model import Cigar, SyntenicAlignment, SyntenicBlock

EPILOG = """example:
  gpualign syntenic --query strainA.fa --target ref.fa --out-prefix A
  gpualign genome-summary --blocks A.blocks.tsv --query strainA.fa --target ref.fa \\
      --out A.summary.txt --differences A.differences.tsv

Difference blocks are classified as insertions (query bases only), deletions
(reference bases only), inversions (the query side aligns to the reverse complement
of the reference side), relocations (an insertion and a deletion that align to each
other: a moved block), replacements and small blocks; see
gpualign_plugin.compare.api. Give the scoring options of the syntenic run."""

DIFFERENCE_COLUMNS = ("query_id", "target_id", "kind", "query_start", "query_end",
                      "target_start", "target_end", "query_len", "target_len", "identity_pct",
                      "partner")


def register(subparsers) -> None:
    """Add the ``genome-summary`` subcommand."""
    parser = subparsers.add_parser(
        "genome-summary", help="dnadiff-like genome comparison from a syntenic block table",
        description="Summarise a syntenic alignment of a query genome against a reference, in "
                    "the spirit of MUMmer's dnadiff: sequences and bases aligned, identity, "
                    "difference blocks classified as insertions, deletions, inversions and "
                    "relocations, SNP and indel counts.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--blocks", required=True, metavar="TSV",
                        help="block table written by 'gpualign syntenic' (PREFIX.blocks.tsv)")
    parser.add_argument("-q", "--query", required=True, metavar="FASTA",
                        help="the query genome of the syntenic run")
    parser.add_argument("-t", "--target", required=True, metavar="FASTA",
                        help="the reference (target) genome of the syntenic run")
    parser.add_argument("-o", "--out", required=True, metavar="TXT", help="the report to write")
    parser.add_argument("--differences", metavar="TSV",
                        help="also write every classified difference block here")
    parser.add_argument("--min-event", type=int, default=50, metavar="BP",
                        help="a block side shorter than this counts as empty [50]")
    add_scoring_options(parser, "dna")
    parser.set_defaults(run=run)


def read_block_table(path: str, queries: dict, targets: dict) -> list[SyntenicAlignment]:
    """Read a block table back into one :class:`SyntenicAlignment` per record pair.

    Record lengths come from ``queries`` and ``targets`` (id -> Sequence); the
    alignment score is the sum of the block scores.

    Raises
    ------
    InputError
        A missing file, a row with the wrong number of columns, an unknown record id
        or a malformed number or CIGAR; names the file and line.
    """
    blocks = defaultdict(list)
    with text_input(path) as handle:
        for line_number, line in enumerate(handle, start=1):
            if line.startswith("#") or not line.strip():
                continue
            fields = line.rstrip("\n").split("\t")
            if len(fields) != len(TABLE_COLUMNS):
                raise InputError(f"block table row has {len(fields)} columns, expected "
                                 f"{len(TABLE_COLUMNS)}", path=path, position=line_number,
                                 position_kind="line")
            row = dict(zip(TABLE_COLUMNS, fields))
            for key, pool in (("query_id", queries), ("target_id", targets)):
                if row[key] not in pool:
                    raise InputError(f"{key} {row[key]!r} is not a record of the given FASTA",
                                     path=path, position=line_number, position_kind="line")
            try:
                cigar = Cigar.from_string(row["cigar"]) if row["type"] == "match" else Cigar(())
                block = SyntenicBlock(row["type"], int(row["query_start"]), int(row["query_end"]),
                                      int(row["target_start"]), int(row["target_end"]),
                                      int(row["score"]), cigar)
            except ValueError as exc:
                raise InputError(f"malformed block table row: {exc}", path=path,
                                 position=line_number, position_kind="line") from None
            blocks[(row["query_id"], row["target_id"])].append(block)
    return [SyntenicAlignment(query_id, target_id, len(queries[query_id].codes),
                              len(targets[target_id].codes), sum(b.score for b in pair_blocks),
                              0, tuple(pair_blocks))
            for (query_id, target_id), pair_blocks in blocks.items()]


def run(args: argparse.Namespace) -> int:
    """Read the block table and both genomes, classify, write the report."""
    scheme = scheme_from_args(args)
    if not scheme.is_dna:
        raise InputError("genome-summary compares DNA genomes: give DNA scoring options")
    if args.min_event < 1:
        raise InputError(f"--min-event must be 1 or more, got {args.min_event}")
    for path in (args.out, args.differences):
        if path:
            check_writable(path)
    queries = {record.id: record for record in read_fasta(args.query, scheme)}
    targets = {record.id: record for record in read_fasta(args.target, scheme)}
    alignments = read_block_table(args.blocks, queries, targets)
    comparison = compare_genomes(alignments, queries, targets, scheme, min_event=args.min_event)
    with all_or_none() as written:
        with atomic_text(args.out) as handle:
            handle.write(format_report(comparison, args.target, args.query))
        written.append(args.out)
        if args.differences:
            with atomic_text(args.differences) as handle:
                handle.write("#" + "\t".join(DIFFERENCE_COLUMNS) + "\n")
                for difference in comparison.differences:
                    identity = f"{100 * difference.identity:.2f}" if difference.identity else "."
                    partner = str(difference.partner) if difference.partner >= 0 else "."
                    handle.write("\t".join(str(value) for value in (
                        difference.query_id, difference.target_id, difference.kind,
                        difference.query_start, difference.query_end, difference.target_start,
                        difference.target_end, difference.query_span, difference.target_span,
                        identity, partner)) + "\n")
    return 0


def format_report(comparison, reference_path: str, query_path: str) -> str:
    """The report text: dnadiff's layout, reference column first, then query."""

    def pct(part: int, whole: int) -> str:
        return f"{part}({100 * part / whole:.2f}%)" if whole else f"{part}(0.00%)"

    lines = [f"{reference_path} {query_path}", "GPUALIGN (syntenic alignment, exact)", "",
             f"{'':<24}{'[REF]':>22}{'[QRY]':>22}",
             "[Sequences]",
             f"{'TotalSeqs':<24}{comparison.target_records:>22}{comparison.query_records:>22}",
             f"{'AlignedSeqs':<24}"
             f"{pct(comparison.aligned_target_records, comparison.target_records):>22}"
             f"{pct(comparison.aligned_query_records, comparison.query_records):>22}",
             f"{'UnalignedSeqs':<24}"
             f"{pct(comparison.target_records - comparison.aligned_target_records, comparison.target_records):>22}"
             f"{pct(comparison.query_records - comparison.aligned_query_records, comparison.query_records):>22}",
             "", "[Bases]",
             f"{'TotalBases':<24}{comparison.target_bases:>22}{comparison.query_bases:>22}",
             f"{'AlignedBases':<24}"
             f"{pct(comparison.aligned_target_bases, comparison.target_bases):>22}"
             f"{pct(comparison.aligned_query_bases, comparison.query_bases):>22}",
             f"{'UnalignedBases':<24}"
             f"{pct(comparison.target_bases - comparison.aligned_target_bases, comparison.target_bases):>22}"
             f"{pct(comparison.query_bases - comparison.aligned_query_bases, comparison.query_bases):>22}",
             "", "[Alignments]",
             f"{'MatchingRegions':<24}{comparison.matching_regions:>22}",
             f"{'AlignedColumns':<24}{comparison.columns:>22}",
             f"{'Identity':<24}{comparison.identity:>21.2f}%",
             "", "[Feature Estimates]        blocks   [REF] bases   [QRY] bases"]
    for kind in DIFFERENCE_KINDS:
        blocks, query_bases, target_bases = comparison.count(kind)
        label = "Small blocks" if kind == "small" else f"{kind.capitalize()}s"
        lines.append(f"{label:<24}{blocks:>9}{target_bases:>14}{query_bases:>14}")
    lines += ["", "[SNPs]", f"{'TotalSNPs':<24}{comparison.snps:>22}",
              "", "[Indels]", f"{'TotalIndels':<24}{comparison.indels:>22}",
              f"{'IndelBases':<24}{comparison.indel_bases:>22}", ""]
    return "\n".join(lines)
