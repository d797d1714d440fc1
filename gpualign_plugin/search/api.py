"""Database search: exact Smith-Waterman-Gotoh of every query against every database sequence.

Two passes:

1. **Score pass**: the best local score of every (query, target, strand), keeping each
   query's top ``k`` candidates. On the CPU (and on the GPU when the statistics must be
   fitted to the score histogram, or the database is records, not a Database) chunk by chunk of the
   database (bounded memory) through :func:`score_database`, the inter-sequence
   vectorised kernel of :mod:`~gpualign_plugin.search.cpu` or the GPU's same matrix;
   on the GPU with a prepared database by
   :func:`gpualign_plugin.search.gpu.top_hits` (the database resident, split over
   ``devices``, the top candidates chosen on the device). Chunks, parts and shards
   merge exactly because the ranking is a total order (below); everything after the
   scores is this module's.
2. **Alignment pass**: each reported hit is re-aligned by
   :func:`gpualign_plugin.batch.api.align_batch` on the search's backend (with
   ``backend='gpu'`` every hit: batched GPU launches, the longest pairs through the
   long-pair GPU engine; on the CPU the long ones by
   :func:`gpualign_plugin.pairwise.api.align_sequences` on the CPU threads at the
   same time, see :data:`BATCH_CELLS`), so its coordinates and CIGAR are exactly the
   pairwise engine's (same recurrence, same end-cell and traceback rules,
   docs/ALGORITHMS.md); its score must equal the score pass's.

**Ranking of hits** (docs/ALGORITHMS.md, "Database search"): score descending,
then the target's index in the database file, then ``+`` before ``-``. Only
alignments with a positive score are hits.

Statistics (bit score, E-value) are added at the end by :func:`finish`, from the
whole database's size, so one job and merged shards give the same numbers.
"""

from __future__ import annotations

import dataclasses
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Iterable, Iterator

import numpy as np

from gpualign_plugin.errors import InputError
from gpualign_plugin.model import Hit, SearchResult
from gpualign_plugin.pairwise.api import align_sequences, strand_signs
from gpualign_plugin.scoring import ScoringScheme, Sequence, reverse_complement_codes
from gpualign_plugin.statistics import (ScoreHistogram, parameters_for, primary_mapq,
                                        published_parameters)

DEFAULT_TOP = 10
DEFAULT_CHUNK_RESIDUES = 20_000_000
BACKENDS = ("cpu", "gpu")


def score_database(queries: list[np.ndarray], targets: list[np.ndarray], scheme: ScoringScheme,
                   on_progress: Callable[[int, int], None] | None = None, backend: str = "cpu",
                   device: int = 0) -> np.ndarray:
    """Best local (Smith-Waterman-Gotoh) score of every query against every target.

    The chunked score pass of ``gpualign search`` (see the module docstring for
    when the GPU's :func:`~gpualign_plugin.search.gpu.top_hits` runs instead):
    targets sorted by length and scored ``LANES`` at a time by a vectorised
    kernel, in parallel over ``numba.get_num_threads()`` threads.

    Parameters
    ----------
    queries, targets : list of numpy.ndarray
        ``uint8`` codes in ``scheme``'s alphabet (oriented as given: pass a
        reverse complement as its own query for the minus strand).
    scheme : ScoringScheme
        Substitution matrix and gap costs (a gap of ``k`` costs ``open + k*extend``).
    on_progress : callable, optional
        Called with ``(target residues, cells)`` each time a group of batches is
        done (about :data:`~gpualign_plugin.search.cpu.CELLS_PER_CALL` cells, a few seconds of work).
    backend : {'cpu', 'gpu'}
        ``'gpu'`` runs the score pass on CUDA device ``device``
        (:func:`gpualign_plugin.search.gpu.score_database`, same result).
    device : int
        CUDA device ordinal for the GPU backend.

    Returns
    -------
    numpy.ndarray
        ``int32`` ``(len(queries), len(targets))``; 0 where no local alignment
        scores above 0. Equal to :func:`gpualign_plugin.pairwise.cpu.score_pair`
        in local mode for every pair.

    Raises
    ------
    InputError
        Lengths whose scores could overflow 32-bit integers.
    GpuMemoryError, GpuKernelError
        GPU backend only (:mod:`gpualign_plugin.runtime.kernels`).
    """
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
    if backend == "gpu":
        from gpualign_plugin.search import gpu as gpu_search

        return gpu_search.score_database(queries, targets, scheme, device, on_progress)
    from gpualign_plugin.search import cpu

    return cpu.score_database(queries, targets, scheme, on_progress)


