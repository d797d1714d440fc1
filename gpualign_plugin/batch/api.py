"""Batch alignment's entry point: many independent short pairs, scored or aligned in parallel.

Each pair is aligned exactly as :func:`gpualign_plugin.pairwise.api.align_pair` would
(same recurrence, end-cell rule and tie rule: the kernels of
:mod:`gpualign_plugin.gotoh`), on every CPU thread with groups of similar pairs in
vector lanes (:mod:`~gpualign_plugin.batch.cpu`), or one warp per pair on the GPU
(:func:`align_batch_gpu`, :mod:`~gpualign_plugin.batch.gpu`); both give the same
alignments. ``gpualign batch`` calls this.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from gpualign_plugin.batch.columns import (SequencePairs, columns_from_pairs, empty_columns,
                                           merge_columns, take_columns)
from gpualign_plugin.model import NO_PAIR_ALIGNMENT, AlignmentColumns, PairAlignment, PairScore
from gpualign_plugin.pairwise import api as pairwise
from gpualign_plugin.scoring import MODE_CODES, ScoringScheme

CPU_CHUNK_PAIRS = 4096
"""Pairs :func:`align_columns` hands the CPU kernel at once (paces the progress reports)."""


def _check_batch(pairs: SequencePairs, scheme: ScoringScheme, mode: str) -> int:
    """The mode's kernel code, once the mode and the score range of the longest pair are checked."""
    if mode not in MODE_CODES:
        raise ValueError(f"mode must be one of {tuple(MODE_CODES)}, got {mode!r}")
    if len(pairs):
        # The bound grows with m + n: the pair with the largest sum is the one to check.
        k = int(np.argmax(pairs.query_lengths + pairs.target_lengths))
        scheme.check_score_range(int(pairs.query_lengths[k]), int(pairs.target_lengths[k]))
    return MODE_CODES[mode]


def score_batch(pairs, scheme: ScoringScheme, mode: str) -> list[PairScore]:
    """:func:`~gpualign_plugin.pairwise.api.score_pair` of every ``(query_codes, target_codes)`` pair (any iterable), in parallel.

    Uses ``numba.get_num_threads()`` threads; the result is in the order of ``pairs``.
    """
    from gpualign_plugin.batch import cpu

    packed = SequencePairs.from_list(list(pairs))
    mode_code = _check_batch(packed, scheme, mode)
    matrix = np.ascontiguousarray(scheme.matrix, dtype=np.int32)
    qs, q_offsets = packed.packed_queries()
    ts, t_offsets = packed.packed_targets()
    out = np.empty((len(packed), 3), dtype=np.int64)
    cpu.score_batch_kernel(qs, q_offsets, ts, t_offsets, matrix, scheme.gap_open,
                               scheme.gap_extend, mode_code, out)
    return [PairScore(int(s), int(qe), int(te)) for s, qe, te in out]


