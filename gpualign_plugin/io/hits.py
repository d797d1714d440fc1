"""The shard interchange file of ``gpualign search --shards N --shard I`` (``.hits``).

Everything ``gpualign merge-hits`` needs to rebuild the outputs of one job over
the whole database, without reading the queries or the database again, as
tab-separated text::

    #gpualign-hits	2
    #scheme	BLOSUM62, gap open 11, gap extend 1
    #top	10
    #database	SEQUENCES	RESIDUES        (the whole database)
    #shard	I	N
    #records	START	STOP               (the database records this shard searched)
    #hits	COUNT                        (the hit lines at the end: a file cut short is refused)
    #query	INDEX	ID	LENGTH	TEXT     (one line per query, file order; TEXT as read)
    #record	INDEX	NAME	LENGTH       (one line per record START..STOP-1: SAM @SQ lines)
    #sequence	INDEX	TEXT              (each reported target's residues as read: SAM MD tags)
    #histogram	SCORE	COUNT	SEARCH_SPACE   (only for schemes estimated from the scores)
    query_index	target_index	query_id	target_id	query_length	target_length	strand	score	query_start	query_end	target_start	target_end	cigar
    ...one line per hit...

``target_index`` is the 0-based index of the target in the whole database file,
which makes the ranking rule (score descending, target index, ``+`` before ``-``)
global; coordinates are 0-based half-open on the forward strand. Statistics are
not stored: they are computed after merging, from the whole database. Version 1
files (without the query texts and records) are refused with a message; version 2 files
written before ``#hits`` existed are read without that check.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from gpualign_plugin.errors import InputError
from gpualign_plugin.io.atomic import atomic_text
from gpualign_plugin.io.text import text_input
from gpualign_plugin.model import Alignment, Cigar, Hit, SearchResult
from gpualign_plugin.statistics import ScoreHistogram

MAGIC = "#gpualign-hits\t2"
COLUMNS = ("query_index", "target_index", "query_id", "target_id", "query_length", "target_length",
           "strand", "score", "query_start", "query_end", "target_start", "target_end", "cigar")


@dataclass
class ShardHits:
    """One ``.hits`` file: a shard's result and what the merged outputs need besides.

    Attributes
    ----------
    result : SearchResult
        Hits without statistics (``targets`` empty: see ``target_texts``).
    scheme : str
        Description of the scoring scheme it was computed with.
    shard, shards : int
        Which shard of how many.
    query_texts : list of str
        Each query's residues as read, in file order.
    start : int
        Index of the first database record of this shard.
    names, lengths : list
        Name and length of each record ``start, start + 1, ...`` of this shard.
    target_texts : dict of int to str
        Residues as read of every reported target, by database index.
    """

    result: SearchResult
    scheme: str
    shard: int
    shards: int
    query_texts: list = field(default_factory=list)
    start: int = 0
    names: list = field(default_factory=list)
    lengths: list = field(default_factory=list)
    target_texts: dict = field(default_factory=dict)


def write_hits(path: str | os.PathLike, result: SearchResult, scheme_description: str,
               shard: int, shards: int, queries: list, start: int, names: list, lengths: list) -> None:
    """Write one shard's :class:`SearchResult` (atomically) in the format above.

    ``queries`` are the query records (:class:`~gpualign_plugin.scoring.Sequence`);
    ``names`` and ``lengths`` describe the shard's database records from index
    ``start``; ``result.targets`` must hold every reported target's record.
    """
    with atomic_text(path) as handle:
        handle.write(MAGIC + "\n")
        handle.write(f"#scheme\t{scheme_description}\n")
        handle.write(f"#top\t{result.top}\n")
        handle.write(f"#database\t{result.database_sequences}\t{result.database_residues}\n")
        handle.write(f"#shard\t{shard}\t{shards}\n")
        handle.write(f"#records\t{start}\t{start + len(names)}\n")
        handle.write(f"#hits\t{len(result.hits)}\n")
        for index, query in enumerate(queries):
            handle.write(f"#query\t{index}\t{query.id}\t{len(query)}\t{query.text}\n")
        for index, (name, length) in enumerate(zip(names, lengths), start=start):
            handle.write(f"#record\t{index}\t{name}\t{length}\n")
        for index in sorted({hit.target_index for hit in result.hits}):
            handle.write(f"#sequence\t{index}\t{result.targets[index].text}\n")
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


def _check_hit(hit: Hit, queries: list[tuple[str, int]], shard: ShardHits) -> None:
    """Raise ``ValueError`` when a hit line disagrees with the query and record lines before it
    or with itself (coordinates outside the sequences, a CIGAR of another length, a strand
    other than ``+`` or ``-``)."""
    a = hit.alignment
    if not 0 <= hit.query_index < len(queries) or queries[hit.query_index] != (a.query_id, a.query_length):
        raise ValueError(f"query {hit.query_index} ({a.query_id}, {a.query_length}) is not a #query line's")
    record = hit.target_index - shard.start
    if not 0 <= record < len(shard.names) or (shard.names[record], shard.lengths[record]) != (
            a.target_id, a.target_length):
        raise ValueError(f"record {hit.target_index} ({a.target_id}, {a.target_length}) is not a #record line's")
    if a.strand not in "+-" or len(a.strand) != 1:
        raise ValueError(f"strand {a.strand!r} is neither + nor -")
    if not (0 <= a.query_start < a.query_end <= a.query_length
            and 0 <= a.target_start < a.target_end <= a.target_length):
        raise ValueError("coordinates outside the sequences")
    if (a.cigar.query_length(), a.cigar.target_length()) != (a.query_end - a.query_start,
                                                              a.target_end - a.target_start):
        raise ValueError(f"CIGAR {a.cigar} does not span the coordinates")


def read_hits(path: str | os.PathLike) -> ShardHits:
    """Read a ``.hits`` file.

    Raises
    ------
    InputError
        Not a ``.hits`` file, a version 1 file, or a malformed line (named by its number).
    """
    path = os.fspath(path)
    meta: dict[str, list[str]] = {}
    queries: list[tuple[str, int]] = []
    shard = ShardHits(None, "", 0, 0)
    histogram = None
    hits = []
    with text_input(path) as handle:
        first = handle.readline().rstrip("\n")
        if first == "#gpualign-hits\t1":
            raise InputError("a version 1 .hits file from an older gpualign (it lacks the query and "
                             "database records merge-hits now takes from it); run the search again",
                             path=path)
        if first != MAGIC:
            raise InputError("not a gpualign .hits file (first line is not '#gpualign-hits\\t2')",
                             path=path, position=1, position_kind="line")
        for number, line in enumerate(handle, start=2):
            fields = line.rstrip("\n").split("\t")
            try:
                if fields[0] == "#query":
                    if int(fields[1]) != len(queries):
                        raise ValueError("query lines out of order")
                    queries.append((fields[2], int(fields[3])))
                    shard.query_texts.append(fields[4])
                elif fields[0] == "#record":
                    if int(fields[1]) != shard.start + len(shard.names):
                        raise ValueError("record lines out of order")
                    shard.names.append(fields[2])
                    shard.lengths.append(int(fields[3]))
                elif fields[0] == "#sequence":
                    shard.target_texts[int(fields[1])] = fields[2]
                elif fields[0] == "#records":
                    shard.start = int(fields[1])
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
                    hit = Hit(int(row["query_index"]), int(row["target_index"]), alignment)
                    _check_hit(hit, queries, shard)
                    hits.append(hit)
            except (ValueError, IndexError) as exc:
                raise InputError(f"malformed line: {exc}", path=path, position=number,
                                 position_kind="line") from None
    try:
        top = int(meta["top"][0])
        sequences, residues = (int(v) for v in meta["database"][:2])
        shard.shard, shard.shards = (int(v) for v in meta["shard"][:2])
        shard.scheme = meta["scheme"][0]
        announced = int(meta["hits"][0]) if "hits" in meta else len(hits)
    except (KeyError, ValueError, IndexError):
        raise InputError("header lines #scheme, #top, #database or #shard missing, or a header "
                         "line malformed", path=path) from None
    if announced != len(hits):
        raise InputError(f"{announced} hit lines announced, {len(hits)} found (file cut short?)",
                         path=path)
    missing = {hit.target_index for hit in hits} - set(shard.target_texts)
    if missing:
        raise InputError(f"no #sequence line for reported target {min(missing)}", path=path)
    shard.result = SearchResult(queries, hits, top, residues, sequences, histogram)
    return shard