def _strand_queries(queries: list[Sequence], scheme: ScoringScheme, strands: str):
    """The oriented query codes to score: ``[q0+, (q0-), q1+, ...]`` and their strands."""
    signs = strand_signs(strands, scheme)
    oriented = []
    for query in queries:
        for sign in signs:
            oriented.append(reverse_complement_codes(query.codes) if sign == "-" else query.codes)
    return oriented, signs


def _chunks(database: Iterable[tuple[int, Sequence]], chunk_residues: int
            ) -> Iterator[list[tuple[int, Sequence]]]:
    chunk: list[tuple[int, Sequence]] = []
    residues = 0
    for item in database:
        chunk.append(item)
        residues += len(item[1])
        if residues >= chunk_residues:
            yield chunk
            chunk, residues = [], 0
    if chunk:
        yield chunk


def _top_candidates(scores: np.ndarray, target_index: np.ndarray, n_strands: int, top: int):
    """Top ``top`` (score, target index, strand number) of one query over a chunk, ranked."""
    score = scores.ravel()  # strand-major: [strand 0 targets..., strand 1 targets...]
    index = np.tile(target_index, n_strands)
    strand = np.repeat(np.arange(n_strands), len(target_index))
    positive = score > 0
    score, index, strand = score[positive], index[positive], strand[positive]
    if len(score) > top:
        threshold = np.partition(score, len(score) - top)[len(score) - top]
        keep = score >= threshold
        score, index, strand = score[keep], index[keep], strand[keep]
    return _rank(score, index, strand, top)


def search(queries: list[Sequence], database, scheme: ScoringScheme,
           database_residues: int, database_sequences: int, top: int = DEFAULT_TOP,
           strands: str = "plus", chunk_residues: int = DEFAULT_CHUNK_RESIDUES,
           on_progress: Callable[[int, int], None] | None = None, backend: str = "cpu",
           device: int = 0, span: tuple[int, int] | None = None,
           devices: list[int] | None = None) -> SearchResult:
    """Top-``top`` local hits of each query in a database streamed in bounded chunks.

    Parameters
    ----------
    queries : list of Sequence
        Encoded queries, in file order.
    database : Database or iterable of (int, Sequence)
        A :class:`~gpualign_plugin.search.database.Database` (its records
        ``span``), or database records with their 0-based index in the whole
        database file (increasing); a shard passes only its own records.
    scheme : ScoringScheme
        Substitution matrix and gap costs.
    database_residues, database_sequences : int
        Size of the **whole** database (for E-values and the output header).
    top : int
        Hits kept per query (>= 1).
    strands : {'plus', 'both'}
        ``'both'`` also searches the reverse complement of each query (DNA).
    chunk_residues : int
        Database residues scored per chunk on the CPU (memory is about a few bytes
        per residue of the chunk plus 4 bytes per (query, strand, target) score).
    on_progress : callable, optional
        Called with ``(database residues, cells)`` as the score pass advances
        (every few seconds of work; for progress bars and statistics).
    backend : {'cpu', 'gpu'}
        Where the score pass and the alignment of the hits run (on the CPU the long
        hits align on threads beside the batches); the result is the same.
    device : int
        CUDA device ordinal for the GPU backend.
    span : (int, int), optional
        Records ``[start, stop)`` of a ``Database`` to search (default: all).
    devices : list of int, optional
        GPU backend with a ``Database``: split its records over these devices in
        one process (default ``[device]``, and the first of them runs everything
        else on the GPU); the top hits are selected on each device and merged
        exactly (:func:`gpualign_plugin.search.gpu.top_hits`).

    Returns
    -------
    SearchResult
        Hits ranked per query and aligned; statistics not yet set (see :func:`finish`).
    """
    stream = search_stream(queries, database, scheme, database_residues, database_sequences, top,
                           strands, chunk_residues, on_progress, backend, device, span, devices)
    hits = [hit for _, query_hits in stream.by_query() for hit in query_hits]
    return dataclasses.replace(stream.result, hits=hits)


