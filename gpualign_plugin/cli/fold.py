"""``gpualign fold``: RNA secondary structure with the most base pairs (Nussinov), as dot-bracket."""

from __future__ import annotations

import argparse
import logging

from gpualign_plugin.cli.common import (Progress, RunStats, add_compute_options, apply_threads,
                                        counted, describe_device)
from gpualign_plugin.errors import InputError
from gpualign_plugin.io.atomic import atomic_text, check_writable

log = logging.getLogger("gpualign")

EPILOG = """examples:
  gpualign fold --input trnas.fa --out trnas.dbn
  gpualign fold --input hairpins.fa --out hairpins.dbn --min-loop 3 --stats fold.json
  gpualign fold --input trnas.fa --out trnas.dbn --backend cpu   # CPU cores even with a GPU

output (RNAfold's layout, with the pair count in place of the energy):
  >record
  GGGAAAUCC
  (((...))) (3)"""


def register(subparsers) -> None:
    """Add the ``fold`` subcommand."""
    parser = subparsers.add_parser(
        "fold", help="RNA secondary structure with the most base pairs (Nussinov), dot-bracket",
        description="Fold each RNA record into the nested structure with the most AU, GC and GU "
                    "base pairs (Nussinov base-pair maximisation, exact), and write the sequence, "
                    "the dot-bracket structure and the pair count per record. T reads as U; "
                    "lower case is kept. The CPU and GPU engines give the same structures.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-i", "--input", required=True, metavar="FASTA", help="RNA records (FASTA, .gz ok)")
    parser.add_argument("-o", "--out", required=True, metavar="DBN", help="dot-bracket output")
    parser.add_argument("--min-loop", type=int, default=0, metavar="N",
                        help="fewest unpaired bases inside a pair (hairpin loop length); 0 lets "
                             "adjacent bases pair, as in the textbook Nussinov recurrence [0]")
    add_compute_options(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Run ``gpualign fold``; returns the exit status."""
    from gpualign_plugin.fold.api import encode_rna, fold_cells, fold_many
    from gpualign_plugin.io.fasta import iter_fasta_text
    from gpualign_plugin.runtime.backend import resolve_backend

    if args.min_loop < 0:
        raise InputError(f"--min-loop must be 0 or more, got {args.min_loop}")
    check_writable(args.out)
    records = [(name, text, encode_rna(text, path=args.input, record=name))
               for name, _, text in iter_fasta_text(args.input)]
    threads = apply_threads(args.threads)
    engine = resolve_backend(args.backend, args.device)
    stats = RunStats("fold", engine=engine, device=describe_device(engine, args.device), threads=threads)
    total = sum(fold_cells(len(text)) for _, text, _ in records)
    with Progress(total, "fold") as progress:
        results = fold_many([codes for _, _, codes in records], args.min_loop, engine, args.device,
                            progress=progress.advance)
    stats.cells = total
    stats.finish()
    stats.extra = {"records": len(records), "cells_are": "split-point updates, (n-1) n (n+1) / 6"}
    log.info("%s folded (%s, %.3f s, %.3g updates/s)", counted(len(records), "record"), engine, stats.seconds,
             total / stats.seconds if stats.seconds else 0.0)
    with atomic_text(args.out) as handle:
        for (name, text, _), result in zip(records, results):
            handle.write(f">{name}\n{text}\n{result.structure} ({result.score})\n")
    stats.write(args.stats)
    return 0
