"""dnadiff's figures computed from a comparison's matching regions.

MUMmer's ``dnadiff`` reports, besides sequences and bases, what ``show-diff`` says about
the order of its alignments along each sequence: every pair of neighbouring alignments on a
reference record (and on a query record) is a ``GAP`` (consistent neighbours), a ``JMP``
(same other sequence and strand, out of order: a relocation), an ``INV`` (strand change:
an inversion), a ``SEQ`` (another sequence: a translocation) or a ``BRK`` (the unaligned
ends of a sequence). This module applies exactly those rules (``show-diff.cc`` of MUMmer
4; an alignment outside show-diff's LIS on a sequence (:func:`lis_chain`), such as a
redundant contig's, covers nothing there: skipped on that sequence and a ``DUP`` on the
other) to the matching regions of a :class:`~gpualign_plugin.compare.api.GenomeComparison`, so that
``Breakpoints``, ``Relocations``, ``Translocations``, ``Inversions``, ``Insertions`` and
``TandemIns`` mean what they mean in a dnadiff report. Counting conventions are dnadiff's
(``dnadiff`` 1.3, ``MakeReport``); see docs/COMPARE.md for every line.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gpualign_plugin.compare.api import AlignedBlock, GenomeComparison


@dataclass(frozen=True)
class Feature:
    """One ``show-diff`` feature between neighbouring alignments on one sequence.

    Attributes
    ----------
    sequence : str
        The record it lies on.
    kind : str
        ``'GAP'``, ``'JMP'``, ``'INV'``, ``'SEQ'``, ``'BRK'`` or ``'DUP'`` (its ``gap`` is
        the duplicated length: an insertion for dnadiff, but aligned bases).
    gap : int
        Bases of this sequence between the two alignments (negative: they overlap).
    other_gap : int
        For ``GAP``: the bases between them on the other sequence; else 0.
    """

    sequence: str
    kind: str
    gap: int
    other_gap: int = 0


@dataclass
class SideTotals:
    """dnadiff's totals for one side (reference or query).

    Attributes
    ----------
    sequences, aligned_sequences, bases, aligned_bases : int
        Records, records with an alignment, bases, and the aligned bases (the bases of
        the aligned records minus the positive gaps of the features, as dnadiff; on the
        reference plus the bases of the repeat copies, which lie in those gaps).
    breakpoints : int
        Alignment ends (repeat copies included) that are not sequence ends.
    relocations, translocations, inversions : int
        ``JMP``, ``SEQ`` and ``INV`` features.
    insertions, insertion_sum : int
        Features with a positive insertion (``GAP``: the larger of the gap and the gap
        difference), and their bases.
    tandem_insertions, tandem_sum : int
        ``GAP`` features where both gaps are at most 0 and the difference is positive.
    """

    sequences: int = 0
    aligned_sequences: int = 0
    bases: int = 0
    aligned_bases: int = 0
    breakpoints: int = 0
    relocations: int = 0
    translocations: int = 0
    inversions: int = 0
    insertions: int = 0
    insertion_sum: int = 0
    tandem_insertions: int = 0
    tandem_sum: int = 0


def show_diff(blocks: list[AlignedBlock], lengths: dict, side: str) -> list[Feature]:
    """The features ``show-diff -r`` (``side='target'``) or ``-q`` (``'query'``) would print.

    Parameters
    ----------
    blocks : list of AlignedBlock
        The alignments.
    lengths : dict of str to int
        Lengths of the records of ``side`` (every record, file order).
    side : str
        ``'target'`` (features along reference records) or ``'query'``.
    """
    other = "query" if side == "target" else "target"
    # show-diff walks the alignments that cover this side (its RLIS on the reference, QLIS
    # on a query) and ranks those that cover the other side; an alignment outside the LIS of
    # a side does not cover it (a redundant contig, the overlapping ends of a circular
    # contig): skipped on that side, a DUP on the other.
    mine_cover = lis_chain(blocks, side)
    other_cover = lis_chain(blocks, other)
    features = []
    for name, length in lengths.items():
        mine = [b for b in blocks if getattr(b, f"{side}_id") == name]
        if not mine:
            continue
        # show-diff's stpc: rank of each covering alignment ordered by (other sequence, its position).
        order = sorted((k for k in range(len(mine)) if id(mine[k]) in other_cover),
                       key=lambda k: (getattr(mine[k], f"{other}_id"),
                                      getattr(mine[k], f"{other}_start"),
                                      getattr(mine[k], f"{other}_end")))
        rank = {k: r for r, k in enumerate(order)}
        walk = sorted((k for k in range(len(mine)) if id(mine[k]) in mine_cover),
                      key=lambda k: (getattr(mine[k], f"{side}_start"),
                                     getattr(mine[k], f"{side}_end"), rank.get(k, -1)))
        previous_global = None  # show-diff's PGA: the last alignment covering the other side
        previous_end = 0        # PA's end: the last alignment walked
        previous_dup = False    # whether that alignment was a DUP on this side
        for k in walk:
            a = mine[k]
            start = getattr(a, f"{side}_start")
            gap = start - previous_end
            if k not in rank:
                if gap > 0:
                    features.append(Feature(name, "BRK", gap))
                features.append(Feature(name, "DUP", getattr(a, f"{side}_end") - start))
            elif previous_global is None:
                if gap > 0:
                    features.append(Feature(name, "BRK", gap))
            else:
                p = mine[previous_global]
                if getattr(a, f"{other}_id") == getattr(p, f"{other}_id"):
                    slope = 1 if p.strand == "+" else -1
                    if a.strand != p.strand or rank[k] != rank[previous_global] + slope:
                        features.append(Feature(name, "JMP" if a.strand == p.strand else "INV",
                                                gap))
                    elif previous_dup:
                        if gap > 0:  # lined up, a duplication in between
                            features.append(Feature(name, "BRK", gap))
                    else:
                        if a.strand == "+":
                            other_gap = getattr(a, f"{other}_start") - getattr(p, f"{other}_end")
                        else:
                            other_gap = getattr(p, f"{other}_start") - getattr(a, f"{other}_end")
                        features.append(Feature(name, "GAP", gap, other_gap))
                else:
                    features.append(Feature(name, "SEQ", gap))
            previous_dup = k not in rank
            if not previous_dup:
                previous_global = k
            previous_end = getattr(a, f"{side}_end")
        if length - previous_end > 0:
            features.append(Feature(name, "BRK", length - previous_end))
    return features


def lis_chain(blocks: list[AlignedBlock], side: str) -> set[int]:
    """``id()`` of the alignments in the best chain along each record of ``side``: delta-filter's
    reference (``side='target'``, ``-r``) or query (``'query'``, ``-q``) LIS flags, which
    ``delta-filter -1`` intersects and show-diff walks.

    As MUMmer's length*identity weighted LIS (``DeltaGraph_t::flagRLIS``/``flagQLIS``, ``-o
    100``): the alignments of a record, ordered by start (the higher-scoring first among equal
    starts), each scoring ``int(length * identity**2)``; an alignment may follow an earlier one
    that it overlaps by ``olap`` bases (``length - olap`` of it then counts) unless that one
    reaches past its end, or the one before that reaches into it. The best chain (score, then
    the smaller sum of distances between consecutive alignments on both sequences, then the
    first) is kept. Where several chains score exactly the same, MUMmer keeps one of them at
    random; here the first found.
    """
    chained: set[int] = set()
    other = "query" if side == "target" else "target"
    records: dict = {}
    for b in blocks:
        records.setdefault(getattr(b, f"{side}_id"), []).append(b)
    for mine in records.values():
        weight = [(b.identity / 100.0) ** 2 for b in mine]
        alone = [int((getattr(b, f"{side}_end") - getattr(b, f"{side}_start")) * w) for b, w in zip(mine, weight)]
        order = sorted(range(len(mine)), key=lambda k: (getattr(mine[k], f"{side}_start"), -alone[k]))
        start, end, other_start, other_end = (
            np.array([getattr(mine[k], f"{name}") for k in order], dtype=np.int64)
            for name in (f"{side}_start", f"{side}_end", f"{other}_start", f"{other}_end"))
        w = np.array([weight[k] for k in order])
        length = end - start
        n = len(order)
        score = np.array([alone[k] for k in order], dtype=np.int64)
        distance = np.zeros(n, dtype=np.int64)
        previous = np.full(n, -1, dtype=np.int64)
        previous_end = np.zeros(n, dtype=np.int64)  # end of the alignment each one follows
        for i in range(1, n):
            olap = np.maximum(end[:i] - start[i], 0)
            allowed = (previous[:i] < 0) | (previous_end[:i] <= start[i])
            allowed &= olap <= length[i]  # olap <= length[j] holds: j starts first
            candidate = score[:i] + ((length[i] - olap) * w[i]).astype(np.int64)
            # MUMmer's DiffAligns: the gap (or overlap) between the two on each sequence.
            gap = np.where(start[:i] < start[i], np.abs(end[:i] - 1 - start[i]), np.abs(end[i] - 1 - start[:i]))
            gap += np.where(other_start[:i] < other_start[i], np.abs(other_end[:i] - 1 - other_start[i]),
                            np.abs(other_end[i] - 1 - other_start[:i]))
            candidate_distance = distance[:i] + gap
            candidate = np.where(allowed, candidate, -1)
            top = int(candidate.max())
            if top > score[i]:  # the first of the best by (score, then the smaller distance)
                tied = np.flatnonzero(candidate == top)
                best = int(tied[np.argmin(candidate_distance[tied])])
                score[i], distance[i], previous[i] = top, candidate_distance[best], best
                previous_end[i] = end[best]
        i = int(np.lexsort((np.arange(n), distance, -score))[0])
        while i >= 0:
            chained.add(id(mine[order[i]]))
            i = int(previous[i])
    return chained


def side_totals(comparison: GenomeComparison, side: str) -> SideTotals:
    """dnadiff's [Sequences], [Bases] and [Feature Estimates] figures of one side.

    ``side`` is ``'target'`` (dnadiff's [REF] column) or ``'query'`` ([QRY]).
    """
    lengths = comparison.target_lengths if side == "target" else comparison.query_lengths
    blocks = comparison.blocks
    totals = SideTotals(sequences=len(lengths), bases=sum(lengths.values()))
    aligned = {getattr(b, f"{side}_id") for b in blocks}
    totals.aligned_bases = sum(lengths[name] for name in aligned)
    if side == "target":
        # Repeat copies lie where no block does: their bases are aligned too (as DUPs are
        # in dnadiff), and a record with only copies is an aligned one.
        totals.aligned_bases += sum(c.target_end - c.target_start for c in comparison.copies)
        aligned |= {c.target_id for c in comparison.copies}
    totals.aligned_sequences = len(aligned)
    # Breakpoints come from dnadiff's many-to-many alignments: the repeat copies count too.
    for b in blocks + comparison.copies:
        start, end = getattr(b, f"{side}_start"), getattr(b, f"{side}_end")
        totals.breakpoints += (start != 0) + (end != lengths[getattr(b, f"{side}_id")])
    for feature in show_diff(blocks, lengths, side):
        inserted = feature.gap
        if feature.kind == "GAP":
            difference = feature.gap - feature.other_gap
            inserted = max(inserted, difference)
            if feature.gap <= 0 and feature.other_gap <= 0 and difference > 0:
                totals.tandem_insertions += 1
                totals.tandem_sum += difference
        if feature.gap > 0 and feature.kind != "DUP":  # dnadiff: a DUP's bases are aligned
            totals.aligned_bases -= feature.gap
        if inserted > 0:
            totals.insertions += 1
            totals.insertion_sum += inserted
        totals.inversions += feature.kind == "INV"
        totals.relocations += feature.kind == "JMP"
        totals.translocations += feature.kind == "SEQ"
    return totals
