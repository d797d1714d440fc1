"""``gpualign syntenic``: generalized global alignment with difference blocks (Huang & Chao 2003)."""

from __future__ import annotations

import argparse
import logging
import re
import threading
from concurrent.futures import ThreadPoolExecutor

from gpualign_plugin.cli.common import (Progress, RunStats, add_compute_options,
                                        add_scoring_options, apply_threads, check_prefix, command_line,
                                        counted, describe_device, scheme_from_args)
from gpualign_plugin.errors import InputError
from gpualign_plugin.io.atomic import all_or_none, check_writable
from gpualign_plugin.syntenic.api import (DNA_BLOCK_PENALTY, PROTEIN_BLOCK_PENALTY,
                                          default_block_penalty, syntenic)

log = logging.getLogger("gpualign")

EPILOG = f"""outputs (coordinates 0-based half-open, as BED and PAF):
  PREFIX.blocks.tsv     one row per matching region / difference block, every pair
  PREFIX.query.bed      the blocks on the query sequences (BED6, names match_N / difference_N)
  PREFIX.target.bed     the same on the target sequences
  PREFIX.paf            one line per matching region, with its cg:Z CIGAR
  PREFIX.dotplot.png    the dot plot, when one pair is aligned; with several pairs one
                        PREFIX.QUERYID.dotplot.png each, or PREFIX.QUERYID.TARGETID.dotplot.png
                        for every pair when --pairs lists a query more than once, and
                        PREFIX.QUERYID.TARGETID.plus|minus.dotplot.png when it lists a pair on
                        both strands (characters other than letters, digits, '.', '_' and '-'
                        in ids become '_')

pairs: the pairs listed with --pairs; else, when each file holds one record, that pair;
else every query record with the target record of the same id.

strand: a --pairs line 'QUERY_ID TARGET_ID -' aligns the reverse complement of the query
(DNA), as gpualign best-pairs writes it for a query whose best hit is on the minus strand;
'+' or no third column aligns the query as given. A minus-strand pair is reported as
gpualign pairwise reports minus-strand alignments: query coordinates on its forward strand
(the blocks then run down the query), strand '-' in the PAF, in both BED files and in the
table's strand column, and CIGARs that read the reverse-complemented query.

block penalty: the cost of one difference block (an unaligned region on both sequences).
The DNA default {DNA_BLOCK_PENALTY} (with match 2, mismatch -3, gaps 5+2k) lets a gap of more than
22 bp or an unrelated stretch of a few dozen bp become a block, while a conserved region
must score over {DNA_BLOCK_PENALTY} (about 25 identical bp) to be aligned on its own. Protein
default: {PROTEIN_BLOCK_PENALTY}. Raise it to align more end to end, lower it to break more.

examples:
  gpualign syntenic --query strainA.fa --target strainB.fa --out-prefix results/A_vs_B
  gpualign syntenic -q genes.fa -t orthologs.fa --pairs pairs.txt --matrix BLOSUM62 --out-prefix orth
  gpualign syntenic -q strainA.fa -t strainB.fa -o A_vs_B --backend gpu --device 1

backend: the GPU computes the DP bands (one pair at a time), the CPU walks the traceback;
the outputs are identical to --backend cpu."""


