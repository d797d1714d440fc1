"""``gpualign compare``: an assembly against a reference in one command, as MUMmer's dnadiff."""

from __future__ import annotations

import argparse
import logging
import os

from gpualign_plugin.cli.common import (Progress, RunStats, add_compute_options, add_scoring_options,
                                        apply_threads, check_prefix, command_line, describe_device,
                                        scheme_from_args)
from gpualign_plugin.errors import InputError
from gpualign_plugin.io.atomic import all_or_none, atomic_text, check_writable

log = logging.getLogger("gpualign")

OUTPUTS = ("report", "bam", "vcf", "differences.tsv", "dotplot.png")
"""Suffixes of the files ``--prefix`` names, in the order they are written."""

EPILOG = """outputs (PREFIX.*):
  PREFIX.report           dnadiff's layout and row labels ([REF] then [QRY] column):
                          sequences, aligned bases, alignments and identity, breakpoints,
                          relocations, translocations, inversions, insertions, SNPs and
                          indels (bases), then our events
  PREFIX.bam              the contigs' placements (sorted, indexed)
  PREFIX.vcf              SNPs and small indels on the reference (one haploid sample)
  PREFIX.differences.tsv  one row per structural difference (insertion, deletion,
                          inversion, relocation, duplication, translocation,
                          replacement, small)
  PREFIX.dotplot.png      classified dot plot, one panel per reference record

Every line of the report and every column of the table: docs/COMPARE.md.

examples:
  gpualign compare --query assembly.fa --target reference.fa --prefix asm_vs_ref
  gpualign compare -q strainA.fa -t lambda.fa -p A --backend gpu"""


def register(subparsers) -> None:
    """Add the ``compare`` subcommand (``genome-summary`` is another name for it)."""
    parser = subparsers.add_parser(
        "compare", aliases=["genome-summary"],
        help="compare an assembly with a reference (dnadiff-like report, VCF, dot plot)",
        description="Place every contig of an assembly on a reference (local alignment, both "
                    "strands), align each placed region exactly (syntenic alignment on its "
                    "strand), and report what differs: a dnadiff-layout summary, the structural "
                    "differences, SNPs and small indels as VCF, the placements as BAM and a "
                    "classified dot plot.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-q", "--query", required=True, metavar="FASTA",
                        help="the assembly (contigs in any orientation; FASTA, .gz ok)")
    parser.add_argument("-t", "--target", required=True, metavar="FASTA",
                        help="the reference genome (FASTA, .gz ok)")
    parser.add_argument("-p", "--prefix", required=True, metavar="PREFIX",
                        help="output path prefix (see outputs below)")
    parser.add_argument("-d", "--block-penalty", type=int, metavar="D",
                        help="syntenic block penalty [50 with the default scores]")
    parser.add_argument("--min-event", type=int, default=50, metavar="BP",
                        help="a side of a difference block shorter than this counts as empty, and a block "
                             "with both sides shorter is SNPs and indels of its alignment; 85 counts the "
                             "indels nucmer aligns through as dnadiff does [50]")
    parser.add_argument("--evalue", type=float, default=1e-5, metavar="E",
                        help="placement significance cutoff [1e-5]")
    add_scoring_options(parser, "dna")
    add_compute_options(parser, gpu=True)
    parser.set_defaults(run=run)


def output_paths(prefix: str) -> dict[str, str]:
    """``{suffix: path}`` of every output of ``--prefix``."""
    return {suffix: f"{prefix}.{suffix}" for suffix in OUTPUTS}


