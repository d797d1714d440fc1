"""Placement: which alignments of a query are reported, which is primary, and MAPQ.

:func:`place_local` computes the local placement of ``docs/ALGORITHMS.md``
("Local placement"): every significant local alignment of a query, non-overlapping
on the query, on any target and strand (primary, supplementary, close secondary).
:func:`place` ranks end-to-end alignments (one per query, target and strand) by
the "Placement" rule; filtering by ``--min-score`` is its caller's job.
"""

from __future__ import annotations

import contextlib
import dataclasses
import heapq
import math
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Iterable
from typing import Sequence as Ordered

import numpy as np

from gpualign_plugin.errors import InputError
from gpualign_plugin.model import Alignment, Cigar
from gpualign_plugin.scoring import ScoringScheme, Sequence, reverse_complement_codes
from gpualign_plugin.statistics import KarlinAltschul, parameters_for, primary_mapq


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
"""On the GPU, when a query has at most this many (target, strand) candidates (a chromosome
pair on both strands), each candidate's score pass keeps its checkpoints
(:class:`~gpualign_plugin.pairwise.gpu.LongPairSession`), so aligning the best runs only the
traceback instead of a second score pass. With more candidates the checkpoints would cost more
than the pass they save."""


def column_scores(cigar: Cigar, query: np.ndarray, target: np.ndarray,
                  scheme: ScoringScheme) -> np.ndarray:
    """Score of every column of an ``=XID`` path (``int64``, one entry per column).

    ``query`` and ``target`` are the aligned residues (already sliced and oriented).
    An aligned column scores ``matrix[q, t]``; the first column of a gap run
    ``-(open + extend)``, the others ``-extend``; so the sum over any stretch of
    columns that cuts no gap run is that stretch's alignment score.
    """
    pieces = []
    qi = ti = 0
    for length, op in cigar.runs:
        if op in "=X":
            pieces.append(scheme.matrix[query[qi:qi + length], target[ti:ti + length]]
                          .astype(np.int64))
            qi += length
            ti += length
        else:
            gap = np.full(length, -scheme.gap_extend, dtype=np.int64)
            gap[0] -= scheme.gap_open
            pieces.append(gap)
            if op == "I":
                qi += length
            else:
                ti += length
    return np.concatenate(pieces) if pieces else np.zeros(0, dtype=np.int64)


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
"""Queries placed at once on the GPU, each on its own CUDA stream: one pair's striped sweep keeps
only about ``min(m, n) / 64`` warps busy, so contig-sized pairs leave most of the device idle
(docs/GPU.md, "Local placement": on an H100, 16 streams 1.6x faster than 8, 8 3.6x faster
than one)."""


class _Engine:
    """Score-only and full local alignment of query segments on the resolved backend.

    ``gpu_memory`` (GPU only) bounds each alignment's memory (see
    :func:`gpualign_plugin.pairwise.gpu.align_pair`); with ``shared`` several engines align
    at once, so none limits CuPy's process-wide pool and each keeps to its ``gpu_memory``.
    On the CPU, ``on_progress`` (if given) is called with DP cells as they are computed: each
    score pass, and the end-cell pass and traceback bands of each alignment.
    """

    def __init__(self, scheme: ScoringScheme, backend: str, device: int, threads: int | None,
                 gpu_memory: int | None = None, gpu_profile: dict | None = None,
                 shared: bool = False, on_progress: Callable[[int], None] | None = None):
        from gpualign_plugin.pairwise import cpu

        self.on_progress = on_progress
        self.scheme = scheme
        self.gpu_memory, self.gpu_profile = gpu_memory, gpu_profile
        self.shared = shared
        self.session = None  # a LongPairSession of the GPU engine, when place_local opens one
        self.device = device
        self.threads = threads
        self.cpu = cpu
        self.gpu = None
        if backend == "gpu":
            from gpualign_plugin.pairwise import gpu

            self.gpu = gpu
        self.cells = 0

    def codes(self, query: Sequence, where: _Slice) -> np.ndarray:
        """Codes of the query segment ``where`` names, oriented: reverse-complemented on ``'-'``."""
        piece = query.codes[where.q0:where.q1]
        return reverse_complement_codes(piece) if where.strand == "-" else piece

    def score(self, query: Sequence, targets: list[Sequence], where: _Slice) -> int:
        """Optimal local score (the scheme's units) of the segment ``where``; adds its cells to ``cells``."""
        q = self.codes(query, where)
        t = targets[where.t_index].codes[where.t0:where.t1]
        self.cells += len(q) * len(t)
        if self.session is not None:
            return self.session.score(where, q, t).score
        if self.gpu is not None:
            return self.gpu.score_pair(q, t, self.scheme, "local", self.device).score
        score = self.cpu.score_pair(q, t, self.scheme, "local", threads=self.threads).score
        if self.on_progress is not None:
            self.on_progress(len(q) * len(t))
        return score

    def align(self, query: Sequence, targets: list[Sequence], where: _Slice, zdrop: float):
        """The Z-drop-cut optimal local alignment in ``where`` as an :class:`Alignment` (or None)."""
        q = self.codes(query, where)
        target = targets[where.t_index]
        t = target.codes[where.t0:where.t1]
        if self.session is not None:
            pair = self.session.align(where, q, t)
        elif self.gpu is not None:
            profile = {} if self.gpu_profile is not None else None
            pair = self.gpu.align_pair(q, t, self.scheme, "local", self.device,
                                       memory_budget=self.gpu_memory, profile=profile,
                                       limit_pool=not self.shared)
            if profile:
                self.gpu.add_profile(self.gpu_profile, profile)
        else:
            pair = self.cpu.align_pair(q, t, self.scheme, "local", threads=self.threads or 1,
                                       progress=self.on_progress)
        if pair.score <= 0:
            return None
        return cut_alignment(pair, q, t, self.scheme, zdrop, query, target, where)