class SearchStream:
    """A search whose score pass is done and whose hits are aligned query by query on demand.

    Made by :func:`search_stream`. :attr:`result` is the search's
    :class:`~gpualign_plugin.model.SearchResult` without hits (queries, database size,
    score histogram, the records of every target that will be reported), enough for
    :func:`statistics_of` and the outputs' headers; :meth:`by_query` aligns the hits.
    """

    def __init__(self, result: SearchResult, align: Callable[[], Iterator[tuple[int, list[Hit]]]]):
        self.result = result
        self._align = align

    def by_query(self) -> Iterator[tuple[int, list[Hit]]]:
        """``(query index, its ranked aligned hits)`` for every query in file order, each as soon
        as its alignments are done (the alignment pass runs while the caller writes)."""
        return self._align()


def search_stream(queries: list[Sequence], database, scheme: ScoringScheme,
                  database_residues: int, database_sequences: int, top: int = DEFAULT_TOP,
                  strands: str = "plus", chunk_residues: int = DEFAULT_CHUNK_RESIDUES,
                  on_progress: Callable[[int, int], None] | None = None, backend: str = "cpu",
                  device: int = 0, span: tuple[int, int] | None = None,
                  devices: list[int] | None = None) -> SearchStream:
    """:func:`search` as a stream: the score pass now, the alignment pass query by query later.

    Same parameters and the same hits as :func:`search`, which collects
    :meth:`SearchStream.by_query`; ``gpualign search`` writes each query's hits while the
    next ones are aligned.
    """
    from gpualign_plugin.search.database import Database

    if top < 1:
        raise InputError(f"--top must be 1 or more, got {top}")
    if chunk_residues < 1:
        raise InputError(f"--chunk-residues must be 1 or more, got {chunk_residues}")
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
    devices = devices or [device]
    oriented, signs = _strand_queries(queries, scheme, strands)
    n_strands = len(signs)
    needs_fit = published_parameters(scheme) is None
    histogram = ScoreHistogram() if needs_fit else None
    prepared = isinstance(database, Database)
    if prepared and backend == "gpu" and histogram is None:
        kept = _gpu_top(oriented, database, span or (0, len(database)), scheme, top, n_strands,
                        devices, on_progress)
        records = {}
    else:
        chunks = (_database_chunks(database, span or (0, len(database)), chunk_residues) if prepared
                  else _record_chunks(database, chunk_residues))
        kept, records = _scan_chunks(oriented, [len(q) for q in queries], chunks, scheme, top,
                                     n_strands, histogram, on_progress, backend, devices[0])
    live = sorted({int(i) for _, index, _ in kept for i in index})
    kept_targets = {i: database.record(i) if prepared else records[i] for i in live}
    jobs = [(q, index, strand, score) for q in range(len(queries))
            for score, index, strand in zip(*(array.tolist() for array in kept[q]))]
    result = SearchResult([(q.id, len(q)) for q in queries], [], top, database_residues,
                          database_sequences, histogram, targets=kept_targets)
    return SearchStream(result, lambda: _aligned_by_query(
        jobs, queries, oriented, n_strands, kept_targets, scheme, signs, backend, devices[0]))




