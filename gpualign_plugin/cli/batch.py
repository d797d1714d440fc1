"""``gpualign batch``: many independent pairs aligned at once (gpualign_plugin.batch.api.align_batch)."""

from __future__ import annotations

import argparse
import logging

from gpualign_plugin.cli.common import (Progress, RunStats, add_compute_options,
                                        add_scoring_options, apply_threads, command_line, counted,
                                        describe_device, output_formats, scheme_from_args)
from gpualign_plugin.errors import InputError
from gpualign_plugin.io.atomic import all_or_none, atomic_text, check_writable

log = logging.getLogger("gpualign")

FORMATS = {".sam": "sam", ".bam": "bam", ".paf": "paf", ".tsv": "tsv"}
TSV_COLUMNS = ("qid", "tid", "score", "qstart", "qend", "tstart", "tend", "cigar", "strand")
BATCH_PAIRS = {"cpu": 256, "gpu": 100_000}
"""Pairs handed to each engine at once: bounds memory and paces the progress bar."""

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


def make_pairs(queries, targets, pairs_file: str | None, query_path: str, target_path: str):
    """The (query record, target record) pairs: listed in ``pairs_file``, or i-th with i-th."""
    from gpualign_plugin.io.pairs import read_pairs_file

    if pairs_file:
        by_query = {q.id: q for q in queries}
        by_target = {t.id: t for t in targets}
        return [(by_query[q], by_target[t]) for q, t in read_pairs_file(pairs_file, queries, targets)]
    if len(queries) != len(targets):
        raise InputError(f"{len(queries)} query records but {len(targets)} target records in "
                         f"{target_path}; pairing i-th with i-th needs equal counts (or use --pairs)",
                         path=query_path)
    return list(zip(queries, targets))


def align_pairs(pairs, scheme, mode: str, on_done=None, backend: str = "cpu", device: int = 0,
                strands: str = "plus"):
    """:class:`~gpualign_plugin.model.Alignment` of each (query, target) record pair.

    Pairs go to :func:`~gpualign_plugin.batch.api.align_batch_strands` on ``backend``
    (resolved) in groups of :data:`BATCH_PAIRS`; ``on_done`` gets the DP cells (both strands
    counted) as the engine reports them (per group on the CPU; per launch and inside long
    pairs on the GPU). Local pairs without a positive score give ``None``.
    """
    from gpualign_plugin.batch.api import align_batch_strands
    from gpualign_plugin.model import Alignment

    results = []
    size = BATCH_PAIRS[backend]
    for start in range(0, len(pairs), size):
        group = pairs[start:start + size]
        aligned = align_batch_strands([(q.codes, t.codes) for q, t in group], scheme, mode, strands,
                                      backend, device, on_done)
        for (query, target), (strand, pair) in zip(group, aligned):
            if mode == "local" and pair.score <= 0:
                results.append(None)
                continue
            m = len(query)
            q_start, q_end = (m - pair.query_end, m - pair.query_start) if strand == "-" else \
                (pair.query_start, pair.query_end)
            results.append(Alignment(query.id, target.id, m, len(target), q_start, q_end,
                                     pair.target_start, pair.target_end, strand, pair.score, pair.cigar,
                                     mode))
    return results


def write_tsv(path: str, pairs, results) -> None:
    """The batch TSV: header line, then one line per pair in input order.

    Coordinates are 0-based half-open on the forward strands; the last column is the
    strand of the query (``-``: its reverse complement aligned). A local pair without an
    alignment (no positive score) gets score 0, coordinates 0, CIGAR ``*`` and strand ``+``.
    """
    with atomic_text(path) as handle:
        handle.write("\t".join(TSV_COLUMNS) + "\n")
        for (query, target), a in zip(pairs, results):
            fields = (query.id, target.id, 0, 0, 0, 0, 0, "*", "+") if a is None else \
                (a.query_id, a.target_id, a.score, a.query_start, a.query_end, a.target_start,
                 a.target_end, a.cigar, a.strand)
            handle.write("\t".join(str(f) for f in fields) + "\n")


def run(args: argparse.Namespace) -> int:
    """Run ``gpualign batch``; returns the exit status."""
    from gpualign_plugin.cli.pairwise import write_outputs
    from gpualign_plugin.io.fasta import read_fasta
    from gpualign_plugin.pairwise.placement import place
    from gpualign_plugin.runtime.backend import resolve_backend

    scheme = scheme_from_args(args, (args.query, args.target))
    outputs = output_formats(args.out, args.format, FORMATS)
    for path, _ in outputs:
        check_writable(path)
    threads = apply_threads(args.threads)
    queries = read_fasta(args.query, scheme)
    targets = read_fasta(args.target, scheme)
    pairs = make_pairs(queries, targets, args.pairs, args.query, args.target)
    engine = resolve_backend(args.backend, args.device)
    stats = RunStats("batch", engine=engine, device=describe_device(engine, args.device), threads=threads)
    stats.cells = sum(len(q) * len(t) for q, t in pairs) * (2 if args.strand == "both" else 1)
    with Progress(stats.cells, "batch") as progress:
        results = align_pairs(pairs, scheme, args.mode, progress.advance, engine, args.device,
                              args.strand)
    stats.finish()
    alignments = [a for a in results if a is not None]
    log.info("%s aligned (%d without a local alignment; %s), %.2f GCUPS", counted(len(pairs), "pair"),
             len(pairs) - len(alignments), engine, stats.gcups)
    tsv = [path for path, fmt in outputs if fmt == "tsv"]
    others = [(path, fmt) for path, fmt in outputs if fmt != "tsv"]
    with all_or_none() as written:
        for path in tsv:
            write_tsv(path, pairs, results)
            written.append(path)
        if others:
            # A query listed in several pairs gets one primary record (SAM/PAF), by the placement rule.
            write_outputs(others, place(alignments), queries, targets, scheme, command_line(args))
    stats.write(args.stats)
    return 0