def register(subparsers) -> None:
    """Add the ``syntenic`` subcommand."""
    parser = subparsers.add_parser(
        "syntenic", help="syntenic (generalized global) alignment: matching regions and difference blocks",
        description="Align query records to target records end to end, allowing difference blocks: "
                    "unaligned regions on both sequences that cost a fixed block penalty (Huang & "
                    "Chao's generalized global alignment, exact). Writes a block table, BED on each "
                    "sequence, PAF of the matching regions and a dot plot.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-q", "--query", required=True, metavar="FASTA", help="query sequences (FASTA, .gz ok)")
    parser.add_argument("-t", "--target", required=True, metavar="FASTA", help="target sequences (FASTA, .gz ok)")
    parser.add_argument("-o", "--out-prefix", required=True, metavar="PREFIX",
                        help="output path prefix (see outputs below)")
    parser.add_argument("-d", "--block-penalty", type=int, metavar="D",
                        help=f"cost of one difference block [{DNA_BLOCK_PENALTY} for DNA, "
                             f"{PROTEIN_BLOCK_PENALTY} for protein; see below]")
    parser.add_argument("--pairs", metavar="FILE",
                        help="align only these pairs: 'QUERY_ID TARGET_ID [+|-]' a line, the third "
                             "column the query's strand ('-': its reverse complement) [+]")
    parser.add_argument("--memory-mb", type=int, default=256, metavar="MB",
                        help="traceback memory per pair in MiB; larger inputs are re-computed band by "
                             "band with the same result [256]")
    add_scoring_options(parser, "dna")
    add_compute_options(parser, gpu=True)
    parser.set_defaults(run=run)


def choose_pairs(queries, targets, pairs_file: str | None, query_path: str,
                 dna: bool = True) -> list[tuple]:
    """The ``(query, target, strand)`` to align: records and ``'+'`` or ``'-'`` (rules in the epilog).

    ``dna`` says whether the scheme is DNA's; without it a pair listed on ``'-'`` is refused.
    Raises :class:`InputError` when there is no pair, or for a bad pairs file.
    """
    from gpualign_plugin.io.pairs import read_distinct_pairs

    target_by_id = {t.id: t for t in targets}
    query_by_id = {q.id: q for q in queries}
    if pairs_file:
        listed = read_distinct_pairs(pairs_file, queries, targets, stranded=True)
        minus = next(((q, t) for q, t, strand in listed if strand == "-"), None)
        if minus is not None and not dna:
            raise InputError(f"pair {minus[0]} {minus[1]} is listed on the minus strand, which "
                             "exists only for DNA", path=pairs_file)
        return [(query_by_id[q], target_by_id[t], strand) for q, t, strand in listed]
    if len(queries) == 1 and len(targets) == 1:
        return [(queries[0], targets[0], "+")]
    pairs = [(q, target_by_id[q.id], "+") for q in queries if q.id in target_by_id]
    if not pairs:
        raise InputError("no query record has the id of a target record; give --pairs FILE",
                         path=query_path)
    missing = len(queries) - len(pairs)
    if missing:
        log.info("%s no target record of the same id and %s skipped",
                 counted(missing, "query record has", "query records have"),
                 "is" if missing == 1 else "are")
    return pairs


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]", "_", name)


def output_paths(prefix: str, pairs: list[tuple]) -> dict:
    """Output paths: keys ``blocks``, ``query_bed``, ``target_bed``, ``paf`` and ``dotplots`` (one per pair).

    ``pairs`` are ``(query, target, strand)`` as :func:`choose_pairs` returns them; the dot
    plots are named by as little of each pair as tells them apart (epilog).
    """
    if len(pairs) == 1:
        dotplots = [f"{prefix}.dotplot.png"]
    elif len({q.id for q, _, _ in pairs}) == len(pairs):
        dotplots = [f"{prefix}.{_safe(q.id)}.dotplot.png" for q, _, _ in pairs]
    elif len({(q.id, t.id) for q, t, _ in pairs}) == len(pairs):
        dotplots = [f"{prefix}.{_safe(q.id)}.{_safe(t.id)}.dotplot.png" for q, t, _ in pairs]
    else:
        strand_names = {"+": "plus", "-": "minus"}
        dotplots = [f"{prefix}.{_safe(q.id)}.{_safe(t.id)}.{strand_names[s]}.dotplot.png"
                    for q, t, s in pairs]
    return {"blocks": f"{prefix}.blocks.tsv", "query_bed": f"{prefix}.query.bed",
            "target_bed": f"{prefix}.target.bed", "paf": f"{prefix}.paf", "dotplots": dotplots}


def _all_paths(paths: dict) -> list[str]:
    return [paths["blocks"], paths["query_bed"], paths["target_bed"], paths["paf"]] + paths["dotplots"]


