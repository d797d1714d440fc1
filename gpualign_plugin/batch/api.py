"""Batch alignment's entry point: many independent short pairs, scored or aligned in parallel.

Each pair is aligned exactly as :func:`gpualign_plugin.pairwise.api.align_pair` would
(same recurrence, end-cell rule and tie rule: the kernels of
:mod:`gpualign_plugin.gotoh`), one pair per CPU thread at a time
(:mod:`~gpualign_plugin.batch.cpu`), or one warp per pair on the GPU
(:func:`align_batch_gpu`, :mod:`~gpualign_plugin.batch.gpu`); both give the same
alignments. ``gpualign batch`` calls this.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from gpualign_plugin import gotoh
from gpualign_plugin.batch import cpu
from gpualign_plugin.model import NO_PAIR_ALIGNMENT, PairAlignment, PairScore
from gpualign_plugin.pairwise import api as pairwise
from gpualign_plugin.scoring import ScoringScheme, reverse_complement_codes

MODES = ("local", "global", "semiglobal")
_MODE_CODES = {"local": gotoh.LOCAL, "global": gotoh.GLOBAL, "semiglobal": gotoh.SEMIGLOBAL}


def _pack(pairs):
    """Concatenated query and target codes with offsets."""
    queries = [np.ascontiguousarray(q, dtype=np.uint8) for q, _ in pairs]
    targets = [np.ascontiguousarray(t, dtype=np.uint8) for _, t in pairs]
    q_offsets = np.zeros(len(pairs) + 1, dtype=np.int64)
    t_offsets = np.zeros(len(pairs) + 1, dtype=np.int64)
    np.cumsum([len(q) for q in queries], out=q_offsets[1:])
    np.cumsum([len(t) for t in targets], out=t_offsets[1:])
    empty = np.empty(0, dtype=np.uint8)
    return (np.concatenate(queries) if queries else empty, q_offsets,
            np.concatenate(targets) if targets else empty, t_offsets)


def _check_batch(pairs, scheme: ScoringScheme, mode: str):
    if mode not in _MODE_CODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    if pairs:
        # The bound grows with m + n: the pair with the largest sum is the one to check.
        q, t = max(pairs, key=lambda pair: len(pair[0]) + len(pair[1]))
        scheme.check_score_range(len(q), len(t))
    return np.ascontiguousarray(scheme.matrix, dtype=np.int32), _MODE_CODES[mode]


def score_batch(pairs, scheme: ScoringScheme, mode: str) -> list[PairScore]:
    """:func:`~gpualign_plugin.pairwise.api.score_pair` of every ``(query_codes, target_codes)`` pair (any iterable), in parallel.

    Uses ``numba.get_num_threads()`` threads; the result is in the order of ``pairs``.
    """
    pairs = list(pairs)
    matrix, mode_code = _check_batch(pairs, scheme, mode)
    if not pairs:  # no Numba kernel to load (the GPU path asks this for its empty-sequence pairs)
        return []
    qs, q_offsets, ts, t_offsets = _pack(pairs)
    out = np.empty((len(pairs), 3), dtype=np.int64)
    cpu.score_batch_kernel(qs, q_offsets, ts, t_offsets, matrix, scheme.gap_open,
                               scheme.gap_extend, mode_code, out)
    return [PairScore(int(s), int(qe), int(te)) for s, qe, te in out]


def align_batch(pairs, scheme: ScoringScheme, mode: str, backend: str = "cpu",
                device: int = 0, progress: Callable[[int], None] | None = None) -> list[PairAlignment]:
    """:func:`~gpualign_plugin.pairwise.api.align_pair` of every ``(query_codes, target_codes)`` pair (any iterable), in parallel.

    ``backend`` ``'gpu'`` (resolved, see
    :func:`gpualign_plugin.runtime.backend.resolve_backend`) runs :func:`align_batch_gpu`
    on ``device``; ``'cpu'`` keeps a full direction matrix (``(m+1) * (n+1)`` bytes) per pair
    while it is being aligned, so it suits many short pairs (the reference workload is
    1,000 pairs of 512 bp; use :func:`~gpualign_plugin.pairwise.api.align_pair` for long
    ones), with ``numba.get_num_threads()`` threads. Results are in the order of ``pairs``
    and the same on both backends. ``progress`` gets the DP cells (``m * n`` a pair, in
    all) as they are done: per launch and inside long pairs on the GPU
    (:func:`align_batch_gpu`), at the end of the one kernel call on the CPU.
    """
    if backend == "gpu":
        return align_batch_gpu(pairs, scheme, mode, device, progress=progress)
    if backend != "cpu":
        raise ValueError(f"backend must be 'cpu' or 'gpu', got {backend!r}")
    pairs = list(pairs)
    matrix, mode_code = _check_batch(pairs, scheme, mode)
    if not pairs:  # no Numba kernel to load (the GPU path asks this for its empty-sequence pairs)
        return []
    qs, q_offsets, ts, t_offsets = _pack(pairs)
    ops_offsets = q_offsets + t_offsets
    ops = np.empty(int(ops_offsets[-1]), dtype=np.uint8)
    out = np.empty((len(pairs), 6), dtype=np.int64)
    cpu.align_batch_kernel(qs, q_offsets, ts, t_offsets, matrix, scheme.gap_open,
                               scheme.gap_extend, mode_code, out, ops, ops_offsets)
    if progress is not None:
        progress(sum(len(q) * len(t) for q, t in pairs))
    results = []
    for k, (score, q_start, q_end, t_start, t_end, n_ops) in enumerate(out):
        if mode_code == gotoh.LOCAL and score <= 0:
            results.append(NO_PAIR_ALIGNMENT)
            continue
        path = ops[ops_offsets[k]:ops_offsets[k] + n_ops]
        results.append(PairAlignment(int(score), int(q_start), int(q_end), int(t_start),
                                     int(t_end), gotoh.cigar_from_ops(path)))
    return results


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
    from gpualign_plugin.batch import gpu

    pairs = list(pairs)
    _check_batch(pairs, scheme, mode)
    results: list = [None] * len(pairs)
    batched, trivial, long_pairs = [], [], []
    for k, (q, t) in enumerate(pairs):
        if len(q) == 0 or len(t) == 0:
            trivial.append(k)
        elif len(q) * len(t) > gpu.MAX_PAIR_CELLS or not gpu.accepts(scheme):
            long_pairs.append(k)
        else:
            batched.append(k)
    for k, result in zip(batched, gpu.align_batch([pairs[k] for k in batched], scheme, mode, device,
                                                  memory_budget, progress=progress)):
        results[k] = result
    for k, result in zip(trivial, align_batch([pairs[k] for k in trivial], scheme, mode)):
        results[k] = result  # no cells
    long_backend = "gpu" if pairwise.gpu_accepts(scheme) else "cpu"
    for k in long_pairs:
        cells = _Capped(len(pairs[k][0]) * len(pairs[k][1]), progress)
        result = pairwise.align_pair_on(long_backend, pairs[k][0], pairs[k][1], scheme, mode, device,
                                        progress=cells if progress is not None else None)
        cells.finish()
        results[k] = NO_PAIR_ALIGNMENT if mode == "local" and result.score <= 0 else result
    return results


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
    pairs = list(pairs)
    signs = pairwise.strand_signs(strands, scheme)
    if len(signs) == 1:
        return [("+", result) for result in align_batch(pairs, scheme, mode, backend, device, progress)]
    aligned = align_batch(pairs + [(reverse_complement_codes(np.asarray(q)), t) for q, t in pairs],
                          scheme, mode, backend, device, progress)
    return [("-", minus) if minus.score > plus.score else ("+", plus)
            for plus, minus in zip(aligned[:len(pairs)], aligned[len(pairs):])]