def run(args: argparse.Namespace) -> int:
    """Run ``gpualign compare``; returns the exit status."""
    from gpualign_plugin.cli.pairwise import expected_cells
    from gpualign_plugin.compare.api import compare_genomes
    from gpualign_plugin.compare.dotplot import write_dotplot
    from gpualign_plugin.compare.report import (VCF_INFO, format_report, vcf_records,
                                                write_differences)
    from gpualign_plugin.io.fasta import read_fasta
    from gpualign_plugin.io.sam import check_query_names, check_target_names, write_alignments
    from gpualign_plugin.io.vcf import write_vcf
    from gpualign_plugin.runtime.backend import resolve_backend
    from gpualign_plugin.version import __version__

    scheme = scheme_from_args(args)
    if not scheme.is_dna:
        raise InputError("compare aligns DNA genomes: give DNA scoring options, not --matrix")
    if args.block_penalty is not None and args.block_penalty < 1:
        raise InputError(f"--block-penalty must be 1 or more, got {args.block_penalty}")
    if args.min_event < 1:
        raise InputError(f"--min-event must be 1 or more, got {args.min_event}")
    if not args.evalue > 0:
        raise InputError(f"--evalue must be greater than 0, got {args.evalue}")
    check_prefix(args.prefix, "--prefix")
    paths = output_paths(args.prefix)
    for path in paths.values():
        check_writable(path)
    queries = read_fasta(args.query, scheme)
    targets = read_fasta(args.target, scheme)
    check_query_names((q.id for q in queries), args.query)  # the BAM's names, before any work
    check_target_names((t.id for t in targets), args.target)
    for query in queries:
        for target in targets:
            scheme.check_score_range(len(query), len(target), (query.id, target.id))
    engine = resolve_backend(args.backend, args.device)
    threads = apply_threads(args.threads)
    stats = RunStats("compare", engine=engine, device=describe_device(engine, args.device),
                     threads=threads)
    score_passes = 2 * sum(len(q) for q in queries) * sum(len(t) for t in targets)
    total = expected_cells([(q, t) for q in queries for t in targets], 2, "local", engine, score_passes,
                           scheme, args.device, None)
    # One stage after another, each with its own total and rate: a syntenic cell costs far more
    # than a score pass's, so one rate over both gave a time left far too short (37 s shown
    # while 96 s of syntenic alignment were left, Chlamydia on 16 cores).
    with Progress(total, "compare", estimated=True) as progress:
        comparison = compare_genomes(queries, targets, scheme, block_penalty=args.block_penalty,
                                     min_event=args.min_event, backend=engine, device=args.device,
                                     evalue=args.evalue, threads=threads, on_progress=progress.advance,
                                     on_stage=lambda name, cells: progress.restart(f"compare, {name}", cells))
    stats.finish()
    # Cells of the first placement pass (both strands, every pair) and of every region's
    # syntenic alignment; later placement passes over the contigs' free parts are not counted.
    stats.cells = score_passes + sum(
        (r.query_end - r.query_start) * (r.target_end - r.target_start) for r in comparison.regions)
    log.info("%d of %d contigs placed, %d regions, %d differences, %d SNPs and indels",
             len({p.query_id for p in comparison.placements}), len(queries),
             len(comparison.regions), len(comparison.differences), len(comparison.variants))
    command = command_line(args)
    by_id = {t.id: t for t in targets}
    with all_or_none() as written:
        with atomic_text(paths["report"]) as handle:
            handle.write(format_report(comparison, args.target, args.query))
        written.append(paths["report"])
        placed = {p.query_id for p in comparison.placements}
        write_alignments(paths["bam"], comparison.placements, {q.id: q for q in queries},
                         targets, scheme, command,
                         unmapped=[q for q in queries if q.id not in placed])
        written += [paths["bam"], paths["bam"] + ".bai", paths["bam"] + ".csi"]
        write_vcf(paths["vcf"], vcf_records(comparison, by_id),
                  [(t.id, len(t)) for t in targets], _sample_name(args.query), VCF_INFO,
                  f"gpualign {__version__} compare", command)
        written.append(paths["vcf"])
        with atomic_text(paths["differences.tsv"]) as handle:
            write_differences(handle, comparison)
        written.append(paths["differences.tsv"])
        write_dotplot(paths["dotplot.png"], comparison,
                      f"{os.path.basename(args.query)} vs {os.path.basename(args.target)}",
                      os.path.basename(args.target), os.path.basename(args.query))
        written.append(paths["dotplot.png"])
    stats.write(args.stats)
    return 0


def _sample_name(path: str) -> str:
    """The VCF sample: the assembly file's name without FASTA and compression extensions."""
    name = os.path.basename(path)
    for extension in (".gz", ".fasta", ".fa", ".fna", ".fas"):
        if name.endswith(extension):
            name = name[:-len(extension)]
    return name or "assembly"
