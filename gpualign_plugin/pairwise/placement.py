"""Placement: which alignment of a query is primary, and how sure we are (MAPQ).

Implements the "Placement" rule of ``docs/ALGORITHMS.md``. Filtering by
``--min-score`` is the caller's job; this module ranks whatever it is given.
"""

from __future__ import annotations

import dataclasses
from typing import Iterable, Sequence

from gpualign_plugin.model import Alignment
from gpualign_plugin.statistics import primary_mapq


def place(alignments: Iterable[Alignment],
          target_order: Sequence[str] | None = None) -> list[Alignment]:
    """Rank each query's alignments, flag primary and secondary, and set MAPQ.

    Parameters
    ----------
    alignments : iterable of Alignment
        Typically one alignment per query, target and strand, already above the
        minimum score.
    target_order : sequence of str, optional
        Target ids in the order of their file (the tie-break after the score).
        When omitted, the order in which each query's alignments first name
        their targets stands for it: give them in target-file order.

    Returns
    -------
    list of Alignment
        New objects (``dataclasses.replace``) with ``is_primary`` and ``mapq`` set.
        Grouped by query, queries in order of their first appearance in
        ``alignments``; inside a query by rank: score descending, then target
        order, then ``'+'`` before ``'-'``, then input order (the same order as
        database search hits). The first of each
        query is primary with MAPQ from :func:`primary_mapq`; the others are
        secondary with MAPQ 0.

    Raises
    ------
    ValueError
        If an alignment's target is missing from an explicit ``target_order``.
    """
    target_rank = {name: rank for rank, name in enumerate(target_order or ())}
    by_query: dict[str, list[tuple[int, Alignment]]] = {}
    for index, alignment in enumerate(alignments):
        if target_order is not None and alignment.target_id not in target_rank:
            raise ValueError(f"target {alignment.target_id!r} is not in target_order")
        by_query.setdefault(alignment.query_id, []).append((index, alignment))

    def ranked(group: list[tuple[int, Alignment]]) -> list[Alignment]:
        # Without target_order, a query's first appearances of target ids stand for file order.
        rank = target_rank if target_order is not None else {
            name: k for k, name in enumerate(dict.fromkeys(a.target_id for _, a in group))}
        return [a for index, a in sorted(group, key=lambda item: (
            -item[1].score, rank[item[1].target_id], item[1].strand != "+", item[0]))]

    placed: list[Alignment] = []
    for group in by_query.values():
        ranked_group = ranked(group)
        second = ranked_group[1].score if len(ranked_group) > 1 else None
        placed.append(dataclasses.replace(ranked_group[0], is_primary=True,
                                          mapq=primary_mapq(ranked_group[0].score, second)))
        placed.extend(dataclasses.replace(a, is_primary=False, mapq=0) for a in ranked_group[1:])
    return placed
