"""Pairwise alignment's entry point: records on one or both strands, on the CPU or the GPU.

``gpualign pairwise`` runs :func:`place_local` in its default local mode (every
significant local alignment of each query, placed) and :func:`align_records` in the
global and semiglobal modes: for each (query, target) pair and each strand asked for,
one exact alignment (:func:`align_sequences`); alignments scoring below ``min_score``
are dropped; the rest are placed (primary / secondary, MAPQ) by
:func:`gpualign_plugin.pairwise.placement.place`. The engines
(:mod:`~gpualign_plugin.pairwise.cpu`, :mod:`~gpualign_plugin.pairwise.gpu`) take
encoded arrays; this module chooses between them.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Callable

from gpualign_plugin.model import Alignment, PairAlignment, PairScore
from gpualign_plugin.pairwise.placement import place, place_local, strand_signs
from gpualign_plugin.scoring import ScoringScheme, Sequence, reverse_complement_codes

_FROM_CPU_ENGINE = ("MODES", "align_pair", "score_pair", "score_pair_tiled")

__all__ = ["align_pair_on", "align_records", "align_sequences", "alignment_of", "gpu_accepts",
           "low_complexity_mask", "place_local", "score_pair_on", "strand_signs", *_FROM_CPU_ENGINE]


def __getattr__(name: str):
    """The CPU engine's names and :func:`~gpualign_plugin.pairwise.low_complexity.low_complexity_mask`,
    loaded on first use (PEP 562).

    Both import Numba (about 0.3 s); a GPU run goes through this module and loads Numba only on
    a background thread while the device works (GPU.md, "Start-up").
    """
    if name in _FROM_CPU_ENGINE:
        from gpualign_plugin.pairwise import cpu

        return getattr(cpu, name)
    if name == "low_complexity_mask":
        from gpualign_plugin.pairwise.low_complexity import low_complexity_mask

        return low_complexity_mask
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def align_records(queries: list[Sequence], targets: list[Sequence], scheme: ScoringScheme,
                  mode: str = "local", strands: str = "both", min_score: int | None = None,
                  backend: str = "cpu", device: int = 0, pairs: list[tuple[str, str]] | None = None,
                  threads: int = 1, gpu_memory: int | None = None, gpu_profile: dict | None = None,
                  on_cells: Callable[[int], None] | None = None, devices: list[int] | None = None) -> list[Alignment]:
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
        Already resolved (see :func:`gpualign_plugin.runtime.backend.resolve_backend`).
    pairs : list of (query id, target id), optional
        Align only these pairs; default every query with every target.
    threads : int
        Pairs aligned concurrently on the CPU backend.
    gpu_memory : int, optional
        GPU memory budget in bytes of each alignment (GPU backend; default a
        fraction of the free memory, see :func:`gpualign_plugin.pairwise.gpu.align_pair`).
    gpu_profile : dict, optional
        GPU backend: filled with the engine's phase seconds (``score_pass_s``,
        ``traceback_s``, ...) summed over the pairs, and ``pairs``.
    on_cells : callable, optional
        Called (from worker or helper threads) with DP cells as they are computed
        inside each pair (the ``progress`` of :func:`gpualign_plugin.pairwise.cpu.align_pair`
        or :func:`gpualign_plugin.pairwise.gpu.align_pair`), so a progress bar moves
        during a long pair.
    devices : list of int, optional
        GPU backend: split each pair by columns over these devices (instead of ``device``;
        see :func:`gpualign_plugin.pairwise.gpu.align_pair`).

    Returns
    -------
    list of Alignment
        Placed alignments: per query in query-file order, primary first.
    """
    strand_list = strand_signs(strands, scheme)
    by_query = {q.id: q for q in queries}
    by_target = {t.id: t for t in targets}
    query_rank = {q.id: k for k, q in enumerate(queries)}
    target_rank = {t.id: k for k, t in enumerate(targets)}
    if pairs is None:
        pairs = [(q.id, t.id) for q in queries for t in targets]
    jobs = [(by_query[q], by_target[t], s) for q, t in pairs for s in strand_list]
    for query, target, _ in jobs:
        scheme.check_score_range(len(query), len(target), (query.id, target.id))

    def run(job):
        query, target, strand = job
        profile = {} if gpu_profile is not None and backend == "gpu" else None
        result = align_sequences(query, target, scheme, mode, strand=strand, backend=backend,
                                 device=device, gpu_memory=gpu_memory, gpu_profile=profile,
                                 on_cells=on_cells, devices=devices)
        if profile:
            from gpualign_plugin.pairwise import gpu

            gpu.add_profile(gpu_profile, profile)
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


