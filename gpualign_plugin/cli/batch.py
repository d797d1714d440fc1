"""``gpualign batch``: many independent pairs aligned at once, from FASTA to SAM/BAM/PAF/TSV.

The pairs stay in arrays all the way (:func:`gpualign_plugin.io.fasta.read_fasta_arrays`,
:func:`gpualign_plugin.batch.api.align_strands_columns`, :mod:`gpualign_plugin.io.columnar`);
only BAM goes through one alignment object per record (pysam writes it).
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import time

import numpy as np

from gpualign_plugin.cli.common import (Progress, RunStats, add_compute_options,
                                        add_scoring_options, apply_threads, command_line, counted,
                                        describe_device, output_formats, scheme_from_args)
from gpualign_plugin.errors import InputError
from gpualign_plugin.io.atomic import all_or_none, check_writable

log = logging.getLogger("gpualign")

FORMATS = {".sam": "sam", ".bam": "bam", ".paf": "paf", ".tsv": "tsv"}
TSV_COLUMNS = ("qid", "tid", "score", "qstart", "qend", "tstart", "tend", "cigar", "strand")

EPILOG = """examples:
  # i-th query with i-th target, local alignment, TSV
  gpualign batch -q a.fa -t b.fa --out pairs.tsv
  # listed pairs, global alignment, SAM and PAF
  gpualign batch -q a.fa -t b.fa --pairs pairs.txt --mode global --out pairs.sam --out pairs.paf
  # on the CPU cores even where a GPU is usable
  gpualign batch -q a.fa -t b.fa --out pairs.tsv --backend cpu"""


def register(subparsers) -> None:
    """Add the ``batch`` subcommand."""
    parser = subparsers.add_parser(
        "batch", help="align many independent pairs (i-th with i-th, or listed pairs) with traceback",
        description="Align the i-th query record with the i-th target record (equal record counts), or "
                    "the pairs listed with --pairs, exactly and in parallel, and write SAM/BAM, PAF or "
                    "TSV (qid tid score qstart qend tstart tend cigar strand; 0-based half-open on the "
                    "forward strands; one line per pair, score 0, CIGAR '*' and strand '+' for a local "
                    "pair without alignment). With --strand both (DNA) each pair is aligned on both "
                    "strands and the better kept (ties: '+'). The CPU and GPU engines give the same "
                    "alignments.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-q", "--query", required=True, metavar="FASTA", help="query sequences (FASTA, .gz ok)")
    parser.add_argument("-t", "--target", required=True, metavar="FASTA", help="target sequences (FASTA, .gz ok)")
    parser.add_argument("--pairs", metavar="FILE",
                        help="align these pairs ('QUERY_ID TARGET_ID' a line) instead of i-th with i-th")
    parser.add_argument("-o", "--out", required=True, action="append", metavar="PATH",
                        help="output file; repeat for several; format from the extension "
                             "(.sam, .bam, .paf, .tsv) unless --format is given")
    parser.add_argument("--format", choices=sorted(set(FORMATS.values())),
                        help="output format for every --out (default: from each extension)")
    parser.add_argument("--mode", choices=("local", "global", "semiglobal"), default="local",
                        help="alignment mode [local]")
    parser.add_argument("--strand", choices=("plus", "both"), default="plus",
                        help="both: also align each query's reverse complement (DNA) and keep the "
                             "better strand per pair [plus]")
    add_scoring_options(parser, "dna")
    add_compute_options(parser)
    parser.set_defaults(run=run)


def pair_indices(queries, targets, pairs_file: str | None, query_path: str,
                 target_path: str) -> tuple[np.ndarray, np.ndarray]:
    """Record indices of each pair's query and target: listed in ``pairs_file``, or i-th with i-th.

    ``queries`` and ``targets`` are :class:`~gpualign_plugin.io.fasta.FastaArrays`.
    """
    from gpualign_plugin.io.pairs import read_pairs_file

    if pairs_file:
        by_query = {name: k for k, name in enumerate(queries.names)}
        by_target = {name: k for k, name in enumerate(targets.names)}
        listed = read_pairs_file(pairs_file, queries.names, targets.names)
        return (np.array([by_query[q] for q, _ in listed], dtype=np.int64),
                np.array([by_target[t] for _, t in listed], dtype=np.int64))
    if len(queries) != len(targets):
        raise InputError(f"{len(queries)} query records but {len(targets)} target records in "
                         f"{target_path}; pairing i-th with i-th needs equal counts (or use --pairs)",
                         path=query_path)
    return np.arange(len(queries), dtype=np.int64), np.arange(len(targets), dtype=np.int64)


def alignment_table(queries, targets, query_index, target_index, columns, minus):
    """The :class:`~gpualign_plugin.io.columnar.AlignmentTable` of every pair (TSV order).

    Coordinates go to the forward strands (a minus-strand query interval is mirrored);
    every row is primary with MAPQ 0 until :func:`placed_table` ranks them.
    """
    from gpualign_plugin.io.columnar import AlignmentTable
    from gpualign_plugin.io.names import Names

    m = queries.lengths[query_index]
    query_start = np.where(minus, m - columns.query_end, columns.query_start)
    query_end = np.where(minus, m - columns.query_start, columns.query_end)
    return AlignmentTable(Names.of(queries.names), Names.of(targets.names), query_index,
                          target_index, m, targets.lengths[target_index], query_start, query_end,
                          columns.target_start, columns.target_end, minus, columns.score,
                          columns.runs, columns.run_offsets, np.ones(len(columns), dtype=bool),
                          np.zeros(len(columns), dtype=np.int64))


def placed_table(table, mode: str, other_score=None):
    """The rows that are alignments (local: score above 0), ranked and flagged by the placement rule.

    The same rows, order, primary flags and MAPQ as
    :func:`~gpualign_plugin.pairwise.placement.place` of the alignment objects together with
    the alignments on the strand each pair did not keep (``other_score``, one per row of
    ``table``, or ``None`` with one strand; local: those scoring above 0), which are then left
    out: they count as second best or tie in MAPQ, as in ``gpualign pairwise``, and are never
    primary (a pair's kept strand scores at least as much, and is ``+`` on a tie). A pair
    listed more than once is placed once, at its first row (``gpualign pairwise`` aligns a
    repeated pairs line once): its copies are no second placement.
    """
    from gpualign_plugin.pairwise.placement import first_listings, place_arrays, strictly_increasing

    first_listing = first_listings(table.query_index * (int(table.target_index.max(initial=0)) + 1)
                                   + table.target_index)

    def alignments(score):
        return np.flatnonzero(first_listing & (score > 0)) if mode == "local" else \
            np.flatnonzero(first_listing)

    rows = alignments(table.score)
    if other_score is None:
        other_score, others = table.score, rows[:0]
    else:
        others = alignments(other_score)
    order, primary, mapq = place_arrays(
        np.concatenate((table.query_index[rows], table.query_index[others])),
        np.concatenate((table.target_index[rows], table.target_index[others])),
        np.concatenate((table.score[rows], other_score[others])),
        np.concatenate((table.minus[rows], ~table.minus[others])))
    kept = order < len(rows)
    selected = rows[order[kept]]
    every_row = len(selected) == len(table) and strictly_increasing(selected)
    placed = dataclasses.replace(table) if every_row else table.take(selected)
    placed.primary, placed.mapq = primary[kept], mapq[kept]
    return placed


def unmapped_queries(placed, query_index: np.ndarray) -> np.ndarray:
    """The queries of the pair list (indices, in order of first appearance) without a row in
    ``placed``: local pairs with no alignment, written as unmapped SAM/BAM records (flag 4), as
    ``gpualign pairwise`` writes a query with nothing significant."""
    from gpualign_plugin.pairwise.placement import first_listings

    listed = query_index[first_listings(query_index)]
    return listed[~np.isin(listed, placed.query_index)]


def table_alignments(table, mode: str) -> list:
    """One :class:`~gpualign_plugin.model.Alignment` per row (for the BAM writer)."""
    from gpualign_plugin.model import AlignmentColumns, Alignment

    columns = AlignmentColumns(table.score, table.query_start, table.query_end, table.target_start,
                               table.target_end, table.runs, table.run_offsets)
    query_names = _names(table.query_names)
    target_names = _names(table.target_names)
    return [Alignment(query_names[qi], target_names[ti], m, n, pair.query_start, pair.query_end,
                      pair.target_start, pair.target_end, "-" if minus else "+", pair.score,
                      pair.cigar, mode, primary, mapq)
            for pair, qi, ti, m, n, minus, primary, mapq in zip(
                columns.pairs(), table.query_index.tolist(), table.target_index.tolist(),
                table.query_length.tolist(), table.target_length.tolist(), table.minus.tolist(),
                table.primary.tolist(), table.mapq.tolist())]


def _names(names) -> list[str]:
    return bytes(names.data).decode("utf-8").split("\n")[:-1]


def run(args: argparse.Namespace) -> int:
    """Run ``gpualign batch``; returns the exit status."""
    from gpualign_plugin.batch.api import align_strands_with_other_scores
    from gpualign_plugin.batch.columns import SequencePairs
    from gpualign_plugin.io.columnar import (paf_lines, sam_header_lines, sam_lines, tsv_lines,
                                             write_bytes)
    from gpualign_plugin.io.fasta import read_fasta_arrays
    from gpualign_plugin.io.sam import (check_query_names, check_target_names, unmapped_lines,
                                        write_alignments)
    from gpualign_plugin.runtime.backend import resolve_backend

    started = time.perf_counter()
    scheme = scheme_from_args(args, (args.query, args.target))
    outputs = output_formats(args.out, args.format, FORMATS)
    for path, _ in outputs:
        check_writable(path)
    threads = apply_threads(args.threads)
    queries = read_fasta_arrays(args.query, scheme.alphabet)  # each file read on every core
    targets = read_fasta_arrays(args.target, scheme.alphabet)
    if any(fmt in ("sam", "bam") for _, fmt in outputs):
        check_query_names(queries.names, args.query)
        check_target_names(targets.names, args.target)
    query_index, target_index = pair_indices(queries, targets, args.pairs, args.query, args.target)
    pairs = SequencePairs.of_records(queries, targets, query_index, target_index)
    engine = resolve_backend(args.backend, args.device)
    stats = RunStats("batch", engine=engine, device=describe_device(engine, args.device), threads=threads)
    stats.cells = pairs.cells() * (2 if args.strand == "both" else 1)
    phases = {"read_s": time.perf_counter() - started}
    profile = {} if engine == "gpu" else None
    mark = time.perf_counter()
    with Progress(stats.cells, "batch") as progress:
        columns, minus, other_score = align_strands_with_other_scores(
            pairs, scheme, args.mode, args.strand, engine, args.device, progress.advance, profile)
    phases["align_s"] = time.perf_counter() - mark
    if profile:
        phases["kernel_s"] = profile["kernel_seconds"]
    stats.finish()
    mark = time.perf_counter()
    table = alignment_table(queries, targets, query_index, target_index, columns, minus)
    placed = placed_table(table, args.mode, other_score) if any(fmt != "tsv" for _, fmt in outputs) else None
    unaligned = int((table.score <= 0).sum()) if args.mode == "local" else 0
    log.info("%s aligned (%d without a local alignment; %s), %.2f GCUPS", counted(len(pairs), "pair"),
             unaligned, engine, stats.gcups)
    unmapped = [queries.record(int(k)) for k in unmapped_queries(placed, query_index)] \
        if placed is not None else []
    with all_or_none() as written:
        for path, fmt in outputs:
            if fmt == "tsv":
                write_bytes(path, ("\t".join(TSV_COLUMNS) + "\n").encode("utf-8"), tsv_lines(table))
                written.append(path)
            elif fmt == "paf":
                write_bytes(path, paf_lines(placed, queries.text, queries.offsets, targets.text,
                                            targets.offsets, scheme.is_dna))
                written.append(path)
            elif fmt == "sam":
                write_bytes(path, *sam_header_lines(table.target_names, targets.lengths,
                                                    command_line(args)),
                            sam_lines(placed, queries.text, queries.offsets, targets.text,
                                      targets.offsets, scheme.is_dna),
                            unmapped_lines(unmapped, scheme.is_dna))
                written.append(path)
            else:
                write_alignments(path, table_alignments(placed, args.mode), _records(queries),
                                 [targets.record(k) for k in range(len(targets))], scheme,
                                 command_line(args), fmt="bam", unmapped=unmapped)
                written += [path, path + ".bai", path + ".csi"]
    phases["write_s"] = time.perf_counter() - mark
    stats.extra = {"phases": phases}
    stats.write(args.stats)
    return 0


def _records(records) -> dict:
    return {records.names[k]: records.record(k) for k in range(len(records))}
