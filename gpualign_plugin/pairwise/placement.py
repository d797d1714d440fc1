"""Placement: which alignments of a query are reported, which is primary, and MAPQ.

:func:`place_local` computes the local placement of ``docs/ALGORITHMS.md``
("Local placement"): every significant local alignment of a query, non-overlapping
on the query, on any target and strand (primary, supplementary, close secondary).
:func:`place` ranks end-to-end alignments (one per query, target and strand) by
the "Placement" rule; filtering by ``--min-score`` is its caller's job.
"""

from __future__ import annotations

import dataclasses
import functools
import heapq
import math
import threading
import time
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from typing import Callable, Iterable
from typing import Sequence as Ordered

import numpy as np

from gpualign_plugin.errors import InputError
from gpualign_plugin.model import Alignment, PairScore, cigar_columns, column_ops, column_scores
from gpualign_plugin.scoring import ScoringScheme, Sequence, reverse_complement_codes
from gpualign_plugin.statistics import MAX_MAPQ, KarlinAltschul, parameters_for, primary_mapq


def place(alignments: Iterable[Alignment],
          target_order: Ordered[str] | None = None) -> list[Alignment]:
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


def place_arrays(query_index: np.ndarray, target_index: np.ndarray, score: np.ndarray,
                 minus: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`place` of alignments given as arrays (one row each): the same order, flags and MAPQ.

    Parameters
    ----------
    query_index, target_index : numpy.ndarray
        Integers standing for the query and target ids (equal integers, equal ids).
    score : numpy.ndarray
        Alignment scores.
    minus : numpy.ndarray
        ``bool``, true for strand ``-``.

    Returns
    -------
    order : numpy.ndarray
        ``int64`` rows in the order :func:`place` returns them (grouped by query in
        order of first appearance; inside a query score descending, then the order in
        which the query's rows first name each target, then ``+`` before ``-``, then row).
    primary : numpy.ndarray
        ``bool`` per row of ``order``: the first of its query.
    mapq : numpy.ndarray
        ``int64`` per row of ``order``: :func:`~gpualign_plugin.statistics.primary_mapq`
        of the best and second-best scores for a primary row, 0 for the others.
    """
    query_index = np.asarray(query_index, dtype=np.int64)
    target_index = np.asarray(target_index, dtype=np.int64)
    score = np.asarray(score, dtype=np.int64)
    rows = np.arange(len(score))
    if strictly_increasing(query_index):
        order = group = rows  # one row per query, queries in order (i-th with i-th): nothing to rank
    else:
        _, query_group, query_first = _first_appearance(query_index)
        pair_key = query_index * (int(target_index.max(initial=0)) + 1) + target_index
        _, _, target_first = _first_appearance(pair_key)
        order = np.lexsort((rows, minus, target_first, -score, query_first))
        group = query_group[order]
    primary = np.ones(len(order), dtype=bool)
    primary[1:] = group[1:] != group[:-1]
    best = score[order]
    second = np.zeros(len(order), dtype=np.int64)
    has_second = np.flatnonzero(primary[:-1] & ~primary[1:])
    second[has_second] = best[has_second + 1]
    mapq = np.where((best <= 0) | (second == best), 0,
                    np.minimum(MAX_MAPQ, (MAX_MAPQ * (best - second)) // np.maximum(best, 1)))
    return order, primary, np.where(primary, mapq, 0)


def strictly_increasing(keys: np.ndarray) -> bool:
    """Whether ``keys`` rise strictly (every key once, in order)."""
    return bool((keys[1:] > keys[:-1]).all())


def first_listings(keys: np.ndarray) -> np.ndarray:
    """``bool`` per row: the first row holding its key."""
    if strictly_increasing(keys):
        return np.ones(len(keys), dtype=bool)
    first = np.zeros(len(keys), dtype=bool)
    first[np.unique(keys, return_index=True)[1]] = True
    return first


def _first_appearance(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(distinct keys, group of each row, first row of each row's group)``."""
    distinct, first, group = np.unique(keys, return_index=True, return_inverse=True)
    group = group.reshape(-1)
    return distinct, group, first[group]


def strand_signs(strands: str, scheme: ScoringScheme) -> tuple[str, ...]:
    """The strands that ``--strand`` ``'both'`` or ``'plus'`` names: ``('+', '-')`` or ``('+',)``.

    Raises
    ------
    ValueError
        ``strands`` is neither ``'both'`` nor ``'plus'``.
    InputError
        ``'both'`` with a protein scheme (protein has one strand).
    """
    if strands not in ("both", "plus"):
        raise ValueError(f"strands must be 'both' or 'plus', got {strands!r}")
    if strands == "both" and not scheme.is_dna:
        raise InputError("--strand both needs DNA; protein has one strand (use --strand plus)")
    return ("+", "-") if strands == "both" else ("+",)


ZDROP_BITS = 100.0
"""Default Z-drop of :func:`place_local`, in bits (converted to raw score with lambda)."""

SECONDARY_RATIO = 0.8
"""A piece's second-best placement is written as secondary when it scores at least this
fraction of the piece (minimap2's ``-p``) and is itself significant."""

DEFAULT_EVALUE = 1e-5
"""Default E-value cutoff of :func:`place_local` (stricter than BLAST's search default of 10)."""

SESSION_CANDIDATES = 2
"""On the GPU, when one query has at most this many (target, strand) candidates (a chromosome
pair on both strands), each candidate's score pass keeps its checkpoints
(:class:`~gpualign_plugin.pairwise.gpu.LongPairSession`), so aligning the best runs only the
traceback instead of a second score pass. With more candidates the checkpoints would cost more
than the pass they save."""

SESSION_CPU_ROWS = 1024
"""In that session, a score pass of fewer query rows runs on the CPU engine: the GPU sweep of a
short segment is one chain of strips along every column, about 0.3 us a column whatever the
rows (0.3 s for 2 x 1,000,000 on an H200), while the CPU's striped kernel takes about 0.1 s
for 64 x 1,000,000 and 0.17 s for 1,024 x 1,000,000 (the 2-core development VM)."""


def best_stretch(scores: np.ndarray) -> tuple[int, int, int]:
    """The maximal-scoring stretch ``[start, end)`` of ``scores`` and its sum.

    Ties: the earliest end, then the latest start (the shortest such stretch);
    so a stretch with a positive sum starts and ends with a positive column.
    ``(0, 0, 0)`` when no column is positive.
    """
    prefix = np.concatenate(([0], np.cumsum(scores, dtype=np.int64)))
    if len(scores) == 0:
        return 0, 0, 0
    lowest = np.minimum.accumulate(prefix[:-1])
    sums = prefix[1:] - lowest
    end = int(np.argmax(sums))
    total = int(sums[end])
    if total <= 0:
        return 0, 0, 0
    start = int(np.flatnonzero(prefix[:end + 1] == lowest[end])[-1])
    return start, end + 1, total


def zdrop_cut(scores: np.ndarray, zdrop: float) -> tuple[int, int, int]:
    """Columns ``[start, end)`` and score of the piece a path keeps under the Z-drop rule.

    Walking the path from its start, the first column where the running score
    falls more than ``zdrop`` below its running maximum ends a piece at the
    column that first reached that maximum; the rest of the path is reduced to
    its best stretch (:func:`best_stretch`) and cut the same way. Of the
    pieces, the highest-scoring one is kept, the earliest on the path among
    equals. A path without such a drop (always with ``zdrop = inf``) is kept
    whole. See docs/ALGORITHMS.md ("Local placement").
    """
    low, high = 0, len(scores)
    kept = None
    while high > low:
        running = np.cumsum(scores[low:high], dtype=np.int64)
        peak = np.maximum.accumulate(np.maximum(running, 0))
        drops = np.flatnonzero(peak - running > zdrop)
        if drops.size == 0:
            piece = (low, high, int(running[-1]))
            return piece if kept is None or piece[2] > kept[2] else kept
        first = int(drops[0])
        top = int(np.flatnonzero(running[:first] == peak[first])[0])
        if kept is None or int(peak[first]) > kept[2]:
            kept = (low, low + top + 1, int(peak[first]))
        start, end, total = best_stretch(scores[low + top + 1:high])
        if total <= 0:
            break
        low, high = low + top + 1 + start, low + top + 1 + end
    return kept if kept is not None else (0, 0, 0)


@dataclasses.dataclass(frozen=True)
class _Slice:
    """Where a DP ran: query segment ``[q0, q1)`` on ``strand``, target ``t_index`` columns ``[t0, t1)``."""

    q0: int
    q1: int
    strand: str
    t_index: int
    t0: int
    t1: int


GPU_STREAMS = 16
"""Most alignments run at once on the GPU, each on its own CUDA stream from its own host thread:
one alignment of a contig-sized window keeps only a few warps busy (docs/GPU.md, "Local
placement", has the measurements)."""


def cpu_aligners(threads: int | None) -> int:
    """Host threads that align windows on the CPU engine beside the :data:`GPU_STREAMS` GPU
    ones in the GPU engine's placement driver: half the CPU threads ``threads`` allows
    (:func:`~gpualign_plugin.pairwise.cpu.thread_count`; the other half for the GPU threads'
    host walks), none on one thread. One CPU alignment of a contig-sized window (about 0.7 s
    for 14 kbp x 20 kbp on one core) takes about as long as one of 16 concurrent GPU
    alignments (7.7 s for 160 on an H100), so each CPU thread adds about one stream's worth."""
    from gpualign_plugin.pairwise import cpu

    return cpu.thread_count(threads) // 2


def _shared_aligner(gpu_align: Callable, cpu_align: Callable, gpu_threads: int) -> Callable:
    """An ``align(q, t, score)`` for a pool of threads: the first ``gpu_threads`` threads that call
    it align with ``gpu_align`` from then on, later threads with ``cpu_align``. Threads take
    the next alignment as they are free, so the engines share the alignments by speed;
    both engines return the same alignment, so the records do not depend on which ran."""
    local, lock, roles = threading.local(), threading.Lock(), [0]

    def align(q: np.ndarray, t: np.ndarray, score: int):
        engine = getattr(local, "engine", None)
        if engine is None:
            with lock:
                engine = local.engine = gpu_align if roles[0] < gpu_threads else cpu_align
                roles[0] += 1
        return engine(q, t, score)

    return align


SLICE_SPAN_RATIO = 8
"""In the placement driver (both engines), a target slice scored for a segment is at least this many times the longest
span of a significant alignment of the segment (so the slices' overlap costs at most 1/8)."""

SLICE_MIN_COLUMNS = 16384
"""In the placement driver, no target slice is cut shorter than this (a GPU strip over it takes
milliseconds; more slices would only add host work)."""

SLICE_WAVES = 16
"""In the placement driver, target slices are cut short enough that a score call's passes give
about this many waves of 512-row strips over the resident warps (so the last, partly idle wave
is short; the CPU engine's figure of warps is :data:`~gpualign_plugin.pairwise.cpu.WARPS_PER_THREAD`).
The first passes' slices are also what later passes are pruned to (:class:`_SliceScores`):
on issue 11's shape, 16 waves give 1.05e13 swept cells in all against 1.15e13 with 4
(``scripts/placement-prune-count``); unpruned, 16 and 4 waves took the same time on an H100."""

LAUNCH_CELLS = 2**41
"""Most DP cells of one GPU score call of the placement driver (about a second on an H100 or
H200), unless one query's passes need more: the first passes of many contigs are scored in
several calls, so the alignments of the longest contigs start while the rest are scored."""


def significance_floor(significant: Callable[[int], bool], most: int) -> int:
    """The smallest score in ``1..most`` that ``significant`` accepts, or ``most + 1`` if none.

    Every score below it is not significant, whatever ``significant`` does above it.
    """
    for score in range(1, most + 1):
        if significant(score):
            return score
    return most + 1


def span_bound(rows: int, floor: int, scheme: ScoringScheme) -> int | None:
    """Most target columns a local alignment of a ``rows``-row query segment scoring at least
    ``floor`` can span: ``0`` when no alignment can reach ``floor``, ``None`` when unbounded.

    With ``P`` aligned pairs (``P <= rows``) and ``D`` deleted target residues, the score is at
    most ``best P - extend D`` (``best`` the largest substitution score), so ``D <= (best rows -
    floor) / extend`` and the span ``P + D`` is at most ``rows + D``.
    """
    best = int(scheme.matrix.max())
    if best * rows < floor:
        return 0
    if scheme.gap_extend <= 0:
        return None
    return rows + (best * rows - floor) // scheme.gap_extend


def window_start(end: PairScore, scheme: ScoringScheme) -> int:
    """First column (0-based) of the window that holds every optimal local path to ``end``'s cell.

    ``end`` is the end cell and score of a local score pass (:class:`PairScore`). Every
    optimal path to it has score ``S = end.score``, at most ``P <= i_end`` pairs and so at
    most ``D = (best i_end - S) / extend`` deletions; it starts at column ``>= j_end -
    i_end - D + 1``. Aligning rows ``1..i_end`` against columns ``window_start + 1 ..
    j_end`` gives the same alignment as the whole slice (docs/ALGORITHMS.md, "Local
    placement", alignment window).
    """
    if scheme.gap_extend <= 0:
        return 0
    deletions = (int(scheme.matrix.max()) * end.query_end - end.score) // scheme.gap_extend
    return max(0, end.target_end - end.query_end - deletions)


def _window(where: _Slice, end: PairScore, scheme: ScoringScheme) -> _Slice:
    """The slice of :func:`window_start`: oriented rows ``[0, i_end)`` of ``where``, columns up to ``j_end``."""
    t0 = where.t0 + window_start(end, scheme)
    t1 = where.t0 + end.target_end
    if where.strand == "-":
        return _Slice(where.q1 - end.query_end, where.q1, "-", where.t_index, t0, t1)
    return _Slice(where.q0, where.q0 + end.query_end, "+", where.t_index, t0, t1)


def _cover(t0: int, t1: int, span: int | None, length: int) -> list[tuple[int, int]]:
    """Slices of ``[t0, t1)`` of about ``length`` columns overlapping by ``span``: every
    interval of at most ``span`` columns lies inside one of them."""
    width = t1 - t0
    if span is None or width <= length:
        return [(t0, t1)]
    count = -(-(width - span) // (length - span))
    step = -(-(width - span) // count)
    return [(t0 + k * step, min(t1, t0 + k * step + step + span)) for k in range(count)]


def score_above_floor(scorer, requests: list, scheme: ScoringScheme,
                      within: list | None = None) -> tuple[list[PairScore], list[list]]:
    """Local scores of ``requests``, exact wherever they reach their floor, by ``scorer`` in one call.

    ``requests`` are ``(codes, t_index, t0, t1, floor)``; ``scorer`` has ``score(pairs)``
    and ``warps`` (:class:`~gpualign_plugin.pairwise.gpu.PairScorer`). A segment that no
    alignment scoring ``floor`` fits (:func:`span_bound` is 0) is not scored; a long
    target range is cut into slices (:func:`_cover`) that overlap by the span bound, so
    an alignment scoring at least ``floor`` lies whole in some slice, and keeps its score
    there. ``within`` (optional, one entry per request) replaces the cut of a request by
    the given target slices ``(s0, s1)`` (inside ``[t0, t1)``), where the caller knows
    that every alignment scoring at least ``floor`` lies whole in one of them (an empty
    list: nothing is scored); ``None`` entries are cut as above.

    Returns ``(results, slices)``. ``results``: per request the best slice's score and end
    cell (score descending, row, column ascending, columns counted from ``t0``): the whole
    range's own when its score is at least ``floor``; below ``floor`` only a lower bound
    (``(0, 0, 0)`` if not scored). ``slices``: per request the ``(s0, s1, score)`` of every
    slice scored (columns of the whole target).
    """
    spans = [span_bound(len(codes), floor, scheme) for codes, _, _, _, floor in requests]
    cuts = []
    for k, ((codes, _, t0, t1, _floor), span) in enumerate(zip(requests, spans)):
        given = within[k] if within is not None else None
        cuts.append([] if span == 0 else given if given is not None else None)
    work = sum(len(r[0]) * (r[3] - r[2]) for r, cut in zip(requests, cuts) if cut is None) + \
        sum(len(r[0]) * (s1 - s0) for r, cut in zip(requests, cuts) if cut for s0, s1 in cut)
    ideal = -(-work // (scorer.warps * 512 * SLICE_WAVES)) if work else 1
    pairs, owners = [], []
    for k, ((codes, t_index, t0, t1, _floor), span, cut) in enumerate(zip(requests, spans, cuts)):
        if cut is None:
            length = max(SLICE_SPAN_RATIO * span, ideal, SLICE_MIN_COLUMNS) if span is not None else 0
            cut = _cover(t0, t1, span, length)
        for s0, s1 in cut:
            pairs.append((codes, t_index, s0, s1))
            owners.append((k, s0, s1))
    results = [PairScore(0, 0, 0)] * len(requests)
    slices: list[list] = [[] for _ in requests]
    for (k, s0, s1), found in zip(owners, scorer.score(pairs) if pairs else []):
        slices[k].append((s0, s1, found.score))
        if found.score <= 0:
            continue
        found = PairScore(found.score, found.query_end, found.target_end + s0 - requests[k][2])
        old = results[k]
        if (-found.score, found.query_end, found.target_end) < (-old.score, old.query_end, old.target_end):
            results[k] = found
    return results, slices


class _SliceScores:
    """Per query, strand and target: the slice scores of every whole-target score pass of a
    query segment, to prune later passes of sub-intervals (docs/ALGORITHMS.md, "Two
    shortcuts", pruned re-scores).

    Invariant (kept by :meth:`within` and :meth:`record`): every local alignment scoring at
    least the query's floor of any sub-interval of a recorded segment lies whole in one of
    its recorded slices, whose recorded score is then at least the floor too.
    """

    def __init__(self):
        self.segments: dict = {}  # (query, strand, t_index) -> [(q0, q1, [(s0, s1, score)])]

    def within(self, k: int, where: _Slice, floor: int) -> list | None:
        """The slices to score ``where`` on (query ``k``): those of the smallest recorded
        segment holding ``where``'s query interval that score at least ``floor``, clipped to
        ``where``'s columns; None when no recorded segment holds it (cut as usual)."""
        holders = [(q1 - q0, scored) for q0, q1, scored in self.segments.get((k, where.strand, where.t_index), ())
                   if q0 <= where.q0 and where.q1 <= q1]
        if not holders:
            return None
        scored = min(holders, key=lambda holder: holder[0])[1]
        return [(max(s0, where.t0), min(s1, where.t1)) for s0, s1, score in scored
                if score >= floor and max(s0, where.t0) < min(s1, where.t1)]

    def record(self, k: int, where: _Slice, length: int, scored: list) -> None:
        """Keep the slice scores of ``where`` (query ``k``) if it spans the whole target
        (``length`` columns): only then do its slices hold every alignment of its segment."""
        if where.t0 == 0 and where.t1 == length:
            self.segments.setdefault((k, where.strand, where.t_index), []).append(
                (where.q0, where.q1, scored))


class _Engine:
    """The GPU engine's state in :func:`place_local`, and the score passes and alignments of one
    query at a time in a GPU :attr:`session` (:func:`_run_one`).

    ``gpu_memory`` bounds each alignment's memory (see
    :func:`gpualign_plugin.pairwise.gpu.align_pair`). ``on_progress`` (if given; from a
    helper thread too) is called with DP cells as they are computed: each score pass while it
    runs, and each alignment's score pass, region sweeps and chunk windows.
    """

    def __init__(self, scheme: ScoringScheme, device: int, gpu_memory: int | None = None,
                 gpu_profile: dict | None = None,
                 on_progress: Callable[[int], None] | None = None):
        from gpualign_plugin.pairwise import cpu, gpu

        self.on_progress = on_progress
        self.scheme = scheme
        self.gpu_memory, self.gpu_profile = gpu_memory, gpu_profile
        self.session = None  # a LongPairSession, when place_local opens one
        self.recorded = _SliceScores()  # the session's whole-target passes, one slice each
        self.device = device
        self.cpu, self.gpu = cpu, gpu
        self.cells = 0

    def score(self, query: Sequence, k: int, targets: list[Sequence], slices: list[_Slice],
              floor: int) -> list[PairScore]:
        """Optimal local score and end cell of each segment of ``slices`` of query ``k`` where
        it is at least ``floor``, else a score below ``floor``; adds the cells computed to
        ``cells``.

        A segment inside the query interval of a whole-target pass on its strand and target
        that scored below ``floor`` gets score 0 without a pass (pruned re-scores,
        docs/ALGORITHMS.md: a piece's second-best pass on the other strand, when that strand
        holds nothing significant). Segments of fewer than :data:`SESSION_CPU_ROWS` rows are
        scored on the CPU; the others' passes run at once where the session can
        (:meth:`~gpualign_plugin.pairwise.gpu.LongPairSession.score_all`).
        """
        ends: list = [PairScore(0, 0, 0)] * len(slices)
        todo = [i for i, where in enumerate(slices) if self.recorded.within(k, where, floor) != []]
        pairs = {i: (slices[i], _oriented(query, slices[i]),
                     targets[slices[i].t_index].codes[slices[i].t0:slices[i].t1]) for i in todo}
        self.cells += sum(len(q) * len(t) for _, q, t in pairs.values())
        on_gpu = [i for i in todo if len(pairs[i][1]) >= SESSION_CPU_ROWS]
        for i in todo:
            if i not in on_gpu:
                ends[i] = self.cpu.score_pair(pairs[i][1], pairs[i][2], self.scheme, "local",
                                              progress=self.on_progress)
        for i, end in zip(on_gpu, self.session.score_all([pairs[i] for i in on_gpu])):
            ends[i] = end
        for i in todo:
            length = len(targets[slices[i].t_index])
            self.recorded.record(k, slices[i], length, [(0, length, ends[i].score)])
        return ends

    def align(self, query: Sequence, targets: list[Sequence], where: _Slice, end: PairScore,
              zdrop: float):
        """The Z-drop-cut optimal local alignment in ``where`` (its score pass gave ``end``) as an
        :class:`Alignment`, or None; aligned in the window of :func:`window_start` unless the
        session kept ``where``'s own score pass."""
        if where not in self.session.kept:
            where = _window(where, end, self.scheme)
        return _align_cut(query, targets[where.t_index], where,
                          lambda q, t: self.session.align(where, q, t), self.scheme, zdrop)


def _oriented(query: Sequence, where: _Slice) -> np.ndarray:
    """Codes of the query segment of ``where``, reverse-complemented on ``'-'``."""
    piece = query.codes[where.q0:where.q1]
    return reverse_complement_codes(piece) if where.strand == "-" else piece


def _align_cut(query: Sequence, target: Sequence, where: _Slice, align: Callable,
               scheme: ScoringScheme, zdrop: float) -> Alignment | None:
    """``align(q, t)`` (a :class:`PairAlignment`) of the oriented query segment and the target
    columns of ``where``, cut by :func:`cut_alignment`; None when its score is not positive."""
    q, t = _oriented(query, where), target.codes[where.t0:where.t1]
    pair = align(q, t)
    return None if pair.score <= 0 else cut_alignment(pair, q, t, scheme, zdrop, query, target, where)


def cut_alignment(pair, q: np.ndarray, t: np.ndarray, scheme: ScoringScheme, zdrop: float,
                  query: Sequence, target: Sequence, where: _Slice) -> Alignment:
    """``pair`` (a local alignment of oriented segment ``q`` to target slice ``t``) cut by
    :func:`zdrop_cut` and mapped to the forward strand of the whole query and target."""
    aligned_q = q[pair.query_start:pair.query_end]
    aligned_t = t[pair.target_start:pair.target_end]
    scores = column_scores(pair.cigar, aligned_q, aligned_t, scheme)
    start, end, score = zdrop_cut(scores, zdrop)
    cigar, query_before, target_before = cigar_columns(pair.cigar, start, end)
    qs = pair.query_start + query_before
    qe = qs + cigar.query_length()
    ts = pair.target_start + target_before
    te = ts + cigar.target_length()
    if where.strand == "-":
        qs, qe = where.q1 - qe, where.q1 - qs
    else:
        qs, qe = where.q0 + qs, where.q0 + qe
    return Alignment(query.id, target.id, len(query), len(target), qs, qe, where.t0 + ts,
                     where.t0 + te, where.strand, score, cigar, "local")


def place_local(queries: list[Sequence], targets: list[Sequence], scheme: ScoringScheme, *,
                backend: str = "auto", evalue: float = DEFAULT_EVALUE, strands: str = "both",
                threads: int | None = None, device: int = 0, zdrop_bits: float = ZDROP_BITS,
                min_score: int = 1, on_cells: Callable[[int], None] | None = None,
                gpu_memory: int | None = None, gpu_profile: dict | None = None,
                on_progress: Callable[[int], None] | None = None, devices: list[int] | None = None,
                count_low_complexity: bool = False) -> list[Alignment]:
    """Every significant local alignment of each query, non-overlapping on the query, placed.

    The set is defined in docs/ALGORITHMS.md ("Local placement"): repeatedly the
    best (Z-drop-cut) optimal local alignment of a still-free query segment
    against any target on any strand, until the best left is not significant at
    ``evalue``; accepted query intervals are removed from the free segments.

    Parameters
    ----------
    queries, targets : list of Sequence
        Encoded records (same scheme); targets in file order (the tie-break).
    scheme : ScoringScheme
        Substitution scores and gap costs.
    backend : {'auto', 'cpu', 'gpu'}
        Engine; the result is the same on both.
    evalue : float
        Largest E-value reported: BLAST's E-value of the score
        (:meth:`~gpualign_plugin.statistics.KarlinAltschul.evalue` with ``m`` the
        whole query's length, ``N`` all target residues, ``R`` the target records,
        and, in Spouge's finite-size correction of gapped protein schemes, ``n`` the
        length of the target record holding the alignment, as blastp per subject;
        parameters from :func:`~gpualign_plugin.statistics.parameters_for`); must be
        positive.
    strands : {'both', 'plus'}
        ``'both'`` also aligns the reverse complement (DNA only).
    threads : int, optional
        CPU engine: score passes and alignments run this many at once, one core each
        (:func:`_place_on_cpu`); default all of Numba's threads.
    device : int
        CUDA device ordinal.
    zdrop_bits : float
        Z-drop in bits; ``math.inf`` gives the plain definition (no cut).
    min_score : int
        Also required of every reported alignment (like the E-value cutoff, a
        floor on the score: together they are the significance test).
    on_cells : callable, optional
        Called with the DP cells of each query when it is done (progress).
    gpu_memory : int, optional
        GPU memory budget in bytes of each alignment (see
        :func:`gpualign_plugin.pairwise.gpu.align_pair`).
    gpu_profile : dict, optional
        On the GPU, filled with the alignments' phase seconds summed
        (:func:`gpualign_plugin.pairwise.gpu.add_profile`).
    on_progress : callable, optional
        Called with DP cells as they are computed, so a progress bar moves inside
        one long query: on the CPU (from its worker threads) every score pass and
        each alignment's end-cell pass and traceback bands; on the GPU (from helper threads too) each score
        pass while it runs (one query) or each multi-pair score call as it
        ends (several queries), and each alignment's score pass, region sweeps and
        chunk windows. ``on_cells`` still counts the score passes per query.
    devices : list of int, optional
        GPU: split each score pass and alignment of one query placed on at most
        :data:`SESSION_CANDIDATES` candidates (a chromosome pair) by columns over these
        devices (:func:`gpualign_plugin.pairwise.gpu.align_pair`); ``device`` and every other
        case run on the first. Same result.
    count_low_complexity : bool
        DNA: also count the columns of low-complexity query bases (poly-A, long homopolymers:
        :mod:`~gpualign_plugin.pairwise.low_complexity`) toward a piece's significance. By
        default a piece (or secondary) is reported only if the columns on the other bases alone
        are significant; one that is not still takes its query interval. Proteins: no effect.

    Returns
    -------
    list of Alignment
        Per query, in query-file order: the pieces by score descending (ties:
        the order they were accepted), the first primary, the others
        supplementary; then the close secondary placements of the pieces (see
        :data:`SECONDARY_RATIO`), in the order of their pieces. ``mapq``,
        ``evalue`` and ``bit_score`` are set. A query without a significant
        alignment has none.
    """
    from gpualign_plugin.runtime.backend import resolve_backend

    if not evalue > 0 or not math.isfinite(evalue):
        raise InputError(f"--evalue must be a positive number, got {evalue!r}")
    strand_list = strand_signs(strands, scheme)
    parameters = parameters_for(scheme)
    zdrop = zdrop_bits * math.log(2.0) / parameters.lam
    if devices:
        device = devices[0]
    engine_name = resolve_backend(backend, device)
    if engine_name == "gpu":
        if not scheme.fits_int8:  # the GPU engine's int8 query profile
            engine_name = "cpu"
    for query in queries:
        for target in targets:
            scheme.check_score_range(len(query), len(target), (query.id, target.id))
    plans = [_plan(q, targets, scheme, strand_list, parameters, evalue, min_score, count_low_complexity)
             for q in queries]
    if engine_name == "cpu":
        return _place_on_cpu(queries, targets, plans, scheme, threads, zdrop, on_cells, on_progress)
    engine = _Engine(scheme, device, gpu_memory, gpu_profile, on_progress=on_progress)
    if len(queries) > 1 or len(targets) * len(strand_list) > SESSION_CANDIDATES:
        return _place_on_gpu(queries, targets, plans, engine, zdrop, on_cells, threads)
    placed: list[Alignment] = []
    with engine.gpu.long_pair_session(scheme, "local", device, gpu_memory, SESSION_CANDIDATES,
                                      gpu_profile, on_progress, devices) as engine.session:
        for k, (query, (floor, steps)) in enumerate(zip(queries, plans)):
            before = engine.cells
            placed.extend(_run_one(query, k, targets, floor, steps, engine, zdrop))
            if on_cells is not None:
                on_cells(engine.cells - before)
    return placed


def _plan(query: Sequence, targets: list[Sequence], scheme: ScoringScheme, strand_list,
          parameters: KarlinAltschul, evalue: float, min_score: int, count_low_complexity: bool = False):
    """``(floor, generator)`` of one query's placement (:func:`_place_query`) as
    :func:`place_local` runs it: significance at ``evalue`` and ``min_score`` (at least 1),
    and the query's significance floor, the lowest over the target lengths where Spouge's
    correction uses them (below it no score is significant on any target). DNA, unless
    ``count_low_complexity``: an alignment is reported only if the columns of its query bases
    outside low-complexity stretches are significant alone (:func:`counted_score`)."""
    mask = scheme.is_dna and not count_low_complexity
    database = (sum(len(t) for t in targets), len(targets))
    min_score = max(1, min_score)
    best = max(1, int(scheme.matrix.max()))
    # Spouge's correction uses the subject's length; otherwise one length stands for all.
    lengths = sorted({len(t) for t in targets}) if parameters.spouge is not None else [None]

    def significant_on(score: int, length: int | None) -> bool:
        return score >= min_score and \
            parameters.evalue(score, len(query), *database, length) <= evalue

    def significant(score: int, t_index: int) -> bool:
        return significant_on(score, len(targets[t_index]))

    floor = min(significance_floor(lambda score, n=n: significant_on(score, n), best * len(query))
                for n in lengths)
    @functools.cache
    def low_complexity() -> np.ndarray:  # made when the query's first alignment is judged
        from gpualign_plugin.pairwise.low_complexity import low_complexity_mask

        return low_complexity_mask(query.codes)

    def reported(alignment: Alignment, t_index: int) -> bool:
        return not mask or significant(
            counted_score(alignment, query, targets[t_index], low_complexity(), scheme), t_index)

    return floor, _place_query(query, targets, strand_list, significant, floor, parameters, database, reported)


def counted_score(alignment: Alignment, query: Sequence, target: Sequence, masked: np.ndarray,
                  scheme: ScoringScheme) -> int:
    """The score of ``alignment``'s columns whose query base is not ``masked`` (``bool`` per
    base of ``query``, forward strand); gap columns without a query base count."""
    if not masked[alignment.query_start:alignment.query_end].any():
        return alignment.score
    oriented = query.codes[alignment.query_start:alignment.query_end]
    if alignment.strand == "-":
        oriented = reverse_complement_codes(oriented)
    scores = column_scores(alignment.cigar, oriented,
                           target.codes[alignment.target_start:alignment.target_end], scheme)
    ops = column_ops(alignment.cigar)
    has_base = ops != ord("D")
    at = np.cumsum(has_base) - has_base  # oriented query offset of each column
    forward = alignment.query_start + at if alignment.strand == "+" else alignment.query_end - 1 - at
    return int(scores[~(has_base & masked[forward])].sum())


@dataclasses.dataclass(frozen=True)
class _Scores:
    """A step of a query's placement: it needs the local score and end cell of each slice."""

    slices: list


@dataclasses.dataclass(frozen=True)
class _Aligns:
    """A step of a query's placement: it needs the cut alignment (or None) of each ``(slice, end cell)``."""

    asks: list


def _run_one(query: Sequence, k: int, targets: list[Sequence], floor: int, steps, engine: _Engine,
             zdrop: float):
    """Drive the placement of query ``k`` (:func:`_place_query`, significance ``floor``) in
    ``engine``'s GPU session, one request at a time (the records of :func:`_place_together`)."""
    reply = None
    while True:
        try:
            ask = steps.send(reply)
        except StopIteration as done:
            return done.value
        if isinstance(ask, _Scores):
            reply = engine.score(query, k, targets, ask.slices, floor)
        else:
            reply = [engine.align(query, targets, where, end, zdrop) for where, end in ask.asks]


def _place_on_gpu(queries: list[Sequence], targets: list[Sequence], plans: list, engine: _Engine,
                  zdrop: float, on_cells, threads: int | None) -> list[Alignment]:
    """:func:`place_local` on the GPU: :func:`_place_together` with a
    :class:`~gpualign_plugin.pairwise.gpu.PairScorer` for the score passes and
    :func:`~gpualign_plugin.pairwise.gpu.align_pair` for the alignments, :data:`GPU_STREAMS`
    at once, each on its own CUDA stream, and :func:`cpu_aligners` (of ``threads``) more
    threads aligning on the CPU engine beside them (:func:`_shared_aligner`); score launches
    and alignments overlap. Memory: :data:`~gpualign_plugin.pairwise.gpu.DEFAULT_MEMORY_FRACTION`
    of the free memory, half for the score launches and half shared equally by the streams
    (each part at most ``--gpu-memory``), without the process-wide pool limit. ``gpu_profile``
    gets the GPU alignments' phase sums, the score launches and their seconds, the cells they
    swept, the driver's timing (:func:`_place_together`), and how many alignments ran
    (``alignments``), of them on the CPU (``cpu_alignments``)."""
    import cupy

    from gpualign_plugin.runtime.kernels import free_bytes

    gpu, scheme, device = engine.gpu, engine.scheme, engine.device
    with cupy.cuda.Device(device):
        half = int(free_bytes() * gpu.DEFAULT_MEMORY_FRACTION) // 2
    limit = engine.gpu_memory if engine.gpu_memory is not None else half
    scorer = gpu.PairScorer([t.codes for t in targets], scheme, device, min(limit, half))
    budget = min(limit, half // GPU_STREAMS)
    if engine.on_progress is not None:
        scorer = _CountedScorer(scorer, engine.on_progress)
    profiles: list[dict] = []
    on_gpu: list = []  # the cells of each window aligned on the GPU
    on_cpu: list = []  # and on the CPU

    def align(q: np.ndarray, t: np.ndarray, score: int):
        # The GPU finds the end cell again: its traceback starts from that pass's checkpoints.
        on_gpu.append(len(q) * len(t))
        profile = {} if engine.gpu_profile is not None else None
        with cupy.cuda.Device(device), cupy.cuda.Stream(non_blocking=True):
            pair = gpu.align_pair(q, t, scheme, "local", device, memory_budget=budget,
                                  profile=profile, limit_pool=False, progress=engine.on_progress)
        if profile:
            profiles.append(profile)
        return pair

    def align_on_cpu(q: np.ndarray, t: np.ndarray, score: int):
        on_cpu.append(len(q) * len(t))
        return engine.cpu.align_pair(q, t, scheme, "local", threads=1, progress=engine.on_progress,
                                     end=PairScore(score, len(q), len(t)))

    timing: dict = {}
    placed = _place_together(queries, targets, plans, scheme, scorer,
                             _shared_aligner(align, align_on_cpu, GPU_STREAMS), zdrop, on_cells,
                             GPU_STREAMS + cpu_aligners(threads), overlap=True,
                             launch_cells=LAUNCH_CELLS, timing=timing)
    if engine.gpu_profile is not None:
        engine.gpu_profile.update(timing)
        for profile in profiles:
            gpu.add_profile(engine.gpu_profile, profile)
        engine.gpu_profile.update(score_launches=scorer.launches, score_s=scorer.seconds,
                                  swept_cells=scorer.swept_cells, cpu_alignments=len(on_cpu),
                                  pruned_cells=engine.gpu_profile.get("pruned_cells", 0) + scorer.pruned_cells,
                                  alignments=len(on_cpu) + len(on_gpu))
    return placed


def _place_on_cpu(queries: list[Sequence], targets: list[Sequence], plans: list,
                  scheme: ScoringScheme, threads: int | None, zdrop: float, on_cells,
                  on_progress: Callable[[int], None] | None) -> list[Alignment]:
    """:func:`place_local` on the CPU: :func:`_place_together` with a
    :class:`~gpualign_plugin.pairwise.cpu.PairScorer` for the score passes and
    :func:`~gpualign_plugin.pairwise.cpu.align_pair` for the alignments, each alignment on one
    core, ``threads`` (:func:`~gpualign_plugin.pairwise.cpu.thread_count`) at once; a score call
    (on as many threads) runs whenever passes wait, sharing the cores with the alignments (one
    that took only the cores they left kept them after they ended: Chlamydia placement on 2
    cores 365 -> 467 s). ``on_progress`` gets the cells of every pass and alignment as they are
    computed (from the pool's threads)."""
    from gpualign_plugin.pairwise import cpu

    scorer = cpu.PairScorer([t.codes for t in targets], scheme, threads, on_progress)

    def align(q: np.ndarray, t: np.ndarray, score: int):
        return cpu.align_pair(q, t, scheme, "local", threads=1, progress=on_progress,
                              end=PairScore(score, len(q), len(t)))

    return _place_together(queries, targets, plans, scheme, scorer, align, zdrop, on_cells,
                           scorer.threads, overlap=True)


class _CountedScorer:
    """A :class:`~gpualign_plugin.pairwise.gpu.PairScorer` that reports the cells of each
    :meth:`score` call (its pairs' rows times columns) to ``progress`` when it returns."""

    def __init__(self, scorer, progress: Callable[[int], None]):
        self.scorer, self.progress = scorer, progress

    def __getattr__(self, name):
        return getattr(self.scorer, name)

    def score(self, pairs: list) -> list[PairScore]:
        """``scorer.score(pairs)``, then ``progress`` of their cells."""
        found = self.scorer.score(pairs)
        cells = sum(len(q) * (t1 - t0) for q, _, t0, t1 in pairs)
        if cells:
            self.progress(cells)
        return found


def _place_together(queries: list[Sequence], targets: list[Sequence], plans: list,
                    scheme: ScoringScheme, scorer, align: Callable, zdrop: float, on_cells,
                    workers: int, overlap: bool = False, launch_cells: int | None = None,
                    timing: dict | None = None, prune: bool = True) -> list[Alignment]:
    """All queries' placements (:func:`_place_query`) advanced together.

    Each query's generator is sent the replies to its request as soon as they are all in,
    and its next request joins the others: score passes wait for the next ``scorer.score``
    call, which takes the waiting passes of every query through :func:`score_above_floor`
    (exact at and above each query's significance floor, which is all the placement reads),
    the longest queries first and, with ``launch_cells``, only as many queries as fit that
    many cells (at least one); alignments go to a pool of ``workers`` threads, each
    ``align(q, t, score)`` (a :class:`PairAlignment` of oriented codes) in the window of
    :func:`window_start`, whose last cell is the end cell of the optimal score ``score``
    (the first of the window's cells scoring it, as it is in the pass's whole range). With
    ``overlap``, a score call starts whenever passes wait, while alignments run (the GPU
    engine: the launches fill the device between the latency-bound alignments; the CPU engine:
    the cores stay busy while one long alignment runs, the call's threads sharing them with
    the alignments); without, only when no alignment is running, so that the scorer's threads
    and the pool's never run at once. With
    ``prune`` (the default), a pass of a segment's sub-interval (a segment left or right of
    a piece, a piece's second-best pass) runs only on the slices of the segment's own pass
    that reached the floor (:class:`_SliceScores`); ``prune=False`` cuts every pass afresh
    (the same records, more cells: for measuring what pruning saves). ``plans`` are
    ``(floor, generator)`` per query.

    The records are those of each generator driven alone (:func:`_run_one`), query after
    query, whatever the order of the calls: a generator sees only its own replies, and
    those do not depend on what else was scored or aligned at the time. ``on_cells`` gets
    each query's score-pass cells when it is done; ``timing`` (if given) gets
    ``score_calls``, ``score_wait_s`` (seconds in score calls) and ``align_wait_s``
    (seconds waiting for alignments only).
    """
    clock = {"score_calls": 0, "score_wait_s": 0.0, "align_wait_s": 0.0}
    known = _SliceScores()
    floors = [floor for floor, _ in plans]
    runs = [run for _, run in plans]
    results: list = [None] * len(queries)
    cells = [0] * len(queries)
    waiting: dict = {}  # query -> its _Scores request, in the order they came
    pieces: dict = {}  # query -> its alignments' replies so far
    running: dict = {}  # future -> (query, index of its ask)

    def aligned(item) -> Alignment | None:
        k, where, end = item
        return _align_cut(queries[k], targets[where.t_index], _window(where, end, scheme),
                          lambda q, t: align(q, t, end.score), scheme, zdrop)

    def advance(k: int, reply, pool) -> None:
        try:
            ask = runs[k].send(reply)
        except StopIteration as done:
            results[k] = done.value
            if on_cells is not None:
                on_cells(cells[k])
            return
        if isinstance(ask, _Scores):
            waiting[k] = ask
            return
        if not ask.asks:
            advance(k, [], pool)
            return
        pieces[k] = [None] * len(ask.asks)
        for index, (where, end) in enumerate(ask.asks):
            running[pool.submit(aligned, (k, where, end))] = (k, index)

    def collect(done, pool) -> None:
        for future in done:
            k, index = running.pop(future)
            pieces[k][index] = future.result()
            if all(f_k != k for f_k, _ in running.values()):
                advance(k, pieces.pop(k), pool)

    def next_call() -> list[int]:
        order = sorted(waiting, key=lambda k: -len(queries[k]))
        chosen, total = [], 0
        for k in order:
            size = sum((w.q1 - w.q0) * (w.t1 - w.t0) for w in waiting[k].slices)
            if chosen and launch_cells is not None and total + size > launch_cells:
                break
            chosen.append(k)
            total += size
        return chosen

    def score(chosen: list[int], pool) -> None:
        segments: dict = {}  # one oriented array per segment, so the scorer uploads it once
        requests, owners, within = [], [], []
        for k in chosen:
            for where in waiting[k].slices:
                key = (k, where.q0, where.q1, where.strand)
                if key not in segments:
                    segments[key] = _oriented(queries[k], where)
                requests.append((segments[key], where.t_index, where.t0, where.t1, floors[k]))
                owners.append((k, where))
                within.append(known.within(k, where, floors[k]) if prune else None)
                cells[k] += (where.q1 - where.q0) * (where.t1 - where.t0)
        started = time.perf_counter()
        found, scored = score_above_floor(scorer, requests, scheme, within) if requests else ([], [])
        clock["score_calls"] += 1
        clock["score_wait_s"] += time.perf_counter() - started
        replies: dict = {k: [] for k in chosen}
        for (k, where), end, slices in zip(owners, found, scored):
            replies[k].append(end)
            known.record(k, where, len(targets[where.t_index]), slices)
        for k in chosen:
            del waiting[k]
            advance(k, replies[k], pool)

    with ThreadPoolExecutor(max_workers=workers) as pool:
        for k in range(len(queries)):
            advance(k, None, pool)
        while waiting or running:
            collect([future for future in running if future.done()], pool)
            if waiting and (overlap or not running):
                score(next_call(), pool)
            elif running:
                started = time.perf_counter()
                done, _ = wait(running, return_when=FIRST_COMPLETED)
                clock["align_wait_s"] += time.perf_counter() - started
                collect(done, pool)
    if timing is not None:
        timing.update(clock)
    return [record for found in results for record in found]


def _place_query(query: Sequence, targets: list[Sequence], strand_list, significant, floor: int,
                 parameters: KarlinAltschul, database: tuple[int, int], reported):
    """One query's placement (docs/ALGORITHMS.md, "Local placement") as a generator of requests.

    ``significant(score, t_index)`` is the significance test of a score on target
    ``t_index``; ``floor`` is a score below which nothing is significant on any target.
    ``reported(alignment, t_index)`` says whether a piece (or secondary) whose score is
    significant is reported; one that is not still takes its query interval.
    It yields :class:`_Scores` (and is sent one :class:`PairScore` per slice: exact when
    at least ``floor``, else any score below ``floor``)
    and :class:`_Aligns` (sent one cut :class:`Alignment` or None per request); it
    returns the query's records. Requests that do not depend on each other come in one
    step (the segments left and right of a piece, all second-best passes), so that a
    driver can run them together.
    """
    m = len(query)
    heap: list = []

    def segment(q0: int, q1: int) -> list[_Slice]:
        return [_Slice(q0, q1, strand, t_index, 0, len(target))
                for t_index, target in enumerate(targets) for strand in strand_list]

    def push(slices: list[_Slice], ends: list[PairScore]) -> None:
        for where, end in zip(slices, ends):
            if significant(end.score, where.t_index):
                # Unresolved (score only) before resolved among equal scores: a bound
                # must be resolved before an equal exact score can be taken as the best.
                heapq.heappush(heap, (-end.score, 0, where.t_index, where.strand == "-", where.q0,
                                      where.q1, where, end))

    slices = segment(0, m) if m else []
    if slices:
        push(slices, (yield _Scores(slices)))
    free = {(0, m)}
    pieces: list[Alignment] = []
    while heap:
        _, resolved, t_index, minus, q0, _, where, found = heapq.heappop(heap)
        if (where.q0, where.q1) not in free:
            continue
        if not resolved:
            (piece,) = yield _Aligns([(where, found)])
            if piece is not None and significant(piece.score, t_index):
                heapq.heappush(heap, (-piece.score, 1, t_index, minus, q0, where.q1, where, piece))
            continue
        if reported(found, t_index):
            pieces.append(found)
        free.discard((where.q0, where.q1))
        slices = []
        for start, end in ((where.q0, found.query_start), (found.query_end, where.q1)):
            if end > start:
                free.add((start, end))
                slices.extend(segment(start, end))
        if slices:
            push(slices, (yield _Scores(slices)))
    return (yield from _finish(query, targets, pieces, strand_list, significant, floor, parameters,
                               database, reported))


def _second_best_slices(targets: list[Sequence], piece: Alignment, strand_list) -> list[_Slice]:
    """Where a piece's second-best placement is sought: its query interval against every target
    and strand, its own target interval left out (the parts left and right of it instead)."""
    slices = []
    for t_index, target in enumerate(targets):
        for strand in strand_list:
            if (target.id, strand) == (piece.target_id, piece.strand):
                spans = [(0, piece.target_start), (piece.target_end, len(target))]
            else:
                spans = [(0, len(target))]
            slices.extend(_Slice(piece.query_start, piece.query_end, strand, t_index, t0, t1)
                          for t0, t1 in spans if t1 > t0)
    return slices


def _finish(query: Sequence, targets: list[Sequence], pieces: list[Alignment], strand_list,
            significant: Callable[[int, int], bool], floor: int, parameters: KarlinAltschul,
            database: tuple[int, int], reported):
    """Rank the pieces, set MAPQ, E-value and bit score, and add the close secondaries
    (requests as :func:`_place_query`'s).

    ``significant(score, t_index)`` is the significance test of a score on target
    ``t_index``; E-values use the target record's length in Spouge's correction."""
    m = len(query)

    def stats(alignment: Alignment, **changes) -> Alignment:
        evalue = parameters.evalue(alignment.score, m, *database, alignment.target_length)
        return dataclasses.replace(alignment, evalue=evalue,
                                   bit_score=parameters.bit_score(alignment.score), **changes)

    ranked = [pieces[k] for k in sorted(range(len(pieces)), key=lambda k: (-pieces[k].score, k))]
    groups = [_second_best_slices(targets, piece, strand_list) for piece in ranked]
    slices = [where for group in groups for where in group]
    ends = iter((yield _Scores(slices)) if slices else [])
    placed, asks = [], []
    for rank, (piece, group) in enumerate(zip(ranked, groups)):
        second, at = 0, None
        for where in group:  # the first maximum
            end = next(ends)
            if end.score > second:
                second, at = end.score, (where, end)
        # A second placement that is not significant is chance, not a rival: it leaves MAPQ 60.
        rival = second if at is not None and significant(second, at[0].t_index) else None
        mapq = 0 if second >= piece.score else primary_mapq(piece.score, rival)
        placed.append(stats(piece, is_primary=True, is_supplementary=rank > 0, mapq=mapq))
        # Below the floor the score may be a bound only; the alignment there could not be significant.
        if at is not None and second >= floor and second >= SECONDARY_RATIO * piece.score:
            asks.append(at)
    others = (yield _Aligns(asks)) if asks else []
    secondaries = [stats(other, is_primary=False, is_supplementary=False, mapq=0)
                   for other, (where, _) in zip(others, asks)
                   if other is not None and significant(other.score, where.t_index)
                   and reported(other, where.t_index)]
    return placed + secondaries