def align_sequences(query: Sequence, target: Sequence, scheme: ScoringScheme, mode: str,
                    strand: str = "+", backend: str = "cpu", device: int = 0, gpu_memory: int | None = None,
                    gpu_profile: dict | None = None, on_cells: Callable[[int], None] | None = None,
                    devices: list[int] | None = None) -> Alignment | None:
    """Align two records on one strand and return a :class:`~gpualign_plugin.model.Alignment`.

    Parameters
    ----------
    query, target : Sequence
        Encoded records.
    scheme : ScoringScheme
        Substitution matrix and gap costs.
    mode : str
        ``'local'``, ``'global'`` or ``'semiglobal'``.
    strand : str
        ``'+'``, or ``'-'`` to align the reverse complement of the query (DNA
        only); coordinates are mapped back to the query's forward strand
        (``query_start = m - end_rc``, ``query_end = m - start_rc``) and the
        CIGAR reads the reverse-complemented query along the target.
    backend : str
        ``'cpu'`` or ``'gpu'`` (a resolved backend, see
        :func:`gpualign_plugin.runtime.backend.resolve_backend`).
    device : int
        CUDA device ordinal for the GPU backend.
    gpu_memory : int, optional
        GPU memory budget in bytes (GPU backend).
    gpu_profile : dict, optional
        GPU backend: filled with the plan and phase seconds (see
        :func:`gpualign_plugin.pairwise.gpu.align_pair`).
    on_cells : callable, optional
        The ``progress`` callback of the backend's ``align_pair``
        (:func:`gpualign_plugin.pairwise.cpu.align_pair`,
        :func:`gpualign_plugin.pairwise.gpu.align_pair`).
    devices : list of int, optional
        GPU backend: split the pair by columns over these devices (instead of ``device``).

    Returns
    -------
    Alignment or None
        ``None`` when there is no alignment (local mode, score <= 0).
        ``is_primary`` and ``mapq`` keep their defaults (placement sets them).
    """
    if strand not in ("+", "-"):
        raise ValueError(f"strand must be '+' or '-', got {strand!r}")
    if strand == "-" and not scheme.is_dna:
        raise ValueError("the minus strand exists only for DNA")
    codes = reverse_complement_codes(query.codes) if strand == "-" else query.codes
    if backend == "gpu":
        from gpualign_plugin.pairwise import gpu as gpu_pairwise

        result = gpu_pairwise.align_pair(codes, target.codes, scheme, mode, device=device,
                                         memory_budget=gpu_memory, profile=gpu_profile, progress=on_cells,
                                         devices=devices)
    elif backend == "cpu":
        from gpualign_plugin.pairwise import cpu

        result = cpu.align_pair(codes, target.codes, scheme, mode, progress=on_cells)
    else:
        raise ValueError(f"backend must be 'cpu' or 'gpu', got {backend!r}")
    return alignment_of(query, target, result, mode, strand)


def alignment_of(query: Sequence, target: Sequence, result: PairAlignment, mode: str,
                 strand: str = "+") -> Alignment | None:
    """The :class:`~gpualign_plugin.model.Alignment` of a pair's ``result`` (of the query's
    ``strand``; on ``'-'`` coordinates are mapped back to the forward strand), as
    :func:`align_sequences` returns it; ``None`` for a local result scoring <= 0."""
    if mode == "local" and result.score <= 0:
        return None
    m = len(query)
    q_start, q_end = result.query_start, result.query_end
    if strand == "-":
        q_start, q_end = m - result.query_end, m - result.query_start
    return Alignment(query.id, target.id, m, len(target), q_start, q_end, result.target_start,
                     result.target_end, strand, result.score, result.cigar, mode)


def gpu_accepts(scheme: ScoringScheme) -> bool:
    """Whether the GPU pairwise engine takes ``scheme``: substitution scores in int8, its query profile."""
    return scheme.fits_int8


def score_pair_on(backend: str, query_codes, target_codes, scheme: ScoringScheme, mode: str,
                  device: int = 0) -> PairScore:
    """:func:`score_pair` on ``backend`` (``'cpu'`` or ``'gpu'``, resolved): the same result on both.

    The other problems (search's long targets) score single pairs through this.
    """
    if backend == "gpu":
        from gpualign_plugin.pairwise import gpu

        return gpu.score_pair(query_codes, target_codes, scheme, mode, device)
    if backend != "cpu":
        raise ValueError(f"backend must be 'cpu' or 'gpu', got {backend!r}")
    from gpualign_plugin.pairwise import cpu

    return cpu.score_pair(query_codes, target_codes, scheme, mode)


def align_pair_on(backend: str, query_codes, target_codes, scheme: ScoringScheme, mode: str,
                  device: int = 0, progress: Callable[[int], None] | None = None) -> PairAlignment:
    """:func:`align_pair` on ``backend`` (``'cpu'`` or ``'gpu'``, resolved): the same result on both.

    The GPU engine needs substitution scores in -128..127 (:func:`gpu_accepts`); batch
    alignment hands its long pairs to this. ``progress`` is the backend's ``align_pair``
    callback (DP cells as they are computed).
    """
    if backend == "gpu":
        from gpualign_plugin.pairwise import gpu

        return gpu.align_pair(query_codes, target_codes, scheme, mode, device, progress=progress)
    if backend != "cpu":
        raise ValueError(f"backend must be 'cpu' or 'gpu', got {backend!r}")
    from gpualign_plugin.pairwise import cpu

    return cpu.align_pair(query_codes, target_codes, scheme, mode, progress=progress)
