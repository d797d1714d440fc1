"""``gpualign makedb``: prepare a search database once (``.gadb``) so that searches skip the FASTA parsing."""

from __future__ import annotations

import argparse
import logging
import time

from gpualign_plugin.cli.common import counted, detected_kind
from gpualign_plugin.scoring import DNA, PROTEIN

log = logging.getLogger("gpualign")

EPILOG = """examples:
  gpualign makedb --db proteins.fa.gz --out proteins.gadb
  gpualign search -q queries.fa -d proteins.gadb --out-blast hits.m8   # same output as with proteins.fa.gz
  gpualign makedb --db genomes.fa --alphabet dna --out genomes.gadb"""


def register(subparsers) -> None:
    """Add the ``makedb`` subcommand."""
    parser = subparsers.add_parser(
        "makedb", help="prepare a search database (packed, length-sorted, memory-mappable)",
        description="Read a FASTA database once and write it as a prepared database directory: residue "
                    "codes, text, record boundaries, names, lengths and the length order as .npy arrays, "
                    "with a header.json holding the format version and a CRC-32 of every array. "
                    "'gpualign search --db' opens it without parsing (memory-mapped) and gives results "
                    "byte-identical to searching the FASTA file.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-d", "--db", required=True, metavar="FASTA", help="database sequences (FASTA, .gz ok)")
    parser.add_argument("-o", "--out", required=True, metavar="DIR",
                        help="the prepared database directory to write (by convention NAME.gadb)")
    parser.add_argument("--alphabet", choices=("auto", "protein", "dna"), default="auto",
                        help="alphabet of the residue codes; searches must use a scheme of it. auto: "
                             "what the first record looks like, as the scoring defaults of search "
                             "follow the sequences [auto]")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Run ``gpualign makedb``; returns the exit status."""
    from gpualign_plugin.search.database import read_database, write_database

    started = time.perf_counter()
    alphabet = args.alphabet
    detected = detected_kind([args.db]) if alphabet == "auto" else None
    if alphabet == "auto":
        alphabet = detected or "protein"
    database = read_database(args.db, PROTEIN if alphabet == "protein" else DNA)
    if detected:  # said once the file is known to be one
        log.info("%s: the records look like %s", args.db, alphabet)
    write_database(database, args.out)
    log.info("%s: %s, %s prepared in %.2f s", args.out, counted(len(database), "sequence"),
             counted(database.residues, "residue"), time.perf_counter() - started)
    return 0