def write_outputs(paths: dict, results, description: str, command: str, unit: str,
                  queries: dict | None = None, targets: dict | None = None) -> None:
    """Write every output, or none: a failure half-way removes what was already written.

    ``unit`` is the length unit of the table header and dot plot axes (``'bp'`` or ``'aa'``);
    ``queries`` and ``targets`` the DNA records by id, for the PAF's ambiguous bases
    (:func:`gpualign_plugin.io.paf.write_paf`).
    """
    from gpualign_plugin.io import synteny

    with all_or_none() as written:
        synteny.write_block_table(paths["blocks"], results, description, command, unit)
        written.append(paths["blocks"])
        synteny.write_bed(paths["query_bed"], results, "query")
        written.append(paths["query_bed"])
        synteny.write_bed(paths["target_bed"], results, "target")
        written.append(paths["target_bed"])
        synteny.write_paf(paths["paf"], results, queries, targets)
        written.append(paths["paf"])
        for path, result in zip(paths["dotplots"], results):
            synteny.write_dotplot(path, result, unit)
            written.append(path)


def run(args: argparse.Namespace) -> int:
    """Run ``gpualign syntenic``; returns the exit status."""
    from gpualign_plugin.io.fasta import read_fasta
    from gpualign_plugin.runtime.backend import resolve_backend

    scheme = scheme_from_args(args, (args.query, args.target))
    block_penalty = args.block_penalty if args.block_penalty is not None else default_block_penalty(scheme)
    if block_penalty < 1:
        raise InputError(f"--block-penalty must be 1 or more, got {block_penalty}")
    if args.memory_mb < 1:
        raise InputError(f"--memory-mb must be 1 or more, got {args.memory_mb}")
    check_prefix(args.out_prefix, "--out-prefix")
    check_writable(f"{args.out_prefix}.blocks.tsv")
    queries = read_fasta(args.query, scheme)
    targets = read_fasta(args.target, scheme)
    pairs = choose_pairs(queries, targets, args.pairs, args.query, scheme.is_dna)
    paths = output_paths(args.out_prefix, pairs)
    for path in _all_paths(paths):
        check_writable(path)
    for query, target, _ in pairs:
        scheme.check_score_range(len(query), len(target), (query.id, target.id))
    engine = resolve_backend(args.backend, args.device)
    threads = apply_threads(args.threads)
    stats = RunStats("syntenic", engine=engine, device=describe_device(engine, args.device),
                     threads=threads)
    stats.cells = sum(len(q) * len(t) for q, t, _ in pairs)
    budget = args.memory_mb * 2**20
    lock = threading.Lock()
    # Cells computed exceed m*n when bands are recomputed; the bar counts them all.
    total = sum(len(q) * len(t) * (1 if len(q) * (len(t) + 1) <= budget else 2) for q, t, _ in pairs)
    with Progress(total, "syntenic") as progress:
        def advance(cells: int) -> None:
            with lock:
                progress.advance(cells)

        def align(pair):
            query, target, strand = pair
            return syntenic(query, target, scheme, block_penalty, budget, advance, engine,
                            args.device, strand)

        # One GPU takes one pair at a time; the CPU aligns pairs concurrently.
        workers = 1 if engine == "gpu" else max(1, min(threads, len(pairs)))
        with ThreadPoolExecutor(max_workers=workers) as pool:
            results = list(pool.map(align, pairs))
    stats.finish()
    stats.extra = {"pairs": len(pairs), "block_penalty": block_penalty}
    log.info("%s aligned, %s, %s (%.2f GCUPS)", counted(len(results), "pair"),
             counted(sum(len(r.matching_regions) for r in results), "matching region"),
             counted(sum(len(r.difference_blocks) for r in results), "difference block"), stats.gcups)
    description = f"{scheme.describe()}, block penalty {block_penalty}"
    records = ({q.id: q for q in queries}, {t.id: t for t in targets}) if scheme.is_dna else ()
    write_outputs(paths, results, description, command_line(args), "bp" if scheme.is_dna else "aa", *records)
    stats.write(args.stats)
    return 0
