"""``gpualign merge-hits``: merge the ``.hits`` files of a sharded ``gpualign search`` into its outputs."""

from __future__ import annotations

import argparse
import logging

from gpualign_plugin.cli.common import add_scoring_options, counted, scheme_from_args
from gpualign_plugin.cli.search import (add_output_options, requested_outputs, significant,
                                        write_search_outputs)
from gpualign_plugin.errors import InputError

log = logging.getLogger("gpualign")

EPILOG = """examples:
  gpualign merge-hits part0.hits part1.hits part2.hits part3.hits --out-blast hits.m8 --out-tsv hits.tsv
  gpualign merge-hits part*.hits --out-sam hits.bam     # the .hits files carry the sequences SAM needs"""


def register(subparsers) -> None:
    """Add the ``merge-hits`` subcommand."""
    parser = subparsers.add_parser(
        "merge-hits", help="merge sharded 'gpualign search' results (exactly what one job gives)",
        description="Merge the .hits files of every shard of one 'gpualign search --shards N' into the "
                    "top hits per query by the search's ranking rule, compute bit scores and E-values "
                    "over the whole database, and write the same BLAST tabular, TSV and SAM as a single "
                    "job. The .hits files carry the query and database records the outputs need, so "
                    "neither is read again. Give the same scoring options as the search (none when it was "
                    "given none, DNA or protein).",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("hits", nargs="+", metavar="HITS", help="the .hits files, one per shard")
    add_output_options(parser)
    add_scoring_options(parser, "protein")
    parser.set_defaults(run=run)


def read_shards(paths: list[str]) -> list:
    """Read every shard file (:func:`~gpualign_plugin.io.hits.read_hits`), in shard order, and check
    they are all the shards of one search (one scheme), covering every database record once."""
    from gpualign_plugin.io.hits import read_hits

    shards, seen, expected = [], {}, None
    for path in paths:
        shard = read_hits(path)
        if shards and shard.scheme != shards[0].scheme:
            raise InputError(f"computed with '{shard.scheme}' but {paths[0]} with '{shards[0].scheme}'",
                             path=path)
        if expected is not None and shard.shards != expected:
            raise InputError(f"shard of {shard.shards} but the other files are shards of {expected}",
                             path=path)
        expected = shard.shards
        if shard.shard in seen:
            raise InputError(f"shard {shard.shard} is also given as {seen[shard.shard]}", path=path)
        seen[shard.shard] = path
        shards.append(shard)
    missing = sorted(set(range(expected)) - set(seen))
    if missing:
        raise InputError(f"shard(s) {', '.join(map(str, missing))} of {expected} missing")
    shards.sort(key=lambda shard: shard.shard)
    covered = 0
    for shard in shards:
        if shard.start != covered:
            raise InputError(f"shard {shard.shard} starts at database record {shard.start}, expected "
                             f"{covered}", path=seen[shard.shard])
        covered += len(shard.names)
    if covered != shards[0].result.database_sequences:
        raise InputError(f"the shards cover {covered} database records of "
                         f"{shards[0].result.database_sequences}")
    return shards


def shards_scheme(args: argparse.Namespace, description: str, path: str):
    """The scoring options' scheme, which must be the one the shards were searched with
    (``description``, read from ``path``). Without ``--matrix`` or ``--match/--mismatch`` the
    defaults of either kind are tried, as ``search`` picks DNA defaults for DNA files by itself."""
    for kind in (args.scoring_default_kind, "dna"):
        scheme = scheme_from_args(argparse.Namespace(**{**vars(args), "scoring_default_kind": kind}))
        if scheme.describe() == description:
            return scheme
    raise InputError(f"computed with '{description}' but the scoring options give "
                     f"'{scheme_from_args(args).describe()}'; give merge-hits the search's scoring options",
                     path=path)


def run(args: argparse.Namespace) -> int:
    """Run ``gpualign merge-hits``; returns the exit status."""
    from gpualign_plugin.search.api import finish, merge_results

    scheme_from_args(args)  # bad scoring options stop before any file is read
    paths = requested_outputs(args)
    if not paths:
        raise InputError("no output requested: give --out-blast, --out-tsv or --out-sam")
    shards = read_shards(args.hits)
    scheme = shards_scheme(args, shards[0].scheme, args.hits[0])
    result = merge_results([shard.result for shard in shards])
    names = [name for shard in shards for name in shard.names]
    lengths = [length for shard in shards for length in shard.lengths]
    first = shards[0]
    queries = [scheme.encode(name, text, path=args.hits[0])
               for (name, _), text in zip(first.result.queries, first.query_texts)]
    if args.out_sam:
        from gpualign_plugin.io.sam import check_query_names, check_target_names

        check_query_names((q.id for q in queries), args.hits[0])
        check_target_names(names, args.hits[0])
    texts = {index: text for shard in shards for index, text in shard.target_texts.items()}
    result.targets = {hit.target_index: scheme.encode(names[hit.target_index], texts[hit.target_index],
                                                      path=args.hits[0])
                      for hit in result.hits}
    result = significant(finish(result, scheme), args.evalue)
    log.info("%s of %s merged from %s", counted(len(result.hits), "hit"),
             counted(len(result.queries), "query", "queries"), counted(len(args.hits), "shard"))
    write_search_outputs(args, result, scheme, queries, names, lengths)
    return 0
