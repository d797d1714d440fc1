"""``gpualign triplets``: triplets for ``gpualign align3`` from each query's best hits in two sets."""

from __future__ import annotations

import argparse
import logging

from gpualign_plugin.cli.common import counted
from gpualign_plugin.errors import InputError
from gpualign_plugin.io.atomic import atomic_text, check_writable
from gpualign_plugin.io.text import text_input

log = logging.getLogger("gpualign")

EPILOG = """example:
  gpualign search -q queries.fa -d setB.fa --top 1 --out-blast B.tsv
  gpualign search -q queries.fa -d setC.fa --top 1 --out-blast C.tsv
  gpualign triplets --hits B.tsv C.tsv --names query setB setC --out triplets.tsv
  gpualign align3 --fasta query=queries.fa setB=setB.fa setC=setC.fa \\
      --triplets triplets.tsv --maf best.maf

Each output line is QUERY_GENOME.QUERY, SET1.BEST_HIT, SET2.BEST_HIT (tab-separated),
in the order the queries first appear in the first hit table; a query without a hit
in both sets gets no triplet. The best hit is the first row of the query in a table
(gpualign search writes them best first)."""


def best_hits(path: str) -> dict[str, str]:
    """First subject of each query in a BLAST tabular file, in file order.

    Raises
    ------
    InputError
        A missing file, a line with fewer than two columns, or one with another number of
        columns than the first (a file cut short, say); names file and line.
    """
    best: dict[str, str] = {}
    columns = None
    with text_input(path) as handle:
        for line_number, line in enumerate(handle, start=1):
            if not line.strip() or line.startswith("#"):
                continue
            fields = line.rstrip("\n").split("\t")
            if len(fields) < 2:
                raise InputError("not BLAST tabular (fewer than two tab-separated columns)",
                                 path=path, position=line_number, position_kind="line")
            if columns is not None and len(fields) != columns:
                raise InputError(f"{len(fields)} tab-separated columns where the first line has {columns}",
                                 path=path, position=line_number, position_kind="line")
            columns = len(fields)
            best.setdefault(fields[0], fields[1])
    return best


def register(subparsers) -> None:
    """Add the ``triplets`` subcommand."""
    parser = subparsers.add_parser(
        "triplets", help="triplets of each query and its best hits in two sets",
        description="Write a triplet list for 'gpualign align3 --triplets': each query with "
                    "its best hit in each of two searched sets.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hits", nargs=2, required=True, metavar=("SET1.tsv", "SET2.tsv"),
                        help="BLAST tabular hits of the queries in each set")
    parser.add_argument("--names", nargs=3, default=("query", "set1", "set2"),
                        metavar=("QUERY", "SET1", "SET2"),
                        help="genome names prefixed to the ids, as given to align3's "
                             "--fasta NAME=FILE [query set1 set2]")
    parser.add_argument("--out", required=True, metavar="TSV", help="triplet list to write")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Join the two best-hit tables into triplets."""
    check_writable(args.out)
    first, second = (best_hits(path) for path in args.hits)
    query_name, first_name, second_name = args.names
    lines = [f"{query_name}.{query}\t{first_name}.{hit}\t{second_name}.{second[query]}\n"
             for query, hit in first.items() if query in second]
    if not lines:
        raise InputError("no query has a hit in both sets", path=args.hits[0])
    with atomic_text(args.out) as handle:
        handle.writelines(lines)
    log.info("%s (of %s with a hit in the first set)", counted(len(lines), "triplet"),
             counted(len(first), "query", "queries"))
    return 0