def align_columns(pairs: SequencePairs, scheme: ScoringScheme, mode: str, backend: str = "cpu",
                  device: int = 0, memory_budget: int | None = None, progress=None,
                  profile: dict | None = None) -> AlignmentColumns:
    """:func:`~gpualign_plugin.pairwise.api.align_pair` of every pair of ``pairs``, results as arrays.

    The columnar form of :func:`align_batch` (same alignments, no Python object per
    pair): what ``gpualign batch`` runs for millions of pairs.

    Parameters
    ----------
    pairs : SequencePairs
        Each pair's query and target as slices of two code arrays.
    scheme : ScoringScheme
        Substitution matrix and gap costs.
    mode : str
        ``'local'``, ``'global'`` or ``'semiglobal'``.
    backend : {'cpu', 'gpu'}
        ``'cpu'``: :data:`CPU_CHUNK_PAIRS` pairs at a time over ``numba.get_num_threads()``
        threads, groups of similar pairs in the vector lanes of the lane kernel and the
        rest one at a time (:mod:`gpualign_plugin.batch.cpu`). ``'gpu'``: one warp per
        pair (:func:`gpualign_plugin.batch.gpu.align_columns`) on ``device`` within
        ``memory_budget`` bytes per launch; pairs above
        :data:`gpualign_plugin.batch.gpu.MAX_PAIR_CELLS` go one at a time to the long-pair
        engine and pairs with an empty sequence to the CPU kernel.
    progress : callable, optional
        Called with DP cells as they are done, ``m * n`` a pair in all: after each group
        of pairs on the CPU, after each launch of the batch kernel on the GPU, and inside
        each long pair while the long-pair engine's passes run (counted until they reach
        the pair's ``m * n``).
    profile : dict, optional
        GPU only: kernel time and launches (see :func:`gpualign_plugin.batch.gpu.align_columns`).

    Returns
    -------
    AlignmentColumns
        In the order of ``pairs``, the same on both backends; a local pair without a
        positive score has score 0 and no runs.
    """
    mode_code = _check_batch(pairs, scheme, mode)
    if not len(pairs):  # an empty batch loads no Numba kernel
        return empty_columns()
    if backend == "gpu":
        return _align_columns_gpu(pairs, scheme, mode, device, memory_budget, progress, profile)
    if backend != "cpu":
        raise ValueError(f"backend must be 'cpu' or 'gpu', got {backend!r}")
    import numba  # the CPU engine's: a GPU batch (a GPU search's hits) loads no Numba

    from gpualign_plugin.batch import cpu

    matrix = np.ascontiguousarray(scheme.matrix, dtype=np.int32)
    identity = np.array(scheme.match_mismatch() or (), dtype=np.int32)
    parts = []
    for start in range(0, len(pairs), CPU_CHUNK_PAIRS):
        index = np.arange(start, min(start + CPU_CHUNK_PAIRS, len(pairs)))
        chunk = pairs.take(index)
        qs, q_offsets = chunk.packed_queries()
        ts, t_offsets = chunk.packed_targets()
        ops_offsets = q_offsets + t_offsets
        ops = np.empty(int(ops_offsets[-1]), dtype=np.uint8)
        out = np.empty((len(chunk), 6), dtype=np.int64)
        groups, group_offsets, singles = cpu.lane_groups(chunk.query_lengths, chunk.target_lengths)
        cpu.align_pairs_kernel(qs, q_offsets, ts, t_offsets, groups, group_offsets, singles, matrix,
                               identity, scheme.gap_open, scheme.gap_extend, mode_code, out, ops,
                               ops_offsets, numba.get_num_threads())
        runs, run_offsets = cpu.runs_from_ops(ops, ops_offsets, out[:, 5].copy())
        parts.append((index, AlignmentColumns(*(out[:, c].copy() for c in range(5)), runs, run_offsets)))
        if progress is not None:
            progress(chunk.cells())
    return merge_columns(len(pairs), parts)


def _align_columns_gpu(pairs: SequencePairs, scheme, mode, device, memory_budget, progress,
                       profile) -> AlignmentColumns:
    from gpualign_plugin.batch import gpu

    m, n = pairs.query_lengths, pairs.target_lengths
    trivial = (m == 0) | (n == 0)
    long_pairs = ~trivial & ((m * n > gpu.MAX_PAIR_CELLS) | (not gpu.accepts(scheme)))
    batched = np.flatnonzero(~trivial & ~long_pairs)
    parts = []
    if len(batched):
        parts.append((batched, gpu.align_columns(pairs.take(batched), scheme, mode, device,
                                                 memory_budget, profile, progress)))
    trivial = np.flatnonzero(trivial)
    if len(trivial):
        parts.append((trivial, align_columns(pairs.take(trivial), scheme, mode)))  # no cells
    long_backend = "gpu" if pairwise.gpu_accepts(scheme) else "cpu"
    long_results = []
    for k in np.flatnonzero(long_pairs):
        q = pairs.query_codes[pairs.query_starts[k]:][:m[k]]
        t = pairs.target_codes[pairs.target_starts[k]:][:n[k]]
        cells = _Capped(int(m[k] * n[k]), progress)
        result = pairwise.align_pair_on(long_backend, q, t, scheme, mode, device,
                                        progress=cells if progress is not None else None)
        cells.finish()
        long_results.append(NO_PAIR_ALIGNMENT if mode == "local" and result.score <= 0 else result)
    if long_results:
        parts.append((np.flatnonzero(long_pairs), columns_from_pairs(long_results)))
    return merge_columns(len(pairs), parts)


