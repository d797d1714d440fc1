"""``gpualign merge-hits``: merge the ``.hits`` files of a sharded ``gpualign search`` into its outputs."""

from __future__ import annotations

import argparse
import logging

from gpualign_plugin.cli.common import add_scoring_options, counted, scheme_from_args
from gpualign_plugin.cli.search import add_output_options, requested_outputs, write_search_outputs
from gpualign_plugin.errors import InputError

log = logging.getLogger("gpualign")

EPILOG = """examples:
  gpualign merge-hits part0.hits part1.hits part2.hits part3.hits --out-blast hits.m8 --out-tsv hits.tsv
  # SAM needs the sequences back
  gpualign merge-hits part*.hits -q queries.fa -d proteins.fa --out-sam hits.bam"""


def register(subparsers) -> None:
    """Add the ``merge-hits`` subcommand."""
    parser = subparsers.add_parser(
        "merge-hits", help="merge sharded 'gpualign search' results (exactly what one job gives)",
        description="Merge the .hits files of every shard of one 'gpualign search --shards N' into the "
                    "top hits per query by the search's ranking rule, compute bit scores and E-values "
                    "over the whole database, and write the same BLAST tabular, TSV and SAM as a single "
                    "job. Give the same scoring options as the search.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("hits", nargs="+", metavar="HITS", help="the .hits files, one per shard")
    parser.add_argument("-q", "--query", metavar="FASTA", help="the search's queries (needed for --out-sam)")
    parser.add_argument("-d", "--db", metavar="DB",
                        help="the search's database, FASTA or prepared (needed for --out-sam)")
    add_output_options(parser)
    add_scoring_options(parser, "protein")
    parser.set_defaults(run=run)


def read_shards(paths: list[str], scheme_description: str):
    """Read every shard file and check they are all the shards of one search with this scheme."""
    from gpualign_plugin.io.hits import read_hits

    parts, seen, expected = [], {}, None
    for path in paths:
        result, description, shard, shards = read_hits(path)
        if description != scheme_description:
            raise InputError(f"computed with '{description}' but the scoring options give "
                             f"'{scheme_description}'; give merge-hits the search's scoring options",
                             path=path)
        if expected is not None and shards != expected:
            raise InputError(f"shard of {shards} but the other files are shards of {expected}", path=path)
        expected = shards
        if shard in seen:
            raise InputError(f"shard {shard} is also given as {seen[shard]}", path=path)
        seen[shard] = path
        parts.append(result)
    missing = sorted(set(range(expected)) - set(seen))
    if missing:
        raise InputError(f"shard(s) {', '.join(map(str, missing))} of {expected} missing")
    return parts


def run(args: argparse.Namespace) -> int:
    """Run ``gpualign merge-hits``; returns the exit status."""
    from gpualign_plugin.io.fasta import read_fasta
    from gpualign_plugin.search.api import finish, merge_results
    from gpualign_plugin.search.database import load_database

    scheme = scheme_from_args(args)
    paths = requested_outputs(args)
    if not paths:
        raise InputError("no output requested: give --out-blast, --out-tsv or --out-sam")
    if args.out_sam and not (args.query and args.db):
        raise InputError("--out-sam needs the sequences: give --query and --db")
    result = merge_results(read_shards(args.hits, scheme.describe()))
    queries, names, lengths = [], [], []
    if args.out_sam:
        queries = read_fasta(args.query, scheme)
        if [(q.id, len(q)) for q in queries] != [tuple(q) for q in result.queries]:
            raise InputError("the query records differ from those the search was run with",
                             path=args.query)
        database = load_database(args.db, scheme)
        names, lengths = database.names, database.lengths.tolist()
        if len(names) != result.database_sequences:
            raise InputError(f"has {len(names)} records but the search's database had "
                             f"{result.database_sequences}", path=args.db)
        for hit in result.hits:
            if names[hit.target_index] != hit.alignment.target_id:
                raise InputError(f"record {hit.target_index + 1} is {names[hit.target_index]!r} but "
                                 f"the search reported {hit.alignment.target_id!r} there", path=args.db)
        wanted = {hit.target_index for hit in result.hits}
        result.targets = {index: database.record(index) for index in sorted(wanted)}
    result = finish(result, scheme)
    log.info("%s of %s merged from %s", counted(len(result.hits), "hit"),
             counted(len(result.queries), "query", "queries"), counted(len(args.hits), "shard"))
    write_search_outputs(args, result, scheme, queries, names, lengths)
    return 0
