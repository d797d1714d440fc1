"""Aligning records of two FASTA files: every query to every target (or listed pairs), both strands.

This is what ``gpualign pairwise`` runs: for each (query, target) pair and each
strand asked for, one exact alignment (``engines.pairwise.align_sequences``);
alignments scoring below ``min_score`` are dropped; the rest are placed
(primary / secondary, MAPQ) by :func:`gpualign_plugin.engines.placement.place`.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Callable

from gpualign_plugin.model import Alignment
from gpualign_plugin.scoring import ScoringScheme, Sequence


def align_records(queries: list[Sequence], targets: list[Sequence], scheme: ScoringScheme,
                  mode: str = "local", strands: str = "both", min_score: int | None = None,
                  backend: str = "cpu", device: int = 0, pairs: list[tuple[str, str]] | None = None,
                  threads: int = 1, on_pair_done: Callable[[int], None] | None = None) -> list[Alignment]:
    """Align queries to targets and place the results.

    Parameters
    ----------
    queries, targets : list of Sequence
        Encoded records (same scheme).
    mode : {'local', 'global', 'semiglobal'}
    strands : {'both', 'plus'}
        ``'both'`` also aligns the reverse complement of each query (DNA only).
    min_score : int, optional
        Alignments scoring below this are dropped (local alignments with no
        positive score never exist).
    backend : {'cpu', 'gpu'}
        Already resolved (see :func:`gpualign_plugin.backend.resolve_backend`).
    pairs : list of (query id, target id), optional
        Align only these pairs; default every query with every target.
    threads : int
        Pairs aligned concurrently on the CPU backend.
    on_pair_done : callable, optional
        Called with the number of DP cells of each finished (pair, strand).

    Returns
    -------
    list of Alignment
        Placed alignments: per query in query-file order, primary first.
    """
    from gpualign_plugin.engines.pairwise import align_sequences, strand_signs
    from gpualign_plugin.engines.placement import place

    strand_list = strand_signs(strands, scheme)
    by_query = {q.id: q for q in queries}
    by_target = {t.id: t for t in targets}
    query_rank = {q.id: k for k, q in enumerate(queries)}
    target_rank = {t.id: k for k, t in enumerate(targets)}
    if pairs is None:
        pairs = [(q.id, t.id) for q in queries for t in targets]
    jobs = [(by_query[q], by_target[t], s) for q, t in pairs for s in strand_list]
    for query, target, _ in jobs:
        scheme.check_score_range(len(query), len(target))

    def run(job):
        query, target, strand = job
        result = align_sequences(query, target, scheme, mode, strand=strand, backend=backend,
                                 device=device)
        if on_pair_done is not None:
            on_pair_done(len(query) * len(target))
        return result

    workers = 1 if backend == "gpu" else max(1, threads)
    if workers == 1:
        results = [run(job) for job in jobs]
    else:
        with ThreadPoolExecutor(max_workers=workers) as pool:
            results = list(pool.map(run, jobs))
    kept = [a for a in results if a is not None and (min_score is None or a.score >= min_score)]
    kept.sort(key=lambda a: (query_rank[a.query_id], target_rank[a.target_id], a.strand == "-"))
    return place(kept, target_order=[t.id for t in targets])
