"""``gpualign pairwise``: exact pairwise alignment of every query record to every target record."""

from __future__ import annotations

import argparse
import logging

from gpualign_plugin.cli.common import (Progress, RunStats, add_compute_options,
                                        add_scoring_options, apply_threads, command_line,
                                        describe_device, output_formats, scheme_from_args)
from gpualign_plugin.io.atomic import all_or_none, check_writable

log = logging.getLogger("gpualign")

FORMATS = {".bam": "bam", ".sam": "sam", ".paf": "paf", ".txt": "txt"}

EPILOG = """examples:
  # place contigs on a reference, both strands, sorted and indexed BAM plus PAF
  gpualign pairwise --query contigs.fa --target ref.fa --mode semiglobal --out contigs.bam --out contigs.paf
  # local alignment of two proteins, EMBOSS-like text
  gpualign pairwise -q a.fa -t b.fa --matrix BLOSUM62 --strand plus --out a_b.txt
  # only some pairs, on the GPU if there is one
  gpualign pairwise -q q.fa -t t.fa --pairs pairs.txt --backend auto --out hits.sam"""


def register(subparsers) -> None:
    """Add the ``pairwise`` subcommand."""
    parser = subparsers.add_parser(
        "pairwise", help="exact local/global/semi-global alignment of query records to target records",
        description="Align every query record to every target record (or the pairs listed with "
                    "--pairs) exactly, keep the best alignment per query, target and strand scoring at "
                    "least --min-score, flag the best of each query primary, and write BAM/SAM/PAF/text.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-q", "--query", required=True, metavar="FASTA", help="query sequences (FASTA, .gz ok)")
    parser.add_argument("-t", "--target", required=True, metavar="FASTA", help="target sequences (FASTA, .gz ok)")
    parser.add_argument("-o", "--out", required=True, action="append", metavar="PATH",
                        help="output file; repeat for several; format from the extension "
                             "(.bam sorted+indexed, .sam, .paf, .txt) unless --format is given")
    parser.add_argument("--format", choices=sorted(set(FORMATS.values())),
                        help="output format for every --out (default: from each extension)")
    parser.add_argument("--mode", choices=("local", "global", "semiglobal"), default="local",
                        help="local (Smith-Waterman-Gotoh), global (Needleman-Wunsch-Gotoh) or semiglobal "
                             "(query end to end, free end gaps on the target) [local]")
    parser.add_argument("--strand", choices=("both", "plus"),
                        help="align the query's reverse complement too [both for DNA, plus for protein]")
    parser.add_argument("--pairs", metavar="FILE", help="align only these pairs: 'QUERY_ID TARGET_ID' a line")
    parser.add_argument("--min-score", type=int, metavar="N",
                        help="drop alignments scoring below N [local: 1; global/semiglobal: keep all]")
    add_scoring_options(parser, "dna")
    add_compute_options(parser)
    parser.set_defaults(run=run)


def write_outputs(outputs, alignments, queries, targets, scheme, cmdline: str) -> None:
    """Write ``alignments`` to every ``(path, format)`` in ``outputs``: all of them, or none on failure."""
    from gpualign_plugin.io.paf import write_paf
    from gpualign_plugin.io.pairwise_text import write_pairwise_text
    from gpualign_plugin.io.sam import write_alignments

    query_by_id = {q.id: q for q in queries}
    with all_or_none() as written:
        for path, fmt in outputs:
            if fmt in ("bam", "sam"):
                write_alignments(path, alignments, query_by_id, targets, scheme, cmdline, fmt=fmt)
                written += [path, path + ".bai", path + ".csi"]
            elif fmt == "paf":
                write_paf(path, alignments)
                written.append(path)
            else:
                write_pairwise_text(path, alignments, query_by_id, targets, scheme, cmdline)
                written.append(path)


def run(args: argparse.Namespace) -> int:
    """Run ``gpualign pairwise``; returns the exit status."""
    from gpualign_plugin.io.fasta import read_fasta
    from gpualign_plugin.io.pairs import read_pairs_file
    from gpualign_plugin.pairwise.api import align_records
    from gpualign_plugin.runtime.backend import resolve_backend

    scheme = scheme_from_args(args)
    outputs = output_formats(args.out, args.format, FORMATS)
    for path, _ in outputs:
        check_writable(path)
    queries = read_fasta(args.query, scheme)
    targets = read_fasta(args.target, scheme)
    strands = args.strand or ("both" if scheme.is_dna else "plus")
    pairs = read_pairs_file(args.pairs, queries, targets) if args.pairs else None
    min_score = args.min_score if args.min_score is not None else (1 if args.mode == "local" else None)
    engine = resolve_backend(args.backend, args.device)
    threads = apply_threads(args.threads)
    stats = RunStats("pairwise", engine=engine, device=describe_device(engine, args.device), threads=threads)
    n_strands = 2 if strands == "both" else 1
    if pairs is None:
        total = sum(len(q) for q in queries) * sum(len(t) for t in targets) * n_strands
    else:
        lengths = {s.id: len(s) for s in queries + targets}
        total = sum(lengths[q] * lengths[t] for q, t in pairs) * n_strands
    with Progress(total, "pairwise") as progress:
        alignments = align_records(queries, targets, scheme, args.mode, strands, min_score, engine,
                                   args.device, pairs, threads, on_pair_done=progress.advance)
    stats.cells = total
    stats.finish()
    log.info("%d alignments of %d queries (%s, %.2f GCUPS)", len(alignments), len(queries), engine, stats.gcups)
    write_outputs(outputs, alignments, queries, targets, scheme, command_line(args))
    stats.write(args.stats)
    return 0
