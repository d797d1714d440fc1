"""Reading a list of (query, target) pairs to align: ``--pairs`` of pairwise, batch and syntenic.

The pairs file holds one pair a line, whitespace-separated: ``QUERY_ID TARGET_ID``, and for
``gpualign syntenic`` an optional third column, the strand of the query to align: ``+`` (the
query as given; the default when the column is absent) or ``-`` (its reverse complement), as
``gpualign best-pairs`` writes it. A ``#`` that starts a word starts a comment; blank lines are
skipped.
"""

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

STRANDS = ("+", "-")
"""Values of the strand column: the query as given, or its reverse complement."""


def _read_lines(path: str, queries: Iterable[Sequence | str], targets: Iterable[Sequence | str],
                stranded: bool) -> list[tuple]:
    """The pairs of ``path``: ``(query, target)``, or with ``stranded`` ``(query, target, strand)``."""
    query_ids = {q if isinstance(q, str) else q.id for q in queries}
    target_ids = {t if isinstance(t, str) else t.id for t in targets}
    pairs = []
    with text_input(path) as handle:
        for number, line in enumerate(handle, start=1):
            line = _COMMENT.split(line, 1)[0].strip()
            if not line:
                continue
            words = line.split()
            if stranded and len(words) not in (2, 3):
                raise InputError("expected two ids and an optional strand (query target [+|-])",
                                 path=path, position=number, position_kind="line")
            if not stranded and len(words) != 2:
                raise InputError("expected two ids (query target); a third column, the strand, is "
                                 "read by gpualign syntenic only", path=path, position=number,
                                 position_kind="line")
            if words[0] not in query_ids:
                raise InputError(f"query id {words[0]!r} is not in the query file", path=path,
                                 position=number, position_kind="line")
            if words[1] not in target_ids:
                raise InputError(f"target id {words[1]!r} is not in the target file", path=path,
                                 position=number, position_kind="line")
            if not stranded:
                pairs.append((words[0], words[1]))
                continue
            strand = words[2] if len(words) == 3 else "+"
            if strand not in STRANDS:
                raise InputError(f"strand {strand!r} is not '+' or '-'", path=path,
                                 position=number, position_kind="line")
            pairs.append((words[0], words[1], strand))
    if not pairs:
        raise InputError("no pairs listed", path=path)
    return pairs


def read_pairs_file(path: str, queries: Iterable[Sequence | str],
                    targets: Iterable[Sequence | str]) -> list[tuple[str, str]]:
    """Read ``QUERY_ID TARGET_ID`` lines (whitespace-separated; a ``#`` that starts a word starts a
    comment, so ids may hold ``#``, as older Illumina read names do: ``HWUSI:6:73:941:1973#0/1``).

    ``queries`` and ``targets`` are the records (or their ids) the ids must name. A strand
    column is refused here (see :func:`read_stranded_pairs`).

    Raises :class:`InputError` naming the file (and line) for a missing or non-text
    file, a malformed line, or an id that is not in the query or target file.
    """
    return _read_lines(path, queries, targets, stranded=False)


def read_stranded_pairs(path: str, queries: Iterable[Sequence | str],
                        targets: Iterable[Sequence | str]) -> list[tuple[str, str, str]]:
    """Read ``QUERY_ID TARGET_ID [STRAND]`` lines: :func:`read_pairs_file` with a strand column.

    Parameters
    ----------
    path : str
        The pairs file (layout in the module docstring).
    queries, targets : iterable of Sequence or str
        The records (or their ids) the ids must name.

    Returns
    -------
    list of (str, str, str)
        ``(query_id, target_id, strand)`` per line in file order, ``strand`` ``'+'`` or ``'-'``
        (``'+'`` for a line of two columns, so older pairs files read as before).

    Raises
    ------
    InputError
        As :func:`read_pairs_file`, and for a strand other than ``+`` or ``-`` or more than
        three columns; the message names the file, the line and the value.
    """
    return _read_lines(path, queries, targets, stranded=True)


def read_distinct_pairs(path: str, queries: Iterable[Sequence | str],
                        targets: Iterable[Sequence | str], stranded: bool = False) -> list[tuple]:
    """:func:`read_pairs_file` (with ``stranded``, :func:`read_stranded_pairs`), each pair once (at
    its first line): for commands that write one alignment per pair (``pairwise``, ``syntenic``),
    where a repeated line would align the pair again and write it twice (in ``pairwise`` also a
    copy that takes MAPQ to 0 as a tie). With ``stranded`` a pair is its two ids and its strand
    (``q t`` and ``q t +`` are the same pair, ``q t -`` another). One log line says how many
    repeated lines were left out.
    """
    pairs = _read_lines(path, queries, targets, stranded)
    distinct = list(dict.fromkeys(pairs))
    repeated = len(pairs) - len(distinct)
    if repeated:
        log.info("%d %s listed more than once in %s: aligned once", repeated,
                 "pair" if repeated == 1 else "pairs", path)
    return distinct
