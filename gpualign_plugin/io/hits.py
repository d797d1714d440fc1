"""The shard interchange file of ``gpualign search --shards N --shard I`` (``.hits``).

Everything ``gpualign merge-hits`` needs to rebuild the result of one job over
the whole database, as tab-separated text::

    #gpualign-hits	1
    #scheme	BLOSUM62, gap open 11, gap extend 1
    #top	10
    #database	SEQUENCES	RESIDUES        (the whole database)
    #shard	I	N
    #query	INDEX	ID	LENGTH          (one line per query, file order)
    #histogram	SCORE	COUNT	SEARCH_SPACE   (only for schemes estimated from the scores)
    query_index	target_index	query_id	target_id	query_length	target_length	strand	score	query_start	query_end	target_start	target_end	cigar
    ...one line per hit...

``target_index`` is the 0-based index of the target in the whole database file,
which makes the ranking rule (score descending, target index, ``+`` before ``-``)
global; coordinates are 0-based half-open on the forward strand. Statistics are
not stored: they are computed after merging, from the whole database.
"""

from __future__ import annotations

import os

from gpualign_plugin.errors import InputError
from gpualign_plugin.io.atomic import atomic_text
from gpualign_plugin.io.text import text_input
from gpualign_plugin.model import Alignment, Cigar, Hit, SearchResult
from gpualign_plugin.statistics import ScoreHistogram

MAGIC = "#gpualign-hits\t1"
COLUMNS = ("query_index", "target_index", "query_id", "target_id", "query_length", "target_length",
           "strand", "score", "query_start", "query_end", "target_start", "target_end", "cigar")


def write_hits(path: str | os.PathLike, result: SearchResult, scheme_description: str,
               shard: int, shards: int) -> None:
    """Write one shard's :class:`SearchResult` (atomically) in the format above."""
    with atomic_text(path) as handle:
        handle.write(MAGIC + "\n")
        handle.write(f"#scheme\t{scheme_description}\n")
        handle.write(f"#top\t{result.top}\n")
        handle.write(f"#database\t{result.database_sequences}\t{result.database_residues}\n")
        handle.write(f"#shard\t{shard}\t{shards}\n")
        for index, (name, length) in enumerate(result.queries):
            handle.write(f"#query\t{index}\t{name}\t{length}\n")
        if result.histogram is not None:
            for score, count, space in result.histogram.items():
                handle.write(f"#histogram\t{score}\t{count}\t{space}\n")
        handle.write("\t".join(COLUMNS) + "\n")
        for hit in result.hits:
            a = hit.alignment
            fields = (hit.query_index, hit.target_index, a.query_id, a.target_id, a.query_length,
                      a.target_length, a.strand, a.score, a.query_start, a.query_end,
                      a.target_start, a.target_end, a.cigar)
            handle.write("\t".join(str(f) for f in fields) + "\n")


def read_hits(path: str | os.PathLike) -> tuple[SearchResult, str, int, int]:
    """Read a ``.hits`` file.

    Returns
    -------
    result : SearchResult
        Without statistics.
    scheme_description : str
        The scoring scheme it was computed with.
    shard, shards : int
        Which shard of how many.

    Raises
    ------
    InputError
        Not a ``.hits`` file, or a malformed line (named by its number).
    """
    path = os.fspath(path)
    meta: dict[str, list[str]] = {}
    queries: list[tuple[str, int]] = []
    histogram = None
    hits = []
    with text_input(path) as handle:
        first = handle.readline().rstrip("\n")
        if first != MAGIC:
            raise InputError("not a gpualign .hits file (first line is not '#gpualign-hits\\t1')",
                             path=path, position=1, position_kind="line")
        for number, line in enumerate(handle, start=2):
            fields = line.rstrip("\n").split("\t")
            try:
                if fields[0] == "#query":
                    if int(fields[1]) != len(queries):
                        raise ValueError("query lines out of order")
                    queries.append((fields[2], int(fields[3])))
                elif fields[0] == "#histogram":
                    histogram = histogram or ScoreHistogram()
                    histogram.add_value(int(fields[1]), int(fields[2]), int(fields[3]))
                elif fields[0].startswith("#"):
                    meta[fields[0][1:]] = fields[1:]
                elif tuple(fields) == COLUMNS:
                    continue
                else:
                    if len(fields) != len(COLUMNS):
                        raise ValueError(f"expected {len(COLUMNS)} columns, got {len(fields)}")
                    row = dict(zip(COLUMNS, fields))
                    alignment = Alignment(
                        row["query_id"], row["target_id"], int(row["query_length"]),
                        int(row["target_length"]), int(row["query_start"]), int(row["query_end"]),
                        int(row["target_start"]), int(row["target_end"]), row["strand"],
                        int(row["score"]), Cigar.from_string(row["cigar"]), "local")
                    hits.append(Hit(int(row["query_index"]), int(row["target_index"]), alignment))
            except (ValueError, IndexError) as exc:
                raise InputError(f"malformed line: {exc}", path=path, position=number,
                                 position_kind="line") from None
    try:
        top = int(meta["top"][0])
        sequences, residues = (int(v) for v in meta["database"][:2])
        shard, shards = (int(v) for v in meta["shard"][:2])
        scheme_description = meta["scheme"][0]
    except (KeyError, ValueError, IndexError):
        raise InputError("header lines #scheme, #top, #database or #shard missing or malformed",
                         path=path) from None
    result = SearchResult(queries, hits, top, residues, sequences, histogram)
    return result, scheme_description, shard, shards