def cut_alignment(pair, q: np.ndarray, t: np.ndarray, scheme: ScoringScheme, zdrop: float,
                  query: Sequence, target: Sequence, where: _Slice) -> Alignment:
    """``pair`` (a local alignment of oriented segment ``q`` to target slice ``t``) cut by
    :func:`zdrop_cut` and mapped to the forward strand of the whole query and target."""
    aligned_q = q[pair.query_start:pair.query_end]
    aligned_t = t[pair.target_start:pair.target_end]
    scores = column_scores(pair.cigar, aligned_q, aligned_t, scheme)
    start, end, score = zdrop_cut(scores, zdrop)
    ops = np.repeat(np.frombuffer("".join(op for _, op in pair.cigar.runs).encode(), dtype=np.uint8),
                    [n for n, _ in pair.cigar.runs])
    consumes_q = (ops != ord("D")).astype(np.int64)
    consumes_t = (ops != ord("I")).astype(np.int64)
    qs = pair.query_start + int(consumes_q[:start].sum())
    qe = qs + int(consumes_q[start:end].sum())
    ts = pair.target_start + int(consumes_t[:start].sum())
    te = ts + int(consumes_t[start:end].sum())
    cigar = Cigar.from_ops(ops[start:end].tobytes().decode())
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
                on_progress: Callable[[int], None] | None = None) -> list[Alignment]:
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
        CPU threads per DP (Numba); default all.
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
        CPU engine: called with DP cells as they are computed (every score pass,
        and each alignment's end-cell pass and traceback bands), so a progress
        bar moves inside one long query; ``on_cells`` still counts the score
        passes per query. Not called on the GPU engine.

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
    engine_name = resolve_backend(backend, device)
    if engine_name == "gpu":
        from gpualign_plugin.pairwise import gpu

        if not gpu.accepts(scheme):
            engine_name = "cpu"
    engine = _Engine(scheme, engine_name, device, threads, gpu_memory, gpu_profile,
                     on_progress=on_progress if engine_name == "cpu" else None)
    database = (sum(len(t) for t in targets), len(targets))
    for query in queries:
        for target in targets:
            scheme.check_score_range(len(query), len(target), (query.id, target.id))
    if engine.gpu is not None and len(queries) > 1:
        return _place_on_streams(queries, targets, strand_list, engine, parameters, database, evalue,
                                 zdrop, max(1, min_score), on_cells)
    session = contextlib.nullcontext()
    if engine.gpu is not None and len(targets) * len(strand_list) <= SESSION_CANDIDATES:
        session = engine.session = engine.gpu.long_pair_session(scheme, "local", device, gpu_memory,
                                                                SESSION_CANDIDATES, gpu_profile)
    placed: list[Alignment] = []
    with session:
        for query in queries:
            before = engine.cells
            placed.extend(_place_query(query, targets, strand_list, engine, parameters, database,
                                       evalue, zdrop, max(1, min_score)))
            if on_cells is not None:
                on_cells(engine.cells - before)
    return placed


def _place_on_streams(queries, targets, strand_list, engine: _Engine, parameters, database, evalue,
                      zdrop, min_score, on_cells) -> list[Alignment]:
    """:func:`place_local`'s loop on the GPU for several queries: :data:`GPU_STREAMS` at once,
    each on its own CUDA stream with its own engine (no :class:`LongPairSession`: its kept
    passes and pool limit belong to one caller); each alignment planned within an equal share
    of the memory (or ``--gpu-memory``, if smaller) and the pool left unlimited, since its
    limit is process-wide; the records in query order, as one query after the other gives
    them."""
    import cupy

    from gpualign_plugin.runtime.kernels import free_bytes

    with cupy.cuda.Device(engine.device):
        share = int(free_bytes() * engine.gpu.DEFAULT_MEMORY_FRACTION) // GPU_STREAMS
    budget = share if engine.gpu_memory is None else min(engine.gpu_memory, share)

    def one(query: Sequence) -> tuple[list[Alignment], int, dict]:
        mine = _Engine(engine.scheme, "gpu", engine.device, engine.threads, budget,
                       {} if engine.gpu_profile is not None else None, shared=True)
        with cupy.cuda.Device(engine.device), cupy.cuda.Stream(non_blocking=True):
            found = _place_query(query, targets, strand_list, mine, parameters, database, evalue,
                                 zdrop, min_score)
        return found, mine.cells, mine.gpu_profile

    placed: list[Alignment] = []
    with ThreadPoolExecutor(max_workers=GPU_STREAMS) as pool:
        for found, cells, profile in pool.map(one, queries):
            placed.extend(found)
            for key, value in (profile or {}).items():  # one query's sums into the run's
                total = engine.gpu_profile.get(key, 0)
                engine.gpu_profile[key] = max(total, value) if key == "peak_planned_bytes" else total + value
            if on_cells is not None:
                on_cells(cells)
    return placed


def _place_query(query: Sequence, targets: list[Sequence], strand_list, engine: _Engine,
                 parameters: KarlinAltschul, database: tuple[int, int], cutoff: float,
                 zdrop: float, min_score: int) -> list[Alignment]:
    m = len(query)

    def significant(score: int, t_index: int) -> bool:
        return score >= min_score and \
            parameters.evalue(score, m, *database, len(targets[t_index])) <= cutoff

    heap: list = []

    def add_segment(q0: int, q1: int) -> None:
        if q1 <= q0:
            return
        for t_index, target in enumerate(targets):
            for strand in strand_list:
                where = _Slice(q0, q1, strand, t_index, 0, len(target))
                score = engine.score(query, targets, where)
                if significant(score, t_index):
                    # Unresolved (score only) before resolved among equal scores: a bound
                    # must be resolved before an equal exact score can be taken as the best.
                    heapq.heappush(heap, (-score, 0, t_index, strand == "-", q0, q1, where, None))

    add_segment(0, m)
    free = {(0, m)}
    pieces: list[Alignment] = []
    while heap:
        _, resolved, t_index, minus, q0, _, where, piece = heapq.heappop(heap)
        if (where.q0, where.q1) not in free:
            continue
        if not resolved:
            piece = engine.align(query, targets, where, zdrop)
            if piece is not None and significant(piece.score, t_index):
                heapq.heappush(heap, (-piece.score, 1, t_index, minus, q0, where.q1, where, piece))
            continue
        pieces.append(piece)
        free.discard((where.q0, where.q1))
        for start, end in ((where.q0, piece.query_start), (piece.query_end, where.q1)):
            if end > start:
                free.add((start, end))
                add_segment(start, end)
    return _finish(query, targets, pieces, strand_list, engine, significant, parameters, database,
                   zdrop)


def _second_best(query: Sequence, targets: list[Sequence], piece: Alignment, strand_list,
                 engine: _Engine) -> tuple[int, _Slice | None]:
    """Best score of the piece's query interval anywhere but its own target interval, and where."""
    best = (0, None)
    for t_index, target in enumerate(targets):
        for strand in strand_list:
            if (target.id, strand) == (piece.target_id, piece.strand):
                spans = [(0, piece.target_start), (piece.target_end, len(target))]
            else:
                spans = [(0, len(target))]
            for t0, t1 in spans:
                if t1 <= t0:
                    continue
                where = _Slice(piece.query_start, piece.query_end, strand, t_index, t0, t1)
                score = engine.score(query, targets, where)
                if score > best[0]:
                    best = (score, where)
    return best


def _finish(query: Sequence, targets: list[Sequence], pieces: list[Alignment], strand_list,
            engine: _Engine, significant: Callable[[int, int], bool], parameters: KarlinAltschul,
            database: tuple[int, int], zdrop: float) -> list[Alignment]:
    """Rank the pieces, set MAPQ, E-value and bit score, and add the close secondaries.

    ``significant(score, t_index)`` is the significance test of a score on target
    ``t_index``; E-values use the target record's length in Spouge's correction."""
    m = len(query)

    def stats(alignment: Alignment, **changes) -> Alignment:
        evalue = parameters.evalue(alignment.score, m, *database, alignment.target_length)
        return dataclasses.replace(alignment, evalue=evalue,
                                   bit_score=parameters.bit_score(alignment.score), **changes)

    order = sorted(range(len(pieces)), key=lambda k: (-pieces[k].score, k))
    placed, secondaries = [], []
    for rank, k in enumerate(order):
        piece = pieces[k]
        second, where = _second_best(query, targets, piece, strand_list, engine)
        # A second placement that is not significant is chance, not a rival: it leaves MAPQ 60.
        rival = second if where is not None and significant(second, where.t_index) else None
        mapq = 0 if second >= piece.score else primary_mapq(piece.score, rival)
        placed.append(stats(piece, is_primary=True, is_supplementary=rank > 0, mapq=mapq))
        if where is not None and second >= SECONDARY_RATIO * piece.score:
            other = engine.align(query, targets, where, zdrop)
            if other is not None and significant(other.score, where.t_index):
                secondaries.append(stats(other, is_primary=False, is_supplementary=False, mapq=0))
    return placed + secondaries