class _Capped:
    """A progress callback that passes on at most ``total`` cells; :meth:`finish` passes on the
    rest. A long pair counts ``m * n`` in a batch, while the long-pair engine reports every
    pass it makes (score pass first, then the traceback's)."""

    def __init__(self, total: int, progress: Callable[[int], None] | None):
        self.left, self.progress = total, progress

    def __call__(self, cells: int) -> None:
        cells = min(cells, self.left)
        if cells > 0 and self.progress is not None:
            self.left -= cells
            self.progress(cells)

    def finish(self) -> None:
        """Pass on the cells not reported yet."""
        self(self.left)


def align_strands_columns(pairs: SequencePairs, scheme: ScoringScheme, mode: str,
                          strands: str = "plus", backend: str = "cpu", device: int = 0,
                          progress=None, profile: dict | None = None
                          ) -> tuple[AlignmentColumns, np.ndarray]:
    """:func:`align_columns` on the strands asked for; the better strand per pair.

    ``strands='both'`` (DNA only) also aligns the reverse complement of each query in
    the same call to the engine and keeps the minus strand only where it scores
    strictly higher, as :func:`align_batch_strands`. Returns the results and a
    ``bool`` array, true where the minus strand was kept (its query coordinates are
    on the reverse complement); :func:`align_strands_with_other_scores` also gives the
    score of the strand not kept.

    Raises
    ------
    InputError
        ``'both'`` with a protein scheme.
    """
    columns, minus, _ = align_strands_with_other_scores(pairs, scheme, mode, strands, backend,
                                                        device, progress, profile)
    return columns, minus


def align_strands_with_other_scores(pairs: SequencePairs, scheme: ScoringScheme, mode: str,
                                    strands: str = "plus", backend: str = "cpu", device: int = 0,
                                    progress=None, profile: dict | None = None
                                    ) -> tuple[AlignmentColumns, np.ndarray, np.ndarray | None]:
    """:func:`align_strands_columns`, and per pair the score of the strand it did not keep.

    Returns ``(columns, minus, other_score)``; ``other_score`` (``int64``, one per pair) is
    ``None`` when one strand is aligned. The strand not kept is an alignment of the query
    too: ``gpualign batch`` counts it as a second best (or a tie) in MAPQ, as ``gpualign
    pairwise`` ranks both strands of a pair.
    """
    signs = pairwise.strand_signs(strands, scheme)
    count = len(pairs)
    if len(signs) == 1:
        return (align_columns(pairs, scheme, mode, backend, device, progress=progress,
                              profile=profile), np.zeros(count, dtype=bool), None)
    both = align_columns(pairs.with_minus_strand(), scheme, mode, backend, device,
                         progress=progress, profile=profile)
    minus = both.score[count:] > both.score[:count]
    index = np.arange(count)
    other_score = np.where(minus, both.score[:count], both.score[count:])
    return take_columns(both, np.where(minus, index + count, index)), minus, other_score


def align_batch(pairs, scheme: ScoringScheme, mode: str, backend: str = "cpu",
                device: int = 0, progress: Callable[[int], None] | None = None) -> list[PairAlignment]:
    """:func:`~gpualign_plugin.pairwise.api.align_pair` of every ``(query_codes, target_codes)`` pair (any iterable), in parallel.

    ``backend`` ``'gpu'`` (resolved, see
    :func:`gpualign_plugin.runtime.backend.resolve_backend`) runs :func:`align_batch_gpu`
    on ``device``; ``'cpu'`` keeps a full direction matrix (``(m+1) * (n+1)`` bytes) per pair
    while it is being aligned (:data:`gpualign_plugin.batch.cpu.LANES` of them at once for
    pairs aligned in a lane group), so it suits many short pairs (the reference workload is
    1,000 pairs of 512 bp; use :func:`~gpualign_plugin.pairwise.api.align_pair` for long
    ones), with ``numba.get_num_threads()`` threads. Results are in the order of ``pairs``
    and the same on both backends (:func:`align_columns` is the same as arrays).
    ``progress`` gets the DP cells (``m * n`` a pair, in all) as they are done: per launch
    and inside long pairs on the GPU (:func:`align_batch_gpu`), per group of
    :data:`CPU_CHUNK_PAIRS` pairs on the CPU.
    """
    if backend == "gpu":
        return align_batch_gpu(pairs, scheme, mode, device, progress=progress)
    if backend != "cpu":
        raise ValueError(f"backend must be 'cpu' or 'gpu', got {backend!r}")
    return align_columns(SequencePairs.from_list(list(pairs)), scheme, mode,
                         progress=progress).pairs()