def _scan_chunks(oriented, query_lengths, chunks, scheme, top, n_strands, histogram, on_progress,
                 backend, device):
    """Score every chunk of ``(indices, codes, records)`` and keep each query's ``top`` candidates.

    Returns the ranked ``(scores, indices, strands)`` of each query and, for chunks
    that carry their records, the records of the kept candidates by index.
    """
    kept = [(np.empty(0, np.int32), np.empty(0, np.int64), np.empty(0, np.int64))
            for _ in query_lengths]
    records: dict[int, Sequence] = {}
    for indices, codes, chunk_records in chunks:
        lengths = np.array([len(c) for c in codes], dtype=np.int64)
        scores = score_database(oriented, codes, scheme, on_progress, backend, device)
        for q, query_length in enumerate(query_lengths):
            block = scores[q * n_strands:(q + 1) * n_strands]
            if histogram is not None:
                for strand_scores in block:
                    histogram.add_scores(strand_scores, query_length, lengths)
            new = _top_candidates(block, indices, n_strands, top)
            kept[q] = _rank(*(np.concatenate([old, fresh]) for old, fresh in zip(kept[q], new)), top)
        if chunk_records is not None:  # keep the records of the current candidates only
            live = {int(i) for _, index, _ in kept for i in index}
            records = {i: r for i, r in records.items() if i in live}
            records.update((i, r) for i, r in zip(indices.tolist(), chunk_records) if i in live)
    return kept, records


