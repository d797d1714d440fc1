"""``gpualign best-pairs``: pair each query record with the target of its primary alignment."""

from __future__ import annotations

import argparse
import logging

from gpualign_plugin.cli.common import counted
from gpualign_plugin.errors import InputError
from gpualign_plugin.io.atomic import atomic_text, check_writable
from gpualign_plugin.io.paf import read_paf

log = logging.getLogger("gpualign")

EPILOG = """example:
  gpualign pairwise -q strain.fa -t ref.fa --mode semiglobal --out strain.paf
  gpualign best-pairs --paf strain.paf --out pairs.txt
  gpualign syntenic -q strain.fa -t ref.fa --pairs pairs.txt --out-prefix strain

A query's pair is the target of its primary alignment (tp:A:P, as gpualign pairwise
marks the best placement; the first such line of the query, which pairwise writes
first), on that alignment's strand; queries without one are left out. Lines keep the
order in which the queries first appear in the PAF.

output: 'QUERY TARGET STRAND' a line (tab-separated), STRAND '+' or '-' (the PAF's strand
column: '-' when the query's reverse complement aligns), the form gpualign syntenic's
--pairs reads; pairwise and batch read two columns: cut -f1,2 gives them."""


def best_pairs(rows) -> list[tuple[str, str, str]]:
    """``(query, target, strand)`` of each query's primary alignment, in order of first appearance.

    Parameters
    ----------
    rows : list of dict
        PAF rows as :func:`gpualign_plugin.io.paf.read_paf` returns them.

    Returns
    -------
    list of (str, str, str)
        One triple per query that has a row tagged ``tp:A:P``: the query, the target and
        the PAF strand (``'+'`` or ``'-'``) of its first such row.
    """
    pairs: dict[str, tuple[str, str, str]] = {}
    for row in rows:
        if row.get("tp") == "P":
            pairs.setdefault(row["qname"], (row["qname"], row["tname"], row["strand"]))
    return list(pairs.values())


def register(subparsers) -> None:
    """Add the ``best-pairs`` subcommand."""
    parser = subparsers.add_parser(
        "best-pairs", help="pair each query record with the target of its best alignment",
        description="Write a pairs file ('QUERY TARGET STRAND' a line, for --pairs of syntenic) "
                    "from the primary alignments of a PAF file.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--paf", required=True, metavar="PAF",
                        help="alignments with tp:A:P on each query's best one")
    parser.add_argument("--out", required=True, metavar="TXT", help="pairs file to write")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Read the PAF and write the pairs."""
    check_writable(args.out)
    rows = read_paf(args.paf)
    pairs = best_pairs(rows)
    if not pairs:
        raise InputError("no primary alignment (tp:A:P) in the file", path=args.paf)
    with atomic_text(args.out) as handle:
        handle.writelines(f"{query}\t{target}\t{strand}\n" for query, target, strand in pairs)
    aligned = len({row["qname"] for row in rows})
    log.info("%s paired with a target (of %d with an alignment)",
             counted(len(pairs), "query", "queries"), aligned)
    return 0