def align_batch_gpu(pairs, scheme: ScoringScheme, mode: str, device: int = 0,
                    memory_budget: int | None = None,
                    progress: Callable[[int], None] | None = None) -> list[PairAlignment]:
    """:func:`align_batch` on the GPU: every ``(query_codes, target_codes)`` pair aligned with traceback.

    Parameters
    ----------
    pairs : iterable of (numpy.ndarray, numpy.ndarray)
        ``uint8`` codes of each query (rows) and target (columns), any lengths.
    scheme : ScoringScheme
        Substitution matrix and gap costs.
    mode : str
        ``'local'``, ``'global'`` or ``'semiglobal'``.
    device : int
        CUDA device ordinal (counted inside CUDA_VISIBLE_DEVICES).
    memory_budget : int, optional
        Device bytes one launch may take (default: half the free device memory); the
        pairs are cut into launches that fit.
    progress : callable, optional
        Called with DP cells as they are done, ``m * n`` a pair in all: after each
        launch of the batch kernel, and inside each long pair while the long-pair
        engine's passes run (its cells counted until they reach the pair's ``m * n``).

    Returns
    -------
    list of PairAlignment
        In the order of ``pairs``, identical to :func:`align_batch` on the CPU (local
        pairs without a positive score give ``NO_PAIR_ALIGNMENT``).

    Notes
    -----
    Pairs of up to :data:`gpualign_plugin.batch.gpu.MAX_PAIR_CELLS` cells run one warp
    each (:mod:`gpualign_plugin.batch.gpu`); longer pairs go one at a time to the
    long-pair engine (:func:`gpualign_plugin.pairwise.api.align_pair_on`, on the GPU when
    it takes the scheme), and pairs with an empty sequence to the CPU kernel. The
    search engine's top hits can be aligned through this function.
    """
    return align_columns(SequencePairs.from_list(list(pairs)), scheme, mode, "gpu", device,
                         memory_budget, progress).pairs()


def align_batch_strands(pairs, scheme: ScoringScheme, mode: str, strands: str = "plus",
                        backend: str = "cpu", device: int = 0,
                        progress: Callable[[int], None] | None = None) -> list[tuple[str, PairAlignment]]:
    """:func:`align_batch` of every pair on the strands asked for; the better strand per pair.

    Parameters
    ----------
    pairs : iterable of (numpy.ndarray, numpy.ndarray)
        ``uint8`` codes of each query and target.
    strands : {'plus', 'both'}
        ``'both'`` (DNA only) also aligns the reverse complement of each query, in the
        same call to the engine, and keeps the minus strand only where it scores strictly
        higher (a tie keeps the plus strand, as placement ranks ``+`` before ``-``).
    backend, device, progress
        As for :func:`align_batch` (both strands' cells counted).

    Returns
    -------
    list of (str, PairAlignment)
        ``('+' or '-', alignment)`` per pair, in order. A minus-strand alignment's query
        coordinates are on the reverse complement (``m - query_end`` and ``m - query_start``
        are the forward-strand interval) and its CIGAR reads the reverse-complemented
        query along the target, as in :func:`gpualign_plugin.pairwise.api.align_sequences`.

    Raises
    ------
    InputError
        ``'both'`` with a protein scheme.
    """
    columns, minus = align_strands_columns(SequencePairs.from_list(list(pairs)), scheme, mode,
                                           strands, backend, device, progress)
    return [("-" if sign else "+", pair) for sign, pair in zip(minus.tolist(), columns.pairs())]
