"""``gpualign simulate``: a seeded related strain of a genome, with a truth table of planted events."""

from __future__ import annotations

import argparse
import itertools
import os

from gpualign_plugin.compare.simulate import SimulationParameters, simulate_genome, write_truth
from gpualign_plugin.errors import InputError
from gpualign_plugin.io.atomic import all_or_none, atomic_text, check_writable
from gpualign_plugin.io.fasta import iter_fasta_text, write_fasta
from gpualign_plugin.scoring import DNA

EPILOG = """example:
  gpualign simulate --reference lambda.fa --seed 1 --prefix strainA_ \\
      --out strainA.fa --truth strainA.truth.tsv

Each record gets one inversion, one deleted block, one inserted foreign (random)
block and one transposed block (sizes below; 0 leaves an event out), placed in
separate slots of the record, then substitutions and small indels everywhere.
The truth table lists every planted event with 0-based half-open coordinates on
the reference and on the strain (see gpualign_plugin.compare.simulate)."""


def register(subparsers) -> None:
    """Add the ``simulate`` subcommand."""
    parser = subparsers.add_parser(
        "simulate", help="simulate a related strain with planted rearrangements",
        description="Simulate a related strain of a DNA genome: substitutions, small indels, "
                    "an inversion, a deleted block, an inserted foreign block and a transposed "
                    "block, seeded and reproducible, with a truth table of the planted events.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reference", required=True, metavar="FASTA",
                        help="reference genome (FASTA, plain or gzip)")
    parser.add_argument("--out", required=True, metavar="FASTA", help="strain FASTA to write")
    parser.add_argument("--truth", required=True, metavar="TSV",
                        help="truth table of planted events to write")
    parser.add_argument("--seed", type=int, required=True, help="random seed")
    parser.add_argument("--prefix", default="", help="prepended to each record id [none]")
    defaults = SimulationParameters()
    events = parser.add_argument_group("events (per record)")
    for name, unit in (("inversion_length", "bases"), ("deletion_length", "bases"),
                       ("insertion_length", "bases"), ("transposition_length", "bases")):
        events.add_argument("--" + name.replace("_", "-"), type=int, default=getattr(defaults, name),
                            metavar="N", help=f"{unit}, 0 = none [{getattr(defaults, name)}]")
    events.add_argument("--substitution-rate", type=float, default=defaults.substitution_rate,
                        metavar="P", help=f"per base [{defaults.substitution_rate}]")
    events.add_argument("--indel-rate", type=float, default=defaults.indel_rate, metavar="P",
                        help=f"small indel starts per base [{defaults.indel_rate}]")
    events.add_argument("--max-indel", type=int, default=defaults.max_indel, metavar="N",
                        help=f"longest small indel in bases [{defaults.max_indel}]")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Simulate the strain and write its FASTA and truth table."""
    params = SimulationParameters(
        inversion_length=args.inversion_length, deletion_length=args.deletion_length,
        insertion_length=args.insertion_length, transposition_length=args.transposition_length,
        substitution_rate=args.substitution_rate, indel_rate=args.indel_rate,
        max_indel=args.max_indel)
    if args.seed < 0:
        raise InputError(f"--seed must be 0 or more, got {args.seed}")
    named = {"--reference": args.reference, "--out": args.out, "--truth": args.truth}
    for (option, path), (other, other_path) in itertools.combinations(named.items(), 2):
        if os.path.realpath(path) == os.path.realpath(other_path):
            raise InputError(f"{option} and {other} name the same file", path=path)
    for path in (args.out, args.truth):
        check_writable(path)
    records = []
    for name, _, text in iter_fasta_text(args.reference):
        DNA.encode(text, path=args.reference, record=name)
        records.append((name, text))
    try:
        strain, events = simulate_genome(records, params, args.seed, args.prefix)
    except InputError as exc:
        raise InputError(exc.message, path=args.reference, record=exc.record) from None
    with all_or_none() as written:
        with atomic_text(args.out) as handle:
            write_fasta(handle, strain)
        written.append(args.out)
        with atomic_text(args.truth) as handle:
            write_truth(handle, events)
    return 0
