"""Reading a list of (query, target) pairs to align: ``--pairs`` of pairwise, batch and syntenic."""

from __future__ import annotations

import logging
import re
from typing import Iterable

from gpualign_plugin.errors import InputError
from gpualign_plugin.io.text import text_input
from gpualign_plugin.scoring import Sequence

log = logging.getLogger("gpualign")

_COMMENT = re.compile(r"(?:^|\s)#")
"""Where a comment starts: a ``#`` at the start of the line or after whitespace."""


def read_pairs_file(path: str, queries: Iterable[Sequence | str],
                    targets: Iterable[Sequence | str]) -> list[tuple[str, str]]:
    """Read ``QUERY_ID TARGET_ID`` lines (whitespace-separated; a ``#`` that starts a word starts a
    comment, so ids may hold ``#``, as older Illumina read names do: ``HWUSI:6:73:941:1973#0/1``).

    ``queries`` and ``targets`` are the records (or their ids) the ids must name.

    Raises :class:`InputError` naming the file (and line) for a missing or non-text
    file, a malformed line, or an id that is not in the query or target file.
    """
    query_ids = {q if isinstance(q, str) else q.id for q in queries}
    target_ids = {t if isinstance(t, str) else t.id for t in targets}
    pairs = []
    with text_input(path) as handle:
        for number, line in enumerate(handle, start=1):
            line = _COMMENT.split(line, 1)[0].strip()
            if not line:
                continue
            words = line.split()
            if len(words) != 2:
                raise InputError("expected two ids (query target)", path=path, position=number,
                                 position_kind="line")
            if words[0] not in query_ids:
                raise InputError(f"query id {words[0]!r} is not in the query file", path=path,
                                 position=number, position_kind="line")
            if words[1] not in target_ids:
                raise InputError(f"target id {words[1]!r} is not in the target file", path=path,
                                 position=number, position_kind="line")
            pairs.append((words[0], words[1]))
    if not pairs:
        raise InputError("no pairs listed", path=path)
    return pairs


def read_distinct_pairs(path: str, queries: Iterable[Sequence | str],
                        targets: Iterable[Sequence | str]) -> list[tuple[str, str]]:
    """:func:`read_pairs_file`, each pair once (at its first line): for commands that write one
    alignment per pair (``pairwise``, ``syntenic``), where a repeated line would align the pair
    again and write it twice (in ``pairwise`` also a copy that takes MAPQ to 0 as a tie). One
    log line says how many repeated lines were left out.
    """
    pairs = read_pairs_file(path, queries, targets)
    distinct = list(dict.fromkeys(pairs))
    repeated = len(pairs) - len(distinct)
    if repeated:
        log.info("%d %s listed more than once in %s: aligned once", repeated,
                 "pair" if repeated == 1 else "pairs", path)
    return distinct