def _gpu_top(oriented, database, span, scheme, top, n_strands, devices, on_progress):
    """Each query's ``top`` ranked candidates over both strands, selected on the GPU(s)."""
    from gpualign_plugin.search import gpu as gpu_search

    order = database.order[(database.order >= span[0]) & (database.order < span[1])]
    found = gpu_search.top_hits(oriented, database.codes, database.offsets, order, scheme, top,
                                devices, on_progress)
    kept = []
    for q in range(len(oriented) // n_strands):
        mine = found[q * n_strands:(q + 1) * n_strands]
        strands = np.repeat(np.arange(n_strands), [len(scores) for scores, _ in mine])
        kept.append(_rank(np.concatenate([scores for scores, _ in mine]),
                          np.concatenate([indices for _, indices in mine]), strands, top))
    return kept


def _rank(score: np.ndarray, index: np.ndarray, strand: np.ndarray, top: int):
    """The first ``top`` of candidates by the ranking rule (score descending, index, strand)."""
    order = np.lexsort((strand, index, -score.astype(np.int64)))[:top]
    return score[order], index[order], strand[order]


def _database_chunks(database, span: tuple[int, int], chunk_residues: int):
    """``(indices, codes, None)`` of consecutive records ``span`` of a Database, about
    ``chunk_residues`` residues a chunk."""
    start, stop = span
    ends = np.cumsum(database.lengths[start:stop]) + database.offsets[start]
    while start < stop:
        end = int(np.searchsorted(ends, database.offsets[start] + chunk_residues, side="left"))
        end = min(max(end + span[0] + 1, start + 1), stop)
        yield (np.arange(start, end, dtype=np.int64),
               [database.target_codes(i) for i in range(start, end)], None)
        start = end


def _record_chunks(database: Iterable[tuple[int, Sequence]], chunk_residues: int):
    """``(indices, codes, records)`` of streamed ``(index, Sequence)`` records in bounded chunks."""
    for chunk in _chunks(database, chunk_residues):
        yield (np.array([index for index, _ in chunk], dtype=np.int64),
               [record.codes for _, record in chunk], [record for _, record in chunk])


def _cpu_threads() -> int:
    """The CPU engine's thread count (``--threads``, set in Numba); Numba is imported only here,
    for the CPU's long hits, so that a GPU search loads none."""
    import numba

    return max(1, numba.get_num_threads())


BATCH_CELLS = 1 << 24
"""On the CPU backend, hits of at most this many cells (query x target residues) are aligned
together by :func:`gpualign_plugin.batch.api.align_batch` (one full direction matrix per pair,
pairs in parallel over the cores); longer ones by the pairwise engine's checkpointed traceback,
hits in parallel over threads, at the same time. On the GPU backend every hit goes to
``align_batch`` (one warp per pair, and pairs over
:data:`gpualign_plugin.batch.gpu.MAX_PAIR_CELLS` through the long-pair GPU engine), so a GPU
search keeps its hits on the device and loads no CPU alignment kernel. All give the pairwise
engine's alignment."""


STREAM_PAIRS = 1024
"""Short hits aligned per batched call while streaming: whole queries are taken until a block
holds at least this many (one GPU launch aligns a block while the previous block is written)."""


def _aligned_by_query(jobs, queries, oriented, n_strands, targets, scheme, signs, backend: str = "cpu",
                      device: int = 0) -> Iterator[tuple[int, list[Hit]]]:
    """Align each ``(query, target index, strand number, score)`` job (grouped by query, ranked);
    yield ``(query, its hits)`` for every query in order, as soon as its alignments are done.

    On the CPU, long hits (:data:`BATCH_CELLS`) are all handed to threads at once, largest
    first; the others (on the GPU, all) go to :func:`gpualign_plugin.batch.api.align_batch` in
    blocks of whole queries
    (:data:`STREAM_PAIRS`), the next block aligned on a helper thread while the caller consumes
    this one. Every alignment must score what the score pass found (RuntimeError otherwise).
    """
    from gpualign_plugin.batch import api as batch
    from gpualign_plugin.pairwise.api import alignment_of

    first = np.searchsorted([q for q, _, _, _ in jobs], np.arange(len(queries) + 1)).tolist()
    batch_cells = BATCH_CELLS if backend == "cpu" else float("inf")
    is_short = [len(queries[q]) * len(targets[index]) <= batch_cells for q, index, _, _ in jobs]
    long = sorted((k for k in range(len(jobs)) if not is_short[k]),
                  key=lambda k: -len(queries[jobs[k][0]]) * len(targets[jobs[k][1]]))
    blocks, start, pairs = [], 0, 0
    for q in range(len(queries)):
        pairs += sum(is_short[first[q]:first[q + 1]])
        if pairs >= STREAM_PAIRS or q == len(queries) - 1:
            blocks.append((start, q + 1))
            start, pairs = q + 1, 0

    def align(k):
        q, index, strand, _ = jobs[k]
        return align_sequences(queries[q], targets[index], scheme, "local", strand=signs[strand])

    def align_block(block):
        shorts = [k for k in range(first[block[0]], first[block[1]]) if is_short[k]]
        pairs = [(oriented[jobs[k][0] * n_strands + jobs[k][2]], targets[jobs[k][1]].codes)
                 for k in shorts]
        return dict(zip(shorts, batch.align_batch(pairs, scheme, "local", backend, device)))

    # The pairwise kernels release the GIL: long hits align on the CPU threads meanwhile.
    with ThreadPoolExecutor(max_workers=_cpu_threads() if long else 1) as pool, \
            ThreadPoolExecutor(max_workers=1) as batcher:
        try:
            pending = {k: pool.submit(align, k) for k in long}
            next_block = batcher.submit(align_block, blocks[0]) if blocks else None
            for b, (q_start, q_stop) in enumerate(blocks):
                aligned = next_block.result()
                if b + 1 < len(blocks):
                    next_block = batcher.submit(align_block, blocks[b + 1])
                for q in range(q_start, q_stop):
                    hits = []
                    for k in range(first[q], first[q + 1]):
                        _, index, strand, score = jobs[k]
                        if is_short[k]:
                            alignment = alignment_of(queries[q], targets[index], aligned[k], "local",
                                                     signs[strand])
                        else:
                            alignment = pending.pop(k).result()
                        if alignment is None or alignment.score != score:
                            raise RuntimeError(
                                f"score pass and pairwise engine disagree on {queries[q].id} vs "
                                f"{targets[index].id} ({signs[strand]}): {score} vs "
                                f"{alignment.score if alignment else 0}")
                        hits.append(Hit(q, index, alignment))
                    yield q, hits
        finally:  # stopped early (an error while writing): no more work queued
            pool.shutdown(wait=False, cancel_futures=True)
            batcher.shutdown(wait=False, cancel_futures=True)


def merge_results(parts: list[SearchResult]) -> SearchResult:
    """Merge the results of database shards (or chunks) into the result of one search.

    Every part must come from the same queries, ``top`` and database size. The
    per-query hits are merged by the ranking rule and cut to ``top``; score
    histograms add up.

    Raises
    ------
    InputError
        Parts that disagree on queries, ``top`` or database size, or a target
        reported by two parts.
    """
    if not parts:
        raise InputError("no shard results to merge")
    first = parts[0]
    for part in parts[1:]:
        if (part.queries != first.queries or part.top != first.top
                or part.database_residues != first.database_residues
                or part.database_sequences != first.database_sequences):
            raise InputError("shard results come from different searches (queries, --top or "
                             "database size differ)")
    by_query: dict[int, list[Hit]] = {}
    seen: set[tuple[int, int, str]] = set()
    for part in parts:
        for hit in part.hits:
            key = (hit.query_index, hit.target_index, hit.alignment.strand)
            if key in seen:
                raise InputError(f"hit of query {hit.alignment.query_id!r} on target "
                                 f"{hit.alignment.target_id!r} appears in two shards")
            seen.add(key)
            by_query.setdefault(hit.query_index, []).append(hit)
    hits = []
    for q in sorted(by_query):
        hits.extend(sorted(by_query[q], key=lambda h: h.rank_key)[:first.top])
    histogram = None
    if any(part.histogram is not None for part in parts):
        histogram = ScoreHistogram()
        for part in parts:
            if part.histogram is not None:
                histogram.add(part.histogram)
    targets = {}
    for part in parts:
        targets.update(part.targets)
    reported = {hit.target_index for hit in hits}
    return SearchResult(first.queries, hits, first.top, first.database_residues,
                        first.database_sequences, histogram,
                        targets={i: s for i, s in targets.items() if i in reported})


def statistics_of(result: SearchResult, scheme: ScoringScheme):
    """The Karlin-Altschul parameters of a search: NCBI's tables when the scheme is tabulated,
    else a maximum-likelihood fit to ``result.histogram``
    (:func:`~gpualign_plugin.statistics.parameters_for`)."""
    if published_parameters(scheme) is None and result.histogram is None:
        raise InputError("the scoring scheme has no published Karlin-Altschul parameters and the "
                         "search kept no score histogram to estimate them")
    return parameters_for(scheme, result.histogram)


def finish(result: SearchResult, scheme: ScoringScheme) -> SearchResult:
    """Set Karlin-Altschul parameters, bit scores and E-values, and primary/MAPQ flags.

    Parameters come from :func:`statistics_of`; each hit's figures from
    :func:`finish_hits`.
    """
    parameters = statistics_of(result, scheme)
    return dataclasses.replace(result, hits=finish_hits(result, result.hits, parameters),
                               parameters=parameters)


def finish_hits(result: SearchResult, hits: list[Hit], parameters) -> list[Hit]:
    """``hits`` (grouped by query and ranked, e.g. one query's) with bit scores, E-values and flags.

    E-values as BLAST computes them for a database of ``result.database_residues``
    residues in ``result.database_sequences`` records (length adjustment, or Spouge's
    finite-size correction for gapped protein tables, which needs each hit's target
    length), for ``parameters`` (:func:`statistics_of`). The first hit of each query is
    primary with MAPQ from :func:`~gpualign_plugin.statistics.primary_mapq` (best against
    second-best score); the others are secondary with MAPQ 0.
    """
    finished = []
    for k, hit in enumerate(hits):
        first = k == 0 or hits[k - 1].query_index != hit.query_index
        if first:
            following = hits[k + 1] if k + 1 < len(hits) else None
            second = following.alignment.score if following is not None and \
                following.query_index == hit.query_index else None
            mapq = primary_mapq(hit.alignment.score, second)
        else:
            mapq = 0
        alignment = dataclasses.replace(hit.alignment, is_primary=first, mapq=mapq)
        finished.append(Hit(hit.query_index, hit.target_index, alignment,
                            parameters.bit_score(alignment.score),
                            parameters.evalue(alignment.score, result.queries[hit.query_index][1],
                                              result.database_residues, result.database_sequences,
                                              alignment.target_length)))
    return finished
